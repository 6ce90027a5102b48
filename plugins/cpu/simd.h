/* cpu plugin: the hot f32 loops of the elementwise, reduction and
 * normalisation kernels, built once per instruction set from one source
 * (simd_kernels.h, included by simd.c under GCC target pragmas: baseline
 * SSE2, AVX2 and AVX-512) and picked when the plugin loads by the CPU's
 * features; WICK_CPU_ISA=sse2|avx2|avx512 forces one (tests, measurements).
 *
 * Every variant computes the same bits: sums run over 16 fixed lanes (then
 * a fixed pairwise tree), whatever the vector width, and no multiply-add is
 * contracted into an FMA. So a result does not depend on the CPU it ran on
 * or on the override. */
#ifndef WICK_CPU_SIMD_H
#define WICK_CPU_SIMD_H

#include <stdbool.h>
#include <stdint.h>

#include <wick/sdk.h>

/* Pointers are contiguous f32 arrays. The elementwise loops are called with
 * each input either disjoint from o or equal to it (in place): an element is
 * read before its own result is written, never after another's. The callers
 * check with cpu_simd_ok2 below. */
typedef struct {
  const char *isa; /* "sse2", "avx2" or "avx512" */
  /* o = a + al * b; o = a * b; and with b a scalar v: o = a + v, o = a * v */
  void (*add)(float *o, const float *a, const float *b, float al, int64_t n);
  void (*mul)(float *o, const float *a, const float *b, int64_t n);
  void (*add_scalar)(float *o, const float *a, float v, int64_t n);
  void (*mul_scalar)(float *o, const float *a, float v, int64_t n);
  /* o = x < 0 ? 0 : x (NaN stays NaN) */
  void (*relu)(float *o, const float *x, int64_t n);
  /* o = x > t ? g : 0 */
  void (*threshold_bwd)(float *o, const float *g, const float *x, float t, int64_t n);
  /* Channels [c0, c1) of a contiguous [N, C, S] batch: mean and biased
   * variance, accumulated in double (two passes, each walking the images in
   * memory order). */
  void (*bn_stats)(const float *x, int64_t N, int64_t C, int64_t S, int64_t c0, int64_t c1, double *mean, double *var);
  /* y = (x - m) * a + sh over S elements */
  void (*bn_apply)(float *y, const float *x, float m, float a, float sh, int64_t S);
  /* batch_norm_backward's per-channel sums over channels [c0, c1), walked
   * as bn_stats: sum(g) and sum((x - mean[c]) * g), in double */
  void (*bn_bwd_sums)(const float *x, const float *g, int64_t N, int64_t C, int64_t S, int64_t c0, int64_t c1,
                      const double *mean, double *sum_g, double *dotp);
  /* gi = (g - (x - m) * k - gm) * is * w, in double (training) */
  void (*bn_bwd_input)(float *gi, const float *g, const float *x, double m, double k, double gm, double is, double w,
                       int64_t S);
  /* gi = g * is * w, in double (evaluation) */
  void (*bn_bwd_input_eval)(float *gi, const float *g, double is, double w, int64_t S);
  /* sum of n elements, in double */
  double (*sum)(const float *x, int64_t n);
  /* o[i] = v */
  void (*fill)(float *o, float v, int64_t n);
  /* batch_norm when a channel plane has few elements (S < 16): x holds N
   * rows of K (= a block of C * S) columns, row stride ld; the callee zeroes
   * the sums. acc[k] = sum_n x; acc[k] = sum_n (x - mu[k])^2; sg[k] = sum_n g
   * and dp[k] = sum_n (x - mu[k]) * g; all in double, n ascending. */
  void (*col_sum)(const float *x, int64_t N, int64_t ld, int64_t K, double *acc);
  void (*col_sqdev)(const float *x, int64_t N, int64_t ld, int64_t K, const double *mu, double *acc);
  void (*col_bwd_sums)(const float *x, const float *g, int64_t N, int64_t ld, int64_t K, const double *mu, double *sg,
                       double *dp);
  /* one row of K with per-column parameters: y = (x - pm) * pa + psh (as
   * bn_apply); gi as bn_bwd_input with p = {m, k, gm, is, w} per column; gi
   * as bn_bwd_input_eval */
  void (*row_affine)(float *y, const float *x, const float *pm, const float *pa, const float *psh, int64_t K);
  void (*row_bwd_input)(float *gi, const float *g, const float *x, const double *const *p, int64_t K);
  void (*row_bwd_input_eval)(float *gi, const float *g, const double *pis, const double *pw, int64_t K);
  /* float32 <-> bfloat16 over n contiguous elements, the SDK's conversions
   * (<wick/sdk/half.h>: round to nearest even, NaN quieted, subnormals kept)
   * bit for bit; o and x do not overlap. What autocast's casts and every
   * bf16 kernel computing in f32 run. */
  void (*f32_to_bf16)(uint16_t *o, const float *x, int64_t n);
  void (*bf16_to_f32)(float *o, const uint16_t *x, int64_t n);
} cpu_simd_table;

/* The table in use; set by cpu_simd_init (the baseline before it runs). */
extern const cpu_simd_table *cpu_simd __attribute__((visibility("hidden")));

/* Picks the table: the widest the CPU runs, or WICK_CPU_ISA's. Fails, naming
 * the value, on an unknown WICK_CPU_ISA or one this CPU cannot run. */
__attribute__((visibility("hidden"))) wk_status cpu_simd_init(void);

/* The elementwise entries with their aliasing rule checked: false when the
 * arrays overlap other than o == a (the caller then runs its generic loop). */
static inline bool cpu_simd_disjoint(const float *o, const float *x, int64_t n) {
  return o == x || o + n <= x || x + n <= o;
}
static inline bool cpu_simd_ok2(const float *o, const float *a, const float *b, int64_t n) {
  return cpu_simd_disjoint(o, a, n) && (b == NULL || cpu_simd_disjoint(o, b, n));
}

#endif
