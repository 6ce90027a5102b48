/* cpu plugin: small helpers shared by several kernel families (declared in cpu.h). */
#include "cpu.h"

/* Work per parallel chunk, in elements. */
#define CPU_GRAIN 32768

int64_t cpu_grain_for(int64_t work_per_item) {
  return work_per_item >= CPU_GRAIN ? 1 : CPU_GRAIN / (work_per_item > 0 ? work_per_item : 1);
}

