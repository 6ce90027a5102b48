/* cuda plugin entry: registers the device type "cuda" (loading fine with
 * zero devices, whose reason becomes the status message) and the kernels of
 * every op family listed in CUDA_OP_FAMILIES. */
#include <string.h>

#include "cuda_plugin.h"

int32_t cuda_device_type = -1;

static int dev_count(void *u) {
  (void)u;
  return cuda_num_devices();
}
static void *dev_alloc(void *u, int index, size_t n) {
  (void)u;
  return cuda_malloc(index, n);
}
static void dev_free(void *u, int index, void *p) {
  (void)u;
  cuda_free(index, p);
}
static wk_status dev_copy(void *u, void *dst, wk_device dd, const void *src, wk_device sd, size_t n) {
  (void)u;
  int dev = sd.type == cuda_device_type ? sd.index : dd.index;
  return cuda_copy_bytes(dst, dd, src, sd, n, cuda_current_stream(dev), true);
}
static wk_status dev_synchronize(void *u, int index) {
  (void)u;
  wk_status s = cuda_set_device("synchronize", index);
  return s ? s : CUDA_CHECK("synchronize", cudaDeviceSynchronize());
}
static const char *dev_status(void *u) {
  (void)u;
  return cuda_status_message();
}

wk_status cuda_reg(const char *op, wk_kernel_fn fn, wk_supports_fn supports, void *user, const char *name) {
  wk_kernel_desc d = {sizeof d, op, cuda_device_type, WK_PRIORITY_OPTIMIZED, fn, supports, user, name};
  return wk_kernel_register(&d);
}

static wk_status cuda_init(void) {
  cuda_runtime_init();
  wk_status s = cuda_memory_init(cuda_num_devices());
  if (s) return s;
  wk_device_iface iface;
  memset(&iface, 0, sizeof iface);
  iface.struct_size = sizeof iface;
  iface.abi_version = ((uint32_t)WK_ABI_MAJOR << 16) | WK_ABI_MINOR;
  iface.name = "cuda";
  iface.device_count = dev_count;
  iface.alloc = dev_alloc;
  iface.free = dev_free;
  iface.copy = dev_copy;
  iface.synchronize = dev_synchronize;
  iface.status_message = dev_status;
  s = wk_device_type_register(&iface, &cuda_device_type);
  if (s) return s;
  /* Kernels register even without devices: `wick info` shows them, and a
   * device that appears later (a new process) needs no other build. */
#define CUDA__CALL_FAMILY(f)                                                   \
  if ((s = cuda_register_##f()) != WK_OK) return s;
  CUDA_OP_FAMILIES(CUDA__CALL_FAMILY)
#undef CUDA__CALL_FAMILY
  return WK_OK;
}

static void cuda_shutdown(void) { cuda_memory_shutdown(); }

WK_PLUGIN_DEFINE("cuda", "0.1.0", "CUDA devices: caching allocator, streams, events, copies, kernels", cuda_init,
                 cuda_shutdown)

/* ---- helpers shared by the op families ---------------------------------------------- */
cuda_strided cuda_layout(const wk_tensor *t, const int64_t *shape, int ndim) {
  cuda_strided l;
  memset(&l, 0, sizeof l);
  int tn = wk_tensor_dim(t);
  const int64_t *ts = wk_tensor_sizes(t), *st = wk_tensor_strides(t);
  if (!shape) {
    shape = ts;
    ndim = tn;
  }
  l.ndim = ndim;
  for (int d = 0; d < ndim; d++) {
    int k = d - (ndim - tn); /* t's dims align to the right */
    l.sizes[d] = shape[d];
    l.strides[d] = k >= 0 && ts[k] == shape[d] ? st[k] : 0;
  }
  return l;
}
