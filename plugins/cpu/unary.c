/* cpu plugin: unary kernels (not written yet). */
#include "cpu.h"

wk_status cpu_register_unary(void) { return WK_OK; }
