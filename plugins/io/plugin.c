/* io plugin entry (being written). */
#include "io.h"

static wk_status init(void) { return WK_OK; }

WK_PLUGIN_DEFINE("io", "0.1.0", "io (being written)", init, NULL)
