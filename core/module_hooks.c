/* Full backward hooks on modules (PyTorch's register_full_backward_hook and
 * register_full_backward_pre_hook, torch/utils/hooks.py BackwardHook): a
 * module's inputs that require grad pass through an identity node before its
 * forward, and its output through another after it. In backward the output's
 * node runs the pre hooks on grad_output (they may replace it) and keeps it;
 * the inputs' node then runs the full hooks on (grad_input, grad_output)
 * (they may replace grad_input). */
#include <string.h>

#include "autograd_internal.h"
#include "module_internal.h"

struct wk__bw_call {
  atomic_int refs;
  wk_module *m; /* strong */
  int nh;
  wk__bw_hook *hooks; /* the hooks registered when forward ran (PyTorch snapshots them too) */
  int nin;                       /* the module's inputs */
  int nw;                        /* of them, wrapped (requiring grad) */
  int slot[WK__MAX_NODE_INPUTS]; /* wrapped k -> module input index */
  wk_tensor *gout;               /* grad_output between the two nodes (strong), or NULL */
};

static void call_release(void *p) {
  wk__bw_call *c = p;
  if (!c || atomic_fetch_sub(&c->refs, 1) != 1) return;
  wk_unref(c->gout);
  wk_module_release(c->m);
  wk_free(c->hooks);
  wk_free(c);
}

static wk__bw_call *call_retain(wk__bw_call *c) {
  atomic_fetch_add(&c->refs, 1);
  return c;
}

/* A replacement gradient must have the shape of the one it replaces. */
static wk_status same_shape(const wk__bw_call *c, bool pre, int i, wk_tensor *g, wk_tensor *want) {
  if (g->ndim == want->ndim && !memcmp(g->sizes, want->sizes, sizeof(int64_t) * (size_t)g->ndim)) return WK_OK;
  char a[256], b[256];
  return wk_error(WK_ERR_SHAPE, "%s: a full backward %shook returned %s[%d] of shape %s, expected %s",
                  wk_module_class_name(c->m), pre ? "pre " : "", pre ? "grad_output" : "grad_input", i,
                  wk__shape_str(g->sizes, g->ndim, a, sizeof a), wk__shape_str(want->sizes, want->ndim, b, sizeof b));
}

static wk_status hook_failed(const wk__bw_call *c, wk_status s, bool full) {
  if (!wk__error_pending()) wk_error(s, "%s: full backward %shook failed without a message", wk_module_class_name(c->m),
                                     full ? "" : "pre ");
  return wk_last_error() ? wk_last_error() : s;
}

/* The full hooks in registration order on gi[0..nin) (NULL: that input needs
 * no gradient; own[i]: gi[i] is a reference of ours). grad_output is c->gout
 * (absent when the output node did not run). */
static wk_status run_full(wk__bw_call *c, wk_tensor **gi, bool *own) {
  wk_tensor *const *go = c->gout ? &c->gout : NULL;
  int ngo = c->gout ? 1 : 0;
  for (int h = 0; h < c->nh; h++) {
    if (!c->hooks[h].full) continue;
    wk_tensor *repl[WK__MAX_NODE_INPUTS] = {0};
    wk_status s = ((wk_full_backward_hook)c->hooks[h].fn)(c->hooks[h].user, c->m, gi, c->nin, go, ngo, repl);
    if (s) {
      for (int i = 0; i < c->nin; i++) wk_unref(repl[i]);
      return hook_failed(c, s, true);
    }
    for (int i = 0; i < c->nin && !s; i++) {
      if (!repl[i]) continue;
      if (!gi[i])
        s = wk_error(WK_ERR_INVALID_ARG,
                     c->nw ? "%s: a full backward hook returned a gradient for input %d, which does not require grad"
                           : "%s: a full backward hook returned a gradient for input %d, but no input of the module "
                             "requires grad (it must leave every grad_input NULL)",
                     wk_module_class_name(c->m), i);
      else s = same_shape(c, false, i, repl[i], gi[i]);
      if (s) break;
      if (own[i]) wk_unref(gi[i]);
      gi[i] = repl[i];
      own[i] = true;
      repl[i] = NULL;
    }
    for (int i = 0; i < c->nin; i++) wk_unref(repl[i]);
    if (s) return s;
  }
  return WK_OK;
}

/* The inputs' node: identity, with the full hooks on the way. */
static wk_status d_inputs(const wk__bctx *bc, wk_tensor *const *gout, wk_tensor **gin) {
  wk__bw_call *c = bc->node->extra;
  wk_tensor *gi[WK__MAX_NODE_INPUTS] = {0};
  bool own[WK__MAX_NODE_INPUTS] = {0};
  for (int k = 0; k < c->nw; k++) gi[c->slot[k]] = gout[k];
  wk_status s = run_full(c, gi, own);
  for (int k = 0; k < c->nw && !s; k++) gin[k] = wk_retain(gi[c->slot[k]]);
  for (int i = 0; i < c->nin; i++)
    if (own[i]) wk_unref(gi[i]);
  wk_unref(c->gout); /* (kept no longer than needed: under create_graph it may lead back to these nodes) */
  c->gout = NULL;
  return s;
}

/* The output's node: identity, with the pre hooks on the way; keeps
 * grad_output for the inputs' node, or runs the full hooks at once (with
 * every grad_input NULL) when no input requires grad, as PyTorch does. */
static wk_status d_output(const wk__bctx *bc, wk_tensor *const *gout, wk_tensor **gin) {
  wk__bw_call *c = bc->node->extra;
  wk_tensor *g = wk_retain(gout[0]);
  wk_status s = WK_OK;
  for (int h = 0; h < c->nh && !s; h++) {
    if (c->hooks[h].full) continue;
    wk_tensor *repl = NULL;
    s = ((wk_full_backward_pre_hook)c->hooks[h].fn)(c->hooks[h].user, c->m, &g, 1, &repl);
    if (s) s = hook_failed(c, s, false);
    else if (repl && (s = same_shape(c, true, 0, repl, g))) wk_unref(repl);
    else if (repl) {
      wk_unref(g);
      g = repl;
    }
  }
  bool any_full = false;
  for (int h = 0; h < c->nh; h++) any_full = any_full || c->hooks[h].full;
  if (!s && any_full) {
    wk_unref(c->gout);
    c->gout = wk_retain(g);
    if (c->nw == 0) {
      wk_tensor *gi[WK__MAX_NODE_INPUTS] = {0};
      bool own[WK__MAX_NODE_INPUTS] = {0};
      s = run_full(c, gi, own);
      wk_unref(c->gout);
      c->gout = NULL;
    }
  }
  if (s) {
    wk_unref(g);
    return s;
  }
  gin[0] = g;
  return WK_OK;
}

static const wk__formula g_inputs_formula = {"module_backward_hook", "BackwardHookFunctionBackward", d_inputs, 0, 0,
                                             NULL, false};
static const wk__formula g_output_formula = {"module_backward_hook", "BackwardHookFunctionBackward", d_output, 0, 0,
                                             NULL, false};

/* An identity node over ts[0..n) with formula f; out[k] receives a fresh
 * handle on ts[k] whose grad_fn is the node. false with an error. */
static bool identity_node(wk__bw_call *c, const wk__formula *f, wk_tensor *const *ts, int n, wk_tensor **out) {
  wk__node *node = wk__node_new(n, n, n);
  if (!node) {
    wk_error(WK_ERR_NO_MEMORY, "%s: out of memory for a backward hook", wk_module_class_name(c->m));
    return false;
  }
  node->f = f;
  node->name = f->name;
  node->extra = call_retain(c);
  node->extra_free = call_release;
  if (wk_anomaly_enabled()) node->forward_trace = wk__strdup("BackwardHookFunctionBackward (forward: a module's "
                                                              "full backward hook)");
  bool ok = true;
  for (int k = 0; k < n; k++) {
    node->args[k] = (wk_value){.tag = WK_V_TENSOR};
    node->k_of_arg[k] = k;
    wk__node_set_input(node, k, ts[k]);
    if (!node->next[k].node) ok = false; /* the leaf's AccumulateGrad could not be made */
  }
  for (int k = 0; k < n; k++) out[k] = NULL;
  for (int k = 0; k < n && ok; k++) {
    wk_tensor *t = ts[k];
    wk_tensor *r = wk__view_of(t, t->ndim, t->sizes, t->strides, t->offset);
    wk__ameta *m = r ? wk__ameta_get(r) : NULL;
    if (!m) {
      wk_unref(r);
      ok = false;
      break;
    }
    wk__node_set_output(node, k, r);
    m->grad_fn = wk__node_retain(node);
    m->output_nr = k;
    out[k] = r;
  }
  if (!ok) {
    for (int k = 0; k < n; k++) {
      wk_unref(out[k]);
      out[k] = NULL;
    }
    if (!wk__error_pending())
      wk_error(WK_ERR_NO_MEMORY, "%s: out of memory for a backward hook", wk_module_class_name(c->m));
  }
  wk__node_release(node); /* the outputs hold it */
  return ok;
}

wk__bw_call *wk__bw_begin(wk_module *m, const wk__bw_hook *hooks, int nh, wk_tensor *const *inputs, int n,
                          wk_tensor **wrapped) {
  if (n > WK__MAX_NODE_INPUTS) {
    wk_error(WK_ERR_INVALID_ARG, "%s: full backward hooks support at most %d inputs, got %d", wk_module_class_name(m),
             WK__MAX_NODE_INPUTS, n);
    return NULL;
  }
  wk__bw_call *c = wk_calloc(1, sizeof *c);
  wk__bw_hook *snap = wk_malloc(sizeof *snap * (size_t)(nh ? nh : 1));
  if (!c || !snap) {
    wk_free(c);
    wk_free(snap);
    wk_error(WK_ERR_NO_MEMORY, "%s: out of memory for a backward hook", wk_module_class_name(m));
    return NULL;
  }
  memcpy(snap, hooks, sizeof *snap * (size_t)nh);
  atomic_init(&c->refs, 1);
  c->m = wk_module_retain(m);
  c->hooks = snap;
  c->nh = nh;
  c->nin = n;
  bool any_full = false;
  for (int h = 0; h < nh; h++) any_full = any_full || hooks[h].full;
  wk_tensor *ts[WK__MAX_NODE_INPUTS], *outs[WK__MAX_NODE_INPUTS];
  for (int i = 0; i < n; i++) {
    wrapped[i] = inputs[i];
    if (any_full && wk__requires_grad(inputs[i]) && wk_dtype_is_floating(inputs[i]->dtype)) {
      c->slot[c->nw] = i;
      ts[c->nw++] = inputs[i];
    }
  }
  if (c->nw && !identity_node(c, &g_inputs_formula, ts, c->nw, outs)) {
    call_release(c);
    return NULL;
  }
  for (int k = 0; k < c->nw; k++) wrapped[c->slot[k]] = outs[k];
  return c;
}

wk_tensor *wk__bw_end(wk__bw_call *c, wk_tensor *r) {
  if (!r || !wk__requires_grad(r) || !wk_dtype_is_floating(r->dtype)) return r;
  wk_tensor *out = NULL;
  bool ok = identity_node(c, &g_output_formula, &r, 1, &out);
  wk_release(r); /* as user code would: it leaves the caller's scope */
  if (!ok) return NULL;
  if (wk__call_depth == 0) wk__scope_adopt(out);
  return out;
}

void wk__bw_finish(wk__bw_call *c, wk_tensor **wrapped, int n) {
  if (!c) return;
  for (int k = 0; k < c->nw && k < n; k++) wk_unref(wrapped[c->slot[k]]);
  call_release(c);
}
