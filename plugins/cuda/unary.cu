// Device code of the unary pointwise family: f32/f64 math, int64 for the
// ops that keep integer dtypes (neg, abs, sign, relu, clamp), and predicates
// writing bool. Same formulas as the cpu plugin's loops.
#include <math.h>

#include "cuda_device.h"
#include "cuda_kernels.h"

template <typename T>
__device__ __forceinline__ T ufloat(int op, T x, T p, T q, T r) {
  const T one = 1, half = (T)0.5;
  switch (op) {
    case WK_UOP_neg:
      return -x;
    case WK_UOP_abs:
      return fabs(x);
    case WK_UOP_exp:
      return exp(x);
    case WK_UOP_log:
      return log(x);
    case WK_UOP_log1p:
      return log1p(x);
    case WK_UOP_sqrt:
      return sqrt(x);
    case WK_UOP_rsqrt:
      return one / sqrt(x);
    case WK_UOP_sin:
      return sin(x);
    case WK_UOP_erf:
      return erf(x);
    case WK_UOP_cos:
      return cos(x);
    case WK_UOP_tanh:
      return tanh(x);
    case WK_UOP_sigmoid:
      return one / (one + exp(-x));
    case WK_UOP_relu:
      return x < 0 ? (T)0 : x;  // NaN propagates
    case WK_UOP_silu:
      return x / (one + exp(-x));
    case WK_UOP_sign:
      return (T)((x > 0) - (x < 0));
    case WK_UOP_floor:
      return floor(x);
    case WK_UOP_ceil:
      return ceil(x);
    case WK_UOP_round:
      return rint(x);  // half to even
    case WK_UOP_leaky_relu:
      return x > 0 ? x : x * p;
    case WK_UOP_gelu:
      return half * x * (one + erf(x * (T)M_SQRT1_2));
    case WK_UOP_gelu_tanh: {
      const T beta = (T)(M_SQRT2 * M_2_SQRTPI * 0.5), kappa = (T)0.044715;
      return half * x * (one + tanh(beta * (x + kappa * x * x * x)));
    }
    case WK_UOP_clamp: {
      T m = x < p ? p : x;
      return m > q ? q : m;
    }
    case WK_UOP_fill:
      return p + x * 0;
    case WK_UOP_nan_to_num:
      return x != x ? p : isinf(x) ? (x > 0 ? q : r) : x;
    default:
      return x;
  }
}

__device__ __forceinline__ int64_t uint64op(int op, int64_t x, int64_t lo, int64_t hi) {
  switch (op) {
    case WK_UOP_neg:
      return (int64_t)(0 - (uint64_t)x);  // wraps like PyTorch's
    case WK_UOP_abs:
      return x < 0 ? (int64_t)(0 - (uint64_t)x) : x;
    case WK_UOP_sign:
      return (x > 0) - (x < 0);
    case WK_UOP_relu:
      return x < 0 ? 0 : x;
    case WK_UOP_clamp: {
      int64_t m = x < lo ? lo : x;
      return m > hi ? hi : m;
    }
    default:
      return x;
  }
}

template <typename T>
__global__ void unary_float(int op, T *out, const T *a, cuda_strided la, T p, T q, T r, int64_t n, bool contig) {
  CUDA_GRID_LOOP(i, n) out[i] = ufloat<T>(op, a[contig ? i : cd_offset(i, la)], p, q, r);
}

__global__ void unary_int(int op, int64_t *out, const int64_t *a, cuda_strided la, int64_t lo, int64_t hi, int64_t n,
                          bool contig) {
  CUDA_GRID_LOOP(i, n) out[i] = uint64op(op, a[contig ? i : cd_offset(i, la)], lo, hi);
}

template <typename T>
__global__ void unary_pred(int op, bool *out, const T *a, cuda_strided la, int64_t n, bool contig) {
  CUDA_GRID_LOOP(i, n) {
    T x = a[contig ? i : cd_offset(i, la)];
    double d = (double)x;
    out[i] = op == WK_UOP_isnan ? d != d : op == WK_UOP_isinf ? isinf(d) != 0 : x == 0;
  }
}

extern "C" int cuda_launch_unary(int op, int ct, void *out, const void *a, cuda_strided la, double p, double q,
                                 double r, int64_t ilo, int64_t ihi, int64_t n, cudaStream_t st) {
  if (n <= 0) return 0;
  unsigned g = cuda_blocks(n);
  bool c = cd_dense(la);
  bool pred = op == WK_UOP_isnan || op == WK_UOP_isinf || op == WK_UOP_logical_not;
  if (pred) {
    if (ct == CUDA_F32)
      unary_pred<float><<<g, CUDA_THREADS, 0, st>>>(op, (bool *)out, (const float *)a, la, n, c);
    else if (ct == CUDA_F64)
      unary_pred<double><<<g, CUDA_THREADS, 0, st>>>(op, (bool *)out, (const double *)a, la, n, c);
    else
      unary_pred<int64_t><<<g, CUDA_THREADS, 0, st>>>(op, (bool *)out, (const int64_t *)a, la, n, c);
  } else if (ct == CUDA_F32) {
    unary_float<float>
        <<<g, CUDA_THREADS, 0, st>>>(op, (float *)out, (const float *)a, la, (float)p, (float)q, (float)r, n, c);
  } else if (ct == CUDA_F64) {
    unary_float<double><<<g, CUDA_THREADS, 0, st>>>(op, (double *)out, (const double *)a, la, p, q, r, n, c);
  } else {
    unary_int<<<g, CUDA_THREADS, 0, st>>>(op, (int64_t *)out, (const int64_t *)a, la, ilo, ihi, n, c);
  }
  return CUDA_CHECK_LAUNCH("unary", "unary_kernel");
}
