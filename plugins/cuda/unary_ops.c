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

#define UOP_NAME(name, tags, rule) #name,
static const char *const g_names[] = {WK_UNARY_OPS(UOP_NAME)};
#define UOP_RULE(name, tags, rule) rule,
static const unsigned char g_rules[] = {WK_UNARY_OPS(UOP_RULE)};
#define N_FAMILY ((int)(sizeof g_names / sizeof g_names[0]))

/* The op's dtype rule (WK_UNARY_FLOAT ... WK_UNARY_PRED, op_list.h); the
 * core's meta function already decided the result dtype from it. */
static int kind_of(int op) {
  if (op < N_FAMILY) return g_rules[op];
  switch (op) {
    case CUDA_U_LEAKY_RELU: case CUDA_U_GELU: case CUDA_U_GELU_TANH: return WK_UNARY_FLOAT_ONLY;
    case CUDA_U_NAN_TO_NUM: return WK_UNARY_ROUNDING;
    case CUDA_U_ISNAN: case CUDA_U_ISINF: return WK_UNARY_PRED;
    default: return WK_UNARY_KEEP; /* clamp */
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

/* A clamp bound as an integer (the meta function checked it fits the dtype). */
static int64_t int_bound(const wk_value *v) {
  return v->tag == WK_V_INT ? v->u.i : v->tag == WK_V_BOOL ? (int64_t)v->u.b : (int64_t)v->u.f;
}

/* Reads the op's extra arguments into c. The core's meta function checked
 * them and decided the result dtype rt. */
static void setup(const wk_value *args, uctx *c, wk_dtype rt) {
  wk_dtype dt = wk_tensor_dtype(args[0].u.t);
  switch (c->op) {
    case CUDA_U_LEAKY_RELU: c->p = wk_value_as_f64(&args[1]); break;
    case CUDA_U_GELU:
      if (strcmp(args[1].u.s, "tanh") == 0) c->op = CUDA_U_GELU_TANH;
      break;
    case CUDA_U_NAN_TO_NUM:
      c->p = args[1].tag == WK_V_NONE ? 0.0 : args[1].u.f;
      c->q = args[2].tag == WK_V_NONE ? dtype_max(dt) : args[2].u.f;
      c->r = args[3].tag == WK_V_NONE ? -dtype_max(dt) : args[3].u.f;
      break;
    case CUDA_U_CLAMP: {
      bool lo = args[1].tag != WK_V_NONE, hi = args[2].tag != WK_V_NONE;
      if (wk_dtype_is_floating(rt)) {
        c->p = lo ? wk_value_as_f64(&args[1]) : -INFINITY;
        c->q = hi ? wk_value_as_f64(&args[2]) : INFINITY;
        if (c->p != c->p || c->q != c->q) { /* a NaN bound makes every result NaN */
          c->op = CUDA_U_FILL;
          c->p = NAN;
        }
      } else {
        c->ilo = lo ? int_bound(&args[1]) : INT64_MIN;
        c->ihi = hi ? int_bound(&args[2]) : INT64_MAX;
      }
      break;
    }
    default: break;
  }
}

static bool is_identity(int op, wk_dtype dt) {
  if (wk_dtype_is_floating(dt)) return false;
  int k = kind_of(op);
  if (k == WK_UNARY_ROUNDING) return true;
  if (dt == WK_BOOL) return op == CUDA_U_abs || op == CUDA_U_sign;
  return dt == WK_U8 && (op == CUDA_U_abs || op == CUDA_U_relu);
}

static wk_status k_unary(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const uinfo *info = ctx->user;
  const char *name = WK_OPNAME;
  wk_tensor *self = WK_ARG_T(0), *target = NULL;
  if (info->mode == CUDA_INPLACE) target = self;
  if (info->mode == CUDA_OUT) target = WK_ARG_T(1);
  uctx c = {info->op, 0, 0, 0, 0, 0};
  wk_dtype rt = wk_kernel_meta(ctx, 0)->dtype;
  setup(args, &c, rt);
  wk_status s;
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
  bool pred = kind_of(c.op) == WK_UNARY_PRED;
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
  for (int op = 0; op < N_FAMILY && !s; op++) {
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
