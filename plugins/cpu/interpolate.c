/* cpu plugin: interpolate and interpolate_backward for nearest, nearest-exact and the interpolating modes
 * (linear, bilinear, bicubic, trilinear; issue 21's speed leftovers). Both are separable: per spatial dim, output
 * position o reads K input positions (1 nearest, as ATen's nearest_idx in float; 2 linear; 4 cubic, clamped at
 * the border as ATen's upsample_get_value_bounded) with weights from
 * ATen's area_pixel_compute_source_index in the compute type (float for float32/half/bfloat16, double for
 * float64). One plane (N * C of them, in parallel) runs one dim at a time, the last first: the innermost dim
 * gathers, the outer ones combine whole rows (vectorised). The backward kernel runs the transposed passes in
 * reverse, adding into clamped positions as ATen's backward does; planes are independent, so sums are
 * deterministic. The other modes, and other devices, run the core's composites (core/composite_nn_surface.c),
 * whose tap formulas these mirror. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

/* The kinds of taps; K, the taps per output position, is the kind's value except for nearest-exact (1). */
enum { IP_NEAREST = 1, IP_LINEAR = 2, IP_CUBIC = 4, IP_NEAREST_EXACT = 5 };

/* One dim's taps in T: output o reads idx[o * K + k] with weight w[o * K + k]. */
#define IP_DEF_TAPS(T, SUF)                                                                              \
  static T ip_scale_##SUF(int64_t in, int64_t out, bool align, bool has, double s) {                   \
    if (align) return out > 1 ? (T)(in - 1) / (T)(out - 1) : (T)0;                                     \
    return has && s > 0 ? (T)(1.0 / s) : (T)in / (T)out;                                                \
  }                                                                                                     \
  static T ip_src_##SUF(T scale, int64_t o, bool align, bool cubic) {                                  \
    if (align) return scale * (T)o;                                                                     \
    T v = scale * ((T)o + (T)0.5) - (T)0.5;                                                             \
    return (!cubic && v < 0) ? (T)0 : v;                                                                \
  }                                                                                                     \
  static void ip_taps_##SUF(int kind, int64_t in, int64_t out, bool align, bool has, double s, int64_t *idx, \
                            T *w) {                                                                     \
    int K = kind == IP_NEAREST_EXACT ? 1 : kind;                                                        \
    T scale = ip_scale_##SUF(in, out, align, has, s);                                                   \
    float nsc = has && s > 0 ? (float)(1.0 / s) : (float)in / (float)out; /* ATen's nearest, in float */ \
    for (int64_t o = 0; o < out; o++) {                                                                 \
      int64_t *ix = idx + o * K;                                                                        \
      T *wo = w + o * K;                                                                                \
      if (K == 1) {                                                                                     \
        int64_t src = kind == IP_NEAREST_EXACT ? (int64_t)floorf((float)(((double)o + 0.5) * nsc))      \
                      : out == in                ? o                                                    \
                      : out == 2 * in            ? o >> 1                                               \
                                                 : (int64_t)floorf((float)o * nsc);                     \
        ix[0] = src < in - 1 ? src : in - 1, wo[0] = 1;                                                 \
        continue;                                                                                       \
      }                                                                                                 \
      if (K == IP_LINEAR) {                                                                             \
        if (out == in) {                                                                                \
          ix[0] = ix[1] = o, wo[0] = 1, wo[1] = 0;                                                      \
          continue;                                                                                     \
        }                                                                                               \
        T real = ip_src_##SUF(scale, o, align, false);                                                  \
        int64_t i0 = (int64_t)real < in - 1 ? (int64_t)real : in - 1;                                   \
        T lam = real - (T)i0;                                                                           \
        lam = lam < 0 ? 0 : lam > 1 ? 1 : lam;                                                          \
        ix[0] = i0, ix[1] = i0 + (i0 < in - 1 ? 1 : 0), wo[0] = (T)1 - lam, wo[1] = lam;                \
        continue;                                                                                       \
      }                                                                                                 \
      T real = ip_src_##SUF(scale, o, align, true);                                                     \
      int64_t i = (int64_t)floor((double)real);                                                         \
      T t = real - (T)i, A = (T)-0.75, x1 = t + 1, x2 = 1 - t, x3 = 2 - t;                              \
      wo[0] = ((A * x1 - 5 * A) * x1 + 8 * A) * x1 - 4 * A;                                             \
      wo[1] = ((A + 2) * t - (A + 3)) * t * t + 1;                                                      \
      wo[2] = ((A + 2) * x2 - (A + 3)) * x2 * x2 + 1;                                                   \
      wo[3] = ((A * x3 - 5 * A) * x3 + 8 * A) * x3 - 4 * A;                                             \
      for (int j = 0; j < 4; j++) {                                                                     \
        int64_t p = i - 1 + j;                                                                          \
        ix[j] = p < 0 ? 0 : p > in - 1 ? in - 1 : p;                                                    \
      }                                                                                                 \
    }                                                                                                   \
  }
IP_DEF_TAPS(float, f)
IP_DEF_TAPS(double, d)

/* Antialiased bilinear / bicubic taps (ATen's _compute_indices_weights_aa, in T; the core's composite computes
 * the same): the filter (triangle, or cubic with a = -0.5) stretched by the scale when downsampling, over the
 * input positions within its support around the output's centre, normalised to sum 1; K = 2 ceil(support) + 1
 * slots (always odd: never one of the fixed tap counts above), the unused ones weight 0. */
#define IP_DEF_AA(T, SUF)                                                                                \
  static T ip_aa_filter_##SUF(T x, bool cubic) {                                                        \
    x = x < 0 ? -x : x;                                                                                  \
    if (!cubic) return x < 1 ? 1 - x : 0;                                                                \
    const T a = (T)-0.5;                                                                                 \
    if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;                                               \
    if (x < 2) return (((x - 5) * x + 8) * x - 4) * a;                                                   \
    return 0;                                                                                            \
  }                                                                                                      \
  static int ip_aa_size_##SUF(int64_t in, int64_t out, bool align, bool has, double s, bool cubic) {    \
    T scale = ip_scale_##SUF(in, out, align, has, s), half = cubic ? 2 : 1;                             \
    T support = scale >= 1 ? half * scale : half;                                                        \
    return (int)ceilf((float)support) * 2 + 1;                                                           \
  }                                                                                                      \
  static void ip_aa_taps_##SUF(bool cubic, int K, int64_t in, int64_t out, bool align, bool has, double s, \
                               int64_t *idx, T *w) {                                                     \
    T scale = ip_scale_##SUF(in, out, align, has, s), half = cubic ? 2 : 1;                             \
    T support = scale >= 1 ? half * scale : half, invscale = scale >= 1 ? (T)1 / scale : (T)1;          \
    for (int64_t o = 0; o < out; o++) {                                                                  \
      T center = scale * ((T)o + (T)0.5), total = 0;                                                     \
      int64_t xmin = (int64_t)(center - support + (T)0.5), xmax = (int64_t)(center + support + (T)0.5); \
      if (xmin < 0) xmin = 0;                                                                            \
      int64_t xsize = (xmax < in ? xmax : in) - xmin;                                                    \
      if (xsize > K) xsize = K;                                                                          \
      int64_t *ix = idx + o * K;                                                                         \
      T *wo = w + o * K;                                                                                 \
      for (int64_t q = 0; q < K; q++) {                                                                  \
        bool on = q < xsize;                                                                             \
        wo[q] = on ? ip_aa_filter_##SUF(((T)(q + xmin) - center + (T)0.5) * invscale, cubic) : 0;       \
        ix[q] = on ? xmin + q : (xmin < in ? xmin : in - 1);                                             \
        total += wo[q];                                                                                  \
      }                                                                                                  \
      if (total != 0)                                                                                    \
        for (int64_t q = 0; q < xsize; q++) wo[q] /= total;                                              \
    }                                                                                                    \
  }
IP_DEF_AA(float, f)
IP_DEF_AA(double, d)

typedef struct {
  int nsp, K[3]; /* taps per output position, per spatial dim */
  int64_t in[3], out[3];  /* spatial sizes */
  const int64_t *idx[3];  /* per spatial dim: [out * K] */
  const void *w[3];       /* per spatial dim: [out * K] of the compute type */
  const void *src;        /* [planes, ...] contiguous, compute type */
  void *dst;
  int64_t src_plane, dst_plane, tmp_elems;
  bool backward;
  int failed; /* a chunk could not allocate its scratch (set atomically) */
} ip_job;

/* The passes over one plane, in T. Forward, dim j (last first): [outer, in_j, inner] -> [outer, out_j, inner];
 * backward: [outer, out_j, inner] -> [outer, in_j, inner], in the reverse order, added into a zeroed buffer. */
#define IP_DEF_PASS(T, SUF)                                                                                 \
  static void ip_fwd_##SUF(const T *s, T *d, int64_t outer, int64_t in, int64_t out, int64_t inner, int K, \
                           const int64_t *idx, const T *w) {                                                \
    for (int64_t a = 0; a < outer; a++) {                                                                   \
      const T *sa = s + a * in * inner;                                                                     \
      T *da = d + a * out * inner;                                                                          \
      if (inner == 1) {                                                                                     \
        if (K == 1)                                                                                         \
          for (int64_t o = 0; o < out; o++) da[o] = sa[idx[o]];                                             \
        else if (K == IP_LINEAR)                                                                            \
          for (int64_t o = 0; o < out; o++)                                                                 \
            da[o] = w[2 * o] * sa[idx[2 * o]] + w[2 * o + 1] * sa[idx[2 * o + 1]];                          \
        else if (K != IP_CUBIC) /* antialias: any number of taps */                                         \
          for (int64_t o = 0; o < out; o++) {                                                               \
            T acc = 0;                                                                                      \
            for (int k = 0; k < K; k++) acc += w[K * o + k] * sa[idx[K * o + k]];                           \
            da[o] = acc;                                                                                    \
          }                                                                                                 \
        else                                                                                                \
          for (int64_t o = 0; o < out; o++) {                                                               \
            const int64_t *ix = idx + 4 * o;                                                                \
            const T *wo = w + 4 * o;                                                                        \
            da[o] = wo[0] * sa[ix[0]] + wo[1] * sa[ix[1]] + wo[2] * sa[ix[2]] + wo[3] * sa[ix[3]];          \
          }                                                                                                 \
        continue;                                                                                           \
      }                                                                                                     \
      for (int64_t o = 0; o < out; o++) {                                                                   \
        T *dr = da + o * inner;                                                                             \
        const int64_t *ix = idx + K * o;                                                                    \
        const T *wo = w + K * o;                                                                            \
        if (K == 1) {                                                                                       \
          memcpy(dr, sa + ix[0] * inner, sizeof(T) * (size_t)inner);                                        \
        } else if (K == IP_LINEAR) {                                                                        \
          const T *r0 = sa + ix[0] * inner, *r1 = sa + ix[1] * inner;                                       \
          T w0 = wo[0], w1 = wo[1];                                                                         \
          for (int64_t q = 0; q < inner; q++) dr[q] = w0 * r0[q] + w1 * r1[q];                              \
        } else if (K != IP_CUBIC) { /* antialias: any number of taps */                                   \
          for (int64_t q = 0; q < inner; q++) dr[q] = 0;                                                    \
          for (int k = 0; k < K; k++) {                                                                     \
            const T *rk = sa + ix[k] * inner;                                                               \
            T wk = wo[k];                                                                                   \
            for (int64_t q = 0; q < inner; q++) dr[q] += wk * rk[q];                                        \
          }                                                                                                 \
        } else {                                                                                            \
          const T *r0 = sa + ix[0] * inner, *r1 = sa + ix[1] * inner, *r2 = sa + ix[2] * inner,             \
                  *r3 = sa + ix[3] * inner;                                                                 \
          T w0 = wo[0], w1 = wo[1], w2 = wo[2], w3 = wo[3];                                                 \
          for (int64_t q = 0; q < inner; q++) dr[q] = w0 * r0[q] + w1 * r1[q] + w2 * r2[q] + w3 * r3[q];    \
        }                                                                                                   \
      }                                                                                                     \
    }                                                                                                       \
  }                                                                                                         \
  static void ip_bwd_##SUF(const T *g, T *d, int64_t outer, int64_t in, int64_t out, int64_t inner, int K, \
                           const int64_t *idx, const T *w) {                                                \
    memset(d, 0, sizeof(T) * (size_t)(outer * in * inner));                                                \
    for (int64_t a = 0; a < outer; a++) {                                                                   \
      const T *ga = g + a * out * inner;                                                                    \
      T *da = d + a * in * inner;                                                                           \
      for (int64_t o = 0; o < out; o++) {                                                                   \
        const T *gr = ga + o * inner;                                                                       \
        for (int k = 0; k < K; k++) {                                                                       \
          T *dr = da + idx[K * o + k] * inner, wk = w[K * o + k];                                           \
          for (int64_t q = 0; q < inner; q++) dr[q] += wk * gr[q];                                          \
        }                                                                                                   \
      }                                                                                                     \
    }                                                                                                       \
  }                                                                                                         \
  static void ip_planes_##SUF(void *p, int64_t b, int64_t e) {                                             \
    ip_job *j = p;                                                                                          \
    T *tmp = malloc(sizeof(T) * (size_t)(2 * j->tmp_elems + 1));                                           \
    if (!tmp) {                                                                                             \
      __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);                                                    \
      return;                                                                                               \
    }                                                                                                       \
    for (int64_t pl = b; pl < e; pl++) {                                                                    \
      const T *s = (const T *)j->src + pl * j->src_plane;                                                   \
      T *d = (T *)j->dst + pl * j->dst_plane;                                                               \
      /* cur: the plane's sizes as the passes change them */                                                \
      int64_t cur[3];                                                                                       \
      for (int i = 0; i < j->nsp; i++) cur[i] = j->backward ? j->out[i] : j->in[i];                        \
      const T *from = s;                                                                                    \
      for (int step = 0; step < j->nsp; step++) {                                                           \
        int i = j->backward ? step : j->nsp - 1 - step; /* forward: last dim first */                       \
        int64_t outer = 1, inner = 1;                                                                       \
        for (int q = 0; q < i; q++) outer *= cur[q];                                                        \
        for (int q = i + 1; q < j->nsp; q++) inner *= cur[q];                                              \
        T *to = step == j->nsp - 1 ? d : tmp + (step % 2) * j->tmp_elems;                                   \
        if (j->backward)                                                                                    \
          ip_bwd_##SUF(from, to, outer, j->in[i], j->out[i], inner, j->K[i], j->idx[i], (const T *)j->w[i]);  \
        else                                                                                                \
          ip_fwd_##SUF(from, to, outer, j->in[i], j->out[i], inner, j->K[i], j->idx[i], (const T *)j->w[i]);  \
        cur[i] = j->backward ? j->in[i] : j->out[i];                                                        \
        from = to;                                                                                          \
      }                                                                                                     \
    }                                                                                                       \
    free(tmp);                                                                                              \
  }
IP_DEF_PASS(float, f)
IP_DEF_PASS(double, d)

/* Modes this file runs: nearest, nearest-exact and the interpolating ones (area goes to the composite). */
static int ip_taps_of(const char *m) {
  return !strcmp(m, "bicubic")         ? IP_CUBIC
         : !strcmp(m, "nearest")       ? IP_NEAREST
         : !strcmp(m, "nearest-exact") ? IP_NEAREST_EXACT
         : (!strcmp(m, "linear") || !strcmp(m, "bilinear") || !strcmp(m, "trilinear")) ? IP_LINEAR
                                                                                          : 0;
}
static bool ip_supports(const wk_kernel_ctx *ctx, const wk_value *args) {
  (void)ctx;
  return args[3].tag == WK_V_STR && args[3].u.s && ip_taps_of(args[3].u.s) != 0;
}

/* Both directions: x (forward: the input; backward: grad_output) to a result of shape `rs` (the meta's). */
static wk_status ip_run(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs, bool backward) {
  wk_tensor *x = WK_ARG_T(0);
  if (!ip_supports(ctx, args))
    return wk_error(WK_ERR_UNSUPPORTED, "%s(): the cpu kernel does not run mode '%s' (the composite does)", WK_OPNAME,
                    args[3].u.s);
  const wk_meta_out *mo = wk_kernel_meta(ctx, 0);
  int nd = mo->ndim, nsp = nd - 2, kind = ip_taps_of(args[3].u.s);
  bool align = args[4].tag == WK_V_BOOL && args[4].u.b;
  bool use_scale = args[2].tag == WK_V_FLOATS && !(args[5].tag == WK_V_BOOL && args[5].u.b);
  bool aa = args[6].tag == WK_V_BOOL && args[6].u.b; /* the meta allows it for bilinear and bicubic only */
  wk_dtype dt = mo->dtype, cd = cpu_fcompute(dt);
  const int64_t *xs = wk_tensor_sizes(x);
  ip_job j = {.nsp = nsp, .backward = backward};
  int64_t planes = mo->sizes[0] * mo->sizes[1], tmp = 1;
  j.src_plane = j.dst_plane = 1;
  int Kmax = 1;
  for (int i = 0; i < nsp; i++) {
    j.in[i] = backward ? mo->sizes[2 + i] : xs[2 + i];
    j.out[i] = backward ? xs[2 + i] : mo->sizes[2 + i];
    double sc = use_scale ? args[2].u.floats[args[2].len == 1 ? 0 : i] : 0;
    j.K[i] = !aa ? (kind == IP_NEAREST_EXACT ? 1 : kind)
             : cd == WK_F64 ? ip_aa_size_d(j.in[i], j.out[i], align, use_scale, sc, kind == IP_CUBIC)
                            : ip_aa_size_f(j.in[i], j.out[i], align, use_scale, sc, kind == IP_CUBIC);
    if (j.K[i] > Kmax) Kmax = j.K[i];
    j.src_plane *= xs[2 + i];
    j.dst_plane *= mo->sizes[2 + i];
  }
  /* the largest intermediate: sizes after each pass (the final one goes to dst) */
  {
    int64_t cur[3];
    for (int i = 0; i < nsp; i++) cur[i] = backward ? j.out[i] : j.in[i];
    for (int step = 0; step + 1 < nsp; step++) {
      int i = backward ? step : nsp - 1 - step;
      cur[i] = backward ? j.in[i] : j.out[i];
      int64_t n = 1;
      for (int q = 0; q < nsp; q++) n *= cur[q];
      if (n > tmp) tmp = n;
    }
  }
  j.tmp_elems = tmp;
  size_t ws = cd == WK_F64 ? sizeof(double) : sizeof(float);
  int64_t *idx[3] = {NULL, NULL, NULL};
  void *w[3] = {NULL, NULL, NULL};
  wk_tensor *src = NULL, *dst = NULL, *res = NULL;
  wk_status s = WK_OK;
  for (int i = 0; i < nsp; i++) {
    idx[i] = malloc(sizeof(int64_t) * (size_t)(j.out[i] * j.K[i]));
    w[i] = malloc(ws * (size_t)(j.out[i] * j.K[i]));
    if (!idx[i] || !w[i]) goto oom;
    double sc = use_scale ? args[2].u.floats[args[2].len == 1 ? 0 : i] : 0;
    if (aa && cd == WK_F64)
      ip_aa_taps_d(kind == IP_CUBIC, j.K[i], j.in[i], j.out[i], align, use_scale, sc, idx[i], w[i]);
    else if (aa)
      ip_aa_taps_f(kind == IP_CUBIC, j.K[i], j.in[i], j.out[i], align, use_scale, sc, idx[i], w[i]);
    else if (cd == WK_F64)
      ip_taps_d(kind, j.in[i], j.out[i], align, use_scale, sc, idx[i], w[i]);
    else
      ip_taps_f(kind, j.in[i], j.out[i], align, use_scale, sc, idx[i], w[i]);
    j.idx[i] = idx[i], j.w[i] = w[i];
  }
  if (!(src = cpu_prep(x, cd)) || !(dst = cpu_empty(mo->sizes, nd, cd))) {
    s = wk_last_error();
    goto end;
  }
  j.src = wk_tensor_data(src), j.dst = wk_tensor_data(dst);
  int64_t work = (j.src_plane > j.dst_plane ? j.src_plane : j.dst_plane) * Kmax;
  cpu_par(planes, work, cd == WK_F64 ? ip_planes_d : ip_planes_f, &j);
  if (__atomic_load_n(&j.failed, __ATOMIC_RELAXED)) goto oom;
  if (cd == dt) {
    res = dst, dst = NULL;
  } else if (!(res = wk_kernel_cast(dst, dt))) {
    s = wk_last_error();
  }
  goto end;
oom:
  s = wk_error(WK_ERR_NO_MEMORY, "%s(): out of memory for the interpolation taps or scratch", WK_OPNAME);
end:
  for (int i = 0; i < 3; i++) {
    free(idx[i]);
    free(w[i]);
  }
  wk_release(src);
  wk_release(dst);
  if (s) {
    wk_release(res);
    return s;
  }
  outs[0] = WK_VT(res);
  return WK_OK;
}

static wk_status k_interpolate(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return ip_run(ctx, args, outs, false);
}
static wk_status k_interpolate_backward(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return ip_run(ctx, args, outs, true);
}

wk_status cpu_register_interpolate(void) {
  static const struct {
    const char *op;
    wk_kernel_fn fn;
  } ks[] = {{"interpolate", k_interpolate}, {"interpolate_backward", k_interpolate_backward}};
  for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
    /* above the reference: the composite stays every mode's reference kernel (the op sweep compares this one
     * with it) */
    wk_kernel_desc d = {sizeof d, ks[i].op, WK_DEVICE_CPU, WK_PRIORITY_OPTIMIZED, ks[i].fn, ip_supports, NULL,
                        "cpu.interpolate"};
    wk_status s = wk_kernel_register(&d);
    if (s) return s;
  }
  return WK_OK;
}
