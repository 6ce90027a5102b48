/* cuda softmax family: softmax, log_softmax (optional dtype converts the
 * input first) and softmax_backward_data / log_softmax_backward_data; the
 * arguments were checked by the ops' meta functions; f16/bf16 compute in f32. */
#include "cuda_kernels.h"

/* dim wrapped into [0, ndim) (already checked). */
static int wrap_dim(int64_t dim, int ndim) { return (int)(dim < 0 ? dim + (ndim > 0 ? ndim : 1) : dim); }

/* outer, C, inner of a shape around dim d (0-dim: 1, 1, 1). */
static void split3(const wk_tensor *t, int d, int64_t *outer, int64_t *C, int64_t *inner) {
  int nd = wk_tensor_dim(t);
  const int64_t *sz = wk_tensor_sizes(t);
  *outer = *inner = 1;
  *C = nd ? sz[d] : 1;
  for (int i = 0; i < d; i++) *outer *= sz[i];
  for (int i = d + 1; i < nd; i++) *inner *= sz[i];
}

static wk_status k_softmax(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  bool lg = ctx->user != NULL;
  const char *op = lg ? "log_softmax" : "softmax";
  wk_tensor *self = WK_ARG_T(0);
  wk_dtype dt = wk_kernel_meta(ctx, 0)->dtype;
  int d = wrap_dim(WK_ARG_I(1), wk_tensor_dim(self));
  wk_status s = cuda_enter(op, ctx->device);
  if (s) return s;
  wk_dtype cd = dt == WK_F64 ? WK_F64 : WK_F32;
  wk_tensor *in = wk_kernel_cast(self, dt); /* with a dtype argument the input is converted first */
  wk_tensor *x = in ? cuda_dense(in, cd, ctx->device) : NULL;
  wk_release(in);
  wk_tensor *y = x ? cuda_new(wk_tensor_sizes(x), wk_tensor_dim(x), cd, ctx->device) : NULL;
  if (y) {
    int64_t o, c, i;
    split3(x, d, &o, &c, &i);
    if (cuda_launch_softmax(cuda_dt(cd), lg, wk_tensor_data(y), wk_tensor_data(x), o, c, i, cuda_stream(ctx->device))) {
      wk_release(y);
      y = NULL;
    }
  }
  wk_release(x);
  return wk_kernel_out1(outs, wk_cast_own(y, dt));
}

static wk_status k_softmax_backward(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  bool lg = ctx->user != NULL;
  const char *op = lg ? "log_softmax_backward_data" : "softmax_backward_data";
  wk_tensor *go = WK_ARG_T(0), *out = WK_ARG_T(1);
  wk_dtype idt = args[3].u.dtype;
  int nd = wk_tensor_dim(out), d = wrap_dim(WK_ARG_I(2), nd);
  wk_status s = cuda_enter(op, ctx->device);
  if (s) return s;
  wk_dtype cd = wk_tensor_dtype(go) == WK_F64 || wk_tensor_dtype(out) == WK_F64 ? WK_F64 : WK_F32;
  wk_tensor *g = cuda_dense(go, cd, ctx->device), *y = g ? cuda_dense(out, cd, ctx->device) : NULL;
  wk_tensor *gi = y ? cuda_new(wk_tensor_sizes(out), nd, cd, ctx->device) : NULL;
  if (gi) {
    int64_t o, c, i;
    split3(out, d, &o, &c, &i);
    if (cuda_launch_softmax_backward(cuda_dt(cd), lg, wk_tensor_data(gi), wk_tensor_data(g), wk_tensor_data(y), o, c, i,
                                     cuda_stream(ctx->device))) {
      wk_release(gi);
      gi = NULL;
    }
  }
  wk_release(g);
  wk_release(y);
  return wk_kernel_out1(outs, wk_cast_own(gi, idt));
}

wk_status cuda_register_softmax(void) {
  wk_status s = cuda_reg("softmax", k_softmax, NULL, NULL, "cuda.softmax");
  if (!s) s = cuda_reg("log_softmax", k_softmax, NULL, (void *)1, "cuda.log_softmax");
  if (!s) s = cuda_reg("softmax_backward_data", k_softmax_backward, NULL, NULL, "cuda.softmax_backward");
  if (!s) s = cuda_reg("log_softmax_backward_data", k_softmax_backward, NULL, (void *)1, "cuda.log_softmax_backward");
  return s;
}
