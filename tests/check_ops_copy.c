/* check_ops_copy: the cpu plugin's copy_, fill_ and zero_, and the core
 * composites built on copy_ (clone, to.dtype, to.device): every dtype pair
 * against conversions computed here (round to nearest even for f16/bf16,
 * truncation then wrap-around for integers, != 0 for bool), strided,
 * broadcast and overlapping operands, version counters, errors and leaks. */
#include "testutil.h"

static const wk_dtype ALL[] = {WK_F32, WK_F64, WK_F16, WK_BF16, WK_I8, WK_U8, WK_I16, WK_I32, WK_I64, WK_BOOL};
#define NDT ((int)(sizeof ALL / sizeof ALL[0]))

#define LEAK_BEGIN int64_t live0_ = wk_live_tensors()
#define LEAK_END ck_assert_int_eq(wk_live_tensors(), live0_)

static bool is_float(wk_dtype d) {
  return d == WK_F32 || d == WK_F64 || d == WK_F16 || d == WK_BF16;
}

/* ---- reference conversions ----------------------------------------------------------- */

/* Rounds v to a binary float with p significant bits, minimum normal exponent
 * emin and largest finite value maxv, ties to even (overflow gives inf). */
static double round_bits(double v, int p, int emin, double maxv) {
  if (v == 0 || isnan(v) || isinf(v)) return v;
  int e;
  frexp(v, &e); /* |v| in [2^(e-1), 2^e) */
  int E = e - 1 < emin ? emin : e - 1;
  double ulp = ldexp(1.0, E - (p - 1));
  double r = nearbyint(v / ulp) * ulp; /* the default rounding mode is to nearest even */
  if (fabs(r) > maxv) return copysign(INFINITY, v);
  return r;
}
static double to_f16(double v) {
  return round_bits(v, 11, -14, 65504.0);
}
static double to_bf16(double v) {
  return round_bits(v, 8, -126, 3.3895313892515355e38);
}

/* The value a `dst` element holds after copying the `src` value v, as
 * PyTorch converts: floats to ints truncate toward zero and wrap like C casts
 * of in-range int32 values, anything to bool is v != 0, doubles reach f16/bf16
 * through float. */
static double convert(double v, wk_dtype src, wk_dtype dst) {
  switch (dst) {
    case WK_F64:
      return v;
    case WK_F32:
      return (float)v;
    case WK_F16:
      return to_f16(src == WK_F64 ? (double)(float)v : v);
    case WK_BF16:
      return to_bf16(src == WK_F64 ? (double)(float)v : v);
    case WK_BOOL:
      return v != 0;
    default:
      break;
  }
  int64_t i = (int64_t)trunc(v);
  switch (dst) {
    case WK_I8:
      return (int8_t)i;
    case WK_U8:
      return (uint8_t)i;
    case WK_I16:
      return (int16_t)i;
    case WK_I32:
      return (int32_t)i;
    default:
      return (double)i;
  }
}

/* Source values per kind: floats exercise rounding, truncation of negatives
 * and wrap-around of narrow ints (all finite in f16: casting inf or NaN to an
 * integer is undefined in PyTorch); integers and bools their own ranges. */
static const double FVALS[] = {
    0,          -0.0,   1.5, -1.5,     2.7,      -2.7, 100.9,   -100.9,        127.5,         200.25,
    -129.5,     1000.5, 0.1, 1e-3,     3e-8,     1e-8, 65519.0, 1.00048828125, 1.00146484375, 1.00390625,
    1.01171875, -3.7,   3.7, -60000.5, 33000.25, 0.5};
#define NF ((int)(sizeof FVALS / sizeof FVALS[0]))
static const double IVALS[] = {0, 1, -1, 2, 100, -100, 127, -128, 255, 1000, -1000, 70000, 2049, 2051, -7, 42};
#define NI ((int)(sizeof IVALS / sizeof IVALS[0]))

/* A [2, n/2] tensor of dtype dt holding the values (as dt stores them). */
static wk_tensor *src_tensor(wk_dtype dt, const double *vals, int n) {
  return tu_tensor(vals, dt, (const int64_t[]){2, n / 2}, 2);
}

/* Checks dst's values against convert(src values). */
static void check_converted_(wk_tensor *dst, wk_tensor *src, int line) {
  int64_t n = wk_tensor_numel(src);
  ck_assert_int_eq(wk_tensor_numel(dst), n);
  double *sv = tu_values(src), *ref = malloc(sizeof(double) * (size_t)(n ? n : 1));
  for (int64_t k = 0; k < n; k++) ref[k] = convert(sv[k], wk_tensor_dtype(src), wk_tensor_dtype(dst));
  char what[64];
  snprintf(what, sizeof what, "copy %s -> %s", wk_dtype_name(wk_tensor_dtype(src)),
           wk_dtype_name(wk_tensor_dtype(dst)));
  tu_assert_close_(dst, ref, n, 0, 0, what, line); /* conversions are exact */
  free(sv);
  free(ref);
}
#define CHECK_CONVERTED(dst, src) check_converted_(dst, src, __LINE__)

static wk_tensor *call1(const char *name, const wk_value *a, int n) {
  wk_value o[WK_MAX_OUTS];
  if (wk_call(name, a, n, o) != WK_OK) return NULL;
  return o[0].u.t;
}
#define CALL(name, ...) call1(name, (const wk_value[]){__VA_ARGS__}, WK__NARGS(__VA_ARGS__))

/* ---- the reference itself ------------------------------------------------------------------- */

START_TEST(test_copy_reference_rounding) {
  /* sanity checks of this file's f16/bf16 rounding against known bit patterns */
  ck_assert(to_f16(65519) == 65504 && isinf(to_f16(65520)) && to_f16(1e-8) == 0);
  ck_assert(to_f16(3e-8) == ldexp(1, -24) && to_f16(0.1) == 0.0999755859375);
  ck_assert(to_f16(1.00048828125) == 1 && to_f16(1.00146484375) == 1.001953125 && to_f16(2049) == 2048);
  ck_assert(to_f16(2051) == 2052 && to_f16(-2.7) == -2.69921875);
  ck_assert(to_bf16(1.00390625) == 1 && to_bf16(1.01171875) == 1.015625 && isinf(to_bf16(3.4e38)));
  ck_assert(to_bf16(0.1) == 0.10009765625);
}
END_TEST

/* ---- copy_ between dtypes ------------------------------------------------------------------ */

START_TEST(test_copy_every_dtype_pair) {
  LEAK_BEGIN;
  for (int i = 0; i < NDT; i++)
    for (int j = 0; j < NDT; j++) {
      wk_dtype sd = ALL[i], dd = ALL[j];
      bool fsrc = is_float(sd);
      wk_tensor *src = fsrc ? src_tensor(sd, FVALS, NF) : src_tensor(sd, IVALS, NI);
      int64_t n = wk_tensor_numel(src);
      /* a contiguous destination */
      wk_tensor *dst = wk_empty(WK_SHAPE(2, n / 2), WK_OPTS(.dtype = dd));
      uint64_t v0 = wk_tensor_version(dst);
      ck_assert_ptr_eq(wk_copy_(dst, src), dst);
      ck_assert_uint_eq(wk_tensor_version(dst), v0 + 1);
      ck_assert_int_eq(wk_tensor_dtype(dst), dd);
      CHECK_CONVERTED(dst, src);
      /* a transposed destination and a strided source */
      wk_tensor *buf = wk_zeros(WK_SHAPE(n / 2, 2), WK_OPTS(.dtype = dd));
      wk_tensor *dt = wk_t(buf);
      wk_tensor *snc = tu_noncontig(src);
      ck_assert(!wk_tensor_is_contiguous(dt) && !wk_tensor_is_contiguous(snc));
      ck_assert_ptr_eq(wk_copy_(dt, snc), dt);
      CHECK_CONVERTED(dt, src);
      /* to.dtype goes through the same conversion */
      wk_tensor *conv = wk_to_dtype(src, dd);
      TU_NOTNULL(conv);
      ck_assert_int_eq(wk_tensor_dtype(conv), dd);
      CHECK_CONVERTED(conv, src);
      wk_release(conv);
      wk_release(snc);
      wk_release(dt);
      wk_release(buf);
      wk_release(dst);
      wk_release(src);
    }
  LEAK_END;
}
END_TEST

START_TEST(test_copy_special_values) {
  LEAK_BEGIN;
  /* f16/bf16 rounding, overflow, subnormals, NaN and signed zero */
  wk_tensor *f = TU_T(WK_F32, (8), 65519, 65520, -65520, 3e-8, 1e-8, NAN, -0.0, INFINITY);
  wk_tensor *h = wk_to_dtype(f, WK_F16);
  TU_EQ_VALS(h, 65504, INFINITY, -INFINITY, 5.9604644775390625e-08, 0, NAN, 0, INFINITY);
  double v[8];
  TU_OK(wk_tensor_to_f64(h, v, 8));
  ck_assert(signbit(v[6]));
  wk_tensor *b = wk_to_dtype(f, WK_BF16);
  TU_EQ_VALS(b, 65536, 65536, -65536, to_bf16((float)3e-8), to_bf16((float)1e-8), NAN, 0, INFINITY);
  /* bf16 -> f16 */
  wk_tensor *hb = wk_to_dtype(b, WK_F16);
  TU_EQ_VALS(hb, INFINITY, INFINITY, -INFINITY, to_f16(to_bf16((float)3e-8)), 0, NAN, 0, INFINITY);
  /* NaN and -0.0 to bool: NaN is true, -0.0 false */
  wk_tensor *bo = wk_to_dtype(f, WK_BOOL);
  TU_EQ_VALS(bo, 1, 1, 1, 1, 1, 1, 0, 1);
  /* int64 -> float rounds once, from the integer */
  wk_tensor *big = wk_empty(WK_SHAPE(3), WK_OPTS(.dtype = WK_I64));
  int64_t bv[3] = {((int64_t)1 << 60) + ((int64_t)1 << 36) + 1, ((int64_t)1 << 53) + 1, -(((int64_t)1 << 24) + 3)};
  memcpy(wk_tensor_data(big), bv, sizeof bv);
  wk_tensor *bf = wk_to_dtype(big, WK_F32);
  TU_EQ_VALS(bf, 1152921642045800448.0, 9007199254740992.0, -16777220.0);
  wk_tensor *bd = wk_to_dtype(big, WK_F64);
  TU_EQ_VALS(bd, 1152921573326323712.0, 9007199254740992.0, -16777219.0);
  wk_tensor *bh = wk_to_dtype(big, WK_BF16);
  TU_EQ_VALS(bh, 1152921504606846976.0, 9007199254740992.0, -16777216.0);
  /* int64 -> narrower ints wraps, -> bool is != 0 */
  wk_tensor *bi = wk_to_dtype(big, WK_I32);
  TU_EQ_VALS(bi, 1, 1, -16777219);
  wk_tensor *bb = wk_to_dtype(big, WK_BOOL);
  TU_EQ_VALS(bb, 1, 1, 1);
  /* u8 <-> i8 reinterpretations */
  wk_tensor *u = TU_T(WK_U8, (4), 0, 127, 128, 255);
  wk_tensor *s = wk_to_dtype(u, WK_I8);
  TU_EQ_VALS(s, 0, 127, -128, -1);
  wk_tensor *u2 = wk_to_dtype(s, WK_U8);
  TU_EQ_VALS(u2, 0, 127, 128, 255);
  wk_tensor *tb = TU_T(WK_BOOL, (2), 1, 0);
  wk_tensor *tf = wk_to_dtype(tb, WK_F16);
  TU_EQ_VALS(tf, 1, 0);
  wk_tensor *rel[] = {f, h, b, hb, bo, big, bf, bd, bh, bi, bb, u, s, u2, tb, tf};
  for (size_t k = 0; k < sizeof rel / sizeof rel[0]; k++) wk_release(rel[k]);
  LEAK_END;
}
END_TEST

/* ---- strided, broadcast and overlapping operands ------------------------------------------ */

START_TEST(test_copy_broadcast_sources) {
  LEAK_BEGIN;
  wk_tensor *dst = wk_zeros(WK_SHAPE(4, 3), (wk_options){0});
  /* a row broadcast over the rows */
  wk_tensor *row = TU_T(WK_I32, (3), 1, 2, 3);
  ck_assert_ptr_eq(wk_copy_(dst, row), dst);
  TU_EQ_VALS(dst, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3);
  /* a column [4, 1] */
  wk_tensor *col = TU_T(WK_F64, (4, 1), -1, -2, -3, -4);
  wk_copy_(dst, col);
  TU_EQ_VALS(dst, -1, -1, -1, -2, -2, -2, -3, -3, -3, -4, -4, -4);
  /* an expanded (stride 0) source */
  wk_tensor *e = wk_expand(row, WK_SHAPE(4, 3));
  ck_assert_int_eq(wk_tensor_stride(e, 0), 0);
  wk_copy_(dst, e);
  TU_EQ_VALS(dst, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3);
  /* a 0-dim source fills */
  wk_tensor *z = wk_scalar_tensor(7.5, WK_F16);
  wk_copy_(dst, z);
  TU_EQ_VALS(dst, 7.5, 7.5, 7.5, 7.5, 7.5, 7.5, 7.5, 7.5, 7.5, 7.5, 7.5, 7.5);
  /* a source with more dimensions than the destination is refused */
  wk_tensor *r3 = TU_T(WK_U8, (1, 1, 3), 9, 8, 7);
  ck_assert_ptr_null(wk_copy_(dst, r3));
  TU_FAILS_WITH(WK_ERR_SHAPE, "cannot be broadcast to destination of shape [4, 3]");
  /* zero-size copies */
  wk_tensor *ed = wk_empty(WK_SHAPE(0, 3), (wk_options){0}), *es = wk_empty(WK_SHAPE(3), WK_OPTS(.dtype = WK_I64));
  ck_assert_ptr_eq(wk_copy_(ed, es), ed);
  wk_tensor *e0 = wk_empty(WK_SHAPE(2, 0), (wk_options){0}), *s0 = wk_empty(WK_SHAPE(0), WK_OPTS(.dtype = WK_F16));
  ck_assert_ptr_eq(wk_copy_(e0, s0), e0);
  ck_assert_ptr_eq(wk_copy_(e0, z), e0);
  wk_release(e0);
  wk_release(s0);
  wk_release(ed);
  wk_release(es);
  wk_release(r3);
  wk_release(z);
  wk_release(e);
  wk_release(col);
  wk_release(row);
  wk_release(dst);
  LEAK_END;
}
END_TEST

START_TEST(test_copy_strided_views) {
  LEAK_BEGIN;
  const wk_dtype dts[] = {WK_F32, WK_F16, WK_I64, WK_U8, WK_BOOL, WK_F64};
  for (int d = 0; d < 6; d++) {
    /* write into every other column of a [4, 6] base: other columns untouched */
    wk_tensor *base = wk_full(WK_SHAPE(4, 6), 9, WK_OPTS(.dtype = dts[d]));
    wk_tensor *view = wk_slice(base, 1, 1, 6, 2); /* columns 1, 3, 5 */
    double vals[12];
    for (int k = 0; k < 12; k++) vals[k] = dts[d] == WK_BOOL ? (k % 3 == 0) : k % 5;
    wk_tensor *src0 = tu_tensor(vals, WK_F64, (const int64_t[]){3, 4}, 2);
    wk_tensor *src = wk_t(src0); /* [4, 3], transposed */
    uint64_t v0 = wk_tensor_version(base);
    ck_assert_ptr_eq(wk_copy_(view, src), view);
    ck_assert_uint_eq(wk_tensor_version(base), v0 + 1); /* shared with the view */
    double *bv = tu_values(base), *sv = tu_values(src);
    for (int r = 0; r < 4; r++)
      for (int c = 0; c < 6; c++) {
        double want = c % 2 ? sv[r * 3 + c / 2] : (dts[d] == WK_BOOL ? 1 : 9);
        ck_assert_msg(bv[r * 6 + c] == want, "%s base[%d][%d] = %g, expected %g", wk_dtype_name(dts[d]), r, c,
                      bv[r * 6 + c], want);
      }
    free(bv);
    free(sv);
    /* a permuted 3-d destination from a sliced source */
    wk_tensor *b3 = wk_zeros(WK_SHAPE(2, 3, 4), WK_OPTS(.dtype = dts[d]));
    wk_tensor *p3 = wk_permute(b3, WK_SHAPE(2, 0, 1)); /* [4, 2, 3] */
    wk_tensor *big = tu_rand(WK_SHAPE(8, 2, 3), WK_F32, -50, 50, 3 + (uint64_t)d);
    wk_tensor *sl = wk_slice(big, 0, 0, 8, 2);
    wk_copy_(p3, sl);
    CHECK_CONVERTED(p3, sl);
    wk_release(sl);
    wk_release(big);
    wk_release(p3);
    wk_release(b3);
    wk_release(src);
    wk_release(src0);
    wk_release(view);
    wk_release(base);
  }
  LEAK_END;
}
END_TEST

START_TEST(test_copy_overlapping) {
  LEAK_BEGIN;
  /* x.copy_(x.t()) on square matrices gives the transpose, for several dtypes and sizes */
  const wk_dtype dts[] = {WK_F64, WK_F32, WK_F16, WK_I32, WK_BOOL};
  const int64_t ns[] = {2, 7, 64};
  for (int d = 0; d < 5; d++)
    for (int k = 0; k < 3; k++) {
      int64_t n = ns[k];
      wk_tensor *x = tu_rand((const int64_t[]){n, n}, 2, dts[d], -100, 100, 40 + (uint64_t)(d * 3 + k));
      double *before = tu_values(x);
      wk_tensor *xt = wk_t(x);
      ck_assert_ptr_eq(wk_copy_(x, xt), x);
      double *after = tu_values(x);
      for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++)
          ck_assert_msg(after[i * n + j] == before[j * n + i], "%s n=%lld: x[%lld][%lld] = %g, expected %g",
                        wk_dtype_name(dts[d]), (long long)n, (long long)i, (long long)j, after[i * n + j],
                        before[j * n + i]);
      free(before);
      free(after);
      wk_release(xt);
      wk_release(x);
    }
  /* shifting a vector by one inside its own storage, both directions */
  wk_tensor *v = TU_T(WK_I64, (6), 0, 1, 2, 3, 4, 5);
  wk_tensor *hi = wk_slice(v, 0, 1, 6, 1), *lo = wk_slice(v, 0, 0, 5, 1);
  wk_copy_(hi, lo);
  TU_EQ_VALS(v, 0, 0, 1, 2, 3, 4);
  wk_copy_(lo, hi);
  TU_EQ_VALS(v, 0, 1, 2, 3, 4, 4);
  /* the same storage, other dtype view is impossible; a self copy is a no-op */
  ck_assert_ptr_eq(wk_copy_(v, v), v);
  TU_EQ_VALS(v, 0, 1, 2, 3, 4, 4);
  /* reversing halves: disjoint views of one storage */
  wk_tensor *a = wk_slice(v, 0, 0, 3, 1), *b = wk_slice(v, 0, 3, 6, 1);
  wk_copy_(a, b);
  TU_EQ_VALS(v, 3, 4, 4, 3, 4, 4);
  /* a broadcast source aliasing the destination: row 0 copied over all rows */
  wk_tensor *m = TU_T(WK_F32, (3, 2), 1, 2, 3, 4, 5, 6);
  wk_tensor *r0 = wk_slice(m, 0, 0, 1, 1);
  wk_copy_(m, r0);
  TU_EQ_VALS(m, 1, 2, 1, 2, 1, 2);
  wk_release(r0);
  wk_release(m);
  wk_release(a);
  wk_release(b);
  wk_release(hi);
  wk_release(lo);
  wk_release(v);
  LEAK_END;
}
END_TEST

/* Large enough for the thread pool, strided and converting. */
START_TEST(test_copy_large_parallel) {
  LEAK_BEGIN;
  wk_tensor *src0 = tu_rand(WK_SHAPE(257, 300), WK_F32, -70000, 70000, 5);
  wk_tensor *src = wk_t(src0);
  const wk_dtype dts[] = {WK_F16, WK_BF16, WK_I32, WK_U8, WK_F64, WK_F32};
  for (int d = 0; d < 6; d++) {
    wk_tensor *dst = wk_empty(WK_SHAPE(300, 257), WK_OPTS(.dtype = dts[d]));
    ck_assert_ptr_eq(wk_copy_(dst, src), dst);
    CHECK_CONVERTED(dst, src);
    wk_tensor *back = wk_empty(WK_SHAPE(300, 257), WK_OPTS(.dtype = WK_F64));
    wk_copy_(back, dst);
    CHECK_CONVERTED(back, dst);
    wk_release(back);
    wk_release(dst);
  }
  wk_release(src);
  wk_release(src0);
  LEAK_END;
}
END_TEST

/* ---- fill_ and zero_ ------------------------------------------------------------------------------ */

/* PyTorch's checked_convert, written out: does filling dt with this Scalar
 * overflow? (int Scalars wrap into uint8 down to -255; bool takes anything.) */
static bool overflows(double f, bool int_scalar, wk_dtype dt) {
  static const struct {
    wk_dtype dt;
    double lo, hi;
  } lim[] = {{WK_I8, -128, 127},
             {WK_U8, 0, 255},
             {WK_I16, -32768, 32767},
             {WK_I32, -2147483648.0, 2147483647.0},
             {WK_I64, -9223372036854775808.0, 9223372036854775807.0},
             {WK_F16, -65504, 65504},
             {WK_BF16, -3.3895313892515355e38, 3.3895313892515355e38},
             {WK_F32, -3.4028234663852886e38, 3.4028234663852886e38},
             {WK_F64, -INFINITY, INFINITY}};
  if (dt == WK_BOOL) return false;
  double lo = 0, hi = 0;
  for (size_t k = 0; k < sizeof lim / sizeof lim[0]; k++)
    if (lim[k].dt == dt) lo = lim[k].lo, hi = lim[k].hi;
  if (int_scalar && dt == WK_U8) return f > 255 || f < -255;
  if (is_float(dt) && (isinf(f) || isnan(f))) return false;
  if (isnan(f)) return true;
  return f < lo || f > hi;
}

START_TEST(test_copy_fill_every_dtype) {
  LEAK_BEGIN;
  const double values[] = {2.7, -2.7, 0.5, 0.1, 0, -0.0, 127.9, 1000.5, 65504.5, 65520, 255.5, -1, 1e39, NAN, INFINITY};
  const int64_t ivalues[] = {-1, -255, -256, 255, 256, 1000, -129, 70000, 5, ((int64_t)1 << 40)};
  for (int i = 0; i < NDT; i++) {
    for (size_t k = 0; k < sizeof values / sizeof values[0] + sizeof ivalues / sizeof ivalues[0]; k++) {
      bool isint = k >= sizeof values / sizeof values[0];
      double fv = isint ? (double)ivalues[k - sizeof values / sizeof values[0]] : values[k];
      wk_value val = isint ? WK_VI(ivalues[k - sizeof values / sizeof values[0]]) : WK_VF(fv);
      wk_tensor *t = wk_zeros(WK_SHAPE(3, 5), WK_OPTS(.dtype = ALL[i]));
      uint64_t v0 = wk_tensor_version(t);
      wk_tensor *r = CALL("fill_", WK_VT(t), val);
      double got[15];
      if (overflows(fv, isint, ALL[i])) {
        ck_assert_msg(r == NULL, "fill_(%s, %g) should overflow", wk_dtype_name(ALL[i]), fv);
        TU_FAILS_WITH(WK_ERR_INVALID_ARG, "without overflow");
        ck_assert_uint_eq(wk_tensor_version(t), v0);
        TU_OK(wk_tensor_to_f64(t, got, 15));
        for (int e = 0; e < 15; e++) ck_assert(got[e] == 0);
        wk_release(t);
        continue;
      }
      ck_assert_msg(r == t, "fill_(%s, %g) failed: %s", wk_dtype_name(ALL[i]), fv, wk_last_error_message());
      ck_assert_uint_eq(wk_tensor_version(t), v0 + 1);
      double want = convert(fv, WK_F64, ALL[i]);
      if (isint && !is_float(ALL[i]) && ALL[i] != WK_BOOL) want = convert(fv, WK_I64, ALL[i]);
      TU_OK(wk_tensor_to_f64(t, got, 15));
      for (int e = 0; e < 15; e++)
        ck_assert_msg(got[e] == want || (isnan(got[e]) && isnan(want)), "fill_(%s, %g)[%d] = %g, expected %g",
                      wk_dtype_name(ALL[i]), fv, e, got[e], want);
      ck_assert_ptr_eq(wk_zero_(t), t);
      ck_assert_uint_eq(wk_tensor_version(t), v0 + 2);
      TU_OK(wk_tensor_to_f64(t, got, 15));
      for (int e = 0; e < 15; e++) ck_assert(got[e] == 0 && !signbit(got[e]));
      wk_release(t);
    }
  }
  /* integer values are stored exactly, beyond double's 2^53 */
  wk_tensor *t = wk_empty(WK_SHAPE(2), WK_OPTS(.dtype = WK_I64));
  ck_assert_ptr_eq(CALL("fill_", WK_VT(t), WK_VI(((int64_t)1 << 62) + 1)), t);
  int64_t iv[2];
  memcpy(iv, wk_tensor_data(t), sizeof iv);
  ck_assert(iv[0] == ((int64_t)1 << 62) + 1 && iv[1] == iv[0]);
  ck_assert_ptr_eq(CALL("fill_", WK_VT(t), WK_VB(true)), t);
  TU_EQ_VALS(t, 1, 1);
  /* f16 rounding of the fill value and the wrapped uint8 */
  wk_tensor *h = wk_empty(WK_SHAPE(2), WK_OPTS(.dtype = WK_F16));
  ck_assert_ptr_eq(CALL("fill_", WK_VT(h), WK_VI(2049)), h);
  TU_EQ_VALS(h, 2048, 2048);
  wk_tensor *u = wk_empty(WK_SHAPE(2), WK_OPTS(.dtype = WK_U8));
  ck_assert_ptr_eq(CALL("fill_", WK_VT(u), WK_VI(-1)), u);
  TU_EQ_VALS(u, 255, 255);
  ck_assert_ptr_null(wk_fill_(u, -1)); /* a float -1 does not wrap */
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "cannot be converted to type u8 without overflow");
  wk_release(u);
  wk_release(h);
  wk_release(t);
  LEAK_END;
}
END_TEST

START_TEST(test_copy_fill_strided_views) {
  LEAK_BEGIN;
  const wk_dtype dts[] = {WK_F32, WK_F64, WK_F16, WK_I8, WK_I32, WK_BOOL};
  for (int d = 0; d < 6; d++) {
    wk_tensor *base = wk_zeros(WK_SHAPE(4, 6), WK_OPTS(.dtype = dts[d]));
    /* every other column */
    wk_tensor *cols = wk_slice(base, 1, 0, 6, 2);
    ck_assert_ptr_eq(wk_fill_(cols, 3.5), cols);
    double want = convert(3.5, WK_F64, dts[d]);
    double *v = tu_values(base);
    for (int k = 0; k < 24; k++) ck_assert(v[k] == (k % 2 == 0 ? want : 0));
    free(v);
    /* a transposed row block, then zero_ on a stepped row slice */
    wk_tensor *tr = wk_t(base);                /* [6, 4] */
    wk_tensor *blk = wk_slice(tr, 1, 1, 3, 1); /* rows 1..2 of base, as columns */
    wk_fill_(blk, 1);
    wk_tensor *rows = wk_slice(base, 0, 0, 4, 3); /* rows 0 and 3 */
    ck_assert_ptr_eq(wk_zero_(rows), rows);
    v = tu_values(base);
    for (int r = 0; r < 4; r++)
      for (int c = 0; c < 6; c++) {
        double w = (r == 1 || r == 2) ? 1 : 0;
        ck_assert_msg(v[r * 6 + c] == w, "%s [%d][%d] = %g, expected %g", wk_dtype_name(dts[d]), r, c, v[r * 6 + c], w);
      }
    free(v);
    /* the version counter is shared by every view */
    uint64_t v0 = wk_tensor_version(base);
    wk_zero_(blk);
    ck_assert_uint_eq(wk_tensor_version(rows), v0 + 1);
    wk_release(rows);
    wk_release(blk);
    wk_release(tr);
    wk_release(cols);
    wk_release(base);
  }
  /* 0-dim, zero-size and expanded tensors */
  wk_tensor *z = wk_scalar_tensor(0, WK_I16);
  wk_fill_(z, -3);
  TU_EQ_VALS(z, -3);
  wk_tensor *e = wk_empty(WK_SHAPE(0, 4), (wk_options){0});
  ck_assert_ptr_eq(wk_fill_(e, 1), e);
  ck_assert_ptr_eq(wk_zero_(e), e);
  wk_tensor *one = wk_zeros(WK_SHAPE(1, 3), (wk_options){0});
  wk_tensor *ex = wk_expand(one, WK_SHAPE(5, 3));
  ck_assert_ptr_eq(wk_fill_(ex, 2), ex); /* allowed, as in PyTorch */
  TU_EQ_VALS(one, 2, 2, 2);
  wk_release(ex);
  wk_release(one);
  wk_release(e);
  wk_release(z);
  /* large strided fill runs over the pool */
  wk_tensor *big = wk_zeros(WK_SHAPE(400, 300), (wk_options){0});
  wk_tensor *bt = wk_t(big);
  wk_fill_(bt, -1.25);
  double *bv = tu_values(big);
  for (int k = 0; k < 120000; k++) ck_assert(bv[k] == -1.25);
  free(bv);
  wk_release(bt);
  wk_release(big);
  LEAK_END;
}
END_TEST

/* ---- composites built on copy_ ----------------------------------------------------------------- */

START_TEST(test_copy_clone) {
  LEAK_BEGIN;
  for (int i = 0; i < NDT; i++) {
    wk_tensor *x0 = tu_rand(WK_SHAPE(3, 4), ALL[i], -20, 20, 60 + (uint64_t)i);
    wk_tensor *x = wk_t(x0);
    wk_tensor *c = wk_clone(x);
    TU_NOTNULL(c);
    ck_assert_int_eq(wk_tensor_dtype(c), ALL[i]);
    ck_assert(!wk_tensor_same_storage(c, x));
    ck_assert_int_eq(wk_tensor_dim(c), 2);
    ck_assert_int_eq(wk_tensor_size(c, 0), 4);
    ck_assert_int_eq(wk_tensor_size(c, 1), 3);
    double *a = tu_values(x), *b = tu_values(c);
    ck_assert(memcmp(a, b, sizeof(double) * 12) == 0);
    free(a);
    free(b);
    /* independent storage: writing the clone leaves the source alone */
    uint64_t v0 = wk_tensor_version(x0);
    wk_fill_(c, 1);
    ck_assert_uint_eq(wk_tensor_version(x0), v0);
    a = tu_values(x0);
    double *orig = tu_values(x);
    ck_assert(a[1] == orig[3]); /* x0[0][1] == x[1][0], untouched */
    free(a);
    free(orig);
    wk_release(c);
    wk_release(x);
    wk_release(x0);
  }
  wk_tensor *z = wk_scalar_tensor(2.5, WK_F64), *e = wk_empty(WK_SHAPE(2, 0), WK_OPTS(.dtype = WK_I8));
  wk_tensor *cz = wk_clone(z), *ce = wk_clone(e);
  ck_assert_int_eq(wk_tensor_dim(cz), 0);
  TU_EQ_VALS(cz, 2.5);
  ck_assert_int_eq(wk_tensor_numel(ce), 0);
  ck_assert_int_eq(wk_tensor_dtype(ce), WK_I8);
  ck_assert_ptr_null(wk_clone(NULL));
  TU_FAILS_WITH(WK_ERR_NULL, "clone");
  wk_release(cz);
  wk_release(ce);
  wk_release(z);
  wk_release(e);
  LEAK_END;
}
END_TEST

START_TEST(test_copy_to_dtype_and_device) {
  LEAK_BEGIN;
  wk_tensor *x0 = TU_T(WK_F32, (2, 3), 1.5, -2.5, 3.7, 0, 1e-8, 70000);
  wk_tensor *x = wk_t(x0);
  /* the same dtype without copy=True is x itself (an alias) */
  wk_tensor *same = wk_to_dtype(x, WK_F32);
  ck_assert(wk_tensor_same_storage(same, x));
  wk_release(same);
  same = wk_to_device(x, wk_cpu());
  ck_assert(wk_tensor_same_storage(same, x));
  wk_release(same);
  /* copy=True always copies */
  wk_tensor *cp = CALL("to.dtype", WK_VT(x), WK_VDT(WK_F32), WK_VB(true));
  TU_NOTNULL(cp);
  ck_assert(!wk_tensor_same_storage(cp, x));
  TU_EQ_VALS(cp, 1.5, 0, -2.5, (float)1e-8, 3.7f, 70000);
  wk_release(cp);
  cp = CALL("to.device", WK_VT(x), WK_VDEV(wk_cpu()), WK_VNONE, WK_VB(true));
  TU_NOTNULL(cp);
  ck_assert(!wk_tensor_same_storage(cp, x));
  wk_release(cp);
  /* converting: values follow copy_'s conversions, shape follows x */
  for (int i = 0; i < NDT; i++) {
    wk_tensor *r = wk_to_dtype(x, ALL[i]);
    TU_NOTNULL(r);
    ck_assert_int_eq(wk_tensor_dtype(r), ALL[i]);
    ck_assert_int_eq(wk_tensor_size(r, 0), 3);
    CHECK_CONVERTED(r, x);
    wk_tensor *d = CALL("to.device", WK_VT(x), WK_VDEV(wk_cpu()), WK_VDT(ALL[i]));
    TU_NOTNULL(d);
    ck_assert_int_eq(wk_tensor_dtype(d), ALL[i]);
    ck_assert_int_eq(wk_tensor_device(d).type, WK_DEVICE_CPU);
    CHECK_CONVERTED(d, x);
    wk_release(d);
    wk_release(r);
  }
  ck_assert_ptr_null(wk_to_dtype(NULL, WK_F64));
  TU_FAILS_WITH(WK_ERR_NULL, "to");
  ck_assert_ptr_null(CALL("to.dtype", WK_VT(x), WK_VDT((wk_dtype)42)));
  TU_FAILS_WITH(WK_ERR_DTYPE, "dtype");
  wk_release(x);
  wk_release(x0);
  LEAK_END;
}
END_TEST

/* ---- errors --------------------------------------------------------------------------------------- */

START_TEST(test_copy_errors) {
  LEAK_BEGIN;
  wk_tensor *a = wk_zeros(WK_SHAPE(2, 3), (wk_options){0}), *b = wk_ones(WK_SHAPE(3, 2), (wk_options){0});
  wk_tensor *row = wk_ones(WK_SHAPE(2), (wk_options){0}), *big = wk_ones(WK_SHAPE(4, 2, 3), (wk_options){0});
  uint64_t v0 = wk_tensor_version(a);
  ck_assert_ptr_null(wk_copy_(a, b));
  TU_FAILS_WITH(WK_ERR_SHAPE, "must match the size of tensor b");
  ck_assert_ptr_null(wk_copy_(a, row));
  TU_FAILS_WITH(WK_ERR_SHAPE, "copy_");
  ck_assert_ptr_null(wk_copy_(a, big));
  TU_FAILS_WITH(WK_ERR_SHAPE, "source of shape [4, 2, 3] cannot be broadcast to destination of shape [2, 3]");
  wk_tensor *z = wk_scalar_tensor(0, WK_F32);
  ck_assert_ptr_null(wk_copy_(z, row));
  TU_FAILS_WITH(WK_ERR_SHAPE, "destination of shape []");
  /* failed copies leave the destination and its version alone */
  TU_EQ_VALS(a, 0, 0, 0, 0, 0, 0);
  ck_assert_uint_eq(wk_tensor_version(a), v0);
  /* a destination whose elements share memory is refused (PyTorch too) */
  wk_tensor *r1 = wk_zeros(WK_SHAPE(1, 3), (wk_options){0});
  wk_tensor *ex = wk_expand(r1, WK_SHAPE(2, 3));
  ck_assert_ptr_null(wk_copy_(ex, a));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG,
                "more than one element of the written-to tensor refers to a single memory location");
  /* NULLs */
  ck_assert_ptr_null(wk_copy_(NULL, a));
  TU_FAILS_WITH(WK_ERR_NULL, "self");
  ck_assert_ptr_null(wk_copy_(a, NULL));
  TU_FAILS_WITH(WK_ERR_NULL, "src");
  ck_assert_ptr_null(wk_fill_(NULL, 1));
  TU_FAILS_WITH(WK_ERR_NULL, "fill_");
  ck_assert_ptr_null(wk_zero_(NULL));
  TU_FAILS_WITH(WK_ERR_NULL, "zero_");
  /* the first error is kept through nested calls */
  ck_assert_ptr_null(wk_copy_(a, wk_to_dtype(NULL, WK_I8)));
  TU_FAILS_WITH(WK_ERR_NULL, "to.dtype");
  ck_assert_ptr_null(wk_copy_(a, b));
  ck_assert_ptr_null(wk_clone(wk_copy_(a, NULL)));
  TU_FAILS_WITH(WK_ERR_SHAPE, "copy_");
  wk_release(ex);
  wk_release(r1);
  wk_release(z);
  wk_release(a);
  wk_release(b);
  wk_release(row);
  wk_release(big);
  LEAK_END;
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("check_ops_copy");
  struct {
    const char *name;
    const TTest *tests[6];
  } groups[] = {
      {"dtypes", {test_copy_reference_rounding, test_copy_every_dtype_pair, test_copy_special_values}},
      {"layouts",
       {test_copy_broadcast_sources, test_copy_strided_views, test_copy_overlapping, test_copy_large_parallel}},
      {"fill", {test_copy_fill_every_dtype, test_copy_fill_strided_views}},
      {"composites", {test_copy_clone, test_copy_to_dtype_and_device}},
      {"errors", {test_copy_errors}},
  };
  for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
    TCase *tc = tcase_create(groups[g].name);
    tcase_add_checked_fixture(tc, tu_setup, NULL);
    tcase_set_timeout(tc, 60);
    for (int k = 0; k < 6 && groups[g].tests[k]; k++) tcase_add_test(tc, groups[g].tests[k]);
    suite_add_tcase(s, tc);
  }
  return s;
}
TU_MAIN(make_suite)
