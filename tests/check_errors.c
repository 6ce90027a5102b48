/* check_errors: error scoping (abi/wick/error.h) and the allocator hook.
 * A call whose arguments are valid starts with a clean error slot, so a loop
 * that loads files without wk_clear_error() reports each failure with its own
 * file; a call receiving the NULL of an earlier failure keeps that failure's
 * message; cleanup calls leave the message alone. WICK_FAIL_ALLOC=N fails the
 * Nth allocation (checked in a child process: the variable is read at load). */
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <wick/data.h>
#include <wick/io.h>

#include "testutil.h"

static char g_dir[64];
static void dir_setup(void) {
  tu_setup();
  snprintf(g_dir, sizeof g_dir, "/tmp/check_errors.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(g_dir));
}
static void dir_teardown(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  ck_assert_int_eq(system(cmd), 0);
}
static const char *path_in(const char *name) {
  static char p[8][256];
  static int k;
  k = (k + 1) % 8;
  snprintf(p[k], sizeof p[k], "%s/%s", g_dir, name);
  return p[k];
}
static void write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(data, 1, n, f), n);
  ck_assert_int_eq(fclose(f), 0);
}

#define HAS(needle) ck_assert_msg(strstr(wk_last_error_message(), needle), "message '%s' lacks '%s'", \
                                  wk_last_error_message(), needle)
#define LACKS(needle) ck_assert_msg(!strstr(wk_last_error_message(), needle), "message '%s' has '%s'", \
                                    wk_last_error_message(), needle)

/* ---- the dispatcher ------------------------------------------------------------------- */
START_TEST(test_op_scope) {
  wk_tensor *a = wk_ones(WK_SHAPE(2, 3), (wk_options){0}), *b = wk_ones(WK_SHAPE(4, 5), (wk_options){0});
  TU_NOTNULL(a);
  TU_NOTNULL(b);
  ck_assert_ptr_null(wk_matmul(a, b)); /* first failure */
  HAS("2x3 and 4x5");
  wk_tensor *s = wk_add(a, a); /* valid: a clean slot */
  TU_NOTNULL(s);
  ck_assert_int_eq(wk_last_error(), WK_OK);
  ck_assert_str_eq(wk_last_error_message(), "");
  ck_assert_ptr_null(wk_matmul(b, a)); /* second failure: its own message, no wk_clear_error() between */
  ck_assert_int_eq(wk_last_error(), WK_ERR_SHAPE);
  HAS("4x5 and 2x3");
  /* a bad argument (not NULL) replaces the earlier message */
  ck_assert_int_ne(wk_call("add", (wk_value[]){WK_VT(a), WK_VI(3), WK_VS("x")}, 3, (wk_value[1]){{0}}), WK_OK);
  HAS("add");
  LACKS("4x5");
  wk_release(s);
  wk_release(a);
  wk_release(b);
}
END_TEST

START_TEST(test_null_keeps_cause) {
  wk_tensor *a = wk_ones(WK_SHAPE(2, 3), (wk_options){0}), *b = wk_ones(WK_SHAPE(4, 5), (wk_options){0});
  /* wk_relu(wk_matmul(a, b)): relu receives NULL and keeps matmul's message */
  ck_assert_ptr_null(wk_relu(wk_matmul(a, b)));
  ck_assert_int_eq(wk_last_error(), WK_ERR_SHAPE);
  HAS("matmul");
  LACKS("NULL");
  /* the NULL kept for later: a valid call in between, then the NULL is passed on */
  wk_tensor *bad = wk_matmul(a, b);
  ck_assert_ptr_null(bad);
  wk_tensor *ok = wk_mul(a, a);
  TU_NOTNULL(ok);
  ck_assert_int_eq(wk_last_error(), WK_OK);
  ck_assert_ptr_null(wk_exp(bad));
  ck_assert_int_eq(wk_last_error(), WK_ERR_SHAPE);
  HAS("matmul");
  /* after wk_clear_error a NULL is just a NULL */
  wk_clear_error();
  ck_assert_ptr_null(wk_exp(bad));
  ck_assert_int_eq(wk_last_error(), WK_ERR_NULL);
  HAS("NULL");
  /* cleanup calls do not touch the slot */
  ck_assert_ptr_null(wk_matmul(b, a));
  wk_release(ok);
  wk_release(NULL);
  ck_assert_int_eq(wk_last_error(), WK_ERR_SHAPE);
  HAS("4x5 and 2x3");
  wk_release(a);
  wk_release(b);
}
END_TEST

/* ---- the io service: the loop of issue 18 ---------------------------------------------------- */
START_TEST(test_io_loop) {
  static const char junk[] = "not a safetensors file at all";
  write_file(path_in("first_bad.safetensors"), junk, sizeof junk);
  unsigned char trunc[8] = {200, 0, 0, 0, 0, 0, 0, 0}; /* a 200-byte header that is not there */
  write_file(path_in("second_bad.safetensors"), trunc, sizeof trunc);
  wk_state_dict *sd = wk_state_dict_new();
  wk_tensor *w = wk_ones(WK_SHAPE(3), (wk_options){0});
  TU_OK(wk_state_dict_set(sd, "w", w));
  TU_OK(wk_save_safetensors(sd, path_in("good.safetensors")));
  wk_state_dict_free(sd);
  wk_release(w);

  const char *order[] = {"first_bad", "good", "second_bad", "good", "first_bad"};
  for (int round = 0; round < 5; round++) {
    char name[64];
    snprintf(name, sizeof name, "%s.safetensors", order[round]);
    wk_state_dict *out = NULL;
    wk_status st = wk_load_safetensors(path_in(name), &out, NULL);
    if (strcmp(order[round], "good") == 0) {
      ck_assert_msg(st == WK_OK, "round %d: %s", round, wk_last_error_message());
      ck_assert_int_eq(wk_last_error(), WK_OK);
      ck_assert_int_eq(wk_state_dict_size(out), 1);
      wk_state_dict_free(out);
    } else {
      ck_assert_int_ne(st, WK_OK);
      ck_assert_ptr_null(out);
      HAS(name);
      LACKS(strcmp(order[round], "first_bad") ? "first_bad" : "second_bad");
      wk_state_dict_free(out); /* cleanup keeps the message */
      HAS(name);
    }
  }
  /* checkpoints: a bad one after a good one names itself */
  wk_checkpoint ck = WK_CHECKPOINT_INIT;
  ck_assert_int_ne(wk_checkpoint_load(path_in("second_bad.safetensors"), &ck, NULL), WK_OK);
  HAS("second_bad");
  wk_checkpoint_clear(&ck);
  HAS("second_bad");
}
END_TEST

/* ---- the data service ----------------------------------------------------------------------- */
static void write_idx(const char *path, bool images, int n) {
  unsigned char b[64] = {0, 0, 8, (unsigned char)(images ? 3 : 1), 0, 0, 0, (unsigned char)n};
  size_t k = 8;
  if (images) {
    b[k + 3] = 2;
    b[k + 7] = 2;
    k += 8;
  }
  for (int i = 0; i < n * (images ? 4 : 1); i++) b[k++] = (unsigned char)(i % 10);
  write_file(path, b, k);
}

START_TEST(test_data_loop) {
  write_idx(path_in("img"), true, 2);
  write_idx(path_in("lab"), false, 2);
  write_file(path_in("alpha_bad"), "\x01\x02", 2);
  write_file(path_in("beta_bad"), "\0\0\x08\x03\0\0\0\x02", 8);
  wk_dataset *ds = wk_dataset_mnist(path_in("alpha_bad"), path_in("lab"));
  ck_assert_ptr_null(ds);
  HAS("alpha_bad");
  ds = wk_dataset_mnist(path_in("img"), path_in("lab"));
  TU_NOTNULL(ds);
  ck_assert_int_eq(wk_last_error(), WK_OK);
  ck_assert_int_eq(wk_dataset_len(ds), 2);
  wk_dataset *bad = wk_dataset_mnist(path_in("beta_bad"), path_in("lab"));
  ck_assert_ptr_null(bad);
  HAS("beta_bad");
  LACKS("alpha_bad");
  /* a map of the NULL keeps the cause */
  ck_assert_ptr_null(wk_dataset_map(bad, 0, NULL));
  HAS("beta_bad");
  /* an index error on the good dataset names the index, not the old file */
  wk_sample smp = {0};
  ck_assert_int_ne(wk_dataset_get(ds, 7, NULL, &smp), WK_OK);
  HAS("index 7");
  LACKS("beta_bad");
  wk_dataset_free(ds);
  HAS("index 7");
}
END_TEST

/* ---- the allocator hook --------------------------------------------------------------------- */
START_TEST(test_alloc_hook) {
  char *p = wk_malloc(16);
  ck_assert_ptr_nonnull(p);
  memset(p, 7, 16);
  p = wk_realloc(p, 4096);
  ck_assert_ptr_nonnull(p);
  ck_assert_int_eq(p[15], 7);
  wk_free(p);
  int *z = wk_calloc(8, sizeof *z);
  ck_assert_ptr_nonnull(z);
  for (int i = 0; i < 8; i++) ck_assert_int_eq(z[i], 0);
  wk_free(z);
}
END_TEST

/* The child of test_fail_alloc: its first counted allocation must fail, its
 * second succeed; wk_init and an op then run with the failure behind them. */
static int alloc_child(void) {
  void *a = wk_malloc(32), *b = wk_malloc(32);
  int bad = a != NULL || b == NULL;
  wk_free(b);
  if (wk_init() != WK_OK) return 3;
  wk_tensor *t = wk_ones(WK_SHAPE(2), (wk_options){0});
  bad |= t == NULL;
  wk_release(t);
  return bad ? 2 : 0;
}

START_TEST(test_fail_alloc) {
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    setenv("WICK_FAIL_ALLOC", "1", 1);
    setenv("CHECK_ERRORS_CHILD", "1", 1);
    execl("/proc/self/exe", "check_errors", (char *)NULL);
    _exit(99);
  }
  int status = 0;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status 0x%x", status);
}
END_TEST

/* Found by tests/fuzz/fuzz_schema: int[N] past WK_MAX_DIMS (the dispatcher expands
 * int[N] into a WK_MAX_DIMS-long scratch list), digits overflowing int, and
 * NaN / huge defaults converted to int64. */
START_TEST(test_schema_limits) {
  ck_assert_ptr_null(wk_op_declare("errors_test.big(Tensor self, int[17] k) -> Tensor", 0));
  ck_assert_int_eq(wk_last_error(), WK_ERR_SCHEMA);
  HAS("WK_MAX_DIMS");
  ck_assert_ptr_null(wk_op_declare("errors_test.huge(Tensor self, int[7777777777777] k) -> Tensor", 0));
  HAS("WK_MAX_DIMS");
  TU_NOTNULL(wk_op_declare("errors_test.max(Tensor self, int[16] k) -> Tensor", 0));
  TU_NOTNULL(wk_op_declare("errors_test.nan(Tensor self, float a=nan, float b=1e300) -> Tensor", 0));
}
END_TEST

/* Scopes cannot fail to open or to adopt (the first 16 levels are preallocated;
 * a tensor that finds no room goes on an overflow chain): nesting past 16
 * and escaping still release everything. */
START_TEST(test_scope_nesting) {
  int64_t live = wk_live_tensors();
  wk_tensor *kept = NULL;
  for (int d = 1; d <= 20; d++) {
    ck_assert_int_eq(wk_scope_begin(), d);
    for (int k = 0; k < 70; k++) TU_NOTNULL(wk_zeros(WK_SHAPE(2), (wk_options){0}));
  }
  kept = wk_scope_escape(wk_ones(WK_SHAPE(3), (wk_options){0}));
  for (int d = 20; d >= 1; d--) TU_OK(wk_scope_end());
  ck_assert_int_eq(wk_live_tensors(), live);
  (void)kept;
  ck_assert_int_ne(wk_scope_end(), WK_OK); /* none open */
}
END_TEST

/* The error slot is per thread, and the dispatcher's op caches and the typed
 * wrappers' op pointers are shared: 4 threads call ops (each wrapper's first
 * call races the others) and see only their own failures. Run under
 * ThreadSanitizer by tests/tsan.sh. */
static void *thread_errors(void *arg) {
  long id = (long)arg;
  wk_tensor *a = wk_ones(WK_SHAPE(2, 3 + id), (wk_options){0}), *b = wk_ones(WK_SHAPE(5 + id, 2), (wk_options){0});
  char want[64];
  snprintf(want, sizeof want, "2x%ld and %ldx2", 3 + id, 5 + id);
  long bad = a == NULL || b == NULL;
  for (int i = 0; i < 200 && !bad; i++) {
    wk_tensor *c = i % 2 ? wk_mul(a, a) : wk_sub(a, a);
    bad |= c == NULL || wk_last_error() != WK_OK;
    wk_release(c);
    bad |= wk_matmul(a, b) != NULL || !strstr(wk_last_error_message(), want);
    bad |= wk_relu(wk_matmul(a, b)) != NULL || !strstr(wk_last_error_message(), want);
  }
  wk_release(a);
  wk_release(b);
  return (void *)bad;
}

START_TEST(test_thread_errors) {
  pthread_t th[4];
  for (long i = 0; i < 4; i++) ck_assert_int_eq(pthread_create(&th[i], NULL, thread_errors, (void *)i), 0);
  for (int i = 0; i < 4; i++) {
    void *r = NULL;
    ck_assert_int_eq(pthread_join(th[i], &r), 0);
    ck_assert_msg(r == NULL, "thread %d saw another thread's error or a wrong result", i);
  }
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("errors");
  TCase *tc = tcase_create("scope");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_test(tc, test_op_scope);
  tcase_add_test(tc, test_null_keeps_cause);
  tcase_add_test(tc, test_alloc_hook);
  tcase_add_test(tc, test_fail_alloc);
  tcase_add_test(tc, test_schema_limits);
  tcase_add_test(tc, test_scope_nesting);
  tcase_add_test(tc, test_thread_errors);
  suite_add_tcase(s, tc);
  TCase *io = tcase_create("services");
  tcase_add_checked_fixture(io, dir_setup, dir_teardown);
  tcase_add_test(io, test_io_loop);
  tcase_add_test(io, test_data_loop);
  suite_add_tcase(s, io);
  return s;
}

int main(void) {
  if (getenv("CHECK_ERRORS_CHILD")) return alloc_child();
  SRunner *sr = srunner_create(make_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
