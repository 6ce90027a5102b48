/* cpu plugin: small helpers shared by several kernel families (declared in cpu.h). */
#include "cpu.h"

/* Work per parallel chunk, in elements. */
#define CPU_GRAIN 32768

int64_t cpu_grain_for(int64_t work_per_item) {
  return work_per_item >= CPU_GRAIN ? 1 : CPU_GRAIN / (work_per_item > 0 ? work_per_item : 1);
}


wk_tensor *cpu_empty_like_format(const int64_t *sizes, int ndim, wk_dtype dt, wk_tensor *const *ts, int n) {
  if (ndim == 4)
    for (int i = 0; i < n; i++) {
      const wk_tensor *t = ts[i];
      if (!t || wk_tensor_dim(t) != 4 || memcmp(wk_tensor_sizes(t), sizes, 4 * sizeof(int64_t))) continue;
      if (wk_suggest_memory_format(t) != WK_CHANNELS_LAST) break;
      return wk_empty_format(sizes, 4, (wk_options){.dtype = dt}, WK_CHANNELS_LAST);
    }
  return cpu_empty(sizes, ndim, dt);
}

bool cpu_same_dense_layout(const wk_tensor *a, const wk_tensor *b) {
  if (!cpu_same_shape(a, b)) return false;
  if (wk_tensor_is_contiguous(a)) return wk_tensor_is_contiguous(b);
  return wk_suggest_memory_format(a) == WK_CHANNELS_LAST &&
         !memcmp(wk_tensor_strides(a), wk_tensor_strides(b), 4 * sizeof(int64_t));
}
