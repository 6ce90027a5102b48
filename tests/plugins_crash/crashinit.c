/* Test plugin for `wick info --probe` (tests/probe.sh): its init dies of
 * SIGSEGV. Kept out of tests/plugins so no suite loads it in-process. */
#include <signal.h>
#include <wick/sdk.h>

static wk_status init(void) {
  raise(SIGSEGV);
  return WK_OK;
}

WK_PLUGIN_DEFINE("crashinit", "0.0.1", "test plugin whose init segfaults", init, NULL)
