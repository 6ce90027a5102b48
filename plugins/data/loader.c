/* data plugin: the DataLoader, caller's side. An epoch of a map-style dataset
 * is the sampler's order cut into batches; batch b is built in the caller's
 * thread (num_workers 0) or by worker threads (loader_worker.c) into slot
 * b % queue, and the caller takes the slots in order, so batches arrive in
 * sampler order whatever the number of workers; sample i of epoch e draws
 * from wk_data_sample_seed(seed, e, i), so the epoch is bit-identical too.
 * An iterable dataset is read through one stream per worker, each batching
 * its own samples; the caller takes one batch from each active worker in
 * turn, as PyTorch does. A failing batch ends the iteration: the caller gets
 * its error (naming the sample) when it reaches it, and the workers stop. */
#include <errno.h>
#include <time.h>

#include "loader.h"

int64_t dt_loader_len(wk_dataloader *dl) {
  if (!dl) {
    wk_error(WK_ERR_NULL, "dataloader_len: argument 'dl' is NULL");
    return -1;
  }
  if (!dl->sampler) {
    wk_error(WK_ERR_UNSUPPORTED, "dataloader_len: a loader over an iterable dataset has no length");
    return -1;
  }
  int64_t n = dl->sampler->vt->len(dl->sampler);
  return dl->drop_last ? n / dl->bs : (n + dl->bs - 1) / dl->bs;
}

static int nslots(const wk_dataloader *dl) {
  return dl->sampler ? dl->queue : dl->nworkers * dl->prefetch;
}

/* Asks the workers to leave the current iteration, without waiting. */
static void request_stop(wk_dataloader *dl) {
  if (dl->state == DT_IDLE) return;
  if (dl->nworkers > 0) {
    pthread_mutex_lock(&dl->mu);
    dl->stop = dl->no_claim = true;
    dl->running = false;
    pthread_cond_broadcast(&dl->cv_work);
    pthread_mutex_unlock(&dl->mu);
  }
  dl->state = DT_STOPPING;
}

/* Ends the current iteration: joins the workers (persistent ones: waits until
 * none is inside it; after a worker_init_fn failure they are all joined and
 * restarted next time) and drops undelivered batches. */
static void finish_stop(wk_dataloader *dl) {
  if (dl->state == DT_IDLE) return;
  request_stop(dl);
  if (dl->nworkers > 0) {
    pthread_mutex_lock(&dl->mu);
    bool join = !dl->persistent || dl->init_st != WK_OK;
    while (!join && dl->busy > 0) pthread_cond_wait(&dl->cv_done, &dl->mu);
    pthread_mutex_unlock(&dl->mu);
    if (join) dt_workers_join(dl);
  }
  if (dl->stream_open && dl->ds->iter.close) dl->ds->iter.close(dl->ds->self, dl->stream);
  dl->stream_open = false;
  for (int i = 0; dl->slots && i < nslots(dl); i++) {
    wk_sample_clear(&dl->slots[i].batch);
    wk_free(dl->slots[i].msg);
    memset(&dl->slots[i], 0, sizeof dl->slots[i]);
  }
  wk_free(dl->order);
  dl->order = NULL;
  dl->state = DT_IDLE;
}

static wk_status start_iteration(wk_dataloader *dl) {
  if (dl->sampler) {
    dl->sampler->epoch = dl->epoch;
    dl->order = dt_sampler_order(dl->sampler, dl->epoch, &dl->norder);
    if (!dl->order) return wk_last_error();
    int64_t n = dt_dataset_len(dl->ds);
    for (int64_t i = 0; i < dl->norder; i++)
      if (dl->order[i] < 0 || dl->order[i] >= n) {
        wk_status st = wk_error(WK_ERR_INDEX,
                                "dataloader: the sampler gave index %lld (position %lld) for a dataset of "
                                "%lld samples",
                                (long long)dl->order[i], (long long)i, (long long)n);
        wk_free(dl->order);
        dl->order = NULL;
        return st;
      }
    dl->nbatches = dl->drop_last ? dl->norder / dl->bs : (dl->norder + dl->bs - 1) / dl->bs;
  } else {
    for (int w = 0; w < dl->nworkers; w++) dl->produced[w] = dl->taken[w] = 0, dl->ended[w] = false;
    dl->turn = 0;
  }
  if (dl->nworkers == 0) {
    dl->next_claim = dl->next_deliver = 0;
    dl->stop = dl->no_claim = false;
    if (!dl->sampler) {
      wk_worker_info info = {.struct_size = sizeof info,
                             .worker_id = 0,
                             .num_workers = 1,
                             .seed = wk_data_sample_seed(dl->seed, dl->epoch, 0),
                             .epoch = dl->epoch};
      dl->stream = NULL;
      wk_status st = dl->ds->iter.open(dl->ds->self, &info, &dl->stream);
      if (st != WK_OK) {
        char *m = dt_msg("dataloader: iterable dataset: open() failed: ",
                         *wk_last_error_message() ? wk_last_error_message() : "no message");
        wk_error_replace(st, "%s", m ? m : "dataloader: iterable dataset: open() failed");
        wk_free(m);
        return st;
      }
      dl->stream_open = true;
      dl->stream_ended = false;
    }
    dl->state = DT_RUNNING;
    return WK_OK;
  }
  pthread_mutex_lock(&dl->mu);
  dl->next_claim = dl->next_deliver = 0;
  dl->stop = dl->no_claim = false;
  dl->gen++;
  dl->running = true;
  pthread_cond_broadcast(&dl->cv_work);
  pthread_mutex_unlock(&dl->mu);
  dl->state = DT_RUNNING;
  wk_status st = dt_workers_start(dl);
  if (st != WK_OK) finish_stop(dl);
  return st;
}

/* Waits on cv_done until the deadline (NULL: forever); false on timeout. Holds mu. */
static bool wait_done(wk_dataloader *dl, const struct timespec *deadline) {
  if (!deadline) {
    pthread_cond_wait(&dl->cv_done, &dl->mu);
    return true;
  }
  return pthread_cond_timedwait(&dl->cv_done, &dl->mu, deadline) != ETIMEDOUT;
}

/* Takes the next batch from the workers into *r; *end at the end of an
 * iterable epoch. A timeout or a dead worker is reported in r. */
static void take_from_workers(wk_dataloader *dl, dt_slot *r, bool *end, bool *timed_out) {
  struct timespec dl_at, *deadline = NULL;
  if (dl->timeout > 0) {
    clock_gettime(CLOCK_MONOTONIC, &dl_at);
    double t = (double)dl_at.tv_sec + (double)dl_at.tv_nsec * 1e-9 + dl->timeout;
    dl_at.tv_sec = (time_t)t;
    dl_at.tv_nsec = (long)((t - (double)dl_at.tv_sec) * 1e9);
    deadline = &dl_at;
  }
  memset(r, 0, sizeof *r);
  *end = *timed_out = false;
  pthread_mutex_lock(&dl->mu);
  for (;;) {
    dt_slot *s = NULL;
    if (dl->sampler) {
      s = &dl->slots[dl->next_deliver % dl->queue];
      if (!s->ready) s = NULL;
    } else {
      int active = 0;
      for (int k = 0; k < dl->nworkers && !s; k++) {
        int w = (dl->turn + k) % dl->nworkers;
        if (dl->produced[w] > dl->taken[w]) {
          s = &dl->slots[w * dl->prefetch + dl->taken[w] % dl->prefetch];
          dl->taken[w]++;
          dl->turn = (w + 1) % dl->nworkers;
        } else if (!dl->ended[w]) {
          active++;
          break; /* this worker's turn: wait for it */
        }
      }
      if (!s && active == 0) {
        *end = true;
        break;
      }
    }
    if (s) {
      *r = *s;
      memset(s, 0, sizeof *s);
      dl->next_deliver++;
      pthread_cond_broadcast(&dl->cv_work);
      break;
    }
    if (dl->init_st != WK_OK) {
      r->st = dl->init_st;
      r->msg = dt_msg("", dl->init_msg ? dl->init_msg : "dataloader: worker_init_fn failed");
      break;
    }
    if (*timed_out) {
      r->st = WK_ERR_STATE;
      char m[200];
      snprintf(m, sizeof m,
               "dataloader: timed out after %g s waiting for batch %lld of epoch %lld from the workers "
               "(the timeout option)",
               dl->timeout, (long long)dl->next_deliver, (long long)dl->epoch);
      r->msg = dt_msg("", m);
      break;
    }
    *timed_out = !wait_done(dl, deadline);
  }
  pthread_mutex_unlock(&dl->mu);
}

/* Hands a batch to the caller: fresh handles made in the caller's thread, so
 * a scope open there owns them (views: pinned storage stays pinned). */
static wk_status deliver(wk_dataloader *dl, wk_sample *from, wk_sample *to) {
  (void)dl;
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
  if (dl->state == DT_STOPPING) { /* after a timeout: the workers are joined now */
    finish_stop(dl);
    dl->epoch++;
  }
  if (dl->state == DT_IDLE) {
    wk_status st = start_iteration(dl);
    if (st != WK_OK) return st;
  }
  dt_slot r;
  bool end = false, timed_out = false;
  if (dl->sampler && dl->next_deliver >= dl->nbatches) {
    end = true;
  } else if (dl->nworkers > 0) {
    take_from_workers(dl, &r, &end, &timed_out);
  } else if (dl->sampler) {
    dt_build_batch(dl, dl->next_deliver++, -1, &r);
  } else {
    end = dl->stream_ended;
    if (!end) dt_build_stream_batch(dl, dl->stream, -1, &r, &end);
    dl->stream_ended = end || r.st != WK_OK;
  }
  if (end) { /* the next call starts the next epoch */
    finish_stop(dl);
    dl->epoch++;
    return WK_OK;
  }
  if (r.st != WK_OK) {
    if (timed_out)
      request_stop(dl); /* joined at the next call: a stuck get() must not block us now */
    else {
      finish_stop(dl);
      dl->epoch++;
    }
    wk_error_replace(r.st, "%s", r.msg ? r.msg : "dataloader: a batch failed (out of memory for its message)");
    wk_free(r.msg);
    return r.st;
  }
  return deliver(dl, &r.batch, batch);
}

wk_status dt_loader_set_epoch(wk_dataloader *dl, int64_t epoch) {
  if (!dl) return wk_error(WK_ERR_NULL, "dataloader_set_epoch: argument 'dl' is NULL");
  finish_stop(dl);
  dl->epoch = epoch;
  if (dl->sampler) dl->sampler->epoch = epoch;
  return WK_OK;
}

void dt_loader_free(wk_dataloader *dl) {
  if (!dl) return;
  finish_stop(dl);
  if (dl->nthreads > 0) dt_workers_join(dl);
  wk_free(dl->threads);
  wk_free(dl->slots);
  wk_free(dl->produced);
  wk_free(dl->taken);
  wk_free(dl->ended);
  pthread_mutex_destroy(&dl->mu);
  pthread_cond_destroy(&dl->cv_work);
  pthread_cond_destroy(&dl->cv_done);
  dt_dataset_release(dl->ds);
  dt_sampler_release(dl->sampler);
  wk_free(dl);
}

static bool check_opts(const wk_loader_opts *o, bool iterable) {
  const char *bad = NULL;
  if (o->batch_size < 0 || o->num_workers < 0 || o->num_workers > 1024 || o->prefetch_factor < 0)
    return wk_error(WK_ERR_INVALID_ARG,
                    "dataloader_new: batch_size (%lld), num_workers (%d) and prefetch_factor (%d) "
                    "must be non-negative (num_workers at most 1024)",
                    (long long)o->batch_size, o->num_workers, o->prefetch_factor) == WK_OK;
  if (o->shuffle && o->sampler)
    bad = "sampler option is mutually exclusive with shuffle";
  else if (iterable && (o->shuffle || o->sampler))
    bad = "an iterable dataset is read in its own order: shuffle and sampler must be unset";
  else if (o->persistent_workers && o->num_workers == 0)
    bad = "persistent_workers option needs num_workers > 0";
  else if (!(o->timeout >= 0))
    bad = "timeout option should be non-negative";
  if (bad) wk_error(WK_ERR_INVALID_ARG, "dataloader_new: %s", bad);
  return !bad;
}

wk_dataloader *dt_loader_new(wk_dataset *ds, const wk_loader_opts *opts_in) {
  if (!ds) {
    wk_error(WK_ERR_NULL, "dataloader_new: argument 'ds' is NULL");
    return NULL;
  }
  wk_loader_opts o = {.struct_size = sizeof o};
  if (opts_in) {
    if (opts_in->struct_size < offsetof(wk_loader_opts, batch_size) + sizeof o.batch_size) {
      wk_error(WK_ERR_INVALID_ARG,
               "dataloader_new: opts->struct_size is %zu; set it to sizeof(wk_loader_opts) "
               "(WK_LOADER_OPTS does)",
               opts_in->struct_size);
      return NULL;
    }
    memcpy(&o, opts_in, opts_in->struct_size < sizeof o ? opts_in->struct_size : sizeof o);
  }
  bool iterable = ds->iterable;
  if (!check_opts(&o, iterable)) return NULL;
  int64_t n = iterable ? 0 : dt_dataset_len(ds);
  if (n < 0) {
    if (wk_last_error() == WK_OK) wk_error(WK_ERR_STATE, "dataloader_new: the dataset's len() is negative");
    return NULL;
  }
  wk_dataloader *dl = wk_calloc(1, sizeof *dl);
  if (!dl) {
    wk_error(WK_ERR_NO_MEMORY, "dataloader_new: out of memory");
    return NULL;
  }
  if (!iterable) {
    dl->sampler = o.sampler   ? dt_sampler_retain(o.sampler)
                  : o.shuffle ? dt_sampler_random(n, false, 0, o.seed)
                              : dt_sampler_sequential(n);
    if (!dl->sampler) {
      wk_free(dl);
      return NULL;
    }
  }
  dl->ds = dt_dataset_retain(ds);
  dl->bs = o.batch_size ? o.batch_size : 1;
  dl->drop_last = o.drop_last;
  dl->nworkers = o.num_workers;
  dl->prefetch = o.prefetch_factor ? o.prefetch_factor : 2;
  dl->queue = o.num_workers * dl->prefetch;
  dl->seed = o.seed;
  dl->collate = o.collate;
  dl->collate_user = o.collate_user;
  dl->persistent = o.persistent_workers;
  dl->pin_memory = o.pin_memory;
  atomic_init(&dl->pin_off, false);
  dl->timeout = o.timeout;
  dl->worker_init = o.worker_init_fn;
  dl->worker_init_user = o.worker_init_user;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_mutex_init(&dl->mu, NULL);
  pthread_cond_init(&dl->cv_work, NULL);
  pthread_cond_init(&dl->cv_done, &ca);
  pthread_condattr_destroy(&ca);
  if (dl->nworkers > 0) {
    dl->slots = wk_calloc((size_t)dl->nworkers * (size_t)dl->prefetch, sizeof *dl->slots);
    dl->produced = wk_calloc((size_t)dl->nworkers, sizeof *dl->produced);
    dl->taken = wk_calloc((size_t)dl->nworkers, sizeof *dl->taken);
    dl->ended = wk_calloc((size_t)dl->nworkers, sizeof *dl->ended);
    if (!dl->slots || !dl->produced || !dl->taken || !dl->ended) {
      dt_loader_free(dl);
      wk_error(WK_ERR_NO_MEMORY, "dataloader_new: out of memory");
      return NULL;
    }
  }
  return dl;
}
