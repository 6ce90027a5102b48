/* optim plugin: gradient clipping (torch.nn.utils.clip_grad_norm_ and
 * clip_grad_value_), written with ops so gradients stay on their device. */
#include <stdlib.h>

#include "optim.h"

/* Collects the .grad of every parameter that has one (new handles). */
static int grads_of(const char *fn, wk_tensor *const *params, int n, wk_tensor ***out) {
  *out = NULL;
  if (n < 0 || (n > 0 && !params)) {
    wk_error(n < 0 ? WK_ERR_INVALID_ARG : WK_ERR_NULL, "%s: params is %s (n = %d)", fn, params ? "invalid" : "NULL", n);
    return -1;
  }
  for (int i = 0; i < n; i++)
    if (!params[i]) {
      wk_error(WK_ERR_NULL, "%s: params[%d] is NULL", fn, i);
      return -1;
    }
  wk_tensor **g = wk_malloc(sizeof *g * (size_t)(n ? n : 1));
  if (!g) {
    wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", fn);
    return -1;
  }
  int m = 0;
  for (int i = 0; i < n; i++) {
    wk_tensor *t = wk_tensor_grad(params[i]);
    if (t) g[m++] = t;
  }
  *out = g;
  return m;
}

static void release_all(wk_tensor **ts, int n) {
  for (int i = 0; i < n; i++) wk_release(ts[i]);
  wk_free(ts);
}

wk_tensor *optim_clip_grad_norm_(wk_tensor *const *params, int n, double max_norm, double norm_type,
                                 bool error_if_nonfinite) {
  static const char fn[] = "clip_grad_norm_";
  if (norm_type != norm_type) {
    wk_error(WK_ERR_INVALID_ARG, "%s: norm_type must not be NaN", fn);
    return NULL;
  }
  wk_tensor **grads;
  int m = grads_of(fn, params, n, &grads);
  if (m < 0) return NULL;
  if (m == 0) {
    wk_free(grads);
    return wk_scalar_tensor(0, WK_F32);
  }
  bool prev = wk_set_grad_enabled(false);
  wk_tensor **norms = wk_calloc((size_t)m, sizeof *norms);
  wk_tensor *total = NULL;
  if (!norms) wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", fn);
  bool ok = norms != NULL;
  for (int i = 0; ok && i < m; i++) ok = (norms[i] = wk_norm(grads[i], norm_type, NULL, 0, false)) != NULL;
  if (ok) {
    if (m == 1 && isinf(norm_type)) {
      total = wk_retain(norms[0]);
    } else {
      wk_tensor *st = wk_stack(norms, m, 0);
      total = wk_norm(st, norm_type, NULL, 0, false);
      wk_release(st);
    }
  }
  if (norms) release_all(norms, m);
  if (total && error_if_nonfinite) {
    double v = 0;
    if (wk_item(total, &v) == WK_OK && !isfinite(v)) {
      wk_error(WK_ERR_INVALID_ARG,
               "%s: The total norm of order %g for gradients from `parameters` is non-finite, so it cannot be "
               "clipped. To disable this error and scale the gradients by the non-finite norm anyway, set "
               "`error_if_nonfinite=False`",
               fn, norm_type);
      wk_release(total);
      total = NULL;
    }
  }
  if (total) {
    /* clip_coef = max_norm / (total + 1e-6), clamped to 1; multiplying by it
     * unconditionally avoids reading the norm back from the device. */
    wk_tensor *den = wk_add_scalar(total, 1e-6);
    wk_tensor *num = den ? wk_full_like(den, max_norm, (wk_options){0}) : NULL;
    wk_tensor *coef = num ? wk_div(num, den) : NULL;
    wk_tensor *clamped = coef ? wk_clamp(coef, NAN, 1.0) : NULL;
    ok = clamped != NULL;
    for (int i = 0; ok && i < m; i++) ok = wk_mul_(grads[i], clamped) != NULL;
    wk_release(den);
    wk_release(num);
    wk_release(coef);
    wk_release(clamped);
    if (!ok) {
      wk_release(total);
      total = NULL;
    }
  }
  wk_set_grad_enabled(prev);
  release_all(grads, m);
  return total;
}

wk_status optim_clip_grad_value_(wk_tensor *const *params, int n, double clip_value) {
  static const char fn[] = "clip_grad_value_";
  if (clip_value != clip_value) return wk_error(WK_ERR_INVALID_ARG, "%s: clip_value must not be NaN", fn);
  wk_tensor **grads;
  int m = grads_of(fn, params, n, &grads);
  if (m < 0) return wk_last_error();
  bool prev = wk_set_grad_enabled(false);
  wk_status s = WK_OK;
  for (int i = 0; !s && i < m; i++)
    if (!wk_clamp_(grads[i], -clip_value, clip_value)) s = wk_last_error();
  wk_set_grad_enabled(prev);
  release_all(grads, m);
  return s;
}
