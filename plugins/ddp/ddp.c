/* ddp plugin: DistributedDataParallel (the "ddp" service of abi/wick/dist.h),
 * written on the dist service alone, so it works on any backend.
 *
 * Parameters that require grad are packed, in reverse registration order
 * (roughly the order backward produces their gradients), into flat buckets
 * of one dtype: the first of at most 1 MiB, the others of bucket_cap_mb (25)
 * — PyTorch's layout. A post-accumulate-grad hook copies each gradient into
 * its bucket; a bucket whose gradients are all in is all-reduced (averaged)
 * asynchronously at once, in bucket order, while backward goes on. A
 * callback queued on the autograd engine (wk_autograd_queue_callback) runs
 * when backward's graph is done: it starts what is left (zeros for unused
 * parameters under find_unused_parameters), waits, and copies the averages
 * back into .grad.
 *
 * Hooks cannot be removed from tensors, so they carry a slot number and a
 * generation rather than a pointer: after the DDP module dies its hooks find
 * their slot gone and do nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wick/sdk.h> /* first: it routes the wk_* calls of the headers below */
#include <wick/dist.h>

#define DDP_SLOTS 256
#define DDP_FIRST_BUCKET_BYTES (1 << 20)
#define DDP_MAX_PARAMS (1 << 20)

typedef struct {
  wk_tensor *p; /* borrowed from the module */
  const char *name;
  int bucket;
  int64_t offset, numel;
  bool ready; /* gradient copied into the bucket in this backward */
} ddp_param;

typedef struct {
  wk_dtype dtype;
  int64_t numel;
  wk_tensor *flat;
  int pending; /* parameters still to come in this backward */
  wk_dist_work *work;
} ddp_bucket;

typedef struct {
  int slot;
  uint32_t gen;
  wk_module *inner; /* the child "module" */
  wk_dist_group *g;
  double cap_mb;
  bool find_unused, broadcast_buffers;
  ddp_param *ps;
  int np;
  ddp_bucket *bs;
  int nb;
  wk_tensor *used; /* i32 [np]: locally used flags, all-reduced (max) under find_unused */
  wk_dist_work *used_work;
  bool sync;     /* false inside no_sync */
  bool expect;   /* a training forward prepared a backward */
  bool queued;   /* the end-of-backward callback is queued */
  int next;      /* next bucket to start */
  wk_status err; /* a failure inside a hook, reported by the callback */
  char errmsg[512];
  wk_ddp_stats stats;
} ddp_state;

static ddp_state *g_slots[DDP_SLOTS];
static uint32_t g_gen[DDP_SLOTS];

static void *encode(int slot, uint32_t gen, int i) {
  return (void *)(uintptr_t)(((uint64_t)gen << 32) | ((uint64_t)slot << 20) | (uint64_t)i);
}

static void fail(ddp_state *st, wk_status s, const char *msg) {
  if (st->err) return;
  st->err = s;
  snprintf(st->errmsg, sizeof st->errmsg, "%s", msg);
}

/* Starts every ready bucket not started yet, in bucket order. */
static void launch_ready(ddp_state *st) {
  while (!st->err && st->next < st->nb && st->bs[st->next].pending == 0) {
    ddp_bucket *b = &st->bs[st->next];
    b->work = wk_dist_all_reduce_async(st->g, b->flat, WK_REDUCE_AVG);
    if (!b->work) {
      char m[512];
      snprintf(m, sizeof m, "ddp: starting the all-reduce of bucket %d: %s", st->next, wk_last_error_message());
      fail(st, wk_last_error(), m);
      wk_clear_error();
      return;
    }
    st->next++;
  }
}

/* Copies p's gradient (or zeros) into its bucket slice. */
static wk_status fill_slice(ddp_state *st, ddp_param *pp, bool zeros) {
  ddp_bucket *b = &st->bs[pp->bucket];
  wk_tensor *slice = wk_narrow(b->flat, 0, pp->offset, pp->numel);
  wk_tensor *g = zeros ? NULL : wk_tensor_grad(pp->p);
  wk_tensor *flat = g ? wk_reshape(g, (int64_t[]){pp->numel}, 1) : NULL;
  wk_status s = WK_OK;
  if (!slice || (g && !flat))
    s = wk_last_error();
  else if (!zeros && !g)
    s = wk_error(WK_ERR_STATE, "ddp: parameter '%s' has no .grad after its hook", pp->name);
  else if (!(zeros ? wk_zero_(slice) : wk_copy_(slice, flat)))
    s = wk_last_error();
  wk_release(flat);
  wk_release(g);
  wk_release(slice);
  return s;
}

static wk_status finish_backward(void *user);

static void hook(void *user, wk_tensor *param) {
  (void)param;
  uint64_t u = (uint64_t)(uintptr_t)user;
  int slot = (int)((u >> 20) & 0xfff), i = (int)(u & 0xfffff);
  uint32_t gen = (uint32_t)(u >> 32);
  ddp_state *st = slot < DDP_SLOTS ? g_slots[slot] : NULL;
  if (!st || g_gen[slot] != gen || !st->sync || !st->expect || i >= st->np) return;
  ddp_param *pp = &st->ps[i];
  if (!st->queued) {
    if (wk_autograd_queue_callback(finish_backward, st) != WK_OK) {
      fail(st, wk_last_error(), wk_last_error_message());
      wk_clear_error();
      return;
    }
    st->queued = true;
  }
  if (pp->ready) {
    char m[256];
    snprintf(m, sizeof m, "ddp: parameter '%s' received its gradient twice in one backward (DDP reduces each once)",
             pp->name);
    fail(st, WK_ERR_AUTOGRAD, m);
    return;
  }
  if (fill_slice(st, pp, false) != WK_OK) {
    fail(st, wk_last_error(), wk_last_error_message());
    wk_clear_error();
    return;
  }
  pp->ready = true;
  if (st->used) ((int32_t *)wk_tensor_data(st->used))[i] = 1;
  st->bs[pp->bucket].pending--;
  launch_ready(st);
}

static void reset_iteration(ddp_state *st) {
  for (int i = 0; i < st->np; i++) st->ps[i].ready = false;
  for (int b = 0; b < st->nb; b++) {
    st->bs[b].pending = 0;
    wk_dist_work_free(st->bs[b].work);
    st->bs[b].work = NULL;
  }
  for (int i = 0; i < st->np; i++) st->bs[st->ps[i].bucket].pending++;
  wk_dist_work_free(st->used_work);
  st->used_work = NULL;
  if (st->used) memset(wk_tensor_data(st->used), 0, sizeof(int32_t) * (size_t)st->np);
  st->next = 0;
  st->queued = false;
  st->expect = false;
  st->err = WK_OK;
  st->errmsg[0] = 0;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* End of backward: start what is left, wait, copy the averages into .grad. */
static wk_status finish_backward(void *user) {
  ddp_state *st = user;
  wk_status s = WK_OK;
  if (!st->err) {
    for (int i = 0; i < st->np && !st->err; i++) {
      ddp_param *pp = &st->ps[i];
      if (pp->ready) continue;
      if (!st->find_unused) {
        char m[512];
        snprintf(m, sizeof m,
                 "ddp: parameter '%s' received no gradient in this backward; wrap with find_unused_parameters = true "
                 "when some parameters take no part in the loss",
                 pp->name);
        fail(st, WK_ERR_AUTOGRAD, m);
        break;
      }
      if (fill_slice(st, pp, true) != WK_OK) {
        fail(st, wk_last_error(), wk_last_error_message());
        wk_clear_error();
        break;
      }
      pp->ready = true;
      st->bs[pp->bucket].pending--;
    }
    launch_ready(st);
    if (!st->err && st->used) {
      st->used_work = wk_dist_all_reduce_async(st->g, st->used, WK_REDUCE_MAX);
      if (!st->used_work) {
        fail(st, wk_last_error(), wk_last_error_message());
        wk_clear_error();
      }
    }
  }
  /* Wait for everything started, even after a failure: the peers run it too. */
  double t0 = now_s();
  for (int b = 0; b < st->nb; b++)
    if (st->bs[b].work && wk_dist_wait(st->bs[b].work, 0) != WK_OK) {
      fail(st, wk_last_error(), wk_last_error_message());
      wk_clear_error();
    }
  if (st->used_work && wk_dist_wait(st->used_work, 0) != WK_OK) {
    fail(st, wk_last_error(), wk_last_error_message());
    wk_clear_error();
  }
  st->stats.exposed_s += now_s() - t0;
  for (int b = 0; b < st->nb; b++)
    if (st->bs[b].work) st->stats.comm_s += st->bs[b].work->api->work_seconds(st->bs[b].work);
  const int32_t *used = st->used ? wk_tensor_data(st->used) : NULL;
  for (int i = 0; i < st->np && !st->err; i++) {
    ddp_param *pp = &st->ps[i];
    if (used && !used[i]) continue; /* no rank used it: its .grad stays as it is */
    wk_tensor *slice = wk_narrow(st->bs[pp->bucket].flat, 0, pp->offset, pp->numel);
    wk_tensor *view = slice ? wk_view(slice, wk_tensor_sizes(pp->p), wk_tensor_dim(pp->p)) : NULL;
    wk_tensor *g = wk_tensor_grad(pp->p);
    wk_tensor *c = NULL;
    if (!view)
      s = wk_last_error();
    else if (g)
      s = wk_copy_(g, view) ? WK_OK : wk_last_error();
    else
      s = (c = wk_clone(view)) ? wk_tensor_set_grad(pp->p, c) : wk_last_error();
    wk_release(c);
    wk_release(g);
    wk_release(view);
    wk_release(slice);
    if (s) {
      fail(st, s, wk_last_error_message());
      wk_clear_error();
    }
  }
  st->stats.syncs++;
  wk_status err = st->err;
  char msg[512];
  snprintf(msg, sizeof msg, "%s", st->errmsg);
  reset_iteration(st);
  return err ? wk_error(err, "%s", msg) : WK_OK;
}

/* ---- the module ---- */
static ddp_state *state_of(const char *what, wk_module *m) {
  ddp_state *st = m ? wk_module_state(m) : NULL;
  for (int i = 0; st && i < DDP_SLOTS; i++)
    if (g_slots[i] == st) return st;
  wk_error(m ? WK_ERR_INVALID_ARG : WK_ERR_NULL, "ddp %s: %s", what,
           m ? "the module is not a DistributedDataParallel wrapper (wk_ddp_wrap)" : "the module is NULL");
  return NULL;
}

static wk_status broadcast_buffers(ddp_state *st) {
  int nbuf = wk_module_named_buffers(st->inner, NULL, NULL, 0);
  if (nbuf <= 0 || wk_dist_size(st->g) < 2) return WK_OK;
  wk_tensor **bufs = wk_calloc((size_t)nbuf, sizeof *bufs);
  wk_dist_work **ws = wk_calloc((size_t)nbuf, sizeof *ws);
  wk_status s = bufs && ws ? WK_OK : wk_error(WK_ERR_NO_MEMORY, "ddp: out of memory");
  if (!s) wk_module_named_buffers(st->inner, NULL, bufs, nbuf);
  for (int i = 0; i < nbuf && !s; i++)
    if (!(ws[i] = wk_dist_broadcast_async(st->g, bufs[i], 0))) s = wk_last_error();
  for (int i = 0; ws && i < nbuf; i++) {
    if (ws[i] && wk_dist_wait(ws[i], 0) != WK_OK && !s) s = wk_last_error();
    wk_dist_work_free(ws[i]);
  }
  wk_free(bufs);
  wk_free(ws);
  return s;
}

static wk_tensor *ddp_forward(wk_module *self, wk_tensor *const *in, int n) {
  ddp_state *st = wk_module_state(self);
  bool training = wk_module_is_training(self);
  if (st->queued) reset_iteration(st); /* the last backward failed before its end: drop its half-done reduction */
  if (training && st->broadcast_buffers && broadcast_buffers(st) != WK_OK) return NULL;
  if (training && wk_grad_enabled() && st->sync) st->expect = true;
  return wk_module_forward_n(st->inner, in, n);
}

static void ddp_destroy(void *state) {
  ddp_state *st = state;
  if (!st) return;
  if (st->slot >= 0) {
    g_slots[st->slot] = NULL;
    g_gen[st->slot]++;
  }
  for (int b = 0; b < st->nb; b++) {
    wk_dist_work_free(st->bs[b].work);
    wk_unref(st->bs[b].flat);
  }
  wk_dist_work_free(st->used_work);
  wk_unref(st->used);
  wk_free(st->bs);
  wk_free(st->ps);
  wk_free(st);
}

static char *ddp_extra(const wk_module *self) {
  ddp_state *st = wk_module_state(self);
  char *s = wk_malloc(160);
  if (s)
    snprintf(s, 160, "world_size=%d, buckets=%d, bucket_cap_mb=%g, find_unused_parameters=%s", wk_dist_size(st->g),
             st->nb, st->cap_mb, st->find_unused ? "True" : "False");
  return s;
}

static const wk_module_class DDP_CLASS = {
    .struct_size = sizeof(wk_module_class),
    .name = "DistributedDataParallel",
    .forward = ddp_forward,
    .destroy = ddp_destroy,
    .extra_repr = ddp_extra,
};

/* Every rank must wrap the same model: compare parameter counts and sizes. */
static wk_status verify_shapes(ddp_state *st, wk_tensor **all, int nall) {
  int S = wk_dist_size(st->g);
  int64_t mine[2] = {nall, 0};
  for (int i = 0; i < nall; i++) mine[1] = mine[1] * 31 + wk_tensor_numel(all[i]) * 7 + wk_tensor_dim(all[i]);
  wk_tensor *in = wk_tensor_from_data(mine, WK_I64, WK_SHAPE(2));
  wk_tensor *out = wk_empty(WK_SHAPE(S, 2), (wk_options){.dtype = WK_I64});
  wk_status s = in && out ? wk_dist_all_gather(st->g, out, in) : wk_last_error();
  const int64_t *v = s ? NULL : wk_tensor_data(out);
  for (int r = 0; v && r < S && !s; r++)
    if (v[2 * r] != mine[0] || v[2 * r + 1] != mine[1])
      s = wk_error(WK_ERR_INVALID_ARG,
                   "ddp wrap: rank %d holds a different model (%lld parameters) than rank %d (%lld parameters, or "
                   "different shapes): every rank must wrap the same model",
                   r, (long long)v[2 * r], wk_dist_rank(st->g), (long long)mine[0]);
  wk_release(in);
  wk_release(out);
  return s;
}

static wk_status build_buckets(ddp_state *st) {
  double cap = st->cap_mb * 1024 * 1024;
  st->bs = wk_calloc((size_t)(st->np ? st->np : 1), sizeof *st->bs);
  if (!st->bs) return wk_error(WK_ERR_NO_MEMORY, "ddp wrap: out of memory");
  int b = -1;
  double bytes = 0;
  for (int i = st->np - 1; i >= 0; i--) { /* reverse registration order */
    ddp_param *pp = &st->ps[i];
    wk_dtype dt = wk_tensor_dtype(pp->p);
    double pb = (double)pp->numel * (double)wk_dtype_size(dt);
    double limit = b <= 0 ? (cap < DDP_FIRST_BUCKET_BYTES ? cap : DDP_FIRST_BUCKET_BYTES) : cap;
    if (b < 0 || st->bs[b].dtype != dt || (bytes > 0 && bytes + pb > limit)) {
      b++;
      st->bs[b].dtype = dt;
      bytes = 0;
    }
    pp->bucket = b;
    pp->offset = st->bs[b].numel;
    st->bs[b].numel += pp->numel;
    st->bs[b].pending++;
    bytes += pb;
  }
  st->nb = b + 1;
  for (int k = 0; k < st->nb; k++) {
    ddp_param *first = NULL;
    for (int i = 0; i < st->np && !first; i++)
      if (st->ps[i].bucket == k) first = &st->ps[i];
    /* the module's own tensors: kept out of the caller's scope */
    st->bs[k].flat = wk_scope_keep(wk_zeros(
        WK_SHAPE(st->bs[k].numel), (wk_options){.dtype = st->bs[k].dtype, .device = wk_tensor_device(first->p)}));
    if (!st->bs[k].flat) return wk_last_error();
    st->stats.bucket_bytes += st->bs[k].numel * (int64_t)wk_dtype_size(st->bs[k].dtype);
  }
  st->stats.buckets = st->nb;
  return WK_OK;
}

static wk_module *ddp_wrap(wk_module *module, wk_dist_group *g, const wk_ddp_opts *o) {
  if (!module || !g) {
    if (!wk_last_error()) wk_error(WK_ERR_NULL, "ddp wrap: the %s is NULL", module ? "group" : "module");
    return NULL;
  }
  if (wk_dist_rank(g) < 0) {
    wk_error(WK_ERR_STATE, "ddp wrap: this process is not a member of the group");
    return NULL;
  }
  wk_ddp_opts d = {0};
  if (o) memcpy(&d, o, o->struct_size < sizeof d ? o->struct_size : sizeof d);
  if (d.bucket_cap_mb < 0 || d.bucket_cap_mb != d.bucket_cap_mb) {
    wk_error(WK_ERR_INVALID_ARG, "ddp wrap: bucket_cap_mb must be positive (0 for 25), got %g", d.bucket_cap_mb);
    return NULL;
  }
  int slot = -1;
  for (int i = 0; i < DDP_SLOTS && slot < 0; i++)
    if (!g_slots[i]) slot = i;
  if (slot < 0) {
    wk_error(WK_ERR_STATE, "ddp wrap: more than %d DistributedDataParallel modules alive", DDP_SLOTS);
    return NULL;
  }
  int nall = wk_module_named_parameters(module, NULL, NULL, 0);
  if (nall > DDP_MAX_PARAMS) {
    wk_error(WK_ERR_INVALID_ARG, "ddp wrap: %d parameters; at most %d", nall, DDP_MAX_PARAMS);
    return NULL;
  }
  ddp_state *st = wk_calloc(1, sizeof *st);
  const char **names = wk_calloc((size_t)(nall ? nall : 1), sizeof *names);
  wk_tensor **all = wk_calloc((size_t)(nall ? nall : 1), sizeof *all);
  if (st) st->ps = wk_calloc((size_t)(nall ? nall : 1), sizeof *st->ps);
  if (!st || !names || !all || !st->ps) {
    wk_error(WK_ERR_NO_MEMORY, "ddp wrap: out of memory");
    wk_free(names);
    wk_free(all);
    if (st) wk_free(st->ps);
    wk_free(st);
    return NULL;
  }
  st->slot = -1;
  st->inner = module;
  st->g = g;
  st->cap_mb = d.bucket_cap_mb > 0 ? d.bucket_cap_mb : 25;
  st->find_unused = d.find_unused_parameters;
  st->broadcast_buffers = !d.no_broadcast_buffers;
  st->sync = true;
  st->stats.struct_size = sizeof st->stats;
  wk_module_named_parameters(module, names, all, nall);
  wk_status s = verify_shapes(st, all, nall);
  /* Rank 0's values everywhere: parameters, then buffers. */
  for (int i = 0; i < nall && !s; i++) s = wk_dist_broadcast(g, all[i], 0);
  if (!s && wk_dist_size(g) > 1) {
    bool keep = st->broadcast_buffers;
    st->broadcast_buffers = true;
    s = broadcast_buffers(st);
    st->broadcast_buffers = keep;
  }
  for (int i = 0; i < nall && !s; i++)
    if (wk_tensor_requires_grad(all[i])) {
      ddp_param *pp = &st->ps[st->np];
      pp->p = all[i];
      pp->name = names[i];
      pp->numel = wk_tensor_numel(all[i]);
      if (!wk_tensor_is_leaf(all[i]))
        s = wk_error(WK_ERR_INVALID_ARG, "ddp wrap: parameter '%s' is not a leaf tensor", names[i]);
      st->np++;
    }
  wk_free(names);
  wk_free(all);
  if (!s) s = build_buckets(st);
  if (!s && st->find_unused && st->np) {
    st->used = wk_scope_keep(wk_zeros(WK_SHAPE(st->np), (wk_options){.dtype = WK_I32}));
    if (!st->used) s = wk_last_error();
  }
  if (!s) {
    st->slot = slot;
    st->gen = g_gen[slot];
    for (int i = 0; i < st->np && !s; i++)
      s = wk_tensor_register_post_accumulate_grad_hook(st->ps[i].p, hook, encode(slot, st->gen, i));
  }
  wk_module *m = s ? NULL : wk_module_new(&DDP_CLASS, st);
  if (!m) {
    if (st->slot >= 0) g_gen[slot]++; /* hooks already registered turn inert */
    st->slot = -1;
    ddp_destroy(st);
    return NULL;
  }
  g_slots[slot] = st;
  if (wk_module_register_child(m, "module", module) != WK_OK) {
    wk_module_release(m);
    return NULL;
  }
  return m;
}

static wk_module *ddp_inner(wk_module *m) {
  ddp_state *st = state_of("module", m);
  return st ? st->inner : NULL;
}

static wk_status ddp_set_sync(wk_module *m, bool sync) {
  ddp_state *st = state_of(sync ? "no_sync_end" : "no_sync_begin", m);
  if (!st) return wk_last_error();
  if (st->sync == sync)
    return wk_error(WK_ERR_STATE, "ddp %s: %s", sync ? "no_sync_end" : "no_sync_begin",
                    sync ? "no no_sync region is open" : "a no_sync region is already open");
  st->sync = sync;
  if (!sync) st->expect = false;
  return WK_OK;
}

static wk_status ddp_stats(wk_module *m, wk_ddp_stats *out) {
  ddp_state *st = state_of("stats", m);
  if (!st) return wk_last_error();
  if (!out) return wk_error(WK_ERR_NULL, "ddp stats: argument 'out' is NULL");
  size_t n = out->struct_size && out->struct_size < sizeof *out ? out->struct_size : sizeof *out;
  memcpy(out, &st->stats, n);
  out->struct_size = n;
  return WK_OK;
}

static wk_status ddp_reset_stats(wk_module *m) {
  ddp_state *st = state_of("reset_stats", m);
  if (!st) return wk_last_error();
  st->stats.syncs = 0;
  st->stats.comm_s = 0;
  st->stats.exposed_s = 0;
  return WK_OK;
}

static const wk_ddp_api g_api = {
    .struct_size = sizeof(wk_ddp_api),
    .wrap = ddp_wrap,
    .inner = ddp_inner,
    .set_sync = ddp_set_sync,
    .stats = ddp_stats,
    .reset_stats = ddp_reset_stats,
};

static wk_status init(void) {
  return wk_service_register(WK_DDP_SERVICE, WK_DDP_API_VERSION, &g_api);
}

WK_PLUGIN_DEFINE("ddp", "0.1.0", "DistributedDataParallel on the dist service (service \"ddp\")", init, NULL)
