/* quant plugin: private declarations shared by its files. Observers and the
 * quantized modules are wk_modules; the int8 arithmetic runs in the standard
 * ops (quantize_per_tensor, quantized_conv2d, ... with cpu kernels). */
#ifndef WICK_QUANT_PLUGIN_H
#define WICK_QUANT_PLUGIN_H
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wick/sdk.h>
#include <wick/nn.h>
#include <wick/quant.h>

#define QT_HIDDEN __attribute__((visibility("hidden")))

/* ---- helpers (plugin.c) ---- */
QT_HIDDEN char *qt_strf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Python's repr of a float into buf (>= 40 bytes). */
QT_HIDDEN const char *qt_pyfloat(double v, char *buf);
/* Ends the forward's scope, handing y (may be NULL) to the caller's. */
QT_HIDDEN wk_tensor *qt_ret(wk_tensor *y);
QT_HIDDEN bool qt_one_input(const char *cls, wk_tensor *const *in, int n);
/* Registers a buffer (reference taken) / child (reference taken). */
QT_HIDDEN wk_status qt_buffer(wk_module *m, const char *name, wk_tensor *t);
QT_HIDDEN wk_status qt_child(wk_module *m, const char *name, wk_module *child);
/* The text inside a module's printed parentheses ("1, 8, kernel_size=(5, 5), ..."),
 * malloc'd, from wk_module_to_string; NULL with an error. */
QT_HIDDEN char *qt_repr_args(const wk_module *m);
/* Reads "key=(a, b)" or "key=a" from a repr: 1 or 2 integers into v (both
 * set); returns false when the key is absent. */
QT_HIDDEN bool qt_repr_ints(const char *repr, const char *key, int64_t v[2]);

/* ---- observers (observer.c) ---- */
QT_HIDDEN wk_module *qt_observer(int kind, const wk_observer_opts *o, size_t osize);
QT_HIDDEN wk_status qt_calculate_qparams(wk_module *obs, wk_tensor **scale, wk_tensor **zero_point);
QT_HIDDEN bool qt_is_observer(const wk_module *m);
/* The dtype an observer quantizes to. */
QT_HIDDEN wk_dtype qt_observer_dtype(const wk_module *m);
/* Its quantized range and scheme. */
QT_HIDDEN void qt_observer_range(const wk_module *m, int64_t *qmin, int64_t *qmax, bool *per_channel, int64_t *ch_axis);
/* The weight observer configuration prepare stores in an activation observer. */
QT_HIDDEN void qt_observer_set_weight_cfg(wk_module *obs, int kind, const wk_observer_opts *o);
QT_HIDDEN bool qt_observer_weight_cfg(const wk_module *obs, int *kind, wk_observer_opts *o);

/* ---- modules (modules.c) ---- */
QT_HIDDEN wk_module *qt_quant_stub(void);
QT_HIDDEN wk_module *qt_dequant_stub(void);
/* Quantize(scale, zero_point, dtype) and DeQuantize. */
QT_HIDDEN wk_module *qt_quantize_module(double scale, int64_t zp, wk_dtype dt);
QT_HIDDEN wk_module *qt_dequantize_module(void);
/* ConvReLU2d / LinearReLU: the float module (reference taken) then ReLU. */
QT_HIDDEN wk_module *qt_fused_relu(wk_module *inner);
/* Quantized conv / linear from quantized weight qw (borrowed), float bias
 * (borrowed, may be NULL), output q-params, and for conv the geometry. */
typedef struct {
  int64_t in, out, k[2], stride[2], padding[2], dilation[2], groups;
} qt_conv_geom;
QT_HIDDEN wk_module *qt_quantized_conv(wk_tensor *qw, wk_tensor *bias, const qt_conv_geom *g, double scale, int64_t zp,
                                       bool relu);
QT_HIDDEN wk_module *qt_quantized_linear(wk_tensor *qw, wk_tensor *bias, double scale, int64_t zp, bool relu);
QT_HIDDEN wk_module *qt_dynamic_linear(wk_tensor *qw, wk_tensor *bias);
/* ReLU / MaxPool2d / AdaptiveAvgPool2d around the float module (reference taken):
 * on quantized input they compute on the stored integers and keep the q-params. */
QT_HIDDEN wk_module *qt_quantized_passthrough(wk_module *float_mod);

/* ---- FloatFunctional / QFunctional / QuantizableBasicBlock (functional.c) ---- */
/* op: "add", "add_relu" or "cat" (along dim). */
QT_HIDDEN wk_module *qt_float_functional(const char *op, int64_t dim);
QT_HIDDEN bool qt_is_float_functional(const wk_module *m);
/* The quantized twin of a FloatFunctional with output q-params. */
QT_HIDDEN wk_module *qt_qfunctional(const wk_module *float_functional, double scale, int64_t zp);
/* relu(conv2(conv1(x)) + (downsample ? downsample(x) : x)) through a
 * FloatFunctional add_relu; takes the three references (downsample may be NULL). */
QT_HIDDEN wk_module *qt_quantizable_block(wk_module *conv1_relu, wk_module *conv2, wk_module *downsample);

/* ---- the op quantized.add and its cpu kernel (qops.c) ---- */
QT_HIDDEN wk_status qt_register_ops(void);
/* True when qa and qb are per-tensor quint8 cpu tensors in one dense layout. */
QT_HIDDEN bool qt_qadd_applies(const wk_tensor *qa, const wk_tensor *qb);
/* quantized.add(qa, qb, scale, zero_point, relu): a new tensor of the scope. */
QT_HIDDEN wk_tensor *qt_qadd(wk_tensor *qa, wk_tensor *qb, double scale, int64_t zp, bool relu);

/* ---- workflow (workflow.c) ---- */
QT_HIDDEN wk_status qt_default_qconfig(const char *backend, wk_qconfig *out, size_t osize);
QT_HIDDEN wk_status qt_fuse(wk_module *model, const char *const *names, int n);
QT_HIDDEN wk_status qt_prepare(wk_module *model, const wk_qconfig *qc, size_t qsize);
QT_HIDDEN wk_status qt_convert(wk_module *model);
QT_HIDDEN wk_status qt_quantize_dynamic(wk_module *model);

QT_HIDDEN wk_status qt_conv_geometry(const wk_module *conv, qt_conv_geom *g, bool *has_bias);

/* ---- QAT (qat.c) ---- */
QT_HIDDEN wk_module *qt_fake_quant(int kind, const wk_observer_opts *o);
QT_HIDDEN bool qt_is_fake_quant(const wk_module *m);
QT_HIDDEN bool qt_is_qat(const wk_module *m);
QT_HIDDEN bool qt_qat_relu(const wk_module *m);
QT_HIDDEN wk_module *qt_qat_float_module(const wk_module *qat);
QT_HIDDEN wk_status qt_prepare_qat(wk_module *model, const wk_qconfig *qc, size_t qsize);
QT_HIDDEN wk_status qt_set_qat(wk_module *model, int observer_enabled, int fake_quant_enabled);
QT_HIDDEN wk_status qt_default_qat_qconfig(const char *backend, wk_qconfig *out, size_t osize);

/* ---- state dicts (state.c) ---- */
QT_HIDDEN wk_state_dict *qt_state_dict_pack(const wk_state_dict *sd);
QT_HIDDEN wk_state_dict *qt_state_dict_unpack(const wk_state_dict *sd);

#endif
