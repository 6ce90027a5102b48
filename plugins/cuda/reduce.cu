// Device code of the reduction family: one block per row of a contiguous
// [rows, len] matrix (the host moves the reduced dims last), each thread
// folds a fixed stride of the row, then a shared-memory tree of fixed shape
// combines the partials: results do not depend on timing (no atomics).
// Floating inputs accumulate in double, as the cpu plugin's engine does.
#include <math.h>

#include "cuda_device.h"
#include "cuda_kernels.h"

#define RT 256  // threads per block: a power of two for the tree

struct acc {
  double d;
  int64_t i;
  int64_t idx;
};

// NaN-propagating max/min; an index comparison keeps the first occurrence.
__device__ __forceinline__ bool isnan_d(double v) {
  return v != v;
}
__device__ __forceinline__ void fold_ext(acc &a, double v, int64_t iv, int64_t j, bool is_max, bool isint) {
  if (a.idx < 0) {
    a.d = v;
    a.i = iv;
    a.idx = j;
    return;
  }
  if (isint) {
    if (is_max ? iv > a.i : iv < a.i) {
      a.i = iv;
      a.idx = j;
    }
    return;
  }
  if (isnan_d(a.d)) return;
  if (isnan_d(v) || (is_max ? v > a.d : v < a.d)) {
    a.d = v;
    a.idx = j;
  }
}
// Combines two partials of extremes; b comes from higher indices than a
// only within a thread, so ties resolve by index.
__device__ __forceinline__ void merge_ext(acc &a, const acc &b, bool is_max, bool isint) {
  if (b.idx < 0) return;
  if (a.idx < 0) {
    a = b;
    return;
  }
  bool take;
  if (isint) {
    take = is_max ? b.i > a.i : b.i < a.i;
    if (b.i == a.i) take = b.idx < a.idx;
  } else if (isnan_d(a.d) || isnan_d(b.d)) {
    take = isnan_d(b.d) && (!isnan_d(a.d) || b.idx < a.idx);
  } else {
    take = is_max ? b.d > a.d : b.d < a.d;
    if (b.d == a.d) take = b.idx < a.idx;
  }
  if (take) a = b;
}

template <typename T>
__device__ __forceinline__ double to_d(T v) {
  return (double)v;
}

// Sums of doubles over the block (fixed tree); every thread gets the total.
__device__ double block_sum(double v, double *sh) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = RT / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }
  double r = sh[0];
  __syncthreads();
  return r;
}

template <typename T>
__global__ void __launch_bounds__(RT) reduce_rows(int op, const T *x, int64_t rows, int64_t len, double p, double q,
                                                  double *fout, int64_t *iout, int64_t *idx, bool isint) {
  __shared__ double sd[RT];
  __shared__ int64_t si[RT];
  __shared__ int64_t sx[RT];
  const int t = threadIdx.x;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T *r = x + row * len;
    if (op == CUDA_R_MAX || op == CUDA_R_MIN || op == CUDA_R_ARGMAX || op == CUDA_R_ARGMIN ||
        (op == CUDA_R_NORM && isinf(p)) || op == CUDA_R_LOGSUMEXP) {
      bool is_max = op == CUDA_R_MAX || op == CUDA_R_ARGMAX || op == CUDA_R_LOGSUMEXP || (op == CUDA_R_NORM && p > 0);
      bool absval = op == CUDA_R_NORM;
      acc a = {0, 0, -1};
      for (int64_t j = t; j < len; j += RT) {
        double v = to_d(r[j]);
        if (absval) v = fabs(v);
        fold_ext(a, v, isint ? (int64_t)r[j] : 0, j, is_max, isint && !absval);
      }
      sd[t] = a.d;
      si[t] = a.i;
      sx[t] = a.idx;
      __syncthreads();
      for (int s = RT / 2; s > 0; s >>= 1) {
        if (t < s) {
          acc m = {sd[t], si[t], sx[t]}, o = {sd[t + s], si[t + s], sx[t + s]};
          merge_ext(m, o, is_max, isint && !absval);
          sd[t] = m.d;
          si[t] = m.i;
          sx[t] = m.idx;
        }
        __syncthreads();
      }
      double best = sd[0];
      int64_t besti = si[0], bestx = sx[0];
      __syncthreads();
      if (op == CUDA_R_LOGSUMEXP) {
        double m = bestx < 0 ? -INFINITY : best;
        double sh = isinf(m) ? 0.0 : m;
        double part = 0;
        for (int64_t j = t; j < len; j += RT) part += exp(to_d(r[j]) - sh);
        double tot = block_sum(part, sd);
        if (t == 0) fout[row] = log(tot) + sh;
      } else if (t == 0) {
        if (fout) fout[row] = best;
        if (iout) iout[row] = besti;
        if (idx) idx[row] = bestx;
      }
      continue;
    }
    if (isint && (op == CUDA_R_SUM || op == CUDA_R_PROD)) {
      // wrap-around integer arithmetic, computed unsigned to stay defined
      uint64_t a = op == CUDA_R_PROD ? 1 : 0;
      for (int64_t j = t; j < len; j += RT)
        a = op == CUDA_R_PROD ? a * (uint64_t)(int64_t)r[j] : a + (uint64_t)(int64_t)r[j];
      si[t] = (int64_t)a;
      __syncthreads();
      for (int s = RT / 2; s > 0; s >>= 1) {
        if (t < s)
          si[t] = op == CUDA_R_PROD ? (int64_t)((uint64_t)si[t] * (uint64_t)si[t + s])
                                    : (int64_t)((uint64_t)si[t] + (uint64_t)si[t + s]);
        __syncthreads();
      }
      if (t == 0) iout[row] = si[0];
      __syncthreads();
      continue;
    }
    if (op == CUDA_R_ALL || op == CUDA_R_ANY) {
      int64_t a = op == CUDA_R_ALL ? 1 : 0;
      for (int64_t j = t; j < len; j += RT) {
        bool nz = to_d(r[j]) != 0.0;
        a = op == CUDA_R_ALL ? (a && nz) : (a || nz);
      }
      si[t] = a;
      __syncthreads();
      for (int s = RT / 2; s > 0; s >>= 1) {
        if (t < s) si[t] = op == CUDA_R_ALL ? (si[t] && si[t + s]) : (si[t] || si[t + s]);
        __syncthreads();
      }
      if (t == 0) iout[row] = si[0];
      __syncthreads();
      continue;
    }
    if (op == CUDA_R_PROD) {
      double a = 1;
      for (int64_t j = t; j < len; j += RT) a *= to_d(r[j]);
      sd[t] = a;
      __syncthreads();
      for (int s = RT / 2; s > 0; s >>= 1) {
        if (t < s) sd[t] *= sd[t + s];
        __syncthreads();
      }
      if (t == 0) fout[row] = sd[0];
      __syncthreads();
      continue;
    }
    // sums: sum, mean, var/std (two passes), norms of finite order
    double part = 0;
    for (int64_t j = t; j < len; j += RT) {
      double v = to_d(r[j]);
      if (op == CUDA_R_NORM) v = p == 2 ? v * v : p == 1 ? fabs(v) : p == 0 ? (v != 0 ? 1.0 : 0.0) : pow(fabs(v), p);
      part += v;
    }
    double tot = block_sum(part, sd);
    if (op == CUDA_R_VAR) {
      double mu = tot / (double)len;
      double dev = 0;
      for (int64_t j = t; j < len; j += RT) {
        double v = to_d(r[j]) - mu;
        dev += v * v;
      }
      double ss = block_sum(dev, sd);
      double dof = (double)len - p;
      if (dof < 0) dof = 0;  // PyTorch: max(0, N - correction)
      if (t == 0) fout[row] = q != 0 ? sqrt(ss / dof) : ss / dof;
    } else if (t == 0) {
      if (op == CUDA_R_MEAN)
        fout[row] = tot / (double)len;
      else if (op == CUDA_R_NORM)
        fout[row] = p == 2 ? sqrt(tot) : (p == 1 || p == 0) ? tot : pow(tot, 1.0 / p);
      else
        fout[row] = tot;
    }
  }
}

extern "C" int cuda_launch_reduce(int op, int ct, const void *x, int64_t rows, int64_t len, double p, double q,
                                  double *fout, int64_t *iout, int64_t *idx, cudaStream_t st) {
  if (rows <= 0) return 0;
  unsigned g = (unsigned)(rows < CUDA_MAX_BLOCKS ? rows : CUDA_MAX_BLOCKS);
  switch (ct) {
    case CUDA_F32:
      reduce_rows<float><<<g, RT, 0, st>>>(op, (const float *)x, rows, len, p, q, fout, iout, idx, false);
      break;
    case CUDA_F64:
      reduce_rows<double><<<g, RT, 0, st>>>(op, (const double *)x, rows, len, p, q, fout, iout, idx, false);
      break;
    case CUDA_I64:
      reduce_rows<int64_t><<<g, RT, 0, st>>>(op, (const int64_t *)x, rows, len, p, q, fout, iout, idx, true);
      break;
    default:
      reduce_rows<uint8_t><<<g, RT, 0, st>>>(op, (const uint8_t *)x, rows, len, p, q, fout, iout, idx, true);
      break;
  }
  return CUDA_CHECK_LAUNCH("reduce", "reduce_rows");
}
