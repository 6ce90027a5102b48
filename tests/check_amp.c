/* check_amp: the amp plugin's autocast regions. Result dtypes are those
 * PyTorch 1.13.1 gives for the same calls under torch.autocast("cpu",
 * dtype=torch.bfloat16) (printed by Debian's python3-torch, 2026-12-02);
 * lower-precision results equal the op on bf16-rounded inputs; gradients
 * reach float32 parameters in float32; regions nest, are per thread, and
 * errors name what was wrong. The CUDA op lists by policy query; GradScaler
 * against PyTorch's algorithm replayed step by step, its state dict, its
 * call-order errors, and the two fused ops it runs. */
#include <pthread.h>
#include <wick/amp.h>
#include <wick/optim.h>

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


/* ==== GradScaler ============================================================================ */
/* PyTorch's GradScaler (torch/amp/grad_scaler.py) replayed in plain C: the
 * float32 scale, the int growth tracker, inv_scale = float(1 / double(scale)),
 * _amp_update_scale_'s arithmetic. The scaler under test must agree with it
 * at every step. */
typedef struct {
  float scale;
  int tracker;
  double growth, backoff;
  int interval;
} ref_scaler;

static void ref_update(ref_scaler *r, bool found) {
  if (found) {
    r->scale = (float)((double)r->scale * r->backoff);
    r->tracker = 0;
  } else if (r->tracker + 1 == r->interval) {
    float grown = (float)((double)r->scale * r->growth);
    if (isfinite(grown)) r->scale = grown;
    r->tracker = 0;
  } else {
    r->tracker++;
  }
}

#define NP 4
/* One parameter p (f32, NP elements) and loss = sum(p * c_k): the scaled
 * gradient is float(scale * c_k), which overflows to inf when c_k is large,
 * as real float16 training overflows. SGD(lr = 0.25) steps unless inf/NaN. */
static void scaler_trajectory(wk_device dev) {
  wk_scope_begin();
  wk_tensor *p = wk_to_device(TU_T(WK_F32, (NP), 0.5, -1.25, 2.0, 0.125), dev);
  wk_tensor_set_requires_grad(p, true);
  wk_optimizer *opt = wk_optim_sgd(&p, 1, (wk_sgd_opts){.lr = 0.25});
  TU_NOTNULL(opt);
  wk_grad_scaler *sc = wk_grad_scaler_new((wk_grad_scaler_opts){.growth_interval = 3});
  TU_NOTNULL(sc);
  ck_assert(wk_grad_scaler_is_enabled(sc));
  ck_assert(wk_grad_scaler_get_scale(sc) == 65536.0); /* init_scale before the first scale() */
  ref_scaler ref = {65536.0f, 0, 2.0, 0.5, 3};
  float pv[NP] = {0.5f, -1.25f, 2.0f, 0.125f};
  /* the gradient sequence: ordinary, overflowing four times in a row (3e34 * 131072 .. 16384 are inf in
   * float32, 3e34 * 8192 fits),
   * NaN, inf, tiny, and long clean runs that grow the scale back */
  static const double seq[][NP] = {
      {1, -2, 0.5, 3},        {0.25, 0.5, -1, 2},   {1e-3, 2e-3, -3e-3, 4e-3}, {3e34, 1, 1, 1},
      {3e34, 1, 1, 1},        {3e34, 1, 1, 1},      {3e34, 1, 1, 1},           {3e34, 1, 1, 1},
      {1, 2, 3, 4},           {-1, -1, -1, -1},     {NAN, 1, 1, 1},            {2, 2, 2, 2},
      {1, INFINITY, 0, 0},    {1e-30, 1e-30, 0, 0}, {0.5, 0.5, 0.5, 0.5},      {1, 0, 0, 0},
      {3, 3, 3, 3},           {1, 1, 1, 1},         {-2, 1, -2, 1},            {2e34, 0, 0, 0},
      {1, 1, 1, 1},           {0.125, 0.25, 1, 2},  {4, 3, 2, 1},              {1, 1, 1, 1},
      {1, 1, 1, 1},           {1, 1, 1, 1},         {1, 1, 1, 1},              {7, 7, 7, 7}};
  int nsteps = (int)(sizeof seq / sizeof seq[0]), skipped = 0, grown = 0;
  for (int k = 0; k < nsteps; k++) {
    wk_scope_begin();
    TU_OK(wk_optim_zero_grad(opt, true));
    wk_tensor *c = wk_to_device(TU_T(WK_F32, (NP), seq[k][0], seq[k][1], seq[k][2], seq[k][3]), dev);
    wk_tensor *loss = wk_sum(wk_mul(p, c));
    wk_tensor *scaled = wk_grad_scaler_scale(sc, loss);
    TU_NOTNULL(scaled);
    TU_OK(wk_backward(scaled));
    if (k % 4 == 1) TU_OK(wk_grad_scaler_unscale_(sc, opt)); /* explicit unscale_ before step, sometimes */
    bool stepped = true;
    TU_OK(wk_grad_scaler_step(sc, opt, &stepped));
    TU_OK(wk_grad_scaler_update(sc));
    /* the reference */
    float inv = (float)(1.0 / (double)ref.scale);
    bool found = false;
    float g[NP];
    for (int i = 0; i < NP; i++) {
      float scaled_g = (float)(ref.scale * (float)seq[k][i]);
      found |= !isfinite(scaled_g);
      g[i] = scaled_g * inv;
    }
    if (!found)
      for (int i = 0; i < NP; i++) pv[i] = (float)((double)pv[i] + (double)(float)-0.25 * (double)g[i]);
    float before = ref.scale;
    ref_update(&ref, found);
    skipped += found;
    grown += ref.scale > before;
    ck_assert_msg(stepped == !found, "step %d: stepped %d, PyTorch %s", k, stepped, found ? "skips" : "steps");
    ck_assert_msg(wk_grad_scaler_get_scale(sc) == (double)ref.scale, "step %d: scale %.9g, PyTorch %.9g", k,
                  wk_grad_scaler_get_scale(sc), (double)ref.scale);
    ck_assert_msg(wk_grad_scaler_growth_tracker(sc) == ref.tracker, "step %d: growth tracker %lld, PyTorch %d", k,
                  (long long)wk_grad_scaler_growth_tracker(sc), ref.tracker);
    double *now = tu_values(p);
    for (int i = 0; i < NP; i++)
      ck_assert_msg(fabs(now[i] - pv[i]) <= 1e-6 * (1 + fabs(pv[i])), "step %d: p[%d] = %.9g, expected %.9g", k, i,
                    now[i], (double)pv[i]);
    free(now);
    wk_scope_end();
  }
  /* the sequence exercised what it is for */
  ck_assert_int_eq(skipped, 6); /* four overflows in a row, NaN, inf */
  ck_assert_int_ge(grown, 3);
  wk_grad_scaler_free(sc);
  wk_optimizer_free(opt);
  wk_scope_end();
}

START_TEST(test_amp_scaler_matches_pytorch_trajectory) {
  scaler_trajectory(wk_cpu());
}
END_TEST

/* state_dict holds PyTorch's keys; a scaler loaded from it continues the
 * same trajectory; a disabled scaler passes everything through. */
START_TEST(test_amp_scaler_state_dict_round_trip) {
  wk_scope_begin();
  wk_tensor *p = TU_T(WK_F32, (2), 1, 2);
  wk_tensor_set_requires_grad(p, true);
  wk_optimizer *opt = wk_optim_sgd(&p, 1, (wk_sgd_opts){.lr = 0.1});
  wk_grad_scaler *a = wk_grad_scaler_new((wk_grad_scaler_opts){.init_scale = 1024, .growth_interval = 5,
                                                                .growth_factor = 4, .backoff_factor = 0.25});
  TU_NOTNULL(a);
  for (int k = 0; k < 3; k++) {
    TU_OK(wk_optim_zero_grad(opt, true));
    TU_OK(wk_backward(wk_grad_scaler_scale(a, wk_sum(wk_mul_scalar(p, k == 0 ? INFINITY : 1.0)))));
    TU_OK(wk_grad_scaler_step(a, opt, NULL));
    TU_OK(wk_grad_scaler_update(a));
  }
  ck_assert(wk_grad_scaler_get_scale(a) == 256.0); /* backed off once by 0.25 */
  ck_assert_int_eq(wk_grad_scaler_growth_tracker(a), 2);
  wk_state_dict *sd = wk_grad_scaler_state_dict(a);
  TU_NOTNULL(sd);
  ck_assert_int_eq(wk_state_dict_size(sd), 5);
  ck_assert_str_eq(wk_state_dict_get_meta(sd, "scaler"), "GradScaler");
  const char *keys[] = {"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"};
  const double vals[] = {256, 4, 0.25, 5, 2};
  for (int i = 0; i < 5; i++) {
    double v;
    TU_OK(wk_item(wk_state_dict_get(sd, keys[i]), &v));
    ck_assert_msg(v == vals[i], "%s = %g, expected %g", keys[i], v, vals[i]);
  }
  wk_grad_scaler *b = wk_grad_scaler_new((wk_grad_scaler_opts){0});
  TU_OK(wk_grad_scaler_load_state_dict(b, sd));
  ck_assert(wk_grad_scaler_get_scale(b) == 256.0);
  ck_assert_int_eq(wk_grad_scaler_growth_tracker(b), 2);
  /* three more clean steps on each: both grow at the same step (tracker 2 -> 5) */
  for (int k = 0; k < 3; k++) {
    wk_grad_scaler *both[2] = {a, b};
    for (int j = 0; j < 2; j++) {
      TU_OK(wk_optim_zero_grad(opt, true));
      TU_OK(wk_backward(wk_grad_scaler_scale(both[j], wk_sum(p))));
      TU_OK(wk_grad_scaler_step(both[j], opt, NULL));
      TU_OK(wk_grad_scaler_update(both[j]));
    }
    ck_assert(wk_grad_scaler_get_scale(a) == wk_grad_scaler_get_scale(b));
    ck_assert_int_eq(wk_grad_scaler_growth_tracker(a), wk_grad_scaler_growth_tracker(b));
  }
  ck_assert(wk_grad_scaler_get_scale(b) == 1024.0); /* 256 * 4 at the fifth clean step */
  ck_assert_int_eq(wk_grad_scaler_growth_tracker(b), 0);
  /* update(new_scale) sets it (rounded to float) */
  TU_OK(wk_optim_zero_grad(opt, true));
  TU_OK(wk_backward(wk_grad_scaler_scale(b, wk_sum(p))));
  TU_OK(wk_grad_scaler_step(b, opt, NULL));
  TU_OK(wk_grad_scaler_update_to(b, 0.1));
  ck_assert(wk_grad_scaler_get_scale(b) == (double)0.1f);
  /* bad dicts change nothing */
  wk_state_dict *empty = wk_state_dict_new(), *partial = wk_state_dict_new();
  ck_assert_int_eq(wk_grad_scaler_load_state_dict(b, empty), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "The source state dict is empty");
  TU_OK(wk_state_dict_set(partial, "scale", wk_scalar_tensor(8, WK_F64)));
  ck_assert_int_eq(wk_grad_scaler_load_state_dict(b, partial), WK_ERR_NOT_FOUND);
  TU_FAILS_WITH(WK_ERR_NOT_FOUND, "missing key 'growth_factor'");
  TU_OK(wk_state_dict_set(sd, "growth_factor", wk_scalar_tensor(0.5, WK_F64)));
  ck_assert_int_eq(wk_grad_scaler_load_state_dict(b, sd), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "The growth factor must be > 1.0.");
  ck_assert(wk_grad_scaler_get_scale(b) == (double)0.1f);
  /* disabled: scale passes through, step always steps, empty state dict */
  wk_grad_scaler *off = wk_grad_scaler_new((wk_grad_scaler_opts){.disabled = true});
  ck_assert(!wk_grad_scaler_is_enabled(off));
  wk_tensor *l = wk_sum(p);
  wk_tensor *same = wk_grad_scaler_scale(off, l);
  TU_NOTNULL(same);
  ck_assert_ptr_eq(wk_tensor_data(same), wk_tensor_data(l)); /* an alias: the same storage, unscaled */
  ck_assert(wk_grad_scaler_get_scale(off) == 1.0);
  wk_state_dict *offsd = wk_grad_scaler_state_dict(off);
  ck_assert_int_eq(wk_state_dict_size(offsd), 0);
  TU_OK(wk_grad_scaler_load_state_dict(off, empty)); /* ignored, as PyTorch's */
  wk_state_dict_free(offsd);
  wk_state_dict_free(empty);
  wk_state_dict_free(partial);
  wk_state_dict_free(sd);
  wk_grad_scaler_free(a);
  wk_grad_scaler_free(b);
  wk_grad_scaler_free(off);
  wk_optimizer_free(opt);
  wk_scope_end();
}
END_TEST

/* The call-order rules and bad arguments, with PyTorch's messages. */
START_TEST(test_amp_scaler_errors) {
  wk_scope_begin();
  wk_tensor *p = TU_T(WK_F32, (2), 1, 2), *q = TU_T(WK_F32, (2), 3, 4);
  wk_tensor_set_requires_grad(p, true);
  wk_tensor_set_requires_grad(q, true);
  wk_optimizer *opt = wk_optim_sgd(&p, 1, (wk_sgd_opts){.lr = 0.1}), *other = wk_optim_sgd(&q, 1, (wk_sgd_opts){0});
  ck_assert_ptr_null(wk_grad_scaler_new((wk_grad_scaler_opts){.growth_factor = 1.0}));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "The growth factor must be > 1.0.");
  ck_assert_ptr_null(wk_grad_scaler_new((wk_grad_scaler_opts){.backoff_factor = 1.5}));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "The backoff factor must be < 1.0.");
  ck_assert_ptr_null(wk_grad_scaler_new((wk_grad_scaler_opts){.growth_interval = -3}));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "growth_interval");
  ck_assert_ptr_null(wk_grad_scaler_new((wk_grad_scaler_opts){.init_scale = INFINITY}));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "init_scale");
  wk_grad_scaler *sc = wk_grad_scaler_new((wk_grad_scaler_opts){0});
  ck_assert_int_eq(wk_grad_scaler_update(sc), WK_ERR_STATE);
  TU_FAILS_WITH(WK_ERR_STATE, "Attempted update but _scale is None.");
  ck_assert_int_eq(wk_grad_scaler_step(sc, opt, NULL), WK_ERR_STATE);
  TU_FAILS_WITH(WK_ERR_STATE, "Attempted step but _scale is None.");
  TU_OK(wk_backward(wk_grad_scaler_scale(sc, wk_sum(p))));
  TU_OK(wk_grad_scaler_unscale_(sc, opt));
  ck_assert_int_eq(wk_grad_scaler_unscale_(sc, opt), WK_ERR_STATE);
  TU_FAILS_WITH(WK_ERR_STATE, "unscale_() has already been called on this optimizer since the last update().");
  TU_OK(wk_grad_scaler_step(sc, opt, NULL));
  ck_assert_int_eq(wk_grad_scaler_unscale_(sc, opt), WK_ERR_STATE);
  TU_FAILS_WITH(WK_ERR_STATE, "unscale_() is being called after step().");
  ck_assert_int_eq(wk_grad_scaler_step(sc, opt, NULL), WK_ERR_STATE);
  TU_FAILS_WITH(WK_ERR_STATE, "step() has already been called since the last update().");
  /* an optimizer without gradients records no inf check */
  ck_assert_int_eq(wk_grad_scaler_step(sc, other, NULL), WK_ERR_STATE);
  TU_FAILS_WITH(WK_ERR_STATE, "No inf checks were recorded for this optimizer.");
  TU_OK(wk_grad_scaler_update(sc));
  ck_assert_int_eq(wk_grad_scaler_update(sc), WK_ERR_STATE);
  TU_FAILS_WITH(WK_ERR_STATE, "No inf checks were recorded prior to update.");
  /* float16 gradients are refused before anything changes */
  wk_tensor *h = wk_to_dtype(TU_T(WK_F32, (2), 1, 2), WK_F16);
  wk_tensor_set_requires_grad(h, true);
  wk_optimizer *hopt = wk_optim_sgd(&h, 1, (wk_sgd_opts){0});
  TU_OK(wk_backward(wk_grad_scaler_scale(sc, wk_sum(h))));
  ck_assert_int_eq(wk_grad_scaler_unscale_(sc, hopt), WK_ERR_DTYPE);
  TU_FAILS_WITH(WK_ERR_DTYPE, "Attempting to unscale FP16 gradients.");
  /* NULLs */
  ck_assert_ptr_null(wk_grad_scaler_scale(NULL, p));
  TU_FAILS_WITH(WK_ERR_NULL, "'scaler' is NULL");
  ck_assert_ptr_null(wk_grad_scaler_scale(sc, NULL));
  TU_FAILS_WITH(WK_ERR_NULL, "'outputs' is NULL");
  ck_assert_int_eq(wk_grad_scaler_step(sc, NULL, NULL), WK_ERR_NULL);
  TU_FAILS_WITH(WK_ERR_NULL, "'optimizer' is NULL");
  ck_assert_int_eq(wk_grad_scaler_load_state_dict(sc, NULL), WK_ERR_NULL);
  TU_FAILS_WITH(WK_ERR_NULL, "'state_dict' is NULL");
  ck_assert(isnan(wk_grad_scaler_get_scale(NULL)));
  TU_FAILS_WITH(WK_ERR_NULL, "'scaler' is NULL");
  ck_assert_int_eq(wk_grad_scaler_update_to(sc, NAN), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "new_scale is NaN");
  wk_grad_scaler_free(NULL);
  wk_grad_scaler_free(sc);
  wk_optimizer_free(opt);
  wk_optimizer_free(other);
  wk_optimizer_free(hopt);
  wk_scope_end();
}
END_TEST

/* The two fused ops called directly: every floating dtype, strided
 * gradients, found_inf never reset, growth capped below inf, and the meta
 * functions' messages. */
START_TEST(test_amp_fused_ops) {
  wk_scope_begin();
  wk_tensor *a = TU_T(WK_F32, (2, 3), 1, 2, 3, 4, 5, 6), *b = TU_T(WK_F64, (3), 8, -8, 0.5);
  wk_tensor *c = wk_to_dtype(TU_T(WK_F32, (2), 4, 256), WK_BF16), *at = wk_transpose(a, 0, 1);
  wk_tensor *found = wk_zeros(NULL, 0, (wk_options){.dtype = WK_F32});
  wk_tensor *inv = wk_full(NULL, 0, 0.25, (wk_options){.dtype = WK_F32});
  wk_tensor *list[3] = {at, b, c};
  TU_OK(wkx_amp_foreach_non_finite_check_and_unscale_(list, 3, found, inv));
  TU_EQ_VALS(a, 0.25, 0.5, 0.75, 1, 1.25, 1.5);
  TU_EQ_VALS(b, 2, -2, 0.125);
  TU_EQ_VALS(c, 1, 64);
  TU_EQ_VALS(found, 0);
  ((double *)wk_tensor_data(b))[1] = NAN;
  TU_OK(wkx_amp_foreach_non_finite_check_and_unscale_(list, 3, found, inv));
  TU_EQ_VALS(found, 1);
  TU_EQ_VALS(a, 0.0625, 0.125, 0.1875, 0.25, 0.3125, 0.375); /* every gradient is unscaled, found or not */
  ((double *)wk_tensor_data(b))[1] = 1;
  TU_OK(wkx_amp_foreach_non_finite_check_and_unscale_(list, 3, found, inv));
  TU_EQ_VALS(found, 1); /* never reset by a clean call */
  /* update: backoff, growth every 2 clean steps, growth that would reach inf is dropped */
  wk_tensor *scale = wk_full(NULL, 0, 3e38, (wk_options){.dtype = WK_F32});
  wk_tensor *tracker = wk_zeros(NULL, 0, (wk_options){.dtype = WK_I32}), *clean = wk_zeros_like(found, (wk_options){0});
  TU_NOTNULL(wkx_amp_update_scale_(scale, tracker, clean, 2.0, 0.5, 2));
  TU_EQ_VALS(tracker, 1);
  TU_NOTNULL(wkx_amp_update_scale_(scale, tracker, clean, 2.0, 0.5, 2));
  TU_EQ_VALS(scale, (double)3e38f); /* 6e38 is not a float: kept */
  TU_EQ_VALS(tracker, 0);
  TU_NOTNULL(wkx_amp_update_scale_(scale, tracker, found, 2.0, 0.5, 2));
  TU_EQ_VALS(scale, (double)(float)(3e38f * 0.5));
  /* errors */
  wk_tensor *two = wk_zeros(WK_SHAPE(2), (wk_options){.dtype = WK_F32}), *i32 = wk_zeros(NULL, 0, (wk_options){.dtype = WK_I32});
  ck_assert_int_eq(wkx_amp_foreach_non_finite_check_and_unscale_(list, 3, found, two), WK_ERR_SHAPE);
  TU_FAILS_WITH(WK_ERR_SHAPE, "inv_scale must be a 1-element tensor.");
  ck_assert_int_eq(wkx_amp_foreach_non_finite_check_and_unscale_(list, 3, i32, inv), WK_ERR_DTYPE);
  TU_FAILS_WITH(WK_ERR_DTYPE, "found_inf must be a float tensor.");
  wk_tensor *ints[1] = {i32};
  ck_assert_int_eq(wkx_amp_foreach_non_finite_check_and_unscale_(ints, 1, found, inv), WK_ERR_DTYPE);
  TU_FAILS_WITH(WK_ERR_DTYPE, "scaled_grads[0] must be floating point");
  ck_assert_ptr_null(wkx_amp_update_scale_(scale, clean, found, 2.0, 0.5, 2));
  TU_FAILS_WITH(WK_ERR_DTYPE, "growth_tracker must be an int tensor.");
  ck_assert_ptr_null(wkx_amp_update_scale_(tracker, tracker, found, 2.0, 0.5, 2));
  TU_FAILS_WITH(WK_ERR_DTYPE, "current_scale must be a float tensor.");
  ck_assert_ptr_null(wkx_amp_update_scale_(scale, tracker, two, 2.0, 0.5, 2));
  TU_FAILS_WITH(WK_ERR_SHAPE, "found_inf must be a 1-element tensor.");
  ck_assert_ptr_null(wkx_amp_update_scale_(scale, tracker, found, 2.0, 0.5, 0));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "growth_interval must be positive");
  wk_scope_end();
}
END_TEST

/* PyTorch 1.13.1's CUDA lists are not the cpu lists (autocast_mode.cpp,
 * KERNEL_CUDA vs KERNEL_CPU). Checked by the policy query, so it needs no GPU. */
START_TEST(test_amp_cuda_lists) {
  struct {
    const char *op;
    int cpu, cuda;
  } rows[] = {
      {"mm", WK_AUTOCAST_LOWER, WK_AUTOCAST_LOWER},
      {"conv2d", WK_AUTOCAST_LOWER, WK_AUTOCAST_LOWER},
      {"linear", WK_AUTOCAST_LOWER, WK_AUTOCAST_LOWER},
      {"addmv", WK_AUTOCAST_NONE, WK_AUTOCAST_LOWER},
      {"mv", WK_AUTOCAST_NONE, WK_AUTOCAST_LOWER},
      {"conv_transpose2d.input", WK_AUTOCAST_NONE, WK_AUTOCAST_LOWER},
      {"exp", WK_AUTOCAST_NONE, WK_AUTOCAST_FP32},
      {"log", WK_AUTOCAST_NONE, WK_AUTOCAST_FP32},
      {"pow.Scalar", WK_AUTOCAST_NONE, WK_AUTOCAST_FP32},
      {"rsqrt", WK_AUTOCAST_NONE, WK_AUTOCAST_FP32},
      {"layer_norm", WK_AUTOCAST_NONE, WK_AUTOCAST_FP32},
      {"mse_loss", WK_AUTOCAST_FP32, WK_AUTOCAST_FP32},
      {"cross_entropy", WK_AUTOCAST_FP32, WK_AUTOCAST_FP32},
      {"norm", WK_AUTOCAST_NONE, WK_AUTOCAST_FP32},
      {"softmax", WK_AUTOCAST_NONE, WK_AUTOCAST_FP32_UNLESS_DTYPE},
      {"sum.dim_IntList", WK_AUTOCAST_NONE, WK_AUTOCAST_FP32_UNLESS_DTYPE},
      {"prod", WK_AUTOCAST_FP32, WK_AUTOCAST_FP32_UNLESS_DTYPE},
      {"cumsum", WK_AUTOCAST_NONE, WK_AUTOCAST_FP32_UNLESS_DTYPE},
      {"cat", WK_AUTOCAST_PROMOTE, WK_AUTOCAST_PROMOTE},
      {"index_copy", WK_AUTOCAST_PROMOTE, WK_AUTOCAST_NONE},
      {"dot", WK_AUTOCAST_NONE, WK_AUTOCAST_PROMOTE},
      {"scatter_add", WK_AUTOCAST_NONE, WK_AUTOCAST_PROMOTE},
      {"binary_cross_entropy", WK_AUTOCAST_FP32, WK_AUTOCAST_BANNED},
      {"avg_pool3d", WK_AUTOCAST_FP32, WK_AUTOCAST_NONE},
      {"relu", WK_AUTOCAST_NONE, WK_AUTOCAST_NONE},
      {"add", WK_AUTOCAST_NONE, WK_AUTOCAST_NONE},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    ck_assert_msg(wk_autocast_op_policy("cpu", rows[i].op) == rows[i].cpu, "%s on cpu: %d, PyTorch %d", rows[i].op,
                  wk_autocast_op_policy("cpu", rows[i].op), rows[i].cpu);
    ck_assert_msg(wk_autocast_op_policy("cuda", rows[i].op) == rows[i].cuda, "%s on cuda: %d, PyTorch %d",
                  rows[i].op, wk_autocast_op_policy("cuda", rows[i].op), rows[i].cuda);
  }
  ck_assert_int_eq(wk_autocast_op_policy(NULL, "mm"), -1);
  TU_FAILS_WITH(WK_ERR_NULL, "device_type");
}
END_TEST


/* Two optimizers under one scaler (PyTorch's multiple-optimizer recipe):
 * each step() looks at its own optimizer's gradients only, update() backs
 * off when any of them held inf/NaN. */
START_TEST(test_amp_scaler_two_optimizers) {
  wk_scope_begin();
  wk_tensor *p = TU_T(WK_F32, (2), 1, 2), *q = TU_T(WK_F32, (2), 3, 4);
  wk_tensor_set_requires_grad(p, true);
  wk_tensor_set_requires_grad(q, true);
  wk_optimizer *a = wk_optim_sgd(&p, 1, (wk_sgd_opts){.lr = 0.5}), *b = wk_optim_sgd(&q, 1, (wk_sgd_opts){.lr = 0.5});
  wk_grad_scaler *sc = wk_grad_scaler_new((wk_grad_scaler_opts){.init_scale = 8, .growth_interval = 1});
  for (int k = 0; k < 2; k++) {
    TU_OK(wk_optim_zero_grad(a, true));
    TU_OK(wk_optim_zero_grad(b, true));
    /* step 0: p's gradient is inf; step 1: both clean */
    wk_tensor *loss = wk_add(wk_sum(wk_mul_scalar(p, k == 0 ? INFINITY : 1.0)), wk_sum(q));
    TU_OK(wk_backward(wk_grad_scaler_scale(sc, loss)));
    bool sa, sb;
    TU_OK(wk_grad_scaler_step(sc, a, &sa));
    TU_OK(wk_grad_scaler_step(sc, b, &sb));
    TU_OK(wk_grad_scaler_update(sc));
    ck_assert_msg(sa == (k == 1) && sb, "step %d: a stepped %d, b stepped %d", k, sa, sb);
  }
  /* 8 -> 4 (inf in a's gradients) -> 8 (growth_interval 1); p moved once, q twice */
  ck_assert(wk_grad_scaler_get_scale(sc) == 8.0);
  TU_EQ_VALS(p, 0.5, 1.5);
  TU_EQ_VALS(q, 2, 3);
  wk_grad_scaler_free(sc);
  wk_optimizer_free(a);
  wk_optimizer_free(b);
  wk_scope_end();
}
END_TEST

/* ==== on a CUDA device (skipped without one) ================================================= */
static bool cuda_device(wk_device *dev) {
  int32_t t = wk_device_type_find("cuda");
  wk_clear_error();
  if (t < 0 || wk_device_count(t) == 0) {
    printf("check_amp: no CUDA device, the cuda case checks nothing\n");
    return false;
  }
  *dev = (wk_device){t, 0};
  return true;
}

/* PyTorch 1.13.1's CUDA autocast: exp and sum run in float32, softmax too
 * unless given a dtype, mm in the region's dtype (float16 or bfloat16),
 * cat promotes; GradScaler's trajectory with the cuda kernels. */
START_TEST(test_amp_cuda_autocast_and_scaler) {
  wk_device dev;
  if (!cuda_device(&dev)) return;
  wk_scope_begin();
  wk_tensor *a = wk_to_device(randn(WK_SHAPE(4, 4), 31), dev), *h = wk_to_dtype(a, WK_F16);
  wk_tensor *pair[2] = {h, a};
  TU_OK(wk_autocast_begin("cuda", WK_F16));
  struct {
    const char *what;
    wk_tensor *r;
    wk_dtype want;
  } cases[] = {
      {"mm", wk_mm(a, a), WK_F16},
      {"exp f16", wk_exp(h), WK_F32},
      {"sum f16", wk_sum(h), WK_F32},
      {"softmax f16", wk_softmax(h, 1), WK_F32},
      {"softmax f16, dtype f64", wkx_softmax(h, 1, WK_F64), WK_F64},
      {"relu f16", wk_relu(h), WK_F16},
      {"cat f16, f32", wk_cat(pair, 2, 0), WK_F32},
      {"mse_loss f16", wk_mse_loss(h, h), WK_F32},
  };
  TU_OK(wk_autocast_end("cuda"));
  TU_OK(wk_autocast_begin("cuda", WK_BF16));
  wk_tensor *mb = wk_mm(a, a);
  TU_OK(wk_autocast_end("cuda"));
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ck_assert_msg(cases[i].r != NULL, "%s failed under cuda autocast: %s", cases[i].what, wk_last_error_message());
    ck_assert_msg(DT(cases[i].r) == cases[i].want, "%s: got %s, PyTorch gives %s", cases[i].what,
                  wk_dtype_name(DT(cases[i].r)), wk_dtype_name(cases[i].want));
  }
  TU_NOTNULL(mb);
  ck_assert_int_eq(DT(mb), WK_BF16);
  wk_scope_end();
  scaler_trajectory(dev);
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
  tcase_add_test(tc, test_amp_cuda_lists);
  suite_add_tcase(s, tc);
  TCase *ts = tcase_create("grad_scaler");
  tcase_add_checked_fixture(ts, tu_setup, NULL);
  tcase_add_test(ts, test_amp_scaler_matches_pytorch_trajectory);
  tcase_add_test(ts, test_amp_scaler_state_dict_round_trip);
  tcase_add_test(ts, test_amp_scaler_errors);
  tcase_add_test(ts, test_amp_fused_ops);
  tcase_add_test(ts, test_amp_scaler_two_optimizers);
  suite_add_tcase(s, ts);
  TCase *tcu = tcase_create("cuda");
  tcase_add_checked_fixture(tcu, tu_setup, NULL);
  tcase_set_timeout(tcu, 120);
  tcase_add_test(tcu, test_amp_cuda_autocast_and_scaler);
  suite_add_tcase(s, tcu);
  return s;
}
TU_MAIN(make_suite)
