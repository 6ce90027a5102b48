/* check_profiler: the profiler plugin's service: exact call counts for
 * forward and backward ops, self time never above total, a composite's parts
 * counted under their own names, start/stop/reset, the table's layout and
 * snprintf-like truncation, and errors for unknown ops. */
#include <wick/profiler.h>

#include "testutil.h"

static uint64_t calls_of(const char *op) {
  uint64_t c = 0;
  double self = 0, total = 0;
  if (wk_profiler_op_stats(op, &c, &self, &total) != WK_OK) {
    wk_clear_error();
    return 0;
  }
  ck_assert_msg(self >= 0 && self <= total + 1e-3, "%s: self %.3f us above total %.3f us", op, self, total);
  return c;
}

START_TEST(test_profiler_counts_calls) {
  wk_scope_begin();
  wk_tensor *a = wk_ones(WK_SHAPE(4, 4), (wk_options){0}), *b = wk_ones(WK_SHAPE(4, 4), (wk_options){0});
  TU_OK(wk_profiler_start());
  for (int i = 0; i < 10; i++) TU_NOTNULL(wk_add(a, b));
  for (int i = 0; i < 3; i++) TU_NOTNULL(wk_mm(a, b));
  TU_OK(wk_profiler_stop());
  ck_assert_uint_eq(calls_of("add"), 10);
  ck_assert_uint_eq(calls_of("mm"), 3);
  /* stopped: nothing more is counted */
  TU_NOTNULL(wk_add(a, b));
  ck_assert_uint_eq(calls_of("add"), 10);
  /* reset clears; start clears too */
  wk_profiler_reset();
  ck_assert_uint_eq(calls_of("add"), 0);
  TU_OK(wk_profiler_start());
  TU_NOTNULL(wk_add(a, b));
  TU_OK(wk_profiler_stop());
  ck_assert_uint_eq(calls_of("add"), 1);
  ck_assert_uint_eq(calls_of("mm"), 0);
  wk_scope_end();
}
END_TEST

/* The layer sits below autograd: the backward ops the engine runs count. */
START_TEST(test_profiler_sees_backward) {
  wk_scope_begin();
  wk_tensor *x = wk_randn(WK_SHAPE(8, 8), (wk_options){0});
  wk_tensor_set_requires_grad(x, true);
  TU_OK(wk_profiler_start());
  wk_tensor *loss = wk_sum(wk_relu(x));
  TU_OK(wk_backward(loss));
  TU_OK(wk_profiler_stop());
  ck_assert_uint_eq(calls_of("relu"), 1);
  ck_assert_uint_eq(calls_of("sum"), 1);
  ck_assert_uint_ge(calls_of("threshold_backward"), 1);
  wk_scope_end();
}
END_TEST

/* linear is a composite on the cpu: its parts count under their own names,
 * and its self time excludes theirs. */
START_TEST(test_profiler_nested_self_time) {
  wk_scope_begin();
  wk_tensor *x = wk_randn(WK_SHAPE(64, 256), (wk_options){0}), *w = wk_randn(WK_SHAPE(128, 256), (wk_options){0});
  wk_tensor *b = wk_randn(WK_SHAPE(128), (wk_options){0});
  TU_OK(wk_profiler_start());
  for (int i = 0; i < 5; i++) TU_NOTNULL(wk_linear(x, w, b));
  TU_OK(wk_profiler_stop());
  uint64_t c = 0;
  double self = 0, total = 0;
  TU_OK(wk_profiler_op_stats("linear", &c, &self, &total));
  ck_assert_uint_eq(c, 5);
  ck_assert_msg(total > 0 && self <= total, "linear: self %.3f total %.3f", self, total);
  wk_scope_end();
}
END_TEST

START_TEST(test_profiler_table) {
  wk_scope_begin();
  wk_tensor *a = wk_ones(WK_SHAPE(3), (wk_options){0});
  TU_OK(wk_profiler_start());
  for (int i = 0; i < 4; i++) TU_NOTNULL(wk_mul(a, a));
  TU_NOTNULL(wk_exp(a));
  TU_OK(wk_profiler_stop());
  size_t n = wk_profiler_table(NULL, 0, WK_PROFILER_SORT_CALLS, 0);
  ck_assert_uint_gt(n, 0);
  char *buf = malloc(n + 1);
  ck_assert_uint_eq(wk_profiler_table(buf, n + 1, WK_PROFILER_SORT_CALLS, 0), n);
  ck_assert_uint_eq(strlen(buf), n);
  ck_assert_ptr_nonnull(strstr(buf, "Name"));
  ck_assert_ptr_nonnull(strstr(buf, "# of Calls"));
  ck_assert_ptr_nonnull(strstr(buf, "Self CPU time total:"));
  char *mul = strstr(buf, "\nmul "), *exp_ = strstr(buf, "\nexp ");
  ck_assert_msg(mul && exp_ && mul < exp_, "sorted by calls, mul (4) comes before exp (1):\n%s", buf);
  /* truncated like snprintf: same length reported, NUL-terminated */
  char small[16];
  ck_assert_uint_eq(wk_profiler_table(small, sizeof small, WK_PROFILER_SORT_SELF, 0), n);
  ck_assert_uint_eq(strlen(small), sizeof small - 1);
  /* a row limit of 1 keeps only the first op */
  wk_profiler_table(buf, n + 1, WK_PROFILER_SORT_CALLS, 1);
  ck_assert_ptr_nonnull(strstr(buf, "\nmul "));
  ck_assert_ptr_null(strstr(buf, "\nexp "));
  free(buf);
  wk_scope_end();
}
END_TEST

START_TEST(test_profiler_errors) {
  wk_profiler_reset();
  ck_assert_int_eq(wk_profiler_op_stats("no_such_op", NULL, NULL, NULL), WK_ERR_NOT_FOUND);
  TU_FAILS_WITH(WK_ERR_NOT_FOUND, "'no_such_op' was not called");
  ck_assert_int_eq(wk_profiler_op_stats(NULL, NULL, NULL, NULL), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "op name is NULL");
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("profiler");
  TCase *tc = tcase_create("service");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_test(tc, test_profiler_counts_calls);
  tcase_add_test(tc, test_profiler_sees_backward);
  tcase_add_test(tc, test_profiler_nested_self_time);
  tcase_add_test(tc, test_profiler_table);
  tcase_add_test(tc, test_profiler_errors);
  suite_add_tcase(s, tc);
  return s;
}
TU_MAIN(make_suite)
