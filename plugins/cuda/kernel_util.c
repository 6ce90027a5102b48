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
  return wk_cast_own(t, dt);
}

/* wk_copy_ as the status wk_deliver wants. */
static wk_status copy_into(wk_tensor *dst, wk_tensor *src) { return wk_copy_(dst, src) ? WK_OK : wk_last_error(); }

wk_status cuda_deliver(const char *op, cuda_mode mode, wk_tensor *result, wk_tensor *target, wk_value *outs) {
  (void)op; /* the core's meta function checked target's shape and dtype against the result */
  return wk_deliver(result, mode == CUDA_FUNCTIONAL ? NULL : target, outs, copy_into);
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

