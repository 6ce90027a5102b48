/* check_checkpoint: activation checkpointing (wk_activation_checkpoint,
 * PyTorch's torch.utils.checkpoint with use_reentrant=True): gradients and
 * outputs bit-identical to the run without it (dropout included: the RNG
 * state is restored for the recompute and left as it was), fewer tensors
 * kept between forward and backward, a parameter shared by the segment and
 * the rest of the graph, ResNet-18 checkpointed per stage, and the errors. */
#include "testutil.h"

#include <wick/nn.h>

static wk_tensor *leaf(wk_tensor *t) {
  ck_assert_int_eq(wk_tensor_set_requires_grad(t, true), WK_OK);
  return t;
}

/* ---- a two-layer MLP segment with dropout ---- */
typedef struct {
  wk_tensor *w1, *b1, *w2, *b2;
  int calls;
} mlp;

static wk_tensor *mlp_segment(void *user, wk_tensor *const *in, int n) {
  mlp *m = user;
  ck_assert_int_eq(n, 1);
  m->calls++;
  wk_tensor *h = wk_relu(wk_linear(in[0], m->w1, m->b1));
  wk_tensor *d = wk_dropout(h, 0.5, true, NULL);
  return wk_tanh(wk_linear(d, m->w2, m->b2));
}

/* The bytes of t (cpu), malloc'd. */
static void *bytes_of(wk_tensor *t, size_t *n) {
  wk_tensor *c = wk_contiguous(t);
  *n = (size_t)wk_tensor_numel(c) * wk_dtype_size(wk_tensor_dtype(c));
  void *p = malloc(*n ? *n : 1);
  memcpy(p, wk_tensor_data(c), *n);
  wk_release(c);
  return p;
}
static void assert_bit_identical(wk_tensor *a, wk_tensor *b, const char *what) {
  TU_NOTNULL(a);
  TU_NOTNULL(b);
  size_t na, nb;
  void *pa = bytes_of(a, &na), *pb = bytes_of(b, &nb);
  ck_assert_msg(na == nb && memcmp(pa, pb, na) == 0, "%s differs with checkpointing", what);
  free(pa);
  free(pb);
}

/* One step: loss = sum(seg(x)^2) [+ sum(x @ w1^T) when shared]; returns the
 * output, and the live-tensor count right after the forward. */
static wk_tensor *mlp_step(mlp *m, wk_tensor *x, bool ckpt, bool shared, int64_t *live_after_forward) {
  int64_t before = wk_live_tensors();
  wk_manual_seed(1234);
  wk_tensor *y = ckpt ? wk_activation_checkpoint(mlp_segment, m, &x, 1) : mlp_segment(m, &x, 1);
  TU_NOTNULL(y);
  wk_tensor *loss = wk_sum(wk_mul(y, y));
  if (shared) loss = wk_add(loss, wk_sum(wk_linear(x, m->w1, NULL)));
  if (live_after_forward) *live_after_forward = wk_live_tensors() - before;
  TU_OK(wk_backward(loss));
  return y;
}

START_TEST(test_checkpoint_mlp_bit_identical) {
  for (int shared = 0; shared < 2; shared++) {
    wk_scope_begin();
    mlp m = {leaf(tu_rand(WK_SHAPE(32, 16), WK_F32, -0.5, 0.5, 1)), leaf(tu_rand(WK_SHAPE(32), WK_F32, -0.5, 0.5, 2)),
             leaf(tu_rand(WK_SHAPE(8, 32), WK_F32, -0.5, 0.5, 3)), leaf(tu_rand(WK_SHAPE(8), WK_F32, -0.5, 0.5, 4)), 0};
    wk_tensor *p[5] = {m.w1, m.b1, m.w2, m.b2, NULL};
    wk_tensor *x = leaf(tu_rand(WK_SHAPE(64, 16), WK_F32, -1, 1, 5));
    p[4] = x;
    int64_t live_plain, live_ckpt;
    wk_tensor *y0 = mlp_step(&m, x, false, shared, &live_plain);
    uint64_t s0, o0, s1, o1;
    TU_OK(wk_rng_get_state(wk_cpu(), &s0, &o0));
    wk_tensor *g0[5];
    for (int i = 0; i < 5; i++) {
      g0[i] = wk_tensor_grad(p[i]);
      TU_OK(wk_tensor_zero_grad(p[i], true));
    }
    m.calls = 0;
    wk_tensor *y1 = mlp_step(&m, x, true, shared, &live_ckpt);
    ck_assert_int_eq(m.calls, 2); /* the forward, and the recompute in backward */
    TU_OK(wk_rng_get_state(wk_cpu(), &s1, &o1));
    ck_assert(s0 == s1 && o0 == o1); /* the generator continues as without checkpointing */
    assert_bit_identical(y0, y1, "the output");
    const char *names[5] = {"w1.grad", "b1.grad", "w2.grad", "b2.grad", "x.grad"};
    for (int i = 0; i < 5; i++) assert_bit_identical(g0[i], wk_tensor_grad(p[i]), names[i]);
    /* the tensors a step added by the end of its forward: the segment's
     * intermediates (linear, relu, dropout's mask, ...) were not kept */
    ck_assert_msg(live_ckpt + 4 <= live_plain, "live tensors after forward: %lld with checkpointing, %lld without",
                  (long long)live_ckpt, (long long)live_plain);
    wk_scope_end();
    ck_assert_int_eq(wk_live_tensors(), 0);
  }
}
END_TEST

static wk_tensor *identity_segment(void *user, wk_tensor *const *in, int n) {
  (void)user, (void)n; /* a view of the input itself */
  return wk_view(in[0], WK_SHAPE(-1));
}
static wk_tensor *failing_segment(void *user, wk_tensor *const *in, int n) {
  (void)in, (void)n;
  int *calls = user;
  if ((*calls)++ == 0) return wk_mul_scalar(in[0], 2);
  wk_error(WK_ERR_STATE, "segment: refusing the second run");
  return NULL;
}
static wk_tensor *two_input_segment(void *user, wk_tensor *const *in, int n) {
  (void)user, (void)n;
  return wk_mul(wk_sin(in[0]), in[1]);
}

START_TEST(test_checkpoint_inputs_and_errors) {
  wk_scope_begin();
  wk_tensor *x = leaf(tu_rand(WK_SHAPE(3), WK_F64, -1, 1, 7)), *b = tu_rand(WK_SHAPE(3), WK_F64, -1, 1, 8);
  /* two inputs, one without grad; grad_fn name; values */
  wk_tensor *in[2] = {x, b};
  wk_tensor *y = wk_activation_checkpoint(two_input_segment, NULL, in, 2);
  TU_NOTNULL(y);
  ck_assert_str_eq(wk_tensor_grad_fn_name(y), "CheckpointBackward");
  TU_OK(wk_backward(wk_sum(y)));
  double xv[3], bv[3], gv[3];
  TU_OK(wk_tensor_to_f64(x, xv, 3));
  TU_OK(wk_tensor_to_f64(b, bv, 3));
  TU_OK(wk_tensor_to_f64(wk_tensor_grad(x), gv, 3));
  for (int i = 0; i < 3; i++) ck_assert_double_eq_tol(gv[i], cos(xv[i]) * bv[i], 1e-15);
  /* a segment returning a view of its input gets a fresh handle with the node */
  TU_OK(wk_tensor_zero_grad(x, true));
  wk_tensor *id = wk_activation_checkpoint(identity_segment, NULL, &x, 1);
  ck_assert(id != x && !wk_tensor_is_leaf(id) && wk_tensor_is_leaf(x));
  TU_OK(wk_backward(wk_sum(wk_mul_scalar(id, 3))));
  TU_EQ_VALS(wk_tensor_grad(x), 3, 3, 3);
  /* nothing that requires grad is read: no node */
  wk_tensor *plain = wk_activation_checkpoint(two_input_segment, NULL, (wk_tensor *[]){b, b}, 2);
  ck_assert(plain && !wk_tensor_requires_grad(plain));
  /* no input requires grad but the segment reads one (a parameter): a node,
   * and the parameter's gradient (unlike PyTorch's reentrant checkpoint) */
  TU_OK(wk_tensor_zero_grad(x, true));
  wk_tensor *pr = wk_activation_checkpoint(two_input_segment, NULL, (wk_tensor *[]){b, x}, 2);
  ck_assert(pr && wk_tensor_requires_grad(pr));
  TU_OK(wk_backward(wk_sum(pr)));
  TU_OK(wk_tensor_to_f64(wk_tensor_grad(x), gv, 3));
  for (int i = 0; i < 3; i++) ck_assert_double_eq_tol(gv[i], sin(bv[i]), 1e-15);
  /* bad arguments */
  ck_assert_ptr_null(wk_activation_checkpoint(NULL, NULL, &x, 1));
  TU_FAILS_WITH(WK_ERR_NULL, "activation_checkpoint: argument 'fn' is NULL");
  ck_assert_ptr_null(wk_activation_checkpoint(identity_segment, NULL, NULL, 1));
  TU_FAILS_WITH(WK_ERR_NULL, "argument 'inputs' is NULL");
  ck_assert_ptr_null(wk_activation_checkpoint(identity_segment, NULL, (wk_tensor *[]){NULL}, 1));
  TU_FAILS_WITH(WK_ERR_NULL, "argument 'inputs[i]' is NULL");
  ck_assert_ptr_null(wk_activation_checkpoint(identity_segment, NULL, &x, -1));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "between 0 and 32 inputs are supported, got -1");
  wk_tensor *many[33];
  for (int i = 0; i < 33; i++) many[i] = x;
  ck_assert_ptr_null(wk_activation_checkpoint(identity_segment, NULL, many, 33));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "between 0 and 32 inputs are supported, got 33");
  /* the recompute's error fails the backward */
  int calls = 0;
  wk_tensor *f = wk_activation_checkpoint(failing_segment, &calls, &x, 1);
  TU_NOTNULL(f);
  ck_assert_int_eq(wk_backward(wk_sum(f)), WK_ERR_STATE);
  TU_FAILS_WITH(WK_ERR_STATE, "segment: refusing the second run");
  /* an input modified in place after the forward: the version check */
  wk_tensor *x2 = wk_mul_scalar(x, 1);
  wk_tensor *z = wk_activation_checkpoint(two_input_segment, NULL, (wk_tensor *[]){x2, b}, 2);
  TU_NOTNULL(wk_add_scalar_(x2, 1));
  ck_assert_int_eq(wk_backward(wk_sum(z)), WK_ERR_AUTOGRAD);
  TU_FAILS_WITH(WK_ERR_AUTOGRAD, "which is argument 0 of CheckpointBackward, is at version 1; expected version 0");
  /* torch.autograd.grad is refused, as in PyTorch's reentrant checkpoint */
  wk_tensor *w = wk_activation_checkpoint(two_input_segment, NULL, in, 2), *gx = NULL;
  wk_tensor *lw = wk_sum(w);
  ck_assert_int_eq(wk_grad(&lw, 1, NULL, &x, 1, &gx, NULL, false), WK_ERR_AUTOGRAD);
  TU_FAILS_WITH(WK_ERR_AUTOGRAD, "cannot be differentiated by wk_grad");
  /* grad mode off: a plain call */
  wk_no_grad_begin();
  wk_tensor *ng = wk_activation_checkpoint(two_input_segment, NULL, in, 2);
  TU_OK(wk_no_grad_end());
  ck_assert(ng && !wk_tensor_requires_grad(ng));
  wk_scope_end();
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

/* ---- ResNet-18, one checkpoint per stage (layer1..layer4) ---- */
static wk_tensor *stage(void *user, wk_tensor *const *in, int n) {
  (void)n;
  return wk_module_forward((wk_module *)user, in[0]);
}
/* conv1, bn1, relu, maxpool on the images: no input requires grad, the
 * parameters inside do */
static wk_tensor *stem(void *user, wk_tensor *const *in, int n) {
  (void)n;
  static const char *const names[] = {"conv1", "bn1", "relu", "maxpool"};
  wk_tensor *x = in[0];
  for (int i = 0; i < 4; i++) x = wk_module_forward(wk_module_child((wk_module *)user, names[i]), x);
  return x;
}
static wk_tensor *resnet_forward(wk_module *r, wk_tensor *x, bool ckpt) {
  x = ckpt ? wk_activation_checkpoint(stem, r, &x, 1) : stem(r, &x, 1);
  for (int l = 1; l <= 4; l++) {
    char name[16];
    snprintf(name, sizeof name, "layer%d", l);
    wk_module *s = wk_module_child(r, name);
    x = ckpt ? wk_activation_checkpoint(stage, s, &x, 1) : wk_module_forward(s, x);
  }
  x = wk_flatten(wk_module_forward(wk_module_child(r, "avgpool"), x), 1, -1);
  return wk_module_forward(wk_module_child(r, "fc"), x);
}

START_TEST(test_checkpoint_resnet18_bit_identical) {
  wk_scope_begin();
  wk_manual_seed(7);
  wk_module *r = wk_nn_resnet18((wk_resnet_opts){.num_classes = 10});
  if (!r && strstr(wk_last_error_message(), "nn")) {
    wk_scope_end();
    return; /* no nn plugin in this build */
  }
  TU_NOTNULL(r);
  wk_tensor *x = wk_randn(WK_SHAPE(2, 3, 64, 64), (wk_options){0});
  wk_tensor *t = wk_tensor_from_data((int64_t[]){3, 7}, WK_I64, WK_SHAPE(2));
  const char *names[128];
  wk_tensor *params[128];
  int np = wk_module_named_parameters(r, names, params, 128);
  ck_assert_int_eq(np, 62);
  wk_tensor *g0[128], *y[2];
  int64_t live[2];
  for (int run = 0; run < 2; run++) {
    TU_OK(wk_module_zero_grad(r, true));
    int64_t before = wk_live_tensors();
    wk_tensor *out = resnet_forward(r, x, run == 1);
    TU_NOTNULL(out);
    wk_tensor *loss = wk_cross_entropy(out, t);
    live[run] = wk_live_tensors() - before;
    TU_OK(wk_backward(loss));
    y[run] = out;
    for (int i = 0; run == 0 && i < np; i++) g0[i] = wk_tensor_grad(params[i]);
  }
  assert_bit_identical(y[0], y[1], "the logits");
  for (int i = 0; i < np; i++) assert_bit_identical(g0[i], wk_tensor_grad(params[i]), names[i]);
  printf("resnet18 2x3x64x64: the forward adds %lld live tensors without checkpointing, %lld with checkpoints for "
         "the stem and each stage; 62 parameter gradients bit-identical\n", (long long)live[0], (long long)live[1]);
  ck_assert(live[1] * 2 < live[0]);
  wk_module_release(r);
  wk_scope_end();
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("checkpoint");
  TCase *tc = tcase_create("checkpoint");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_checkpoint_mlp_bit_identical);
  tcase_add_test(tc, test_checkpoint_inputs_and_errors);
  tcase_add_test(tc, test_checkpoint_resnet18_bit_identical);
  suite_add_tcase(s, tc);
  return s;
}
TU_MAIN(make_suite)
