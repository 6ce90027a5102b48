/* The cuda plugin's library-backed kernels against the cpu ones: mm, bmm,
 * addmm, dot, matmul and linear (cuBLAS; transposed and sliced operands),
 * conv2d (cuDNN; stride, padding, dilation, groups, unbatched), batch_norm
 * (cuDNN; train and eval, running statistics, saved statistics), max, avg
 * and adaptive pooling (own kernels; indices, ceil_mode, divisor), forward
 * and gradients through autograd, and one LeNet training step with the same
 * loss on both devices.
 *
 * Tolerance: max |cuda - cpu| <= tol * max(1, max |cpu|), with f32 1e-4
 * (TF32 off for both cuBLAS and cuDNN here), f64 1e-9, f16 1e-2, bf16 4e-2.
 * Skips (77) with the plugin's reason when there is no CUDA device. */
#include <pthread.h>
#include <stdlib.h>

#include <wick/nn.h>
#include <wick/optim.h>

#include "cuda_twin.h"
#include "testutil.h"


static double tol_of(wk_dtype dt) {
  switch (dt) {
    case WK_F64:
      return 1e-9;
    case WK_F16:
      return 1e-2;
    case WK_BF16:
      return 4e-2;
    default:
      return 1e-4;
  }
}

/* A twin of uniform values in [-1, 1). */
static twin rnd1(const int64_t *shape, int nd, wk_dtype dt, uint64_t seed) { return rnd(shape, nd, dt, -1, 1, seed); }
#define SHAPE(...) (const int64_t[]){__VA_ARGS__}, (int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t))

/* ---- matmul family --------------------------------------------------------------------------- */
static void mm_case(wk_dtype dt, int64_t n, int64_t k, int64_t m, int ta, int tb, uint64_t seed) {
  wk_scope_begin();
  /* a transposed operand is made as [k, n] and viewed as [n, k] on each device */
  twin a = leaf(ta ? rnd1(SHAPE(k, n), dt, seed) : rnd1(SHAPE(n, k), dt, seed));
  twin b = leaf(tb ? rnd1(SHAPE(m, k), dt, seed + 1) : rnd1(SHAPE(k, m), dt, seed + 1));
  wk_tensor *ac = ta ? wk_t(a.c) : a.c, *ag = ta ? wk_t(a.g) : a.g;
  wk_tensor *bc = tb ? wk_t(b.c) : b.c, *bg = tb ? wk_t(b.g) : b.g;
  char what[96];
  snprintf(what, sizeof what, "%s [%lld,%lld]x[%lld,%lld] ta=%d tb=%d", wk_dtype_name(dt), (long long)n, (long long)k,
           (long long)k, (long long)m, ta, tb);
  twin leaves[2] = {a, b};
  run_both("mm", (wk_value[]){WK_VT(ac), WK_VT(bc)}, (wk_value[]){WK_VT(ag), WK_VT(bg)}, 2, tol_of(dt), 0, leaves, 2,
           what, 1);
  wk_scope_end();
}

START_TEST(test_cuda_nn_mm) {
  static const wk_dtype dts[] = {WK_F32, WK_F64, WK_F16, WK_BF16};
  for (size_t i = 0; i < 4; i++)
    for (int t = 0; t < 4; t++) mm_case(dts[i], 5, 7, 3, t & 1, t >> 1, 10 + t);
  mm_case(WK_F32, 64, 128, 96, 0, 0, 1);
  mm_case(WK_F32, 257, 33, 129, 1, 1, 2);
  mm_case(WK_F32, 1, 40, 1, 0, 1, 3);
  mm_case(WK_F32, 6, 0, 4, 0, 0, 4); /* empty sum */
}
END_TEST

START_TEST(test_cuda_nn_addmm_linear_bmm) {
  static const wk_dtype dts[] = {WK_F32, WK_F16, WK_BF16, WK_F64};
  for (size_t i = 0; i < 4; i++) {
    wk_dtype dt = dts[i];
    double tol = tol_of(dt);
    wk_scope_begin();
    /* addmm with a broadcast bias row, beta and alpha */
    twin bias = leaf(rnd1(SHAPE(6), dt, 1)), m1 = leaf(rnd1(SHAPE(4, 9), dt, 2)), m2 = leaf(rnd1(SHAPE(9, 6), dt, 3));
    twin l3[3] = {bias, m1, m2};
    run_both("addmm", (wk_value[]){WK_VT(bias.c), WK_VT(m1.c), WK_VT(m2.c), WK_VF(0.5), WK_VF(2.0)},
             (wk_value[]){WK_VT(bias.g), WK_VT(m1.g), WK_VT(m2.g), WK_VF(0.5), WK_VF(2.0)}, 5, tol, 0, l3, 3,
             "addmm beta=0.5 alpha=2", 1);
    /* linear: addmm with a transposed weight (no copy on cuda) */
    twin x = leaf(rnd1(SHAPE(2, 5, 9), dt, 4)), w = leaf(rnd1(SHAPE(7, 9), dt, 5)), b = leaf(rnd1(SHAPE(7), dt, 6));
    twin l3b[3] = {x, w, b};
    run_both("linear", (wk_value[]){WK_VT(x.c), WK_VT(w.c), WK_VT(b.c)},
             (wk_value[]){WK_VT(x.g), WK_VT(w.g), WK_VT(b.g)}, 3, tol, 0, l3b, 3, "linear 3D input", 1);
    /* bmm with the second operand transposed per batch */
    twin p = leaf(rnd1(SHAPE(3, 4, 8), dt, 7)), q = leaf(rnd1(SHAPE(3, 5, 8), dt, 8));
    twin l2[2] = {p, q};
    run_both("bmm", (wk_value[]){WK_VT(p.c), WK_VT(wk_transpose(q.c, 1, 2))},
             (wk_value[]){WK_VT(p.g), WK_VT(wk_transpose(q.g, 1, 2))}, 2, tol, 0, l2, 2, "bmm transposed", 1);
    /* matmul broadcasting a batch against a matrix, and dot */
    twin u = leaf(rnd1(SHAPE(2, 3, 4, 6), dt, 9)), v = leaf(rnd1(SHAPE(6, 5), dt, 10));
    twin l2b[2] = {u, v};
    run_both("matmul", (wk_value[]){WK_VT(u.c), WK_VT(v.c)}, (wk_value[]){WK_VT(u.g), WK_VT(v.g)}, 2, tol, 0, l2b, 2,
             "matmul 4D x 2D", 1);
    twin d1 = rnd1(SHAPE(50), dt, 11), d2 = rnd1(SHAPE(100), dt, 12);
    run_both("dot", (wk_value[]){WK_VT(d1.c), WK_VT(wk_slice(d2.c, 0, 0, 100, 2))},
             (wk_value[]){WK_VT(d1.g), WK_VT(wk_slice(d2.g, 0, 0, 100, 2))}, 2, tol * 2, 0, NULL, 0, "dot strided", 1);
    wk_scope_end();
  }
}
END_TEST

/* ---- conv2d ---------------------------------------------------------------------------------- */
typedef struct {
  int64_t N, C, H, W, O, kh, kw, st, pd, dl, groups;
  bool bias, unbatched;
} conv_case;

static void conv_run(const conv_case *k, wk_dtype dt, uint64_t seed) {
  wk_scope_begin();
  twin x = k->unbatched ? rnd1(SHAPE(k->C, k->H, k->W), dt, seed) : rnd1(SHAPE(k->N, k->C, k->H, k->W), dt, seed);
  twin w = rnd1(SHAPE(k->O, k->C / k->groups, k->kh, k->kw), dt, seed + 1);
  twin b = k->bias ? rnd1(SHAPE(k->O), dt, seed + 2) : (twin){NULL, NULL};
  leaf(x);
  leaf(w);
  if (k->bias) leaf(b);
  twin leaves[3] = {x, w, b};
  int64_t st[2] = {k->st, k->st}, pd[2] = {k->pd, k->pd}, dl[2] = {k->dl, k->dl};
  wk_value ca[7] = {WK_VT(x.c),      WK_VT(w.c),      b.c ? WK_VT(b.c) : WK_VNONE, WK_VINTS(st, 2), WK_VINTS(pd, 2),
                    WK_VINTS(dl, 2), WK_VI(k->groups)};
  wk_value ga[7] = {WK_VT(x.g),      WK_VT(w.g),      b.g ? WK_VT(b.g) : WK_VNONE, WK_VINTS(st, 2), WK_VINTS(pd, 2),
                    WK_VINTS(dl, 2), WK_VI(k->groups)};
  char what[160];
  snprintf(what, sizeof what, "%s x[%lld,%lld,%lld,%lld] O=%lld k=%lldx%lld s=%lld p=%lld d=%lld g=%lld%s%s",
           wk_dtype_name(dt), (long long)k->N, (long long)k->C, (long long)k->H, (long long)k->W, (long long)k->O,
           (long long)k->kh, (long long)k->kw, (long long)k->st, (long long)k->pd, (long long)k->dl,
           (long long)k->groups, k->bias ? " bias" : "", k->unbatched ? " unbatched" : "");
  /* gradients sum over N*oh*ow products: a little looser than the forward */
  run_both("conv2d", ca, ga, 7, 2 * tol_of(dt), 0, leaves, k->bias ? 3 : 2, what, 1);
  wk_scope_end();
}

START_TEST(test_cuda_nn_conv2d) {
  static const conv_case cases[] = {
      {2, 3, 8, 8, 4, 3, 3, 1, 1, 1, 1, true, false},    /* the common 3x3 */
      {2, 4, 9, 7, 6, 3, 3, 2, 1, 1, 2, true, false},    /* stride 2, groups 2, odd sizes */
      {1, 6, 10, 10, 6, 3, 3, 1, 2, 2, 6, false, false}, /* depthwise, dilated */
      {3, 8, 5, 5, 4, 1, 1, 1, 0, 1, 1, true, false},    /* 1x1 */
      {1, 3, 7, 7, 5, 3, 3, 2, 0, 1, 1, false, true},    /* unbatched */
      {2, 2, 12, 11, 3, 5, 5, 1, 2, 1, 1, true, false},  /* 5x5 */
      {2, 3, 6, 9, 4, 2, 3, 3, 1, 2, 1, true, false},    /* rectangular kernel, stride 3 */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) conv_run(&cases[i], WK_F32, 100 + i);
  conv_run(&cases[0], WK_F64, 200);
  conv_run(&cases[1], WK_F16, 201);
  conv_run(&cases[0], WK_BF16, 202);
  conv_run(&cases[2], WK_BF16, 203);
}
END_TEST

/* The benchmark and deterministic modes choose other algorithms: same results. */
START_TEST(test_cuda_nn_conv2d_modes) {
  static const conv_case c = {4, 16, 14, 14, 32, 3, 3, 1, 1, 1, 1, true, false};
  setenv("WICK_CUDNN_BENCHMARK", "1", 1);
  conv_run(&c, WK_F32, 300);
  conv_run(&c, WK_F32, 300); /* the cached choice */
  setenv("WICK_DETERMINISTIC", "1", 1);
  conv_run(&c, WK_F32, 301);
  unsetenv("WICK_CUDNN_BENCHMARK");
  conv_run(&c, WK_F32, 302);
  unsetenv("WICK_DETERMINISTIC");
}
END_TEST

/* ---- pooling --------------------------------------------------------------------------------- */
START_TEST(test_cuda_nn_max_pool) {
  static const struct {
    int64_t H, W, k, s, p, d;
    bool ceil;
  } cases[] = {{9, 9, 3, 2, 1, 1, false},
               {8, 8, 2, 2, 0, 1, false},
               {11, 10, 3, 1, 1, 2, false},
               {8, 8, 3, 2, 0, 1, true},
               {7, 9, 2, 3, 1, 1, true}};
  static const wk_dtype dts[] = {WK_F32, WK_F64, WK_F16, WK_BF16};
  for (size_t t = 0; t < 4; t++)
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      wk_scope_begin();
      twin x = leaf(i == 1 ? rnd1(SHAPE(3, cases[i].H, cases[i].W), dts[t], 40 + i)
                           : rnd1(SHAPE(2, 3, cases[i].H, cases[i].W), dts[t], 40 + i));
      int64_t k[2] = {cases[i].k, cases[i].k}, s[2] = {cases[i].s, cases[i].s}, p[2] = {cases[i].p, cases[i].p},
              d[2] = {cases[i].d, cases[i].d};
      char what[64];
      snprintf(what, sizeof what, "%s case %zu", wk_dtype_name(dts[t]), i);
      run_both("max_pool2d_with_indices",
               (wk_value[]){WK_VT(x.c), WK_VINTS(k, 2), WK_VINTS(s, 2), WK_VINTS(p, 2), WK_VINTS(d, 2),
                            WK_VB(cases[i].ceil)},
               (wk_value[]){WK_VT(x.g), WK_VINTS(k, 2), WK_VINTS(s, 2), WK_VINTS(p, 2), WK_VINTS(d, 2),
                            WK_VB(cases[i].ceil)},
               6, tol_of(dts[t]), 0, &x, 1, what, 1);
      wk_scope_end();
    }
}
END_TEST

START_TEST(test_cuda_nn_avg_pool) {
  static const struct {
    int64_t k, s, p;
    bool ceil, include_pad;
    int64_t divisor; /* 0: none */
  } cases[] = {{3, 2, 1, false, true, 0}, {3, 2, 1, false, false, 0}, {2, 2, 0, false, true, 0},
               {3, 2, 1, true, true, 0},  {3, 2, 1, true, false, 0},  {3, 1, 1, false, true, 5}};
  static const wk_dtype dts[] = {WK_F32, WK_F64, WK_BF16};
  for (size_t t = 0; t < 3; t++)
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      wk_scope_begin();
      twin x = leaf(rnd1(SHAPE(2, 3, 9, 8), dts[t], 50 + i));
      int64_t k[2] = {cases[i].k, cases[i].k}, s[2] = {cases[i].s, cases[i].s}, p[2] = {cases[i].p, cases[i].p};
      wk_value div = cases[i].divisor ? WK_VI(cases[i].divisor) : WK_VNONE;
      char what[64];
      snprintf(what, sizeof what, "%s case %zu", wk_dtype_name(dts[t]), i);
      run_both("avg_pool2d",
               (wk_value[]){WK_VT(x.c), WK_VINTS(k, 2), WK_VINTS(s, 2), WK_VINTS(p, 2), WK_VB(cases[i].ceil),
                            WK_VB(cases[i].include_pad), div},
               (wk_value[]){WK_VT(x.g), WK_VINTS(k, 2), WK_VINTS(s, 2), WK_VINTS(p, 2), WK_VB(cases[i].ceil),
                            WK_VB(cases[i].include_pad), div},
               7, tol_of(dts[t]), 0, &x, 1, what, 1);
      wk_scope_end();
    }
}
END_TEST

START_TEST(test_cuda_nn_adaptive_avg_pool) {
  static const int64_t cases[][4] = {{7, 9, 3, 4}, {8, 8, 1, 1}, {5, 6, 10, 12}, {32, 32, 7, 7}};
  for (size_t i = 0; i < 4; i++)
    for (int t = 0; t < 2; t++) {
      wk_dtype dt = t ? WK_F16 : WK_F32;
      wk_scope_begin();
      twin x = leaf(rnd1(SHAPE(2, 3, cases[i][0], cases[i][1]), dt, 60 + i));
      int64_t os[2] = {cases[i][2], cases[i][3]};
      char what[64];
      snprintf(what, sizeof what, "%s case %zu", wk_dtype_name(dt), i);
      run_both("adaptive_avg_pool2d", (wk_value[]){WK_VT(x.c), WK_VINTS(os, 2)},
               (wk_value[]){WK_VT(x.g), WK_VINTS(os, 2)}, 2, tol_of(dt), 0, &x, 1, what, 1);
      wk_scope_end();
    }
}
END_TEST

/* ---- batch_norm ------------------------------------------------------------------------------ */
static void bn_run(const int64_t *shape, int nd, wk_dtype dt, wk_dtype pdt, bool training, bool affine, uint64_t seed) {
  wk_scope_begin();
  int64_t C = shape[1];
  twin x = leaf(rnd1(shape, nd, dt, seed));
  twin w = affine ? leaf(rnd1(&C, 1, pdt, seed + 1)) : (twin){NULL, NULL};
  twin b = affine ? leaf(rnd1(&C, 1, pdt, seed + 2)) : (twin){NULL, NULL};
  wk_tensor *rm = tu_rand(&C, 1, pdt, -0.5, 0.5, seed + 3), *rv = tu_rand(&C, 1, pdt, 0.5, 1.5, seed + 4);
  twin m = {wk_clone(rm), cu(rm)}, v = {wk_clone(rv), cu(rv)};
  twin leaves[3] = {x, w, b};
  char what[96];
  snprintf(what, sizeof what, "%s/%s %dD %s%s", wk_dtype_name(dt), wk_dtype_name(pdt), nd, training ? "train" : "eval",
           affine ? " affine" : "");
  wk_value ca[8] = {WK_VT(x.c),
                    w.c ? WK_VT(w.c) : WK_VNONE,
                    b.c ? WK_VT(b.c) : WK_VNONE,
                    WK_VT(m.c),
                    WK_VT(v.c),
                    WK_VB(training),
                    WK_VF(0.1),
                    WK_VF(1e-5)};
  wk_value ga[8] = {WK_VT(x.g),
                    w.g ? WK_VT(w.g) : WK_VNONE,
                    b.g ? WK_VT(b.g) : WK_VNONE,
                    WK_VT(m.g),
                    WK_VT(v.g),
                    WK_VB(training),
                    WK_VF(0.1),
                    WK_VF(1e-5)};
  run_both("batch_norm", ca, ga, 8, 2 * tol_of(dt), 0, leaves, affine ? 3 : 1, what, 1);
  /* the running statistics were updated alike (training) or left alone (evaluation) */
  close_t(m.g, m.c, 2 * tol_of(pdt == WK_F64 ? WK_F64 : dt), "running_mean");
  close_t(v.g, v.c, 2 * tol_of(pdt == WK_F64 ? WK_F64 : dt), "running_var");
  wk_scope_end();
}

START_TEST(test_cuda_nn_batch_norm) {
  for (int train = 0; train < 2; train++)
    for (int affine = 0; affine < 2; affine++) {
      bn_run(SHAPE(4, 3, 5, 5), WK_F32, WK_F32, train, affine, 70);
      bn_run(SHAPE(8, 5), WK_F32, WK_F32, train, affine, 71);
      bn_run(SHAPE(3, 4, 7), WK_F64, WK_F64, train, affine, 72);
    }
  bn_run(SHAPE(16, 64, 8, 8), WK_F32, WK_F32, true, true, 73); /* a ResNet-like layer */
  bn_run(SHAPE(4, 3, 6, 6), WK_F16, WK_F32, true, true, 74);   /* mixed: f32 parameters */
  bn_run(SHAPE(4, 3, 6, 6), WK_BF16, WK_F32, true, true, 75);
  bn_run(SHAPE(4, 3, 6, 6), WK_BF16, WK_F32, false, true, 76);
}
END_TEST

/* Bad input is refused with the cpu kernel's message, not a crash. */
/* ---- scaled_dot_product_attention (the core's composite on cuda vs the cpu's fused kernel) ---- */
START_TEST(test_cuda_nn_sdpa) {
  for (int t = 0; t < 2; t++)
    for (int mode = 0; mode < 5; mode++) {
      wk_dtype dt = t ? WK_F16 : WK_F32;
      wk_scope_begin();
      twin q = leaf(rnd1(SHAPE(2, 3, 9, 8), dt, 90)), k = leaf(rnd1(SHAPE(2, 3, 13, 8), dt, 91));
      twin v = leaf(rnd1(SHAPE(2, 3, 13, 5), dt, 92));
      twin m = {NULL, NULL};
      if (mode == 2) m = leaf(rnd1(SHAPE(2, 1, 9, 13), dt, 93));
      if (mode == 3) { /* bool (9, 13), key 0 always taking part */
        wk_tensor *b = wk_gt_scalar(tu_rand(SHAPE(9, 13), WK_F32, 0, 1, 94), 0.4);
        TU_NOTNULL(wk_fill_(wk_narrow(b, 1, 0, 1), 1.0));
        m = (twin){b, cu(b)};
      }
      double p = mode == 4 ? 0.3 : 0;
      bool causal = mode == 1;
      char what[64];
      snprintf(what, sizeof what, "%s mode %d", wk_dtype_name(dt), mode);
      wk_value ca[7] = {WK_VT(q.c), WK_VT(k.c), WK_VT(v.c), m.c ? WK_VT(m.c) : WK_VNONE, WK_VF(p), WK_VB(causal), WK_VNONE};
      wk_value ga[7] = {WK_VT(q.g), WK_VT(k.g), WK_VT(v.g), m.g ? WK_VT(m.g) : WK_VNONE, WK_VF(p), WK_VB(causal), WK_VNONE};
      twin leaves[4] = {q, k, v, m};
      if (p > 0) { /* both devices draw the same Philox stream after the same seed */
        wk_value oc[3], og[3];
        wk_manual_seed(7);
        TU_OK(wk_call("scaled_dot_product_attention", ca, 7, oc));
        wk_manual_seed(7);
        TU_OK(wk_call("scaled_dot_product_attention", ga, 7, og));
        close_t(og[0].u.t, oc[0].u.t, tol_of(dt), what);
        wk_tensor *r = tu_rand(wk_tensor_sizes(oc[0].u.t), 4, dt, -1, 1, 95);
        TU_OK(wk_backward(wk_sum(wk_mul(oc[0].u.t, r))));
        TU_OK(wk_backward(wk_sum(wk_mul(og[0].u.t, cu(r)))));
        for (int i = 0; i < 3; i++) close_t(wk_tensor_grad(leaves[i].g), wk_tensor_grad(leaves[i].c), 4 * tol_of(dt), what);
      } else {
        run_both("scaled_dot_product_attention", ca, ga, 7, tol_of(dt), 0, leaves, mode == 2 ? 4 : 3, what, 4);
      }
      wk_scope_end();
    }
}
END_TEST

START_TEST(test_cuda_nn_errors) {
  wk_scope_begin();
  wk_value outs[WK_MAX_OUTS];
  wk_tensor *a = cu(tu_rand(SHAPE(3, 4), WK_F32, -1, 1, 1)), *b = cu(tu_rand(SHAPE(5, 2), WK_F32, -1, 1, 2));
  ck_assert_ptr_null(wk_mm(a, b));
  TU_FAILS_WITH(WK_ERR_SHAPE, "cannot be multiplied");
  wk_tensor *x = cu(tu_rand(SHAPE(1, 4, 5, 5), WK_F32, -1, 1, 3)),
            *w = cu(tu_rand(SHAPE(6, 3, 3, 3), WK_F32, -1, 1, 4));
  ck_assert_int_ne(wk_call("conv2d", (wk_value[]){WK_VT(x), WK_VT(w)}, 2, outs), WK_OK);
  TU_FAILS_WITH(WK_ERR_SHAPE, "channels");
  int64_t k[2] = {7, 7};
  ck_assert_int_ne(wk_call("avg_pool2d", (wk_value[]){WK_VT(x), WK_VINTS(k, 2)}, 2, outs), WK_OK);
  TU_FAILS_WITH(WK_ERR_SHAPE, "too small");
  wk_scope_end();
}
END_TEST

/* ---- handles per thread and stream, the TF32 switch ----------------------------------------- */
typedef struct {
  int64_t n;
  double err; /* max |cuda - cpu| / max(1, max |cpu|) of one mm, or -1 on a failed call */
} mm_job;

static void *mm_thread(void *p) {
  mm_job *j = p;
  wk_scope_begin();
  wk_tensor *a = tu_rand(SHAPE(j->n, 40), WK_F32, -1, 1, (uint64_t)j->n);
  wk_tensor *b = tu_rand(SHAPE(40, j->n), WK_F32, -1, 1, (uint64_t)j->n + 1);
  wk_tensor *r = wk_mm(a, b), *g = wk_to_device(wk_mm(cu(a), cu(b)), g_cpu);
  j->err = -1;
  if (r && g) {
    double *x = tu_values(g), *y = tu_values(r), scale = 1, worst = 0;
    for (int64_t i = 0; i < wk_tensor_numel(r); i++) scale = fmax(scale, fabs(y[i]));
    for (int64_t i = 0; i < wk_tensor_numel(r); i++) worst = fmax(worst, fabs(x[i] - y[i]));
    j->err = worst / scale;
    free(x);
    free(y);
  }
  wk_scope_end();
  return NULL;
}

START_TEST(test_cuda_nn_threads_streams_tf32) {
  /* two threads at once: each gets its own cuBLAS handle */
  mm_job jobs[2] = {{33, 0}, {130, 0}};
  pthread_t th[2];
  for (int i = 0; i < 2; i++) ck_assert_int_eq(pthread_create(&th[i], NULL, mm_thread, &jobs[i]), 0);
  for (int i = 0; i < 2; i++) {
    pthread_join(th[i], NULL);
    ck_assert_msg(jobs[i].err >= 0 && jobs[i].err <= 1e-4, "thread %d: mm error %g", i, jobs[i].err);
  }
  /* a stream of our own: handles bound to it, results as on the default stream
   * (not in the cpu self-check: the cpu has no streams) */
  wk_stream st;
  if (g_cuda.type != WK_DEVICE_CPU) {
    TU_OK(wk_stream_create(g_cuda, 0, &st));
    TU_OK(wk_set_current_stream(st));
    mm_case(WK_F32, 64, 48, 32, 1, 0, 400);
    static const conv_case c = {2, 4, 9, 9, 8, 3, 3, 1, 1, 1, 1, true, false};
    conv_run(&c, WK_F32, 401);
    TU_OK(wk_stream_synchronize(st));
    TU_OK(wk_set_current_stream((wk_stream){g_cuda, NULL}));
    wk_stream_destroy(st);
  }
  /* TF32 matmuls: about 1e-3 relative, so only a loose bound holds */
  setenv("WICK_CUDA_ALLOW_TF32", "1", 1);
  wk_scope_begin();
  twin a = rnd1(SHAPE(256, 512), WK_F32, 402), b = rnd1(SHAPE(512, 128), WK_F32, 403);
  run_both("mm", (wk_value[]){WK_VT(a.c), WK_VT(b.c)}, (wk_value[]){WK_VT(a.g), WK_VT(b.g)}, 2, 1e-2, 0, NULL, 0,
           "mm with TF32", 1);
  wk_scope_end();
  unsetenv("WICK_CUDA_ALLOW_TF32");
}
END_TEST

/* ---- LeNet: one training step on each device ------------------------------------------------ */
START_TEST(test_cuda_nn_lenet_step) {
  int64_t live = wk_live_tensors();
  wk_scope_begin();
  wk_manual_seed(7);
  wk_module *mc = wk_nn_lenet(), *mg = wk_nn_lenet();
  TU_NOTNULL(mc);
  TU_NOTNULL(mg);
  wk_state_dict *sd = wk_module_state_dict(mc);
  TU_OK(wk_module_load_state_dict(mg, sd, true, NULL));
  wk_state_dict_free(sd);
  TU_OK(wk_module_to(mg, g_cuda, WK_DTYPE_DEFAULT));
  wk_tensor *x = tu_rand(SHAPE(16, 1, 28, 28), WK_F32, 0, 1, 5);
  wk_tensor *y = wk_randint(0, 10, SHAPE(16), (wk_options){.dtype = WK_I64});
  wk_module *ms[2] = {mc, mg};
  wk_tensor *xs[2] = {x, cu(x)}, *ys[2] = {y, cu(y)};
  double loss[2][2];
  wk_tensor *ps[2][16];
  int np = wk_module_named_parameters(mc, NULL, ps[0], 16);
  ck_assert_int_eq(wk_module_named_parameters(mg, NULL, ps[1], 16), np);
  wk_optimizer *opt[2];
  for (int d = 0; d < 2; d++) {
    opt[d] = wk_optim_sgd(ps[d], np, (wk_sgd_opts){.lr = 0.05, .momentum = 0.9});
    TU_NOTNULL(opt[d]);
  }
  for (int step = 0; step < 2; step++) {
    for (int d = 0; d < 2; d++) {
      wk_tensor *l = wk_cross_entropy(wk_module_forward(ms[d], xs[d]), ys[d]);
      TU_NOTNULL(l);
      TU_OK(wk_item(l, &loss[d][step]));
      TU_OK(wk_optim_zero_grad(opt[d], true));
      TU_OK(wk_backward(l));
    }
    for (int i = 0; i < np && step == 0; i++) {
      char what[64];
      snprintf(what, sizeof what, "lenet gradient of parameter %d", i);
      close_t(wk_tensor_grad(ps[1][i]), wk_tensor_grad(ps[0][i]), 1e-3, what);
    }
    for (int d = 0; d < 2; d++) TU_OK(wk_optim_step(opt[d]));
  }
  for (int d = 0; d < 2; d++) wk_optimizer_free(opt[d]);
  for (int step = 0; step < 2; step++)
    ck_assert_msg(fabs(loss[1][step] - loss[0][step]) <= 1e-4 * fmax(1, fabs(loss[0][step])),
                  "step %d: cuda loss %.9g, cpu loss %.9g", step, loss[1][step], loss[0][step]);
  wk_module_release(mc);
  wk_module_release(mg);
  wk_scope_end();
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("cuda_nn");
  TCase *tc = tcase_create("cuda_nn");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_cuda_nn_mm);
  tcase_add_test(tc, test_cuda_nn_addmm_linear_bmm);
  tcase_add_test(tc, test_cuda_nn_conv2d);
  tcase_add_test(tc, test_cuda_nn_conv2d_modes);
  tcase_add_test(tc, test_cuda_nn_max_pool);
  tcase_add_test(tc, test_cuda_nn_avg_pool);
  tcase_add_test(tc, test_cuda_nn_adaptive_avg_pool);
  tcase_add_test(tc, test_cuda_nn_batch_norm);
  tcase_add_test(tc, test_cuda_nn_sdpa);
  tcase_add_test(tc, test_cuda_nn_errors);
  tcase_add_test(tc, test_cuda_nn_threads_streams_tf32);
  tcase_add_test(tc, test_cuda_nn_lenet_step);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  /* f32 tolerances hold without TF32: off for cuDNN too (cuBLAS's default is off) */
  setenv("WICK_CUDNN_ALLOW_TF32", "0", 1);
  unsetenv("WICK_CUDA_ALLOW_TF32");
  if (wk_init() != WK_OK) {
    fprintf(stderr, "check_cuda_nn: wk_init failed: %s\n", wk_last_error_message());
    return EXIT_FAILURE;
  }
  int32_t type = wk_device_type_find("cuda");
  const char *self = getenv("WICK_CUDA_NN_ON_CPU");
  if (self && strcmp(self, "1") == 0) type = WK_DEVICE_CPU;
  if (type < 0) {
    printf("SKIP: the cuda plugin is not loaded (not built, or failed: see `wick info`)\n");
    return 77;
  }
  if (type != WK_DEVICE_CPU && wk_device_count(type) == 0) {
    printf("SKIP: no CUDA device: %s\n", wk_device_type_status(type));
    return 77;
  }
  g_cuda = (wk_device){type, 0};
  SRunner *sr = srunner_create(make_suite());
  srunner_set_fork_status(sr, CK_NOFORK); /* CUDA is initialised already: a forked child cannot use it */
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
