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

START_TEST(test_max_unpool2d_index_range) {
  int64_t s[3] = {1, 1, 2}, o[2] = {2, 2};
  const double xv[2] = {1, 2}, iv[2] = {0, 4}, ineg[2] = {-1, 0};
  wk_tensor *x = tu_tensor(xv, WK_F32, s, 3), *i = tu_tensor(iv, WK_I64, s, 3), *in = tu_tensor(ineg, WK_I64, s, 3);
  call_err("max_unpool2d", (const wk_value[]){WK_VT(x), WK_VT(i), WK_VINTS(o, 2)}, 3, WK_ERR_INDEX,
           "invalid max index");
  call_err("max_unpool2d", (const wk_value[]){WK_VT(x), WK_VT(in), WK_VINTS(o, 2)}, 3, WK_ERR_INDEX, "[0, 4)");
  wk_release(x);
  wk_release(i);
  wk_release(in);
}
END_TEST

START_TEST(test_embedding_bag_offsets) {
  int64_t ws[2] = {4, 2}, n3 = 3, n2 = 2;
  const double wv[8] = {0}, iv[3] = {0, 1, 2}, o1[2] = {1, 2}, o2[2] = {0, 5}, o3[3] = {0, 2, 1};
  wk_tensor *w = tu_tensor(wv, WK_F32, ws, 2), *i = tu_tensor(iv, WK_I64, &n3, 1);
  wk_tensor *a = tu_tensor(o1, WK_I64, &n2, 1), *b = tu_tensor(o2, WK_I64, &n2, 1), *d = tu_tensor(o3, WK_I64, &n3, 1);
  call_err("embedding_bag", (const wk_value[]){WK_VT(w), WK_VT(i), WK_VT(a), WK_VI(0), WK_VNONE, WK_VB(false), WK_VNONE}, 7,
           WK_ERR_INVALID_ARG, "offsets[0] has to be 0");
  call_err("embedding_bag", (const wk_value[]){WK_VT(w), WK_VT(i), WK_VT(b), WK_VI(0), WK_VNONE, WK_VB(false), WK_VNONE}, 7,
           WK_ERR_INVALID_ARG, "can not be greater than input's length");
  call_err("embedding_bag", (const wk_value[]){WK_VT(w), WK_VT(i), WK_VT(d), WK_VI(1), WK_VNONE, WK_VB(false), WK_VNONE}, 7,
           WK_ERR_INVALID_ARG, "non-decreasing");
  wk_release(w);
  wk_release(i);
  wk_release(a);
  wk_release(b);
  wk_release(d);
}
END_TEST

/* ctc_loss through log_softmax: the logits' gradient equals PyTorch 1.13.1's (whose ctc backward returns the
 * logits' gradient directly; the gradient with respect to log_probs itself is checked by check_torch_ref). */
START_TEST(test_ctc_loss_logits_grad) {
  int64_t s[3] = {6, 2, 4}, n2 = 2, t2[2] = {2, 2};
  double zv[48];
  for (int i = 0; i < 48; i++) zv[i] = sin(-1.0 + 2.0 * i / 47.0);
  const double tgv[4] = {1, 2, 3, 3}, ilv[2] = {6, 5}, tlv[2] = {2, 2};
  const double want[48] = {-0.25053814261199292, -0.26207150722286665, 0.252888266097681, 0.25972138373717851, -0.083223146993849972, 0.24589698234396773, 0.25355461795738082, -0.41622845330749858, -0.10896421560041662, -0.33284739782302336, 0.17832777409115988, 0.26348383933228015, -0.21809205600672796, 0.24488085157693382, 0.25455759462101596, -0.28134639019122187, -0.093254346784941392, -0.18550859149353371, 0.013067692581373566, 0.26569524569710151, -0.3539558421992674, 0.24446301844531385, 0.25505010621681451, -0.14555728246286093, -0.089470540451240588, 0.017546723778255419, -0.19416170229368476, 0.26608551896666993, -0.21890882144087676, 0.24470327666713998, 0.2549881282492632, -0.28078258347552637, -0.10353941052402989, 0.17505128131365455, -0.33611946059764164, 0.26460758980801702, -0.082564854673222304, 0.24557064891764827, 0.25437374288163817, -0.41737953712606407, -0.25304004878581943, 0.24620587371221322, -0.25460944581384087, 0.2614436208874471, 0, 0, 0, 0};
  wk_scope_begin();
  wk_tensor *z = tu_tensor(zv, WK_F64, s, 3), *tg = tu_tensor(tgv, WK_I64, t2, 2);
  wk_tensor *il = tu_tensor(ilv, WK_I64, &n2, 1), *tl = tu_tensor(tlv, WK_I64, &n2, 1);
  TU_OK(wk_tensor_set_requires_grad(z, true));
  wk_tensor *loss = wkx_ctc_loss(wk_log_softmax(z, 2), tg, il, tl, 0, 2, false);
  ck_assert_msg(loss != NULL, "%s", wk_last_error_message());
  double v = 0;
  TU_OK(wk_item(loss, &v));
  ck_assert_msg(fabs(v - 8.389378105186623) < 1e-10, "ctc loss %.17g, PyTorch 8.389378105186623", v);
  TU_OK(wk_backward(loss));
  tu_assert_close_(wk_tensor_grad(z), want, 48, 1e-9, 1e-12, "logits grad", __LINE__);
  wk_scope_end();
}
END_TEST

/* instance_norm with input statistics moves the running statistics towards the batch averages of the
 * per-instance mean and unbiased variance (PyTorch 1.13.1's values for this input). */
START_TEST(test_instance_norm_running_stats) {
  int64_t s[3] = {2, 3, 4}, c3[1] = {3};
  double xv[24];
  for (int i = 0; i < 24; i++) xv[i] = sin((double)i);
  const double m0[3] = {0.1, -0.2, 0.3}, v0[3] = {1.0, 0.5, 2.0};
  const double m1[3] = {0.16540944335929098, -0.23971416287761377, 0.25879986475557937};
  const double v1[3] = {0.864920358765861, 0.47639794831841636, 1.749637171205312};
  wk_tensor *x = tu_tensor(xv, WK_F64, s, 3), *rm = tu_tensor(m0, WK_F64, c3, 1), *rv = tu_tensor(v0, WK_F64, c3, 1);
  wk_tensor *y = wkx_instance_norm(x, NULL, NULL, rm, rv, true, 0.2, 1e-5);
  ck_assert_msg(y != NULL, "%s", wk_last_error_message());
  tu_assert_close_(rm, m1, 3, 1e-12, 1e-14, "running_mean", __LINE__);
  tu_assert_close_(rv, v1, 3, 1e-12, 1e-14, "running_var", __LINE__);
  wk_release(y);
  wk_release(x);
  wk_release(rm);
  wk_release(rv);
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

/* The nn composites in a forward/backward loop: no tensor outlives its scope. */
START_TEST(test_no_leak_nn_ops) {
  int64_t s4[4] = {2, 4, 5, 6}, s5[5] = {1, 2, 3, 4, 5}, w1[3] = {4, 4, 3}, w5[5] = {2, 3, 2, 2, 2};
  int64_t one = 1, two = 2, zero = 0, sz[2] = {7, 9}, k3[3] = {2, 2, 2}, o3[3] = {2, 3, 2};
  int64_t live0 = wk_live_tensors();
  for (int it = 0; it < 2; it++) {
    wk_scope_begin();
    wk_tensor *x = wk_randn(s4, 4, (wk_options){.dtype = WK_F64}), *v = wk_randn(s5, 5, (wk_options){.dtype = WK_F64});
    wk_tensor *w = wk_randn(w1, 3, (wk_options){.dtype = WK_F64}), *wt = wk_randn(w5, 5, (wk_options){.dtype = WK_F64});
    TU_OK(wk_tensor_set_requires_grad(x, true));
    TU_OK(wk_tensor_set_requires_grad(v, true));
    wk_tensor *x3 = wk_flatten(x, 2, 3), *idx = NULL;
    wk_tensor *parts[] = {
        wkx_interpolate(x, sz, 2, NULL, 0, "bicubic", (const bool[]){true}, NULL, false),
        wkx_interpolate(v, NULL, 0, (const double[]){1.5}, 1, "trilinear", NULL, NULL, false),
        wkx_conv1d(x3, w, NULL, &two, 1, &one, 1, &one, 1, 1),
        wkx_conv_transpose3d(v, wt, NULL, &two, 1, &one, 1, &one, 1, 1, &one, 1),
        wkx_max_pool3d_with_indices(v, k3, 3, NULL, 0, &zero, 1, &one, 1, true, &idx),
        wkx_adaptive_max_pool2d(x, o3, 2, NULL), wkx_avg_pool3d(v, k3, 3, &one, 1, &one, 1, false, false, NULL),
        wkx_group_norm(x, 2, NULL, NULL, 1e-5), wkx_instance_norm(v, NULL, NULL, NULL, NULL, true, 0.1, 1e-5),
        wkx_local_response_norm(x, 3, 1e-2, 0.75, 1), wkx_pixel_shuffle(x, 2), wkx_channel_shuffle(x, 2)};
    wk_tensor *tot = NULL;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
      ck_assert_msg(parts[i] != NULL, "op %zu: %s", i, wk_last_error_message());
      wk_tensor *si = wk_sum(parts[i]);
      tot = tot ? wk_add(tot, si) : si;
    }
    TU_OK(wk_backward(tot));
    ck_assert_ptr_nonnull(wk_tensor_grad(x));
    ck_assert_ptr_nonnull(wk_tensor_grad(v));
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
  tcase_add_test(tc, test_instance_norm_running_stats);
  tcase_add_test(tc, test_max_unpool2d_index_range);
  tcase_add_test(tc, test_embedding_bag_offsets);
  tcase_add_test(tc, test_ctc_loss_logits_grad);
  tcase_add_test(tc, test_no_leak_in_training_use);
  tcase_add_test(tc, test_no_leak_nn_ops);
  suite_add_tcase(s, tc);
  return s;
}
TU_MAIN(make_suite)
