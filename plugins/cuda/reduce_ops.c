/* cuda reduction family: sum, mean, prod, max/min (with indices),
 * argmax/argmin, var/std, norm, logsumexp, all/any. The core's meta functions
 * checked the arguments and decided each result's dtype and shape. The input is permuted so the reduced dims come
 * last and made contiguous in its compute dtype; reduce.cu reduces each row.
 * (cumsum is not here: it stays a cpu-only kernel for now.) */
#include <math.h>
#include <string.h>

#include "cuda_kernels.h"

typedef struct {
  wk_tensor *c; /* contiguous [rows, len] data in the compute dtype */
  int64_t rows, len;
} rplan;

/* The compute dtype of a reduction input: f32/f64, i64 for integers, bool kept. */
static wk_dtype reduce_cd(wk_dtype dt) {
  if (wk_dtype_is_floating(dt)) return dt == WK_F64 ? WK_F64 : WK_F32;
  return dt == WK_BOOL ? WK_BOOL : WK_I64;
}

/* Plans a reduction of x over dims (ndims == 0: every dim; checked by the meta function). */
static wk_status plan(rplan *p, const char *op, wk_tensor *x, const int64_t *dims, int ndims, wk_dtype cd,
                      wk_device dev) {
  memset(p, 0, sizeof *p);
  wk_reduce_layout l;
  wk_reduce_layout_of(&l, x, dims, ndims);
  p->rows = l.rows;
  p->len = l.n;
  wk_status s = cuda_enter(op, dev);
  if (s) return s;
  wk_tensor *v = l.ndim > 0 ? wk_permute(x, l.perm, l.ndim) : wk_retain(x);
  p->c = v ? cuda_dense(v, cd, dev) : NULL;
  wk_release(v);
  return p->c ? WK_OK : wk_last_error();
}

/* Runs the row kernel; *f (double) / *i (int64) / *ix (int64 indices) are
 * [rows] tensors made when the pointer is not NULL. */
static wk_status run(rplan *p, int rop, double pp, double q, wk_tensor **f, wk_tensor **i, wk_tensor **ix,
                     wk_device dev) {
  int64_t r = p->rows;
  wk_status s = WK_OK;
  if (f && !(*f = cuda_new(&r, 1, WK_F64, dev))) s = wk_last_error();
  if (!s && i && !(*i = cuda_new(&r, 1, WK_I64, dev))) s = wk_last_error();
  if (!s && ix && !(*ix = cuda_new(&r, 1, WK_I64, dev))) s = wk_last_error();
  if (!s)
    s = (wk_status)cuda_launch_reduce(rop, cuda_dt(wk_tensor_dtype(p->c)), wk_tensor_data(p->c), r, p->len, pp, q,
                                      f ? wk_tensor_data(*f) : NULL, i ? wk_tensor_data(*i) : NULL,
                                      ix ? wk_tensor_data(*ix) : NULL, cuda_stream(dev));
  wk_release(p->c);
  p->c = NULL;
  if (s) {
    if (f) wk_release(*f), *f = NULL;
    if (i) wk_release(*i), *i = NULL;
    if (ix) wk_release(*ix), *ix = NULL;
  }
  return s;
}

/* Consumes a [rows] result: reshaped and converted to result i as the meta function decided it. */
static wk_tensor *shaped(const wk_kernel_ctx *ctx, int i, wk_tensor *t) {
  const wk_meta_out *m = wk_kernel_meta(ctx, i);
  if (!t || !m) {
    wk_release(t);
    return t ? wk_meta_empty(ctx, i) : NULL; /* no decision: records the error */
  }
  wk_tensor *v = wk_reshape(t, m->sizes, m->ndim);
  wk_release(t);
  if (!v) return NULL;
  wk_tensor *r = wk_kernel_cast(v, m->dtype);
  wk_release(v);
  if (r && !wk_tensor_is_contiguous(r)) { /* never: reshape of a dense vector */
    wk_tensor *c = wk_contiguous(r);
    wk_release(r);
    r = c;
  }
  return r;
}

static const int64_t *opt_dims(const wk_value *v, int *n) {
  *n = v->tag == WK_V_INTS ? v->len : 0;
  return v->tag == WK_V_INTS ? v->u.ints : NULL;
}
static wk_dtype opt_dtype(const wk_value *v) {
  return v->tag == WK_V_DTYPE ? v->u.dtype : WK_DTYPE_DEFAULT;
}

/* ---- sum, prod, mean ---- */
static wk_status sum_prod(const wk_kernel_ctx *ctx, const char *op, bool prod, bool is_mean, wk_tensor *x,
                          const int64_t *dims, int ndims, wk_dtype dtype, wk_value *outs) {
  wk_dtype dt = dtype ? dtype : wk_tensor_dtype(x); /* a given dtype converts the input first */
  bool isint = !wk_dtype_is_floating(dt);
  wk_dtype cd = isint ? WK_I64 : reduce_cd(dt);
  wk_tensor *in = dtype ? wk_kernel_cast(x, dtype) : wk_retain(x);
  if (!in) return wk_last_error();
  rplan p;
  wk_status s = plan(&p, op, in, dims, ndims, cd, ctx->device);
  wk_release(in);
  if (s) return s;
  wk_tensor *f = NULL, *i = NULL;
  int rop = is_mean ? CUDA_R_MEAN : prod ? CUDA_R_PROD : CUDA_R_SUM;
  s = run(&p, rop, 0, 0, isint ? NULL : &f, isint ? &i : NULL, NULL, ctx->device);
  if (s) return s;
  return wk_kernel_out1(outs, shaped(ctx, 0, isint ? i : f));
}

static wk_status k_sum(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return sum_prod(ctx, "sum", false, false, WK_ARG_T(0), NULL, 0, opt_dtype(&args[1]), outs);
}
static wk_status k_sum_dim(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  int nd;
  const int64_t *dims = opt_dims(&args[1], &nd);
  return sum_prod(ctx, "sum", false, false, WK_ARG_T(0), dims, nd, opt_dtype(&args[3]), outs);
}
static wk_status k_prod(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return sum_prod(ctx, "prod", true, false, WK_ARG_T(0), NULL, 0, opt_dtype(&args[1]), outs);
}
static wk_status k_prod_dim(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return sum_prod(ctx, "prod", true, false, WK_ARG_T(0), &WK_ARG_I(1), 1, opt_dtype(&args[3]), outs);
}
static wk_status k_mean(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return sum_prod(ctx, "mean", false, true, WK_ARG_T(0), NULL, 0, opt_dtype(&args[1]), outs);
}
static wk_status k_mean_dim(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  int nd;
  const int64_t *dims = opt_dims(&args[1], &nd);
  return sum_prod(ctx, "mean", false, true, WK_ARG_T(0), dims, nd, opt_dtype(&args[3]), outs);
}

/* ---- max, min, argmax, argmin ---- */
enum { WANT_VALUES = 1, WANT_INDICES = 2 };

static wk_status extreme(const wk_kernel_ctx *ctx, const char *op, bool is_max, int want, wk_tensor *x, bool has_dim,
                         int64_t dim, wk_value *outs) {
  wk_dtype dt = wk_tensor_dtype(x);
  bool isint = !wk_dtype_is_floating(dt);
  rplan p;
  wk_status s = plan(&p, op, x, has_dim ? &dim : NULL, has_dim ? 1 : 0, reduce_cd(dt), ctx->device);
  if (s) return s;
  wk_tensor *f = NULL, *i = NULL, *ix = NULL;
  int rop = want == WANT_INDICES ? (is_max ? CUDA_R_ARGMAX : CUDA_R_ARGMIN) : (is_max ? CUDA_R_MAX : CUDA_R_MIN);
  bool vals = want & WANT_VALUES, idx = want & WANT_INDICES;
  s = run(&p, rop, 0, 0, vals && !isint ? &f : NULL, vals && isint ? &i : NULL, idx ? &ix : NULL, ctx->device);
  if (s) return s;
  wk_tensor *v = vals ? shaped(ctx, 0, isint ? i : f) : NULL;
  wk_tensor *k = idx ? shaped(ctx, vals ? 1 : 0, ix) : NULL;
  return wk_kernel_done_some(WK_OK, v, vals, k, idx, outs);
}

static wk_status k_max(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return extreme(ctx, "max", true, WANT_VALUES, WK_ARG_T(0), false, 0, outs);
}
static wk_status k_min(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return extreme(ctx, "min", false, WANT_VALUES, WK_ARG_T(0), false, 0, outs);
}
static wk_status k_max_dim(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return extreme(ctx, "max", true, WANT_VALUES | WANT_INDICES, WK_ARG_T(0), true, WK_ARG_I(1), outs);
}
static wk_status k_min_dim(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return extreme(ctx, "min", false, WANT_VALUES | WANT_INDICES, WK_ARG_T(0), true, WK_ARG_I(1), outs);
}
static wk_status k_argmax(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return extreme(ctx, "argmax", true, WANT_INDICES, WK_ARG_T(0), !WK_ARG_IS_NONE(1),
                 WK_ARG_IS_NONE(1) ? 0 : WK_ARG_I(1), outs);
}
static wk_status k_argmin(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return extreme(ctx, "argmin", false, WANT_INDICES, WK_ARG_T(0), !WK_ARG_IS_NONE(1),
                 WK_ARG_IS_NONE(1) ? 0 : WK_ARG_I(1), outs);
}

/* ---- var, std, norm, logsumexp ---- */
static wk_status float_red(const wk_kernel_ctx *ctx, const char *op, int rop, wk_tensor *x, const int64_t *dims,
                           int ndims, double pp, double q, wk_value *outs) {
  rplan p;
  wk_status s = plan(&p, op, x, dims, ndims, reduce_cd(wk_tensor_dtype(x)), ctx->device);
  if (s) return s;
  wk_tensor *f = NULL;
  if ((s = run(&p, rop, pp, q, &f, NULL, NULL, ctx->device))) return s;
  return wk_kernel_out1(outs, shaped(ctx, 0, f));
}

static wk_status var_std(const wk_kernel_ctx *ctx, const char *op, bool is_std, const wk_value *args, wk_value *outs) {
  wk_tensor *x = WK_ARG_T(0);
  int nd;
  const int64_t *dims = opt_dims(&args[1], &nd);
  return float_red(ctx, op, CUDA_R_VAR, x, dims, nd, (double)WK_ARG_I(2), is_std ? 1 : 0, outs);
}
static wk_status k_var(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return var_std(ctx, "var", false, args, outs);
}
static wk_status k_std(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return var_std(ctx, "std", true, args, outs);
}

static wk_status k_norm(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *x = WK_ARG_T(0);
  double pw = wk_value_as_f64(&args[1]);
  int nd;
  const int64_t *dims = opt_dims(&args[2], &nd);
  return float_red(ctx, "norm", CUDA_R_NORM, x, dims, nd, pw, 0, outs);
}

static wk_status k_logsumexp(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *x = WK_ARG_T(0);
  /* integer inputs give the default floating dtype, as in PyTorch 2 */
  wk_tensor *in = wk_kernel_cast(x, wk_kernel_meta(ctx, 0) ? wk_kernel_meta(ctx, 0)->dtype : WK_F32);
  if (!in) return wk_last_error();
  wk_status s = float_red(ctx, "logsumexp", CUDA_R_LOGSUMEXP, in, args[1].u.ints, args[1].len, 0, 0, outs);
  wk_release(in);
  return s;
}

/* ---- all, any (bool results; uint8 inputs keep uint8) ---- */
static wk_status all_any(const wk_kernel_ctx *ctx, const char *op, bool is_all, wk_tensor *x, bool has_dim, int64_t dim,
                         wk_value *outs) {
  rplan p;
  wk_status s = plan(&p, op, x, has_dim ? &dim : NULL, has_dim ? 1 : 0, reduce_cd(wk_tensor_dtype(x)), ctx->device);
  if (s) return s;
  wk_tensor *i = NULL;
  if ((s = run(&p, is_all ? CUDA_R_ALL : CUDA_R_ANY, 0, 0, NULL, &i, NULL, ctx->device))) return s;
  return wk_kernel_out1(outs, shaped(ctx, 0, i));
}
static wk_status k_all(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return all_any(ctx, "all", true, WK_ARG_T(0), false, 0, outs);
}
static wk_status k_all_dim(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return all_any(ctx, "all", true, WK_ARG_T(0), true, WK_ARG_I(1), outs);
}
static wk_status k_any(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return all_any(ctx, "any", false, WK_ARG_T(0), false, 0, outs);
}
static wk_status k_any_dim(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return all_any(ctx, "any", false, WK_ARG_T(0), true, WK_ARG_I(1), outs);
}

wk_status cuda_register_reduce(void) {
  static const struct {
    const char *op;
    wk_kernel_fn fn;
  } table[] = {
      {"sum", k_sum},
      {"sum.dim_IntList", k_sum_dim},
      {"mean", k_mean},
      {"mean.dim", k_mean_dim},
      {"prod", k_prod},
      {"prod.dim_int", k_prod_dim},
      {"max", k_max},
      {"max.dim", k_max_dim},
      {"min", k_min},
      {"min.dim", k_min_dim},
      {"argmax", k_argmax},
      {"argmin", k_argmin},
      {"var.correction", k_var},
      {"std.correction", k_std},
      {"norm", k_norm},
      {"logsumexp", k_logsumexp},
      {"all", k_all},
      {"all.dim", k_all_dim},
      {"any", k_any},
      {"any.dim", k_any_dim},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    wk_status s = cuda_reg(table[i].op, table[i].fn, NULL, NULL, "cuda.reduce");
    if (s) return s;
  }
  return WK_OK;
}
