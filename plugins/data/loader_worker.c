/* data plugin: the DataLoader's worker threads and batch building. A worker
 * runs worker_init_fn once when it starts, then takes part in iterations
 * (numbered by `gen`): for a map-style dataset it claims batch numbers in
 * order, at most `queue` ahead of the caller, and puts batch b in slot
 * b % queue; for an iterable dataset it opens its own stream (its id and the
 * worker count let it shard) and fills its own ring of `prefetch` slots.
 * Non-persistent workers leave after one iteration; persistent ones wait for
 * the next. All shared state is under dl->mu. */
#include "loader.h"

char *dt_msg(const char *prefix, const char *m) {
  size_t len = strlen(prefix) + strlen(m) + 1;
  char *s = wk_malloc(len);
  if (s) snprintf(s, len, "%s%s", prefix, m);
  return s;
}

/* pin_memory: moves the batch's tensors to page-locked memory. No plugin
 * offering it, or no usable device behind it (WK_ERR_DEVICE: no driver),
 * is not an error: batches stay pageable from then on, as PyTorch does when
 * CUDA is unavailable. Any other failure (out of pinned memory) fails the batch. */
static void pin_batch(wk_dataloader *dl, const char *what, dt_slot *r) {
  for (int i = 0; i < r->batch.n && !atomic_load(&dl->pin_off); i++) {
    wk_tensor *p = wk_pin_memory(r->batch.t[i]);
    if (p) {
      wk_release(r->batch.t[i]);
      r->batch.t[i] = p;
    } else if (wk_last_error() == WK_ERR_UNSUPPORTED || wk_last_error() == WK_ERR_DEVICE) {
      atomic_store(&dl->pin_off, true);
      wk_clear_error();
    } else {
      char prefix[160];
      snprintf(prefix, sizeof prefix, "dataloader: pin_memory of %s, field %d: ", what, i);
      r->st = wk_last_error();
      r->msg = dt_msg(prefix, wk_last_error_message());
      wk_sample_clear(&r->batch);
      return;
    }
  }
}

/* Collates n samples into r->batch (then pins it); on failure r->st/r->msg describe it. */
static void collate_into(wk_dataloader *dl, wk_sample *s, int64_t n, const char *what, dt_slot *r) {
  r->st = dl->collate ? dl->collate(dl->collate_user, s, n, &r->batch) : dt_collate_stack(s, n, &r->batch);
  if (r->st == WK_OK && (r->batch.n < 1 || r->batch.n > WK_SAMPLE_MAX)) {
    if (r->batch.n < 0 || r->batch.n > WK_SAMPLE_MAX) r->batch.n = 0;
    r->st = wk_error(WK_ERR_STATE, "collate_fn returned %d tensors (1..%d allowed)", r->batch.n, WK_SAMPLE_MAX);
  }
  if (r->st != WK_OK) {
    wk_sample_clear(&r->batch);
    const char *m = wk_last_error_message();
    char prefix[160];
    snprintf(prefix, sizeof prefix, "dataloader: collating %s: ", what);
    r->msg = dt_msg(prefix, *m ? m : "collate_fn failed without a message");
    return;
  }
  if (dl->pin_memory) pin_batch(dl, what, r);
}

void dt_build_batch(wk_dataloader *dl, int64_t b, int worker, dt_slot *r) {
  memset(r, 0, sizeof *r);
  r->ready = true;
  if (worker >= 0) wk_clear_error();
  int64_t lo = b * dl->bs, hi = lo + dl->bs < dl->norder ? lo + dl->bs : dl->norder, n = hi - lo;
  if (!dl->collate && dl->ds->impl.get_batch) { /* the dataset gathers the whole batch itself */
    r->st = dl->ds->impl.get_batch(dl->ds->self, dl->order + lo, n, &r->batch);
    if (r->st == WK_OK && (r->batch.n < 1 || r->batch.n > WK_SAMPLE_MAX))
      r->st = wk_error(WK_ERR_STATE, "dataset: get_batch returned %d tensors (1..%d allowed)", r->batch.n, WK_SAMPLE_MAX);
    for (int i = 0; r->st == WK_OK && i < r->batch.n; i++)
      if (!r->batch.t[i]) r->st = wk_error(WK_ERR_STATE, "dataset: get_batch returned a NULL tensor in field %d", i);
    if (r->st != WK_OK) {
      if (wk_last_error() == WK_OK) wk_error(r->st, "get_batch failed without a message");
      if (r->batch.n < 0 || r->batch.n > WK_SAMPLE_MAX) r->batch.n = WK_SAMPLE_MAX;
      wk_sample_clear(&r->batch);
      char prefix[160];
      snprintf(prefix, sizeof prefix, "dataloader: batch %lld of epoch %lld (samples %lld..%lld) failed: ", (long long)b,
               (long long)dl->epoch, (long long)lo, (long long)hi - 1);
      r->msg = dt_msg(prefix, wk_last_error_message());
    } else if (dl->pin_memory) {
      char what[96];
      snprintf(what, sizeof what, "batch %lld (samples %lld..%lld)", (long long)b, (long long)lo, (long long)hi - 1);
      pin_batch(dl, what, r);
    }
    if (r->st != WK_OK) wk_clear_error();
    return;
  }
  wk_sample *s = wk_calloc((size_t)n, sizeof *s);
  r->st = s ? WK_OK : wk_error(WK_ERR_NO_MEMORY, "dataloader: out of memory");
  for (int64_t k = 0; r->st == WK_OK && k < n; k++) {
    int64_t idx = dl->order[lo + k];
    wk_sample_ctx ctx = {.struct_size = sizeof ctx,
                         .seed = wk_data_sample_seed(dl->seed, dl->epoch, idx),
                         .epoch = dl->epoch,
                         .index = idx,
                         .worker_id = worker};
    r->st = dt_dataset_get(dl->ds, idx, &ctx, &s[k]);
    if (r->st != WK_OK) {
      char prefix[160];
      snprintf(prefix, sizeof prefix, "dataloader: sample %lld (batch %lld of epoch %lld) failed: ", (long long)idx,
               (long long)b, (long long)dl->epoch);
      r->msg = dt_msg(prefix, wk_last_error_message());
    }
  }
  if (r->st == WK_OK) {
    char what[96];
    snprintf(what, sizeof what, "batch %lld (samples %lld..%lld)", (long long)b, (long long)lo, (long long)hi - 1);
    collate_into(dl, s, n, what, r);
  }
  for (int64_t j = 0; s && j < n; j++) wk_sample_clear(&s[j]);
  wk_free(s);
  if (r->st != WK_OK) wk_clear_error();
}

void dt_build_stream_batch(wk_dataloader *dl, void *stream, int worker, dt_slot *r, bool *end) {
  memset(r, 0, sizeof *r);
  r->ready = true;
  *end = false;
  if (worker >= 0) wk_clear_error();
  wk_sample *s = wk_calloc((size_t)dl->bs, sizeof *s);
  r->st = s ? WK_OK : wk_error(WK_ERR_NO_MEMORY, "dataloader: out of memory");
  int64_t n = 0;
  const wk_iterable_impl *it = &dl->ds->iter;
  while (r->st == WK_OK && n < dl->bs) {
    r->st = it->next(dl->ds->self, stream, &s[n]);
    if (r->st == WK_OK && (s[n].n < 0 || s[n].n > WK_SAMPLE_MAX)) {
      r->st =
          wk_error(WK_ERR_STATE, "iterable dataset: next() returned %d tensors (0..%d allowed)", s[n].n, WK_SAMPLE_MAX);
      s[n].n = 0;
    }
    for (int i = 0; r->st == WK_OK && i < s[n].n; i++)
      if (!s[n].t[i]) r->st = wk_error(WK_ERR_STATE, "iterable dataset: next() returned a NULL tensor in field %d", i);
    if (r->st != WK_OK) {
      if (s[n].n < 0 || s[n].n > WK_SAMPLE_MAX) s[n].n = 0;
      wk_sample_clear(&s[n]);
      if (wk_last_error() == WK_OK) wk_error(r->st, "next() failed without a message");
      char prefix[160];
      snprintf(prefix, sizeof prefix,
               "dataloader: iterable dataset, worker %d, sample %lld of its next batch (epoch %lld) "
               "failed: ",
               worker < 0 ? 0 : worker, (long long)n, (long long)dl->epoch);
      r->msg = dt_msg(prefix, wk_last_error_message());
      break;
    }
    if (s[n].n == 0) break; /* end of stream */
    n++;
  }
  if (r->st == WK_OK && (n == 0 || (n < dl->bs && dl->drop_last))) {
    *end = true;
    r->ready = false;
  } else if (r->st == WK_OK) {
    char what[96];
    snprintf(what, sizeof what, "a batch of %lld samples from worker %d", (long long)n, worker < 0 ? 0 : worker);
    collate_into(dl, s, n, what, r);
  }
  for (int64_t j = 0; s && j < n; j++) wk_sample_clear(&s[j]);
  wk_free(s);
  if (r->st != WK_OK) wk_clear_error();
}

/* Map-style: claims batches until none is left or the iteration stops. Holds mu. */
static void run_map(wk_dataloader *dl, int id) {
  for (;;) {
    while (!dl->stop && !dl->no_claim && dl->next_claim < dl->nbatches &&
           dl->next_claim >= dl->next_deliver + dl->queue)
      pthread_cond_wait(&dl->cv_work, &dl->mu);
    if (dl->stop || dl->no_claim || dl->next_claim >= dl->nbatches) return;
    int64_t b = dl->next_claim++;
    pthread_mutex_unlock(&dl->mu);
    dt_slot r;
    dt_build_batch(dl, b, id, &r);
    pthread_mutex_lock(&dl->mu);
    if (r.st != WK_OK) dl->no_claim = true;
    if (dl->stop) {
      wk_sample_clear(&r.batch);
      wk_free(r.msg);
      return;
    }
    dl->slots[b % dl->queue] = r;
    pthread_cond_broadcast(&dl->cv_done);
  }
}

/* Iterable-style: opens this worker's stream and fills its ring until the
 * stream ends, fails or the iteration stops. Holds mu. */
static void run_stream(wk_dataloader *dl, int id) {
  const wk_iterable_impl *it = &dl->ds->iter;
  wk_worker_info info = {.struct_size = sizeof info,
                         .worker_id = id,
                         .num_workers = dl->nworkers,
                         .seed = wk_data_sample_seed(dl->seed, dl->epoch, id),
                         .epoch = dl->epoch};
  pthread_mutex_unlock(&dl->mu);
  void *stream = NULL;
  dt_slot r = {.ready = true};
  r.st = it->open(dl->ds->self, &info, &stream);
  bool opened = r.st == WK_OK;
  if (!opened) {
    char prefix[96];
    snprintf(prefix, sizeof prefix, "dataloader: iterable dataset: open() for worker %d failed: ", id);
    r.msg = dt_msg(prefix, *wk_last_error_message() ? wk_last_error_message() : "no message");
    wk_clear_error();
  }
  pthread_mutex_lock(&dl->mu);
  for (;;) {
    if (opened) {
      while (!dl->stop && dl->produced[id] - dl->taken[id] >= dl->prefetch) pthread_cond_wait(&dl->cv_work, &dl->mu);
      if (dl->stop) break;
      pthread_mutex_unlock(&dl->mu);
      bool end;
      dt_build_stream_batch(dl, stream, id, &r, &end);
      pthread_mutex_lock(&dl->mu);
      if (end) {
        dl->ended[id] = true;
        pthread_cond_broadcast(&dl->cv_done);
        break;
      }
    }
    if (dl->stop) {
      wk_sample_clear(&r.batch);
      wk_free(r.msg);
      break;
    }
    dl->slots[id * dl->prefetch + dl->produced[id] % dl->prefetch] = r;
    dl->produced[id]++;
    if (r.st != WK_OK) dl->ended[id] = true;
    pthread_cond_broadcast(&dl->cv_done);
    if (r.st != WK_OK) break;
  }
  pthread_mutex_unlock(&dl->mu);
  if (opened && it->close) it->close(dl->ds->self, stream);
  wk_clear_error();
  pthread_mutex_lock(&dl->mu);
}

static void *worker_main(void *arg) {
  wk_dataloader *dl = ((void **)arg)[0];
  int id = (int)(intptr_t)((void **)arg)[1];
  wk_free(arg);
  wk_clear_error();
  wk_status st = dl->worker_init ? dl->worker_init(id, dl->worker_init_user) : WK_OK;
  pthread_mutex_lock(&dl->mu);
  dl->started++;
  pthread_cond_broadcast(&dl->cv_done);
  if (st != WK_OK) { /* this worker is dead: dt_workers_start reports it */
    if (dl->init_st == WK_OK) {
      char prefix[96];
      snprintf(prefix, sizeof prefix, "dataloader: worker_init_fn failed for worker %d: ", id);
      dl->init_st = st;
      dl->init_msg = dt_msg(prefix, *wk_last_error_message() ? wk_last_error_message() : "no message");
    }
    dl->no_claim = true;
    pthread_cond_broadcast(&dl->cv_done);
    pthread_mutex_unlock(&dl->mu);
    wk_clear_error();
    return NULL;
  }
  uint64_t done = 0; /* the last iteration this worker took part in (gen starts at 1) */
  while (!dl->shutdown) {
    if (!dl->running || done == dl->gen) {
      pthread_cond_wait(&dl->cv_work, &dl->mu);
      continue;
    }
    done = dl->gen;
    dl->busy++;
    if (dl->sampler)
      run_map(dl, id);
    else
      run_stream(dl, id);
    dl->busy--;
    pthread_cond_broadcast(&dl->cv_done);
    if (!dl->persistent) break;
  }
  pthread_mutex_unlock(&dl->mu);
  return NULL;
}

wk_status dt_workers_start(wk_dataloader *dl) {
  if (dl->nthreads > 0) return WK_OK;
  if (!dl->threads && !(dl->threads = wk_calloc((size_t)dl->nworkers, sizeof *dl->threads)))
    return wk_error(WK_ERR_NO_MEMORY, "dataloader: out of memory");
  dl->shutdown = false;
  for (int i = 0; i < dl->nworkers; i++) {
    void **arg = wk_malloc(2 * sizeof *arg);
    if (!arg) break;
    arg[0] = dl;
    arg[1] = (void *)(intptr_t)i;
    if (pthread_create(&dl->threads[i], NULL, worker_main, arg) != 0) {
      wk_free(arg);
      break;
    }
    dl->nthreads++;
  }
  if (dl->nthreads < dl->nworkers) { /* every worker id must exist: iterable streams shard by them */
    int started = dl->nthreads;
    dt_workers_join(dl);
    return wk_error(WK_ERR_STATE, "dataloader: could start only %d of %d worker threads", started, dl->nworkers);
  }
  /* wait for every worker_init_fn, so that a failing one fails this call, whatever the timing */
  pthread_mutex_lock(&dl->mu);
  while (dl->started < dl->nthreads) pthread_cond_wait(&dl->cv_done, &dl->mu);
  wk_status st = dl->init_st;
  char *msg = st != WK_OK && dl->init_msg ? dt_msg("", dl->init_msg) : NULL;
  pthread_mutex_unlock(&dl->mu);
  if (st == WK_OK) return WK_OK;
  dt_workers_join(dl);
  wk_error_replace(st, "%s", msg ? msg : "dataloader: worker_init_fn failed");
  wk_free(msg);
  return st;
}

void dt_workers_join(wk_dataloader *dl) {
  pthread_mutex_lock(&dl->mu);
  dl->shutdown = true;
  dl->stop = true;
  pthread_cond_broadcast(&dl->cv_work);
  pthread_mutex_unlock(&dl->mu);
  for (int i = 0; i < dl->nthreads; i++) pthread_join(dl->threads[i], NULL);
  dl->nthreads = 0;
  dl->started = 0;
  wk_free(dl->init_msg);
  dl->init_msg = NULL;
  dl->init_st = WK_OK;
}
