/* cuda bn family: batch_norm and batch_norm_backward through cuDNN's
 * spatial batch norm, for f32, f64, f16 and bf16 inputs of any rank >= 2
 * (seen as [N, C, S, 1]). Outputs match the cpu kernel: save_mean and
 * save_invstd in training (empty in evaluation), running statistics updated
 * in place with the unbiased variance, f16/bf16 statistics in f32 when a
 * parameter is f32. The evaluation-mode backward is not cuDNN's: bn.cu
 * scales the gradient, cuDNN's backward (fed the running statistics)
 * gives the parameter gradients. */
#include <limits.h>
#include <string.h>

#include "cuda_libs.h"

static bool bn_dtype(wk_dtype dt) {
  return dt == WK_F32 || dt == WK_F64 || dt == WK_F16 || dt == WK_BF16;
}

static bool supports_floats(const wk_kernel_ctx *ctx, const wk_value *args) {
  int n = wk_op_num_args(ctx->op);
  for (int i = 0; i < n; i++)
    if (args[i].tag == WK_V_TENSOR && args[i].u.t && !bn_dtype(wk_tensor_dtype(args[i].u.t))) return false;
  return true;
}

/* cuDNN's descriptors for x ([N, C, S, 1]) and the per-channel tensors. */
typedef struct {
  cudnnTensorDescriptor_t x, p;
} bn_descs;

static void bn_descs_free(bn_descs *d) {
  if (d->x) cudnnDestroyTensorDescriptor(d->x);
  if (d->p) cudnnDestroyTensorDescriptor(d->p);
  d->x = d->p = NULL;
}

static wk_status bn_descs_make(const char *op, wk_dtype dt, int64_t N, int64_t C, int64_t S, bn_descs *d) {
  memset(d, 0, sizeof *d);
  if (N > INT_MAX || C > INT_MAX || S > INT_MAX || N * C * S > INT_MAX)
    return wk_error(WK_ERR_UNSUPPORTED, "%s(): inputs of more than %d elements are not supported by cuDNN's batch norm",
                    op, INT_MAX);
  cudnnDataType_t ty = dt == WK_F64    ? CUDNN_DATA_DOUBLE
                       : dt == WK_F16  ? CUDNN_DATA_HALF
                       : dt == WK_BF16 ? CUDNN_DATA_BFLOAT16
                                       : CUDNN_DATA_FLOAT;
  wk_status s = CUDNN_CHECK(op, cudnnCreateTensorDescriptor(&d->x));
  if (!s) s = CUDNN_CHECK(op, cudnnCreateTensorDescriptor(&d->p));
  if (!s) s = CUDNN_CHECK(op, cudnnSetTensor4dDescriptor(d->x, CUDNN_TENSOR_NCHW, ty, (int)N, (int)C, (int)S, 1));
  if (!s) s = CUDNN_CHECK(op, cudnnDeriveBNTensorDescriptor(d->p, d->x, CUDNN_BATCHNORM_SPATIAL));
  if (s) bn_descs_free(d);
  return s;
}

/* A per-channel tensor as cuDNN wants it (pdt, contiguous), or a constant when absent. */
static wk_tensor *param_or(wk_tensor *t, int64_t C, wk_dtype pdt, double v, wk_device dev) {
  if (t) return cuda_lib_prep(t, pdt);
  return wk_full(&C, 1, v, (wk_options){.dtype = pdt, .device = dev});
}

/* Converts *t to dt in place of the reference (no-op when it already is). */
static wk_status to_dtype_own(wk_tensor **t, wk_dtype dt) {
  if (!*t || wk_tensor_dtype(*t) == dt) return WK_OK;
  wk_tensor *r = wk_to_dtype(*t, dt);
  wk_release(*t);
  *t = r;
  return r ? WK_OK : wk_last_error();
}

/* The running statistic as cuDNN updates it: the tensor itself when already
 * pdt and contiguous, else a copy written back after the call. */
static wk_tensor *running_buf(wk_tensor *t, wk_dtype pdt) {
  if (!t) return NULL;
  if (wk_tensor_dtype(t) == pdt && wk_tensor_is_contiguous(t)) return wk_retain(t);
  return cuda_lib_prep(t, pdt);
}

static wk_status k_batch_norm(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "batch_norm";
  wk_tensor *input = WK_ARG_T(0), *weight = WK_ARG_OPT_T(1), *bias = WK_ARG_OPT_T(2);
  wk_tensor *rmean = WK_ARG_OPT_T(3), *rvar = WK_ARG_OPT_T(4);
  bool training = WK_ARG_B(5);
  double momentum = WK_ARG_F(6), eps = WK_ARG_F(7);
  wk_dtype dt = wk_tensor_dtype(input); /* arguments checked by the meta function */
  int nd = wk_tensor_dim(input);
  const int64_t *sz = wk_tensor_sizes(input);
  int64_t N = sz[0], C = sz[1], S = 1;
  for (int i = 2; i < nd; i++) S *= sz[i];
  wk_status s;
  if (eps < CUDNN_BN_MIN_EPSILON)
    return wk_error(WK_ERR_INVALID_ARG, "batch_norm(): eps %g is below cuDNN's minimum %g", eps, CUDNN_BN_MIN_EPSILON);
  wk_dtype sdt = wk_kernel_meta(ctx, 1)->dtype, pdt = dt == WK_F64 ? WK_F64 : WK_F32;
  wk_device dev = ctx->device;
  if ((s = cuda_enter(op, dev))) return s;
  wk_tensor *y = wk_meta_empty(ctx, 0);
  wk_tensor *sm = NULL, *si = NULL, *x = NULL, *w = NULL, *b = NULL, *rm = NULL, *rv = NULL;
  bn_descs d = {0};
  if (!y) return wk_last_error();
  if (!training || wk_tensor_numel(input) == 0) {
    sm = wk_meta_empty(ctx, 1);
    si = wk_meta_empty(ctx, 2);
    if (!sm || !si) goto fail_err;
    if (wk_tensor_numel(input) == 0) goto done; /* nothing to normalise; running stats stay */
  } else {
    sm = wk_empty(&C, 1, (wk_options){.dtype = pdt, .device = dev});
    si = wk_empty(&C, 1, (wk_options){.dtype = pdt, .device = dev});
    if (!sm || !si) goto fail_err;
  }
  if (!(x = cuda_lib_prep(input, dt)) || !(w = param_or(weight, C, pdt, 1.0, dev)) ||
      !(b = param_or(bias, C, pdt, 0.0, dev)))
    goto fail_err;
  if (training) {
    if ((rmean && !(rm = running_buf(rmean, pdt))) || (rvar && !(rv = running_buf(rvar, pdt)))) goto fail_err;
    /* cuDNN takes both running statistics or neither: a scratch one for the missing half */
    if ((rm && !rv && !(rv = wk_full(&C, 1, 1.0, (wk_options){.dtype = pdt, .device = dev}))) ||
        (rv && !rm && !(rm = wk_full(&C, 1, 0.0, (wk_options){.dtype = pdt, .device = dev}))))
      goto fail_err;
  } else if (!(rm = cuda_lib_prep(rmean, pdt)) || !(rv = cuda_lib_prep(rvar, pdt))) {
    goto fail_err;
  }
  cudnnHandle_t h;
  if ((s = cuda_cudnn(op, dev.index, &h)) || (s = bn_descs_make(op, dt, N, C, S, &d))) goto done;
  double one = 1.0, zero_d = 0.0;
  float onef = 1.0f, zerof = 0.0f;
  const void *pone = dt == WK_F64 ? (const void *)&one : (const void *)&onef;
  const void *pzero = dt == WK_F64 ? (const void *)&zero_d : (const void *)&zerof;
  if (training) {
    /* cuDNN blends the running statistics with factor momentum, the variance unbiased as in PyTorch */
    s = CUDNN_CHECK(op, cudnnBatchNormalizationForwardTraining(
                            h, CUDNN_BATCHNORM_SPATIAL, pone, pzero, d.x, wk_tensor_data(x), d.x, wk_tensor_data(y),
                            d.p, wk_tensor_data(w), wk_tensor_data(b), momentum, rm ? wk_tensor_data(rm) : NULL,
                            rv ? wk_tensor_data(rv) : NULL, eps, wk_tensor_data(sm), wk_tensor_data(si)));
    if (s) goto done;
    if (rmean && rm != rmean && !wk_copy_(rmean, rm)) goto fail_err;
    if (rvar && rv != rvar && !wk_copy_(rvar, rv)) goto fail_err;
    if (rmean) wk_tensor_bump_version(rmean);
    if (rvar) wk_tensor_bump_version(rvar);
    if (!(sm = wk_cast_own(sm, sdt)) || !(si = wk_cast_own(si, sdt))) goto fail_err;
  } else {
    s = CUDNN_CHECK(op, cudnnBatchNormalizationForwardInference(
                            h, CUDNN_BATCHNORM_SPATIAL, pone, pzero, d.x, wk_tensor_data(x), d.x, wk_tensor_data(y),
                            d.p, wk_tensor_data(w), wk_tensor_data(b), wk_tensor_data(rm), wk_tensor_data(rv), eps));
    if (s) goto done;
  }
done:
  bn_descs_free(&d);
  wk_release_n((wk_tensor *[]){x, w, b, rm, rv}, 5);
  return wk_kernel_done_n(s, (wk_tensor *[]){y, sm, si}, 3, outs);
fail_err:
  s = wk_last_error();
  goto done;
}

static wk_status k_batch_norm_backward(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "batch_norm_backward";
  wk_tensor *go = WK_ARG_T(0), *input = WK_ARG_T(1), *weight = WK_ARG_OPT_T(2);
  wk_tensor *rmean = WK_ARG_OPT_T(3), *rvar = WK_ARG_OPT_T(4), *smean = WK_ARG_OPT_T(5), *sinv = WK_ARG_OPT_T(6);
  bool train = WK_ARG_B(7);
  double eps = WK_ARG_F(8);
  bool mask[3];
  wk_output_mask(&args[9], mask);
  wk_dtype dt = wk_tensor_dtype(input);
  if (!bn_dtype(dt) || wk_tensor_dtype(go) != dt)
    return wk_error(WK_ERR_DTYPE, "%s(): expected floating-point input and grad_out of one dtype, got %s and %s", op,
                    wk_dtype_name(dt), wk_dtype_name(wk_tensor_dtype(go)));
  int nd = wk_tensor_dim(input); /* shapes, options and parameters checked by the meta function */
  const int64_t *sz = wk_tensor_sizes(input);
  int64_t N = sz[0], C = sz[1], S = 1;
  for (int i = 2; i < nd; i++) S *= sz[i];
  wk_status s;
  wk_dtype pdt = dt == WK_F64 ? WK_F64 : WK_F32, gdt = wk_kernel_meta(ctx, 1)->dtype;
  wk_device dev = ctx->device;
  if ((s = cuda_enter(op, dev))) return s;
  wk_tensor *gi = NULL, *gw = NULL, *gb = NULL, *x = NULL, *dy = NULL, *w = NULL, *mean = NULL, *inv = NULL, *dx = NULL;
  bn_descs d = {0};
  if (mask[0] && !(gi = cuda_lib_zeros(op, sz, nd, dt, dev))) goto fail_err;
  if (mask[1] && !(gw = cuda_lib_zeros(op, &C, 1, pdt, dev))) goto fail_err;
  if (mask[2] && !(gb = cuda_lib_zeros(op, &C, 1, pdt, dev))) goto fail_err;
  if (wk_tensor_numel(input) == 0 || !(mask[0] || mask[1] || mask[2])) goto out;
  if (!(x = cuda_lib_prep(input, dt)) || !(dy = cuda_lib_prep(go, dt)) || !(w = param_or(weight, C, pdt, 1.0, dev)))
    goto fail_err;
  cudnnHandle_t h;
  if ((s = cuda_cudnn(op, dev.index, &h)) || (s = bn_descs_make(op, dt, N, C, S, &d))) goto fail;
  cudaStream_t st = cuda_current_stream(dev.index);
  if (train) {
    if (!(mean = cuda_lib_prep(smean, pdt)) || !(inv = cuda_lib_prep(sinv, pdt))) goto fail_err;
  } else {
    wk_tensor *var = cuda_lib_prep(rvar, pdt);
    mean = cuda_lib_prep(rmean, pdt);
    inv = var ? wk_empty(&C, 1, (wk_options){.dtype = pdt, .device = dev}) : NULL;
    if (!var || !mean || !inv) {
      wk_release(var);
      goto fail_err;
    }
    s = (wk_status)cuda_launch_bn_invstd(pdt == WK_F64, wk_tensor_data(var), wk_tensor_data(inv), eps, C, st);
    wk_release(var);
    if (s) goto fail;
  }
  /* Training: cuDNN gives all three. Evaluation: its parameter gradients
   * with the running statistics as the saved ones are the right ones (sums
   * of dy and of dy * xhat); its input gradient is not, and bn.cu's
   * replaces it. */
  bool need_params = mask[1] || mask[2];
  if (train || need_params) {
    dx = gi ? wk_retain(gi) : wk_empty(sz, nd, (wk_options){.dtype = dt, .device = dev});
    wk_tensor *dw = gw ? wk_retain(gw) : wk_empty(&C, 1, (wk_options){.dtype = pdt, .device = dev});
    wk_tensor *db = gb ? wk_retain(gb) : wk_empty(&C, 1, (wk_options){.dtype = pdt, .device = dev});
    double one = 1.0, zero_d = 0.0;
    float onef = 1.0f, zerof = 0.0f;
    const void *pone = dt == WK_F64 ? (const void *)&one : (const void *)&onef;
    const void *pzero = dt == WK_F64 ? (const void *)&zero_d : (const void *)&zerof;
    if (!dx || !dw || !db)
      s = wk_last_error();
    else
      s = CUDNN_CHECK(op, cudnnBatchNormalizationBackward(
                              h, CUDNN_BATCHNORM_SPATIAL, pone, pzero, pone, pzero, d.x, wk_tensor_data(x), d.x,
                              wk_tensor_data(dy), d.x, wk_tensor_data(dx), d.p, wk_tensor_data(w), wk_tensor_data(dw),
                              wk_tensor_data(db), eps, wk_tensor_data(mean), wk_tensor_data(inv)));
    wk_release(dw);
    wk_release(db);
    if (s) goto fail;
  }
  if (!train && gi) /* after cuDNN's write on the same stream */
    s = (wk_status)cuda_launch_bn_eval_grad(cuda_dtype_code(dt), wk_tensor_data(dy), weight ? wk_tensor_data(w) : NULL,
                                            wk_tensor_data(inv), wk_tensor_data(gi), N, C, S, st);
  if (s) goto fail;
out:
  if ((s = to_dtype_own(&gw, gdt)) || (s = to_dtype_own(&gb, gdt))) goto fail;
  bn_descs_free(&d);
  wk_release(x);
  wk_release(dy);
  wk_release(w);
  wk_release(mean);
  wk_release(inv);
  wk_release(dx);
  wk_kernel_put_opt(outs, (wk_tensor *[]){gi, gw, gb}, 3);
  return WK_OK;
fail_err:
  s = wk_last_error();
fail:
  bn_descs_free(&d);
  wk_release(x);
  wk_release(dy);
  wk_release(w);
  wk_release(mean);
  wk_release(inv);
  wk_release(dx);
  wk_release(gi);
  wk_release(gw);
  wk_release(gb);
  return s;
}

wk_status cuda_register_bn(void) {
  wk_status s = cuda_reg("batch_norm", k_batch_norm, supports_floats, NULL, "cuda.batch_norm_cudnn");
  if (!s)
    s = cuda_reg("batch_norm_backward", k_batch_norm_backward, supports_floats, NULL, "cuda.batch_norm_backward_cudnn");
  return s;
}
