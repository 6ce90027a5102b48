// Device code of the RNG family: Philox 4x32-10 with the core's counter
// scheme (element i of a call draws counter offset + i of the device's
// (seed, offset) stream, the same words the cpu plugin uses), so a seed
// gives the same numbers on both backends: uniform bit for bit (products
// and sums rounded with __*_rn, never contracted to FMA, as on the cpu),
// normal up to the last bits of the device's log/cos.
#include <math.h>

#include "cuda_device.h"
#include "cuda_kernels.h"

__device__ __forceinline__ void philox_at(uint64_t seed, uint64_t i, uint32_t out[4]) {
  uint32_t key0 = (uint32_t)seed, key1 = (uint32_t)(seed >> 32);
  uint32_t c0 = (uint32_t)i, c1 = (uint32_t)(i >> 32), c2 = 0, c3 = 0;
  for (int r = 0; r < 10; r++) {
    uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
    uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0, hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    uint32_t n0 = hi1 ^ c1 ^ key0, n2 = hi0 ^ c3 ^ key1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    key0 += 0x9E3779B9u;
    key1 += 0xBB67AE85u;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

__device__ __forceinline__ float unit_f32(uint32_t x) {
  return __fmul_rn((float)(x >> 8), 1.0f / 16777216.0f);
}
__device__ __forceinline__ double unit_f64(uint32_t hi, uint32_t lo) {
  return __dmul_rn((double)((((uint64_t)hi << 32) | lo) >> 11), 1.0 / 9007199254740992.0);
}

// Uniform [0, 1) with as many bits as the dtype's significand (the cpu's unit_for).
__device__ __forceinline__ double unit_for(int dt, const uint32_t r[4]) {
  switch (dt) {
    case CUDA_F32:
      return unit_f32(r[0]);
    case CUDA_F16:
      return (double)(r[0] >> 21) * (1.0 / 2048.0);
    case CUDA_BF16:
      return (double)(r[0] >> 24) * (1.0 / 256.0);
    default:
      return unit_f64(r[0], r[1]);
  }
}

__device__ __forceinline__ double normal_for(int dt, const uint32_t r[4]) {
  double u1, u2;
  if (dt == CUDA_F64) {
    u1 = unit_f64(r[0], r[1]);
    u2 = unit_f64(r[2], r[3]);
  } else {
    u1 = unit_f32(r[0]);
    u2 = unit_f32(r[1]);
  }
  const double two_pi = 6.283185307179586476925286766559;
  return __dmul_rn(sqrt(-2.0 * log(1.0 - u1)), cos(__dmul_rn(two_pi, u2)));
}

__global__ void random_kernel(int kind, int dt, void *out, int64_t n, uint64_t seed, uint64_t offset, double a,
                              double b, int64_t low, uint64_t range, const void *probs, int pdt) {
  CUDA_GRID_LOOP(i, n) {
    uint32_t r[4];
    philox_at(seed, offset + (uint64_t)i, r);
    switch (kind) {
      case CUDA_RNG_UNIFORM: {
        double u = unit_for(dt, r);
        if (dt == CUDA_F64) {
          ((double *)out)[i] = __dadd_rn(__dmul_rn(u, __dsub_rn(b, a)), a);
        } else {
          float v = __fadd_rn(__fmul_rn((float)u, __fsub_rn((float)b, (float)a)), (float)a);
          cd_store(out, i, dt, (double)v);
        }
        break;
      }
      case CUDA_RNG_NORMAL:
        cd_store(out, i, dt, __dadd_rn(a, __dmul_rn(b, normal_for(dt, r))));
        break;
      case CUDA_RNG_RANDINT: {
        uint64_t x = range <= ((uint64_t)1 << 32) ? (uint64_t)r[0] % range : ((((uint64_t)r[0] << 32) | r[1]) % range);
        int64_t v = (int64_t)((uint64_t)low + x);
        if (dt == CUDA_I64)
          ((int64_t *)out)[i] = v;
        else
          cd_store(out, i, dt, (double)v);  // |v| < 2^53: the host checked the bounds for the dtype
        break;
      }
      case CUDA_RNG_BERN_T:
        cd_store(out, i, dt, unit_f64(r[0], r[1]) < cd_load(probs, i, pdt) ? 1.0 : 0.0);
        break;
      default:
        cd_store(out, i, dt, unit_f64(r[0], r[1]) < a ? 1.0 : 0.0);
        break;
    }
  }
}

extern "C" int cuda_launch_random(int kind, int dt, void *out, int64_t n, uint64_t seed, uint64_t offset, double a,
                                  double b, int64_t low, uint64_t range, const void *probs, int pdt, cudaStream_t st) {
  if (n <= 0) return 0;
  random_kernel<<<cuda_blocks(n), CUDA_THREADS, 0, st>>>(kind, dt, out, n, seed, offset, a, b, low, range, probs, pdt);
  return CUDA_CHECK_LAUNCH("random", "random_kernel");
}

template <typename T>
__global__ void dropout_kernel(T *y, bool *mask, const T *x, int64_t n, double q, double scale, uint64_t seed,
                               uint64_t offset) {
  CUDA_GRID_LOOP(i, n) {
    uint32_t r[4];
    philox_at(seed, offset + (uint64_t)i, r);
    bool keep = (double)unit_f32(r[0]) < q;
    mask[i] = keep;
    y[i] = keep ? (T)__dmul_rn((double)x[i], scale) : (T)0;
  }
}

extern "C" int cuda_launch_dropout(int ct, void *y, bool *mask, const void *x, int64_t n, double p, uint64_t seed,
                                   uint64_t offset, cudaStream_t st) {
  if (n <= 0) return 0;
  double q = 1 - p, scale = 1 / (1 - p);
  if (ct == CUDA_F64)
    dropout_kernel<double>
        <<<cuda_blocks(n), CUDA_THREADS, 0, st>>>((double *)y, mask, (const double *)x, n, q, scale, seed, offset);
  else
    dropout_kernel<float>
        <<<cuda_blocks(n), CUDA_THREADS, 0, st>>>((float *)y, mask, (const float *)x, n, q, scale, seed, offset);
  return CUDA_CHECK_LAUNCH("dropout", "dropout_kernel");
}
