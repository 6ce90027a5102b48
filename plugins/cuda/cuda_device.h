/* cuda plugin: device-side helpers shared by the kernel files (.cu only):
 * grid-stride loops, element offsets of strided layouts, and loads/stores
 * of any Wick dtype through double or int64. */
#ifndef WICK_CUDA_DEVICE_H
#define WICK_CUDA_DEVICE_H
#ifdef __CUDACC__
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda_plugin.h"

// for (i in [0, n)) over the whole grid, int64 indices.
#define CUDA_GRID_LOOP(i, n) \
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

// Element i (row-major over l's sizes) -> element offset through l's strides.
__device__ __forceinline__ int64_t cd_offset(int64_t i, const cuda_strided &l) {
  int64_t off = 0;
  for (int d = l.ndim - 1; d >= 0; d--) {
    int64_t s = l.sizes[d], q = i / s;
    off += (i - q * s) * l.strides[d];
    i = q;
  }
  return off;
}

// True when l walks memory densely in row-major order (host side).
static inline bool cd_dense(const cuda_strided &l) {
  int64_t expect = 1;
  for (int d = l.ndim - 1; d >= 0; d--) {
    if (l.sizes[d] != 1 && l.strides[d] != expect) return false;
    expect *= l.sizes[d];
  }
  return true;
}

__device__ __forceinline__ double cd_load(const void *base, int64_t off, int dt) {
  switch (dt) {
    case CUDA_F32:
      return ((const float *)base)[off];
    case CUDA_F64:
      return ((const double *)base)[off];
    case CUDA_F16:
      return __half2float(((const __half *)base)[off]);
    case CUDA_BF16:
      return __bfloat162float(((const __nv_bfloat16 *)base)[off]);
    case CUDA_I8:
      return ((const int8_t *)base)[off];
    case CUDA_U8:
      return ((const uint8_t *)base)[off];
    case CUDA_I16:
      return ((const int16_t *)base)[off];
    case CUDA_I32:
      return ((const int32_t *)base)[off];
    case CUDA_I64:
      return (double)((const int64_t *)base)[off];
    default:
      return ((const uint8_t *)base)[off] ? 1.0 : 0.0;
  }
}

// Stores v rounded to dt (f16/bf16 through float, as the cpu plugin does).
__device__ __forceinline__ void cd_store(void *base, int64_t off, int dt, double v) {
  switch (dt) {
    case CUDA_F32:
      ((float *)base)[off] = (float)v;
      break;
    case CUDA_F64:
      ((double *)base)[off] = v;
      break;
    case CUDA_F16:
      ((__half *)base)[off] = __float2half_rn((float)v);
      break;
    case CUDA_BF16:
      ((__nv_bfloat16 *)base)[off] = __float2bfloat16_rn((float)v);
      break;
    case CUDA_I8:
      ((int8_t *)base)[off] = (int8_t)(int64_t)v;
      break;
    case CUDA_U8:
      ((uint8_t *)base)[off] = (uint8_t)(int64_t)v;
      break;
    case CUDA_I16:
      ((int16_t *)base)[off] = (int16_t)(int64_t)v;
      break;
    case CUDA_I32:
      ((int32_t *)base)[off] = (int32_t)(int64_t)v;
      break;
    case CUDA_I64:
      ((int64_t *)base)[off] = (int64_t)v;
      break;
    default:
      ((uint8_t *)base)[off] = v != 0.0;
      break;
  }
}

// v rounded to dt and back (the optimizer kernels round where PyTorch ends an op).
__device__ __forceinline__ double cd_round(double v, int dt) {
  switch (dt) {
    case CUDA_F32:
      return (double)(float)v;
    case CUDA_F16:
      return (double)__half2float(__float2half_rn((float)v));
    case CUDA_BF16:
      return (double)__bfloat162float(__float2bfloat16_rn((float)v));
    default:
      return v;
  }
}

#endif
#endif
