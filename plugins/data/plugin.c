/* data plugin entry (being written). */
#include "data.h"

static wk_status init(void) { return WK_OK; }

WK_PLUGIN_DEFINE("data", "0.1.0", "data (being written)", init, NULL)
