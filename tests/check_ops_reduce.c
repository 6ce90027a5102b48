/* check_ops_reduce: the cpu reductions (sum, mean, prod, max/min, argmax/argmin,
 * var/std, norm, logsumexp, all/any) and cumsum against float64 references
 * computed here with naive loops, over random shapes, dims, keepdim, layouts
 * and every dtype; PyTorch's dtype rules, NaN handling, errors, thread-count
 * independence and leaks. */
#include "testutil.h"

static const wk_dtype ALL_DT[] = {WK_F32, WK_F64, WK_F16, WK_BF16, WK_I8, WK_U8, WK_I16, WK_I32, WK_I64, WK_BOOL};
#define N_DT ((int)(sizeof ALL_DT / sizeof ALL_DT[0]))

static bool is_float(wk_dtype dt) { return wk_dtype_is_floating(dt); }

/* ---- calling helpers ---------------------------------------------------------------------- */
static wk_tensor *call1(const char *op, const wk_value *a, int n) {
  wk_value o[WK_MAX_OUTS];
  if (wk_call(op, a, n, o) != WK_OK) return NULL;
  return o[0].u.t;
}
static wk_tensor *call2(const char *op, const wk_value *a, int n, wk_tensor **second) {
  wk_value o[WK_MAX_OUTS];
  *second = NULL;
  if (wk_call(op, a, n, o) != WK_OK) return NULL;
  *second = o[1].u.t;
  return o[0].u.t;
}

static double tol_r(wk_dtype dt) {
  switch (dt) {
    case WK_F64: return 1e-12;
    case WK_F32: return 1e-5;
    case WK_F16: return 1e-2;
    case WK_BF16: return 2e-2;
    default: return 0;
  }
}

/* ---- float64 references ------------------------------------------------------------------- */
typedef double (*ref_fn)(const double *v, int64_t n, double arg);

static double r_sum(const double *v, int64_t n, double a) {
  (void)a;
  double s = 0;
  for (int64_t i = 0; i < n; i++) s += v[i];
  return s;
}
static double r_prod(const double *v, int64_t n, double a) {
  (void)a;
  double s = 1;
  for (int64_t i = 0; i < n; i++) s *= v[i];
  return s;
}
static double r_mean(const double *v, int64_t n, double a) { return r_sum(v, n, a) / (double)n; }
/* Index of the first NaN, else of the first extreme element; -1 when empty. */
static int64_t r_argext(const double *v, int64_t n, bool mx) {
  int64_t best = -1;
  for (int64_t i = 0; i < n; i++) {
    if (isnan(v[i])) return i;
    if (best < 0 || (mx ? v[i] > v[best] : v[i] < v[best])) best = i;
  }
  return best;
}
static double r_max(const double *v, int64_t n, double a) {
  (void)a;
  return v[r_argext(v, n, true)];
}
static double r_min(const double *v, int64_t n, double a) {
  (void)a;
  return v[r_argext(v, n, false)];
}
static double r_argmax(const double *v, int64_t n, double a) {
  (void)a;
  return (double)r_argext(v, n, true);
}
static double r_argmin(const double *v, int64_t n, double a) {
  (void)a;
  return (double)r_argext(v, n, false);
}
static double r_var(const double *v, int64_t n, double corr) {
  double m = r_mean(v, n, 0), ss = 0;
  for (int64_t i = 0; i < n; i++) ss += (v[i] - m) * (v[i] - m);
  double dof = (double)n - corr;
  return ss / (dof > 0 ? dof : 0);
}
static double r_std(const double *v, int64_t n, double corr) { return sqrt(r_var(v, n, corr)); }
static double r_norm(const double *v, int64_t n, double p) {
  double s = 0;
  if (isinf(p)) {
    s = fabs(v[0]);
    for (int64_t i = 0; i < n; i++) {
      if (isnan(v[i])) return NAN;
      if (p > 0 ? fabs(v[i]) > s : fabs(v[i]) < s) s = fabs(v[i]);
    }
    return s;
  }
  for (int64_t i = 0; i < n; i++) s += p == 0 ? (v[i] != 0) : pow(fabs(v[i]), p);
  return p == 0 ? s : pow(s, 1 / p);
}
static double r_lse(const double *v, int64_t n, double a) {
  (void)a;
  double m = -INFINITY;
  for (int64_t i = 0; i < n; i++) {
    if (isnan(v[i])) return NAN;
    if (v[i] > m) m = v[i];
  }
  if (isinf(m)) return m;
  double s = 0;
  for (int64_t i = 0; i < n; i++) s += exp(v[i] - m);
  return m + log(s);
}
static double r_all(const double *v, int64_t n, double a) {
  (void)a;
  for (int64_t i = 0; i < n; i++)
    if (v[i] == 0) return 0;
  return 1;
}
static double r_any(const double *v, int64_t n, double a) {
  (void)a;
  for (int64_t i = 0; i < n; i++)
    if (v[i] != 0) return 1;
  return 0;
}

/* Reduces x's values (read back as doubles) over the dims marked in red with f;
 * the rows come out in row-major order of the kept dims, each row's values in
 * row-major order of the reduced dims. Returns malloc'd results. */
static double *ref_reduce(wk_tensor *x, const bool *red, ref_fn f, double arg, int64_t *nrows) {
  int nd = wk_tensor_dim(x);
  const int64_t *sz = wk_tensor_sizes(x);
  int64_t rows = 1, n = 1, total = wk_tensor_numel(x);
  for (int d = 0; d < nd; d++) {
    if (red[d])
      n *= sz[d];
    else
      rows *= sz[d];
  }
  double *v = tu_values(x), *buf = malloc(sizeof(double) * (size_t)(total + 1));
  int64_t *cnt = calloc((size_t)rows + 1, sizeof(int64_t)), idx[WK_MAX_DIMS] = {0};
  for (int64_t k = 0; k < total; k++) {
    int64_t o = 0;
    for (int d = 0; d < nd; d++)
      if (!red[d]) o = o * sz[d] + idx[d];
    buf[o * n + cnt[o]++] = v[k];
    for (int d = nd - 1; d >= 0; d--) {
      if (++idx[d] < sz[d]) break;
      idx[d] = 0;
    }
  }
  double *out = malloc(sizeof(double) * (size_t)(rows + 1));
  for (int64_t o = 0; o < rows; o++) out[o] = f(buf + o * n, n, arg);
  free(v);
  free(buf);
  free(cnt);
  *nrows = rows;
  return out;
}

/* ---- random cases --------------------------------------------------------------------------- */
typedef struct {
  int nd;
  int64_t sz[WK_MAX_DIMS];
  bool red[WK_MAX_DIMS];
  int64_t dims[WK_MAX_DIMS];
  int ndims;    /* dims passed; 0 with all_dims: None or [] */
  bool keepdim;
} rcase;

static int64_t rnd(uint64_t *s, int64_t n) { return (int64_t)(tu_uniform(s) * (double)n); }

/* A random shape (0-4 dims of 0-4 elements, size 0 now and then) and reduced
 * dims: one dim when single, else a random subset (an empty subset means all),
 * each given negative half of the time, in random order. */
static void make_case(uint64_t *s, rcase *c, bool single) {
  memset(c, 0, sizeof *c);
  c->nd = (int)rnd(s, 5);
  for (int d = 0; d < c->nd; d++) c->sz[d] = rnd(s, 12) == 0 ? 0 : 1 + rnd(s, 4);
  c->keepdim = rnd(s, 2);
  if (single) {
    int64_t n = c->nd > 0 ? c->nd : 1, d = rnd(s, n);
    if (c->nd > 0) c->red[d] = true;
    c->dims[0] = rnd(s, 2) ? d - n : d;
    c->ndims = 1;
    return;
  }
  for (int d = 0; d < c->nd; d++)
    if (rnd(s, 2)) {
      c->red[d] = true;
      c->dims[c->ndims++] = rnd(s, 2) ? d - c->nd : d;
    }
  for (int i = c->ndims - 1; i > 0; i--) { /* shuffle: order must not matter */
    int j = (int)rnd(s, i + 1);
    int64_t t = c->dims[i];
    c->dims[i] = c->dims[j];
    c->dims[j] = t;
  }
  if (c->ndims == 0)
    for (int d = 0; d < c->nd; d++) c->red[d] = true;
}

/* A tensor whose values sit in every other element of a larger buffer. */
static wk_tensor *strided_copy(wk_tensor *t) {
  int nd = wk_tensor_dim(t);
  if (nd == 0) return wk_retain(t);
  int64_t big[WK_MAX_DIMS];
  memcpy(big, wk_tensor_sizes(t), sizeof(int64_t) * (size_t)nd);
  big[nd - 1] = big[nd - 1] * 2 + 1;
  wk_tensor *b = wk_empty(big, nd, (wk_options){.dtype = wk_tensor_dtype(t)});
  wk_tensor *v = wk_slice(b, nd - 1, 1, big[nd - 1], 2);
  wk_copy_(v, t);
  wk_release(b);
  return v;
}

/* Same values, stored with the first and last dims swapped (non-contiguous). */
static wk_tensor *swapped_copy(wk_tensor *t) {
  int nd = wk_tensor_dim(t);
  if (nd < 2) return strided_copy(t);
  wk_tensor *tr = wk_transpose(t, 0, nd - 1), *c = wk_clone(tr);
  wk_tensor *back = wk_transpose(c, 0, nd - 1);
  wk_release(tr);
  wk_release(c);
  return back;
}

typedef enum { V_SMOOTH, V_STEPS, V_NEAR1, V_TINYINT } vkind;

/* Random input for a case: smooth values, or few distinct values (ties, zeros),
 * or values near 1 (products); NaNs sprinkled into float inputs when nans;
 * layout 0 contiguous, 1 strided, 2 swapped. */
static wk_tensor *make_input(const int64_t *sz, int nd, wk_dtype dt, uint64_t seed, vkind vk, bool nans, int layout) {
  int64_t n = 1;
  for (int d = 0; d < nd; d++) n *= sz[d];
  double *v = malloc(sizeof(double) * (size_t)(n + 1));
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 12345;
  for (int64_t i = 0; i < n; i++) {
    double u = tu_uniform(&s), x;
    if (dt == WK_BOOL) x = u < 0.6;
    else if (vk == V_STEPS || vk == V_TINYINT) x = floor(u * 3) - (dt == WK_U8 ? 0 : 1);
    else if (vk == V_NEAR1) x = is_float(dt) ? 0.8 + 0.45 * u : (dt == WK_U8 ? 1 : floor(u * 3) - 1);
    else x = is_float(dt) ? -3 + 6 * u : floor(u * 10) - (dt == WK_U8 ? 0 : 5);
    if (nans && is_float(dt) && tu_uniform(&s) < 0.08) x = NAN;
    v[i] = x;
  }
  wk_tensor *f = wk_tensor_from_data(v, WK_F64, sz, nd), *t = wk_to_dtype(f, dt);
  wk_release(f);
  free(v);
  if (layout == 0) return t;
  wk_tensor *r = layout == 1 ? strided_copy(t) : swapped_copy(t);
  wk_release(t);
  return r;
}

/* Asserts result shape and values against ref_reduce of x. */
static void check_result(wk_tensor *out, wk_tensor *x, const rcase *c, ref_fn f, double arg, wk_dtype want_dt,
                         double rtol, double atol, const char *what, int seed) {
  ck_assert_msg(out != NULL, "%s seed %d (%s): %s", what, seed, wk_dtype_name(wk_tensor_dtype(x)),
                wk_last_error_message());
  ck_assert_msg(wk_tensor_dtype(out) == want_dt, "%s seed %d: dtype %s, expected %s", what, seed,
                wk_dtype_name(wk_tensor_dtype(out)), wk_dtype_name(want_dt));
  int64_t shape[WK_MAX_DIMS];
  int snd = 0;
  for (int d = 0; d < c->nd; d++) {
    if (!c->red[d])
      shape[snd++] = c->sz[d];
    else if (c->keepdim)
      shape[snd++] = 1;
  }
  ck_assert_msg(wk_tensor_dim(out) == snd, "%s seed %d: %d dims, expected %d", what, seed, wk_tensor_dim(out), snd);
  for (int d = 0; d < snd; d++) ck_assert_int_eq(wk_tensor_size(out, d), shape[d]);
  int64_t rows;
  double *ref = ref_reduce(x, c->red, f, arg, &rows);
  if (want_dt == WK_F16) /* beyond half's range the result rounds to inf */
    for (int64_t i = 0; i < rows; i++)
      if (fabs(ref[i]) >= 65520) ref[i] = copysign(INFINITY, ref[i]);
  tu_assert_close_(out, ref, rows, rtol, atol, what, seed);
  free(ref);
}

static int64_t red_count(const rcase *c) {
  int64_t n = 1;
  for (int d = 0; d < c->nd; d++)
    if (c->red[d]) n *= c->sz[d];
  return n;
}

#define NSEED 24

/* ---- sum, mean, prod ------------------------------------------------------------------------- */
START_TEST(test_reduce_sum_dim_sweep) {
  int64_t live = wk_live_tensors();
  for (int k = 0; k < N_DT; k++) {
    wk_dtype dt = ALL_DT[k];
    for (int seed = 1; seed <= NSEED; seed++) {
      uint64_t s = (uint64_t)seed * 7 + (uint64_t)k;
      rcase c;
      make_case(&s, &c, false);
      wk_tensor *x = make_input(c.sz, c.nd, dt, (uint64_t)seed, V_SMOOTH, seed % 5 == 0, seed % 3);
      bool none = c.ndims == 0 && seed % 2;
      wk_dtype given = seed % 4 == 1 ? WK_F64 : WK_DTYPE_DEFAULT;
      wk_value a[] = {WK_VT(x), none ? WK_VNONE : WK_VINTS(c.dims, c.ndims), WK_VB(c.keepdim), WK_VDT(given)};
      wk_tensor *out = call1("sum.dim_IntList", a, 4);
      wk_dtype want = given ? given : is_float(dt) ? dt : WK_I64;
      check_result(out, x, &c, r_sum, 0, want, tol_r(want), tol_r(want), "sum.dim_IntList", seed);
      wk_release(out);
      wk_release(x);
    }
  }
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_reduce_mean_dim_sweep) {
  int64_t live = wk_live_tensors();
  for (int k = 0; k < N_DT; k++) {
    wk_dtype dt = ALL_DT[k];
    for (int seed = 1; seed <= NSEED; seed++) {
      uint64_t s = (uint64_t)seed * 11 + (uint64_t)k;
      rcase c;
      make_case(&s, &c, false);
      wk_tensor *x = make_input(c.sz, c.nd, dt, (uint64_t)seed + 100, V_SMOOTH, seed % 5 == 0, seed % 3);
      wk_dtype given = !is_float(dt) && seed % 2 ? WK_F32 : seed % 5 == 1 ? WK_F64 : WK_DTYPE_DEFAULT;
      wk_value a[] = {WK_VT(x), WK_VINTS(c.dims, c.ndims), WK_VB(c.keepdim), WK_VDT(given)};
      wk_tensor *out = call1("mean.dim", a, 4);
      if (!is_float(dt) && !given) {
        ck_assert_ptr_null(out);
        TU_FAILS_WITH(WK_ERR_DTYPE, "Input dtype must be either a floating point or complex dtype");
      } else {
        wk_dtype want = given ? given : dt;
        check_result(out, x, &c, r_mean, 0, want, tol_r(want), tol_r(want), "mean.dim", seed);
      }
      wk_release(out);
      wk_release(x);
    }
  }
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_reduce_prod_dim_sweep) {
  int64_t live = wk_live_tensors();
  for (int k = 0; k < N_DT; k++) {
    wk_dtype dt = ALL_DT[k];
    for (int seed = 1; seed <= NSEED; seed++) {
      uint64_t s = (uint64_t)seed * 13 + (uint64_t)k;
      rcase c;
      make_case(&s, &c, true);
      wk_tensor *x = make_input(c.sz, c.nd, dt, (uint64_t)seed + 200, seed % 2 ? V_NEAR1 : V_SMOOTH, seed % 6 == 0,
                                seed % 3);
      wk_dtype given = seed % 4 == 1 ? WK_F64 : WK_DTYPE_DEFAULT;
      wk_value a[] = {WK_VT(x), WK_VI(c.dims[0]), WK_VB(c.keepdim), WK_VDT(given)};
      wk_tensor *out = call1("prod.dim_int", a, 4);
      wk_dtype want = given ? given : is_float(dt) ? dt : WK_I64;
      check_result(out, x, &c, r_prod, 0, want, tol_r(want), tol_r(want), "prod.dim_int", seed);
      wk_release(out);
      wk_release(x);
    }
  }
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* sum, mean, prod, max, min, all, any, argmax/argmin (dim None) over every element. */
START_TEST(test_reduce_full_sweep) {
  int64_t live = wk_live_tensors();
  for (int k = 0; k < N_DT; k++) {
    wk_dtype dt = ALL_DT[k];
    for (int seed = 1; seed <= NSEED; seed++) {
      uint64_t s = (uint64_t)seed * 17 + (uint64_t)k;
      rcase c;
      make_case(&s, &c, false);
      c.ndims = 0;
      c.keepdim = false;
      for (int d = 0; d < c.nd; d++) c.red[d] = true;
      int64_t n = red_count(&c);
      bool nans = seed % 4 == 0;
      wk_tensor *x = make_input(c.sz, c.nd, dt, (uint64_t)seed + 300, seed % 2 ? V_STEPS : V_SMOOTH, nans, seed % 3);
      wk_tensor *px = make_input(c.sz, c.nd, dt, (uint64_t)seed + 301, V_NEAR1, nans, seed % 3);
      wk_dtype acc = is_float(dt) ? dt : WK_I64;
      wk_tensor *o;
      o = wk_sum(x);
      check_result(o, x, &c, r_sum, 0, acc, tol_r(acc), tol_r(acc), "sum", seed);
      wk_release(o);
      o = wk_prod(px);
      check_result(o, px, &c, r_prod, 0, acc, tol_r(acc), tol_r(acc), "prod", seed);
      wk_release(o);
      o = wk_mean(x);
      if (is_float(dt)) {
        check_result(o, x, &c, r_mean, 0, dt, tol_r(dt), tol_r(dt), "mean", seed);
      } else {
        ck_assert_ptr_null(o);
        TU_FAILS_WITH(WK_ERR_DTYPE, "could not infer output dtype");
      }
      wk_release(o);
      wk_dtype bt = dt == WK_U8 ? WK_U8 : WK_BOOL;
      o = wk_all(x);
      check_result(o, x, &c, r_all, 0, bt, 0, 0, "all", seed);
      wk_release(o);
      o = wk_any(x);
      check_result(o, x, &c, r_any, 0, bt, 0, 0, "any", seed);
      wk_release(o);
      const char *names[4] = {"max", "min", "argmax", "argmin"};
      ref_fn fns[4] = {r_max, r_min, r_argmax, r_argmin};
      for (int m = 0; m < 4; m++) {
        wk_value a[] = {WK_VT(x)};
        o = call1(names[m], a, 1);
        if (m >= 2 && dt == WK_BOOL) {
          ck_assert_ptr_null(o);
          TU_FAILS_WITH(WK_ERR_DTYPE, "not implemented for 'Bool'");
        } else if (n == 0) {
          ck_assert_ptr_null(o);
          TU_FAILS_WITH(m >= 2 ? WK_ERR_INDEX : WK_ERR_INVALID_ARG, "Expected reduction dim to be specified");
        } else {
          check_result(o, x, &c, fns[m], 0, m >= 2 ? WK_I64 : dt, 0, 0, names[m], seed);
        }
        wk_release(o);
      }
      wk_release(x);
      wk_release(px);
    }
  }
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- max.dim, min.dim, argmax, argmin with a dim ----------------------------------------------- */
START_TEST(test_reduce_extreme_dim_sweep) {
  int64_t live = wk_live_tensors();
  for (int k = 0; k < N_DT; k++) {
    wk_dtype dt = ALL_DT[k];
    for (int seed = 1; seed <= NSEED; seed++) {
      uint64_t s = (uint64_t)seed * 19 + (uint64_t)k;
      rcase c;
      make_case(&s, &c, true);
      wk_tensor *x = make_input(c.sz, c.nd, dt, (uint64_t)seed + 400, seed % 2 ? V_STEPS : V_SMOOTH, seed % 3 == 0,
                                seed % 3);
      bool empty = red_count(&c) == 0;
      for (int m = 0; m < 2; m++) {
        wk_value a[] = {WK_VT(x), WK_VI(c.dims[0]), WK_VB(c.keepdim)};
        wk_tensor *idx, *vals = call2(m ? "min.dim" : "max.dim", a, 3, &idx);
        if (empty) {
          ck_assert_ptr_null(vals);
          TU_FAILS_WITH(WK_ERR_INDEX, "to have non-zero size");
        } else {
          check_result(vals, x, &c, m ? r_min : r_max, 0, dt, 0, 0, m ? "min.dim values" : "max.dim values", seed);
          check_result(idx, x, &c, m ? r_argmin : r_argmax, 0, WK_I64, 0, 0, "max/min.dim indices", seed);
        }
        wk_release(vals);
        wk_release(idx);
        wk_tensor *o = call1(m ? "argmin" : "argmax", a, 3);
        if (dt == WK_BOOL) {
          ck_assert_ptr_null(o);
          TU_FAILS_WITH(WK_ERR_DTYPE, "not implemented for 'Bool'");
        } else if (empty) {
          ck_assert_ptr_null(o);
          TU_FAILS_WITH(WK_ERR_INDEX, "to have non-zero size");
        } else {
          check_result(o, x, &c, m ? r_argmin : r_argmax, 0, WK_I64, 0, 0, "argmax/argmin", seed);
        }
        wk_release(o);
      }
      wk_release(x);
    }
  }
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- var, std, norm, logsumexp ------------------------------------------------------------------- */
START_TEST(test_reduce_var_std_sweep) {
  int64_t live = wk_live_tensors();
  for (int k = 0; k < N_DT; k++) {
    wk_dtype dt = ALL_DT[k];
    for (int seed = 1; seed <= NSEED; seed++) {
      uint64_t s = (uint64_t)seed * 23 + (uint64_t)k;
      rcase c;
      make_case(&s, &c, false);
      wk_tensor *x = make_input(c.sz, c.nd, dt, (uint64_t)seed + 500, V_SMOOTH, seed % 5 == 0, seed % 3);
      int64_t corr = seed % 4 == 0 ? 0 : seed % 4 == 1 ? 1 : seed % 4 == 2 ? 2 : -1;
      bool none = c.ndims == 0 && seed % 2;
      for (int m = 0; m < 2; m++) {
        wk_value a[] = {WK_VT(x), none ? WK_VNONE : WK_VINTS(c.dims, c.ndims), WK_VI(corr), WK_VB(c.keepdim)};
        wk_tensor *o = call1(m ? "std.correction" : "var.correction", a, 4);
        if (!is_float(dt)) {
          ck_assert_ptr_null(o);
          TU_FAILS_WITH(WK_ERR_DTYPE, "std and var only support floating point");
        } else {
          check_result(o, x, &c, m ? r_std : r_var, (double)corr, dt, tol_r(dt), tol_r(dt), m ? "std" : "var", seed);
        }
        wk_release(o);
      }
      wk_release(x);
    }
  }
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_reduce_norm_sweep) {
  static const double ps[] = {2, 1, INFINITY, -INFINITY, 0, 3, 0.5, -1};
  int64_t live = wk_live_tensors();
  for (int k = 0; k < N_DT; k++) {
    wk_dtype dt = ALL_DT[k];
    for (int seed = 1; seed <= NSEED * 2; seed++) {
      uint64_t s = (uint64_t)seed * 29 + (uint64_t)k;
      rcase c;
      make_case(&s, &c, false);
      double p = ps[seed % 8];
      wk_tensor *x = make_input(c.sz, c.nd, dt, (uint64_t)seed + 600, seed % 3 ? V_SMOOTH : V_STEPS, seed % 7 == 0,
                                seed % 3);
      bool none = c.ndims == 0 && seed % 2;
      wk_value a[] = {WK_VT(x), (seed % 8 == 0) ? WK_VI(2) : WK_VF(p), none ? WK_VNONE : WK_VINTS(c.dims, c.ndims),
                      WK_VB(c.keepdim)};
      wk_tensor *o = call1("norm", a, 4);
      if (!is_float(dt)) {
        ck_assert_ptr_null(o);
        TU_FAILS_WITH(WK_ERR_DTYPE, "Expected a floating point or complex tensor as input. Got");
      } else if (red_count(&c) == 0 && (p < 0 || isinf(p))) {
        ck_assert_ptr_null(o);
        TU_FAILS_WITH(WK_ERR_INVALID_ARG, "norm on an empty tensor");
      } else {
        check_result(o, x, &c, r_norm, p, dt, tol_r(dt) * 2, tol_r(dt), "norm", seed);
      }
      wk_release(o);
      wk_release(x);
    }
  }
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_reduce_logsumexp_sweep) {
  int64_t live = wk_live_tensors();
  for (int k = 0; k < N_DT; k++) {
    wk_dtype dt = ALL_DT[k];
    for (int seed = 1; seed <= NSEED; seed++) {
      uint64_t s = (uint64_t)seed * 31 + (uint64_t)k;
      rcase c;
      make_case(&s, &c, false);
      wk_tensor *x = make_input(c.sz, c.nd, dt, (uint64_t)seed + 700, V_SMOOTH, seed % 5 == 0, seed % 3);
      wk_value a[] = {WK_VT(x), WK_VINTS(c.dims, c.ndims), WK_VB(c.keepdim)};
      wk_tensor *o = call1("logsumexp", a, 3);
      wk_dtype want = is_float(dt) ? dt : WK_F32;
      check_result(o, x, &c, r_lse, 0, want, tol_r(want), tol_r(want), "logsumexp", seed);
      wk_release(o);
      wk_release(x);
    }
  }
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- all.dim, any.dim --------------------------------------------------------------------------- */
START_TEST(test_reduce_all_any_dim_sweep) {
  int64_t live = wk_live_tensors();
  for (int k = 0; k < N_DT; k++) {
    wk_dtype dt = ALL_DT[k];
    for (int seed = 1; seed <= NSEED; seed++) {
      uint64_t s = (uint64_t)seed * 37 + (uint64_t)k;
      rcase c;
      make_case(&s, &c, true);
      wk_tensor *x = make_input(c.sz, c.nd, dt, (uint64_t)seed + 800, V_STEPS, seed % 4 == 0, seed % 3);
      wk_dtype bt = dt == WK_U8 ? WK_U8 : WK_BOOL;
      for (int m = 0; m < 2; m++) {
        wk_value a[] = {WK_VT(x), WK_VI(c.dims[0]), WK_VB(c.keepdim)};
        wk_tensor *o = call1(m ? "any.dim" : "all.dim", a, 3);
        check_result(o, x, &c, m ? r_any : r_all, 0, bt, 0, 0, m ? "any.dim" : "all.dim", seed);
        wk_release(o);
      }
      wk_release(x);
    }
  }
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- cumsum --------------------------------------------------------------------------------------- */
START_TEST(test_reduce_cumsum_sweep) {
  int64_t live = wk_live_tensors();
  for (int k = 0; k < N_DT; k++) {
    wk_dtype dt = ALL_DT[k];
    for (int seed = 1; seed <= NSEED; seed++) {
      uint64_t s = (uint64_t)seed * 41 + (uint64_t)k;
      rcase c;
      make_case(&s, &c, true);
      wk_tensor *x = make_input(c.sz, c.nd, dt, (uint64_t)seed + 900, V_SMOOTH, seed % 5 == 0, seed % 3);
      wk_dtype given = seed % 4 == 1 ? WK_F64 : WK_DTYPE_DEFAULT;
      wk_value a[] = {WK_VT(x), WK_VI(c.dims[0]), WK_VDT(given)};
      wk_tensor *o = call1("cumsum", a, 3);
      wk_dtype want = given ? given : is_float(dt) ? dt : WK_I64;
      ck_assert_msg(o != NULL, "cumsum seed %d: %s", seed, wk_last_error_message());
      ck_assert_int_eq(wk_tensor_dtype(o), want);
      ck_assert_int_eq(wk_tensor_dim(o), c.nd);
      for (int d = 0; d < c.nd; d++) ck_assert_int_eq(wk_tensor_size(o, d), c.sz[d]);
      /* Reference: running sums along the dim, over row-major values. */
      int64_t n = wk_tensor_numel(x), inner = 1, len = c.nd ? c.sz[0] : 1;
      int dd = 0;
      for (int d = 0; d < c.nd; d++)
        if (c.red[d]) dd = d;
      if (c.nd) {
        len = c.sz[dd];
        for (int d = dd + 1; d < c.nd; d++) inner *= c.sz[d];
      }
      double *v = tu_values(x), *ref = malloc(sizeof(double) * (size_t)(n + 1));
      for (int64_t i = 0; i < n; i++) {
        int64_t pos = (i / inner) % (len ? len : 1);
        ref[i] = v[i] + (pos > 0 ? ref[i - inner] : 0);
      }
      tu_assert_close_(o, ref, n, tol_r(want), tol_r(want), "cumsum", seed);
      free(v);
      free(ref);
      wk_release(o);
      wk_release(x);
    }
  }
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_reduce_cumsum_values) {
  int64_t live = wk_live_tensors();
  wk_tensor *x = TU_T(WK_I8, (2, 3), 100, 100, 100, -1, 2, 3);
  wk_tensor *o = wk_cumsum(x, 1);
  ck_assert_int_eq(wk_tensor_dtype(o), WK_I64);
  TU_EQ_VALS(o, 100, 200, 300, -1, 1, 4);
  wk_release(o);
  o = wk_cumsum(x, -2);
  TU_EQ_VALS(o, 100, 100, 100, 99, 102, 103);
  wk_release(o);
  wk_tensor *t = wk_t(x);
  o = wk_cumsum(t, 0); /* rows of the transpose are columns of x */
  TU_EQ_VALS(o, 100, -1, 200, 1, 300, 4);
  ck_assert(wk_tensor_is_contiguous(o));
  wk_release(o);
  wk_release(t);
  wk_tensor *b = TU_T(WK_BOOL, (4), 1, 0, 1, 1);
  o = wk_cumsum(b, 0);
  ck_assert_int_eq(wk_tensor_dtype(o), WK_I64);
  TU_EQ_VALS(o, 1, 1, 2, 3);
  wk_release(o);
  wk_tensor *sc = wk_scalar_tensor(2.5, WK_F32);
  o = wk_cumsum(sc, -1);
  ck_assert_int_eq(wk_tensor_dim(o), 0);
  TU_EQ_VALS(o, 2.5);
  wk_release(o);
  ck_assert_ptr_null(wk_cumsum(x, 2));
  TU_FAILS_WITH(WK_ERR_INDEX, "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  ck_assert_ptr_null(wk_cumsum(sc, 1));
  TU_FAILS_WITH(WK_ERR_INDEX, "out of range");
  ck_assert_ptr_null(wk_cumsum(NULL, 0));
  TU_FAILS_WITH(WK_ERR_NULL, "NULL");
  wk_release(sc);
  wk_release(b);
  wk_release(x);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- dtype rules and hand-checked values ------------------------------------------------------ */
START_TEST(test_reduce_result_dtypes) {
  int64_t live = wk_live_tensors();
  wk_tensor *i8 = TU_T(WK_I8, (3), 100, 100, 100);
  wk_tensor *o = wk_sum(i8); /* no int8 overflow: integers sum in int64 */
  ck_assert_int_eq(wk_tensor_dtype(o), WK_I64);
  ck_assert_int_eq(wk_tensor_dim(o), 0);
  TU_EQ_VALS(o, 300);
  wk_release(o);
  o = wk_prod(i8);
  ck_assert_int_eq(wk_tensor_dtype(o), WK_I64);
  TU_EQ_VALS(o, 1000000);
  wk_release(o);
  wk_tensor *b = TU_T(WK_BOOL, (2, 2), 1, 0, 1, 1);
  o = wk_sum(b);
  ck_assert_int_eq(wk_tensor_dtype(o), WK_I64);
  TU_EQ_VALS(o, 3);
  wk_release(o);
  o = wk_prod(b);
  ck_assert_int_eq(wk_tensor_dtype(o), WK_I64);
  TU_EQ_VALS(o, 0);
  wk_release(o);
  o = wk_max(b);
  ck_assert_int_eq(wk_tensor_dtype(o), WK_BOOL);
  TU_EQ_VALS(o, 1);
  wk_release(o);
  /* dtype= converts the input first: 1.5 + 2.5 - 1.5 as int64 is 1 + 2 - 1. */
  wk_tensor *f = TU_T(WK_F32, (3), 1.5, 2.5, -1.5);
  wk_value a[] = {WK_VT(f), WK_VDT(WK_I64)};
  o = call1("sum", a, 2);
  ck_assert_int_eq(wk_tensor_dtype(o), WK_I64);
  TU_EQ_VALS(o, 2);
  wk_release(o);
  wk_value a2[] = {WK_VT(i8), WK_VDT(WK_F16)};
  o = call1("prod", a2, 2);
  ck_assert_int_eq(wk_tensor_dtype(o), WK_F16);
  TU_EQ_VALS(o, INFINITY); /* 1e6 overflows half */
  wk_release(o);
  wk_value a3[] = {WK_VT(i8), WK_VDT(WK_F64)};
  o = call1("mean", a3, 2);
  ck_assert_int_eq(wk_tensor_dtype(o), WK_F64);
  TU_EQ_VALS(o, 100);
  wk_release(o);
  wk_value a4[] = {WK_VT(f), WK_VDT(WK_I32)};
  ck_assert_ptr_null(call1("mean", a4, 2));
  TU_FAILS_WITH(WK_ERR_DTYPE, "Optional dtype must be either a floating point or complex dtype. Got: Int");
  wk_tensor *l = TU_T(WK_I64, (2), 1, 2);
  ck_assert_ptr_null(wk_mean(l));
  TU_FAILS_WITH(WK_ERR_DTYPE,
                "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. "
                "Got: Long");
  /* int64 sums are exact beyond 2^53 and wrap like PyTorch's. */
  int64_t bigv[2] = {((int64_t)1 << 53) + 1, 2};
  wk_tensor *big = wk_tensor_from_data(bigv, WK_I64, WK_SHAPE(2));
  o = wk_sum(big);
  int64_t got;
  TU_OK(wk_item_i64(o, &got));
  ck_assert_int_eq(got, ((int64_t)1 << 53) + 3);
  wk_release(o);
  o = wk_max(big);
  TU_OK(wk_item_i64(o, &got));
  ck_assert_int_eq(got, ((int64_t)1 << 53) + 1);
  wk_release(o);
  int64_t wrapv[2] = {INT64_MAX, 2};
  wk_tensor *wrap = wk_tensor_from_data(wrapv, WK_I64, WK_SHAPE(2));
  o = wk_sum(wrap);
  TU_OK(wk_item_i64(o, &got));
  ck_assert_int_eq(got, INT64_MIN + 1);
  wk_release(o);
  wk_release(wrap);
  wk_release(big);
  wk_release(l);
  wk_release(f);
  wk_release(b);
  wk_release(i8);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_reduce_nan_and_ties) {
  int64_t live = wk_live_tensors();
  wk_tensor *x = TU_T(WK_F32, (2, 4), 1, NAN, 3, NAN, 2, 5, 5, 1), *idx;
  wk_tensor *v = wk_max_dim(x, 1, false, &idx);
  TU_EQ_VALS(v, NAN, 5);
  TU_EQ_VALS(idx, 1, 1);
  wk_release(v);
  wk_release(idx);
  v = wk_min_dim(x, 1, true, &idx);
  ck_assert_int_eq(wk_tensor_dim(v), 2);
  ck_assert_int_eq(wk_tensor_size(v, 1), 1);
  TU_EQ_VALS(v, NAN, 1);
  TU_EQ_VALS(idx, 1, 3);
  wk_release(v);
  wk_release(idx);
  v = wk_argmin_dim(x, 0, false);
  TU_EQ_VALS(v, 0, 0, 0, 0);
  wk_release(v);
  v = wk_max(x);
  TU_EQ_VALS(v, NAN);
  wk_release(v);
  v = wk_argmax(x);
  TU_EQ_VALS(v, 1);
  wk_release(v);
  v = wk_sum(x);
  TU_EQ_VALS(v, NAN);
  wk_release(v);
  v = wk_norm(x, INFINITY, (int64_t[]){1}, 1, false);
  TU_EQ_VALS(v, NAN, 5);
  wk_release(v);
  v = wk_all(x); /* NaN is true */
  TU_EQ_VALS(v, 1);
  wk_release(v);
  /* Ties go to the first index; argmax with dim None flattens; keepdim keeps 1s. */
  wk_tensor *t = TU_T(WK_I32, (2, 2), 1, 9, 9, 2);
  v = wk_argmax(t);
  ck_assert_int_eq(wk_tensor_dim(v), 0);
  TU_EQ_VALS(v, 1);
  wk_release(v);
  wk_value a[] = {WK_VT(t), WK_VNONE, WK_VB(true)};
  v = call1("argmax", a, 3);
  ck_assert_int_eq(wk_tensor_dim(v), 2);
  ck_assert_int_eq(wk_tensor_size(v, 0), 1);
  ck_assert_int_eq(wk_tensor_size(v, 1), 1);
  TU_EQ_VALS(v, 1);
  wk_release(v);
  v = wk_argmin_dim(t, -1, true);
  TU_EQ_VALS(v, 0, 1);
  wk_release(v);
  wk_release(t);
  wk_release(x);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_reduce_var_norm_lse_values) {
  int64_t live = wk_live_tensors();
  wk_tensor *one = TU_T(WK_F64, (1), 1), *two = TU_T(WK_F64, (2), 1, 2), *o;
  o = wk_var(one, NULL, 0, 1, false); /* N - 1 = 0: 0/0 */
  TU_EQ_VALS(o, NAN);
  wk_release(o);
  o = wk_var(two, NULL, 0, 2, false); /* 0.5 / 0 */
  TU_EQ_VALS(o, INFINITY);
  wk_release(o);
  o = wk_var(two, NULL, 0, 3, false); /* max(0, N - c) */
  TU_EQ_VALS(o, INFINITY);
  wk_release(o);
  o = wk_var(two, NULL, 0, 0, false);
  TU_EQ_VALS(o, 0.25);
  wk_release(o);
  o = wk_std(two, (int64_t[]){0}, 1, 1, true);
  ck_assert_int_eq(wk_tensor_dim(o), 1);
  TU_EQ_VALS(o, sqrt(0.5));
  wk_release(o);
  wk_value dv[] = {WK_VT(two)}; /* defaults: dim None, correction 1 */
  o = call1("var.correction", dv, 1);
  TU_EQ_VALS(o, 0.5);
  wk_release(o);
  wk_tensor *v = TU_T(WK_F32, (3), 3, -4, 0);
  static const double ps[] = {2, 1, INFINITY, -INFINITY, 0, 3};
  double want[] = {5, 7, 4, 0, 2, cbrt(91)};
  for (int i = 0; i < 6; i++) {
    o = wk_norm(v, ps[i], NULL, 0, false);
    tu_assert_close_(o, &want[i], 1, 1e-6, 0, "norm", i);
    wk_release(o);
  }
  wk_value nv[] = {WK_VT(v)}; /* default p = 2 */
  o = call1("norm", nv, 1);
  TU_EQ_VALS(o, 5);
  wk_release(o);
  wk_tensor *rows = TU_T(WK_F64, (4, 2), -INFINITY, -INFINITY, INFINITY, 1, 1000, 1000, 0, -INFINITY);
  o = wk_logsumexp(rows, (int64_t[]){1}, 1, false);
  TU_EQ_VALS(o, -INFINITY, INFINITY, 1000 + log(2.0), 0);
  wk_release(o);
  wk_tensor *empty = wk_empty(WK_SHAPE(2, 0), (wk_options){.dtype = WK_F32});
  o = wk_logsumexp(empty, (int64_t[]){1}, 1, false);
  TU_EQ_VALS(o, -INFINITY, -INFINITY);
  wk_release(o);
  o = wk_norm(empty, 2, (int64_t[]){1}, 1, false);
  TU_EQ_VALS(o, 0, 0);
  wk_release(o);
  o = wk_norm(empty, 2, (int64_t[]){0}, 1, false);
  ck_assert_int_eq(wk_tensor_numel(o), 0);
  wk_release(o);
  ck_assert_ptr_null(wk_norm(empty, INFINITY, (int64_t[]){1}, 1, false));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "inf norm on an empty tensor");
  o = wk_mean(empty);
  TU_EQ_VALS(o, NAN);
  wk_release(o);
  o = wk_prod_dim(empty, 1, true);
  ck_assert_int_eq(wk_tensor_size(o, 1), 1);
  TU_EQ_VALS(o, 1, 1);
  wk_release(o);
  o = wk_all_dim(empty, 1, false);
  TU_EQ_VALS(o, 1, 1);
  wk_release(o);
  o = wk_any(empty);
  TU_EQ_VALS(o, 0);
  wk_release(o);
  wk_tensor *ints = TU_T(WK_I64, (2), 1, 2);
  o = wk_logsumexp(ints, (int64_t[]){0}, 1, false); /* integers give float32 */
  ck_assert_int_eq(wk_tensor_dtype(o), WK_F32);
  tu_assert_close_(o, (double[]){2 + log1p(exp(-1.0))}, 1, 1e-6, 0, "logsumexp int", 0);
  wk_release(o);
  wk_tensor *u8 = TU_T(WK_U8, (2), 0, 3);
  o = wk_any(u8); /* uint8 in, uint8 out */
  ck_assert_int_eq(wk_tensor_dtype(o), WK_U8);
  TU_EQ_VALS(o, 1);
  wk_release(o);
  wk_release(u8);
  wk_release(ints);
  wk_release(empty);
  wk_release(rows);
  wk_release(v);
  wk_release(one);
  wk_release(two);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* 0-dim inputs: dims 0 and -1 are allowed and reduce nothing. */
START_TEST(test_reduce_zero_dim) {
  int64_t live = wk_live_tensors();
  wk_tensor *s = wk_scalar_tensor(-2.5, WK_F32), *o, *idx;
  o = wk_sum_dim(s, (int64_t[]){-1}, 1, true);
  ck_assert_int_eq(wk_tensor_dim(o), 0);
  TU_EQ_VALS(o, -2.5);
  wk_release(o);
  o = wk_max_dim(s, 0, true, &idx);
  ck_assert_int_eq(wk_tensor_dim(o), 0);
  TU_EQ_VALS(o, -2.5);
  TU_EQ_VALS(idx, 0);
  wk_release(o);
  wk_release(idx);
  o = wk_argmin_dim(s, -1, false);
  TU_EQ_VALS(o, 0);
  wk_release(o);
  o = wk_std(s, NULL, 0, 0, false);
  TU_EQ_VALS(o, 0);
  wk_release(o);
  o = wk_norm(s, 1, (int64_t[]){0}, 1, false);
  TU_EQ_VALS(o, 2.5);
  wk_release(o);
  o = wk_any_dim(s, 0, true);
  ck_assert_int_eq(wk_tensor_dtype(o), WK_BOOL);
  TU_EQ_VALS(o, 1);
  wk_release(o);
  ck_assert_ptr_null(wk_sum_dim(s, (int64_t[]){1}, 1, false));
  TU_FAILS_WITH(WK_ERR_INDEX, "expected to be in range of [-1, 0], but got 1");
  ck_assert_ptr_null(wk_sum_dim(s, (int64_t[]){0, -1}, 2, false));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "dim 0 appears multiple times in the list of dims");
  wk_release(s);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- errors ------------------------------------------------------------------------------------ */
START_TEST(test_reduce_errors) {
  int64_t live = wk_live_tensors();
  wk_tensor *x = tu_rand(WK_SHAPE(2, 3), WK_F32, -1, 1, 1), *idx;
  ck_assert_ptr_null(wk_sum_dim(x, (int64_t[]){2}, 1, false));
  TU_FAILS_WITH(WK_ERR_INDEX, "sum(): Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  ck_assert_ptr_null(wk_mean_dim(x, (int64_t[]){-3}, 1, false));
  TU_FAILS_WITH(WK_ERR_INDEX, "but got -3");
  ck_assert_ptr_null(wk_sum_dim(x, (int64_t[]){1, -1}, 2, false));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "dim 1 appears multiple times in the list of dims");
  ck_assert_ptr_null(wk_var(x, (int64_t[]){0, 0}, 2, 1, false));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "appears multiple times");
  ck_assert_ptr_null(wk_logsumexp(x, (int64_t[]){0, -2}, 2, false));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "appears multiple times");
  ck_assert_ptr_null(wk_max_dim(x, 5, false, &idx));
  ck_assert_ptr_null(idx);
  TU_FAILS_WITH(WK_ERR_INDEX, "out of range");
  ck_assert_ptr_null(wk_prod_dim(x, -3, false));
  TU_FAILS_WITH(WK_ERR_INDEX, "out of range");
  ck_assert_ptr_null(wk_all_dim(x, 2, false));
  TU_FAILS_WITH(WK_ERR_INDEX, "out of range");
  ck_assert_ptr_null(wk_argmax_dim(x, 2, false));
  TU_FAILS_WITH(WK_ERR_INDEX, "out of range");
  wk_tensor *e = wk_empty(WK_SHAPE(0, 3), (wk_options){.dtype = WK_F32});
  ck_assert_ptr_null(wk_max(e));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "max(): Expected reduction dim to be specified for input.numel() == 0");
  ck_assert_ptr_null(wk_min_dim(e, 0, false, &idx));
  TU_FAILS_WITH(WK_ERR_INDEX, "min(): Expected reduction dim 0 to have non-zero size");
  wk_tensor *v = wk_max_dim(e, 1, false, &idx); /* the reduced dim is not empty: fine */
  ck_assert_int_eq(wk_tensor_numel(v), 0);
  ck_assert_int_eq(wk_tensor_size(idx, 0), 0);
  wk_release(v);
  wk_release(idx);
  ck_assert_ptr_null(wk_argmin(e));
  TU_FAILS_WITH(WK_ERR_INDEX, "argmin(): Expected reduction dim to be specified for input.numel() == 0");
  wk_tensor *bt = TU_T(WK_BOOL, (2), 1, 0);
  ck_assert_ptr_null(wk_argmax(bt));
  TU_FAILS_WITH(WK_ERR_DTYPE, "\"argmax_cpu\" not implemented for 'Bool'");
  wk_tensor *it = TU_T(WK_I32, (2), 1, 0);
  ck_assert_ptr_null(wk_std(it, NULL, 0, 1, false));
  TU_FAILS_WITH(WK_ERR_DTYPE, "std and var only support floating point and complex dtypes");
  ck_assert_ptr_null(wk_norm(it, 2, NULL, 0, false));
  TU_FAILS_WITH(WK_ERR_DTYPE, "Got Int");
  ck_assert_ptr_null(wk_norm(e, -1, NULL, 0, false));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "-1 norm on an empty tensor");
  /* NULL tensors and wrong argument types never crash. */
  ck_assert_ptr_null(wk_sum(NULL));
  TU_FAILS_WITH(WK_ERR_NULL, "NULL");
  ck_assert_ptr_null(wk_max_dim(NULL, 0, false, &idx));
  TU_FAILS_WITH(WK_ERR_NULL, "NULL");
  ck_assert_ptr_null(wk_logsumexp(NULL, (int64_t[]){0}, 1, false));
  TU_FAILS_WITH(WK_ERR_NULL, "NULL");
  wk_value bad[] = {WK_VT(x), WK_VF(1.0)};
  ck_assert_ptr_null(call1("sum.dim_IntList", bad, 2));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "dim");
  wk_release(it);
  wk_release(bt);
  wk_release(e);
  wk_release(x);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- large inputs: parallel paths, thread-count independence ---------------------------------- */
static bool same_bits(wk_tensor *a, wk_tensor *b) {
  if (!a || !b || wk_tensor_numel(a) != wk_tensor_numel(b) || wk_tensor_dtype(a) != wk_tensor_dtype(b)) return false;
  return memcmp(wk_tensor_data(a), wk_tensor_data(b), (size_t)wk_tensor_numel(a) * wk_dtype_size(wk_tensor_dtype(a))) == 0;
}

START_TEST(test_reduce_threads_independent) {
  int64_t live = wk_live_tensors();
  int old = wk_num_threads();
  static const int64_t shapes[3][2] = {{3, 70001}, {50001, 3}, {700, 300}};
  for (int sh = 0; sh < 3; sh++) {
    wk_tensor *x = tu_rand(shapes[sh], 2, WK_F32, -2, 2, (uint64_t)sh + 5);
    wk_tensor *xi = tu_rand(shapes[sh], 2, WK_I32, -1000, 1000, (uint64_t)sh + 9);
    for (int dim = -1; dim <= 1; dim++) {
      int nd = dim < 0 ? 0 : 1;
      int64_t dd[1] = {dim};
      wk_tensor *r[2][9];
      for (int pass = 0; pass < 2; pass++) {
        TU_OK(wk_set_num_threads(pass ? 4 : 1));
        wk_tensor *idx;
        r[pass][0] = wk_sum_dim(x, dd, nd, false);
        r[pass][1] = wk_var(x, dd, nd, 1, false);
        r[pass][2] = wk_norm(x, 3, dd, nd, false);
        r[pass][3] = wk_logsumexp(x, dd, nd, false);
        r[pass][4] = nd ? wk_max_dim(x, dim, false, &idx) : wk_max(x);
        r[pass][5] = nd ? idx : wk_argmax(x);
        r[pass][6] = wk_sum_dim(xi, dd, nd, false);
        r[pass][7] = nd ? wk_cumsum(x, dim) : wk_prod(xi);
        r[pass][8] = nd ? wk_any_dim(x, dim, false) : wk_mean(x);
      }
      for (int i = 0; i < 9; i++) {
        ck_assert_msg(r[0][i] && r[1][i], "result %d is NULL: %s", i, wk_last_error_message());
        ck_assert_msg(same_bits(r[0][i], r[1][i]), "shape %d dim %d result %d differs across thread counts", sh, dim, i);
      }
      /* The big sums against the reference. */
      rcase c = {.nd = 2, .sz = {shapes[sh][0], shapes[sh][1]}};
      c.red[0] = nd == 0 || dim == 0;
      c.red[1] = nd == 0 || dim == 1;
      check_result(r[0][0], x, &c, r_sum, 0, WK_F32, 1e-5, 1e-4, "big sum", sh);
      check_result(r[0][1], x, &c, r_var, 1, WK_F32, 1e-5, 1e-6, "big var", sh);
      check_result(r[0][3], x, &c, r_lse, 0, WK_F32, 1e-6, 1e-6, "big logsumexp", sh);
      check_result(r[0][5], x, &c, r_argmax, 0, WK_I64, 0, 0, "big argmax", sh);
      check_result(r[0][6], xi, &c, r_sum, 0, WK_I64, 0, 0, "big int sum", sh);
      for (int i = 0; i < 9; i++) {
        wk_release(r[0][i]);
        wk_release(r[1][i]);
      }
    }
    wk_release(x);
    wk_release(xi);
  }
  TU_OK(wk_set_num_threads(old));
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* Every kind of reduction gives the same bits whether the reduced dims are read
 * in place (contiguous input: rows or columns) or from a rearranged copy
 * (strided input), on one thread or four. */
#define NLAY 19
static void layout_results(wk_tensor *const *in, const int64_t *dims, int nd, wk_tensor **r) {
  wk_tensor *x = in[0], *xp = in[1], *xz = in[2], *xi = in[3], *idx;
  int64_t d0 = dims[0];
  r[0] = wk_sum_dim(x, dims, nd, false);
  r[1] = wk_var(x, dims, nd, 0, false);
  static const double ps[] = {3, 1, 2, INFINITY, -INFINITY, 0};
  for (int i = 0; i < 6; i++) r[2 + i] = wk_norm(i == 5 ? xz : x, ps[i], dims, nd, true);
  r[8] = wk_logsumexp(x, dims, nd, false);
  r[9] = wk_prod_dim(xp, d0, false);
  r[10] = wk_max_dim(x, d0, false, &idx);
  r[11] = idx;
  r[12] = wk_all_dim(xz, d0, false);
  r[13] = wk_any_dim(xz, d0, true);
  r[14] = wk_sum_dim(xi, dims, nd, false);
  r[15] = wk_prod_dim(xi, d0, false);
  r[16] = wk_min_dim(xi, d0, false, &idx);
  r[17] = idx;
  r[18] = wk_cumsum(x, d0);
}

START_TEST(test_reduce_layout_independent) {
  int64_t live = wk_live_tensors();
  int old = wk_num_threads();
  static const struct {
    int nd;
    int64_t sz[3];
    int ndims;
    int64_t dims[2];
  } cases[] = {
      {2, {40001, 3}, 1, {0}},      /* columns, few: blocks split across threads */
      {3, {3, 20001, 5}, 1, {-2}},  /* columns inside slices */
      {3, {2, 8200, 40}, 2, {1, 0}}, /* leading dims: two blocks */
      {2, {300, 700}, 1, {0}},      /* columns, one block */
      {2, {7, 40000}, 1, {1}},      /* rows */
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    wk_tensor *in[2][4];
    static const vkind kinds[4] = {V_SMOOTH, V_NEAR1, V_STEPS, V_SMOOTH};
    for (int i = 0; i < 4; i++) {
      in[0][i] = make_input(cases[k].sz, cases[k].nd, i == 3 ? WK_I32 : WK_F32, k * 10 + (size_t)i, kinds[i], false, 0);
      in[1][i] = strided_copy(in[0][i]);
      ck_assert(!wk_tensor_is_contiguous(in[1][i]));
    }
    wk_tensor *r[4][NLAY];
    for (int v = 0; v < 4; v++) {
      TU_OK(wk_set_num_threads(v & 1 ? 4 : 1));
      layout_results(in[v >> 1], cases[k].dims, cases[k].ndims, r[v]);
    }
    for (int i = 0; i < NLAY; i++)
      for (int v = 0; v < 4; v++) {
        ck_assert_msg(r[v][i] != NULL, "case %zu result %d: %s", k, i, wk_last_error_message());
        ck_assert_msg(same_bits(r[0][i], r[v][i]), "case %zu result %d differs (variant %d)", k, i, v);
      }
    /* and the values are right */
    rcase c = {.nd = cases[k].nd};
    for (int d = 0; d < c.nd; d++) c.sz[d] = cases[k].sz[d];
    for (int i = 0; i < cases[k].ndims; i++) c.red[(cases[k].dims[i] + c.nd) % c.nd] = true;
    check_result(r[0][0], in[0][0], &c, r_sum, 0, WK_F32, 1e-5, 1e-4, "sum", (int)k);
    check_result(r[0][1], in[0][0], &c, r_var, 0, WK_F32, 1e-5, 1e-6, "var", (int)k);
    check_result(r[0][8], in[0][0], &c, r_lse, 0, WK_F32, 1e-6, 1e-6, "logsumexp", (int)k);
    check_result(r[0][14], in[0][3], &c, r_sum, 0, WK_I64, 0, 0, "int sum", (int)k);
    c.keepdim = true;
    check_result(r[0][2], in[0][0], &c, r_norm, 3, WK_F32, 1e-5, 1e-6, "norm 3", (int)k);
    check_result(r[0][7], in[0][2], &c, r_norm, 0, WK_F32, 0, 0, "norm 0", (int)k);
    memset(c.red, 0, sizeof c.red);
    c.red[(cases[k].dims[0] + c.nd) % c.nd] = true;
    c.keepdim = false;
    check_result(r[0][11], in[0][0], &c, r_argmax, 0, WK_I64, 0, 0, "max.dim indices", (int)k);
    check_result(r[0][17], in[0][3], &c, r_argmin, 0, WK_I64, 0, 0, "min.dim indices", (int)k);
    check_result(r[0][12], in[0][2], &c, r_all, 0, WK_BOOL, 0, 0, "all.dim", (int)k);
    for (int v = 0; v < 4; v++)
      for (int i = 0; i < NLAY; i++) wk_release(r[v][i]);
    for (int i = 0; i < 4; i++) {
      wk_release(in[0][i]);
      wk_release(in[1][i]);
    }
  }
  TU_OK(wk_set_num_threads(old));
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* cumsum along a middle dim with many columns: several tiles, any thread count. */
START_TEST(test_reduce_cumsum_large) {
  int64_t live = wk_live_tensors();
  int old = wk_num_threads();
  int64_t sz[3] = {2, 300, 3001};
  wk_tensor *x = make_input(sz, 3, WK_F32, 77, V_SMOOTH, false, 0), *xi = make_input(sz, 3, WK_I16, 78, V_SMOOTH, false, 1);
  wk_tensor *r[2][4];
  for (int pass = 0; pass < 2; pass++) {
    TU_OK(wk_set_num_threads(pass ? 4 : 1));
    r[pass][0] = wk_cumsum(x, 1);
    r[pass][1] = wk_cumsum(xi, -2);
    r[pass][2] = wk_cumsum(x, 2);
    r[pass][3] = wk_cumsum(xi, 0);
  }
  for (int i = 0; i < 4; i++) ck_assert_msg(same_bits(r[0][i], r[1][i]), "cumsum %d differs across thread counts", i);
  for (int i = 0; i < 4; i++) {
    wk_tensor *src = i & 1 ? xi : x;
    int dim = i == 0 || i == 1 ? 1 : i == 2 ? 2 : 0;
    int64_t n = wk_tensor_numel(src), inner = 1;
    for (int d = dim + 1; d < 3; d++) inner *= sz[d];
    double *v = tu_values(src), *ref = malloc(sizeof(double) * (size_t)n);
    for (int64_t e = 0; e < n; e++) ref[e] = v[e] + ((e / inner) % sz[dim] > 0 ? ref[e - inner] : 0);
    tu_assert_close_(r[1][i], ref, n, 1e-5, 1e-3, "cumsum large", i);
    free(v);
    free(ref);
    wk_release(r[0][i]);
    wk_release(r[1][i]);
  }
  wk_release(x);
  wk_release(xi);
  TU_OK(wk_set_num_threads(old));
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("check_ops_reduce");
  TCase *tc;
#define TC(name) (tc = tcase_create(name), tcase_add_checked_fixture(tc, tu_setup, NULL), tcase_set_timeout(tc, 60), \
                  suite_add_tcase(s, tc))
  TC("sum_mean_prod");
  tcase_add_test(tc, test_reduce_sum_dim_sweep);
  tcase_add_test(tc, test_reduce_mean_dim_sweep);
  tcase_add_test(tc, test_reduce_prod_dim_sweep);
  tcase_add_test(tc, test_reduce_full_sweep);
  tcase_add_test(tc, test_reduce_result_dtypes);
  TC("max_min");
  tcase_add_test(tc, test_reduce_extreme_dim_sweep);
  tcase_add_test(tc, test_reduce_nan_and_ties);
  TC("var_norm_logsumexp");
  tcase_add_test(tc, test_reduce_var_std_sweep);
  tcase_add_test(tc, test_reduce_norm_sweep);
  tcase_add_test(tc, test_reduce_logsumexp_sweep);
  tcase_add_test(tc, test_reduce_var_norm_lse_values);
  TC("all_any");
  tcase_add_test(tc, test_reduce_all_any_dim_sweep);
  TC("cumsum");
  tcase_add_test(tc, test_reduce_cumsum_sweep);
  tcase_add_test(tc, test_reduce_cumsum_values);
  tcase_add_test(tc, test_reduce_cumsum_large);
  TC("edges");
  tcase_add_test(tc, test_reduce_zero_dim);
  tcase_add_test(tc, test_reduce_errors);
  tcase_add_test(tc, test_reduce_threads_independent);
  tcase_add_test(tc, test_reduce_layout_independent);
#undef TC
  return s;
}
TU_MAIN(make_suite)
