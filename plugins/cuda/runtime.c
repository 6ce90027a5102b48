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
