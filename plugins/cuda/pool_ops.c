/* cuda pool family: max_pool2d_with_indices, avg_pool2d, adaptive_avg_pool2d
 * and their backward ops for f32, f64, f16 and bf16, batched [N,C,H,W] or
 * unbatched [C,H,W]; the core's meta functions (core/meta_conv.c) check the
 * arguments and decide the output shapes. Own kernels (pool.cu) rather than
 * cuDNN's: PyTorch's indices, ceil_mode and divisor_override have no cuDNN
 * equivalent. */
#include <string.h>

#include "cuda_libs.h"

static bool pool_dtype(wk_dtype dt) {
  return dt == WK_F32 || dt == WK_F64 || dt == WK_F16 || dt == WK_BF16;
}

/* The input decides (user: 1 for the backward ops, whose input is args[1]
 * beside grad_output); indices are int64 whatever the dtype. */
static bool supports_self(const wk_kernel_ctx *ctx, const wk_value *args) {
  bool bwd = ctx->user != NULL;
  return pool_dtype(wk_tensor_dtype(args[0].u.t)) && (!bwd || pool_dtype(wk_tensor_dtype(args[1].u.t)));
}

/* Fills g from x, (kernel_size, stride, padding) at kv[0..2], dilation d and
 * ys, the pooled output's sizes (the forward's result, the backward's
 * grad_output). The op's meta function (core/meta_conv.c) checked the
 * arguments and decided ys; what is left is these kernels' 32-bit windows. */
static wk_status pool_geometry(const char *op, wk_tensor *x, const wk_value *kv, const int64_t d[2], const int64_t *ys,
                               cuda_pool_geo *g) {
  /* int[2] arguments arrive normalised to two values (stride: or none) */
  const int64_t *k = kv[0].u.ints, *s = kv[1].len ? kv[1].u.ints : k, *p = kv[2].u.ints;
  for (int i = 0; i < 2; i++)
    if (k[i] > INT32_MAX || s[i] > INT32_MAX || p[i] > INT32_MAX || d[i] > INT32_MAX)
      return wk_error(WK_ERR_INVALID_ARG, "%s(): window parameters beyond 32 bits are not supported on cuda", op);
  int nd = wk_tensor_dim(x);
  memset(g, 0, sizeof *g);
  g->H = wk_tensor_size(x, nd - 2), g->W = wk_tensor_size(x, nd - 1);
  g->planes = g->H > 0 && g->W > 0 ? wk_tensor_numel(x) / (g->H * g->W) : 0;
  g->oh = ys[nd - 2], g->ow = ys[nd - 1];
  g->kh = (int32_t)k[0], g->kw = (int32_t)k[1], g->sh = (int32_t)s[0], g->sw = (int32_t)s[1];
  g->ph = (int32_t)p[0], g->pw = (int32_t)p[1], g->dh = (int32_t)d[0], g->dw = (int32_t)d[1];
  return WK_OK;
}

/* The result's sizes the meta function decided. */
static const int64_t *meta_sizes(const wk_kernel_ctx *ctx, const char *op) {
  const wk_meta_out *m = wk_kernel_meta(ctx, 0);
  if (!m) wk_error(WK_ERR_INTERNAL, "%s(): no meta function decided the output", op);
  return m ? m->sizes : NULL;
}

/* Launches forward kernels on contiguous x into a new y (and indices). */
typedef int (*fwd_fn)(int, const void *, void *, int64_t *, cuda_pool_geo, cudaStream_t);

static int fwd_max(int dt, const void *x, void *y, int64_t *ind, cuda_pool_geo g, cudaStream_t s) {
  return cuda_launch_max_pool_fwd(dt, x, y, ind, g, s);
}
static int fwd_avg(int dt, const void *x, void *y, int64_t *ind, cuda_pool_geo g, cudaStream_t s) {
  return cuda_launch_avg_pool_fwd(dt, x, y, g, s);
}
static int fwd_adaptive(int dt, const void *x, void *y, int64_t *ind, cuda_pool_geo g, cudaStream_t s) {
  return cuda_launch_adaptive_pool_fwd(dt, x, y, g, s);
}

static wk_status run_fwd(const char *op, const wk_kernel_ctx *ctx, wk_tensor *input, cuda_pool_geo g, bool indices,
                         fwd_fn fn, wk_value *outs) {
  wk_device dev = ctx->device;
  wk_status s = cuda_enter(op, dev);
  if (s) return s;
  wk_dtype dt = wk_tensor_dtype(input);
  wk_tensor *x = cuda_lib_prep(input, dt);
  wk_tensor *y = wk_meta_empty(ctx, 0);
  wk_tensor *ind = indices ? wk_meta_empty(ctx, 1) : NULL;
  if (!x || !y || (indices && !ind)) {
    s = wk_last_error();
  } else {
    s = (wk_status)fn(cuda_dtype_code(dt), wk_tensor_data(x), wk_tensor_data(y), ind ? wk_tensor_data(ind) : NULL, g,
                      cuda_current_stream(dev.index));
  }
  wk_release(x);
  if (s) {
    wk_release(y);
    wk_release(ind);
    return s;
  }
  outs[0] = WK_VT(y);
  if (indices) outs[1] = WK_VT(ind);
  return WK_OK;
}

static wk_status k_max_pool2d(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "max_pool2d_with_indices";
  wk_tensor *input = WK_ARG_T(0);
  const int64_t *ys = meta_sizes(ctx, op);
  cuda_pool_geo g;
  wk_status s = ys ? pool_geometry(op, input, &args[1], args[4].u.ints, ys, &g) : wk_last_error();
  return s ? s : run_fwd(op, ctx, input, g, true, fwd_max, outs);
}

static wk_status k_avg_pool2d(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "avg_pool2d";
  wk_tensor *input = WK_ARG_T(0);
  bool has_div = !WK_ARG_IS_NONE(6);
  const int64_t d[2] = {1, 1}, *ys = meta_sizes(ctx, op);
  cuda_pool_geo g;
  wk_status s = ys ? pool_geometry(op, input, &args[1], d, ys, &g) : wk_last_error();
  if (s) return s;
  g.count_include_pad = WK_ARG_B(5);
  g.has_div = has_div;
  g.divisor = has_div ? WK_ARG_I(6) : 0;
  return run_fwd(op, ctx, input, g, false, fwd_avg, outs);
}

static wk_status k_adaptive_avg_pool2d(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "adaptive_avg_pool2d";
  wk_tensor *input = WK_ARG_T(0);
  const int64_t *ys = meta_sizes(ctx, op);
  if (!ys) return wk_last_error();
  int nd = wk_tensor_dim(input);
  cuda_pool_geo g;
  memset(&g, 0, sizeof g);
  g.H = wk_tensor_size(input, nd - 2), g.W = wk_tensor_size(input, nd - 1), g.oh = ys[nd - 2], g.ow = ys[nd - 1];
  g.planes = wk_tensor_numel(input) / (g.H * g.W);
  return run_fwd(op, ctx, input, g, false, fwd_adaptive, outs);
}

/* ---- backward ------------------------------------------------------------------------------------ */
/* grad_input of self's shape from grad_output (and indices), every element written. */
static wk_status run_bwd(const char *op, const wk_kernel_ctx *ctx, wk_tensor *go, wk_tensor *self, wk_tensor *indices,
                         cuda_pool_geo g, int kind, wk_value *outs) {
  wk_device dev = ctx->device;
  wk_status s = cuda_enter(op, dev);
  if (s) return s;
  wk_dtype dt = wk_tensor_dtype(self);
  wk_tensor *gy = cuda_lib_prep(go, dt), *ind = indices ? cuda_lib_prep(indices, WK_I64) : NULL;
  wk_tensor *gx = wk_meta_empty(ctx, 0);
  if (!gy || !gx || (indices && !ind)) {
    s = wk_last_error();
  } else if (g.oh == 0 || g.ow == 0) { /* adaptive pooling to nothing: no gradient */
    s = CUDA_CHECK(op, cudaMemsetAsync(wk_tensor_data(gx), 0, (size_t)wk_tensor_numel(gx) * wk_dtype_size(dt),
                                       cuda_current_stream(dev.index)));
  } else {
    cudaStream_t st = cuda_current_stream(dev.index);
    int code = cuda_dtype_code(dt);
    s = (wk_status)(kind == 0   ? cuda_launch_max_pool_bwd(code, wk_tensor_data(gy), wk_tensor_data(ind),
                                                           wk_tensor_data(gx), g, st)
                    : kind == 1 ? cuda_launch_avg_pool_bwd(code, wk_tensor_data(gy), wk_tensor_data(gx), g, st)
                                : cuda_launch_adaptive_pool_bwd(code, wk_tensor_data(gy), wk_tensor_data(gx), g, st));
  }
  wk_release(gy);
  wk_release(ind);
  return wk_kernel_done(s, gx, outs);
}

/* Backward ops take (grad_output, self, ...the forward's arguments...);
 * grad_output has the forward's output sizes. */
static wk_status k_max_pool2d_backward(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "max_pool2d_with_indices_backward";
  wk_tensor *go = WK_ARG_T(0), *self = WK_ARG_T(1), *indices = WK_ARG_T(7);
  cuda_pool_geo g;
  wk_status s = pool_geometry(op, self, &args[2], args[5].u.ints, wk_tensor_sizes(go), &g);
  if (s) return s;
  /* Out-of-range indices are not checked on the device (that would need a
   * sync); the gather reads only in-range positions, so they are ignored. */
  return run_bwd(op, ctx, go, self, indices, g, 0, outs);
}

static wk_status k_avg_pool2d_backward(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "avg_pool2d_backward";
  wk_tensor *go = WK_ARG_T(0), *self = WK_ARG_T(1);
  bool has_div = !WK_ARG_IS_NONE(7);
  const int64_t d[2] = {1, 1};
  cuda_pool_geo g;
  wk_status s = pool_geometry(op, self, &args[2], d, wk_tensor_sizes(go), &g);
  if (s) return s;
  g.count_include_pad = WK_ARG_B(6);
  g.has_div = has_div;
  g.divisor = has_div ? WK_ARG_I(7) : 0;
  return run_bwd(op, ctx, go, self, NULL, g, 1, outs);
}

static wk_status k_adaptive_avg_pool2d_backward(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "adaptive_avg_pool2d_backward";
  wk_tensor *go = WK_ARG_T(0), *self = WK_ARG_T(1);
  int nd = wk_tensor_dim(self);
  cuda_pool_geo g;
  memset(&g, 0, sizeof g);
  g.H = wk_tensor_size(self, nd - 2), g.W = wk_tensor_size(self, nd - 1);
  g.oh = wk_tensor_size(go, nd - 2), g.ow = wk_tensor_size(go, nd - 1);
  g.planes = wk_tensor_numel(self) / (g.H * g.W);
  return run_bwd(op, ctx, go, self, NULL, g, 2, outs);
}

wk_status cuda_register_pool(void) {
  static const struct {
    const char *op, *name;
    wk_kernel_fn fn;
    bool bwd;
  } ks[] = {
      {"max_pool2d_with_indices", "cuda.max_pool2d", k_max_pool2d, false},
      {"avg_pool2d", "cuda.avg_pool2d", k_avg_pool2d, false},
      {"adaptive_avg_pool2d", "cuda.adaptive_avg_pool2d", k_adaptive_avg_pool2d, false},
      {"max_pool2d_with_indices_backward", "cuda.max_pool2d_backward", k_max_pool2d_backward, true},
      {"avg_pool2d_backward", "cuda.avg_pool2d_backward", k_avg_pool2d_backward, true},
      {"adaptive_avg_pool2d_backward", "cuda.adaptive_avg_pool2d_backward", k_adaptive_avg_pool2d_backward, true}};
  wk_status s = WK_OK;
  for (size_t i = 0; i < sizeof ks / sizeof ks[0] && !s; i++)
    s = cuda_reg(ks[i].op, ks[i].fn, supports_self, ks[i].bwd ? (void *)1 : NULL, ks[i].name);
  return s;
}
