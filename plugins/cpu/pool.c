/* cpu plugin: 2-D pooling forward kernels — max_pool2d_with_indices,
 * avg_pool2d and adaptive_avg_pool2d, batched [N,C,H,W] or unbatched [C,H,W] —
 * and the geometry reader their backward kernels (conv_backward.c) share. The
 * core's meta function (core/meta_conv.c) checks the arguments and decides the
 * output shape. f16/bf16 compute in f32. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "simd.h"

typedef struct {
  const char *x;
  int64_t sN, sC, sH, sW; /* input strides (elements) */
  int64_t C, H, W, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
  char *out;
  int64_t *ind;
  int64_t imin;         /* max pool on integers: the dtype's lowest value */
  bool count_include_pad;
  bool has_div;
  int64_t divisor;
} pool_job;

#define PLANE_PTRS(T)                                                       \
  int64_t n_ = plane / j->C, c_ = plane % j->C;                             \
  const T *src = (const T *)j->x + n_ * j->sN + c_ * j->sC;                 \
  T *dst = (T *)j->out + plane * j->oh * j->ow

/* PyTorch's loop: the first valid position is the initial argmax, a value
 * replaces the running max when greater or NaN. The geometry is copied into
 * locals: the int64 index stores could alias the job's fields otherwise, and
 * every field would be reloaded after each store. */
#define MAXPOOL(NAME, T, INIT, ISNAN)                                                      \
  static void NAME(void *p, int64_t b, int64_t e) {                                        \
    const pool_job *j = p;                                                                 \
    const int64_t H = j->H, W = j->W, sH = j->sH, sW = j->sW, oh = j->oh, ow = j->ow;      \
    const int64_t kh = j->kh, kw = j->kw, sh = j->sh, sw = j->sw, ph = j->ph, pw = j->pw;  \
    const int64_t dh = j->dh, dw = j->dw;                                                  \
    for (int64_t plane = b; plane < e; plane++) {                                          \
      PLANE_PTRS(T);                                                                       \
      int64_t *ind = j->ind + plane * oh * ow;                                             \
      for (int64_t oy = 0; oy < oh; oy++) {                                                \
        int64_t h0 = oy * sh - ph, h1 = h0 + (kh - 1) * dh + 1;                            \
        if (h1 > H) h1 = H;                                                                \
        while (h0 < 0) h0 += dh;                                                           \
        for (int64_t ox = 0; ox < ow; ox++) {                                              \
          int64_t w0 = ox * sw - pw, w1 = w0 + (kw - 1) * dw + 1;                          \
          if (w1 > W) w1 = W;                                                              \
          while (w0 < 0) w0 += dw;                                                         \
          int64_t mi = h0 * W + w0;                                                        \
          T mv = INIT;                                                                     \
          for (int64_t y = h0; y < h1; y += dh)                                            \
            for (int64_t x = w0; x < w1; x += dw) {                                        \
              T v = src[y * sH + x * sW];                                                  \
              if (v > mv || ISNAN(v)) {                                                    \
                mv = v;                                                                    \
                mi = y * W + x;                                                            \
              }                                                                            \
            }                                                                              \
          dst[oy * ow + ox] = mv;                                                          \
          ind[oy * ow + ox] = mi;                                                          \
        }                                                                                  \
      }                                                                                    \
    }                                                                                      \
  }
#define NO_NAN(v) false
MAXPOOL(maxpool_f32, float, -INFINITY, isnan)
MAXPOOL(maxpool_f64, double, -INFINITY, isnan)
MAXPOOL(maxpool_i64, int64_t, j->imin, NO_NAN)

/* The common 2x2, stride 2, unpadded, undilated window over rows with unit
 * stride: the same comparisons in the same order as MAXPOOL (the first
 * element starts the max: -inf never replaces it), unrolled. */
#define MAXPOOL22(NAME, T)                                                                        \
  static void NAME(void *p, int64_t b, int64_t e) {                                               \
    const pool_job *j = p;                                                                        \
    for (int64_t plane = b; plane < e; plane++) {                                                 \
      PLANE_PTRS(T);                                                                              \
      int64_t *ind = j->ind + plane * j->oh * j->ow;                                              \
      for (int64_t oy = 0; oy < j->oh; oy++) {                                                    \
        const T *r0 = src + 2 * oy * j->sH, *r1 = r0 + j->sH;                                     \
        T *d = dst + oy * j->ow;                                                                  \
        int64_t *id = ind + oy * j->ow, base = 2 * oy * j->W;                                     \
        for (int64_t ox = 0; ox < j->ow; ox++) {                                                  \
          T v0 = r0[2 * ox], v1 = r0[2 * ox + 1], v2 = r1[2 * ox], v3 = r1[2 * ox + 1];           \
          T mv = v0;                                                                              \
          int64_t mi = base + 2 * ox;                                                             \
          if (v1 > mv || isnan(v1)) mv = v1, mi = base + 2 * ox + 1;                              \
          if (v2 > mv || isnan(v2)) mv = v2, mi = base + j->W + 2 * ox;                           \
          if (v3 > mv || isnan(v3)) mv = v3, mi = base + j->W + 2 * ox + 1;                       \
          d[ox] = mv;                                                                             \
          id[ox] = mi;                                                                            \
        }                                                                                         \
      }                                                                                           \
    }                                                                                             \
  }
MAXPOOL22(maxpool22_scalar_f32, float)
MAXPOOL22(maxpool22_f64, double)

#ifdef __SSE2__
#include <emmintrin.h>
/* PyTorch's rule on four lanes: mv/mi take V/I where V is greater or NaN. */
#define MP_SEL(V, I)                                                                   \
  do {                                                                                 \
    __m128 c_ = _mm_or_ps(_mm_cmpgt_ps(V, mv), _mm_cmpunord_ps(V, V));                 \
    __m128i ci_ = _mm_castps_si128(c_);                                                \
    mv = _mm_or_ps(_mm_and_ps(c_, V), _mm_andnot_ps(c_, mv));                          \
    mi = _mm_or_si128(_mm_and_si128(ci_, I), _mm_andnot_si128(ci_, mi));               \
  } while (0)

/* Four maxima and their (non-negative, int32) flat indices, widened to int64. */
static inline void mp_store4(float *d, int64_t *id, __m128 mv, __m128i mi) {
  __m128i z = _mm_setzero_si128();
  _mm_storeu_ps(d, mv);
  _mm_storeu_si128((__m128i *)id, _mm_unpacklo_epi32(mi, z));
  _mm_storeu_si128((__m128i *)(id + 2), _mm_unpackhi_epi32(mi, z));
}

/* maxpool22 for f32, four outputs at a time with SSE2 selects (the max is
 * data dependent: branches mispredict). Same comparisons, same order. */
static void maxpool22_f32(void *p, int64_t b, int64_t e) {
  const pool_job *j = p;
  if (j->H * j->W > INT32_MAX) {
    maxpool22_scalar_f32(p, b, e);
    return;
  }
  for (int64_t plane = b; plane < e; plane++) {
    PLANE_PTRS(float);
    int64_t *ind = j->ind + plane * j->oh * j->ow;
    for (int64_t oy = 0; oy < j->oh; oy++) {
      const float *r0 = src + 2 * oy * j->sH, *r1 = r0 + j->sH;
      float *d = dst + oy * j->ow;
      int64_t *id = ind + oy * j->ow, base = 2 * oy * j->W, ox = 0;
      __m128i step = _mm_set_epi32(6, 4, 2, 0), w = _mm_set1_epi32((int)j->W), one = _mm_set1_epi32(1);
      for (; ox + 4 <= j->ow; ox += 4) {
        __m128 a0 = _mm_loadu_ps(r0 + 2 * ox), a1 = _mm_loadu_ps(r0 + 2 * ox + 4);
        __m128 b0 = _mm_loadu_ps(r1 + 2 * ox), b1 = _mm_loadu_ps(r1 + 2 * ox + 4);
        __m128 v0 = _mm_shuffle_ps(a0, a1, _MM_SHUFFLE(2, 0, 2, 0)), v1 = _mm_shuffle_ps(a0, a1, _MM_SHUFFLE(3, 1, 3, 1));
        __m128 v2 = _mm_shuffle_ps(b0, b1, _MM_SHUFFLE(2, 0, 2, 0)), v3 = _mm_shuffle_ps(b0, b1, _MM_SHUFFLE(3, 1, 3, 1));
        __m128i i0 = _mm_add_epi32(_mm_set1_epi32((int)(base + 2 * ox)), step);
        __m128i i1 = _mm_add_epi32(i0, one), i2 = _mm_add_epi32(i0, w), i3 = _mm_add_epi32(i2, one);
        __m128 mv = v0;
        __m128i mi = i0;
        MP_SEL(v1, i1);
        MP_SEL(v2, i2);
        MP_SEL(v3, i3);
        mp_store4(d + ox, id + ox, mv, mi);
      }
      for (; ox < j->ow; ox++) {
        float v0 = r0[2 * ox], v1 = r0[2 * ox + 1], v2 = r1[2 * ox], v3 = r1[2 * ox + 1], mv = v0;
        int64_t mi = base + 2 * ox;
        if (v1 > mv || isnan(v1)) mv = v1, mi = base + 2 * ox + 1;
        if (v2 > mv || isnan(v2)) mv = v2, mi = base + j->W + 2 * ox;
        if (v3 > mv || isnan(v3)) mv = v3, mi = base + j->W + 2 * ox + 1;
        d[ox] = mv;
        id[ox] = mi;
      }
    }
  }
}

/* One output of a 3x3, stride 2, padding 1 window, PyTorch's scan (the
 * first valid position starts, greater or NaN replaces). */
static inline void mp33_one(const float *src, int64_t sH, int64_t H, int64_t W, int64_t oy, int64_t ox, float *d,
                            int64_t *id) {
  int64_t y0 = 2 * oy - 1, y1 = y0 + 3, x0 = 2 * ox - 1, x1 = x0 + 3;
  if (y0 < 0) y0 = 0;
  if (x0 < 0) x0 = 0;
  if (y1 > H) y1 = H;
  if (x1 > W) x1 = W;
  float mv = src[y0 * sH + x0];
  int64_t mi = y0 * W + x0;
  for (int64_t y = y0; y < y1; y++)
    for (int64_t x = (y == y0 ? x0 + 1 : x0); x < x1; x++) {
      float v = src[y * sH + x];
      if (v > mv || isnan(v)) mv = v, mi = y * W + x;
    }
  *d = mv;
  *id = mi;
}

/* ResNet's stem pool: 3x3 windows, stride 2, padding 1, undilated, unit
 * stride rows of even width (every window right of the first column lies
 * inside its row). Four outputs at a time: each input row is split into its
 * even and odd columns, so the taps x = 2ox-1, 2ox, 2ox+1 are whole vectors,
 * taken in PyTorch's scan order with the same selects as maxpool22_f32; the
 * first column (its left tap is padding) and rows of fewer than 5 outputs go
 * through mp33_one. */
static void maxpool33s2_f32(void *p, int64_t b, int64_t e) {
  const pool_job *j = p;
  const int64_t H = j->H, W = j->W, sH = j->sH, oh = j->oh, ow = j->ow;
  for (int64_t plane = b; plane < e; plane++) {
    PLANE_PTRS(float);
    int64_t *ind = j->ind + plane * oh * ow;
    for (int64_t oy = 0; oy < oh; oy++) {
      float *d = dst + oy * ow;
      int64_t *id = ind + oy * ow;
      mp33_one(src, sH, H, W, oy, 0, d, id);
      if (ow < 5) {
        for (int64_t ox = 1; ox < ow; ox++) mp33_one(src, sH, H, W, oy, ox, d + ox, id + ox);
        continue;
      }
      int64_t y0 = 2 * oy - 1, y1 = y0 + 3;
      if (y0 < 0) y0 = 0;
      if (y1 > H) y1 = H;
      const __m128i step = _mm_set_epi32(6, 4, 2, 0), one = _mm_set1_epi32(1);
      for (int64_t ox = 1; ox < ow; ox += 4) {
        if (ox + 4 > ow) ox = ow - 4; /* the last four overlap: the same values again */
        __m128 mv = _mm_setzero_ps(); /* set from the first row's left tap */
        __m128i mi = _mm_setzero_si128();
        for (int64_t y = y0; y < y1; y++) {
          const float *r = src + y * sH + 2 * ox;
          __m128 b0 = _mm_loadu_ps(r), b1 = _mm_loadu_ps(r + 4);         /* columns 2ox .. 2ox+7 */
          __m128 c0 = _mm_loadu_ps(r - 1), c1 = _mm_loadu_ps(r + 3);     /* columns 2ox-1 .. 2ox+6 */
          __m128 vl = _mm_shuffle_ps(c0, c1, _MM_SHUFFLE(2, 0, 2, 0));   /* x = 2ox-1 */
          __m128 vc = _mm_shuffle_ps(b0, b1, _MM_SHUFFLE(2, 0, 2, 0));   /* x = 2ox */
          __m128 vr = _mm_shuffle_ps(b0, b1, _MM_SHUFFLE(3, 1, 3, 1));   /* x = 2ox+1 */
          __m128i il = _mm_add_epi32(_mm_set1_epi32((int)(y * W + 2 * ox - 1)), step);
          __m128i ic = _mm_add_epi32(il, one), ir = _mm_add_epi32(ic, one);
          if (y == y0) {
            mv = vl;
            mi = il;
          } else {
            MP_SEL(vl, il);
          }
          MP_SEL(vc, ic);
          MP_SEL(vr, ir);
        }
        mp_store4(d + ox, id + ox, mv, mi);
      }
    }
  }
}
#define HAVE_MAXPOOL33S2 1
#else
#define maxpool22_f32 maxpool22_scalar_f32
#endif

#define AVGPOOL(NAME, T)                                                                          \
  static void NAME(void *p, int64_t b, int64_t e) {                                               \
    const pool_job *j = p;                                                                        \
    for (int64_t plane = b; plane < e; plane++) {                                                 \
      PLANE_PTRS(T);                                                                              \
      for (int64_t oy = 0; oy < j->oh; oy++) {                                                    \
        for (int64_t ox = 0; ox < j->ow; ox++) {                                                  \
          int64_t h0 = oy * j->sh - j->ph, w0 = ox * j->sw - j->pw;                               \
          int64_t h1 = h0 + j->kh, w1 = w0 + j->kw;                                               \
          if (h1 > j->H + j->ph) h1 = j->H + j->ph;                                               \
          if (w1 > j->W + j->pw) w1 = j->W + j->pw;                                               \
          int64_t pool = (h1 - h0) * (w1 - w0);                                                   \
          if (h0 < 0) h0 = 0;                                                                     \
          if (w0 < 0) w0 = 0;                                                                     \
          if (h1 > j->H) h1 = j->H;                                                               \
          if (w1 > j->W) w1 = j->W;                                                               \
          if (h0 >= h1 || w0 >= w1) {                                                             \
            dst[oy * j->ow + ox] = 0;                                                             \
            continue;                                                                             \
          }                                                                                       \
          T sum = 0;                                                                              \
          for (int64_t y = h0; y < h1; y++)                                                       \
            for (int64_t x = w0; x < w1; x++) sum += src[y * j->sH + x * j->sW];                  \
          int64_t div = j->has_div ? j->divisor : j->count_include_pad ? pool : (h1 - h0) * (w1 - w0); \
          dst[oy * j->ow + ox] = sum / (T)div;                                                    \
        }                                                                                         \
      }                                                                                           \
    }                                                                                             \
  }
AVGPOOL(avgpool_f32, float)
AVGPOOL(avgpool_f64, double)
AVGPOOL(avgpool_i64, int64_t)

/* Windows [floor(i*in/out), ceil((i+1)*in/out)). */
#define ADAPTIVE(NAME, T)                                                                         \
  static void NAME(void *p, int64_t b, int64_t e) {                                               \
    const pool_job *j = p;                                                                        \
    for (int64_t plane = b; plane < e; plane++) {                                                 \
      PLANE_PTRS(T);                                                                              \
      for (int64_t oy = 0; oy < j->oh; oy++) {                                                    \
        int64_t h0 = oy * j->H / j->oh, h1 = ((oy + 1) * j->H + j->oh - 1) / j->oh;               \
        for (int64_t ox = 0; ox < j->ow; ox++) {                                                  \
          int64_t w0 = ox * j->W / j->ow, w1 = ((ox + 1) * j->W + j->ow - 1) / j->ow;             \
          T sum = 0;                                                                              \
          for (int64_t y = h0; y < h1; y++)                                                       \
            for (int64_t x = w0; x < w1; x++) sum += src[y * j->sH + x * j->sW];                  \
          dst[oy * j->ow + ox] = sum / (T)((h1 - h0) * (w1 - w0));                                \
        }                                                                                         \
      }                                                                                           \
    }                                                                                             \
  }
ADAPTIVE(adaptive_f32, float)
ADAPTIVE(adaptive_f64, double)

/* Output 1x1 over contiguous planes (ResNet's global average): a mean,
 * summed in double over 16 lanes (simd.h). */
static void adaptive_mean_f32(void *p, int64_t b, int64_t e) {
  const pool_job *j = p;
  const int64_t HW = j->H * j->W;
  for (int64_t plane = b; plane < e; plane++) {
    PLANE_PTRS(float);
    dst[0] = (float)(cpu_simd->sum(src, HW) / (double)HW);
  }
}

/* Fills the input geometry of j (as [N, C, H, W]) from x. */
static void pool_geometry(pool_job *j, wk_tensor *x, int64_t *N) {
  int nd = wk_tensor_dim(x);
  const int64_t *s = wk_tensor_sizes(x), *st = wk_tensor_strides(x);
  int o = nd - 3;
  *N = nd == 4 ? s[0] : 1;
  j->sN = nd == 4 ? st[0] : 0;
  j->C = s[o];
  j->sC = st[o];
  j->H = s[o + 1];
  j->sH = st[o + 1];
  j->W = s[o + 2];
  j->sW = st[o + 2];
  j->x = (const char *)wk_tensor_data(x);
}

/* Runs fn over the N*C planes, in parallel when the work is large. */
static void run_planes(pool_job *j, int64_t planes, int64_t per_plane, void (*fn)(void *, int64_t, int64_t)) {
  if (planes <= 0) return;
  if (per_plane < 1) per_plane = 1;
  int64_t grain = per_plane >= 32768 ? 1 : 32768 / per_plane;
  if (planes <= grain)
    fn(j, 0, planes);
  else
    wk_parallel_for(0, planes, grain, fn, j);
}

void cpu_pool_params(const wk_value *kv, int64_t k[2], int64_t s[2], int64_t p[2]) {
  /* int[2] arguments arrive normalised to two values (stride: or none) */
  const int64_t *sv = kv[1].len == 0 ? kv[0].u.ints : kv[1].u.ints;
  for (int i = 0; i < 2; i++) {
    k[i] = kv[0].u.ints[i];
    s[i] = sv[i];
    p[i] = kv[2].u.ints[i];
  }
}

/* The output's [oh, ow] as the meta function decided (NULL without one). */
static const wk_meta_out *out_hw(const wk_kernel_ctx *ctx, int64_t o[2]) {
  const wk_meta_out *m = wk_kernel_meta(ctx, 0);
  if (!m) {
    wk_error(WK_ERR_INTERNAL, "%s(): no meta function decided the output", WK_OPNAME);
    return NULL;
  }
  o[0] = m->sizes[m->ndim - 2];
  o[1] = m->sizes[m->ndim - 1];
  return m;
}

static int64_t int_min_of(wk_dtype dt) {
  switch (dt) {
    case WK_I8: return INT8_MIN;
    case WK_U8: return 0;
    case WK_I16: return INT16_MIN;
    case WK_I32: return INT32_MIN;
    default: return INT64_MIN;
  }
}

static wk_status k_max_pool2d(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *input = WK_ARG_T(0);
  int64_t k[2], s[2], p[2], d[2], o[2];
  const wk_meta_out *m = out_hw(ctx, o);
  if (!m) return wk_last_error();
  cpu_pool_params(&args[1], k, s, p);
  d[0] = args[4].u.ints[0];
  d[1] = args[4].u.ints[1];
  int nhwc = cpu_maxpool_nhwc(input, k, s, p, d, o, outs); /* channels_last f32: pool_nhwc.c */
  if (nhwc) return nhwc < 0 ? wk_last_error() : WK_OK;
  wk_dtype dt = wk_tensor_dtype(input);
  wk_dtype cd = wk_compute_dtype(dt);
  wk_tensor *x = wk_kernel_cast(input, cd);
  wk_tensor *out = cd == dt ? wk_meta_empty(ctx, 0) : cpu_empty(m->sizes, m->ndim, cd), *ind = wk_meta_empty(ctx, 1);
  if (!x || !out || !ind) goto fail;
  pool_job j = {0};
  int64_t N;
  pool_geometry(&j, x, &N);
  j.oh = o[0], j.ow = o[1], j.kh = k[0], j.kw = k[1], j.sh = s[0], j.sw = s[1], j.ph = p[0], j.pw = p[1];
  j.dh = d[0], j.dw = d[1];
  j.out = (char *)wk_tensor_data(out);
  j.ind = (int64_t *)wk_tensor_data(ind);
  j.imin = int_min_of(dt);
  bool k22 = k[0] == 2 && k[1] == 2 && s[0] == 2 && s[1] == 2 && p[0] == 0 && p[1] == 0 && d[0] == 1 && d[1] == 1 &&
             j.sW == 1 && 2 * o[0] <= j.H && 2 * o[1] <= j.W;
  void (*fn)(void *, int64_t, int64_t) = cd == WK_F32 ? (k22 ? maxpool22_f32 : maxpool_f32)
                                          : cd == WK_F64 ? (k22 ? maxpool22_f64 : maxpool_f64)
                                                         : maxpool_i64;
#ifdef HAVE_MAXPOOL33S2
  if (cd == WK_F32 && k[0] == 3 && k[1] == 3 && s[0] == 2 && s[1] == 2 && p[0] == 1 && p[1] == 1 && d[0] == 1 &&
      d[1] == 1 && j.sW == 1 && j.W % 2 == 0 && o[1] == j.W / 2 && j.H * j.W <= INT32_MAX)
    fn = maxpool33s2_f32;
#endif
  run_planes(&j, N * j.C, o[0] * o[1] * k[0] * k[1], fn);
  wk_release(x);
  x = NULL;
  if (cd != dt) {
    wk_tensor *r = wk_to_dtype(out, dt);
    wk_release(out);
    out = r;
    if (!out) goto fail;
  }
  outs[0] = WK_VT(out);
  outs[1] = WK_VT(ind);
  return WK_OK;
fail:
  wk_release(x);
  wk_release(out);
  wk_release(ind);
  return wk_last_error();
}

static wk_status k_avg_pool2d(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *input = WK_ARG_T(0);
  bool include_pad = WK_ARG_B(5), has_div = !WK_ARG_IS_NONE(6);
  int64_t divisor = has_div ? WK_ARG_I(6) : 0;
  int64_t k[2], s[2], p[2], o[2];
  const wk_meta_out *m = out_hw(ctx, o);
  if (!m) return wk_last_error();
  cpu_pool_params(&args[1], k, s, p);
  wk_dtype dt = wk_tensor_dtype(input);
  wk_dtype cd = wk_compute_dtype(dt);
  wk_tensor *x = wk_kernel_cast(input, cd);
  wk_tensor *out = cd == dt ? wk_meta_empty(ctx, 0) : cpu_empty(m->sizes, m->ndim, cd);
  if (!x || !out) {
    wk_release(x);
    wk_release(out);
    return wk_last_error();
  }
  pool_job j = {0};
  int64_t N;
  pool_geometry(&j, x, &N);
  j.oh = o[0], j.ow = o[1], j.kh = k[0], j.kw = k[1], j.sh = s[0], j.sw = s[1], j.ph = p[0], j.pw = p[1];
  j.out = (char *)wk_tensor_data(out);
  j.count_include_pad = include_pad;
  j.has_div = has_div;
  j.divisor = divisor;
  run_planes(&j, N * j.C, o[0] * o[1] * k[0] * k[1],
             cd == WK_F32 ? avgpool_f32 : cd == WK_F64 ? avgpool_f64 : avgpool_i64);
  wk_release(x);
  if (cd != dt) {
    wk_tensor *r = wk_to_dtype(out, dt);
    wk_release(out);
    out = r;
    if (!out) return wk_last_error();
  }
  outs[0] = WK_VT(out);
  return WK_OK;
}

static wk_status k_adaptive_avg_pool2d(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *input = WK_ARG_T(0);
  int64_t os[2];
  const wk_meta_out *m = out_hw(ctx, os);
  if (!m) return wk_last_error();
  wk_dtype dt = wk_tensor_dtype(input);
  wk_dtype cd = wk_compute_dtype(dt);
  wk_tensor *x = wk_kernel_cast(input, cd);
  wk_tensor *out = cd == dt ? wk_meta_empty(ctx, 0) : cpu_empty(m->sizes, m->ndim, cd);
  if (!x || !out) {
    wk_release(x);
    wk_release(out);
    return wk_last_error();
  }
  pool_job j = {0};
  int64_t N;
  pool_geometry(&j, x, &N);
  j.oh = os[0], j.ow = os[1];
  j.out = (char *)wk_tensor_data(out);
  if (os[0] > 0 && os[1] > 0) {
    int64_t win = ((j.H + os[0] - 1) / os[0] + 1) * ((j.W + os[1] - 1) / os[1] + 1);
    bool mean = cd == WK_F32 && os[0] == 1 && os[1] == 1 && j.sW == 1 && j.sH == j.W;
    run_planes(&j, N * j.C, os[0] * os[1] * win, mean ? adaptive_mean_f32 : cd == WK_F32 ? adaptive_f32 : adaptive_f64);
  }
  wk_release(x);
  if (cd != dt) {
    wk_tensor *r = wk_to_dtype(out, dt);
    wk_release(out);
    out = r;
    if (!out) return wk_last_error();
  }
  outs[0] = WK_VT(out);
  return WK_OK;
}

wk_status cpu_register_pool(void) {
  wk_status s = cpu_reg("max_pool2d_with_indices", k_max_pool2d, NULL);
  if (!s) s = cpu_reg("avg_pool2d", k_avg_pool2d, NULL);
  if (!s) s = cpu_reg("adaptive_avg_pool2d", k_adaptive_avg_pool2d, NULL);
  return s;
}
