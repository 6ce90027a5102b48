/* Test plugin: needs a symbol nothing provides, so dlopen(RTLD_NOW) fails
 * (built without --no-undefined on purpose). */
#include <wick/sdk.h>

extern int wick_test_symbol_that_does_not_exist(void);

static wk_status init(void) { return wick_test_symbol_that_does_not_exist() ? WK_OK : WK_ERR_PLUGIN; }

WK_PLUGIN_DEFINE("missingsym", "0.0.1", "test plugin with an unresolved symbol", init, NULL)
