/* Meta functions of the reductions (sum, mean, prod, max/min, argmax/argmin,
 * var/std, norm, logsumexp, all/any), cumsum, sort/topk and the matrix
 * products (mm, bmm, addmm, dot): dims wrapped and checked, result shapes and
 * dtypes decided once here, with the messages the cpu kernels gave. */
#include <math.h>
#include <stdio.h>
#include <wick/sdk/check.h>

#include "meta.h"


static double scalar_f64(const wk_value *v) {
  return v->tag == WK_V_INT ? (double)v->u.i : v->tag == WK_V_BOOL ? (double)v->u.b : v->u.f;
}

/* ---- reductions ------------------------------------------------------------------- */
/* o: t reduced over dims[0..n) (n == 0: every dim), keeping them as 1 when
 * keepdim; *count (may be NULL): the elements reduced into each result. */
static wk_status reduce_shape(const char *name, const wk_tensor *t, const int64_t *dims, int n, bool keepdim,
                              wk_dtype dt, wk_meta_out *o, int64_t *count) {
  int nd = t->ndim;
  bool red[WK_MAX_DIMS] = {false}, seen[WK_MAX_DIMS] = {false};
  for (int i = 0; i < n; i++) {
    int d;
    wk_status s = wk_check_dim(name, dims[i], nd, &d);
    if (s) return s;
    if (seen[d])
      return wk_error(WK_ERR_INVALID_ARG, "%s(): dim %d appears multiple times in the list of dims", name, d);
    seen[d] = true;
    if (nd > 0) red[d] = true;
  }
  int64_t c = 1;
  o->dtype = dt;
  o->ndim = 0;
  for (int d = 0; d < nd; d++) {
    if (n == 0 || red[d]) {
      c *= t->sizes[d];
      if (keepdim) o->sizes[o->ndim++] = 1;
    } else {
      o->sizes[o->ndim++] = t->sizes[d];
    }
  }
  if (count) *count = c;
  return WK_OK;
}

/* Optional int[] argument: None and [] both mean every dim. */
static const int64_t *opt_dims(const wk_value *v, int *n) {
  *n = v->tag == WK_V_INTS ? v->len : 0;
  return v->tag == WK_V_INTS ? v->u.ints : NULL;
}
static wk_dtype opt_dtype(const wk_value *v) { return v->tag == WK_V_DTYPE ? v->u.dtype : WK_DTYPE_DEFAULT; }

/* sum/prod: a given dtype converts the input first; integers and bools give int64. */
static wk_status sum_prod(wk_op *op, const wk_tensor *x, const int64_t *dims, int n, bool keepdim, wk_dtype dtype,
                          wk_meta_out *o) {
  char b[32];
  wk_dtype dt = dtype ? dtype : wk_dtype_is_floating(x->dtype) ? x->dtype : WK_I64;
  return reduce_shape(wk__meta_base_name(op, b, sizeof b), x, dims, n, keepdim, dt, o, NULL);
}
/* sum(self, *, dtype), prod(self, *, dtype) */
static wk_status meta_sum_all(wk_op *op, const wk_value *args, wk_meta_out *o) {
  return sum_prod(op, MT(0), NULL, 0, false, opt_dtype(&args[1]), o);
}
/* sum.dim_IntList(self, dim, keepdim, *, dtype) */
static wk_status meta_sum_dim(wk_op *op, const wk_value *args, wk_meta_out *o) {
  int n;
  const int64_t *dims = opt_dims(&args[1], &n);
  return sum_prod(op, MT(0), dims, n, args[2].u.b, opt_dtype(&args[3]), o);
}
/* prod.dim_int(self, dim, keepdim, *, dtype) */
static wk_status meta_prod_dim(wk_op *op, const wk_value *args, wk_meta_out *o) {
  return sum_prod(op, MT(0), &args[1].u.i, 1, args[2].u.b, opt_dtype(&args[3]), o);
}

static wk_status mean(const wk_tensor *x, const int64_t *dims, int n, bool keepdim, wk_dtype dtype, wk_meta_out *o) {
  if (dtype && !wk_dtype_is_floating(dtype))
    return wk_error(WK_ERR_DTYPE, "mean(): could not infer output dtype. Optional dtype must be either a floating "
                    "point or complex dtype. Got: %s", wk_dtype_torch_name(dtype));
  if (!dtype && !wk_dtype_is_floating(x->dtype))
    return wk_error(WK_ERR_DTYPE, "mean(): could not infer output dtype. Input dtype must be either a floating "
                    "point or complex dtype. Got: %s", wk_dtype_torch_name(x->dtype));
  return reduce_shape("mean", x, dims, n, keepdim, dtype ? dtype : x->dtype, o, NULL);
}
static wk_status meta_mean(wk_op *op, const wk_value *args, wk_meta_out *o) {
  return mean(MT(0), NULL, 0, false, opt_dtype(&args[1]), o);
}
static wk_status meta_mean_dim(wk_op *op, const wk_value *args, wk_meta_out *o) {
  int n;
  const int64_t *dims = opt_dims(&args[1], &n);
  return mean(MT(0), dims, n, args[2].u.b, opt_dtype(&args[3]), o);
}

/* max/min (values), max.dim/min.dim (values, indices), argmax/argmin (indices). */
static wk_status extreme(const char *name, bool values, bool indices, const wk_tensor *x, bool has_dim, int64_t dim,
                         bool keepdim, wk_meta_out *o) {
  int nd = x->ndim, d = 0;
  if (!values && x->dtype == WK_BOOL)
    return wk_error(WK_ERR_DTYPE, "%s(): \"%s_cpu\" not implemented for 'Bool'", name, name);
  if (has_dim) {
    wk_status s = wk_check_dim(name, dim, nd, &d);
    if (s) return s;
    if (nd > 0 && x->sizes[d] == 0)
      return wk_error(WK_ERR_INDEX, "%s(): Expected reduction dim %d to have non-zero size.", name, d);
  } else if (wk_tensor_numel(x) == 0) {
    if (!values)
      return wk_error(WK_ERR_INDEX, "%s(): Expected reduction dim to be specified for input.numel() == 0.", name);
    return wk_error(WK_ERR_INVALID_ARG, "%s(): Expected reduction dim to be specified for input.numel() == 0. "
                    "Specify the reduction dim with the 'dim' argument.", name);
  }
  int64_t dd = d;
  wk_status s = reduce_shape(name, x, has_dim ? &dd : NULL, has_dim ? 1 : 0, keepdim, values ? x->dtype : WK_I64,
                             &o[0], NULL);
  if (!s && values && indices) {
    o[1] = o[0];
    o[1].dtype = WK_I64;
  }
  return s;
}
static wk_status meta_max_min(wk_op *op, const wk_value *args, wk_meta_out *o) {
  char b[32];
  return extreme(wk__meta_base_name(op, b, sizeof b), true, false, MT(0), false, 0, false, o);
}
static wk_status meta_max_min_dim(wk_op *op, const wk_value *args, wk_meta_out *o) {
  char b[32];
  return extreme(wk__meta_base_name(op, b, sizeof b), true, true, MT(0), true, args[1].u.i, args[2].u.b, o);
}
/* argmax with dim None reduces the flattened input (keepdim keeps every dim as 1). */
static wk_status meta_argmax_min(wk_op *op, const wk_value *args, wk_meta_out *o) {
  return extreme(MNAME, false, true, MT(0), !MNONE(1), MNONE(1) ? 0 : args[1].u.i, args[2].u.b, o);
}

/* var.correction / std.correction(self, dim, *, correction, keepdim) */
static wk_status meta_var_std(wk_op *op, const wk_value *args, wk_meta_out *o) {
  char b[32];
  const char *name = wk__meta_base_name(op, b, sizeof b);
  const wk_tensor *x = MT(0);
  if (!wk_dtype_is_floating(x->dtype))
    return wk_error(WK_ERR_DTYPE, "%s(): std and var only support floating point and complex dtypes, got %s", name,
                    wk_dtype_torch_name(x->dtype));
  int n;
  const int64_t *dims = opt_dims(&args[1], &n);
  return reduce_shape(name, x, dims, n, args[3].u.b, x->dtype, o, NULL);
}

/* norm(self, p, dim, keepdim) */
static wk_status meta_norm(wk_op *op, const wk_value *args, wk_meta_out *o) {
  const wk_tensor *x = MT(0);
  double pw = scalar_f64(&args[1]);
  if (!wk_dtype_is_floating(x->dtype))
    return wk_error(WK_ERR_DTYPE, "norm(): Expected a floating point or complex tensor as input. Got %s",
                    wk_dtype_torch_name(x->dtype));
  if (pw != pw) return wk_error(WK_ERR_INVALID_ARG, "norm(): the order p must not be NaN");
  int n;
  int64_t count;
  const int64_t *dims = opt_dims(&args[2], &n);
  wk_status s = reduce_shape("norm", x, dims, n, args[3].u.b, x->dtype, o, &count);
  if (!s && count == 0 && (pw < 0 || isinf(pw)))
    return wk_error(WK_ERR_INVALID_ARG, "norm(): cannot compute the %g norm on an empty tensor because the "
                    "operation does not have an identity", pw);
  return s;
}

/* logsumexp(self, dim, keepdim): integer inputs give the default floating dtype, as in PyTorch 2. */
static wk_status meta_logsumexp(wk_op *op, const wk_value *args, wk_meta_out *o) {
  const wk_tensor *x = MT(0);
  return reduce_shape("logsumexp", x, args[1].u.ints, args[1].len, args[2].u.b,
                      wk_dtype_is_floating(x->dtype) ? x->dtype : WK_F32, o, NULL);
}

/* all/any: bool results; uint8 inputs keep uint8, as in PyTorch. */
static wk_status meta_all_any(wk_op *op, const wk_value *args, wk_meta_out *o) {
  char b[32];
  const wk_tensor *x = MT(0);
  bool has_dim = wk_op_num_args(op) > 1;
  int64_t dim = has_dim ? args[1].u.i : 0;
  return reduce_shape(wk__meta_base_name(op, b, sizeof b), x, has_dim ? &dim : NULL, has_dim ? 1 : 0,
                      has_dim ? args[2].u.b : false, x->dtype == WK_U8 ? WK_U8 : WK_BOOL, o, NULL);
}

/* ---- cumsum, sort, topk ------------------------------------------------------------- */
/* cumsum(self, dim, *, dtype): a given dtype converts the input first; integers and bools give int64. */
static wk_status meta_cumsum(wk_op *op, const wk_value *args, wk_meta_out *o) {
  const wk_tensor *x = MT(0);
  int d;
  wk_status s = wk_check_dim("cumsum", args[1].u.i, x->ndim, &d);
  if (s) return s;
  wk_dtype dtype = opt_dtype(&args[2]);
  wk__meta_like(o, x, dtype ? dtype : wk_dtype_is_floating(x->dtype) ? x->dtype : WK_I64);
  return WK_OK;
}

/* values (self's dtype) and int64 indices: self's shape with k along dim. */
static void sorted(const wk_tensor *x, int d, int64_t k, wk_meta_out *o) {
  wk__meta_like(&o[0], x, x->dtype);
  if (x->ndim > 0) o[0].sizes[d] = k;
  o[1] = o[0];
  o[1].dtype = WK_I64;
}

/* sort(self, dim, descending) */
static wk_status meta_sort(wk_op *op, const wk_value *args, wk_meta_out *o) {
  const wk_tensor *x = MT(0);
  int d;
  wk_status s = wk_check_dim("sort", args[1].u.i, x->ndim, &d);
  if (s) return s;
  sorted(x, d, x->ndim > 0 ? x->sizes[d] : 1, o);
  return WK_OK;
}

/* kthvalue(self, k, dim, keepdim), median.dim(self, dim, keepdim), median(self): one value and its index per
 * reduced line (issue 21; kernels: core/composite_surface.c). */
static void selected(const wk_tensor *x, int d, bool keep, wk_meta_out *o) {
  wk__meta_like(&o[0], x, x->dtype);
  if (x->ndim > 0 && keep) o[0].sizes[d] = 1;
  if (x->ndim > 0 && !keep) {
    for (int i = d; i + 1 < x->ndim; i++) o[0].sizes[i] = o[0].sizes[i + 1];
    o[0].ndim--;
  }
  o[1] = o[0];
  o[1].dtype = WK_I64;
}
static wk_status meta_kthvalue(wk_op *op, const wk_value *args, wk_meta_out *o) {
  const wk_tensor *x = MT(0);
  int64_t k = args[1].u.i;
  int d;
  wk_status s = wk_check_dim("kthvalue", args[2].u.i, x->ndim, &d);
  if (s) return s;
  if (x->dtype == WK_BOOL) return wk_error(WK_ERR_DTYPE, "kthvalue(): \"kthvalue_cpu\" not implemented for 'Bool'");
  int64_t n = x->ndim > 0 ? x->sizes[d] : 1;
  if (k < 1 || k > n)
    return wk_error(WK_ERR_INDEX, "kthvalue(): selected number k out of range for dimension %d (k = %lld, size %lld)",
                    d, (long long)k, (long long)n);
  (void)op;
  selected(x, d, args[3].u.b, o);
  return WK_OK;
}
static wk_status meta_median(wk_op *op, const wk_value *args, wk_meta_out *o) {
  const wk_tensor *x = MT(0);
  bool all = strcmp(wk_op_name(op), "median") == 0; /* median(self) has one argument */
  if (x->dtype == WK_BOOL) return wk_error(WK_ERR_DTYPE, "median(): \"median_out\" not implemented for 'Bool'");
  if (all) {
    int64_t n = 1;
    for (int i = 0; i < x->ndim; i++) n *= x->sizes[i];
    if (n == 0 && !wk_dtype_is_floating(x->dtype))
      return wk_error(WK_ERR_SHAPE, "median(): an empty %s tensor has no median (NaN needs a floating dtype)",
                      wk_dtype_name(x->dtype));
    wk__meta_shape(o, NULL, 0, x->dtype);
    return WK_OK;
  }
  int d;
  wk_status s = wk_check_dim("median", args[1].u.i, x->ndim, &d);
  if (s) return s;
  if (x->ndim > 0 && x->sizes[d] == 0)
    return wk_error(WK_ERR_SHAPE, "median(): Expected reduction dim %d to have non-zero size.", d);
  (void)op;
  selected(x, d, args[2].u.b, o);
  return WK_OK;
}

/* topk(self, k, dim, largest, sorted) */
static wk_status meta_topk(wk_op *op, const wk_value *args, wk_meta_out *o) {
  const wk_tensor *x = MT(0);
  int64_t k = args[1].u.i;
  int d;
  wk_status s = wk_check_dim("topk", args[2].u.i, x->ndim, &d);
  if (s) return s;
  if (x->dtype == WK_BOOL) return wk_error(WK_ERR_DTYPE, "topk(): \"topk_cpu\" not implemented for 'Bool'");
  int64_t n = x->ndim > 0 ? x->sizes[d] : 1;
  if (k < 0 || k > n)
    return wk_error(WK_ERR_INDEX, "topk(): selected index k out of range (k = %lld, dimension %d has size %lld)",
                    (long long)k, d, (long long)n);
  sorted(x, d, k, o);
  return WK_OK;
}

/* ---- matrix products ---------------------------------------------------------------- */
/* Bool products are refused as PyTorch's cpu GEMM does. */
static wk_status gemm_dtype(const char *name, wk_dtype dt) {
  if (dt == WK_BOOL)
    return wk_error(WK_ERR_UNSUPPORTED, "%s(): \"addmm_impl_cpu_\" not implemented for '%s'", name,
                    wk_dtype_torch_name(dt));
  return WK_OK;
}

/* a [n, k] @ b [k, m] -> o [n, m] of a's dtype. */
static wk_status check_mm(const char *name, const wk_tensor *a, const wk_tensor *b, const char *na, const char *nb,
                          wk_meta_out *o) {
  if (a->ndim != 2) return wk_error(WK_ERR_SHAPE, "%s(): %s must be a matrix, got %dD", name, na, a->ndim);
  if (b->ndim != 2) return wk_error(WK_ERR_SHAPE, "%s(): %s must be a matrix, got %dD", name, nb, b->ndim);
  const int64_t *x = a->sizes, *y = b->sizes;
  if (x[1] != y[0])
    return wk_error(WK_ERR_SHAPE, "%s(): mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld)", name,
                    (long long)x[0], (long long)x[1], (long long)y[0], (long long)y[1]);
  if (a->dtype != b->dtype)
    return wk_error(WK_ERR_DTYPE, "%s(): expected m1 and m2 to have the same dtype, but got: %s != %s", name,
                    wk_dtype_cpp_name(a->dtype), wk_dtype_cpp_name(b->dtype));
  int64_t sz[2] = {x[0], y[1]};
  wk__meta_shape(o, sz, 2, a->dtype);
  return WK_OK;
}

static wk_status meta_mm(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_status s = check_mm("mm", MT(0), MT(1), "self", "mat2", o);
  return s ? s : gemm_dtype("mm", o->dtype);
}

/* addmm(self, mat1, mat2, *, beta, alpha): self broadcasts to the product's shape. */
static wk_status meta_addmm(wk_op *op, const wk_value *args, wk_meta_out *o) {
  const wk_tensor *self = MT(0);
  wk_status s = check_mm("addmm", MT(1), MT(2), "mat1", "mat2", o);
  if (s) return s;
  if (self->dtype != MT(2)->dtype)
    return wk_error(WK_ERR_DTYPE, "addmm(): self and mat2 must have the same dtype, but got %s and %s",
                    wk_dtype_torch_name(self->dtype), wk_dtype_torch_name(MT(2)->dtype));
  int snd = self->ndim;
  bool ok = snd <= 2;
  for (int d = 0; ok && d < snd; d++) ok = self->sizes[d] == 1 || self->sizes[d] == o->sizes[2 - snd + d];
  if (!ok) {
    char buf[WK_SHAPE_STR_MAX];
    return wk_error(WK_ERR_SHAPE, "addmm(): self of shape %s cannot be broadcast to the result shape [%lld, %lld]",
                    wk__shape_str(self->sizes, snd, buf, sizeof buf), (long long)o->sizes[0], (long long)o->sizes[1]);
  }
  return gemm_dtype("addmm", o->dtype);
}

static wk_status meta_bmm(wk_op *op, const wk_value *args, wk_meta_out *o) {
  const wk_tensor *a = MT(0), *b = MT(1);
  if (a->ndim != 3) return wk_error(WK_ERR_SHAPE, "bmm(): batch1 must be a 3D tensor, got %dD", a->ndim);
  if (b->ndim != 3) return wk_error(WK_ERR_SHAPE, "bmm(): batch2 must be a 3D tensor, got %dD", b->ndim);
  const int64_t *x = a->sizes, *y = b->sizes;
  if (y[0] != x[0] || y[1] != x[2])
    return wk_error(WK_ERR_SHAPE,
                    "bmm(): Expected size for first two dimensions of batch2 tensor to be: [%lld, %lld] but got: "
                    "[%lld, %lld].",
                    (long long)x[0], (long long)x[2], (long long)y[0], (long long)y[1]);
  if (a->dtype != b->dtype)
    return wk_error(WK_ERR_DTYPE, "bmm(): expected batch1 and batch2 to have the same dtype, but got: %s != %s",
                    wk_dtype_cpp_name(a->dtype), wk_dtype_cpp_name(b->dtype));
  int64_t sz[3] = {x[0], x[1], y[2]};
  wk__meta_shape(o, sz, 3, a->dtype);
  return gemm_dtype("bmm", a->dtype);
}

static wk_status meta_dot(wk_op *op, const wk_value *args, wk_meta_out *o) {
  const wk_tensor *a = MT(0), *b = MT(1);
  if (a->ndim != 1 || b->ndim != 1)
    return wk_error(WK_ERR_SHAPE, "dot(): 1D tensors expected, but got %dD and %dD tensors", a->ndim, b->ndim);
  if (a->sizes[0] != b->sizes[0]) {
    char sa[WK_SHAPE_STR_MAX], sb[WK_SHAPE_STR_MAX];
    return wk_error(WK_ERR_SHAPE,
                    "dot(): inconsistent tensor size, expected tensor %s and src %s to have the same number of "
                    "elements, but got %lld and %lld elements respectively",
                    wk__shape_str(a->sizes, 1, sa, sizeof sa), wk__shape_str(b->sizes, 1, sb, sizeof sb),
                    (long long)a->sizes[0], (long long)b->sizes[0]);
  }
  if (a->dtype != b->dtype)
    return wk_error(WK_ERR_DTYPE, "dot(): expected both vectors to have same dtype, but found %s and %s",
                    wk_dtype_torch_name(a->dtype), wk_dtype_torch_name(b->dtype));
  if (a->dtype == WK_BOOL)
    return wk_error(WK_ERR_UNSUPPORTED, "dot(): \"dot\" not implemented for '%s'", wk_dtype_torch_name(a->dtype));
  wk__meta_shape(o, NULL, 0, a->dtype);
  return WK_OK;
}

/* ---- issue 21's reductions (composites in core/composite_surface.c) ---------------- */
/* amax/amin(self, dim=[], keepdim): [] reduces every dim; a reduced dim must not be empty. */
static wk_status meta_amax_amin(wk_op *op, const wk_value *args, wk_meta_out *o) {
  const wk_tensor *x = MT(0);
  const char *name = MNAME;
  wk_status s = reduce_shape(name, x, args[1].u.ints, args[1].len, args[2].u.b, x->dtype, o, NULL);
  if (s) return s;
  for (int d = 0; d < x->ndim; d++) {
    bool red = args[1].len == 0;
    for (int i = 0; i < args[1].len && !red; i++) red = (args[1].u.ints[i] + (args[1].u.ints[i] < 0 ? x->ndim : 0)) == d;
    if (red && x->sizes[d] == 0)
      return wk_error(WK_ERR_INDEX, "%s(): Expected reduction dim %d to have non-zero size.", name, d);
  }
  return WK_OK;
}
/* aminmax(self, *, dim=None, keepdim) -> (min, max) */
static wk_status meta_aminmax(wk_op *op, const wk_value *args, wk_meta_out *o) {
  const wk_tensor *x = MT(0);
  int64_t dim = MNONE(1) ? 0 : args[1].u.i;
  wk_status s;
  if (MNONE(1)) {
    if (wk_tensor_numel(x) == 0)
      return wk_error(WK_ERR_INDEX, "aminmax(): cannot compute aminmax over an empty dimension as the operation has "
                      "no identity.");
    s = reduce_shape("aminmax", x, NULL, 0, args[2].u.b, x->dtype, o, NULL);
  } else {
    int d;
    if ((s = wk_check_dim("aminmax", dim, x->ndim, &d))) return s;
    if (x->ndim > 0 && x->sizes[d] == 0)
      return wk_error(WK_ERR_INDEX, "aminmax(): Expected reduction dim %d to have non-zero size.", d);
    s = reduce_shape("aminmax", x, &dim, 1, args[2].u.b, x->dtype, o, NULL);
  }
  o[1] = o[0];
  return s;
}
/* nansum(self, dim, keepdim, *, dtype): sum's dtypes; nanmean: floating only. */
static wk_status meta_nansum(wk_op *op, const wk_value *args, wk_meta_out *o) {
  int n;
  const int64_t *dims = opt_dims(&args[1], &n);
  return sum_prod(op, MT(0), dims, n, args[2].u.b, opt_dtype(&args[3]), o);
}
static wk_status meta_nanmean(wk_op *op, const wk_value *args, wk_meta_out *o) {
  const wk_tensor *x = MT(0);
  if (!wk_dtype_is_floating(x->dtype))
    return wk_error(WK_ERR_DTYPE, "nanmean(): expected input to have floating point dtype but got %s",
                    wk__dtype_word(x->dtype));
  int n;
  const int64_t *dims = opt_dims(&args[1], &n);
  wk_dtype dt = opt_dtype(&args[3]);
  if (dt && !wk_dtype_is_floating(dt))
    return wk_error(WK_ERR_DTYPE, "nanmean(): expected the dtype to be floating point, got %s", wk_dtype_name(dt));
  return reduce_shape("nanmean", x, dims, n, args[2].u.b, dt ? dt : x->dtype, o, NULL);
}
/* var_mean/std_mean.correction(self, dim, *, correction, keepdim) -> (var or std, mean) */
static wk_status meta_var_std_mean(wk_op *op, const wk_value *args, wk_meta_out *o) {
  char b[32];
  const char *name = wk__meta_base_name(op, b, sizeof b);
  const wk_tensor *x = MT(0);
  if (!wk_dtype_is_floating(x->dtype))
    return wk_error(WK_ERR_DTYPE, "%s(): %s only support floating point and complex dtypes, got %s", name, name,
                    wk_dtype_torch_name(x->dtype));
  int n;
  const int64_t *dims = opt_dims(&args[1], &n);
  wk_status s = reduce_shape(name, x, dims, n, args[3].u.b, x->dtype, o, NULL);
  o[1] = o[0];
  return s;
}
/* cumprod(self, dim, *, dtype) as cumsum; logcumsumexp: floating only; cummax/cummin: values and int64 indices. */
static wk_status meta_scan(wk_op *op, const wk_value *args, wk_meta_out *o) {
  const wk_tensor *x = MT(0);
  const char *name = MNAME;
  int d;
  wk_status s = wk_check_dim(name, args[1].u.i, x->ndim, &d);
  if (s) return s;
  if (!strcmp(name, "cumprod")) {
    wk_dtype dtype = opt_dtype(&args[2]);
    wk__meta_like(o, x, dtype ? dtype : wk_dtype_is_floating(x->dtype) ? x->dtype : WK_I64);
  } else if (!strcmp(name, "logcumsumexp")) {
    if (!wk_dtype_is_floating(x->dtype))
      return wk_error(WK_ERR_DTYPE, "logcumsumexp: \"logcumsumexp_out_cpu\" not implemented for '%s'",
                      wk__dtype_word(x->dtype));
    wk__meta_like(o, x, x->dtype);
  } else {
    wk__meta_like(&o[0], x, x->dtype);
    wk__meta_like(&o[1], x, WK_I64);
  }
  return WK_OK;
}
/* count_nonzero(self, dim=None) -> int64 */
static wk_status meta_count_nonzero(wk_op *op, const wk_value *args, wk_meta_out *o) {
  int n;
  const int64_t *dims = opt_dims(&args[1], &n);
  return reduce_shape("count_nonzero", MT(0), dims, n, false, WK_I64, o, NULL);
}

/* ---- the table ------------------------------------------------------------------- */
/* matmul(self, other): PyTorch's cases (dot, mv, mm, batched with broadcast
 * batch dimensions), decided here so errors name matmul on every device; the
 * composite in core/composite.c computes it with dot/mm/bmm. */
static wk_status matmul_shape(const char *name, const wk_tensor *a, const wk_tensor *b, wk_meta_out *o) {
  int da = a->ndim, db = b->ndim;
  char s1[WK_SHAPE_STR_MAX], s2[WK_SHAPE_STR_MAX];
  if (da == 0 || db == 0)
    return wk_error(WK_ERR_SHAPE, "%s(): both arguments need at least 1 dimension, got %dD and %dD", name, da, db);
  int64_t ka = a->sizes[da - 1], kb = b->sizes[db == 1 ? 0 : db - 2];
  if (ka != kb) {
    if (da == 2 && db == 2)
      return wk_error(WK_ERR_SHAPE, "%s(): mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld)", name,
                      (long long)a->sizes[0], (long long)ka, (long long)kb, (long long)b->sizes[1]);
    return wk_error(WK_ERR_SHAPE, "%s(): shapes %s and %s cannot be multiplied (%lld != %lld)", name,
                    wk__shape_str(a->sizes, da, s1, sizeof s1), wk__shape_str(b->sizes, db, s2, sizeof s2),
                    (long long)ka, (long long)kb);
  }
  int na = da > 2 ? da - 2 : 0, nb = db > 2 ? db - 2 : 0, nbat = na > nb ? na : nb, on = 0;
  for (int i = 0; i < nbat; i++) {
    int ia = i - (nbat - na), ib = i - (nbat - nb);
    int64_t x = ia >= 0 ? a->sizes[ia] : 1, y = ib >= 0 ? b->sizes[ib] : 1;
    if (x != y && x != 1 && y != 1)
      return wk_error(WK_ERR_SHAPE, "%s(): batch dimensions of %s and %s are not broadcastable", name,
                      wk__shape_str(a->sizes, da, s1, sizeof s1), wk__shape_str(b->sizes, db, s2, sizeof s2));
    o->sizes[on++] = x == 1 ? y : x;
  }
  if (da > 1) o->sizes[on++] = a->sizes[da - 2];
  if (db > 1) o->sizes[on++] = b->sizes[db - 1];
  o->ndim = on;
  o->dtype = wk_promote_types(a->dtype, b->dtype);
  return WK_OK;
}

static wk_status meta_matmul(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  return matmul_shape("matmul", MT(0), MT(1), o);
}

/* linear(input, weight, bias): input @ weight.T (+ bias), PyTorch's message
 * naming the flattened operands ("(2x3 and 4x5)"). */
static wk_status meta_linear(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  const wk_tensor *x = MT(0), *w = MT(1);
  if (w->ndim != 2 && w->ndim != 1)
    return wk_error(WK_ERR_SHAPE, "linear(): weight must be 1D or 2D, got %dD", w->ndim);
  if (x->ndim == 0)
    return wk_error(WK_ERR_SHAPE, "linear(): both arguments need at least 1 dimension, got 0D and %dD", w->ndim);
  int64_t in = x->sizes[x->ndim - 1], win = w->sizes[w->ndim - 1];
  if (in != win) {
    int64_t rows = 1;
    for (int i = 0; i < x->ndim - 1; i++) rows *= x->sizes[i];
    return wk_error(WK_ERR_SHAPE, "linear(): mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld)",
                    (long long)rows, (long long)in, (long long)win, (long long)(w->ndim == 2 ? w->sizes[0] : 1));
  }
  o->ndim = x->ndim - 1;
  memcpy(o->sizes, x->sizes, sizeof(int64_t) * (size_t)o->ndim);
  if (w->ndim == 2) o->sizes[o->ndim++] = w->sizes[0];
  o->dtype = wk_promote_types(x->dtype, w->dtype);
  return WK_OK;
}

static const wk__meta_row g_rows[] = {
    {"sum", meta_sum_all},
    {"sum.dim_IntList", meta_sum_dim},
    {"prod", meta_sum_all},
    {"prod.dim_int", meta_prod_dim},
    {"mean", meta_mean},
    {"mean.dim", meta_mean_dim},
    {"max", meta_max_min},
    {"min", meta_max_min},
    {"max.dim", meta_max_min_dim},
    {"min.dim", meta_max_min_dim},
    {"argmax", meta_argmax_min},
    {"argmin", meta_argmax_min},
    {"var.correction", meta_var_std},
    {"std.correction", meta_var_std},
    {"norm", meta_norm},
    {"logsumexp", meta_logsumexp},
    {"all", meta_all_any},
    {"all.dim", meta_all_any},
    {"any", meta_all_any},
    {"any.dim", meta_all_any},
    {"cumsum", meta_cumsum},
    {"amax", meta_amax_amin},
    {"amin", meta_amax_amin},
    {"aminmax", meta_aminmax},
    {"nansum", meta_nansum},
    {"nanmean", meta_nanmean},
    {"var_mean.correction", meta_var_std_mean},
    {"std_mean.correction", meta_var_std_mean},
    {"count_nonzero", meta_count_nonzero},
    {"cumprod", meta_scan},
    {"logcumsumexp", meta_scan},
    {"cummax", meta_scan},
    {"cummin", meta_scan},
    {"sort", meta_sort},
    {"kthvalue", meta_kthvalue},
    {"median", meta_median},
    {"median.dim", meta_median},
    {"topk", meta_topk},
    {"mm", meta_mm},
    {"bmm", meta_bmm},
    {"addmm", meta_addmm},
    {"dot", meta_dot},
    {"matmul", meta_matmul},
    {"linear", meta_linear},
};

const wk__meta_family wk__metas_reduce = {g_rows, sizeof g_rows / sizeof g_rows[0]};
