/* cpu plugin: index kernels (not written yet). */
#include "cpu.h"

wk_status cpu_register_index(void) { return WK_OK; }
