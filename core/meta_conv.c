/* Meta functions of 2-D convolution and pooling (conv2d, max_pool2d_with_indices,
 * avg_pool2d, adaptive_avg_pool2d and their backward ops): PyTorch's argument
 * checks with the cpu kernels' messages and the output geometry, decided here
 * once so the cpu, onednn and cuda kernels only compute. */
#include <stdio.h>

#include <wick/sdk/check.h>

#include "meta.h"

/* ---- convolution --------------------------------------------------------------------- */
/* conv2d(input, weight, bias?, stride, padding, dilation, groups) and
 * conv2d_backward(grad_output, input, weight, stride, padding, dilation, groups,
 * output_mask) share args[3..6]. PyTorch's ConvParams checks in the cpu kernel's
 * order; on success osz is the forward's output as [N, O, oh, ow]. */
static wk_status conv_geometry(wk_op *op, const wk_value *args, const wk_tensor *x, const wk_tensor *w,
                               const wk_tensor *bias, bool bwd, int64_t osz[4]) {
  static const char *const names[3] = {"stride", "padding", "dilation"};
  int64_t p[3][2], groups = args[6].u.i;
  char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX];
  for (int i = 0; i < 3; i++)
    if (!wk_arg_int_pair(&args[3 + i], p[i]))
      return wk_error(WK_ERR_INVALID_ARG,
                      "%s(): expected %s to be a single integer value or a list of 2 values to match the "
                      "convolution dimensions, but got %s=%s",
                      MNAME, names[i], names[i], wk_sizes_str(args[3 + i].u.ints, args[3 + i].len, a, sizeof a));
  if (bwd && args[7].len != 3)
    return wk_error(WK_ERR_INVALID_ARG, "%s(): output_mask must hold 3 values, got %d", MNAME, args[7].len);
  const int64_t *st = p[0], *pd = p[1], *dl = p[2];
  int xd = x->ndim;
  if (xd != 3 && xd != 4)
    return wk_error(WK_ERR_SHAPE,
                    "%s(): Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: %s", MNAME,
                    wk__shape_str(x->sizes, xd, a, sizeof a));
  if (groups <= 0) return wk_error(WK_ERR_INVALID_ARG, "%s(): non-positive groups is not supported", MNAME);
  if (pd[0] < 0 || pd[1] < 0) return wk_error(WK_ERR_INVALID_ARG, "%s(): negative padding is not supported", MNAME);
  if (st[0] <= 0 || st[1] <= 0)
    return wk_error(WK_ERR_INVALID_ARG, "%s(): non-positive stride is not supported", MNAME);
  if (dl[0] <= 0 || dl[1] <= 0)
    return wk_error(WK_ERR_INVALID_ARG, "%s(): dilation should be greater than zero", MNAME);
  int64_t sz[4]; /* an unbatched input is a batch of one */
  for (int i = 0; i < 4; i++) sz[i] = i < 4 - xd ? 1 : x->sizes[i - (4 - xd)];
  if (w->ndim != 4)
    return wk_error(WK_ERR_SHAPE,
                    "%s(): Expected %d-dimensional input for %d-dimensional weight %s, but got 4-dimensional input "
                    "of size %s instead",
                    MNAME, w->ndim, w->ndim, wk__shape_str(w->sizes, w->ndim, a, sizeof a),
                    wk__shape_str(sz, 4, b, sizeof b));
  int64_t O = w->sizes[0], Cg = w->sizes[1];
  if (O < groups || O % groups)
    return wk_error(WK_ERR_SHAPE,
                    "%s(): Given groups=%lld, expected weight to be %s %lld at dimension 0, but got weight of size %s "
                    "instead",
                    MNAME, (long long)groups, O < groups ? "at least" : "divisible by", (long long)groups,
                    wk__shape_str(w->sizes, 4, a, sizeof a));
  if (sz[1] != Cg * groups)
    return wk_error(WK_ERR_SHAPE,
                    "%s(): Given groups=%lld, weight of size %s, expected input%s to have %lld channels, but got "
                    "%lld channels instead",
                    MNAME, (long long)groups, wk__shape_str(w->sizes, 4, a, sizeof a),
                    wk__shape_str(sz, 4, b, sizeof b), (long long)(Cg * groups), (long long)sz[1]);
  if (bias && (bias->ndim != 1 || bias->sizes[0] != O))
    return wk_error(WK_ERR_SHAPE,
                    "%s(): Given weight of size %s, expected bias to be 1-dimensional with %lld elements, but got "
                    "bias of size %s instead",
                    MNAME, wk__shape_str(w->sizes, 4, a, sizeof a), (long long)O,
                    wk__shape_str(bias->sizes, bias->ndim, b, sizeof b));
  int64_t pin[2] = {sz[2] + 2 * pd[0], sz[3] + 2 * pd[1]};
  int64_t keff[2] = {dl[0] * (w->sizes[2] - 1) + 1, dl[1] * (w->sizes[3] - 1) + 1};
  if (pin[0] < keff[0] || pin[1] < keff[1])
    return wk_error(WK_ERR_SHAPE,
                    "%s(): Calculated padded input size per channel: (%lld x %lld). Kernel size: (%lld x %lld). "
                    "Kernel size can't be greater than actual input size",
                    MNAME, (long long)pin[0], (long long)pin[1], (long long)keff[0], (long long)keff[1]);
  osz[0] = sz[0];
  osz[1] = O;
  osz[2] = (pin[0] - keff[0]) / st[0] + 1;
  osz[3] = (pin[1] - keff[1]) / st[1] + 1;
  return WK_OK;
}

static wk_status meta_conv2d(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *x = MT(0), *w = MT(1), *bias = MNONE(2) ? NULL : MT(2);
  int64_t osz[4];
  wk_status s = conv_geometry(op, args, x, w, bias, false, osz);
  if (s) return s;
  wk_dtype dt = x->dtype;
  if (w->dtype != dt)
    return wk_error(WK_ERR_DTYPE, "%s(): Input type (%s) and weight type (%s) should be the same", MNAME,
                    wk__dtype_word(dt), wk__dtype_word(w->dtype));
  if (bias && bias->dtype != dt)
    return wk_error(WK_ERR_DTYPE, "%s(): Input type (%s) and bias type (%s) should be the same", MNAME,
                    wk__dtype_word(dt), wk__dtype_word(bias->dtype));
  if (!wk_dtype_is_floating(dt))
    return wk_error(WK_ERR_DTYPE, "%s(): \"conv2d_cpu\" not implemented for '%s'", MNAME, wk__dtype_word(dt));
  wk__meta_shape(o, x->ndim == 4 ? osz : osz + 1, x->ndim, dt);
  return WK_OK;
}

/* Results: grad_input (input's shape), grad_weight (weight's), grad_bias [O];
 * each whatever output_mask says (a kernel returns None for a masked one). */
static wk_status meta_conv2d_backward(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *go = MT(0), *x = MT(1), *w = MT(2);
  int64_t osz[4];
  wk_status s = conv_geometry(op, args, x, w, NULL, true, osz);
  if (s) return s;
  int xd = x->ndim;
  const int64_t *want = osz + 4 - xd;
  bool ok = go->ndim == xd;
  for (int i = 0; ok && i < xd; i++) ok = go->sizes[i] == want[i];
  char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX];
  if (!ok)
    return wk_error(WK_ERR_SHAPE, "%s(): expected grad_output of size %s, but got %s", MNAME,
                    wk__shape_str(want, xd, a, sizeof a), wk__shape_str(go->sizes, go->ndim, b, sizeof b));
  wk_dtype dt = x->dtype;
  if (w->dtype != dt || go->dtype != dt)
    return wk_error(WK_ERR_DTYPE,
                    "%s(): Input type (%s), weight type (%s) and grad_output type (%s) should be the same", MNAME,
                    wk__dtype_word(dt), wk__dtype_word(w->dtype), wk__dtype_word(go->dtype));
  if (!wk_dtype_is_floating(dt))
    return wk_error(WK_ERR_DTYPE, "%s(): \"conv2d_backward_cpu\" not implemented for '%s'", MNAME, wk__dtype_word(dt));
  wk__meta_like(&o[0], x, dt);
  wk__meta_like(&o[1], w, dt);
  wk__meta_shape(&o[2], &osz[1], 1, dt);
  return WK_OK;
}

/* ---- pooling --------------------------------------------------------------------------- */
/* PyTorch's pooling_output_shape: floor division, and in ceil mode a last
 * window that must start inside the image or its left padding. */
static int64_t pool_out_size(int64_t in, int64_t k, int64_t pad, int64_t s, int64_t d, bool ceil_mode) {
  int64_t num = in + 2 * pad - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t q = num / s;
  if (num % s != 0 && (num < 0) != (s < 0)) q--;
  int64_t o = q + 1;
  if (ceil_mode && (o - 1) * s >= in + pad) o--;
  return o;
}

/* The result shape of a pooling op over x: [N, C, oh, ow] or [C, oh, ow]. */
static void pool_shape(const wk_tensor *x, int64_t oh, int64_t ow, int64_t *shape) {
  int nd = x->ndim;
  for (int i = 0; i < nd - 2; i++) shape[i] = x->sizes[i];
  shape[nd - 2] = oh;
  shape[nd - 1] = ow;
}

/* Shared checks of max_pool2d and avg_pool2d on x (kernel_size, stride, padding
 * at kv, kv+1, kv+2): PyTorch's pooling_output_shape and pool2d_shape_check, in
 * their order. On success shape is the result's shape. */
static wk_status pool_check(wk_op *op, const wk_tensor *x, const wk_value *kv, const int64_t dil[2], bool ceil_mode,
                            int64_t shape[4]) {
  char a[WK_SHAPE_STR_MAX];
  int64_t k[2], s[2], p[2];
  const wk_value *sv = kv + 1, *pv = kv + 2;
  if (!wk_arg_int_pair(kv, k))
    return wk_error(WK_ERR_INVALID_ARG, "%s(): kernel_size must either be a single int, or a tuple of two ints", MNAME);
  if (sv->len == 0) { /* stride omitted: the kernel size */
    s[0] = k[0];
    s[1] = k[1];
  } else if (!wk_arg_int_pair(sv, s)) {
    return wk_error(WK_ERR_INVALID_ARG, "%s(): stride must either be omitted, a single int, or a tuple of two ints",
                    MNAME);
  }
  if (!wk_arg_int_pair(pv, p))
    return wk_error(WK_ERR_INVALID_ARG, "%s(): padding must either be a single int, or a tuple of two ints", MNAME);
  int nd = x->ndim;
  if (nd != 3 && nd != 4)
    return wk_error(WK_ERR_SHAPE, "%s(): non-empty 3D or 4D (batch mode) tensor expected for input, but got %s", MNAME,
                    wk__shape_str(x->sizes, nd, a, sizeof a));
  for (int i = 0; i < 2; i++) {
    if (s[i] == 0) return wk_error(WK_ERR_INVALID_ARG, "%s(): stride should not be zero", MNAME);
    if (p[i] < 0)
      return wk_error(WK_ERR_INVALID_ARG, "%s(): pad must be non-negative, but got pad: %lld", MNAME, (long long)p[i]);
    if (p[i] > ((k[i] - 1) * dil[i] + 1) / 2)
      return wk_error(WK_ERR_INVALID_ARG,
                      "%s(): pad should be at most half of effective kernel size, but got pad=%lld, kernel_size=%lld "
                      "and dilation=%lld",
                      MNAME, (long long)p[i], (long long)k[i], (long long)dil[i]);
  }
  if (k[0] <= 0 || k[1] <= 0)
    return wk_error(WK_ERR_INVALID_ARG, "%s(): kernel size should be greater than zero, but got kH: %lld kW: %lld",
                    MNAME, (long long)k[0], (long long)k[1]);
  if (s[0] <= 0 || s[1] <= 0)
    return wk_error(WK_ERR_INVALID_ARG, "%s(): stride should be greater than zero, but got dH: %lld dW: %lld", MNAME,
                    (long long)s[0], (long long)s[1]);
  if (dil[0] <= 0 || dil[1] <= 0)
    return wk_error(WK_ERR_INVALID_ARG,
                    "%s(): dilation should be greater than zero, but got dilationH: %lld dilationW: %lld", MNAME,
                    (long long)dil[0], (long long)dil[1]);
  const int64_t *sz = x->sizes;
  bool valid = nd == 3 ? sz[0] != 0 && sz[1] != 0 && sz[2] != 0 : sz[1] != 0 && sz[2] != 0 && sz[3] != 0;
  if (!valid)
    return wk_error(WK_ERR_SHAPE,
                    "%s(): Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:%s",
                    MNAME, wk__shape_str(sz, nd, a, sizeof a));
  if (k[1] / 2 < p[1] || k[0] / 2 < p[0])
    return wk_error(WK_ERR_INVALID_ARG,
                    "%s(): pad should be smaller than or equal to half of kernel size, but got padW = %lld, padH = "
                    "%lld, kW = %lld, kH = %lld",
                    MNAME, (long long)p[1], (long long)p[0], (long long)k[1], (long long)k[0]);
  int64_t H = sz[nd - 2], W = sz[nd - 1], C = sz[nd - 3];
  int64_t oh = pool_out_size(H, k[0], p[0], s[0], dil[0], ceil_mode);
  int64_t ow = pool_out_size(W, k[1], p[1], s[1], dil[1], ceil_mode);
  if (oh < 1 || ow < 1)
    return wk_error(WK_ERR_SHAPE,
                    "%s(): Given input size: (%lldx%lldx%lld). Calculated output size: (%lldx%lldx%lld). Output size "
                    "is too small",
                    MNAME, (long long)C, (long long)H, (long long)W, (long long)C, (long long)oh, (long long)ow);
  pool_shape(x, oh, ow, shape);
  return WK_OK;
}

/* dilation (at dv) of max_pool2d: a pair. */
static wk_status pool_dilation(wk_op *op, const wk_value *dv, int64_t d[2]) {
  if (!wk_arg_int_pair(dv, d))
    return wk_error(WK_ERR_INVALID_ARG, "%s(): dilation must be either a single int, or a tuple of two ints", MNAME);
  return WK_OK;
}

/* t (named `what`) must have the shape `want` (the forward's result). */
static wk_status check_shape_is(wk_op *op, const char *what, const wk_tensor *t, const int64_t *want, int nd) {
  bool ok = t->ndim == nd;
  for (int i = 0; ok && i < nd; i++) ok = t->sizes[i] == want[i];
  if (ok) return WK_OK;
  char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX];
  return wk_error(WK_ERR_SHAPE, "%s(): expected %s of size %s, but got %s", MNAME, what,
                  wk__shape_str(want, nd, a, sizeof a), wk__shape_str(t->sizes, t->ndim, b, sizeof b));
}

/* grad_output and self share a floating dtype. */
static wk_status check_grad_dtype(wk_op *op, const wk_tensor *go, const wk_tensor *self) {
  wk_dtype dt = self->dtype;
  if (go->dtype != dt)
    return wk_error(WK_ERR_DTYPE, "%s(): expected dtype %s for `gradOutput` but got dtype %s", MNAME, wk_dtype_name(dt),
                    wk_dtype_name(go->dtype));
  if (!wk_dtype_is_floating(dt))
    return wk_error(WK_ERR_DTYPE, "%s(): \"%s\" not implemented for '%s'", MNAME, MNAME, wk__dtype_word(dt));
  return WK_OK;
}

/* max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode) */
static wk_status meta_max_pool2d(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *x = MT(0);
  int64_t d[2], shape[4];
  wk_status s = pool_dilation(op, &args[4], d);
  if (!s) s = pool_check(op, x, &args[1], d, args[5].u.b, shape);
  if (s) return s;
  if (x->dtype == WK_BOOL)
    return wk_error(WK_ERR_DTYPE, "%s(): \"max_pool2d\" not implemented for '%s'", MNAME, wk__dtype_word(x->dtype));
  wk__meta_shape(&o[0], shape, x->ndim, x->dtype);
  wk__meta_shape(&o[1], shape, x->ndim, WK_I64);
  return WK_OK;
}

/* avg_pool2d(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override) */
static wk_status meta_avg_pool2d(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *x = MT(0);
  int64_t d[2] = {1, 1}, shape[4];
  if (!MNONE(6) && args[6].u.i == 0) return wk_error(WK_ERR_INVALID_ARG, "%s(): divisor must be not zero", MNAME);
  wk_status s = pool_check(op, x, &args[1], d, args[4].u.b, shape);
  if (s) return s;
  wk_dtype dt = x->dtype;
  if (!wk_dtype_is_floating(dt) && dt != WK_I64)
    return wk_error(WK_ERR_DTYPE, "%s(): \"avg_pool2d\" not implemented for '%s'", MNAME, wk__dtype_word(dt));
  wk__meta_shape(o, shape, x->ndim, dt);
  return WK_OK;
}

/* x: 3-D or 4-D with non-empty planes (adaptive pooling's input checks). */
static wk_status adaptive_input(wk_op *op, const wk_tensor *x) {
  char a[WK_SHAPE_STR_MAX];
  int nd = x->ndim;
  if (nd != 3 && nd != 4)
    return wk_error(WK_ERR_SHAPE, "%s(): Expected 3D or 4D tensor, but got %s", MNAME,
                    wk__shape_str(x->sizes, nd, a, sizeof a));
  for (int i = nd - 2; i < nd; i++)
    if (x->sizes[i] <= 0)
      return wk_error(WK_ERR_SHAPE,
                      "%s(): Expected input to have non-zero size for non-batch dimensions, but input has sizes %s "
                      "with dimension %d being empty",
                      MNAME, wk__shape_str(x->sizes, nd, a, sizeof a), i);
  return WK_OK;
}

/* adaptive_avg_pool2d(self, output_size) */
static wk_status meta_adaptive_avg_pool2d(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *x = MT(0);
  int64_t os[2], shape[4];
  if (args[1].len != 2 || !wk_arg_int_pair(&args[1], os))
    return wk_error(WK_ERR_INVALID_ARG, "%s(): output_size must be 2", MNAME);
  if (os[0] < 0 || os[1] < 0)
    return wk_error(WK_ERR_INVALID_ARG,
                    "%s(): elements of output_size must be greater than or equal to 0 but received {%lld, %lld}", MNAME,
                    (long long)os[0], (long long)os[1]);
  wk_status s = adaptive_input(op, x);
  if (s) return s;
  if (!wk_dtype_is_floating(x->dtype))
    return wk_error(WK_ERR_DTYPE, "%s(): \"adaptive_avg_pool2d\" not implemented for '%s'", MNAME,
                    wk__dtype_word(x->dtype));
  pool_shape(x, os[0], os[1], shape);
  wk__meta_shape(o, shape, x->ndim, x->dtype);
  return WK_OK;
}

/* max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride, padding,
 * dilation, ceil_mode, indices) -> grad_input like self */
static wk_status meta_max_pool2d_backward(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *go = MT(0), *x = MT(1), *ind = MT(7);
  int64_t d[2], shape[4];
  wk_status s = pool_dilation(op, &args[5], d);
  if (!s) s = pool_check(op, x, &args[2], d, args[6].u.b, shape);
  if (!s) s = check_shape_is(op, "grad_output", go, shape, x->ndim);
  if (!s) s = check_shape_is(op, "indices", ind, shape, x->ndim);
  if (!s) s = check_grad_dtype(op, go, x);
  if (s) return s;
  if (!wk_dtype_is_integral(ind->dtype))
    return wk_error(WK_ERR_DTYPE, "%s(): expected indices of an integer dtype, got %s", MNAME,
                    wk_dtype_name(ind->dtype));
  wk__meta_like(o, x, x->dtype);
  return WK_OK;
}

/* avg_pool2d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode,
 * count_include_pad, divisor_override) -> grad_input like self */
static wk_status meta_avg_pool2d_backward(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *go = MT(0), *x = MT(1);
  int64_t d[2] = {1, 1}, shape[4];
  if (!MNONE(7) && args[7].u.i == 0) return wk_error(WK_ERR_INVALID_ARG, "%s(): divisor must be not zero", MNAME);
  wk_status s = pool_check(op, x, &args[2], d, args[5].u.b, shape);
  if (!s) s = check_shape_is(op, "grad_output", go, shape, x->ndim);
  if (s) return s;
  wk_dtype dt = x->dtype;
  if (go->dtype != dt)
    return wk_error(WK_ERR_DTYPE, "%s(): expected dtype %s for `gradOutput` but got dtype %s", MNAME, wk_dtype_name(dt),
                    wk_dtype_name(go->dtype));
  if (!wk_dtype_is_floating(dt) && dt != WK_I64)
    return wk_error(WK_ERR_DTYPE, "%s(): \"avg_pool2d_backward\" not implemented for '%s'", MNAME, wk__dtype_word(dt));
  wk__meta_like(o, x, dt);
  return WK_OK;
}

/* adaptive_avg_pool2d_backward(grad_output, self) -> grad_input like self; the
 * output size is grad_output's. */
static wk_status meta_adaptive_avg_pool2d_backward(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *go = MT(0), *x = MT(1);
  char a[WK_SHAPE_STR_MAX];
  wk_status s = adaptive_input(op, x);
  if (s) return s;
  int nd = x->ndim;
  if (go->ndim != nd)
    return wk_error(WK_ERR_SHAPE, "%s(): expected grad_output with %d dimensions, but got %s", MNAME, nd,
                    wk__shape_str(go->sizes, go->ndim, a, sizeof a));
  int64_t shape[4];
  pool_shape(x, go->sizes[nd - 2], go->sizes[nd - 1], shape);
  s = check_shape_is(op, "grad_output", go, shape, nd);
  if (!s) s = check_grad_dtype(op, go, x);
  if (s) return s;
  wk__meta_like(o, x, x->dtype);
  return WK_OK;
}

/* ---- the table ------------------------------------------------------------------------- */
static const wk__meta_row g_rows[] = {
    {"conv2d", meta_conv2d},
    {"conv2d_backward", meta_conv2d_backward},
    {"max_pool2d_with_indices", meta_max_pool2d},
    {"max_pool2d_with_indices_backward", meta_max_pool2d_backward},
    {"avg_pool2d", meta_avg_pool2d},
    {"avg_pool2d_backward", meta_avg_pool2d_backward},
    {"adaptive_avg_pool2d", meta_adaptive_avg_pool2d},
    {"adaptive_avg_pool2d_backward", meta_adaptive_avg_pool2d_backward},
};

const wk__meta_family wk__metas_conv = {g_rows, sizeof g_rows / sizeof g_rows[0]};
