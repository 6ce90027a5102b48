/* cpu plugin: unary pointwise ops (neg ... logical_not, each functional, in
 * place and out=), leaky_relu, gelu, clamp, isnan, isinf and nan_to_num, with
 * PyTorch's dtype rules: float ops promote integers to float32, sign-like ops
 * keep integer dtypes, predicates give bool. f16/bf16 compute in f32. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

/* The inner loops below are plain loops over contiguous data; ask GCC to
 * vectorise them at -O2 too (clang does by default). No errno is read here. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "no-math-errno")
#endif

typedef enum {
  U_NEG, U_ABS, U_EXP, U_LOG, U_LOG1P, U_SQRT, U_RSQRT, U_SIN, U_COS, U_TANH, U_SIGMOID, U_RELU, U_SILU,
  U_SIGN, U_FLOOR, U_CEIL, U_ROUND, U_LOGICAL_NOT,
  U_LEAKY_RELU, U_GELU, U_CLAMP, U_ISNAN, U_ISINF, U_NAN_TO_NUM,
  U_GELU_TANH, U_FILL /* internal: gelu(approximate="tanh"); clamp with a NaN bound */
} uop;

/* Op names by uop (the unary family's schema names come from here). */
static const char *const g_names[] = {"neg",   "abs",     "exp",        "log",   "log1p", "sqrt",  "rsqrt",
                                      "sin",   "cos",     "tanh",       "sigmoid", "relu", "silu", "sign",
                                      "floor", "ceil",    "round",      "logical_not",
                                      "leaky_relu", "gelu", "clamp",    "isnan", "isinf", "nan_to_num",
                                      "gelu",  "clamp"};

/* How an op treats dtypes. */
typedef enum {
  K_FLOAT,      /* integers and bool promote to float32 */
  K_FLOAT_ONLY, /* integers and bool are refused (as PyTorch's kernels do) */
  K_KEEP,       /* integers keep their dtype */
  K_ROUNDING,   /* integers pass through unchanged; bool refused */
  K_PRED        /* any dtype in, bool out */
} ukind;

static ukind kind_of(uop op) {
  switch (op) {
    case U_EXP: case U_LOG: case U_LOG1P: case U_SQRT: case U_RSQRT: case U_SIN: case U_COS:
    case U_TANH: case U_SIGMOID:
      return K_FLOAT;
    case U_SILU: case U_LEAKY_RELU: case U_GELU: case U_GELU_TANH:
      return K_FLOAT_ONLY;
    case U_FLOOR: case U_CEIL: case U_ROUND: case U_NAN_TO_NUM:
      return K_ROUNDING;
    case U_LOGICAL_NOT: case U_ISNAN: case U_ISINF:
      return K_PRED;
    default:
      return K_KEEP; /* neg abs sign relu clamp */
  }
}

typedef struct {
  uop op;
  cpu_mode mode;
} uinfo;

/* What a loop needs: the op, its parameters, the input dtype (predicates). */
typedef struct {
  uop op;
  wk_dtype src;
  double p, q, r;   /* leaky slope | clamp lo, hi | nan, posinf, neginf | fill value */
  int64_t ilo, ihi; /* integer clamp bounds */
} uctx;

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

/* Floating loops (T = float with F = f, or double with F = d). */
#define FLOAT_LOOP(NAME, T, F)                                                                     \
  static void NAME(void *cp, char **d, const int64_t *s, int64_t n) {                              \
    const uctx *c = cp;                                                                            \
    const T p = (T)c->p, q = (T)c->q, r = (T)c->r;                                                 \
    const T one = 1, half = (T)0.5;                                                                \
    switch (c->op) {                                                                               \
      case U_NEG: EACH(T, T, -x); break;                                                           \
      case U_ABS: EACH(T, T, FN_##F(fabs)(x)); break;                                              \
      case U_EXP: EACH(T, T, FN_##F(exp)(x)); break;                                               \
      case U_LOG: EACH(T, T, FN_##F(log)(x)); break;                                               \
      case U_LOG1P: EACH(T, T, FN_##F(log1p)(x)); break;                                           \
      case U_SQRT: EACH(T, T, FN_##F(sqrt)(x)); break;                                             \
      case U_RSQRT: EACH(T, T, one / FN_##F(sqrt)(x)); break;                                      \
      case U_SIN: EACH(T, T, FN_##F(sin)(x)); break;                                               \
      case U_COS: EACH(T, T, FN_##F(cos)(x)); break;                                               \
      case U_TANH: EACH(T, T, FN_##F(tanh)(x)); break;                                             \
      case U_SIGMOID: EACH(T, T, one / (one + FN_##F(exp)(-x))); break;                            \
      case U_RELU: EACH(T, T, x < 0 ? 0 : x); break;                                               \
      case U_SILU: EACH(T, T, x / (one + FN_##F(exp)(-x))); break;                                 \
      case U_SIGN: EACH(T, T, (T)((x > 0) - (x < 0))); break;                                      \
      case U_FLOOR: EACH(T, T, FN_##F(floor)(x)); break;                                           \
      case U_CEIL: EACH(T, T, FN_##F(ceil)(x)); break;                                             \
      case U_ROUND: EACH(T, T, FN_##F(rint)(x)); break; /* half to even */                         \
      case U_LEAKY_RELU: EACH(T, T, x > 0 ? x : x * p); break;                                     \
      case U_GELU: EACH(T, T, half * x * (one + FN_##F(erf)(x * (T)M_SQRT1_2))); break;           \
      case U_GELU_TANH: {                                                                          \
        const T beta = (T)(M_SQRT2 * M_2_SQRTPI * 0.5), kappa = (T)0.044715;                       \
        EACH(T, T, half * x * (one + FN_##F(tanh)(beta * (x + kappa * x * x * x))));               \
        break;                                                                                     \
      }                                                                                            \
      case U_CLAMP: EACH(T, T, (x < p ? p : x) > q ? q : (x < p ? p : x)); break;                  \
      case U_FILL: EACH(T, T, p + x * 0); break; /* p is NaN */                                                 \
      case U_NAN_TO_NUM:                                                                           \
        EACH(T, T, x != x ? p : x == (T)INFINITY ? q : x == -(T)INFINITY ? r : x);                 \
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
    const uctx *c = cp;                                                         \
    const int64_t lo = c->ilo, hi = c->ihi;                                     \
    switch (c->op) {                                                            \
      case U_NEG: EACH(T, T, (T)neg_i(x)); break;                               \
      case U_ABS: EACH(T, T, (T)abs_i(x)); break;                               \
      case U_SIGN: EACH(T, T, (T)sign_i(x)); break;                             \
      case U_RELU: EACH(T, T, (T)relu_i(x)); break;                             \
      case U_CLAMP: EACH(T, T, (T)clamp_i(x, lo, hi)); break;                   \
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
      case U_ISNAN: EACH(T, bool, x != x); break;            \
      case U_ISINF: EACH(T, bool, isinf(x) != 0); break;     \
      default: EACH(T, bool, x == 0); break;                 \
    }                                                        \
  } while (0)

static void loop_pred(void *cp, char **d, const int64_t *s, int64_t n) {
  const uctx *c = cp;
  switch (c->src) {
    case WK_F32: PRED_FLOAT(float); return;
    case WK_F64: PRED_FLOAT(double); return;
    default: break;
  }
  if (!wk_dtype_is_floating(c->src)) { /* integers and bool: never NaN or infinite */
    if (c->op == U_LOGICAL_NOT && c->src == WK_BOOL) {
      EACH(bool, bool, !x);
    } else if (c->op == U_LOGICAL_NOT) {
      for (int64_t i = 0; i < n; i++) *(bool *)(d[0] + i * s[0]) = wk_load_i64(d[1] + i * s[1], c->src) == 0;
    } else {
      for (int64_t i = 0; i < n; i++) *(bool *)(d[0] + i * s[0]) = false;
    }
    return;
  }
  for (int64_t i = 0; i < n; i++) { /* f16, bf16 */
    double x = wk_load_f64(d[1] + i * s[1], c->src);
    *(bool *)(d[0] + i * s[0]) = c->op == U_ISNAN ? x != x : c->op == U_ISINF ? isinf(x) != 0 : x == 0;
  }
}

static wk_loop_fn loop_for(uop op, wk_dtype dt) {
  if (kind_of(op) == K_PRED) return loop_pred;
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

/* The largest finite value of a floating dtype (nan_to_num's default posinf). */
static double dtype_max(wk_dtype dt) {
  switch (dt) {
    case WK_F64: return DBL_MAX;
    case WK_F16: return 65504.0;
    case WK_BF16: return 3.3895313892515355e38;
    default: return FLT_MAX;
  }
}

/* Integer clamp bound from a Scalar, checked against the result dtype's range. */
static wk_status int_bound(const char *name, const wk_value *v, wk_dtype rt, int64_t *out) {
  int64_t x = v->tag == WK_V_INT ? v->u.i : v->tag == WK_V_BOOL ? (int64_t)v->u.b : (int64_t)v->u.f;
  int64_t lo = INT64_MIN, hi = INT64_MAX;
  switch (rt) {
    case WK_I8: lo = INT8_MIN; hi = INT8_MAX; break;
    case WK_U8: lo = 0; hi = UINT8_MAX; break;
    case WK_I16: lo = INT16_MIN; hi = INT16_MAX; break;
    case WK_I32: lo = INT32_MIN; hi = INT32_MAX; break;
    default: break;
  }
  if (x < lo || x > hi)
    return wk_error(WK_ERR_INVALID_ARG, "%s: value %lld cannot be converted to type %s without overflow", name,
                    (long long)x, wk_dtype_name(rt));
  *out = x;
  return WK_OK;
}

/* Reads the op's extra arguments into c and decides the result dtype *rt.
 * Returns an error for dtypes or arguments PyTorch refuses. */
static wk_status setup(const char *name, const wk_value *args, uctx *c, wk_dtype *rt) {
  wk_dtype dt = wk_tensor_dtype(args[0].u.t);
  bool fl = wk_dtype_is_floating(dt);
  c->src = dt;
  *rt = dt;
  switch (c->op) {
    case U_LEAKY_RELU: c->p = wk_value_as_f64(&args[1]); break;
    case U_GELU:
      switch (wk_option_index(args[1].u.s, (const char *const[]){"none", "tanh", NULL})) {
        case 0: break;
        case 1: c->op = U_GELU_TANH; break;
        default:
          return wk_error(WK_ERR_INVALID_ARG, "%s: approximate argument must be either none or tanh, not '%s'", name,
                          args[1].u.s);
      }
      break;
    case U_NAN_TO_NUM:
      c->p = args[1].tag == WK_V_NONE ? 0.0 : args[1].u.f;
      c->q = args[2].tag == WK_V_NONE ? dtype_max(dt) : args[2].u.f;
      c->r = args[3].tag == WK_V_NONE ? -dtype_max(dt) : args[3].u.f;
      break;
    case U_CLAMP: {
      bool lo = args[1].tag != WK_V_NONE, hi = args[2].tag != WK_V_NONE;
      if (!lo && !hi) return wk_error(WK_ERR_INVALID_ARG, "%s: At least one of 'min' or 'max' must not be None", name);
      *rt = wk_result_type(args, 3);
      if (*rt == WK_BOOL)
        return wk_error(WK_ERR_DTYPE, "%s: \"clamp_scalar_cpu\" not implemented for '%s'", name, wk_dtype_torch_name(*rt));
      if (wk_dtype_is_floating(*rt)) {
        c->p = lo ? wk_value_as_f64(&args[1]) : -INFINITY;
        c->q = hi ? wk_value_as_f64(&args[2]) : INFINITY;
        if (c->p != c->p || c->q != c->q) { /* a NaN bound makes every result NaN */
          c->op = U_FILL;
          c->p = NAN;
        }
      } else {
        c->ilo = INT64_MIN;
        c->ihi = INT64_MAX;
        wk_status s = lo ? int_bound(name, &args[1], *rt, &c->ilo) : WK_OK;
        if (!s && hi) s = int_bound(name, &args[2], *rt, &c->ihi);
        if (s) return s;
      }
      return WK_OK;
    }
    default: break;
  }
  if (kind_of(c->op) == K_PRED) *rt = WK_BOOL;
  if (fl) return WK_OK;
  switch (kind_of(c->op)) {
    case K_FLOAT: *rt = WK_F32; break;
    case K_PRED: break;
    case K_FLOAT_ONLY:
      return wk_error(WK_ERR_DTYPE, "%s: \"%s_cpu\" not implemented for '%s'", name, g_names[c->op], wk_dtype_torch_name(dt));
    case K_ROUNDING:
      if (dt == WK_BOOL && c->op != U_NAN_TO_NUM)
        return wk_error(WK_ERR_DTYPE, "%s: \"%s_cpu\" not implemented for '%s'", name, g_names[c->op], wk_dtype_torch_name(dt));
      break;
    case K_KEEP:
      if (dt == WK_BOOL && c->op == U_NEG)
        return wk_error(WK_ERR_DTYPE, "%s: Negation, the `-` operator, on a bool tensor is not supported. If you are "
                        "trying to invert a mask, use the `~` or `logical_not()` operator instead.", name);
      if (dt == WK_BOOL && c->op == U_RELU)
        return wk_error(WK_ERR_DTYPE, "%s: Boolean inputs not supported for relu", name);
      break;
  }
  return WK_OK;
}

/* True when the op leaves values of this dtype unchanged (floor of an
 * integer, nan_to_num of an integer, abs/sign of a bool, relu of uint8). */
static bool is_identity(uop op, wk_dtype dt) {
  if (wk_dtype_is_floating(dt)) return false;
  ukind k = kind_of(op);
  if (k == K_ROUNDING) return true;
  if (dt == WK_BOOL) return op == U_ABS || op == U_SIGN;
  return dt == WK_U8 && (op == U_ABS || op == U_RELU);
}

static wk_status k_unary(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const uinfo *info = ctx->user;
  const char *name = WK_OPNAME;
  wk_tensor *self = WK_ARG_T(0), *target = NULL;
  if (info->mode == CPU_INPLACE) target = self;
  if (info->mode == CPU_OUT) target = WK_ARG_T(1); /* name.out(Tensor self, *, Tensor(a!) out) */
  uctx c = {info->op, WK_F32, 0, 0, 0, 0, 0};
  wk_dtype rt;
  wk_status s = setup(name, args, &c, &rt);
  if (s) return s;
  if (is_identity(c.op, wk_tensor_dtype(self))) {
    if (info->mode == CPU_INPLACE) {
      wk_tensor_bump_version(self);
      outs[0] = WK_VT(self);
      return WK_OK;
    }
    return cpu_deliver(name, info->mode, wk_clone(self), target, outs);
  }
  /* cd: the dtype the loop reads; od: the dtype it writes. */
  bool pred = kind_of(c.op) == K_PRED;
  wk_dtype cd = pred ? wk_tensor_dtype(self) : wk_dtype_is_floating(rt) ? wk_compute_dtype(rt) : rt;
  wk_dtype od = pred ? WK_BOOL : cd;
  wk_tensor *x = wk_kernel_cast(self, cd), *dst = NULL;
  if (!x) return wk_last_error();
  bool fresh = x != self; /* x is a private converted copy */
  bool direct = false;
  if (info->mode != CPU_FUNCTIONAL && wk_tensor_dtype(target) == od && od == rt && cpu_same_shape(target, x) &&
      wk_tensor_is_contiguous(target) &&
      (!wk_tensor_same_storage(target, x) ||
       (wk_tensor_data(target) == wk_tensor_data(x) && same_strides(target, x)))) {
    dst = wk_retain(target); /* write the result in place: no temporary, no copy */
    direct = true;
  } else if (fresh && !pred && wk_tensor_is_contiguous(x)) {
    dst = wk_retain(x);
  } else {
    dst = cpu_empty(wk_tensor_sizes(self), wk_tensor_dim(self), od);
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
#define N_UINFO 80
static uinfo g_infos[N_UINFO];
static int g_ninfos;

static wk_status reg(const char *name, uop op, cpu_mode mode) {
  if (g_ninfos == N_UINFO) return wk_error(WK_ERR_INTERNAL, "cpu: too many unary registrations");
  uinfo *u = &g_infos[g_ninfos++];
  *u = (uinfo){op, mode};
  return cpu_reg(name, k_unary, u);
}

wk_status cpu_register_unary(void) {
  g_ninfos = 0;
  wk_status s = WK_OK;
  char n[64];
  for (int op = U_NEG; op <= U_LOGICAL_NOT && !s; op++) {
    s = reg(g_names[op], (uop)op, CPU_FUNCTIONAL);
    snprintf(n, sizeof n, "%s_", g_names[op]);
    if (!s) s = reg(n, (uop)op, CPU_INPLACE);
    snprintf(n, sizeof n, "%s.out", g_names[op]);
    if (!s) s = reg(n, (uop)op, CPU_OUT);
  }
  static const struct {
    const char *name;
    uop op;
    cpu_mode mode;
  } other[] = {{"leaky_relu", U_LEAKY_RELU, CPU_FUNCTIONAL}, {"leaky_relu_", U_LEAKY_RELU, CPU_INPLACE},
               {"gelu", U_GELU, CPU_FUNCTIONAL},             {"clamp", U_CLAMP, CPU_FUNCTIONAL},
               {"clamp_", U_CLAMP, CPU_INPLACE},             {"isnan", U_ISNAN, CPU_FUNCTIONAL},
               {"isinf", U_ISINF, CPU_FUNCTIONAL},           {"nan_to_num", U_NAN_TO_NUM, CPU_FUNCTIONAL}};
  for (size_t i = 0; i < sizeof other / sizeof other[0] && !s; i++) s = reg(other[i].name, other[i].op, other[i].mode);
  return s;
}
