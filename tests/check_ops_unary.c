/* check_ops_unary: the unary pointwise ops (neg ... logical_not with their _
 * and .out variants, leaky_relu, gelu, clamp, isnan, isinf, nan_to_num)
 * against float64 references computed here with libm, over every dtype,
 * contiguous / strided / transposed / expanded inputs, 0-dim and zero-size
 * shapes, plus PyTorch's dtype rules, special values and errors. */
#include <float.h>
#include <stdint.h>

#include "testutil.h"

/* Literal tensors: 1-D from the values, or 2-D of r x c. */
#define T1(dt, ...)                                                     \
  tu_tensor((const double[]){__VA_ARGS__}, dt,                          \
            WK_SHAPE((int64_t)(sizeof((const double[]){__VA_ARGS__}) / sizeof(double))))
#define T2(dt, r, c, ...) tu_tensor((const double[]){__VA_ARGS__}, dt, WK_SHAPE(r, c))

/* How an op treats dtypes (what the test expects). */
enum {
  TK_FLOAT,      /* integers and bool promote to f32 */
  TK_FLOAT_ONLY, /* integers and bool are errors */
  TK_KEEP,       /* integers keep their dtype; bool keeps (abs, sign) */
  TK_NOBOOL,     /* integers keep their dtype; bool is an error (neg, relu, floor, ...) */
  TK_N2N,        /* integers and bool pass through */
  TK_PRED,       /* bool result */
  TK_CLAMP_F,    /* clamp with float bounds: integers and bool promote to f32 */
  TK_CLAMP_I     /* clamp with int bounds: integers keep, bool promotes to i64 */
};

typedef struct {
  const char *name;
  wk_tensor *(*f)(wk_tensor *);
  wk_tensor *(*f_)(wk_tensor *);              /* NULL: no in-place variant */
  wk_tensor *(*fo)(wk_tensor *, wk_tensor *); /* NULL: no out= variant */
  double (*ref)(double);
  int kind;
  double lo, hi; /* input range */
} top;

/* ---- float64 references ---- */
static double r_neg(double x) { return -x; }
static double r_abs(double x) { return fabs(x); }
static double r_exp(double x) { return exp(x); }
static double r_log(double x) { return log(x); }
static double r_log1p(double x) { return log1p(x); }
static double r_sqrt(double x) { return sqrt(x); }
static double r_rsqrt(double x) { return 1.0 / sqrt(x); }
static double r_sin(double x) { return sin(x); }
static double r_cos(double x) { return cos(x); }
static double r_tanh(double x) { return tanh(x); }
static double r_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double r_relu(double x) { return x < 0 ? 0 : x; }
static double r_silu(double x) { return x / (1.0 + exp(-x)); }
static double r_sign(double x) { return (x > 0) - (x < 0); }
static double r_floor(double x) { return floor(x); }
static double r_ceil(double x) { return ceil(x); }
static double r_round(double x) { return nearbyint(x); }
static double r_not(double x) { return x == 0; }
static double r_leaky(double x) { return x > 0 ? x : 0.2 * x; }
static double r_gelu(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }
static double r_gelu_tanh(double x) {
  return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}
/* PyTorch's clamp: min(max(x, lo), hi), NaN input stays NaN. */
static double clamp_ref(double x, double lo, double hi) {
  if (isnan(x)) return x;
  double m = x < lo ? lo : x;
  return m > hi ? hi : m;
}
static double r_clampf(double x) { return clamp_ref(x, -1.5, 2.25); }
static double r_clampmin(double x) { return clamp_ref(x, 0.5, INFINITY); }
static double r_clampmax(double x) { return clamp_ref(x, -INFINITY, -0.5); }
static double r_clampi(double x) { return clamp_ref(x, 0, 2); }
static double r_n2n(double x) { return x; } /* finite inputs; inf/nan handled in check_case */
static double r_isnan(double x) { return isnan(x); }
static double r_isinf(double x) { return isinf(x) != 0; }

/* ---- wrappers with fixed parameters ---- */
static wk_tensor *leaky(wk_tensor *x) { return wk_leaky_relu(x, 0.2); }
static wk_tensor *leaky_(wk_tensor *x) { return wk_leaky_relu_(x, 0.2); }
static wk_tensor *gelu_none(wk_tensor *x) { return wk_gelu(x, "none"); }
static wk_tensor *gelu_tanh(wk_tensor *x) { return wk_gelu(x, "tanh"); }
static wk_tensor *clampf(wk_tensor *x) { return wk_clamp(x, -1.5, 2.25); }
static wk_tensor *clampf_(wk_tensor *x) { return wk_clamp_(x, -1.5, 2.25); }
static wk_tensor *clampmin(wk_tensor *x) { return wk_clamp(x, 0.5, NAN); }
static wk_tensor *clampmin_(wk_tensor *x) { return wk_clamp_(x, 0.5, NAN); }
static wk_tensor *clampmax(wk_tensor *x) { return wk_clamp(x, NAN, -0.5); }
static wk_tensor *clampmax_(wk_tensor *x) { return wk_clamp_(x, NAN, -0.5); }
static wk_tensor *call1(const char *op, const wk_value *a, int n) {
  wk_value out[WK_MAX_OUTS];
  return wk_call(op, a, n, out) == WK_OK ? out[0].u.t : NULL;
}
static wk_tensor *clampi(wk_tensor *x) { return call1("clamp", (wk_value[]){WK_VT(x), WK_VI(0), WK_VI(2)}, 3); }
static wk_tensor *clampi_(wk_tensor *x) { return call1("clamp_", (wk_value[]){WK_VT(x), WK_VI(0), WK_VI(2)}, 3); }

#define FAM(n, r, k, lo, hi) {#n, wk_##n, wk_##n##_, wk_##n##_out, r, k, lo, hi}
static const top g_ops[] = {
    FAM(neg, r_neg, TK_KEEP, -4, 4),
    FAM(abs, r_abs, TK_KEEP, -4, 4),
    FAM(exp, r_exp, TK_FLOAT, -4, 4),
    FAM(log, r_log, TK_FLOAT, 0.05, 6),
    FAM(log1p, r_log1p, TK_FLOAT, -0.9, 6),
    FAM(sqrt, r_sqrt, TK_FLOAT, 0, 6),
    FAM(rsqrt, r_rsqrt, TK_FLOAT, 0.05, 6),
    FAM(sin, r_sin, TK_FLOAT, -6, 6),
    FAM(cos, r_cos, TK_FLOAT, -6, 6),
    FAM(tanh, r_tanh, TK_FLOAT, -4, 4),
    FAM(sigmoid, r_sigmoid, TK_FLOAT, -6, 6),
    FAM(erf, erf, TK_FLOAT, -3, 3),
    FAM(relu, r_relu, TK_NOBOOL, -4, 4),
    FAM(silu, r_silu, TK_FLOAT_ONLY, -6, 6),
    FAM(sign, r_sign, TK_KEEP, -4, 4),
    FAM(floor, r_floor, TK_NOBOOL, -4, 4),
    FAM(ceil, r_ceil, TK_NOBOOL, -4, 4),
    FAM(round, r_round, TK_NOBOOL, -4, 4),
    FAM(logical_not, r_not, TK_PRED, -2, 2),
    {"leaky_relu", leaky, leaky_, NULL, r_leaky, TK_FLOAT_ONLY, -4, 4},
    {"gelu(none)", gelu_none, NULL, NULL, r_gelu, TK_FLOAT_ONLY, -5, 5},
    {"gelu(tanh)", gelu_tanh, NULL, NULL, r_gelu_tanh, TK_FLOAT_ONLY, -5, 5},
    {"clamp(float)", clampf, clampf_, NULL, r_clampf, TK_CLAMP_F, -4, 4},
    {"clamp(min)", clampmin, clampmin_, NULL, r_clampmin, TK_CLAMP_F, -4, 4},
    {"clamp(max)", clampmax, clampmax_, NULL, r_clampmax, TK_CLAMP_F, -4, 4},
    {"clamp(int)", clampi, clampi_, NULL, r_clampi, TK_CLAMP_I, -4, 4},
    {"nan_to_num", wk_nan_to_num, NULL, NULL, r_n2n, TK_N2N, -4, 4},
    {"isnan", wk_isnan, NULL, NULL, r_isnan, TK_PRED, -4, 4},
    {"isinf", wk_isinf, NULL, NULL, r_isinf, TK_PRED, -4, 4},
};
#define N_OPS ((int)(sizeof g_ops / sizeof g_ops[0]))

static const wk_dtype g_dtypes[] = {WK_F32, WK_F64, WK_F16, WK_BF16, WK_I8, WK_U8, WK_I16, WK_I32, WK_I64, WK_BOOL};
#define N_DTYPES ((int)(sizeof g_dtypes / sizeof g_dtypes[0]))

static bool is_float(wk_dtype dt) { return wk_dtype_is_floating(dt); }

/* Result dtype of op on dt, or WK_DTYPE_DEFAULT when PyTorch refuses it. */
static wk_dtype expected_dtype(const top *o, wk_dtype dt) {
  switch (o->kind) {
    case TK_FLOAT: return is_float(dt) ? dt : WK_F32;
    case TK_FLOAT_ONLY: return is_float(dt) ? dt : WK_DTYPE_DEFAULT;
    case TK_KEEP: return dt == WK_BOOL && strcmp(o->name, "neg") == 0 ? WK_DTYPE_DEFAULT : dt;
    case TK_NOBOOL: return dt == WK_BOOL ? WK_DTYPE_DEFAULT : dt;
    case TK_N2N: return dt;
    case TK_PRED: return WK_BOOL;
    case TK_CLAMP_F: return is_float(dt) ? dt : WK_F32;
    default: return dt == WK_BOOL ? WK_I64 : dt; /* TK_CLAMP_I */
  }
}

/* Largest finite value of a floating dtype (nan_to_num's default posinf). */
static double max_of(wk_dtype dt) {
  return dt == WK_F64 ? DBL_MAX : dt == WK_F16 ? 65504.0 : dt == WK_BF16 ? 3.3895313892515355e38 : FLT_MAX;
}

/* PyTorch's canCast. */
static bool can_cast(wk_dtype from, wk_dtype to) {
  if (is_float(from) && !is_float(to)) return false;
  return !(from != WK_BOOL && to == WK_BOOL);
}

/* Compares t with ref (float64 values, rounded here to t's dtype where that
 * matters) with a tolerance for t's dtype. */
static void expect_close_(wk_tensor *t, const double *ref, int64_t n, const char *what, int line) {
  ck_assert_msg(t != NULL, "line %d: %s: NULL: %s", line, what, wk_last_error_message());
  wk_dtype dt = wk_tensor_dtype(t);
  double *r = malloc(sizeof(double) * (size_t)(n ? n : 1));
  for (int64_t i = 0; i < n; i++) {
    r[i] = ref[i];
    if (dt == WK_F32) r[i] = (double)(float)ref[i];
    if (dt == WK_BOOL) r[i] = ref[i] != 0;
    if (wk_dtype_is_integral(dt) && isfinite(ref[i])) { /* integers wrap around */
      int64_t v = (int64_t)ref[i];
      r[i] = dt == WK_I8    ? (int8_t)v
             : dt == WK_U8  ? (uint8_t)v
             : dt == WK_I16 ? (int16_t)v
             : dt == WK_I32 ? (int32_t)v
                            : (double)v;
    }
  }
  double rtol = 0, atol = 0;
  switch (dt) {
    case WK_F32: rtol = 1e-5; atol = 1e-6; break;
    case WK_F64: rtol = 1e-12; atol = 1e-14; break;
    case WK_F16: rtol = 1e-2; atol = 1e-3; break;
    case WK_BF16: rtol = 2e-2; atol = 1e-2; break;
    default: break;
  }
  tu_assert_close_(t, r, n, rtol, atol, what, line);
  free(r);
}
#define EXPECT_CLOSE(t, ref, n, what) expect_close_(t, ref, n, what, __LINE__)

static void expect_shape(wk_tensor *t, wk_tensor *like, const char *what) {
  ck_assert_msg(wk_tensor_dim(t) == wk_tensor_dim(like), "%s: rank %d, expected %d", what, wk_tensor_dim(t),
                wk_tensor_dim(like));
  for (int d = 0; d < wk_tensor_dim(t); d++)
    ck_assert_msg(wk_tensor_size(t, d) == wk_tensor_size(like, d), "%s: size mismatch at dim %d", what, d);
}

/* Checks the functional, out= and in-place forms of o on input x (borrowed). */
static void check_case(const top *o, wk_tensor *x, bool try_inplace, const char *layout) {
  char what[160];
  wk_dtype dt = wk_tensor_dtype(x);
  snprintf(what, sizeof what, "%s(%s, %s, ndim %d)", o->name, wk_dtype_name(dt), layout, wk_tensor_dim(x));
  int64_t n = wk_tensor_numel(x);
  double *xv = tu_values(x), *ref = malloc(sizeof(double) * (size_t)(n ? n : 1));
  wk_dtype rt = expected_dtype(o, dt);
  for (int64_t i = 0; i < n; i++) {
    ref[i] = o->ref(xv[i]);
    if (o->kind == TK_N2N && !isfinite(xv[i])) ref[i] = isnan(xv[i]) ? 0 : copysign(max_of(dt), xv[i]);
  }

  wk_tensor *r = o->f(x);
  if (rt == WK_DTYPE_DEFAULT) {
    ck_assert_msg(r == NULL, "%s: expected an error", what);
    TU_FAILS_WITH(WK_ERR_DTYPE, "not");
    if (o->f_) {
      wk_tensor *y = wk_clone(x);
      ck_assert_msg(o->f_(y) == NULL, "%s: in place: expected an error", what);
      TU_FAILS_WITH(WK_ERR_DTYPE, "not");
      wk_release(y);
    }
    goto done;
  }
  ck_assert_msg(r != NULL, "%s failed: %s", what, wk_last_error_message());
  ck_assert_msg(wk_tensor_dtype(r) == rt, "%s: dtype %s, expected %s", what, wk_dtype_name(wk_tensor_dtype(r)),
                wk_dtype_name(rt));
  ck_assert_msg(r != x, "%s: the result must be a new tensor", what);
  expect_shape(r, x, what);
  EXPECT_CLOSE(r, ref, n, what);
  wk_release(r);

  if (o->fo) { /* out= of the result dtype, contiguous and strided, and of f64 */
    wk_tensor *out = wk_empty(wk_tensor_sizes(x), wk_tensor_dim(x), WK_OPTS(.dtype = rt));
    uint64_t v0 = wk_tensor_version(out);
    ck_assert_ptr_eq(o->fo(x, out), out);
    ck_assert_msg(wk_tensor_version(out) > v0, "%s: out= did not bump the version", what);
    EXPECT_CLOSE(out, ref, n, what);
    wk_release(out);
    wk_tensor *z = wk_zeros(wk_tensor_sizes(x), wk_tensor_dim(x), WK_OPTS(.dtype = rt));
    wk_tensor *nc = tu_noncontig(z);
    ck_assert_ptr_eq(o->fo(x, nc), nc);
    EXPECT_CLOSE(nc, ref, n, what);
    wk_release(nc);
    wk_release(z);
    if (is_float(rt) && rt != WK_F64) {
      wk_tensor *o64 = wk_empty(wk_tensor_sizes(x), wk_tensor_dim(x), WK_OPTS(.dtype = WK_F64));
      ck_assert_ptr_eq(o->fo(x, o64), o64);
      double *rr = malloc(sizeof(double) * (size_t)(n ? n : 1));
      for (int64_t i = 0; i < n; i++) rr[i] = rt == WK_F32 ? (double)(float)ref[i] : ref[i];
      tu_assert_close_(o64, rr, n, rt == WK_F32 ? 1e-6 : 1e-2, rt == WK_F32 ? 1e-6 : 1e-2, what, __LINE__);
      free(rr);
      wk_release(o64);
    }
  }

  if (o->f_ && try_inplace) { /* in place on a strided copy of x */
    wk_tensor *y = wk_tensor_dim(x) ? tu_noncontig(x) : wk_clone(x);
    uint64_t v0 = wk_tensor_version(y);
    wk_tensor *res = o->f_(y);
    if (!can_cast(rt, dt)) {
      ck_assert_msg(res == NULL, "%s: in place: expected a cast error", what);
      TU_FAILS_WITH(WK_ERR_DTYPE, "can't be cast to the desired output type");
    } else {
      ck_assert_msg(res == y, "%s: in place must return self: %s", what, wk_last_error_message());
      ck_assert_msg(wk_tensor_version(y) > v0, "%s: in place did not bump the version", what);
      double *rr = malloc(sizeof(double) * (size_t)(n ? n : 1));
      for (int64_t i = 0; i < n; i++) rr[i] = is_float(dt) || isnan(ref[i]) ? ref[i] : trunc(ref[i]);
      EXPECT_CLOSE(y, rr, n, what);
      free(rr);
      /* the contiguous fast path writes straight into self */
      wk_tensor *c = wk_clone(x);
      ck_assert_ptr_eq(o->f_(c), c);
      double *yv = tu_values(y);
      EXPECT_CLOSE(c, yv, n, what); /* same values either way */
      free(yv);
      wk_release(c);
    }
    wk_release(y);
  }
done:
  free(xv);
  free(ref);
}

/* Random input for op o in dtype dt; float inputs get NaN and infinities at
 * their first elements when `specials`. */
static wk_tensor *make_input(const top *o, const int64_t *shape, int nd, wk_dtype dt, uint64_t seed, bool specials) {
  double lo = o->lo, hi = o->hi;
  if (!is_float(dt) && lo < 0 && (dt == WK_U8 || dt == WK_BOOL)) lo = 0;
  if (!is_float(dt) && o->ref == r_log1p) lo = 0;
  wk_tensor *t = tu_rand(shape, nd, dt, lo, hi, seed);
  if (specials && is_float(dt) && wk_tensor_numel(t) >= 3) {
    double sv[3] = {NAN, INFINITY, -INFINITY};
    int64_t idx[WK_MAX_DIMS] = {0};
    for (int k = 0; k < 3; k++) {
      int64_t rem = k;
      for (int d = nd - 1; d >= 0; d--) {
        idx[d] = rem % shape[d];
        rem /= shape[d];
      }
      wk_tensor_set(t, idx, sv[k]);
    }
  }
  return t;
}

/* Every op x every dtype x shapes (0-dim, zero-size, 1-3 dims) x layouts. */
START_TEST(test_unary_sweep) {
  const top *o = &g_ops[_i];
  int64_t live = wk_live_tensors();
  static const int64_t shapes[][3] = {{0}, {0}, {3, 0}, {7}, {4, 5}, {2, 3, 4}};
  static const int nds[] = {0, 1, 2, 1, 2, 3};
  for (int di = 0; di < N_DTYPES; di++) {
    wk_dtype dt = g_dtypes[di];
    for (int si = 0; si < 6; si++) {
      for (uint64_t seed = 1; seed <= 2; seed++) {
        wk_tensor *x = make_input(o, shapes[si], nds[si], dt, seed * 31 + (uint64_t)si, seed == 2);
        check_case(o, x, true, "contiguous");
        wk_tensor *nc = tu_noncontig(x);
        check_case(o, nc, true, "strided");
        wk_release(nc);
        if (nds[si] == 2) {
          wk_tensor *tr = wk_t(x);
          check_case(o, tr, true, "transposed");
          wk_release(tr);
          /* a broadcast (stride 0) view: row 0 expanded over the rows */
          wk_tensor *row = wk_slice(x, 0, 0, 1, 1);
          wk_tensor *ex = wk_expand(row, shapes[si], 2);
          check_case(o, ex, false, "expanded");
          wk_release(ex);
          wk_release(row);
        }
        wk_release(x);
      }
    }
  }
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* Large inputs run in parallel chunks; the result must match element-wise. */
START_TEST(test_unary_large_parallel) {
  int64_t live = wk_live_tensors();
  const int64_t n = 300001;
  wk_tensor *x = tu_rand(WK_SHAPE(n), WK_F32, -5, 5, 7);
  double *xv = tu_values(x), *ref = malloc(sizeof(double) * (size_t)n);
  const top *ops[] = {&g_ops[0], &g_ops[2], &g_ops[10], &g_ops[11], &g_ops[16], &g_ops[19], &g_ops[21]};
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
    for (int64_t i = 0; i < n; i++) ref[i] = ops[k]->ref(xv[i]);
    wk_tensor *r = ops[k]->f(x);
    EXPECT_CLOSE(r, ref, n, ops[k]->name);
    wk_release(r);
  }
  /* strided, and in place on f64 */
  wk_tensor *big = tu_rand(WK_SHAPE(600, 1000), WK_F64, -3, 3, 9);
  wk_tensor *v = wk_slice(big, 1, 0, 1000, 2);
  double *vv = tu_values(v), *bv = tu_values(big);
  for (int64_t i = 0; i < 300000; i++) ref[i] = tanh(vv[i]);
  ck_assert_ptr_eq(wk_tanh_(v), v);
  EXPECT_CLOSE(v, ref, 300000, "tanh_ strided");
  double *after = tu_values(big);
  for (int64_t i = 0; i < 600000; i++)
    if (i % 2) ck_assert_msg(after[i] == bv[i], "element %lld outside the view changed", (long long)i);
  free(after);
  free(vv);
  free(bv);
  wk_release(v);
  wk_release(big);
  /* integer and predicate paths */
  wk_tensor *xi = tu_rand(WK_SHAPE(n), WK_I32, -100, 100, 3);
  double *xiv = tu_values(xi);
  for (int64_t i = 0; i < n; i++) ref[i] = fabs(xiv[i]);
  wk_tensor *ai = wk_abs(xi);
  EXPECT_CLOSE(ai, ref, n, "abs i32");
  for (int64_t i = 0; i < n; i++) ref[i] = xiv[i] == 0;
  wk_tensor *ni = wk_logical_not(xi);
  EXPECT_CLOSE(ni, ref, n, "logical_not i32");
  wk_release(ai);
  wk_release(ni);
  wk_release(xi);
  free(xiv);
  free(xv);
  free(ref);
  wk_release(x);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- semantics ---- */
START_TEST(test_unary_round_half_to_even) {
  wk_dtype dts[] = {WK_F32, WK_F64, WK_F16, WK_BF16};
  for (int k = 0; k < 4; k++) {
    wk_tensor *x = T1(dts[k], 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.75, -3.25);
    wk_tensor *r = wk_round(x);
    TU_EQ_VALS(r, 0, 2, 2, -0.0, -2, -2, 4, -3);
    wk_release(r);
    ck_assert_ptr_eq(wk_round_(x), x);
    TU_EQ_VALS(x, 0, 2, 2, -0.0, -2, -2, 4, -3);
    wk_release(x);
  }
  wk_tensor *x = T1(WK_F32, -1.5, -0.25, 0.25, 1.5);
  wk_tensor *f = wk_floor(x), *c = wk_ceil(x);
  TU_EQ_VALS(f, -2, -1, 0, 1);
  TU_EQ_VALS(c, -1, -0.0, 1, 2);
  wk_release(f);
  wk_release(c);
  wk_release(x);
}
END_TEST

START_TEST(test_unary_special_values) {
  int64_t live = wk_live_tensors();
  wk_tensor *x = T1(WK_F32, NAN, -0.0, 3, -2, INFINITY, -INFINITY);
  wk_tensor *s = wk_sign(x), *r = wk_relu(x), *a = wk_abs(x), *n = wk_neg(x);
  TU_EQ_VALS(s, 0, 0, 1, -1, 1, -1); /* sign(NaN) is 0, as PyTorch's cpu kernel */
  TU_EQ_VALS(r, NAN, 0, 3, 0, INFINITY, 0);
  TU_EQ_VALS(a, NAN, 0, 3, 2, INFINITY, INFINITY);
  TU_EQ_VALS(n, NAN, 0, -3, 2, -INFINITY, INFINITY);
  wk_release(s);
  wk_release(r);
  wk_release(a);
  wk_release(n);
  wk_tensor *e = wk_exp(x), *sg = wk_sigmoid(x), *l = wk_log(x);
  TU_EQ_VALS(e, NAN, 1, (float)exp(3.0), (float)exp(-2.0), INFINITY, 0);
  TU_CLOSE(sg, ((double[]){NAN, 0.5, 1 / (1 + exp(-3.0)), 1 / (1 + exp(2.0)), 1, 0}), 6, 1e-6, 1e-7);
  TU_EQ_VALS(l, NAN, -INFINITY, (float)log(3.0), NAN, INFINITY, NAN);
  wk_release(e);
  wk_release(sg);
  wk_release(l);
  /* leaky_relu default slope 0.01; gelu default approximate "none" */
  wk_tensor *y = T1(WK_F64, -2, 0, 1.5);
  wk_tensor *lr = call1("leaky_relu", (wk_value[]){WK_VT(y)}, 1);
  TU_EQ_VALS(lr, -0.02, 0, 1.5);
  wk_tensor *g = call1("gelu", (wk_value[]){WK_VT(y)}, 1);
  TU_CLOSE(g, ((double[]){r_gelu(-2), 0, r_gelu(1.5)}), 3, 1e-14, 0);
  ck_assert_ptr_eq(wk_leaky_relu_(y, 0.5), y);
  TU_EQ_VALS(y, -1, 0, 1.5);
  wk_release(lr);
  wk_release(g);
  wk_release(y);
  wk_release(x);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_unary_int_wraparound) {
  wk_tensor *a = T1(WK_I8, -128, 127, 0, -5);
  wk_tensor *n = wk_neg(a), *ab = wk_abs(a), *s = wk_sign(a), *r = wk_relu(a);
  TU_EQ_VALS(n, -128, -127, 0, 5);
  TU_EQ_VALS(ab, -128, 127, 0, 5);
  TU_EQ_VALS(s, -1, 1, 0, -1);
  TU_EQ_VALS(r, 0, 127, 0, 0);
  ck_assert_int_eq(wk_tensor_dtype(n), WK_I8);
  wk_release(n);
  wk_release(ab);
  wk_release(s);
  wk_release(r);
  wk_release(a);
  wk_tensor *u = T1(WK_U8, 1, 0, 255);
  wk_tensor *nu = wk_neg(u), *su = wk_sign(u), *au = wk_abs(u);
  TU_EQ_VALS(nu, 255, 0, 1);
  TU_EQ_VALS(su, 1, 0, 1);
  TU_EQ_VALS(au, 1, 0, 255);
  wk_release(nu);
  wk_release(su);
  wk_release(au);
  wk_release(u);
  int64_t big[] = {INT64_MIN, INT64_MAX, -3};
  wk_tensor *l = wk_tensor_from_data(big, WK_I64, WK_SHAPE(3));
  wk_tensor *nl = wk_neg(l);
  int64_t v;
  wk_tensor *e0 = wk_select(nl, 0, 0), *e1 = wk_select(nl, 0, 1);
  TU_OK(wk_item_i64(e0, &v));
  ck_assert(v == INT64_MIN);
  TU_OK(wk_item_i64(e1, &v));
  ck_assert(v == -INT64_MAX);
  wk_release(e0);
  wk_release(e1);
  wk_release(nl);
  wk_release(l);
}
END_TEST

START_TEST(test_unary_promotion) {
  int64_t live = wk_live_tensors();
  wk_tensor *i = T1(WK_I64, 0, 1, 4), *b = T1(WK_BOOL, 1, 0);
  wk_tensor *e = wk_exp(i), *sq = wk_sqrt(i), *eb = wk_exp(b), *fl = wk_floor(i), *lb = wk_logical_not(i);
  ck_assert_int_eq(wk_tensor_dtype(e), WK_F32);
  ck_assert_int_eq(wk_tensor_dtype(eb), WK_F32);
  ck_assert_int_eq(wk_tensor_dtype(fl), WK_I64);
  ck_assert_int_eq(wk_tensor_dtype(lb), WK_BOOL);
  TU_EQ_VALS(e, 1, (float)exp(1.0), (float)exp(4.0));
  TU_EQ_VALS(sq, 0, 1, 2);
  TU_EQ_VALS(eb, (float)exp(1.0), 1);
  TU_EQ_VALS(lb, 1, 0, 0);
  /* floor of an integer tensor is a copy, not an alias */
  ck_assert(!wk_tensor_same_storage(fl, i));
  wk_release(e);
  wk_release(sq);
  wk_release(eb);
  wk_release(fl);
  wk_release(lb);
  /* nan_to_num and isnan/isinf on integers */
  wk_tensor *nn = wk_nan_to_num(i), *in = wk_isnan(i), *ii = wk_isinf(b), *nb = wk_nan_to_num(b);
  TU_EQ_VALS(nn, 0, 1, 4);
  ck_assert_int_eq(wk_tensor_dtype(nn), WK_I64);
  ck_assert_int_eq(wk_tensor_dtype(nb), WK_BOOL);
  TU_EQ_VALS(in, 0, 0, 0);
  TU_EQ_VALS(ii, 0, 0);
  wk_release(nn);
  wk_release(in);
  wk_release(ii);
  wk_release(nb);
  /* clamp: float bounds promote integers; int bounds keep them; bool + int -> i64 */
  wk_tensor *cf = wk_clamp(i, 0.5, NAN);
  ck_assert_int_eq(wk_tensor_dtype(cf), WK_F32);
  TU_EQ_VALS(cf, 0.5, 1, 4);
  wk_tensor *ci = clampi(i), *cb = clampi(b);
  ck_assert_int_eq(wk_tensor_dtype(ci), WK_I64);
  ck_assert_int_eq(wk_tensor_dtype(cb), WK_I64);
  TU_EQ_VALS(ci, 0, 1, 2);
  TU_EQ_VALS(cb, 1, 0);
  wk_release(cf);
  wk_release(ci);
  wk_release(cb);
  /* in place keeps the dtype when the result casts back */
  wk_tensor *i32 = T1(WK_I32, -3, 5, 1);
  ck_assert_ptr_eq(clampi_(i32), i32);
  TU_EQ_VALS(i32, 0, 2, 1);
  ck_assert_ptr_eq(wk_logical_not_(i32), i32);
  TU_EQ_VALS(i32, 1, 0, 0);
  ck_assert_int_eq(wk_tensor_dtype(i32), WK_I32);
  wk_release(i32);
  /* f16 in: f16 out; f16 in, f32 out= gets the f16-rounded values */
  wk_tensor *h = T1(WK_F16, 0.1, 1.0), *o32 = wk_empty(WK_SHAPE(2), WK_OPTS(.dtype = WK_F32));
  wk_tensor *eh = wk_exp(h);
  ck_assert_int_eq(wk_tensor_dtype(eh), WK_F16);
  ck_assert_ptr_eq(wk_exp_out(h, o32), o32);
  double hv[2], ov[2];
  TU_OK(wk_tensor_to_f64(eh, hv, 2));
  TU_OK(wk_tensor_to_f64(o32, ov, 2));
  ck_assert(hv[0] == ov[0] && hv[1] == ov[1]);
  wk_release(eh);
  wk_release(o32);
  wk_release(h);
  wk_release(i);
  wk_release(b);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_unary_clamp_semantics) {
  int64_t live = wk_live_tensors();
  wk_tensor *x = T1(WK_F32, NAN, -5, 0, 5);
  wk_tensor *a = wk_clamp(x, 3, 1); /* min > max: everything becomes max */
  TU_EQ_VALS(a, NAN, 1, 1, 1);
  wk_tensor *b = wk_clamp(x, -1, NAN), *c = wk_clamp(x, NAN, 1);
  TU_EQ_VALS(b, NAN, -1, 0, 5);
  TU_EQ_VALS(c, NAN, -5, 0, 1);
  wk_tensor *d = call1("clamp", (wk_value[]){WK_VT(x), WK_VF(NAN), WK_VF(1)}, 3); /* NaN bound propagates */
  TU_EQ_VALS(d, NAN, NAN, NAN, NAN);
  ck_assert_ptr_eq(wk_clamp_(x, -1, 1), x);
  TU_EQ_VALS(x, NAN, -1, 0, 1);
  wk_release(a);
  wk_release(b);
  wk_release(c);
  wk_release(d);
  wk_release(x);
  /* 0-dim */
  wk_tensor *s = wk_scalar_tensor(7.5, WK_F64), *cs = wk_clamp(s, 0, 2);
  ck_assert_int_eq(wk_tensor_dim(cs), 0);
  TU_EQ_VALS(cs, 2);
  wk_release(cs);
  wk_release(s);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_unary_nan_to_num) {
  int64_t live = wk_live_tensors();
  struct {
    wk_dtype dt;
    double max;
  } cases[] = {{WK_F32, FLT_MAX}, {WK_F64, DBL_MAX}, {WK_F16, 65504.0}, {WK_BF16, 3.3895313892515355e38}};
  for (int k = 0; k < 4; k++) {
    wk_tensor *x = T1(cases[k].dt, NAN, INFINITY, -INFINITY, 1.5);
    wk_tensor *r = wk_nan_to_num(x), *v = wk_nan_to_num_values(x, 7, 100, -100);
    ck_assert_int_eq(wk_tensor_dtype(r), cases[k].dt);
    TU_EQ_VALS(r, 0, cases[k].max, -cases[k].max, 1.5);
    TU_EQ_VALS(v, 7, 100, -100, 1.5);
    wk_tensor *in = wk_isnan(x), *ii = wk_isinf(x);
    TU_EQ_VALS(in, 1, 0, 0, 0);
    TU_EQ_VALS(ii, 0, 1, 1, 0);
    wk_tensor *ln = wk_logical_not(x);
    TU_EQ_VALS(ln, 0, 0, 0, 0);
    wk_release(r);
    wk_release(v);
    wk_release(in);
    wk_release(ii);
    wk_release(ln);
    wk_release(x);
  }
  /* only some replacements given */
  wk_tensor *x = T1(WK_F32, NAN, INFINITY, -INFINITY);
  wk_tensor *p = call1("nan_to_num", (wk_value[]){WK_VT(x), WK_VNONE, WK_VF(9)}, 3);
  TU_EQ_VALS(p, 0, 9, -FLT_MAX);
  wk_release(p);
  wk_release(x);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_unary_out_variants) {
  int64_t live = wk_live_tensors();
  wk_tensor *x = T2(WK_F32, 2, 2, 0.5, -1, 2, 3);
  /* out aliasing self is in place */
  wk_tensor *y = wk_clone(x);
  ck_assert_ptr_eq(wk_exp_out(y, y), y);
  TU_EQ_VALS(y, (float)exp(0.5), (float)exp(-1.0), (float)exp(2.0), (float)exp(3.0));
  wk_release(y);
  /* out overlapping self through a transposed view: computed as if from a copy */
  y = wk_clone(x);
  wk_tensor *yt = wk_t(y);
  ck_assert_ptr_eq(wk_neg_out(y, yt), yt);
  TU_EQ_VALS(y, -0.5, -2, 1, -3);
  wk_release(yt);
  wk_release(y);
  /* logical_not into a float out */
  wk_tensor *of = wk_empty(WK_SHAPE(2, 2), WK_OPTS(.dtype = WK_F64)), *xi = T2(WK_I32, 2, 2, 0, 1, 0, 5);
  ck_assert_ptr_eq(wk_logical_not_out(xi, of), of);
  TU_EQ_VALS(of, 1, 0, 1, 0);
  wk_release(of);
  wk_release(xi);
  wk_release(x);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_unary_errors) {
  int64_t live = wk_live_tensors();
  wk_tensor *b = T1(WK_BOOL, 1, 0), *i = T1(WK_I64, 1, 2), *f = T1(WK_F32, 1, 2);
  ck_assert_ptr_null(wk_neg(b));
  TU_FAILS_WITH(WK_ERR_DTYPE, "Negation, the `-` operator, on a bool tensor is not supported");
  ck_assert_ptr_null(wk_relu(b));
  TU_FAILS_WITH(WK_ERR_DTYPE, "Boolean inputs not supported for relu");
  ck_assert_ptr_null(wk_floor(b));
  TU_FAILS_WITH(WK_ERR_DTYPE, "\"floor_cpu\" not implemented for 'Bool'");
  ck_assert_ptr_null(wk_silu(i));
  TU_FAILS_WITH(WK_ERR_DTYPE, "\"silu_cpu\" not implemented for 'Long'");
  ck_assert_ptr_null(wk_gelu(i, "none"));
  TU_FAILS_WITH(WK_ERR_DTYPE, "not implemented for 'Long'");
  ck_assert_ptr_null(wk_leaky_relu(i, 0.1));
  TU_FAILS_WITH(WK_ERR_DTYPE, "not implemented for 'Long'");
  ck_assert_ptr_null(wk_gelu(f, "fast"));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "approximate argument must be either none or tanh");
  /* in place of a float-producing op on an integer tensor */
  ck_assert_ptr_null(wk_exp_(i));
  TU_FAILS_WITH(WK_ERR_DTYPE, "can't be cast to the desired output type");
  ck_assert_ptr_null(wk_clamp_(i, 0.5, NAN));
  TU_FAILS_WITH(WK_ERR_DTYPE, "can't be cast to the desired output type");
  TU_EQ_VALS(i, 1, 2); /* untouched */
  /* clamp */
  ck_assert_ptr_null(wk_clamp(f, NAN, NAN));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "At least one of 'min' or 'max' must not be None");
  ck_assert_ptr_null(call1("clamp", (wk_value[]){WK_VT(b), WK_VB(0), WK_VB(1)}, 3));
  TU_FAILS_WITH(WK_ERR_DTYPE, "not implemented for 'Bool'");
  wk_tensor *u = T1(WK_U8, 1, 2);
  ck_assert_ptr_null(call1("clamp", (wk_value[]){WK_VT(u), WK_VI(-1)}, 2));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "without overflow");
  /* out= of the wrong shape or dtype */
  wk_tensor *o3 = wk_empty(WK_SHAPE(3), WK_OPTS(.dtype = WK_F32));
  wk_tensor *oi = wk_empty(WK_SHAPE(2), WK_OPTS(.dtype = WK_I64));
  ck_assert_ptr_null(wk_exp_out(f, o3));
  TU_FAILS_WITH(WK_ERR_SHAPE, "[3]");
  ck_assert_ptr_null(wk_exp_out(f, oi));
  TU_FAILS_WITH(WK_ERR_DTYPE, "can't be cast to the desired output type");
  ck_assert_ptr_null(wk_sqrt_out(i, oi)); /* int in, float result, int out */
  TU_FAILS_WITH(WK_ERR_DTYPE, "can't be cast to the desired output type");
  wk_tensor *ob = wk_empty(WK_SHAPE(2), WK_OPTS(.dtype = WK_BOOL));
  ck_assert_ptr_null(wk_abs_out(i, ob));
  TU_FAILS_WITH(WK_ERR_DTYPE, "can't be cast to the desired output type");
  /* NULL tensors */
  ck_assert_ptr_null(wk_exp(NULL));
  TU_FAILS_WITH(WK_ERR_NULL, "NULL");
  ck_assert_ptr_null(wk_relu_(NULL));
  TU_FAILS_WITH(WK_ERR_NULL, "NULL");
  ck_assert_ptr_null(wk_sin_out(f, NULL));
  TU_FAILS_WITH(WK_ERR_NULL, "NULL");
  ck_assert_ptr_null(wk_clamp(NULL, 0, 1));
  TU_FAILS_WITH(WK_ERR_NULL, "NULL");
  ck_assert_ptr_null(wk_nan_to_num(NULL));
  TU_FAILS_WITH(WK_ERR_NULL, "NULL");
  /* a NULL from an earlier failure propagates, keeping the first error */
  ck_assert_ptr_null(wk_exp(wk_neg(b)));
  TU_FAILS_WITH(WK_ERR_DTYPE, "Negation");
  wk_release(o3);
  wk_release(oi);
  wk_release(ob);
  wk_release(u);
  wk_release(b);
  wk_release(i);
  wk_release(f);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("check_ops_unary");
  TCase *tc = tcase_create("sweep");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_set_timeout(tc, 60);
  tcase_add_loop_test(tc, test_unary_sweep, 0, N_OPS);
  tcase_add_test(tc, test_unary_large_parallel);
  suite_add_tcase(s, tc);
  tc = tcase_create("semantics");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_test(tc, test_unary_round_half_to_even);
  tcase_add_test(tc, test_unary_special_values);
  tcase_add_test(tc, test_unary_int_wraparound);
  tcase_add_test(tc, test_unary_promotion);
  tcase_add_test(tc, test_unary_clamp_semantics);
  tcase_add_test(tc, test_unary_nan_to_num);
  tcase_add_test(tc, test_unary_out_variants);
  suite_add_tcase(s, tc);
  tc = tcase_create("errors");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_test(tc, test_unary_errors);
  suite_add_tcase(s, tc);
  return s;
}
TU_MAIN(make_suite)
