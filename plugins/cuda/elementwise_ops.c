/* cuda pointwise binary family: add/sub (alpha), mul, div (rounding modes),
 * maximum, minimum, pow, logical and/or, comparisons, where and
 * gelu_backward, each in the forms the cpu plugin registers (functional, in
 * place, out=, Scalar), with PyTorch's type promotion done exactly as the
 * cpu plugin does it: operands are converted to a compute dtype (f32, f64,
 * i64 or bool) on the device, the kernel runs, the result is converted to
 * the result dtype and delivered. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cuda_kernels.h"

#define is_compare wk_bop_is_compare
#define is_logical wk_bop_is_logical

/* True when some element of the i64 tensor b is 0 (integer division check). */
static wk_status has_zero(wk_tensor *b, bool *out) {
  wk_tensor *z = wk_eq_scalar(b, 0);
  wk_tensor *a = wk_any(z);
  wk_release(z);
  double v = 0;
  wk_status s = a ? wk_item(a, &v) : wk_last_error();
  wk_release(a);
  *out = v != 0;
  return s;
}

/* op(self, other) into a new tensor of the result dtype rt, which the core's
 * meta function decided after checking the arguments (the cpu plugin's
 * compute(), on the device). */
static wk_tensor *compute(const char *opname, int op, double alpha_f, int64_t alpha_i, wk_tensor *self,
                          const wk_value *other, wk_dtype rt, wk_device dev) {
  wk_dtype cd = wk_bop_compute_dtype(op, rt);
  wk_tensor *a = cuda_operand(self, cd, dev), *b = NULL, *res = NULL;
  double bf = 0;
  int64_t bi = 0;
  bool scalar = other->tag != WK_V_TENSOR;
  if (!scalar) {
    b = cuda_operand(other->u.t, cd, dev);
  } else if (other->tag == WK_V_INT && !wk_dtype_is_floating(cd)) {
    bi = other->u.i;
  } else {
    bf = wk_value_as_f64(other);
    /* the scalar rounded to the compute dtype, as the cpu's 0-dim tensor is */
    unsigned char buf[8];
    wk_store_f64(buf, cd, bf);
    bf = wk_load_f64(buf, cd);
    bi = wk_load_i64(buf, cd);
  }
  int64_t shape[WK_MAX_DIMS];
  int nd = 0;
  if (!a || (!scalar && !b)) goto done;
  if (scalar) {
    nd = wk_tensor_dim(a);
    memcpy(shape, wk_tensor_sizes(a), sizeof(int64_t) * (size_t)nd);
  } else {
    wk_tensor *ts[2] = {a, b};
    if (wk_broadcast_shapes(opname, ts, 2, shape, &nd)) goto done;
  }
  if (cd == WK_I64 && (op == WK_BOP_div_trunc || op == WK_BOP_div_floor || op == WK_BOP_fmod || op == WK_BOP_remainder)) {
    bool zero = scalar && bi == 0;
    if (!scalar && has_zero(b, &zero)) goto done;
    if (zero) {
      wk_error(WK_ERR_INVALID_ARG, "%s: ZeroDivisionError (integer division by zero)", opname);
      goto done;
    }
  }
  res = cuda_new(shape, nd, is_compare(op) || is_logical(op) ? WK_BOOL : cd, dev);
  if (!res) goto done;
  cuda_strided la = cuda_layout(a, shape, nd), lb = b ? cuda_layout(b, shape, nd) : la;
  if (cuda_launch_binary(op, cuda_dt(cd), wk_tensor_data(res), wk_tensor_data(a), la, b ? wk_tensor_data(b) : NULL, lb,
                         bf, bi, alpha_f, alpha_i, wk_tensor_numel(res), cuda_stream(dev))) {
    wk_release(res);
    res = NULL;
    goto done;
  }
  if (!is_compare(op) && !is_logical(op) && rt != cd) res = cuda_cast_own(res, rt);
done:
  wk_release(a);
  wk_release(b);
  return res;
}

static wk_status k_binary(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const wk_binary_variant *info = ctx->user;
  wk_status s = cuda_enter(WK_OPNAME, ctx->device);
  if (s) return s;
  wk_binary_call call;
  wk_binary_call_read(&call, info, args);
  int op = call.op;
  wk_tensor *target = info->mode == CUDA_INPLACE ? WK_ARG_T(0) : info->mode == CUDA_OUT ? WK_ARG_T(call.out_index) : NULL;
  /* Comparisons and logical ops compute in the operands' promoted dtype. */
  wk_dtype rt = wk_kernel_meta(ctx, 0)->dtype;
  if (is_compare(op) || is_logical(op)) rt = wk_result_type(args, 2);
  wk_tensor *r = compute(wk_bop_name(op), op, call.alpha_f, call.alpha_i, WK_ARG_T(0), &args[1], rt, ctx->device);
  return cuda_deliver(WK_OPNAME, info->mode, r, target, outs);
}

/* where(cond, a, b): promoted dtype of a and b, broadcast over all three. */
static wk_status k_where(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *cond = WK_ARG_T(0);
  wk_device dev = ctx->device;
  wk_status s = cuda_enter("where", dev);
  if (s) return s;
  wk_dtype rt = wk_result_type(args + 1, 2);
  wk_tensor *cb = cuda_operand(cond, WK_BOOL, dev), *a = cuda_operand(WK_ARG_T(1), rt, dev),
            *b = cuda_operand(WK_ARG_T(2), rt, dev), *res = NULL;
  int64_t shape[WK_MAX_DIMS];
  int nd = 0;
  if (!cb || !a || !b) s = wk_last_error();
  wk_tensor *ts[3] = {cb, a, b};
  if (!s) s = wk_broadcast_shapes("where", ts, 3, shape, &nd);
  if (!s && !(res = cuda_new(shape, nd, rt, dev))) s = wk_last_error();
  if (!s)
    s = (wk_status)cuda_launch_where((int)wk_dtype_size(rt), wk_tensor_data(res), wk_tensor_data(cb),
                                     cuda_layout(cb, shape, nd), wk_tensor_data(a), cuda_layout(a, shape, nd), 0,
                                     wk_tensor_data(b), cuda_layout(b, shape, nd), 0, wk_tensor_numel(res),
                                     cuda_stream(dev));
  wk_release_n((wk_tensor *const[]){cb, a, b}, 3);
  return wk_kernel_done(s, res, outs);
}

/* Fused pointwise backward ops: gelu_backward(grad_output, self,
 * approximate) and, where the core declares them, threshold_backward,
 * sigmoid_backward and tanh_backward; computed in f32 (f64 for f64), result
 * in the promoted floating dtype, as the cpu kernels. kind: -1 gelu, else
 * CUDA_PB_*. */
static wk_status pointwise_backward(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs, int kind,
                                    bool tanh_approx) {
  const char *op = WK_OPNAME;
  wk_tensor *g = WK_ARG_T(0), *x = WK_ARG_T(1);
  wk_dtype rt = wk_kernel_meta(ctx, 0)->dtype; /* floating: the meta function checked */
  wk_device dev = ctx->device;
  wk_status s = cuda_enter(op, dev);
  if (s) return s;
  wk_dtype cd = rt == WK_F64 ? WK_F64 : WK_F32;
  wk_tensor *gg = cuda_operand(g, cd, dev), *xx = cuda_operand(x, cd, dev), *res = NULL;
  int64_t shape[WK_MAX_DIMS];
  int nd = 0;
  wk_tensor *ts[2] = {gg, xx};
  char what[64];
  snprintf(what, sizeof what, "%s()", op);
  if (!gg || !xx) s = wk_last_error();
  if (!s) s = wk_broadcast_shapes(what, ts, 2, shape, &nd);
  if (!s && !(res = cuda_new(shape, nd, cd, dev))) s = wk_last_error();
  if (!s && kind < 0)
    s = (wk_status)cuda_launch_gelu_backward(cuda_dt(cd), wk_tensor_data(res), wk_tensor_data(gg),
                                             cuda_layout(gg, shape, nd), wk_tensor_data(xx), cuda_layout(xx, shape, nd),
                                             tanh_approx, wk_tensor_numel(res), cuda_stream(dev));
  else if (!s)
    s = (wk_status)cuda_launch_pointwise_backward(
        kind, cuda_dt(cd), wk_tensor_data(res), wk_tensor_data(gg), cuda_layout(gg, shape, nd), wk_tensor_data(xx),
        cuda_layout(xx, shape, nd), kind == CUDA_PB_THRESHOLD ? WK_ARG_F(2) : 0, wk_tensor_numel(res),
        cuda_stream(dev));
  wk_release(gg);
  wk_release(xx);
  if (s) {
    wk_release(res);
    return s;
  }
  res = cuda_cast_own(res, rt);
  if (!res) return wk_last_error();
  outs[0] = WK_VT(res);
  return WK_OK;
}

static wk_status k_gelu_backward(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return pointwise_backward(ctx, args, outs, -1, strcmp(args[2].u.s, "tanh") == 0);
}

static wk_status k_pointwise_backward(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return pointwise_backward(ctx, args, outs, (int)(intptr_t)ctx->user, false);
}

wk_status cuda_register_elementwise(void) {
  wk_status s = WK_OK;
  for (int i = 0; i < WK_BINARY_VARIANT_COUNT && !s; i++)
    s = cuda_reg(wk_binary_variants[i].name, k_binary, NULL, (void *)&wk_binary_variants[i], "cuda.binary");
  if (!s) s = cuda_reg("where.self", k_where, NULL, NULL, "cuda.where");
  if (!s) s = cuda_reg("gelu_backward", k_gelu_backward, NULL, NULL, "cuda.gelu_backward");
  /* fused backward ops of newer cores: registered when the core declares them */
  static const struct {
    const char *name;
    int kind;
  } pb[] = {{"threshold_backward", CUDA_PB_THRESHOLD},
            {"sigmoid_backward", CUDA_PB_SIGMOID},
            {"tanh_backward", CUDA_PB_TANH}};
  for (size_t i = 0; i < sizeof pb / sizeof pb[0] && !s; i++) {
    if (!wk_op_find(pb[i].name)) {
      wk_clear_error();
      continue;
    }
    s = cuda_reg(pb[i].name, k_pointwise_backward, NULL, (void *)(intptr_t)pb[i].kind, "cuda.pointwise_backward");
  }
  return s;
}
