/* cpu plugin: factories (zeros, ones, full, arange, linspace, eye and the
 * *_like forms) and random ops (rand, randn, randint, randperm, rand_like,
 * randn_like, bernoulli, uniform_, normal_). Random numbers come from the
 * core's counter-based Philox: element i draws from counter offset + i, so a
 * result depends on the seed and the call order only, never on threads.
 * Argument checks and result shapes are the ops' meta functions
 * (core/meta_factory.c); these kernels only compute. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

#define FILL_GRAIN 65536
#define RNG_GRAIN 8192
#define TWO_PI 6.283185307179586476925286766559

/* ---- shared helpers ------------------------------------------------------------------ */

static bool is_intlike(const wk_value *v) { return v->tag == WK_V_INT || v->tag == WK_V_BOOL; }

static int64_t scalar_i64(const wk_value *v) { return v->tag == WK_V_BOOL ? (int64_t)v->u.b : v->u.i; }

/* Converts a Scalar to one element of dtype dt in `bytes` (the meta function
 * has refused values that overflow dt). */
static void scalar_store(const wk_value *v, wk_dtype dt, unsigned char bytes[8]) {
  memset(bytes, 0, 8);
  if (is_intlike(v) && !wk_dtype_is_floating(dt))
    wk_store_i64(bytes, dt, scalar_i64(v));
  else
    wk_store_f64(bytes, dt, is_intlike(v) ? (double)scalar_i64(v) : v->u.f);
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

/* The result the meta function decided, filled with the Scalar v. */
static wk_status make_filled(const wk_kernel_ctx *ctx, const wk_value *v, wk_value *outs) {
  wk_tensor *t = wk_meta_empty(ctx, 0);
  if (!t) return wk_last_error();
  unsigned char bytes[8];
  scalar_store(v, wk_tensor_dtype(t), bytes);
  fill_contig(t, bytes);
  outs[0] = WK_VT(t);
  return WK_OK;
}

/* ---- zeros, ones, full and the *_like forms ---------------------------------------------- */

static wk_status k_zeros(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)args;
  wk_value z = WK_VI(0);
  return make_filled(ctx, &z, outs);
}

static wk_status k_ones(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)args;
  wk_value one = WK_VI(1);
  return make_filled(ctx, &one, outs);
}

/* full(size, value) and full_like(self, value) */
static wk_status k_full(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return make_filled(ctx, &args[1], outs);
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

/* Scalar::to<int64_t> (the meta function has checked the range). */
static int64_t scalar_to_i64(const wk_value *v) { return is_intlike(v) ? scalar_i64(v) : (int64_t)v->u.f; }

static wk_status k_arange(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *t = wk_meta_empty(ctx, 0);
  if (!t) return wk_last_error();
  range_job j = {0};
  j.dt = wk_tensor_dtype(t);
  j.es = wk_dtype_size(j.dt);
  j.integral = wk_dtype_is_integral(j.dt);
  if (j.integral) {
    j.si = scalar_to_i64(&args[0]);
    j.sti = scalar_to_i64(&args[2]);
  } else if (j.dt == WK_F16 || j.dt == WK_BF16) { /* PyTorch's accumulate type for half and bfloat16 is float */
    j.sd = (float)wk_value_as_f64(&args[0]);
    j.std_ = (float)wk_value_as_f64(&args[2]);
  } else {
    j.sd = wk_value_as_f64(&args[0]);
    j.std_ = wk_value_as_f64(&args[2]);
  }
  j.out = (char *)wk_tensor_data(t);
  run_range(&j, wk_tensor_numel(t));
  outs[0] = WK_VT(t);
  return WK_OK;
}

static wk_status k_linspace(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  int64_t steps = args[2].u.i;
  if (steps == 1) return make_filled(ctx, &args[0], outs);
  wk_tensor *t = wk_meta_empty(ctx, 0);
  if (!t) return wk_last_error();
  wk_dtype dt = wk_tensor_dtype(t);
  unsigned char bs[8], be[8];
  scalar_store(&args[0], dt, bs);
  scalar_store(&args[1], dt, be);
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
  (void)args;
  wk_value z = WK_VI(0);
  wk_status s = make_filled(ctx, &z, outs);
  if (s) return s;
  wk_tensor *t = outs[0].u.t;
  int64_t n = wk_tensor_size(t, 0), m = wk_tensor_size(t, 1);
  char *d = (char *)wk_tensor_data(t);
  wk_dtype dt = wk_tensor_dtype(t);
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

/* The result the meta function decided, filled by the job: rand, randn,
 * randint, the *_like forms, bernoulli. */
static wk_status random_new(const wk_kernel_ctx *ctx, rjob *j, wk_value *outs) {
  wk_tensor *t = wk_meta_empty(ctx, 0);
  if (!t) return wk_last_error();
  wk_status s = run_random(j, ctx->device, t);
  return wk_kernel_done(s, t, outs);
}

/* rand, rand_like */
static wk_status k_rand(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)args;
  rjob j = {.kind = R_UNIFORM, .a = 0, .b = 1};
  return random_new(ctx, &j, outs);
}

/* randn, randn_like */
static wk_status k_randn(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)args;
  rjob j = {.kind = R_NORMAL, .a = 0, .b = 1};
  return random_new(ctx, &j, outs);
}

static wk_status k_randint(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  int64_t low = args[0].u.i, high = args[1].u.i;
  rjob j = {.kind = R_RANDINT, .low = low, .range = (uint64_t)high - (uint64_t)low};
  return random_new(ctx, &j, outs);
}

static wk_status k_randperm(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  int64_t n = args[0].u.i;
  wk_tensor *t = wk_meta_empty(ctx, 0);
  if (!t) return wk_last_error();
  wk_dtype dt = wk_tensor_dtype(t);
  uint64_t seed, off;
  wk_status s = wk_rng_reserve(ctx->device, (uint64_t)n, &seed, &off);
  int64_t *perm = dt == WK_I64 ? (int64_t *)wk_tensor_data(t) : wk_malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  if (!s && !perm) s = wk_error(WK_ERR_NO_MEMORY, "randperm(): out of memory for %lld elements", (long long)n);
  if (s) {
    if (dt != WK_I64) wk_free(perm);
    wk_release(t);
    return s;
  }
  wk_randperm_fill(perm, n, seed, off);
  if (dt != WK_I64) {
    char *d = (char *)wk_tensor_data(t);
    size_t es = wk_dtype_size(dt);
    for (int64_t i = 0; i < n; i++) wk_store_i64(d + (size_t)i * es, dt, perm[i]);
    wk_free(perm);
  }
  outs[0] = WK_VT(t);
  return WK_OK;
}

/* bernoulli(self): the probabilities are data, checked here. */
static wk_status k_bernoulli(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *x = WK_ARG_T(0);
  wk_dtype dt = wk_tensor_dtype(x);
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
  wk_status s = random_new(ctx, &j, outs);
  wk_release(p);
  return s;
}

static wk_status k_bernoulli_p(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  rjob j = {.kind = R_BERN_P, .a = args[1].u.f};
  return random_new(ctx, &j, outs);
}

/* run_random as wk_fill_inplace wants it (buf on its own device). */
static wk_status fill_random(void *job, wk_tensor *buf) {
  return run_random(job, wk_tensor_device(buf), buf);
}

/* In-place random fill of self (any strides): numbers are drawn in logical
 * row-major order into a contiguous buffer, then copied when self is strided. */
static wk_status random_inplace(wk_tensor *self, rjob *j, wk_value *outs) {
  return wk_fill_inplace(self, fill_random, j, cpu_copy, outs);
}

static wk_status k_uniform_(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  rjob j = {.kind = R_UNIFORM, .a = args[1].u.f, .b = args[2].u.f};
  return random_inplace(WK_ARG_T(0), &j, outs);
}

static wk_status k_normal_(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  rjob j = {.kind = R_NORMAL, .a = args[1].u.f, .b = args[2].u.f};
  return random_inplace(WK_ARG_T(0), &j, outs);
}

wk_status cpu_register_factory(void) {
  static const struct {
    const char *op;
    wk_kernel_fn fn;
  } regs[] = {
      {"zeros", k_zeros},         {"ones", k_ones},           {"full", k_full},
      {"arange", k_arange},       {"linspace", k_linspace},   {"eye", k_eye},
      {"zeros_like", k_zeros},    {"ones_like", k_ones},      {"full_like", k_full},
      {"rand", k_rand},           {"randn", k_randn},         {"randint", k_randint},
      {"randperm", k_randperm},   {"rand_like", k_rand},      {"randn_like", k_randn},
      {"bernoulli", k_bernoulli}, {"bernoulli.p", k_bernoulli_p}, {"uniform_", k_uniform_},
      {"normal_", k_normal_},
  };
  for (size_t i = 0; i < sizeof regs / sizeof regs[0]; i++) {
    wk_status s = cpu_reg(regs[i].op, regs[i].fn, NULL);
    if (s) return s;
  }
  return WK_OK;
}
