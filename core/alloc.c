/* The allocator hook. Every allocation the core makes goes through wk_malloc,
 * wk_calloc, wk_realloc or wk__aligned_alloc; plugins reach the same hook
 * through the host table (ABI 1.3). Memory from any of them is freed with
 * free() in the core and wk_free() outside it.
 *
 * Fault injection: WICK_FAIL_ALLOC=N makes the Nth counted allocation of the
 * process return NULL, as an exhausted malloc would (one failure; the ones
 * after it succeed again). WICK_FAIL_ALLOC_REPORT=1 prints at exit how many
 * allocations were counted and whether the Nth was reached (=2 also prints
 * the failing allocation's call stack), which is how
 * tests/fault_sweep.sh knows when to stop. With WICK_FAIL_ALLOC_AFTER_INIT=1
 * the count starts when wk_init has finished (the thousands of allocations
 * of declaring ops and loading plugins are swept separately), so N numbers
 * the allocations of the program's own calls. A forked child (Check's test
 * processes) counts on from its parent's count. The per-thread caches of
 * small blocks and tensor handles (tensor.c) hand out recycled memory
 * without calling the hook: only their misses are injection points. */
#include <execinfo.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

static long g_fail_at; /* 0: off (read once, at load) */
static bool g_report, g_report_bt, g_after_init;
static atomic_long g_count;
static atomic_bool g_failed, g_armed; /* armed: counting (from load, or from the end of wk_init) */

__attribute__((constructor)) static void alloc_env(void) {
  const char *e = getenv("WICK_FAIL_ALLOC");
  if (e && *e) {
    char *end;
    long n = strtol(e, &end, 10);
    if (*end == 0 && n > 0) g_fail_at = n;
  }
  e = getenv("WICK_FAIL_ALLOC_REPORT");
  g_report = e && *e && *e != '0';
  g_report_bt = e && *e == '2';
  e = getenv("WICK_FAIL_ALLOC_AFTER_INIT");
  g_after_init = e && *e && *e != '0';
  atomic_store(&g_armed, !g_after_init);
}

void wk__alloc_init_done(void) {
  if (g_after_init && !atomic_load(&g_armed)) {
    atomic_store(&g_count, 0);
    atomic_store(&g_armed, true);
  }
}

__attribute__((destructor)) static void alloc_report(void) {
  if (!g_report) return;
  fprintf(stderr, "wick: WICK_FAIL_ALLOC=%ld: %ld allocations counted, the failing one %s\n", g_fail_at,
          (long)atomic_load(&g_count), atomic_load(&g_failed) ? "was reached" : "was not reached");
}

/* True when this allocation is the one to fail. */
static inline bool inject(void) {
  if (__builtin_expect(g_fail_at == 0 && !g_report, 1)) return false;
  if (!atomic_load_explicit(&g_armed, memory_order_relaxed)) return false;
  long k = atomic_fetch_add_explicit(&g_count, 1, memory_order_relaxed) + 1;
  if (k != g_fail_at) return false;
  atomic_store(&g_failed, true);
  if (g_report) { /* now: a process that ends in _exit or a signal runs no destructor */
    fprintf(stderr, "wick: WICK_FAIL_ALLOC=%ld: the failure was injected\n", g_fail_at);
    if (g_report_bt) { /* WICK_FAIL_ALLOC_REPORT=2: where (addresses; symbolize with addr2line) */
      void *bt[24];
      backtrace_symbols_fd(bt, backtrace(bt, 24), 2);
    }
  }
  return true;
}

void *wk_malloc(size_t n) { return inject() ? NULL : malloc(n); }
void *wk_calloc(size_t n, size_t size) { return inject() ? NULL : calloc(n, size); }
void *wk_realloc(void *p, size_t n) { return inject() ? NULL : realloc(p, n); }
void *wk__aligned_alloc(size_t align, size_t n) { return inject() ? NULL : aligned_alloc(align, n); }
