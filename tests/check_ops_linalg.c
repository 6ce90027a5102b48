/* check_ops_linalg: mm, bmm, addmm, dot (cpu kernels) and the core composites
 * matmul, linear, outer, against naive float64 / wrapping int64 references on
 * random shapes, transposed and strided operands, every dtype, and bad input. */
#include <stdint.h>

#include "testutil.h"

static const wk_dtype FLOATS[] = {WK_F32, WK_F64, WK_F16, WK_BF16};
static const wk_dtype ALL[] = {WK_F32, WK_F64, WK_F16, WK_BF16, WK_I8, WK_U8, WK_I16, WK_I32, WK_I64};
#define VALS(...) ((const double[]){__VA_ARGS__})
#define NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ---- helpers ------------------------------------------------------------------------ */
static bool is_float(wk_dtype dt) { return wk_dtype_is_floating(dt); }

/* Value range per dtype: integer products large enough to wrap in the narrow types. */
static void range_of(wk_dtype dt, double *lo, double *hi) {
  switch (dt) {
    case WK_I8: *lo = -20, *hi = 20; break;
    case WK_U8: *lo = 0, *hi = 30; break;
    case WK_I16: *lo = -200, *hi = 200; break;
    case WK_I32: *lo = -1000, *hi = 1000; break;
    case WK_I64: *lo = -1000000, *hi = 1000000; break;
    default: *lo = -1, *hi = 1; break;
  }
}

static wk_tensor *rnd(const int64_t *sz, int nd, wk_dtype dt, uint64_t seed) {
  double lo, hi;
  range_of(dt, &lo, &hi);
  return tu_rand(sz, nd, dt, lo, hi, seed);
}

/* Integer results wrap to the dtype, as PyTorch's do. */
static double wrap(wk_dtype dt, uint64_t v) {
  switch (dt) {
    case WK_I8: return (int8_t)v;
    case WK_U8: return (uint8_t)v;
    case WK_I16: return (int16_t)v;
    case WK_I32: return (int32_t)v;
    default: return (double)(int64_t)v;
  }
}

static double rtol_of(wk_dtype dt) {
  return dt == WK_F64 ? 1e-12 : dt == WK_F32 ? 1e-5 : dt == WK_F16 ? 1e-2 : dt == WK_BF16 ? 2e-2 : 0;
}
static double atol_of(wk_dtype dt, int64_t k) {
  return dt == WK_F64 ? 1e-12 * (double)(k + 1)
         : dt == WK_F32 ? 1e-6 * (double)(k + 1)
         : dt == WK_F16 ? 2e-3 * (double)(k + 1)
         : dt == WK_BF16 ? 1e-2 * (double)(k + 1)
                         : 0;
}

/* Reference C[bt] = alpha A[bt] @ B[bt] + beta S (S: [n, m] per batch, or NULL);
 * a, b row-major logical values; floats in double, integers wrapping. */
static double *ref_gemm(const double *a, const double *b, const double *s, int64_t batch, int64_t n, int64_t k,
                        int64_t m, double alpha, double beta, wk_dtype dt) {
  double *c = malloc(sizeof(double) * (size_t)(batch * n * m + 1));
  for (int64_t t = 0; t < batch; t++)
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < m; j++) {
        const double *ar = a + (t * n + i) * k, *bc = b + t * k * m + j;
        double sv = s ? s[(t * n + i) * m + j] : 0;
        if (is_float(dt)) {
          double acc = 0;
          for (int64_t p = 0; p < k; p++) acc += ar[p] * bc[p * m];
          c[(t * n + i) * m + j] = alpha * acc + (s && beta != 0 ? beta * sv : 0);
        } else {
          uint64_t acc = 0;
          for (int64_t p = 0; p < k; p++) acc += (uint64_t)(int64_t)ar[p] * (uint64_t)(int64_t)bc[p * m];
          acc = (uint64_t)(int64_t)alpha * acc + (s ? (uint64_t)(int64_t)beta * (uint64_t)(int64_t)sv : 0);
          c[(t * n + i) * m + j] = wrap(dt, acc);
        }
      }
  return c;
}

static void assert_shape_(wk_tensor *t, const int64_t *sz, int nd, int line) {
  ck_assert_msg(t != NULL, "line %d: result is NULL: %s", line, wk_last_error_message());
  ck_assert_msg(wk_tensor_dim(t) == nd, "line %d: result has %d dims, expected %d", line, wk_tensor_dim(t), nd);
  for (int d = 0; d < nd; d++)
    ck_assert_msg(wk_tensor_size(t, d) == sz[d], "line %d: size %d is %lld, expected %lld", line, d,
                  (long long)wk_tensor_size(t, d), (long long)sz[d]);
}
#define ASSERT_SHAPE(t, ...) assert_shape_(t, WK_SHAPE(__VA_ARGS__), __LINE__)

/* Operand layouts for a logical [r, c] matrix. */
typedef enum {
  L_CONTIG,     /* row-major */
  L_T,          /* transpose of a row-major [c, r]: strides (1, r) */
  L_NONCONTIG,  /* every other element of a wider buffer: strides (2c, 2) */
  L_ROWSLICE,   /* columns 1..c of a [r, c + 3] buffer: strides (c + 3, 1) */
  L_TSLICE,     /* transpose of a column slice: strides (1, r + 2) */
  L_EXPAND,     /* one row expanded: strides (0, 1) */
  L_COUNT
} layout;

/* Every other element of the last dimension of a larger buffer (no factory ops). */
static wk_tensor *noncontig(wk_tensor *t) {
  int nd = wk_tensor_dim(t);
  int64_t big[WK_MAX_DIMS];
  memcpy(big, wk_tensor_sizes(t), sizeof(int64_t) * (size_t)nd);
  big[nd - 1] *= 2;
  wk_tensor *b = wk_empty(big, nd, (wk_options){.dtype = wk_tensor_dtype(t)});
  wk_tensor *v = wk_slice(b, nd - 1, 0, big[nd - 1], 2);
  wk_tensor *ok = wk_copy_(v, t);
  ck_assert_ptr_nonnull(ok);
  wk_release(b);
  return v;
}

static wk_tensor *make_mat(int64_t r, int64_t c, wk_dtype dt, layout l, uint64_t seed) {
  wk_tensor *base, *v, *w;
  switch (l) {
    case L_T:
      base = rnd(WK_SHAPE(c, r), dt, seed);
      v = wk_t(base);
      break;
    case L_NONCONTIG:
      base = rnd(WK_SHAPE(r, c), dt, seed);
      v = noncontig(base);
      break;
    case L_ROWSLICE:
      base = rnd(WK_SHAPE(r, c + 3), dt, seed);
      v = wk_narrow(base, 1, 1, c);
      break;
    case L_TSLICE:
      base = rnd(WK_SHAPE(c, r + 2), dt, seed);
      w = wk_narrow(base, 1, 0, r);
      v = wk_t(w);
      wk_release(w);
      break;
    case L_EXPAND:
      base = rnd(WK_SHAPE(1, c), dt, seed);
      v = wk_expand(base, WK_SHAPE(r, c));
      break;
    default:
      return rnd(WK_SHAPE(r, c), dt, seed);
  }
  wk_release(base);
  ck_assert_msg(v != NULL, "layout %d: %s", (int)l, wk_last_error_message());
  return v;
}

/* Checks r == alpha a @ b + beta s (s may be NULL, broadcast to [n, m] here). */
static void check_product_(wk_tensor *r, wk_tensor *a, wk_tensor *b, wk_tensor *s, double alpha, double beta,
                           int line) {
  ck_assert_msg(r != NULL, "line %d: result is NULL: %s", line, wk_last_error_message());
  int nd = wk_tensor_dim(a);
  int64_t batch = nd == 3 ? wk_tensor_size(a, 0) : 1, n = wk_tensor_size(a, -2), k = wk_tensor_size(a, -1),
          m = wk_tensor_size(b, -1);
  wk_dtype dt = wk_tensor_dtype(a);
  ck_assert_msg(wk_tensor_dtype(r) == dt, "line %d: result dtype %s, expected %s", line,
                wk_dtype_name(wk_tensor_dtype(r)), wk_dtype_name(dt));
  double *av = tu_values(a), *bv = tu_values(b), *sv = NULL;
  if (s) {
    wk_tensor *e = wk_expand(s, WK_SHAPE(n, m));
    ck_assert_ptr_nonnull(e);
    sv = tu_values(e);
    wk_release(e);
  }
  double *ref = ref_gemm(av, bv, sv, batch, n, k, m, alpha, beta, dt);
  tu_assert_close_(r, ref, batch * n * m, rtol_of(dt), atol_of(dt, k), "product", line);
  free(av);
  free(bv);
  free(sv);
  free(ref);
}
#define CHECK_PRODUCT(r, a, b) check_product_(r, a, b, NULL, 1, 0, __LINE__)

/* ---- mm -------------------------------------------------------------------------------- */
START_TEST(test_linalg_mm_dtypes) {
  int64_t live = wk_live_tensors();
  for (int di = 0; di < NELEM(ALL); di++) {
    for (uint64_t seed = 1; seed <= 4; seed++) {
      uint64_t s = seed * 7 + (uint64_t)di;
      int64_t n = 1 + (int64_t)(s * 5 % 9), k = 1 + (int64_t)(s * 3 % 11), m = 1 + (int64_t)(s * 7 % 10);
      wk_tensor *a = rnd(WK_SHAPE(n, k), ALL[di], s), *b = rnd(WK_SHAPE(k, m), ALL[di], s + 100);
      wk_tensor *r = wk_mm(a, b);
      ASSERT_SHAPE(r, n, m);
      CHECK_PRODUCT(r, a, b);
      wk_release(a);
      wk_release(b);
      wk_release(r);
    }
  }
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* Every pair of operand layouts, including size-1 dimensions whose strides BLAS ignores. */
START_TEST(test_linalg_mm_layouts) {
  int64_t live = wk_live_tensors();
  static const wk_dtype dts[] = {WK_F32, WK_F64, WK_F16, WK_I64, WK_I16};
  static const int64_t shapes[][3] = {{5, 7, 6}, {1, 4, 3}, {4, 1, 5}, {3, 6, 1}, {1, 1, 1}, {17, 33, 9}};
  for (int di = 0; di < NELEM(dts); di++)
    for (int si = 0; si < NELEM(shapes); si++)
      for (int la = 0; la < L_COUNT; la++)
        for (int lb = 0; lb < L_COUNT; lb++) {
          int64_t n = shapes[si][0], k = shapes[si][1], m = shapes[si][2];
          uint64_t seed = (uint64_t)(di * 1000 + si * 100 + la * 10 + lb);
          wk_tensor *a = make_mat(n, k, dts[di], (layout)la, seed), *b = make_mat(k, m, dts[di], (layout)lb, seed + 1);
          wk_tensor *r = wk_mm(a, b);
          ASSERT_SHAPE(r, n, m);
          ck_assert(wk_tensor_is_contiguous(r));
          CHECK_PRODUCT(r, a, b);
          wk_release(a);
          wk_release(b);
          wk_release(r);
        }
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_linalg_mm_zero_size) {
  int64_t live = wk_live_tensors();
  for (int di = 0; di < NELEM(ALL); di++) {
    wk_dtype dt = ALL[di];
    wk_tensor *a = rnd(WK_SHAPE(0, 3), dt, 1), *b = rnd(WK_SHAPE(3, 4), dt, 2);
    wk_tensor *r = wk_mm(a, b);
    ASSERT_SHAPE(r, 0, 4);
    wk_release(a);
    wk_release(b);
    wk_release(r);
    /* k == 0: an empty sum is zero */
    a = rnd(WK_SHAPE(2, 0), dt, 3);
    b = rnd(WK_SHAPE(0, 3), dt, 4);
    r = wk_mm(a, b);
    ASSERT_SHAPE(r, 2, 3);
    TU_EQ_VALS(r, 0, 0, 0, 0, 0, 0);
    wk_release(a);
    wk_release(b);
    wk_release(r);
    a = rnd(WK_SHAPE(2, 3), dt, 5);
    b = rnd(WK_SHAPE(3, 0), dt, 6);
    r = wk_mm(a, b);
    ASSERT_SHAPE(r, 2, 0);
    wk_release(a);
    wk_release(b);
    wk_release(r);
  }
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* Large enough for the parallel paths; results are bitwise the same for any
 * thread count. */
START_TEST(test_linalg_mm_large_threads) {
  int64_t live = wk_live_tensors();
  int threads = wk_num_threads();
  static const wk_dtype dts[] = {WK_F32, WK_F64, WK_BF16, WK_I32, WK_I64};
  for (int di = 0; di < NELEM(dts); di++) {
    wk_dtype dt = dts[di];
    wk_tensor *a = make_mat(67, 130, dt, L_CONTIG, 11), *b = make_mat(130, 301, dt, L_T, 12);
    TU_OK(wk_set_num_threads(1));
    wk_tensor *r1 = wk_mm(a, b);
    TU_OK(wk_set_num_threads(4));
    wk_tensor *r4 = wk_mm(a, b);
    CHECK_PRODUCT(r1, a, b);
    ck_assert_ptr_nonnull(r4);
    ck_assert(memcmp(wk_tensor_data(r1), wk_tensor_data(r4), (size_t)(67 * 301) * wk_dtype_size(dt)) == 0);
    wk_release(a);
    wk_release(b);
    wk_release(r1);
    wk_release(r4);
  }
  TU_OK(wk_set_num_threads(threads));
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_linalg_mm_literal) {
  int64_t live = wk_live_tensors();
  wk_tensor *a = tu_tensor(VALS(1, 2, 3, 4, 5, 6), WK_F32, WK_SHAPE(2, 3)), *b = tu_tensor(VALS(7, 8, 9, 10, 11, 12), WK_F32, WK_SHAPE(3, 2));
  wk_tensor *r = wk_mm(a, b);
  ASSERT_SHAPE(r, 2, 2);
  TU_EQ_VALS(r, 58, 64, 139, 154);
  wk_release(r);
  /* int8 wraps like PyTorch: 100 * 2 + 100 * 1 = 300 -> 44 */
  wk_tensor *x = tu_tensor(VALS(100, 100), WK_I8, WK_SHAPE(1, 2)), *y = tu_tensor(VALS(2, 1), WK_I8, WK_SHAPE(2, 1));
  r = wk_mm(x, y);
  ck_assert_int_eq(wk_tensor_dtype(r), WK_I8);
  TU_EQ_VALS(r, 44);
  wk_release(r);
  wk_release(x);
  wk_release(y);
  wk_release(a);
  wk_release(b);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_linalg_mm_errors) {
  int64_t live = wk_live_tensors();
  wk_tensor *a = rnd(WK_SHAPE(2, 3), WK_F32, 1), *b = rnd(WK_SHAPE(4, 5), WK_F32, 2);
  wk_tensor *c = rnd(WK_SHAPE(3, 5), WK_F64, 3), *v = rnd(WK_SHAPE(3), WK_F32, 4);
  wk_tensor *bo = tu_rand(WK_SHAPE(3, 3), WK_BOOL, 0, 1, 5);
  ck_assert_ptr_null(wk_mm(a, b));
  TU_FAILS_WITH(WK_ERR_SHAPE, "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
  ck_assert_ptr_null(wk_mm(a, c));
  TU_FAILS_WITH(WK_ERR_DTYPE, "expected m1 and m2 to have the same dtype, but got: float != double");
  ck_assert_ptr_null(wk_mm(a, v));
  TU_FAILS_WITH(WK_ERR_SHAPE, "mat2 must be a matrix");
  ck_assert_ptr_null(wk_mm(v, a));
  TU_FAILS_WITH(WK_ERR_SHAPE, "self must be a matrix");
  ck_assert_ptr_null(wk_mm(bo, bo));
  TU_FAILS_WITH(WK_ERR_UNSUPPORTED, "not implemented for 'Bool'");
  ck_assert_ptr_null(wk_mm(NULL, a));
  TU_FAILS_WITH(WK_ERR_NULL, "is NULL");
  ck_assert_ptr_null(wk_mm(a, NULL));
  TU_FAILS_WITH(WK_ERR_NULL, "is NULL");
  wk_release(a);
  wk_release(b);
  wk_release(c);
  wk_release(v);
  wk_release(bo);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- bmm ------------------------------------------------------------------------------- */
/* Batch layouts: contiguous, transposed matrices, batch dim not outermost,
 * expanded batch (stride 0), non-contiguous. */
static wk_tensor *make_batch(int64_t bt, int64_t r, int64_t c, wk_dtype dt, int l, uint64_t seed) {
  wk_tensor *base, *v;
  switch (l) {
    case 1:
      base = rnd(WK_SHAPE(bt, c, r), dt, seed);
      v = wk_transpose(base, 1, 2);
      break;
    case 2:
      base = rnd(WK_SHAPE(r, bt, c), dt, seed);
      v = wk_permute(base, WK_SHAPE(1, 0, 2));
      break;
    case 3:
      base = rnd(WK_SHAPE(1, r, c), dt, seed);
      v = wk_expand(base, WK_SHAPE(bt, r, c));
      break;
    case 4:
      base = rnd(WK_SHAPE(bt, r, c), dt, seed);
      v = noncontig(base);
      break;
    default:
      return rnd(WK_SHAPE(bt, r, c), dt, seed);
  }
  wk_release(base);
  ck_assert_ptr_nonnull(v);
  return v;
}

START_TEST(test_linalg_bmm) {
  int64_t live = wk_live_tensors();
  for (int di = 0; di < NELEM(ALL); di++)
    for (int la = 0; la < 5; la++)
      for (int lb = 0; lb < 5; lb++) {
        uint64_t s = (uint64_t)(di * 100 + la * 10 + lb);
        int64_t bt = 1 + (int64_t)(s % 4), n = 1 + (int64_t)(s * 3 % 6), k = 1 + (int64_t)(s * 5 % 7),
                m = 1 + (int64_t)(s * 7 % 5);
        wk_tensor *a = make_batch(bt, n, k, ALL[di], la, s), *b = make_batch(bt, k, m, ALL[di], lb, s + 1);
        wk_tensor *r = wk_bmm(a, b);
        ASSERT_SHAPE(r, bt, n, m);
        CHECK_PRODUCT(r, a, b);
        wk_release(a);
        wk_release(b);
        wk_release(r);
      }
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_linalg_bmm_zero_size) {
  int64_t live = wk_live_tensors();
  static const int64_t cases[][4] = {{0, 2, 3, 4}, {2, 0, 3, 4}, {2, 3, 0, 4}, {2, 3, 4, 0}};
  for (int di = 0; di < NELEM(ALL); di++)
    for (int ci = 0; ci < 4; ci++) {
      const int64_t *c = cases[ci];
      wk_tensor *a = rnd(WK_SHAPE(c[0], c[1], c[2]), ALL[di], 1), *b = rnd(WK_SHAPE(c[0], c[2], c[3]), ALL[di], 2);
      wk_tensor *r = wk_bmm(a, b);
      ASSERT_SHAPE(r, c[0], c[1], c[3]);
      CHECK_PRODUCT(r, a, b); /* k == 0 gives zeros */
      wk_release(a);
      wk_release(b);
      wk_release(r);
    }
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_linalg_bmm_errors) {
  int64_t live = wk_live_tensors();
  wk_tensor *a = rnd(WK_SHAPE(2, 3, 4), WK_F32, 1), *b = rnd(WK_SHAPE(3, 4, 5), WK_F32, 2);
  wk_tensor *c = rnd(WK_SHAPE(2, 5, 5), WK_F32, 3), *d = rnd(WK_SHAPE(2, 4, 5), WK_F64, 4);
  wk_tensor *m2 = rnd(WK_SHAPE(4, 5), WK_F32, 5);
  ck_assert_ptr_null(wk_bmm(a, b));
  TU_FAILS_WITH(WK_ERR_SHAPE, "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [3, 4].");
  ck_assert_ptr_null(wk_bmm(a, c));
  TU_FAILS_WITH(WK_ERR_SHAPE, "[2, 4] but got: [2, 5]");
  ck_assert_ptr_null(wk_bmm(a, d));
  TU_FAILS_WITH(WK_ERR_DTYPE, "same dtype, but got: float != double");
  ck_assert_ptr_null(wk_bmm(a, m2));
  TU_FAILS_WITH(WK_ERR_SHAPE, "batch2 must be a 3D tensor");
  ck_assert_ptr_null(wk_bmm(m2, a));
  TU_FAILS_WITH(WK_ERR_SHAPE, "batch1 must be a 3D tensor");
  ck_assert_ptr_null(wk_bmm(NULL, a));
  TU_FAILS_WITH(WK_ERR_NULL, "is NULL");
  wk_release(a);
  wk_release(b);
  wk_release(c);
  wk_release(d);
  wk_release(m2);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- addmm ----------------------------------------------------------------------------- */
START_TEST(test_linalg_addmm) {
  int64_t live = wk_live_tensors();
  static const double coef[][2] = {{1, 1}, {0.5, 2}, {-1, 0.25}, {2, 0}, {0, 3}};
  for (int di = 0; di < NELEM(ALL); di++)
    for (int ci = 0; ci < NELEM(coef); ci++)
      for (int shp = 0; shp < 5; shp++) {
        wk_dtype dt = ALL[di];
        double beta = coef[ci][0], alpha = coef[ci][1];
        if (!is_float(dt)) { /* integer tensors take integral scalars */
          beta = (double)(int64_t)(beta * 2);
          alpha = (double)(int64_t)(alpha * 2);
        }
        uint64_t s = (uint64_t)(di * 100 + ci * 10 + shp);
        int64_t n = 1 + (int64_t)(s % 5), k = 1 + (int64_t)(s * 3 % 7), m = 1 + (int64_t)(s * 5 % 6);
        wk_tensor *self;
        switch (shp) { /* self broadcasts to [n, m] */
          case 0: self = rnd(WK_SHAPE(n, m), dt, s); break;
          case 1: self = rnd(WK_SHAPE(m), dt, s); break;
          case 2: self = rnd(WK_SHAPE(n, 1), dt, s); break;
          case 3: self = rnd(NULL, 0, dt, s); break;
          default: self = make_mat(n, m, dt, L_T, s); break;
        }
        wk_tensor *a = make_mat(n, k, dt, (layout)(s % L_COUNT), s + 1), *b = make_mat(k, m, dt, (layout)(s / 3 % L_COUNT), s + 2);
        wk_tensor *r = wk_addmm(self, a, b, beta, alpha);
        ASSERT_SHAPE(r, n, m);
        check_product_(r, a, b, self, alpha, beta, __LINE__);
        wk_release(self);
        wk_release(a);
        wk_release(b);
        wk_release(r);
      }
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* beta == 0 ignores self, NaN and inf included; k == 0 leaves beta * self. */
START_TEST(test_linalg_addmm_beta_zero_and_empty) {
  int64_t live = wk_live_tensors();
  for (int fi = 0; fi < NELEM(FLOATS); fi++) {
    wk_dtype dt = FLOATS[fi];
    wk_tensor *self = tu_tensor((const double[]){NAN, INFINITY, -INFINITY, NAN}, dt, WK_SHAPE(2, 2));
    wk_tensor *a = tu_tensor(VALS(1, 2, 3, 4), dt, WK_SHAPE(2, 2)), *b = tu_tensor(VALS(1, 0, 0, 1), dt, WK_SHAPE(2, 2));
    wk_tensor *r = wk_addmm(self, a, b, 0.0, 2.0);
    TU_EQ_VALS(r, 2, 4, 6, 8);
    wk_release(r);
    wk_release(self);
    self = tu_tensor(VALS(1, 2, 3, 4, 5, 6), dt, WK_SHAPE(2, 3));
    wk_tensor *e1 = rnd(WK_SHAPE(2, 0), dt, 1), *e2 = rnd(WK_SHAPE(0, 3), dt, 2);
    r = wk_addmm(self, e1, e2, 0.5, 1.0);
    ASSERT_SHAPE(r, 2, 3);
    TU_EQ_VALS(r, 0.5, 1, 1.5, 2, 2.5, 3);
    wk_release(r);
    r = wk_addmm(self, e1, e2, 0.0, 1.0);
    TU_EQ_VALS(r, 0, 0, 0, 0, 0, 0);
    wk_release(r);
    wk_tensor *e3 = rnd(WK_SHAPE(0, 2), dt, 3), *s0 = rnd(WK_SHAPE(3), dt, 4);
    r = wk_addmm(s0, e3, a, 1.0, 1.0); /* [0, 2] @ [2, 2] with self [3]: not broadcastable... */
    ck_assert_ptr_null(r);
    TU_FAILS_WITH(WK_ERR_SHAPE, "cannot be broadcast to the result shape [0, 2]");
    wk_tensor *s2 = rnd(WK_SHAPE(2), dt, 5);
    r = wk_addmm(s2, e3, a, 1.0, 1.0);
    ASSERT_SHAPE(r, 0, 2);
    wk_release(r);
    wk_release(self);
    wk_release(e1);
    wk_release(e2);
    wk_release(e3);
    wk_release(s0);
    wk_release(s2);
    wk_release(a);
    wk_release(b);
  }
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_linalg_addmm_errors) {
  int64_t live = wk_live_tensors();
  wk_tensor *a = rnd(WK_SHAPE(2, 3), WK_F32, 1), *b = rnd(WK_SHAPE(3, 4), WK_F32, 2);
  wk_tensor *bad = rnd(WK_SHAPE(3, 4), WK_F32, 3), *s3 = rnd(WK_SHAPE(1, 2, 4), WK_F32, 4);
  wk_tensor *sd = rnd(WK_SHAPE(2, 4), WK_F64, 5), *bd = rnd(WK_SHAPE(3, 4), WK_F64, 6);
  ck_assert_ptr_null(wk_addmm(bad, a, b, 1, 1));
  TU_FAILS_WITH(WK_ERR_SHAPE, "self of shape [3, 4] cannot be broadcast to the result shape [2, 4]");
  ck_assert_ptr_null(wk_addmm(s3, a, b, 1, 1));
  TU_FAILS_WITH(WK_ERR_SHAPE, "self of shape [1, 2, 4]");
  ck_assert_ptr_null(wk_addmm(sd, a, b, 1, 1));
  TU_FAILS_WITH(WK_ERR_DTYPE, "self and mat2 must have the same dtype, but got Double and Float");
  ck_assert_ptr_null(wk_addmm(sd, a, bd, 1, 1));
  TU_FAILS_WITH(WK_ERR_DTYPE, "expected m1 and m2 to have the same dtype, but got: float != double");
  ck_assert_ptr_null(wk_addmm(sd, a, a, 1, 1));
  TU_FAILS_WITH(WK_ERR_SHAPE, "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)");
  ck_assert_ptr_null(wk_addmm(NULL, a, b, 1, 1));
  TU_FAILS_WITH(WK_ERR_NULL, "is NULL");
  wk_release(a);
  wk_release(b);
  wk_release(bad);
  wk_release(s3);
  wk_release(sd);
  wk_release(bd);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- dot ------------------------------------------------------------------------------- */
static void check_dot_(wk_tensor *r, wk_tensor *a, wk_tensor *b, int line) {
  ck_assert_msg(r != NULL, "line %d: dot is NULL: %s", line, wk_last_error_message());
  ck_assert_int_eq(wk_tensor_dim(r), 0);
  wk_dtype dt = wk_tensor_dtype(a);
  ck_assert_int_eq(wk_tensor_dtype(r), dt);
  int64_t n = wk_tensor_numel(a);
  double *av = tu_values(a), *bv = tu_values(b);
  /* a [1, n] @ b [n, 1] */
  double *ref = ref_gemm(av, bv, NULL, 1, 1, n, 1, 1, 0, dt);
  tu_assert_close_(r, ref, 1, rtol_of(dt), atol_of(dt, n) * (n > 1000 ? 10 : 1), "dot", line);
  free(av);
  free(bv);
  free(ref);
}
#define CHECK_DOT(r, a, b) check_dot_(r, a, b, __LINE__)

static wk_tensor *make_vec(int64_t n, wk_dtype dt, int l, uint64_t seed) {
  wk_tensor *base, *v;
  switch (l) {
    case 1:
      base = rnd(WK_SHAPE(n), dt, seed);
      v = noncontig(base);
      break;
    case 2: /* a column of a matrix */
      base = rnd(WK_SHAPE(n, 3), dt, seed);
      v = wk_select(base, 1, 2);
      break;
    case 3:
      base = rnd(WK_SHAPE(1), dt, seed);
      v = wk_expand(base, WK_SHAPE(n));
      break;
    default:
      return rnd(WK_SHAPE(n), dt, seed);
  }
  wk_release(base);
  ck_assert_ptr_nonnull(v);
  return v;
}

START_TEST(test_linalg_dot) {
  int64_t live = wk_live_tensors();
  static const int64_t lens[] = {0, 1, 2, 7, 33, 100};
  for (int di = 0; di < NELEM(ALL); di++)
    for (int li = 0; li < NELEM(lens); li++)
      for (int la = 0; la < 4; la++) {
        uint64_t s = (uint64_t)(di * 100 + li * 10 + la);
        wk_tensor *a = make_vec(lens[li], ALL[di], la, s), *b = make_vec(lens[li], ALL[di], (la + li) % 4, s + 1);
        wk_tensor *r = wk_dot(a, b);
        CHECK_DOT(r, a, b);
        wk_release(a);
        wk_release(b);
        wk_release(r);
      }
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_linalg_dot_large_threads) {
  int64_t live = wk_live_tensors();
  int threads = wk_num_threads();
  static const wk_dtype dts[] = {WK_F32, WK_F64, WK_F16, WK_I64, WK_I8};
  for (int di = 0; di < NELEM(dts); di++) {
    wk_dtype dt = dts[di];
    wk_tensor *a = make_vec(100003, dt, 0, 7), *b = make_vec(100003, dt, 1, 8);
    TU_OK(wk_set_num_threads(1));
    wk_tensor *r1 = wk_dot(a, b);
    TU_OK(wk_set_num_threads(3));
    wk_tensor *r3 = wk_dot(a, b);
    CHECK_DOT(r1, a, b);
    ck_assert_ptr_nonnull(r3);
    ck_assert(memcmp(wk_tensor_data(r1), wk_tensor_data(r3), wk_dtype_size(dt)) == 0);
    wk_release(a);
    wk_release(b);
    wk_release(r1);
    wk_release(r3);
  }
  TU_OK(wk_set_num_threads(threads));
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_linalg_dot_errors) {
  int64_t live = wk_live_tensors();
  wk_tensor *a = rnd(WK_SHAPE(3), WK_F32, 1), *b = rnd(WK_SHAPE(4), WK_F32, 2);
  wk_tensor *c = rnd(WK_SHAPE(3), WK_F64, 3), *m = rnd(WK_SHAPE(3, 1), WK_F32, 4);
  wk_tensor *bo = tu_rand(WK_SHAPE(3), WK_BOOL, 0, 1, 5), *z = rnd(NULL, 0, WK_F32, 6);
  ck_assert_ptr_null(wk_dot(a, b));
  TU_FAILS_WITH(WK_ERR_SHAPE, "inconsistent tensor size, expected tensor [3] and src [4] to have the same number of "
                              "elements, but got 3 and 4 elements respectively");
  ck_assert_ptr_null(wk_dot(a, c));
  TU_FAILS_WITH(WK_ERR_DTYPE, "expected both vectors to have same dtype, but found Float and Double");
  ck_assert_ptr_null(wk_dot(m, a));
  TU_FAILS_WITH(WK_ERR_SHAPE, "1D tensors expected, but got 2D and 1D tensors");
  ck_assert_ptr_null(wk_dot(z, z));
  TU_FAILS_WITH(WK_ERR_SHAPE, "1D tensors expected, but got 0D and 0D tensors");
  ck_assert_ptr_null(wk_dot(bo, bo));
  TU_FAILS_WITH(WK_ERR_UNSUPPORTED, "\"dot\" not implemented for 'Bool'");
  ck_assert_ptr_null(wk_dot(a, NULL));
  TU_FAILS_WITH(WK_ERR_NULL, "is NULL");
  wk_release(a);
  wk_release(b);
  wk_release(c);
  wk_release(m);
  wk_release(bo);
  wk_release(z);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- matmul (core composite) ---------------------------------------------------------------- */
/* PyTorch's matmul rule in plain loops: 1D operands get a unit dim (removed
 * again from the result), batch dims broadcast. Returns the values and the shape. */
static double *ref_matmul(wk_tensor *a, wk_tensor *b, int64_t *osz, int *ond) {
  int da = wk_tensor_dim(a), db = wk_tensor_dim(b);
  const int64_t *sa = wk_tensor_sizes(a), *sb = wk_tensor_sizes(b);
  int64_t n = da == 1 ? 1 : sa[da - 2], k = sa[da - 1], m = db == 1 ? 1 : sb[db - 1];
  int na = da > 2 ? da - 2 : 0, nb = db > 2 ? db - 2 : 0, nbat = na > nb ? na : nb;
  int64_t bat[WK_MAX_DIMS], ba[WK_MAX_DIMS], bb[WK_MAX_DIMS], nbt = 1;
  for (int i = 0; i < nbat; i++) {
    int ia = i - (nbat - na), ib = i - (nbat - nb);
    ba[i] = ia >= 0 ? sa[ia] : 1;
    bb[i] = ib >= 0 ? sb[ib] : 1;
    bat[i] = ba[i] == 1 ? bb[i] : ba[i];
    nbt *= bat[i];
  }
  double *av = tu_values(a), *bv = tu_values(b);
  double *out = malloc(sizeof(double) * (size_t)(nbt * n * m + 1));
  wk_dtype dt = wk_tensor_dtype(a);
  for (int64_t t = 0; t < nbt; t++) {
    int64_t rem = t, oa = 0, ob = 0, mula = 1, mulb = 1;
    for (int i = nbat - 1; i >= 0; i--) {
      int64_t idx = rem % bat[i];
      rem /= bat[i];
      oa += (ba[i] == 1 ? 0 : idx) * mula;
      ob += (bb[i] == 1 ? 0 : idx) * mulb;
      mula *= ba[i];
      mulb *= bb[i];
    }
    double *c = ref_gemm(av + oa * n * k, bv + ob * k * m, NULL, 1, n, k, m, 1, 0, dt);
    memcpy(out + t * n * m, c, sizeof(double) * (size_t)(n * m));
    free(c);
  }
  int on = 0;
  for (int i = 0; i < nbat; i++) osz[on++] = bat[i];
  if (da > 1) osz[on++] = n;
  if (db > 1) osz[on++] = m;
  *ond = on;
  free(av);
  free(bv);
  return out;
}

START_TEST(test_linalg_matmul_ranks) {
  int64_t live = wk_live_tensors();
  static const struct {
    int na, nb;
    int64_t a[4], b[4];
  } cases[] = {
      {1, 1, {5}, {5}},                   /* dot */
      {2, 2, {3, 4}, {4, 2}},             /* mm */
      {1, 2, {4}, {4, 3}},                /* vector-matrix */
      {2, 1, {3, 4}, {4}},                /* matrix-vector */
      {4, 3, {2, 1, 3, 4}, {5, 4, 2}},    /* broadcast batch */
      {3, 2, {2, 3, 4}, {4, 5}},          /* batched @ matrix (one folded mm) */
      {3, 1, {2, 3, 4}, {4}},             /* batched @ vector */
      {1, 3, {4}, {2, 4, 3}},             /* vector @ batched */
      {2, 3, {3, 4}, {2, 4, 5}},          /* matrix @ batched */
      {3, 3, {2, 3, 4}, {2, 4, 5}},       /* bmm */
      {3, 3, {1, 3, 4}, {6, 4, 2}},       /* expanded batch */
      {4, 4, {2, 1, 3, 0}, {1, 3, 0, 2}}, /* k == 0 */
      {3, 2, {0, 3, 4}, {4, 2}},          /* empty batch */
  };
  static const wk_dtype dts[] = {WK_F32, WK_F64, WK_F16, WK_BF16, WK_I64, WK_I32};
  for (int di = 0; di < NELEM(dts); di++)
    for (int ci = 0; ci < NELEM(cases); ci++)
      for (int nc = 0; nc < 2; nc++) {
        wk_dtype dt = dts[di];
        uint64_t s = (uint64_t)(di * 100 + ci * 2 + nc);
        wk_tensor *a = rnd(cases[ci].a, cases[ci].na, dt, s), *b = rnd(cases[ci].b, cases[ci].nb, dt, s + 1);
        if (nc) { /* strided operands */
          wk_tensor *x = noncontig(a), *y = noncontig(b);
          wk_release(a);
          wk_release(b);
          a = x;
          b = y;
        }
        wk_tensor *r = wk_matmul(a, b);
        int64_t osz[WK_MAX_DIMS];
        int on;
        double *ref = ref_matmul(a, b, osz, &on);
        assert_shape_(r, osz, on, __LINE__);
        ck_assert_int_eq(wk_tensor_dtype(r), dt);
        int64_t k = cases[ci].a[cases[ci].na - 1];
        tu_assert_close_(r, ref, wk_tensor_numel(r), rtol_of(dt), atol_of(dt, k), "matmul", __LINE__);
        free(ref);
        wk_release(a);
        wk_release(b);
        wk_release(r);
      }
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_linalg_matmul_errors) {
  int64_t live = wk_live_tensors();
  wk_tensor *z = rnd(NULL, 0, WK_F32, 1), *v = rnd(WK_SHAPE(3), WK_F32, 2), *m = rnd(WK_SHAPE(4, 5), WK_F32, 3);
  wk_tensor *b1 = rnd(WK_SHAPE(2, 3, 4), WK_F32, 4), *b2 = rnd(WK_SHAPE(3, 4, 5), WK_F32, 5);
  wk_tensor *md = rnd(WK_SHAPE(3, 5), WK_F64, 6);
  ck_assert_ptr_null(wk_matmul(z, v));
  TU_FAILS_WITH(WK_ERR_SHAPE, "both arguments need at least 1 dimension");
  ck_assert_ptr_null(wk_matmul(v, m));
  TU_FAILS_WITH(WK_ERR_SHAPE, "cannot be multiplied");
  ck_assert_ptr_null(wk_matmul(b1, b2));
  TU_FAILS_WITH(WK_ERR_SHAPE, "not broadcastable");
  ck_assert_ptr_null(wk_matmul(v, md));
  TU_FAILS_WITH(WK_ERR_DTYPE, "same dtype");
  ck_assert_ptr_null(wk_matmul(NULL, v));
  TU_FAILS_WITH(WK_ERR_NULL, "is NULL");
  wk_release(z);
  wk_release(v);
  wk_release(m);
  wk_release(b1);
  wk_release(b2);
  wk_release(md);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- linear, outer (core composites) ------------------------------------------------------ */
START_TEST(test_linalg_linear) {
  int64_t live = wk_live_tensors();
  static const int64_t in_shapes[][3] = {{4, 0, 0}, {3, 4, 0}, {2, 3, 4}, {0, 4, 0}};
  static const int in_nd[] = {1, 2, 3, 2};
  for (int fi = 0; fi < NELEM(FLOATS); fi++)
    for (int si = 0; si < 4; si++)
      for (int wb = 0; wb < 3; wb++) { /* no bias, bias, transposed weight + bias */
        wk_dtype dt = FLOATS[fi];
        uint64_t s = (uint64_t)(fi * 100 + si * 10 + wb);
        int nd = in_nd[si];
        wk_tensor *x = rnd(in_shapes[si], nd, dt, s);
        wk_tensor *w = wb == 2 ? make_mat(5, 4, dt, L_T, s + 1) : rnd(WK_SHAPE(5, 4), dt, s + 1);
        wk_tensor *bias = wb ? rnd(WK_SHAPE(5), dt, s + 2) : NULL;
        wk_tensor *r = wk_linear(x, w, bias);
        int64_t osz[3];
        memcpy(osz, in_shapes[si], sizeof osz);
        osz[nd - 1] = 5;
        assert_shape_(r, osz, nd, __LINE__);
        int64_t rows = wk_tensor_numel(x) / 4;
        double *xv = tu_values(x), *wv = tu_values(w), *bv = bias ? tu_values(bias) : NULL;
        double *ref = malloc(sizeof(double) * (size_t)(rows * 5 + 1));
        for (int64_t i = 0; i < rows; i++)
          for (int o = 0; o < 5; o++) {
            double acc = bv ? bv[o] : 0;
            for (int p = 0; p < 4; p++) acc += xv[i * 4 + p] * wv[o * 4 + p];
            ref[i * 5 + o] = acc;
          }
        tu_assert_close_(r, ref, rows * 5, rtol_of(dt), atol_of(dt, 5), "linear", __LINE__);
        free(xv);
        free(wv);
        free(bv);
        free(ref);
        wk_release(x);
        wk_release(w);
        wk_release(bias);
        wk_release(r);
      }
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_linalg_linear_errors) {
  int64_t live = wk_live_tensors();
  wk_tensor *x = rnd(WK_SHAPE(2, 3), WK_F32, 1), *w = rnd(WK_SHAPE(5, 4), WK_F32, 2);
  wk_tensor *w3 = rnd(WK_SHAPE(1, 5, 3), WK_F32, 3), *wd = rnd(WK_SHAPE(5, 3), WK_F64, 4);
  ck_assert_ptr_null(wk_linear(x, w, NULL));
  TU_FAILS_WITH(WK_ERR_SHAPE, "cannot be multiplied (2x3 and 4x5)");
  ck_assert_ptr_null(wk_linear(x, w3, NULL));
  TU_FAILS_WITH(WK_ERR_SHAPE, "weight must be 1D or 2D");
  ck_assert_ptr_null(wk_linear(x, wd, NULL));
  TU_FAILS_WITH(WK_ERR_DTYPE, "same dtype");
  wk_release(x);
  wk_release(w);
  wk_release(w3);
  wk_release(wd);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_linalg_outer) {
  int64_t live = wk_live_tensors();
  static const int64_t lens[][2] = {{3, 4}, {1, 5}, {0, 3}, {4, 0}};
  for (int di = 0; di < NELEM(ALL); di++)
    for (int li = 0; li < 4; li++) {
      uint64_t s = (uint64_t)(di * 10 + li);
      int64_t n = lens[li][0], m = lens[li][1];
      wk_tensor *a = make_vec(n, ALL[di], (int)(s % 4), s), *b = make_vec(m, ALL[di], (int)((s + 1) % 4), s + 1);
      wk_tensor *r = wk_outer(a, b);
      ASSERT_SHAPE(r, n, m);
      ck_assert_int_eq(wk_tensor_dtype(r), ALL[di]);
      double *av = tu_values(a), *bv = tu_values(b);
      double *ref = ref_gemm(av, bv, NULL, 1, n, 1, m, 1, 0, ALL[di]);
      tu_assert_close_(r, ref, n * m, rtol_of(ALL[di]), atol_of(ALL[di], 1), "outer", __LINE__);
      free(av);
      free(bv);
      free(ref);
      wk_release(a);
      wk_release(b);
      wk_release(r);
    }
  wk_tensor *m2 = rnd(WK_SHAPE(2, 2), WK_F32, 1);
  ck_assert_ptr_null(wk_outer(m2, m2));
  TU_FAILS_WITH(WK_ERR_SHAPE, "expects 1D tensors");
  wk_release(m2);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("check_ops_linalg");
  struct {
    const char *name;
    const TTest *tests[6];
  } groups[] = {
      {"mm",
       {test_linalg_mm_dtypes, test_linalg_mm_layouts, test_linalg_mm_zero_size, test_linalg_mm_large_threads,
        test_linalg_mm_literal, test_linalg_mm_errors}},
      {"bmm", {test_linalg_bmm, test_linalg_bmm_zero_size, test_linalg_bmm_errors}},
      {"addmm", {test_linalg_addmm, test_linalg_addmm_beta_zero_and_empty, test_linalg_addmm_errors}},
      {"dot", {test_linalg_dot, test_linalg_dot_large_threads, test_linalg_dot_errors}},
      {"matmul", {test_linalg_matmul_ranks, test_linalg_matmul_errors}},
      {"linear_outer", {test_linalg_linear, test_linalg_linear_errors, test_linalg_outer}},
  };
  for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
    TCase *tc = tcase_create(groups[g].name);
    tcase_add_checked_fixture(tc, tu_setup, NULL);
    for (int i = 0; i < 6 && groups[g].tests[i]; i++) tcase_add_test(tc, groups[g].tests[i]);
    suite_add_tcase(s, tc);
  }
  return s;
}
TU_MAIN(make_suite)
