/* Wick SDK: the one-input pointwise ops as every backend numbers and reads
 * them: the unary family of <wick/op_list.h> in its order, then leaky_relu,
 * gelu, clamp, isnan, isinf, nan_to_num, softplus, elu/celu and hardtanh;
 * each op's dtype rule; and the
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
  WK_UOP_softplus,
  WK_UOP_elu,
  WK_UOP_celu, /* read as elu(alpha, 1, 1/alpha) */
  WK_UOP_hardtanh,
  /* variants chosen by the arguments (wk_unary_params_read) */
  WK_UOP_gelu_tanh, /* gelu(approximate="tanh") */
  WK_UOP_fill       /* clamp with a NaN bound: every result is p (NaN) */
} wk_uop;

/* selu's constants (PyTorch's, from the SELU paper). */
#define WK_SELU_ALPHA 1.6732632423543772848170429916717
#define WK_SELU_SCALE 1.0507009873554804934193349852946

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
    case WK_UOP_softplus: case WK_UOP_elu: case WK_UOP_celu: return WK_UNARY_FLOAT_ONLY;
    case WK_UOP_nan_to_num: return WK_UNARY_ROUNDING;
    case WK_UOP_isnan: case WK_UOP_isinf: return WK_UNARY_PRED;
    default: return WK_UNARY_KEEP; /* clamp, fill */
  }
}

#ifndef __CUDACC__
#include <float.h>
#include <math.h>
#include <string.h>

/* erfinv in double: PyTorch's calc_erfinv (a rational first guess, two
 * Newton-Raphson steps on erf). NaN outside [-1, 1], +-inf at +-1. */
static inline double wk_erfinv_f64(double y) {
  static const double a[4] = {0.886226899, -1.645349621, 0.914624893, -0.140543331};
  static const double b[4] = {-2.118377725, 1.442710462, -0.329097515, 0.012229801};
  static const double c[4] = {-1.970840454, -1.624906493, 3.429567803, 1.641345311};
  static const double d[2] = {3.543889200, 1.637067800};
  double ya = fabs(y), x;
  if (ya > 1.0) return NAN;
  if (ya == 1.0) return copysign(INFINITY, y);
  if (ya <= 0.7) {
    double z = y * y;
    double num = ((a[3] * z + a[2]) * z + a[1]) * z + a[0];
    double den = (((b[3] * z + b[2]) * z + b[1]) * z + b[0]) * z + 1.0;
    x = y * num / den;
  } else {
    double z = sqrt(-log((1.0 - ya) / 2.0));
    double num = ((c[3] * z + c[2]) * z + c[1]) * z + c[0];
    double den = (d[1] * z + d[0]) * z + 1.0;
    x = copysign(num, y) / den;
  }
  x = x - (erf(x) - y) / (M_2_SQRTPI * exp(-x * x));
  x = x - (erf(x) - y) / (M_2_SQRTPI * exp(-x * x));
  return x;
}

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
    {"nan_to_num", WK_UOP_nan_to_num, 0},
    {"softplus", WK_UOP_softplus, 0},
    {"elu", WK_UOP_elu, 0},
    {"elu_", WK_UOP_elu, 1},
    {"celu", WK_UOP_celu, 0},
    {"celu_", WK_UOP_celu, 1},
    {"hardtanh", WK_UOP_hardtanh, 0},
    {"hardtanh_", WK_UOP_hardtanh, 1}};
#undef WK__UV_FAMILY
#define WK_UNARY_VARIANT_COUNT ((int)(sizeof wk_unary_variants / sizeof wk_unary_variants[0]))

/* What a loop needs: the op (possibly a variant), the input dtype, and its
 * parameters: p leaky slope | clamp/hardtanh low | nan_to_num nan | fill
 * value | softplus beta | elu alpha; q clamp/hardtanh high | nan_to_num
 * posinf | softplus threshold | elu scale; r nan_to_num neginf | elu
 * input_scale; ilo, ihi integer clamp/hardtanh/relu6 bounds. */
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
  if (op == WK_UOP_bitwise_not && dt == WK_BOOL) c->op = WK_UOP_logical_not; /* ~ of a bool is not */
  switch (op) {
    case WK_UOP_leaky_relu: c->p = wk_value_as_f64(a1); break;
    case WK_UOP_softplus:
      c->p = wk_value_as_f64(a1);
      c->q = wk_value_as_f64(a2);
      break;
    case WK_UOP_elu:
      c->p = wk_value_as_f64(a1);
      c->q = wk_value_as_f64(a2);
      c->r = wk_value_as_f64(&args[3]);
      break;
    case WK_UOP_celu: /* celu(alpha) = elu(alpha, 1, 1/alpha) */
      c->op = WK_UOP_elu;
      c->p = wk_value_as_f64(a1);
      c->q = 1.0;
      c->r = 1.0 / c->p;
      break;
    case WK_UOP_relu6:
      c->p = 0.0, c->q = 6.0, c->ilo = 0, c->ihi = 6;
      break;
    case WK_UOP_hardtanh:
      c->p = wk_value_as_f64(a1);
      c->q = wk_value_as_f64(a2);
      c->ilo = a1->tag == WK_V_INT ? a1->u.i : (int64_t)c->p; /* integers: the bounds cast (truncated) */
      c->ihi = a2->tag == WK_V_INT ? a2->u.i : (int64_t)c->q;
      break;
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
