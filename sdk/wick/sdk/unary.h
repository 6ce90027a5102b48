/* Wick SDK: the one-input pointwise ops as every backend numbers and reads
 * them: the unary family of <wick/op_list.h> in its order, then leaky_relu,
 * gelu, clamp, isnan, isinf and nan_to_num; each op's dtype rule; and the
 * reading of its extra arguments into loop parameters. The core's meta
 * function has already checked the arguments and decided the result dtype,
 * so nothing here reports errors. The numbering is also valid in CUDA device
 * code (C++): only the enum and wk_uop_rule are outside the C-only part. */
#ifndef WICK_SDK_UNARY_H
#define WICK_SDK_UNARY_H

#include <stdbool.h>
#include <stdint.h>
#include <wick/op_list.h>

typedef enum wk_uop {
#define WK__UOP(name, tags, rule) WK_UOP_##name,
  WK_UNARY_OPS(WK__UOP)
#undef WK__UOP
  WK_UOP_leaky_relu,
  WK_UOP_gelu,
  WK_UOP_clamp,
  WK_UOP_isnan,
  WK_UOP_isinf,
  WK_UOP_nan_to_num,
  /* variants chosen by the arguments (wk_unary_params_read) */
  WK_UOP_gelu_tanh, /* gelu(approximate="tanh") */
  WK_UOP_fill       /* clamp with a NaN bound: every result is p (NaN) */
} wk_uop;

/* Number of ops in the unary family (WK_UOP_neg .. the last row of WK_UNARY_OPS). */
#define WK_UOP_FAMILY_COUNT ((int)WK_UOP_leaky_relu)

/* The op's dtype rule: WK_UNARY_FLOAT ... WK_UNARY_PRED (<wick/op_list.h>). */
static inline int wk_uop_rule(int op) {
#define WK__UOP_RULE(name, tags, rule) rule,
  static const unsigned char rules[] = {WK_UNARY_OPS(WK__UOP_RULE)};
#undef WK__UOP_RULE
  if (op < WK_UOP_FAMILY_COUNT) return rules[op];
  switch (op) {
    case WK_UOP_leaky_relu: case WK_UOP_gelu: case WK_UOP_gelu_tanh: return WK_UNARY_FLOAT_ONLY;
    case WK_UOP_nan_to_num: return WK_UNARY_ROUNDING;
    case WK_UOP_isnan: case WK_UOP_isinf: return WK_UNARY_PRED;
    default: return WK_UNARY_KEEP; /* clamp, fill */
  }
}

#ifndef __CUDACC__
#include <float.h>
#include <math.h>
#include <string.h>

/* The family's op names in wk_uop order ("neg", ...), for registration. */
static inline const char *wk_uop_family_name(int op) {
#define WK__UOP_NAME(name, tags, rule) #name,
  static const char *const names[] = {WK_UNARY_OPS(WK__UOP_NAME)};
#undef WK__UOP_NAME
  return op >= 0 && op < WK_UOP_FAMILY_COUNT ? names[op] : "";
}

/* A registration: op name, wk_uop, mode (0 functional, 1 in place, 2 out=:
 * the cpu and cuda plugins' mode numbers). */
typedef struct wk_unary_variant {
  const char *name;
  int op, mode;
} wk_unary_variant;
#define WK__UV_FAMILY(name, tags, rule) \
  {#name, WK_UOP_##name, 0}, {#name "_", WK_UOP_##name, 1}, {#name ".out", WK_UOP_##name, 2},
/* Every variant, for a backend's registration loop. */
static const wk_unary_variant wk_unary_variants[] = {
    WK_UNARY_OPS(WK__UV_FAMILY){"leaky_relu", WK_UOP_leaky_relu, 0},
    {"leaky_relu_", WK_UOP_leaky_relu, 1},
    {"gelu", WK_UOP_gelu, 0},
    {"clamp", WK_UOP_clamp, 0},
    {"clamp_", WK_UOP_clamp, 1},
    {"isnan", WK_UOP_isnan, 0},
    {"isinf", WK_UOP_isinf, 0},
    {"nan_to_num", WK_UOP_nan_to_num, 0}};
#undef WK__UV_FAMILY
#define WK_UNARY_VARIANT_COUNT ((int)(sizeof wk_unary_variants / sizeof wk_unary_variants[0]))

/* What a loop needs: the op (possibly a variant), the input dtype, and its
 * parameters: p leaky slope | clamp low | nan_to_num nan | fill value;
 * q clamp high | nan_to_num posinf; r nan_to_num neginf; ilo, ihi integer
 * clamp bounds. */
typedef struct wk_unary_params {
  int op;
  wk_dtype src;
  double p, q, r;
  int64_t ilo, ihi;
} wk_unary_params;

/* The largest finite value of a floating dtype (nan_to_num's default posinf). */
static inline double wk_dtype_max_finite(wk_dtype dt) {
  switch (dt) {
    case WK_F64: return DBL_MAX;
    case WK_F16: return 65504.0;
    case WK_BF16: return 3.3895313892515355e38;
    default: return FLT_MAX;
  }
}

/* Fills *c for op on the boxed args of its call, whose result dtype the meta
 * function decided (rt). */
static inline void wk_unary_params_read(wk_unary_params *c, int op, const wk_value *args, wk_dtype rt) {
  wk_dtype dt = wk_tensor_dtype(args[0].u.t);
  const wk_value *a1 = &args[1], *a2 = &args[2];
  memset(c, 0, sizeof *c);
  c->op = op;
  c->src = dt;
  switch (op) {
    case WK_UOP_leaky_relu: c->p = wk_value_as_f64(a1); break;
    case WK_UOP_gelu:
      if (strcmp(a1->u.s, "tanh") == 0) c->op = WK_UOP_gelu_tanh;
      break;
    case WK_UOP_nan_to_num:
      c->p = a1->tag == WK_V_NONE ? 0.0 : a1->u.f;
      c->q = a2->tag == WK_V_NONE ? wk_dtype_max_finite(dt) : a2->u.f;
      c->r = args[3].tag == WK_V_NONE ? -wk_dtype_max_finite(dt) : args[3].u.f;
      break;
    case WK_UOP_clamp: {
      bool lo = a1->tag != WK_V_NONE, hi = a2->tag != WK_V_NONE;
      if (wk_dtype_is_floating(rt)) {
        c->p = lo ? wk_value_as_f64(a1) : -INFINITY;
        c->q = hi ? wk_value_as_f64(a2) : INFINITY;
        if (c->p != c->p || c->q != c->q) { /* a NaN bound makes every result NaN */
          c->op = WK_UOP_fill;
          c->p = NAN;
        }
      } else { /* integer bounds (the meta function checked they fit rt) */
        c->ilo = !lo ? INT64_MIN : a1->tag == WK_V_INT ? a1->u.i : a1->tag == WK_V_BOOL ? (int64_t)a1->u.b : (int64_t)a1->u.f;
        c->ihi = !hi ? INT64_MAX : a2->tag == WK_V_INT ? a2->u.i : a2->tag == WK_V_BOOL ? (int64_t)a2->u.b : (int64_t)a2->u.f;
      }
      break;
    }
    default: break;
  }
}

/* True when op leaves values of dtype dt unchanged (floor of an integer,
 * nan_to_num of an integer, abs/sign of a bool, relu or abs of uint8): a
 * backend copies instead of computing. */
static inline bool wk_uop_is_identity(int op, wk_dtype dt) {
  if (wk_dtype_is_floating(dt)) return false;
  if (wk_uop_rule(op) == WK_UNARY_ROUNDING) return true;
  if (dt == WK_BOOL) return op == WK_UOP_abs || op == WK_UOP_sign;
  return dt == WK_U8 && (op == WK_UOP_abs || op == WK_UOP_relu);
}
#endif /* !__CUDACC__ */

#endif
