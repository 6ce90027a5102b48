/* check_sdk_check: the SDK's checking vocabulary (<wick/sdk/check.h>): shape
 * strings, PyTorch's dtype words, dim wrapping, int[N] and option arguments,
 * with their bad-argument cases. */
#include "testutil.h"
#include <wick/sdk/check.h>

START_TEST(test_check_shape_str) {
  char b[WK_SHAPE_STR_MAX];
  ck_assert_str_eq(wk_sizes_str((const int64_t[]){2, 3}, 2, b, sizeof b), "[2, 3]");
  ck_assert_str_eq(wk_sizes_str(NULL, 0, b, sizeof b), "[]");
  ck_assert_str_eq(wk_sizes_str((const int64_t[]){-1}, 1, b, sizeof b), "[-1]");
  int64_t big[WK_MAX_DIMS];
  for (int i = 0; i < WK_MAX_DIMS; i++) big[i] = INT64_MAX;
  wk_sizes_str(big, WK_MAX_DIMS, b, sizeof b); /* fits, closed */
  ck_assert_int_eq(b[strlen(b) - 1], ']');
  char small[5];
  ck_assert_str_eq(wk_sizes_str((const int64_t[]){123, 456}, 2, small, sizeof small), "[123"); /* truncated, terminated */
  ck_assert_ptr_null(wk_sizes_str((const int64_t[]){1}, 1, NULL, 8));
  ck_assert_str_eq(wk_sizes_str((const int64_t[]){1}, 1, small, 0), "[123"); /* cap 0 writes nothing */
  wk_tensor *t = wk_zeros(WK_SHAPE(4, 1, 5), (wk_options){0});
  TU_NOTNULL(t);
  ck_assert_str_eq(wk_shape_str(t, b, sizeof b), "[4, 1, 5]");
  wk_release(t);
  t = wk_scalar_tensor(1.0, WK_F32);
  TU_NOTNULL(t);
  ck_assert_str_eq(wk_shape_str(t, b, sizeof b), "[]");
  wk_release(t);
  ck_assert_str_eq(wk_shape_str(NULL, b, sizeof b), "[]");
}
END_TEST

START_TEST(test_check_dtype_words) {
  static const struct {
    wk_dtype dt;
    const char *word, *lower, *cpp;
  } rows[] = {{WK_F32, "Float", "float", "float"},          {WK_F64, "Double", "double", "double"},
              {WK_F16, "Half", "half", "c10::Half"},        {WK_BF16, "BFloat16", "bfloat16", "c10::BFloat16"},
              {WK_I8, "Char", "char", "signed char"},       {WK_U8, "Byte", "byte", "unsigned char"},
              {WK_I16, "Short", "short", "short int"},      {WK_I32, "Int", "int", "int"},
              {WK_I64, "Long", "long", "long int"},         {WK_BOOL, "Bool", "bool", "bool"}};
  char b[16];
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    ck_assert_str_eq(wk_dtype_torch_name(rows[i].dt), rows[i].word);
    ck_assert_str_eq(wk_dtype_torch_lower(rows[i].dt, b, sizeof b), rows[i].lower);
    ck_assert_str_eq(wk_dtype_cpp_name(rows[i].dt), rows[i].cpp);
  }
  ck_assert_str_eq(wk_dtype_torch_name(WK_DTYPE_DEFAULT), "?");
  ck_assert_str_eq(wk_dtype_torch_name((wk_dtype)99), "?");
  ck_assert_str_eq(wk_dtype_cpp_name((wk_dtype)99), "?");
  char s3[3];
  ck_assert_str_eq(wk_dtype_torch_lower(WK_BF16, s3, sizeof s3), "bf"); /* truncated, terminated */
  ck_assert_ptr_null(wk_dtype_torch_lower(WK_F32, NULL, 4));
}
END_TEST

START_TEST(test_check_dim) {
  int d = -7;
  TU_OK(wk_check_dim("sum", -1, 2, &d));
  ck_assert_int_eq(d, 1);
  TU_OK(wk_check_dim("sum", 0, 2, &d));
  ck_assert_int_eq(d, 0);
  TU_OK(wk_check_dim("sum", -1, 0, &d)); /* a 0-dim tensor takes -1 and 0 */
  ck_assert_int_eq(d, 0);
  d = 9;
  ck_assert_int_eq(wk_check_dim("sum", 2, 2, &d), WK_ERR_INDEX);
  ck_assert_int_eq(d, 0);
  TU_FAILS_WITH(WK_ERR_INDEX, "sum(): Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  ck_assert_int_eq(wk_check_dim("softmax", -2, 0, &d), WK_ERR_INDEX);
  TU_FAILS_WITH(WK_ERR_INDEX, "softmax(): Dimension out of range (expected to be in range of [-1, 0], but got -2)");
}
END_TEST

START_TEST(test_check_int_pair) {
  int64_t two[2] = {0, 0}, three[3] = {0, 0, 0};
  wk_value one = WK_VINTS(((const int64_t[]){3}), 1), pair = WK_VINTS(((const int64_t[]){2, 5}), 2);
  wk_value triple = WK_VINTS(((const int64_t[]){1, 2, 3}), 3), scalar = WK_VI(4);
  ck_assert(wk_arg_int_pair(&one, two));
  ck_assert(two[0] == 3 && two[1] == 3);
  ck_assert(wk_arg_int_pair(&pair, two));
  ck_assert(two[0] == 2 && two[1] == 5);
  ck_assert(!wk_arg_int_pair(&triple, two));
  ck_assert(!wk_arg_int_pair(&scalar, two));
  ck_assert(!wk_arg_int_pair(NULL, two));
  ck_assert(wk_arg_int_tuple(&triple, 3, three));
  ck_assert(three[0] == 1 && three[1] == 2 && three[2] == 3);
  ck_assert(wk_arg_int_tuple(&one, 3, three));
  ck_assert(three[0] == 3 && three[2] == 3);
  ck_assert(!wk_arg_int_tuple(&pair, 3, three));
  ck_assert(!wk_arg_int_tuple(&one, 0, three));
  ck_assert_int_eq(wk_last_error(), WK_OK); /* records nothing */
}
END_TEST

START_TEST(test_check_option) {
  static const char *const modes[] = {"constant", "reflect", "replicate", "circular", NULL};
  ck_assert_int_eq(wk_option_index("reflect", modes), 1);
  ck_assert_int_eq(wk_option_index("zeros", modes), -1);
  ck_assert_int_eq(wk_option_index(NULL, modes), -1);
  ck_assert_int_eq(wk_option_index("x", NULL), -1);
  ck_assert_int_eq(wk_last_error(), WK_OK);
  ck_assert_int_eq(wk_arg_option("pad", "mode", "circular", modes), 3);
  ck_assert_int_eq(wk_arg_option("pad", "mode", "zeros", modes), -1);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG,
                "pad(): mode must be one of 'constant', 'reflect', 'replicate' or 'circular', but got 'zeros'");
  ck_assert_int_eq(wk_arg_option("gelu", "approximate", NULL, (const char *const[]){"none", "tanh", NULL}), -1);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "gelu(): approximate must be one of 'none' or 'tanh', but got 'None'");
  ck_assert_int_eq(wk_arg_option("f", "a", "x", (const char *const[]){"only", NULL}), -1);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "f(): a must be one of 'only', but got 'x'");
}
END_TEST

static Suite *sdk_check_suite(void) {
  Suite *s = suite_create("sdk_check");
  TCase *tc = tcase_create("vocabulary");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_test(tc, test_check_shape_str);
  tcase_add_test(tc, test_check_dtype_words);
  tcase_add_test(tc, test_check_dim);
  tcase_add_test(tc, test_check_int_pair);
  tcase_add_test(tc, test_check_option);
  suite_add_tcase(s, tc);
  return s;
}

TU_MAIN(sdk_check_suite)
