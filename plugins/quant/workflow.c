/* quant plugin: the eager-mode workflow: default qconfigs, fuse_modules
 * (BatchNorm folded into the conv as fuse_conv_bn_eval does), prepare
 * (observers on module outputs through forward hooks), convert (modules
 * swapped for quantized ones with wk_module_set_child) and quantize_dynamic. */
#include "quant.h"

#define APP "activation_post_process"

wk_status qt_default_qconfig(const char *backend, wk_qconfig *out, size_t osize) {
  if (!backend || !out) return wk_error(WK_ERR_NULL, "default_qconfig: argument '%s' is NULL", backend ? "out" : "backend");
  if (strcmp(backend, "x86") && strcmp(backend, "fbgemm"))
    return wk_error(WK_ERR_INVALID_ARG, "default_qconfig: unknown backend '%s' (expected \"x86\" or \"fbgemm\")",
                    backend);
  wk_qconfig qc = {0};
  /* get_default_qconfig: HistogramObserver.with_args(reduce_range=True) and
   * default_per_channel_weight_observer (qint8, per_channel_symmetric) */
  qc.activation = WK_OBSERVER_HISTOGRAM;
  qc.activation_opts = (wk_observer_opts){.dtype = WK_QUINT8, .reduce_range = true};
  qc.weight = WK_OBSERVER_PER_CHANNEL_MINMAX;
  qc.weight_opts = (wk_observer_opts){.dtype = WK_QINT8, .qscheme = WK_PER_CHANNEL_SYMMETRIC};
  memset(out, 0, osize);
  memcpy(out, &qc, osize < sizeof qc ? osize : sizeof qc);
  return WK_OK;
}

static bool is_class(const wk_module *m, const char *c) { return m && !strcmp(wk_module_class_name(m), c); }

/* ---- fuse ------------------------------------------------------------------------------------------ */
/* Conv2d's hyperparameters, read from its printed form (the nn service keeps them private). */
wk_status qt_conv_geometry(const wk_module *conv, qt_conv_geom *g, bool *has_bias) {
  char *r = qt_repr_args(conv);
  if (!r) return wk_last_error();
  long long in = 0, out = 0;
  int64_t one[2] = {1, 1}, zero[2] = {0, 0}, grp[2] = {1, 1};
  bool ok = sscanf(r, "%lld, %lld", &in, &out) == 2 && qt_repr_ints(r, "kernel_size", g->k) &&
            qt_repr_ints(r, "stride", g->stride) && !strstr(r, "padding=same");
  if (!qt_repr_ints(r, "padding", g->padding)) memcpy(g->padding, zero, sizeof zero);
  if (!qt_repr_ints(r, "dilation", g->dilation)) memcpy(g->dilation, one, sizeof one);
  qt_repr_ints(r, "groups", grp);
  g->groups = grp[0];
  g->in = in, g->out = out;
  if (has_bias) *has_bias = !strstr(r, "bias=False");
  wk_status st = ok ? WK_OK : wk_error(WK_ERR_UNSUPPORTED, "cannot quantize Conv2d(%s) (padding='same' or an unknown form)", r);
  wk_free(r);
  return st;
}

/* fuse_conv_bn_eval: w * (gamma / sqrt(var + eps)) per output channel,
 * (b - mean) * gamma / sqrt(var + eps) + beta, in a new Conv2d with a bias. */
static wk_module *fold_conv_bn(wk_module *conv, wk_module *bn) {
  qt_conv_geom g;
  if (qt_conv_geometry(conv, &g, NULL)) return NULL;
  char *r = qt_repr_args(bn);
  double eps = 1e-5;
  const char *e = r ? strstr(r, "eps=") : NULL;
  if (e) eps = strtod(e + 4, NULL);
  wk_free(r);
  wk_tensor *w = wk_module_param(conv, "weight"), *b = wk_module_param(conv, "bias");
  wk_clear_error(); /* a None bias is no error */
  wk_tensor *gamma = wk_module_param(bn, "weight"), *beta = wk_module_param(bn, "bias");
  wk_tensor *mean = wk_module_buffer(bn, "running_mean"), *var = wk_module_buffer(bn, "running_var");
  if (!w || !gamma || !beta || !mean || !var) {
    wk_error(WK_ERR_UNSUPPORTED, "fuse: conv+bn needs an affine BatchNorm2d with running statistics");
    return NULL;
  }
  if (wk_tensor_numel(mean) != g.out) {
    wk_error(WK_ERR_SHAPE, "fuse: BatchNorm2d has %lld features, Conv2d %lld output channels",
             (long long)wk_tensor_numel(mean), (long long)g.out);
    return NULL;
  }
  wk_module *nc = wk_nn_conv2d(g.in, g.out, g.k[0],
                               (wk_conv2d_opts){.stride = g.stride[0], .padding = g.padding[0], .dilation = g.dilation[0],
                                                .groups = g.groups, .kernel_w = g.k[1], .stride_w = g.stride[1],
                                                .dilation_w = g.dilation[1],
                                                .padding_w = g.padding[1] ? g.padding[1] : WK_NN_PAD_W_ZERO});
  if (!nc) return NULL;
  wk_scope_begin();
  wk_no_grad_begin();
  wk_tensor *f = wk_mul(gamma, wk_rsqrt(wk_add_scalar(var, eps)));
  wk_tensor *nw = wk_mul(w, wk_reshape(f, WK_SHAPE(-1, 1, 1, 1)));
  wk_tensor *nb = wk_add(wk_mul(b ? wk_sub(b, mean) : wk_neg(mean), f), beta);
  bool ok = nw && nb && wk_copy_(wk_module_param(nc, "weight"), nw) && wk_copy_(wk_module_param(nc, "bias"), nb);
  wk_no_grad_end();
  wk_scope_end();
  if (!ok) {
    wk_module_release(nc);
    return NULL;
  }
  return nc;
}

/* conv+bn of a (conv, bn) Sequential (a ResNet downsample) folded into one Conv2d. */
static wk_module *fold_pair(wk_module *seq) {
  wk_module *c = wk_module_child(seq, "0"), *b = c ? wk_module_child(seq, "1") : NULL;
  if (!b || strcmp(wk_module_class_name(c), "Conv2d") || strcmp(wk_module_class_name(b), "BatchNorm2d")) {
    wk_error_replace(WK_ERR_UNSUPPORTED, "fuse_modules: a BasicBlock's downsample must be (Conv2d, BatchNorm2d)");
    return NULL;
  }
  return fold_conv_bn(c, b);
}

/* torchvision's BasicBlock as a QuantizableBasicBlock (functional.c). */
static wk_status fuse_block(wk_module *parent, const char *name, wk_module *blk) {
  wk_module *c1 = wk_module_child(blk, "conv1"), *b1 = wk_module_child(blk, "bn1");
  wk_module *c2 = wk_module_child(blk, "conv2"), *b2 = wk_module_child(blk, "bn2");
  if (!c1 || !b1 || !c2 || !b2) return wk_last_error();
  wk_module *ds = wk_module_child(blk, "downsample");
  if (!ds) wk_clear_error();
  wk_module *f1 = qt_fused_relu(fold_conv_bn(c1, b1)), *f2 = f1 ? fold_conv_bn(c2, b2) : NULL;
  wk_module *fd = f2 && ds ? fold_pair(ds) : NULL;
  if (!f1 || !f2 || (ds && !fd)) {
    wk_module_release(f1);
    wk_module_release(f2);
    return wk_last_error();
  }
  wk_module *q = qt_quantizable_block(f1, f2, fd);
  if (!q) return wk_last_error();
  wk_status st = wk_module_set_child(parent, name, q);
  wk_module_release(q);
  return st;
}

/* One name: a BasicBlock, or a ResNet (its stem conv1+bn1+relu and every block). */
static wk_status fuse_one(wk_module *model, const char *name) {
  wk_module *m = wk_module_child(model, name);
  if (!m) return wk_last_error();
  const char *c = wk_module_class_name(m);
  char parent_path[256], *dot = NULL;
  snprintf(parent_path, sizeof parent_path, "%s", name);
  dot = strrchr(parent_path, '.');
  if (!strcmp(c, "BasicBlock")) {
    if (!dot) return fuse_block(model, name, m);
    *dot = 0;
    wk_module *parent = wk_module_child(model, parent_path);
    return parent ? fuse_block(parent, dot + 1, m) : wk_last_error();
  }
  if (strcmp(c, "ResNet"))
    return wk_error(WK_ERR_UNSUPPORTED,
                    "fuse_modules: one name must be a BasicBlock or a ResNet (whole-block fusion), '%s' is %s", name, c);
  wk_status st = qt_fuse(m, (const char *const[]){"conv1", "bn1", "relu"}, 3);
  static const char *const layers[] = {"layer1", "layer2", "layer3", "layer4"};
  for (int l = 0; l < 4 && !st; l++) {
    wk_module *layer = wk_module_child(m, layers[l]);
    if (!layer) return wk_last_error();
    const char *bn[64];
    wk_module *blocks[64];
    int nb = wk_module_named_children(layer, bn, blocks, 64);
    for (int b = 0; b < nb && b < 64 && !st; b++) {
      if (!strcmp(wk_module_class_name(blocks[b]), "QuantizableBasicBlock")) continue;
      if (strcmp(wk_module_class_name(blocks[b]), "BasicBlock"))
        return wk_error(WK_ERR_UNSUPPORTED, "fuse_modules: %s.%s is a %s; only BasicBlock ResNets (18, 34) fuse", layers[l],
                        bn[b], wk_module_class_name(blocks[b]));
      st = fuse_block(layer, bn[b], blocks[b]);
    }
  }
  return st;
}

wk_status qt_fuse(wk_module *model, const char *const *names, int n) {
  if (!model || !names) return wk_error(WK_ERR_NULL, "fuse_modules: argument '%s' is NULL", model ? "names" : "model");
  if (n < 1 || n > 3) return wk_error(WK_ERR_INVALID_ARG, "fuse_modules: expected 1 to 3 module names, got %d", n);
  if (n == 1) {
    if (!names[0]) return wk_error(WK_ERR_NULL, "fuse_modules: name 0 is NULL");
    if (wk_module_is_training(model))
      return wk_error(WK_ERR_STATE, "fuse_modules: the model is in training mode; call wk_module_train(model, false) first");
    return fuse_one(model, names[0]);
  }
  if (wk_module_is_training(model))
    return wk_error(WK_ERR_STATE, "fuse_modules: the model is in training mode (QAT fusion is not supported); call "
                                  "wk_module_train(model, false) first");
  wk_module *m[3] = {NULL, NULL, NULL};
  for (int i = 0; i < n; i++) {
    if (!names[i]) return wk_error(WK_ERR_NULL, "fuse_modules: name %d is NULL", i);
    if (!(m[i] = wk_module_child(model, names[i]))) return wk_last_error();
  }
  const char *c0 = wk_module_class_name(m[0]), *c1 = wk_module_class_name(m[1]);
  const char *c2 = n == 3 ? wk_module_class_name(m[2]) : NULL;
  wk_module *fused = NULL;
  if (!strcmp(c0, "Conv2d") && !strcmp(c1, "BatchNorm2d") && (!c2 || !strcmp(c2, "ReLU"))) {
    fused = fold_conv_bn(m[0], m[1]);
    if (fused && c2) fused = qt_fused_relu(fused);
  } else if (n == 2 && (!strcmp(c0, "Conv2d") || !strcmp(c0, "Linear")) && !strcmp(c1, "ReLU")) {
    fused = qt_fused_relu(wk_module_retain(m[0]));
  } else {
    return wk_error(WK_ERR_UNSUPPORTED,
                    "fuse_modules: cannot fuse (%s, %s%s%s); supported: (Conv2d, BatchNorm2d), (Conv2d, BatchNorm2d, "
                    "ReLU), (Conv2d, ReLU), (Linear, ReLU)",
                    c0, c1, c2 ? ", " : "", c2 ? c2 : "");
  }
  if (!fused) return wk_last_error();
  wk_status st = wk_module_set_child(model, names[0], fused);
  wk_module_release(fused);
  for (int i = 1; !st && i < n; i++) {
    wk_module *id = wk_nn_identity();
    st = id ? wk_module_set_child(model, names[i], id) : wk_last_error();
    wk_module_release(id);
  }
  return st;
}

/* ---- prepare ------------------------------------------------------------------------------------------ */
static bool observed_class(const wk_module *m) {
  return qt_is_qat(m) || is_class(m, "QuantStub") || qt_is_float_functional(m) || is_class(m, "Conv2d") || is_class(m, "Linear") || is_class(m, "ConvReLU2d") ||
         is_class(m, "LinearReLU");
}

static wk_status observe_output(void *user, wk_module *m, wk_tensor *const *in, int n, wk_tensor **out) {
  (void)user, (void)in, (void)n;
  wk_module *obs = wk_module_child(m, APP);
  if (!obs) return wk_last_error();
  wk_scope_begin();
  wk_tensor *y = wk_module_forward(obs, *out);
  wk_status st = y ? WK_OK : wk_last_error();
  wk_scope_end();
  return st;
}

static wk_status prepare_rec(wk_module *m, const wk_qconfig *qc, int *count) {
  if (observed_class(m)) {
    wk_module *probe = wk_module_child(m, APP);
    wk_clear_error();
    if (probe) return wk_error(WK_ERR_STATE, "prepare: %s already has an observer (prepared twice?)", wk_module_class_name(m));
    wk_module *obs = qt_observer(qc->activation, &qc->activation_opts, sizeof qc->activation_opts);
    if (!obs) return wk_last_error();
    qt_observer_set_weight_cfg(obs, qc->weight, &qc->weight_opts);
    wk_status st = qt_child(m, APP, obs);
    if (!st && !wk_module_register_forward_hook(m, observe_output, NULL)) st = wk_last_error();
    if (!st) (*count)++;
    return st; /* fused modules and leaves: no descent */
  }
  if (qt_is_observer(m)) return WK_OK;
  int nk = wk_module_named_children(m, NULL, NULL, 0);
  wk_module **kids = wk_malloc(sizeof *kids * (size_t)(nk ? nk : 1));
  if (!kids) return wk_error(WK_ERR_NO_MEMORY, "prepare: out of memory");
  wk_module_named_children(m, NULL, kids, nk);
  wk_status st = WK_OK;
  for (int i = 0; i < nk && !st; i++) st = prepare_rec(kids[i], qc, count);
  wk_free(kids);
  return st;
}

wk_status qt_prepare(wk_module *model, const wk_qconfig *qc_in, size_t qsize) {
  if (!model || !qc_in) return wk_error(WK_ERR_NULL, "prepare: argument '%s' is NULL", model ? "qconfig" : "model");
  wk_qconfig qc = {0};
  memcpy(&qc, qc_in, qsize < sizeof qc ? qsize : sizeof qc);
  /* the observers must be constructible before anything is attached */
  wk_module *a = qt_observer(qc.activation, &qc.activation_opts, sizeof qc.activation_opts);
  wk_module *w = a ? qt_observer(qc.weight, &qc.weight_opts, sizeof qc.weight_opts) : NULL;
  wk_module_release(a);
  wk_module_release(w);
  if (!w) return wk_last_error();
  int count = 0;
  wk_status st = prepare_rec(model, &qc, &count);
  if (!st && count == 0)
    return wk_error(WK_ERR_INVALID_ARG, "prepare: the model has no QuantStub, Conv2d or Linear module to observe");
  return st;
}

/* ---- convert ------------------------------------------------------------------------------------------ */
/* The observer of m's output: its activation_post_process, or the observer
 * inside it when that is a FakeQuantize (QAT). */
static wk_module *app_observer(wk_module *m) {
  wk_module *a = wk_module_child(m, APP);
  return a && qt_is_fake_quant(a) ? wk_module_child(a, APP) : a;
}

static wk_status out_qparams(wk_module *m, double *scale, int64_t *zp) {
  wk_tensor *s = NULL, *z = NULL;
  wk_module *obs = app_observer(m);
  wk_status st = obs ? qt_calculate_qparams(obs, &s, &z) : wk_last_error();
  if (!st) {
    double v;
    st = wk_item(s, &v);
    *scale = v;
    if (!st) st = wk_item_i64(z, zp);
  }
  wk_release(s);
  wk_release(z);
  return st;
}

/* w quantized with the q-params of obs (which has observed it). */
static wk_tensor *quantize_with(wk_module *obs, wk_tensor *w) {
  wk_tensor *s = NULL, *z = NULL, *q = NULL;
  int64_t qmin, qmax, axis;
  bool pc;
  qt_observer_range(obs, &qmin, &qmax, &pc, &axis);
  wk_dtype dt = qt_observer_dtype(obs);
  wk_scope_begin();
  if (!qt_calculate_qparams(obs, &s, &z)) {
    if (pc) {
      q = wk_quantize_per_channel(wk_detach(w), s, z, axis, dt);
    } else {
      double sv;
      int64_t zv;
      if (!wk_item(s, &sv) && !wk_item_i64(z, &zv)) q = wk_quantize_per_tensor(wk_detach(w), sv, zv, dt);
    }
  }
  wk_release(s);
  wk_release(z);
  if (q) wk_scope_escape(q);
  wk_scope_end();
  return q;
}

/* The float module's weight quantized with the configured weight observer. */
static wk_tensor *quantize_weight(wk_tensor *w, int kind, const wk_observer_opts *o) {
  wk_module *obs = qt_observer(kind, o, sizeof *o);
  if (!obs) return NULL;
  wk_scope_begin();
  wk_tensor *y = wk_module_forward(obs, wk_detach(w));
  wk_scope_end();
  wk_tensor *q = y ? quantize_with(obs, w) : NULL;
  wk_module_release(obs);
  return q;
}

/* The quantized replacement of m (a new reference), NULL with *skip when m
 * is not converted, NULL with an error on failure. */
static wk_module *convert_one(wk_module *m, bool *skip) {
  *skip = false;
  const char *c = wk_module_class_name(m);
  if (!strcmp(c, "DeQuantStub")) return qt_dequantize_module();
  if (!strcmp(c, "ReLU") || !strcmp(c, "MaxPool2d") || !strcmp(c, "AdaptiveAvgPool2d"))
    return qt_quantized_passthrough(wk_module_retain(m));
  wk_module *obs = observed_class(m) ? app_observer(m) : NULL;
  wk_clear_error();
  if (!obs) {
    *skip = true;
    return NULL;
  }
  double scale;
  int64_t zp;
  if (out_qparams(m, &scale, &zp)) return NULL;
  if (!strcmp(c, "QuantStub")) return qt_quantize_module(scale, zp, qt_observer_dtype(obs));
  if (qt_is_float_functional(m)) return qt_qfunctional(m, scale, zp);
  if (qt_is_qat(m)) { /* the weight with the q-params its FakeQuantize learned */
    wk_module *fl = qt_qat_float_module(m), *wfq = wk_module_child(m, "weight_fake_quant");
    wk_module *wobs = wfq ? wk_module_child(wfq, APP) : NULL;
    wk_tensor *w = fl ? wk_module_param(fl, "weight") : NULL, *b = fl ? wk_module_param(fl, "bias") : NULL;
    wk_clear_error();
    wk_tensor *qw = w && wobs ? quantize_with(wobs, w) : NULL;
    if (!qw) {
      if (!wk_last_error()) wk_error(WK_ERR_STATE, "convert: %s has no trained weight FakeQuantize", c);
      return NULL;
    }
    wk_tensor *bdet = b ? wk_detach(b) : NULL; /* a new handle: released below, not left to a scope */
    wk_tensor *bd = bdet ? wk_to_dtype(bdet, WK_F32) : NULL;
    wk_release(bdet);
    wk_module *r = NULL;
    qt_conv_geom g;
    if (!is_class(fl, "Conv2d"))
      r = qt_quantized_linear(qw, bd, scale, zp, qt_qat_relu(m));
    else if (!qt_conv_geometry(fl, &g, NULL))
      r = qt_quantized_conv(qw, bd, &g, scale, zp, qt_qat_relu(m));
    wk_release(bd);
    wk_release(qw);
    return r;
  }
  bool relu = !strcmp(c, "ConvReLU2d") || !strcmp(c, "LinearReLU");
  wk_module *fl = relu ? wk_module_child(m, "0") : m;
  int wkind;
  wk_observer_opts wo;
  if (!fl || !qt_observer_weight_cfg(obs, &wkind, &wo)) {
    wk_error(WK_ERR_STATE, "convert: %s was not prepared by wk_quant_prepare", c);
    return NULL;
  }
  wk_tensor *w = wk_module_param(fl, "weight"), *b = wk_module_param(fl, "bias");
  wk_clear_error();
  if (!w) {
    wk_error(WK_ERR_STATE, "convert: %s has no weight", c);
    return NULL;
  }
  wk_tensor *qw = quantize_weight(w, wkind, &wo);
  if (!qw) return NULL;
  wk_module *r = NULL;
  wk_tensor *bdet = b ? wk_detach(b) : NULL;
  wk_tensor *bd = bdet ? wk_to_dtype(bdet, WK_F32) : NULL;
  wk_release(bdet);
  if (is_class(fl, "Conv2d")) {
    qt_conv_geom g;
    if (!qt_conv_geometry(fl, &g, NULL)) r = qt_quantized_conv(qw, bd, &g, scale, zp, relu);
  } else {
    r = qt_quantized_linear(qw, bd, scale, zp, relu);
  }
  wk_release(bd);
  wk_release(qw);
  return r;
}

/* Every observer in reach must have seen data: checked before anything is swapped. */
static wk_status check_calibrated(wk_module *m, const char *path, int *nobs) {
  if (observed_class(m)) {
    wk_module *obs = app_observer(m);
    wk_clear_error();
    if (obs) (*nobs)++;
    double s;
    int64_t z;
    if (obs && out_qparams(m, &s, &z))
      return wk_error_replace(WK_ERR_STATE, "convert: the observer of '%s' (%s) saw no data: run calibration batches "
                                    "through the prepared model first",
                      path[0] ? path : "<model>", wk_module_class_name(m));
    return WK_OK;
  }
  const char *names[256];
  wk_module *kids[256];
  int nk = wk_module_named_children(m, names, kids, 256);
  for (int i = 0; i < nk && i < 256; i++) {
    char sub[512];
    snprintf(sub, sizeof sub, "%s%s%s", path, path[0] ? "." : "", names[i]);
    wk_status st = check_calibrated(kids[i], sub, nobs);
    if (st) return st;
  }
  return WK_OK;
}

static wk_status convert_rec(wk_module *m, int *count) {
  const char *names[256];
  wk_module *kids[256];
  int nk = wk_module_named_children(m, names, kids, 256);
  if (nk > 256) return wk_error(WK_ERR_UNSUPPORTED, "convert: %s has more than 256 children", wk_module_class_name(m));
  for (int i = 0; i < nk; i++) {
    bool skip;
    wk_module *r = convert_one(kids[i], &skip);
    if (skip) {
      wk_status st = convert_rec(kids[i], count);
      if (st) return st;
      continue;
    }
    if (!r) return wk_last_error();
    wk_status st = wk_module_set_child(m, names[i], r);
    wk_module_release(r);
    if (st) return st;
    (*count)++;
  }
  return WK_OK;
}

wk_status qt_convert(wk_module *model) {
  if (!model) return wk_error(WK_ERR_NULL, "convert: argument 'model' is NULL");
  int nobs = 0, count = 0;
  wk_status st = check_calibrated(model, "", &nobs);
  if (st) return st;
  if (nobs == 0)
    return wk_error(WK_ERR_INVALID_ARG, "convert: the model has no observers (call wk_quant_prepare and calibrate first)");
  return convert_rec(model, &count);
}

/* ---- dynamic ------------------------------------------------------------------------------------------ */
static wk_status dynamic_rec(wk_module *m, int *count) {
  const char *names[256];
  wk_module *kids[256];
  int nk = wk_module_named_children(m, names, kids, 256);
  for (int i = 0; i < nk && i < 256; i++) {
    if (!is_class(kids[i], "Linear")) {
      wk_status st = dynamic_rec(kids[i], count);
      if (st) return st;
      continue;
    }
    /* default_dynamic_qconfig's weight: MinMaxObserver(qint8, per_tensor_symmetric) */
    wk_observer_opts wo = {.dtype = WK_QINT8, .qscheme = WK_PER_TENSOR_SYMMETRIC};
    wk_tensor *w = wk_module_param(kids[i], "weight"), *b = wk_module_param(kids[i], "bias");
    wk_clear_error();
    wk_tensor *qw = w ? quantize_weight(w, WK_OBSERVER_MINMAX, &wo) : NULL;
    if (!qw) return wk_last_error();
    wk_tensor *bdet = b ? wk_detach(b) : NULL;
    wk_tensor *bd = bdet ? wk_to_dtype(bdet, WK_F32) : NULL;
    wk_release(bdet);
    wk_module *r = qt_dynamic_linear(qw, bd);
    wk_release(bd);
    wk_release(qw);
    if (!r) return wk_last_error();
    wk_status st = wk_module_set_child(m, names[i], r);
    wk_module_release(r);
    if (st) return st;
    (*count)++;
  }
  return WK_OK;
}

wk_status qt_quantize_dynamic(wk_module *model) {
  if (!model) return wk_error(WK_ERR_NULL, "quantize_dynamic: argument 'model' is NULL");
  int count = 0;
  wk_status st = dynamic_rec(model, &count);
  if (!st && count == 0) return wk_error(WK_ERR_INVALID_ARG, "quantize_dynamic: the model has no Linear module");
  return st;
}
