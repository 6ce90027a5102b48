/* Wick ABI: process-wide runtime: start-up and shut-down, the intra-op
 * thread pool shared by every plugin, and the counter-based RNG. */
#ifndef WICK_RUNTIME_H
#define WICK_RUNTIME_H

#include <wick/types.h>

/* Starts Wick: registers the cpu device and the standard op set, then finds and
 * loads plugins (WICK_PLUGIN_PATH, the installed plugin directory, the build
 * tree). Safe to call more than once. A plugin that fails is listed with its
 * reason and does not make wk_init fail. */
WK_API wk_status wk_init(void);
/* Calls plugins' shutdown hooks and stops the thread pool. Tensors must have
 * been released before. */
WK_API void wk_shutdown(void);

/* ---- Threads ---------------------------------------------------------------------- */
/* Number of threads of the intra-op pool (WICK_NUM_THREADS, else the cores). */
WK_API int wk_num_threads(void);
/* Resizes the pool (n >= 1). */
WK_API wk_status wk_set_num_threads(int n);
/* Splits [begin, end) into chunks of at least `grain` and runs fn(ctx, b, e) on
 * the pool; returns when all chunks ran. Nested calls run inline. */
WK_API void wk_parallel_for(int64_t begin, int64_t end, int64_t grain,
                            void (*fn)(void *ctx, int64_t b, int64_t e), void *ctx);
/* True while the calling thread runs inside a wk_parallel_for chunk. */
WK_API bool wk_in_parallel(void);

/* ABI 1.4. The threads wk_parallel_for runs on, when a plugin supplies them.
 * A backend that brings its own thread team (oneDNN's OpenMP) installs it
 * here, so Wick's kernels and the backend's primitives share one set of
 * threads instead of two pools waking and spinning against each other.
 * `run` must call body(ctx) once on each of up to `nthreads` threads (the
 * caller being one of them) and return when every call has returned; fewer
 * threads than asked is fine (the work is shared out dynamically). */
typedef struct wk_parallel_runtime {
  size_t struct_size; /* sizeof(wk_parallel_runtime) */
  const char *name;   /* static; shown by wk_parallel_runtime_name */
  void (*run)(int nthreads, void (*body)(void *ctx), void *ctx);
} wk_parallel_runtime;
/* Installs `rt` (copied), or with NULL goes back to Wick's own pool. Fails
 * with WK_ERR_STATE from inside parallel_for and WK_ERR_INVALID_ARG for a
 * runtime without `run`. The pool size (wk_set_num_threads) still applies. */
WK_API wk_status wk_set_parallel_runtime(const wk_parallel_runtime *rt);
/* "wick" for Wick's own pool, else the installed runtime's name. */
WK_API const char *wk_parallel_runtime_name(void);

/* ---- Random numbers (Philox 4x32-10, counter based) ---------------------------- */
/* Seeds the generator of every device. */
WK_API void wk_manual_seed(uint64_t seed);
/* Reserves `n` counter values of the generator of `dev` for a kernel: the
 * kernel draws element i's numbers from Philox(key = *seed, counter =
 * *offset + i), so results do not depend on thread count. */
WK_API wk_status wk_rng_reserve(wk_device dev, uint64_t n, uint64_t *seed,
                                uint64_t *offset);
/* Reads / restores a device generator's (seed, offset), for checkpoints. */
WK_API wk_status wk_rng_get_state(wk_device dev, uint64_t *seed, uint64_t *offset);
WK_API wk_status wk_rng_set_state(wk_device dev, uint64_t seed, uint64_t offset);

#endif
