/* check_nn: placeholder suite (being written). */
#include "testutil.h"

START_TEST(test_nn_init) { tu_setup(); }
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("nn");
  TCase *tc = tcase_create("init");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_test(tc, test_nn_init);
  suite_add_tcase(s, tc);
  return s;
}
TU_MAIN(make_suite)
