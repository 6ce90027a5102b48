/* The onednn plugin's int8 kernels (plugins/onednn/qconv.c: quantized_conv2d
 * and quantized_linear on oneDNN's u8 x s8 -> s32 primitives) against the cpu
 * plugin's reference kernels: both are called directly (wk_op_call_kernel)
 * on the same quantized tensors, and the results must be the same integers
 * (exact: oneDNN computes only the integer accumulator, the requantisation
 * is the reference's float arithmetic). Also: the dispatcher picks onednn
 * where it applies and falls back to the cpu kernel where it declines
 * (weights with non-zero zero points), and a weight changed in place (a new
 * version) is not served from the reordered-weight cache.
 * Skips (77) when the onednn plugin is not loaded. */
#include <unistd.h>

#include "testutil.h"

static int kernel_index(const char *opname, const char *plugin) {
  wk_op *op = wk_op_find(opname);
  if (!op) return -1;
  for (int i = 0; i < wk_op_num_kernels(op); i++) {
    int32_t dev, prio;
    const char *name, *owner;
    if (wk_op_kernel_info(op, i, &dev, &prio, &name, &owner) == WK_OK && dev == WK_DEVICE_CPU && owner &&
        strcmp(owner, plugin) == 0)
      return i;
  }
  return -1;
}

static wk_tensor *call_with(const char *opname, const char *plugin, const wk_value *args, int n) {
  int k = kernel_index(opname, plugin);
  ck_assert_msg(k >= 0, "%s has no %s kernel", opname, plugin);
  wk_value o[WK_MAX_OUTS];
  if (wk_op_call_kernel(wk_op_find(opname), k, args, n, o) != WK_OK) return NULL;
  return o[0].u.t; /* owned by the caller's scope, as any op's result */
}

/* Asserts a and b are quint8 tensors of one shape with the same q-params and
 * integers; returns how many elements sit at 0 or 255 (saturated). */
static int64_t assert_same_q(wk_tensor *a, wk_tensor *b, const char *what) {
  ck_assert_msg(a && b, "%s: missing result (%s)", what, wk_last_error_message());
  ck_assert_int_eq(wk_tensor_dtype(a), WK_QUINT8);
  ck_assert_int_eq(wk_tensor_dtype(b), WK_QUINT8);
  ck_assert_int_eq(wk_tensor_dim(a), wk_tensor_dim(b));
  for (int d = 0; d < wk_tensor_dim(a); d++) ck_assert_int_eq(wk_tensor_size(a, d), wk_tensor_size(b, d));
  ck_assert(wk_q_scale(a) == wk_q_scale(b));
  ck_assert_int_eq(wk_q_zero_point(a), wk_q_zero_point(b));
  int64_t n = wk_tensor_numel(a), sat = 0;
  double *va = tu_values(wk_int_repr(a)), *vb = tu_values(wk_int_repr(b));
  for (int64_t i = 0; i < n; i++) {
    ck_assert_msg(va[i] == vb[i], "%s: element %lld of %lld is %g with onednn, %g with cpu", what, (long long)i,
                  (long long)n, va[i], vb[i]);
    sat += va[i] == 0 || va[i] == 255;
  }
  free(va);
  free(vb);
  return sat;
}

static bool onednn_int8(void) {
  wk_init();
  return kernel_index("quantized_conv2d", "onednn") >= 0;
}

typedef struct {
  int64_t n, c, h, w, o, k, stride, pad, dil, groups;
  bool bias, per_channel, relu;
  int64_t xzp;
} qconv_case;

static const qconv_case cases[] = {
    {2, 3, 8, 8, 4, 3, 1, 1, 1, 1, true, true, false, 128},     {4, 16, 12, 10, 32, 3, 1, 1, 1, 1, false, true, true, 0},
    {2, 8, 9, 9, 8, 3, 2, 1, 1, 1, true, false, false, 57},     {1, 6, 11, 7, 4, 5, 1, 2, 2, 1, true, true, true, 3},
    {2, 8, 10, 10, 8, 3, 1, 1, 1, 8, true, true, false, 128},   {3, 6, 7, 9, 9, 3, 2, 0, 1, 3, false, false, true, 200},
    {2, 64, 8, 8, 64, 1, 1, 0, 1, 1, true, true, false, 64},    {2, 1, 28, 28, 32, 3, 1, 1, 1, 1, true, true, true, 0},
    {2, 32, 14, 14, 64, 3, 2, 1, 1, 1, true, true, false, 100}, {1, 2, 10, 10, 2, 2, 3, 0, 1, 1, true, false, false, 9},
    {4, 64, 16, 16, 64, 3, 1, 1, 1, 1, true, true, true, 77}, /* a ResNet-18 (CIFAR) layer-1 conv */
};

/* Quantized input / weight / float bias for a case; input through quantize
 * with the case's zero point, weight symmetric (zero points 0). */
static void make_conv(const qconv_case *c, int idx, wk_tensor **x, wk_tensor **w, wk_tensor **b) {
  wk_tensor *xf = tu_rand(WK_SHAPE(c->n, c->c, c->h, c->w), WK_F32, -1, 1, 100 + idx);
  wk_tensor *wf = tu_rand(WK_SHAPE(c->o, c->c / c->groups, c->k, c->k), WK_F32, -0.5, 0.5, 200 + idx);
  *x = wk_quantize_per_tensor(xf, 2.0 / 255, c->xzp, WK_QUINT8);
  if (c->per_channel) {
    wk_tensor *sc = tu_rand(WK_SHAPE(c->o), WK_F32, 0.002, 0.005, 300 + idx);
    *w = wk_quantize_per_channel(wf, sc, wk_zeros(WK_SHAPE(c->o), WK_OPTS(.dtype = WK_I64)), 0, WK_QINT8);
  } else {
    *w = wk_quantize_per_tensor(wf, 0.004, 0, WK_QINT8);
  }
  *b = c->bias ? tu_rand(WK_SHAPE(c->o), WK_F32, -0.3, 0.3, 400 + idx) : NULL;
  TU_NOTNULL(*x);
  TU_NOTNULL(*w);
}

static void conv_compare(wk_tensor *x, wk_tensor *w, wk_tensor *b, const qconv_case *c, double osc, int64_t ozp,
                         const char *what) {
  int64_t st[2] = {c->stride, c->stride}, pd[2] = {c->pad, c->pad}, dl[2] = {c->dil, c->dil};
  wk_value a[10] = {WK_VT(x),        WK_VT(w),          WK_VT(b),      WK_VINTS(st, 2), WK_VINTS(pd, 2),
                    WK_VINTS(dl, 2), WK_VI(c->groups), WK_VF(osc), WK_VI(ozp),      WK_VB(c->relu)};
  wk_tensor *yo = call_with("quantized_conv2d", "onednn", a, 10);
  wk_tensor *yc = call_with("quantized_conv2d", "cpu", a, 10);
  int64_t sat = assert_same_q(yo, yc, what);
  /* the output scale is chosen so that most outputs are not saturated */
  ck_assert_msg(sat < wk_tensor_numel(yc) / 2, "%s: %lld of %lld saturated", what, (long long)sat,
                (long long)wk_tensor_numel(yc));
  /* the dispatcher runs the onednn kernel on these arguments */
  wk_tensor *yd = wkx_quantized_conv2d(x, w, b, st, 2, pd, 2, dl, 2, c->groups, osc, ozp, c->relu);
  assert_same_q(yd, yo, what);
}

START_TEST(test_int8_conv_exact) {
  if (!onednn_int8()) return;
  for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
    wk_scope_begin();
    const qconv_case *c = &cases[i];
    wk_tensor *x, *w, *b;
    make_conv(c, i, &x, &w, &b);
    char what[64];
    snprintf(what, sizeof what, "conv case %d", i);
    /* accumulators of ~ c*k*k/12 products of 127*64 quanta: an output scale
     * that spreads them over the u8 range */
    double osc = 0.02 * sqrt((double)(c->c / c->groups * c->k * c->k)) / 4;
    conv_compare(x, w, b, c, osc, c->relu ? 20 : 128, what);
    /* the same integers viewed channels-last (strided input) */
    wk_tensor *xcl = wk_contiguous(wk_permute(x, WK_SHAPE(0, 2, 3, 1)));
    wk_tensor *xv = wk_permute(xcl, WK_SHAPE(0, 3, 1, 2));
    TU_NOTNULL(xv);
    snprintf(what, sizeof what, "conv case %d channels-last input", i);
    conv_compare(xv, w, b, c, osc, 128, what);
    wk_scope_end();
  }
}
END_TEST

/* Outputs on rounding ties: output scale = 2 * sx * sw makes the
 * multiplier exactly 0.5, and small integers make every odd accumulator a
 * tie (x.5), rounded to even by both kernels; with a bias the float sum
 * acc + bias / (sx * sw) is rounded first, as the reference does. */
START_TEST(test_int8_conv_ties) {
  if (!onednn_int8()) return;
  wk_scope_begin();
  qconv_case c = {2, 16, 12, 12, 16, 3, 1, 1, 1, 1, true, true, false, 131};
  wk_tensor *x = wk_quantize_per_tensor(tu_rand(WK_SHAPE(2, 16, 12, 12), WK_F32, -0.02, 0.02, 31), 2.0 / 255, 131,
                                        WK_QUINT8);
  wk_tensor *w = wk_quantize_per_channel(tu_rand(WK_SHAPE(16, 16, 3, 3), WK_F32, -0.02, 0.02, 32),
                                         wk_full(WK_SHAPE(16), 0.004, WK_OPTS(.dtype = WK_F32)),
                                         wk_zeros(WK_SHAPE(16), WK_OPTS(.dtype = WK_I64)), 0, WK_QINT8);
  wk_tensor *b = tu_rand(WK_SHAPE(16), WK_F32, -0.0001, 0.0001, 33);
  double sy = (double)((float)wk_q_scale(x) * 0.004f) * 2;
  conv_compare(x, w, NULL, &c, sy, 128, "ties without bias");
  conv_compare(x, w, b, &c, sy, 128, "ties with bias");
  /* the case has ties: count odd accumulators through the float path */
  int64_t one[2] = {1, 1};
  wk_tensor *acc = wkx_conv2d(wk_sub_scalar(wk_to_dtype(wk_int_repr(x), WK_F32), 131),
                              wk_to_dtype(wk_int_repr(w), WK_F32), NULL, one, 2, one, 2, one, 2, 1);
  double *v = tu_values(acc);
  int64_t n = wk_tensor_numel(acc), odd = 0;
  for (int64_t i = 0; i < n; i++) odd += fmod(fabs(v[i]), 2.0) == 1.0;
  free(v);
  ck_assert_msg(odd > n / 4, "only %lld of %lld accumulators are ties", (long long)odd, (long long)n);
  wk_scope_end();
}
END_TEST

START_TEST(test_int8_linear_exact) {
  if (!onednn_int8()) return;
  static const int64_t shapes[][4] = {/* batch dims (0: none), M, K, N */
                                      {0, 1, 16, 8}, {0, 32, 128, 64}, {3, 5, 33, 17}, {0, 64, 512, 10}, {2, 7, 1, 3}};
  for (int i = 0; i < 5; i++) {
    wk_scope_begin();
    const int64_t *s = shapes[i];
    wk_tensor *xf = s[0] ? tu_rand(WK_SHAPE(s[0], s[1], s[2]), WK_F32, -1, 1, 500 + i)
                         : tu_rand(WK_SHAPE(s[1], s[2]), WK_F32, -1, 1, 500 + i);
    wk_tensor *wf = tu_rand(WK_SHAPE(s[3], s[2]), WK_F32, -0.5, 0.5, 600 + i);
    wk_tensor *x = wk_quantize_per_tensor(xf, 2.0 / 255, i * 40, WK_QUINT8);
    wk_tensor *w = i % 2 ? wk_quantize_per_tensor(wf, 0.004, 0, WK_QINT8)
                         : wk_quantize_per_channel(wf, tu_rand(WK_SHAPE(s[3]), WK_F32, 0.002, 0.005, 700 + i),
                                                   wk_zeros(WK_SHAPE(s[3]), WK_OPTS(.dtype = WK_I64)), 0, WK_QINT8);
    wk_tensor *b = i == 1 ? NULL : tu_rand(WK_SHAPE(s[3]), WK_F32, -0.3, 0.3, 800 + i);
    double osc = 0.02 * sqrt((double)s[2]) / 4;
    for (int relu = 0; relu < 2; relu++) {
      wk_value a[6] = {WK_VT(x), WK_VT(w), WK_VT(b), WK_VF(osc), WK_VI(relu ? 30 : 128), WK_VB(relu)};
      char what[64];
      snprintf(what, sizeof what, "linear case %d relu %d", i, relu);
      wk_tensor *yo = call_with("quantized_linear", "onednn", a, 6);
      assert_same_q(yo, call_with("quantized_linear", "cpu", a, 6), what);
      assert_same_q(wkx_quantized_linear(x, w, b, osc, relu ? 30 : 128, relu), yo, what);
    }
    wk_scope_end();
  }
}
END_TEST

/* Weights with a non-zero zero point (oneDNN's int8 primitives take only 0):
 * the onednn kernel declines, the dispatcher runs the cpu kernel. */
START_TEST(test_int8_fallback) {
  if (!onednn_int8()) return;
  wk_scope_begin();
  wk_tensor *x = wk_quantize_per_tensor(tu_rand(WK_SHAPE(1, 4, 6, 6), WK_F32, -1, 1, 1), 0.01, 128, WK_QUINT8);
  wk_tensor *w = wk_quantize_per_tensor(tu_rand(WK_SHAPE(3, 4, 3, 3), WK_F32, -1, 1, 2), 0.01, 5, WK_QINT8);
  int64_t one[2] = {1, 1}, zero[2] = {0, 0};
  wk_value a[10] = {WK_VT(x),         WK_VT(w),  WK_VNONE,   WK_VINTS(one, 2), WK_VINTS(zero, 2),
                    WK_VINTS(one, 2), WK_VI(1), WK_VF(0.3), WK_VI(128),       WK_VB(false)};
  ck_assert_ptr_null(call_with("quantized_conv2d", "onednn", a, 10));
  TU_FAILS_WITH(WK_ERR_UNSUPPORTED, "onednn kernel does not handle");
  wk_tensor *yc = call_with("quantized_conv2d", "cpu", a, 10);
  assert_same_q(wkx_quantized_conv2d(x, w, NULL, one, 2, zero, 2, one, 2, 1, 0.3, 128, false), yc, "fallback");
  /* per-channel zero points, one of them non-zero */
  wk_tensor *wl = wk_quantize_per_channel(tu_rand(WK_SHAPE(3, 4), WK_F32, -1, 1, 3),
                                          TU_T(WK_F32, (3), 0.01, 0.02, 0.01), TU_T(WK_I64, (3), 0, 1, 0), 0, WK_QINT8);
  wk_tensor *xl = wk_quantize_per_tensor(tu_rand(WK_SHAPE(2, 4), WK_F32, -1, 1, 4), 0.01, 128, WK_QUINT8);
  wk_value l[6] = {WK_VT(xl), WK_VT(wl), WK_VNONE, WK_VF(0.05), WK_VI(128), WK_VB(false)};
  ck_assert_ptr_null(call_with("quantized_linear", "onednn", l, 6));
  TU_FAILS_WITH(WK_ERR_UNSUPPORTED, "onednn kernel does not handle");
  assert_same_q(wkx_quantized_linear(xl, wl, NULL, 0.05, 128, false), call_with("quantized_linear", "cpu", l, 6),
                "linear fallback");
  wk_scope_end();
}
END_TEST

/* The reordered weight is cached per weight version: integers written in
 * place (a quantized state dict loaded into a converted model) bump the
 * version and are used on the next call. */
START_TEST(test_int8_weight_version) {
  if (!onednn_int8()) return;
  wk_scope_begin();
  qconv_case c = {2, 8, 8, 8, 8, 3, 1, 1, 1, 1, true, true, false, 128};
  wk_tensor *x, *w, *b;
  make_conv(&c, 7, &x, &w, &b);
  int64_t one[2] = {1, 1};
  wk_tensor *y1 = wkx_quantized_conv2d(x, w, b, one, 2, one, 2, one, 2, 1, 0.05, 128, false);
  wk_tensor *y2 = wkx_quantized_conv2d(x, w, b, one, 2, one, 2, one, 2, 1, 0.05, 128, false);
  assert_same_q(y1, y2, "second call (cached weight)");
  int8_t *wd = wk_tensor_data(w);
  for (int64_t i = 0; i < wk_tensor_numel(w); i++) wd[i] = (int8_t)(-wd[i] / 2);
  wk_tensor_bump_version(w);
  wk_tensor *y3 = wkx_quantized_conv2d(x, w, b, one, 2, one, 2, one, 2, 1, 0.05, 128, false);
  int64_t st[2] = {1, 1};
  wk_value a[10] = {WK_VT(x),        WK_VT(w), WK_VT(b),    WK_VINTS(st, 2), WK_VINTS(one, 2),
                    WK_VINTS(one, 2), WK_VI(1), WK_VF(0.05), WK_VI(128),      WK_VB(false)};
  assert_same_q(y3, call_with("quantized_conv2d", "cpu", a, 10), "after the weight changed");
  double *v1 = tu_values(wk_int_repr(y1)), *v3 = tu_values(wk_int_repr(y3));
  int64_t diff = 0;
  for (int64_t i = 0; i < wk_tensor_numel(y1); i++) diff += v1[i] != v3[i];
  free(v1);
  free(v3);
  ck_assert_msg(diff > wk_tensor_numel(y1) / 2, "only %lld outputs changed with the weight", (long long)diff);
  wk_scope_end();
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("onednn_int8");
  TCase *tc = tcase_create("int8");
  tcase_set_timeout(tc, 120);
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_test(tc, test_int8_conv_exact);
  tcase_add_test(tc, test_int8_conv_ties);
  tcase_add_test(tc, test_int8_linear_exact);
  tcase_add_test(tc, test_int8_fallback);
  tcase_add_test(tc, test_int8_weight_version);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  wk_init();
  if (!onednn_int8()) {
    fprintf(stderr, "check_onednn_int8: the onednn plugin (with int8 kernels) is not loaded: skipped\n");
    return 77;
  }
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
