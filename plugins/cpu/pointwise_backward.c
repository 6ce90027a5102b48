/* cpu plugin: fused backward kernels of pointwise ops — gelu's (its exact
 * form needs erf), and relu's, sigmoid's and tanh's (threshold_backward,
 * sigmoid_backward, tanh_backward: one pass instead of a mask and products).
 * Operands broadcast and promote like a binary op; f16/bf16 compute in f32. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cpu.h"
#include "simd.h"

typedef struct {
  bool tanh_form;
} gelu_ctx;

/* d/dx gelu(x): exact Phi(x) + x phi(x); tanh form differentiates
 * 0.5 x (1 + tanh(k (x + 0.044715 x^3))). Computed in f32 or f64. */
#define GELU_BWD(NAME, T, ERF, EXP, TANH, SQRT)                                               \
  static void NAME(void *cp, char **d, const int64_t *s, int64_t n) {                         \
    const gelu_ctx *c = cp;                                                                   \
    for (int64_t i = 0; i < n; i++) {                                                         \
      T g = *(const T *)(d[1] + i * s[1]), x = *(const T *)(d[2] + i * s[2]), r;              \
      if (c->tanh_form) {                                                                     \
        const T k = (T)0.7978845608028654, a = (T)0.044715;                                   \
        T inner = k * (x + a * x * x * x), th = TANH(inner);                                  \
        T dinner = k * (1 + 3 * a * x * x);                                                   \
        r = (T)0.5 * (1 + th) + (T)0.5 * x * (1 - th * th) * dinner;                          \
      } else {                                                                                \
        T cdf = (T)0.5 * (1 + ERF(x * (T)0.7071067811865476));                               \
        T pdf = EXP((T)-0.5 * x * x) * (T)0.3989422804014327;                                 \
        r = cdf + x * pdf;                                                                    \
      }                                                                                       \
      *(T *)(d[0] + i * s[0]) = g * r;                                                        \
    }                                                                                         \
  }
GELU_BWD(gelu_bwd_f32, float, erff, expf, tanhf, sqrtf)
GELU_BWD(gelu_bwd_f64, double, erf, exp, tanh, sqrt)

static wk_status k_gelu_backward(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *g = WK_ARG_T(0), *x = WK_ARG_T(1);
  const char *mode = args[2].u.s; /* "none" or "tanh": the meta function checked it */
  int approx = strcmp(mode, "tanh") == 0;
  wk_dtype rt = wk_kernel_meta(ctx, 0)->dtype; /* floating */
  wk_dtype cd = wk_compute_dtype(rt);
  wk_tensor *gc = wk_kernel_cast(g, cd), *xc = wk_kernel_cast(x, cd), *res = NULL;
  wk_tensor *pair[2] = {gc, xc};
  int64_t shape[WK_MAX_DIMS];
  int nd = 0;
  wk_status s = gc && xc ? wk_broadcast_shapes("gelu_backward()", pair, 2, shape, &nd) : wk_last_error();
  if (!s && !(res = cpu_empty_like_format(shape, nd, cd, pair, 2))) s = wk_last_error(); /* channels_last stays */
  if (!s) {
    wk_tensor *ops[3] = {res, gc, xc};
    wk_iter it;
    gelu_ctx c = {approx == 1};
    s = wk_iter_init(&it, "gelu_backward()", ops, 3);
    if (!s) wk_iter_run(&it, cd == WK_F64 ? gelu_bwd_f64 : gelu_bwd_f32, &c);
  }
  wk_release(gc);
  wk_release(xc);
  if (!s && cd != rt) {
    wk_tensor *r2 = wk_to_dtype(res, rt);
    wk_release(res);
    res = r2;
    if (!res) s = wk_last_error();
  }
  if (s) {
    wk_release(res);
    return s;
  }
  outs[0] = WK_VT(res);
  return WK_OK;
}

/* ---- threshold_backward, sigmoid_backward, tanh_backward ---- */
typedef enum { PB_THRESHOLD, PB_SIGMOID, PB_TANH } pb_kind;
typedef struct {
  pb_kind k;
  double threshold;
} pb_ctx;

/* Contiguous runs get a plain indexed loop the compiler vectorises; the rest
 * walks strides. NaN in x gives 0 in threshold_backward (x > t is false), as
 * in PyTorch; NaN in g passes through where x > t. */
#define PB_LOOP(NAME, T)                                                               \
  static void NAME(void *cp, char **d, const int64_t *s, int64_t n) {                  \
    const pb_ctx *c = cp;                                                              \
    const T t = (T)c->threshold;                                                       \
    if (sizeof(T) == sizeof(float) && c->k == PB_THRESHOLD && s[0] == 4 && s[1] == 4 && s[2] == 4 && \
        cpu_simd_ok2((float *)d[0], (const float *)d[1], (const float *)d[2], n)) {    \
      cpu_simd->threshold_bwd((float *)d[0], (const float *)d[1], (const float *)d[2], (float)t, n); \
      return;                                                                          \
    }                                                                                  \
    if (s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == sizeof(T)) {                 \
      T *restrict o = (T *)d[0];                                                       \
      const T *restrict g = (const T *)d[1], *restrict x = (const T *)d[2];            \
      switch (c->k) {                                                                  \
        case PB_THRESHOLD:                                                             \
          for (int64_t i = 0; i < n; i++) {                                            \
            T gi = g[i]; /* read unconditionally: the select vectorises as a blend */  \
            o[i] = x[i] > t ? gi : (T)0;                                               \
          }                                                                            \
          break;                                                                       \
        case PB_SIGMOID:                                                               \
          for (int64_t i = 0; i < n; i++) o[i] = g[i] * (((T)1 - x[i]) * x[i]);        \
          break;                                                                       \
        case PB_TANH:                                                                  \
          for (int64_t i = 0; i < n; i++) o[i] = g[i] * ((T)1 - x[i] * x[i]);          \
          break;                                                                       \
      }                                                                                \
      return;                                                                          \
    }                                                                                  \
    for (int64_t i = 0; i < n; i++) {                                                  \
      T g = *(const T *)(d[1] + i * s[1]), x = *(const T *)(d[2] + i * s[2]), r;       \
      r = c->k == PB_THRESHOLD ? (x > t ? g : (T)0)                                    \
          : c->k == PB_SIGMOID ? g * (((T)1 - x) * x)                                  \
                               : g * ((T)1 - x * x);                                   \
      *(T *)(d[0] + i * s[0]) = r;                                                     \
    }                                                                                  \
  }
PB_LOOP(pb_f32, float)
PB_LOOP(pb_f64, double)

/* Both operands bfloat16 (autocast): computed in f32 element by element and
 * rounded once, the same bits as the f32 path plus a cast, without the f32
 * temporaries. */
static void pb_bf16(void *cp, char **d, const int64_t *s, int64_t n) {
  const pb_ctx *c = cp;
  const float t = (float)c->threshold;
  if (s[0] == 2 && s[1] == 2 && s[2] == 2 && c->k == PB_THRESHOLD) { /* a select: no rounding */
    uint16_t *restrict o = (uint16_t *)d[0];
    const uint16_t *restrict g = (const uint16_t *)d[1], *restrict x = (const uint16_t *)d[2];
    for (int64_t i = 0; i < n; i++) {
      uint16_t gi = g[i];
      o[i] = wk_bf16_to_f32(x[i]) > t ? gi : (uint16_t)0;
    }
    return;
  }
  for (int64_t i = 0; i < n; i++) {
    float g = wk_bf16_to_f32(*(const uint16_t *)(d[1] + i * s[1]));
    float x = wk_bf16_to_f32(*(const uint16_t *)(d[2] + i * s[2]));
    float r = c->k == PB_THRESHOLD ? (x > t ? g : 0.0f) : c->k == PB_SIGMOID ? g * ((1.0f - x) * x) : g * (1.0f - x * x);
    *(uint16_t *)(d[0] + i * s[0]) = wk_f32_to_bf16(r);
  }
}

static wk_status k_pointwise_backward(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const pb_kind k = (pb_kind)(intptr_t)ctx->user;
  const char *op = WK_OPNAME;
  wk_tensor *g = WK_ARG_T(0), *x = WK_ARG_T(1);
  wk_dtype rt = wk_kernel_meta(ctx, 0)->dtype; /* floating: the meta function checked */
  pb_ctx c = {k, k == PB_THRESHOLD ? WK_ARG_F(2) : 0};
  wk_dtype cd = wk_compute_dtype(rt);
  if (rt == WK_BF16 && wk_tensor_dtype(g) == WK_BF16 && wk_tensor_dtype(x) == WK_BF16) cd = WK_BF16; /* pb_bf16 */
  wk_tensor *gc = wk_kernel_cast(g, cd), *xc = wk_kernel_cast(x, cd), *res = NULL;
  wk_tensor *pair[2] = {gc, xc};
  int64_t shape[WK_MAX_DIMS];
  int nd = 0;
  char what[64];
  snprintf(what, sizeof what, "%s()", op);
  wk_status s = gc && xc ? wk_broadcast_shapes(what, pair, 2, shape, &nd) : wk_last_error();
  if (!s && !(res = cpu_empty_like_format(shape, nd, cd, pair, 2))) s = wk_last_error(); /* channels_last stays */
  if (!s) {
    wk_tensor *ops[3] = {res, gc, xc};
    wk_iter it;
    s = wk_iter_init(&it, what, ops, 3);
    if (!s) wk_iter_run(&it, cd == WK_F64 ? pb_f64 : cd == WK_BF16 ? pb_bf16 : pb_f32, &c);
  }
  wk_release(gc);
  wk_release(xc);
  if (!s && cd != rt) {
    wk_tensor *r2 = wk_to_dtype(res, rt);
    wk_release(res);
    res = r2;
    if (!res) s = wk_last_error();
  }
  if (s) {
    wk_release(res);
    return s;
  }
  outs[0] = WK_VT(res);
  return WK_OK;
}

wk_status cpu_register_pointwise_backward(void) {
  wk_status s = cpu_reg("gelu_backward", k_gelu_backward, NULL);
  if (!s) s = cpu_reg("threshold_backward", k_pointwise_backward, (void *)(intptr_t)PB_THRESHOLD);
  if (!s) s = cpu_reg("sigmoid_backward", k_pointwise_backward, (void *)(intptr_t)PB_SIGMOID);
  if (!s) s = cpu_reg("tanh_backward", k_pointwise_backward, (void *)(intptr_t)PB_TANH);
  return s;
}
