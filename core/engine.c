/* The backward engine: counts dependencies over the graph reachable from the
 * roots, then runs nodes from a ready stack (no recursion, so 100k-node
 * chains are fine), summing gradients per node input, reducing broadcast
 * gradients back to input shapes once, running hooks, accumulating into
 * leaves' .grad (or capturing them for wk_grad), and freeing saved tensors
 * as soon as a node ran unless the graph is retained. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd_internal.h"
#include "autograd_queue.h"

typedef struct {
  wk__node **v;
  size_t n, cap;
} nodevec;

static bool push(nodevec *s, wk__node *n) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 256;
    wk__node **p = wk_realloc(s->v, cap * sizeof *p);
    if (!p) return false;
    s->v = p;
    s->cap = cap;
  }
  s->v[s->n++] = n;
  return true;
}

typedef struct {
  wk__edge edge;   /* where the input's gradient arrives */
  wk_tensor *grad; /* captured gradient (new reference) */
} capture;

typedef struct {
  bool keep_graph, create_graph, accumulate;
  capture *caps;
  int ncaps;
} run_opts;

/* Sum grad down to the input's shape (broadcasting undone once, here). */
static wk_tensor *sum_to(wk_tensor *g, const int64_t *sizes, int ndim, const char *node, int k) {
  bool same = g->ndim == ndim;
  for (int i = 0; same && i < ndim; i++) same = g->sizes[i] == sizes[i];
  if (same) return wk_retain(g);
  char a[160], b[160];
  int lead = g->ndim - ndim;
  bool ok = lead >= 0;
  for (int i = 0; ok && i < ndim; i++) ok = sizes[i] == g->sizes[lead + i] || sizes[i] == 1;
  if (!ok) {
    wk_error(WK_ERR_INTERNAL, "autograd: %s returned an invalid gradient at index %d - got %s but expected shape "
             "compatible with %s", node, k, wk__shape_str(g->sizes, g->ndim, a, sizeof a),
             wk__shape_str(sizes, ndim, b, sizeof b));
    return NULL;
  }
  int64_t dims[WK_MAX_DIMS];
  int nd = 0;
  for (int i = 0; i < lead; i++) dims[nd++] = i;
  for (int i = 0; i < ndim; i++)
    if (sizes[i] == 1 && g->sizes[lead + i] != 1) dims[nd++] = lead + i;
  wk_tensor *s = nd ? wk_sum_dim(g, dims, nd, true) : wk_retain(g);
  wk_tensor *r = s ? wk_reshape(s, sizes, ndim) : NULL;
  wk_release(s);
  return r;
}

/* True when nothing but the engine's buffer can see t's memory: one handle
 * reference, one tensor on its storage (no view, no other branch holding the
 * same gradient, no hook or trace that kept it), plain memory, same layout as
 * g. Then accumulation may write into it, as PyTorch's InputBuffer does. */
static bool can_accumulate_in_place(const wk_tensor *t, const wk_tensor *g) {
  if (atomic_load(&t->refcount) != 1 || !t->storage || atomic_load(&t->storage->refcount) != 1) return false;
  if (t->storage->external || t->quant || t->dtype != g->dtype || t->ndim != g->ndim) return false;
  for (int i = 0; i < t->ndim; i++)
    if (t->sizes[i] != g->sizes[i]) return false;
  return (wk_tensor_is_contiguous(t) || wk_suggest_memory_format(t) == WK_CHANNELS_LAST) && !wk_tensor_requires_grad(t);
}

/* Adds g (consumed) into *slot: in place when the buffer's tensor is the
 * engine's alone and no graph of the backward is being built. */
static wk_status accumulate_into(wk_tensor **slot, wk_tensor *g, bool create_graph) {
  if (!*slot) {
    *slot = g;
    return WK_OK;
  }
  if (!create_graph && can_accumulate_in_place(*slot, g)) {
    wk_tensor *r = wk_add_(*slot, g);
    wk_release(g);
    return r ? WK_OK : wk_last_error();
  }
  wk_tensor *sum = wk_add(*slot, g);
  wk_release(g);
  if (!sum) return wk_last_error();
  wk_release(*slot);
  *slot = sum;
  return WK_OK;
}

static wk_tensor *run_hooks(wk__hook *h, wk_tensor *g) {
  for (; h && g; h = h->next) {
    if (!h->fn) continue;
    wk_tensor *r = h->fn(h->user, g); /* NULL: keep the gradient as it is */
    if (r) {
      wk_release(g);
      g = r;
    }
  }
  return g;
}

static bool has_nonfinite(wk_tensor *g) {
  int64_t n = wk_tensor_numel(g);
  if (n == 0 || !wk_dtype_is_floating(g->dtype)) return false;
  double *v = wk_malloc(sizeof(double) * (size_t)n);
  if (!v) return false;
  bool bad = false;
  if (wk_tensor_to_f64(g, v, n) == WK_OK)
    for (int64_t i = 0; i < n && !bad; i++) bad = !isfinite(v[i]);
  free(v);
  return bad;
}

/* Accumulates into a leaf's .grad (PyTorch's AccumulateGrad). */
static wk_status accumulate_leaf(wk__node *n, wk_tensor *g, const run_opts *o) {
  wk_tensor *var = n->variable;
  if (!var) { /* the leaf died: nothing to accumulate into */
    wk_release(g);
    return WK_OK;
  }
  wk__ameta *m = wk__ameta_get(var);
  if (!m) {
    wk_release(g);
    return wk_last_error();
  }
  g = run_hooks(m->hooks, g);
  if (!g) return wk_last_error();
  if (g->dtype != var->dtype) {
    wk_tensor *c = wk_to_dtype(g, var->dtype);
    wk_release(g);
    if (!(g = c)) return wk_last_error();
  }
  wk_status s = WK_OK;
  if (!m->grad) {
    /* Steal an exclusive dense gradient laid out as the leaf (row-major, or
     * channels_last for a channels-last leaf), else keep a private copy in
     * the leaf's layout (PyTorch's layout contract): later in-place
     * accumulation must not write into someone else's tensor. */
    bool var_cl = wk_suggest_memory_format(var) == WK_CHANNELS_LAST;
    bool exclusive = atomic_load(&g->refcount) == 1 && atomic_load(&g->storage->refcount) == 1 &&
                     (var_cl ? wk_suggest_memory_format(g) == WK_CHANNELS_LAST : wk_tensor_is_contiguous(g)) &&
                     !(g->autograd && ((wk__ameta *)g->autograd)->grad_fn);
    if (o->create_graph) {
      m->grad = g;
      g = NULL;
    } else if (exclusive) {
      m->grad = g;
      g = NULL;
    } else if (var_cl && g->ndim == 4) {
      bool prev = wk_set_grad_enabled(false);
      m->grad = wk_empty_format(g->sizes, 4, (wk_options){.dtype = g->dtype, .device = g->storage->device},
                                WK_CHANNELS_LAST);
      if (m->grad && !wk_copy_(m->grad, g)) {
        wk_release(m->grad);
        m->grad = NULL;
      }
      wk_set_grad_enabled(prev);
      if (!m->grad) s = wk_last_error();
    } else {
      m->grad = wk_clone(g);
      if (!m->grad) s = wk_last_error();
    }
  } else if (o->create_graph) {
    wk_tensor *sum = wk_add(m->grad, g);
    if (!sum) {
      s = wk_last_error();
    } else {
      wk_release(m->grad);
      m->grad = sum;
    }
  } else {
    bool prev = wk_set_grad_enabled(false);
    if (!wk_add_(m->grad, g)) s = wk_last_error();
    wk_set_grad_enabled(prev);
  }
  wk_release(g);
  for (wk__hook *h = m->post_hooks; !s && h; h = h->next)
    if (h->post) h->post(h->user, var);
  return s;
}

static wk_tensor *zeros_for(wk__node *n, int i) {
  return wk_zeros(n->out_sizes[i], n->out_ndim[i], (wk_options){.dtype = n->out_dtype[i], .device = n->out_device[i]});
}

/* A formula wrote no gradient for input k, which needs one (PyTorch: "the
 * derivative for 'target' is not implemented"). Formulas write zeros for an
 * input the result does not depend on, so a missing gradient is never
 * silently a missing .grad. */
static wk_status missing_gradient(const wk__node *n, int k) {
  int arg = -1; /* the argument holding flattened input k (Tensor[] elements share one) */
  for (int i = 0; i < n->nargs; i++)
    if (n->k_of_arg[i] >= 0 && n->k_of_arg[i] <= k) arg = i;
  const char *op = n->op ? wk_op_name(n->op) : n->name;
  const char *an = n->op && arg >= 0 ? wk_op_arg_name(n->op, arg) : NULL;
  return wk_error(WK_ERR_AUTOGRAD, "%s: the derivative for '%s' (argument %d) is not implemented", op,
                  an ? an : "?", arg + 1);
}

/* Runs one node whose every dependent has already run. */
static wk_status run_node(wk__node *n, const run_opts *o, nodevec *ready) {
  wk_tensor **buf = n->buffer;
  for (int i = 0; i < n->nout; i++)
    if (buf[i] && n->out_hooks[i]) {
      buf[i] = run_hooks(n->out_hooks[i], buf[i]);
      if (!buf[i]) return wk_last_error();
    }
  for (int c = 0; c < o->ncaps; c++)
    if (o->caps[c].edge.node == n && buf[o->caps[c].edge.input_nr]) {
      wk_tensor *g = buf[o->caps[c].edge.input_nr];
      wk_release(o->caps[c].grad);
      o->caps[c].grad = o->create_graph ? wk_retain(g) : wk_detach(g);
    }
  if (!n->f) { /* AccumulateGrad */
    wk_tensor *g = buf[0];
    buf[0] = NULL;
    if (!g || !o->accumulate) {
      wk_release(g);
      return WK_OK;
    }
    return accumulate_leaf(n, g, o);
  }
  bool any = false;
  for (int i = 0; i < n->nout; i++) any = any || buf[i];
  wk_tensor *gin[WK__MAX_NODE_INPUTS] = {0};
  bool needs[WK__MAX_NODE_INPUTS];
  wk_status s = WK_OK;
  if (any) {
    if (n->released)
      return wk_error(WK_ERR_AUTOGRAD,
                      "Trying to backward through the graph a second time (or directly access saved tensors after they "
                      "have already been freed). Saved intermediate values of the graph are freed when you call "
                      ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
                      "graph a second time or if you need to access saved tensors after calling backward. (node %s)",
                      n->name);
    for (int i = 0; i < n->nout && !s; i++)
      if (!buf[i] && n->out_differentiable[i] && !(buf[i] = zeros_for(n, i))) s = wk_last_error();
    for (int k = 0; k < n->nin; k++) needs[k] = n->next[k].node != NULL;
    wk_tensor *held[WK__MAX_HELD];
    int nheld = 0;
    wk__bctx c = {n, n->nin, needs, o->create_graph, held, &nheld, o->accumulate};
    if (!s) s = n->f->fn(&c, buf, gin);
    for (int i = 0; i < nheld; i++) wk_release(held[i]);
    if (s && !wk__error_pending()) wk_error(s, "autograd: %s failed", n->name);
    for (int k = 0; k < n->nin && !s; k++)
      if (needs[k] && !gin[k]) s = missing_gradient(n, k);
  }
  for (int k = 0; k < n->nin; k++) {
    wk__edge e = n->next[k];
    if (!s && gin[k] && e.node) {
      wk_tensor *g = sum_to(gin[k], n->in_sizes[k], n->in_ndim[k], n->name, k);
      if (g && g->dtype != n->in_dtype[k]) {
        wk_tensor *cst = wk_to_dtype(g, n->in_dtype[k]);
        wk_release(g);
        g = cst;
      }
      if (!g) {
        s = wk_last_error();
      } else if (wk_anomaly_enabled() && has_nonfinite(g)) {
        s = wk_error(WK_ERR_AUTOGRAD, "Function '%s' returned nan values in its %dth output. The forward op was: %s",
                     n->name, k, n->forward_trace ? n->forward_trace : wk_op_name(n->op));
        wk_release(g);
      } else {
        s = accumulate_into(&e.node->buffer[e.input_nr], g, o->create_graph);
      }
    }
    wk_release(gin[k]);
    if (e.node && --e.node->deps == 0 && !push(ready, e.node) && !s)
      s = wk_error(WK_ERR_NO_MEMORY, "autograd: out of memory");
  }
  return s;
}

/* A node's bookkeeping in an outer backward that is paused while a formula
 * runs a nested one over a graph sharing that node (checkpoint's recompute
 * reaches the same parameters' AccumulateGrad nodes). */
typedef struct {
  wk__node *n;
  uint64_t run;
  int deps;
  wk_tensor **buffer;
  bool queued;
} stashed;
typedef struct {
  stashed *v;
  size_t n, cap;
} stashvec;

static atomic_uint_fast64_t g_runs = 1;

/* Marks n as part of run `run` (stashing an outer run's bookkeeping). */
static bool discover(wk__node *n, uint64_t run, nodevec *all, nodevec *stack, stashvec *st) {
  if (n->run) {
    if (st->n == st->cap) {
      size_t cap = st->cap ? st->cap * 2 : 16;
      stashed *p = wk_realloc(st->v, cap * sizeof *p);
      if (!p) return false;
      st->v = p;
      st->cap = cap;
    }
    st->v[st->n++] = (stashed){n, n->run, n->deps, n->buffer, n->queued};
  }
  n->run = run;
  n->deps = 0;
  n->buffer = NULL;
  n->queued = false;
  return push(all, n) && push(stack, n);
}

/* Runs backward from roots (edges + gradients, consumed). */
static wk_status run_backward(wk__edge *roots, wk_tensor **grads, int nroots, const run_opts *o) {
  nodevec all = {0}, stack = {0}, ready = {0};
  stashvec st = {0};
  uint64_t run = atomic_fetch_add(&g_runs, 1);
  wk_status s = WK_OK;
  /* 1. discover the graph and count dependencies */
  for (int r = 0; r < nroots && !s; r++)
    if (roots[r].node && roots[r].node->run != run && !discover(roots[r].node, run, &all, &stack, &st))
      s = WK_ERR_NO_MEMORY;
  while (!s && stack.n) {
    wk__node *n = stack.v[--stack.n];
    for (int k = 0; k < n->nin && !s; k++) {
      wk__node *nx = n->next[k].node;
      if (!nx) continue;
      if (nx->run != run && !discover(nx, run, &all, &stack, &st)) s = WK_ERR_NO_MEMORY;
      nx->deps++;
    }
  }
  for (size_t i = 0; !s && i < all.n; i++) {
    all.v[i]->buffer = wk_calloc((size_t)(all.v[i]->nout ? all.v[i]->nout : 1), sizeof(wk_tensor *));
    if (!all.v[i]->buffer) s = WK_ERR_NO_MEMORY;
  }
  if (s == WK_ERR_NO_MEMORY) wk_error(s, "autograd: out of memory walking the graph");
  /* 2. seed the roots */
  for (int r = 0; r < nroots; r++) {
    if (!s && roots[r].node) {
      s = accumulate_into(&roots[r].node->buffer[roots[r].input_nr], grads[r], o->create_graph);
      grads[r] = NULL;
    }
    wk_release(grads[r]);
  }
  for (int r = 0; !s && r < nroots; r++)
    if (roots[r].node && roots[r].node->deps == 0 && !roots[r].node->queued) {
      roots[r].node->queued = true;
      if (!push(&ready, roots[r].node)) s = wk_error(WK_ERR_NO_MEMORY, "autograd: out of memory");
    }
  /* 3. run */
  while (!s && ready.n) {
    wk__node *n = ready.v[--ready.n];
    s = run_node(n, o, &ready);
    for (int i = 0; i < n->nout; i++) {
      wk_release(n->buffer[i]);
      n->buffer[i] = NULL;
    }
    if (!o->keep_graph && n->f) wk__node_release_saved(n);
  }
  /* 4. clean up bookkeeping (also after an error), then give an outer run
   * back the fields of the nodes this one shared with it */
  for (size_t i = 0; i < all.n; i++) {
    wk__node *n = all.v[i];
    n->run = 0;
    n->queued = false;
    n->deps = 0;
    if (n->buffer)
      for (int k = 0; k < n->nout; k++) wk_release(n->buffer[k]);
    free(n->buffer);
    n->buffer = NULL;
  }
  for (size_t i = st.n; i-- > 0;) {
    wk__node *n = st.v[i].n;
    n->run = st.v[i].run;
    n->deps = st.v[i].deps;
    n->buffer = st.v[i].buffer;
    n->queued = st.v[i].queued;
  }
  free(st.v);
  free(all.v);
  free(stack.v);
  free(ready.v);
  return s;
}

/* Validates a root and builds its edge and gradient (new reference). */
static wk_status make_root(const char *fn, wk_tensor *t, wk_tensor *gradient, int idx, wk__edge *e, wk_tensor **g) {
  *g = NULL;
  e->node = NULL;
  if (!t) return wk_error(WK_ERR_NULL, "%s: output %d is NULL", fn, idx);
  if (!wk__requires_grad(t))
    return wk_error(WK_ERR_AUTOGRAD, "%s: element %d of tensors does not require grad and does not have a grad_fn", fn, idx);
  if (gradient) {
    char a[160], b[160];
    bool same = gradient->ndim == t->ndim;
    for (int i = 0; same && i < t->ndim; i++) same = gradient->sizes[i] == t->sizes[i];
    if (!same)
      return wk_error(WK_ERR_SHAPE, "%s: Mismatch in shape: grad_output[%d] has a shape of %s and output[%d] has a shape of %s",
                      fn, idx, wk__shape_str(gradient->sizes, gradient->ndim, a, sizeof a), idx,
                      wk__shape_str(t->sizes, t->ndim, b, sizeof b));
    *g = wk_retain(gradient);
  } else {
    if (wk_tensor_numel(t) != 1)
      return wk_error(WK_ERR_AUTOGRAD, "%s: grad can be implicitly created only for scalar outputs (output %d has %lld "
                      "elements)", fn, idx, (long long)wk_tensor_numel(t));
    *g = wk_ones_like(t, (wk_options){0});
    if (!*g) return wk_last_error();
  }
  *e = wk__gradient_edge(t);
  return WK_OK;
}

static wk_status backward_impl(const char *fn, wk_tensor *const *outs, wk_tensor *const *grads, int n,
                               const wk_backward_opts *opts, run_opts *o) {
  bool create = opts && opts->struct_size >= offsetof(wk_backward_opts, create_graph) + sizeof(bool) && opts->create_graph;
  bool retain = opts && opts->struct_size >= offsetof(wk_backward_opts, retain_graph) + sizeof(bool) && opts->retain_graph;
  o->create_graph = create;
  o->keep_graph = retain || create;
  wk__edge roots[64];
  wk_tensor *g[64] = {0};
  if (n < 1 || n > 64) return wk_error(WK_ERR_INVALID_ARG, "%s: between 1 and 64 outputs are supported, got %d", fn, n);
  int depth = wk__call_depth;
  wk__call_depth = depth + 1; /* temporaries of backward are never scope-owned */
  bool prev_mode = wk_set_grad_enabled(create);
  wk_status s = WK_OK;
  int made = 0;
  for (; made < n && !s; made++) s = make_root(fn, outs[made], grads ? grads[made] : NULL, made, &roots[made], &g[made]);
  wk__cb_queue cbq;
  wk__cb_queue_begin(&cbq);
  if (!s) s = run_backward(roots, g, n, o);
  s = wk__cb_queue_end(&cbq, s); /* wk_autograd_queue_callback's callbacks, once the graph has run */
  for (int i = 0; i < made; i++) wk__node_release(roots[i].node);
  if (s)
    for (int i = 0; i < n; i++) wk_release(g[i]);
  wk_set_grad_enabled(prev_mode);
  wk__call_depth = depth;
  return s;
}

wk_status wk_backward(wk_tensor *loss) { return wk_backward_with(loss, NULL, NULL); }

wk_status wk_backward_with(wk_tensor *t, wk_tensor *gradient, const wk_backward_opts *opts) {
  if (!t) {
    if (!wk__error_pending()) wk_error(WK_ERR_NULL, "backward: argument 'self' is NULL");
    return wk_last_error();
  }
  run_opts o = {false, false, true, NULL, 0};
  wk_tensor *gs[1] = {gradient};
  return backward_impl("backward", &t, gradient ? gs : NULL, 1, opts, &o);
}

wk_status wk_grad(wk_tensor *const *outputs, int noutputs, wk_tensor *const *grad_outputs, wk_tensor *const *inputs,
                  int ninputs, wk_tensor **grads_out, const wk_backward_opts *opts, bool allow_unused) {
  if (!outputs || !inputs || !grads_out)
    return wk_error(WK_ERR_NULL, "grad: argument '%s' is NULL", !outputs ? "outputs" : !inputs ? "inputs" : "grads_out");
  if (ninputs < 1) return wk_error(WK_ERR_INVALID_ARG, "grad: needs at least one input");
  for (int i = 0; i < ninputs; i++) grads_out[i] = NULL;
  capture *caps = wk_calloc((size_t)ninputs, sizeof *caps);
  if (!caps) return wk_error(WK_ERR_NO_MEMORY, "grad: out of memory");
  wk_status s = WK_OK;
  for (int i = 0; i < ninputs && !s; i++) {
    if (!inputs[i]) s = wk_error(WK_ERR_NULL, "grad: input %d is NULL", i);
    else if (!wk__requires_grad(inputs[i]))
      s = wk_error(WK_ERR_AUTOGRAD, "grad: One of the differentiated Tensors (input %d) does not require grad", i);
    else caps[i].edge = wk__gradient_edge(inputs[i]);
  }
  run_opts o = {false, false, false, caps, ninputs};
  if (!s) s = backward_impl("grad", outputs, grad_outputs, noutputs, opts, &o);
  for (int i = 0; i < ninputs; i++) {
    if (!s && !caps[i].grad && !allow_unused)
      s = wk_error(WK_ERR_AUTOGRAD, "grad: One of the differentiated Tensors (input %d) appears to not have been used "
                   "in the graph. Set allow_unused=True if this is the desired behavior.", i);
  }
  for (int i = 0; i < ninputs; i++) {
    if (!s) {
      grads_out[i] = caps[i].grad;
      if (grads_out[i] && wk__call_depth == 0) wk__scope_adopt(grads_out[i]);
    } else {
      wk_release(caps[i].grad);
    }
    wk__node_release(caps[i].edge.node);
  }
  free(caps);
  return s;
}
