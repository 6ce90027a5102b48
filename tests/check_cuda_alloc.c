/* Check suite for the cuda plugin's caching allocator bookkeeping
 * (plugins/cuda/cuda_alloc.c) over a fake backing allocator with a capacity,
 * so bins, split and merge, per-stream pools, statistics, empty_cache, OOM
 * retries and messages are tested on any machine, GPU or not. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../plugins/cuda/cuda_alloc.h"

#define MiB ((size_t)1 << 20)

/* malloc-backed "device memory" with a capacity, counting segments. */
typedef struct {
  size_t capacity, used;
  int live, allocs, fail_other;
} fake_dev;

static int fake_alloc(void *ctx, int device, size_t n, void **ptr, char *msg, size_t msg_n) {
  fake_dev *f = ctx;
  if (f->fail_other) {
    snprintf(msg, msg_n, "fake backing failure on device %d", device);
    return -1;
  }
  if (f->used + n > f->capacity) return 1;
  size_t *h = malloc(n + 16); /* the size lives in front, for fake_free */
  if (!h) return 1;
  *h = n;
  *ptr = (char *)h + 16;
  f->used += n;
  f->live++;
  f->allocs++;
  return 0;
}
static void fake_free(void *ctx, int device, void *ptr) {
  fake_dev *f = ctx;
  size_t *h = (size_t *)((char *)ptr - 16);
  f->used -= *h;
  f->live--;
  free(h);
}
static int fake_info(void *ctx, int device, size_t *fr, size_t *tot) {
  fake_dev *f = ctx;
  *fr = f->capacity - f->used;
  *tot = f->capacity;
  return 0;
}

static ca_allocator *make(fake_dev *f, size_t capacity, size_t max_split) {
  memset(f, 0, sizeof *f);
  f->capacity = capacity;
  ca_backing b = {f, fake_alloc, fake_free, fake_info};
  ca_allocator *a = ca_new(&b, 2, max_split);
  ck_assert_ptr_nonnull(a);
  return a;
}

static void *must_alloc(ca_allocator *a, int dev, uintptr_t stream, size_t n) {
  void *p = NULL;
  char msg[512];
  ca_result r = ca_alloc(a, dev, stream, n, &p, msg, sizeof msg);
  ck_assert_msg(r == CA_OK, "ca_alloc(%zu) failed: %s", n, msg);
  ck_assert_ptr_nonnull(p);
  return p;
}

static ca_stats stats(ca_allocator *a, int dev) {
  ca_stats s;
  ca_get_stats(a, dev, &s);
  return s;
}

START_TEST(test_cuda_alloc_small_pool_rounds_and_reuses) {
  fake_dev f;
  ca_allocator *a = make(&f, 64 * MiB, 0);
  void *p = must_alloc(a, 0, 0, 1);
  ck_assert_uint_eq(ca_block_size(a, p), 512);
  ca_stats s = stats(a, 0);
  ck_assert_int_eq(s.allocated, 512);
  ck_assert_int_eq(s.requested, 1);
  ck_assert_int_eq(s.reserved, (int64_t)(2 * MiB)); /* one small segment */
  void *q = must_alloc(a, 0, 0, 1000);              /* same segment, next to p */
  ck_assert_uint_eq(ca_block_size(a, q), 1024);
  ck_assert_ptr_eq(q, (char *)p + 512);
  ck_assert_int_eq(f.allocs, 1);
  void *z = must_alloc(a, 0, 0, 0); /* zero bytes: a minimal block, never NULL */
  ck_assert_uint_eq(ca_block_size(a, z), 512);
  ck_assert(ca_free(a, z));
  ck_assert(ca_free(a, q));
  ck_assert(ca_free(a, p));
  s = stats(a, 0);
  ck_assert_int_eq(s.allocated, 0);
  ck_assert_int_eq(s.requested, 0);
  ck_assert_int_eq(s.inactive_split, 0); /* merged back into one free segment */
  void *r = must_alloc(a, 0, 0, 4096);    /* served from the cache */
  ck_assert_ptr_eq(r, p);
  ck_assert_int_eq(f.allocs, 1);
  ck_assert_int_ge(stats(a, 0).cache_hits, 2);
  ck_assert(ca_free(a, r));
  ca_destroy(a);
  ck_assert_int_eq(f.live, 0);
}
END_TEST

START_TEST(test_cuda_alloc_split_and_merge) {
  fake_dev f;
  ca_allocator *a = make(&f, 64 * MiB, 0);
  char *b[4];
  for (int i = 0; i < 4; i++) b[i] = must_alloc(a, 0, 0, 1024);
  for (int i = 1; i < 4; i++) ck_assert_ptr_eq(b[i], b[0] + 1024 * i);
  ck_assert(ca_free(a, b[1]));
  ca_stats s = stats(a, 0);
  ck_assert_int_eq(s.inactive_split, (int64_t)(2 * MiB - 3 * 1024)); /* hole + tail, both in a used segment */
  /* best fit: a 1 KiB request takes the hole, not the big tail */
  void *h = must_alloc(a, 0, 0, 1000);
  ck_assert_ptr_eq(h, b[1]);
  ck_assert(ca_free(a, h));
  ck_assert(ca_free(a, b[2])); /* merges with the hole before it */
  void *two = must_alloc(a, 0, 0, 2048);
  ck_assert_ptr_eq(two, b[1]);
  ck_assert(ca_free(a, two));
  ck_assert(ca_free(a, b[0]));
  ck_assert(ca_free(a, b[3])); /* everything merges: one whole free segment */
  s = stats(a, 0);
  ck_assert_int_eq(s.allocated, 0);
  ck_assert_int_eq(s.inactive_split, 0);
  ck_assert_int_eq(s.segments, 1);
  ca_empty_cache(a, 0);
  s = stats(a, 0);
  ck_assert_int_eq(s.reserved, 0);
  ck_assert_int_eq(s.segments, 0);
  ck_assert_int_eq(f.live, 0);
  ck_assert(!ca_free(a, b[0])); /* double free is refused, not a crash */
  ca_destroy(a);
}
END_TEST

START_TEST(test_cuda_alloc_large_pool) {
  fake_dev f;
  ca_allocator *a = make(&f, 256 * MiB, 0);
  char *p = must_alloc(a, 0, 0, 3 * MiB); /* < 10 MiB: a 20 MiB segment, split */
  ck_assert_int_eq(stats(a, 0).reserved, (int64_t)(20 * MiB));
  char *q = must_alloc(a, 0, 0, 5 * MiB);
  ck_assert_ptr_eq(q, p + 3 * MiB);
  char *mid = must_alloc(a, 0, 0, 11 * MiB); /* the 12 MiB left of the segment serve it */
  ck_assert_ptr_eq(mid, p + 8 * MiB);
  ck_assert_int_eq(f.allocs, 1);
  char *big = must_alloc(a, 0, 0, 13 * MiB + 7); /* >= 10 MiB: its own 2 MiB-rounded segment */
  ck_assert_int_eq(stats(a, 0).reserved, (int64_t)(20 * MiB + 14 * MiB));
  ck_assert_uint_eq(ca_block_size(a, big), 14 * MiB); /* a 1 MiB rest is not worth a split */
  /* small and large pools never mix: a small request gets a small segment */
  must_alloc(a, 0, 0, 100);
  ck_assert_int_eq(stats(a, 0).reserved, (int64_t)(36 * MiB));
  ck_assert_int_eq(f.allocs, 3);
  ca_destroy(a); /* releases segments with live blocks too */
  ck_assert_int_eq(f.live, 0);
}
END_TEST

START_TEST(test_cuda_alloc_per_stream_pools) {
  fake_dev f;
  ca_allocator *a = make(&f, 64 * MiB, 0);
  void *p = must_alloc(a, 0, 0x10, 4096);
  ck_assert(ca_free(a, p));
  void *q = must_alloc(a, 0, 0x20, 4096); /* another stream: not the block freed on 0x10 */
  ck_assert_ptr_ne(q, p);
  ck_assert_int_eq(f.allocs, 2);
  void *r = must_alloc(a, 0, 0x10, 4096); /* the first stream gets its own block back */
  ck_assert_ptr_eq(r, p);
  /* devices are separate too */
  void *d1 = must_alloc(a, 1, 0x10, 4096);
  ck_assert_int_eq(stats(a, 1).allocated, 4096);
  ck_assert_int_eq(stats(a, 0).allocated, 8192);
  ck_assert(ca_free(a, d1));
  ck_assert(ca_free(a, q));
  ck_assert(ca_free(a, r));
  ca_destroy(a);
}
END_TEST

START_TEST(test_cuda_alloc_oom_is_an_error_with_advice) {
  fake_dev f;
  ca_allocator *a = make(&f, 24 * MiB, 0);
  void *p = must_alloc(a, 0, 0, 5 * MiB); /* 20 MiB segment */
  ck_assert(ca_free(a, p));               /* cached */
  /* 22 MiB does not fit next to the cached 20 MiB: the cache is released and the retry succeeds */
  void *q = must_alloc(a, 0, 0, 22 * MiB);
  ca_stats s = stats(a, 0);
  ck_assert_int_eq(s.num_alloc_retries, 1);
  ck_assert_int_eq(s.num_ooms, 0);
  ck_assert_int_eq(s.reserved, (int64_t)(22 * MiB));
  /* now a real OOM: an error with sizes and advice; the program goes on */
  void *r = (void *)1;
  char msg[1024];
  ck_assert_int_eq(ca_alloc(a, 0, 0, 30 * MiB, &r, msg, sizeof msg), CA_OOM);
  ck_assert_ptr_null(r);
  ck_assert_msg(strstr(msg, "CUDA out of memory. Tried to allocate 30.00 MiB."), "%s", msg);
  ck_assert_msg(strstr(msg, "total capacity of 24.00 MiB of which 2.00 MiB is free"), "%s", msg);
  ck_assert_msg(strstr(msg, "22.00 MiB is allocated by tensors"), "%s", msg);
  ck_assert_msg(strstr(msg, "wk_device_empty_cache") && strstr(msg, "smaller batch size"), "%s", msg);
  ck_assert_int_eq(stats(a, 0).num_ooms, 1);
  ck_assert(ca_free(a, q));
  void *t = must_alloc(a, 0, 0, 20 * MiB); /* after freeing, it fits: recovered */
  ck_assert(ca_free(a, t));
  /* absurd sizes are an OOM, not an overflow */
  ck_assert_int_eq(ca_alloc(a, 0, 0, SIZE_MAX - 10, &r, msg, sizeof msg), CA_OOM);
  /* other backing failures are errors with the backing's message */
  f.fail_other = 1;
  ca_empty_cache(a, -1);
  ck_assert_int_eq(ca_alloc(a, 0, 0, 1024, &r, msg, sizeof msg), CA_ERROR);
  ck_assert_str_eq(msg, "fake backing failure on device 0");
  ck_assert_int_eq(ca_alloc(a, 5, 0, 1024, &r, msg, sizeof msg), CA_BAD_ARG);
  ca_destroy(a);
  ck_assert_int_eq(f.live, 0);
}
END_TEST

START_TEST(test_cuda_alloc_fragmentation_advice) {
  fake_dev f;
  ca_allocator *a = make(&f, 60 * MiB, 0);
  /* three 20 MiB segments, each kept by one 2 MiB block: most reserved memory is unallocated */
  void *keep[3], *fill[3];
  for (int i = 0; i < 3; i++) {
    keep[i] = must_alloc(a, 0, 0, 2 * MiB);
    fill[i] = must_alloc(a, 0, 0, 18 * MiB); /* the rest of the segment */
  }
  for (int i = 0; i < 3; i++) ck_assert(ca_free(a, fill[i]));
  ck_assert_int_eq(stats(a, 0).inactive_split, (int64_t)(54 * MiB));
  void *r;
  char msg[1024];
  ck_assert_int_eq(ca_alloc(a, 0, 0, 25 * MiB, &r, msg, sizeof msg), CA_OOM);
  ck_assert_msg(strstr(msg, "WICK_CUDA_ALLOC_CONF=max_split_size_mb"), "%s", msg);
  for (int i = 0; i < 3; i++) ck_assert(ca_free(a, keep[i]));
  ca_destroy(a);
}
END_TEST

START_TEST(test_cuda_alloc_max_split_size) {
  fake_dev f;
  ca_allocator *a = make(&f, 256 * MiB, 40 * MiB);
  void *big = must_alloc(a, 0, 0, 60 * MiB);
  ck_assert(ca_free(a, big));
  /* an oversize cached block is not split for a small request */
  void *small = must_alloc(a, 0, 0, 12 * MiB);
  ck_assert_ptr_ne(small, big);
  /* but serves a request of about its size */
  void *again = must_alloc(a, 0, 0, 50 * MiB);
  ck_assert_ptr_eq(again, big);
  ck_assert_uint_eq(ca_block_size(a, again), 60 * MiB); /* whole, unsplit */
  ck_assert(ca_free(a, again));
  ck_assert(ca_free(a, small));
  ca_destroy(a);
}
END_TEST

START_TEST(test_cuda_alloc_stats_peaks_and_summary) {
  fake_dev f;
  ca_allocator *a = make(&f, 256 * MiB, 0);
  void *p = must_alloc(a, 0, 0, 4 * MiB);
  void *q = must_alloc(a, 0, 0, 1 * MiB);
  ck_assert(ca_free(a, p));
  ca_stats s = stats(a, 0);
  ck_assert_int_eq(s.max_allocated, (int64_t)(5 * MiB));
  ck_assert_int_eq(s.allocated, (int64_t)(1 * MiB));
  ck_assert_int_eq(s.active_blocks, 1);
  ck_assert_int_eq(s.alloc_count, 2);
  ck_assert_int_eq(s.free_count, 1);
  ca_reset_peak(a, 0);
  s = stats(a, 0);
  ck_assert_int_eq(s.max_allocated, (int64_t)(1 * MiB));
  ck_assert_int_eq(s.max_reserved, s.reserved);
  char buf[4096];
  size_t need = ca_summary(a, 0, buf, sizeof buf);
  ck_assert_uint_lt(need, sizeof buf);
  ck_assert_uint_eq(need, strlen(buf));
  ck_assert_msg(strstr(buf, "Wick CUDA memory summary, device ID 0") && strstr(buf, "| Allocated memory      |") &&
                    strstr(buf, "1.00 MiB") && strstr(buf, "Reserved memory") && strstr(buf, "CUDA OOMs: 0"),
                "%s", buf);
  char tiny[8];
  ck_assert_uint_eq(ca_summary(a, 0, tiny, sizeof tiny), need); /* truncates, tells the size */
  ck_assert_uint_eq(strlen(tiny), 7);
  char b[32];
  ck_assert_str_eq(ca_format_bytes(512, b, sizeof b), "512 B");
  ck_assert_str_eq(ca_format_bytes(3 * 1024 * 1024 / 2, b, sizeof b), "1.50 MiB");
  ck_assert(ca_free(a, q));
  ca_destroy(a);
}
END_TEST

/* Random allocations and frees: the invariants hold throughout, and freeing
 * everything leaves whole free segments only. */
START_TEST(test_cuda_alloc_random_consistency) {
  fake_dev f;
  ca_allocator *a = make(&f, 1024 * MiB, 0);
  enum { N = 400 };
  void *ptr[N] = {0};
  size_t size[N] = {0};
  uint64_t x = 12345;
  int64_t live_bytes = 0;
  for (int it = 0; it < 5000; it++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    int i = (int)(x % N);
    if (ptr[i]) {
      live_bytes -= (int64_t)ca_block_size(a, ptr[i]);
      ck_assert(ca_free(a, ptr[i]));
      ptr[i] = NULL;
    } else {
      size_t n = (x >> 20) % 4 == 0 ? (size_t)((x >> 24) % (24 * MiB)) : (size_t)((x >> 24) % 70000);
      ptr[i] = must_alloc(a, 0, (x >> 40) % 2, n);
      size[i] = n;
      ck_assert_uint_ge(ca_block_size(a, ptr[i]), n);
      live_bytes += (int64_t)ca_block_size(a, ptr[i]);
      memset(ptr[i], i & 0xff, n < 64 ? n : 64); /* blocks are writable and disjoint */
    }
    ca_stats s = stats(a, 0);
    ck_assert_int_eq(s.allocated, live_bytes);
    ck_assert_int_le(s.allocated, s.reserved);
  }
  for (int i = 0; i < N; i++)
    if (ptr[i]) {
      unsigned char c = (unsigned char)(i & 0xff);
      size_t k = size[i] < 64 ? size[i] : 64;
      for (size_t j = 0; j < k; j++) ck_assert_uint_eq(((unsigned char *)ptr[i])[j], c);
      ck_assert(ca_free(a, ptr[i]));
    }
  ca_stats s = stats(a, 0);
  ck_assert_int_eq(s.allocated, 0);
  ck_assert_int_eq(s.inactive_split, 0);
  ca_empty_cache(a, -1);
  ck_assert_int_eq(stats(a, 0).reserved, 0);
  ck_assert_int_eq(f.live, 0);
  ca_destroy(a);
}
END_TEST

START_TEST(test_cuda_alloc_bad_arguments) {
  ck_assert_ptr_null(ca_new(NULL, 1, 0));
  ca_backing nob = {0};
  ck_assert_ptr_null(ca_new(&nob, 1, 0));
  void *p;
  char msg[64];
  ck_assert_int_eq(ca_alloc(NULL, 0, 0, 8, &p, msg, sizeof msg), CA_BAD_ARG);
  ck_assert(ca_free(NULL, NULL));
  ck_assert_uint_eq(ca_block_size(NULL, &p), 0);
  ca_empty_cache(NULL, 0);
  ca_destroy(NULL);
  ca_stats s;
  ca_get_stats(NULL, 0, &s);
  ck_assert_int_eq(s.allocated, 0);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("cuda_alloc");
  TCase *tc = tcase_create("caching_allocator");
  tcase_add_test(tc, test_cuda_alloc_small_pool_rounds_and_reuses);
  tcase_add_test(tc, test_cuda_alloc_split_and_merge);
  tcase_add_test(tc, test_cuda_alloc_large_pool);
  tcase_add_test(tc, test_cuda_alloc_per_stream_pools);
  tcase_add_test(tc, test_cuda_alloc_oom_is_an_error_with_advice);
  tcase_add_test(tc, test_cuda_alloc_fragmentation_advice);
  tcase_add_test(tc, test_cuda_alloc_max_split_size);
  tcase_add_test(tc, test_cuda_alloc_stats_peaks_and_summary);
  tcase_add_test(tc, test_cuda_alloc_random_consistency);
  tcase_add_test(tc, test_cuda_alloc_bad_arguments);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(make_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
