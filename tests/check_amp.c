/* check_amp: the amp plugin's autocast regions. Result dtypes are those
 * PyTorch 1.13.1 gives for the same calls under torch.autocast("cpu",
 * dtype=torch.bfloat16) (printed by Debian's python3-torch, 2026-12-02);
 * lower-precision results equal the op on bf16-rounded inputs; gradients
 * reach float32 parameters in float32; regions nest, are per thread, and
 * errors name what was wrong. */
#include <pthread.h>
#include <wick/amp.h>

#include "testutil.h"

#define DT(t) wk_tensor_dtype(t)
#define BF(t) wk_to_dtype(t, WK_BF16)

static wk_tensor *randn(const int64_t *s, int nd, uint64_t seed) { return tu_rand(s, nd, WK_F32, -1, 1, seed); }

/* dtype of each call's result: PyTorch 1.13.1's under autocast(cpu, bf16). */
START_TEST(test_amp_result_dtypes_like_pytorch) {
  wk_scope_begin();
  wk_tensor *a = randn(WK_SHAPE(4, 4), 1), *ab = BF(a), *x = randn(WK_SHAPE(2, 2, 5, 5), 2);
  wk_tensor *w = randn(WK_SHAPE(3, 2, 3, 3), 3), *b = randn(WK_SHAPE(3), 4);
  wk_tensor *tgt = wk_arange(0, 4, 1, (wk_options){.dtype = WK_I64});
  wk_tensor *pair[2] = {ab, a};
  TU_OK(wk_autocast_begin("cpu", WK_BF16));
  ck_assert(wk_autocast_enabled("cpu"));
  ck_assert_int_eq(wk_autocast_dtype("cpu"), WK_BF16);
  struct {
    const char *what;
    wk_tensor *r;
    wk_dtype want;
  } cases[] = {
      {"mm", wk_mm(a, a), WK_BF16},
      {"addmm", wk_addmm(a, a, a, 1, 1), WK_BF16},
      {"matmul", wk_matmul(a, a), WK_BF16},
      {"bmm", wk_bmm(wk_unsqueeze(a, 0), wk_unsqueeze(a, 0)), WK_BF16},
      {"linear", wk_linear(a, a, wk_select(a, 0, 0)), WK_BF16},
      {"conv2d", wk_conv2d(x, w, b, 1, 0, 1, 1), WK_BF16},
      {"softmax f32", wk_softmax(a, 1), WK_F32},
      {"softmax bf16", wk_softmax(ab, 1), WK_BF16},
      {"log_softmax bf16", wk_log_softmax(ab, 1), WK_BF16},
      {"cross_entropy bf16", wk_cross_entropy(ab, tgt), WK_F32},
      {"nll_loss bf16", wk_nll_loss(ab, tgt), WK_F32},
      {"mse_loss bf16", wk_mse_loss(ab, ab), WK_F32},
      {"bce_with_logits bf16", wk_binary_cross_entropy_with_logits(ab, wk_sigmoid(ab)), WK_F32},
      {"batch_norm bf16 input, f32 params",
       wk_batch_norm(BF(x), wk_ones(WK_SHAPE(2), (wk_options){0}), wk_zeros(WK_SHAPE(2), (wk_options){0}),
                     wk_zeros(WK_SHAPE(2), (wk_options){0}), wk_ones(WK_SHAPE(2), (wk_options){0}), true, 0.1, 1e-5,
                     NULL),
       WK_BF16},
      {"sum bf16", wk_sum(ab), WK_BF16},
      {"exp bf16", wk_exp(ab), WK_BF16},
      {"relu bf16", wk_relu(ab), WK_BF16},
      {"add bf16 + f32", wk_add(ab, a), WK_F32},
      {"cat bf16, f32", wk_cat(pair, 2, 0), WK_F32},
      {"stack bf16, f32", wk_stack(pair, 2, 0), WK_F32},
      {"max_pool2d bf16", wk_max_pool2d(BF(x), 2, 0, 0), WK_BF16},
      {"mm f64", wk_mm(wk_to_dtype(a, WK_F64), wk_to_dtype(a, WK_F64)), WK_F64},
      {"prod bf16", wk_prod(ab), WK_F32},
  };
  TU_OK(wk_autocast_end("cpu"));
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ck_assert_msg(cases[i].r != NULL, "%s failed under autocast: %s", cases[i].what, wk_last_error_message());
    ck_assert_msg(DT(cases[i].r) == cases[i].want, "%s: got %s, PyTorch gives %s", cases[i].what,
                  wk_dtype_name(DT(cases[i].r)), wk_dtype_name(cases[i].want));
  }
  /* outside the region nothing is cast */
  ck_assert(!wk_autocast_enabled("cpu"));
  ck_assert_int_eq(DT(wk_mm(a, a)), WK_F32);
  wk_scope_end();
}
END_TEST

/* A lower-precision op equals the same op on bf16-rounded inputs. */
START_TEST(test_amp_lower_equals_op_on_rounded_inputs) {
  wk_scope_begin();
  wk_tensor *a = randn(WK_SHAPE(16, 32), 5), *b = randn(WK_SHAPE(32, 8), 6);
  TU_OK(wk_autocast_begin("cpu", WK_BF16));
  wk_tensor *r = wk_mm(a, b);
  TU_OK(wk_autocast_end("cpu"));
  wk_tensor *ref = wk_mm(BF(a), BF(b));
  TU_NOTNULL(r);
  ck_assert_int_eq(DT(r), WK_BF16);
  double *rv = tu_values(r), *fv = tu_values(ref);
  for (int i = 0; i < 16 * 8; i++) ck_assert_msg(rv[i] == fv[i], "element %d: %g vs %g", i, rv[i], fv[i]);
  free(rv);
  free(fv);
  wk_scope_end();
}
END_TEST

/* Linear layer + loss under autocast: the loss is f32, the gradients are f32
 * like the parameters and close to a float32 run's (bf16 tolerance). */
START_TEST(test_amp_gradients_reach_f32_params) {
  wk_scope_begin();
  wk_tensor *x = randn(WK_SHAPE(8, 16), 7), *w = randn(WK_SHAPE(4, 16), 8), *b = randn(WK_SHAPE(4), 9);
  wk_tensor *tgt = TU_T(WK_I64, (8), 0, 1, 2, 3, 0, 1, 2, 3);
  wk_tensor_set_requires_grad(w, true);
  wk_tensor_set_requires_grad(b, true);
  TU_OK(wk_autocast_begin("cpu", WK_BF16));
  wk_tensor *logits = wk_linear(x, w, b);
  wk_tensor *loss = wk_cross_entropy(logits, tgt);
  TU_OK(wk_autocast_end("cpu"));
  TU_NOTNULL(loss);
  ck_assert_int_eq(DT(logits), WK_BF16);
  ck_assert_int_eq(DT(loss), WK_F32);
  TU_OK(wk_backward(loss));
  /* new handles (owned by the scope) that outlive zero_grad below */
  wk_tensor *gw = wk_tensor_grad(w), *gb = wk_tensor_grad(b);
  TU_NOTNULL(gw);
  ck_assert_int_eq(DT(gw), WK_F32);
  ck_assert_int_eq(DT(gb), WK_F32);
  /* the same in float32 */
  TU_OK(wk_tensor_zero_grad(w, true));
  TU_OK(wk_tensor_zero_grad(b, true));
  TU_OK(wk_backward(wk_cross_entropy(wk_linear(x, w, b), tgt)));
  double *g16 = tu_values(gw), *g32 = tu_values(wk_tensor_grad(w));
  for (int i = 0; i < 4 * 16; i++)
    ck_assert_msg(fabs(g16[i] - g32[i]) <= 2e-2 * (fabs(g32[i]) + 0.05), "dW[%d]: %g (autocast) vs %g (f32)", i,
                  g16[i], g32[i]);
  free(g16);
  free(g32);
  wk_scope_end();
}
END_TEST

/* backward() called inside the region: the backward ops are not autocast
 * (gradients keep the dtypes of their forward values). */
START_TEST(test_amp_backward_inside_region) {
  wk_scope_begin();
  wk_tensor *a = randn(WK_SHAPE(4, 4), 10);
  wk_tensor_set_requires_grad(a, true);
  TU_OK(wk_autocast_begin("cpu", WK_BF16));
  wk_tensor *loss = wk_sum(wk_to_dtype(wk_mm(a, a), WK_F32));
  TU_OK(wk_backward(loss));
  TU_OK(wk_autocast_end("cpu"));
  ck_assert_int_eq(DT(wk_tensor_grad(a)), WK_F32);
  wk_scope_end();
}
END_TEST

START_TEST(test_amp_nesting) {
  wk_scope_begin();
  wk_tensor *a = randn(WK_SHAPE(3, 3), 11);
  TU_OK(wk_autocast_begin("cpu", WK_DTYPE_DEFAULT)); /* cpu's default: bf16 */
  ck_assert_int_eq(DT(wk_mm(a, a)), WK_BF16);
  TU_OK(wk_autocast_begin("cpu", WK_F16));
  ck_assert_int_eq(wk_autocast_dtype("cpu"), WK_F16);
  ck_assert_int_eq(DT(wk_mm(a, a)), WK_F16);
  TU_OK(wk_autocast_end("cpu"));
  ck_assert_int_eq(DT(wk_mm(a, a)), WK_BF16);
  TU_OK(wk_autocast_end("cpu"));
  ck_assert_int_eq(DT(wk_mm(a, a)), WK_F32);
  wk_scope_end();
}
END_TEST

static void *other_thread(void *p) {
  wk_tensor *a = p;
  wk_tensor *r = wk_mm(a, a);
  wk_dtype d = r ? DT(r) : WK_DTYPE_DEFAULT;
  wk_release(r);
  return (void *)(intptr_t)d;
}

START_TEST(test_amp_regions_are_per_thread) {
  wk_tensor *a = randn(WK_SHAPE(3, 3), 12);
  TU_OK(wk_autocast_begin("cpu", WK_BF16));
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, other_thread, a), 0);
  void *res;
  pthread_join(th, &res);
  TU_OK(wk_autocast_end("cpu"));
  ck_assert_int_eq((int)(intptr_t)res, WK_F32);
  wk_release(a);
}
END_TEST

START_TEST(test_amp_errors) {
  ck_assert_int_eq(wk_autocast_end("cpu"), WK_ERR_STATE);
  TU_FAILS_WITH(WK_ERR_STATE, "no autocast region is open for 'cpu'");
  ck_assert_int_eq(wk_autocast_begin("cpu", WK_F32), WK_ERR_DTYPE);
  TU_FAILS_WITH(WK_ERR_DTYPE, "only bfloat16 and float16");
  ck_assert_int_eq(wk_autocast_begin("npu", WK_BF16), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "unknown device type 'npu'");
  ck_assert_int_eq(wk_autocast_begin(NULL, WK_BF16), WK_ERR_NULL);
  TU_FAILS_WITH(WK_ERR_NULL, "device_type is NULL");
  ck_assert(!wk_autocast_enabled("npu"));
  ck_assert(!wk_autocast_enabled("cpu"));
}
END_TEST

/* In-place forms keep their dtypes; a failing cast leaves no region behind. */
START_TEST(test_amp_inplace_not_cast) {
  wk_scope_begin();
  wk_tensor *a = randn(WK_SHAPE(3, 3), 13);
  TU_OK(wk_autocast_begin("cpu", WK_BF16));
  wk_tensor *r = wk_relu_(a);
  TU_OK(wk_autocast_end("cpu"));
  ck_assert_ptr_eq(r, a);
  ck_assert_int_eq(DT(a), WK_F32);
  wk_scope_end();
}
END_TEST

/* The cpu kernels' bf16 paths (add/sub/mul, threshold/tanh_backward,
 * batch_norm and its backward) give
 * the bits of computing in f32 and casting once, NaN/inf/-0 and
 * broadcasting included. */
static int bf16_mismatches(wk_tensor *p, wk_tensor *q) {
  ck_assert_int_eq(wk_tensor_dtype(p), WK_BF16);
  ck_assert_int_eq(wk_tensor_numel(p), wk_tensor_numel(q));
  const uint16_t *a = wk_tensor_data(p), *b = wk_tensor_data(q);
  int bad = 0;
  for (int64_t i = 0; i < wk_tensor_numel(p); i++) bad += a[i] != b[i];
  return bad;
}

START_TEST(test_amp_bf16_kernels_match_f32_path) {
  wk_scope_begin();
  wk_tensor *a = tu_rand(WK_SHAPE(3, 257), WK_F32, -300, 300, 21), *b = tu_rand(WK_SHAPE(257), WK_F32, -2, 2, 22);
  float *pa = wk_tensor_data(a);
  pa[0] = NAN, pa[1] = INFINITY, pa[2] = -INFINITY, pa[3] = 3e38f, pa[4] = -0.0f;
  wk_tensor *ab = BF(a), *bb = BF(b), *af = wk_to_dtype(ab, WK_F32), *bf = wk_to_dtype(bb, WK_F32);
  ck_assert_int_eq(bf16_mismatches(wk_add(ab, bb), BF(wk_add(af, bf))), 0);
  ck_assert_int_eq(bf16_mismatches(wk_sub(ab, bb), BF(wk_sub(af, bf))), 0);
  ck_assert_int_eq(bf16_mismatches(wk_mul(ab, bb), BF(wk_mul(af, bf))), 0);
  wk_tensor *xb = wk_contiguous(wk_expand(bb, WK_SHAPE(3, 257))), *xf = wk_to_dtype(xb, WK_F32);
  const char *ops[2] = {"threshold_backward", "tanh_backward"};
  for (int k = 0; k < 2; k++) {
    wk_value a1[3] = {WK_VT(ab), WK_VT(xb), WK_VF(0.25)}, a2[3] = {WK_VT(af), WK_VT(xf), WK_VF(0.25)}, o1[1], o2[1];
    TU_OK(wk_call(ops[k], a1, k == 0 ? 3 : 2, o1));
    TU_OK(wk_call(ops[k], a2, k == 0 ? 3 : 2, o2));
    ck_assert_msg(bf16_mismatches(o1[0].u.t, BF(o2[0].u.t)) == 0, "%s", ops[k]);
  }
  /* batch_norm (training and eval) on a bf16 input with f32 parameters */
  wk_tensor *x4 = BF(tu_rand(WK_SHAPE(4, 257, 5, 7), WK_F32, -30, 30, 25)), *x4f = wk_to_dtype(x4, WK_F32);
  wk_tensor *bw = tu_rand(WK_SHAPE(257), WK_F32, 0.5, 2, 23), *bbias = tu_rand(WK_SHAPE(257), WK_F32, -1, 1, 24);
  for (int train = 0; train < 2; train++) {
    wk_tensor *rm1 = wk_zeros(WK_SHAPE(257), (wk_options){0}), *rv1 = wk_ones(WK_SHAPE(257), (wk_options){0});
    wk_tensor *rm2 = wk_zeros(WK_SHAPE(257), (wk_options){0}), *rv2 = wk_ones(WK_SHAPE(257), (wk_options){0});
    wk_tensor *y1 = wk_batch_norm(x4, bw, bbias, rm1, rv1, train, 0.1, 1e-5, NULL);
    wk_tensor *y2 = wk_batch_norm(x4f, bw, bbias, rm2, rv2, train, 0.1, 1e-5, NULL);
    TU_NOTNULL(y1);
    TU_NOTNULL(y2);
    ck_assert_msg(bf16_mismatches(y1, BF(y2)) == 0, "batch_norm, training %d", train);
    /* its backward from the same statistics: grad_input bf16 against f32 then cast */
    wk_tensor *go = BF(tu_rand(WK_SHAPE(4, 257, 5, 7), WK_F32, -1, 1, 26 + train)), *gof = wk_to_dtype(go, WK_F32);
    wk_tensor *sm = tu_rand(WK_SHAPE(257), WK_F32, -1, 1, 28), *si = tu_rand(WK_SHAPE(257), WK_F32, 0.5, 2, 29);
    int64_t mask[3] = {1, 1, 1};
    wk_value b1[10] = {WK_VT(go), WK_VT(x4), WK_VT(bw), WK_VT(rm1), WK_VT(rv1), WK_VT(sm), WK_VT(si), WK_VB(train),
                       WK_VF(1e-5), WK_VINTS(mask, 3)};
    wk_value b2[10] = {WK_VT(gof), WK_VT(x4f), WK_VT(bw), WK_VT(rm1), WK_VT(rv1), WK_VT(sm), WK_VT(si), WK_VB(train),
                       WK_VF(1e-5), WK_VINTS(mask, 3)};
    wk_value o1[3], o2[3];
    TU_OK(wk_call("batch_norm_backward", b1, 10, o1));
    TU_OK(wk_call("batch_norm_backward", b2, 10, o2));
    ck_assert_msg(bf16_mismatches(o1[0].u.t, BF(o2[0].u.t)) == 0, "batch_norm_backward, training %d", train);
    double *w1 = tu_values(o1[1].u.t), *w2 = tu_values(o2[1].u.t);
    for (int c = 0; c < 257; c++) ck_assert_msg(w1[c] == w2[c], "grad_weight[%d]: %g vs %g", c, w1[c], w2[c]);
    free(w1);
    free(w2);
  }
  wk_scope_end();
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("amp");
  TCase *tc = tcase_create("autocast");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_test(tc, test_amp_result_dtypes_like_pytorch);
  tcase_add_test(tc, test_amp_lower_equals_op_on_rounded_inputs);
  tcase_add_test(tc, test_amp_gradients_reach_f32_params);
  tcase_add_test(tc, test_amp_backward_inside_region);
  tcase_add_test(tc, test_amp_nesting);
  tcase_add_test(tc, test_amp_regions_are_per_thread);
  tcase_add_test(tc, test_amp_errors);
  tcase_add_test(tc, test_amp_inplace_not_cast);
  tcase_add_test(tc, test_amp_bf16_kernels_match_f32_path);
  suite_add_tcase(s, tc);
  return s;
}
TU_MAIN(make_suite)
