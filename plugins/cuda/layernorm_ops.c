/* cuda layer_norm and layer_norm_backward: the arguments, the saved
 * statistics' shape and dtype and the gradients' dtypes were decided by the
 * ops' meta functions; output_mask handling; f16/bf16 compute in f32. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cuda_kernels.h"

/* A [n] f64 tensor (consumed) reshaped and converted (NULL on error). */
static wk_tensor *finish_stat(wk_tensor *t, const int64_t *shape, int nd, wk_dtype dt) {
  wk_tensor *v = t ? wk_reshape(t, shape, nd) : NULL;
  wk_release(t);
  wk_tensor *r = v ? wk_to_dtype(v, dt) : NULL;
  wk_release(v);
  return r;
}

static wk_status k_layer_norm(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "layer_norm";
  wk_tensor *input = WK_ARG_T(0), *weight = WK_ARG_OPT_T(2), *bias = WK_ARG_OPT_T(3);
  const int64_t *ns = args[1].u.ints;
  int k = args[1].len;
  double eps = WK_ARG_F(4);
  int64_t M, N;
  (void)ns;
  wk_norm_rows(input, k, &M, &N); /* M rows of N: the normalized_shape's k trailing dims */
  wk_status s = cuda_enter(op, ctx->device);
  if (s) return s;
  wk_device dev = ctx->device;
  int nd = wk_tensor_dim(input);
  const wk_meta_out *sm = wk_kernel_meta(ctx, 1); /* mean/rstd: shape and dtype */
  const int64_t *ssz = sm->sizes;
  wk_dtype dt = wk_tensor_dtype(input), cd = dt == WK_F64 ? WK_F64 : WK_F32, sdt = sm->dtype;
  wk_tensor *x = cuda_dense(input, cd, dev), *w = weight ? cuda_dense(weight, cd, dev) : NULL,
            *b = bias ? cuda_dense(bias, cd, dev) : NULL;
  wk_tensor *y = x ? cuda_new(wk_tensor_sizes(input), nd, cd, dev) : NULL;
  wk_tensor *mt = y ? cuda_new(&M, 1, WK_F64, dev) : NULL, *rt = mt ? cuda_new(&M, 1, WK_F64, dev) : NULL;
  if (!rt || (weight && !w) || (bias && !b)) {
    s = wk_last_error();
  } else if (N == 0) { /* no elements per row: NaN statistics, as the cpu */
    s = wkx_fill_(mt, WK_VF(NAN)) && wkx_fill_(rt, WK_VF(NAN)) ? WK_OK : wk_last_error();
  } else {
    s = (wk_status)cuda_launch_layer_norm(cuda_dt(cd), wk_tensor_data(y), wk_tensor_data(x),
                                          w ? wk_tensor_data(w) : NULL, b ? wk_tensor_data(b) : NULL, M, N, eps,
                                          wk_tensor_data(mt), wk_tensor_data(rt), cuda_stream(dev));
  }
  wk_release(x);
  wk_release(w);
  wk_release(b);
  if (!s) {
    y = wk_cast_own(y, dt);
    mt = finish_stat(mt, ssz, nd, sdt);
    rt = finish_stat(rt, ssz, nd, sdt);
    if (!y || !mt || !rt) s = wk_last_error();
  }
  if (s) {
    wk_release(y);
    wk_release(mt);
    wk_release(rt);
    return s;
  }
  outs[0] = WK_VT(y);
  outs[1] = WK_VT(mt);
  outs[2] = WK_VT(rt);
  return WK_OK;
}

static wk_status k_layer_norm_backward(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "layer_norm_backward";
  wk_lnb_args a; /* checked by the meta function; SDK kernel_util.h */
  wk_lnb_args_of(&a, args);
  const int64_t M = a.rows, N = a.cols;
  wk_status s = cuda_enter(op, ctx->device);
  if (s) return s;
  wk_device dev = ctx->device;
  int nd = wk_tensor_dim(a.input);
  wk_dtype dt = wk_tensor_dtype(a.input), cd = dt == WK_F64 ? WK_F64 : WK_F32;
  wk_dtype wdt = wk_kernel_meta(ctx, 1)->dtype, bdt = wk_kernel_meta(ctx, 2)->dtype;
  wk_tensor *x = cuda_dense(a.input, cd, dev), *g = x ? cuda_dense(a.go, cd, dev) : NULL;
  wk_tensor *w = g && a.mask[0] && a.weight ? cuda_dense(a.weight, cd, dev) : NULL;
  wk_tensor *mean = g ? cuda_dense(a.mean, WK_F64, dev) : NULL, *rstd = mean ? cuda_dense(a.rstd, WK_F64, dev) : NULL;
  wk_tensor *gi = NULL, *gw = NULL, *gb = NULL;
  if (!rstd || (a.mask[0] && a.weight && !w)) goto fail;
  if (a.mask[0] && !(gi = cuda_new(wk_tensor_sizes(a.input), nd, cd, dev))) goto fail;
  if (a.mask[1] && !(gw = wk_zeros(&N, 1, (wk_options){.dtype = WK_F64, .device = dev}))) goto fail;
  if (a.mask[2] && !(gb = wk_zeros(&N, 1, (wk_options){.dtype = WK_F64, .device = dev}))) goto fail;
  if ((s = (wk_status)cuda_launch_layer_norm_backward(
           cuda_dt(cd), gi ? wk_tensor_data(gi) : NULL, gw ? wk_tensor_data(gw) : NULL, gb ? wk_tensor_data(gb) : NULL,
           wk_tensor_data(g), wk_tensor_data(x), w ? wk_tensor_data(w) : NULL, wk_tensor_data(mean),
           wk_tensor_data(rstd), M, N, cuda_stream(dev))))
    goto done;
  wk_release(x);
  wk_release(g);
  wk_release(w);
  wk_release(mean);
  wk_release(rstd);
  x = g = w = mean = rstd = NULL;
  gi = wk_cast_own(gi, dt);
  gw = finish_stat(gw, a.ns, a.k, wdt);
  gb = finish_stat(gb, a.ns, a.k, bdt);
done:
  wk_release_n((wk_tensor *[]){x, g, w, mean, rstd}, 5);
  return wk_kernel_done_opt(s, (wk_tensor *[]){gi, gw, gb}, a.mask, 3, outs);
fail:
  s = wk_last_error();
  goto done;
}

wk_status cuda_register_layernorm(void) {
  wk_status s = cuda_reg("layer_norm", k_layer_norm, NULL, NULL, "cuda.layer_norm");
  if (!s) s = cuda_reg("layer_norm_backward", k_layer_norm_backward, NULL, NULL, "cuda.layer_norm_backward");
  return s;
}
