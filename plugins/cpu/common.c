/* cpu plugin: small helpers shared by several kernel families (declared in cpu.h). */
#include "cpu.h"

/* Work per parallel chunk, in elements. */
#define CPU_GRAIN 32768

wk_status cpu_wrap_dim(const char *op, int64_t dim, int ndim, int *out) {
  int64_t n = ndim > 0 ? ndim : 1;
  *out = 0;
  if (dim < -n || dim >= n)
    return wk_error(WK_ERR_INDEX, "%s(): Dimension out of range (expected to be in range of [%lld, %lld], but got %lld)",
                    op, (long long)-n, (long long)(n - 1), (long long)dim);
  *out = (int)(dim < 0 ? dim + n : dim);
  return WK_OK;
}

int64_t cpu_grain_for(int64_t work_per_item) {
  return work_per_item >= CPU_GRAIN ? 1 : CPU_GRAIN / (work_per_item > 0 ? work_per_item : 1);
}

/* PyTorch's ScalarType names, for messages that read like PyTorch's. */
const char *cpu_torch_scalar_name(wk_dtype dt) {
  switch (dt) {
    case WK_F32: return "Float";
    case WK_F64: return "Double";
    case WK_F16: return "Half";
    case WK_BF16: return "BFloat16";
    case WK_I8: return "Char";
    case WK_U8: return "Byte";
    case WK_I16: return "Short";
    case WK_I32: return "Int";
    case WK_I64: return "Long";
    case WK_BOOL: return "Bool";
    default: return "?";
  }
}
