/* check_autograd: PyTorch's autograd semantics in C: the classic cases,
 * accumulation, retain_graph, wk_grad, create_graph, no_grad/inference,
 * detach, in-place version checks, hooks, anomaly mode, deep graphs, and
 * gradcheck/gradgradcheck (float64 finite differences) over the op set. */
#include "testutil.h"

#include <wick/sdk/gradcheck.h>

static wk_tensor *leaf(wk_tensor *t) {
  ck_assert_int_eq(wk_tensor_set_requires_grad(t, true), WK_OK);
  return t;
}
static wk_tensor *rand64(const int64_t *s, int n, uint64_t seed) { return leaf(tu_rand(s, n, WK_F64, -1.5, 1.5, seed)); }

START_TEST(test_autograd_square) {
  wk_scope_begin();
  wk_tensor *x = leaf(wk_scalar_tensor(2, WK_F32));
  wk_tensor *y = wk_pow_scalar(x, 2);
  ck_assert_str_eq(wk_tensor_grad_fn_name(y), "PowBackward0");
  ck_assert(wk_tensor_is_leaf(x) && !wk_tensor_is_leaf(y));
  ck_assert(wk_tensor_requires_grad(y) == false || true);
  TU_OK(wk_backward(y));
  TU_EQ_VALS(wk_tensor_grad(x), 4);
  /* accumulation across backward calls */
  TU_OK(wk_backward(wk_pow_scalar(x, 2)));
  TU_EQ_VALS(wk_tensor_grad(x), 8);
  TU_OK(wk_tensor_zero_grad(x, false));
  TU_EQ_VALS(wk_tensor_grad(x), 0);
  TU_OK(wk_tensor_zero_grad(x, true));
  ck_assert_ptr_null(wk_tensor_grad(x));
  wk_scope_end();
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

/* Gradients meeting at one tensor are summed, in place when the engine owns
 * the first one alone; never into a gradient that someone else still holds
 * (both inputs of a + a get the same gradient handle). */
START_TEST(test_autograd_fan_in_accumulation) {
  wk_scope_begin();
  wk_tensor *x = leaf(TU_T(WK_F32, (3), 1, 2, 3));
  wk_tensor *a = wk_mul_scalar(x, 2);
  wk_tensor *l = wk_sum(wk_add(wk_mul_scalar(a, 3), wk_mul_scalar(a, 4)));
  TU_OK(wk_backward(l));
  TU_EQ_VALS(wk_tensor_grad(x), 14, 14, 14);
  TU_OK(wk_tensor_zero_grad(x, true));
  wk_tensor *b = wk_mul_scalar(x, 2);
  TU_OK(wk_backward(wk_sum(wk_add(wk_add(b, b), b))));
  TU_EQ_VALS(wk_tensor_grad(x), 6, 6, 6);
  /* a residual block's shape: y = relu(x*w) + x, summed twice over */
  TU_OK(wk_tensor_zero_grad(x, true));
  wk_tensor *y = wk_add(wk_relu(wk_mul_scalar(x, -1)), x);
  wk_tensor *z = wk_add(wk_mul(y, y), y);
  TU_OK(wk_backward(wk_sum(z)));
  TU_EQ_VALS(wk_tensor_grad(x), 3, 5, 7); /* y = x: d/dx (x^2 + x) = 2x + 1 */
  wk_scope_end();
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

START_TEST(test_autograd_nonscalar_backward) {
  wk_scope_begin();
  wk_tensor *x = leaf(TU_T(WK_F32, (3), 1, 2, 3));
  wk_tensor *y = wk_mul_scalar(x, 3);
  ck_assert_int_eq(wk_backward(y), WK_ERR_AUTOGRAD);
  TU_FAILS_WITH(WK_ERR_AUTOGRAD, "grad can be implicitly created only for scalar outputs");
  TU_OK(wk_backward_with(y, wk_ones_like(y, (wk_options){0}), NULL));
  TU_EQ_VALS(wk_tensor_grad(x), 3, 3, 3);
  ck_assert_int_eq(wk_backward_with(y, wk_ones(WK_SHAPE(2), (wk_options){0}), NULL), WK_ERR_SHAPE);
  TU_FAILS_WITH(WK_ERR_SHAPE, "Mismatch in shape");
  wk_tensor *c = TU_T(WK_F32, (3), 1, 2, 3);
  ck_assert_int_eq(wk_backward(wk_sum(c)), WK_ERR_AUTOGRAD);
  TU_FAILS_WITH(WK_ERR_AUTOGRAD, "does not require grad and does not have a grad_fn");
  ck_assert_int_eq(wk_backward(NULL), WK_ERR_NULL);
  wk_clear_error();
  wk_scope_end();
}
END_TEST

START_TEST(test_autograd_retain_graph_and_freed_graph) {
  wk_scope_begin();
  wk_tensor *x = leaf(TU_T(WK_F64, (2), 0.5, -1));
  wk_tensor *y = wk_sum(wk_exp(x));
  wk_backward_opts keep = {sizeof keep, true, false};
  TU_OK(wk_backward_with(y, NULL, &keep));
  TU_OK(wk_backward(y));
  TU_CLOSE(wk_tensor_grad(x), ((double[]){2 * exp(0.5), 2 * exp(-1)}), 2, 1e-12, 0);
  ck_assert_int_eq(wk_backward(y), WK_ERR_AUTOGRAD);
  TU_FAILS_WITH(WK_ERR_AUTOGRAD, "Trying to backward through the graph a second time");
  wk_scope_end();
}
END_TEST

START_TEST(test_autograd_grad_function) {
  wk_scope_begin();
  wk_tensor *x = leaf(TU_T(WK_F64, (2), 1, 2)), *z = leaf(TU_T(WK_F64, (2), 5, 5));
  wk_tensor *y = wk_sum(wk_mul(x, x));
  wk_tensor *g[2];
  TU_OK(wk_grad(&y, 1, NULL, (wk_tensor *[]){x}, 1, g, NULL, false));
  TU_EQ_VALS(g[0], 2, 4);
  ck_assert_ptr_null(wk_tensor_grad(x)); /* .grad untouched */
  wk_tensor *y2 = wk_sum(wk_mul(x, x));
  ck_assert_int_eq(wk_grad(&y2, 1, NULL, (wk_tensor *[]){x, z}, 2, g, NULL, false), WK_ERR_AUTOGRAD);
  TU_FAILS_WITH(WK_ERR_AUTOGRAD, "appears to not have been used in the graph");
  wk_tensor *y3 = wk_sum(wk_mul(x, x));
  TU_OK(wk_grad(&y3, 1, NULL, (wk_tensor *[]){x, z}, 2, g, NULL, true));
  ck_assert_ptr_null(g[1]);
  /* gradient w.r.t. an intermediate */
  wk_tensor *h = wk_mul_scalar(x, 3), *out = wk_sum(wk_mul(h, h));
  TU_OK(wk_grad(&out, 1, NULL, &h, 1, g, NULL, false));
  TU_EQ_VALS(g[0], 6, 12);
  wk_scope_end();
}
END_TEST

START_TEST(test_autograd_double_backward) {
  wk_scope_begin();
  wk_tensor *x = leaf(TU_T(WK_F64, (2), 2, -1));
  wk_tensor *y = wk_sum(wk_pow_scalar(x, 3));
  wk_tensor *g[1];
  wk_backward_opts cg = {sizeof cg, true, true};
  TU_OK(wk_grad(&y, 1, NULL, &x, 1, g, &cg, false));
  TU_EQ_VALS(g[0], 12, 3);
  ck_assert(wk_tensor_requires_grad(g[0]) || wk_tensor_grad_fn_name(g[0]) != NULL);
  TU_OK(wk_backward(wk_sum(g[0])));
  TU_EQ_VALS(wk_tensor_grad(x), 12, -6); /* d2/dx2 x^3 = 6x */
  wk_scope_end();
}
END_TEST

START_TEST(test_autograd_no_grad_and_detach) {
  wk_scope_begin();
  wk_tensor *x = leaf(TU_T(WK_F32, (2), 1, 2));
  wk_no_grad_begin();
  wk_tensor *y = wk_mul(x, x);
  ck_assert(wk_tensor_is_leaf(y));
  ck_assert_ptr_null(wk_tensor_grad_fn_name(y));
  wk_no_grad_begin(); /* nests */
  TU_OK(wk_no_grad_end());
  ck_assert(!wk_grad_enabled());
  TU_OK(wk_no_grad_end());
  ck_assert(wk_grad_enabled());
  ck_assert_int_eq(wk_no_grad_end(), WK_ERR_STATE);
  wk_clear_error();
  /* a scope's end restores the mode its begin found (torch.no_grad's
   * __exit__): inside set_grad_enabled(false) a no_grad pair leaves grad
   * off, and set_grad_enabled(true) inside a scope lasts until its end */
  wk_set_grad_enabled(false);
  wk_no_grad_begin();
  TU_OK(wk_no_grad_end());
  ck_assert(!wk_grad_enabled());
  wk_inference_mode_begin();
  TU_OK(wk_inference_mode_end());
  ck_assert(!wk_grad_enabled());
  wk_set_grad_enabled(true);
  wk_no_grad_begin();
  wk_set_grad_enabled(true);
  ck_assert(wk_grad_enabled());
  wk_no_grad_begin();
  TU_OK(wk_no_grad_end());
  ck_assert(wk_grad_enabled());
  TU_OK(wk_no_grad_end());
  ck_assert(wk_grad_enabled());
  wk_tensor *d = wk_detach(x);
  ck_assert(wk_tensor_same_storage(d, x));
  ck_assert(!wk_tensor_requires_grad(d));
  wk_tensor *z = wk_add(wk_mul(d, d), x);
  TU_OK(wk_backward(wk_sum(z)));
  TU_EQ_VALS(wk_tensor_grad(x), 1, 1); /* nothing flows through the detached path */
  /* inference mode: tensors made there cannot be saved for backward */
  wk_inference_mode_begin();
  wk_tensor *inf = wk_mul_scalar(x, 2);
  TU_OK(wk_inference_mode_end());
  ck_assert(wk_is_inference_tensor(inf));
  ck_assert_ptr_null(wk_mul(inf, x));
  TU_FAILS_WITH(WK_ERR_AUTOGRAD, "Inference tensors cannot be saved for backward");
  wk_scope_end();
}
END_TEST

START_TEST(test_autograd_inplace_checks) {
  wk_scope_begin();
  wk_tensor *x = leaf(TU_T(WK_F32, (2), 1, 2));
  ck_assert_ptr_null(wk_add_(x, x));
  TU_FAILS_WITH(WK_ERR_AUTOGRAD, "a leaf Variable that requires grad is being used in an in-place operation.");
  /* a saved tensor modified in place: backward refuses */
  wk_tensor *a = wk_mul_scalar(x, 1);
  wk_tensor *b = wk_mul(a, a);
  ck_assert_ptr_nonnull(wk_add_scalar_(a, 1));
  ck_assert_int_eq(wk_backward(wk_sum(b)), WK_ERR_AUTOGRAD);
  TU_FAILS_WITH(WK_ERR_AUTOGRAD, "one of the variables needed for gradient computation has been modified by an "
                                 "inplace operation: [f32 [2]], which is argument 1 of MulBackward0, is at version 1; "
                                 "expected version 0 instead.");
  /* in-place on a non-leaf rebases its history and stays correct */
  wk_tensor *c = wk_mul_scalar(x, 3);
  wk_relu_(c);
  ck_assert_str_eq(wk_tensor_grad_fn_name(c), "ReluBackward0");
  TU_OK(wk_backward(wk_sum(wk_mul(c, c))));
  TU_EQ_VALS(wk_tensor_grad(x), 18, 36);
  /* modifying relu_'s saved output afterwards is caught, like PyTorch */
  wk_tensor *c2 = wk_relu_(wk_mul_scalar(x, 3));
  wk_mul_scalar_(c2, 2);
  ck_assert_int_eq(wk_backward(wk_sum(c2)), WK_ERR_AUTOGRAD);
  TU_FAILS_WITH(WK_ERR_AUTOGRAD, "which is output 0 of ReluBackward0, is at version 2; expected version 1 instead.");
  /* x.mul_(x) saves the operand it overwrites: refused, as in PyTorch */
  wk_tensor *d = wk_mul_scalar(x, 1);
  ck_assert_ptr_nonnull(wk_mul_(d, d));
  ck_assert_int_eq(wk_backward(wk_sum(d)), WK_ERR_AUTOGRAD);
  TU_FAILS_WITH(WK_ERR_AUTOGRAD, "modified by an inplace operation");
  /* no .data loophole: even a detached alias bumps the shared version */
  wk_tensor *e = wk_mul_scalar(x, 1), *f = wk_exp(e);
  wk_tensor *det = wk_detach(f);
  wk_fill_(det, 0);
  ck_assert_int_eq(wk_backward(wk_sum(f)), WK_ERR_AUTOGRAD);
  TU_FAILS_WITH(WK_ERR_AUTOGRAD, "modified by an inplace operation");
  /* out= with grad is refused */
  ck_assert_ptr_null(wk_exp_out(x, wk_empty(WK_SHAPE(2), (wk_options){0})));
  TU_FAILS_WITH(WK_ERR_AUTOGRAD, "out=... arguments don't support automatic differentiation");
  wk_scope_end();
}
END_TEST

static int g_post_calls;
static wk_tensor *double_hook(void *user, wk_tensor *g) {
  (*(int *)user)++;
  return wk_mul_scalar(g, 2);
}
static void post_hook(void *user, wk_tensor *p) {
  g_post_calls++;
  ck_assert_ptr_eq(user, p);
}

START_TEST(test_autograd_hooks) {
  wk_scope_begin();
  int calls = 0;
  wk_tensor *x = leaf(TU_T(WK_F32, (2), 1, 2));
  TU_OK(wk_tensor_register_hook(x, double_hook, &calls));
  TU_OK(wk_tensor_register_post_accumulate_grad_hook(x, post_hook, x));
  wk_tensor *h = wk_mul_scalar(x, 3);
  TU_OK(wk_tensor_register_hook(h, double_hook, &calls));
  TU_OK(wk_backward(wk_sum(h)));
  TU_EQ_VALS(wk_tensor_grad(x), 12, 12);
  ck_assert_int_eq(calls, 2);
  ck_assert_int_eq(g_post_calls, 1);
  wk_tensor *c = TU_T(WK_F32, (1), 1);
  ck_assert_int_eq(wk_tensor_register_hook(c, double_hook, &calls), WK_ERR_AUTOGRAD);
  TU_FAILS_WITH(WK_ERR_AUTOGRAD, "doesn't require gradient");
  ck_assert_int_eq(wk_tensor_register_post_accumulate_grad_hook(h, post_hook, NULL), WK_ERR_AUTOGRAD);
  TU_FAILS_WITH(WK_ERR_AUTOGRAD, "can only be registered on leaf tensors");
  /* retain_grad on a non-leaf */
  wk_tensor *m = wk_mul_scalar(x, 1);
  ck_assert_int_eq(wk_tensor_retain_grad(c), WK_ERR_AUTOGRAD);
  wk_clear_error();
  TU_OK(wk_tensor_retain_grad(m));
  wk_scope_end();
}
END_TEST

START_TEST(test_autograd_anomaly_mode) {
  wk_scope_begin();
  wk_set_anomaly_enabled(true);
  wk_tensor *x = leaf(TU_T(WK_F64, (2), 0, 4));
  wk_tensor *y = wk_sum(wk_sqrt(x));
  ck_assert_int_eq(wk_backward(y), WK_ERR_AUTOGRAD);
  TU_FAILS_WITH(WK_ERR_AUTOGRAD, "Function 'SqrtBackward0' returned nan values");
  wk_set_anomaly_enabled(false);
  wk_tensor *y2 = wk_sum(wk_sqrt(x));
  TU_OK(wk_backward(y2)); /* inf is allowed without anomaly mode */
  wk_scope_end();
}
END_TEST

START_TEST(test_autograd_deep_graph) {
  /* 100k nodes: backward and freeing must not recurse */
  wk_scope_begin();
  wk_tensor *x = leaf(TU_T(WK_F32, (1), 1));
  wk_tensor *y = wk_scope_keep(wk_mul_scalar(x, 1));
  for (int i = 0; i < 100000; i++) {
    wk_tensor *n = wk_scope_keep(wk_add_scalar(y, 0));
    wk_release(y);
    y = n;
  }
  TU_OK(wk_backward(wk_sum(y)));
  TU_EQ_VALS(wk_tensor_grad(x), 1);
  wk_release(y);
  wk_scope_end();
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

START_TEST(test_autograd_broadcast_reduction_and_names) {
  wk_scope_begin();
  wk_tensor *a = leaf(wk_ones(WK_SHAPE(3, 1), (wk_options){0}));
  wk_tensor *b = leaf(wk_ones(WK_SHAPE(4), (wk_options){0}));
  TU_OK(wk_backward(wk_sum(wk_mul(a, b))));
  wk_tensor *ga = wk_tensor_grad(a), *gb = wk_tensor_grad(b);
  ck_assert_int_eq(wk_tensor_dim(ga), 2);
  ck_assert_int_eq(wk_tensor_size(ga, 1), 1);
  TU_EQ_VALS(ga, 4, 4, 4);
  TU_EQ_VALS(gb, 3, 3, 3, 3);
  wk_tensor *x = wk_ones(WK_SHAPE(2, 4), (wk_options){0}), *w = leaf(wk_ones(WK_SHAPE(3, 4), (wk_options){0}));
  wk_tensor *bias = leaf(wk_zeros(WK_SHAPE(3), (wk_options){0}));
  ck_assert_str_eq(wk_tensor_grad_fn_name(wk_linear(x, w, bias)), "AddmmBackward0");
  ck_assert_str_eq(wk_tensor_grad_fn_name(wk_matmul(x, wk_t(w))), "MmBackward0");
  ck_assert_str_eq(wk_tensor_grad_fn_name(wk_t(w)), "TBackward0");
  wk_scope_end();
}
END_TEST

/* ---- gradcheck over the op set ---- */
typedef wk_tensor *(*opfn)(wk_tensor *const *in);
typedef struct {
  const char *name;
  opfn fn;
  int nin;
  int64_t shapes[4][4];
  int ndims[4];
  bool positive; /* inputs must be > 0 */
  bool second;   /* also gradgradcheck */
} gc_case;

static wk_tensor *call_case(void *ctx, wk_tensor *const *in, int n) {
  (void)n;
  return ((const gc_case *)ctx)->fn(in);
}

#define F1(name, expr) static wk_tensor *name(wk_tensor *const *in) { return expr; }
static wk_tensor *f_conv_s2g2(wk_tensor *const *in) {
  wk_value a[7] = {WK_VT(in[0]), WK_VT(in[1]), WK_VT(in[2]), WK_VINTS(((int64_t[]){2, 1}), 2),
                   WK_VINTS(((int64_t[]){1, 0}), 2), WK_VINTS(((int64_t[]){1, 2}), 2), WK_VI(2)};
  wk_value o[1];
  return wk_call("conv2d", a, 7, o) == WK_OK ? o[0].u.t : NULL;
}
static wk_tensor *wk_call_nll_weighted(wk_tensor *x) {
  wk_value a[5] = {WK_VT(wk_log_softmax(x, 1)), WK_VT(wk_tensor_from_data((int64_t[]){1, 0, 2}, WK_I64, WK_SHAPE(3))),
                   WK_VT(wk_tensor_from_data((double[]){0.5, 2, 1, 1.5}, WK_F64, WK_SHAPE(4))), WK_VI(2), WK_VI(-100)};
  wk_value o[1];
  return wk_call("nll_loss", a, 5, o) == WK_OK ? o[0].u.t : NULL;
}
static wk_tensor *f_split(wk_tensor *const *in) {
  wk_tensor *parts[4];
  int n = wk_split(in[0], 2, 1, parts, 4);
  if (n < 2) return NULL;
  wk_tensor *r = wk_mul(parts[0], parts[1]);
  for (int i = 0; i < n; i++) wk_release(parts[i]);
  return r;
}
F1(f_add, wk_add(in[0], in[1]))
F1(f_sub_alpha, wk_sub_scaled(in[0], in[1], 0.5))
F1(f_mul, wk_mul(in[0], in[1]))
F1(f_div, wk_div(in[0], in[1]))
F1(f_pow, wk_pow(in[0], in[1]))
F1(f_pow_s, wk_pow_scalar(in[0], 2.5))
F1(f_max2, wk_maximum(in[0], in[1]))
F1(f_exp, wk_exp(in[0]))
F1(f_log, wk_log(in[0]))
F1(f_sqrt, wk_sqrt(in[0]))
F1(f_tanh, wk_tanh(in[0]))
F1(f_sigmoid, wk_sigmoid(in[0]))
F1(f_relu, wk_relu(in[0]))
F1(f_silu, wk_silu(in[0]))
F1(f_gelu, wk_gelu(in[0], "none"))
F1(f_gelu_t, wk_gelu(in[0], "tanh"))
F1(f_leaky, wk_leaky_relu(in[0], 0.1))
F1(f_sin, wk_sin(in[0]))
F1(f_abs, wk_abs(in[0]))
F1(f_clamp, wk_clamp(in[0], -0.5, 0.7))
F1(f_where, wk_where(wk_gt_scalar(in[0], 0), in[0], in[1]))
F1(f_sum_dim, wk_sum_dim(in[0], (int64_t[]){0, 2}, 2, false))
F1(f_mean_keep, wk_mean_dim(in[0], (int64_t[]){-1}, 1, true))
F1(f_var, wk_var(in[0], (int64_t[]){1}, 1, 1, false))
F1(f_std, wk_std(in[0], NULL, 0, 1, false))
F1(f_norm, wk_norm(in[0], 2, (int64_t[]){1}, 1, false))
F1(f_norm3, wk_norm(in[0], 3, NULL, 0, false))
F1(f_lse, wk_logsumexp(in[0], (int64_t[]){1}, 1, false))
F1(f_maxdim, wk_max_dim(in[0], 1, false, NULL))
F1(f_prod, wk_prod_dim(in[0], 0, true))
F1(f_cumsum, wk_cumsum(in[0], 1))
F1(f_mm, wk_mm(in[0], in[1]))
F1(f_mm_t, wk_mm(wk_t(in[0]), in[1]))
F1(f_bmm, wk_bmm(in[0], in[1]))
F1(f_matmul, wk_matmul(in[0], in[1]))
F1(f_addmm, wk_addmm(in[0], in[1], in[2], 0.5, 2))
F1(f_linear, wk_linear(in[0], in[1], in[2]))
F1(f_linear_nobias, wk_linear(in[0], in[1], NULL))
F1(f_softmax, wk_softmax(in[0], 1))
F1(f_logsoftmax, wk_log_softmax(in[0], -1))
F1(f_mse, wk_mse_loss(in[0], in[1]))
F1(f_ce, wk_cross_entropy(in[0], wk_tensor_from_data((int64_t[]){2, 0, 1}, WK_I64, WK_SHAPE(3))))
F1(f_ce_ls, wk_cross_entropy_ex(in[0], wk_tensor_from_data((int64_t[]){2, -100, 1}, WK_I64, WK_SHAPE(3)),
                                 wk_tensor_from_data((double[]){0.5, 2, 1, 1.5}, WK_F64, WK_SHAPE(4)), 1, -100, 0.2))
F1(f_ce_prob, wk_cross_entropy_ex(in[0], in[1], NULL, 1, -100, 0))
F1(f_ce_prob_w_ls_sum, wk_cross_entropy_ex(in[0], in[1], in[2], 2, -100, 0.2))
F1(f_ce_prob_none, wk_cross_entropy_ex(in[0], in[1], in[2], 0, -100, 0.1))
F1(f_nll, wk_nll_loss(in[0], wk_tensor_from_data((int64_t[]){2, 0, 1}, WK_I64, WK_SHAPE(3))))
F1(f_bce, wk_binary_cross_entropy_with_logits(in[0], in[1]))
F1(f_view, wk_reshape(wk_permute(in[0], (int64_t[]){2, 0, 1}, 3), WK_SHAPE(-1, 6)))
F1(f_slice, wk_slice(wk_select(in[0], 1, -1), 1, 1, 4, 2))
F1(f_expand, wk_expand(wk_unsqueeze(in[0], 0), WK_SHAPE(3, 2, 4)))
F1(f_cat, wk_cat((wk_tensor *[]){in[0], in[1]}, 2, 1))
F1(f_stack, wk_stack((wk_tensor *[]){in[0], in[0]}, 2, 0))
F1(f_index_select, wk_index_select(in[0], 1, wk_tensor_from_data((int64_t[]){2, 0, 2}, WK_I64, WK_SHAPE(3))))
F1(f_gather, wk_gather(in[0], 1, wk_tensor_from_data((int64_t[]){0, 2, 1, 1}, WK_I64, WK_SHAPE(2, 2))))
F1(f_flip, wk_flip(in[0], (int64_t[]){0}, 1))
F1(f_roll, wk_roll(in[0], (int64_t[]){1}, (int64_t[]){1}, 1))
F1(f_repeat, wk_repeat(in[0], WK_SHAPE(2, 1, 3)))
F1(f_conv, wk_conv2d(in[0], in[1], in[2], 1, 1, 1, 1))
F1(f_maxpool, wk_max_pool2d(in[0], 2, 2, 0))
F1(f_avgpool, wk_avg_pool2d(in[0], 3, 2, 1))
F1(f_adaptive, wk_adaptive_avg_pool2d(in[0], 2, 3))
F1(f_bn_train, wk_batch_norm(in[0], in[1], in[2], NULL, NULL, true, 0.1, 1e-5, NULL))
F1(f_ln, wk_layer_norm(in[0], (int64_t[]){4}, 1, in[1], in[2], 1e-5, NULL))
F1(f_embed, wk_embedding(in[0], wk_tensor_from_data((int64_t[]){3, 0, 3}, WK_I64, WK_SHAPE(3))))
F1(f_pad_reflect, wk_pad(in[0], (int64_t[]){2, 1, 1, 1}, 4, "reflect", 0))
F1(f_topk, wk_topk(in[0], 2, 1, true, true, NULL))
F1(f_masked_fill, wk_masked_fill(in[0], wk_gt_scalar(in[1], 0), 3))
F1(f_log1p, wk_log1p(in[0]))
F1(f_rsqrt, wk_rsqrt(in[0]))
F1(f_cos, wk_cos(in[0]))
F1(f_prod_all, wk_prod(in[0]))
F1(f_min_dim, wk_min_dim(in[0], 0, true, NULL))
F1(f_max_all, wk_max(in[0]))
F1(f_mean_all, wk_mean(in[0]))
F1(f_sort, wk_sort(in[0], 1, true, NULL))
F1(f_scatter, wk_scatter(in[0], 1, wk_tensor_from_data((int64_t[]){2, 0, 1, 0}, WK_I64, WK_SHAPE(2, 2)), in[1]))
F1(f_scatter_add, wk_scatter_add(in[0], 0, wk_tensor_from_data((int64_t[]){1, 0, 1, 1, 0, 0}, WK_I64, WK_SHAPE(2, 3)), in[1]))
F1(f_masked_select, wk_masked_select(in[0], wk_gt_scalar(in[1], 0)))
F1(f_narrow_t, wk_narrow(wk_transpose(in[0], 0, 1), 0, 1, 2))
F1(f_sq_unsq_flat, wk_flatten(wk_unsqueeze(wk_squeeze(in[0]), 1), 0, -1))
F1(f_dropout_eval, wk_dropout(in[0], 0.5, false, NULL))
F1(f_bn_eval, wk_batch_norm(in[0], in[1], in[2], wk_zeros(WK_SHAPE(2), WK_OPTS(.dtype = WK_F64)), wk_ones(WK_SHAPE(2), WK_OPTS(.dtype = WK_F64)), false, 0.1, 1e-5, NULL))
F1(f_nll_w, wk_call_nll_weighted(in[0]))
F1(f_contig, wk_contiguous(wk_t(in[0])))
F1(f_where_inplace, wk_relu_(wk_mul_scalar(in[0], 2)))
/* squared results: the gradient reaching the backward kernels depends on the
 * inputs, so gradgradcheck also checks their derivative in grad_output */
static wk_tensor *sq(wk_tensor *t) { return wk_mul(t, t); }
F1(f_sq_conv, sq(f_conv(in)))
F1(f_sq_conv_s2g2, sq(f_conv_s2g2(in)))
F1(f_sq_maxpool, sq(f_maxpool(in)))
F1(f_sq_avgpool, sq(wk_avg_pool2d(in[0], 2, 1, 1)))
F1(f_sq_adaptive, sq(f_adaptive(in)))
F1(f_sq_bn_train, sq(f_bn_train(in)))
F1(f_sq_bn_train_noaffine, sq(wk_batch_norm(in[0], NULL, NULL, NULL, NULL, true, 0.1, 1e-5, NULL)))
F1(f_sq_bn_eval, sq(f_bn_eval(in)))
F1(f_sq_ln, sq(f_ln(in)))
F1(f_sq_ln2, sq(wk_layer_norm(in[0], (int64_t[]){2, 3}, 2, in[1], NULL, 1e-5, NULL)))

static const gc_case g_cases[] = {
    {"add broadcast", f_add, 2, {{3, 1, 4}, {2, 4}}, {3, 2}, false, true},
    {"sub alpha", f_sub_alpha, 2, {{2, 3}, {3}}, {2, 1}, false, true},
    {"mul broadcast", f_mul, 2, {{2, 1, 3}, {4, 1}}, {3, 2}, false, true},
    {"div", f_div, 2, {{2, 3}, {2, 3}}, {2, 2}, true, true},
    {"pow", f_pow, 2, {{2, 3}, {2, 3}}, {2, 2}, true, true},
    {"pow scalar", f_pow_s, 1, {{5}}, {1}, true, true},
    {"maximum", f_max2, 2, {{2, 3}, {3}}, {2, 1}, false, false},
    {"exp", f_exp, 1, {{2, 3}}, {2}, false, true},
    {"log", f_log, 1, {{2, 3}}, {2}, true, true},
    {"sqrt", f_sqrt, 1, {{4}}, {1}, true, true},
    {"tanh", f_tanh, 1, {{2, 3}}, {2}, false, true},
    {"sigmoid", f_sigmoid, 1, {{2, 3}}, {2}, false, true},
    {"relu", f_relu, 1, {{2, 3}}, {2}, false, false},
    {"silu", f_silu, 1, {{2, 3}}, {2}, false, true},
    {"gelu", f_gelu, 1, {{2, 3}}, {2}, false, false},
    {"gelu tanh", f_gelu_t, 1, {{2, 3}}, {2}, false, false},
    {"leaky_relu", f_leaky, 1, {{2, 3}}, {2}, false, false},
    {"sin", f_sin, 1, {{4}}, {1}, false, true},
    {"abs", f_abs, 1, {{4}}, {1}, false, false},
    {"clamp", f_clamp, 1, {{2, 4}}, {2}, false, false},
    {"where", f_where, 2, {{2, 3}, {3}}, {2, 1}, false, false},
    {"sum dims", f_sum_dim, 1, {{2, 3, 2}}, {3}, false, true},
    {"mean keepdim", f_mean_keep, 1, {{2, 3}}, {2}, false, true},
    {"var", f_var, 1, {{2, 4}}, {2}, false, true},
    {"std all", f_std, 1, {{2, 3}}, {2}, false, false},
    {"norm p2", f_norm, 1, {{2, 3}}, {2}, false, false},
    {"norm p3", f_norm3, 1, {{2, 3}}, {2}, false, false},
    {"logsumexp", f_lse, 1, {{2, 3}}, {2}, false, true},
    {"max.dim", f_maxdim, 1, {{3, 4}}, {2}, false, false},
    {"prod.dim", f_prod, 1, {{3, 2}}, {2}, true, false},
    {"cumsum", f_cumsum, 1, {{2, 4}}, {2}, false, true},
    {"mm", f_mm, 2, {{2, 3}, {3, 4}}, {2, 2}, false, true},
    {"mm transposed", f_mm_t, 2, {{3, 2}, {3, 4}}, {2, 2}, false, true},
    {"bmm", f_bmm, 2, {{2, 2, 3}, {2, 3, 2}}, {3, 3}, false, true},
    {"matmul batched", f_matmul, 2, {{2, 1, 2, 3}, {2, 3, 2}}, {4, 3}, false, true},
    {"addmm", f_addmm, 3, {{3}, {2, 4}, {4, 3}}, {1, 2, 2}, false, true},
    {"linear", f_linear, 3, {{2, 3, 4}, {5, 4}, {5}}, {3, 2, 1}, false, true},
    {"linear 2-D, no bias", f_linear_nobias, 2, {{3, 4}, {5, 4}}, {2, 2}, false, true},
    {"linear 1-D input", f_linear, 3, {{4}, {5, 4}, {5}}, {1, 2, 1}, false, true},
    {"linear 1-D weight", f_linear, 3, {{3, 4}, {4}, {1}}, {2, 1, 1}, false, true},
    {"softmax", f_softmax, 1, {{2, 4}}, {2}, false, true},
    {"log_softmax", f_logsoftmax, 1, {{2, 4}}, {2}, false, true},
    {"mse_loss", f_mse, 2, {{2, 3}, {2, 3}}, {2, 2}, false, true},
    {"cross_entropy", f_ce, 1, {{3, 4}}, {2}, false, true},
    {"cross_entropy weight smoothing ignore", f_ce_ls, 1, {{3, 4}}, {2}, false, true},
    {"cross_entropy probability targets", f_ce_prob, 2, {{3, 4}, {3, 4}}, {2, 2}, false, true},
    {"cross_entropy probability targets 1-D", f_ce_prob, 2, {{4}, {4}}, {1, 1}, false, true},
    {"cross_entropy probability targets weight smoothing sum", f_ce_prob_w_ls_sum, 3, {{3, 4}, {3, 4}, {4}}, {2, 2, 1},
     false, true},
    {"cross_entropy probability targets spatial none", f_ce_prob_none, 3, {{2, 3, 2}, {2, 3, 2}, {3}}, {3, 3, 1}, false,
     true},
    {"nll_loss", f_nll, 1, {{3, 4}}, {2}, false, true},
    {"bce_with_logits", f_bce, 2, {{2, 3}, {2, 3}}, {2, 2}, true, true},
    {"view/permute/reshape", f_view, 1, {{2, 3, 2}}, {3}, false, true},
    {"select+slice step", f_slice, 1, {{2, 3, 5}}, {3}, false, true},
    {"expand", f_expand, 1, {{2, 4}}, {2}, false, true},
    {"cat", f_cat, 2, {{2, 3}, {2, 2}}, {2, 2}, false, true},
    {"stack", f_stack, 1, {{2, 3}}, {2}, false, true},
    {"index_select", f_index_select, 1, {{2, 3}}, {2}, false, true},
    {"gather", f_gather, 1, {{2, 3}}, {2}, false, true},
    {"flip", f_flip, 1, {{3, 2}}, {2}, false, true},
    {"roll", f_roll, 1, {{2, 3}}, {2}, false, true},
    {"repeat", f_repeat, 1, {{2, 2}}, {2}, false, true},
    {"split", f_split, 1, {{2, 4}}, {2}, false, true},
    {"topk", f_topk, 1, {{2, 5}}, {2}, false, false},
    {"masked_fill", f_masked_fill, 2, {{2, 3}, {2, 3}}, {2, 2}, false, false},
    {"conv2d", f_conv, 3, {{2, 2, 4, 4}, {3, 2, 3, 3}, {3}}, {4, 4, 1}, false, true},
    {"conv2d stride groups dilation", f_conv_s2g2, 3, {{1, 4, 5, 6}, {4, 2, 2, 3}, {4}}, {4, 4, 1}, false, true},
    {"max_pool2d", f_maxpool, 1, {{1, 2, 4, 4}}, {4}, false, true},
    {"avg_pool2d", f_avgpool, 1, {{1, 2, 5, 5}}, {4}, false, true},
    {"adaptive_avg_pool2d", f_adaptive, 1, {{1, 2, 5, 7}}, {4}, false, true},
    {"batch_norm train", f_bn_train, 3, {{3, 2, 2, 2}, {2}, {2}}, {4, 1, 1}, false, true},
    {"layer_norm", f_ln, 3, {{3, 4}, {4}, {4}}, {2, 1, 1}, false, true},
    {"embedding", f_embed, 1, {{5, 3}}, {2}, false, false},
    {"pad reflect", f_pad_reflect, 1, {{1, 2, 3, 4}}, {4}, false, false},
    {"log1p", f_log1p, 1, {{2, 3}}, {2}, true, true},
    {"rsqrt", f_rsqrt, 1, {{4}}, {1}, true, true},
    {"cos", f_cos, 1, {{4}}, {1}, false, true},
    {"prod all", f_prod_all, 1, {{2, 3}}, {2}, true, false},
    {"min.dim keepdim", f_min_dim, 1, {{3, 4}}, {2}, false, false},
    {"max all", f_max_all, 1, {{3, 4}}, {2}, false, false},
    {"mean all", f_mean_all, 1, {{3, 4}}, {2}, false, true},
    {"sort", f_sort, 1, {{2, 5}}, {2}, false, false},
    {"scatter", f_scatter, 2, {{2, 3}, {2, 2}}, {2, 2}, false, true},
    {"scatter_add", f_scatter_add, 2, {{2, 3}, {2, 3}}, {2, 2}, false, true},
    {"masked_select", f_masked_select, 2, {{2, 3}, {2, 3}}, {2, 2}, false, true},
    {"narrow of transpose", f_narrow_t, 1, {{3, 4}}, {2}, false, true},
    {"squeeze/unsqueeze/flatten", f_sq_unsq_flat, 1, {{3, 1, 2}}, {3}, false, true},
    {"dropout eval", f_dropout_eval, 1, {{3, 4}}, {2}, false, true},
    {"batch_norm eval", f_bn_eval, 3, {{3, 2, 2}, {2}, {2}}, {3, 1, 1}, false, true},
    {"nll_loss weight sum", f_nll_w, 1, {{3, 4}}, {2}, false, true},
    {"contiguous of transpose", f_contig, 1, {{2, 3}}, {2}, false, true},
    {"in-place relu_ on a non-leaf", f_where_inplace, 1, {{2, 3}}, {2}, false, false},
    {"conv2d squared", f_sq_conv, 3, {{2, 2, 4, 4}, {3, 2, 3, 3}, {3}}, {4, 4, 1}, false, true},
    {"conv2d stride groups dilation squared", f_sq_conv_s2g2, 3, {{1, 4, 5, 6}, {4, 2, 2, 3}, {4}}, {4, 4, 1}, false, true},
    {"max_pool2d squared", f_sq_maxpool, 1, {{1, 2, 4, 4}}, {4}, false, true},
    {"avg_pool2d squared", f_sq_avgpool, 1, {{2, 3, 3}}, {3}, false, true},
    {"adaptive_avg_pool2d squared", f_sq_adaptive, 1, {{1, 2, 5, 7}}, {4}, false, true},
    {"batch_norm train squared", f_sq_bn_train, 3, {{3, 2, 2, 2}, {2}, {2}}, {4, 1, 1}, false, true},
    {"batch_norm train no affine squared", f_sq_bn_train_noaffine, 1, {{4, 3}}, {2}, false, true},
    {"batch_norm eval squared", f_sq_bn_eval, 3, {{3, 2, 2}, {2}, {2}}, {3, 1, 1}, false, true},
    {"layer_norm squared", f_sq_ln, 3, {{3, 4}, {4}, {4}}, {2, 1, 1}, false, true},
    {"layer_norm 2-D shape, no bias, squared", f_sq_ln2, 2, {{2, 2, 3}, {2, 3}}, {3, 2}, false, true},
};

START_TEST(test_autograd_gradcheck_ops) {
  const gc_case *c = &g_cases[_i];
  wk_tensor *in[4];
  wk_scope_begin(); /* owns the temporaries the case functions create */
  for (int k = 0; k < c->nin; k++) {
    in[k] = wk_scope_keep(rand64(c->shapes[k], c->ndims[k], (uint64_t)(_i * 17 + k + 1)));
    TU_NOTNULL(in[k]);
    if (c->positive) {
      wk_tensor *p = wk_add_scalar(wk_abs(wk_detach(in[k])), 0.5);
      wk_release(in[k]);
      in[k] = leaf(wk_scope_keep(p));
    }
  }
  wk_gradcheck_opts o = {1e-6, 1e-5, 1e-4, (uint64_t)_i};
  wk_status s = wk_gradcheck(call_case, (void *)c, in, c->nin, &o);
  ck_assert_msg(s == WK_OK, "%s: %s", c->name, wk_last_error_message());
  if (c->second) {
    s = wk_gradgradcheck(call_case, (void *)c, in, c->nin, &o);
    ck_assert_msg(s == WK_OK, "%s (second order): %s", c->name, wk_last_error_message());
  }
  for (int k = 0; k < c->nin; k++) wk_release(in[k]);
  wk_scope_end();
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

/* ---- the formula table and missing gradients ------------------------------------------------- */

/* Test hook of the core (exported, declared in no installed header): checks
 * the derivative table against the op registry (core/autograd_internal.h). */
wk_status wk__autograd_audit(const char *const *extra_rows, int nextra, bool all_ops);

/* Every formula row names a declared op and is bound to it, and every
 * differentiable op of the standard set has a formula or is listed as not
 * differentiable (misspelled rows were silently dropped before). */
START_TEST(test_autograd_formula_table_complete) {
  wk_status s = wk__autograd_audit(NULL, 0, false);
  ck_assert_msg(s == WK_OK, "%s", wk_last_error_message());
  /* the walk covers the standard set: spot-check that ops of each kind exist */
  const char *kinds[] = {"add", "cross_entropy", "prod.dim_int", "conv2d_backward", "eq", "zeros", "matmul", "add.out"};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) ck_assert_ptr_nonnull(wk_op_find(kinds[i]));
  /* a row naming an op that does not exist is an error naming it */
  const char *bad[] = {"cross_entropyy"};
  ck_assert_int_eq(wk__autograd_audit(bad, 1, false), WK_ERR_INTERNAL);
  TU_FAILS_WITH(WK_ERR_INTERNAL, "names op 'cross_entropyy', which is not declared");
  /* a differentiable op without a formula is an error; tagged ones are not */
  TU_NOTNULL(wk_op_declare("autograd_test.no_formula(Tensor self) -> Tensor", WK_TAG_POINTWISE));
  TU_NOTNULL(wk_op_declare("autograd_test.flat(Tensor self) -> Tensor", WK_TAG_POINTWISE | WK_TAG_NONDIFF));
  TU_NOTNULL(wk_op_declare("autograd_test.made(int n) -> Tensor", WK_TAG_FACTORY));
  ck_assert_int_eq(wk__autograd_audit(NULL, 0, false), WK_OK); /* the core's own ops only */
  ck_assert_int_eq(wk__autograd_audit(NULL, 0, true), WK_ERR_INTERNAL);
  ck_assert_msg(strstr(wk_last_error_message(), "op 'autograd_test.no_formula' has no derivative formula"),
                "%s", wk_last_error_message());
  ck_assert_msg(!strstr(wk_last_error_message(), "autograd_test.flat") &&
                    !strstr(wk_last_error_message(), "autograd_test.made"), "%s", wk_last_error_message());
  wk_clear_error();
}
END_TEST

/* A derivative that writes nothing for an input that needs a gradient is an
 * error naming the op and the argument (never a silently missing .grad); an
 * input that does not require grad never triggers it. */
static wk_tensor *plus_kernel(wk_tensor *a, wk_tensor *b) { return wk_add(a, b); }
static wk_status half_derivative(wk_backward_ctx *c, wk_tensor *const *g, int n) {
  (void)n;
  return wk_backward_set_grad(c, 0, g[0]); /* d/dself only: 'other' is forgotten */
}
static wk_tensor *call_plus(wk_tensor *a, wk_tensor *b) {
  wk_value args[2] = {WK_VT(a), WK_VT(b)}, out[1];
  return wk_call("autograd_test.plus", args, 2, out) == WK_OK ? out[0].u.t : NULL;
}
START_TEST(test_autograd_missing_gradient_is_an_error) {
  TU_NOTNULL(wk_op_declare("autograd_test.plus(Tensor self, Tensor other) -> Tensor", 0));
  TU_OK(wk_kernel_register_unboxed("autograd_test.plus", WK_DEVICE_CPU, WK_PRIORITY_REFERENCE, (void (*)(void))plus_kernel,
                                   "plus"));
  TU_OK(wk_op_register_derivative("autograd_test.plus", "PlusBackward0", half_derivative, 0, 0));
  wk_scope_begin();
  wk_tensor *a = leaf(TU_T(WK_F64, (2), 1, 2)), *b = leaf(TU_T(WK_F64, (2), 3, 4));
  wk_tensor *c = TU_T(WK_F64, (2), 5, 6);
  /* other does not require grad: fine */
  TU_OK(wk_backward(wk_sum(call_plus(a, c))));
  TU_EQ_VALS(wk_tensor_grad(a), 1, 1);
  /* other requires grad: the derivative forgot it */
  ck_assert_int_eq(wk_backward(wk_sum(call_plus(a, b))), WK_ERR_AUTOGRAD);
  TU_FAILS_WITH(WK_ERR_AUTOGRAD, "autograd_test.plus: the derivative for 'other' (argument 2) is not implemented");
  ck_assert_ptr_null(wk_tensor_grad(b));
  /* the same through a history: b's producer needs the gradient too */
  ck_assert_int_eq(wk_backward(wk_sum(call_plus(a, wk_mul_scalar(b, 2)))), WK_ERR_AUTOGRAD);
  TU_FAILS_WITH(WK_ERR_AUTOGRAD, "the derivative for 'other' (argument 2) is not implemented");
  wk_scope_end();
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

/* The built-in formulas that have no derivative for an argument say so when
 * that argument requires grad (PyTorch's nll_loss weight, batch_norm running
 * stats, ...), and work when it does not. */
START_TEST(test_autograd_missing_gradient_builtin_formulas) {
  wk_scope_begin();
  wk_tensor *x = leaf(tu_rand(WK_SHAPE(3, 4), WK_F64, -1, 1, 7));
  wk_tensor *cls = wk_tensor_from_data((int64_t[]){2, 0, 1}, WK_I64, WK_SHAPE(3));
  wk_tensor *w = TU_T(WK_F64, (4), 0.5, 2, 1, 1.5);
  wk_tensor *wg = leaf(TU_T(WK_F64, (4), 0.5, 2, 1, 1.5));
  TU_OK(wk_backward(wk_cross_entropy_ex(x, cls, w, 1, -100, 0)));
  ck_assert_ptr_nonnull(wk_tensor_grad(x));
  ck_assert_int_eq(wk_backward(wk_cross_entropy_ex(x, cls, wg, 1, -100, 0)), WK_ERR_AUTOGRAD);
  TU_FAILS_WITH(WK_ERR_AUTOGRAD, "cross_entropy: the derivative for 'weight' (argument 3) is not implemented");
  wk_value a[5] = {WK_VT(wk_log_softmax(x, 1)), WK_VT(cls), WK_VT(wg), WK_VI(1), WK_VI(-100)};
  wk_value o[1];
  TU_OK(wk_call("nll_loss", a, 5, o));
  ck_assert_int_eq(wk_backward(o[0].u.t), WK_ERR_AUTOGRAD);
  TU_FAILS_WITH(WK_ERR_AUTOGRAD, "nll_loss: the derivative for 'weight' (argument 3) is not implemented");
  wk_tensor *y = TU_T(WK_F64, (3, 4), 0, 1, 0, 1, 1, 0, 1, 0, 0, 0, 1, 1);
  wk_value b[5] = {WK_VT(x), WK_VT(y), WK_VT(NULL), WK_VT(wg), WK_VI(1)};
  TU_OK(wk_call("binary_cross_entropy_with_logits", b, 5, o));
  ck_assert_int_eq(wk_backward(o[0].u.t), WK_ERR_AUTOGRAD);
  TU_FAILS_WITH(WK_ERR_AUTOGRAD,
                "binary_cross_entropy_with_logits: the derivative for 'pos_weight' (argument 4) is not implemented");
  wk_value bw[5] = {WK_VT(x), WK_VT(y), WK_VT(NULL), WK_VT(w), WK_VI(1)};
  TU_OK(wk_call("binary_cross_entropy_with_logits", bw, 5, o));
  TU_OK(wk_backward(o[0].u.t));
  /* in-place ops whose result does not depend on the old values give zeros */
  wk_tensor *h = wk_mul_scalar(x, 3);
  TU_NOTNULL(wk_zero_(h));
  TU_OK(wk_tensor_zero_grad(x, true));
  TU_OK(wk_backward(wk_sum(wk_add(h, x))));
  TU_EQ_VALS(wk_tensor_grad(x), 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1);
  /* div with a rounding mode is piecewise constant: zero gradients */
  wk_tensor *q = leaf(TU_T(WK_F64, (3), 1.5, -2.5, 7));
  wk_value d[3] = {WK_VT(q), WK_VT(wk_add_scalar(wk_mul_scalar(q, 0), 2)), WK_VS("floor")};
  TU_OK(wk_call("div", d, 3, o));
  TU_OK(wk_backward(wk_sum(o[0].u.t)));
  TU_EQ_VALS(wk_tensor_grad(q), 0, 0, 0);
  wk_scope_end();
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

/* cross_entropy with class probabilities: .grad of a target that requires
 * grad is -log_softmax(x) * w * (1 - eps) scaled by the reduction (mean
 * divides by the N = numel / C elements), values by hand. */
START_TEST(test_autograd_cross_entropy_probability_target_grad) {
  wk_scope_begin();
  const double xv[6] = {0.5, -1, 2, 0, 0.25, -0.75}, tv[6] = {0.2, 0.3, 0.5, 1, 0, 0}, wv[3] = {0.5, 2, 1};
  for (int variant = 0; variant < 4; variant++) {
    int64_t red = variant == 0 ? 1 : variant == 1 ? 2 : variant == 2 ? 0 : 1;
    double eps = variant == 3 ? 0.3 : 0;
    bool weighted = variant >= 1;
    wk_tensor *x = leaf(tu_tensor(xv, WK_F64, WK_SHAPE(2, 3)));
    wk_tensor *t = leaf(tu_tensor(tv, WK_F64, WK_SHAPE(2, 3)));
    wk_tensor *w = weighted ? leaf(tu_tensor(wv, WK_F64, WK_SHAPE(3))) : NULL;
    wk_tensor *loss = wk_cross_entropy_ex(x, t, w, red, -100, eps);
    TU_NOTNULL(loss);
    if (red == 0) loss = wk_sum(loss);
    TU_OK(wk_backward(loss));
    double gt[6], gw[3] = {0, 0, 0}, gx[6];
    for (int n = 0; n < 2; n++) {
      double m = fmax(fmax(xv[3 * n], xv[3 * n + 1]), xv[3 * n + 2]), z = 0, tw = 0;
      for (int k = 0; k < 3; k++) z += exp(xv[3 * n + k] - m);
      for (int k = 0; k < 3; k++) tw += (weighted ? wv[k] : 1) * (tv[3 * n + k] * (1 - eps) + eps / 3);
      for (int k = 0; k < 3; k++) {
        double logp = xv[3 * n + k] - m - log(z), scale = red == 1 ? 0.5 : 1, wk = weighted ? wv[k] : 1;
        double tk = tv[3 * n + k] * (1 - eps) + eps / 3;
        gt[3 * n + k] = -logp * wk * (1 - eps) * scale;
        gw[k] += -logp * tk * scale;
        gx[3 * n + k] = (exp(logp) * tw - wk * tk) * scale;
      }
    }
    TU_CLOSE(wk_tensor_grad(t), gt, 6, 1e-12, 1e-14);
    TU_CLOSE(wk_tensor_grad(x), gx, 6, 1e-12, 1e-14);
    if (weighted) TU_CLOSE(wk_tensor_grad(w), gw, 3, 1e-12, 1e-14);
  }
  /* a target that does not require grad gets nothing, the input its gradient */
  wk_tensor *x = leaf(tu_tensor(xv, WK_F64, WK_SHAPE(2, 3)));
  TU_OK(wk_backward(wk_cross_entropy_ex(x, tu_tensor(tv, WK_F64, WK_SHAPE(2, 3)), NULL, 1, -100, 0)));
  ck_assert_ptr_nonnull(wk_tensor_grad(x));
  wk_scope_end();
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

/* prod's derivative is the product of the other elements, also at zeros
 * (it divided by x before): one zero, two zeros, three, in prod and
 * prod.dim_int, values by hand and against finite differences (first and
 * second order). */
static wk_tensor *gc_prod_all(void *ctx, wk_tensor *const *in, int n) {
  (void)ctx, (void)n;
  return wk_prod(in[0]);
}
static wk_tensor *gc_prod_dim(void *ctx, wk_tensor *const *in, int n) {
  (void)n;
  return wk_prod_dim(in[0], *(const int64_t *)ctx, false);
}
START_TEST(test_autograd_prod_at_zeros) {
  wk_scope_begin();
  wk_tensor *x1 = leaf(TU_T(WK_F64, (4), 2, 0, 3, -1.5));
  TU_OK(wk_backward(wk_prod(x1)));
  TU_EQ_VALS(wk_tensor_grad(x1), 0, -9, 0, 0);
  wk_tensor *x2 = leaf(TU_T(WK_F64, (4), 2, 0, 0, 3));
  TU_OK(wk_backward(wk_prod(x2)));
  TU_EQ_VALS(wk_tensor_grad(x2), 0, 0, 0, 0);
  /* rows: one zero, two zeros, none, three */
  wk_tensor *m = leaf(TU_T(WK_F64, (4, 3), 1, 0, 2, 0, 0, 5, 3, 4, 5, 0, 0, 0));
  TU_OK(wk_backward(wk_sum(wk_prod_dim(m, 1, false))));
  TU_EQ_VALS(wk_tensor_grad(m), 0, 2, 0, 0, 0, 0, 20, 15, 12, 0, 0, 0);
  TU_OK(wk_tensor_zero_grad(m, true));
  TU_OK(wk_backward(wk_sum(wk_prod_dim(m, 0, true)))); /* columns: two zeros, three, one */
  TU_EQ_VALS(wk_tensor_grad(m), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 50);
  /* a 0-dim input */
  wk_tensor *s = leaf(wk_scalar_tensor(0, WK_F64));
  TU_OK(wk_backward(wk_prod(s)));
  TU_EQ_VALS(wk_tensor_grad(s), 1);
  /* finite differences, first and second order, around the zeros */
  wk_gradcheck_opts o = {1e-6, 1e-5, 1e-4, 3};
  wk_tensor *cases[] = {x1, x2, leaf(TU_T(WK_F64, (5), 0, 0, 0, 2, 0.5)), leaf(TU_T(WK_F64, (3), 1.5, -2, 0.5))};
  for (int i = 0; i < 4; i++) {
    ck_assert_msg(wk_gradcheck(gc_prod_all, NULL, &cases[i], 1, &o) == WK_OK, "prod case %d: %s", i,
                  wk_last_error_message());
    ck_assert_msg(wk_gradgradcheck(gc_prod_all, NULL, &cases[i], 1, &o) == WK_OK, "prod case %d (second order): %s",
                  i, wk_last_error_message());
  }
  for (int64_t d = 0; d < 2; d++) {
    ck_assert_msg(wk_gradcheck(gc_prod_dim, &d, &m, 1, &o) == WK_OK, "prod.dim_int dim %d: %s", (int)d,
                  wk_last_error_message());
    ck_assert_msg(wk_gradgradcheck(gc_prod_dim, &d, &m, 1, &o) == WK_OK, "prod.dim_int dim %d (second order): %s",
                  (int)d, wk_last_error_message());
  }
  wk_scope_end();
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

/* A 2-layer MLP written with raw ops fits XOR with plain SGD on .grad. */
START_TEST(test_autograd_mlp_fits_xor) {
  wk_manual_seed(1);
  wk_scope_begin();
  wk_tensor *w1 = leaf(wk_scope_keep(wk_mul_scalar(wk_randn(WK_SHAPE(8, 2), (wk_options){0}), 0.7)));
  wk_tensor *b1 = leaf(wk_scope_keep(wk_zeros(WK_SHAPE(8), (wk_options){0})));
  wk_tensor *w2 = leaf(wk_scope_keep(wk_mul_scalar(wk_randn(WK_SHAPE(1, 8), (wk_options){0}), 0.7)));
  wk_tensor *b2 = leaf(wk_scope_keep(wk_zeros(WK_SHAPE(1), (wk_options){0})));
  wk_scope_end();
  wk_tensor *x = TU_T(WK_F32, (4, 2), 0, 0, 0, 1, 1, 0, 1, 1);
  wk_tensor *y = TU_T(WK_F32, (4, 1), 0, 1, 1, 0);
  wk_tensor *params[] = {w1, b1, w2, b2};
  double loss_v = 1;
  for (int step = 0; step < 2000; step++) {
    wk_scope_begin();
    wk_tensor *h = wk_tanh(wk_linear(x, w1, b1));
    wk_tensor *out = wk_linear(h, w2, b2);
    wk_tensor *loss = wk_mse_loss(out, y);
    TU_OK(wk_backward(loss));
    TU_OK(wk_item(loss, &loss_v));
    wk_no_grad_begin();
    for (int p = 0; p < 4; p++) {
      wk_tensor *g = wk_tensor_grad(params[p]);
      ck_assert_ptr_nonnull(wk_sub_scaled_(params[p], g, 0.1) ? params[p] : NULL);
      TU_OK(wk_tensor_zero_grad(params[p], true));
    }
    TU_OK(wk_no_grad_end());
    wk_scope_end();
  }
  ck_assert_msg(loss_v < 1e-3, "XOR loss after training: %g", loss_v);
  for (int p = 0; p < 4; p++) wk_release(params[p]);
  wk_release(x);
  wk_release(y);
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("autograd");
  TCase *tc = tcase_create("semantics");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_set_timeout(tc, 120); /* the 100k-node graph takes a while under sanitizers */
  tcase_add_test(tc, test_autograd_square);
  tcase_add_test(tc, test_autograd_fan_in_accumulation);
  tcase_add_test(tc, test_autograd_nonscalar_backward);
  tcase_add_test(tc, test_autograd_retain_graph_and_freed_graph);
  tcase_add_test(tc, test_autograd_grad_function);
  tcase_add_test(tc, test_autograd_double_backward);
  tcase_add_test(tc, test_autograd_no_grad_and_detach);
  tcase_add_test(tc, test_autograd_inplace_checks);
  tcase_add_test(tc, test_autograd_hooks);
  tcase_add_test(tc, test_autograd_anomaly_mode);
  tcase_add_test(tc, test_autograd_deep_graph);
  tcase_add_test(tc, test_autograd_broadcast_reduction_and_names);
  tcase_add_test(tc, test_autograd_formula_table_complete);
  tcase_add_test(tc, test_autograd_missing_gradient_is_an_error);
  tcase_add_test(tc, test_autograd_missing_gradient_builtin_formulas);
  tcase_add_test(tc, test_autograd_cross_entropy_probability_target_grad);
  tcase_add_test(tc, test_autograd_prod_at_zeros);
  suite_add_tcase(s, tc);
  TCase *gc = tcase_create("gradcheck");
  tcase_add_checked_fixture(gc, tu_setup, NULL);
  tcase_set_timeout(gc, 60);
  tcase_add_loop_test(gc, test_autograd_gradcheck_ops, 0, (int)(sizeof g_cases / sizeof g_cases[0]));
  suite_add_tcase(s, gc);
  TCase *e2e = tcase_create("end-to-end");
  tcase_add_checked_fixture(e2e, tu_setup, NULL);
  tcase_set_timeout(e2e, 60);
  tcase_add_test(e2e, test_autograd_mlp_fits_xor);
  suite_add_tcase(s, e2e);
  return s;
}
TU_MAIN(make_suite)
