// Device code of layer_norm and its backward over rows of a contiguous
// [M, N] matrix: one block per row with fixed-shape shared-memory trees for
// the statistics (double), and for the weight/bias gradients one thread per
// column summing the rows in order: deterministic, no atomics.
#include <math.h>

#include "cuda_device.h"
#include "cuda_kernels.h"

#define LT 256

__device__ double ln_sum(double v, double *sh) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = LT / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }
  double r = sh[0];
  __syncthreads();
  return r;
}

template <typename T>
__global__ void __launch_bounds__(LT)
    ln_fwd(T *y, const T *x, const T *w, const T *b, int64_t M, int64_t N, double eps, double *mean, double *rstd) {
  __shared__ double sh[LT];
  for (int64_t r = blockIdx.x; r < M; r += gridDim.x) {
    const T *xr = x + r * N;
    T *yr = y + r * N;
    double s = 0;
    for (int64_t i = threadIdx.x; i < N; i += LT) s += (double)xr[i];
    double m = ln_sum(s, sh) / (double)N;
    double v = 0;
    for (int64_t i = threadIdx.x; i < N; i += LT) {
      double d = (double)xr[i] - m;
      v += d * d;
    }
    double rs = 1.0 / sqrt(ln_sum(v, sh) / (double)N + eps);
    if (threadIdx.x == 0) {
      mean[r] = m;
      rstd[r] = rs;
    }
    const T mt = (T)m, rt = (T)rs;
    for (int64_t i = threadIdx.x; i < N; i += LT) {
      T o = (xr[i] - mt) * rt;
      if (w) o = o * w[i];
      if (b) o = o + b[i];
      yr[i] = o;
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(LT) ln_bwd_rows(T *gi, const T *g, const T *x, const T *w, const double *mean,
                                                  const double *rstd, int64_t M, int64_t N) {
  __shared__ double sh[LT];
  for (int64_t r = blockIdx.x; r < M; r += gridDim.x) {
    const T *xr = x + r * N, *gr = g + r * N;
    double m = mean[r], rs = rstd[r], sa = 0, sb = 0;
    for (int64_t i = threadIdx.x; i < N; i += LT) {
      double dw = w ? (double)gr[i] * (double)w[i] : (double)gr[i];
      sa += dw;
      sb += dw * ((double)xr[i] - m) * rs;
    }
    sa = ln_sum(sa, sh) / (double)N;
    sb = ln_sum(sb, sh) / (double)N;
    for (int64_t i = threadIdx.x; i < N; i += LT) {
      double dw = w ? (double)gr[i] * (double)w[i] : (double)gr[i];
      gi[r * N + i] = (T)(rs * (dw - sa - ((double)xr[i] - m) * rs * sb));
    }
  }
}

template <typename T>
__global__ void ln_bwd_cols(double *gw, double *gb, const T *g, const T *x, const double *mean, const double *rstd,
                            int64_t M, int64_t N) {
  CUDA_GRID_LOOP(i, N) {
    double aw = 0, ab = 0;
    for (int64_t r = 0; r < M; r++) {
      double gv = (double)g[r * N + i];
      aw += gv * ((double)x[r * N + i] - mean[r]) * rstd[r];
      ab += gv;
    }
    if (gw) gw[i] = aw;
    if (gb) gb[i] = ab;
  }
}

static unsigned rows_grid(int64_t M) {
  return (unsigned)(M < CUDA_MAX_BLOCKS ? M : CUDA_MAX_BLOCKS);
}

extern "C" int cuda_launch_layer_norm(int ct, void *y, const void *x, const void *w, const void *b, int64_t M,
                                      int64_t N, double eps, double *mean, double *rstd, cudaStream_t st) {
  if (M <= 0 || N <= 0) return 0;
  if (ct == CUDA_F64)
    ln_fwd<double><<<rows_grid(M), LT, 0, st>>>((double *)y, (const double *)x, (const double *)w, (const double *)b, M,
                                                N, eps, mean, rstd);
  else
    ln_fwd<float><<<rows_grid(M), LT, 0, st>>>((float *)y, (const float *)x, (const float *)w, (const float *)b, M, N,
                                               eps, mean, rstd);
  return CUDA_CHECK_LAUNCH("layer_norm", "ln_fwd");
}

extern "C" int cuda_launch_layer_norm_backward(int ct, void *gi, double *gw, double *gb, const void *g, const void *x,
                                               const void *w, const double *mean, const double *rstd, int64_t M,
                                               int64_t N, cudaStream_t st) {
  if (M <= 0 || N <= 0) return 0;
  if (gi) {
    if (ct == CUDA_F64)
      ln_bwd_rows<double><<<rows_grid(M), LT, 0, st>>>((double *)gi, (const double *)g, (const double *)x,
                                                       (const double *)w, mean, rstd, M, N);
    else
      ln_bwd_rows<float><<<rows_grid(M), LT, 0, st>>>((float *)gi, (const float *)g, (const float *)x, (const float *)w,
                                                      mean, rstd, M, N);
    int r = CUDA_CHECK_LAUNCH("layer_norm_backward", "ln_bwd_rows");
    if (r) return r;
  }
  if (gw || gb) {
    if (ct == CUDA_F64)
      ln_bwd_cols<double>
          <<<cuda_blocks(N), CUDA_THREADS, 0, st>>>(gw, gb, (const double *)g, (const double *)x, mean, rstd, M, N);
    else
      ln_bwd_cols<float>
          <<<cuda_blocks(N), CUDA_THREADS, 0, st>>>(gw, gb, (const float *)g, (const float *)x, mean, rstd, M, N);
    return CUDA_CHECK_LAUNCH("layer_norm_backward", "ln_bwd_cols");
  }
  return 0;
}
