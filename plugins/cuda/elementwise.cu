// Device code of the pointwise binary family: arithmetic (add ... pow, atan2,
// fmod, remainder, hypot, logaddexp, copysign, bitwise and shifts) in
// f32/f64/i64, comparisons and logical ops writing bool, where, and
// gelu_backward. Operands arrive in the compute dtype (the host converts),
// may broadcast or be strided; the output is contiguous. The op is a run-time
// switch inside one kernel per compute type, to keep the number of template
// instances (and nvcc time) small.
#include <math.h>

#include "cuda_device.h"
#include "cuda_kernels.h"

// PyTorch's div_floor_floating and the wrapping integer power: the SDK's
// formulas (<wick/sdk/binary.h>), the cpu plugin's too.
__device__ __forceinline__ float floor_div(float a, float b) { return wk_floor_div_f32(a, b); }
__device__ __forceinline__ double floor_div(double a, double b) { return wk_floor_div_f64(a, b); }
#define ipow wk_ipow

template <typename T>
__device__ __forceinline__ T arith(int op, T x, T y, T al) {
  switch (op) {
    case WK_BOP_add:
      return x + al * y;
    case WK_BOP_sub:
      return x - al * y;
    case WK_BOP_mul:
      return x * y;
    case WK_BOP_div:
      return x / y;
    case WK_BOP_div_trunc:
      return trunc(x / y);
    case WK_BOP_div_floor:
      return floor_div(x, y);
    case WK_BOP_maximum:
      return (x != x || y != y) ? (T)NAN : (x > y ? x : y);
    case WK_BOP_minimum:
      return (x != x || y != y) ? (T)NAN : (x < y ? x : y);
    case WK_BOP_pow:
      return pow(x, y);
    case WK_BOP_atan2:
      return atan2(x, y);
    case WK_BOP_fmod:
      return fmod(x, y);
    case WK_BOP_remainder:
      return wk_remainder_double(x, y);
    case WK_BOP_hypot:
      return hypot(x, y);
    case WK_BOP_logaddexp:
      return wk_logaddexp_double(x, y);
    case WK_BOP_copysign:
      return copysign(x, y);
    default:
      return 0;
  }
}
template <>
__device__ __forceinline__ float arith<float>(int op, float x, float y, float al) {
  switch (op) {
    case WK_BOP_add:
      return x + al * y;
    case WK_BOP_sub:
      return x - al * y;
    case WK_BOP_mul:
      return x * y;
    case WK_BOP_div:
      return x / y;
    case WK_BOP_div_trunc:
      return (float)trunc((double)(x / y));
    case WK_BOP_div_floor:
      return floor_div(x, y);
    case WK_BOP_maximum:
      return (x != x || y != y) ? NAN : (x > y ? x : y);
    case WK_BOP_minimum:
      return (x != x || y != y) ? NAN : (x < y ? x : y);
    case WK_BOP_pow:
      return powf(x, y);
    case WK_BOP_atan2:
      return atan2f(x, y);
    case WK_BOP_fmod:
      return fmodf(x, y);
    case WK_BOP_remainder:
      return wk_remainder_float(x, y);
    case WK_BOP_hypot:
      return hypotf(x, y);
    case WK_BOP_logaddexp:
      return wk_logaddexp_float(x, y);
    case WK_BOP_copysign:
      return copysignf(x, y);
    default:
      return 0;
  }
}
template <>
__device__ __forceinline__ int64_t arith<int64_t>(int op, int64_t x, int64_t y, int64_t al) {
  uint64_t ux = (uint64_t)x, uy = (uint64_t)y, ua = (uint64_t)al;
  switch (op) {
    case WK_BOP_add:
      return (int64_t)(ux + ua * uy);
    case WK_BOP_sub:
      return (int64_t)(ux - ua * uy);
    case WK_BOP_mul:
      return (int64_t)(ux * uy);
    case WK_BOP_div_trunc:
    case WK_BOP_div_floor: {
      if (y == 0) return 0;  // the host refuses zero divisors before launching
      if (x == INT64_MIN && y == -1) return INT64_MIN;
      int64_t r = x / y;
      if (op == WK_BOP_div_floor && (x % y != 0) && ((x < 0) != (y < 0))) r--;
      return r;
    }
    case WK_BOP_maximum:
      return x > y ? x : y;
    case WK_BOP_minimum:
      return x < y ? x : y;
    case WK_BOP_pow:
      return ipow(x, y);
    case WK_BOP_fmod:
    case WK_BOP_remainder: {
      if (y == 0) return 0;  // the host refuses zero divisors before launching
      int64_t r = y == -1 ? 0 : x % y;
      if (op == WK_BOP_remainder && r != 0 && ((r < 0) != (y < 0))) r += y;
      return r;
    }
    case WK_BOP_bitwise_and:
      return x & y;
    case WK_BOP_bitwise_or:
      return x | y;
    case WK_BOP_bitwise_xor:
      return x ^ y;
    case WK_BOP_bitwise_left_shift:
      return wk_shl_i64(x, y);
    case WK_BOP_bitwise_right_shift:
      return wk_shr_i64(x, y);
    default:
      return 0;
  }
}

// bool arithmetic is never launched (the host computes bools in i64), but the
// kernel template still needs an arith<bool> to compile.
template <>
__device__ __forceinline__ bool arith<bool>(int op, bool x, bool y, bool al) {
  (void)op;
  (void)al;
  return x || y;
}

template <typename T>
__device__ __forceinline__ bool compare(int op, T x, T y) {
  switch (op) {
    case WK_BOP_eq:
      return x == y;
    case WK_BOP_ne:
      return x != y;
    case WK_BOP_lt:
      return x < y;
    case WK_BOP_le:
      return x <= y;
    case WK_BOP_gt:
      return x > y;
    case WK_BOP_ge:
      return x >= y;
    case WK_BOP_logical_and:
      return x != 0 && y != 0;
    case WK_BOP_logical_or:
      return x != 0 || y != 0;
    default:
      return false;
  }
}

template <typename T>
__global__ void binary_kernel(int op, T *out, const T *a, cuda_strided la, const T *b, cuda_strided lb, T bs, T al,
                              int64_t n, bool contig) {
  CUDA_GRID_LOOP(i, n) {
    T x = a[contig ? i : cd_offset(i, la)];
    T y = b ? b[contig ? i : cd_offset(i, lb)] : bs;
    out[i] = arith<T>(op, x, y, al);
  }
}

template <typename T>
__global__ void compare_kernel(int op, bool *out, const T *a, cuda_strided la, const T *b, cuda_strided lb, T bs,
                               int64_t n, bool contig) {
  CUDA_GRID_LOOP(i, n) {
    T x = a[contig ? i : cd_offset(i, la)];
    T y = b ? b[contig ? i : cd_offset(i, lb)] : bs;
    out[i] = compare<T>(op, x, y);
  }
}

template <typename T>
static void launch_binary(int op, void *out, const void *a, cuda_strided la, const void *b, cuda_strided lb, T bs, T al,
                          int64_t n, cudaStream_t st) {
  bool contig = cd_dense(la) && (!b || cd_dense(lb));
  if (op >= WK_BOP_logical_and)
    compare_kernel<T>
        <<<cuda_blocks(n), CUDA_THREADS, 0, st>>>(op, (bool *)out, (const T *)a, la, (const T *)b, lb, bs, n, contig);
  else
    binary_kernel<T>
        <<<cuda_blocks(n), CUDA_THREADS, 0, st>>>(op, (T *)out, (const T *)a, la, (const T *)b, lb, bs, al, n, contig);
}

extern "C" int cuda_launch_binary(int op, int ct, void *out, const void *a, cuda_strided la, const void *b,
                                  cuda_strided lb, double bf, int64_t bi, double alpha, int64_t alpha_i, int64_t n,
                                  cudaStream_t st) {
  if (n <= 0) return 0;
  switch (ct) {
    case CUDA_F32:
      launch_binary<float>(op, out, a, la, b, lb, (float)bf, (float)alpha, n, st);
      break;
    case CUDA_F64:
      launch_binary<double>(op, out, a, la, b, lb, bf, alpha, n, st);
      break;
    case CUDA_I64:
      launch_binary<int64_t>(op, out, a, la, b, lb, bi, alpha_i, n, st);
      break;
    default:  // bool: comparisons and logical ops only
      launch_binary<bool>(op, out, a, la, b, lb, bi != 0, true, n, st);
      break;
  }
  return CUDA_CHECK_LAUNCH("binary", "binary_kernel");
}

template <typename E>
__global__ void where_kernel(E *out, const bool *c, cuda_strided lc, const E *a, cuda_strided la, E av, const E *b,
                             cuda_strided lb, E bv, int64_t n) {
  CUDA_GRID_LOOP(i, n) {
    bool k = c[cd_offset(i, lc)];
    out[i] = k ? (a ? a[cd_offset(i, la)] : av) : (b ? b[cd_offset(i, lb)] : bv);
  }
}

extern "C" int cuda_launch_where(int es, void *out, const void *cond, cuda_strided lc, const void *a, cuda_strided la,
                                 uint64_t abits, const void *b, cuda_strided lb, uint64_t bbits, int64_t n,
                                 cudaStream_t st) {
  if (n <= 0) return 0;
  unsigned g = cuda_blocks(n);
  const bool *c = (const bool *)cond;
  switch (es) {
    case 8:
      where_kernel<uint64_t><<<g, CUDA_THREADS, 0, st>>>((uint64_t *)out, c, lc, (const uint64_t *)a, la, abits,
                                                         (const uint64_t *)b, lb, bbits, n);
      break;
    case 4:
      where_kernel<uint32_t><<<g, CUDA_THREADS, 0, st>>>((uint32_t *)out, c, lc, (const uint32_t *)a, la,
                                                         (uint32_t)abits, (const uint32_t *)b, lb, (uint32_t)bbits, n);
      break;
    case 2:
      where_kernel<uint16_t><<<g, CUDA_THREADS, 0, st>>>((uint16_t *)out, c, lc, (const uint16_t *)a, la,
                                                         (uint16_t)abits, (const uint16_t *)b, lb, (uint16_t)bbits, n);
      break;
    default:
      where_kernel<uint8_t><<<g, CUDA_THREADS, 0, st>>>((uint8_t *)out, c, lc, (const uint8_t *)a, la, (uint8_t)abits,
                                                        (const uint8_t *)b, lb, (uint8_t)bbits, n);
      break;
  }
  return CUDA_CHECK_LAUNCH("where", "where_kernel");
}

// d/dx gelu: exact (erf) form or the tanh approximation, as PyTorch's GeluBackward.
template <typename T>
__global__ void gelu_backward_kernel(T *out, const T *g, cuda_strided lg, const T *x, cuda_strided lx, bool tanh_approx,
                                     int64_t n) {
  CUDA_GRID_LOOP(i, n) {
    T v = x[cd_offset(i, lx)], gv = g[cd_offset(i, lg)];
    T r;
    if (tanh_approx) {
      const T beta = (T)(M_SQRT2 * M_2_SQRTPI * 0.5), kappa = (T)0.044715;
      T x2 = v * v, inner = beta * (v + kappa * x2 * v), t = tanh(inner);
      T left = (T)0.5 * v, right = (T)1 + t;
      T left_d = (T)0.5 * right, tanh_d = (T)1 - t * t, inner_d = beta * ((T)1 + (T)3 * kappa * x2);
      r = gv * (left_d + left * tanh_d * inner_d);
    } else {
      const T alpha = (T)M_SQRT1_2, beta = (T)(M_2_SQRTPI * M_SQRT1_2 * 0.5);
      T cdf = (T)0.5 * ((T)1 + erf(v * alpha)), pdf = beta * exp(v * v * (T)-0.5);
      r = gv * (cdf + v * pdf);
    }
    out[i] = r;
  }
}

// threshold_backward (x > t ? g : 0; NaN x gives 0), sigmoid_backward
// (g (1 - y) y) and tanh_backward (g (1 - y^2)), as the cpu kernels write them.
template <typename T>
__global__ void pointwise_backward_kernel(int kind, T *out, const T *g, cuda_strided lg, const T *x, cuda_strided lx,
                                          T t, int64_t n) {
  CUDA_GRID_LOOP(i, n) {
    T v = x[cd_offset(i, lx)], gv = g[cd_offset(i, lg)];
    out[i] = kind == CUDA_PB_THRESHOLD ? (v > t ? gv : (T)0)
             : kind == CUDA_PB_SIGMOID ? gv * (((T)1 - v) * v)
                                       : gv * ((T)1 - v * v);
  }
}

extern "C" int cuda_launch_pointwise_backward(int kind, int ct, void *out, const void *g, cuda_strided lg,
                                              const void *x, cuda_strided lx, double threshold, int64_t n,
                                              cudaStream_t st) {
  if (n <= 0) return 0;
  if (ct == CUDA_F64)
    pointwise_backward_kernel<double><<<cuda_blocks(n), CUDA_THREADS, 0, st>>>(kind, (double *)out, (const double *)g,
                                                                               lg, (const double *)x, lx, threshold, n);
  else
    pointwise_backward_kernel<float><<<cuda_blocks(n), CUDA_THREADS, 0, st>>>(
        kind, (float *)out, (const float *)g, lg, (const float *)x, lx, (float)threshold, n);
  return CUDA_CHECK_LAUNCH("pointwise_backward", "pointwise_backward_kernel");
}

extern "C" int cuda_launch_gelu_backward(int ct, void *out, const void *g, cuda_strided lg, const void *x,
                                         cuda_strided lx, int tanh_approx, int64_t n, cudaStream_t st) {
  if (n <= 0) return 0;
  if (ct == CUDA_F64)
    gelu_backward_kernel<double><<<cuda_blocks(n), CUDA_THREADS, 0, st>>>((double *)out, (const double *)g, lg,
                                                                          (const double *)x, lx, tanh_approx != 0, n);
  else
    gelu_backward_kernel<float><<<cuda_blocks(n), CUDA_THREADS, 0, st>>>((float *)out, (const float *)g, lg,
                                                                         (const float *)x, lx, tanh_approx != 0, n);
  return CUDA_CHECK_LAUNCH("gelu_backward", "gelu_backward_kernel");
}

// The first launchers of the plugin (cuda_plugin.h), kept as f32 wrappers.
extern "C" int cuda_launch_binary_f32(int op, float *out, const float *a, cuda_strided la, const float *b,
                                      cuda_strided lb, float alpha, int64_t n, cudaStream_t stream) {
  return cuda_launch_binary(op == CUDA_EW_ADD ? WK_BOP_add : WK_BOP_mul, CUDA_F32, out, a, la, b, lb, 0, 0, alpha, 1, n,
                            stream);
}
extern "C" int cuda_launch_unary_f32(int op, float *out, const float *a, cuda_strided la, int64_t n,
                                     cudaStream_t stream) {
  (void)op;  // CUDA_EW_RELU
  return cuda_launch_unary(WK_UOP_relu, CUDA_F32, out, a, la, 0, 0, 0, 0, 0, n, stream);
}
