/* check_io: placeholder suite (being written). */
#include "testutil.h"

START_TEST(test_check_io_init) { tu_setup(); }
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("check_io");
  TCase *tc = tcase_create("init");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_test(tc, test_check_io_init);
  suite_add_tcase(s, tc);
  return s;
}
TU_MAIN(make_suite)
