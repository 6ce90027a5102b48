/* check_memory_format: channels_last (WK_CHANNELS_LAST, NHWC strides on a
 * logical NCHW tensor) against the row-major path, issue 19.
 *  - the API: wk_is_contiguous_format, wk_suggest_memory_format, wk_format_strides,
 *    wk_empty_format, wk_contiguous_format (alias when already in the format,
 *    differentiable otherwise) and its errors;
 *  - the cpu plugin's elementwise paths on "dense but permuted" operands
 *    (add / mul / relu / threshold_backward / comparisons, functional and in
 *    place, below and above the parallel grain, channels-last with
 *    channels-last and with row-major operands): the same values as the
 *    row-major computation, and channels-last results from channels-last inputs;
 *  - a conv -> batch_norm -> relu -> conv -> batch_norm -> add -> relu ->
 *    max_pool -> adaptive_avg_pool -> linear chain, forward and backward,
 *    channels-last input and weights against row-major, within f32 tolerance;
 *    with the onednn plugin the activations and gradients stay channels-last;
 *  - ResNet-18 after wk_module_to_memory_format, training step gradients and
 *    evaluation output against the row-major model;
 *  - ops whose kernels assume row-major data (avg/adaptive pooling to several
 *    cells, grouped conv, softmax over channels, sums, upsampling, padding)
 *    fed channels-last inputs give the row-major answers.
 * tests/onednn_suites.sh runs this suite again without onednn (cpu kernels only). */
#include <stdlib.h>
#include <string.h>
#include <wick/nn.h>

#include "testutil.h"

static bool onednn_on(void) {
  const char *e = getenv("WICK_DISABLE_PLUGINS");
  return !(e && strstr(e, "onednn"));
}

static wk_tensor *cl(wk_tensor *t) {
  wk_tensor *r = wk_contiguous_format(t, WK_CHANNELS_LAST);
  TU_NOTNULL(r);
  return r;
}

static bool is_cl(const wk_tensor *t) { return wk_suggest_memory_format(t) == WK_CHANNELS_LAST; }

/* a and b hold the same values (logical order) within rtol * max|b| + atol. */
static void same_values(wk_tensor *a, wk_tensor *b, double rtol, double atol, const char *what) {
  TU_NOTNULL(a);
  TU_NOTNULL(b);
  ck_assert_int_eq(wk_tensor_dim(a), wk_tensor_dim(b));
  for (int d = 0; d < wk_tensor_dim(a); d++) ck_assert_int_eq(wk_tensor_size(a, d), wk_tensor_size(b, d));
  int64_t n = wk_tensor_numel(a);
  double *x = tu_values(a), *y = tu_values(b), scale = 0;
  for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(y[i]));
  for (int64_t i = 0; i < n; i++) {
    bool ok = x[i] == y[i] || (isnan(x[i]) && isnan(y[i])) || fabs(x[i] - y[i]) <= atol + rtol * scale;
    if (!ok) {
      double u = x[i], v = y[i];
      free(x);
      free(y);
      ck_abort_msg("%s: [%lld] = %.9g channels-last, %.9g row-major (scale %.3g)", what, (long long)i, u, v, scale);
    }
  }
  free(x);
  free(y);
}

/* ---- the API ------------------------------------------------------------------------------ */
START_TEST(test_api) {
  wk_tensor *x = tu_rand(WK_SHAPE(2, 3, 4, 5), WK_F32, -1, 1, 1);
  ck_assert(wk_is_contiguous_format(x, WK_CONTIGUOUS_FORMAT));
  ck_assert(!wk_is_contiguous_format(x, WK_CHANNELS_LAST));
  ck_assert_int_eq(wk_suggest_memory_format(x), WK_CONTIGUOUS_FORMAT);
  wk_tensor *y = cl(x);
  const int64_t want[4] = {60, 1, 15, 3};
  for (int d = 0; d < 4; d++) ck_assert_int_eq(wk_tensor_stride(y, d), want[d]);
  ck_assert(wk_is_contiguous_format(y, WK_CHANNELS_LAST));
  ck_assert(!wk_tensor_is_contiguous(y));
  ck_assert_int_eq(wk_suggest_memory_format(y), WK_CHANNELS_LAST);
  ck_assert_str_eq(wk_memory_format_name(WK_CHANNELS_LAST), "channels_last");
  ck_assert_str_eq(wk_memory_format_name(WK_CONTIGUOUS_FORMAT), "contiguous_format");
  same_values(y, x, 0, 0, "contiguous_format copy");
  /* already channels-last: an alias of the same memory */
  wk_tensor *z = cl(y);
  ck_assert(wk_tensor_same_storage(z, y));
  ck_assert_ptr_eq(wk_tensor_data(z), wk_tensor_data(y));
  /* and back */
  wk_tensor *r = wk_contiguous_format(y, WK_CONTIGUOUS_FORMAT);
  TU_NOTNULL(r);
  ck_assert(wk_tensor_is_contiguous(r));
  same_values(r, x, 0, 0, "back to row-major");
  /* strides and empty_format */
  int64_t st[4];
  wk_format_strides(WK_SHAPE(2, 3, 4, 5), WK_CHANNELS_LAST, st);
  ck_assert(!memcmp(st, want, sizeof want));
  wk_format_strides(WK_SHAPE(2, 3, 4, 5), WK_CONTIGUOUS_FORMAT, st);
  ck_assert_int_eq(st[0], 60);
  ck_assert_int_eq(st[3], 1);
  wk_tensor *e = wk_empty_format(WK_SHAPE(2, 3, 4, 5), (wk_options){0}, WK_CHANNELS_LAST);
  TU_NOTNULL(e);
  ck_assert(is_cl(e));
  /* ambiguous layouts are row-major: C == 1, or H == W == 1 */
  wk_tensor *c1in = tu_rand(WK_SHAPE(2, 1, 4, 5), WK_F32, -1, 1, 2);
  wk_tensor *hw1in = tu_rand(WK_SHAPE(2, 8, 1, 1), WK_F32, -1, 1, 3);
  wk_tensor *c1 = cl(c1in), *hw1 = cl(hw1in);
  ck_assert(wk_is_contiguous_format(c1, WK_CHANNELS_LAST) && wk_tensor_is_contiguous(c1));
  ck_assert_int_eq(wk_suggest_memory_format(c1), WK_CONTIGUOUS_FORMAT);
  ck_assert_int_eq(wk_suggest_memory_format(hw1), WK_CONTIGUOUS_FORMAT);
  /* a permuted view that is not dense in NHWC order is neither */
  wk_tensor *tr = wk_transpose(y, 2, 3);
  ck_assert(!wk_is_contiguous_format(tr, WK_CHANNELS_LAST) && !wk_tensor_is_contiguous(tr));
  wk_tensor *trc = cl(tr);
  ck_assert(is_cl(trc));
  same_values(trc, tr, 0, 0, "channels_last of a transposed view");
  /* errors name what was wrong */
  wk_tensor *v3 = tu_rand(WK_SHAPE(3, 4, 5), WK_F32, -1, 1, 4);
  ck_assert_ptr_null(wk_contiguous_format(v3, WK_CHANNELS_LAST));
  TU_FAILS_WITH(WK_ERR_SHAPE, "required rank 4 tensor to use channels_last format (got 3 dimensions)");
  ck_assert(!wk_is_contiguous_format(v3, WK_CHANNELS_LAST));
  ck_assert_ptr_null(wk_contiguous_format(x, (wk_memory_format)7));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "unknown memory format 7");
  ck_assert_ptr_null(wk_contiguous_format(NULL, WK_CHANNELS_LAST));
  TU_FAILS_WITH(WK_ERR_NULL, "'self' is NULL");
  ck_assert_ptr_null(wk_empty_format(WK_SHAPE(3, 4), (wk_options){0}, WK_CHANNELS_LAST));
  TU_FAILS_WITH(WK_ERR_SHAPE, "required rank 4");
  ck_assert_int_eq(wk_module_to_memory_format(NULL, WK_CHANNELS_LAST), WK_ERR_NULL);
  wk_clear_error();
  ck_assert(!wk_is_contiguous_format(NULL, WK_CONTIGUOUS_FORMAT));
  wk_release(x), wk_release(y), wk_release(z), wk_release(r), wk_release(e), wk_release(c1), wk_release(hw1);
  wk_release(c1in), wk_release(hw1in);
  wk_release(tr), wk_release(trc), wk_release(v3);
}
END_TEST

/* The copy is recorded: the gradient reaches the row-major leaf. */
START_TEST(test_contiguous_format_grad) {
  wk_scope_begin();
  wk_tensor *x = tu_rand(WK_SHAPE(2, 3, 4, 5), WK_F32, -1, 1, 5), *w = tu_rand(WK_SHAPE(2, 3, 4, 5), WK_F32, -1, 1, 6);
  TU_OK(wk_tensor_set_requires_grad(x, true));
  wk_tensor *y = cl(x), *l = wk_sum(wk_mul(y, w));
  TU_OK(wk_backward(l));
  wk_tensor *g = wk_tensor_grad(x);
  same_values(g, w, 0, 0, "d sum(cl(x) * w) / dx");
  wk_release(g);
  TU_OK(wk_scope_end());
}
END_TEST

/* ---- elementwise: dense but permuted ---------------------------------------------------- */
static void elementwise_at(int64_t N, int64_t C, int64_t H, int64_t W) {
  wk_scope_begin();
  wk_tensor *a = tu_rand(WK_SHAPE(N, C, H, W), WK_F32, -1, 1, 7), *b = tu_rand(WK_SHAPE(N, C, H, W), WK_F32, -1, 1, 8);
  wk_tensor *ac = cl(a), *bc = cl(b);
  /* both channels-last: the result is too */
  wk_tensor *r = wk_add(ac, bc);
  same_values(r, wk_add(a, b), 0, 0, "add(cl, cl)");
  ck_assert(is_cl(r));
  r = wk_mul(ac, bc);
  same_values(r, wk_mul(a, b), 0, 0, "mul(cl, cl)");
  ck_assert(is_cl(r));
  /* mixed layouts: the first operand's format, the right values */
  r = wk_add(ac, b);
  same_values(r, wk_add(a, b), 0, 0, "add(cl, row-major)");
  ck_assert(is_cl(r));
  same_values(wk_sub(a, bc), wk_sub(a, b), 0, 0, "sub(row-major, cl)");
  same_values(wk_add_scalar(ac, 0.5), wk_add_scalar(a, 0.5), 0, 0, "add(cl, scalar)");
  /* a broadcast channel vector */
  wk_tensor *cv = tu_rand(WK_SHAPE(1, C, 1, 1), WK_F32, -1, 1, 9);
  same_values(wk_mul(ac, cv), wk_mul(a, cv), 0, 0, "mul(cl, [1, C, 1, 1])");
  /* relu, functional and in place */
  r = wk_relu(ac);
  same_values(r, wk_relu(a), 0, 0, "relu(cl)");
  ck_assert(is_cl(r));
  wk_tensor *ip = cl(wk_clone(a)), *ipr = wk_clone(a);
  ck_assert(is_cl(ip));
  TU_NOTNULL(wk_relu_(ip));
  TU_NOTNULL(wk_relu_(ipr));
  ck_assert(is_cl(ip));
  same_values(ip, ipr, 0, 0, "relu_(cl)");
  /* add_ in place: with a channels-last and with a row-major other */
  wk_tensor *acc = cl(wk_clone(a)), *accr = wk_clone(a);
  TU_NOTNULL(wk_add_(acc, bc));
  TU_NOTNULL(wk_add_(accr, b));
  same_values(acc, accr, 0, 0, "add_(cl, cl)");
  TU_NOTNULL(wk_add_(acc, b));
  TU_NOTNULL(wk_add_(accr, b));
  same_values(acc, accr, 0, 0, "add_(cl, row-major)");
  ck_assert(is_cl(acc));
  /* relu's backward and its mask form */
  r = wkx_threshold_backward(bc, ac, 0);
  same_values(r, wkx_threshold_backward(b, a, 0), 0, 0, "threshold_backward(cl, cl)");
  ck_assert(is_cl(r));
  same_values(wkx_threshold_backward(b, ac, 0), wkx_threshold_backward(b, a, 0), 0, 0,
              "threshold_backward(row-major, cl)");
  wk_tensor *m = wk_gt_scalar(ac, 0);
  same_values(m, wk_gt_scalar(a, 0), 0, 0, "gt(cl, 0)");
  same_values(wk_mul(bc, m), wk_mul(b, wk_gt_scalar(a, 0)), 0, 0, "mul(cl, bool cl)");
  TU_OK(wk_scope_end());
}

START_TEST(test_elementwise_small) { elementwise_at(2, 3, 4, 5); }
END_TEST
START_TEST(test_elementwise_large) { elementwise_at(4, 24, 17, 19); } /* past the parallel grain */
END_TEST

/* ---- a layer chain, forward and backward -------------------------------------------------- */
typedef struct {
  wk_tensor *x, *w1, *w2, *wd, *g1, *b1, *g2, *b2, *fw, *fb;
} chain_params;

static wk_tensor *chain(const chain_params *p, bool training, bool check_format) {
  wk_tensor *rm = wk_zeros(WK_SHAPE(8), (wk_options){0}), *rv = wk_ones(WK_SHAPE(8), (wk_options){0});
  wk_tensor *h = wk_conv2d(p->x, p->w1, NULL, 1, 1, 1, 1);
  if (check_format) ck_assert_msg(is_cl(h), "conv2d of a channels-last input is channels-last");
  h = wk_batch_norm(h, p->g1, p->b1, rm, rv, training, 0.1, 1e-5, NULL);
  if (check_format) ck_assert_msg(is_cl(h), "batch_norm keeps channels-last");
  h = wk_relu(h);
  wk_tensor *s = wk_conv2d(h, p->wd, NULL, 2, 0, 1, 1); /* 1x1 stride-2 shortcut */
  h = wk_conv2d(h, p->w2, NULL, 2, 1, 1, 1);
  h = wk_batch_norm(h, p->g2, p->b2, rm, rv, training, 0.1, 1e-5, NULL);
  h = wk_relu(wk_add(h, s));
  if (check_format) ck_assert_msg(is_cl(h), "relu(add(bn, conv)) keeps channels-last");
  h = wk_max_pool2d(h, 3, 2, 1);
  h = wk_adaptive_avg_pool2d(h, 1, 1);
  h = wk_linear(wk_flatten(h, 1, -1), p->fw, p->fb);
  wk_release(rm);
  wk_release(rv);
  return h;
}

static void chain_case(bool training) {
  wk_scope_begin();
  chain_params p = {
      tu_rand(WK_SHAPE(3, 5, 11, 9), WK_F32, -1, 1, 11), tu_rand(WK_SHAPE(8, 5, 3, 3), WK_F32, -0.3, 0.3, 12),
      tu_rand(WK_SHAPE(8, 8, 3, 3), WK_F32, -0.2, 0.2, 13), tu_rand(WK_SHAPE(8, 8, 1, 1), WK_F32, -0.3, 0.3, 14),
      tu_rand(WK_SHAPE(8), WK_F32, 0.5, 1.5, 15),           tu_rand(WK_SHAPE(8), WK_F32, -0.5, 0.5, 16),
      tu_rand(WK_SHAPE(8), WK_F32, 0.5, 1.5, 17),           tu_rand(WK_SHAPE(8), WK_F32, -0.5, 0.5, 18),
      tu_rand(WK_SHAPE(4, 8), WK_F32, -0.5, 0.5, 19),       tu_rand(WK_SHAPE(4), WK_F32, -0.5, 0.5, 20)};
  wk_tensor **leaf = &p.x;
  const int nleaf = (int)(sizeof p / sizeof p.x);
  chain_params q = p;
  for (int i = 0; i < nleaf; i++) {
    TU_OK(wk_tensor_set_requires_grad(leaf[i], true));
    if (wk_tensor_dim(leaf[i]) == 4) (&q.x)[i] = cl(leaf[i]); /* recorded copies: gradients reach the leaves */
  }
  wk_tensor *gy = tu_rand(WK_SHAPE(3, 4), WK_F32, -1, 1, 21);
  /* row-major */
  wk_tensor *y = chain(&p, training, false);
  TU_NOTNULL(y);
  TU_OK(wk_backward(wk_sum(wk_mul(y, gy))));
  wk_tensor *g0[10];
  for (int i = 0; i < nleaf; i++) {
    g0[i] = wk_tensor_grad(leaf[i]);
    TU_NOTNULL(g0[i]);
    TU_OK(wk_tensor_zero_grad(leaf[i], true));
  }
  /* channels-last */
  wk_tensor *yc = chain(&q, training, onednn_on());
  same_values(yc, y, 2e-5, 1e-6, "chain output");
  TU_OK(wk_backward(wk_sum(wk_mul(yc, gy))));
  static const char *names[10] = {"x", "w1", "w2", "wd", "bn1.weight", "bn1.bias", "bn2.weight", "bn2.bias",
                                  "fc.weight", "fc.bias"};
  for (int i = 0; i < nleaf; i++) {
    wk_tensor *g = wk_tensor_grad(leaf[i]);
    same_values(g, g0[i], 5e-5, 1e-6, names[i]);
    wk_release(g);
    wk_release(g0[i]);
  }
  TU_OK(wk_scope_end());
}

START_TEST(test_chain_train) { chain_case(true); }
END_TEST
START_TEST(test_chain_eval) { chain_case(false); }
END_TEST

/* The gradient reaching a channels-last activation is channels-last too
 * (checked on the leaf of a channels-last conv input, which receives the
 * conv's data gradient directly). */
START_TEST(test_grad_format) {
  if (!onednn_on()) return; /* the cpu conv kernels compute row-major results */
  wk_scope_begin();
  wk_tensor *x = cl(tu_rand(WK_SHAPE(2, 16, 8, 8), WK_F32, -1, 1, 31));
  wk_tensor *w = cl(tu_rand(WK_SHAPE(16, 16, 3, 3), WK_F32, -0.2, 0.2, 32));
  TU_OK(wk_tensor_set_requires_grad(x, true));
  TU_OK(wk_tensor_set_requires_grad(w, true));
  wk_tensor *y = wk_relu(wk_conv2d(x, w, NULL, 1, 1, 1, 1));
  ck_assert(is_cl(y));
  TU_OK(wk_backward(wk_sum(y)));
  wk_tensor *gx = wk_tensor_grad(x), *gw = wk_tensor_grad(w);
  ck_assert_msg(is_cl(gx), "conv2d_backward's data gradient of a channels-last input is channels-last");
  ck_assert_msg(is_cl(gw), "the weight gradient of a channels-last weight is channels-last");
  wk_release(gx), wk_release(gw);
  TU_OK(wk_scope_end());
}
END_TEST

/* ---- ResNet-18 after wk_module_to_memory_format ------------------------------------------ */
static wk_module *resnet(void) {
  wk_manual_seed(3);
  wk_module *m = wk_nn_resnet18((wk_resnet_opts){.num_classes = 10});
  TU_NOTNULL(m);
  return m;
}

START_TEST(test_resnet18) {
  wk_module *a = resnet(), *b = resnet();
  TU_OK(wk_module_to_memory_format(b, WK_CHANNELS_LAST));
  TU_NOTNULL(wk_module_param(b, "conv1.weight"));
  ck_assert(is_cl(wk_module_param(b, "conv1.weight")));
  ck_assert(is_cl(wk_module_param(b, "layer1.0.conv2.weight")));
  ck_assert(wk_tensor_is_contiguous(wk_module_param(b, "fc.weight"))); /* 2-D: untouched */
  wk_scope_begin();
  /* batch 8: training-mode batch_norm over 2 samples (layer4 is 1x1) turns rounding differences into large ones */
  wk_tensor *x = tu_rand(WK_SHAPE(8, 3, 32, 32), WK_F32, -1, 1, 41), *xc = cl(x);
  wk_tensor *ya = wk_module_forward(a, x), *yb = wk_module_forward(b, xc);
  same_values(yb, ya, 1e-4, 1e-6, "resnet18 training forward");
  TU_OK(wk_backward(wk_sum(ya)));
  TU_OK(wk_backward(wk_sum(yb)));
  int np = wk_module_named_parameters(a, NULL, NULL, 0);
  const char **names = calloc((size_t)np, sizeof *names);
  wk_tensor **pa = calloc((size_t)np, sizeof *pa), **pb = calloc((size_t)np, sizeof *pb);
  ck_assert(names && pa && pb);
  wk_module_named_parameters(a, names, pa, np);
  wk_module_named_parameters(b, NULL, pb, np);
  for (int i = 0; i < np; i++) {
    wk_tensor *ga = wk_tensor_grad(pa[i]), *gb = wk_tensor_grad(pb[i]);
    char what[160];
    snprintf(what, sizeof what, "resnet18 grad of %s", names[i]);
    same_values(gb, ga, 2e-3, 1e-6, what);
    wk_release(ga);
    wk_release(gb);
  }
  free(names), free(pa), free(pb);
  TU_OK(wk_module_train(a, false));
  TU_OK(wk_module_train(b, false));
  wk_no_grad_begin();
  same_values(wk_module_forward(b, xc), wk_module_forward(a, x), 1e-4, 1e-6, "resnet18 evaluation forward");
  /* the channels-last model also takes a row-major input */
  same_values(wk_module_forward(b, x), wk_module_forward(a, x), 1e-4, 1e-6, "channels-last model, row-major input");
  wk_no_grad_end();
  TU_OK(wk_scope_end());
  /* converting back restores row-major weights with the same values */
  TU_OK(wk_module_to_memory_format(b, WK_CONTIGUOUS_FORMAT));
  ck_assert(wk_tensor_is_contiguous(wk_module_param(b, "conv1.weight")));
  same_values(wk_module_param(b, "layer2.0.conv1.weight"), wk_module_param(a, "layer2.0.conv1.weight"), 0, 0,
              "weights after the round trip");
  ck_assert_int_eq(wk_module_to_memory_format(b, (wk_memory_format)3), WK_ERR_INVALID_ARG);
  wk_clear_error();
  wk_module_release(a);
  wk_module_release(b);
}
END_TEST

/* ---- kernels that assume row-major data, fed channels-last -------------------------------- */
START_TEST(test_other_kernels) {
  wk_scope_begin();
  wk_tensor *x = tu_rand(WK_SHAPE(2, 6, 8, 10), WK_F32, -1, 1, 51), *xc = cl(x);
  same_values(wk_avg_pool2d(xc, 3, 2, 1), wk_avg_pool2d(x, 3, 2, 1), 1e-6, 0, "avg_pool2d");
  same_values(wk_adaptive_avg_pool2d(xc, 3, 4), wk_adaptive_avg_pool2d(x, 3, 4), 1e-6, 0, "adaptive_avg_pool2d 3x4");
  same_values(wk_adaptive_avg_pool2d(xc, 2, 5), wk_adaptive_avg_pool2d(x, 2, 5), 1e-6, 0, "adaptive_avg_pool2d 2x5");
  same_values(wk_max_pool2d(xc, 2, 2, 0), wk_max_pool2d(x, 2, 2, 0), 0, 0, "max_pool2d 2x2");
  same_values(wk_max_pool2d(xc, 3, 2, 1), wk_max_pool2d(x, 3, 2, 1), 0, 0, "max_pool2d 3x3/2");
  wk_scope_begin(); /* a nested scope for the block */
  {
    /* max_pool2d_with_indices: channels-last values and indices (NaN, -inf and ties included), and its backward */
    wk_tensor *t = tu_rand(WK_SHAPE(2, 5, 7, 6), WK_F32, -1, 1, 55);
    int64_t i1[4] = {0, 1, 2, 3}, i2[4] = {1, 4, 0, 0}, i3[4] = {1, 2, 5, 5}, i4[4] = {0, 3, 1, 1}, i5[4] = {0, 3, 1, 2};
    TU_OK(wk_tensor_set(t, i1, NAN));
    TU_OK(wk_tensor_set(t, i2, -INFINITY));
    TU_OK(wk_tensor_set(t, i3, INFINITY));
    TU_OK(wk_tensor_set(t, i4, 2.0));
    TU_OK(wk_tensor_set(t, i5, 2.0));
    wk_tensor *tc = cl(t), *ind = NULL, *indc = NULL;
    wk_tensor *y = wk_max_pool2d_with_indices(t, 3, 2, 1, &ind), *yc = wk_max_pool2d_with_indices(tc, 3, 2, 1, &indc);
    same_values(yc, y, 0, 0, "max_pool2d_with_indices values");
    same_values(indc, ind, 0, 0, "max_pool2d_with_indices indices");
    ck_assert(is_cl(yc) && is_cl(indc));
    wk_tensor *go = tu_rand(wk_tensor_sizes(y), 4, WK_F32, -1, 1, 56);
    wk_value a[8] = {WK_VT(go), WK_VT(t), WK_VINTS(((const int64_t[]){3, 3}), 2), WK_VINTS(((const int64_t[]){2, 2}), 2),
                     WK_VINTS(((const int64_t[]){1, 1}), 2), WK_VINTS(((const int64_t[]){1, 1}), 2), WK_VB(false),
                     WK_VT(ind)};
    wk_value r0[1], r1[1];
    TU_OK(wk_call("max_pool2d_with_indices_backward", a, 8, r0));
    a[0] = WK_VT(cl(go));
    a[1] = WK_VT(tc);
    a[7] = WK_VT(indc);
    TU_OK(wk_call("max_pool2d_with_indices_backward", a, 8, r1));
    same_values(r1[0].u.t, r0[0].u.t, 0, 0, "max_pool2d_with_indices_backward");
    ck_assert(is_cl(r1[0].u.t));
    /* an index outside its plane is refused, as on the row-major path */
    wk_tensor *badi = cl(wk_to_dtype(wk_add_scalar(ind, 100), WK_I64));
    a[7] = WK_VT(badi);
    ck_assert_int_ne(wk_call("max_pool2d_with_indices_backward", a, 8, r1), WK_OK);
    TU_FAILS_WITH(WK_ERR_INDEX, "Found an invalid max index");
    wk_release(r0[0].u.t);
    wk_release(r1[0].u.t);
  }
  TU_OK(wk_scope_end());
  wk_tensor *wg = tu_rand(WK_SHAPE(6, 2, 3, 3), WK_F32, -0.3, 0.3, 52);
  same_values(wk_conv2d(xc, wg, NULL, 1, 1, 1, 3), wk_conv2d(x, wg, NULL, 1, 1, 1, 3), 2e-5, 1e-6, "grouped conv");
  same_values(wk_conv2d(x, cl(wg), NULL, 1, 1, 1, 3), wk_conv2d(x, wg, NULL, 1, 1, 1, 3), 2e-5, 1e-6,
              "grouped conv, channels-last weight");
  same_values(wk_softmax(xc, 1), wk_softmax(x, 1), 1e-6, 0, "softmax over channels");
  same_values(wk_sum(xc), wk_sum(x), 1e-5, 0, "sum");
  same_values(wk_flatten(xc, 1, -1), wk_flatten(x, 1, -1), 0, 0, "flatten");
  int64_t pad[4] = {1, 2, 0, 1};
  same_values(wk_pad(xc, pad, 4, "reflect", 0), wk_pad(x, pad, 4, "reflect", 0), 0, 0, "reflect pad");
  wk_tensor *bw = tu_rand(WK_SHAPE(6), WK_F32, 0.5, 1.5, 53), *bb = tu_rand(WK_SHAPE(6), WK_F32, -0.5, 0.5, 54);
  same_values(wk_batch_norm(xc, bw, bb, NULL, NULL, true, 0.1, 1e-5, NULL),
              wk_batch_norm(x, bw, bb, NULL, NULL, true, 0.1, 1e-5, NULL), 1e-5, 1e-6, "batch_norm without running stats");
  /* layer_norm over the last dims of a channels-last tensor */
  same_values(wk_layer_norm(xc, WK_SHAPE(8, 10), NULL, NULL, 1e-5, NULL), wk_layer_norm(x, WK_SHAPE(8, 10), NULL, NULL, 1e-5, NULL),
              1e-5, 1e-6, "layer_norm");
  same_values(wk_sigmoid(xc), wk_sigmoid(x), 1e-6, 0, "sigmoid");
  TU_OK(wk_scope_end());
}
END_TEST

static Suite *memory_format_suite(void) {
  Suite *s = suite_create("memory_format");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, tu_setup, wk_shutdown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_api);
  tcase_add_test(tc, test_contiguous_format_grad);
  tcase_add_test(tc, test_elementwise_small);
  tcase_add_test(tc, test_elementwise_large);
  tcase_add_test(tc, test_chain_train);
  tcase_add_test(tc, test_chain_eval);
  tcase_add_test(tc, test_grad_format);
  tcase_add_test(tc, test_resnet18);
  tcase_add_test(tc, test_other_kernels);
  suite_add_tcase(s, tc);
  return s;
}

TU_MAIN(memory_format_suite)
