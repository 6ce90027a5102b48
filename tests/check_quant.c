/* check_quant: quantized tensors and the quant plugin. Expected values are
 * worked by hand from PyTorch's documented arithmetic (fbgemm's Quantize:
 * zero_point + nearbyint(x * (1.0f / scale)) in float32, ties to even;
 * dequantize (q - zero_point) * scale in float32; the observers'
 * _calculate_qparams in float32; fbgemm's requantisation), with the working
 * next to each number. */
#include <sys/stat.h>
#include <unistd.h>
#include <wick/data.h>
#include <wick/io.h>
#include <wick/nn.h>
#include <wick/optim.h>
#include <wick/quant.h>

#include "testutil.h"

static void expect_ints(wk_tensor *q, const double *want, int64_t n, const char *what) {
  TU_NOTNULL(q);
  wk_tensor *r = wk_int_repr(q);
  TU_NOTNULL(r);
  ck_assert_int_eq(wk_tensor_numel(r), n);
  double got[64];
  TU_OK(wk_tensor_to_f64(r, got, n));
  for (int64_t i = 0; i < n; i++)
    ck_assert_msg(got[i] == want[i], "%s[%lld]: got %g, want %g", what, (long long)i, got[i], want[i]);
}

/* ---- quantized tensors in the core ------------------------------------------------------- */
START_TEST(test_quant_per_tensor_rounding) {
  wk_scope_begin();
  /* scale 0.1: inv = 1.0f / 0.1f = 10.0f. 0.25 * 10 = 2.5 -> 2 (ties to even);
   * 0.75 -> 7.5 -> 8; 0.35f * 10 = 3.49999994 rounds to the float 3.5 -> 4
   * (multiplying by the inverse, as fbgemm does; dividing would give 3);
   * 1.27 -> 12.7 -> 13; 13 -> 130 -> 127; -13 -> -128. */
  wk_tensor *x = TU_T(WK_F32, (9), -1.0, 0.0, 0.25, 0.75, 0.35, 1.27, 13.0, -13.0, -0.25);
  wk_tensor *q = wk_quantize_per_tensor(x, 0.1, 0, WK_QINT8);
  expect_ints(q, (const double[]){-10, 0, 2, 8, 4, 13, 127, -128, -2}, 9, "qint8");
  ck_assert_int_eq(wk_tensor_dtype(q), WK_QINT8);
  ck_assert_int_eq(wk_tensor_qscheme(q), WK_PER_TENSOR_AFFINE);
  ck_assert_double_eq(wk_q_scale(q), 0.1);
  ck_assert_int_eq(wk_q_zero_point(q), 0);
  ck_assert_int_eq(wk_tensor_dtype(wk_int_repr(q)), WK_I8);
  /* quint8, scale 0.5, zero_point 11: zero_point is added after rounding
   * (fbgemm's non-legacy Quantize): 0.25 -> 11 + nearbyint(0.5) = 11 (rounding
   * 11.5 would give 12); 1.25 -> 11 + 2 = 13; -6 -> -1 -> 0; 200 -> 255. */
  wk_tensor *u = wk_quantize_per_tensor(TU_T(WK_F32, (4), 0.25, 1.25, -6.0, 200.0), 0.5, 11, WK_QUINT8);
  expect_ints(u, (const double[]){11, 13, 0, 255}, 4, "quint8");
  /* qint32 keeps large values */
  wk_tensor *i32 = wk_quantize_per_tensor(TU_T(WK_F32, (2), 1000.0, -70000.0), 1.0, 5, WK_QINT32);
  expect_ints(i32, (const double[]){1005, -69995}, 2, "qint32");
  /* dequantize: (q - zp) * scale in float32 */
  wk_tensor *d = wk_dequantize(u);
  ck_assert_int_eq(wk_tensor_dtype(d), WK_F32);
  double dv[4];
  TU_OK(wk_tensor_to_f64(d, dv, 4));
  ck_assert_double_eq(dv[0], 0.0);
  ck_assert_double_eq(dv[1], 1.0);
  ck_assert_double_eq(dv[2], -5.5);
  ck_assert_double_eq(dv[3], 122.0);
  /* to_f64 / item read the real values, like PyTorch's q.item() */
  double one;
  TU_OK(wk_item(wk_select(u, 0, 1), &one));
  ck_assert_double_eq(one, 1.0);
  /* the meta device runs the meta function: dtype and shape, the same errors */
  wk_tensor *me = wk_empty(WK_SHAPE(2), (wk_options){.device = {WK_DEVICE_META, 0}});
  wk_tensor *mq = wk_quantize_per_tensor(me, 0.1, 0, WK_QINT8);
  TU_NOTNULL(mq);
  ck_assert_int_eq(wk_tensor_dtype(mq), WK_QINT8);
  char *ms = wk_tensor_to_string(mq);
  ck_assert_str_eq(ms, "tensor(..., device='meta', size=(2,), dtype=torch.qint8)");
  wk_free(ms);
  ck_assert_ptr_null(wk_quantize_per_tensor(me, -1.0, 0, WK_QINT8));
  ck_assert_int_eq(wk_last_error(), WK_ERR_INVALID_ARG);
  /* a non-contiguous float input */
  wk_tensor *xt = wk_transpose(TU_T(WK_F32, (2, 2), 0.1, 0.2, 0.3, 0.4), 0, 1);
  expect_ints(wk_quantize_per_tensor(xt, 0.1, 0, WK_QINT8), (const double[]){1, 3, 2, 4}, 4, "strided");
  wk_scope_end();
}
END_TEST

START_TEST(test_quant_per_channel) {
  wk_scope_begin();
  wk_tensor *x = TU_T(WK_F32, (2, 3), 0.5, -1.0, 2.0, 0.5, -1.0, 2.0);
  wk_tensor *sc = TU_T(WK_F64, (2), 0.5, 0.25), *zp = TU_T(WK_I64, (2), 0, 10);
  /* row 0: /0.5 -> 1, -2, 4; row 1: /0.25 + 10 -> 12, 6, 18 */
  wk_tensor *q = wk_quantize_per_channel(x, sc, zp, 0, WK_QINT8);
  expect_ints(q, (const double[]){1, -2, 4, 12, 6, 18}, 6, "per channel");
  ck_assert_int_eq(wk_tensor_qscheme(q), WK_PER_CHANNEL_AFFINE);
  ck_assert_int_eq(wk_q_per_channel_axis(q), 0);
  wk_tensor *s2 = wk_q_per_channel_scales(q), *z2 = wk_q_per_channel_zero_points(q);
  ck_assert_int_eq(wk_tensor_dtype(s2), WK_F64);
  ck_assert_int_eq(wk_tensor_dtype(z2), WK_I64);
  double sv[2], zv[2];
  TU_OK(wk_tensor_to_f64(s2, sv, 2));
  TU_OK(wk_tensor_to_f64(z2, zv, 2));
  ck_assert_double_eq(sv[1], 0.25);
  ck_assert_double_eq(zv[1], 10);
  double dv[6];
  TU_OK(wk_tensor_to_f64(wk_dequantize(q), dv, 6));
  for (int i = 0; i < 6; i++) ck_assert_double_eq(dv[i], i % 3 == 0 ? 0.5 : i % 3 == 1 ? -1.0 : 2.0);
  /* along axis 1 */
  wk_tensor *q1 = wk_quantize_per_channel(x, TU_T(WK_F32, (3), 0.5, 1.0, 2.0), TU_T(WK_I64, (3), 0, 0, 0), 1, WK_QINT8);
  expect_ints(q1, (const double[]){1, -1, 1, 1, -1, 1}, 6, "axis 1");
  /* a view could not keep a per-channel axis right: refused */
  ck_assert_ptr_null(wk_transpose(q, 0, 1));
  ck_assert_int_eq(wk_last_error(), WK_ERR_UNSUPPORTED);
  wk_clear_error();
  /* per-tensor accessors refuse it */
  ck_assert(isnan(wk_q_scale(q)));
  ck_assert_int_eq(wk_last_error(), WK_ERR_DTYPE);
  ck_assert_ptr_nonnull(strstr(wk_last_error_message(), "per_tensor_affine"));
  wk_scope_end();
}
END_TEST

START_TEST(test_quant_print_like_pytorch) {
  wk_scope_begin();
  wk_tensor *q = wk_quantize_per_tensor(TU_T(WK_F32, (4), -1.0, 0.0, 0.25, 1.27), 0.1, 0, WK_QINT8);
  char *s = wk_tensor_to_string(q);
  TU_NOTNULL(s);
  ck_assert_str_eq(s, "tensor([-1.0000,  0.0000,  0.2000,  1.3000], size=(4,), dtype=torch.qint8,\n"
                      "       quantization_scheme=torch.per_tensor_affine, scale=0.1, zero_point=0)");
  wk_free(s);
  wk_tensor *u = wk_quantize_per_tensor(TU_T(WK_F32, (2), 1.0, 2.0), 1e-05, 3, WK_QUINT8);
  s = wk_tensor_to_string(u);
  /* 1 / 1e-5 -> 100000 + 3 -> 255: both 0.00252 */
  ck_assert_str_eq(s, "tensor([0.0025, 0.0025], size=(2,), dtype=torch.quint8,\n"
                      "       quantization_scheme=torch.per_tensor_affine, scale=1e-05, zero_point=3)");
  wk_free(s);
  wk_tensor *c = wk_quantize_per_channel(TU_T(WK_F32, (2, 1), 1.0, 2.0), TU_T(WK_F64, (2), 0.5, 1.0),
                                         TU_T(WK_I64, (2), 0, 1), 0, WK_QINT8);
  s = wk_tensor_to_string(c);
  ck_assert_str_eq(s, "tensor([[1.],\n        [2.]], size=(2, 1), dtype=torch.qint8,\n"
                      "       quantization_scheme=torch.per_channel_affine,\n"
                      "       scale=tensor([0.5000, 1.0000], dtype=torch.float64),\n"
                      "       zero_point=tensor([0, 1]), axis=0)");
  wk_free(s);
  wk_scope_end();
}
END_TEST

START_TEST(test_quant_views_keep_qparams) {
  wk_scope_begin();
  wk_tensor *q = wk_quantize_per_tensor(TU_T(WK_F32, (2, 3), 1, 2, 3, 4, 5, 6), 0.5, 1, WK_QUINT8);
  wk_tensor *v = wk_flatten(q, 0, -1);
  ck_assert_int_eq(wk_tensor_dtype(v), WK_QUINT8);
  ck_assert_double_eq(wk_q_scale(v), 0.5);
  ck_assert_int_eq(wk_q_zero_point(v), 1);
  wk_tensor *t = wk_transpose(q, 0, 1);
  double dv[6];
  TU_OK(wk_tensor_to_f64(wk_dequantize(t), dv, 6));
  ck_assert_double_eq(dv[1], 4);
  expect_ints(t, (const double[]){3, 9, 5, 11, 7, 13}, 6, "transposed int_repr");
  /* zero-copy constructors */
  wk_tensor *raw = TU_T(WK_U8, (3), 0, 128, 255);
  wk_tensor *m = wk_make_per_tensor_quantized(raw, 0.5, 128);
  ck_assert_int_eq(wk_tensor_dtype(m), WK_QUINT8);
  ck_assert(wk_tensor_same_storage(m, raw));
  TU_OK(wk_tensor_to_f64(m, dv, 3));
  ck_assert_double_eq(dv[0], -64);
  ck_assert_double_eq(dv[2], 63.5);
  wk_scope_end();
}
END_TEST

START_TEST(test_quant_bad_input) {
  wk_scope_begin();
  wk_tensor *x = TU_T(WK_F32, (3), 1, 2, 3);
  ck_assert_ptr_null(wk_quantize_per_tensor(x, 0.0, 0, WK_QINT8));
  ck_assert_int_eq(wk_last_error(), WK_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(wk_last_error_message(), "scale"));
  ck_assert_ptr_null(wk_quantize_per_tensor(x, 0.1, 300, WK_QUINT8));
  ck_assert_ptr_nonnull(strstr(wk_last_error_message(), "zero_point 300 is out of range for quint8"));
  ck_assert_ptr_null(wk_quantize_per_tensor(x, 0.1, 0, WK_F32));
  ck_assert_ptr_nonnull(strstr(wk_last_error_message(), "qint8, quint8 or qint32"));
  ck_assert_ptr_null(wk_quantize_per_tensor(TU_T(WK_I64, (1), 1), 0.1, 0, WK_QINT8));
  ck_assert_int_eq(wk_last_error(), WK_ERR_DTYPE);
  ck_assert_ptr_null(wk_quantize_per_channel(x, TU_T(WK_F32, (2), 1, 1), TU_T(WK_I64, (2), 0, 0), 0, WK_QINT8));
  ck_assert_int_eq(wk_last_error(), WK_ERR_SHAPE);
  ck_assert_ptr_null(wk_quantize_per_channel(x, TU_T(WK_F32, (3), 1, 1, 1), TU_T(WK_I64, (3), 0, 0, 0), 2, WK_QINT8));
  ck_assert_int_eq(wk_last_error(), WK_ERR_INDEX);
  ck_assert_ptr_null(wk_int_repr(x));
  ck_assert_ptr_nonnull(strstr(wk_last_error_message(), "expected a quantized tensor"));
  ck_assert_ptr_null(wk_make_per_tensor_quantized(x, 0.1, 0));
  ck_assert_int_eq(wk_last_error(), WK_ERR_DTYPE);
  wk_clear_error(); /* a NULL argument keeps an earlier error (error scoping) */
  ck_assert_ptr_null(wk_make_per_tensor_quantized(NULL, 0.1, 0));
  ck_assert_int_eq(wk_last_error(), WK_ERR_NULL);
  ck_assert_int_eq(wk_tensor_qscheme(NULL), WK_QSCHEME_NONE);
  ck_assert_int_eq(wk_tensor_qscheme(x), WK_QSCHEME_NONE);
  ck_assert_ptr_null(wk_q_per_channel_scales(x));
  ck_assert_int_eq(wk_q_per_channel_axis(x), -1);
  /* the standard ops refuse quantized operands instead of reading their integers */
  wk_tensor *qq = wk_quantize_per_tensor(TU_T(WK_F32, (2, 2), 1, 2, 3, 4), 0.1, 0, WK_QINT8);
  ck_assert_ptr_null(wk_add(qq, qq));
  ck_assert_int_eq(wk_last_error(), WK_ERR_DTYPE);
  ck_assert_str_eq(wk_last_error_message(), "add(): not implemented for quantized tensors ('QInt8'); dequantize() first");
  ck_assert_ptr_null(wk_to_dtype(qq, WK_F32));
  ck_assert_ptr_null(wk_sum(qq));
  ck_assert_ptr_null(wk_relu(qq));
  /* clone and contiguous keep the q-params */
  wk_tensor *cl = wk_contiguous(wk_transpose(qq, 0, 1));
  TU_NOTNULL(cl);
  ck_assert(wk_tensor_is_contiguous(cl));
  ck_assert_double_eq(wk_q_scale(cl), 0.1);
  expect_ints(cl, (const double[]){10, 30, 20, 40}, 4, "contiguous");
  ck_assert_int_eq(wk_tensor_qscheme(wk_clone(qq)), WK_PER_TENSOR_AFFINE);
  /* int8 ops want quantized operands */
  wk_tensor *q = wk_quantize_per_tensor(TU_T(WK_F32, (1, 3), 1, 2, 3), 0.1, 0, WK_QUINT8);
  ck_assert_ptr_null(wkx_quantized_linear(q, x, NULL, 0.1, 0, false));
  ck_assert_ptr_nonnull(strstr(wk_last_error_message(), "qint8 weight"));
  wk_tensor *w = wk_quantize_per_tensor(TU_T(WK_F32, (2, 2), 1, 2, 3, 4), 0.1, 0, WK_QINT8);
  ck_assert_ptr_null(wkx_quantized_linear(q, w, NULL, 0.1, 0, false));
  ck_assert_int_eq(wk_last_error(), WK_ERR_SHAPE);
  ck_assert_ptr_null(wkx_quantized_linear(wk_dequantize(q), w, NULL, 0.1, 0, false));
  ck_assert_ptr_nonnull(strstr(wk_last_error_message(), "quint8 input"));
  wk_scope_end();
}
END_TEST

/* ---- int8 kernels --------------------------------------------------------------------------- */
START_TEST(test_quant_linear_requantization) {
  wk_scope_begin();
  /* x: quint8 scale 0.5 zp 2: [1, 2] -> [4, 6]; w: qint8 scale 0.25: [[1, -0.5], [0.25, 0.75]]
   * -> [[4, -2], [1, 3]]. acc = [(4-2)*4 + (6-2)*(-2), 2*1 + 4*3] = [0, 14].
   * act_times_w_scale = 0.125, multiplier = 0.125 / 0.1f = 1.25f, bias / 0.125:
   * [2.4000001, -8]. y = 5 + nearbyint([3.0000001, 7.5]) = [8, 13] (7.5 -> 8, ties to even). */
  wk_tensor *x = wk_quantize_per_tensor(TU_T(WK_F32, (1, 2), 1.0, 2.0), 0.5, 2, WK_QUINT8);
  wk_tensor *w = wk_quantize_per_tensor(TU_T(WK_F32, (2, 2), 1.0, -0.5, 0.25, 0.75), 0.25, 0, WK_QINT8);
  wk_tensor *y = wkx_quantized_linear(x, w, TU_T(WK_F32, (2), 0.3, -1.0), 0.1, 5, false);
  expect_ints(y, (const double[]){8, 13}, 2, "linear");
  ck_assert_int_eq(wk_tensor_dtype(y), WK_QUINT8);
  ck_assert_double_eq(wk_q_scale(y), 0.1);
  ck_assert_int_eq(wk_q_zero_point(y), 5);
  /* bias -2: (0 - 16) * 1.25 = -20 -> -15, clamped to zp=5 by the fused ReLU, to 0 without */
  wk_tensor *b2 = TU_T(WK_F32, (2), -2.0, -1.0);
  expect_ints(wkx_quantized_linear(x, w, b2, 0.1, 5, true), (const double[]){5, 13}, 2, "linear relu");
  expect_ints(wkx_quantized_linear(x, w, b2, 0.1, 5, false), (const double[]){0, 13}, 2, "linear no relu");
  /* per-channel weight: channel 1 at scale 0.125 -> [2, 6]: acc1 = 2*2 + 4*6 = 28, atws 0.0625,
   * bias -1 / 0.0625 = -16, (28 - 16) * 0.625 = 7.5 -> 8 -> 13 */
  wk_tensor *wc = wk_quantize_per_channel(TU_T(WK_F32, (2, 2), 1.0, -0.5, 0.25, 0.75), TU_T(WK_F32, (2), 0.25, 0.125),
                                          TU_T(WK_I64, (2), 0, 0), 0, WK_QINT8);
  expect_ints(wkx_quantized_linear(x, wc, TU_T(WK_F32, (2), 0.3, -1.0), 0.1, 5, false), (const double[]){8, 13}, 2,
              "per-channel linear");
  wk_scope_end();
}
END_TEST

/* int8 conv / linear on random data against the float path on the same
 * integers (dequantize, float op, quantize): equal up to one step, where
 * float accumulation lands on the other side of a rounding tie. */
START_TEST(test_quant_conv_matches_float_path) {
  wk_scope_begin();
  wk_tensor *xf = tu_rand(WK_SHAPE(2, 4, 7, 6), WK_F32, -1, 1, 11);
  wk_tensor *wf = tu_rand(WK_SHAPE(6, 2, 3, 3), WK_F32, -0.5, 0.5, 12);
  wk_tensor *bf = tu_rand(WK_SHAPE(6), WK_F32, -0.2, 0.2, 13);
  wk_tensor *x = wk_quantize_per_tensor(xf, 2.0 / 255, 128, WK_QUINT8);
  wk_tensor *w = wk_quantize_per_channel(wf, tu_rand(WK_SHAPE(6), WK_F32, 0.003, 0.005, 14),
                                         TU_T(WK_I64, (6), 0, 0, 0, 0, 0, 0), 0, WK_QINT8);
  int64_t st[2] = {2, 1}, pd[2] = {1, 0}, dl[2] = {1, 2};
  wk_tensor *y = wkx_quantized_conv2d(x, w, bf, st, 2, pd, 2, dl, 2, 2, 0.02, 100, false);
  TU_NOTNULL(y);
  wk_tensor *ref = wkx_conv2d(wk_dequantize(x), wk_dequantize(w), bf, st, 2, pd, 2, dl, 2, 2);
  TU_NOTNULL(ref);
  ck_assert_int_eq(wk_tensor_dim(y), 4);
  for (int d = 0; d < 4; d++) ck_assert_int_eq(wk_tensor_size(y, d), wk_tensor_size(ref, d));
  wk_tensor *rq = wk_int_repr(wk_quantize_per_tensor(ref, 0.02, 100, WK_QUINT8));
  int64_t n = wk_tensor_numel(rq);
  double *a = malloc(sizeof(double) * (size_t)n), *b = malloc(sizeof(double) * (size_t)n);
  TU_OK(wk_tensor_to_f64(wk_int_repr(y), a, n));
  TU_OK(wk_tensor_to_f64(rq, b, n));
  int exact = 0;
  for (int64_t i = 0; i < n; i++) {
    ck_assert_msg(fabs(a[i] - b[i]) <= 1, "element %lld: int8 %g, float path %g", (long long)i, a[i], b[i]);
    exact += a[i] == b[i];
  }
  ck_assert_msg(exact >= n * 95 / 100, "only %d of %lld equal", exact, (long long)n);
  free(a);
  free(b);
  wk_scope_end();
}
END_TEST

START_TEST(test_quant_dynamic_linear) {
  wk_scope_begin();
  /* x = [1, -1]: fbgemm's ChooseQuantizationParams(-1, 1, 0, 255, reduce_range):
   * [0, 127], scale = 2/127, zero point candidates 63.5 (errors -63.5 / 63.5) -> 64.
   * x_q = nearbyint(64 +- 63.5) = [128, 0] -> centered [64, -64]; w = [[1, 2]] at 0.5 ->
   * [2, 4]; acc = 128 - 256 = -128; y = -128 * (scale_x * 0.5). */
  wk_tensor *w = wk_quantize_per_tensor(TU_T(WK_F32, (1, 2), 1.0, 2.0), 0.5, 0, WK_QINT8);
  wk_tensor *y = wkx_quantized_linear_dynamic(TU_T(WK_F32, (1, 2), 1.0, -1.0), w, NULL, true);
  TU_NOTNULL(y);
  double v;
  TU_OK(wk_item(y, &v));
  float sx = (float)(2.0 / 127);
  ck_assert_double_eq_tol(v, -128.0f * (sx * 0.5f), 1e-6);
  wk_scope_end();
}
END_TEST

START_TEST(test_quant_fake_quantize_ste) {
  wk_scope_begin();
  /* scale 0.5, zp 0, range [-4, 3]: 0.3 -> nearbyint(0.6) = 1 -> 0.5; 1.25 -> 2.5 -> 2 -> 1.0;
   * 2.0 -> 4 -> clamped 3 -> 1.5 (masked); -2.1 -> -4.2 -> -4 -> -2.0 (kept, -4 in range) */
  wk_tensor *x = TU_T(WK_F32, (4), 0.3, 1.25, 2.0, -2.1);
  TU_OK(wk_tensor_set_requires_grad(x, true));
  wk_tensor *y = wk_fake_quantize_per_tensor_affine(x, 0.5, 0, -4, 3);
  TU_NOTNULL(y);
  double v[4];
  TU_OK(wk_tensor_to_f64(y, v, 4));
  ck_assert_double_eq(v[0], 0.5);
  ck_assert_double_eq(v[1], 1.0);
  ck_assert_double_eq(v[2], 1.5);
  ck_assert_double_eq(v[3], -2.0);
  TU_OK(wk_backward(wk_sum(y)));
  TU_OK(wk_tensor_to_f64(wk_tensor_grad(x), v, 4));
  ck_assert_double_eq(v[0], 1);
  ck_assert_double_eq(v[1], 1);
  ck_assert_double_eq(v[2], 0);
  ck_assert_double_eq(v[3], 1);
  /* per channel along 0 */
  wk_tensor *x2 = TU_T(WK_F32, (2, 2), 0.3, 10.0, 0.3, 10.0);
  TU_OK(wk_tensor_set_requires_grad(x2, true));
  wk_tensor *y2 = wk_fake_quantize_per_channel_affine(x2, TU_T(WK_F32, (2), 0.5, 0.1), TU_T(WK_I64, (2), 0, 0), 0,
                                                      -128, 127);
  TU_OK(wk_tensor_to_f64(y2, v, 4));
  ck_assert_double_eq_tol(v[0], 0.5, 1e-7);
  ck_assert_double_eq_tol(v[1], 10.0, 1e-6);
  ck_assert_double_eq_tol(v[2], 0.3, 1e-7);
  ck_assert_double_eq_tol(v[3], 10.0, 1e-6);
  TU_OK(wk_backward(wk_sum(y2)));
  TU_OK(wk_tensor_to_f64(wk_tensor_grad(x2), v, 4));
  ck_assert_double_eq(v[1], 1);
  wk_scope_end();
}
END_TEST

/* ---- the quant plugin: observers ---------------------------------------------------------------- */
static bool have_quant(void) {
  if (wk_quant_api_get()) return true;
  wk_clear_error();
  return false;
}

static void observe(wk_module *obs, wk_tensor *x) {
  wk_tensor *y = wk_module_forward(obs, x);
  TU_NOTNULL(y);
  wk_release(y);
}

static void expect_qparams(wk_module *obs, const float *scale, const int64_t *zp, int n, const char *what) {
  wk_tensor *s = NULL, *z = NULL;
  TU_OK(wk_quant_calculate_qparams(obs, &s, &z));
  ck_assert_int_eq(wk_tensor_numel(s), n);
  ck_assert_int_eq(wk_tensor_dtype(s), WK_F32);
  ck_assert_int_eq(wk_tensor_dtype(z), WK_I64);
  double sv[8], zv[8];
  TU_OK(wk_tensor_to_f64(s, sv, n));
  TU_OK(wk_tensor_to_f64(z, zv, n));
  for (int i = 0; i < n; i++) {
    ck_assert_msg(fabs(sv[i] - scale[i]) <= 1e-6 * scale[i], "%s scale[%d]: %.9g, want %.9g", what, i, sv[i], scale[i]);
    ck_assert_msg(zv[i] == (double)zp[i], "%s zero_point[%d]: %g, want %lld", what, i, zv[i], (long long)zp[i]);
  }
  wk_release(s);
  wk_release(z);
}

START_TEST(test_quant_minmax_observers) {
  if (!have_quant()) return;
  wk_scope_begin();
  /* MinMaxObserver(quint8): [-1, 3] -> scale = 4 / 255, zero_point = 0 - round(-1 / scale) = round(63.75) = 64 */
  wk_module *mm = wk_quant_observer(WK_OBSERVER_MINMAX, (wk_observer_opts){0});
  TU_NOTNULL(mm);
  observe(mm, TU_T(WK_F32, (4), -1.0, 0.5, 2.0, 3.0));
  expect_qparams(mm, (const float[]){4.0f / 255.0f}, (const int64_t[]){64}, 1, "minmax");
  /* a second batch widens the range: [-2, 3] -> 5 / 255, round(2 / (5 / 255)) = 102 */
  observe(mm, TU_T(WK_F32, (2), -2.0, 1.0));
  expect_qparams(mm, (const float[]){5.0f / 255.0f}, (const int64_t[]){102}, 1, "minmax 2");
  ck_assert_double_eq(*(float *)wk_tensor_data(wk_module_buffer(mm, "min_val")), -2.0);
  /* reduce_range: quint8 [0, 127]: 4 / 127, round(31.75) = 32 */
  wk_module *rr = wk_quant_observer(WK_OBSERVER_MINMAX, (wk_observer_opts){.reduce_range = true});
  observe(rr, TU_T(WK_F32, (2), -1.0, 3.0));
  expect_qparams(rr, (const float[]){4.0f / 127.0f}, (const int64_t[]){32}, 1, "reduce_range");
  /* per-tensor symmetric quint8: max(|-1|, 3) / 127.5, zero_point 128; qint8: zero_point 0 */
  wk_module *sy = wk_quant_observer(WK_OBSERVER_MINMAX, (wk_observer_opts){.qscheme = WK_PER_TENSOR_SYMMETRIC});
  observe(sy, TU_T(WK_F32, (2), -1.0, 3.0));
  expect_qparams(sy, (const float[]){3.0f / 127.5f}, (const int64_t[]){128}, 1, "symmetric quint8");
  wk_module *s8 = wk_quant_observer(WK_OBSERVER_MINMAX, (wk_observer_opts){.dtype = WK_QINT8, .qscheme = WK_PER_TENSOR_SYMMETRIC});
  observe(s8, TU_T(WK_F32, (2), -1.0, 3.0));
  expect_qparams(s8, (const float[]){3.0f / 127.5f}, (const int64_t[]){0}, 1, "symmetric qint8");
  /* all-positive data: min_neg = 0 -> zero_point 0 */
  wk_module *pos = wk_quant_observer(WK_OBSERVER_MINMAX, (wk_observer_opts){0});
  observe(pos, TU_T(WK_F32, (2), 0.5, 2.55));
  expect_qparams(pos, (const float[]){2.55f / 255.0f}, (const int64_t[]){0}, 1, "positive");
  /* MovingAverageMinMaxObserver(c = 0.01): [-1, 3], then [-2, 1]: min -1 + 0.01 (-2 + 1) = -1.01,
   * max 3 + 0.01 (1 - 3) = 2.98; scale 3.99 / 255, zero_point round(1.01 / scale) = round(64.55) = 65 */
  wk_module *ma = wk_quant_observer(WK_OBSERVER_MOVING_AVERAGE_MINMAX, (wk_observer_opts){0});
  observe(ma, TU_T(WK_F32, (2), -1.0, 3.0));
  observe(ma, TU_T(WK_F32, (2), -2.0, 1.0));
  float mn = -1.0f + 0.01f * (-2.0f + 1.0f), mx = 3.0f + 0.01f * (1.0f - 3.0f);
  expect_qparams(ma, (const float[]){(mx - mn) / 255.0f}, (const int64_t[]){65}, 1, "moving average");
  /* PerChannelMinMaxObserver(qint8, per_channel_symmetric), axis 0:
   * row 0 max |x| 1 -> 1 / 127.5; row 1 -> 2 / 127.5; zero points 0 */
  wk_module *pc = wk_quant_observer(WK_OBSERVER_PER_CHANNEL_MINMAX,
                                    (wk_observer_opts){.dtype = WK_QINT8, .qscheme = WK_PER_CHANNEL_SYMMETRIC});
  observe(pc, TU_T(WK_F32, (2, 2), -1.0, 0.5, 0.25, 2.0));
  expect_qparams(pc, (const float[]){1.0f / 127.5f, 2.0f / 127.5f}, (const int64_t[]){0, 0}, 2, "per channel");
  /* per_channel_affine quint8 along axis 1 */
  wk_module *pa = wk_quant_observer(WK_OBSERVER_PER_CHANNEL_MINMAX, (wk_observer_opts){.ch_axis = 1});
  observe(pa, TU_T(WK_F32, (2, 2), -1.0, 0.5, 3.0, 2.0));
  expect_qparams(pa, (const float[]){4.0f / 255.0f, 2.0f / 255.0f}, (const int64_t[]){64, 0}, 2, "per channel axis 1");
  wk_module *all[] = {mm, rr, sy, s8, pos, ma, pc, pa};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) wk_module_release(all[i]);
  wk_scope_end();
}
END_TEST

/* HistogramObserver on two batches of fixed data (the second widens the range,
 * so the first histogram is re-binned into the new range by PyTorch 2.x's
 * _upscale_histogram: 128 parts per bin at their mid-points), then the L2
 * search. Expected: torch.ao.quantization.HistogramObserver of PyTorch 2.15.0
 * (/work/venv-torch) on the same float32 data: range [-7.8807178, 9.5],
 * qparams (0.13678923, 58) with reduce_range and (0.068126403, 116) without.
 * (PyTorch 1.x merged through _adjust_min_max's upsample/downsample grid and
 * widened the range to 9.5319576: (0.13683990, 58) / (0.068151630, 116),
 * tests/quant_ref/histogram_observer_ref.py.) */
START_TEST(test_quant_histogram_observer) {
  if (!have_quant()) return;
  wk_scope_begin();
  float a[600], b[401];
  for (int i = 0; i < 1000; i++) {
    double u = 2 * (((i * 37) % 1000) + 0.5) / 1000 - 1;
    float v = (float)(8 * u * u * u * u * u);
    if (i < 600)
      a[i] = v * 0.5f;
    else
      b[i - 600] = v;
  }
  b[400] = 9.5f;
  wk_tensor *ta = wk_tensor_from_data(a, WK_F32, WK_SHAPE(600)), *tb = wk_tensor_from_data(b, WK_F32, WK_SHAPE(401));
  for (int rr = 0; rr < 2; rr++) {
    wk_module *h = wk_quant_observer(WK_OBSERVER_HISTOGRAM, (wk_observer_opts){.reduce_range = rr == 0});
    TU_NOTNULL(h);
    observe(h, ta);
    observe(h, tb);
    ck_assert_double_eq_tol(*(float *)wk_tensor_data(wk_module_buffer(h, "min_val")), -7.880717754364014, 1e-6);
    ck_assert_double_eq_tol(*(float *)wk_tensor_data(wk_module_buffer(h, "max_val")), 9.5, 1e-6);
    double total = 0;
    wk_tensor *hist = wk_module_buffer(h, "histogram");
    ck_assert_int_eq(wk_tensor_numel(hist), 2048);
    for (int i = 0; i < 2048; i++) total += ((float *)wk_tensor_data(hist))[i];
    ck_assert_double_eq_tol(total, 1001, 1e-3);
    if (rr == 0)
      expect_qparams(h, (const float[]){0.1367892324924469f}, (const int64_t[]){58}, 1, "histogram reduce_range");
    else
      expect_qparams(h, (const float[]){0.06812640279531479f}, (const int64_t[]){116}, 1, "histogram");
    wk_module_release(h);
  }
  wk_scope_end();
}
END_TEST

START_TEST(test_quant_observer_errors) {
  if (!have_quant()) return;
  wk_scope_begin();
  wk_module *mm = wk_quant_observer(WK_OBSERVER_MINMAX, (wk_observer_opts){0});
  wk_tensor *s = NULL, *z = NULL;
  ck_assert_int_eq(wk_quant_calculate_qparams(mm, &s, &z), WK_ERR_STATE);
  ck_assert_ptr_nonnull(strstr(wk_last_error_message(), "saw any data"));
  ck_assert_ptr_null(s);
  wk_module *pc = wk_quant_observer(WK_OBSERVER_PER_CHANNEL_MINMAX, (wk_observer_opts){.dtype = WK_QINT8});
  ck_assert_int_eq(wk_quant_calculate_qparams(pc, &s, &z), WK_ERR_STATE);
  ck_assert_ptr_null(wk_quant_observer(WK_OBSERVER_MINMAX, (wk_observer_opts){.dtype = WK_F32}));
  ck_assert_int_eq(wk_last_error(), WK_ERR_DTYPE);
  ck_assert_ptr_null(wk_quant_observer((wk_observer_kind)99, (wk_observer_opts){0}));
  ck_assert_ptr_null(wk_quant_observer(WK_OBSERVER_MINMAX, (wk_observer_opts){.qscheme = WK_PER_CHANNEL_AFFINE}));
  ck_assert_ptr_null(wk_quant_observer(WK_OBSERVER_MINMAX, (wk_observer_opts){.quant_min = 1, .quant_max = 300}));
  ck_assert_ptr_nonnull(strstr(wk_last_error_message(), "must include 0"));
  wk_tensor *ints = TU_T(WK_I64, (1), 3);
  wk_clear_error(); /* wk_module_forward does not start a new error scope */
  ck_assert_ptr_null(wk_module_forward(mm, ints));
  ck_assert_msg(wk_last_error() == WK_ERR_DTYPE, "%s", wk_last_error_message());
  wk_clear_error();
  ck_assert_int_eq(wk_quant_calculate_qparams(NULL, &s, &z), WK_ERR_NULL);
  wk_qconfig qc;
  ck_assert_int_eq(wk_quant_default_qconfig("qnnpack-ish", &qc), WK_ERR_INVALID_ARG);
  TU_OK(wk_quant_default_qconfig("x86", &qc));
  ck_assert_int_eq(qc.activation, WK_OBSERVER_HISTOGRAM);
  ck_assert(qc.activation_opts.reduce_range);
  ck_assert_int_eq(qc.weight, WK_OBSERVER_PER_CHANNEL_MINMAX);
  ck_assert_int_eq(qc.weight_opts.qscheme, WK_PER_CHANNEL_SYMMETRIC);
  ck_assert_int_eq(qc.weight_opts.dtype, WK_QINT8);
  wk_module_release(mm);
  wk_module_release(pc);
  wk_scope_end();
}
END_TEST

/* ---- the workflow on a small model ------------------------------------------------------------- */
static wk_module *small_cnn(void) {
  wk_module *mods[] = {wk_quant_stub(),
                       wk_nn_conv2d(1, 4, 3, (wk_conv2d_opts){.padding = 1}),
                       wk_nn_batch_norm2d(4, (wk_norm_opts){0}),
                       wk_nn_relu(),
                       wk_nn_max_pool2d(2, (wk_pool2d_opts){0}),
                       wk_nn_conv2d(4, 8, 3, (wk_conv2d_opts){.padding = 1}),
                       wk_nn_relu(),
                       wk_nn_adaptive_avg_pool2d(2, 2),
                       wk_nn_flatten(1, -1),
                       wk_nn_linear(32, 16, true),
                       wk_nn_relu(),
                       wk_nn_linear(16, 10, true),
                       wk_quant_dequant_stub()};
  return wk_nn_sequential(mods, 13);
}

/* QuantizedReLU and QuantizedMaxPool2d compute on the stored integers:
 * ReLU is max(q, zero_point); both equal the float path (dequantize, the
 * float op, quantize with the input's q-params) integer for integer, also on
 * channels-last and non-dense inputs (int_repr's copy and its strided loop). */
START_TEST(test_quant_relu_maxpool_on_integers) {
  if (!have_quant()) return;
  wk_scope_begin();
  wk_module *mods[4] = {wk_quant_stub(), wk_nn_relu(), wk_nn_max_pool2d(3, (wk_pool2d_opts){.stride = 2, .padding = 1}),
                        wk_quant_dequant_stub()};
  wk_module *m = wk_nn_sequential(mods, 4);
  TU_NOTNULL(m);
  TU_OK(wk_module_train(m, false));
  wk_qconfig qc;
  TU_OK(wk_quant_default_qconfig("x86", &qc));
  TU_OK(wk_quant_prepare(m, &qc));
  wk_release(wk_module_forward(m, tu_rand(WK_SHAPE(2, 3, 9, 8), WK_F32, -1, 1, 40)));
  TU_OK(wk_quant_convert(m));
  wk_module *relu = wk_module_child(m, "1"), *pool = wk_module_child(m, "2");
  ck_assert_str_eq(wk_module_class_name(relu), "QuantizedReLU");
  ck_assert_str_eq(wk_module_class_name(pool), "QuantizedMaxPool2d");
  wk_tensor *q = wk_quantize_per_tensor(tu_rand(WK_SHAPE(2, 3, 9, 8), WK_F32, -1, 1, 41), 0.01, 100, WK_QUINT8);
  wk_tensor *inputs[3] = {q, wk_contiguous_format(q, WK_CHANNELS_LAST), wk_transpose(q, 2, 3)};
  for (int i = 0; i < 3; i++) {
    TU_NOTNULL(inputs[i]);
    wk_tensor *x = inputs[i], *f = wk_dequantize(x);
    wk_tensor *r = wk_module_forward(relu, x), *rf = wk_quantize_per_tensor(wk_relu(f), 0.01, 100, WK_QUINT8);
    wk_tensor *p = wk_module_forward(pool, x);
    wk_tensor *pf = wk_quantize_per_tensor(wk_module_forward(wk_module_child(pool, "0"), f), 0.01, 100, WK_QUINT8);
    TU_NOTNULL(r);
    TU_NOTNULL(p);
    ck_assert_int_eq(wk_tensor_dtype(r), WK_QUINT8);
    ck_assert(wk_q_scale(r) == 0.01 && wk_q_zero_point(r) == 100 && wk_q_zero_point(p) == 100);
    wk_tensor *pairs[2][2] = {{r, rf}, {p, pf}};
    for (int k = 0; k < 2; k++) {
      int64_t n = wk_tensor_numel(pairs[k][0]);
      ck_assert_int_eq(n, wk_tensor_numel(pairs[k][1]));
      double *a = tu_values(wk_int_repr(pairs[k][0])), *b = tu_values(wk_int_repr(pairs[k][1]));
      for (int64_t j = 0; j < n; j++)
        ck_assert_msg(a[j] == b[j], "input %d, %s element %lld: %g, float path %g", i, k ? "max_pool" : "relu",
                      (long long)j, a[j], b[j]);
      free(a);
      free(b);
    }
    /* int_repr keeps a dense input's layout and values */
    double *iv = tu_values(wk_int_repr(x)), *qv = tu_values(wk_to_dtype(wk_dequantize(x), WK_F64));
    for (int64_t j = 0; j < wk_tensor_numel(x); j++) ck_assert(fabs(qv[j] - (iv[j] - 100) * 0.01) < 1e-6);
    free(iv);
    free(qv);
  }
  ck_assert_int_eq(wk_suggest_memory_format(wk_int_repr(inputs[1])), WK_CHANNELS_LAST);
  wk_module_release(m);
  wk_scope_end();
}
END_TEST

START_TEST(test_quant_workflow_small_cnn) {
  if (!have_quant()) return;
  wk_scope_begin();
  wk_manual_seed(3);
  wk_module *m = small_cnn();
  TU_NOTNULL(m);
  /* non-trivial BatchNorm statistics */
  wk_no_grad_begin();
  wk_copy_(wk_module_buffer(m, "2.running_mean"), TU_T(WK_F32, (4), 0.1, -0.2, 0.05, 0.3));
  wk_copy_(wk_module_buffer(m, "2.running_var"), TU_T(WK_F32, (4), 0.5, 1.5, 0.8, 2.0));
  wk_copy_(wk_module_param(m, "2.weight"), TU_T(WK_F32, (4), 1.2, 0.7, 1.0, 0.9));
  wk_no_grad_end();
  wk_tensor *x = tu_rand(WK_SHAPE(8, 1, 12, 12), WK_F32, -1, 1, 5);
  ck_assert_int_eq(wk_quant_fuse(m, (const char *[]){"1", "2", "3"}, 3), WK_ERR_STATE); /* training mode */
  TU_OK(wk_module_train(m, false));
  wk_tensor *ref = wk_module_forward(m, x);
  TU_NOTNULL(ref);
  TU_OK(wk_quant_fuse(m, (const char *[]){"1", "2", "3"}, 3));
  TU_OK(wk_quant_fuse(m, (const char *[]){"5", "6"}, 2));
  TU_OK(wk_quant_fuse(m, (const char *[]){"9", "10"}, 2));
  ck_assert_str_eq(wk_module_class_name(wk_module_child(m, "1")), "ConvReLU2d");
  ck_assert_str_eq(wk_module_class_name(wk_module_child(m, "2")), "Identity");
  /* folding BatchNorm keeps the function */
  wk_tensor *fused = wk_module_forward(m, x);
  TU_NOTNULL(fused);
  double d;
  TU_OK(wk_item(wk_max(wk_abs(wk_sub(fused, ref))), &d));
  ck_assert_msg(d < 1e-5, "fused model differs by %g", d);
  ck_assert_int_eq(wk_quant_fuse(m, (const char *[]){"4", "8"}, 2), WK_ERR_UNSUPPORTED);
  ck_assert_int_eq(wk_quant_convert(m), WK_ERR_INVALID_ARG); /* not prepared */
  wk_qconfig qc;
  TU_OK(wk_quant_default_qconfig("x86", &qc));
  TU_OK(wk_quant_prepare(m, &qc));
  ck_assert_int_eq(wk_quant_prepare(m, &qc), WK_ERR_STATE);
  ck_assert_int_eq(wk_quant_convert(m), WK_ERR_STATE); /* no calibration yet */
  ck_assert_msg(strstr(wk_last_error_message(), "saw no data") != NULL, "%s", wk_last_error_message());
  ck_assert_str_eq(wk_module_class_name(wk_module_child(m, "0")), "QuantStub"); /* nothing swapped */
  for (int b = 0; b < 3; b++) wk_release(wk_module_forward(m, tu_rand(WK_SHAPE(8, 1, 12, 12), WK_F32, -1, 1, 20 + b)));
  wk_release(wk_module_forward(m, x));
  TU_OK(wk_quant_convert(m));
  ck_assert_str_eq(wk_module_class_name(wk_module_child(m, "0")), "Quantize");
  ck_assert_str_eq(wk_module_class_name(wk_module_child(m, "1")), "QuantizedConvReLU2d");
  ck_assert_str_eq(wk_module_class_name(wk_module_child(m, "4")), "QuantizedMaxPool2d");
  ck_assert_str_eq(wk_module_class_name(wk_module_child(m, "7")), "QuantizedAdaptiveAvgPool2d");
  ck_assert_str_eq(wk_module_class_name(wk_module_child(m, "9")), "QuantizedLinearReLU");
  ck_assert_str_eq(wk_module_class_name(wk_module_child(m, "11")), "QuantizedLinear");
  ck_assert_str_eq(wk_module_class_name(wk_module_child(m, "12")), "DeQuantize");
  wk_tensor *w1 = wk_module_buffer(m, "1.weight");
  ck_assert_int_eq(wk_tensor_dtype(w1), WK_QINT8);
  ck_assert_int_eq(wk_tensor_qscheme(w1), WK_PER_CHANNEL_AFFINE);
  wk_tensor *y = wk_module_forward(m, x);
  TU_NOTNULL(y);
  ck_assert_int_eq(wk_tensor_dtype(y), WK_F32);
  /* int8 logits close to float ones: within a few output steps */
  double err, scale = wk_q_scale(wk_quantize_per_tensor(ref, 0.05, 0, WK_QINT8));
  TU_OK(wk_item(wk_max(wk_abs(wk_sub(y, ref))), &err));
  double span;
  TU_OK(wk_item(wk_sub(wk_max(ref), wk_min(ref)), &span));
  ck_assert_msg(err < 0.1 * span + 4 * scale, "int8 logits differ by %g (float span %g)", err, span);
  char *txt = wk_module_to_string(m);
  TU_NOTNULL(txt);
  ck_assert_ptr_nonnull(strstr(txt, "QuantizedConvReLU2d(1, 4, kernel_size=(3, 3), stride=(1, 1), scale="));
  wk_free(txt);
  /* quantized state dict: int8 weights and q-params as named tensors */
  wk_state_dict *sd = wk_module_state_dict(m);
  TU_NOTNULL(sd);
  ck_assert_int_eq(wk_tensor_dtype(wk_state_dict_get(sd, "9.weight")), WK_QINT8);
  ck_assert_ptr_nonnull(wk_state_dict_get(sd, "9.scale"));
  ck_assert_ptr_nonnull(wk_state_dict_get(sd, "0.zero_point"));
  wk_state_dict_free(sd);
  wk_module_release(m);
  wk_scope_end();
}
END_TEST


/* ResNet-18 (CIFAR stem) between Quant/DeQuant stubs: one wk_quant_fuse
 * name folds the stem and every BasicBlock (QuantizableBasicBlock with a
 * FloatFunctional add_relu), prepare/calibrate/convert, int8 logits near
 * the float ones. Then the converted model's state dict loads into a second
 * converted model calibrated on other data (copy_ of quantized tensors
 * takes the source's q-params, as PyTorch's does): the same outputs. */
static wk_module *resnet_q(uint64_t seed) {
  wk_manual_seed(seed);
  wk_module *mods[] = {wk_quant_stub(), wk_nn_resnet(18, (wk_resnet_opts){.num_classes = 10, .cifar_stem = true}),
                       wk_quant_dequant_stub()};
  wk_module *m = wk_nn_sequential(mods, 3);
  TU_NOTNULL(m);
  TU_OK(wk_module_train(m, false));
  return m;
}

static void resnet_convert(wk_module *m, uint64_t data_seed) {
  TU_OK(wk_quant_fuse(m, (const char *[]){"1"}, 1));
  wk_qconfig qc;
  TU_OK(wk_quant_default_qconfig("x86", &qc));
  TU_OK(wk_quant_prepare(m, &qc));
  for (int b = 0; b < 2; b++) {
    wk_scope_begin();
    TU_NOTNULL(wk_module_forward(m, tu_rand(WK_SHAPE(2, 3, 32, 32), WK_F32, -1, 1, data_seed + (uint64_t)b)));
    wk_scope_end();
  }
  TU_OK(wk_quant_convert(m));
}

START_TEST(test_quant_resnet18) {
  if (!have_quant()) return;
  wk_scope_begin();
  wk_module *m = resnet_q(7);
  wk_tensor *x = tu_rand(WK_SHAPE(2, 3, 32, 32), WK_F32, -1, 1, 40);
  wk_tensor *ref = wk_module_forward(m, x);
  TU_NOTNULL(ref);
  /* bad names */
  ck_assert_int_eq(wk_quant_fuse(m, (const char *[]){"1.fc"}, 1), WK_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(wk_last_error_message(), "must be a BasicBlock or a ResNet"));
  ck_assert_int_eq(wk_quant_fuse(m, (const char *[]){"1.layer9"}, 1), wk_last_error());
  wk_clear_error();
  /* one block alone, then the whole network (the fused block is kept) */
  TU_OK(wk_quant_fuse(m, (const char *[]){"1.layer2.0"}, 1));
  ck_assert_str_eq(wk_module_class_name(wk_module_child(m, "1.layer2.0")), "QuantizableBasicBlock");
  ck_assert_str_eq(wk_module_class_name(wk_module_child(m, "1.layer2.0.downsample")), "Conv2d");
  wk_tensor *f1 = wk_module_forward(m, x);
  double d;
  TU_OK(wk_item(wk_max(wk_abs(wk_sub(f1, ref))), &d));
  ck_assert_msg(d < 1e-4, "fused block changes the output by %g", d);
  resnet_convert(m, 50);
  ck_assert_str_eq(wk_module_class_name(wk_module_child(m, "1.conv1")), "QuantizedConvReLU2d");
  ck_assert_str_eq(wk_module_class_name(wk_module_child(m, "1.layer1.1.conv1")), "QuantizedConvReLU2d");
  ck_assert_str_eq(wk_module_class_name(wk_module_child(m, "1.layer1.1.conv2")), "QuantizedConv2d");
  ck_assert_str_eq(wk_module_class_name(wk_module_child(m, "1.layer3.0.downsample")), "QuantizedConv2d");
  ck_assert_str_eq(wk_module_class_name(wk_module_child(m, "1.layer4.1.add_relu")), "QFunctional");
  ck_assert_str_eq(wk_module_class_name(wk_module_child(m, "1.fc")), "QuantizedLinear");
  wk_tensor *y = wk_module_forward(m, x);
  TU_NOTNULL(y);
  double err, span;
  TU_OK(wk_item(wk_max(wk_abs(wk_sub(y, ref))), &err));
  TU_OK(wk_item(wk_sub(wk_max(ref), wk_min(ref)), &span));
  ck_assert_msg(err < 0.15 * span, "int8 ResNet-18 logits differ by %g (float span %g)", err, span);
  /* the state dict into a second converted model (other weights, other calibration) */
  wk_module *m2 = resnet_q(8);
  resnet_convert(m2, 90);
  wk_tensor *y2 = wk_module_forward(m2, x);
  TU_OK(wk_item(wk_max(wk_abs(wk_sub(y2, y))), &d));
  ck_assert_msg(d > 0, "two different models agree");
  wk_state_dict *sd = wk_module_state_dict(m);
  TU_NOTNULL(sd);
  ck_assert_ptr_nonnull(wk_state_dict_get(sd, "1.layer1.0.add_relu.scale"));
  TU_OK(wk_module_load_state_dict(m2, sd, true, NULL));
  wk_state_dict_free(sd);
  wk_tensor *y3 = wk_module_forward(m2, x);
  TU_NOTNULL(y3);
  TU_OK(wk_item(wk_max(wk_abs(wk_sub(y3, y))), &d));
  ck_assert_msg(d == 0, "after loading the state dict the outputs differ by %g", d);
  wk_tensor *w = wk_module_buffer(m2, "1.layer1.0.conv1.weight");
  TU_NOTNULL(w);
  TU_OK(wk_item(wk_max(wk_abs(wk_sub(wk_q_per_channel_scales(w),
                                         wk_q_per_channel_scales(wk_module_buffer(m, "1.layer1.0.conv1.weight"))))),
                &d));
  ck_assert_msg(d == 0, "loaded weight scales differ by %g", d);
  /* a quantized copy across schemes is refused */
  wk_tensor *pt = wk_quantize_per_tensor(wk_dequantize(w), 0.01, 0, WK_QINT8);
  ck_assert_ptr_null(wk_copy_(w, pt));
  TU_FAILS_WITH(WK_ERR_DTYPE, "same qscheme");
  wk_module_release(m2);
  wk_module_release(m);
  wk_scope_end();
}
END_TEST

START_TEST(test_quant_dynamic_model) {
  if (!have_quant()) return;
  wk_scope_begin();
  wk_manual_seed(4);
  wk_module *mods[] = {wk_nn_linear(20, 30, true), wk_nn_relu(), wk_nn_linear(30, 5, true)};
  wk_module *m = wk_nn_sequential(mods, 3);
  wk_tensor *x = tu_rand(WK_SHAPE(6, 20), WK_F32, -1, 1, 9);
  wk_tensor *ref = wk_module_forward(m, x);
  TU_OK(wk_quant_quantize_dynamic(m));
  ck_assert_str_eq(wk_module_class_name(wk_module_child(m, "0")), "DynamicQuantizedLinear");
  ck_assert_int_eq(wk_tensor_qscheme(wk_module_buffer(m, "0.weight")), WK_PER_TENSOR_AFFINE);
  wk_tensor *y = wk_module_forward(m, x);
  TU_NOTNULL(y);
  double err;
  TU_OK(wk_item(wk_max(wk_abs(wk_sub(y, ref))), &err));
  ck_assert_msg(err < 0.05, "dynamic int8 differs by %g", err);
  ck_assert_int_eq(wk_quant_quantize_dynamic(m), WK_ERR_INVALID_ARG); /* no Linear left */
  wk_module_release(m);
  wk_scope_end();
}
END_TEST

/* Quantized state dicts through safetensors: int8 data and q-params as named tensors. */
START_TEST(test_quant_state_dict_safetensors) {
  if (!have_quant()) return;
  wk_scope_begin();
  wk_tensor *wf = tu_rand(WK_SHAPE(256, 512), WK_F32, -1, 1, 31);
  wk_tensor *w = wk_quantize_per_channel(wf, tu_rand(WK_SHAPE(256), WK_F32, 0.004, 0.008, 32),
                                         wk_zeros(WK_SHAPE(256), (wk_options){.dtype = WK_I64}), 0, WK_QINT8);
  wk_tensor *a = wk_quantize_per_tensor(tu_rand(WK_SHAPE(4, 8), WK_F32, 0, 2, 33), 0.01, 3, WK_QUINT8);
  wk_tensor *bias = tu_rand(WK_SHAPE(256), WK_F32, -1, 1, 34);
  wk_state_dict *sd = wk_state_dict_new(), *fsd = wk_state_dict_new();
  TU_OK(wk_state_dict_set(sd, "fc.weight", w));
  TU_OK(wk_state_dict_set(sd, "fc.bias", bias));
  TU_OK(wk_state_dict_set(sd, "act", a));
  TU_OK(wk_state_dict_set(fsd, "fc.weight", wf));
  TU_OK(wk_state_dict_set(fsd, "fc.bias", bias));
  wk_state_dict *packed = wk_quant_state_dict_pack(sd);
  TU_NOTNULL(packed);
  ck_assert_int_eq(wk_tensor_dtype(wk_state_dict_get(packed, "fc.weight")), WK_I8);
  ck_assert_int_eq(wk_tensor_dtype(wk_state_dict_get(packed, "act")), WK_U8);
  ck_assert_int_eq(wk_tensor_numel(wk_state_dict_get(packed, "fc.weight.q_scale")), 256);
  ck_assert_str_eq(wk_state_dict_get_meta(packed, "wick.quant:act"), "quint8,per_tensor_affine");
  char qpath[] = "/tmp/check_quant_q_XXXXXX", fpath[] = "/tmp/check_quant_f_XXXXXX";
  int fd1 = mkstemp(qpath), fd2 = mkstemp(fpath);
  ck_assert(fd1 >= 0 && fd2 >= 0);
  close(fd1);
  close(fd2);
  TU_OK(wk_save_safetensors(packed, qpath));
  TU_OK(wk_save_safetensors(fsd, fpath));
  struct stat q_st, f_st;
  ck_assert(stat(qpath, &q_st) == 0 && stat(fpath, &f_st) == 0);
  double ratio = (double)f_st.st_size / (double)q_st.st_size;
  fprintf(stderr, "check_quant: safetensors float %lld bytes, int8 %lld bytes (%.2fx smaller)\n", (long long)f_st.st_size,
          (long long)q_st.st_size, ratio);
  ck_assert_msg(ratio > 3.8, "only %.2fx smaller", ratio);
  wk_state_dict *loaded = NULL;
  TU_OK(wk_load_safetensors(qpath, &loaded, NULL));
  wk_state_dict *back = wk_quant_state_dict_unpack(loaded);
  TU_NOTNULL(back);
  ck_assert_int_eq(wk_state_dict_size(back), 3);
  wk_tensor *w2 = wk_state_dict_get(back, "fc.weight"), *a2 = wk_state_dict_get(back, "act");
  ck_assert_int_eq(wk_tensor_dtype(w2), WK_QINT8);
  ck_assert_int_eq(wk_tensor_qscheme(w2), WK_PER_CHANNEL_AFFINE);
  ck_assert_int_eq(wk_q_per_channel_axis(w2), 0);
  double eq;
  TU_OK(wk_item(wk_all(wk_eq(wk_to_dtype(wk_int_repr(w2), WK_I64), wk_to_dtype(wk_int_repr(w), WK_I64))), &eq));
  ck_assert_double_eq(eq, 1);
  TU_OK(wk_item(wk_all(wk_eq(wk_q_per_channel_scales(w2), wk_q_per_channel_scales(w))), &eq));
  ck_assert_double_eq(eq, 1);
  ck_assert_double_eq(wk_q_scale(a2), 0.01);
  ck_assert_int_eq(wk_q_zero_point(a2), 3);
  /* a missing part is named */
  TU_OK(wk_state_dict_remove(loaded, "act.q_zero_point"));
  ck_assert_ptr_null(wk_quant_state_dict_unpack(loaded));
  ck_assert_ptr_nonnull(strstr(wk_last_error_message(), "act.q_zero_point"));
  wk_clear_error(); /* else the NULL revives the error before it, as error.h says */
  ck_assert_ptr_null(wk_quant_state_dict_pack(NULL));
  ck_assert_int_eq(wk_last_error(), WK_ERR_NULL);
  unlink(qpath);
  unlink(fpath);
  wk_state_dict_free(back);
  wk_state_dict_free(loaded);
  wk_state_dict_free(packed);
  wk_state_dict_free(sd);
  wk_state_dict_free(fsd);
  wk_scope_end();
}
END_TEST

/* ---- post-training quantization of a CNN on Fashion-MNIST ---------------------------------------- */
#define FMNIST_DIR "/usr/share/datasets/fashion-mnist"

/* n samples of an IDX pair as normalised float images [n, 1, 28, 28] and labels. */
static bool load_fmnist(const char *images, const char *labels, int64_t n, wk_tensor **x, int64_t **y) {
  char a[256], b[256];
  snprintf(a, sizeof a, "%s/%s", FMNIST_DIR, images);
  snprintf(b, sizeof b, "%s/%s", FMNIST_DIR, labels);
  wk_dataset *ds = wk_dataset_mnist(a, b);
  if (!ds) return false;
  float *px = malloc(sizeof(float) * (size_t)n * 784);
  *y = malloc(sizeof(int64_t) * (size_t)n);
  double buf[784];
  bool ok = px && *y;
  for (int64_t i = 0; ok && i < n; i++) {
    wk_sample smp = {0};
    ok = wk_dataset_get(ds, i, NULL, &smp) == WK_OK && wk_tensor_to_f64(smp.t[0], buf, 784) == WK_OK &&
         wk_item_i64(smp.t[1], &(*y)[i]) == WK_OK;
    for (int k = 0; ok && k < 784; k++) px[i * 784 + k] = (float)((buf[k] / 255.0 - 0.2860) / 0.3530);
    wk_sample_clear(&smp);
  }
  wk_dataset_free(ds);
  *x = ok ? wk_tensor_from_data(px, WK_F32, WK_SHAPE(n, 1, 28, 28)) : NULL;
  free(px);
  return *x != NULL;
}

static double accuracy(wk_module *m, wk_tensor *x, const int64_t *y, int64_t n) {
  int64_t correct = 0;
  for (int64_t b = 0; b < n; b += 250) {
    wk_scope_begin();
    int64_t len = n - b < 250 ? n - b : 250;
    wk_tensor *pred = wk_argmax_dim(wk_module_forward(m, wk_narrow(x, 0, b, len)), 1, false);
    ck_assert_msg(pred != NULL, "%s", wk_last_error_message());
    for (int64_t i = 0; i < len; i++) {
      int64_t p;
      TU_OK(wk_item_i64(wk_select(pred, 0, i), &p));
      correct += p == y[b + i];
    }
    wk_scope_end();
  }
  return 100.0 * (double)correct / (double)n;
}

START_TEST(test_quant_ptq_fashion_mnist) {
  if (!have_quant()) return;
  wk_tensor *xtr, *xte;
  int64_t *ytr, *yte;
  const int64_t ntr = 6000, nte = 2000;
  if (!load_fmnist("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", ntr, &xtr, &ytr)) {
    fprintf(stderr, "check_quant: Fashion-MNIST not found in %s (%s): PTQ test skipped\n", FMNIST_DIR,
            wk_last_error_message());
    return;
  }
  TU_OK(load_fmnist("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", nte, &xte, &yte) ? WK_OK : wk_last_error());
  wk_manual_seed(7);
  wk_module *mods[] = {wk_quant_stub(),
                       wk_nn_conv2d(1, 8, 3, (wk_conv2d_opts){.padding = 1}),
                       wk_nn_batch_norm2d(8, (wk_norm_opts){0}),
                       wk_nn_relu(),
                       wk_nn_max_pool2d(2, (wk_pool2d_opts){0}),
                       wk_nn_conv2d(8, 16, 3, (wk_conv2d_opts){.padding = 1}),
                       wk_nn_batch_norm2d(16, (wk_norm_opts){0}),
                       wk_nn_relu(),
                       wk_nn_max_pool2d(2, (wk_pool2d_opts){0}),
                       wk_nn_flatten(1, -1),
                       wk_nn_linear(784, 64, true),
                       wk_nn_relu(),
                       wk_nn_linear(64, 10, true),
                       wk_quant_dequant_stub()};
  wk_module *m = wk_nn_sequential(mods, 14);
  TU_NOTNULL(m);
  wk_tensor *params[64];
  int np = wk_module_named_parameters(m, NULL, params, 64);
  wk_optimizer *opt = wk_optim_sgd(params, np, (wk_sgd_opts){.lr = 0.05, .momentum = 0.9});
  TU_NOTNULL(opt);
  wk_tensor *ytr_t = wk_tensor_from_data(ytr, WK_I64, WK_SHAPE(ntr));
  for (int epoch = 0; epoch < 2; epoch++)
    for (int64_t b = 0; b < ntr; b += 50) {
      wk_scope_begin();
      wk_tensor *loss = wk_cross_entropy(wk_module_forward(m, wk_narrow(xtr, 0, b, 50)), wk_narrow(ytr_t, 0, b, 50));
      TU_NOTNULL(loss);
      TU_OK(wk_optim_zero_grad(opt, true));
      TU_OK(wk_backward(loss));
      TU_OK(wk_optim_step(opt));
      wk_scope_end();
    }
  wk_optimizer_free(opt);
  TU_OK(wk_module_train(m, false));
  double f32_acc = accuracy(m, xte, yte, nte);
  /* eager-mode PTQ as in PyTorch's tutorial: fuse, x86 qconfig, calibrate on 10 training batches, convert */
  TU_OK(wk_quant_fuse(m, (const char *[]){"1", "2", "3"}, 3));
  TU_OK(wk_quant_fuse(m, (const char *[]){"5", "6", "7"}, 3));
  TU_OK(wk_quant_fuse(m, (const char *[]){"10", "11"}, 2));
  wk_qconfig qc;
  TU_OK(wk_quant_default_qconfig("x86", &qc));
  TU_OK(wk_quant_prepare(m, &qc));
  for (int64_t b = 0; b < 10 * 50; b += 50) {
    wk_scope_begin();
    TU_NOTNULL(wk_module_forward(m, wk_narrow(xtr, 0, b, 50)));
    wk_scope_end();
  }
  TU_OK(wk_quant_convert(m));
  double int8_acc = accuracy(m, xte, yte, nte);
  fprintf(stderr, "check_quant: Fashion-MNIST CNN (6000 images, 2 epochs) test accuracy on %lld images: f32 %.2f%%, "
                  "int8 PTQ %.2f%%\n", (long long)nte, f32_acc, int8_acc);
  ck_assert_msg(f32_acc > 75, "float model only reached %.2f%%", f32_acc);
  ck_assert_msg(fabs(f32_acc - int8_acc) <= 1.0, "int8 %.2f%% vs f32 %.2f%%", int8_acc, f32_acc);
  wk_release(ytr_t);
  wk_release(xtr);
  wk_release(xte);
  free(ytr);
  free(yte);
  wk_module_release(m);
}
END_TEST

/* Quantization-aware training on the same data: a float model trained one
 * epoch, BN folded (eval-mode fuse), prepare_qat with the x86 QAT qconfig,
 * one epoch of fine-tuning through FakeQuantize (observers frozen for the
 * last third), convert: the int8 model keeps the fake-quantized accuracy. */
START_TEST(test_quant_qat_fashion_mnist) {
  if (!have_quant()) return;
  wk_tensor *xtr, *xte;
  int64_t *ytr, *yte;
  const int64_t ntr = 6000, nte = 2000;
  if (!load_fmnist("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", ntr, &xtr, &ytr)) {
    fprintf(stderr, "check_quant: Fashion-MNIST not found in %s: QAT test skipped\n", FMNIST_DIR);
    return;
  }
  TU_OK(load_fmnist("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", nte, &xte, &yte) ? WK_OK : wk_last_error());
  wk_manual_seed(8);
  wk_module *mods[] = {wk_quant_stub(),
                       wk_nn_conv2d(1, 8, 3, (wk_conv2d_opts){.padding = 1}),
                       wk_nn_batch_norm2d(8, (wk_norm_opts){0}),
                       wk_nn_relu(),
                       wk_nn_max_pool2d(2, (wk_pool2d_opts){0}),
                       wk_nn_conv2d(8, 16, 3, (wk_conv2d_opts){.padding = 1}),
                       wk_nn_relu(),
                       wk_nn_max_pool2d(2, (wk_pool2d_opts){0}),
                       wk_nn_flatten(1, -1),
                       wk_nn_linear(784, 10, true),
                       wk_quant_dequant_stub()};
  wk_module *m = wk_nn_sequential(mods, 11);
  TU_NOTNULL(m);
  wk_tensor *ytr_t = wk_tensor_from_data(ytr, WK_I64, WK_SHAPE(ntr));
  for (int phase = 0; phase < 2; phase++) {
    wk_tensor *params[64];
    int np = wk_module_named_parameters(m, NULL, params, 64);
    wk_optimizer *opt = wk_optim_sgd(params, np, (wk_sgd_opts){.lr = phase ? 0.01 : 0.05, .momentum = 0.9});
    TU_NOTNULL(opt);
    for (int64_t b = 0; b < ntr; b += 50) {
      if (phase == 1 && b == ntr * 2 / 3) TU_OK(wk_quant_set_qat(m, false, -1)); /* freeze the q-params */
      wk_scope_begin();
      wk_tensor *loss = wk_cross_entropy(wk_module_forward(m, wk_narrow(xtr, 0, b, 50)), wk_narrow(ytr_t, 0, b, 50));
      ck_assert_msg(loss != NULL, "%s", wk_last_error_message());
      TU_OK(wk_optim_zero_grad(opt, true));
      TU_OK(wk_backward(loss));
      TU_OK(wk_optim_step(opt));
      wk_scope_end();
    }
    wk_optimizer_free(opt);
    if (phase == 0) {
      TU_OK(wk_module_train(m, false));
      TU_OK(wk_quant_fuse(m, (const char *[]){"1", "2", "3"}, 3));
      TU_OK(wk_quant_fuse(m, (const char *[]){"5", "6"}, 2));
      TU_OK(wk_module_train(m, true));
      wk_qconfig qc;
      TU_OK(wk_quant_default_qat_qconfig("x86", &qc));
      ck_assert_int_eq(qc.weight, WK_OBSERVER_MOVING_AVERAGE_PER_CHANNEL_MINMAX);
      TU_OK(wk_quant_prepare_qat(m, &qc));
      ck_assert_str_eq(wk_module_class_name(wk_module_child(m, "1")), "QATConvReLU2d");
      ck_assert_str_eq(wk_module_class_name(wk_module_child(m, "9")), "QATLinear");
    }
  }
  TU_OK(wk_module_train(m, false));
  double fq_acc = accuracy(m, xte, yte, nte);
  TU_OK(wk_quant_convert(m));
  ck_assert_str_eq(wk_module_class_name(wk_module_child(m, "1")), "QuantizedConvReLU2d");
  ck_assert_str_eq(wk_module_class_name(wk_module_child(m, "0")), "Quantize");
  double int8_acc = accuracy(m, xte, yte, nte);
  fprintf(stderr, "check_quant: QAT Fashion-MNIST CNN: fake-quantized %.2f%%, int8 %.2f%% on %lld test images\n", fq_acc,
          int8_acc, (long long)nte);
  ck_assert_msg(fq_acc > 75, "QAT model only reached %.2f%%", fq_acc);
  ck_assert_msg(fabs(fq_acc - int8_acc) <= 1.0, "int8 %.2f%% vs fake-quantized %.2f%%", int8_acc, fq_acc);
  wk_release(ytr_t);
  wk_release(xtr);
  wk_release(xte);
  free(ytr);
  free(yte);
  wk_module_release(m);
}
END_TEST

/* @@SUITE@@ */
static Suite *make_suite(void) {
  Suite *s = suite_create("quant");
  TCase *tc = tcase_create("qtensor");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_test(tc, test_quant_per_tensor_rounding);
  tcase_add_test(tc, test_quant_per_channel);
  tcase_add_test(tc, test_quant_print_like_pytorch);
  tcase_add_test(tc, test_quant_views_keep_qparams);
  tcase_add_test(tc, test_quant_bad_input);
  tcase_add_test(tc, test_quant_linear_requantization);
  tcase_add_test(tc, test_quant_conv_matches_float_path);
  tcase_add_test(tc, test_quant_dynamic_linear);
  tcase_add_test(tc, test_quant_fake_quantize_ste);
  suite_add_tcase(s, tc);
  TCase *tp = tcase_create("plugin");
  tcase_add_checked_fixture(tp, tu_setup, NULL);
  tcase_set_timeout(tp, 600);
  tcase_add_test(tp, test_quant_minmax_observers);
  tcase_add_test(tp, test_quant_histogram_observer);
  tcase_add_test(tp, test_quant_observer_errors);
  tcase_add_test(tp, test_quant_workflow_small_cnn);
  tcase_add_test(tp, test_quant_relu_maxpool_on_integers);
  tcase_add_test(tp, test_quant_resnet18);
  tcase_add_test(tp, test_quant_dynamic_model);
  tcase_add_test(tp, test_quant_state_dict_safetensors);
  suite_add_tcase(s, tp);
  TCase *tf = tcase_create("fmnist"); /* trains small CNNs: seconds natively, long under valgrind */
  tcase_add_checked_fixture(tf, tu_setup, NULL);
  tcase_set_timeout(tf, 900);
  tcase_add_test(tf, test_quant_ptq_fashion_mnist);
  tcase_add_test(tf, test_quant_qat_fashion_mnist);
  suite_add_tcase(s, tf);
  return s;
}
TU_MAIN(make_suite)
