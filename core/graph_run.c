/* Replay (wk_graph_run): every node's op through the normal dispatcher, so
 * autograd, autocast and the profiler see a replay as they see eager code.
 * Shape propagation (wk__graph_infer, wk_graph_propagate) is the same walk on
 * the meta device at every sample point of the symbols, followed by a fit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"
#include "meta.h"

#define INLINE_LIST 16

typedef struct argbuf {
  int64_t ints[WK_MAX_ARGS][INLINE_LIST];
  wk_tensor *ts[WK_MAX_ARGS][INLINE_LIST];
  void *heap[WK_MAX_ARGS];
} argbuf;

static void argbuf_free(argbuf *b, int n) {
  for (int i = 0; i < n; i++) {
    free(b->heap[i]);
    b->heap[i] = NULL;
  }
}

static bool has_tensor_arg(const gnode *n) {
  for (int i = 0; i < n->nargs; i++)
    if (n->args[i].tag == WK_V_TENSOR || n->args[i].tag == WK_V_TENSORS) return true;
  return false;
}

/* Boxes argument i of node n: a value from env, a symbolic int at syms, the
 * trace device `from` moved to `to`, a factory's missing device as `to`. */
static wk_status box_arg(const wk_graph *g, const gnode *n, int i, wk_tensor *const *env, const int64_t *syms,
                         wk_device from, wk_device to, bool factory, wk_value *out, argbuf *b) {
  const wk_garg *a = &n->args[i];
  wk_value v = {.tag = a->tag, .len = a->len};
  b->heap[i] = NULL;
  switch (a->tag) {
    case WK_V_TENSOR:
      v.u.t = env[a->u.v];
      if (!v.u.t) return wk_error(WK_ERR_STATE, "graph: '%s' is read after its last use", g->vals[a->u.v].name);
      break;
    case WK_V_TENSORS: {
      wk_tensor **p = b->ts[i];
      if (a->len > INLINE_LIST && !(p = b->heap[i] = wk_malloc(sizeof *p * (size_t)a->len)))
        return wk_error(WK_ERR_NO_MEMORY, "graph: out of memory");
      for (int k = 0; k < a->len; k++) {
        p[k] = a->u.vs[k] >= 0 ? env[a->u.vs[k]] : NULL;
        if (a->u.vs[k] >= 0 && !p[k])
          return wk_error(WK_ERR_STATE, "graph: '%s' is read after its last use", g->vals[a->u.vs[k]].name);
      }
      v.u.tensors = p;
      break;
    }
    case WK_V_INT: v.u.i = wk_symdim_eval(a->u.sym, syms); break;
    case WK_V_INTS: {
      int64_t *p = b->ints[i];
      if (a->len > INLINE_LIST && !(p = b->heap[i] = wk_malloc(sizeof *p * (size_t)a->len)))
        return wk_error(WK_ERR_NO_MEMORY, "graph: out of memory");
      for (int k = 0; k < a->len; k++) p[k] = wk_symdim_eval(a->u.syms[k], syms);
      v.u.ints = p;
      break;
    }
    case WK_V_FLOAT: v.u.f = a->u.f; break;
    case WK_V_BOOL: v.u.b = a->u.b; break;
    case WK_V_STR: v.u.s = a->u.s; break;
    case WK_V_DTYPE: v.u.dtype = a->u.dtype; break;
    case WK_V_DEVICE: {
      wk_device d = wk__device_norm(a->u.device);
      v.u.device = d.type == from.type && d.index == from.index ? to : d;
      break;
    }
    default:
      if (factory && wk__op_schema(n->op)->args[i].type == WK__A_DEVICE) v = WK_VDEV(to);
      break;
  }
  *out = v;
  return WK_OK;
}

/* Boxes every argument of node n (shape propagation; replay uses its plan). */
static wk_status build_args(const wk_graph *g, const gnode *n, wk_tensor *const *env, const int64_t *syms,
                            wk_device from, wk_device to, wk_value *out, argbuf *b) {
  bool factory = !has_tensor_arg(n);
  for (int i = 0; i < n->nargs; i++) {
    wk_status st = box_arg(g, n, i, env, syms, from, to, factory, &out[i], b);
    if (st) return st;
  }
  return WK_OK;
}

/* Calls node n's op with boxed args; its results (new references, in-place
 * ones retained) go to res[0..n->nouts). */
static wk_status call_node(const gnode *n, const wk_value *args, wk_tensor **res) {
  wk_value outs[WK_MAX_OUTS];
  wk__call_depth++; /* results are ours, not the caller's scope's */
  wk_status st = wk_op_call(n->op, args, n->nargs, outs);
  wk__call_depth--;
  if (st) return st;
  if (n->list_out) {
    int len = outs[0].tag == WK_V_TENSORS ? outs[0].len : 0;
    wk_tensor **arr = (wk_tensor **)outs[0].u.tensors;
    if (len != n->nouts) {
      for (int k = 0; k < len; k++) wk_release(arr[k]);
      wk_free(arr);
      return wk_error(WK_ERR_SHAPE, "%s() gave %d tensors, the graph has %d", wk_op_name(n->op), len, n->nouts);
    }
    for (int k = 0; k < len; k++) res[k] = arr[k];
    wk_free(arr);
    return WK_OK;
  }
  for (int i = 0; i < n->nouts; i++) {
    res[i] = outs[i].tag == WK_V_TENSOR ? outs[i].u.t : NULL;
    if (res[i] && wk__op_out_target(n->op, i) >= 0) wk_retain(res[i]); /* borrowed: the mutated argument */
  }
  return WK_OK;
}

static wk_status node_error(const wk_graph *g, const gnode *n, const char *fn) {
  char msg[768];
  snprintf(msg, sizeof msg, "%s", wk_last_error_message());
  (void)g;
  return wk_error_replace(wk_last_error(), "%s: node %s%s%s%s: %s", fn, wk_op_name(n->op), *n->path ? " in '" : "", n->path,
                          *n->path ? "'" : "", msg);
}

/* ---- replay ---- */
static wk_device graph_device(const wk_graph *g) {
  if (g->ninputs) return wk__device_norm(g->vals[g->inputs[0]].device);
  for (int i = 0; i < g->nvals; i++)
    if (g->vals[i].kind == WK_GV_PARAM) return wk__device_norm(g->vals[i].device);
  return (wk_device){WK_DEVICE_CPU, 0};
}

static bool plain_symbol(wk_symdim d) {
  return d.a == 1 && d.b == 0 && d.c == 1 && d.m == 1 && d.d == 0 && d.sym0 >= 0 && d.sym1 < 0;
}

/* Binds the symbols from the inputs and checks every guard. */
static wk_status check_guards(const wk_graph *g, wk_tensor *const *inputs, int n, wk_device dev, int64_t *syms) {
  if (n != g->ninputs)
    return wk_error(WK_ERR_INVALID_ARG, "graph_run: the graph takes %d inputs, got %d", g->ninputs, n);
  bool bound[WK__SYM_MAX] = {0};
  int from_in[WK__SYM_MAX], from_dim[WK__SYM_MAX];
  for (int i = 0; i < n; i++) {
    const wk_tensor *x = inputs[i];
    if (!x) {
      if (!wk__error_pending()) wk_error(WK_ERR_NULL, "graph_run: input %d is NULL", i);
      return wk_last_error();
    }
    const gvalue *p = &g->vals[g->inputs[i]];
    char a[48], b[48];
    wk_device xd = wk__device_norm(x->storage->device);
    if (xd.type != dev.type || xd.index != dev.index)
      return wk_error(WK_ERR_DEVICE, "graph_run: guard failed: input %d '%s' is on %s, but the graph runs on %s", i,
                      p->name, wk_device_str(xd, a, sizeof a), wk_device_str(dev, b, sizeof b));
    if (x->dtype != p->dtype)
      return wk_error(WK_ERR_DTYPE, "graph_run: guard failed: input %d '%s' must be %s (traced), not %s", i, p->name,
                      wk_dtype_name(p->dtype), wk_dtype_name(x->dtype));
    if (x->ndim != p->ndim)
      return wk_error(WK_ERR_SHAPE, "graph_run: guard failed: input %d '%s' must have %d dims (traced), not %d", i,
                      p->name, p->ndim, x->ndim);
    for (int d = 0; d < p->ndim; d++) {
      wk_symdim s = p->dims[d];
      if (!plain_symbol(s)) continue;
      int k = s.sym0;
      if (x->sizes[d] < 1)
        return wk_error(WK_ERR_SHAPE, "graph_run: guard failed: s%d (%s) >= 1, but input %d '%s' dim %d is %lld", k,
                        g->syms[k].name, i, p->name, d, (long long)x->sizes[d]);
      if (bound[k] && syms[k] != x->sizes[d])
        return wk_error(WK_ERR_SHAPE,
                        "graph_run: guard failed: s%d (%s) is %lld from input %d dim %d but %lld from input %d '%s' dim %d", k,
                        g->syms[k].name, (long long)syms[k], from_in[k], from_dim[k], (long long)x->sizes[d], i, p->name, d);
      syms[k] = x->sizes[d];
      bound[k] = true;
      from_in[k] = i;
      from_dim[k] = d;
    }
  }
  for (int k = 0; k < g->nsyms; k++)
    if (!bound[k]) syms[k] = g->syms[k].hint;
  for (int i = 0; i < n; i++) {
    const gvalue *p = &g->vals[g->inputs[i]];
    for (int d = 0; d < p->ndim; d++) {
      if (plain_symbol(p->dims[d])) continue;
      int64_t want = wk_symdim_eval(p->dims[d], syms);
      if (inputs[i]->sizes[d] != want) {
        char e[96];
        wk_symdim_str(g, p->dims[d], e, sizeof e);
        return wk_error(WK_ERR_SHAPE, "graph_run: guard failed: input %d '%s' dim %d must be %s = %lld, not %lld", i,
                        p->name, d, e, (long long)want, (long long)inputs[i]->sizes[d]);
      }
    }
  }
  return WK_OK;
}

/* The position of each value's last read (-1: none; outputs read at the end). */
static int *last_uses(const wk_graph *g) {
  int *lu = wk_malloc(sizeof *lu * (size_t)(g->nvals ? g->nvals : 1));
  if (!lu) return NULL;
  for (int i = 0; i < g->nvals; i++) lu[i] = -1;
  for (int p = 0; p < g->norder; p++) {
    const gnode *n = &g->nodes[g->order[p]];
    for (int i = 0; i < n->nargs; i++) {
      const wk_garg *a = &n->args[i];
      if (a->tag == WK_V_TENSOR) lu[a->u.v] = p;
      if (a->tag == WK_V_TENSORS)
        for (int k = 0; k < a->len; k++)
          if (a->u.vs[k] >= 0) lu[a->u.vs[k]] = p;
    }
  }
  for (int i = 0; i < g->noutputs; i++) lu[g->outputs[i]] = g->norder;
  return lu;
}

/* The replay plan: per node, the arguments that never change boxed once,
 * which ones a run fills in (tensors, symbolic ints, devices), the values to
 * release after it, and whether its result shapes need checking. Built on
 * the first run after a change, so a replay's per-op work is a copy and a
 * few patches. */
typedef struct pnode {
  int id, nargs, ndyn, nrel;
  wk_value *tmpl;
  int8_t *dyn;
  int *rel;
  int64_t *ints; /* constant int lists the template points into */
  bool check;
} pnode;

typedef struct plan {
  int n, npv;
  pnode *nodes;
  int *pvals; /* parameters and constants some node reads */
} plan;

void wk__graph_plan_free(void *pp) {
  plan *p = pp;
  for (int i = 0; i < p->n; i++) {
    free(p->nodes[i].tmpl);
    free(p->nodes[i].dyn);
    free(p->nodes[i].rel);
    free(p->nodes[i].ints);
  }
  free(p->nodes);
  free(p->pvals);
  free(p);
}

static plan *plan_build(const wk_graph *g) {
  int *lu = last_uses(g);
  plan *pl = wk_calloc(1, sizeof *pl);
  if (!lu || !pl) goto oom;
  pl->nodes = wk_calloc((size_t)(g->norder ? g->norder : 1), sizeof *pl->nodes);
  pl->pvals = wk_calloc((size_t)(g->nvals ? g->nvals : 1), sizeof *pl->pvals);
  if (!pl->nodes || !pl->pvals) goto oom;
  for (int v = 0; v < g->nvals; v++)
    if ((g->vals[v].kind == WK_GV_PARAM || g->vals[v].kind == WK_GV_CONST) && lu[v] >= 0) pl->pvals[pl->npv++] = v;
  for (int p = 0; p < g->norder; p++) {
    const gnode *n = &g->nodes[g->order[p]];
    pnode *q = &pl->nodes[pl->n++];
    const wk__schema *s = wk__op_schema(n->op);
    bool factory = !has_tensor_arg(n);
    q->id = g->order[p];
    q->nargs = n->nargs;
    q->tmpl = wk_calloc((size_t)(n->nargs ? n->nargs : 1), sizeof *q->tmpl);
    q->dyn = wk_calloc((size_t)(n->nargs ? n->nargs : 1), sizeof *q->dyn);
    int nints = 0, nread = 0;
    for (int i = 0; i < n->nargs; i++) {
      if (n->args[i].tag == WK_V_INTS) nints += n->args[i].len;
      if (n->args[i].tag == WK_V_TENSORS) nread += n->args[i].len;
    }
    q->ints = wk_calloc((size_t)(nints ? nints : 1), sizeof *q->ints);
    q->rel = wk_calloc((size_t)(n->nargs + nread + n->nouts + 1), sizeof *q->rel);
    if (!q->tmpl || !q->dyn || !q->ints || !q->rel) goto oom;
    int used = 0;
    for (int i = 0; i < n->nargs; i++) {
      const wk_garg *a = &n->args[i];
      wk_value *t = &q->tmpl[i];
      t->tag = a->tag;
      t->len = a->len;
      bool dyn = false;
      switch (a->tag) {
        case WK_V_TENSOR:
        case WK_V_TENSORS:
        case WK_V_DEVICE: dyn = true; break;
        case WK_V_INT:
          dyn = !wk__sym_is_const(a->u.sym);
          t->u.i = wk_symdim_eval(a->u.sym, NULL);
          break;
        case WK_V_INTS:
          for (int k = 0; k < a->len && !dyn; k++) dyn = !wk__sym_is_const(a->u.syms[k]);
          for (int k = 0; k < a->len && !dyn; k++) q->ints[used + k] = wk_symdim_eval(a->u.syms[k], NULL);
          t->u.ints = q->ints + used;
          used += a->len;
          break;
        case WK_V_FLOAT: t->u.f = a->u.f; break;
        case WK_V_BOOL: t->u.b = a->u.b; break;
        case WK_V_STR: t->u.s = a->u.s; break;
        case WK_V_DTYPE: t->u.dtype = a->u.dtype; break;
        default: dyn = factory && s->args[i].type == WK__A_DEVICE; break;
      }
      if (dyn) q->dyn[q->ndyn++] = (int8_t)i;
      /* values read for the last time here */
      int cnt = a->tag == WK_V_TENSOR ? 1 : a->tag == WK_V_TENSORS ? a->len : 0;
      for (int k = 0; k < cnt; k++) {
        int v = a->tag == WK_V_TENSOR ? a->u.v : a->u.vs[k];
        bool dup = false;
        for (int j = 0; j < q->nrel && !dup; j++) dup = q->rel[j] == v;
        if (v >= 0 && lu[v] == p && !dup) q->rel[q->nrel++] = v;
      }
    }
    for (int i = 0; i < n->nouts; i++) {
      int v = n->outs[i];
      if (v < 0) continue;
      if (lu[v] < 0) q->rel[q->nrel++] = v; /* nobody reads it */
      for (int d = 0; d < g->vals[v].ndim; d++) q->check = q->check || !wk__sym_is_const(g->vals[v].dims[d]);
    }
  }
  free(lu);
  return pl;
oom:
  free(lu);
  if (pl) wk__graph_plan_free(pl);
  wk_error(WK_ERR_NO_MEMORY, "graph_run: out of memory");
  return NULL;
}

/* Fills the arguments a run decides (tensors, symbolic ints, devices). */
static wk_status fill_dyn(const wk_graph *g, const gnode *n, const pnode *q, wk_tensor *const *env,
                          const int64_t *syms, wk_device from, wk_device to, wk_value *args, argbuf *b) {
  for (int j = 0; j < q->ndyn; j++) {
    wk_status st = box_arg(g, n, q->dyn[j], env, syms, from, to, true, &args[q->dyn[j]], b);
    if (st) return st;
  }
  return WK_OK;
}

static wk_status shape_error(const gnode *nd, const gvalue *pv, const wk_tensor *t, const int64_t *syms) {
  char want[256] = "[", got[256];
  size_t k = 1;
  for (int d = 0; d < pv->ndim && k < sizeof want; d++)
    k += (size_t)snprintf(want + k, sizeof want - k, "%s%lld", d ? ", " : "", (long long)wk_symdim_eval(pv->dims[d], syms));
  if (k < sizeof want) snprintf(want + k, sizeof want - k, "]");
  if (t)
    wk__shape_str(t->sizes, t->ndim, got, sizeof got);
  else
    snprintf(got, sizeof got, "None");
  return wk_error(WK_ERR_SHAPE,
                  "graph_run: node %s%s%s%s: result '%s' has shape %s, but the graph's symbolic shape gives %s for these "
                  "inputs",
                  wk_op_name(nd->op), *nd->path ? " in '" : "", nd->path, *nd->path ? "'" : "", pv->name, got, want);
}

wk_status wk_graph_run(wk_graph *g, wk_tensor *const *inputs, int n, wk_device device, wk_tensor **outputs,
                       int max_outputs) {
  if (!g) {
    if (!wk__error_pending()) wk_error(WK_ERR_NULL, "graph_run: argument 'graph' is NULL");
    return wk_last_error();
  }
  wk_error_new_call();
  if (n && !inputs) return wk_error(WK_ERR_NULL, "graph_run: argument 'inputs' is NULL");
  if (g->noutputs && !outputs) return wk_error(WK_ERR_NULL, "graph_run: argument 'outputs' is NULL");
  if (max_outputs < g->noutputs)
    return wk_error(WK_ERR_INVALID_ARG, "graph_run: the graph has %d outputs, room for %d", g->noutputs, max_outputs);
  for (int i = 0; i < g->noutputs; i++) outputs[i] = NULL;
  wk_device from = graph_device(g);
  wk_device dev = device.type == WK_DEVICE_DEFAULT ? from : wk__device_norm(device);
  int64_t syms[WK__SYM_MAX];
  wk_status st = check_guards(g, inputs, n, dev, syms);
  if (st) return st;
  plan *pl = atomic_load(&g->plan);
  if (!pl) {
    if (!(pl = plan_build(g))) return wk_last_error();
    void *expect = NULL;
    if (!atomic_compare_exchange_strong(&g->plan, &expect, pl)) { /* another run built one first */
      wk__graph_plan_free(pl);
      pl = expect;
    }
  }
  wk_tensor *small[256], **env = g->nvals <= 256 ? small : wk_calloc((size_t)g->nvals, sizeof *env);
  if (!env) return wk_error(WK_ERR_NO_MEMORY, "graph_run: out of memory");
  if (env == small) memset(small, 0, sizeof *small * (size_t)g->nvals);
  for (int i = 0; i < n; i++) env[g->inputs[i]] = wk_retain(inputs[i]);
  for (int k = 0; k < pl->npv && !st; k++) {
    int v = pl->pvals[k];
    wk_tensor *t = g->vals[v].t;
    wk_device td = wk__device_norm(t->storage->device);
    if (td.type == dev.type && td.index == dev.index) {
      env[v] = wk_retain(t);
    } else {
      wk__call_depth++;
      env[v] = wk_to_device(t, dev);
      wk__call_depth--;
      if (!env[v]) st = wk_last_error();
    }
  }
  wk_value args[WK_MAX_ARGS];
  argbuf b;
  for (int p = 0; p < pl->n && !st; p++) {
    const pnode *q = &pl->nodes[p];
    const gnode *nd = &g->nodes[q->id];
    wk_tensor *res[64];
    if (nd->nouts > 64) {
      st = wk_error(WK_ERR_UNSUPPORTED, "graph_run: %s() has %d results (at most 64)", wk_op_name(nd->op), nd->nouts);
      break;
    }
    memcpy(args, q->tmpl, sizeof *args * (size_t)q->nargs);
    st = fill_dyn(g, nd, q, env, syms, from, dev, args, &b);
    if (!st) st = call_node(nd, args, res);
    for (int j = 0; j < q->ndyn; j++) {
      free(b.heap[q->dyn[j]]);
      b.heap[q->dyn[j]] = NULL;
    }
    if (st) {
      st = node_error(g, nd, "graph_run");
      break;
    }
    for (int i = 0; i < nd->nouts; i++) {
      int v = nd->outs[i];
      if (v < 0) {
        wk_release(res[i]);
        continue;
      }
      env[v] = res[i];
      if (!q->check || st) continue;
      const gvalue *pv = &g->vals[v];
      bool ok = res[i] && res[i]->ndim == pv->ndim;
      for (int d = 0; ok && d < pv->ndim; d++) ok = res[i]->sizes[d] == wk_symdim_eval(pv->dims[d], syms);
      if (!ok) st = shape_error(nd, pv, res[i], syms);
    }
    for (int k = 0; k < q->nrel; k++) { /* unref: inputs are the caller's, maybe scope-owned */
      wk_unref(env[q->rel[k]]);
      env[q->rel[k]] = NULL;
    }
  }
  if (!st)
    for (int i = 0; i < g->noutputs; i++) {
      outputs[i] = wk_retain(env[g->outputs[i]]);
      if (wk__call_depth == 0) wk__scope_adopt(outputs[i]);
    }
  for (int v = 0; v < g->nvals; v++) wk_unref(env[v]);
  if (env != small) free(env);
  return st;
}

/* ---- shape propagation ---- */
static wk_tensor *meta_of(const wk_graph *g, int v, const int64_t *syms) {
  const gvalue *p = &g->vals[v];
  int64_t sizes[WK_MAX_DIMS];
  for (int d = 0; d < p->ndim; d++) sizes[d] = wk_symdim_eval(p->dims[d], syms);
  wk_options o = {0};
  o.dtype = p->dtype;
  o.device = (wk_device){WK_DEVICE_META, 0};
  if (p->t) return wk_empty_strided(p->t->sizes, p->t->strides, p->t->ndim, o);
  return wk_empty(sizes, p->ndim, o);
}

static wk_status graph_infer(wk_graph *g, int from, int to);

wk_status wk__graph_infer(wk_graph *g, int from, int to) {
  wk__call_depth++; /* its meta tensors are its own, never a scope's */
  wk_status st = graph_infer(g, from, to);
  wk__call_depth--;
  return st;
}

static wk_status graph_infer(wk_graph *g, int from, int to) {
  if (from >= to) return WK_OK;
  int64_t hints[WK__SYM_MAX];
  for (int k = 0; k < g->nsyms; k++) hints[k] = g->syms[k].hint;
  wk__sym_points pts;
  wk_status st = wk__sym_points_make(hints, g->nsyms, &pts);
  if (st) return st;
  /* every int seen: per node in range, per result, per dim; and dtypes/ranks at point 0 */
  int nres = 0;
  for (int p = from; p < to; p++) nres += g->nodes[g->order[p]].nouts ? g->nodes[g->order[p]].nouts : 64;
  int64_t *vals = wk_calloc((size_t)nres * WK_MAX_DIMS * (size_t)pts.npts + 1, sizeof *vals);
  int *rank = wk_calloc((size_t)nres + 1, sizeof *rank);
  wk_dtype *dts = wk_calloc((size_t)nres + 1, sizeof *dts);
  int *nouts = wk_calloc((size_t)(to - from), sizeof *nouts);
  wk_tensor **env = wk_calloc((size_t)(g->nvals ? g->nvals : 1) + (size_t)nres, sizeof *env);
  if (!vals || !rank || !dts || !nouts || !env) st = wk_error(WK_ERR_NO_MEMORY, "graph: out of memory");
  wk_device from_dev = graph_device(g), meta = {WK_DEVICE_META, 0};
  for (int r = 0; r < pts.npts && !st; r++) {
    const int64_t *syms = pts.v[r];
    int slot = 0;
    for (int p = from; p < to && !st; p++) {
      gnode *nd = &g->nodes[g->order[p]];
      /* inputs made before `from`, as meta tensors of their shape at this point */
      for (int i = 0; i < nd->nargs && !st; i++) {
        const wk_garg *a = &nd->args[i];
        int cnt = a->tag == WK_V_TENSOR ? 1 : a->tag == WK_V_TENSORS ? a->len : 0;
        for (int k = 0; k < cnt && !st; k++) {
          int v = a->tag == WK_V_TENSOR ? a->u.v : a->u.vs[k];
          if (v >= 0 && !env[v] && !(env[v] = meta_of(g, v, syms))) st = wk_last_error();
        }
      }
      wk_value args[WK_MAX_ARGS];
      argbuf b;
      wk_tensor *res[64] = {0};
      if (!st) st = build_args(g, nd, env, syms, from_dev, meta, args, &b);
      if (!st) {
        wk_value outs[WK_MAX_OUTS];
        wk__call_depth++;
        st = wk_op_call(nd->op, args, nd->nargs, outs);
        wk__call_depth--;
        const wk__schema *s = wk__op_schema(nd->op);
        if (!st && s->returns_list) {
          wk_tensor **arr = (wk_tensor **)outs[0].u.tensors;
          int len = outs[0].tag == WK_V_TENSORS ? outs[0].len : 0;
          if (r == 0 && !nd->nouts) nd->list_out = true;
          for (int k = 0; k < len; k++) {
            if (k < 64) res[k] = arr[k];
            else wk_release(arr[k]);
          }
          wk_free(arr);
          nouts[p - from] = len < 64 ? len : 64;
        } else if (!st) {
          for (int i = 0; i < s->nouts; i++) {
            res[i] = outs[i].tag == WK_V_TENSOR ? outs[i].u.t : NULL;
            if (res[i] && wk__op_out_target(nd->op, i) >= 0) wk_retain(res[i]);
          }
          nouts[p - from] = s->nouts;
        }
      }
      argbuf_free(&b, nd->nargs);
      if (st) {
        st = node_error(g, nd, r ? "graph: shape propagation" : "graph");
        break;
      }
      if (r > 0 && nd->nouts && nouts[p - from] != nd->nouts) {
        st = wk_error(WK_ERR_UNSUPPORTED, "graph: %s() gives %d results at other symbol values, %d at the hints",
                      wk_op_name(nd->op), nouts[p - from], nd->nouts);
        for (int i = 0; i < nouts[p - from]; i++) wk_release(res[i]);
        break;
      }
      for (int i = 0; i < nouts[p - from]; i++, slot++) {
        wk_tensor *t = res[i];
        if (r == 0) {
          rank[slot] = t ? t->ndim : -1;
          dts[slot] = t ? t->dtype : WK_DTYPE_DEFAULT;
        } else if ((t ? t->ndim : -1) != rank[slot]) {
          st = wk_error(WK_ERR_UNSUPPORTED, "graph: %s() gives a result of another rank at other symbol values",
                        wk_op_name(nd->op));
        }
        for (int d = 0; t && d < t->ndim && !st; d++)
          vals[((size_t)slot * WK_MAX_DIMS + (size_t)d) * (size_t)pts.npts + (size_t)r] = t->sizes[d];
        /* the result stands for its value in later nodes of the range */
        int v = i < nd->nouts ? nd->outs[i] : -1;
        if (v >= 0) {
          wk_release(env[v]);
          env[v] = t;
        } else {
          wk_release(t);
        }
      }
    }
    for (int v = 0; v < g->nvals; v++) {
      wk_release(env[v]);
      env[v] = NULL;
    }
  }
  /* fit, then write the results' metadata (making values for new nodes) */
  int slot = 0;
  for (int p = from; p < to && !st; p++) {
    int id = g->order[p];
    gnode *nd = &g->nodes[id];
    int no = nouts[p - from];
    if (!nd->nouts && no) {
      nd->outs = wk_malloc(sizeof *nd->outs * (size_t)no);
      if (!nd->outs) {
        st = wk_error(WK_ERR_NO_MEMORY, "graph: out of memory");
        break;
      }
      const wk__schema *s = wk__op_schema(nd->op);
      char bn[128];
      snprintf(bn, sizeof bn, "%s", s->name);
      char *dot = strchr(bn, '.');
      if (dot) *dot = 0;
      for (int i = 0; i < no && !st; i++) {
        nd->outs[i] = -1;
        nd->nouts = i + 1;
        if (rank[slot + i] < 0) continue;
        int v = wk__graph_add_node_value(g, id, i, dts[slot + i], from_dev, 0, NULL, bn);
        nd = &g->nodes[id];
        if (v < 0) st = wk_last_error();
        else nd->outs[i] = v;
      }
    }
    for (int i = 0; i < no && !st; i++, slot++) {
      int v = nd->outs[i];
      if (v < 0 || rank[slot] < 0) continue;
      gvalue *pv = &g->vals[v];
      pv->dtype = dts[slot];
      pv->ndim = rank[slot];
      for (int d = 0; d < pv->ndim && !st; d++) {
        wk_symdim sd;
        if (!wk__sym_fit(&pts, vals + ((size_t)slot * WK_MAX_DIMS + (size_t)d) * (size_t)pts.npts, &sd))
          st = wk_error(WK_ERR_UNSUPPORTED, "graph: %s()%s%s%s: dim %d of result %d changes with the symbols in a way no symbolic dim describes",
                        wk_op_name(nd->op), *nd->path ? " in '" : "", nd->path, *nd->path ? "'" : "", d, i);
        else
          pv->dims[d] = sd;
      }
    }
  }
  free(vals);
  free(rank);
  free(dts);
  free(nouts);
  free(env);
  wk__sym_points_free(&pts);
  wk__graph_changed(g);
  return st;
}

wk_status wk_graph_propagate(wk_graph *g) {
  if (!g) return wk_error(WK_ERR_NULL, "graph_propagate: argument 'graph' is NULL");
  wk_error_new_call();
  wk_status st = wk_graph_validate(g);
  if (st) return st;
  bool prev = wk_set_grad_enabled(false);
  st = wk__graph_infer(g, 0, g->norder);
  wk_set_grad_enabled(prev);
  return st;
}
