/* cpu plugin: backward kernels of 2-D convolution and pooling: conv2d_backward
 * (grad_input by GEMM + col2im, grad_weight by im2col + GEMM, grad_bias by
 * summation; OpenBLAS when configured, else reference loops),
 * max_pool2d_with_indices_backward, avg_pool2d_backward and
 * adaptive_avg_pool2d_backward. Every accumulation has a fixed order, so the
 * results do not depend on the number of threads. f16/bf16 compute in f32. The
 * core's meta functions (core/meta_conv.c) check the arguments. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "simd.h"

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifdef CPU_HAVE_OPENBLAS
#include <cblas.h>
#endif

/* Runs fn over [0, ntasks), in parallel when ntasks * per_task is large. */
static void run_tasks(int64_t ntasks, int64_t per_task, void (*fn)(void *, int64_t, int64_t), void *ctx) {
  if (ntasks <= 0) return;
  if (per_task < 1) per_task = 1;
  if (ntasks == 1 || ntasks * per_task < 32768) {
    fn(ctx, 0, ntasks);
    return;
  }
  int64_t grain = 32768 / per_task;
  wk_parallel_for(0, ntasks, grain < 1 ? 1 : grain, fn, ctx);
}

/* A new zero-filled contiguous tensor. */
static wk_tensor *zeros_of(const int64_t *sizes, int nd, wk_dtype dt) {
  wk_tensor *t = cpu_empty(sizes, nd, dt);
  if (t && wk_tensor_numel(t) > 0) memset(wk_tensor_data(t), 0, (size_t)wk_tensor_numel(t) * wk_dtype_size(dt));
  return t;
}

/* ---- GEMMs (row-major, accumulate into C) ---------------------------------------------- */

typedef struct {
  int64_t M, N, K, lda, ldb, ldc;
  const void *A, *B;
  void *C;
} mm_job;

/* "NT": C[i,j] += sum_k A[i,k] * B[j,k]; one task per element of C, each a
 * dot product in NT_LANES interleaved partial sums (vectorisable, and a fixed
 * order whatever the thread count) added up in double at the end. */
#define NT_LANES 8
#define GEMM_NT(NAME, T)                                                   \
  static void NAME(void *p, int64_t b, int64_t e) {                        \
    const mm_job *g = p;                                                   \
    const int64_t K8 = g->K - g->K % NT_LANES;                             \
    for (int64_t t = b; t < e; t++) {                                      \
      int64_t i = t / g->N, j = t % g->N;                                  \
      const T *a = (const T *)g->A + i * g->lda;                           \
      const T *bb = (const T *)g->B + j * g->ldb;                          \
      T acc[NT_LANES] = {0};                                               \
      for (int64_t k = 0; k < K8; k += NT_LANES)                           \
        for (int l = 0; l < NT_LANES; l++) acc[l] += a[k + l] * bb[k + l]; \
      double s = 0;                                                        \
      for (int l = 0; l < NT_LANES; l++) s += acc[l];                      \
      for (int64_t k = K8; k < g->K; k++) s += (double)a[k] * bb[k];       \
      T *c = (T *)g->C + i * g->ldc + j;                                   \
      *c = (T)(*c + s);                                                    \
    }                                                                      \
  }
/* "TN": C[i,:] += sum_k A[k,i] * B[k,:]; one task per block of TN_JB
 * columns (a block of B stays in cache), k ascending for every element. The
 * row update is a function with restrict parameters and, for full blocks, a
 * fixed count, so that -O2 vectorises it. */
#define TN_JB 128
#define AXPY(NAME, T)                                                               \
  static inline void NAME##_blk(T *restrict c, const T *restrict b, T a) {          \
    for (int64_t j = 0; j < TN_JB; j++) c[j] += a * b[j];                           \
  }                                                                                 \
  static inline void NAME##_n(T *restrict c, const T *restrict b, T a, int64_t n) { \
    for (int64_t j = 0; j < n; j++) c[j] += a * b[j];                               \
  }
AXPY(axpy_f32, float)
AXPY(axpy_f64, double)
#define GEMM_TN(NAME, T, AX)                                               \
  static void NAME(void *p, int64_t b, int64_t e) {                        \
    const mm_job *g = p;                                                   \
    for (int64_t jb = b; jb < e; jb++) {                                   \
      int64_t j0 = jb * TN_JB, j1 = j0 + TN_JB < g->N ? j0 + TN_JB : g->N; \
      for (int64_t i = 0; i < g->M; i++) {                                 \
        T *c = (T *)g->C + i * g->ldc + j0;                                \
        for (int64_t k = 0; k < g->K; k++) {                               \
          const T a = ((const T *)g->A)[k * g->lda + i];                   \
          const T *br = (const T *)g->B + k * g->ldb + j0;                 \
          if (j1 - j0 == TN_JB)                                            \
            AX##_blk(c, br, a);                                            \
          else                                                             \
            AX##_n(c, br, a, j1 - j0);                                     \
        }                                                                  \
      }                                                                    \
    }                                                                      \
  }
GEMM_NT(gemm_nt_f32, float)
GEMM_NT(gemm_nt_f64, double)
GEMM_TN(gemm_tn_f32, float, axpy_f32)
GEMM_TN(gemm_tn_f64, double, axpy_f64)

#ifdef CPU_HAVE_OPENBLAS
static bool blas_ok(const mm_job *g) {
  return g->M <= INT_MAX && g->N <= INT_MAX && g->K <= INT_MAX && g->lda <= INT_MAX && g->ldb <= INT_MAX &&
         g->ldc <= INT_MAX;
}
#endif

/* C[M,N] += A[M,K] * B[N,K]^T. */
static void gemm_nt(bool f64, mm_job *g) {
  if (g->M == 0 || g->N == 0 || g->K == 0) return;
#ifdef CPU_HAVE_OPENBLAS
  if (blas_ok(g)) {
    if (f64)
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)g->M, (int)g->N, (int)g->K, 1.0, g->A, (int)g->lda,
                  g->B, (int)g->ldb, 1.0, g->C, (int)g->ldc);
    else
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)g->M, (int)g->N, (int)g->K, 1.0f, g->A, (int)g->lda,
                  g->B, (int)g->ldb, 1.0f, g->C, (int)g->ldc);
    return;
  }
#endif
  run_tasks(g->M * g->N, g->K, f64 ? gemm_nt_f64 : gemm_nt_f32, g);
}

/* C[M,N] = A[K,M]^T * B[K,N] (C contiguous, ldc == N, overwritten). */
static void gemm_tn_set(bool f64, mm_job *g) {
  if (g->M == 0 || g->N == 0) return;
#ifdef CPU_HAVE_OPENBLAS
  if (blas_ok(g) && g->K > 0 && g->ldc == g->N) {
    if (f64)
      cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)g->M, (int)g->N, (int)g->K, 1.0, g->A, (int)g->lda,
                  g->B, (int)g->ldb, 0.0, g->C, (int)g->ldc);
    else
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)g->M, (int)g->N, (int)g->K, 1.0f, g->A, (int)g->lda,
                  g->B, (int)g->ldb, 0.0f, g->C, (int)g->ldc);
    return;
  }
#endif
  memset(g->C, 0, (size_t)(g->M * g->ldc) * (f64 ? sizeof(double) : sizeof(float)));
  if (g->K == 0) return;
  run_tasks((g->N + TN_JB - 1) / TN_JB, g->M * g->K * TN_JB, f64 ? gemm_tn_f64 : gemm_tn_f32, g);
}

/* ---- conv2d_backward --------------------------------------------------------------------- */

/* Geometry of one convolution; the column matrix of a chunk of nb images of
 * group g is [K = Cg*kh*kw, ldcol = nb*P], row r = (c, ki, kj), column
 * im*P + oy*ow + ox. */
typedef struct {
  const char *x;          /* input (compute dtype, strided) */
  int64_t sN, sC, sH, sW; /* its strides (elements) */
  char *gi;               /* grad_input (compute dtype, contiguous [N, C, H, W]) */
  int64_t C, H, W, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, P, Cg;
  char *col;
  int64_t ldcol, n0, nb, g;
} conv_geo;

/* Output columns [lo, hi) whose input column ox*sw + off lies in [0, W). */
static void col_range(const conv_geo *j, int64_t off, int64_t *lo, int64_t *hi) {
  int64_t l = 0, h = j->ow;
  while (l < h && l * j->sw + off < 0) l++;
  while (h > l && (h - 1) * j->sw + off >= j->W) h--;
  *lo = l;
  *hi = h;
}

/* Rows [b, e) of the column matrix from the input. */
#define IM2COL(NAME, T)                                                                     \
  static void NAME(void *p, int64_t b, int64_t e) {                                         \
    const conv_geo *j = p;                                                                  \
    int64_t kk = j->kh * j->kw;                                                             \
    for (int64_t r = b; r < e; r++) {                                                       \
      int64_t c = r / kk, ki = (r / j->kw) % j->kh, kj = r % j->kw;                         \
      int64_t off = kj * j->dw - j->pw, lo, hi;                                             \
      col_range(j, off, &lo, &hi);                                                          \
      for (int64_t im = 0; im < j->nb; im++) {                                              \
        const T *src = (const T *)j->x + (j->n0 + im) * j->sN + (j->g * j->Cg + c) * j->sC; \
        T *dst = (T *)j->col + r * j->ldcol + im * j->P;                                    \
        for (int64_t oy = 0; oy < j->oh; oy++) {                                            \
          T *d = dst + oy * j->ow;                                                          \
          int64_t iy = oy * j->sh - j->ph + ki * j->dh;                                     \
          if (iy < 0 || iy >= j->H) {                                                       \
            for (int64_t ox = 0; ox < j->ow; ox++) d[ox] = 0;                               \
            continue;                                                                       \
          }                                                                                 \
          const T *s = src + iy * j->sH;                                                    \
          for (int64_t ox = 0; ox < lo; ox++) d[ox] = 0;                                    \
          for (int64_t ox = lo; ox < hi; ox++) d[ox] = s[(ox * j->sw + off) * j->sW];       \
          for (int64_t ox = hi; ox < j->ow; ox++) d[ox] = 0;                                \
        }                                                                                   \
      }                                                                                     \
    }                                                                                       \
  }
IM2COL(im2col_f32, float)
IM2COL(im2col_f64, double)

/* Tasks [b, e) = (image, channel) pairs: adds the channel's rows of the
 * column matrix back into grad_input, in a fixed (ki, kj, oy, ox) order. */
#define COL2IM(NAME, T)                                                                \
  static void NAME(void *p, int64_t b, int64_t e) {                                    \
    const conv_geo *j = p;                                                             \
    for (int64_t t = b; t < e; t++) {                                                  \
      int64_t im = t / j->Cg, c = t % j->Cg;                                           \
      T *dst = (T *)j->gi + ((j->n0 + im) * j->C + j->g * j->Cg + c) * j->H * j->W;    \
      for (int64_t ki = 0; ki < j->kh; ki++)                                           \
        for (int64_t kj = 0; kj < j->kw; kj++) {                                       \
          int64_t r = (c * j->kh + ki) * j->kw + kj, off = kj * j->dw - j->pw, lo, hi; \
          col_range(j, off, &lo, &hi);                                                 \
          const T *src = (const T *)j->col + r * j->ldcol + im * j->P;                 \
          for (int64_t oy = 0; oy < j->oh; oy++) {                                     \
            int64_t iy = oy * j->sh - j->ph + ki * j->dh;                              \
            if (iy < 0 || iy >= j->H) continue;                                        \
            T *d = dst + iy * j->W;                                                    \
            const T *s = src + oy * j->ow;                                             \
            if (j->sw == 1)                                                            \
              for (int64_t ox = lo; ox < hi; ox++) d[ox + off] += s[ox];               \
            else                                                                       \
              for (int64_t ox = lo; ox < hi; ox++) d[ox * j->sw + off] += s[ox];       \
          }                                                                            \
        }                                                                              \
    }                                                                                  \
  }
COL2IM(col2im_f32, float)
COL2IM(col2im_f64, double)

/* grad_bias[o] = sum over images and positions of grad_output[n, o, :]. */
typedef struct {
  const void *g;
  void *gb;
  int64_t N, O, P;
} bias_job;

/* Eight double partial sums per channel, added up in a fixed order at the
 * end: one accumulator made every element wait for the previous add (4
 * cycles each: 2 ms a CNN step for the LeNet's first conv, [64, 32, 28, 28]);
 * independent lanes vectorise. The order depends on the shapes only. */
#define BIAS_SUM(NAME, T)                                                   \
  static void NAME(void *p, int64_t b, int64_t e) {                         \
    const bias_job *j = p;                                                  \
    for (int64_t o = b; o < e; o++) {                                       \
      double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0}, s = 0;                      \
      for (int64_t n = 0; n < j->N; n++) {                                  \
        const T *r = (const T *)j->g + (n * j->O + o) * j->P;               \
        int64_t i = 0;                                                      \
        for (; i + 8 <= j->P; i += 8)                                       \
          for (int k = 0; k < 8; k++) acc[k] += (double)r[i + k];           \
        for (; i < j->P; i++) s += r[i];                                    \
      }                                                                     \
      ((T *)j->gb)[o] = (T)(s + (((acc[0] + acc[1]) + (acc[2] + acc[3])) +  \
                                 ((acc[4] + acc[5]) + (acc[6] + acc[7])))); \
    }                                                                       \
  }
BIAS_SUM(bias_sum_f32, float)
BIAS_SUM(bias_sum_f64, double)

/* Images of a chunk share one partial grad_weight; the chunks depend on the
 * shapes only (never on the thread count) and their partials are added up in
 * chunk order, so results do not depend on the number of threads. */
#define CONV_MAX_CHUNKS 16
#define CONV_PARTIAL_BYTES ((int64_t)64 << 20)

typedef struct {
  bool f64;
  const conv_geo *geo;
  int64_t N, O, G, K, per_chunk;
  const char *w, *g;
  char *gw;       /* partials: [nchunks, O, K] (the first chunk writes gw itself) */
  bool oom;
} conv_bwd_job;

/* Chunks [b, e): for each image, grad_input by one GEMM per group into a
 * private column buffer and col2im (images are independent), and grad_weight
 * accumulated into the chunk's partial. */
static void conv_bwd_chunks(void *p, int64_t b, int64_t e) {
  conv_bwd_job *c = p;
  size_t es = c->f64 ? sizeof(double) : sizeof(float);
  conv_geo j = *c->geo;
  int64_t P = j.P, K = c->K, O = c->O, Og = O / c->G;
  char *col = wk_malloc((size_t)(K * P) * es);
  if (!col) {
    c->oom = true;
    return;
  }
  void (*im2col)(void *, int64_t, int64_t) = c->f64 ? im2col_f64 : im2col_f32;
  void (*col2im)(void *, int64_t, int64_t) = c->f64 ? col2im_f64 : col2im_f32;
  for (int64_t ch = b; ch < e; ch++) {
    int64_t n0 = ch * c->per_chunk, n1 = n0 + c->per_chunk < c->N ? n0 + c->per_chunk : c->N;
    char *gw = c->gw ? c->gw + (size_t)(ch * O * K) * es : NULL;
    if (gw) memset(gw, 0, (size_t)(O * K) * es);
    for (int64_t n = n0; n < n1; n++) {
      j.col = col;
      j.ldcol = P;
      j.n0 = n;
      j.nb = 1;
      for (int64_t grp = 0; grp < c->G; grp++) {
        j.g = grp;
        const char *gm = c->g + (size_t)((n * O + grp * Og) * P) * es; /* [Og, P] */
        if (gw) {
          im2col(&j, 0, K);
          mm_job mj = {Og, K, P, P, P, K, gm, col, gw + (size_t)(grp * Og * K) * es};
          gemm_nt(c->f64, &mj);
        }
        if (j.gi) {
          mm_job mj = {K, P, Og, K, P, P, c->w + (size_t)(grp * Og * K) * es, gm, col};
          gemm_tn_set(c->f64, &mj);
          col2im(&j, 0, j.Cg);
        }
      }
    }
  }
  wk_free(col);
}

/* gw[i] = sum over chunks of the partials, in chunk order. */
typedef struct {
  bool f64;
  const char *parts;
  char *gw;
  int64_t n, nchunks;
} psum_job;

static void psum_range(void *p, int64_t b, int64_t e) {
  const psum_job *j = p;
  if (j->f64) {
    const double *s = (const double *)j->parts;
    double *d = (double *)j->gw;
    for (int64_t c = 0; c < j->nchunks; c++)
      for (int64_t i = b; i < e; i++) d[i] = c ? d[i] + s[c * j->n + i] : s[i];
  } else {
    const float *s = (const float *)j->parts;
    float *d = (float *)j->gw;
    for (int64_t c = 0; c < j->nchunks; c++)
      for (int64_t i = b; i < e; i++) d[i] = c ? d[i] + s[c * j->n + i] : s[i];
  }
}

/* The GEMM part: grad_weight (gw, [O, K], may be NULL) and grad_input (j->gi,
 * zero-filled, may be NULL) from grad_output g ([N, O, P], contiguous) and
 * weight w. */
static wk_status conv_bwd_compute(bool f64, conv_geo *j, int64_t N, int64_t O, int64_t G, const char *w, const char *g,
                                  char *gw) {
  size_t es = f64 ? sizeof(double) : sizeof(float);
  int64_t P = j->P, K = j->Cg * j->kh * j->kw;
  if (K == 0 || N == 0 || O == 0 || (!gw && !j->gi)) return WK_OK;
  int64_t wbytes = O * K * (int64_t)es, nchunks = N < CONV_MAX_CHUNKS ? N : CONV_MAX_CHUNKS;
  if (gw && nchunks > 1 && nchunks * wbytes > CONV_PARTIAL_BYTES) nchunks = CONV_PARTIAL_BYTES / wbytes;
  if (nchunks < 1) nchunks = 1;
  int64_t per_chunk = (N + nchunks - 1) / nchunks;
  nchunks = (N + per_chunk - 1) / per_chunk;
  char *parts = gw && nchunks > 1 ? wk_malloc((size_t)(nchunks * O * K) * es) : NULL;
  if (gw && nchunks > 1 && !parts) return wk_error(WK_ERR_NO_MEMORY, "conv2d_backward(): out of memory for partial sums");
  conv_bwd_job c = {f64, j, N, O, G, K, per_chunk, w, g, gw ? (parts ? parts : gw) : NULL, false};
  int64_t per = per_chunk * O * P * (K + 1);
  if (nchunks > 1 && !wk_in_parallel() && nchunks * per >= 65536)
    wk_parallel_for(0, nchunks, 1, conv_bwd_chunks, &c);
  else
    conv_bwd_chunks(&c, 0, nchunks);
  if (!c.oom && parts) {
    psum_job pj = {f64, parts, gw, O * K, nchunks};
    run_tasks(O * K, nchunks, psum_range, &pj);
  }
  wk_free(parts);
  if (c.oom) return wk_error(WK_ERR_NO_MEMORY, "conv2d_backward(): out of memory for the column buffer");
  return WK_OK;
}

static wk_status k_conv2d_backward(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  /* The arguments were checked by the op's meta function. */
  wk_tensor *go = WK_ARG_T(0), *input = WK_ARG_T(1), *weight = WK_ARG_T(2);
  /* int[2] arguments arrive normalised to two values */
  const int64_t *st = args[3].u.ints, *pd = args[4].u.ints, *dl = args[5].u.ints;
  int64_t groups = WK_ARG_I(6);
  bool mask[3] = {args[7].u.ints[0] != 0, args[7].u.ints[1] != 0, args[7].u.ints[2] != 0};
  int xd = wk_tensor_dim(input);
  const int64_t *xs = wk_tensor_sizes(input), *ws = wk_tensor_sizes(weight), *gs = wk_tensor_sizes(go);
  int64_t sz[4];
  for (int i = 0; i < 4; i++) sz[i] = i < 4 - xd ? 1 : xs[i - (4 - xd)];
  int64_t O = ws[0], Cg = ws[1], kh = ws[2], kw = ws[3];
  int64_t oh = gs[xd - 2], ow = gs[xd - 1], N = sz[0]; /* grad_output has the forward's output shape */
  wk_dtype dt = wk_tensor_dtype(input);
  wk_status s = WK_OK;
  wk_dtype cd = wk_compute_dtype(dt);
  bool f64 = cd == WK_F64;
  wk_tensor *gi = NULL, *gw = NULL, *gb = NULL, *x = NULL, *g = NULL, *w = NULL;
  if ((mask[0] && !(gi = zeros_of(xs, xd, cd))) || (mask[1] && !(gw = zeros_of(ws, 4, cd))) ||
      (mask[2] && !(gb = zeros_of(&O, 1, cd))))
    goto fail;
  if (wk_tensor_numel(go) > 0 && (mask[0] || mask[1] || mask[2])) {
    if (!(g = cpu_prep(go, cd))) goto fail;
    if (mask[1] && !(x = wk_kernel_cast(input, cd))) goto fail;
    if (mask[0] && !(w = cpu_prep(weight, cd))) goto fail;
    if (gb) {
      bias_job bj = {wk_tensor_data(g), wk_tensor_data(gb), N, O, oh * ow};
      run_tasks(O, N * oh * ow, f64 ? bias_sum_f64 : bias_sum_f32, &bj);
    }
    if (gi || gw) {
      int64_t sx[4] = {0, 0, 0, 0};
      if (x)
        for (int i = 0; i < 4; i++) sx[i] = i - (4 - xd) < 0 ? 0 : wk_tensor_strides(x)[i - (4 - xd)];
      conv_geo j = {x ? (const char *)wk_tensor_data(x) : NULL,
                    sx[0],
                    sx[1],
                    sx[2],
                    sx[3],
                    gi ? (char *)wk_tensor_data(gi) : NULL,
                    sz[1],
                    sz[2],
                    sz[3],
                    kh,
                    kw,
                    st[0],
                    st[1],
                    pd[0],
                    pd[1],
                    dl[0],
                    dl[1],
                    oh,
                    ow,
                    oh * ow,
                    Cg,
                    NULL,
                    0,
                    0,
                    0,
                    0};
      s = conv_bwd_compute(f64, &j, N, O, groups, w ? (const char *)wk_tensor_data(w) : NULL,
                           (const char *)wk_tensor_data(g), gw ? (char *)wk_tensor_data(gw) : NULL);
      if (s) goto fail;
    }
  }
  wk_release(x);
  wk_release(g);
  wk_release(w);
  x = g = w = NULL;
  if ((gi && !(gi = wk_cast_own(gi, dt))) || (gw && !(gw = wk_cast_own(gw, dt))) || (gb && !(gb = wk_cast_own(gb, dt))))
    goto fail;
  wk_kernel_put_opt(outs, (wk_tensor *[]){gi, gw, gb}, 3);
  return WK_OK;
fail:
  if (!s) s = wk_last_error();
  wk_release(gi);
  wk_release(gw);
  wk_release(gb);
  wk_release(x);
  wk_release(g);
  wk_release(w);
  return s;
}

/* ---- pooling ------------------------------------------------------------------------------ */

typedef struct {
  const char *g;      /* grad_output, compute dtype, contiguous [planes, oh, ow] */
  const int64_t *ind; /* max pool: indices, contiguous like g */
  char *gi;           /* grad_input, compute dtype, contiguous [planes, H, W] */
  int64_t H, W, oh, ow, kh, kw, sh, sw, ph, pw;
  bool count_include_pad, has_div;
  int64_t divisor;
  bool zeroed_by_tasks; /* grad_input left uninitialised: fn writes every element */
  bool bad_index;       /* max pool: some index was outside its plane */
} pool_job;

/* Each task zeroes its own planes of grad_input (left uninitialised by
 * pool_bwd_run: zeroing here runs in parallel and leaves the plane in cache
 * for the scatter) and checks each index as it goes; a plane with an index
 * outside it is left alone and flags the job (the caller then finds the
 * first such index for the message). */
#define MAXPOOL_BWD(NAME, T)                                                      \
  static void NAME(void *p, int64_t b, int64_t e) {                               \
    pool_job *j = p;                                                              \
    const int64_t P = j->oh * j->ow, HW = j->H * j->W;                            \
    for (int64_t plane = b; plane < e; plane++) {                                 \
      const T *g = (const T *)j->g + plane * P;                                   \
      const int64_t *ind = j->ind + plane * P;                                    \
      T *gi = (T *)j->gi + plane * HW;                                            \
      memset(gi, 0, sizeof(T) * (size_t)HW);                                      \
      for (int64_t i = 0; i < P; i++) {                                           \
        int64_t k = ind[i];                                                       \
        if ((uint64_t)k >= (uint64_t)HW) {                                        \
          __atomic_store_n(&j->bad_index, true, __ATOMIC_RELAXED);                \
          break;                                                                  \
        }                                                                         \
        gi[k] += g[i];                                                            \
      }                                                                           \
    }                                                                             \
  }
MAXPOOL_BWD(maxpool_bwd_f32, float)
MAXPOOL_BWD(maxpool_bwd_f64, double)

/* Each output's gradient, divided as in the forward, goes to its window
 * clipped to the image; planes are independent. */
#define AVGPOOL_BWD(NAME, T)                                                                           \
  static void NAME(void *p, int64_t b, int64_t e) {                                                    \
    const pool_job *j = p;                                                                             \
    for (int64_t plane = b; plane < e; plane++) {                                                      \
      const T *g = (const T *)j->g + plane * j->oh * j->ow;                                            \
      T *gi = (T *)j->gi + plane * j->H * j->W;                                                        \
      for (int64_t oy = 0; oy < j->oh; oy++)                                                           \
        for (int64_t ox = 0; ox < j->ow; ox++) {                                                       \
          int64_t h0 = oy * j->sh - j->ph, w0 = ox * j->sw - j->pw;                                    \
          int64_t h1 = h0 + j->kh, w1 = w0 + j->kw;                                                    \
          if (h1 > j->H + j->ph) h1 = j->H + j->ph;                                                    \
          if (w1 > j->W + j->pw) w1 = j->W + j->pw;                                                    \
          int64_t pool = (h1 - h0) * (w1 - w0);                                                        \
          if (h0 < 0) h0 = 0;                                                                          \
          if (w0 < 0) w0 = 0;                                                                          \
          if (h1 > j->H) h1 = j->H;                                                                    \
          if (w1 > j->W) w1 = j->W;                                                                    \
          if (h0 >= h1 || w0 >= w1) continue;                                                          \
          int64_t div = j->has_div ? j->divisor : j->count_include_pad ? pool : (h1 - h0) * (w1 - w0); \
          T d = g[oy * j->ow + ox] / (T)div;                                                           \
          for (int64_t y = h0; y < h1; y++)                                                            \
            for (int64_t x = w0; x < w1; x++) gi[y * j->W + x] += d;                                   \
        }                                                                                              \
    }                                                                                                  \
  }
AVGPOOL_BWD(avgpool_bwd_f32, float)
AVGPOOL_BWD(avgpool_bwd_f64, double)
AVGPOOL_BWD(avgpool_bwd_i64, int64_t)

/* Windows [floor(i*in/out), ceil((i+1)*in/out)), as in the forward. */
#define ADAPTIVE_BWD(NAME, T)                                                         \
  static void NAME(void *p, int64_t b, int64_t e) {                                   \
    const pool_job *j = p;                                                            \
    for (int64_t plane = b; plane < e; plane++) {                                     \
      const T *g = (const T *)j->g + plane * j->oh * j->ow;                           \
      T *gi = (T *)j->gi + plane * j->H * j->W;                                       \
      for (int64_t oy = 0; oy < j->oh; oy++) {                                        \
        int64_t h0 = oy * j->H / j->oh, h1 = ((oy + 1) * j->H + j->oh - 1) / j->oh;   \
        for (int64_t ox = 0; ox < j->ow; ox++) {                                      \
          int64_t w0 = ox * j->W / j->ow, w1 = ((ox + 1) * j->W + j->ow - 1) / j->ow; \
          T d = g[oy * j->ow + ox] / (T)((h1 - h0) * (w1 - w0));                      \
          for (int64_t y = h0; y < h1; y++)                                           \
            for (int64_t x = w0; x < w1; x++) gi[y * j->W + x] += d;                  \
        }                                                                             \
      }                                                                               \
    }                                                                                 \
  }
ADAPTIVE_BWD(adaptive_bwd_f32, float)
ADAPTIVE_BWD(adaptive_bwd_f64, double)

/* Output 1x1 (a global mean's backward): every element of a plane gets the
 * plane's gradient over H*W; grad_input is written whole, never zeroed
 * first. "+ 0" gives what adding into a zeroed buffer gave (-0 becomes +0). */
static void adaptive_bwd_1x1_f32(void *p, int64_t b, int64_t e) {
  const pool_job *j = p;
  const int64_t HW = j->H * j->W;
  for (int64_t plane = b; plane < e; plane++) {
    float d = ((const float *)j->g)[plane] / (float)HW + 0.0f;
    cpu_simd->fill((float *)j->gi + plane * HW, d, HW);
  }
}

/* Shared tail of the pooling backward kernels: runs fn over the planes of
 * grad_output (converted to cd) into a zeroed grad_input of self's shape in
 * cd, delivered in self's dtype. ind: indices (max pool) or NULL. */
static wk_status pool_bwd_run(pool_job *j, wk_tensor *go, wk_tensor *self, wk_dtype cd, wk_tensor *ind,
                              int64_t per_plane, void (*fn)(void *, int64_t, int64_t), wk_value *outs) {
  int nd = wk_tensor_dim(self);
  const int64_t *sz = wk_tensor_sizes(self);
  int64_t planes = 1;
  for (int i = 0; i < nd - 2; i++) planes *= sz[i];
  j->H = sz[nd - 2];
  j->W = sz[nd - 1];
  wk_tensor *gi = j->zeroed_by_tasks ? cpu_empty(sz, nd, cd) : zeros_of(sz, nd, cd), *g = NULL;
  if (!gi) return wk_last_error();
  if (planes > 0) {
    if (!(g = cpu_prep(go, cd))) goto fail;
    j->g = wk_tensor_data(g);
    j->ind = ind ? wk_tensor_data(ind) : NULL;
    j->gi = wk_tensor_data(gi);
    run_tasks(planes, per_plane, fn, j);
    wk_release(g);
    if (j->bad_index) { /* the first index outside its plane, for the message */
      const char *op = "max_pool2d_with_indices_backward";
      int64_t HW = j->H * j->W, n = planes * j->oh * j->ow, bad = 0;
      for (int64_t i = 0; i < n; i++)
        if (j->ind[i] < 0 || j->ind[i] >= HW) {
          bad = j->ind[i];
          break;
        }
      wk_release(gi);
      return wk_error(WK_ERR_INDEX, "%s(): Found an invalid max index: %lld (output volumes are of size %lldx%lld)", op,
                      (long long)bad, (long long)j->H, (long long)j->W);
    }
  }
  if (!(gi = wk_cast_own(gi, wk_tensor_dtype(self)))) return wk_last_error();
  outs[0] = WK_VT(gi);
  return WK_OK;
fail:
  wk_release(gi);
  return wk_last_error();
}

/* The pooled size [oh, ow]: grad_output's last two sizes (the meta function
 * checked them against the forward's output). */
static void grad_hw(wk_tensor *go, int64_t o[2]) {
  int nd = wk_tensor_dim(go);
  o[0] = wk_tensor_size(go, nd - 2);
  o[1] = wk_tensor_size(go, nd - 1);
}

static wk_status k_max_pool2d_backward(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "max_pool2d_with_indices_backward";
  wk_tensor *go = WK_ARG_T(0), *self = WK_ARG_T(1), *indices = WK_ARG_T(7);
  int nhwc = cpu_maxpool_nhwc_backward(go, self, indices, outs); /* channels_last f32: pool_nhwc.c */
  if (nhwc) return nhwc < 0 ? wk_last_error() : WK_OK;
  int64_t o[2];
  grad_hw(go, o);
  wk_tensor *ind = cpu_prep(indices, WK_I64);
  if (!ind) return wk_last_error();
  int nd = wk_tensor_dim(self);
  int64_t HW = wk_tensor_size(self, nd - 2) * wk_tensor_size(self, nd - 1);
  wk_dtype cd = wk_compute_dtype(wk_tensor_dtype(self));
  pool_job j = {0};
  j.oh = o[0];
  j.ow = o[1];
  /* the data decides: an index outside its plane fails the call (checked by
   * the tasks as they scatter, reported by pool_bwd_run) */
  j.zeroed_by_tasks = true;
  (void)op;
  wk_status st =
      pool_bwd_run(&j, go, self, cd, ind, o[0] * o[1] + HW, cd == WK_F64 ? maxpool_bwd_f64 : maxpool_bwd_f32, outs);
  wk_release(ind);
  return st;
}

static wk_status k_avg_pool2d_backward(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *go = WK_ARG_T(0), *self = WK_ARG_T(1);
  bool include_pad = WK_ARG_B(6), has_div = !WK_ARG_IS_NONE(7);
  int64_t k[2], s[2], p[2], o[2];
  cpu_pool_params(&args[2], k, s, p);
  grad_hw(go, o);
  wk_dtype cd = wk_compute_dtype(wk_tensor_dtype(self));
  pool_job j = {0};
  j.oh = o[0], j.ow = o[1], j.kh = k[0], j.kw = k[1], j.sh = s[0], j.sw = s[1], j.ph = p[0], j.pw = p[1];
  j.count_include_pad = include_pad;
  j.has_div = has_div;
  j.divisor = has_div ? WK_ARG_I(7) : 0;
  return pool_bwd_run(&j, go, self, cd, NULL, o[0] * o[1] * k[0] * k[1],
                      cd == WK_F32   ? avgpool_bwd_f32
                      : cd == WK_F64 ? avgpool_bwd_f64
                                     : avgpool_bwd_i64,
                      outs);
}

static wk_status k_adaptive_avg_pool2d_backward(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *go = WK_ARG_T(0), *self = WK_ARG_T(1);
  int nd = wk_tensor_dim(self);
  int64_t o[2];
  grad_hw(go, o);
  if (o[0] == 0 || o[1] == 0) { /* no outputs: the gradient is zero */
    wk_tensor *gi = zeros_of(wk_tensor_sizes(self), nd, wk_tensor_dtype(self));
    return wk_kernel_out1(outs, gi);
  }
  wk_dtype cd = wk_compute_dtype(wk_tensor_dtype(self));
  pool_job j = {0};
  j.oh = o[0];
  j.ow = o[1];
  int64_t H = wk_tensor_size(self, nd - 2), W = wk_tensor_size(self, nd - 1);
  int64_t win = ((H + o[0] - 1) / o[0] + 1) * ((W + o[1] - 1) / o[1] + 1);
  if (cd == WK_F32 && o[0] == 1 && o[1] == 1) {
    j.zeroed_by_tasks = true;
    return pool_bwd_run(&j, go, self, cd, NULL, H * W, adaptive_bwd_1x1_f32, outs);
  }
  return pool_bwd_run(&j, go, self, cd, NULL, o[0] * o[1] * win + H * W,
                      cd == WK_F32 ? adaptive_bwd_f32 : adaptive_bwd_f64, outs);
}

wk_status cpu_register_conv_backward(void) {
  wk_status s = cpu_reg("conv2d_backward", k_conv2d_backward, NULL);
  if (!s) s = cpu_reg("max_pool2d_with_indices_backward", k_max_pool2d_backward, NULL);
  if (!s) s = cpu_reg("avg_pool2d_backward", k_avg_pool2d_backward, NULL);
  if (!s) s = cpu_reg("adaptive_avg_pool2d_backward", k_adaptive_avg_pool2d_backward, NULL);
  return s;
}
