/* cpu plugin: binary pointwise ops with broadcasting and PyTorch's type
 * promotion: add/sub (alpha), mul, div (rounding modes), maximum, minimum,
 * pow, logical and/or, atan2, fmod, remainder, hypot, logaddexp, copysign,
 * bitwise and/or/xor and shifts, comparisons, where, each in its functional, in-place,
 * out= and Scalar forms. Inputs are converted to a compute dtype (f32, f64,
 * i64 or bool) once; the typed loops below do the arithmetic. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "simd.h"
#include <wick/sdk/binary.h>

typedef struct {
  int op;
  double alpha_f;
  int64_t alpha_i;
  bool int_div_by_zero;
} bctx;

#define is_compare wk_bop_is_compare
#define is_logical wk_bop_is_logical



/* Arithmetic on floating types (T = float or double). */
#define FLOAT_LOOP(NAME, T, POW, FLOORDIV, F)                                                   \
  static void NAME(void *cp, char **d, const int64_t *s, int64_t n) {                              \
    bctx *c = cp;                                                                                  \
    const T al = (T)c->alpha_f;                                                                    \
    T *o = (T *)d[0];                                                                              \
    const T *a = (const T *)d[1], *b = (const T *)d[2];                                            \
    bool contig = s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == sizeof(T);                    \
    bool bscal = s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == 0;                             \
    if (sizeof(T) == sizeof(float) && (c->op == WK_BOP_add || c->op == WK_BOP_mul) && (contig || bscal) && \
        cpu_simd_ok2((float *)o, (const float *)a, bscal ? NULL : (const float *)b, n)) { /* simd.h */       \
      float *fo = (float *)o;                                                                      \
      const float *fa = (const float *)a, *fb = (const float *)b;                                 \
      if (contig && c->op == WK_BOP_add) cpu_simd->add(fo, fa, fb, (float)al, n);                  \
      else if (contig) cpu_simd->mul(fo, fa, fb, n);                                               \
      else if (c->op == WK_BOP_add) cpu_simd->add_scalar(fo, fa, (float)al * fb[0], n);           \
      else cpu_simd->mul_scalar(fo, fa, fb[0], n);                                                 \
      return;                                                                                      \
    }                                                                                              \
    if (c->op == WK_BOP_add && contig) {                                                                \
      for (int64_t i = 0; i < n; i++) o[i] = a[i] + al * b[i];                                     \
      return;                                                                                      \
    }                                                                                              \
    if (c->op == WK_BOP_mul && contig) {                                                                \
      for (int64_t i = 0; i < n; i++) o[i] = a[i] * b[i];                                          \
      return;                                                                                      \
    }                                                                                              \
    if (c->op == WK_BOP_add && bscal) {                                                                 \
      T v = al * b[0];                                                                             \
      for (int64_t i = 0; i < n; i++) o[i] = a[i] + v;                                             \
      return;                                                                                      \
    }                                                                                              \
    if (c->op == WK_BOP_mul && bscal) {                                                                 \
      T v = b[0];                                                                                  \
      for (int64_t i = 0; i < n; i++) o[i] = a[i] * v;                                             \
      return;                                                                                      \
    }                                                                                              \
    for (int64_t i = 0; i < n; i++) {                                                              \
      T x = *(const T *)(d[1] + i * s[1]), y = *(const T *)(d[2] + i * s[2]), r;                   \
      switch (c->op) {                                                                             \
        case WK_BOP_add: r = x + al * y; break;                                                         \
        case WK_BOP_sub: r = x - al * y; break;                                                         \
        case WK_BOP_mul: r = x * y; break;                                                              \
        case WK_BOP_div: r = x / y; break;                                                              \
        case WK_BOP_div_trunc: r = (T)trunc((double)(x / y)); break;                                      \
        case WK_BOP_div_floor: r = FLOORDIV(x, y); break;                       \
        case WK_BOP_maximum: r = (x != x || y != y) ? (T)NAN : (x > y ? x : y); break;                       \
        case WK_BOP_minimum: r = (x != x || y != y) ? (T)NAN : (x < y ? x : y); break;                       \
        case WK_BOP_pow: r = POW(x, y); break;                                                          \
        case WK_BOP_atan2: r = atan2##F(x, y); break;                                                   \
        case WK_BOP_fmod: r = fmod##F(x, y); break;                                                     \
        case WK_BOP_remainder: r = wk_remainder_##T(x, y); break;                                       \
        case WK_BOP_hypot: r = hypot##F(x, y); break;                                                   \
        case WK_BOP_logaddexp: r = wk_logaddexp_##T(x, y); break;                                       \
        case WK_BOP_copysign: r = copysign##F(x, y); break;                                             \
        default: r = 0; break;                                                                     \
      }                                                                                            \
      *(T *)(d[0] + i * s[0]) = r;                                                                 \
    }                                                                                              \
  }
FLOAT_LOOP(arith_f32, float, powf, wk_floor_div_f32, f)
FLOAT_LOOP(arith_f64, double, pow, wk_floor_div_f64, )

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
    if (c->op == WK_BOP_mul)
      for (int64_t i = 0; i < n; i++) o[i] = wk_f32_to_bf16(wk_bf16_to_f32(a[i]) * wk_bf16_to_f32(b[i]));
    else {
      const float sal = c->op == WK_BOP_sub ? -al : al; /* x - al*y == x + (-al)*y exactly */
      for (int64_t i = 0; i < n; i++) o[i] = wk_f32_to_bf16(wk_bf16_to_f32(a[i]) + sal * wk_bf16_to_f32(b[i]));
    }
    return;
  }
  for (int64_t i = 0; i < n; i++) {
    float x = wk_bf16_to_f32(*(const uint16_t *)(d[1] + i * s[1]));
    float y = wk_bf16_to_f32(*(const uint16_t *)(d[2] + i * s[2]));
    float r = c->op == WK_BOP_add ? x + al * y : c->op == WK_BOP_sub ? x - al * y : x * y;
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
      case WK_BOP_add: r = (int64_t)((uint64_t)x + (uint64_t)c->alpha_i * (uint64_t)y); break;
      case WK_BOP_sub: r = (int64_t)((uint64_t)x - (uint64_t)c->alpha_i * (uint64_t)y); break;
      case WK_BOP_mul: r = (int64_t)((uint64_t)x * (uint64_t)y); break;
      case WK_BOP_div_trunc:
      case WK_BOP_div_floor:
        if (y == 0) {
          c->int_div_by_zero = true;
          break;
        }
        if (x == INT64_MIN && y == -1) {
          r = INT64_MIN;
          break;
        }
        r = x / y;
        if (c->op == WK_BOP_div_floor && (x % y != 0) && ((x < 0) != (y < 0))) r--;
        break;
      case WK_BOP_maximum: r = x > y ? x : y; break;
      case WK_BOP_minimum: r = x < y ? x : y; break;
      case WK_BOP_pow: r = wk_ipow(x, y); break;
      case WK_BOP_fmod:
      case WK_BOP_remainder:
        if (y == 0) {
          c->int_div_by_zero = true;
          break;
        }
        r = y == -1 ? 0 : x % y; /* INT64_MIN % -1 overflows in C */
        if (c->op == WK_BOP_remainder && r != 0 && ((r < 0) != (y < 0))) r += y;
        break;
      case WK_BOP_bitwise_and: r = x & y; break;
      case WK_BOP_bitwise_or: r = x | y; break;
      case WK_BOP_bitwise_xor: r = x ^ y; break;
      case WK_BOP_bitwise_left_shift: r = wk_shl_i64(x, y); break;
      case WK_BOP_bitwise_right_shift: r = wk_shr_i64(x, y); break;
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
        case WK_BOP_eq: r = x == y; break;                                                  \
        case WK_BOP_ne: r = x != y; break;                                                  \
        case WK_BOP_lt: r = x < y; break;                                                   \
        case WK_BOP_le: r = x <= y; break;                                                  \
        case WK_BOP_gt: r = x > y; break;                                                   \
        case WK_BOP_ge: r = x >= y; break;                                                  \
        case WK_BOP_logical_and: r = (x != 0) && (y != 0); break;                                   \
        case WK_BOP_logical_or: r = (x != 0) || (y != 0); break;                                    \
        default: r = false; break;                                                     \
      }                                                                                \
      *(bool *)(d[0] + i * s[0]) = r;                                                  \
    }                                                                                  \
  }
CMP_LOOP(cmp_f32, float)
CMP_LOOP(cmp_f64, double)
CMP_LOOP(cmp_i64, int64_t)
CMP_LOOP(cmp_bool, bool)


/* Computes op(a, b) into a new tensor of the result dtype rt, which the
 * core's meta function decided after checking the arguments (bool
 * subtraction, integer powers, alpha, rounding mode). */
static wk_tensor *compute(const char *opname, bctx *c, wk_tensor *self, const wk_value *other, wk_dtype rt) {
  int op = c->op;
  wk_dtype cd = wk_bop_compute_dtype(op, rt);
  if (rt == WK_BF16 && (op == WK_BOP_add || op == WK_BOP_sub || op == WK_BOP_mul) && wk_tensor_dtype(self) == WK_BF16 &&
      other->tag == WK_V_TENSOR && wk_tensor_dtype(other->u.t) == WK_BF16) {
    wk_tensor *ops[3] = {NULL, self, other->u.t};
    int64_t shape[WK_MAX_DIMS];
    int nd = 0;
    if (wk_broadcast_shapes(opname, ops + 1, 2, shape, &nd)) return NULL;
    wk_tensor *res = cpu_empty_like_format(shape, nd, WK_BF16, ops + 1, 2);
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
  res = cpu_empty_like_format(shape, nd, is_compare(op) || is_logical(op) ? WK_BOOL : cd, ops + 1, 2);
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
  if (cd == WK_I64 && (op == WK_BOP_div_trunc || op == WK_BOP_div_floor || op == WK_BOP_fmod || op == WK_BOP_remainder))
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
      case WK_BOP_add: for (int64_t i = 0; i < n; i++) o[i] = x[i] + al * y[i * sy]; break;   \
      case WK_BOP_sub: for (int64_t i = 0; i < n; i++) o[i] = x[i] - al * y[i * sy]; break;   \
      case WK_BOP_mul: for (int64_t i = 0; i < n; i++) o[i] = x[i] * y[i * sy]; break;        \
      default: for (int64_t i = 0; i < n; i++) o[i] = x[i] / y[i * sy]; break;           \
    }                                                                                    \
  }
/* Row-major or channels_last: its elements fill [data, data + numel). */
static bool dense_any(const wk_tensor *a) {
  return wk_tensor_is_contiguous(a) || wk_suggest_memory_format(a) == WK_CHANNELS_LAST;
}

static wk_tensor *fast_binary(int op, wk_tensor *a, wk_tensor *b, double alpha) {
  wk_dtype dt = wk_tensor_dtype(a);
  if ((dt != WK_F32 && dt != WK_F64) || wk_tensor_dtype(b) != dt) return NULL;
  int64_t n = wk_tensor_numel(a), nb = wk_tensor_numel(b);
  if (n >= WK_ITER_GRAIN || n == 0) return NULL;
  /* a flat loop: both row-major, or both channels_last alike (r takes a's format) */
  if (nb == 1 ? wk_tensor_dim(b) > wk_tensor_dim(a) || !dense_any(a) : !cpu_same_dense_layout(a, b)) return NULL;
  wk_tensor *r = cpu_empty_like_format(wk_tensor_sizes(a), wk_tensor_dim(a), dt, &a, 1);
  if (!r) return NULL;
  if (dt == WK_F32 && (op == WK_BOP_add || op == WK_BOP_mul)) { /* simd.h; r is fresh */
    float *o = wk_tensor_data(r), al = (float)alpha;
    const float *x = wk_tensor_data(a), *y = wk_tensor_data(b);
    if (nb == 1)
      op == WK_BOP_add ? cpu_simd->add_scalar(o, x, al * y[0], n) : cpu_simd->mul_scalar(o, x, y[0], n);
    else
      op == WK_BOP_add ? cpu_simd->add(o, x, y, al, n) : cpu_simd->mul(o, x, y, n);
  } else if (dt == WK_F32)
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
  int op;
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
    case WK_BOP_eq: for (int64_t i = b; i < e; i++) o[i] = x[i] == v; break;
    case WK_BOP_ne: for (int64_t i = b; i < e; i++) o[i] = x[i] != v; break;
    case WK_BOP_lt: for (int64_t i = b; i < e; i++) o[i] = x[i] < v; break;
    case WK_BOP_le: for (int64_t i = b; i < e; i++) o[i] = x[i] <= v; break;
    case WK_BOP_gt: for (int64_t i = b; i < e; i++) o[i] = x[i] > v; break;
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
static int fast_f32(int op, wk_tensor *a, const wk_value *other, wk_tensor **out) {
  if (wk_tensor_dtype(a) != WK_F32 || !dense_any(a)) return 0;
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
    if (op != WK_BOP_mul || other->tag != WK_V_TENSOR || wk_tensor_dtype(b) != WK_BOOL || !cpu_same_dense_layout(a, b))
      return 0;
    j.m = wk_tensor_data(b);
    fn = fast_mask_range;
    rt = WK_F32;
  }
  wk_tensor *r = cpu_empty_like_format(wk_tensor_sizes(a), wk_tensor_dim(a), rt, &a, 1);
  if (!r) return -1;
  j.o = wk_tensor_data(r);
  if (n < WK_ITER_GRAIN)
    fn(&j, 0, n);
  else
    wk_parallel_for(0, n, WK_ITER_GRAIN, fn, &j);
  *out = r;
  return 1;
}

/* add_ / mul_ on a contiguous f32 self with a contiguous f32 other of self's
 * shape (or one element) that is self itself or shares no memory with it:
 * computed straight into self (the general path computes a new tensor and
 * copies it back). Same formula, same bits. */
typedef struct {
  int op;
  float *o;
  const float *b;
  float al;
  bool bscal;
} inplace_job;

static void inplace_range(void *p, int64_t b, int64_t e) {
  const inplace_job *j = p;
  float *o = j->o + b;
  int64_t n = e - b;
  if (j->bscal)
    j->op == WK_BOP_add ? cpu_simd->add_scalar(o, o, j->al * j->b[0], n) : cpu_simd->mul_scalar(o, o, j->b[0], n);
  else
    j->op == WK_BOP_add ? cpu_simd->add(o, o, j->b + b, j->al, n) : cpu_simd->mul(o, o, j->b + b, n);
}

/* 0: does not apply; else the kernel's status (outs[0] set). */
static int inplace_f32(const wk_binary_variant *info, const wk_value *args, wk_value *outs, wk_status *st) {
  int op = info->op;
  if (info->mode != CPU_INPLACE || info->scalar || (op != WK_BOP_add && op != WK_BOP_mul)) return 0;
  if (args[1].tag != WK_V_TENSOR) return 0;
  wk_tensor *a = args[0].u.t, *b = args[1].u.t;
  if (wk_tensor_dtype(a) != WK_F32 || wk_tensor_dtype(b) != WK_F32) return 0;
  int64_t n = wk_tensor_numel(a), nb = wk_tensor_numel(b);
  /* a flat loop: both row-major, or both channels_last alike */
  if (nb == 1 ? wk_tensor_dim(b) > wk_tensor_dim(a) || !dense_any(a) : !cpu_same_dense_layout(a, b)) return 0;
  float *o = wk_tensor_data(a);
  const float *y = wk_tensor_data(b);
  if (n > 0 && !(nb == 1 ? (y < o || y >= o + n) : cpu_simd_disjoint(o, y, n))) return 0;
  inplace_job j = {op, o, y, info->alpha ? (float)wk_value_as_f64(&args[2]) : 1.0f, nb == 1};
  if (n < WK_ITER_GRAIN)
    inplace_range(&j, 0, n);
  else
    wk_parallel_for(0, n, WK_ITER_GRAIN, inplace_range, &j);
  *st = wk_kernel_done_inplace(WK_OK, a, outs);
  return 1;
}

static wk_status k_binary(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const wk_binary_variant *info = ctx->user;
  int op = info->op;
  wk_status ist;
  if (inplace_f32(info, args, outs, &ist)) return ist;
  bool arith = op == WK_BOP_add || op == WK_BOP_sub || op == WK_BOP_mul || op == WK_BOP_div;
  if (info->mode == CPU_FUNCTIONAL && !info->scalar && arith && !(info->rounding && args[2].tag == WK_V_STR)) {
    double alpha = info->alpha ? wk_value_as_f64(&args[2]) : 1.0;
    wk_tensor *r = fast_binary(op, WK_ARG_T(0), WK_ARG_T(1), alpha);
    if (r) {
      outs[0] = WK_VT(r);
      return WK_OK;
    }
  }
  if (info->mode == CPU_FUNCTIONAL && ((is_compare(op) && info->scalar) || (op == WK_BOP_mul && !info->scalar))) {
    wk_tensor *r = NULL;
    int done = fast_f32(op, WK_ARG_T(0), &args[1], &r);
    if (done < 0) return wk_last_error();
    if (done) {
      outs[0] = WK_VT(r);
      return WK_OK;
    }
  }
  wk_binary_call call;
  wk_binary_call_read(&call, info, args);
  bctx c = {call.op, call.alpha_f, call.alpha_i, false};
  wk_tensor *target = info->mode == CPU_INPLACE ? WK_ARG_T(0) : info->mode == CPU_OUT ? WK_ARG_T(call.out_index) : NULL;
  /* The result dtype the meta function decided; comparisons and logical ops
   * compute in the operands' promoted dtype and write bool. */
  wk_dtype rt = wk_kernel_meta(ctx, 0)->dtype;
  if (is_compare(op) || is_logical(op)) rt = wk_result_type(args, 2);
  wk_tensor *r = compute(wk_bop_name(op), &c, WK_ARG_T(0), &args[1], rt);
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
  wk_release_n((wk_tensor *const[]){cb, a, b}, 3);
  return wk_kernel_done(s, res, outs);
}

wk_status cpu_register_binary(void) {
  wk_status s = WK_OK;
  for (int i = 0; i < WK_BINARY_VARIANT_COUNT && !s; i++)
    s = cpu_reg(wk_binary_variants[i].name, k_binary, (void *)&wk_binary_variants[i]);
  if (!s) s = cpu_reg("where.self", k_where, NULL);
  return s;
}
