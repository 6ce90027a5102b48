// Device code of the pool family: max pooling with PyTorch's flat indices
// (which cuDNN cannot return), average pooling (ceil_mode, count_include_pad
// and divisor_override as in PyTorch) and adaptive average pooling, forward
// and backward, over contiguous [planes, H, W]. The backward kernels gather
// (one thread per input element walks the windows that contain it), so
// they need no atomics and are deterministic.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda_libs.h"

namespace {

// Accumulate in f32 (f16, bf16, f32) or f64.
template <typename T> struct acc { typedef float type; };
template <> struct acc<double> { typedef double type; };

template <typename T> __device__ __forceinline__ typename acc<T>::type ld(const T *p) { return *p; }
template <> __device__ __forceinline__ float ld<__half>(const __half *p) { return __half2float(*p); }
template <> __device__ __forceinline__ float ld<__nv_bfloat16>(const __nv_bfloat16 *p) {
  return __bfloat162float(*p);
}
template <typename T> __device__ __forceinline__ void st(T *p, typename acc<T>::type v) { *p = (T)v; }
template <> __device__ __forceinline__ void st<__half>(__half *p, float v) { *p = __float2half(v); }
template <> __device__ __forceinline__ void st<__nv_bfloat16>(__nv_bfloat16 *p, float v) { *p = __float2bfloat16(v); }

#define GRID_LOOP(i, n) \
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

// PyTorch's loop: the first valid position starts as the argmax; a value
// replaces the running max when greater or NaN.
template <typename T>
__global__ void max_fwd(const T *x, T *y, int64_t *ind, cuda_pool_geo g, int64_t n) {
  typedef typename acc<T>::type A;
  GRID_LOOP(i, n) {
    int64_t ox = i % g.ow, oy = (i / g.ow) % g.oh, p = i / (g.ow * g.oh);
    const T *src = x + p * g.H * g.W;
    int64_t h0 = oy * g.sh - g.ph, w0 = ox * g.sw - g.pw;
    int64_t h1 = h0 + (int64_t)(g.kh - 1) * g.dh + 1, w1 = w0 + (int64_t)(g.kw - 1) * g.dw + 1;
    if (h1 > g.H) h1 = g.H;
    if (w1 > g.W) w1 = g.W;
    while (h0 < 0) h0 += g.dh;
    while (w0 < 0) w0 += g.dw;
    int64_t mi = h0 * g.W + w0;
    A mv = -INFINITY;
    for (int64_t yy = h0; yy < h1; yy += g.dh)
      for (int64_t xx = w0; xx < w1; xx += g.dw) {
        A v = ld(src + yy * g.W + xx);
        if (v > mv || isnan(v)) {
          mv = v;
          mi = yy * g.W + xx;
        }
      }
    st(y + i, mv);
    ind[i] = mi;
  }
}

// Outputs whose (dilated) window may hold input row h: [*lo, *hi).
__device__ __forceinline__ void max_range(int64_t h, int32_t pad, int32_t k, int32_t d, int32_t s, int64_t out,
                                          int64_t *lo, int64_t *hi) {
  int64_t keff = (int64_t)(k - 1) * d + 1;
  *lo = h + pad < keff ? 0 : (h + pad - keff) / s + 1;
  *hi = (h + pad) / s + 1;
  if (*hi > out) *hi = out;
}

template <typename T>
__global__ void max_bwd(const T *gy, const int64_t *ind, T *gx, cuda_pool_geo g, int64_t n) {
  typedef typename acc<T>::type A;
  GRID_LOOP(i, n) {
    int64_t w = i % g.W, h = (i / g.W) % g.H, p = i / (g.W * g.H), y0, y1, x0, x1;
    max_range(h, g.ph, g.kh, g.dh, g.sh, g.oh, &y0, &y1);
    max_range(w, g.pw, g.kw, g.dw, g.sw, g.ow, &x0, &x1);
    const T *gp = gy + p * g.oh * g.ow;
    const int64_t *ip = ind + p * g.oh * g.ow;
    int64_t me = h * g.W + w;
    A sum = 0;
    for (int64_t oy = y0; oy < y1; oy++)
      for (int64_t ox = x0; ox < x1; ox++)
        if (ip[oy * g.ow + ox] == me) sum += ld(gp + oy * g.ow + ox);
    st(gx + i, sum);
  }
}

// The window of output (oy, ox) clipped as in PyTorch; false when empty.
__device__ __forceinline__ bool avg_window(const cuda_pool_geo &g, int64_t oy, int64_t ox, int64_t *h0, int64_t *h1,
                                           int64_t *w0, int64_t *w1, int64_t *div) {
  *h0 = oy * g.sh - g.ph, *w0 = ox * g.sw - g.pw;
  *h1 = *h0 + g.kh, *w1 = *w0 + g.kw;
  if (*h1 > g.H + g.ph) *h1 = g.H + g.ph;
  if (*w1 > g.W + g.pw) *w1 = g.W + g.pw;
  int64_t pool = (*h1 - *h0) * (*w1 - *w0);
  if (*h0 < 0) *h0 = 0;
  if (*w0 < 0) *w0 = 0;
  if (*h1 > g.H) *h1 = g.H;
  if (*w1 > g.W) *w1 = g.W;
  if (*h0 >= *h1 || *w0 >= *w1) return false;
  *div = g.has_div ? g.divisor : g.count_include_pad ? pool : (*h1 - *h0) * (*w1 - *w0);
  return true;
}

template <typename T>
__global__ void avg_fwd(const T *x, T *y, cuda_pool_geo g, int64_t n) {
  typedef typename acc<T>::type A;
  GRID_LOOP(i, n) {
    int64_t ox = i % g.ow, oy = (i / g.ow) % g.oh, p = i / (g.ow * g.oh), h0, h1, w0, w1, div;
    if (!avg_window(g, oy, ox, &h0, &h1, &w0, &w1, &div)) {
      st(y + i, (A)0);
      continue;
    }
    const T *src = x + p * g.H * g.W;
    A sum = 0;
    for (int64_t yy = h0; yy < h1; yy++)
      for (int64_t xx = w0; xx < w1; xx++) sum += ld(src + yy * g.W + xx);
    st(y + i, sum / (A)div);
  }
}

template <typename T>
__global__ void avg_bwd(const T *gy, T *gx, cuda_pool_geo g, int64_t n) {
  typedef typename acc<T>::type A;
  GRID_LOOP(i, n) {
    int64_t w = i % g.W, h = (i / g.W) % g.H, p = i / (g.W * g.H);
    // windows start at o*s - pad and span k: they hold h when o*s <= h+pad < o*s+k
    int64_t y0 = h + g.ph < g.kh ? 0 : (h + g.ph - g.kh) / g.sh + 1, y1 = (h + g.ph) / g.sh + 1;
    int64_t x0 = w + g.pw < g.kw ? 0 : (w + g.pw - g.kw) / g.sw + 1, x1 = (w + g.pw) / g.sw + 1;
    if (y1 > g.oh) y1 = g.oh;
    if (x1 > g.ow) x1 = g.ow;
    const T *gp = gy + p * g.oh * g.ow;
    A sum = 0;
    for (int64_t oy = y0; oy < y1; oy++)
      for (int64_t ox = x0; ox < x1; ox++) {
        int64_t h0, h1, w0, w1, div;
        if (!avg_window(g, oy, ox, &h0, &h1, &w0, &w1, &div)) continue;
        if (h < h0 || h >= h1 || w < w0 || w >= w1) continue;
        sum += ld(gp + oy * g.ow + ox) / (A)div;
      }
    st(gx + i, sum);
  }
}

// Adaptive windows [floor(i*in/out), ceil((i+1)*in/out)).
__device__ __forceinline__ int64_t a_start(int64_t o, int64_t in, int64_t out) { return o * in / out; }
__device__ __forceinline__ int64_t a_end(int64_t o, int64_t in, int64_t out) { return ((o + 1) * in + out - 1) / out; }

template <typename T>
__global__ void adaptive_fwd(const T *x, T *y, cuda_pool_geo g, int64_t n) {
  typedef typename acc<T>::type A;
  GRID_LOOP(i, n) {
    int64_t ox = i % g.ow, oy = (i / g.ow) % g.oh, p = i / (g.ow * g.oh);
    int64_t h0 = a_start(oy, g.H, g.oh), h1 = a_end(oy, g.H, g.oh);
    int64_t w0 = a_start(ox, g.W, g.ow), w1 = a_end(ox, g.W, g.ow);
    const T *src = x + p * g.H * g.W;
    A sum = 0;
    for (int64_t yy = h0; yy < h1; yy++)
      for (int64_t xx = w0; xx < w1; xx++) sum += ld(src + yy * g.W + xx);
    st(y + i, sum / (A)((h1 - h0) * (w1 - w0)));
  }
}

template <typename T>
__global__ void adaptive_bwd(const T *gy, T *gx, cuda_pool_geo g, int64_t n) {
  typedef typename acc<T>::type A;
  GRID_LOOP(i, n) {
    int64_t w = i % g.W, h = (i / g.W) % g.H, p = i / (g.W * g.H);
    // candidate outputs around h*out/in; containment is checked exactly
    int64_t y0 = h * g.oh / g.H - 1, y1 = (h + 1) * g.oh / g.H + 2;
    int64_t x0 = w * g.ow / g.W - 1, x1 = (w + 1) * g.ow / g.W + 2;
    if (y0 < 0) y0 = 0;
    if (x0 < 0) x0 = 0;
    if (y1 > g.oh) y1 = g.oh;
    if (x1 > g.ow) x1 = g.ow;
    const T *gp = gy + p * g.oh * g.ow;
    A sum = 0;
    for (int64_t oy = y0; oy < y1; oy++) {
      int64_t h0 = a_start(oy, g.H, g.oh), h1 = a_end(oy, g.H, g.oh);
      if (h < h0 || h >= h1) continue;
      for (int64_t ox = x0; ox < x1; ox++) {
        int64_t w0 = a_start(ox, g.W, g.ow), w1 = a_end(ox, g.W, g.ow);
        if (w < w0 || w >= w1) continue;
        sum += ld(gp + oy * g.ow + ox) / (A)((h1 - h0) * (w1 - w0));
      }
    }
    st(gx + i, sum);
  }
}

}  // namespace

// One launcher per kernel, instantiated per dtype.
template <typename T>
static int launch_max_fwd(const void *x, void *y, int64_t *ind, cuda_pool_geo g, cudaStream_t st) {
  int64_t n = g.planes * g.oh * g.ow;
  if (n <= 0) return 0;
  max_fwd<T><<<cuda_blocks(n), CUDA_THREADS, 0, st>>>((const T *)x, (T *)y, ind, g, n);
  return CUDA_CHECK_LAUNCH("max_pool2d_with_indices", "max_fwd");
}
template <typename T>
static int launch_max_bwd(const void *gy, const int64_t *ind, void *gx, cuda_pool_geo g, cudaStream_t st) {
  int64_t n = g.planes * g.H * g.W;
  if (n <= 0) return 0;
  max_bwd<T><<<cuda_blocks(n), CUDA_THREADS, 0, st>>>((const T *)gy, ind, (T *)gx, g, n);
  return CUDA_CHECK_LAUNCH("max_pool2d_with_indices_backward", "max_bwd");
}
template <typename T>
static int launch_avg_fwd(const void *x, void *y, cuda_pool_geo g, cudaStream_t st) {
  int64_t n = g.planes * g.oh * g.ow;
  if (n <= 0) return 0;
  avg_fwd<T><<<cuda_blocks(n), CUDA_THREADS, 0, st>>>((const T *)x, (T *)y, g, n);
  return CUDA_CHECK_LAUNCH("avg_pool2d", "avg_fwd");
}
template <typename T>
static int launch_avg_bwd(const void *gy, void *gx, cuda_pool_geo g, cudaStream_t st) {
  int64_t n = g.planes * g.H * g.W;
  if (n <= 0) return 0;
  avg_bwd<T><<<cuda_blocks(n), CUDA_THREADS, 0, st>>>((const T *)gy, (T *)gx, g, n);
  return CUDA_CHECK_LAUNCH("avg_pool2d_backward", "avg_bwd");
}
template <typename T>
static int launch_ad_fwd(const void *x, void *y, cuda_pool_geo g, cudaStream_t st) {
  int64_t n = g.planes * g.oh * g.ow;
  if (n <= 0) return 0;
  adaptive_fwd<T><<<cuda_blocks(n), CUDA_THREADS, 0, st>>>((const T *)x, (T *)y, g, n);
  return CUDA_CHECK_LAUNCH("adaptive_avg_pool2d", "adaptive_fwd");
}
template <typename T>
static int launch_ad_bwd(const void *gy, void *gx, cuda_pool_geo g, cudaStream_t st) {
  int64_t n = g.planes * g.H * g.W;
  if (n <= 0) return 0;
  adaptive_bwd<T><<<cuda_blocks(n), CUDA_THREADS, 0, st>>>((const T *)gy, (T *)gx, g, n);
  return CUDA_CHECK_LAUNCH("adaptive_avg_pool2d_backward", "adaptive_bwd");
}

#define BY_DTYPE(OP, FN, ...)                                              \
  switch (dtype) {                                                         \
    case CUDA_F32: return FN<float>(__VA_ARGS__);                          \
    case CUDA_F64: return FN<double>(__VA_ARGS__);                         \
    case CUDA_F16: return FN<__half>(__VA_ARGS__);                         \
    case CUDA_BF16: return FN<__nv_bfloat16>(__VA_ARGS__);                 \
    default: return cuda_check_error(cudaErrorInvalidValue, OP, "dtype"); \
  }

extern "C" int cuda_launch_max_pool_fwd(int dtype, const void *x, void *y, int64_t *ind, cuda_pool_geo g,
                                        cudaStream_t st) {
  BY_DTYPE("max_pool2d_with_indices", launch_max_fwd, x, y, ind, g, st)
}
extern "C" int cuda_launch_max_pool_bwd(int dtype, const void *gy, const int64_t *ind, void *gx, cuda_pool_geo g,
                                        cudaStream_t st) {
  BY_DTYPE("max_pool2d_with_indices_backward", launch_max_bwd, gy, ind, gx, g, st)
}
extern "C" int cuda_launch_avg_pool_fwd(int dtype, const void *x, void *y, cuda_pool_geo g, cudaStream_t st) {
  BY_DTYPE("avg_pool2d", launch_avg_fwd, x, y, g, st)
}
extern "C" int cuda_launch_avg_pool_bwd(int dtype, const void *gy, void *gx, cuda_pool_geo g, cudaStream_t st) {
  BY_DTYPE("avg_pool2d_backward", launch_avg_bwd, gy, gx, g, st)
}
extern "C" int cuda_launch_adaptive_pool_fwd(int dtype, const void *x, void *y, cuda_pool_geo g, cudaStream_t st) {
  BY_DTYPE("adaptive_avg_pool2d", launch_ad_fwd, x, y, g, st)
}
extern "C" int cuda_launch_adaptive_pool_bwd(int dtype, const void *gy, void *gx, cuda_pool_geo g, cudaStream_t st) {
  BY_DTYPE("adaptive_avg_pool2d_backward", launch_ad_bwd, gy, gx, g, st)
}
