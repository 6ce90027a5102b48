/* cuda cumsum: a given dtype converts the input first; the result's dtype is
 * the core's meta function's (integers and bools give int64); each line is
 * scanned in order. cumprod, logcumsumexp, cummax and cummin likewise, by the
 * SDK's line formulas. */
#include "cuda_kernels.h"
#include <wick/sdk/scan.h>

static wk_status k_cumsum(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *x = WK_ARG_T(0);
  wk_dtype dtype = args[2].tag == WK_V_DTYPE ? args[2].u.dtype : WK_DTYPE_DEFAULT;
  int nd = wk_tensor_dim(x), d = (int)(WK_ARG_I(1) < 0 ? WK_ARG_I(1) + (nd > 0 ? nd : 1) : WK_ARG_I(1));
  const wk_meta_out *mo = wk_kernel_meta(ctx, 0);
  if (!mo) return wk_error(WK_ERR_INTERNAL, "cumsum: no meta function decided the result");
  wk_status s = cuda_enter("cumsum", ctx->device);
  if (s) return s;
  wk_tensor *in = dtype ? wk_kernel_cast(x, dtype) : wk_retain(x);
  if (!in) return wk_last_error();
  wk_dtype dt = wk_tensor_dtype(in);
  bool isint = !wk_dtype_is_floating(dt);
  wk_dtype rt = mo->dtype;
  wk_tensor *c = cuda_dense(in, isint ? WK_I64 : dt, ctx->device);
  wk_release(in);
  wk_tensor *out = c ? cuda_new(wk_tensor_sizes(c), nd, isint ? WK_I64 : rt, ctx->device) : NULL;
  if (!out) {
    wk_release(c);
    return wk_last_error();
  }
  const int64_t *sz = wk_tensor_sizes(c);
  int64_t outer = 1, inner = 1, len = nd > 0 ? sz[d] : 1;
  for (int i = 0; i < d; i++) outer *= sz[i];
  for (int i = d + 1; i < nd; i++) inner *= sz[i];
  s = (wk_status)cuda_launch_cumsum(wk_tensor_data(out), cuda_dt(wk_tensor_dtype(out)), wk_tensor_data(c),
                                    cuda_dt(wk_tensor_dtype(c)), outer, len, inner, cuda_stream(ctx->device));
  wk_release(c);
  if (s) {
    wk_release(out);
    return s;
  }
  return wk_kernel_out1(outs, wk_cast_own(out, rt));
}

/* cumprod (its dtype converts the input first), logcumsumexp, cummax, cummin:
 * a dense double (int64) copy, one thread per line, the result cast back. */
static wk_status k_scan2(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  int op = (int)(intptr_t)ctx->user;
  const char *name = WK_OPNAME;
  wk_tensor *x = WK_ARG_T(0);
  int nd = wk_tensor_dim(x), d = (int)(WK_ARG_I(1) < 0 ? WK_ARG_I(1) + (nd > 0 ? nd : 1) : WK_ARG_I(1));
  const wk_meta_out *mo = wk_kernel_meta(ctx, 0);
  if (!mo) return wk_error(WK_ERR_INTERNAL, "%s: no meta function decided the result", name);
  wk_status s = cuda_enter(name, ctx->device);
  if (s) return s;
  wk_dtype rt = mo->dtype, cd = wk_dtype_is_floating(rt) ? WK_F64 : WK_I64;
  bool extreme = op == WK_SCAN_cummax || op == WK_SCAN_cummin;
  wk_tensor *given = op == WK_SCAN_cumprod && args[2].tag == WK_V_DTYPE ? wk_kernel_cast(x, args[2].u.dtype) : wk_retain(x);
  wk_tensor *c = given ? cuda_dense(given, cd, ctx->device) : NULL;
  wk_release(given);
  wk_tensor *y = c ? cuda_new(wk_tensor_sizes(c), nd, cd, ctx->device) : NULL;
  wk_tensor *idx = y && extreme ? cuda_new(wk_tensor_sizes(c), nd, WK_I64, ctx->device) : NULL;
  if (!y || (extreme && !idx)) {
    wk_release_n((wk_tensor *const[]){c, y, idx}, 3);
    return wk_last_error();
  }
  const int64_t *sz = wk_tensor_sizes(c);
  int64_t outer = 1, inner = 1, len = nd > 0 ? sz[d] : 1;
  for (int i = 0; i < d; i++) outer *= sz[i];
  for (int i = d + 1; i < nd; i++) inner *= sz[i];
  s = (wk_status)cuda_launch_scan2(op, wk_tensor_data(y), idx ? (int64_t *)wk_tensor_data(idx) : NULL, wk_tensor_data(c),
                                   cd == WK_I64, outer, len, inner, cuda_stream(ctx->device));
  wk_release(c);
  if (s) {
    wk_release_n((wk_tensor *const[]){y, idx}, 2);
    return s;
  }
  if (rt != cd) y = wk_cast_own(y, rt);
  return extreme ? wk_kernel_done_n(WK_OK, (wk_tensor *const[]){y, idx}, 2, outs) : wk_kernel_out1(outs, y);
}

wk_status cuda_register_scan(void) {
  static const struct {
    const char *op;
    int scan;
  } rows[] = {{"cumprod", WK_SCAN_cumprod},
              {"logcumsumexp", WK_SCAN_logcumsumexp},
              {"cummax", WK_SCAN_cummax},
              {"cummin", WK_SCAN_cummin}};
  wk_status s = cuda_reg("cumsum", k_cumsum, NULL, NULL, "cuda.cumsum");
  for (size_t i = 0; i < sizeof rows / sizeof rows[0] && !s; i++)
    s = cuda_reg(rows[i].op, k_scan2, NULL, (void *)(intptr_t)rows[i].scan, "cuda.scan");
  return s;
}
