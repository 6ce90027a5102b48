/* cuda cumsum: a given dtype converts the input first; the result's dtype is
 * the core's meta function's (integers and bools give int64); each line is
 * scanned in order. */
#include "cuda_kernels.h"

static wk_status k_cumsum(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *x = WK_ARG_T(0);
  wk_dtype dtype = args[2].tag == WK_V_DTYPE ? args[2].u.dtype : WK_DTYPE_DEFAULT;
  int nd = wk_tensor_dim(x), d = (int)(WK_ARG_I(1) < 0 ? WK_ARG_I(1) + (nd > 0 ? nd : 1) : WK_ARG_I(1));
  const wk_meta_out *mo = wk_kernel_meta(ctx, 0);
  if (!mo) return wk_error(WK_ERR_INTERNAL, "cumsum: no meta function decided the result");
  wk_status s = cuda_enter("cumsum", ctx->device);
  if (s) return s;
  wk_tensor *in = dtype ? wk_kernel_cast(x, dtype) : wk_retain(x);
  if (!in) return wk_last_error();
  wk_dtype dt = wk_tensor_dtype(in);
  bool isint = !wk_dtype_is_floating(dt);
  wk_dtype rt = mo->dtype;
  wk_tensor *c = cuda_dense(in, isint ? WK_I64 : dt, ctx->device);
  wk_release(in);
  wk_tensor *out = c ? cuda_new(wk_tensor_sizes(c), nd, isint ? WK_I64 : rt, ctx->device) : NULL;
  if (!out) {
    wk_release(c);
    return wk_last_error();
  }
  const int64_t *sz = wk_tensor_sizes(c);
  int64_t outer = 1, inner = 1, len = nd > 0 ? sz[d] : 1;
  for (int i = 0; i < d; i++) outer *= sz[i];
  for (int i = d + 1; i < nd; i++) inner *= sz[i];
  s = (wk_status)cuda_launch_cumsum(wk_tensor_data(out), cuda_dt(wk_tensor_dtype(out)), wk_tensor_data(c),
                                    cuda_dt(wk_tensor_dtype(c)), outer, len, inner, cuda_stream(ctx->device));
  wk_release(c);
  if (s) {
    wk_release(out);
    return s;
  }
  return wk_kernel_out1(outs, wk_cast_own(out, rt));
}

wk_status cuda_register_scan(void) {
  return cuda_reg("cumsum", k_cumsum, NULL, NULL, "cuda.cumsum");
}
