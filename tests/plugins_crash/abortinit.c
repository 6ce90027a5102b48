/* Test plugin for `wick info --probe` (tests/probe.sh): its init aborts. */
#include <stdlib.h>
#include <wick/sdk.h>

static wk_status init(void) {
  abort();
  return WK_OK;
}

WK_PLUGIN_DEFINE("abortinit", "0.0.1", "test plugin whose init aborts", init, NULL)
