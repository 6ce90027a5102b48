// Device code of the bn family: what cuDNN's batch norm does not cover,
// the evaluation-mode input gradient (a per-channel scale by the running
// statistics' invstd) and that invstd itself.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda_libs.h"

namespace {

template <typename P>
__global__ void invstd_kernel(const P *var, P *out, double eps, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    out[i] = (P)(1.0 / sqrt((double)var[i] + eps));
}

template <typename T> __device__ __forceinline__ float to_f(T v) { return (float)v; }
template <> __device__ __forceinline__ float to_f<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float to_f<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T from_f(float v) { return (T)v; }
template <> __device__ __forceinline__ __half from_f<__half>(float v) { return __float2half(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) { return __float2bfloat16(v); }

// T data with f32 parameters (f16, bf16, f32).
template <typename T>
__global__ void eval_grad(const T *gy, const float *w, const float *invstd, T *gx, int64_t C, int64_t S, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t c = (i / S) % C;
    float k = invstd[c] * (w ? w[c] : 1.0f);
    gx[i] = from_f<T>(to_f(gy[i]) * k);
  }
}

__global__ void eval_grad_f64(const double *gy, const double *w, const double *invstd, double *gx, int64_t C,
                              int64_t S, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t c = (i / S) % C;
    gx[i] = gy[i] * invstd[c] * (w ? w[c] : 1.0);
  }
}

}  // namespace

extern "C" int cuda_launch_bn_invstd(int f64, const void *var, void *invstd, double eps, int64_t n, cudaStream_t st) {
  if (n <= 0) return 0;
  if (f64)
    invstd_kernel<double><<<cuda_blocks(n), CUDA_THREADS, 0, st>>>((const double *)var, (double *)invstd, eps, n);
  else
    invstd_kernel<float><<<cuda_blocks(n), CUDA_THREADS, 0, st>>>((const float *)var, (float *)invstd, eps, n);
  return CUDA_CHECK_LAUNCH("batch_norm_backward", "invstd_kernel");
}

extern "C" int cuda_launch_bn_eval_grad(int dtype, const void *gy, const void *w, const void *invstd, void *gx,
                                        int64_t N, int64_t C, int64_t S, cudaStream_t st) {
  int64_t n = N * C * S;
  if (n <= 0) return 0;
  unsigned b = cuda_blocks(n);
  const float *wf = (const float *)w, *isf = (const float *)invstd;
  switch (dtype) {
    case CUDA_F32: eval_grad<float><<<b, CUDA_THREADS, 0, st>>>((const float *)gy, wf, isf, (float *)gx, C, S, n); break;
    case CUDA_F16: eval_grad<__half><<<b, CUDA_THREADS, 0, st>>>((const __half *)gy, wf, isf, (__half *)gx, C, S, n); break;
    case CUDA_BF16:
      eval_grad<__nv_bfloat16><<<b, CUDA_THREADS, 0, st>>>((const __nv_bfloat16 *)gy, wf, isf, (__nv_bfloat16 *)gx, C,
                                                           S, n);
      break;
    case CUDA_F64:
      eval_grad_f64<<<b, CUDA_THREADS, 0, st>>>((const double *)gy, (const double *)w, (const double *)invstd,
                                               (double *)gx, C, S, n);
      break;
    default: return cuda_check_error(cudaErrorInvalidValue, "batch_norm_backward", "dtype");
  }
  return CUDA_CHECK_LAUNCH("batch_norm_backward", "eval_grad");
}
