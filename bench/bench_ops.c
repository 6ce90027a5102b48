/* Kernel-level workloads: conv2d 64->64 3x3 (padding 1) on a [64, 64, 32, 32]
 * batch, forward and forward+backward (input and weight gradients), and
 * sgemm N x N x N through wk_mm for N = 256, 1024, 2048 as GFLOP/s.
 * `bench_ops openblas` instead times OpenBLAS's own cblas_sgemm on the same
 * sizes in a process without Wick (OpenBLAS threads as the environment says):
 * the ceiling the cpu plugin's GEMM should reach. Medians of timed repetitions.
 * Usage: bench_ops [REPS] | bench_ops openblas [REPS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wick/autograd.h>
#include <wick/wick.h>

#include "bench_util.h"
#ifdef CPU_HAVE_OPENBLAS
#include <cblas.h>
#endif

static int fail(const char *what) {
  fprintf(stderr, "bench_ops: %s: %s\n", what, wk_last_error_message());
  return 1;
}

static int openblas_only(int reps) {
#ifdef CPU_HAVE_OPENBLAS
  static double t[1000];
  const int sizes[3] = {256, 1024, 2048};
  for (int i = 0; i < 3; i++) {
    int n = sizes[i], nrep = n <= 256 ? reps * 20 : reps;
    if (nrep > 1000) nrep = 1000;
    float *a = malloc(sizeof(float) * (size_t)n * (size_t)n), *c = malloc(sizeof(float) * (size_t)n * (size_t)n),
          *out = malloc(sizeof(float) * (size_t)n * (size_t)n);
    if (!a || !c || !out) return 1;
    for (size_t k = 0; k < (size_t)n * (size_t)n; k++) {
      a[k] = (float)rand() / (float)RAND_MAX - 0.5f;
      c[k] = (float)rand() / (float)RAND_MAX - 0.5f;
    }
    for (int r = -1; r < nrep; r++) {
      double t0 = bench_now();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, c, n, 0.0f, out, n);
      if (r >= 0) t[r] = bench_now() - t0;
    }
    printf("openblas_sgemm_%d_gflops %.1f\n", n, 2.0 * n * (double)n * n / bench_median(t, nrep) / 1e9);
    free(a);
    free(c);
    free(out);
  }
  return 0;
#else
  (void)reps;
  fprintf(stderr, "bench_ops: built without OpenBLAS\n");
  return 1;
#endif
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "openblas")) return openblas_only(argc > 2 ? atoi(argv[2]) : 5);
  int reps = argc > 1 ? atoi(argv[1]) : 5;
  if (wk_init() != WK_OK || reps < 1 || reps > 1000) return 1;
  wk_manual_seed(0);
  double t[1000];

  /* conv2d */
  wk_tensor *x = wk_randn(WK_SHAPE(64, 64, 32, 32), (wk_options){0});
  wk_tensor *w = wk_mul_scalar(wk_randn(WK_SHAPE(64, 64, 3, 3), (wk_options){0}), 0.05);
  wk_tensor *b = wk_zeros(WK_SHAPE(64), (wk_options){0});
  wk_tensor_set_requires_grad(x, true);
  wk_tensor_set_requires_grad(w, true);
  for (int r = -1; r < reps; r++) {
    wk_no_grad_begin();
    double t0 = bench_now();
    wk_tensor *y = wk_conv2d(x, w, b, 1, 1, 1, 1);
    if (!y) return fail("conv2d");
    if (r >= 0) t[r] = bench_now() - t0;
    wk_release(y);
    wk_no_grad_end();
  }
  printf("conv2d_64x64_fwd_ms %.2f\n", 1e3 * bench_median(t, reps));
  for (int r = -1; r < reps; r++) {
    double t0 = bench_now();
    wk_scope_begin();
    wk_tensor *y = wk_conv2d(x, w, b, 1, 1, 1, 1);
    if (!y || wk_backward(wk_sum(y))) return fail("conv2d backward");
    wk_scope_end();
    if (r >= 0) t[r] = bench_now() - t0;
    wk_tensor_zero_grad(x, true);
    wk_tensor_zero_grad(w, true);
  }
  printf("conv2d_64x64_fwdbwd_ms %.2f\n", 1e3 * bench_median(t, reps));
  wk_release(x);
  wk_release(w);
  wk_release(b);

  /* sgemm */
  const int64_t sizes[3] = {256, 1024, 2048};
  for (int i = 0; i < 3; i++) {
    int64_t n = sizes[i];
    int nrep = n <= 256 ? reps * 20 : reps;
    if (nrep > 1000) nrep = 1000;
    wk_tensor *a = wk_randn(WK_SHAPE(n, n), (wk_options){0}), *c = wk_randn(WK_SHAPE(n, n), (wk_options){0});
    for (int r = -1; r < nrep; r++) {
      double t0 = bench_now();
      wk_tensor *p = wk_mm(a, c);
      if (!p) return fail("mm");
      if (r >= 0) t[r] = bench_now() - t0;
      wk_release(p);
    }
    double flops = 2.0 * (double)n * (double)n * (double)n;
    printf("sgemm_%lld_gflops %.1f\n", (long long)n, flops / bench_median(t, nrep) / 1e9);
    wk_release(a);
    wk_release(c);
  }
  printf("ops_peak_rss_mb %.1f\n", bench_peak_rss_mb());
  wk_shutdown();
  return 0;
}
