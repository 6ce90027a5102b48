/* check_nn_surface: what the op sweep cannot check for issue 21's nn and loss composites
 * (core/composite_nn_surface.c): errors that depend on values (a probability outside [0, 1], a
 * class index out of range, a negative variance) name the fault and leave no result; the meta
 * device accepts the same calls (it has no values); and a training-style use (loss, backward)
 * releases everything it made. */
#include "testutil.h"

static wk_value call_err(const char *op, const wk_value *a, int n, wk_status want, const char *needle) {
  wk_value o[WK_MAX_OUTS] = {{0}};
  wk_status s = wk_call(op, a, n, o);
  ck_assert_msg(s == want, "%s: status %s, want %s (%s)", op, wk_status_name(s), wk_status_name(want),
                wk_last_error_message());
  ck_assert_msg(strstr(wk_last_error_message(), needle), "%s: message '%s' lacks '%s'", op, wk_last_error_message(),
                needle);
  return o[0];
}

START_TEST(test_bce_range) {
  int64_t s[1] = {4};
  const double p[4] = {0.2, 1.5, 0.5, 0.1}, pn[4] = {0.2, -0.01, 0.5, 0.1}, y[4] = {0, 1, 1, 0};
  wk_tensor *x = tu_tensor(p, WK_F32, s, 1), *xn = tu_tensor(pn, WK_F32, s, 1), *t = tu_tensor(y, WK_F32, s, 1);
  call_err("binary_cross_entropy", (const wk_value[]){WK_VT(x), WK_VT(t), WK_VNONE, WK_VI(1)}, 4, WK_ERR_INVALID_ARG,
           "all elements of input should be between 0 and 1");
  call_err("binary_cross_entropy", (const wk_value[]){WK_VT(xn), WK_VT(t), WK_VNONE, WK_VI(0)}, 4, WK_ERR_INVALID_ARG,
           "between 0 and 1");
  /* the meta device has no values: it gives the result's shape */
  wk_device meta;
  TU_OK(wk_device_parse("meta", &meta));
  wk_tensor *xm = wk_to_device(x, meta), *tm = wk_to_device(t, meta);
  ck_assert_ptr_nonnull(xm);
  wk_tensor *r = wkx_binary_cross_entropy(xm, tm, NULL, 0);
  ck_assert_msg(r && wk_tensor_dim(r) == 1 && wk_tensor_size(r, 0) == 4, "meta: %s", wk_last_error_message());
  wk_release(r);
  wk_release(xm);
  wk_release(tm);
  wk_release(x);
  wk_release(xn);
  wk_release(t);
}
END_TEST

START_TEST(test_multi_margin_target_range) {
  int64_t s[2] = {2, 3}, ts[1] = {2};
  const double xv[6] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6}, tv[2] = {1, 3}, tneg[2] = {-1, 0};
  wk_tensor *x = tu_tensor(xv, WK_F32, s, 2), *t = tu_tensor(tv, WK_I64, ts, 1), *tn = tu_tensor(tneg, WK_I64, ts, 1);
  call_err("multi_margin_loss", (const wk_value[]){WK_VT(x), WK_VT(t), WK_VI(1), WK_VI(1), WK_VNONE, WK_VI(1)}, 6,
           WK_ERR_INDEX, "target out of range");
  call_err("multi_margin_loss", (const wk_value[]){WK_VT(x), WK_VT(tn), WK_VI(1), WK_VI(1), WK_VNONE, WK_VI(1)}, 6,
           WK_ERR_INDEX, "[0, 3)");
  wk_release(x);
  wk_release(t);
  wk_release(tn);
}
END_TEST

START_TEST(test_gaussian_negative_var) {
  int64_t s[2] = {2, 2};
  const double xv[4] = {0.1, 0.2, 0.3, 0.4}, vv[4] = {1, 0.5, -0.25, 2};
  wk_tensor *x = tu_tensor(xv, WK_F64, s, 2), *v = tu_tensor(vv, WK_F64, s, 2);
  call_err("gaussian_nll_loss", (const wk_value[]){WK_VT(x), WK_VT(x), WK_VT(v), WK_VB(false), WK_VF(1e-6), WK_VI(1)}, 6,
           WK_ERR_INVALID_ARG, "var has negative entry");
  wk_release(x);
  wk_release(v);
}
END_TEST

/* Forward and backward of every loss in a loop: no tensor outlives its scope. */
START_TEST(test_no_leak_in_training_use) {
  int64_t s[2] = {3, 4}, t1[1] = {3};
  int64_t live0 = wk_live_tensors();
  for (int it = 0; it < 3; it++) {
    wk_scope_begin();
    wk_tensor *x = wk_rand(s, 2, (wk_options){.dtype = WK_F64}), *y = wk_rand(s, 2, (wk_options){.dtype = WK_F64});
    wk_tensor *cls = wk_randint(0, 4, t1, 1, (wk_options){.dtype = WK_I64});
    wk_tensor *pm = wk_sub_scalar(wk_mul_scalar(wk_to_dtype(wk_randint(0, 2, t1, 1, (wk_options){0}), WK_F64), 2), 1);
    TU_OK(wk_tensor_set_requires_grad(x, true));
    wk_tensor *parts[] = {
        wkx_l1_loss(x, y, 1), wkx_smooth_l1_loss(x, y, 1, 0.5), wkx_huber_loss(x, y, 2, 1.0),
        wkx_soft_margin_loss(x, y, 1), wkx_kl_div(x, y, 1, false), wkx_binary_cross_entropy(x, y, NULL, 1),
        wkx_poisson_nll_loss(x, y, true, true, 1e-8, 1), wkx_gaussian_nll_loss(x, y, y, true, 1e-6, 1),
        wkx_margin_ranking_loss(x, y, y, 0.1, 1), wkx_hinge_embedding_loss(x, y, 1.0, 1),
        wkx_cosine_embedding_loss(x, y, pm, 0.0, 1), wkx_triplet_margin_loss(x, y, x, 1.0, 2, 1e-6, true, 1),
        wkx_multilabel_soft_margin_loss(x, y, NULL, 1), wkx_multi_margin_loss(x, cls, WK_VI(2), WK_VF(1), NULL, 1),
        wk_sum(wkx_cosine_similarity(x, y, 1, 1e-8)), wk_sum(wkx_pairwise_distance(x, y, 2, 1e-6, false)),
        wk_sum(wkx_cdist(x, y, 2, NULL))};
    wk_tensor *tot = NULL;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
      ck_assert_msg(parts[i] != NULL, "loss %zu: %s", i, wk_last_error_message());
      tot = tot ? wk_add(tot, parts[i]) : parts[i];
    }
    TU_OK(wk_backward(tot));
    ck_assert_ptr_nonnull(wk_tensor_grad(x));
    TU_OK(wk_tensor_zero_grad(x, true));
    wk_scope_end();
  }
  ck_assert_int_eq(wk_live_tensors(), live0);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("nn_surface");
  TCase *tc = tcase_create("values");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_test(tc, test_bce_range);
  tcase_add_test(tc, test_multi_margin_target_range);
  tcase_add_test(tc, test_gaussian_negative_var);
  tcase_add_test(tc, test_no_leak_in_training_use);
  suite_add_tcase(s, tc);
  return s;
}
TU_MAIN(make_suite)
