/* cpu plugin: factories (zeros, ones, full, arange, linspace, eye and the
 * *_like forms) and random ops (rand, randn, randint, randperm, rand_like,
 * randn_like, bernoulli, uniform_, normal_). Random numbers come from the
 * core's counter-based Philox: element i draws from counter offset + i, so a
 * result depends on the seed and the call order only, never on threads. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

#define FILL_GRAIN 65536
#define RNG_GRAIN 8192
#define TWO_PI 6.283185307179586476925286766559

/* ---- shared helpers ------------------------------------------------------------------ */

static wk_dtype opt_dtype(const wk_value *v, wk_dtype def) { return v->tag == WK_V_DTYPE ? v->u.dtype : def; }

static bool is_intlike(const wk_value *v) { return v->tag == WK_V_INT || v->tag == WK_V_BOOL; }

static int64_t scalar_i64(const wk_value *v) { return v->tag == WK_V_BOOL ? (int64_t)v->u.b : v->u.i; }

/* A new contiguous tensor, after PyTorch's checks on the requested shape. */
static wk_tensor *new_tensor(const char *op, const int64_t *sizes, int nd, wk_dtype dt) {
  if (nd > WK_MAX_DIMS) {
    wk_error(WK_ERR_SHAPE, "%s(): %d dimensions requested, at most %d supported", op, nd, WK_MAX_DIMS);
    return NULL;
  }
  for (int i = 0; i < nd; i++)
    if (sizes[i] < 0) {
      char b[256];
      wk_error(WK_ERR_SHAPE, "%s(): Trying to create tensor with negative dimension %lld: %s", op,
               (long long)sizes[i], wk_sizes_str(sizes, nd, b, sizeof b));
      return NULL;
    }
  return cpu_empty(sizes, nd, dt);
}

static void int_range(wk_dtype dt, int64_t *lo, int64_t *hi) {
  switch (dt) {
    case WK_I8: *lo = INT8_MIN, *hi = INT8_MAX; break;
    case WK_U8: *lo = 0, *hi = UINT8_MAX; break;
    case WK_I16: *lo = INT16_MIN, *hi = INT16_MAX; break;
    case WK_I32: *lo = INT32_MIN, *hi = INT32_MAX; break;
    case WK_BOOL: *lo = 0, *hi = 1; break;
    default: *lo = INT64_MIN, *hi = INT64_MAX; break;
  }
}

static double float_max(wk_dtype dt) {
  switch (dt) {
    case WK_F32: return FLT_MAX;
    case WK_F16: return 65504.0;
    case WK_BF16: return 3.3895313892515355e38;
    default: return DBL_MAX;
  }
}

/* Significand bits of a floating dtype (std::numeric_limits<T>::digits). */
static int float_digits(wk_dtype dt) {
  switch (dt) {
    case WK_F64: return 53;
    case WK_F16: return 11;
    case WK_BF16: return 8;
    default: return 24;
  }
}

/* Converts a Scalar to one element of dtype dt in `bytes`, refusing values
 * that overflow the dtype as PyTorch's checked conversion does (unsigned
 * types accept negative integers down to -max, which wrap). */
static wk_status scalar_bytes(const char *op, const wk_value *v, wk_dtype dt, unsigned char bytes[8]) {
  memset(bytes, 0, 8);
  bool overflow = false;
  char vb[48];
  if (is_intlike(v)) {
    int64_t x = scalar_i64(v);
    snprintf(vb, sizeof vb, "%lld", (long long)x);
    if (dt == WK_BOOL) {
      wk_store_i64(bytes, dt, x);
    } else if (wk_dtype_is_integral(dt)) {
      int64_t lo, hi;
      int_range(dt, &lo, &hi);
      if (dt == WK_U8) lo = -(int64_t)UINT8_MAX;
      overflow = x < lo || x > hi;
      wk_store_i64(bytes, dt, x);
    } else {
      overflow = fabs((double)x) > float_max(dt);
      wk_store_f64(bytes, dt, (double)x);
    }
  } else {
    double x = v->u.f;
    snprintf(vb, sizeof vb, "%.17g", x);
    if (dt == WK_BOOL) {
      wk_store_f64(bytes, dt, x);
    } else if (wk_dtype_is_integral(dt)) {
      int64_t lo, hi;
      int_range(dt, &lo, &hi);
      overflow = !(x >= (double)lo && x <= (double)hi) || (dt == WK_I64 && x >= 9.2233720368547758e18);
      wk_store_f64(bytes, dt, x);
    } else {
      overflow = isfinite(x) && fabs(x) > float_max(dt);
      wk_store_f64(bytes, dt, x);
    }
  }
  if (overflow)
    return wk_error(WK_ERR_INVALID_ARG, "%s(): value %s cannot be converted to type %s without overflow", op, vb,
                    wk_dtype_name(dt));
  return WK_OK;
}

/* ---- filling a contiguous tensor ---------------------------------------------------------- */

typedef struct {
  char *data;
  size_t es;
  unsigned char bytes[8];
  bool zero;
} fill_job;

static void fill_range(void *p, int64_t b, int64_t e) {
  const fill_job *f = p;
  size_t n = (size_t)(e - b);
  char *d = f->data + (size_t)b * f->es;
  if (f->zero) {
    memset(d, 0, n * f->es);
    return;
  }
  switch (f->es) {
    case 1: memset(d, f->bytes[0], n); break;
    case 2: {
      uint16_t v;
      memcpy(&v, f->bytes, 2);
      for (size_t i = 0; i < n; i++) ((uint16_t *)d)[i] = v;
      break;
    }
    case 4: {
      uint32_t v;
      memcpy(&v, f->bytes, 4);
      for (size_t i = 0; i < n; i++) ((uint32_t *)d)[i] = v;
      break;
    }
    default: {
      uint64_t v;
      memcpy(&v, f->bytes, 8);
      for (size_t i = 0; i < n; i++) ((uint64_t *)d)[i] = v;
      break;
    }
  }
}

/* Fills the contiguous tensor t with the element in `bytes`. */
static void fill_contig(wk_tensor *t, const unsigned char bytes[8]) {
  int64_t n = wk_tensor_numel(t);
  if (n == 0) return;
  fill_job f = {(char *)wk_tensor_data(t), wk_dtype_size(wk_tensor_dtype(t)), {0}, true};
  memcpy(f.bytes, bytes, 8);
  for (size_t i = 0; i < f.es; i++) f.zero = f.zero && bytes[i] == 0;
  if (n < FILL_GRAIN)
    fill_range(&f, 0, n);
  else
    wk_parallel_for(0, n, FILL_GRAIN, fill_range, &f);
}

/* New tensor of the given shape filled with the Scalar v. */
static wk_status make_filled(const char *op, const int64_t *sizes, int nd, wk_dtype dt, const wk_value *v,
                             wk_value *outs) {
  unsigned char bytes[8];
  wk_status s = scalar_bytes(op, v, dt, bytes);
  if (s) return s;
  wk_tensor *t = new_tensor(op, sizes, nd, dt);
  if (!t) return wk_last_error();
  fill_contig(t, bytes);
  outs[0] = WK_VT(t);
  return WK_OK;
}

/* ---- zeros, ones, full and the *_like forms ---------------------------------------------- */

static wk_status k_zeros(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  wk_value z = WK_VI(0);
  return make_filled("zeros", args[0].u.ints, args[0].len, opt_dtype(&args[1], WK_F32), &z, outs);
}

static wk_status k_ones(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  wk_value one = WK_VI(1);
  return make_filled("ones", args[0].u.ints, args[0].len, opt_dtype(&args[1], WK_F32), &one, outs);
}

static wk_status k_full(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  wk_dtype def = args[1].tag == WK_V_INT ? WK_I64 : args[1].tag == WK_V_BOOL ? WK_BOOL : WK_F32;
  return make_filled("full", args[0].u.ints, args[0].len, opt_dtype(&args[2], def), &args[1], outs);
}

static wk_status k_zeros_like(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  wk_tensor *x = WK_ARG_T(0);
  wk_value z = WK_VI(0);
  return make_filled("zeros_like", wk_tensor_sizes(x), wk_tensor_dim(x), opt_dtype(&args[1], wk_tensor_dtype(x)),
                     &z, outs);
}

static wk_status k_ones_like(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  wk_tensor *x = WK_ARG_T(0);
  wk_value one = WK_VI(1);
  return make_filled("ones_like", wk_tensor_sizes(x), wk_tensor_dim(x), opt_dtype(&args[1], wk_tensor_dtype(x)),
                     &one, outs);
}

static wk_status k_full_like(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  wk_tensor *x = WK_ARG_T(0);
  return make_filled("full_like", wk_tensor_sizes(x), wk_tensor_dim(x), opt_dtype(&args[2], wk_tensor_dtype(x)),
                     &args[1], outs);
}

/* ---- arange, linspace, eye --------------------------------------------------------------- */

typedef struct {
  char *out;
  wk_dtype dt;
  size_t es;
  bool integral;
  int64_t si, sti;  /* integral arange: start, step */
  double sd, std_;  /* floating arange: start, step */
  /* linspace */
  bool lin;
  int64_t steps, halfway;
  double ls, le, lstep;
} range_job;

static void range_fill(void *p, int64_t b, int64_t e) {
  const range_job *j = p;
  for (int64_t i = b; i < e; i++) {
    char *o = j->out + (size_t)i * j->es;
    if (j->lin) {
      if (j->dt == WK_F64 || j->integral) {
        double v = i < j->halfway ? j->ls + j->lstep * (double)i : j->le - j->lstep * (double)(j->steps - i - 1);
        wk_store_f64(o, j->dt, v);
      } else { /* float, half, bfloat16 compute in float as PyTorch does */
        float s = (float)j->ls, en = (float)j->le, st = (float)j->lstep;
        float v = i < j->halfway ? s + st * (float)i : en - st * (float)(j->steps - i - 1);
        wk_store_f64(o, j->dt, v);
      }
    } else if (j->integral) {
      wk_store_i64(o, j->dt, (int64_t)((uint64_t)j->si + (uint64_t)j->sti * (uint64_t)i));
    } else if (j->dt == WK_F32 || j->dt == WK_F64) {
      wk_store_f64(o, j->dt, j->sd + j->std_ * (double)i);
    } else {
      wk_store_f64(o, j->dt, (float)j->sd + (float)j->std_ * (float)i);
    }
  }
}

static void run_range(range_job *j, int64_t n) {
  if (n < FILL_GRAIN)
    range_fill(j, 0, n);
  else
    wk_parallel_for(0, n, FILL_GRAIN, range_fill, j);
}

/* Scalar converted to int64 (PyTorch's Scalar::to<int64_t>), with an overflow check. */
static wk_status scalar_to_i64(const char *op, const wk_value *v, int64_t *out) {
  unsigned char b[8];
  wk_status s = scalar_bytes(op, v, WK_I64, b);
  if (!s) memcpy(out, b, 8);
  return s;
}

static wk_status k_arange(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  const wk_value *vs = &args[0], *ve = &args[1], *vst = &args[2];
  bool all_int = is_intlike(vs) && is_intlike(ve) && is_intlike(vst);
  wk_dtype dt = opt_dtype(&args[3], all_int ? WK_I64 : WK_F32);
  if (dt == WK_BOOL) return wk_error(WK_ERR_DTYPE, "arange(): \"arange_cpu\" not implemented for 'bool'");
  range_job j = {0};
  j.dt = dt;
  j.es = wk_dtype_size(dt);
  j.integral = wk_dtype_is_integral(dt);
  double size_d;
  char b0[48], b1[48];
  if (j.integral) {
    int64_t s, e;
    wk_status st = scalar_to_i64("arange", vs, &s);
    if (!st) st = scalar_to_i64("arange", ve, &e);
    if (!st) st = scalar_to_i64("arange", vst, &j.sti);
    if (st) return st;
    j.si = s;
    if (j.sti == 0) return wk_error(WK_ERR_INVALID_ARG, "arange(): step must be nonzero");
    if (!((j.sti > 0 && e >= s) || (j.sti < 0 && e <= s)))
      return wk_error(WK_ERR_INVALID_ARG, "arange(): upper bound and larger bound inconsistent with step sign");
    if (dt == WK_I64) {
      int64_t diff;
      double dd = __builtin_sub_overflow(e, s, &diff) ? (double)e - (double)s : (double)diff;
      size_d = ceil(dd / (double)j.sti);
    } else {
      size_d = ceil((wk_value_as_f64(ve) - wk_value_as_f64(vs)) / wk_value_as_f64(vst));
    }
  } else {
    bool half = dt == WK_F16 || dt == WK_BF16;
    double s = wk_value_as_f64(vs), e = wk_value_as_f64(ve), st = wk_value_as_f64(vst);
    if (half) { /* PyTorch's accumulate type for half and bfloat16 is float */
      s = (float)s;
      e = (float)e;
      st = (float)st;
    }
    j.sd = s;
    j.std_ = st;
    if (!(st > 0 || st < 0)) return wk_error(WK_ERR_INVALID_ARG, "arange(): step must be nonzero");
    if (!isfinite(s) || !isfinite(e)) {
      snprintf(b0, sizeof b0, "%g", s);
      snprintf(b1, sizeof b1, "%g", e);
      return wk_error(WK_ERR_INVALID_ARG, "arange(): unsupported range: %s -> %s", b0, b1);
    }
    if (!((st > 0 && e >= s) || (st < 0 && e <= s)))
      return wk_error(WK_ERR_INVALID_ARG, "arange(): upper bound and larger bound inconsistent with step sign");
    size_d = ceil((wk_value_as_f64(ve) - wk_value_as_f64(vs)) / wk_value_as_f64(vst));
  }
  if (!(size_d >= 0 && size_d <= 9.0e15))
    return wk_error(WK_ERR_INVALID_ARG, "arange(): invalid size, possible overflow?");
  int64_t n = (int64_t)size_d;
  wk_tensor *t = new_tensor("arange", &n, 1, dt);
  if (!t) return wk_last_error();
  j.out = (char *)wk_tensor_data(t);
  run_range(&j, n);
  outs[0] = WK_VT(t);
  return WK_OK;
}

static wk_status k_linspace(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  int64_t steps = args[2].u.i;
  wk_dtype dt = opt_dtype(&args[3], WK_F32);
  if (steps < 0)
    return wk_error(WK_ERR_INVALID_ARG, "linspace(): number of steps must be non-negative, got %lld",
                    (long long)steps);
  if (dt == WK_BOOL) return wk_error(WK_ERR_DTYPE, "linspace(): \"linspace_cpu\" not implemented for 'bool'");
  unsigned char bs[8], be[8];
  wk_status s = scalar_bytes("linspace", &args[0], dt, bs);
  if (!s) s = scalar_bytes("linspace", &args[1], dt, be);
  if (s) return s;
  if (steps == 1) return make_filled("linspace", &steps, 1, dt, &args[0], outs);
  wk_tensor *t = new_tensor("linspace", &steps, 1, dt);
  if (!t) return wk_last_error();
  range_job j = {0};
  j.out = (char *)wk_tensor_data(t);
  j.dt = dt;
  j.es = wk_dtype_size(dt);
  j.integral = wk_dtype_is_integral(dt);
  j.lin = true;
  j.steps = steps;
  j.halfway = steps / 2;
  /* start and end as the result dtype holds them (Scalar::to<scalar_t>). */
  j.ls = wk_load_f64(bs, dt);
  j.le = wk_load_f64(be, dt);
  if (j.integral || dt == WK_F64)
    j.lstep = (j.le - j.ls) / (double)(steps - 1);
  else
    j.lstep = ((float)j.le - (float)j.ls) / (float)(steps - 1);
  if (steps > 0) run_range(&j, steps);
  outs[0] = WK_VT(t);
  return WK_OK;
}

static wk_status k_eye(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  int64_t n = args[0].u.i, m = args[1].u.i;
  wk_dtype dt = opt_dtype(&args[2], WK_F32);
  if (n < 0) return wk_error(WK_ERR_INVALID_ARG, "eye(): n must be greater or equal to 0, got %lld", (long long)n);
  if (m == -1) m = n;
  if (m < 0) return wk_error(WK_ERR_INVALID_ARG, "eye(): m must be greater or equal to 0, got %lld", (long long)m);
  int64_t sz[2] = {n, m};
  wk_value z = WK_VI(0);
  wk_status s = make_filled("eye", sz, 2, dt, &z, outs);
  if (s) return s;
  char *d = (char *)wk_tensor_data(outs[0].u.t);
  size_t es = wk_dtype_size(dt);
  for (int64_t i = 0; i < (n < m ? n : m); i++) wk_store_i64(d + (size_t)(i * (m + 1)) * es, dt, 1);
  return WK_OK;
}

/* ---- random ---------------------------------------------------------------------------- */

typedef enum { R_UNIFORM, R_NORMAL, R_RANDINT, R_BERN_T, R_BERN_P } rkind;

typedef struct {
  rkind kind;
  wk_dtype dt;
  size_t es;
  char *out;
  const char *probs; /* R_BERN_T: contiguous probabilities */
  wk_dtype pdt;
  uint64_t seed, offset;
  double a, b; /* uniform: from, to; normal: mean, std; bernoulli.p: p */
  int64_t low; /* randint */
  uint64_t range;
} rjob;

/* Uniform [0, 1) from the counter's words with as many bits as the dtype's
 * significand, so rounding to the dtype can never give 1. */
static double unit_for(wk_dtype dt, const uint32_t r[4]) {
  switch (dt) {
    case WK_F32: return wk_u32_to_unit_f32(r[0]);
    case WK_F16: return (double)(r[0] >> 21) * (1.0 / 2048.0);
    case WK_BF16: return (double)(r[0] >> 24) * (1.0 / 256.0);
    default: return wk_u64_to_unit_f64(r[0], r[1]);
  }
}

/* One standard normal by Box-Muller: 24-bit uniforms from r[0], r[1] for
 * float types, 53-bit ones from r[0..3] for double. */
static double normal_for(wk_dtype dt, const uint32_t r[4]) {
  double u1, u2;
  if (dt == WK_F64) {
    u1 = wk_u64_to_unit_f64(r[0], r[1]);
    u2 = wk_u64_to_unit_f64(r[2], r[3]);
  } else {
    u1 = wk_u32_to_unit_f32(r[0]);
    u2 = wk_u32_to_unit_f32(r[1]);
  }
  return sqrt(-2.0 * log(1.0 - u1)) * cos(TWO_PI * u2);
}

static void rand_range(void *p, int64_t b, int64_t e) {
  const rjob *j = p;
  uint32_t r[4];
  for (int64_t i = b; i < e; i++) {
    wk_philox_at(j->seed, j->offset + (uint64_t)i, r);
    char *o = j->out + (size_t)i * j->es;
    switch (j->kind) {
      case R_UNIFORM: {
        double u = unit_for(j->dt, r);
        if (j->dt == WK_F64) {
          *(double *)o = u * (j->b - j->a) + j->a;
        } else {
          float v = (float)u * ((float)j->b - (float)j->a) + (float)j->a;
          if (j->dt == WK_F32)
            *(float *)o = v;
          else
            wk_store_f64(o, j->dt, v);
        }
        break;
      }
      case R_NORMAL: {
        double v = j->a + j->b * normal_for(j->dt, r);
        if (j->dt == WK_F32)
          *(float *)o = (float)v;
        else
          wk_store_f64(o, j->dt, v);
        break;
      }
      case R_RANDINT: {
        uint64_t x = j->range <= ((uint64_t)1 << 32) ? (uint64_t)r[0] % j->range
                                                      : ((((uint64_t)r[0] << 32) | r[1]) % j->range);
        wk_store_i64(o, j->dt, (int64_t)((uint64_t)j->low + x));
        break;
      }
      case R_BERN_T: {
        double pr = wk_load_f64(j->probs + (size_t)i * wk_dtype_size(j->pdt), j->pdt);
        wk_store_i64(o, j->dt, wk_u64_to_unit_f64(r[0], r[1]) < pr);
        break;
      }
      case R_BERN_P: wk_store_i64(o, j->dt, wk_u64_to_unit_f64(r[0], r[1]) < j->a); break;
    }
  }
}

/* Reserves numel counters of dev's generator and fills the contiguous tensor t. */
static wk_status run_random(rjob *j, wk_device dev, wk_tensor *t) {
  int64_t n = wk_tensor_numel(t);
  wk_status s = wk_rng_reserve(dev, (uint64_t)n, &j->seed, &j->offset);
  if (s) return s;
  j->dt = wk_tensor_dtype(t);
  j->es = wk_dtype_size(j->dt);
  j->out = (char *)wk_tensor_data(t);
  if (n < RNG_GRAIN)
    rand_range(j, 0, n);
  else
    wk_parallel_for(0, n, RNG_GRAIN, rand_range, j);
  return WK_OK;
}

static wk_status need_float(const char *op, wk_dtype dt) {
  if (wk_dtype_is_floating(dt)) return WK_OK;
  return wk_error(WK_ERR_DTYPE, "%s(): expected a floating point dtype, but got %s", op, wk_dtype_name(dt));
}

/* New tensor filled by the job: rand, randn, randint, bernoulli. */
static wk_status random_new(const char *op, const wk_kernel_ctx *ctx, rjob *j, const int64_t *sizes, int nd,
                            wk_dtype dt, wk_value *outs) {
  wk_tensor *t = new_tensor(op, sizes, nd, dt);
  if (!t) return wk_last_error();
  wk_status s = run_random(j, ctx->device, t);
  if (s) {
    wk_release(t);
    return s;
  }
  outs[0] = WK_VT(t);
  return WK_OK;
}

static wk_status k_rand(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_dtype dt = opt_dtype(&args[1], WK_F32);
  wk_status s = need_float("rand", dt);
  if (s) return s;
  rjob j = {.kind = R_UNIFORM, .a = 0, .b = 1};
  return random_new("rand", ctx, &j, args[0].u.ints, args[0].len, dt, outs);
}

static wk_status k_randn(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_dtype dt = opt_dtype(&args[1], WK_F32);
  wk_status s = need_float("randn", dt);
  if (s) return s;
  rjob j = {.kind = R_NORMAL, .a = 0, .b = 1};
  return random_new("randn", ctx, &j, args[0].u.ints, args[0].len, dt, outs);
}

static wk_status k_rand_like(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *x = WK_ARG_T(0);
  wk_dtype dt = opt_dtype(&args[1], wk_tensor_dtype(x));
  wk_status s = need_float("rand_like", dt);
  if (s) return s;
  rjob j = {.kind = R_UNIFORM, .a = 0, .b = 1};
  return random_new("rand_like", ctx, &j, wk_tensor_sizes(x), wk_tensor_dim(x), dt, outs);
}

static wk_status k_randn_like(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *x = WK_ARG_T(0);
  wk_dtype dt = opt_dtype(&args[1], wk_tensor_dtype(x));
  wk_status s = need_float("randn_like", dt);
  if (s) return s;
  rjob j = {.kind = R_NORMAL, .a = 0, .b = 1};
  return random_new("randn_like", ctx, &j, wk_tensor_sizes(x), wk_tensor_dim(x), dt, outs);
}

/* Largest magnitude of an integer the dtype holds exactly and can receive. */
static wk_status check_int_bound(const char *op, const char *what, int64_t v, wk_dtype dt) {
  bool bad;
  if (wk_dtype_is_floating(dt)) {
    int64_t lim = (int64_t)1 << float_digits(dt);
    bad = v < -lim || v > lim;
  } else {
    int64_t lo, hi;
    int_range(dt, &lo, &hi);
    bad = v < lo || v > hi;
  }
  if (bad)
    return wk_error(WK_ERR_INVALID_ARG, "%s(): %s = %lld is out of bounds for %s", op, what, (long long)v,
                    wk_dtype_name(dt));
  return WK_OK;
}

static wk_status k_randint(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  int64_t low = args[0].u.i, high = args[1].u.i;
  wk_dtype dt = opt_dtype(&args[3], WK_I64);
  if (low >= high)
    return wk_error(WK_ERR_INVALID_ARG,
                    "randint(): expected 'low' to be less than 'high', but got low=%lld >= high=%lld", (long long)low,
                    (long long)high);
  wk_status s = check_int_bound("randint", "low", low, dt);
  if (!s) s = check_int_bound("randint", "high - 1", high - 1, dt);
  if (s) return s;
  rjob j = {.kind = R_RANDINT, .low = low, .range = (uint64_t)high - (uint64_t)low};
  return random_new("randint", ctx, &j, args[2].u.ints, args[2].len, dt, outs);
}

static wk_status k_randperm(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  int64_t n = args[0].u.i;
  wk_dtype dt = opt_dtype(&args[1], WK_I64);
  if (n < 0) return wk_error(WK_ERR_INVALID_ARG, "randperm(): n must be non-negative, got %lld", (long long)n);
  if (dt == WK_BOOL) return wk_error(WK_ERR_DTYPE, "randperm(): \"randperm\" not implemented for 'bool'");
  if (wk_dtype_is_floating(dt)) {
    int64_t lim = ((int64_t)1 << float_digits(dt)) + 1;
    if (n > lim)
      return wk_error(WK_ERR_INVALID_ARG, "randperm(): n cannot be greater than %lld for %s type", (long long)lim,
                      wk_dtype_name(dt));
  } else {
    int64_t lo, hi;
    int_range(dt, &lo, &hi);
    if (n - 1 > hi)
      return wk_error(WK_ERR_INVALID_ARG, "randperm(): n is too large for result tensor type: '%s'", wk_dtype_name(dt));
  }
  wk_tensor *t = new_tensor("randperm", &n, 1, dt);
  if (!t) return wk_last_error();
  uint64_t seed, off;
  wk_status s = wk_rng_reserve(ctx->device, (uint64_t)n, &seed, &off);
  int64_t *perm = dt == WK_I64 ? (int64_t *)wk_tensor_data(t) : malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  if (!s && !perm) s = wk_error(WK_ERR_NO_MEMORY, "randperm(): out of memory for %lld elements", (long long)n);
  if (s) {
    wk_release(t);
    return s;
  }
  for (int64_t i = 0; i < n; i++) perm[i] = i;
  /* Fisher-Yates: step i swaps i with a uniform pick from [i, n), drawn from counter off + i. */
  for (int64_t i = 0; i + 1 < n; i++) {
    uint32_t r[4];
    wk_philox_at(seed, off + (uint64_t)i, r);
    uint64_t span = (uint64_t)(n - i);
    uint64_t x = span <= ((uint64_t)1 << 32) ? (uint64_t)r[0] % span : ((((uint64_t)r[0] << 32) | r[1]) % span);
    int64_t k = i + (int64_t)x, tmp = perm[i];
    perm[i] = perm[k];
    perm[k] = tmp;
  }
  if (dt != WK_I64) {
    char *d = (char *)wk_tensor_data(t);
    size_t es = wk_dtype_size(dt);
    for (int64_t i = 0; i < n; i++) wk_store_i64(d + (size_t)i * es, dt, perm[i]);
    free(perm);
  }
  outs[0] = WK_VT(t);
  return WK_OK;
}

static wk_status k_bernoulli(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *x = WK_ARG_T(0);
  wk_dtype dt = wk_tensor_dtype(x);
  if (!wk_dtype_is_floating(dt))
    return wk_error(WK_ERR_DTYPE, "bernoulli(): expected a floating point tensor of probabilities, but got %s",
                    wk_dtype_name(dt));
  wk_tensor *p = wk_contiguous(x);
  if (!p) return wk_last_error();
  const char *pd = (const char *)wk_tensor_data(p);
  size_t pes = wk_dtype_size(dt);
  int64_t n = wk_tensor_numel(p);
  for (int64_t i = 0; i < n; i++) {
    double v = wk_load_f64(pd + (size_t)i * pes, dt);
    if (!(v >= 0 && v <= 1)) {
      wk_release(p);
      return wk_error(WK_ERR_INVALID_ARG,
                      "bernoulli(): expected all probabilities to be in [0, 1], but got %g at flat index %lld", v,
                      (long long)i);
    }
  }
  rjob j = {.kind = R_BERN_T, .probs = pd, .pdt = dt};
  wk_status s = random_new("bernoulli", ctx, &j, wk_tensor_sizes(x), wk_tensor_dim(x), dt, outs);
  wk_release(p);
  return s;
}

static wk_status k_bernoulli_p(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *x = WK_ARG_T(0);
  double p = args[1].u.f;
  if (!(p >= 0 && p <= 1))
    return wk_error(WK_ERR_INVALID_ARG, "bernoulli.p(): bernoulli_ expects p to be in [0, 1], but got p=%g", p);
  rjob j = {.kind = R_BERN_P, .a = p};
  return random_new("bernoulli", ctx, &j, wk_tensor_sizes(x), wk_tensor_dim(x), wk_tensor_dtype(x), outs);
}

/* In-place random fill of self (any strides): numbers are drawn in logical
 * row-major order into a contiguous buffer, then copied when self is strided. */
static wk_status random_inplace(const char *op, wk_tensor *self, rjob *j, wk_value *outs) {
  int nd = wk_tensor_dim(self);
  const int64_t *sz = wk_tensor_sizes(self), *st = wk_tensor_strides(self);
  for (int d = 0; d < nd; d++)
    if (sz[d] > 1 && st[d] == 0)
      return wk_error(WK_ERR_INVALID_ARG,
                      "%s(): unsupported operation: more than one element of the written-to tensor refers to a "
                      "single memory location. Please clone() the tensor before performing the operation.",
                      op);
  bool contig = wk_tensor_is_contiguous(self);
  wk_tensor *buf = contig ? wk_retain(self) : cpu_empty(sz, nd, wk_tensor_dtype(self));
  if (!buf) return wk_last_error();
  wk_status s = run_random(j, wk_tensor_device(self), buf);
  if (!s && !contig) s = cpu_copy(self, buf);
  wk_release(buf);
  if (s) return s;
  wk_tensor_bump_version(self);
  outs[0] = WK_VT(self);
  return WK_OK;
}

static wk_status k_uniform_(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  wk_tensor *self = WK_ARG_T(0);
  double from = args[1].u.f, to = args[2].u.f;
  wk_status s = need_float("uniform_", wk_tensor_dtype(self));
  if (s) return s;
  if (!(from <= to))
    return wk_error(WK_ERR_INVALID_ARG, "uniform_(): expects to return a [from, to) range, but found from=%g > to=%g",
                    from, to);
  if (!(to - from <= float_max(wk_tensor_dtype(self))))
    return wk_error(WK_ERR_INVALID_ARG, "uniform_(): expects to-from <= the largest %s, but found to=%g and from=%g",
                    wk_dtype_name(wk_tensor_dtype(self)), to, from);
  rjob j = {.kind = R_UNIFORM, .a = from, .b = to};
  return random_inplace("uniform_", self, &j, outs);
}

static wk_status k_normal_(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  wk_tensor *self = WK_ARG_T(0);
  double mean = args[1].u.f, sd = args[2].u.f;
  wk_status s = need_float("normal_", wk_tensor_dtype(self));
  if (s) return s;
  if (!(sd >= 0)) return wk_error(WK_ERR_INVALID_ARG, "normal_(): expects std >= 0.0, but found std %g", sd);
  rjob j = {.kind = R_NORMAL, .a = mean, .b = sd};
  return random_inplace("normal_", self, &j, outs);
}

wk_status cpu_register_factory(void) {
  static const struct {
    const char *op;
    wk_kernel_fn fn;
  } regs[] = {
      {"zeros", k_zeros},         {"ones", k_ones},           {"full", k_full},
      {"arange", k_arange},       {"linspace", k_linspace},   {"eye", k_eye},
      {"zeros_like", k_zeros_like}, {"ones_like", k_ones_like}, {"full_like", k_full_like},
      {"rand", k_rand},           {"randn", k_randn},         {"randint", k_randint},
      {"randperm", k_randperm},   {"rand_like", k_rand_like}, {"randn_like", k_randn_like},
      {"bernoulli", k_bernoulli}, {"bernoulli.p", k_bernoulli_p}, {"uniform_", k_uniform_},
      {"normal_", k_normal_},
  };
  for (size_t i = 0; i < sizeof regs / sizeof regs[0]; i++) {
    wk_status s = cpu_reg(regs[i].op, regs[i].fn, NULL);
    if (s) return s;
  }
  return WK_OK;
}
