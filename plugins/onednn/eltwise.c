#include "onednn.h"
wk_status odn_register_eltwise(void) { return WK_OK; }
