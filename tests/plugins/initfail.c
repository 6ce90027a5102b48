/* Test plugin: registers a kernel, a service and a device type, then fails
 * its init; the core must remove all three and list the plugin as failed. */
#include <wick/sdk.h>

static wk_status evil(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return wk_error(WK_ERR_INTERNAL, "the kernel of a failed plugin ran");
}
static const struct { size_t struct_size; } svc = {sizeof svc};
static int count(void *u) { return 1; }
static void *alloc(void *u, int i, size_t n) { return NULL; }
static void dfree(void *u, int i, void *p) {}
static wk_status copy(void *u, void *d, wk_device dd, const void *s, wk_device sd, size_t n) { return WK_OK; }

static wk_status init(void) {
  wk_kernel_desc d = {sizeof d, "neg", WK_DEVICE_CPU, 1000, evil, NULL, NULL, "initfail.evil"};
  wk_status s = wk_kernel_register(&d);
  if (!s) s = wk_service_register("initfail.svc", 1, &svc);
  wk_device_iface dev = {sizeof dev, (WK_ABI_MAJOR << 16) | WK_ABI_MINOR, "initfaildev", NULL, count, alloc, dfree, copy, NULL, NULL};
  if (!s) s = wk_device_type_register(&dev, NULL);
  if (s) return s;
  return wk_error(WK_ERR_PLUGIN, "initfail: cannot find its accelerator (deliberate test failure)");
}

WK_PLUGIN_DEFINE("initfail", "0.0.1", "test plugin whose init fails", init, NULL)
