/* The passes every graph user needs: dead-code elimination, common
 * subexpression elimination and constant folding. A node that mutates an
 * argument (in-place, out=) or draws random numbers is never removed, merged
 * or folded, and CSE forgets what it saw at each mutation: a later read of an
 * alias may see the change. */
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"
#include "meta.h"

static bool impure(const gnode *n) {
  uint32_t tags = wk_op_tags(n->op);
  return (tags & (WK_TAG_INPLACE | WK_TAG_RANDOM)) || wk_op_mutated_arg(n->op) >= 0;
}

int wk_graph_dce(wk_graph *g) {
  if (!g) return wk__null_arg("graph_dce", "graph"), -1;
  wk_error_new_call();
  int *u = wk__graph_use_counts(g);
  if (!u) return wk_error(WK_ERR_NO_MEMORY, "graph_dce: out of memory"), -1;
  int removed = 0;
  for (int p = g->norder - 1; p >= 0; p--) {
    int id = g->order[p];
    gnode *n = &g->nodes[id];
    if (impure(n)) continue;
    bool used = false;
    for (int i = 0; i < n->nouts && !used; i++) used = n->outs[i] >= 0 && u[n->outs[i]] > 0;
    if (used) continue;
    /* its reads go with it, so its producers may die too */
    for (int i = 0; i < n->nargs; i++) {
      const wk_garg *a = &n->args[i];
      if (a->tag == WK_V_TENSOR) u[a->u.v]--;
      if (a->tag == WK_V_TENSORS)
        for (int k = 0; k < a->len; k++)
          if (a->u.vs[k] >= 0) u[a->u.vs[k]]--;
    }
    if (wk_graph_erase_node(g, id) != WK_OK) {
      free(u);
      return -1;
    }
    removed++;
  }
  free(u);
  return removed;
}

static bool same_arg(const wk_garg *x, const wk_garg *y) {
  if (x->tag != y->tag || x->len != y->len) return false;
  switch (x->tag) {
    case WK_V_TENSOR: return x->u.v == y->u.v;
    case WK_V_TENSORS: return !memcmp(x->u.vs, y->u.vs, sizeof *x->u.vs * (size_t)x->len);
    case WK_V_INT: return wk__sym_equal(x->u.sym, y->u.sym);
    case WK_V_INTS:
      for (int k = 0; k < x->len; k++)
        if (!wk__sym_equal(x->u.syms[k], y->u.syms[k])) return false;
      return true;
    case WK_V_FLOAT: return !memcmp(&x->u.f, &y->u.f, sizeof x->u.f); /* bitwise: -0.0 and NaN payloads differ */
    case WK_V_BOOL: return x->u.b == y->u.b;
    case WK_V_STR: return !strcmp(x->u.s, y->u.s);
    case WK_V_DTYPE: return x->u.dtype == y->u.dtype;
    case WK_V_DEVICE: return x->u.device.type == y->u.device.type && x->u.device.index == y->u.device.index;
    default: return true;
  }
}

static bool same_node(const gnode *x, const gnode *y) {
  if (x->op != y->op || x->nargs != y->nargs || x->nouts != y->nouts) return false;
  for (int i = 0; i < x->nargs; i++)
    if (!same_arg(&x->args[i], &y->args[i])) return false;
  return true;
}

int wk_graph_cse(wk_graph *g) {
  if (!g) return wk__null_arg("graph_cse", "graph"), -1;
  wk_error_new_call();
  int *seen = wk_malloc(sizeof *seen * (size_t)(g->norder ? g->norder : 1));
  if (!seen) return wk_error(WK_ERR_NO_MEMORY, "graph_cse: out of memory"), -1;
  int nseen = 0, merged = 0;
  for (int p = 0; p < g->norder; p++) {
    int id = g->order[p];
    gnode *n = &g->nodes[id];
    if (impure(n)) {
      nseen = 0; /* a mutation: what was computed before may differ now */
      continue;
    }
    int twin = -1;
    for (int k = 0; k < nseen && twin < 0; k++)
      if (same_node(&g->nodes[seen[k]], n)) twin = seen[k];
    if (twin < 0) {
      seen[nseen++] = id;
      continue;
    }
    const gnode *t = &g->nodes[twin];
    bool ok = true;
    for (int i = 0; i < n->nouts && ok; i++)
      if (n->outs[i] >= 0 && t->outs[i] >= 0) ok = wk_graph_replace_uses(g, n->outs[i], t->outs[i]) == WK_OK;
    if (!ok || wk_graph_erase_node(g, id) != WK_OK) {
      free(seen);
      return -1;
    }
    merged++;
    p--; /* the order shifted down by one */
  }
  free(seen);
  return merged;
}

int wk_graph_fold_constants(wk_graph *g, bool fold_params) {
  if (!g) return wk__null_arg("graph_fold_constants", "graph"), -1;
  wk_error_new_call();
  int folded = 0;
  bool prev = wk_set_grad_enabled(false);
  for (int p = 0; p < g->norder; p++) {
    int id = g->order[p];
    gnode *n = &g->nodes[id];
    if (impure(n) || n->nouts == 0) continue;
    bool foldable = true, any_tensor = false;
    for (int i = 0; i < n->nargs && foldable; i++) {
      const wk_garg *a = &n->args[i];
      int cnt = a->tag == WK_V_TENSOR ? 1 : a->tag == WK_V_TENSORS ? a->len : 0;
      for (int k = 0; k < cnt && foldable; k++) {
        int v = a->tag == WK_V_TENSOR ? a->u.v : a->u.vs[k];
        if (v < 0) continue;
        int kind = g->vals[v].kind;
        any_tensor = true;
        foldable = kind == WK_GV_CONST || (fold_params && kind == WK_GV_PARAM);
      }
      if (a->tag == WK_V_INT) foldable = wk__sym_is_const(a->u.sym);
      for (int k = 0; a->tag == WK_V_INTS && k < a->len && foldable; k++) foldable = wk__sym_is_const(a->u.syms[k]);
    }
    if (!foldable || (!any_tensor && !(wk_op_tags(n->op) & WK_TAG_FACTORY))) continue;
    /* run it once, on the tensors themselves */
    wk_value args[WK_MAX_ARGS], outs[WK_MAX_OUTS];
    wk_tensor *lists[WK_MAX_ARGS][WK_MAX_ARGS];
    int64_t ints[WK_MAX_ARGS][WK_MAX_DIMS * 2];
    bool fits = true;
    for (int i = 0; i < n->nargs; i++) {
      const wk_garg *a = &n->args[i];
      wk_value v = {.tag = a->tag, .len = a->len};
      switch (a->tag) {
        case WK_V_TENSOR: v.u.t = g->vals[a->u.v].t; break;
        case WK_V_TENSORS:
          if (a->len > WK_MAX_ARGS) fits = false;
          for (int k = 0; k < a->len && fits; k++) lists[i][k] = a->u.vs[k] >= 0 ? g->vals[a->u.vs[k]].t : NULL;
          v.u.tensors = lists[i];
          break;
        case WK_V_INT: v.u.i = wk_symdim_eval(a->u.sym, NULL); break;
        case WK_V_INTS:
          if (a->len > WK_MAX_DIMS * 2) fits = false;
          for (int k = 0; k < a->len && fits; k++) ints[i][k] = wk_symdim_eval(a->u.syms[k], NULL);
          v.u.ints = ints[i];
          break;
        case WK_V_FLOAT: v.u.f = a->u.f; break;
        case WK_V_BOOL: v.u.b = a->u.b; break;
        case WK_V_STR: v.u.s = a->u.s; break;
        case WK_V_DTYPE: v.u.dtype = a->u.dtype; break;
        case WK_V_DEVICE: v.u.device = a->u.device; break;
        default: break;
      }
      args[i] = v;
    }
    if (!fits || n->list_out) continue;
    wk__call_depth++;
    wk_status st = wk_op_call(n->op, args, n->nargs, outs);
    wk__call_depth--;
    if (st) { /* it would fail at run time too: leave it for the run to report */
      wk_clear_error();
      continue;
    }
    bool ok = true;
    int nres = n->nouts;
    for (int i = 0; i < nres; i++) {
      if (n->outs[i] < 0 || outs[i].tag != WK_V_TENSOR) {
        if (outs[i].tag == WK_V_TENSOR) wk_release(outs[i].u.t);
        continue;
      }
      wk_tensor *t = outs[i].u.t;
      int c = ok ? wk_graph_add_const(g, t) : -1;
      wk_release(t);
      n = &g->nodes[id];
      if (c < 0) {
        ok = false;
        continue;
      }
      /* the constant is made before every node: move its uses over */
      if (wk_graph_replace_uses(g, n->outs[i], c) != WK_OK) ok = false;
      n = &g->nodes[id];
    }
    if (!ok) {
      wk_set_grad_enabled(prev);
      return -1;
    }
    /* the node itself goes when nothing reads it now */
    bool used = false;
    int *u = wk__graph_use_counts(g);
    if (!u) {
      wk_set_grad_enabled(prev);
      return wk_error(WK_ERR_NO_MEMORY, "graph_fold_constants: out of memory"), -1;
    }
    for (int i = 0; i < n->nouts; i++) used = used || (n->outs[i] >= 0 && u[n->outs[i]] > 0);
    free(u);
    if (!used && wk_graph_erase_node(g, id) == WK_OK) p--;
    folded++;
  }
  wk_set_grad_enabled(prev);
  return folded;
}
