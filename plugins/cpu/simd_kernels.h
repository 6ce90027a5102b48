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
/* 4 all-ones then 4 zero int32: 8 - c.. picks a mask of c lanes (AVX2 maskload) */
static const int32_t simd_ones4[8] = {-1, -1, -1, -1, 0, 0, 0, 0};
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
#undef VD_LOADD
#undef VD_FOLD
#undef VD_WIDEN_N
#undef VD_KEEP_N
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
#define VD_LOADD _mm512_loadu_pd
/* the first c (any int; <= 0: none) of the 8 floats at p widened, zeros after
 * (masked: nothing past them is read); v with lanes from c on zeroed */
#define SIMD_MASK8(c) ((__mmask8)((c) >= 8 ? 0xff : (c) <= 0 ? 0 : (1u << (c)) - 1))
#define VD_WIDEN_N(p, c) _mm512_cvtps_pd(_mm256_maskz_loadu_ps(SIMD_MASK8(c), (p)))
#define VD_KEEP_N(v, c) _mm512_maskz_mov_pd(SIMD_MASK8(c), (v))
/* simd_fold16's order in registers: (k, k+8) is r[0] + r[1], then the halves */
#define VD_FOLD(r)                                                                         \
  __extension__({                                                                          \
    __m512d v_ = _mm512_add_pd((r)[0], (r)[1]);                                            \
    __m256d y_ = _mm256_add_pd(_mm512_castpd512_pd256(v_), _mm512_extractf64x4_pd(v_, 1)); \
    __m128d x_ = _mm_add_pd(_mm256_castpd256_pd128(y_), _mm256_extractf128_pd(y_, 1));     \
    _mm_cvtsd_f64(_mm_add_sd(x_, _mm_unpackhi_pd(x_, x_)));                                \
  })
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
#define VD_LOADD _mm256_loadu_pd
#define SIMD_MASK4(c) _mm_loadu_si128((const __m128i *)(simd_ones4 + 4 - ((c) >= 4 ? 4 : (c) <= 0 ? 0 : (c))))
#define VD_WIDEN_N(p, c) _mm256_cvtps_pd(_mm_maskload_ps((p), SIMD_MASK4(c)))
#define VD_KEEP_N(v, c) _mm256_and_pd((v), _mm256_castsi256_pd(_mm256_cvtepi32_epi64(SIMD_MASK4(c))))
#define VD_FOLD(r)                                                                            \
  __extension__({                                                                             \
    __m256d y_ = _mm256_add_pd(_mm256_add_pd((r)[0], (r)[2]), _mm256_add_pd((r)[1], (r)[3])); \
    __m128d x_ = _mm_add_pd(_mm256_castpd256_pd128(y_), _mm256_extractf128_pd(y_, 1));        \
    _mm_cvtsd_f64(_mm_add_sd(x_, _mm_unpackhi_pd(x_, x_)));                                   \
  })
#elif SIMD_LEVEL == 1
#define SIMD_W 2
#define VD __m128d
#define VD_ZERO() _mm_setzero_pd()
#define VD_SET1(x) _mm_set1_pd(x)
#define VD_WIDEN(p) _mm_cvtps_pd(_mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)(const void *)(p))))
#define VD_ADD _mm_add_pd
#define VD_SUB _mm_sub_pd
#define VD_MUL _mm_mul_pd
#define VD_STORE _mm_storeu_pd
#define VD_LOADD _mm_loadu_pd
#define VD_WIDEN_N(p, c) ((c) >= 2 ? VD_WIDEN(p) : (c) == 1 ? _mm_set_sd((double)*(p)) : _mm_setzero_pd())
#define VD_KEEP_N(v, c) ((c) >= 2 ? (v) : (c) == 1 ? _mm_move_sd(_mm_setzero_pd(), (v)) : _mm_setzero_pd())
#define VD_FOLD(r)                                                                   \
  __extension__({                                                                    \
    __m128d a_ = _mm_add_pd(_mm_add_pd((r)[0], (r)[4]), _mm_add_pd((r)[2], (r)[6])); \
    __m128d b_ = _mm_add_pd(_mm_add_pd((r)[1], (r)[5]), _mm_add_pd((r)[3], (r)[7])); \
    __m128d x_ = _mm_add_pd(a_, b_);                                                 \
    _mm_cvtsd_f64(_mm_add_sd(x_, _mm_unpackhi_pd(x_, x_)));                          \
  })
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
#define VD_LOADD(p) (*(p))
#define VD_WIDEN_N(p, c) ((c) > 0 ? (double)*(p) : 0.0)
#define VD_KEEP_N(v, c) ((c) > 0 ? (v) : 0.0)
#define VD_FOLD(r) simd_fold16(r)
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

/* The sums: a row's blocks of 16 go lane by lane into the accumulators; its
 * tail (under 16) is a block whose lanes past the end add 0 (masked loads:
 * nothing past the row is read); the 16 lanes fold pairwise (simd_fold16's
 * order) in registers. */
/* Channels [c0, c1) of a contiguous [N, C, S] batch: walked image by image
 * (x[n, c0:c1, :] is one contiguous stretch), each channel's 16 lanes kept
 * in acc (16 doubles a channel) between images. Lane k of a channel adds
 * its elements in the order a channel-at-a-time loop would (images in
 * order, a row's blocks in order, its tail last). */
#define SIMD_CHUNK 64 /* channels a pass keeps in acc */
static void SIMD_FN(bn_stats)(const float *x, int64_t N, int64_t C, int64_t S, int64_t c0, int64_t c1, double *mean,
                              double *var) {
  double acc[SIMD_CHUNK * SIMD_LANES];
  const int tail = (int)(S % SIMD_LANES);
  const int64_t S16 = S - tail;
  for (int64_t cb = c0; cb < c1; cb += SIMD_CHUNK) {
    const int64_t ce = c1 - cb < SIMD_CHUNK ? c1 : cb + SIMD_CHUNK;
    for (int pass = 0; pass < 2; pass++) {
      memset(acc, 0, sizeof(double) * (size_t)((ce - cb) * SIMD_LANES));
      for (int64_t n = 0; n < N; n++)
        for (int64_t c = cb; c < ce; c++) {
          const float *r = x + (n * C + c) * S;
          double *a = acc + (c - cb) * SIMD_LANES;
          const VD vm = VD_SET1(pass ? mean[c] : 0.0);
          VD v[SIMD_R];
          SIMD_UNROLL
          for (int q = 0; q < SIMD_R; q++) v[q] = VD_LOADD(a + q * SIMD_W);
          if (pass == 0) {
            for (int64_t i = 0; i < S16; i += SIMD_LANES) SIMD_UNROLL
            for (int q = 0; q < SIMD_R; q++) v[q] = VD_ADD(v[q], VD_WIDEN(r + i + q * SIMD_W));
            if (tail) SIMD_UNROLL
            for (int q = 0; q < SIMD_R; q++) v[q] = VD_ADD(v[q], VD_WIDEN_N(r + S16 + q * SIMD_W, tail - q * SIMD_W));
          } else {
            for (int64_t i = 0; i < S16; i += SIMD_LANES) SIMD_UNROLL
            for (int q = 0; q < SIMD_R; q++) {
              VD d = VD_SUB(VD_WIDEN(r + i + q * SIMD_W), vm);
              v[q] = VD_ADD(v[q], VD_MUL(d, d));
            }
            if (tail) SIMD_UNROLL
            for (int q = 0; q < SIMD_R; q++) {
              const int cq = tail - q * SIMD_W;
              VD d = VD_KEEP_N(VD_SUB(VD_WIDEN_N(r + S16 + q * SIMD_W, cq), vm), cq);
              v[q] = VD_ADD(v[q], VD_MUL(d, d));
            }
          }
          SIMD_UNROLL
          for (int q = 0; q < SIMD_R; q++) VD_STORE(a + q * SIMD_W, v[q]);
        }
      for (int64_t c = cb; c < ce; c++) {
        VD v[SIMD_R];
        SIMD_UNROLL
        for (int q = 0; q < SIMD_R; q++) v[q] = VD_LOADD(acc + (c - cb) * SIMD_LANES + q * SIMD_W);
        double t = VD_FOLD(v) / (double)(N * S);
        if (pass == 0)
          mean[c] = t;
        else
          var[c] = t;
      }
    }
  }
}

static void SIMD_FN(bn_apply)(float *y, const float *x, float m, float a, float sh, int64_t S) {
  SIMD_IVDEP
  for (int64_t i = 0; i < S; i++) y[i] = (x[i] - m) * a + sh;
}

/* batch_norm_backward's sums over channels [c0, c1), walked as bn_stats. */
static void SIMD_FN(bn_bwd_sums)(const float *x, const float *g, int64_t N, int64_t C, int64_t S, int64_t c0,
                                 int64_t c1, const double *mean, double *sum_g, double *dotp) {
  double acc[2 * SIMD_CHUNK * SIMD_LANES];
  const int tail = (int)(S % SIMD_LANES);
  const int64_t S16 = S - tail;
  for (int64_t cb = c0; cb < c1; cb += SIMD_CHUNK) {
    const int64_t ce = c1 - cb < SIMD_CHUNK ? c1 : cb + SIMD_CHUNK;
    memset(acc, 0, sizeof(double) * (size_t)(2 * (ce - cb) * SIMD_LANES));
    for (int64_t n = 0; n < N; n++)
      for (int64_t c = cb; c < ce; c++) {
        const float *xr = x + (n * C + c) * S, *gr = g + (n * C + c) * S;
        double *as = acc + 2 * (c - cb) * SIMD_LANES, *ad = as + SIMD_LANES;
        const VD vm = VD_SET1(mean[c]);
        VD vs[SIMD_R], vd[SIMD_R];
        SIMD_UNROLL
        for (int q = 0; q < SIMD_R; q++) {
          vs[q] = VD_LOADD(as + q * SIMD_W);
          vd[q] = VD_LOADD(ad + q * SIMD_W);
        }
        for (int64_t i = 0; i < S16; i += SIMD_LANES) SIMD_UNROLL
        for (int q = 0; q < SIMD_R; q++) {
          VD gv = VD_WIDEN(gr + i + q * SIMD_W);
          vs[q] = VD_ADD(vs[q], gv);
          vd[q] = VD_ADD(vd[q], VD_MUL(VD_SUB(VD_WIDEN(xr + i + q * SIMD_W), vm), gv));
        }
        if (tail) SIMD_UNROLL
        for (int q = 0; q < SIMD_R; q++) {
          const int cq = tail - q * SIMD_W;
          VD gv = VD_WIDEN_N(gr + S16 + q * SIMD_W, cq);
          vs[q] = VD_ADD(vs[q], gv);
          vd[q] = VD_ADD(vd[q], VD_MUL(VD_KEEP_N(VD_SUB(VD_WIDEN_N(xr + S16 + q * SIMD_W, cq), vm), cq), gv));
        }
        SIMD_UNROLL
        for (int q = 0; q < SIMD_R; q++) {
          VD_STORE(as + q * SIMD_W, vs[q]);
          VD_STORE(ad + q * SIMD_W, vd[q]);
        }
      }
    for (int64_t c = cb; c < ce; c++) {
      VD v[SIMD_R];
      const double *as = acc + 2 * (c - cb) * SIMD_LANES;
      SIMD_UNROLL
      for (int q = 0; q < SIMD_R; q++) v[q] = VD_LOADD(as + q * SIMD_W);
      sum_g[c] = VD_FOLD(v);
      SIMD_UNROLL
      for (int q = 0; q < SIMD_R; q++) v[q] = VD_LOADD(as + SIMD_LANES + q * SIMD_W);
      dotp[c] = VD_FOLD(v);
    }
  }
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
  SIMD_UNROLL
  for (int q = 0; q < SIMD_R; q++) va[q] = VD_ZERO();
  int64_t i = 0;
  for (; i + SIMD_LANES <= n; i += SIMD_LANES) SIMD_UNROLL
  for (int q = 0; q < SIMD_R; q++) va[q] = VD_ADD(va[q], VD_WIDEN(x + i + q * SIMD_W));
  if (i < n) {
    const int c = (int)(n - i);
    SIMD_UNROLL
    for (int q = 0; q < SIMD_R; q++) va[q] = VD_ADD(va[q], VD_WIDEN_N(x + i + q * SIMD_W, c - q * SIMD_W));
  }
  return VD_FOLD(va);
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

/* f32 -> bf16 as wk_f32_to_bf16: (u + 0x7fff + ((u >> 16) & 1)) >> 16, a NaN
 * quieted instead. AVX-512 written out (vpmovdw packs the 16 halves); the
 * other widths are the SDK's branch-free scalar form, which GCC vectorises.
 * Not vcvtneps2bf16 (AVX-512 BF16): it flushes subnormals to zero, so its
 * bits would differ from every other variant's. */
static void SIMD_FN(f32_to_bf16)(uint16_t *o, const float *x, int64_t n) {
  int64_t i = 0;
#if SIMD_LEVEL == 3
  const __m512i bias = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1), absm = _mm512_set1_epi32(0x7fffffff),
                inf = _mm512_set1_epi32(0x7f800000), quiet = _mm512_set1_epi32(0x40);
  for (; i + 16 <= n; i += 16) {
    __m512i u = _mm512_loadu_si512((const void *)(x + i)), hi = _mm512_srli_epi32(u, 16);
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, bias), _mm512_and_si512(hi, one)), 16);
    __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, absm), inf);
    r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(hi, quiet));
    _mm256_storeu_si256((__m256i *)(void *)(o + i), _mm512_cvtepi32_epi16(r));
  }
#endif
  SIMD_IVDEP
  for (; i < n; i++) o[i] = wk_f32_to_bf16(x[i]);
}

static void SIMD_FN(bf16_to_f32)(float *o, const uint16_t *x, int64_t n) {
  int64_t i = 0;
#if SIMD_LEVEL == 3
  for (; i + 16 <= n; i += 16) {
    __m512i u = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(x + i)));
    _mm512_storeu_si512((void *)(o + i), _mm512_slli_epi32(u, 16));
  }
#endif
  SIMD_IVDEP
  for (; i < n; i++) o[i] = wk_bf16_to_f32(x[i]);
}

static const cpu_simd_table SIMD_FN(table) = {
    SIMD_ISA_NAME,         SIMD_FN(add),         SIMD_FN(mul),           SIMD_FN(add_scalar),
    SIMD_FN(mul_scalar),   SIMD_FN(relu),        SIMD_FN(threshold_bwd), SIMD_FN(bn_stats),
    SIMD_FN(bn_apply),     SIMD_FN(bn_bwd_sums), SIMD_FN(bn_bwd_input),  SIMD_FN(bn_bwd_input_eval),
    SIMD_FN(sum),          SIMD_FN(fill),        SIMD_FN(col_sum),       SIMD_FN(col_sqdev),
    SIMD_FN(col_bwd_sums), SIMD_FN(row_affine),  SIMD_FN(row_bwd_input), SIMD_FN(row_bwd_input_eval),
    SIMD_FN(f32_to_bf16),  SIMD_FN(bf16_to_f32)};
