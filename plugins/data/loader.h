/* data plugin: the DataLoader's state, shared by loader.c (options, the
 * caller's side, map-style batches) and loader_worker.c (worker threads,
 * iterable-style streams). */
#ifndef WICK_DATA_LOADER_H
#define WICK_DATA_LOADER_H
#include <pthread.h>

#include "data.h"

typedef struct {
  bool ready;
  wk_status st;
  char *msg; /* malloc'd message of a failed batch */
  wk_sample batch;
} dt_slot;

enum { DT_IDLE = 0, DT_RUNNING = 1, DT_STOPPING = 2 /* stop requested (after a timeout), not yet joined */ };

struct wk_dataloader {
  /* options */
  wk_dataset *ds;
  wk_sampler *sampler; /* NULL for an iterable dataset */
  int64_t bs;
  bool drop_last, persistent, pin_memory;
  atomic_bool pin_off; /* set once wk_pin_memory said no plugin offers pinned memory */
  int nworkers, prefetch, queue;
  double timeout;
  uint64_t seed;
  wk_status (*collate)(void *user, const wk_sample *samples, int64_t n, wk_sample *out);
  void *collate_user;
  wk_status (*worker_init)(int worker_id, void *user);
  void *worker_init_user;
  int64_t epoch;
  int state;
  /* the current iteration, map-style: batch b is order[b * bs ...] */
  int64_t *order, norder, nbatches, next_claim, next_deliver;
  /* iterable-style: worker w fills ring slots[w * prefetch ...]; the caller
   * takes batches from the active workers in turn */
  int64_t *produced, *taken;
  bool *ended;
  int turn;
  void *stream; /* the caller's own stream when num_workers is 0 */
  bool stream_open, stream_ended;
  /* shared with the workers, under mu */
  bool stop, no_claim, running, shutdown;
  uint64_t gen; /* iteration number: persistent workers join each new one */
  int busy;     /* workers inside the current iteration */
  int started;  /* workers past worker_init_fn (successful or not) */
  wk_status init_st;
  char *init_msg;
  dt_slot *slots;
  pthread_t *threads;
  int nthreads;
  pthread_mutex_t mu;
  pthread_cond_t cv_work, cv_done; /* cv_done waits on CLOCK_MONOTONIC (timeouts) */
};

/* Builds map-style batch b into *r (status, message, batch); thread-safe. */
void dt_build_batch(wk_dataloader *dl, int64_t b, int worker, dt_slot *r);
/* Builds the next batch of an iterable stream into *r; *end is set when the
 * stream ended before any sample (or with a partial batch under drop_last). */
void dt_build_stream_batch(wk_dataloader *dl, void *stream, int worker, dt_slot *r, bool *end);
/* A malloc'd "prefix: message" (NULL when out of memory). */
char *dt_msg(const char *prefix, const char *m);
/* Starts the worker threads (not yet started ones only); error when none could start. */
wk_status dt_workers_start(wk_dataloader *dl);
/* Joins every worker thread (after shutdown was set). */
void dt_workers_join(wk_dataloader *dl);

#endif
