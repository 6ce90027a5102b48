/* cuda unary pointwise family: neg ... logical_not (functional, in place,
 * out=), leaky_relu, gelu, clamp, isnan, isinf, nan_to_num, with the cpu
 * plugin's dtype rules: float ops promote integers to float32, sign-like ops
 * keep integer dtypes (computed in int64 on the device), predicates give
 * bool; f16/bf16 compute in f32. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cuda_kernels.h"

static wk_status k_unary(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const wk_unary_variant *info = ctx->user;
  const char *name = WK_OPNAME;
  wk_tensor *self = WK_ARG_T(0), *target = NULL;
  if (info->mode == CUDA_INPLACE) target = self;
  if (info->mode == CUDA_OUT) target = WK_ARG_T(1);
  wk_unary_params c;
  wk_dtype rt = wk_kernel_meta(ctx, 0)->dtype;
  wk_unary_params_read(&c, info->op, args, rt);
  wk_status s;
  wk_device dev = ctx->device;
  if ((s = cuda_enter(name, dev))) return s;
  if (wk_uop_is_identity(c.op, wk_tensor_dtype(self))) {
    if (info->mode == CUDA_INPLACE) {
      wk_tensor_bump_version(self);
      outs[0] = WK_VT(self);
      return WK_OK;
    }
    return cuda_deliver(name, info->mode, wk_clone(self), target, outs);
  }
  /* cd: the dtype the kernel reads; integers compute in int64. */
  wk_dtype sd = wk_tensor_dtype(self);
  bool pred = wk_uop_rule(c.op) == WK_UNARY_PRED;
  wk_dtype cd = pred                       ? (wk_dtype_is_floating(sd) ? wk_compute_dtype(sd) : WK_I64)
                : wk_dtype_is_floating(rt) ? wk_compute_dtype(rt)
                                           : WK_I64;
  wk_tensor *x = cuda_operand(self, cd, dev), *dst = NULL;
  if (x) dst = cuda_new(wk_tensor_sizes(self), wk_tensor_dim(self), pred ? WK_BOOL : cd, dev);
  if (!dst) {
    wk_release(x);
    return wk_last_error();
  }
  s = (wk_status)cuda_launch_unary(c.op, cuda_dt(cd), wk_tensor_data(dst), wk_tensor_data(x), cuda_layout(x, NULL, 0),
                                   c.p, c.q, c.r, c.ilo, c.ihi, wk_tensor_numel(dst), cuda_stream(dev));
  wk_release(x);
  if (s) {
    wk_release(dst);
    return s;
  }
  /* f16/bf16 and narrow integers go back to their dtype, unless the target
   * takes the computed values directly (rounded the same way by copy_). */
  if (!pred && cd != rt && !(info->mode != CUDA_FUNCTIONAL && wk_tensor_dtype(target) == rt))
    dst = cuda_cast_own(dst, rt);
  return cuda_deliver(name, info->mode, dst, target, outs);
}

wk_status cuda_register_unary(void) {
  wk_status s = WK_OK;
  for (int i = 0; i < WK_UNARY_VARIANT_COUNT && !s; i++) s = cuda_reg(wk_unary_variants[i].name, k_unary, NULL, (void *)&wk_unary_variants[i], "cuda.unary");
  return s;
}
