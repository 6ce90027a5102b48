/* check_ops_nn: the cpu plugin's neural-network kernels (softmax, norms,
 * dropout, embedding, pad, losses) against float64 references computed here
 * with naive loops, on random shapes, strided views, every option and dtype,
 * plus running-stat updates, RNG statistics and reproducibility, and errors. */
#include "testutil.h"

/* ---- helpers ----------------------------------------------------------------------------- */
#define LEAK_START int64_t live0_ = wk_live_tensors()
#define LEAK_END ck_assert_int_eq(wk_live_tensors(), live0_)

static const wk_dtype FLOATS[] = {WK_F32, WK_F64, WK_F16, WK_BF16};
#define NFLOATS 4

static double tol(wk_dtype dt) {
  switch (dt) {
    case WK_F64: return 1e-12;
    case WK_F32: return 1e-5;
    case WK_F16: return 1e-2;
    case WK_BF16: return 2e-2;
    default: return 0;
  }
}

/* Calls op and returns its first result (the others, if any, in o1/o2). */
static wk_tensor *call(const char *op, const wk_value *a, int n, wk_tensor **o1, wk_tensor **o2) {
  wk_value o[WK_MAX_OUTS];
  if (o1) *o1 = NULL;
  if (o2) *o2 = NULL;
  if (wk_call(op, a, n, o) != WK_OK) return NULL;
  wk_op *h = wk_op_find(op);
  int no = wk_op_num_outs(h);
  if (no > 1) {
    if (o1) *o1 = o[1].u.t;
    else wk_release(o[1].u.t);
  }
  if (no > 2) {
    if (o2) *o2 = o[2].u.t;
    else wk_release(o[2].u.t);
  }
  return o[0].u.t;
}

/* A strided copy of t: values in every other element of the last dimension. */
static wk_tensor *nc(wk_tensor *t) {
  int nd = wk_tensor_dim(t);
  if (nd == 0) return wk_retain(t);
  int64_t big[WK_MAX_DIMS];
  memcpy(big, wk_tensor_sizes(t), sizeof(int64_t) * (size_t)nd);
  big[nd - 1] = big[nd - 1] * 2 + 1;
  wk_tensor *b = wk_empty(big, nd, (wk_options){.dtype = wk_tensor_dtype(t)});
  wk_tensor *v = wk_slice(b, nd - 1, 1, big[nd - 1], 2);
  wk_release(b);
  ck_assert_ptr_nonnull(wk_copy_(v, t));
  ck_assert(!wk_tensor_is_contiguous(v) || wk_tensor_numel(v) <= 1);
  return v;
}

/* Random shape: nd dims of sizes in [lo, hi]. */
static void rand_shape(uint64_t *s, int nd, int64_t lo, int64_t hi, int64_t *out) {
  for (int i = 0; i < nd; i++) out[i] = lo + (int64_t)(tu_uniform(s) * (double)(hi - lo + 1));
}

static int64_t prod(const int64_t *s, int a, int b) {
  int64_t p = 1;
  for (int i = a; i < b; i++) p *= s[i];
  return p;
}

static void check_shape(wk_tensor *t, const int64_t *s, int nd) {
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(wk_tensor_dim(t), nd);
  for (int i = 0; i < nd; i++) ck_assert_int_eq(wk_tensor_size(t, i), s[i]);
}

/* ---- softmax / log_softmax ----------------------------------------------------------------- */
static void ref_softmax(const double *x, const int64_t *sz, int nd, int d, bool log_, double *y) {
  int64_t outer = prod(sz, 0, d), n = nd ? sz[d] : 1, inner = prod(sz, d + 1, nd);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      double mx = -INFINITY, s = 0;
      for (int64_t k = 0; k < n; k++) mx = fmax(mx, x[(o * n + k) * inner + i]);
      for (int64_t k = 0; k < n; k++) s += exp(x[(o * n + k) * inner + i] - mx);
      for (int64_t k = 0; k < n; k++) {
        double v = x[(o * n + k) * inner + i] - mx;
        y[(o * n + k) * inner + i] = log_ ? v - log(s) : exp(v) / s;
      }
    }
}

static wk_tensor *softmax_call(bool log_, wk_tensor *x, int64_t dim, wk_dtype dt) {
  wk_value a[3] = {WK_VT(x), WK_VI(dim), WK_VDT(dt)};
  return call(log_ ? "log_softmax" : "softmax", a, 3, NULL, NULL);
}

START_TEST(test_nn_softmax_random) {
  LEAK_START;
  uint64_t rs = 11;
  for (int seed = 0; seed < 12; seed++) {
    int nd = 1 + seed % 4;
    int64_t sz[4];
    rand_shape(&rs, nd, 1, 6, sz);
    for (int f = 0; f < NFLOATS; f++) {
      wk_dtype dt = FLOATS[f];
      wk_tensor *x0 = tu_rand(sz, nd, dt, -4, 4, (uint64_t)seed * 7 + (uint64_t)f);
      wk_tensor *x = seed % 2 ? nc(x0) : wk_retain(x0);
      double *xv = tu_values(x0);
      int64_t n = wk_tensor_numel(x0);
      double *ref = malloc(sizeof(double) * (size_t)n);
      for (int d = -nd; d < nd; d++)
        for (int lg = 0; lg < 2; lg++) {
          ref_softmax(xv, sz, nd, d < 0 ? d + nd : d, lg, ref);
          wk_tensor *y = lg ? wk_log_softmax(x, d) : wk_softmax(x, d);
          check_shape(y, sz, nd);
          ck_assert_int_eq(wk_tensor_dtype(y), dt);
          TU_CLOSE(y, ref, n, tol(dt), tol(dt));
          wk_release(y);
        }
      free(ref);
      free(xv);
      wk_release(x);
      wk_release(x0);
    }
  }
  LEAK_END;
}
END_TEST

START_TEST(test_nn_softmax_edge) {
  LEAK_START;
  /* numerically stable: huge logits */
  wk_tensor *x = TU_T(WK_F32, (4), 1000, 1001, 1002, -1000);
  wk_tensor *y = wk_softmax(x, 0), *ly = wk_log_softmax(x, -1);
  double e0 = exp(-2), e1 = exp(-1), s = e0 + e1 + 1;
  TU_CLOSE(y, ((double[]){e0 / s, e1 / s, 1 / s, 0}), 4, 1e-6, 1e-7);
  TU_CLOSE(ly, ((double[]){-2 - log(s), -1 - log(s), -log(s), -2002 - log(s)}), 4, 1e-6, 1e-4);
  wk_release(y);
  wk_release(ly);
  wk_release(x);
  /* -inf entries give 0 / -inf */
  x = TU_T(WK_F64, (3), -INFINITY, 0, 0);
  y = wk_softmax(x, 0);
  TU_EQ_VALS(y, 0, 0.5, 0.5);
  ly = wk_log_softmax(x, 0);
  TU_CLOSE(ly, ((double[]){-INFINITY, log(0.5), log(0.5)}), 3, 1e-15, 0);
  wk_release(y);
  wk_release(ly);
  wk_release(x);
  /* 0-dim */
  x = wk_scalar_tensor(3.5, WK_F32);
  y = wk_softmax(x, 0);
  ck_assert_int_eq(wk_tensor_dim(y), 0);
  TU_EQ_VALS(y, 1);
  ly = wk_log_softmax(x, -1);
  TU_EQ_VALS(ly, 0);
  wk_release(y);
  wk_release(ly);
  wk_release(x);
  /* zero-size */
  x = wk_empty(WK_SHAPE(0, 3), (wk_options){.dtype = WK_F32});
  y = wk_softmax(x, 1);
  check_shape(y, (int64_t[]){0, 3}, 2);
  wk_release(y);
  y = wk_log_softmax(x, 0);
  check_shape(y, (int64_t[]){0, 3}, 2);
  wk_release(y);
  wk_release(x);
  /* transposed view */
  x = TU_T(WK_F64, (2, 3), 1, 2, 3, 4, 5, 7);
  wk_tensor *xt = wk_t(x);
  y = wk_softmax(xt, 1); /* rows of the transpose are the columns of x */
  double a = 1 / (1 + exp(3)), b = 1 / (1 + exp(4));
  TU_CLOSE(y, ((double[]){a, 1 - a, a, 1 - a, b, 1 - b}), 6, 1e-12, 1e-14);
  wk_release(y);
  wk_release(xt);
  wk_release(x);
  LEAK_END;
}
END_TEST

START_TEST(test_nn_softmax_dtype_arg) {
  LEAK_START;
  wk_tensor *x = TU_T(WK_F32, (3), 0.5, 1.5, -2);
  double ref[3], xv[3] = {0.5, 1.5, -2};
  ref_softmax(xv, (int64_t[]){3}, 1, 0, false, ref);
  wk_tensor *y = softmax_call(false, x, 0, WK_F64);
  ck_assert_int_eq(wk_tensor_dtype(y), WK_F64);
  TU_CLOSE(y, ref, 3, 1e-12, 0);
  wk_release(y);
  /* integer input with a floating dtype works */
  wk_tensor *xi = TU_T(WK_I64, (3), 1, 2, 3);
  double xiv[3] = {1, 2, 3};
  ref_softmax(xiv, (int64_t[]){3}, 1, 0, true, ref);
  y = softmax_call(true, xi, 0, WK_F32);
  ck_assert_int_eq(wk_tensor_dtype(y), WK_F32);
  TU_CLOSE(y, ref, 3, 1e-6, 0);
  wk_release(y);
  /* integer input without dtype, or an integer dtype: errors */
  ck_assert_ptr_null(wk_softmax(xi, 0));
  TU_FAILS_WITH(WK_ERR_DTYPE, "softmax");
  ck_assert_ptr_null(softmax_call(true, x, 0, WK_I32));
  TU_FAILS_WITH(WK_ERR_DTYPE, "log_softmax");
  /* dim out of range */
  ck_assert_ptr_null(wk_softmax(x, 1));
  TU_FAILS_WITH(WK_ERR_INDEX, "expected to be in range of [-1, 0], but got 1");
  ck_assert_ptr_null(wk_log_softmax(x, -2));
  TU_FAILS_WITH(WK_ERR_INDEX, "but got -2");
  /* NULL input */
  ck_assert_ptr_null(wk_softmax(NULL, 0));
  TU_FAILS_WITH(WK_ERR_NULL, "softmax");
  wk_release(xi);
  wk_release(x);
  LEAK_END;
}
END_TEST

/* Large inputs run on the pool: results must not depend on the thread count. */
START_TEST(test_nn_softmax_threads) {
  LEAK_START;
  int old = wk_num_threads();
  wk_tensor *x = tu_rand(WK_SHAPE(96, 700), WK_F32, -5, 5, 3);
  wk_tensor *r[2][3];
  for (int t = 0; t < 2; t++) {
    TU_OK(wk_set_num_threads(t ? 4 : 1));
    r[t][0] = wk_softmax(x, 1);
    r[t][1] = wk_softmax(x, 0);
    r[t][2] = wk_log_softmax(x, 0);
  }
  TU_OK(wk_set_num_threads(old));
  double *xv = tu_values(x), *ref = malloc(sizeof(double) * 96 * 700);
  ref_softmax(xv, (int64_t[]){96, 700}, 2, 0, false, ref);
  TU_CLOSE(r[1][1], ref, 96 * 700, 1e-5, 1e-7);
  for (int k = 0; k < 3; k++)
    ck_assert(memcmp(wk_tensor_data(r[0][k]), wk_tensor_data(r[1][k]), sizeof(float) * 96 * 700) == 0);
  for (int t = 0; t < 2; t++)
    for (int k = 0; k < 3; k++) wk_release(r[t][k]);
  free(xv);
  free(ref);
  wk_release(x);
  LEAK_END;
}
END_TEST

/* ---- batch_norm ------------------------------------------------------------------------------ */
static void bn_call(wk_tensor *x, wk_tensor *w, wk_tensor *b, wk_tensor *rm, wk_tensor *rv, bool train, double mom,
                    double eps, wk_tensor **y, wk_tensor **sm, wk_tensor **si) {
  wk_value a[8] = {WK_VT(x), WK_VT(w), WK_VT(b), WK_VT(rm), WK_VT(rv), WK_VB(train), WK_VF(mom), WK_VF(eps)};
  *y = call("batch_norm", a, 8, sm, si);
}

START_TEST(test_nn_batch_norm_train) {
  LEAK_START;
  uint64_t rs = 5;
  for (int seed = 0; seed < 10; seed++) {
    int nd = 2 + seed % 3;
    int64_t sz[4];
    rand_shape(&rs, nd, 1, 5, sz);
    sz[0] = 2 + seed % 3;
    wk_dtype dt = FLOATS[seed % NFLOATS];
    int64_t N = sz[0], C = sz[1], S = prod(sz, 2, nd), n = prod(sz, 0, nd);
    wk_tensor *x0 = tu_rand(sz, nd, dt, -3, 5, (uint64_t)seed + 100);
    wk_tensor *x = seed % 2 ? nc(x0) : wk_retain(x0);
    bool use_w = seed % 3 != 0, use_b = seed % 4 != 1, use_rs = seed % 5 != 2;
    wk_tensor *w = use_w ? tu_rand(&C, 1, WK_F32, 0.5, 2, (uint64_t)seed + 1) : NULL;
    wk_tensor *b = use_b ? tu_rand(&C, 1, WK_F32, -1, 1, (uint64_t)seed + 2) : NULL;
    wk_tensor *rm = use_rs ? tu_rand(&C, 1, WK_F32, -1, 1, (uint64_t)seed + 3) : NULL;
    wk_tensor *rv = use_rs ? tu_rand(&C, 1, WK_F32, 0.5, 1.5, (uint64_t)seed + 4) : NULL;
    double *xv = tu_values(x0), *wv = w ? tu_values(w) : NULL, *bv = b ? tu_values(b) : NULL;
    double *rmv = rm ? tu_values(rm) : NULL, *rvv = rv ? tu_values(rv) : NULL;
    uint64_t ver_m = rm ? wk_tensor_version(rm) : 0, ver_v = rv ? wk_tensor_version(rv) : 0;
    wk_tensor *y, *sm, *si;
    double mom = 0.1 + 0.1 * (seed % 3), eps = 1e-5;
    bn_call(x, w, b, rm, rv, true, mom, eps, &y, &sm, &si);
    check_shape(y, sz, nd);
    ck_assert_int_eq(wk_tensor_dtype(y), dt);
    double *ref = malloc(sizeof(double) * (size_t)n), *mean = malloc(sizeof(double) * (size_t)C),
           *inv = malloc(sizeof(double) * (size_t)C), *nrm = malloc(sizeof(double) * (size_t)C),
           *nrv = malloc(sizeof(double) * (size_t)C);
    for (int64_t c = 0; c < C; c++) {
      double s = 0, v = 0, cnt = (double)(N * S);
      for (int64_t i = 0; i < N; i++)
        for (int64_t k = 0; k < S; k++) s += xv[(i * C + c) * S + k];
      double m = s / cnt;
      for (int64_t i = 0; i < N; i++)
        for (int64_t k = 0; k < S; k++) v += (xv[(i * C + c) * S + k] - m) * (xv[(i * C + c) * S + k] - m);
      mean[c] = m;
      inv[c] = 1 / sqrt(v / cnt + eps);
      if (rm) nrm[c] = (1 - mom) * rmv[c] + mom * m;
      if (rv) nrv[c] = (1 - mom) * rvv[c] + mom * v / (cnt - 1);
      for (int64_t i = 0; i < N; i++)
        for (int64_t k = 0; k < S; k++) {
          int64_t idx = (i * C + c) * S + k;
          ref[idx] = (xv[idx] - m) * inv[c] * (w ? wv[c] : 1) + (b ? bv[c] : 0);
        }
    }
    double t = tol(dt) * 10;
    TU_CLOSE(y, ref, n, t, t);
    /* f16/bf16 input with f32 parameters saves f32 statistics (mixed type) */
    wk_dtype sdt = (dt == WK_F16 || dt == WK_BF16) && (w || b || rm) ? WK_F32 : dt;
    ck_assert_int_eq(wk_tensor_dtype(sm), sdt);
    check_shape(sm, &C, 1);
    check_shape(si, &C, 1);
    TU_CLOSE(sm, mean, C, tol(sdt) * 10, tol(sdt) * 10);
    TU_CLOSE(si, inv, C, tol(sdt) * 10, tol(sdt) * 10);
    if (rm) {
      TU_CLOSE(rm, nrm, C, 1e-5, 1e-6);
      TU_CLOSE(rv, nrv, C, 1e-5, 1e-6);
      ck_assert_uint_gt(wk_tensor_version(rm), ver_m);
      ck_assert_uint_gt(wk_tensor_version(rv), ver_v);
    }
    free(ref);
    free(mean);
    free(inv);
    free(nrm);
    free(nrv);
    free(xv);
    free(wv);
    free(bv);
    free(rmv);
    free(rvv);
    wk_release(y);
    wk_release(sm);
    wk_release(si);
    wk_release(x);
    wk_release(x0);
    wk_release(w);
    wk_release(b);
    wk_release(rm);
    wk_release(rv);
  }
  LEAK_END;
}
END_TEST

START_TEST(test_nn_batch_norm_eval) {
  LEAK_START;
  wk_tensor *x = tu_rand(WK_SHAPE(3, 2, 4), WK_F64, -2, 2, 9);
  wk_tensor *w = TU_T(WK_F64, (2), 2, 0.5), *b = TU_T(WK_F64, (2), 1, -1);
  wk_tensor *rm = TU_T(WK_F64, (2), 0.25, -0.5), *rv = TU_T(WK_F64, (2), 4, 0.25);
  uint64_t vm = wk_tensor_version(rm);
  double *xv = tu_values(x), ref[24];
  double wv[2] = {2, 0.5}, bv[2] = {1, -1}, m[2] = {0.25, -0.5}, v[2] = {4, 0.25};
  for (int i = 0; i < 24; i++) {
    int c = (i / 4) % 2;
    ref[i] = (xv[i] - m[c]) / sqrt(v[c] + 1e-3) * wv[c] + bv[c];
  }
  wk_tensor *y, *sm, *si;
  bn_call(x, w, b, rm, rv, false, 0.1, 1e-3, &y, &sm, &si);
  TU_CLOSE(y, ref, 24, 1e-12, 1e-12);
  ck_assert_int_eq(wk_tensor_numel(sm), 0);
  ck_assert_int_eq(wk_tensor_numel(si), 0);
  TU_EQ_VALS(rm, 0.25, -0.5); /* eval leaves running stats alone */
  ck_assert_uint_eq(wk_tensor_version(rm), vm);
  wk_release(y);
  wk_release(sm);
  wk_release(si);
  /* the typed front end */
  y = wk_batch_norm(x, w, b, rm, rv, false, 0.1, 1e-3, NULL);
  TU_CLOSE(y, ref, 24, 1e-12, 1e-12);
  wk_release(y);
  /* eval without running stats */
  bn_call(x, w, b, NULL, rv, false, 0.1, 1e-5, &y, &sm, &si);
  ck_assert_ptr_null(y);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "running_mean must be defined in evaluation mode");
  /* one value per channel when training */
  wk_tensor *x1 = tu_rand(WK_SHAPE(1, 2), WK_F32, 0, 1, 1);
  bn_call(x1, NULL, NULL, NULL, NULL, true, 0.1, 1e-5, &y, &sm, &si);
  ck_assert_ptr_null(y);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "Expected more than 1 value per channel when training, got input size [1, 2]");
  /* eval with one value per channel is fine */
  wk_tensor *x12 = tu_rand(WK_SHAPE(1, 2), WK_F64, 0, 1, 1);
  bn_call(x12, NULL, NULL, rm, rv, false, 0.1, 1e-5, &y, &sm, &si);
  ck_assert_ptr_nonnull(y);
  wk_release(y);
  wk_release(sm);
  wk_release(si);
  /* wrong parameter sizes, dtypes, ranks */
  wk_tensor *w3 = TU_T(WK_F64, (3), 1, 2, 3);
  bn_call(x, w3, NULL, NULL, NULL, true, 0.1, 1e-5, &y, &sm, &si);
  ck_assert_ptr_null(y);
  TU_FAILS_WITH(WK_ERR_SHAPE, "weight should contain 2 elements not 3");
  bn_call(x, NULL, NULL, w3, rv, true, 0.1, 1e-5, &y, &sm, &si);
  ck_assert_ptr_null(y);
  TU_FAILS_WITH(WK_ERR_SHAPE, "running_mean should contain 2 elements not 3");
  wk_tensor *xi = TU_T(WK_I64, (2, 2), 1, 2, 3, 4);
  bn_call(xi, NULL, NULL, NULL, NULL, true, 0.1, 1e-5, &y, &sm, &si);
  ck_assert_ptr_null(y);
  TU_FAILS_WITH(WK_ERR_DTYPE, "batch_norm");
  wk_tensor *x1d = TU_T(WK_F32, (3), 1, 2, 3);
  bn_call(x1d, NULL, NULL, NULL, NULL, true, 0.1, 1e-5, &y, &sm, &si);
  ck_assert_ptr_null(y);
  TU_FAILS_WITH(WK_ERR_SHAPE, "at least 2 dimensions");
  bn_call(NULL, NULL, NULL, NULL, NULL, true, 0.1, 1e-5, &y, &sm, &si);
  ck_assert_ptr_null(y);
  TU_FAILS_WITH(WK_ERR_NULL, "batch_norm");
  /* zero-size batch: empty output, running stats untouched */
  wk_tensor *x0 = wk_empty(WK_SHAPE(0, 2, 3), (wk_options){.dtype = WK_F64});
  bn_call(x0, w, b, rm, rv, true, 0.1, 1e-5, &y, &sm, &si);
  check_shape(y, (int64_t[]){0, 2, 3}, 3);
  TU_EQ_VALS(rm, 0.25, -0.5);
  wk_release(y);
  wk_release(sm);
  wk_release(si);
  free(xv);
  wk_release(x0);
  wk_release(x1d);
  wk_release(xi);
  wk_release(w3);
  wk_release(x12);
  wk_release(x1);
  wk_release(x);
  wk_release(w);
  wk_release(b);
  wk_release(rm);
  wk_release(rv);
  LEAK_END;
}
END_TEST

/* Strided running stats of another dtype, and thread-count independence. */
START_TEST(test_nn_batch_norm_running) {
  LEAK_START;
  wk_tensor *x = tu_rand(WK_SHAPE(8, 3, 40, 40), WK_F32, -1, 3, 77);
  wk_tensor *rbuf = TU_T(WK_F64, (6), 0, 9, 0, 9, 0, 9);
  wk_tensor *rm = wk_slice(rbuf, 0, 0, 6, 2), *rv = wk_slice(rbuf, 0, 1, 6, 2);
  int old = wk_num_threads();
  wk_tensor *y[2], *sm[2], *si[2];
  for (int t = 0; t < 2; t++) {
    TU_OK(wk_set_num_threads(t ? 3 : 1));
    bn_call(x, NULL, NULL, t ? NULL : rm, t ? NULL : rv, true, 0.5, 1e-5, &y[t], &sm[t], &si[t]);
    ck_assert_ptr_nonnull(y[t]);
  }
  TU_OK(wk_set_num_threads(old));
  ck_assert(memcmp(wk_tensor_data(y[0]), wk_tensor_data(y[1]), sizeof(float) * 8 * 3 * 1600) == 0);
  double *xv = tu_values(x), mean[3] = {0}, var[3] = {0};
  for (int64_t i = 0; i < 8 * 3 * 1600; i++) mean[(i / 1600) % 3] += xv[i] / (8 * 1600);
  for (int64_t i = 0; i < 8 * 3 * 1600; i++) {
    double d = xv[i] - mean[(i / 1600) % 3];
    var[(i / 1600) % 3] += d * d / (8 * 1600 - 1);
  }
  double *rb = tu_values(rbuf);
  for (int c = 0; c < 3; c++) {
    ck_assert_double_eq_tol(rb[2 * c], 0.5 * mean[c], 1e-9);
    ck_assert_double_eq_tol(rb[2 * c + 1], 4.5 + 0.5 * var[c], 1e-9);
  }
  free(rb);
  free(xv);
  for (int t = 0; t < 2; t++) {
    wk_release(y[t]);
    wk_release(sm[t]);
    wk_release(si[t]);
  }
  wk_release(rm);
  wk_release(rv);
  wk_release(rbuf);
  wk_release(x);
  LEAK_END;
}
END_TEST

/* ---- layer_norm ------------------------------------------------------------------------------ */
static wk_tensor *ln_call(wk_tensor *x, const int64_t *ns, int k, wk_tensor *w, wk_tensor *b, double eps, wk_tensor **m,
                          wk_tensor **r) {
  wk_value a[5] = {WK_VT(x), WK_VINTS(ns, k), WK_VT(w), WK_VT(b), WK_VF(eps)};
  return call("layer_norm", a, 5, m, r);
}

START_TEST(test_nn_layer_norm_random) {
  LEAK_START;
  uint64_t rs = 21;
  for (int seed = 0; seed < 16; seed++) {
    int nd = 1 + seed % 4;
    int64_t sz[4];
    rand_shape(&rs, nd, 1, 6, sz);
    int k = 1 + (seed / 4) % nd;
    int axis = nd - k;
    wk_dtype dt = FLOATS[seed % NFLOATS];
    int64_t M = prod(sz, 0, axis), N = prod(sz, axis, nd);
    wk_tensor *x0 = tu_rand(sz, nd, dt, -2, 6, (uint64_t)seed + 300);
    wk_tensor *x = seed % 3 == 1 ? nc(x0) : wk_retain(x0);
    wk_tensor *w = seed % 2 ? tu_rand(sz + axis, k, dt, 0.5, 1.5, (uint64_t)seed + 1) : NULL;
    wk_tensor *b = seed % 5 < 3 ? tu_rand(sz + axis, k, dt, -1, 1, (uint64_t)seed + 2) : NULL;
    wk_tensor *wn = w && seed % 4 == 1 ? nc(w) : wk_retain(w);
    double *xv = tu_values(x0), *wv = w ? tu_values(w) : NULL, *bv = b ? tu_values(b) : NULL;
    double *ref = malloc(sizeof(double) * (size_t)(M * N)), *mean = malloc(sizeof(double) * (size_t)M),
           *rstd = malloc(sizeof(double) * (size_t)M);
    double eps = seed % 2 ? 1e-5 : 1e-3;
    for (int64_t r = 0; r < M; r++) {
      double s = 0, v = 0;
      for (int64_t i = 0; i < N; i++) s += xv[r * N + i];
      double m = s / (double)N;
      for (int64_t i = 0; i < N; i++) v += (xv[r * N + i] - m) * (xv[r * N + i] - m);
      mean[r] = m;
      rstd[r] = 1 / sqrt(v / (double)N + eps);
      for (int64_t i = 0; i < N; i++)
        ref[r * N + i] = (xv[r * N + i] - m) * rstd[r] * (w ? wv[i] : 1) + (b ? bv[i] : 0);
    }
    wk_tensor *mt, *rt;
    wk_tensor *y = ln_call(x, sz + axis, k, wn, b, eps, &mt, &rt);
    check_shape(y, sz, nd);
    ck_assert_int_eq(wk_tensor_dtype(y), dt);
    double t = tol(dt) * 10;
    TU_CLOSE(y, ref, M * N, t, t);
    int64_t ssz[4];
    for (int i = 0; i < nd; i++) ssz[i] = i < axis ? sz[i] : 1;
    check_shape(mt, ssz, nd);
    check_shape(rt, ssz, nd);
    ck_assert_int_eq(wk_tensor_dtype(mt), dt);
    TU_CLOSE(mt, mean, M, t, t);
    TU_CLOSE(rt, rstd, M, t, t);
    free(ref);
    free(mean);
    free(rstd);
    free(xv);
    free(wv);
    free(bv);
    wk_release(y);
    wk_release(mt);
    wk_release(rt);
    wk_release(x);
    wk_release(x0);
    wk_release(w);
    wk_release(wn);
    wk_release(b);
  }
  LEAK_END;
}
END_TEST

START_TEST(test_nn_layer_norm_errors) {
  LEAK_START;
  wk_tensor *x = tu_rand(WK_SHAPE(2, 3, 4), WK_F32, -1, 1, 1), *m, *r;
  ck_assert_ptr_null(ln_call(x, (int64_t[]){5}, 1, NULL, NULL, 1e-5, &m, &r));
  TU_FAILS_WITH(WK_ERR_SHAPE,
                "Given normalized_shape=[5], expected input with shape [*, 5], but got input of size[2, 3, 4]");
  ck_assert_ptr_null(ln_call(x, (int64_t[]){2, 3, 4, 1}, 4, NULL, NULL, 1e-5, &m, &r));
  TU_FAILS_WITH(WK_ERR_SHAPE, "expected input with shape [*, 2, 3, 4, 1]");
  ck_assert_ptr_null(ln_call(x, (int64_t[]){0}, 0, NULL, NULL, 1e-5, &m, &r));
  TU_FAILS_WITH(WK_ERR_SHAPE, "at least 1-dimensional");
  wk_tensor *w = TU_T(WK_F32, (3), 1, 2, 3);
  ck_assert_ptr_null(ln_call(x, (int64_t[]){4}, 1, w, NULL, 1e-5, &m, &r));
  TU_FAILS_WITH(WK_ERR_SHAPE, "Expected weight to be of same shape as normalized_shape, but got weight of shape [3] and normalized_shape = [4]");
  ck_assert_ptr_null(ln_call(x, (int64_t[]){4}, 1, NULL, w, 1e-5, &m, &r));
  TU_FAILS_WITH(WK_ERR_SHAPE, "bias of shape [3]");
  wk_tensor *xi = TU_T(WK_I32, (2), 1, 2);
  ck_assert_ptr_null(ln_call(xi, (int64_t[]){2}, 1, NULL, NULL, 1e-5, &m, &r));
  TU_FAILS_WITH(WK_ERR_DTYPE, "layer_norm");
  ck_assert_ptr_null(wk_layer_norm(NULL, (int64_t[]){2}, 1, NULL, NULL, 1e-5, NULL));
  TU_FAILS_WITH(WK_ERR_NULL, "layer_norm");
  /* zero-size rows, and the typed front end */
  wk_tensor *x0 = wk_empty(WK_SHAPE(0, 4), (wk_options){.dtype = WK_F64});
  wk_tensor *y = ln_call(x0, (int64_t[]){4}, 1, NULL, NULL, 1e-5, &m, &r);
  check_shape(y, (int64_t[]){0, 4}, 2);
  check_shape(m, (int64_t[]){0, 1}, 2);
  wk_release(y);
  wk_release(m);
  wk_release(r);
  y = wk_layer_norm(x, (int64_t[]){3, 4}, 2, NULL, NULL, 1e-5, NULL);
  check_shape(y, (int64_t[]){2, 3, 4}, 3);
  wk_release(y);
  wk_release(x0);
  wk_release(xi);
  wk_release(w);
  wk_release(x);
  LEAK_END;
}
END_TEST

/* ---- dropout ------------------------------------------------------------------------------------ */
static wk_tensor *drop_call(wk_tensor *x, double p, bool train, wk_tensor **mask) {
  wk_value a[3] = {WK_VT(x), WK_VF(p), WK_VB(train)};
  return call("dropout", a, 3, mask, NULL);
}

START_TEST(test_nn_dropout_modes) {
  LEAK_START;
  wk_tensor *x = tu_rand(WK_SHAPE(3, 4), WK_F32, 1, 2, 4), *m;
  double *xv = tu_values(x);
  /* eval and p = 0: a copy in a new tensor, mask all true */
  for (int k = 0; k < 2; k++) {
    wk_tensor *y = drop_call(x, k ? 0.0 : 0.5, k == 1, &m);
    TU_CLOSE(y, xv, 12, 0, 0);
    ck_assert(!wk_tensor_same_storage(y, x));
    ck_assert_int_eq(wk_tensor_dtype(m), WK_BOOL);
    check_shape(m, (int64_t[]){3, 4}, 2);
    double ones[12];
    for (int i = 0; i < 12; i++) ones[i] = 1;
    TU_CLOSE(m, ones, 12, 0, 0);
    wk_release(y);
    wk_release(m);
  }
  /* integer input in eval mode is just copied */
  wk_tensor *xi = TU_T(WK_I64, (3), 1, 2, 3);
  wk_tensor *y = drop_call(xi, 0.5, false, &m);
  TU_EQ_VALS(y, 1, 2, 3);
  wk_release(y);
  wk_release(m);
  ck_assert_ptr_null(drop_call(xi, 0.5, true, &m));
  TU_FAILS_WITH(WK_ERR_DTYPE, "dropout");
  /* p = 1: zeros */
  y = drop_call(x, 1.0, true, &m);
  double zeros[12] = {0};
  TU_CLOSE(y, zeros, 12, 0, 0);
  TU_CLOSE(m, zeros, 12, 0, 0);
  wk_release(y);
  wk_release(m);
  /* p outside [0, 1] */
  ck_assert_ptr_null(drop_call(x, 1.5, true, &m));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "dropout probability has to be between 0 and 1, but got 1.5");
  ck_assert_ptr_null(drop_call(x, -0.1, false, &m));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "but got -0.1");
  ck_assert_ptr_null(drop_call(x, NAN, true, &m));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "dropout probability");
  ck_assert_ptr_null(wk_dropout(NULL, 0.5, true, NULL));
  TU_FAILS_WITH(WK_ERR_NULL, "dropout");
  /* empty and 0-dim inputs */
  wk_tensor *e = wk_empty(WK_SHAPE(0, 5), (wk_options){.dtype = WK_F32});
  y = drop_call(e, 0.5, true, &m);
  check_shape(y, (int64_t[]){0, 5}, 2);
  check_shape(m, (int64_t[]){0, 5}, 2);
  wk_release(y);
  wk_release(m);
  wk_tensor *s = wk_scalar_tensor(2.0, WK_F64);
  y = drop_call(s, 0.5, true, &m);
  ck_assert_int_eq(wk_tensor_dim(y), 0);
  double yv, mv;
  TU_OK(wk_item(y, &yv));
  TU_OK(wk_item(m, &mv));
  ck_assert(mv ? yv == 4.0 : yv == 0.0);
  wk_release(y);
  wk_release(m);
  free(xv);
  wk_release(s);
  wk_release(e);
  wk_release(xi);
  wk_release(x);
  LEAK_END;
}
END_TEST

START_TEST(test_nn_dropout_stats) {
  LEAK_START;
  const int64_t n = 200000;
  for (int f = 0; f < NFLOATS; f++) {
    wk_dtype dt = FLOATS[f];
    double p = f == 1 ? 0.7 : 0.3;
    wk_tensor *x0 = tu_rand(WK_SHAPE(400, 500), dt, 0.5, 1.5, (uint64_t)f + 1);
    wk_tensor *x = f == 2 ? nc(x0) : wk_retain(x0);
    wk_tensor *m, *y = drop_call(x, p, true, &m);
    ck_assert_int_eq(wk_tensor_dtype(y), dt);
    double *xv = tu_values(x0), *yv = tu_values(y), *mv = tu_values(m);
    int64_t kept = 0;
    for (int64_t i = 0; i < n; i++) {
      if (mv[i]) {
        kept++;
        ck_assert_msg(fabs(yv[i] - xv[i] / (1 - p)) <= tol(dt) * 4 * fabs(yv[i]), "element %lld: %g vs %g", (long long)i,
                      yv[i], xv[i] / (1 - p));
      } else {
        ck_assert(yv[i] == 0);
      }
    }
    double frac = (double)kept / (double)n;
    ck_assert_msg(fabs(frac - (1 - p)) < 0.006, "kept fraction %g for p = %g", frac, p);
    /* no long runs of one value: neighbouring masks are independent */
    int64_t same = 0;
    for (int64_t i = 1; i < n; i++) same += mv[i] == mv[i - 1];
    double expect = (p * p + (1 - p) * (1 - p)) * (double)(n - 1);
    ck_assert_msg(fabs((double)same - expect) < 0.01 * (double)n, "neighbour agreement %lld vs %g", (long long)same, expect);
    free(xv);
    free(yv);
    free(mv);
    wk_release(y);
    wk_release(m);
    wk_release(x);
    wk_release(x0);
  }
  LEAK_END;
}
END_TEST

START_TEST(test_nn_dropout_reproducible) {
  LEAK_START;
  int old = wk_num_threads();
  wk_tensor *x = tu_rand(WK_SHAPE(300, 301), WK_F32, -1, 1, 8);
  wk_tensor *y[4], *m[4];
  TU_OK(wk_set_num_threads(1));
  wk_manual_seed(1234);
  y[0] = drop_call(x, 0.4, true, &m[0]);
  y[1] = drop_call(x, 0.4, true, &m[1]); /* the generator moved on */
  TU_OK(wk_set_num_threads(4));
  wk_manual_seed(1234);
  y[2] = drop_call(x, 0.4, true, &m[2]);
  wk_manual_seed(99);
  y[3] = drop_call(x, 0.4, true, &m[3]);
  TU_OK(wk_set_num_threads(old));
  size_t nb = sizeof(float) * 300 * 301;
  ck_assert(memcmp(wk_tensor_data(y[0]), wk_tensor_data(y[2]), nb) == 0);
  ck_assert(memcmp(wk_tensor_data(m[0]), wk_tensor_data(m[2]), 300 * 301) == 0);
  ck_assert(memcmp(wk_tensor_data(m[0]), wk_tensor_data(m[1]), 300 * 301) != 0);
  ck_assert(memcmp(wk_tensor_data(m[0]), wk_tensor_data(m[3]), 300 * 301) != 0);
  /* the front end: train=false gives the input values back */
  wk_tensor *z = wk_dropout(x, 0.4, false, NULL);
  ck_assert(memcmp(wk_tensor_data(z), wk_tensor_data(x), nb) == 0);
  wk_release(z);
  for (int i = 0; i < 4; i++) {
    wk_release(y[i]);
    wk_release(m[i]);
  }
  wk_release(x);
  LEAK_END;
}
END_TEST

/* ---- embedding ------------------------------------------------------------------------------------ */
START_TEST(test_nn_embedding) {
  LEAK_START;
  const wk_dtype wdts[] = {WK_F32, WK_F64, WK_F16, WK_I64};
  const wk_dtype idts[] = {WK_I64, WK_I32, WK_I16, WK_U8};
  for (int k = 0; k < 4; k++) {
    int64_t V = 7, D = 3 + k;
    wk_tensor *w0 = tu_rand(WK_SHAPE(V, D), wdts[k], -5, 5, (uint64_t)k + 40);
    wk_tensor *w = k % 2 ? nc(w0) : wk_retain(w0); /* strided weight with the same values */
    int64_t isz[3] = {2, 3, 2};
    int ind = 1 + k % 3;
    wk_tensor *idx = tu_rand(isz, ind, idts[k], 0, (double)V, (uint64_t)k + 50);
    double *wv = tu_values(w0), *iv = tu_values(idx);
    int64_t n = wk_tensor_numel(idx);
    double *ref = malloc(sizeof(double) * (size_t)(n * D));
    for (int64_t i = 0; i < n; i++)
      for (int64_t d = 0; d < D; d++) ref[i * D + d] = wv[(int64_t)iv[i] * D + d];
    wk_tensor *idxn = k == 2 ? nc(idx) : wk_retain(idx); /* strided indices */
    wk_tensor *y = wk_embedding(w, idxn);
    wk_release(idxn);
    int64_t osz[4];
    memcpy(osz, isz, sizeof isz);
    osz[ind] = D;
    check_shape(y, osz, ind + 1);
    ck_assert_int_eq(wk_tensor_dtype(y), wdts[k]);
    TU_CLOSE(y, ref, n * D, 0, 0);
    wk_release(y);
    free(ref);
    free(wv);
    free(iv);
    wk_release(idx);
    wk_release(w);
    wk_release(w0);
  }
  /* 0-dim and empty indices */
  wk_tensor *w = tu_rand(WK_SHAPE(4, 2), WK_F32, -1, 1, 3);
  wk_tensor *i0 = wk_scalar_tensor(2, WK_I64);
  wk_tensor *y = wk_embedding(w, i0);
  check_shape(y, (int64_t[]){2}, 1);
  double *wv = tu_values(w);
  TU_CLOSE(y, wv + 4, 2, 0, 0);
  wk_release(y);
  wk_tensor *ie = wk_empty(WK_SHAPE(0, 3), (wk_options){.dtype = WK_I64});
  y = wk_embedding(w, ie);
  check_shape(y, (int64_t[]){0, 3, 2}, 3);
  wk_release(y);
  /* padding_idx only matters for backward */
  wk_tensor *ip = TU_T(WK_I64, (2), 1, 1);
  wk_value a[3] = {WK_VT(w), WK_VT(ip), WK_VI(1)};
  y = call("embedding", a, 3, NULL, NULL);
  TU_CLOSE(y, ((double[]){wv[2], wv[3], wv[2], wv[3]}), 4, 0, 0);
  wk_release(y);
  /* errors */
  wk_tensor *bad = TU_T(WK_I64, (2), 0, 4), *neg = TU_T(WK_I32, (1), -1), *fl = TU_T(WK_F32, (1), 0);
  ck_assert_ptr_null(wk_embedding(w, bad));
  TU_FAILS_WITH(WK_ERR_INDEX, "index out of range in self");
  ck_assert_ptr_null(wk_embedding(w, neg));
  TU_FAILS_WITH(WK_ERR_INDEX, "index out of range in self");
  ck_assert_ptr_null(wk_embedding(w, fl));
  TU_FAILS_WITH(WK_ERR_DTYPE, "Expected tensor for argument #1 'indices' to have one of the following scalar types");
  wk_tensor *w1 = TU_T(WK_F32, (2), 1, 2);
  ck_assert_ptr_null(wk_embedding(w1, i0));
  TU_FAILS_WITH(WK_ERR_SHAPE, "'weight' must be 2-D");
  ck_assert_ptr_null(wk_embedding(w, NULL));
  TU_FAILS_WITH(WK_ERR_NULL, "embedding");
  free(wv);
  wk_release(w1);
  wk_release(bad);
  wk_release(neg);
  wk_release(fl);
  wk_release(ip);
  wk_release(ie);
  wk_release(i0);
  wk_release(w);
  LEAK_END;
}
END_TEST

/* ---- pad ------------------------------------------------------------------------------------------- */
/* Naive reference: mode 0 constant, 1 reflect, 2 replicate, 3 circular. */
static void ref_pad(const double *x, const int64_t *sz, int nd, const int64_t *pad, int npad, int mode, double value,
                    double *y, int64_t *osz) {
  int64_t pl[8] = {0}, pr[8] = {0};
  for (int d = 0; d < nd; d++) {
    int k = nd - 1 - d;
    if (k < npad / 2) {
      pl[d] = pad[2 * k];
      pr[d] = pad[2 * k + 1];
    }
    osz[d] = sz[d] + pl[d] + pr[d];
  }
  int64_t on = prod(osz, 0, nd), idx[8];
  for (int64_t o = 0; o < on; o++) {
    int64_t rem = o, src = 0;
    bool fill = false;
    for (int d = nd - 1; d >= 0; d--) {
      idx[d] = rem % osz[d];
      rem /= osz[d];
    }
    for (int d = 0; d < nd; d++) {
      int64_t i = idx[d] - pl[d], n = sz[d];
      if (i < 0 || i >= n) {
        if (mode == 0) fill = true;
        else if (mode == 1) i = i < 0 ? -i : 2 * (n - 1) - i;
        else if (mode == 2) i = i < 0 ? 0 : n - 1;
        else i = ((i % n) + n) % n;
      }
      src = src * n + (fill ? 0 : i);
    }
    y[o] = fill ? value : x[src];
  }
}

START_TEST(test_nn_pad_random) {
  LEAK_START;
  static const char *modes[] = {"constant", "reflect", "replicate", "circular"};
  const wk_dtype dts[] = {WK_F32, WK_F64, WK_I64, WK_U8, WK_F16, WK_BOOL, WK_I32, WK_BF16};
  uint64_t rs = 31;
  for (int seed = 0; seed < 32; seed++) {
    int mode = seed % 4;
    int nd = 1 + seed % 3 + (seed / 8) % 2;
    int64_t sz[4];
    rand_shape(&rs, nd, 2, 5, sz);
    int npad = 2 * (1 + (int)(tu_uniform(&rs) * nd));
    int64_t pad[8];
    for (int k = 0; k < npad; k++) {
      int64_t n = sz[nd - 1 - k / 2];
      int64_t lim = mode == 1 ? n - 1 : mode == 3 ? n : 3;
      int64_t lo = mode == 0 ? -1 : 0;
      pad[k] = lo + (int64_t)(tu_uniform(&rs) * (double)(lim - lo + 1));
    }
    wk_dtype dt = dts[seed % 8];
    wk_tensor *x0 = tu_rand(sz, nd, dt, -20, 20, (uint64_t)seed + 500);
    wk_tensor *x = seed % 3 == 2 ? nc(x0) : wk_retain(x0);
    double value = mode == 0 ? (seed % 2 ? 7 : 0) : 0;
    if (dt == WK_BOOL && value) value = 1;
    double *xv = tu_values(x0);
    int64_t osz[4];
    double *ref = malloc(sizeof(double) * 65536);
    ref_pad(xv, sz, nd, pad, npad, mode, value, ref, osz);
    wk_tensor *y = wk_pad(x, pad, npad, modes[mode], value);
    ck_assert_msg(y != NULL, "%s: %s", modes[mode], wk_last_error_message());
    check_shape(y, osz, nd);
    ck_assert_int_eq(wk_tensor_dtype(y), dt);
    TU_CLOSE(y, ref, prod(osz, 0, nd), 0, 0);
    wk_release(y);
    free(ref);
    free(xv);
    wk_release(x);
    wk_release(x0);
  }
  LEAK_END;
}
END_TEST

START_TEST(test_nn_pad_cases) {
  LEAK_START;
  wk_tensor *x = TU_T(WK_F32, (2, 3), 1, 2, 3, 4, 5, 6);
  wk_tensor *y = wk_pad(x, (int64_t[]){1, 2}, 2, "reflect", 0);
  TU_EQ_VALS(y, 2, 1, 2, 3, 2, 1, 5, 4, 5, 6, 5, 4);
  wk_release(y);
  y = wk_pad(x, (int64_t[]){0, 0, 1, 1}, 4, "replicate", 0);
  TU_EQ_VALS(y, 1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6);
  wk_release(y);
  y = wk_pad(x, (int64_t[]){-1, 1}, 2, "constant", -3);
  TU_EQ_VALS(y, 2, 3, -3, 5, 6, -3);
  wk_release(y);
  y = wk_pad(x, (int64_t[]){2, 0}, 2, "circular", 0);
  TU_EQ_VALS(y, 2, 3, 1, 2, 3, 5, 6, 4, 5, 6);
  wk_release(y);
  /* value None means 0 */
  wk_value a[4] = {WK_VT(x), WK_VINTS(((int64_t[]){1, 0}), 2), WK_VS("constant"), WK_VNONE};
  y = call("pad", a, 4, NULL, NULL);
  TU_EQ_VALS(y, 0, 1, 2, 3, 0, 4, 5, 6);
  wk_release(y);
  /* crop to empty, and empty pad list */
  y = wk_pad(x, (int64_t[]){-2, -1}, 2, "constant", 0);
  check_shape(y, (int64_t[]){2, 0}, 2);
  wk_release(y);
  y = wk_pad(x, NULL, 0, "reflect", 0);
  TU_EQ_VALS(y, 1, 2, 3, 4, 5, 6);
  wk_release(y);
  wk_tensor *s = wk_scalar_tensor(5, WK_I32);
  y = wk_pad(s, NULL, 0, "constant", 1);
  ck_assert_int_eq(wk_tensor_dim(y), 0);
  TU_EQ_VALS(y, 5);
  wk_release(y);
  /* errors */
  ck_assert_ptr_null(wk_pad(x, (int64_t[]){1, 2, 3}, 3, "constant", 0));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "Padding length must be divisible by 2");
  ck_assert_ptr_null(wk_pad(x, (int64_t[]){1, 1, 1, 1, 1, 1}, 6, "constant", 0));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "Padding length should be less than or equal to two times the input dimension but got padding length 6 and input of dimension 2");
  ck_assert_ptr_null(wk_pad(x, (int64_t[]){3, 0}, 2, "reflect", 0));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "Padding size should be less than the corresponding input dimension");
  ck_assert_ptr_null(wk_pad(x, (int64_t[]){4, 0}, 2, "circular", 0));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "wrapping around more than once");
  ck_assert_ptr_null(wk_pad(x, (int64_t[]){-2, -2}, 2, "constant", 0));
  TU_FAILS_WITH(WK_ERR_SHAPE, "The input size 3, plus negative padding -2 and -2 resulted in a negative output size");
  ck_assert_ptr_null(wk_pad(x, (int64_t[]){1, 1}, 2, "reflect", 2));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "Padding mode \"reflect\" doesn't take in value argument");
  ck_assert_ptr_null(wk_pad(x, (int64_t[]){1, 1}, 2, "mirror", 0));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "'mirror'");
  wk_tensor *e = wk_empty(WK_SHAPE(2, 0), (wk_options){.dtype = WK_F32});
  ck_assert_ptr_null(wk_pad(e, (int64_t[]){1, 1}, 2, "replicate", 0));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "replicate");
  y = wk_pad(e, (int64_t[]){1, 1}, 2, "constant", 2);
  TU_EQ_VALS(y, 2, 2, 2, 2);
  wk_release(y);
  ck_assert_ptr_null(wk_pad(NULL, (int64_t[]){1, 1}, 2, "constant", 0));
  TU_FAILS_WITH(WK_ERR_NULL, "pad");
  wk_release(e);
  wk_release(s);
  wk_release(x);
  LEAK_END;
}
END_TEST

/* ---- classification losses ---------------------------------------------------------------------- */
/* Reference cross entropy / nll on input [N, C, S] values (logits when
 * from_logits, else log-probabilities). tgt: indices (NULL for probs). */
static void ref_class_loss(const double *x, int64_t N, int64_t C, int64_t S, bool from_logits, const double *tgt,
                           const double *prob, const double *w, int red, int64_t ignore, double ls, double *out) {
  double *lp = malloc(sizeof(double) * (size_t)(N * C * S + 1));
  for (int64_t n = 0; n < N; n++)
    for (int64_t s = 0; s < S; s++) {
      double mx = -INFINITY, sum = 0;
      for (int64_t c = 0; c < C; c++) mx = fmax(mx, x[(n * C + c) * S + s]);
      for (int64_t c = 0; c < C; c++) sum += exp(x[(n * C + c) * S + s] - mx);
      for (int64_t c = 0; c < C; c++) {
        int64_t i = (n * C + c) * S + s;
        lp[i] = from_logits ? x[i] - mx - log(sum) : x[i];
      }
    }
  double tot = 0, den = 0;
  for (int64_t n = 0; n < N; n++)
    for (int64_t s = 0; s < S; s++) {
      double l = 0, wt = 0;
      if (tgt) {
        int64_t t = (int64_t)tgt[n * S + s];
        if (t != ignore) {
          wt = w ? w[t] : 1;
          double nll = -wt * lp[(n * C + t) * S + s], sm = 0;
          for (int64_t c = 0; c < C; c++) sm += -(w ? w[c] : 1) * lp[(n * C + c) * S + s];
          l = (1 - ls) * nll + ls / (double)C * sm;
        }
      } else {
        for (int64_t c = 0; c < C; c++) {
          double q = prob[(n * C + c) * S + s] * (1 - ls) + ls / (double)C;
          l -= (w ? w[c] : 1) * q * lp[(n * C + c) * S + s];
        }
        wt = 1;
      }
      if (red == 0) out[n * S + s] = l;
      tot += l;
      den += wt;
    }
  if (red == 1) out[0] = tot / den;
  if (red == 2) out[0] = tot;
  free(lp);
}

static wk_tensor *ce_call(wk_tensor *x, wk_tensor *t, wk_tensor *w, int red, int64_t ignore, double ls) {
  wk_value a[6] = {WK_VT(x), WK_VT(t), WK_VT(w), WK_VI(red), WK_VI(ignore), WK_VF(ls)};
  return call("cross_entropy", a, 6, NULL, NULL);
}
static wk_tensor *nll_call(wk_tensor *x, wk_tensor *t, wk_tensor *w, int red, int64_t ignore) {
  wk_value a[5] = {WK_VT(x), WK_VT(t), WK_VT(w), WK_VI(red), WK_VI(ignore)};
  return call("nll_loss", a, 5, NULL, NULL);
}

START_TEST(test_nn_cross_entropy_random) {
  LEAK_START;
  uint64_t rs = 41;
  for (int seed = 0; seed < 36; seed++) {
    int shape_kind = seed % 3; /* [C], [N, C], [N, C, d1, d2] */
    int64_t sz[4], N, C, S = 1;
    int nd = shape_kind == 0 ? 1 : shape_kind == 1 ? 2 : 4;
    rand_shape(&rs, nd, 1, 5, sz);
    if (nd == 1) {
      N = 1;
      C = sz[0];
    } else {
      N = sz[0];
      C = sz[1];
      S = prod(sz, 2, nd);
    }
    bool prob = seed % 6 == 5, nll = !prob && seed % 7 == 3;
    wk_dtype dt = FLOATS[(seed / 3) % NFLOATS];
    int red = seed % 3 == 0 ? (seed / 3) % 3 : (seed / 2) % 3;
    bool use_w = (seed / 4) % 2;
    double ls = !nll && seed % 5 >= 3 ? 0.1 * (seed % 5) : 0;
    int64_t ignore = -100;
    wk_tensor *x0 = tu_rand(sz, nd, dt, -3, 3, (uint64_t)seed + 700);
    wk_tensor *x = seed % 4 == 1 ? nc(x0) : wk_retain(x0);
    wk_tensor *w = use_w ? tu_rand(&C, 1, dt, 0.2, 2, (uint64_t)seed + 1) : NULL;
    double *xv = tu_values(x0), *wv = w ? tu_values(w) : NULL;
    wk_tensor *t;
    double *tv;
    int64_t tsz[4];
    int tnd = 0;
    for (int i = 0; i < nd; i++)
      if (i != (nd >= 2 ? 1 : 0)) tsz[tnd++] = sz[i];
    if (prob) {
      wk_tensor *raw = tu_rand(sz, nd, WK_F64, 0, 1, (uint64_t)seed + 2);
      t = wk_softmax(raw, nd >= 2 ? 1 : 0);
      wk_release(raw);
    } else {
      t = tu_rand(tsz, tnd, WK_I64, 0, (double)C, (uint64_t)seed + 3);
      if (seed % 2 && wk_tensor_numel(t) > 1) { /* an ignored target */
        ignore = seed % 4 == 1 ? 0 : -100;
        int64_t zero[4] = {0};
        TU_OK(wk_tensor_set(t, zero, (double)ignore));
      }
    }
    tv = tu_values(t);
    int64_t rows = N * S;
    double *ref = malloc(sizeof(double) * (size_t)(rows + 1));
    double *xin = xv, *lpv = NULL;
    wk_tensor *in = x;
    if (nll) { /* nll_loss takes log-probabilities */
      in = wk_log_softmax(x, nd >= 2 ? 1 : 0);
      lpv = tu_values(in);
      xin = lpv;
    }
    ref_class_loss(xin, N, C, S, !nll, prob ? NULL : tv, prob ? tv : NULL, wv, red, ignore, ls, ref);
    wk_tensor *y = nll ? nll_call(in, t, w, red, ignore) : ce_call(in, t, w, red, ignore, ls);
    ck_assert_msg(y != NULL, "seed %d: %s", seed, wk_last_error_message());
    if (red == 0)
      check_shape(y, tsz, tnd);
    else
      ck_assert_int_eq(wk_tensor_dim(y), 0);
    ck_assert_int_eq(wk_tensor_dtype(y), prob ? wk_promote_types(dt, WK_F64) : dt);
    double tl = prob ? 1e-10 : tol(dt) * (dt == WK_F32 ? 10 : 4);
    TU_CLOSE(y, ref, red == 0 ? rows : 1, tl, tl);
    wk_release(y);
    if (nll) wk_release(in);
    free(lpv);
    free(ref);
    free(xv);
    free(wv);
    free(tv);
    wk_release(t);
    wk_release(w);
    wk_release(x);
    wk_release(x0);
  }
  LEAK_END;
}
END_TEST

START_TEST(test_nn_cross_entropy_cases) {
  LEAK_START;
  /* weighted mean divides by the weights of non-ignored targets */
  wk_tensor *lp = TU_T(WK_F64, (3, 2), -1, -2, -3, -4, -5, -6);
  wk_tensor *t = TU_T(WK_I64, (3), 1, 0, -100), *w = TU_T(WK_F64, (2), 2, 3);
  wk_tensor *y = nll_call(lp, t, w, 1, -100);
  TU_CLOSE(y, ((double[]){(3 * 2.0 + 2 * 3.0) / 5}), 1, 1e-14, 0);
  wk_release(y);
  y = nll_call(lp, t, w, 0, -100);
  TU_EQ_VALS(y, 6, 6, 0);
  wk_release(y);
  ck_assert_ptr_null(nll_call(lp, t, NULL, 2, 1)); /* -100 is no longer ignored */
  TU_FAILS_WITH(WK_ERR_INDEX, "Target -100 is out of bounds.");
  /* all ignored: mean is NaN as in PyTorch */
  wk_tensor *tall = TU_T(WK_I64, (3), -100, -100, -100);
  y = nll_call(lp, tall, NULL, 1, -100);
  TU_EQ_VALS(y, NAN);
  wk_release(y);
  /* a huge logit stays finite */
  wk_tensor *big = TU_T(WK_F32, (1, 2), 1000, 0), *t0 = TU_T(WK_I64, (1), 1);
  y = wk_cross_entropy(big, t0);
  TU_CLOSE(y, ((double[]){1000}), 1, 1e-6, 0);
  wk_release(y);
  /* int32 targets are accepted as class indices */
  wk_tensor *t32 = TU_T(WK_I32, (3), 1, 0, 1);
  y = nll_call(lp, t32, NULL, 2, 1);
  TU_EQ_VALS(y, 3);
  wk_release(y);
  y = nll_call(lp, t32, NULL, 2, -100);
  TU_EQ_VALS(y, 2 + 3 + 6);
  wk_release(y);
  /* errors */
  wk_tensor *x = tu_rand(WK_SHAPE(3, 5), WK_F32, -1, 1, 1);
  wk_tensor *t2 = TU_T(WK_I64, (2), 0, 1), *t7 = TU_T(WK_I64, (3), 0, 7, 1), *tf = TU_T(WK_F32, (3), 0, 1, 2);
  ck_assert_ptr_null(wk_cross_entropy(x, t2));
  TU_FAILS_WITH(WK_ERR_SHAPE, "Expected input batch_size (3) to match target batch_size (2).");
  ck_assert_ptr_null(wk_nll_loss(x, t2));
  TU_FAILS_WITH(WK_ERR_SHAPE, "Expected input batch_size (3) to match target batch_size (2).");
  ck_assert_ptr_null(wk_cross_entropy(x, t7));
  TU_FAILS_WITH(WK_ERR_INDEX, "Target 7 is out of bounds.");
  ck_assert_ptr_null(wk_nll_loss(x, t7));
  TU_FAILS_WITH(WK_ERR_INDEX, "Target 7 is out of bounds.");
  ck_assert_ptr_null(wk_cross_entropy(x, tf));
  TU_FAILS_WITH(WK_ERR_DTYPE, "class indices");
  ck_assert_ptr_null(ce_call(x, t, NULL, 1, -100, 1.5));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "label_smoothing must be between 0.0 and 1.0. Got: 1.5");
  ck_assert_ptr_null(ce_call(x, t, NULL, 3, -100, 0));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "reduction");
  ck_assert_ptr_null(ce_call(x, t, w, 1, -100, 0));
  TU_FAILS_WITH(WK_ERR_SHAPE, "weight tensor should be defined either for all 5 classes or no classes but got weight tensor of shape: [2]");
  wk_tensor *pi = TU_T(WK_I64, (3, 5), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  ck_assert_ptr_null(wk_cross_entropy(x, pi));
  TU_FAILS_WITH(WK_ERR_DTYPE, "Expected floating point type for target with class probabilities");
  wk_tensor *pf = tu_rand(WK_SHAPE(3, 5), WK_F32, 0, 1, 2);
  ck_assert_ptr_null(ce_call(x, pf, NULL, 1, 0, 0));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "ignore_index is not supported for floating point target");
  ck_assert_ptr_null(wk_nll_loss(x, pf));
  TU_FAILS_WITH(WK_ERR_DTYPE, "nll_loss");
  wk_tensor *xi = TU_T(WK_I64, (1, 2), 1, 2);
  ck_assert_ptr_null(wk_cross_entropy(xi, t0));
  TU_FAILS_WITH(WK_ERR_DTYPE, "cross_entropy");
  wk_tensor *x4 = tu_rand(WK_SHAPE(2, 3, 4, 5), WK_F32, -1, 1, 3);
  wk_tensor *t4 = TU_T(WK_I64, (2, 4), 0, 0, 0, 0, 0, 0, 0, 0);
  ck_assert_ptr_null(wk_cross_entropy(x4, t4));
  TU_FAILS_WITH(WK_ERR_SHAPE, "Expected target size [2, 4, 5], got [2, 4]");
  wk_tensor *s = wk_scalar_tensor(1, WK_F32);
  ck_assert_ptr_null(wk_cross_entropy(s, t0));
  TU_FAILS_WITH(WK_ERR_SHAPE, "1D or more");
  ck_assert_ptr_null(wk_cross_entropy(NULL, t0));
  TU_FAILS_WITH(WK_ERR_NULL, "cross_entropy");
  wk_release(s);
  wk_release(x4);
  wk_release(t4);
  wk_release(xi);
  wk_release(pf);
  wk_release(pi);
  wk_release(x);
  wk_release(t2);
  wk_release(t7);
  wk_release(tf);
  wk_release(t32);
  wk_release(big);
  wk_release(t0);
  wk_release(tall);
  wk_release(lp);
  wk_release(t);
  wk_release(w);
  LEAK_END;
}
END_TEST

/* Many rows on the pool: the reduced loss does not depend on the thread count. */
START_TEST(test_nn_loss_threads) {
  LEAK_START;
  int old = wk_num_threads();
  wk_tensor *x = tu_rand(WK_SHAPE(4000, 30), WK_F32, -3, 3, 5);
  wk_tensor *t = tu_rand(WK_SHAPE(4000), WK_I64, 0, 30, 6);
  wk_tensor *a = tu_rand(WK_SHAPE(300, 301), WK_F32, -3, 3, 7), *b = tu_rand(WK_SHAPE(300, 301), WK_F32, 0, 1, 8);
  double v[2][3];
  for (int k = 0; k < 2; k++) {
    TU_OK(wk_set_num_threads(k ? 4 : 1));
    wk_tensor *r[3] = {wk_cross_entropy(x, t), wk_mse_loss(a, b), wk_binary_cross_entropy_with_logits(a, b)};
    for (int i = 0; i < 3; i++) {
      TU_OK(wk_item(r[i], &v[k][i]));
      wk_release(r[i]);
    }
  }
  TU_OK(wk_set_num_threads(old));
  for (int i = 0; i < 3; i++) ck_assert(v[0][i] == v[1][i]);
  double *av = tu_values(a), *bv = tu_values(b), ref = 0;
  for (int i = 0; i < 300 * 301; i++) ref += (av[i] - bv[i]) * (av[i] - bv[i]);
  ck_assert_double_eq_tol(v[0][1], ref / (300 * 301), 1e-5);
  free(av);
  free(bv);
  wk_release(a);
  wk_release(b);
  wk_release(x);
  wk_release(t);
  LEAK_END;
}
END_TEST

/* ---- mse_loss / binary_cross_entropy_with_logits -------------------------------------------- */
static wk_tensor *mse_call(wk_tensor *x, wk_tensor *t, int red) {
  wk_value a[3] = {WK_VT(x), WK_VT(t), WK_VI(red)};
  return call("mse_loss", a, 3, NULL, NULL);
}
static wk_tensor *bce_call(wk_tensor *x, wk_tensor *t, wk_tensor *w, wk_tensor *pw, int red) {
  wk_value a[5] = {WK_VT(x), WK_VT(t), WK_VT(w), WK_VT(pw), WK_VI(red)};
  return call("binary_cross_entropy_with_logits", a, 5, NULL, NULL);
}

/* Value of a broadcast operand (shape bsz/bnd) at output index o of shape osz/ond. */
static double bval(const double *v, const int64_t *bsz, int bnd, const int64_t *osz, int ond, int64_t o) {
  int64_t idx[8], rem = o, off = 0;
  for (int d = ond - 1; d >= 0; d--) {
    idx[d] = rem % osz[d];
    rem /= osz[d];
  }
  for (int d = 0; d < bnd; d++) {
    int od = ond - bnd + d;
    off = off * bsz[d] + (bsz[d] == 1 ? 0 : idx[od]);
  }
  return v[off];
}

START_TEST(test_nn_mse_loss) {
  LEAK_START;
  uint64_t rs = 51;
  for (int seed = 0; seed < 18; seed++) {
    int nd = 1 + seed % 3;
    int64_t sz[3], tsz[3];
    rand_shape(&rs, nd, 1, 5, sz);
    memcpy(tsz, sz, sizeof sz);
    int tnd = nd;
    if (seed % 3 == 1) tsz[0] = 1;                 /* broadcast target */
    if (seed % 3 == 2 && nd > 1) tnd = nd - 1;     /* fewer dims */
    const int64_t *tsp = tnd < nd ? sz + 1 : tsz;
    wk_dtype dt = FLOATS[seed % NFLOATS], tdt = seed % 5 == 0 ? WK_F64 : dt;
    wk_tensor *x0 = tu_rand(sz, nd, dt, -2, 2, (uint64_t)seed + 800), *t = tu_rand(tsp, tnd, tdt, -2, 2, (uint64_t)seed + 900);
    wk_tensor *x = seed % 2 ? nc(x0) : wk_retain(x0);
    double *xv = tu_values(x0), *tv = tu_values(t);
    int64_t n = prod(sz, 0, nd);
    double *ref = malloc(sizeof(double) * (size_t)n), tot = 0;
    for (int64_t i = 0; i < n; i++) {
      double d = xv[i] - bval(tv, tsp, tnd, sz, nd, i);
      ref[i] = d * d;
      tot += ref[i];
    }
    wk_dtype rt = wk_promote_types(dt, tdt);
    for (int red = 0; red < 3; red++) {
      wk_tensor *y = mse_call(x, t, red);
      ck_assert_ptr_nonnull(y);
      ck_assert_int_eq(wk_tensor_dtype(y), rt);
      double r = red == 1 ? tot / (double)n : tot;
      if (red == 0) {
        check_shape(y, sz, nd);
        TU_CLOSE(y, ref, n, tol(rt) * 4, tol(rt) * 4);
      } else {
        TU_CLOSE(y, &r, 1, tol(rt) * 4, tol(rt) * 4);
      }
      wk_release(y);
    }
    free(ref);
    free(xv);
    free(tv);
    wk_release(x);
    wk_release(x0);
    wk_release(t);
  }
  /* empty input: mean is NaN, sum is 0; the default reduction is mean */
  wk_tensor *e = wk_empty(WK_SHAPE(0, 2), (wk_options){.dtype = WK_F32});
  wk_tensor *y = mse_call(e, e, 1);
  TU_EQ_VALS(y, NAN);
  wk_release(y);
  y = mse_call(e, e, 2);
  TU_EQ_VALS(y, 0);
  wk_release(y);
  wk_tensor *a = TU_T(WK_F32, (2), 1, 2), *b = TU_T(WK_F32, (2), 0, 0);
  y = wk_mse_loss(a, b);
  TU_EQ_VALS(y, 2.5);
  wk_release(y);
  /* errors */
  wk_tensor *ai = TU_T(WK_I64, (2), 1, 2), *c = TU_T(WK_F32, (3), 1, 2, 3);
  ck_assert_ptr_null(wk_mse_loss(ai, ai));
  TU_FAILS_WITH(WK_ERR_DTYPE, "mse_loss");
  ck_assert_ptr_null(wk_mse_loss(a, c));
  TU_FAILS_WITH(WK_ERR_SHAPE, "mse_loss");
  ck_assert_ptr_null(mse_call(a, b, -1));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "reduction");
  ck_assert_ptr_null(wk_mse_loss(a, NULL));
  TU_FAILS_WITH(WK_ERR_NULL, "mse_loss");
  wk_release(ai);
  wk_release(c);
  wk_release(a);
  wk_release(b);
  wk_release(e);
  LEAK_END;
}
END_TEST

START_TEST(test_nn_bce_with_logits) {
  LEAK_START;
  uint64_t rs = 61;
  for (int seed = 0; seed < 20; seed++) {
    int nd = 1 + seed % 3;
    int64_t sz[3];
    rand_shape(&rs, nd, 1, 5, sz);
    wk_dtype dt = FLOATS[seed % NFLOATS];
    wk_tensor *x0 = tu_rand(sz, nd, dt, -8, 8, (uint64_t)seed + 1000), *t = tu_rand(sz, nd, dt, 0, 1, (uint64_t)seed + 1100);
    wk_tensor *x = seed % 3 == 1 ? nc(x0) : wk_retain(x0);
    /* weight broadcast over the last dim; pos_weight per class (last dim) */
    int64_t last = sz[nd - 1], one = 1;
    wk_tensor *w = seed % 2 ? tu_rand(seed % 4 == 1 ? &one : &last, 1, dt, 0.5, 2, (uint64_t)seed + 1) : NULL;
    wk_tensor *pw = seed % 4 >= 2 ? tu_rand(&last, 1, dt, 0.5, 3, (uint64_t)seed + 2) : NULL;
    double *xv = tu_values(x0), *tv = tu_values(t), *wv = w ? tu_values(w) : NULL, *pv = pw ? tu_values(pw) : NULL;
    int64_t n = prod(sz, 0, nd);
    double *ref = malloc(sizeof(double) * (size_t)n), tot = 0;
    for (int64_t i = 0; i < n; i++) {
      double xx = xv[i], tt = tv[i], c = i % last;
      double pwc = pv ? pv[(int64_t)c] : 1;
      /* -[pw t log s(x) + (1 - t) log(1 - s(x))], computed directly in double */
      double l = -(pwc * tt * log(1 / (1 + exp(-xx))) + (1 - tt) * log(1 / (1 + exp(xx))));
      if (wv) l *= wk_tensor_numel(w) == 1 ? wv[0] : wv[(int64_t)c];
      ref[i] = l;
      tot += l;
    }
    for (int red = 0; red < 3; red++) {
      wk_tensor *y = bce_call(x, t, w, pw, red);
      ck_assert_msg(y != NULL, "%s", wk_last_error_message());
      ck_assert_int_eq(wk_tensor_dtype(y), dt);
      double r = red == 1 ? tot / (double)n : tot, tl = dt == WK_F64 ? 1e-10 : tol(dt) * 4;
      if (red == 0) {
        check_shape(y, sz, nd);
        TU_CLOSE(y, ref, n, tl, tl);
      } else {
        TU_CLOSE(y, &r, 1, tl, tl);
      }
      wk_release(y);
    }
    free(ref);
    free(xv);
    free(tv);
    free(wv);
    free(pv);
    wk_release(x);
    wk_release(x0);
    wk_release(t);
    wk_release(w);
    wk_release(pw);
  }
  /* extreme logits stay finite */
  wk_tensor *x = TU_T(WK_F32, (4), 100, -100, 100, -100), *t = TU_T(WK_F32, (4), 0, 1, 1, 0);
  wk_tensor *y = bce_call(x, t, NULL, NULL, 0);
  TU_CLOSE(y, ((double[]){100, 100, 0, 0}), 4, 1e-6, 1e-6);
  wk_release(y);
  y = wk_binary_cross_entropy_with_logits(x, t);
  TU_CLOSE(y, ((double[]){50}), 1, 1e-6, 0);
  wk_release(y);
  /* errors */
  wk_tensor *t3 = TU_T(WK_F32, (3), 0, 1, 1), *w5 = TU_T(WK_F32, (5), 1, 1, 1, 1, 1);
  wk_tensor *w24 = TU_T(WK_F32, (2, 4), 1, 1, 1, 1, 1, 1, 1, 1);
  ck_assert_ptr_null(wk_binary_cross_entropy_with_logits(x, t3));
  TU_FAILS_WITH(WK_ERR_SHAPE, "Target size ([3]) must be the same as input size ([4])");
  ck_assert_ptr_null(bce_call(x, t, w5, NULL, 1));
  TU_FAILS_WITH(WK_ERR_SHAPE, "weight of shape [5] cannot be broadcast to the input shape [4]");
  ck_assert_ptr_null(bce_call(x, t, NULL, w24, 1));
  TU_FAILS_WITH(WK_ERR_SHAPE, "pos_weight of shape [2, 4]");
  ck_assert_ptr_null(bce_call(x, t, NULL, NULL, 7));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "reduction");
  wk_tensor *xi = TU_T(WK_I64, (4), 1, 2, 3, 4);
  ck_assert_ptr_null(wk_binary_cross_entropy_with_logits(xi, xi));
  TU_FAILS_WITH(WK_ERR_DTYPE, "binary_cross_entropy_with_logits");
  wk_release(xi);
  wk_release(t3);
  wk_release(w5);
  wk_release(w24);
  wk_release(x);
  wk_release(t);
  LEAK_END;
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("check_ops_nn");
  struct {
    const char *name;
    const TTest *tests[8];
  } cases[] = {
      {"softmax", {test_nn_softmax_random, test_nn_softmax_edge, test_nn_softmax_dtype_arg, test_nn_softmax_threads}},
      {"batch_norm", {test_nn_batch_norm_train, test_nn_batch_norm_eval, test_nn_batch_norm_running}},
      {"layer_norm", {test_nn_layer_norm_random, test_nn_layer_norm_errors}},
      {"dropout", {test_nn_dropout_modes, test_nn_dropout_stats, test_nn_dropout_reproducible}},
      {"embedding", {test_nn_embedding}},
      {"pad", {test_nn_pad_random, test_nn_pad_cases}},
      {"class_losses", {test_nn_cross_entropy_random, test_nn_cross_entropy_cases, test_nn_loss_threads}},
      {"pointwise_losses", {test_nn_mse_loss, test_nn_bce_with_logits}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    TCase *tc = tcase_create(cases[i].name);
    tcase_add_checked_fixture(tc, tu_setup, NULL);
    tcase_set_timeout(tc, 60);
    for (int k = 0; k < 8 && cases[i].tests[k]; k++) tcase_add_test(tc, cases[i].tests[k]);
    suite_add_tcase(s, tc);
  }
  return s;
}
TU_MAIN(make_suite)
