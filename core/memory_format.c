/* Memory formats (ABI 1.4): PyTorch's channels_last, NHWC strides on a
 * logical NCHW tensor. The tensor keeps its NCHW sizes and meaning; only the
 * order of its elements in memory differs, so every op gives the same values
 * either way. Kernels that run NHWC natively (the onednn plugin's conv,
 * batch_norm, pooling; the cpu plugin's elementwise loops) keep a
 * channels-last input's format in their results (wk_suggest_memory_format,
 * as PyTorch's suggest_memory_format), so a chain of layers stays NHWC. */
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"
#include <wick/module.h>
#include <wick/ops.h>

static bool valid_format(wk_memory_format f) { return f == WK_CONTIGUOUS_FORMAT || f == WK_CHANNELS_LAST; }

const char *wk_memory_format_name(wk_memory_format f) {
  return f == WK_CONTIGUOUS_FORMAT ? "contiguous_format" : f == WK_CHANNELS_LAST ? "channels_last" : "unknown";
}

void wk_format_strides(const int64_t *sizes, int ndim, wk_memory_format f, int64_t *strides) {
  if (f != WK_CHANNELS_LAST || ndim != 4) {
    wk__contiguous_strides(sizes, ndim, strides);
    return;
  }
  /* innermost first: C, W, H, N; a size-0 or size-1 dim counts as 1 */
  static const int order[4] = {1, 3, 2, 0};
  int64_t s = 1;
  for (int i = 0; i < 4; i++) {
    int d = order[i];
    strides[d] = s;
    s *= sizes[d] > 1 ? sizes[d] : 1;
  }
}

bool wk_is_contiguous_format(const wk_tensor *t, wk_memory_format f) {
  if (!t) return false;
  if (f == WK_CONTIGUOUS_FORMAT) return wk_tensor_is_contiguous(t);
  if (f != WK_CHANNELS_LAST || t->ndim != 4) return false;
  static const int order[4] = {1, 3, 2, 0};
  int64_t s = 1;
  for (int i = 0; i < 4; i++) {
    int d = order[i];
    if (t->sizes[d] == 0) return true;
    if (t->sizes[d] != 1 && t->strides[d] != s) return false;
    s *= t->sizes[d];
  }
  return true;
}

wk_memory_format wk_suggest_memory_format(const wk_tensor *t) {
  /* a tensor that is both (C == 1, or H == W == 1) is contiguous: the two layouts are the same bytes */
  return t && t->ndim == 4 && !wk_tensor_is_contiguous(t) && wk_is_contiguous_format(t, WK_CHANNELS_LAST)
             ? WK_CHANNELS_LAST
             : WK_CONTIGUOUS_FORMAT;
}

wk_tensor *wk_empty_format(const int64_t *sizes, int ndim, wk_options opt, wk_memory_format f) {
  if (!valid_format(f)) {
    wk_error(WK_ERR_INVALID_ARG, "empty_format: unknown memory format %d (WK_CONTIGUOUS_FORMAT or WK_CHANNELS_LAST)",
             (int)f);
    return NULL;
  }
  if (f == WK_CHANNELS_LAST && ndim != 4) {
    wk_error(WK_ERR_SHAPE, "empty_format: required rank 4 tensor to use channels_last format (got %d dimensions)",
             ndim);
    return NULL;
  }
  if (f == WK_CONTIGUOUS_FORMAT || !sizes) return wk_empty_strided(sizes, NULL, ndim, opt);
  int64_t st[4];
  wk_format_strides(sizes, 4, f, st);
  return wk_empty_strided(sizes, st, 4, opt);
}

wk_tensor *wk_contiguous_format(wk_tensor *t, wk_memory_format f) {
  if (!t) {
    wk_error(WK_ERR_NULL, "contiguous_format: argument 'self' is NULL");
    return NULL;
  }
  if (!valid_format(f)) {
    wk_error(WK_ERR_INVALID_ARG,
             "contiguous_format: unknown memory format %d (WK_CONTIGUOUS_FORMAT or WK_CHANNELS_LAST)", (int)f);
    return NULL;
  }
  if (f == WK_CONTIGUOUS_FORMAT) return wk_contiguous(t);
  if (t->ndim != 4) {
    wk_error(WK_ERR_SHAPE, "contiguous_format: required rank 4 tensor to use channels_last format (got %d dimensions)",
             t->ndim);
    return NULL;
  }
  if (wk_is_contiguous_format(t, WK_CHANNELS_LAST)) return wk_alias(t);
  /* permute to NHWC, make that contiguous, permute back: three recorded ops,
   * so autograd carries the gradient back through them */
  int depth = wk__call_depth;
  wk__call_depth = depth + 1; /* the intermediates are not the caller's scope's */
  wk_tensor *nhwc = wk_permute(t, WK_SHAPE(0, 2, 3, 1)), *dense = wk_contiguous(nhwc);
  wk_tensor *r = wk_permute(dense, WK_SHAPE(0, 3, 1, 2));
  wk_release(nhwc);
  wk_release(dense);
  wk__call_depth = depth;
  if (r && depth == 0) wk__scope_adopt(r);
  return r;
}

/* ---- modules ------------------------------------------------------------------------------- */
static wk_status convert_one(wk_tensor *t, wk_memory_format f) {
  if (!t || wk_tensor_dim(t) != 4 || wk_is_contiguous_format(t, f)) return WK_OK;
  wk_tensor *c = wk_contiguous_format(t, f);
  if (!c) return wk_last_error();
  wk_status s = wk__tensor_assign(t, c); /* the handle keeps its identity (optimizers hold it) */
  wk_release(c);
  return s;
}

wk_status wk_module_to_memory_format(wk_module *m, wk_memory_format f) {
  if (!m) return wk_error(WK_ERR_NULL, "module_to_memory_format: argument 'module' is NULL");
  if (!valid_format(f))
    return wk_error(WK_ERR_INVALID_ARG,
                    "module_to_memory_format: unknown memory format %d (WK_CONTIGUOUS_FORMAT or WK_CHANNELS_LAST)",
                    (int)f);
  int depth = wk__call_depth;
  wk__call_depth = depth + 1; /* temporaries are not scope-owned */
  bool prev = wk_set_grad_enabled(false);
  wk_status s = WK_OK;
  for (int pass = 0; pass < 2 && !s; pass++) {
    int n = pass ? wk_module_named_buffers(m, NULL, NULL, 0) : wk_module_named_parameters(m, NULL, NULL, 0);
    if (n <= 0) continue;
    wk_tensor **ts = wk_calloc((size_t)n, sizeof *ts);
    if (!ts) {
      s = wk_error(WK_ERR_NO_MEMORY, "module_to_memory_format: out of memory for %d tensor handles", n);
      break;
    }
    n = pass ? wk_module_named_buffers(m, NULL, ts, n) : wk_module_named_parameters(m, NULL, ts, n);
    for (int i = 0; i < n && !s; i++) {
      s = convert_one(ts[i], f);
      wk_tensor *g = pass ? NULL : wk_tensor_grad(ts[i]);
      if (!s && g && wk_tensor_dim(g) == 4 && !wk_is_contiguous_format(g, f)) {
        wk_tensor *c = wk_contiguous_format(g, f);
        s = c ? wk_tensor_set_grad(ts[i], c) : wk_last_error();
        wk_release(c);
      }
      wk_release(g);
    }
    wk_free(ts);
  }
  wk_set_grad_enabled(prev);
  wk__call_depth = depth;
  return s;
}
