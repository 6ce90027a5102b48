/* Test plugin: a well-behaved third party: declares new ops with unboxed
 * kernels (a legacy "goodop.name" one and a namespaced op with an overload,
 * "goodop::scaled" / "goodop::scaled.v2") and offers a service. */
#include <wick/sdk.h>

static wk_tensor *twice_plus(wk_tensor *x, double c) {
  wk_tensor *d = wk_add(x, x);
  wk_tensor *r = wk_add_scalar(d, c);
  wk_release(d);
  return r;
}

static wk_tensor *scaled(wk_tensor *x, double s) { return wk_mul_scalar(x, s); }
static wk_tensor *scaled_v2(wk_tensor *x, double s, double shift) {
  wk_tensor *m = wk_mul_scalar(x, s);
  wk_tensor *r = wk_add_scalar(m, shift);
  wk_release(m);
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
  if (!s && !wk_op_declare("goodop::scaled(Tensor self, float s=2) -> Tensor", WK_TAG_COMPOSITE)) s = wk_last_error();
  if (!s && !wk_op_declare("goodop::scaled.v2(Tensor self, float s=2, float shift=1) -> Tensor", WK_TAG_COMPOSITE))
    s = wk_last_error();
  if (!s) s = wk_kernel_register_unboxed("goodop::scaled", WK_DEVICE_CPU, WK_PRIORITY_REFERENCE, (void (*)(void))scaled,
                                         "goodop::scaled");
  if (!s)
    s = wk_kernel_register_unboxed("goodop::scaled.v2", WK_DEVICE_CPU, WK_PRIORITY_REFERENCE,
                                   (void (*)(void))scaled_v2, "goodop::scaled.v2");
  if (!s) s = wk_service_register("goodop", 2, &iface);
  return s;
}
static void shutdown(void) { g_shutdowns++; }

WK_PLUGIN_DEFINE("goodop", "1.2.3", "test plugin adding goodop.twice_plus", init, shutdown)
