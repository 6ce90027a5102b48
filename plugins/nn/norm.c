/* nn plugin: BatchNorm1d/2d, LayerNorm, GroupNorm. */
#include "nn.h"

typedef struct {
  int dims;
  int64_t c;
  double eps, momentum;
  bool cumulative, affine, track;
} bn_state;

static wk_tensor *bn_forward(wk_module *self, wk_tensor *const *in, int n) {
  const bn_state *s = wk_module_state(self);
  const char *cls = wk_module_class_name(self);
  if (!nn_check_inputs(cls, in, n, 1)) return NULL;
  wk_tensor *x = in[0];
  int nd = wk_tensor_dim(x);
  bool ok = s->dims == 1 ? (nd == 2 || nd == 3) : nd == 4;
  char sh[160];
  if (!ok) {
    if (s->dims == 1)
      wk_error(WK_ERR_SHAPE, "%s: expected 2D or 3D input (got %dD input)", cls, nd);
    else
      wk_error(WK_ERR_SHAPE, "%s: expected 4D input (got %dD input)", cls, nd);
    return NULL;
  }
  if (wk_tensor_size(x, 1) != s->c) {
    wk_error(WK_ERR_SHAPE, "%s(%lld): expected input with %lld channels, got shape %s", cls, (long long)s->c, (long long)s->c,
             wk_shape_str(x, sh, sizeof sh));
    return NULL;
  }
  bool training = wk_module_is_training(self);
  double factor = s->momentum;
  wk_tensor *rm = s->track ? wk_module_buffer(self, "running_mean") : NULL;
  wk_tensor *rv = s->track ? wk_module_buffer(self, "running_var") : NULL;
  if (training && s->track) {
    wk_tensor *nbt = wk_module_buffer(self, "num_batches_tracked");
    wk_no_grad_begin();
    wk_tensor *r = wkx_add___Scalar(nbt, WK_VI(1), WK_VI(1));
    wk_no_grad_end();
    if (!r) return NULL;
    if (s->cumulative) {
      double cnt = 0;
      if (wk_item(nbt, &cnt) != WK_OK) return NULL;
      factor = 1.0 / cnt;
    }
  }
  bool use_batch = training || !s->track;
  return wk_batch_norm(x, wk_module_param(self, "weight"), wk_module_param(self, "bias"), rm, rv, use_batch, factor,
                       s->eps, NULL);
}
static char *bn_repr(const wk_module *self) {
  const bn_state *s = wk_module_state(self);
  char e[32], m[32];
  return nn_strf("%lld, eps=%s, momentum=%s, affine=%s, track_running_stats=%s", (long long)s->c, nn_pyfloat(s->eps, e),
                 s->cumulative ? "None" : nn_pyfloat(s->momentum, m), s->affine ? "True" : "False",
                 s->track ? "True" : "False");
}
static const wk_module_class BN1 = {sizeof(wk_module_class), "BatchNorm1d", bn_forward, free, bn_repr};
static const wk_module_class BN2 = {sizeof(wk_module_class), "BatchNorm2d", bn_forward, free, bn_repr};

/* Registers weight=1, bias=0 (when affine). */
static wk_status affine_params(wk_module *m, const int64_t *shape, int nd, bool affine) {
  if (!affine) {
    wk_status st = nn_param(m, "weight", NULL);
    return st == WK_OK ? nn_param(m, "bias", NULL) : st;
  }
  wk_status st = nn_param(m, "weight", wk_ones(shape, nd, (wk_options){0}));
  return st == WK_OK ? nn_param(m, "bias", wk_zeros(shape, nd, (wk_options){0})) : st;
}

wk_module *nn_batch_norm(int dims, int64_t c, const wk_norm_opts *o, size_t osize) {
  wk_norm_opts op;
  nn_opts(&op, sizeof op, o, osize);
  const wk_module_class *cls = dims == 1 ? &BN1 : &BN2;
  if (c <= 0 || (dims != 1 && dims != 2)) {
    wk_error(WK_ERR_INVALID_ARG, "%s: num_features must be positive, got %lld", cls->name, (long long)c);
    return NULL;
  }
  bn_state *s = wk_malloc(sizeof *s);
  if (s)
    *s = (bn_state){dims, c, nn_opt_or(op.eps, 1e-5), nn_opt_or(op.momentum, 0.1), op.cumulative_average, !op.no_affine,
                    !op.no_track_running_stats};
  wk_module *m = nn_module_new(cls, s);
  if (!m) return NULL;
  wk_scope_begin();
  wk_status st = affine_params(m, WK_SHAPE(c), s->affine);
  if (st == WK_OK && s->track) {
    st = nn_buffer(m, "running_mean", wk_zeros(WK_SHAPE(c), (wk_options){0}));
    if (st == WK_OK) st = nn_buffer(m, "running_var", wk_ones(WK_SHAPE(c), (wk_options){0}));
    if (st == WK_OK) st = nn_buffer(m, "num_batches_tracked", wk_zeros(NULL, 0, WK_OPTS(.dtype = WK_I64)));
  }
  wk_scope_end();
  if (st != WK_OK) {
    wk_module_release(m);
    return NULL;
  }
  return m;
}

/* ---- LayerNorm ---- */
typedef struct {
  int nd;
  int64_t shape[8];
  double eps;
  bool affine;
} ln_state;
static wk_tensor *ln_forward(wk_module *self, wk_tensor *const *in, int n) {
  const ln_state *s = wk_module_state(self);
  if (!nn_check_inputs("LayerNorm", in, n, 1)) return NULL;
  wk_tensor *x = in[0];
  int xd = wk_tensor_dim(x);
  bool ok = xd >= s->nd;
  for (int i = 0; ok && i < s->nd; i++) ok = wk_tensor_size(x, xd - s->nd + i) == s->shape[i];
  if (!ok) {
    char ns[WK_SHAPE_STR_MAX], sh[WK_SHAPE_STR_MAX];
    wk_sizes_str(s->shape, s->nd, ns, sizeof ns);
    wk_error(WK_ERR_SHAPE, "LayerNorm: Given normalized_shape=%s, expected input with shape [*, %s, but got input of size%s", ns,
             ns + 1, wk_shape_str(x, sh, sizeof sh));
    return NULL;
  }
  return wk_layer_norm(x, s->shape, s->nd, wk_module_param(self, "weight"), wk_module_param(self, "bias"), s->eps, NULL);
}
static char *ln_repr(const wk_module *self) {
  const ln_state *s = wk_module_state(self);
  char sh[200] = "(", e[32];
  int o = 1;
  for (int i = 0; i < s->nd; i++) o += sprintf(sh + o, "%s%lld", i ? ", " : "", (long long)s->shape[i]);
  sprintf(sh + o, s->nd == 1 ? ",)" : ")");
  return nn_strf("%s, eps=%s, elementwise_affine=%s", sh, nn_pyfloat(s->eps, e), s->affine ? "True" : "False");
}
static const wk_module_class LN = {sizeof(wk_module_class), "LayerNorm", ln_forward, free, ln_repr};
wk_module *nn_layer_norm(const int64_t *shape, int nd, const wk_norm_opts *o, size_t osize) {
  wk_norm_opts op;
  nn_opts(&op, sizeof op, o, osize);
  if (nd < 1 || nd > 8 || !shape) {
    wk_error(WK_ERR_INVALID_ARG, "LayerNorm: normalized_shape must have 1 to 8 dimensions, got %d", nd);
    return NULL;
  }
  ln_state *s = wk_calloc(1, sizeof *s);
  if (s) {
    s->nd = nd;
    memcpy(s->shape, shape, (size_t)nd * sizeof *shape);
    s->eps = nn_opt_or(op.eps, 1e-5);
    s->affine = !op.no_affine;
  }
  wk_module *m = nn_module_new(&LN, s);
  if (!m) return NULL;
  wk_scope_begin();
  wk_status st = affine_params(m, shape, nd, s->affine);
  wk_scope_end();
  if (st != WK_OK) {
    wk_module_release(m);
    return NULL;
  }
  return m;
}

/* ---- GroupNorm (composed: per-group mean and biased variance) ---- */
typedef struct {
  int64_t g, c;
  double eps;
  bool affine;
} gn_state;
static wk_tensor *gn_forward(wk_module *self, wk_tensor *const *in, int n) {
  const gn_state *s = wk_module_state(self);
  if (!nn_check_inputs("GroupNorm", in, n, 1)) return NULL;
  wk_tensor *x = in[0];
  int nd = wk_tensor_dim(x);
  if (nd < 2 || wk_tensor_size(x, 1) != s->c) {
    char sh[160];
    wk_error(WK_ERR_SHAPE, "GroupNorm(%lld, %lld): expected input of shape [N, %lld, *], got %s", (long long)s->g,
             (long long)s->c, (long long)s->c, wk_shape_str(x, sh, sizeof sh));
    return NULL;
  }
  wk_scope_begin();
  int64_t nb = wk_tensor_size(x, 0);
  wk_tensor *xg = wk_reshape(x, WK_SHAPE(nb, s->g, -1));
  wk_tensor *mean = wk_mean_dim(xg, (const int64_t[]){2}, 1, true);
  wk_tensor *var = wk_var(xg, (const int64_t[]){2}, 1, 0, true);
  wk_tensor *y = wk_div(wk_sub(xg, mean), wk_sqrt(wk_add_scalar(var, s->eps)));
  y = wk_reshape(y, wk_tensor_sizes(x), nd);
  if (s->affine) {
    int64_t bs[8] = {1, s->c, 1, 1, 1, 1, 1, 1};
    y = wk_add(wk_mul(y, wk_reshape(wk_module_param(self, "weight"), bs, nd)), wk_reshape(wk_module_param(self, "bias"), bs, nd));
  }
  return nn_ret(y);
}
static char *gn_repr(const wk_module *self) {
  const gn_state *s = wk_module_state(self);
  char e[32];
  return nn_strf("%lld, %lld, eps=%s, affine=%s", (long long)s->g, (long long)s->c, nn_pyfloat(s->eps, e),
                 s->affine ? "True" : "False");
}
static const wk_module_class GN = {sizeof(wk_module_class), "GroupNorm", gn_forward, free, gn_repr};
wk_module *nn_group_norm(int64_t groups, int64_t channels, const wk_norm_opts *o, size_t osize) {
  wk_norm_opts op;
  nn_opts(&op, sizeof op, o, osize);
  if (groups <= 0 || channels <= 0 || channels % groups) {
    wk_error(WK_ERR_INVALID_ARG, "GroupNorm: num_channels must be divisible by num_groups, got %lld and %lld",
             (long long)channels, (long long)groups);
    return NULL;
  }
  gn_state *s = wk_malloc(sizeof *s);
  if (s) *s = (gn_state){groups, channels, nn_opt_or(op.eps, 1e-5), !op.no_affine};
  wk_module *m = nn_module_new(&GN, s);
  if (!m) return NULL;
  wk_scope_begin();
  wk_status st = affine_params(m, WK_SHAPE(channels), s->affine);
  wk_scope_end();
  if (st != WK_OK) {
    wk_module_release(m);
    return NULL;
  }
  return m;
}
