/* check_nn_modes: Conv1d/Conv2d padding modes (reflect, replicate, circular),
 * Embedding max_norm / norm_type and Dropout2d against PyTorch 1.13
 * (tests/nn_ref/gen_layers.py -> layers_ref.h). */
#include "nn_ref/lr_util.h"

#define F64_TOL 1e-10
#define F32_TOL 1e-5

typedef struct {
  const char *name;
  int dims;
  int64_t in, out, k;
  wk_conv2d_opts o;
} conv_ref;
static const conv_ref CONVS[] = {
    {"conv2d_reflect", 2, 2, 3, 3, {.padding = 1, .padding_mode = "reflect"}},
    {"conv2d_replicate_s2", 2, 2, 4, 3, {.stride = 2, .padding = 2, .padding_w = 1, .padding_mode = "replicate"}},
    {"conv2d_circular_g2", 2, 4, 2, 3,
     {.kernel_w = 2, .padding = 1, .padding_w = 2, .dilation = 1, .dilation_w = 2, .groups = 2, .padding_mode = "circular"}},
    {"conv1d_reflect_same", 1, 2, 3, 4, {.padding_same = true, .padding_mode = "reflect"}},
    {"conv2d_circular_same", 2, 2, 2, 3, {.padding_same = true, .padding_mode = "circular", .no_bias = true}},
};

START_TEST(test_conv_padding_modes_match_torch) {
  for (int dti = 0; dti < 2; dti++)
    for (size_t i = 0; i < sizeof CONVS / sizeof CONVS[0]; i++) {
      const conv_ref *r = &CONVS[i];
      wk_dtype dt = dti ? WK_F32 : WK_F64;
      double tol = dti ? F32_TOL : F64_TOL;
      wk_scope_begin();
      const lr_case *c = lr_case_get(r->name);
      wk_module *m = r->dims == 1 ? wk_nn_conv1d(r->in, r->out, r->k, r->o) : wk_nn_conv2d(r->in, r->out, r->k, r->o);
      lr_load(m, c, dt);
      wk_tensor *x = lr_leaf(c, "x", dt);
      wk_tensor *y = wk_module_forward(m, x);
      LR_CLOSE(y, c, "y", tol);
      TU_OK(wk_backward(lr_dot(c, "gy", y)));
      LR_CLOSE(wk_tensor_grad(x), c, "g.x", tol);
      lr_param_grads(m, c, tol);
      wk_module_release(m);
      wk_scope_end();
    }
}
END_TEST

START_TEST(test_embedding_max_norm_matches_torch) {
  static const struct {
    const char *name;
    int64_t num, dim;
    wk_embedding_opts o;
  } cs[] = {{"embedding_max_norm", 10, 4, {.max_norm = 1.5}},
            {"embedding_max_norm_p1_pad", 6, 3, {.has_padding_idx = true, .padding_idx = 2, .max_norm = 1.0, .norm_type = 1.0}}};
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
    wk_scope_begin();
    const lr_case *c = lr_case_get(cs[i].name);
    wk_module *m = wk_nn_embedding(cs[i].num, cs[i].dim, cs[i].o);
    lr_load(m, c, WK_F64);
    wk_tensor *y = wk_module_forward(m, lr_t(c, "idx", WK_I64));
    LR_CLOSE(y, c, "y", F64_TOL);
    LR_CLOSE(wk_module_param(m, "weight"), c, "after.weight", F64_TOL); /* renormalised in place */
    TU_OK(wk_backward(lr_dot(c, "gy", y)));
    lr_param_grads(m, c, F64_TOL);
    wk_module_release(m);
    wk_scope_end();
  }
}
END_TEST

START_TEST(test_dropout2d) {
  wk_scope_begin();
  wk_module *d = wk_nn_dropout2d(0.4);
  TU_NOTNULL(d);
  wk_tensor *x = wk_ones(WK_SHAPE(8, 16, 3, 5), (wk_options){.dtype = WK_F64});
  wk_tensor *y = wk_module_forward(d, x);
  double *v = tu_values(y);
  int dropped = 0;
  for (int ch = 0; ch < 8 * 16; ch++) {
    double first = v[ch * 15];
    ck_assert(first == 0 || fabs(first - 1 / 0.6) < 1e-15);
    for (int e = 1; e < 15; e++) ck_assert(v[ch * 15 + e] == first); /* whole channels */
    dropped += first == 0;
  }
  free(v);
  ck_assert_msg(dropped > 128 * 0.25 && dropped < 128 * 0.55, "dropped %d of 128 channels", dropped);
  /* gradient: the same mask */
  TU_OK(wk_tensor_set_requires_grad(x, true));
  wk_tensor *y2 = wk_module_forward(d, x);
  TU_OK(wk_backward(wk_sum(y2)));
  double *g = tu_values(wk_tensor_grad(x)), *w = tu_values(y2);
  for (int i = 0; i < 8 * 16 * 15; i++) ck_assert(g[i] == w[i]);
  free(g);
  free(w);
  /* unbatched (C, H, W), eval is the identity */
  wk_tensor *u = wk_module_forward(d, wk_ones(WK_SHAPE(16, 2, 2), (wk_options){0}));
  ck_assert_int_eq(wk_tensor_dim(u), 3);
  TU_OK(wk_module_train(d, false));
  double *e = tu_values(wk_module_forward(d, x));
  for (int i = 0; i < 8 * 16 * 15; i++) ck_assert(e[i] == 1);
  free(e);
  TU_OK(wk_module_train(d, true));
  ck_assert_ptr_null(wk_module_forward(d, wk_ones(WK_SHAPE(4, 4), (wk_options){0})));
  TU_FAILS_WITH(WK_ERR_SHAPE, "Dropout2d: expected a 3D (C, H, W) or 4D (N, C, H, W) input");
  ck_assert_ptr_null(wk_nn_dropout2d(1.5));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "dropout probability");
  wk_module_release(d);
  wk_scope_end();
}
END_TEST

START_TEST(test_modes_repr_and_errors) {
  wk_scope_begin();
  wk_module *mods[5] = {wk_nn_conv2d(2, 3, 3, (wk_conv2d_opts){.padding = 1, .padding_mode = "reflect", .no_bias = true}),
                        wk_nn_conv1d(2, 2, 3, (wk_conv1d_opts){.padding_mode = "circular"}), wk_nn_dropout2d(0.25),
                        wk_nn_embedding(5, 2, (wk_embedding_opts){.max_norm = 1.0}),
                        wk_nn_embedding(5, 2, (wk_embedding_opts){.max_norm = 2.0, .norm_type = 1.0})};
  lr_repr_eq(wk_nn_sequential(mods, 5), "conv_modes");
  ck_assert_ptr_null(wk_nn_conv2d(2, 3, 3, (wk_conv2d_opts){.padding_mode = "mirror"}));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "padding_mode must be one of ['zeros', 'reflect', 'replicate', 'circular']");
  ck_assert_ptr_null(wk_nn_conv_transpose2d(2, 3, 3, (wk_conv2d_opts){.padding_mode = "reflect"}));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "Only \"zeros\" padding mode is supported for ConvTranspose2d");
  ck_assert_ptr_null(wk_nn_embedding(5, 2, (wk_embedding_opts){.max_norm = -1}));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "max_norm");
  /* reflect padding larger than the input: the pad op's error */
  wk_module *c = wk_nn_conv2d(1, 1, 3, (wk_conv2d_opts){.padding = 3, .padding_mode = "reflect"});
  ck_assert_ptr_null(wk_module_forward(c, wk_ones(WK_SHAPE(1, 1, 3, 3), (wk_options){0})));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "Padding size should be less than the corresponding input dimension");
  wk_module_release(c);
  /* an out-of-range index with max_norm: the lookup's error, nothing renormalised out of bounds */
  wk_module *e = wk_nn_embedding(5, 2, (wk_embedding_opts){.max_norm = 0.1});
  ck_assert_ptr_null(wk_module_forward(e, wk_tensor_from_data((const int64_t[]){1, 7}, WK_I64, WK_SHAPE(2))));
  ck_assert_int_ne(wk_last_error(), WK_OK);
  wk_clear_error();
  wk_module_release(e);
  wk_scope_end();
}
END_TEST

static Suite *nn_modes_suite(void) {
  Suite *s = suite_create("nn_modes");
  TCase *tc = tcase_create("modes");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_conv_padding_modes_match_torch);
  tcase_add_test(tc, test_embedding_max_norm_matches_torch);
  tcase_add_test(tc, test_dropout2d);
  tcase_add_test(tc, test_modes_repr_and_errors);
  suite_add_tcase(s, tc);
  return s;
}

TU_MAIN(nn_modes_suite)
