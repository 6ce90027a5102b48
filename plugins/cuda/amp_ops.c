/* cuda kernels of GradScaler's fused steps (amp_foreach_non_finite_check_and_unscale_,
 * amp_update_scale_): launches only, no read-back, so a training step's
 * unscale and scale update never wait for the device. The core's meta
 * functions checked the arguments (1-element float/int scalars, floating
 * gradients, one device). */
#include "cuda_kernels.h"

static wk_status k_unscale(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)outs;
  wk_tensor *found = WK_ARG_T(1), *inv = WK_ARG_T(2);
  wk_status s = cuda_enter(WK_OPNAME, ctx->device);
  if (s) return s;
  for (int i = 0; i < args[0].len && !s; i++) {
    wk_tensor *t = args[0].u.tensors[i];
    s = (wk_status)cuda_launch_amp_unscale(cuda_dt(wk_tensor_dtype(t)), wk_tensor_data(t), cuda_layout(t, NULL, 0),
                                           wk_tensor_numel(t), wk_tensor_data(found), wk_tensor_data(inv),
                                           cuda_stream(ctx->device));
    wk_tensor_bump_version(t);
  }
  wk_tensor_bump_version(found);
  return s;
}

static wk_status k_update_scale(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *scale = WK_ARG_T(0), *tracker = WK_ARG_T(1);
  wk_status s = cuda_enter(WK_OPNAME, ctx->device);
  if (s) return s;
  s = (wk_status)cuda_launch_amp_update_scale(wk_tensor_data(scale), wk_tensor_data(tracker),
                                              wk_tensor_data(WK_ARG_T(2)), WK_ARG_F(3), WK_ARG_F(4), WK_ARG_I(5),
                                              cuda_stream(ctx->device));
  if (s) return s;
  wk_tensor_bump_version(scale);
  wk_tensor_bump_version(tracker);
  outs[0] = WK_VT(scale);
  return WK_OK;
}

wk_status cuda_register_amp(void) {
  wk_status s = cuda_reg("amp_foreach_non_finite_check_and_unscale_", k_unscale, NULL, NULL, "cuda.amp_unscale");
  return s ? s : cuda_reg("amp_update_scale_", k_update_scale, NULL, NULL, "cuda.amp_update_scale");
}
