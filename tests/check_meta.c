/* Check suite: meta functions and the meta device. Ops decide their meaning
 * once in the core: the same results' shapes and dtypes, and the same error
 * messages, on cpu and on meta, where tensors hold no data. */
#include "testutil.h"

static wk_device meta_dev(void) { return (wk_device){WK_DEVICE_META, 0}; }

static wk_tensor *meta_empty(const int64_t *sizes, int ndim, wk_dtype dt) {
  return wk_empty(sizes, ndim, (wk_options){.dtype = dt, .device = meta_dev()});
}

START_TEST(test_meta_device_is_builtin) {
  ck_assert_int_eq(wk_device_type_find("meta"), WK_DEVICE_META);
  wk_device d;
  TU_OK(wk_device_parse("meta", &d));
  ck_assert_int_eq(d.type, WK_DEVICE_META);
  char b[32];
  ck_assert_str_eq(wk_device_str(d, b, sizeof b), "meta");
}
END_TEST

START_TEST(test_meta_empty_has_no_data) {
  wk_scope_begin();
  wk_tensor *t = meta_empty(WK_SHAPE(1000, 1000, 100), WK_F32);
  TU_NOTNULL(t);
  ck_assert_ptr_null(wk_tensor_data(t));
  ck_assert_int_eq(wk_tensor_dim(t), 3);
  ck_assert_int_eq(wk_tensor_size(t, 2), 100);
  ck_assert_int_eq(wk_tensor_device(t).type, WK_DEVICE_META);
  char *s = wk_tensor_to_string(t);
  TU_NOTNULL(s);
  ck_assert_str_eq(s, "tensor(..., device='meta', size=(1000, 1000, 100))");
  wk_free(s);
  wk_tensor *i = meta_empty(WK_SHAPE(3), WK_I32);
  s = wk_tensor_to_string(i);
  ck_assert_str_eq(s, "tensor(..., device='meta', size=(3,), dtype=torch.int32)");
  wk_free(s);
  double v;
  ck_assert_int_ne(wk_item(wk_sum(i), &v), WK_OK); /* no data to read */
  wk_scope_end();
}
END_TEST

START_TEST(test_meta_reading_fails_cleanly) {
  wk_scope_begin();
  wk_tensor *t = meta_empty(WK_SHAPE(1), WK_F32);
  double v = 0;
  ck_assert_int_eq(wk_item(t, &v), WK_ERR_UNSUPPORTED);
  ck_assert_str_eq(wk_last_error_message(), "Cannot copy out of meta tensor; no data!");
  ck_assert_ptr_null(wk_to_device(t, wk_cpu()));
  wk_clear_error();
  wk_scope_end();
}
END_TEST

START_TEST(test_meta_to_meta_keeps_shape) {
  wk_scope_begin();
  wk_tensor *x = wk_ones(WK_SHAPE(2, 3), (wk_options){.dtype = WK_F64});
  wk_tensor *m = wk_to_device(x, meta_dev());
  TU_NOTNULL(m);
  ck_assert_int_eq(wk_tensor_device(m).type, WK_DEVICE_META);
  ck_assert_int_eq(wk_tensor_dtype(m), WK_F64);
  ck_assert_int_eq(wk_tensor_size(m, 1), 3);
  wk_scope_end();
}
END_TEST

/* Runs f on cpu tensors and on meta tensors of the same shapes and dtypes:
 * both succeed with equal result shapes and dtypes, or both fail with the
 * same message. */
typedef wk_tensor *(*binop)(wk_tensor *, wk_tensor *);
static void same_on_meta(binop f, const int64_t *sa, int na, wk_dtype da, const int64_t *sb, int nb, wk_dtype db) {
  wk_scope_begin();
  wk_tensor *a = wk_zeros(sa, na, (wk_options){.dtype = da}), *b = wk_ones(sb, nb, (wk_options){.dtype = db});
  wk_tensor *rc = f(a, b);
  char cpu_msg[512] = "";
  if (!rc) snprintf(cpu_msg, sizeof cpu_msg, "%s", wk_last_error_message());
  wk_clear_error();
  wk_tensor *rm = f(meta_empty(sa, na, da), meta_empty(sb, nb, db));
  if (!rc) {
    ck_assert_ptr_null(rm);
    ck_assert_str_eq(wk_last_error_message(), cpu_msg);
    wk_clear_error();
  } else {
    TU_NOTNULL(rm);
    ck_assert_int_eq(wk_tensor_device(rm).type, WK_DEVICE_META);
    ck_assert_int_eq(wk_tensor_dtype(rm), wk_tensor_dtype(rc));
    ck_assert_int_eq(wk_tensor_dim(rm), wk_tensor_dim(rc));
    for (int i = 0; i < wk_tensor_dim(rc); i++) ck_assert_int_eq(wk_tensor_size(rm, i), wk_tensor_size(rc, i));
  }
  wk_scope_end();
}

START_TEST(test_meta_binary_matches_cpu) {
  same_on_meta(wk_add, WK_SHAPE(4, 1, 3), WK_F32, WK_SHAPE(5, 1), WK_F32);
  same_on_meta(wk_add, WK_SHAPE(2, 3), WK_I64, WK_SHAPE(3), WK_F32);
  same_on_meta(wk_div, WK_SHAPE(2, 3), WK_I32, WK_SHAPE(2, 3), WK_I64);
  same_on_meta(wk_lt, WK_SHAPE(2, 3), WK_F64, WK_SHAPE(1), WK_F32);
  same_on_meta(wk_add, WK_SHAPE(2, 3), WK_F32, WK_SHAPE(4), WK_F32);  /* broadcast error */
  same_on_meta(wk_sub, WK_SHAPE(2), WK_BOOL, WK_SHAPE(2), WK_BOOL);   /* bool subtraction */
  same_on_meta(wk_add_, WK_SHAPE(3), WK_F32, WK_SHAPE(2, 3), WK_F32); /* in place cannot grow */
  same_on_meta(wk_add_, WK_SHAPE(3), WK_I64, WK_SHAPE(3), WK_F32);    /* float into long */
  same_on_meta(wk_mul_, WK_SHAPE(2, 3), WK_F32, WK_SHAPE(3), WK_F32);
}
END_TEST

START_TEST(test_meta_unary_rules) {
  wk_scope_begin();
  wk_tensor *i = meta_empty(WK_SHAPE(2, 2), WK_I64);
  ck_assert_int_eq(wk_tensor_dtype(wk_exp(i)), WK_F32);     /* FLOAT */
  ck_assert_int_eq(wk_tensor_dtype(wk_neg(i)), WK_I64);     /* KEEP */
  ck_assert_int_eq(wk_tensor_dtype(wk_floor(i)), WK_I64);   /* ROUNDING */
  ck_assert_int_eq(wk_tensor_dtype(wk_logical_not(i)), WK_BOOL);
  ck_assert_ptr_null(wk_silu(i));                            /* FLOAT_ONLY */
  ck_assert_str_eq(wk_last_error_message(), "silu: \"silu_cpu\" not implemented for 'Long'");
  wk_clear_error();
  wk_tensor *c = wk_zeros(WK_SHAPE(2, 2), (wk_options){.dtype = WK_I64});
  ck_assert_ptr_null(wk_silu(c));
  ck_assert_str_eq(wk_last_error_message(), "silu: \"silu_cpu\" not implemented for 'Long'");
  wk_clear_error();
  wk_tensor *f = meta_empty(WK_SHAPE(2, 2), WK_F32);
  ck_assert_ptr_eq(wk_relu_(f), f); /* in place returns its target */
  wk_scope_end();
}
END_TEST

START_TEST(test_meta_factories) {
  wk_scope_begin();
  wk_tensor *z = wk_zeros(WK_SHAPE(3, 4), (wk_options){.device = meta_dev()});
  if (!z) { /* factories get their meta functions with the factory family */
    wk_clear_error();
    wk_scope_end();
    return;
  }
  ck_assert_int_eq(wk_tensor_device(z).type, WK_DEVICE_META);
  ck_assert_int_eq(wk_tensor_size(z, 1), 4);
  wk_scope_end();
}
END_TEST

START_TEST(test_meta_op_meta_without_running) {
  wk_scope_begin();
  wk_tensor *a = wk_zeros(WK_SHAPE(4, 1), (wk_options){0}), *b = wk_zeros(WK_SHAPE(1, 5), (wk_options){.dtype = WK_F64});
  wk_meta_out mo[WK_MAX_OUTS];
  wk_value args[] = {WK_VT(a), WK_VT(b)};
  TU_OK(wk_op_meta(wk_op_find("mul"), args, 2, mo));
  ck_assert_int_eq(mo[0].ndim, 2);
  ck_assert_int_eq(mo[0].sizes[0], 4);
  ck_assert_int_eq(mo[0].sizes[1], 5);
  ck_assert_int_eq(mo[0].dtype, WK_F64);
  ck_assert_int_eq(mo[0].device.type, WK_DEVICE_CPU);
  ck_assert_int_ne(wk_op_meta(NULL, args, 2, mo), WK_OK);
  ck_assert_int_ne(wk_op_meta(wk_op_find("mul"), args, 2, NULL), WK_OK);
  wk_clear_error();
  wk_scope_end();
}
END_TEST

/* A third party's op: its own meta function makes it run on meta. */
static wk_status third_party_meta(wk_op *op, const wk_value *args, wk_meta_out *outs) {
  wk_tensor *x = args[0].u.t;
  if (wk_tensor_dim(x) != 2)
    return wk_error(WK_ERR_SHAPE, "%s: expected a 2-D tensor, got %d dims", wk_op_name(op), wk_tensor_dim(x));
  outs[0].dtype = wk_tensor_dtype(x);
  outs[0].ndim = 1;
  outs[0].sizes[0] = wk_tensor_size(x, 0) * 2;
  return WK_OK;
}

START_TEST(test_meta_third_party_op) {
  wk_op *op = wk_op_declare("meta_test_double_rows(Tensor self) -> Tensor", 0);
  TU_NOTNULL(op);
  ck_assert(!wk_op_has_meta(op));
  wk_scope_begin();
  wk_value out[1], args[] = {WK_VT(meta_empty(WK_SHAPE(3, 2), WK_F32))};
  ck_assert_int_eq(wk_op_call(op, args, 1, out), WK_ERR_NO_KERNEL);
  ck_assert(strstr(wk_last_error_message(), "no meta function") != NULL);
  wk_clear_error();
  TU_OK(wk_op_set_meta(op, third_party_meta));
  ck_assert(wk_op_has_meta(op));
  ck_assert_int_ne(wk_op_set_meta(op, (wk_meta_fn)test_meta_device_is_builtin), WK_OK); /* only once */
  wk_clear_error();
  TU_OK(wk_op_call(op, args, 1, out));
  ck_assert_int_eq(wk_tensor_size(out[0].u.t, 0), 6);
  wk_value bad[] = {WK_VT(meta_empty(WK_SHAPE(3), WK_F32))};
  ck_assert_int_eq(wk_op_call(op, bad, 1, out), WK_ERR_SHAPE);
  ck_assert_str_eq(wk_last_error_message(), "meta_test_double_rows: expected a 2-D tensor, got 1 dims");
  wk_clear_error();
  ck_assert_int_ne(wk_op_set_meta(NULL, third_party_meta), WK_OK);
  ck_assert_int_ne(wk_op_set_meta(op, NULL), WK_OK);
  ck_assert(!wk_op_has_meta(NULL));
  wk_clear_error();
  wk_scope_end();
}
END_TEST

/* wk_set_default_device: the program's factories land on meta (a model is
 * built without data), ops on cpu tensors and their temporaries stay cpu. */
START_TEST(test_meta_default_device) {
  wk_scope_begin();
  wk_device prev = wk_set_default_device(meta_dev());
  ck_assert_int_eq(prev.type, WK_DEVICE_DEFAULT);
  ck_assert_int_eq(wk_default_device().type, WK_DEVICE_META);
  wk_tensor *e = wk_empty(WK_SHAPE(1000, 1000), (wk_options){0});
  wk_tensor *z = wk_zeros(WK_SHAPE(3), (wk_options){0});
  wk_tensor *c = wk_ones(WK_SHAPE(2), (wk_options){.device = wk_cpu()}); /* explicit device wins */
  ck_assert_int_eq(wk_tensor_device(e).type, WK_DEVICE_META);
  ck_assert_int_eq(wk_tensor_device(z).type, WK_DEVICE_META);
  ck_assert_int_eq(wk_tensor_device(c).type, WK_DEVICE_CPU);
  wk_tensor *s = wk_sum(wk_mul(c, c)); /* a cpu op, its kernel's temporaries on cpu */
  ck_assert_int_eq(wk_tensor_device(s).type, WK_DEVICE_CPU);
  double v = 0;
  TU_OK(wk_item(s, &v));
  ck_assert(v == 2.0);
  wk_set_default_device(prev);
  ck_assert_int_eq(wk_tensor_device(wk_zeros(WK_SHAPE(3), (wk_options){0})).type, WK_DEVICE_CPU);
  wk_set_default_device((wk_device){WK_MAX_DEVICE_TYPES - 1, 0}); /* no such type: refused */
  ck_assert_int_eq(wk_last_error(), WK_ERR_DEVICE);
  ck_assert_int_eq(wk_default_device().type, WK_DEVICE_DEFAULT);
  wk_clear_error();
  wk_scope_end();
}
END_TEST

/* Every op declared (standard and the loaded plugins') runs on meta. */
START_TEST(test_meta_every_standard_op_has_one) {
  int missing = 0;
  char list[4096] = "";
  size_t k = 0;
  for (int i = 0; i < wk_op_count(); i++) {
    wk_op *op = wk_op_at(i);
    const char *n = wk_op_name(op);
    if (strncmp(n, "meta_test_", 10) == 0 || strchr(n, ':')) continue; /* this suite's own ops */
    if (!wk_op_has_meta(op)) {
      missing++;
      if (k < sizeof list - 64) k += (size_t)snprintf(list + k, sizeof list - k, " %s", n);
    }
  }
  ck_assert_msg(missing == 0, "%d ops have no meta function:%s", missing, list);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("meta");
  TCase *tc = tcase_create("meta");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_test(tc, test_meta_device_is_builtin);
  tcase_add_test(tc, test_meta_empty_has_no_data);
  tcase_add_test(tc, test_meta_reading_fails_cleanly);
  tcase_add_test(tc, test_meta_to_meta_keeps_shape);
  tcase_add_test(tc, test_meta_binary_matches_cpu);
  tcase_add_test(tc, test_meta_unary_rules);
  tcase_add_test(tc, test_meta_factories);
  tcase_add_test(tc, test_meta_op_meta_without_running);
  tcase_add_test(tc, test_meta_third_party_op);
  tcase_add_test(tc, test_meta_default_device);
  tcase_add_test(tc, test_meta_every_standard_op_has_one);
  suite_add_tcase(s, tc);
  return s;
}
TU_MAIN(make_suite)
