/* Test plugin: a well-behaved third party: declares a new op with an
 * unboxed kernel and offers a service. */
#include <wick/sdk.h>

static wk_tensor *twice_plus(wk_tensor *x, double c) {
  wk_tensor *d = wk_add(x, x);
  wk_tensor *r = wk_add_scalar(d, c);
  wk_release(d);
  return r;
}

typedef struct {
  size_t struct_size;
  int (*version)(void);
} goodop_iface;
static int ver(void) { return 7; }
static const goodop_iface iface = {sizeof iface, ver};
static int g_shutdowns;

static wk_status init(void) {
  if (!wk_op_declare("goodop.twice_plus(Tensor self, float c=0) -> Tensor", WK_TAG_POINTWISE)) return wk_last_error();
  wk_status s = wk_kernel_register_unboxed("goodop.twice_plus", WK_DEVICE_CPU, WK_PRIORITY_REFERENCE,
                                           (void (*)(void))twice_plus, "goodop.twice_plus");
  if (!s) s = wk_service_register("goodop", 2, &iface);
  return s;
}
static void shutdown(void) { g_shutdowns++; }

WK_PLUGIN_DEFINE("goodop", "1.2.3", "test plugin adding goodop.twice_plus", init, shutdown)
