/* Wick ABI: the profiler service — per-op CPU time like torch.profiler's
 * key_averages().table(): calls, self time (without the ops it called) and
 * total time, for every op that passes the dispatcher, forward and backward
 * (the layer sits below autograd, so the engine's backward ops count too).
 *
 * The profiler plugin provides it. Setting WICK_PROFILE in the environment
 * starts it at load and prints the table at wk_shutdown(): to stderr for
 * WICK_PROFILE=1, else to the file WICK_PROFILE names. Programs can also
 * start, stop and read it with the wrappers below. Times are wall-clock of
 * the calling thread (a kernel's own worker threads count in its op). */
#ifndef WICK_PROFILER_H
#define WICK_PROFILER_H

#include <stddef.h>
#include <stdint.h>
#include <wick/wick.h>

#define WK_PROFILER_SERVICE "profiler"
#define WK_PROFILER_API_VERSION 1

typedef enum wk_profiler_sort {
  WK_PROFILER_SORT_SELF = 0,  /* self time, largest first (the default) */
  WK_PROFILER_SORT_TOTAL = 1, /* total time */
  WK_PROFILER_SORT_CALLS = 2  /* number of calls */
} wk_profiler_sort;

typedef struct wk_profiler_api {
  size_t struct_size;
  /* Clears the counts and starts recording (every thread). */
  wk_status (*start)(void);
  /* Stops recording; the counts stay readable. */
  wk_status (*stop)(void);
  /* Clears the counts (recording or not). */
  void (*reset)(void);
  /* Writes the table (NUL-terminated, truncated to size) and returns its
   * full length, like snprintf. row_limit <= 0: every op that was called. */
  size_t (*table)(char *buf, size_t size, wk_profiler_sort sort, int row_limit);
  /* The counts of one op by name: calls, self and total microseconds.
   * WK_ERR_NOT_FOUND when the op was not called since the last reset. */
  wk_status (*op_stats)(const char *op, uint64_t *calls, double *self_us, double *total_us);
} wk_profiler_api;

static inline const wk_profiler_api *wk_profiler_api_get(void) {
  static const wk_profiler_api *api_cache; /* filled on first use, maybe by several threads at once */
  const wk_profiler_api *api = __atomic_load_n(&api_cache, __ATOMIC_ACQUIRE);
  if (!api) __atomic_store_n(&api_cache, api = (const wk_profiler_api *)wk_service_get(WK_PROFILER_SERVICE, WK_PROFILER_API_VERSION), __ATOMIC_RELEASE);
  return api;
}

static inline wk_status wk_profiler_start(void) {
  const wk_profiler_api *a = wk_profiler_api_get();
  return a ? a->start() : wk_last_error();
}
static inline wk_status wk_profiler_stop(void) {
  const wk_profiler_api *a = wk_profiler_api_get();
  return a ? a->stop() : wk_last_error();
}
static inline void wk_profiler_reset(void) {
  const wk_profiler_api *a = wk_profiler_api_get();
  if (a) a->reset();
}
static inline size_t wk_profiler_table(char *buf, size_t size, wk_profiler_sort sort, int row_limit) {
  const wk_profiler_api *a = wk_profiler_api_get();
  if (!a) {
    if (buf && size) buf[0] = '\0';
    return 0;
  }
  return a->table(buf, size, sort, row_limit);
}
static inline wk_status wk_profiler_op_stats(const char *op, uint64_t *calls, double *self_us, double *total_us) {
  const wk_profiler_api *a = wk_profiler_api_get();
  return a ? a->op_stats(op, calls, self_us, total_us) : wk_last_error();
}

#endif
