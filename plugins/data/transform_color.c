/* data plugin: ColorJitter (brightness, contrast) with torchvision's tensor
 * formulas: each adjustment is a blend ratio * img + (1 - ratio) * other,
 * clamped to [0, bound] (255 for uint8, 1 for float) and cast back (uint8
 * truncates); brightness blends with black, contrast with the mean of the
 * grayscale image (0.2989 R + 0.587 G + 0.114 B, cast to the image dtype
 * first, as rgb_to_grayscale does). The two adjustments run in a random order
 * (torchvision's randperm), and arithmetic is float32 except for float64 images. */
#include <math.h>

#include "data.h"

typedef struct {
  wk_transform base;
  double b[2], c[2]; /* factor ranges; b[0] == b[1] == 1 means "off", as in torchvision */
  uint64_t seed;
} jitter_tf;

static bool is_off(const double *r) {
  return r[0] == 1 && r[1] == 1;
}

/* img = clamp(f * img + (1 - f) * other, 0, bound) in place over n values. */
static void blend(void *data, wk_dtype dt, int64_t n, double f, double other) {
  if (dt == WK_F64) {
    double *p = data;
    for (int64_t i = 0; i < n; i++) {
      double v = f * p[i] + (1.0 - f) * other;
      p[i] = v < 0 ? 0 : v > 1 ? 1 : v;
    }
  } else if (dt == WK_F32) {
    float *p = data, ff = (float)f, fo = (float)(1.0 - f) * (float)other;
    for (int64_t i = 0; i < n; i++) {
      float v = ff * p[i] + fo;
      p[i] = v < 0 ? 0 : v > 1 ? 1 : v;
    }
  } else {
    uint8_t *p = data;
    float ff = (float)f, fo = (float)(1.0 - f) * (float)other;
    for (int64_t i = 0; i < n; i++) {
      float v = ff * (float)p[i] + fo;
      p[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v); /* .to(uint8) truncates */
    }
  }
}

/* The mean of the grayscale image (1 channel: the image itself), in the
 * precision torchvision uses: the image dtype for floats, float32 for uint8. */
static double gray_mean(const void *data, wk_dtype dt, int64_t C, int64_t hw) {
  double sum = 0;
  for (int64_t i = 0; i < hw; i++) {
    double g;
    if (dt == WK_F64) {
      const double *p = data;
      g = C == 3 ? 0.2989 * p[i] + 0.587 * p[hw + i] + 0.114 * p[2 * hw + i] : p[i];
    } else if (dt == WK_F32) {
      const float *p = data;
      g = C == 3 ? (double)(0.2989f * p[i] + 0.587f * p[hw + i] + 0.114f * p[2 * hw + i]) : p[i];
    } else {
      const uint8_t *p = data;
      g = C == 3 ? (double)(uint8_t)(0.2989f * p[i] + 0.587f * p[hw + i] + 0.114f * p[2 * hw + i]) : p[i];
    }
    sum += g;
  }
  double m = sum / (double)hw;
  return dt == WK_F64 ? m : (double)(float)m;
}

static wk_tensor *jitter_apply(wk_transform *tf, wk_tensor *x, uint64_t seed) {
  jitter_tf *t = (jitter_tf *)tf;
  if (wk_tensor_dim(x) != 3) {
    char b[128];
    wk_error(WK_ERR_SHAPE, "color_jitter: expects a [C, H, W] image, got shape %s",
             wk_sizes_str(wk_tensor_sizes(x), wk_tensor_dim(x), b, sizeof b));
    return NULL;
  }
  wk_dtype dt = wk_tensor_dtype(x);
  if (dt != WK_U8 && dt != WK_F32 && dt != WK_F64) {
    wk_error(WK_ERR_DTYPE, "color_jitter: expects a uint8, float32 or float64 image, got %s", wk_dtype_name(dt));
    return NULL;
  }
  int64_t C = wk_tensor_size(x, 0), hw = wk_tensor_size(x, 1) * wk_tensor_size(x, 2);
  if (!is_off(t->c) && C != 1 && C != 3) {
    wk_error(WK_ERR_SHAPE, "color_jitter: contrast needs 1 or 3 channels, the image has %lld", (long long)C);
    return NULL;
  }
  /* the draws, in torchvision's order: the permutation, then each factor */
  dt_rng r;
  dt_rng_init(&r, dt_tf_key(seed, t->seed));
  bool contrast_first = dt_below(&r, 2) == 1;
  double fb = is_off(t->b) ? 1 : t->b[0] + (t->b[1] - t->b[0]) * dt_unit(&r);
  double fc = is_off(t->c) ? 1 : t->c[0] + (t->c[1] - t->c[0]) * dt_unit(&r);
  wk_tensor *y = wk_contiguous(x);
  wk_tensor *o = y ? wk_empty(wk_tensor_sizes(x), 3, (wk_options){.dtype = dt}) : NULL;
  if (!o) {
    wk_release(y);
    return NULL;
  }
  memcpy(wk_tensor_data(o), wk_tensor_data(y), (size_t)(C * hw) * wk_dtype_size(dt));
  wk_release(y);
  void *p = wk_tensor_data(o);
  for (int k = 0; k < 2; k++) {
    bool do_contrast = (k == 0) == contrast_first;
    if (do_contrast && !is_off(t->c) && hw > 0) blend(p, dt, C * hw, fc, gray_mean(p, dt, C, hw));
    if (!do_contrast && !is_off(t->b)) blend(p, dt, C * hw, fb, 0);
  }
  return o;
}
static const dt_transform_vt jitter_vt = {"color_jitter", jitter_apply, NULL};

wk_transform *dt_color_jitter(const double *brightness, const double *contrast, uint64_t seed) {
  double b[2] = {1, 1}, c[2] = {1, 1};
  if (brightness) b[0] = brightness[0], b[1] = brightness[1];
  if (contrast) c[0] = contrast[0], c[1] = contrast[1];
  if (!(b[0] >= 0 && b[0] <= b[1] && isfinite(b[1])) || !(c[0] >= 0 && c[0] <= c[1] && isfinite(c[1]))) {
    wk_error(WK_ERR_INVALID_ARG,
             "color_jitter: brightness (%g, %g) and contrast (%g, %g) factor ranges must be "
             "non-negative, finite and ordered (min, max)",
             b[0], b[1], c[0], c[1]);
    return NULL;
  }
  jitter_tf *t = dt_tf_alloc(sizeof *t, &jitter_vt);
  if (t) *t = (jitter_tf){t->base, {b[0], b[1]}, {c[0], c[1]}, seed};
  return t ? &t->base : NULL;
}
