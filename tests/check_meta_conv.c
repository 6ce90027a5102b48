/* Check suite: the meta functions of convolution and pooling (core/meta_conv.c).
 * Every op of the family, forward and backward, gives the same result shapes
 * and dtypes on cpu and on the meta device, and the same error messages; a
 * ResNet-18 forward and backward runs on meta at ImageNet size. */
#include "testutil.h"

static wk_device meta_dev(void) {
  return (wk_device){WK_DEVICE_META, 0};
}

#define Z(dt, ...) wk_zeros(WK_SHAPE(__VA_ARGS__), (wk_options){.dtype = (dt)})
#define PAIR(a, b) WK_VINTS(((int64_t[]){(a), (b)}), 2)
#define NOINTS WK_VINTS(((int64_t[]){0}), 0)

/* Calls op on args (tensors on cpu) and on the same arguments with every
 * tensor moved to meta. want_err NULL: both succeed, and each result the cpu
 * kernel returns has the meta result's shape and dtype. Otherwise both fail
 * with the same message, which contains want_err. */
static void same_on_meta(const char *name, const wk_value *args, int n, const char *want_err) {
  wk_op *op = wk_op_find(name);
  TU_NOTNULL(op);
  int nouts = wk_op_num_outs(op);
  wk_value ma[WK_MAX_ARGS], rc[WK_MAX_OUTS], rm[WK_MAX_OUTS];
  for (int i = 0; i < n; i++) {
    ma[i] = args[i];
    if (args[i].tag == WK_V_TENSOR) {
      ma[i].u.t = wk_to_device(args[i].u.t, meta_dev());
      TU_NOTNULL(ma[i].u.t);
    }
  }
  wk_status sc = wk_call(name, args, n, rc);
  char cpu_msg[512] = "";
  if (sc) snprintf(cpu_msg, sizeof cpu_msg, "%s", wk_last_error_message());
  wk_clear_error();
  wk_status sm = wk_call(name, ma, n, rm);
  if (want_err) {
    ck_assert_msg(sc != WK_OK, "%s: cpu accepted a call that should fail with '%s'", name, want_err);
    ck_assert_msg(strstr(cpu_msg, want_err) != NULL, "%s: '%s' lacks '%s'", name, cpu_msg, want_err);
    ck_assert_msg(sm == sc, "%s: meta status %d, cpu %d (%s)", name, (int)sm, (int)sc, cpu_msg);
    ck_assert_str_eq(wk_last_error_message(), cpu_msg);
    wk_clear_error();
    return;
  }
  ck_assert_msg(sc == WK_OK, "%s failed on cpu: %s", name, cpu_msg);
  ck_assert_msg(sm == WK_OK, "%s failed on meta: %s", name, wk_last_error_message());
  for (int i = 0; i < nouts; i++) {
    if (rc[i].tag != WK_V_TENSOR) continue; /* a masked gradient */
    wk_tensor *c = rc[i].u.t, *m = rm[i].u.t;
    ck_assert_int_eq(wk_tensor_device(m).type, WK_DEVICE_META);
    ck_assert_msg(wk_tensor_dtype(m) == wk_tensor_dtype(c), "%s result %d: dtype %d on meta, %d on cpu", name, i,
                  (int)wk_tensor_dtype(m), (int)wk_tensor_dtype(c));
    ck_assert_int_eq(wk_tensor_dim(m), wk_tensor_dim(c));
    for (int d = 0; d < wk_tensor_dim(c); d++)
      ck_assert_msg(wk_tensor_size(m, d) == wk_tensor_size(c, d), "%s result %d dim %d: %lld on meta, %lld on cpu",
                    name, i, d, (long long)wk_tensor_size(m, d), (long long)wk_tensor_size(c, d));
  }
}

/* conv2d(x, w, b, stride, padding, dilation, groups) */
static void conv_case(wk_tensor *x, wk_tensor *w, wk_tensor *b, wk_value st, wk_value pd, wk_value dl, int64_t g,
                      const char *err) {
  wk_value a[7] = {WK_VT(x), WK_VT(w), b ? WK_VT(b) : WK_VNONE, st, pd, dl, WK_VI(g)};
  same_on_meta("conv2d", a, 7, err);
}

START_TEST(test_meta_conv_conv2d) {
  wk_scope_begin();
  wk_tensor *x = Z(WK_F32, 2, 4, 9, 7), *w = Z(WK_F32, 6, 4, 3, 3), *b = Z(WK_F32, 6);
  conv_case(x, w, b, PAIR(1, 1), PAIR(0, 0), PAIR(1, 1), 1, NULL);
  conv_case(x, w, NULL, PAIR(2, 3), PAIR(1, 2), PAIR(2, 1), 1, NULL);
  conv_case(Z(WK_F64, 4, 9, 7), Z(WK_F64, 6, 4, 3, 3), NULL, PAIR(1, 2), PAIR(1, 1), PAIR(1, 1), 1, NULL);
  conv_case(x, Z(WK_F32, 6, 2, 1, 1), b, PAIR(1, 1), PAIR(0, 0), PAIR(1, 1), 2, NULL); /* groups */
  conv_case(Z(WK_BF16, 1, 4, 5, 5), Z(WK_BF16, 6, 4, 3, 3), NULL, PAIR(1, 1), PAIR(1, 1), PAIR(1, 1), 1, NULL);
  conv_case(Z(WK_F32, 0, 4, 5, 5), w, NULL, PAIR(1, 1), PAIR(0, 0), PAIR(1, 1), 1, NULL); /* empty batch */
  /* errors, in the cpu kernel's order */
  conv_case(x, w, NULL, NOINTS, PAIR(0, 0), PAIR(1, 1), 1,
            "conv2d(): expected stride to be a single integer value or a list of 2 values to match the convolution "
            "dimensions, but got stride=[]");
  conv_case(Z(WK_F32, 4, 5), w, NULL, PAIR(1, 1), PAIR(0, 0), PAIR(1, 1), 1,
            "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [4, 5]");
  conv_case(x, w, NULL, PAIR(1, 1), PAIR(0, 0), PAIR(1, 1), 0, "non-positive groups is not supported");
  conv_case(x, w, NULL, PAIR(1, 1), PAIR(0, -1), PAIR(1, 1), 1, "negative padding is not supported");
  conv_case(x, w, NULL, PAIR(0, 1), PAIR(0, 0), PAIR(1, 1), 1, "non-positive stride is not supported");
  conv_case(x, w, NULL, PAIR(1, 1), PAIR(0, 0), PAIR(1, 0), 1, "dilation should be greater than zero");
  conv_case(x, Z(WK_F32, 6, 4, 3), NULL, PAIR(1, 1), PAIR(0, 0), PAIR(1, 1), 1,
            "Expected 3-dimensional input for 3-dimensional weight [6, 4, 3]");
  conv_case(x, w, NULL, PAIR(1, 1), PAIR(0, 0), PAIR(1, 1), 8, "expected weight to be at least 8 at dimension 0");
  conv_case(x, w, NULL, PAIR(1, 1), PAIR(0, 0), PAIR(1, 1), 4, "expected weight to be divisible by 4 at dimension 0");
  conv_case(x, Z(WK_F32, 6, 3, 3, 3), NULL, PAIR(1, 1), PAIR(0, 0), PAIR(1, 1), 1,
            "Given groups=1, weight of size [6, 3, 3, 3], expected input[2, 4, 9, 7] to have 3 channels, but got 4 "
            "channels instead");
  conv_case(x, w, Z(WK_F32, 5), PAIR(1, 1), PAIR(0, 0), PAIR(1, 1), 1,
            "expected bias to be 1-dimensional with 6 elements, but got bias of size [5] instead");
  conv_case(x, w, NULL, PAIR(1, 1), PAIR(0, 0), PAIR(5, 1), 1,
            "Calculated padded input size per channel: (9 x 7). Kernel size: (11 x 3). Kernel size can't be greater "
            "than actual input size");
  conv_case(x, Z(WK_F64, 6, 4, 3, 3), NULL, PAIR(1, 1), PAIR(0, 0), PAIR(1, 1), 1,
            "Input type (Float) and weight type (Double) should be the same");
  conv_case(x, w, Z(WK_F64, 6), PAIR(1, 1), PAIR(0, 0), PAIR(1, 1), 1,
            "Input type (Float) and bias type (Double) should be the same");
  conv_case(Z(WK_I64, 2, 4, 9, 7), Z(WK_I64, 6, 4, 3, 3), NULL, PAIR(1, 1), PAIR(0, 0), PAIR(1, 1), 1,
            "conv2d(): \"conv2d_cpu\" not implemented for 'Long'");
  wk_scope_end();
}
END_TEST

/* conv2d_backward(go, x, w, stride, padding, dilation, groups, output_mask) */
static void conv_bwd_case(wk_tensor *go, wk_tensor *x, wk_tensor *w, int64_t s, int64_t p, int64_t g,
                          const int64_t mask[3], const char *err) {
  wk_value a[8] = {WK_VT(go),  WK_VT(x),   WK_VT(w), PAIR(s, s),
                   PAIR(p, p), PAIR(1, 1), WK_VI(g), WK_VINTS(mask, mask ? 3 : 0)};
  same_on_meta("conv2d_backward", a, 8, err);
}

START_TEST(test_meta_conv_conv2d_backward) {
  wk_scope_begin();
  static const int64_t all[3] = {1, 1, 1}, some[3] = {1, 0, 1};
  wk_tensor *x = Z(WK_F64, 2, 4, 6, 6), *w = Z(WK_F64, 3, 4, 3, 3), *go = Z(WK_F64, 2, 3, 3, 3);
  conv_bwd_case(go, x, w, 2, 1, 1, all, NULL);
  conv_bwd_case(go, x, w, 2, 1, 1, some, NULL);
  conv_bwd_case(Z(WK_F32, 4, 4, 4), Z(WK_F32, 4, 6, 6), Z(WK_F32, 4, 2, 3, 3), 1, 0, 2, all, NULL); /* unbatched */
  conv_bwd_case(go, x, w, 2, 1, 1, NULL, "conv2d_backward(): output_mask must hold 3 values, got 0");
  conv_bwd_case(Z(WK_F64, 2, 3, 3, 4), x, w, 2, 1, 1, all,
                "conv2d_backward(): expected grad_output of size [2, 3, 3, 3], but got [2, 3, 3, 4]");
  conv_bwd_case(Z(WK_F32, 2, 3, 3, 3), x, w, 2, 1, 1, all,
                "Input type (Double), weight type (Double) and grad_output type (Float) should be the same");
  conv_bwd_case(Z(WK_I64, 2, 3, 3, 3), Z(WK_I64, 2, 4, 6, 6), Z(WK_I64, 3, 4, 3, 3), 2, 1, 1, all,
                "\"conv2d_backward_cpu\" not implemented for 'Long'");
  conv_bwd_case(go, x, w, 2, 1, 3, all, "conv2d_backward(): Given groups=3, weight of size [3, 4, 3, 3]");
  wk_scope_end();
}
END_TEST

/* max_pool2d_with_indices(x, kernel, stride, padding, dilation, ceil_mode) */
static void maxpool_case(wk_tensor *x, wk_value k, wk_value s, wk_value p, wk_value d, bool ceil, const char *err) {
  wk_value a[6] = {WK_VT(x), k, s, p, d, WK_VB(ceil)};
  same_on_meta("max_pool2d_with_indices", a, 6, err);
}

START_TEST(test_meta_conv_max_pool2d) {
  wk_scope_begin();
  wk_tensor *x = Z(WK_F32, 2, 3, 7, 6);
  maxpool_case(x, PAIR(2, 2), NOINTS, PAIR(0, 0), PAIR(1, 1), false, NULL);
  maxpool_case(x, PAIR(3, 3), PAIR(2, 2), PAIR(1, 1), PAIR(1, 1), true, NULL);
  maxpool_case(x, PAIR(3, 2), PAIR(2, 1), PAIR(1, 0), PAIR(2, 1), false, NULL);
  maxpool_case(Z(WK_I32, 3, 5, 5), PAIR(2, 2), PAIR(2, 2), PAIR(0, 0), PAIR(1, 1), true, NULL);
  maxpool_case(Z(WK_F16, 0, 3, 6, 6), PAIR(2, 2), NOINTS, PAIR(0, 0), PAIR(1, 1), false, NULL);
  maxpool_case(x, NOINTS, NOINTS, PAIR(0, 0), PAIR(1, 1), false,
               "kernel_size must either be a single int, or a tuple of two ints");
  maxpool_case(x, PAIR(2, 2), NOINTS, PAIR(0, 0), NOINTS, false,
               "max_pool2d_with_indices(): dilation must be either a single int, or a tuple of two ints");
  maxpool_case(x, PAIR(2, 2), NOINTS, NOINTS, PAIR(1, 1), false,
               "padding must either be a single int, or a tuple of two ints");
  maxpool_case(x, PAIR(2, 2), PAIR(0, 1), PAIR(0, 0), PAIR(1, 1), false, "stride should not be zero");
  maxpool_case(x, PAIR(3, 3), PAIR(1, 1), PAIR(2, 2), PAIR(1, 1), false,
               "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and dilation=1");
  maxpool_case(x, PAIR(3, 3), PAIR(1, 1), PAIR(2, 0), PAIR(2, 1), false,
               "pad should be smaller than or equal to half of kernel size, but got padW = 0, padH = 2, kW = 3, "
               "kH = 3");
  maxpool_case(x, PAIR(0, 2), PAIR(1, 1), PAIR(0, 0), PAIR(1, 1), false, "kernel size should be greater than zero");
  maxpool_case(x, PAIR(2, 2), PAIR(1, -1), PAIR(0, 0), PAIR(1, 1), false, "stride should be greater than zero");
  maxpool_case(x, PAIR(2, 2), PAIR(1, 1), PAIR(0, 0), PAIR(0, 1), false, "dilation should be greater than zero");
  maxpool_case(x, PAIR(8, 8), PAIR(1, 1), PAIR(0, 0), PAIR(1, 1), false,
               "Given input size: (3x7x6). Calculated output size: (3x0x-1). Output size is too small");
  maxpool_case(Z(WK_F32, 6, 6), PAIR(2, 2), NOINTS, PAIR(0, 0), PAIR(1, 1), false,
               "non-empty 3D or 4D (batch mode) tensor expected for input, but got [6, 6]");
  maxpool_case(Z(WK_F32, 2, 0, 6, 6), PAIR(2, 2), NOINTS, PAIR(0, 0), PAIR(1, 1), false,
               "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:[2, 0, 6, 6]");
  maxpool_case(Z(WK_BOOL, 1, 6, 6), PAIR(2, 2), NOINTS, PAIR(0, 0), PAIR(1, 1), false,
               "\"max_pool2d\" not implemented for 'Bool'");
  wk_scope_end();
}
END_TEST

/* avg_pool2d(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override) */
static void avgpool_case(wk_tensor *x, wk_value k, wk_value s, wk_value p, bool ceil, wk_value div, const char *err) {
  wk_value a[7] = {WK_VT(x), k, s, p, WK_VB(ceil), WK_VB(true), div};
  same_on_meta("avg_pool2d", a, 7, err);
}

START_TEST(test_meta_conv_avg_pool2d) {
  wk_scope_begin();
  wk_tensor *x = Z(WK_F32, 1, 2, 5, 5);
  avgpool_case(x, PAIR(2, 2), NOINTS, PAIR(0, 0), false, WK_VNONE, NULL);
  avgpool_case(x, PAIR(3, 2), PAIR(2, 2), PAIR(1, 1), true, WK_VI(3), NULL);
  avgpool_case(Z(WK_I64, 2, 4, 4), PAIR(2, 2), NOINTS, PAIR(0, 0), false, WK_VNONE, NULL);
  avgpool_case(x, PAIR(2, 2), NOINTS, PAIR(0, 0), false, WK_VI(0), "avg_pool2d(): divisor must be not zero");
  avgpool_case(x, PAIR(6, 6), PAIR(1, 1), PAIR(0, 0), false, WK_VNONE, "Output size is too small");
  avgpool_case(Z(WK_I32, 1, 2, 5, 5), PAIR(2, 2), NOINTS, PAIR(0, 0), false, WK_VNONE,
               "\"avg_pool2d\" not implemented for 'Int'");
  avgpool_case(Z(WK_F32, 1, 1, 1, 4, 4), PAIR(2, 2), NOINTS, PAIR(0, 0), false, WK_VNONE, "3D or 4D");
  wk_scope_end();
}
END_TEST

static void adaptive_case(wk_tensor *x, wk_value os, const char *err) {
  wk_value a[2] = {WK_VT(x), os};
  same_on_meta("adaptive_avg_pool2d", a, 2, err);
}

START_TEST(test_meta_conv_adaptive_avg_pool2d) {
  wk_scope_begin();
  adaptive_case(Z(WK_F32, 2, 3, 7, 5), PAIR(3, 2), NULL);
  adaptive_case(Z(WK_F64, 3, 7, 5), PAIR(1, 1), NULL);
  adaptive_case(Z(WK_F32, 1, 1, 5), PAIR(0, 2), NULL);
  adaptive_case(Z(WK_F32, 0, 3, 4, 4), PAIR(2, 2), NULL);
  adaptive_case(Z(WK_F32, 1, 1, 5), NOINTS, "adaptive_avg_pool2d(): output_size must be 2");
  adaptive_case(Z(WK_F32, 1, 1, 5), PAIR(-1, 2),
                "elements of output_size must be greater than or equal to 0 but received {-1, 2}");
  adaptive_case(Z(WK_F32, 3, 3), PAIR(2, 2), "Expected 3D or 4D tensor, but got [3, 3]");
  adaptive_case(Z(WK_F32, 2, 3, 0, 4), PAIR(2, 2),
                "Expected input to have non-zero size for non-batch dimensions, but input has sizes [2, 3, 0, 4] with "
                "dimension 2 being empty");
  adaptive_case(Z(WK_I64, 1, 1, 5), PAIR(2, 2), "\"adaptive_avg_pool2d\" not implemented for 'Long'");
  wk_scope_end();
}
END_TEST

START_TEST(test_meta_conv_pool_backward) {
  wk_scope_begin();
  wk_tensor *x = Z(WK_F64, 2, 3, 6, 6), *go = Z(WK_F64, 2, 3, 3, 3), *ind = Z(WK_I64, 2, 3, 3, 3);
  wk_tensor *bad = Z(WK_F64, 2, 3, 3, 2), *g32 = Z(WK_F32, 2, 3, 3, 3);
  /* max_pool2d_with_indices_backward(go, x, kernel, stride, padding, dilation, ceil_mode, indices) */
#define MAXB(G, X, I, ERR)                                                                                         \
  do {                                                                                                             \
    wk_value a_[8] = {WK_VT(G), WK_VT(X), PAIR(2, 2), PAIR(2, 2), PAIR(0, 0), PAIR(1, 1), WK_VB(false), WK_VT(I)}; \
    same_on_meta("max_pool2d_with_indices_backward", a_, 8, ERR);                                                  \
  } while (0)
  MAXB(go, x, ind, NULL);
  MAXB(Z(WK_F32, 3, 3, 3), Z(WK_F32, 3, 6, 6), Z(WK_I32, 3, 3, 3), NULL); /* unbatched, int32 indices */
  MAXB(bad, x, ind,
       "max_pool2d_with_indices_backward(): expected grad_output of size [2, 3, 3, 3], but got [2, 3, 3, 2]");
  MAXB(go, x, Z(WK_I64, 2, 3, 3, 2), "expected indices of size [2, 3, 3, 3], but got [2, 3, 3, 2]");
  MAXB(g32, x, ind, "expected dtype f64 for `gradOutput` but got dtype f32");
  MAXB(go, x, Z(WK_F32, 2, 3, 3, 3), "expected indices of an integer dtype, got f32");
  MAXB(Z(WK_I64, 2, 3, 3, 3), Z(WK_I64, 2, 3, 6, 6), ind,
       "\"max_pool2d_with_indices_backward\" not implemented for 'Long'");
#undef MAXB
  /* avg_pool2d_backward(go, x, kernel, stride, padding, ceil_mode, count_include_pad, divisor) */
#define AVGB(G, X, DIV, ERR)                                                                               \
  do {                                                                                                     \
    wk_value a_[8] = {WK_VT(G), WK_VT(X), PAIR(2, 2), NOINTS, PAIR(0, 0), WK_VB(false), WK_VB(true), DIV}; \
    same_on_meta("avg_pool2d_backward", a_, 8, ERR);                                                       \
  } while (0)
  AVGB(go, x, WK_VNONE, NULL);
  AVGB(Z(WK_I64, 2, 3, 3, 3), Z(WK_I64, 2, 3, 6, 6), WK_VI(3), NULL);
  AVGB(go, x, WK_VI(0), "avg_pool2d_backward(): divisor must be not zero");
  AVGB(bad, x, WK_VNONE, "expected grad_output of size [2, 3, 3, 3], but got [2, 3, 3, 2]");
  AVGB(g32, x, WK_VNONE, "expected dtype f64 for `gradOutput` but got dtype f32");
  AVGB(Z(WK_I32, 2, 3, 3, 3), Z(WK_I32, 2, 3, 6, 6), WK_VNONE, "\"avg_pool2d_backward\" not implemented for 'Int'");
#undef AVGB
  /* adaptive_avg_pool2d_backward(go, x) */
#define ADB(G, X, ERR)                                        \
  do {                                                        \
    wk_value a_[2] = {WK_VT(G), WK_VT(X)};                    \
    same_on_meta("adaptive_avg_pool2d_backward", a_, 2, ERR); \
  } while (0)
  ADB(go, x, NULL);
  ADB(Z(WK_F64, 2, 3, 0, 2), x, NULL);
  ADB(Z(WK_F64, 3, 3, 3, 3), x, "expected grad_output of size [2, 3, 3, 3], but got [3, 3, 3, 3]");
  ADB(Z(WK_F64, 3, 3, 3), x, "expected grad_output with 4 dimensions, but got [3, 3, 3]");
  ADB(go, Z(WK_F64, 6, 6), "Expected 3D or 4D tensor, but got [6, 6]");
  ADB(g32, x, "expected dtype f64 for `gradOutput` but got dtype f32");
#undef ADB
  wk_scope_end();
}
END_TEST

/* ---- ResNet-18 on meta -------------------------------------------------------------- */
static wk_tensor *mconv(wk_tensor *x, int64_t cout, int64_t k, int64_t s, int64_t p) {
  int64_t cin = wk_tensor_size(x, 1);
  wk_tensor *w = wk_empty(WK_SHAPE(cout, cin, k, k), (wk_options){.device = meta_dev()});
  wk_value a[7] = {WK_VT(x), WK_VT(w), WK_VNONE, PAIR(s, s), PAIR(p, p), PAIR(1, 1), WK_VI(1)}, out[1];
  TU_OK(wk_call("conv2d", a, 7, out));
  /* and its gradients, as a training step asks for them */
  wk_value b[8] = {out[0],     WK_VT(x),   WK_VT(w), PAIR(s, s),
                   PAIR(p, p), PAIR(1, 1), WK_VI(1), WK_VINTS(((int64_t[]){1, 1, 0}), 3)},
           g[3];
  TU_OK(wk_call("conv2d_backward", b, 8, g));
  for (int d = 0; d < 4; d++) {
    ck_assert_int_eq(wk_tensor_size(g[0].u.t, d), wk_tensor_size(x, d));
    ck_assert_int_eq(wk_tensor_size(g[1].u.t, d), wk_tensor_size(w, d));
  }
  return out[0].u.t;
}

static void expect_nchw(wk_tensor *t, int64_t n, int64_t c, int64_t h, int64_t w) {
  TU_NOTNULL(t);
  ck_assert_int_eq(wk_tensor_device(t).type, WK_DEVICE_META);
  ck_assert_int_eq(wk_tensor_dim(t), 4);
  int64_t want[4] = {n, c, h, w};
  for (int d = 0; d < 4; d++)
    ck_assert_msg(wk_tensor_size(t, d) == want[d], "dim %d: %lld, want %lld", d, (long long)wk_tensor_size(t, d),
                  (long long)want[d]);
}

START_TEST(test_meta_conv_resnet18_shapes) {
  wk_scope_begin();
  const int64_t N = 256; /* a batch no cpu would hold here: meta tensors have no data */
  wk_tensor *x = wk_empty(WK_SHAPE(N, 3, 224, 224), (wk_options){.device = meta_dev()});
  wk_tensor *y = mconv(x, 64, 7, 2, 3);
  expect_nchw(y, N, 64, 112, 112);
  wk_value pa[6] = {WK_VT(y), PAIR(3, 3), PAIR(2, 2), PAIR(1, 1), PAIR(1, 1), WK_VB(false)}, po[2];
  TU_OK(wk_call("max_pool2d_with_indices", pa, 6, po));
  expect_nchw(po[0].u.t, N, 64, 56, 56);
  ck_assert_int_eq(wk_tensor_dtype(po[1].u.t), WK_I64);
  wk_value pb[8] = {po[0], WK_VT(y), PAIR(3, 3), PAIR(2, 2), PAIR(1, 1), PAIR(1, 1), WK_VB(false), po[1]}, pg[1];
  TU_OK(wk_call("max_pool2d_with_indices_backward", pb, 8, pg));
  expect_nchw(pg[0].u.t, N, 64, 112, 112);
  y = po[0].u.t;
  static const int64_t widths[4] = {64, 128, 256, 512};
  int64_t hw = 56;
  for (int stage = 0; stage < 4; stage++) {
    for (int blk = 0; blk < 2; blk++) {
      int64_t s = stage > 0 && blk == 0 ? 2 : 1;
      wk_tensor *h = mconv(y, widths[stage], 3, s, 1);
      h = mconv(h, widths[stage], 3, 1, 1);
      wk_tensor *sc = s == 2 ? mconv(y, widths[stage], 1, 2, 0) : y; /* downsampling shortcut */
      if (s == 2) hw /= 2;
      expect_nchw(h, N, widths[stage], hw, hw);
      expect_nchw(sc, N, widths[stage], hw, hw);
      y = h;
    }
  }
  expect_nchw(y, N, 512, 7, 7);
  wk_value aa[2] = {WK_VT(y), PAIR(1, 1)}, ao[1];
  TU_OK(wk_call("adaptive_avg_pool2d", aa, 2, ao));
  expect_nchw(ao[0].u.t, N, 512, 1, 1);
  wk_value ab[2] = {ao[0], WK_VT(y)}, ag[1];
  TU_OK(wk_call("adaptive_avg_pool2d_backward", ab, 2, ag));
  expect_nchw(ag[0].u.t, N, 512, 7, 7);
  wk_scope_end();
}
END_TEST

/* The same network's layers on cpu and on meta at a small size agree. */
START_TEST(test_meta_conv_resnet18_cpu_agrees) {
  wk_scope_begin();
  wk_tensor *x = Z(WK_F32, 1, 3, 64, 64);
  conv_case(x, Z(WK_F32, 64, 3, 7, 7), NULL, PAIR(2, 2), PAIR(3, 3), PAIR(1, 1), 1, NULL);
  wk_tensor *y = Z(WK_F32, 1, 64, 32, 32);
  maxpool_case(y, PAIR(3, 3), PAIR(2, 2), PAIR(1, 1), PAIR(1, 1), false, NULL);
  y = Z(WK_F32, 1, 64, 16, 16);
  conv_case(y, Z(WK_F32, 128, 64, 3, 3), NULL, PAIR(2, 2), PAIR(1, 1), PAIR(1, 1), 1, NULL);
  conv_case(y, Z(WK_F32, 128, 64, 1, 1), NULL, PAIR(2, 2), PAIR(0, 0), PAIR(1, 1), 1, NULL);
  adaptive_case(Z(WK_F32, 1, 512, 2, 2), PAIR(1, 1), NULL);
  static const int64_t all[3] = {1, 1, 1};
  conv_bwd_case(Z(WK_F32, 1, 128, 8, 8), y, Z(WK_F32, 128, 64, 3, 3), 2, 1, 1, all, NULL);
  wk_scope_end();
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("meta_conv");
  TCase *tc = tcase_create("meta_conv");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_meta_conv_conv2d);
  tcase_add_test(tc, test_meta_conv_conv2d_backward);
  tcase_add_test(tc, test_meta_conv_max_pool2d);
  tcase_add_test(tc, test_meta_conv_avg_pool2d);
  tcase_add_test(tc, test_meta_conv_adaptive_avg_pool2d);
  tcase_add_test(tc, test_meta_conv_pool_backward);
  tcase_add_test(tc, test_meta_conv_resnet18_shapes);
  tcase_add_test(tc, test_meta_conv_resnet18_cpu_agrees);
  suite_add_tcase(s, tc);
  return s;
}
TU_MAIN(make_suite)
