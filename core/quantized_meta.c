/* Meta functions of the quantization ops: quantize_per_tensor/_per_channel,
 * dequantize, int_repr, the int8 compute ops (quantized_linear,
 * quantized_conv2d, quantized_linear_dynamic) and the fake-quantize ops of
 * QAT with their backward. Dtypes, q-parameter ranges and shapes are checked
 * here once; the kernels (cpu plugin) only compute. */
#include <math.h>
#include <stdio.h>

#include <wick/sdk/check.h>

#include "meta.h"

static wk_status need_floating(const wk_op *op, const char *what, const wk_tensor *t) {
  if (wk_dtype_is_floating(t->dtype)) return WK_OK;
  return wk_error(WK_ERR_DTYPE, "%s(): expected a floating point %s, got %s", wk_op_name(op), what,
                  wk_dtype_name(t->dtype));
}

static wk_status need_qdtype(const wk_op *op, wk_dtype dt) {
  if (wk_dtype_is_quantized(dt)) return WK_OK;
  return wk_error(WK_ERR_DTYPE, "%s(): dtype must be qint8, quint8 or qint32, got %s", wk_op_name(op),
                  wk_dtype_name(dt));
}

static wk_status check_scale(const wk_op *op, double scale) {
  if (scale > 0 && isfinite(scale) && (float)scale > 0 && isfinite((float)scale)) return WK_OK;
  return wk_error(WK_ERR_INVALID_ARG, "%s(): scale must be a positive finite float32 value, got %g", wk_op_name(op),
                  scale);
}

static wk_status check_zp(const wk_op *op, wk_dtype dt, int64_t zp) {
  if (zp >= wk_dtype_qmin(dt) && zp <= wk_dtype_qmax(dt)) return WK_OK;
  return wk_error(WK_ERR_INVALID_ARG, "%s(): zero_point %lld is out of range for %s [%lld, %lld]", wk_op_name(op),
                  (long long)zp, wk_dtype_name(dt), (long long)wk_dtype_qmin(dt), (long long)wk_dtype_qmax(dt));
}

/* scales / zero_points of a per-channel op: 1-D, the size of self's axis. */
static wk_status check_channel_params(const wk_op *op, const wk_tensor *self, const wk_tensor *sc,
                                      const wk_tensor *zp, int64_t axis, int *ax) {
  wk_status s = wk_check_dim(wk_op_name(op), axis, self->ndim ? self->ndim : 1, ax);
  if (s) return s;
  if (self->ndim == 0)
    return wk_error(WK_ERR_SHAPE, "%s(): per-channel quantization needs a tensor with at least one dimension",
                    wk_op_name(op));
  if ((s = need_floating(op, "scales tensor", sc))) return s;
  if (!wk_dtype_is_integral(zp->dtype) && !wk_dtype_is_floating(zp->dtype))
    return wk_error(WK_ERR_DTYPE, "%s(): expected an integer zero_points tensor, got %s", wk_op_name(op),
                    wk_dtype_name(zp->dtype));
  int64_t n = self->sizes[*ax];
  if (sc->ndim != 1 || sc->sizes[0] != n || zp->ndim != 1 || zp->sizes[0] != n) {
    char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX];
    return wk_error(WK_ERR_SHAPE,
                    "%s(): expected scales and zero_points of shape [%lld] (size of axis %d), got %s and %s",
                    wk_op_name(op), (long long)n, *ax, wk__shape_str(sc->sizes, sc->ndim, a, sizeof a),
                    wk__shape_str(zp->sizes, zp->ndim, b, sizeof b));
  }
  return WK_OK;
}

/* ---- quantize / dequantize --------------------------------------------------------- */
static wk_status meta_quantize_per_tensor(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *x = MT(0);
  wk_dtype dt = args[3].u.dtype;
  wk_status s = need_floating(op, "input", x);
  if (!s) s = need_qdtype(op, dt);
  if (!s) s = check_scale(op, args[1].u.f);
  if (!s) s = check_zp(op, dt, args[2].u.i);
  if (s) return s;
  wk__meta_like(o, x, dt);
  return WK_OK;
}

static wk_status meta_quantize_per_channel(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *x = MT(0);
  wk_dtype dt = args[4].u.dtype;
  int ax;
  wk_status s = need_floating(op, "input", x);
  if (!s) s = need_qdtype(op, dt);
  if (!s) s = check_channel_params(op, x, MT(1), MT(2), args[3].u.i, &ax);
  if (s) return s;
  wk__meta_like(o, x, dt);
  return WK_OK;
}

/* PyTorch's dequantize returns a float tensor unchanged (as float32 here). */
static wk_status meta_dequantize(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *x = MT(0);
  if (!wk_dtype_is_quantized(x->dtype) && !wk_dtype_is_floating(x->dtype))
    return wk_error(WK_ERR_DTYPE, "%s(): expected a quantized or floating tensor, got %s", MNAME,
                    wk_dtype_name(x->dtype));
  if (wk_dtype_is_quantized(x->dtype) && !x->quant)
    return wk_error(WK_ERR_STATE, "%s(): the %s tensor has no quantization parameters", MNAME,
                    wk_dtype_name(x->dtype));
  wk__meta_like(o, x, WK_F32);
  return WK_OK;
}

static wk_status meta_int_repr(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *x = MT(0);
  if (!wk_dtype_is_quantized(x->dtype))
    return wk_error(WK_ERR_DTYPE, "%s(): expected a quantized tensor, got %s", MNAME, wk_dtype_name(x->dtype));
  wk__meta_like(o, x, wk_dtype_quantized_underlying(x->dtype));
  return WK_OK;
}

/* ---- int8 compute ------------------------------------------------------------------ */
/* input: quint8 per tensor; weight: qint8 per tensor or per channel along 0;
 * bias: f32 of [out] or None. */
static wk_status q_operands(const wk_op *op, const wk_tensor *x, const wk_tensor *w, const wk_tensor *b,
                            bool dynamic) {
  if (dynamic) {
    wk_status s = need_floating(op, "input", x);
    if (s) return s;
  } else if (x->dtype != WK_QUINT8 || wk_tensor_qscheme(x) != WK_PER_TENSOR_AFFINE) {
    return wk_error(WK_ERR_DTYPE, "%s(): expected a per-tensor quantized quint8 input, got %s%s", wk_op_name(op),
                    wk_dtype_name(x->dtype), wk_dtype_is_quantized(x->dtype) ? " (per channel)" : "");
  }
  wk_qscheme ws = wk_tensor_qscheme(w);
  if (w->dtype != WK_QINT8 || ws == WK_QSCHEME_NONE)
    return wk_error(WK_ERR_DTYPE, "%s(): expected a quantized qint8 weight, got %s", wk_op_name(op),
                    wk_dtype_name(w->dtype));
  if (ws == WK_PER_CHANNEL_AFFINE && wk_q_per_channel_axis(w) != 0)
    return wk_error(WK_ERR_INVALID_ARG, "%s(): a per-channel weight must be quantized along axis 0, got axis %lld",
                    wk_op_name(op), (long long)wk_q_per_channel_axis(w));
  if (b) {
    if (b->dtype != WK_F32)
      return wk_error(WK_ERR_DTYPE, "%s(): expected a float32 bias, got %s", wk_op_name(op), wk_dtype_name(b->dtype));
    if (b->ndim != 1 || w->ndim < 1 || b->sizes[0] != w->sizes[0])
      return wk_error(WK_ERR_SHAPE, "%s(): bias of %lld elements for %lld output channels", wk_op_name(op),
                      (long long)wk_tensor_numel(b), (long long)(w->ndim ? w->sizes[0] : 0));
  }
  return WK_OK;
}

static wk_status linear_common(wk_op *op, const wk_value *args, wk_meta_out *o, bool dynamic) {
  wk_tensor *x = MT(0), *w = MT(1), *b = MNONE(2) ? NULL : MT(2);
  wk_status s = q_operands(op, x, w, b, dynamic);
  if (s) return s;
  if (w->ndim != 2 || x->ndim < 1 || x->sizes[x->ndim - 1] != w->sizes[1]) {
    char a[WK_SHAPE_STR_MAX], c[WK_SHAPE_STR_MAX];
    return wk_error(WK_ERR_SHAPE, "%s(): input of shape %s and weight of shape %s cannot be multiplied", MNAME,
                    wk__shape_str(x->sizes, x->ndim, a, sizeof a), wk__shape_str(w->sizes, w->ndim, c, sizeof c));
  }
  wk__meta_like(o, x, dynamic ? WK_F32 : WK_QUINT8);
  o->sizes[x->ndim - 1] = w->sizes[0];
  return WK_OK;
}

static wk_status meta_quantized_linear(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_status s = check_scale(op, args[3].u.f);
  if (!s) s = check_zp(op, WK_QUINT8, args[4].u.i);
  return s ? s : linear_common(op, args, o, false);
}

static wk_status meta_quantized_linear_dynamic(wk_op *op, const wk_value *args, wk_meta_out *o) {
  return linear_common(op, args, o, true);
}

static wk_status meta_quantized_conv2d(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *x = MT(0), *w = MT(1), *b = MNONE(2) ? NULL : MT(2);
  wk_status s = check_scale(op, args[7].u.f);
  if (!s) s = check_zp(op, WK_QUINT8, args[8].u.i);
  if (!s) s = q_operands(op, x, w, b, false);
  if (s) return s;
  const int64_t *st = args[3].u.ints, *pd = args[4].u.ints, *dl = args[5].u.ints;
  int64_t g = args[6].u.i;
  char a[WK_SHAPE_STR_MAX], c[WK_SHAPE_STR_MAX];
  if (x->ndim != 4 || w->ndim != 4)
    return wk_error(WK_ERR_SHAPE, "%s(): expected a 4-D input and a 4-D weight, got %s and %s", MNAME,
                    wk__shape_str(x->sizes, x->ndim, a, sizeof a), wk__shape_str(w->sizes, w->ndim, c, sizeof c));
  if (g < 1 || w->sizes[0] % g != 0 || x->sizes[1] != w->sizes[1] * g)
    return wk_error(WK_ERR_SHAPE, "%s(): input of shape %s, weight of shape %s and groups=%lld do not match", MNAME,
                    wk__shape_str(x->sizes, x->ndim, a, sizeof a), wk__shape_str(w->sizes, w->ndim, c, sizeof c),
                    (long long)g);
  int64_t out[4] = {x->sizes[0], w->sizes[0], 0, 0};
  for (int i = 0; i < 2; i++) {
    if (st[i] < 1 || pd[i] < 0 || dl[i] < 1)
      return wk_error(WK_ERR_INVALID_ARG, "%s(): stride and dilation must be positive and padding non-negative",
                      MNAME);
    int64_t span = dl[i] * (w->sizes[2 + i] - 1) + 1;
    int64_t in = x->sizes[2 + i] + 2 * pd[i];
    if (in < span)
      return wk_error(WK_ERR_SHAPE, "%s(): kernel size can't be greater than the padded input size", MNAME);
    out[2 + i] = (in - span) / st[i] + 1;
  }
  wk__meta_shape(o, out, 4, WK_QUINT8);
  return WK_OK;
}

/* ---- fake quantize ------------------------------------------------------------------- */
static wk_status fq_range(const wk_op *op, int64_t qmin, int64_t qmax, int64_t zp, bool have_zp) {
  if (qmin > qmax)
    return wk_error(WK_ERR_INVALID_ARG, "%s(): `quant_min` %lld should be less than or equal to `quant_max` %lld",
                    wk_op_name(op), (long long)qmin, (long long)qmax);
  if (have_zp && (zp < qmin || zp > qmax))
    return wk_error(WK_ERR_INVALID_ARG, "%s(): `zero_point` %lld must be between `quant_min` and `quant_max`",
                    wk_op_name(op), (long long)zp);
  return WK_OK;
}

static wk_status meta_fq_tensor(wk_op *op, const wk_value *args, wk_meta_out *o) {
  bool bw = strstr(MNAME, "backward") != NULL;
  int a0 = bw ? 1 : 0; /* backward: (grad, self, ...) */
  wk_tensor *x = MT(a0);
  wk_status s = need_floating(op, "input", x);
  if (!s && bw && (MT(0)->ndim != x->ndim || memcmp(MT(0)->sizes, x->sizes, sizeof(int64_t) * (size_t)x->ndim)))
    s = wk_error(WK_ERR_SHAPE, "%s(): grad and self must have the same shape", MNAME);
  if (!s) s = check_scale(op, args[a0 + 1].u.f);
  if (!s) s = fq_range(op, args[a0 + 3].u.i, args[a0 + 4].u.i, args[a0 + 2].u.i, true);
  if (s) return s;
  wk__meta_like(o, x, x->dtype);
  return WK_OK;
}

static wk_status meta_fq_channel(wk_op *op, const wk_value *args, wk_meta_out *o) {
  bool bw = strstr(MNAME, "backward") != NULL;
  int a0 = bw ? 1 : 0, ax;
  wk_tensor *x = MT(a0);
  wk_status s = need_floating(op, "input", x);
  if (!s && bw && (MT(0)->ndim != x->ndim || memcmp(MT(0)->sizes, x->sizes, sizeof(int64_t) * (size_t)x->ndim)))
    s = wk_error(WK_ERR_SHAPE, "%s(): grad and self must have the same shape", MNAME);
  if (!s) s = check_channel_params(op, x, MT(a0 + 1), MT(a0 + 2), args[a0 + 3].u.i, &ax);
  if (!s) s = fq_range(op, args[a0 + 4].u.i, args[a0 + 5].u.i, 0, false);
  if (s) return s;
  wk__meta_like(o, x, x->dtype);
  return WK_OK;
}

static const wk__meta_row g_rows[] = {
    {"quantize_per_tensor", meta_quantize_per_tensor},
    {"quantize_per_channel", meta_quantize_per_channel},
    {"dequantize", meta_dequantize},
    {"int_repr", meta_int_repr},
    {"quantized_linear", meta_quantized_linear},
    {"quantized_linear_dynamic", meta_quantized_linear_dynamic},
    {"quantized_conv2d", meta_quantized_conv2d},
    {"fake_quantize_per_tensor_affine", meta_fq_tensor},
    {"fake_quantize_per_tensor_affine_backward", meta_fq_tensor},
    {"fake_quantize_per_channel_affine", meta_fq_channel},
    {"fake_quantize_per_channel_affine_backward", meta_fq_channel},
};

const wk__meta_family wk__metas_quant = {g_rows, sizeof g_rows / sizeof g_rows[0]};
