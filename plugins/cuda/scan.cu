// Device code of cumsum: one thread per line of a contiguous [outer, len,
// inner] tensor, summing in order (double for floating inputs, wrapping
// int64 for integers) as the cpu plugin's scan does: deterministic. Also
// cumprod, logcumsumexp, cummax and cummin, one thread per line by the SDK's
// formulas (<wick/sdk/scan.h>), the cpu plugin's too.
#include "cuda_device.h"
#include "cuda_kernels.h"
#include <wick/sdk/scan.h>

__global__ void cumsum_kernel(void *out, int odt, const void *x, int xdt, int64_t outer, int64_t len, int64_t inner) {
  CUDA_GRID_LOOP(l, outer * inner) {
    int64_t o = l / inner, i = l - o * inner, base = o * len * inner + i;
    if (xdt == CUDA_I64) {
      uint64_t acc = 0;
      for (int64_t k = 0; k < len; k++) {
        int64_t e = base + k * inner;
        acc += (uint64_t)((const int64_t *)x)[e];
        ((int64_t *)out)[e] = (int64_t)acc;
      }
    } else {
      double acc = 0;
      for (int64_t k = 0; k < len; k++) {
        int64_t e = base + k * inner;
        acc += cd_load(x, e, xdt);
        cd_store(out, e, odt, acc);
      }
    }
  }
}

__global__ void scan2_kernel(int op, void *y, int64_t *idx, const void *x, bool is_int, int64_t outer, int64_t len,
                             int64_t inner) {
  CUDA_GRID_LOOP(l, outer * inner) {
    int64_t o = l / inner, i = l - o * inner, base = o * len * inner + i;
    int64_t *ix = idx ? idx + base : nullptr;
    if (is_int)
      wk_scan_line_i64(op, (const int64_t *)x + base, (int64_t *)y + base, ix, len, inner);
    else
      wk_scan_line_f64(op, (const double *)x + base, (double *)y + base, ix, len, inner);
  }
}

extern "C" int cuda_launch_scan2(int op, void *y, int64_t *idx, const void *x, bool is_int, int64_t outer, int64_t len,
                                 int64_t inner, cudaStream_t st) {
  if (outer * len * inner <= 0) return 0;
  scan2_kernel<<<cuda_blocks(outer * inner), CUDA_THREADS, 0, st>>>(op, y, idx, x, is_int, outer, len, inner);
  return CUDA_CHECK_LAUNCH("scan", "scan2_kernel");
}

extern "C" int cuda_launch_cumsum(void *out, int odt, const void *x, int xdt, int64_t outer, int64_t len, int64_t inner,
                                  cudaStream_t st) {
  if (outer * len * inner <= 0) return 0;
  cumsum_kernel<<<cuda_blocks(outer * inner), CUDA_THREADS, 0, st>>>(out, odt, x, xdt, outer, len, inner);
  return CUDA_CHECK_LAUNCH("cumsum", "cumsum_kernel");
}
