/* dist-mpi plugin: the progress thread. It initialises MPI (so it is MPI's
 * main thread: MPI_THREAD_SERIALIZED is asked, FUNNELED suffices) and runs
 * queued operations while the caller's threads compute. Collectives run one
 * at a time in submission order (the same order on every rank, as MPI
 * requires), as on NCCL's one stream per group: each waits at a non-blocking
 * barrier, polled with back-off, until every rank of its group has reached
 * it, then runs with Open MPI's blocking algorithm. Point-to-point operations
 * start at once and are polled with MPI_Test. Waits have timeouts; on one,
 * the peers on this host are inspected so the message can name a dead or
 * stopped rank. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <wick/sdk/half.h>

#include "dmpi.h"

static pthread_t g_thread;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_submit_cv; /* work queued or stop asked */
static pthread_cond_t g_done_cv;   /* some work finished, or start-up ended */
static dmpi_work *g_head, *g_tail; /* queued, not started */
static int g_inflight;             /* queued + started, not finished */
static bool g_running, g_stop, g_ready, g_broken, g_we_init;
static wk_status g_start_status;
static char g_start_err[320];
static int g_rank, g_size;
static MPI_Comm g_comm = MPI_COMM_NULL; /* the world: MPI_COMM_WORLD, or the nodes' joined communicator */
static double g_join_timeout_s;
/* all_reduce runs in pieces of this many bytes ($WICK_DIST_MPI_CHUNK_MB; 0: whole): on the shared 2-vCPU
 * VM one 64 MB MPI_Allreduce took 260-306 ms, sixteen 4 MB ones 172 ms (bench/RESULTS.md). */
static double g_chunk = 4 << 20; /* how long a node waits for node 0's published port */
static int *g_pids;              /* per world rank */
static uint64_t *g_hosts;        /* per world rank: hash of the host name */
static MPI_Op g_half_ops[2][4];  /* [f16, bf16][sum, max, min, prod] */
#define SPIN_S 50e-6             /* how long a waiter looks before it sleeps */

double dmpi_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

MPI_Comm dmpi_world_comm(void) {
  return g_comm;
}

bool dmpi_started(void) {
  return g_running;
}

/* ---- float16 / bfloat16 reductions (MPI has no such types) ---- */
#define HALF_OP(NAME, TO, FROM, EXPR)                                   \
  static void NAME(void *in, void *inout, int *len, MPI_Datatype *dt) { \
    (void)dt;                                                           \
    const uint16_t *a = in;                                             \
    uint16_t *b = inout;                                                \
    for (int i = 0; i < *len; i++) {                                    \
      float x = TO(a[i]), y = TO(b[i]);                                 \
      b[i] = FROM(EXPR);                                                \
    }                                                                   \
  }
HALF_OP(f16_sum, wk_f16_to_f32, wk_f32_to_f16, x + y)
HALF_OP(f16_max, wk_f16_to_f32, wk_f32_to_f16, (x != x || x > y) ? x : y)
HALF_OP(f16_min, wk_f16_to_f32, wk_f32_to_f16, (x != x || x < y) ? x : y)
HALF_OP(f16_prod, wk_f16_to_f32, wk_f32_to_f16, x *y)
HALF_OP(bf16_sum, wk_bf16_to_f32, wk_f32_to_bf16, x + y)
HALF_OP(bf16_max, wk_bf16_to_f32, wk_f32_to_bf16, (x != x || x > y) ? x : y)
HALF_OP(bf16_min, wk_bf16_to_f32, wk_f32_to_bf16, (x != x || x < y) ? x : y)
HALF_OP(bf16_prod, wk_bf16_to_f32, wk_f32_to_bf16, x *y)

/* The MPI op for (dtype, reduction); AVG reduces with SUM and divides after. */
MPI_Op dmpi_pick_op(wk_dtype dt, wk_reduce_op op) {
  int k = op == WK_REDUCE_MAX ? 1 : op == WK_REDUCE_MIN ? 2 : op == WK_REDUCE_PRODUCT ? 3 : 0;
  if (dt == WK_F16 || dt == WK_BF16) return g_half_ops[dt == WK_BF16][k];
  if (dt == WK_BOOL) return k == 0 || k == 1 ? MPI_LOR : MPI_LAND; /* PyTorch: sum/max are or, min/prod and */
  static const MPI_Op ops[4] = {MPI_SUM, MPI_MAX, MPI_MIN, MPI_PROD};
  return ops[k];
}

static void divide(dmpi_work *w, int64_t n, int by) {
  void *p = w->buf0;
  if (w->dtype == WK_F32)
    for (int64_t i = 0; i < n; i++) ((float *)p)[i] /= (float)by;
  else if (w->dtype == WK_F64)
    for (int64_t i = 0; i < n; i++) ((double *)p)[i] /= (double)by;
  else if (w->dtype == WK_F16)
    for (int64_t i = 0; i < n; i++) ((uint16_t *)p)[i] = wk_f32_to_f16(wk_f16_to_f32(((uint16_t *)p)[i]) / (float)by);
  else if (w->dtype == WK_BF16)
    for (int64_t i = 0; i < n; i++) ((uint16_t *)p)[i] = wk_f32_to_bf16(wk_bf16_to_f32(((uint16_t *)p)[i]) / (float)by);
}

static void set_mpi_error(dmpi_work *w, const char *call, int rc) {
  char msg[MPI_MAX_ERROR_STRING + 1] = {0}, what[160];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  dmpi_describe(w, what, sizeof what);
  snprintf(w->err, sizeof w->err, "dist.mpi: %s: %s failed: %s", what, call, msg);
}

/* Starts w (progress thread). Collectives run to completion here, with
 * Open MPI's blocking algorithms (its tuned component: up to 4x faster here
 * than the libnbc schedules of the non-blocking forms, and every rank must
 * use the same form), once the gate (a non-blocking barrier) says every rank
 * has arrived, so no rank spins in them while a peer still computes;
 * point-to-point operations only start, and are polled, so a send and a
 * receive in flight together never wait on each other. Returns false when it
 * failed (w->err set). */
static bool start(dmpi_work *w) {
  MPI_Comm c = w->g ? w->g->comm : MPI_COMM_NULL;
  int rc = MPI_SUCCESS;
  const char *call = "";
  if (w->t_start == 0) w->t_start = dmpi_now();
  w->req = MPI_REQUEST_NULL;
  switch (w->kind) {
    case DMPI_ALL_REDUCE: { /* in pieces of g_chunk bytes, cut the same on every rank (same count and dtype) */
      call = "MPI_Allreduce";
      int esz = 1, off = 0;
      MPI_Type_size(w->mdt, &esz);
      double per_d = g_chunk > 0 ? g_chunk / (esz > 0 ? esz : 1) : (double)w->count;
      int per = per_d < 1 ? 1 : per_d > w->count ? w->count : (int)per_d;
      do {
        int n = w->count - off < per ? w->count - off : per;
        rc = MPI_Allreduce(MPI_IN_PLACE, (char *)w->buf0 + (size_t)off * (size_t)esz, n, w->mdt, w->mop, c);
        off += n;
      } while (rc == MPI_SUCCESS && off < w->count);
      break;
    }
    case DMPI_BROADCAST:
      call = "MPI_Bcast";
      rc = MPI_Bcast(w->buf0, w->count, w->mdt, w->peer, c);
      break;
    case DMPI_ALL_GATHER:
      call = "MPI_Allgather";
      rc = MPI_Allgather(w->buf1, w->count, w->mdt, w->buf0, w->count, w->mdt, c);
      break;
    case DMPI_REDUCE_SCATTER:
      call = "MPI_Reduce_scatter_block";
      rc = MPI_Reduce_scatter_block(w->buf1, w->buf0, w->count, w->mdt, w->mop, c);
      break;
    case DMPI_BARRIER:
      call = "MPI_Barrier";
      rc = MPI_Barrier(c);
      break;
    case DMPI_SEND:
      call = "MPI_Isend";
      rc = MPI_Isend(w->buf1, w->count, w->mdt, w->peer, w->tag, c, &w->req);
      break;
    case DMPI_RECV:
      call = "MPI_Irecv";
      rc = MPI_Irecv(w->buf0, w->count, w->mdt, w->peer, w->tag, c, &w->req);
      break;
    case DMPI_SPLIT: /* blocking: collective over the parent, ordered like the others */
      call = "MPI_Comm_split";
      rc = MPI_Comm_split(c, w->color, w->key, &w->comm_out);
      break;
    case DMPI_COMM_FREE:
      call = "MPI_Comm_free";
      rc = w->comm_out != MPI_COMM_NULL ? MPI_Comm_free(&w->comm_out) : MPI_SUCCESS;
      break;
  }
  if (rc != MPI_SUCCESS) {
    set_mpi_error(w, call, rc);
    return false;
  }
  return true;
}

/* Marks w finished (progress thread); frees it when orphaned. */
static void finish(dmpi_work *w, bool ok) {
  w->t_end = dmpi_now();
  pthread_mutex_lock(&g_lock);
  __atomic_store_n(&w->state, ok ? W_DONE : W_FAILED, __ATOMIC_RELEASE);
  g_inflight--;
  bool orphan = w->orphan;
  pthread_cond_broadcast(&g_done_cv);
  pthread_mutex_unlock(&g_lock);
  if (orphan) {
    if (w->kind == DMPI_COMM_FREE) wk_free(w->g ? w->g->world_ranks : NULL), wk_free(w->g);
    wk_unref(w->t0); /* the plugin's own reference: never a scope's */
    wk_unref(w->t1);
    wk_free(w);
  }
}

static bool is_p2p(const dmpi_work *w) {
  return w->kind == DMPI_SEND || w->kind == DMPI_RECV;
}

/* Runs the collective w once its gate opened, and finishes it. */
static void run_collective(dmpi_work *w) {
  bool ok = start(w);
  if (ok && w->rop == WK_REDUCE_AVG && (w->kind == DMPI_ALL_REDUCE || w->kind == DMPI_REDUCE_SCATTER))
    divide(w, w->count, w->g->size);
  finish(w, ok);
}

/* Opens w's gate: a non-blocking barrier over its group (none for one rank). */
static bool open_gate(dmpi_work *w) {
  w->t_start = dmpi_now();
  w->req = MPI_REQUEST_NULL;
  if (w->g->size < 2) return true;
  int rc = MPI_Ibarrier(w->g->comm, &w->req);
  if (rc != MPI_SUCCESS) set_mpi_error(w, "MPI_Ibarrier", rc);
  return rc == MPI_SUCCESS;
}

/* Polls the point-to-point work started; returns whether any finished. */
static bool poll_active(dmpi_work **active) {
  bool any = false;
  for (dmpi_work **p = active; *p;) {
    dmpi_work *w = *p;
    int flag = 1, rc = MPI_SUCCESS;
    if (w->req != MPI_REQUEST_NULL) rc = MPI_Test(&w->req, &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
      set_mpi_error(w, "MPI_Test", rc);
      flag = 1;
    }
    if (!flag) {
      p = &w->next;
      continue;
    }
    *p = w->next;
    any = true;
    finish(w, rc == MPI_SUCCESS);
  }
  return any;
}

static uint64_t host_hash(void) {
  char h[256] = {0};
  gethostname(h, sizeof h - 1);
  uint64_t x = 1469598103934665603ull;
  for (const char *p = h; *p; p++) x = (x ^ (unsigned char)*p) * 1099511628211ull;
  return x;
}

/* Several nodes (`wick launch --nnodes M --node-rank K`): each node's mpirun
 * started its own MPI_COMM_WORLD. They join with Open MPI's connect/accept:
 * node 0's rank 0 opens a port and publishes it on the ompi-server that node
 * 0's launcher runs (every mpirun was given its URI), node 0's ranks accept
 * the other nodes one at a time (those joined accept with them), and the
 * joined communicator is split into torchrun's order, RANK = K * N + local
 * rank (every node runs the same N processes, as under torchrun). */
static bool join_nodes(void) {
  const char *nn = getenv("WICK_DIST_NNODES"), *nr = getenv("WICK_DIST_NODE_RANK"), *rdzv = getenv("WICK_DIST_RDZV");
  int nnodes = nn ? atoi(nn) : 1, node = nr ? atoi(nr) : 0;
  if (nnodes <= 1) {
    g_comm = MPI_COMM_WORLD;
    return true;
  }
  if (node < 0 || node >= nnodes || !rdzv || !*rdzv) {
    snprintf(g_start_err, sizeof g_start_err,
             "dist.mpi: WICK_DIST_NNODES=%d needs WICK_DIST_NODE_RANK in [0, %d) and WICK_DIST_RDZV (set by wick "
             "launch --nnodes)",
             nnodes, nnodes);
    return false;
  }
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  /* Node k joins when the nodes before it have: node 0's rank 0 publishes the port as "<name>-k" only
   * then (Open MPI's accept takes one connecting job at a time), so the merges go in node order. */
  char name[200], port[MPI_MAX_PORT_NAME] = "";
  int wr = 0, ws = 0, rc = MPI_SUCCESS, lo = 0, hi = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &wr);
  MPI_Comm_size(MPI_COMM_WORLD, &ws);
  MPI_Comm cur = MPI_COMM_NULL, inter = MPI_COMM_NULL, merged = MPI_COMM_NULL;
  const char *what = "";
  if (node == 0) {
    what = "opening the port";
    if (wr == 0) rc = MPI_Open_port(MPI_INFO_NULL, port);
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_dup(MPI_COMM_WORLD, &cur);
  } else {
    what = "looking up node 0's port (is node 0 running, with the same ompi-server?)";
    snprintf(name, sizeof name, "wick-dist-%s-%d", rdzv, node);
    if (wr == 0) /* node 0 publishes it when this node's turn comes */
      for (double t0 = dmpi_now();;) {
        rc = MPI_Lookup_name(name, MPI_INFO_NULL, port);
        if (rc == MPI_SUCCESS || dmpi_now() - t0 > g_join_timeout_s) break;
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
      }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rc == MPI_SUCCESS) {
      what = "connecting to node 0";
      rc = MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter);
      if (rc == MPI_SUCCESS) rc = MPI_Intercomm_merge(inter, 1, &cur);
      if (inter != MPI_COMM_NULL) MPI_Comm_free(&inter);
    }
  }
  if (rc != MPI_SUCCESS) goto fail;
  MPI_Comm_set_errhandler(cur, MPI_ERRORS_RETURN);
  int me = 0;
  MPI_Comm_rank(cur, &me); /* 0: node 0's rank 0, which opened the port */
  for (int k = node + 1; k < nnodes && rc == MPI_SUCCESS; k++) {
    what = "publishing the port on ompi-server";
    snprintf(name, sizeof name, "wick-dist-%s-%d", rdzv, k);
    if (me == 0) rc = MPI_Publish_name(name, MPI_INFO_NULL, port);
    MPI_Bcast(&rc, 1, MPI_INT, 0, cur);
    if (rc != MPI_SUCCESS) break;
    what = "accepting a node";
    rc = MPI_Comm_accept(port, MPI_INFO_NULL, 0, cur, &inter);
    if (me == 0) MPI_Unpublish_name(name, MPI_INFO_NULL, port);
    if (rc == MPI_SUCCESS) rc = MPI_Intercomm_merge(inter, 0, &merged);
    if (inter != MPI_COMM_NULL) MPI_Comm_free(&inter);
    if (rc == MPI_SUCCESS) {
      MPI_Comm_free(&cur);
      cur = merged;
      MPI_Comm_set_errhandler(cur, MPI_ERRORS_RETURN);
    }
  }
  if (node == 0 && wr == 0) MPI_Close_port(port);
  if (rc != MPI_SUCCESS) goto fail;
  what = "checking the nodes' process counts";
  rc = MPI_Allreduce(&ws, &lo, 1, MPI_INT, MPI_MIN, cur);
  if (rc == MPI_SUCCESS) rc = MPI_Allreduce(&ws, &hi, 1, MPI_INT, MPI_MAX, cur);
  if (rc == MPI_SUCCESS && lo != hi) {
    snprintf(g_start_err, sizeof g_start_err,
             "dist.mpi: the nodes run different numbers of processes (%d to %d): every node needs the same "
             "--nproc-per-node",
             lo, hi);
    MPI_Comm_free(&cur);
    return false;
  }
  what = "ordering the ranks";
  if (rc == MPI_SUCCESS) rc = MPI_Comm_split(cur, 0, node * ws + wr, &g_comm);
  MPI_Comm_free(&cur);
  if (rc != MPI_SUCCESS) goto fail;
  MPI_Comm_set_errhandler(g_comm, MPI_ERRORS_RETURN);
  return true;
fail:;
  char msg[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  snprintf(g_start_err, sizeof g_start_err, "dist.mpi: joining node %d of %d to the others failed (%s): %s", node,
           nnodes, what, msg);
  if (cur != MPI_COMM_NULL) MPI_Comm_free(&cur);
  return false;
}

/* MPI start-up, on the progress thread. */
static bool mpi_start(void) {
  int inited = 0, finalized = 0, provided = 0, rc;
  MPI_Finalized(&finalized);
  if (finalized) {
    snprintf(g_start_err, sizeof g_start_err,
             "dist.mpi: MPI was finalised (at wk_shutdown) and cannot start again in this process");
    return false;
  }
  MPI_Initialized(&inited);
  if (inited) {
    /* The program initialised MPI itself: only MULTIPLE lets this thread call it too. */
    MPI_Query_thread(&provided);
    if (provided < MPI_THREAD_MULTIPLE) {
      snprintf(g_start_err, sizeof g_start_err,
               "dist.mpi: MPI was initialised by the program with thread level %d; the progress thread needs "
               "MPI_THREAD_MULTIPLE (or let Wick initialise MPI)",
               provided);
      return false;
    }
  } else {
    /* This thread waits for peers while the caller's intra-op threads compute on the same cores
     * (DDP overlaps backward with the all-reduces): let Open MPI yield the core while it polls, as it
     * does itself on oversubscribed nodes. Busy polling at full priority cost 2x at 16-64 MB on the
     * shared 2-vCPU VM (bench/RESULTS.md). OMPI_MCA_mpi_yield_when_idle=0 keeps the old behaviour. */
    setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
    rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
    if (rc != MPI_SUCCESS) {
      snprintf(g_start_err, sizeof g_start_err, "dist.mpi: MPI_Init_thread failed (code %d)", rc);
      return false;
    }
    g_we_init = true;
    if (provided < MPI_THREAD_FUNNELED) { /* every call is made from this thread, which initialised MPI */
      snprintf(g_start_err, sizeof g_start_err, "dist.mpi: Open MPI gives thread level %d, below FUNNELED", provided);
      return false;
    }
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (!join_nodes()) return false;
  MPI_Comm_rank(g_comm, &g_rank);
  MPI_Comm_size(g_comm, &g_size);
  g_pids = wk_calloc((size_t)g_size, sizeof *g_pids);
  g_hosts = wk_calloc((size_t)g_size, sizeof *g_hosts);
  if (!g_pids || !g_hosts) {
    snprintf(g_start_err, sizeof g_start_err, "dist.mpi: out of memory");
    return false;
  }
  int pid = (int)getpid();
  uint64_t host = host_hash();
  rc = MPI_Allgather(&pid, 1, MPI_INT, g_pids, 1, MPI_INT, g_comm);
  if (rc == MPI_SUCCESS) rc = MPI_Allgather(&host, 1, MPI_UINT64_T, g_hosts, 1, MPI_UINT64_T, g_comm);
  if (rc != MPI_SUCCESS) {
    snprintf(g_start_err, sizeof g_start_err, "dist.mpi: exchanging process ids at start-up failed (code %d)", rc);
    return false;
  }
  MPI_User_function *fns[2][4] = {{f16_sum, f16_max, f16_min, f16_prod}, {bf16_sum, bf16_max, bf16_min, bf16_prod}};
  for (int i = 0; i < 2; i++)
    for (int k = 0; k < 4; k++) MPI_Op_create(fns[i][k], 1, &g_half_ops[i][k]);
  return true;
}

static void *progress_main(void *arg) {
  (void)arg;
  bool ok = mpi_start();
  pthread_mutex_lock(&g_lock);
  g_start_status = ok ? WK_OK : WK_ERR_PLUGIN;
  g_ready = true;
  pthread_cond_broadcast(&g_done_cv);
  pthread_mutex_unlock(&g_lock);
  if (!ok) return NULL;
  dmpi_work *active = NULL;                       /* point-to-point, started */
  dmpi_work *colls = NULL, **colls_tail = &colls; /* collectives, in order, not started */
  dmpi_work *gate = NULL;                         /* the collective waiting at its gate */
  int idle = 0;
  for (;;) {
    if (!active && !colls && !gate) /* idle: watch the queue for a moment before sleeping (small ops' latency) */
      for (double t0 = dmpi_now(); !__atomic_load_n(&g_head, __ATOMIC_ACQUIRE) && dmpi_now() - t0 < SPIN_S;)
        sched_yield();
    pthread_mutex_lock(&g_lock);
    while (!g_head && !active && !colls && !gate && !g_stop) pthread_cond_wait(&g_submit_cv, &g_lock);
    if (!g_head && !active && !colls && !gate && g_stop) {
      pthread_mutex_unlock(&g_lock);
      break;
    }
    dmpi_work *q = g_head;
    __atomic_store_n(&g_head, NULL, __ATOMIC_RELEASE);
    g_tail = NULL;
    for (dmpi_work *w = q; w; w = w->next) w->state = W_STARTED;
    pthread_mutex_unlock(&g_lock);
    bool progress = q != NULL;
    while (q) {
      dmpi_work *w = q;
      q = q->next;
      w->next = NULL;
      if (!is_p2p(w)) { /* one collective at a time, in submission order */
        *colls_tail = w;
        colls_tail = &w->next;
      } else if (!start(w)) {
        finish(w, false);
      } else {
        w->next = active;
        active = w;
      }
    }
    if (!gate && colls) {
      gate = colls;
      colls = colls->next;
      if (!colls) colls_tail = &colls;
      gate->next = NULL;
      if (!open_gate(gate)) {
        finish(gate, false);
        gate = NULL;
      }
    }
    if (gate) {
      int flag = 1, rc = MPI_SUCCESS;
      if (gate->req != MPI_REQUEST_NULL) rc = MPI_Test(&gate->req, &flag, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) {
        set_mpi_error(gate, "MPI_Test", rc);
        finish(gate, false);
        gate = NULL;
      } else if (flag) {
        run_collective(gate);
        gate = NULL;
        progress = true;
      }
    }
    if (poll_active(&active)) progress = true;
    if (progress) {
      idle = 0;
    } else if (active || gate) { /* back off: yield for a while, then sleep 20 us between polls */
      if (++idle < 200) {
        sched_yield();
      } else {
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
      }
    }
  }
  if (g_we_init && !g_broken) {
    for (int i = 0; i < 2; i++)
      for (int k = 0; k < 4; k++) MPI_Op_free(&g_half_ops[i][k]);
    if (g_comm != MPI_COMM_WORLD && g_comm != MPI_COMM_NULL) MPI_Comm_free(&g_comm);
    MPI_Finalize();
  }
  return NULL;
}

wk_status dmpi_start(double timeout_s, int *rank, int *size) {
  if (g_running) {
    *rank = g_rank;
    *size = g_size;
    return WK_OK;
  }
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&g_done_cv, &ca);
  pthread_cond_init(&g_submit_cv, NULL);
  pthread_condattr_destroy(&ca);
  g_ready = false;
  g_stop = false;
  g_join_timeout_s = timeout_s;
  const char *chunk = getenv("WICK_DIST_MPI_CHUNK_MB");
  if (chunk && *chunk) g_chunk = atof(chunk) * 1048576.0;
  if (pthread_create(&g_thread, NULL, progress_main, NULL) != 0)
    return wk_error(WK_ERR_PLUGIN, "dist.mpi: cannot start the progress thread: %s", strerror(errno));
  struct timespec dl;
  clock_gettime(CLOCK_MONOTONIC, &dl);
  dl.tv_sec += (time_t)timeout_s + 1;
  pthread_mutex_lock(&g_lock);
  int rc = 0;
  while (!g_ready && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&g_done_cv, &g_lock, &dl);
  bool ready = g_ready;
  pthread_mutex_unlock(&g_lock);
  if (!ready) {
    g_broken = true;
    pthread_detach(g_thread);
    return wk_error(WK_ERR_STATE, "dist.mpi: MPI start-up did not finish within %g s (are all ranks started?)",
                    timeout_s);
  }
  if (g_start_status) {
    pthread_join(g_thread, NULL);
    wk_free(g_pids);
    wk_free(g_hosts);
    g_pids = NULL;
    g_hosts = NULL;
    return wk_error(g_start_status, "%s", g_start_err);
  }
  g_running = true;
  *rank = g_rank;
  *size = g_size;
  return WK_OK;
}

void dmpi_submit(dmpi_work *w) {
  w->state = W_QUEUED;
  w->next = NULL;
  pthread_mutex_lock(&g_lock);
  if (g_tail)
    g_tail->next = w;
  else
    __atomic_store_n(&g_head, w, __ATOMIC_RELEASE);
  g_tail = w;
  g_inflight++;
  pthread_cond_signal(&g_submit_cv);
  pthread_mutex_unlock(&g_lock);
}

bool dmpi_done(dmpi_work *w) {
  pthread_mutex_lock(&g_lock);
  bool d = w->state == W_DONE || w->state == W_FAILED;
  pthread_mutex_unlock(&g_lock);
  return d;
}

static const char *const KIND_NAMES[] = {"?",       "all_reduce", "broadcast", "all_gather", "reduce_scatter",
                                         "barrier", "send",       "recv",      "new_group",  "group_free"};

void dmpi_describe(const dmpi_work *w, char *buf, size_t n) {
  const char *g = w->g ? w->g->name : "?";
  if (w->kind == DMPI_BARRIER || w->kind == DMPI_SPLIT || w->kind == DMPI_COMM_FREE)
    snprintf(buf, n, "%s on %s", KIND_NAMES[w->kind], g);
  else if (w->kind == DMPI_SEND || w->kind == DMPI_RECV)
    snprintf(buf, n, "%s of %d %s %s rank %d (tag %d) on %s", KIND_NAMES[w->kind], w->count, wk_dtype_name(w->dtype),
             w->kind == DMPI_SEND ? "to" : "from", w->peer, w->tag, g);
  else
    snprintf(buf, n, "%s of %d %s on %s", KIND_NAMES[w->kind], w->count, wk_dtype_name(w->dtype), g);
}

/* Appends what can be seen of the group's peers on this host: exited or stopped ones. */
static void peer_report(const dmpi_group *g, char *buf, size_t n) {
  size_t len = strlen(buf);
  int found = 0;
  for (int r = 0; g && r < g->size && len + 80 < n; r++) {
    int wr = g->world_ranks[r];
    if (wr == g_rank || !g_pids || g_hosts[wr] != g_hosts[g_rank]) continue;
    char path[64], st[512];
    snprintf(path, sizeof path, "/proc/%d/stat", g_pids[wr]);
    FILE *f = fopen(path, "r");
    size_t got = f ? fread(st, 1, sizeof st - 1, f) : 0;
    if (f) fclose(f);
    st[got] = 0;
    const char *paren = strrchr(st, ')');
    char state = paren && paren[1] == ' ' ? paren[2] : 0;
    const char *why = !f || kill(g_pids[wr], 0) != 0 ? "has exited"
                      : state == 'Z'                 ? "has exited (zombie)"
                      : state == 'T' || state == 't' ? "is stopped"
                                                     : NULL;
    if (!why) continue;
    len += (size_t)snprintf(buf + len, n - len, "; peer rank %d (world rank %d, pid %d) %s", r, wr, g_pids[wr], why);
    found++;
  }
  if (!found && len + 80 < n)
    snprintf(buf + len, n - len, "; no peer on this host has exited or stopped: one may be stuck, or on another host");
}

wk_status dmpi_wait(dmpi_work *w, double timeout_s) {
  struct timespec dl;
  clock_gettime(CLOCK_MONOTONIC, &dl);
  double whole = (double)(time_t)timeout_s;
  dl.tv_sec += (time_t)timeout_s;
  dl.tv_nsec += (long)((timeout_s - whole) * 1e9);
  if (dl.tv_nsec >= 1000000000L) {
    dl.tv_sec++;
    dl.tv_nsec -= 1000000000L;
  }
  /* a short operation usually ends within microseconds: look before sleeping */
  for (double t0 = dmpi_now(); dmpi_now() - t0 < SPIN_S && timeout_s > SPIN_S;) {
    dmpi_state st = __atomic_load_n(&w->state, __ATOMIC_ACQUIRE);
    if (st == W_DONE || st == W_FAILED) break;
    sched_yield();
  }
  pthread_mutex_lock(&g_lock);
  int rc = 0;
  while (w->state != W_DONE && w->state != W_FAILED && rc != ETIMEDOUT)
    rc = pthread_cond_timedwait(&g_done_cv, &g_lock, &dl);
  dmpi_state st = w->state;
  pthread_mutex_unlock(&g_lock);
  if (st == W_DONE) return WK_OK;
  if (st == W_FAILED) return wk_error(WK_ERR_STATE, "%s", w->err);
  char what[160], msg[900];
  dmpi_describe(w, what, sizeof what);
  snprintf(msg, sizeof msg, "dist.mpi: %s (rank %d of %d) timed out after %g s", what, w->g->rank, w->g->size,
           timeout_s);
  peer_report(w->g, msg, sizeof msg);
  return wk_error(WK_ERR_STATE, "%s", msg);
}

void dmpi_work_release(dmpi_work *w) {
  pthread_mutex_lock(&g_lock);
  bool running = w->state == W_QUEUED || w->state == W_STARTED;
  if (running) w->orphan = true;
  pthread_mutex_unlock(&g_lock);
  if (running) return;
  wk_unref(w->t0);
  wk_unref(w->t1);
  wk_free(w);
}

void dmpi_stop(void) {
  if (!g_running) return;
  /* Let queued work drain for a while: a peer that never comes would hang MPI_Finalize. */
  struct timespec dl;
  clock_gettime(CLOCK_MONOTONIC, &dl);
  dl.tv_sec += 5;
  pthread_mutex_lock(&g_lock);
  int rc = 0;
  while (g_inflight > 0 && !g_broken && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&g_done_cv, &g_lock, &dl);
  if (g_inflight > 0) g_broken = true;
  g_stop = true;
  bool broken = g_broken;
  pthread_cond_signal(&g_submit_cv);
  pthread_mutex_unlock(&g_lock);
  if (broken) {
    /* The thread may be inside MPI for good: leave it, skip MPI_Finalize, and let
     * the launcher end the job (a rank exiting without MPI_Finalize stops mpirun's job). */
    fprintf(stderr, "dist.mpi: rank %d: operations left unfinished (a peer died or timed out); MPI is not finalised\n",
            g_rank);
    pthread_detach(g_thread);
  } else {
    pthread_join(g_thread, NULL);
    wk_free(g_pids);
    wk_free(g_hosts);
    g_pids = NULL;
    g_hosts = NULL;
  }
  g_running = false;
}
