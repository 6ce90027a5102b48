/* optim plugin entry (being written). */
#include "optim.h"

static wk_status init(void) { return WK_OK; }

WK_PLUGIN_DEFINE("optim", "0.1.0", "optim (being written)", init, NULL)
