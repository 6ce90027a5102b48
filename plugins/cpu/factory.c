/* cpu plugin: factory kernels (not written yet). */
#include "cpu.h"

wk_status cpu_register_factory(void) { return WK_OK; }
