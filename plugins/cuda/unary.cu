// Device code of the unary pointwise family: f32/f64 math, int64 for the
// ops that keep integer dtypes (neg, abs, sign, relu, clamp, relu6, hardtanh,
// square, bitwise_not), and predicates writing bool. Same formulas as the cpu
// plugin's loops.
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
    case WK_UOP_expm1:
      return expm1(x);
    case WK_UOP_log2:
      return log2(x);
    case WK_UOP_log10:
      return log10(x);
    case WK_UOP_exp2:
      return exp2(x);
    case WK_UOP_tan:
      return tan(x);
    case WK_UOP_asin:
      return asin(x);
    case WK_UOP_acos:
      return acos(x);
    case WK_UOP_atan:
      return atan(x);
    case WK_UOP_sinh:
      return sinh(x);
    case WK_UOP_cosh:
      return cosh(x);
    case WK_UOP_asinh:
      return asinh(x);
    case WK_UOP_acosh:
      return acosh(x);
    case WK_UOP_atanh:
      return atanh(x);
    case WK_UOP_reciprocal:
      return one / x;
    case WK_UOP_square:
      return x * x;
    case WK_UOP_trunc:
      return trunc(x);
    case WK_UOP_frac:
      return x - trunc(x);
    case WK_UOP_erfinv:
      return (T)erfinv((double)x);
    case WK_UOP_selu:
      return x <= 0 ? expm1(x) * (T)WK_SELU_ALPHA * (T)WK_SELU_SCALE : x * (T)WK_SELU_SCALE;
    case WK_UOP_elu:  // p alpha, q scale, r input_scale (celu: alpha, 1, 1/alpha)
      return x <= 0 ? expm1(x * r) * p * q : x * q;
    case WK_UOP_softplus:  // p beta, q threshold
      return x * p > q ? x : log1p(exp(x * p)) / p;
    case WK_UOP_mish:
      return x * tanh(log1p(exp(x)));
    case WK_UOP_hardswish:  // min(max(x + 3, 0), 6) as std::min/max: NaN propagates
    case WK_UOP_hardsigmoid: {
      T v = x + (T)3;
      T h = v < 0 ? (T)0 : v > 6 ? (T)6 : v;
      return op == WK_UOP_hardswish ? x * h / (T)6 : h / (T)6;
    }
    case WK_UOP_relu6:
    case WK_UOP_hardtanh: {  // p min, q max; NaN propagates
      T m = x < p ? p : x;
      return m > q ? q : m;
    }
    case WK_UOP_log_sigmoid:
      return (x < 0 ? x : (T)0) - log1p(exp(-fabs(x)));
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
    case WK_UOP_clamp:
    case WK_UOP_relu6:
    case WK_UOP_hardtanh: {
      int64_t m = x < lo ? lo : x;
      return m > hi ? hi : m;
    }
    case WK_UOP_square:
      return (int64_t)((uint64_t)x * (uint64_t)x);  // wraps like PyTorch's
    case WK_UOP_bitwise_not:
      return ~x;
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
    out[i] = op == WK_UOP_isnan      ? d != d
             : op == WK_UOP_isinf    ? isinf(d) != 0
             : op == WK_UOP_isfinite ? isfinite(d) != 0
             : op == WK_UOP_signbit  ? signbit(d) != 0
                                     : x == 0;
  }
}

extern "C" int cuda_launch_unary(int op, int ct, void *out, const void *a, cuda_strided la, double p, double q,
                                 double r, int64_t ilo, int64_t ihi, int64_t n, cudaStream_t st) {
  if (n <= 0) return 0;
  unsigned g = cuda_blocks(n);
  bool c = cd_dense(la);
  bool pred = wk_uop_rule(op) == WK_UNARY_PRED;
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
