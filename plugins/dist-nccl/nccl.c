/* dist-nccl plugin: the "dist.nccl" service (abi/wick/dist.h) on NCCL, for
 * cuda tensors. The world is the dist.mpi one (the plugin asks that service
 * for it): rank 0's ncclUniqueId reaches the others by an MPI broadcast, the
 * bootstrap PyTorch does through its store. Each group has its own cuda
 * stream; a collective waits there for the caller's current stream (an
 * event), runs, and records an end event; waiting for the work polls that
 * event on the host with the timeout, then makes the current stream wait for
 * it (PyTorch's work.wait()). libnccl is opened on first use (it is large),
 * so the plugin loads on machines without a GPU and init says why it cannot
 * run there. */
#include <dlfcn.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wick/sdk.h> /* first: it routes the wk_* calls of the headers below */
#include <wick/dist.h>

#ifndef CUDA_LIBDIR
#define CUDA_LIBDIR "/usr/local/cuda/lib64"
#endif

/* ---- libnccl, opened on first use ---- */
static struct {
  void *lib;
  ncclResult_t (*GetVersion)(int *);
  ncclResult_t (*GetUniqueId)(ncclUniqueId *);
  ncclResult_t (*CommInitRank)(ncclComm_t *, int, ncclUniqueId, int);
  ncclResult_t (*CommDestroy)(ncclComm_t);
  ncclResult_t (*CommAbort)(ncclComm_t);
  ncclResult_t (*CommGetAsyncError)(ncclComm_t, ncclResult_t *);
  const char *(*GetErrorString)(ncclResult_t);
  ncclResult_t (*AllReduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
  ncclResult_t (*Broadcast)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*AllGather)(const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
  ncclResult_t (*ReduceScatter)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
  ncclResult_t (*Send)(const void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*Recv)(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
  int version;
} N;

static bool open_nccl(void) {
  if (N.lib) return true;
  void *h = dlopen(CUDA_LIBDIR "/libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!h) h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    wk_error(WK_ERR_PLUGIN, "dist.nccl: cannot open libnccl.so.2: %s", dlerror());
    return false;
  }
#define SYM(f)                                                                                      \
  if (!(*(void **)&N.f = dlsym(h, "nccl" #f))) {                                                    \
    wk_error(WK_ERR_PLUGIN, "dist.nccl: libnccl.so.2 lacks nccl%s (NCCL 2.7 or newer needed)", #f); \
    dlclose(h);                                                                                     \
    return false;                                                                                   \
  }
  SYM(GetVersion)
  SYM(GetUniqueId) SYM(CommInitRank) SYM(CommDestroy) SYM(CommAbort) SYM(CommGetAsyncError) SYM(GetErrorString)
      SYM(AllReduce) SYM(Broadcast) SYM(AllGather) SYM(ReduceScatter) SYM(Send) SYM(Recv)
#undef SYM
          N.GetVersion(&N.version);
  N.lib = h;
  return true;
}

static wk_status nccl_fail(const char *what, ncclResult_t r) {
  return wk_error(WK_ERR_PLUGIN, "dist.nccl %s: %s", what, N.GetErrorString ? N.GetErrorString(r) : "NCCL error");
}

/* ---- groups and work ---- */
typedef struct {
  wk_dist_group base;
  wk_dist_group *boot; /* the dist.mpi group it was made over (the world's is borrowed) */
  ncclComm_t comm;     /* NULL outside the group */
  int rank, size;
  wk_device dev;
  wk_stream stream;
  double timeout_s;
  bool is_world;
} dnc_group;

typedef struct {
  wk_dist_work base;
  dnc_group *g;
  wk_tensor *t0, *t1;
  wk_event start, end;
  bool done;
  const char *what;
} dnc_work;

static const wk_dist_api g_api;
static const wk_dist_api *g_mpi;
static dnc_group *g_world;
static int32_t g_cuda = -1;

/* The cuda device type and its count, or an error naming why there is none. */
static bool have_devices(const char *what) {
  g_cuda = wk_device_type_find("cuda");
  int n = g_cuda > 0 ? wk_device_count(g_cuda) : 0;
  wk_clear_error();
  if (n > 0) return true;
  const char *why = g_cuda > 0 ? wk_device_type_status(g_cuda) : NULL;
  wk_error(WK_ERR_DEVICE, "dist.nccl %s: no cuda device%s%s", what,
           why && *why ? ": " : " (the cuda plugin is not loaded)", why && *why ? why : "");
  return false;
}

/* A communicator for the members of mpi group `boot`: rank 0's id broadcast over it. */
static wk_status make_comm(dnc_group *g) {
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  ncclResult_t r;
  if (g->boot->api->rank(g->boot) == 0 && (r = N.GetUniqueId(&id)) != ncclSuccess) return nccl_fail("GetUniqueId", r);
  wk_tensor *t = wk_tensor_from_data(&id, WK_U8, WK_SHAPE((int64_t)sizeof id));
  wk_dist_work *w = t ? g->boot->api->broadcast(g->boot, t, 0) : NULL;
  wk_status s = w ? g->boot->api->wait(w, g->timeout_s) : wk_last_error();
  if (w) g->boot->api->work_free(w);
  if (!s) memcpy(&id, wk_tensor_data(t), sizeof id);
  wk_unref(t);
  if (s) return s;
  if ((s = wk_device_set_current(g->dev))) return s;
  if ((r = N.CommInitRank(&g->comm, g->size, id, g->rank)) != ncclSuccess) return nccl_fail("CommInitRank", r);
  return wk_stream_create(g->dev, 0, &g->stream);
}

static wk_dist_group *dn_init(const wk_dist_init_opts *o) {
  if (g_world) return &g_world->base;
  if (!have_devices("init") || !open_nccl()) return NULL;
  g_mpi = (const wk_dist_api *)wk_service_get(WK_DIST_SERVICE_PREFIX "mpi", WK_DIST_API_VERSION);
  if (!g_mpi) {
    wk_error_replace(WK_ERR_NOT_FOUND, "dist.nccl init: the bootstrap needs the dist-mpi plugin (service dist.mpi)");
    return NULL;
  }
  wk_dist_group *boot = g_mpi->init(o);
  if (!boot) return NULL;
  dnc_group *g = wk_calloc(1, sizeof *g);
  if (!g) {
    wk_error(WK_ERR_NO_MEMORY, "dist.nccl init: out of memory");
    return NULL;
  }
  wk_dist_env e = wk_dist_env_read();
  g->base.api = &g_api;
  g->boot = boot;
  g->rank = g_mpi->rank(boot);
  g->size = g_mpi->size(boot);
  g->dev = (wk_device){g_cuda, e.local_rank % wk_device_count(g_cuda)};
  g->timeout_s = g_mpi->timeout(boot);
  g->is_world = true;
  if (make_comm(g)) {
    wk_free(g);
    return NULL;
  }
  g_world = g;
  return &g->base;
}

static wk_dist_group *dn_world(void) {
  return g_world ? &g_world->base : NULL;
}
static int dn_rank(const wk_dist_group *g) {
  return g ? ((const dnc_group *)g)->rank : -1;
}
static int dn_size(const wk_dist_group *g) {
  return g ? ((const dnc_group *)g)->size : 0;
}
static double dn_timeout(const wk_dist_group *g) {
  return g ? ((const dnc_group *)g)->timeout_s : 0;
}

static bool usable(const char *what, dnc_group *g) {
  if (!g) {
    wk_error(WK_ERR_NULL, "dist.nccl %s: the group is NULL", what);
    return false;
  }
  if (g->base.api != &g_api) {
    wk_error(WK_ERR_INVALID_ARG, "dist.nccl %s: the group was made by another backend", what);
    return false;
  }
  if (g->rank < 0 || !g->comm) {
    wk_error(WK_ERR_STATE, "dist.nccl %s: this process is not a member of the group", what);
    return false;
  }
  return true;
}

static wk_dist_group *dn_new_group(wk_dist_group *parent, const int *ranks, int n) {
  dnc_group *p = (dnc_group *)parent;
  if (!usable("new_group", p)) return NULL;
  wk_dist_group *boot = p->boot->api->new_group(p->boot, ranks, n);
  if (!boot) return NULL;
  dnc_group *g = wk_calloc(1, sizeof *g);
  if (!g) {
    p->boot->api->group_free(boot);
    wk_error(WK_ERR_NO_MEMORY, "dist.nccl new_group: out of memory");
    return NULL;
  }
  g->base.api = &g_api;
  g->boot = boot;
  g->rank = boot->api->rank(boot);
  g->size = boot->api->size(boot);
  g->dev = p->dev;
  g->timeout_s = p->timeout_s;
  if (g->rank >= 0 && make_comm(g)) {
    boot->api->group_free(boot);
    wk_free(g);
    return NULL;
  }
  return &g->base;
}

static void dn_group_free(wk_dist_group *g_) {
  dnc_group *g = (dnc_group *)g_;
  if (!g || g->is_world || g->base.api != &g_api) return;
  if (g->comm) N.CommDestroy(g->comm);
  wk_stream_destroy(g->stream);
  g->boot->api->group_free(g->boot);
  wk_free(g);
}

static bool nccl_type(wk_dtype dt, ncclDataType_t *out) {
  switch (dt) {
    case WK_F32:
      *out = ncclFloat32;
      return true;
    case WK_F64:
      *out = ncclFloat64;
      return true;
    case WK_F16:
      *out = ncclFloat16;
      return true;
    case WK_BF16:
      *out = ncclBfloat16;
      return true;
    case WK_I8:
      *out = ncclInt8;
      return true;
    case WK_U8:
      *out = ncclUint8;
      return true;
    case WK_I32:
      *out = ncclInt32;
      return true;
    case WK_I64:
      *out = ncclInt64;
      return true;
    default:
      return false;
  }
}

static bool check_tensor(const char *what, const char *name, dnc_group *g, wk_tensor *t, ncclDataType_t *dt) {
  if (!t) {
    if (!wk_last_error()) wk_error(WK_ERR_NULL, "dist.nccl %s: tensor '%s' is NULL", what, name);
    return false;
  }
  wk_device d = wk_tensor_device(t);
  if (!wk_device_equal(d, g->dev)) {
    char a[32], b[32];
    wk_device_str(d, a, sizeof a);
    wk_device_str(g->dev, b, sizeof b);
    wk_error(WK_ERR_DEVICE, "dist.nccl %s: tensor '%s' is on %s; this rank's NCCL communicator is on %s", what, name, a,
             b);
    return false;
  }
  if (!wk_tensor_is_contiguous(t)) {
    wk_error(WK_ERR_INVALID_ARG, "dist.nccl %s: tensor '%s' must be contiguous (call wk_contiguous first)", what, name);
    return false;
  }
  if (!nccl_type(wk_tensor_dtype(t), dt)) {
    wk_error(WK_ERR_DTYPE, "dist.nccl %s: tensor '%s' has dtype %s, which NCCL does not carry", what, name,
             wk_dtype_name(wk_tensor_dtype(t)));
    return false;
  }
  return true;
}

static bool nccl_op(const char *what, wk_reduce_op op, wk_dtype dt, ncclRedOp_t *out) {
  switch (op) {
    case WK_REDUCE_SUM:
      *out = ncclSum;
      return true;
    case WK_REDUCE_PRODUCT:
      *out = ncclProd;
      return true;
    case WK_REDUCE_MAX:
      *out = ncclMax;
      return true;
    case WK_REDUCE_MIN:
      *out = ncclMin;
      return true;
    case WK_REDUCE_AVG:
      if (!wk_dtype_is_floating(dt)) break;
      *out = ncclAvg;
      return true;
  }
  wk_error(op == WK_REDUCE_AVG ? WK_ERR_DTYPE : WK_ERR_INVALID_ARG, "dist.nccl %s: %s", what,
           op == WK_REDUCE_AVG ? "avg needs a floating dtype" : "unknown reduction");
  return false;
}

/* Opens a work: the group's stream waits for the caller's current stream. */
static dnc_work *begin(const char *what, dnc_group *g) {
  dnc_work *w = wk_calloc(1, sizeof *w);
  if (!w) {
    wk_error(WK_ERR_NO_MEMORY, "dist.nccl %s: out of memory", what);
    return NULL;
  }
  w->base.api = &g_api;
  w->g = g;
  w->what = what;
  wk_status s = wk_device_set_current(g->dev);
  if (!s) s = wk_event_create(g->dev, WK_EVENT_ENABLE_TIMING, &w->start);
  if (!s) s = wk_event_create(g->dev, WK_EVENT_ENABLE_TIMING, &w->end);
  if (!s) s = wk_event_record(w->start, wk_current_stream(g->dev));
  if (!s) s = wk_stream_wait_event(g->stream, w->start);
  if (s) {
    wk_event_destroy(w->start);
    wk_event_destroy(w->end);
    wk_free(w);
    return NULL;
  }
  return w;
}

/* Closes it after the NCCL call r: the end event on the group's stream. */
static wk_dist_work *end(dnc_work *w, ncclResult_t r, wk_tensor *t0, wk_tensor *t1) {
  wk_status s = r == ncclSuccess ? wk_event_record(w->end, w->g->stream) : nccl_fail(w->what, r);
  if (s) {
    wk_event_destroy(w->start);
    wk_event_destroy(w->end);
    wk_free(w);
    return NULL;
  }
  w->t0 = wk_retain(t0);
  w->t1 = wk_retain(t1);
  if (t0) wk_tensor_bump_version(t0);
  return &w->base;
}

static wk_dist_work *dn_all_reduce(wk_dist_group *g_, wk_tensor *t, wk_reduce_op op) {
  dnc_group *g = (dnc_group *)g_;
  ncclDataType_t dt;
  ncclRedOp_t rop;
  if (!usable("all_reduce", g) || !check_tensor("all_reduce", "tensor", g, t, &dt) ||
      !nccl_op("all_reduce", op, wk_tensor_dtype(t), &rop))
    return NULL;
  dnc_work *w = begin("all_reduce", g);
  if (!w) return NULL;
  void *p = wk_tensor_data(t);
  return end(w, N.AllReduce(p, p, (size_t)wk_tensor_numel(t), dt, rop, g->comm, g->stream.handle), t, NULL);
}

static wk_dist_work *dn_broadcast(wk_dist_group *g_, wk_tensor *t, int src) {
  dnc_group *g = (dnc_group *)g_;
  ncclDataType_t dt;
  if (!usable("broadcast", g) || !check_tensor("broadcast", "tensor", g, t, &dt)) return NULL;
  if (src < 0 || src >= g->size) {
    wk_error(WK_ERR_INDEX, "dist.nccl broadcast: src rank %d is outside the group of size %d", src, g->size);
    return NULL;
  }
  dnc_work *w = begin("broadcast", g);
  if (!w) return NULL;
  void *p = wk_tensor_data(t);
  return end(w, N.Broadcast(p, p, (size_t)wk_tensor_numel(t), dt, src, g->comm, g->stream.handle), t, NULL);
}

static bool check_pair(const char *what, dnc_group *g, wk_tensor *big, const char *bn, wk_tensor *small, const char *sn,
                       ncclDataType_t *dt) {
  ncclDataType_t d2;
  if (!check_tensor(what, bn, g, big, dt) || !check_tensor(what, sn, g, small, &d2)) return false;
  if (*dt != d2) {
    wk_error(WK_ERR_DTYPE, "dist.nccl %s: '%s' is %s but '%s' is %s", what, bn, wk_dtype_name(wk_tensor_dtype(big)), sn,
             wk_dtype_name(wk_tensor_dtype(small)));
    return false;
  }
  if (wk_tensor_numel(big) != wk_tensor_numel(small) * g->size) {
    wk_error(WK_ERR_SHAPE, "dist.nccl %s: '%s' has %lld elements; it must have %d x %lld (group size x '%s')", what, bn,
             (long long)wk_tensor_numel(big), g->size, (long long)wk_tensor_numel(small), sn);
    return false;
  }
  return true;
}

static wk_dist_work *dn_all_gather(wk_dist_group *g_, wk_tensor *out, wk_tensor *in) {
  dnc_group *g = (dnc_group *)g_;
  ncclDataType_t dt;
  if (!usable("all_gather", g) || !check_pair("all_gather", g, out, "out", in, "in", &dt)) return NULL;
  dnc_work *w = begin("all_gather", g);
  if (!w) return NULL;
  return end(
      w,
      N.AllGather(wk_tensor_data(in), wk_tensor_data(out), (size_t)wk_tensor_numel(in), dt, g->comm, g->stream.handle),
      out, in);
}

static wk_dist_work *dn_reduce_scatter(wk_dist_group *g_, wk_tensor *out, wk_tensor *in, wk_reduce_op op) {
  dnc_group *g = (dnc_group *)g_;
  ncclDataType_t dt;
  ncclRedOp_t rop;
  if (!usable("reduce_scatter", g) || !check_pair("reduce_scatter", g, in, "in", out, "out", &dt) ||
      !nccl_op("reduce_scatter", op, wk_tensor_dtype(in), &rop))
    return NULL;
  dnc_work *w = begin("reduce_scatter", g);
  if (!w) return NULL;
  return end(w,
             N.ReduceScatter(wk_tensor_data(in), wk_tensor_data(out), (size_t)wk_tensor_numel(out), dt, rop, g->comm,
                             g->stream.handle),
             out, in);
}

/* A barrier is a one-element all_reduce on the device, as in PyTorch. */
static wk_dist_work *dn_barrier(wk_dist_group *g_) {
  dnc_group *g = (dnc_group *)g_;
  if (!usable("barrier", g)) return NULL;
  wk_tensor *one = wk_scope_keep(wk_zeros(WK_SHAPE(1), (wk_options){.dtype = WK_F32, .device = g->dev}));
  wk_dist_work *w = one ? dn_all_reduce(g_, one, WK_REDUCE_SUM) : NULL;
  wk_unref(one);
  return w;
}

static wk_dist_work *p2p(const char *what, bool send, dnc_group *g, wk_tensor *t, int peer) {
  ncclDataType_t dt;
  if (!usable(what, g) || !check_tensor(what, "tensor", g, t, &dt)) return NULL;
  if (peer < 0 || peer >= g->size || peer == g->rank) {
    wk_error(peer == g->rank ? WK_ERR_INVALID_ARG : WK_ERR_INDEX, "dist.nccl %s: peer rank %d is %s", what, peer,
             peer == g->rank ? "this rank" : "outside the group");
    return NULL;
  }
  dnc_work *w = begin(what, g);
  if (!w) return NULL;
  size_t n = (size_t)wk_tensor_numel(t);
  ncclResult_t r = send ? N.Send(wk_tensor_data(t), n, dt, peer, g->comm, g->stream.handle)
                        : N.Recv(wk_tensor_data(t), n, dt, peer, g->comm, g->stream.handle);
  return end(w, r, send ? NULL : t, send ? t : NULL);
}

/* NCCL has no tags: operations between two ranks match in order. */
static wk_dist_work *dn_send(wk_dist_group *g, wk_tensor *t, int dst, int tag) {
  (void)tag;
  return p2p("send", true, (dnc_group *)g, t, dst);
}
static wk_dist_work *dn_recv(wk_dist_group *g, wk_tensor *t, int src, int tag) {
  (void)tag;
  return p2p("recv", false, (dnc_group *)g, t, src);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static wk_status dn_wait(wk_dist_work *w_, double timeout_s) {
  dnc_work *w = (dnc_work *)w_;
  if (!w) return wk_error(WK_ERR_NULL, "dist.nccl wait: the work is NULL");
  if (timeout_s != timeout_s) return wk_error(WK_ERR_INVALID_ARG, "dist.nccl wait: timeout_s is NaN");
  if (timeout_s <= 0) timeout_s = w->g->timeout_s;
  double t0 = now_s();
  while (!w->done) {
    bool done = false;
    wk_status s = wk_event_query(w->end, &done);
    if (s) return s;
    if (done) {
      w->done = true;
      break;
    }
    ncclResult_t ar = ncclSuccess;
    if (N.CommGetAsyncError(w->g->comm, &ar) == ncclSuccess && ar != ncclSuccess && ar != ncclInProgress)
      return nccl_fail(w->what, ar);
    if (now_s() - t0 > timeout_s)
      return wk_error(WK_ERR_STATE, "dist.nccl: %s (rank %d of %d) timed out after %g s", w->what, w->g->rank,
                      w->g->size, timeout_s);
    struct timespec ts = {0, 50000};
    nanosleep(&ts, NULL);
  }
  /* later work on the caller's stream sees the result */
  return wk_stream_wait_event(wk_current_stream(w->g->dev), w->end);
}

static bool dn_test(wk_dist_work *w_) {
  dnc_work *w = (dnc_work *)w_;
  bool done = true;
  if (w && !w->done && wk_event_query(w->end, &done) == WK_OK && done) w->done = true;
  return !w || w->done;
}

static void dn_work_free(wk_dist_work *w_) {
  dnc_work *w = (dnc_work *)w_;
  if (!w) return;
  if (!w->done && dn_wait(w_, 0) != WK_OK) {
    fprintf(stderr, "%s\n", wk_last_error_message()); /* nobody is left to read it */
    wk_clear_error();
    return; /* the stream may still use the tensors: keep them */
  }
  wk_event_destroy(w->start);
  wk_event_destroy(w->end);
  wk_unref(w->t0);
  wk_unref(w->t1);
  wk_free(w);
}

static double dn_work_seconds(const wk_dist_work *w_) {
  const dnc_work *w = (const dnc_work *)w_;
  float ms = 0;
  return w && w->done && wk_event_elapsed_time(w->start, w->end, &ms) == WK_OK ? ms * 1e-3 : 0;
}

static const wk_dist_api g_api = {
    .struct_size = sizeof(wk_dist_api),
    .backend = "nccl",
    .init = dn_init,
    .world = dn_world,
    .new_group = dn_new_group,
    .group_free = dn_group_free,
    .rank = dn_rank,
    .size = dn_size,
    .timeout = dn_timeout,
    .all_reduce = dn_all_reduce,
    .broadcast = dn_broadcast,
    .all_gather = dn_all_gather,
    .reduce_scatter = dn_reduce_scatter,
    .barrier = dn_barrier,
    .send = dn_send,
    .recv = dn_recv,
    .wait = dn_wait,
    .test = dn_test,
    .work_free = dn_work_free,
    .work_seconds = dn_work_seconds,
};

static wk_status init(void) {
  return wk_service_register(WK_DIST_SERVICE_PREFIX "nccl", WK_DIST_API_VERSION, &g_api);
}

static void shutdown_(void) {
  if (!g_world) return;
  if (g_world->comm) N.CommDestroy(g_world->comm);
  wk_stream_destroy(g_world->stream);
  wk_free(g_world);
  g_world = NULL;
}

WK_PLUGIN_DEFINE("dist-nccl", "0.1.0", "NCCL collectives on cuda tensors (service \"dist.nccl\")", init, shutdown_)
