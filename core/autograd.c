/* Autograd: per-tensor metadata, grad modes, hooks, detach, and the autograd
 * dispatch layer, which records a graph node for every differentiable op
 * whose inputs require grad. The engine that walks the graph is engine.c;
 * the derivative formulas are derivatives.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autograd_internal.h"

_Thread_local bool wk__grad_mode_off;
_Thread_local bool wk__ckpt_probe, wk__ckpt_probe_hit;
static _Thread_local int g_no_grad_depth, g_inference_depth;
static atomic_bool g_anomaly;
static atomic_uint_fast64_t g_sequence;
static wk_layer *g_layer;
/* A broken formula table (a row naming an undeclared op) is a build bug: it
 * is printed at start-up and every op recorded afterwards fails with it. */
static char *g_table_error;

/* ---- metadata ---- */
wk__ameta *wk__ameta_get(wk_tensor *t) {
  if (!t->autograd && (t->autograd = wk__block_alloc(sizeof(wk__ameta))))
    *(wk__ameta *)t->autograd = (wk__ameta){0}; /* inline stores, not a memset call */
  if (!t->autograd) wk_error(WK_ERR_NO_MEMORY, "autograd: out of memory");
  return t->autograd;
}

static void free_hooks(wk__hook *h) {
  while (h) {
    wk__hook *n = h->next;
    free(h);
    h = n;
  }
}

void wk__ameta_free(wk_tensor *t) {
  wk__ameta *m = t->autograd;
  if (!m) return;
  t->autograd = NULL;
  if (m->accumulator) m->accumulator->variable = NULL; /* weak back-pointer: cannot outlive */
  if (m->spare_acc) wk__block_free(m->spare_acc, m->spare_acc->alloc_size);
  wk__node_release(m->grad_fn);
  wk_release(m->grad);
  if (m->base) { /* plain release: a scope's reference on the base is not this one */
    int depth = wk__call_depth;
    wk__call_depth = depth + 1;
    wk_release(m->base);
    wk__call_depth = depth;
  }
  free_hooks(m->hooks);
  free_hooks(m->post_hooks);
  wk__block_free(m, sizeof *m);
}

bool wk__requires_grad(const wk_tensor *t) {
  if (!t) return false;
  if (t->flags & WK__T_REQUIRES_GRAD) return true;
  const wk__ameta *m = t->autograd;
  /* a view requires grad when its base does (the base may have gained a
   * history through an in-place op on another view) */
  return m && (m->grad_fn || (m->base && wk__requires_grad(m->base)));
}

void wk__geom_of(const wk_tensor *t, wk__geom *g) {
  g->ndim = t->ndim;
  memcpy(g->sizes, t->sizes, sizeof g->sizes);
  memcpy(g->strides, t->strides, sizeof g->strides);
  g->offset = t->offset;
}

wk__node *wk__node_retain(wk__node *n) {
  if (n) atomic_fetch_add(&n->refcount, 1);
  return n;
}

static void free_saved(wk__saved *s) {
  wk_release(s->t);
  s->t = NULL;
}

void wk__node_release_saved(wk__node *n) {
  n->released = true;
  if (n->inner) wk__node_release_saved(n->inner); /* CopySlices: the in-place op's node */
  if (!n->has_saved) return; /* most nodes (add, sub, ...) keep nothing */
  int depth = wk__call_depth;
  wk__call_depth = depth + 1; /* plain releases */
  for (int i = 0; i < n->nargs; i++) {
    free_saved(&n->saved_args[i]);
    if (n->saved_lists[i]) {
      for (int k = 0; k < n->args[i].len; k++) free_saved(&n->saved_lists[i][k]);
      free(n->saved_lists[i]);
      n->saved_lists[i] = NULL;
    }
  }
  for (int i = 0; i < n->nout; i++) free_saved(&n->saved_outs[i]);
  wk__call_depth = depth;
  n->has_saved = false;
}

/* Releasing a node may release the nodes it points to: done with an explicit
 * stack so a 100k-node chain cannot overflow the C stack. */
void wk__node_release(wk__node *first) {
  if (!first) return;
  wk__node *local[32], **stack = local; /* the heap only for deep graphs */
  size_t n = 0, cap = sizeof local / sizeof local[0];
  wk__node *cur = first;
  for (;;) {
    if (cur && atomic_fetch_sub(&cur->refcount, 1) == 1) {
      for (int i = 0; i <= cur->nin; i++) {
        wk__node *nx = i < cur->nin ? cur->next[i].node : cur->inner;
        if (!nx) continue;
        if (n == cap) {
          size_t nc = cap * 2;
          wk__node **p = stack == local ? wk_malloc(nc * sizeof *p) : wk_realloc(stack, nc * sizeof *p);
          if (!p) { /* cannot defer: release recursively as a last resort */
            wk__node_release(nx);
            continue;
          }
          if (stack == local) memcpy(p, local, sizeof local);
          stack = p;
          cap = nc;
        }
        stack[n++] = nx;
      }
      if (cur->has_saved) wk__node_release_saved(cur);
      if (cur->owns_args)
        for (int i = 0; i < cur->nargs; i++) {
          if (cur->args[i].tag == WK_V_INTS) free((void *)cur->args[i].u.ints);
          if (cur->args[i].tag == WK_V_FLOATS) free((void *)cur->args[i].u.floats);
          if (cur->args[i].tag == WK_V_STR) free((void *)cur->args[i].u.s);
        }
      if (cur->has_hooks)
        for (int i = 0; i < cur->nout; i++) free_hooks(cur->out_hooks[i]);
      free(cur->geom);
      if (cur->extra_free) cur->extra_free(cur->extra);
      bool spared = false;
      if (cur->variable) {
        /* A leaf used again builds a new AccumulateGrad for the next graph:
         * its block is kept on the leaf (dropped with the leaf's metadata,
         * which the release below may do) instead of being freed. */
        wk_tensor *var = cur->variable;
        wk__ameta *m = var->autograd;
        if (m && m->accumulator == cur) {
          m->accumulator = NULL;
          if (!m->spare_acc && !cur->buffer && !cur->forward_trace) {
            cur->variable = NULL;
            m->spare_acc = cur;
            spared = true;
          }
        }
        int depth = wk__call_depth;
        wk__call_depth = depth + 1;
        wk_release(var);
        wk__call_depth = depth;
      }
      if (!spared) { /* (a spared block may be gone already: do not touch it) */
        if (cur->forward_trace) free(cur->forward_trace); /* the arrays live inside the node's block */
        if (cur->buffer) free(cur->buffer);
        wk__block_free(cur, cur->alloc_size);
      }
    }
    if (n == 0) break;
    cur = stack[--n];
  }
  if (stack != local) free(stack);
}

/* Copies a shape into a node: up to 4 dims with two fixed-size moves (the
 * handle's sizes array always has WK_MAX_DIMS entries), more with memcpy. */
static inline void copy_sizes(int64_t *dst, const int64_t *src, int ndim) {
  memcpy(dst, src, 4 * sizeof *dst);
  if (ndim > 4) memcpy(dst + 4, src + 4, sizeof *dst * (size_t)(ndim - 4));
}

/* One allocation per node: the per-input/argument/output arrays live right
 * after the struct (a node is built for every recorded op). The layout only
 * depends on the three counts: worked out once per thread and count triple. */
enum {
  L_NEXT, L_IN_NDIM, L_IN_DTYPE, L_K_OF_ARG, L_ARGS, L_SAVED_ARGS, L_SAVED_LISTS, L_OUT_NDIM, L_OUT_DTYPE,
  L_OUT_DEVICE, L_OUT_DIFF, L_SAVED_OUTS, L_OUT_HOOKS, L_IN_SIZES, L_OUT_SIZES, L_COUNT
};
typedef struct node_layout {
  uint32_t key, zeroed, total;
  uint32_t off[L_COUNT];
} node_layout;
static _Thread_local node_layout tl_layouts[8];

static const node_layout *layout_for(int nin, int nargs, int nout) {
  uint32_t key = ((uint32_t)nin << 16 | (uint32_t)nargs << 8 | (uint32_t)nout) + 1;
  node_layout *L = &tl_layouts[(unsigned)(nin * 5 + nargs * 3 + nout) & 7];
  if (L->key == key) return L;
  size_t off = (sizeof(wk__node) + 15) & ~(size_t)15;
#define PLACE(i, type, count)                     \
  L->off[i] = (uint32_t)off;                      \
  off += ((sizeof(type) * (size_t)(count)) + 15) & ~(size_t)15
  PLACE(L_NEXT, wk__edge, nin);
  PLACE(L_IN_NDIM, int, nin);
  PLACE(L_IN_DTYPE, wk_dtype, nin);
  PLACE(L_K_OF_ARG, int, nargs);
  PLACE(L_ARGS, wk_value, nargs);
  PLACE(L_SAVED_ARGS, wk__saved, nargs);
  PLACE(L_SAVED_LISTS, wk__saved *, nargs);
  PLACE(L_OUT_NDIM, int, nout);
  PLACE(L_OUT_DTYPE, wk_dtype, nout);
  PLACE(L_OUT_DEVICE, wk_device, nout);
  PLACE(L_OUT_DIFF, bool, nout);
  PLACE(L_SAVED_OUTS, wk__saved, nout);
  PLACE(L_OUT_HOOKS, wk__hook *, nout);
  /* the shape arrays go last and are not zeroed: entry k is written whenever
   * in_ndim[k] / out_ndim[k] is (a zero ndim reads no size) */
  L->zeroed = (uint32_t)off;
  PLACE(L_IN_SIZES, int64_t[WK_MAX_DIMS], nin);
  PLACE(L_OUT_SIZES, int64_t[WK_MAX_DIMS], nout);
#undef PLACE
  L->total = (uint32_t)off;
  L->key = key;
  return L;
}

wk__node *wk__node_new(int nin, int nargs, int nout) {
  const node_layout *L = layout_for(nin, nargs, nout);
  char *mem = wk__block_alloc(L->total);
  if (!mem) return NULL;
  memset(mem, 0, L->zeroed);
  wk__node *n = (wk__node *)mem;
  n->alloc_size = L->total;
#define AT(i) ((void *)(mem + L->off[i])) /* an empty array's pointer is never read */
  n->next = AT(L_NEXT);
  n->in_ndim = AT(L_IN_NDIM);
  n->in_dtype = AT(L_IN_DTYPE);
  n->k_of_arg = AT(L_K_OF_ARG);
  n->args = AT(L_ARGS);
  n->saved_args = AT(L_SAVED_ARGS);
  n->saved_lists = AT(L_SAVED_LISTS);
  n->out_ndim = AT(L_OUT_NDIM);
  n->out_dtype = AT(L_OUT_DTYPE);
  n->out_device = AT(L_OUT_DEVICE);
  n->out_differentiable = AT(L_OUT_DIFF);
  n->saved_outs = AT(L_SAVED_OUTS);
  n->out_hooks = AT(L_OUT_HOOKS);
  n->in_sizes = AT(L_IN_SIZES);
  n->out_sizes = AT(L_OUT_SIZES);
#undef AT
  atomic_init(&n->refcount, 1);
  n->nin = nin;
  n->nargs = nargs;
  n->nout = nout;
  n->sequence = atomic_fetch_add(&g_sequence, 1);
  return n;
}

/* The leaf's AccumulateGrad node, created on first use and cached weakly
 * (a leaf's dead one is revived: the same fields, a fresh node). */
static wk__node *accumulator(wk_tensor *t) {
  wk__ameta *m = wk__ameta_get(t);
  if (!m) return NULL;
  if (m->accumulator) return wk__node_retain(m->accumulator);
  wk__node *n = m->spare_acc;
  if (n) {
    m->spare_acc = NULL;
    atomic_init(&n->refcount, 1);
    n->released = false;
    n->sequence = atomic_fetch_add(&g_sequence, 1);
  } else if (!(n = wk__node_new(0, 0, 1))) {
    return NULL;
  }
  n->name = "AccumulateGrad";
  n->out_ndim[0] = t->ndim;
  copy_sizes(n->out_sizes[0], t->sizes, t->ndim);
  n->out_dtype[0] = t->dtype;
  n->out_device[0] = t->storage->device;
  n->out_differentiable[0] = true;
  n->variable = wk_retain(t);
  m->accumulator = n;
  return n;
}

static inline wk__edge gradient_edge(wk_tensor *t) {
  wk__edge e = {NULL, 0};
  if (!t) return e;
  wk__ameta *m = t->autograd;
  if (m && m->base) {
    wk__view_refresh(t);
    m = t->autograd;
  }
  if (m && m->grad_fn) {
    e.node = wk__node_retain(m->grad_fn);
    e.input_nr = m->output_nr;
  } else if (t->flags & WK__T_REQUIRES_GRAD) {
    e.node = accumulator(t);
  }
  return e;
}
wk__edge wk__gradient_edge(wk_tensor *t) { return gradient_edge(t); }

void wk__node_set_output(wk__node *n, int i, const wk_tensor *t) {
  n->out_ndim[i] = t->ndim;
  copy_sizes(n->out_sizes[i], t->sizes, t->ndim);
  n->out_dtype[i] = t->dtype;
  n->out_device[i] = t->storage->device;
  n->out_differentiable[i] = true;
}

void wk__node_set_input(wk__node *n, int k, wk_tensor *t) {
  n->next[k] = gradient_edge(t);
  n->in_ndim[k] = t->ndim;
  copy_sizes(n->in_sizes[k], t->sizes, t->ndim);
  n->in_dtype[k] = t->dtype;
  if (k == 0) n->in_device0 = t->storage->device;
}

/* ---- views: lazy grad_fn, CopySlices ---- */

static wk_op *g_as_strided_op;

/* An AsStridedBackward node taking the gradient of view v back to its base b
 * (PyTorch's regenerated view grad_fn): as_strided(b, v's sizes, strides and
 * storage offset), b's geometry kept. NULL with an error when out of memory. */
static wk__node *as_strided_node(wk_tensor *b, wk_tensor *v) {
  wk__node *n = wk__node_new(1, 4, 1);
  int64_t *sz = wk_malloc(sizeof(int64_t) * (size_t)(v->ndim ? v->ndim : 1));
  int64_t *st = wk_malloc(sizeof(int64_t) * (size_t)(v->ndim ? v->ndim : 1));
  wk__geom *g = wk_malloc(sizeof *g);
  if (!n || !sz || !st || !g) {
    if (n) wk__block_free(n, n->alloc_size);
    free(sz);
    free(st);
    free(g);
    wk_error(WK_ERR_NO_MEMORY, "autograd: out of memory remaking a view's grad_fn");
    return NULL;
  }
  memcpy(sz, v->sizes, sizeof(int64_t) * (size_t)v->ndim);
  memcpy(st, v->strides, sizeof(int64_t) * (size_t)v->ndim);
  n->f = wk__formula_for(g_as_strided_op);
  n->name = n->f->name;
  n->op = g_as_strided_op;
  n->owns_args = true;
  n->args[0] = (wk_value){.tag = WK_V_TENSOR};
  n->args[1] = WK_VINTS(sz, v->ndim);
  n->args[2] = WK_VINTS(st, v->ndim);
  n->args[3] = WK_VI(v->offset);
  n->k_of_arg[0] = 0;
  n->k_of_arg[1] = n->k_of_arg[2] = n->k_of_arg[3] = -1;
  wk__geom_of(b, g);
  n->geom = g;
  wk__node_set_input(n, 0, b);
  wk__node_set_output(n, 0, v);
  return n;
}

void wk__view_refresh(wk_tensor *t) {
  wk__ameta *m = t ? t->autograd : NULL;
  if (!m || !m->base || (t->flags & WK__T_REQUIRES_GRAD)) return;
  uint64_t v = atomic_load(&t->storage->version);
  if (m->attr_version == v) return;
  if (!m->grad_fn && !wk__requires_grad(m->base)) return; /* no history to follow yet */
  wk__node *n = as_strided_node(m->base, t);
  if (!n) return; /* (the stale node stays; the error is set) */
  wk__node *old = m->grad_fn;
  m->grad_fn = n;
  m->output_nr = 0;
  m->attr_version = v;
  wk__node_release(old);
}

/* Records that the outputs of view op `op` alias its first argument: each
 * keeps the root base and the storage version. */
static void track_view(wk_op *op, const wk_value *args, const wk_value *outs) {
  if (args[0].tag != WK_V_TENSOR || !args[0].u.t) return;
  wk_tensor *in = args[0].u.t;
  const wk__ameta *im = in->autograd;
  wk_tensor *base = im && im->base ? im->base : in;
  int n = wk_op_num_outs(op);
  for (int i = 0; i < n; i++) {
    wk_tensor *o = outs[i].tag == WK_V_TENSOR ? outs[i].u.t : NULL;
    if (!o || o == in || o == base || o->storage != in->storage) continue; /* reshape/contiguous may copy */
    wk__ameta *m = wk__ameta_get(o);
    if (!m) {
      wk_clear_error(); /* out of memory: the view is simply not tracked */
      continue;
    }
    if (m->base) continue;
    m->base = wk_retain(base);
    m->attr_version = atomic_load(&o->storage->version);
  }
}

/* The in-place op `n` (just run on view v of base b) becomes the inner
 * function of a CopySlices node that is b's new history (PyTorch's
 * rebase_history): the gradient of b flows through n on v's slice and
 * unchanged elsewhere; v's grad_fn becomes an AsStridedBackward onto it.
 * Takes n's creation reference. */
static wk_status rebase_on_view(wk__node *n, wk_tensor *b, wk_tensor *v) {
  wk__node *cs = wk__node_new(n->nin, 0, 1);
  wk__geom *g = wk_malloc(2 * sizeof *g);
  if (!cs || !g) {
    if (cs) wk__block_free(cs, cs->alloc_size);
    free(g);
    wk__node_release(n);
    return wk_error(WK_ERR_NO_MEMORY, "%s(): out of memory recording the autograd graph", wk_op_name(n->op));
  }
  cs->f = &wk__copy_slices_formula;
  cs->name = "CopySlices";
  cs->op = n->op;
  cs->inner = n;
  wk__geom_of(b, &g[0]);
  wk__geom_of(v, &g[1]);
  cs->geom = g;
  wk__node_set_input(cs, 0, b);
  for (int k = 1; k < n->nin; k++) {
    cs->next[k] = n->next[k];
    wk__node_retain(n->next[k].node);
    cs->in_ndim[k] = n->in_ndim[k];
    copy_sizes(cs->in_sizes[k], n->in_sizes[k], n->in_ndim[k]);
    cs->in_dtype[k] = n->in_dtype[k];
  }
  wk__node_set_output(cs, 0, b);
  if (n->forward_trace) cs->forward_trace = wk__strdup(n->forward_trace);
  wk__ameta *bm = wk__ameta_get(b), *vm = wk__ameta_get(v);
  if (!bm || !vm) {
    wk__node_release(cs);
    return wk_last_error();
  }
  wk__node *old = bm->grad_fn;
  bm->grad_fn = cs;
  bm->output_nr = 0;
  wk__node_release(old);
  wk__node *vn = as_strided_node(b, v);
  if (!vn) return wk_last_error();
  old = vm->grad_fn;
  vm->grad_fn = vn;
  vm->output_nr = 0;
  vm->attr_version = atomic_load(&v->storage->version);
  wk__node_release(old);
  return WK_OK;
}

/* ---- public inspection API ---- */
bool wk_tensor_is_leaf(const wk_tensor *t) {
  wk__view_refresh((wk_tensor *)t); /* (a stale view's grad_fn is remade on access, as in PyTorch) */
  const wk__ameta *m = t ? t->autograd : NULL;
  return !(m && m->grad_fn);
}

const char *wk_tensor_grad_fn_name(const wk_tensor *t) {
  wk__view_refresh((wk_tensor *)t);
  const wk__ameta *m = t ? t->autograd : NULL;
  return m && m->grad_fn ? m->grad_fn->name : NULL;
}

wk_tensor *wk_tensor_grad(wk_tensor *t) {
  wk__ameta *m = t ? t->autograd : NULL;
  if (!m || !m->grad) return NULL;
  /* a fresh handle on the same storage: each caller (and scope) owns its own */
  wk_tensor *gr = m->grad;
  wk_tensor *g = wk__view_of(gr, gr->ndim, gr->sizes, gr->strides, gr->offset);
  if (g && wk__call_depth == 0) wk__scope_adopt(g);
  return g;
}

wk_status wk_tensor_set_grad(wk_tensor *t, wk_tensor *g) {
  if (!t) return wk_error(WK_ERR_NULL, "set_grad: argument 'self' is NULL");
  if (g) {
    char a[160], b[160];
    bool same = g->ndim == t->ndim;
    for (int i = 0; same && i < t->ndim; i++) same = g->sizes[i] == t->sizes[i];
    if (!same)
      return wk_error(WK_ERR_SHAPE, "set_grad: assigned grad has data of a different size (%s) than the tensor (%s)",
                      wk__shape_str(g->sizes, g->ndim, a, sizeof a), wk__shape_str(t->sizes, t->ndim, b, sizeof b));
    if (g->dtype != t->dtype)
      return wk_error(WK_ERR_DTYPE, "set_grad: assigned grad has dtype %s, the tensor has %s", wk_dtype_name(g->dtype),
                      wk_dtype_name(t->dtype));
    if (!wk_device_equal(g->storage->device, t->storage->device))
      return wk_error(WK_ERR_DEVICE, "set_grad: assigned grad is on a different device than the tensor");
  }
  wk__ameta *m = wk__ameta_get(t);
  if (!m) return wk_last_error();
  wk_tensor *old = m->grad;
  m->grad = g ? wk__view_of(g, g->ndim, g->sizes, g->strides, g->offset) : NULL;
  if (g && !m->grad) {
    m->grad = old;
    return wk_last_error();
  }
  int depth = wk__call_depth;
  wk__call_depth = depth + 1;
  wk_release(old);
  wk__call_depth = depth;
  return WK_OK;
}

wk_status wk_tensor_zero_grad(wk_tensor *t, bool set_to_none) {
  if (!t) return wk_error(WK_ERR_NULL, "zero_grad: argument 'self' is NULL");
  wk__ameta *m = t->autograd;
  if (!m || !m->grad) return WK_OK;
  if (set_to_none) return wk_tensor_set_grad(t, NULL);
  bool prev = wk_set_grad_enabled(false);
  wk_tensor *r = wk_zero_(m->grad);
  wk_set_grad_enabled(prev);
  return r ? WK_OK : wk_last_error();
}

wk_status wk_tensor_retain_grad(wk_tensor *t) {
  if (!t) return wk_error(WK_ERR_NULL, "retain_grad: argument 'self' is NULL");
  if (!wk__requires_grad(t))
    return wk_error(WK_ERR_AUTOGRAD, "retain_grad: can't retain_grad on Tensor that has requires_grad=False");
  wk__ameta *m = wk__ameta_get(t);
  if (!m) return wk_last_error();
  m->retains_grad = true;
  return WK_OK;
}

wk_tensor *wk_detach(wk_tensor *t) {
  if (!t) {
    wk__null_arg("detach", "self");
    return NULL;
  }
  wk_tensor *d = wk__view_of(t, t->ndim, t->sizes, t->strides, t->offset);
  if (d && wk__call_depth == 0) wk__scope_adopt(d);
  return d;
}

/* ---- grad modes ---- */
bool wk_grad_enabled(void) { return !wk__grad_mode_off; }
bool wk_set_grad_enabled(bool on) {
  bool prev = !wk__grad_mode_off;
  wk__grad_mode_off = !on;
  return prev;
}
/* Each no_grad / inference_mode scope restores at its end the grad mode its
 * begin found (torch.no_grad()'s __exit__): a pair inside a region where
 * wk_set_grad_enabled(false) turned grad off leaves it off. (Ending by
 * turning grad on turned it on in the middle of activation checkpointing's
 * no-grad forward, at the first batch norm, whose running statistics are
 * updated in a no_grad scope.) Bit d of the mask: grad was off when the
 * scope at depth d began; scopes nested deeper than 64 began with grad off
 * (their enclosing scope turned it off) unless wk_set_grad_enabled(true)
 * was called in between. */
static _Thread_local uint64_t g_no_grad_prev_off, g_inference_prev_off;

static void scope_begin(int *depth, uint64_t *prev_off) {
  if (*depth < 64) *prev_off = (*prev_off & ~(1ull << *depth)) | ((uint64_t)wk__grad_mode_off << *depth);
  ++*depth;
  wk__grad_mode_off = true;
}
static void scope_end(int *depth, uint64_t prev_off, int other_depth) {
  --*depth;
  bool off = *depth >= 64 || (prev_off >> *depth & 1);
  wk__grad_mode_off = off || other_depth > 0;
}
void wk_no_grad_begin(void) { scope_begin(&g_no_grad_depth, &g_no_grad_prev_off); }
wk_status wk_no_grad_end(void) {
  if (g_no_grad_depth == 0) return wk_error(WK_ERR_STATE, "no_grad_end: no no_grad scope is open");
  scope_end(&g_no_grad_depth, g_no_grad_prev_off, g_inference_depth);
  return WK_OK;
}
void wk_inference_mode_begin(void) { scope_begin(&g_inference_depth, &g_inference_prev_off); }
wk_status wk_inference_mode_end(void) {
  if (g_inference_depth == 0) return wk_error(WK_ERR_STATE, "inference_mode_end: no inference_mode scope is open");
  scope_end(&g_inference_depth, g_inference_prev_off, g_no_grad_depth);
  return WK_OK;
}
bool wk_is_inference_tensor(const wk_tensor *t) {
  const wk__ameta *m = t ? t->autograd : NULL;
  return m && m->inference;
}

void wk_set_anomaly_enabled(bool on) { atomic_store(&g_anomaly, on); }
bool wk_anomaly_enabled(void) { return atomic_load(&g_anomaly); }

/* ---- hooks ---- */
static wk_status add_hook(wk__hook **list, wk_grad_hook_fn fn, wk_post_accumulate_hook_fn post, void *user) {
  wk__hook *h = wk_calloc(1, sizeof *h);
  if (!h) return wk_error(WK_ERR_NO_MEMORY, "register_hook: out of memory");
  h->fn = fn;
  h->post = post;
  h->user = user;
  wk__hook **p = list;
  while (*p) p = &(*p)->next; /* run in registration order */
  *p = h;
  return WK_OK;
}

wk_status wk_tensor_register_hook(wk_tensor *t, wk_grad_hook_fn fn, void *user) {
  if (!t || !fn) return wk_error(WK_ERR_NULL, "register_hook: argument '%s' is NULL", t ? "fn" : "self");
  if (!wk__requires_grad(t))
    return wk_error(WK_ERR_AUTOGRAD, "register_hook: cannot register a hook on a tensor that doesn't require gradient");
  wk__view_refresh(t);
  wk__ameta *m = wk__ameta_get(t);
  if (!m) return wk_last_error();
  if (m->grad_fn) {
    m->grad_fn->has_hooks = true;
    return add_hook(&m->grad_fn->out_hooks[m->output_nr], fn, NULL, user);
  }
  return add_hook(&m->hooks, fn, NULL, user);
}

wk_status wk_tensor_register_post_accumulate_grad_hook(wk_tensor *t, wk_post_accumulate_hook_fn fn, void *user) {
  if (!t || !fn) return wk_error(WK_ERR_NULL, "register_post_accumulate_grad_hook: argument '%s' is NULL", t ? "fn" : "self");
  if (!wk_tensor_is_leaf(t) || !(t->flags & WK__T_REQUIRES_GRAD))
    return wk_error(WK_ERR_AUTOGRAD, "register_post_accumulate_grad_hook: post accumulate grad hooks can only be "
                    "registered on leaf tensors that require grad");
  wk__ameta *m = wk__ameta_get(t);
  if (!m) return wk_last_error();
  return add_hook(&m->post_hooks, NULL, fn, user);
}

/* ---- the autograd dispatch layer ---- */

/* Flattened tensor inputs of a call: Tensor args and Tensor[] elements.
 * *simple: no argument is a list or a string (nothing to copy or free). */
static int flatten_inputs(int na, const wk_value *args, wk_tensor **out, int *argpos, bool *simple) {
  int n = 0;
  bool plain = true;
  for (int i = 0; i < na; i++) {
    int32_t tag = args[i].tag;
    if (tag == WK_V_INTS || tag == WK_V_FLOATS || tag == WK_V_STR) plain = false;
    if (tag == WK_V_TENSOR) {
      if (n < WK__MAX_NODE_INPUTS) {
        argpos[n] = i;
        out[n++] = args[i].u.t;
      }
    } else if (tag == WK_V_TENSORS) {
      plain = false;
      for (int k = 0; k < args[i].len && n < WK__MAX_NODE_INPUTS; k++) {
        argpos[n] = i;
        out[n++] = args[i].u.tensors[k];
      }
    }
  }
  *simple = plain;
  return n;
}

static void mark_inference(wk_op *op, wk_value *outs) {
  int n = wk_op_num_outs(op);
  for (int i = 0; i < n; i++)
    if (outs[i].tag == WK_V_TENSOR && outs[i].u.t) {
      wk__ameta *m = wk__ameta_get(outs[i].u.t);
      if (m) m->inference = true;
    }
}

/* Inputs are kept as the tensor itself (so create_graph sees their history;
 * no cycle: a node never feeds its own inputs). Outputs are kept as plain
 * aliases (their grad_fn is this node) and get their history back on unpack.
 * A mutated input is cloned first: the op is about to overwrite it. The
 * clone is recorded (PyTorch's self.clone() in in-place ops' VariableType):
 * double backward then reaches the history of the value it had. */
static wk_status save_tensor(wk__saved *s, wk_tensor *t, bool clone, bool is_output) {
  if (!t) return WK_OK;
  if (clone) {
    int depth = wk__call_depth;
    wk__call_depth = depth + 1; /* owned by the node, not by a scope */
    s->t = wk_clone(t);
    wk__call_depth = depth;
  } else if (is_output) {
    s->t = wk__view_of(t, t->ndim, t->sizes, t->strides, t->offset);
  } else {
    s->t = wk_retain(t);
  }
  if (!s->t) return wk_last_error();
  s->version = wk_tensor_version(s->t);
  return WK_OK;
}

/* Copies the boxed args the formula wants into the node (lists duplicated).
 * A saved input that shares the mutated tensor's storage (the tensor itself,
 * its base or another view of it) is kept as a plain alias, without history:
 * the in-place op makes this node that tensor's (or its base's) history, and
 * the history would otherwise hold itself. The version check still applies. */
static wk_status save_args(wk__node *n, const wk__formula *f, const wk_value *args, int nargs, int mutated) {
  const wk__storage *mst = mutated >= 0 && args[mutated].tag == WK_V_TENSOR && args[mutated].u.t
                               ? args[mutated].u.t->storage
                               : NULL;
  for (int i = 0; i < nargs; i++) {
    wk_value v = args[i];
    bool keep = (f->save_args >> i) & 1u;
    if (v.tag == WK_V_TENSOR) {
      n->args[i].tag = WK_V_TENSOR;
      n->args[i].u.t = NULL;
      if (keep) n->has_saved = true;
      bool alias = v.u.t && v.u.t->storage == mst && i != mutated;
      if (keep && save_tensor(&n->saved_args[i], v.u.t, i == mutated, alias)) return wk_last_error();
      if (keep && alias) n->saved_args[i].is_output = false;
      continue;
    }
    if (v.tag == WK_V_TENSORS) {
      n->args[i].tag = WK_V_TENSORS;
      n->args[i].len = v.len;
      n->args[i].u.tensors = NULL;
      if (keep) {
        n->has_saved = true;
        n->saved_lists[i] = wk_calloc((size_t)(v.len ? v.len : 1), sizeof(wk__saved));
        if (!n->saved_lists[i]) return wk_error(WK_ERR_NO_MEMORY, "autograd: out of memory");
        for (int k = 0; k < v.len; k++)
          if (save_tensor(&n->saved_lists[i][k], v.u.tensors[k], false, false)) return wk_last_error();
      }
      continue;
    }
    if (v.tag == WK_V_INTS || v.tag == WK_V_FLOATS || v.tag == WK_V_STR) n->owns_args = true;
    if (v.tag == WK_V_INTS) {
      int64_t *p = wk_malloc(sizeof(int64_t) * (size_t)(v.len ? v.len : 1));
      if (!p) return wk_error(WK_ERR_NO_MEMORY, "autograd: out of memory");
      if (v.len) memcpy(p, v.u.ints, sizeof(int64_t) * (size_t)v.len);
      v.u.ints = p;
    } else if (v.tag == WK_V_FLOATS) {
      double *p = wk_malloc(sizeof(double) * (size_t)(v.len ? v.len : 1));
      if (!p) return wk_error(WK_ERR_NO_MEMORY, "autograd: out of memory");
      if (v.len) memcpy(p, v.u.floats, sizeof(double) * (size_t)v.len);
      v.u.floats = p;
    } else if (v.tag == WK_V_STR && v.u.s) {
      if (!(v.u.s = wk__strdup(v.u.s))) return wk_error(WK_ERR_NO_MEMORY, "autograd: out of memory");
    }
    n->args[i] = v;
  }
  return WK_OK;
}

/* True when some tensor argument requires grad (the common case is no). */
static bool any_requires_grad(const wk_op *op, const wk_value *args) {
  int na = wk_op_num_args(op);
  for (int i = 0; i < na; i++) {
    if (args[i].tag == WK_V_TENSOR) {
      if (wk__requires_grad(args[i].u.t)) return true;
    } else if (args[i].tag == WK_V_TENSORS) {
      for (int k = 0; k < args[i].len; k++)
        if (wk__requires_grad(args[i].u.tensors[k])) return true;
    }
  }
  return false;
}

static wk_status autograd_layer(wk_layer *self, void *user, wk_op *op, const wk_value *args, wk_value *outs) {
  (void)user;
  /* Fast path: nothing to record. Kernels called below see no grad either.
   * Views made in grad mode still note their base (an in-place op on one
   * later records CopySlices). */
  if ((wk__grad_mode_off || !any_requires_grad(op, args)) && g_inference_depth == 0) {
    if (wk__grad_mode_off) {
      if (wk__ckpt_probe && !wk__ckpt_probe_hit) wk__ckpt_probe_hit = any_requires_grad(op, args);
      return wk_layer_redispatch(self, op, args, outs);
    }
    if (!(wk_op_tags(op) & WK_TAG_VIEW)) return wk_layer_redispatch(self, op, args, outs);
    wk_status s = wk_layer_redispatch(self, op, args, outs);
    if (!s) track_view(op, args, outs);
    return s;
  }
  wk__op_info oi;
  wk__op_get_info(op, &oi);
  wk_tensor *ins[WK__MAX_NODE_INPUTS];
  int argpos[WK__MAX_NODE_INPUTS];
  bool simple;
  int nin = flatten_inputs(oi.nargs, args, ins, argpos, &simple);
  bool any = false;
  if (!wk__grad_mode_off)
    for (int k = 0; k < nin && !any; k++) any = wk__requires_grad(ins[k]);
  uint32_t tags = oi.tags;
  if (!any) {
    wk_status s = wk__layer_call_below(self, op, args, outs);
    if (!s && g_inference_depth > 0) mark_inference(op, outs);
    return s;
  }
  if (tags & WK_TAG_FACTORY) return wk__layer_call_below(self, op, args, outs); /* *_like: no dependence */
  int mutated = oi.mutated_arg;
  if (mutated >= 0) {
    const char *mname = wk_op_arg_name(op, mutated);
    if (mname && strcmp(mname, "out") == 0)
      return wk_error(WK_ERR_AUTOGRAD, "%s(): functions with out=... arguments don't support automatic "
                      "differentiation, but one of the arguments requires grad.", wk_op_name(op));
    /* in-place on a leaf that requires grad is refused whatever the op */
    if (args[mutated].tag == WK_V_TENSOR) {
      wk_tensor *mt = args[mutated].u.t;
      if ((mt->flags & WK__T_REQUIRES_GRAD) && wk_tensor_is_leaf(mt))
        return wk_error(WK_ERR_AUTOGRAD, "%s(): a leaf Variable that requires grad is being used in an in-place "
                        "operation.", wk_op_name(op));
    }
  }
  if (g_table_error) return wk_error(WK_ERR_INTERNAL, "%s(): %s", wk_op_name(op), g_table_error);
  const wk__formula *f = oi.autograd;
  if (!f && (tags & WK_TAG_COMPOSITE)) return wk_layer_redispatch(self, op, args, outs); /* record the parts */
  if (!f && (tags & WK_TAG_NONDIFF)) return wk__layer_call_below(self, op, args, outs);
  if (!f)
    return wk_error(WK_ERR_AUTOGRAD, "%s(): the derivative for '%s' is not implemented", wk_op_name(op), wk_op_name(op));
  for (int k = 0; k < nin; k++) {
    const wk__ameta *im = ins[k] ? ins[k]->autograd : NULL;
    if (im && im->inference)
      return wk_error(WK_ERR_AUTOGRAD, "%s(): Inference tensors cannot be saved for backward. To work around you can "
                      "make a clone to get a normal tensor and use it in autograd.", wk_op_name(op));
  }
  wk_tensor *mut = mutated >= 0 && args[mutated].tag == WK_V_TENSOR ? args[mutated].u.t : NULL;
  wk_tensor *vbase = NULL; /* in place on a view: the base whose history is rebased (CopySlices) */
  if (mut && (tags & WK_TAG_INPLACE) && mut->autograd && ((wk__ameta *)mut->autograd)->base) {
    vbase = ((wk__ameta *)mut->autograd)->base;
    if ((vbase->flags & WK__T_REQUIRES_GRAD) && wk_tensor_is_leaf(vbase))
      return wk_error(WK_ERR_AUTOGRAD, "%s(): a view of a leaf Variable that requires grad is being used in an "
                      "in-place operation.", wk_op_name(op));
    if (oi.nouts != 1)
      return wk_error(WK_ERR_AUTOGRAD, "%s(): functions which modify views in-place must return a single Variable",
                      wk_op_name(op));
  }
  wk__node *n = wk__node_new(nin, oi.nargs, oi.nouts);
  if (!n) return wk_error(WK_ERR_NO_MEMORY, "%s(): out of memory recording the autograd graph", wk_op_name(op));
  n->f = f;
  n->name = f->name;
  n->op = op;
  wk_status s = WK_OK;
  for (int i = 0; i < n->nargs; i++) n->k_of_arg[i] = -1;
  if (simple && !f->save_args) {
    /* scalars copied as they are; tensor args are edges, not kept */
    memcpy(n->args, args, sizeof(wk_value) * (size_t)n->nargs);
    for (int k = 0; k < nin; k++) {
      n->args[argpos[k]] = (wk_value){.tag = WK_V_TENSOR};
      n->k_of_arg[argpos[k]] = k;
    }
  } else {
    s = save_args(n, f, args, oi.nargs, mutated);
    for (int k = nin - 1; k >= 0; k--) n->k_of_arg[argpos[k]] = k;
  }
  if (nin && ins[0]) n->in_device0 = ins[0]->storage->device;
  if (!s && f->save_geom && nin && ins[0]) {
    if ((n->geom = wk_malloc(sizeof *n->geom)))
      wk__geom_of(ins[0], n->geom);
    else
      s = wk_error(WK_ERR_NO_MEMORY, "%s(): out of memory recording the autograd graph", wk_op_name(op));
  }
  for (int k = 0; !s && k < nin; k++) {
    wk_tensor *t = ins[k];
    if (!t) continue;
    n->next[k] = gradient_edge(t);
    if (!n->next[k].node && (t->flags & WK__T_REQUIRES_GRAD)) { /* its AccumulateGrad: out of memory */
      s = wk_error(WK_ERR_NO_MEMORY, "autograd: out of memory recording %s", wk_op_name(op));
      break;
    }
    n->in_ndim[k] = t->ndim;
    copy_sizes(n->in_sizes[k], t->sizes, t->ndim);
    n->in_dtype[k] = t->dtype;
  }
  if (s) {
    wk__node_release(n);
    return s;
  }
  s = wk__layer_call_below(self, op, args, outs);
  if (s) {
    wk__node_release(n);
    return s;
  }
  int nout = n->nout;
  for (int i = 0; i < nout; i++) {
    wk_tensor *o = outs[i].tag == WK_V_TENSOR ? outs[i].u.t : NULL;
    if (!o) continue;
    bool floating = wk_dtype_is_floating(o->dtype);
    if ((f->save_outs >> i) & 1u) {
      n->has_saved = true;
      if (save_tensor(&n->saved_outs[i], o, false, true) == WK_OK) n->saved_outs[i].is_output = floating;
    }
    if (!floating) continue; /* indices and masks carry no gradient */
    n->out_differentiable[i] = true;
    n->out_ndim[i] = o->ndim;
    copy_sizes(n->out_sizes[i], o->sizes, o->ndim);
    n->out_dtype[i] = o->dtype;
    n->out_device[i] = o->storage->device;
  }
  if (atomic_load_explicit(&g_anomaly, memory_order_relaxed)) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s (forward op '%s', node #%llu)", f->name, wk_op_name(op),
             (unsigned long long)n->sequence);
    n->forward_trace = wk__strdup(buf);
  }
  if (vbase) return rebase_on_view(n, vbase, mut);
  bool handed = false; /* the creation reference went to an output */
  for (int i = 0; i < nout; i++) {
    if (!n->out_differentiable[i]) continue;
    wk_tensor *o = outs[i].u.t;
    wk__ameta *m = wk__ameta_get(o);
    if (!m) continue;
    wk__node *old = m->grad_fn;
    m->grad_fn = handed ? wk__node_retain(n) : n;
    handed = true;
    m->output_nr = i;
    wk__node_release(old); /* in-place: the history is rebased on this node */
  }
  if (!handed) wk__node_release(n); /* no output holds it: it goes */
  if (tags & WK_TAG_VIEW) track_view(op, args, outs);
  return WK_OK;
}

void wk__autograd_init(void) {
  if (wk__formulas_init() != WK_OK) {
    g_table_error = wk__strdup(wk_last_error_message());
    fprintf(stderr, "wick: internal error: %s\n", g_table_error ? g_table_error : "autograd: broken formula table");
    wk_clear_error();
  }
  g_as_strided_op = wk_op_find("as_strided");
  g_layer = wk_layer_register("autograd", WK_LEVEL_AUTOGRAD, autograd_layer, NULL, true);
}
