/* cpu plugin: the 2-D convolution forward kernel, conv2d (im2col + GEMM,
 * OpenBLAS when configured, else a reference GEMM), batched [N,C,H,W] or
 * unbatched [C,H,W]; the core's meta function (core/meta_conv.c) checks the
 * arguments and decides the output shape. f16/bf16 compute in f32. Pooling is
 * in pool.c. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#ifdef CPU_HAVE_OPENBLAS
#include <cblas.h>
#endif

/* ---- GEMM: C[M,N] += A[M,K] * B[K,N], row-major with leading dimensions ---------- */

typedef struct {
  bool f64;
  int64_t M, N, K, lda, ldb, ldc;
  const void *A, *B;
  void *C;
} gemm_job;

#define GEMM_JB 128 /* columns per block of the reference GEMM */

/* c_r[0..n) += a_r * b[0..n) for four rows r. Called with n == GEMM_JB (a
 * constant after inlining) for full blocks, which lets -O2 vectorise it. */
#define AXPY4(NAME, T)                                                                                 \
  static inline void NAME(int64_t n, T a0, T a1, T a2, T a3, const T *restrict b, T *restrict c0,      \
                          T *restrict c1, T *restrict c2, T *restrict c3) {                            \
    for (int64_t j = 0; j < n; j++) {                                                                  \
      T bj = b[j];                                                                                     \
      c0[j] += a0 * bj;                                                                                \
      c1[j] += a1 * bj;                                                                                \
      c2[j] += a2 * bj;                                                                                \
      c3[j] += a3 * bj;                                                                                \
    }                                                                                                  \
  }                                                                                                    \
  static inline void NAME##_1(int64_t n, T a, const T *restrict b, T *restrict c) {                    \
    for (int64_t j = 0; j < n; j++) c[j] += a * b[j];                                                  \
  }

/* Columns [j0, j0+nj) of C, rows four at a time. Each element accumulates
 * over k in ascending order whatever the split, so results do not depend on
 * the thread count. */
#define GEMM_COLS(NAME, T, AXPY)                                                                       \
  static inline void NAME(const gemm_job *g, int64_t j0, int64_t nj) {                                 \
    const T *A = g->A, *B = (const T *)g->B + j0;                                                      \
    T *C = (T *)g->C + j0;                                                                             \
    int64_t i = 0, lda = g->lda, ldb = g->ldb, ldc = g->ldc;                                           \
    for (; i + 4 <= g->M; i += 4) {                                                                    \
      T *c = C + i * ldc;                                                                              \
      const T *a = A + i * lda;                                                                        \
      for (int64_t k = 0; k < g->K; k++)                                                               \
        AXPY(nj, a[k], a[lda + k], a[2 * lda + k], a[3 * lda + k], B + k * ldb, c, c + ldc, c + 2 * ldc, \
             c + 3 * ldc);                                                                             \
    }                                                                                                  \
    for (; i < g->M; i++)                                                                              \
      for (int64_t k = 0; k < g->K; k++) AXPY##_1(nj, A[i * lda + k], B + k * ldb, C + i * ldc);       \
  }

#define REF_GEMM(NAME, T)                                                                              \
  AXPY4(NAME##_axpy, T)                                                                                \
  GEMM_COLS(NAME##_cols, T, NAME##_axpy)                                                               \
  static void NAME(void *p, int64_t b, int64_t e) {                                                    \
    const gemm_job *g = p;                                                                             \
    for (int64_t jb = b; jb < e; jb++) {                                                               \
      int64_t j0 = jb * GEMM_JB;                                                                       \
      if (j0 + GEMM_JB <= g->N)                                                                        \
        NAME##_cols(g, j0, GEMM_JB);                                                                   \
      else                                                                                             \
        NAME##_cols(g, j0, g->N - j0);                                                                 \
    }                                                                                                  \
  }
REF_GEMM(ref_gemm_f32, float)
REF_GEMM(ref_gemm_f64, double)

static void gemm(bool f64, int64_t M, int64_t N, int64_t K, const void *A, int64_t lda, const void *B, int64_t ldb,
                 void *C, int64_t ldc) {
  if (M == 0 || N == 0 || K == 0) return;
#ifdef CPU_HAVE_OPENBLAS
  if (M <= INT_MAX && N <= INT_MAX && K <= INT_MAX && lda <= INT_MAX && ldb <= INT_MAX && ldc <= INT_MAX) {
    if (f64)
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0, A, (int)lda, B,
                  (int)ldb, 1.0, C, (int)ldc);
    else
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, A, (int)lda, B,
                  (int)ldb, 1.0f, C, (int)ldc);
    return;
  }
#endif
  gemm_job g = {f64, M, N, K, lda, ldb, ldc, A, B, C};
  int64_t nb = (N + GEMM_JB - 1) / GEMM_JB, per_block = M * K * GEMM_JB;
  int64_t grain = per_block >= 65536 ? 1 : 65536 / (per_block ? per_block : 1);
  void (*fn)(void *, int64_t, int64_t) = f64 ? ref_gemm_f64 : ref_gemm_f32;
  if (nb <= grain)
    fn(&g, 0, nb);
  else
    wk_parallel_for(0, nb, grain, fn, &g);
}

/* ---- conv2d ----------------------------------------------------------------------- */

typedef struct {
  const char *x;                 /* input in the compute dtype, strided */
  int64_t sN, sC, sH, sW;        /* input strides (elements) */
  int64_t C, H, W, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, P, Cg;
  char *col;                     /* [K, ldcol] */
  int64_t ldcol, n0, nb, g;      /* images [n0, n0+nb) of group g */
} im2col_job;

/* Rows [b, e) of the column matrix: row r = (c, ki, kj); column b*P + oy*ow + ox. */
#define IM2COL(NAME, T)                                                                           \
  static void NAME(void *p, int64_t b, int64_t e) {                                               \
    const im2col_job *j = p;                                                                      \
    int64_t kk = j->kh * j->kw;                                                                   \
    for (int64_t r = b; r < e; r++) {                                                             \
      int64_t c = r / kk, ki = (r / j->kw) % j->kh, kj = r % j->kw;                               \
      for (int64_t im = 0; im < j->nb; im++) {                                                    \
        const T *src = (const T *)j->x + (j->n0 + im) * j->sN + (j->g * j->Cg + c) * j->sC;       \
        T *dst = (T *)j->col + r * j->ldcol + im * j->P;                                          \
        /* output columns whose input column lies inside the image: [lo, hi) */                  \
        int64_t off = kj * j->dw - j->pw, lo = 0, hi = j->ow;                                     \
        while (lo < hi && lo * j->sw + off < 0) lo++;                                             \
        while (hi > lo && (hi - 1) * j->sw + off >= j->W) hi--;                                   \
        for (int64_t oy = 0; oy < j->oh; oy++) {                                                  \
          T *d = dst + oy * j->ow;                                                                \
          int64_t iy = oy * j->sh - j->ph + ki * j->dh;                                           \
          if (iy < 0 || iy >= j->H) {                                                             \
            for (int64_t ox = 0; ox < j->ow; ox++) d[ox] = 0;                                     \
            continue;                                                                             \
          }                                                                                       \
          const T *s = src + iy * j->sH;                                                          \
          for (int64_t ox = 0; ox < lo; ox++) d[ox] = 0;                                          \
          if (j->sW == 1 && j->sw == 1)                                                           \
            memcpy(d + lo, s + lo + off, sizeof(T) * (size_t)(hi - lo));                          \
          else                                                                                    \
            for (int64_t ox = lo; ox < hi; ox++) d[ox] = s[(ox * j->sw + off) * j->sW];           \
          for (int64_t ox = hi; ox < j->ow; ox++) d[ox] = 0;                                      \
        }                                                                                         \
      }                                                                                           \
    }                                                                                             \
  }
IM2COL(im2col_f32, float)
IM2COL(im2col_f64, double)

/* Fills rows [0, M) of C (leading dimension ldc, n columns) with bias[i] or 0. */
static void fill_rows(bool f64, void *C, int64_t M, int64_t n, int64_t ldc, const void *bias) {
  for (int64_t i = 0; i < M; i++) {
    if (f64) {
      double v = bias ? ((const double *)bias)[i] : 0, *c = (double *)C + i * ldc;
      for (int64_t j = 0; j < n; j++) c[j] = v;
    } else {
      float v = bias ? ((const float *)bias)[i] : 0, *c = (float *)C + i * ldc;
      for (int64_t j = 0; j < n; j++) c[j] = v;
    }
  }
}

/* The per-image work of conv_compute: images [b, e), each by im2col into a
 * private column buffer and one GEMM per group straight into the output. The
 * computation of an image does not depend on how images are split over
 * threads, so results do not depend on the thread count. */
typedef struct {
  bool f64, direct;
  const im2col_job *geo;
  int64_t O, G, K;
  const char *w, *bias;
  char *out;
  bool oom;
} conv_fwd_job;

static void conv_images(void *p, int64_t b, int64_t e) {
  conv_fwd_job *c = p;
  size_t es = c->f64 ? sizeof(double) : sizeof(float);
  im2col_job jb = *c->geo;
  int64_t P = jb.P, Cg = jb.Cg, Og = c->O / c->G, K = c->K;
  char *col = NULL;
  if (!c->direct && K > 0 && !(col = wk_malloc((size_t)(K * P) * es))) {
    c->oom = true;
    return;
  }
  void (*im2col)(void *, int64_t, int64_t) = c->f64 ? im2col_f64 : im2col_f32;
  for (int64_t n = b; n < e; n++) {
    for (int64_t g = 0; g < c->G; g++) {
      const char *Bm = col;
      int64_t ldb = P;
      if (c->direct) {
        Bm = jb.x + (size_t)(n * jb.sN + g * Cg * jb.sC) * es;
        ldb = jb.sC;
      } else if (K > 0) {
        jb.col = col;
        jb.ldcol = P;
        jb.n0 = n;
        jb.nb = 1;
        jb.g = g;
        im2col(&jb, 0, K);
      }
      char *Cm = c->out + (size_t)((n * c->O + g * Og) * P) * es;
      fill_rows(c->f64, Cm, Og, P, P, c->bias ? c->bias + (size_t)(g * Og) * es : NULL);
      if (K > 0) gemm(c->f64, Og, P, K, c->w + (size_t)(g * Og * K) * es, K, Bm, ldb, Cm, P);
    }
  }
  wk_free(col);
}

/* out[N, O, P] (compute dtype, contiguous) = conv(x, w) + bias. */
static wk_status conv_compute(bool f64, im2col_job *jb, int64_t N, int64_t O, int64_t G, const char *w,
                              const char *bias, char *out) {
  int64_t P = jb->P, K = jb->Cg * jb->kh * jb->kw;
  /* 1x1 kernel, stride 1, no padding, dense planes: the input is the column matrix. */
  bool direct = jb->kh == 1 && jb->kw == 1 && jb->sh == 1 && jb->sw == 1 && jb->ph == 0 && jb->pw == 0 &&
                jb->sW == 1 && jb->sH == jb->W && jb->sC >= P;
  conv_fwd_job c = {f64, direct, jb, O, G, K, w, bias, out, false};
  int64_t per_img = O * P * (K + 1);
  if (N > 1 && !wk_in_parallel() && N * per_img >= 65536) {
    int64_t grain = per_img >= 65536 ? 1 : 65536 / per_img;
    wk_parallel_for(0, N, grain, conv_images, &c);
  } else {
    conv_images(&c, 0, N);
  }
  if (c.oom) return wk_error(WK_ERR_NO_MEMORY, "conv2d(): out of memory for the column buffer");
  return WK_OK;
}

static wk_status k_conv2d(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  /* The arguments were checked and the output shape decided by the op's meta function. */
  const wk_meta_out *m = wk_kernel_meta(ctx, 0);
  if (!m) return wk_error(WK_ERR_INTERNAL, "conv2d(): no meta function decided the output");
  wk_tensor *input = WK_ARG_T(0), *weight = WK_ARG_T(1), *bias = WK_ARG_OPT_T(2);
  /* int[2] arguments arrive normalised to two values */
  const int64_t *st = args[3].u.ints, *pd = args[4].u.ints, *dl = args[5].u.ints;
  int64_t groups = WK_ARG_I(6);
  int xd = wk_tensor_dim(input);
  /* Sizes as [N, C, H, W]; an unbatched input is a batch of one. */
  const int64_t *xs = wk_tensor_sizes(input), *ws = wk_tensor_sizes(weight);
  int64_t sz[4], sx[4];
  for (int i = 0; i < 4; i++) sz[i] = i < 4 - xd ? 1 : xs[i - (4 - xd)];
  int64_t O = ws[0], Cg = ws[1], kh = ws[2], kw = ws[3];
  int64_t N = sz[0], oh = m->sizes[m->ndim - 2], ow = m->sizes[m->ndim - 1];
  wk_dtype dt = m->dtype;
  wk_dtype cd = wk_compute_dtype(dt);
  bool f64 = cd == WK_F64;
  wk_tensor *out = cd == dt ? wk_meta_empty(ctx, 0) : cpu_empty(m->sizes, m->ndim, cd);
  if (!out) return wk_last_error();
  wk_tensor *x = NULL, *wc = NULL, *wcc = NULL, *bc = NULL, *bcc = NULL;
  wk_status s = WK_OK;
  if (wk_tensor_numel(out) > 0) {
    x = wk_kernel_cast(input, cd);
    wc = wk_kernel_cast(weight, cd);
    wcc = wc ? wk_contiguous(wc) : NULL;
    if (bias) {
      bc = wk_kernel_cast(bias, cd);
      bcc = bc ? wk_contiguous(bc) : NULL;
    }
    if (!x || !wcc || (bias && !bcc)) {
      s = wk_last_error();
    } else {
      const int64_t *xst2 = wk_tensor_strides(x);
      for (int i = 0; i < 4; i++) {
        int j = i - (4 - xd);
        sx[i] = j < 0 ? 0 : xst2[j];
      }
      im2col_job jb = {(const char *)wk_tensor_data(x), sx[0], sx[1], sx[2], sx[3], sz[1], sz[2], sz[3], kh, kw,
                       st[0], st[1], pd[0], pd[1], dl[0], dl[1], oh, ow, oh * ow, Cg, NULL, 0, 0, 0, 0};
      s = conv_compute(f64, &jb, N, O, groups, (const char *)wk_tensor_data(wcc),
                       bcc ? (const char *)wk_tensor_data(bcc) : NULL, (char *)wk_tensor_data(out));
    }
  }
  wk_release(x);
  wk_release(wc);
  wk_release(wcc);
  wk_release(bc);
  wk_release(bcc);
  if (s == WK_OK && cd != dt) {
    wk_tensor *r = wk_to_dtype(out, dt);
    wk_release(out);
    out = r;
    if (!out) s = wk_last_error();
  }
  return wk_kernel_done(s, out, outs);
}

wk_status cpu_register_conv(void) { return cpu_reg("conv2d", k_conv2d, NULL); }
