/* Test plugin: declares ops (its own, namespaced, and two that exist
 * already), registers a kernel, a service and a device type, then fails its
 * init; the core must remove what it alone registered, keep the shared ops,
 * and list the plugin as failed. With WICK_TEST_INITFAIL_SILENT set, init
 * fails with a bare status and no message. */
#include <stdlib.h>
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
  if (getenv("WICK_TEST_INITFAIL_SILENT")) return WK_ERR_UNSUPPORTED; /* no wk_error: the core names us */
  static const char *const schemas[] = {
      "initfail::probe(Tensor self) -> Tensor", "initfail::probe.v2(Tensor self, float k=1) -> Tensor",
      "initfail.legacy(Tensor self) -> Tensor",
      "neg(Tensor self) -> Tensor",                                 /* the core's: stays */
      "goodop.twice_plus(Tensor self, float c=0) -> Tensor",        /* goodop's (when loaded first): stays */
  };
  for (size_t i = 0; i < sizeof schemas / sizeof *schemas; i++)
    if (!wk_op_declare(schemas[i], 0)) return wk_last_error();
  wk_kernel_desc d = {sizeof d, "neg", WK_DEVICE_CPU, 1000, evil, NULL, NULL, "initfail.evil"};
  wk_status s = wk_kernel_register(&d);
  wk_kernel_desc p = {sizeof p, "initfail::probe", WK_DEVICE_CPU, 0, evil, NULL, NULL, "initfail.probe"};
  if (!s) s = wk_kernel_register(&p);
  if (!s) s = wk_service_register("initfail.svc", 1, &svc);
  wk_device_iface dev = {sizeof dev, (WK_ABI_MAJOR << 16) | WK_ABI_MINOR, "initfaildev", NULL, count, alloc, dfree, copy, NULL, NULL};
  if (!s) s = wk_device_type_register(&dev, NULL);
  if (s) return s;
  return wk_error(WK_ERR_PLUGIN, "initfail: cannot find its accelerator (deliberate test failure)");
}

WK_PLUGIN_DEFINE("initfail", "0.0.1", "test plugin whose init fails", init, NULL)
