/* check_nn_rnn: LSTM and GRU against PyTorch 1.13 (tests/nn_ref/gen_layers.py
 * -> layers_ref.h): outputs, h_n / c_n and every gradient, multi-layer,
 * bidirectional, batch_first, unbatched, and lengths against
 * pack_padded_sequence / pad_packed_sequence; printouts, errors. */
#include <wick/sdk/gradcheck.h>
#include "nn_ref/lr_util.h"

#define F64_TOL 1e-10
#define F32_TOL 1e-5

typedef struct {
  const char *name;
  int kind;
  int64_t in, H;
  wk_rnn_opts o;
} rnn_ref;
static const rnn_ref CASES[] = {
    {"lstm_2l_bi", WK_NN_LSTM, 4, 5, {.num_layers = 2, .bidirectional = true}},
    {"gru_2l_bi_bf", WK_NN_GRU, 4, 5, {.num_layers = 2, .bidirectional = true, .batch_first = true}},
    {"lstm_nobias", WK_NN_LSTM, 3, 4, {.no_bias = true}},
    {"gru_h0", WK_NN_GRU, 3, 4, {.num_layers = 3}},
    {"lstm_lengths_bi_bf", WK_NN_LSTM, 4, 5, {.bidirectional = true, .batch_first = true}},
    {"gru_lengths_2l_bi", WK_NN_GRU, 3, 4, {.num_layers = 2, .bidirectional = true}},
    {"lstm_unbatched", WK_NN_LSTM, 3, 4, {.num_layers = 2}},
    {"lstm_proj_2l_bi", WK_NN_LSTM, 4, 6, {.num_layers = 2, .bidirectional = true, .proj_size = 3}},
    {"lstm_proj_lengths_bf", WK_NN_LSTM, 3, 5, {.batch_first = true, .proj_size = 2, .no_bias = true}},
};

static wk_module *make(const rnn_ref *r) {
  return r->kind == WK_NN_LSTM ? wk_nn_lstm(r->in, r->H, r->o) : wk_nn_gru(r->in, r->H, r->o);
}

static void check_case(const rnn_ref *r, wk_dtype dt, double tol) {
  wk_scope_begin();
  const lr_case *c = lr_case_get(r->name);
  wk_module *m = make(r);
  lr_load(m, c, dt);
  wk_tensor *x = lr_leaf(c, "x", dt);
  wk_tensor *h0 = lr_find(c, "h0") ? lr_leaf(c, "h0", dt) : NULL, *c0 = lr_find(c, "c0") ? lr_leaf(c, "c0", dt) : NULL;
  wk_tensor *len = lr_find(c, "lengths") ? lr_t(c, "lengths", WK_I64) : NULL;
  wk_tensor *hn = NULL, *cn = NULL;
  wk_tensor *y = wk_nn_rnn_forward(m, x, h0, c0, len, &hn, r->kind == WK_NN_LSTM ? &cn : NULL);
  LR_CLOSE(y, c, "y", tol);
  LR_CLOSE(hn, c, "h", tol);
  wk_tensor *loss = wk_add(lr_dot(c, "gy", y), lr_dot(c, "gh", hn));
  if (r->kind == WK_NN_LSTM) {
    LR_CLOSE(cn, c, "c", tol);
    loss = wk_add(loss, lr_dot(c, "gc", cn));
  }
  TU_OK(wk_backward(loss));
  LR_CLOSE(wk_tensor_grad(x), c, "g.x", tol);
  if (h0) LR_CLOSE(wk_tensor_grad(h0), c, "g.h0", tol);
  if (c0) LR_CLOSE(wk_tensor_grad(c0), c, "g.c0", tol);
  lr_param_grads(m, c, tol);
  wk_release(hn);
  wk_release(cn);
  wk_module_release(m);
  wk_scope_end();
}

START_TEST(test_rnn_matches_torch_f64) {
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) check_case(&CASES[i], WK_F64, F64_TOL);
}
END_TEST

START_TEST(test_rnn_matches_torch_f32) {
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) check_case(&CASES[i], WK_F32, F32_TOL);
}
END_TEST

/* Module forward (input[, h_0[, c_0]]) gives the same output; state-dict
 * names and printouts are PyTorch's. */
START_TEST(test_rnn_module_forward_names_repr) {
  wk_scope_begin();
  const lr_case *c = lr_case_get("lstm_2l_bi");
  wk_module *m = make(&CASES[0]);
  lr_load(m, c, WK_F64);
  wk_tensor *x = lr_t(c, "x", WK_F64), *h0 = lr_t(c, "h0", WK_F64), *c0 = lr_t(c, "c0", WK_F64);
  LR_CLOSE(wk_module_forward_n(m, (wk_tensor *[]){x, h0, c0}, 3), c, "y", F64_TOL);
  const char *names[32];
  int n = wk_module_named_parameters(m, names, NULL, 32);
  ck_assert_int_eq(n, 16);
  static const char *const want[] = {"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
                                     "weight_ih_l0_reverse", "weight_hh_l0_reverse", "bias_ih_l0_reverse",
                                     "bias_hh_l0_reverse", "weight_ih_l1"};
  for (int i = 0; i < 9; i++) ck_assert_str_eq(names[i], want[i]);
  ck_assert_int_eq(wk_tensor_size(wk_module_param(m, "weight_ih_l1"), 1), 10); /* 2 directions feed layer 1 */
  ck_assert_int_eq(wk_tensor_size(wk_module_param(m, "weight_ih_l0"), 0), 20); /* gates i, f, g, o */
  /* GRU without h_0 from the module forward */
  const lr_case *g = lr_case_get("gru_2l_bi_bf");
  wk_module *gru = make(&CASES[1]);
  lr_load(gru, g, WK_F64);
  LR_CLOSE(wk_module_forward(gru, lr_t(g, "x", WK_F64)), g, "y", F64_TOL);
  ck_assert_int_eq(wk_tensor_size(wk_module_param(gru, "weight_hh_l1_reverse"), 0), 15); /* r, z, n */
  lr_repr_eq(wk_nn_lstm(4, 5, (wk_rnn_opts){.num_layers = 2, .bidirectional = true, .batch_first = true, .dropout = 0.5}),
             "lstm");
  lr_repr_eq(wk_nn_gru(4, 5, (wk_rnn_opts){.no_bias = true}), "gru");
  lr_repr_eq(wk_nn_lstm(4, 6, (wk_rnn_opts){.proj_size = 3, .num_layers = 2}), "lstm_proj");
  /* proj_size: weight_hr [proj, H], h of proj features; refused for GRU and when not below hidden_size */
  {
    wk_module *pm = wk_nn_lstm(4, 6, (wk_rnn_opts){.proj_size = 3});
    TU_NOTNULL(pm);
    ck_assert_int_eq(wk_tensor_size(wk_module_param(pm, "weight_hr_l0"), 0), 3);
    ck_assert_int_eq(wk_tensor_size(wk_module_param(pm, "weight_hh_l0"), 1), 3);
    wk_tensor *xx = wk_zeros(WK_SHAPE(2, 1, 4), (wk_options){0});
    ck_assert_ptr_null(wk_nn_rnn_forward(pm, xx, wk_zeros(WK_SHAPE(1, 1, 6), (wk_options){0}), NULL, NULL, NULL, NULL));
    TU_FAILS_WITH(WK_ERR_SHAPE, "Expected hidden[0] size [1, 1, 3], got [1, 1, 6]");
    wk_module_release(pm);
    ck_assert_ptr_null(wk_nn_gru(4, 6, (wk_rnn_opts){.proj_size = 3}));
    TU_FAILS_WITH(WK_ERR_INVALID_ARG, "only supported for LSTM");
    ck_assert_ptr_null(wk_nn_lstm(4, 6, (wk_rnn_opts){.proj_size = 6}));
    TU_FAILS_WITH(WK_ERR_INVALID_ARG, "smaller than hidden_size");
  }
  /* default init: U(-1/sqrt(H), 1/sqrt(H)) */
  wk_module *big = wk_nn_lstm(8, 16, (wk_rnn_opts){0});
  double *w = tu_values(wk_module_param(big, "weight_hh_l0"));
  double lo = 1, hi = -1;
  for (int i = 0; i < 64 * 16; i++) {
    lo = w[i] < lo ? w[i] : lo;
    hi = w[i] > hi ? w[i] : hi;
  }
  free(w);
  ck_assert(lo >= -0.25 && hi <= 0.25 && lo < -0.2 && hi > 0.2);
  wk_module_release(big);
  wk_module_release(gru);
  wk_module_release(m);
  wk_scope_end();
}
END_TEST

/* Lengths: outputs past a sequence's end are zero; a batch whose lengths are
 * all T equals the unmasked run; the gradient through the masking is right. */
typedef struct {
  wk_module *m;
  wk_tensor *len;
} gc_ctx;
static wk_tensor *gc_fn(void *ctx, wk_tensor *const *in, int n) {
  const gc_ctx *g = ctx;
  wk_tensor *hn = NULL;
  wk_tensor *y = wk_nn_rnn_forward(g->m, in[0], in[1], NULL, g->len, &hn, NULL);
  wk_tensor *fy = wk_flatten(y, 0, -1), *fh = wk_flatten(hn, 0, -1);
  wk_tensor *r = fy && fh ? wk_cat((wk_tensor *[]){fy, fh}, 2, 0) : NULL;
  wk_release(fy);
  wk_release(fh);
  wk_release(y);
  wk_release(hn);
  return r;
}

START_TEST(test_rnn_lengths) {
  wk_scope_begin();
  wk_module *m = wk_nn_gru(3, 4, (wk_rnn_opts){.bidirectional = true});
  TU_OK(wk_module_to(m, (wk_device){0, 0}, WK_F64));
  wk_tensor *x = tu_rand(WK_SHAPE(5, 3, 3), WK_F64, -1, 1, 1), *h0 = tu_rand(WK_SHAPE(2, 3, 4), WK_F64, -1, 1, 2);
  wk_tensor *len = wk_tensor_from_data((const int64_t[]){5, 2, 4}, WK_I64, WK_SHAPE(3));
  wk_tensor *y = wk_nn_rnn_forward(m, x, h0, NULL, len, NULL, NULL);
  double *v = tu_values(y);
  for (int t = 0; t < 5; t++)
    for (int b = 0; b < 3; b++)
      for (int k = 0; k < 8; k++) {
        double e = v[(t * 3 + b) * 8 + k];
        if (t >= (b == 0 ? 5 : b == 1 ? 2 : 4)) ck_assert(e == 0);
        else ck_assert(e != 0);
      }
  free(v);
  wk_tensor *full = wk_tensor_from_data((const int64_t[]){5, 5, 5}, WK_I64, WK_SHAPE(3));
  double *a = tu_values(wk_nn_rnn_forward(m, x, h0, NULL, full, NULL, NULL));
  double *b = tu_values(wk_nn_rnn_forward(m, x, h0, NULL, NULL, NULL, NULL));
  ck_assert(memcmp(a, b, sizeof(double) * 120) == 0);
  free(a);
  free(b);
  TU_OK(wk_tensor_set_requires_grad(x, true));
  TU_OK(wk_tensor_set_requires_grad(h0, true));
  gc_ctx g = {m, len};
  TU_OK(wk_gradcheck(gc_fn, &g, (wk_tensor *[]){x, h0}, 2, &(wk_gradcheck_opts){.atol = 1e-7, .rtol = 1e-5}));
  wk_module_release(m);
  wk_scope_end();
}
END_TEST

/* Dropout between layers acts in training only. */
START_TEST(test_rnn_dropout) {
  wk_scope_begin();
  wk_module *m = wk_nn_lstm(3, 6, (wk_rnn_opts){.num_layers = 2, .dropout = 0.5});
  wk_tensor *x = tu_rand(WK_SHAPE(4, 2, 3), WK_F32, -1, 1, 1);
  TU_OK(wk_module_train(m, true));
  double *a = tu_values(wk_module_forward(m, x)), *b = tu_values(wk_module_forward(m, x));
  ck_assert(memcmp(a, b, sizeof(double) * 48) != 0);
  free(a);
  free(b);
  TU_OK(wk_module_train(m, false));
  a = tu_values(wk_module_forward(m, x));
  b = tu_values(wk_module_forward(m, x));
  ck_assert(memcmp(a, b, sizeof(double) * 48) == 0);
  free(a);
  free(b);
  wk_module_release(m);
  wk_scope_end();
}
END_TEST

START_TEST(test_rnn_errors) {
  wk_scope_begin();
  wk_module *m = wk_nn_lstm(3, 4, (wk_rnn_opts){0}), *g = wk_nn_gru(3, 4, (wk_rnn_opts){0});
  wk_options f = {.dtype = WK_F32};
  wk_tensor *x = wk_zeros(WK_SHAPE(5, 2, 3), f);
  ck_assert_ptr_null(wk_module_forward(m, wk_zeros(WK_SHAPE(5, 2, 4), f)));
  TU_FAILS_WITH(WK_ERR_SHAPE, "LSTM: expected input of shape (T, N, 3)");
  ck_assert_ptr_null(wk_module_forward(m, wk_zeros(WK_SHAPE(3), f)));
  TU_FAILS_WITH(WK_ERR_SHAPE, "LSTM: expected input");
  ck_assert_ptr_null(wk_module_forward_n(m, (wk_tensor *[]){x, wk_zeros(WK_SHAPE(2, 2, 4), f)}, 2));
  TU_FAILS_WITH(WK_ERR_SHAPE, "Expected hidden[0] size [1, 2, 4], got [2, 2, 4]");
  ck_assert_ptr_null(wk_module_forward_n(g, (wk_tensor *[]){x, x, x}, 3));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "GRU.forward() takes (input[, h_0])");
  ck_assert_ptr_null(wk_nn_rnn_forward(g, x, NULL, wk_zeros(WK_SHAPE(1, 2, 4), f), NULL, NULL, NULL));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "GRU: takes no c_0");
  ck_assert_ptr_null(wk_nn_rnn_forward(m, x, NULL, NULL, wk_tensor_from_data((const int64_t[]){5, 0}, WK_I64, WK_SHAPE(2)),
                                       NULL, NULL));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "every length must be in [1, 5]");
  ck_assert_ptr_null(wk_nn_rnn_forward(m, x, NULL, NULL, wk_tensor_from_data((const int64_t[]){5, 6}, WK_I64, WK_SHAPE(2)),
                                       NULL, NULL));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "every length must be in [1, 5]");
  ck_assert_ptr_null(wk_nn_rnn_forward(m, x, NULL, NULL, wk_zeros(WK_SHAPE(2), f), NULL, NULL));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "lengths must be a 1-D int64 cpu tensor of 2 elements");
  wk_tensor *hn = x;
  ck_assert_ptr_null(wk_nn_rnn_forward(NULL, x, NULL, NULL, NULL, &hn, NULL));
  ck_assert_ptr_null(hn);
  TU_FAILS_WITH(WK_ERR_NULL, "module");
  wk_module *lin = wk_nn_linear(2, 2, true);
  ck_assert_ptr_null(wk_nn_rnn_forward(lin, x, NULL, NULL, NULL, NULL, NULL));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "expected an LSTM or a GRU");
  wk_module_release(lin);
  ck_assert_ptr_null(wk_nn_lstm(0, 4, (wk_rnn_opts){0}));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "must be positive");
  ck_assert_ptr_null(wk_nn_gru(3, 4, (wk_rnn_opts){.dropout = 2}));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "dropout should be a number in range [0, 1]");
  wk_module_release(m);
  wk_module_release(g);
  wk_scope_end();
}
END_TEST

static Suite *nn_rnn_suite(void) {
  Suite *s = suite_create("nn_rnn");
  TCase *tc = tcase_create("rnn");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_rnn_matches_torch_f64);
  tcase_add_test(tc, test_rnn_matches_torch_f32);
  tcase_add_test(tc, test_rnn_module_forward_names_repr);
  tcase_add_test(tc, test_rnn_lengths);
  tcase_add_test(tc, test_rnn_dropout);
  tcase_add_test(tc, test_rnn_errors);
  suite_add_tcase(s, tc);
  return s;
}

TU_MAIN(nn_rnn_suite)
