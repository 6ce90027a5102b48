/* cuda unary pointwise family: neg ... logical_not (functional, in place,
 * out=), leaky_relu, gelu, clamp, isnan, isinf, nan_to_num, with the cpu
 * plugin's dtype rules: float ops promote integers to float32, sign-like ops
 * keep integer dtypes (computed in int64 on the device), predicates give
 * bool; f16/bf16 compute in f32. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cuda_kernels.h"

static const char *const g_names[] = {"neg",   "abs",   "exp",        "log",         "log1p",      "sqrt", "rsqrt",
                                      "sin",   "cos",   "tanh",       "sigmoid",     "relu",       "silu", "sign",
                                      "floor", "ceil",  "round",      "logical_not", "leaky_relu", "gelu", "clamp",
                                      "isnan", "isinf", "nan_to_num", "gelu",        "clamp"};

typedef enum { K_FLOAT, K_FLOAT_ONLY, K_KEEP, K_ROUNDING, K_PRED } ukind;

static ukind kind_of(int op) {
  switch (op) {
    case CUDA_U_EXP:
    case CUDA_U_LOG:
    case CUDA_U_LOG1P:
    case CUDA_U_SQRT:
    case CUDA_U_RSQRT:
    case CUDA_U_SIN:
    case CUDA_U_COS:
    case CUDA_U_TANH:
    case CUDA_U_SIGMOID:
      return K_FLOAT;
    case CUDA_U_SILU:
    case CUDA_U_LEAKY_RELU:
    case CUDA_U_GELU:
    case CUDA_U_GELU_TANH:
      return K_FLOAT_ONLY;
    case CUDA_U_FLOOR:
    case CUDA_U_CEIL:
    case CUDA_U_ROUND:
    case CUDA_U_NAN_TO_NUM:
      return K_ROUNDING;
    case CUDA_U_LOGICAL_NOT:
    case CUDA_U_ISNAN:
    case CUDA_U_ISINF:
      return K_PRED;
    default:
      return K_KEEP;
  }
}

typedef struct {
  int op;
  cuda_mode mode;
} uinfo;

typedef struct {
  int op;
  double p, q, r;
  int64_t ilo, ihi;
} uctx;

static double dtype_max(wk_dtype dt) {
  switch (dt) {
    case WK_F64:
      return DBL_MAX;
    case WK_F16:
      return 65504.0;
    case WK_BF16:
      return 3.3895313892515355e38;
    default:
      return FLT_MAX;
  }
}

static wk_status int_bound(const char *name, const wk_value *v, wk_dtype rt, int64_t *out) {
  int64_t x = v->tag == WK_V_INT ? v->u.i : v->tag == WK_V_BOOL ? (int64_t)v->u.b : (int64_t)v->u.f;
  int64_t lo = INT64_MIN, hi = INT64_MAX;
  switch (rt) {
    case WK_I8:
      lo = INT8_MIN;
      hi = INT8_MAX;
      break;
    case WK_U8:
      lo = 0;
      hi = UINT8_MAX;
      break;
    case WK_I16:
      lo = INT16_MIN;
      hi = INT16_MAX;
      break;
    case WK_I32:
      lo = INT32_MIN;
      hi = INT32_MAX;
      break;
    default:
      break;
  }
  if (x < lo || x > hi)
    return wk_error(WK_ERR_INVALID_ARG, "%s: value %lld cannot be converted to type %s without overflow", name,
                    (long long)x, wk_dtype_name(rt));
  *out = x;
  return WK_OK;
}

/* The cpu plugin's setup(): extra arguments, result dtype, refusals. */
static wk_status setup(const char *name, const wk_value *args, uctx *c, wk_dtype *rt) {
  wk_dtype dt = wk_tensor_dtype(args[0].u.t);
  bool fl = wk_dtype_is_floating(dt);
  *rt = dt;
  switch (c->op) {
    case CUDA_U_LEAKY_RELU:
      c->p = wk_value_as_f64(&args[1]);
      break;
    case CUDA_U_GELU:
      switch (wk_option_index(args[1].u.s, (const char *const[]){"none", "tanh", NULL})) {
        case 0: break;
        case 1: c->op = CUDA_U_GELU_TANH; break;
        default:
          return wk_error(WK_ERR_INVALID_ARG, "%s: approximate argument must be either none or tanh, not '%s'", name,
                          args[1].u.s);
      }
      break;
    case CUDA_U_NAN_TO_NUM:
      c->p = args[1].tag == WK_V_NONE ? 0.0 : args[1].u.f;
      c->q = args[2].tag == WK_V_NONE ? dtype_max(dt) : args[2].u.f;
      c->r = args[3].tag == WK_V_NONE ? -dtype_max(dt) : args[3].u.f;
      break;
    case CUDA_U_CLAMP: {
      bool lo = args[1].tag != WK_V_NONE, hi = args[2].tag != WK_V_NONE;
      if (!lo && !hi) return wk_error(WK_ERR_INVALID_ARG, "%s: At least one of 'min' or 'max' must not be None", name);
      *rt = wk_result_type(args, 3);
      if (*rt == WK_BOOL)
        return wk_error(WK_ERR_DTYPE, "%s: \"clamp_scalar_cpu\" not implemented for '%s'", name, wk_dtype_torch_name(*rt));
      if (wk_dtype_is_floating(*rt)) {
        c->p = lo ? wk_value_as_f64(&args[1]) : -INFINITY;
        c->q = hi ? wk_value_as_f64(&args[2]) : INFINITY;
        if (c->p != c->p || c->q != c->q) { /* a NaN bound makes every result NaN */
          c->op = CUDA_U_FILL;
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
    default:
      break;
  }
  if (kind_of(c->op) == K_PRED) *rt = WK_BOOL;
  if (fl) return WK_OK;
  switch (kind_of(c->op)) {
    case K_FLOAT:
      *rt = WK_F32;
      break;
    case K_PRED:
      break;
    case K_FLOAT_ONLY:
      return wk_error(WK_ERR_DTYPE, "%s: \"%s_cpu\" not implemented for '%s'", name, g_names[c->op], wk_dtype_torch_name(dt));
    case K_ROUNDING:
      if (dt == WK_BOOL && c->op != CUDA_U_NAN_TO_NUM)
        return wk_error(WK_ERR_DTYPE, "%s: \"%s_cpu\" not implemented for '%s'", name, g_names[c->op], wk_dtype_torch_name(dt));
      break;
    case K_KEEP:
      if (dt == WK_BOOL && c->op == CUDA_U_NEG)
        return wk_error(WK_ERR_DTYPE,
                        "%s: Negation, the `-` operator, on a bool tensor is not supported. If you are "
                        "trying to invert a mask, use the `~` or `logical_not()` operator instead.",
                        name);
      if (dt == WK_BOOL && c->op == CUDA_U_RELU)
        return wk_error(WK_ERR_DTYPE, "%s: Boolean inputs not supported for relu", name);
      break;
  }
  return WK_OK;
}

static bool is_identity(int op, wk_dtype dt) {
  if (wk_dtype_is_floating(dt)) return false;
  ukind k = kind_of(op);
  if (k == K_ROUNDING) return true;
  if (dt == WK_BOOL) return op == CUDA_U_ABS || op == CUDA_U_SIGN;
  return dt == WK_U8 && (op == CUDA_U_ABS || op == CUDA_U_RELU);
}

static wk_status k_unary(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const uinfo *info = ctx->user;
  const char *name = WK_OPNAME;
  wk_tensor *self = WK_ARG_T(0), *target = NULL;
  if (info->mode == CUDA_INPLACE) target = self;
  if (info->mode == CUDA_OUT) target = WK_ARG_T(1);
  uctx c = {info->op, 0, 0, 0, 0, 0};
  wk_dtype rt;
  wk_status s = setup(name, args, &c, &rt);
  if (s) return s;
  wk_device dev = ctx->device;
  if ((s = cuda_enter(name, dev))) return s;
  if (is_identity(c.op, wk_tensor_dtype(self))) {
    if (info->mode == CUDA_INPLACE) {
      wk_tensor_bump_version(self);
      outs[0] = WK_VT(self);
      return WK_OK;
    }
    return cuda_deliver(name, info->mode, wk_clone(self), target, outs);
  }
  /* cd: the dtype the kernel reads; integers compute in int64. */
  wk_dtype sd = wk_tensor_dtype(self);
  bool pred = kind_of(c.op) == K_PRED;
  wk_dtype cd = pred                       ? (wk_dtype_is_floating(sd) ? wk_compute_dtype(sd) : WK_I64)
                : wk_dtype_is_floating(rt) ? wk_compute_dtype(rt)
                                           : WK_I64;
  wk_tensor *x = cuda_operand(self, cd, dev), *dst = NULL;
  if (x) dst = cuda_new(wk_tensor_sizes(self), wk_tensor_dim(self), pred ? WK_BOOL : cd, dev);
  if (!dst) {
    wk_release(x);
    return wk_last_error();
  }
  s = (wk_status)cuda_launch_unary(c.op, cuda_dt(cd), wk_tensor_data(dst), wk_tensor_data(x), cuda_layout(x, NULL, 0),
                                   c.p, c.q, c.r, c.ilo, c.ihi, wk_tensor_numel(dst), cuda_stream(dev));
  wk_release(x);
  if (s) {
    wk_release(dst);
    return s;
  }
  /* f16/bf16 and narrow integers go back to their dtype, unless the target
   * takes the computed values directly (rounded the same way by copy_). */
  if (!pred && cd != rt && !(info->mode != CUDA_FUNCTIONAL && wk_tensor_dtype(target) == rt))
    dst = cuda_cast_own(dst, rt);
  return cuda_deliver(name, info->mode, dst, target, outs);
}

#define N_UINFO 80
static uinfo g_infos[N_UINFO];
static int g_ninfos;

static wk_status reg(const char *name, int op, cuda_mode mode) {
  if (g_ninfos == N_UINFO) return wk_error(WK_ERR_INTERNAL, "cuda: too many unary registrations");
  uinfo *u = &g_infos[g_ninfos++];
  *u = (uinfo){op, mode};
  return cuda_reg(name, k_unary, NULL, u, "cuda.unary");
}

wk_status cuda_register_unary(void) {
  g_ninfos = 0;
  wk_status s = WK_OK;
  char n[64];
  for (int op = CUDA_U_NEG; op <= CUDA_U_LOGICAL_NOT && !s; op++) {
    s = reg(g_names[op], op, CUDA_FUNCTIONAL);
    snprintf(n, sizeof n, "%s_", g_names[op]);
    if (!s) s = reg(n, op, CUDA_INPLACE);
    snprintf(n, sizeof n, "%s.out", g_names[op]);
    if (!s) s = reg(n, op, CUDA_OUT);
  }
  static const struct {
    const char *name;
    int op;
    cuda_mode mode;
  } other[] = {{"leaky_relu", CUDA_U_LEAKY_RELU, CUDA_FUNCTIONAL},
               {"leaky_relu_", CUDA_U_LEAKY_RELU, CUDA_INPLACE},
               {"gelu", CUDA_U_GELU, CUDA_FUNCTIONAL},
               {"clamp", CUDA_U_CLAMP, CUDA_FUNCTIONAL},
               {"clamp_", CUDA_U_CLAMP, CUDA_INPLACE},
               {"isnan", CUDA_U_ISNAN, CUDA_FUNCTIONAL},
               {"isinf", CUDA_U_ISINF, CUDA_FUNCTIONAL},
               {"nan_to_num", CUDA_U_NAN_TO_NUM, CUDA_FUNCTIONAL}};
  for (size_t i = 0; i < sizeof other / sizeof other[0] && !s; i++) s = reg(other[i].name, other[i].op, other[i].mode);
  return s;
}
