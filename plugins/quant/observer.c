/* quant plugin: observers (torch.ao.quantization.observer): MinMaxObserver,
 * MovingAverageMinMaxObserver, PerChannelMinMaxObserver and HistogramObserver
 * (its histogram merging and _non_linear_param_search, the L2-error search),
 * with PyTorch's _calculate_qparams in float32: affine
 *   scale = max((max(max_val, 0) - min(min_val, 0)) / (qmax - qmin), eps)
 *   zero_point = clamp(qmin - round(min(min_val, 0) / scale), qmin, qmax)
 * and symmetric
 *   scale = max(max(-min_neg, max_pos) / ((qmax - qmin) / 2), eps), zero_point = 0
 *   (128 for quint8). The statistics live in the module's buffers (min_val,
 * max_val, histogram), so they travel in state dicts. */
#include "quant.h"

#define FLT_EPS_ 1.1920928955078125e-07f /* torch.finfo(torch.float32).eps */

typedef struct {
  int kind;
  wk_dtype dtype;
  wk_qscheme qscheme;
  int64_t qmin, qmax;
  bool custom_range;
  float avg_c;
  int64_t ch_axis, bins;
  /* prepare: how convert observes the weight of the module this observer watches */
  bool has_weight_cfg;
  int weight_kind;
  wk_observer_opts weight_opts;
} obs_state;

void qt_observer_set_weight_cfg(wk_module *obs, int kind, const wk_observer_opts *o) {
  obs_state *s = wk_module_state(obs);
  s->has_weight_cfg = true;
  s->weight_kind = kind;
  s->weight_opts = *o;
}

bool qt_observer_weight_cfg(const wk_module *obs, int *kind, wk_observer_opts *o) {
  const obs_state *s = wk_module_state(obs);
  if (!s->has_weight_cfg) return false;
  *kind = s->weight_kind;
  *o = s->weight_opts;
  return true;
}

static const char *kind_name(int kind) {
  switch (kind) {
    case WK_OBSERVER_MINMAX: return "MinMaxObserver";
    case WK_OBSERVER_MOVING_AVERAGE_MINMAX: return "MovingAverageMinMaxObserver";
    case WK_OBSERVER_PER_CHANNEL_MINMAX: return "PerChannelMinMaxObserver";
    case WK_OBSERVER_HISTOGRAM: return "HistogramObserver";
    case WK_OBSERVER_MOVING_AVERAGE_PER_CHANNEL_MINMAX: return "MovingAveragePerChannelMinMaxObserver";
    default: return "?";
  }
}

static float *buf_f32(const wk_module *m, const char *name) {
  wk_tensor *t = wk_module_buffer(m, name);
  return t ? wk_tensor_data(t) : NULL;
}

/* The input as floats (row-major); NULL with an error. */
static float *input_floats(wk_tensor *x, int64_t *n) {
  *n = wk_tensor_numel(x);
  double *d = wk_malloc(sizeof(double) * (size_t)(*n ? *n : 1));
  float *f = wk_malloc(sizeof(float) * (size_t)(*n ? *n : 1));
  if (!d || !f || wk_tensor_to_f64(x, d, *n) != WK_OK) {
    if ((!d || !f) && !wk_last_error()) wk_error(WK_ERR_NO_MEMORY, "observer: out of memory");
    wk_free(d);
    wk_free(f);
    return NULL;
  }
  for (int64_t i = 0; i < *n; i++) f[i] = (float)d[i];
  wk_free(d);
  return f;
}

/* ---- histogram --------------------------------------------------------------------------- */
/* torch.histc(x, bins, min, max) as PyTorch 2.x computes it (histogramdd's
 * linear interpolation): bin (int64)((v - mn) * bins / (mx - mn)) in float32,
 * v == mx in the last bin, values outside ignored; [mn, mx] widened by 1
 * each way when mn == mx. */
static void histc(const float *x, int64_t n, int64_t bins, float mn, float mx, float *h) {
  for (int64_t b = 0; b < bins; b++) h[b] = 0;
  if (mn == mx) mn -= 1, mx += 1;
  for (int64_t i = 0; i < n; i++) {
    float v = x[i];
    if (!(v >= mn && v <= mx)) continue;
    int64_t pos = (int64_t)((v - mn) * (float)bins / (mx - mn));
    if (pos >= bins) pos = bins - 1;
    h[pos] += 1;
  }
}

/* torch.linspace(start, end, steps)[i] in float32 (ATen's two-sided form). */
static float linspace_at(float start, float end, int64_t steps, int64_t i) {
  float step = (end - start) / (float)(steps - 1);
  return i < steps / 2 ? start + step * (float)i : end - step * (float)(steps - i - 1);
}

/* HistogramObserver.forward of PyTorch 2.x: a batch is binned over the
 * union range [min(cur, x), max(cur, x)]; when that widened the range, the
 * old histogram is re-binned (_combine_histograms / _upscale_histogram:
 * each old bin split in 128 (upsample_rate) parts of count/128 placed at
 * their mid-points, counted into the new bins by bucketize(right=True) - 1,
 * clamped, summed in float32 in order) and added. */
static wk_status hist_observe(wk_module *self, const obs_state *s, const float *x, int64_t n) {
  float *h = buf_f32(self, "histogram"), *mnp = buf_f32(self, "min_val"), *mxp = buf_f32(self, "max_val");
  if (!h || !mnp || !mxp) return wk_last_error();
  float xmin = x[0], xmax = x[0];
  for (int64_t i = 1; i < n; i++) xmin = x[i] < xmin ? x[i] : xmin, xmax = x[i] > xmax ? x[i] : xmax;
  int64_t bins = s->bins;
  float mn = *mnp, mx = *mxp;
  if (mn == INFINITY || mx == -INFINITY) { /* reset_histogram */
    *mnp = xmin, *mxp = xmax;
    histc(x, n, bins, xmin, xmax, h);
    return WK_OK;
  }
  float nmin = xmin < mn ? xmin : mn, nmax = xmax > mx ? xmax : mx;
  float *upd = wk_malloc(sizeof(float) * (size_t)bins);
  if (!upd) return wk_error(WK_ERR_NO_MEMORY, "HistogramObserver: out of memory");
  histc(x, n, bins, nmin, nmax, upd);
  if (nmin == mn && nmax == mx) {
    for (int64_t b = 0; b < bins; b++) h[b] += upd[b];
  } else if (mn == mx) { /* a one-value histogram lands in one bin of the new range */
    float total = 0, one[1] = {mn};
    for (int64_t b = 0; b < bins; b++) total += h[b];
    histc(one, 1, bins, nmin, nmax, h);
    for (int64_t b = 0; b < bins; b++) h[b] = h[b] * total + upd[b];
    *mnp = nmin, *mxp = nmax;
  } else {
    const int64_t up = 128; /* upsample_rate */
    int64_t fine = bins * up;
    float bin_size = (mx - mn) / (float)fine;
    float *tr = wk_malloc(sizeof(float) * (size_t)bins);
    if (!tr) {
      wk_free(upd);
      return wk_error(WK_ERR_NO_MEMORY, "HistogramObserver: out of memory");
    }
    for (int64_t b = 0; b < bins; b++) tr[b] = 0;
    int64_t j = 0; /* boundaries[0..j) <= mid: the mid-points increase */
    for (int64_t i = 0; i < fine; i++) {
      float mid = linspace_at(mn, mx, fine + 1, i) + 0.5f * bin_size;
      while (j <= bins && linspace_at(nmin, nmax, bins + 1, j) <= mid) j++;
      int64_t k = j - 1;
      k = k < 0 ? 0 : k >= bins ? bins - 1 : k;
      tr[k] += h[i / up] / (float)up;
    }
    for (int64_t b = 0; b < bins; b++) h[b] = upd[b] + tr[b];
    wk_free(tr);
    *mnp = nmin, *mxp = nmax;
  }
  wk_free(upd);
  return WK_OK;
}

/* _compute_quantization_error for bins [b0, b1] of the histogram. */
static double quant_error(const float *h, int64_t bins, double mn, double mx, int64_t b0, int64_t b1, int64_t dst) {
  double bw = (mx - mn) / (double)bins;
  double dbw = bw * (double)(b1 - b0 + 1) / (double)dst;
  if (dbw == 0.0) return 0.0;
  double norm = 0;
  for (int64_t i = 0; i < bins; i++) {
    double begin = (double)(i - b0) * bw, end = begin + bw;
    double db = floor(begin / dbw), de = floor(end / dbw);
    db = db < 0 ? 0 : db > (double)(dst - 1) ? (double)(dst - 1) : db;
    de = de < 0 ? 0 : de > (double)(dst - 1) ? (double)(dst - 1) : de;
    double density = h[i] / bw;
    double dbc = (db + 0.5) * dbw;
    double d0 = begin - dbc, d1 = dbw / 2;
    norm += density * (d1 * d1 * d1 - d0 * d0 * d0) / 3;
    norm += (de - db - 1) * density * ((dbw / 2) * (dbw / 2) * (dbw / 2) - (-dbw / 2) * (-dbw / 2) * (-dbw / 2)) / 3;
    double dec = de * dbw + dbw / 2;
    d0 = -dbw / 2, d1 = end - dec;
    norm += density * (d1 * d1 * d1 - d0 * d0 * d0) / 3;
  }
  return norm;
}

/* _non_linear_param_search: the [new_min, new_max] that minimises the L2
 * quantization error, moving the bound with fewer bins to give up. */
static void hist_search(const float *h, int64_t bins, float mn, float mx, int64_t dst, float *new_min, float *new_max) {
  double total = 0;
  double *csum = wk_malloc(sizeof(double) * (size_t)bins);
  for (int64_t i = 0; i < bins; i++) {
    total += h[i];
    if (csum) csum[i] = total;
  }
  float bw = (mx - mn) / (float)bins;
  int64_t start = 0, end = bins - 1;
  if (csum) {
    const double step = 1e-5;
    double alpha = 0.0, beta = 1.0, norm_min = INFINITY;
    while (alpha < beta) {
      double na = alpha + step, nb = beta - step;
      int64_t l = start, r = end;
      while (l < end && csum[l] < na * total) l++;
      while (r > start && csum[r] > nb * total) r--;
      int64_t ns = start, ne = end;
      if (l - start > end - r) {
        ns = l;
        alpha = na;
      } else {
        ne = r;
        beta = nb;
      }
      if (ns == start && ne == end) continue;
      double norm = quant_error(h, bins, mn, mx, ns, ne, dst);
      if (norm > norm_min) break;
      norm_min = norm;
      start = ns;
      end = ne;
    }
    wk_free(csum);
  }
  *new_min = mn + bw * (float)start;
  *new_max = mn + bw * (float)end + bw;
}

/* ---- forward ------------------------------------------------------------------------------- */
static wk_status per_channel_observe(wk_module *self, const obs_state *s, wk_tensor *x, const float *v, int64_t n) {
  int nd = wk_tensor_dim(x);
  int64_t ax = s->ch_axis < 0 ? s->ch_axis + nd : s->ch_axis;
  if (nd == 0 || ax < 0 || ax >= nd)
    return wk_error(WK_ERR_INDEX, "PerChannelMinMaxObserver: ch_axis %lld out of range for a %d-dimensional input",
                    (long long)s->ch_axis, nd);
  int64_t C = wk_tensor_size(x, (int)ax), inner = 1;
  for (int d = (int)ax + 1; d < nd; d++) inner *= wk_tensor_size(x, d);
  wk_tensor *bmin = wk_module_buffer(self, "min_val");
  if (!bmin) {
    wk_clear_error();
    wk_scope_begin();
    wk_status st = qt_buffer(self, "min_val", wk_full(WK_SHAPE(C), INFINITY, (wk_options){0}));
    if (!st) st = qt_buffer(self, "max_val", wk_full(WK_SHAPE(C), -INFINITY, (wk_options){0}));
    wk_scope_end();
    if (st) return st;
    bmin = wk_module_buffer(self, "min_val");
  }
  if (wk_tensor_numel(bmin) != C)
    return wk_error(WK_ERR_SHAPE, "PerChannelMinMaxObserver: saw %lld channels before, now %lld",
                    (long long)wk_tensor_numel(bmin), (long long)C);
  float *mn = buf_f32(self, "min_val"), *mx = buf_f32(self, "max_val");
  bool avg = s->kind == WK_OBSERVER_MOVING_AVERAGE_PER_CHANNEL_MINMAX && mn[0] != INFINITY;
  float *bmn = avg ? wk_malloc(sizeof(float) * (size_t)C * 2) : mn, *bmx = avg ? bmn + C : mx;
  if (!bmn) return wk_error(WK_ERR_NO_MEMORY, "observer: out of memory");
  for (int64_t c = 0; avg && c < C; c++) bmn[c] = INFINITY, bmx[c] = -INFINITY;
  for (int64_t i = 0; i < n; i++) {
    int64_t c = (i / inner) % C;
    if (v[i] < bmn[c] || isnan(v[i])) bmn[c] = v[i];
    if (v[i] > bmx[c] || isnan(v[i])) bmx[c] = v[i];
  }
  if (avg) { /* MovingAveragePerChannelMinMaxObserver: min + c (batch_min - min) */
    for (int64_t c = 0; c < C; c++) {
      mn[c] = mn[c] + s->avg_c * (bmn[c] - mn[c]);
      mx[c] = mx[c] + s->avg_c * (bmx[c] - mx[c]);
    }
    wk_free(bmn);
  }
  return WK_OK;
}

static wk_tensor *obs_forward(wk_module *self, wk_tensor *const *in, int n) {
  const obs_state *s = wk_module_state(self);
  if (!qt_one_input(kind_name(s->kind), in, n)) return NULL;
  wk_tensor *x = in[0];
  if (!wk_dtype_is_floating(wk_tensor_dtype(x))) {
    wk_error(WK_ERR_DTYPE, "%s: expected a floating point input, got %s", kind_name(s->kind),
             wk_dtype_name(wk_tensor_dtype(x)));
    return NULL;
  }
  int64_t cnt;
  float *v = wk_tensor_numel(x) ? input_floats(x, &cnt) : NULL;
  if (wk_tensor_numel(x) && !v) return NULL;
  wk_status st = WK_OK;
  if (v && s->kind == WK_OBSERVER_HISTOGRAM) {
    st = hist_observe(self, s, v, cnt);
  } else if (v && (s->kind == WK_OBSERVER_PER_CHANNEL_MINMAX || s->kind == WK_OBSERVER_MOVING_AVERAGE_PER_CHANNEL_MINMAX)) {
    st = per_channel_observe(self, s, x, v, cnt);
  } else if (v) {
    float xmin = v[0], xmax = v[0];
    for (int64_t i = 1; i < cnt; i++) xmin = v[i] < xmin ? v[i] : xmin, xmax = v[i] > xmax ? v[i] : xmax;
    float *mn = buf_f32(self, "min_val"), *mx = buf_f32(self, "max_val");
    if (!mn || !mx) {
      st = wk_last_error();
    } else if (s->kind == WK_OBSERVER_MOVING_AVERAGE_MINMAX && !(*mn == INFINITY && *mx == -INFINITY)) {
      *mn = *mn + s->avg_c * (xmin - *mn);
      *mx = *mx + s->avg_c * (xmax - *mx);
    } else {
      *mn = xmin < *mn ? xmin : *mn;
      *mx = xmax > *mx ? xmax : *mx;
    }
  }
  wk_free(v);
  if (st) return NULL;
  return wk_alias(x); /* an observer passes its input through */
}

static char *obs_repr(const wk_module *self) {
  const obs_state *s = wk_module_state(self);
  wk_tensor *mn = wk_module_buffer(self, "min_val"), *mx = wk_module_buffer(self, "max_val");
  if (!mn || wk_tensor_numel(mn) != 1) {
    wk_clear_error();
    return qt_strf("dtype=torch.%s, qscheme=%s", wk_dtype_name(s->dtype), wk_qscheme_name(s->qscheme));
  }
  char a[40], b[40];
  return qt_strf("min_val=%s, max_val=%s", qt_pyfloat(*(float *)wk_tensor_data(mn), a),
                 qt_pyfloat(*(float *)wk_tensor_data(mx), b));
}

#define OBS_CLASS(var, name) static const wk_module_class var = {sizeof(wk_module_class), name, obs_forward, free, obs_repr};
OBS_CLASS(C_MINMAX, "MinMaxObserver")
OBS_CLASS(C_MAMINMAX, "MovingAverageMinMaxObserver")
OBS_CLASS(C_PERCH, "PerChannelMinMaxObserver")
OBS_CLASS(C_HIST, "HistogramObserver")
OBS_CLASS(C_MAPERCH, "MovingAveragePerChannelMinMaxObserver")

bool qt_is_observer(const wk_module *m) {
  const char *c = m ? wk_module_class_name(m) : NULL;
  return c && strstr(c, "Observer") && wk_module_state(m) &&
         (!strcmp(c, C_MINMAX.name) || !strcmp(c, C_MAMINMAX.name) || !strcmp(c, C_PERCH.name) ||
          !strcmp(c, C_HIST.name) || !strcmp(c, C_MAPERCH.name));
}

wk_dtype qt_observer_dtype(const wk_module *m) { return ((const obs_state *)wk_module_state(m))->dtype; }

void qt_observer_range(const wk_module *m, int64_t *qmin, int64_t *qmax, bool *per_channel, int64_t *ch_axis) {
  const obs_state *s = wk_module_state(m);
  *qmin = s->qmin, *qmax = s->qmax;
  *per_channel = s->qscheme == WK_PER_CHANNEL_AFFINE || s->qscheme == WK_PER_CHANNEL_SYMMETRIC;
  *ch_axis = s->ch_axis;
}

wk_module *qt_observer(int kind, const wk_observer_opts *o, size_t osize) {
  wk_observer_opts op = {0};
  if (o) memcpy(&op, o, osize < sizeof op ? osize : sizeof op);
  const wk_module_class *cls = kind == WK_OBSERVER_MINMAX                  ? &C_MINMAX
                               : kind == WK_OBSERVER_MOVING_AVERAGE_MINMAX ? &C_MAMINMAX
                               : kind == WK_OBSERVER_PER_CHANNEL_MINMAX    ? &C_PERCH
                               : kind == WK_OBSERVER_HISTOGRAM             ? &C_HIST
                               : kind == WK_OBSERVER_MOVING_AVERAGE_PER_CHANNEL_MINMAX ? &C_MAPERCH
                                                                           : NULL;
  if (!cls) {
    wk_error(WK_ERR_INVALID_ARG, "observer: unknown observer kind %d", kind);
    return NULL;
  }
  bool per_channel = kind == WK_OBSERVER_PER_CHANNEL_MINMAX || kind == WK_OBSERVER_MOVING_AVERAGE_PER_CHANNEL_MINMAX;
  wk_dtype dt = op.dtype ? op.dtype : WK_QUINT8;
  if (!wk_dtype_is_quantized(dt)) {
    wk_error(WK_ERR_DTYPE, "%s: dtype must be qint8, quint8 or qint32, got %s", cls->name, wk_dtype_name(dt));
    return NULL;
  }
  wk_qscheme qs = op.qscheme ? op.qscheme : per_channel ? WK_PER_CHANNEL_AFFINE : WK_PER_TENSOR_AFFINE;
  bool qs_channel = qs == WK_PER_CHANNEL_AFFINE || qs == WK_PER_CHANNEL_SYMMETRIC;
  if (qs < WK_PER_TENSOR_AFFINE || qs > WK_PER_CHANNEL_SYMMETRIC || qs_channel != per_channel) {
    wk_error(WK_ERR_INVALID_ARG, "%s: qscheme %s is not supported (per-%s schemes only)", cls->name,
             wk_qscheme_name(qs), per_channel ? "channel" : "tensor");
    return NULL;
  }
  obs_state *s = wk_calloc(1, sizeof *s);
  if (!s) {
    wk_error(WK_ERR_NO_MEMORY, "observer: out of memory");
    return NULL;
  }
  s->kind = kind;
  s->dtype = dt;
  s->qscheme = qs;
  s->avg_c = (float)(op.averaging_constant > 0 ? op.averaging_constant : 0.01);
  s->ch_axis = op.ch_axis;
  s->bins = op.bins > 0 ? op.bins : 2048;
  if (op.quant_min != op.quant_max) { /* PyTorch's _validate_qmin_qmax */
    s->custom_range = true;
    s->qmin = op.quant_min, s->qmax = op.quant_max;
    if (!(s->qmin <= 0 && 0 <= s->qmax) || s->qmin < wk_dtype_qmin(dt) || s->qmax > wk_dtype_qmax(dt)) {
      wk_free(s);
      wk_error(WK_ERR_INVALID_ARG,
               "%s: user-specified quantization range [%lld, %lld] must include 0 and fit %s [%lld, %lld]", cls->name,
               (long long)op.quant_min, (long long)op.quant_max, wk_dtype_name(dt), (long long)wk_dtype_qmin(dt),
               (long long)wk_dtype_qmax(dt));
      return NULL;
    }
  } else if (op.reduce_range) { /* _calculate_qmin_qmax */
    s->qmin = dt == WK_QINT8 ? -64 : dt == WK_QUINT8 ? 0 : wk_dtype_qmin(dt);
    s->qmax = dt == WK_QINT8 ? 63 : dt == WK_QUINT8 ? 127 : wk_dtype_qmax(dt);
  } else {
    s->qmin = wk_dtype_qmin(dt), s->qmax = wk_dtype_qmax(dt);
  }
  wk_module *m = wk_module_new(cls, s);
  if (!m) return NULL;
  wk_status st = WK_OK;
  wk_scope_begin();
  if (!per_channel) {
    st = qt_buffer(m, "min_val", wk_scalar_tensor(INFINITY, WK_F32));
    if (!st) st = qt_buffer(m, "max_val", wk_scalar_tensor(-INFINITY, WK_F32));
  }
  if (!st && kind == WK_OBSERVER_HISTOGRAM) st = qt_buffer(m, "histogram", wk_zeros(WK_SHAPE(s->bins), (wk_options){0}));
  wk_scope_end();
  if (st) {
    wk_module_release(m);
    return NULL;
  }
  return m;
}

/* ---- calculate_qparams ------------------------------------------------------------------------ */
static void qparams_one(const obs_state *s, float mn, float mx, float *scale, int64_t *zp) {
  float min_neg = mn < 0 ? mn : 0.0f, max_pos = mx > 0 ? mx : 0.0f;
  int64_t qmin = s->qmin, qmax = s->qmax;
  if (s->qscheme == WK_PER_TENSOR_SYMMETRIC || s->qscheme == WK_PER_CHANNEL_SYMMETRIC) {
    max_pos = -min_neg > max_pos ? -min_neg : max_pos;
    float sc = max_pos / (float)((double)(qmax - qmin) / 2);
    *scale = sc > FLT_EPS_ ? sc : FLT_EPS_;
    *zp = s->dtype == WK_QUINT8 ? (s->custom_range ? (qmin + qmax) / 2 : 128) : 0;
  } else {
    float sc = (max_pos - min_neg) / (float)(qmax - qmin);
    sc = sc > FLT_EPS_ ? sc : FLT_EPS_;
    int64_t z = qmin - (int64_t)nearbyintf(min_neg / sc);
    *scale = sc;
    *zp = z < qmin ? qmin : z > qmax ? qmax : z;
  }
}

wk_status qt_calculate_qparams(wk_module *obs, wk_tensor **scale, wk_tensor **zero_point) {
  if (scale) *scale = NULL;
  if (zero_point) *zero_point = NULL;
  if (!obs || !scale || !zero_point)
    return wk_error(WK_ERR_NULL, "calculate_qparams: argument '%s' is NULL",
                    !obs ? "observer" : !scale ? "scale" : "zero_point");
  if (!qt_is_observer(obs))
    return wk_error(WK_ERR_INVALID_ARG, "calculate_qparams: %s is not an observer", wk_module_class_name(obs));
  const obs_state *s = wk_module_state(obs);
  const char *cls = kind_name(s->kind);
  wk_tensor *bmin = wk_module_buffer(obs, "min_val"), *bmax = wk_module_buffer(obs, "max_val");
  if (!bmin || !bmax) {
    wk_clear_error();
    return wk_error(WK_ERR_STATE, "%s: calculate_qparams() before the observer saw any data (run calibration first)",
                    cls);
  }
  int64_t C = wk_tensor_numel(bmin);
  const float *mn = wk_tensor_data(bmin), *mx = wk_tensor_data(bmax);
  for (int64_t c = 0; c < C; c++)
    if (mn[c] == INFINITY && mx[c] == -INFINITY)
      return wk_error(WK_ERR_STATE,
                      "%s: calculate_qparams() before the observer saw any data (run calibration first)", cls);
  float *sc = wk_malloc(sizeof(float) * (size_t)(C ? C : 1));
  int64_t *zp = wk_malloc(sizeof(int64_t) * (size_t)(C ? C : 1));
  if (!sc || !zp) {
    wk_free(sc);
    wk_free(zp);
    return wk_error(WK_ERR_NO_MEMORY, "calculate_qparams: out of memory");
  }
  if (s->kind == WK_OBSERVER_HISTOGRAM) {
    const float *h = wk_tensor_data(wk_module_buffer(obs, "histogram"));
    float nmin, nmax;
    int64_t dst = 256; /* dst_nbins = 2 ** bits of the 8-bit dtypes */
    hist_search(h, s->bins, mn[0], mx[0], dst, &nmin, &nmax);
    qparams_one(s, nmin, nmax, &sc[0], &zp[0]);
  } else {
    for (int64_t c = 0; c < C; c++) qparams_one(s, mn[c], mx[c], &sc[c], &zp[c]);
  }
  *scale = wk_tensor_from_data(sc, WK_F32, &C, 1);
  *zero_point = wk_tensor_from_data(zp, WK_I64, &C, 1);
  wk_free(sc);
  wk_free(zp);
  if (!*scale || !*zero_point) {
    wk_release(*scale);
    wk_release(*zero_point);
    *scale = *zero_point = NULL;
    return wk_last_error();
  }
  return WK_OK;
}
