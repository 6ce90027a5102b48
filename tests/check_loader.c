/* check_loader: the DataLoader's version-2 options and iterable datasets:
 * iterable streams sharded by worker (PyTorch's round-robin order, drop_last
 * per worker, errors, early close), persistent workers and worker_init_fn,
 * timeout, prefetch_factor and pin_memory (pageable without a device plugin
 * offering pinned memory, pinned with a fake one), an old (version 1) options struct,
 * pad_sequence / the default collate as collate building blocks, and
 * get_batch (version 3): TensorDataset and Subset batches gathered whole,
 * equal to the per-sample path; a user's get_batch and its errors. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <wick/data.h>

#include "testutil.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}
static double item(wk_tensor *t) {
  double v = NAN;
  TU_OK(wk_item(t, &v));
  return v;
}
/* Every batch of one epoch, field 0 as doubles, concatenated; batch sizes in sizes[]. */
static int epoch_values(wk_dataloader *dl, double *vals, int cap, int *sizes, int *nb) {
  int n = 0;
  *nb = 0;
  for (;;) {
    wk_sample b;
    TU_OK(wk_dataloader_next(dl, &b));
    if (b.n == 0) break;
    int64_t m = wk_tensor_numel(b.t[0]);
    double *v = tu_values(b.t[0]);
    for (int64_t i = 0; i < m && n < cap; i++) vals[n++] = v[i];
    free(v);
    sizes[(*nb)++] = (int)wk_tensor_size(b.t[0], 0);
    wk_sample_clear(&b);
  }
  return n;
}

/* ---- An iterable dataset: the numbers [0, n), worker w taking those = w mod num_workers ------------------- */
typedef struct {
  int64_t n;
  int64_t fail_at; /* next() fails on this number (-1: never) */
  int fail_open;   /* open() fails for this worker (-1: never) */
  atomic_int opens, closes;
  atomic_llong last_epoch;
} range_ds;
typedef struct {
  int64_t cur, step;
} range_stream;
static wk_status range_open(void *self, const wk_worker_info *info, void **stream) {
  range_ds *d = self;
  if (info->worker_id == d->fail_open) return wk_error(WK_ERR_IO, "cannot open shard %d", info->worker_id);
  if (info->num_workers < 1 || info->worker_id >= info->num_workers) return wk_error(WK_ERR_STATE, "bad worker info");
  range_stream *s = malloc(sizeof *s);
  s->cur = info->worker_id;
  s->step = info->num_workers;
  atomic_fetch_add(&d->opens, 1);
  atomic_store(&d->last_epoch, info->epoch);
  *stream = s;
  return WK_OK;
}
static wk_status range_next(void *self, void *stream, wk_sample *out) {
  range_ds *d = self;
  range_stream *s = stream;
  if (s->cur >= d->n) return WK_OK; /* end: out->n stays 0 */
  if (s->cur == d->fail_at) return wk_error(WK_ERR_IO, "record %lld is damaged", (long long)s->cur);
  out->t[out->n++] = wk_scalar_tensor((double)s->cur, WK_I64);
  s->cur += s->step;
  return WK_OK;
}
static void range_close(void *self, void *stream) {
  atomic_fetch_add(&((range_ds *)self)->closes, 1);
  free(stream);
}
static const wk_iterable_impl range_impl = {sizeof(wk_iterable_impl), range_open, range_next, range_close, NULL};
/* A transform that keeps the value and records its stream seed in the fraction. */
static wk_tensor *seed_tag(void *user, wk_tensor *x, uint64_t seed) {
  double v;
  if (wk_item(x, &v) != WK_OK) return NULL;
  return wk_scalar_tensor(v + (double)(seed % 100000) / 100000.0, WK_F64);
}

START_TEST(test_loader_iterable) {
  int64_t live = wk_live_tensors();
  range_ds d = {.n = 10, .fail_at = -1, .fail_open = -1};
  wk_dataset *ds = wk_iterable_dataset_new(&range_impl, &d);
  TU_NOTNULL(ds);
  double v[64];
  int sizes[16], nb;
  /* no workers (and one worker): the stream in order */
  for (int w = 0; w < 2; w++) {
    wk_dataloader *dl = wk_dataloader_new(ds, WK_LOADER_OPTS(.batch_size = 4, .num_workers = w));
    ck_assert_int_eq(epoch_values(dl, v, 64, sizes, &nb), 10);
    for (int i = 0; i < 10; i++) ck_assert_double_eq(v[i], i);
    ck_assert_int_eq(nb, 3);
    ck_assert_int_eq(sizes[2], 2);
    wk_dataloader_free(dl);
  }
  /* three workers: one batch from each in turn; the shorter streams run out first */
  const double want[] = {0, 3, 1, 4, 2, 5, 6, 9, 7, 8};
  const int want_sizes[] = {2, 2, 2, 2, 1, 1};
  for (int persistent = 0; persistent < 2; persistent++) {
    wk_dataloader *dl = wk_dataloader_new(
        ds, WK_LOADER_OPTS(.batch_size = 2, .num_workers = 3, .persistent_workers = persistent, .prefetch_factor = 1));
    TU_NOTNULL(dl);
    for (int epoch = 0; epoch < 2; epoch++) {
      ck_assert_int_eq(epoch_values(dl, v, 64, sizes, &nb), 10);
      for (int i = 0; i < 10; i++) ck_assert_double_eq(v[i], want[i]);
      ck_assert_int_eq(nb, 6);
      for (int i = 0; i < 6; i++) ck_assert_int_eq(sizes[i], want_sizes[i]);
      ck_assert_int_eq(atomic_load(&d.last_epoch), epoch);
      ck_assert_int_eq(atomic_load(&d.opens), atomic_load(&d.closes));
    }
    ck_assert_int_eq(wk_dataloader_len(dl), -1);
    TU_FAILS_WITH(WK_ERR_UNSUPPORTED, "a loader over an iterable dataset has no length");
    wk_dataloader_free(dl);
  }
  /* drop_last drops each worker's incomplete last batch */
  wk_dataloader *dl = wk_dataloader_new(ds, WK_LOADER_OPTS(.batch_size = 2, .num_workers = 3, .drop_last = true));
  ck_assert_int_eq(epoch_values(dl, v, 64, sizes, &nb), 8);
  for (int i = 0; i < 8; i++) ck_assert_double_eq(v[i], want[i]);
  /* closing mid-epoch closes every stream */
  wk_sample b;
  TU_OK(wk_dataloader_next(dl, &b));
  wk_sample_clear(&b);
  wk_dataloader_free(dl);
  ck_assert_int_eq(atomic_load(&d.opens), atomic_load(&d.closes));
  /* a failing next() names the worker and the dataset's message; the loader then starts a new epoch */
  d.fail_at = 7;
  dl = wk_dataloader_new(ds, WK_LOADER_OPTS(.batch_size = 2, .num_workers = 3));
  wk_status st = WK_OK;
  for (int i = 0; i < 10 && st == WK_OK; i++) {
    st = wk_dataloader_next(dl, &b);
    wk_sample_clear(&b);
  }
  ck_assert_int_eq(st, WK_ERR_IO);
  TU_FAILS_WITH(WK_ERR_IO,
                "iterable dataset, worker 1, sample 0 of its next batch (epoch 0) failed: record 7 is damaged");
  TU_OK(wk_dataloader_next(dl, &b)); /* epoch 1 starts */
  TU_EQ_VALS(b.t[0], 0, 3);
  wk_sample_clear(&b);
  wk_dataloader_free(dl);
  dl = wk_dataloader_new(ds, WK_LOADER_OPTS(.batch_size = 2));
  st = WK_OK;
  for (int i = 0; i < 10 && st == WK_OK; i++) {
    st = wk_dataloader_next(dl, &b);
    wk_sample_clear(&b);
  }
  TU_FAILS_WITH(WK_ERR_IO, "record 7 is damaged");
  wk_dataloader_free(dl);
  d.fail_at = -1;
  /* open() failing for one worker */
  d.fail_open = 1;
  dl = wk_dataloader_new(ds, WK_LOADER_OPTS(.batch_size = 2, .num_workers = 2));
  TU_OK(wk_dataloader_next(dl, &b)); /* worker 0's first batch comes first */
  wk_sample_clear(&b);
  ck_assert_int_eq(wk_dataloader_next(dl, &b), WK_ERR_IO);
  TU_FAILS_WITH(WK_ERR_IO, "open() for worker 1 failed: cannot open shard 1");
  wk_dataloader_free(dl);
  d.fail_open = 0;
  dl = wk_dataloader_new(ds, WK_LOADER_OPTS(.batch_size = 2));
  ck_assert_int_eq(wk_dataloader_next(dl, &b), WK_ERR_IO);
  TU_FAILS_WITH(WK_ERR_IO, "iterable dataset: open() failed: cannot open shard 0");
  wk_dataloader_free(dl);
  ck_assert_int_eq(atomic_load(&d.opens), atomic_load(&d.closes));
  d.fail_open = -1;
  /* a transform over the stream: each sample draws from (stream seed, position); same per epoch and seed */
  wk_transform *tag = wk_transform_lambda(seed_tag, NULL);
  wk_dataset *tagged = wk_dataset_map(ds, 0, tag);
  TU_NOTNULL(tagged);
  for (int w = 0; w < 3; w += 2) {
    double t1[16], t2[16], t3[16];
    wk_dataloader *a = wk_dataloader_new(tagged, WK_LOADER_OPTS(.batch_size = 3, .num_workers = w, .seed = 4));
    wk_dataloader *c = wk_dataloader_new(tagged, WK_LOADER_OPTS(.batch_size = 3, .num_workers = w, .seed = 4));
    ck_assert_int_eq(epoch_values(a, t1, 16, sizes, &nb), 10);
    ck_assert_int_eq(epoch_values(c, t2, 16, sizes, &nb), 10);
    ck_assert_int_eq(epoch_values(a, t3, 16, sizes, &nb), 10); /* epoch 1 */
    int differ = 0;
    double sum = 0;
    for (int i = 0; i < 10; i++) {
      ck_assert_double_eq(t1[i], t2[i]);
      sum += floor(t1[i]); /* the value is kept in the integer part */
      differ += t1[i] != t3[i];
      for (int j = 0; j < i; j++) ck_assert(t1[i] - floor(t1[i]) != t1[j] - floor(t1[j])); /* distinct streams */
    }
    ck_assert_int_gt(differ, 0);
    ck_assert_double_eq(sum, 45);
    wk_dataloader_free(a);
    wk_dataloader_free(c);
  }
  ck_assert_int_eq(atomic_load(&d.opens), atomic_load(&d.closes));
  wk_dataset_free(tagged);
  tagged = wk_dataset_map(ds, 3, tag); /* a field the samples lack: the stream's next() fails */
  dl = wk_dataloader_new(tagged, WK_LOADER_OPTS(.batch_size = 2));
  ck_assert_int_eq(wk_dataloader_next(dl, &b), WK_ERR_INDEX);
  TU_FAILS_WITH(WK_ERR_INDEX, "dataset_map: sample 0 of the stream has 1 fields, the transform applies to field 3");
  wk_dataloader_free(dl);
  wk_dataset_free(tagged);
  wk_transform_free(tag);
  /* what an iterable dataset cannot do */
  ck_assert_int_eq(wk_dataset_len(ds), -1);
  TU_FAILS_WITH(WK_ERR_UNSUPPORTED, "iterable-style");
  ck_assert_int_eq(wk_dataset_get(ds, 0, NULL, &b), WK_ERR_UNSUPPORTED);
  wk_clear_error();
  ck_assert_ptr_null(wk_subset(ds, (int64_t[]){0}, 1));
  TU_FAILS_WITH(WK_ERR_UNSUPPORTED, "subset: the dataset is iterable-style");
  ck_assert_ptr_null(wk_dataloader_new(ds, WK_LOADER_OPTS(.shuffle = true)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "shuffle and sampler must be unset");
  ck_assert_ptr_null(wk_iterable_dataset_new(NULL, NULL));
  TU_FAILS_WITH(WK_ERR_NULL, "impl");
  ck_assert_ptr_null(wk_iterable_dataset_new(&(wk_iterable_impl){sizeof(wk_iterable_impl), range_open}, NULL));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "open and next");
  wk_dataset_free(ds);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- A map-style dataset that records its threads and may sleep ----------------------------------------------- */
typedef struct {
  int64_t n;
  atomic_llong slow_index; /* changed while a stuck worker may still read it */
  double slow_s;
  pthread_mutex_t mu;
  pthread_t seen[64];
  int nseen;
} probe_ds;
static int64_t probe_len(void *p) {
  return ((probe_ds *)p)->n;
}
static wk_status probe_get(void *p, int64_t i, const wk_sample_ctx *ctx, wk_sample *out) {
  probe_ds *d = p;
  pthread_mutex_lock(&d->mu);
  bool known = false;
  for (int k = 0; k < d->nseen; k++) known = known || pthread_equal(d->seen[k], pthread_self());
  if (!known && d->nseen < 64) d->seen[d->nseen++] = pthread_self();
  pthread_mutex_unlock(&d->mu);
  if (i == atomic_load(&d->slow_index)) usleep((useconds_t)(d->slow_s * 1e6));
  /* the value depends on the sample's stream: batches are equal only if the streams are */
  out->t[out->n++] = wk_scalar_tensor((double)i + (double)(ctx->seed % 1000) / 1000.0, WK_F64);
  return WK_OK;
}
static const wk_dataset_impl probe_impl = {sizeof(wk_dataset_impl), probe_len, probe_get, NULL};

static atomic_int g_inits;
static wk_status count_init(int worker_id, void *user) {
  if (user != &g_inits || worker_id < 0 || worker_id >= 3)
    return wk_error(WK_ERR_STATE, "bad worker_init_fn arguments");
  atomic_fetch_add(&g_inits, 1);
  return WK_OK;
}
static wk_status failing_init(int worker_id, void *user) {
  return worker_id == 1 ? wk_error(WK_ERR_IO, "no GPU for worker %d", worker_id) : WK_OK;
}

START_TEST(test_loader_persistent) {
  int64_t live = wk_live_tensors();
  probe_ds d = {.n = 23, .slow_index = -1};
  pthread_mutex_init(&d.mu, NULL);
  wk_dataset *ds = wk_dataset_new(&probe_impl, &d);
  double ref[3][23], v[64];
  int sizes[16], nb;
  wk_dataloader *dl0 = wk_dataloader_new(ds, WK_LOADER_OPTS(.batch_size = 5, .shuffle = true, .seed = 11));
  for (int e = 0; e < 3; e++) ck_assert_int_eq(epoch_values(dl0, ref[e], 23, sizes, &nb), 23);
  wk_dataloader_free(dl0);
  for (int persistent = 0; persistent < 2; persistent++) {
    atomic_store(&g_inits, 0);
    d.nseen = 0;
    wk_dataloader *dl =
        wk_dataloader_new(ds, WK_LOADER_OPTS(.batch_size = 5, .shuffle = true, .seed = 11, .num_workers = 3,
                                             .persistent_workers = persistent, .worker_init_fn = count_init,
                                             .worker_init_user = &g_inits));
    for (int e = 0; e < 3; e++) {
      ck_assert_int_eq(epoch_values(dl, v, 64, sizes, &nb), 23);
      for (int i = 0; i < 23; i++) ck_assert_double_eq(v[i], ref[e][i]); /* bit-identical to 0 workers */
    }
    ck_assert_int_eq(atomic_load(&g_inits), persistent ? 3 : 9);
    if (persistent) ck_assert_int_le(d.nseen, 3); /* the same threads served all epochs */
    /* abandoning an epoch part-way, then a full one */
    wk_sample b;
    TU_OK(wk_dataloader_next(dl, &b));
    wk_sample_clear(&b);
    TU_OK(wk_dataloader_set_epoch(dl, 1));
    ck_assert_int_eq(epoch_values(dl, v, 64, sizes, &nb), 23);
    for (int i = 0; i < 23; i++) ck_assert_double_eq(v[i], ref[1][i]);
    ck_assert_int_eq(atomic_load(&g_inits), persistent ? 3 : 15);
    wk_dataloader_free(dl);
  }
  /* a failing worker_init_fn fails the next() that starts the workers, naming the worker; each call retries it */
  for (int persistent = 0; persistent < 2; persistent++) {
    wk_dataloader *dl =
        wk_dataloader_new(ds, WK_LOADER_OPTS(.batch_size = 2, .num_workers = 3, .persistent_workers = persistent,
                                             .worker_init_fn = failing_init));
    for (int e = 0; e < 2; e++) {
      wk_sample b;
      ck_assert_int_eq(wk_dataloader_next(dl, &b), WK_ERR_IO);
      ck_assert_int_eq(b.n, 0);
      TU_FAILS_WITH(WK_ERR_IO, "dataloader: worker_init_fn failed for worker 1: no GPU for worker 1");
    }
    wk_dataloader_free(dl);
  }
  ck_assert_ptr_null(wk_dataloader_new(ds, WK_LOADER_OPTS(.persistent_workers = true)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "persistent_workers option needs num_workers > 0");
  wk_dataset_free(ds);
  pthread_mutex_destroy(&d.mu);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_loader_timeout) {
  int64_t live = wk_live_tensors();
  probe_ds d = {.n = 8, .slow_index = 2, .slow_s = 1.5};
  pthread_mutex_init(&d.mu, NULL);
  wk_dataset *ds = wk_dataset_new(&probe_impl, &d);
  wk_dataloader *dl = wk_dataloader_new(ds, WK_LOADER_OPTS(.num_workers = 2, .timeout = 0.2));
  wk_sample b;
  TU_OK(wk_dataloader_next(dl, &b));
  wk_sample_clear(&b);
  TU_OK(wk_dataloader_next(dl, &b));
  wk_sample_clear(&b);
  double t0 = now();
  ck_assert_int_eq(wk_dataloader_next(dl, &b), WK_ERR_STATE);
  double waited = now() - t0;
  ck_assert_int_eq(b.n, 0);
  TU_FAILS_WITH(WK_ERR_STATE, "dataloader: timed out after 0.2 s waiting for batch 2 of epoch 0");
  ck_assert_msg(waited >= 0.15 && waited < 1.2, "the timeout fired after %.3f s", waited);
  /* the next call starts the next epoch (once the stuck worker is joined) */
  d.slow_index = -1;
  TU_OK(wk_dataloader_next(dl, &b));
  ck_assert_int_eq((int)item(b.t[0]), 0);
  wk_sample_clear(&b);
  wk_dataloader_free(dl);
  /* a slow batch within the timeout is fine; with 0 workers the timeout is ignored */
  d.slow_index = 1;
  d.slow_s = 0.05;
  for (int w = 0; w < 3; w += 2) {
    dl = wk_dataloader_new(ds, WK_LOADER_OPTS(.batch_size = 3, .num_workers = w, .timeout = 5));
    double v[16];
    int sizes[8], nb;
    ck_assert_int_eq(epoch_values(dl, v, 16, sizes, &nb), 8);
    wk_dataloader_free(dl);
  }
  ck_assert_ptr_null(wk_dataloader_new(ds, WK_LOADER_OPTS(.num_workers = 1, .timeout = -1)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "timeout option should be non-negative");
  /* freeing a loader whose worker is stuck waits for it, without leaking */
  d.slow_index = 0;
  d.slow_s = 0.3;
  dl = wk_dataloader_new(ds, WK_LOADER_OPTS(.num_workers = 1, .timeout = 0.05));
  ck_assert_int_eq(wk_dataloader_next(dl, &b), WK_ERR_STATE);
  wk_clear_error();
  wk_dataloader_free(dl);
  wk_dataset_free(ds);
  pthread_mutex_destroy(&d.mu);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_loader_prefetch_pin) {
  int64_t live = wk_live_tensors();
  wk_tensor *x = wk_arange(0, 37, 1, WK_OPTS(.dtype = WK_F32));
  wk_dataset *ds = wk_tensor_dataset(&x, 1);
  double ref[64], v[64];
  int sizes[16], nb;
  wk_dataloader *dl = wk_dataloader_new(ds, WK_LOADER_OPTS(.batch_size = 4, .shuffle = true, .seed = 5));
  ck_assert_int_eq(epoch_values(dl, ref, 64, sizes, &nb), 37);
  wk_dataloader_free(dl);
  const int pf[] = {1, 2, 7};
  for (int k = 0; k < 3; k++) {
    dl = wk_dataloader_new(ds, WK_LOADER_OPTS(.batch_size = 4, .shuffle = true, .seed = 5, .num_workers = 3,
                                              .prefetch_factor = pf[k], .pin_memory = true));
    ck_assert_int_eq(epoch_values(dl, v, 64, sizes, &nb), 37);
    for (int i = 0; i < 37; i++) ck_assert_double_eq(v[i], ref[i]);
    wk_dataloader_free(dl);
  }
  /* pinned batches when a device plugin offers pinned memory; pageable (and no error) otherwise */
  wk_tensor *probe = wk_pin_memory(x);
  bool can_pin = probe != NULL;
  if (!can_pin) { /* no plugin offering pinned memory, or no usable device behind it */
    ck_assert_msg(wk_last_error() == WK_ERR_UNSUPPORTED || wk_last_error() == WK_ERR_DEVICE, "%s",
                  wk_last_error_message());
    wk_clear_error();
  }
  wk_release(probe);
  for (int w = 0; w < 3; w += 2) {
    dl = wk_dataloader_new(ds, WK_LOADER_OPTS(.batch_size = 4, .num_workers = w, .pin_memory = true));
    for (int k = 0; k < 3; k++) {
      wk_sample b;
      TU_OK(wk_dataloader_next(dl, &b));
      ck_assert_int_eq(wk_tensor_is_pinned(b.t[0]), can_pin);
      wk_sample_clear(&b);
    }
    wk_dataloader_free(dl);
  }
  /* a version-1 options struct (64 bytes): the new options keep their defaults */
  wk_loader_opts old = {.struct_size = 64,
                        .batch_size = 4,
                        .shuffle = true,
                        .seed = 5,
                        .num_workers = 2,
                        .persistent_workers = true,
                        .timeout = -1};
  dl = wk_dataloader_new(ds, &old);
  TU_NOTNULL(dl);
  ck_assert_int_eq(epoch_values(dl, v, 64, sizes, &nb), 37);
  for (int i = 0; i < 37; i++) ck_assert_double_eq(v[i], ref[i]);
  wk_dataloader_free(dl);
  wk_dataset_free(ds);
  wk_release(x);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* A device type whose plugin offers pinned host memory (what the cuda plugin
 * does with cudaHostAlloc): the loader's pin_memory must then pin every batch.
 * Before it, "pinbroken" offers pinned memory but fails: with a device error
 * (a missing driver: batches stay pageable) or out of memory (the batch fails). */
static atomic_int g_pinned_live, g_broken_mode = 1; /* 1: device error, 2: out of memory, 0: no devices */
static int broken_count(void *u) {
  return atomic_load(&g_broken_mode) ? 1 : 0;
}
static void *broken_pin(void *u, size_t n) {
  if (atomic_load(&g_broken_mode) == 1) wk_error(WK_ERR_DEVICE, "pinbroken: driver version is insufficient");
  return NULL;
}
static void broken_unpin(void *u, void *p) {}
static int pin_count(void *u) {
  return 1;
}
static void *pin_alloc(void *u, int index, size_t n) {
  return malloc(n ? n : 1);
}
static void pin_free(void *u, int index, void *p) {
  free(p);
}
static wk_status pin_copy(void *u, void *dst, wk_device dd, const void *src, wk_device sd, size_t n) {
  memcpy(dst, src, n);
  return WK_OK;
}
static void *pin_host(void *u, size_t n) {
  atomic_fetch_add(&g_pinned_live, 1);
  return malloc(n ? n : 1);
}
static void unpin_host(void *u, void *p) {
  atomic_fetch_sub(&g_pinned_live, 1);
  free(p);
}
START_TEST(test_loader_pinned_device) {
  int64_t live = wk_live_tensors();
  wk_device_iface f = {.struct_size = sizeof f,
                       .abi_version = wk_abi_version(),
                       .name = "pinhost",
                       .device_count = pin_count,
                       .alloc = pin_alloc,
                       .free = pin_free,
                       .copy = pin_copy,
                       .host_alloc_pinned = pin_host,
                       .host_free_pinned = unpin_host};
  wk_device_iface fb = f;
  fb.name = "pinbroken";
  fb.device_count = broken_count;
  fb.host_alloc_pinned = broken_pin;
  fb.host_free_pinned = broken_unpin;
  int32_t ty = -1;
  TU_OK(wk_device_type_register(&fb, &ty)); /* first: wk_pin_memory prefers it while it has a device */
  TU_OK(wk_device_type_register(&f, &ty));
  wk_tensor *x = wk_arange(0, 10, 1, WK_OPTS(.dtype = WK_F32)), *y = wk_arange_int(0, 10, 1, WK_OPTS(.dtype = WK_I64));
  wk_dataset *ds = wk_tensor_dataset((wk_tensor *[]){x, y}, 2);
  for (int w = 0; w < 3; w += 2) { /* an unusable device: pageable batches, no error */
    wk_dataloader *dl = wk_dataloader_new(ds, WK_LOADER_OPTS(.batch_size = 4, .num_workers = w, .pin_memory = true));
    for (int k = 0; k < 3; k++) {
      wk_sample b;
      TU_OK(wk_dataloader_next(dl, &b));
      ck_assert(!wk_tensor_is_pinned(b.t[0]));
      wk_sample_clear(&b);
    }
    wk_dataloader_free(dl);
  }
  atomic_store(&g_broken_mode, 2); /* out of pinned memory: the batch fails, naming the option */
  wk_dataloader *bad = wk_dataloader_new(ds, WK_LOADER_OPTS(.batch_size = 4, .num_workers = 2, .pin_memory = true));
  wk_sample bb;
  ck_assert_int_eq(wk_dataloader_next(bad, &bb), WK_ERR_NO_MEMORY);
  TU_FAILS_WITH(WK_ERR_NO_MEMORY, "dataloader: pin_memory of batch 0 (samples 0..3), field 0: pin_memory: pinbroken");
  wk_dataloader_free(bad);
  atomic_store(&g_broken_mode, 0); /* no devices left there: the working plugin pins */
  for (int w = 0; w < 3; w += 2) {
    wk_dataloader *dl = wk_dataloader_new(ds, WK_LOADER_OPTS(.batch_size = 4, .num_workers = w, .pin_memory = true));
    wk_sample b;
    TU_OK(wk_dataloader_next(dl, &b));
    ck_assert(wk_tensor_is_pinned(b.t[0]) && wk_tensor_is_pinned(b.t[1]));
    TU_EQ_VALS(b.t[0], 0, 1, 2, 3);
    TU_EQ_VALS(b.t[1], 0, 1, 2, 3);
    ck_assert_int_ge(atomic_load(&g_pinned_live), 2);
    wk_sample_clear(&b);
    wk_dataloader_free(dl);
  }
  ck_assert_int_eq(atomic_load(&g_pinned_live), 0); /* every pinned batch went back to its plugin */
  wk_dataloader *dl = wk_dataloader_new(ds, WK_LOADER_OPTS(.batch_size = 4)); /* without the option: pageable */
  wk_sample b;
  TU_OK(wk_dataloader_next(dl, &b));
  ck_assert(!wk_tensor_is_pinned(b.t[0]));
  wk_sample_clear(&b);
  wk_dataloader_free(dl);
  wk_dataset_free(ds);
  wk_release(x);
  wk_release(y);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- pad_sequence and a padding collate ------------------------------------------------------------------------- */
START_TEST(test_loader_pad_sequence) {
  int64_t live = wk_live_tensors();
  wk_tensor *a = TU_T(WK_F32, (3, 2), 1, 2, 3, 4, 5, 6), *b = TU_T(WK_F32, (1, 2), 7, 8),
            *c = TU_T(WK_F32, (2, 2), 9, 10, 11, 12);
  wk_tensor *seqs[] = {a, b, c};
  wk_tensor *p = wk_pad_sequence(seqs, 3, true, -1);
  TU_NOTNULL(p);
  ck_assert_int_eq(wk_tensor_dim(p), 3);
  ck_assert_int_eq(wk_tensor_size(p, 0), 3);
  ck_assert_int_eq(wk_tensor_size(p, 1), 3);
  TU_EQ_VALS(p, 1, 2, 3, 4, 5, 6, 7, 8, -1, -1, -1, -1, 9, 10, 11, 12, -1, -1);
  wk_release(p);
  p = wk_pad_sequence(seqs, 3, false, 0); /* [max L, B, 2] */
  ck_assert_int_eq(wk_tensor_size(p, 0), 3);
  ck_assert_int_eq(wk_tensor_size(p, 1), 3);
  TU_EQ_VALS(p, 1, 2, 7, 8, 9, 10, 3, 4, 0, 0, 11, 12, 5, 6, 0, 0, 0, 0);
  wk_release(p);
  wk_tensor *nc = tu_noncontig(a), *l1 = wk_arange_int(0, 2, 1, WK_OPTS(.dtype = WK_I64));
  wk_tensor *l2 = wk_arange_int(5, 9, 1, WK_OPTS(.dtype = WK_I64));
  p = wk_pad_sequence((wk_tensor *[]){nc, b}, 2, true, 0);
  TU_EQ_VALS(p, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0);
  wk_release(p);
  p = wk_pad_sequence((wk_tensor *[]){l1, l2}, 2, true, 99);
  ck_assert_int_eq(wk_tensor_dtype(p), WK_I64);
  TU_EQ_VALS(p, 0, 1, 99, 99, 5, 6, 7, 8);
  wk_release(p);
  ck_assert_ptr_null(wk_pad_sequence((wk_tensor *[]){a, l1}, 2, true, 0));
  TU_FAILS_WITH(WK_ERR_SHAPE, "pad_sequence: sequence 1 is i64 [2] but sequence 0 is f32 [3, 2]");
  ck_assert_ptr_null(wk_pad_sequence(seqs, 0, true, 0));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "empty list");
  ck_assert_ptr_null(wk_pad_sequence(NULL, 1, true, 0));
  TU_FAILS_WITH(WK_ERR_NULL, "seqs");
  ck_assert_ptr_null(wk_pad_sequence((wk_tensor *[]){a, NULL}, 2, true, 0));
  TU_FAILS_WITH(WK_ERR_NULL, "sequence 1 is NULL");
  ck_assert_int_eq(wk_collate_default(NULL, 1, NULL), WK_ERR_NULL);
  wk_clear_error();
  wk_release(nc);
  wk_release(l1);
  wk_release(l2);
  wk_release(a);
  wk_release(b);
  wk_release(c);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* Variable-length sequences: sample i is (arange(i % 4 + 1) + 10 i, label i). */
static int64_t seq_len(void *p) {
  return 10;
}
static wk_status seq_get(void *p, int64_t i, const wk_sample_ctx *ctx, wk_sample *out) {
  out->t[out->n++] = wk_arange(10.0 * (double)i, 10.0 * (double)i + (double)(i % 4 + 1), 1, WK_OPTS(.dtype = WK_F32));
  out->t[out->n++] = wk_scalar_tensor((double)i, WK_I64);
  return WK_OK;
}
/* The padding collate a user writes: pad field 0, stack the rest with the default collate. */
static wk_status pad_collate(void *user, const wk_sample *samples, int64_t n, wk_sample *out) {
  wk_tensor *seqs[64];
  wk_sample rest[64];
  for (int64_t i = 0; i < n; i++) {
    seqs[i] = samples[i].t[0];
    rest[i] = (wk_sample){.n = 1, .t = {samples[i].t[1]}};
  }
  wk_status st = wk_collate_default(rest, n, out); /* borrows: rest holds no references of its own */
  if (st != WK_OK) return st;
  wk_tensor *padded = wk_pad_sequence(seqs, n, true, *(const double *)user);
  if (!padded) {
    wk_sample_clear(out);
    return wk_last_error();
  }
  out->t[1] = out->t[0];
  out->t[0] = padded;
  out->n = 2;
  return WK_OK;
}
START_TEST(test_loader_pad_collate) {
  int64_t live = wk_live_tensors();
  wk_dataset *ds = wk_dataset_new(&(wk_dataset_impl){sizeof(wk_dataset_impl), seq_len, seq_get, NULL}, NULL);
  double pad = -1;
  for (int w = 0; w < 3; w += 2) {
    wk_dataloader *dl = wk_dataloader_new(
        ds, WK_LOADER_OPTS(.batch_size = 3, .num_workers = w, .collate = pad_collate, .collate_user = &pad));
    wk_sample b;
    TU_OK(wk_dataloader_next(dl, &b)); /* samples 0, 1, 2: lengths 1, 2, 3 */
    ck_assert_int_eq(b.n, 2);
    TU_EQ_VALS(b.t[0], 0, -1, -1, 10, 11, -1, 20, 21, 22);
    TU_EQ_VALS(b.t[1], 0, 1, 2);
    wk_sample_clear(&b);
    TU_OK(wk_dataloader_next(dl, &b)); /* 3, 4, 5: lengths 4, 1, 2 */
    ck_assert_int_eq(wk_tensor_size(b.t[0], 1), 4);
    TU_EQ_VALS(b.t[1], 3, 4, 5);
    wk_sample_clear(&b);
    wk_dataloader_free(dl);
  }
  /* without it, the default collate refuses the ragged batch with both shapes */
  wk_dataloader *dl = wk_dataloader_new(ds, WK_LOADER_OPTS(.batch_size = 3));
  wk_sample b;
  ck_assert_int_eq(wk_dataloader_next(dl, &b), WK_ERR_SHAPE);
  TU_FAILS_WITH(WK_ERR_SHAPE, "field 0 of sample 0 is f32 [1] and of sample 1 is f32 [2]");
  wk_dataloader_free(dl);
  wk_dataset_free(ds);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- get_batch (data service 3): whole batches gathered by the dataset -------------------------------- */
typedef struct {
  wk_tensor *x, *y;
  atomic_int batches, gets;
  int mode; /* 0 gather, 1 fail, 2 return no tensors */
} gb_ds;
static int64_t gb_len(void *self) { return wk_tensor_size(((gb_ds *)self)->x, 0); }
static wk_status gb_get(void *self, int64_t i, const wk_sample_ctx *ctx, wk_sample *out) {
  gb_ds *d = self;
  (void)ctx;
  atomic_fetch_add(&d->gets, 1);
  wk_tensor *a = wk_select(d->x, 0, i), *b = wk_select(d->y, 0, i);
  out->t[out->n++] = wk_contiguous(a);
  out->t[out->n++] = wk_contiguous(b);
  wk_release(a);
  wk_release(b);
  return WK_OK;
}
static wk_status gb_get_batch(void *self, const int64_t *idx, int64_t n, wk_sample *out) {
  gb_ds *d = self;
  atomic_fetch_add(&d->batches, 1);
  if (d->mode == 1) return wk_error(WK_ERR_IO, "shard of sample %lld is gone", (long long)idx[0]);
  if (d->mode == 2) return WK_OK;
  wk_tensor *it = wk_tensor_from_data(idx, WK_I64, WK_SHAPE(n));
  out->t[out->n++] = wk_index_select(d->x, 0, it);
  out->t[out->n++] = wk_index_select(d->y, 0, it);
  wk_release(it);
  return WK_OK;
}
/* Every batch of one epoch of dl, both fields' values concatenated. */
static int epoch_pairs(wk_dataloader *dl, double *xs, double *ys, int cap) {
  int nx = 0, ny = 0;
  for (;;) {
    wk_sample b;
    TU_OK(wk_dataloader_next(dl, &b));
    if (b.n == 0) break;
    ck_assert_int_eq(b.n, 2);
    double *vx = tu_values(b.t[0]), *vy = tu_values(b.t[1]);
    for (int64_t i = 0; i < wk_tensor_numel(b.t[0]) && nx < cap; i++) xs[nx++] = vx[i];
    for (int64_t i = 0; i < wk_tensor_numel(b.t[1]) && ny < cap; i++) ys[ny++] = vy[i];
    free(vx);
    free(vy);
    wk_sample_clear(&b);
  }
  ck_assert_int_eq(nx, ny * 4);
  return ny;
}
static wk_status stack_collate(void *user, const wk_sample *samples, int64_t n, wk_sample *out) {
  (void)user;
  return wk_collate_default(samples, n, out);
}
START_TEST(test_loader_get_batch) {
  int64_t live = wk_live_tensors();
  wk_tensor *base = wk_arange(0, 40, 1, (wk_options){.dtype = WK_F32});
  wk_tensor *x = wk_reshape(base, WK_SHAPE(10, 2, 2));
  wk_tensor *y = wk_arange(100, 110, 1, (wk_options){.dtype = WK_I64});
  /* the same samples one by one: a version-1 impl (no get_batch member) */
  gb_ds ref = {.x = x, .y = y};
  wk_dataset *per = wk_dataset_new(
      &(wk_dataset_impl){.struct_size = offsetof(wk_dataset_impl, get_batch), .len = gb_len, .get = gb_get,
                         .get_batch = gb_get_batch},
      &ref);
  wk_dataset *tds = wk_tensor_dataset((wk_tensor *[]){x, y}, 2);
  /* a transposed view: TensorDataset gathers it with index_select */
  wk_tensor *xt_base = wk_reshape(base, WK_SHAPE(4, 10));
  wk_tensor *xt = wk_permute(xt_base, WK_SHAPE(1, 0));
  wk_dataset *tds_t = wk_tensor_dataset((wk_tensor *[]){xt, y}, 2);
  ck_assert(per && tds && tds_t);
  double rx[64], ry[16], gx[64], gy[16];
  for (int w = 0; w < 3; w += 2) {
    wk_dataloader *a = wk_dataloader_new(per, WK_LOADER_OPTS(.batch_size = 3, .shuffle = true, .seed = 7, .num_workers = w));
    wk_dataloader *b = wk_dataloader_new(tds, WK_LOADER_OPTS(.batch_size = 3, .shuffle = true, .seed = 7, .num_workers = w));
    ck_assert_int_eq(epoch_pairs(a, rx, ry, 64), 10);
    ck_assert_int_eq(epoch_pairs(b, gx, gy, 64), 10);
    ck_assert_mem_eq(rx, gx, sizeof(double) * 40);
    ck_assert_mem_eq(ry, gy, sizeof(double) * 10);
    wk_dataloader_free(a);
    wk_dataloader_free(b);
  }
  ck_assert_int_eq(atomic_load(&ref.batches), 0); /* the old struct_size hid get_batch */
  ck_assert_int_eq(atomic_load(&ref.gets), 20);
  /* transposed: sample i is column i of the [4, 10] view */
  wk_dataloader *dl = wk_dataloader_new(tds_t, WK_LOADER_OPTS(.batch_size = 4));
  wk_sample bt;
  TU_OK(wk_dataloader_next(dl, &bt));
  ck_assert_int_eq(wk_tensor_dim(bt.t[0]), 2);
  TU_EQ_VALS(bt.t[0], 0, 10, 20, 30, 1, 11, 21, 31, 2, 12, 22, 32, 3, 13, 23, 33);
  TU_EQ_VALS(bt.t[1], 100, 101, 102, 103);
  wk_sample_clear(&bt);
  wk_dataloader_free(dl);
  /* a Subset of a TensorDataset gathers through its parent; of a Subset too */
  wk_dataset *sub = wk_subset(tds, (int64_t[]){9, 0, -5, 3}, 4);
  wk_dataset *sub2 = wk_subset(sub, (int64_t[]){3, 0}, 2);
  dl = wk_dataloader_new(sub, WK_LOADER_OPTS(.batch_size = 3));
  TU_OK(wk_dataloader_next(dl, &bt));
  TU_EQ_VALS(bt.t[1], 109, 100, 105);
  TU_EQ_VALS(bt.t[0], 36, 37, 38, 39, 0, 1, 2, 3, 20, 21, 22, 23);
  wk_sample_clear(&bt);
  TU_OK(wk_dataloader_next(dl, &bt));
  TU_EQ_VALS(bt.t[1], 103);
  wk_sample_clear(&bt);
  wk_dataloader_free(dl);
  dl = wk_dataloader_new(sub2, WK_LOADER_OPTS(.batch_size = 2));
  TU_OK(wk_dataloader_next(dl, &bt));
  TU_EQ_VALS(bt.t[1], 103, 109);
  wk_sample_clear(&bt);
  wk_dataloader_free(dl);
  /* a user get_batch: used without a collate function, not with one; its failures name the batch */
  gb_ds u = {.x = x, .y = y};
  wk_dataset *uds = wk_dataset_new(
      &(wk_dataset_impl){sizeof(wk_dataset_impl), gb_len, gb_get, NULL, gb_get_batch}, &u);
  dl = wk_dataloader_new(uds, WK_LOADER_OPTS(.batch_size = 4));
  ck_assert_int_eq(epoch_pairs(dl, gx, gy, 64), 10);
  ck_assert_int_eq(atomic_load(&u.batches), 3);
  ck_assert_int_eq(atomic_load(&u.gets), 0);
  wk_dataloader_free(dl);
  dl = wk_dataloader_new(uds, WK_LOADER_OPTS(.batch_size = 4, .collate = stack_collate));
  TU_OK(wk_dataloader_next(dl, &bt));
  ck_assert_int_eq(atomic_load(&u.gets), 4);
  ck_assert_int_eq(atomic_load(&u.batches), 3);
  wk_sample_clear(&bt);
  wk_dataloader_free(dl);
  for (int w = 0; w < 3; w += 2) {
    u.mode = 1;
    dl = wk_dataloader_new(uds, WK_LOADER_OPTS(.batch_size = 4, .num_workers = w));
    ck_assert_int_eq(wk_dataloader_next(dl, &bt), WK_ERR_IO);
    ck_assert_int_eq(bt.n, 0);
    TU_FAILS_WITH(WK_ERR_IO, "batch 0 of epoch 0 (samples 0..3) failed: shard of sample 0 is gone");
    wk_dataloader_free(dl);
    u.mode = 2;
    dl = wk_dataloader_new(uds, WK_LOADER_OPTS(.batch_size = 4, .num_workers = w));
    ck_assert_int_eq(wk_dataloader_next(dl, &bt), WK_ERR_STATE);
    TU_FAILS_WITH(WK_ERR_STATE, "get_batch returned 0 tensors");
    wk_dataloader_free(dl);
  }
  wk_dataset_free(uds);
  wk_dataset_free(sub2);
  wk_dataset_free(sub);
  wk_dataset_free(tds_t);
  wk_dataset_free(tds);
  wk_dataset_free(per);
  wk_release(xt);
  wk_release(xt_base);
  wk_release(x);
  wk_release(y);
  wk_release(base);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("loader");
  struct {
    const char *name;
    const TTest *t;
  } tests[] = {{"iterable", test_loader_iterable},    {"options", test_loader_persistent},
               {"options", test_loader_timeout},      {"options", test_loader_prefetch_pin},
               {"collate", test_loader_pad_sequence}, {"collate", test_loader_pad_collate},
               {"pinned", test_loader_pinned_device}, {"get_batch", test_loader_get_batch}};
  TCase *tc = NULL;
  const char *cur = "";
  for (size_t i = 0; i < sizeof tests / sizeof *tests; i++) {
    if (strcmp(cur, tests[i].name) != 0) {
      cur = tests[i].name;
      tc = tcase_create(cur);
      tcase_add_checked_fixture(tc, tu_setup, NULL);
      tcase_set_timeout(tc, 60);
      suite_add_tcase(s, tc);
    }
    tcase_add_test(tc, tests[i].t);
  }
  return s;
}
TU_MAIN(make_suite)
