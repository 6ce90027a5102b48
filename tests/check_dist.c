/* check_dist: the dist service on the dist-mpi plugin. Alone it runs as a
 * world of one; tests/dist.sh runs it under `mpirun -np 2` and `-np 3` too
 * (CK_FORK is off: MPI starts once per process). Expected values are
 * computed from the ranks: a sum over ranks r of (r + 1) * (i + 1) is
 * (i + 1) * S (S + 1) / 2, and so on. Skips (77) when the plugin is not built. */
#include <math.h>
#include <wick/dist.h>

#include "testutil.h"

/* Open MPI unloads its components at MPI_Finalize, after which LeakSanitizer
 * can neither name nor suppress what they kept: this process keeps every
 * shared object loaded (its dlclose, found before libc's, does nothing). */
int dlclose(void *handle);
int dlclose(void *handle) {
  (void)handle;
  return 0;
}

/* Full stacks through Open MPI's frame-pointer-less code, so its allocations
 * are recognised below (the fast unwinder stops inside libc). */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "fast_unwind_on_malloc=0"; }

/* Open MPI keeps allocations until exit; they are not Wick's leaks. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) {
  return "leak:libmpi\nleak:libopen-pal\nleak:libopen-rte\nleak:libpmix\nleak:libevent\nleak:libhwloc\n"
         "leak:mca_\nleak:pmix\nleak:orte_\nleak:opal_\n";
}

static wk_dist_group *W;
static int R, S;

static void setup(void) {
  tu_setup();
  W = wk_dist_init(NULL);
  ck_assert_msg(W != NULL, "wk_dist_init: %s", wk_last_error_message());
  R = wk_dist_rank(W);
  S = wk_dist_size(W);
}

static wk_tensor *filled(wk_dtype dt, int64_t n, double (*f)(int64_t i)) {
  wk_tensor *t = wk_empty(WK_SHAPE(n), (wk_options){.dtype = dt});
  for (int64_t i = 0; i < n; i++) wk_tensor_set(t, (int64_t[]){i}, f(i));
  return t;
}
static double get(wk_tensor *t, int64_t i) {
  double v = NAN;
  wk_tensor_get(t, (int64_t[]){i}, &v);
  return v;
}

static double val_rank(int64_t i) {
  return (double)((R + 1) * (i % 7 + 1));
}

START_TEST(test_dist_env_and_world) {
  wk_dist_env e = wk_dist_env_read();
  ck_assert_int_eq(e.rank, R);
  ck_assert_int_eq(e.world_size, S);
  ck_assert(R >= 0 && R < S);
  ck_assert_ptr_eq(wk_dist_init(NULL), W); /* once per process */
  const wk_dist_api *a = wk_dist_backend("mpi");
  TU_NOTNULL(a);
  ck_assert_ptr_eq(a->world(), W);
  ck_assert_str_eq(a->backend, "mpi");
  ck_assert(a->timeout(W) > 0);
}
END_TEST

START_TEST(test_dist_all_reduce_ops) {
  const wk_dtype dts[] = {WK_F32, WK_F64, WK_F16, WK_BF16, WK_I32, WK_I64, WK_I16, WK_I8, WK_U8};
  const int64_t n = 37;
  for (size_t d = 0; d < sizeof dts / sizeof *dts; d++) {
    for (int op = WK_REDUCE_SUM; op <= WK_REDUCE_PRODUCT; op++) {
      if (op == WK_REDUCE_AVG && !wk_dtype_is_floating(dts[d])) continue;
      if (op == WK_REDUCE_PRODUCT && S > 3) continue;
      wk_scope_begin();
      wk_tensor *t = filled(dts[d], n, val_rank);
      TU_OK(wk_dist_all_reduce(W, t, (wk_reduce_op)op));
      for (int64_t i = 0; i < n; i++) {
        double k = (double)(i % 7 + 1), want = 0;
        if (op == WK_REDUCE_SUM) want = k * S * (S + 1) / 2;
        if (op == WK_REDUCE_AVG) want = k * (S + 1) / 2.0;
        if (op == WK_REDUCE_MAX) want = k * S;
        if (op == WK_REDUCE_MIN) want = k;
        if (op == WK_REDUCE_PRODUCT) {
          want = 1;
          for (int r = 1; r <= S; r++) want *= k * r;
        }
        if ((dts[d] == WK_I8 && want > 127) || (dts[d] == WK_U8 && want > 255) || (dts[d] == WK_I16 && want > 32767))
          continue; /* wraps, as in PyTorch */
        double tol = dts[d] == WK_BF16 ? 0.01 * fabs(want) : dts[d] == WK_F16 ? 1e-3 * fabs(want) : 1e-6 * fabs(want);
        ck_assert_msg(fabs(get(t, i) - want) <= tol, "%s op %d element %lld: got %g, want %g", wk_dtype_name(dts[d]),
                      op, (long long)i, get(t, i), want);
      }
      wk_scope_end();
    }
  }
  /* bool: sum and max are a logical or, min an and */
  wk_scope_begin();
  wk_tensor *b = wk_empty(WK_SHAPE(2), (wk_options){.dtype = WK_BOOL}),
            *c = wk_empty(WK_SHAPE(2), (wk_options){.dtype = WK_BOOL});
  wk_tensor_set(b, (int64_t[]){0}, R == 0);
  wk_tensor_set(b, (int64_t[]){1}, 1);
  wk_tensor_set(c, (int64_t[]){0}, R == 0);
  wk_tensor_set(c, (int64_t[]){1}, 1);
  TU_OK(wk_dist_all_reduce(W, b, WK_REDUCE_SUM));
  TU_OK(wk_dist_all_reduce(W, c, WK_REDUCE_MIN));
  ck_assert(get(b, 0) == 1 && get(b, 1) == 1);
  ck_assert(get(c, 0) == (S == 1) && get(c, 1) == 1);
  wk_scope_end();
}
END_TEST

static double val_bcast(int64_t i) {
  return R * 1000.0 + (double)i;
}
static double val_gather(int64_t i) {
  return R + 0.5 * (double)i;
}
static double val_scatter(int64_t i) {
  return R * 100.0 + (double)i;
}

START_TEST(test_dist_broadcast_gather_scatter) {
  wk_scope_begin();
  const int64_t n = 1000;
  int src = S - 1;
  wk_tensor *t = filled(WK_F32, n, val_bcast);
  uint64_t v0 = wk_tensor_version(t);
  TU_OK(wk_dist_broadcast(W, t, src));
  ck_assert(wk_tensor_version(t) > v0); /* written in place: autograd sees the change */
  for (int64_t i = 0; i < n; i++) ck_assert_double_eq(get(t, i), src * 1000.0 + (double)i);
  /* all_gather into [S, 5] */
  wk_tensor *in = filled(WK_F64, 5, val_gather), *out = wk_empty(WK_SHAPE(S, 5), (wk_options){.dtype = WK_F64});
  TU_OK(wk_dist_all_gather(W, out, in));
  for (int r = 0; r < S; r++)
    for (int i = 0; i < 5; i++) {
      double v = NAN;
      wk_tensor_get(out, (int64_t[]){r, i}, &v);
      ck_assert_double_eq(v, r + 0.5 * i);
    }
  /* reduce_scatter: block r of every rank's input, summed, lands on rank r */
  wk_tensor *big = filled(WK_F64, 4 * S, val_scatter), *mine = wk_empty(WK_SHAPE(4), (wk_options){.dtype = WK_F64});
  TU_OK(wk_dist_reduce_scatter(W, mine, big, WK_REDUCE_SUM));
  for (int i = 0; i < 4; i++) {
    double want = 0;
    for (int k = 0; k < S; k++) want += k * 100.0 + R * 4 + i;
    ck_assert_double_eq(get(mine, i), want);
  }
  TU_OK(wk_dist_reduce_scatter(W, mine, big, WK_REDUCE_AVG));
  for (int i = 0; i < 4; i++) {
    double want = 0;
    for (int k = 0; k < S; k++) want += k * 100.0 + R * 4 + i;
    ck_assert_double_eq_tol(get(mine, i), want / S, 1e-12);
  }
  TU_OK(wk_dist_barrier(W));
  wk_scope_end();
}
END_TEST

START_TEST(test_dist_send_recv_ring) {
  if (S < 2) return; /* needs a peer; a send to oneself is refused (test_dist_errors) */
  wk_scope_begin();
  int to = (R + 1) % S, from = (R + S - 1) % S;
  wk_tensor *out = filled(WK_I64, 100000, val_bcast), *in = wk_zeros(WK_SHAPE(100000), (wk_options){.dtype = WK_I64});
  /* both started before either is waited for: large messages would deadlock blocking sends */
  wk_dist_work *rw = wk_dist_irecv(W, in, from, 3), *sw = wk_dist_isend(W, out, to, 3);
  TU_OK(wk_dist_wait(sw, 30));
  TU_OK(wk_dist_wait(rw, 30));
  ck_assert(wk_dist_test(rw));
  for (int64_t i = 0; i < 100000; i += 997) ck_assert_double_eq(get(in, i), from * 1000.0 + (double)i);
  wk_dist_work_free(sw);
  wk_dist_work_free(rw);
  wk_scope_end();
}
END_TEST

/* Work runs on the progress thread: it completes while this thread computes. */
START_TEST(test_dist_async_overlaps) {
  wk_scope_begin();
  wk_tensor *big = wk_ones(WK_SHAPE(4 << 20), (wk_options){.dtype = WK_F32});
  wk_tensor *a = tu_rand(WK_SHAPE(256, 256), WK_F32, -1, 1, 5);
  wk_dist_work *w = wk_dist_all_reduce_async(W, big, WK_REDUCE_SUM);
  TU_NOTNULL(w);
  for (int i = 0; i < 5; i++) TU_NOTNULL(wk_mm(a, a)); /* compute meanwhile */
  TU_OK(wk_dist_wait(w, 0));
  ck_assert(wk_dist_test(w));
  ck_assert(w->api->work_seconds(w) > 0);
  ck_assert_double_eq(get(big, 12345), (double)S);
  ck_assert_double_eq(get(big, (4 << 20) - 1), (double)S); /* 16 MB: reduced in 4 MB pieces, the last one too */
  wk_dist_work_free(w);
  /* many in flight at once, completed in any order of waiting */
  wk_tensor *ts[8];
  wk_dist_work *ws[8];
  for (int k = 0; k < 8; k++) {
    ts[k] = wk_full(WK_SHAPE(1000 + k), (double)k, (wk_options){.dtype = WK_F64});
    ws[k] = wk_dist_all_reduce_async(W, ts[k], WK_REDUCE_SUM);
  }
  for (int k = 7; k >= 0; k--) {
    TU_OK(wk_dist_wait(ws[k], 0));
    ck_assert_double_eq(get(ts[k], 999), (double)k * S);
    wk_dist_work_free(ws[k]);
  }
  /* freeing a running work waits for it first */
  wk_dist_work_free(wk_dist_all_reduce_async(W, big, WK_REDUCE_SUM));
  ck_assert_double_eq(get(big, 0), (double)S * S);
  wk_scope_end();
}
END_TEST

START_TEST(test_dist_subgroup) {
  wk_scope_begin();
  /* the even ranks, listed backwards: group ranks follow the world's order */
  int ranks[64], n = 0;
  for (int r = S - 1; r >= 0; r--)
    if (r % 2 == 0) ranks[n++] = r;
  wk_dist_group *g = wk_dist_new_group(W, ranks, n);
  TU_NOTNULL(g);
  ck_assert_int_eq(wk_dist_size(g), n);
  if (R % 2 == 0) {
    ck_assert_int_eq(wk_dist_rank(g), R / 2);
    wk_tensor *t = wk_full(WK_SHAPE(3), R, (wk_options){0});
    TU_OK(wk_dist_all_reduce(g, t, WK_REDUCE_SUM));
    double want = 0;
    for (int i = 0; i < n; i++) want += ranks[i];
    ck_assert_double_eq(get(t, 2), want);
    TU_OK(wk_dist_broadcast(g, t, n - 1)); /* from the group's last rank */
  } else {
    ck_assert_int_eq(wk_dist_rank(g), -1);
    wk_tensor *t = wk_zeros(WK_SHAPE(3), (wk_options){0});
    ck_assert_ptr_null(wk_dist_all_reduce_async(g, t, WK_REDUCE_SUM));
    ck_assert_int_eq(wk_last_error(), WK_ERR_STATE);
    ck_assert_ptr_nonnull(strstr(wk_last_error_message(), "not a member"));
    wk_clear_error();
  }
  wk_dist_group_free(g);
  wk_dist_group_free(W); /* the world is not freed */
  TU_OK(wk_dist_barrier(W));
  wk_scope_end();
}
END_TEST

#define EXPECT_ERR(expr, code, text)                                                                        \
  do {                                                                                                      \
    wk_clear_error();                                                                                       \
    ck_assert_ptr_null(expr);                                                                               \
    ck_assert_int_eq(wk_last_error(), code);                                                                \
    ck_assert_msg(strstr(wk_last_error_message(), text), "'%s' lacks '%s'", wk_last_error_message(), text); \
    wk_clear_error();                                                                                       \
  } while (0)

START_TEST(test_dist_errors) {
  wk_scope_begin();
  wk_tensor *f = wk_zeros(WK_SHAPE(4, 6), (wk_options){0}), *i32 = wk_zeros(WK_SHAPE(4), (wk_options){.dtype = WK_I32});
  EXPECT_ERR(wk_dist_all_reduce_async(NULL, f, WK_REDUCE_SUM), WK_ERR_NULL, "group is NULL");
  EXPECT_ERR(wk_dist_all_reduce_async(W, NULL, WK_REDUCE_SUM), WK_ERR_NULL, "tensor 'tensor' is NULL");
  EXPECT_ERR(wk_dist_all_reduce_async(W, wk_transpose(f, 0, 1), WK_REDUCE_SUM), WK_ERR_INVALID_ARG, "contiguous");
  EXPECT_ERR(wk_dist_all_reduce_async(W, i32, WK_REDUCE_AVG), WK_ERR_DTYPE, "avg needs a floating dtype, got i32");
  EXPECT_ERR(wk_dist_all_reduce_async(W, f, (wk_reduce_op)9), WK_ERR_INVALID_ARG, "unknown reduction 9");
  EXPECT_ERR(wk_dist_broadcast_async(W, f, S), WK_ERR_INDEX, "src rank");
  EXPECT_ERR(wk_dist_broadcast_async(W, f, -1), WK_ERR_INDEX, "src rank -1");
  wk_tensor *wrong = wk_zeros(WK_SHAPE(S * 24 + 1), (wk_options){0});
  EXPECT_ERR(wk_dist_all_gather_async(W, wrong, f), WK_ERR_SHAPE, "'out' has");
  EXPECT_ERR(wk_dist_all_gather_async(W, wk_zeros(WK_SHAPE(S * 24), (wk_options){.dtype = WK_F64}), f), WK_ERR_DTYPE,
             "'out' is f64 but 'in' is f32");
  EXPECT_ERR(wk_dist_reduce_scatter_async(W, f, wrong, WK_REDUCE_SUM), WK_ERR_SHAPE, "'in' has");
  EXPECT_ERR(wk_dist_isend(W, f, R, 0), S == 1 ? WK_ERR_INVALID_ARG : WK_ERR_INVALID_ARG, "itself");
  EXPECT_ERR(wk_dist_irecv(W, f, S + 3, 0), WK_ERR_INDEX, "src rank");
  if (S > 1) EXPECT_ERR(wk_dist_isend(W, f, (R + 1) % S, -2), WK_ERR_INVALID_ARG, "tag -2");
  int bad[2] = {0, 0};
  EXPECT_ERR(wk_dist_new_group(W, bad, 2), S == 1 ? WK_ERR_INVALID_ARG : WK_ERR_INVALID_ARG,
             S == 1 ? "needs 1 to 1 ranks" : "listed twice");
  int out_of_range = S;
  EXPECT_ERR(wk_dist_new_group(W, &out_of_range, 1), WK_ERR_INVALID_ARG, "outside the parent group");
  EXPECT_ERR(wk_dist_new_group(W, NULL, 1), WK_ERR_NULL, "NULL");
  ck_assert_int_eq(wk_dist_wait(NULL, 1), WK_ERR_NULL);
  wk_clear_error();
  wk_dist_work *w = wk_dist_barrier_async(W);
  ck_assert_int_eq(wk_dist_wait(w, NAN), WK_ERR_INVALID_ARG);
  wk_clear_error();
  TU_OK(wk_dist_wait(w, 0));
  wk_dist_work_free(w);
  wk_dist_work_free(NULL);
  ck_assert_int_eq(wk_dist_rank(NULL), -1);
  ck_assert_int_eq(wk_dist_size(NULL), 0);
  /* an unknown backend names the service */
  wk_dist_init_opts o = {.struct_size = sizeof o, .backend = "carrier-pigeon"};
  EXPECT_ERR(wk_dist_init(&o), WK_ERR_NOT_FOUND, "dist.carrier-pigeon");
  wk_scope_end();
}
END_TEST

/* A receive nobody answers in time reports a timeout (and the peer's rank
 * when it is gone); answered later, waiting again succeeds. */
START_TEST(test_dist_wait_timeout) {
  if (S < 2) return;
  wk_scope_begin();
  wk_tensor *t = wk_zeros(WK_SHAPE(8), (wk_options){0});
  if (R == 0) {
    wk_dist_work *w = wk_dist_irecv(W, t, 1, 77);
    ck_assert_int_eq(wk_dist_wait(w, 0.3), WK_ERR_STATE);
    ck_assert_msg(strstr(wk_last_error_message(), "recv of 8 f32 from rank 1 (tag 77) on the world group (rank 0 of "),
                  "%s", wk_last_error_message());
    ck_assert_ptr_nonnull(strstr(wk_last_error_message(), "timed out after 0.3 s"));
    wk_clear_error();
    TU_OK(wk_dist_barrier(W));
    TU_OK(wk_dist_wait(w, 0));
    wk_dist_work_free(w);
  } else {
    TU_OK(wk_dist_barrier(W));
    if (R == 1) TU_OK(wk_dist_send(W, wk_ones(WK_SHAPE(8), (wk_options){0}), 0, 77));
  }
  wk_scope_end();
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("dist");
  TCase *tc = tcase_create("mpi");
  tcase_add_checked_fixture(tc, setup, NULL);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_dist_env_and_world);
  tcase_add_test(tc, test_dist_all_reduce_ops);
  tcase_add_test(tc, test_dist_broadcast_gather_scatter);
  tcase_add_test(tc, test_dist_send_recv_ring);
  tcase_add_test(tc, test_dist_async_overlaps);
  tcase_add_test(tc, test_dist_subgroup);
  tcase_add_test(tc, test_dist_errors);
  tcase_add_test(tc, test_dist_wait_timeout);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  if (wk_init() != WK_OK || !wk_dist_backend("mpi")) {
    printf("SKIP: the dist-mpi plugin is not available: %s\n", wk_last_error_message());
    return 77;
  }
  SRunner *sr = srunner_create(make_suite());
  srunner_set_fork_status(sr, CK_NOFORK); /* MPI starts once per process */
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  wk_shutdown();
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
