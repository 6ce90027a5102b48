/* cuda plugin: cuBLAS and cuDNN handles, one pair per (thread, device,
 * stream), created on first use; the switches read from the environment;
 * library statuses as Wick errors; small helpers of the library families.
 * Handles are per thread because neither library lets two threads drive one
 * handle at once, and per stream so a handle's workspace is only ever used
 * in its own stream's order. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_libs.h"

/* ---- switches ------------------------------------------------------------------------ */
static bool env_flag(const char *name, bool dflt) {
  const char *v = getenv(name);
  if (!v || !*v) return dflt;
  return !(strcmp(v, "0") == 0 || strcmp(v, "false") == 0 || strcmp(v, "off") == 0 || strcmp(v, "no") == 0);
}
bool cuda_allow_tf32_matmul(void) {
  return env_flag("WICK_CUDA_ALLOW_TF32", false);
}
bool cuda_allow_tf32_cudnn(void) {
  return env_flag("WICK_CUDNN_ALLOW_TF32", true);
}
bool cuda_cudnn_benchmark(void) {
  return env_flag("WICK_CUDNN_BENCHMARK", false);
}
bool cuda_deterministic(void) {
  return env_flag("WICK_DETERMINISTIC", false);
}

/* ---- errors ------------------------------------------------------------------------------ */
wk_status cuda_lib_cublas_error(cublasStatus_t st, const char *op, const char *call) {
  if (st == CUBLAS_STATUS_SUCCESS) return WK_OK;
  char name[64];
  const char *paren = strchr(call, '(');
  size_t n = paren ? (size_t)(paren - call) : strlen(call);
  if (n >= sizeof name) n = sizeof name - 1;
  memcpy(name, call, n);
  name[n] = 0;
  wk_status code = st == CUBLAS_STATUS_ALLOC_FAILED                                         ? WK_ERR_NO_MEMORY
                   : st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_ARCH_MISMATCH ? WK_ERR_UNSUPPORTED
                                                                                            : WK_ERR_DEVICE;
  return wk_error(code, "%s: %s failed: %s", op, name, cublasGetStatusString(st));
}

wk_status cuda_lib_cudnn_error(cudnnStatus_t st, const char *op, const char *call) {
  if (st == CUDNN_STATUS_SUCCESS) return WK_OK;
  char name[64], detail[256] = "";
  const char *paren = strchr(call, '(');
  size_t n = paren ? (size_t)(paren - call) : strlen(call);
  if (n >= sizeof name) n = sizeof name - 1;
  memcpy(name, call, n);
  name[n] = 0;
  cudnnGetLastErrorString(detail, sizeof detail);
  wk_status code = st == CUDNN_STATUS_ALLOC_FAILED    ? WK_ERR_NO_MEMORY
                   : st == CUDNN_STATUS_NOT_SUPPORTED ? WK_ERR_UNSUPPORTED
                                                      : WK_ERR_DEVICE;
  return wk_error(code, "%s: %s failed: %s%s%s", op, name, cudnnGetErrorString(st), *detail ? ": " : "", detail);
}

/* ---- handles ------------------------------------------------------------------------------- */
typedef struct entry {
  struct entry *next;
  int device;
  cudaStream_t stream;
  cublasHandle_t blas;
  cudnnHandle_t dnn;
  void *ws; /* cuBLAS workspace, from the caching allocator; lives as long as the thread */
} entry;

/* A thread's handles live until it exits (a few per thread and stream); the
 * key's destructor then returns them. The main thread's live for the process. */
static _Thread_local entry *tl_entries;
static pthread_key_t g_key;
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;
static bool g_key_ok;

static void free_entries(void *head) {
  for (entry *e = head, *next; e; e = next) {
    next = e->next;
    if (cudaSetDevice(e->device) == cudaSuccess) { /* destroying waits for the handle's work */
      if (e->blas) cublasDestroy(e->blas);
      if (e->dnn) cudnnDestroy(e->dnn);
      if (e->ws) cuda_free(e->device, e->ws);
    }
    cudaGetLastError();
    wk_free(e);
  }
}
static void make_key(void) {
  g_key_ok = pthread_key_create(&g_key, free_entries) == 0;
}

static entry *find_entry(const char *op, int device) {
  cudaStream_t s = cuda_current_stream(device);
  for (entry *e = tl_entries; e; e = e->next)
    if (e->device == device && e->stream == s) return e;
  entry *e = wk_calloc(1, sizeof *e);
  if (!e) {
    wk_error(WK_ERR_NO_MEMORY, "%s: out of host memory for a library handle", op);
    return NULL;
  }
  e->device = device;
  e->stream = s;
  e->next = tl_entries;
  tl_entries = e;
  pthread_once(&g_key_once, make_key);
  if (g_key_ok) pthread_setspecific(g_key, tl_entries);
  return e;
}

/* cuBLAS's recommended workspace: 32 MiB on Hopper and newer, 4 MiB before. */
static size_t blas_workspace_size(int device) {
  int major = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) {
    cudaGetLastError();
    major = 8;
  }
  return (size_t)(major >= 9 ? 32 : 4) << 20;
}

wk_status cuda_cublas(const char *op, int device, cublasHandle_t *out) {
  *out = NULL;
  entry *e = find_entry(op, device);
  if (!e) return wk_last_error();
  if (!e->blas) {
    cublasHandle_t h;
    wk_status s = CUBLAS_CHECK(op, cublasCreate(&h));
    if (s) return s;
    if ((s = CUBLAS_CHECK(op, cublasSetStream(h, e->stream)))) {
      cublasDestroy(h);
      return s;
    }
    size_t wsn = blas_workspace_size(device);
    void *ws = cuda_malloc(device, wsn);
    if (!ws) { /* no room for ours: cuBLAS falls back to its own pool */
      wk_clear_error();
    } else if ((s = CUBLAS_CHECK(op, cublasSetWorkspace(h, ws, wsn)))) {
      cuda_free(device, ws);
      cublasDestroy(h);
      return s;
    }
    e->blas = h;
    e->ws = ws;
  }
  *out = e->blas;
  return WK_OK;
}

wk_status cuda_cudnn(const char *op, int device, cudnnHandle_t *out) {
  *out = NULL;
  entry *e = find_entry(op, device);
  if (!e) return wk_last_error();
  if (!e->dnn) {
    cudnnHandle_t h;
    wk_status s = CUDNN_CHECK(op, cudnnCreate(&h));
    if (s) return s;
    if ((s = CUDNN_CHECK(op, cudnnSetStream(h, e->stream)))) {
      cudnnDestroy(h);
      return s;
    }
    e->dnn = h;
  }
  *out = e->dnn;
  return WK_OK;
}

/* ---- helpers -------------------------------------------------------------------------------- */
wk_tensor *cuda_lib_zeros(const char *op, const int64_t *sizes, int ndim, wk_dtype dt, wk_device dev) {
  wk_tensor *t = wk_empty(sizes, ndim, (wk_options){.dtype = dt, .device = dev});
  if (!t) return NULL;
  size_t n = (size_t)wk_tensor_numel(t) * wk_dtype_size(dt);
  if (n && CUDA_CHECK(op, cudaMemsetAsync(wk_tensor_data(t), 0, n, cuda_current_stream(dev.index)))) {
    wk_release(t);
    return NULL;
  }
  return t;
}

wk_tensor *cuda_lib_prep(wk_tensor *t, wk_dtype dt) {
  if (!t) return NULL;
  if (wk_tensor_dtype(t) == dt) return wk_contiguous(t);
  wk_tensor *c = wk_to_dtype(t, dt), *r = c ? wk_contiguous(c) : NULL;
  wk_release(c);
  return r;
}

