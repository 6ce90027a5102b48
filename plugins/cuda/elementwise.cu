// Device code of the elementwise family (f32 add, mul, relu): the first op
// family, proving the .cu -> plugin path end to end. Inputs may broadcast or
// be strided; the output is contiguous.
#include "cuda_plugin.h"

__device__ __forceinline__ int64_t ew_offset(int64_t i, const cuda_strided &l) {
  int64_t off = 0;
  for (int d = l.ndim - 1; d >= 0; d--) {
    int64_t s = l.sizes[d], q = i / s;
    off += (i - q * s) * l.strides[d];
    i = q;
  }
  return off;
}

template <int OP>
__global__ void binary_f32(float *out, const float *a, cuda_strided la, const float *b, cuda_strided lb, float alpha,
                           int64_t n, bool contig) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    float x = a[contig ? i : ew_offset(i, la)], y = b[contig ? i : ew_offset(i, lb)];
    out[i] = OP == CUDA_EW_ADD ? x + alpha * y : x * y;
  }
}

__global__ void relu_f32(float *out, const float *a, cuda_strided la, int64_t n, bool contig) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    float x = a[contig ? i : ew_offset(i, la)];
    out[i] = x > 0.f ? x : (x != x ? x : 0.f); // NaN propagates, like PyTorch
  }
}

static bool dense(const cuda_strided &l) {
  int64_t expect = 1;
  for (int d = l.ndim - 1; d >= 0; d--) {
    if (l.sizes[d] != 1 && l.strides[d] != expect) return false;
    expect *= l.sizes[d];
  }
  return true;
}

extern "C" int cuda_launch_binary_f32(int op, float *out, const float *a, cuda_strided la, const float *b,
                                      cuda_strided lb, float alpha, int64_t n, cudaStream_t stream) {
  if (n <= 0) return 0;
  bool c = dense(la) && dense(lb);
  if (op == CUDA_EW_ADD)
    binary_f32<CUDA_EW_ADD><<<cuda_blocks(n), CUDA_THREADS, 0, stream>>>(out, a, la, b, lb, alpha, n, c);
  else
    binary_f32<CUDA_EW_MUL><<<cuda_blocks(n), CUDA_THREADS, 0, stream>>>(out, a, la, b, lb, alpha, n, c);
  return CUDA_CHECK_LAUNCH(op == CUDA_EW_ADD ? "add" : "mul", "binary_f32");
}

extern "C" int cuda_launch_unary_f32(int op, float *out, const float *a, cuda_strided la, int64_t n,
                                     cudaStream_t stream) {
  (void)op; // CUDA_EW_RELU only, for now
  if (n <= 0) return 0;
  relu_f32<<<cuda_blocks(n), CUDA_THREADS, 0, stream>>>(out, a, la, n, dense(la));
  return CUDA_CHECK_LAUNCH("relu", "relu_f32");
}
