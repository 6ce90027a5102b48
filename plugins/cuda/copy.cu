// Device code of the copy family: strided copy with dtype conversion and
// broadcasting (copy_, and wk_to for non-contiguous tensors), and fill.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda_plugin.h"

// Element i of a tensor of `l`'s shape (row-major order) -> element offset.
__device__ __forceinline__ int64_t cuda_offset(int64_t i, const cuda_strided &l) {
  int64_t off = 0;
  for (int d = l.ndim - 1; d >= 0; d--) {
    int64_t s = l.sizes[d], q = i / s;
    off += (i - q * s) * l.strides[d];
    i = q;
  }
  return off;
}

// Same dtype: move elements of `T`'s size, contiguous fast path.
template <typename T>
__global__ void copy_same(T *dst, cuda_strided dl, const T *src, cuda_strided sl, int64_t n, bool contig) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    dst[contig ? i : cuda_offset(i, dl)] = src[contig ? i : cuda_offset(i, sl)];
}

// Conversions go through double, or int64 between integer types (exact).
__device__ __forceinline__ bool is_float(int dt) { return dt >= CUDA_F32 && dt <= CUDA_BF16; }
__device__ double load_f(const char *p, int dt) {
  switch (dt) {
    case CUDA_F32: return *(const float *)p;
    case CUDA_F64: return *(const double *)p;
    case CUDA_F16: return __half2float(*(const __half *)p);
    case CUDA_BF16: return __bfloat162float(*(const __nv_bfloat16 *)p);
    case CUDA_I8: return *(const int8_t *)p;
    case CUDA_U8: return *(const uint8_t *)p;
    case CUDA_I16: return *(const int16_t *)p;
    case CUDA_I32: return *(const int32_t *)p;
    case CUDA_I64: return (double)*(const int64_t *)p;
    default: return *(const uint8_t *)p ? 1.0 : 0.0;
  }
}
__device__ int64_t load_i(const char *p, int dt) {
  switch (dt) {
    case CUDA_I8: return *(const int8_t *)p;
    case CUDA_U8: return *(const uint8_t *)p;
    case CUDA_I16: return *(const int16_t *)p;
    case CUDA_I32: return *(const int32_t *)p;
    case CUDA_I64: return *(const int64_t *)p;
    default: return *(const uint8_t *)p != 0;
  }
}
__device__ void store_f(char *p, int dt, double v) {
  switch (dt) {
    case CUDA_F32: *(float *)p = (float)v; break;
    case CUDA_F64: *(double *)p = v; break;
    case CUDA_F16: *(__half *)p = __float2half_rn((float)v); break;
    case CUDA_BF16: *(__nv_bfloat16 *)p = __float2bfloat16_rn((float)v); break;
    case CUDA_I8: *(int8_t *)p = (int8_t)(int64_t)v; break;
    case CUDA_U8: *(uint8_t *)p = (uint8_t)(int64_t)v; break;
    case CUDA_I16: *(int16_t *)p = (int16_t)(int64_t)v; break;
    case CUDA_I32: *(int32_t *)p = (int32_t)(int64_t)v; break;
    case CUDA_I64: *(int64_t *)p = (int64_t)v; break;
    default: *(uint8_t *)p = v != 0.0; break;
  }
}
__device__ void store_i(char *p, int dt, int64_t v) {
  switch (dt) {
    case CUDA_I8: *(int8_t *)p = (int8_t)v; break;
    case CUDA_U8: *(uint8_t *)p = (uint8_t)v; break;
    case CUDA_I16: *(int16_t *)p = (int16_t)v; break;
    case CUDA_I32: *(int32_t *)p = (int32_t)v; break;
    case CUDA_I64: *(int64_t *)p = v; break;
    default: *(uint8_t *)p = v != 0; break;
  }
}
__constant__ int cuda_dtype_size[11] = {0, 4, 8, 2, 2, 1, 1, 2, 4, 8, 1};

__global__ void copy_convert(char *dst, int ddt, cuda_strided dl, const char *src, int sdt, cuda_strided sl,
                             int64_t n) {
  int64_t des = cuda_dtype_size[ddt], ses = cuda_dtype_size[sdt];
  bool exact_int = !is_float(ddt) && !is_float(sdt);
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const char *s = src + cuda_offset(i, sl) * ses;
    char *d = dst + cuda_offset(i, dl) * des;
    if (exact_int)
      store_i(d, ddt, load_i(s, sdt));
    else
      store_f(d, ddt, load_f(s, sdt));
  }
}

static bool contiguous(const cuda_strided &l) {
  int64_t expect = 1;
  for (int d = l.ndim - 1; d >= 0; d--) {
    if (l.sizes[d] != 1 && l.strides[d] != expect) return false;
    expect *= l.sizes[d];
  }
  return true;
}

extern "C" int cuda_launch_copy(void *dst, int ddt, cuda_strided dl, const void *src, int sdt, cuda_strided sl,
                                int64_t n, cudaStream_t stream) {
  if (n <= 0) return 0;
  unsigned g = cuda_blocks(n);
  if (ddt == sdt) {
    bool c = contiguous(dl) && contiguous(sl);
    switch (ddt == CUDA_F64 || ddt == CUDA_I64 ? 8 : ddt == CUDA_F32 || ddt == CUDA_I32 ? 4
            : ddt == CUDA_F16 || ddt == CUDA_BF16 || ddt == CUDA_I16 ? 2 : 1) {
      case 8: copy_same<<<g, CUDA_THREADS, 0, stream>>>((uint64_t *)dst, dl, (const uint64_t *)src, sl, n, c); break;
      case 4: copy_same<<<g, CUDA_THREADS, 0, stream>>>((uint32_t *)dst, dl, (const uint32_t *)src, sl, n, c); break;
      case 2: copy_same<<<g, CUDA_THREADS, 0, stream>>>((uint16_t *)dst, dl, (const uint16_t *)src, sl, n, c); break;
      default: copy_same<<<g, CUDA_THREADS, 0, stream>>>((uint8_t *)dst, dl, (const uint8_t *)src, sl, n, c); break;
    }
    return CUDA_CHECK_LAUNCH("copy_", "copy_same");
  }
  copy_convert<<<g, CUDA_THREADS, 0, stream>>>((char *)dst, ddt, dl, (const char *)src, sdt, sl, n);
  return CUDA_CHECK_LAUNCH("copy_", "copy_convert");
}

template <typename T>
__global__ void fill_kernel(T *dst, cuda_strided dl, T v, int64_t n, bool contig) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    dst[contig ? i : cuda_offset(i, dl)] = v;
}

extern "C" int cuda_launch_fill(void *dst, int elem_size, cuda_strided dl, uint64_t bits, int64_t n,
                                cudaStream_t stream) {
  if (n <= 0) return 0;
  unsigned g = cuda_blocks(n);
  bool c = contiguous(dl);
  switch (elem_size) {
    case 8: fill_kernel<<<g, CUDA_THREADS, 0, stream>>>((uint64_t *)dst, dl, (uint64_t)bits, n, c); break;
    case 4: fill_kernel<<<g, CUDA_THREADS, 0, stream>>>((uint32_t *)dst, dl, (uint32_t)bits, n, c); break;
    case 2: fill_kernel<<<g, CUDA_THREADS, 0, stream>>>((uint16_t *)dst, dl, (uint16_t)bits, n, c); break;
    default: fill_kernel<<<g, CUDA_THREADS, 0, stream>>>((uint8_t *)dst, dl, (uint8_t)bits, n, c); break;
  }
  return CUDA_CHECK_LAUNCH("fill_", "fill_kernel");
}
