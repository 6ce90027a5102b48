/* check_dist_nccl: the dist.nccl service. Without a GPU it checks that the
 * plugin loads and that init refuses with the reason (no cuda device), then
 * skips (77); with one, a world of one (or the mpirun world) runs every
 * collective on cuda tensors and the argument errors. */
#include <wick/dist.h>

#include "testutil.h"

/* Open MPI (the bootstrap) unloads its components at MPI_Finalize; keep them so LeakSanitizer can name them. */
int dlclose(void *handle);
int dlclose(void *handle) {
  (void)handle;
  return 0;
}
const char *__asan_default_options(void);
const char *__asan_default_options(void) {
  return "fast_unwind_on_malloc=0";
}
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) {
  return "leak:libmpi\nleak:libopen-pal\nleak:libopen-rte\nleak:libpmix\nleak:libevent\nleak:libhwloc\n"
         "leak:mca_\nleak:pmix\nleak:orte_\nleak:opal_\nleak:libnccl\nleak:libcuda\n";
}

static wk_dist_group *W;
static wk_device DEV;
static int R, S;

static void setup(void) {
  tu_setup();
  W = wk_dist_init(&(wk_dist_init_opts){.struct_size = sizeof(wk_dist_init_opts), .backend = "nccl"});
  ck_assert_msg(W != NULL, "init: %s", wk_last_error_message());
  R = wk_dist_rank(W);
  S = wk_dist_size(W);
}

static double at(wk_tensor *t, int64_t i) {
  wk_tensor *c = wk_to_device(t, (wk_device){WK_DEVICE_CPU, 0});
  double v = NAN;
  wk_tensor_get(c, (int64_t[]){i}, &v);
  wk_release(c);
  return v;
}

START_TEST(test_dist_nccl_collectives) {
  wk_scope_begin();
  wk_tensor *t = wk_full(WK_SHAPE(1000), R + 1, (wk_options){.device = DEV});
  TU_OK(wk_dist_all_reduce(W, t, WK_REDUCE_SUM));
  ck_assert_double_eq(at(t, 999), S * (S + 1) / 2.0);
  TU_OK(wk_dist_all_reduce(W, t, WK_REDUCE_AVG));
  ck_assert_double_eq(at(t, 0), S * (S + 1) / 2.0);
  wk_tensor *m = wk_full(WK_SHAPE(7), R, (wk_options){.dtype = WK_I64, .device = DEV});
  TU_OK(wk_dist_all_reduce(W, m, WK_REDUCE_MAX));
  ck_assert_double_eq(at(m, 6), S - 1);
  wk_tensor *b = wk_full(WK_SHAPE(5), R * 10, (wk_options){.device = DEV});
  TU_OK(wk_dist_broadcast(W, b, S - 1));
  ck_assert_double_eq(at(b, 4), (S - 1) * 10.0);
  wk_tensor *in = wk_full(WK_SHAPE(3), R, (wk_options){.device = DEV});
  wk_tensor *out = wk_zeros(WK_SHAPE(3 * S), (wk_options){.device = DEV});
  TU_OK(wk_dist_all_gather(W, out, in));
  for (int r = 0; r < S; r++) ck_assert_double_eq(at(out, 3 * r + 2), r);
  wk_tensor *mine = wk_zeros(WK_SHAPE(3), (wk_options){.device = DEV});
  TU_OK(wk_dist_reduce_scatter(W, mine, wk_ones(WK_SHAPE(3 * S), (wk_options){.device = DEV}), WK_REDUCE_SUM));
  ck_assert_double_eq(at(mine, 1), S);
  TU_OK(wk_dist_barrier(W));
  wk_dist_work *w = wk_dist_all_reduce_async(W, t, WK_REDUCE_SUM);
  TU_OK(wk_dist_wait(w, 0));
  ck_assert(wk_dist_test(w));
  ck_assert(w->api->work_seconds(w) >= 0);
  wk_dist_work_free(w);
  wk_scope_end();
}
END_TEST

START_TEST(test_dist_nccl_errors) {
  wk_scope_begin();
  wk_tensor *cpu = wk_zeros(WK_SHAPE(4), (wk_options){0});
  ck_assert_ptr_null(wk_dist_all_reduce_async(W, cpu, WK_REDUCE_SUM));
  ck_assert_int_eq(wk_last_error(), WK_ERR_DEVICE);
  ck_assert_ptr_nonnull(strstr(wk_last_error_message(), "is on cpu"));
  wk_clear_error();
  wk_tensor *i = wk_zeros(WK_SHAPE(4), (wk_options){.dtype = WK_I32, .device = DEV});
  ck_assert_ptr_null(wk_dist_all_reduce_async(W, i, WK_REDUCE_AVG));
  ck_assert_int_eq(wk_last_error(), WK_ERR_DTYPE);
  wk_clear_error();
  ck_assert_ptr_null(wk_dist_broadcast_async(W, i, S));
  ck_assert_int_eq(wk_last_error(), WK_ERR_INDEX);
  wk_clear_error();
  wk_scope_end();
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("dist_nccl");
  TCase *tc = tcase_create("nccl");
  tcase_add_checked_fixture(tc, setup, NULL);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_dist_nccl_collectives);
  tcase_add_test(tc, test_dist_nccl_errors);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  if (wk_init() != WK_OK || !wk_dist_backend("nccl")) {
    printf("SKIP: the dist-nccl plugin is not available: %s\n", wk_last_error_message());
    return 77;
  }
  int32_t cuda = wk_device_type_find("cuda");
  wk_clear_error();
  if (cuda <= 0 || wk_device_count(cuda) == 0) {
    /* the plugin loaded; init must refuse with the reason */
    wk_dist_group *g = wk_dist_init(&(wk_dist_init_opts){.struct_size = sizeof(wk_dist_init_opts), .backend = "nccl"});
    if (g || wk_last_error() != WK_ERR_DEVICE || !strstr(wk_last_error_message(), "dist.nccl init: no cuda device")) {
      printf("FAIL: without a cuda device, init gave %p: %s\n", (void *)g, wk_last_error_message());
      return 1;
    }
    printf("SKIP: no cuda device (init refuses: %s)\n", wk_last_error_message());
    wk_shutdown();
    return 77;
  }
  DEV = (wk_device){cuda, wk_dist_env_read().local_rank % wk_device_count(cuda)};
  SRunner *sr = srunner_create(make_suite());
  srunner_set_fork_status(sr, CK_NOFORK); /* MPI and NCCL start once per process */
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  wk_shutdown();
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
