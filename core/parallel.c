/* The intra-op thread pool shared by every plugin: WICK_NUM_THREADS (else the
 * number of cores) threads including the caller. Nested parallel_for runs
 * inline, so kernels may call it freely.
 *
 * Workers and the submitter spin briefly (WK_POOL_SPIN_NS) before sleeping
 * on a condition variable: a training step runs hundreds of parallel ops
 * back to back, and a sleeping worker takes tens of microseconds to wake on
 * these machines (measured: a 512k-element relu_ was slower on 2 threads
 * than on 1).
 *
 * A plugin may install a parallel runtime (wk_set_parallel_runtime): jobs
 * then run on its threads (oneDNN's OpenMP team) and Wick's workers are not
 * started, so only one set of threads spins between ops, as in PyTorch. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

typedef struct {
  void (*fn)(void *, int64_t, int64_t);
  void *ctx;
  int64_t begin, end, chunk;
  int nchunks;
  atomic_int next;    /* next chunk to take */
  atomic_int pending; /* chunks not finished */
  int users;          /* workers inside run_chunks (guarded by g_lock) */
} job;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_work = PTHREAD_COND_INITIALIZER, g_done = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t g_submit = PTHREAD_MUTEX_INITIALIZER; /* one job at a time */
static pthread_t *g_threads;
static int g_nworkers = -1; /* -1: not started */
static int g_nthreads;
static job *g_job;
static atomic_uint_fast64_t g_gen; /* bumped under g_lock; read without it while spinning */
static bool g_stop;
static _Thread_local bool g_in_parallel;
static wk_parallel_runtime g_rt; /* .run NULL: Wick's own workers; changed under g_submit */

#define WK_POOL_SPIN_NS 50000 /* 50 us: about the cost of one sleep/wake round trip here */

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* Spins until *v differs from `was` or the spin time is up (the caller
 * checks again under the lock either way). */
static void spin_until_changed(atomic_uint_fast64_t *v, uint64_t was) {
  uint64_t t0 = mono_ns();
  for (unsigned i = 1; atomic_load_explicit(v, memory_order_acquire) == was; i++) {
    cpu_relax();
    if ((i & 63) == 0 && mono_ns() - t0 > WK_POOL_SPIN_NS) return;
  }
}

/* Spins until *v is 0 or the spin time is up. */
static void spin_until_zero(atomic_int *v) {
  uint64_t t0 = mono_ns();
  for (unsigned i = 1; atomic_load_explicit(v, memory_order_acquire) > 0; i++) {
    cpu_relax();
    if ((i & 63) == 0 && mono_ns() - t0 > WK_POOL_SPIN_NS) return;
  }
}

/* `signal`: wake the submitter when the last chunk ends (Wick's workers;
 * a runtime's run() returns only when every thread is done). */
static void run_chunks(job *j, bool signal) {
  bool was = g_in_parallel;
  g_in_parallel = true;
  for (;;) {
    int c = atomic_fetch_add(&j->next, 1);
    if (c >= j->nchunks) break;
    int64_t b = j->begin + (int64_t)c * j->chunk;
    int64_t e = b + j->chunk < j->end ? b + j->chunk : j->end;
    j->fn(j->ctx, b, e);
    if (atomic_fetch_sub(&j->pending, 1) == 1 && signal) {
      pthread_mutex_lock(&g_lock);
      pthread_cond_broadcast(&g_done);
      pthread_mutex_unlock(&g_lock);
    }
  }
  g_in_parallel = was;
}

static void *worker(void *arg) {
  (void)arg;
  uint64_t seen = 0;
  pthread_mutex_lock(&g_lock);
  for (;;) {
    if (!g_stop && (atomic_load(&g_gen) == seen || !g_job)) {
      pthread_mutex_unlock(&g_lock);
      spin_until_changed(&g_gen, seen);
      pthread_mutex_lock(&g_lock);
    }
    while (!g_stop && (atomic_load(&g_gen) == seen || !g_job)) pthread_cond_wait(&g_work, &g_lock);
    if (g_stop) break;
    seen = atomic_load(&g_gen);
    job *j = g_job;
    j->users++;
    pthread_mutex_unlock(&g_lock);
    run_chunks(j, true);
    pthread_mutex_lock(&g_lock);
    /* The job lives on the submitter's stack: it waits for users to drop. */
    if (--j->users == 0) pthread_cond_broadcast(&g_done);
  }
  pthread_mutex_unlock(&g_lock);
  return NULL;
}

static int default_threads(void) {
  const char *e = getenv("WICK_NUM_THREADS");
  if (e && atoi(e) > 0) return atoi(e);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

static void start(int n) {
  g_stop = false;
  g_nthreads = n;
  g_nworkers = 0;
  if (g_rt.run) return; /* the runtime's threads do the work */
  g_threads = wk_calloc((size_t)(n > 1 ? n - 1 : 1), sizeof *g_threads);
  for (int i = 0; g_threads && i < n - 1; i++)
    if (pthread_create(&g_threads[g_nworkers], NULL, worker, NULL) == 0) g_nworkers++;
  g_nthreads = g_nworkers + 1;
}

static void stop(void) {
  if (g_nworkers < 0) return;
  pthread_mutex_lock(&g_lock);
  g_stop = true;
  pthread_cond_broadcast(&g_work);
  pthread_mutex_unlock(&g_lock);
  for (int i = 0; i < g_nworkers; i++) pthread_join(g_threads[i], NULL);
  free(g_threads);
  g_threads = NULL;
  g_nworkers = -1;
}

static void ensure(void) {
  if (g_nworkers >= 0) return;
  pthread_mutex_lock(&g_submit);
  if (g_nworkers < 0) start(default_threads());
  pthread_mutex_unlock(&g_submit);
}

int wk_num_threads(void) {
  ensure();
  return g_nthreads;
}

wk_status wk_set_num_threads(int n) {
  if (n < 1) return wk_error(WK_ERR_INVALID_ARG, "set_num_threads: need at least 1 thread, got %d", n);
  if (g_in_parallel) return wk_error(WK_ERR_STATE, "set_num_threads: cannot resize the pool from inside parallel_for");
  pthread_mutex_lock(&g_submit);
  stop();
  start(n);
  pthread_mutex_unlock(&g_submit);
  return WK_OK;
}

bool wk_in_parallel(void) { return g_in_parallel; }

wk_status wk_set_parallel_runtime(const wk_parallel_runtime *rt) {
  wk_error_new_call();
  if (rt && rt->struct_size < sizeof *rt)
    return wk_error(WK_ERR_INVALID_ARG, "set_parallel_runtime: struct_size %zu is shorter than wk_parallel_runtime (%zu)",
                    rt->struct_size, sizeof *rt);
  if (rt && !rt->run)
    return wk_error(WK_ERR_INVALID_ARG, "set_parallel_runtime: runtime %s has no run function",
                    rt->name ? rt->name : "(unnamed)");
  if (g_in_parallel) return wk_error(WK_ERR_STATE, "set_parallel_runtime: cannot switch from inside parallel_for");
  pthread_mutex_lock(&g_submit);
  int n = g_nworkers >= 0 ? g_nthreads : default_threads();
  stop();
  if (rt) {
    g_rt = *rt;
    g_rt.struct_size = sizeof g_rt;
  } else {
    memset(&g_rt, 0, sizeof g_rt);
  }
  start(n);
  pthread_mutex_unlock(&g_submit);
  return WK_OK;
}

const char *wk_parallel_runtime_name(void) {
  return g_rt.run ? (g_rt.name ? g_rt.name : "plugin") : "wick";
}

static void team_body(void *ctx) { run_chunks(ctx, false); }

void wk_parallel_for(int64_t begin, int64_t end, int64_t grain, void (*fn)(void *, int64_t, int64_t), void *ctx) {
  if (!fn || end <= begin) return;
  if (grain < 1) grain = 1;
  int64_t n = end - begin;
  ensure();
  int nt = g_nthreads;
  if (g_in_parallel || nt <= 1 || n <= grain) {
    bool was = g_in_parallel;
    g_in_parallel = true;
    fn(ctx, begin, end);
    g_in_parallel = was;
    return;
  }
  int64_t chunks = (n + grain - 1) / grain;
  if (chunks > nt) chunks = nt;
  job j;
  j.fn = fn;
  j.ctx = ctx;
  j.begin = begin;
  j.end = end;
  j.chunk = (n + chunks - 1) / chunks;
  j.nchunks = (int)((n + j.chunk - 1) / j.chunk);
  atomic_init(&j.next, 0);
  atomic_init(&j.pending, j.nchunks);
  j.users = 0;
  /* Another thread's job in flight: run ours inline instead of waiting. */
  if (pthread_mutex_trylock(&g_submit) != 0) {
    bool was = g_in_parallel;
    g_in_parallel = true;
    fn(ctx, begin, end);
    g_in_parallel = was;
    return;
  }
  if (g_rt.run) {
    g_rt.run(j.nchunks, team_body, &j);
    if (atomic_load(&j.pending) > 0) run_chunks(&j, false); /* a runtime that ran no thread */
    pthread_mutex_unlock(&g_submit);
    return;
  }
  pthread_mutex_lock(&g_lock);
  g_job = &j;
  atomic_fetch_add(&g_gen, 1);
  pthread_cond_broadcast(&g_work);
  pthread_mutex_unlock(&g_lock);
  run_chunks(&j, true);
  spin_until_zero(&j.pending); /* the workers' chunks, usually done by now */
  pthread_mutex_lock(&g_lock);
  g_job = NULL; /* no new worker joins */
  while (atomic_load(&j.pending) > 0 || j.users > 0) pthread_cond_wait(&g_done, &g_lock);
  pthread_mutex_unlock(&g_lock);
  pthread_mutex_unlock(&g_submit);
}

void wk__pool_shutdown(void) {
  pthread_mutex_lock(&g_submit);
  stop();
  memset(&g_rt, 0, sizeof g_rt); /* a later wk_init starts Wick's pool; plugins install theirs again */
  pthread_mutex_unlock(&g_submit);
}
