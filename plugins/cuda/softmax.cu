// Device code of softmax / log_softmax and their backward ops over the
// middle dim of a contiguous [outer, C, inner] tensor. inner == 1 (the
// common last-dim case): one block per row with shared-memory trees;
// otherwise one thread per (outer, inner) slot walking C. Sums accumulate in
// double; both paths are deterministic.
#include <math.h>

#include "cuda_device.h"
#include "cuda_kernels.h"

#define ST 256

__device__ double tree(double v, double *sh, bool is_max) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = ST / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.x < s)
      sh[threadIdx.x] = is_max ? fmax(sh[threadIdx.x], sh[threadIdx.x + s]) : sh[threadIdx.x] + sh[threadIdx.x + s];
    __syncthreads();
  }
  double r = sh[0];
  __syncthreads();
  return r;
}

template <typename T>
__global__ void __launch_bounds__(ST) softmax_rows(bool lg, T *y, const T *x, int64_t rows, int64_t C) {
  __shared__ double sh[ST];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T *r = x + row * C;
    T *o = y + row * C;
    double m = -INFINITY;
    for (int64_t j = threadIdx.x; j < C; j += ST) m = fmax(m, (double)r[j]);
    m = tree(m, sh, true);
    double s = 0;
    for (int64_t j = threadIdx.x; j < C; j += ST) s += exp((double)r[j] - m);
    s = tree(s, sh, false);
    double ls = log(s);
    for (int64_t j = threadIdx.x; j < C; j += ST)
      o[j] = lg ? (T)((double)r[j] - m - ls) : (T)(exp((double)r[j] - m) / s);
  }
}

template <typename T>
__global__ void softmax_slots(bool lg, T *y, const T *x, int64_t outer, int64_t C, int64_t inner) {
  CUDA_GRID_LOOP(t, outer * inner) {
    int64_t o = t / inner, i = t - o * inner;
    const T *r = x + o * C * inner + i;
    T *out = y + o * C * inner + i;
    double m = -INFINITY, s = 0;
    for (int64_t k = 0; k < C; k++) m = fmax(m, (double)r[k * inner]);
    for (int64_t k = 0; k < C; k++) s += exp((double)r[k * inner] - m);
    double ls = log(s);
    for (int64_t k = 0; k < C; k++) {
      double v = (double)r[k * inner] - m;
      out[k * inner] = lg ? (T)(v - ls) : (T)(exp(v) / s);
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(ST) softmax_bw_rows(bool lg, T *gi, const T *g, const T *y, int64_t rows, int64_t C) {
  __shared__ double sh[ST];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T *gr = g + row * C, *yr = y + row * C;
    T *o = gi + row * C;
    double s = 0;
    for (int64_t j = threadIdx.x; j < C; j += ST) s += lg ? (double)gr[j] : (double)gr[j] * (double)yr[j];
    s = tree(s, sh, false);
    for (int64_t j = threadIdx.x; j < C; j += ST)
      o[j] = lg ? (T)((double)gr[j] - exp((double)yr[j]) * s) : (T)((double)yr[j] * ((double)gr[j] - s));
  }
}

template <typename T>
__global__ void softmax_bw_slots(bool lg, T *gi, const T *g, const T *y, int64_t outer, int64_t C, int64_t inner) {
  CUDA_GRID_LOOP(t, outer * inner) {
    int64_t o = t / inner, i = t - o * inner, base = o * C * inner + i;
    double s = 0;
    for (int64_t k = 0; k < C; k++) {
      int64_t e = base + k * inner;
      s += lg ? (double)g[e] : (double)g[e] * (double)y[e];
    }
    for (int64_t k = 0; k < C; k++) {
      int64_t e = base + k * inner;
      gi[e] = lg ? (T)((double)g[e] - exp((double)y[e]) * s) : (T)((double)y[e] * ((double)g[e] - s));
    }
  }
}

static unsigned row_blocks(int64_t rows) {
  return (unsigned)(rows < CUDA_MAX_BLOCKS ? rows : CUDA_MAX_BLOCKS);
}

template <typename T>
static void fwd(bool lg, void *y, const void *x, int64_t outer, int64_t C, int64_t inner, cudaStream_t st) {
  if (inner == 1)
    softmax_rows<T><<<row_blocks(outer), ST, 0, st>>>(lg, (T *)y, (const T *)x, outer, C);
  else
    softmax_slots<T><<<cuda_blocks(outer * inner), CUDA_THREADS, 0, st>>>(lg, (T *)y, (const T *)x, outer, C, inner);
}

template <typename T>
static void bwd(bool lg, void *gi, const void *g, const void *y, int64_t outer, int64_t C, int64_t inner,
                cudaStream_t st) {
  if (inner == 1)
    softmax_bw_rows<T><<<row_blocks(outer), ST, 0, st>>>(lg, (T *)gi, (const T *)g, (const T *)y, outer, C);
  else
    softmax_bw_slots<T>
        <<<cuda_blocks(outer * inner), CUDA_THREADS, 0, st>>>(lg, (T *)gi, (const T *)g, (const T *)y, outer, C, inner);
}

extern "C" int cuda_launch_softmax(int ct, bool log, void *y, const void *x, int64_t outer, int64_t C, int64_t inner,
                                   cudaStream_t st) {
  if (outer <= 0 || C <= 0 || inner <= 0) return 0;
  if (ct == CUDA_F64)
    fwd<double>(log, y, x, outer, C, inner, st);
  else
    fwd<float>(log, y, x, outer, C, inner, st);
  return CUDA_CHECK_LAUNCH(log ? "log_softmax" : "softmax", "softmax_kernel");
}

extern "C" int cuda_launch_softmax_backward(int ct, bool log, void *gi, const void *g, const void *y, int64_t outer,
                                            int64_t C, int64_t inner, cudaStream_t st) {
  if (outer <= 0 || C <= 0 || inner <= 0) return 0;
  if (ct == CUDA_F64)
    bwd<double>(log, gi, g, y, outer, C, inner, st);
  else
    bwd<float>(log, gi, g, y, outer, C, inner, st);
  return CUDA_CHECK_LAUNCH(log ? "log_softmax_backward_data" : "softmax_backward_data", "softmax_backward_kernel");
}
