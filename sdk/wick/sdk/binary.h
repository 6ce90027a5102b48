/* Wick SDK: the two-input pointwise ops as every backend numbers, registers
 * and reads them: add, sub, div (and its rounding variants), the
 * WK_BINARY_OPS family and the WK_COMPARE_OPS of <wick/op_list.h>, in one
 * numbering; the table of every variant a backend registers (functional, in
 * place, out=, Scalar); the reading of alpha and rounding_mode; and the dtype
 * a loop computes in. The core's meta function has checked the arguments and
 * decided the result dtype. The numbering is also valid in CUDA device code. */
#ifndef WICK_SDK_BINARY_H
#define WICK_SDK_BINARY_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <wick/op_list.h>

typedef enum wk_bop {
  WK_BOP_add,
  WK_BOP_sub,
  WK_BOP_div,
  WK_BOP_div_trunc, /* div(rounding_mode="trunc") */
  WK_BOP_div_floor, /* div(rounding_mode="floor") */
#define WK__BOP(name, tags) WK_BOP_##name,
  WK_BINARY_OPS(WK__BOP) /* mul ... logical_and, logical_or: the logical ops last */
#undef WK__BOP
#define WK__BOP_CMP(name) WK_BOP_##name,
  WK_COMPARE_OPS(WK__BOP_CMP)
#undef WK__BOP_CMP
  WK_BOP_COUNT_
} wk_bop;

/* Element formulas every backend computes the same way, host and device. */
#ifdef __CUDACC__
#define WK__SDK_HD static inline __host__ __device__
#else
#define WK__SDK_HD static inline
#endif
/* PyTorch's div_floor_floating in the loop's own precision: the quotient of
 * the exact remainder's complement, with the sign of zero kept. */
#define WK__FLOOR_DIV(NAME, T, FMOD, FLOOR, COPYSIGN)  \
  WK__SDK_HD T NAME(T a, T b) {                        \
    if (b == 0) return a / b;                          \
    T mod = FMOD(a, b), div = (a - mod) / b;           \
    if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;  \
    if (div == 0) return COPYSIGN((T)0, a / b);        \
    T fl = FLOOR(div);                                 \
    if (div - fl > (T)0.5) fl += 1;                    \
    return fl;                                         \
  }
WK__FLOOR_DIV(wk_floor_div_f32, float, fmodf, floorf, copysignf)
WK__FLOOR_DIV(wk_floor_div_f64, double, fmod, floor, copysign)
#undef WK__FLOOR_DIV
/* Integer power with wrap-around (computed unsigned to stay defined); a
 * negative exponent gives 0 except for bases 1 and -1, like PyTorch's powi. */
WK__SDK_HD int64_t wk_ipow(int64_t base, int64_t exp) {
  if (exp < 0) return base == 1 ? 1 : base == -1 ? ((exp & 1) ? -1 : 1) : 0;
  uint64_t r = 1, b = (uint64_t)base;
  while (exp > 0) {
    if (exp & 1) r *= b;
    b *= b;
    exp >>= 1;
  }
  return (int64_t)r;
}

/* PyTorch's remainder (the result takes the divisor's sign) and logaddexp
 * (log(exp(a) + exp(b)) without overflow; equal infinities give themselves). */
#define WK__REM_LAE(T, FMOD, FABS, EXP, LOG1P)                                 \
  WK__SDK_HD T wk_remainder_##T(T a, T b) {                                    \
    T m = FMOD(a, b);                                                          \
    if (m != 0 && ((b < 0) != (m < 0))) m += b;                                \
    return m;                                                                  \
  }                                                                            \
  WK__SDK_HD T wk_logaddexp_##T(T a, T b) {                                    \
    if (isinf(a) && a == b) return a;                                          \
    T m = a > b ? a : b;                                                       \
    return (a != a || b != b) ? a + b : m + LOG1P(EXP(-FABS(a - b)));          \
  }
WK__REM_LAE(float, fmodf, fabsf, expf, log1pf)
WK__REM_LAE(double, fmod, fabs, exp, log1p)
#undef WK__REM_LAE
/* Integer shifts as PyTorch's: a shift by a negative count or by 64 or more
 * gives 0 (left) or the sign (right); computed on int64. */
WK__SDK_HD int64_t wk_shl_i64(int64_t a, int64_t b) {
  return (b < 0 || b >= 64) ? 0 : (int64_t)((uint64_t)a << b);
}
WK__SDK_HD int64_t wk_shr_i64(int64_t a, int64_t b) {
  return (b < 0 || b >= 64) ? (a < 0 ? -1 : 0) : a >> b;
}

/* Comparisons write bool; logical ops too (after reading their operands as numbers). */
static inline bool wk_bop_is_compare(int op) { return op >= WK_BOP_eq; }
static inline bool wk_bop_is_logical(int op) { return op == WK_BOP_logical_and || op == WK_BOP_logical_or; }

#ifndef __CUDACC__
/* A registration: op name, wk_bop, mode (0 functional, 1 in place, 2 out=:
 * the cpu and cuda plugins' mode numbers), whether `other` is a Scalar, and
 * whether alpha / rounding_mode follow it. */
typedef struct wk_binary_variant {
  const char *name;
  int op, mode;
  bool scalar, alpha, rounding;
} wk_binary_variant;

#define WK__BV_FAMILY(name, tags)                                                                   \
  {#name, WK_BOP_##name, 0, false, false, false}, {#name "_", WK_BOP_##name, 1, false, false, false}, \
      {#name ".out", WK_BOP_##name, 2, false, false, false},                                          \
      {#name ".Scalar", WK_BOP_##name, 0, true, false, false},                                        \
      {#name "_.Scalar", WK_BOP_##name, 1, true, false, false},
#define WK__BV_COMPARE(name)                                                                               \
  {#name, WK_BOP_##name, 0, false, false, false}, {#name ".Scalar", WK_BOP_##name, 0, true, false, false}, \
      {#name ".out", WK_BOP_##name, 2, false, false, false},
#define WK__BV_ARITH(name, alpha, rounding)                                                                   \
  {#name, WK_BOP_##name, 0, false, alpha, rounding}, {#name "_", WK_BOP_##name, 1, false, alpha, rounding},   \
      {#name ".out", WK_BOP_##name, 2, false, alpha, rounding},                                              \
      {#name ".Scalar", WK_BOP_##name, 0, true, alpha, rounding},                                            \
      {#name "_.Scalar", WK_BOP_##name, 1, true, alpha, rounding},
/* Every variant, for a backend's registration loop. */
static const wk_binary_variant wk_binary_variants[] = {
    WK__BV_ARITH(add, true, false) WK__BV_ARITH(sub, true, false) WK__BV_ARITH(div, false, true)
        WK_BINARY_OPS(WK__BV_FAMILY) WK_COMPARE_OPS(WK__BV_COMPARE)};
#define WK_BINARY_VARIANT_COUNT ((int)(sizeof wk_binary_variants / sizeof wk_binary_variants[0]))
#undef WK__BV_FAMILY
#undef WK__BV_COMPARE
#undef WK__BV_ARITH

/* The op's name in messages ("div" for its rounding variants). */
static inline const char *wk_bop_name(int op) {
  static const char *const names[] = {"add", "sub", "div", "div", "div",
#define WK__BOP_NAME(name, ...) #name,
                                      WK_BINARY_OPS(WK__BOP_NAME) WK_COMPARE_OPS(WK__BOP_NAME)
#undef WK__BOP_NAME
  };
  return op >= 0 && op < WK_BOP_COUNT_ ? names[op] : "?";
}

/* What a call asks beyond its operands: the op (div's rounding mode picks
 * its variant), alpha as double and integer, and the index of out= . */
typedef struct wk_binary_call {
  int op;
  double alpha_f;
  int64_t alpha_i;
  int out_index;
} wk_binary_call;

static inline void wk_binary_call_read(wk_binary_call *c, const wk_binary_variant *v, const wk_value *args) {
  c->op = v->op;
  c->alpha_f = 1.0;
  c->alpha_i = 1;
  c->out_index = 2;
  if (v->alpha) {
    c->alpha_f = wk_value_as_f64(&args[2]);
    c->alpha_i = args[2].tag == WK_V_INT ? args[2].u.i : wk_f64_to_i64_sat(c->alpha_f);
    c->out_index = 3;
  }
  if (v->rounding) {
    if (args[2].tag == WK_V_STR) /* "trunc" or "floor": the meta function refused anything else */
      c->op = strcmp(args[2].u.s, "trunc") == 0 ? WK_BOP_div_trunc : WK_BOP_div_floor;
    c->out_index = 3;
  }
}

/* The dtype a loop computes op in for result dtype rt (the operands'
 * promoted dtype for comparisons and logical ops): f32/f64 for floating
 * results (f16/bf16 compute in f32), i64 for integer and bool arithmetic,
 * f64 for logical ops. */
static inline wk_dtype wk_bop_compute_dtype(int op, wk_dtype rt) {
  if (wk_bop_is_logical(op)) return WK_F64;
  wk_dtype cd = wk_compute_dtype(rt);
  if (cd == WK_BOOL && !wk_bop_is_compare(op)) cd = WK_I64;
  if (!wk_bop_is_compare(op) && !wk_dtype_is_floating(cd) && (op == WK_BOP_div_trunc || op == WK_BOP_div_floor))
    cd = WK_I64;
  return cd;
}
#endif /* !__CUDACC__ */

#endif
