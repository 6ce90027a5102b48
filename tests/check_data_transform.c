/* check_data_transform: the resampling and colour transforms: Resize against
 * hand-computed values, values printed by PyTorch 1.13 and a float64
 * reference; RandomResizedCrop's sampling (uniform window positions,
 * determinism) and its fallback centre crop; ColorJitter's brightness and
 * contrast blends (torchvision's formulas in float32), their random order, and
 * argument errors. */
#include <stdint.h>
#include <wick/data.h>

#include "testutil.h"

/* float64 reference of bilinear resampling (align_corners=False, no
 * antialias) of the window (top, left, h, w) of each H x W plane. */
static void ref_resample(const double *x, int planes, int H, int W, int top, int left, int h, int w, int oh, int ow,
                         double *out) {
  for (int p = 0; p < planes; p++)
    for (int r = 0; r < oh; r++)
      for (int q = 0; q < ow; q++) {
        double sr = fmax(0, (double)h / oh * (r + 0.5) - 0.5), sc = fmax(0, (double)w / ow * (q + 0.5) - 0.5);
        int r0 = (int)sr, c0 = (int)sc, r1 = r0 + (r0 < h - 1), c1 = c0 + (c0 < w - 1);
        double lr = sr - r0, lc = sc - c0;
        const double *b = x + (size_t)p * H * W + (size_t)top * W + left;
        out[((size_t)p * oh + r) * ow + q] = (1 - lr) * ((1 - lc) * b[r0 * W + c0] + lc * b[r0 * W + c1]) +
                                             lr * ((1 - lc) * b[r1 * W + c0] + lc * b[r1 * W + c1]);
      }
}
static wk_tensor *apply(wk_transform *tf, wk_tensor *x, uint64_t seed) {
  wk_tensor *y = wk_transform_apply(tf, x, seed);
  ck_assert_msg(y != NULL, "transform failed: %s", wk_last_error_message());
  return y;
}

START_TEST(test_transform_resize) {
  int64_t live = wk_live_tensors();
  /* hand-computed (PyTorch: F.interpolate(x, size=(4, 4), mode='bilinear', align_corners=False)) */
  wk_tensor *x = TU_T(WK_F32, (1, 2, 2), 0, 1, 2, 3);
  wk_transform *up = wk_transform_resize(4, 4);
  wk_tensor *y = apply(up, x, 0);
  TU_EQ_VALS(y, 0, .25, .75, 1, .5, .75, 1.25, 1.5, 1.5, 1.75, 2.25, 2.5, 2, 2.25, 2.75, 3);
  wk_release(y);
  wk_release(x);
  /* uint8: computed in float, rounded half to even (2.5 -> 2, 7.5 -> 8) */
  x = TU_T(WK_U8, (2, 2), 0, 10, 20, 30);
  y = apply(up, x, 0);
  ck_assert_int_eq(wk_tensor_dtype(y), WK_U8);
  TU_EQ_VALS(y, 0, 2, 8, 10, 5, 8, 12, 15, 15, 18, 22, 25, 20, 22, 28, 30);
  wk_release(y);
  wk_release(x);
  /* downscale by 2: the mean of each 2 x 2 block */
  x = wk_arange(0, 16, 1, WK_OPTS(.dtype = WK_F64));
  wk_tensor *x44 = wk_reshape(x, WK_SHAPE(4, 4));
  wk_transform *down = wk_transform_resize(2, 2);
  y = apply(down, x44, 0);
  TU_EQ_VALS(y, 2.5, 4.5, 10.5, 12.5);
  wk_release(y);
  wk_release(x44);
  wk_release(x);
  /* values printed by PyTorch 1.13 (F.interpolate(x, size, mode='bilinear', align_corners=False); uint8 as
   * torchvision: float32, round, cast) for x[i] = (i * 37 % 101) / 101 and u[i] = i * 37 % 256, 5 x 7 */
  float xv[35];
  uint8_t uv[35];
  for (int i = 0; i < 35; i++) xv[i] = (float)(i * 37 % 101) / 101.0f, uv[i] = (uint8_t)(i * 37 % 256);
  x = wk_tensor_from_data(xv, WK_F32, WK_SHAPE(5, 7));
  wk_transform *r34 = wk_transform_resize(3, 4), *r49 = wk_transform_resize(4, 9);
  y = apply(r34, x, 0);
  TU_CLOSE(y,
           ((double[]){0.325495034, 0.549917519, 0.316006631, 0.498762369, 0.266089141, 0.782178164, 0.548267305,
                       0.564356446, 0.415016502, 0.764438927, 0.530528009, 0.463283867}),
           12, 6e-7, 0);
  wk_release(y);
  wk_release(x);
  x = wk_tensor_from_data(uv, WK_U8, WK_SHAPE(5, 7));
  y = apply(r49, x, 0);
  TU_EQ_VALS(y, 0, 25, 54, 83, 111, 140, 169, 198, 222, 4, 29, 58, 86, 115, 144, 173, 201, 226, 8, 33, 61, 90, 119, 148,
             176, 205, 230, 12, 36, 65, 94, 123, 151, 180, 209, 234);
  wk_release(y);
  wk_release(x);
  wk_transform_free(r34);
  wk_transform_free(r49);
  /* odd ratios, up and down, several planes, against the float64 reference */
  const int sizes[][2] = {{3, 4}, {9, 11}, {5, 2}, {1, 1}, {13, 7}};
  for (int k = 0; k < 5; k++) {
    int oh = sizes[k][0], ow = sizes[k][1];
    wk_transform *tf = wk_transform_resize(oh, ow);
    for (int d = 0; d < 3; d++) {
      wk_dtype dt = d == 0 ? WK_F32 : d == 1 ? WK_F64 : WK_U8;
      x = tu_rand(WK_SHAPE(3, 5, 7), dt, 0, dt == WK_U8 ? 256 : 1, 40 + (uint64_t)k);
      wk_tensor *xn = tu_noncontig(x);
      double *v = tu_values(x), *ref = malloc(sizeof(double) * 3 * (size_t)(oh * ow));
      ref_resample(v, 3, 5, 7, 0, 0, 5, 7, oh, ow, ref);
      y = apply(tf, xn, 0);
      ck_assert_int_eq(wk_tensor_size(y, 1), oh);
      ck_assert_int_eq(wk_tensor_size(y, 2), ow);
      if (dt == WK_U8) {
        for (int i = 0; i < 3 * oh * ow; i++) ref[i] = nearbyint(ref[i]);
        TU_CLOSE(y, ref, 3 * oh * ow, 0, 1); /* a tie may round either way between float and double */
      } else {
        TU_CLOSE(y, ref, 3 * oh * ow, dt == WK_F32 ? 1e-5 : 1e-12, dt == WK_F32 ? 1e-6 : 1e-12);
      }
      free(v);
      free(ref);
      wk_release(y);
      wk_release(xn);
      wk_release(x);
    }
    wk_transform_free(tf);
  }
  /* w 0: the smaller edge becomes h, the other int(h * long / short) */
  wk_transform *edge = wk_transform_resize(4, 0);
  x = wk_zeros(WK_SHAPE(1, 6, 9), WK_OPTS());
  y = apply(edge, x, 0);
  ck_assert_int_eq(wk_tensor_size(y, 1), 4);
  ck_assert_int_eq(wk_tensor_size(y, 2), 6);
  wk_release(y);
  wk_release(x);
  x = wk_zeros(WK_SHAPE(7, 5), WK_OPTS());
  y = apply(edge, x, 0);
  ck_assert_int_eq(wk_tensor_size(y, 0), 5); /* int(4 * 7 / 5) = 5 */
  ck_assert_int_eq(wk_tensor_size(y, 1), 4);
  wk_release(y);
  wk_release(x);
  /* errors */
  x = wk_zeros(WK_SHAPE(4, 4), WK_OPTS(.dtype = WK_I32));
  ck_assert_ptr_null(wk_transform_apply(up, x, 0));
  TU_FAILS_WITH(WK_ERR_DTYPE, "resize: expects a uint8, float32 or float64 image, got");
  wk_release(x);
  x = wk_zeros(WK_SHAPE(4), WK_OPTS());
  ck_assert_ptr_null(wk_transform_apply(up, x, 0));
  TU_FAILS_WITH(WK_ERR_SHAPE, "resize: expects a [..., H, W] image");
  wk_release(x);
  ck_assert_ptr_null(wk_transform_resize(0, 3));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "resize: size (0, 3) must be positive");
  wk_transform_free(up);
  wk_transform_free(down);
  wk_transform_free(edge);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_transform_random_resized_crop) {
  int64_t live = wk_live_tensors();
  /* fallback: no try fits (area 4x the image), so the centre crop clamped to
   * ratio 1 of an 8 x 4 image: rows 2..5, all columns; resized 4 x 4 = itself */
  wk_tensor *x = wk_arange(0, 32, 1, WK_OPTS(.dtype = WK_F32)), *x84 = wk_reshape(x, WK_SHAPE(1, 8, 4));
  wk_transform *fb = wk_transform_random_resized_crop(4, 4, (const double[]){4, 4}, (const double[]){1, 1}, 7);
  for (uint64_t seed = 0; seed < 5; seed++) {
    wk_tensor *y = apply(fb, x84, seed);
    TU_EQ_VALS(y, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23);
    wk_release(y);
  }
  /* ratio out of reach of a wide image: w = round(h * max ratio) */
  wk_tensor *x48 = wk_reshape(x, WK_SHAPE(1, 4, 8));
  wk_transform *fb2 = wk_transform_random_resized_crop(4, 4, (const double[]){4, 4}, (const double[]){0.5, 1}, 7);
  wk_tensor *y = apply(fb2, x48, 3); /* window 4 x 4 at column (8 - 4) / 2 = 2 */
  TU_EQ_VALS(y, 2, 3, 4, 5, 10, 11, 12, 13, 18, 19, 20, 21, 26, 27, 28, 29);
  wk_release(y);
  /* the image's own ratio in range: the whole image, resized (4 x 8 -> 2 x 4 takes 2 x 2 block means) */
  wk_transform *fb3 = wk_transform_random_resized_crop(2, 4, (const double[]){4, 4}, (const double[]){1, 3}, 7);
  y = apply(fb3, x48, 3);
  TU_EQ_VALS(y, 4.5, 6.5, 8.5, 10.5, 20.5, 22.5, 24.5, 26.5);
  wk_release(y);
  wk_transform_free(fb3);
  wk_release(x48);
  wk_release(x84);
  wk_release(x);
  /* sampling: area 1/4 and ratio 1 of 16 x 16 is always an 8 x 8 window at a
   * uniform position; resized to 8 x 8 it is copied, so its first value gives
   * the position */
  x = wk_arange(0, 256, 1, WK_OPTS(.dtype = WK_F64));
  wk_tensor *x16 = wk_reshape(x, WK_SHAPE(16, 16));
  wk_transform *tf = wk_transform_random_resized_crop(8, 8, (const double[]){0.25, 0.25}, (const double[]){1, 1}, 99);
  int seen[9][9] = {{0}};
  for (uint64_t seed = 0; seed < 400; seed++) {
    y = apply(tf, x16, seed);
    double *v = tu_values(y);
    int top = (int)v[0] / 16, left = (int)v[0] % 16;
    ck_assert_int_le(top, 8);
    ck_assert_int_le(left, 8);
    for (int r = 0; r < 8; r++)
      for (int c = 0; c < 8; c++) ck_assert_double_eq(v[r * 8 + c], (top + r) * 16 + left + c);
    seen[top][left]++;
    wk_tensor *again = apply(tf, x16, seed); /* the same stream, the same window */
    TU_CLOSE(again, v, 64, 0, 0);
    wk_release(again);
    free(v);
    wk_release(y);
  }
  int rows_seen = 0, cols_seen = 0;
  for (int i = 0; i < 9; i++) {
    int r = 0, c = 0;
    for (int j = 0; j < 9; j++) r += seen[i][j], c += seen[j][i];
    rows_seen += r > 0, cols_seen += c > 0;
  }
  ck_assert_int_eq(rows_seen, 9);
  ck_assert_int_eq(cols_seen, 9);
  /* defaults: the output is always the asked size, uint8 stays uint8 */
  wk_transform *def = wk_transform_random_resized_crop(5, 6, NULL, NULL, 1);
  wk_tensor *u = tu_rand(WK_SHAPE(3, 20, 30), WK_U8, 0, 256, 5);
  for (uint64_t seed = 0; seed < 20; seed++) {
    y = apply(def, u, seed);
    ck_assert_int_eq(wk_tensor_dtype(y), WK_U8);
    ck_assert_int_eq(wk_tensor_size(y, 0), 3);
    ck_assert_int_eq(wk_tensor_size(y, 1), 5);
    ck_assert_int_eq(wk_tensor_size(y, 2), 6);
    wk_release(y);
  }
  ck_assert_ptr_null(wk_transform_random_resized_crop(5, 5, (const double[]){0.9, 0.1}, NULL, 0));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "scale (0.9, 0.1) and ratio (0.75, 1.33333) must be positive, finite and ordered");
  ck_assert_ptr_null(wk_transform_random_resized_crop(0, 5, NULL, NULL, 0));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "size (0, 5) must be positive");
  wk_transform_free(def);
  wk_transform_free(tf);
  wk_transform_free(fb);
  wk_transform_free(fb2);
  wk_release(u);
  wk_release(x16);
  wk_release(x);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* torchvision's blends, in float32 as it computes them. */
static float clampf(float v, float hi) {
  return v < 0 ? 0 : v > hi ? hi : v;
}
static void ref_brightness(float *v, int n, float f, float hi) {
  for (int i = 0; i < n; i++) v[i] = clampf(f * v[i], hi);
}
static void ref_contrast(float *v, int hw, float f, bool u8) {
  double sum = 0;
  for (int i = 0; i < hw; i++) {
    float g = 0.2989f * v[i] + 0.587f * v[hw + i] + 0.114f * v[2 * hw + i];
    sum += u8 ? (float)(uint8_t)g : g;
  }
  float m = (float)(sum / hw);
  for (int i = 0; i < 3 * hw; i++) v[i] = clampf(f * v[i] + (1 - f) * m, u8 ? 255 : 1);
}
static void to_u8(float *v, int n) {
  for (int i = 0; i < n; i++) v[i] = (float)(uint8_t)v[i];
}

START_TEST(test_transform_color_jitter) {
  int64_t live = wk_live_tensors();
  enum { HW = 20 };
  wk_tensor *xf = tu_rand(WK_SHAPE(3, 4, 5), WK_F32, 0, 1, 3), *xu = tu_rand(WK_SHAPE(3, 4, 5), WK_U8, 0, 256, 4);
  double *vf = tu_values(xf), *vu = tu_values(xu), ref[3 * HW];
  float a[3 * HW], b2[3 * HW];
  /* brightness 1.5 exactly: clamp(1.5 x); uint8 truncates */
  wk_transform *br = wk_transform_color_jitter_range((const double[]){1.5, 1.5}, NULL, 1);
  wk_tensor *y = apply(br, xf, 0);
  for (int i = 0; i < 3 * HW; i++) a[i] = (float)vf[i];
  ref_brightness(a, 3 * HW, 1.5f, 1);
  for (int i = 0; i < 3 * HW; i++) ref[i] = a[i];
  TU_CLOSE(y, ref, 3 * HW, 0, 0);
  wk_release(y);
  y = apply(br, xu, 0);
  for (int i = 0; i < 3 * HW; i++) a[i] = (float)vu[i];
  ref_brightness(a, 3 * HW, 1.5f, 255);
  to_u8(a, 3 * HW);
  for (int i = 0; i < 3 * HW; i++) ref[i] = a[i];
  TU_CLOSE(y, ref, 3 * HW, 0, 0);
  wk_release(y);
  /* contrast 0.5: a blend with the grayscale mean */
  wk_transform *ct = wk_transform_color_jitter_range(NULL, (const double[]){0.5, 0.5}, 1);
  y = apply(ct, xu, 0);
  for (int i = 0; i < 3 * HW; i++) a[i] = (float)vu[i];
  ref_contrast(a, HW, 0.5f, true);
  to_u8(a, 3 * HW);
  for (int i = 0; i < 3 * HW; i++) ref[i] = a[i];
  TU_CLOSE(y, ref, 3 * HW, 0, 1);
  wk_release(y);
  y = apply(ct, xf, 0);
  for (int i = 0; i < 3 * HW; i++) a[i] = (float)vf[i];
  ref_contrast(a, HW, 0.5f, false);
  for (int i = 0; i < 3 * HW; i++) ref[i] = a[i];
  TU_CLOSE(y, ref, 3 * HW, 1e-6, 1e-7);
  wk_release(y);
  /* one channel (float64): the mean of the image itself */
  wk_tensor *g = TU_T(WK_F64, (1, 1, 4), 0.1, 0.2, 0.3, 1.0);
  y = apply(ct, g, 0);
  TU_CLOSE(y, ((double[]){0.05 + 0.2, 0.1 + 0.2, 0.15 + 0.2, 0.5 + 0.2}), 4, 1e-12, 1e-12);
  wk_release(y);
  wk_release(g);
  /* both: the order is random per sample; each result is one of the two orders */
  wk_transform *both = wk_transform_color_jitter_range((const double[]){1.5, 1.5}, (const double[]){0.5, 0.5}, 2);
  for (int i = 0; i < 3 * HW; i++) a[i] = b2[i] = (float)vf[i];
  ref_brightness(a, 3 * HW, 1.5f, 1), ref_contrast(a, HW, 0.5f, false);
  ref_contrast(b2, HW, 0.5f, false), ref_brightness(b2, 3 * HW, 1.5f, 1);
  int orders[2] = {0, 0};
  for (uint64_t seed = 0; seed < 40; seed++) {
    y = apply(both, xf, seed);
    double *v = tu_values(y);
    bool is_a = true, is_b = true;
    for (int i = 0; i < 3 * HW; i++) {
      is_a = is_a && fabs(v[i] - a[i]) < 1e-6;
      is_b = is_b && fabs(v[i] - b2[i]) < 1e-6;
    }
    ck_assert_msg(is_a != is_b, "seed %llu: neither order (or both) matches", (unsigned long long)seed);
    orders[is_a]++;
    free(v);
    wk_release(y);
  }
  ck_assert_int_gt(orders[0], 5);
  ck_assert_int_gt(orders[1], 5);
  /* ColorJitter(brightness=0.4): one factor in [0.6, 1.4] per sample, deterministic per seed */
  wk_transform *cj = wk_transform_color_jitter(0.4, 0, 3);
  wk_tensor *half = wk_full(WK_SHAPE(3, 2, 2), 0.5, WK_OPTS());
  double lo = 2, hi = 0;
  for (uint64_t seed = 0; seed < 50; seed++) {
    y = apply(cj, half, seed);
    double *v = tu_values(y), f = v[0] / 0.5;
    for (int i = 1; i < 12; i++) ck_assert_double_eq_tol(v[i], v[0], 1e-7);
    ck_assert(f >= 0.6 - 1e-6 && f <= 1.4 + 1e-6);
    lo = fmin(lo, f), hi = fmax(hi, f);
    wk_tensor *again = apply(cj, half, seed);
    TU_CLOSE(again, v, 12, 0, 0);
    wk_release(again);
    free(v);
    wk_release(y);
  }
  ck_assert(lo < 0.75 && hi > 1.25);
  /* errors */
  wk_tensor *two = wk_zeros(WK_SHAPE(2, 2, 2), WK_OPTS());
  ck_assert_ptr_null(wk_transform_apply(ct, two, 0));
  TU_FAILS_WITH(WK_ERR_SHAPE, "color_jitter: contrast needs 1 or 3 channels, the image has 2");
  wk_tensor *flat = wk_zeros(WK_SHAPE(2, 2), WK_OPTS());
  ck_assert_ptr_null(wk_transform_apply(br, flat, 0));
  TU_FAILS_WITH(WK_ERR_SHAPE, "color_jitter: expects a [C, H, W] image");
  wk_tensor *i32 = wk_zeros(WK_SHAPE(3, 2, 2), WK_OPTS(.dtype = WK_I32));
  ck_assert_ptr_null(wk_transform_apply(br, i32, 0));
  TU_FAILS_WITH(WK_ERR_DTYPE, "color_jitter: expects a uint8, float32 or float64 image");
  ck_assert_ptr_null(wk_transform_color_jitter(-0.5, 0, 0));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "color_jitter: brightness (1.5, 0.5)");
  wk_release(two);
  wk_release(flat);
  wk_release(i32);
  wk_release(half);
  wk_transform_free(cj);
  wk_transform_free(both);
  wk_transform_free(br);
  wk_transform_free(ct);
  free(vf);
  free(vu);
  wk_release(xf);
  wk_release(xu);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("data_transform");
  TCase *tc = tcase_create("transforms");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_transform_resize);
  tcase_add_test(tc, test_transform_random_resized_crop);
  tcase_add_test(tc, test_transform_color_jitter);
  suite_add_tcase(s, tc);
  return s;
}
TU_MAIN(make_suite)
