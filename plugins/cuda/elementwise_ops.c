/* cuda elementwise family (f32 add, mul, relu): argument checks, the
 * broadcast output shape and the launch on the current stream. Other dtypes
 * are declined in supports(), so the dispatcher reports no kernel for them. */
#include <stdio.h>

#include "cuda_plugin.h"

static bool all_f32(const wk_value *args, int n) {
  for (int i = 0; i < n; i++)
    if (wk_tensor_dtype(args[i].u.t) != WK_F32) return false;
  return true;
}
static bool binary_supports(const wk_kernel_ctx *ctx, const wk_value *args) {
  (void)ctx;
  return all_f32(args, 2);
}
static bool unary_supports(const wk_kernel_ctx *ctx, const wk_value *args) {
  (void)ctx;
  return all_f32(args, 1);
}

static wk_status binary(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs, int op, float alpha) {
  wk_tensor *a = WK_ARG_T(0), *b = WK_ARG_T(1);
  if (wk_tensor_dtype(a) != WK_F32 || wk_tensor_dtype(b) != WK_F32)
    return wk_error(WK_ERR_DTYPE, "%s(): the cuda kernel takes float32 tensors, got %s and %s", WK_OPNAME,
                    wk_dtype_name(wk_tensor_dtype(a)), wk_dtype_name(wk_tensor_dtype(b)));
  int64_t shape[WK_MAX_DIMS];
  int nd = 0;
  char opname[64];
  snprintf(opname, sizeof opname, "%s()", WK_OPNAME);
  wk_tensor *ts[2] = {a, b};
  wk_status s = wk_broadcast_shapes(opname, ts, 2, shape, &nd);
  if (s) return s;
  wk_device dev = ctx->device;
  if ((s = cuda_enter(WK_OPNAME, dev))) return s;
  wk_tensor *out = wk_empty(shape, nd, (wk_options){.dtype = WK_F32, .device = dev});
  if (!out) return wk_last_error();
  s = (wk_status)cuda_launch_binary_f32(op, wk_tensor_data(out), wk_tensor_data(a), cuda_layout(a, shape, nd),
                                        wk_tensor_data(b), cuda_layout(b, shape, nd), alpha, wk_tensor_numel(out),
                                        cuda_current_stream(dev.index));
  if (s) {
    wk_release(out);
    return s;
  }
  outs[0] = WK_VT(out);
  return WK_OK;
}

static wk_status k_add(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return binary(ctx, args, outs, CUDA_EW_ADD, (float)wk_value_as_f64(&args[2]));
}
static wk_status k_mul(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return binary(ctx, args, outs, CUDA_EW_MUL, 1.0f);
}

static wk_status k_relu(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *a = WK_ARG_T(0);
  if (wk_tensor_dtype(a) != WK_F32)
    return wk_error(WK_ERR_DTYPE, "relu(): the cuda kernel takes a float32 tensor, got %s",
                    wk_dtype_name(wk_tensor_dtype(a)));
  wk_device dev = ctx->device;
  wk_status s = cuda_enter("relu", dev);
  if (s) return s;
  wk_tensor *out = wk_empty(wk_tensor_sizes(a), wk_tensor_dim(a), (wk_options){.dtype = WK_F32, .device = dev});
  if (!out) return wk_last_error();
  s = (wk_status)cuda_launch_unary_f32(CUDA_EW_RELU, wk_tensor_data(out), wk_tensor_data(a), cuda_layout(a, NULL, 0),
                                       wk_tensor_numel(out), cuda_current_stream(dev.index));
  if (s) {
    wk_release(out);
    return s;
  }
  outs[0] = WK_VT(out);
  return WK_OK;
}

wk_status cuda_register_elementwise(void) {
  wk_status s = cuda_reg("add", k_add, binary_supports, NULL, "cuda.add_f32");
  if (!s) s = cuda_reg("mul", k_mul, binary_supports, NULL, "cuda.mul_f32");
  if (!s) s = cuda_reg("relu", k_relu, unary_supports, NULL, "cuda.relu_f32");
  return s;
}
