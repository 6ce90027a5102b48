/* Check suite for the ABI 1.1 device calls (current device, properties,
 * streams, events, async copies, pinned memory, memory statistics) through
 * fake device types registered by the test: one with every 1.1 slot, one
 * built like a 1.0 plugin (defaults), and cpu (no streams, no statistics). */
#include <stdatomic.h>

#include "testutil.h"

/* ---- "gpu": a fake device type with every ABI 1.1 slot -------------------------- */
typedef struct {
  int id;
  bool done;
} fake_stream;

static int g_current, g_async_copies, g_pinned_live, g_empty_calls;
static int64_t g_alloc_bytes, g_peak;

static int gpu_count(void *u) { return 2; }
static void *gpu_alloc(void *u, int index, size_t n) {
  g_alloc_bytes += (int64_t)n;
  if (g_alloc_bytes > g_peak) g_peak = g_alloc_bytes;
  size_t *p = malloc(sizeof(size_t) + (n ? n : 1));
  *p = n;
  return p + 1;
}
static void gpu_free(void *u, int index, void *p) {
  size_t *b = (size_t *)p - 1;
  g_alloc_bytes -= (int64_t)*b;
  free(b);
}
static wk_status gpu_copy(void *u, void *dst, wk_device dd, const void *src, wk_device sd, size_t n) {
  memcpy(dst, src, n);
  return WK_OK;
}
static int gpu_current(void *u) { return g_current; }
static wk_status gpu_set_current(void *u, int index) {
  g_current = index;
  return WK_OK;
}
static wk_status gpu_props(void *u, int index, wk_device_props *p) {
  snprintf(p->name, sizeof p->name, "Fake GPU %d", index);
  p->total_memory = 80ull << 30;
  p->major = 9;
  p->minor = 0;
  p->multi_processor_count = 132;
  p->warp_size = 32;
  return WK_OK;
}
static wk_status gpu_stream_create(void *u, int index, int prio, void **out) {
  static int ids;
  fake_stream *s = calloc(1, sizeof *s);
  s->id = ++ids;
  *out = s;
  return WK_OK;
}
static void gpu_stream_destroy(void *u, int index, void *s) { free(s); }
static _Thread_local void *tl_stream[2];
static void *gpu_current_stream(void *u, int index) { return tl_stream[index]; }
static wk_status gpu_set_current_stream(void *u, int index, void *s) {
  tl_stream[index] = s;
  return WK_OK;
}
static wk_status gpu_stream_sync(void *u, int index, void *s) {
  if (s) ((fake_stream *)s)->done = true;
  return WK_OK;
}
static wk_status gpu_stream_query(void *u, int index, void *s, bool *done) {
  *done = s ? ((fake_stream *)s)->done : true;
  return WK_OK;
}
static wk_status gpu_stream_wait(void *u, int index, void *s, void *e) { return WK_OK; }
typedef struct {
  unsigned flags;
  double t;
  bool recorded;
} fake_event;
static wk_status gpu_event_create(void *u, int index, unsigned flags, void **out) {
  fake_event *e = calloc(1, sizeof *e);
  e->flags = flags;
  *out = e;
  return WK_OK;
}
static void gpu_event_destroy(void *u, int index, void *e) { free(e); }
static wk_status gpu_event_record(void *u, int index, void *e, void *s) {
  static double clock_ms;
  ((fake_event *)e)->t = clock_ms += 2.5;
  ((fake_event *)e)->recorded = true;
  return WK_OK;
}
static wk_status gpu_event_sync(void *u, int index, void *e) { return WK_OK; }
static wk_status gpu_event_query(void *u, int index, void *e, bool *done) {
  *done = ((fake_event *)e)->recorded;
  return WK_OK;
}
static wk_status gpu_event_elapsed(void *u, int index, void *a, void *b, float *ms) {
  fake_event *x = a, *y = b;
  if (!(x->flags & WK_EVENT_ENABLE_TIMING) || !(y->flags & WK_EVENT_ENABLE_TIMING))
    return wk_error(WK_ERR_INVALID_ARG, "elapsed_time: events need WK_EVENT_ENABLE_TIMING");
  *ms = (float)(y->t - x->t);
  return WK_OK;
}
static void *g_last_async_stream;
static wk_status gpu_copy_async(void *u, void *dst, wk_device dd, const void *src, wk_device sd, size_t n, void *s) {
  g_async_copies++;
  g_last_async_stream = s;
  memcpy(dst, src, n);
  return WK_OK;
}
static void *gpu_pin(void *u, size_t n) {
  g_pinned_live++;
  return malloc(n);
}
static void gpu_unpin(void *u, void *p) {
  g_pinned_live--;
  free(p);
}
static wk_status gpu_stats(void *u, int index, wk_memory_stats *st) {
  st->allocated = g_alloc_bytes;
  st->max_allocated = g_peak;
  st->reserved = g_alloc_bytes + 1024;
  st->max_reserved = g_peak + 1024;
  st->num_ooms = 3;
  return WK_OK;
}
static wk_status gpu_reset_peak(void *u, int index) {
  g_peak = g_alloc_bytes;
  return WK_OK;
}
static wk_status gpu_empty_cache(void *u, int index) {
  g_empty_calls++;
  return WK_OK;
}
static size_t gpu_summary(void *u, int index, char *buf, size_t n) {
  return (size_t)snprintf(buf, n, "fake summary of gpu:%d, %lld bytes", index, (long long)g_alloc_bytes);
}

static int32_t register_gpu(void) {
  wk_device_iface f = {.struct_size = sizeof f, .abi_version = wk_abi_version(), .name = "gpu",
                       .device_count = gpu_count, .alloc = gpu_alloc, .free = gpu_free, .copy = gpu_copy,
                       .current_device = gpu_current, .set_current_device = gpu_set_current,
                       .get_properties = gpu_props, .stream_create = gpu_stream_create,
                       .stream_destroy = gpu_stream_destroy, .current_stream = gpu_current_stream,
                       .set_current_stream = gpu_set_current_stream, .stream_synchronize = gpu_stream_sync,
                       .stream_query = gpu_stream_query, .stream_wait_event = gpu_stream_wait,
                       .event_create = gpu_event_create, .event_destroy = gpu_event_destroy,
                       .event_record = gpu_event_record, .event_synchronize = gpu_event_sync,
                       .event_query = gpu_event_query, .event_elapsed_ms = gpu_event_elapsed,
                       .copy_async = gpu_copy_async, .host_alloc_pinned = gpu_pin, .host_free_pinned = gpu_unpin,
                       .memory_stats = gpu_stats, .reset_peak_memory_stats = gpu_reset_peak,
                       .empty_cache = gpu_empty_cache, .memory_summary = gpu_summary};
  int32_t ty = -1;
  TU_OK(wk_device_type_register(&f, &ty));
  return ty;
}

/* "old": registered the way a plugin built for ABI 1.0 does (80-byte struct, version 1.0). */
static int old_count(void *u) { return 2; }
static int32_t register_old(void) {
  wk_device_iface f;
  memset(&f, 0xab, sizeof f); /* bytes past the 1.0 struct must never be read */
  f.struct_size = 80;
  f.abi_version = (uint32_t)WK_ABI_MAJOR << 16;
  f.name = "old";
  f.user = NULL;
  f.device_count = old_count;
  f.alloc = gpu_alloc;
  f.free = gpu_free;
  f.copy = gpu_copy;
  f.synchronize = NULL;
  f.status_message = NULL;
  int32_t ty = -1;
  TU_OK(wk_device_type_register(&f, &ty));
  return ty;
}

static int none_count(void *u) { return 0; }
static const char *none_status(void *u) { return "no driver here"; }
static int32_t register_none(void) {
  wk_device_iface f = {.struct_size = sizeof f, .abi_version = wk_abi_version(), .name = "none",
                       .device_count = none_count, .alloc = gpu_alloc, .free = gpu_free, .copy = gpu_copy,
                       .status_message = none_status, .memory_stats = gpu_stats,
                       .host_alloc_pinned = gpu_pin, .host_free_pinned = gpu_unpin};
  int32_t ty = -1;
  TU_OK(wk_device_type_register(&f, &ty));
  return ty;
}

START_TEST(test_device_abi_version) {
  ck_assert_uint_eq(wk_abi_version(), ((uint32_t)WK_ABI_MAJOR << 16) | WK_ABI_MINOR);
  ck_assert_uint_ge(WK_ABI_MINOR, 1); /* the 1.1 device slots stay */
  ck_assert_uint_eq(sizeof(wk_device_iface), 264);
}
END_TEST

START_TEST(test_device_current) {
  ck_assert_int_eq(wk_device_current(WK_DEVICE_CPU), 0);
  ck_assert_int_eq(wk_device_current(40), -1);
  TU_FAILS_WITH(WK_ERR_DEVICE, "unknown device type 40");
  int32_t gpu = register_gpu(), old = register_old();
  TU_OK(wk_device_set_current((wk_device){gpu, 1}));
  ck_assert_int_eq(wk_device_current(gpu), 1);
  ck_assert_int_eq(g_current, 1);
  /* a 1.0 plugin has no slot: the core remembers the choice */
  ck_assert_int_eq(wk_device_current(old), 0);
  TU_OK(wk_device_set_current((wk_device){old, 1}));
  ck_assert_int_eq(wk_device_current(old), 1);
  ck_assert_int_eq(wk_device_set_current((wk_device){old, 2}), WK_ERR_DEVICE);
  TU_FAILS_WITH(WK_ERR_DEVICE, "device old:2 not available (2 devices present)");
}
END_TEST

START_TEST(test_device_properties) {
  int32_t gpu = register_gpu();
  wk_device_props p = {.struct_size = sizeof p};
  TU_OK(wk_device_get_properties((wk_device){gpu, 1}, &p));
  ck_assert_str_eq(p.name, "Fake GPU 1");
  ck_assert_uint_eq(p.total_memory, 80ull << 30);
  ck_assert_int_eq(p.major, 9);
  ck_assert_int_eq(p.multi_processor_count, 132);
  /* a caller built against an older, smaller struct gets its prefix only */
  struct {
    wk_device_props p;
    int canary;
  } small = {.p.struct_size = offsetof(wk_device_props, major), .canary = 77};
  small.p.major = -5;
  TU_OK(wk_device_get_properties((wk_device){gpu, 0}, &small.p));
  ck_assert_str_eq(small.p.name, "Fake GPU 0");
  ck_assert_int_eq(small.p.major, -5);
  ck_assert_int_eq(small.canary, 77);
  ck_assert_int_eq(wk_device_get_properties(wk_cpu(), &p), WK_ERR_UNSUPPORTED);
  TU_FAILS_WITH(WK_ERR_UNSUPPORTED, "wk_device_get_properties: device type 'cpu' has no device properties");
  p.struct_size = 0;
  ck_assert_int_eq(wk_device_get_properties((wk_device){gpu, 0}, &p), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "struct_size 0 is too small");
  ck_assert_int_eq(wk_device_get_properties((wk_device){gpu, 0}, NULL), WK_ERR_NULL);
  wk_clear_error();
}
END_TEST

START_TEST(test_device_streams) {
  int32_t gpu = register_gpu();
  wk_device g0 = {gpu, 0};
  wk_stream def = wk_current_stream(g0);
  ck_assert_ptr_null(def.handle);
  ck_assert_int_eq(def.device.type, gpu);
  wk_stream s;
  TU_OK(wk_stream_create(g0, -1, &s));
  ck_assert_ptr_nonnull(s.handle);
  TU_OK(wk_set_current_stream(s));
  ck_assert_ptr_eq(wk_current_stream(g0).handle, s.handle);
  ck_assert_ptr_null(wk_current_stream((wk_device){gpu, 1}).handle); /* per device */
  bool done = true;
  TU_OK(wk_stream_query(s, &done));
  ck_assert(!done);
  TU_OK(wk_stream_synchronize(s));
  TU_OK(wk_stream_query(s, &done));
  ck_assert(done);
  TU_OK(wk_set_current_stream(def));
  ck_assert_ptr_null(wk_current_stream(g0).handle);
  wk_stream_destroy(s);
  wk_stream_destroy(def); /* the default stream: ignored */
  /* cpu: only the default stream */
  wk_stream c = wk_current_stream(wk_cpu());
  ck_assert_int_eq(c.device.type, WK_DEVICE_CPU);
  ck_assert_ptr_null(c.handle);
  TU_OK(wk_stream_synchronize(c));
  TU_OK(wk_stream_query(c, &done));
  ck_assert(done);
  ck_assert_int_eq(wk_stream_create(wk_cpu(), 0, &s), WK_ERR_UNSUPPORTED);
  TU_FAILS_WITH(WK_ERR_UNSUPPORTED, "wk_stream_create: device type 'cpu' has no streams");
  ck_assert_ptr_null(s.handle);
  ck_assert_int_eq(wk_stream_create((wk_device){gpu, 7}, 0, &s), WK_ERR_DEVICE);
  TU_FAILS_WITH(WK_ERR_DEVICE, "device gpu:7 not available");
  ck_assert_int_eq(wk_stream_query(c, NULL), WK_ERR_NULL);
  wk_clear_error();
  ck_assert_int_eq(wk_stream_create(g0, 0, NULL), WK_ERR_NULL);
  wk_clear_error();
}
END_TEST

START_TEST(test_device_events) {
  int32_t gpu = register_gpu();
  wk_device g0 = {gpu, 0}, g1 = {gpu, 1};
  wk_event a, b, untimed, other;
  TU_OK(wk_event_create(g0, WK_EVENT_ENABLE_TIMING, &a));
  TU_OK(wk_event_create(g0, WK_EVENT_ENABLE_TIMING | WK_EVENT_BLOCKING, &b));
  TU_OK(wk_event_create(g0, WK_EVENT_DEFAULT, &untimed));
  TU_OK(wk_event_create(g1, 0, &other));
  wk_stream s = wk_current_stream(g0);
  bool done = true;
  TU_OK(wk_event_query(a, &done));
  ck_assert(!done);
  TU_OK(wk_event_record(a, s));
  TU_OK(wk_event_record(b, s));
  TU_OK(wk_event_record(untimed, s));
  TU_OK(wk_event_query(a, &done));
  ck_assert(done);
  TU_OK(wk_event_synchronize(b));
  float ms = -1;
  TU_OK(wk_event_elapsed_time(a, b, &ms));
  ck_assert_float_eq_tol(ms, 2.5f, 1e-6f);
  ck_assert_int_eq(wk_event_elapsed_time(a, untimed, &ms), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "WK_EVENT_ENABLE_TIMING");
  ck_assert_int_eq(wk_event_elapsed_time(a, other, &ms), WK_ERR_DEVICE);
  TU_FAILS_WITH(WK_ERR_DEVICE, "events on different devices (gpu:0 and gpu:1)");
  TU_OK(wk_stream_wait_event(s, a));
  ck_assert_int_eq(wk_stream_wait_event(s, other), WK_ERR_DEVICE);
  TU_FAILS_WITH(WK_ERR_DEVICE, "the stream is on gpu:0 but the event on gpu:1");
  ck_assert_int_eq(wk_event_record(other, s), WK_ERR_DEVICE);
  wk_clear_error();
  wk_event_destroy(a);
  ck_assert_int_eq(wk_event_create(g0, 0x100, &a), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "unknown flags 0x100");
  ck_assert_int_eq(wk_event_synchronize((wk_event){g0, NULL}), WK_ERR_NULL);
  TU_FAILS_WITH(WK_ERR_NULL, "the event was not created");
  ck_assert_int_eq(wk_event_create(wk_cpu(), 0, &a), WK_ERR_UNSUPPORTED);
  TU_FAILS_WITH(WK_ERR_UNSUPPORTED, "device type 'cpu' has no events");
  wk_event_destroy(b);
  wk_event_destroy(untimed);
  wk_event_destroy(other);
  wk_event_destroy((wk_event){g0, NULL}); /* ignored */
}
END_TEST

START_TEST(test_device_copy_async) {
  int32_t gpu = register_gpu(), old = register_old();
  wk_device g0 = {gpu, 0};
  float host[4] = {1, 2, 3, 4}, back[4] = {0};
  void *dev = wk_device_alloc(g0, sizeof host);
  wk_stream s;
  TU_OK(wk_stream_create(g0, 0, &s));
  TU_OK(wk_device_copy_async(dev, g0, host, wk_cpu(), sizeof host, s));
  ck_assert_int_eq(g_async_copies, 1);
  ck_assert_ptr_eq(g_last_async_stream, s.handle);
  TU_OK(wk_device_copy_async(back, wk_cpu(), dev, g0, sizeof back, wk_current_stream(g0)));
  ck_assert_int_eq(g_async_copies, 2);
  ck_assert(memcmp(host, back, sizeof host) == 0);
  /* the stream must be the device side's */
  ck_assert_int_eq(wk_device_copy_async(dev, g0, host, wk_cpu(), sizeof host, wk_current_stream((wk_device){gpu, 1})),
                   WK_ERR_DEVICE);
  TU_FAILS_WITH(WK_ERR_DEVICE, "the stream is on gpu:1 but the copy runs on gpu:0");
  ck_assert_int_eq(wk_device_copy_async(NULL, g0, host, wk_cpu(), 4, s), WK_ERR_NULL);
  wk_clear_error();
  wk_stream_destroy(s);
  /* a 1.0 plugin has no copy_async: a synchronous copy */
  wk_device o0 = {old, 0};
  void *odev = wk_device_alloc(o0, sizeof host);
  memset(back, 0, sizeof back);
  TU_OK(wk_device_copy_async(odev, o0, host, wk_cpu(), sizeof host, wk_current_stream(o0)));
  TU_OK(wk_device_copy_async(back, wk_cpu(), odev, o0, sizeof back, wk_current_stream(o0)));
  ck_assert(memcmp(host, back, sizeof host) == 0);
  ck_assert_int_eq(g_async_copies, 2);
  ck_assert_int_eq(wk_stream_create(o0, 0, &s), WK_ERR_UNSUPPORTED);
  TU_FAILS_WITH(WK_ERR_UNSUPPORTED, "device type 'old' has no streams");
  wk_device_free(o0, odev);
  wk_device_free(g0, dev);
}
END_TEST

START_TEST(test_device_pin_memory) {
  wk_tensor *x = TU_T(WK_F32, (2, 3), 1, 2, 3, 4, 5, 6);
  ck_assert(!wk_tensor_is_pinned(x));
  ck_assert(!wk_tensor_is_pinned(NULL));
  ck_assert_ptr_null(wk_pin_memory(x)); /* only cpu is registered */
  TU_FAILS_WITH(WK_ERR_UNSUPPORTED, "pin_memory: no loaded device plugin offers pinned host memory");
  int32_t gpu = register_gpu();
  register_old(); /* offers none; must not be picked */
  wk_tensor *xt = wk_t(x);
  wk_tensor *p = wk_pin_memory(xt); /* strided input: a dense pinned copy */
  TU_NOTNULL(p);
  ck_assert(wk_tensor_is_pinned(p));
  ck_assert(wk_tensor_is_contiguous(p));
  ck_assert_int_eq(wk_tensor_device(p).type, WK_DEVICE_CPU);
  ck_assert_int_eq(g_pinned_live, 1);
  TU_EQ_VALS(p, 1, 4, 2, 5, 3, 6);
  wk_tensor *p2 = wk_pin_memory(p); /* already pinned: same memory */
  ck_assert(wk_tensor_is_pinned(p2));
  ck_assert(wk_tensor_same_storage(p, p2));
  ck_assert_int_eq(g_pinned_live, 1);
  wk_release(p2);
  ck_assert_ptr_null(wk_pin_memory(NULL));
  TU_FAILS_WITH(WK_ERR_NULL, "wk_pin_memory");
  wk_tensor *onGpu = wk_to_device(x, (wk_device){gpu, 0});
  ck_assert_ptr_null(wk_pin_memory(onGpu));
  TU_FAILS_WITH(WK_ERR_DEVICE, "cannot pin a tensor on gpu:0: only cpu tensors can be pinned");
  wk_release(onGpu);
  wk_release(p);
  ck_assert_int_eq(g_pinned_live, 0); /* freed through the plugin */
  wk_release(xt);
  wk_release(x);
}
END_TEST

START_TEST(test_device_to_non_blocking) {
  int32_t gpu = register_gpu();
  wk_device g0 = {gpu, 0};
  wk_tensor *x = TU_T(WK_F32, (4), 1, 2, 3, 4);
  wk_tensor *px = wk_pin_memory(x);
  int before = g_async_copies;
  wk_tensor *y = wk_to_non_blocking(px, g0); /* pinned -> device: queued on the current stream */
  TU_NOTNULL(y);
  ck_assert_int_eq(g_async_copies, before + 1);
  ck_assert_int_eq(wk_tensor_device(y).type, gpu);
  wk_tensor *h = wk_to_non_blocking(y, wk_cpu()); /* device -> cpu: into pinned memory */
  TU_NOTNULL(h);
  ck_assert_int_eq(g_async_copies, before + 2);
  ck_assert(wk_tensor_is_pinned(h));
  TU_OK(wk_stream_synchronize(wk_current_stream(g0)));
  TU_EQ_VALS(h, 1, 2, 3, 4);
  /* pageable memory: a plain (synchronous) copy, same values */
  wk_tensor *y2 = wk_to_non_blocking(x, g0);
  TU_NOTNULL(y2);
  ck_assert_int_eq(g_async_copies, before + 2);
  wk_tensor *h2 = wk_to_device(y2, wk_cpu());
  TU_EQ_VALS(h2, 1, 2, 3, 4);
  /* same device: an alias, as to() */
  wk_tensor *same = wk_to_non_blocking(x, wk_cpu());
  ck_assert(wk_tensor_same_storage(same, x));
  ck_assert_ptr_null(wk_to_non_blocking(NULL, g0));
  TU_FAILS_WITH(WK_ERR_NULL, "wk_to_non_blocking");
  wk_release(same);
  wk_release(h2);
  wk_release(y2);
  wk_release(h);
  wk_release(y);
  wk_release(px);
  wk_release(x);
  ck_assert_int_eq(g_pinned_live, 0);
}
END_TEST

START_TEST(test_device_memory_stats) {
  int32_t gpu = register_gpu();
  wk_device g0 = {gpu, 0};
  void *a = wk_device_alloc(g0, 1000);
  ck_assert_int_eq(wk_device_memory_allocated(g0), 1000);
  ck_assert_int_eq(wk_device_memory_reserved(g0), 2024);
  wk_device_free(g0, a);
  ck_assert_int_eq(wk_device_memory_allocated(g0), 0);
  ck_assert_int_eq(wk_device_max_memory_allocated(g0), 1000);
  ck_assert_int_eq(wk_device_max_memory_reserved(g0), 2024);
  TU_OK(wk_device_reset_peak_memory_stats(g0));
  ck_assert_int_eq(wk_device_max_memory_allocated(g0), 0);
  wk_memory_stats st = {.struct_size = sizeof st};
  TU_OK(wk_device_memory_stats(g0, &st));
  ck_assert_int_eq(st.num_ooms, 3);
  ck_assert_uint_eq(st.struct_size, sizeof st);
  TU_OK(wk_device_empty_cache(g0));
  ck_assert_int_eq(g_empty_calls, 1);
  char *sum = wk_device_memory_summary(g0);
  TU_NOTNULL(sum);
  ck_assert_str_eq(sum, "fake summary of gpu:0, 0 bytes");
  wk_free(sum);
  /* cpu keeps no statistics: a clear error, never a crash */
  ck_assert_int_eq(wk_device_memory_allocated(wk_cpu()), -1);
  TU_FAILS_WITH(WK_ERR_UNSUPPORTED, "wk_device_memory_allocated: device type 'cpu' has no memory statistics");
  ck_assert_int_eq(wk_device_max_memory_reserved(wk_cpu()), -1);
  wk_clear_error();
  ck_assert_ptr_null(wk_device_memory_summary(wk_cpu()));
  TU_FAILS_WITH(WK_ERR_UNSUPPORTED, "wk_device_memory_summary");
  ck_assert_int_eq(wk_device_reset_peak_memory_stats(wk_cpu()), WK_ERR_UNSUPPORTED);
  wk_clear_error();
  TU_OK(wk_device_empty_cache(wk_cpu())); /* nothing cached: fine */
  ck_assert_int_eq(wk_device_memory_allocated((wk_device){41, 0}), -1);
  TU_FAILS_WITH(WK_ERR_DEVICE, "unknown device type 41");
  ck_assert_int_eq(wk_device_memory_stats(g0, NULL), WK_ERR_NULL);
  wk_clear_error();
}
END_TEST

START_TEST(test_device_absent) {
  /* a plugin with no devices: every call names the device and the plugin's reason */
  int32_t none = register_none();
  wk_device n0 = {none, 0};
  ck_assert_int_eq(wk_device_memory_allocated(n0), -1);
  TU_FAILS_WITH(WK_ERR_DEVICE, "device none:0 not available (0 devices present: no driver here)");
  wk_stream s;
  ck_assert_int_eq(wk_stream_create(n0, 0, &s), WK_ERR_DEVICE);
  TU_FAILS_WITH(WK_ERR_DEVICE, "no driver here");
  ck_assert_ptr_null(wk_current_stream(n0).handle);
  ck_assert_int_eq(wk_device_set_current(n0), WK_ERR_DEVICE);
  wk_clear_error();
  /* pinned memory offered but no device: UNSUPPORTED with the reason (a loader goes on unpinned) */
  wk_tensor *x = TU_T(WK_F32, (2), 1, 2);
  ck_assert_ptr_null(wk_pin_memory(x));
  TU_FAILS_WITH(WK_ERR_UNSUPPORTED, "pin_memory: pinned memory needs a device, and none has none: no driver here");
  ck_assert_int_eq(g_pinned_live, 0);
  wk_release(x);
  /* the default summary, built from memory_stats, for a plugin without its own */
  wk_device_iface f = {.struct_size = sizeof f, .abi_version = wk_abi_version(), .name = "plain",
                       .device_count = old_count, .alloc = gpu_alloc, .free = gpu_free, .copy = gpu_copy,
                       .memory_stats = gpu_stats};
  int32_t plain = -1;
  TU_OK(wk_device_type_register(&f, &plain));
  char *sum = wk_device_memory_summary((wk_device){plain, 1});
  TU_NOTNULL(sum);
  ck_assert_msg(strstr(sum, "Memory summary of plain:1") && strstr(sum, "OOMs: 3"), "%s", sum);
  wk_free(sum);
}
END_TEST

/* Only the cpu plugin: the fake types must be the only ones offering pinned memory. */
static void setup(void) {
  setenv("WICK_PLUGINS", "cpu", 1);
  tu_setup();
}

static Suite *make_suite(void) {
  Suite *s = suite_create("device");
  TCase *tc = tcase_create("abi_1_1");
  tcase_add_checked_fixture(tc, setup, NULL);
  tcase_set_timeout(tc, 60); /* generous for valgrind and sanitizer runs */
  tcase_add_test(tc, test_device_abi_version);
  tcase_add_test(tc, test_device_current);
  tcase_add_test(tc, test_device_properties);
  tcase_add_test(tc, test_device_streams);
  tcase_add_test(tc, test_device_events);
  tcase_add_test(tc, test_device_copy_async);
  tcase_add_test(tc, test_device_pin_memory);
  tcase_add_test(tc, test_device_to_non_blocking);
  tcase_add_test(tc, test_device_memory_stats);
  tcase_add_test(tc, test_device_absent);
  suite_add_tcase(s, tc);
  return s;
}

TU_MAIN(make_suite)
