/* check_ops_factory: the cpu factory and random kernels: zeros/ones/full,
 * arange/linspace/eye, the *_like forms, and rand/randn/randint/randperm/
 * rand_like/randn_like/bernoulli/uniform_/normal_ (values against an
 * independent Philox reference, reproducibility, thread independence,
 * distributions, errors, leaks). */
#include "testutil.h"

/* ---- helpers ------------------------------------------------------------------------- */

/* Calls an op with boxed arguments; returns the first result or NULL. */
static wk_tensor *call1(const char *name, const wk_value *a, int n) {
  wk_value out[WK_MAX_OUTS];
  if (wk_call(name, a, n, out) != WK_OK) return NULL;
  return out[0].u.t;
}
#define CALL(name, ...) \
  call1(name, (const wk_value[]){__VA_ARGS__}, (int)(sizeof((const wk_value[]){__VA_ARGS__}) / sizeof(wk_value)))
#define SZ(...) WK_VINTS(((const int64_t[]){__VA_ARGS__}), sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t))

static const wk_dtype all_dtypes[] = {WK_F32, WK_F64, WK_F16, WK_BF16, WK_I8, WK_U8, WK_I16, WK_I32, WK_I64, WK_BOOL};
#define N_DTYPES ((int)(sizeof all_dtypes / sizeof all_dtypes[0]))
static const wk_dtype float_dtypes[] = {WK_F32, WK_F64, WK_F16, WK_BF16};

static void assert_shape(wk_tensor *t, wk_dtype dt, const int64_t *sizes, int nd, int line) {
  ck_assert_msg(t != NULL, "line %d: NULL: %s", line, wk_last_error_message());
  ck_assert_msg(wk_tensor_dtype(t) == dt, "line %d: dtype %s, expected %s", line, wk_dtype_name(wk_tensor_dtype(t)),
                wk_dtype_name(dt));
  ck_assert_msg(wk_tensor_dim(t) == nd, "line %d: %d dims, expected %d", line, wk_tensor_dim(t), nd);
  for (int i = 0; i < nd; i++)
    ck_assert_msg(wk_tensor_size(t, i) == sizes[i], "line %d: size[%d] = %lld, expected %lld", line, i,
                  (long long)wk_tensor_size(t, i), (long long)sizes[i]);
  ck_assert_msg(wk_tensor_is_contiguous(t), "line %d: result not contiguous", line);
}
#define ASSERT_SHAPE(t, dt, ...) assert_shape(t, dt, WK_SHAPE(__VA_ARGS__), __LINE__)
#define ASSERT_SHAPE0(t, dt) assert_shape(t, dt, NULL, 0, __LINE__)

/* Asserts every element of t equals v. */
static void assert_all(wk_tensor *t, double v, int line) {
  ck_assert_msg(t != NULL, "line %d: NULL: %s", line, wk_last_error_message());
  int64_t n = wk_tensor_numel(t);
  double *x = tu_values(t);
  for (int64_t i = 0; i < n; i++)
    if (!(x[i] == v || (isnan(v) && isnan(x[i])))) {
      double got = x[i];
      free(x);
      ck_abort_msg("line %d: element %lld = %.17g, expected %.17g", line, (long long)i, got, v);
    }
  free(x);
}
#define ASSERT_ALL(t, v) assert_all(t, v, __LINE__)

/* Bitwise equality of two tensors' data (same dtype and shape). */
static void assert_same_bits(wk_tensor *a, wk_tensor *b, int line) {
  ck_assert_msg(a && b, "line %d: NULL: %s", line, wk_last_error_message());
  ck_assert_msg(wk_tensor_numel(a) == wk_tensor_numel(b) && wk_tensor_dtype(a) == wk_tensor_dtype(b),
                "line %d: different tensors", line);
  wk_tensor *ca = wk_contiguous(a), *cb = wk_contiguous(b);
  size_t nb = (size_t)wk_tensor_numel(a) * wk_dtype_size(wk_tensor_dtype(a));
  int diff = nb ? memcmp(wk_tensor_data(ca), wk_tensor_data(cb), nb) : 0;
  wk_release(ca);
  wk_release(cb);
  ck_assert_msg(diff == 0, "line %d: tensors differ", line);
}
#define ASSERT_SAME_BITS(a, b) assert_same_bits(a, b, __LINE__)

/* Mean and variance of t's values. */
static void moments(wk_tensor *t, double *mean, double *var) {
  int64_t n = wk_tensor_numel(t);
  double *x = tu_values(t), s = 0, s2 = 0;
  for (int64_t i = 0; i < n; i++) s += x[i];
  double m = s / (double)n;
  for (int64_t i = 0; i < n; i++) s2 += (x[i] - m) * (x[i] - m);
  free(x);
  *mean = m;
  *var = s2 / (double)(n - 1);
}

/* ---- an independent Philox 4x32-10 (Salmon et al., Random123) ---------------------------- */
static void ref_philox4x32(uint32_t c[4], uint32_t k0, uint32_t k1) {
  for (int r = 0; r < 10; r++) {
    if (r) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0, n1 = (uint32_t)p1;
    uint32_t n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1, n3 = (uint32_t)p0;
    c[0] = n0, c[1] = n1, c[2] = n2, c[3] = n3;
  }
}
/* Words of counter `i` of the stream keyed by `seed` (Wick's documented scheme). */
static void ref_draw(uint64_t seed, uint64_t i, uint32_t r[4]) {
  r[0] = (uint32_t)i, r[1] = (uint32_t)(i >> 32), r[2] = 0, r[3] = 0;
  ref_philox4x32(r, (uint32_t)seed, (uint32_t)(seed >> 32));
}
static double ref_u24(uint32_t x) { return (double)(x >> 8) / 16777216.0; }
static double ref_u53(uint32_t hi, uint32_t lo) {
  return (double)((((uint64_t)hi << 32) | lo) >> 11) / 9007199254740992.0;
}
static double ref_box_muller(double u1, double u2) {
  return sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586476925286766559 * u2);
}

/* ---- constant factories ------------------------------------------------------------------ */

START_TEST(test_factory_zeros_ones_values) {
  int64_t live = wk_live_tensors();
  for (int k = 0; k < N_DTYPES; k++) {
    wk_dtype dt = all_dtypes[k];
    wk_tensor *z = wk_zeros(WK_SHAPE(2, 3), WK_OPTS(.dtype = dt));
    wk_tensor *o = wk_ones(WK_SHAPE(4, 1, 2), WK_OPTS(.dtype = dt));
    ASSERT_SHAPE(z, dt, 2, 3);
    ASSERT_SHAPE(o, dt, 4, 1, 2);
    ASSERT_ALL(z, 0);
    ASSERT_ALL(o, 1);
    wk_release(z);
    wk_release(o);
  }
  /* dtype None -> float32; 0-dim and zero-size shapes */
  wk_tensor *z = wk_zeros(NULL, 0, WK_OPTS(0));
  ASSERT_SHAPE0(z, WK_F32);
  ck_assert_int_eq(wk_tensor_numel(z), 1);
  ASSERT_ALL(z, 0);
  wk_tensor *o = wk_ones(WK_SHAPE(3, 0, 2), WK_OPTS(0));
  ASSERT_SHAPE(o, WK_F32, 3, 0, 2);
  ck_assert_int_eq(wk_tensor_numel(o), 0);
  wk_release(z);
  wk_release(o);
  /* explicit cpu device */
  o = wk_ones(WK_SHAPE(2), WK_OPTS(.dtype = WK_F64, .device = {WK_DEVICE_CPU, 0}));
  ASSERT_SHAPE(o, WK_F64, 2);
  ck_assert_int_eq(wk_tensor_device(o).type, WK_DEVICE_CPU);
  ASSERT_ALL(o, 1);
  wk_release(o);
  /* large enough to run over the pool */
  z = wk_zeros(WK_SHAPE(300001), WK_OPTS(.dtype = WK_I16));
  o = wk_ones(WK_SHAPE(7, 50001), WK_OPTS(.dtype = WK_F64));
  ASSERT_ALL(z, 0);
  ASSERT_ALL(o, 1);
  wk_release(z);
  wk_release(o);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_factory_full_dtypes) {
  int64_t live = wk_live_tensors();
  /* dtype inferred from the fill value, as in PyTorch */
  wk_tensor *t = CALL("full", SZ(2, 2), WK_VI(7));
  ASSERT_SHAPE(t, WK_I64, 2, 2);
  ASSERT_ALL(t, 7);
  wk_release(t);
  t = CALL("full", SZ(3), WK_VB(true));
  ASSERT_SHAPE(t, WK_BOOL, 3);
  ASSERT_ALL(t, 1);
  wk_release(t);
  t = CALL("full", SZ(3), WK_VF(2.5));
  ASSERT_SHAPE(t, WK_F32, 3);
  ASSERT_ALL(t, 2.5);
  wk_release(t);
  t = wk_full(WK_SHAPE(2, 1), -1.25, WK_OPTS(0));
  ASSERT_SHAPE(t, WK_F32, 2, 1);
  ASSERT_ALL(t, -1.25);
  wk_release(t);
  /* int64 fills are exact beyond 2^53 */
  int64_t big = ((int64_t)1 << 53) + 1;
  t = CALL("full", SZ(2), WK_VI(big));
  ck_assert(t != NULL);
  ck_assert(((int64_t *)wk_tensor_data(t))[0] == big && ((int64_t *)wk_tensor_data(t))[1] == big);
  wk_release(t);
  /* explicit dtypes: every dtype, int, float and bool fills */
  for (int k = 0; k < N_DTYPES; k++) {
    wk_dtype dt = all_dtypes[k];
    t = CALL("full", SZ(5), WK_VI(3), WK_VDT(dt));
    ASSERT_SHAPE(t, dt, 5);
    ASSERT_ALL(t, dt == WK_BOOL ? 1 : 3);
    wk_release(t);
    t = CALL("full", SZ(2, 3), WK_VF(2.75), WK_VDT(dt));
    ASSERT_ALL(t, dt == WK_BOOL ? 1 : wk_dtype_is_floating(dt) ? 2.75 : 2);
    wk_release(t);
    t = CALL("full", SZ(4), WK_VB(false), WK_VDT(dt));
    ASSERT_ALL(t, 0);
    wk_release(t);
  }
  /* 0-dim, zero-size, non-finite floats, large (parallel) */
  t = CALL("full", WK_VINTS(NULL, 0), WK_VF(INFINITY), WK_VDT(WK_F16));
  ASSERT_SHAPE0(t, WK_F16);
  ASSERT_ALL(t, INFINITY);
  wk_release(t);
  t = CALL("full", SZ(0, 4), WK_VF(NAN));
  ASSERT_SHAPE(t, WK_F32, 0, 4);
  wk_release(t);
  t = CALL("full", SZ(3), WK_VF(NAN), WK_VDT(WK_F64));
  ASSERT_ALL(t, NAN);
  wk_release(t);
  t = CALL("full", SZ(100003), WK_VF(0.5), WK_VDT(WK_BF16));
  ASSERT_ALL(t, 0.5);
  wk_release(t);
  t = CALL("full", SZ(70001), WK_VI(-5), WK_VDT(WK_I8));
  ASSERT_ALL(t, -5);
  wk_release(t);
  /* unsigned types take small negative integers with wraparound (PyTorch's checked conversion) */
  t = CALL("full", SZ(2), WK_VI(-1), WK_VDT(WK_U8));
  ASSERT_ALL(t, 255);
  wk_release(t);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_factory_like) {
  int64_t live = wk_live_tensors();
  wk_tensor *x = tu_rand(WK_SHAPE(3, 4), WK_I32, -5, 5, 1);
  wk_tensor *xt = wk_t(x); /* non-contiguous [4, 3] */
  wk_tensor *z = wk_zeros_like(xt, WK_OPTS(0));
  ASSERT_SHAPE(z, WK_I32, 4, 3);
  ASSERT_ALL(z, 0);
  wk_tensor *o = wk_ones_like(xt, WK_OPTS(.dtype = WK_F16));
  ASSERT_SHAPE(o, WK_F16, 4, 3);
  ASSERT_ALL(o, 1);
  wk_tensor *f = wk_full_like(x, 2.7, WK_OPTS(0)); /* keeps int32: 2.7 -> 2 */
  ASSERT_SHAPE(f, WK_I32, 3, 4);
  ASSERT_ALL(f, 2);
  wk_tensor *fb = CALL("full_like", WK_VT(x), WK_VB(true), WK_VDT(WK_BOOL));
  ASSERT_SHAPE(fb, WK_BOOL, 3, 4);
  ASSERT_ALL(fb, 1);
  wk_tensor *fi = CALL("full_like", WK_VT(x), WK_VI(-9), WK_VDT(WK_F64));
  ASSERT_SHAPE(fi, WK_F64, 3, 4);
  ASSERT_ALL(fi, -9);
  wk_release(z);
  wk_release(o);
  wk_release(f);
  wk_release(fb);
  wk_release(fi);
  /* every dtype, 0-dim and zero-size inputs */
  for (int k = 0; k < N_DTYPES; k++) {
    wk_tensor *s = wk_zeros(NULL, 0, WK_OPTS(.dtype = all_dtypes[k]));
    wk_tensor *e = wk_zeros(WK_SHAPE(2, 0), WK_OPTS(.dtype = all_dtypes[k]));
    wk_tensor *a = wk_ones_like(s, WK_OPTS(0)), *b = wk_full_like(e, 1, WK_OPTS(0));
    ASSERT_SHAPE0(a, all_dtypes[k]);
    ASSERT_ALL(a, 1);
    ASSERT_SHAPE(b, all_dtypes[k], 2, 0);
    wk_release(s);
    wk_release(e);
    wk_release(a);
    wk_release(b);
  }
  wk_release(xt);
  wk_release(x);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_factory_constant_errors) {
  int64_t live = wk_live_tensors();
  ck_assert_ptr_null(wk_zeros(WK_SHAPE(2, -1), WK_OPTS(0)));
  TU_FAILS_WITH(WK_ERR_SHAPE, "negative dimension -1");
  ck_assert_ptr_null(wk_ones(WK_SHAPE(-3), WK_OPTS(0)));
  TU_FAILS_WITH(WK_ERR_SHAPE, "ones(): Trying to create tensor with negative dimension -3: [-3]");
  ck_assert_ptr_null(CALL("full", SZ(2), WK_VI(300), WK_VDT(WK_U8)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "value 300 cannot be converted to type u8 without overflow");
  ck_assert_ptr_null(CALL("full", SZ(2), WK_VI(128), WK_VDT(WK_I8)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "cannot be converted to type i8");
  ck_assert_ptr_null(CALL("full", SZ(2), WK_VF(-1.0), WK_VDT(WK_U8)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "without overflow");
  ck_assert_ptr_null(CALL("full", SZ(2), WK_VF(NAN), WK_VDT(WK_I32)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "cannot be converted to type i32");
  ck_assert_ptr_null(CALL("full", SZ(2), WK_VI(70000), WK_VDT(WK_F16)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "cannot be converted to type f16");
  ck_assert_ptr_null(CALL("full", SZ(2), WK_VF(1e300), WK_VDT(WK_F32)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "cannot be converted to type f32");
  ck_assert_ptr_null(CALL("full", SZ(2), WK_VF(1e19), WK_VDT(WK_I64)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "cannot be converted to type i64");
  wk_tensor *x = wk_zeros(WK_SHAPE(2), WK_OPTS(.dtype = WK_U8));
  ck_assert_ptr_null(wk_full_like(x, 256, WK_OPTS(0)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "full_like(): value");
  wk_release(x);
  ck_assert_ptr_null(wk_zeros_like(NULL, WK_OPTS(0)));
  TU_FAILS_WITH(WK_ERR_NULL, "NULL");
  ck_assert_ptr_null(wk_full_like(NULL, 1, WK_OPTS(0)));
  TU_FAILS_WITH(WK_ERR_NULL, "NULL");
  ck_assert_ptr_null(CALL("zeros", SZ(2), WK_VDT((wk_dtype)77)));
  TU_FAILS_WITH(WK_ERR_DTYPE, "not a valid dtype");
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- arange, linspace, eye ------------------------------------------------------------- */

START_TEST(test_factory_arange_values) {
  int64_t live = wk_live_tensors();
  wk_tensor *t = wk_arange_int(0, 5, 1, WK_OPTS(0)); /* torch.arange(5) */
  ASSERT_SHAPE(t, WK_I64, 5);
  TU_EQ_VALS(t, 0, 1, 2, 3, 4);
  wk_release(t);
  t = CALL("arange", WK_VI(1), WK_VI(4)); /* default step 1 */
  ASSERT_SHAPE(t, WK_I64, 3);
  TU_EQ_VALS(t, 1, 2, 3);
  wk_release(t);
  t = wk_arange(1, 2.5, 0.5, WK_OPTS(0)); /* torch.arange(1, 2.5, 0.5) */
  ASSERT_SHAPE(t, WK_F32, 3);
  TU_EQ_VALS(t, 1, 1.5, 2);
  wk_release(t);
  t = CALL("arange", WK_VI(10), WK_VI(0), WK_VI(-3)); /* torch.arange(10, 0, -3) */
  ASSERT_SHAPE(t, WK_I64, 4);
  TU_EQ_VALS(t, 10, 7, 4, 1);
  wk_release(t);
  t = CALL("arange", WK_VI(0), WK_VI(1), WK_VF(0.1)); /* a float step makes float32 */
  ASSERT_SHAPE(t, WK_F32, 10);
  {
    double ref[10];
    for (int i = 0; i < 10; i++) ref[i] = (float)(0.1 * i);
    TU_CLOSE(t, ref, 10, 0, 0);
  }
  wk_release(t);
  /* PyTorch's well-known case: (1.3 - 1) / 0.1 = 3.0000000000000004 -> 4 elements */
  t = wk_arange(1, 1.3, 0.1, WK_OPTS(0));
  ASSERT_SHAPE(t, WK_F32, 4);
  TU_EQ_VALS(t, 1.0f, 1.1f, 1.2f, 1.3f);
  wk_release(t);
  t = wk_arange(-1, 1, 0.3, WK_OPTS(0)); /* 7 elements */
  ASSERT_SHAPE(t, WK_F32, 7);
  TU_EQ_VALS(t, -1.0f, (float)(-1 + 0.3), (float)(-1 + 0.6), (float)(-1 + 0.3 * 3), (float)(-1 + 1.2),
             (float)(-1 + 1.5), (float)(-1 + 0.3 * 6));
  wk_release(t);
  t = wk_arange(0, 10, 3, WK_OPTS(.dtype = WK_F64));
  ASSERT_SHAPE(t, WK_F64, 4);
  TU_EQ_VALS(t, 0, 3, 6, 9);
  wk_release(t);
  t = wk_arange_int(0, 0, 1, WK_OPTS(0)); /* empty */
  ASSERT_SHAPE(t, WK_I64, 0);
  wk_release(t);
  t = wk_arange(5, 5, -1, WK_OPTS(0));
  ASSERT_SHAPE(t, WK_F32, 0);
  wk_release(t);
  t = wk_arange_int(-3, 3, 2, WK_OPTS(.dtype = WK_I8));
  ASSERT_SHAPE(t, WK_I8, 3);
  TU_EQ_VALS(t, -3, -1, 1);
  wk_release(t);
  t = wk_arange(0, 2, 0.25, WK_OPTS(.dtype = WK_F16));
  ASSERT_SHAPE(t, WK_F16, 8);
  TU_EQ_VALS(t, 0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75);
  wk_release(t);
  t = wk_arange(0, 4, 1, WK_OPTS(.dtype = WK_BF16));
  TU_EQ_VALS(t, 0, 1, 2, 3);
  wk_release(t);
  /* large: over the pool, against a double reference */
  int64_t n = 100003;
  t = wk_arange_int(-7, -7 + 3 * n, 3, WK_OPTS(0));
  ASSERT_SHAPE(t, WK_I64, n);
  int64_t *d = wk_tensor_data(t);
  int64_t bad = 0;
  for (int64_t i = 0; i < n; i++) bad += d[i] != -7 + 3 * i;
  ck_assert_int_eq(bad, 0);
  wk_release(t);
  t = wk_arange(0.5, 0.5 + 0.01 * 80000, 0.01, WK_OPTS(0));
  ck_assert_int_eq(wk_tensor_numel(t), 80000);
  double *ref = malloc(sizeof(double) * 80000);
  for (int i = 0; i < 80000; i++) ref[i] = 0.5 + 0.01 * i;
  TU_CLOSE(t, ref, 80000, 1e-6, 0);
  free(ref);
  wk_release(t);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_factory_arange_errors) {
  int64_t live = wk_live_tensors();
  ck_assert_ptr_null(wk_arange_int(0, 5, 0, WK_OPTS(0)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "step must be nonzero");
  ck_assert_ptr_null(wk_arange(0, 5, 0, WK_OPTS(0)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "step must be nonzero");
  ck_assert_ptr_null(wk_arange(0, 5, 0.5, WK_OPTS(.dtype = WK_I32))); /* step truncates to 0 */
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "step must be nonzero");
  ck_assert_ptr_null(wk_arange_int(0, 5, -1, WK_OPTS(0)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "upper bound and larger bound inconsistent with step sign");
  ck_assert_ptr_null(wk_arange(5, 0, 0.5, WK_OPTS(0)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "upper bound and larger bound inconsistent with step sign");
  ck_assert_ptr_null(wk_arange(0, INFINITY, 1, WK_OPTS(0)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "unsupported range: 0 -> inf");
  ck_assert_ptr_null(wk_arange(0, NAN, 1, WK_OPTS(.dtype = WK_F64)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "unsupported range");
  ck_assert_ptr_null(wk_arange(0, 1e300, 1e-300, WK_OPTS(.dtype = WK_F64)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "invalid size, possible overflow?");
  ck_assert_ptr_null(wk_arange_int(0, 3, 1, WK_OPTS(.dtype = WK_BOOL)));
  TU_FAILS_WITH(WK_ERR_DTYPE, "not implemented for 'bool'");
  ck_assert_ptr_null(CALL("arange", WK_VI(0), WK_VS("x")));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "argument 'end'");
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_factory_linspace) {
  int64_t live = wk_live_tensors();
  wk_tensor *t = wk_linspace(3, 10, 5, WK_OPTS(0)); /* torch.linspace(3, 10, steps=5) */
  ASSERT_SHAPE(t, WK_F32, 5);
  TU_EQ_VALS(t, 3.0, 4.75, 6.5, 8.25, 10.0);
  wk_release(t);
  t = wk_linspace(-10, 10, 5, WK_OPTS(0));
  TU_EQ_VALS(t, -10, -5, 0, 5, 10);
  wk_release(t);
  t = wk_linspace(-10, 10, 1, WK_OPTS(0)); /* one step: start */
  ASSERT_SHAPE(t, WK_F32, 1);
  TU_EQ_VALS(t, -10);
  wk_release(t);
  t = wk_linspace(0, 1, 0, WK_OPTS(0));
  ASSERT_SHAPE(t, WK_F32, 0);
  wk_release(t);
  t = wk_linspace(0, 10, 4, WK_OPTS(.dtype = WK_I64)); /* torch: [0, 3, 6, 10] */
  ASSERT_SHAPE(t, WK_I64, 4);
  TU_EQ_VALS(t, 0, 3, 6, 10);
  wk_release(t);
  t = CALL("linspace", WK_VI(5), WK_VI(1), WK_VI(3)); /* int arguments still give float32 */
  ASSERT_SHAPE(t, WK_F32, 3);
  TU_EQ_VALS(t, 5, 3, 1);
  wk_release(t);
  t = wk_linspace(0, 1, 2, WK_OPTS(.dtype = WK_F16));
  TU_EQ_VALS(t, 0, 1);
  wk_release(t);
  /* symmetric evaluation: both ends exact, middle close to the double formula */
  for (int k = 0; k < 2; k++) {
    wk_dtype dt = k ? WK_F64 : WK_F32;
    int64_t n = k ? 100001 : 1001;
    t = wk_linspace(-0.3, 2.9, n, WK_OPTS(.dtype = dt));
    ASSERT_SHAPE(t, dt, n);
    double *ref = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) ref[i] = -0.3 + (2.9 + 0.3) * (double)i / (double)(n - 1);
    TU_CLOSE(t, ref, n, k ? 1e-13 : 2e-6, k ? 1e-15 : 1e-6);
    double *v = tu_values(t);
    ck_assert(v[0] == (k ? -0.3 : (double)(float)-0.3));
    ck_assert(v[n - 1] == (k ? 2.9 : (double)(float)2.9));
    free(v);
    free(ref);
    wk_release(t);
  }
  ck_assert_ptr_null(wk_linspace(0, 1, -1, WK_OPTS(0)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "number of steps must be non-negative");
  ck_assert_ptr_null(wk_linspace(0, 1, 3, WK_OPTS(.dtype = WK_BOOL)));
  TU_FAILS_WITH(WK_ERR_DTYPE, "bool");
  ck_assert_ptr_null(wk_linspace(0, 300, 3, WK_OPTS(.dtype = WK_I8)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "cannot be converted to type i8");
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_factory_eye) {
  int64_t live = wk_live_tensors();
  const int64_t shapes[][2] = {{3, -1}, {2, 4}, {4, 2}, {0, -1}, {0, 3}, {1, 1}, {300, 300}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int k = 0; k < N_DTYPES; k++) {
      int64_t n = shapes[s][0], m = shapes[s][1] < 0 ? n : shapes[s][1];
      wk_tensor *t = wk_eye(n, shapes[s][1], WK_OPTS(.dtype = all_dtypes[k]));
      ASSERT_SHAPE(t, all_dtypes[k], n, m);
      double *v = tu_values(t);
      int64_t bad = 0;
      for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < m; j++) bad += v[i * m + j] != (i == j ? 1.0 : 0.0);
      free(v);
      ck_assert_msg(bad == 0, "eye(%lld, %lld, %s): %lld wrong elements", (long long)n, (long long)m,
                    wk_dtype_name(all_dtypes[k]), (long long)bad);
      wk_release(t);
    }
  wk_tensor *t = CALL("eye", WK_VI(2));
  ASSERT_SHAPE(t, WK_F32, 2, 2);
  TU_EQ_VALS(t, 1, 0, 0, 1);
  wk_release(t);
  ck_assert_ptr_null(wk_eye(-1, -1, WK_OPTS(0)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "n must be greater or equal to 0, got -1");
  ck_assert_ptr_null(wk_eye(2, -2, WK_OPTS(0)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "m must be greater or equal to 0, got -2");
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- random: exact values from the documented Philox scheme -------------------------------- */

START_TEST(test_factory_philox_reference) {
  /* Known-answer vectors of Philox4x32-10 (Random123's kat_vectors). */
  uint32_t c[4] = {0, 0, 0, 0};
  ref_philox4x32(c, 0, 0);
  ck_assert(c[0] == 0x6627e8d5u && c[1] == 0xe169c58du && c[2] == 0xbc57ac4cu && c[3] == 0x9b00dbd8u);
  uint32_t d[4] = {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu};
  ref_philox4x32(d, 0xffffffffu, 0xffffffffu);
  ck_assert(d[0] == 0x408f276du && d[1] == 0x41c83b0eu && d[2] == 0xa20bc7c6u && d[3] == 0x6d5451fdu);
  uint32_t e[4] = {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u};
  ref_philox4x32(e, 0xa4093822u, 0x299f31d0u);
  ck_assert(e[0] == 0xd16cfe09u && e[1] == 0x94fdccebu && e[2] == 0x5001e420u && e[3] == 0x24126ea1u);
}
END_TEST

START_TEST(test_factory_random_exact_values) {
  int64_t live = wk_live_tensors();
  const uint64_t seed = 0x1234567890abcdefull;
  uint32_t r[4];
  wk_manual_seed(seed);
  wk_tensor *a = wk_rand(WK_SHAPE(3, 5), WK_OPTS(0));
  wk_tensor *b = wk_rand(WK_SHAPE(4), WK_OPTS(.dtype = WK_F64)); /* continues at counter 15 */
  ASSERT_SHAPE(a, WK_F32, 3, 5);
  ASSERT_SHAPE(b, WK_F64, 4);
  double ra[15], rb[4];
  for (int i = 0; i < 15; i++) ref_draw(seed, (uint64_t)i, r), ra[i] = ref_u24(r[0]);
  for (int i = 0; i < 4; i++) ref_draw(seed, 15 + (uint64_t)i, r), rb[i] = ref_u53(r[0], r[1]);
  TU_CLOSE(a, ra, 15, 0, 0);
  TU_CLOSE(b, rb, 4, 0, 0);
  wk_release(a);
  wk_release(b);
  uint64_t s_, off;
  TU_OK(wk_rng_get_state((wk_device){WK_DEVICE_CPU, 0}, &s_, &off));
  ck_assert(s_ == seed && off == 19);

  wk_manual_seed(7);
  a = wk_randn(WK_SHAPE(50), WK_OPTS(0));
  b = wk_randn(WK_SHAPE(50), WK_OPTS(.dtype = WK_F64));
  double na[50], nb[50];
  for (int i = 0; i < 50; i++) {
    ref_draw(7, (uint64_t)i, r);
    na[i] = (float)ref_box_muller(ref_u24(r[0]), ref_u24(r[1]));
    ref_draw(7, 50 + (uint64_t)i, r);
    nb[i] = ref_box_muller(ref_u53(r[0], r[1]), ref_u53(r[2], r[3]));
  }
  TU_CLOSE(a, na, 50, 1e-6, 1e-6);
  TU_CLOSE(b, nb, 50, 1e-12, 1e-12);
  wk_release(a);
  wk_release(b);

  wk_manual_seed(99);
  a = wk_randint(3, 13, WK_SHAPE(40), WK_OPTS(0));
  ASSERT_SHAPE(a, WK_I64, 40);
  int64_t big = (int64_t)1 << 40;
  b = wk_randint(-big, big, WK_SHAPE(40), WK_OPTS(0));
  int64_t *pa = wk_tensor_data(a), *pb = wk_tensor_data(b);
  for (int i = 0; i < 40; i++) {
    ref_draw(99, (uint64_t)i, r);
    ck_assert(pa[i] == 3 + (int64_t)(r[0] % 10u));
    ref_draw(99, 40 + (uint64_t)i, r);
    ck_assert(pb[i] == -big + (int64_t)((((uint64_t)r[0] << 32) | r[1]) % (uint64_t)(2 * big)));
  }
  wk_release(a);
  wk_release(b);

  /* randperm: Fisher-Yates, step i drawing from counter i */
  wk_manual_seed(5);
  a = wk_randperm(9, WK_OPTS(0));
  ASSERT_SHAPE(a, WK_I64, 9);
  int64_t perm[9];
  for (int i = 0; i < 9; i++) perm[i] = i;
  for (int i = 0; i + 1 < 9; i++) {
    ref_draw(5, (uint64_t)i, r);
    int k = i + (int)(r[0] % (uint32_t)(9 - i));
    int64_t tmp = perm[i];
    perm[i] = perm[k];
    perm[k] = tmp;
  }
  for (int i = 0; i < 9; i++) ck_assert(((int64_t *)wk_tensor_data(a))[i] == perm[i]);
  wk_release(a);

  /* bernoulli.p and uniform_ */
  wk_manual_seed(11);
  wk_tensor *x = wk_zeros(WK_SHAPE(64), WK_OPTS(.dtype = WK_F64));
  a = wk_bernoulli_p(x, 0.4);
  ck_assert_ptr_eq(wk_uniform_(x, -2, 3), x);
  double rbern[64], runi[64];
  for (int i = 0; i < 64; i++) {
    ref_draw(11, (uint64_t)i, r);
    rbern[i] = ref_u53(r[0], r[1]) < 0.4;
    ref_draw(11, 64 + (uint64_t)i, r);
    runi[i] = ref_u53(r[0], r[1]) * 5 - 2;
  }
  ASSERT_SHAPE(a, WK_F64, 64);
  TU_CLOSE(a, rbern, 64, 0, 0);
  TU_CLOSE(x, runi, 64, 1e-15, 1e-15);
  wk_release(a);
  wk_release(x);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- random: reproducibility and thread independence ------------------------------------- */

/* Draws one tensor from each random op after seeding. */
#define N_RANDOM_OPS 12
static void draw_all(uint64_t seed, wk_tensor **out) {
  const int64_t n = 100003;
  wk_manual_seed(seed);
  out[0] = wk_rand(WK_SHAPE(n), WK_OPTS(0));
  out[1] = wk_randn(WK_SHAPE(n), WK_OPTS(.dtype = WK_F64));
  out[2] = wk_randint(-50, 1000, WK_SHAPE(n), WK_OPTS(.dtype = WK_I32));
  out[3] = wk_randperm(n, WK_OPTS(0));
  out[4] = wk_rand_like(out[1]);
  out[5] = wk_randn_like(out[0]);
  out[6] = wk_bernoulli(out[0]);
  out[7] = wk_bernoulli_p(out[2], 0.25);
  out[8] = wk_zeros(WK_SHAPE(n), WK_OPTS(.dtype = WK_BF16));
  wk_uniform_(out[8], -1, 1);
  wk_tensor *base = wk_zeros(WK_SHAPE(317, 2 * 317), WK_OPTS(.dtype = WK_F32));
  out[9] = wk_slice(base, 1, 0, 2 * 317, 2); /* non-contiguous */
  wk_release(base);
  wk_normal_(out[9], 1, 3);
  out[10] = wk_randn(WK_SHAPE(n), WK_OPTS(.dtype = WK_F16));
  out[11] = wk_rand(WK_SHAPE(n), WK_OPTS(.dtype = WK_F64));
  for (int i = 0; i < N_RANDOM_OPS; i++) ck_assert_msg(out[i] != NULL, "op %d: %s", i, wk_last_error_message());
}

START_TEST(test_factory_random_reproducible) {
  int64_t live = wk_live_tensors();
  wk_tensor *a[N_RANDOM_OPS], *b[N_RANDOM_OPS], *c[N_RANDOM_OPS];
  draw_all(2024, a);
  draw_all(2024, b);
  draw_all(2025, c);
  for (int i = 0; i < N_RANDOM_OPS; i++) ASSERT_SAME_BITS(a[i], b[i]);
  /* another seed gives other numbers */
  double *x = tu_values(a[0]), *y = tu_values(c[0]);
  int same = 0;
  for (int i = 0; i < 1000; i++) same += x[i] == y[i];
  ck_assert_int_lt(same, 10);
  free(x);
  free(y);
  /* consecutive calls without reseeding differ */
  wk_tensor *r1 = wk_rand(WK_SHAPE(100), WK_OPTS(0)), *r2 = wk_rand(WK_SHAPE(100), WK_OPTS(0));
  x = tu_values(r1), y = tu_values(r2);
  same = 0;
  for (int i = 0; i < 100; i++) same += x[i] == y[i];
  ck_assert_int_lt(same, 3);
  free(x);
  free(y);
  wk_release(r1);
  wk_release(r2);
  for (int i = 0; i < N_RANDOM_OPS; i++) wk_release(a[i]), wk_release(b[i]), wk_release(c[i]);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_factory_random_thread_independent) {
  int64_t live = wk_live_tensors();
  int nt0 = wk_num_threads();
  wk_tensor *a[N_RANDOM_OPS], *b[N_RANDOM_OPS], *c[N_RANDOM_OPS];
  TU_OK(wk_set_num_threads(1));
  draw_all(77, a);
  TU_OK(wk_set_num_threads(2));
  draw_all(77, b);
  TU_OK(wk_set_num_threads(3));
  draw_all(77, c);
  TU_OK(wk_set_num_threads(nt0));
  for (int i = 0; i < N_RANDOM_OPS; i++) {
    ASSERT_SAME_BITS(a[i], b[i]);
    ASSERT_SAME_BITS(a[i], c[i]);
  }
  for (int i = 0; i < N_RANDOM_OPS; i++) wk_release(a[i]), wk_release(b[i]), wk_release(c[i]);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_factory_inplace_strided) {
  int64_t live = wk_live_tensors();
  /* A strided view gets the numbers a contiguous tensor of its shape would get. */
  wk_manual_seed(3);
  wk_tensor *ref = wk_zeros(WK_SHAPE(4, 6), WK_OPTS(.dtype = WK_F64));
  wk_uniform_(ref, 1, 2);
  wk_tensor *ref2 = wk_zeros(WK_SHAPE(4, 6), WK_OPTS(.dtype = WK_F64));
  wk_normal_(ref2, 0, 1);
  wk_manual_seed(3);
  wk_tensor *base = wk_zeros(WK_SHAPE(6, 4), WK_OPTS(.dtype = WK_F64));
  wk_tensor *v = wk_t(base);
  uint64_t ver = wk_tensor_version(base);
  ck_assert_ptr_eq(wk_uniform_(v, 1, 2), v);
  ck_assert(wk_tensor_version(base) > ver);
  ASSERT_SAME_BITS(v, ref);
  ver = wk_tensor_version(base);
  ck_assert_ptr_eq(wk_normal_(v, 0, 1), v);
  ck_assert(wk_tensor_version(base) > ver);
  ASSERT_SAME_BITS(v, ref2);
  /* 0-dim and zero-size */
  wk_tensor *s = wk_zeros(NULL, 0, WK_OPTS(0)), *e = wk_zeros(WK_SHAPE(0, 3), WK_OPTS(0));
  ck_assert_ptr_eq(wk_uniform_(s, 5, 6), s);
  double x;
  TU_OK(wk_item(s, &x));
  ck_assert(x >= 5 && x < 6);
  ck_assert_ptr_eq(wk_normal_(e, 0, 1), e);
  ck_assert_ptr_eq(wk_uniform_(e, 0, 1), e);
  /* uniform_ with from == to gives from */
  wk_uniform_(ref, 2, 2);
  ASSERT_ALL(ref, 2);
  wk_normal_(ref, -4, 0);
  ASSERT_ALL(ref, -4);
  wk_release(s);
  wk_release(e);
  wk_release(v);
  wk_release(base);
  wk_release(ref);
  wk_release(ref2);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- random: shapes, dtypes and distributions -------------------------------------------- */

START_TEST(test_factory_random_dtypes_shapes) {
  int64_t live = wk_live_tensors();
  for (int k = 0; k < 4; k++) {
    wk_dtype dt = float_dtypes[k];
    wk_tensor *u = wk_rand(WK_SHAPE(2, 3, 4), WK_OPTS(.dtype = dt));
    wk_tensor *g = wk_randn(WK_SHAPE(5), WK_OPTS(.dtype = dt));
    wk_tensor *ul = wk_rand_like(g), *gl = CALL("randn_like", WK_VT(u), WK_VDT(WK_F64));
    ASSERT_SHAPE(u, dt, 2, 3, 4);
    ASSERT_SHAPE(g, dt, 5);
    ASSERT_SHAPE(ul, dt, 5);
    ASSERT_SHAPE(gl, WK_F64, 2, 3, 4);
    wk_release(u);
    wk_release(g);
    wk_release(ul);
    wk_release(gl);
    /* [0, 1): even bf16 (8 significant bits) never rounds up to 1 */
    u = wk_rand(WK_SHAPE(20000), WK_OPTS(.dtype = dt));
    double *v = tu_values(u);
    double mx = 0, mn = 1;
    for (int i = 0; i < 20000; i++) {
      if (v[i] > mx) mx = v[i];
      if (v[i] < mn) mn = v[i];
    }
    ck_assert_msg(mn >= 0 && mx < 1 && mx > 0.99, "%s rand range [%g, %g]", wk_dtype_name(dt), mn, mx);
    free(v);
    wk_release(u);
  }
  wk_tensor *t = wk_rand(NULL, 0, WK_OPTS(0));
  ASSERT_SHAPE0(t, WK_F32);
  wk_release(t);
  t = wk_randn(WK_SHAPE(3, 0), WK_OPTS(.dtype = WK_F64));
  ASSERT_SHAPE(t, WK_F64, 3, 0);
  wk_release(t);
  t = wk_randperm(0, WK_OPTS(0));
  ASSERT_SHAPE(t, WK_I64, 0);
  wk_release(t);
  t = wk_randperm(1, WK_OPTS(.dtype = WK_U8));
  ASSERT_SHAPE(t, WK_U8, 1);
  TU_EQ_VALS(t, 0);
  wk_release(t);
  /* randint into every dtype that holds the range */
  for (int k = 0; k < N_DTYPES; k++) {
    wk_dtype dt = all_dtypes[k];
    int64_t lo = dt == WK_BOOL ? 0 : dt == WK_U8 ? 10 : -3, hi = dt == WK_BOOL ? 2 : 17;
    t = wk_randint(lo, hi, WK_SHAPE(4, 250), WK_OPTS(.dtype = dt));
    ASSERT_SHAPE(t, dt, 4, 250);
    double *v = tu_values(t);
    int seen_lo = 0, seen_hi = 0, bad = 0;
    for (int i = 0; i < 1000; i++) {
      bad += !(v[i] >= (double)lo && v[i] < (double)hi && v[i] == floor(v[i]));
      seen_lo |= v[i] == (double)lo;
      seen_hi |= v[i] == (double)(hi - 1);
    }
    ck_assert_msg(!bad && seen_lo && seen_hi, "randint into %s", wk_dtype_name(dt));
    free(v);
    wk_release(t);
  }
  t = wk_randint(5, 6, NULL, 0, WK_OPTS(0));
  ASSERT_SHAPE0(t, WK_I64);
  TU_EQ_VALS(t, 5);
  wk_release(t);
  t = wk_randint(INT64_MIN, INT64_MAX, WK_SHAPE(8), WK_OPTS(0)); /* the widest range */
  ck_assert(t != NULL);
  wk_release(t);
  /* bernoulli: same dtype and shape as its input, values 0/1 */
  for (int k = 0; k < 4; k++) {
    wk_tensor *p = wk_full(WK_SHAPE(3, 7), 0.5, WK_OPTS(.dtype = float_dtypes[k]));
    wk_tensor *pt = wk_t(p);
    wk_tensor *bt = wk_bernoulli(pt);
    ASSERT_SHAPE(bt, float_dtypes[k], 7, 3);
    wk_release(bt);
    wk_release(pt);
    wk_release(p);
  }
  for (int k = 0; k < N_DTYPES; k++) {
    wk_tensor *x = wk_zeros(WK_SHAPE(2, 9), WK_OPTS(.dtype = all_dtypes[k]));
    wk_tensor *bt = wk_bernoulli_p(x, 0.5);
    ASSERT_SHAPE(bt, all_dtypes[k], 2, 9);
    double *v = tu_values(bt);
    for (int i = 0; i < 18; i++) ck_assert(v[i] == 0 || v[i] == 1);
    free(v);
    wk_release(bt);
    wk_release(x);
  }
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_factory_random_distributions) {
  int64_t live = wk_live_tensors();
  const int64_t n = 100000;
  double m, v;
  wk_manual_seed(31337);
  for (int k = 0; k < 4; k++) {
    wk_dtype dt = float_dtypes[k];
    double tol = dt == WK_BF16 ? 0.01 : 0.005;
    wk_tensor *u = wk_rand(WK_SHAPE(n), WK_OPTS(.dtype = dt));
    moments(u, &m, &v);
    ck_assert_msg(fabs(m - 0.5) < tol && fabs(v - 1.0 / 12) < tol, "%s rand: mean %g var %g", wk_dtype_name(dt), m, v);
    wk_release(u);
    wk_tensor *g = wk_randn(WK_SHAPE(n), WK_OPTS(.dtype = dt));
    moments(g, &m, &v);
    ck_assert_msg(fabs(m) < 0.02 && fabs(v - 1) < 0.03, "%s randn: mean %g var %g", wk_dtype_name(dt), m, v);
    /* tails: about 4.55% beyond two sigma */
    double *x = tu_values(g);
    int64_t out2 = 0;
    for (int64_t i = 0; i < n; i++) out2 += fabs(x[i]) > 2;
    free(x);
    ck_assert_msg(fabs((double)out2 / (double)n - 0.0455) < 0.004, "%s randn tail %g", wk_dtype_name(dt),
                  (double)out2 / (double)n);
    wk_release(g);
    wk_tensor *t = wk_zeros(WK_SHAPE(n), WK_OPTS(.dtype = dt));
    wk_uniform_(t, 2, 5);
    moments(t, &m, &v);
    ck_assert_msg(fabs(m - 3.5) < 0.03 && fabs(v - 0.75) < 0.02, "%s uniform_: mean %g var %g", wk_dtype_name(dt), m,
                  v);
    wk_normal_(t, 3, 2);
    moments(t, &m, &v);
    ck_assert_msg(fabs(m - 3) < 0.04 && fabs(v - 4) < 0.12, "%s normal_: mean %g var %g", wk_dtype_name(dt), m, v);
    wk_release(t);
  }
  /* randint: each of 10 values about 10% */
  wk_tensor *ri = wk_randint(-4, 6, WK_SHAPE(n), WK_OPTS(0));
  double *x = tu_values(ri);
  int64_t cnt[10] = {0};
  for (int64_t i = 0; i < n; i++) cnt[(int)x[i] + 4]++;
  for (int i = 0; i < 10; i++)
    ck_assert_msg(labs((long)(cnt[i] - n / 10)) < 600, "randint value %d: %lld", i - 4, (long long)cnt[i]);
  free(x);
  wk_release(ri);
  /* bernoulli.p, and bernoulli with per-element probabilities */
  wk_tensor *z = wk_zeros(WK_SHAPE(n), WK_OPTS(.dtype = WK_I64));
  wk_tensor *bp = wk_bernoulli_p(z, 0.3);
  moments(bp, &m, &v);
  ck_assert_msg(fabs(m - 0.3) < 0.01, "bernoulli.p mean %g", m);
  wk_release(bp);
  wk_release(z);
  wk_tensor *probs = wk_empty(WK_SHAPE(2, n / 2), WK_OPTS(.dtype = WK_F32));
  float *pp = wk_tensor_data(probs);
  for (int64_t i = 0; i < n; i++) pp[i] = i < n / 2 ? 0.1f : 0.85f;
  wk_tensor *bt = wk_bernoulli(probs);
  x = tu_values(bt);
  double s0 = 0, s1 = 0;
  for (int64_t i = 0; i < n / 2; i++) s0 += x[i], s1 += x[n / 2 + i];
  free(x);
  ck_assert_msg(fabs(s0 / (n / 2) - 0.1) < 0.01 && fabs(s1 / (n / 2) - 0.85) < 0.01, "bernoulli means %g %g",
                s0 / (n / 2), s1 / (n / 2));
  wk_release(bt);
  /* probabilities 0 and 1 are exact */
  wk_tensor *p01 = tu_tensor((const double[]){0, 1, 0, 1, 1, 0}, WK_F64, WK_SHAPE(6));
  for (int rep = 0; rep < 5; rep++) {
    bt = wk_bernoulli(p01);
    TU_EQ_VALS(bt, 0, 1, 0, 1, 1, 0);
    wk_release(bt);
  }
  wk_release(p01);
  wk_release(probs);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_factory_randperm_permutation) {
  int64_t live = wk_live_tensors();
  const int64_t ns[] = {1, 2, 10, 1000, 70000};
  const wk_dtype dts[] = {WK_I64, WK_I32, WK_F32, WK_F64};
  for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
    for (size_t b = 0; b < sizeof dts / sizeof dts[0]; b++) {
      int64_t n = ns[a];
      wk_tensor *t = wk_randperm(n, WK_OPTS(.dtype = dts[b]));
      ASSERT_SHAPE(t, dts[b], n);
      double *v = tu_values(t);
      char *seen = calloc((size_t)n, 1);
      int64_t fixed = 0, bad = 0;
      for (int64_t i = 0; i < n; i++) {
        if (!(v[i] >= 0 && v[i] < (double)n && v[i] == floor(v[i])) || seen[(int64_t)v[i]]) {
          bad++;
          continue;
        }
        seen[(int64_t)v[i]] = 1;
        fixed += v[i] == (double)i;
      }
      ck_assert_msg(bad == 0, "randperm(%lld, %s) is not a permutation", (long long)n, wk_dtype_name(dts[b]));
      if (n >= 1000) ck_assert_int_lt(fixed, 12); /* about one fixed point expected */
      free(seen);
      free(v);
      wk_release(t);
    }
  /* every permutation of 3 shows up with about equal frequency */
  int cnt[3][3] = {{0}};
  for (int rep = 0; rep < 3000; rep++) {
    wk_tensor *t = wk_randperm(3, WK_OPTS(0));
    int64_t *d = wk_tensor_data(t);
    for (int i = 0; i < 3; i++) cnt[i][d[i]]++;
    wk_release(t);
  }
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) ck_assert_msg(abs(cnt[i][j] - 1000) < 120, "position %d value %d: %d", i, j, cnt[i][j]);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_factory_random_errors) {
  int64_t live = wk_live_tensors();
  ck_assert_ptr_null(wk_rand(WK_SHAPE(3), WK_OPTS(.dtype = WK_I64)));
  TU_FAILS_WITH(WK_ERR_DTYPE, "rand(): expected a floating point dtype, but got i64");
  ck_assert_ptr_null(wk_randn(WK_SHAPE(3), WK_OPTS(.dtype = WK_BOOL)));
  TU_FAILS_WITH(WK_ERR_DTYPE, "floating point");
  ck_assert_ptr_null(wk_rand(WK_SHAPE(3, -2), WK_OPTS(0)));
  TU_FAILS_WITH(WK_ERR_SHAPE, "negative dimension -2");
  wk_tensor *xi = wk_zeros(WK_SHAPE(4), WK_OPTS(.dtype = WK_I32));
  ck_assert_ptr_null(wk_rand_like(xi));
  TU_FAILS_WITH(WK_ERR_DTYPE, "rand_like(): expected a floating point dtype");
  ck_assert_ptr_null(wk_randn_like(xi));
  TU_FAILS_WITH(WK_ERR_DTYPE, "randn_like()");
  ck_assert_ptr_null(wk_uniform_(xi, 0, 1));
  TU_FAILS_WITH(WK_ERR_DTYPE, "uniform_()");
  ck_assert_ptr_null(wk_normal_(xi, 0, 1));
  TU_FAILS_WITH(WK_ERR_DTYPE, "normal_()");
  ck_assert_ptr_null(wk_bernoulli(xi));
  TU_FAILS_WITH(WK_ERR_DTYPE, "bernoulli(): expected a floating point tensor");
  ck_assert_ptr_null(wk_randint(5, 5, WK_SHAPE(2), WK_OPTS(0)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "expected 'low' to be less than 'high', but got low=5 >= high=5");
  ck_assert_ptr_null(wk_randint(0, 300, WK_SHAPE(2), WK_OPTS(.dtype = WK_U8)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "high - 1 = 299 is out of bounds for u8");
  ck_assert_ptr_null(wk_randint(-1, 3, WK_SHAPE(2), WK_OPTS(.dtype = WK_U8)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "low = -1 is out of bounds for u8");
  ck_assert_ptr_null(wk_randint(0, (1 << 24) + 2, WK_SHAPE(2), WK_OPTS(.dtype = WK_F32)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "out of bounds for f32");
  ck_assert_ptr_null(wk_randperm(-1, WK_OPTS(0)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "n must be non-negative, got -1");
  ck_assert_ptr_null(wk_randperm(257, WK_OPTS(.dtype = WK_U8)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "n is too large for result tensor type: 'u8'");
  ck_assert_ptr_null(wk_randperm(2050, WK_OPTS(.dtype = WK_F16)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "n cannot be greater than 2049 for f16");
  ck_assert_ptr_null(wk_randperm(3, WK_OPTS(.dtype = WK_BOOL)));
  TU_FAILS_WITH(WK_ERR_DTYPE, "bool");
  wk_tensor *p = tu_tensor((const double[]){0.5, 1.5, 0.2}, WK_F32, WK_SHAPE(3));
  ck_assert_ptr_null(wk_bernoulli(p));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "probabilities to be in [0, 1], but got 1.5 at flat index 1");
  wk_tensor *pn = tu_tensor((const double[]){NAN}, WK_F64, WK_SHAPE(1));
  ck_assert_ptr_null(wk_bernoulli(pn));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "[0, 1]");
  ck_assert_ptr_null(wk_bernoulli_p(p, 1.5));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "expects p to be in [0, 1], but got p=1.5");
  ck_assert_ptr_null(wk_bernoulli_p(p, -0.1));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "p=-0.1");
  uint64_t ver = wk_tensor_version(p);
  ck_assert_ptr_null(wk_uniform_(p, 2, 1));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "from=2 > to=1");
  ck_assert_ptr_null(wk_uniform_(p, -1e308, 1e308));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "to-from");
  wk_tensor *pd = wk_zeros(WK_SHAPE(2), WK_OPTS(.dtype = WK_F64));
  ck_assert_ptr_null(wk_uniform_(pd, -1e308, 1e308));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "to-from");
  ck_assert_ptr_null(wk_uniform_(pd, NAN, 1));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "uniform_()");
  wk_release(pd);
  ck_assert_ptr_null(wk_normal_(p, 0, -1));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "std >= 0.0, but found std -1");
  ck_assert(wk_tensor_version(p) == ver);
  wk_tensor *s = wk_zeros(WK_SHAPE(1, 3), WK_OPTS(0));
  wk_tensor *ex = wk_expand(s, WK_SHAPE(4, 3));
  ck_assert_ptr_null(wk_uniform_(ex, 0, 1));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG,
                "more than one element of the written-to tensor refers to a single memory location");
  ck_assert_ptr_null(wk_normal_(ex, 0, 1));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "single memory location");
  ck_assert_ptr_null(wk_uniform_(NULL, 0, 1));
  TU_FAILS_WITH(WK_ERR_NULL, "NULL");
  ck_assert_ptr_null(wk_bernoulli(NULL));
  TU_FAILS_WITH(WK_ERR_NULL, "NULL");
  ck_assert_ptr_null(wk_rand_like(NULL));
  TU_FAILS_WITH(WK_ERR_NULL, "NULL");
  /* a failed call does not consume random numbers */
  uint64_t s0, o0, s1, o1;
  TU_OK(wk_rng_get_state((wk_device){WK_DEVICE_CPU, 0}, &s0, &o0));
  ck_assert_ptr_null(wk_randint(3, 1, WK_SHAPE(10), WK_OPTS(0)));
  wk_clear_error();
  TU_OK(wk_rng_get_state((wk_device){WK_DEVICE_CPU, 0}, &s1, &o1));
  ck_assert(s0 == s1 && o0 == o1);
  wk_release(ex);
  wk_release(s);
  wk_release(p);
  wk_release(pn);
  wk_release(xi);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("check_ops_factory");
  struct {
    const char *name;
    const TTest *tests[8];
  } cases[] = {
      {"constant", {test_factory_zeros_ones_values, test_factory_full_dtypes, test_factory_like,
                    test_factory_constant_errors}},
      {"range", {test_factory_arange_values, test_factory_arange_errors, test_factory_linspace, test_factory_eye}},
      {"random_values", {test_factory_philox_reference, test_factory_random_exact_values,
                         test_factory_random_reproducible, test_factory_random_thread_independent,
                         test_factory_inplace_strided}},
      {"random_dist", {test_factory_random_dtypes_shapes, test_factory_random_distributions,
                       test_factory_randperm_permutation, test_factory_random_errors}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    TCase *tc = tcase_create(cases[c].name);
    tcase_add_checked_fixture(tc, tu_setup, NULL);
    tcase_set_timeout(tc, 30);
    for (int i = 0; i < 8 && cases[c].tests[i]; i++) tcase_add_test(tc, cases[c].tests[i]);
    suite_add_tcase(s, tc);
  }
  return s;
}
TU_MAIN(make_suite)
