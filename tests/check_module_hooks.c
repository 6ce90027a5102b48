/* Full backward hooks on modules (wk_module_register_full_backward_hook /
 * _pre_hook, ABI 1.4) against PyTorch's register_full_backward_hook /
 * register_full_backward_pre_hook on the same float64 weights and inputs
 * (tests/hooks_ref/gen_backward_hooks.py -> backward_hooks_ref.h): grad_input,
 * grad_output, replacements, removable handles, no input requiring grad,
 * nested modules, and bad arguments. */
#include <wick/nn.h>

#include "hooks_ref/backward_hooks_ref.h"
#include "testutil.h"

static const double W[6] = {0.1, -0.2, 0.3, 0.4, 0.5, -0.6}, B[2] = {0.05, -0.07};
static const double W1[12] = {0.2, -0.1, 0.4, -0.3, 0.6, 0.1, 0.5, 0.2, -0.4, 0.1, -0.5, 0.3};
static const double B1[4] = {0.01, -0.02, 0.03, 0.0}, W2[8] = {0.3, -0.2, 0.1, 0.5, -0.4, 0.2, 0.6, -0.1};
static const double B2[2] = {0.02, 0.04};

static wk_tensor *input_x(bool requires_grad) {
  double v[12];
  for (int i = 0; i < 12; i++) v[i] = i / 10.0 - 0.5;
  wk_tensor *x = tu_tensor(v, WK_F64, WK_SHAPE(4, 3));
  if (requires_grad) wk_tensor_set_requires_grad(x, true);
  return x;
}

static void set_param(wk_module *m, const char *name, const double *v) {
  wk_tensor *p = wk_module_param(m, name);
  TU_NOTNULL(p);
  double buf[16];
  int64_t n = wk_tensor_numel(p);
  for (int64_t i = 0; i < n; i++) buf[i] = v[i];
  wk_no_grad_begin();
  wk_tensor *src = tu_tensor(buf, WK_F64, wk_tensor_sizes(p), wk_tensor_dim(p));
  TU_OK(wk_copy_(p, src) ? WK_OK : wk_last_error());
  wk_no_grad_end();
}

static wk_module *linear(void) {
  wk_module *m = wk_nn_linear(3, 2, true);
  TU_NOTNULL(m);
  TU_OK(wk_module_to(m, (wk_device){0}, WK_F64));
  set_param(m, "weight", W);
  set_param(m, "bias", B);
  return m;
}

/* What the hooks saw (copies, owned). */
typedef struct {
  int full_calls, pre_calls, n_in, n_out;
  bool gi_null;
  wk_tensor *gi, *go;
  double scale_in, scale_out; /* replacements: grad * scale (0: none) */
  wk_status fail;             /* a hook that fails */
  bool wrong_shape;
} rec;

static void rec_clear(rec *r) {
  wk_release(r->gi);
  wk_release(r->go);
  r->gi = r->go = NULL;
}

static wk_status full_hook(void *user, wk_module *m, wk_tensor *const *gi, int n_in, wk_tensor *const *go, int n_out,
                           wk_tensor **new_gi) {
  (void)m;
  rec *r = user;
  r->full_calls++;
  r->n_in = n_in;
  r->n_out = n_out;
  r->gi_null = gi[0] == NULL;
  if (r->fail) return wk_error(r->fail, "test hook refuses");
  rec_clear(r);
  r->gi = gi[0] ? wk_scope_keep(wk_clone(gi[0])) : NULL;
  r->go = n_out ? wk_scope_keep(wk_clone(go[0])) : NULL;
  if (r->wrong_shape) new_gi[0] = wk_scope_keep(wk_zeros(WK_SHAPE(2, 2), (wk_options){.dtype = WK_F64}));
  else if (r->scale_in != 0 && gi[0]) new_gi[0] = wk_scope_keep(wk_mul_scalar(gi[0], r->scale_in));
  return WK_OK;
}

static wk_status pre_hook(void *user, wk_module *m, wk_tensor *const *go, int n_out, wk_tensor **new_go) {
  (void)m;
  rec *r = user;
  r->pre_calls++;
  ck_assert_int_eq(n_out, 1);
  if (r->scale_out != 0) new_go[0] = wk_scope_keep(wk_mul_scalar(go[0], r->scale_out));
  return WK_OK;
}

static wk_tensor *sum_sq(wk_tensor *y) { return wk_sum(wk_mul(y, y)); }

static wk_tensor *grad_of(wk_tensor *t) {
  wk_tensor *g = wk_tensor_grad(t);
  return g;
}

START_TEST(test_module_hooks_full_hook_sees_and_replaces_grad_input) {
  wk_scope_begin();
  int64_t live = wk_live_tensors();
  wk_module *m = linear();
  rec r = {.scale_in = 2};
  int64_t id = wk_module_register_full_backward_hook(m, full_hook, &r);
  ck_assert_int_gt(id, 0);
  wk_tensor *x = input_x(true);
  TU_OK(wk_backward(sum_sq(wk_module_forward(m, x))));
  ck_assert_int_eq(r.full_calls, 1);
  ck_assert_int_eq(r.n_in, 1);
  ck_assert_int_eq(r.n_out, 1);
  TU_CLOSE(r.go, ref_a_go, 8, 1e-10, 1e-12);
  TU_CLOSE(r.gi, ref_a_gi, 12, 1e-10, 1e-12);
  TU_CLOSE(grad_of(x), ref_a_xgrad, 12, 1e-10, 1e-12); /* the doubled grad_input flowed on */
  TU_CLOSE(grad_of(wk_module_param(m, "weight")), ref_a_wgrad, 6, 1e-10, 1e-12);
  TU_CLOSE(grad_of(wk_module_param(m, "bias")), ref_a_bgrad, 2, 1e-10, 1e-12);
  /* the handle removed: nothing is called, and x.grad is the plain one */
  TU_OK(wk_module_remove_hook(m, id));
  ck_assert_int_eq(wk_module_remove_hook(m, id), WK_ERR_NOT_FOUND);
  wk_clear_error();
  wk_tensor *x2 = input_x(true);
  TU_OK(wk_backward(sum_sq(wk_module_forward(m, x2))));
  ck_assert_int_eq(r.full_calls, 1);
  TU_CLOSE(grad_of(x2), ref_a_xgrad_plain, 12, 1e-10, 1e-12);
  rec_clear(&r);
  wk_module_release(m);
  wk_scope_end();
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_module_hooks_pre_hook_replaces_grad_output) {
  wk_scope_begin();
  int64_t live = wk_live_tensors();
  wk_module *m = linear();
  rec r = {.scale_out = 3};
  ck_assert_int_gt(wk_module_register_full_backward_pre_hook(m, pre_hook, &r), 0);
  ck_assert_int_gt(wk_module_register_full_backward_hook(m, full_hook, &r), 0);
  wk_tensor *x = input_x(true);
  TU_OK(wk_backward(sum_sq(wk_module_forward(m, x))));
  ck_assert_int_eq(r.pre_calls, 1);
  ck_assert_int_eq(r.full_calls, 1);
  TU_CLOSE(r.go, ref_b_go, 8, 1e-10, 1e-12); /* the full hook sees the tripled grad_output */
  TU_CLOSE(r.gi, ref_b_gi, 12, 1e-10, 1e-12);
  TU_CLOSE(grad_of(x), ref_b_xgrad, 12, 1e-10, 1e-12);
  TU_CLOSE(grad_of(wk_module_param(m, "weight")), ref_b_wgrad, 6, 1e-10, 1e-12);
  rec_clear(&r);
  wk_module_release(m);
  wk_scope_end();
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_module_hooks_on_a_sequential) {
  wk_scope_begin();
  wk_module *seq = wk_nn_sequential((wk_module *[]){wk_nn_linear(3, 4, true), wk_nn_relu(), wk_nn_linear(4, 2, true)}, 3);
  TU_NOTNULL(seq);
  TU_OK(wk_module_to(seq, (wk_device){0}, WK_F64));
  set_param(seq, "0.weight", W1);
  set_param(seq, "0.bias", B1);
  set_param(seq, "2.weight", W2);
  set_param(seq, "2.bias", B2);
  rec r = {0};
  ck_assert_int_gt(wk_module_register_full_backward_hook(seq, full_hook, &r), 0);
  wk_tensor *x = input_x(true);
  wk_tensor *c = TU_T(WK_F64, (2), 1.0, -2.0);
  TU_OK(wk_backward(wk_sum(wk_mul(wk_module_forward(seq, x), c))));
  ck_assert_int_eq(r.full_calls, 1);
  TU_CLOSE(r.go, ref_c_go, 8, 1e-10, 1e-12);
  TU_CLOSE(r.gi, ref_c_gi, 12, 1e-10, 1e-12);
  TU_CLOSE(grad_of(x), ref_c_gi, 12, 1e-10, 1e-12);
  TU_CLOSE(grad_of(wk_module_param(seq, "0.weight")), ref_c_w1grad, 12, 1e-10, 1e-12);
  rec_clear(&r);
  wk_module_release(seq);
  wk_scope_end();
}
END_TEST

START_TEST(test_module_hooks_no_input_requires_grad) {
  wk_scope_begin();
  wk_module *m = linear();
  rec r = {0};
  ck_assert_int_gt(wk_module_register_full_backward_hook(m, full_hook, &r), 0);
  TU_OK(wk_backward(sum_sq(wk_module_forward(m, input_x(false)))));
  ck_assert_int_eq(r.full_calls, 1);
  ck_assert(r.gi_null); /* PyTorch: grad_input == (None,) */
  ck_assert_int_eq(r.n_out, 1);
  TU_CLOSE(r.go, ref_d_go, 8, 1e-10, 1e-12);
  TU_CLOSE(grad_of(wk_module_param(m, "weight")), ref_d_wgrad, 6, 1e-10, 1e-12);
  /* such a hook may not return a gradient */
  rec_clear(&r);
  r.wrong_shape = true;
  ck_assert_int_ne(wk_backward(sum_sq(wk_module_forward(m, input_x(false)))), WK_OK);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "no input of the module requires grad");
  rec_clear(&r);
  wk_module_release(m);
  wk_scope_end();
}
END_TEST

START_TEST(test_module_hooks_per_call_snapshot_and_no_grad) {
  wk_scope_begin();
  wk_module *m = linear();
  rec r = {0};
  int64_t id = wk_module_register_full_backward_hook(m, full_hook, &r);
  /* the module called twice in one graph: the hook runs once per call */
  wk_tensor *x = input_x(true);
  wk_tensor *loss = wk_add(sum_sq(wk_module_forward(m, x)), wk_sum(wk_module_forward(m, wk_mul_scalar(x, 2))));
  /* removed after forward: the graph already built still calls it (PyTorch snapshots the hooks per call) */
  TU_OK(wk_module_remove_hook(m, id));
  TU_OK(wk_backward(loss));
  ck_assert_int_eq(r.full_calls, 2);
  /* under no_grad nothing is wrapped and nothing is called */
  ck_assert_int_gt(wk_module_register_full_backward_hook(m, full_hook, &r), 0);
  wk_no_grad_begin();
  wk_tensor *y = wk_module_forward(m, x);
  wk_no_grad_end();
  TU_NOTNULL(y);
  ck_assert(!wk_tensor_requires_grad(y));
  /* the output's node is named as PyTorch's */
  wk_tensor *y2 = wk_module_forward(m, x);
  ck_assert_str_eq(wk_tensor_grad_fn_name(y2), "BackwardHookFunctionBackward");
  rec_clear(&r);
  wk_module_release(m);
  wk_scope_end();
}
END_TEST

START_TEST(test_module_hooks_errors) {
  wk_scope_begin();
  wk_module *m = linear();
  rec r = {0};
  ck_assert_int_eq(wk_module_register_full_backward_hook(NULL, full_hook, &r), 0);
  TU_FAILS_WITH(WK_ERR_NULL, "module");
  ck_assert_int_eq(wk_module_register_full_backward_hook(m, NULL, &r), 0);
  TU_FAILS_WITH(WK_ERR_NULL, "fn");
  ck_assert_int_eq(wk_module_register_full_backward_pre_hook(NULL, pre_hook, &r), 0);
  TU_FAILS_WITH(WK_ERR_NULL, "module");
  int64_t id = wk_module_register_full_backward_hook(m, full_hook, &r);
  /* a replacement of the wrong shape */
  r.wrong_shape = true;
  ck_assert_int_eq(wk_backward(sum_sq(wk_module_forward(m, input_x(true)))), WK_ERR_SHAPE);
  TU_FAILS_WITH(WK_ERR_SHAPE, "Linear: a full backward hook returned grad_input[0] of shape [2, 2], expected [4, 3]");
  /* a hook that fails fails the backward with its error */
  r.wrong_shape = false;
  r.fail = WK_ERR_INVALID_ARG;
  ck_assert_int_eq(wk_backward(sum_sq(wk_module_forward(m, input_x(true)))), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "test hook refuses");
  TU_OK(wk_module_remove_hook(m, id));
  rec_clear(&r);
  wk_module_release(m);
  wk_scope_end();
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("module_hooks");
  TCase *tc = tcase_create("full-backward-hooks");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_test(tc, test_module_hooks_full_hook_sees_and_replaces_grad_input);
  tcase_add_test(tc, test_module_hooks_pre_hook_replaces_grad_output);
  tcase_add_test(tc, test_module_hooks_on_a_sequential);
  tcase_add_test(tc, test_module_hooks_no_input_requires_grad);
  tcase_add_test(tc, test_module_hooks_per_call_snapshot_and_no_grad);
  tcase_add_test(tc, test_module_hooks_errors);
  suite_add_tcase(s, tc);
  return s;
}
TU_MAIN(make_suite)
