/* Check suite for the cuda plugin through the public API: allocator
 * statistics and OOM recovery, copies (contiguous, strided, dtype
 * conversion, pinned and non-blocking), streams and events, and the first
 * kernels against the cpu. Without a device it checks that the plugin loaded
 * and explains itself, then skips (exit 77) with the driver's reason. */
#include "testutil.h"

static wk_device cuda0(void) {
  wk_device d = {wk_device_type_find("cuda"), 0};
  return d;
}

/* Sum of a tensor's values (any device), through the cpu. */
static double sum_of(wk_tensor *t) {
  wk_tensor *h = wk_to_device(t, wk_cpu()), *s = wk_sum(h);
  double v = NAN;
  TU_OK(wk_item(s, &v));
  wk_release(s);
  wk_release(h);
  return v;
}

/* A zero-filled float32 tensor on dev (zero_ is the plugin's own kernel). */
static wk_tensor *zeros_on(const int64_t *sizes, int ndim, wk_device dev) {
  wk_tensor *t = wk_empty(sizes, ndim, (wk_options){.dtype = WK_F32, .device = dev});
  if (t && !wk_zero_(t)) {
    wk_release(t);
    return NULL;
  }
  return t;
}

/* Values of a (any device) as doubles, via the cpu. */
static void expect_same(wk_tensor *a, wk_tensor *b, double tol) {
  wk_tensor *ha = wk_to_device(a, wk_cpu()), *hb = wk_to_device(b, wk_cpu());
  TU_NOTNULL(ha);
  TU_NOTNULL(hb);
  ck_assert_int_eq(wk_tensor_numel(ha), wk_tensor_numel(hb));
  wk_tensor *da = wk_to_dtype(ha, WK_F64), *db = wk_to_dtype(hb, WK_F64);
  wk_tensor *ca = wk_contiguous(da), *cb = wk_contiguous(db);
  const double *x = wk_tensor_data(ca), *y = wk_tensor_data(cb);
  for (int64_t i = 0; i < wk_tensor_numel(ca); i++)
    ck_assert_msg(fabs(x[i] - y[i]) <= tol * (1 + fabs(y[i])), "element %lld: %g vs %g", (long long)i, x[i], y[i]);
  wk_release(ca);
  wk_release(cb);
  wk_release(da);
  wk_release(db);
  wk_release(ha);
  wk_release(hb);
}

START_TEST(test_cuda_properties) {
  wk_device_props p = {.struct_size = sizeof p};
  TU_OK(wk_device_get_properties(cuda0(), &p));
  ck_assert_msg(p.name[0] && p.total_memory > 0 && p.multi_processor_count > 0 && p.major >= 3, "%s", p.name);
  printf("cuda:0 is %s, %.1f GiB, sm_%d%d, %d SMs\n", p.name, (double)p.total_memory / (1 << 30), p.major, p.minor,
         p.multi_processor_count);
  ck_assert_int_eq(wk_device_current(cuda0().type), 0);
  TU_OK(wk_device_set_current(cuda0()));
  TU_OK(wk_device_synchronize(cuda0()));
}
END_TEST

START_TEST(test_cuda_allocator_stats) {
  wk_device d = cuda0();
  TU_OK(wk_device_synchronize(d));
  int64_t a0 = wk_device_memory_allocated(d);
  ck_assert_int_ge(a0, 0);
  TU_OK(wk_device_reset_peak_memory_stats(d));
  wk_tensor *t = wk_empty(WK_SHAPE(1024, 1024), WK_OPTS(.dtype = WK_F32, .device = d));
  TU_NOTNULL(t);
  ck_assert_int_eq(wk_device_memory_allocated(d), a0 + 4 * 1024 * 1024);
  ck_assert_int_ge(wk_device_memory_reserved(d), wk_device_memory_allocated(d));
  wk_release(t);
  ck_assert_int_eq(wk_device_memory_allocated(d), a0);
  ck_assert_int_eq(wk_device_max_memory_allocated(d), a0 + 4 * 1024 * 1024);
  wk_tensor *again = wk_empty(WK_SHAPE(1024, 1024), WK_OPTS(.dtype = WK_F32, .device = d)); /* from the cache */
  wk_memory_stats st = {.struct_size = sizeof st};
  TU_OK(wk_device_memory_stats(d, &st));
  ck_assert_int_ge(st.segments, 1);
  wk_release(again);
  TU_OK(wk_device_empty_cache(d));
  char *sum = wk_device_memory_summary(d);
  TU_NOTNULL(sum);
  ck_assert_msg(strstr(sum, "Allocated memory") && strstr(sum, "Reserved memory"), "%s", sum);
  wk_free(sum);
}
END_TEST

START_TEST(test_cuda_oom_is_recoverable) {
  wk_device d = cuda0();
  wk_device_props p = {.struct_size = sizeof p};
  TU_OK(wk_device_get_properties(d, &p));
  wk_tensor *keep = wk_empty(WK_SHAPE(256, 1024), WK_OPTS(.dtype = WK_F32, .device = d));
  TU_NOTNULL(keep);
  int64_t n = (int64_t)(p.total_memory / 4) * 2; /* twice the device */
  wk_tensor *huge = wk_empty(WK_SHAPE(n), WK_OPTS(.dtype = WK_F32, .device = d));
  ck_assert_ptr_null(huge);
  ck_assert_int_eq(wk_last_error(), WK_ERR_NO_MEMORY);
  const char *m = wk_last_error_message();
  ck_assert_msg(strstr(m, "CUDA out of memory. Tried to allocate") && strstr(m, "is allocated by tensors") &&
                    strstr(m, "is reserved by the caching allocator") && strstr(m, "wk_device_empty_cache"),
                "%s", m);
  printf("OOM message: %s\n", m);
  wk_clear_error();
  wk_memory_stats st = {.struct_size = sizeof st};
  TU_OK(wk_device_memory_stats(d, &st));
  ck_assert_int_ge(st.num_ooms, 1);
  /* the program goes on: free, empty the cache, allocate again */
  wk_release(keep);
  TU_OK(wk_device_empty_cache(d));
  wk_tensor *ok = zeros_on(WK_SHAPE(1024, 1024), d);
  TU_NOTNULL(ok);
  wk_release(ok);
}
END_TEST

START_TEST(test_cuda_copies) {
  wk_device d = cuda0();
  wk_tensor *x = tu_rand(WK_SHAPE(33, 17), WK_F32, -3, 3, 1);
  wk_tensor *g = wk_to_device(x, d); /* H2D contiguous */
  TU_NOTNULL(g);
  expect_same(g, x, 0);
  wk_tensor *xt = wk_t(x), *gt = wk_to_device(xt, d); /* strided source */
  expect_same(gt, xt, 0);
  wk_tensor *gtt = wk_t(g), *c = wk_contiguous(gtt); /* D2D strided through copy_ */
  TU_NOTNULL(c);
  expect_same(c, xt, 0);
  wk_tensor *g64 = wk_to_dtype(g, WK_F64); /* dtype conversion on the device */
  TU_NOTNULL(g64);
  ck_assert_int_eq(wk_tensor_device(g64).type, d.type);
  expect_same(g64, x, 1e-7);
  wk_tensor *gh = wk_to_dtype(g, WK_BF16);
  expect_same(gh, x, 1e-2);
  wk_tensor *gi = wk_to_dtype(g, WK_I32), *xi = wk_to_dtype(x, WK_I32);
  expect_same(gi, xi, 0);
  /* fill_ and zero_ on a strided view */
  wk_tensor *z = zeros_on(WK_SHAPE(4, 6), d);
  TU_NOTNULL(z);
  wk_tensor *zt = wk_t(z);
  ck_assert_ptr_nonnull(wk_fill_(zt, 2.5));
  ck_assert_double_eq(sum_of(z), 2.5 * 24);
  ck_assert_ptr_nonnull(wk_zero_(z));
  ck_assert_double_eq(sum_of(z), 0);
  /* between two GPUs when there are two */
  if (wk_device_count(d.type) > 1) {
    wk_tensor *g1 = wk_to_device(g, (wk_device){d.type, 1});
    expect_same(g1, x, 0);
    wk_release(g1);
  }
  wk_release(zt);
  wk_release(z);
  wk_release(xi);
  wk_release(gi);
  wk_release(gh);
  wk_release(g64);
  wk_release(c);
  wk_release(gtt);
  wk_release(gt);
  wk_release(xt);
  wk_release(g);
  wk_release(x);
}
END_TEST

START_TEST(test_cuda_pinned_non_blocking) {
  wk_device d = cuda0();
  wk_tensor *x = tu_rand(WK_SHAPE(256, 256), WK_F32, -1, 1, 2);
  wk_tensor *p = wk_pin_memory(x);
  TU_NOTNULL(p);
  ck_assert(wk_tensor_is_pinned(p));
  wk_tensor *g = wk_to_non_blocking(p, d);
  TU_NOTNULL(g);
  wk_tensor *h = wk_to_non_blocking(g, wk_cpu());
  TU_NOTNULL(h);
  ck_assert(wk_tensor_is_pinned(h));
  TU_OK(wk_stream_synchronize(wk_current_stream(d)));
  expect_same(h, x, 0);
  /* async copy on a side stream, ordered by an event */
  wk_stream s;
  TU_OK(wk_stream_create(d, 0, &s));
  wk_tensor *dst = wk_empty(WK_SHAPE(256, 256), WK_OPTS(.device = d));
  TU_OK(wk_device_copy_async(wk_tensor_data(dst), d, wk_tensor_data(p), wk_cpu(), 256 * 256 * 4, s));
  wk_event e;
  TU_OK(wk_event_create(d, 0, &e));
  TU_OK(wk_event_record(e, s));
  TU_OK(wk_stream_wait_event(wk_current_stream(d), e));
  expect_same(dst, x, 0); /* the read on the current stream waits for the copy */
  wk_event_destroy(e);
  TU_OK(wk_stream_synchronize(s));
  wk_stream_destroy(s);
  wk_release(dst);
  wk_release(h);
  wk_release(g);
  wk_release(p);
  wk_release(x);
}
END_TEST

START_TEST(test_cuda_streams_and_events) {
  wk_device d = cuda0();
  wk_stream s;
  TU_OK(wk_stream_create(d, -1, &s));
  TU_OK(wk_set_current_stream(s));
  ck_assert_ptr_eq(wk_current_stream(d).handle, s.handle);
  wk_event a, b;
  TU_OK(wk_event_create(d, WK_EVENT_ENABLE_TIMING, &a));
  TU_OK(wk_event_create(d, WK_EVENT_ENABLE_TIMING, &b));
  wk_tensor *x = zeros_on(WK_SHAPE(1 << 20), d);
  ck_assert_ptr_nonnull(wk_fill_(x, 1.0));
  TU_OK(wk_event_record(a, s));
  wk_tensor *y = wk_add(x, x);
  for (int i = 0; i < 20; i++) {
    wk_tensor *t = wk_mul(y, x);
    wk_release(y);
    y = t;
  }
  TU_OK(wk_event_record(b, s));
  TU_OK(wk_event_synchronize(b));
  bool done = false;
  TU_OK(wk_event_query(b, &done));
  ck_assert(done);
  float ms = -1;
  TU_OK(wk_event_elapsed_time(a, b, &ms));
  ck_assert(ms >= 0);
  TU_OK(wk_stream_query(s, &done));
  ck_assert(done);
  ck_assert_double_eq(sum_of(y), 2.0 * (1 << 20));
  TU_OK(wk_set_current_stream((wk_stream){d, NULL}));
  wk_release(y);
  wk_release(x);
  wk_event_destroy(a);
  wk_event_destroy(b);
  wk_stream_destroy(s);
}
END_TEST

START_TEST(test_cuda_elementwise_vs_cpu) {
  wk_device d = cuda0();
  wk_tensor *a = tu_rand(WK_SHAPE(5, 1, 7), WK_F32, -2, 2, 3), *b = tu_rand(WK_SHAPE(4, 7), WK_F32, -2, 2, 4);
  wk_tensor *ga = wk_to_device(a, d), *gb = wk_to_device(b, d);
  wk_tensor *r1 = wk_add(ga, gb), *e1 = wk_add(a, b);
  TU_NOTNULL(r1);
  ck_assert_int_eq(wk_tensor_device(r1).type, d.type);
  expect_same(r1, e1, 1e-6);
  wk_tensor *r2 = wk_mul(ga, gb), *e2 = wk_mul(a, b);
  expect_same(r2, e2, 1e-6);
  wk_tensor *bt = wk_t(gb), *ct = wk_t(b);
  wk_tensor *r3 = wk_relu(bt), *e3 = wk_relu(ct); /* strided input */
  expect_same(r3, e3, 0);
  wk_value o1[1], o2[1];
  TU_OK(wk_call("add", (wk_value[]){WK_VT(ga), WK_VT(gb), WK_VF(-0.5)}, 3, o1)); /* alpha */
  TU_OK(wk_call("add", (wk_value[]){WK_VT(a), WK_VT(b), WK_VF(-0.5)}, 3, o2));
  wk_tensor *r4 = o1[0].u.t, *e4 = o2[0].u.t;
  expect_same(r4, e4, 1e-6);
  wk_release(r4);
  wk_release(e4);
  wk_release(r3);
  wk_release(e3);
  wk_release(bt);
  wk_release(ct);
  wk_release(r2);
  wk_release(e2);
  wk_release(r1);
  wk_release(e1);
  wk_release(ga);
  wk_release(gb);
  wk_release(a);
  wk_release(b);
}
END_TEST

/* ---- without a device: the plugin is there and explains itself -------------------- */
static int check_without_device(void) {
  int bad = 0;
#define EXPECT(cond, ...)                                  \
  do {                                                     \
    if (!(cond)) {                                         \
      fprintf(stderr, "FAIL: " __VA_ARGS__);               \
      fprintf(stderr, " (%s)\n", wk_last_error_message()); \
      bad++;                                               \
    }                                                      \
  } while (0)
  wk_plugin *p = wk_plugin_find("cuda");
  EXPECT(p && wk_plugin_get_status(p) == WK_PLUGIN_LOADED, "the cuda plugin is not loaded");
  int32_t ty = wk_device_type_find("cuda");
  const char *why = wk_device_type_status(ty);
  EXPECT(ty >= 0 && why && *why, "no device type 'cuda' or no reason");
  wk_device d = {ty, 0};
  EXPECT(wk_device_memory_allocated(d) == -1 && wk_last_error() == WK_ERR_DEVICE &&
             strstr(wk_last_error_message(), why),
         "memory_allocated(cuda:0) does not name the reason");
  wk_clear_error();
  wk_tensor *x = wk_ones(WK_SHAPE(3), WK_OPTS(0));
  EXPECT(!wk_to_device(x, d) && strstr(wk_last_error_message(), "cuda:0 not available"), "to(cuda) did not fail");
  wk_clear_error();
  wk_tensor *pinned = wk_pin_memory(x);
  EXPECT(!pinned && wk_last_error() == WK_ERR_UNSUPPORTED && strstr(wk_last_error_message(), why),
         "pin_memory without a device is not UNSUPPORTED with the reason");
  wk_clear_error();
  wk_stream s;
  EXPECT(wk_stream_create(d, 0, &s) == WK_ERR_DEVICE, "stream_create on an absent device");
  wk_clear_error();
  wk_release(pinned);
  wk_release(x);
  printf("SKIP: no CUDA device: %s\n", why ? why : "(cuda plugin not loaded)");
  return bad ? EXIT_FAILURE : 77;
}

static Suite *make_suite(void) {
  Suite *s = suite_create("cuda");
  TCase *tc = tcase_create("runtime");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_cuda_properties);
  tcase_add_test(tc, test_cuda_allocator_stats);
  tcase_add_test(tc, test_cuda_oom_is_recoverable);
  tcase_add_test(tc, test_cuda_copies);
  tcase_add_test(tc, test_cuda_pinned_non_blocking);
  tcase_add_test(tc, test_cuda_streams_and_events);
  tcase_add_test(tc, test_cuda_elementwise_vs_cpu);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  if (wk_init() != WK_OK) {
    fprintf(stderr, "wk_init: %s\n", wk_last_error_message());
    return EXIT_FAILURE;
  }
  int32_t ty = wk_device_type_find("cuda");
  if (ty < 0) {
    printf("SKIP: the cuda plugin is not loaded (search path %s)\n", wk_plugin_search_path());
    return 77;
  }
  if (wk_device_count(ty) == 0) return check_without_device();
  SRunner *sr = srunner_create(make_suite());
  srunner_set_fork_status(sr, CK_NOFORK); /* CUDA is initialised already: a forked child cannot use it */
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
