/* check_ops_pointwise_backward: the fused pointwise backward ops that the
 * derivative formulas of relu, sigmoid, tanh and gelu call —
 * threshold_backward, sigmoid_backward, tanh_backward, gelu_backward — on the
 * cpu against float64 element-wise references (NaN and exact-threshold
 * values included), gelu's against finite differences of gelu; f32/f16/bf16
 * agreement and result dtypes; broadcast and strided operands; the core's
 * composite versions (what a device without its own kernels runs) against
 * the cpu kernels; errors and leaks. */
#include <math.h>
#include <stdlib.h>

#include "testutil.h"

#define LEAK_START int64_t live0_ = wk_live_tensors()
#define LEAK_END ck_assert_int_eq(wk_live_tensors(), live0_)

/* op(g, x[, threshold]) through the dispatcher: a new reference or NULL. */
static wk_tensor *call(const char *op, wk_tensor *g, wk_tensor *x, double threshold) {
  wk_value a[3] = {WK_VT(g), WK_VT(x), WK_VF(threshold)}, o[4];
  int n = strcmp(op, "threshold_backward") == 0 ? 3 : 2;
  if (strcmp(op, "gelu_backward") == 0) {
    a[2] = WK_VS("none");
    n = 3;
  }
  return wk_call(op, a, n, o) == WK_OK ? o[0].u.t : NULL;
}

static double ref(const char *op, double g, double x, double t) {
  if (!strcmp(op, "threshold_backward")) return x > t ? g : 0;
  if (!strcmp(op, "sigmoid_backward")) return g * ((1 - x) * x);
  return g * (1 - x * x); /* tanh_backward */
}

/* Same shape and values (NaN equal to NaN) up to float32 rounding: another
 * backend (onednn) may take the contiguous call and the cpu kernel the strided one. */
static void assert_same(wk_tensor *a, wk_tensor *b, const char *what) {
  ck_assert_int_eq(wk_tensor_numel(a), wk_tensor_numel(b));
  double *x = tu_values(a), *y = tu_values(b);
  for (int64_t i = 0; i < wk_tensor_numel(a); i++)
    ck_assert_msg(fabs(x[i] - y[i]) <= 1e-6 * (1 + fabs(y[i])) || (isnan(x[i]) && isnan(y[i])), "%s[%lld]: %.9g vs %.9g",
                  what, (long long)i, x[i], y[i]);
  free(x);
  free(y);
}

static const char *const fused[3] = {"threshold_backward", "sigmoid_backward", "tanh_backward"};

START_TEST(test_pwb_values_f64) {
  LEAK_START;
  const int64_t n = 64;
  double *gv = malloc(sizeof(double) * n), *xv = malloc(sizeof(double) * n);
  uint64_t s = 7;
  for (int64_t i = 0; i < n; i++) {
    gv[i] = 4 * tu_uniform(&s) - 2;
    xv[i] = 2 * tu_uniform(&s) - 1;
  }
  xv[3] = 0;         /* exactly the threshold: relu's gradient is 0 there */
  xv[4] = 0.25;      /* exactly the other threshold */
  xv[5] = NAN;       /* x NaN: threshold_backward gives 0 (NaN > t is false) */
  gv[6] = NAN;       /* g NaN where x > t passes through */
  xv[6] = 0.5;
  gv[7] = INFINITY;  /* g inf where x <= t gives 0, not NaN */
  xv[7] = -0.5;
  wk_tensor *g = tu_tensor(gv, WK_F64, WK_SHAPE(8, 8)), *x = tu_tensor(xv, WK_F64, WK_SHAPE(8, 8));
  for (int k = 0; k < 3; k++)
    for (int ti = 0; ti < 2; ti++) {
      double t = ti ? 0.25 : 0;
      if (k && ti) continue;
      wk_tensor *r = call(fused[k], g, x, t);
      ck_assert_msg(r, "%s: %s", fused[k], wk_last_error_message());
      ck_assert_int_eq(wk_tensor_dtype(r), WK_F64);
      const double *rv = wk_tensor_data(r);
      for (int64_t i = 0; i < n; i++) {
        double want = ref(fused[k], gv[i], xv[i], t);
        if (isnan(want))
          ck_assert_msg(isnan(rv[i]), "%s[%lld] = %g, want NaN", fused[k], (long long)i, rv[i]);
        else
          ck_assert_msg(rv[i] == want, "%s[%lld] = %.17g, want %.17g (t=%g)", fused[k], (long long)i, rv[i], want, t);
      }
      wk_release(r);
    }
  wk_release(g);
  wk_release(x);
  free(gv);
  free(xv);
  LEAK_END;
}
END_TEST

START_TEST(test_pwb_gelu_finite_differences) {
  LEAK_START;
  const char *modes[2] = {"none", "tanh"};
  wk_tensor *x = tu_rand(WK_SHAPE(5, 7), WK_F64, -3, 3, 11), *g = tu_rand(WK_SHAPE(5, 7), WK_F64, -1, 1, 12);
  for (int m = 0; m < 2; m++) {
    wk_value a[3] = {WK_VT(g), WK_VT(x), WK_VS(modes[m])}, o[4];
    TU_OK(wk_call("gelu_backward", a, 3, o));
    wk_tensor *r = o[0].u.t;
    const double *xv = wk_tensor_data(x), *gv = wk_tensor_data(g), *rv = wk_tensor_data(r);
    for (int64_t i = 0; i < 35; i++) {
      const double h = 1e-6;
      wk_tensor *xp = wk_scalar_tensor(xv[i] + h, WK_F64), *xm = wk_scalar_tensor(xv[i] - h, WK_F64);
      wk_tensor *yp = wk_gelu(xp, modes[m]), *ym = wk_gelu(xm, modes[m]);
      double a1, b1;
      TU_OK(wk_item(yp, &a1));
      TU_OK(wk_item(ym, &b1));
      double want = gv[i] * (a1 - b1) / (2 * h);
      ck_assert_msg(fabs(rv[i] - want) <= 1e-6 * (1 + fabs(want)), "gelu_backward(%s)[%lld] = %.12g, want %.12g",
                    modes[m], (long long)i, rv[i], want);
      wk_release(xp);
      wk_release(xm);
      wk_release(yp);
      wk_release(ym);
    }
    wk_release(r);
  }
  wk_release(x);
  wk_release(g);
  LEAK_END;
}
END_TEST

/* Low precision agrees with f64 and keeps the promoted dtype. */
START_TEST(test_pwb_dtypes) {
  LEAK_START;
  const wk_dtype dts[3] = {WK_F32, WK_F16, WK_BF16};
  const double tol[3] = {1e-6, 2e-3, 1.6e-2};
  wk_tensor *g = tu_rand(WK_SHAPE(33, 5), WK_F64, -1, 1, 21), *x = tu_rand(WK_SHAPE(33, 5), WK_F64, -1, 1, 22);
  for (int k = 0; k < 3; k++) {
    wk_tensor *want = call(fused[k], g, x, 0);
    for (int d = 0; d < 3; d++) {
      wk_tensor *gl = wk_to_dtype(g, dts[d]), *xl = wk_to_dtype(x, dts[d]);
      /* round the inputs first so the comparison measures the op, not the inputs */
      wk_tensor *g64 = wk_to_dtype(gl, WK_F64), *x64 = wk_to_dtype(xl, WK_F64);
      wk_tensor *w2 = call(fused[k], g64, x64, 0);
      wk_tensor *r = call(fused[k], gl, xl, 0);
      ck_assert_msg(r, "%s %s: %s", fused[k], wk_dtype_name(dts[d]), wk_last_error_message());
      ck_assert_int_eq(wk_tensor_dtype(r), dts[d]);
      double *rv = tu_values(r), *wv = tu_values(w2);
      for (int64_t i = 0; i < 165; i++)
        ck_assert_msg(fabs(rv[i] - wv[i]) <= tol[d] * (1 + fabs(wv[i])), "%s %s [%lld]: %g vs %g", fused[k],
                      wk_dtype_name(dts[d]), (long long)i, rv[i], wv[i]);
      free(rv);
      free(wv);
      wk_release(gl), wk_release(xl), wk_release(g64), wk_release(x64), wk_release(w2), wk_release(r);
    }
    /* mixed: f32 grad with f64 saved value promotes to f64 */
    wk_tensor *g32 = wk_to_dtype(g, WK_F32), *m = call(fused[k], g32, x, 0);
    ck_assert_int_eq(wk_tensor_dtype(m), WK_F64);
    wk_release(g32);
    wk_release(m);
    wk_release(want);
  }
  wk_release(g);
  wk_release(x);
  LEAK_END;
}
END_TEST

/* Broadcast and strided operands give the same numbers as contiguous copies. */
START_TEST(test_pwb_broadcast_and_strides) {
  LEAK_START;
  wk_tensor *g = tu_rand(WK_SHAPE(6, 4), WK_F32, -1, 1, 31), *xt = tu_rand(WK_SHAPE(4, 6), WK_F32, -1, 1, 32);
  wk_tensor *x = wk_t(xt), *xc = wk_contiguous(x), *row = tu_rand(WK_SHAPE(4), WK_F32, -1, 1, 33);
  wk_tensor *rowe = wk_expand(row, WK_SHAPE(6, 4)), *rowx = wk_contiguous(rowe);
  for (int k = 0; k < 3; k++) {
    wk_tensor *a = call(fused[k], g, x, 0.1), *b = call(fused[k], g, xc, 0.1);
    ck_assert_msg(a && b, "%s: %s", fused[k], wk_last_error_message());
    assert_same(a, b, fused[k]);
    wk_tensor *c = call(fused[k], g, row, 0.1), *d = call(fused[k], g, rowx, 0.1);
    ck_assert_msg(c && d, "%s broadcast: %s", fused[k], wk_last_error_message());
    assert_same(c, d, fused[k]);
    wk_release(a), wk_release(b), wk_release(c), wk_release(d);
  }
  wk_release(g), wk_release(xt), wk_release(x), wk_release(xc), wk_release(row), wk_release(rowe), wk_release(rowx);
  LEAK_END;
}
END_TEST

START_TEST(test_pwb_errors) {
  LEAK_START;
  wk_tensor *gi = wk_ones(WK_SHAPE(3), WK_OPTS(.dtype = WK_I64)), *xi = wk_ones(WK_SHAPE(3), WK_OPTS(.dtype = WK_I32));
  wk_tensor *g = wk_ones(WK_SHAPE(3), (wk_options){0}), *x5 = wk_ones(WK_SHAPE(5), (wk_options){0});
  for (int k = 0; k < 3; k++) {
    ck_assert_ptr_null(call(fused[k], gi, xi, 0));
    TU_FAILS_WITH(WK_ERR_DTYPE, "expected floating point tensors");
    ck_assert_ptr_null(call(fused[k], g, x5, 0));
    ck_assert_int_eq(wk_last_error(), WK_ERR_SHAPE);
    wk_clear_error();
    ck_assert_ptr_null(call(fused[k], NULL, x5, 0));
    wk_clear_error();
  }
  wk_release(gi), wk_release(xi), wk_release(g), wk_release(x5);
  LEAK_END;
}
END_TEST

/* The core's composites (what a device without these kernels runs) agree
 * with the element-wise reference: this test denies the cpu plugin's kernels
 * and disables the onednn plugin before it initialises the library
 * (WICK_DENY_KERNELS, WICK_DISABLE_PLUGINS), so the composites answer. Each test runs in its own process (CK_FORK), so nothing leaks out. */
START_TEST(test_pwb_composites_match) {
  setenv("WICK_DENY_KERNELS", "cpu:threshold_backward,cpu:sigmoid_backward,cpu:tanh_backward", 1);
  setenv("WICK_DISABLE_PLUGINS", "onednn", 1);
  ck_assert_int_eq(wk_init(), WK_OK);
  for (int k = 0; k < 3; k++) {
    wk_op *op = wk_op_find(fused[k]);
    ck_assert_ptr_nonnull(op);
    /* the highest-priority kernel a cpu call can use (other devices' kernels may come first) */
    const char *name = NULL;
    for (int i = 0; i < wk_op_num_kernels(op) && !name; i++) {
      int32_t dev;
      const char *nm;
      TU_OK(wk_op_kernel_info(op, i, &dev, NULL, &nm, NULL));
      if (dev == WK_DEVICE_CPU || dev == WK_DEVICE_DEFAULT) name = nm;
    }
    ck_assert_ptr_nonnull(name);
    ck_assert_str_eq(name, "core.composite");
  }
  wk_tensor *g = tu_rand(WK_SHAPE(4, 9), WK_F64, -1, 1, 41), *x = tu_rand(WK_SHAPE(9), WK_F64, -1, 1, 42);
  const double *gv = wk_tensor_data(g), *xv = wk_tensor_data(x);
  for (int k = 0; k < 3; k++) {
    wk_tensor *r = call(fused[k], g, x, 0.2);
    ck_assert_msg(r, "%s: %s", fused[k], wk_last_error_message());
    ck_assert_int_eq(wk_tensor_dim(r), 2);
    const double *rv = wk_tensor_data(r);
    for (int i = 0; i < 36; i++) {
      double want = ref(fused[k], gv[i], xv[i % 9], 0.2);
      ck_assert_msg(fabs(rv[i] - want) <= 1e-15 * (1 + fabs(want)), "%s[%d]: composite %.17g vs %.17g", fused[k], i,
                    rv[i], want);
    }
    wk_release(r);
  }
  wk_release(g);
  wk_release(x);
  unsetenv("WICK_DENY_KERNELS");
  unsetenv("WICK_DISABLE_PLUGINS");
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("ops_pointwise_backward");
  TCase *tc = tcase_create("cpu");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_test(tc, test_pwb_values_f64);
  tcase_add_test(tc, test_pwb_gelu_finite_differences);
  tcase_add_test(tc, test_pwb_dtypes);
  tcase_add_test(tc, test_pwb_broadcast_and_strides);
  tcase_add_test(tc, test_pwb_errors);
  suite_add_tcase(s, tc);
  TCase *tc2 = tcase_create("composite"); /* initialises the library itself */
  tcase_add_test(tc2, test_pwb_composites_match);
  suite_add_tcase(s, tc2);
  return s;
}

TU_MAIN(make_suite)
