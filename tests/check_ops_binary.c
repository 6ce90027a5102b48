/* check_ops_binary: the cpu plugin's binary pointwise ops (add, sub, mul, div
 * with rounding modes, maximum, minimum, pow, logical and/or, comparisons,
 * where) against float64 references computed here, over every dtype pair,
 * broadcasting, strided and zero-size operands, PyTorch's type promotion, the
 * in-place, out= and Scalar variants, bad input and leaks. */
#include "testutil.h"

static const wk_dtype ALL[] = {WK_F32, WK_F64, WK_F16, WK_BF16, WK_I8, WK_U8, WK_I16, WK_I32, WK_I64, WK_BOOL};
#define NDT ((int)(sizeof ALL / sizeof ALL[0]))

/* ---- helpers ------------------------------------------------------------------------ */

/* PyTorch's promoteTypes table (c10/core/ScalarType.cpp), written out here so
 * the test does not depend on wk_promote_types. Order: u8 i8 i16 i32 i64 f16 f32
 * f64 bool bf16. */
static wk_dtype promote(wk_dtype a, wk_dtype b) {
  static const wk_dtype order[10] = {WK_U8, WK_I8, WK_I16, WK_I32, WK_I64, WK_F16, WK_F32, WK_F64, WK_BOOL, WK_BF16};
  /* clang-format off */
  enum { u1 = WK_U8, i1 = WK_I8, i2 = WK_I16, i4 = WK_I32, i8 = WK_I64, f2 = WK_F16, f4 = WK_F32, f8 = WK_F64,
         b1 = WK_BOOL, bf = WK_BF16 };
  static const int table[10][10] = {
      /*        u1  i1  i2  i4  i8  f2  f4  f8  b1  bf */
      /* u1 */ {u1, i2, i2, i4, i8, f2, f4, f8, u1, bf},
      /* i1 */ {i2, i1, i2, i4, i8, f2, f4, f8, i1, bf},
      /* i2 */ {i2, i2, i2, i4, i8, f2, f4, f8, i2, bf},
      /* i4 */ {i4, i4, i4, i4, i8, f2, f4, f8, i4, bf},
      /* i8 */ {i8, i8, i8, i8, i8, f2, f4, f8, i8, bf},
      /* f2 */ {f2, f2, f2, f2, f2, f2, f4, f8, f2, f4},
      /* f4 */ {f4, f4, f4, f4, f4, f4, f4, f8, f4, f4},
      /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8},
      /* b1 */ {u1, i1, i2, i4, i8, f2, f4, f8, b1, bf},
      /* bf */ {bf, bf, bf, bf, bf, f4, f4, f8, bf, bf},
  };
  /* clang-format on */
  int ia = -1, ib = -1;
  for (int i = 0; i < 10; i++) {
    if (order[i] == a) ia = i;
    if (order[i] == b) ib = i;
  }
  ck_assert(ia >= 0 && ib >= 0);
  return (wk_dtype)table[ia][ib];
}

static double scalar_f64(const wk_value *v) {
  return v->tag == WK_V_INT ? (double)v->u.i : v->tag == WK_V_BOOL ? (double)v->u.b : v->u.f;
}

static bool is_float(wk_dtype d) {
  return d == WK_F32 || d == WK_F64 || d == WK_F16 || d == WK_BF16;
}

enum { R_NONZERO = 1, R_HALVES = 2 };

/* Random tensor with values in [lo, hi): integers floored (u8 kept >= 0),
 * bools fair coins; R_NONZERO keeps values away from 0 (ints: 0 -> 1, floats:
 * |x| >= 0.5, bools: all true), R_HALVES rounds floats to multiples of 0.5 so
 * comparisons see ties. */
static wk_tensor *rnd(wk_dtype dt, const int64_t *sizes, int nd, double lo, double hi, uint64_t seed, int flags) {
  int64_t n = 1;
  for (int i = 0; i < nd; i++) n *= sizes[i];
  double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 12345;
  if (dt == WK_U8 && lo < 0) lo = 0;
  for (int64_t i = 0; i < n; i++) {
    double x = lo + (hi - lo) * tu_uniform(&s);
    if (dt == WK_BOOL)
      x = tu_uniform(&s) < 0.5;
    else if (!is_float(dt))
      x = floor(x);
    else if (flags & R_HALVES)
      x = floor(x * 2) / 2;
    if ((flags & R_NONZERO) && is_float(dt) && fabs(x) < 0.5) x = x < 0 ? -0.5 : 0.5; /* keeps quotients small */
    if ((flags & R_NONZERO) && x == 0) x = 1;
    v[i] = x;
  }
  wk_tensor *t = tu_tensor(v, dt, sizes, nd);
  free(v);
  return t;
}
#define RND(dt, lo, hi, seed, flags, ...) rnd(dt, WK_SHAPE(__VA_ARGS__), lo, hi, seed, flags)

/* NumPy broadcasting, computed independently of the SDK. Returns ndim or -1. */
static int bshape(wk_tensor *const *ts, int n, int64_t *out) {
  int nd = 0;
  for (int i = 0; i < n; i++)
    if (wk_tensor_dim(ts[i]) > nd) nd = wk_tensor_dim(ts[i]);
  for (int d = 0; d < nd; d++) out[d] = 1;
  for (int i = 0; i < n; i++) {
    int tn = wk_tensor_dim(ts[i]);
    for (int d = 0; d < tn; d++) {
      int64_t s = wk_tensor_size(ts[i], d), *o = &out[nd - tn + d];
      if (s == *o || s == 1) continue;
      if (*o != 1) return -1;
      *o = s;
    }
  }
  return nd;
}

/* Row-major index into t's values of the element that broadcasts to idx. */
static int64_t bindex(wk_tensor *t, const int64_t *idx, int nd) {
  int tn = wk_tensor_dim(t);
  int64_t k = 0;
  for (int d = 0; d < tn; d++) {
    int64_t s = wk_tensor_size(t, d);
    k = k * s + (s == 1 ? 0 : idx[nd - tn + d]);
  }
  return k;
}

typedef double (*ref_fn)(const double *x, const void *ctx);

typedef struct {
  int nd;
  int64_t shape[WK_MAX_DIMS];
  int64_t n;
  double *v; /* malloc'd */
} ref_t;

/* Applies f elementwise over the broadcast of ts[0..n-1] in float64. */
static ref_t ref_map(wk_tensor *const *ts, int n, ref_fn f, const void *ctx) {
  ref_t r = {0};
  r.nd = bshape(ts, n, r.shape);
  ck_assert_msg(r.nd >= 0, "test bug: operands do not broadcast");
  r.n = 1;
  for (int d = 0; d < r.nd; d++) r.n *= r.shape[d];
  double *in[4];
  for (int i = 0; i < n; i++) in[i] = tu_values(ts[i]);
  r.v = malloc(sizeof(double) * (size_t)(r.n ? r.n : 1));
  int64_t idx[WK_MAX_DIMS] = {0};
  for (int64_t k = 0; k < r.n; k++) {
    double x[4];
    for (int i = 0; i < n; i++) x[i] = in[i][bindex(ts[i], idx, r.nd)];
    r.v[k] = f(x, ctx);
    for (int d = r.nd - 1; d >= 0; d--) {
      if (++idx[d] < r.shape[d]) break;
      idx[d] = 0;
    }
  }
  for (int i = 0; i < n; i++) free(in[i]);
  return r;
}

/* The value a result of dtype dt holds for the exact value v: integers wrap
 * like C casts, bools are v != 0; floats stay (tolerances cover rounding). */
static double as_dtype(wk_dtype dt, double v) {
  if (is_float(dt)) return v;
  if (dt == WK_BOOL) return v != 0;
  int64_t i = (int64_t)v;
  switch (dt) {
    case WK_I8:
      return (int8_t)i;
    case WK_U8:
      return (uint8_t)i;
    case WK_I16:
      return (int16_t)i;
    case WK_I32:
      return (int32_t)i;
    default:
      return (double)i;
  }
}

static double rtol_of(wk_dtype dt) {
  return dt == WK_F64 ? 1e-12 : dt == WK_F32 ? 1e-5 : dt == WK_F16 ? 1e-2 : dt == WK_BF16 ? 2e-2 : 0;
}
static double atol_of(wk_dtype dt) {
  return dt == WK_F64 ? 1e-12 : dt == WK_F32 ? 1e-6 : dt == WK_F16 ? 1e-3 : dt == WK_BF16 ? 1e-2 : 0;
}

/* Asserts r has dtype dt, the reference's shape, and its values within the
 * tolerance of dtype tol_dt (the dtype the result was computed in). */
static void check_ref_tol_(wk_tensor *r, wk_dtype dt, wk_dtype tol_dt, ref_t *ref, const char *what, int line) {
  ck_assert_msg(r != NULL, "line %d: %s is NULL: %s", line, what, wk_last_error_message());
  ck_assert_msg(wk_tensor_dtype(r) == dt, "line %d: %s has dtype %s, expected %s", line, what,
                wk_dtype_name(wk_tensor_dtype(r)), wk_dtype_name(dt));
  ck_assert_msg(wk_tensor_dim(r) == ref->nd, "line %d: %s has %d dims, expected %d", line, what, wk_tensor_dim(r),
                ref->nd);
  for (int d = 0; d < ref->nd; d++)
    ck_assert_msg(wk_tensor_size(r, d) == ref->shape[d], "line %d: %s size[%d] = %lld, expected %lld", line, what, d,
                  (long long)wk_tensor_size(r, d), (long long)ref->shape[d]);
  for (int64_t k = 0; k < ref->n; k++) ref->v[k] = as_dtype(dt, ref->v[k]);
  tu_assert_close_(r, ref->v, ref->n, rtol_of(tol_dt), atol_of(tol_dt), what, line);
}
static void check_ref_(wk_tensor *r, wk_dtype dt, ref_t *ref, const char *what, int line) {
  check_ref_tol_(r, dt, dt, ref, what, line);
}
#define CHECK_REF(r, dt, ref) check_ref_(r, dt, ref, #r, __LINE__)

/* Sizes of t as a ck-friendly check. */
#define CHECK_SHAPE(t, ...)                                                              \
  do {                                                                                   \
    const int64_t want_[] = {__VA_ARGS__};                                               \
    int wn_ = (int)(sizeof want_ / sizeof want_[0]);                                     \
    ck_assert_int_eq(wk_tensor_dim(t), wn_);                                             \
    for (int d_ = 0; d_ < wn_; d_++) ck_assert_int_eq(wk_tensor_size(t, d_), want_[d_]); \
  } while (0)

/* Calls an op by name; the result is a new reference (or the borrowed mutated
 * argument for in-place/out= ops), NULL on error. */
static wk_tensor *call1(const char *name, const wk_value *a, int n) {
  wk_value o[WK_MAX_OUTS];
  if (wk_call(name, a, n, o) != WK_OK) return NULL;
  return o[0].u.t;
}
#define CALL(name, ...) call1(name, (const wk_value[]){__VA_ARGS__}, WK__NARGS(__VA_ARGS__))

#define LEAK_BEGIN int64_t live0_ = wk_live_tensors()
#define LEAK_END ck_assert_int_eq(wk_live_tensors(), live0_)

/* ---- the op table ------------------------------------------------------------------- */
typedef enum { K_ARITH, K_TRUEDIV, K_ROUNDDIV, K_BOOL } kind_t;

typedef struct {
  const char *name;
  kind_t kind;
  wk_tensor *(*fn)(wk_tensor *, wk_tensor *);
  ref_fn ref;
  double lo, hi; /* value range for both operands */
  int bflags;    /* rnd() flags for the operands */
} opdesc;

/* clang-format off */
static double r_add(const double *x, const void *c) { (void)c; return x[0] + x[1]; }
static double r_sub(const double *x, const void *c) { (void)c; return x[0] - x[1]; }
static double r_mul(const double *x, const void *c) { (void)c; return x[0] * x[1]; }
static double r_div(const double *x, const void *c) { (void)c; return x[0] / x[1]; }
static double r_trunc(const double *x, const void *c) { (void)c; return trunc(x[0] / x[1]); }
static double r_floor(const double *x, const void *c) { (void)c; return floor(x[0] / x[1]); }
static double r_max(const double *x, const void *c) {
  (void)c;
  return isnan(x[0]) || isnan(x[1]) ? NAN : x[0] > x[1] ? x[0] : x[1];
}
static double r_min(const double *x, const void *c) {
  (void)c;
  return isnan(x[0]) || isnan(x[1]) ? NAN : x[0] < x[1] ? x[0] : x[1];
}
static double r_pow(const double *x, const void *c) { (void)c; return pow(x[0], x[1]); }
static double r_and(const double *x, const void *c) { (void)c; return x[0] != 0 && x[1] != 0; }
static double r_or(const double *x, const void *c) { (void)c; return x[0] != 0 || x[1] != 0; }
static double r_eq(const double *x, const void *c) { (void)c; return x[0] == x[1]; }
static double r_ne(const double *x, const void *c) { (void)c; return x[0] != x[1]; }
static double r_lt(const double *x, const void *c) { (void)c; return x[0] < x[1]; }
static double r_le(const double *x, const void *c) { (void)c; return x[0] <= x[1]; }
static double r_gt(const double *x, const void *c) { (void)c; return x[0] > x[1]; }
static double r_ge(const double *x, const void *c) { (void)c; return x[0] >= x[1]; }
static double r_where(const double *x, const void *c) { (void)c; return x[0] != 0 ? x[1] : x[2]; }
/* clang-format on */

static wk_tensor *div_trunc(wk_tensor *a, wk_tensor *b) {
  return wk_div_mode(a, b, "trunc");
}
static wk_tensor *div_floor(wk_tensor *a, wk_tensor *b) {
  return wk_div_mode(a, b, "floor");
}

static const opdesc OPS[] = {
    {"add", K_ARITH, wk_add, r_add, -8, 8, 0},
    {"sub", K_ARITH, wk_sub, r_sub, -8, 8, 0},
    {"mul", K_ARITH, wk_mul, r_mul, -6, 6, 0},
    {"div", K_TRUEDIV, wk_div, r_div, -8, 8, R_NONZERO},
    {"div_trunc", K_ROUNDDIV, div_trunc, r_trunc, -9, 9, R_NONZERO},
    {"div_floor", K_ROUNDDIV, div_floor, r_floor, -9, 9, R_NONZERO},
    {"maximum", K_ARITH, wk_maximum, r_max, -5, 5, R_HALVES},
    {"minimum", K_ARITH, wk_minimum, r_min, -5, 5, R_HALVES},
    {"pow", K_ARITH, wk_pow, r_pow, 0.5, 3.5, 0},
    {"logical_and", K_BOOL, wk_logical_and, r_and, -2, 2, R_HALVES},
    {"logical_or", K_BOOL, wk_logical_or, r_or, -2, 2, R_HALVES},
    {"eq", K_BOOL, wk_eq, r_eq, -2, 2, R_HALVES},
    {"ne", K_BOOL, wk_ne, r_ne, -2, 2, R_HALVES},
    {"lt", K_BOOL, wk_lt, r_lt, -2, 2, R_HALVES},
    {"le", K_BOOL, wk_le, r_le, -2, 2, R_HALVES},
    {"gt", K_BOOL, wk_gt, r_gt, -2, 2, R_HALVES},
    {"ge", K_BOOL, wk_ge, r_ge, -2, 2, R_HALVES},
};
#define NOPS ((int)(sizeof OPS / sizeof OPS[0]))

static int category(wk_dtype d) {
  return d == WK_BOOL ? 0 : is_float(d) ? 2 : 1;
}

/* PyTorch's result_type for two tensors: a 0-dim tensor beside a dimensioned
 * one only counts when its category (bool < int < float) is higher. */
static wk_dtype result_type2(wk_tensor *a, wk_tensor *b) {
  wk_dtype da = wk_tensor_dtype(a), db = wk_tensor_dtype(b);
  bool za = wk_tensor_dim(a) == 0, zb = wk_tensor_dim(b) == 0;
  if (za == zb) return promote(da, db);
  wk_dtype dim = za ? db : da, zero = za ? da : db;
  return category(zero) > category(dim) ? promote(dim, zero) : dim;
}

/* Result dtype PyTorch gives op(a, b), or DEFAULT where PyTorch raises. */
static wk_dtype expected_dtype(const opdesc *op, wk_tensor *ta, wk_tensor *tb) {
  wk_dtype a = wk_tensor_dtype(ta), b = wk_tensor_dtype(tb);
  wk_dtype p = result_type2(ta, tb);
  if (op->kind == K_BOOL) return WK_BOOL;
  if (!strcmp(op->name, "sub") && (a == WK_BOOL || b == WK_BOOL)) return WK_DTYPE_DEFAULT;
  if ((op->kind == K_ROUNDDIV || !strcmp(op->name, "pow")) && p == WK_BOOL) return WK_DTYPE_DEFAULT;
  if (op->kind == K_TRUEDIV && !is_float(p)) return WK_F32;
  return p;
}

/* Runs op on a and b and checks against the reference (or the error). */
static void check_op_(const opdesc *op, wk_tensor *a, wk_tensor *b, int line) {
  wk_dtype want = expected_dtype(op, a, b);
  wk_tensor *r = op->fn(a, b);
  char what[128];
  snprintf(what, sizeof what, "%s(%s, %s)", op->name, wk_dtype_name(wk_tensor_dtype(a)),
           wk_dtype_name(wk_tensor_dtype(b)));
  if (want == WK_DTYPE_DEFAULT) {
    ck_assert_msg(r == NULL, "line %d: %s should fail", line, what);
    ck_assert_int_eq(wk_last_error(), WK_ERR_DTYPE);
    wk_clear_error();
    return;
  }
  wk_tensor *ts[2] = {a, b};
  ref_t ref = ref_map(ts, 2, op->ref, NULL);
  check_ref_(r, want, &ref, what, line);
  free(ref.v);
  wk_release(r);
}
#define CHECK_OP(op, a, b) check_op_(op, a, b, __LINE__)

/* ---- forward against the reference --------------------------------------------------- */

START_TEST(test_binary_every_dtype_pair) {
  LEAK_BEGIN;
  for (int o = 0; o < NOPS; o++) {
    const opdesc *op = &OPS[o];
    for (int i = 0; i < NDT; i++)
      for (int j = 0; j < NDT; j++) {
        uint64_t seed = (uint64_t)(o * 100 + i * 10 + j + 1);
        wk_tensor *a = RND(ALL[i], op->lo, op->hi, seed, op->bflags, 3, 1, 4);
        wk_tensor *b = RND(ALL[j], op->lo, op->hi, seed + 7777, op->bflags, 2, 1);
        CHECK_OP(op, a, b);
        CHECK_OP(op, b, a);
        wk_release(a);
        wk_release(b);
      }
  }
  LEAK_END;
}
END_TEST

START_TEST(test_binary_random_shapes_seeds) {
  LEAK_BEGIN;
  static const int64_t shapes[][2][4] = {
      /* {ndim a, sizes...}, {ndim b, sizes...} (first entry of each is ndim) */
      {{3, 3, 1, 4}, {2, 2, 1}}, {{2, 5, 7}, {2, 5, 7}}, {{1, 6}, {3, 4, 1, 6}},       {{3, 2, 3, 1}, {1, 5}},
      {{2, 1, 9}, {2, 8, 1}},    {{1, 1}, {3, 2, 2, 2}}, {{3, 4, 1, 3}, {3, 1, 5, 1}},
  };
  const wk_dtype dts[] = {WK_F32, WK_F64, WK_I64, WK_F16};
  for (int o = 0; o < NOPS; o++)
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
      for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        const opdesc *op = &OPS[o];
        uint64_t seed = 1000 + (uint64_t)(o * 97 + (int)s * 13 + (int)d);
        const int64_t *sa = shapes[s][0], *sb = shapes[s][1];
        wk_tensor *a = rnd(dts[d], sa + 1, (int)sa[0], op->lo, op->hi, seed, op->bflags);
        wk_tensor *b = rnd(dts[(d + s) % 4], sb + 1, (int)sb[0], op->lo, op->hi, seed + 1, op->bflags);
        CHECK_OP(op, a, b);
        wk_release(a);
        wk_release(b);
      }
  LEAK_END;
}
END_TEST

/* Transposed, sliced, expanded and permuted operands give the same values as
 * their contiguous copies would. */
START_TEST(test_binary_noncontiguous) {
  LEAK_BEGIN;
  const wk_dtype dts[] = {WK_F32, WK_I64, WK_F16, WK_U8};
  for (int o = 0; o < NOPS; o++)
    for (int d = 0; d < 4; d++) {
      const opdesc *op = &OPS[o];
      uint64_t seed = 5000 + (uint64_t)(o * 11 + d);
      wk_dtype dt = dts[d];
      /* noncontig a (every other element) with a transposed b */
      wk_tensor *a0 = RND(dt, op->lo, op->hi, seed, op->bflags, 4, 5);
      wk_tensor *b0 = RND(dt, op->lo, op->hi, seed + 1, op->bflags, 5, 4);
      wk_tensor *a = tu_noncontig(a0), *b = wk_t(b0);
      ck_assert(!wk_tensor_is_contiguous(a) && !wk_tensor_is_contiguous(b));
      CHECK_OP(op, a, b);
      CHECK_OP(op, b, a);
      wk_release(a);
      wk_release(b);
      /* strided slice of rows with an expanded (stride 0) row */
      wk_tensor *big = RND(dt, op->lo, op->hi, seed + 2, op->bflags, 8, 5);
      wk_tensor *row = RND(dt, op->lo, op->hi, seed + 3, op->bflags, 1, 5);
      a = wk_slice(big, 0, 1, 8, 2);
      b = wk_expand(row, WK_SHAPE(4, 5));
      CHECK_SHAPE(a, 4, 5);
      ck_assert_int_eq(wk_tensor_stride(b, 0), 0);
      CHECK_OP(op, a, b);
      CHECK_OP(op, b, a);
      wk_release(a);
      wk_release(b);
      /* 3-d permutation broadcast against a transposed column */
      wk_tensor *c0 = RND(dt, op->lo, op->hi, seed + 4, op->bflags, 4, 2, 3);
      wk_tensor *c = wk_permute(c0, WK_SHAPE(1, 2, 0)); /* [2, 3, 4] */
      wk_tensor *col0 = RND(dt, op->lo, op->hi, seed + 5, op->bflags, 1, 3);
      wk_tensor *col = wk_t(col0); /* [3, 1] */
      CHECK_OP(op, c, col);
      CHECK_OP(op, col, c);
      wk_release(c);
      wk_release(col);
      wk_release(c0);
      wk_release(col0);
      wk_release(big);
      wk_release(row);
      wk_release(a0);
      wk_release(b0);
    }
  LEAK_END;
}
END_TEST

START_TEST(test_binary_zero_size_and_zero_dim) {
  LEAK_BEGIN;
  static const int64_t shapes[][2][4] = {
      {{2, 0, 3}, {1, 3}}, {{2, 2, 0}, {2, 2, 1}}, {{1, 0}, {0}},       {{0}, {0}},
      {{0}, {2, 2, 3}},    {{2, 1, 0}, {2, 3, 1}}, {{3, 2, 0, 4}, {0}}, {{1, 3}, {0}},
  };
  for (int o = 0; o < NOPS; o++)
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
      const opdesc *op = &OPS[o];
      const int64_t *sa = shapes[s][0], *sb = shapes[s][1];
      wk_dtype dt = s % 2 ? WK_F32 : WK_I32;
      wk_tensor *a = rnd(dt, sa + 1, (int)sa[0], op->lo, op->hi, 1 + s, op->bflags);
      wk_tensor *b = rnd(WK_F64, sb + 1, (int)sb[0], op->lo, op->hi, 2 + s, op->bflags);
      CHECK_OP(op, a, b);
      CHECK_OP(op, b, a);
      wk_release(a);
      wk_release(b);
    }
  /* a broadcast that fails for zero-size dims too */
  wk_tensor *a = wk_zeros(WK_SHAPE(0, 3), (wk_options){0}), *b = wk_zeros(WK_SHAPE(2, 3), (wk_options){0});
  ck_assert_ptr_null(wk_add(a, b));
  TU_FAILS_WITH(WK_ERR_SHAPE, "must match");
  wk_release(a);
  wk_release(b);
  LEAK_END;
}
END_TEST

/* Large enough to run over the thread pool; integer division stays serial. */
START_TEST(test_binary_large_parallel) {
  LEAK_BEGIN;
  wk_tensor *a = RND(WK_F32, -4, 4, 1, 0, 300, 257);
  wk_tensor *b = RND(WK_F32, -4, 4, 2, R_NONZERO, 257);
  wk_tensor *ai = RND(WK_I64, -50, 50, 3, 0, 300, 257);
  wk_tensor *bi = RND(WK_I32, -9, 9, 4, R_NONZERO, 300, 1);
  for (int o = 0; o < NOPS; o++) {
    if (OPS[o].kind == K_ROUNDDIV || !strcmp(OPS[o].name, "pow")) continue; /* ranges differ */
    CHECK_OP(&OPS[o], a, b);
    CHECK_OP(&OPS[o], ai, bi);
  }
  const opdesc floor_op = {"div_floor", K_ROUNDDIV, div_floor, r_floor, 0, 0, 0};
  CHECK_OP(&floor_op, ai, bi);
  CHECK_OP(&floor_op, a, b);
  wk_release(a);
  wk_release(b);
  wk_release(ai);
  wk_release(bi);
  LEAK_END;
}
END_TEST

/* ---- type promotion -------------------------------------------------------------------- */

static void expect_dtype_(wk_tensor *r, wk_dtype dt, int line) {
  ck_assert_msg(r != NULL, "line %d: NULL: %s", line, wk_last_error_message());
  ck_assert_msg(wk_tensor_dtype(r) == dt, "line %d: dtype %s, expected %s", line, wk_dtype_name(wk_tensor_dtype(r)),
                wk_dtype_name(dt));
  wk_release(r);
}
#define EXPECT_DTYPE(r, dt) expect_dtype_(r, dt, __LINE__)

START_TEST(test_binary_promotion_rules) {
  LEAK_BEGIN;
  wk_tensor *t[NDT], *z[NDT];
  for (int i = 0; i < NDT; i++) {
    t[i] = wk_ones(WK_SHAPE(2), WK_OPTS(.dtype = ALL[i]));
    z[i] = wk_scalar_tensor(1, ALL[i]);
  }
#define T_(d)            \
  t[(d) == WK_F32    ? 0 \
    : (d) == WK_F64  ? 1 \
    : (d) == WK_F16  ? 2 \
    : (d) == WK_BF16 ? 3 \
    : (d) == WK_I8   ? 4 \
    : (d) == WK_U8   ? 5 \
    : (d) == WK_I16  ? 6 \
    : (d) == WK_I32  ? 7 \
    : (d) == WK_I64  ? 8 \
                     : 9]
#define Z_(d)            \
  z[(d) == WK_F32    ? 0 \
    : (d) == WK_F64  ? 1 \
    : (d) == WK_F16  ? 2 \
    : (d) == WK_BF16 ? 3 \
    : (d) == WK_I8   ? 4 \
    : (d) == WK_U8   ? 5 \
    : (d) == WK_I16  ? 6 \
    : (d) == WK_I32  ? 7 \
    : (d) == WK_I64  ? 8 \
                     : 9]
  /* dimensioned tensors: promote_types */
  EXPECT_DTYPE(wk_add(T_(WK_I32), T_(WK_I64)), WK_I64);
  EXPECT_DTYPE(wk_add(T_(WK_U8), T_(WK_I8)), WK_I16);
  EXPECT_DTYPE(wk_mul(T_(WK_F16), T_(WK_BF16)), WK_F32);
  EXPECT_DTYPE(wk_add(T_(WK_BOOL), T_(WK_BOOL)), WK_BOOL);
  EXPECT_DTYPE(wk_mul(T_(WK_BOOL), T_(WK_U8)), WK_U8);
  EXPECT_DTYPE(wk_add(T_(WK_I64), T_(WK_F16)), WK_F16);
  EXPECT_DTYPE(wk_add(T_(WK_BF16), T_(WK_I16)), WK_BF16);
  EXPECT_DTYPE(wk_div(T_(WK_I32), T_(WK_I64)), WK_F32);
  EXPECT_DTYPE(wk_div(T_(WK_BOOL), T_(WK_BOOL)), WK_F32);
  EXPECT_DTYPE(wk_div(T_(WK_F16), T_(WK_I64)), WK_F16);
  EXPECT_DTYPE(wk_div_mode(T_(WK_I32), T_(WK_I8), "floor"), WK_I32);
  /* Python scalars only raise the category */
  EXPECT_DTYPE(wk_add_scalar(T_(WK_I64), 2.5), WK_F32);
  EXPECT_DTYPE(wk_add_scalar(T_(WK_I32), 2.5), WK_F32);
  EXPECT_DTYPE(wk_mul_scalar(T_(WK_U8), 2.0), WK_F32);
  EXPECT_DTYPE(wk_add_scalar(T_(WK_F16), 2.5), WK_F16);
  EXPECT_DTYPE(wk_add_scalar(T_(WK_BF16), 2.5), WK_BF16);
  EXPECT_DTYPE(wk_mul_scalar(T_(WK_F64), 2.5), WK_F64);
  EXPECT_DTYPE(wk_mul_scalar(T_(WK_BOOL), 2.5), WK_F32);
  EXPECT_DTYPE(wk_div_scalar(T_(WK_I8), 2), WK_F32);
  EXPECT_DTYPE(CALL("add.Scalar", WK_VT(T_(WK_I8)), WK_VI(3)), WK_I8);
  EXPECT_DTYPE(CALL("add.Scalar", WK_VT(T_(WK_U8)), WK_VI(3)), WK_U8);
  EXPECT_DTYPE(CALL("add.Scalar", WK_VT(T_(WK_BOOL)), WK_VI(3)), WK_I64);
  EXPECT_DTYPE(CALL("add.Scalar", WK_VT(T_(WK_BOOL)), WK_VB(true)), WK_BOOL);
  EXPECT_DTYPE(CALL("mul.Scalar", WK_VT(T_(WK_I16)), WK_VB(true)), WK_I16);
  EXPECT_DTYPE(CALL("mul.Scalar", WK_VT(T_(WK_F16)), WK_VI(3)), WK_F16);
  EXPECT_DTYPE(CALL("div.Scalar", WK_VT(T_(WK_I16)), WK_VI(3)), WK_F32);
  EXPECT_DTYPE(CALL("div.Scalar", WK_VT(T_(WK_I16)), WK_VI(3), WK_VS("trunc")), WK_I16);
  /* 0-dim tensors: like scalars, but their dtype counts within a higher category */
  EXPECT_DTYPE(wk_add(T_(WK_I64), Z_(WK_F64)), WK_F64);
  EXPECT_DTYPE(wk_add(T_(WK_I32), Z_(WK_F16)), WK_F16);
  EXPECT_DTYPE(wk_add(T_(WK_F16), Z_(WK_F64)), WK_F16);
  EXPECT_DTYPE(wk_add(T_(WK_F32), Z_(WK_F64)), WK_F32);
  EXPECT_DTYPE(wk_add(T_(WK_I32), Z_(WK_I64)), WK_I32);
  EXPECT_DTYPE(wk_add(T_(WK_U8), Z_(WK_I8)), WK_U8);
  EXPECT_DTYPE(wk_add(T_(WK_BOOL), Z_(WK_I64)), WK_I64);
  EXPECT_DTYPE(wk_add(Z_(WK_F64), T_(WK_BF16)), WK_BF16);
  EXPECT_DTYPE(wk_add(Z_(WK_I32), Z_(WK_I64)), WK_I64);
  EXPECT_DTYPE(wk_add(Z_(WK_F16), Z_(WK_BF16)), WK_F32);
  EXPECT_DTYPE(wk_add(Z_(WK_U8), Z_(WK_I8)), WK_I16);
  EXPECT_DTYPE(wk_mul(Z_(WK_I8), T_(WK_U8)), WK_U8);
  EXPECT_DTYPE(CALL("add.Scalar", WK_VT(Z_(WK_I32)), WK_VF(1.5)), WK_F32);
  EXPECT_DTYPE(CALL("add.Scalar", WK_VT(Z_(WK_F64)), WK_VF(1.5)), WK_F64);
  EXPECT_DTYPE(CALL("add.Scalar", WK_VT(Z_(WK_I16)), WK_VI(1)), WK_I16);
  /* results that are always bool */
  EXPECT_DTYPE(wk_lt(T_(WK_F16), T_(WK_I64)), WK_BOOL);
  EXPECT_DTYPE(wk_eq_scalar(T_(WK_I8), 2.5), WK_BOOL);
  EXPECT_DTYPE(wk_logical_and(T_(WK_F32), T_(WK_I8)), WK_BOOL);
  EXPECT_DTYPE(wk_logical_or_scalar(T_(WK_F64), 0), WK_BOOL);
  /* where promotes its two value operands */
  wk_tensor *cond = wk_ones(WK_SHAPE(2), WK_OPTS(.dtype = WK_BOOL));
  EXPECT_DTYPE(wk_where(cond, T_(WK_I32), T_(WK_I64)), WK_I64);
  EXPECT_DTYPE(wk_where(cond, T_(WK_I32), Z_(WK_F64)), WK_F64);
  EXPECT_DTYPE(wk_where(cond, T_(WK_F16), Z_(WK_F64)), WK_F16);
  EXPECT_DTYPE(wk_where(cond, T_(WK_U8), T_(WK_I8)), WK_I16);
  wk_release(cond);
#undef T_
#undef Z_
  for (int i = 0; i < NDT; i++) {
    wk_release(t[i]);
    wk_release(z[i]);
  }
  LEAK_END;
}
END_TEST

/* Every tensor dtype with int, float and bool Scalars, for each Scalar op. */
START_TEST(test_binary_scalar_every_dtype) {
  LEAK_BEGIN;
  static const struct {
    const char *name;
    ref_fn ref;
    bool to_bool, true_div;
  } sops[] = {{"add.Scalar", r_add, false, false},      {"sub.Scalar", r_sub, false, false},
              {"mul.Scalar", r_mul, false, false},      {"div.Scalar", r_div, false, true},
              {"maximum.Scalar", r_max, false, false},  {"minimum.Scalar", r_min, false, false},
              {"pow.Scalar", r_pow, false, false},      {"logical_and.Scalar", r_and, true, false},
              {"logical_or.Scalar", r_or, true, false}, {"eq.Scalar", r_eq, true, false},
              {"ne.Scalar", r_ne, true, false},         {"lt.Scalar", r_lt, true, false},
              {"le.Scalar", r_le, true, false},         {"gt.Scalar", r_gt, true, false},
              {"ge.Scalar", r_ge, true, false}};
  const wk_value scalars[] = {WK_VI(2), WK_VF(1.5), WK_VB(true), WK_VF(-0.5), WK_VI(0)};
  for (size_t o = 0; o < sizeof sops / sizeof sops[0]; o++)
    for (int i = 0; i < NDT; i++)
      for (size_t k = 0; k < sizeof scalars / sizeof scalars[0]; k++) {
        wk_value sv = scalars[k];
        bool is_sub = !strcmp(sops[o].name, "sub.Scalar"), is_pow = !strcmp(sops[o].name, "pow.Scalar");
        bool is_div = sops[o].true_div;
        if (is_div && sv.tag != WK_V_FLOAT && scalar_f64(&sv) == 0) continue;
        wk_tensor *a = RND(ALL[i], is_pow ? 0.5 : -4, is_pow ? 3.5 : 4, 77 + (uint64_t)(o * 31 + (size_t)i * 5 + k),
                           R_HALVES, 2, 3);
        /* expected dtype: a Scalar raises the category only */
        wk_dtype want = ALL[i];
        if (sv.tag == WK_V_FLOAT && !is_float(ALL[i])) want = WK_F32;
        if (sv.tag == WK_V_INT && ALL[i] == WK_BOOL) want = WK_I64;
        if (is_div && !is_float(want)) want = WK_F32;
        if (sops[o].to_bool) want = WK_BOOL;
        wk_tensor *r = CALL(sops[o].name, WK_VT(a), sv);
        bool err = (is_sub && (ALL[i] == WK_BOOL || sv.tag == WK_V_BOOL)) || (is_pow && want == WK_BOOL);
        if (err) {
          ck_assert_msg(r == NULL, "%s(%s, tag %d) should fail", sops[o].name, wk_dtype_name(ALL[i]), sv.tag);
          ck_assert_int_eq(wk_last_error(), WK_ERR_DTYPE);
          wk_clear_error();
          wk_release(a);
          continue;
        }
        wk_tensor *sc = wk_scalar_tensor(scalar_f64(&sv), WK_F64);
        wk_tensor *ts[2] = {a, sc};
        ref_t ref = ref_map(ts, 2, sops[o].ref, NULL);
        char what[96];
        snprintf(what, sizeof what, "%s(%s, tag %d)", sops[o].name, wk_dtype_name(ALL[i]), sv.tag);
        check_ref_(r, want, &ref, what, __LINE__);
        free(ref.v);
        wk_release(r);
        wk_release(sc);
        wk_release(a);
      }
  LEAK_END;
}
END_TEST

/* ---- add / sub with alpha ---------------------------------------------------------------- */

static double r_axpy(const double *x, const void *c) {
  return x[0] + *(const double *)c * x[1];
}

START_TEST(test_binary_alpha) {
  LEAK_BEGIN;
  const wk_dtype fdts[] = {WK_F32, WK_F64, WK_F16, WK_BF16};
  for (int d = 0; d < 4; d++) {
    wk_tensor *a = RND(fdts[d], -3, 3, 10 + (uint64_t)d, 0, 3, 1, 4),
              *b = RND(fdts[d], -3, 3, 20 + (uint64_t)d, 0, 2, 1);
    wk_tensor *ts[2] = {a, b};
    double al = 0.5, nal = -0.5;
    ref_t ref = ref_map(ts, 2, r_axpy, &al);
    wk_tensor *r = wk_add_scaled(a, b, 0.5);
    CHECK_REF(r, fdts[d], &ref);
    free(ref.v);
    wk_release(r);
    ref = ref_map(ts, 2, r_axpy, &nal);
    r = wk_sub_scaled(a, b, 0.5);
    CHECK_REF(r, fdts[d], &ref);
    free(ref.v);
    wk_release(r);
    wk_release(a);
    wk_release(b);
  }
  /* integer tensors: integral alpha (int or integral-valued float) works */
  wk_tensor *i = TU_T(WK_I32, (4), 1, 2, 3, 4), *j = TU_T(WK_I32, (4), 10, 20, 30, 40);
  wk_tensor *r = CALL("add", WK_VT(i), WK_VT(j), WK_VI(3));
  ck_assert_int_eq(wk_tensor_dtype(r), WK_I32);
  TU_EQ_VALS(r, 31, 62, 93, 124);
  wk_release(r);
  r = CALL("sub", WK_VT(i), WK_VT(j), WK_VI(-2));
  TU_EQ_VALS(r, 21, 42, 63, 84);
  wk_release(r);
  r = wk_add_scaled(i, j, 2.0);
  ck_assert_int_eq(wk_tensor_dtype(r), WK_I32);
  TU_EQ_VALS(r, 21, 42, 63, 84);
  wk_release(r);
  r = CALL("add.Scalar", WK_VT(i), WK_VI(5), WK_VI(2));
  ck_assert_int_eq(wk_tensor_dtype(r), WK_I32);
  TU_EQ_VALS(r, 11, 12, 13, 14);
  wk_release(r);
  r = CALL("sub.Scalar", WK_VT(i), WK_VF(0.5), WK_VI(2));
  ck_assert_int_eq(wk_tensor_dtype(r), WK_F32);
  TU_EQ_VALS(r, 0, 1, 2, 3);
  wk_release(r);
  /* a fractional alpha with integer tensors is refused */
  ck_assert_ptr_null(wk_add_scaled(i, j, 0.5));
  TU_FAILS_WITH(WK_ERR_DTYPE, "alpha must not be a floating point number");
  ck_assert_ptr_null(wk_sub_scaled(i, j, 1.5));
  TU_FAILS_WITH(WK_ERR_DTYPE, "alpha must not be a floating point number");
  ck_assert_ptr_null(CALL("add.Scalar", WK_VT(i), WK_VI(1), WK_VF(0.25)));
  TU_FAILS_WITH(WK_ERR_DTYPE, "alpha must not be a floating point number");
  ck_assert_ptr_null(wk_add_scaled_(i, j, 0.5));
  TU_FAILS_WITH(WK_ERR_DTYPE, "alpha must not be a floating point number");
  TU_EQ_VALS(i, 1, 2, 3, 4);
  /* ... but is fine once a float operand makes the result floating */
  r = CALL("add.Scalar", WK_VT(i), WK_VF(1.0), WK_VF(0.25));
  ck_assert_int_eq(wk_tensor_dtype(r), WK_F32);
  TU_EQ_VALS(r, 1.25, 2.25, 3.25, 4.25);
  wk_release(r);
  /* bool alpha only with a bool result */
  ck_assert_ptr_null(CALL("add", WK_VT(i), WK_VT(j), WK_VB(true)));
  TU_FAILS_WITH(WK_ERR_DTYPE, "Boolean alpha only supported for Boolean results");
  wk_tensor *bt = TU_T(WK_BOOL, (2), 1, 0), *bf = TU_T(WK_BOOL, (2), 0, 0);
  r = CALL("add", WK_VT(bt), WK_VT(bf), WK_VB(true));
  ck_assert_int_eq(wk_tensor_dtype(r), WK_BOOL);
  TU_EQ_VALS(r, 1, 0);
  wk_release(r);
  /* alpha in the in-place and out= forms */
  wk_tensor *f = TU_T(WK_F32, (3), 1, 2, 3), *g = TU_T(WK_F32, (3), 4, 5, 6);
  ck_assert_ptr_eq(wk_add_scaled_(f, g, -1), f);
  TU_EQ_VALS(f, -3, -3, -3);
  wk_tensor *out = wk_empty(WK_SHAPE(3), WK_OPTS(.dtype = WK_F64));
  ck_assert_ptr_eq(CALL("add.out", WK_VT(f), WK_VT(g), WK_VF(2), WK_VT(out)), out);
  TU_EQ_VALS(out, 5, 7, 9);
  ck_assert_ptr_eq(CALL("sub.out", WK_VT(f), WK_VT(g), WK_VF(0.5), WK_VT(out)), out);
  TU_EQ_VALS(out, -5, -5.5, -6);
  ck_assert_ptr_eq(CALL("sub_", WK_VT(g), WK_VT(f), WK_VI(2)), g);
  TU_EQ_VALS(g, 10, 11, 12);
  wk_release(out);
  wk_release(f);
  wk_release(g);
  wk_release(bt);
  wk_release(bf);
  wk_release(i);
  wk_release(j);
  LEAK_END;
}
END_TEST

START_TEST(test_binary_integer_wraparound) {
  LEAK_BEGIN;
  wk_tensor *a = TU_T(WK_U8, (3), 250, 3, 16), *b = TU_T(WK_U8, (3), 10, 5, 16);
  wk_tensor *r = wk_add(a, b);
  TU_EQ_VALS(r, 4, 8, 32);
  wk_release(r);
  r = wk_sub(b, a);
  TU_EQ_VALS(r, 16, 2, 0);
  wk_release(r);
  r = wk_mul(a, b);
  TU_EQ_VALS(r, 196, 15, 0);
  wk_release(r);
  wk_tensor *c = TU_T(WK_I8, (2), 127, -128);
  r = wk_add_scalar(c, 1); /* a float scalar: f32, no wrap */
  TU_EQ_VALS(r, 128, -127);
  wk_release(r);
  r = CALL("add.Scalar", WK_VT(c), WK_VI(1));
  ck_assert_int_eq(wk_tensor_dtype(r), WK_I8);
  TU_EQ_VALS(r, -128, -127);
  wk_release(r);
  wk_tensor *big = wk_scalar_tensor(0, WK_I64);
  int64_t mx = INT64_MAX, v;
  memcpy(wk_tensor_data(big), &mx, 8);
  r = CALL("add.Scalar", WK_VT(big), WK_VI(1));
  TU_OK(wk_item_i64(r, &v));
  ck_assert(v == INT64_MIN);
  wk_release(r);
  wk_release(big);
  wk_release(a);
  wk_release(b);
  wk_release(c);
  LEAK_END;
}
END_TEST

START_TEST(test_binary_sub_bool_errors) {
  LEAK_BEGIN;
  wk_tensor *b = TU_T(WK_BOOL, (2), 1, 0), *i = TU_T(WK_I64, (2), 1, 2), *f = TU_T(WK_F32, (2), 1, 2);
  ck_assert_ptr_null(wk_sub(b, b));
  TU_FAILS_WITH(WK_ERR_DTYPE, "with two bool tensors is not supported");
  ck_assert_ptr_null(wk_sub(b, i));
  TU_FAILS_WITH(WK_ERR_DTYPE, "with a bool tensor is not supported");
  ck_assert_ptr_null(wk_sub(f, b));
  TU_FAILS_WITH(WK_ERR_DTYPE, "logical_not()");
  ck_assert_ptr_null(wk_sub_scalar(b, 1.0));
  TU_FAILS_WITH(WK_ERR_DTYPE, "with a bool tensor is not supported");
  ck_assert_ptr_null(CALL("sub.Scalar", WK_VT(i), WK_VB(true)));
  TU_FAILS_WITH(WK_ERR_DTYPE, "with a bool tensor is not supported");
  ck_assert_ptr_null(wk_sub_(f, b));
  TU_FAILS_WITH(WK_ERR_DTYPE, "sub");
  wk_tensor *out = wk_empty(WK_SHAPE(2), WK_OPTS(.dtype = WK_F32));
  ck_assert_ptr_null(wk_sub_out(b, b, out));
  TU_FAILS_WITH(WK_ERR_DTYPE, "logical_xor()");
  wk_release(out);
  wk_release(b);
  wk_release(i);
  wk_release(f);
  LEAK_END;
}
END_TEST

/* ---- div ---------------------------------------------------------------------------------- */

START_TEST(test_binary_div_rounding_modes) {
  LEAK_BEGIN;
  const wk_dtype dts[] = {WK_F32, WK_F64, WK_F16, WK_BF16, WK_I8, WK_I16, WK_I32, WK_I64};
  for (int d = 0; d < 8; d++) {
    wk_tensor *a = TU_T(dts[d], (6), -7, 7, -7, 7, 6, -6), *b = TU_T(dts[d], (6), 2, -2, -2, 2, 3, 4);
    wk_tensor *r = wk_div_mode(a, b, "trunc");
    ck_assert_int_eq(wk_tensor_dtype(r), dts[d]);
    TU_EQ_VALS(r, -3, -3, 3, 3, 2, -1);
    wk_release(r);
    r = wk_div_mode(a, b, "floor");
    ck_assert_int_eq(wk_tensor_dtype(r), dts[d]);
    TU_EQ_VALS(r, -4, -4, 3, 3, 2, -2);
    wk_release(r);
    r = wk_div(a, b);
    ck_assert_int_eq(wk_tensor_dtype(r), is_float(dts[d]) ? dts[d] : WK_F32);
    TU_EQ_VALS(r, -3.5, -3.5, 3.5, 3.5, 2, -1.5);
    wk_release(r);
    r = CALL("div.Scalar", WK_VT(a), WK_VI(-4), WK_VS("floor"));
    ck_assert_int_eq(wk_tensor_dtype(r), dts[d]);
    TU_EQ_VALS(r, 1, -2, 1, -2, -2, 1);
    wk_release(r);
    r = CALL("div.Scalar", WK_VT(a), WK_VI(-4), WK_VS("trunc"));
    TU_EQ_VALS(r, 1, -1, 1, -1, -1, 1);
    wk_release(r);
    wk_release(a);
    wk_release(b);
  }
  /* fractional floats, and the float rounding modes with a float scalar on ints */
  wk_tensor *x = TU_T(WK_F64, (4), 7.5, -7.5, 0.75, -0.75), *y = TU_T(WK_F64, (4), 0.5, 0.5, -0.5, 2);
  wk_tensor *r = wk_div_mode(x, y, "floor");
  TU_EQ_VALS(r, 15, -15, -2, -1);
  wk_release(r);
  r = wk_div_mode(x, y, "trunc");
  TU_EQ_VALS(r, 15, -15, -1, -0.0);
  wk_release(r);
  wk_tensor *ii = TU_T(WK_I64, (2), 5, -5);
  r = CALL("div.Scalar", WK_VT(ii), WK_VF(2.0), WK_VS("floor"));
  ck_assert_int_eq(wk_tensor_dtype(r), WK_F32);
  TU_EQ_VALS(r, 2, -3);
  wk_release(r);
  /* the sign of a zero floor quotient follows the true quotient */
  wk_tensor *z = TU_T(WK_F32, (3), -0.0, 0.0, 0.0), *zd = TU_T(WK_F32, (3), 2, -2, 2);
  r = wk_div_mode(z, zd, "floor");
  double v[3];
  TU_OK(wk_tensor_to_f64(r, v, 3));
  ck_assert(v[0] == 0 && signbit(v[0]) && signbit(v[1]) && !signbit(v[2]));
  wk_release(r);
  wk_release(z);
  wk_release(zd);
  /* float division by zero is IEEE, integer true division too (it is float) */
  wk_tensor *f = TU_T(WK_F32, (3), 1, -1, 0), *f0 = TU_T(WK_F32, (3), 0, 0, 0);
  r = wk_div(f, f0);
  TU_EQ_VALS(r, INFINITY, -INFINITY, NAN);
  wk_release(r);
  r = wk_div_mode(f, f0, "floor");
  TU_EQ_VALS(r, INFINITY, -INFINITY, NAN);
  wk_release(r);
  r = wk_div_mode(f, f0, "trunc");
  TU_EQ_VALS(r, INFINITY, -INFINITY, NAN);
  wk_release(r);
  wk_tensor *i = TU_T(WK_I32, (2), -7, 7), *i0 = TU_T(WK_I32, (2), 0, 2);
  r = wk_div(i, i0);
  ck_assert_int_eq(wk_tensor_dtype(r), WK_F32);
  TU_EQ_VALS(r, -INFINITY, 3.5);
  wk_release(r);
  /* INT64_MIN / -1 wraps instead of trapping */
  wk_tensor *mn = wk_scalar_tensor(0, WK_I64), *m1 = wk_scalar_tensor(-1, WK_I64);
  int64_t lo = INT64_MIN, got;
  memcpy(wk_tensor_data(mn), &lo, 8);
  r = wk_div_mode(mn, m1, "trunc");
  TU_OK(wk_item_i64(r, &got));
  ck_assert(got == INT64_MIN);
  wk_release(r);
  r = wk_div_mode(mn, m1, "floor");
  TU_OK(wk_item_i64(r, &got));
  ck_assert(got == INT64_MIN);
  wk_release(r);
  wk_release(mn);
  wk_release(m1);
  wk_release(i);
  wk_release(i0);
  wk_release(f);
  wk_release(f0);
  wk_release(ii);
  wk_release(x);
  wk_release(y);
  LEAK_END;
}
END_TEST

START_TEST(test_binary_div_errors) {
  LEAK_BEGIN;
  wk_tensor *i = TU_T(WK_I32, (3), -7, 7, 1), *i0 = TU_T(WK_I32, (3), 1, 0, 1);
  ck_assert_ptr_null(wk_div_mode(i, i0, "trunc"));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "ZeroDivisionError");
  ck_assert_ptr_null(wk_div_mode(i, i0, "floor"));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "ZeroDivisionError");
  ck_assert_ptr_null(CALL("div.Scalar", WK_VT(i), WK_VI(0), WK_VS("floor")));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "ZeroDivisionError");
  uint64_t ver = wk_tensor_version(i);
  ck_assert_ptr_null(CALL("div_", WK_VT(i), WK_VT(i0), WK_VS("trunc")));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "ZeroDivisionError");
  TU_EQ_VALS(i, -7, 7, 1);
  ck_assert_uint_eq(wk_tensor_version(i), ver);
  /* zero-size: nothing is divided */
  wk_tensor *e = wk_zeros(WK_SHAPE(0), WK_OPTS(.dtype = WK_I64));
  wk_tensor *r = wk_div_mode(e, e, "trunc");
  TU_NOTNULL(r);
  ck_assert_int_eq(wk_tensor_numel(r), 0);
  wk_release(r);
  /* bad rounding modes */
  wk_tensor *f = TU_T(WK_F32, (2), 1, 2);
  ck_assert_ptr_null(wk_div_mode(f, f, "round"));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "rounding_mode to be one of None, 'trunc', or 'floor' but found 'round'");
  ck_assert_ptr_null(CALL("div.Scalar", WK_VT(f), WK_VF(2), WK_VS("Floor")));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "'Floor'");
  ck_assert_ptr_null(CALL("div_", WK_VT(f), WK_VT(f), WK_VS("")));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "rounding_mode");
  wk_tensor *out = wk_empty(WK_SHAPE(2), (wk_options){0});
  ck_assert_ptr_null(CALL("div.out", WK_VT(f), WK_VT(f), WK_VS("nearest"), WK_VT(out)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "rounding_mode");
  /* rounding division of bools is not implemented (as in PyTorch) */
  wk_tensor *b = TU_T(WK_BOOL, (2), 1, 1);
  ck_assert_ptr_null(wk_div_mode(b, b, "trunc"));
  TU_FAILS_WITH(WK_ERR_DTYPE, "Bool");
  r = wk_div(b, b);
  ck_assert_int_eq(wk_tensor_dtype(r), WK_F32);
  TU_EQ_VALS(r, 1, 1);
  wk_release(r);
  wk_release(b);
  wk_release(out);
  wk_release(f);
  wk_release(e);
  wk_release(i);
  wk_release(i0);
  LEAK_END;
}
END_TEST

/* ---- maximum / minimum / pow ----------------------------------------------------------- */

START_TEST(test_binary_max_min_nan) {
  LEAK_BEGIN;
  const wk_dtype fdts[] = {WK_F32, WK_F64, WK_F16, WK_BF16};
  for (int d = 0; d < 4; d++) {
    wk_tensor *a = TU_T(fdts[d], (4), 1, NAN, 3, NAN), *b = TU_T(fdts[d], (4), NAN, 2, 1, NAN);
    wk_tensor *r = wk_maximum(a, b);
    TU_EQ_VALS(r, NAN, NAN, 3, NAN);
    wk_release(r);
    r = wk_minimum(a, b);
    TU_EQ_VALS(r, NAN, NAN, 1, NAN);
    wk_release(r);
    r = wk_maximum_scalar(a, NAN);
    TU_EQ_VALS(r, NAN, NAN, NAN, NAN);
    wk_release(r);
    r = wk_minimum_scalar(a, 2);
    TU_EQ_VALS(r, 1, NAN, 2, NAN);
    wk_release(r);
    /* a 0-dim NaN broadcasts */
    wk_tensor *zn = wk_scalar_tensor(NAN, fdts[d]);
    r = wk_minimum(zn, b);
    TU_EQ_VALS(r, NAN, NAN, NAN, NAN);
    wk_release(r);
    wk_release(zn);
    wk_release(a);
    wk_release(b);
  }
  /* integers and bools */
  wk_tensor *i = TU_T(WK_I16, (3), -5, 0, 9), *j = TU_T(WK_I64, (3), 3, -1, 9);
  wk_tensor *r = wk_maximum(i, j);
  ck_assert_int_eq(wk_tensor_dtype(r), WK_I64);
  TU_EQ_VALS(r, 3, 0, 9);
  wk_release(r);
  r = wk_minimum(i, j);
  TU_EQ_VALS(r, -5, -1, 9);
  wk_release(r);
  wk_tensor *bt = TU_T(WK_BOOL, (2), 1, 0), *bf = TU_T(WK_BOOL, (2), 0, 0);
  r = wk_maximum(bt, bf);
  ck_assert_int_eq(wk_tensor_dtype(r), WK_BOOL);
  TU_EQ_VALS(r, 1, 0);
  wk_release(r);
  /* mixed int/float with NaN: promoted to float, NaN wins */
  wk_tensor *fn = TU_T(WK_F32, (3), NAN, -10, 10);
  r = wk_maximum(i, fn);
  ck_assert_int_eq(wk_tensor_dtype(r), WK_F32);
  TU_EQ_VALS(r, NAN, 0, 10);
  wk_release(r);
  wk_release(fn);
  wk_release(bt);
  wk_release(bf);
  wk_release(i);
  wk_release(j);
  LEAK_END;
}
END_TEST

START_TEST(test_binary_pow) {
  LEAK_BEGIN;
  /* floats: a reference with negative bases (NaN for fractional exponents) */
  const wk_dtype fdts[] = {WK_F32, WK_F64, WK_F16, WK_BF16};
  const opdesc pow_op = {"pow", K_ARITH, wk_pow, r_pow, 0, 0, 0};
  for (int d = 0; d < 4; d++) {
    wk_tensor *a = RND(fdts[d], -2, 2, 40 + (uint64_t)d, R_NONZERO, 3, 1, 4),
              *b = RND(fdts[d], -2, 2.5, 50 + (uint64_t)d, R_HALVES, 2, 1);
    CHECK_OP(&pow_op, a, b);
    wk_release(a);
    wk_release(b);
  }
  /* integer tensors, negative tensor exponents give 0 except for bases +-1 */
  wk_tensor *base = TU_T(WK_I64, (8), 2, -3, 0, 1, -1, 2, 0, -1);
  wk_tensor *ex = TU_T(WK_I64, (8), 3, 3, 0, -3, -3, -1, -2, -2);
  wk_tensor *r = wk_pow(base, ex);
  ck_assert_int_eq(wk_tensor_dtype(r), WK_I64);
  TU_EQ_VALS(r, 8, -27, 1, 1, -1, 0, 0, 1);
  wk_release(r);
  wk_tensor *b8 = TU_T(WK_I8, (3), 2, -2, 3), *e8 = TU_T(WK_I8, (3), 7, 7, 5);
  r = wk_pow(b8, e8);
  ck_assert_int_eq(wk_tensor_dtype(r), WK_I8);
  TU_EQ_VALS(r, -128, -128, -13); /* wraps: 243 -> -13 */
  wk_release(r);
  /* a 0-dim negative integer exponent is a tensor, not an error */
  wk_tensor *zneg = wk_scalar_tensor(-2, WK_I64);
  wk_tensor *b2 = TU_T(WK_I64, (2), 1, 2);
  r = wk_pow(b2, zneg);
  TU_EQ_VALS(r, 1, 0);
  wk_release(r);
  wk_release(zneg);
  /* wrap-around of large powers (3**41 in int64) */
  wk_tensor *three = wk_scalar_tensor(3, WK_I64);
  r = CALL("pow.Scalar", WK_VT(three), WK_VI(41));
  int64_t got;
  TU_OK(wk_item_i64(r, &got));
  ck_assert(got == (int64_t)-420491770248316829LL);
  wk_release(r);
  wk_release(three);
  /* integer tensor and a negative integer Scalar: refused, whatever the bases */
  ck_assert_ptr_null(CALL("pow.Scalar", WK_VT(b2), WK_VI(-2)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "Integers to negative integer powers are not allowed.");
  wk_tensor *ones = TU_T(WK_I32, (2), 1, -1);
  ck_assert_ptr_null(CALL("pow.Scalar", WK_VT(ones), WK_VI(-1)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "negative integer powers");
  ck_assert_ptr_null(CALL("pow_.Scalar", WK_VT(ones), WK_VI(-1)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "negative integer powers");
  wk_tensor *bb = TU_T(WK_BOOL, (2), 1, 0);
  ck_assert_ptr_null(CALL("pow.Scalar", WK_VT(bb), WK_VI(-1)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "negative integer powers");
  /* ... while a float exponent makes the result float */
  r = wk_pow_scalar(b2, -2.0);
  ck_assert_int_eq(wk_tensor_dtype(r), WK_F32);
  TU_EQ_VALS(r, 1, 0.25);
  wk_release(r);
  r = CALL("pow.Scalar", WK_VT(b2), WK_VI(3));
  ck_assert_int_eq(wk_tensor_dtype(r), WK_I64);
  TU_EQ_VALS(r, 1, 8);
  wk_release(r);
  /* bool ** int Scalar is int64; bool ** bool is not implemented */
  r = CALL("pow.Scalar", WK_VT(bb), WK_VI(2));
  ck_assert_int_eq(wk_tensor_dtype(r), WK_I64);
  TU_EQ_VALS(r, 1, 0);
  wk_release(r);
  ck_assert_ptr_null(wk_pow(bb, bb));
  TU_FAILS_WITH(WK_ERR_DTYPE, "\"pow\" not implemented for 'Bool'");
  /* float edge cases */
  wk_tensor *fe = TU_T(WK_F32, (4), 0, -8, 4, NAN), *fx = TU_T(WK_F32, (4), -1, 1.0 / 3, 0.5, 0);
  r = wk_pow(fe, fx);
  TU_EQ_VALS(r, INFINITY, NAN, 2, 1);
  wk_release(r);
  /* pow_ in place, tensor and Scalar */
  wk_tensor *p = TU_T(WK_F32, (3), 1, 2, 3);
  ck_assert_ptr_eq(wk_pow_scalar_(p, 2), p);
  TU_EQ_VALS(p, 1, 4, 9);
  wk_tensor *half = TU_T(WK_F64, (3), 0.5, 0.5, 0.5);
  ck_assert_ptr_eq(wk_pow_(p, half), p);
  TU_EQ_VALS(p, 1, 2, 3);
  wk_release(half);
  ck_assert_ptr_null(wk_pow_scalar_(ones, 0.5)); /* float result into int self */
  TU_FAILS_WITH(WK_ERR_DTYPE, "can't be cast to the desired output type");
  wk_release(fe);
  wk_release(fx);
  wk_release(p);
  wk_release(bb);
  wk_release(ones);
  wk_release(b2);
  wk_release(b8);
  wk_release(e8);
  wk_release(base);
  wk_release(ex);
  LEAK_END;
}
END_TEST

/* ---- logical and comparisons ------------------------------------------------------------ */

START_TEST(test_binary_logical_and_compare) {
  LEAK_BEGIN;
  wk_tensor *a = TU_T(WK_F32, (5), 0, 1.5, -2, NAN, 0), *b = TU_T(WK_I64, (5), 0, 0, 3, 1, 7);
  wk_tensor *r = wk_logical_and(a, b);
  ck_assert_int_eq(wk_tensor_dtype(r), WK_BOOL);
  TU_EQ_VALS(r, 0, 0, 1, 1, 0);
  wk_release(r);
  r = wk_logical_or(a, b);
  TU_EQ_VALS(r, 0, 1, 1, 1, 1);
  wk_release(r);
  r = wk_logical_and_scalar(a, 2);
  TU_EQ_VALS(r, 0, 1, 1, 1, 0);
  wk_release(r);
  r = wk_logical_or_scalar(a, 0);
  TU_EQ_VALS(r, 0, 1, 1, 1, 0);
  wk_release(r);
  /* large integers stay nonzero */
  wk_tensor *big = wk_scalar_tensor(0, WK_I64);
  int64_t bigv = (int64_t)1 << 62;
  memcpy(wk_tensor_data(big), &bigv, 8);
  r = wk_logical_and(big, big);
  TU_EQ_VALS(r, 1);
  wk_release(r);
  wk_release(big);
  /* comparisons with NaN, mixed dtypes and Scalars */
  wk_tensor *x = TU_T(WK_F16, (4), 1, 2.5, NAN, -1), *y = TU_T(WK_I32, (4), 1, 2, 2, 0);
  r = wk_eq(x, y);
  TU_EQ_VALS(r, 1, 0, 0, 0);
  wk_release(r);
  r = wk_ne(x, y);
  TU_EQ_VALS(r, 0, 1, 1, 1);
  wk_release(r);
  r = wk_lt(x, y);
  TU_EQ_VALS(r, 0, 0, 0, 1);
  wk_release(r);
  r = wk_le(x, y);
  TU_EQ_VALS(r, 1, 0, 0, 1);
  wk_release(r);
  r = wk_gt(x, y);
  TU_EQ_VALS(r, 0, 1, 0, 0);
  wk_release(r);
  r = wk_ge(x, y);
  TU_EQ_VALS(r, 1, 1, 0, 0);
  wk_release(r);
  r = wk_gt_scalar(y, 1.5);
  TU_EQ_VALS(r, 0, 1, 1, 0);
  wk_release(r);
  r = wk_le_scalar(x, 2.5);
  TU_EQ_VALS(r, 1, 1, 0, 1);
  wk_release(r);
  r = CALL("eq.Scalar", WK_VT(y), WK_VI(2));
  TU_EQ_VALS(r, 0, 1, 1, 0);
  wk_release(r);
  wk_tensor *bl = TU_T(WK_BOOL, (3), 1, 0, 1);
  r = CALL("ne.Scalar", WK_VT(bl), WK_VB(true));
  TU_EQ_VALS(r, 0, 1, 0);
  wk_release(r);
  r = wk_lt_scalar(bl, 0.5);
  TU_EQ_VALS(r, 0, 1, 0);
  wk_release(r);
  /* int64 values beyond 2^53 compare exactly */
  wk_tensor *p = wk_empty(WK_SHAPE(2), WK_OPTS(.dtype = WK_I64)), *q = wk_empty(WK_SHAPE(2), WK_OPTS(.dtype = WK_I64));
  int64_t pv[2] = {((int64_t)1 << 60) + 1, 5}, qv[2] = {(int64_t)1 << 60, 5};
  memcpy(wk_tensor_data(p), pv, 16);
  memcpy(wk_tensor_data(q), qv, 16);
  r = wk_eq(p, q);
  TU_EQ_VALS(r, 0, 1);
  wk_release(r);
  r = wk_gt(p, q);
  TU_EQ_VALS(r, 1, 0);
  wk_release(r);
  /* comparisons have no in-place form; out= takes any dtype */
  wk_tensor *out = wk_empty(WK_SHAPE(4), WK_OPTS(.dtype = WK_F32));
  ck_assert_ptr_eq(wk_ge_out(x, y, out), out);
  ck_assert_int_eq(wk_tensor_dtype(out), WK_F32);
  TU_EQ_VALS(out, 1, 1, 0, 0);
  wk_tensor *outi = wk_empty(WK_SHAPE(4), WK_OPTS(.dtype = WK_I32));
  ck_assert_ptr_eq(wk_logical_or_out(x, y, outi), outi);
  TU_EQ_VALS(outi, 1, 1, 1, 1);
  /* logical_and_ keeps self's dtype */
  wk_tensor *s = TU_T(WK_F32, (4), 2, 0, 3, 4);
  ck_assert_ptr_eq(wk_logical_and_(s, y), s);
  ck_assert_int_eq(wk_tensor_dtype(s), WK_F32);
  TU_EQ_VALS(s, 1, 0, 1, 0);
  ck_assert_ptr_eq(wk_logical_or_scalar_(s, 0), s);
  TU_EQ_VALS(s, 1, 0, 1, 0);
  wk_release(s);
  wk_release(out);
  wk_release(outi);
  wk_release(p);
  wk_release(q);
  wk_release(bl);
  wk_release(x);
  wk_release(y);
  wk_release(a);
  wk_release(b);
  LEAK_END;
}
END_TEST

/* ---- where ------------------------------------------------------------------------------------ */

START_TEST(test_binary_where) {
  LEAK_BEGIN;
  const wk_dtype dts[] = {WK_F32, WK_F64, WK_F16, WK_BF16, WK_I8, WK_U8, WK_I16, WK_I32, WK_I64, WK_BOOL};
  for (int i = 0; i < NDT; i++)
    for (int j = 0; j < NDT; j += 3) {
      uint64_t seed = 300 + (uint64_t)(i * 10 + j);
      wk_tensor *c = RND(WK_BOOL, 0, 1, seed, 0, 3, 1, 4);
      wk_tensor *a = RND(dts[i], -5, 5, seed + 1, 0, 2, 1), *b = RND(dts[j], -5, 5, seed + 2, 0, 4);
      wk_tensor *ts[3] = {c, a, b};
      ref_t ref = ref_map(ts, 3, r_where, NULL);
      wk_tensor *r = wk_where(c, a, b);
      char what[64];
      snprintf(what, sizeof what, "where(bool, %s, %s)", wk_dtype_name(dts[i]), wk_dtype_name(dts[j]));
      check_ref_(r, promote(dts[i], dts[j]), &ref, what, __LINE__);
      free(ref.v);
      wk_release(r);
      wk_release(c);
      wk_release(a);
      wk_release(b);
    }
  /* non-contiguous operands, 0-dim and zero-size */
  wk_tensor *c0 = RND(WK_BOOL, 0, 1, 9, 0, 5, 4), *a0 = RND(WK_F32, -5, 5, 10, 0, 4, 5);
  wk_tensor *c = wk_t(c0), *a = tu_noncontig(a0), *z = wk_scalar_tensor(-1, WK_F32);
  wk_tensor *ts[3] = {c, a, z};
  ref_t ref = ref_map(ts, 3, r_where, NULL);
  wk_tensor *r = wk_where(c, a, z);
  CHECK_REF(r, WK_F32, &ref);
  free(ref.v);
  wk_release(r);
  wk_tensor *zc = wk_scalar_tensor(1, WK_BOOL);
  r = wk_where(zc, z, a);
  CHECK_SHAPE(r, 4, 5);
  wk_release(r);
  r = wk_where(zc, z, z);
  ck_assert_int_eq(wk_tensor_dim(r), 0);
  TU_EQ_VALS(r, -1);
  wk_release(r);
  wk_tensor *ec = wk_zeros(WK_SHAPE(0, 1, 1), WK_OPTS(.dtype = WK_BOOL));
  r = wk_where(ec, a, z);
  CHECK_SHAPE(r, 0, 4, 5);
  wk_release(r);
  /* uint8 conditions are accepted (PyTorch's legacy masks), other dtypes not */
  wk_tensor *cu = TU_T(WK_U8, (2), 0, 3), *x = TU_T(WK_I64, (2), 1, 2), *y = TU_T(WK_I64, (2), 8, 9);
  r = wk_where(cu, x, y);
  TU_EQ_VALS(r, 8, 2);
  wk_release(r);
  wk_tensor *cf = TU_T(WK_F32, (2), 0, 1);
  ck_assert_ptr_null(wk_where(cf, x, y));
  TU_FAILS_WITH(WK_ERR_DTYPE, "expected condition to be a boolean tensor");
  /* shape errors name the shapes */
  wk_tensor *c3 = wk_ones(WK_SHAPE(3), WK_OPTS(.dtype = WK_BOOL));
  ck_assert_ptr_null(wk_where(c3, x, y));
  TU_FAILS_WITH(WK_ERR_SHAPE, "[3]");
  ck_assert_ptr_null(wk_where(NULL, x, y));
  TU_FAILS_WITH(WK_ERR_NULL, "condition");
  ck_assert_ptr_null(wk_where(cu, x, NULL));
  TU_FAILS_WITH(WK_ERR_NULL, "other");
  wk_release(c3);
  wk_release(cf);
  wk_release(cu);
  wk_release(x);
  wk_release(y);
  wk_release(ec);
  wk_release(zc);
  wk_release(c);
  wk_release(a);
  wk_release(z);
  wk_release(c0);
  wk_release(a0);
  LEAK_END;
}
END_TEST

/* ---- in-place and out= ------------------------------------------------------------------------ */

typedef wk_tensor *(*inplace_fn)(wk_tensor *, wk_tensor *);

START_TEST(test_binary_inplace_against_reference) {
  LEAK_BEGIN;
  static const struct {
    inplace_fn fn;
    ref_fn ref;
    const char *name;
  } ips[] = {{wk_add_, r_add, "add_"},
             {wk_sub_, r_sub, "sub_"},
             {wk_mul_, r_mul, "mul_"},
             {wk_div_, r_div, "div_"},
             {wk_maximum_, r_max, "maximum_"},
             {wk_minimum_, r_min, "minimum_"},
             {wk_pow_, r_pow, "pow_"},
             {wk_logical_and_, r_and, "logical_and_"},
             {wk_logical_or_, r_or, "logical_or_"}};
  const wk_dtype sd[] = {WK_F32, WK_F64, WK_F16, WK_BF16};
  const wk_dtype od[] = {WK_F64, WK_I32, WK_F32, WK_U8};
  for (size_t o = 0; o < sizeof ips / sizeof ips[0]; o++)
    for (int d = 0; d < 4; d++) {
      uint64_t seed = 700 + o * 7 + (uint64_t)d;
      wk_tensor *base = RND(sd[d], 0.5, 3, seed, 0, 3, 2, 4);
      wk_tensor *other = RND(od[d], 1, 3, seed + 1, R_NONZERO, 2, 1); /* broadcasts into self */
      /* self is a non-contiguous view: results must land in base's storage */
      wk_tensor *self = wk_transpose(base, 0, 2); /* [4, 2, 3] */
      wk_tensor *oth = wk_unsqueeze(other, 0);    /* [1, 2, 1] */
      wk_tensor *ts[2] = {self, oth};
      ref_t ref = ref_map(ts, 2, ips[o].ref, NULL);
      uint64_t v0 = wk_tensor_version(base);
      wk_tensor *r = ips[o].fn(self, oth);
      ck_assert_msg(r == self, "%s did not return self: %s", ips[o].name, wk_last_error_message());
      ck_assert_msg(wk_tensor_version(base) > v0, "%s did not bump the version", ips[o].name);
      char what[64];
      snprintf(what, sizeof what, "%s(%s, %s)", ips[o].name, wk_dtype_name(sd[d]), wk_dtype_name(od[d]));
      check_ref_(self, sd[d], &ref, what, __LINE__);
      free(ref.v);
      wk_release(self);
      wk_release(oth);
      wk_release(base);
      wk_release(other);
    }
  LEAK_END;
}
END_TEST

START_TEST(test_binary_inplace_rules) {
  LEAK_BEGIN;
  wk_tensor *i = TU_T(WK_I64, (3), 1, 2, 3), *f = TU_T(WK_F32, (3), 0.5, 0.5, 0.5);
  uint64_t v0 = wk_tensor_version(i);
  /* a float result cannot be stored into an int tensor */
  ck_assert_ptr_null(wk_add_(i, f));
  TU_FAILS_WITH(WK_ERR_DTYPE, "result type f32 can't be cast to the desired output type i64");
  ck_assert_ptr_null(wk_mul_scalar_(i, 2.0));
  TU_FAILS_WITH(WK_ERR_DTYPE, "can't be cast to the desired output type");
  ck_assert_ptr_null(wk_div_(i, i));
  TU_FAILS_WITH(WK_ERR_DTYPE, "can't be cast to the desired output type");
  ck_assert_ptr_null(wk_maximum_scalar_(i, 1.5));
  TU_FAILS_WITH(WK_ERR_DTYPE, "can't be cast");
  TU_EQ_VALS(i, 1, 2, 3);
  ck_assert_uint_eq(wk_tensor_version(i), v0);
  /* integer results narrow into a smaller int self; ints into bool do not */
  wk_tensor *s = TU_T(WK_I8, (3), 1, 2, 3);
  ck_assert_ptr_eq(wk_add_(s, i), s);
  ck_assert_int_eq(wk_tensor_dtype(s), WK_I8);
  TU_EQ_VALS(s, 2, 4, 6);
  ck_assert_ptr_eq(CALL("mul_.Scalar", WK_VT(s), WK_VI(50)), s);
  TU_EQ_VALS(s, 100, -56, 44);
  wk_tensor *b = TU_T(WK_BOOL, (3), 1, 0, 1);
  ck_assert_ptr_null(wk_add_(b, i));
  TU_FAILS_WITH(WK_ERR_DTYPE, "can't be cast to the desired output type bool");
  ck_assert_ptr_eq(wk_mul_(b, b), b);
  TU_EQ_VALS(b, 1, 0, 1);
  /* float self with an int or double other */
  wk_tensor *h = TU_T(WK_F16, (3), 1, 2, 3);
  ck_assert_ptr_eq(wk_mul_(h, i), h);
  ck_assert_int_eq(wk_tensor_dtype(h), WK_F16);
  TU_EQ_VALS(h, 1, 4, 9);
  ck_assert_ptr_eq(wk_mul_scalar_(h, 0.5), h);
  TU_EQ_VALS(h, 0.5, 2, 4.5);
  ck_assert_ptr_eq(wk_div_(f, i), f);
  TU_CLOSE(f, ((const double[]){0.5, 0.25, 0.5 / 3}), 3, 1e-6, 0);
  /* in-place cannot broadcast self */
  wk_tensor *row = TU_T(WK_F32, (3), 1, 2, 3), *mat = wk_ones(WK_SHAPE(2, 3), (wk_options){0});
  v0 = wk_tensor_version(row);
  ck_assert_ptr_null(wk_add_(row, mat));
  TU_FAILS_WITH(WK_ERR_SHAPE, "[2, 3]");
  ck_assert_ptr_null(wk_mul_(row, mat));
  TU_FAILS_WITH(WK_ERR_SHAPE, "[3]");
  wk_tensor *z = wk_scalar_tensor(1, WK_F32);
  ck_assert_ptr_null(wk_sub_(z, row));
  TU_FAILS_WITH(WK_ERR_SHAPE, "[3]");
  TU_EQ_VALS(row, 1, 2, 3);
  ck_assert_uint_eq(wk_tensor_version(row), v0);
  /* ... but other broadcasts into self */
  ck_assert_ptr_eq(wk_add_(mat, row), mat);
  TU_EQ_VALS(mat, 2, 3, 4, 2, 3, 4);
  ck_assert_ptr_eq(wk_add_(mat, z), mat);
  TU_EQ_VALS(mat, 3, 4, 5, 3, 4, 5);
  /* self aliasing other, including a transposed alias of self */
  wk_tensor *sq = TU_T(WK_F64, (2, 2), 1, 2, 3, 4);
  wk_tensor *sqt = wk_t(sq);
  ck_assert_ptr_eq(wk_add_(sq, sqt), sq);
  TU_EQ_VALS(sq, 2, 5, 5, 8);
  ck_assert_ptr_eq(wk_mul_(sq, sq), sq);
  TU_EQ_VALS(sq, 4, 25, 25, 64);
  /* the version counter is shared with views and bumps on every in-place op */
  uint64_t vs = wk_tensor_version(sqt);
  wk_tensor *tmp = wk_sub_scalar(sq, 1);
  ck_assert_uint_eq(wk_tensor_version(sqt), vs); /* functional: no bump */
  wk_release(tmp);
  ck_assert_ptr_eq(wk_mul_scalar_(sq, 2), sq);
  ck_assert_uint_eq(wk_tensor_version(sqt), vs + 1);
  ck_assert_ptr_eq(wk_maximum_(sq, sqt), sq);
  ck_assert_uint_eq(wk_tensor_version(sqt), vs + 2);
  ck_assert_ptr_eq(CALL("div_", WK_VT(sq), WK_VT(sqt), WK_VS("floor")), sq);
  ck_assert_uint_eq(wk_tensor_version(sqt), vs + 3);
  wk_release(sqt);
  wk_release(sq);
  wk_release(z);
  wk_release(row);
  wk_release(mat);
  wk_release(h);
  wk_release(b);
  wk_release(s);
  wk_release(i);
  wk_release(f);
  LEAK_END;
}
END_TEST

START_TEST(test_binary_out_variants) {
  LEAK_BEGIN;
  wk_tensor *a = RND(WK_F32, -3, 3, 1, 0, 3, 1, 4), *b = RND(WK_I32, -3, 3, 2, R_NONZERO, 2, 1);
  wk_tensor *ts[2] = {a, b};
  static const struct {
    wk_tensor *(*fn)(wk_tensor *, wk_tensor *, wk_tensor *);
    ref_fn ref;
  } outs[] = {{wk_add_out, r_add},       {wk_sub_out, r_sub},     {wk_mul_out, r_mul}, {wk_div_out, r_div},
              {wk_maximum_out, r_max},   {wk_minimum_out, r_min}, {wk_pow_out, r_pow}, {wk_logical_and_out, r_and},
              {wk_logical_or_out, r_or}, {wk_eq_out, r_eq},       {wk_ne_out, r_ne},   {wk_lt_out, r_lt},
              {wk_le_out, r_le},         {wk_gt_out, r_gt},       {wk_ge_out, r_ge}};
  for (size_t o = 0; o < sizeof outs / sizeof outs[0]; o++) {
    /* a non-contiguous f64 out */
    wk_tensor *ob = wk_empty(WK_SHAPE(4, 2, 3), WK_OPTS(.dtype = WK_F64));
    wk_tensor *out = wk_permute(ob, WK_SHAPE(2, 1, 0)); /* [3, 2, 4] */
    ref_t ref = ref_map(ts, 2, outs[o].ref, NULL);
    uint64_t v0 = wk_tensor_version(out);
    wk_tensor *r = outs[o].fn(a, b, out);
    ck_assert_msg(r == out, "out variant %zu did not return out: %s", o, wk_last_error_message());
    ck_assert_uint_gt(wk_tensor_version(out), v0);
    check_ref_tol_(out, WK_F64, WK_F32, &ref, "out", __LINE__); /* computed in f32 */
    free(ref.v);
    /* wrong shapes */
    wk_tensor *bad = wk_empty(WK_SHAPE(3, 2), WK_OPTS(.dtype = WK_F64));
    ck_assert_ptr_null(outs[o].fn(a, b, bad));
    TU_FAILS_WITH(WK_ERR_SHAPE, "[3, 2, 4]");
    wk_release(bad);
    wk_release(out);
    wk_release(ob);
  }
  /* dtype rules: a float result never goes into an int out; ints go into floats */
  wk_tensor *oi = wk_empty(WK_SHAPE(3, 2, 4), WK_OPTS(.dtype = WK_I64));
  ck_assert_ptr_null(wk_add_out(a, b, oi));
  TU_FAILS_WITH(WK_ERR_DTYPE, "result type f32 can't be cast to the desired output type i64");
  wk_tensor *oi2 = wk_empty(WK_SHAPE(2, 1), WK_OPTS(.dtype = WK_I64));
  ck_assert_ptr_null(wk_div_out(b, b, oi2)); /* true division of ints is float */
  TU_FAILS_WITH(WK_ERR_DTYPE, "can't be cast");
  ck_assert_ptr_eq(wk_mul_out(b, b, oi2), oi2);
  ck_assert_ptr_eq(CALL("div.out", WK_VT(b), WK_VT(b), WK_VS("trunc"), WK_VT(oi2)), oi2);
  TU_EQ_VALS(oi2, 1, 1);
  wk_tensor *ob = wk_empty(WK_SHAPE(2, 1), WK_OPTS(.dtype = WK_BOOL));
  ck_assert_ptr_null(wk_mul_out(b, b, ob));
  TU_FAILS_WITH(WK_ERR_DTYPE, "can't be cast to the desired output type bool");
  ck_assert_ptr_eq(wk_lt_out(b, b, ob), ob);
  TU_EQ_VALS(ob, 0, 0);
  wk_release(oi2);
  /* out may alias an input */
  wk_tensor *x = TU_T(WK_F32, (3), 1, 2, 3);
  ck_assert_ptr_eq(wk_add_out(x, x, x), x);
  TU_EQ_VALS(x, 2, 4, 6);
  ck_assert_ptr_eq(CALL("div.out", WK_VT(x), WK_VT(x), WK_VS("floor"), WK_VT(x)), x);
  TU_EQ_VALS(x, 1, 1, 1);
  /* zero-size out */
  wk_tensor *e = wk_empty(WK_SHAPE(0, 3), (wk_options){0}), *eo = wk_empty(WK_SHAPE(0, 3), (wk_options){0});
  ck_assert_ptr_eq(wk_mul_out(e, x, eo), eo);
  wk_release(e);
  wk_release(eo);
  wk_release(x);
  wk_release(ob);
  wk_release(oi);
  wk_release(a);
  wk_release(b);
  LEAK_END;
}
END_TEST

START_TEST(test_binary_scalar_inplace_variants) {
  LEAK_BEGIN;
  wk_tensor *x = TU_T(WK_F32, (4), -2, -1, 1, 2);
  ck_assert_ptr_eq(wk_mul_scalar_(x, 3), x);
  TU_EQ_VALS(x, -6, -3, 3, 6);
  ck_assert_ptr_eq(wk_maximum_scalar_(x, 0), x);
  TU_EQ_VALS(x, 0, 0, 3, 6);
  ck_assert_ptr_eq(wk_minimum_scalar_(x, 4), x);
  TU_EQ_VALS(x, 0, 0, 3, 4);
  ck_assert_ptr_eq(wk_pow_scalar_(x, 0.5), x);
  TU_CLOSE(x, ((const double[]){0, 0, sqrt(3.0), 2}), 4, 1e-6, 0);
  ck_assert_ptr_eq(wk_logical_and_scalar_(x, 1), x);
  TU_EQ_VALS(x, 0, 0, 1, 1);
  ck_assert_ptr_eq(wk_logical_or_scalar_(x, 0), x);
  TU_EQ_VALS(x, 0, 0, 1, 1);
  /* add_/sub_/div_ Scalar forms, with alpha and rounding modes */
  wk_tensor *y = TU_T(WK_F64, (4), -3, -1, 1, 3);
  uint64_t v0 = wk_tensor_version(y);
  ck_assert_ptr_eq(wk_add_scalar_(y, 0.5), y);
  TU_EQ_VALS(y, -2.5, -0.5, 1.5, 3.5);
  ck_assert_ptr_eq(wk_sub_scalar_(y, 1), y);
  TU_EQ_VALS(y, -3.5, -1.5, 0.5, 2.5);
  ck_assert_ptr_eq(wk_div_scalar_(y, -0.5), y);
  TU_EQ_VALS(y, 7, 3, -1, -5);
  ck_assert_uint_eq(wk_tensor_version(y), v0 + 3);
  ck_assert_ptr_eq(CALL("add_.Scalar", WK_VT(y), WK_VI(1), WK_VI(3)), y);
  TU_EQ_VALS(y, 10, 6, 2, -2);
  ck_assert_ptr_eq(CALL("sub_.Scalar", WK_VT(y), WK_VF(1), WK_VF(0.5)), y);
  TU_EQ_VALS(y, 9.5, 5.5, 1.5, -2.5);
  ck_assert_ptr_eq(CALL("div_.Scalar", WK_VT(y), WK_VI(2), WK_VS("floor")), y);
  TU_EQ_VALS(y, 4, 2, 0, -2);
  ck_assert_ptr_null(CALL("div_.Scalar", WK_VT(y), WK_VI(2), WK_VS("up")));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "rounding_mode");
  wk_tensor *k = TU_T(WK_I16, (3), -7, 7, 8);
  ck_assert_ptr_eq(CALL("add_.Scalar", WK_VT(k), WK_VI(1), WK_VI(2)), k);
  ck_assert_int_eq(wk_tensor_dtype(k), WK_I16);
  TU_EQ_VALS(k, -5, 9, 10);
  ck_assert_ptr_eq(CALL("div_.Scalar", WK_VT(k), WK_VI(2), WK_VS("trunc")), k);
  TU_EQ_VALS(k, -2, 4, 5);
  ck_assert_ptr_null(CALL("div_.Scalar", WK_VT(k), WK_VI(0), WK_VS("floor")));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "ZeroDivisionError");
  ck_assert_ptr_null(wk_div_scalar_(k, 2)); /* true division: float into int16 */
  TU_FAILS_WITH(WK_ERR_DTYPE, "can't be cast to the desired output type i16");
  ck_assert_ptr_null(wk_add_scalar_(k, 1)); /* the front end's Scalars are floats */
  TU_FAILS_WITH(WK_ERR_DTYPE, "can't be cast");
  ck_assert_ptr_null(CALL("add_.Scalar", WK_VT(k), WK_VI(1), WK_VF(0.5)));
  TU_FAILS_WITH(WK_ERR_DTYPE, "alpha must not be a floating point number");
  wk_tensor *bm = TU_T(WK_BOOL, (2), 1, 0);
  ck_assert_ptr_null(wk_sub_scalar_(bm, 1));
  TU_FAILS_WITH(WK_ERR_DTYPE, "with a bool tensor is not supported");
  TU_EQ_VALS(k, -2, 4, 5);
  wk_release(bm);
  wk_release(k);
  wk_release(y);
  wk_tensor *i = TU_T(WK_I32, (3), 1, 2, 3);
  ck_assert_ptr_eq(CALL("maximum_.Scalar", WK_VT(i), WK_VI(2)), i);
  TU_EQ_VALS(i, 2, 2, 3);
  ck_assert_ptr_eq(CALL("pow_.Scalar", WK_VT(i), WK_VI(2)), i);
  TU_EQ_VALS(i, 4, 4, 9);
  ck_assert_int_eq(wk_tensor_dtype(i), WK_I32);
  /* Scalar variants of the remaining ops */
  wk_tensor *r = wk_sub_scalar(i, 1);
  ck_assert_int_eq(wk_tensor_dtype(r), WK_F32); /* the front end passes float Scalars */
  TU_EQ_VALS(r, 3, 3, 8);
  wk_release(r);
  r = CALL("sub.Scalar", WK_VT(i), WK_VI(1));
  ck_assert_int_eq(wk_tensor_dtype(r), WK_I32);
  TU_EQ_VALS(r, 3, 3, 8);
  wk_release(r);
  r = wk_div_scalar(i, 8);
  TU_EQ_VALS(r, 0.5, 0.5, 1.125);
  wk_release(r);
  r = wk_add_scalar(i, -4);
  TU_EQ_VALS(r, 0, 0, 5);
  wk_release(r);
  wk_release(i);
  wk_release(x);
  LEAK_END;
}
END_TEST

/* ---- bad input ------------------------------------------------------------------------------ */

START_TEST(test_binary_shape_mismatch_messages) {
  LEAK_BEGIN;
  wk_tensor *a = wk_zeros(WK_SHAPE(2, 3), (wk_options){0}), *b = wk_zeros(WK_SHAPE(4), (wk_options){0});
  wk_tensor *c = wk_zeros(WK_SHAPE(5, 1, 3), (wk_options){0}), *d = wk_zeros(WK_SHAPE(2, 1), (wk_options){0});
  ck_assert_ptr_null(wk_add(a, b));
  TU_FAILS_WITH(WK_ERR_SHAPE,
                "add: the size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1");
  ck_assert_ptr_null(wk_mul(b, a));
  TU_FAILS_WITH(WK_ERR_SHAPE, "mul");
  ck_assert_ptr_null(wk_div_mode(a, b, "floor"));
  TU_FAILS_WITH(WK_ERR_SHAPE, "[4]");
  ck_assert_ptr_null(wk_eq(a, b));
  TU_FAILS_WITH(WK_ERR_SHAPE, "eq");
  ck_assert_ptr_null(wk_logical_or(a, b));
  TU_FAILS_WITH(WK_ERR_SHAPE, "must match");
  ck_assert_ptr_null(wk_pow(c, b));
  TU_FAILS_WITH(WK_ERR_SHAPE, "pow");
  ck_assert_ptr_null(wk_maximum_(a, b));
  TU_FAILS_WITH(WK_ERR_SHAPE, "must match");
  wk_tensor *ok = wk_add(c, d); /* [5, 2, 3] */
  CHECK_SHAPE(ok, 5, 2, 3);
  wk_release(ok);
  wk_release(a);
  wk_release(b);
  wk_release(c);
  wk_release(d);
  LEAK_END;
}
END_TEST

START_TEST(test_binary_null_propagation) {
  LEAK_BEGIN;
  wk_tensor *x = wk_ones(WK_SHAPE(2), (wk_options){0}), *y = wk_ones(WK_SHAPE(3), (wk_options){0});
  ck_assert_ptr_null(wk_add(NULL, x));
  TU_FAILS_WITH(WK_ERR_NULL, "self");
  ck_assert_ptr_null(wk_mul(x, NULL));
  TU_FAILS_WITH(WK_ERR_NULL, "other");
  ck_assert_ptr_null(wk_add_out(x, x, NULL));
  TU_FAILS_WITH(WK_ERR_NULL, "out");
  /* the first error is kept through nested calls */
  ck_assert_ptr_null(wk_mul(wk_add(x, y), x));
  TU_FAILS_WITH(WK_ERR_SHAPE, "add:");
  ck_assert_ptr_null(wk_add(NULL, x));
  ck_assert_ptr_null(wk_add(x, NULL));
  ck_assert_int_eq(wk_last_error(), WK_ERR_NULL);
  wk_clear_error();
  ck_assert_ptr_null(wk_div(x, y));
  ck_assert_ptr_null(wk_sub_(NULL, x));
  ck_assert_ptr_null(wk_eq_scalar(NULL, 1));
  ck_assert_ptr_null(wk_pow_scalar_(NULL, 1));
  ck_assert_ptr_null(wk_where(NULL, x, x));
  ck_assert_ptr_null(wk_maximum_out(x, x, NULL));
  TU_FAILS_WITH(WK_ERR_SHAPE, "div:");
  wk_release(x);
  wk_release(y);
  LEAK_END;
}
END_TEST

START_TEST(test_binary_no_leaks_on_errors) {
  LEAK_BEGIN;
  wk_tensor *f = RND(WK_F16, -2, 2, 3, 0, 4, 3), *i = RND(WK_I8, 1, 5, 4, 0, 4, 3),
            *bad = wk_zeros(WK_SHAPE(2), (wk_options){0});
  for (int k = 0; k < 50; k++) {
    wk_release(wk_add(f, i));           /* casts on the way */
    ck_assert_ptr_null(wk_add(f, bad)); /* fails after casting */
    wk_clear_error();
    ck_assert_ptr_null(wk_div_mode(i, i, "nope"));
    wk_clear_error();
    wk_tensor *z = wk_zeros_like(i, (wk_options){0});
    ck_assert_ptr_null(wk_div_mode(i, z, "trunc")); /* fails after computing */
    wk_clear_error();
    ck_assert_ptr_null(wk_add_(i, f)); /* fails in delivery */
    wk_clear_error();
    wk_release(z);
  }
  wk_release(f);
  wk_release(i);
  wk_release(bad);
  LEAK_END;
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("check_ops_binary");
  struct {
    const char *name;
    const TTest *tests[8];
  } groups[] = {
      {"forward",
       {test_binary_every_dtype_pair, test_binary_random_shapes_seeds, test_binary_noncontiguous,
        test_binary_zero_size_and_zero_dim, test_binary_large_parallel}},
      {"promotion", {test_binary_promotion_rules, test_binary_scalar_every_dtype}},
      {"add_sub", {test_binary_alpha, test_binary_integer_wraparound, test_binary_sub_bool_errors}},
      {"div", {test_binary_div_rounding_modes, test_binary_div_errors}},
      {"max_min_pow", {test_binary_max_min_nan, test_binary_pow}},
      {"logical_compare_where", {test_binary_logical_and_compare, test_binary_where}},
      {"inplace_out",
       {test_binary_inplace_against_reference, test_binary_inplace_rules, test_binary_out_variants,
        test_binary_scalar_inplace_variants}},
      {"errors", {test_binary_shape_mismatch_messages, test_binary_null_propagation, test_binary_no_leaks_on_errors}},
  };
  for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
    TCase *tc = tcase_create(groups[g].name);
    tcase_add_checked_fixture(tc, tu_setup, NULL);
    tcase_set_timeout(tc, 60);
    for (int k = 0; k < 8 && groups[g].tests[k]; k++) tcase_add_test(tc, groups[g].tests[k]);
    suite_add_tcase(s, tc);
  }
  return s;
}
TU_MAIN(make_suite)
