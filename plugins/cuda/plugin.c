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

/* ABI 1.1 slots: thin adapters from the core's (user, index, ...) calls. */
static int dev_current(void *u) {
  (void)u;
  return cuda_current_device();
}
static wk_status dev_set_current(void *u, int index) {
  (void)u;
  return cuda_set_device("set_device", index);
}
static wk_status dev_props(void *u, int index, wk_device_props *out) {
  (void)u;
  return cuda_get_properties(index, out);
}
static wk_status dev_stream_create(void *u, int index, int priority, void **out) {
  (void)u;
  return cuda_stream_create(index, priority, out);
}
static void dev_stream_destroy(void *u, int index, void *s) {
  (void)u;
  cuda_stream_destroy(index, s);
}
static void *dev_current_stream(void *u, int index) {
  (void)u;
  return (void *)cuda_current_stream(index);
}
static wk_status dev_set_current_stream(void *u, int index, void *s) {
  (void)u;
  return cuda_set_current_stream(index, (cudaStream_t)s);
}
static wk_status dev_stream_sync(void *u, int index, void *s) {
  (void)u;
  return cuda_stream_synchronize(index, s);
}
static wk_status dev_stream_query(void *u, int index, void *s, bool *done) {
  (void)u;
  return cuda_stream_query(index, s, done);
}
static wk_status dev_stream_wait(void *u, int index, void *s, void *e) {
  (void)u;
  return cuda_stream_wait_event(index, s, e);
}
static wk_status dev_event_create(void *u, int index, unsigned flags, void **out) {
  (void)u;
  return cuda_event_create(index, flags, out);
}
static void dev_event_destroy(void *u, int index, void *e) {
  (void)u;
  cuda_event_destroy(index, e);
}
static wk_status dev_event_record(void *u, int index, void *e, void *s) {
  (void)u;
  return cuda_event_record(index, e, s);
}
static wk_status dev_event_sync(void *u, int index, void *e) {
  (void)u;
  return cuda_event_synchronize(index, e);
}
static wk_status dev_event_query(void *u, int index, void *e, bool *done) {
  (void)u;
  return cuda_event_query(index, e, done);
}
static wk_status dev_event_elapsed(void *u, int index, void *a, void *b, float *ms) {
  (void)u;
  return cuda_event_elapsed_ms(index, a, b, ms);
}
static wk_status dev_copy_async(void *u, void *dst, wk_device dd, const void *src, wk_device sd, size_t n, void *s) {
  (void)u;
  return cuda_copy_bytes(dst, dd, src, sd, n, (cudaStream_t)s, false);
}
static void *dev_pin(void *u, size_t n) {
  (void)u;
  return cuda_host_alloc_pinned(n);
}
static void dev_unpin(void *u, void *p) {
  (void)u;
  cuda_host_free_pinned(p);
}
static wk_status dev_mem_stats(void *u, int index, wk_memory_stats *out) {
  (void)u;
  return cuda_memory_stats(index, out);
}
static wk_status dev_reset_peak(void *u, int index) {
  (void)u;
  return cuda_reset_peak(index);
}
static wk_status dev_empty_cache(void *u, int index) {
  (void)u;
  return cuda_empty_cache(index);
}
static size_t dev_summary(void *u, int index, char *buf, size_t n) {
  (void)u;
  return cuda_memory_summary(index, buf, n);
}

wk_status cuda_reg(const char *op, wk_kernel_fn fn, wk_supports_fn supports, void *user, const char *name) {
  /* REFERENCE: these are cuda's base kernels (above the core's device-agnostic
   * composites); a third party's faster cuda kernel wins at OPTIMIZED. */
  wk_kernel_desc d = {sizeof d, op, cuda_device_type, WK_PRIORITY_REFERENCE, fn, supports, user, name};
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
  iface.current_device = dev_current;
  iface.set_current_device = dev_set_current;
  iface.get_properties = dev_props;
  iface.stream_create = dev_stream_create;
  iface.stream_destroy = dev_stream_destroy;
  iface.current_stream = dev_current_stream;
  iface.set_current_stream = dev_set_current_stream;
  iface.stream_synchronize = dev_stream_sync;
  iface.stream_query = dev_stream_query;
  iface.stream_wait_event = dev_stream_wait;
  iface.event_create = dev_event_create;
  iface.event_destroy = dev_event_destroy;
  iface.event_record = dev_event_record;
  iface.event_synchronize = dev_event_sync;
  iface.event_query = dev_event_query;
  iface.event_elapsed_ms = dev_event_elapsed;
  iface.copy_async = dev_copy_async;
  iface.host_alloc_pinned = dev_pin;
  iface.host_free_pinned = dev_unpin;
  iface.memory_stats = dev_mem_stats;
  iface.reset_peak_memory_stats = dev_reset_peak;
  iface.empty_cache = dev_empty_cache;
  iface.memory_summary = dev_summary;
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
