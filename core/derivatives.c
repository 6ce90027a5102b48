/* Derivative formulas of the standard op set: one table keyed by op name,
 * each formula written with ops (so every backend gets autograd by
 * implementing the ops it uses, and create_graph gives double backward).
 * Broadcasting is undone once by the engine, not here. Formulas run inside
 * a scope that owns their temporaries; KEEP hands a result to the engine. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd_internal.h"

/* ---- formula helpers ---------------------------------------------------------------- */
#define BEGIN                         \
  int depth__ = wk__call_depth;       \
  wk__call_depth = 0;                 \
  wk_scope_begin();                   \
  wk_status st__ = WK_OK;             \
  const wk__node *N = c->node;        \
  (void)N;
#define END                           \
  goto done;                          \
  done:                               \
  wk_scope_end();                     \
  wk__call_depth = depth__;           \
  return st__;
/* Writes the gradient of argument `arg` (skipped when it needs none). */
#define GIN(arg, expr)                                       \
  do {                                                       \
    int k__ = N->k_of_arg[arg];                              \
    if (k__ >= 0 && c->needs[k__]) {                         \
      wk_tensor *t__ = (expr);                               \
      if (!t__) {                                            \
        st__ = wk_last_error();                              \
        goto done;                                           \
      }                                                      \
      gin[k__] = wk_retain(t__);                             \
    }                                                        \
  } while (0)
#define NEEDS(arg) (N->k_of_arg[arg] >= 0 && c->needs[N->k_of_arg[arg]])
#define G(i) (gout[i])
#define X(i) saved_arg(c, i)
#define Y(i) saved_out(c, i)
#define IARG(j_) (N->args[j_].u.i)
#define FARG(j_) (N->args[j_].tag == WK_V_INT ? (double)N->args[j_].u.i : N->args[j_].tag == WK_V_BOOL ? (double)N->args[j_].u.b : N->args[j_].u.f)
#define BARG(j_) (N->args[j_].u.b)
#define NONE(j_) (N->args[j_].tag == WK_V_NONE)
#define CHECK(t)                 \
  do {                           \
    if (!(t)) {                  \
      st__ = wk_last_error();    \
      goto done;                 \
    }                            \
  } while (0)
#define IN_SHAPE(arg) N->in_sizes[N->k_of_arg[arg]], N->in_ndim[N->k_of_arg[arg]]
#define OPT0 ((wk_options){0})

static wk_tensor *unpack(const wk__bctx *c, wk__saved *s, const char *what, int i) {
  wk__node *n = c->node;
  if (n->released || !s->t) {
    wk_error(WK_ERR_AUTOGRAD, "Trying to backward through the graph a second time (or directly access saved tensors "
             "after they have already been freed): %s needs saved %s %d. Specify retain_graph=True", n->name, what, i);
    return NULL;
  }
  uint64_t v = wk_tensor_version(s->t);
  if (v != s->version) {
    char b[160];
    wk_error(WK_ERR_AUTOGRAD, "one of the variables needed for gradient computation has been modified by an inplace "
             "operation: [%s %s], which is %s %d of %s, is at version %llu; expected version %llu instead.",
             wk_dtype_name(s->t->dtype), wk__shape_str(s->t->sizes, s->t->ndim, b, sizeof b), what, i, n->name,
             (unsigned long long)v, (unsigned long long)s->version);
    return NULL;
  }
  if (!s->is_output) { /* the input itself, with its history; may belong to a user scope */
    if (*c->nheld == WK__MAX_HELD) {
      wk_error(WK_ERR_INTERNAL, "autograd: %s unpacked too many saved tensors", n->name);
      return NULL;
    }
    c->held[(*c->nheld)++] = wk_retain(s->t);
    return s->t;
  }
  wk_tensor *t = wk__view_of(s->t, s->t->ndim, s->t->sizes, s->t->strides, s->t->offset);
  if (!t) return NULL;
  if (c->create_graph) { /* reattach history so double backward sees it */
    wk__ameta *m = wk__ameta_get(t);
    if (m) {
      m->grad_fn = wk__node_retain(n);
      m->output_nr = i;
    }
  }
  wk__scope_adopt(t);
  return t;
}

static wk_tensor *saved_arg(const wk__bctx *c, int i) { return unpack(c, &c->node->saved_args[i], "argument", i); }
static wk_tensor *saved_out(const wk__bctx *c, int i) { return unpack(c, &c->node->saved_outs[i], "output", i); }
wk_tensor *wk__saved_arg(const wk__bctx *c, int i) { return saved_arg(c, i); }
wk_tensor *wk__saved_out(const wk__bctx *c, int i) { return saved_out(c, i); }
wk_tensor *wk__saved_list(const wk__bctx *c, int i, int k) {
  if (!c->node->saved_lists[i]) return NULL;
  return unpack(c, &c->node->saved_lists[i][k], "list element", k);
}

/* g with the dims reduced by a keepdim=False reduction put back as size 1. */
static wk_tensor *unsqueeze_dims(wk_tensor *g, const int64_t *dims, int nd, int in_ndim) {
  bool red[WK_MAX_DIMS] = {0};
  if (nd == 0)
    for (int i = 0; i < in_ndim; i++) red[i] = true;
  for (int i = 0; i < nd; i++) red[dims[i] < 0 ? dims[i] + in_ndim : dims[i]] = true;
  wk_tensor *r = g;
  for (int d = 0; d < in_ndim && r; d++)
    if (red[d]) r = wk_unsqueeze(r, d);
  return r;
}

static int64_t count_of(const int64_t *sizes, int ndim, const int64_t *dims, int nd) {
  int64_t n = 1;
  if (nd == 0) {
    for (int i = 0; i < ndim; i++) n *= sizes[i];
    return n;
  }
  for (int i = 0; i < nd; i++) n *= sizes[dims[i] < 0 ? dims[i] + ndim : dims[i]];
  return n;
}

/* ---- pointwise ------------------------------------------------------------------------------ */
static wk_status d_neg(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_neg(G(0)));
  END
}
static wk_status d_abs(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_mul(G(0), wk_sign(X(0))));
  END
}
static wk_status d_exp(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_mul(G(0), Y(0)));
  END
}
static wk_status d_log(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_div(G(0), X(0)));
  END
}
static wk_status d_log1p(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_div(G(0), wk_add_scalar(X(0), 1)));
  END
}
static wk_status d_sqrt(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_div(G(0), wk_mul_scalar(Y(0), 2)));
  END
}
static wk_status d_rsqrt(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *y = Y(0);
  GIN(0, wk_mul_scalar(wk_mul(G(0), wk_mul(y, wk_mul(y, y))), -0.5));
  END
}
static wk_status d_sin(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_mul(G(0), wk_cos(X(0))));
  END
}
static wk_status d_cos(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_neg(wk_mul(G(0), wk_sin(X(0)))));
  END
}
static wk_status d_tanh(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *y = Y(0);
  GIN(0, wk_mul(G(0), wk_sub(wk_ones_like(y, OPT0), wk_mul(y, y))));
  END
}
static wk_status d_sigmoid(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *y = Y(0);
  GIN(0, wk_mul(G(0), wk_mul(y, wk_sub(wk_ones_like(y, OPT0), y))));
  END
}
static wk_status d_relu(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_mul(G(0), wk_gt_scalar(Y(0), 0)));
  END
}
static wk_status d_silu(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *x = X(0), *s = wk_sigmoid(x);
  /* s * (1 + x * (1 - s)) */
  GIN(0, wk_mul(G(0), wk_mul(s, wk_add_scalar(wk_mul(x, wk_sub(wk_ones_like(s, OPT0), s)), 1))));
  END
}
static wk_status d_leaky_relu(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *x = X(0);
  wk_tensor *pos = wk_gt_scalar(x, 0);
  wk_tensor *slope = wk_full_like(x, FARG(1), OPT0);
  GIN(0, wk_mul(G(0), wk_where(pos, wk_ones_like(x, OPT0), slope)));
  END
}
static wk_status d_gelu(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_value a[3] = {WK_VT(G(0)), WK_VT(X(0)), N->args[1]};
  wk_value o[1];
  CHECK(a[1].u.t);
  if (wk_call("gelu_backward", a, 3, o) != WK_OK) {
    st__ = wk_last_error();
    goto done;
  }
  wk__scope_adopt(o[0].u.t);
  GIN(0, o[0].u.t);
  END
}
static wk_status d_clamp(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *x = X(0), *m = wk_ones_like(x, (wk_options){.dtype = WK_BOOL});
  if (!NONE(1)) m = wk_logical_and(m, wk_ge_scalar(x, FARG(1)));
  if (!NONE(2)) m = wk_logical_and(m, wk_le_scalar(x, FARG(2)));
  GIN(0, wk_mul(G(0), m));
  END
}
static wk_status d_nan_to_num(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *x = X(0);
  GIN(0, wk_mul(G(0), wk_logical_not(wk_logical_or(wk_isnan(x), wk_isinf(x)))));
  END
}
static wk_status d_where(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *cond = X(0), *z = wk_zeros_like(G(0), OPT0);
  GIN(1, wk_where(cond, G(0), z));
  GIN(2, wk_where(cond, z, G(0)));
  END
}
static wk_status d_zero(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  (void)c, (void)gout, (void)gin;
  return WK_OK; /* fill_, zero_, uniform_, normal_: the old values do not matter */
}

/* ---- binary -------------------------------------------------------------------------------- */
static double alpha_of(const wk__node *n, int i) {
  if (i >= n->nargs || n->args[i].tag == WK_V_NONE) return 1;
  const wk_value *v = &n->args[i];
  return v->tag == WK_V_INT ? (double)v->u.i : v->tag == WK_V_BOOL ? v->u.b : v->u.f;
}
static wk_status d_add(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN double al = alpha_of(N, 2);
  GIN(0, G(0));
  GIN(1, al == 1 ? G(0) : wk_mul_scalar(G(0), al));
  END
}
static wk_status d_sub(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN double al = alpha_of(N, 2);
  GIN(0, G(0));
  GIN(1, wk_mul_scalar(G(0), -al));
  END
}
static wk_status d_add_scalar(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, G(0));
  END
}
static wk_status d_mul(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN if (NEEDS(0)) GIN(0, wk_mul(G(0), X(1)));
  if (NEEDS(1)) GIN(1, wk_mul(G(0), X(0)));
  END
}
static wk_status d_mul_scalar(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_mul_scalar(G(0), FARG(1)));
  END
}
static bool has_rounding(const wk__node *n) { return n->nargs > 2 && n->args[2].tag == WK_V_STR; }
static wk_status d_div(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN if (has_rounding(N)) goto done; /* piecewise constant */
  wk_tensor *b = X(1);
  if (NEEDS(0)) GIN(0, wk_div(G(0), b));
  if (NEEDS(1)) GIN(1, wk_neg(wk_div(wk_mul(G(0), X(0)), wk_mul(b, b))));
  END
}
static wk_status d_div_scalar(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN if (has_rounding(N)) goto done;
  GIN(0, wk_div_scalar(G(0), FARG(1)));
  END
}
/* maximum/minimum: gradient to the larger (smaller) input, split on ties. */
static wk_status minmax(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin, bool is_max) {
  BEGIN wk_tensor *a = X(0), *b = X(1);
  CHECK(a);
  CHECK(b);
  wk_tensor *win = is_max ? wk_gt(a, b) : wk_lt(a, b);
  wk_tensor *w = wk_add(wk_to_dtype(win, wk_tensor_dtype(G(0))), wk_mul_scalar(wk_to_dtype(wk_eq(a, b), wk_tensor_dtype(G(0))), 0.5));
  GIN(0, wk_mul(G(0), w));
  GIN(1, wk_mul(G(0), wk_sub(wk_ones_like(w, OPT0), w)));
  END
}
static wk_status d_maximum(const wk__bctx *c, wk_tensor *const *g, wk_tensor **gi) { return minmax(c, g, gi, true); }
static wk_status d_minimum(const wk__bctx *c, wk_tensor *const *g, wk_tensor **gi) { return minmax(c, g, gi, false); }
static wk_status minmax_scalar(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin, bool is_max) {
  BEGIN wk_tensor *a = X(0);
  double s = FARG(1);
  wk_tensor *win = is_max ? wk_gt_scalar(a, s) : wk_lt_scalar(a, s);
  wk_tensor *w = wk_add(wk_to_dtype(win, wk_tensor_dtype(G(0))), wk_mul_scalar(wk_to_dtype(wk_eq_scalar(a, s), wk_tensor_dtype(G(0))), 0.5));
  GIN(0, wk_mul(G(0), w));
  END
}
static wk_status d_maximum_s(const wk__bctx *c, wk_tensor *const *g, wk_tensor **gi) { return minmax_scalar(c, g, gi, true); }
static wk_status d_minimum_s(const wk__bctx *c, wk_tensor *const *g, wk_tensor **gi) { return minmax_scalar(c, g, gi, false); }
static wk_status d_pow(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *a = X(0), *b = X(1);
  CHECK(a);
  CHECK(b);
  if (NEEDS(0)) GIN(0, wk_mul(G(0), wk_mul(b, wk_pow(a, wk_sub_scalar(b, 1)))));
  if (NEEDS(1)) {
    /* where a == 0 and b >= 0 the derivative is 0 (PyTorch's masking) */
    wk_tensor *term = wk_mul(wk_pow(a, b), wk_log(a));
    wk_tensor *mask = wk_logical_and(wk_eq_scalar(a, 0), wk_ge_scalar(b, 0));
    GIN(1, wk_mul(G(0), wk_where(mask, wk_zeros_like(term, OPT0), term)));
  }
  END
}
static wk_status d_pow_scalar(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN double e = FARG(1);
  if (e == 0) {
    GIN(0, wk_zeros_like(G(0), OPT0));
  } else {
    GIN(0, wk_mul(G(0), wk_mul_scalar(wk_pow_scalar(X(0), e - 1), e)));
  }
  END
}

/* ---- views and copies ------------------------------------------------------------------------ */
static wk_status d_reshape_back(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_reshape(G(0), IN_SHAPE(0)));
  END
}
static wk_status d_identity(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, G(0));
  END
}
static wk_status d_to_device(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_to_device(G(0), N->in_device0));
  END
}
static wk_status d_copy(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(1, G(0)); /* self is overwritten: no gradient */
  END
}
static wk_status d_permute(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int n = N->args[1].len;
  int64_t inv[WK_MAX_DIMS];
  for (int i = 0; i < n; i++) {
    int64_t d = N->args[1].u.ints[i];
    inv[d < 0 ? d + n : d] = i;
  }
  GIN(0, wk_permute(G(0), inv, n));
  END
}
static wk_status d_transpose(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_transpose(G(0), IARG(1), IARG(2)));
  END
}
static wk_status d_t(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_t(G(0)));
  END
}
static wk_status d_expand(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, G(0)); /* the engine sums back to the input shape */
  END
}
/* Places g into zeros of the input's shape at positions start, start+step, ...
 * of dim, with a differentiable scatter. */
static wk_tensor *embed_slice(wk_tensor *g, const int64_t *in_sizes, int in_ndim, int dim, int64_t start, int64_t step) {
  wk_tensor *z = wk_zeros(in_sizes, in_ndim, (wk_options){.dtype = wk_tensor_dtype(g), .device = wk_tensor_device(g)});
  int64_t len = wk_tensor_size(g, dim);
  wk_tensor *idx = wk_arange_int(start, start + len * step, step, (wk_options){.device = wk_tensor_device(g)});
  if (!idx || len == 0) return z;
  int64_t shp[WK_MAX_DIMS];
  for (int i = 0; i < in_ndim; i++) shp[i] = i == dim ? len : 1;
  wk_tensor *ix = wk_expand(wk_reshape(idx, shp, in_ndim), wk_tensor_sizes(g), in_ndim);
  return wk_scatter(z, dim, ix, g);
}
static wk_status d_slice(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN const int64_t *sz = N->in_sizes[0];
  int nd = N->in_ndim[0];
  int dim = (int)(IARG(1) < 0 ? IARG(1) + nd : IARG(1));
  int64_t n = sz[dim], start = NONE(2) ? 0 : IARG(2);
  if (start < 0) start += n;
  if (start < 0) start = 0;
  if (start > n) start = n;
  GIN(0, embed_slice(G(0), sz, nd, dim, start, IARG(4)));
  END
}
static wk_status d_narrow(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN const int64_t *sz = N->in_sizes[0];
  int nd = N->in_ndim[0];
  int dim = (int)(IARG(1) < 0 ? IARG(1) + nd : IARG(1));
  int64_t start = IARG(2) < 0 ? IARG(2) + sz[dim] : IARG(2);
  GIN(0, embed_slice(G(0), sz, nd, dim, start, 1));
  END
}
static wk_status d_select(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN const int64_t *sz = N->in_sizes[0];
  int nd = N->in_ndim[0];
  int dim = (int)(IARG(1) < 0 ? IARG(1) + nd : IARG(1));
  int64_t idx = IARG(2) < 0 ? IARG(2) + sz[dim] : IARG(2);
  GIN(0, embed_slice(wk_unsqueeze(G(0), dim), sz, nd, dim, idx, 1));
  END
}

/* ---- reductions --------------------------------------------------------------------------------- */
static wk_status d_sum(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_expand(G(0), IN_SHAPE(0)));
  END
}
static wk_status d_sum_dim(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int nd = NONE(1) ? 0 : N->args[1].len;
  const int64_t *dims = NONE(1) ? NULL : N->args[1].u.ints;
  wk_tensor *g = BARG(2) ? G(0) : unsqueeze_dims(G(0), dims, nd, N->in_ndim[0]);
  GIN(0, wk_expand(g, IN_SHAPE(0)));
  END
}
static wk_status d_mean(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int64_t n = count_of(IN_SHAPE(0), NULL, 0);
  GIN(0, wk_div_scalar(wk_expand(G(0), IN_SHAPE(0)), (double)n));
  END
}
static wk_status d_mean_dim(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int nd = NONE(1) ? 0 : N->args[1].len;
  const int64_t *dims = NONE(1) ? NULL : N->args[1].u.ints;
  wk_tensor *g = BARG(2) ? G(0) : unsqueeze_dims(G(0), dims, nd, N->in_ndim[0]);
  GIN(0, wk_div_scalar(wk_expand(g, IN_SHAPE(0)), (double)count_of(IN_SHAPE(0), dims, nd)));
  END
}
static wk_status d_prod(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN /* prod / x; correct when no element is zero */
      GIN(0, wk_div(wk_mul(wk_expand(G(0), IN_SHAPE(0)), Y(0)), X(0)));
  END
}
static wk_status d_prod_dim(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int64_t d = IARG(1);
  wk_tensor *g = BARG(2) ? G(0) : wk_unsqueeze(G(0), d);
  wk_tensor *y = BARG(2) ? Y(0) : wk_unsqueeze(Y(0), d);
  GIN(0, wk_div(wk_mul(g, y), X(0)));
  END
}
/* max()/min() over everything: the gradient is shared by the tied extrema. */
static wk_status d_extreme_all(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *x = X(0), *m = wk_to_dtype(wk_eq(x, Y(0)), wk_tensor_dtype(G(0)));
  GIN(0, wk_div(wk_mul(m, G(0)), wk_sum(m)));
  END
}
/* Scatters g (a reduced result) back to the positions named by indices. */
static wk_status d_values_indices(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int64_t d = IARG(1);
  bool keep = BARG(2);
  wk_tensor *g = keep ? G(0) : wk_unsqueeze(G(0), d);
  wk_tensor *ix = keep ? Y(1) : wk_unsqueeze(Y(1), d);
  GIN(0, wk_scatter(wk_zeros(IN_SHAPE(0), (wk_options){.dtype = wk_tensor_dtype(g), .device = wk_tensor_device(g)}), d, ix, g));
  END
}
static wk_status d_sorted(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int64_t d = IARG(N->op && strcmp(wk_op_name(N->op), "topk") == 0 ? 2 : 1);
  wk_tensor *g = G(0);
  GIN(0, wk_scatter(wk_zeros(IN_SHAPE(0), (wk_options){.dtype = wk_tensor_dtype(g), .device = wk_tensor_device(g)}), d, Y(1), g));
  END
}
static wk_status var_like(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin, bool is_std) {
  BEGIN int nd = NONE(1) ? 0 : N->args[1].len;
  const int64_t *dims = NONE(1) ? NULL : N->args[1].u.ints;
  int64_t n = count_of(IN_SHAPE(0), dims, nd), corr = IARG(2);
  bool keep = BARG(3);
  wk_tensor *x = X(0);
  CHECK(x);
  int64_t all[WK_MAX_DIMS];
  int na = nd;
  if (nd == 0)
    for (na = 0; na < wk_tensor_dim(x); na++) all[na] = na;
  else
    memcpy(all, dims, sizeof(int64_t) * (size_t)nd);
  wk_tensor *centered = wk_sub(x, wk_mean_dim(x, all, na, true));
  wk_tensor *g = keep ? G(0) : unsqueeze_dims(G(0), dims, nd, wk_tensor_dim(x));
  double denom = (double)(n - corr);
  if (is_std) {
    wk_tensor *y = keep ? Y(0) : unsqueeze_dims(Y(0), dims, nd, wk_tensor_dim(x));
    GIN(0, wk_div(wk_mul(g, centered), wk_mul_scalar(y, denom)));
  } else {
    GIN(0, wk_mul(g, wk_mul_scalar(centered, 2.0 / denom)));
  }
  END
}
static wk_status d_var(const wk__bctx *c, wk_tensor *const *g, wk_tensor **gi) { return var_like(c, g, gi, false); }
static wk_status d_std(const wk__bctx *c, wk_tensor *const *g, wk_tensor **gi) { return var_like(c, g, gi, true); }
static wk_status d_norm(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN double p = FARG(1);
  int nd = NONE(2) ? 0 : N->args[2].len;
  const int64_t *dims = NONE(2) ? NULL : N->args[2].u.ints;
  bool keep = BARG(3);
  wk_tensor *x = X(0);
  CHECK(x);
  wk_tensor *g = keep ? G(0) : unsqueeze_dims(G(0), dims, nd, wk_tensor_dim(x));
  wk_tensor *y = keep ? Y(0) : unsqueeze_dims(Y(0), dims, nd, wk_tensor_dim(x));
  wk_tensor *r;
  if (p == 0) {
    r = wk_zeros_like(x, OPT0);
  } else if (p == 1) {
    r = wk_mul(g, wk_sign(x));
  } else if (isinf(p)) {
    wk_tensor *m = wk_to_dtype(wk_eq(wk_abs(x), y), wk_tensor_dtype(x));
    r = wk_div(wk_mul(wk_mul(g, wk_sign(x)), m), wk_sum_dim(m, dims, nd, true));
  } else if (p == 2) {
    /* x / norm, with 0 where the norm is 0 */
    wk_tensor *q = wk_div(x, y);
    r = wk_mul(g, wk_masked_fill(q, wk_eq_scalar(y, 0), 0));
  } else {
    wk_tensor *q = wk_div(wk_mul(x, wk_pow_scalar(wk_abs(x), p - 2)), wk_pow_scalar(y, p - 1));
    r = wk_mul(g, wk_masked_fill(q, wk_eq_scalar(y, 0), 0));
  }
  GIN(0, r);
  END
}
static wk_status d_logsumexp(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *x = X(0);
  CHECK(x);
  bool keep = BARG(2);
  wk_tensor *g = keep ? G(0) : unsqueeze_dims(G(0), N->args[1].u.ints, N->args[1].len, wk_tensor_dim(x));
  wk_tensor *y = keep ? Y(0) : unsqueeze_dims(Y(0), N->args[1].u.ints, N->args[1].len, wk_tensor_dim(x));
  GIN(0, wk_mul(g, wk_exp(wk_sub(x, y))));
  END
}
static wk_status d_cumsum(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int64_t d = IARG(1);
  GIN(0, wk_flip(wk_cumsum(wk_flip(G(0), &d, 1), d), &d, 1));
  END
}

/* ---- linear algebra ------------------------------------------------------------------------------- */
static wk_status d_mm(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN if (NEEDS(0)) GIN(0, wk_mm(G(0), wk_t(X(1))));
  if (NEEDS(1)) GIN(1, wk_mm(wk_t(X(0)), G(0)));
  END
}
static wk_status d_bmm(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN if (NEEDS(0)) GIN(0, wk_bmm(G(0), wk_transpose(X(1), 1, 2)));
  if (NEEDS(1)) GIN(1, wk_bmm(wk_transpose(X(0), 1, 2), G(0)));
  END
}
static wk_status d_addmm(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN double beta = FARG(3), alpha = FARG(4);
  GIN(0, beta == 1 ? G(0) : wk_mul_scalar(G(0), beta));
  if (NEEDS(1)) GIN(1, wk_mul_scalar(wk_mm(G(0), wk_t(X(2))), alpha));
  if (NEEDS(2)) GIN(2, wk_mul_scalar(wk_mm(wk_t(X(1)), G(0)), alpha));
  END
}
static wk_status d_dot(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN if (NEEDS(0)) GIN(0, wk_mul(G(0), X(1)));
  if (NEEDS(1)) GIN(1, wk_mul(G(0), X(0)));
  END
}

/* ---- neural-network ops ---------------------------------------------------------------------------- */
static wk_tensor *call1(const char *op, const wk_value *a, int n) {
  wk_value o[WK_MAX_OUTS];
  if (wk_call(op, a, n, o) != WK_OK) return NULL;
  return o[0].u.t; /* adopted by the formula's scope */
}
static wk_status d_softmax(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *y = Y(0);
  CHECK(y);
  wk_value a[4] = {WK_VT(G(0)), WK_VT(y), WK_VI(IARG(1)), WK_VDT(N->in_dtype[0])};
  GIN(0, call1("softmax_backward_data", a, 4));
  END
}
static wk_status d_log_softmax(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *y = Y(0);
  CHECK(y);
  wk_value a[4] = {WK_VT(G(0)), WK_VT(y), WK_VI(IARG(1)), WK_VDT(N->in_dtype[0])};
  GIN(0, call1("log_softmax_backward_data", a, 4));
  END
}
/* Second derivatives of the softmax backward helpers (double backward through
 * softmax, log_softmax and the losses built on them). */
static wk_status d_softmax_bd(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int64_t d = IARG(2);
  wk_tensor *g = X(0), *y = X(1), *h = G(0);
  CHECK(g);
  CHECK(y);
  wk_tensor *s = wk_sum_dim(wk_mul(g, y), &d, 1, true), *hy = wk_sum_dim(wk_mul(h, y), &d, 1, true);
  if (NEEDS(0)) GIN(0, wk_mul(y, wk_sub(h, hy)));
  if (NEEDS(1)) GIN(1, wk_sub(wk_mul(h, wk_sub(g, s)), wk_mul(g, hy)));
  END
}
static wk_status d_log_softmax_bd(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int64_t d = IARG(2);
  wk_tensor *g = X(0), *y = X(1), *h = G(0);
  CHECK(g);
  CHECK(y);
  wk_tensor *ey = wk_exp(y);
  if (NEEDS(0)) GIN(0, wk_sub(h, wk_sum_dim(wk_mul(h, ey), &d, 1, true)));
  if (NEEDS(1)) GIN(1, wk_neg(wk_mul(wk_mul(h, ey), wk_sum_dim(g, &d, 1, true))));
  END
}
static wk_status d_conv2d(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int64_t mask[3] = {NEEDS(0), NEEDS(1), NEEDS(2)};
  wk_value a[8] = {WK_VT(G(0)), WK_VT(X(0)), WK_VT(X(1)), N->args[3], N->args[4], N->args[5], N->args[6], WK_VINTS(mask, 3)};
  CHECK(a[1].u.t);
  CHECK(a[2].u.t);
  wk_value o[3];
  if (wk_call("conv2d_backward", a, 8, o) != WK_OK) {
    st__ = wk_last_error();
    goto done;
  }
  for (int i = 0; i < 3; i++)
    if (o[i].tag == WK_V_TENSOR) wk__scope_adopt(o[i].u.t);
  for (int i = 0; i < 3; i++)
    if (o[i].tag == WK_V_TENSOR) GIN(i, o[i].u.t);
  END
}
static wk_status d_max_pool(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_value a[8] = {WK_VT(G(0)), WK_VT(X(0)), N->args[1], N->args[2], N->args[3], N->args[4], N->args[5], WK_VT(Y(1))};
  CHECK(a[1].u.t);
  CHECK(a[7].u.t);
  GIN(0, call1("max_pool2d_with_indices_backward", a, 8));
  END
}
static wk_status d_avg_pool(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_value a[8] = {WK_VT(G(0)), WK_VT(X(0)), N->args[1], N->args[2], N->args[3], N->args[4], N->args[5], N->args[6]};
  CHECK(a[1].u.t);
  GIN(0, call1("avg_pool2d_backward", a, 8));
  END
}
static wk_status d_adaptive_avg_pool(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_value a[2] = {WK_VT(G(0)), WK_VT(X(0))};
  CHECK(a[1].u.t);
  GIN(0, call1("adaptive_avg_pool2d_backward", a, 2));
  END
}
static wk_status d_batch_norm(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int64_t mask[3] = {NEEDS(0), NEEDS(1), NEEDS(2)};
  bool train = BARG(5);
  wk_tensor *w = NONE(1) ? NULL : X(1);
  wk_tensor *rm = NONE(3) ? NULL : X(3), *rv = NONE(4) ? NULL : X(4);
  wk_value a[10] = {WK_VT(G(0)), WK_VT(X(0)), WK_VT(w), WK_VT(train ? NULL : rm), WK_VT(train ? NULL : rv),
                    WK_VT(train ? Y(1) : NULL), WK_VT(train ? Y(2) : NULL), WK_VB(train), N->args[7], WK_VINTS(mask, 3)};
  CHECK(a[1].u.t);
  wk_value o[3];
  if (wk_call("batch_norm_backward", a, 10, o) != WK_OK) {
    st__ = wk_last_error();
    goto done;
  }
  for (int i = 0; i < 3; i++)
    if (o[i].tag == WK_V_TENSOR) wk__scope_adopt(o[i].u.t);
  for (int i = 0; i < 3; i++)
    if (o[i].tag == WK_V_TENSOR) GIN(i, o[i].u.t);
  END
}
static wk_status d_layer_norm(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int64_t mask[3] = {NEEDS(0), NEEDS(2), NEEDS(3)};
  wk_value a[8] = {WK_VT(G(0)), WK_VT(X(0)), N->args[1], WK_VT(Y(1)), WK_VT(Y(2)),
                   WK_VT(NONE(2) ? NULL : X(2)), WK_VT(NONE(3) ? NULL : X(3)), WK_VINTS(mask, 3)};
  CHECK(a[1].u.t);
  wk_value o[3];
  if (wk_call("layer_norm_backward", a, 8, o) != WK_OK) {
    st__ = wk_last_error();
    goto done;
  }
  for (int i = 0; i < 3; i++)
    if (o[i].tag == WK_V_TENSOR) wk__scope_adopt(o[i].u.t);
  if (o[0].tag == WK_V_TENSOR) GIN(0, o[0].u.t);
  if (o[1].tag == WK_V_TENSOR) GIN(2, o[1].u.t);
  if (o[2].tag == WK_V_TENSOR) GIN(3, o[2].u.t);
  END
}
static wk_status d_dropout(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN double p = FARG(1);
  bool train = BARG(2);
  if (!train || p == 0) {
    GIN(0, G(0));
  } else if (p >= 1) {
    GIN(0, wk_zeros_like(G(0), OPT0));
  } else {
    GIN(0, wk_mul_scalar(wk_mul(G(0), Y(1)), 1.0 / (1.0 - p)));
  }
  END
}
static wk_status d_embedding(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_value a[4] = {WK_VT(G(0)), WK_VT(X(1)), WK_VI(N->in_sizes[0][0]), N->args[2]};
  CHECK(a[1].u.t);
  GIN(0, call1("embedding_dense_backward", a, 4));
  END
}
static wk_status d_pad(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_value a[4] = {WK_VT(G(0)), WK_VT(X(0)), N->args[1], N->args[2]};
  CHECK(a[1].u.t);
  GIN(0, call1("pad_backward", a, 4));
  END
}

/* Losses are differentiated with forward ops (so double backward works):
 * G = dloss/dlogp for class targets, then through log_softmax. */
static wk_tensor *class_index_grad(wk_tensor *logp_like, wk_tensor *target, wk_tensor *weight, int64_t reduction,
                                   int64_t ignore_index, double smoothing, wk_tensor *g, int cdim) {
  int nd = wk_tensor_dim(logp_like);
  int64_t C = wk_tensor_size(logp_like, cdim);
  wk_options fo = {.dtype = wk_tensor_dtype(logp_like), .device = wk_tensor_device(logp_like)};
  wk_tensor *valid = wk_ne_scalar(target, (double)ignore_index);
  wk_tensor *safe_t = wk_where(valid, target, wk_zeros_like(target, OPT0));
  /* one-hot over classes, moved to the class dim: [N, C, d...] */
  wk_tensor *oh = wk_to_dtype(wk_one_hot(safe_t, C), fo.dtype);
  if (nd > 1) {
    int64_t perm[WK_MAX_DIMS];
    int k = 0;
    perm[k++] = 0;
    perm[k++] = nd - 1;
    for (int d = 1; d < nd - 1; d++) perm[k++] = d;
    oh = wk_permute(oh, perm, nd);
  }
  int64_t wshape[WK_MAX_DIMS];
  for (int d = 0; d < nd; d++) wshape[d] = d == cdim ? C : 1;
  wk_tensor *w = weight ? wk_reshape(weight, wshape, nd) : wk_ones(wshape, nd, fo);
  wk_tensor *validf = wk_unsqueeze(wk_to_dtype(valid, fo.dtype), cdim);
  /* per-element weight of the target class, and the mean denominator */
  wk_tensor *wt = wk_sum_dim(wk_mul(oh, w), (int64_t[]){cdim}, 1, true);
  wk_tensor *wtv = wk_mul(wt, validf);
  wk_tensor *G = wk_neg(wk_mul(wk_mul_scalar(oh, 1.0 - smoothing), wk_mul(w, validf)));
  if (smoothing > 0) G = wk_sub(G, wk_mul_scalar(wk_mul(w, validf), smoothing / (double)C));
  wk_tensor *scale;
  if (reduction == 0) {
    scale = wk_unsqueeze(g, cdim);
  } else {
    scale = g;
    if (reduction == 1) scale = wk_div(g, wk_sum(wtv));
  }
  return wk_mul(G, scale);
}
static wk_status d_nll_loss(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *x = X(0);
  CHECK(x);
  int cdim = wk_tensor_dim(x) == 1 ? 0 : 1;
  wk_tensor *t = X(1);
  if (wk_tensor_dim(x) == 1) {
    x = wk_unsqueeze(x, 0);
    t = wk_unsqueeze(t, 0);
    cdim = 1;
  }
  wk_tensor *g = IARG(3) == 0 && wk_tensor_dim(X(0)) == 1 ? wk_unsqueeze(G(0), 0) : G(0);
  wk_tensor *gl = class_index_grad(x, t, NONE(2) ? NULL : X(2), IARG(3), IARG(4), 0, g, cdim);
  GIN(0, wk_tensor_dim(X(0)) == 1 ? wk_squeeze_dim(gl, 0) : gl);
  END
}
static wk_status d_cross_entropy(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *x = X(0), *t = X(1);
  CHECK(x);
  CHECK(t);
  bool one_d = wk_tensor_dim(x) == 1;
  if (one_d) {
    x = wk_unsqueeze(x, 0);
    t = wk_unsqueeze(t, 0);
  }
  int64_t red = IARG(3);
  double eps = FARG(5);
  wk_tensor *w = NONE(2) ? NULL : X(2);
  wk_tensor *logp = wk_log_softmax(x, 1);
  wk_tensor *Gl;
  if (wk_dtype_is_floating(wk_tensor_dtype(t))) { /* class probabilities */
    int nd = wk_tensor_dim(x);
    int64_t C = wk_tensor_size(x, 1), wshape[WK_MAX_DIMS];
    for (int d = 0; d < nd; d++) wshape[d] = d == 1 ? C : 1;
    wk_tensor *pt = eps > 0 ? wk_add_scalar(wk_mul_scalar(t, 1 - eps), eps / (double)C) : t;
    wk_tensor *ww = w ? wk_reshape(w, wshape, nd) : NULL;
    Gl = wk_neg(ww ? wk_mul(pt, ww) : pt);
    wk_tensor *g = G(0);
    if (red == 0)
      g = wk_unsqueeze(one_d ? wk_unsqueeze(g, 0) : g, 1);
    else if (red == 1)
      g = wk_div_scalar(g, (double)(wk_tensor_numel(x) / C));
    Gl = wk_mul(Gl, g);
  } else {
    wk_tensor *g = red == 0 && one_d ? wk_unsqueeze(G(0), 0) : G(0);
    Gl = class_index_grad(x, t, w, red, IARG(4), eps, g, 1);
  }
  CHECK(Gl);
  /* through log_softmax: G - softmax * sum(G) */
  wk_tensor *gx = wk_sub(Gl, wk_mul(wk_exp(logp), wk_sum_dim(Gl, (int64_t[]){1}, 1, true)));
  GIN(0, one_d ? wk_squeeze_dim(gx, 0) : gx);
  END
}
static double reduce_scale(int64_t red, wk_tensor *x) { return red == 1 ? 1.0 / (double)wk_tensor_numel(x) : 1.0; }
static wk_status d_mse(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *x = X(0), *y = X(1);
  CHECK(x);
  CHECK(y);
  wk_tensor *d = wk_mul(wk_sub(x, y), G(0));
  d = wk_mul_scalar(d, 2.0 * reduce_scale(IARG(2), x));
  if (NEEDS(0)) GIN(0, d);
  if (NEEDS(1)) GIN(1, wk_neg(d));
  END
}
static wk_status d_bce_logits(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *x = X(0), *y = X(1);
  CHECK(x);
  CHECK(y);
  wk_tensor *w = NONE(2) ? NULL : X(2), *pw = NONE(3) ? NULL : X(3);
  wk_tensor *g = wk_mul_scalar(G(0), reduce_scale(IARG(4), x));
  if (w) g = wk_mul(g, w);
  wk_tensor *s = wk_sigmoid(x);
  if (NEEDS(0)) {
    wk_tensor *r;
    if (pw) {
      wk_tensor *py = wk_mul(pw, y);
      r = wk_sub(wk_mul(wk_add(wk_sub(py, y), wk_ones_like(y, OPT0)), s), py);
    } else {
      r = wk_sub(s, y);
    }
    GIN(0, wk_mul(r, g));
  }
  if (NEEDS(1)) {
    /* d/dy = -x + (pw - 1) * softplus(-x) */
    wk_tensor *r = wk_neg(x);
    if (pw) {
      wk_tensor *sp = wk_add(wk_relu(wk_neg(x)), wk_log1p(wk_exp(wk_neg(wk_abs(x)))));
      r = wk_add(r, wk_mul(wk_sub_scalar(pw, 1), sp));
    }
    GIN(1, wk_mul(r, g));
  }
  END
}

/* ---- indexing ------------------------------------------------------------------------------------ */
static wk_status d_cat(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int n = N->args[0].len;
  int64_t dim = IARG(1), off = 0;
  int base = N->k_of_arg[0];
  for (int i = 0; i < n && base >= 0; i++) {
    int k = base + i;
    int nd = N->in_ndim[k];
    if (nd == 1 && N->in_sizes[k][0] == 0 && wk_tensor_dim(G(0)) != 1) continue; /* legacy empty input */
    int d = (int)(dim < 0 ? dim + nd : dim);
    int64_t len = N->in_sizes[k][d];
    if (c->needs[k]) {
      wk_tensor *piece = wk_narrow(G(0), d, off, len);
      CHECK(piece);
      gin[k] = wk_retain(piece);
    }
    off += len;
  }
  END
}
static wk_status d_index_select(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int nd = N->in_ndim[0];
  int d = (int)(IARG(1) < 0 ? IARG(1) + nd : IARG(1));
  wk_tensor *g = G(0), *idx = X(2);
  CHECK(idx);
  int64_t shp[WK_MAX_DIMS];
  for (int i = 0; i < nd; i++) shp[i] = i == d ? wk_tensor_numel(idx) : 1;
  wk_tensor *ix = nd ? wk_expand(wk_reshape(idx, shp, nd), wk_tensor_sizes(g), nd) : idx;
  wk_tensor *z = wk_zeros(IN_SHAPE(0), (wk_options){.dtype = wk_tensor_dtype(g), .device = wk_tensor_device(g)});
  GIN(0, nd ? wk_scatter_add(z, d, ix, g) : wk_add(z, g));
  END
}
static wk_status d_gather(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *g = G(0);
  wk_tensor *z = wk_zeros(IN_SHAPE(0), (wk_options){.dtype = wk_tensor_dtype(g), .device = wk_tensor_device(g)});
  GIN(0, wk_scatter_add(z, IARG(1), X(2), g));
  END
}
static wk_status d_scatter(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *idx = X(2);
  CHECK(idx);
  if (NEEDS(0)) GIN(0, wk_scatter(G(0), IARG(1), idx, wk_zeros(wk_tensor_sizes(idx), wk_tensor_dim(idx),
                                                              (wk_options){.dtype = wk_tensor_dtype(G(0))})));
  if (NEEDS(3)) GIN(3, wk_gather(G(0), IARG(1), idx));
  END
}
static wk_status d_scatter_add(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, G(0));
  if (NEEDS(3)) GIN(3, wk_gather(G(0), IARG(1), X(2)));
  END
}
static wk_status d_masked_fill(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_masked_fill(G(0), X(1), 0));
  END
}
static wk_status d_masked_select(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *mask = X(1);
  CHECK(mask);
  int64_t shape[WK_MAX_DIMS];
  int nd = N->in_ndim[0];
  memcpy(shape, N->in_sizes[0], sizeof(int64_t) * (size_t)nd);
  /* the selected positions, in the broadcast shape of self and mask */
  int mnd = wk_tensor_dim(mask);
  if (mnd > nd) {
    for (int i = 0; i < mnd; i++) shape[i] = wk_tensor_size(mask, i) > 1 ? wk_tensor_size(mask, i) : 1;
    nd = mnd;
  }
  int64_t total = 1;
  for (int i = 0; i < nd; i++) total *= shape[i];
  wk_tensor *pos = wk_reshape(wk_arange_int(0, total, 1, OPT0), shape, nd);
  wk_tensor *sel = wk_masked_select(pos, mask);
  wk_tensor *flat = wk_zeros(WK_SHAPE(total), (wk_options){.dtype = wk_tensor_dtype(G(0))});
  GIN(0, wk_reshape(wk_scatter(flat, 0, sel, G(0)), shape, nd));
  END
}
static wk_status d_repeat(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int nr = N->args[1].len, nd = N->in_ndim[0], lead = nr - nd;
  const int64_t *r = N->args[1].u.ints;
  /* view g as [r0, s0, r1, s1, ...] and sum the repeat axes */
  int64_t shp[2 * WK_MAX_DIMS], dims[WK_MAX_DIMS];
  int ns = 0, nds = 0;
  for (int i = 0; i < nr; i++) {
    int64_t s = i < lead ? 1 : N->in_sizes[0][i - lead];
    dims[nds++] = ns;
    shp[ns++] = r[i];
    shp[ns++] = s;
  }
  if (ns > WK_MAX_DIMS) {
    st__ = wk_error(WK_ERR_UNSUPPORTED, "RepeatBackward0: too many dimensions (%d) for the reduction view", ns);
    goto done;
  }
  wk_tensor *v = wk_reshape(G(0), shp, ns);
  GIN(0, wk_reshape(wk_sum_dim(v, dims, nds, false), IN_SHAPE(0)));
  END
}
static wk_status d_flip(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_flip(G(0), N->args[1].u.ints, N->args[1].len));
  END
}
static wk_status d_roll(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int n = N->args[1].len;
  int64_t neg[WK_MAX_DIMS];
  for (int i = 0; i < n && i < WK_MAX_DIMS; i++) neg[i] = -N->args[1].u.ints[i];
  if (N->args[2].len == 0) {
    wk_tensor *flat = wk_reshape(G(0), WK_SHAPE(-1));
    wk_value a[3] = {WK_VT(flat), WK_VINTS(neg, n), WK_VINTS((int64_t *)NULL, 0)};
    GIN(0, wk_reshape(call1("roll", a, 3), IN_SHAPE(0)));
  } else {
    GIN(0, wk_roll(G(0), neg, N->args[2].u.ints, n));
  }
  END
}

/* ---- the table ---------------------------------------------------------------------------------- */
#define A(i) (1u << (i))
#define UNARY_SAVE_X(op, nm, fn)                                                         \
  {op, nm, fn, A(0), 0}, {op "_", nm, fn, A(0), 0}
#define UNARY_SAVE_Y(op, nm, fn)                                                         \
  {op, nm, fn, 0, A(0)}, {op "_", nm, fn, 0, A(0)}

static const wk__formula g_formulas[] = {
    {"neg", "NegBackward0", d_neg, 0, 0}, {"neg_", "NegBackward0", d_neg, 0, 0},
    UNARY_SAVE_X("abs", "AbsBackward0", d_abs), UNARY_SAVE_Y("exp", "ExpBackward0", d_exp),
    UNARY_SAVE_X("log", "LogBackward0", d_log), UNARY_SAVE_X("log1p", "Log1PBackward0", d_log1p),
    UNARY_SAVE_Y("sqrt", "SqrtBackward0", d_sqrt), UNARY_SAVE_Y("rsqrt", "RsqrtBackward0", d_rsqrt),
    UNARY_SAVE_X("sin", "SinBackward0", d_sin), UNARY_SAVE_X("cos", "CosBackward0", d_cos),
    UNARY_SAVE_Y("tanh", "TanhBackward0", d_tanh), UNARY_SAVE_Y("sigmoid", "SigmoidBackward0", d_sigmoid),
    UNARY_SAVE_Y("relu", "ReluBackward0", d_relu), UNARY_SAVE_X("silu", "SiluBackward0", d_silu),
    UNARY_SAVE_X("leaky_relu", "LeakyReluBackward0", d_leaky_relu),
    {"gelu", "GeluBackward0", d_gelu, A(0), 0},
    UNARY_SAVE_X("clamp", "ClampBackward1", d_clamp),
    {"nan_to_num", "NanToNumBackward0", d_nan_to_num, A(0), 0},
    {"where.self", "WhereBackward0", d_where, A(0), 0},
    {"fill_", "FillBackward0", d_zero, 0, 0}, {"zero_", "ZeroBackward0", d_zero, 0, 0},
    {"uniform_", "UniformBackward0", d_zero, 0, 0}, {"normal_", "NormalBackward0", d_zero, 0, 0},
    {"add", "AddBackward0", d_add, 0, 0}, {"add_", "AddBackward0", d_add, 0, 0},
    {"add.Scalar", "AddBackward1", d_add_scalar, 0, 0}, {"add_.Scalar", "AddBackward1", d_add_scalar, 0, 0},
    {"sub", "SubBackward0", d_sub, 0, 0}, {"sub_", "SubBackward0", d_sub, 0, 0},
    {"sub.Scalar", "SubBackward1", d_add_scalar, 0, 0}, {"sub_.Scalar", "SubBackward1", d_add_scalar, 0, 0},
    {"mul", "MulBackward0", d_mul, A(0) | A(1), 0}, {"mul_", "MulBackward0", d_mul, A(0) | A(1), 0},
    {"mul.Scalar", "MulBackward1", d_mul_scalar, 0, 0}, {"mul_.Scalar", "MulBackward1", d_mul_scalar, 0, 0},
    {"div", "DivBackward0", d_div, A(0) | A(1), 0}, {"div_", "DivBackward0", d_div, A(0) | A(1), 0},
    {"div.Scalar", "DivBackward1", d_div_scalar, 0, 0}, {"div_.Scalar", "DivBackward1", d_div_scalar, 0, 0},
    {"maximum", "MaximumBackward0", d_maximum, A(0) | A(1), 0}, {"maximum_", "MaximumBackward0", d_maximum, A(0) | A(1), 0},
    {"maximum.Scalar", "MaximumBackward1", d_maximum_s, A(0), 0}, {"maximum_.Scalar", "MaximumBackward1", d_maximum_s, A(0), 0},
    {"minimum", "MinimumBackward0", d_minimum, A(0) | A(1), 0}, {"minimum_", "MinimumBackward0", d_minimum, A(0) | A(1), 0},
    {"minimum.Scalar", "MinimumBackward1", d_minimum_s, A(0), 0}, {"minimum_.Scalar", "MinimumBackward1", d_minimum_s, A(0), 0},
    {"pow", "PowBackward1", d_pow, A(0) | A(1), 0}, {"pow_", "PowBackward1", d_pow, A(0) | A(1), 0},
    {"pow.Scalar", "PowBackward0", d_pow_scalar, A(0), 0}, {"pow_.Scalar", "PowBackward0", d_pow_scalar, A(0), 0},
    /* views and copies */
    {"view", "ViewBackward0", d_reshape_back, 0, 0}, {"reshape", "ReshapeAliasBackward0", d_reshape_back, 0, 0},
    {"flatten", "ViewBackward0", d_reshape_back, 0, 0}, {"squeeze", "SqueezeBackward0", d_reshape_back, 0, 0},
    {"squeeze.dim", "SqueezeBackward1", d_reshape_back, 0, 0}, {"unsqueeze", "UnsqueezeBackward0", d_reshape_back, 0, 0},
    {"permute", "PermuteBackward0", d_permute, 0, 0}, {"transpose", "TransposeBackward0", d_transpose, 0, 0},
    {"t", "TBackward0", d_t, 0, 0}, {"expand", "ExpandBackward0", d_expand, 0, 0},
    {"slice", "SliceBackward0", d_slice, 0, 0}, {"narrow", "SliceBackward0", d_narrow, 0, 0},
    {"select", "SelectBackward0", d_select, 0, 0}, {"alias", "AliasBackward0", d_identity, 0, 0},
    {"contiguous", "CloneBackward0", d_identity, 0, 0}, {"clone", "CloneBackward0", d_identity, 0, 0},
    {"to.dtype", "ToCopyBackward0", d_identity, 0, 0}, {"to.device", "ToCopyBackward0", d_to_device, 0, 0},
    {"copy_", "CopyBackwards", d_copy, 0, 0},
    /* reductions */
    {"sum", "SumBackward0", d_sum, 0, 0}, {"sum.dim_IntList", "SumBackward1", d_sum_dim, 0, 0},
    {"mean", "MeanBackward0", d_mean, 0, 0}, {"mean.dim", "MeanBackward1", d_mean_dim, 0, 0},
    {"prod", "ProdBackward0", d_prod, A(0), A(0)}, {"prod.dim_int", "ProdBackward1", d_prod_dim, A(0), A(0)},
    {"max", "MaxBackward1", d_extreme_all, A(0), A(0)}, {"min", "MinBackward1", d_extreme_all, A(0), A(0)},
    {"max.dim", "MaxBackward0", d_values_indices, 0, A(1)}, {"min.dim", "MinBackward0", d_values_indices, 0, A(1)},
    {"topk", "TopkBackward0", d_sorted, 0, A(1)}, {"sort", "SortBackward0", d_sorted, 0, A(1)},
    {"var.correction", "VarBackward0", d_var, A(0), 0}, {"std.correction", "StdBackward0", d_std, A(0), A(0)},
    {"norm", "NormBackward1", d_norm, A(0), A(0)}, {"logsumexp", "LogsumexpBackward0", d_logsumexp, A(0), A(0)},
    {"cumsum", "CumsumBackward0", d_cumsum, 0, 0},
    /* linear algebra */
    {"mm", "MmBackward0", d_mm, A(0) | A(1), 0}, {"bmm", "BmmBackward0", d_bmm, A(0) | A(1), 0},
    {"addmm", "AddmmBackward0", d_addmm, A(1) | A(2), 0}, {"dot", "DotBackward0", d_dot, A(0) | A(1), 0},
    /* neural-network ops */
    {"softmax", "SoftmaxBackward0", d_softmax, 0, A(0)}, {"log_softmax", "LogSoftmaxBackward0", d_log_softmax, 0, A(0)},
    {"softmax_backward_data", "SoftmaxBackwardDataBackward0", d_softmax_bd, A(0) | A(1), 0},
    {"log_softmax_backward_data", "LogSoftmaxBackwardDataBackward0", d_log_softmax_bd, A(0) | A(1), 0},
    {"conv2d", "ConvolutionBackward0", d_conv2d, A(0) | A(1), 0},
    {"max_pool2d_with_indices", "MaxPool2DWithIndicesBackward0", d_max_pool, A(0), A(1)},
    {"avg_pool2d", "AvgPool2DBackward0", d_avg_pool, A(0), 0},
    {"adaptive_avg_pool2d", "AdaptiveAvgPool2DBackward0", d_adaptive_avg_pool, A(0), 0},
    {"batch_norm", "NativeBatchNormBackward0", d_batch_norm, A(0) | A(1) | A(3) | A(4), A(1) | A(2)},
    {"layer_norm", "NativeLayerNormBackward0", d_layer_norm, A(0) | A(2) | A(3), A(1) | A(2)},
    {"dropout", "NativeDropoutBackward0", d_dropout, 0, A(1)},
    {"embedding", "EmbeddingBackward0", d_embedding, A(1), 0},
    {"pad", "ConstantPadNdBackward0", d_pad, A(0), 0},
    {"cross_entropy", "CrossEntropyLossBackward0", d_cross_entropy, A(0) | A(1) | A(2), 0},
    {"nll_loss", "NllLossBackward0", d_nll_loss, A(0) | A(1) | A(2), 0},
    {"mse_loss", "MseLossBackward0", d_mse, A(0) | A(1), 0},
    {"binary_cross_entropy_with_logits", "BinaryCrossEntropyWithLogitsBackward0", d_bce_logits, A(0) | A(1) | A(2) | A(3), 0},
    /* indexing */
    {"cat", "CatBackward0", d_cat, 0, 0},
    {"index_select", "IndexSelectBackward0", d_index_select, A(2), 0},
    {"gather", "GatherBackward0", d_gather, A(2), 0},
    {"scatter.src", "ScatterBackward0", d_scatter, A(2), 0}, {"scatter_.src", "ScatterBackward0", d_scatter, A(2), 0},
    {"scatter_add", "ScatterAddBackward0", d_scatter_add, A(2), 0}, {"scatter_add_", "ScatterAddBackward0", d_scatter_add, A(2), 0},
    {"masked_fill.Scalar", "MaskedFillBackward0", d_masked_fill, A(1), 0},
    {"masked_fill_.Scalar", "MaskedFillBackward0", d_masked_fill, A(1), 0},
    {"masked_select", "MaskedSelectBackward0", d_masked_select, A(1), 0},
    {"repeat", "RepeatBackward0", d_repeat, 0, 0},
    {"flip", "FlipBackward0", d_flip, 0, 0}, {"roll", "RollBackward0", d_roll, 0, 0},
};

/* Attaches each formula to its op once, at start-up. */
void wk__formulas_init(void) {
  for (size_t i = 0; i < sizeof g_formulas / sizeof g_formulas[0]; i++) {
    wk_op *op = wk_op_find(g_formulas[i].op);
    if (op) *wk__op_autograd_slot(op) = &g_formulas[i];
    else wk_clear_error(); /* a formula for an op this build does not declare */
  }
}

const wk__formula *wk__formula_for(const wk_op *op) { return *wk__op_autograd_slot((wk_op *)op); }

int wk__formula_count(void);
int wk__formula_count(void) { return (int)(sizeof g_formulas / sizeof g_formulas[0]); }
