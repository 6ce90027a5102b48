/* cuda memory: the caching allocator (cuda_alloc.c) over cudaMalloc, its
 * statistics for the core's memory calls, and page-locked host memory for
 * pin_memory and asynchronous copies. Out of memory is an error, never an
 * abort: the caller can release tensors, empty the cache and go on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_alloc.h"
#include "cuda_plugin.h"

static ca_allocator *g_cache;

static int backing_alloc(void *ctx, int device, size_t n, void **ptr, char *msg, size_t msg_n) {
  (void)ctx;
  cudaError_t e = cudaSetDevice(device);
  if (e == cudaSuccess) e = cudaMalloc(ptr, n);
  if (e == cudaSuccess) return 0;
  cudaGetLastError(); /* an OOM is not sticky: clear it */
  *ptr = NULL;
  if (e == cudaErrorMemoryAllocation) return 1;
  snprintf(msg, msg_n, "cudaMalloc(%zu bytes) on cuda:%d failed: %s (%s)", n, device, cudaGetErrorString(e),
           cudaGetErrorName(e));
  return -1;
}

static void backing_free(void *ctx, int device, void *ptr) {
  (void)ctx;
  /* cudaFree synchronises the device, so work still using the block finishes first */
  if (cudaSetDevice(device) == cudaSuccess) cudaFree(ptr);
}

static int backing_info(void *ctx, int device, size_t *free_b, size_t *total_b) {
  (void)ctx;
  if (cudaSetDevice(device) != cudaSuccess || cudaMemGetInfo(free_b, total_b) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return 0;
}

/* WICK_CUDA_ALLOC_CONF=max_split_size_mb:N (PyTorch's PYTORCH_CUDA_ALLOC_CONF option). */
static size_t max_split_from_env(void) {
  const char *conf = getenv("WICK_CUDA_ALLOC_CONF");
  const char *p = conf ? strstr(conf, "max_split_size_mb:") : NULL;
  if (!p) return 0;
  long long mb = atoll(p + strlen("max_split_size_mb:"));
  return mb > 0 ? (size_t)mb << 20 : 0;
}

wk_status cuda_memory_init(int num_devices) {
  ca_backing b = {NULL, backing_alloc, backing_free, backing_info};
  g_cache = ca_new(&b, num_devices, max_split_from_env());
  return g_cache ? WK_OK : wk_error(WK_ERR_NO_MEMORY, "cuda: out of host memory creating the caching allocator");
}

void cuda_memory_shutdown(void) {
  /* Tensors may outlive wk_shutdown: keep their blocks, return only the cache. */
  if (g_cache && cuda_num_devices() > 0) ca_empty_cache(g_cache, -1);
}

void *cuda_malloc(int device, size_t nbytes) {
  if (cuda_set_device("cuda alloc", device)) return NULL;
  void *p = NULL;
  char msg[1024];
  ca_result r = ca_alloc(g_cache, device, (uintptr_t)cuda_current_stream(device), nbytes, &p, msg, sizeof msg);
  if (r == CA_OK) return p;
  wk_error(r == CA_OOM ? WK_ERR_NO_MEMORY : WK_ERR_DEVICE, "%s", msg);
  return NULL;
}

void cuda_free(int device, void *ptr) {
  (void)device;
  if (ptr && !ca_free(g_cache, ptr))
    wk_error(WK_ERR_INTERNAL, "cuda free: %p is not a live block of the caching allocator (double free?)", ptr);
}

/* ---- statistics (the core's memory calls) ------------------------------------------------ */
wk_status cuda_memory_stats(int device, wk_memory_stats *out) {
  ca_stats s;
  ca_get_stats(g_cache, device, &s);
  out->allocated = s.allocated;
  out->max_allocated = s.max_allocated;
  out->reserved = s.reserved;
  out->max_reserved = s.max_reserved;
  out->requested = s.requested;
  out->active_blocks = s.active_blocks;
  out->segments = s.segments;
  out->inactive_split = s.inactive_split;
  out->alloc_count = s.alloc_count;
  out->free_count = s.free_count;
  out->num_alloc_retries = s.num_alloc_retries;
  out->num_ooms = s.num_ooms;
  return WK_OK;
}

wk_status cuda_reset_peak(int device) {
  ca_reset_peak(g_cache, device);
  return WK_OK;
}

wk_status cuda_empty_cache(int device) {
  ca_empty_cache(g_cache, device);
  return WK_OK;
}

size_t cuda_memory_summary(int device, char *buf, size_t n) { return ca_summary(g_cache, device, buf, n); }

/* ---- pinned host memory ---------------------------------------------------------------------- */
void *cuda_host_alloc_pinned(size_t nbytes) {
  void *p = NULL;
  /* portable: usable from every device's streams */
  if (CUDA_CHECK("pin_memory", cudaHostAlloc(&p, nbytes, cudaHostAllocPortable))) return NULL;
  return p;
}

void cuda_host_free_pinned(void *ptr) {
  /* cudaFreeHost waits for the device, so a pending async copy from the block finishes first */
  if (ptr) cudaFreeHost(ptr);
}
