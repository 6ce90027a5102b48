/* Check suite: meta functions of the neural-network ops (softmax, norms,
 * dropout, embedding, pad, losses and their backward ops): the same result
 * shapes and dtypes, and the same error messages, on cpu and on the meta
 * device; the core's loss composites agree with the cpu plugin's kernels. */
#include <math.h>
#include <string.h>

#include "testutil.h"

static wk_device meta_dev(void) {
  return (wk_device){WK_DEVICE_META, 0};
}

#define MAXA 12
/* Calls op `name` with args on cpu, then with every tensor argument moved to
 * the meta device: both succeed with equal result shapes and dtypes, or both
 * fail with the same message. Returns whether the cpu call succeeded. */
static bool same_on_meta(const char *name, const wk_value *args, int n) {
  wk_scope_begin();
  wk_value cpu_out[4], meta_out[4], margs[MAXA];
  wk_status sc = wk_call(name, args, n, cpu_out);
  char cpu_msg[512] = "";
  if (sc) snprintf(cpu_msg, sizeof cpu_msg, "%s", wk_last_error_message());
  wk_clear_error();
  for (int i = 0; i < n; i++) {
    margs[i] = args[i];
    if (args[i].tag == WK_V_TENSOR) {
      margs[i].u.t = wk_to_device(args[i].u.t, meta_dev());
      TU_NOTNULL(margs[i].u.t);
    }
  }
  wk_status sm = wk_call(name, margs, n, meta_out);
  if (sc) {
    ck_assert_msg(sm != WK_OK, "%s: cpu failed (%s) but meta succeeded", name, cpu_msg);
    ck_assert_str_eq(wk_last_error_message(), cpu_msg);
    wk_clear_error();
  } else {
    ck_assert_msg(sm == WK_OK, "%s: meta failed: %s", name, wk_last_error_message());
    int nouts = wk_op_num_outs(wk_op_find(name));
    for (int k = 0; k < nouts; k++) {
      if (cpu_out[k].tag != WK_V_TENSOR || meta_out[k].tag != WK_V_TENSOR) continue;
      wk_tensor *rc = cpu_out[k].u.t, *rm = meta_out[k].u.t;
      ck_assert_int_eq(wk_tensor_device(rm).type, WK_DEVICE_META);
      ck_assert_msg(wk_tensor_dtype(rm) == wk_tensor_dtype(rc), "%s result %d: dtype %s on meta, %s on cpu", name, k,
                    wk_dtype_name(wk_tensor_dtype(rm)), wk_dtype_name(wk_tensor_dtype(rc)));
      ck_assert_int_eq(wk_tensor_dim(rm), wk_tensor_dim(rc));
      for (int i = 0; i < wk_tensor_dim(rc); i++) ck_assert_int_eq(wk_tensor_size(rm, i), wk_tensor_size(rc, i));
    }
  }
  wk_scope_end();
  return sc == WK_OK;
}

#define CALL(name, ...) \
  same_on_meta(name, (const wk_value[]){__VA_ARGS__}, (int)(sizeof((wk_value[]){__VA_ARGS__}) / sizeof(wk_value)))
#define OK(name, ...) ck_assert_msg(CALL(name, __VA_ARGS__), "%s should succeed", name)
#define FAILS(name, ...) ck_assert_msg(!CALL(name, __VA_ARGS__), "%s should fail", name)

static wk_tensor *R(const int64_t *s, int n, wk_dtype dt) {
  return tu_rand(s, n, dt, -1, 1, 7);
}
#define RT(dt, ...) WK_VT(R(WK_SHAPE(__VA_ARGS__), dt))
#define IDX(shape, ...) WK_VT(TU_T(WK_I64, shape, __VA_ARGS__))
#define INTS(...) WK_VINTS(((const int64_t[]){__VA_ARGS__}), (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))

START_TEST(test_meta_nn_softmax) {
  wk_scope_begin();
  OK("softmax", RT(WK_F32, 2, 3), WK_VI(1), WK_VNONE);
  OK("log_softmax", RT(WK_F32, 2, 3), WK_VI(-1), WK_VDT(WK_F64));
  FAILS("softmax", RT(WK_F32, 2, 3), WK_VI(2), WK_VNONE);
  FAILS("softmax", RT(WK_I64, 2, 3), WK_VI(0), WK_VNONE);
  OK("softmax_backward_data", RT(WK_F32, 2, 3), RT(WK_F32, 2, 3), WK_VI(1), WK_VDT(WK_F32));
  FAILS("log_softmax_backward_data", RT(WK_F32, 2, 3), RT(WK_F32, 3, 2), WK_VI(1), WK_VDT(WK_F32));
  FAILS("softmax_backward_data", RT(WK_F32, 2, 3), RT(WK_F32, 2, 3), WK_VI(1), WK_VDT(WK_I32));
  wk_scope_end();
}
END_TEST

START_TEST(test_meta_nn_batch_norm) {
  wk_scope_begin();
  wk_value x = RT(WK_F32, 4, 3, 2, 2), w = RT(WK_F32, 3), b = RT(WK_F32, 3);
  wk_value rm = WK_VT(wk_zeros(WK_SHAPE(3), (wk_options){0})), rv = WK_VT(wk_ones(WK_SHAPE(3), (wk_options){0}));
  OK("batch_norm", x, w, b, rm, rv, WK_VB(true), WK_VF(0.1), WK_VF(1e-5));
  OK("batch_norm", x, w, b, rm, rv, WK_VB(false), WK_VF(0.1), WK_VF(1e-5));
  OK("batch_norm", RT(WK_BF16, 4, 3), w, b, rm, rv, WK_VB(true), WK_VF(0.1), WK_VF(1e-5)); /* f32 statistics */
  FAILS("batch_norm", x, w, b, rm, WK_VNONE, WK_VB(false), WK_VF(0.1), WK_VF(1e-5));
  FAILS("batch_norm", RT(WK_F32, 1, 3), w, b, rm, rv, WK_VB(true), WK_VF(0.1), WK_VF(1e-5));
  FAILS("batch_norm", x, RT(WK_F32, 4), b, rm, rv, WK_VB(true), WK_VF(0.1), WK_VF(1e-5));
  FAILS("batch_norm", RT(WK_F32, 4), w, b, rm, rv, WK_VB(true), WK_VF(0.1), WK_VF(1e-5));
  FAILS("batch_norm", RT(WK_I32, 4, 3), w, b, rm, rv, WK_VB(true), WK_VF(0.1), WK_VF(1e-5));
  wk_value sm = RT(WK_F32, 3), si = RT(WK_F32, 3);
  OK("batch_norm_backward", x, x, w, rm, rv, sm, si, WK_VB(true), WK_VF(1e-5), INTS(1, 1, 1));
  OK("batch_norm_backward", x, x, WK_VNONE, rm, rv, sm, si, WK_VB(false), WK_VF(1e-5), INTS(1, 0, 1));
  FAILS("batch_norm_backward", x, x, w, rm, rv, WK_VNONE, si, WK_VB(true), WK_VF(1e-5), INTS(1, 1, 1));
  FAILS("batch_norm_backward", RT(WK_F32, 4, 3), x, w, rm, rv, sm, si, WK_VB(true), WK_VF(1e-5), INTS(1, 1, 1));
  wk_scope_end();
}
END_TEST

START_TEST(test_meta_nn_layer_norm) {
  wk_scope_begin();
  wk_value x = RT(WK_F32, 2, 3, 4), w = RT(WK_F32, 3, 4);
  OK("layer_norm", x, INTS(3, 4), w, w, WK_VF(1e-5));
  OK("layer_norm", x, INTS(4), WK_VNONE, WK_VNONE, WK_VF(1e-5));
  FAILS("layer_norm", x, INTS(3), WK_VNONE, WK_VNONE, WK_VF(1e-5));
  FAILS("layer_norm", x, INTS(3, 4), RT(WK_F32, 4), WK_VNONE, WK_VF(1e-5));
  FAILS("layer_norm", x, WK_VINTS(NULL, 0), WK_VNONE, WK_VNONE, WK_VF(1e-5));
  FAILS("layer_norm", RT(WK_I64, 2, 4), INTS(4), WK_VNONE, WK_VNONE, WK_VF(1e-5));
  wk_value st = RT(WK_F32, 2, 1, 1);
  OK("layer_norm_backward", x, x, INTS(3, 4), st, st, w, w, INTS(1, 1, 1));
  FAILS("layer_norm_backward", x, x, INTS(3, 4), RT(WK_F32, 3), st, w, w, INTS(1, 1, 1));
  FAILS("layer_norm_backward", x, x, INTS(3, 4), st, st, w, w, INTS(1, 1));
  wk_scope_end();
}
END_TEST

START_TEST(test_meta_nn_dropout_embedding_pad) {
  wk_scope_begin();
  OK("dropout", RT(WK_F32, 3, 4), WK_VF(0.5), WK_VB(true));
  OK("dropout", RT(WK_I64, 3, 4), WK_VF(0.5), WK_VB(false));
  FAILS("dropout", RT(WK_F32, 3, 4), WK_VF(1.5), WK_VB(true));
  FAILS("dropout", RT(WK_I64, 3, 4), WK_VF(0.5), WK_VB(true));
  wk_value emb = RT(WK_F32, 10, 4);
  OK("embedding", emb, IDX((2, 3), 0, 1, 2, 9, 8, 7), WK_VI(-1));
  FAILS("embedding", RT(WK_F32, 10), IDX((2), 0, 1), WK_VI(-1));
  FAILS("embedding", emb, RT(WK_F32, 2), WK_VI(-1));
  OK("embedding_dense_backward", RT(WK_F32, 2, 3, 4), IDX((2, 3), 0, 1, 2, 9, 8, 7), WK_VI(10), WK_VI(-1));
  FAILS("embedding_dense_backward", RT(WK_F32, 2, 4), IDX((2, 3), 0, 1, 2, 9, 8, 7), WK_VI(10), WK_VI(-1));
  wk_value p = RT(WK_F32, 1, 2, 3, 3);
  OK("pad", p, INTS(1, 1, 2, 0), WK_VS("constant"), WK_VF(0.5));
  OK("pad", p, INTS(2, 2, 1, 1), WK_VS("reflect"), WK_VNONE);
  OK("pad", p, INTS(-1, 1), WK_VS("replicate"), WK_VNONE);
  FAILS("pad", p, INTS(3, 3), WK_VS("reflect"), WK_VNONE);
  FAILS("pad", p, INTS(1, 1, 1), WK_VS("constant"), WK_VNONE);
  FAILS("pad", p, INTS(1, 1), WK_VS("mirror"), WK_VNONE);
  FAILS("pad", p, INTS(4, 4), WK_VS("circular"), WK_VNONE);
  FAILS("pad", p, INTS(1, 1), WK_VS("reflect"), WK_VF(2));
  FAILS("pad", p, INTS(-5, 1), WK_VS("constant"), WK_VNONE);
  OK("pad_backward", RT(WK_F32, 1, 2, 5, 7), p, INTS(2, 2, 1, 1), WK_VS("reflect"));
  FAILS("pad_backward", RT(WK_F32, 1, 2, 5, 6), p, INTS(2, 2, 1, 1), WK_VS("reflect"));
  wk_scope_end();
}
END_TEST

START_TEST(test_meta_nn_losses) {
  wk_scope_begin();
  wk_value x = RT(WK_F32, 3, 5), t = IDX((3), 0, 4, 2), w = RT(WK_F32, 5);
  for (int r = 0; r < 3; r++) {
    OK("cross_entropy", x, t, w, WK_VI(r), WK_VI(-100), WK_VF(0.1));
    OK("nll_loss", x, t, WK_VNONE, WK_VI(r), WK_VI(2));
    OK("mse_loss", x, RT(WK_F64, 5), WK_VI(r));
    OK("binary_cross_entropy_with_logits", x, RT(WK_F32, 3, 5), w, WK_VNONE, WK_VI(r));
  }
  OK("cross_entropy", x, RT(WK_F64, 3, 5), WK_VNONE, WK_VI(1), WK_VI(-100), WK_VF(0)); /* probabilities */
  OK("cross_entropy", RT(WK_F32, 2, 5, 4), IDX((2, 4), 0, 1, 2, 3, 4, 0, 1, 2), WK_VNONE, WK_VI(0), WK_VI(-100),
     WK_VF(0));
  FAILS("cross_entropy", x, IDX((2), 0, 1), WK_VNONE, WK_VI(1), WK_VI(-100), WK_VF(0)); /* batch sizes */
  FAILS("cross_entropy", x, t, RT(WK_F32, 4), WK_VI(1), WK_VI(-100), WK_VF(0));
  FAILS("cross_entropy", x, t, WK_VNONE, WK_VI(1), WK_VI(-100), WK_VF(1.5));
  FAILS("cross_entropy", x, t, WK_VNONE, WK_VI(3), WK_VI(-100), WK_VF(0));
  FAILS("cross_entropy", x, RT(WK_F32, 3, 5), WK_VNONE, WK_VI(1), WK_VI(0), WK_VF(0));
  FAILS("cross_entropy", RT(WK_F32, 3), IDX((1), 0), WK_VNONE, WK_VI(1), WK_VI(-100), WK_VF(0));
  FAILS("nll_loss", x, RT(WK_F32, 3), WK_VNONE, WK_VI(1), WK_VI(-100));
  FAILS("nll_loss", RT(WK_I64, 3, 5), t, WK_VNONE, WK_VI(1), WK_VI(-100));
  FAILS("mse_loss", x, RT(WK_F32, 4), WK_VI(1));
  FAILS("mse_loss", RT(WK_I64, 3), RT(WK_I32, 3), WK_VI(1));
  FAILS("binary_cross_entropy_with_logits", x, RT(WK_F32, 5), WK_VNONE, WK_VNONE, WK_VI(1));
  FAILS("binary_cross_entropy_with_logits", x, RT(WK_F32, 3, 5), RT(WK_F32, 4), WK_VNONE, WK_VI(1));
  wk_scope_end();
}
END_TEST

/* The cross-entropy batch check has PyTorch's message, decided once for every device. */
START_TEST(test_meta_nn_batch_message) {
  wk_scope_begin();
  wk_tensor *x = wk_empty(WK_SHAPE(3, 5), (wk_options){.device = meta_dev()});
  wk_tensor *t = wk_empty(WK_SHAPE(2), (wk_options){.dtype = WK_I64, .device = meta_dev()});
  wk_value out[1];
  ck_assert_int_ne(wk_call("cross_entropy", (wk_value[]){WK_VT(x), WK_VT(t)}, 2, out), WK_OK);
  ck_assert_str_eq(wk_last_error_message(),
                   "cross_entropy(): Expected input batch_size (3) to match target batch_size (2).");
  wk_clear_error();
  wk_scope_end();
}
END_TEST

/* A ResNet-50 head and stem on the meta device: shapes without data. */
START_TEST(test_meta_nn_resnet_shapes) {
  wk_scope_begin();
  wk_options mo = {.device = meta_dev()};
  wk_tensor *x = wk_empty(WK_SHAPE(32, 64, 112, 112), mo), *c = wk_empty(WK_SHAPE(64), mo);
  wk_tensor *rm = wk_empty(WK_SHAPE(64), mo), *rv = wk_empty(WK_SHAPE(64), mo);
  wk_value bn[3];
  TU_OK(wk_call("batch_norm",
                (wk_value[]){WK_VT(x), WK_VT(c), WK_VT(c), WK_VT(rm), WK_VT(rv), WK_VB(true), WK_VF(0.1), WK_VF(1e-5)},
                8, bn));
  ck_assert_int_eq(wk_tensor_dim(bn[0].u.t), 4);
  ck_assert_int_eq(wk_tensor_size(bn[0].u.t, 3), 112);
  ck_assert_int_eq(wk_tensor_size(bn[1].u.t, 0), 64);
  wk_tensor *logits = wk_empty(WK_SHAPE(32, 1000), mo);
  wk_tensor *tg = wk_empty(WK_SHAPE(32), (wk_options){.dtype = WK_I64, .device = meta_dev()});
  wk_value loss[1];
  TU_OK(wk_call("cross_entropy", (wk_value[]){WK_VT(logits), WK_VT(tg)}, 2, loss));
  ck_assert_int_eq(wk_tensor_dim(loss[0].u.t), 0);
  ck_assert_int_eq(wk_tensor_device(loss[0].u.t).type, WK_DEVICE_META);
  wk_value sm[1];
  TU_OK(wk_call("log_softmax", (wk_value[]){WK_VT(logits), WK_VI(1)}, 2, sm));
  ck_assert_int_eq(wk_tensor_size(sm[0].u.t, 1), 1000);
  wk_scope_end();
}
END_TEST

/* The core's loss composites (fallback priority, every device) give the cpu
 * kernels' values on cpu tensors. */
static int composite_index(wk_op *op) {
  for (int i = 0, n = wk_op_num_kernels(op); i < n; i++) {
    const char *name = NULL, *plugin = NULL;
    int32_t dev = 0, prio = 0;
    TU_OK(wk_op_kernel_info(op, i, &dev, &prio, &name, &plugin));
    if (name && strcmp(name, "core.composite_loss") == 0) return i;
  }
  return -1;
}

static void composite_matches_cpu(const char *name, const wk_value *args, int n) {
  wk_scope_begin();
  wk_op *op = wk_op_find(name);
  TU_NOTNULL(op);
  int k = composite_index(op);
  ck_assert_msg(k >= 0, "%s has no core composite", name);
  wk_value ref[1], got[1];
  TU_OK(wk_call(name, args, n, ref));
  wk_value full[MAXA];
  int nargs = wk_op_num_args(op);
  for (int i = 0; i < nargs; i++) {
    const wk_value *d = wk_op_arg_default(op, i);
    full[i] = i < n ? args[i] : d ? *d : WK_VNONE;
  }
  TU_OK(wk_op_call_kernel(op, k, full, nargs, got));
  wk_tensor *a = ref[0].u.t, *b = got[0].u.t;
  ck_assert_int_eq(wk_tensor_dtype(a), wk_tensor_dtype(b));
  ck_assert_int_eq(wk_tensor_dim(a), wk_tensor_dim(b));
  double *va = tu_values(a);
  TU_CLOSE(b, va, wk_tensor_numel(a), 1e-5, 1e-6);
  free(va);
  wk_scope_end();
}
#define MATCH(name, ...)                                       \
  composite_matches_cpu(name, (const wk_value[]){__VA_ARGS__}, \
                        (int)(sizeof((wk_value[]){__VA_ARGS__}) / sizeof(wk_value)))

START_TEST(test_meta_nn_composites_match_cpu) {
  wk_scope_begin();
  wk_value x = RT(WK_F32, 4, 5), t = IDX((4), 0, 4, 2, 1), w = WK_VT(tu_rand(WK_SHAPE(5), WK_F32, 0.5, 2, 3));
  wk_value x3 = RT(WK_F64, 2, 5, 3), t3 = IDX((2, 3), 0, 1, 4, 3, 2, 2);
  for (int r = 0; r < 3; r++) {
    MATCH("cross_entropy", x, t, w, WK_VI(r), WK_VI(2), WK_VF(0.1));
    MATCH("cross_entropy", x3, t3, WK_VNONE, WK_VI(r), WK_VI(-100), WK_VF(0));
    MATCH("cross_entropy", x, WK_VT(wk_softmax(R(WK_SHAPE(4, 5), WK_F32), 1)), w, WK_VI(r), WK_VI(-100), WK_VF(0.2));
    MATCH("nll_loss", x, t, w, WK_VI(r), WK_VI(4));
    MATCH("nll_loss", x3, t3, WK_VNONE, WK_VI(r), WK_VI(-100));
    MATCH("mse_loss", x, RT(WK_F32, 5), WK_VI(r));
    MATCH("binary_cross_entropy_with_logits", x, WK_VT(tu_rand(WK_SHAPE(4, 5), WK_F32, 0, 1, 5)), w,
          WK_VT(tu_rand(WK_SHAPE(5), WK_F32, 0.5, 3, 9)), WK_VI(r));
  }
  wk_scope_end();
}
END_TEST

/* A target out of range is found by the composite too, with the cpu's message. */
START_TEST(test_meta_nn_composite_target_bounds) {
  wk_scope_begin();
  wk_op *op = wk_op_find("nll_loss");
  int k = composite_index(op);
  ck_assert_int_ge(k, 0);
  wk_value args[5] = {RT(WK_F32, 2, 3), IDX((2), 0, 7), WK_VNONE, WK_VI(1), WK_VI(-100)}, out[1];
  ck_assert_int_ne(wk_op_call_kernel(op, k, args, 5, out), WK_OK);
  ck_assert_str_eq(wk_last_error_message(), "nll_loss(): Target 7 is out of bounds.");
  wk_clear_error();
  ck_assert_int_ne(wk_call("nll_loss", args, 5, out), WK_OK);
  ck_assert_str_eq(wk_last_error_message(), "nll_loss(): Target 7 is out of bounds.");
  wk_clear_error();
  wk_scope_end();
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("meta_nn");
  TCase *tc = tcase_create("meta_nn");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_test(tc, test_meta_nn_softmax);
  tcase_add_test(tc, test_meta_nn_batch_norm);
  tcase_add_test(tc, test_meta_nn_layer_norm);
  tcase_add_test(tc, test_meta_nn_dropout_embedding_pad);
  tcase_add_test(tc, test_meta_nn_losses);
  tcase_add_test(tc, test_meta_nn_batch_message);
  tcase_add_test(tc, test_meta_nn_resnet_shapes);
  tcase_add_test(tc, test_meta_nn_composites_match_cpu);
  tcase_add_test(tc, test_meta_nn_composite_target_bounds);
  suite_add_tcase(s, tc);
  return s;
}
TU_MAIN(make_suite)
