/* data plugin: the DataLoader. An epoch's order comes from the sampler and is
 * cut into batches; batch b is built (get of each index, then collate) either
 * in the caller's thread (num_workers 0) or by worker threads that claim
 * batches in order, at most `queue` batches ahead of the caller, and put them
 * in slot b % queue. The caller takes the slots in order, so batches arrive
 * in sampler order whatever the number of workers; sample i of epoch e draws
 * from wk_data_sample_seed(seed, e, i), so the epoch is bit-identical too.
 * A failing batch stops further claims; the caller gets its error (naming the
 * sample) when it reaches that batch, after which the workers are joined. */
#include <pthread.h>

#include "data.h"

typedef struct {
  bool ready;
  wk_status st;
  char *msg;
  wk_sample batch;
} slot;

enum { IDLE = 0, RUNNING = 1 };

struct wk_dataloader {
  wk_dataset *ds;
  wk_sampler *sampler;
  int64_t bs;
  bool drop_last;
  int nworkers, queue;
  uint64_t seed;
  wk_status (*collate)(void *user, const wk_sample *samples, int64_t n, wk_sample *out);
  void *collate_user;
  int64_t epoch;
  int state;
  /* the current iteration */
  int64_t *order, norder, nbatches, next_claim, next_deliver;
  bool stop, no_claim;
  slot *slots;
  pthread_t *threads;
  int nthreads;
  pthread_mutex_t mu;
  pthread_cond_t cv_work, cv_done;
};

int64_t dt_loader_len(wk_dataloader *dl) {
  if (!dl) {
    wk_error(WK_ERR_NULL, "dataloader_len: argument 'dl' is NULL");
    return -1;
  }
  int64_t n = dl->sampler->vt->len(dl->sampler);
  return dl->drop_last ? n / dl->bs : (n + dl->bs - 1) / dl->bs;
}

/* Builds batch b into *out; on failure returns the status with *msg (malloc'd)
 * naming the sample, and leaves this thread's error cleared. */
static wk_status build_batch(wk_dataloader *dl, int64_t b, int worker, wk_sample *out, char **msg) {
  memset(out, 0, sizeof *out);
  *msg = NULL;
  if (worker >= 0) wk_clear_error();
  int64_t lo = b * dl->bs, hi = lo + dl->bs < dl->norder ? lo + dl->bs : dl->norder, n = hi - lo;
  wk_sample *s = calloc((size_t)n, sizeof *s);
  wk_status st = s ? WK_OK : wk_error(WK_ERR_NO_MEMORY, "dataloader: out of memory");
  int64_t k = 0;
  for (; st == WK_OK && k < n; k++) {
    int64_t idx = dl->order[lo + k];
    wk_sample_ctx ctx = {.struct_size = sizeof ctx, .seed = wk_data_sample_seed(dl->seed, dl->epoch, idx),
                         .epoch = dl->epoch, .index = idx, .worker_id = worker};
    st = dt_dataset_get(dl->ds, idx, &ctx, &s[k]);
    if (st != WK_OK) {
      const char *m = wk_last_error_message();
      size_t len = strlen(m) + 160;
      *msg = malloc(len);
      if (*msg)
        snprintf(*msg, len, "dataloader: sample %lld (batch %lld of epoch %lld) failed: %s", (long long)idx, (long long)b,
                 (long long)dl->epoch, m);
    }
  }
  if (st == WK_OK) {
    st = dl->collate ? dl->collate(dl->collate_user, s, n, out) : dt_collate_stack(s, n, out);
    if (st == WK_OK && (out->n < 1 || out->n > WK_SAMPLE_MAX)) {
      if (out->n < 0 || out->n > WK_SAMPLE_MAX) out->n = 0;
      st = wk_error(WK_ERR_STATE, "collate_fn returned %d tensors (1..%d allowed)", out->n, WK_SAMPLE_MAX);
    }
    if (st != WK_OK) {
      wk_sample_clear(out);
      const char *m = wk_last_error_message();
      size_t len = strlen(m) + 120;
      *msg = malloc(len);
      if (*msg) snprintf(*msg, len, "dataloader: collating batch %lld (samples %lld..%lld): %s", (long long)b, (long long)lo,
                         (long long)hi - 1, *m ? m : "collate_fn failed without a message");
    }
  }
  for (int64_t j = 0; s && j < n; j++) wk_sample_clear(&s[j]);
  free(s);
  if (st != WK_OK) wk_clear_error();
  return st;
}

static void *worker_main(void *arg) {
  wk_dataloader *dl = ((void **)arg)[0];
  int id = (int)(intptr_t)((void **)arg)[1];
  free(arg);
  wk_clear_error();
  pthread_mutex_lock(&dl->mu);
  for (;;) {
    while (!dl->stop && !dl->no_claim && dl->next_claim < dl->nbatches && dl->next_claim >= dl->next_deliver + dl->queue)
      pthread_cond_wait(&dl->cv_work, &dl->mu);
    if (dl->stop || dl->no_claim || dl->next_claim >= dl->nbatches) break;
    int64_t b = dl->next_claim++;
    pthread_mutex_unlock(&dl->mu);
    slot r = {.ready = true};
    r.st = build_batch(dl, b, id, &r.batch, &r.msg);
    pthread_mutex_lock(&dl->mu);
    if (r.st != WK_OK) dl->no_claim = true;
    if (dl->stop) {
      wk_sample_clear(&r.batch);
      free(r.msg);
      continue;
    }
    dl->slots[b % dl->queue] = r;
    pthread_cond_broadcast(&dl->cv_done);
  }
  pthread_mutex_unlock(&dl->mu);
  return NULL;
}

/* Stops the current iteration: joins the workers, drops undelivered batches. */
static void stop_iteration(wk_dataloader *dl) {
  if (dl->state != RUNNING) return;
  pthread_mutex_lock(&dl->mu);
  dl->stop = true;
  pthread_cond_broadcast(&dl->cv_work);
  pthread_cond_broadcast(&dl->cv_done);
  pthread_mutex_unlock(&dl->mu);
  for (int i = 0; i < dl->nthreads; i++) pthread_join(dl->threads[i], NULL);
  for (int i = 0; dl->slots && i < dl->queue; i++) {
    wk_sample_clear(&dl->slots[i].batch);
    free(dl->slots[i].msg);
  }
  free(dl->slots);
  free(dl->threads);
  free(dl->order);
  dl->slots = NULL;
  dl->threads = NULL;
  dl->order = NULL;
  dl->nthreads = 0;
  dl->state = IDLE;
}

static wk_status start_iteration(wk_dataloader *dl) {
  dl->sampler->epoch = dl->epoch;
  dl->order = dt_sampler_order(dl->sampler, dl->epoch, &dl->norder);
  if (!dl->order) return wk_last_error();
  int64_t n = dl->ds->impl.len(dl->ds->self);
  for (int64_t i = 0; i < dl->norder; i++)
    if (dl->order[i] < 0 || dl->order[i] >= n) {
      wk_status st = wk_error(WK_ERR_INDEX, "dataloader: the sampler gave index %lld (position %lld) for a dataset of %lld samples",
                              (long long)dl->order[i], (long long)i, (long long)n);
      free(dl->order);
      dl->order = NULL;
      return st;
    }
  dl->nbatches = dl->drop_last ? dl->norder / dl->bs : (dl->norder + dl->bs - 1) / dl->bs;
  dl->next_claim = dl->next_deliver = 0;
  dl->stop = dl->no_claim = false;
  dl->state = RUNNING;
  if (dl->nworkers == 0) return WK_OK;
  dl->slots = calloc((size_t)dl->queue, sizeof *dl->slots);
  dl->threads = calloc((size_t)dl->nworkers, sizeof *dl->threads);
  if (!dl->slots || !dl->threads) {
    stop_iteration(dl);
    return wk_error(WK_ERR_NO_MEMORY, "dataloader: out of memory");
  }
  for (int i = 0; i < dl->nworkers; i++) {
    void **arg = malloc(2 * sizeof *arg);
    if (!arg) break;
    arg[0] = dl;
    arg[1] = (void *)(intptr_t)i;
    if (pthread_create(&dl->threads[i], NULL, worker_main, arg) != 0) {
      free(arg);
      break;
    }
    dl->nthreads++;
  }
  if (dl->nthreads == 0) {
    stop_iteration(dl);
    return wk_error(WK_ERR_STATE, "dataloader: could not start any of %d worker threads", dl->nworkers);
  }
  return WK_OK;
}

/* Hands a batch to the caller: fresh handles made in the caller's thread, so
 * a scope open there owns them. */
static wk_status deliver(wk_sample *from, wk_sample *to) {
  memset(to, 0, sizeof *to);
  for (int i = 0; i < from->n; i++) {
    wk_tensor *d = wk_detach(from->t[i]);
    if (!d) {
      wk_sample_clear(to);
      wk_sample_clear(from);
      return wk_last_error();
    }
    to->t[to->n++] = d;
  }
  wk_sample_clear(from);
  return WK_OK;
}

wk_status dt_loader_next(wk_dataloader *dl, wk_sample *batch) {
  if (!dl || !batch) return wk_error(WK_ERR_NULL, "dataloader_next: argument '%s' is NULL", !dl ? "dl" : "batch");
  memset(batch, 0, sizeof *batch);
  if (dl->state == IDLE) {
    wk_status st = start_iteration(dl);
    if (st != WK_OK) return st;
  }
  if (dl->next_deliver >= dl->nbatches) { /* the end: the next call starts the next epoch */
    stop_iteration(dl);
    dl->epoch++;
    return WK_OK;
  }
  slot r;
  if (dl->nworkers == 0) {
    r.st = build_batch(dl, dl->next_deliver, -1, &r.batch, &r.msg);
    dl->next_deliver++;
  } else {
    pthread_mutex_lock(&dl->mu);
    slot *s = &dl->slots[dl->next_deliver % dl->queue];
    while (!s->ready) pthread_cond_wait(&dl->cv_done, &dl->mu);
    r = *s;
    memset(s, 0, sizeof *s);
    dl->next_deliver++;
    pthread_cond_broadcast(&dl->cv_work);
    pthread_mutex_unlock(&dl->mu);
  }
  if (r.st != WK_OK) {
    stop_iteration(dl);
    dl->epoch++;
    wk_error_replace(r.st, "%s", r.msg ? r.msg : "dataloader: a batch failed (out of memory for its message)");
    free(r.msg);
    return r.st;
  }
  return deliver(&r.batch, batch);
}

wk_status dt_loader_set_epoch(wk_dataloader *dl, int64_t epoch) {
  if (!dl) return wk_error(WK_ERR_NULL, "dataloader_set_epoch: argument 'dl' is NULL");
  stop_iteration(dl);
  dl->epoch = epoch;
  dl->sampler->epoch = epoch;
  return WK_OK;
}

void dt_loader_free(wk_dataloader *dl) {
  if (!dl) return;
  stop_iteration(dl);
  pthread_mutex_destroy(&dl->mu);
  pthread_cond_destroy(&dl->cv_work);
  pthread_cond_destroy(&dl->cv_done);
  dt_dataset_release(dl->ds);
  dt_sampler_release(dl->sampler);
  free(dl);
}

wk_dataloader *dt_loader_new(wk_dataset *ds, const wk_loader_opts *opts_in) {
  if (!ds) {
    wk_error(WK_ERR_NULL, "dataloader_new: argument 'ds' is NULL");
    return NULL;
  }
  wk_loader_opts o = {.struct_size = sizeof o};
  if (opts_in) {
    if (opts_in->struct_size < offsetof(wk_loader_opts, batch_size) + sizeof o.batch_size) {
      wk_error(WK_ERR_INVALID_ARG, "dataloader_new: opts->struct_size is %zu; set it to sizeof(wk_loader_opts) "
               "(WK_LOADER_OPTS does)", opts_in->struct_size);
      return NULL;
    }
    memcpy(&o, opts_in, opts_in->struct_size < sizeof o ? opts_in->struct_size : sizeof o);
  }
  if (o.batch_size < 0 || o.num_workers < 0 || o.num_workers > 1024 || o.prefetch_factor < 0) {
    wk_error(WK_ERR_INVALID_ARG, "dataloader_new: batch_size (%lld), num_workers (%d) and prefetch_factor (%d) must be "
             "non-negative (num_workers at most 1024)", (long long)o.batch_size, o.num_workers, o.prefetch_factor);
    return NULL;
  }
  if (o.shuffle && o.sampler) {
    wk_error(WK_ERR_INVALID_ARG, "dataloader_new: sampler option is mutually exclusive with shuffle");
    return NULL;
  }
  int64_t n = dt_dataset_len(ds);
  if (n < 0) {
    if (wk_last_error() == WK_OK) wk_error(WK_ERR_STATE, "dataloader_new: the dataset's len() is negative");
    return NULL;
  }
  wk_dataloader *dl = calloc(1, sizeof *dl);
  if (!dl) {
    wk_error(WK_ERR_NO_MEMORY, "dataloader_new: out of memory");
    return NULL;
  }
  dl->sampler = o.sampler ? dt_sampler_retain(o.sampler) : o.shuffle ? dt_sampler_random(n, false, 0, o.seed) : dt_sampler_sequential(n);
  if (!dl->sampler) {
    free(dl);
    return NULL;
  }
  dl->ds = dt_dataset_retain(ds);
  dl->bs = o.batch_size ? o.batch_size : 1;
  dl->drop_last = o.drop_last;
  dl->nworkers = o.num_workers;
  dl->queue = o.num_workers * (o.prefetch_factor ? o.prefetch_factor : 2);
  dl->seed = o.seed;
  dl->collate = o.collate;
  dl->collate_user = o.collate_user;
  pthread_mutex_init(&dl->mu, NULL);
  pthread_cond_init(&dl->cv_work, NULL);
  pthread_cond_init(&dl->cv_done, NULL);
  return dl;
}
