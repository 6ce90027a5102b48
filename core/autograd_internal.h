/* Core-internal autograd structures: graph nodes with edges to the nodes of
 * their inputs, saved tensors with the version they were saved at, per-tensor
 * autograd metadata, and the derivative-formula table. Never installed. */
#ifndef WICK_CORE_AUTOGRAD_INTERNAL_H
#define WICK_CORE_AUTOGRAD_INTERNAL_H

#include <wick/autograd.h>

#include "internal.h"

typedef struct wk__node wk__node;

typedef struct wk__edge {
  wk__node *node; /* strong reference, or NULL when that input needs no grad */
  int input_nr;   /* which output of `node` the gradient flows into */
} wk__edge;

/* A tensor kept for backward: a plain alias (no autograd meta) plus the
 * version of the storage when it was saved. */
typedef struct wk__saved {
  wk_tensor *t;
  uint64_t version;
  bool is_output; /* a result of this node: gets its grad_fn back on unpack */
} wk__saved;

typedef struct wk__formula wk__formula;

/* What a formula sees. */
typedef struct wk__bctx {
  wk__node *node;
  int nin;               /* flattened tensor inputs (Tensor and Tensor[] elements) */
  const bool *needs;     /* needs[k]: input k wants a gradient */
  bool create_graph;
  wk_tensor **held;      /* saved inputs handed to the formula, released after it */
  int *nheld;
  bool accumulate;       /* the run accumulates into leaves' .grad (backward, not grad) */
} wk__bctx;
#define WK__MAX_HELD 32

/* A derivative formula: given the gradients of the outputs (gout[i], never
 * NULL: missing ones are zero-filled), write new references to the gradients
 * of the flattened inputs that need them (gin[k] for every k with needs[k];
 * zeros where the result does not depend on the input). A needed gradient
 * left NULL fails the backward ("the derivative for 'x' is not
 * implemented"). Written with ops only. */
typedef wk_status (*wk__backward_fn)(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin);

struct wk__formula {
  const char *op;      /* op name ("add", "max.dim") */
  const char *name;    /* node name ("AddBackward0") */
  wk__backward_fn fn;
  uint32_t save_args;  /* bit i: keep argument i (tensor or list) for backward */
  uint32_t save_outs;  /* bit i: keep output i */
  wk_derivative_fn ext; /* a plugin's derivative (called through the public ABI) */
  bool save_geom;      /* keep the first input's geometry (as_strided's backward) */
};

/* Sizes, strides and storage offset of a tensor (PyTorch's TensorGeometry):
 * what a backward needs of a tensor whose values it does not read. */
typedef struct wk__geom {
  int ndim;
  int64_t sizes[WK_MAX_DIMS], strides[WK_MAX_DIMS], offset;
} wk__geom;
WK__HIDDEN void wk__geom_of(const wk_tensor *t, wk__geom *g);

enum { WK__MAX_NODE_INPUTS = 64 };

struct wk__node {
  atomic_int refcount;
  size_t alloc_size; /* bytes of the node's block (wk__block_alloc) */
  const char *name;
  const wk__formula *f; /* NULL for AccumulateGrad */
  wk_op *op;
  /* edges to the producers of the flattened tensor inputs */
  int nin;
  wk__edge *next;
  int64_t (*in_sizes)[WK_MAX_DIMS];
  int *in_ndim;
  wk_dtype *in_dtype;
  wk_device in_device0;       /* device of the first input (to.device's backward) */
  int *k_of_arg;              /* [nargs] first flattened input of each argument, or -1 */
  /* outputs: shapes and dtypes for zero-filling a missing gradient */
  /* per output [nout]: shape and dtype for zero-filling a missing gradient */
  int nout;
  int64_t (*out_sizes)[WK_MAX_DIMS];
  int *out_ndim;
  wk_dtype *out_dtype;
  wk_device *out_device;
  bool *out_differentiable;
  /* saved values [nargs]: a copy of the boxed args (tensors as wk__saved) and outputs [nout] */
  int nargs;
  wk_value *args;
  wk__saved *saved_args;
  wk__saved **saved_lists; /* Tensor[] args */
  wk__saved *saved_outs;
  bool released;   /* saved tensors freed by a backward without retain_graph */
  bool has_saved;  /* some saved_args/saved_lists/saved_outs entry was set */
  bool owns_args;  /* args holds copied int/float lists or strings to free */
  bool has_hooks;  /* some out_hooks entry was set */
  /* hooks on the gradients flowing into this node's outputs [nout] (non-leaf hooks) */
  struct wk__hook **out_hooks;
  /* AccumulateGrad: the leaf (strong reference) */
  wk_tensor *variable;
  /* anomaly mode: the forward op that created the node */
  char *forward_trace;
  /* geometries (malloc'd, or NULL): the first input's when f->save_geom;
   * CopySlices: [0] the base, [1] the view written in place */
  wk__geom *geom;
  /* CopySlices: the node of the in-place op on the view (strong); its
   * formula runs on the view's slice of the base's gradient */
  wk__node *inner;
  /* custom nodes (checkpoint): data freed with the node */
  void *extra;
  void (*extra_free)(void *extra);
  /* engine bookkeeping for the running backward (a nested backward, run by
   * a formula, stashes and restores the fields of the nodes it shares) */
  uint64_t run;    /* id of the backward run that discovered the node */
  int deps;
  wk_tensor **buffer;
  bool queued;
  uint64_t sequence; /* creation order: later nodes run first on ties */
};

typedef struct wk__hook {
  wk_grad_hook_fn fn;
  wk_post_accumulate_hook_fn post;
  void *user;
  struct wk__hook *next;
} wk__hook;

/* Per-tensor autograd metadata (t->autograd). */
typedef struct wk__ameta {
  wk__node *grad_fn;   /* strong; NULL for leaves */
  int output_nr;
  wk_tensor *grad;     /* strong */
  bool retains_grad;
  bool inference;      /* created in inference mode */
  /* A view made by a view op in grad mode: the tensor it views (strong; the
   * root of a chain of views, never itself a view) and the storage version
   * when grad_fn was made. An in-place op on the view, its base or another
   * view of the base bumps the version; grad_fn is then remade lazily as an
   * AsStridedBackward node onto the base's history (wk__view_refresh). */
  wk_tensor *base;
  uint64_t attr_version;
  wk__node *accumulator; /* weak cache of the leaf's AccumulateGrad node */
  wk__node *spare_acc;   /* owned: a dead AccumulateGrad block, reused by the next graph */
  wk__hook *hooks;       /* leaf gradient hooks */
  wk__hook *post_hooks;  /* post-accumulate hooks */
} wk__ameta;

/* Metadata of t, created on demand (NULL only when out of memory). */
WK__HIDDEN wk__ameta *wk__ameta_get(wk_tensor *t);
WK__HIDDEN void wk__ameta_free(wk_tensor *t);
/* True when t requires grad (leaf flag or a grad_fn). */
WK__HIDDEN bool wk__requires_grad(const wk_tensor *t);
/* The edge a gradient for t flows along (grad_fn or the leaf's accumulator). */
WK__HIDDEN wk__edge wk__gradient_edge(wk_tensor *t);
WK__HIDDEN void wk__node_release(wk__node *n);
/* Remakes a stale view's grad_fn (see wk__ameta.base); no-op otherwise. */
WK__HIDDEN void wk__view_refresh(wk_tensor *t);
/* A new node (one block, zeroed) with nin inputs, nargs boxed arguments and
 * nout outputs; NULL when out of memory (no error set). */
WK__HIDDEN wk__node *wk__node_new(int nin, int nargs, int nout);
/* Fills node output i's shape, dtype and device from t (differentiable). */
WK__HIDDEN void wk__node_set_output(wk__node *n, int i, const wk_tensor *t);
/* Fills node input k's edge (from t's history), shape and dtype. */
WK__HIDDEN void wk__node_set_input(wk__node *n, int k, wk_tensor *t);
WK__HIDDEN wk__node *wk__node_retain(wk__node *n);
/* Frees the saved tensors of a node (after backward without retain_graph). */
WK__HIDDEN void wk__node_release_saved(wk__node *n);

/* The formula of CopySlices nodes (derivatives_shape.c). */
WK__HIDDEN extern const wk__formula wk__copy_slices_formula;

/* Formula lookup by op (NULL when the op has none). */
WK__HIDDEN const wk__formula *wk__formula_for(const wk_op *op);
/* Binds every formula row to its op; an error (WK_ERR_INTERNAL, naming the
 * rows) when a row names an op that is not declared or two rows name one op. */
WK__HIDDEN wk_status wk__formulas_init(void);
/* Test hook (exported, declared in no installed header): checks the whole
 * derivative table against the op registry. Fails (WK_ERR_INTERNAL, a message
 * naming every problem) when a row or one of extra_rows[0..nextra) names an
 * op that is not declared, a row is not bound to its op, an entry of the
 * not-differentiable list names no op or one that needs no entry, or a
 * differentiable op has no formula: one not tagged WK_TAG_NONDIFF, not a
 * factory, not a composite, not an out= variant and not listed as not
 * differentiable. Checks the core's own ops, or every declared op when all_ops. */
__attribute__((visibility("default"))) wk_status wk__autograd_audit(const char *const *extra_rows, int nextra,
                                                                    bool all_ops);

/* Unpacks a saved argument/output for a formula (a new reference), failing
 * with PyTorch's message when it was modified in place since it was saved or
 * when the graph was already freed. */
WK__HIDDEN wk_tensor *wk__saved_arg(const wk__bctx *c, int i);
WK__HIDDEN wk_tensor *wk__saved_out(const wk__bctx *c, int i);
/* Saved Tensor[] argument i, element k. */
WK__HIDDEN wk_tensor *wk__saved_list(const wk__bctx *c, int i, int k);

WK__HIDDEN void wk__autograd_init(void);
WK__HIDDEN extern _Thread_local bool wk__grad_mode_off;
/* Activation checkpointing's forward runs with grad off and the probe on:
 * the autograd layer then notes (probe_hit) whether an op read a tensor that
 * requires grad (a parameter), so the segment's output gets a node. */
WK__HIDDEN extern _Thread_local bool wk__ckpt_probe, wk__ckpt_probe_hit;

#endif
