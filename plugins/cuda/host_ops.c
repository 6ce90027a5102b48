/* cuda fallbacks through the host for the ops without device kernels yet
 * (sort, topk, pad, pad_backward): the tensor arguments are copied to the
 * cpu, the cpu kernel runs (same checks, messages and results), and the
 * tensor results come back to the device. Correct and slow: each call
 * synchronises and crosses PCIe twice; replace one by a device kernel by
 * registering it in its own family (a later registration wins a tie). */
#include <string.h>

#include "cuda_kernels.h"

static wk_status k_via_host(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_op *op = ctx->op;
  int n = wk_op_num_args(op), nouts = wk_op_num_outs(op);
  wk_value a[WK_MAX_ARGS], o[WK_MAX_OUTS];
  wk_tensor *moved[WK_MAX_ARGS];
  int nm = 0;
  wk_status s = cuda_enter(wk_op_name(op), ctx->device);
  for (int i = 0; i < n && !s; i++) {
    a[i] = args[i];
    if (args[i].tag == WK_V_TENSOR && args[i].u.t) {
      wk_tensor *h = wk_to_device(args[i].u.t, wk_cpu());
      if (!h)
        s = wk_last_error();
      else
        a[i] = WK_VT(moved[nm++] = h);
    }
  }
  if (!s) s = wk_op_call(op, a, n, o);
  for (int i = 0; i < nm; i++) wk_release(moved[i]);
  if (s) return s;
  for (int i = 0; i < nouts; i++) {
    outs[i] = o[i];
    if (o[i].tag != WK_V_TENSOR || !o[i].u.t) continue;
    wk_tensor *d = s ? NULL : wk_to_device(o[i].u.t, ctx->device);
    if (!d && !s) s = wk_last_error();
    wk_release(o[i].u.t);
    outs[i] = d ? WK_VT(d) : WK_VNONE;
  }
  if (s)
    for (int i = 0; i < nouts; i++)
      if (outs[i].tag == WK_V_TENSOR) wk_release(outs[i].u.t);
  return s;
}

wk_status cuda_register_host(void) {
  static const char *const ops[] = {"sort", "topk", "pad", "pad_backward"};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
    wk_status s = cuda_reg(ops[i], k_via_host, NULL, NULL, "cuda.via_host");
    if (s) return s;
  }
  return WK_OK;
}
