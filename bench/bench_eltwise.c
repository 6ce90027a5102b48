/* Elementwise, normalisation and pooling kernels of a ResNet-18 training
 * step, one op at a time: add / add_ (alpha) / mul / relu / relu_ /
 * threshold_backward on 1M f32 elements and on [128, 64, 8, 8], batch_norm
 * (training and evaluation) and batch_norm_backward at ResNet-18's shapes for
 * 32x32 images at batch 128, adaptive_avg_pool2d to 1x1 and its backward
 * on [128, 512, 7, 7], max_pool2d's backward from [128, 64, 16, 16].
 * Median microseconds per call, printed as `name_us value`; bench/eltwise.py
 * is the PyTorch twin (same names, prefixed torch_). The cpu plugin's loops
 * take every call (onednn is disabled here); WICK_CPU_ISA picks their
 * instruction set. Usage: bench_eltwise [REPS] [FILTER] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wick/wick.h>

#include "bench_util.h"

/* Releases n tensors (NULL entries skipped). */
static void release_n(wk_tensor **t, int n) {
  for (int i = 0; i < n; i++) wk_release(t[i]);
}

static int g_reps = 30;
static const char *g_filter;

typedef struct {
  const char *op;
  wk_value a[10];
  int na;
  int nout;
} job;

static double run(const char *name, job *j) {
  if (g_filter && !strstr(name, g_filter)) return 0;
  double t[1000];
  for (int r = -3; r < g_reps; r++) {
    wk_value o[4];
    double t0 = bench_now();
    if (wk_call(j->op, j->a, j->na, o) != WK_OK) {
      fprintf(stderr, "bench_eltwise: %s: %s\n", name, wk_last_error_message());
      exit(1);
    }
    double dt = bench_now() - t0;
    if (r >= 0) t[r] = dt;
    bool inplace = j->op[strlen(j->op) - 1] == '_';
    for (int i = 0; i < j->nout && !inplace; i++)
      if (o[i].tag == WK_V_TENSOR) wk_release(o[i].u.t);
  }
  double m = bench_median(t, g_reps);
  printf("%s_us %.1f\n", name, 1e6 * m);
  fflush(stdout);
  return m;
}

static wk_tensor *randn(const int64_t *sz, int nd) {
  return wk_randn(sz, nd, (wk_options){0});
}

/* Whether FILTER can match a case of the family whose names contain key
 * (the inputs of the other families are not even made). */
static bool family(const char *key) {
  return !g_filter || strstr(g_filter, key) || strstr(key, g_filter);
}

int main(int argc, char **argv) {
  const char *d = getenv("WICK_DISABLE_PLUGINS");
  if (!d || !*d) setenv("WICK_DISABLE_PLUGINS", "onednn", 1);
  if (argc > 1) g_reps = atoi(argv[1]);
  if (argc > 2) g_filter = argv[2];
  if (g_reps < 1 || g_reps > 1000 || wk_init() != WK_OK) return 1;
  wk_manual_seed(0);
  wk_no_grad_begin();

  char name[128];
  if (family("_1m") || family("_act")) {
    int64_t n1m[1] = {1 << 20}, act[4] = {128, 64, 8, 8};
    wk_tensor *a = randn(n1m, 1), *b = randn(n1m, 1), *c = wk_clone(a);
    wk_tensor *xa = randn(act, 4), *ya = randn(act, 4), *za = wk_clone(xa);
    struct {
      const char *tag;
      wk_tensor *a, *b, *c;
    } sets[2] = {{"1m", a, b, c}, {"act", xa, ya, za}};
    for (int s = 0; s < 2; s++) {
      job j;
      snprintf(name, sizeof name, "add_%s", sets[s].tag);
      j = (job){"add", {WK_VT(sets[s].a), WK_VT(sets[s].b), WK_VF(1)}, 3, 1};
      run(name, &j);
      snprintf(name, sizeof name, "add_inplace_alpha_%s", sets[s].tag);
      j = (job){"add_", {WK_VT(sets[s].c), WK_VT(sets[s].b), WK_VF(1e-9)}, 3, 1};
      run(name, &j);
      snprintf(name, sizeof name, "mul_%s", sets[s].tag);
      j = (job){"mul", {WK_VT(sets[s].a), WK_VT(sets[s].b)}, 2, 1};
      run(name, &j);
      snprintf(name, sizeof name, "relu_%s", sets[s].tag);
      j = (job){"relu", {WK_VT(sets[s].a)}, 1, 1};
      run(name, &j);
      snprintf(name, sizeof name, "relu_inplace_%s", sets[s].tag);
      j = (job){"relu_", {WK_VT(sets[s].c)}, 1, 1};
      run(name, &j);
      snprintf(name, sizeof name, "threshold_backward_%s", sets[s].tag);
      j = (job){"threshold_backward", {WK_VT(sets[s].b), WK_VT(sets[s].a), WK_VF(0)}, 3, 1};
      run(name, &j);
    }
    release_n((wk_tensor *[]){a, b, c, xa, ya, za}, 6);
  }

  /* batch_norm at ResNet-18's shapes (32x32 images, batch 128) */
  const int64_t bn[][4] = {{128, 64, 16, 16}, {128, 64, 8, 8}, {128, 128, 4, 4}, {128, 256, 2, 2}, {128, 512, 1, 1}};
  for (int i = 0; i < 5 && family("bn_"); i++) {
    int64_t C = bn[i][1], csz[1] = {C};
    wk_tensor *x = randn(bn[i], 4), *go = randn(bn[i], 4);
    wk_tensor *w = wk_ones(csz, 1, (wk_options){0}), *bb = wk_zeros(csz, 1, (wk_options){0});
    wk_tensor *rm = wk_zeros(csz, 1, (wk_options){0}), *rv = wk_ones(csz, 1, (wk_options){0});
    job j = {"batch_norm",
             {WK_VT(x), WK_VT(w), WK_VT(bb), WK_VT(rm), WK_VT(rv), WK_VB(true), WK_VF(0.1), WK_VF(1e-5)},
             8,
             3};
    snprintf(name, sizeof name, "bn_train_%lldx%lldx%lld", (long long)C, (long long)bn[i][2], (long long)bn[i][3]);
    run(name, &j);
    j.a[5] = WK_VB(false);
    snprintf(name, sizeof name, "bn_eval_%lldx%lldx%lld", (long long)C, (long long)bn[i][2], (long long)bn[i][3]);
    run(name, &j);
    wk_value o[3];
    j.a[5] = WK_VB(true);
    if (wk_call("batch_norm", j.a, 8, o) != WK_OK) return 1;
    int64_t mask[3] = {1, 1, 1};
    job k = {"batch_norm_backward",
             {WK_VT(go), WK_VT(x), WK_VT(w), WK_VT(rm), WK_VT(rv), WK_VT(o[1].u.t), WK_VT(o[2].u.t), WK_VB(true),
              WK_VF(1e-5), WK_VINTS(mask, 3)},
             10,
             3};
    snprintf(name, sizeof name, "bn_backward_%lldx%lldx%lld", (long long)C, (long long)bn[i][2], (long long)bn[i][3]);
    run(name, &k);
    release_n((wk_tensor *[]){x, go, w, bb, rm, rv, o[0].u.t, o[1].u.t, o[2].u.t}, 9);
  }

  /* global average pool (ResNet-18 at 224x224) and its backward */
  if (family("adaptive_avg_pool")) {
    int64_t gp[4] = {128, 512, 7, 7}, one[2] = {1, 1}, gpo[4] = {128, 512, 1, 1};
    wk_tensor *gx = randn(gp, 4), *gg = randn(gpo, 4);
    job j = {"adaptive_avg_pool2d", {WK_VT(gx), WK_VINTS(one, 2)}, 2, 1};
    run("adaptive_avg_pool_512x7x7", &j);
    j = (job){"adaptive_avg_pool2d_backward", {WK_VT(gg), WK_VT(gx)}, 2, 1};
    run("adaptive_avg_pool_backward_512x7x7", &j);
    release_n((wk_tensor *[]){gx, gg}, 2);
  }

  /* max_pool2d 3x3 stride 2 padding 1 backward from [128, 64, 16, 16] */
  if (family("max_pool_backward")) {
    int64_t mp[4] = {128, 64, 16, 16}, k3[2] = {3, 3}, s2[2] = {2, 2}, p1[2] = {1, 1}, d1[2] = {1, 1};
    wk_tensor *mx = randn(mp, 4);
    wk_value mo[2],
        ma[6] = {WK_VT(mx), WK_VINTS(k3, 2), WK_VINTS(s2, 2), WK_VINTS(p1, 2), WK_VINTS(d1, 2), WK_VB(false)};
    if (wk_call("max_pool2d_with_indices", ma, 6, mo) != WK_OK) return 1;
    wk_tensor *mg = randn(wk_tensor_sizes(mo[0].u.t), 4);
    job j = {"max_pool2d_with_indices_backward",
             {WK_VT(mg), WK_VT(mx), WK_VINTS(k3, 2), WK_VINTS(s2, 2), WK_VINTS(p1, 2), WK_VINTS(d1, 2), WK_VB(false),
              WK_VT(mo[1].u.t)},
             8,
             1};
    run("max_pool_backward_64x16x16", &j);
    release_n((wk_tensor *[]){mx, mg, mo[0].u.t, mo[1].u.t}, 4);
  }
  wk_no_grad_end();
  return 0;
}
