/* cpu plugin: neural-network forward kernels: softmax/log_softmax,
 * batch_norm, layer_norm, dropout, embedding and pad (the losses are in loss.c).
 * Floating inputs compute in f32 (f16/bf16 upcast) or f64 with double
 * accumulators; every reduction has a fixed order, so results do not depend
 * on the number of threads. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "simd.h"

/* ---- shared helpers ------------------------------------------------------------------ */

/* Work (in elements) below which a loop stays on the calling thread. */
#define NN_GRAIN 32768

void cpu_par(int64_t ntasks, int64_t per_task, void (*fn)(void *ctx, int64_t b, int64_t e), void *ctx) {
  if (ntasks <= 0) return;
  if (per_task < 1) per_task = 1;
  if (ntasks == 1 || ntasks * per_task < NN_GRAIN) {
    fn(ctx, 0, ntasks);
    return;
  }
  int64_t grain = NN_GRAIN / per_task;
  wk_parallel_for(0, ntasks, grain < 1 ? 1 : grain, fn, ctx);
}

wk_dtype cpu_fcompute(wk_dtype dt) { return dt == WK_F64 ? WK_F64 : WK_F32; }

wk_tensor *cpu_prep(wk_tensor *t, wk_dtype dt) {
  wk_tensor *c = wk_kernel_cast(t, dt);
  if (!c) return NULL;
  wk_tensor *r = wk_contiguous(c);
  wk_release(c);
  return r;
}

/* Pointer to the k-th element (row-major order) of a strided cpu tensor. */
static void *elem_ptr(wk_tensor *t, int64_t k) {
  int nd = wk_tensor_dim(t);
  const int64_t *sz = wk_tensor_sizes(t), *st = wk_tensor_strides(t);
  int64_t off = 0;
  for (int d = nd - 1; d >= 0; d--) {
    off += (k % sz[d]) * st[d];
    k /= sz[d];
  }
  return (char *)wk_tensor_data(t) + off * (int64_t)wk_dtype_size(wk_tensor_dtype(t));
}

wk_tensor *cpu_from_doubles(const double *v, int64_t n, const int64_t *sizes, int ndim, wk_dtype dt) {
  wk_tensor *r = cpu_empty(sizes, ndim, dt);
  if (!r) return NULL;
  char *p = wk_tensor_data(r);
  size_t es = wk_dtype_size(dt);
  for (int64_t i = 0; i < n; i++) wk_store_f64(p + (size_t)i * es, dt, v[i]);
  return r;
}

/* ---- softmax / log_softmax ------------------------------------------------------------ */
/* Input viewed as [outer, n, inner] (contiguous); a task is one outer index and
 * a block of up to SMX_B inner columns, processed together for locality. */
#define SMX_B 64
typedef struct {
  const void *x;
  void *y;
  int64_t n, inner, nblk;
  bool log;
} smx_job;

#define DEF_SMX(T, SUF, EXP)                                                                 \
  static void smx_##SUF(void *p, int64_t b, int64_t e) {                                     \
    const smx_job *j = p;                                                                    \
    const int64_t n = j->n, inner = j->inner;                                                \
    for (int64_t t = b; t < e; t++) {                                                        \
      int64_t o = t / j->nblk, i0 = (t % j->nblk) * SMX_B;                                   \
      int64_t w = inner - i0 < SMX_B ? inner - i0 : SMX_B;                                   \
      const T *x = (const T *)j->x + o * n * inner + i0;                                     \
      T *y = (T *)j->y + o * n * inner + i0;                                                 \
      if (inner == 1) { /* a contiguous row */                                               \
        T m = -INFINITY;                                                                     \
        double s = 0;                                                                        \
        for (int64_t k = 0; k < n; k++)                                                      \
          if (x[k] > m || x[k] != x[k]) m = x[k];                                            \
        if (j->log) {                                                                        \
          for (int64_t k = 0; k < n; k++) s += EXP(x[k] - m);                                \
          s = log(s);                                                                        \
          for (int64_t k = 0; k < n; k++) y[k] = (T)((double)(x[k] - m) - s);                \
        } else {                                                                             \
          for (int64_t k = 0; k < n; k++) {                                                  \
            T ev = EXP(x[k] - m);                                                            \
            y[k] = ev;                                                                       \
            s += ev;                                                                         \
          }                                                                                  \
          const T inv = (T)(1.0 / s);                                                        \
          for (int64_t k = 0; k < n; k++) y[k] *= inv;                                       \
        }                                                                                    \
        continue;                                                                            \
      }                                                                                      \
      T mx[SMX_B];                                                                           \
      double sum[SMX_B];                                                                     \
      for (int64_t i = 0; i < w; i++) {                                                      \
        mx[i] = -INFINITY;                                                                   \
        sum[i] = 0;                                                                          \
      }                                                                                      \
      for (int64_t k = 0; k < n; k++)                                                        \
        for (int64_t i = 0; i < w; i++) {                                                    \
          T v = x[k * inner + i];                                                            \
          if (v > mx[i] || v != v) mx[i] = v;                                                \
        }                                                                                    \
      if (j->log) {                                                                          \
        for (int64_t k = 0; k < n; k++)                                                      \
          for (int64_t i = 0; i < w; i++) sum[i] += EXP(x[k * inner + i] - mx[i]);           \
        for (int64_t i = 0; i < w; i++) sum[i] = log(sum[i]);                                \
        for (int64_t k = 0; k < n; k++)                                                      \
          for (int64_t i = 0; i < w; i++)                                                    \
            y[k * inner + i] = (T)((double)(x[k * inner + i] - mx[i]) - sum[i]);             \
      } else {                                                                               \
        for (int64_t k = 0; k < n; k++)                                                      \
          for (int64_t i = 0; i < w; i++) {                                                  \
            T ev = EXP(x[k * inner + i] - mx[i]);                                            \
            y[k * inner + i] = ev;                                                           \
            sum[i] += ev;                                                                    \
          }                                                                                  \
        for (int64_t i = 0; i < w; i++) sum[i] = 1.0 / sum[i];                               \
        for (int64_t k = 0; k < n; k++)                                                      \
          for (int64_t i = 0; i < w; i++) y[k * inner + i] = (T)(y[k * inner + i] * sum[i]); \
      }                                                                                      \
    }                                                                                        \
  }
DEF_SMX(float, f32, expf)
DEF_SMX(double, f64, exp)

wk_tensor *cpu_softmax_cd(wk_tensor *x, int d, bool log) {
  int nd = wk_tensor_dim(x);
  const int64_t *sz = wk_tensor_sizes(x);
  wk_tensor *y = cpu_empty(sz, nd, wk_tensor_dtype(x));
  if (!y || wk_tensor_numel(x) == 0) return y;
  int64_t outer = 1, inner = 1, n = nd ? sz[d] : 1;
  for (int i = 0; i < d; i++) outer *= sz[i];
  for (int i = d + 1; i < nd; i++) inner *= sz[i];
  smx_job j = {wk_tensor_data(x), wk_tensor_data(y), n, inner, (inner + SMX_B - 1) / SMX_B, log};
  cpu_par(outer * j.nblk, n * (inner < SMX_B ? inner : SMX_B), wk_tensor_dtype(x) == WK_F64 ? smx_f64 : smx_f32, &j);
  return y;
}

static int wrap_dim(int64_t dim, int ndim) { return (int)(dim < 0 ? dim + (ndim > 0 ? ndim : 1) : dim); }

/* dtype and dim were checked by the op's meta function. */
static wk_status k_softmax(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *self = WK_ARG_T(0);
  wk_dtype dt = wk_kernel_meta(ctx, 0)->dtype;
  int d = wrap_dim(WK_ARG_I(1), wk_tensor_dim(self));
  /* with a dtype argument the input is converted first, as in PyTorch */
  wk_tensor *in = wk_kernel_cast(self, dt);
  wk_tensor *x = in ? cpu_prep(in, cpu_fcompute(dt)) : NULL;
  wk_release(in);
  wk_tensor *y = x ? cpu_softmax_cd(x, d, ctx->user != NULL) : NULL;
  wk_release(x);
  return wk_kernel_out1(outs, wk_cast_own(y, dt));
}

/* ---- batch_norm ------------------------------------------------------------------------ */
/* Contiguous input viewed as [N, C, S]. */
typedef struct {
  const void *x;
  void *y;
  int64_t N, C, S;
  double *mean, *var, *scale, *shift;
} bn_job;

/* bf16 inputs take the f32 loops: a bf16-storage variant measured slower than
 * casting to f32 and back (645 vs 421 us at [128, 64, 8, 8]). */
#define DEF_BN(T, SUF)                                                           \
  static void bn_stats_##SUF(void *p, int64_t b, int64_t e) {                    \
    const bn_job *j = p;                                                         \
    const T *x = j->x;                                                           \
    const int64_t N = j->N, C = j->C, S = j->S;                                  \
    if (sizeof(T) == sizeof(float)) { /* simd.h: 16 lanes, this CPU's width */   \
      cpu_simd->bn_stats((const float *)x, N, C, S, b, e, j->mean, j->var);      \
      return;                                                                    \
    }                                                                            \
    for (int64_t c = b; c < e; c++) {                                            \
      /* four partial sums: the adds overlap instead of waiting on one chain */  \
      double s4[4] = {0, 0, 0, 0}, v4[4] = {0, 0, 0, 0};                         \
      for (int64_t n = 0; n < N; n++) {                                          \
        const T *r = x + (n * C + c) * S;                                        \
        int64_t i = 0;                                                           \
        for (; i + 4 <= S; i += 4)                                               \
          for (int k = 0; k < 4; k++) s4[k] += r[i + k];                         \
        for (; i < S; i++) s4[0] += r[i];                                        \
      }                                                                          \
      double m = ((s4[0] + s4[1]) + (s4[2] + s4[3])) / (double)(N * S);          \
      for (int64_t n = 0; n < N; n++) {                                          \
        const T *r = x + (n * C + c) * S;                                        \
        int64_t i = 0;                                                           \
        for (; i + 4 <= S; i += 4)                                               \
          for (int k = 0; k < 4; k++) {                                          \
            double dv = r[i + k] - m;                                            \
            v4[k] += dv * dv;                                                    \
          }                                                                      \
        for (; i < S; i++) {                                                     \
          double dv = r[i] - m;                                                  \
          v4[0] += dv * dv;                                                      \
        }                                                                        \
      }                                                                          \
      double v = (v4[0] + v4[1]) + (v4[2] + v4[3]);                              \
      j->mean[c] = m;                                                            \
      j->var[c] = v / (double)(N * S);                                           \
    }                                                                            \
  }                                                                              \
  static void bn_apply_##SUF(void *p, int64_t b, int64_t e) {                    \
    const bn_job *j = p;                                                         \
    const int64_t C = j->C, S = j->S;                                            \
    for (int64_t r = b; r < e; r++) {                                            \
      int64_t c = r % C;                                                         \
      const T *x = (const T *)j->x + r * S;                                      \
      T *y = (T *)j->y + r * S;                                                  \
      const T m = (T)j->mean[c], a = (T)j->scale[c], sh = (T)j->shift[c];        \
      if (sizeof(T) == sizeof(float) && cpu_simd_ok2((float *)y, (const float *)x, NULL, S)) { \
        cpu_simd->bn_apply((float *)y, (const float *)x, (float)m, (float)a, (float)sh, S); \
        continue;                                                                \
      }                                                                          \
      for (int64_t i = 0; i < S; i++) y[i] = (x[i] - m) * a + sh;                \
    }                                                                            \
  }
DEF_BN(float, f32)
DEF_BN(double, f64)

/* f32 with S < 16 elements per channel plane (ResNet's late layers on small
 * images: [N, 256, 2, 2], [N, 512, 1, 1]): the per-channel loops would run
 * S at a time. An image is one row of K = C * S contiguous values instead;
 * the statistics sum columns (tasks own blocks of whole channels), the
 * normalisation runs along rows with per-column parameters (simd.h). A
 * channel's sum is its columns' sums, each over the images in order, added
 * in column order. */
typedef struct {
  const float *x;
  float *y;
  int64_t N, S, K, KB; /* KB: columns per statistics task, a multiple of S */
  double *mean, *var;  /* [C] */
  double *acc, *mu;    /* [K] scratch: column sums, each column's channel mean */
  const float *pm, *pa, *psh; /* [K] */
} bns_job;

static void bns_stats(void *p, int64_t b, int64_t e) {
  const bns_job *j = p;
  const int64_t S = j->S, cnt = j->N * S;
  for (int64_t t = b; t < e; t++) {
    int64_t k0 = t * j->KB, kn = j->K - k0 < j->KB ? j->K - k0 : j->KB;
    cpu_simd->col_sum(j->x + k0, j->N, j->K, kn, j->acc + k0);
    for (int64_t c = k0 / S; c < (k0 + kn) / S; c++) {
      double sum = 0;
      for (int64_t q = 0; q < S; q++) sum += j->acc[c * S + q];
      double m = sum / (double)cnt;
      j->mean[c] = m;
      for (int64_t q = 0; q < S; q++) j->mu[c * S + q] = m;
    }
    cpu_simd->col_sqdev(j->x + k0, j->N, j->K, kn, j->mu + k0, j->acc + k0);
    for (int64_t c = k0 / S; c < (k0 + kn) / S; c++) {
      double v = 0;
      for (int64_t q = 0; q < S; q++) v += j->acc[c * S + q];
      j->var[c] = v / (double)cnt;
    }
  }
}

static void bns_apply(void *p, int64_t b, int64_t e) {
  const bns_job *j = p;
  for (int64_t n = b; n < e; n++) cpu_simd->row_affine(j->y + n * j->K, j->x + n * j->K, j->pm, j->pa, j->psh, j->K);
}

static wk_status k_batch_norm(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *input = WK_ARG_T(0), *weight = WK_ARG_OPT_T(1), *bias = WK_ARG_OPT_T(2);
  wk_tensor *rmean = WK_ARG_OPT_T(3), *rvar = WK_ARG_OPT_T(4);
  bool training = WK_ARG_B(5);
  double momentum = WK_ARG_F(6), eps = WK_ARG_F(7);
  wk_status s;
  int nd = wk_tensor_dim(input);
  const int64_t *sz = wk_tensor_sizes(input);
  int64_t N = sz[0], C = sz[1], S = 1;
  for (int i = 2; i < nd; i++) S *= sz[i];
  wk_dtype dt = wk_tensor_dtype(input), cd = cpu_fcompute(dt);
  wk_dtype sdt = wk_kernel_meta(ctx, 1)->dtype; /* the saved statistics' (meta function) */

  if (wk_tensor_numel(input) == 0) { /* nothing to normalise; running stats stay */
    wk_tensor *y = wk_meta_empty(ctx, 0), *m = wk_meta_empty(ctx, 1), *v = wk_meta_empty(ctx, 2);
    return wk_kernel_done_n(WK_OK, (wk_tensor *[]){y, m, v}, 3, outs);
  }

  double *buf = wk_malloc(sizeof(double) * (size_t)(6 * C));
  if (!buf) return wk_error(WK_ERR_NO_MEMORY, "batch_norm(): out of memory");
  double *mean = buf, *var = buf + C, *scale = buf + 2 * C, *shift = buf + 3 * C, *w = buf + 4 * C, *bb = buf + 5 * C;
  wk_tensor *x = NULL, *y = NULL, *sm = NULL, *si = NULL;
  void *sbuf = NULL; /* the S < 16 path's scratch (bns_job) */
  s = WK_OK;
  for (int64_t c = 0; c < C; c++) {
    w[c] = 1;
    bb[c] = 0;
  }
  if (weight) s = wk_tensor_to_f64(weight, w, C);
  if (!s && bias) s = wk_tensor_to_f64(bias, bb, C);
  if (s) goto fail;
  /* channels_last f32 (NHWC rows of C values): the S < 16 path's rows, one
   * per pixel (S = 1, K = C), in place; the result is channels-last too */
  bool nhwc = dt == WK_F32 && nd == 4 && wk_suggest_memory_format(input) == WK_CHANNELS_LAST;
  if (nhwc ? !(x = wk_retain(input)) || !(y = wk_empty_format(sz, nd, (wk_options){.dtype = cd}, WK_CHANNELS_LAST))
           : !(x = cpu_prep(input, cd)) || !(y = cpu_empty(sz, nd, cd)))
    goto fail_err;
  bn_job j = {wk_tensor_data(x), wk_tensor_data(y), N, C, S, mean, var, scale, shift};
  bns_job sj = {0};
  if (cd == WK_F32 && (S < 16 || nhwc)) {
    int64_t rows = nhwc ? N * S : N, cs = nhwc ? 1 : S; /* rows of K = C * cs values */
    int64_t K = C * cs;
    sbuf = wk_malloc(sizeof(double) * (size_t)(2 * K) + sizeof(float) * (size_t)(3 * K));
    if (!sbuf) {
      s = wk_error(WK_ERR_NO_MEMORY, "batch_norm(): out of memory");
      goto fail;
    }
    float *pf = (float *)((double *)sbuf + 2 * K);
    sj = (bns_job){wk_tensor_data(x), wk_tensor_data(y), rows, cs, K, cs * (256 / cs), mean, var, (double *)sbuf,
                   (double *)sbuf + K, pf, pf + K, pf + 2 * K};
  }
  if (training && sj.x) {
    cpu_par((sj.K + sj.KB - 1) / sj.KB, sj.N * sj.KB * 2, bns_stats, &sj);
  } else if (training) {
    cpu_par(C, N * S, cd == WK_F64 ? bn_stats_f64 : bn_stats_f32, &j);
  } else {
    if ((s = wk_tensor_to_f64(rmean, mean, C)) || (s = wk_tensor_to_f64(rvar, var, C))) goto fail;
  }
  for (int64_t c = 0; c < C; c++) {
    double invstd = 1.0 / sqrt(var[c] + eps);
    scale[c] = invstd * w[c];
    shift[c] = bb[c];
    w[c] = invstd; /* kept for save_invstd */
  }
  if (sj.x) {
    float *pm = (float *)sj.pm, *pa = (float *)sj.pa, *psh = (float *)sj.psh;
    for (int64_t k = 0; k < sj.K; k++) { /* the values bn_apply_f32 uses */
      pm[k] = (float)mean[k / sj.S];
      pa[k] = (float)scale[k / sj.S];
      psh[k] = (float)shift[k / sj.S];
    }
    cpu_par(sj.N, sj.K, bns_apply, &sj);
  } else {
    cpu_par(N * C, S, cd == WK_F64 ? bn_apply_f64 : bn_apply_f32, &j);
  }
  if (training) {
    if (!(sm = cpu_from_doubles(mean, C, &C, 1, sdt)) || !(si = cpu_from_doubles(w, C, &C, 1, sdt))) goto fail_err;
    double cnt = (double)(N * S);
    if (rmean) {
      wk_dtype rdt = wk_tensor_dtype(rmean);
      for (int64_t c = 0; c < C; c++) {
        void *p = elem_ptr(rmean, c);
        wk_store_f64(p, rdt, (1 - momentum) * wk_load_f64(p, rdt) + momentum * mean[c]);
      }
      wk_tensor_bump_version(rmean);
    }
    if (rvar) {
      wk_dtype rdt = wk_tensor_dtype(rvar);
      for (int64_t c = 0; c < C; c++) {
        void *p = elem_ptr(rvar, c);
        wk_store_f64(p, rdt, (1 - momentum) * wk_load_f64(p, rdt) + momentum * var[c] * cnt / (cnt - 1));
      }
      wk_tensor_bump_version(rvar);
    }
  } else {
    if (!(sm = wk_meta_empty(ctx, 1)) || !(si = wk_meta_empty(ctx, 2))) goto fail_err;
  }
  wk_release(x);
  x = NULL;
  y = wk_cast_own(y, dt);
fail:
  wk_free(buf);
  wk_free(sbuf);
  wk_release(x);
  return wk_kernel_done_n(s, (wk_tensor *[]){y, sm, si}, 3, outs);
fail_err:
  s = wk_last_error();
  goto fail;
}

/* ---- layer_norm ------------------------------------------------------------------------ */
typedef struct {
  const void *x, *w, *b;
  void *y;
  int64_t N;
  double eps, *mean, *rstd;
} ln_job;

#define DEF_LN(T, SUF)                                                        \
  static void ln_##SUF(void *p, int64_t b, int64_t e) {                       \
    const ln_job *j = p;                                                      \
    const int64_t N = j->N;                                                   \
    const T *w = j->w, *bb = j->b;                                            \
    for (int64_t r = b; r < e; r++) {                                         \
      const T *x = (const T *)j->x + r * N;                                   \
      T *y = (T *)j->y + r * N;                                               \
      double s = 0, v = 0;                                                    \
      for (int64_t i = 0; i < N; i++) s += x[i];                              \
      double m = s / (double)N;                                               \
      for (int64_t i = 0; i < N; i++) {                                       \
        double dv = x[i] - m;                                                 \
        v += dv * dv;                                                         \
      }                                                                       \
      double rs = 1.0 / sqrt(v / (double)N + j->eps);                         \
      j->mean[r] = m;                                                         \
      j->rstd[r] = rs;                                                        \
      const T mt = (T)m, rt = (T)rs;                                          \
      if (w && bb)                                                            \
        for (int64_t i = 0; i < N; i++) y[i] = (x[i] - mt) * rt * w[i] + bb[i]; \
      else if (w)                                                             \
        for (int64_t i = 0; i < N; i++) y[i] = (x[i] - mt) * rt * w[i];       \
      else if (bb)                                                            \
        for (int64_t i = 0; i < N; i++) y[i] = (x[i] - mt) * rt + bb[i];      \
      else                                                                    \
        for (int64_t i = 0; i < N; i++) y[i] = (x[i] - mt) * rt;              \
    }                                                                         \
  }
DEF_LN(float, f32)
DEF_LN(double, f64)

static wk_status k_layer_norm(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *input = WK_ARG_T(0), *weight = WK_ARG_OPT_T(2), *bias = WK_ARG_OPT_T(3);
  const int64_t *ns = args[1].u.ints;
  int k = args[1].len;
  double eps = WK_ARG_F(4);
  (void)ns;
  int nd = wk_tensor_dim(input);
  const int64_t *sz = wk_tensor_sizes(input);
  int axis = nd - k;
  int64_t M = 1, N = 1;
  for (int i = 0; i < nd; i++) {
    if (i < axis) M *= sz[i];
    else N *= sz[i];
  }
  wk_dtype dt = wk_tensor_dtype(input), cd = cpu_fcompute(dt);
  const wk_meta_out *sm = wk_kernel_meta(ctx, 1); /* mean/rstd shape and dtype (meta function) */
  wk_tensor *x = NULL, *w = NULL, *bb = NULL, *y = NULL, *mt = NULL, *rt = NULL;
  double *buf = wk_malloc(sizeof(double) * (size_t)(2 * M + 1));
  if (!buf) return wk_error(WK_ERR_NO_MEMORY, "layer_norm(): out of memory");
  if (!(x = cpu_prep(input, cd)) || (weight && !(w = cpu_prep(weight, cd))) || (bias && !(bb = cpu_prep(bias, cd))) ||
      !(y = cpu_empty(sz, nd, cd)))
    goto fail;
  ln_job j = {wk_tensor_data(x), w ? wk_tensor_data(w) : NULL, bb ? wk_tensor_data(bb) : NULL, wk_tensor_data(y),
              N, eps, buf, buf + M};
  if (N > 0)
    cpu_par(M, N, cd == WK_F64 ? ln_f64 : ln_f32, &j);
  else
    for (int64_t r = 0; r < M; r++) buf[r] = buf[M + r] = NAN;
  if (!(mt = cpu_from_doubles(buf, M, sm->sizes, nd, sm->dtype)) ||
      !(rt = cpu_from_doubles(buf + M, M, sm->sizes, nd, sm->dtype)))
    goto fail;
  wk_release(x);
  wk_release(w);
  wk_release(bb);
  x = w = bb = NULL;
  if (!(y = wk_cast_own(y, dt))) goto fail;
  wk_free(buf);
  outs[0] = WK_VT(y);
  outs[1] = WK_VT(mt);
  outs[2] = WK_VT(rt);
  return WK_OK;
fail:
  wk_free(buf);
  wk_release(x);
  wk_release(w);
  wk_release(bb);
  wk_release(y);
  wk_release(mt);
  wk_release(rt);
  return wk_last_error();
}

/* ---- dropout ------------------------------------------------------------------------------ */
/* Element i keeps its value when the first word of Philox(seed, offset + i),
 * as a float in [0, 1), is below 1 - p. */
typedef struct {
  const void *x;
  void *y;
  bool *mask;
  uint64_t seed, offset;
  double q, scale;
} drop_job;

#define DEF_DROP(T, SUF)                                                    \
  static void drop_##SUF(void *p, int64_t b, int64_t e) {                   \
    const drop_job *j = p;                                                  \
    const T *x = j->x;                                                      \
    T *y = j->y;                                                            \
    for (int64_t i = b; i < e; i++) {                                       \
      uint32_t r[4];                                                        \
      wk_philox_at(j->seed, j->offset + (uint64_t)i, r);                    \
      bool keep = (double)wk_u32_to_unit_f32(r[0]) < j->q;                  \
      j->mask[i] = keep;                                                    \
      y[i] = keep ? (T)((double)x[i] * j->scale) : (T)0;                    \
    }                                                                       \
  }
DEF_DROP(float, f32)
DEF_DROP(double, f64)

static wk_status k_dropout(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *input = WK_ARG_T(0);
  double p = WK_ARG_F(1);
  bool train = WK_ARG_B(2);
  wk_dtype dt = wk_tensor_dtype(input);
  int nd = wk_tensor_dim(input);
  const int64_t *sz = wk_tensor_sizes(input);
  int64_t n = wk_tensor_numel(input);
  bool active = train && p > 0;
  wk_tensor *mask = wk_meta_empty(ctx, 1), *y = NULL, *x = NULL;
  if (!mask) return wk_last_error();
  wk_status s = WK_OK;
  if (!active || p == 1) {
    y = wk_meta_empty(ctx, 0);
    if (!y) goto fail_err;
    if (!active) {
      if ((s = cpu_copy(y, input))) goto fail;
    } else if (n) {
      memset(wk_tensor_data(y), 0, (size_t)n * wk_dtype_size(dt));
    }
    if (n) memset(wk_tensor_data(mask), active ? 0 : 1, (size_t)n);
  } else {
    wk_dtype cd = cpu_fcompute(dt);
    uint64_t seed = 0, offset = 0;
    if ((s = wk_rng_reserve(wk_tensor_device(input), (uint64_t)n, &seed, &offset))) goto fail;
    if (!(x = cpu_prep(input, cd)) || !(y = cpu_empty(sz, nd, cd))) goto fail_err;
    drop_job j = {wk_tensor_data(x), wk_tensor_data(y), wk_tensor_data(mask), seed, offset, 1 - p, 1 / (1 - p)};
    cpu_par(n, 16, cd == WK_F64 ? drop_f64 : drop_f32, &j);
    wk_release(x);
    x = NULL;
    y = wk_cast_own(y, dt);
  }
fail:
  wk_release(x);
  return wk_kernel_done_n(s, (wk_tensor *[]){y, mask}, 2, outs);
fail_err:
  s = wk_last_error();
  goto fail;
}

/* ---- embedding --------------------------------------------------------------------------- */
typedef struct {
  const char *w;
  char *y;
  const int64_t *idx;
  size_t row;
} emb_job;

static void emb_range(void *p, int64_t b, int64_t e) {
  const emb_job *j = p;
  for (int64_t i = b; i < e; i++) memcpy(j->y + (size_t)i * j->row, j->w + (size_t)j->idx[i] * j->row, j->row);
}

static wk_status k_embedding(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *weight = WK_ARG_T(0), *indices = WK_ARG_T(1);
  int64_t V = wk_tensor_size(weight, 0), D = wk_tensor_size(weight, 1);
  wk_tensor *idx = cpu_prep(indices, WK_I64), *w = NULL, *y = NULL;
  if (!idx) return wk_last_error();
  const int64_t *iv = wk_tensor_data(idx);
  int64_t n = wk_tensor_numel(idx);
  for (int64_t i = 0; i < n; i++)
    if (iv[i] < 0 || iv[i] >= V) {
      long long bad = (long long)iv[i];
      wk_release(idx);
      return wk_error(WK_ERR_INDEX, "embedding(): index out of range in self (index %lld, num_embeddings %lld)", bad,
                      (long long)V);
    }
  if (!(w = wk_contiguous(weight)) || !(y = wk_meta_empty(ctx, 0))) {
    wk_release(idx);
    wk_release(w);
    return wk_last_error();
  }
  emb_job j = {wk_tensor_data(w), wk_tensor_data(y), iv, (size_t)D * wk_dtype_size(wk_tensor_dtype(weight))};
  if (j.row) cpu_par(n, D, emb_range, &j);
  wk_release(idx);
  wk_release(w);
  outs[0] = WK_VT(y);
  return WK_OK;
}

/* ---- pad -------------------------------------------------------------------------------------- */
enum { PAD_CONSTANT, PAD_REFLECT, PAD_REPLICATE, PAD_CIRCULAR };
static const char *const pad_modes[] = {"constant", "reflect", "replicate", "circular", NULL}; /* PAD_* order */

/* Output element o of dimension d reads source element (o - pad_l) mapped by
 * the mode; map[d][o] holds that source offset in bytes, or -1 for the fill. */
typedef struct {
  int nd;
  const int64_t *osz;
  int64_t *map[WK_MAX_DIMS];
  const char *src;
  char *dst;
  size_t es;
  unsigned char fill[8];
} pad_job;

static void pad_range(void *p, int64_t b, int64_t e) {
  const pad_job *j = p;
  int nd = j->nd;
  int64_t W = j->osz[nd - 1];
  const int64_t *inner = j->map[nd - 1];
  size_t es = j->es;
  for (int64_t r = b; r < e; r++) {
    int64_t rem = r, off = 0;
    bool fill = false;
    for (int d = nd - 2; d >= 0; d--) {
      int64_t m = j->map[d][rem % j->osz[d]];
      rem /= j->osz[d];
      if (m < 0) fill = true;
      off += m;
    }
    char *out = j->dst + (size_t)(r * W) * es;
    for (int64_t o = 0; o < W; o++) {
      int64_t m = inner[o];
      memcpy(out + (size_t)o * es, fill || m < 0 ? (const char *)j->fill : j->src + off + m, es);
    }
  }
}

static wk_status k_pad(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *self = WK_ARG_T(0);
  const int64_t *pad = args[1].u.ints;
  int npad = args[1].len;
  const char *ms = args[2].u.s;
  bool has_value = !WK_ARG_IS_NONE(3);
  double value = has_value ? WK_ARG_F(3) : 0;
  int mode = wk_option_index(ms, pad_modes); /* pad and mode were checked by the meta function */
  int nd = wk_tensor_dim(self);
  const int64_t *sz = wk_tensor_sizes(self), *osz = wk_kernel_meta(ctx, 0)->sizes;
  int64_t pl[WK_MAX_DIMS] = {0}, total = 0;
  for (int d = 0; d < nd; d++) {
    int k = nd - 1 - d; /* pairs run from the last dimension */
    if (k < npad / 2) pl[d] = pad[2 * k];
    total += osz[d];
  }
  wk_dtype dt = wk_tensor_dtype(self);
  wk_tensor *y = wk_meta_empty(ctx, 0);
  if (!y) return wk_last_error();
  int64_t numel = wk_tensor_numel(y);
  if (nd == 0 || numel == 0) {
    wk_status s = nd == 0 ? cpu_copy(y, self) : WK_OK;
    return wk_kernel_done(s, y, outs);
  }
  int64_t *maps = wk_malloc(sizeof(int64_t) * (size_t)total);
  if (!maps) {
    wk_release(y);
    return wk_error(WK_ERR_NO_MEMORY, "pad(): out of memory");
  }
  pad_job j = {nd, osz, {0}, wk_tensor_data(self), wk_tensor_data(y), wk_dtype_size(dt), {0}};
  wk_store_f64(j.fill, dt, value);
  const int64_t *st = wk_tensor_strides(self);
  int64_t *m = maps;
  for (int d = 0; d < nd; d++) {
    j.map[d] = m;
    int64_t n = sz[d];
    for (int64_t o = 0; o < osz[d]; o++) {
      int64_t i = o - pl[d];
      if (i < 0 || i >= n) {
        switch (mode) {
          case PAD_REFLECT: i = i < 0 ? -i : 2 * (n - 1) - i; break;
          case PAD_REPLICATE: i = i < 0 ? 0 : n - 1; break;
          case PAD_CIRCULAR: i = ((i % n) + n) % n; break;
          default: i = -1; break;
        }
      }
      m[o] = i < 0 ? -1 : i * st[d] * (int64_t)j.es;
    }
    m += osz[d];
  }
  int64_t W = osz[nd - 1];
  cpu_par(numel / W, W, pad_range, &j);
  wk_free(maps);
  outs[0] = WK_VT(y);
  return WK_OK;
}

wk_status cpu_register_nn(void) {
  static const wk_kernel_row ks[] = {{"softmax", k_softmax, NULL, NULL},
                                     {"log_softmax", k_softmax, (void *)1, NULL},
                                     {"batch_norm", k_batch_norm, NULL, NULL},
                                     {"layer_norm", k_layer_norm, NULL, NULL},
                                     {"dropout", k_dropout, NULL, NULL},
                                     {"embedding", k_embedding, NULL, NULL},
                                     {"pad", k_pad, NULL, NULL}};
  return wk_register_rows(ks, sizeof ks / sizeof ks[0], cpu_reg_row);
}
