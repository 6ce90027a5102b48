/* Quantized tensors (ABI 1.3): the quantization parameters a qint8/quint8/
 * qint32 tensor carries (per-tensor or per-channel, shared by its views),
 * their accessors, the zero-copy constructors kernels build results with, and
 * the quantized dtypes' facts. The quantize/dequantize ops are standard ops
 * (meta in quantized_meta.c, kernels in the cpu plugin). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct wk__qparams {
  atomic_int refcount;
  wk_qscheme scheme; /* WK_PER_TENSOR_AFFINE or WK_PER_CHANNEL_AFFINE */
  double scale;      /* per tensor */
  int64_t zero_point;
  int64_t axis, nch; /* per channel */
  double *scales;
  int64_t *zero_points;
} wk__qparams;

void *wk__qparams_retain(void *q) {
  if (q) atomic_fetch_add(&((wk__qparams *)q)->refcount, 1);
  return q;
}

void wk__qparams_release(void *q) {
  wk__qparams *p = q;
  if (!p || atomic_fetch_sub(&p->refcount, 1) != 1) return;
  free(p->scales);
  free(p->zero_points);
  free(p);
}

/* ---- dtype facts ------------------------------------------------------------------- */
bool wk_dtype_is_quantized(wk_dtype dt) { return dt == WK_QINT8 || dt == WK_QUINT8 || dt == WK_QINT32; }

wk_dtype wk_dtype_quantized_underlying(wk_dtype dt) {
  switch (dt) {
#define WK__X(e, n, s, t, w, sz, u) \
  case e:                           \
    return u;
    WK_QDTYPE_LIST(WK__X)
#undef WK__X
    default: return WK_DTYPE_DEFAULT;
  }
}

int64_t wk_dtype_qmin(wk_dtype dt) {
  switch (dt) {
    case WK_QINT8: return -128;
    case WK_QUINT8: return 0;
    case WK_QINT32: return INT32_MIN;
    default: return 0;
  }
}

int64_t wk_dtype_qmax(wk_dtype dt) {
  switch (dt) {
    case WK_QINT8: return 127;
    case WK_QUINT8: return 255;
    case WK_QINT32: return INT32_MAX;
    default: return 0;
  }
}

const char *wk_qscheme_name(wk_qscheme s) {
  switch (s) {
    case WK_PER_TENSOR_AFFINE: return "torch.per_tensor_affine";
    case WK_PER_CHANNEL_AFFINE: return "torch.per_channel_affine";
    case WK_PER_TENSOR_SYMMETRIC: return "torch.per_tensor_symmetric";
    case WK_PER_CHANNEL_SYMMETRIC: return "torch.per_channel_symmetric";
    default: return "?";
  }
}

/* ---- accessors --------------------------------------------------------------------- */
wk_qscheme wk_tensor_qscheme(const wk_tensor *t) {
  if (!t || !t->quant) return WK_QSCHEME_NONE;
  return ((const wk__qparams *)t->quant)->scheme;
}

static const wk__qparams *want(const char *fn, const wk_tensor *t, wk_qscheme s) {
  if (!t) {
    wk__null_arg(fn, "self");
    return NULL;
  }
  const wk__qparams *p = t->quant;
  if (!p || p->scheme != s) {
    wk_error(WK_ERR_DTYPE, "%s(): expected a %s quantized tensor, got %s%s", fn, wk_qscheme_name(s),
             p ? "a tensor quantized with " : "a tensor of dtype ", p ? wk_qscheme_name(p->scheme) : wk_dtype_name(t->dtype));
    return NULL;
  }
  return p;
}

double wk_q_scale(const wk_tensor *t) {
  const wk__qparams *p = want("q_scale", t, WK_PER_TENSOR_AFFINE);
  return p ? p->scale : NAN;
}

int64_t wk_q_zero_point(const wk_tensor *t) {
  const wk__qparams *p = want("q_zero_point", t, WK_PER_TENSOR_AFFINE);
  return p ? p->zero_point : 0;
}

wk_tensor *wk_q_per_channel_scales(const wk_tensor *t) {
  const wk__qparams *p = want("q_per_channel_scales", t, WK_PER_CHANNEL_AFFINE);
  if (!p) return NULL;
  int64_t n = p->nch;
  return wk_tensor_from_data(p->scales, WK_F64, &n, 1);
}

wk_tensor *wk_q_per_channel_zero_points(const wk_tensor *t) {
  const wk__qparams *p = want("q_per_channel_zero_points", t, WK_PER_CHANNEL_AFFINE);
  if (!p) return NULL;
  int64_t n = p->nch;
  return wk_tensor_from_data(p->zero_points, WK_I64, &n, 1);
}

int64_t wk_q_per_channel_axis(const wk_tensor *t) {
  const wk__qparams *p = want("q_per_channel_axis", t, WK_PER_CHANNEL_AFFINE);
  return p ? p->axis : -1;
}

double wk__q_dequant_at(const wk_tensor *t, double q, const int64_t *idx) {
  const wk__qparams *p = t->quant;
  if (p->scheme == WK_PER_TENSOR_AFFINE) return (float)(q - (double)p->zero_point) * (float)p->scale;
  int64_t c = t->ndim ? idx[p->axis] : 0;
  return (float)(q - (double)p->zero_points[c]) * (float)p->scales[c];
}

/* ---- constructors -------------------------------------------------------------------- */
static wk_dtype qdtype_of(wk_dtype dt) {
  switch (dt) {
    case WK_I8: return WK_QINT8;
    case WK_U8: return WK_QUINT8;
    case WK_I32: return WK_QINT32;
    default: return WK_DTYPE_DEFAULT;
  }
}

static bool check_scale(const char *fn, double scale) {
  if (!(scale > 0) || !isfinite(scale) || !isfinite((float)scale) || (float)scale == 0) {
    wk_error(WK_ERR_INVALID_ARG, "%s(): scale must be a positive finite float32 value, got %g", fn, scale);
    return false;
  }
  return true;
}

static bool check_zp(const char *fn, wk_dtype qdt, int64_t zp) {
  if (zp < wk_dtype_qmin(qdt) || zp > wk_dtype_qmax(qdt)) {
    wk_error(WK_ERR_INVALID_ARG, "%s(): zero_point %lld is out of range for %s [%lld, %lld]", fn, (long long)zp,
             wk_dtype_name(qdt), (long long)wk_dtype_qmin(qdt), (long long)wk_dtype_qmax(qdt));
    return false;
  }
  return true;
}

static wk_dtype check_repr(const char *fn, const wk_tensor *r) {
  if (!r) {
    wk__null_arg(fn, "int_repr");
    return WK_DTYPE_DEFAULT;
  }
  wk_dtype q = qdtype_of(r->dtype);
  if (!q)
    wk_error(WK_ERR_DTYPE, "%s(): int_repr must be an i8, u8 or i32 tensor, got %s", fn, wk_dtype_name(r->dtype));
  return q;
}

static wk_tensor *finish(wk_tensor *r, wk_dtype q, wk__qparams *p) {
  wk_tensor *t = wk__tensor_new(r->storage, q, r->ndim, r->sizes, r->strides, r->offset);
  if (!t) {
    wk__qparams_release(p);
    return NULL;
  }
  t->quant = p;
  if (wk__call_depth == 0) wk__scope_adopt(t);
  return t;
}

wk_tensor *wk_make_per_tensor_quantized(wk_tensor *int_repr, double scale, int64_t zero_point) {
  const char *fn = "make_per_tensor_quantized_tensor";
  wk_dtype q = check_repr(fn, int_repr);
  if (!q || !check_scale(fn, scale) || !check_zp(fn, q, zero_point)) return NULL;
  wk__qparams *p = wk_calloc(1, sizeof *p);
  if (!p) {
    wk_error(WK_ERR_NO_MEMORY, "%s(): out of memory", fn);
    return NULL;
  }
  atomic_init(&p->refcount, 1);
  p->scheme = WK_PER_TENSOR_AFFINE;
  p->scale = scale;
  p->zero_point = zero_point;
  return finish(int_repr, q, p);
}

wk_tensor *wk_make_per_channel_quantized(wk_tensor *int_repr, wk_tensor *scales, wk_tensor *zero_points,
                                         int64_t axis) {
  const char *fn = "make_per_channel_quantized_tensor";
  wk_dtype q = check_repr(fn, int_repr);
  if (!q) return NULL;
  if (!scales || !zero_points) {
    wk__null_arg(fn, scales ? "zero_points" : "scales");
    return NULL;
  }
  bool ok = true;
  int ax = wk__wrap_dim(fn, axis, int_repr->ndim, &ok);
  if (!ok) return NULL;
  if (int_repr->ndim == 0)
    return wk_error(WK_ERR_SHAPE, "%s(): a per-channel quantized tensor needs at least one dimension", fn), NULL;
  int64_t n = int_repr->sizes[ax];
  if (!wk_dtype_is_floating(scales->dtype) || !wk_dtype_is_integral(zero_points->dtype))
    return wk_error(WK_ERR_DTYPE, "%s(): expected floating scales and integer zero_points, got %s and %s", fn,
                    wk_dtype_name(scales->dtype), wk_dtype_name(zero_points->dtype)),
           NULL;
  if (scales->ndim != 1 || zero_points->ndim != 1 || scales->sizes[0] != n || zero_points->sizes[0] != n)
    return wk_error(WK_ERR_SHAPE,
                    "%s(): expected scales and zero_points of shape [%lld] (the size of axis %d), got %lld and %lld "
                    "elements",
                    fn, (long long)n, ax, (long long)wk_tensor_numel(scales), (long long)wk_tensor_numel(zero_points)),
           NULL;
  wk__qparams *p = wk_calloc(1, sizeof *p);
  double *sc = wk_malloc(sizeof(double) * (size_t)(n ? n : 1)), *zd = wk_malloc(sizeof(double) * (size_t)(n ? n : 1));
  int64_t *zp = wk_malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  if (!p || !sc || !zd || !zp) {
    free(p), free(sc), free(zd), free(zp);
    return wk_error(WK_ERR_NO_MEMORY, "%s(): out of memory", fn), NULL;
  }
  wk_status s = wk_tensor_to_f64(scales, sc, n);
  if (!s) s = wk_tensor_to_f64(zero_points, zd, n);
  for (int64_t c = 0; !s && c < n; c++) {
    zp[c] = (int64_t)zd[c];
    if (!check_scale(fn, sc[c]) || !check_zp(fn, q, zp[c])) s = wk_last_error();
  }
  free(zd);
  if (s) {
    free(p), free(sc), free(zp);
    return NULL;
  }
  atomic_init(&p->refcount, 1);
  p->scheme = WK_PER_CHANNEL_AFFINE;
  p->axis = ax;
  p->nch = n;
  p->scales = sc;
  p->zero_points = zp;
  return finish(int_repr, q, p);
}
