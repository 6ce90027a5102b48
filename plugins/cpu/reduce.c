/* cpu plugin: reductions (sum, mean, prod, max/min with indices, argmax/argmin,
 * var/std, norm, logsumexp, all/any) on the engine of reduce_engine.c. The
 * core's meta functions checked the arguments and decided each result. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reduce.h"

/* ---- sum, prod -------------------------------------------------------------------------- */
static wk_status sum_prod(const wk_kernel_ctx *ctx, bool prod, wk_tensor *x, const int64_t *dims, int ndims,
                          wk_dtype dtype, wk_value *outs) {
  /* A given dtype converts the input first, as PyTorch does. */
  wk_tensor *in = dtype ? wk_kernel_cast(x, dtype) : wk_retain(x);
  if (!in) return wk_last_error();
  wk_dtype dt = wk_tensor_dtype(in);
  bool isint = !wk_dtype_is_floating(dt);
  rplan p;
  wk_status s = cpu_reduce_plan(&p, in, dims, ndims);
  wk_release(in);
  if (s) return s;
  acc_t *res = cpu_reduce_rows(&p, prod ? (isint ? R_PROD_I : R_PROD) : (isint ? R_SUM_I : R_SUM), 0, NULL);
  wk_tensor *out = res ? wk_meta_empty(ctx, 0) : NULL;
  outw wo = writer(out);
  if (out)
    for (int64_t r = 0; r < p.rows; r++) {
      if (isint)
        put_i64(&wo, r, res[r].i);
      else
        put_f64(&wo, r, res[r].d);
    }
  return finish(&p, res, out, outs);
}

static wk_status k_sum(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return sum_prod(ctx, false, WK_ARG_T(0), NULL, 0, cpu_reduce_opt_dtype(&args[1]), outs);
}
static wk_status k_sum_dim(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  int nd;
  const int64_t *dims = opt_dims(&args[1], &nd);
  return sum_prod(ctx, false, WK_ARG_T(0), dims, nd, cpu_reduce_opt_dtype(&args[3]), outs);
}
static wk_status k_prod(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return sum_prod(ctx, true, WK_ARG_T(0), NULL, 0, cpu_reduce_opt_dtype(&args[1]), outs);
}
static wk_status k_prod_dim(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return sum_prod(ctx, true, WK_ARG_T(0), &WK_ARG_I(1), 1, cpu_reduce_opt_dtype(&args[3]), outs);
}

/* ---- mean ------------------------------------------------------------------------------- */
static wk_status mean(const wk_kernel_ctx *ctx, wk_tensor *x, const int64_t *dims, int ndims, wk_dtype dtype,
                      wk_value *outs) {
  wk_tensor *in = dtype ? wk_kernel_cast(x, dtype) : wk_retain(x);
  if (!in) return wk_last_error();
  rplan p;
  wk_status s = cpu_reduce_plan(&p, in, dims, ndims);
  wk_release(in);
  if (s) return s;
  acc_t *res = cpu_reduce_rows(&p, R_SUM, 0, NULL);
  wk_tensor *out = res ? wk_meta_empty(ctx, 0) : NULL;
  outw wo = writer(out);
  if (out)
    for (int64_t r = 0; r < p.rows; r++) put_f64(&wo, r, res[r].d / (double)p.n);
  return finish(&p, res, out, outs);
}

static wk_status k_mean(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return mean(ctx, WK_ARG_T(0), NULL, 0, cpu_reduce_opt_dtype(&args[1]), outs);
}
static wk_status k_mean_dim(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  int nd;
  const int64_t *dims = opt_dims(&args[1], &nd);
  return mean(ctx, WK_ARG_T(0), dims, nd, cpu_reduce_opt_dtype(&args[3]), outs);
}

/* ---- max, min, argmax, argmin ------------------------------------------------------------ */
enum { WANT_VALUES = 1, WANT_INDICES = 2 };

static wk_status extreme(const wk_kernel_ctx *ctx, bool is_max, int want, wk_tensor *x, bool has_dim, int64_t dim,
                         wk_value *outs) {
  wk_dtype dt = wk_tensor_dtype(x);
  bool isint = !wk_dtype_is_floating(dt);
  rkind k = is_max ? (isint ? R_MAX_I : R_MAX) : (isint ? R_MIN_I : R_MIN);
  rplan p;
  wk_status s = cpu_reduce_plan(&p, x, has_dim ? &dim : NULL, has_dim ? 1 : 0);
  if (s) return s;
  acc_t *res = cpu_reduce_rows(&p, k, 0, NULL);
  wk_tensor *vals = NULL, *idx = NULL;
  if (res && (want & WANT_VALUES)) vals = wk_meta_empty(ctx, 0);
  if (res && (want & WANT_INDICES)) idx = wk_meta_empty(ctx, want == WANT_INDICES ? 0 : 1);
  bool ok = res && (vals || !(want & WANT_VALUES)) && (idx || !(want & WANT_INDICES));
  outw wv = writer(vals), wi = writer(idx);
  if (ok)
    for (int64_t r = 0; r < p.rows; r++) {
      if (vals) {
        if (isint)
          put_i64(&wv, r, res[r].i);
        else
          put_f64(&wv, r, res[r].d);
      }
      if (idx) put_i64(&wi, r, res[r].idx);
    }
  wk_release(p.c);
  wk_free(res);
  return wk_kernel_done_some(ok ? WK_OK : wk_last_error(), vals, want & WANT_VALUES, idx, want & WANT_INDICES, outs);
}

static wk_status k_max(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return extreme(ctx, true, WANT_VALUES, WK_ARG_T(0), false, 0, outs);
}
static wk_status k_min(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return extreme(ctx, false, WANT_VALUES, WK_ARG_T(0), false, 0, outs);
}
static wk_status k_max_dim(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return extreme(ctx, true, WANT_VALUES | WANT_INDICES, WK_ARG_T(0), true, WK_ARG_I(1), outs);
}
static wk_status k_min_dim(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return extreme(ctx, false, WANT_VALUES | WANT_INDICES, WK_ARG_T(0), true, WK_ARG_I(1), outs);
}
/* argmax with dim None reduces the flattened input. */
static wk_status k_argmax(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return extreme(ctx, true, WANT_INDICES, WK_ARG_T(0), !WK_ARG_IS_NONE(1), WK_ARG_IS_NONE(1) ? 0 : WK_ARG_I(1), outs);
}
static wk_status k_argmin(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return extreme(ctx, false, WANT_INDICES, WK_ARG_T(0), !WK_ARG_IS_NONE(1), WK_ARG_IS_NONE(1) ? 0 : WK_ARG_I(1), outs);
}

/* ---- var, std (two passes: the mean, then squared deviations) ----------------------------- */
static wk_status var_std(const wk_kernel_ctx *ctx, bool is_std, const wk_value *args, wk_value *outs) {
  wk_tensor *x = WK_ARG_T(0);
  int nd;
  const int64_t *dims = opt_dims(&args[1], &nd);
  int64_t correction = WK_ARG_I(2);
  rplan p;
  wk_status s = cpu_reduce_plan(&p, x, dims, nd);
  if (s) return s;
  acc_t *res = cpu_reduce_rows(&p, R_SUM, 0, NULL);
  double *mu = res ? wk_malloc(sizeof(double) * (size_t)(p.rows > 0 ? p.rows : 1)) : NULL;
  if (res && !mu) wk_error(WK_ERR_NO_MEMORY, "%s(): out of memory", WK_OPNAME);
  wk_tensor *out = NULL;
  if (mu) {
    for (int64_t r = 0; r < p.rows; r++) mu[r] = res[r].d / (double)p.n;
    wk_free(res);
    res = cpu_reduce_rows(&p, R_SQDEV, 0, mu);
    wk_free(mu);
    double dof = (double)p.n - (double)correction;
    if (dof < 0) dof = 0; /* PyTorch: max(0, N - correction), giving inf or nan */
    out = res ? wk_meta_empty(ctx, 0) : NULL;
    outw wo = writer(out);
    if (out)
      for (int64_t r = 0; r < p.rows; r++) {
        double v = res[r].d / dof;
        put_f64(&wo, r, is_std ? sqrt(v) : v);
      }
  }
  return finish(&p, res, out, outs);
}

static wk_status k_var(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return var_std(ctx, false, args, outs);
}
static wk_status k_std(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return var_std(ctx, true, args, outs);
}

/* ---- norm ------------------------------------------------------------------------------------ */
static wk_status k_norm(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *x = WK_ARG_T(0);
  double pw = wk_value_as_f64(&args[1]);
  int nd;
  const int64_t *dims = opt_dims(&args[2], &nd);
  rplan p;
  wk_status s = cpu_reduce_plan(&p, x, dims, nd);
  if (s) return s;
  rkind k = pw == 2 ? R_SQ : pw == 1 ? R_ABS : pw == 0 ? R_NZ : pw == INFINITY ? R_AMAX : pw == -INFINITY ? R_AMIN : R_POW;
  acc_t *res = cpu_reduce_rows(&p, k, pw, NULL);
  wk_tensor *out = res ? wk_meta_empty(ctx, 0) : NULL;
  outw wo = writer(out);
  if (out)
    for (int64_t r = 0; r < p.rows; r++) {
      double v = res[r].d;
      put_f64(&wo, r, k == R_SQ ? sqrt(v) : k == R_POW ? pow(v, 1.0 / pw) : v);
    }
  return finish(&p, res, out, outs);
}

/* ---- logsumexp (max-shifted: m + log(sum(exp(x - m))), with infinite m shifted by 0) ------- */
static wk_status k_logsumexp(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *x = WK_ARG_T(0);
  int nd = args[1].len;
  /* Integer inputs give the default floating dtype, as in PyTorch 2. */
  wk_tensor *in = wk_kernel_cast(x, wk_dtype_is_floating(wk_tensor_dtype(x)) ? wk_tensor_dtype(x) : WK_F32);
  if (!in) return wk_last_error();
  rplan p;
  wk_status s = cpu_reduce_plan(&p, in, args[1].u.ints, nd);
  wk_release(in);
  if (s) return s;
  acc_t *res = cpu_reduce_rows(&p, R_MAX, 0, NULL);
  double *m = res ? wk_malloc(sizeof(double) * (size_t)(p.rows > 0 ? p.rows : 1)) : NULL;
  if (res && !m) wk_error(WK_ERR_NO_MEMORY, "logsumexp(): out of memory");
  wk_tensor *out = NULL;
  if (m) {
    for (int64_t r = 0; r < p.rows; r++) m[r] = isinf(res[r].d) ? 0 : res[r].d;
    wk_free(res);
    res = cpu_reduce_rows(&p, R_EXPSUM, 0, m);
    out = res ? wk_meta_empty(ctx, 0) : NULL;
    outw wo = writer(out);
    if (out)
      for (int64_t r = 0; r < p.rows; r++) put_f64(&wo, r, log(res[r].d) + m[r]);
    wk_free(m);
  }
  return finish(&p, res, out, outs);
}

/* ---- all, any (bool results; uint8 inputs keep uint8, as in PyTorch) ------------------------- */
static wk_status all_any(const wk_kernel_ctx *ctx, bool is_all, wk_tensor *x, bool has_dim, int64_t dim,
                         wk_value *outs) {
  rplan p;
  wk_status s = cpu_reduce_plan(&p, x, has_dim ? &dim : NULL, has_dim ? 1 : 0);
  if (s) return s;
  acc_t *res = cpu_reduce_rows(&p, is_all ? R_ALL : R_ANY, 0, NULL);
  wk_tensor *out = res ? wk_meta_empty(ctx, 0) : NULL;
  outw wo = writer(out);
  if (out)
    for (int64_t r = 0; r < p.rows; r++) put_i64(&wo, r, res[r].i);
  return finish(&p, res, out, outs);
}

static wk_status k_all(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return all_any(ctx, true, WK_ARG_T(0), false, 0, outs);
}
static wk_status k_all_dim(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return all_any(ctx, true, WK_ARG_T(0), true, WK_ARG_I(1), outs);
}
static wk_status k_any(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return all_any(ctx, false, WK_ARG_T(0), false, 0, outs);
}
static wk_status k_any_dim(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return all_any(ctx, false, WK_ARG_T(0), true, WK_ARG_I(1), outs);
}

wk_status cpu_register_reduce(void) {
  static const struct {
    const char *op;
    wk_kernel_fn fn;
  } table[] = {
      {"sum", k_sum},           {"sum.dim_IntList", k_sum_dim}, {"mean", k_mean},
      {"mean.dim", k_mean_dim}, {"prod", k_prod},               {"prod.dim_int", k_prod_dim},
      {"max", k_max},           {"max.dim", k_max_dim},         {"min", k_min},
      {"min.dim", k_min_dim},   {"argmax", k_argmax},           {"argmin", k_argmin},
      {"var.correction", k_var}, {"std.correction", k_std},     {"norm", k_norm},
      {"logsumexp", k_logsumexp}, {"all", k_all},               {"all.dim", k_all_dim},
      {"any", k_any},           {"any.dim", k_any_dim},         
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    wk_status s = cpu_reg(table[i].op, table[i].fn, NULL);
    if (s) return s;
  }
  return WK_OK;
}
