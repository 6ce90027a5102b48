/* cpu plugin: unary pointwise ops (neg ... bitwise_not, each functional, in
 * place and out=), leaky_relu, gelu, clamp, isnan, isinf, nan_to_num,
 * softplus, elu/celu and hardtanh, with
 * PyTorch's dtype rules: float ops promote integers to float32, sign-like ops
 * keep integer dtypes, predicates give bool. f16/bf16 compute in f32. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "simd.h"
#include <wick/sdk/unary.h>

/* The inner loops below are plain loops over contiguous data; ask GCC to
 * vectorise them at -O2 too (clang does by default). No errno is read here. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "no-math-errno")
#endif


/* ---- loops ------------------------------------------------------------------------ */
/* Applies EXPR (of x, the input element of type TI) to each of the n elements
 * writing TO; the contiguous branch is a plain loop the compiler vectorises. */
#define EACH(TI, TO, EXPR)                                                    \
  do {                                                                        \
    if (s[0] == (int64_t)sizeof(TO) && s[1] == (int64_t)sizeof(TI)) {         \
      TO *o_ = (TO *)d[0];                                                    \
      const TI *a_ = (const TI *)d[1];                                        \
      for (int64_t i = 0; i < n; i++) {                                       \
        const TI x = a_[i];                                                   \
        o_[i] = (EXPR);                                                       \
      }                                                                       \
    } else {                                                                  \
      for (int64_t i = 0; i < n; i++) {                                       \
        const TI x = *(const TI *)(d[1] + i * s[1]);                          \
        *(TO *)(d[0] + i * s[0]) = (EXPR);                                    \
      }                                                                       \
    }                                                                         \
  } while (0)

#define FN_f(name) name##f
#define FN_d(name) name

/* min(max(v, 0), 6) as std::min/max compute it: NaN propagates (hardswish, hardsigmoid). */
#define hard6(v) ((v) < 0 ? 0 : (v) > 6 ? 6 : (v))

/* Floating loops (T = float with F = f, or double with F = d). */
#define FLOAT_LOOP(NAME, T, F)                                                                     \
  static void NAME(void *cp, char **d, const int64_t *s, int64_t n) {                              \
    const wk_unary_params *c = cp;                                                                            \
    const T p = (T)c->p, q = (T)c->q, r = (T)c->r;                                                 \
    const T one = 1, half = (T)0.5;                                                                \
    switch (c->op) {                                                                               \
      case WK_UOP_neg: EACH(T, T, -x); break;                                                           \
      case WK_UOP_abs: EACH(T, T, FN_##F(fabs)(x)); break;                                              \
      case WK_UOP_exp: EACH(T, T, FN_##F(exp)(x)); break;                                               \
      case WK_UOP_log: EACH(T, T, FN_##F(log)(x)); break;                                               \
      case WK_UOP_log1p: EACH(T, T, FN_##F(log1p)(x)); break;                                           \
      case WK_UOP_sqrt: EACH(T, T, FN_##F(sqrt)(x)); break;                                             \
      case WK_UOP_rsqrt: EACH(T, T, one / FN_##F(sqrt)(x)); break;                                      \
      case WK_UOP_sin: EACH(T, T, FN_##F(sin)(x)); break;                                               \
      case WK_UOP_erf: EACH(T, T, FN_##F(erf)(x)); break;                                               \
      case WK_UOP_cos: EACH(T, T, FN_##F(cos)(x)); break;                                               \
      case WK_UOP_tanh: EACH(T, T, FN_##F(tanh)(x)); break;                                             \
      case WK_UOP_sigmoid: EACH(T, T, one / (one + FN_##F(exp)(-x))); break;                            \
      case WK_UOP_relu:                                                                            \
        if (sizeof(T) == sizeof(float) && s[0] == 4 && s[1] == 4 &&                                \
            cpu_simd_ok2((float *)d[0], (const float *)d[1], NULL, n)) {                           \
          cpu_simd->relu((float *)d[0], (const float *)d[1], n); /* simd.h */                      \
          break;                                                                                   \
        }                                                                                          \
        EACH(T, T, x < 0 ? 0 : x);                                                                 \
        break;                                                                                     \
      case WK_UOP_silu: EACH(T, T, x / (one + FN_##F(exp)(-x))); break;                                 \
      case WK_UOP_sign: EACH(T, T, (T)((x > 0) - (x < 0))); break;                                      \
      case WK_UOP_floor: EACH(T, T, FN_##F(floor)(x)); break;                                           \
      case WK_UOP_ceil: EACH(T, T, FN_##F(ceil)(x)); break;                                             \
      case WK_UOP_round: EACH(T, T, FN_##F(rint)(x)); break; /* half to even */                         \
      case WK_UOP_leaky_relu: EACH(T, T, x > 0 ? x : x * p); break;                                     \
      case WK_UOP_gelu: EACH(T, T, half * x * (one + FN_##F(erf)(x * (T)M_SQRT1_2))); break;           \
      case WK_UOP_gelu_tanh: {                                                                          \
        const T beta = (T)(M_SQRT2 * M_2_SQRTPI * 0.5), kappa = (T)0.044715;                       \
        EACH(T, T, half * x * (one + FN_##F(tanh)(beta * (x + kappa * x * x * x))));               \
        break;                                                                                     \
      }                                                                                            \
      case WK_UOP_clamp: EACH(T, T, (x < p ? p : x) > q ? q : (x < p ? p : x)); break;                  \
      case WK_UOP_fill: EACH(T, T, p + x * 0); break; /* p is NaN */                                                 \
      case WK_UOP_nan_to_num:                                                                           \
        EACH(T, T, x != x ? p : x == (T)INFINITY ? q : x == -(T)INFINITY ? r : x);                 \
        break;                                                                                     \
      case WK_UOP_expm1: EACH(T, T, FN_##F(expm1)(x)); break;                                           \
      case WK_UOP_log2: EACH(T, T, FN_##F(log2)(x)); break;                                             \
      case WK_UOP_log10: EACH(T, T, FN_##F(log10)(x)); break;                                           \
      case WK_UOP_exp2: EACH(T, T, FN_##F(exp2)(x)); break;                                             \
      case WK_UOP_tan: EACH(T, T, FN_##F(tan)(x)); break;                                               \
      case WK_UOP_asin: EACH(T, T, FN_##F(asin)(x)); break;                                             \
      case WK_UOP_acos: EACH(T, T, FN_##F(acos)(x)); break;                                             \
      case WK_UOP_atan: EACH(T, T, FN_##F(atan)(x)); break;                                             \
      case WK_UOP_sinh: EACH(T, T, FN_##F(sinh)(x)); break;                                             \
      case WK_UOP_cosh: EACH(T, T, FN_##F(cosh)(x)); break;                                             \
      case WK_UOP_asinh: EACH(T, T, FN_##F(asinh)(x)); break;                                           \
      case WK_UOP_acosh: EACH(T, T, FN_##F(acosh)(x)); break;                                           \
      case WK_UOP_atanh: EACH(T, T, FN_##F(atanh)(x)); break;                                           \
      case WK_UOP_reciprocal: EACH(T, T, one / x); break;                                               \
      case WK_UOP_square: EACH(T, T, x * x); break;                                                     \
      case WK_UOP_trunc: EACH(T, T, FN_##F(trunc)(x)); break;                                           \
      case WK_UOP_frac: EACH(T, T, x - FN_##F(trunc)(x)); break;                                        \
      case WK_UOP_erfinv: EACH(T, T, (T)wk_erfinv_f64((double)x)); break;                                   \
      case WK_UOP_selu: {                                                                               \
        const T a = (T)WK_SELU_ALPHA, sc = (T)WK_SELU_SCALE;                                       \
        EACH(T, T, x <= 0 ? FN_##F(expm1)(x) * a * sc : x * sc);                                   \
        break;                                                                                     \
      }                                                                                            \
      case WK_UOP_elu: EACH(T, T, x <= 0 ? FN_##F(expm1)(x * r) * p * q : x * q); break;                \
      case WK_UOP_softplus:                                                                             \
        EACH(T, T, x * p > q ? x : FN_##F(log1p)(FN_##F(exp)(x * p)) / p);                         \
        break;                                                                                     \
      case WK_UOP_mish: EACH(T, T, x * FN_##F(tanh)(FN_##F(log1p)(FN_##F(exp)(x)))); break;             \
      case WK_UOP_hardswish: EACH(T, T, x * hard6(x + 3) / 6); break;                                   \
      case WK_UOP_hardsigmoid: EACH(T, T, hard6(x + 3) / 6); break;                                     \
      case WK_UOP_relu6:                                                                                \
      case WK_UOP_hardtanh: EACH(T, T, (x < p ? p : x) > q ? q : (x < p ? p : x)); break;               \
      case WK_UOP_log_sigmoid:                                                                          \
        EACH(T, T, (x < 0 ? x : (T)0) - FN_##F(log1p)(FN_##F(exp)(-FN_##F(fabs)(x))));            \
        break;                                                                                     \
      default: break;                                                                              \
    }                                                                                              \
  }
FLOAT_LOOP(loop_f32, float, f)
FLOAT_LOOP(loop_f64, double, d)

/* Integer helpers take int64 so no comparison is constant for unsigned types;
 * negation wraps around like PyTorch's (computed unsigned to stay defined). */
static inline int64_t neg_i(int64_t v) { return (int64_t)(0 - (uint64_t)v); }
static inline int64_t abs_i(int64_t v) { return v < 0 ? neg_i(v) : v; }
static inline int64_t sign_i(int64_t v) { return (v > 0) - (v < 0); }
static inline int64_t relu_i(int64_t v) { return v < 0 ? 0 : v; }
static inline int64_t clamp_i(int64_t v, int64_t lo, int64_t hi) {
  int64_t m = v < lo ? lo : v;
  return m > hi ? hi : m;
}

#define INT_LOOP(NAME, T)                                                       \
  static void NAME(void *cp, char **d, const int64_t *s, int64_t n) {           \
    const wk_unary_params *c = cp;                                                         \
    const int64_t lo = c->ilo, hi = c->ihi;                                     \
    switch (c->op) {                                                            \
      case WK_UOP_neg: EACH(T, T, (T)neg_i(x)); break;                               \
      case WK_UOP_abs: EACH(T, T, (T)abs_i(x)); break;                               \
      case WK_UOP_sign: EACH(T, T, (T)sign_i(x)); break;                             \
      case WK_UOP_relu: EACH(T, T, (T)relu_i(x)); break;                             \
      case WK_UOP_clamp: EACH(T, T, (T)clamp_i(x, lo, hi)); break;                   \
      case WK_UOP_relu6:                                                        \
      case WK_UOP_hardtanh: EACH(T, T, (T)clamp_i(x, lo, hi)); break;                \
      case WK_UOP_square: EACH(T, T, (T)(int64_t)((uint64_t)x * (uint64_t)x)); break;  \
      case WK_UOP_bitwise_not: EACH(T, T, (T)~x); break;                             \
      default: break;                                                           \
    }                                                                           \
  }
INT_LOOP(loop_i8, int8_t)
INT_LOOP(loop_u8, uint8_t)
INT_LOOP(loop_i16, int16_t)
INT_LOOP(loop_i32, int32_t)
INT_LOOP(loop_i64, int64_t)

/* Predicates: any input dtype, bool output. */
#define PRED_FLOAT(T)                                        \
  do {                                                       \
    switch (c->op) {                                         \
      case WK_UOP_isnan: EACH(T, bool, x != x); break;            \
      case WK_UOP_isinf: EACH(T, bool, isinf(x) != 0); break;     \
      case WK_UOP_isfinite: EACH(T, bool, isfinite(x) != 0); break; \
      case WK_UOP_signbit: EACH(T, bool, signbit(x) != 0); break; \
      default: EACH(T, bool, x == 0); break;                 \
    }                                                        \
  } while (0)

static void loop_pred(void *cp, char **d, const int64_t *s, int64_t n) {
  const wk_unary_params *c = cp;
  switch (c->src) {
    case WK_F32: PRED_FLOAT(float); return;
    case WK_F64: PRED_FLOAT(double); return;
    default: break;
  }
  if (!wk_dtype_is_floating(c->src)) { /* integers and bool: never NaN or infinite */
    if (c->op == WK_UOP_logical_not && c->src == WK_BOOL) {
      EACH(bool, bool, !x);
    } else if (c->op == WK_UOP_logical_not) {
      for (int64_t i = 0; i < n; i++) *(bool *)(d[0] + i * s[0]) = wk_load_i64(d[1] + i * s[1], c->src) == 0;
    } else if (c->op == WK_UOP_signbit) {
      for (int64_t i = 0; i < n; i++) *(bool *)(d[0] + i * s[0]) = wk_load_i64(d[1] + i * s[1], c->src) < 0;
    } else if (c->op == WK_UOP_isfinite) {
      for (int64_t i = 0; i < n; i++) *(bool *)(d[0] + i * s[0]) = true;
    } else {
      for (int64_t i = 0; i < n; i++) *(bool *)(d[0] + i * s[0]) = false;
    }
    return;
  }
  for (int64_t i = 0; i < n; i++) { /* f16, bf16 */
    double x = wk_load_f64(d[1] + i * s[1], c->src);
    *(bool *)(d[0] + i * s[0]) = c->op == WK_UOP_isnan      ? x != x
                                 : c->op == WK_UOP_isinf    ? isinf(x) != 0
                                 : c->op == WK_UOP_isfinite ? isfinite(x) != 0
                                 : c->op == WK_UOP_signbit  ? signbit(x) != 0
                                                            : x == 0;
  }
}

static wk_loop_fn loop_for(int op, wk_dtype dt) {
  if (wk_uop_rule(op) == WK_UNARY_PRED) return loop_pred;
  switch (dt) {
    case WK_F32: return loop_f32;
    case WK_F64: return loop_f64;
    case WK_I8: return loop_i8;
    case WK_U8: return loop_u8;
    case WK_I16: return loop_i16;
    case WK_I32: return loop_i32;
    case WK_I64: return loop_i64;
    default: return NULL;
  }
}

/* ---- kernels ---------------------------------------------------------------------- */
static bool same_strides(const wk_tensor *a, const wk_tensor *b) {
  int nd = wk_tensor_dim(a);
  return nd == wk_tensor_dim(b) &&
         memcmp(wk_tensor_strides(a), wk_tensor_strides(b), sizeof(int64_t) * (size_t)nd) == 0;
}

static wk_status k_unary(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const wk_unary_variant *info = ctx->user;
  const char *name = WK_OPNAME;
  wk_tensor *self = WK_ARG_T(0), *target = NULL;
  if (info->mode == CPU_INPLACE) target = self;
  if (info->mode == CPU_OUT) target = WK_ARG_T(1); /* name.out(Tensor self, *, Tensor(a!) out) */
  wk_unary_params c;
  wk_dtype rt = wk_kernel_meta(ctx, 0)->dtype;
  wk_unary_params_read(&c, info->op, args, rt);
  wk_status s;
  if (wk_uop_is_identity(c.op, wk_tensor_dtype(self))) {
    if (info->mode == CPU_INPLACE) {
      wk_tensor_bump_version(self);
      outs[0] = WK_VT(self);
      return WK_OK;
    }
    return cpu_deliver(name, info->mode, wk_clone(self), target, outs);
  }
  /* cd: the dtype the loop reads; od: the dtype it writes. */
  bool pred = wk_uop_rule(c.op) == WK_UNARY_PRED;
  wk_dtype cd = pred ? wk_tensor_dtype(self) : wk_dtype_is_floating(rt) ? wk_compute_dtype(rt) : rt;
  wk_dtype od = pred ? WK_BOOL : cd;
  wk_tensor *x = wk_kernel_cast(self, cd), *dst = NULL;
  if (!x) return wk_last_error();
  bool fresh = x != self; /* x is a private converted copy */
  bool direct = false;
  if (info->mode != CPU_FUNCTIONAL && wk_tensor_dtype(target) == od && od == rt && cpu_same_shape(target, x) &&
      (wk_tensor_is_contiguous(target) || wk_suggest_memory_format(target) == WK_CHANNELS_LAST) &&
      (!wk_tensor_same_storage(target, x) ||
       (wk_tensor_data(target) == wk_tensor_data(x) && same_strides(target, x)))) {
    dst = wk_retain(target); /* write the result in place: no temporary, no copy */
    direct = true;
  } else if (fresh && !pred && wk_tensor_is_contiguous(x)) {
    dst = wk_retain(x);
  } else {
    dst = cpu_empty_like_format(wk_tensor_sizes(self), wk_tensor_dim(self), od, &self, 1); /* self's format */
  }
  if (!dst) {
    wk_release(x);
    return wk_last_error();
  }
  c.src = wk_tensor_dtype(x);
  wk_tensor *ops[2] = {dst, x};
  wk_loop_fn fn = loop_for(c.op, od);
  wk_iter it;
  s = fn ? wk_iter_init(&it, name, ops, 2)
         : wk_error(WK_ERR_INTERNAL, "%s: no loop for dtype %s", name, wk_dtype_name(od));
  if (!s) wk_iter_run(&it, fn, &c);
  wk_release(x);
  if (s) {
    wk_release(dst);
    return s;
  }
  if (direct) {
    wk_release(dst);
    wk_tensor_bump_version(target);
    outs[0] = WK_VT(target);
    return WK_OK;
  }
  /* f16/bf16 computed in f32 go back to their dtype, unless the target takes
   * the f32 values directly and rounds them the same way. */
  if (od != rt && !(info->mode != CPU_FUNCTIONAL && wk_tensor_dtype(target) == rt)) {
    wk_tensor *conv = wk_to_dtype(dst, rt);
    wk_release(dst);
    dst = conv;
  }
  return cpu_deliver(name, info->mode, dst, target, outs);
}

/* ---- registration ----------------------------------------------------------------- */
wk_status cpu_register_unary(void) {
  wk_status s = WK_OK;
  for (int i = 0; i < WK_UNARY_VARIANT_COUNT && !s; i++) s = cpu_reg(wk_unary_variants[i].name, k_unary, (void *)&wk_unary_variants[i]);
  return s;
}
