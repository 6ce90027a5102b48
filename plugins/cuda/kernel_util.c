/* cuda plugin: host helpers shared by the kernel families (operands moved to
 * the device and converted, result delivery for in-place and out= variants,
 * device error slots read back after a launch). */
#include <stdio.h>
#include <string.h>

#include "cuda_kernels.h"

wk_tensor *cuda_new(const int64_t *sizes, int ndim, wk_dtype dt, wk_device dev) {
  return wk_empty(sizes, ndim, (wk_options){.dtype = dt, .device = dev});
}

wk_tensor *cuda_operand(wk_tensor *t, wk_dtype dt, wk_device dev) {
  if (!t) return NULL;
  wk_device td = wk_tensor_device(t);
  if (td.type != dev.type || td.index != dev.index) {
    wk_tensor *m = wk_to_device(t, dev);
    wk_tensor *r = wk_kernel_cast(m, dt);
    wk_release(m);
    return r;
  }
  return wk_kernel_cast(t, dt);
}

wk_tensor *cuda_dense(wk_tensor *t, wk_dtype dt, wk_device dev) {
  wk_tensor *a = cuda_operand(t, dt, dev);
  if (!a || wk_tensor_is_contiguous(a)) return a;
  wk_tensor *c = wk_contiguous(a);
  wk_release(a);
  return c;
}

wk_tensor *cuda_cast_own(wk_tensor *t, wk_dtype dt) {
  if (!t || wk_tensor_dtype(t) == dt) return t;
  wk_tensor *r = wk_to_dtype(t, dt);
  wk_release(t);
  return r;
}

bool cuda_can_cast(wk_dtype from, wk_dtype to) {
  if (wk_dtype_is_floating(from) && !wk_dtype_is_floating(to)) return false;
  if (from != WK_BOOL && to == WK_BOOL) return false;
  return true;
}

static bool same_shape(const wk_tensor *a, const wk_tensor *b) {
  int n = wk_tensor_dim(a);
  return n == wk_tensor_dim(b) && memcmp(wk_tensor_sizes(a), wk_tensor_sizes(b), sizeof(int64_t) * (size_t)n) == 0;
}

wk_status cuda_deliver(const char *op, cuda_mode mode, wk_tensor *result, wk_tensor *target, wk_value *outs) {
  if (!result) return wk_last_error();
  if (mode == CUDA_FUNCTIONAL) {
    outs[0] = WK_VT(result);
    return WK_OK;
  }
  char a[160], b[160];
  wk_status s = WK_OK;
  if (!same_shape(result, target)) {
    s = wk_error(WK_ERR_SHAPE, "%s: %s has shape %s but the result has shape %s", op,
                 mode == CUDA_INPLACE ? "self (in-place)" : "out", wk_shape_str(target, a, sizeof a),
                 wk_shape_str(result, b, sizeof b));
  } else if (!cuda_can_cast(wk_tensor_dtype(result), wk_tensor_dtype(target))) {
    s = wk_error(WK_ERR_DTYPE, "%s: result type %s can't be cast to the desired output type %s", op,
                 wk_dtype_name(wk_tensor_dtype(result)), wk_dtype_name(wk_tensor_dtype(target)));
  } else if (!wk_copy_(target, result)) { /* result is fresh: no overlap with target */
    s = wk_last_error();
  }
  wk_release(result);
  if (s) return s;
  wk_tensor_bump_version(target);
  outs[0] = WK_VT(target);
  return WK_OK;
}

wk_tensor *cuda_slot_new(wk_device dev) {
  int64_t one = 1;
  wk_tensor *t = cuda_new(&one, 1, WK_I64, dev);
  if (t && !wk_zero_(t)) {
    wk_release(t);
    return NULL;
  }
  return t;
}

wk_status cuda_slot_take(wk_tensor *slot, int64_t *value) {
  if (!slot) return wk_last_error();
  wk_status s = wk_item_i64(slot, value); /* a device-to-host copy: waits for the kernel */
  wk_release(slot);
  return s;
}

