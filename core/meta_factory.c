/* Meta functions of the factories (zeros, ones, full, arange, linspace, eye,
 * the *_like forms, fill_, zero_) and the random ops (rand, randn, randint,
 * randperm, rand_like, randn_like, bernoulli, uniform_, normal_): the checks on
 * sizes, dtypes and Scalars with PyTorch's messages, and the result's shape. */
#include <float.h>
#include <math.h>
#include <stdio.h>

#include <wick/sdk/check.h>

#include "meta.h"

static wk_dtype opt_dtype(const wk_value *v, wk_dtype def) { return v->tag == WK_V_DTYPE ? v->u.dtype : def; }
static bool is_intlike(const wk_value *v) { return v->tag == WK_V_INT || v->tag == WK_V_BOOL; }
static int64_t scalar_i64(const wk_value *v) { return v->tag == WK_V_BOOL ? (int64_t)v->u.b : v->u.i; }
static double scalar_f64(const wk_value *v) {
  return v->tag == WK_V_FLOAT ? v->u.f : (double)scalar_i64(v);
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

/* PyTorch's checked Scalar conversion to dt (unsigned types accept negative
 * integers down to -max, which wrap). */
static wk_status scalar_fits(const char *op, const wk_value *v, wk_dtype dt) {
  bool overflow = false;
  char vb[48];
  int64_t lo, hi;
  int_range(dt, &lo, &hi);
  if (is_intlike(v)) {
    int64_t x = scalar_i64(v);
    snprintf(vb, sizeof vb, "%lld", (long long)x);
    if (dt == WK_BOOL)
      overflow = false;
    else if (wk_dtype_is_integral(dt))
      overflow = x < (dt == WK_U8 ? -(int64_t)UINT8_MAX : lo) || x > hi;
    else
      overflow = fabs((double)x) > float_max(dt);
  } else {
    double x = v->u.f;
    snprintf(vb, sizeof vb, "%.17g", x);
    if (dt == WK_BOOL)
      overflow = false;
    else if (wk_dtype_is_integral(dt))
      overflow = !(x >= (double)lo && x <= (double)hi) || (dt == WK_I64 && x >= 9.2233720368547758e18);
    else
      overflow = isfinite(x) && fabs(x) > float_max(dt);
  }
  if (overflow)
    return wk_error(WK_ERR_INVALID_ARG, "%s(): value %s cannot be converted to type %s without overflow", op, vb,
                    wk_dtype_name(dt));
  return WK_OK;
}

/* A contiguous result of the requested shape, after PyTorch's checks on it. */
static wk_status new_shape(const char *op, wk_meta_out *o, const int64_t *sizes, int nd, wk_dtype dt) {
  if (nd > WK_MAX_DIMS)
    return wk_error(WK_ERR_SHAPE, "%s(): %d dimensions requested, at most %d supported", op, nd, WK_MAX_DIMS);
  for (int i = 0; i < nd; i++)
    if (sizes[i] < 0) {
      char b[WK_SHAPE_STR_MAX];
      return wk_error(WK_ERR_SHAPE, "%s(): Trying to create tensor with negative dimension %lld: %s", op,
                      (long long)sizes[i], wk_sizes_str(sizes, nd, b, sizeof b));
    }
  wk__meta_shape(o, sizes, nd, dt);
  return WK_OK;
}

/* ---- zeros, ones, full and the *_like forms ----------------------------------------------- */
static wk_status meta_zeros(wk_op *op, const wk_value *args, wk_meta_out *o) {
  return new_shape(MNAME, o, args[0].u.ints, args[0].len, opt_dtype(&args[1], WK_F32));
}

static wk_status meta_full(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_dtype def = args[1].tag == WK_V_INT ? WK_I64 : args[1].tag == WK_V_BOOL ? WK_BOOL : WK_F32;
  wk_dtype dt = opt_dtype(&args[2], def);
  wk_status s = scalar_fits(MNAME, &args[1], dt);
  return s ? s : new_shape(MNAME, o, args[0].u.ints, args[0].len, dt);
}

static wk_status meta_zeros_like(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk__meta_like(o, MT(0), opt_dtype(&args[1], MT(0)->dtype));
  return WK_OK;
}

static wk_status meta_full_like(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_dtype dt = opt_dtype(&args[2], MT(0)->dtype);
  wk_status s = scalar_fits(MNAME, &args[1], dt);
  if (!s) wk__meta_like(o, MT(0), dt);
  return s;
}

/* ---- arange, linspace, eye --------------------------------------------------------------- */
static wk_status meta_arange(wk_op *op, const wk_value *args, wk_meta_out *o) {
  const wk_value *vs = &args[0], *ve = &args[1], *vst = &args[2];
  bool all_int = is_intlike(vs) && is_intlike(ve) && is_intlike(vst);
  wk_dtype dt = opt_dtype(&args[3], all_int ? WK_I64 : WK_F32);
  if (dt == WK_BOOL) return wk_error(WK_ERR_DTYPE, "arange(): \"arange_cpu\" not implemented for 'bool'");
  double size_d;
  if (wk_dtype_is_integral(dt)) {
    wk_status st = scalar_fits("arange", vs, WK_I64);
    if (!st) st = scalar_fits("arange", ve, WK_I64);
    if (!st) st = scalar_fits("arange", vst, WK_I64);
    if (st) return st;
    /* Scalar::to<int64_t>: floats truncate toward zero */
    int64_t s = is_intlike(vs) ? scalar_i64(vs) : (int64_t)vs->u.f;
    int64_t e = is_intlike(ve) ? scalar_i64(ve) : (int64_t)ve->u.f;
    int64_t step = is_intlike(vst) ? scalar_i64(vst) : (int64_t)vst->u.f;
    if (step == 0) return wk_error(WK_ERR_INVALID_ARG, "arange(): step must be nonzero");
    if (!((step > 0 && e >= s) || (step < 0 && e <= s)))
      return wk_error(WK_ERR_INVALID_ARG, "arange(): upper bound and larger bound inconsistent with step sign");
    if (dt == WK_I64) {
      int64_t diff;
      double dd = __builtin_sub_overflow(e, s, &diff) ? (double)e - (double)s : (double)diff;
      size_d = ceil(dd / (double)step);
    } else {
      size_d = ceil((scalar_f64(ve) - scalar_f64(vs)) / scalar_f64(vst));
    }
  } else {
    double s = scalar_f64(vs), e = scalar_f64(ve), st = scalar_f64(vst);
    if (dt == WK_F16 || dt == WK_BF16) { /* PyTorch's accumulate type for half and bfloat16 is float */
      s = (float)s;
      e = (float)e;
      st = (float)st;
    }
    if (!(st > 0 || st < 0)) return wk_error(WK_ERR_INVALID_ARG, "arange(): step must be nonzero");
    if (!isfinite(s) || !isfinite(e)) {
      char b0[48], b1[48];
      snprintf(b0, sizeof b0, "%g", s);
      snprintf(b1, sizeof b1, "%g", e);
      return wk_error(WK_ERR_INVALID_ARG, "arange(): unsupported range: %s -> %s", b0, b1);
    }
    if (!((st > 0 && e >= s) || (st < 0 && e <= s)))
      return wk_error(WK_ERR_INVALID_ARG, "arange(): upper bound and larger bound inconsistent with step sign");
    size_d = ceil((scalar_f64(ve) - scalar_f64(vs)) / scalar_f64(vst));
  }
  if (!(size_d >= 0 && size_d <= 9.0e15))
    return wk_error(WK_ERR_INVALID_ARG, "arange(): invalid size, possible overflow?");
  int64_t n = (int64_t)size_d;
  return new_shape("arange", o, &n, 1, dt);
}

static wk_status meta_linspace(wk_op *op, const wk_value *args, wk_meta_out *o) {
  int64_t steps = args[2].u.i;
  wk_dtype dt = opt_dtype(&args[3], WK_F32);
  if (steps < 0)
    return wk_error(WK_ERR_INVALID_ARG, "linspace(): number of steps must be non-negative, got %lld",
                    (long long)steps);
  if (dt == WK_BOOL) return wk_error(WK_ERR_DTYPE, "linspace(): \"linspace_cpu\" not implemented for 'bool'");
  wk_status s = scalar_fits("linspace", &args[0], dt);
  if (!s) s = scalar_fits("linspace", &args[1], dt);
  return s ? s : new_shape("linspace", o, &steps, 1, dt);
}

static wk_status meta_eye(wk_op *op, const wk_value *args, wk_meta_out *o) {
  int64_t n = args[0].u.i, m = args[1].u.i;
  if (n < 0) return wk_error(WK_ERR_INVALID_ARG, "eye(): n must be greater or equal to 0, got %lld", (long long)n);
  if (m == -1) m = n;
  if (m < 0) return wk_error(WK_ERR_INVALID_ARG, "eye(): m must be greater or equal to 0, got %lld", (long long)m);
  int64_t sz[2] = {n, m};
  return new_shape("eye", o, sz, 2, opt_dtype(&args[2], WK_F32));
}

/* ---- fill_, zero_ ------------------------------------------------------------------------ */
/* PyTorch's checked_convert for fill_: a value outside the dtype's finite range
 * is refused (infinities and NaN are fine for floating types; bool takes
 * anything; uint8 takes negative integers down to -255, which wrap). */
static bool fill_overflows(const wk_value *v, wk_dtype dt) {
  double lo, hi;
  switch (dt) {
    case WK_I8: lo = -128, hi = 127; break;
    case WK_U8: lo = 0, hi = 255; break;
    case WK_I16: lo = -32768, hi = 32767; break;
    case WK_I32: lo = -2147483648.0, hi = 2147483647.0; break;
    case WK_I64: lo = -9223372036854775808.0, hi = 9223372036854775807.0; break;
    case WK_F16: lo = -65504.0, hi = 65504.0; break;
    case WK_BF16: lo = -3.3895313892515355e38, hi = 3.3895313892515355e38; break;
    case WK_F32: lo = -3.4028234663852886e38, hi = 3.4028234663852886e38; break;
    default: return false; /* bool, f64 */
  }
  if (v->tag == WK_V_BOOL) return false;
  if (v->tag == WK_V_INT) {
    int64_t i = v->u.i;
    if (dt == WK_U8) return i > 255 || (i < 0 && (uint64_t)0 - (uint64_t)i > 255);
    return wk_dtype_is_integral(dt) ? (i < (int64_t)lo || (dt != WK_I64 && i > (int64_t)hi))
                                    : ((double)i < lo || (double)i > hi);
  }
  double f = v->u.f;
  if (wk_dtype_is_floating(dt)) return !isinf(f) && (f < lo || f > hi);
  return f != f || f < lo || f > hi;
}

static wk_status meta_fill_(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_dtype dt = MT(0)->dtype;
  const wk_value *v = &args[1];
  if (fill_overflows(v, dt)) {
    if (v->tag == WK_V_INT)
      return wk_error(WK_ERR_INVALID_ARG, "fill_: value %lld cannot be converted to type %s without overflow",
                      (long long)v->u.i, wk_dtype_name(dt));
    return wk_error(WK_ERR_INVALID_ARG, "fill_: value %g cannot be converted to type %s without overflow", v->u.f,
                    wk_dtype_name(dt));
  }
  wk__meta_like(o, MT(0), dt);
  return WK_OK;
}

static wk_status meta_zero_(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  wk__meta_like(o, MT(0), MT(0)->dtype);
  return WK_OK;
}

/* ---- random ------------------------------------------------------------------------------- */
static wk_status need_float(const char *op, wk_dtype dt) {
  if (wk_dtype_is_floating(dt)) return WK_OK;
  return wk_error(WK_ERR_DTYPE, "%s(): expected a floating point dtype, but got %s", op, wk_dtype_name(dt));
}


static wk_status meta_rand(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_dtype dt = opt_dtype(&args[1], WK_F32);
  wk_status s = need_float(MNAME, dt);
  return s ? s : new_shape(MNAME, o, args[0].u.ints, args[0].len, dt);
}

static wk_status meta_rand_like(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_dtype dt = opt_dtype(&args[1], MT(0)->dtype);
  wk_status s = need_float(MNAME, dt);
  if (!s) wk__meta_like(o, MT(0), dt);
  return s;
}

/* Largest magnitude of an integer the dtype holds exactly and can receive. */
static wk_status check_int_bound(const char *what, int64_t v, wk_dtype dt) {
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
    return wk_error(WK_ERR_INVALID_ARG, "randint(): %s = %lld is out of bounds for %s", what, (long long)v,
                    wk_dtype_name(dt));
  return WK_OK;
}

static wk_status meta_randint(wk_op *op, const wk_value *args, wk_meta_out *o) {
  int64_t low = args[0].u.i, high = args[1].u.i;
  wk_dtype dt = opt_dtype(&args[3], WK_I64);
  if (low >= high)
    return wk_error(WK_ERR_INVALID_ARG,
                    "randint(): expected 'low' to be less than 'high', but got low=%lld >= high=%lld", (long long)low,
                    (long long)high);
  wk_status s = check_int_bound("low", low, dt);
  if (!s) s = check_int_bound("high - 1", high - 1, dt);
  return s ? s : new_shape(MNAME, o, args[2].u.ints, args[2].len, dt);
}

static wk_status meta_randperm(wk_op *op, const wk_value *args, wk_meta_out *o) {
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
  return new_shape(MNAME, o, &n, 1, dt);
}

/* bernoulli(self): the probabilities' range is data, checked by the kernel. */
static wk_status meta_bernoulli(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  wk_dtype dt = MT(0)->dtype;
  if (!wk_dtype_is_floating(dt))
    return wk_error(WK_ERR_DTYPE, "bernoulli(): expected a floating point tensor of probabilities, but got %s",
                    wk_dtype_name(dt));
  wk__meta_like(o, MT(0), dt);
  return WK_OK;
}

static wk_status meta_bernoulli_p(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  double p = args[1].u.f;
  if (!(p >= 0 && p <= 1))
    return wk_error(WK_ERR_INVALID_ARG, "bernoulli.p(): bernoulli_ expects p to be in [0, 1], but got p=%g", p);
  wk__meta_like(o, MT(0), MT(0)->dtype);
  return WK_OK;
}

static wk_status meta_uniform_(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  wk_tensor *self = MT(0);
  double from = args[1].u.f, to = args[2].u.f;
  wk_status s = need_float("uniform_", self->dtype);
  if (s) return s;
  if (!(from <= to))
    return wk_error(WK_ERR_INVALID_ARG, "uniform_(): expects to return a [from, to) range, but found from=%g > to=%g",
                    from, to);
  if (!(to - from <= float_max(self->dtype)))
    return wk_error(WK_ERR_INVALID_ARG, "uniform_(): expects to-from <= the largest %s, but found to=%g and from=%g",
                    wk_dtype_name(self->dtype), to, from);
  if ((s = wk__meta_no_overlap("uniform_", self))) return s;
  wk__meta_like(o, self, self->dtype);
  return WK_OK;
}

static wk_status meta_normal_(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  wk_tensor *self = MT(0);
  double sd = args[2].u.f;
  wk_status s = need_float("normal_", self->dtype);
  if (s) return s;
  if (!(sd >= 0)) return wk_error(WK_ERR_INVALID_ARG, "normal_(): expects std >= 0.0, but found std %g", sd);
  if ((s = wk__meta_no_overlap("normal_", self))) return s;
  wk__meta_like(o, self, self->dtype);
  return WK_OK;
}

static const wk__meta_row g_rows[] = {
    {"zeros", meta_zeros},
    {"ones", meta_zeros},
    {"full", meta_full},
    {"arange", meta_arange},
    {"linspace", meta_linspace},
    {"eye", meta_eye},
    {"zeros_like", meta_zeros_like},
    {"ones_like", meta_zeros_like},
    {"full_like", meta_full_like},
    {"fill_", meta_fill_},
    {"zero_", meta_zero_},
    {"rand", meta_rand},
    {"randn", meta_rand},
    {"randint", meta_randint},
    {"randperm", meta_randperm},
    {"rand_like", meta_rand_like},
    {"randn_like", meta_rand_like},
    {"bernoulli", meta_bernoulli},
    {"bernoulli.p", meta_bernoulli_p},
    {"uniform_", meta_uniform_},
    {"normal_", meta_normal_},
};

const wk__meta_family wk__metas_factory = {g_rows, sizeof g_rows / sizeof g_rows[0]};
