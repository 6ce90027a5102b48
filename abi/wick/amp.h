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
 * On a "cuda" device the lists are PyTorch's CUDA lists instead (autocast_mode.cpp,
 * KERNEL_CUDA): lower precision for the convolutions, matmuls, linear, prelu,
 * addmm/addbmm/baddbmm/bmm/mm/matmul (and RNN cells when they exist); float32
 * for the pointwise ops that overflow or lose precision in half (exp, log,
 * log1p, pow, rsqrt, reciprocal, sinh/cosh/tan/asin/acos/erfinv, softplus),
 * norms and reductions (layer_norm, group_norm, norm, sum, prod, cumsum,
 * cumprod, cdist, softmax/log_softmax unless given a dtype), every loss
 * but binary_cross_entropy, which is refused in a region (use the
 * with_logits form), and the promote list (cat, stack, addcdiv, addcmul,
 * atan2, bilinear, cross, dot, grid_sampler, index_put, scatter_add,
 * tensordot): the same policy for float16 and bfloat16, as in PyTorch.
 * Any other device type uses the cpu lists; wk_autocast_op_policy() tells
 * what a device's lists do to an op.
 *
 * GradScaler (float16 training): scale the loss, unscale the gradients
 * before clipping, step (skipped when a gradient holds inf or NaN), update
 * the scale; the numbers are PyTorch's GradScaler's:
 *
 *   wk_grad_scaler *sc = wk_grad_scaler_new((wk_grad_scaler_opts){0});  // 65536, x2 / x0.5, every 2000
 *   ... per step:
 *   wk_autocast_begin("cuda", WK_F16); loss = ...; wk_autocast_end("cuda");
 *   wk_backward(wk_grad_scaler_scale(sc, loss));
 *   wk_grad_scaler_unscale_(sc, opt);               // optional: before clip_grad_norm_
 *   wk_grad_scaler_step(sc, opt, NULL);              // skipped on inf/NaN
 *   wk_grad_scaler_update(sc);
 *
 * The amp plugin provides the service (the autocast dispatch layer sits
 * above autograd, at WK_LEVEL_AUTOCAST). Left for later: the cache of cast
 * weights PyTorch keeps within a region (a weight used twice is cast twice). */
#ifndef WICK_AMP_H
#define WICK_AMP_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <wick/wick.h>

#define WK_AMP_SERVICE "amp"
#define WK_AMP_API_VERSION 1

typedef struct wk_optimizer wk_optimizer;     /* <wick/optim.h> */
typedef struct wk_grad_scaler wk_grad_scaler; /* a GradScaler */

/* GradScaler's options: a zero field means PyTorch's default. */
typedef struct wk_grad_scaler_opts {
  double init_scale;       /* 0 -> 65536.0 (2^16); finite, > 0 */
  double growth_factor;    /* 0 -> 2.0; must be > 1 */
  double backoff_factor;   /* 0 -> 0.5; must lie in (0, 1) */
  int64_t growth_interval; /* 0 -> 2000 steps without inf/NaN before growing; > 0 */
  bool disabled;           /* false; true is PyTorch's enabled=False: every call passes through */
} wk_grad_scaler_opts;

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
  /* ---- GradScaler (appended after the first release: check struct_size,
   * as the wrappers below do; contracts on the wrappers) ---- */
  wk_grad_scaler *(*grad_scaler_new)(const wk_grad_scaler_opts *o, size_t osize);
  void (*grad_scaler_free)(wk_grad_scaler *s);
  wk_tensor *(*grad_scaler_scale)(wk_grad_scaler *s, wk_tensor *outputs);
  wk_status (*grad_scaler_unscale_)(wk_grad_scaler *s, wk_optimizer *opt);
  wk_status (*grad_scaler_step)(wk_grad_scaler *s, wk_optimizer *opt, bool *stepped);
  wk_status (*grad_scaler_update)(wk_grad_scaler *s, double new_scale);
  double (*grad_scaler_get_scale)(const wk_grad_scaler *s);
  int64_t (*grad_scaler_growth_tracker)(const wk_grad_scaler *s);
  bool (*grad_scaler_is_enabled)(const wk_grad_scaler *s);
  wk_state_dict *(*grad_scaler_state_dict)(const wk_grad_scaler *s);
  wk_status (*grad_scaler_load_state_dict)(wk_grad_scaler *s, const wk_state_dict *sd);
  /* One of WK_AUTOCAST_* for op_name (overload suffix ignored) under the
   * lists of device_type ("cuda": the CUDA lists; any other: the cpu
   * lists); -1 with an error for NULL. */
  int (*autocast_op_policy)(const char *device_type, const char *op_name);
} wk_amp_api;

/* What autocast does to an op (wk_autocast_op_policy). In-place and out=
 * forms are never cast, whatever their family's policy. */
enum {
  WK_AUTOCAST_NONE = 0,              /* runs in its inputs' dtypes */
  WK_AUTOCAST_LOWER = 1,             /* inputs cast to the region's float16/bfloat16 */
  WK_AUTOCAST_FP32 = 2,              /* inputs cast to float32 */
  WK_AUTOCAST_PROMOTE = 3,           /* inputs cast to the widest floating input dtype */
  WK_AUTOCAST_FP32_UNLESS_DTYPE = 4, /* float32 unless the call gives a dtype (softmax, sum, ...) */
  WK_AUTOCAST_BANNED = 5             /* refused in a region (binary_cross_entropy on cuda) */
};

static inline const wk_amp_api *wk_amp_api_get(void) {
  static const wk_amp_api *api_cache; /* filled on first use, maybe by several threads at once */
  const wk_amp_api *api = __atomic_load_n(&api_cache, __ATOMIC_ACQUIRE);
  if (!api) __atomic_store_n(&api_cache, api = (const wk_amp_api *)wk_service_get(WK_AMP_SERVICE, WK_AMP_API_VERSION), __ATOMIC_RELEASE);
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

/* The policy autocast applies to op_name on device_type (WK_AUTOCAST_*), or
 * -1 with an error (NULL arguments, a plugin without the query). */
static inline int wk_autocast_op_policy(const char *device_type, const char *op_name) {
  const wk_amp_api *a = wk_amp_api_get();
  if (a && !(a->struct_size >= offsetof(wk_amp_api, autocast_op_policy) + sizeof a->autocast_op_policy &&
             a->autocast_op_policy)) {
    wk_error(WK_ERR_UNSUPPORTED, "wk_autocast_op_policy: the loaded amp plugin is too old to provide it");
    return -1;
  }
  return a ? a->autocast_op_policy(device_type, op_name) : -1;
}

/* ---- GradScaler ---------------------------------------------------------------------- */
/* The service table when it has slot `field` (NULL with an error otherwise). */
#define WK__AMP_HAS(a, field) \
  ((a) && (a)->struct_size >= offsetof(wk_amp_api, field) + sizeof((a)->field) && (a)->field)
static inline const wk_amp_api *wk__amp_scaler_api(const char *what) {
  const wk_amp_api *a = wk_amp_api_get();
  if (a && !WK__AMP_HAS(a, grad_scaler_load_state_dict)) {
    wk_error(WK_ERR_UNSUPPORTED, "%s: the loaded amp plugin is too old to provide GradScaler", what);
    return NULL;
  }
  return a;
}

/* torch.amp.GradScaler(init_scale, growth_factor, backoff_factor,
 * growth_interval, enabled). Returns a new scaler (free with
 * wk_grad_scaler_free) or NULL with an error naming a bad option ("The
 * growth factor must be > 1.0."). The scale lives on the device of the
 * first tensor scaled. */
static inline wk_grad_scaler *wk_grad_scaler_new(wk_grad_scaler_opts o) {
  const wk_amp_api *a = wk__amp_scaler_api("wk_grad_scaler_new");
  return a ? a->grad_scaler_new(&o, sizeof o) : NULL;
}
/* Frees the scaler and its tensors. NULL does nothing. */
static inline void wk_grad_scaler_free(wk_grad_scaler *s) {
  const wk_amp_api *a = s ? wk__amp_scaler_api("wk_grad_scaler_free") : NULL;
  if (a) a->grad_scaler_free(s);
}
/* scaler.scale(outputs): outputs * scale, recorded by autograd (backward of
 * the result gives gradients multiplied by the scale). Returns a new
 * reference (an alias of outputs when disabled), or NULL with an error. */
static inline wk_tensor *wk_grad_scaler_scale(wk_grad_scaler *s, wk_tensor *outputs) {
  const wk_amp_api *a = wk__amp_scaler_api("wk_grad_scaler_scale");
  return a ? a->grad_scaler_scale(s, outputs) : NULL;
}
/* scaler.unscale_(optimizer): divides the .grad of every parameter of opt by
 * the scale in place (one fused op per device) and records whether any
 * holds inf or NaN. At most once per optimizer between updates, and not
 * after step(): WK_ERR_STATE with PyTorch's message. float16 gradients are
 * refused ("Attempting to unscale FP16 gradients."), as in PyTorch. */
static inline wk_status wk_grad_scaler_unscale_(wk_grad_scaler *s, wk_optimizer *opt) {
  const wk_amp_api *a = wk__amp_scaler_api("wk_grad_scaler_unscale_");
  return a ? a->grad_scaler_unscale_(s, opt) : wk_last_error();
}
/* scaler.step(optimizer): unscales first unless unscale_ ran, then runs
 * wk_optim_step unless a gradient held inf or NaN (reads the flag: on a GPU
 * this waits for the device). *stepped (may be NULL) says whether it ran.
 * Once per optimizer between updates. */
static inline wk_status wk_grad_scaler_step(wk_grad_scaler *s, wk_optimizer *opt, bool *stepped) {
  const wk_amp_api *a = wk__amp_scaler_api("wk_grad_scaler_step");
  return a ? a->grad_scaler_step(s, opt, stepped) : wk_last_error();
}
/* scaler.update(): backs the scale off (x backoff_factor) when any optimizer
 * stepped since the last update found inf/NaN, else grows it (x
 * growth_factor, unless that overflows float32) after growth_interval clean
 * steps in a row; forgets the optimizers' per-step state. */
static inline wk_status wk_grad_scaler_update(wk_grad_scaler *s) {
  const wk_amp_api *a = wk__amp_scaler_api("wk_grad_scaler_update");
  return a ? a->grad_scaler_update(s, NAN) : wk_last_error();
}
/* scaler.update(new_scale): sets the scale (rounded to float32) instead. */
static inline wk_status wk_grad_scaler_update_to(wk_grad_scaler *s, double new_scale) {
  const wk_amp_api *a = wk__amp_scaler_api("wk_grad_scaler_update_to");
  if (a && new_scale != new_scale) return wk_error(WK_ERR_INVALID_ARG, "wk_grad_scaler_update_to: new_scale is NaN");
  return a ? a->grad_scaler_update(s, new_scale) : wk_last_error();
}
/* get_scale(): the current scale (init_scale before the first scale();
 * 1.0 when disabled); NAN with an error for NULL. Reads the device. */
static inline double wk_grad_scaler_get_scale(const wk_grad_scaler *s) {
  const wk_amp_api *a = wk__amp_scaler_api("wk_grad_scaler_get_scale");
  return a ? a->grad_scaler_get_scale(s) : NAN;
}
/* _get_growth_tracker(): clean steps since the last growth or backoff (0
 * when disabled); -1 with an error for NULL. */
static inline int64_t wk_grad_scaler_growth_tracker(const wk_grad_scaler *s) {
  const wk_amp_api *a = wk__amp_scaler_api("wk_grad_scaler_growth_tracker");
  return a ? a->grad_scaler_growth_tracker(s) : -1;
}
/* is_enabled(); false for NULL. */
static inline bool wk_grad_scaler_is_enabled(const wk_grad_scaler *s) {
  const wk_amp_api *a = s ? wk__amp_scaler_api("wk_grad_scaler_is_enabled") : NULL;
  return a ? a->grad_scaler_is_enabled(s) : false;
}
/* state_dict(): a new dict (free with wk_state_dict_free) of 0-dim float64
 * values "scale", "growth_factor", "backoff_factor", "growth_interval",
 * "_growth_tracker" (PyTorch's keys) and metadata "scaler" = "GradScaler";
 * empty when disabled. */
static inline wk_state_dict *wk_grad_scaler_state_dict(const wk_grad_scaler *s) {
  const wk_amp_api *a = wk__amp_scaler_api("wk_grad_scaler_state_dict");
  return a ? a->grad_scaler_state_dict(s) : NULL;
}
/* load_state_dict(sd) (borrowed): restores the five values (all must be
 * there and valid; on error nothing changes). An empty dict is refused as
 * in PyTorch; a disabled scaler ignores the call. */
static inline wk_status wk_grad_scaler_load_state_dict(wk_grad_scaler *s, const wk_state_dict *sd) {
  const wk_amp_api *a = wk__amp_scaler_api("wk_grad_scaler_load_state_dict");
  return a ? a->grad_scaler_load_state_dict(s, sd) : wk_last_error();
}

#endif
