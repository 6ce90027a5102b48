/* cuBLAS, opened on first use instead of linked: loading libcublas (and the
 * cublasLt it pulls in) costs ~0.33 s and ~155 MB of RSS, which every program
 * that loads the cuda plugin would pay at start-up, GPU or not (measured
 * 2026-12-02: a Check suite ran 26 s instead of 6 s). These definitions have
 * the exact prototypes of <cublas_api.h> (the compiler checks them against
 * it) and forward to the library, dlopen-ed once; if it cannot be opened the
 * call fails with CUBLAS_STATUS_NOT_INITIALIZED and cublasGetStatusString() says
 * why. A cuBLAS function not listed here fails the link (-Wl,--no-undefined):
 * add it to CUDA_CUBLAS_FUNCS. cuDNN stays linked: it loads in ~10 ms. */
#include <cublas_v2.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#ifndef CUDA_LIBDIR
#define CUDA_LIBDIR "/usr/local/cuda/lib64"
#endif

/* X(return type, name, (parameters), (arguments)) */
#define CUDA_CUBLAS_FUNCS(X)                                                                                        \
  X(cublasStatus_t, cublasCreate_v2, (cublasHandle_t * handle), (handle))                                          \
  X(cublasStatus_t, cublasDestroy_v2, (cublasHandle_t handle), (handle))                                           \
  X(cublasStatus_t, cublasSetStream_v2, (cublasHandle_t handle, cudaStream_t streamId), (handle, streamId))        \
  X(cublasStatus_t, cublasSetWorkspace_v2, (cublasHandle_t handle, void *workspace, size_t workspaceSizeInBytes),  \
    (handle, workspace, workspaceSizeInBytes))                                                                     \
  X(cublasStatus_t, cublasSetPointerMode_v2, (cublasHandle_t handle, cublasPointerMode_t mode), (handle, mode))    \
  X(cublasStatus_t, cublasSetMathMode, (cublasHandle_t handle, cublasMath_t mode), (handle, mode))                 \
  X(cublasStatus_t, cublasDotEx,                                                                                   \
    (cublasHandle_t handle, int n, const void *x, cudaDataType xType, int incx, const void *y, cudaDataType yType, \
     int incy, void *result, cudaDataType resultType, cudaDataType executionType),                                 \
    (handle, n, x, xType, incx, y, yType, incy, result, resultType, executionType))                                \
  X(cublasStatus_t, cublasScalEx,                                                                                  \
    (cublasHandle_t handle, int n, const void *alpha, cudaDataType alphaType, void *x, cudaDataType xType,         \
     int incx, cudaDataType executionType),                                                                        \
    (handle, n, alpha, alphaType, x, xType, incx, executionType))                                                  \
  X(cublasStatus_t, cublasGemmEx,                                                                                  \
    (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,               \
     const void *alpha, const void *A, cudaDataType Atype, int lda, const void *B, cudaDataType Btype, int ldb,    \
     const void *beta, void *C, cudaDataType Ctype, int ldc, cublasComputeType_t computeType,                      \
     cublasGemmAlgo_t algo),                                                                                       \
    (handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc, computeType, algo)) \
  X(cublasStatus_t, cublasGemmStridedBatchedEx,                                                                    \
    (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,               \
     const void *alpha, const void *A, cudaDataType Atype, int lda, long long int strideA, const void *B,          \
     cudaDataType Btype, int ldb, long long int strideB, const void *beta, void *C, cudaDataType Ctype, int ldc,   \
     long long int strideC, int batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo),               \
    (handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta, C, Ctype, ldc,  \
     strideC, batchCount, computeType, algo))

static void *g_lib;
static char g_why[256];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void open_lib(void) {
  /* The plugin's run path names the toolkit, but say it in full as a fallback. */
  g_lib = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
  if (!g_lib) g_lib = dlopen(CUDA_LIBDIR "/libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
  if (!g_lib) snprintf(g_why, sizeof g_why, "cannot open libcublas.so.13: %s", dlerror());
}

static void *sym(const char *name) {
  pthread_once(&g_once, open_lib);
  void *p = g_lib ? dlsym(g_lib, name) : NULL;
  if (g_lib && !p) snprintf(g_why, sizeof g_why, "libcublas.so.13 has no %s", name);
  return p;
}

#define CUDA__FORWARD(ret, name, params, args)                                   \
  ret name params {                                                              \
    static ret(*fn) params;                                                      \
    if (!fn) *(void **)&fn = sym(#name);                                         \
    return fn ? fn args : CUBLAS_STATUS_NOT_INITIALIZED;                         \
  }
CUDA_CUBLAS_FUNCS(CUDA__FORWARD)
#undef CUDA__FORWARD

const char *cublasGetStatusString(cublasStatus_t status) {
  static const char *(*fn)(cublasStatus_t);
  if (!fn) *(void **)&fn = sym("cublasGetStatusString");
  return fn ? fn(status) : g_why[0] ? g_why : "cuBLAS is not loaded";
}
