/* The cpu-against-cuda harness shared by the CUDA suites (check_cuda_ops,
 * check_cuda_nn): twins of a tensor on both devices, comparison of a result
 * with the cpu's, and one op run on both with its gradients. Each suite sets
 * g_cuda (the cpu itself for its WICK_CUDA_*_ON_CPU self-check). */
#ifndef WICK_TESTS_CUDA_TWIN_H
#define WICK_TESTS_CUDA_TWIN_H

#include <math.h>
#include <stdlib.h>

#include "testutil.h"

static wk_device g_cuda;
static const wk_device g_cpu = {WK_DEVICE_CPU, 0};

/* The twin on the device under test (a copy even when that is the cpu). */
static wk_tensor *cu(wk_tensor *t) {
  if (!t) return NULL;
  return g_cuda.type == WK_DEVICE_CPU ? wk_clone(t) : wk_to_device(t, g_cuda);
}

/* got (device under test) against ref (cpu): shape, dtype and values within tol. */
static void close_t(wk_tensor *got, wk_tensor *ref, double tol, const char *what) {
  ck_assert_msg(got && ref, "%s: missing result (%s)", what, wk_last_error_message());
  ck_assert_msg(wk_tensor_device(got).type == g_cuda.type, "%s: the result is not on cuda", what);
  wk_tensor *h = wk_to_device(got, g_cpu);
  ck_assert_msg(h != NULL, "%s: copy to cpu failed: %s", what, wk_last_error_message());
  ck_assert_int_eq(wk_tensor_dim(h), wk_tensor_dim(ref));
  for (int d = 0; d < wk_tensor_dim(ref); d++)
    ck_assert_msg(wk_tensor_size(h, d) == wk_tensor_size(ref, d), "%s: size %d is %lld, cpu gives %lld", what, d,
                  (long long)wk_tensor_size(h, d), (long long)wk_tensor_size(ref, d));
  ck_assert_msg(wk_tensor_dtype(h) == wk_tensor_dtype(ref), "%s: dtype %s, cpu gives %s", what,
                wk_dtype_name(wk_tensor_dtype(h)), wk_dtype_name(wk_tensor_dtype(ref)));
  int64_t n = wk_tensor_numel(ref), at = 0;
  double *a = tu_values(h), *b = tu_values(ref), scale = 1, worst = 0;
  for (int64_t i = 0; i < n; i++)
    if (isfinite(b[i]) && fabs(b[i]) > scale) scale = fabs(b[i]);
  for (int64_t i = 0; i < n; i++) {
    double e = (isnan(a[i]) && isnan(b[i])) || a[i] == b[i] ? 0 : fabs(a[i] - b[i]);
    if (!(e <= worst)) {
      worst = e;
      at = i;
    }
  }
  double ga = n ? a[at] : 0, gb = n ? b[at] : 0;
  free(a);
  free(b);
  ck_assert_msg(worst <= tol * scale, "%s: element %lld is %.9g, cpu gives %.9g (error %.3g > %.3g)", what,
                (long long)at, ga, gb, worst, tol * scale);
}

typedef struct {
  wk_tensor *c, *g;
} twin;

static twin rnd(const int64_t *shape, int nd, wk_dtype dt, double lo, double hi, uint64_t seed) {
  wk_tensor *c = tu_rand(shape, nd, dt, lo, hi, seed);
  return (twin){c, cu(c)};
}
static twin leaf(twin t) {
  TU_OK(wk_tensor_set_requires_grad(t.c, true));
  TU_OK(wk_tensor_set_requires_grad(t.g, true));
  return t;
}
/* Runs op on both devices (ca: the arguments on cpu, ga: the same on cuda),
 * compares every tensor result within tol and, with leaves (already requiring
 * grad), the gradients of sum(result[gout] * r) for a fixed random r within
 * tol * grad_factor. */
static void run_both(const char *op, const wk_value *ca, const wk_value *ga, int n, double tol, int gout,
                     const twin *leaves, int nl, const char *what, double grad_factor) {
  wk_value oc[WK_MAX_OUTS], og[WK_MAX_OUTS];
  char buf[256];
  ck_assert_msg(wk_call(op, ca, n, oc) == WK_OK, "%s (%s): cpu failed: %s", op, what, wk_last_error_message());
  ck_assert_msg(wk_call(op, ga, n, og) == WK_OK, "%s (%s): cuda failed: %s", op, what, wk_last_error_message());
  int nouts = wk_op_num_outs(wk_op_find(op));
  for (int i = 0; i < nouts; i++) {
    ck_assert_int_eq(oc[i].tag, og[i].tag);
    if (oc[i].tag != WK_V_TENSOR || !oc[i].u.t) continue;
    snprintf(buf, sizeof buf, "%s (%s) result %d", op, what, i);
    close_t(og[i].u.t, oc[i].u.t, wk_dtype_is_floating(wk_tensor_dtype(oc[i].u.t)) ? tol : 0, buf);
  }
  if (nl == 0) return;
  wk_tensor *yc = oc[gout].u.t, *yg = og[gout].u.t;
  wk_tensor *r = tu_rand(wk_tensor_sizes(yc), wk_tensor_dim(yc), wk_tensor_dtype(yc), -1, 1, 99);
  TU_OK(wk_backward(wk_sum(wk_mul(yc, r))));
  TU_OK(wk_backward(wk_sum(wk_mul(yg, cu(r)))));
  for (int i = 0; i < nl; i++) {
    snprintf(buf, sizeof buf, "%s (%s) gradient of leaf %d", op, what, i);
    wk_tensor *gc = wk_tensor_grad(leaves[i].c), *gg = wk_tensor_grad(leaves[i].g);
    ck_assert_msg(gc && gg, "%s: missing gradient (cpu %p, cuda %p)", buf, (void *)gc, (void *)gg);
    close_t(gg, gc, tol * grad_factor, buf);
  }
}

#endif
