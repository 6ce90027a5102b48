/* Wick ABI: the amp service — autocast, PyTorch's torch.autocast(device,
 * dtype) in C. Inside an autocast region on this thread, ops on tensors of
 * that device type run in a chosen precision, with PyTorch 1.13's CPU policy:
 *   - lower precision (the region's dtype): conv2d, mm, addmm, bmm, matmul,
 *     linear — their floating inputs (not float64) are cast first;
 *   - float32: cross_entropy, nll_loss, mse_loss, binary_cross_entropy(_with_
 *     logits), l1/smooth_l1/huber losses, kl_div, prod — lower-precision
 *     inputs are cast up;
 *   - promote to the widest floating type among the inputs: cat, stack;
 *   - every other op runs in the dtype of its inputs, as in PyTorch.
 * In-place and out= forms are never cast. The casts go through autograd, so
 * gradients reach float32 parameters in float32 (and in the parameters'
 * dtype for any other). Regions nest; each thread has its own.
 *
 *   wk_autocast_begin("cpu", WK_BF16);
 *   loss = wk_cross_entropy(wk_module_forward(model, x), y);  // conv/linear in bf16, loss in f32
 *   wk_autocast_end("cpu");
 *   wk_backward(loss);                                       // outside the region, as in PyTorch
 *
 * The amp plugin provides the service (the autocast dispatch layer sits
 * above autograd, at WK_LEVEL_AUTOCAST). Left for later: gradient scaling for
 * float16 (GradScaler) and the cache of cast weights PyTorch keeps within a
 * region (a weight used twice is cast twice). */
#ifndef WICK_AMP_H
#define WICK_AMP_H

#include <stdbool.h>
#include <stddef.h>
#include <wick/wick.h>

#define WK_AMP_SERVICE "amp"
#define WK_AMP_API_VERSION 1

typedef struct wk_amp_api {
  size_t struct_size;
  /* Opens a region for a device type ("cpu", "cuda") on this thread: dtype
   * must be WK_BF16 or WK_F16 (WK_DTYPE_DEFAULT: bf16 on cpu, f16 elsewhere,
   * as PyTorch). */
  wk_status (*autocast_begin)(const char *device_type, wk_dtype dtype);
  /* Closes the innermost region of that device type; the enclosing one (or
   * none) applies again. WK_ERR_STATE when none is open. */
  wk_status (*autocast_end)(const char *device_type);
  /* Whether a region is open for the device type on this thread, and its dtype
   * (WK_DTYPE_DEFAULT when none). */
  bool (*autocast_enabled)(const char *device_type);
  wk_dtype (*autocast_dtype)(const char *device_type);
} wk_amp_api;

static inline const wk_amp_api *wk_amp_api_get(void) {
  static const wk_amp_api *api;
  if (!api) api = (const wk_amp_api *)wk_service_get(WK_AMP_SERVICE, WK_AMP_API_VERSION);
  return api;
}

static inline wk_status wk_autocast_begin(const char *device_type, wk_dtype dtype) {
  const wk_amp_api *a = wk_amp_api_get();
  return a ? a->autocast_begin(device_type, dtype) : wk_last_error();
}
static inline wk_status wk_autocast_end(const char *device_type) {
  const wk_amp_api *a = wk_amp_api_get();
  return a ? a->autocast_end(device_type) : wk_last_error();
}
static inline bool wk_autocast_enabled(const char *device_type) {
  const wk_amp_api *a = wk_amp_api_get();
  return a ? a->autocast_enabled(device_type) : false;
}
static inline wk_dtype wk_autocast_dtype(const char *device_type) {
  const wk_amp_api *a = wk_amp_api_get();
  return a ? a->autocast_dtype(device_type) : WK_DTYPE_DEFAULT;
}

#endif
