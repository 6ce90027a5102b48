/* cuda pool family: max_pool2d_with_indices, avg_pool2d, adaptive_avg_pool2d
 * and their backward ops for f32, f64, f16 and bf16, batched [N,C,H,W] or
 * unbatched [C,H,W], with the cpu kernels' shape rules and messages. Own
 * kernels (pool.cu) rather than cuDNN's: PyTorch's indices, ceil_mode and
 * divisor_override have no cuDNN equivalent. */
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

static int64_t div_floor(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
  return q;
}

static int64_t out_size(int64_t in, int64_t k, int64_t pad, int64_t s, int64_t d, bool ceil_mode) {
  int64_t o = div_floor(in + 2 * pad - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0), s) + 1;
  if (ceil_mode && (o - 1) * s >= in + pad) o--; /* the last window starts inside the image */
  return o;
}

/* PyTorch's pooling_output_shape and pool2d_shape_check, in their order
 * (the cpu kernel's checks). */
static wk_status pool_check(const char *op, wk_tensor *x, const wk_value *kv, const wk_value *sv, const wk_value *pv,
                            const int64_t dil[2], bool ceil_mode, cuda_pool_geo *g) {
  char a[160];
  int64_t k[2], s[2], p[2];
  if (!wk_arg_int_pair(kv, k))
    return wk_error(WK_ERR_INVALID_ARG, "%s(): kernel_size must either be a single int, or a tuple of two ints", op);
  if (sv->tag == WK_V_INTS && sv->len == 0) {
    s[0] = k[0], s[1] = k[1];
  } else if (!wk_arg_int_pair(sv, s)) {
    return wk_error(WK_ERR_INVALID_ARG, "%s(): stride must either be omitted, a single int, or a tuple of two ints",
                    op);
  }
  if (!wk_arg_int_pair(pv, p))
    return wk_error(WK_ERR_INVALID_ARG, "%s(): padding must either be a single int, or a tuple of two ints", op);
  int nd = wk_tensor_dim(x);
  if (nd != 3 && nd != 4)
    return wk_error(WK_ERR_SHAPE, "%s(): non-empty 3D or 4D (batch mode) tensor expected for input, but got %s", op,
                    wk_shape_str(x, a, sizeof a));
  for (int i = 0; i < 2; i++) {
    if (s[i] == 0) return wk_error(WK_ERR_INVALID_ARG, "%s(): stride should not be zero", op);
    if (p[i] < 0)
      return wk_error(WK_ERR_INVALID_ARG, "%s(): pad must be non-negative, but got pad: %lld", op, (long long)p[i]);
    if (p[i] > ((k[i] - 1) * dil[i] + 1) / 2)
      return wk_error(WK_ERR_INVALID_ARG,
                      "%s(): pad should be at most half of effective kernel size, but got pad=%lld, kernel_size=%lld "
                      "and dilation=%lld",
                      op, (long long)p[i], (long long)k[i], (long long)dil[i]);
  }
  if (k[0] <= 0 || k[1] <= 0)
    return wk_error(WK_ERR_INVALID_ARG, "%s(): kernel size should be greater than zero, but got kH: %lld kW: %lld", op,
                    (long long)k[0], (long long)k[1]);
  if (s[0] <= 0 || s[1] <= 0)
    return wk_error(WK_ERR_INVALID_ARG, "%s(): stride should be greater than zero, but got dH: %lld dW: %lld", op,
                    (long long)s[0], (long long)s[1]);
  if (dil[0] <= 0 || dil[1] <= 0)
    return wk_error(WK_ERR_INVALID_ARG,
                    "%s(): dilation should be greater than zero, but got dilationH: %lld dilationW: %lld", op,
                    (long long)dil[0], (long long)dil[1]);
  const int64_t *sz = wk_tensor_sizes(x);
  bool valid = nd == 3 ? sz[0] != 0 && sz[1] != 0 && sz[2] != 0 : sz[1] != 0 && sz[2] != 0 && sz[3] != 0;
  if (!valid)
    return wk_error(WK_ERR_SHAPE,
                    "%s(): Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:%s",
                    op, wk_shape_str(x, a, sizeof a));
  if (k[1] / 2 < p[1] || k[0] / 2 < p[0])
    return wk_error(WK_ERR_INVALID_ARG,
                    "%s(): pad should be smaller than or equal to half of kernel size, but got padW = %lld, padH = "
                    "%lld, kW = %lld, kH = %lld",
                    op, (long long)p[1], (long long)p[0], (long long)k[1], (long long)k[0]);
  int64_t H = sz[nd - 2], W = sz[nd - 1], C = sz[nd - 3];
  int64_t oh = out_size(H, k[0], p[0], s[0], dil[0], ceil_mode), ow = out_size(W, k[1], p[1], s[1], dil[1], ceil_mode);
  if (oh < 1 || ow < 1)
    return wk_error(WK_ERR_SHAPE,
                    "%s(): Given input size: (%lldx%lldx%lld). Calculated output size: (%lldx%lldx%lld). Output size "
                    "is too small",
                    op, (long long)C, (long long)H, (long long)W, (long long)C, (long long)oh, (long long)ow);
  for (int i = 0; i < 2; i++)
    if (k[i] > INT32_MAX || s[i] > INT32_MAX || p[i] > INT32_MAX || dil[i] > INT32_MAX)
      return wk_error(WK_ERR_INVALID_ARG, "%s(): window parameters beyond 32 bits are not supported on cuda", op);
  memset(g, 0, sizeof *g);
  g->planes = (nd == 4 ? sz[0] : 1) * C;
  g->H = H, g->W = W, g->oh = oh, g->ow = ow;
  g->kh = (int32_t)k[0], g->kw = (int32_t)k[1], g->sh = (int32_t)s[0], g->sw = (int32_t)s[1];
  g->ph = (int32_t)p[0], g->pw = (int32_t)p[1], g->dh = (int32_t)dil[0], g->dw = (int32_t)dil[1];
  return WK_OK;
}

static void out_shape(wk_tensor *x, int64_t oh, int64_t ow, int64_t *shape) {
  int nd = wk_tensor_dim(x);
  for (int i = 0; i < nd - 2; i++) shape[i] = wk_tensor_size(x, i);
  shape[nd - 2] = oh;
  shape[nd - 1] = ow;
}

/* t (named `what`) must have self's leading dimensions and [oh, ow]. */
static wk_status check_out_like(const char *op, const char *what, wk_tensor *t, wk_tensor *self, int64_t oh,
                                int64_t ow) {
  int nd = wk_tensor_dim(self);
  int64_t want[4];
  out_shape(self, oh, ow, want);
  bool ok = wk_tensor_dim(t) == nd;
  for (int i = 0; ok && i < nd; i++) ok = wk_tensor_sizes(t)[i] == want[i];
  if (ok) return WK_OK;
  char b[160];
  return wk_error(WK_ERR_SHAPE, "%s(): expected %s with the input's leading dimensions and [%lld, %lld], but got %s",
                  op, what, (long long)oh, (long long)ow, wk_shape_str(t, b, sizeof b));
}

static wk_status check_float(const char *op, wk_tensor *go, wk_tensor *self) {
  wk_dtype dt = wk_tensor_dtype(self);
  if (go && wk_tensor_dtype(go) != dt)
    return wk_error(WK_ERR_DTYPE, "%s(): expected dtype %s for `gradOutput` but got dtype %s", op, wk_dtype_name(dt),
                    wk_dtype_name(wk_tensor_dtype(go)));
  if (!pool_dtype(dt))
    return wk_error(WK_ERR_DTYPE, "%s(): the cuda kernel takes floating-point tensors, got %s", op, wk_dtype_name(dt));
  return WK_OK;
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
  int64_t shape[4];
  int nd = wk_tensor_dim(input);
  wk_dtype dt = wk_tensor_dtype(input);
  out_shape(input, g.oh, g.ow, shape);
  wk_tensor *x = cuda_lib_prep(input, dt);
  wk_tensor *y = wk_empty(shape, nd, (wk_options){.dtype = dt, .device = dev});
  wk_tensor *ind = indices ? wk_empty(shape, nd, (wk_options){.dtype = WK_I64, .device = dev}) : NULL;
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
  int64_t d[2];
  cuda_pool_geo g;
  if (!wk_arg_int_pair(&args[4], d))
    return wk_error(WK_ERR_INVALID_ARG, "%s(): dilation must be either a single int, or a tuple of two ints", op);
  wk_status s = pool_check(op, input, &args[1], &args[2], &args[3], d, WK_ARG_B(5), &g);
  if (!s) s = check_float(op, NULL, input);
  return s ? s : run_fwd(op, ctx, input, g, true, fwd_max, outs);
}

static wk_status k_avg_pool2d(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "avg_pool2d";
  wk_tensor *input = WK_ARG_T(0);
  bool has_div = !WK_ARG_IS_NONE(6);
  int64_t d[2] = {1, 1};
  cuda_pool_geo g;
  if (has_div && WK_ARG_I(6) == 0) return wk_error(WK_ERR_INVALID_ARG, "%s(): divisor must be not zero", op);
  wk_status s = pool_check(op, input, &args[1], &args[2], &args[3], d, WK_ARG_B(4), &g);
  if (!s) s = check_float(op, NULL, input);
  if (s) return s;
  g.count_include_pad = WK_ARG_B(5);
  g.has_div = has_div;
  g.divisor = has_div ? WK_ARG_I(6) : 0;
  return run_fwd(op, ctx, input, g, false, fwd_avg, outs);
}

static wk_status k_adaptive_avg_pool2d(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "adaptive_avg_pool2d";
  wk_tensor *input = WK_ARG_T(0);
  char a[160];
  int64_t os[2];
  if (args[1].len != 2 || !wk_arg_int_pair(&args[1], os))
    return wk_error(WK_ERR_INVALID_ARG, "%s(): output_size must be 2", op);
  if (os[0] < 0 || os[1] < 0)
    return wk_error(WK_ERR_INVALID_ARG,
                    "%s(): elements of output_size must be greater than or equal to 0 but received {%lld, %lld}", op,
                    (long long)os[0], (long long)os[1]);
  int nd = wk_tensor_dim(input);
  if (nd != 3 && nd != 4)
    return wk_error(WK_ERR_SHAPE, "%s(): Expected 3D or 4D tensor, but got %s", op,
                    wk_shape_str(input, a, sizeof a));
  for (int i = nd - 2; i < nd; i++)
    if (wk_tensor_size(input, i) <= 0)
      return wk_error(WK_ERR_SHAPE,
                      "%s(): Expected input to have non-zero size for non-batch dimensions, but input has sizes %s "
                      "with dimension %d being empty",
                      op, wk_shape_str(input, a, sizeof a), i);
  wk_status s = check_float(op, NULL, input);
  if (s) return s;
  cuda_pool_geo g;
  memset(&g, 0, sizeof g);
  g.planes = wk_tensor_numel(input) / (wk_tensor_size(input, nd - 2) * wk_tensor_size(input, nd - 1));
  g.H = wk_tensor_size(input, nd - 2), g.W = wk_tensor_size(input, nd - 1), g.oh = os[0], g.ow = os[1];
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
  wk_tensor *gx = wk_empty(wk_tensor_sizes(self), wk_tensor_dim(self), (wk_options){.dtype = dt, .device = dev});
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
  if (s) {
    wk_release(gx);
    return s;
  }
  outs[0] = WK_VT(gx);
  return WK_OK;
}

static wk_status k_max_pool2d_backward(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "max_pool2d_with_indices_backward";
  wk_tensor *go = WK_ARG_T(0), *self = WK_ARG_T(1), *indices = WK_ARG_T(7);
  int64_t d[2];
  cuda_pool_geo g;
  if (!wk_arg_int_pair(&args[5], d))
    return wk_error(WK_ERR_INVALID_ARG, "%s(): dilation must be either a single int, or a tuple of two ints", op);
  wk_status s = pool_check(op, self, &args[2], &args[3], &args[4], d, WK_ARG_B(6), &g);
  if (!s) s = check_out_like(op, "grad_output", go, self, g.oh, g.ow);
  if (!s) s = check_out_like(op, "indices", indices, self, g.oh, g.ow);
  if (!s) s = check_float(op, go, self);
  if (s) return s;
  if (!wk_dtype_is_integral(wk_tensor_dtype(indices)))
    return wk_error(WK_ERR_DTYPE, "%s(): expected indices of an integer dtype, got %s", op,
                    wk_dtype_name(wk_tensor_dtype(indices)));
  /* Out-of-range indices are not checked on the device (that would need a
   * sync); the gather reads only in-range positions, so they are ignored. */
  return run_bwd(op, ctx, go, self, indices, g, 0, outs);
}

static wk_status k_avg_pool2d_backward(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "avg_pool2d_backward";
  wk_tensor *go = WK_ARG_T(0), *self = WK_ARG_T(1);
  bool has_div = !WK_ARG_IS_NONE(7);
  int64_t d[2] = {1, 1};
  cuda_pool_geo g;
  if (has_div && WK_ARG_I(7) == 0) return wk_error(WK_ERR_INVALID_ARG, "%s(): divisor must be not zero", op);
  wk_status s = pool_check(op, self, &args[2], &args[3], &args[4], d, WK_ARG_B(5), &g);
  if (!s) s = check_out_like(op, "grad_output", go, self, g.oh, g.ow);
  if (!s) s = check_float(op, go, self);
  if (s) return s;
  g.count_include_pad = WK_ARG_B(6);
  g.has_div = has_div;
  g.divisor = has_div ? WK_ARG_I(7) : 0;
  return run_bwd(op, ctx, go, self, NULL, g, 1, outs);
}

static wk_status k_adaptive_avg_pool2d_backward(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "adaptive_avg_pool2d_backward";
  wk_tensor *go = WK_ARG_T(0), *self = WK_ARG_T(1);
  char a[160];
  int nd = wk_tensor_dim(self);
  if (nd != 3 && nd != 4)
    return wk_error(WK_ERR_SHAPE, "%s(): Expected 3D or 4D tensor, but got %s", op,
                    wk_shape_str(self, a, sizeof a));
  for (int i = nd - 2; i < nd; i++)
    if (wk_tensor_size(self, i) <= 0)
      return wk_error(WK_ERR_SHAPE,
                      "%s(): Expected input to have non-zero size for non-batch dimensions, but input has sizes %s "
                      "with dimension %d being empty",
                      op, wk_shape_str(self, a, sizeof a), i);
  if (wk_tensor_dim(go) != nd)
    return wk_error(WK_ERR_SHAPE, "%s(): expected grad_output with %d dimensions, but got %s", op, nd,
                    wk_shape_str(go, a, sizeof a));
  cuda_pool_geo g;
  memset(&g, 0, sizeof g);
  g.H = wk_tensor_size(self, nd - 2), g.W = wk_tensor_size(self, nd - 1);
  g.oh = wk_tensor_size(go, nd - 2), g.ow = wk_tensor_size(go, nd - 1);
  g.planes = wk_tensor_numel(self) / (g.H * g.W);
  wk_status s = check_out_like(op, "grad_output", go, self, g.oh, g.ow);
  if (!s) s = check_float(op, go, self);
  return s ? s : run_bwd(op, ctx, go, self, NULL, g, 2, outs);
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
