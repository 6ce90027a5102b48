/* quant plugin: the modules of eager-mode quantization: QuantStub and
 * DeQuantStub, the fused float modules ConvReLU2d / LinearReLU, and what
 * convert swaps in: Quantize, DeQuantize, QuantizedConv2d(+ReLU),
 * QuantizedLinear(+ReLU), DynamicQuantizedLinear and the quantized twins of
 * ReLU / MaxPool2d / AdaptiveAvgPool2d, which run the float module on the
 * stored integers (minus the zero point) and keep the input's q-params, as
 * PyTorch's quantized relu/max_pool2d/adaptive_avg_pool2d do. */
#include "quant.h"

/* ---- stubs ------------------------------------------------------------------------------ */
static wk_tensor *ident_forward(wk_module *self, wk_tensor *const *in, int n) {
  if (!qt_one_input(wk_module_class_name(self), in, n)) return NULL;
  return wk_alias(in[0]);
}
static const wk_module_class C_QSTUB = {sizeof(wk_module_class), "QuantStub", ident_forward, NULL, NULL};
static const wk_module_class C_DQSTUB = {sizeof(wk_module_class), "DeQuantStub", ident_forward, NULL, NULL};
wk_module *qt_quant_stub(void) { return wk_module_new(&C_QSTUB, NULL); }
wk_module *qt_dequant_stub(void) { return wk_module_new(&C_DQSTUB, NULL); }

/* ---- Quantize / DeQuantize ----------------------------------------------------------------- */
typedef struct {
  double scale;
  int64_t zp;
  wk_dtype dtype;
} qparam_state;

/* nnq.Quantize: the q-params of its "scale" / "zero_point" buffers (float32
 * and int64 [1], as PyTorch keeps them), so a loaded state dict takes effect. */
static wk_tensor *quantize_forward(wk_module *self, wk_tensor *const *in, int n) {
  const qparam_state *s = wk_module_state(self);
  if (!qt_one_input("Quantize", in, n)) return NULL;
  double scale;
  int64_t zp;
  if (wk_item(wk_module_buffer(self, "scale"), &scale) || wk_item_i64(wk_module_buffer(self, "zero_point"), &zp))
    return NULL;
  return wk_quantize_per_tensor(in[0], scale, zp, s->dtype);
}
static char *quantize_repr(const wk_module *self) {
  const qparam_state *s = wk_module_state(self);
  /* PyTorch prints the [1]-shaped buffers: scale=tensor([0.0157]) */
  return qt_strf("scale=tensor([%.4f]), zero_point=tensor([%lld]), dtype=torch.%s", s->scale, (long long)s->zp,
                 wk_dtype_name(s->dtype));
}
static const wk_module_class C_QUANTIZE = {sizeof(wk_module_class), "Quantize", quantize_forward, free, quantize_repr};

static wk_tensor *dequantize_forward(wk_module *self, wk_tensor *const *in, int n) {
  (void)self;
  if (!qt_one_input("DeQuantize", in, n)) return NULL;
  return wk_dequantize(in[0]);
}
static const wk_module_class C_DEQUANTIZE = {sizeof(wk_module_class), "DeQuantize", dequantize_forward, NULL, NULL};

/* The module's scale / zero_point as buffers of shape [1] (nnq.Quantize's state dict). */
static wk_status qparam_buffers(wk_module *m, double scale, int64_t zp, bool one_dim) {
  int64_t one = 1;
  float sc = (float)scale;
  wk_scope_begin();
  wk_status st = qt_buffer(m, "scale", one_dim ? wk_tensor_from_data(&sc, WK_F32, &one, 1) : wk_scalar_tensor(scale, WK_F32));
  if (!st) st = qt_buffer(m, "zero_point", one_dim ? wk_tensor_from_data(&zp, WK_I64, &one, 1) : wk_scalar_tensor((double)zp, WK_I64));
  wk_scope_end();
  return st;
}

wk_module *qt_quantize_module(double scale, int64_t zp, wk_dtype dt) {
  qparam_state *s = wk_malloc(sizeof *s);
  if (!s) return wk_error(WK_ERR_NO_MEMORY, "Quantize: out of memory"), NULL;
  *s = (qparam_state){scale, zp, dt};
  wk_module *m = wk_module_new(&C_QUANTIZE, s);
  if (!m) wk_free(s);
  if (m && qparam_buffers(m, scale, zp, true)) {
    wk_module_release(m);
    return NULL;
  }
  return m;
}
wk_module *qt_dequantize_module(void) { return wk_module_new(&C_DEQUANTIZE, NULL); }

/* ---- ConvReLU2d / LinearReLU (float, from fuse) ---------------------------------------------- */
static wk_tensor *fused_forward(wk_module *self, wk_tensor *const *in, int n) {
  if (!qt_one_input(wk_module_class_name(self), in, n)) return NULL;
  wk_scope_begin();
  wk_tensor *y = wk_module_forward(wk_module_child(self, "1"), wk_module_forward(wk_module_child(self, "0"), in[0]));
  return qt_ret(y);
}
static const wk_module_class C_CONVRELU = {sizeof(wk_module_class), "ConvReLU2d", fused_forward, NULL, NULL};
static const wk_module_class C_LINRELU = {sizeof(wk_module_class), "LinearReLU", fused_forward, NULL, NULL};

wk_module *qt_fused_relu(wk_module *inner) {
  if (!inner) return NULL;
  bool conv = !strcmp(wk_module_class_name(inner), "Conv2d");
  wk_module *m = wk_module_new(conv ? &C_CONVRELU : &C_LINRELU, NULL);
  wk_status st = qt_child(m, "0", inner);
  if (!st) st = qt_child(m, "1", wk_nn_relu());
  if (st) {
    wk_module_release(m);
    return NULL;
  }
  return m;
}

/* ---- QuantizedConv2d / QuantizedLinear ---------------------------------------------------------- */
typedef struct {
  qt_conv_geom g;
  double scale;
  int64_t zp;
  bool relu, bias, conv;
  int64_t in, out;
} qlayer_state;

/* The output q-params from the "scale" / "zero_point" buffers (so a loaded
 * state dict takes effect, as PyTorch's _load_from_state_dict sets them). */
static bool out_qparams(wk_module *self, double *scale, int64_t *zp) {
  return !wk_item(wk_module_buffer(self, "scale"), scale) && !wk_item_i64(wk_module_buffer(self, "zero_point"), zp);
}
static wk_tensor *qconv_forward(wk_module *self, wk_tensor *const *in, int n) {
  const qlayer_state *s = wk_module_state(self);
  if (!qt_one_input(wk_module_class_name(self), in, n)) return NULL;
  double scale;
  int64_t zp;
  if (!out_qparams(self, &scale, &zp)) return NULL;
  wk_tensor *w = wk_module_buffer(self, "weight"), *b = s->bias ? wk_module_buffer(self, "bias") : NULL;
  return wkx_quantized_conv2d(in[0], w, b, s->g.stride, 2, s->g.padding, 2, s->g.dilation, 2, s->g.groups, scale, zp,
                              s->relu);
}
static wk_tensor *qlinear_forward(wk_module *self, wk_tensor *const *in, int n) {
  const qlayer_state *s = wk_module_state(self);
  if (!qt_one_input(wk_module_class_name(self), in, n)) return NULL;
  double scale;
  int64_t zp;
  if (!out_qparams(self, &scale, &zp)) return NULL;
  wk_tensor *w = wk_module_buffer(self, "weight"), *b = s->bias ? wk_module_buffer(self, "bias") : NULL;
  return wkx_quantized_linear(in[0], w, b, scale, zp, s->relu);
}
static wk_tensor *dlinear_forward(wk_module *self, wk_tensor *const *in, int n) {
  const qlayer_state *s = wk_module_state(self);
  if (!qt_one_input(wk_module_class_name(self), in, n)) return NULL;
  wk_tensor *w = wk_module_buffer(self, "weight"), *b = s->bias ? wk_module_buffer(self, "bias") : NULL;
  return wkx_quantized_linear_dynamic(in[0], w, b, true);
}

static char *qconv_repr(const wk_module *self) {
  const qlayer_state *s = wk_module_state(self);
  char sc[48], out[400];
  int o = snprintf(out, sizeof out, "%lld, %lld, kernel_size=(%lld, %lld), stride=(%lld, %lld), scale=%s, zero_point=%lld",
                   (long long)s->g.in, (long long)s->g.out, (long long)s->g.k[0], (long long)s->g.k[1],
                   (long long)s->g.stride[0], (long long)s->g.stride[1], qt_pyfloat(s->scale, sc), (long long)s->zp);
  if (s->g.padding[0] || s->g.padding[1])
    o += snprintf(out + o, sizeof out - (size_t)o, ", padding=(%lld, %lld)", (long long)s->g.padding[0],
                  (long long)s->g.padding[1]);
  if (s->g.dilation[0] != 1 || s->g.dilation[1] != 1)
    o += snprintf(out + o, sizeof out - (size_t)o, ", dilation=(%lld, %lld)", (long long)s->g.dilation[0],
                  (long long)s->g.dilation[1]);
  if (s->g.groups != 1) o += snprintf(out + o, sizeof out - (size_t)o, ", groups=%lld", (long long)s->g.groups);
  if (!s->bias) snprintf(out + o, sizeof out - (size_t)o, ", bias=False");
  return qt_strf("%s", out);
}
static char *qlinear_repr(const wk_module *self) {
  const qlayer_state *s = wk_module_state(self);
  char sc[48];
  wk_tensor *w = wk_module_buffer(self, "weight");
  return qt_strf("in_features=%lld, out_features=%lld, scale=%s, zero_point=%lld, qscheme=%s", (long long)s->in,
                 (long long)s->out, qt_pyfloat(s->scale, sc), (long long)s->zp, wk_qscheme_name(wk_tensor_qscheme(w)));
}
static char *dlinear_repr(const wk_module *self) {
  const qlayer_state *s = wk_module_state(self);
  wk_tensor *w = wk_module_buffer(self, "weight");
  return qt_strf("in_features=%lld, out_features=%lld, dtype=torch.qint8, qscheme=%s", (long long)s->in,
                 (long long)s->out, wk_qscheme_name(wk_tensor_qscheme(w)));
}

static const wk_module_class C_QCONV = {sizeof(wk_module_class), "QuantizedConv2d", qconv_forward, free, qconv_repr};
static const wk_module_class C_QCONVRELU = {sizeof(wk_module_class), "QuantizedConvReLU2d", qconv_forward, free, qconv_repr};
static const wk_module_class C_QLIN = {sizeof(wk_module_class), "QuantizedLinear", qlinear_forward, free, qlinear_repr};
static const wk_module_class C_QLINRELU = {sizeof(wk_module_class), "QuantizedLinearReLU", qlinear_forward, free, qlinear_repr};
static const wk_module_class C_DLIN = {sizeof(wk_module_class), "DynamicQuantizedLinear", dlinear_forward, free, dlinear_repr};

static wk_module *make_qlayer(const wk_module_class *cls, qlayer_state *s, wk_tensor *qw, wk_tensor *bias, bool qparams) {
  wk_module *m = wk_module_new(cls, s);
  if (!m) {
    wk_free(s);
    return NULL;
  }
  wk_scope_begin();
  wk_status st = wk_module_register_buffer(m, "weight", qw, true);
  if (!st && bias) st = qt_buffer(m, "bias", wk_detach(bias));
  if (!st && qparams) st = qparam_buffers(m, s->scale, s->zp, false);
  wk_scope_end();
  if (st) {
    wk_module_release(m);
    return NULL;
  }
  return m;
}

wk_module *qt_quantized_conv(wk_tensor *qw, wk_tensor *bias, const qt_conv_geom *g, double scale, int64_t zp, bool relu) {
  qlayer_state *s = wk_calloc(1, sizeof *s);
  if (!s) return wk_error(WK_ERR_NO_MEMORY, "QuantizedConv2d: out of memory"), NULL;
  *s = (qlayer_state){.g = *g, .scale = scale, .zp = zp, .relu = relu, .bias = bias != NULL, .conv = true};
  return make_qlayer(relu ? &C_QCONVRELU : &C_QCONV, s, qw, bias, true);
}

wk_module *qt_quantized_linear(wk_tensor *qw, wk_tensor *bias, double scale, int64_t zp, bool relu) {
  qlayer_state *s = wk_calloc(1, sizeof *s);
  if (!s) return wk_error(WK_ERR_NO_MEMORY, "QuantizedLinear: out of memory"), NULL;
  *s = (qlayer_state){.scale = scale, .zp = zp, .relu = relu, .bias = bias != NULL, .in = wk_tensor_size(qw, 1),
                      .out = wk_tensor_size(qw, 0)};
  return make_qlayer(relu ? &C_QLINRELU : &C_QLIN, s, qw, bias, true);
}

wk_module *qt_dynamic_linear(wk_tensor *qw, wk_tensor *bias) {
  qlayer_state *s = wk_calloc(1, sizeof *s);
  if (!s) return wk_error(WK_ERR_NO_MEMORY, "DynamicQuantizedLinear: out of memory"), NULL;
  *s = (qlayer_state){.bias = bias != NULL, .in = wk_tensor_size(qw, 1), .out = wk_tensor_size(qw, 0)};
  return make_qlayer(&C_DLIN, s, qw, bias, false);
}

/* ---- quantized ReLU / MaxPool2d / AdaptiveAvgPool2d ----------------------------------------------- */
/* The quantized input of a twin: 1 with x, its scale and zero point (per
 * tensor qint8/quint8), 0 for a float input (the float module runs as it
 * is, in *y), -1 on an error. */
static int twin_input(wk_module *self, wk_tensor *const *in, int n, wk_tensor **y, double *sc, int64_t *zp) {
  *y = NULL;
  if (!qt_one_input(wk_module_class_name(self), in, n)) return -1;
  wk_tensor *x = in[0];
  if (!wk_dtype_is_quantized(wk_tensor_dtype(x))) {
    *y = wk_module_forward(wk_module_child(self, "0"), x);
    return 0;
  }
  if (wk_tensor_qscheme(x) != WK_PER_TENSOR_AFFINE || wk_tensor_dtype(x) == WK_QINT32) {
    wk_error(WK_ERR_DTYPE, "%s: expected a per-tensor quantized qint8/quint8 input", wk_module_class_name(self));
    return -1;
  }
  *sc = wk_q_scale(x);
  *zp = wk_q_zero_point(x);
  return 1;
}

/* ReLU and max pooling commute with q -> (q - zero_point) * scale (monotone),
 * so they run on the stored integers, as PyTorch's quantized kernels do:
 * ReLU is max(q, zero_point); max pooling runs the float module on the
 * integers held in float32 (exact; the float kernels are the fast ones, the
 * cpu plugin pools integers by way of int64). */
static wk_tensor *qrelu_forward(wk_module *self, wk_tensor *const *in, int n) {
  wk_tensor *y;
  double sc;
  int64_t zp;
  int q = twin_input(self, in, n, &y, &sc, &zp);
  if (q <= 0) return y;
  wk_scope_begin();
  y = wkx_clamp_min(wk_int_repr(in[0]), WK_VI(zp));
  return qt_ret(y ? wk_make_per_tensor_quantized(y, sc, zp) : NULL);
}
static wk_tensor *qmaxpool_forward(wk_module *self, wk_tensor *const *in, int n) {
  wk_tensor *y;
  double sc;
  int64_t zp;
  int q = twin_input(self, in, n, &y, &sc, &zp);
  if (q <= 0) return y;
  wk_scope_begin();
  wk_tensor *f = wk_to_dtype(wk_int_repr(in[0]), WK_F32);
  y = wk_to_dtype(wk_module_forward(wk_module_child(self, "0"), f),
                  wk_dtype_quantized_underlying(wk_tensor_dtype(in[0])));
  return qt_ret(y ? wk_make_per_tensor_quantized(y, sc, zp) : NULL);
}
/* Other modules (adaptive average pooling) run on (q - zero_point) as float32
 * (exact integers), their result rounded half to even (nearbyint of the
 * mean), shifted back, saturated and wrapped with the input's q-params. */
static wk_tensor *pass_forward(wk_module *self, wk_tensor *const *in, int n) {
  wk_tensor *y;
  double sc;
  int64_t zp;
  int q = twin_input(self, in, n, &y, &sc, &zp);
  if (q <= 0) return y;
  wk_dtype qdt = wk_tensor_dtype(in[0]);
  wk_scope_begin();
  wk_tensor *f = wk_sub_scalar(wk_to_dtype(wk_int_repr(in[0]), WK_F32), (double)zp);
  y = wk_round(wk_module_forward(wk_module_child(self, "0"), f));
  y = wk_clamp(wk_add_scalar(y, (double)zp), (double)wk_dtype_qmin(qdt), (double)wk_dtype_qmax(qdt));
  wk_tensor *r = y ? wk_to_dtype(y, wk_dtype_quantized_underlying(qdt)) : NULL;
  return qt_ret(r ? wk_make_per_tensor_quantized(r, sc, zp) : NULL);
}
static const wk_module_class C_QRELU = {sizeof(wk_module_class), "QuantizedReLU", qrelu_forward, NULL, NULL};
static const wk_module_class C_QMAXPOOL = {sizeof(wk_module_class), "QuantizedMaxPool2d", qmaxpool_forward, NULL,
                                           NULL};
static const wk_module_class C_QAAP = {sizeof(wk_module_class), "QuantizedAdaptiveAvgPool2d", pass_forward, NULL, NULL};

wk_module *qt_quantized_passthrough(wk_module *float_mod) {
  if (!float_mod) return NULL;
  const char *c = wk_module_class_name(float_mod);
  const wk_module_class *cls = !strcmp(c, "ReLU")                ? &C_QRELU
                               : !strcmp(c, "MaxPool2d")         ? &C_QMAXPOOL
                               : !strcmp(c, "AdaptiveAvgPool2d") ? &C_QAAP
                                                                 : NULL;
  if (!cls) {
    wk_module_release(float_mod);
    wk_error(WK_ERR_INVALID_ARG, "convert: no quantized twin for %s", c);
    return NULL;
  }
  wk_module *m = wk_module_new(cls, NULL);
  if (qt_child(m, "0", float_mod)) {
    wk_module_release(m);
    return NULL;
  }
  return m;
}
