/* cpu reference kernels of the quantization ops: quantize/dequantize with
 * PyTorch's (fbgemm's) rounding, int_repr, the fake-quantize ops of QAT and
 * their straight-through backward, and the int8 compute ops: quantized_linear
 * and quantized_conv2d (exact int32 accumulation of (x - x_zp)(w - w_zp),
 * requantised as fbgemm's ReQuantizeOutput does with a float bias) and
 * quantized_linear_dynamic (activations quantized per call with fbgemm's
 * ChooseQuantizationParams, float output). The core's meta functions checked
 * dtypes, q-parameters and shapes. */
#include <math.h>
#include <stdlib.h>

#include "cpu.h"

/* ---- element access ------------------------------------------------------------------ */
/* The integers of a (strided) quantized or integer tensor, row-major, as int32. */
static int32_t *load_ints(wk_tensor *t, int64_t *n_out) {
  int64_t n = wk_tensor_numel(t);
  *n_out = n;
  int32_t *v = wk_malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
  if (!v) {
    wk_error(WK_ERR_NO_MEMORY, "quantized kernel: out of memory");
    return NULL;
  }
  wk_dtype dt = wk_tensor_dtype(t);
  if (wk_dtype_is_quantized(dt)) dt = wk_dtype_quantized_underlying(dt);
  const char *base = wk_tensor_data(t);
  int nd = wk_tensor_dim(t);
  const int64_t *sz = wk_tensor_sizes(t), *st = wk_tensor_strides(t);
  size_t es = wk_dtype_size(dt);
  int64_t idx[WK_MAX_DIMS] = {0};
  for (int64_t k = 0; k < n; k++) {
    int64_t off = 0;
    for (int d = 0; d < nd; d++) off += idx[d] * st[d];
    const char *p = base + off * (int64_t)es;
    v[k] = dt == WK_I8 ? *(const int8_t *)p : dt == WK_U8 ? *(const uint8_t *)p : *(const int32_t *)p;
    for (int d = nd - 1; d >= 0; d--) {
      if (++idx[d] < sz[d]) break;
      idx[d] = 0;
    }
  }
  return v;
}

/* A new contiguous float32 copy of a floating tensor (NULL on error). */
static wk_tensor *f32_of(wk_tensor *x) { return cpu_prep(x, WK_F32); }

static void store_int(void *data, wk_dtype under, int64_t i, int64_t q) {
  if (under == WK_I8)
    ((int8_t *)data)[i] = (int8_t)q;
  else if (under == WK_U8)
    ((uint8_t *)data)[i] = (uint8_t)q;
  else
    ((int32_t *)data)[i] = (int32_t)q;
}

/* fbgemm::Quantize<T, LEGACY=false>: zero_point + nearbyint(x * (1.0f / scale))
 * in float32 (ties to even), then clamped in double. */
static int64_t quantize_val(float x, float inv_scale, int64_t zp, int64_t qmin, int64_t qmax) {
  float tv = (float)zp + nearbyintf(x * inv_scale);
  double d = tv;
  if (isnan(d)) d = (double)zp;
  if (d < (double)qmin) d = (double)qmin;
  if (d > (double)qmax) d = (double)qmax;
  return (int64_t)d;
}

/* Channel parameters of a per-channel op as doubles / integers (n entries). */
static wk_status channel_params(wk_tensor *sc, wk_tensor *zp, int64_t n, double **s_out, int64_t **z_out) {
  double *s = wk_malloc(sizeof(double) * (size_t)(n ? n : 1)), *zd = wk_malloc(sizeof(double) * (size_t)(n ? n : 1));
  int64_t *z = wk_malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  wk_status st = (!s || !zd || !z) ? wk_error(WK_ERR_NO_MEMORY, "quantized kernel: out of memory") : WK_OK;
  if (!st) st = wk_tensor_to_f64(sc, s, n);
  if (!st) st = wk_tensor_to_f64(zp, zd, n);
  for (int64_t i = 0; !st && i < n; i++) z[i] = (int64_t)nearbyint(zd[i]);
  wk_free(zd);
  if (st) {
    wk_free(s);
    wk_free(z);
    return st;
  }
  *s_out = s;
  *z_out = z;
  return WK_OK;
}

/* outer x channels x inner split of a shape around axis. */
static void split_axis(wk_tensor *t, int axis, int64_t *outer, int64_t *ch, int64_t *inner) {
  const int64_t *sz = wk_tensor_sizes(t);
  int nd = wk_tensor_dim(t);
  *outer = 1, *inner = 1;
  for (int d = 0; d < axis; d++) *outer *= sz[d];
  for (int d = axis + 1; d < nd; d++) *inner *= sz[d];
  *ch = nd ? sz[axis] : 1;
}

static int norm_axis(int64_t axis, int nd) { return (int)(axis < 0 ? axis + nd : axis); }

/* True when t's elements fill its memory exactly once in some order of the
 * dimensions (contiguous, channels-last, any permutation): elementwise
 * kernels then run over the memory linearly and give their result the same
 * strides. */
static bool dense_any_order(const wk_tensor *t) {
  int nd = wk_tensor_dim(t);
  const int64_t *sz = wk_tensor_sizes(t), *st = wk_tensor_strides(t);
  int idx[WK_MAX_DIMS], m = 0;
  for (int d = 0; d < nd; d++)
    if (sz[d] != 1) idx[m++] = d;
  for (int i = 1; i < m; i++) /* by stride, descending */
    for (int j = i; j > 0 && st[idx[j]] > st[idx[j - 1]]; j--) {
      int k = idx[j];
      idx[j] = idx[j - 1];
      idx[j - 1] = k;
    }
  int64_t want = 1;
  for (int i = m - 1; i >= 0; i--) {
    if (st[idx[i]] != want) return false;
    want *= sz[idx[i]];
  }
  return true;
}

/* A new cpu tensor of dtype dt with t's sizes and strides (t dense). */
static wk_tensor *empty_like_strided(const wk_tensor *t, wk_dtype dt) {
  wk_options o = {0};
  o.dtype = dt;
  return wk_empty_strided(wk_tensor_sizes(t), wk_tensor_strides(t), wk_tensor_dim(t), o);
}

/* ---- quantize / dequantize / int_repr ---------------------------------------------------- */
static wk_status k_quantize_per_tensor(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  double scale = args[1].u.f;
  int64_t zp = args[2].u.i;
  wk_dtype qdt = args[3].u.dtype, under = wk_dtype_quantized_underlying(qdt);
  wk_tensor *in = args[0].u.t;
  /* a dense f32 input in any dimension order is read in place, and the
   * result keeps its strides (channels-last stays channels-last) */
  bool dense = wk_tensor_dtype(in) == WK_F32 && dense_any_order(in);
  wk_tensor *x = dense ? wk_retain(in) : f32_of(in);
  if (!x) return wk_last_error();
  wk_tensor *r = dense ? empty_like_strided(x, under) : cpu_empty(wk_tensor_sizes(x), wk_tensor_dim(x), under);
  if (!r) {
    wk_release(x);
    return wk_last_error();
  }
  const float *xs = wk_tensor_data(x);
  void *rd = wk_tensor_data(r);
  float inv = 1.0f / (float)scale;
  int64_t lo = wk_dtype_qmin(qdt), hi = wk_dtype_qmax(qdt), n = wk_tensor_numel(x);
  for (int64_t i = 0; i < n; i++) store_int(rd, under, i, quantize_val(xs[i], inv, zp, lo, hi));
  wk_tensor *q = wk_make_per_tensor_quantized(r, scale, zp);
  wk_release(r);
  wk_release(x);
  return wk_kernel_done(WK_OK, q, outs);
}

static wk_status k_quantize_per_channel(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  wk_dtype qdt = args[4].u.dtype, under = wk_dtype_quantized_underlying(qdt);
  wk_tensor *x = f32_of(args[0].u.t);
  if (!x) return wk_last_error();
  int axis = norm_axis(args[3].u.i, wk_tensor_dim(x));
  int64_t outer, ch, inner;
  split_axis(x, axis, &outer, &ch, &inner);
  double *sc = NULL;
  int64_t *zp = NULL;
  wk_tensor *r = NULL, *q = NULL;
  wk_status s = channel_params(args[1].u.t, args[2].u.t, ch, &sc, &zp);
  for (int64_t c = 0; !s && c < ch; c++)
    if (zp[c] < wk_dtype_qmin(qdt) || zp[c] > wk_dtype_qmax(qdt) || !((float)sc[c] > 0) || !isfinite((float)sc[c]))
      s = wk_error(WK_ERR_INVALID_ARG,
                   "quantize_per_channel(): channel %lld has scale %g and zero_point %lld (scale must be positive, "
                   "zero_point within [%lld, %lld])",
                   (long long)c, sc[c], (long long)zp[c], (long long)wk_dtype_qmin(qdt), (long long)wk_dtype_qmax(qdt));
  if (!s && !(r = cpu_empty(wk_tensor_sizes(x), wk_tensor_dim(x), under))) s = wk_last_error();
  if (!s) {
    const float *xs = wk_tensor_data(x);
    void *rd = wk_tensor_data(r);
    int64_t lo = wk_dtype_qmin(qdt), hi = wk_dtype_qmax(qdt);
    for (int64_t o = 0; o < outer; o++)
      for (int64_t c = 0; c < ch; c++) {
        float inv = 1.0f / (float)sc[c];
        for (int64_t i = 0; i < inner; i++) {
          int64_t k = (o * ch + c) * inner + i;
          store_int(rd, under, k, quantize_val(xs[k], inv, zp[c], lo, hi));
        }
      }
    wk_tensor *scl = args[1].u.t, *zpt = args[2].u.t;
    q = wk_make_per_channel_quantized(r, scl, zpt, axis);
    if (!q) s = wk_last_error();
  }
  wk_free(sc);
  wk_free(zp);
  wk_release(r);
  wk_release(x);
  return wk_kernel_done(s, q, outs);
}

/* (float)(q - zp) * (float)scale, fbgemm::Dequantize's float arithmetic. */
static wk_status k_dequantize(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  wk_tensor *q = args[0].u.t;
  if (!wk_dtype_is_quantized(wk_tensor_dtype(q))) return wk_kernel_done(WK_OK, f32_of(q), outs);
  if (wk_tensor_qscheme(q) == WK_PER_TENSOR_AFFINE && wk_tensor_dtype(q) != WK_QINT32 && dense_any_order(q)) {
    /* the memory in order, the result with q's strides */
    wk_tensor *r = empty_like_strided(q, WK_F32);
    if (!r) return wk_last_error();
    float sc = (float)wk_q_scale(q), *rd = wk_tensor_data(r);
    int32_t zp = (int32_t)wk_q_zero_point(q);
    int64_t n = wk_tensor_numel(q);
    if (wk_tensor_dtype(q) == WK_QUINT8) {
      const uint8_t *v = wk_tensor_data(q);
      for (int64_t i = 0; i < n; i++) rd[i] = sc * (float)((int32_t)v[i] - zp);
    } else {
      const int8_t *v = wk_tensor_data(q);
      for (int64_t i = 0; i < n; i++) rd[i] = sc * (float)((int32_t)v[i] - zp);
    }
    return wk_kernel_done(WK_OK, r, outs);
  }
  int64_t n;
  int32_t *v = load_ints(q, &n);
  if (!v) return wk_last_error();
  wk_tensor *r = cpu_empty(wk_tensor_sizes(q), wk_tensor_dim(q), WK_F32);
  if (!r) {
    wk_free(v);
    return wk_last_error();
  }
  float *rd = wk_tensor_data(r);
  wk_status s = WK_OK;
  if (wk_tensor_qscheme(q) == WK_PER_TENSOR_AFFINE) {
    float sc = (float)wk_q_scale(q);
    int64_t zp = wk_q_zero_point(q);
    for (int64_t i = 0; i < n; i++) rd[i] = sc * (float)(v[i] - zp);
  } else {
    wk_tensor *st = wk_q_per_channel_scales(q), *zt = wk_q_per_channel_zero_points(q);
    int axis = (int)wk_q_per_channel_axis(q);
    int64_t outer, ch, inner;
    split_axis(q, axis, &outer, &ch, &inner);
    double *sc = NULL;
    int64_t *zp = NULL;
    s = (st && zt) ? channel_params(st, zt, ch, &sc, &zp) : wk_last_error();
    for (int64_t o = 0; !s && o < outer; o++)
      for (int64_t c = 0; c < ch; c++)
        for (int64_t i = 0; i < inner; i++) {
          int64_t k = (o * ch + c) * inner + i;
          rd[k] = (float)sc[c] * (float)(v[k] - zp[c]);
        }
    wk_free(sc);
    wk_free(zp);
    wk_release(st);
    wk_release(zt);
  }
  wk_free(v);
  return wk_kernel_done(s, r, outs);
}

static wk_status k_int_repr(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  wk_tensor *q = args[0].u.t;
  wk_dtype under = wk_dtype_quantized_underlying(wk_tensor_dtype(q));
  /* dense in its format (row-major or channels-last): the integers are the bytes, copied in that format */
  wk_memory_format fmt = wk_suggest_memory_format(q);
  if (wk_is_contiguous_format(q, fmt)) {
    wk_options o = {.dtype = under, .device = wk_tensor_device(q)};
    wk_tensor *r = wk_empty_format(wk_tensor_sizes(q), wk_tensor_dim(q), o, fmt);
    if (r && wk_tensor_numel(q) > 0)
      memcpy(wk_tensor_data(r), wk_tensor_data(q), (size_t)wk_tensor_numel(q) * wk_dtype_size(under));
    return wk_kernel_done(r ? WK_OK : wk_last_error(), r, outs);
  }
  int64_t n;
  int32_t *v = load_ints(q, &n);
  if (!v) return wk_last_error();
  wk_tensor *r = cpu_empty(wk_tensor_sizes(q), wk_tensor_dim(q), under);
  if (r) {
    void *rd = wk_tensor_data(r);
    for (int64_t i = 0; i < n; i++) store_int(rd, under, i, v[i]);
  }
  wk_free(v);
  return wk_kernel_done(WK_OK, r, outs);
}

/* ---- fake quantize (QAT) ------------------------------------------------------------------- */
/* PyTorch's fake_quantize_tensor_cachemask_kernel: qval = zp + nearbyint(x * inv_scale)
 * (int64), out = (clamp(qval, qmin, qmax) - zp) * scale; the mask (for
 * backward) is qmin <= qval <= qmax. grad != NULL computes grad * mask. */
typedef struct {
  const float *x, *g;
  float *out;
  const double *sc;
  const int64_t *zp;
  int64_t ch, inner, qmin, qmax;
} fq_job;

static void fq_run(void *vj, int64_t b, int64_t e) {
  const fq_job *j = vj;
  for (int64_t k = b; k < e; k++) {
    int64_t c = (k / j->inner) % j->ch;
    float sc = (float)j->sc[c], inv = 1.0f / sc;
    int64_t zp = j->zp[c];
    int64_t qv = zp + (int64_t)nearbyintf(j->x[k] * inv);
    if (j->g) {
      j->out[k] = (qv >= j->qmin && qv <= j->qmax) ? j->g[k] : 0.0f;
    } else {
      int64_t cl = qv < j->qmin ? j->qmin : qv > j->qmax ? j->qmax : qv;
      j->out[k] = (float)(cl - zp) * sc;
    }
  }
}

/* Shared body: x at args[a0], per-channel when sc_t != NULL (axis at ax_i),
 * else scale/zero_point scalars at args[a0 + 1], args[a0 + 2]. */
static wk_status fq_common(const wk_value *args, int a0, bool per_channel, bool backward, wk_value *outs) {
  wk_tensor *xin = args[a0].u.t;
  wk_dtype odt = wk_tensor_dtype(xin);
  wk_tensor *x = f32_of(xin), *g = backward ? f32_of(args[0].u.t) : NULL, *r = NULL, *res = NULL;
  double one_sc;
  int64_t one_zp, *zp = NULL, ch = 1, outer, inner = 1, qmin, qmax;
  double *sc = NULL;
  wk_status s = (!x || (backward && !g)) ? wk_last_error() : WK_OK;
  if (!s && per_channel) {
    int axis = norm_axis(args[a0 + 3].u.i, wk_tensor_dim(x));
    split_axis(x, axis, &outer, &ch, &inner);
    s = channel_params(args[a0 + 1].u.t, args[a0 + 2].u.t, ch, &sc, &zp);
    qmin = args[a0 + 4].u.i, qmax = args[a0 + 5].u.i;
  } else {
    one_sc = args[a0 + 1].u.f, one_zp = args[a0 + 2].u.i;
    qmin = args[a0 + 3].u.i, qmax = args[a0 + 4].u.i;
  }
  if (!s && !(r = cpu_empty(wk_tensor_sizes(x), wk_tensor_dim(x), WK_F32))) s = wk_last_error();
  if (!s) {
    fq_job j = {wk_tensor_data(x), g ? wk_tensor_data(g) : NULL, wk_tensor_data(r), per_channel ? sc : &one_sc,
                per_channel ? zp : &one_zp, ch, inner, qmin, qmax};
    cpu_par(wk_tensor_numel(x), 1, fq_run, &j);
    res = odt == WK_F32 ? wk_retain(r) : wk_to_dtype(r, odt);
    if (!res) s = wk_last_error();
  }
  wk_free(sc);
  wk_free(zp);
  wk_release(r);
  wk_release(x);
  wk_release(g);
  return wk_kernel_done(s, res, outs);
}

static wk_status k_fq_tensor(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  return fq_common(args, 0, false, false, outs);
}
static wk_status k_fq_tensor_bw(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  return fq_common(args, 1, false, true, outs);
}
static wk_status k_fq_channel(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  return fq_common(args, 0, true, false, outs);
}
static wk_status k_fq_channel_bw(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  return fq_common(args, 1, true, true, outs);
}

/* ---- int8 linear / conv ---------------------------------------------------------------------- */
/* Weight q-parameters per output channel (per-tensor ones repeated). */
static wk_status weight_params(wk_tensor *w, int64_t nout, float **wsc, int32_t **wzp) {
  float *s = wk_malloc(sizeof(float) * (size_t)(nout ? nout : 1));
  int32_t *z = wk_malloc(sizeof(int32_t) * (size_t)(nout ? nout : 1));
  if (!s || !z) {
    wk_free(s), wk_free(z);
    return wk_error(WK_ERR_NO_MEMORY, "quantized kernel: out of memory");
  }
  if (wk_tensor_qscheme(w) == WK_PER_TENSOR_AFFINE) {
    for (int64_t i = 0; i < nout; i++) s[i] = (float)wk_q_scale(w), z[i] = (int32_t)wk_q_zero_point(w);
  } else {
    wk_tensor *st = wk_q_per_channel_scales(w), *zt = wk_q_per_channel_zero_points(w);
    double *sd = NULL;
    int64_t *zd = NULL;
    wk_status e = (st && zt) ? channel_params(st, zt, nout, &sd, &zd) : wk_last_error();
    wk_release(st);
    wk_release(zt);
    if (e) {
      wk_free(s), wk_free(z);
      return e;
    }
    for (int64_t i = 0; i < nout; i++) s[i] = (float)sd[i], z[i] = (int32_t)zd[i];
    wk_free(sd), wk_free(zd);
  }
  *wsc = s;
  *wzp = z;
  return WK_OK;
}

/* Requantisation of fbgemm's ReQuantizeOutput with a float bias:
 * y = zp + nearbyint((acc + bias / (sx * sw)) * ((sx * sw) / sy)) in float32,
 * saturated to [0, 255], and to [zp, 255] with a fused ReLU. */
typedef struct {
  float *atws, *mult, *bias_scaled; /* per output channel */
  int32_t ozp;
  bool relu;
} requant;

static wk_status requant_init(requant *rq, float sx, const float *wsc, int64_t nout, const float *bias, double osc,
                              int64_t ozp, bool relu, bool per_tensor) {
  rq->atws = wk_malloc(sizeof(float) * (size_t)(nout ? nout : 1));
  rq->mult = wk_malloc(sizeof(float) * (size_t)(nout ? nout : 1));
  rq->bias_scaled = wk_malloc(sizeof(float) * (size_t)(nout ? nout : 1));
  if (!rq->atws || !rq->mult || !rq->bias_scaled) return wk_error(WK_ERR_NO_MEMORY, "quantized kernel: out of memory");
  for (int64_t n = 0; n < nout; n++) {
    rq->atws[n] = sx * wsc[n];
    rq->mult[n] = rq->atws[n] / (float)osc;
    /* fbgemm's AVX2 path: bias * (1 / atws) per tensor, bias / atws per channel */
    rq->bias_scaled[n] = !bias ? 0.0f : per_tensor ? bias[n] * (1.0f / rq->atws[n]) : bias[n] / rq->atws[n];
  }
  rq->ozp = (int32_t)ozp;
  rq->relu = relu;
  return WK_OK;
}

static void requant_free(requant *rq) {
  wk_free(rq->atws);
  wk_free(rq->mult);
  wk_free(rq->bias_scaled);
}

static inline uint8_t requant_one(const requant *rq, int64_t n, int32_t acc) {
  float xf = (float)acc + rq->bias_scaled[n];
  int64_t r = (int64_t)nearbyintf(xf * rq->mult[n]) + rq->ozp;
  int64_t lo = rq->relu ? rq->ozp : 0;
  return (uint8_t)(r < lo ? lo : r > 255 ? 255 : r);
}

typedef struct {
  const int32_t *x, *w; /* zero points already subtracted */
  int64_t K, N;
  const requant *rq;
  uint8_t *y;
  /* dynamic: float output */
  float *yf;
  const float *bias, *scale_prod;
} lin_job;

static void lin_run(void *vj, int64_t b, int64_t e) {
  const lin_job *j = vj;
  for (int64_t m = b; m < e; m++) {
    const int32_t *xr = j->x + m * j->K;
    for (int64_t n = 0; n < j->N; n++) {
      const int32_t *wr = j->w + n * j->K;
      int32_t acc = 0;
      for (int64_t k = 0; k < j->K; k++) acc += xr[k] * wr[k];
      if (j->yf)
        j->yf[m * j->N + n] = (float)acc * j->scale_prod[n] + (j->bias ? j->bias[n] : 0.0f);
      else
        j->y[m * j->N + n] = requant_one(j->rq, n, acc);
    }
  }
}

/* w's integers minus their zero points, [nout, rest]. */
static int32_t *centered_weight(wk_tensor *w, const int32_t *wzp, int64_t nout) {
  int64_t n;
  int32_t *v = load_ints(w, &n);
  if (!v) return NULL;
  int64_t per = nout ? n / nout : 0;
  for (int64_t i = 0; i < n; i++) v[i] -= wzp[i / (per ? per : 1)];
  return v;
}

static wk_status k_quantized_linear(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *x = args[0].u.t, *w = args[1].u.t, *b = args[2].tag == WK_V_NONE ? NULL : args[2].u.t;
  const wk_meta_out *mo = &ctx->meta[0];
  int64_t N = wk_tensor_size(w, 0), K = wk_tensor_size(w, 1), M = K ? wk_tensor_numel(x) / K : 0;
  float *wsc = NULL, *bias = NULL;
  int32_t *wzp = NULL, *xv = NULL, *wv = NULL;
  requant rq = {0};
  wk_tensor *y = NULL, *bf = NULL, *q = NULL;
  int64_t nx;
  wk_status s = weight_params(w, N, &wsc, &wzp);
  if (!s && b && !(bf = f32_of(b))) s = wk_last_error();
  if (bf) bias = wk_tensor_data(bf);
  if (!s) s = requant_init(&rq, (float)wk_q_scale(x), wsc, N, bias, args[3].u.f, args[4].u.i, args[5].u.b,
                           wk_tensor_qscheme(w) == WK_PER_TENSOR_AFFINE);
  if (!s && (!(xv = load_ints(x, &nx)) || !(wv = centered_weight(w, wzp, N)))) s = wk_last_error();
  if (!s) {
    int32_t xzp = (int32_t)wk_q_zero_point(x);
    for (int64_t i = 0; i < nx; i++) xv[i] -= xzp;
    if (!(y = cpu_empty(mo->sizes, mo->ndim, WK_U8))) s = wk_last_error();
  }
  if (!s) {
    lin_job j = {xv, wv, K, N, &rq, wk_tensor_data(y), NULL, NULL, NULL};
    cpu_par(M, N * K, lin_run, &j);
    if (!(q = wk_make_per_tensor_quantized(y, args[3].u.f, args[4].u.i))) s = wk_last_error();
  }
  requant_free(&rq);
  wk_free(wsc), wk_free(wzp), wk_free(xv), wk_free(wv);
  wk_release(bf);
  wk_release(y);
  return wk_kernel_done(s, q, outs);
}

/* fbgemm's quant_utils::ChooseQuantizationParams (preserve_sparsity = false,
 * no power-of-two scale), as quantized::linear_dynamic calls it. */
static void choose_qparams(float mn, float mx, int32_t qmin, int32_t qmax, bool reduce_range, float *scale_out,
                           int32_t *zp_out) {
  if (reduce_range) {
    qmin /= 2;
    qmax /= 2;
  }
  mn = mn < 0 ? mn : 0.0f;
  mx = mx > 0 ? mx : 0.0f;
  double scale = ((double)mx - mn) / (qmax - qmin);
  if ((float)scale == 0.0f || isinf(1.0f / (float)scale)) scale = 0.1;
  const float small = 6.1e-5f;
  if (scale < small) {
    float org = (float)scale;
    scale = small;
    if (mn == 0.0f)
      mx = small * (float)(qmax - qmin);
    else if (mx == 0.0f)
      mn = -small * (float)(qmax - qmin);
    else {
      float amp = small / org;
      mn *= amp;
      mx *= amp;
    }
  }
  double zfm = qmin - mn / scale, zfx = qmax - mx / scale;
  double efm = fabs((double)qmin) - fabs(mn / scale), efx = fabs((double)qmax) - fabs(mx / scale);
  double izp = efm < efx ? zfm : zfx;
  int32_t zp = izp < qmin ? qmin : izp > qmax ? qmax : (int32_t)nearbyint(izp);
  *scale_out = (float)scale;
  *zp_out = zp;
}

static wk_status k_quantized_linear_dynamic(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *w = args[1].u.t, *b = args[2].tag == WK_V_NONE ? NULL : args[2].u.t;
  const wk_meta_out *mo = &ctx->meta[0];
  int64_t N = wk_tensor_size(w, 0), K = wk_tensor_size(w, 1);
  wk_tensor *x = f32_of(args[0].u.t), *bf = NULL, *y = NULL;
  if (!x) return wk_last_error();
  int64_t nx = wk_tensor_numel(x), M = K ? nx / K : 0;
  float *wsc = NULL, *sp = NULL;
  int32_t *wzp = NULL, *xv = NULL, *wv = NULL;
  wk_status s = weight_params(w, N, &wsc, &wzp);
  if (!s && b && !(bf = f32_of(b))) s = wk_last_error();
  if (!s && (!(xv = wk_malloc(sizeof(int32_t) * (size_t)(nx ? nx : 1))) || !(sp = wk_malloc(sizeof(float) * (size_t)(N ? N : 1)))))
    s = wk_error(WK_ERR_NO_MEMORY, "quantized_linear_dynamic: out of memory");
  if (!s && !(wv = centered_weight(w, wzp, N))) s = wk_last_error();
  if (!s && !(y = cpu_empty(mo->sizes, mo->ndim, WK_F32))) s = wk_last_error();
  if (!s) {
    const float *xs = wk_tensor_data(x);
    float mn = nx ? xs[0] : 0, mx = nx ? xs[0] : 0;
    for (int64_t i = 1; i < nx; i++) mn = xs[i] < mn ? xs[i] : mn, mx = xs[i] > mx ? xs[i] : mx;
    float xsc;
    int32_t xzp;
    choose_qparams(mn, mx, 0, 255, args[3].u.b, &xsc, &xzp);
    float inv = 1.0f / xsc;
    /* fbgemm::Quantize<uint8_t> (LEGACY): nearbyint(zp + x * inv) */
    for (int64_t i = 0; i < nx; i++) {
      float t = nearbyintf((float)xzp + xs[i] * inv);
      t = t < 0 ? 0 : t > 255 ? 255 : t;
      xv[i] = (int32_t)t - xzp;
    }
    for (int64_t n = 0; n < N; n++) sp[n] = xsc * wsc[n];
    lin_job j = {xv, wv, K, N, NULL, NULL, wk_tensor_data(y), bf ? wk_tensor_data(bf) : NULL, sp};
    cpu_par(M, N * K, lin_run, &j);
  }
  wk_free(wsc), wk_free(wzp), wk_free(xv), wk_free(wv), wk_free(sp);
  wk_release(bf);
  wk_release(x);
  return wk_kernel_done(s, y, outs);
}

typedef struct {
  const int32_t *x, *w; /* centered */
  int64_t N, C, H, W, O, kh, kw, OH, OW, g, sh, sw, ph, pw, dh, dw;
  const requant *rq;
  uint8_t *y;
} conv_job;

/* One (image, group) per task: the receptive fields as int16 columns
 * [cpg * kh * kw, OH * OW] (padding reads the zero point, 0 once centred),
 * then per output channel acc[p] += w[o, k] * col[k, p] over contiguous rows
 * (vectorised int16 x int16 -> int32), requantised into y. */
static void conv_run(void *vj, int64_t b, int64_t e) {
  const conv_job *j = vj;
  int64_t cpg = j->C / j->g, opg = j->O / j->g, K = cpg * j->kh * j->kw, P = j->OH * j->OW;
  int16_t *col = wk_malloc(sizeof(int16_t) * (size_t)(K * P > 0 ? K * P : 1));
  int32_t *acc = wk_malloc(sizeof(int32_t) * (size_t)(P ? P : 1));
  if (!col || !acc) { /* out of memory in a worker: the slow path, one output at a time */
    wk_free(col);
    wk_free(acc);
    col = NULL;
  }
  for (int64_t t = b; t < e; t++) {
    int64_t n = t / j->g, gi = t % j->g;
    if (col) {
      for (int64_t c = 0; c < cpg; c++) {
        const int32_t *xc = j->x + ((n * j->C) + gi * cpg + c) * j->H * j->W;
        for (int64_t i = 0; i < j->kh; i++)
          for (int64_t k = 0; k < j->kw; k++) {
            int16_t *row = col + ((c * j->kh + i) * j->kw + k) * P;
            for (int64_t oh = 0; oh < j->OH; oh++) {
              int64_t ih = oh * j->sh - j->ph + i * j->dh;
              for (int64_t ow = 0; ow < j->OW; ow++) {
                int64_t iw = ow * j->sw - j->pw + k * j->dw;
                row[oh * j->OW + ow] = (ih < 0 || ih >= j->H || iw < 0 || iw >= j->W) ? 0 : (int16_t)xc[ih * j->W + iw];
              }
            }
          }
      }
    }
    for (int64_t oo = 0; oo < opg; oo++) {
      int64_t o = gi * opg + oo;
      const int32_t *wo = j->w + o * K;
      uint8_t *yo = j->y + (n * j->O + o) * P;
      if (col) {
        for (int64_t p = 0; p < P; p++) acc[p] = 0;
        for (int64_t k = 0; k < K; k++) {
          int16_t wv = (int16_t)wo[k];
          if (!wv) continue;
          const int16_t *row = col + k * P;
          for (int64_t p = 0; p < P; p++) acc[p] += (int32_t)wv * row[p];
        }
        for (int64_t p = 0; p < P; p++) yo[p] = requant_one(j->rq, o, acc[p]);
        continue;
      }
      for (int64_t oh = 0; oh < j->OH; oh++)
        for (int64_t ow = 0; ow < j->OW; ow++) {
          int32_t a = 0;
          for (int64_t c = 0; c < cpg; c++) {
            const int32_t *xc = j->x + ((n * j->C) + gi * cpg + c) * j->H * j->W;
            for (int64_t i = 0; i < j->kh; i++) {
              int64_t ih = oh * j->sh - j->ph + i * j->dh;
              if (ih < 0 || ih >= j->H) continue;
              for (int64_t k = 0; k < j->kw; k++) {
                int64_t iw = ow * j->sw - j->pw + k * j->dw;
                if (iw >= 0 && iw < j->W) a += xc[ih * j->W + iw] * wo[(c * j->kh + i) * j->kw + k];
              }
            }
          }
          yo[oh * j->OW + ow] = requant_one(j->rq, o, a);
        }
    }
  }
  wk_free(col);
  wk_free(acc);
}

static wk_status k_quantized_conv2d(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *x = args[0].u.t, *w = args[1].u.t, *b = args[2].tag == WK_V_NONE ? NULL : args[2].u.t;
  const wk_meta_out *mo = &ctx->meta[0];
  const int64_t *xs = wk_tensor_sizes(x), *ws = wk_tensor_sizes(w);
  int64_t O = ws[0];
  float *wsc = NULL, *bias = NULL;
  int32_t *wzp = NULL, *xv = NULL, *wv = NULL;
  requant rq = {0};
  wk_tensor *y = NULL, *bf = NULL, *q = NULL;
  int64_t nx;
  double osc = args[7].u.f;
  int64_t ozp = args[8].u.i;
  wk_status s = weight_params(w, O, &wsc, &wzp);
  if (!s && b && !(bf = f32_of(b))) s = wk_last_error();
  if (bf) bias = wk_tensor_data(bf);
  if (!s) s = requant_init(&rq, (float)wk_q_scale(x), wsc, O, bias, osc, ozp, args[9].u.b,
                           wk_tensor_qscheme(w) == WK_PER_TENSOR_AFFINE);
  if (!s && (!(xv = load_ints(x, &nx)) || !(wv = centered_weight(w, wzp, O)))) s = wk_last_error();
  if (!s) {
    int32_t xzp = (int32_t)wk_q_zero_point(x);
    for (int64_t i = 0; i < nx; i++) xv[i] -= xzp;
    if (!(y = cpu_empty(mo->sizes, mo->ndim, WK_U8))) s = wk_last_error();
  }
  if (!s) {
    const int64_t *st = args[3].u.ints, *pd = args[4].u.ints, *dl = args[5].u.ints;
    conv_job j = {xv,    wv,    xs[0], xs[1], xs[2], xs[3], O,     ws[2], ws[3],    mo->sizes[2], mo->sizes[3],
                  args[6].u.i, st[0], st[1], pd[0], pd[1], dl[0], dl[1], &rq, wk_tensor_data(y)};
    cpu_par(xs[0] * args[6].u.i, mo->sizes[2] * mo->sizes[3] * ws[0] * ws[1] * ws[2] * ws[3] / args[6].u.i, conv_run, &j);
    if (!(q = wk_make_per_tensor_quantized(y, osc, ozp))) s = wk_last_error();
  }
  requant_free(&rq);
  wk_free(wsc), wk_free(wzp), wk_free(xv), wk_free(wv);
  wk_release(bf);
  wk_release(y);
  return wk_kernel_done(s, q, outs);
}

wk_status cpu_register_quantized(void) {
  static const wk_kernel_row rows[] = {
      {"quantize_per_tensor", k_quantize_per_tensor, NULL, 0},
      {"quantize_per_channel", k_quantize_per_channel, NULL, 0},
      {"dequantize", k_dequantize, NULL, 0},
      {"int_repr", k_int_repr, NULL, 0},
      {"fake_quantize_per_tensor_affine", k_fq_tensor, NULL, 0},
      {"fake_quantize_per_tensor_affine_backward", k_fq_tensor_bw, NULL, 0},
      {"fake_quantize_per_channel_affine", k_fq_channel, NULL, 0},
      {"fake_quantize_per_channel_affine_backward", k_fq_channel_bw, NULL, 0},
      {"quantized_linear", k_quantized_linear, NULL, 0},
      {"quantized_linear_dynamic", k_quantized_linear_dynamic, NULL, 0},
      {"quantized_conv2d", k_quantized_conv2d, NULL, 0},
  };
  return wk_register_rows(rows, sizeof rows / sizeof rows[0], cpu_reg_row);
}
