/* cpu plugin: conv kernels (not written yet). */
#include "cpu.h"

wk_status cpu_register_conv(void) { return WK_OK; }
