/* cuda runtime glue: device discovery (and why there are none), the current
 * device and stream per thread, CUDA errors as Wick errors (sticky ones
 * named as such), copies, streams and events for the core's device interface. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_plugin.h"

static int g_count;
static char g_status[320];
static bool g_launch_blocking;
static bool g_sticky; /* a sticky error happened: the context is gone */

/* Per-thread current stream per device; devices past this cap use the default stream. */
#define MAX_TRACKED 64
static _Thread_local cudaStream_t tl_stream[MAX_TRACKED];
static _Thread_local int tl_device = -1; /* last cudaSetDevice of this thread, -1 unknown */

void cuda_runtime_init(void) {
  int n = 0, rt = 0, drv = 0;
  cudaRuntimeGetVersion(&rt);
  cudaDriverGetVersion(&drv);
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    n = 0;
    snprintf(g_status, sizeof g_status, "cudaGetDeviceCount: %s (%s)%s", cudaGetErrorString(e), cudaGetErrorName(e),
             drv == 0 ? "; no CUDA driver (libcuda.so) is installed" : "");
    cudaGetLastError(); /* not sticky: clear it */
  } else if (n == 0) {
    snprintf(g_status, sizeof g_status, "no CUDA devices found (driver %d.%d, runtime %d.%d)", drv / 1000,
             drv % 1000 / 10, rt / 1000, rt % 1000 / 10);
  } else {
    snprintf(g_status, sizeof g_status, "CUDA driver %d.%d, runtime %d.%d", drv / 1000, drv % 1000 / 10, rt / 1000,
             rt % 1000 / 10);
  }
  g_count = n;
  const char *lb = getenv("WICK_CUDA_LAUNCH_BLOCKING");
  g_launch_blocking = lb && *lb && strcmp(lb, "0") != 0;
}

int cuda_num_devices(void) { return g_count; }
const char *cuda_status_message(void) { return g_status; }

/* ---- errors ---------------------------------------------------------------------- */
static bool is_sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorECCUncorrectable:
    case cudaErrorContextIsDestroyed: return true;
    default: return false;
  }
}

int cuda_check_error(cudaError_t err, const char *op, const char *call) {
  if (err == cudaSuccess) return WK_OK;
  cudaGetLastError(); /* clears non-sticky errors so the next call starts clean */
  const char *name = cudaGetErrorName(err), *text = cudaGetErrorString(err);
  if (is_sticky(err) || g_sticky) {
    bool first = !g_sticky;
    g_sticky = true;
    return wk_error(WK_ERR_DEVICE,
                    "%s: %s failed: %s (%s). %s: the CUDA context is unusable and every later CUDA call fails "
                    "until the process restarts (rerun with WICK_CUDA_LAUNCH_BLOCKING=1 to find the kernel)",
                    op, call, text, name,
                    first ? "This is a sticky error" : "A sticky CUDA error happened earlier");
  }
  return wk_error(err == cudaErrorMemoryAllocation ? WK_ERR_NO_MEMORY : WK_ERR_DEVICE, "%s: %s failed: %s (%s)", op,
                  call, text, name);
}

int cuda_check_launch(const char *op, const char *kernel) {
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess && g_launch_blocking) e = cudaDeviceSynchronize();
  if (e == cudaSuccess) return WK_OK;
  char call[160];
  snprintf(call, sizeof call, "launching %s", kernel);
  return cuda_check_error(e, op, call);
}

/* ---- devices and streams ------------------------------------------------------------ */
static wk_status check_index(const char *op, int index) {
  if (index >= 0 && index < g_count) return WK_OK;
  return wk_error(WK_ERR_DEVICE, "%s: device cuda:%d not available (%d device%s present%s%s)", op, index, g_count,
                  g_count == 1 ? "" : "s", g_count ? "" : ": ", g_count ? "" : g_status);
}

wk_status cuda_set_device(const char *op, int index) {
  if (index == tl_device) return WK_OK;
  wk_status s = check_index(op, index);
  if (s) return s;
  s = CUDA_CHECK(op, cudaSetDevice(index));
  if (!s) tl_device = index;
  return s;
}

wk_status cuda_enter(const char *op, wk_device dev) { return cuda_set_device(op, dev.index); }

int cuda_current_device(void) {
  if (tl_device >= 0) return tl_device;
  int d = 0;
  if (g_count && cudaGetDevice(&d) == cudaSuccess) tl_device = d;
  return g_count ? d : 0;
}

cudaStream_t cuda_current_stream(int device) {
  return device >= 0 && device < MAX_TRACKED ? tl_stream[device] : (cudaStream_t)0;
}

wk_status cuda_set_current_stream(int device, cudaStream_t s) {
  wk_status st = check_index("set_current_stream", device);
  if (st) return st;
  if (device >= MAX_TRACKED && s)
    return wk_error(WK_ERR_UNSUPPORTED, "set_current_stream: streams on cuda:%d (index >= %d) are not supported",
                    device, MAX_TRACKED);
  if (device < MAX_TRACKED) tl_stream[device] = s;
  return WK_OK;
}

/* ---- copies ---------------------------------------------------------------------------- */
/* The cuda side of a copy names the device to run on; with two cuda sides, the source. */
static int copy_device(wk_device dd, wk_device sd) { return sd.type == cuda_device_type ? sd.index : dd.index; }

wk_status cuda_copy_bytes(void *dst, wk_device dd, const void *src, wk_device sd, size_t n, cudaStream_t stream,
                          bool blocking) {
  if (!n) return WK_OK;
  int dev = copy_device(dd, sd);
  wk_status s = cuda_set_device("copy", dev);
  if (s) return s;
  bool d2d = dd.type == cuda_device_type && sd.type == cuda_device_type;
  if (!blocking || d2d) { /* stream-ordered: later work on the stream sees the data */
    if (d2d && dd.index != sd.index)
      return CUDA_CHECK("copy", cudaMemcpyPeerAsync(dst, dd.index, src, sd.index, n, stream));
    return CUDA_CHECK("copy", cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, stream));
  }
  s = CUDA_CHECK("copy", cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, stream));
  if (!s) s = CUDA_CHECK("copy", cudaStreamSynchronize(stream));
  return s;
}

/* ---- properties, streams and events (the core's ABI 1.1 device calls) ----------------- */
wk_status cuda_get_properties(int index, wk_device_props *out) {
  struct cudaDeviceProp p;
  wk_status s = CUDA_CHECK("get_device_properties", cudaGetDeviceProperties(&p, index));
  if (s) return s;
  snprintf(out->name, sizeof out->name, "%s", p.name);
  out->total_memory = p.totalGlobalMem;
  out->major = p.major;
  out->minor = p.minor;
  out->multi_processor_count = p.multiProcessorCount;
  out->warp_size = p.warpSize;
  return WK_OK;
}

wk_status cuda_stream_create(int index, int priority, void **out) {
  wk_status s = cuda_set_device("stream_create", index);
  if (s) return s;
  int lo = 0, hi = 0; /* CUDA: lower numbers are higher priorities; clamp like PyTorch */
  cudaDeviceGetStreamPriorityRange(&lo, &hi);
  if (priority > lo) priority = lo;
  if (priority < hi) priority = hi;
  cudaStream_t st = NULL;
  /* non-blocking: no implicit sync with the legacy default stream, as PyTorch's streams */
  s = CUDA_CHECK("stream_create", cudaStreamCreateWithPriority(&st, cudaStreamNonBlocking, priority));
  *out = s ? NULL : (void *)st;
  return s;
}

void cuda_stream_destroy(int index, void *stream) {
  if (cuda_set_device("stream_destroy", index) == WK_OK) cudaStreamDestroy((cudaStream_t)stream);
}

wk_status cuda_stream_synchronize(int index, void *stream) {
  wk_status s = cuda_set_device("stream_synchronize", index);
  return s ? s : CUDA_CHECK("stream_synchronize", cudaStreamSynchronize((cudaStream_t)stream));
}

/* cudaErrorNotReady is an answer, not an error. */
static wk_status query_result(cudaError_t e, const char *op, const char *call, bool *done) {
  *done = e == cudaSuccess;
  if (e == cudaSuccess || e == cudaErrorNotReady) {
    cudaGetLastError();
    return WK_OK;
  }
  return cuda_check_error(e, op, call);
}

wk_status cuda_stream_query(int index, void *stream, bool *done) {
  wk_status s = cuda_set_device("stream_query", index);
  return s ? s : query_result(cudaStreamQuery((cudaStream_t)stream), "stream_query", "cudaStreamQuery", done);
}

wk_status cuda_stream_wait_event(int index, void *stream, void *event) {
  wk_status s = cuda_set_device("stream_wait_event", index);
  return s ? s : CUDA_CHECK("stream_wait_event", cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)event, 0));
}

wk_status cuda_event_create(int index, unsigned flags, void **out) {
  wk_status s = cuda_set_device("event_create", index);
  if (s) return s;
  unsigned cf = (flags & WK_EVENT_ENABLE_TIMING) ? 0u : cudaEventDisableTiming;
  if (flags & WK_EVENT_BLOCKING) cf |= cudaEventBlockingSync;
  cudaEvent_t e = NULL;
  s = CUDA_CHECK("event_create", cudaEventCreateWithFlags(&e, cf));
  *out = s ? NULL : (void *)e;
  return s;
}

void cuda_event_destroy(int index, void *event) {
  if (cuda_set_device("event_destroy", index) == WK_OK) cudaEventDestroy((cudaEvent_t)event);
}

wk_status cuda_event_record(int index, void *event, void *stream) {
  wk_status s = cuda_set_device("event_record", index);
  return s ? s : CUDA_CHECK("event_record", cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream));
}

wk_status cuda_event_synchronize(int index, void *event) {
  wk_status s = cuda_set_device("event_synchronize", index);
  return s ? s : CUDA_CHECK("event_synchronize", cudaEventSynchronize((cudaEvent_t)event));
}

wk_status cuda_event_query(int index, void *event, bool *done) {
  wk_status s = cuda_set_device("event_query", index);
  return s ? s : query_result(cudaEventQuery((cudaEvent_t)event), "event_query", "cudaEventQuery", done);
}

wk_status cuda_event_elapsed_ms(int index, void *start, void *end, float *ms) {
  wk_status s = cuda_set_device("elapsed_time", index);
  return s ? s : CUDA_CHECK("elapsed_time", cudaEventElapsedTime(ms, (cudaEvent_t)start, (cudaEvent_t)end));
}
