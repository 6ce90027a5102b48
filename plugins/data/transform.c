/* data plugin: per-sample transforms. Each random transform draws from a
 * Philox stream keyed by (the sample's seed, its own seed), so a sample is
 * augmented the same way whichever thread produces it. Images are [..., H, W]
 * (ToTensor also takes [H, W, C]); work is done on contiguous cpu copies and
 * the input is never modified. */
#include <math.h>

#include "data.h"

wk_transform *dt_transform_retain(wk_transform *tf) {
  if (tf) atomic_fetch_add(&tf->rc, 1);
  return tf;
}
void dt_transform_release(wk_transform *tf) {
  if (!tf || atomic_fetch_sub(&tf->rc, 1) != 1) return;
  if (tf->vt->destroy) tf->vt->destroy(tf);
  wk_free(tf);
}
void dt_transform_free(wk_transform *tf) { dt_transform_release(tf); }

wk_tensor *dt_transform_apply(wk_transform *tf, wk_tensor *x, uint64_t seed) {
  if (wk_tensor_device(x).type != WK_DEVICE_CPU) {
    wk_error(WK_ERR_DEVICE, "%s: transforms run on cpu tensors", tf->vt->name);
    return NULL;
  }
  return tf->vt->apply(tf, x, seed);
}
wk_tensor *dt_transform_apply_api(wk_transform *tf, wk_tensor *x, uint64_t seed) {
  if (!tf || !x) {
    wk_error(WK_ERR_NULL, "transform_apply: argument '%s' is NULL", !tf ? "tf" : "x");
    return NULL;
  }
  return dt_transform_apply(tf, x, seed);
}

void *dt_tf_alloc(size_t size, const dt_transform_vt *vt) {
  wk_transform *tf = wk_calloc(1, size);
  if (!tf) {
    wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", vt->name);
    return NULL;
  }
  atomic_init(&tf->rc, 1);
  tf->vt = vt;
  return tf;
}
uint64_t dt_tf_key(uint64_t sample_seed, uint64_t own) { return wk_data_mix(sample_seed ^ wk_data_mix(own ^ 0x7f4a7c15ull)); }

bool dt_need_dims(const char *fn, wk_tensor *x, int min, const char *layout) {
  if (wk_tensor_dim(x) >= min) return true;
  char b[128];
  wk_error(WK_ERR_SHAPE, "%s: expects a %s image, got shape %s", fn, layout,
           wk_sizes_str(wk_tensor_sizes(x), wk_tensor_dim(x), b, sizeof b));
  return false;
}

/* ---- ToTensor ------------------------------------------------------------------------------------ */
typedef struct {
  wk_transform base;
  bool hwc;
} to_tensor_tf;
static wk_tensor *to_tensor_apply(wk_transform *tf, wk_tensor *x, uint64_t seed) {
  bool hwc = ((to_tensor_tf *)tf)->hwc;
  int nd = wk_tensor_dim(x);
  if (nd != 2 && nd != 3) {
    char b[128];
    wk_error(WK_ERR_SHAPE, "to_tensor: expects a [%s] or [H, W] image, got shape %s", hwc ? "H, W, C" : "C, H, W",
             wk_sizes_str(wk_tensor_sizes(x), nd, b, sizeof b));
    return NULL;
  }
  wk_dtype dt = wk_tensor_dtype(x);
  if (dt != WK_U8 && !wk_dtype_is_floating(dt)) {
    wk_error(WK_ERR_DTYPE, "to_tensor: expects a uint8 or floating image, got %s", wk_dtype_name(dt));
    return NULL;
  }
  const int64_t *s = wk_tensor_sizes(x);
  int64_t C = nd == 2 ? 1 : hwc ? s[2] : s[0], H = nd == 2 ? s[0] : hwc ? s[0] : s[1], W = nd == 2 ? s[1] : hwc ? s[1] : s[2];
  wk_tensor *src = dt == WK_U8 ? wk_contiguous(x) : wk_to_dtype(x, WK_F32);
  wk_tensor *c = src && dt != WK_U8 ? wk_contiguous(src) : wk_retain(src);
  wk_release(src);
  wk_tensor *y = c ? wk_empty(WK_SHAPE(C, H, W), (wk_options){.dtype = WK_F32}) : NULL;
  if (!y) {
    wk_release(c);
    return NULL;
  }
  float *o = wk_tensor_data(y);
  const uint8_t *u = dt == WK_U8 ? wk_tensor_data(c) : NULL;
  const float *f = dt == WK_U8 ? NULL : wk_tensor_data(c);
  for (int64_t ch = 0; ch < C; ch++)
    for (int64_t i = 0; i < H * W; i++) {
      int64_t k = hwc && nd == 3 ? i * C + ch : ch * H * W + i;
      o[ch * H * W + i] = u ? (float)u[k] / 255.0f : f[k];
    }
  wk_release(c);
  return y;
}
static const dt_transform_vt to_tensor_vt = {"to_tensor", to_tensor_apply, NULL};
wk_transform *dt_to_tensor(bool hwc) {
  to_tensor_tf *t = dt_tf_alloc(sizeof *t, &to_tensor_vt);
  if (t) t->hwc = hwc;
  return t ? &t->base : NULL;
}

/* ---- Normalize ---------------------------------------------------------------------------------- */
typedef struct {
  wk_transform base;
  int n;
  double *mean, *std;
} normalize_tf;
static wk_tensor *normalize_apply(wk_transform *tf, wk_tensor *x, uint64_t seed) {
  normalize_tf *t = (normalize_tf *)tf;
  if (!dt_need_dims("normalize", x, 1, "[C, ...]")) return NULL;
  wk_dtype dt = wk_tensor_dtype(x);
  if (dt != WK_F32 && dt != WK_F64) {
    wk_error(WK_ERR_DTYPE, "normalize: expects a float32 or float64 tensor (apply to_tensor first), got %s", wk_dtype_name(dt));
    return NULL;
  }
  int64_t C = wk_tensor_size(x, 0);
  if (t->n != 1 && t->n != C) {
    wk_error(WK_ERR_SHAPE, "normalize: %d means/stds for an image of %lld channels", t->n, (long long)C);
    return NULL;
  }
  wk_tensor *c = wk_contiguous(x);
  wk_tensor *y = c ? wk_empty(wk_tensor_sizes(x), wk_tensor_dim(x), (wk_options){.dtype = dt}) : NULL;
  if (!y) {
    wk_release(c);
    return NULL;
  }
  int64_t per = C ? wk_tensor_numel(x) / C : 0;
  for (int64_t ch = 0; ch < C; ch++) {
    double m = t->mean[t->n == 1 ? 0 : ch], inv = t->std[t->n == 1 ? 0 : ch];
    if (dt == WK_F32) {
      const float *a = (const float *)wk_tensor_data(c) + ch * per;
      float *o = (float *)wk_tensor_data(y) + ch * per, fm = (float)m, fs = (float)inv;
      for (int64_t i = 0; i < per; i++) o[i] = (a[i] - fm) / fs;
    } else {
      const double *a = (const double *)wk_tensor_data(c) + ch * per;
      double *o = (double *)wk_tensor_data(y) + ch * per;
      for (int64_t i = 0; i < per; i++) o[i] = (a[i] - m) / inv;
    }
  }
  wk_release(c);
  return y;
}
static void normalize_destroy(wk_transform *tf) {
  wk_free(((normalize_tf *)tf)->mean);
  wk_free(((normalize_tf *)tf)->std);
}
static const dt_transform_vt normalize_vt = {"normalize", normalize_apply, normalize_destroy};
wk_transform *dt_normalize(const double *mean, const double *std, int n) {
  if (!mean || !std) {
    wk_error(WK_ERR_NULL, "normalize: argument '%s' is NULL", !mean ? "mean" : "std");
    return NULL;
  }
  if (n < 1) {
    wk_error(WK_ERR_INVALID_ARG, "normalize: needs at least one mean/std, got %d", n);
    return NULL;
  }
  for (int i = 0; i < n; i++)
    if (!(std[i] != 0) || !isfinite(std[i]) || !isfinite(mean[i])) {
      wk_error(WK_ERR_INVALID_ARG, "normalize: std evaluated to zero or a non-finite value (channel %d: mean %g, std %g), "
               "leading to division by zero", i, mean[i], std[i]);
      return NULL;
    }
  normalize_tf *t = dt_tf_alloc(sizeof *t, &normalize_vt);
  if (!t) return NULL;
  t->mean = wk_malloc(sizeof(double) * (size_t)n);
  t->std = wk_malloc(sizeof(double) * (size_t)n);
  if (!t->mean || !t->std) {
    dt_transform_release(&t->base);
    wk_error(WK_ERR_NO_MEMORY, "normalize: out of memory");
    return NULL;
  }
  memcpy(t->mean, mean, sizeof(double) * (size_t)n);
  memcpy(t->std, std, sizeof(double) * (size_t)n);
  t->n = n;
  return t ? &t->base : NULL;
}

/* ---- Crops ---------------------------------------------------------------------------------------- */
/* The h x w window of x's last two dims starting at (top, left), which may lie
 * partly outside: those elements are `fill`. */
static wk_tensor *crop_window(const char *fn, wk_tensor *x, int64_t top, int64_t left, int64_t h, int64_t w, double fill) {
  int nd = wk_tensor_dim(x);
  int64_t sizes[WK_MAX_DIMS];
  memcpy(sizes, wk_tensor_sizes(x), sizeof(int64_t) * (size_t)nd);
  int64_t H = sizes[nd - 2], W = sizes[nd - 1];
  sizes[nd - 2] = h;
  sizes[nd - 1] = w;
  wk_dtype dt = wk_tensor_dtype(x);
  size_t es = wk_dtype_size(dt);
  wk_tensor *c = wk_contiguous(x), *fv = wk_scalar_tensor(fill, dt);
  wk_tensor *y = c && fv ? wk_empty(sizes, nd, (wk_options){.dtype = dt}) : NULL;
  if (!y) {
    wk_release(c);
    wk_release(fv);
    return NULL;
  }
  int64_t planes = wk_tensor_numel(y) / (h * w); /* h, w >= 1 */
  const char *src = wk_tensor_data(c), *fb = wk_tensor_data(fv);
  char *dst = wk_tensor_data(y);
  for (int64_t p = 0; p < planes; p++)
    for (int64_t r = 0; r < h; r++) {
      char *o = dst + ((size_t)(p * h + r) * (size_t)w) * es;
      int64_t sr = top + r, c0 = left < 0 ? -left : 0, c1 = left + w > W ? W - left : w;
      if (sr < 0 || sr >= H || c1 <= c0) c0 = c1 = 0;
      for (int64_t k = 0; k < c0; k++) memcpy(o + (size_t)k * es, fb, es);
      if (c1 > c0) memcpy(o + (size_t)c0 * es, src + ((size_t)(p * H + sr) * (size_t)W + (size_t)(left + c0)) * es, (size_t)(c1 - c0) * es);
      for (int64_t k = c1 > c0 ? c1 : 0; k < w; k++) memcpy(o + (size_t)k * es, fb, es);
    }
  wk_release(c);
  wk_release(fv);
  (void)fn;
  return y;
}

typedef struct {
  wk_transform base;
  int64_t h, w, padding;
  double fill;
  uint64_t seed;
} crop_tf;
static wk_tensor *random_crop_apply(wk_transform *tf, wk_tensor *x, uint64_t seed) {
  crop_tf *t = (crop_tf *)tf;
  if (!dt_need_dims("random_crop", x, 2, "[..., H, W]")) return NULL;
  int nd = wk_tensor_dim(x);
  int64_t H = wk_tensor_size(x, nd - 2) + 2 * t->padding, W = wk_tensor_size(x, nd - 1) + 2 * t->padding;
  if (H < t->h || W < t->w) {
    wk_error(WK_ERR_SHAPE, "random_crop: required crop size (%lld, %lld) is larger than the (padded) input image size (%lld, %lld)",
             (long long)t->h, (long long)t->w, (long long)H, (long long)W);
    return NULL;
  }
  dt_rng r;
  dt_rng_init(&r, dt_tf_key(seed, t->seed));
  int64_t top = (int64_t)dt_below(&r, (uint64_t)(H - t->h + 1)), left = (int64_t)dt_below(&r, (uint64_t)(W - t->w + 1));
  return crop_window("random_crop", x, top - t->padding, left - t->padding, t->h, t->w, t->fill);
}
static const dt_transform_vt random_crop_vt = {"random_crop", random_crop_apply, NULL};
wk_transform *dt_random_crop(int64_t h, int64_t w, int64_t padding, double fill, uint64_t seed) {
  if (h < 1 || w < 1 || padding < 0) {
    wk_error(WK_ERR_INVALID_ARG, "random_crop: size (%lld, %lld) must be positive and padding %lld non-negative",
             (long long)h, (long long)w, (long long)padding);
    return NULL;
  }
  crop_tf *t = dt_tf_alloc(sizeof *t, &random_crop_vt);
  if (t) *t = (crop_tf){t->base, h, w, padding, fill, seed};
  return t ? &t->base : NULL;
}

static int64_t center_start(int64_t n, int64_t c) {
  return c > n ? -((c - n) / 2) : (int64_t)nearbyint((double)(n - c) / 2.0); /* torchvision: pad, then round half even */
}
static wk_tensor *center_crop_apply(wk_transform *tf, wk_tensor *x, uint64_t seed) {
  crop_tf *t = (crop_tf *)tf;
  if (!dt_need_dims("center_crop", x, 2, "[..., H, W]")) return NULL;
  int nd = wk_tensor_dim(x);
  return crop_window("center_crop", x, center_start(wk_tensor_size(x, nd - 2), t->h), center_start(wk_tensor_size(x, nd - 1), t->w),
                     t->h, t->w, 0);
}
static const dt_transform_vt center_crop_vt = {"center_crop", center_crop_apply, NULL};
wk_transform *dt_center_crop(int64_t h, int64_t w) {
  if (h < 1 || w < 1) {
    wk_error(WK_ERR_INVALID_ARG, "center_crop: size (%lld, %lld) must be positive", (long long)h, (long long)w);
    return NULL;
  }
  crop_tf *t = dt_tf_alloc(sizeof *t, &center_crop_vt);
  if (t) *t = (crop_tf){t->base, h, w, 0, 0, 0};
  return t ? &t->base : NULL;
}

/* ---- RandomHorizontalFlip -------------------------------------------------------------------------- */
typedef struct {
  wk_transform base;
  double p;
  uint64_t seed;
} flip_tf;
static wk_tensor *hflip_apply(wk_transform *tf, wk_tensor *x, uint64_t seed) {
  flip_tf *t = (flip_tf *)tf;
  if (!dt_need_dims("random_hflip", x, 1, "[..., W]")) return NULL;
  dt_rng r;
  dt_rng_init(&r, dt_tf_key(seed, t->seed));
  if (!(dt_unit(&r) < t->p)) return wk_retain(x);
  int nd = wk_tensor_dim(x);
  int64_t W = wk_tensor_size(x, nd - 1), rows = W ? wk_tensor_numel(x) / W : 0;
  size_t es = wk_dtype_size(wk_tensor_dtype(x));
  wk_tensor *c = wk_contiguous(x);
  wk_tensor *y = c ? wk_empty(wk_tensor_sizes(x), nd, (wk_options){.dtype = wk_tensor_dtype(x)}) : NULL;
  if (!y) {
    wk_release(c);
    return NULL;
  }
  const char *s = wk_tensor_data(c);
  char *o = wk_tensor_data(y);
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < W; j++) memcpy(o + (size_t)(i * W + j) * es, s + (size_t)(i * W + W - 1 - j) * es, es);
  wk_release(c);
  return y;
}
static const dt_transform_vt hflip_vt = {"random_hflip", hflip_apply, NULL};
wk_transform *dt_random_hflip(double p, uint64_t seed) {
  if (!(p >= 0 && p <= 1)) {
    wk_error(WK_ERR_INVALID_ARG, "random_hflip: probability %g is not in [0, 1]", p);
    return NULL;
  }
  flip_tf *t = dt_tf_alloc(sizeof *t, &hflip_vt);
  if (t) *t = (flip_tf){t->base, p, seed};
  return t ? &t->base : NULL;
}

/* ---- Compose and Lambda ------------------------------------------------------------------------------ */
typedef struct {
  wk_transform base;
  int n;
  wk_transform **tfs;
} compose_tf;
static wk_tensor *compose_apply(wk_transform *tf, wk_tensor *x, uint64_t seed) {
  compose_tf *t = (compose_tf *)tf;
  wk_tensor *cur = wk_retain(x);
  for (int i = 0; i < t->n && cur; i++) {
    wk_tensor *next = dt_transform_apply(t->tfs[i], cur, wk_data_mix(seed + (uint64_t)i));
    wk_release(cur);
    cur = next;
  }
  return cur;
}
static void compose_destroy(wk_transform *tf) {
  compose_tf *t = (compose_tf *)tf;
  for (int i = 0; i < t->n; i++) dt_transform_release(t->tfs[i]);
  wk_free(t->tfs);
}
static const dt_transform_vt compose_vt = {"compose", compose_apply, compose_destroy};
wk_transform *dt_compose(wk_transform *const *tfs, int n) {
  if ((!tfs && n) || n < 0) {
    wk_error(WK_ERR_NULL, "compose: argument 'tfs' is NULL");
    return NULL;
  }
  for (int i = 0; i < n; i++)
    if (!tfs[i]) {
      wk_error(WK_ERR_NULL, "compose: transform %d is NULL", i);
      return NULL;
    }
  compose_tf *t = dt_tf_alloc(sizeof *t, &compose_vt);
  if (!t) return NULL;
  t->tfs = wk_calloc((size_t)n + 1, sizeof *t->tfs);
  if (!t->tfs) {
    wk_free(t);
    wk_error(WK_ERR_NO_MEMORY, "compose: out of memory");
    return NULL;
  }
  for (int i = 0; i < n; i++) t->tfs[i] = dt_transform_retain(tfs[i]);
  t->n = n;
  return t ? &t->base : NULL;
}

typedef struct {
  wk_transform base;
  wk_tensor *(*fn)(void *, wk_tensor *, uint64_t);
  void *user;
} lambda_tf;
static wk_tensor *lambda_apply(wk_transform *tf, wk_tensor *x, uint64_t seed) {
  lambda_tf *t = (lambda_tf *)tf;
  wk_tensor *y = t->fn(t->user, x, seed);
  if (!y && wk_last_error() == WK_OK) wk_error(WK_ERR_STATE, "lambda: the user function returned NULL without an error");
  return y;
}
static const dt_transform_vt lambda_vt = {"lambda", lambda_apply, NULL};
wk_transform *dt_lambda(wk_tensor *(*fn)(void *user, wk_tensor *x, uint64_t seed), void *user) {
  if (!fn) {
    wk_error(WK_ERR_NULL, "lambda: argument 'fn' is NULL");
    return NULL;
  }
  lambda_tf *t = dt_tf_alloc(sizeof *t, &lambda_vt);
  if (t) t->fn = fn, t->user = user;
  return t ? &t->base : NULL;
}
