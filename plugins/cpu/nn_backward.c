/* cpu plugin: backward kernels of the neural-network ops: batch_norm_backward,
 * layer_norm_backward, embedding_dense_backward, softmax_backward_data,
 * log_softmax_backward_data and pad_backward. f16/bf16 compute in f32; sums
 * use double accumulators in a fixed order, so results do not depend on the
 * number of threads. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "simd.h"

/* ---- shared helpers ------------------------------------------------------------------ */

#define NN_GRAIN 32768

typedef void (*range_fn)(void *ctx, int64_t b, int64_t e);

/* A new zero-filled contiguous tensor. */
static wk_tensor *zeros_of(const int64_t *sizes, int nd, wk_dtype dt) {
  wk_tensor *t = cpu_empty(sizes, nd, dt);
  if (t && wk_tensor_numel(t) > 0) memset(wk_tensor_data(t), 0, (size_t)wk_tensor_numel(t) * wk_dtype_size(dt));
  return t;
}

/* ---- softmax_backward_data / log_softmax_backward_data ------------------------------------ */
/* Tensors viewed as [outer, n, inner] (contiguous); a task is one outer index
 * and a block of up to SMX_B inner columns. */
#define SMX_B 64
typedef struct {
  const void *g, *y;
  void *gi;
  int64_t n, inner, nblk;
  bool log;
} smxb_job;

#define DEF_SMXB(T, SUF, EXP)                                                                                         \
  static void smxb_##SUF(void *p, int64_t b, int64_t e) {                                                             \
    const smxb_job *j = p;                                                                                            \
    const int64_t n = j->n, inner = j->inner;                                                                         \
    for (int64_t t = b; t < e; t++) {                                                                                 \
      int64_t o = t / j->nblk, i0 = (t % j->nblk) * SMX_B;                                                            \
      int64_t w = inner - i0 < SMX_B ? inner - i0 : SMX_B;                                                            \
      const T *g = (const T *)j->g + o * n * inner + i0;                                                              \
      const T *y = (const T *)j->y + o * n * inner + i0;                                                              \
      T *gi = (T *)j->gi + o * n * inner + i0;                                                                        \
      double sum[SMX_B];                                                                                              \
      for (int64_t i = 0; i < w; i++) sum[i] = 0;                                                                     \
      if (j->log) {                                                                                                   \
        for (int64_t k = 0; k < n; k++)                                                                               \
          for (int64_t i = 0; i < w; i++) sum[i] += g[k * inner + i];                                                 \
        for (int64_t k = 0; k < n; k++)                                                                               \
          for (int64_t i = 0; i < w; i++) gi[k * inner + i] = (T)(g[k * inner + i] - EXP(y[k * inner + i]) * sum[i]); \
      } else {                                                                                                        \
        for (int64_t k = 0; k < n; k++)                                                                               \
          for (int64_t i = 0; i < w; i++) sum[i] += (double)g[k * inner + i] * y[k * inner + i];                      \
        for (int64_t k = 0; k < n; k++)                                                                               \
          for (int64_t i = 0; i < w; i++) gi[k * inner + i] = (T)(y[k * inner + i] * (g[k * inner + i] - sum[i]));    \
      }                                                                                                               \
    }                                                                                                                 \
  }
DEF_SMXB(float, f32, expf)
DEF_SMXB(double, f64, exp)

static wk_status k_softmax_backward(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *go = WK_ARG_T(0), *out = WK_ARG_T(1);
  wk_dtype idt = args[3].u.dtype; /* dtypes, shapes and dim checked by the meta function */
  int64_t dim = WK_ARG_I(2);
  int d = (int)(dim < 0 ? dim + (wk_tensor_dim(out) > 0 ? wk_tensor_dim(out) : 1) : dim);
  wk_dtype cd = wk_tensor_dtype(go) == WK_F64 || wk_tensor_dtype(out) == WK_F64 ? WK_F64 : WK_F32;
  int nd = wk_tensor_dim(out);
  const int64_t *sz = wk_tensor_sizes(out);
  wk_tensor *g = cpu_prep(go, cd), *y = g ? cpu_prep(out, cd) : NULL, *gi = y ? cpu_empty(sz, nd, cd) : NULL;
  if (!gi) goto fail;
  if (wk_tensor_numel(gi) > 0) {
    int64_t outer = 1, inner = 1, n = nd ? sz[d] : 1;
    for (int i = 0; i < d; i++) outer *= sz[i];
    for (int i = d + 1; i < nd; i++) inner *= sz[i];
    smxb_job j = {wk_tensor_data(g),           wk_tensor_data(y), wk_tensor_data(gi), n, inner,
                  (inner + SMX_B - 1) / SMX_B, ctx->user != NULL};
    cpu_par(outer * j.nblk, n * (inner < SMX_B ? inner : SMX_B), cd == WK_F64 ? smxb_f64 : smxb_f32, &j);
  }
  wk_release(g);
  wk_release(y);
  g = y = NULL;
  if (!(gi = wk_cast_own(gi, idt))) goto fail;
  outs[0] = WK_VT(gi);
  return WK_OK;
fail:
  wk_release(g);
  wk_release(y);
  wk_release(gi);
  return wk_last_error();
}

/* ---- batch_norm_backward ----------------------------------------------------------------- */
/* Contiguous input and grad viewed as [N, C, S]. */
typedef struct {
  const void *x, *g;
  void *gi;
  int64_t N, C, S;
  bool train;
  const double *mean, *invstd, *w;
  double *sum_g, *dotp; /* per channel */
} bnb_job;

#define DEF_BNB(T, SUF)                                                                                      \
  static void bnb_sums_##SUF(void *p, int64_t b, int64_t e) {                                                \
    const bnb_job *j = p;                                                                                    \
    const int64_t N = j->N, C = j->C, S = j->S;                                                              \
    if (sizeof(T) == sizeof(float)) { /* simd.h: 16 lanes, this CPU's width */                               \
      cpu_simd->bn_bwd_sums((const float *)j->x, (const float *)j->g, N, C, S, b, e, j->mean, j->sum_g,      \
                            j->dotp);                                                                        \
      return;                                                                                                \
    }                                                                                                        \
    for (int64_t c = b; c < e; c++) {                                                                        \
      /* four partial sums each: the adds overlap instead of waiting on one chain */                         \
      double sg4[4] = {0, 0, 0, 0}, dp4[4] = {0, 0, 0, 0}, m = j->mean[c];                                   \
      for (int64_t n = 0; n < N; n++) {                                                                      \
        const T *x = (const T *)j->x + (n * C + c) * S, *g = (const T *)j->g + (n * C + c) * S;              \
        int64_t i = 0;                                                                                       \
        for (; i + 4 <= S; i += 4)                                                                           \
          for (int k = 0; k < 4; k++) {                                                                      \
            sg4[k] += g[i + k];                                                                              \
            dp4[k] += ((double)x[i + k] - m) * g[i + k];                                                     \
          }                                                                                                  \
        for (; i < S; i++) {                                                                                 \
          sg4[0] += g[i];                                                                                    \
          dp4[0] += ((double)x[i] - m) * g[i];                                                               \
        }                                                                                                    \
      }                                                                                                      \
      j->sum_g[c] = (sg4[0] + sg4[1]) + (sg4[2] + sg4[3]);                                                   \
      j->dotp[c] = (dp4[0] + dp4[1]) + (dp4[2] + dp4[3]);                                                    \
    }                                                                                                        \
  }                                                                                                          \
  static void bnb_input_##SUF(void *p, int64_t b, int64_t e) {                                               \
    const bnb_job *j = p;                                                                                    \
    const int64_t C = j->C, S = j->S;                                                                        \
    const double cnt = (double)(j->N * S);                                                                   \
    for (int64_t r = b; r < e; r++) {                                                                        \
      int64_t c = r % C;                                                                                     \
      const T *g = (const T *)j->g + r * S;                                                                  \
      T *gi = (T *)j->gi + r * S;                                                                            \
      double is = j->invstd[c], w = j->w[c];                                                                 \
      if (j->train) {                                                                                        \
        const T *x = (const T *)j->x + r * S;                                                                \
        double m = j->mean[c], k = j->dotp[c] * is * is / cnt, gm = j->sum_g[c] / cnt;                       \
        if (sizeof(T) == sizeof(float)) {                                                                    \
          cpu_simd->bn_bwd_input((float *)gi, (const float *)g, (const float *)x, m, k, gm, is, w, S);      \
          continue;                                                                                          \
        }                                                                                                    \
        for (int64_t i = 0; i < S; i++) gi[i] = (T)(((double)g[i] - ((double)x[i] - m) * k - gm) * is * w);  \
      } else if (sizeof(T) == sizeof(float)) {                                                               \
        cpu_simd->bn_bwd_input_eval((float *)gi, (const float *)g, is, w, S);                               \
      } else {                                                                                               \
        for (int64_t i = 0; i < S; i++) gi[i] = (T)((double)g[i] * is * w);                                  \
      }                                                                                                      \
    }                                                                                                        \
  }
DEF_BNB(float, f32)
DEF_BNB(double, f64)

/* f32 with S < 16 elements per channel plane: rows of K = C * S as in
 * batch_norm's bns_job (nn.c); the sums add each column over the images in
 * order, then a channel's columns in order. */
typedef struct {
  const float *x, *g;
  float *gi;
  int64_t N, S, K, KB;
  const double *mean;   /* [C] */
  double *sum_g, *dotp; /* [C] */
  double *mu, *sg, *dp; /* [K] scratch */
  const double *p[5];   /* [K] each: m, k, gm, is, w per column (simd.h row_bwd_input) */
  bool train;
} bnbs_job;

static void bnbs_sums(void *p, int64_t b, int64_t e) {
  const bnbs_job *j = p;
  const int64_t S = j->S;
  for (int64_t t = b; t < e; t++) {
    int64_t k0 = t * j->KB, kn = j->K - k0 < j->KB ? j->K - k0 : j->KB;
    for (int64_t k = k0; k < k0 + kn; k++) j->mu[k] = j->mean[k / S];
    cpu_simd->col_bwd_sums(j->x + k0, j->g + k0, j->N, j->K, kn, j->mu + k0, j->sg + k0, j->dp + k0);
    for (int64_t c = k0 / S; c < (k0 + kn) / S; c++) {
      double a = 0, d = 0;
      for (int64_t q = 0; q < S; q++) {
        a += j->sg[c * S + q];
        d += j->dp[c * S + q];
      }
      j->sum_g[c] = a;
      j->dotp[c] = d;
    }
  }
}

static void bnbs_input(void *p, int64_t b, int64_t e) {
  const bnbs_job *j = p;
  const int64_t K = j->K;
  for (int64_t n = b; n < e; n++) {
    if (j->train)
      cpu_simd->row_bwd_input(j->gi + n * K, j->g + n * K, j->x + n * K, j->p, K);
    else
      cpu_simd->row_bwd_input_eval(j->gi + n * K, j->g + n * K, j->p[3], j->p[4], K);
  }
}

static wk_status k_batch_norm_backward(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "batch_norm_backward";
  wk_tensor *go = WK_ARG_T(0), *input = WK_ARG_T(1), *weight = WK_ARG_OPT_T(2);
  wk_tensor *rmean = WK_ARG_OPT_T(3), *rvar = WK_ARG_OPT_T(4), *smean = WK_ARG_OPT_T(5), *sinv = WK_ARG_OPT_T(6);
  bool train = WK_ARG_B(7), mask[3];
  double eps = WK_ARG_F(8);
  wk_status s;
  wk_output_mask(&args[9], mask); /* arguments checked by the meta function */
  int nd = wk_tensor_dim(input);
  const int64_t *sz = wk_tensor_sizes(input);
  int64_t N = sz[0], C = sz[1], S = 1;
  for (int i = 2; i < nd; i++) S *= sz[i];
  wk_dtype dt = wk_tensor_dtype(input), cd = cpu_fcompute(dt);
  wk_dtype pdt = wk_kernel_meta(ctx, 1)->dtype;
  wk_tensor *gi = NULL, *gw = NULL, *gb = NULL, *x = NULL, *g = NULL;
  void *sbuf = NULL; /* the S < 16 path's scratch (bnbs_job) */
  double *buf = wk_calloc((size_t)(5 * C + 1), sizeof(double));
  if (!buf) return wk_error(WK_ERR_NO_MEMORY, "%s(): out of memory", op);
  double *mean = buf, *invstd = buf + C, *w = buf + 2 * C, *sum_g = buf + 3 * C, *dotp = buf + 4 * C;
  s = WK_OK;
  for (int64_t c = 0; c < C; c++) w[c] = 1;
  if (weight) s = wk_tensor_to_f64(weight, w, C);
  if (!s) s = wk_tensor_to_f64(train ? smean : rmean, mean, C);
  if (!s) s = wk_tensor_to_f64(train ? sinv : rvar, invstd, C);
  if (s) goto fail;
  if (!train)
    for (int64_t c = 0; c < C; c++) invstd[c] = 1.0 / sqrt(invstd[c] + eps);
  /* channels_last f32 (NHWC rows of C values): the S < 16 path's rows, one
   * per pixel (S = 1, K = C); grad_output is brought to x's layout, and the
   * input's gradient is channels-last too */
  bool nhwc = dt == WK_F32 && wk_tensor_dtype(go) == WK_F32 && nd == 4 &&
              wk_suggest_memory_format(input) == WK_CHANNELS_LAST;
  if (mask[0] && !(gi = nhwc ? wk_empty_format(sz, nd, (wk_options){.dtype = cd}, WK_CHANNELS_LAST)
                             : cpu_empty(sz, nd, cd)))
    goto fail_err;
  if (wk_tensor_numel(input) > 0 && (mask[0] || mask[1] || mask[2])) {
    if (nhwc ? !(x = wk_retain(input)) || !(g = wk_contiguous_format(go, WK_CHANNELS_LAST))
             : !(x = cpu_prep(input, cd)) || !(g = cpu_prep(go, cd)))
      goto fail_err;
    bnb_job j = {wk_tensor_data(x),
                 wk_tensor_data(g),
                 gi ? wk_tensor_data(gi) : NULL,
                 N,
                 C,
                 S,
                 train,
                 mean,
                 invstd,
                 w,
                 sum_g,
                 dotp};
    if (cd == WK_F32 && (S < 16 || nhwc)) { /* bnbs_job */
      int64_t rows = nhwc ? N * S : N, cs = nhwc ? 1 : S; /* rows of K = C * cs values */
      int64_t K = C * cs;
      if (!(sbuf = wk_malloc(sizeof(double) * (size_t)(8 * K)))) {
        s = wk_error(WK_ERR_NO_MEMORY, "%s(): out of memory", op);
        goto fail;
      }
      double *d = sbuf;
      bnbs_job sj = {wk_tensor_data(x), wk_tensor_data(g), gi ? wk_tensor_data(gi) : NULL, rows, cs, K, cs * (256 / cs),
                     mean, sum_g, dotp, d, d + K, d + 2 * K, {d + 3 * K, d + 4 * K, d + 5 * K, d + 6 * K, d + 7 * K},
                     train};
      if (mask[1] || mask[2] || train) cpu_par((K + sj.KB - 1) / sj.KB, rows * sj.KB * 2, bnbs_sums, &sj);
      if (gi) {
        const double cnt = (double)(N * S);
        double *pm = d + 3 * K, *pk = d + 4 * K, *pgm = d + 5 * K, *pis = d + 6 * K, *pw = d + 7 * K;
        for (int64_t k = 0; k < K; k++) { /* the values bnb_input_f32 uses */
          int64_t c = k / cs;
          double is = invstd[c];
          pis[k] = is;
          pw[k] = w[c];
          if (train) {
            pm[k] = mean[c];
            pk[k] = dotp[c] * is * is / cnt;
            pgm[k] = sum_g[c] / cnt;
          }
        }
        cpu_par(rows, 2 * K, bnbs_input, &sj);
      }
    } else {
      if (mask[1] || mask[2] || train) cpu_par(C, N * S, cd == WK_F64 ? bnb_sums_f64 : bnb_sums_f32, &j);
      if (gi) cpu_par(N * C, S, cd == WK_F64 ? bnb_input_f64 : bnb_input_f32, &j);
    }
  }
  if (mask[1]) {
    for (int64_t c = 0; c < C; c++) dotp[c] *= invstd[c];
    if (!(gw = cpu_from_doubles(dotp, C, &C, 1, pdt))) goto fail_err;
  }
  if (mask[2] && !(gb = cpu_from_doubles(sum_g, C, &C, 1, pdt))) goto fail_err;
  gi = wk_cast_own(gi, dt);
fail:
  wk_free(buf);
  wk_free(sbuf);
  wk_release(x);
  wk_release(g);
  return wk_kernel_done_opt(s, (wk_tensor *[]){gi, gw, gb}, mask, 3, outs);
fail_err:
  s = wk_last_error();
  goto fail;
}

/* ---- layer_norm_backward ---------------------------------------------------------------- */
/* Input and grad as contiguous [M, N]; statistics per row. */
#define LNB_B 64
typedef struct {
  const void *x, *g, *w;
  void *gi;
  int64_t M, N;
  const double *mean, *rstd;
  double *gw, *gb; /* [N] */
} lnb_job;

#define DEF_LNB(T, SUF)                                                               \
  static void lnb_rows_##SUF(void *p, int64_t b, int64_t e) {                         \
    const lnb_job *j = p;                                                             \
    const int64_t N = j->N;                                                           \
    const T *w = j->w;                                                                \
    for (int64_t r = b; r < e; r++) {                                                 \
      const T *x = (const T *)j->x + r * N, *g = (const T *)j->g + r * N;             \
      T *gi = (T *)j->gi + r * N;                                                     \
      double m = j->mean[r], rs = j->rstd[r], sa = 0, sb = 0;                         \
      for (int64_t i = 0; i < N; i++) {                                               \
        double dw = w ? (double)g[i] * w[i] : (double)g[i];                           \
        sa += dw;                                                                     \
        sb += dw * ((double)x[i] - m) * rs;                                           \
      }                                                                               \
      sa /= (double)N;                                                                \
      sb /= (double)N;                                                                \
      for (int64_t i = 0; i < N; i++) {                                               \
        double dw = w ? (double)g[i] * w[i] : (double)g[i];                           \
        gi[i] = (T)(rs * (dw - sa - ((double)x[i] - m) * rs * sb));                   \
      }                                                                               \
    }                                                                                 \
  }                                                                                   \
  static void lnb_cols_##SUF(void *p, int64_t b, int64_t e) {                         \
    const lnb_job *j = p;                                                             \
    const int64_t N = j->N;                                                           \
    for (int64_t t = b; t < e; t++) {                                                 \
      int64_t i0 = t * LNB_B, n = N - i0 < LNB_B ? N - i0 : LNB_B;                    \
      double aw[LNB_B], ab[LNB_B];                                                    \
      for (int64_t i = 0; i < n; i++) aw[i] = ab[i] = 0;                              \
      for (int64_t r = 0; r < j->M; r++) {                                            \
        const T *x = (const T *)j->x + r * N + i0, *g = (const T *)j->g + r * N + i0; \
        double m = j->mean[r], rs = j->rstd[r];                                       \
        for (int64_t i = 0; i < n; i++) {                                             \
          aw[i] += (double)g[i] * ((double)x[i] - m) * rs;                            \
          ab[i] += g[i];                                                              \
        }                                                                             \
      }                                                                               \
      for (int64_t i = 0; i < n; i++) {                                               \
        j->gw[i0 + i] = aw[i];                                                        \
        j->gb[i0 + i] = ab[i];                                                        \
      }                                                                               \
    }                                                                                 \
  }
DEF_LNB(float, f32)
DEF_LNB(double, f64)

static wk_status k_layer_norm_backward(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "layer_norm_backward";
  wk_lnb_args a; /* checked by the meta function; SDK kernel_util.h */
  wk_lnb_args_of(&a, args);
  int nd = wk_tensor_dim(a.input);
  const int64_t *sz = wk_tensor_sizes(a.input), M = a.rows, N = a.cols;
  wk_status s;
  wk_dtype dt = wk_tensor_dtype(a.input), cd = cpu_fcompute(dt);
  wk_dtype wdt = wk_kernel_meta(ctx, 1)->dtype, bdt = wk_kernel_meta(ctx, 2)->dtype;
  wk_tensor *gi = NULL, *gw = NULL, *gb = NULL, *x = NULL, *g = NULL, *w = NULL;
  double *buf = wk_calloc((size_t)(2 * M + 2 * N + 1), sizeof(double));
  if (!buf) return wk_error(WK_ERR_NO_MEMORY, "%s(): out of memory", op);
  double *mean = buf, *rstd = buf + M, *sw = buf + 2 * M, *sb = buf + 2 * M + N;
  if ((s = wk_tensor_to_f64(a.mean, mean, M)) || (s = wk_tensor_to_f64(a.rstd, rstd, M))) goto fail;
  if (a.mask[0] && !(gi = cpu_empty(sz, nd, cd))) goto fail_err;
  if (M > 0 && N > 0 && (a.mask[0] || a.mask[1] || a.mask[2])) {
    if (!(x = cpu_prep(a.input, cd)) || !(g = cpu_prep(a.go, cd)) ||
        (a.mask[0] && a.weight && !(w = cpu_prep(a.weight, cd))))
      goto fail_err;
    lnb_job j = {wk_tensor_data(x),
                 wk_tensor_data(g),
                 w ? wk_tensor_data(w) : NULL,
                 gi ? wk_tensor_data(gi) : NULL,
                 M,
                 N,
                 mean,
                 rstd,
                 sw,
                 sb};
    if (gi) cpu_par(M, 2 * N, cd == WK_F64 ? lnb_rows_f64 : lnb_rows_f32, &j);
    if (a.mask[1] || a.mask[2])
      cpu_par((N + LNB_B - 1) / LNB_B, M * LNB_B, cd == WK_F64 ? lnb_cols_f64 : lnb_cols_f32, &j);
  }
  if (a.mask[1] && !(gw = cpu_from_doubles(sw, N, a.ns, a.k, wdt))) goto fail_err;
  if (a.mask[2] && !(gb = cpu_from_doubles(sb, N, a.ns, a.k, bdt))) goto fail_err;
  gi = wk_cast_own(gi, dt);
fail:
  wk_free(buf);
  wk_release_n((wk_tensor *[]){x, g, w}, 3);
  return wk_kernel_done_opt(s, (wk_tensor *[]){gi, gw, gb}, a.mask, 3, outs);
fail_err:
  s = wk_last_error();
  goto fail;
}

/* ---- embedding_dense_backward ------------------------------------------------------------- */
/* Rows of grad_output grouped by index (a stable counting sort), so each
 * weight row sums its gradients in the order they occur. */
typedef struct {
  const void *g;
  void *gw;
  const int64_t *start, *order;
  int64_t D, padding_idx;
} embb_job;

#define DEF_EMBB(T, SUF)                                        \
  static void embb_##SUF(void *p, int64_t b, int64_t e) {       \
    const embb_job *j = p;                                      \
    const int64_t D = j->D;                                     \
    for (int64_t v = b; v < e; v++) {                           \
      if (v == j->padding_idx) continue;                        \
      T *dst = (T *)j->gw + v * D;                              \
      for (int64_t q = j->start[v]; q < j->start[v + 1]; q++) { \
        const T *src = (const T *)j->g + j->order[q] * D;       \
        for (int64_t i = 0; i < D; i++) dst[i] += src[i];       \
      }                                                         \
    }                                                           \
  }
DEF_EMBB(float, f32)
DEF_EMBB(double, f64)

static wk_status k_embedding_dense_backward(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "embedding_dense_backward";
  wk_tensor *go = WK_ARG_T(0), *indices = WK_ARG_T(1);
  int64_t V = WK_ARG_I(2), pidx = WK_ARG_I(3);
  wk_status s; /* arguments checked by the meta function */
  int nd = wk_tensor_dim(indices);
  int64_t D = wk_tensor_size(go, nd), osz[2] = {V, D};
  wk_dtype dt = wk_tensor_dtype(go), cd = cpu_fcompute(dt);
  wk_tensor *idx = cpu_prep(indices, WK_I64), *g = NULL, *gw = NULL;
  int64_t *start = NULL, *order = NULL;
  if (!idx) return wk_last_error();
  const int64_t *iv = wk_tensor_data(idx);
  int64_t n = wk_tensor_numel(idx);
  for (int64_t i = 0; i < n; i++)
    if (iv[i] < 0 || iv[i] >= V) {
      wk_release(idx);
      return wk_error(WK_ERR_INDEX, "%s(): index out of range in self (index %lld, num_weights %lld)", op,
                      (long long)iv[i], (long long)V);
    }
  if (!(gw = zeros_of(osz, 2, cd))) goto fail_err;
  if (n > 0 && D > 0 && V > 0) {
    start = wk_calloc((size_t)(V + 1), sizeof(int64_t));
    order = wk_malloc(sizeof(int64_t) * (size_t)n);
    if (!start || !order) {
      s = wk_error(WK_ERR_NO_MEMORY, "%s(): out of memory", op);
      goto fail;
    }
    for (int64_t i = 0; i < n; i++) start[iv[i] + 1]++;
    for (int64_t v = 0; v < V; v++) start[v + 1] += start[v];
    int64_t *fillp = wk_malloc(sizeof(int64_t) * (size_t)V);
    if (!fillp) {
      s = wk_error(WK_ERR_NO_MEMORY, "%s(): out of memory", op);
      goto fail;
    }
    memcpy(fillp, start, sizeof(int64_t) * (size_t)V);
    for (int64_t i = 0; i < n; i++) order[fillp[iv[i]]++] = i;
    wk_free(fillp);
    if (!(g = cpu_prep(go, cd))) goto fail_err;
    embb_job j = {wk_tensor_data(g), wk_tensor_data(gw), start, order, D, pidx};
    cpu_par(V, D * (n / V + 1), cd == WK_F64 ? embb_f64 : embb_f32, &j);
  }
  wk_free(start);
  wk_free(order);
  wk_release(idx);
  wk_release(g);
  if (!(gw = wk_cast_own(gw, dt))) return wk_last_error();
  outs[0] = WK_VT(gw);
  return WK_OK;
fail_err:
  s = wk_last_error();
fail:
  wk_free(start);
  wk_free(order);
  wk_release(idx);
  wk_release(g);
  wk_release(gw);
  return s;
}

/* ---- pad_backward --------------------------------------------------------------------------- */
/* The forward maps output element o of a padded dimension to source element
 * (o - pad_l) reflected, clamped or wrapped by the mode (constant: none). The
 * backward runs one pass per padded dimension, from the last: the gradient
 * viewed as [outer, osz, inner] is reduced to [outer, n, inner] by adding
 * each output slice into its source slice, in ascending o. */
enum { PAD_CONSTANT, PAD_REFLECT, PAD_REPLICATE, PAD_CIRCULAR };

#define PADB_B 256
typedef struct {
  const void *src;
  void *dst;
  const int64_t *map; /* [osz]: source index or -1 */
  int64_t osz, n, inner, nblk;
} padb_job;

#define DEF_PADB(T, SUF)                                             \
  static void padb_##SUF(void *p, int64_t b, int64_t e) {            \
    const padb_job *j = p;                                           \
    for (int64_t t = b; t < e; t++) {                                \
      int64_t o = t / j->nblk, i0 = (t % j->nblk) * PADB_B;          \
      int64_t w = j->inner - i0 < PADB_B ? j->inner - i0 : PADB_B;   \
      const T *src = (const T *)j->src + o * j->osz * j->inner + i0; \
      T *dst = (T *)j->dst + o * j->n * j->inner + i0;               \
      for (int64_t k = 0; k < j->osz; k++) {                         \
        int64_t m = j->map[k];                                       \
        if (m < 0) continue;                                         \
        T *d = dst + m * j->inner;                                   \
        const T *s = src + k * j->inner;                             \
        for (int64_t i = 0; i < w; i++) d[i] += s[i];                \
      }                                                              \
    }                                                                \
  }
DEF_PADB(float, f32)
DEF_PADB(double, f64)

static wk_status k_pad_backward(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "pad_backward";
  wk_tensor *go = WK_ARG_T(0), *self = WK_ARG_T(1);
  const int64_t *pad = args[2].u.ints;
  int npad = args[2].len;
  const char *ms = args[3].u.s;
  static const char *const modes[] = {"constant", "reflect", "replicate", "circular", NULL}; /* PAD_* order */
  int mode = wk_option_index(ms, modes); /* pad, mode and shapes checked by the meta function */
  int nd = wk_tensor_dim(self);
  const int64_t *sz = wk_tensor_sizes(self), *osz = wk_tensor_sizes(go);
  int64_t pl[WK_MAX_DIMS] = {0}, pr[WK_MAX_DIMS] = {0}, total = 0;
  for (int d = 0; d < nd; d++) {
    int k = nd - 1 - d; /* pairs run from the last dimension */
    if (k < npad / 2) {
      pl[d] = pad[2 * k];
      pr[d] = pad[2 * k + 1];
    }
    total += osz[d];
  }
  wk_dtype dt = wk_tensor_dtype(go), cd = cpu_fcompute(dt);
  if (nd == 0 || wk_tensor_numel(self) == 0 || wk_tensor_numel(go) == 0) {
    wk_tensor *r = nd == 0 ? wk_clone(go) : zeros_of(sz, nd, dt);
    return wk_kernel_out1(outs, r);
  }
  int64_t *map = wk_malloc(sizeof(int64_t) * (size_t)(total + 1));
  if (!map) return wk_error(WK_ERR_NO_MEMORY, "%s(): out of memory", op);
  wk_tensor *cur = cpu_prep(go, cd);
  if (!cur) goto fail;
  int64_t cs[WK_MAX_DIMS];
  memcpy(cs, osz, sizeof(int64_t) * (size_t)nd);
  bool passes = false;
  for (int d = nd - 1; d >= 0; d--) {
    if (pl[d] == 0 && pr[d] == 0) continue;
    passes = true;
    int64_t n = sz[d];
    for (int64_t o = 0; o < osz[d]; o++) {
      int64_t i = o - pl[d];
      if (i < 0 || i >= n) {
        switch (mode) {
          case PAD_REFLECT:
            i = i < 0 ? -i : 2 * (n - 1) - i;
            break;
          case PAD_REPLICATE:
            i = i < 0 ? 0 : n - 1;
            break;
          case PAD_CIRCULAR:
            i = ((i % n) + n) % n;
            break;
          default:
            i = -1;
            break;
        }
      }
      map[o] = i;
    }
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < d; i++) outer *= cs[i];
    for (int i = d + 1; i < nd; i++) inner *= cs[i];
    cs[d] = n;
    wk_tensor *next = zeros_of(cs, nd, cd);
    if (!next) goto fail;
    padb_job j = {wk_tensor_data(cur), wk_tensor_data(next), map, osz[d], n, inner, (inner + PADB_B - 1) / PADB_B};
    if (outer * inner > 0)
      cpu_par(outer * j.nblk, osz[d] * (inner < PADB_B ? inner : PADB_B), cd == WK_F64 ? padb_f64 : padb_f32, &j);
    wk_release(cur);
    cur = next;
  }
  wk_free(map);
  map = NULL;
  if (!passes || wk_tensor_same_storage(cur, go)) { /* no padding: a copy, never an alias */
    wk_tensor *c = wk_clone(cur);
    wk_release(cur);
    cur = c;
  }
  if (!(cur = wk_cast_own(cur, dt))) return wk_last_error();
  outs[0] = WK_VT(cur);
  return WK_OK;
fail:
  wk_free(map);
  wk_release(cur);
  return wk_last_error();
}

wk_status cpu_register_nn_backward(void) {
  static const wk_kernel_row ks[] = {{"softmax_backward_data", k_softmax_backward, NULL, NULL},
                                     {"log_softmax_backward_data", k_softmax_backward, (void *)1, NULL},
                                     {"batch_norm_backward", k_batch_norm_backward, NULL, NULL},
                                     {"layer_norm_backward", k_layer_norm_backward, NULL, NULL},
                                     {"embedding_dense_backward", k_embedding_dense_backward, NULL, NULL},
                                     {"pad_backward", k_pad_backward, NULL, NULL}};
  return wk_register_rows(ks, sizeof ks / sizeof ks[0], cpu_reg_row);
}
