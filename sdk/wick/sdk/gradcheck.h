/* Wick SDK: gradcheck and gradgradcheck, PyTorch's finite-difference checks
 * of analytical gradients, usable from tests and from plugins (header-only,
 * built on the public API). Inputs should be float64; those that require
 * grad are checked. Include after <wick/wick.h> or <wick/sdk.h>. */
#ifndef WICK_SDK_GRADCHECK_H
#define WICK_SDK_GRADCHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wick/wick.h>

/* The function under test: returns a new reference to one output tensor. */
typedef wk_tensor *(*wk_gradcheck_fn)(void *ctx, wk_tensor *const *inputs, int n);

typedef struct wk_gradcheck_opts {
  double eps;  /* finite-difference step (default 1e-6) */
  double atol; /* default 1e-5 */
  double rtol; /* default 1e-3 */
  uint64_t seed; /* for the random output projection */
} wk_gradcheck_opts;

/* sum(fn(inputs) * v) as a double, grad mode off. */
static inline wk_status wk__gc_eval(wk_gradcheck_fn fn, void *ctx, wk_tensor *const *in, int n, wk_tensor *v,
                                    double *out) {
  bool prev = wk_set_grad_enabled(false);
  wk_tensor *y = fn(ctx, in, n);
  wk_tensor *p = y ? wk_mul(y, v) : NULL;
  wk_tensor *s = p ? wk_sum(p) : NULL;
  wk_status st = s ? wk_item(s, out) : wk_last_error();
  wk_release(y);
  wk_release(p);
  wk_release(s);
  wk_set_grad_enabled(prev);
  return st;
}

/* A fixed pseudo-random tensor shaped like t (values in [-1, 1)). */
static inline wk_tensor *wk__gc_proj(wk_tensor *t, uint64_t seed) {
  int64_t n = wk_tensor_numel(t);
  double *v = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
  if (!v) {
    wk_error(WK_ERR_NO_MEMORY, "gradcheck: out of memory");
    return NULL;
  }
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (int64_t i = 0; i < n; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    v[i] = (double)(s >> 11) / 4503599627370496.0 - 1.0;
  }
  wk_tensor *r = wk_tensor_from_data(v, WK_F64, wk_tensor_sizes(t), wk_tensor_dim(t));
  free(v);
  wk_tensor *c = r ? wk_to_dtype(r, wk_tensor_dtype(t)) : NULL;
  wk_release(r);
  return c;
}

/* Checks d sum(fn(x) * v) / dx from autograd against central differences for
 * every element of every input that requires grad. Inputs must be
 * contiguous cpu float64 leaves. Returns WK_OK, or WK_ERR_AUTOGRAD with a
 * message naming the input, the element, and both values. */
static inline wk_status wk_gradcheck(wk_gradcheck_fn fn, void *ctx, wk_tensor *const *in, int n,
                                     const wk_gradcheck_opts *o) {
  double eps = o && o->eps > 0 ? o->eps : 1e-6, atol = o && o->atol > 0 ? o->atol : 1e-5;
  double rtol = o && o->rtol > 0 ? o->rtol : 1e-3;
  uint64_t seed = o ? o->seed : 0;
  wk_tensor *y = fn(ctx, in, n);
  if (!y) return wk_last_error();
  wk_tensor *v = wk__gc_proj(y, seed + 1);
  wk_tensor *req[32];
  int idx[32], nr = 0;
  for (int i = 0; i < n && nr < 32; i++)
    if (in[i] && wk_tensor_requires_grad(in[i])) {
      req[nr] = in[i];
      idx[nr++] = i;
    }
  wk_status st = WK_OK;
  wk_tensor *grads[32] = {0};
  if (!v) st = wk_last_error();
  if (!st && nr == 0) st = wk_error(WK_ERR_INVALID_ARG, "gradcheck: no input requires grad");
  wk_tensor *p = NULL, *loss = NULL;
  if (!st && wk_tensor_requires_grad(y)) {
    p = wk_mul(y, v);
    loss = p ? wk_sum(p) : NULL;
    wk_backward_opts bo = {sizeof bo, false, false};
    st = loss ? wk_grad(&loss, 1, NULL, req, nr, grads, &bo, true) : wk_last_error();
  }
  for (int r = 0; !st && r < nr; r++) {
    wk_tensor *x = req[r];
    if (wk_tensor_dtype(x) != WK_F64 || !wk_tensor_is_contiguous(x)) {
      st = wk_error(WK_ERR_INVALID_ARG, "gradcheck: input %d must be a contiguous float64 tensor", idx[r]);
      break;
    }
    double *data = (double *)wk_tensor_data(x);
    int64_t m = wk_tensor_numel(x);
    double *ana = (double *)calloc((size_t)(m ? m : 1), sizeof(double));
    if (!ana) {
      st = wk_error(WK_ERR_NO_MEMORY, "gradcheck: out of memory");
      break;
    }
    if (grads[r]) st = wk_tensor_to_f64(grads[r], ana, m);
    for (int64_t k = 0; !st && k < m; k++) {
      double orig = data[k], fp, fm;
      data[k] = orig + eps;
      st = wk__gc_eval(fn, ctx, in, n, v, &fp);
      data[k] = orig - eps;
      if (!st) st = wk__gc_eval(fn, ctx, in, n, v, &fm);
      data[k] = orig;
      if (st) break;
      double num = (fp - fm) / (2 * eps);
      if (!(fabs(num - ana[k]) <= atol + rtol * fabs(num)))
        st = wk_error(WK_ERR_AUTOGRAD, "gradcheck: Jacobian mismatch for input %d, element %lld: numerical %.10g, "
                      "analytical %.10g", idx[r], (long long)k, num, ana[k]);
    }
    free(ana);
  }
  for (int r = 0; r < nr; r++) wk_release(grads[r]);
  wk_release(p);
  wk_release(loss);
  wk_release(v);
  wk_release(y);
  return st;
}

typedef struct {
  wk_gradcheck_fn fn;
  void *ctx;
  uint64_t seed;
} wk__ggc_ctx;

/* x -> sum over inputs of (d sum(fn(x) * v)/dx) * u, built with create_graph. */
static inline wk_tensor *wk__ggc_first(void *c_, wk_tensor *const *in, int n) {
  const wk__ggc_ctx *c = (const wk__ggc_ctx *)c_;
  bool prev = wk_set_grad_enabled(true); /* needed even during numerical evaluation */
  wk_tensor *y = c->fn(c->ctx, in, n);
  wk_tensor *v = y ? wk__gc_proj(y, c->seed + 1) : NULL;
  wk_tensor *p = v ? wk_mul(y, v) : NULL, *loss = p ? wk_sum(p) : NULL;
  wk_tensor *req[32], *grads[32] = {0};
  int nr = 0;
  for (int i = 0; i < n && nr < 32; i++)
    if (in[i] && wk_tensor_requires_grad(in[i])) req[nr++] = in[i];
  wk_backward_opts bo = {sizeof bo, true, true};
  wk_tensor *acc = NULL;
  if (loss && wk_grad(&loss, 1, NULL, req, nr, grads, &bo, true) == WK_OK) {
    acc = wk_zeros(NULL, 0, (wk_options){.dtype = WK_F64});
    for (int r = 0; r < nr && acc; r++) {
      if (!grads[r]) continue;
      wk_tensor *u = wk__gc_proj(grads[r], c->seed + 100 + (uint64_t)r);
      wk_tensor *gu = u ? wk_mul(grads[r], u) : NULL, *s = gu ? wk_sum(gu) : NULL;
      wk_tensor *next = s ? wk_add(acc, s) : NULL;
      wk_release(u);
      wk_release(gu);
      wk_release(s);
      wk_release(acc);
      acc = next;
    }
  }
  for (int r = 0; r < nr; r++) wk_release(grads[r]);
  wk_release(y);
  wk_release(v);
  wk_release(p);
  wk_release(loss);
  wk_set_grad_enabled(prev);
  return acc;
}

/* Second derivatives: gradcheck of the (create_graph) gradient itself. */
static inline wk_status wk_gradgradcheck(wk_gradcheck_fn fn, void *ctx, wk_tensor *const *in, int n,
                                         const wk_gradcheck_opts *o) {
  wk__ggc_ctx c = {fn, ctx, o ? o->seed : 0};
  return wk_gradcheck(wk__ggc_first, &c, in, n, o);
}

#endif
