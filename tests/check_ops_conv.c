/* check_ops_conv: conv2d, max_pool2d_with_indices, avg_pool2d and
 * adaptive_avg_pool2d on the cpu against naive float64 references computed
 * here: random shapes, strides, padding, dilation, groups, ceil mode,
 * non-contiguous inputs, unbatched inputs, dtypes and PyTorch's errors. */
#include "testutil.h"

/* ---- calling helpers ---------------------------------------------------------------- */

static wk_tensor *conv(wk_tensor *x, wk_tensor *w, wk_tensor *b, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                       int64_t dh, int64_t dw, int64_t groups) {
  int64_t st[2] = {sh, sw}, pd[2] = {ph, pw}, dl[2] = {dh, dw};
  wk_value a[7] = {WK_VT(x), WK_VT(w), WK_VT(b), WK_VINTS(st, 2), WK_VINTS(pd, 2), WK_VINTS(dl, 2), WK_VI(groups)};
  wk_value out[WK_MAX_OUTS];
  if (wk_call("conv2d", a, 7, out) != WK_OK) return NULL;
  return out[0].u.t;
}

/* stride sh == 0 passes the empty list (stride = kernel). */
static wk_tensor *maxpool(wk_tensor *x, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                          int64_t dh, int64_t dw, bool ceil_mode, wk_tensor **ind) {
  int64_t k[2] = {kh, kw}, st[2] = {sh, sw}, pd[2] = {ph, pw}, dl[2] = {dh, dw};
  wk_value a[6] = {WK_VT(x),          WK_VINTS(k, 2),  WK_VINTS(st, sh ? 2 : 0),
                   WK_VINTS(pd, 2),   WK_VINTS(dl, 2), WK_VB(ceil_mode)};
  wk_value out[WK_MAX_OUTS];
  *ind = NULL;
  if (wk_call("max_pool2d_with_indices", a, 6, out) != WK_OK) return NULL;
  *ind = out[1].u.t;
  return out[0].u.t;
}

/* divisor 0 means None. */
static wk_tensor *avgpool(wk_tensor *x, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                          bool ceil_mode, bool include_pad, int64_t divisor) {
  int64_t k[2] = {kh, kw}, st[2] = {sh, sw}, pd[2] = {ph, pw};
  wk_value a[7] = {WK_VT(x),         WK_VINTS(k, 2),      WK_VINTS(st, sh ? 2 : 0), WK_VINTS(pd, 2),
                   WK_VB(ceil_mode), WK_VB(include_pad), divisor ? WK_VI(divisor) : WK_VNONE};
  wk_value out[WK_MAX_OUTS];
  if (wk_call("avg_pool2d", a, 7, out) != WK_OK) return NULL;
  return out[0].u.t;
}

static wk_tensor *adaptive(wk_tensor *x, int64_t oh, int64_t ow) {
  int64_t os[2] = {oh, ow};
  wk_value a[2] = {WK_VT(x), WK_VINTS(os, 2)};
  wk_value out[WK_MAX_OUTS];
  if (wk_call("adaptive_avg_pool2d", a, 2, out) != WK_OK) return NULL;
  return out[0].u.t;
}

/* A non-contiguous copy of t: every other element of a wider last dimension
 * (uses only empty, slice and copy_). */
static wk_tensor *strided_copy(wk_tensor *t) {
  int nd = wk_tensor_dim(t);
  int64_t big[WK_MAX_DIMS];
  memcpy(big, wk_tensor_sizes(t), sizeof(int64_t) * (size_t)nd);
  big[nd - 1] = big[nd - 1] * 2 + 1;
  wk_tensor *b = wk_empty(big, nd, (wk_options){.dtype = wk_tensor_dtype(t)});
  wk_tensor *v = wk_slice(b, nd - 1, 1, big[nd - 1], 2);
  wk_copy_(v, t);
  wk_release(b);
  return v;
}

/* Random [d0, d1, d2, d3] values laid out channels-last and viewed as NCHW
 * (d = {N, C, H, W}). */
static wk_tensor *rand_nhwc(const int64_t d[4], wk_dtype dt, uint64_t seed) {
  int64_t nhwc[4] = {d[0], d[2], d[3], d[1]}, perm[4] = {0, 3, 1, 2};
  wk_tensor *t = tu_rand(nhwc, 4, dt, -1, 1, seed);
  wk_tensor *v = wk_permute(t, perm, 4);
  wk_release(t);
  return v;
}

/* ---- references (float64, direct loops) ------------------------------------------ */

/* x [N,C,H,W], w [O,C/G,KH,KW], b [O] or NULL -> out [N,O,OH,OW] (malloc'd). */
static double *ref_conv(const double *x, const int64_t xs[4], const double *w, const int64_t ws[4], const double *b,
                        int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw, int64_t G,
                        int64_t *oh_out, int64_t *ow_out) {
  int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], O = ws[0], Cg = ws[1], KH = ws[2], KW = ws[3];
  int64_t OH = (H + 2 * ph - dh * (KH - 1) - 1) / sh + 1, OW = (W + 2 * pw - dw * (KW - 1) - 1) / sw + 1;
  int64_t Og = O / G;
  double *out = malloc(sizeof(double) * (size_t)(N * O * OH * OW + 1));
  for (int64_t n = 0; n < N; n++)
    for (int64_t o = 0; o < O; o++) {
      int64_t g = o / Og;
      for (int64_t y = 0; y < OH; y++)
        for (int64_t xo = 0; xo < OW; xo++) {
          double s = b ? b[o] : 0;
          for (int64_t c = 0; c < Cg; c++)
            for (int64_t i = 0; i < KH; i++)
              for (int64_t j = 0; j < KW; j++) {
                int64_t iy = y * sh - ph + i * dh, ix = xo * sw - pw + j * dw;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                s += x[((n * C + g * Cg + c) * H + iy) * W + ix] * w[((o * Cg + c) * KH + i) * KW + j];
              }
          out[((n * O + o) * OH + y) * OW + xo] = s;
        }
    }
  (void)C;
  *oh_out = OH;
  *ow_out = OW;
  return out;
}

/* PyTorch's pooling output size, including the ceil-mode rule that the last
 * window starts inside the input or its left padding. */
static int64_t ref_pool_size(int64_t in, int64_t k, int64_t p, int64_t s, int64_t d, bool ceil_mode) {
  double span = (double)(in + 2 * p - d * (k - 1) - 1) / (double)s;
  int64_t o = (int64_t)(ceil_mode ? ceil(span) : floor(span)) + 1;
  if (ceil_mode && (o - 1) * s >= in + p) o--;
  return o;
}

/* Max pool over P planes of H x W: values and flat indices (malloc'd). */
static void ref_maxpool(const double *x, int64_t P, int64_t H, int64_t W, int64_t kh, int64_t kw, int64_t sh,
                        int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw, int64_t OH, int64_t OW,
                        double *val, double *idx) {
  for (int64_t p = 0; p < P; p++)
    for (int64_t y = 0; y < OH; y++)
      for (int64_t xo = 0; xo < OW; xo++) {
        /* the first valid position starts the search; a value replaces the
         * running max when it is greater or NaN (so the last NaN wins) */
        double best = -INFINITY;
        int64_t bi = -1;
        for (int64_t i = 0; i < kh; i++)
          for (int64_t j = 0; j < kw; j++) {
            int64_t iy = y * sh - ph + i * dh, ix = xo * sw - pw + j * dw;
            if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
            double v = x[(p * H + iy) * W + ix];
            if (bi < 0 || v > best || isnan(v)) {
              best = v;
              bi = iy * W + ix;
            }
          }
        val[(p * OH + y) * OW + xo] = best;
        idx[(p * OH + y) * OW + xo] = (double)bi;
      }
}

static void ref_avgpool(const double *x, int64_t P, int64_t H, int64_t W, int64_t kh, int64_t kw, int64_t sh,
                        int64_t sw, int64_t ph, int64_t pw, int64_t OH, int64_t OW, bool include_pad, int64_t divisor,
                        bool integer, double *out) {
  for (int64_t p = 0; p < P; p++)
    for (int64_t y = 0; y < OH; y++)
      for (int64_t xo = 0; xo < OW; xo++) {
        /* the window, clipped to the padded input for count_include_pad */
        int64_t y0 = y * sh - ph, x0 = xo * sw - pw;
        int64_t y1 = y0 + kh < H + ph ? y0 + kh : H + ph, x1 = x0 + kw < W + pw ? x0 + kw : W + pw;
        int64_t padded = (y1 - y0) * (x1 - x0), valid = 0;
        double s = 0;
        for (int64_t iy = y0; iy < y1; iy++)
          for (int64_t ix = x0; ix < x1; ix++)
            if (iy >= 0 && iy < H && ix >= 0 && ix < W) {
              s += x[(p * H + iy) * W + ix];
              valid++;
            }
        double r;
        if (valid == 0) {
          r = 0;
        } else {
          int64_t div = divisor ? divisor : include_pad ? padded : valid;
          r = integer ? (double)((int64_t)s / div) : s / (double)div;
        }
        out[(p * OH + y) * OW + xo] = r;
      }
}

static void ref_adaptive(const double *x, int64_t P, int64_t H, int64_t W, int64_t OH, int64_t OW, double *out) {
  for (int64_t p = 0; p < P; p++)
    for (int64_t y = 0; y < OH; y++)
      for (int64_t xo = 0; xo < OW; xo++) {
        int64_t y0 = (int64_t)floor((double)(y * H) / (double)OH);
        int64_t y1 = (int64_t)ceil((double)((y + 1) * H) / (double)OH);
        int64_t x0 = (int64_t)floor((double)(xo * W) / (double)OW);
        int64_t x1 = (int64_t)ceil((double)((xo + 1) * W) / (double)OW);
        double s = 0;
        for (int64_t iy = y0; iy < y1; iy++)
          for (int64_t ix = x0; ix < x1; ix++) s += x[(p * H + iy) * W + ix];
        out[(p * OH + y) * OW + xo] = s / (double)((y1 - y0) * (x1 - x0));
      }
}

static void assert_shape(wk_tensor *t, const int64_t *s, int nd) {
  ck_assert_msg(t != NULL, "NULL result: %s", wk_last_error_message());
  ck_assert_int_eq(wk_tensor_dim(t), nd);
  for (int i = 0; i < nd; i++)
    ck_assert_msg(wk_tensor_size(t, i) == s[i], "dim %d: %lld != %lld", i, (long long)wk_tensor_size(t, i),
                  (long long)s[i]);
}

static double rtol_of(wk_dtype dt) {
  return dt == WK_F64 ? 1e-12 : dt == WK_F32 ? 1e-5 : dt == WK_F16 ? 1e-2 : 2e-2;
}

/* ---- conv2d ----------------------------------------------------------------------- */

typedef struct {
  int64_t N, C, H, W, O, KH, KW, sh, sw, ph, pw, dh, dw, G;
  bool bias, unbatched;
  int layout; /* 0 contiguous, 1 NHWC permuted, 2 strided last dim */
} conv_case;

/* Runs one conv2d case in dtype dt and compares with the float64 reference. */
static void check_conv(const conv_case *c, wk_dtype dt, uint64_t seed) {
  int64_t xs[4] = {c->N, c->C, c->H, c->W}, ws[4] = {c->O, c->C / c->G, c->KH, c->KW}, bs[1] = {c->O};
  wk_tensor *x = c->layout == 1 ? rand_nhwc(xs, dt, seed) : tu_rand(xs, 4, dt, -1, 1, seed);
  if (c->layout == 2) {
    wk_tensor *v = strided_copy(x);
    wk_release(x);
    x = v;
  }
  wk_tensor *w = tu_rand(ws, 4, dt, -1, 1, seed + 1000);
  wk_tensor *b = c->bias ? tu_rand(bs, 1, dt, -1, 1, seed + 2000) : NULL;
  TU_NOTNULL(x);
  TU_NOTNULL(w);
  double *xv = tu_values(x), *wv = tu_values(w), *bv = b ? tu_values(b) : NULL;
  int64_t oh, ow;
  double *ref = ref_conv(xv, xs, wv, ws, bv, c->sh, c->sw, c->ph, c->pw, c->dh, c->dw, c->G, &oh, &ow);
  wk_tensor *xin = x;
  if (c->unbatched) xin = wk_select(x, 0, 0);
  wk_tensor *y = conv(xin, w, b, c->sh, c->sw, c->ph, c->pw, c->dh, c->dw, c->G);
  int64_t os[4] = {c->N, c->O, oh, ow};
  if (c->unbatched)
    assert_shape(y, os + 1, 3);
  else
    assert_shape(y, os, 4);
  ck_assert_int_eq(wk_tensor_dtype(y), dt);
  int64_t n = (c->unbatched ? 1 : c->N) * c->O * oh * ow;
  double atol = dt == WK_F64 ? 1e-12 : dt == WK_F32 ? 1e-5 : 5e-2;
  TU_CLOSE(y, ref, n, rtol_of(dt), atol);
  free(xv);
  free(wv);
  free(bv);
  free(ref);
  if (c->unbatched) wk_release(xin);
  wk_release(x);
  wk_release(w);
  wk_release(b);
  wk_release(y);
}

static int64_t rnd(uint64_t *s, int64_t lo, int64_t hi) {
  return lo + (int64_t)(tu_uniform(s) * (double)(hi - lo + 1));
}

/* A random valid case: the padded input always holds the dilated kernel. */
static conv_case random_case(uint64_t *s) {
  conv_case c;
  c.G = rnd(s, 1, 3);
  c.C = c.G * rnd(s, 1, 3);
  c.O = c.G * rnd(s, 1, 3);
  c.N = rnd(s, 1, 3);
  c.KH = rnd(s, 1, 3);
  c.KW = rnd(s, 1, 3);
  c.sh = rnd(s, 1, 3);
  c.sw = rnd(s, 1, 3);
  c.ph = rnd(s, 0, 2);
  c.pw = rnd(s, 0, 2);
  c.dh = rnd(s, 1, 2);
  c.dw = rnd(s, 1, 2);
  int64_t eh = c.dh * (c.KH - 1) + 1, ew = c.dw * (c.KW - 1) + 1;
  c.H = rnd(s, 1, 9);
  c.W = rnd(s, 1, 9);
  if (c.H + 2 * c.ph < eh) c.H = eh - 2 * c.ph;
  if (c.W + 2 * c.pw < ew) c.W = ew - 2 * c.pw;
  if (c.H < 0) c.H = 0;
  if (c.W < 0) c.W = 0;
  c.bias = tu_uniform(s) < 0.6;
  c.unbatched = false;
  c.layout = (int)rnd(s, 0, 2);
  return c;
}

START_TEST(test_conv_random_f64_f32) {
  int64_t live = wk_live_tensors();
  uint64_t s = 12345;
  for (int i = 0; i < 60; i++) {
    conv_case c = random_case(&s);
    check_conv(&c, WK_F64, 100 + (uint64_t)i);
    check_conv(&c, WK_F32, 200 + (uint64_t)i);
  }
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_conv_layouts_and_unbatched) {
  int64_t live = wk_live_tensors();
  for (int layout = 0; layout < 3; layout++)
    for (int ub = 0; ub < 2; ub++) {
      conv_case c = {ub ? 1 : 2, 4, 7, 6, 6, 3, 2, 1, 2, 1, 0, 1, 1, 2, true, ub == 1, layout};
      check_conv(&c, WK_F32, 7 + (uint64_t)layout);
      check_conv(&c, WK_F64, 9 + (uint64_t)layout);
    }
  /* depthwise (groups == channels, multiplier 2) and a 1x1 kernel */
  conv_case dw = {3, 5, 8, 7, 10, 3, 3, 1, 1, 1, 1, 1, 1, 5, true, false, 1};
  check_conv(&dw, WK_F32, 31);
  conv_case one = {2, 6, 5, 5, 4, 1, 1, 1, 1, 0, 0, 1, 1, 1, false, false, 0};
  check_conv(&one, WK_F64, 32);
  /* dilation 3 with a kernel that exactly fits the padded input */
  conv_case fit = {1, 2, 5, 5, 3, 3, 3, 1, 1, 1, 1, 3, 3, 1, true, false, 0};
  check_conv(&fit, WK_F64, 33);
  /* input smaller than the kernel, made valid by padding only */
  conv_case pad = {2, 1, 1, 2, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, true, false, 0};
  check_conv(&pad, WK_F64, 34);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* Sizes that reach the several-images-per-GEMM path (with a partial last
 * chunk), the one-image path writing straight into the output, the 1x1 path
 * that skips im2col, and the parallel loops. */
START_TEST(test_conv_large_paths) {
  int64_t live = wk_live_tensors();
  conv_case multi = {6, 3, 32, 32, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, true, false, 0}; /* 4 images per GEMM */
  check_conv(&multi, WK_F32, 41);
  conv_case multi_nhwc = {5, 4, 20, 20, 6, 3, 3, 2, 1, 1, 1, 1, 1, 2, false, false, 1};
  check_conv(&multi_nhwc, WK_F64, 42);
  conv_case single = {2, 2, 70, 66, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, true, false, 0};
  check_conv(&single, WK_F32, 43);
  conv_case direct = {2, 6, 64, 70, 4, 1, 1, 1, 1, 0, 0, 1, 1, 2, true, false, 0};
  check_conv(&direct, WK_F32, 44);
  conv_case direct_nc = {1, 4, 64, 65, 3, 1, 1, 1, 1, 0, 0, 1, 1, 1, true, false, 2};
  check_conv(&direct_nc, WK_F64, 45);
  conv_case unb = {1, 3, 65, 64, 4, 1, 1, 1, 1, 0, 0, 1, 1, 1, true, true, 0};
  check_conv(&unb, WK_F32, 46);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_conv_half_dtypes) {
  int64_t live = wk_live_tensors();
  conv_case c = {2, 4, 6, 7, 4, 3, 2, 1, 2, 1, 1, 1, 1, 2, true, false, 1};
  check_conv(&c, WK_BF16, 51);
  check_conv(&c, WK_F16, 52);
  conv_case u = {1, 3, 5, 5, 2, 3, 3, 1, 1, 0, 0, 1, 1, 1, true, true, 0};
  check_conv(&u, WK_BF16, 53);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* Results do not depend on the number of threads. */
START_TEST(test_conv_thread_invariant) {
  int64_t live = wk_live_tensors();
  int nt = wk_num_threads();
  int64_t xs[4] = {3, 4, 40, 40}, ws[4] = {6, 4, 3, 3};
  wk_tensor *x = tu_rand(xs, 4, WK_F32, -1, 1, 61), *w = tu_rand(ws, 4, WK_F32, -1, 1, 62);
  TU_OK(wk_set_num_threads(1));
  wk_tensor *a = conv(x, w, NULL, 1, 1, 1, 1, 1, 1, 1);
  wk_tensor *ind1;
  wk_tensor *m1 = maxpool(x, 3, 3, 1, 1, 1, 1, 1, 1, false, &ind1);
  TU_OK(wk_set_num_threads(4));
  wk_tensor *b = conv(x, w, NULL, 1, 1, 1, 1, 1, 1, 1);
  wk_tensor *ind2;
  wk_tensor *m2 = maxpool(x, 3, 3, 1, 1, 1, 1, 1, 1, false, &ind2);
  TU_OK(wk_set_num_threads(nt));
  double *av = tu_values(a), *mv = tu_values(m1), *iv = tu_values(ind1);
  TU_CLOSE(b, av, wk_tensor_numel(a), 0, 0);
  TU_CLOSE(m2, mv, wk_tensor_numel(m1), 0, 0);
  TU_CLOSE(ind2, iv, wk_tensor_numel(ind1), 0, 0);
  free(av);
  free(mv);
  free(iv);
  wk_release(x);
  wk_release(w);
  wk_release(a);
  wk_release(b);
  wk_release(m1);
  wk_release(m2);
  wk_release(ind1);
  wk_release(ind2);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_conv_known_values) {
  /* 1x1x3x3 input 1..9, 2x2 ones kernel, bias 0.5 */
  wk_tensor *x = TU_T(WK_F32, (1, 1, 3, 3), 1, 2, 3, 4, 5, 6, 7, 8, 9);
  wk_tensor *w = TU_T(WK_F32, (1, 1, 2, 2), 1, 1, 1, 1);
  wk_tensor *b = TU_T(WK_F32, (1), 0.5);
  wk_tensor *y = conv(x, w, b, 1, 1, 0, 0, 1, 1, 1);
  TU_EQ_VALS(y, 12.5, 16.5, 24.5, 28.5);
  wk_release(y);
  /* padding 1, stride 2: corners only */
  y = conv(x, w, NULL, 2, 2, 1, 1, 1, 1, 1);
  TU_EQ_VALS(y, 1, 5, 11, 28);
  wk_release(y);
  /* the typed front end (square parameters) */
  y = wk_conv2d(x, w, b, 1, 0, 1, 1);
  TU_EQ_VALS(y, 12.5, 16.5, 24.5, 28.5);
  wk_release(y);
  wk_release(x);
  wk_release(w);
  wk_release(b);
}
END_TEST

START_TEST(test_conv_zero_size) {
  int64_t live = wk_live_tensors();
  int64_t xs0[4] = {0, 3, 5, 5}, ws[4] = {4, 3, 3, 3};
  wk_tensor *x = tu_rand(xs0, 4, WK_F32, -1, 1, 1), *w = tu_rand(ws, 4, WK_F32, -1, 1, 2);
  wk_tensor *y = conv(x, w, NULL, 1, 1, 0, 0, 1, 1, 1);
  int64_t e0[4] = {0, 4, 3, 3};
  assert_shape(y, e0, 4);
  wk_release(y);
  wk_release(x);
  wk_release(w);
  /* no output channels: refused like PyTorch (weight must hold `groups` filters) */
  int64_t xs[4] = {2, 3, 5, 5}, w0s[4] = {0, 3, 3, 3};
  x = tu_rand(xs, 4, WK_F64, -1, 1, 3);
  w = tu_rand(w0s, 4, WK_F64, -1, 1, 4);
  ck_assert_ptr_null(conv(x, w, NULL, 1, 1, 0, 0, 1, 1, 1));
  TU_FAILS_WITH(WK_ERR_SHAPE, "expected weight to be at least 1 at dimension 0, but got weight of size [0, 3, 3, 3]");
  wk_release(x);
  wk_release(w);
  /* no input channels: the result is the bias */
  int64_t xc0[4] = {1, 0, 4, 4}, wc0[4] = {2, 0, 3, 3};
  x = tu_rand(xc0, 4, WK_F32, -1, 1, 5);
  w = tu_rand(wc0, 4, WK_F32, -1, 1, 6);
  wk_tensor *b = TU_T(WK_F32, (2), 1.5, -2);
  y = conv(x, w, b, 1, 1, 0, 0, 1, 1, 1);
  TU_EQ_VALS(y, 1.5, 1.5, 1.5, 1.5, -2, -2, -2, -2);
  wk_release(y);
  /* an empty image made valid by padding: zeros plus bias */
  int64_t xh0[4] = {1, 2, 0, 1}, wh[4] = {2, 2, 1, 1};
  wk_release(x);
  wk_release(w);
  x = tu_rand(xh0, 4, WK_F32, -1, 1, 7);
  w = tu_rand(wh, 4, WK_F32, -1, 1, 8);
  y = conv(x, w, b, 1, 1, 1, 0, 1, 1, 1);
  int64_t e2[4] = {1, 2, 2, 1};
  assert_shape(y, e2, 4);
  TU_EQ_VALS(y, 1.5, 1.5, -2, -2);
  wk_release(y);
  wk_release(x);
  wk_release(w);
  wk_release(b);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_conv_errors) {
  int64_t live = wk_live_tensors();
  int64_t xs[4] = {2, 4, 5, 5}, ws[4] = {8, 3, 3, 3};
  wk_tensor *x = tu_rand(xs, 4, WK_F32, -1, 1, 1), *w = tu_rand(ws, 4, WK_F32, -1, 1, 2);
  ck_assert_ptr_null(conv(x, w, NULL, 1, 1, 0, 0, 1, 1, 1));
  TU_FAILS_WITH(WK_ERR_SHAPE,
                "Given groups=1, weight of size [8, 3, 3, 3], expected input[2, 4, 5, 5] to have 3 channels, but got 4 "
                "channels instead");
  ck_assert_ptr_null(conv(x, w, NULL, 1, 1, 0, 0, 1, 1, 3));
  TU_FAILS_WITH(WK_ERR_SHAPE, "Given groups=3, expected weight to be divisible by 3 at dimension 0");
  ck_assert_ptr_null(conv(x, w, NULL, 1, 1, 0, 0, 1, 1, 16));
  TU_FAILS_WITH(WK_ERR_SHAPE, "expected weight to be at least 16 at dimension 0");
  ck_assert_ptr_null(conv(x, w, NULL, 1, 1, 0, 0, 1, 1, 0));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "non-positive groups is not supported");
  ck_assert_ptr_null(conv(x, w, NULL, 0, 1, 0, 0, 1, 1, 1));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "non-positive stride is not supported");
  ck_assert_ptr_null(conv(x, w, NULL, 1, 1, 0, -1, 1, 1, 1));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "negative padding is not supported");
  ck_assert_ptr_null(conv(x, w, NULL, 1, 1, 0, 0, 1, 0, 1));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "dilation should be greater than zero");
  wk_release(w);

  int64_t w4[4] = {8, 4, 3, 3};
  w = tu_rand(w4, 4, WK_F32, -1, 1, 3);
  /* the dilated kernel (7 x 3) does not fit the 5 x 5 input */
  ck_assert_ptr_null(conv(x, w, NULL, 1, 1, 0, 0, 3, 1, 1));
  TU_FAILS_WITH(WK_ERR_SHAPE,
                "Calculated padded input size per channel: (5 x 5). Kernel size: (7 x 3). Kernel size can't be greater "
                "than actual input size");
  wk_tensor *bad_b = TU_T(WK_F32, (3), 1, 2, 3);
  ck_assert_ptr_null(conv(x, w, bad_b, 1, 1, 0, 0, 1, 1, 1));
  TU_FAILS_WITH(WK_ERR_SHAPE, "expected bias to be 1-dimensional with 8 elements, but got bias of size [3] instead");
  wk_release(bad_b);
  /* dtypes */
  wk_tensor *wd = wk_to_dtype(w, WK_F64);
  ck_assert_ptr_null(conv(x, wd, NULL, 1, 1, 0, 0, 1, 1, 1));
  TU_FAILS_WITH(WK_ERR_DTYPE, "Input type (Float) and weight type (Double) should be the same");
  int64_t bs[1] = {8};
  wk_tensor *bd = tu_rand(bs, 1, WK_F64, -1, 1, 4);
  ck_assert_ptr_null(conv(x, w, bd, 1, 1, 0, 0, 1, 1, 1));
  TU_FAILS_WITH(WK_ERR_DTYPE, "Input type (Float) and bias type (Double) should be the same");
  wk_tensor *xi = wk_to_dtype(x, WK_I64), *wi = wk_to_dtype(w, WK_I64);
  ck_assert_ptr_null(conv(xi, wi, NULL, 1, 1, 0, 0, 1, 1, 1));
  TU_FAILS_WITH(WK_ERR_DTYPE, "not implemented for 'Long'");
  /* ranks */
  int64_t x2[2] = {4, 5};
  wk_tensor *xr = tu_rand(x2, 2, WK_F32, -1, 1, 5);
  ck_assert_ptr_null(conv(xr, w, NULL, 1, 1, 0, 0, 1, 1, 1));
  TU_FAILS_WITH(WK_ERR_SHAPE, "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [4, 5]");
  int64_t w3[3] = {8, 4, 3};
  wk_tensor *wr = tu_rand(w3, 3, WK_F32, -1, 1, 6);
  ck_assert_ptr_null(conv(x, wr, NULL, 1, 1, 0, 0, 1, 1, 1));
  TU_FAILS_WITH(WK_ERR_SHAPE, "Expected 3-dimensional input for 3-dimensional weight [8, 4, 3]");
  /* list arguments of the wrong length */
  int64_t one[1] = {1}, three[3] = {1, 1, 1};
  wk_value a[7] = {WK_VT(x), WK_VT(w), WK_VNONE, WK_VINTS(one, 0), WK_VINTS(three, 0), WK_VINTS(one, 1), WK_VI(1)};
  wk_value out[WK_MAX_OUTS];
  ck_assert_int_ne(wk_call("conv2d", a, 7, out), WK_OK);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "expected stride to be a single integer value or a list of 2 values");
  /* NULL tensors */
  ck_assert_ptr_null(conv(NULL, w, NULL, 1, 1, 0, 0, 1, 1, 1));
  ck_assert_int_ne(wk_last_error(), WK_OK);
  wk_clear_error();
  ck_assert_ptr_null(conv(x, NULL, NULL, 1, 1, 0, 0, 1, 1, 1));
  ck_assert_int_ne(wk_last_error(), WK_OK);
  wk_clear_error();
  wk_release(x);
  wk_release(w);
  wk_release(wd);
  wk_release(bd);
  wk_release(xi);
  wk_release(wi);
  wk_release(xr);
  wk_release(wr);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- max_pool2d_with_indices ---------------------------------------------------------- */

typedef struct {
  int64_t N, C, H, W, kh, kw, sh, sw, ph, pw, dh, dw;
  bool ceil_mode, unbatched;
  int layout;
} pool_case;

static wk_tensor *pool_input(const pool_case *c, wk_dtype dt, uint64_t seed, double lo, double hi) {
  int64_t xs[4] = {c->N, c->C, c->H, c->W};
  wk_tensor *x;
  if (c->layout == 1) {
    int64_t nhwc[4] = {c->N, c->H, c->W, c->C}, perm[4] = {0, 3, 1, 2};
    wk_tensor *t = tu_rand(nhwc, 4, dt, lo, hi, seed);
    x = wk_permute(t, perm, 4);
    wk_release(t);
  } else {
    x = tu_rand(xs, 4, dt, lo, hi, seed);
    if (c->layout == 2) {
      wk_tensor *v = strided_copy(x);
      wk_release(x);
      x = v;
    }
  }
  return x;
}

static void check_maxpool(const pool_case *c, wk_dtype dt, uint64_t seed) {
  double lo = wk_dtype_is_floating(dt) ? -3 : dt == WK_U8 ? 0 : -50, hi = dt == WK_U8 ? 250 : 50;
  wk_tensor *x = pool_input(c, dt, seed, lo, hi);
  TU_NOTNULL(x);
  double *xv = tu_values(x);
  int64_t P = c->N * c->C;
  int64_t OH = ref_pool_size(c->H, c->kh, c->ph, c->sh ? c->sh : c->kh, c->dh, c->ceil_mode);
  int64_t OW = ref_pool_size(c->W, c->kw, c->pw, c->sw ? c->sw : c->kw, c->dw, c->ceil_mode);
  double *rv = malloc(sizeof(double) * (size_t)(P * OH * OW + 1));
  double *ri = malloc(sizeof(double) * (size_t)(P * OH * OW + 1));
  ref_maxpool(xv, P, c->H, c->W, c->kh, c->kw, c->sh ? c->sh : c->kh, c->sw ? c->sw : c->kw, c->ph, c->pw, c->dh,
              c->dw, OH, OW, rv, ri);
  wk_tensor *xin = c->unbatched ? wk_select(x, 0, 0) : x;
  wk_tensor *ind;
  wk_tensor *y = maxpool(xin, c->kh, c->kw, c->sh, c->sw, c->ph, c->pw, c->dh, c->dw, c->ceil_mode, &ind);
  int64_t os[4] = {c->N, c->C, OH, OW};
  if (c->unbatched) {
    assert_shape(y, os + 1, 3);
    assert_shape(ind, os + 1, 3);
  } else {
    assert_shape(y, os, 4);
    assert_shape(ind, os, 4);
  }
  ck_assert_int_eq(wk_tensor_dtype(y), dt);
  ck_assert_int_eq(wk_tensor_dtype(ind), WK_I64);
  int64_t n = (c->unbatched ? c->C : P) * OH * OW;
  TU_CLOSE(y, rv, n, 0, 0);
  TU_CLOSE(ind, ri, n, 0, 0);
  free(xv);
  free(rv);
  free(ri);
  if (c->unbatched) wk_release(xin);
  wk_release(x);
  wk_release(y);
  wk_release(ind);
}

static pool_case random_pool(uint64_t *s, bool dilation) {
  pool_case c;
  c.N = rnd(s, 1, 3);
  c.C = rnd(s, 1, 4);
  c.kh = rnd(s, 1, 4);
  c.kw = rnd(s, 1, 4);
  c.sh = rnd(s, 0, 3); /* 0: default stride */
  c.sw = c.sh ? rnd(s, 1, 3) : 0;
  c.ph = rnd(s, 0, c.kh / 2);
  c.pw = rnd(s, 0, c.kw / 2);
  c.dh = dilation ? rnd(s, 1, 3) : 1;
  c.dw = dilation ? rnd(s, 1, 3) : 1;
  c.ceil_mode = tu_uniform(s) < 0.5;
  int64_t eh = c.dh * (c.kh - 1) + 1, ew = c.dw * (c.kw - 1) + 1;
  c.H = eh + rnd(s, 0, 8);
  c.W = ew + rnd(s, 0, 8);
  c.unbatched = tu_uniform(s) < 0.25;
  if (c.unbatched) c.N = 1;
  c.layout = (int)rnd(s, 0, 2);
  return c;
}

START_TEST(test_maxpool_random) {
  int64_t live = wk_live_tensors();
  uint64_t s = 777;
  for (int i = 0; i < 60; i++) {
    pool_case c = random_pool(&s, true);
    check_maxpool(&c, WK_F64, 300 + (uint64_t)i);
    check_maxpool(&c, WK_F32, 400 + (uint64_t)i);
    if (i % 4 == 0) check_maxpool(&c, WK_BF16, 500 + (uint64_t)i);
    if (i % 4 == 1) check_maxpool(&c, WK_I32, 600 + (uint64_t)i);
    if (i % 4 == 2) check_maxpool(&c, WK_U8, 700 + (uint64_t)i);
    if (i % 4 == 3) check_maxpool(&c, WK_I64, 800 + (uint64_t)i);
  }
  /* large enough for the parallel plane loop */
  pool_case big = {4, 8, 40, 36, 3, 3, 2, 2, 1, 1, 1, 1, true, false, 1};
  check_maxpool(&big, WK_F32, 901);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ResNet's stem pool (3x3, stride 2, padding 1, even width) has a vector
 * kernel for f32: it must pick the same values and indices as the generic
 * kernel (here the f64 one) with ties everywhere (values from {0, 1, 2}),
 * NaN and -inf, at widths that use it (10, 12, 16, 20) and rows too short
 * for it (8). */
START_TEST(test_maxpool_stem_vector_path) {
  static const int64_t shapes[][4] = {{2, 3, 16, 16}, {1, 2, 9, 10}, {2, 2, 7, 12}, {1, 4, 11, 20}, {3, 1, 6, 8}};
  uint64_t s = 4242;
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
    wk_scope_begin();
    int64_t n = shapes[si][0] * shapes[si][1] * shapes[si][2] * shapes[si][3];
    double *v = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) {
      double u = tu_uniform(&s);
      v[i] = u < 0.05 ? NAN : u < 0.1 ? -INFINITY : (double)(int)(tu_uniform(&s) * 3);
    }
    wk_tensor *x64 = tu_tensor(v, WK_F64, shapes[si], 4), *x32 = wk_to_dtype(x64, WK_F32);
    free(v);
    wk_tensor *i32 = NULL, *i64 = NULL;
    wk_tensor *y32 = wk_max_pool2d_with_indices(x32, 3, 2, 1, &i32), *y64 = wk_max_pool2d_with_indices(x64, 3, 2, 1, &i64);
    TU_NOTNULL(y32);
    TU_NOTNULL(y64);
    double *a = tu_values(y32), *b = tu_values(y64), *ia = tu_values(i32), *ib = tu_values(i64);
    int64_t m = wk_tensor_numel(y32);
    for (int64_t i = 0; i < m; i++) {
      ck_assert_msg((isnan(a[i]) && isnan(b[i])) || a[i] == b[i], "shape %zu out %lld: %g vs %g", si, (long long)i,
                    a[i], b[i]);
      ck_assert_msg(ia[i] == ib[i], "shape %zu out %lld: index %g vs %g", si, (long long)i, ia[i], ib[i]);
    }
    free(a);
    free(b);
    free(ia);
    free(ib);
    wk_scope_end();
  }
}
END_TEST

START_TEST(test_maxpool_known_and_ceil) {
  int64_t live = wk_live_tensors();
  double v[25];
  for (int i = 0; i < 25; i++) v[i] = i;
  wk_tensor *x = tu_tensor(v, WK_F32, WK_SHAPE(1, 1, 5, 5));
  wk_tensor *ind;
  /* ceil mode adds a partial last window */
  wk_tensor *y = maxpool(x, 2, 2, 0, 0, 0, 0, 1, 1, true, &ind);
  int64_t e33[4] = {1, 1, 3, 3};
  assert_shape(y, e33, 4);
  TU_EQ_VALS(y, 6, 8, 9, 16, 18, 19, 21, 23, 24);
  TU_EQ_VALS(ind, 6, 8, 9, 16, 18, 19, 21, 23, 24);
  wk_release(y);
  wk_release(ind);
  y = maxpool(x, 2, 2, 0, 0, 0, 0, 1, 1, false, &ind);
  TU_EQ_VALS(y, 6, 8, 16, 18);
  wk_release(y);
  wk_release(ind);
  /* H=5, k=2, s=2, pad=1, ceil: 4 windows by the formula, but the last one
   * would start in the right padding, so 3 */
  y = maxpool(x, 2, 2, 2, 2, 1, 1, 1, 1, true, &ind);
  assert_shape(y, e33, 4);
  TU_EQ_VALS(y, 0, 2, 4, 10, 12, 14, 20, 22, 24);
  TU_EQ_VALS(ind, 0, 2, 4, 10, 12, 14, 20, 22, 24);
  wk_release(y);
  wk_release(ind);
  /* the square front end and wk_max_pool2d */
  y = wk_max_pool2d_with_indices(x, 3, 2, 1, &ind);
  TU_EQ_VALS(y, 6, 8, 9, 16, 18, 19, 21, 23, 24);
  wk_release(y);
  wk_release(ind);
  y = wk_max_pool2d(x, 5, 0, 0);
  TU_EQ_VALS(y, 24);
  wk_release(y);
  wk_release(x);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_maxpool_nan_and_inf) {
  int64_t live = wk_live_tensors();
  wk_tensor *x = TU_T(WK_F32, (1, 4, 4), 1, NAN, 3, 2, NAN, -INFINITY, NAN, 0, -INFINITY, -INFINITY, 7, 8,
                      -INFINITY, -INFINITY, 11, 12);
  wk_tensor *ind;
  wk_tensor *y = maxpool(x, 2, 2, 0, 0, 0, 0, 1, 1, false, &ind);
  /* the last NaN in a window wins; an all -inf window keeps its first index */
  TU_EQ_VALS(y, NAN, NAN, -INFINITY, 12);
  TU_EQ_VALS(ind, 4, 6, 8, 15);
  wk_release(y);
  wk_release(ind);
  wk_release(x);
  wk_tensor *m = TU_T(WK_F64, (1, 1, 2, 2), -INFINITY, -INFINITY, -INFINITY, -INFINITY);
  y = maxpool(m, 2, 2, 0, 0, 0, 0, 1, 1, false, &ind);
  TU_EQ_VALS(y, -INFINITY);
  TU_EQ_VALS(ind, 0);
  wk_release(y);
  wk_release(ind);
  wk_release(m);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_maxpool_zero_batch_and_errors) {
  int64_t live = wk_live_tensors();
  int64_t xs0[4] = {0, 3, 6, 6};
  wk_tensor *x0 = tu_rand(xs0, 4, WK_F32, -1, 1, 1), *ind;
  wk_tensor *y = maxpool(x0, 2, 2, 0, 0, 0, 0, 1, 1, false, &ind);
  int64_t e[4] = {0, 3, 3, 3};
  assert_shape(y, e, 4);
  assert_shape(ind, e, 4);
  wk_release(y);
  wk_release(ind);
  wk_release(x0);

  int64_t xs[4] = {2, 3, 6, 6};
  wk_tensor *x = tu_rand(xs, 4, WK_F32, -1, 1, 2);
  ck_assert_ptr_null(maxpool(x, 3, 3, 1, 1, 2, 2, 1, 1, false, &ind));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG,
                "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and dilation=1");
  ck_assert_ptr_null(maxpool(x, 3, 3, 1, 1, 2, 0, 2, 1, false, &ind));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG,
                "pad should be smaller than or equal to half of kernel size, but got padW = 0, padH = 2, kW = 3, kH = 3");
  ck_assert_ptr_null(maxpool(x, 0, 2, 1, 1, 0, 0, 1, 1, false, &ind));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "kernel size should be greater than zero");
  ck_assert_ptr_null(maxpool(x, 2, 2, 1, -1, 0, 0, 1, 1, false, &ind));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "stride should be greater than zero");
  ck_assert_ptr_null(maxpool(x, 2, 2, 1, 1, 0, 0, 0, 1, false, &ind));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "dilation should be greater than zero");
  ck_assert_ptr_null(maxpool(x, 7, 7, 1, 1, 0, 0, 1, 1, false, &ind));
  TU_FAILS_WITH(WK_ERR_SHAPE, "Given input size: (3x6x6). Calculated output size: (3x0x0). Output size is too small");
  {
    int64_t k[2] = {2, 2}, st[2] = {1, 1}, pd[2] = {0, 0}, dl[2] = {1, 1};
    wk_value a[6] = {WK_VT(x), WK_VINTS(k, 2), WK_VINTS(st, 2), WK_VINTS(pd, 2), WK_VINTS(dl, 2), WK_VB(false)};
    wk_value out[WK_MAX_OUTS];
    a[1] = WK_VINTS(k, 0);
    ck_assert_int_ne(wk_call("max_pool2d_with_indices", a, 6, out), WK_OK);
    TU_FAILS_WITH(WK_ERR_INVALID_ARG, "kernel_size must either be a single int, or a tuple of two ints");
    a[1] = WK_VINTS(k, 2);
    st[0] = 0;
    ck_assert_int_ne(wk_call("max_pool2d_with_indices", a, 6, out), WK_OK);
    TU_FAILS_WITH(WK_ERR_INVALID_ARG, "stride should not be zero");
  }
  int64_t x2s[2] = {6, 6}, xe[4] = {2, 0, 6, 6};
  wk_tensor *x2 = tu_rand(x2s, 2, WK_F32, -1, 1, 3), *xe0 = tu_rand(xe, 4, WK_F32, -1, 1, 4);
  ck_assert_ptr_null(maxpool(x2, 2, 2, 0, 0, 0, 0, 1, 1, false, &ind));
  TU_FAILS_WITH(WK_ERR_SHAPE, "non-empty 3D or 4D (batch mode) tensor expected for input");
  ck_assert_ptr_null(maxpool(xe0, 2, 2, 0, 0, 0, 0, 1, 1, false, &ind));
  TU_FAILS_WITH(WK_ERR_SHAPE,
                "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:[2, 0, 6, 6]");
  wk_tensor *xb = wk_to_dtype(x, WK_BOOL);
  ck_assert_ptr_null(maxpool(xb, 2, 2, 0, 0, 0, 0, 1, 1, false, &ind));
  TU_FAILS_WITH(WK_ERR_DTYPE, "\"max_pool2d\" not implemented for 'Bool'");
  ck_assert_ptr_null(maxpool(NULL, 2, 2, 0, 0, 0, 0, 1, 1, false, &ind));
  ck_assert_int_ne(wk_last_error(), WK_OK);
  wk_clear_error();
  wk_release(x);
  wk_release(x2);
  wk_release(xe0);
  wk_release(xb);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- avg_pool2d --------------------------------------------------------------------- */

static void check_avgpool(const pool_case *c, bool include_pad, int64_t divisor, wk_dtype dt, uint64_t seed) {
  bool integer = dt == WK_I64;
  wk_tensor *x = pool_input(c, dt, seed, integer ? -100 : -1, integer ? 100 : 1);
  TU_NOTNULL(x);
  double *xv = tu_values(x);
  int64_t P = c->N * c->C, sh = c->sh ? c->sh : c->kh, sw = c->sw ? c->sw : c->kw;
  int64_t OH = ref_pool_size(c->H, c->kh, c->ph, sh, 1, c->ceil_mode);
  int64_t OW = ref_pool_size(c->W, c->kw, c->pw, sw, 1, c->ceil_mode);
  double *rv = malloc(sizeof(double) * (size_t)(P * OH * OW + 1));
  ref_avgpool(xv, P, c->H, c->W, c->kh, c->kw, sh, sw, c->ph, c->pw, OH, OW, include_pad, divisor, integer, rv);
  wk_tensor *xin = c->unbatched ? wk_select(x, 0, 0) : x;
  wk_tensor *y = avgpool(xin, c->kh, c->kw, c->sh, c->sw, c->ph, c->pw, c->ceil_mode, include_pad, divisor);
  int64_t os[4] = {c->N, c->C, OH, OW};
  if (c->unbatched)
    assert_shape(y, os + 1, 3);
  else
    assert_shape(y, os, 4);
  ck_assert_int_eq(wk_tensor_dtype(y), dt);
  double tol = integer ? 0 : rtol_of(dt);
  TU_CLOSE(y, rv, (c->unbatched ? c->C : P) * OH * OW, tol, integer ? 0 : dt == WK_F64 ? 1e-12 : tol);
  free(xv);
  free(rv);
  if (c->unbatched) wk_release(xin);
  wk_release(x);
  wk_release(y);
}

START_TEST(test_avgpool_random) {
  int64_t live = wk_live_tensors();
  uint64_t s = 4242;
  for (int i = 0; i < 60; i++) {
    pool_case c = random_pool(&s, false);
    bool inc = i % 2 == 0;
    int64_t div = i % 5 == 0 ? rnd(&s, 1, 7) * (i % 10 == 0 ? -1 : 1) : 0;
    check_avgpool(&c, inc, div, WK_F64, 1000 + (uint64_t)i);
    check_avgpool(&c, inc, div, WK_F32, 1100 + (uint64_t)i);
    if (i % 3 == 0) check_avgpool(&c, inc, div, WK_BF16, 1200 + (uint64_t)i);
    if (i % 3 == 1) check_avgpool(&c, inc, div, WK_I64, 1300 + (uint64_t)i);
    if (i % 3 == 2) check_avgpool(&c, inc, div, WK_F16, 1400 + (uint64_t)i);
  }
  pool_case big = {4, 8, 40, 36, 3, 3, 2, 2, 1, 1, 1, 1, true, false, 2};
  check_avgpool(&big, false, 0, WK_F32, 1501);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_avgpool_known) {
  int64_t live = wk_live_tensors();
  wk_tensor *ones = TU_T(WK_F32, (1, 1, 3, 3), 1, 1, 1, 1, 1, 1, 1, 1, 1);
  /* padding counted: each corner window holds one of four */
  wk_tensor *y = avgpool(ones, 2, 2, 2, 2, 1, 1, false, true, 0);
  TU_EQ_VALS(y, 0.25, 0.5, 0.5, 1);
  wk_release(y);
  y = avgpool(ones, 2, 2, 2, 2, 1, 1, false, false, 0);
  TU_EQ_VALS(y, 1, 1, 1, 1);
  wk_release(y);
  y = avgpool(ones, 2, 2, 2, 2, 1, 1, false, true, 2);
  TU_EQ_VALS(y, 0.5, 1, 1, 2);
  wk_release(y);
  wk_release(ones);
  /* ceil mode: the partial window's divisor stops at the padded edge */
  wk_tensor *o4 = TU_T(WK_F64, (1, 4, 4), 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1);
  y = avgpool(o4, 3, 3, 2, 2, 0, 0, true, true, 0);
  int64_t e[3] = {1, 2, 2};
  assert_shape(y, e, 3);
  TU_EQ_VALS(y, 1, 1, 1, 1);
  wk_release(y);
  /* the square front end: stride defaults to the kernel */
  y = wk_avg_pool2d(o4, 2, 0, 0);
  TU_EQ_VALS(y, 1, 1, 1, 1);
  wk_release(y);
  wk_release(o4);
  /* integers divide with truncation toward zero */
  wk_tensor *xi = TU_T(WK_I64, (1, 1, 2, 2), 1, 2, -7, 0);
  y = avgpool(xi, 2, 2, 0, 0, 0, 0, false, true, 0);
  ck_assert_int_eq(wk_tensor_dtype(y), WK_I64);
  TU_EQ_VALS(y, -1);
  wk_release(y);
  wk_release(xi);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_avgpool_errors) {
  int64_t live = wk_live_tensors();
  int64_t xs[4] = {1, 2, 5, 5};
  wk_tensor *x = tu_rand(xs, 4, WK_F32, -1, 1, 1);
  ck_assert_ptr_null(avgpool(x, 2, 2, 1, 1, 2, 0, false, true, 0));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "pad should be at most half of effective kernel size");
  {
    int64_t k[2] = {2, 2}, pd[2] = {0, 0};
    wk_value a[7] = {WK_VT(x), WK_VINTS(k, 2), WK_VINTS(k, 0), WK_VINTS(pd, 2), WK_VB(false), WK_VB(true), WK_VI(0)};
    wk_value out[WK_MAX_OUTS];
    ck_assert_int_ne(wk_call("avg_pool2d", a, 7, out), WK_OK);
    TU_FAILS_WITH(WK_ERR_INVALID_ARG, "divisor must be not zero");
  }
  ck_assert_ptr_null(avgpool(x, 6, 6, 1, 1, 0, 0, false, true, 0));
  TU_FAILS_WITH(WK_ERR_SHAPE, "Output size is too small");
  wk_tensor *xi = wk_to_dtype(x, WK_I32);
  ck_assert_ptr_null(avgpool(xi, 2, 2, 0, 0, 0, 0, false, true, 0));
  TU_FAILS_WITH(WK_ERR_DTYPE, "\"avg_pool2d\" not implemented for 'Int'");
  int64_t x5[5] = {1, 1, 1, 4, 4};
  wk_tensor *x5t = tu_rand(x5, 5, WK_F32, -1, 1, 2);
  ck_assert_ptr_null(avgpool(x5t, 2, 2, 0, 0, 0, 0, false, true, 0));
  TU_FAILS_WITH(WK_ERR_SHAPE, "3D or 4D");
  wk_release(x);
  wk_release(xi);
  wk_release(x5t);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- adaptive_avg_pool2d --------------------------------------------------------------- */

static void check_adaptive(int64_t N, int64_t C, int64_t H, int64_t W, int64_t OH, int64_t OW, bool unbatched,
                           int layout, wk_dtype dt, uint64_t seed) {
  pool_case c = {N, C, H, W, 1, 1, 1, 1, 0, 0, 1, 1, false, unbatched, layout};
  wk_tensor *x = pool_input(&c, dt, seed, -1, 1);
  TU_NOTNULL(x);
  double *xv = tu_values(x);
  double *rv = malloc(sizeof(double) * (size_t)(N * C * OH * OW + 1));
  ref_adaptive(xv, N * C, H, W, OH, OW, rv);
  wk_tensor *xin = unbatched ? wk_select(x, 0, 0) : x;
  wk_tensor *y = adaptive(xin, OH, OW);
  int64_t os[4] = {N, C, OH, OW};
  if (unbatched)
    assert_shape(y, os + 1, 3);
  else
    assert_shape(y, os, 4);
  ck_assert_int_eq(wk_tensor_dtype(y), dt);
  TU_CLOSE(y, rv, (unbatched ? C : N * C) * OH * OW, rtol_of(dt), dt == WK_F64 ? 1e-12 : rtol_of(dt));
  free(xv);
  free(rv);
  if (unbatched) wk_release(xin);
  wk_release(x);
  wk_release(y);
}

START_TEST(test_adaptive_random) {
  int64_t live = wk_live_tensors();
  uint64_t s = 99;
  for (int i = 0; i < 40; i++) {
    int64_t N = rnd(&s, 1, 3), C = rnd(&s, 1, 4), H = rnd(&s, 1, 11), W = rnd(&s, 1, 11);
    int64_t OH = rnd(&s, 1, 8), OW = rnd(&s, 1, 8);
    bool ub = i % 4 == 0;
    int layout = (int)rnd(&s, 0, 2);
    check_adaptive(ub ? 1 : N, C, H, W, OH, OW, ub, layout, WK_F64, 2000 + (uint64_t)i);
    check_adaptive(ub ? 1 : N, C, H, W, OH, OW, ub, layout, WK_F32, 2100 + (uint64_t)i);
    if (i % 2) check_adaptive(N, C, H, W, OH, OW, false, layout, i % 4 == 1 ? WK_BF16 : WK_F16, 2200 + (uint64_t)i);
  }
  check_adaptive(2, 3, 7, 7, 1, 1, false, 0, WK_F32, 2301); /* global pooling */
  check_adaptive(4, 16, 33, 30, 7, 5, false, 1, WK_F32, 2302); /* parallel planes */
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_adaptive_known_and_errors) {
  int64_t live = wk_live_tensors();
  /* H=5 into 3: windows [0,2), [1,4), [3,5) */
  wk_tensor *x = TU_T(WK_F32, (1, 1, 5), 1, 2, 3, 4, 5);
  wk_tensor *y = wk_adaptive_avg_pool2d(x, 1, 3);
  TU_EQ_VALS(y, 1.5, 3, 4.5);
  wk_release(y);
  /* zero output size gives an empty result */
  y = adaptive(x, 0, 2);
  int64_t e[3] = {1, 0, 2};
  assert_shape(y, e, 3);
  wk_release(y);
  ck_assert_ptr_null(adaptive(x, -1, 2));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "elements of output_size must be greater than or equal to 0");
  int64_t zs[4] = {2, 3, 0, 4}, z2[2] = {3, 3};
  wk_tensor *xz = tu_rand(zs, 4, WK_F32, -1, 1, 1), *x2 = tu_rand(z2, 2, WK_F32, -1, 1, 2);
  ck_assert_ptr_null(adaptive(xz, 2, 2));
  TU_FAILS_WITH(WK_ERR_SHAPE, "Expected input to have non-zero size for non-batch dimensions");
  ck_assert_ptr_null(adaptive(x2, 2, 2));
  TU_FAILS_WITH(WK_ERR_SHAPE, "Expected 3D or 4D tensor");
  wk_tensor *xi = wk_to_dtype(x, WK_I64);
  ck_assert_ptr_null(adaptive(xi, 2, 2));
  TU_FAILS_WITH(WK_ERR_DTYPE, "not implemented for 'Long'");
  /* zero batch and zero channels are fine */
  int64_t zb[4] = {0, 3, 4, 4};
  wk_tensor *xb = tu_rand(zb, 4, WK_F32, -1, 1, 3);
  y = adaptive(xb, 2, 2);
  int64_t eb[4] = {0, 3, 2, 2};
  assert_shape(y, eb, 4);
  wk_release(y);
  wk_release(x);
  wk_release(xz);
  wk_release(x2);
  wk_release(xi);
  wk_release(xb);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("check_ops_conv");
  TCase *tc = tcase_create("conv2d");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_conv_random_f64_f32);
  tcase_add_test(tc, test_conv_layouts_and_unbatched);
  tcase_add_test(tc, test_conv_large_paths);
  tcase_add_test(tc, test_conv_half_dtypes);
  tcase_add_test(tc, test_conv_thread_invariant);
  tcase_add_test(tc, test_conv_known_values);
  tcase_add_test(tc, test_conv_zero_size);
  tcase_add_test(tc, test_conv_errors);
  suite_add_tcase(s, tc);
  tc = tcase_create("max_pool2d");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_test(tc, test_maxpool_random);
  tcase_add_test(tc, test_maxpool_stem_vector_path);
  tcase_add_test(tc, test_maxpool_known_and_ceil);
  tcase_add_test(tc, test_maxpool_nan_and_inf);
  tcase_add_test(tc, test_maxpool_zero_batch_and_errors);
  suite_add_tcase(s, tc);
  tc = tcase_create("avg_pool2d");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_test(tc, test_avgpool_random);
  tcase_add_test(tc, test_avgpool_known);
  tcase_add_test(tc, test_avgpool_errors);
  suite_add_tcase(s, tc);
  tc = tcase_create("adaptive_avg_pool2d");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_test(tc, test_adaptive_random);
  tcase_add_test(tc, test_adaptive_known_and_errors);
  suite_add_tcase(s, tc);
  return s;
}
TU_MAIN(make_suite)
