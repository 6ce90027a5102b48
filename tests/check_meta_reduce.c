/* Check suite: the reduce family's meta functions (reductions, cumsum,
 * sort/topk, mm/bmm/addmm/dot, the matmul/linear/outer composites, the optim
 * plugin's update ops). Each call runs on cpu tensors and on meta tensors of
 * the same shapes and dtypes: equal result shapes and dtypes, or the same
 * error message. */
#include "testutil.h"

static wk_device meta_dev(void) { return (wk_device){WK_DEVICE_META, 0}; }

static wk_tensor *cpu_t(const int64_t *sizes, int ndim, wk_dtype dt) {
  return wk_ones(sizes, ndim, (wk_options){.dtype = dt});
}
#define T(dt, ...) WK_VT(cpu_t(WK_SHAPE(__VA_ARGS__), dt))
#define T0(dt) WK_VT(cpu_t(NULL, 0, dt))

/* Runs op on args (cpu tensors) and on the same args with every tensor moved
 * to the meta device; both succeed with the same result shapes and dtypes, or
 * both fail with the same message. The message (or "") is copied to msg. */
static void same_on_meta_msg(const char *name, const wk_value *args, int n, char *msg, size_t cap) {
  wk_scope_begin();
  wk_op *op = wk_op_find(name);
  ck_assert_msg(op != NULL, "no op %s", name);
  int nouts = wk_op_num_outs(op);
  wk_value margs[16], oc[4], om[4];
  ck_assert_int_le(n, 16);
  for (int i = 0; i < n; i++) {
    margs[i] = args[i];
    if (args[i].tag == WK_V_TENSOR) margs[i] = WK_VT(wk_to_device(args[i].u.t, meta_dev()));
  }
  wk_status sc = wk_call(name, args, n, oc);
  char cpu_msg[512] = "";
  if (sc) snprintf(cpu_msg, sizeof cpu_msg, "%s", wk_last_error_message());
  wk_clear_error();
  wk_status sm = wk_call(name, margs, n, om);
  if (msg) snprintf(msg, cap, "%s", cpu_msg);
  if (sc) {
    ck_assert_msg(sm != WK_OK, "%s: fails on cpu (%s) but not on meta", name, cpu_msg);
    ck_assert_int_eq(sm, sc);
    ck_assert_str_eq(wk_last_error_message(), cpu_msg);
    wk_clear_error();
  } else {
    ck_assert_msg(sm == WK_OK, "%s: fails on meta only: %s", name, wk_last_error_message());
    for (int r = 0; r < nouts; r++) {
      wk_tensor *c = oc[r].u.t, *m = om[r].u.t;
      ck_assert_int_eq(wk_tensor_device(m).type, WK_DEVICE_META);
      ck_assert_int_eq(wk_tensor_dtype(m), wk_tensor_dtype(c));
      ck_assert_int_eq(wk_tensor_dim(m), wk_tensor_dim(c));
      for (int d = 0; d < wk_tensor_dim(c); d++) ck_assert_int_eq(wk_tensor_size(m, d), wk_tensor_size(c, d));
      bool borrowed_c = false, borrowed_m = false; /* in-place results are their targets */
      for (int i = 0; i < n; i++) {
        if (args[i].tag == WK_V_TENSOR && args[i].u.t == c) borrowed_c = true;
        if (margs[i].tag == WK_V_TENSOR && margs[i].u.t == m) borrowed_m = true;
      }
      if (!borrowed_c) wk_release(c);
      if (!borrowed_m) wk_release(m);
    }
  }
  wk_scope_end();
}
#define SAME(name, ...)                                                                          \
  do {                                                                                           \
    wk_value a_[] = {__VA_ARGS__};                                                               \
    same_on_meta_msg(name, a_, (int)(sizeof a_ / sizeof a_[0]), NULL, 0);                        \
  } while (0)
/* The same, and the call must fail with a message containing `want`. */
#define SAME_FAILS(want, name, ...)                                                              \
  do {                                                                                           \
    wk_value a_[] = {__VA_ARGS__};                                                               \
    char m_[512];                                                                                \
    same_on_meta_msg(name, a_, (int)(sizeof a_ / sizeof a_[0]), m_, sizeof m_);                  \
    ck_assert_msg(strstr(m_, want) != NULL, "%s: expected '%s', got '%s'", name, want, m_);     \
  } while (0)

static const int64_t d02[] = {0, 2}, d00[] = {0, -3}, d3[] = {3}, d1[] = {1}, dm1[] = {-1};

START_TEST(test_sum_prod_mean) {
  wk_scope_begin();
  SAME("sum", T(WK_F32, 2, 3));
  SAME("sum", T(WK_I32, 2, 3));
  SAME("sum", T(WK_BOOL, 4));
  SAME("sum", T(WK_I32, 2, 3), WK_VDT(WK_F64));
  SAME("sum.dim_IntList", T(WK_F32, 2, 3, 4), WK_VINTS(d02, 2), WK_VB(true));
  SAME("sum.dim_IntList", T(WK_F32, 2, 3, 4), WK_VINTS(d02, 2), WK_VB(false));
  SAME("sum.dim_IntList", T(WK_F32, 2, 3, 4), WK_VNONE, WK_VB(true));
  SAME("sum.dim_IntList", T0(WK_F32), WK_VINTS(dm1, 1), WK_VB(true));
  SAME_FAILS("sum(): dim 0 appears multiple times in the list of dims", "sum.dim_IntList", T(WK_F32, 2, 3, 4),
             WK_VINTS(d00, 2), WK_VB(false));
  SAME_FAILS("sum(): Dimension out of range (expected to be in range of [-3, 2], but got 3)", "sum.dim_IntList",
             T(WK_F32, 2, 3, 4), WK_VINTS(d3, 1), WK_VB(false));
  SAME("prod", T(WK_U8, 5));
  SAME("prod.dim_int", T(WK_F64, 2, 3), WK_VI(-1), WK_VB(true));
  SAME("prod.dim_int", T(WK_I16, 2, 3), WK_VI(0), WK_VB(false), WK_VDT(WK_I32));
  SAME_FAILS("Dimension out of range", "prod.dim_int", T(WK_F64, 2, 3), WK_VI(2));
  SAME("mean", T(WK_F16, 2, 3));
  SAME("mean", T(WK_I64, 2, 3), WK_VDT(WK_F32));
  SAME_FAILS("mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. "
             "Got: Long", "mean", T(WK_I64, 2, 3));
  SAME_FAILS("Optional dtype must be either a floating point or complex dtype. Got: Int", "mean.dim", T(WK_F32, 2),
             WK_VINTS(dm1, 1), WK_VB(false), WK_VDT(WK_I32));
  SAME("mean.dim", T(WK_F32, 2, 3, 4), WK_VINTS(d1, 1), WK_VB(true));
  wk_scope_end();
}
END_TEST

START_TEST(test_extremes) {
  wk_scope_begin();
  SAME("max", T(WK_I32, 2, 3));
  SAME("min", T0(WK_F32));
  SAME_FAILS("max(): Expected reduction dim to be specified for input.numel() == 0. Specify", "max",
             T(WK_F32, 0, 3));
  SAME("max.dim", T(WK_F32, 2, 3, 4), WK_VI(1), WK_VB(true));
  SAME("min.dim", T(WK_I8, 2, 3), WK_VI(-1));
  SAME("max.dim", T0(WK_F32), WK_VI(0));
  SAME_FAILS("min(): Expected reduction dim 1 to have non-zero size.", "min.dim", T(WK_F32, 3, 0), WK_VI(1));
  SAME("max.dim", T(WK_F32, 3, 0), WK_VI(0)); /* a [0] result */
  SAME("argmax", T(WK_F32, 2, 3), WK_VNONE, WK_VB(true));
  SAME("argmax", T(WK_F32, 2, 3), WK_VNONE);
  SAME("argmin", T(WK_I64, 2, 3), WK_VI(0), WK_VB(false));
  SAME_FAILS("argmax(): \"argmax_cpu\" not implemented for 'Bool'", "argmax", T(WK_BOOL, 3));
  SAME_FAILS("argmin(): Expected reduction dim to be specified for input.numel() == 0.", "argmin", T(WK_F32, 0));
  SAME_FAILS("Dimension out of range", "argmin", T(WK_F32, 2), WK_VI(-2));
  wk_scope_end();
}
END_TEST

START_TEST(test_statistics) {
  wk_scope_begin();
  SAME("var.correction", T(WK_F32, 4, 5));
  SAME("std.correction", T(WK_F64, 4, 5), WK_VINTS(d1, 1), WK_VI(0), WK_VB(true));
  SAME_FAILS("std(): std and var only support floating point and complex dtypes, got Long", "std.correction",
             T(WK_I64, 3));
  SAME("norm", T(WK_F32, 4, 5));
  SAME("norm", T(WK_F32, 4, 5), WK_VF(1), WK_VINTS(d1, 1), WK_VB(true));
  SAME_FAILS("norm(): Expected a floating point or complex tensor as input. Got Int", "norm", T(WK_I32, 3));
  SAME_FAILS("norm(): the order p must not be NaN", "norm", T(WK_F32, 3), WK_VF(NAN));
  SAME_FAILS("norm(): cannot compute the inf norm on an empty tensor", "norm", T(WK_F32, 0, 3), WK_VF(INFINITY));
  SAME("norm", T(WK_F32, 0, 3), WK_VF(2));
  SAME("logsumexp", T(WK_F32, 2, 3), WK_VINTS(d1, 1));
  SAME("logsumexp", T(WK_I32, 2, 3), WK_VINTS(d1, 1), WK_VB(true));
  SAME("all", T(WK_F32, 2, 3));
  SAME("any", T(WK_U8, 2, 3));
  SAME("all.dim", T(WK_U8, 2, 3), WK_VI(1), WK_VB(true));
  SAME("any.dim", T(WK_I32, 2, 3), WK_VI(0));
  SAME_FAILS("any(): Dimension out of range", "any.dim", T(WK_I32, 2, 3), WK_VI(5));
  wk_scope_end();
}
END_TEST

START_TEST(test_scan_sort) {
  wk_scope_begin();
  SAME("cumsum", T(WK_F32, 2, 3), WK_VI(1));
  SAME("cumsum", T(WK_I32, 2, 3), WK_VI(0));
  SAME("cumsum", T(WK_BOOL, 4), WK_VI(0), WK_VDT(WK_F64));
  SAME_FAILS("cumsum(): Dimension out of range (expected to be in range of [-2, 1], but got 2)", "cumsum",
             T(WK_F32, 2, 3), WK_VI(2));
  SAME("sort", T(WK_F32, 2, 5));
  SAME("sort", T(WK_I16, 2, 5), WK_VI(0), WK_VB(true));
  SAME("sort", T0(WK_F32));
  SAME("topk", T(WK_F32, 2, 5), WK_VI(3));
  SAME("topk", T(WK_I64, 4, 5), WK_VI(2), WK_VI(0));
  SAME_FAILS("topk(): selected index k out of range (k = 6, dimension 1 has size 5)", "topk", T(WK_F32, 2, 5),
             WK_VI(6));
  SAME_FAILS("topk(): \"topk_cpu\" not implemented for 'Bool'", "topk", T(WK_BOOL, 5), WK_VI(1));
  wk_scope_end();
}
END_TEST

START_TEST(test_matrix_products) {
  wk_scope_begin();
  SAME("mm", T(WK_F32, 2, 3), T(WK_F32, 3, 4));
  SAME("mm", T(WK_I64, 2, 3), T(WK_I64, 3, 4));
  SAME("mm", T(WK_BF16, 2, 0), T(WK_BF16, 0, 4));
  SAME_FAILS("mm(): mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)", "mm", T(WK_F32, 2, 3),
             T(WK_F32, 4, 5));
  SAME_FAILS("mm(): expected m1 and m2 to have the same dtype, but got: float != double", "mm", T(WK_F32, 2, 3),
             T(WK_F64, 3, 4));
  SAME_FAILS("mm(): self must be a matrix, got 1D", "mm", T(WK_F32, 3), T(WK_F32, 3, 4));
  SAME_FAILS("\"addmm_impl_cpu_\" not implemented for 'Bool'", "mm", T(WK_BOOL, 2, 3), T(WK_BOOL, 3, 4));
  SAME("bmm", T(WK_F32, 5, 2, 3), T(WK_F32, 5, 3, 4));
  SAME_FAILS("bmm(): Expected size for first two dimensions of batch2 tensor to be: [5, 3] but got: [4, 3].", "bmm",
             T(WK_F32, 5, 2, 3), T(WK_F32, 4, 3, 4));
  SAME_FAILS("bmm(): batch1 must be a 3D tensor, got 2D", "bmm", T(WK_F32, 2, 3), T(WK_F32, 5, 3, 4));
  SAME("addmm", T(WK_F32, 4), T(WK_F32, 2, 3), T(WK_F32, 3, 4));
  SAME("addmm", T(WK_F64, 2, 1), T(WK_F64, 2, 3), T(WK_F64, 3, 4), WK_VF(0.5), WK_VF(2));
  SAME_FAILS("addmm(): self of shape [3, 4] cannot be broadcast to the result shape [2, 4]", "addmm",
             T(WK_F32, 3, 4), T(WK_F32, 2, 3), T(WK_F32, 3, 4));
  SAME_FAILS("addmm(): self and mat2 must have the same dtype, but got Double and Float", "addmm", T(WK_F64, 4),
             T(WK_F32, 2, 3), T(WK_F32, 3, 4));
  SAME("dot", T(WK_F32, 7), T(WK_F32, 7));
  SAME("dot", T(WK_I32, 7), T(WK_I32, 7));
  SAME_FAILS("dot(): inconsistent tensor size, expected tensor [3] and src [4] to have the same number of elements",
             "dot", T(WK_F32, 3), T(WK_F32, 4));
  SAME_FAILS("dot(): expected both vectors to have same dtype, but found Float and Double", "dot", T(WK_F32, 3),
             T(WK_F64, 3));
  SAME_FAILS("dot(): 1D tensors expected, but got 2D and 1D tensors", "dot", T(WK_F32, 3, 1), T(WK_F32, 3));
  /* the core's composites run on meta tensors over these */
  SAME("matmul", T(WK_F32, 6, 2, 3), T(WK_F32, 3, 4));
  SAME("matmul", T(WK_F32, 3), T(WK_F32, 3));
  SAME("matmul", T(WK_F32, 2, 3), T(WK_F32, 3));
  SAME("matmul", T(WK_F32, 7, 1, 2, 3), T(WK_F32, 5, 3, 4));
  SAME("linear", T(WK_F32, 8, 4), T(WK_F32, 5, 4), T(WK_F32, 5));
  SAME("linear", T(WK_F32, 2, 8, 4), T(WK_F32, 5, 4), WK_VNONE);
  SAME("outer", T(WK_F32, 3), T(WK_F32, 4));
  SAME_FAILS("cannot be multiplied", "linear", T(WK_F32, 8, 4), T(WK_F32, 5, 3), WK_VNONE);
  wk_scope_end();
}
END_TEST

/* A ResNet-style head on meta: global average pool as mean over H, W, the
 * classifier, the loss's log-sum-exp and the prediction's argmax. */
START_TEST(test_resnet_head_shapes) {
  wk_scope_begin();
  wk_options mo = {.dtype = WK_F32, .device = meta_dev()};
  wk_tensor *feat = wk_empty(WK_SHAPE(32, 512, 7, 7), mo);
  static const int64_t hw[] = {2, 3}, cls[] = {1};
  wk_value a[] = {WK_VT(feat), WK_VINTS(hw, 2), WK_VB(false)}, o[2];
  TU_OK(wk_call("mean.dim", a, 3, o));
  wk_tensor *pooled = o[0].u.t;
  ck_assert_int_eq(wk_tensor_dim(pooled), 2);
  ck_assert_int_eq(wk_tensor_size(pooled, 1), 512);
  wk_tensor *w = wk_empty(WK_SHAPE(1000, 512), mo), *b = wk_empty(WK_SHAPE(1000), mo);
  wk_tensor *logits = wk_linear(pooled, w, b);
  TU_NOTNULL(logits);
  ck_assert_int_eq(wk_tensor_device(logits).type, WK_DEVICE_META);
  ck_assert_int_eq(wk_tensor_size(logits, 0), 32);
  ck_assert_int_eq(wk_tensor_size(logits, 1), 1000);
  wk_value l[] = {WK_VT(logits), WK_VINTS(cls, 1), WK_VB(true)};
  TU_OK(wk_call("logsumexp", l, 3, o));
  ck_assert_int_eq(wk_tensor_size(o[0].u.t, 1), 1);
  wk_release(o[0].u.t);
  wk_value m[] = {WK_VT(logits), WK_VI(1)};
  TU_OK(wk_call("argmax", m, 2, o));
  ck_assert_int_eq(wk_tensor_dtype(o[0].u.t), WK_I64);
  ck_assert_int_eq(wk_tensor_dim(o[0].u.t), 1);
  wk_release(o[0].u.t);
  wk_release(pooled);
  wk_release(feat);
  wk_release(w);
  wk_release(b);
  wk_scope_end();
}
END_TEST

/* The optim plugin's update ops: the result is param (in place), on meta too. */
START_TEST(test_optim_steps) {
  wk_scope_begin();
  SAME("optim.sgd_step_", T(WK_F32, 3, 2), T(WK_F32, 3, 2), T(WK_F32, 3, 2), WK_VF(0.1), WK_VF(0.9));
  SAME("optim.sgd_step_", T(WK_F64, 4), T(WK_F64, 4), WK_VNONE, WK_VF(0.1), WK_VF(0));
  SAME_FAILS("optim.sgd_step_: grad has shape [2, 3] but param has shape [3, 2]", "optim.sgd_step_",
             T(WK_F32, 3, 2), T(WK_F32, 2, 3), T(WK_F32, 3, 2), WK_VF(0.1), WK_VF(0.9));
  SAME_FAILS("optim.sgd_step_: momentum 0.9 needs a momentum_buffer", "optim.sgd_step_", T(WK_F32, 3),
             T(WK_F32, 3), WK_VNONE, WK_VF(0.1), WK_VF(0.9));
  SAME_FAILS("optim.sgd_step_: param must be floating point, got i32", "optim.sgd_step_", T(WK_I32, 3),
             T(WK_I32, 3), WK_VNONE, WK_VF(0.1), WK_VF(0));
  SAME("optim.adam_step_", T(WK_F32, 5), T(WK_F32, 5), T(WK_F32, 5), T(WK_F32, 5), WK_VNONE, WK_VF(1), WK_VF(0.01));
  SAME_FAILS("optim.adam_step_: step must be >= 1", "optim.adam_step_", T(WK_F32, 5), T(WK_F32, 5), T(WK_F32, 5),
             T(WK_F32, 5), WK_VNONE, WK_VF(0), WK_VF(0.01));
  SAME_FAILS("optim.adam_step_: exp_avg_sq must be floating point, got i64", "optim.adam_step_", T(WK_F32, 5),
             T(WK_F32, 5), T(WK_F32, 5), T(WK_I64, 5), WK_VNONE, WK_VF(1), WK_VF(0.01));
  SAME("optim.rmsprop_step_", T(WK_F32, 5), T(WK_F32, 5), T(WK_F32, 5), WK_VNONE, WK_VNONE, WK_VF(0.01));
  SAME_FAILS("optim.rmsprop_step_: centered needs a grad_avg", "optim.rmsprop_step_", T(WK_F32, 5), T(WK_F32, 5),
             T(WK_F32, 5), WK_VNONE, WK_VNONE, WK_VF(0.01), WK_VF(0.99), WK_VF(1e-8), WK_VF(0), WK_VF(0),
             WK_VB(true));
  SAME("optim.adagrad_step_", T(WK_F64, 2, 2), T(WK_F64, 2, 2), T(WK_F64, 2, 2), WK_VF(1), WK_VF(0.1));
  SAME_FAILS("optim.adagrad_step_: state_sum has shape [4] but param has shape [2, 2]", "optim.adagrad_step_",
             T(WK_F64, 2, 2), T(WK_F64, 2, 2), T(WK_F64, 4), WK_VF(1), WK_VF(0.1));
  wk_scope_end();
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("meta_reduce");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_test(tc, test_sum_prod_mean);
  tcase_add_test(tc, test_extremes);
  tcase_add_test(tc, test_statistics);
  tcase_add_test(tc, test_scan_sort);
  tcase_add_test(tc, test_matrix_products);
  tcase_add_test(tc, test_resnet_head_shapes);
  tcase_add_test(tc, test_optim_steps);
  suite_add_tcase(s, tc);
  return s;
}

TU_MAIN(make_suite)
