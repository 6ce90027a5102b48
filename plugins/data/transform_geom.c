/* data plugin: resampling transforms: Resize and RandomResizedCrop. Both use
 * bilinear interpolation with PyTorch's F.interpolate(align_corners=False,
 * antialias=False) arithmetic: source = scale * (dst + 0.5) - 0.5 clamped at 0,
 * scale = in / out, computed in float32 for uint8/float32 images (torchvision
 * converts uint8 to float32 and rounds back half to even) and in float64 for
 * float64 images. */
#include <math.h>

#include "data.h"

/* One axis: for each output index, the two source indices and their weights. */
typedef struct {
  int64_t *i0, *i1;
  double *w0, *w1;
} axis;

static bool axis_init(axis *a, int64_t in, int64_t out, bool f64) {
  a->i0 = wk_malloc(sizeof(int64_t) * (size_t)out);
  a->i1 = wk_malloc(sizeof(int64_t) * (size_t)out);
  a->w0 = wk_malloc(sizeof(double) * (size_t)out);
  a->w1 = wk_malloc(sizeof(double) * (size_t)out);
  if (!a->i0 || !a->i1 || !a->w0 || !a->w1) return false;
  for (int64_t d = 0; d < out; d++) {
    double src, lam;
    int64_t i0;
    if (f64) {
      double scale = (double)in / (double)out;
      src = scale * ((double)d + 0.5) - 0.5;
      if (src < 0) src = 0;
      i0 = (int64_t)src;
      lam = src - (double)i0;
      a->w0[d] = 1.0 - lam;
    } else { /* PyTorch's opmath for float is float; the source index is computed in double, then stored as float */
      float scale = (float)in / (float)out, s = (float)((double)scale * ((double)d + 0.5) - 0.5);
      if (s < 0) s = 0;
      i0 = (int64_t)s;
      float l = s - (float)i0;
      lam = l;
      a->w0[d] = 1.0f - l;
    }
    a->i0[d] = i0;
    a->i1[d] = i0 + (i0 < in - 1 ? 1 : 0);
    a->w1[d] = lam;
  }
  return true;
}
static void axis_free(axis *a) {
  wk_free(a->i0);
  wk_free(a->i1);
  wk_free(a->w0);
  wk_free(a->w1);
}

/* Resamples the window (top, left, h, w) of every [H, W] plane of x to oh x ow.
 * The window lies inside the image. */
static wk_tensor *resample(const char *fn, wk_tensor *x, int64_t top, int64_t left, int64_t h, int64_t w, int64_t oh,
                           int64_t ow) {
  wk_dtype dt = wk_tensor_dtype(x);
  if (dt != WK_U8 && dt != WK_F32 && dt != WK_F64) {
    wk_error(WK_ERR_DTYPE, "%s: expects a uint8, float32 or float64 image, got %s", fn, wk_dtype_name(dt));
    return NULL;
  }
  int nd = wk_tensor_dim(x);
  int64_t sizes[WK_MAX_DIMS];
  memcpy(sizes, wk_tensor_sizes(x), sizeof(int64_t) * (size_t)nd);
  int64_t H = sizes[nd - 2], W = sizes[nd - 1];
  sizes[nd - 2] = oh;
  sizes[nd - 1] = ow;
  axis ah = {0}, aw = {0};
  bool f64 = dt == WK_F64;
  wk_tensor *c = wk_contiguous(x), *y = NULL;
  if (c && (!axis_init(&ah, h, oh, f64) || !axis_init(&aw, w, ow, f64)))
    wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", fn);
  else if (c)
    y = wk_empty(sizes, nd, (wk_options){.dtype = dt});
  if (y) {
    int64_t planes = wk_tensor_numel(y) / (oh * ow);
    for (int64_t p = 0; p < planes; p++)
      for (int64_t r = 0; r < oh; r++) {
        int64_t r0 = (p * H + top + ah.i0[r]) * W + left, r1 = (p * H + top + ah.i1[r]) * W + left,
                o = (p * oh + r) * ow;
        for (int64_t q = 0; q < ow; q++) {
          int64_t c0 = aw.i0[q], c1 = aw.i1[q];
          if (dt == WK_F64) {
            const double *s = wk_tensor_data(c);
            double v = ah.w0[r] * (aw.w0[q] * s[r0 + c0] + aw.w1[q] * s[r0 + c1]) +
                       ah.w1[r] * (aw.w0[q] * s[r1 + c0] + aw.w1[q] * s[r1 + c1]);
            ((double *)wk_tensor_data(y))[o + q] = v;
          } else {
            float h0 = (float)ah.w0[r], h1 = (float)ah.w1[r], w0 = (float)aw.w0[q], w1 = (float)aw.w1[q], v;
            if (dt == WK_F32) {
              const float *s = wk_tensor_data(c);
              v = h0 * (w0 * s[r0 + c0] + w1 * s[r0 + c1]) + h1 * (w0 * s[r1 + c0] + w1 * s[r1 + c1]);
              ((float *)wk_tensor_data(y))[o + q] = v;
            } else {
              const uint8_t *s = wk_tensor_data(c);
              v = h0 * (w0 * s[r0 + c0] + w1 * s[r0 + c1]) + h1 * (w0 * s[r1 + c0] + w1 * s[r1 + c1]);
              v = nearbyintf(v); /* torch.round: half to even */
              ((uint8_t *)wk_tensor_data(y))[o + q] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
          }
        }
      }
  }
  axis_free(&ah);
  axis_free(&aw);
  wk_release(c);
  return y;
}

/* ---- Resize ---------------------------------------------------------------------------------------- */
typedef struct {
  wk_transform base;
  int64_t h, w; /* w == 0: h is the smaller edge's new size */
} resize_tf;
static wk_tensor *resize_apply(wk_transform *tf, wk_tensor *x, uint64_t seed) {
  resize_tf *t = (resize_tf *)tf;
  (void)seed;
  if (!dt_need_dims("resize", x, 2, "[..., H, W]")) return NULL;
  int nd = wk_tensor_dim(x);
  int64_t H = wk_tensor_size(x, nd - 2), W = wk_tensor_size(x, nd - 1), oh = t->h, ow = t->w;
  if (H < 1 || W < 1) {
    wk_error(WK_ERR_SHAPE, "resize: input image is empty (%lld x %lld)", (long long)H, (long long)W);
    return NULL;
  }
  if (t->w == 0) { /* torchvision: new_long = int(size * long / short) */
    int64_t s = H <= W ? H : W, l = H <= W ? W : H, nl = (int64_t)((double)t->h * (double)l / (double)s);
    oh = H <= W ? t->h : nl;
    ow = H <= W ? nl : t->h;
    if (nl < 1) {
      wk_error(WK_ERR_SHAPE, "resize: resizing a %lld x %lld image to a smaller edge of %lld gives an empty image",
               (long long)H, (long long)W, (long long)t->h);
      return NULL;
    }
  }
  return resample("resize", x, 0, 0, H, W, oh, ow);
}
static const dt_transform_vt resize_vt = {"resize", resize_apply, NULL};
wk_transform *dt_resize(int64_t h, int64_t w) {
  if (h < 1 || w < 0) {
    wk_error(WK_ERR_INVALID_ARG, "resize: size (%lld, %lld) must be positive (w 0: h is the smaller edge)",
             (long long)h, (long long)w);
    return NULL;
  }
  resize_tf *t = dt_tf_alloc(sizeof *t, &resize_vt);
  if (t) t->h = h, t->w = w;
  return t ? &t->base : NULL;
}

/* ---- RandomResizedCrop ------------------------------------------------------------------------------- */
typedef struct {
  wk_transform base;
  int64_t h, w;
  double scale[2], ratio[2];
  uint64_t seed;
} rrc_tf;

/* torchvision's RandomResizedCrop.get_params: ten tries at a window of a
 * random area fraction and log-uniform aspect ratio, then a centre crop
 * clamped to the ratio range. Python's round() is half to even: nearbyint. */
static void rrc_params(const rrc_tf *t, int64_t H, int64_t W, dt_rng *r, int64_t *top, int64_t *left, int64_t *h,
                       int64_t *w) {
  double area = (double)H * (double)W, lr0 = log(t->ratio[0]), lr1 = log(t->ratio[1]);
  for (int k = 0; k < 10; k++) {
    double target = area * (t->scale[0] + (t->scale[1] - t->scale[0]) * dt_unit(r));
    double ar = exp(lr0 + (lr1 - lr0) * dt_unit(r));
    int64_t cw = (int64_t)nearbyint(sqrt(target * ar)), ch = (int64_t)nearbyint(sqrt(target / ar));
    if (0 < cw && cw <= W && 0 < ch && ch <= H) {
      *top = (int64_t)dt_below(r, (uint64_t)(H - ch + 1));
      *left = (int64_t)dt_below(r, (uint64_t)(W - cw + 1));
      *h = ch;
      *w = cw;
      return;
    }
  }
  double in_ratio = (double)W / (double)H;
  if (in_ratio < t->ratio[0]) {
    *w = W;
    *h = (int64_t)nearbyint((double)W / t->ratio[0]);
  } else if (in_ratio > t->ratio[1]) {
    *h = H;
    *w = (int64_t)nearbyint((double)H * t->ratio[1]);
  } else {
    *w = W;
    *h = H;
  }
  if (*h < 1) *h = 1;
  if (*w < 1) *w = 1;
  *top = (H - *h) / 2;
  *left = (W - *w) / 2;
}
static wk_tensor *rrc_apply(wk_transform *tf, wk_tensor *x, uint64_t seed) {
  rrc_tf *t = (rrc_tf *)tf;
  if (!dt_need_dims("random_resized_crop", x, 2, "[..., H, W]")) return NULL;
  int nd = wk_tensor_dim(x);
  int64_t H = wk_tensor_size(x, nd - 2), W = wk_tensor_size(x, nd - 1), top, left, h, w;
  if (H < 1 || W < 1) {
    wk_error(WK_ERR_SHAPE, "random_resized_crop: input image is empty (%lld x %lld)", (long long)H, (long long)W);
    return NULL;
  }
  dt_rng r;
  dt_rng_init(&r, dt_tf_key(seed, t->seed));
  rrc_params(t, H, W, &r, &top, &left, &h, &w);
  return resample("random_resized_crop", x, top, left, h, w, t->h, t->w);
}
static const dt_transform_vt rrc_vt = {"random_resized_crop", rrc_apply, NULL};
wk_transform *dt_random_resized_crop(int64_t h, int64_t w, const double *scale, const double *ratio, uint64_t seed) {
  double s[2] = {0.08, 1.0}, q[2] = {3.0 / 4.0, 4.0 / 3.0};
  if (scale) s[0] = scale[0], s[1] = scale[1];
  if (ratio) q[0] = ratio[0], q[1] = ratio[1];
  if (h < 1 || w < 1) {
    wk_error(WK_ERR_INVALID_ARG, "random_resized_crop: size (%lld, %lld) must be positive", (long long)h, (long long)w);
    return NULL;
  }
  if (!(s[0] > 0 && s[0] <= s[1] && isfinite(s[1])) || !(q[0] > 0 && q[0] <= q[1] && isfinite(q[1]))) {
    wk_error(WK_ERR_INVALID_ARG,
             "random_resized_crop: scale (%g, %g) and ratio (%g, %g) must be positive, finite and "
             "ordered (min, max)",
             s[0], s[1], q[0], q[1]);
    return NULL;
  }
  rrc_tf *t = dt_tf_alloc(sizeof *t, &rrc_vt);
  if (t) *t = (rrc_tf){t->base, h, w, {s[0], s[1]}, {q[0], q[1]}, seed};
  return t ? &t->base : NULL;
}
