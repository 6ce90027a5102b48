/* cuda plugin: what the library-backed kernels share (cuBLAS, cuDNN and the
 * pooling/batch-norm helper kernels): per-thread handles bound to a device
 * and stream, status translation, the process-wide switches (TF32,
 * cudnn.benchmark, determinism) and the launchers of pool.cu and bn.cu. */
#ifndef WICK_CUDA_LIBS_H
#define WICK_CUDA_LIBS_H

#include "cuda_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- pool.cu: pooling over contiguous [planes, H, W] planes (plain part) ---- */
typedef struct cuda_pool_geo {
  int64_t planes, H, W, oh, ow;
  int32_t kh, kw, sh, sw, ph, pw, dh, dw;
  int32_t count_include_pad, has_div;
  int64_t divisor;
} cuda_pool_geo;

/* dtype: CUDA_F32, CUDA_F64, CUDA_F16 or CUDA_BF16 (x, y, gy, gx share it). */
int cuda_launch_max_pool_fwd(int dtype, const void *x, void *y, int64_t *ind, cuda_pool_geo g, cudaStream_t st);
int cuda_launch_max_pool_bwd(int dtype, const void *gy, const int64_t *ind, void *gx, cuda_pool_geo g, cudaStream_t st);
int cuda_launch_avg_pool_fwd(int dtype, const void *x, void *y, cuda_pool_geo g, cudaStream_t st);
int cuda_launch_avg_pool_bwd(int dtype, const void *gy, void *gx, cuda_pool_geo g, cudaStream_t st);
int cuda_launch_adaptive_pool_fwd(int dtype, const void *x, void *y, cuda_pool_geo g, cudaStream_t st);
int cuda_launch_adaptive_pool_bwd(int dtype, const void *gy, void *gx, cuda_pool_geo g, cudaStream_t st);

/* ---- bn.cu: helpers for batch norm outside cuDNN's training path ----
 * invstd[c] = 1 / sqrt(var[c] + eps); f64 when `f64`, else f32 (n channels). */
int cuda_launch_bn_invstd(int f64, const void *var, void *invstd, double eps, int64_t n, cudaStream_t st);
/* gx[n, c, s] = gy[n, c, s] * w[c] * invstd[c] over contiguous [N, C, S];
 * gy/gx of `dtype`, w and invstd f32 (or f64 when dtype is CUDA_F64); w may be NULL. */
int cuda_launch_bn_eval_grad(int dtype, const void *gy, const void *w, const void *invstd, void *gx, int64_t N,
                             int64_t C, int64_t S, cudaStream_t st);

#ifdef __cplusplus
}
#endif

#ifndef __CUDACC__
#include <cublas_v2.h>
#include <cudnn.h>

/* The switches, read from the environment at each call so a program may
 * change them between ops (like torch.backends.*):
 *   WICK_CUDA_ALLOW_TF32=1   f32 matmuls may use TF32 (default off, PyTorch >= 1.12)
 *   WICK_CUDNN_ALLOW_TF32=0  f32 convolutions may not use TF32 (default on, as in PyTorch)
 *   WICK_CUDNN_BENCHMARK=1   time every convolution algorithm once per shape (cudnn.benchmark)
 *   WICK_DETERMINISTIC=1     deterministic algorithms only (use_deterministic_algorithms) */
bool cuda_allow_tf32_matmul(void);
bool cuda_allow_tf32_cudnn(void);
bool cuda_cudnn_benchmark(void);
bool cuda_deterministic(void);

/* The calling thread's handles for `device` bound to its current stream,
 * created on first use (never at plugin load: creating one needs a device).
 * The cuBLAS handle has a workspace from the caching allocator. The device
 * must already be current (cuda_enter). Errors name `op`. */
wk_status cuda_cublas(const char *op, int device, cublasHandle_t *out);
wk_status cuda_cudnn(const char *op, int device, cudnnHandle_t *out);

/* Library statuses as Wick errors: "mm: cublasGemmEx failed: CUBLAS_STATUS_...". */
wk_status cuda_lib_cublas_error(cublasStatus_t st, const char *op, const char *call);
wk_status cuda_lib_cudnn_error(cudnnStatus_t st, const char *op, const char *call);
#define CUBLAS_CHECK(op, call) cuda_lib_cublas_error((call), (op), #call)
#define CUDNN_CHECK(op, call) cuda_lib_cudnn_error((call), (op), #call)

/* ---- small helpers shared by the op families ---- */
/* A new zero tensor on dev (cudaMemsetAsync on the current stream). */
wk_tensor *cuda_lib_zeros(const char *op, const int64_t *sizes, int ndim, wk_dtype dt, wk_device dev);
/* t converted to dt and made contiguous: a new reference (t itself, retained, when it already is). */
wk_tensor *cuda_lib_prep(wk_tensor *t, wk_dtype dt);
/* The CUDA_* code of a Wick dtype (same numbers). */
static inline int cuda_dtype_code(wk_dtype dt) {
  return (int)dt;
}
#endif

#endif
