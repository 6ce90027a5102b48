/* Composite kernels of issue 21's reductions and shape ops (amax/amin,
 * aminmax, nansum, nanmean, var_mean, std_mean, count_nonzero, tril/triu,
 * diag, diagonal, movedim, tile, unflatten, repeat_interleave) and of
 * clamp_min/clamp_max, lerp, addcmul and addcdiv, written with
 * other ops and registered by the core for every device at fallback
 * priority. Each op's meta function (meta_reduce.c, meta_index.c) checked the
 * arguments; ops tagged composite without a derivative formula get their
 * gradients from the parts autograd records. */
#include <math.h>
#include <string.h>

#include "internal.h"
#include "composite_kernel.h"


/* The first result of op(a...), owned by the current scope; NULL on error. */

WK__HIDDEN wk_status wk__movedim_perm(const wk_tensor *x, const wk_value *src, const wk_value *dst, int64_t *perm);


/* x reduced by max.dim/min.dim over each dim of dims (all when n == 0) into the meta's shape. */
static wk_tensor *extreme(wk_tensor *x, const int64_t *dims, int n, bool is_max, const wk_meta_out *mo) {
  if (x->ndim == 0) return wk_clone(x);
  wk_tensor *v = x;
  for (int d = x->ndim - 1; d >= 0 && v; d--) {
    bool red = n == 0;
    for (int i = 0; i < n && !red; i++) red = dims[i] == d || dims[i] + x->ndim == d;
    if (!red) continue;
    v = C1(is_max ? "max.dim" : "min.dim", WK_VT(v), WK_VI(d), WK_VB(true));
  }
  return v ? wk_reshape(v, mo->sizes, mo->ndim) : NULL;
}

static wk_status k_amax_amin(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  BEGIN_K;
  bool is_max = strcmp(wk_op_name(c->op), "amax") == 0;
  return FINISH1(extreme(T(0), args[1].u.ints, args[1].len, is_max, &c->meta[0]));
}

static wk_status k_aminmax(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  BEGIN_K;
  int64_t dim = args[1].tag == WK_V_NONE ? 0 : args[1].u.i;
  int n = args[1].tag == WK_V_NONE ? 0 : 1;
  wk_tensor *r[2] = {extreme(T(0), &dim, n, false, &c->meta[0]), extreme(T(0), &dim, n, true, &c->meta[1])};
  return wk__composite_finish(outs, r, 2, depth__);
}

/* self with its NaNs as 0. */
static wk_tensor *nan_zeroed(wk_tensor *x) {
  return wk_dtype_is_floating(x->dtype) ? C1("masked_fill.Scalar", WK_VT(x), WK_VT(wk_isnan(x)), WK_VI(0)) : x;
}

static wk_status k_nansum(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  BEGIN_K;
  return FINISH1(C1("sum.dim_IntList", WK_VT(nan_zeroed(T(0))), args[1], args[2], args[3]));
}

/* nanmean = nansum / the number of non-NaN elements (PyTorch's composite). */
static wk_status k_nanmean(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  BEGIN_K;
  wk_tensor *x = T(0);
  if (args[3].tag == WK_V_DTYPE) x = wk_to_dtype(x, args[3].u.dtype);
  wk_tensor *cnt = x ? C1("sum.dim_IntList", WK_VT(wk_logical_not(wk_isnan(x))), args[1], args[2], WK_VNONE) : NULL;
  wk_tensor *sum = x ? C1("sum.dim_IntList", WK_VT(nan_zeroed(x)), args[1], args[2], WK_VNONE) : NULL;
  return FINISH1(wk_div(sum, cnt));
}

/* var_mean / std_mean: (var or std, mean) over the same dims. */
static wk_status k_var_std_mean(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  BEGIN_K;
  bool is_std = strncmp(wk_op_name(c->op), "std", 3) == 0;
  wk_tensor *r[2];
  r[0] = C1(is_std ? "std.correction" : "var.correction", WK_VT(T(0)), args[1], args[2], args[3]);
  r[1] = C1("mean.dim", WK_VT(T(0)), args[1], args[3], WK_VNONE);
  return wk__composite_finish(outs, r, 2, depth__);
}

static wk_status k_count_nonzero(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  BEGIN_K;
  wk_tensor *nz = wk_ne_scalar(T(0), 0);
  return FINISH1(C1("sum.dim_IntList", WK_VT(nz), args[1], WK_VB(false), WK_VDT(WK_I64)));
}

/* tril/triu: self with the elements above (below) diagonal k zeroed: a mask
 * col - row > k (< k) from two aranges on self's device. */
static wk_status k_tril_triu(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  BEGIN_K;
  wk_tensor *x = T(0);
  bool lower = strcmp(wk_op_name(c->op), "tril") == 0;
  int64_t k = args[1].u.i, m = x->sizes[x->ndim - 2], n = x->sizes[x->ndim - 1];
  wk_options o = {.dtype = WK_I64, .device = x->storage->device};
  wk_tensor *rows = wk_unsqueeze(wk_arange_int(0, m, 1, o), 1), *cols = wk_arange_int(0, n, 1, o);
  wk_tensor *diff = wk_sub(cols, rows); /* [m, n]: col - row */
  wk_tensor *drop = lower ? wk_gt_scalar(diff, (double)k) : wk_lt_scalar(diff, (double)k);
  return FINISH1(C1("masked_fill.Scalar", WK_VT(x), WK_VT(drop), WK_VI(0)));
}

/* The view of self's diagonal at offset off between dims d1 and d2 (wrapped). */
static wk_tensor *diag_view(wk_tensor *x, int64_t off, int d1, int d2) {
  int64_t sizes[WK_MAX_DIMS], strides[WK_MAX_DIMS];
  int nd = 0;
  const int64_t *st = wk_tensor_strides(x);
  for (int d = 0; d < x->ndim; d++)
    if (d != d1 && d != d2) sizes[nd] = x->sizes[d], strides[nd++] = st[d];
  int64_t r = x->sizes[d1], cc = x->sizes[d2];
  int64_t len = off >= 0 ? (r < cc - off ? r : cc - off) : (r + off < cc ? r + off : cc);
  if (len < 0) len = 0;
  int64_t start = wk_tensor_offset(x);
  if (len > 0) start += off >= 0 ? off * st[d2] : -off * st[d1];
  sizes[nd] = len, strides[nd++] = st[d1] + st[d2];
  return wk_as_strided(x, sizes, strides, nd, start);
}
static int wrap(int64_t d, int nd) { return (int)(d < 0 ? d + nd : d); }

static wk_status k_diagonal(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  BEGIN_K;
  wk_tensor *x = T(0);
  return FINISH1(diag_view(x, args[1].u.i, wrap(args[2].u.i, x->ndim), wrap(args[3].u.i, x->ndim)));
}

/* diag: a vector's square matrix (zeros, the vector copied into the diagonal
 * view), or a copy of a matrix's diagonal. */
static wk_status k_diag(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  BEGIN_K;
  wk_tensor *x = T(0), *r;
  int64_t k = args[1].u.i;
  if (x->ndim == 1) {
    r = wk_zeros(c->meta[0].sizes, 2, (wk_options){.dtype = x->dtype, .device = x->storage->device});
    wk_tensor *v = r ? diag_view(r, k, 0, 1) : NULL;
    if (v && !wk_copy_(v, x)) r = NULL;
  } else {
    r = wk_clone(diag_view(x, k, 0, 1));
  }
  return FINISH1(r);
}

static wk_status k_movedim(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  BEGIN_K;
  int64_t perm[WK_MAX_DIMS];
  wk_tensor *x = T(0);
  wk_status s = wk__movedim_perm(x, &args[1], &args[2], perm);
  return FINISH1(s ? NULL : wk_permute(x, perm, x->ndim));
}

/* tile: repeat with dims padded by leading 1s to self's rank (repeat adds leading dims itself). */
static wk_status k_tile(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  BEGIN_K;
  wk_tensor *x = T(0);
  int n = args[1].len;
  int64_t reps[WK_MAX_DIMS];
  int nd = n > x->ndim ? n : x->ndim;
  for (int d = 0; d < nd; d++) reps[d] = d - (nd - n) >= 0 ? args[1].u.ints[d - (nd - n)] : 1;
  return FINISH1(wk_repeat(x, reps, nd));
}

static wk_status k_unflatten(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  BEGIN_K;
  return FINISH1(wk_view(T(0), c->meta[0].sizes, c->meta[0].ndim));
}

/* repeat_interleave: index_select with index i // repeats for i < n * repeats. */
static wk_status k_repeat_interleave(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  BEGIN_K;
  wk_tensor *x = T(0);
  int64_t r = args[1].u.i, dim = 0;
  if (args[2].tag == WK_V_NONE) {
    int64_t all = -1;
    x = wk_reshape(x, &all, 1);
  } else if (x->ndim == 0) {
    int64_t one = 1;
    x = wk_reshape(x, &one, 1);
  } else {
    dim = wrap(args[2].u.i, x->ndim);
  }
  if (!x) return FINISH1(NULL);
  int64_t n = x->sizes[dim];
  wk_tensor *ramp = wk_arange_int(0, n * r, 1, (wk_options){.dtype = WK_I64, .device = x->storage->device});
  wk_tensor *idx = r > 0 ? wk_div_mode(ramp, wk_full_like(ramp, (double)r, (wk_options){0}), "floor") : ramp;
  return FINISH1(wk_index_select(x, dim, idx));
}

/* Ends an in-place kernel: the result is self (borrowed), after the call r that wrote it. */
static wk_status finish_inplace(wk_value *outs, wk_tensor *self, wk_tensor *r, int depth) {
  if (!r && !wk__error_pending()) wk__error_revive(); /* as wk__composite_finish */
  wk_status s = r ? WK_OK : wk_last_error() ? wk_last_error() : WK_ERR_INTERNAL;
  wk_scope_end();
  wk__call_depth = depth;
  if (!s) outs[0] = WK_VT(self);
  return s;
}

/* clamp_min/clamp_max[_]: clamp[_] with one bound. */
static wk_status k_clamp_one(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  const char *name = wk_op_name(c->op);
  bool is_min = name[7] == 'i', inplace = name[strlen(name) - 1] == '_'; /* clamp_m[i]n */
  BEGIN_K;
  wk_value lo = is_min ? args[1] : WK_VNONE, hi = is_min ? WK_VNONE : args[1];
  wk_tensor *r = C1(inplace ? "clamp_" : "clamp", WK_VT(T(0)), lo, hi);
  return inplace ? finish_inplace(outs, T(0), r, depth__) : FINISH1(r);
}

/* lerp: PyTorch's two forms, exact at each end: |w| < 0.5 ? self + w (end - self) : end - (end - self) (1 - w). */
static wk_status k_lerp(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  BEGIN_K;
  wk_tensor *self = T(0), *end = T(1), *d = wk_sub(end, self), *r;
  if (args[2].tag == WK_V_TENSOR) {
    wk_tensor *w = T(2);
    wk_tensor *lo = wk_add(self, wk_mul(w, d)), *hi = wk_sub(end, wk_mul(d, wk_add_scalar(wk_neg(w), 1)));
    r = wk_where(wk_lt_scalar(wk_abs(w), 0.5), lo, hi);
  } else {
    double w = args[2].tag == WK_V_INT ? (double)args[2].u.i : args[2].tag == WK_V_BOOL ? args[2].u.b : args[2].u.f;
    r = fabs(w) < 0.5 ? C1("add", WK_VT(self), WK_VT(d), WK_VF(w)) : C1("sub", WK_VT(end), WK_VT(d), WK_VF(1 - w));
  }
  return FINISH1(r);
}

/* addcmul/addcdiv[_]: self + value * (tensor1 * or / tensor2), by add's alpha. */
static wk_status k_addc(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  const char *name = wk_op_name(c->op);
  bool div = name[4] == 'd', inplace = name[strlen(name) - 1] == '_';
  BEGIN_K;
  wk_tensor *t = div ? wk_div(T(1), T(2)) : wk_mul(T(1), T(2));
  wk_tensor *r = t ? C1(inplace ? "add_" : "add", WK_VT(T(0)), WK_VT(t), args[3]) : NULL;
  return inplace ? finish_inplace(outs, T(0), r, depth__) : FINISH1(r);
}

/* ---- glu, prelu, index_add/index_copy/index_fill, take, take_along_dim, argsort -------------- */

/* glu: first half * sigmoid(second half) along dim. */
static wk_status k_glu(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  BEGIN_K;
  wk_tensor *x = T(0);
  int d = wrap(args[1].u.i, x->ndim);
  int64_t h = x->sizes[d] / 2;
  wk_tensor *a = wk_narrow(x, d, 0, h), *b = wk_narrow(x, d, h, h);
  return FINISH1(wk_mul(a, C1("sigmoid", WK_VT(b))));
}

/* prelu: where(self > 0, self, weight * self), weight broadcast along dim 1 (or one value). */
static wk_status k_prelu(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  BEGIN_K;
  wk_tensor *x = T(0), *w = T(1);
  int64_t ws[WK_MAX_DIMS];
  int wn = 0;
  if (wk_tensor_numel(w) != 1) {
    ws[wn++] = -1;
    for (int d = 2; d < x->ndim; d++) ws[wn++] = 1;
  }
  wk_tensor *wv = wk_reshape(w, ws, wn);
  return FINISH1(wk_where(wk_gt_scalar(x, 0), x, wk_mul(wv, x)));
}

/* A vector index (int32/int64) viewed along dim of a rank-nd tensor and expanded to sizes: the
 * scatter index of index_add/index_copy/index_fill. */
static wk_tensor *slice_index(wk_tensor *index, int d, const int64_t *sizes, int nd) {
  wk_tensor *i = index->dtype == WK_I64 ? index : wk_to_dtype(index, WK_I64);
  int64_t vs[WK_MAX_DIMS];
  for (int k = 0; k < nd; k++) vs[k] = k == d ? -1 : 1;
  i = i ? wk_reshape(i, vs, nd) : NULL;
  return i ? wk_expand(i, sizes, nd) : NULL;
}

/* index_add (scatter_add of alpha * source), index_copy (scatter of source), index_fill (scatter of
 * value): a 0-d self works as a 1-element vector. */
static wk_status k_index_acf(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  const char *name = wk_op_name(c->op);
  BEGIN_K;
  wk_tensor *self = T(0), *src = NULL;
  int64_t one = 1;
  bool scalar = self->ndim == 0;
  if (scalar) self = wk_reshape(self, &one, 1);
  if (!self) return FINISH1(NULL);
  int d = scalar ? 0 : wrap(args[1].u.i, self->ndim);
  int64_t ss[WK_MAX_DIMS];
  memcpy(ss, self->sizes, sizeof(int64_t) * (size_t)self->ndim);
  ss[d] = wk_tensor_numel(T(2));
  if (args[3].tag == WK_V_TENSOR) {
    src = wk_reshape(T(3), ss, self->ndim);
    if (src && name[6] == 'a' && !(args[4].tag == WK_V_INT && args[4].u.i == 1))
      src = C1("mul.Scalar", WK_VT(src), args[4]);
  } else {
    double v = args[3].tag == WK_V_INT ? (double)args[3].u.i : args[3].tag == WK_V_BOOL ? args[3].u.b : args[3].u.f;
    src = wk_full(ss, self->ndim, v, (wk_options){.dtype = self->dtype, .device = self->storage->device});
  }
  wk_tensor *idx = src ? slice_index(T(2), d, ss, self->ndim) : NULL;
  wk_tensor *r = idx ? C1(name[6] == 'a' ? "scatter_add" : "scatter.src", WK_VT(self), WK_VI(d), WK_VT(idx), WK_VT(src))
                     : NULL;
  return FINISH1(r && scalar ? wk_reshape(r, NULL, 0) : r);
}

/* take: index_select of the flattened self at index (negative indices count from the end). */
static wk_status k_take(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  BEGIN_K;
  int64_t all = -1, n = wk_tensor_numel(T(0));
  wk_tensor *flat = wk_reshape(T(0), &all, 1), *i = wk_reshape(T(1), &all, 1);
  if (i) i = wk_where(wk_lt_scalar(i, 0), C1("add.Scalar", WK_VT(i), WK_VI(n)), i);
  wk_tensor *r = flat && i ? wk_index_select(flat, 0, i) : NULL;
  return FINISH1(r ? wk_reshape(r, c->meta[0].sizes, c->meta[0].ndim) : NULL);
}

/* take_along_dim: gather of self and indices expanded to their broadcast shape (but along dim). */
static wk_status k_take_along_dim(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  BEGIN_K;
  wk_tensor *x = T(0), *i = T(1);
  int64_t all = -1;
  if (args[2].tag == WK_V_NONE)
    return FINISH1(C1("gather", WK_VT(wk_reshape(x, &all, 1)), WK_VI(0), WK_VT(wk_reshape(i, &all, 1))));
  if (x->ndim == 0) return FINISH1(C1("gather", WK_VT(x), WK_VI(0), WK_VT(i)));
  int d = wrap(args[2].u.i, x->ndim);
  int64_t xs[WK_MAX_DIMS];
  memcpy(xs, c->meta[0].sizes, sizeof(int64_t) * (size_t)x->ndim);
  xs[d] = x->sizes[d];
  wk_tensor *xe = wk_expand(x, xs, x->ndim), *ie = wk_expand(i, c->meta[0].sizes, x->ndim);
  return FINISH1(xe && ie ? C1("gather", WK_VT(xe), WK_VI(d), WK_VT(ie)) : NULL);
}

/* argsort: sort's indices (sort is stable, so argsort.stable's flag changes nothing). */
static wk_status k_argsort(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  BEGIN_K;
  bool st = args[1].tag == WK_V_BOOL;
  wk_value o[WK_MAX_OUTS];
  wk_value a[3] = {WK_VT(T(0)), args[st ? 2 : 1], args[st ? 3 : 2]};
  return FINISH1(wk_call("sort", a, 3, o) == WK_OK ? o[1].u.t : NULL);
}

/* kthvalue/median: the stable sort along dim, then the value and index at one position per line: k - 1;
 * median's lower median (n - 1) / 2, or the first NaN of a line holding NaNs (NaN sorts last, in input
 * order), as PyTorch's median. A 0-d self works as a 1-element vector. */
static wk_status select_sorted(const wk_kernel_ctx *c, wk_tensor *x, int64_t dim, bool keep, int64_t k,
                               wk_value *outs, int depth) {
  int64_t one = 1;
  int nout = wk_op_num_outs(c->op) < 2 ? 1 : 2; /* median(): the value only */
  bool scalar = x->ndim == 0;
  if (scalar) x = wk_reshape(x, &one, 1);
  int d = scalar ? 0 : wrap(dim, x->ndim);
  wk_value o[WK_MAX_OUTS];
  wk_value a[3] = {WK_VT(x), WK_VI(d), WK_VB(false)};
  wk_tensor *r[2] = {NULL, NULL};
  if (x && wk_call("sort", a, 3, o) == WK_OK) {
    if (k > 0) {
      r[0] = wk_narrow(o[0].u.t, d, k - 1, 1), r[1] = wk_narrow(o[1].u.t, d, k - 1, 1);
    } else {
      int64_t n = x->sizes[d];
      wk_tensor *nans = C1("sum.dim_IntList", WK_VT(wk_isnan(x)), WK_VINTS(&(int64_t){d}, 1), WK_VB(true), WK_VNONE);
      wk_tensor *pos = nans ? wk_where(wk_gt_scalar(nans, 0), C1("add.Scalar", WK_VT(wk_neg(nans)), WK_VI(n)),
                            wk_full_like(nans, (double)((n - 1) / 2), (wk_options){0}))
                            : NULL;
      r[0] = pos ? C1("gather", o[0], WK_VI(d), WK_VT(pos)) : NULL;
      r[1] = pos ? C1("gather", o[1], WK_VI(d), WK_VT(pos)) : NULL;
    }
    for (int i = 0; i < nout; i++)
      if (r[i]) r[i] = wk_reshape(r[i], c->meta[i].sizes, c->meta[i].ndim);
  }
  return wk__composite_finish(outs, r, nout, depth);
}
static wk_status k_kthvalue(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  BEGIN_K;
  return select_sorted(c, T(0), args[2].u.i, args[3].u.b, args[1].u.i, outs, depth__);
}
static wk_status k_median(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  BEGIN_K;
  if (strcmp(wk_op_name(c->op), "median.dim") == 0)
    return select_sorted(c, T(0), args[1].u.i, args[2].u.b, 0, outs, depth__);
  wk_tensor *x = T(0);
  int64_t all = -1;
  if (wk_tensor_numel(x) == 0)
    return FINISH1(wk_full(NULL, 0, NAN, (wk_options){.dtype = x->dtype, .device = x->storage->device}));
  return select_sorted(c, wk_reshape(x, &all, 1), 0, false, 0, outs, depth__);
}

/* nonzero/argwhere: the flat positions of the nonzero elements (masked_select of a ramp; the count is
 * data), unravelled into one column per dim: (pos // stride) % size. */
static wk_status k_nonzero(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  BEGIN_K;
  wk_tensor *x = T(0);
  int nd = x->ndim;
  int64_t n = wk_tensor_numel(x), all = -1;
  wk_options o = {.dtype = WK_I64, .device = x->storage->device};
  if (n == 0) return FINISH1(wk_empty((const int64_t[]){0, nd}, 2, o));
  wk_tensor *mask = wk_ne_scalar(wk_reshape(x, &all, 1), 0);
  wk_tensor *pos = mask ? C1("masked_select", WK_VT(wk_arange_int(0, n, 1, o)), WK_VT(mask)) : NULL;
  if (!pos) return FINISH1(NULL);
  if (nd == 0) return FINISH1(wk_empty((const int64_t[]){wk_tensor_numel(pos), 0}, 2, o));
  wk_tensor *cols[WK_MAX_DIMS];
  int64_t stride = 1;
  for (int d = nd - 1; d >= 0; d--) {
    wk_tensor *q = stride == 1 ? pos : wk_div_mode(pos, wk_full_like(pos, (double)stride, (wk_options){0}), "floor");
    cols[d] = q ? C1("remainder.Scalar", WK_VT(q), WK_VI(x->sizes[d])) : NULL;
    if (!cols[d]) return FINISH1(NULL);
    stride *= x->sizes[d];
  }
  return FINISH1(C1("stack", WK_VTS(cols, nd), WK_VI(1)));
}

/* searchsorted/bucketize: per value, the number of boundaries b (of its row) with !(b >= v) (left) or
 * !(b > v) (right): what PyTorch's binary search returns for a sorted row, NaN values landing past the end.
 * One row (1-d boundaries): the values and boundaries merged by a stable sort, each value counting the
 * boundaries sorted before it. Row-wise boundaries: a [..., k, m] comparison summed over m (memory k * m
 * per row). */
static wk_status k_searchsorted(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  BEGIN_K;
  bool bucket = wk_op_name(c->op)[0] == 'b';
  wk_tensor *seq = T(bucket ? 1 : 0), *v = T(bucket ? 0 : 1);
  bool right = args[3].u.b || (!bucket && args[4].tag == WK_V_STR && !strcmp(args[4].u.s, "right"));
  if (!bucket && args[5].tag == WK_V_TENSOR) seq = C1("gather", WK_VT(seq), WK_VI(-1), WK_VT(T(5)));
  wk_dtype odt = args[2].u.b ? WK_I32 : WK_I64;
  if (v->storage->device.type == wk_device_type_find("meta")) /* no data: the meta's shape is the result */
    return FINISH1(wk_zeros(c->meta[0].sizes, c->meta[0].ndim, (wk_options){.dtype = odt, .device = v->storage->device}));
  if (seq && seq->ndim == 1) { /* one boundary row: a merge by stable sort, O((n + m) log(n + m)) */
    int64_t all = -1, m = seq->sizes[0], nv = wk_tensor_numel(v);
    wk_tensor *vf = wk_reshape(v, &all, 1);
    /* values first (left): a boundary equal to a value sorts after it; boundaries first (right): before */
    wk_tensor *parts[2] = {right ? seq : vf, right ? vf : seq};
    wk_tensor *cat = vf ? C1("cat", WK_VTS(parts, 2), WK_VI(0)) : NULL;
    wk_tensor *order = cat ? C1("argsort", WK_VT(cat), WK_VI(0), WK_VB(false)) : NULL;
    wk_tensor *is_b = order ? (right ? wk_lt_scalar(order, (double)m) : wk_ge_scalar(order, (double)nv)) : NULL;
    wk_tensor *before = is_b ? wk_cumsum(wk_to_dtype(is_b, WK_I64), 0) : NULL; /* boundaries up to each place */
    wk_tensor *is_v = is_b ? wk_logical_not(is_b) : NULL;
    wk_tensor *vpos = is_v ? C1("masked_select", WK_VT(order), WK_VT(is_v)) : NULL;
    wk_tensor *cnt = before && is_v ? C1("masked_select", WK_VT(before), WK_VT(is_v)) : NULL;
    if (vpos && right) vpos = C1("sub.Scalar", WK_VT(vpos), WK_VI(m));
    wk_tensor *r = vpos && cnt ? wk_zeros(&nv, 1, (wk_options){.dtype = WK_I64, .device = v->storage->device}) : NULL;
    r = r ? C1("scatter.src", WK_VT(r), WK_VI(0), WK_VT(vpos), WK_VT(cnt)) : NULL;
    r = r ? wk_reshape(r, c->meta[0].sizes, c->meta[0].ndim) : NULL;
    return FINISH1(r && odt != WK_I64 ? wk_to_dtype(r, odt) : r);
  }
  wk_tensor *vv = wk_unsqueeze(v, -1);
  if (seq && seq->ndim > 1) seq = wk_unsqueeze(seq, -2);
  wk_tensor *past = seq && vv ? wk_logical_not(right ? wk_gt(seq, vv) : wk_ge(seq, vv)) : NULL;
  return FINISH1(C1("sum.dim_IntList", WK_VT(past), WK_VINTS((const int64_t[]){-1}, 1), WK_VB(false),
                    WK_VDT(odt)));
}

/* bincount: zeros of length max(max(self) + 1, minlength), scatter_add of the weights (or ones) at self.
 * Reading the extrema syncs with the device (the length is data, as in PyTorch). */
static wk_status k_bincount(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  BEGIN_K;
  wk_tensor *x = T(0), *w = args[1].tag == WK_V_TENSOR ? T(1) : NULL;
  wk_dtype dt = w ? (wk_tensor_dtype(w) == WK_F32 ? WK_F32 : WK_F64) : WK_I64;
  wk_options o = {.dtype = dt, .device = x->storage->device};
  int64_t n = args[2].u.i, mn = 0, mx = -1;
  if (wk_tensor_numel(x) > 0) {
    if (wk_item_i64(wk_min(x), &mn) || wk_item_i64(wk_max(x), &mx)) return FINISH1(NULL);
    if (mn < 0) {
      wk_error(WK_ERR_INVALID_ARG, "bincount(): bincount only supports 1-d non-negative integral inputs (got %lld)",
               (long long)mn);
      return FINISH1(NULL);
    }
  }
  if (mx + 1 > n) n = mx + 1;
  wk_tensor *r = wk_zeros(&n, 1, o);
  if (wk_tensor_numel(x) == 0 || !r) return FINISH1(r);
  wk_tensor *i = x->dtype == WK_I64 ? x : wk_to_dtype(x, WK_I64);
  wk_tensor *src = w ? wk_to_dtype(w, dt) : wk_ones_like(i, (wk_options){0});
  return FINISH1(i && src ? C1("scatter_add", WK_VT(r), WK_VI(0), WK_VT(i), WK_VT(src)) : NULL);
}

/* histc: PyTorch's linear bins: elements outside [min, max] and NaN skipped (as PyTorch documents; its 1.13
 * cpu kernel counts a NaN into bin 0, through an undefined float-to-int cast), bin (x - min) * bins /
 * (max - min) truncated, max itself in the last bin; min == max takes the data's extrema (then +-1 if
 * still equal). Counted with scatter_add into [bins]. */
static double scalar_d(const wk_value *v) {
  return v->tag == WK_V_INT ? (double)v->u.i : v->tag == WK_V_BOOL ? v->u.b : v->u.f;
}
static wk_status k_histc(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  BEGIN_K;
  wk_tensor *x = T(0);
  int64_t bins = args[1].u.i, all = -1;
  double lo = scalar_d(&args[2]), hi = scalar_d(&args[3]);
  wk_options o = {.dtype = x->dtype, .device = x->storage->device};
  bool meta = x->storage->device.type == wk_device_type_find("meta"); /* no data: the shape is all there is */
  if (meta) return FINISH1(wk_zeros(&bins, 1, o));
  if (lo == hi && wk_tensor_numel(x) > 0) {
    if (wk_item(wk_min(x), &lo) || wk_item(wk_max(x), &hi)) return FINISH1(NULL);
  }
  if (lo == hi) lo -= 1, hi += 1;
  if (!isfinite(lo) || !isfinite(hi)) {
    wk_error(WK_ERR_INVALID_ARG, "torch.histc: range of [%g, %g] is not finite", lo, hi);
    return FINISH1(NULL);
  }
  wk_tensor *r = wk_zeros(&bins, 1, o);
  if (!r || wk_tensor_numel(x) == 0) return FINISH1(r);
  wk_tensor *f = wk_reshape(x, &all, 1);
  wk_tensor *in = f ? wk_logical_and(wk_ge_scalar(f, lo), wk_le_scalar(f, hi)) : NULL;
  wk_tensor *xs = in ? wk_where(in, f, wk_full_like(f, lo, (wk_options){0})) : NULL;
  wk_tensor *pos = xs ? wk_div_scalar(wk_mul_scalar(wk_sub_scalar(xs, lo), (double)bins), hi - lo) : NULL;
  pos = pos ? wk_clamp(wk_trunc(pos), 0, (double)(bins - 1)) : NULL;
  wk_tensor *idx = pos ? wk_to_dtype(pos, WK_I64) : NULL;
  wk_tensor *cnt = in ? wk_to_dtype(in, x->dtype) : NULL;
  return FINISH1(idx && cnt ? C1("scatter_add", WK_VT(r), WK_VI(0), WK_VT(idx), WK_VT(cnt)) : NULL);
}

void wk__composites_surface_register(void);
void wk__composites_surface_register(void) {
  static const struct {
    const char *op;
    wk_kernel_fn fn;
  } ks[] = {{"amax", k_amax_amin},
            {"amin", k_amax_amin},
            {"aminmax", k_aminmax},
            {"nansum", k_nansum},
            {"nanmean", k_nanmean},
            {"var_mean.correction", k_var_std_mean},
            {"std_mean.correction", k_var_std_mean},
            {"count_nonzero", k_count_nonzero},
            {"tril", k_tril_triu},
            {"triu", k_tril_triu},
            {"diag", k_diag},
            {"diagonal", k_diagonal},
            {"movedim", k_movedim},
            {"tile", k_tile},
            {"unflatten", k_unflatten},
            {"repeat_interleave.self_int", k_repeat_interleave},
            {"clamp_min", k_clamp_one},
            {"clamp_min_", k_clamp_one},
            {"clamp_max", k_clamp_one},
            {"clamp_max_", k_clamp_one},
            {"lerp.Scalar", k_lerp},
            {"lerp.Tensor", k_lerp},
            {"addcmul", k_addc},
            {"addcmul_", k_addc},
            {"addcdiv", k_addc},
            {"addcdiv_", k_addc},
            {"glu", k_glu},
            {"prelu", k_prelu},
            {"index_add", k_index_acf},
            {"index_copy", k_index_acf},
            {"index_fill.int_Scalar", k_index_acf},
            {"take", k_take},
            {"take_along_dim", k_take_along_dim},
            {"argsort", k_argsort},
            {"argsort.stable", k_argsort},
            {"kthvalue", k_kthvalue},
            {"median", k_median},
            {"median.dim", k_median},
            {"nonzero", k_nonzero},
            {"argwhere", k_nonzero},
            {"searchsorted.Tensor", k_searchsorted},
            {"bucketize.Tensor", k_searchsorted},
            {"bincount", k_bincount},
            {"histc", k_histc}};
  for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
    wk_kernel_desc d = {sizeof d, ks[i].op, WK_DEVICE_DEFAULT, WK_PRIORITY_FALLBACK, ks[i].fn, NULL, NULL,
                        "core.composite"};
    wk_kernel_register(&d);
  }
}
