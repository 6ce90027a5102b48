/* profiler plugin: a dispatch layer at WK_LEVEL_PROFILE that times every op
 * call and the "profiler" service that reads the counts (abi/wick/profiler.h).
 *
 * Counts live in a fixed open-addressed table keyed by the op handle (ops
 * live as long as the process) and are updated with atomics, so threads never
 * take a lock on the hot path. Self time subtracts the time of the ops an op
 * called on the same thread (a composite's parts, a kernel's casts), kept on a
 * small thread-local stack. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wick/sdk.h> /* first: it routes the wk_* calls of the headers below */
#include <wick/profiler.h>

#define PROF_SLOTS 4096 /* power of two, well above the number of ops */
#define PROF_DEPTH 64

typedef struct {
  wk_op *op; /* NULL: free slot */
  uint64_t calls, total_ns, self_ns;
} prof_slot;

static prof_slot g_slots[PROF_SLOTS];
static wk_layer *g_layer;
static bool g_dropped; /* a slot could not be found: the table says so */

static __thread uint64_t t_child[PROF_DEPTH];
static __thread int t_depth;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static prof_slot *slot_of(wk_op *op) {
  uintptr_t h = ((uintptr_t)op >> 4) * 0x9E3779B97F4A7C15ull;
  for (unsigned i = 0; i < PROF_SLOTS; i++) {
    prof_slot *s = &g_slots[(h + i) & (PROF_SLOTS - 1)];
    wk_op *cur = __atomic_load_n(&s->op, __ATOMIC_ACQUIRE);
    if (cur == op) return s;
    if (!cur) {
      wk_op *expected = NULL;
      if (__atomic_compare_exchange_n(&s->op, &expected, op, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) ||
          expected == op)
        return s;
    }
  }
  return NULL;
}

static wk_status layer_fn(wk_layer *self, void *user, wk_op *op, const wk_value *args, wk_value *outs) {
  (void)user;
  int d = t_depth;
  if (d < PROF_DEPTH) t_child[d] = 0;
  t_depth = d + 1;
  uint64_t t0 = now_ns();
  wk_status s = wk_layer_redispatch(self, op, args, outs);
  uint64_t dt = now_ns() - t0;
  t_depth = d;
  uint64_t child = d < PROF_DEPTH ? t_child[d] : 0;
  if (d > 0 && d - 1 < PROF_DEPTH) t_child[d - 1] += dt;
  prof_slot *p = slot_of(op);
  if (p) {
    __atomic_fetch_add(&p->calls, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&p->total_ns, dt, __ATOMIC_RELAXED);
    __atomic_fetch_add(&p->self_ns, dt > child ? dt - child : 0, __ATOMIC_RELAXED);
  } else {
    g_dropped = true;
  }
  return s;
}

static void prof_reset(void) {
  for (int i = 0; i < PROF_SLOTS; i++) {
    __atomic_store_n(&g_slots[i].calls, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&g_slots[i].total_ns, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&g_slots[i].self_ns, 0, __ATOMIC_RELAXED);
  }
  g_dropped = false;
}

static wk_status prof_start(void) {
  if (!g_layer) return wk_error(WK_ERR_STATE, "profiler: its dispatch layer is not registered");
  prof_reset();
  wk_layer_set_enabled(g_layer, true);
  return WK_OK;
}

static wk_status prof_stop(void) {
  if (!g_layer) return wk_error(WK_ERR_STATE, "profiler: its dispatch layer is not registered");
  wk_layer_set_enabled(g_layer, false);
  return WK_OK;
}

typedef struct {
  const char *name;
  uint64_t calls, total_ns, self_ns;
  uint64_t key; /* what the table is sorted by, largest first */
} prof_row;

static int row_cmp(const void *a, const void *b) {
  const prof_row *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? 1 : -1;
  return strcmp(x->name, y->name);
}

/* Appends to (buf, size) at *len like snprintf, counting what did not fit. */
#define APPEND(...)                                                                               \
  do {                                                                                            \
    int n_ = snprintf(buf && *len < size ? buf + *len : NULL, buf && *len < size ? size - *len : 0, \
                      __VA_ARGS__);                                                               \
    if (n_ > 0) *len += (size_t)n_;                                                               \
  } while (0)

static void fmt_time(char *out, size_t n, uint64_t ns) {
  if (ns >= 1000000000u)
    snprintf(out, n, "%.3fs", ns / 1e9);
  else if (ns >= 1000000u)
    snprintf(out, n, "%.3fms", ns / 1e6);
  else
    snprintf(out, n, "%.3fus", ns / 1e3);
}

static size_t prof_table(char *buf, size_t size, wk_profiler_sort sort, int row_limit) {
  prof_row *rows = wk_malloc(sizeof(prof_row) * PROF_SLOTS);
  size_t len0 = 0, *len = &len0;
  if (buf && size) buf[0] = '\0';
  if (!rows) {
    APPEND("profiler: out of memory for the table\n");
    return *len;
  }
  int n = 0;
  uint64_t self_sum = 0;
  for (int i = 0; i < PROF_SLOTS; i++) {
    wk_op *op = __atomic_load_n(&g_slots[i].op, __ATOMIC_ACQUIRE);
    uint64_t calls = __atomic_load_n(&g_slots[i].calls, __ATOMIC_RELAXED);
    if (!op || !calls) continue;
    rows[n] = (prof_row){wk_op_name(op), calls, __atomic_load_n(&g_slots[i].total_ns, __ATOMIC_RELAXED),
                         __atomic_load_n(&g_slots[i].self_ns, __ATOMIC_RELAXED), 0};
    rows[n].key = sort == WK_PROFILER_SORT_TOTAL ? rows[n].total_ns
                  : sort == WK_PROFILER_SORT_CALLS ? rows[n].calls
                                                   : rows[n].self_ns;
    self_sum += rows[n].self_ns;
    n++;
  }
  qsort(rows, (size_t)n, sizeof *rows, row_cmp);
  int w = 4;
  for (int i = 0; i < n; i++)
    if ((int)strlen(rows[i].name) > w) w = (int)strlen(rows[i].name);
  const char *rule = "-------------------------------------------------------------------------------------------";
  APPEND("%-*s  %10s  %12s  %11s  %12s  %12s  %10s\n", w, "Name", "Self CPU %", "Self CPU", "CPU total %",
         "CPU total", "CPU time avg", "# of Calls");
  APPEND("%.*s\n", w + 86 < 91 ? w + 86 : 91, rule);
  for (int i = 0; i < n && (row_limit <= 0 || i < row_limit); i++) {
    char self[32], total[32], avg[32];
    fmt_time(self, sizeof self, rows[i].self_ns);
    fmt_time(total, sizeof total, rows[i].total_ns);
    fmt_time(avg, sizeof avg, rows[i].total_ns / rows[i].calls);
    double denom = self_sum ? (double)self_sum : 1.0;
    APPEND("%-*s  %9.2f%%  %12s  %10.2f%%  %12s  %12s  %10llu\n", w, rows[i].name, 100.0 * rows[i].self_ns / denom,
           self, 100.0 * rows[i].total_ns / denom, total, avg, (unsigned long long)rows[i].calls);
  }
  char sum[32];
  fmt_time(sum, sizeof sum, self_sum);
  APPEND("Self CPU time total: %s\n", sum);
  if (g_dropped) APPEND("(some ops were not counted: the profiler's table of %d ops is full)\n", PROF_SLOTS);
  wk_free(rows);
  return *len;
}

static wk_status prof_op_stats(const char *name, uint64_t *calls, double *self_us, double *total_us) {
  if (!name) return wk_error(WK_ERR_INVALID_ARG, "profiler op_stats(): the op name is NULL");
  for (int i = 0; i < PROF_SLOTS; i++) {
    wk_op *op = __atomic_load_n(&g_slots[i].op, __ATOMIC_ACQUIRE);
    if (!op || strcmp(wk_op_name(op), name) != 0) continue;
    uint64_t c = __atomic_load_n(&g_slots[i].calls, __ATOMIC_RELAXED);
    if (!c) break;
    if (calls) *calls = c;
    if (self_us) *self_us = __atomic_load_n(&g_slots[i].self_ns, __ATOMIC_RELAXED) / 1e3;
    if (total_us) *total_us = __atomic_load_n(&g_slots[i].total_ns, __ATOMIC_RELAXED) / 1e3;
    return WK_OK;
  }
  return wk_error(WK_ERR_NOT_FOUND, "profiler: op '%s' was not called since the profiler started", name);
}

static const wk_profiler_api g_api = {
    .struct_size = sizeof(wk_profiler_api),
    .start = prof_start,
    .stop = prof_stop,
    .reset = prof_reset,
    .table = prof_table,
    .op_stats = prof_op_stats,
};

static bool g_from_env;

static wk_status init(void) {
  const char *env = getenv("WICK_PROFILE");
  g_from_env = env && *env && strcmp(env, "0") != 0;
  g_layer = wk_layer_register("profile", WK_LEVEL_PROFILE, layer_fn, NULL, g_from_env);
  if (!g_layer) return wk_last_error();
  return wk_service_register(WK_PROFILER_SERVICE, WK_PROFILER_API_VERSION, &g_api);
}

/* WICK_PROFILE's table, printed when the process shuts Wick down. */
static void shutdown_(void) {
  if (!g_from_env || !g_layer) return;
  wk_layer_set_enabled(g_layer, false);
  const char *env = getenv("WICK_PROFILE");
  size_t n = prof_table(NULL, 0, WK_PROFILER_SORT_SELF, 0);
  char *buf = wk_malloc(n + 1);
  if (!buf) return;
  prof_table(buf, n + 1, WK_PROFILER_SORT_SELF, 0);
  FILE *f = strcmp(env, "1") == 0 ? stderr : fopen(env, "w");
  if (!f) {
    fprintf(stderr, "wick profiler: cannot write WICK_PROFILE=%s; the table follows\n", env);
    f = stderr;
  }
  fputs(buf, f);
  if (f != stderr) fclose(f);
  wk_free(buf);
}

WK_PLUGIN_DEFINE("profiler", "0.1.0", "per-op CPU time of every dispatched op (service \"profiler\", WICK_PROFILE=1)",
                 init, shutdown_)
