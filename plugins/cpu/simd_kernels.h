/* cpu plugin: the body of the per-ISA loops (see simd.h). No include guard:
 * simd.c includes this once per instruction set, with SIMD_SUF naming the
 * variant, SIMD_LEVEL its vector width and a GCC target pragma around it. The loops are plain C written
 * for the vectoriser: elementwise loops carry `GCC ivdep` (an input equal to
 * the output is read at the same index before it is written, so there is no
 * dependence between iterations), and every sum runs over SIMD_LANES fixed
 * lanes (element i of a row goes to lane i % 16) folded by a fixed pairwise
 * tree, so each variant adds the same numbers in the same order. */

#define SIMD_CAT2(a, b) a##_##b
#define SIMD_CAT(a, b) SIMD_CAT2(a, b)
#define SIMD_FN(name) SIMD_CAT(simd_##name, SIMD_SUF)

#ifndef SIMD_LANES
#define SIMD_LANES 16
#if defined(__GNUC__) && !defined(__clang__)
#define SIMD_IVDEP _Pragma("GCC ivdep")
#define SIMD_UNROLL _Pragma("GCC unroll 16") /* keeps the accumulators in registers */
#else
#define SIMD_IVDEP
#define SIMD_UNROLL
#endif
/* acc[0] = sum of the 16 lanes, pairwise: (0+8, 1+9, ...) then halves */
static inline double simd_fold16(double *acc) {
  for (int w = SIMD_LANES / 2; w >= 1; w /= 2)
    for (int k = 0; k < w; k++) acc[k] += acc[k + w];
  return acc[0];
}
#endif

/* Double-precision accumulators for the sums: SIMD_W lanes a register,
 * 16 / SIMD_W registers for the 16 lanes (lane k of a block always in the
 * same place), so every variant adds the same numbers in the same order.
 * SIMD_LEVEL (simd.c): 0 plain C, 1 SSE2, 2 AVX2, 3 AVX-512. */
#undef SIMD_W
#undef VD
#undef VD_ZERO
#undef VD_SET1
#undef VD_WIDEN
#undef VD_ADD
#undef VD_SUB
#undef VD_MUL
#undef VD_STORE
#if SIMD_LEVEL == 3
#define SIMD_W 8
#define VD __m512d
#define VD_ZERO() _mm512_setzero_pd()
#define VD_SET1(x) _mm512_set1_pd(x)
#define VD_WIDEN(p) _mm512_cvtps_pd(_mm256_loadu_ps(p))
#define VD_ADD _mm512_add_pd
#define VD_SUB _mm512_sub_pd
#define VD_MUL _mm512_mul_pd
#define VD_STORE _mm512_storeu_pd
#elif SIMD_LEVEL == 2
#define SIMD_W 4
#define VD __m256d
#define VD_ZERO() _mm256_setzero_pd()
#define VD_SET1(x) _mm256_set1_pd(x)
#define VD_WIDEN(p) _mm256_cvtps_pd(_mm_loadu_ps(p))
#define VD_ADD _mm256_add_pd
#define VD_SUB _mm256_sub_pd
#define VD_MUL _mm256_mul_pd
#define VD_STORE _mm256_storeu_pd
#elif SIMD_LEVEL == 1
#define SIMD_W 2
#define VD __m128d
#define VD_ZERO() _mm_setzero_pd()
#define VD_SET1(x) _mm_set1_pd(x)
#define VD_WIDEN(p) _mm_cvtps_pd(_mm_castpd_ps(_mm_load_sd((const double *)(const void *)(p))))
#define VD_ADD _mm_add_pd
#define VD_SUB _mm_sub_pd
#define VD_MUL _mm_mul_pd
#define VD_STORE _mm_storeu_pd
#else
#define SIMD_W 1
#define VD double
#define VD_ZERO() 0.0
#define VD_SET1(x) (x)
#define VD_WIDEN(p) ((double)*(p))
#define VD_ADD(a, b) ((a) + (b))
#define VD_SUB(a, b) ((a) - (b))
#define VD_MUL(a, b) ((a) * (b))
#define VD_STORE(p, v) (*(p) = (v))
#endif
#define SIMD_R (SIMD_LANES / SIMD_W) /* registers a block */

static void SIMD_FN(add)(float *o, const float *a, const float *b, float al, int64_t n) {
  if (al == 1.0f) {
    SIMD_IVDEP
    for (int64_t i = 0; i < n; i++) o[i] = a[i] + b[i];
  } else {
    SIMD_IVDEP
    for (int64_t i = 0; i < n; i++) o[i] = a[i] + al * b[i];
  }
}

static void SIMD_FN(mul)(float *o, const float *a, const float *b, int64_t n) {
  SIMD_IVDEP
  for (int64_t i = 0; i < n; i++) o[i] = a[i] * b[i];
}

static void SIMD_FN(add_scalar)(float *o, const float *a, float v, int64_t n) {
  SIMD_IVDEP
  for (int64_t i = 0; i < n; i++) o[i] = a[i] + v;
}

static void SIMD_FN(mul_scalar)(float *o, const float *a, float v, int64_t n) {
  SIMD_IVDEP
  for (int64_t i = 0; i < n; i++) o[i] = a[i] * v;
}

static void SIMD_FN(relu)(float *o, const float *x, int64_t n) {
  SIMD_IVDEP
  for (int64_t i = 0; i < n; i++) {
    float v = x[i];
    o[i] = v < 0 ? 0.0f : v;
  }
}

static void SIMD_FN(threshold_bwd)(float *o, const float *g, const float *x, float t, int64_t n) {
  SIMD_IVDEP
  for (int64_t i = 0; i < n; i++) {
    float gi = g[i]; /* read unconditionally: the select is a blend */
    o[i] = x[i] > t ? gi : 0.0f;
  }
}

static void SIMD_FN(bn_stats)(const float *x, int64_t N, int64_t stride, int64_t S, double *mean, double *var) {
  VD va[SIMD_R], vv[SIMD_R];
  double acc[SIMD_LANES] = {0}, sq[SIMD_LANES] = {0}, tmp[SIMD_LANES];
  SIMD_UNROLL
  for (int q = 0; q < SIMD_R; q++) va[q] = vv[q] = VD_ZERO();
  for (int64_t n = 0; n < N; n++) {
    const float *r = x + n * stride;
    int64_t i = 0;
    for (; i + SIMD_LANES <= S; i += SIMD_LANES) SIMD_UNROLL
    for (int q = 0; q < SIMD_R; q++) va[q] = VD_ADD(va[q], VD_WIDEN(r + i + q * SIMD_W));
    for (int k = 0; i < S; i++, k++) acc[k] += (double)r[i];
  }
  SIMD_UNROLL
  for (int q = 0; q < SIMD_R; q++) VD_STORE(tmp + q * SIMD_W, va[q]);
  for (int k = 0; k < SIMD_LANES; k++) acc[k] += tmp[k];
  const double m = simd_fold16(acc) / (double)(N * S);
  const VD vm = VD_SET1(m);
  for (int64_t n = 0; n < N; n++) {
    const float *r = x + n * stride;
    int64_t i = 0;
    for (; i + SIMD_LANES <= S; i += SIMD_LANES) SIMD_UNROLL
    for (int q = 0; q < SIMD_R; q++) {
      VD d = VD_SUB(VD_WIDEN(r + i + q * SIMD_W), vm);
      vv[q] = VD_ADD(vv[q], VD_MUL(d, d));
    }
    for (int k = 0; i < S; i++, k++) {
      double d = (double)r[i] - m;
      sq[k] += d * d;
    }
  }
  SIMD_UNROLL
  for (int q = 0; q < SIMD_R; q++) VD_STORE(tmp + q * SIMD_W, vv[q]);
  for (int k = 0; k < SIMD_LANES; k++) sq[k] += tmp[k];
  *mean = m;
  *var = simd_fold16(sq) / (double)(N * S);
}

static void SIMD_FN(bn_apply)(float *y, const float *x, float m, float a, float sh, int64_t S) {
  SIMD_IVDEP
  for (int64_t i = 0; i < S; i++) y[i] = (x[i] - m) * a + sh;
}

static void SIMD_FN(bn_bwd_sums)(const float *x, const float *g, int64_t N, int64_t stride, int64_t S, double m,
                                 double *sum_g, double *dotp) {
  VD vs[SIMD_R], vd[SIMD_R];
  const VD vm = VD_SET1(m);
  double sg[SIMD_LANES] = {0}, dp[SIMD_LANES] = {0}, tmp[SIMD_LANES];
  SIMD_UNROLL
  for (int q = 0; q < SIMD_R; q++) vs[q] = vd[q] = VD_ZERO();
  for (int64_t n = 0; n < N; n++) {
    const float *xr = x + n * stride, *gr = g + n * stride;
    int64_t i = 0;
    for (; i + SIMD_LANES <= S; i += SIMD_LANES) SIMD_UNROLL
    for (int q = 0; q < SIMD_R; q++) {
      VD gv = VD_WIDEN(gr + i + q * SIMD_W);
      vs[q] = VD_ADD(vs[q], gv);
      vd[q] = VD_ADD(vd[q], VD_MUL(VD_SUB(VD_WIDEN(xr + i + q * SIMD_W), vm), gv));
    }
    for (int k = 0; i < S; i++, k++) {
      double gv = (double)gr[i];
      sg[k] += gv;
      dp[k] += ((double)xr[i] - m) * gv;
    }
  }
  SIMD_UNROLL
  for (int q = 0; q < SIMD_R; q++) VD_STORE(tmp + q * SIMD_W, vs[q]);
  for (int k = 0; k < SIMD_LANES; k++) sg[k] += tmp[k];
  SIMD_UNROLL
  for (int q = 0; q < SIMD_R; q++) VD_STORE(tmp + q * SIMD_W, vd[q]);
  for (int k = 0; k < SIMD_LANES; k++) dp[k] += tmp[k];
  *sum_g = simd_fold16(sg);
  *dotp = simd_fold16(dp);
}

static void SIMD_FN(bn_bwd_input)(float *gi, const float *g, const float *x, double m, double k, double gm, double is,
                                  double w, int64_t S) {
  SIMD_IVDEP
  for (int64_t i = 0; i < S; i++) gi[i] = (float)((((double)g[i] - ((double)x[i] - m) * k) - gm) * is * w);
}

static void SIMD_FN(bn_bwd_input_eval)(float *gi, const float *g, double is, double w, int64_t S) {
  SIMD_IVDEP
  for (int64_t i = 0; i < S; i++) gi[i] = (float)((double)g[i] * is * w);
}

static double SIMD_FN(sum)(const float *x, int64_t n) {
  VD va[SIMD_R];
  double acc[SIMD_LANES] = {0}, tmp[SIMD_LANES];
  SIMD_UNROLL
  for (int q = 0; q < SIMD_R; q++) va[q] = VD_ZERO();
  int64_t i = 0;
  for (; i + SIMD_LANES <= n; i += SIMD_LANES) SIMD_UNROLL
  for (int q = 0; q < SIMD_R; q++) va[q] = VD_ADD(va[q], VD_WIDEN(x + i + q * SIMD_W));
  for (int k = 0; i < n; i++, k++) acc[k] += (double)x[i];
  SIMD_UNROLL
  for (int q = 0; q < SIMD_R; q++) VD_STORE(tmp + q * SIMD_W, va[q]);
  for (int k = 0; k < SIMD_LANES; k++) acc[k] += tmp[k];
  return simd_fold16(acc);
}

static void SIMD_FN(fill)(float *o, float v, int64_t n) {
  for (int64_t i = 0; i < n; i++) o[i] = v;
}

/* ---- batch_norm with few elements per channel plane (S < 16): an image is
 * one row of K = C * S contiguous values; loops run along the row, with the
 * channels' parameters expanded to one per column. Column sums add the rows
 * in order (n ascending), in double. */

static void SIMD_FN(col_sum)(const float *x, int64_t N, int64_t ld, int64_t K, double *acc) {
  for (int64_t k = 0; k < K; k++) acc[k] = 0;
  for (int64_t n = 0; n < N; n++) {
    const float *restrict r = x + n * ld;
    for (int64_t k = 0; k < K; k++) acc[k] += (double)r[k];
  }
}

static void SIMD_FN(col_sqdev)(const float *x, int64_t N, int64_t ld, int64_t K, const double *mu, double *acc) {
  for (int64_t k = 0; k < K; k++) acc[k] = 0;
  for (int64_t n = 0; n < N; n++) {
    const float *restrict r = x + n * ld;
    for (int64_t k = 0; k < K; k++) {
      double d = (double)r[k] - mu[k];
      acc[k] += d * d;
    }
  }
}

static void SIMD_FN(col_bwd_sums)(const float *x, const float *g, int64_t N, int64_t ld, int64_t K, const double *mu,
                                  double *sg, double *dp) {
  for (int64_t k = 0; k < K; k++) sg[k] = dp[k] = 0;
  for (int64_t n = 0; n < N; n++) {
    const float *restrict xr = x + n * ld, *restrict gr = g + n * ld;
    for (int64_t k = 0; k < K; k++) {
      double gv = (double)gr[k];
      sg[k] += gv;
      dp[k] += ((double)xr[k] - mu[k]) * gv;
    }
  }
}

static void SIMD_FN(row_affine)(float *y, const float *x, const float *pm, const float *pa, const float *psh,
                                int64_t K) {
  SIMD_IVDEP
  for (int64_t k = 0; k < K; k++) y[k] = (x[k] - pm[k]) * pa[k] + psh[k];
}

static void SIMD_FN(row_bwd_input)(float *gi, const float *g, const float *x, const double *const *p, int64_t K) {
  const double *restrict pm = p[0], *restrict pk = p[1], *restrict pgm = p[2], *restrict pis = p[3],
                         *restrict pw = p[4];
  SIMD_IVDEP
  for (int64_t k = 0; k < K; k++)
    gi[k] = (float)((((double)g[k] - ((double)x[k] - pm[k]) * pk[k]) - pgm[k]) * pis[k] * pw[k]);
}

static void SIMD_FN(row_bwd_input_eval)(float *gi, const float *g, const double *pis, const double *pw, int64_t K) {
  SIMD_IVDEP
  for (int64_t k = 0; k < K; k++) gi[k] = (float)((double)g[k] * pis[k] * pw[k]);
}

static const cpu_simd_table SIMD_FN(table) = {
    SIMD_ISA_NAME,         SIMD_FN(add),         SIMD_FN(mul),           SIMD_FN(add_scalar),
    SIMD_FN(mul_scalar),   SIMD_FN(relu),        SIMD_FN(threshold_bwd), SIMD_FN(bn_stats),
    SIMD_FN(bn_apply),     SIMD_FN(bn_bwd_sums), SIMD_FN(bn_bwd_input),  SIMD_FN(bn_bwd_input_eval),
    SIMD_FN(sum),          SIMD_FN(fill),        SIMD_FN(col_sum),       SIMD_FN(col_sqdev),
    SIMD_FN(col_bwd_sums), SIMD_FN(row_affine),  SIMD_FN(row_bwd_input), SIMD_FN(row_bwd_input_eval)};
