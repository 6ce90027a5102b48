/* Wick ABI: the `quant` service (plugins/quant): PyTorch's eager-mode int8
 * workflow in C.
 *
 *   wk_qconfig qc;
 *   wk_quant_default_qconfig("x86", &qc);             // or "fbgemm"
 *   wk_module_train(model, false);
 *   wk_quant_fuse(model, (const char *[]){"conv1", "bn1", "relu1"}, 3);
 *   wk_quant_prepare(model, &qc);                     // observers on outputs
 *   for (batches) wk_release(wk_module_forward(model, x));   // calibrate
 *   wk_quant_convert(model);                          // int8 modules
 *
 * The model brackets its quantized part with wk_quant_stub() and
 * wk_quant_dequant_stub() modules (QuantStub / DeQuantStub). Observers are
 * modules (their min_val/max_val/histogram buffers are in the state dict);
 * prepare registers one as the `activation_post_process` child of every
 * QuantStub, Conv2d, Linear and fused ConvReLU2d/LinearReLU, run by a forward
 * hook on the module's output. convert swaps those modules for Quantize,
 * DeQuantize, QuantizedConv2d, QuantizedConvReLU2d, QuantizedLinear and
 * QuantizedLinearReLU (weights quantized with the qconfig's weight observer),
 * and ReLU, MaxPool2d and AdaptiveAvgPool2d for quantized twins that compute
 * on the stored integers. Numerics follow PyTorch's fbgemm/x86 backend: the
 * observers' calculate_qparams, quantize's nearbyint rounding, and
 * requantisation in float32 (see plugins/cpu/quantized.c). */
#ifndef WICK_QUANT_H
#define WICK_QUANT_H

#include <stddef.h>
#include <wick/dispatch.h>
#include <wick/module.h>
#include <wick/plugin.h>
#include <wick/qtensor.h>

/* Observer kinds (numbers are ABI). */
typedef enum wk_observer_kind {
  WK_OBSERVER_MINMAX = 1,                /* MinMaxObserver */
  WK_OBSERVER_MOVING_AVERAGE_MINMAX = 2, /* MovingAverageMinMaxObserver */
  WK_OBSERVER_PER_CHANNEL_MINMAX = 3,    /* PerChannelMinMaxObserver */
  WK_OBSERVER_HISTOGRAM = 4,             /* HistogramObserver (L2 error search) */
  WK_OBSERVER_MOVING_AVERAGE_PER_CHANNEL_MINMAX = 5 /* MovingAveragePerChannelMinMaxObserver (QAT weights) */
} wk_observer_kind;

/* An observer's configuration; zero fields mean PyTorch's defaults. */
typedef struct wk_observer_opts {
  wk_dtype dtype;            /* WK_QUINT8 (default), WK_QINT8 or WK_QINT32 */
  wk_qscheme qscheme;        /* default: per_tensor_affine (per_channel_affine for per-channel kinds) */
  bool reduce_range;         /* quant range halved (fbgemm/x86 activations): quint8 [0, 127] */
  int64_t quant_min, quant_max; /* a custom range when they differ; both 0: from dtype and reduce_range */
  double averaging_constant; /* moving average: 0 -> 0.01 */
  int64_t ch_axis;           /* per channel: the channel axis (default 0) */
  int64_t bins;              /* histogram: 0 -> 2048 */
} wk_observer_opts;

/* A QConfig: how activations and weights are observed. */
typedef struct wk_qconfig {
  wk_observer_kind activation;
  wk_observer_opts activation_opts;
  wk_observer_kind weight;
  wk_observer_opts weight_opts;
} wk_qconfig;

/* ---- the service interface (append-only) ---------------------------------------------- */
#define WK_QUANT_SERVICE "quant"
#define WK_QUANT_API_VERSION 1u

typedef struct wk_quant_api {
  size_t struct_size;
  wk_module *(*observer)(int kind, const wk_observer_opts *o, size_t osize);
  wk_status (*calculate_qparams)(wk_module *observer, wk_tensor **scale, wk_tensor **zero_point);
  wk_status (*default_qconfig)(const char *backend, wk_qconfig *out, size_t osize);
  wk_module *(*quant_stub)(void);
  wk_module *(*dequant_stub)(void);
  wk_status (*fuse)(wk_module *model, const char *const *names, int n);
  wk_status (*prepare)(wk_module *model, const wk_qconfig *qc, size_t qsize);
  wk_status (*convert)(wk_module *model);
  wk_status (*quantize_dynamic)(wk_module *model);
  wk_state_dict *(*state_dict_pack)(const wk_state_dict *sd);
  wk_state_dict *(*state_dict_unpack)(const wk_state_dict *sd);
  wk_status (*default_qat_qconfig)(const char *backend, wk_qconfig *out, size_t osize);
  wk_status (*prepare_qat)(wk_module *model, const wk_qconfig *qc, size_t qsize);
  wk_status (*set_qat)(wk_module *model, int observer_enabled, int fake_quant_enabled);
  /* appended (Wick 1.4): */
  wk_module *(*float_functional)(const char *op, int64_t dim);
} wk_quant_api;

/* ---- wrappers ------------------------------------------------------------------------------ */
static inline const wk_quant_api *wk_quant_api_get(void) {
  static const wk_quant_api *api;
  if (!api) api = (const wk_quant_api *)wk_service_get(WK_QUANT_SERVICE, WK_QUANT_API_VERSION);
  return api;
}
#define WK__QUANT_HAS(api, field) \
  ((api) && (api)->struct_size >= offsetof(wk_quant_api, field) + sizeof((api)->field) && (api)->field)
#define WK__QUANT_CALL(field, fail, ...)                                                           \
  do {                                                                                              \
    const wk_quant_api *a_ = wk_quant_api_get();                                                   \
    if (!WK__QUANT_HAS(a_, field)) {                                                               \
      if (a_) wk_error(WK_ERR_UNSUPPORTED, "%s: the loaded quant plugin is too old to provide it", #field); \
      return fail;                                                                                  \
    }                                                                                               \
    wk_error_new_call(); /* a top-level call: an earlier call's error is not ours */                \
    return a_->field(__VA_ARGS__);                                                                  \
  } while (0)

/* A new observer module of `kind` ("MinMaxObserver", ...). Its forward records
 * statistics of its input and returns it; buffers min_val/max_val (and
 * histogram) hold what it saw. Returns a new module or NULL. */
static inline wk_module *wk_quant_observer(wk_observer_kind kind, wk_observer_opts o) {
  WK__QUANT_CALL(observer, (wk_module *)0, (int)kind, &o, sizeof o);
}
/* PyTorch's observer.calculate_qparams(): *scale (f32) and *zero_point (i64),
 * new tensors of shape [1] (per tensor) or [C] (per channel). An observer
 * that saw no data is an error (WK_ERR_STATE), not PyTorch's warning. */
static inline wk_status wk_quant_calculate_qparams(wk_module *observer, wk_tensor **scale, wk_tensor **zero_point) {
  WK__QUANT_CALL(calculate_qparams, wk_last_error() ? wk_last_error() : WK_ERR_NOT_FOUND, observer, scale,
                 zero_point);
}
/* torch.ao.quantization.get_default_qconfig(backend) for "x86" and "fbgemm":
 * activations HistogramObserver(quint8, reduce_range=True), weights
 * PerChannelMinMaxObserver(qint8, per_channel_symmetric). */
static inline wk_status wk_quant_default_qconfig(const char *backend, wk_qconfig *out) {
  WK__QUANT_CALL(default_qconfig, wk_last_error() ? wk_last_error() : WK_ERR_NOT_FOUND, backend, out, sizeof *out);
}
/* QuantStub / DeQuantStub: identity until convert makes them Quantize / DeQuantize. */
static inline wk_module *wk_quant_stub(void) { WK__QUANT_CALL(quant_stub, (wk_module *)0); }
static inline wk_module *wk_quant_dequant_stub(void) { WK__QUANT_CALL(dequant_stub, (wk_module *)0); }
/* fuse_modules for one group of dotted child names of an eval-mode model:
 * [Conv2d, BatchNorm2d] (BN folded into the conv), [Conv2d, BatchNorm2d, ReLU],
 * [Conv2d, ReLU] (ConvReLU2d), [Linear, ReLU] (LinearReLU). The first name
 * gets the fused module, the others become Identity. With n = 1 the name is
 * a BasicBlock or a ResNet, fused whole (see wk_quant_float_functional). */
static inline wk_status wk_quant_fuse(wk_module *model, const char *const *names, int n) {
  WK__QUANT_CALL(fuse, wk_last_error() ? wk_last_error() : WK_ERR_NOT_FOUND, model, names, n);
}
/* prepare(model): observers from qc on the outputs of QuantStub, Conv2d,
 * Linear, ConvReLU2d and LinearReLU modules (see the top of this file). */
static inline wk_status wk_quant_prepare(wk_module *model, const wk_qconfig *qc) {
  WK__QUANT_CALL(prepare, wk_last_error() ? wk_last_error() : WK_ERR_NOT_FOUND, model, qc, sizeof *qc);
}
/* convert(model): swaps prepared modules for quantized ones. Fails without
 * changing anything when an observer saw no data (calibrate first) or the
 * model was not prepared. */
static inline wk_status wk_quant_convert(wk_module *model) {
  WK__QUANT_CALL(convert, wk_last_error() ? wk_last_error() : WK_ERR_NOT_FOUND, model);
}
/* quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8): every Linear
 * becomes DynamicQuantizedLinear (weight qint8 per-tensor symmetric;
 * activations quantized per call with reduce_range, float output). */
static inline wk_status wk_quant_quantize_dynamic(wk_module *model) {
  WK__QUANT_CALL(quantize_dynamic, wk_last_error() ? wk_last_error() : WK_ERR_NOT_FOUND, model);
}

/* ---- quantization-aware training ---- */
/* get_default_qat_qconfig("x86" / "fbgemm"): FakeQuantize over
 * MovingAverageMinMaxObserver(quint8, reduce_range) for activations and
 * MovingAveragePerChannelMinMaxObserver(qint8, per_channel_symmetric) for weights. */
static inline wk_status wk_quant_default_qat_qconfig(const char *backend, wk_qconfig *out) {
  WK__QUANT_CALL(default_qat_qconfig, wk_last_error() ? wk_last_error() : WK_ERR_NOT_FOUND, backend, out, sizeof *out);
}
/* prepare_qat(model) of a model in training mode (fuse conv+bn in eval mode
 * first: BatchNorm is folded, not trained on): QuantStubs get an output
 * FakeQuantize; Conv2d, Linear, ConvReLU2d and LinearReLU become QATConv2d,
 * QATLinear, ... (parameters shared: an optimizer made before keeps training
 * them) whose weight and output pass through FakeQuantize modules. Train,
 * then wk_module_train(model, false) and wk_quant_convert(model). */
static inline wk_status wk_quant_prepare_qat(wk_module *model, const wk_qconfig *qc) {
  WK__QUANT_CALL(prepare_qat, wk_last_error() ? wk_last_error() : WK_ERR_NOT_FOUND, model, qc, sizeof *qc);
}
/* Switches every FakeQuantize in model: observers on/off (PyTorch's
 * disable_observer / enable_observer, to freeze q-params after N epochs) and
 * fake quantization on/off; -1 leaves a switch as it is. */
static inline wk_status wk_quant_set_qat(wk_module *model, int observer_enabled, int fake_quant_enabled) {
  WK__QUANT_CALL(set_qat, wk_last_error() ? wk_last_error() : WK_ERR_NOT_FOUND, model, observer_enabled,
                 fake_quant_enabled);
}

/* PyTorch's FloatFunctional: a module for the tensor arithmetic between
 * layers, so it can be observed and quantized. op "add" and "add_relu" take
 * two inputs (wk_module_forward_n), "cat" one or more, concatenated along
 * dim (ignored otherwise). prepare observes its output; convert swaps in a
 * QFunctional that adds or concatenates quantized quint8 inputs and
 * quantizes the result with the observed q-params (its "scale" and
 * "zero_point" buffers, state-dict keys as PyTorch's). Residual models:
 * wk_quant_fuse with one name, a torchvision BasicBlock or a whole ResNet
 * (18/34), folds each block into a QuantizableBasicBlock (conv1+bn1+relu,
 * conv2+bn2, downsample conv+bn, and a FloatFunctional add_relu) and the
 * stem conv1+bn1+relu. Returns a new module, or NULL with an error. */
static inline wk_module *wk_quant_float_functional(const char *op, int64_t dim) {
  WK__QUANT_CALL(float_functional, (wk_module *)0, op, dim);
}

/* A quantized state dict as plain tensors, for safetensors (which has no
 * quantized dtype): each quantized entry K becomes its integers under K (I8,
 * U8, I32), K.q_scale (F64 [1] or [C]), K.q_zero_point (I64 [1] or [C]),
 * K.q_axis (I64 [], per channel) and the metadata "wick.quant:K" =
 * "qint8,per_tensor_affine". Other entries are shared unchanged. Returns a new
 * dict (free with wk_state_dict_free) or NULL. */
static inline wk_state_dict *wk_quant_state_dict_pack(const wk_state_dict *sd) {
  WK__QUANT_CALL(state_dict_pack, (wk_state_dict *)0, sd);
}
/* The inverse: quantized tensors rebuilt (sharing the integers' storage) from
 * what pack wrote; a missing or inconsistent part is an error naming the key. */
static inline wk_state_dict *wk_quant_state_dict_unpack(const wk_state_dict *sd) {
  WK__QUANT_CALL(state_dict_unpack, (wk_state_dict *)0, sd);
}

#endif
