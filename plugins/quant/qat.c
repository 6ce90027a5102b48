/* quant plugin: quantization-aware training. FakeQuantize (an observer plus
 * the fake_quantize_per_{tensor,channel}_affine op, whose straight-through
 * derivative lets gradients pass where the value was not clamped), the QAT
 * twins of Conv2d / Linear and their fused ReLU forms (the float module's
 * weight goes through a weight FakeQuantize before the op; the output through
 * an activation FakeQuantize), prepare_qat, and the switches that freeze the
 * observers or turn fake quantization off. convert (workflow.c) turns the
 * trained modules into quantized ones with the q-params they learned. */
#include "quant.h"

#define APP "activation_post_process"

typedef struct {
  bool observe, fake_quant;
} fq_state;

static wk_tensor *fq_forward(wk_module *self, wk_tensor *const *in, int n) {
  fq_state *s = wk_module_state(self);
  if (!qt_one_input("FakeQuantize", in, n)) return NULL;
  wk_module *obs = wk_module_child(self, APP);
  if (!obs) return NULL;
  int64_t qmin, qmax, axis;
  bool pc;
  qt_observer_range(obs, &qmin, &qmax, &pc, &axis);
  wk_scope_begin();
  wk_status st = WK_OK;
  if (s->observe) {
    wk_tensor *sc = NULL, *zp = NULL;
    st = wk_module_forward(obs, wk_detach(in[0])) ? qt_calculate_qparams(obs, &sc, &zp) : wk_last_error();
    wk_tensor *bs = st ? NULL : wk_module_buffer(self, "scale");
    wk_clear_error();
    if (!st && !bs) {
      st = wk_module_register_buffer(self, "scale", sc, true);
      if (!st) st = wk_module_register_buffer(self, "zero_point", zp, true);
    } else if (!st) {
      wk_no_grad_begin();
      if (!wk_copy_(bs, sc) || !wk_copy_(wk_module_buffer(self, "zero_point"), zp)) st = wk_last_error();
      wk_no_grad_end();
    }
    wk_release(sc);
    wk_release(zp);
  }
  wk_tensor *y = NULL;
  if (!st && s->fake_quant) {
    wk_tensor *sc = wk_module_buffer(self, "scale"), *zp = wk_module_buffer(self, "zero_point");
    if (!sc || !zp) {
      wk_error_replace(WK_ERR_STATE, "FakeQuantize: fake quantization before the observer saw any data");
    } else if (pc) {
      y = wk_fake_quantize_per_channel_affine(in[0], sc, zp, axis, qmin, qmax);
    } else {
      double s1;
      int64_t z1;
      if (!wk_item(sc, &s1) && !wk_item_i64(zp, &z1)) y = wk_fake_quantize_per_tensor_affine(in[0], s1, z1, qmin, qmax);
    }
  } else if (!st) {
    y = wk_alias(in[0]);
  }
  return qt_ret(y);
}

static char *fq_repr(const wk_module *self) {
  const fq_state *s = wk_module_state(self);
  return qt_strf("fake_quant_enabled=%s, observer_enabled=%s", s->fake_quant ? "True" : "False",
                 s->observe ? "True" : "False");
}
static const wk_module_class C_FQ = {sizeof(wk_module_class), "FakeQuantize", fq_forward, free, fq_repr};

bool qt_is_fake_quant(const wk_module *m) { return m && !strcmp(wk_module_class_name(m), "FakeQuantize"); }

wk_module *qt_fake_quant(int kind, const wk_observer_opts *o) {
  wk_module *obs = qt_observer(kind, o, sizeof *o);
  if (!obs) return NULL;
  fq_state *s = wk_malloc(sizeof *s);
  if (!s) {
    wk_module_release(obs);
    return wk_error(WK_ERR_NO_MEMORY, "FakeQuantize: out of memory"), NULL;
  }
  *s = (fq_state){true, true};
  wk_module *m = wk_module_new(&C_FQ, s);
  if (!m) wk_free(s);
  if (qt_child(m, APP, obs)) {
    wk_module_release(m);
    return NULL;
  }
  return m;
}

/* ---- QAT Conv2d / Linear ----------------------------------------------------------------------- */
typedef struct {
  bool conv, relu;
  qt_conv_geom g;
} qat_state;

static wk_tensor *qat_forward(wk_module *self, wk_tensor *const *in, int n) {
  const qat_state *s = wk_module_state(self);
  if (!qt_one_input(wk_module_class_name(self), in, n)) return NULL;
  wk_module *inner = qt_qat_float_module(self);
  if (!inner) return NULL;
  wk_tensor *b = wk_module_param(inner, "bias");
  wk_clear_error();
  wk_scope_begin();
  wk_tensor *w = wk_module_forward(wk_module_child(self, "weight_fake_quant"), wk_module_param(inner, "weight"));
  wk_tensor *y = !w ? NULL
                 : s->conv ? wkx_conv2d(in[0], w, b, s->g.stride, 2, s->g.padding, 2, s->g.dilation, 2, s->g.groups)
                           : wk_linear(in[0], w, b);
  if (y && s->relu) y = wk_relu(y);
  y = wk_module_forward(wk_module_child(self, APP), y);
  return qt_ret(y);
}
static const wk_module_class C_QATCONV = {sizeof(wk_module_class), "QATConv2d", qat_forward, free, NULL};
static const wk_module_class C_QATCONVRELU = {sizeof(wk_module_class), "QATConvReLU2d", qat_forward, free, NULL};
static const wk_module_class C_QATLIN = {sizeof(wk_module_class), "QATLinear", qat_forward, free, NULL};
static const wk_module_class C_QATLINRELU = {sizeof(wk_module_class), "QATLinearReLU", qat_forward, free, NULL};

bool qt_is_qat(const wk_module *m) { return m && !strncmp(wk_module_class_name(m), "QAT", 3); }
bool qt_qat_relu(const wk_module *m) { return ((const qat_state *)wk_module_state(m))->relu; }

wk_module *qt_qat_float_module(const wk_module *qat) {
  wk_module *f = wk_module_child(qat, "module");
  if (f && (!strcmp(wk_module_class_name(f), "ConvReLU2d") || !strcmp(wk_module_class_name(f), "LinearReLU")))
    f = wk_module_child(f, "0");
  return f;
}

/* The QAT twin of a Conv2d / Linear / ConvReLU2d / LinearReLU (borrowed; its
 * parameters are shared, so an optimizer built on them keeps training them). */
static wk_module *qat_module(wk_module *m, const wk_qconfig *qc) {
  const char *c = wk_module_class_name(m);
  bool relu = !strcmp(c, "ConvReLU2d") || !strcmp(c, "LinearReLU");
  wk_module *inner = relu ? wk_module_child(m, "0") : m;
  qat_state *s = wk_calloc(1, sizeof *s);
  if (!s || !inner) {
    wk_free(s);
    if (!s) wk_error(WK_ERR_NO_MEMORY, "prepare_qat: out of memory");
    return NULL;
  }
  s->relu = relu;
  s->conv = !strcmp(wk_module_class_name(inner), "Conv2d");
  if (s->conv && qt_conv_geometry(inner, &s->g, NULL)) {
    wk_free(s);
    return NULL;
  }
  const wk_module_class *cls = s->conv ? (relu ? &C_QATCONVRELU : &C_QATCONV) : (relu ? &C_QATLINRELU : &C_QATLIN);
  wk_module *q = wk_module_new(cls, s);
  if (!q) wk_free(s);
  wk_status st = qt_child(q, "module", wk_module_retain(m));
  if (!st) st = qt_child(q, "weight_fake_quant", qt_fake_quant(qc->weight, &qc->weight_opts));
  if (!st) st = qt_child(q, APP, qt_fake_quant(qc->activation, &qc->activation_opts));
  if (st) {
    wk_module_release(q);
    return NULL;
  }
  return q;
}

static wk_status fq_output(void *user, wk_module *m, wk_tensor *const *in, int n, wk_tensor **out) {
  (void)user, (void)in, (void)n;
  wk_tensor *y = wk_module_forward(wk_module_child(m, APP), *out);
  if (!y) return wk_last_error();
  wk_release(*out);
  *out = y;
  return WK_OK;
}

static wk_status prepare_qat_rec(wk_module *m, const wk_qconfig *qc, int *count) {
  const char *names[256];
  wk_module *kids[256];
  int nk = wk_module_named_children(m, names, kids, 256);
  for (int i = 0; i < nk && i < 256; i++) {
    const char *c = wk_module_class_name(kids[i]);
    wk_status st = WK_OK;
    if (!strcmp(c, "QuantStub")) {
      wk_module *probe = wk_module_child(kids[i], APP);
      wk_clear_error();
      if (probe) return wk_error(WK_ERR_STATE, "prepare_qat: the QuantStub '%s' is already prepared", names[i]);
      st = qt_child(kids[i], APP, qt_fake_quant(qc->activation, &qc->activation_opts));
      if (!st && !wk_module_register_forward_hook(kids[i], fq_output, NULL)) st = wk_last_error();
      (*count)++;
    } else if (!strcmp(c, "Conv2d") || !strcmp(c, "Linear") || !strcmp(c, "ConvReLU2d") || !strcmp(c, "LinearReLU")) {
      wk_module *q = qat_module(kids[i], qc);
      st = q ? wk_module_set_child(m, names[i], q) : wk_last_error();
      wk_module_release(q);
      (*count)++;
    } else if (!qt_is_qat(kids[i]) && !qt_is_fake_quant(kids[i]) && !qt_is_observer(kids[i])) {
      st = prepare_qat_rec(kids[i], qc, count);
    }
    if (st) return st;
  }
  return WK_OK;
}

wk_status qt_prepare_qat(wk_module *model, const wk_qconfig *qc_in, size_t qsize) {
  if (!model || !qc_in) return wk_error(WK_ERR_NULL, "prepare_qat: argument '%s' is NULL", model ? "qconfig" : "model");
  if (!wk_module_is_training(model))
    return wk_error(WK_ERR_STATE, "prepare_qat: the model must be in training mode (wk_module_train(model, true))");
  wk_qconfig qc = {0};
  memcpy(&qc, qc_in, qsize < sizeof qc ? qsize : sizeof qc);
  wk_module *a = qt_fake_quant(qc.activation, &qc.activation_opts);
  wk_module *w = a ? qt_fake_quant(qc.weight, &qc.weight_opts) : NULL;
  wk_module_release(a);
  wk_module_release(w);
  if (!w) return wk_last_error();
  int count = 0;
  wk_status st = prepare_qat_rec(model, &qc, &count);
  if (!st && count == 0)
    return wk_error(WK_ERR_INVALID_ARG, "prepare_qat: the model has no QuantStub, Conv2d or Linear module");
  return st;
}

static wk_status set_rec(wk_module *m, int observe, int fake_quant) {
  if (qt_is_fake_quant(m)) {
    fq_state *s = wk_module_state(m);
    if (observe >= 0) s->observe = observe;
    if (fake_quant >= 0) s->fake_quant = fake_quant;
  }
  wk_module *kids[256];
  int nk = wk_module_named_children(m, NULL, kids, 256);
  for (int i = 0; i < nk && i < 256; i++) set_rec(kids[i], observe, fake_quant);
  return WK_OK;
}

wk_status qt_set_qat(wk_module *model, int observer_enabled, int fake_quant_enabled) {
  if (!model) return wk_error(WK_ERR_NULL, "set_qat: argument 'model' is NULL");
  return set_rec(model, observer_enabled, fake_quant_enabled);
}

wk_status qt_default_qat_qconfig(const char *backend, wk_qconfig *out, size_t osize) {
  wk_status st = qt_default_qconfig(backend, out, osize);
  if (st) return st;
  /* get_default_qat_qconfig: FakeQuantize over MovingAverageMinMaxObserver(quint8,
   * reduce_range) and MovingAveragePerChannelMinMaxObserver(qint8, per_channel_symmetric) */
  wk_qconfig qc = {0};
  qc.activation = WK_OBSERVER_MOVING_AVERAGE_MINMAX;
  qc.activation_opts = (wk_observer_opts){.dtype = WK_QUINT8, .reduce_range = true};
  qc.weight = WK_OBSERVER_MOVING_AVERAGE_PER_CHANNEL_MINMAX;
  qc.weight_opts = (wk_observer_opts){.dtype = WK_QINT8, .qscheme = WK_PER_CHANNEL_SYMMETRIC};
  memset(out, 0, osize);
  memcpy(out, &qc, osize < sizeof qc ? osize : sizeof qc);
  return WK_OK;
}
