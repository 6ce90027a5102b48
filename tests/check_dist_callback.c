/* check_dist_callback: wk_autograd_queue_callback (ABI 1.3), the end-of-backward
 * callback DistributedDataParallel waits for its all-reduces in (PyTorch's
 * Variable._execution_engine.queue_callback): queued from hooks, run once the
 * whole graph has run (every .grad is final), in order, possibly queuing
 * more; a failing callback fails the backward with its message; none runs
 * after a failed backward; refused outside a backward. */
#include "testutil.h"

typedef struct {
  wk_tensor *a, *b; /* leaves */
  int hooks, calls, order[8];
  bool grads_final; /* both .grad set when the callback ran */
  bool queued_once, queue_more, fail;
} probe;

static wk_status cb_second(void *user) {
  probe *p = user;
  p->order[p->calls++] = 2;
  return WK_OK;
}

static wk_status cb_first(void *user) {
  probe *p = user;
  wk_tensor *ga = wk_tensor_grad(p->a), *gb = wk_tensor_grad(p->b);
  p->grads_final = ga && gb;
  wk_release(ga);
  wk_release(gb);
  p->order[p->calls++] = 1;
  if (p->queue_more && wk_autograd_queue_callback(cb_second, p) != WK_OK) return wk_last_error();
  if (p->fail) return wk_error(WK_ERR_STATE, "probe: the callback fails on purpose");
  return WK_OK;
}

/* A post-accumulate hook that queues the callback once per backward. */
static void hook(void *user, wk_tensor *param) {
  (void)param;
  probe *p = user;
  p->hooks++;
  if (!p->queued_once) {
    p->queued_once = true;
    ck_assert_int_eq(wk_autograd_queue_callback(cb_first, p), WK_OK);
  }
}

/* loss = sum(a * b * 3): a and b get their gradients from separate AccumulateGrad nodes. */
static probe *setup_probe(probe *p) {
  memset(p, 0, sizeof *p);
  p->a = wk_ones(WK_SHAPE(4), (wk_options){0});
  p->b = wk_full(WK_SHAPE(4), 2, (wk_options){0});
  TU_OK(wk_tensor_set_requires_grad(p->a, true));
  TU_OK(wk_tensor_set_requires_grad(p->b, true));
  TU_OK(wk_tensor_register_post_accumulate_grad_hook(p->a, hook, p));
  TU_OK(wk_tensor_register_post_accumulate_grad_hook(p->b, hook, p));
  return p;
}

static wk_tensor *loss_of(probe *p) {
  return wk_sum(wk_mul_scalar(wk_mul(p->a, p->b), 3));
}

START_TEST(test_dist_callback_runs_after_the_graph) {
  wk_scope_begin();
  probe p;
  setup_probe(&p);
  TU_OK(wk_backward(loss_of(&p)));
  ck_assert_int_eq(p.hooks, 2);
  ck_assert_int_eq(p.calls, 1);
  ck_assert_msg(p.grads_final, "the callback ran before every .grad was accumulated");
  /* the next backward queues again */
  p.queued_once = false;
  p.queue_more = true;
  TU_OK(wk_backward(loss_of(&p)));
  ck_assert_int_eq(p.calls, 3);
  ck_assert_int_eq(p.order[1], 1);
  ck_assert_int_eq(p.order[2], 2); /* queued by a callback, run after it */
  double g = 0;
  wk_tensor *ga = wk_tensor_grad(p.a);
  wk_tensor_get(ga, (int64_t[]){0}, &g);
  ck_assert_double_eq(g, 12); /* two backwards of d(3ab)/da = 6 */
  wk_release(ga);
  wk_scope_end();
}
END_TEST

static wk_tensor *grad_hook(void *user, wk_tensor *g) {
  probe *p = user;
  ck_assert_int_eq(wk_autograd_queue_callback(cb_second, p), WK_OK);
  (void)g;
  return NULL;
}

START_TEST(test_dist_callback_in_wk_grad) {
  wk_scope_begin();
  probe p;
  setup_probe(&p);
  wk_tensor *y = wk_mul(p.a, p.b);
  TU_OK(wk_tensor_register_hook(y, grad_hook, &p));
  wk_tensor *out = NULL, *s = wk_sum(y);
  TU_OK(wk_grad(&s, 1, NULL, &p.a, 1, &out, NULL, false));
  ck_assert_int_eq(p.calls, 1);
  ck_assert_int_eq(p.order[0], 2);
  ck_assert_int_eq(p.hooks, 0);
  wk_release(out);
  wk_scope_end();
}
END_TEST

START_TEST(test_dist_callback_failure_fails_backward) {
  wk_scope_begin();
  probe p;
  setup_probe(&p);
  p.fail = true;
  ck_assert_int_eq(wk_backward(loss_of(&p)), WK_ERR_STATE);
  ck_assert_str_eq(wk_last_error_message(), "probe: the callback fails on purpose");
  wk_clear_error();
  ck_assert_int_eq(p.calls, 1);
  wk_scope_end();
}
END_TEST

static wk_status never(void *user) {
  (void)user;
  ck_abort_msg("a callback ran after a failed backward");
  return WK_OK;
}

/* A gradient hook queues a callback; the backward then fails (anomaly mode
 * finds sqrt's infinite gradient at 0): the callback is dropped. */
static wk_tensor *queue_never(void *user, wk_tensor *g) {
  (void)user;
  (void)g;
  ck_assert_int_eq(wk_autograd_queue_callback(never, NULL), WK_OK);
  return NULL;
}

START_TEST(test_dist_callback_dropped_on_error) {
  wk_scope_begin();
  wk_tensor *a = wk_zeros(WK_SHAPE(3), (wk_options){0});
  TU_OK(wk_tensor_set_requires_grad(a, true));
  wk_tensor *y = wk_mul_scalar(wk_sqrt(a), 2);
  TU_OK(wk_tensor_register_hook(y, queue_never, NULL));
  wk_set_anomaly_enabled(true);
  wk_status s = wk_backward(wk_sum(y));
  wk_set_anomaly_enabled(false);
  ck_assert_int_eq(s, WK_ERR_AUTOGRAD);
  wk_clear_error();
  /* the next backward starts with an empty queue */
  wk_tensor *b = wk_ones(WK_SHAPE(3), (wk_options){0});
  TU_OK(wk_tensor_set_requires_grad(b, true));
  TU_OK(wk_backward(wk_sum(wk_mul_scalar(b, 2))));
  wk_scope_end();
}
END_TEST

START_TEST(test_dist_callback_errors) {
  ck_assert_int_eq(wk_autograd_queue_callback(cb_second, NULL), WK_ERR_STATE);
  ck_assert_ptr_nonnull(strstr(wk_last_error_message(), "no backward is running"));
  wk_clear_error();
  ck_assert_int_eq(wk_autograd_queue_callback(NULL, NULL), WK_ERR_NULL);
  wk_clear_error();
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("dist_callback");
  TCase *tc = tcase_create("queue_callback");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_test(tc, test_dist_callback_runs_after_the_graph);
  tcase_add_test(tc, test_dist_callback_in_wk_grad);
  tcase_add_test(tc, test_dist_callback_failure_fails_backward);
  tcase_add_test(tc, test_dist_callback_dropped_on_error);
  tcase_add_test(tc, test_dist_callback_errors);
  suite_add_tcase(s, tc);
  return s;
}

TU_MAIN(make_suite)
