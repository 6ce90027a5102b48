/* Test plugin for `wick info --probe` (tests/probe.sh): its init never returns. */
#include <unistd.h>
#include <wick/sdk.h>

static wk_status init(void) {
  for (;;) pause();
  return WK_OK;
}

WK_PLUGIN_DEFINE("hanginit", "0.0.1", "test plugin whose init hangs", init, NULL)
