/* Wick ABI: distributed training — torch.distributed and DistributedDataParallel in C.
 *
 * Process groups and collectives come from a communication backend plugin
 * that registers the service "dist.<backend>" (plugins/dist-mpi: "dist.mpi",
 * Open MPI, cpu tensors; plugins/dist-nccl: "dist.nccl", NCCL, cuda tensors,
 * chosen with opts.backend = "nccl" or WICK_DIST_BACKEND=nccl). The world is
 * read from the environment, with
 * torchrun's contract (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
 * MASTER_ADDR, MASTER_PORT) or Open MPI's (OMPI_COMM_WORLD_RANK/_SIZE/
 * _LOCAL_RANK/_LOCAL_SIZE), so one program runs unchanged under
 * `wick launch --nproc-per-node N`, under `mpirun -np N`, and alone (a world
 * of one). On several nodes, one `wick launch --nnodes M --node-rank K ...`
 * per node: dist.mpi joins the nodes' mpirun jobs into one world with Open
 * MPI's connect/accept (WICK_DIST_NNODES / _NODE_RANK / _RDZV, set by the
 * launcher), RANK = K * N + LOCAL_RANK.
 *
 *   wk_dist_group *world = wk_dist_init(NULL);              // the world group (borrowed)
 *   wk_dist_all_reduce(world, t, WK_REDUCE_AVG);            // in place, every rank
 *   wk_dist_work *w = wk_dist_all_reduce_async(world, g, WK_REDUCE_SUM);
 *   ... compute ...
 *   wk_dist_wait(w, 0);                                      // 0: the group's timeout
 *   wk_dist_work_free(w);
 *
 * Every collective returns a work handle at once; the backend runs it on its
 * own progress thread, so it overlaps with compute. Collectives must be
 * called in the same order on every rank of the group, as in PyTorch; a
 * backend may run them one at a time in that order (dist.mpi does, like
 * NCCL's one stream per group), so a collective not yet joined by every rank
 * delays this rank's later operations. Every
 * wait has a timeout (the group's, by default $WICK_DIST_TIMEOUT seconds or
 * 300): a dead or stuck peer gives WK_ERR_STATE with a message naming the
 * operation and, where the backend can tell, the peer's rank — never a hang.
 * Tensors must be contiguous (PyTorch's rule too) and on a device the backend
 * takes (the cpu for dist.mpi). Ranks given to calls (src, dst, peers) are
 * ranks within the group.
 *
 * DDP (the "ddp" service, plugins/ddp) wraps a module: parameters and buffers
 * are broadcast from rank 0, gradients are averaged in ~25 MB buckets while
 * backward still runs (post-accumulate-grad hooks), in the reverse order of
 * registration as PyTorch does. See wk_ddp_wrap below. */
#ifndef WICK_DIST_H
#define WICK_DIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wick/wick.h>

#define WK_DIST_SERVICE_PREFIX "dist." /* a backend's service: "dist.mpi" */
#define WK_DIST_API_VERSION 1
#define WK_DIST_DEFAULT_BACKEND "mpi"
#define WK_DIST_DEFAULT_TIMEOUT_S 300.0

/* Reduction operations. Numbers are never reused. AVG is SUM divided by the
 * group size (floating dtypes only, like NCCL's and PyTorch's ReduceOp.AVG). */
typedef enum wk_reduce_op {
  WK_REDUCE_SUM = 0,
  WK_REDUCE_AVG = 1,
  WK_REDUCE_MAX = 2,
  WK_REDUCE_MIN = 3,
  WK_REDUCE_PRODUCT = 4
} wk_reduce_op;

struct wk_dist_api;

/* A process group. Public part: the backend's interface, so calls on the
 * handle reach the backend that made it (ggml's {iface, context}); the rest
 * is the backend's. */
typedef struct wk_dist_group {
  const struct wk_dist_api *api; /* read-only */
} wk_dist_group;

/* An operation in flight (PyTorch's Work). Same layout rule as groups. */
typedef struct wk_dist_work {
  const struct wk_dist_api *api; /* read-only */
} wk_dist_work;

typedef struct wk_dist_init_opts {
  size_t struct_size;
  /* Backend name: its service is "dist.<backend>". Default: $WICK_DIST_BACKEND, else "mpi". */
  const char *backend;
  /* Default timeout of every wait on this world and its sub-groups, in
   * seconds. Default (0): $WICK_DIST_TIMEOUT, else 300. */
  double timeout_s;
} wk_dist_init_opts;

/* The interface a backend registers as "dist.<backend>". Append-only. */
typedef struct wk_dist_api {
  size_t struct_size;
  const char *backend; /* "mpi", static */
  /* Joins the world described by the environment (once per process: later
   * calls return the same group). Returns the world group, borrowed (it lives
   * until wk_shutdown), or NULL with an error (inconsistent environment,
   * backend start-up failure). */
  wk_dist_group *(*init)(const wk_dist_init_opts *opts);
  /* The world group (borrowed) after init, else NULL without an error. */
  wk_dist_group *(*world)(void);
  /* torch.distributed.new_group(ranks): collective over `parent` (every rank
   * of parent calls it, with the same ranks, in the same order as other
   * collectives). ranks: parent ranks, distinct, any order; the new group's
   * ranks follow their order in parent. Returns a new group (free it with
   * group_free) — on ranks outside `ranks` too: there, rank() is -1 and
   * collectives fail with WK_ERR_STATE. */
  wk_dist_group *(*new_group)(wk_dist_group *parent, const int *ranks, int n);
  /* Frees a group from new_group (waits for nothing: free it after its
   * work). The world and NULL are ignored. */
  void (*group_free)(wk_dist_group *g);
  /* This process's rank in g (-1 when not a member, or g NULL) and g's size (0 for NULL). */
  int (*rank)(const wk_dist_group *g);
  int (*size)(const wk_dist_group *g);
  /* The default wait timeout of g in seconds. */
  double (*timeout)(const wk_dist_group *g);
  /* Collectives. Each starts the operation and returns a new work handle (NULL
   * with an error for bad arguments). Tensors are retained until the work is
   * freed; do not touch them before the work completes.
   *   all_reduce: t reduced in place across the group.
   *   broadcast: t from group rank src to every rank, in place.
   *   all_gather: out (numel = size * in.numel, same dtype) gets every rank's
   *     `in`, in rank order (all_gather_into_tensor).
   *   reduce_scatter: in (numel = size * out.numel) reduced across the group;
   *     rank r gets block r in out (reduce_scatter_tensor).
   *   barrier: completes when every rank has entered it.
   *   send / recv: point to point with a tag >= 0; recv's t receives. */
  wk_dist_work *(*all_reduce)(wk_dist_group *g, wk_tensor *t, wk_reduce_op op);
  wk_dist_work *(*broadcast)(wk_dist_group *g, wk_tensor *t, int src);
  wk_dist_work *(*all_gather)(wk_dist_group *g, wk_tensor *out, wk_tensor *in);
  wk_dist_work *(*reduce_scatter)(wk_dist_group *g, wk_tensor *out, wk_tensor *in, wk_reduce_op op);
  wk_dist_work *(*barrier)(wk_dist_group *g);
  wk_dist_work *(*send)(wk_dist_group *g, wk_tensor *t, int dst, int tag);
  wk_dist_work *(*recv)(wk_dist_group *g, wk_tensor *t, int src, int tag);
  /* Waits for w at most timeout_s seconds (<= 0: the group's timeout).
   * WK_OK when it completed; its error when it failed; WK_ERR_STATE with
   * "... timed out after N s ..." (naming a dead or stopped peer where one is
   * seen) when it did not complete. The work may still complete later (wait
   * again); one still running at wk_shutdown makes the backend skip its
   * orderly shutdown, so the launcher stops the job instead of hanging. */
  wk_status (*wait)(wk_dist_work *w, double timeout_s);
  /* Whether w completed (successfully or not), without blocking. */
  bool (*test)(wk_dist_work *w);
  /* Frees a work handle (NULL does nothing). A work still running is waited
   * for (the group's timeout) first. */
  void (*work_free)(wk_dist_work *w);
  /* Seconds w spent in the backend between start and completion (0 while
   * running): the profile of a collective. */
  double (*work_seconds)(const wk_dist_work *w);
} wk_dist_api;

/* ---- the environment ---------------------------------------------------------------- */
/* What the launcher said about this process. */
typedef struct wk_dist_env {
  int rank, world_size, local_rank, local_world_size;
  const char *master_addr; /* NULL when unset */
  int master_port;         /* 0 when unset */
  bool launched;           /* RANK/WORLD_SIZE or OMPI_COMM_WORLD_* were set */
} wk_dist_env;

static inline int wk__dist_env_int(const char *a, const char *b, int dflt) {
  const char *v = getenv(a);
  if (!v || !*v) v = b ? getenv(b) : NULL;
  return v && *v ? atoi(v) : dflt;
}
/* Reads torchrun's variables, falling back on Open MPI's: a process started
 * by neither is rank 0 of a world of 1 (launched false). */
static inline wk_dist_env wk_dist_env_read(void) {
  wk_dist_env e;
  e.rank = wk__dist_env_int("RANK", "OMPI_COMM_WORLD_RANK", 0);
  e.world_size = wk__dist_env_int("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", 1);
  e.local_rank = wk__dist_env_int("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", e.rank);
  e.local_world_size = wk__dist_env_int("LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", e.world_size);
  e.master_addr = getenv("MASTER_ADDR");
  e.master_port = wk__dist_env_int("MASTER_PORT", NULL, 0);
  e.launched = getenv("WORLD_SIZE") || getenv("OMPI_COMM_WORLD_SIZE");
  return e;
}

/* ---- typed wrappers ------------------------------------------------------------------- */
/* The backend's interface ("dist.<backend>"), or NULL with WK_ERR_NOT_FOUND
 * naming the service and the plugin search path. backend NULL: the default. */
static inline const wk_dist_api *wk_dist_backend(const char *backend) {
  char name[64];
  if (!backend || !*backend) backend = getenv("WICK_DIST_BACKEND");
  if (!backend || !*backend) backend = WK_DIST_DEFAULT_BACKEND;
  snprintf(name, sizeof name, WK_DIST_SERVICE_PREFIX "%s", backend);
  return (const wk_dist_api *)wk_service_get(name, WK_DIST_API_VERSION);
}
/* torch.distributed.init_process_group: returns the world group (borrowed). opts may be NULL. */
static inline wk_dist_group *wk_dist_init(const wk_dist_init_opts *opts) {
  wk_error_new_call();
  const wk_dist_api *a = wk_dist_backend(
      opts && opts->struct_size >= offsetof(wk_dist_init_opts, backend) + sizeof(char *) ? opts->backend : NULL);
  return a ? a->init(opts) : NULL;
}
/* Each call starts a top-level call for error scoping (error.h): a NULL group
 * revives the error of the call that failed to make it. */
#define WK__DIST_G(g, what, fail)                              \
  wk_error_new_call();                                         \
  if (!(g)) {                                                  \
    wk_error(WK_ERR_NULL, "dist %s: the group is NULL", what); \
    return fail;                                               \
  }
static inline int wk_dist_rank(const wk_dist_group *g) {
  return g ? g->api->rank(g) : -1;
}
static inline int wk_dist_size(const wk_dist_group *g) {
  return g ? g->api->size(g) : 0;
}
static inline wk_dist_group *wk_dist_new_group(wk_dist_group *parent, const int *ranks, int n) {
  WK__DIST_G(parent, "new_group", NULL);
  return parent->api->new_group(parent, ranks, n);
}
static inline void wk_dist_group_free(wk_dist_group *g) {
  if (g) g->api->group_free(g);
}
static inline wk_status wk_dist_wait(wk_dist_work *w, double timeout_s) {
  wk_error_new_call();
  if (!w) return wk_error(WK_ERR_NULL, "dist wait: the work is NULL");
  return w->api->wait(w, timeout_s);
}
static inline bool wk_dist_test(wk_dist_work *w) {
  return w ? w->api->test(w) : true;
}
static inline void wk_dist_work_free(wk_dist_work *w) {
  if (w) w->api->work_free(w);
}
/* Waits with the group's timeout, frees w, returns the status. */
static inline wk_status wk__dist_finish(wk_dist_work *w) {
  if (!w) return wk_last_error(); /* the start failed in this call */
  wk_status s = w->api->wait(w, 0);
  w->api->work_free(w);
  return s;
}
/* Asynchronous forms (async_op=True): new work handles. */
static inline wk_dist_work *wk_dist_all_reduce_async(wk_dist_group *g, wk_tensor *t, wk_reduce_op op) {
  WK__DIST_G(g, "all_reduce", NULL);
  return g->api->all_reduce(g, t, op);
}
static inline wk_dist_work *wk_dist_broadcast_async(wk_dist_group *g, wk_tensor *t, int src) {
  WK__DIST_G(g, "broadcast", NULL);
  return g->api->broadcast(g, t, src);
}
static inline wk_dist_work *wk_dist_all_gather_async(wk_dist_group *g, wk_tensor *out, wk_tensor *in) {
  WK__DIST_G(g, "all_gather", NULL);
  return g->api->all_gather(g, out, in);
}
static inline wk_dist_work *wk_dist_reduce_scatter_async(wk_dist_group *g, wk_tensor *out, wk_tensor *in,
                                                         wk_reduce_op op) {
  WK__DIST_G(g, "reduce_scatter", NULL);
  return g->api->reduce_scatter(g, out, in, op);
}
static inline wk_dist_work *wk_dist_barrier_async(wk_dist_group *g) {
  WK__DIST_G(g, "barrier", NULL);
  return g->api->barrier(g);
}
static inline wk_dist_work *wk_dist_isend(wk_dist_group *g, wk_tensor *t, int dst, int tag) {
  WK__DIST_G(g, "send", NULL);
  return g->api->send(g, t, dst, tag);
}
static inline wk_dist_work *wk_dist_irecv(wk_dist_group *g, wk_tensor *t, int src, int tag) {
  WK__DIST_G(g, "recv", NULL);
  return g->api->recv(g, t, src, tag);
}
/* Blocking forms: start, wait with the group's timeout, free. */
static inline wk_status wk_dist_all_reduce(wk_dist_group *g, wk_tensor *t, wk_reduce_op op) {
  return wk__dist_finish(wk_dist_all_reduce_async(g, t, op));
}
static inline wk_status wk_dist_broadcast(wk_dist_group *g, wk_tensor *t, int src) {
  return wk__dist_finish(wk_dist_broadcast_async(g, t, src));
}
static inline wk_status wk_dist_all_gather(wk_dist_group *g, wk_tensor *out, wk_tensor *in) {
  return wk__dist_finish(wk_dist_all_gather_async(g, out, in));
}
static inline wk_status wk_dist_reduce_scatter(wk_dist_group *g, wk_tensor *out, wk_tensor *in, wk_reduce_op op) {
  return wk__dist_finish(wk_dist_reduce_scatter_async(g, out, in, op));
}
static inline wk_status wk_dist_barrier(wk_dist_group *g) {
  return wk__dist_finish(wk_dist_barrier_async(g));
}
static inline wk_status wk_dist_send(wk_dist_group *g, wk_tensor *t, int dst, int tag) {
  return wk__dist_finish(wk_dist_isend(g, t, dst, tag));
}
static inline wk_status wk_dist_recv(wk_dist_group *g, wk_tensor *t, int src, int tag) {
  return wk__dist_finish(wk_dist_irecv(g, t, src, tag));
}

/* ---- DistributedDataParallel (the "ddp" service, plugins/ddp) ------------------------------ */
#define WK_DDP_SERVICE "ddp"
#define WK_DDP_API_VERSION 1

typedef struct wk_ddp_opts {
  size_t struct_size;
  double bucket_cap_mb;        /* gradient bucket size; default (0): 25, as PyTorch */
  bool find_unused_parameters; /* parameters may get no gradient in a backward */
  bool no_broadcast_buffers;   /* default false: buffers (BatchNorm's running stats) are
                                  broadcast from rank 0 before every forward in training */
} wk_ddp_opts;

/* What a DDP module measured since it was made (or reset_stats). */
typedef struct wk_ddp_stats {
  size_t struct_size;
  int buckets;          /* number of gradient buckets */
  int64_t bucket_bytes; /* bytes all-reduced per synchronised backward */
  int64_t syncs;        /* synchronised backwards */
  double comm_s;        /* seconds the backend spent on the buckets' all-reduces */
  double exposed_s;     /* seconds backward's end waited for them (not hidden behind backward) */
} wk_ddp_stats;

typedef struct wk_ddp_api {
  size_t struct_size;
  wk_module *(*wrap)(wk_module *module, wk_dist_group *group, const wk_ddp_opts *opts);
  wk_module *(*inner)(wk_module *ddp);
  wk_status (*set_sync)(wk_module *ddp, bool sync);
  wk_status (*stats)(wk_module *ddp, wk_ddp_stats *out);
  wk_status (*reset_stats)(wk_module *ddp);
} wk_ddp_api;

static inline const wk_ddp_api *wk_ddp_api_get(void) {
  return (const wk_ddp_api *)wk_service_get(WK_DDP_SERVICE, WK_DDP_API_VERSION);
}
/* DistributedDataParallel(module, process_group=group). Broadcasts module's
 * parameters and buffers from group rank 0 (a collective: every rank calls
 * it), buckets the parameters that require grad (reverse registration order,
 * bucket_cap_mb each, one dtype per bucket) and registers post-accumulate-
 * grad hooks that all-reduce (average) each bucket as soon as its last
 * gradient is accumulated, while backward goes on; backward returns once
 * every bucket is averaged and copied back into the .grad tensors. Returns a
 * new module (class "DistributedDataParallel") whose forward calls module's,
 * with module as its child "module" (retained). opts may be NULL. */
static inline wk_module *wk_ddp_wrap(wk_module *module, wk_dist_group *group, const wk_ddp_opts *opts) {
  wk_error_new_call();
  const wk_ddp_api *a = wk_ddp_api_get();
  return a ? a->wrap(module, group, opts) : NULL;
}
/* The wrapped module (borrowed): save its state dict, not the wrapper's, so a
 * checkpoint loads on any world size. */
static inline wk_module *wk_ddp_module(wk_module *ddp) {
  wk_error_new_call();
  const wk_ddp_api *a = wk_ddp_api_get();
  return a ? a->inner(ddp) : NULL;
}
/* no_sync(): between begin and end, backward accumulates gradients locally;
 * the first backward after end all-reduces the accumulated ones. */
static inline wk_status wk_ddp_no_sync_begin(wk_module *ddp) {
  wk_error_new_call();
  const wk_ddp_api *a = wk_ddp_api_get();
  return a ? a->set_sync(ddp, false) : wk_last_error();
}
static inline wk_status wk_ddp_no_sync_end(wk_module *ddp) {
  wk_error_new_call();
  const wk_ddp_api *a = wk_ddp_api_get();
  return a ? a->set_sync(ddp, true) : wk_last_error();
}
static inline wk_status wk_ddp_get_stats(wk_module *ddp, wk_ddp_stats *out) {
  wk_error_new_call();
  const wk_ddp_api *a = wk_ddp_api_get();
  return a ? a->stats(ddp, out) : wk_last_error();
}
static inline wk_status wk_ddp_reset_stats(wk_module *ddp) {
  wk_error_new_call();
  const wk_ddp_api *a = wk_ddp_api_get();
  return a ? a->reset_stats(ddp) : wk_last_error();
}

#endif
