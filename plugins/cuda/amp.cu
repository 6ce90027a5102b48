// Device code of GradScaler's fused steps: amp_foreach_non_finite_check_and_unscale_
// (one grid-stride pass per gradient: unscale and inf/NaN check together) and
// amp_update_scale_ (one thread). The arithmetic of the cpu plugin's amp.c
// and PyTorch's kernels: float products (__fmul_rn, never fused) for
// float/half/bfloat16, double for double; the scale rounded to float.
#include <math.h>

#include "cuda_device.h"
#include "cuda_kernels.h"

__global__ void amp_unscale_kernel(int dt, void *x, cuda_strided l, bool dense, int64_t n, float *found,
                                   const float *inv_scale) {
  const float inv = *inv_scale;
  bool bad = false;
  CUDA_GRID_LOOP(i, n) {
    int64_t o = dense ? i : cd_offset(i, l);
    if (dt == CUDA_F64) {
      double v = ((double *)x)[o];
      bad |= !isfinite(v);
      ((double *)x)[o] = inv == 1.f ? v : __dmul_rn(v, (double)inv);
    } else if (dt == CUDA_F32) {
      float v = ((float *)x)[o];
      bad |= !isfinite(v);
      ((float *)x)[o] = inv == 1.f ? v : __fmul_rn(v, inv);
    } else {
      float v = (float)cd_load(x, o, dt);
      bad |= !isfinite(v);
      cd_store(x, o, dt, (double)(inv == 1.f ? v : __fmul_rn(v, inv)));
    }
  }
  if (bad) *found = 1.f;  // every writer writes the same value
}

__global__ void amp_update_scale_kernel(float *scale, int32_t *tracker, const float *found, double growth,
                                        double backoff, int64_t interval) {
  if (*found) {
    *scale = (float)((double)*scale * backoff);
    *tracker = 0;
  } else {
    int64_t successful = (int64_t)*tracker + 1;
    if (successful == interval) {
      float grown = (float)((double)*scale * growth);
      if (isfinite(grown)) *scale = grown;  // never grow past float's range to inf
      *tracker = 0;
    } else {
      *tracker = (int32_t)successful;
    }
  }
}

extern "C" int cuda_launch_amp_unscale(int dt, void *x, cuda_strided l, int64_t n, float *found_inf,
                                       const float *inv_scale, cudaStream_t st) {
  if (n <= 0) return 0;
  amp_unscale_kernel<<<cuda_blocks(n), CUDA_THREADS, 0, st>>>(dt, x, l, cd_dense(l), n, found_inf, inv_scale);
  return CUDA_CHECK_LAUNCH("amp_foreach_non_finite_check_and_unscale_", "amp_unscale_kernel");
}

extern "C" int cuda_launch_amp_update_scale(float *scale, int32_t *growth_tracker, const float *found_inf,
                                            double growth_factor, double backoff_factor, int64_t growth_interval,
                                            cudaStream_t st) {
  amp_update_scale_kernel<<<1, 1, 0, st>>>(scale, growth_tracker, found_inf, growth_factor, backoff_factor,
                                           growth_interval);
  return CUDA_CHECK_LAUNCH("amp_update_scale_", "amp_update_scale_kernel");
}
