/* Tracing: the dispatch layer at WK_LEVEL_TRACE records every op a program
 * calls (the outermost call only: what a composite runs inside is its own
 * business) into a wk_graph, then the program runs again on the meta device
 * with other values of each dynamic dim, and every int that changed is fitted
 * to a symbolic dim (graph_sym.c). Tensors are known by a per-trace map from
 * the handle to its graph value; the map holds a reference, so a handle
 * cannot be freed and its address reused while the trace runs. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"
#include "meta.h"

_Thread_local void *wk__tl_trace;

static wk_layer *g_layer;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_active; /* traces running on any thread: the layer is on while > 0 */

#define MAX_INPUTS 64
#define MAX_OUTPUTS 64

typedef struct tmap {
  const wk_tensor **keys;
  int *vals;
  wk_tensor **meta; /* the meta twin of a key (to_meta runs), or NULL */
  int n, cap;
} tmap;

typedef struct trace_state {
  wk_graph *g;
  wk_module *root;
  int nparams;
  const char **pnames;
  wk_tensor **ptensors;
  bool *pbuffer;
  tmap map;
  bool to_meta;     /* run every op on the meta device (probes, meta traces) */
  bool training;    /* wk_trace_training: recorded below autograd, backward included */
  wk_device device; /* where the trace's values logically live */
  int nested;
  bool failed;
  wk_status fail_code;
  char fail_msg[1400];
} trace_state;

/* ---- the handle -> value map ---- */
static size_t hash_ptr(const void *p, int cap) {
  uintptr_t x = (uintptr_t)p;
  x ^= x >> 17;
  x *= 0xed5ad4bbu;
  x ^= x >> 11;
  return (size_t)x & (size_t)(cap - 1);
}

static int map_find(const tmap *m, const wk_tensor *t) {
  if (!m->cap) return -1;
  for (size_t i = hash_ptr(t, m->cap);; i = (i + 1) & (size_t)(m->cap - 1)) {
    if (!m->keys[i]) return -1;
    if (m->keys[i] == t) return (int)i;
  }
}

static bool map_grow(tmap *m) {
  int cap = m->cap ? m->cap * 2 : 256;
  const wk_tensor **k = wk_calloc((size_t)cap, sizeof *k);
  int *v = wk_calloc((size_t)cap, sizeof *v);
  wk_tensor **mt = wk_calloc((size_t)cap, sizeof *mt);
  if (!k || !v || !mt) {
    free(k);
    free(v);
    free(mt);
    return false;
  }
  for (int i = 0; i < m->cap; i++) {
    if (!m->keys[i]) continue;
    size_t j = hash_ptr(m->keys[i], cap);
    while (k[j]) j = (j + 1) & (size_t)(cap - 1);
    k[j] = m->keys[i];
    v[j] = m->vals[i];
    mt[j] = m->meta[i];
  }
  free(m->keys);
  free(m->vals);
  free(m->meta);
  m->keys = k;
  m->vals = v;
  m->meta = mt;
  m->cap = cap;
  return true;
}

/* Maps t to value v (replacing an earlier mapping); retains t the first time. */
static bool map_set(tmap *m, wk_tensor *t, int v) {
  int i = map_find(m, t);
  if (i >= 0) {
    m->vals[i] = v;
    return true;
  }
  if ((m->n + 1) * 2 > m->cap && !map_grow(m)) return false;
  size_t j = hash_ptr(t, m->cap);
  while (m->keys[j]) j = (j + 1) & (size_t)(m->cap - 1);
  m->keys[j] = wk_retain(t);
  m->vals[j] = v;
  m->meta[j] = NULL;
  m->n++;
  return true;
}

static void map_free(tmap *m) {
  for (int i = 0; i < m->cap; i++)
    if (m->keys[i]) {
      wk_unref((wk_tensor *)m->keys[i]); /* keys include the caller's inputs: their scope keeps its reference */
      if (m->meta[i]) wk_release(m->meta[i]);
    }
  free(m->keys);
  free(m->vals);
  free(m->meta);
  memset(m, 0, sizeof *m);
}

/* ---- failure ---- */
static void fail(trace_state *ts, wk_status code, const char *msg) {
  if (ts->failed) return;
  ts->failed = true;
  ts->fail_code = code;
  snprintf(ts->fail_msg, sizeof ts->fail_msg, "%s", msg);
}

/* The module path of the running forward, relative to the traced module. */
static void module_path(const trace_state *ts, char *buf, size_t n) {
  buf[0] = 0;
  wk_module *stack[64];
  int depth = wk_module_call_stack(stack, 64);
  if (depth > 64) depth = 64;
  int r = 0;
  if (ts->root) {
    r = -1;
    for (int i = 0; i < depth && r < 0; i++)
      if (stack[i] == ts->root) r = i;
    if (r < 0) return;
  }
  size_t k = 0;
  for (int i = r + 1; i < depth; i++) {
    const char *names[256];
    wk_module *kids[256];
    int nk = wk_module_named_children(stack[i - 1], names, kids, 256);
    const char *nm = "?";
    for (int j = 0; j < nk && j < 256; j++)
      if (kids[j] == stack[i]) nm = names[j];
    k += (size_t)snprintf(buf + k, k < n ? n - k : 0, "%s%s", k ? "." : "", nm);
    if (k >= n) break;
  }
}

static const char *value_origin(const trace_state *ts, int v, char *buf, size_t n) {
  const gvalue *p = &ts->g->vals[v];
  if (p->kind == WK_GV_NODE) {
    const gnode *nd = &ts->g->nodes[p->producer];
    snprintf(buf, n, "'%s' (made by %s%s%s%s)", p->name, wk_op_name(nd->op), *nd->path ? " in '" : "", nd->path,
             *nd->path ? "'" : "");
  } else {
    snprintf(buf, n, "input '%s'", p->name);
  }
  return buf;
}

void wk__trace_note_read(const wk_tensor *t, const char *what) {
  trace_state *ts = wk__tl_trace;
  if (!ts || ts->nested || !t || ts->failed) return;
  int i = map_find(&ts->map, t);
  if (i < 0) return;
  int v = ts->map.vals[i];
  int kind = ts->g->vals[v].kind;
  if (kind != WK_GV_NODE && kind != WK_GV_INPUT) return; /* parameters and constants do not depend on the inputs */
  char path[256], origin[384], msg[1400];
  module_path(ts, path, sizeof path);
  snprintf(msg, sizeof msg,
           "trace: %s%s%s%s reads the data of %s, so what follows depends on the input's values; a program that "
           "reads tensor data (a branch on a tensor's value, item()) cannot be traced",
           what, *path ? " in '" : "", path, *path ? "'" : "", value_origin(ts, v, origin, sizeof origin));
  fail(ts, WK_ERR_UNSUPPORTED, msg);
}

/* ---- values of argument tensors ---- */
static int param_index(const trace_state *ts, const wk_tensor *t) {
  for (int i = 0; i < ts->nparams; i++)
    if (ts->ptensors[i] == t) return i;
  return -1;
}

/* Another handle on a known value's data with the same geometry (autograd
 * saves results and hands out gradients through fresh handles: detach,
 * alias) is that value. */
static int alias_of(const trace_state *ts, const wk_tensor *t) {
  int best = -1;
  for (int i = 0; i < ts->map.cap; i++) {
    const wk_tensor *k = ts->map.keys[i];
    if (!k || k->storage != t->storage || k->dtype != t->dtype || k->ndim != t->ndim || k->offset != t->offset) continue;
    if (memcmp(k->sizes, t->sizes, sizeof *t->sizes * (size_t)t->ndim) ||
        memcmp(k->strides, t->strides, sizeof *t->strides * (size_t)t->ndim))
      continue;
    if (best < 0 || ts->map.vals[i] < best) best = ts->map.vals[i]; /* the earliest: the same in every run */
  }
  return best;
}

static int value_of(trace_state *ts, wk_tensor *t) {
  int i = map_find(&ts->map, t);
  if (i >= 0) return ts->map.vals[i];
  int p = param_index(ts, t), v = p < 0 ? alias_of(ts, t) : -1;
  if (v >= 0) {
    if (!map_set(&ts->map, t, v)) return wk_error(WK_ERR_NO_MEMORY, "trace: out of memory"), -1;
    return v;
  }
  if (p >= 0)
    v = wk_graph_add_param(ts->g, ts->pnames[p], t, ts->pbuffer[p]);
  else
    v = wk_graph_add_const(ts->g, t);
  if (v < 0) return -1;
  if (ts->to_meta) ts->g->vals[v].device = ts->device;
  if (!map_set(&ts->map, t, v)) {
    wk_error(WK_ERR_NO_MEMORY, "trace: out of memory");
    return -1;
  }
  return v;
}

/* The tensor an op runs on: t itself, or on to_meta runs its meta twin. */
static wk_tensor *run_tensor(trace_state *ts, wk_tensor *t) {
  if (!ts->to_meta || wk__device_norm(t->storage->device).type == WK_DEVICE_META) return t;
  int i = map_find(&ts->map, t);
  if (i < 0) return NULL;
  if (!ts->map.meta[i]) {
    wk_options o = {0};
    o.dtype = t->dtype;
    o.device = (wk_device){WK_DEVICE_META, 0};
    ts->map.meta[i] = wk_empty_strided(t->sizes, t->strides, t->ndim, o);
    if (ts->training && ts->map.meta[i] && wk__requires_grad(t)) wk_tensor_set_requires_grad(ts->map.meta[i], true);
  }
  return ts->map.meta[i];
}

/* ---- the layer ---- */
static void free_gargs(wk_garg *ga, int n) {
  for (int i = 0; i < n; i++) wk__garg_free(&ga[i]);
  free(ga);
}

/* Records one op call (the outermost: ops a kernel or composite runs inside
 * see ts->nested > 0 and pass). */
static wk_status record_op(trace_state *ts, wk_layer *self, wk_op *op, const wk_value *args, wk_value *outs) {
  const wk__schema *s = wk__op_schema(op);
  int nargs = s->nargs;
  wk_garg *ga = wk_calloc((size_t)(nargs ? nargs : 1), sizeof *ga);
  wk_value sub[WK_MAX_ARGS];
  wk_tensor **lists[WK_MAX_ARGS] = {0};
  bool has_tensor = false;
  if (!ga) return wk_error(WK_ERR_NO_MEMORY, "trace: out of memory");
  wk_status st = WK_OK;
  for (int i = 0; i < nargs && !st; i++) {
    const wk_value *a = &args[i];
    sub[i] = *a;
    ga[i].tag = a->tag;
    ga[i].len = a->len;
    switch (a->tag) {
      case WK_V_TENSOR: {
        has_tensor = true;
        int v = value_of(ts, a->u.t);
        wk_tensor *rt = v < 0 ? NULL : run_tensor(ts, a->u.t);
        if (v < 0 || !rt) st = wk_last_error();
        ga[i].u.v = v;
        sub[i].u.t = rt;
        break;
      }
      case WK_V_TENSORS: {
        has_tensor = true;
        int32_t *vs = wk_malloc(sizeof *vs * (size_t)(a->len ? a->len : 1));
        lists[i] = wk_malloc(sizeof *lists[i] * (size_t)(a->len ? a->len : 1));
        ga[i].u.vs = vs;
        if (!vs || !lists[i]) {
          st = wk_error(WK_ERR_NO_MEMORY, "trace: out of memory");
          break;
        }
        for (int k = 0; k < a->len && !st; k++) {
          wk_tensor *t = a->u.tensors[k];
          vs[k] = t ? value_of(ts, t) : -1;
          lists[i][k] = t ? run_tensor(ts, t) : NULL;
          if (t && (vs[k] < 0 || !lists[i][k])) st = wk_last_error();
        }
        sub[i].u.tensors = lists[i];
        break;
      }
      case WK_V_INT: ga[i].u.sym = WK_SYM_CONST(a->u.i); break;
      case WK_V_INTS: {
        wk_symdim *sy = wk_malloc(sizeof *sy * (size_t)(a->len ? a->len : 1));
        ga[i].u.syms = sy;
        if (!sy) {
          st = wk_error(WK_ERR_NO_MEMORY, "trace: out of memory");
          break;
        }
        for (int k = 0; k < a->len; k++) sy[k] = WK_SYM_CONST(a->u.ints[k]);
        break;
      }
      case WK_V_FLOAT: ga[i].u.f = a->u.f; break;
      case WK_V_BOOL: ga[i].u.b = a->u.b; break;
      case WK_V_STR:
        if (!(ga[i].u.s = wk__strdup(a->u.s))) st = wk_error(WK_ERR_NO_MEMORY, "trace: out of memory");
        break;
      case WK_V_DTYPE: ga[i].u.dtype = a->u.dtype; break;
      case WK_V_DEVICE:
        ga[i].u.device = a->u.device;
        if (ts->to_meta) sub[i].u.device = (wk_device){WK_DEVICE_META, 0};
        break;
      default: break;
    }
  }
  /* factories make their results on the meta device in to_meta runs */
  for (int i = 0; i < nargs && !st && ts->to_meta && !has_tensor; i++)
    if (s->args[i].type == WK__A_DEVICE && args[i].tag == WK_V_NONE)
      sub[i] = WK_VDEV(((wk_device){WK_DEVICE_META, 0}));
  char path[256];
  if (!st) {
    module_path(ts, path, sizeof path);
    /* a result whose size depends on the data cannot be traced */
    if (*wk__op_meta_slot(op)) {
      wk_meta_out mo[WK_MAX_OUTS];
      if (wk_op_meta(op, sub, nargs, mo) == WK_OK) {
        for (int i = 0; i < s->nouts; i++)
          if (mo[i].ndim == WK_META_DYNAMIC) {
            char msg[512];
            snprintf(msg, sizeof msg,
                     "trace: %s()%s%s%s: the size of its result depends on the data, so the program cannot be traced",
                     s->name, *path ? " in '" : "", path, *path ? "'" : "");
            fail(ts, WK_ERR_UNSUPPORTED, msg);
            st = wk_error(WK_ERR_UNSUPPORTED, "%s", msg);
            break;
          }
      } else {
        wk_clear_error(); /* the call below reports it */
      }
    }
  }
  if (!st) {
    ts->nested++;
    st = wk_layer_redispatch(self, op, sub, outs);
    ts->nested--;
  }
  for (int i = 0; i < nargs; i++) free(lists[i]);
  if (st) {
    free_gargs(ga, nargs);
    return st;
  }
  /* record the node and its results */
  int node = wk__graph_append_raw(ts->g, op, ga, nargs, path);
  if (node < 0) return wk_last_error(); /* ga freed */
  gnode *nd = &ts->g->nodes[node];
  int nres = s->returns_list ? (outs[0].tag == WK_V_TENSORS ? outs[0].len : 0) : s->nouts;
  nd->list_out = s->returns_list;
  nd->outs = wk_malloc(sizeof *nd->outs * (size_t)(nres ? nres : 1));
  if (!nd->outs) return wk_error(WK_ERR_NO_MEMORY, "trace: out of memory");
  const char *base = s->name;
  char bn[128];
  snprintf(bn, sizeof bn, "%s", base);
  char *dot = strchr(bn, '.');
  if (dot) *dot = 0;
  for (int i = 0; i < nres; i++) {
    wk_tensor *t = s->returns_list ? outs[0].u.tensors[i] : (outs[i].tag == WK_V_TENSOR ? outs[i].u.t : NULL);
    nd->outs[i] = -1;
    nd->nouts = i + 1;
    if (!t) continue;
    wk_symdim dims[WK_MAX_DIMS];
    for (int k = 0; k < t->ndim; k++) dims[k] = WK_SYM_CONST(t->sizes[k]);
    wk_device dev = ts->to_meta ? ts->device : wk__device_norm(t->storage->device);
    int v = wk__graph_add_node_value(ts->g, node, i, t->dtype, dev, t->ndim, dims, bn);
    nd = &ts->g->nodes[node];
    if (v < 0) return wk_last_error();
    nd->outs[i] = v;
    /* an in-place or out= result is the argument the program holds: later reads see the new value */
    int target = s->returns_list ? -1 : wk__op_out_target(op, i);
    wk_tensor *key = target >= 0 && args[target].tag == WK_V_TENSOR ? args[target].u.t : t;
    if (!map_set(&ts->map, key, v)) return wk_error(WK_ERR_NO_MEMORY, "trace: out of memory");
  }
  nd->nouts = nres;
  return WK_OK;
}

/* A training trace on the meta device swaps tensors for their meta twins
 * above autograd, so what autograd saves for backward is on meta too; the
 * twins map to the same graph values. */
static wk_status to_meta_above_autograd(trace_state *ts, wk_layer *self, wk_op *op, const wk_value *args,
                                        wk_value *outs) {
  const wk__schema *s = wk__op_schema(op);
  wk_value sub[WK_MAX_ARGS];
  wk_tensor **lists[WK_MAX_ARGS] = {0};
  bool has_tensor = false;
  wk_status st = WK_OK;
  for (int i = 0; i < s->nargs && !st; i++) {
    sub[i] = args[i];
    int n = args[i].tag == WK_V_TENSOR ? 1 : args[i].tag == WK_V_TENSORS ? args[i].len : 0;
    if (args[i].tag == WK_V_TENSORS && !(lists[i] = wk_malloc(sizeof *lists[i] * (size_t)(n ? n : 1)))) {
      st = wk_error(WK_ERR_NO_MEMORY, "trace: out of memory");
      break;
    }
    for (int k = 0; k < n && !st; k++) {
      wk_tensor *t = args[i].tag == WK_V_TENSOR ? args[i].u.t : args[i].u.tensors[k];
      wk_tensor *rt = NULL;
      has_tensor = true;
      if (t) {
        int v = value_of(ts, t);
        rt = v < 0 ? NULL : run_tensor(ts, t);
        if (!rt || (rt != t && !map_set(&ts->map, rt, v))) st = wk__error_pending() ? wk_last_error() : wk_error(WK_ERR_NO_MEMORY, "trace: out of memory");
      }
      if (args[i].tag == WK_V_TENSOR)
        sub[i].u.t = rt;
      else
        lists[i][k] = rt;
    }
    if (lists[i]) sub[i].u.tensors = lists[i];
    if (args[i].tag == WK_V_DEVICE) sub[i].u.device = (wk_device){WK_DEVICE_META, 0};
  }
  for (int i = 0; i < s->nargs && !st && !has_tensor; i++)
    if (s->args[i].type == WK__A_DEVICE && args[i].tag == WK_V_NONE) sub[i] = WK_VDEV(((wk_device){WK_DEVICE_META, 0}));
  if (!st) st = wk_layer_redispatch(self, op, sub, outs);
  for (int i = 0; i < s->nargs; i++) free(lists[i]);
  return st;
}

/* The forward trace: above autograd and autocast, so a graph holds the ops
 * the program called, not their backward. */
static wk_status trace_layer(wk_layer *self, void *user, wk_op *op, const wk_value *args, wk_value *outs) {
  (void)user;
  trace_state *ts = wk__tl_trace;
  if (ts && ts->training && ts->to_meta && !ts->nested) return to_meta_above_autograd(ts, self, op, args, outs);
  if (!ts || ts->training || ts->nested || (wk_op_tags(op) & WK_TAG_BACKWARD))
    return wk_layer_redispatch(self, op, args, outs);
  return record_op(ts, self, op, args, outs);
}

/* The training trace: below autograd, so it sees the forward ops autograd
 * passes down and the backward ops the engine runs. */
#define TRAINING_LEVEL 150
static wk_layer *g_train_layer;
static wk_status train_layer(wk_layer *self, void *user, wk_op *op, const wk_value *args, wk_value *outs) {
  (void)user;
  trace_state *ts = wk__tl_trace;
  if (!ts || !ts->training || ts->nested) return wk_layer_redispatch(self, op, args, outs);
  return record_op(ts, self, op, args, outs);
}

void wk__trace_init(void) {
  g_layer = wk_layer_register("trace", WK_LEVEL_TRACE, trace_layer, NULL, false);
  g_train_layer = wk_layer_register("trace_training", TRAINING_LEVEL, train_layer, NULL, false);
}

bool wk_is_tracing(void) { return wk__tl_trace != NULL; }

/* ---- running the program once ---- */
typedef struct program {
  wk_trace_fn fn;
  void *user;
  wk_module *m;
  bool training; /* output 0 is a loss: record its backward too, outputs become loss + parameter gradients */
} program;

static wk_status call_program(const program *p, wk_tensor *const *in, int n, wk_tensor **outs, int *nout) {
  if (p->m) {
    wk_tensor *r = wk_module_forward_n(p->m, in, n);
    if (!r) return wk_last_error();
    outs[0] = r;
    *nout = 1;
    return WK_OK;
  }
  *nout = 0;
  wk_status s = p->fn(p->user, in, n, outs, MAX_OUTPUTS, nout);
  if (s) {
    if (!wk__error_pending()) wk_error(s, "trace: the traced function failed without a message");
    for (int i = 0; i < *nout && i < MAX_OUTPUTS; i++) wk_release(outs[i]);
    *nout = 0;
    return wk_last_error();
  }
  if (*nout < 0 || *nout > MAX_OUTPUTS) return wk_error(WK_ERR_INVALID_ARG, "trace: the function returned %d outputs (0..%d)", *nout, MAX_OUTPUTS);
  for (int i = 0; i < *nout; i++)
    if (!outs[i]) {
      for (int k = 0; k < *nout; k++) wk_release(outs[k]);
      *nout = 0;
      return wk_error(WK_ERR_NULL, "trace: output %d of the traced function is NULL", i);
    }
  return WK_OK;
}

static void layer_on(bool on) {
  pthread_mutex_lock(&g_lock);
  g_active += on ? 1 : -1;
  wk_layer_set_enabled(g_layer, g_active > 0);
  wk_layer_set_enabled(g_train_layer, g_active > 0);
  pthread_mutex_unlock(&g_lock);
}

/* The symbols and which input dim each one names. */
typedef struct dyninfo {
  int nsyms;
  const char *names[WK__SYM_MAX];
  int64_t hints[WK__SYM_MAX];
  int sym_of[MAX_INPUTS][WK_MAX_DIMS]; /* -1: static */
} dyninfo;

/* wk_trace_training: outs[0] is the loss; its gradients with respect to
 * every parameter that requires grad (state_dict order) join the outputs,
 * computed by the engine while the trace still records. */
static wk_status add_gradients(trace_state *ts, wk_tensor **outs, int *nout) {
  if (*nout < 1 || wk_tensor_numel(outs[0]) != 1 || !wk_dtype_is_floating(outs[0]->dtype))
    return wk_error(WK_ERR_INVALID_ARG, "trace_training: the program's first output must be a one-element floating "
                    "loss (it gave %d outputs%s)", *nout, *nout ? ", the first is not" : "");
  wk_tensor *wrt[MAX_OUTPUTS], *grads[MAX_OUTPUTS];
  const char *names[MAX_OUTPUTS];
  int n = 0;
  for (int i = 0; i < ts->nparams; i++) {
    if (ts->pbuffer[i] || !wk__requires_grad(ts->ptensors[i])) continue;
    if (*nout + n >= MAX_OUTPUTS)
      return wk_error(WK_ERR_UNSUPPORTED, "trace_training: at most %d parameters and outputs", MAX_OUTPUTS);
    int k = map_find(&ts->map, ts->ptensors[i]);
    wk_tensor *rt = k >= 0 ? (ts->map.meta[k] ? ts->map.meta[k] : ts->ptensors[i]) : NULL;
    if (!rt)
      return wk_error(WK_ERR_INVALID_ARG, "trace_training: parameter '%s' is not used by the program, so it gets no gradient",
                      ts->pnames[i]);
    names[n] = ts->pnames[i];
    wrt[n++] = rt;
  }
  wk_tensor *loss = outs[0];
  wk_status st = wk_grad(&loss, 1, NULL, wrt, n, grads, NULL, true);
  if (st) return st;
  for (int i = 0; i < n; i++) {
    if (!grads[i]) {
      for (int k = 0; k < n; k++) wk_release(wk_scope_keep(grads[k])); /* wk_grad gave them to the open scope */
      return wk_error(WK_ERR_INVALID_ARG, "trace_training: parameter '%s' does not reach the loss, so it gets no gradient", names[i]);
    }
    outs[(*nout)++] = grads[i];
  }
  return WK_OK;
}

/* Records one run of the program. symvals: the symbols' values for this run
 * (its inputs are then fresh meta tensors of those sizes). */
static wk_graph *record(const program *p, wk_tensor *const *inputs, int n, const wk_trace_options *o,
                        const dyninfo *dy, const int64_t *symvals, bool probe) {
  trace_state ts;
  memset(&ts, 0, sizeof ts);
  ts.g = wk_graph_new();
  if (!ts.g) return NULL;
  ts.root = p->m ? p->m : (o ? o->module : NULL);
  ts.to_meta = probe;
  ts.training = p->training;
  ts.device = (wk_device){WK_DEVICE_CPU, 0};
  for (int i = 0; i < n; i++)
    if (i == 0 || wk__device_norm(inputs[i]->storage->device).type != WK_DEVICE_CPU) ts.device = wk__device_norm(inputs[i]->storage->device);
  if (ts.device.type == WK_DEVICE_META) ts.to_meta = true; /* a meta trace: parameters run as meta twins */
  wk_graph *g = ts.g;
  wk_tensor *ins[MAX_INPUTS] = {0}, *outs[MAX_OUTPUTS] = {0};
  int nout = 0;
  wk_status st = WK_OK;
  if (ts.root) {
    int np = wk_module_named_parameters(ts.root, NULL, NULL, 0);
    int nb = wk_module_named_buffers(ts.root, NULL, NULL, 0);
    ts.pnames = wk_calloc((size_t)(np + nb + 1), sizeof *ts.pnames);
    ts.ptensors = wk_calloc((size_t)(np + nb + 1), sizeof *ts.ptensors);
    ts.pbuffer = wk_calloc((size_t)(np + nb + 1), sizeof *ts.pbuffer);
    if (!ts.pnames || !ts.ptensors || !ts.pbuffer) {
      st = wk_error(WK_ERR_NO_MEMORY, "trace: out of memory");
    } else {
      np = wk_module_named_parameters(ts.root, ts.pnames, ts.ptensors, np);
      nb = wk_module_named_buffers(ts.root, ts.pnames + np, ts.ptensors + np, nb);
      for (int i = np; i < np + nb; i++) ts.pbuffer[i] = true;
      ts.nparams = np + nb;
    }
  }
  for (int k = 0; k < dy->nsyms && !st; k++)
    if (wk_graph_add_symbol(g, dy->names[k], dy->hints[k]) < 0) st = wk_last_error();
  for (int i = 0; i < n && !st; i++) {
    const wk_tensor *x = inputs[i];
    wk_symdim dims[WK_MAX_DIMS];
    int64_t sizes[WK_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) {
      int k = dy->sym_of[i][d];
      dims[d] = k >= 0 ? WK_SYM(k) : WK_SYM_CONST(x->sizes[d]);
      sizes[d] = k >= 0 ? symvals[k] : x->sizes[d];
    }
    const char *name = o && o->input_names ? o->input_names[i] : NULL;
    int v = wk_graph_add_input(g, name, x->dtype, ts.device, x->ndim, dims);
    if (v < 0) {
      st = wk_last_error();
      break;
    }
    if (probe) {
      wk_options opt = {0};
      opt.dtype = x->dtype;
      opt.device = (wk_device){WK_DEVICE_META, 0};
      ins[i] = wk_scope_keep(wk_empty(sizes, x->ndim, opt));
      if (!ins[i]) {
        st = wk_last_error();
        break;
      }
      if (wk__requires_grad(x)) wk_tensor_set_requires_grad(ins[i], true);
    } else {
      ins[i] = wk_retain(inputs[i]);
    }
    if (!map_set(&ts.map, ins[i], v)) st = wk_error(WK_ERR_NO_MEMORY, "trace: out of memory");
  }
  if (!st) {
    void *prev = wk__tl_trace;
    wk__tl_trace = &ts;
    layer_on(true);
    wk_scope_begin(); /* what the program leaves behind goes with it */
    st = call_program(p, ins, n, outs, &nout);
    int nprog = nout;
    if (!st && p->training) st = add_gradients(&ts, outs, &nout);
    if (st) /* the gradients failed: the program's own results still go */
      for (int i = nprog; i < nout; i++) outs[i] = NULL;
    for (int i = 0; i < nout; i++) wk_scope_keep(outs[i]); /* ours now, also wk_grad's (scope-adopted) */
    wk_scope_end();
    layer_on(false);
    wk__tl_trace = prev;
  }
  if (!st && ts.failed) st = wk_error(ts.fail_code, "%s", ts.fail_msg);
  if (!st) {
    int ov[MAX_OUTPUTS];
    for (int i = 0; i < nout && !st; i++) {
      ov[i] = value_of(&ts, outs[i]);
      if (ov[i] < 0) st = wk_last_error();
    }
    if (!st) st = wk_graph_set_outputs(g, ov, nout);
  }
  for (int i = 0; i < nout; i++) wk_release(outs[i]);
  for (int i = 0; i < n; i++) wk_unref(ins[i]);
  map_free(&ts.map);
  free(ts.pnames);
  free(ts.ptensors);
  free(ts.pbuffer);
  if (st) {
    wk_graph_release(g);
    return NULL;
  }
  return g;
}

/* ---- making the base trace symbolic ---- */
/* Every int of a graph in a fixed order: node int args, then result dims.
 * slots (when given) receives where each lives in g. */
static int collect_ints(wk_graph *g, int64_t *vals, wk_symdim **slots) {
  int k = 0;
  for (int p = 0; p < g->norder; p++) {
    gnode *n = &g->nodes[g->order[p]];
    for (int i = 0; i < n->nargs; i++) {
      wk_garg *a = &n->args[i];
      if (a->tag == WK_V_INT) {
        if (vals) vals[k] = wk_symdim_eval(a->u.sym, NULL);
        if (slots) slots[k] = &a->u.sym;
        k++;
      } else if (a->tag == WK_V_INTS) {
        for (int j = 0; j < a->len; j++, k++) {
          if (vals) vals[k] = wk_symdim_eval(a->u.syms[j], NULL);
          if (slots) slots[k] = (wk_symdim *)&a->u.syms[j];
        }
      }
    }
    for (int i = 0; i < n->nouts; i++) {
      if (n->outs[i] < 0) continue;
      gvalue *v = &g->vals[n->outs[i]];
      for (int d = 0; d < v->ndim; d++, k++) {
        if (vals) vals[k] = wk_symdim_eval(v->dims[d], NULL);
        if (slots) slots[k] = &v->dims[d];
      }
    }
  }
  return k;
}

/* Same program path? Otherwise an error naming the first difference. */
static wk_status same_structure(const wk_graph *a, const wk_graph *b, const char *what) {
  int n = a->norder < b->norder ? a->norder : b->norder;
  for (int p = 0; p < n; p++) {
    const gnode *x = &a->nodes[a->order[p]], *y = &b->nodes[b->order[p]];
    bool same = x->op == y->op && x->nargs == y->nargs && x->nouts == y->nouts;
    for (int i = 0; same && i < x->nargs; i++) {
      const wk_garg *u = &x->args[i], *w = &y->args[i];
      same = u->tag == w->tag;
      if (!same) break;
      switch (u->tag) {
        case WK_V_TENSOR: same = u->u.v == w->u.v; break;
        case WK_V_TENSORS:
          same = u->len == w->len;
          for (int j = 0; same && j < u->len; j++) same = u->u.vs[j] == w->u.vs[j];
          break;
        case WK_V_INTS: same = u->len == w->len; break;
        case WK_V_FLOAT: same = u->u.f == w->u.f || (u->u.f != u->u.f && w->u.f != w->u.f); break;
        case WK_V_BOOL: same = u->u.b == w->u.b; break;
        case WK_V_STR: same = !strcmp(u->u.s, w->u.s); break;
        case WK_V_DTYPE: same = u->u.dtype == w->u.dtype; break;
        default: break;
      }
    }
    for (int i = 0; same && i < x->nouts; i++)
      same = (x->outs[i] < 0) == (y->outs[i] < 0) &&
             (x->outs[i] < 0 || (a->vals[x->outs[i]].ndim == b->vals[y->outs[i]].ndim && a->vals[x->outs[i]].dtype == b->vals[y->outs[i]].dtype));
    if (!same)
      return wk_error(WK_ERR_UNSUPPORTED,
                      "trace: the program takes another path %s: op %d is %s%s%s%s there, %s here (a float argument, "
                      "list length or branch that depends on a dynamic dim cannot be traced symbolically)",
                      what, p, wk_op_name(y->op), *y->path ? " in '" : "", y->path, *y->path ? "'" : "", wk_op_name(x->op));
  }
  if (a->norder != b->norder)
    return wk_error(WK_ERR_UNSUPPORTED, "trace: the program runs %d ops %s, %d with the example inputs", b->norder, what,
                    a->norder);
  if (a->noutputs != b->noutputs || a->nvals != b->nvals)
    return wk_error(WK_ERR_UNSUPPORTED, "trace: the program makes other values %s", what);
  return WK_OK;
}

static wk_status symbolize(wk_graph *base, const program *p, wk_tensor *const *inputs, int n,
                           const wk_trace_options *o, const dyninfo *dy) {
  wk__sym_points pts;
  wk_status st = wk__sym_points_make(dy->hints, dy->nsyms, &pts);
  if (st) return st;
  int nint = collect_ints(base, NULL, NULL);
  int64_t *vals = wk_calloc((size_t)nint * (size_t)pts.npts + 1, sizeof *vals);
  wk_symdim **slots = wk_calloc((size_t)nint + 1, sizeof *slots);
  int64_t *col = wk_calloc((size_t)pts.npts, sizeof *col);
  if (!vals || !slots || !col) st = wk_error(WK_ERR_NO_MEMORY, "trace: out of memory");
  if (!st) collect_ints(base, vals, slots);
  for (int r = 1; r < pts.npts && !st; r++) {
    char what[256];
    size_t k = (size_t)snprintf(what, sizeof what, "when");
    for (int s = 0; s < dy->nsyms && k < sizeof what; s++)
      if (pts.v[r][s] != pts.v[0][s])
        k += (size_t)snprintf(what + k, sizeof what - k, " %s is %lld (not %lld)", dy->names[s], (long long)pts.v[r][s],
                              (long long)pts.v[0][s]);
    wk_graph *pr = record(p, inputs, n, o, dy, pts.v[r], true);
    if (!pr) {
      char msg[768];
      snprintf(msg, sizeof msg, "%s", wk_last_error_message());
      st = wk_error_replace(wk_last_error(), "trace: the program fails %s: %s", what, msg);
      break;
    }
    st = same_structure(base, pr, what);
    if (!st) collect_ints(pr, vals + (size_t)r * (size_t)nint, NULL);
    wk_graph_release(pr);
  }
  for (int i = 0; i < nint && !st; i++) {
    for (int r = 0; r < pts.npts; r++) col[r] = vals[(size_t)r * (size_t)nint + (size_t)i];
    wk_symdim d;
    if (!wk__sym_fit(&pts, col, &d)) {
      /* name the node the int belongs to */
      int node = -1, cnt = 0;
      for (int q = 0; q < base->norder && node < 0; q++) {
        wk_graph tmp = *base;
        tmp.norder = q + 1;
        cnt = collect_ints(&tmp, NULL, NULL);
        if (cnt > i) node = base->order[q];
      }
      const gnode *nd = node >= 0 ? &base->nodes[node] : NULL;
      st = wk_error(WK_ERR_UNSUPPORTED,
                    "trace: %s()%s%s%s: an integer (%lld with the example inputs) changes with the dynamic dims in a "
                    "way no symbolic dim (m*((a*S+b)/c)+d) describes",
                    nd ? wk_op_name(nd->op) : "?", nd && *nd->path ? " in '" : "", nd ? nd->path : "",
                    nd && *nd->path ? "'" : "", (long long)col[0]);
      break;
    }
    *slots[i] = d;
  }
  free(vals);
  free(slots);
  free(col);
  wk__sym_points_free(&pts);
  return st;
}

static wk_status add_guards(wk_graph *g, wk_tensor *const *inputs, int n, const dyninfo *dy) {
  wk_status st = WK_OK;
  for (int i = 0; i < n && !st; i++) {
    const wk_tensor *x = inputs[i];
    const char *nm = g->vals[g->inputs[i]].name;
    char db[48];
    st = wk__graph_add_guard(g, "input %d '%s': dtype %s, device %s, %d dims", i, nm, wk_dtype_name(x->dtype),
                             wk_device_str(wk__device_norm(x->storage->device), db, sizeof db), x->ndim);
    for (int d = 0; d < x->ndim && !st; d++)
      if (dy->sym_of[i][d] < 0)
        st = wk__graph_add_guard(g, "input %d '%s': dim %d == %lld", i, nm, d, (long long)x->sizes[d]);
  }
  for (int k = 0; k < dy->nsyms && !st; k++) st = wk__graph_add_guard(g, "s%d (%s) >= 1", k, dy->names[k]);
  return st;
}

static wk_graph *trace_common(const program *p, wk_tensor *const *inputs, int n, const wk_trace_options *o) {
  if (n < 0 || n > MAX_INPUTS || (n && !inputs)) {
    wk_error(WK_ERR_INVALID_ARG, "trace: %d inputs (0..%d, and a non-NULL array)", n, MAX_INPUTS);
    return NULL;
  }
  for (int i = 0; i < n; i++)
    if (!inputs[i]) {
      if (!wk__error_pending()) wk_error(WK_ERR_NULL, "trace: input %d is NULL", i);
      return NULL;
    }
  if (wk__tl_trace) {
    wk_error(WK_ERR_STATE, "trace: already tracing on this thread (traces do not nest)");
    return NULL;
  }
  if (o && o->struct_size < offsetof(wk_trace_options, module)) {
    wk_error(WK_ERR_ABI, "trace: options struct_size %zu is too small", o->struct_size);
    return NULL;
  }
  dyninfo dy;
  memset(&dy, 0, sizeof dy);
  memset(dy.sym_of, -1, sizeof dy.sym_of);
  int nd = o ? o->ndynamic : 0;
  if (nd < 0 || (nd && !o->dynamic)) {
    wk_error(WK_ERR_INVALID_ARG, "trace: %d dynamic dims and a NULL list", nd);
    return NULL;
  }
  for (int k = 0; k < nd; k++) {
    const wk_trace_dim *t = &o->dynamic[k];
    if (t->input < 0 || t->input >= n) {
      wk_error(WK_ERR_INDEX, "trace: dynamic dim %d names input %d, but there are %d inputs", k, t->input, n);
      return NULL;
    }
    int ndim = inputs[t->input]->ndim;
    if (t->dim < 0 || t->dim >= ndim) {
      wk_error(WK_ERR_INDEX, "trace: dynamic dim %d names dim %d of input %d, which has %d dims", k, t->dim, t->input, ndim);
      return NULL;
    }
    if (!t->name || !*t->name) {
      wk_error(WK_ERR_INVALID_ARG, "trace: dynamic dim %d has no name", k);
      return NULL;
    }
    if (dy.sym_of[t->input][t->dim] >= 0) {
      wk_error(WK_ERR_INVALID_ARG, "trace: input %d dim %d is named dynamic twice", t->input, t->dim);
      return NULL;
    }
    int64_t size = inputs[t->input]->sizes[t->dim];
    int s = -1;
    for (int j = 0; j < dy.nsyms && s < 0; j++)
      if (!strcmp(dy.names[j], t->name)) s = j;
    if (s >= 0 && dy.hints[s] != size) {
      wk_error(WK_ERR_INVALID_ARG, "trace: dim '%s' is %lld in one input and %lld in input %d", t->name,
               (long long)dy.hints[s], (long long)size, t->input);
      return NULL;
    }
    if (s < 0) {
      if (dy.nsyms == WK__SYM_MAX) {
        wk_error(WK_ERR_INVALID_ARG, "trace: at most %d dynamic dims", WK__SYM_MAX);
        return NULL;
      }
      if (size < 1) {
        wk_error(WK_ERR_INVALID_ARG, "trace: dynamic dim '%s' is %lld in the example; give an example of at least 1",
                 t->name, (long long)size);
        return NULL;
      }
      s = dy.nsyms++;
      dy.names[s] = t->name;
      dy.hints[s] = size;
    }
    dy.sym_of[t->input][t->dim] = s;
  }
  wk_graph *g = record(p, inputs, n, o, &dy, dy.hints, false);
  if (!g) return NULL;
  wk_status st = dy.nsyms ? symbolize(g, p, inputs, n, o, &dy) : WK_OK;
  wk__graph_changed(g);
  if (!st) st = add_guards(g, inputs, n, &dy);
  if (st) {
    wk_graph_release(g);
    return NULL;
  }
  return g;
}

wk_graph *wk_trace(wk_trace_fn fn, void *user, wk_tensor *const *inputs, int ninputs, const wk_trace_options *o) {
  if (!fn) {
    wk__null_arg("trace", "fn");
    return NULL;
  }
  wk_error_new_call();
  program p = {fn, user, NULL, false};
  return trace_common(&p, inputs, ninputs, o);
}

wk_graph *wk_trace_training(wk_trace_fn fn, void *user, wk_tensor *const *inputs, int ninputs, const wk_trace_options *o) {
  if (!fn || !o || !o->module) {
    wk__null_arg("trace_training", !fn ? "fn" : !o ? "opts" : "opts->module");
    return NULL;
  }
  wk_error_new_call();
  program p = {fn, user, NULL, true};
  return trace_common(&p, inputs, ninputs, o);
}

wk_graph *wk_trace_module(wk_module *m, wk_tensor *const *inputs, int ninputs, const wk_trace_options *o) {
  if (!m) {
    wk__null_arg("trace_module", "module");
    return NULL;
  }
  wk_error_new_call();
  program p = {NULL, NULL, m, false};
  return trace_common(&p, inputs, ninputs, o);
}
