/* Wick ABI: the typed C front end of the standard op set. Every function here
 * is a thin inline wrapper that boxes its arguments and calls the dispatcher
 * (the op handle is looked up once per translation unit). Ownership: every
 * wk_tensor * returned is a new reference (owned by the open scope, if any);
 * arguments are borrowed. A NULL argument gives NULL and keeps the first
 * error, so calls nest: wk_relu(wk_add(a, b)).
 * The wrappers below are the short forms; <wick/ops_gen.h> (included at the end)
 * has one wrapper per op and overload with every argument, wkx_<name>[__<overload>]. */
#ifndef WICK_OPS_H
#define WICK_OPS_H

#include <wick/dispatch.h>
#include <wick/op_list.h>
#include <wick/tensor.h>

/* ---- Calling helpers shared by the wrappers -------------------------------------- */
/* The cache is filled on first use, possibly by several threads at once:
 * atomic (acquire/release) loads and stores, plain moves on x86. */
static inline wk_op *wk__op_cached(wk_op **cache, const char *name) {
  wk_op *op = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
  if (!op) __atomic_store_n(cache, op = wk_op_find(name), __ATOMIC_RELEASE);
  return op;
}
/* Calls and returns the first result (a new reference) or NULL. */
static inline wk_tensor *wk__call_t(wk_op **cache, const char *name, const wk_value *a, int n) {
  wk_op *op = wk__op_cached(cache, name);
  wk_value out[WK_MAX_OUTS];
  if (!op || wk_op_call(op, a, n, out) != WK_OK) return NULL;
  return out[0].u.t;
}
/* Calls an op with two results: returns the first, stores the second in *second
 * (or releases it when second is NULL). */
static inline wk_tensor *wk__call_t2(wk_op **cache, const char *name, const wk_value *a, int n,
                                     wk_tensor **second) {
  wk_op *op = wk__op_cached(cache, name);
  wk_value out[WK_MAX_OUTS];
  if (second) *second = NULL;
  if (!op || wk_op_call(op, a, n, out) != WK_OK) return NULL;
  if (second)
    *second = out[1].u.t;
  else
    wk_release(out[1].u.t);
  for (int i = 2; i < wk_op_num_outs(op); i++) wk_release(out[i].u.t);
  return out[0].u.t;
}
/* Calls an op returning Tensor[]: stores up to cap results in out[] and returns
 * their count, or -1 on error (results beyond cap are released). */
static inline int wk__call_list(wk_op **cache, const char *name, const wk_value *a, int n,
                                wk_tensor **outv, int cap) {
  wk_op *op = wk__op_cached(cache, name);
  wk_value out[WK_MAX_OUTS];
  if (!op || wk_op_call(op, a, n, out) != WK_OK) return -1;
  int cnt = out[0].len;
  for (int i = 0; i < cnt; i++) {
    if (i < cap)
      outv[i] = out[0].u.tensors[i];
    else
      wk_release(out[0].u.tensors[i]);
  }
  wk_free((void *)out[0].u.tensors);
  return cnt;
}

#define WK__NARGS(...) ((int)(sizeof((const wk_value[]){__VA_ARGS__}) / sizeof(wk_value)))
/* A wrapper returning one tensor. */
#define WK__FN(cname, opname, params, ...)                               \
  static inline wk_tensor *cname params {                               \
    static wk_op *op_;                                                  \
    const wk_value a_[] = {__VA_ARGS__};                                \
    return wk__call_t(&op_, opname, a_, WK__NARGS(__VA_ARGS__));        \
  }
/* A wrapper for a two-result op: the last parameter is wk_tensor **second. */
#define WK__FN2(cname, opname, params, ...)                              \
  static inline wk_tensor *cname params {                               \
    static wk_op *op_;                                                  \
    const wk_value a_[] = {__VA_ARGS__};                                \
    return wk__call_t2(&op_, opname, a_, WK__NARGS(__VA_ARGS__), second); \
  }
/* A wrapper for a Tensor[] op: the last parameters are (wk_tensor **out, int cap). */
#define WK__FNL(cname, opname, params, ...)                              \
  static inline int cname params {                                      \
    static wk_op *op_;                                                  \
    const wk_value a_[] = {__VA_ARGS__};                                \
    return wk__call_list(&op_, opname, a_, WK__NARGS(__VA_ARGS__), out, cap); \
  }

/* A factory wrapper: the last parameter is `wk_options o`; o.requires_grad
 * marks the result as a leaf that requires grad. */
static inline wk_tensor *wk__factory_done(wk_tensor *t, bool requires_grad) {
  if (t && requires_grad && wk_tensor_set_requires_grad(t, true) != WK_OK) {
    wk_release(t);
    return (wk_tensor *)0;
  }
  return t;
}
#define WK__FNF(cname, opname, params, ...)                                                    \
  static inline wk_tensor *cname params {                                                     \
    static wk_op *op_;                                                                        \
    const wk_value a_[] = {__VA_ARGS__};                                                      \
    return wk__factory_done(wk__call_t(&op_, opname, a_, WK__NARGS(__VA_ARGS__)), o.requires_grad); \
  }

/* ---- Families (generated from op_list.h) ------------------------------------------- */
/* wk_exp(x), wk_exp_(x) (in place; returns x, borrowed), wk_exp_out(x, out) (returns out, borrowed) */
#define WK__UNARY_FN(name, tags, rule)                                                 \
  WK__FN(wk_##name, #name, (wk_tensor * self), WK_VT(self))                         \
  WK__FN(wk_##name##_, #name "_", (wk_tensor * self), WK_VT(self))                  \
  WK__FN(wk_##name##_out, #name ".out", (wk_tensor * self, wk_tensor * out), WK_VT(self), WK_VT(out))
WK_UNARY_OPS(WK__UNARY_FN)

/* wk_mul(a, b), wk_mul_(a, b), wk_mul_out(a, b, out), wk_mul_scalar(a, 2.0), wk_mul_scalar_(a, 2.0) */
#define WK__BINARY_FN(name, tags)                                                          \
  WK__FN(wk_##name, #name, (wk_tensor * self, wk_tensor * other), WK_VT(self), WK_VT(other)) \
  WK__FN(wk_##name##_, #name "_", (wk_tensor * self, wk_tensor * other), WK_VT(self), WK_VT(other)) \
  WK__FN(wk_##name##_out, #name ".out", (wk_tensor * self, wk_tensor * other, wk_tensor * out), \
         WK_VT(self), WK_VT(other), WK_VT(out))                                             \
  WK__FN(wk_##name##_scalar, #name ".Scalar", (wk_tensor * self, double other), WK_VT(self), WK_VF(other)) \
  WK__FN(wk_##name##_scalar_, #name "_.Scalar", (wk_tensor * self, double other), WK_VT(self), WK_VF(other))
WK_BINARY_OPS(WK__BINARY_FN)

/* wk_lt(a, b), wk_lt_scalar(a, 0.5), wk_lt_out(a, b, out) */
#define WK__COMPARE_FN(name)                                                               \
  WK__FN(wk_##name, #name, (wk_tensor * self, wk_tensor * other), WK_VT(self), WK_VT(other)) \
  WK__FN(wk_##name##_scalar, #name ".Scalar", (wk_tensor * self, double other), WK_VT(self), WK_VF(other)) \
  WK__FN(wk_##name##_out, #name ".out", (wk_tensor * self, wk_tensor * other, wk_tensor * out), \
         WK_VT(self), WK_VT(other), WK_VT(out))
WK_COMPARE_OPS(WK__COMPARE_FN)

/* ---- Arithmetic ------------------------------------------------------------------- */
WK__FN(wk_add, "add", (wk_tensor * a, wk_tensor * b), WK_VT(a), WK_VT(b))
WK__FN(wk_add_scaled, "add", (wk_tensor * a, wk_tensor * b, double alpha), WK_VT(a), WK_VT(b), WK_VF(alpha))
WK__FN(wk_add_, "add_", (wk_tensor * a, wk_tensor * b), WK_VT(a), WK_VT(b))
WK__FN(wk_add_scaled_, "add_", (wk_tensor * a, wk_tensor * b, double alpha), WK_VT(a), WK_VT(b), WK_VF(alpha))
WK__FN(wk_add_out, "add.out", (wk_tensor * a, wk_tensor * b, wk_tensor * out), WK_VT(a), WK_VT(b), WK_VF(1), WK_VT(out))
WK__FN(wk_add_scalar, "add.Scalar", (wk_tensor * a, double b), WK_VT(a), WK_VF(b))
WK__FN(wk_add_scalar_, "add_.Scalar", (wk_tensor * a, double b), WK_VT(a), WK_VF(b))
WK__FN(wk_sub, "sub", (wk_tensor * a, wk_tensor * b), WK_VT(a), WK_VT(b))
WK__FN(wk_sub_scaled, "sub", (wk_tensor * a, wk_tensor * b, double alpha), WK_VT(a), WK_VT(b), WK_VF(alpha))
WK__FN(wk_sub_, "sub_", (wk_tensor * a, wk_tensor * b), WK_VT(a), WK_VT(b))
WK__FN(wk_sub_scaled_, "sub_", (wk_tensor * a, wk_tensor * b, double alpha), WK_VT(a), WK_VT(b), WK_VF(alpha))
WK__FN(wk_sub_out, "sub.out", (wk_tensor * a, wk_tensor * b, wk_tensor * out), WK_VT(a), WK_VT(b), WK_VF(1), WK_VT(out))
WK__FN(wk_sub_scalar, "sub.Scalar", (wk_tensor * a, double b), WK_VT(a), WK_VF(b))
WK__FN(wk_sub_scalar_, "sub_.Scalar", (wk_tensor * a, double b), WK_VT(a), WK_VF(b))
WK__FN(wk_div, "div", (wk_tensor * a, wk_tensor * b), WK_VT(a), WK_VT(b))
/* rounding_mode: NULL (true division), "trunc" or "floor". */
WK__FN(wk_div_mode, "div", (wk_tensor * a, wk_tensor * b, const char *rounding_mode), WK_VT(a), WK_VT(b), WK_VS(rounding_mode))
WK__FN(wk_div_, "div_", (wk_tensor * a, wk_tensor * b), WK_VT(a), WK_VT(b))
WK__FN(wk_div_out, "div.out", (wk_tensor * a, wk_tensor * b, wk_tensor * out), WK_VT(a), WK_VT(b), WK_VNONE, WK_VT(out))
WK__FN(wk_div_scalar, "div.Scalar", (wk_tensor * a, double b), WK_VT(a), WK_VF(b))
WK__FN(wk_div_scalar_, "div_.Scalar", (wk_tensor * a, double b), WK_VT(a), WK_VF(b))
WK__FN(wk_leaky_relu, "leaky_relu", (wk_tensor * x, double negative_slope), WK_VT(x), WK_VF(negative_slope))
WK__FN(wk_leaky_relu_, "leaky_relu_", (wk_tensor * x, double negative_slope), WK_VT(x), WK_VF(negative_slope))
/* approximate: "none" (exact erf form) or "tanh". */
WK__FN(wk_gelu, "gelu", (wk_tensor * x, const char *approximate), WK_VT(x), WK_VS(approximate ? approximate : "none"))
/* Bounds are optional: pass NAN for "no bound". */
WK__FN(wk_clamp, "clamp", (wk_tensor * x, double min, double max),
       WK_VT(x), (min == min) ? WK_VF(min) : WK_VNONE, (max == max) ? WK_VF(max) : WK_VNONE)
WK__FN(wk_clamp_, "clamp_", (wk_tensor * x, double min, double max),
       WK_VT(x), (min == min) ? WK_VF(min) : WK_VNONE, (max == max) ? WK_VF(max) : WK_VNONE)
WK__FN(wk_where, "where.self", (wk_tensor * cond, wk_tensor * a, wk_tensor * b), WK_VT(cond), WK_VT(a), WK_VT(b))
WK__FN(wk_isnan, "isnan", (wk_tensor * x), WK_VT(x))
WK__FN(wk_isinf, "isinf", (wk_tensor * x), WK_VT(x))
/* nan_to_num with PyTorch's defaults (0, dtype max, dtype lowest). */
WK__FN(wk_nan_to_num, "nan_to_num", (wk_tensor * x), WK_VT(x))
WK__FN(wk_nan_to_num_values, "nan_to_num", (wk_tensor * x, double nan, double posinf, double neginf),
       WK_VT(x), WK_VF(nan), WK_VF(posinf), WK_VF(neginf))

/* ---- Factories ------------------------------------------------------------------- */
WK__FNF(wk_zeros, "zeros", (const int64_t *size, int ndim, wk_options o), WK_VINTS(size, ndim), WK_VDT(o.dtype), WK_VDEV(o.device))
WK__FNF(wk_ones, "ones", (const int64_t *size, int ndim, wk_options o), WK_VINTS(size, ndim), WK_VDT(o.dtype), WK_VDEV(o.device))
WK__FNF(wk_full, "full", (const int64_t *size, int ndim, double value, wk_options o), WK_VINTS(size, ndim), WK_VF(value), WK_VDT(o.dtype), WK_VDEV(o.device))
WK__FNF(wk_arange, "arange", (double start, double end, double step, wk_options o), WK_VF(start), WK_VF(end), WK_VF(step), WK_VDT(o.dtype), WK_VDEV(o.device))
/* arange over integers: the result is int64 unless o.dtype says otherwise. */
WK__FNF(wk_arange_int, "arange", (int64_t start, int64_t end, int64_t step, wk_options o), WK_VI(start), WK_VI(end), WK_VI(step), WK_VDT(o.dtype), WK_VDEV(o.device))
WK__FNF(wk_linspace, "linspace", (double start, double end, int64_t steps, wk_options o), WK_VF(start), WK_VF(end), WK_VI(steps), WK_VDT(o.dtype), WK_VDEV(o.device))
WK__FNF(wk_eye, "eye", (int64_t n, int64_t m, wk_options o), WK_VI(n), WK_VI(m), WK_VDT(o.dtype), WK_VDEV(o.device))
WK__FNF(wk_zeros_like, "zeros_like", (wk_tensor * x, wk_options o), WK_VT(x), WK_VDT(o.dtype), WK_VDEV(o.device))
WK__FNF(wk_ones_like, "ones_like", (wk_tensor * x, wk_options o), WK_VT(x), WK_VDT(o.dtype), WK_VDEV(o.device))
WK__FNF(wk_full_like, "full_like", (wk_tensor * x, double value, wk_options o), WK_VT(x), WK_VF(value), WK_VDT(o.dtype), WK_VDEV(o.device))
WK__FN(wk_fill_, "fill_", (wk_tensor * x, double value), WK_VT(x), WK_VF(value))
WK__FN(wk_zero_, "zero_", (wk_tensor * x), WK_VT(x))
WK__FNF(wk_rand, "rand", (const int64_t *size, int ndim, wk_options o), WK_VINTS(size, ndim), WK_VDT(o.dtype), WK_VDEV(o.device))
WK__FNF(wk_randn, "randn", (const int64_t *size, int ndim, wk_options o), WK_VINTS(size, ndim), WK_VDT(o.dtype), WK_VDEV(o.device))
WK__FNF(wk_randint, "randint", (int64_t low, int64_t high, const int64_t *size, int ndim, wk_options o), WK_VI(low), WK_VI(high), WK_VINTS(size, ndim), WK_VDT(o.dtype), WK_VDEV(o.device))
WK__FNF(wk_randperm, "randperm", (int64_t n, wk_options o), WK_VI(n), WK_VDT(o.dtype), WK_VDEV(o.device))
WK__FN(wk_rand_like, "rand_like", (wk_tensor * x), WK_VT(x))
WK__FN(wk_randn_like, "randn_like", (wk_tensor * x), WK_VT(x))
WK__FN(wk_bernoulli, "bernoulli", (wk_tensor * probs), WK_VT(probs))
WK__FN(wk_bernoulli_p, "bernoulli.p", (wk_tensor * x, double p), WK_VT(x), WK_VF(p))
WK__FN(wk_uniform_, "uniform_", (wk_tensor * x, double from, double to), WK_VT(x), WK_VF(from), WK_VF(to))
WK__FN(wk_normal_, "normal_", (wk_tensor * x, double mean, double std), WK_VT(x), WK_VF(mean), WK_VF(std))

/* ---- Views ---------------------------------------------------------------------- */
WK__FN(wk_view, "view", (wk_tensor * x, const int64_t *size, int ndim), WK_VT(x), WK_VINTS(size, ndim))
WK__FN(wk_reshape, "reshape", (wk_tensor * x, const int64_t *shape, int ndim), WK_VT(x), WK_VINTS(shape, ndim))
WK__FN(wk_permute, "permute", (wk_tensor * x, const int64_t *dims, int ndim), WK_VT(x), WK_VINTS(dims, ndim))
WK__FN(wk_transpose, "transpose", (wk_tensor * x, int64_t dim0, int64_t dim1), WK_VT(x), WK_VI(dim0), WK_VI(dim1))
WK__FN(wk_t, "t", (wk_tensor * x), WK_VT(x))
WK__FN(wk_slice, "slice", (wk_tensor * x, int64_t dim, int64_t start, int64_t end, int64_t step), WK_VT(x), WK_VI(dim), WK_VI(start), WK_VI(end), WK_VI(step))
WK__FN(wk_narrow, "narrow", (wk_tensor * x, int64_t dim, int64_t start, int64_t length), WK_VT(x), WK_VI(dim), WK_VI(start), WK_VI(length))
WK__FN(wk_select, "select", (wk_tensor * x, int64_t dim, int64_t index), WK_VT(x), WK_VI(dim), WK_VI(index))
WK__FN(wk_expand, "expand", (wk_tensor * x, const int64_t *size, int ndim), WK_VT(x), WK_VINTS(size, ndim))
WK__FN(wk_squeeze, "squeeze", (wk_tensor * x), WK_VT(x))
WK__FN(wk_squeeze_dim, "squeeze.dim", (wk_tensor * x, int64_t dim), WK_VT(x), WK_VI(dim))
WK__FN(wk_unsqueeze, "unsqueeze", (wk_tensor * x, int64_t dim), WK_VT(x), WK_VI(dim))
WK__FN(wk_flatten, "flatten", (wk_tensor * x, int64_t start_dim, int64_t end_dim), WK_VT(x), WK_VI(start_dim), WK_VI(end_dim))
WK__FN(wk_contiguous, "contiguous", (wk_tensor * x), WK_VT(x))
WK__FN(wk_as_strided, "as_strided", (wk_tensor * x, const int64_t *size, const int64_t *stride, int ndim, int64_t storage_offset),
       WK_VT(x), WK_VINTS(size, ndim), WK_VINTS(stride, ndim), WK_VI(storage_offset))
WK__FN(wk_alias, "alias", (wk_tensor * x), WK_VT(x))

/* ---- Copies and casts ----------------------------------------------------------- */
WK__FN(wk_copy_, "copy_", (wk_tensor * dst, wk_tensor * src), WK_VT(dst), WK_VT(src))
WK__FN(wk_clone, "clone", (wk_tensor * x), WK_VT(x))
WK__FN(wk_to_dtype, "to.dtype", (wk_tensor * x, wk_dtype dtype), WK_VT(x), WK_VDT(dtype))
WK__FN(wk_to_device, "to.device", (wk_tensor * x, wk_device device), WK_VT(x), WK_VDEV(device))

/* ---- Reductions ------------------------------------------------------------------ */
WK__FN(wk_sum, "sum", (wk_tensor * x), WK_VT(x))
WK__FN(wk_sum_dim, "sum.dim_IntList", (wk_tensor * x, const int64_t *dims, int ndims, bool keepdim), WK_VT(x), WK_VINTS(dims, ndims), WK_VB(keepdim))
WK__FN(wk_mean, "mean", (wk_tensor * x), WK_VT(x))
WK__FN(wk_mean_dim, "mean.dim", (wk_tensor * x, const int64_t *dims, int ndims, bool keepdim), WK_VT(x), WK_VINTS(dims, ndims), WK_VB(keepdim))
WK__FN(wk_prod, "prod", (wk_tensor * x), WK_VT(x))
WK__FN(wk_prod_dim, "prod.dim_int", (wk_tensor * x, int64_t dim, bool keepdim), WK_VT(x), WK_VI(dim), WK_VB(keepdim))
WK__FN(wk_max, "max", (wk_tensor * x), WK_VT(x))
WK__FN2(wk_max_dim, "max.dim", (wk_tensor * x, int64_t dim, bool keepdim, wk_tensor **second), WK_VT(x), WK_VI(dim), WK_VB(keepdim))
WK__FN(wk_min, "min", (wk_tensor * x), WK_VT(x))
WK__FN2(wk_min_dim, "min.dim", (wk_tensor * x, int64_t dim, bool keepdim, wk_tensor **second), WK_VT(x), WK_VI(dim), WK_VB(keepdim))
WK__FN(wk_argmax, "argmax", (wk_tensor * x), WK_VT(x))
WK__FN(wk_argmax_dim, "argmax", (wk_tensor * x, int64_t dim, bool keepdim), WK_VT(x), WK_VI(dim), WK_VB(keepdim))
WK__FN(wk_argmin, "argmin", (wk_tensor * x), WK_VT(x))
WK__FN(wk_argmin_dim, "argmin", (wk_tensor * x, int64_t dim, bool keepdim), WK_VT(x), WK_VI(dim), WK_VB(keepdim))
/* var/std over dims (ndims == 0: all), with Bessel's correction by default (1). */
WK__FN(wk_var, "var.correction", (wk_tensor * x, const int64_t *dims, int ndims, int64_t correction, bool keepdim),
       WK_VT(x), ndims ? WK_VINTS(dims, ndims) : WK_VNONE, WK_VI(correction), WK_VB(keepdim))
WK__FN(wk_std, "std.correction", (wk_tensor * x, const int64_t *dims, int ndims, int64_t correction, bool keepdim),
       WK_VT(x), ndims ? WK_VINTS(dims, ndims) : WK_VNONE, WK_VI(correction), WK_VB(keepdim))
WK__FN(wk_norm, "norm", (wk_tensor * x, double p, const int64_t *dims, int ndims, bool keepdim),
       WK_VT(x), WK_VF(p), ndims ? WK_VINTS(dims, ndims) : WK_VNONE, WK_VB(keepdim))
WK__FN(wk_logsumexp, "logsumexp", (wk_tensor * x, const int64_t *dims, int ndims, bool keepdim), WK_VT(x), WK_VINTS(dims, ndims), WK_VB(keepdim))
WK__FN(wk_all, "all", (wk_tensor * x), WK_VT(x))
WK__FN(wk_all_dim, "all.dim", (wk_tensor * x, int64_t dim, bool keepdim), WK_VT(x), WK_VI(dim), WK_VB(keepdim))
WK__FN(wk_any, "any", (wk_tensor * x), WK_VT(x))
WK__FN(wk_any_dim, "any.dim", (wk_tensor * x, int64_t dim, bool keepdim), WK_VT(x), WK_VI(dim), WK_VB(keepdim))
WK__FN(wk_cumsum, "cumsum", (wk_tensor * x, int64_t dim), WK_VT(x), WK_VI(dim))

/* ---- Linear algebra --------------------------------------------------------------- */
WK__FN(wk_mm, "mm", (wk_tensor * a, wk_tensor * b), WK_VT(a), WK_VT(b))
WK__FN(wk_bmm, "bmm", (wk_tensor * a, wk_tensor * b), WK_VT(a), WK_VT(b))
WK__FN(wk_addmm, "addmm", (wk_tensor * self, wk_tensor * m1, wk_tensor * m2, double beta, double alpha),
       WK_VT(self), WK_VT(m1), WK_VT(m2), WK_VF(beta), WK_VF(alpha))
WK__FN(wk_dot, "dot", (wk_tensor * a, wk_tensor * b), WK_VT(a), WK_VT(b))
WK__FN(wk_matmul, "matmul", (wk_tensor * a, wk_tensor * b), WK_VT(a), WK_VT(b))
WK__FN(wk_linear, "linear", (wk_tensor * x, wk_tensor * w, wk_tensor * b), WK_VT(x), WK_VT(w), WK_VT(b))
WK__FN(wk_outer, "outer", (wk_tensor * a, wk_tensor * b), WK_VT(a), WK_VT(b))

/* ---- Neural-network ops ------------------------------------------------------------- */
WK__FN(wk_softmax, "softmax", (wk_tensor * x, int64_t dim), WK_VT(x), WK_VI(dim))
WK__FN(wk_log_softmax, "log_softmax", (wk_tensor * x, int64_t dim), WK_VT(x), WK_VI(dim))
/* Square stride/padding/dilation; wkx_conv2d takes every argument. */
WK__FN(wk_conv2d, "conv2d", (wk_tensor * x, wk_tensor * w, wk_tensor * b, int64_t stride, int64_t padding, int64_t dilation, int64_t groups),
       WK_VT(x), WK_VT(w), WK_VT(b), WK_VINTS(((const int64_t[]){stride, stride}), 2),
       WK_VINTS(((const int64_t[]){padding, padding}), 2), WK_VINTS(((const int64_t[]){dilation, dilation}), 2), WK_VI(groups))
/* stride 0 means "same as kernel_size". */
WK__FN2(wk_max_pool2d_with_indices, "max_pool2d_with_indices", (wk_tensor * x, int64_t kernel, int64_t stride, int64_t padding, wk_tensor **second),
        WK_VT(x), WK_VINTS(((const int64_t[]){kernel, kernel}), 2),
        stride ? WK_VINTS(((const int64_t[]){stride, stride}), 2) : WK_VINTS((const int64_t *)0, 0),
        WK_VINTS(((const int64_t[]){padding, padding}), 2))
static inline wk_tensor *wk_max_pool2d(wk_tensor *x, int64_t kernel, int64_t stride, int64_t padding) {
  return wk_max_pool2d_with_indices(x, kernel, stride, padding, (wk_tensor **)0);
}
WK__FN(wk_avg_pool2d, "avg_pool2d", (wk_tensor * x, int64_t kernel, int64_t stride, int64_t padding),
       WK_VT(x), WK_VINTS(((const int64_t[]){kernel, kernel}), 2),
       stride ? WK_VINTS(((const int64_t[]){stride, stride}), 2) : WK_VINTS((const int64_t *)0, 0),
       WK_VINTS(((const int64_t[]){padding, padding}), 2))
WK__FN(wk_adaptive_avg_pool2d, "adaptive_avg_pool2d", (wk_tensor * x, int64_t out_h, int64_t out_w),
       WK_VT(x), WK_VINTS(((const int64_t[]){out_h, out_w}), 2))
/* Returns the normalised output; running stats (may be NULL) update in place
 * when training. */
WK__FN2(wk_batch_norm, "batch_norm", (wk_tensor * x, wk_tensor * weight, wk_tensor * bias, wk_tensor * running_mean,
                                      wk_tensor * running_var, bool training, double momentum, double eps, wk_tensor **second),
        WK_VT(x), WK_VT(weight), WK_VT(bias), WK_VT(running_mean), WK_VT(running_var), WK_VB(training), WK_VF(momentum), WK_VF(eps))
WK__FN2(wk_layer_norm, "layer_norm", (wk_tensor * x, const int64_t *normalized_shape, int nd, wk_tensor * weight, wk_tensor * bias, double eps, wk_tensor **second),
        WK_VT(x), WK_VINTS(normalized_shape, nd), WK_VT(weight), WK_VT(bias), WK_VF(eps))
/* Returns the output; *second (may be NULL) receives the keep mask. */
WK__FN2(wk_dropout, "dropout", (wk_tensor * x, double p, bool train, wk_tensor **second), WK_VT(x), WK_VF(p), WK_VB(train))
WK__FN(wk_embedding, "embedding", (wk_tensor * weight, wk_tensor * indices), WK_VT(weight), WK_VT(indices))
/* mode: "constant", "reflect" or "replicate"; pad as in torch.nn.functional.pad. */
WK__FN(wk_pad, "pad", (wk_tensor * x, const int64_t *pad, int npad, const char *mode, double value),
       WK_VT(x), WK_VINTS(pad, npad), WK_VS(mode ? mode : "constant"), WK_VF(value))
enum { WK_REDUCTION_NONE = 0, WK_REDUCTION_MEAN = 1, WK_REDUCTION_SUM = 2 };
WK__FN(wk_cross_entropy, "cross_entropy", (wk_tensor * logits, wk_tensor * target), WK_VT(logits), WK_VT(target))
WK__FN(wk_cross_entropy_ex, "cross_entropy", (wk_tensor * logits, wk_tensor * target, wk_tensor * weight, int64_t reduction, int64_t ignore_index, double label_smoothing),
       WK_VT(logits), WK_VT(target), WK_VT(weight), WK_VI(reduction), WK_VI(ignore_index), WK_VF(label_smoothing))
WK__FN(wk_nll_loss, "nll_loss", (wk_tensor * logp, wk_tensor * target), WK_VT(logp), WK_VT(target))
WK__FN(wk_mse_loss, "mse_loss", (wk_tensor * x, wk_tensor * target), WK_VT(x), WK_VT(target))
WK__FN(wk_binary_cross_entropy_with_logits, "binary_cross_entropy_with_logits", (wk_tensor * x, wk_tensor * target),
       WK_VT(x), WK_VT(target))

/* ---- Indexing and shape ------------------------------------------------------------- */
WK__FN(wk_cat, "cat", (wk_tensor *const *tensors, int n, int64_t dim), WK_VTS(tensors, n), WK_VI(dim))
WK__FN(wk_stack, "stack", (wk_tensor *const *tensors, int n, int64_t dim), WK_VTS(tensors, n), WK_VI(dim))
WK__FNL(wk_split, "split", (wk_tensor * x, int64_t split_size, int64_t dim, wk_tensor **out, int cap), WK_VT(x), WK_VI(split_size), WK_VI(dim))
WK__FNL(wk_chunk, "chunk", (wk_tensor * x, int64_t chunks, int64_t dim, wk_tensor **out, int cap), WK_VT(x), WK_VI(chunks), WK_VI(dim))
WK__FN(wk_index_select, "index_select", (wk_tensor * x, int64_t dim, wk_tensor * index), WK_VT(x), WK_VI(dim), WK_VT(index))
WK__FN(wk_gather, "gather", (wk_tensor * x, int64_t dim, wk_tensor * index), WK_VT(x), WK_VI(dim), WK_VT(index))
WK__FN(wk_scatter, "scatter.src", (wk_tensor * x, int64_t dim, wk_tensor * index, wk_tensor * src), WK_VT(x), WK_VI(dim), WK_VT(index), WK_VT(src))
WK__FN(wk_scatter_, "scatter_.src", (wk_tensor * x, int64_t dim, wk_tensor * index, wk_tensor * src), WK_VT(x), WK_VI(dim), WK_VT(index), WK_VT(src))
WK__FN(wk_scatter_add, "scatter_add", (wk_tensor * x, int64_t dim, wk_tensor * index, wk_tensor * src), WK_VT(x), WK_VI(dim), WK_VT(index), WK_VT(src))
WK__FN(wk_scatter_add_, "scatter_add_", (wk_tensor * x, int64_t dim, wk_tensor * index, wk_tensor * src), WK_VT(x), WK_VI(dim), WK_VT(index), WK_VT(src))
WK__FN(wk_masked_fill, "masked_fill.Scalar", (wk_tensor * x, wk_tensor * mask, double value), WK_VT(x), WK_VT(mask), WK_VF(value))
WK__FN(wk_masked_fill_, "masked_fill_.Scalar", (wk_tensor * x, wk_tensor * mask, double value), WK_VT(x), WK_VT(mask), WK_VF(value))
WK__FN(wk_masked_select, "masked_select", (wk_tensor * x, wk_tensor * mask), WK_VT(x), WK_VT(mask))
WK__FN(wk_repeat, "repeat", (wk_tensor * x, const int64_t *repeats, int n), WK_VT(x), WK_VINTS(repeats, n))
WK__FN(wk_flip, "flip", (wk_tensor * x, const int64_t *dims, int n), WK_VT(x), WK_VINTS(dims, n))
WK__FN(wk_roll, "roll", (wk_tensor * x, const int64_t *shifts, const int64_t *dims, int n), WK_VT(x), WK_VINTS(shifts, n), WK_VINTS(dims, n))
WK__FN2(wk_topk, "topk", (wk_tensor * x, int64_t k, int64_t dim, bool largest, bool sorted, wk_tensor **second),
        WK_VT(x), WK_VI(k), WK_VI(dim), WK_VB(largest), WK_VB(sorted))
WK__FN2(wk_sort, "sort", (wk_tensor * x, int64_t dim, bool descending, wk_tensor **second), WK_VT(x), WK_VI(dim), WK_VB(descending))
WK__FN(wk_one_hot, "one_hot", (wk_tensor * x, int64_t num_classes), WK_VT(x), WK_VI(num_classes))

/* ---- Quantization (ABI 1.3; q-parameters in <wick/qtensor.h>) ------------------------ */
/* PyTorch's rounding: q = clamp(zero_point + nearbyint(x * (1.0f / scale)), qmin, qmax) in float32. */
WK__FN(wk_quantize_per_tensor, "quantize_per_tensor", (wk_tensor * x, double scale, int64_t zero_point, wk_dtype dtype),
       WK_VT(x), WK_VF(scale), WK_VI(zero_point), WK_VDT(dtype))
WK__FN(wk_quantize_per_channel, "quantize_per_channel",
       (wk_tensor * x, wk_tensor * scales, wk_tensor * zero_points, int64_t axis, wk_dtype dtype), WK_VT(x),
       WK_VT(scales), WK_VT(zero_points), WK_VI(axis), WK_VDT(dtype))
/* (q - zero_point) * scale as float32; a floating tensor comes back as float32. */
WK__FN(wk_dequantize, "dequantize", (wk_tensor * q), WK_VT(q))
/* The stored integers as a new i8/u8/i32 tensor. */
WK__FN(wk_int_repr, "int_repr", (wk_tensor * q), WK_VT(q))
WK__FN(wk_fake_quantize_per_tensor_affine, "fake_quantize_per_tensor_affine",
       (wk_tensor * x, double scale, int64_t zero_point, int64_t quant_min, int64_t quant_max), WK_VT(x), WK_VF(scale),
       WK_VI(zero_point), WK_VI(quant_min), WK_VI(quant_max))
WK__FN(wk_fake_quantize_per_channel_affine, "fake_quantize_per_channel_affine",
       (wk_tensor * x, wk_tensor * scales, wk_tensor * zero_points, int64_t axis, int64_t quant_min, int64_t quant_max),
       WK_VT(x), WK_VT(scales), WK_VT(zero_points), WK_VI(axis), WK_VI(quant_min), WK_VI(quant_max))

/* ---- Every op and overload, every argument (generated from op_list.h) ---------------- */
#include <wick/ops_gen.h>

#endif
