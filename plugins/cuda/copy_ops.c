/* cuda copy family: copy_ within cuda (strided, broadcasting, any dtype;
 * the core's composite handles copies to and from other devices), fill_ and
 * zero_. wk_to(t, cuda) of a strided tensor lands here through copy_. */
#include <string.h>

#include "cuda_plugin.h"

static bool on_cuda(const wk_tensor *t) { return wk_tensor_device(t).type == cuda_device_type; }

static bool copy_supports(const wk_kernel_ctx *ctx, const wk_value *args) {
  (void)ctx;
  return on_cuda(WK_ARG_T(0)) && on_cuda(WK_ARG_T(1));
}

static wk_status copy_within(wk_tensor *self, wk_tensor *src) {
  int n = wk_tensor_dim(self);
  wk_tensor *ts[2] = {self, src};
  int64_t shape[WK_MAX_DIMS];
  int nd = 0;
  wk_status s = wk_broadcast_shapes("copy_()", ts, 2, shape, &nd);
  if (s) return s;
  if (nd != n || memcmp(shape, wk_tensor_sizes(self), sizeof(int64_t) * (size_t)n) != 0) {
    return wk_error(WK_ERR_SHAPE, "copy_(): the source of %d dims cannot be broadcast to the destination's shape",
                    wk_tensor_dim(src));
  }
  wk_device dd = wk_tensor_device(self);
  if ((s = cuda_enter("copy_", dd))) return s;
  return (wk_status)cuda_launch_copy(wk_tensor_data(self), wk_tensor_dtype(self), cuda_layout(self, NULL, 0),
                                     wk_tensor_data(src), wk_tensor_dtype(src), cuda_layout(src, wk_tensor_sizes(self), n),
                                     wk_tensor_numel(self), cuda_current_stream(dd.index));
}

static wk_status k_copy(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  wk_tensor *self = WK_ARG_T(0), *src = WK_ARG_T(1);
  wk_device dd = wk_tensor_device(self), sd = wk_tensor_device(src);
  wk_status s;
  if (dd.index != sd.index) { /* between two GPUs: dense bytes across, then a local strided copy */
    wk_tensor *dense = wk_contiguous(src);
    wk_tensor *tmp = dense ? wk_empty(wk_tensor_sizes(dense), wk_tensor_dim(dense),
                                      (wk_options){.dtype = wk_tensor_dtype(dense), .device = dd})
                           : NULL;
    s = tmp ? cuda_copy_bytes(wk_tensor_data(tmp), dd, wk_tensor_data(dense), sd,
                              (size_t)wk_tensor_numel(dense) * wk_dtype_size(wk_tensor_dtype(dense)),
                              cuda_current_stream(sd.index), false)
            : wk_last_error();
    if (!s) s = copy_within(self, tmp);
    wk_release(dense);
    wk_release(tmp);
  } else {
    s = copy_within(self, src);
  }
  return wk_kernel_done_inplace(s, self, outs);
}

static wk_status fill(wk_tensor *self, const wk_value *v, wk_value *outs) {
  wk_dtype dt = wk_tensor_dtype(self);
  uint64_t bits = 0;
  if (v && v->tag == WK_V_INT && !wk_dtype_is_floating(dt))
    wk_store_i64(&bits, dt, v->u.i); /* exact for big int64 values */
  else
    wk_store_f64(&bits, dt, v ? wk_value_as_f64(v) : 0.0);
  wk_device dd = wk_tensor_device(self);
  wk_status s = cuda_enter("fill_", dd);
  if (!s)
    s = (wk_status)cuda_launch_fill(wk_tensor_data(self), (int)wk_dtype_size(dt), cuda_layout(self, NULL, 0), bits,
                                    wk_tensor_numel(self), cuda_current_stream(dd.index));
  return wk_kernel_done_inplace(s, self, outs);
}

static wk_status k_fill(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  return fill(WK_ARG_T(0), &args[1], outs);
}
static wk_status k_zero(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  return fill(WK_ARG_T(0), NULL, outs);
}

wk_status cuda_register_copy(void) {
  wk_status s = cuda_reg("copy_", k_copy, copy_supports, NULL, "cuda.copy_");
  if (!s) s = cuda_reg("fill_", k_fill, NULL, NULL, "cuda.fill_");
  if (!s) s = cuda_reg("zero_", k_zero, NULL, NULL, "cuda.zero_");
  return s;
}
