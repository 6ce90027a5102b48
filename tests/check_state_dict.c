/* check_state_dict: ordered name -> tensor maps with string metadata. */
#include "testutil.h"

START_TEST(test_state_dict_set_get_order) {
  wk_state_dict *sd = wk_state_dict_new();
  TU_NOTNULL(sd);
  wk_tensor *a = TU_T(WK_F32, (2), 1, 2), *b = TU_T(WK_I64, (1), 7), *c = TU_T(WK_F64, (1), 3);
  TU_OK(wk_state_dict_set(sd, "fc1.weight", a));
  TU_OK(wk_state_dict_set(sd, "fc1.bias", b));
  TU_OK(wk_state_dict_set(sd, "fc2.weight", c));
  ck_assert_int_eq(wk_state_dict_size(sd), 3);
  ck_assert_str_eq(wk_state_dict_key(sd, 1), "fc1.bias");
  ck_assert_ptr_eq(wk_state_dict_get(sd, "fc2.weight"), c);
  ck_assert_ptr_null(wk_state_dict_get(sd, "nope"));
  ck_assert_int_eq(wk_last_error(), WK_OK); /* absent is not an error */
  TU_OK(wk_state_dict_set(sd, "fc1.bias", c)); /* replace keeps the position */
  ck_assert_str_eq(wk_state_dict_key(sd, 1), "fc1.bias");
  ck_assert_ptr_eq(wk_state_dict_value(sd, 1), c);
  TU_OK(wk_state_dict_remove(sd, "fc1.weight"));
  ck_assert_int_eq(wk_state_dict_size(sd), 2);
  ck_assert_str_eq(wk_state_dict_key(sd, 0), "fc1.bias");
  ck_assert_int_eq(wk_state_dict_remove(sd, "fc1.weight"), WK_ERR_NOT_FOUND);
  TU_FAILS_WITH(WK_ERR_NOT_FOUND, "no entry named 'fc1.weight'");
  ck_assert_ptr_null(wk_state_dict_key(sd, 5));
  ck_assert_ptr_null(wk_state_dict_value(sd, -1));
  wk_release(a);
  wk_release(b);
  wk_release(c);
  ck_assert_int_eq(wk_live_tensors(), 1); /* the dict holds its own references (c, twice) */
  wk_state_dict_free(sd);
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

START_TEST(test_state_dict_metadata_and_errors) {
  wk_state_dict *sd = wk_state_dict_new();
  TU_OK(wk_state_dict_set_meta(sd, "epoch", "3"));
  TU_OK(wk_state_dict_set_meta(sd, "lr", "0.1"));
  TU_OK(wk_state_dict_set_meta(sd, "epoch", "4"));
  ck_assert_str_eq(wk_state_dict_get_meta(sd, "epoch"), "4");
  ck_assert_int_eq(wk_state_dict_meta_size(sd), 2);
  ck_assert_str_eq(wk_state_dict_meta_key(sd, 1), "lr");
  ck_assert_str_eq(wk_state_dict_meta_value(sd, 1), "0.1");
  ck_assert_ptr_null(wk_state_dict_get_meta(sd, "none"));
  wk_tensor *t = TU_T(WK_F32, (1), 1);
  ck_assert_int_eq(wk_state_dict_set(sd, "", t), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "empty name");
  ck_assert_int_eq(wk_state_dict_set(sd, "x", NULL), WK_ERR_NULL);
  TU_FAILS_WITH(WK_ERR_NULL, "tensor");
  ck_assert_int_eq(wk_state_dict_set(NULL, "x", t), WK_ERR_NULL);
  wk_clear_error();
  ck_assert_int_eq(wk_state_dict_set_meta(sd, "k", NULL), WK_ERR_NULL);
  wk_clear_error();
  ck_assert_int_eq(wk_state_dict_size(NULL), 0);
  wk_state_dict_free(NULL);
  /* inside a scope the dict's references outlive the scope */
  wk_scope_begin();
  TU_OK(wk_state_dict_set(sd, "scoped", wk_ones(WK_SHAPE(2), (wk_options){0})));
  wk_scope_end();
  TU_EQ_VALS(wk_state_dict_get(sd, "scoped"), 1, 1);
  wk_release(t);
  wk_state_dict_free(sd);
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("state_dict");
  TCase *tc = tcase_create("map");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_test(tc, test_state_dict_set_get_order);
  tcase_add_test(tc, test_state_dict_metadata_and_errors);
  suite_add_tcase(s, tc);
  return s;
}
TU_MAIN(make_suite)
