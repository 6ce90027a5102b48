/* cpu plugin: linalg kernels (not written yet). */
#include "cpu.h"

wk_status cpu_register_linalg(void) { return WK_OK; }
