/* cpu plugin: binary pointwise ops with broadcasting and PyTorch's type
 * promotion: add/sub (alpha), mul, div (rounding modes), maximum, minimum,
 * pow, logical and/or, comparisons, where, each in its functional, in-place,
 * out= and Scalar forms. Inputs are converted to a compute dtype (f32, f64,
 * i64 or bool) once; the typed loops below do the arithmetic. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

typedef enum {
  B_ADD, B_SUB, B_MUL, B_DIV, B_DIV_TRUNC, B_DIV_FLOOR, B_MAX, B_MIN, B_POW,
  B_AND, B_OR, B_EQ, B_NE, B_LT, B_LE, B_GT, B_GE
} bop;

typedef struct {
  bop op;
  cpu_mode mode;
  bool scalar;       /* `other` is a Scalar argument */
  bool has_alpha;    /* add/sub: alpha follows `other` */
  bool has_rounding; /* div: rounding_mode follows `other` */
} binfo;

typedef struct {
  bop op;
  double alpha_f;
  int64_t alpha_i;
  bool alpha_bool;
  bool int_div_by_zero;
} bctx;

static bool is_compare(bop op) { return op >= B_EQ; }
static bool is_logical(bop op) { return op == B_AND || op == B_OR; }

/* PyTorch's div_floor_floating, in the loop's own precision: the quotient of
 * the exact remainder's complement, with the sign of zero kept. */
#define FLOOR_DIV(NAME, T, FMOD, FLOOR, COPYSIGN)                  \
  static T NAME(T a, T b) {                                        \
    if (b == 0) return a / b;                                      \
    T mod = FMOD(a, b), div = (a - mod) / b;                       \
    if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;              \
    if (div == 0) return COPYSIGN((T)0, a / b);                    \
    T fl = FLOOR(div);                                             \
    if (div - fl > (T)0.5) fl += 1;                                \
    return fl;                                                     \
  }
FLOOR_DIV(floor_div_f32, float, fmodf, floorf, copysignf)
FLOOR_DIV(floor_div_f64, double, fmod, floor, copysign)

/* Integer power with wrap-around (computed unsigned to stay defined); a
 * negative exponent gives 0 except for bases 1 and -1, like PyTorch's powi. */
static int64_t ipow(int64_t base, int64_t exp) {
  if (exp < 0) {
    if (base == 1) return 1;
    if (base == -1) return (exp & 1) ? -1 : 1;
    return 0;
  }
  uint64_t r = 1, b = (uint64_t)base;
  while (exp > 0) {
    if (exp & 1) r *= b;
    b *= b;
    exp >>= 1;
  }
  return (int64_t)r;
}

/* Arithmetic on floating types (T = float or double). */
#define FLOAT_LOOP(NAME, T, POW, FLOORDIV)                                                      \
  static void NAME(void *cp, char **d, const int64_t *s, int64_t n) {                              \
    bctx *c = cp;                                                                                  \
    const T al = (T)c->alpha_f;                                                                    \
    T *o = (T *)d[0];                                                                              \
    const T *a = (const T *)d[1], *b = (const T *)d[2];                                            \
    bool contig = s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == sizeof(T);                    \
    bool bscal = s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == 0;                             \
    if (c->op == B_ADD && contig) {                                                                \
      for (int64_t i = 0; i < n; i++) o[i] = a[i] + al * b[i];                                     \
      return;                                                                                      \
    }                                                                                              \
    if (c->op == B_MUL && contig) {                                                                \
      for (int64_t i = 0; i < n; i++) o[i] = a[i] * b[i];                                          \
      return;                                                                                      \
    }                                                                                              \
    if (c->op == B_ADD && bscal) {                                                                 \
      T v = al * b[0];                                                                             \
      for (int64_t i = 0; i < n; i++) o[i] = a[i] + v;                                             \
      return;                                                                                      \
    }                                                                                              \
    if (c->op == B_MUL && bscal) {                                                                 \
      T v = b[0];                                                                                  \
      for (int64_t i = 0; i < n; i++) o[i] = a[i] * v;                                             \
      return;                                                                                      \
    }                                                                                              \
    for (int64_t i = 0; i < n; i++) {                                                              \
      T x = *(const T *)(d[1] + i * s[1]), y = *(const T *)(d[2] + i * s[2]), r;                   \
      switch (c->op) {                                                                             \
        case B_ADD: r = x + al * y; break;                                                         \
        case B_SUB: r = x - al * y; break;                                                         \
        case B_MUL: r = x * y; break;                                                              \
        case B_DIV: r = x / y; break;                                                              \
        case B_DIV_TRUNC: r = (T)trunc((double)(x / y)); break;                                      \
        case B_DIV_FLOOR: r = FLOORDIV(x, y); break;                       \
        case B_MAX: r = (x != x || y != y) ? (T)NAN : (x > y ? x : y); break;                       \
        case B_MIN: r = (x != x || y != y) ? (T)NAN : (x < y ? x : y); break;                       \
        case B_POW: r = POW(x, y); break;                                                          \
        default: r = 0; break;                                                                     \
      }                                                                                            \
      *(T *)(d[0] + i * s[0]) = r;                                                                 \
    }                                                                                              \
  }
FLOAT_LOOP(arith_f32, float, powf, floor_div_f32)
FLOAT_LOOP(arith_f64, double, pow, floor_div_f64)

/* add, sub and mul of two bfloat16 tensors (autocast's activations): each
 * element computed in f32 as arith_f32 does and rounded once — the same bits
 * as casting both operands to f32 and the result back, without the two f32
 * temporaries and three passes over memory. */
static void arith_bf16(void *cp, char **d, const int64_t *s, int64_t n) {
  const bctx *c = cp;
  const float al = (float)c->alpha_f;
  if (s[0] == 2 && s[1] == 2 && s[2] == 2) { /* contiguous: one loop per op, vectorised */
    uint16_t *restrict o = (uint16_t *)d[0];
    const uint16_t *restrict a = (const uint16_t *)d[1], *restrict b = (const uint16_t *)d[2];
    if (c->op == B_MUL)
      for (int64_t i = 0; i < n; i++) o[i] = wk_f32_to_bf16(wk_bf16_to_f32(a[i]) * wk_bf16_to_f32(b[i]));
    else {
      const float sal = c->op == B_SUB ? -al : al; /* x - al*y == x + (-al)*y exactly */
      for (int64_t i = 0; i < n; i++) o[i] = wk_f32_to_bf16(wk_bf16_to_f32(a[i]) + sal * wk_bf16_to_f32(b[i]));
    }
    return;
  }
  for (int64_t i = 0; i < n; i++) {
    float x = wk_bf16_to_f32(*(const uint16_t *)(d[1] + i * s[1]));
    float y = wk_bf16_to_f32(*(const uint16_t *)(d[2] + i * s[2]));
    float r = c->op == B_ADD ? x + al * y : c->op == B_SUB ? x - al * y : x * y;
    *(uint16_t *)(d[0] + i * s[0]) = wk_f32_to_bf16(r);
  }
}

/* Arithmetic on int64 (integers and bools compute here). */
static void arith_i64(void *cp, char **d, const int64_t *s, int64_t n) {
  bctx *c = cp;
  for (int64_t i = 0; i < n; i++) {
    int64_t x = *(const int64_t *)(d[1] + i * s[1]), y = *(const int64_t *)(d[2] + i * s[2]), r = 0;
    switch (c->op) {
      /* wrap-around arithmetic like PyTorch's, computed unsigned to stay defined */
      case B_ADD: r = (int64_t)((uint64_t)x + (uint64_t)c->alpha_i * (uint64_t)y); break;
      case B_SUB: r = (int64_t)((uint64_t)x - (uint64_t)c->alpha_i * (uint64_t)y); break;
      case B_MUL: r = (int64_t)((uint64_t)x * (uint64_t)y); break;
      case B_DIV_TRUNC:
      case B_DIV_FLOOR:
        if (y == 0) {
          c->int_div_by_zero = true;
          break;
        }
        if (x == INT64_MIN && y == -1) {
          r = INT64_MIN;
          break;
        }
        r = x / y;
        if (c->op == B_DIV_FLOOR && (x % y != 0) && ((x < 0) != (y < 0))) r--;
        break;
      case B_MAX: r = x > y ? x : y; break;
      case B_MIN: r = x < y ? x : y; break;
      case B_POW: r = ipow(x, y); break;
      default: break;
    }
    *(int64_t *)(d[0] + i * s[0]) = r;
  }
}

/* Comparisons and logical ops write bool; inputs share one compute dtype. */
#define CMP_LOOP(NAME, T)                                                              \
  static void NAME(void *cp, char **d, const int64_t *s, int64_t n) {                  \
    const bctx *c = cp;                                                                \
    for (int64_t i = 0; i < n; i++) {                                                  \
      T x = *(const T *)(d[1] + i * s[1]), y = *(const T *)(d[2] + i * s[2]);           \
      bool r;                                                                          \
      switch (c->op) {                                                                 \
        case B_EQ: r = x == y; break;                                                  \
        case B_NE: r = x != y; break;                                                  \
        case B_LT: r = x < y; break;                                                   \
        case B_LE: r = x <= y; break;                                                  \
        case B_GT: r = x > y; break;                                                   \
        case B_GE: r = x >= y; break;                                                  \
        case B_AND: r = (x != 0) && (y != 0); break;                                   \
        case B_OR: r = (x != 0) || (y != 0); break;                                    \
        default: r = false; break;                                                     \
      }                                                                                \
      *(bool *)(d[0] + i * s[0]) = r;                                                  \
    }                                                                                  \
  }
CMP_LOOP(cmp_f32, float)
CMP_LOOP(cmp_f64, double)
CMP_LOOP(cmp_i64, int64_t)
CMP_LOOP(cmp_bool, bool)

static const char *op_label(bop op) {
  static const char *names[] = {"add", "sub", "mul", "div", "div", "div", "maximum", "minimum", "pow",
                                "logical_and", "logical_or", "eq", "ne", "lt", "le", "gt", "ge"};
  return names[op];
}

/* Computes op(a, b) into a new tensor of the result dtype rt, which the
 * core's meta function decided after checking the arguments (bool
 * subtraction, integer powers, alpha, rounding mode). */
static wk_tensor *compute(const char *opname, bctx *c, wk_tensor *self, const wk_value *other, wk_dtype rt) {
  bop op = c->op;
  wk_dtype cd = is_logical(op) ? WK_F64 : wk_compute_dtype(rt);
  if (cd == WK_BOOL && !is_compare(op)) cd = WK_I64;
  if (!is_compare(op) && !is_logical(op) && !wk_dtype_is_floating(cd) &&
      (op == B_DIV_TRUNC || op == B_DIV_FLOOR))
    cd = WK_I64;
  if (rt == WK_BF16 && (op == B_ADD || op == B_SUB || op == B_MUL) && wk_tensor_dtype(self) == WK_BF16 &&
      other->tag == WK_V_TENSOR && wk_tensor_dtype(other->u.t) == WK_BF16) {
    wk_tensor *ops[3] = {NULL, self, other->u.t};
    int64_t shape[WK_MAX_DIMS];
    int nd = 0;
    if (wk_broadcast_shapes(opname, ops + 1, 2, shape, &nd)) return NULL;
    wk_tensor *res = cpu_empty(shape, nd, WK_BF16);
    if (!res) return NULL;
    ops[0] = res;
    wk_iter it;
    if (wk_iter_init(&it, opname, ops, 3)) {
      wk_release(res);
      return NULL;
    }
    wk_iter_run(&it, arith_bf16, c);
    return res;
  }
  wk_tensor *a = wk_kernel_cast(self, cd), *b = NULL;
  if (other->tag == WK_V_TENSOR) {
    b = wk_kernel_cast(other->u.t, cd);
  } else {
    _Alignas(8) unsigned char buf[8]; /* written through typed pointers */
    if (other->tag == WK_V_INT && !wk_dtype_is_floating(cd))
      wk_store_i64(buf, cd, other->u.i);
    else
      wk_store_f64(buf, cd, wk_value_as_f64(other));
    b = wk_tensor_from_data(buf, cd, NULL, 0);
  }
  wk_tensor *res = NULL, *ops[3] = {NULL, a, b};
  int64_t shape[WK_MAX_DIMS];
  int nd = 0;
  if (!a || !b || wk_broadcast_shapes(opname, ops + 1, 2, shape, &nd)) goto done;
  res = cpu_empty(shape, nd, is_compare(op) || is_logical(op) ? WK_BOOL : cd);
  if (!res) goto done;
  ops[0] = res;
  wk_iter it;
  if (wk_iter_init(&it, opname, ops, 3)) {
    wk_release(res);
    res = NULL;
    goto done;
  }
  wk_loop_fn fn;
  if (is_compare(op) || is_logical(op))
    fn = cd == WK_F32 ? cmp_f32 : cd == WK_F64 ? cmp_f64 : cd == WK_BOOL ? cmp_bool : cmp_i64;
  else
    fn = cd == WK_F32 ? arith_f32 : cd == WK_F64 ? arith_f64 : arith_i64;
  if (cd == WK_I64 && (op == B_DIV_TRUNC || op == B_DIV_FLOOR))
    wk_iter_run_serial(&it, fn, c); /* the error flag is written without atomics */
  else
    wk_iter_run(&it, fn, c);
  if (c->int_div_by_zero) {
    wk_error(WK_ERR_INVALID_ARG, "%s: ZeroDivisionError (integer division by zero)", opname);
    wk_release(res);
    res = NULL;
    goto done;
  }
  if (!is_compare(op) && !is_logical(op) && rt != cd) {
    wk_tensor *conv = wk_to_dtype(res, rt);
    wk_release(res);
    res = conv;
  }
done:
  wk_release(a);
  wk_release(b);
  return res;
}

/* Fast path for the commonest call: functional add/sub/mul/div of two
 * contiguous float tensors of one dtype, where `other` has self's shape or a
 * single element. Returns NULL (no error) when it does not apply. */
#define FAST_LOOP(T)                                                                     \
  {                                                                                      \
    const T *x = (const T *)wk_tensor_data(a), *y = (const T *)wk_tensor_data(b);        \
    T *o = (T *)wk_tensor_data(r), al = (T)alpha;                                       \
    int64_t sy = nb == 1 ? 0 : 1;                                                        \
    switch (op) {                                                                        \
      case B_ADD: for (int64_t i = 0; i < n; i++) o[i] = x[i] + al * y[i * sy]; break;   \
      case B_SUB: for (int64_t i = 0; i < n; i++) o[i] = x[i] - al * y[i * sy]; break;   \
      case B_MUL: for (int64_t i = 0; i < n; i++) o[i] = x[i] * y[i * sy]; break;        \
      default: for (int64_t i = 0; i < n; i++) o[i] = x[i] / y[i * sy]; break;           \
    }                                                                                    \
  }
static wk_tensor *fast_binary(bop op, wk_tensor *a, wk_tensor *b, double alpha) {
  wk_dtype dt = wk_tensor_dtype(a);
  if ((dt != WK_F32 && dt != WK_F64) || wk_tensor_dtype(b) != dt) return NULL;
  int64_t n = wk_tensor_numel(a), nb = wk_tensor_numel(b);
  if (n >= WK_ITER_GRAIN || n == 0 || !wk_tensor_is_contiguous(a) || !wk_tensor_is_contiguous(b)) return NULL;
  if (nb == 1 ? wk_tensor_dim(b) > wk_tensor_dim(a) : !cpu_same_shape(a, b)) return NULL;
  wk_tensor *r = cpu_empty(wk_tensor_sizes(a), wk_tensor_dim(a), dt);
  if (!r) return NULL;
  if (dt == WK_F32)
    FAST_LOOP(float)
  else
    FAST_LOOP(double)
  return r;
}

/* Fast paths on contiguous f32 operands (the autograd's relu backward is
 * mul(grad, gt(y, 0))): a comparison with a Scalar, and a product with a bool
 * mask of the same shape (x * (float)m, NaN and signed zeros as the general
 * path gives them). Split over the pool in contiguous ranges. */
typedef struct {
  bop op;
  const float *x;
  const bool *m;
  float v;
  void *o;
} fastf_job;

static void fast_cmp_range(void *p, int64_t b, int64_t e) {
  const fastf_job *j = p;
  const float *x = j->x, v = j->v;
  bool *o = j->o;
  switch (j->op) {
    case B_EQ: for (int64_t i = b; i < e; i++) o[i] = x[i] == v; break;
    case B_NE: for (int64_t i = b; i < e; i++) o[i] = x[i] != v; break;
    case B_LT: for (int64_t i = b; i < e; i++) o[i] = x[i] < v; break;
    case B_LE: for (int64_t i = b; i < e; i++) o[i] = x[i] <= v; break;
    case B_GT: for (int64_t i = b; i < e; i++) o[i] = x[i] > v; break;
    default: for (int64_t i = b; i < e; i++) o[i] = x[i] >= v; break;
  }
}

static void fast_mask_range(void *p, int64_t b, int64_t e) {
  const fastf_job *j = p;
  const float *x = j->x;
  const bool *m = j->m;
  float *o = j->o;
  for (int64_t i = b; i < e; i++) o[i] = x[i] * (float)m[i];
}

/* 0: does not apply; 1: *out holds the result; -1: error recorded. */
static int fast_f32(bop op, wk_tensor *a, const wk_value *other, wk_tensor **out) {
  if (wk_tensor_dtype(a) != WK_F32 || !wk_tensor_is_contiguous(a)) return 0;
  int64_t n = wk_tensor_numel(a);
  fastf_job j = {op, wk_tensor_data(a), NULL, 0, NULL};
  void (*fn)(void *, int64_t, int64_t);
  wk_dtype rt;
  if (is_compare(op)) {
    if (other->tag != WK_V_INT && other->tag != WK_V_FLOAT) return 0;
    j.v = (float)wk_value_as_f64(other);
    fn = fast_cmp_range;
    rt = WK_BOOL;
  } else {
    wk_tensor *b = other->u.t;
    if (op != B_MUL || other->tag != WK_V_TENSOR || wk_tensor_dtype(b) != WK_BOOL || !wk_tensor_is_contiguous(b) ||
        !cpu_same_shape(a, b))
      return 0;
    j.m = wk_tensor_data(b);
    fn = fast_mask_range;
    rt = WK_F32;
  }
  wk_tensor *r = cpu_empty(wk_tensor_sizes(a), wk_tensor_dim(a), rt);
  if (!r) return -1;
  j.o = wk_tensor_data(r);
  if (n < WK_ITER_GRAIN)
    fn(&j, 0, n);
  else
    wk_parallel_for(0, n, WK_ITER_GRAIN, fn, &j);
  *out = r;
  return 1;
}

static wk_status k_binary(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const binfo *info = ctx->user;
  if (info->mode == CPU_FUNCTIONAL && !info->scalar && info->op <= B_DIV && !(info->has_rounding && args[2].tag == WK_V_STR)) {
    double alpha = info->has_alpha ? wk_value_as_f64(&args[2]) : 1.0;
    wk_tensor *r = fast_binary(info->op, WK_ARG_T(0), WK_ARG_T(1), alpha);
    if (r) {
      outs[0] = WK_VT(r);
      return WK_OK;
    }
  }
  if (info->mode == CPU_FUNCTIONAL && ((is_compare(info->op) && info->scalar) || (info->op == B_MUL && !info->scalar))) {
    wk_tensor *r = NULL;
    int done = fast_f32(info->op, WK_ARG_T(0), &args[1], &r);
    if (done < 0) return wk_last_error();
    if (done) {
      outs[0] = WK_VT(r);
      return WK_OK;
    }
  }
  bctx c = {info->op, 1.0, 1, false, false};
  int next = 2;
  if (info->has_alpha) {
    c.alpha_f = wk_value_as_f64(&args[2]);
    c.alpha_i = args[2].tag == WK_V_INT ? args[2].u.i : wk_f64_to_i64_sat(c.alpha_f);
    c.alpha_bool = args[2].tag == WK_V_BOOL;
    next = 3;
  }
  if (info->has_rounding) {
    if (args[2].tag == WK_V_STR) {
      if (strcmp(args[2].u.s, "trunc") == 0)
        c.op = B_DIV_TRUNC;
      else /* "floor": the meta function refused anything else */
        c.op = B_DIV_FLOOR;
    }
    next = 3;
  }
  wk_tensor *target = info->mode == CPU_INPLACE ? WK_ARG_T(0) : info->mode == CPU_OUT ? WK_ARG_T(next) : NULL;
  /* The result dtype the meta function decided; comparisons and logical ops
   * compute in the operands' promoted dtype and write bool. */
  wk_dtype rt = wk_kernel_meta(ctx, 0)->dtype;
  if (is_compare(info->op) || is_logical(info->op)) rt = wk_result_type(args, 2);
  wk_tensor *r = compute(op_label(info->op), &c, WK_ARG_T(0), &args[1], rt);
  return cpu_deliver(WK_OPNAME, info->mode, r, target, outs);
}

/* where(cond, a, b): promoted dtype of a and b, broadcast over all three. */
typedef struct {
  size_t es;
} where_ctx;

static void loop_where(void *cp, char **d, const int64_t *s, int64_t n) {
  size_t es = ((const where_ctx *)cp)->es;
  for (int64_t i = 0; i < n; i++) {
    bool c = *(const bool *)(d[1] + i * s[1]);
    memcpy(d[0] + i * s[0], c ? d[2] + i * s[2] : d[3] + i * s[3], es);
  }
}

static wk_status k_where(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *cond = WK_ARG_T(0);
  wk_dtype ct = wk_tensor_dtype(cond);
  if (ct != WK_BOOL && ct != WK_U8) /* uint8 masks: PyTorch's deprecated legacy form */
    return wk_error(WK_ERR_DTYPE, "where: expected condition to be a boolean tensor, but got a tensor with dtype %s",
                    wk_dtype_name(ct));
  wk_dtype rt = wk_result_type(args + 1, 2);
  wk_tensor *cb = wk_kernel_cast(cond, WK_BOOL), *a = wk_kernel_cast(WK_ARG_T(1), rt), *b = wk_kernel_cast(WK_ARG_T(2), rt);
  wk_tensor *res = NULL, *ops[4] = {NULL, cb, a, b};
  int64_t shape[WK_MAX_DIMS];
  int nd = 0;
  wk_status s = WK_OK;
  if (!cb || !a || !b) s = wk_last_error();
  if (!s) s = wk_broadcast_shapes("where", ops + 1, 3, shape, &nd);
  if (!s && !(res = cpu_empty(shape, nd, rt))) s = wk_last_error();
  if (!s) {
    ops[0] = res;
    wk_iter it;
    s = wk_iter_init(&it, "where", ops, 4);
    where_ctx w = {wk_dtype_size(rt)};
    if (!s) wk_iter_run(&it, loop_where, &w);
  }
  wk_release(cb);
  wk_release(a);
  wk_release(b);
  if (s) {
    wk_release(res);
    return s;
  }
  outs[0] = WK_VT(res);
  return WK_OK;
}

#define N_BINFO 64
static binfo g_infos[N_BINFO];
static int g_ninfos;

static wk_status reg(const char *name, bop op, cpu_mode mode, bool scalar, bool alpha, bool rounding) {
  if (g_ninfos == N_BINFO) return wk_error(WK_ERR_INTERNAL, "cpu: too many binary registrations");
  binfo *b = &g_infos[g_ninfos++];
  *b = (binfo){op, mode, scalar, alpha, rounding};
  return cpu_reg(name, k_binary, b);
}

wk_status cpu_register_binary(void) {
  static const struct {
    const char *name;
    bop op;
  } fam[] = {{"mul", B_MUL}, {"maximum", B_MAX}, {"minimum", B_MIN}, {"pow", B_POW},
             {"logical_and", B_AND}, {"logical_or", B_OR}};
  wk_status s = WK_OK;
  char n[64];
  for (size_t i = 0; i < sizeof fam / sizeof fam[0] && !s; i++) {
    s = reg(fam[i].name, fam[i].op, CPU_FUNCTIONAL, false, false, false);
    snprintf(n, sizeof n, "%s_", fam[i].name);
    if (!s) s = reg(n, fam[i].op, CPU_INPLACE, false, false, false);
    snprintf(n, sizeof n, "%s.out", fam[i].name);
    if (!s) s = reg(n, fam[i].op, CPU_OUT, false, false, false);
    snprintf(n, sizeof n, "%s.Scalar", fam[i].name);
    if (!s) s = reg(n, fam[i].op, CPU_FUNCTIONAL, true, false, false);
    snprintf(n, sizeof n, "%s_.Scalar", fam[i].name);
    if (!s) s = reg(n, fam[i].op, CPU_INPLACE, true, false, false);
  }
  static const struct {
    const char *name;
    bop op;
  } cmp[] = {{"eq", B_EQ}, {"ne", B_NE}, {"lt", B_LT}, {"le", B_LE}, {"gt", B_GT}, {"ge", B_GE}};
  for (size_t i = 0; i < sizeof cmp / sizeof cmp[0] && !s; i++) {
    s = reg(cmp[i].name, cmp[i].op, CPU_FUNCTIONAL, false, false, false);
    snprintf(n, sizeof n, "%s.Scalar", cmp[i].name);
    if (!s) s = reg(n, cmp[i].op, CPU_FUNCTIONAL, true, false, false);
    snprintf(n, sizeof n, "%s.out", cmp[i].name);
    if (!s) s = reg(n, cmp[i].op, CPU_OUT, false, false, false);
  }
  static const struct {
    const char *name;
    bop op;
    cpu_mode mode;
    bool scalar, alpha, rounding;
  } other[] = {{"add", B_ADD, CPU_FUNCTIONAL, false, true, false}, {"add_", B_ADD, CPU_INPLACE, false, true, false},
               {"add.out", B_ADD, CPU_OUT, false, true, false},    {"add.Scalar", B_ADD, CPU_FUNCTIONAL, true, true, false},
               {"add_.Scalar", B_ADD, CPU_INPLACE, true, true, false}, {"sub_.Scalar", B_SUB, CPU_INPLACE, true, true, false},
               {"div_.Scalar", B_DIV, CPU_INPLACE, true, false, true},
               {"sub", B_SUB, CPU_FUNCTIONAL, false, true, false}, {"sub_", B_SUB, CPU_INPLACE, false, true, false},
               {"sub.out", B_SUB, CPU_OUT, false, true, false},    {"sub.Scalar", B_SUB, CPU_FUNCTIONAL, true, true, false},
               {"div", B_DIV, CPU_FUNCTIONAL, false, false, true}, {"div_", B_DIV, CPU_INPLACE, false, false, true},
               {"div.out", B_DIV, CPU_OUT, false, false, true},    {"div.Scalar", B_DIV, CPU_FUNCTIONAL, true, false, true}};
  for (size_t i = 0; i < sizeof other / sizeof other[0] && !s; i++)
    s = reg(other[i].name, other[i].op, other[i].mode, other[i].scalar, other[i].alpha, other[i].rounding);
  if (!s) s = cpu_reg("where.self", k_where, NULL);
  return s;
}
