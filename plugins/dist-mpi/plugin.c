/* dist-mpi plugin: the "dist.mpi" service (abi/wick/dist.h) on Open MPI, for
 * cpu tensors. This file checks arguments and builds the work items; the
 * progress thread (progress.c) runs them. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmpi.h"

static const wk_dist_api g_api;
static dmpi_group *g_world;
static bool g_shut; /* wk_shutdown finalised MPI: it cannot start again */
static double g_timeout = WK_DIST_DEFAULT_TIMEOUT_S;
static int g_ngroups;

static dmpi_group *G(wk_dist_group *g) {
  return (dmpi_group *)g;
}

static MPI_Datatype mpi_type(wk_dtype dt) {
  switch (dt) {
    case WK_F32:
      return MPI_FLOAT;
    case WK_F64:
      return MPI_DOUBLE;
    case WK_F16:
    case WK_BF16:
      return MPI_UINT16_T; /* reduced by the plugin's own ops */
    case WK_I8:
      return MPI_INT8_T;
    case WK_U8:
      return MPI_UINT8_T;
    case WK_I16:
      return MPI_INT16_T;
    case WK_I32:
      return MPI_INT32_T;
    case WK_I64:
      return MPI_INT64_T;
    case WK_BOOL:
      return MPI_C_BOOL;
    default:
      return MPI_DATATYPE_NULL;
  }
}

/* ---- groups ---- */
static bool usable(const char *what, dmpi_group *g) {
  if (!g) {
    wk_error(WK_ERR_NULL, "dist.mpi %s: the group is NULL", what);
    return false;
  }
  if (g->base.api != &g_api) {
    wk_error(WK_ERR_INVALID_ARG, "dist.mpi %s: the group was made by another backend", what);
    return false;
  }
  if (!dmpi_started()) {
    wk_error(WK_ERR_STATE, "dist.mpi %s: the backend is shut down (wk_shutdown was called)", what);
    return false;
  }
  if (g->rank < 0) {
    wk_error(WK_ERR_STATE, "dist.mpi %s: this process (world rank %d) is not a member of %s", what,
             g_world ? g_world->rank : -1, g->name);
    return false;
  }
  return true;
}

static double env_timeout(void) {
  const char *v = getenv("WICK_DIST_TIMEOUT");
  char *end = NULL;
  double t = v ? strtod(v, &end) : 0;
  return v && end != v && t > 0 ? t : WK_DIST_DEFAULT_TIMEOUT_S;
}

static wk_dist_group *dm_init(const wk_dist_init_opts *o) {
  if (g_world) return &g_world->base;
  if (g_shut) {
    wk_error(WK_ERR_STATE, "dist.mpi init: the backend was shut down (wk_shutdown) and cannot start again");
    return NULL;
  }
  double t = o && o->struct_size >= offsetof(wk_dist_init_opts, timeout_s) + sizeof(double) ? o->timeout_s : 0;
  if (t < 0 || t != t) {
    wk_error(WK_ERR_INVALID_ARG, "dist.mpi init: timeout_s must be positive (0 for the default), got %g", t);
    return NULL;
  }
  g_timeout = t > 0 ? t : env_timeout();
  /* torchrun's variables must agree with Open MPI's: a WORLD_SIZE without mpirun cannot be joined. */
  const char *ws = getenv("WORLD_SIZE"), *ows = getenv("OMPI_COMM_WORLD_SIZE");
  const char *rk = getenv("RANK"), *ork = getenv("OMPI_COMM_WORLD_RANK");
  if (ws && atoi(ws) > 1 && !ows) {
    wk_error(WK_ERR_STATE,
             "dist.mpi init: WORLD_SIZE=%s but this process was not started by Open MPI (OMPI_COMM_WORLD_SIZE is "
             "unset): start the job with `wick launch --nproc-per-node %s ...` or `mpirun -np %s ...`",
             ws, ws, ws);
    return NULL;
  }
  /* Several nodes (wick launch --nnodes M --node-rank K): each node's mpirun has N processes;
   * WORLD_SIZE = M N and RANK = K N + Open MPI's rank. */
  const char *nn = getenv("WICK_DIST_NNODES"), *nr = getenv("WICK_DIST_NODE_RANK");
  int nnodes = nn && atoi(nn) > 1 ? atoi(nn) : 1, node = nnodes > 1 && nr ? atoi(nr) : 0;
  if (ws && ows && atoi(ws) != nnodes * atoi(ows)) {
    wk_error(WK_ERR_STATE,
             "dist.mpi init: WORLD_SIZE=%s disagrees with Open MPI's OMPI_COMM_WORLD_SIZE=%s on %d node(s)", ws, ows,
             nnodes);
    return NULL;
  }
  if (rk && ork && ows && atoi(rk) != node * atoi(ows) + atoi(ork)) {
    wk_error(WK_ERR_STATE, "dist.mpi init: RANK=%s disagrees with Open MPI's OMPI_COMM_WORLD_RANK=%s on node %d of %d",
             rk, ork, node, nnodes);
    return NULL;
  }
  int rank = 0, size = 0;
  if (dmpi_start(g_timeout, &rank, &size) != WK_OK) return NULL;
  dmpi_group *w = wk_calloc(1, sizeof *w);
  int *wr = wk_calloc((size_t)size, sizeof *wr);
  if (!w || !wr) {
    wk_free(w);
    wk_free(wr);
    wk_error(WK_ERR_NO_MEMORY, "dist.mpi init: out of memory");
    return NULL;
  }
  for (int i = 0; i < size; i++) wr[i] = i;
  w->base.api = &g_api;
  w->comm = dmpi_world_comm();
  w->rank = rank;
  w->size = size;
  w->world_ranks = wr;
  w->timeout_s = g_timeout;
  w->is_world = true;
  snprintf(w->name, sizeof w->name, "the world group");
  g_world = w;
  return &w->base;
}

static wk_dist_group *dm_world(void) {
  return g_world ? &g_world->base : NULL;
}

static int dm_rank(const wk_dist_group *g) {
  return g ? ((const dmpi_group *)g)->rank : -1;
}
static int dm_size(const wk_dist_group *g) {
  return g ? ((const dmpi_group *)g)->size : 0;
}
static double dm_timeout(const wk_dist_group *g) {
  return g ? ((const dmpi_group *)g)->timeout_s : g_timeout;
}

static dmpi_work *new_work(dmpi_kind kind, dmpi_group *g) {
  dmpi_work *w = wk_calloc(1, sizeof *w);
  if (!w) {
    wk_error(WK_ERR_NO_MEMORY, "dist.mpi: out of memory");
    return NULL;
  }
  w->base.api = &g_api;
  w->kind = kind;
  w->g = g;
  w->req = MPI_REQUEST_NULL;
  w->comm_out = MPI_COMM_NULL;
  w->mdt = MPI_BYTE;
  return w;
}

static wk_dist_group *dm_new_group(wk_dist_group *parent_, const int *ranks, int n) {
  dmpi_group *p = G(parent_);
  if (!usable("new_group", p)) return NULL;
  if (!ranks || n < 1 || n > p->size) {
    wk_error(ranks ? WK_ERR_INVALID_ARG : WK_ERR_NULL, "dist.mpi new_group: needs 1 to %d ranks of %s, got %s%d",
             p->size, p->name, ranks ? "" : "NULL and ", n);
    return NULL;
  }
  char *in = wk_calloc((size_t)p->size, 1);
  if (!in) {
    wk_error(WK_ERR_NO_MEMORY, "dist.mpi new_group: out of memory");
    return NULL;
  }
  for (int i = 0; i < n; i++) {
    if (ranks[i] < 0 || ranks[i] >= p->size || in[ranks[i]]) {
      wk_error(WK_ERR_INVALID_ARG, "dist.mpi new_group: rank %d (entry %d) is %s", ranks[i], i,
               ranks[i] < 0 || ranks[i] >= p->size ? "outside the parent group" : "listed twice");
      wk_free(in);
      return NULL;
    }
    in[ranks[i]] = 1;
  }
  dmpi_group *g = wk_calloc(1, sizeof *g);
  int *wr = wk_calloc((size_t)n, sizeof *wr);
  dmpi_work *w = g && wr ? new_work(DMPI_SPLIT, p) : NULL;
  if (!w) {
    if (!wk_last_error()) wk_error(WK_ERR_NO_MEMORY, "dist.mpi new_group: out of memory");
    wk_free(in);
    wk_free(g);
    wk_free(wr);
    return NULL;
  }
  int k = 0, me = -1;
  for (int r = 0; r < p->size; r++)
    if (in[r]) {
      if (r == p->rank) me = k;
      wr[k++] = p->world_ranks[r];
    }
  bool member = in[p->rank];
  wk_free(in);
  w->color = member ? 0 : MPI_UNDEFINED;
  w->key = p->rank;
  dmpi_submit(w);
  wk_status s = dmpi_wait(w, p->timeout_s);
  MPI_Comm c = w->comm_out;
  dmpi_work_release(w);
  if (s) {
    wk_free(g);
    wk_free(wr);
    return NULL;
  }
  g->base.api = &g_api;
  g->comm = member ? c : MPI_COMM_NULL;
  g->rank = member ? me : -1;
  g->size = n;
  g->world_ranks = wr;
  g->timeout_s = p->timeout_s;
  snprintf(g->name, sizeof g->name, "group %d", ++g_ngroups);
  return &g->base;
}

static void dm_group_free(wk_dist_group *g_) {
  dmpi_group *g = G(g_);
  if (!g || g->is_world || g->base.api != &g_api) return;
  if (g->comm != MPI_COMM_NULL && dmpi_started()) {
    dmpi_work *w = new_work(DMPI_COMM_FREE, g);
    if (w) {
      w->comm_out = g->comm;
      dmpi_submit(w);
      dmpi_work_release(w); /* orphaned: the progress thread frees the group after MPI_Comm_free */
      return;
    }
  }
  wk_free(g->world_ranks);
  wk_free(g);
}

/* ---- argument checks ---- */
static bool check_tensor(const char *what, const char *name, wk_tensor *t, int64_t *numel) {
  if (!t) {
    if (!wk_last_error()) wk_error(WK_ERR_NULL, "dist.mpi %s: tensor '%s' is NULL", what, name);
    return false;
  }
  wk_device d = wk_tensor_device(t);
  if (d.type != WK_DEVICE_CPU) {
    char dn[32];
    wk_device_str(d, dn, sizeof dn);
    wk_error(WK_ERR_DEVICE, "dist.mpi %s: tensor '%s' is on %s; the mpi backend takes cpu tensors", what, name, dn);
    return false;
  }
  if (!wk_tensor_is_contiguous(t)) {
    wk_error(WK_ERR_INVALID_ARG, "dist.mpi %s: tensor '%s' must be contiguous (call wk_contiguous first)", what, name);
    return false;
  }
  if (mpi_type(wk_tensor_dtype(t)) == MPI_DATATYPE_NULL) {
    wk_error(WK_ERR_DTYPE, "dist.mpi %s: tensor '%s' has dtype %s, which the mpi backend does not carry", what, name,
             wk_dtype_name(wk_tensor_dtype(t)));
    return false;
  }
  *numel = wk_tensor_numel(t);
  if (*numel > INT_MAX) {
    wk_error(WK_ERR_INVALID_ARG, "dist.mpi %s: tensor '%s' has %lld elements; at most %d per call", what, name,
             (long long)*numel, INT_MAX);
    return false;
  }
  return true;
}

static bool check_op(const char *what, wk_reduce_op op, wk_dtype dt) {
  if ((int)op < WK_REDUCE_SUM || op > WK_REDUCE_PRODUCT) {
    wk_error(WK_ERR_INVALID_ARG, "dist.mpi %s: unknown reduction %d (sum, avg, max, min or product)", what, (int)op);
    return false;
  }
  if (op == WK_REDUCE_AVG && !wk_dtype_is_floating(dt)) {
    wk_error(WK_ERR_DTYPE, "dist.mpi %s: avg needs a floating dtype, got %s", what, wk_dtype_name(dt));
    return false;
  }
  return true;
}

static bool check_peer(const char *what, const char *role, dmpi_group *g, int r) {
  if (r < 0 || r >= g->size) {
    wk_error(WK_ERR_INDEX, "dist.mpi %s: %s rank %d is outside %s of size %d", what, role, r, g->name, g->size);
    return false;
  }
  return true;
}

static wk_dist_work *submit(dmpi_work *w) {
  if (w->t0) wk_tensor_bump_version(w->t0); /* written in place, outside autograd */
  dmpi_submit(w);
  return &w->base;
}

static wk_dist_work *dm_all_reduce(wk_dist_group *g_, wk_tensor *t, wk_reduce_op op) {
  dmpi_group *g = G(g_);
  int64_t n;
  if (!usable("all_reduce", g) || !check_tensor("all_reduce", "tensor", t, &n) ||
      !check_op("all_reduce", op, wk_tensor_dtype(t)))
    return NULL;
  dmpi_work *w = new_work(DMPI_ALL_REDUCE, g);
  if (!w) return NULL;
  w->t0 = wk_retain(t);
  w->buf0 = wk_tensor_data(t);
  w->count = (int)n;
  w->dtype = wk_tensor_dtype(t);
  w->mdt = mpi_type(w->dtype);
  w->rop = op;
  w->mop = dmpi_pick_op(w->dtype, op);
  return submit(w);
}

static wk_dist_work *dm_broadcast(wk_dist_group *g_, wk_tensor *t, int src) {
  dmpi_group *g = G(g_);
  int64_t n;
  if (!usable("broadcast", g) || !check_tensor("broadcast", "tensor", t, &n) || !check_peer("broadcast", "src", g, src))
    return NULL;
  dmpi_work *w = new_work(DMPI_BROADCAST, g);
  if (!w) return NULL;
  w->t0 = wk_retain(t);
  w->buf0 = wk_tensor_data(t);
  w->count = (int)n;
  w->dtype = wk_tensor_dtype(t);
  w->mdt = mpi_type(w->dtype);
  w->peer = src;
  return submit(w);
}

/* all_gather / reduce_scatter: `big` holds size blocks of `small`'s numel. */
static bool check_pair(const char *what, dmpi_group *g, wk_tensor *big, const char *bn, wk_tensor *small,
                       const char *sn, int64_t *n) {
  int64_t nb, ns;
  if (!check_tensor(what, bn, big, &nb) || !check_tensor(what, sn, small, &ns)) return false;
  if (wk_tensor_dtype(big) != wk_tensor_dtype(small)) {
    wk_error(WK_ERR_DTYPE, "dist.mpi %s: '%s' is %s but '%s' is %s", what, bn, wk_dtype_name(wk_tensor_dtype(big)), sn,
             wk_dtype_name(wk_tensor_dtype(small)));
    return false;
  }
  if (nb != ns * g->size) {
    wk_error(WK_ERR_SHAPE, "dist.mpi %s: '%s' has %lld elements; it must have %d x %lld (group size x '%s')", what, bn,
             (long long)nb, g->size, (long long)ns, sn);
    return false;
  }
  if (wk_tensor_same_storage(big, small)) {
    wk_error(WK_ERR_INVALID_ARG, "dist.mpi %s: '%s' and '%s' share storage", what, bn, sn);
    return false;
  }
  *n = ns;
  return true;
}

static wk_dist_work *dm_all_gather(wk_dist_group *g_, wk_tensor *out, wk_tensor *in) {
  dmpi_group *g = G(g_);
  int64_t n;
  if (!usable("all_gather", g) || !check_pair("all_gather", g, out, "out", in, "in", &n)) return NULL;
  dmpi_work *w = new_work(DMPI_ALL_GATHER, g);
  if (!w) return NULL;
  w->t0 = wk_retain(out);
  w->t1 = wk_retain(in);
  w->buf0 = wk_tensor_data(out);
  w->buf1 = wk_tensor_data(in);
  w->count = (int)n;
  w->dtype = wk_tensor_dtype(in);
  w->mdt = mpi_type(w->dtype);
  return submit(w);
}

static wk_dist_work *dm_reduce_scatter(wk_dist_group *g_, wk_tensor *out, wk_tensor *in, wk_reduce_op op) {
  dmpi_group *g = G(g_);
  int64_t n;
  if (!usable("reduce_scatter", g) || !check_pair("reduce_scatter", g, in, "in", out, "out", &n) ||
      !check_op("reduce_scatter", op, wk_tensor_dtype(in)))
    return NULL;
  dmpi_work *w = new_work(DMPI_REDUCE_SCATTER, g);
  if (!w) return NULL;
  w->t0 = wk_retain(out);
  w->t1 = wk_retain(in);
  w->buf0 = wk_tensor_data(out);
  w->buf1 = wk_tensor_data(in);
  w->count = (int)n;
  w->dtype = wk_tensor_dtype(in);
  w->mdt = mpi_type(w->dtype);
  w->rop = op;
  w->mop = dmpi_pick_op(w->dtype, op);
  return submit(w);
}

static wk_dist_work *dm_barrier(wk_dist_group *g_) {
  dmpi_group *g = G(g_);
  if (!usable("barrier", g)) return NULL;
  dmpi_work *w = new_work(DMPI_BARRIER, g);
  return w ? submit(w) : NULL;
}

static wk_dist_work *p2p(const char *what, dmpi_kind kind, dmpi_group *g, wk_tensor *t, int peer, int tag) {
  int64_t n;
  if (!usable(what, g) || !check_tensor(what, "tensor", t, &n) ||
      !check_peer(what, kind == DMPI_SEND ? "dst" : "src", g, peer))
    return NULL;
  if (peer == g->rank) {
    wk_error(WK_ERR_INVALID_ARG, "dist.mpi %s: rank %d cannot %s itself", what, peer, what);
    return NULL;
  }
  if (tag < 0 || tag > 32767) { /* MPI guarantees tags up to 32767 */
    wk_error(WK_ERR_INVALID_ARG, "dist.mpi %s: tag %d is outside [0, 32767]", what, tag);
    return NULL;
  }
  dmpi_work *w = new_work(kind, g);
  if (!w) return NULL;
  if (kind == DMPI_RECV) {
    w->t0 = wk_retain(t);
    w->buf0 = wk_tensor_data(t);
  } else {
    w->t1 = wk_retain(t);
    w->buf1 = wk_tensor_data(t);
  }
  w->count = (int)n;
  w->dtype = wk_tensor_dtype(t);
  w->mdt = mpi_type(w->dtype);
  w->peer = peer;
  w->tag = tag;
  return submit(w);
}

static wk_dist_work *dm_send(wk_dist_group *g, wk_tensor *t, int dst, int tag) {
  return p2p("send", DMPI_SEND, G(g), t, dst, tag);
}
static wk_dist_work *dm_recv(wk_dist_group *g, wk_tensor *t, int src, int tag) {
  return p2p("recv", DMPI_RECV, G(g), t, src, tag);
}

static dmpi_work *W(wk_dist_work *w) {
  return (dmpi_work *)w;
}

static wk_status dm_wait(wk_dist_work *w_, double timeout_s) {
  dmpi_work *w = W(w_);
  if (!w) return wk_error(WK_ERR_NULL, "dist.mpi wait: the work is NULL");
  if (timeout_s != timeout_s) return wk_error(WK_ERR_INVALID_ARG, "dist.mpi wait: timeout_s is NaN");
  return dmpi_wait(w, timeout_s > 0 ? timeout_s : w->g->timeout_s);
}

static bool dm_test(wk_dist_work *w) {
  return !w || dmpi_done(W(w));
}

static void dm_work_free(wk_dist_work *w_) {
  dmpi_work *w = W(w_);
  if (!w) return;
  if (!dmpi_done(w)) {
    bool had = wk_last_error() != WK_OK;
    if (dmpi_wait(w, w->g->timeout_s) != WK_OK && !had) {
      fprintf(stderr, "%s\n", wk_last_error_message()); /* nobody is left to read it */
      wk_clear_error();
    }
  }
  dmpi_work_release(w);
}

static double dm_work_seconds(const wk_dist_work *w_) {
  const dmpi_work *w = (const dmpi_work *)w_;
  return w && w->t_end > 0 ? w->t_end - w->t_start : 0;
}

static const wk_dist_api g_api = {
    .struct_size = sizeof(wk_dist_api),
    .backend = "mpi",
    .init = dm_init,
    .world = dm_world,
    .new_group = dm_new_group,
    .group_free = dm_group_free,
    .rank = dm_rank,
    .size = dm_size,
    .timeout = dm_timeout,
    .all_reduce = dm_all_reduce,
    .broadcast = dm_broadcast,
    .all_gather = dm_all_gather,
    .reduce_scatter = dm_reduce_scatter,
    .barrier = dm_barrier,
    .send = dm_send,
    .recv = dm_recv,
    .wait = dm_wait,
    .test = dm_test,
    .work_free = dm_work_free,
    .work_seconds = dm_work_seconds,
};

static wk_status init(void) {
  return wk_service_register(WK_DIST_SERVICE_PREFIX "mpi", WK_DIST_API_VERSION, &g_api);
}

static void shutdown_(void) {
  dmpi_stop();
  if (g_world) {
    wk_free(g_world->world_ranks);
    wk_free(g_world);
    g_world = NULL;
    g_shut = true;
  }
}

WK_PLUGIN_DEFINE("dist-mpi", "0.1.0", "Open MPI collectives on cpu tensors (service \"dist.mpi\")", init, shutdown_)
