/* check_frontend: the generated typed wrappers of <wick/ops_gen.h>. Every
 * wrapper names a declared op with the schema it was generated from; a sample
 * (backward, multi-result, Tensor[], optional arguments left None, int and
 * float Scalars, in-place) gives what wk_op_call gives; errors and leaks. */
#include "testutil.h"

#define LEAK_START int64_t live0_ = wk_live_tensors()
#define LEAK_END ck_assert_int_eq(wk_live_tensors(), live0_)

/* Asserts a and b have the same dtype, shape and values (NULL == NULL). */
static void same_(wk_tensor *a, wk_tensor *b, const char *what, int line) {
  if (!a || !b) {
    ck_assert_msg(a == b, "line %d: %s: one side is NULL (%s)", line, what, wk_last_error_message());
    return;
  }
  ck_assert_msg(wk_tensor_dtype(a) == wk_tensor_dtype(b), "line %d: %s: dtype %s vs %s", line, what,
                wk_dtype_name(wk_tensor_dtype(a)), wk_dtype_name(wk_tensor_dtype(b)));
  ck_assert_int_eq(wk_tensor_dim(a), wk_tensor_dim(b));
  for (int i = 0; i < wk_tensor_dim(a); i++) ck_assert_int_eq(wk_tensor_size(a, i), wk_tensor_size(b, i));
  int64_t n = wk_tensor_numel(a);
  double *va = tu_values(a), *vb = tu_values(b);
  for (int64_t i = 0; i < n; i++)
    ck_assert_msg(va[i] == vb[i] || (isnan(va[i]) && isnan(vb[i])), "line %d: %s[%lld]: %.17g vs %.17g", line, what,
                  (long long)i, va[i], vb[i]);
  free(va);
  free(vb);
}
#define SAME(a, b) same_(a, b, #a, __LINE__)

/* Calls op `name` boxed; outs receives its results. */
static void boxed(const char *name, const wk_value *a, int n, wk_value *outs) {
  wk_op *op = wk_op_find(name);
  TU_NOTNULL(op);
  TU_OK(wk_op_call(op, a, n, outs));
}

/* ---- the list ---------------------------------------------------------------------------- */
START_TEST(test_frontend_every_wrapper_names_its_op) {
  int n = 0;
#define CHECK_ROW(cname, opname, schema)                                                               \
  do {                                                                                                 \
    wk_op *op = wk_op_find(opname);                                                                    \
    ck_assert_msg(op != NULL, "%s: op '%s' is not declared", #cname, opname);                        \
    ck_assert_msg(strcmp(wk_op_schema(op), schema) == 0, "%s: generated for '%s', the core declares '%s'", \
                  #cname, schema, wk_op_schema(op));                                                   \
    ck_assert_ptr_nonnull((void (*)(void))cname);                                                      \
    n++;                                                                                               \
  } while (0);
  WKX_OPS(CHECK_ROW)
#undef CHECK_ROW
  ck_assert_int_gt(n, 200);
}
END_TEST

/* ---- a backward op with non-square parameters, and its output_mask ------------------- */
START_TEST(test_frontend_backward_op_matches_boxed_call) {
  LEAK_START;
  wk_tensor *x = tu_rand(WK_SHAPE(2, 3, 7, 6), WK_F64, -1, 1, 1);
  wk_tensor *w = tu_rand(WK_SHAPE(4, 3, 3, 2), WK_F64, -1, 1, 2);
  const int64_t stride[2] = {2, 1}, pad[2] = {1, 0}, dil[2] = {1, 2}, all3[3] = {1, 1, 1};
  wk_tensor *y = wkx_conv2d(x, w, NULL, stride, 2, pad, 2, dil, 2, 1);
  TU_NOTNULL(y);
  wk_value in[7] = {WK_VT(x), WK_VT(w), WK_VNONE, WK_VINTS(stride, 2), WK_VINTS(pad, 2), WK_VINTS(dil, 2), WK_VI(1)},
           o[WK_MAX_OUTS];
  boxed("conv2d", in, 7, o);
  SAME(y, o[0].u.t);
  wk_release(o[0].u.t);
  wk_tensor *go = wk_ones_like(y, (wk_options){0});
  wk_tensor *gw = NULL, *gb = NULL;
  wk_tensor *gi = wkx_conv2d_backward(go, x, w, stride, 2, pad, 2, dil, 2, 1, all3, 3, &gw, &gb);
  TU_NOTNULL(gi);
  TU_NOTNULL(gw);
  TU_NOTNULL(gb);
  wk_value a[8] = {WK_VT(go), WK_VT(x), WK_VT(w), WK_VINTS(stride, 2), WK_VINTS(pad, 2), WK_VINTS(dil, 2), WK_VI(1),
                   WK_VINTS(all3, 3)};
  boxed("conv2d_backward", a, 8, o);
  SAME(gi, o[0].u.t);
  SAME(gw, o[1].u.t);
  SAME(gb, o[2].u.t);
  for (int i = 0; i < 3; i++) wk_release(o[i].u.t);
  /* masked-out results are NULL without an error; a NULL out-parameter releases its result */
  const int64_t mask[3] = {0, 1, 1};
  wk_tensor *gw2 = NULL;
  wk_tensor *none = wkx_conv2d_backward(go, x, w, stride, 2, pad, 2, dil, 2, 1, mask, 3, &gw2, NULL);
  ck_assert_ptr_null(none);
  ck_assert_int_eq(wk_last_error(), WK_OK);
  SAME(gw2, gw);
  /* softmax_backward_data: a ScalarType argument */
  wk_tensor *sm = wk_softmax(x, 1), *gs = tu_rand(WK_SHAPE(2, 3, 7, 6), WK_F64, -1, 1, 7);
  wk_tensor *g1 = wkx_softmax_backward_data(gs, sm, 1, WK_F64);
  TU_NOTNULL(g1);
  wk_value sa[4] = {WK_VT(gs), WK_VT(sm), WK_VI(1), WK_VDT(WK_F64)};
  boxed("softmax_backward_data", sa, 4, o);
  SAME(g1, o[0].u.t);
  wk_release(o[0].u.t);
  wk_tensor *keep[] = {x, w, y, go, gi, gw, gb, gw2, sm, gs, g1};
  for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) wk_release(keep[i]);
  LEAK_END;
}
END_TEST

/* ---- several results: max.dim, batch_norm, and the pooling pair ------------------------ */
START_TEST(test_frontend_multi_result_ops) {
  LEAK_START;
  wk_tensor *x = tu_rand(WK_SHAPE(3, 4, 5, 5), WK_F32, -2, 2, 3);
  wk_value o[WK_MAX_OUTS];
  wk_tensor *idx = NULL;
  wk_tensor *v = wkx_max__dim(x, 2, true, &idx);
  wk_value a[3] = {WK_VT(x), WK_VI(2), WK_VB(true)};
  boxed("max.dim", a, 3, o);
  SAME(v, o[0].u.t);
  SAME(idx, o[1].u.t);
  wk_release(o[0].u.t);
  wk_release(o[1].u.t);
  /* batch_norm in training: every argument, extra results released when not asked for */
  wk_tensor *rm = wk_zeros(WK_SHAPE(4), (wk_options){0}), *rv = wk_ones(WK_SHAPE(4), (wk_options){0});
  wk_tensor *rm2 = wk_clone(rm), *rv2 = wk_clone(rv);
  wk_tensor *save_mean = NULL;
  wk_tensor *y = wkx_batch_norm(x, NULL, NULL, rm, rv, true, 0.2, 1e-3, &save_mean, NULL);
  TU_NOTNULL(y);
  TU_NOTNULL(save_mean);
  wk_value b[8] = {WK_VT(x), WK_VNONE, WK_VNONE, WK_VT(rm2), WK_VT(rv2), WK_VB(true), WK_VF(0.2), WK_VF(1e-3)};
  boxed("batch_norm", b, 8, o);
  SAME(y, o[0].u.t);
  SAME(save_mean, o[1].u.t);
  SAME(rm, rm2); /* the running statistics updated the same way */
  SAME(rv, rv2);
  for (int i = 0; i < 3; i++) wk_release(o[i].u.t);
  /* max_pool2d_with_indices with a rectangular window and the default stride ([] = kernel) */
  const int64_t k[2] = {2, 3}, zero[2] = {0, 0}, one[2] = {1, 1};
  wk_tensor *pi = NULL;
  wk_tensor *p = wkx_max_pool2d_with_indices(x, k, 2, NULL, 0, zero, 2, one, 2, false, &pi);
  wk_value c[6] = {WK_VT(x), WK_VINTS(k, 2), WK_VINTS(NULL, 0), WK_VINTS(zero, 2), WK_VINTS(one, 2), WK_VB(false)};
  boxed("max_pool2d_with_indices", c, 6, o);
  SAME(p, o[0].u.t);
  SAME(pi, o[1].u.t);
  ck_assert_int_eq(wk_tensor_size(p, 2), 2);
  ck_assert_int_eq(wk_tensor_size(p, 3), 1);
  wk_release(o[0].u.t);
  wk_release(o[1].u.t);
  wk_tensor *keep[] = {x, v, idx, rm, rv, rm2, rv2, save_mean, y, p, pi};
  for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) wk_release(keep[i]);
  LEAK_END;
}
END_TEST

/* ---- Tensor[] results ------------------------------------------------------------------ */
START_TEST(test_frontend_tensor_list_ops) {
  LEAK_START;
  wk_tensor *x = tu_rand(WK_SHAPE(7, 3), WK_F64, -1, 1, 4);
  const int64_t sizes[3] = {2, 4, 1};
  wk_tensor *parts[3] = {NULL, NULL, NULL};
  ck_assert_int_eq(wkx_split_with_sizes(x, sizes, 3, 0, parts, 3), 3);
  wk_value a[3] = {WK_VT(x), WK_VINTS(sizes, 3), WK_VI(0)}, o[WK_MAX_OUTS];
  boxed("split_with_sizes", a, 3, o);
  ck_assert_int_eq(o[0].len, 3);
  for (int i = 0; i < 3; i++) {
    SAME(parts[i], o[0].u.tensors[i]);
    wk_release(o[0].u.tensors[i]);
    wk_release(parts[i]);
  }
  wk_free((void *)o[0].u.tensors);
  /* cap smaller than the count: the rest are released; cap 0 with NULL just counts */
  wk_tensor *first = NULL;
  ck_assert_int_eq(wkx_chunk(x, 3, 0, &first, 1), 3);
  ck_assert_int_eq(wk_tensor_size(first, 0), 3);
  ck_assert_int_eq(wkx_split(x, 2, 0, NULL, 0), 4);
  /* cat of a Tensor[] argument */
  wk_tensor *two[2] = {x, first};
  wk_tensor *c = wkx_cat(two, 2, 0);
  ck_assert_int_eq(wk_tensor_size(c, 0), 10);
  ck_assert_int_eq(wkx_split(NULL, 2, 0, NULL, 0), -1);
  ck_assert_int_ne(wk_last_error(), WK_OK);
  wk_clear_error();
  wk_release(c);
  wk_release(first);
  wk_release(x);
  LEAK_END;
}
END_TEST

/* ---- optional arguments left None, and given ------------------------------------------------ */
START_TEST(test_frontend_optional_arguments) {
  LEAK_START;
  wk_tensor *x = tu_rand(WK_SHAPE(2, 3, 6, 6), WK_F64, -3, 3, 5);
  wk_value o[WK_MAX_OUTS];
  /* int? dim = None: argmax over everything */
  wk_tensor *am = wkx_argmax(x, NULL, false);
  wk_value a[3] = {WK_VT(x), WK_VNONE, WK_VB(false)};
  boxed("argmax", a, 3, o);
  SAME(am, o[0].u.t);
  ck_assert_int_eq(wk_tensor_dim(am), 0);
  wk_release(o[0].u.t);
  const int64_t d = 1;
  wk_tensor *am1 = wkx_argmax(x, &d, true);
  ck_assert_int_eq(wk_tensor_size(am1, 1), 1);
  /* avg_pool2d: divisor_override None and given */
  const int64_t k[2] = {3, 2}, st[2] = {1, 2}, p[2] = {1, 0}, div = 4;
  wk_tensor *ap = wkx_avg_pool2d(x, k, 2, st, 2, p, 2, false, true, NULL);
  wk_value b[7] = {WK_VT(x), WK_VINTS(k, 2), WK_VINTS(st, 2), WK_VINTS(p, 2), WK_VB(false), WK_VB(true), WK_VNONE};
  boxed("avg_pool2d", b, 7, o);
  SAME(ap, o[0].u.t);
  wk_release(o[0].u.t);
  wk_tensor *apd = wkx_avg_pool2d(x, k, 2, st, 2, p, 2, false, true, &div);
  b[6] = WK_VI(4);
  boxed("avg_pool2d", b, 7, o);
  SAME(apd, o[0].u.t);
  wk_release(o[0].u.t);
  /* Scalar? bounds: min given, max None */
  const wk_value lo = WK_VF(-1);
  wk_tensor *cl = wkx_clamp(x, &lo, NULL);
  wk_value c[3] = {WK_VT(x), WK_VF(-1), WK_VNONE};
  boxed("clamp", c, 3, o);
  SAME(cl, o[0].u.t);
  wk_release(o[0].u.t);
  /* int[]? None and ScalarType? 0 (None): var over everything; sum over dims with a dtype */
  wk_tensor *var = wkx_var__correction(x, NULL, 0, 1, false);
  wk_value e[4] = {WK_VT(x), WK_VNONE, WK_VI(1), WK_VB(false)};
  boxed("var.correction", e, 4, o);
  SAME(var, o[0].u.t);
  wk_release(o[0].u.t);
  const int64_t dims[2] = {0, 2};
  wk_tensor *s32 = wkx_sum__dim_IntList(x, dims, 2, true, WK_F32);
  ck_assert_int_eq(wk_tensor_dtype(s32), WK_F32);
  ck_assert_int_eq(wk_tensor_size(s32, 2), 1);
  /* factories: dtype 0 and device NULL are the defaults */
  wk_tensor *z = wkx_zeros((const int64_t[]){2, 2}, 2, 0, NULL);
  ck_assert_int_eq(wk_tensor_dtype(z), WK_F32);
  wk_device cpu = wk_cpu();
  wk_tensor *r = wkx_arange(WK_VI(0), WK_VI(5), WK_VI(2), 0, &cpu);
  ck_assert_int_eq(wk_tensor_dtype(r), WK_I64);
  TU_EQ_VALS(r, 0, 2, 4);
  wk_tensor *keep[] = {x, am, am1, ap, apd, cl, var, s32, z, r};
  for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) wk_release(keep[i]);
  LEAK_END;
}
END_TEST

/* ---- Scalars keep their kind; in-place returns the argument ----------------------------- */
START_TEST(test_frontend_scalar_kind_and_inplace) {
  LEAK_START;
  wk_tensor *n = TU_T(WK_I64, (3), 1, 2, 3);
  wk_tensor *si = wkx_add__Scalar(n, WK_VI(2), WK_VI(1));
  ck_assert_int_eq(wk_tensor_dtype(si), WK_I64);
  TU_EQ_VALS(si, 3, 4, 5);
  wk_tensor *sf = wkx_add__Scalar(n, WK_VF(0.5), WK_VI(1));
  ck_assert_int_eq(wk_tensor_dtype(sf), WK_F32);
  ck_assert_ptr_eq(wkx_add___Scalar(n, WK_VI(1), WK_VI(10)), n); /* borrowed: no new reference */
  TU_EQ_VALS(n, 11, 12, 13);
  wk_tensor *big = wkx_full((const int64_t[]){1}, 1, WK_VI(INT64_C(9007199254740993)), WK_I64, NULL);
  int64_t got = 0;
  TU_OK(wk_item_i64(big, &got));
  ck_assert(got == INT64_C(9007199254740993)); /* exact: no trip through double */
  wk_tensor *ge = wkx_ge__Scalar(n, WK_VI(12));
  TU_EQ_VALS(ge, 0, 1, 1);
  wk_tensor *keep[] = {n, si, sf, big, ge};
  for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) wk_release(keep[i]);
  LEAK_END;
}
END_TEST

/* ---- errors: NULL propagation, list lengths, wrong kinds ------------------------------------- */
START_TEST(test_frontend_errors) {
  LEAK_START;
  ck_assert_ptr_null(wkx_relu(NULL));
  TU_FAILS_WITH(WK_ERR_NULL, "relu(): argument 'self' (position 1) is NULL");
  /* the first error is kept through nested calls */
  wk_error(WK_ERR_SHAPE, "earlier");
  ck_assert_ptr_null(wkx_neg(wkx_relu(NULL)));
  TU_FAILS_WITH(WK_ERR_SHAPE, "earlier");
  wk_tensor *x = tu_rand(WK_SHAPE(1, 1, 4, 4), WK_F32, -1, 1, 6);
  const int64_t k3[3] = {2, 2, 2};
  ck_assert_ptr_null(wkx_avg_pool2d(x, k3, 3, NULL, 0, k3, 2, false, true, NULL));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "argument 'kernel_size' must have 2 elements, not 3");
  ck_assert_ptr_null(wkx_view(x, k3, -1));
  TU_FAILS_WITH(WK_ERR_NULL, "argument 'size'");
  ck_assert_ptr_null(wkx_view(x, k3, INT64_C(1) << 40)); /* does not fit a boxed list */
  TU_FAILS_WITH(WK_ERR_NULL, "argument 'size'");
  ck_assert_ptr_null(wkx_mul__Scalar(x, WK_VT(x)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "argument 'other' (position 2) must be Scalar, not Tensor");
  ck_assert_ptr_null(wkx_softmax_backward_data(x, x, 1, (wk_dtype)0));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "argument 'input_dtype' (position 4) must be ScalarType, not None");
  wk_tensor *second = x;
  ck_assert_ptr_null(wkx_max__dim(NULL, 0, false, &second));
  ck_assert_ptr_null(second); /* out-parameters are cleared on failure */
  wk_clear_error();
  wk_release(x);
  LEAK_END;
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("frontend");
  TCase *tc = tcase_create("generated");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_test(tc, test_frontend_every_wrapper_names_its_op);
  tcase_add_test(tc, test_frontend_backward_op_matches_boxed_call);
  tcase_add_test(tc, test_frontend_multi_result_ops);
  tcase_add_test(tc, test_frontend_tensor_list_ops);
  tcase_add_test(tc, test_frontend_optional_arguments);
  tcase_add_test(tc, test_frontend_scalar_kind_and_inplace);
  tcase_add_test(tc, test_frontend_errors);
  suite_add_tcase(s, tc);
  return s;
}
TU_MAIN(make_suite)
