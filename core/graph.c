/* The graph IR (graph.h): building, walking, validating, copying, rewriting
 * and printing. Replay, shape propagation, passes and tracing live in
 * graph_run.c, graph_passes.c and trace.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"

/* A NULL graph keeps the error that made it; a valid call starts clean (error.h). */
#define NULL_GRAPH(fn)             \
  do {                             \
    if (!g) {                      \
      wk__null_arg(fn, "graph");   \
      return -1;                   \
    }                              \
    wk_error_new_call();           \
  } while (0)

bool wk__graph_value_ok(const wk_graph *g, int v) { return g && v >= 0 && v < g->nvals && g->vals[v].kind; }
bool wk__graph_node_ok(const wk_graph *g, int n) { return g && n >= 0 && n < g->nnodes && g->nodes[n].alive; }

static bool grow(void **p, int *cap, int need, size_t elem) {
  if (need <= *cap) return true;
  int c = *cap ? *cap * 2 : 16;
  while (c < need) c *= 2;
  void *q = wk_realloc(*p, elem * (size_t)c);
  if (!q) return false;
  memset((char *)q + elem * (size_t)*cap, 0, elem * (size_t)(c - *cap));
  *p = q;
  *cap = c;
  return true;
}

static wk_status oom(const char *fn) { return wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", fn); }

wk_graph *wk_graph_new(void) {
  wk_graph *g = wk_calloc(1, sizeof *g);
  if (!g) {
    oom("graph_new");
    return NULL;
  }
  atomic_init(&g->refcount, 1);
  return g;
}

wk_graph *wk_graph_retain(wk_graph *g) {
  if (g) atomic_fetch_add(&g->refcount, 1);
  return g;
}

void wk__garg_free(wk_garg *a) {
  switch (a->tag) {
    case WK_V_TENSORS: free((void *)a->u.vs); break;
    case WK_V_INTS: free((void *)a->u.syms); break;
    case WK_V_STR: free((void *)a->u.s); break;
    default: break;
  }
  a->tag = WK_V_NONE;
}

bool wk__garg_copy(wk_garg *dst, const wk_garg *src) {
  *dst = *src;
  size_t n = src->len > 0 ? (size_t)src->len : 0;
  switch (src->tag) {
    case WK_V_TENSORS: {
      int32_t *p = wk_malloc(sizeof *p * (n ? n : 1));
      if (!p) return false;
      if (n) memcpy(p, src->u.vs, sizeof *p * n);
      dst->u.vs = p;
      break;
    }
    case WK_V_INTS: {
      wk_symdim *p = wk_malloc(sizeof *p * (n ? n : 1));
      if (!p) return false;
      if (n) memcpy(p, src->u.syms, sizeof *p * n);
      dst->u.syms = p;
      break;
    }
    case WK_V_STR:
      if (!(dst->u.s = wk__strdup(src->u.s))) return false;
      break;
    default: break;
  }
  return true;
}

static void node_free(gnode *n) {
  for (int i = 0; i < n->nargs; i++) wk__garg_free(&n->args[i]);
  free(n->args);
  free(n->outs);
  free(n->path);
  memset(n, 0, sizeof *n);
}

static void value_free(gvalue *v) {
  free(v->name);
  if (v->t) wk_unref(v->t); /* a reference the graph took: never the caller's scope's */
  memset(v, 0, sizeof *v);
}

void wk__graph_changed(wk_graph *g) {
  void *p = atomic_exchange(&g->plan, NULL);
  if (p) wk__graph_plan_free(p);
}

void wk_graph_release(wk_graph *g) {
  if (!g || atomic_fetch_sub(&g->refcount, 1) != 1) return;
  wk__graph_changed(g);
  for (int i = 0; i < g->nnodes; i++) node_free(&g->nodes[i]);
  for (int i = 0; i < g->nvals; i++) value_free(&g->vals[i]);
  for (int i = 0; i < g->nsyms; i++) free(g->syms[i].name);
  for (int i = 0; i < g->nguards; i++) free(g->guards[i]);
  for (int i = 0; i < g->nnames; i++) free(g->names[i].base);
  free(g->names);
  free(g->nodes);
  free(g->vals);
  free(g->order);
  free(g->syms);
  free(g->inputs);
  free(g->outputs);
  free(g->guards);
  free(g);
}

wk_graph *wk_graph_copy(const wk_graph *src) {
  if (!src) {
    wk__null_arg("graph_copy", "graph");
    return NULL;
  }
  wk_error_new_call();
  wk_graph *g = wk_graph_new();
  if (!g) return NULL;
  bool ok = true;
  g->vals = wk_calloc((size_t)(src->capvals ? src->capvals : 1), sizeof *g->vals);
  g->nodes = wk_calloc((size_t)(src->capnodes ? src->capnodes : 1), sizeof *g->nodes);
  g->order = wk_calloc((size_t)(src->caporder ? src->caporder : 1), sizeof *g->order);
  g->syms = wk_calloc((size_t)(src->nsyms ? src->nsyms : 1), sizeof *g->syms);
  g->inputs = wk_calloc((size_t)(src->ninputs ? src->ninputs : 1), sizeof *g->inputs);
  g->outputs = wk_calloc((size_t)(src->noutputs ? src->noutputs : 1), sizeof *g->outputs);
  g->guards = wk_calloc((size_t)(src->nguards ? src->nguards : 1), sizeof *g->guards);
  if (!g->vals || !g->nodes || !g->order || !g->syms || !g->inputs || !g->outputs || !g->guards) ok = false;
  if (ok) {
    g->capvals = src->capvals;
    g->capnodes = src->capnodes;
    g->caporder = src->caporder;
    for (int i = 0; i < src->nvals && ok; i++) {
      g->vals[i] = src->vals[i];
      g->vals[i].name = NULL;
      g->vals[i].t = NULL;
      g->nvals = i + 1;
      if (src->vals[i].name && !(g->vals[i].name = wk__strdup(src->vals[i].name))) ok = false;
      if (src->vals[i].t) g->vals[i].t = wk_retain(src->vals[i].t);
    }
    for (int i = 0; i < src->nnodes && ok; i++) {
      const gnode *s = &src->nodes[i];
      gnode *d = &g->nodes[i];
      g->nnodes = i + 1;
      d->op = s->op;
      d->alive = s->alive;
      d->list_out = s->list_out;
      d->args = wk_calloc((size_t)(s->nargs ? s->nargs : 1), sizeof *d->args);
      d->outs = wk_malloc(sizeof *d->outs * (size_t)(s->nouts ? s->nouts : 1));
      d->path = wk__strdup(s->path ? s->path : "");
      if (!d->args || !d->outs || !d->path) {
        ok = false;
        break;
      }
      for (int k = 0; k < s->nargs && ok; k++) {
        ok = wk__garg_copy(&d->args[k], &s->args[k]);
        if (ok) d->nargs = k + 1;
      }
      if (s->nouts) memcpy(d->outs, s->outs, sizeof *d->outs * (size_t)s->nouts);
      d->nouts = s->nouts;
    }
    if (ok) {
      memcpy(g->order, src->order, sizeof *g->order * (size_t)src->norder);
      g->norder = src->norder;
      for (int i = 0; i < src->nsyms && ok; i++) {
        g->syms[i].hint = src->syms[i].hint;
        if (!(g->syms[i].name = wk__strdup(src->syms[i].name))) ok = false;
        g->nsyms = i + 1;
      }
      memcpy(g->inputs, src->inputs, sizeof *g->inputs * (size_t)src->ninputs);
      g->ninputs = src->ninputs;
      memcpy(g->outputs, src->outputs, sizeof *g->outputs * (size_t)src->noutputs);
      g->noutputs = src->noutputs;
      for (int i = 0; i < src->nguards && ok; i++) {
        if (!(g->guards[i] = wk__strdup(src->guards[i]))) ok = false;
        g->nguards = i + 1;
      }
      if (src->nnames && !(g->names = wk_calloc((size_t)src->nnames, sizeof *g->names))) ok = false;
      for (int i = 0; i < src->nnames && ok; i++) {
        g->names[i].count = src->names[i].count;
        if (!(g->names[i].base = wk__strdup(src->names[i].base))) ok = false;
        g->nnames = i + 1;
      }
    }
  }
  if (!ok) {
    wk_graph_release(g);
    oom("graph_copy");
    return NULL;
  }
  return g;
}

/* ---- symbols ---- */
int wk_graph_add_symbol(wk_graph *g, const char *name, int64_t hint) {
  NULL_GRAPH("graph_add_symbol");
  if (g->nsyms >= WK__SYM_MAX)
    return wk_error(WK_ERR_INVALID_ARG, "graph_add_symbol: a graph has at most %d symbols", WK__SYM_MAX), -1;
  if (hint < 1)
    return wk_error(WK_ERR_INVALID_ARG, "graph_add_symbol: the example value of '%s' must be >= 1, not %lld",
                    name ? name : "?", (long long)hint), -1;
  gsym *p = wk_realloc(g->syms, sizeof *p * (size_t)(g->nsyms + 1));
  if (!p) return oom("graph_add_symbol"), -1;
  g->syms = p;
  char buf[32];
  snprintf(buf, sizeof buf, "s%d", g->nsyms);
  p[g->nsyms].name = wk__strdup(name ? name : buf);
  if (!p[g->nsyms].name) return oom("graph_add_symbol"), -1;
  p[g->nsyms].hint = hint;
  return g->nsyms++;
}

int wk_graph_num_symbols(const wk_graph *g) { return g ? g->nsyms : 0; }
const char *wk_graph_symbol_name(const wk_graph *g, int s) { return g && s >= 0 && s < g->nsyms ? g->syms[s].name : NULL; }
int64_t wk_graph_symbol_hint(const wk_graph *g, int s) { return g && s >= 0 && s < g->nsyms ? g->syms[s].hint : 0; }

/* ---- values ---- */
void wk__graph_fresh_name(wk_graph *g, const char *base, char *buf, size_t n) {
  /* unique in the graph: base, base_1, base_2, ... (torch.fx's naming); a
   * counter per base keeps this linear in the graph's size */
  struct gname *e = NULL;
  for (int i = 0; i < g->nnames && !e; i++)
    if (!strcmp(g->names[i].base, base)) e = &g->names[i];
  if (!e) {
    struct gname *p = wk_realloc(g->names, sizeof *p * (size_t)(g->nnames + 1));
    char *b = wk__strdup(base);
    if (p) g->names = p;
    if (p && b) {
      e = &g->names[g->nnames++];
      e->base = b;
      e->count = 0;
    } else {
      free(b);
    }
  }
  for (;;) {
    int k = e ? e->count++ : g->nvals;
    if (k)
      snprintf(buf, n, "%s_%d", base, k);
    else
      snprintf(buf, n, "%s", base);
    /* node names cannot take an input's or a parameter's name */
    bool taken = false;
    for (int i = 0; i < g->nvals && !taken; i++)
      taken = (g->vals[i].kind == WK_GV_INPUT || g->vals[i].kind == WK_GV_PARAM) && !strcmp(g->vals[i].name, buf);
    if (!taken) return;
  }
}

static int new_value(wk_graph *g, int kind, const char *name) {
  if (!grow((void **)&g->vals, &g->capvals, g->nvals + 1, sizeof *g->vals)) return oom("graph"), -1;
  gvalue *v = &g->vals[g->nvals];
  memset(v, 0, sizeof *v);
  if (!(v->name = wk__strdup(name))) return oom("graph"), -1;
  v->kind = kind;
  v->producer = -1;
  wk__graph_changed(g);
  return g->nvals++;
}

static bool check_dims(const wk_graph *g, int ndim, const wk_symdim *dims, const char *fn) {
  if (ndim < 0 || ndim > WK_MAX_DIMS) {
    wk_error(WK_ERR_INVALID_ARG, "%s: ndim %d is out of range (0..%d)", fn, ndim, WK_MAX_DIMS);
    return false;
  }
  if (ndim && !dims) {
    wk__null_arg(fn, "dims");
    return false;
  }
  for (int i = 0; i < ndim; i++) {
    const wk_symdim *d = &dims[i];
    if (d->c < 1 || d->sym0 >= g->nsyms || d->sym1 >= g->nsyms || d->sym0 < -1 || d->sym1 < -1) {
      wk_error(WK_ERR_INVALID_ARG, "%s: dim %d is not a valid symbolic dim (divisor %lld, symbols %d, %d of %d)", fn, i,
               (long long)d->c, d->sym0, d->sym1, g->nsyms);
      return false;
    }
  }
  return true;
}

int wk_graph_add_input(wk_graph *g, const char *name, wk_dtype dtype, wk_device device, int ndim,
                       const wk_symdim *dims) {
  NULL_GRAPH("graph_add_input");
  if (!check_dims(g, ndim, dims, "graph_add_input")) return -1;
  if (!wk_dtype_size(dtype)) return wk_error(WK_ERR_DTYPE, "graph_add_input: invalid dtype %d", (int)dtype), -1;
  char buf[64];
  if (!name) {
    snprintf(buf, sizeof buf, g->ninputs ? "x%d" : "x", g->ninputs);
    name = buf;
  }
  for (int i = 0; i < g->nvals; i++)
    if (g->vals[i].kind && !strcmp(g->vals[i].name, name))
      return wk_error(WK_ERR_INVALID_ARG, "graph_add_input: the name '%s' is taken", name), -1;
  int *in = wk_realloc(g->inputs, sizeof *in * (size_t)(g->ninputs + 1));
  if (!in) return oom("graph_add_input"), -1;
  g->inputs = in;
  int v = new_value(g, WK_GV_INPUT, name);
  if (v < 0) return -1;
  gvalue *p = &g->vals[v];
  p->dtype = dtype;
  p->device = device;
  p->ndim = ndim;
  if (ndim) memcpy(p->dims, dims, sizeof *dims * (size_t)ndim);
  g->inputs[g->ninputs++] = v;
  return v;
}

static int add_tensor_value(wk_graph *g, int kind, const char *name, wk_tensor *t, bool buffer, const char *fn) {
  if (!t) {
    if (!wk__error_pending()) wk__null_arg(fn, "tensor");
    return -1;
  }
  int v = new_value(g, kind, name);
  if (v < 0) return -1;
  gvalue *p = &g->vals[v];
  p->t = wk_retain(t);
  p->buffer = buffer;
  p->dtype = t->dtype;
  p->device = wk__device_norm(t->storage->device);
  p->ndim = t->ndim;
  for (int i = 0; i < t->ndim; i++) p->dims[i] = WK_SYM_CONST(t->sizes[i]);
  return v;
}

int wk_graph_add_param(wk_graph *g, const char *name, wk_tensor *t, bool buffer) {
  NULL_GRAPH("graph_add_param");
  if (!name) return wk__null_arg("graph_add_param", "name"), -1;
  if (wk_graph_find_param(g, name) >= 0)
    return wk_error(WK_ERR_INVALID_ARG, "graph_add_param: '%s' is already a parameter of the graph", name), -1;
  wk_clear_error();
  return add_tensor_value(g, WK_GV_PARAM, name, t, buffer, "graph_add_param");
}

int wk_graph_add_const(wk_graph *g, wk_tensor *t) {
  NULL_GRAPH("graph_add_const");
  char buf[64];
  wk__graph_fresh_name(g, "_const", buf, sizeof buf);
  return add_tensor_value(g, WK_GV_CONST, buf, t, false, "graph_add_const");
}

int wk__graph_add_node_value(wk_graph *g, int node, int i, wk_dtype dt, wk_device dev, int ndim,
                             const wk_symdim *dims, const char *name_hint) {
  char buf[96];
  wk__graph_fresh_name(g, name_hint, buf, sizeof buf);
  int v = new_value(g, WK_GV_NODE, buf);
  if (v < 0) return -1;
  gvalue *p = &g->vals[v];
  p->dtype = dt;
  p->device = dev;
  p->ndim = ndim;
  if (ndim > 0) memcpy(p->dims, dims, sizeof *dims * (size_t)ndim);
  p->producer = node;
  p->out_index = i;
  return v;
}

int wk_graph_num_values(const wk_graph *g) { return g ? g->nvals : 0; }
wk_gvalue_kind wk_graph_value_kind(const wk_graph *g, int v) {
  return g && v >= 0 && v < g->nvals ? (wk_gvalue_kind)g->vals[v].kind : (wk_gvalue_kind)0;
}
const char *wk_graph_value_name(const wk_graph *g, int v) { return wk__graph_value_ok(g, v) ? g->vals[v].name : NULL; }
wk_dtype wk_graph_value_dtype(const wk_graph *g, int v) { return wk__graph_value_ok(g, v) ? g->vals[v].dtype : WK_DTYPE_DEFAULT; }
wk_device wk_graph_value_device(const wk_graph *g, int v) {
  return wk__graph_value_ok(g, v) ? g->vals[v].device : (wk_device){WK_DEVICE_DEFAULT, 0};
}
int wk_graph_value_ndim(const wk_graph *g, int v) { return wk__graph_value_ok(g, v) ? g->vals[v].ndim : -1; }
const wk_symdim *wk_graph_value_dims(const wk_graph *g, int v) { return wk__graph_value_ok(g, v) ? g->vals[v].dims : NULL; }
wk_tensor *wk_graph_value_tensor(const wk_graph *g, int v) { return wk__graph_value_ok(g, v) ? g->vals[v].t : NULL; }
int wk_graph_value_producer(const wk_graph *g, int v, int *idx) {
  if (!wk__graph_value_ok(g, v)) return -1;
  if (idx) *idx = g->vals[v].out_index;
  return g->vals[v].producer;
}

int *wk__graph_use_counts(const wk_graph *g) {
  int *u = wk_calloc((size_t)(g->nvals ? g->nvals : 1), sizeof *u);
  if (!u) return NULL;
  for (int k = 0; k < g->norder; k++) {
    const gnode *n = &g->nodes[g->order[k]];
    for (int i = 0; i < n->nargs; i++) {
      const wk_garg *a = &n->args[i];
      if (a->tag == WK_V_TENSOR && a->u.v >= 0) u[a->u.v]++;
      if (a->tag == WK_V_TENSORS)
        for (int j = 0; j < a->len; j++)
          if (a->u.vs[j] >= 0) u[a->u.vs[j]]++;
    }
  }
  for (int i = 0; i < g->noutputs; i++)
    if (g->outputs[i] >= 0) u[g->outputs[i]]++;
  return u;
}

int wk_graph_value_num_uses(const wk_graph *g, int v) {
  if (!wk__graph_value_ok(g, v)) return -1;
  int *u = wk__graph_use_counts(g);
  if (!u) return oom("graph_value_num_uses"), -1;
  int r = u[v];
  free(u);
  return r;
}

int wk_graph_num_inputs(const wk_graph *g) { return g ? g->ninputs : 0; }
int wk_graph_input(const wk_graph *g, int i) { return g && i >= 0 && i < g->ninputs ? g->inputs[i] : -1; }
int wk_graph_num_outputs(const wk_graph *g) { return g ? g->noutputs : 0; }
int wk_graph_output(const wk_graph *g, int i) { return g && i >= 0 && i < g->noutputs ? g->outputs[i] : -1; }

int wk_graph_find_param(const wk_graph *g, const char *name) {
  if (!g || !name) return -1;
  for (int i = 0; i < g->nvals; i++)
    if (g->vals[i].kind == WK_GV_PARAM && !strcmp(g->vals[i].name, name)) return i;
  return -1;
}

wk_status wk_graph_set_param(wk_graph *g, const char *name, wk_tensor *t) {
  if (!g || !name || !t) {
    if (!t && wk__error_pending()) return wk_last_error();
    return wk_error(WK_ERR_NULL, "graph_set_param: argument '%s' is NULL", !g ? "graph" : !name ? "name" : "tensor");
  }
  wk_error_new_call();
  int v = wk_graph_find_param(g, name);
  if (v < 0) return wk_error(WK_ERR_NOT_FOUND, "graph_set_param: the graph has no parameter '%s'", name);
  gvalue *p = &g->vals[v];
  bool same = p->dtype == t->dtype && p->ndim == t->ndim;
  for (int i = 0; same && i < t->ndim; i++) same = p->dims[i].a == 0 && wk_symdim_eval(p->dims[i], NULL) == t->sizes[i];
  if (!same) {
    char a[128], b[128];
    wk__shape_str(t->sizes, t->ndim, b, sizeof b);
    int64_t s[WK_MAX_DIMS];
    for (int i = 0; i < p->ndim; i++) s[i] = wk_symdim_eval(p->dims[i], NULL);
    wk__shape_str(s, p->ndim, a, sizeof a);
    return wk_error(WK_ERR_SHAPE, "graph_set_param: '%s' is %s %s in the graph, not %s %s", name, wk_dtype_name(p->dtype), a,
                    wk_dtype_name(t->dtype), b);
  }
  wk_retain(t);
  wk_unref(p->t);
  p->t = t;
  p->device = wk__device_norm(t->storage->device);
  return WK_OK;
}

/* ---- nodes ---- */
int wk__graph_append_raw(wk_graph *g, wk_op *op, wk_garg *args, int nargs, const char *path) {
  if (!grow((void **)&g->nodes, &g->capnodes, g->nnodes + 1, sizeof *g->nodes) ||
      !grow((void **)&g->order, &g->caporder, g->norder + 1, sizeof *g->order)) {
    for (int i = 0; i < nargs; i++) wk__garg_free(&args[i]);
    free(args);
    return oom("graph"), -1;
  }
  gnode *n = &g->nodes[g->nnodes];
  memset(n, 0, sizeof *n);
  n->op = op;
  n->args = args;
  n->nargs = nargs;
  n->path = wk__strdup(path ? path : "");
  n->alive = true;
  if (!n->path) {
    node_free(n);
    return oom("graph"), -1;
  }
  g->order[g->norder++] = g->nnodes;
  wk__graph_changed(g);
  return g->nnodes++;
}

static int order_pos(const wk_graph *g, int node) {
  for (int k = 0; k < g->norder; k++)
    if (g->order[k] == node) return k;
  return -1;
}

/* Position in the order where value v becomes available (-1: before every node). */
static int made_at(const wk_graph *g, int v) {
  return g->vals[v].kind == WK_GV_NODE ? order_pos(g, g->vals[v].producer) : -1;
}

static bool arg_values_ok(const wk_graph *g, const wk_garg *a, int pos, const char *fn, const char *op, int i) {
  if ((a->tag == WK_V_TENSORS && a->len > 0 && !a->u.vs) || (a->tag == WK_V_INTS && a->len > 0 && !a->u.syms) ||
      (a->tag == WK_V_STR && !a->u.s) || ((a->tag == WK_V_TENSORS || a->tag == WK_V_INTS) && a->len < 0)) {
    wk_error(WK_ERR_INVALID_ARG, "%s: %s argument %d is a list or string with a NULL pointer (or a negative length)", fn, op, i);
    return false;
  }
  if (a->tag < WK_V_NONE || a->tag > WK_V_DEVICE) {
    wk_error(WK_ERR_INVALID_ARG, "%s: %s argument %d has an unknown tag %d", fn, op, i, a->tag);
    return false;
  }
  int n = a->tag == WK_V_TENSOR ? 1 : a->tag == WK_V_TENSORS ? a->len : 0;
  for (int j = 0; j < n; j++) {
    int v = a->tag == WK_V_TENSOR ? a->u.v : a->u.vs[j];
    if (v < 0 && a->tag == WK_V_TENSORS) continue;
    if (!wk__graph_value_ok(g, v)) {
      wk_error(WK_ERR_INVALID_ARG, "%s: %s argument %d reads value %d, which the graph does not have", fn, op, i, v);
      return false;
    }
    if (pos >= 0 && made_at(g, v) >= pos) {
      wk_error(WK_ERR_INVALID_ARG, "%s: %s argument %d reads '%s' before the node that makes it", fn, op, i,
               g->vals[v].name);
      return false;
    }
  }
  return true;
}

int wk_graph_add_node(wk_graph *g, wk_op *op, const wk_garg *args, int nargs, const char *path, int before) {
  NULL_GRAPH("graph_add_node");
  if (!op) return wk__null_arg("graph_add_node", "op"), -1;
  if (nargs < 0 || nargs > wk_op_num_args(op) || (nargs && !args))
    return wk_error(WK_ERR_INVALID_ARG, "graph_add_node: %s takes %d arguments, got %d", wk_op_name(op),
                    wk_op_num_args(op), nargs), -1;
  int pos = g->norder;
  if (before >= 0) {
    if (!wk__graph_node_ok(g, before)) return wk_error(WK_ERR_INDEX, "graph_add_node: no node %d", before), -1;
    pos = order_pos(g, before);
  }
  for (int i = 0; i < nargs; i++) {
    if (!arg_values_ok(g, &args[i], pos, "graph_add_node", wk_op_name(op), i)) return -1;
    if ((args[i].tag == WK_V_INT && !check_dims(g, 1, &args[i].u.sym, "graph_add_node")) ||
        (args[i].tag == WK_V_INTS && !check_dims(g, args[i].len, args[i].u.syms, "graph_add_node")))
      return -1;
  }
  /* defaults fill the rest, so every node carries the whole schema */
  int total = wk_op_num_args(op);
  wk_garg *copy = wk_calloc((size_t)(total ? total : 1), sizeof *copy);
  if (!copy) return oom("graph_add_node"), -1;
  bool ok = true;
  for (int i = 0; i < total && ok; i++) {
    if (i < nargs) {
      ok = wk__garg_copy(&copy[i], &args[i]);
      continue;
    }
    const wk_value *d = wk_op_arg_default(op, i);
    if (!d) {
      for (int k = 0; k < i; k++) wk__garg_free(&copy[k]);
      free(copy);
      return wk_error(WK_ERR_INVALID_ARG, "graph_add_node: %s() missing required argument '%s' (position %d)",
                      wk_op_name(op), wk_op_arg_name(op, i), i + 1), -1;
    }
    wk_garg ga = {.tag = d->tag, .len = d->len};
    if (d->tag == WK_V_INT) ga.u.sym = WK_SYM_CONST(d->u.i);
    else if (d->tag == WK_V_FLOAT) ga.u.f = d->u.f;
    else if (d->tag == WK_V_BOOL) ga.u.b = d->u.b;
    else if (d->tag == WK_V_STR) ga.u.s = d->u.s;
    else if (d->tag == WK_V_DTYPE) ga.u.dtype = d->u.dtype;
    else if (d->tag == WK_V_DEVICE) ga.u.device = d->u.device;
    else if (d->tag == WK_V_INTS) {
      wk_symdim tmp[WK_MAX_DIMS];
      int m = d->len < WK_MAX_DIMS ? d->len : WK_MAX_DIMS;
      for (int k = 0; k < m; k++) tmp[k] = WK_SYM_CONST(d->u.ints[k]);
      ga.len = m;
      ga.u.syms = tmp;
      ok = wk__garg_copy(&copy[i], &ga);
      continue;
    } else if (d->tag != WK_V_NONE) {
      ga.tag = WK_V_NONE;
    }
    ok = wk__garg_copy(&copy[i], &ga);
  }
  if (!ok) {
    for (int k = 0; k < total; k++) wk__garg_free(&copy[k]);
    free(copy);
    return oom("graph_add_node"), -1;
  }
  int id = wk__graph_append_raw(g, op, copy, total, path);
  if (id < 0) return -1;
  /* move it to its place in the order */
  if (pos < g->norder - 1) {
    memmove(&g->order[pos + 1], &g->order[pos], sizeof *g->order * (size_t)(g->norder - 1 - pos));
    g->order[pos] = id;
  }
  if (wk__graph_infer(g, pos, pos + 1) != WK_OK) {
    /* undo: the node and any result values it made */
    gnode *n = &g->nodes[id];
    wk__graph_changed(g);
    for (int k = 0; k < n->nouts; k++)
      if (n->outs[k] >= 0) value_free(&g->vals[n->outs[k]]);
    node_free(n);
    memmove(&g->order[pos], &g->order[pos + 1], sizeof *g->order * (size_t)(g->norder - 1 - pos));
    g->norder--;
    return -1;
  }
  return id;
}

wk_status wk_graph_set_outputs(wk_graph *g, const int *values, int n) {
  if (!g) return wk_error(WK_ERR_NULL, "graph_set_outputs: argument 'graph' is NULL");
  wk_error_new_call();
  if (n < 0 || (n && !values)) return wk_error(WK_ERR_INVALID_ARG, "graph_set_outputs: %d outputs and values %p", n, (const void *)values);
  for (int i = 0; i < n; i++)
    if (!wk__graph_value_ok(g, values[i]))
      return wk_error(WK_ERR_INVALID_ARG, "graph_set_outputs: output %d is value %d, which the graph does not have", i, values[i]);
  int *p = wk_malloc(sizeof *p * (size_t)(n ? n : 1));
  if (!p) return oom("graph_set_outputs");
  if (n) memcpy(p, values, sizeof *p * (size_t)n);
  free(g->outputs);
  g->outputs = p;
  g->noutputs = n;
  wk__graph_changed(g);
  return WK_OK;
}

int wk_graph_num_nodes(const wk_graph *g) { return g ? g->norder : 0; }
int wk_graph_node_at(const wk_graph *g, int pos) { return g && pos >= 0 && pos < g->norder ? g->order[pos] : -1; }
wk_op *wk_graph_node_op(const wk_graph *g, int n) { return wk__graph_node_ok(g, n) ? g->nodes[n].op : NULL; }
const char *wk_graph_node_module_path(const wk_graph *g, int n) { return wk__graph_node_ok(g, n) ? g->nodes[n].path : NULL; }
int wk_graph_node_num_args(const wk_graph *g, int n) { return wk__graph_node_ok(g, n) ? g->nodes[n].nargs : -1; }
const wk_garg *wk_graph_node_args(const wk_graph *g, int n) { return wk__graph_node_ok(g, n) ? g->nodes[n].args : NULL; }
int wk_graph_node_num_outputs(const wk_graph *g, int n) { return wk__graph_node_ok(g, n) ? g->nodes[n].nouts : -1; }
int wk_graph_node_output(const wk_graph *g, int n, int i) {
  return wk__graph_node_ok(g, n) && i >= 0 && i < g->nodes[n].nouts ? g->nodes[n].outs[i] : -1;
}

wk_status wk__graph_add_guard(wk_graph *g, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  char **p = wk_realloc(g->guards, sizeof *p * (size_t)(g->nguards + 1));
  if (!p) return oom("graph");
  g->guards = p;
  if (!(p[g->nguards] = wk__strdup(buf))) return oom("graph");
  g->nguards++;
  return WK_OK;
}
int wk_graph_num_guards(const wk_graph *g) { return g ? g->nguards : 0; }
const char *wk_graph_guard(const wk_graph *g, int i) { return g && i >= 0 && i < g->nguards ? g->guards[i] : NULL; }

/* ---- rewriting ---- */
static void replace_in_args(gnode *n, int from, int to) {
  for (int i = 0; i < n->nargs; i++) {
    wk_garg *a = &n->args[i];
    if (a->tag == WK_V_TENSOR && a->u.v == from) a->u.v = to;
    if (a->tag == WK_V_TENSORS)
      for (int j = 0; j < a->len; j++)
        if (a->u.vs[j] == from) ((int32_t *)a->u.vs)[j] = to;
  }
}

static bool reads(const gnode *n, int v) {
  for (int i = 0; i < n->nargs; i++) {
    const wk_garg *a = &n->args[i];
    if (a->tag == WK_V_TENSOR && a->u.v == v) return true;
    if (a->tag == WK_V_TENSORS)
      for (int j = 0; j < a->len; j++)
        if (a->u.vs[j] == v) return true;
  }
  return false;
}

wk_status wk_graph_replace_uses(wk_graph *g, int from, int to) {
  if (!g) return wk_error(WK_ERR_NULL, "graph_replace_uses: argument 'graph' is NULL");
  wk_error_new_call();
  if (!wk__graph_value_ok(g, from) || !wk__graph_value_ok(g, to))
    return wk_error(WK_ERR_INVALID_ARG, "graph_replace_uses: no value %d", wk__graph_value_ok(g, from) ? to : from);
  const gvalue *a = &g->vals[from], *b = &g->vals[to];
  if (a->dtype != b->dtype || a->ndim != b->ndim)
    return wk_error(WK_ERR_INVALID_ARG, "graph_replace_uses: '%s' (%s, %d dims) cannot stand for '%s' (%s, %d dims)", b->name,
                    wk_dtype_name(b->dtype), b->ndim, a->name, wk_dtype_name(a->dtype), a->ndim);
  int at = made_at(g, to);
  for (int k = 0; k <= at && k < g->norder; k++)
    if (reads(&g->nodes[g->order[k]], from))
      return wk_error(WK_ERR_INVALID_ARG, "graph_replace_uses: '%s' is read by %s before '%s' is made", a->name,
                      wk_op_name(g->nodes[g->order[k]].op), b->name);
  wk__graph_changed(g);
  for (int k = at + 1; k < g->norder; k++) replace_in_args(&g->nodes[g->order[k]], from, to);
  for (int i = 0; i < g->noutputs; i++)
    if (g->outputs[i] == from) g->outputs[i] = to;
  return WK_OK;
}

wk_status wk_graph_erase_node(wk_graph *g, int node) {
  if (!g) return wk_error(WK_ERR_NULL, "graph_erase_node: argument 'graph' is NULL");
  wk_error_new_call();
  if (!wk__graph_node_ok(g, node)) return wk_error(WK_ERR_INDEX, "graph_erase_node: no node %d", node);
  gnode *n = &g->nodes[node];
  int *u = wk__graph_use_counts(g);
  if (!u) return oom("graph_erase_node");
  for (int k = 0; k < n->nouts; k++)
    if (n->outs[k] >= 0 && u[n->outs[k]]) {
      wk_status s = wk_error(WK_ERR_STATE, "graph_erase_node: %s's result '%s' is still read (%d uses)", wk_op_name(n->op),
                             g->vals[n->outs[k]].name, u[n->outs[k]]);
      free(u);
      return s;
    }
  free(u);
  wk__graph_changed(g);
  for (int k = 0; k < n->nouts; k++)
    if (n->outs[k] >= 0) value_free(&g->vals[n->outs[k]]);
  int pos = order_pos(g, node);
  memmove(&g->order[pos], &g->order[pos + 1], sizeof *g->order * (size_t)(g->norder - 1 - pos));
  g->norder--;
  node_free(n);
  return WK_OK;
}

/* ---- validation ---- */
wk_status wk_graph_validate(const wk_graph *g) {
  if (!g) return wk_error(WK_ERR_NULL, "graph_validate: argument 'graph' is NULL");
  wk_error_new_call();
  for (int k = 0; k < g->norder; k++) {
    int id = g->order[k];
    if (!wk__graph_node_ok(g, id)) return wk_error(WK_ERR_STATE, "graph_validate: position %d holds erased node %d", k, id);
    const gnode *n = &g->nodes[id];
    const char *on = wk_op_name(n->op);
    if (!n->op || wk_op_find(on) != n->op) return wk_error(WK_ERR_STATE, "graph_validate: node %d's op is not declared", id);
    if (n->nargs != wk_op_num_args(n->op))
      return wk_error(WK_ERR_STATE, "graph_validate: node %d (%s) has %d arguments, its schema %d", id, on, n->nargs,
                      wk_op_num_args(n->op));
    for (int i = 0; i < n->nargs; i++)
      if (!arg_values_ok(g, &n->args[i], k, "graph_validate", on, i)) return wk_last_error();
    for (int i = 0; i < n->nouts; i++) {
      int v = n->outs[i];
      if (v >= 0 && (!wk__graph_value_ok(g, v) || g->vals[v].producer != id))
        return wk_error(WK_ERR_STATE, "graph_validate: node %d (%s) result %d is not a value it makes", id, on, i);
    }
  }
  for (int i = 0; i < g->noutputs; i++)
    if (!wk__graph_value_ok(g, g->outputs[i]))
      return wk_error(WK_ERR_STATE, "graph_validate: output %d reads a value the graph does not have", i);
  for (int v = 0; v < g->nvals; v++) {
    const gvalue *p = &g->vals[v];
    if (!p->kind) continue;
    if ((p->kind == WK_GV_PARAM || p->kind == WK_GV_CONST) && !p->t)
      return wk_error(WK_ERR_STATE, "graph_validate: '%s' has no tensor", p->name);
    if (p->kind == WK_GV_NODE && !wk__graph_node_ok(g, p->producer))
      return wk_error(WK_ERR_STATE, "graph_validate: '%s' comes from an erased node", p->name);
    if (!check_dims(g, p->ndim, p->dims, "graph_validate")) return wk_last_error();
  }
  return WK_OK;
}

/* ---- printing ---- */
typedef struct sbuf {
  char *p;
  size_t n, cap;
  bool failed;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...) {
  if (b->failed) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
    va_end(ap);
    if (k < 0) {
      b->failed = true;
      return;
    }
    if (b->p && b->n + (size_t)k < b->cap) {
      b->n += (size_t)k;
      return;
    }
    size_t c = b->cap ? b->cap * 2 : 4096;
    while (c < b->n + (size_t)k + 1) c *= 2;
    char *q = wk_realloc(b->p, c);
    if (!q) {
      b->failed = true;
      return;
    }
    b->p = q;
    b->cap = c;
  }
}

static void shape_text(const wk_graph *g, const gvalue *v, char *buf, size_t n) {
  size_t k = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < v->ndim && k < n; i++) {
    char d[96];
    wk_symdim_str(g, v->dims[i], d, sizeof d);
    k += (size_t)snprintf(buf + k, n - k, "%s%s", i ? ", " : "", d);
  }
  if (k < n) snprintf(buf + k, n - k, "]");
}

static void arg_text(const wk_graph *g, const wk_garg *a, char *buf, size_t n) {
  size_t k = 0;
  switch (a->tag) {
    case WK_V_NONE: snprintf(buf, n, "None"); return;
    case WK_V_TENSOR: snprintf(buf, n, "%s", a->u.v >= 0 && a->u.v < g->nvals ? g->vals[a->u.v].name : "?"); return;
    case WK_V_INT: wk_symdim_str(g, a->u.sym, buf, n); return;
    case WK_V_FLOAT: snprintf(buf, n, "%g", a->u.f); return;
    case WK_V_BOOL: snprintf(buf, n, "%s", a->u.b ? "True" : "False"); return;
    case WK_V_STR: snprintf(buf, n, "'%s'", a->u.s); return;
    case WK_V_DTYPE: snprintf(buf, n, "%s", wk_dtype_name(a->u.dtype)); return;
    case WK_V_DEVICE: wk_device_str(a->u.device, buf, n); return;
    case WK_V_INTS:
    case WK_V_TENSORS:
      k = (size_t)snprintf(buf, n, "[");
      for (int j = 0; j < a->len && k < n; j++) {
        char e[96];
        if (a->tag == WK_V_INTS)
          wk_symdim_str(g, a->u.syms[j], e, sizeof e);
        else
          snprintf(e, sizeof e, "%s", a->u.vs[j] >= 0 && a->u.vs[j] < g->nvals ? g->vals[a->u.vs[j]].name : "None");
        k += (size_t)snprintf(buf + k, n - k, "%s%s", j ? ", " : "", e);
      }
      if (k < n) snprintf(buf + k, n - k, "]");
      return;
    default: snprintf(buf, n, "?"); return;
  }
}

char *wk_graph_to_string(const wk_graph *g) {
  if (!g) {
    wk__null_arg("graph_to_string", "graph");
    return NULL;
  }
  sbuf b = {0};
  sb_printf(&b, "%-13s  %-22s  %-26s  %-40s  %-22s  %s\n", "opcode", "name", "target", "args", "shape", "module");
  sb_printf(&b, "%-13s  %-22s  %-26s  %-40s  %-22s  %s\n", "-------------", "----------------------",
            "--------------------------", "----------------------------------------", "----------------------",
            "------");
  char shape[512], args[2048];
  for (int i = 0; i < g->ninputs; i++) {
    const gvalue *v = &g->vals[g->inputs[i]];
    shape_text(g, v, shape, sizeof shape);
    sb_printf(&b, "%-13s  %-22s  %-26s  %-40s  %-22s  %s\n", "placeholder", v->name, v->name, "()", shape, "");
  }
  for (int i = 0; i < g->nvals; i++) {
    const gvalue *v = &g->vals[i];
    if (v->kind != WK_GV_PARAM && v->kind != WK_GV_CONST) continue;
    shape_text(g, v, shape, sizeof shape);
    sb_printf(&b, "%-13s  %-22s  %-26s  %-40s  %-22s  %s\n", v->kind == WK_GV_PARAM ? "get_attr" : "constant", v->name,
              v->kind == WK_GV_PARAM ? (v->buffer ? "buffer" : "parameter") : wk_dtype_name(v->dtype), "()", shape, "");
  }
  for (int k = 0; k < g->norder; k++) {
    const gnode *n = &g->nodes[g->order[k]];
    size_t m = (size_t)snprintf(args, sizeof args, "(");
    for (int i = 0; i < n->nargs && m < sizeof args; i++) {
      char a[1024];
      arg_text(g, &n->args[i], a, sizeof a);
      m += (size_t)snprintf(args + m, sizeof args - m, "%s%s", i ? ", " : "", a);
    }
    if (m < sizeof args) snprintf(args + m, sizeof args - m, ")");
    char name[256] = "";
    size_t q = 0;
    shape[0] = 0;
    size_t sq = 0;
    for (int i = 0; i < n->nouts && q < sizeof name; i++) {
      const char *vn = n->outs[i] >= 0 ? g->vals[n->outs[i]].name : "None";
      q += (size_t)snprintf(name + q, sizeof name - q, "%s%s", i ? "," : "", vn);
      if (n->outs[i] >= 0 && sq < sizeof shape) {
        char s1[256];
        shape_text(g, &g->vals[n->outs[i]], s1, sizeof s1);
        sq += (size_t)snprintf(shape + sq, sizeof shape - sq, "%s%s", sq ? " " : "", s1);
      }
    }
    sb_printf(&b, "%-13s  %-22s  %-26s  %-40s  %-22s  %s\n", "call_function", name, wk_op_name(n->op), args, shape,
              n->path && *n->path ? n->path : "");
  }
  size_t m = (size_t)snprintf(args, sizeof args, "(");
  for (int i = 0; i < g->noutputs && m < sizeof args; i++)
    m += (size_t)snprintf(args + m, sizeof args - m, "%s%s", i ? ", " : "",
                          wk__graph_value_ok(g, g->outputs[i]) ? g->vals[g->outputs[i]].name : "?");
  if (m < sizeof args) snprintf(args + m, sizeof args - m, g->noutputs == 1 ? ",)" : ")");
  sb_printf(&b, "%-13s  %-22s  %-26s  %-40s  %-22s  %s\n", "output", "output", "output", args, "", "");
  for (int i = 0; i < g->nsyms; i++)
    sb_printf(&b, "symbol s%d: %s (example %lld)\n", i, g->syms[i].name, (long long)g->syms[i].hint);
  for (int i = 0; i < g->nguards; i++) sb_printf(&b, "guard: %s\n", g->guards[i]);
  if (b.failed || !b.p) {
    free(b.p);
    oom("graph_to_string");
    return NULL;
  }
  return b.p;
}
