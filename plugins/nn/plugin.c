/* nn plugin entry (being written). */
#include "nn.h"

static wk_status init(void) { return WK_OK; }

WK_PLUGIN_DEFINE("nn", "0.1.0", "nn (being written)", init, NULL)
