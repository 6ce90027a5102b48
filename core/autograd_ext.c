/* Autograd extensions through the public ABI: derivatives that plugins
 * register for their own ops (an opaque backward context with accessors, and
 * a trampoline that runs the plugin's function like a built-in formula, in a
 * scope, with the engine's saved-tensor and version checks), and activation
 * checkpointing (a node that recomputes its segment in backward). */
#include <stdlib.h>

#include "autograd_internal.h"

struct wk_backward_ctx {
  const wk__bctx *c;
  wk_tensor **gin;
};

static wk_status trampoline(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  int depth = wk__call_depth;
  wk__call_depth = 0; /* temporaries go to the scope below */
  wk_scope_begin();
  wk_backward_ctx bc = {c, gin};
  wk_status s = c->node->f->ext(&bc, gout, c->node->nout);
  if (s && !wk_last_error()) wk_error(s, "%s: derivative failed without a message", c->node->name);
  wk_scope_end();
  wk__call_depth = depth;
  return s;
}

wk_status wk_op_register_derivative(const char *op, const char *node_name, wk_derivative_fn fn, uint32_t save_args,
                                    uint32_t save_outputs) {
  if (!op || !fn) return wk_error(WK_ERR_NULL, "wk_op_register_derivative: argument '%s' is NULL", op ? "fn" : "op");
  wk_op *o = wk_op_find(op);
  if (!o) return wk_last_error();
  wk__formula *f = wk_calloc(1, sizeof *f); /* lives as long as the op */
  if (!f) return wk_error(WK_ERR_NO_MEMORY, "wk_op_register_derivative: out of memory");
  f->op = wk_op_name(o);
  f->name = wk__strdup(node_name ? node_name : "PluginBackward0");
  f->fn = trampoline;
  f->ext = fn;
  f->save_args = save_args;
  f->save_outs = save_outputs;
  *wk__op_autograd_slot(o) = f;
  return WK_OK;
}

wk_tensor *wk_backward_saved_arg(wk_backward_ctx *c, int i) {
  if (!c || i < 0 || i >= c->c->node->nargs) {
    wk_error(WK_ERR_INVALID_ARG, "wk_backward_saved_arg: bad context or index %d", i);
    return NULL;
  }
  if (!c->c->node->saved_args[i].t) {
    wk_error(WK_ERR_INVALID_ARG, "wk_backward_saved_arg: argument %d of %s was not saved (set its bit in save_args)",
             i, c->c->node->name);
    return NULL;
  }
  return wk__saved_arg(c->c, i);
}

wk_tensor *wk_backward_saved_out(wk_backward_ctx *c, int i) {
  if (!c || i < 0 || i >= c->c->node->nout) {
    wk_error(WK_ERR_INVALID_ARG, "wk_backward_saved_out: bad context or index %d", i);
    return NULL;
  }
  if (!c->c->node->saved_outs[i].t) {
    wk_error(WK_ERR_INVALID_ARG, "wk_backward_saved_out: output %d of %s was not saved (set its bit in save_outputs)",
             i, c->c->node->name);
    return NULL;
  }
  return wk__saved_out(c->c, i);
}

const wk_value *wk_backward_arg(wk_backward_ctx *c, int i) {
  if (!c || i < 0 || i >= c->c->node->nargs) return NULL;
  return &c->c->node->args[i];
}

bool wk_backward_needs(wk_backward_ctx *c, int i) {
  if (!c || i < 0 || i >= c->c->node->nargs) return false;
  int k = c->c->node->k_of_arg[i];
  return k >= 0 && c->c->needs[k];
}

wk_status wk_backward_set_grad(wk_backward_ctx *c, int i, wk_tensor *grad) {
  if (!c || !grad) return wk_error(WK_ERR_NULL, "wk_backward_set_grad: argument '%s' is NULL", c ? "grad" : "c");
  if (i < 0 || i >= c->c->node->nargs || c->c->node->k_of_arg[i] < 0)
    return wk_error(WK_ERR_INVALID_ARG, "wk_backward_set_grad: argument %d of %s is not a Tensor input", i,
                    c->c->node->name);
  int k = c->c->node->k_of_arg[i];
  if (!c->c->needs[k]) return WK_OK;
  wk_release(c->gin[k]);
  c->gin[k] = wk_retain(grad);
  return WK_OK;
}

/* ---- activation checkpointing (wk_activation_checkpoint) ---- */

typedef struct {
  wk_device dev;
  uint64_t seed, offset;
} rng_state;

typedef struct {
  wk_activation_checkpoint_fn fn;
  void *user;
  int nrng;
  rng_state rng[];
} ckpt_data;

/* The generators a segment may draw from: the cpu one and each input's device's. */
static int rng_devices(wk_tensor *const *in, int n, wk_device *out) {
  int k = 0;
  out[k++] = wk_cpu();
  for (int i = 0; i < n; i++) {
    wk_device d = wk_tensor_device(in[i]);
    bool seen = false;
    for (int j = 0; j < k && !seen; j++) seen = wk_device_equal(out[j], d);
    if (!seen) out[k++] = d;
  }
  return k;
}

/* Swaps the generators' states with those in st (saving the current ones there). */
static void swap_rng(rng_state *st, int n) {
  for (int j = 0; j < n; j++) {
    uint64_t s, o;
    if (wk_rng_get_state(st[j].dev, &s, &o) != WK_OK) continue;
    wk_rng_set_state(st[j].dev, st[j].seed, st[j].offset);
    st[j].seed = s;
    st[j].offset = o;
  }
}

/* CheckpointBackward: runs the segment again with grad on, from detached
 * inputs and the forward's RNG states, and backpropagates through it (a
 * nested backward: parameters accumulate their .grad; the engine keeps the
 * paused outer run's bookkeeping of shared nodes). */
static wk_status d_checkpoint(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  wk__node *node = c->node;
  ckpt_data *k = node->extra;
  if (!c->accumulate)
    return wk_error(WK_ERR_AUTOGRAD, "CheckpointBackward: a checkpointed segment cannot be differentiated by wk_grad "
                    "(torch.autograd.grad); use wk_backward");
  int depth = wk__call_depth;
  wk__call_depth = 0;
  wk_scope_begin();
  wk_status s = WK_OK;
  wk_tensor *det[WK__MAX_NODE_INPUTS];
  int n = node->nin;
  for (int i = 0; i < n && !s; i++) {
    wk_tensor *x = wk__saved_arg(c, i);
    det[i] = x ? wk_detach(x) : NULL;
    if (!det[i]) s = wk_last_error();
    else if (c->needs[i]) s = wk_tensor_set_requires_grad(det[i], true);
  }
  wk_tensor *out = NULL;
  if (!s) {
    swap_rng(k->rng, k->nrng);
    bool prev = wk_set_grad_enabled(true);
    /* the recompute's temporaries in a scope of their own, closed before the
     * backward: what it saved is then held by its graph alone, which frees
     * each node's tensors as soon as the node ran */
    wk_scope_begin();
    out = k->fn(k->user, det, n);
    if (out && !out->scope) wk__scope_adopt(out);
    wk_retain(out);
    wk_scope_end();
    wk_set_grad_enabled(prev);
    swap_rng(k->rng, k->nrng); /* the generators continue from where they were */
    if (!out) s = wk__error_pending() ? wk_last_error() : wk_error(WK_ERR_AUTOGRAD, "CheckpointBackward: the segment "
                                                                   "returned NULL when run again");
  }
  if (!s && wk_tensor_requires_grad(out)) {
    wk_backward_opts o = {sizeof o, false, c->create_graph};
    s = wk_backward_with(out, gout[0], &o);
  }
  wk__call_depth = 1; /* a plain release of our reference */
  wk_release(out);
  wk__call_depth = 0;
  for (int i = 0; i < n && !s; i++) {
    if (!c->needs[i]) continue;
    wk_tensor *g = wk_tensor_grad(det[i]);
    if (!g) g = wk_zeros_like(det[i], (wk_options){0}); /* the output does not depend on it */
    if (!g) s = wk_last_error();
    else gin[i] = wk_retain(g);
  }
  wk_scope_end();
  wk__storage_cache_clear(); /* the recomputed activations go (see wk_activation_checkpoint) */
  wk__call_depth = depth;
  return s;
}

static const wk__formula g_checkpoint_formula = {"checkpoint", "CheckpointBackward", d_checkpoint, 0, 0, NULL, false};

wk_tensor *wk_activation_checkpoint(wk_activation_checkpoint_fn fn, void *user, wk_tensor *const *inputs, int n) {
  if (!fn || (!inputs && n > 0)) {
    wk__null_arg("activation_checkpoint", fn ? "inputs" : "fn");
    return NULL;
  }
  if (n < 0 || n > WK__MAX_HELD) { /* (the backward unpacks every input) */
    wk_error(WK_ERR_INVALID_ARG, "activation_checkpoint: between 0 and %d inputs are supported, got %d", WK__MAX_HELD,
             n);
    return NULL;
  }
  bool any = false;
  uint64_t versions[WK__MAX_NODE_INPUTS];
  for (int i = 0; i < n; i++) {
    if (!inputs[i]) {
      wk__null_arg("activation_checkpoint", "inputs[i]");
      return NULL;
    }
    any = any || wk__requires_grad(inputs[i]);
    versions[i] = wk_tensor_version(inputs[i]);
  }
  if (!wk_grad_enabled()) return fn(user, inputs, n); /* nothing is recorded anyway */
  wk_device devs[WK__MAX_NODE_INPUTS + 1];
  int nrng = rng_devices(inputs, n, devs);
  ckpt_data *k = wk_malloc(sizeof *k + sizeof(rng_state) * (size_t)nrng);
  if (!k) {
    wk_error(WK_ERR_NO_MEMORY, "activation_checkpoint: out of memory");
    return NULL;
  }
  k->fn = fn;
  k->user = user;
  k->nrng = 0;
  for (int j = 0; j < nrng; j++) {
    rng_state *r = &k->rng[k->nrng];
    r->dev = devs[j];
    if (wk_rng_get_state(devs[j], &r->seed, &r->offset) == WK_OK) k->nrng++;
    else wk_clear_error(); /* a device without a generator draws nothing */
  }
  /* The forward: grad off, the probe on (does the segment read a parameter?),
   * its temporaries in a scope of their own so they go as soon as it returns
   * (that is the memory saved), and their blocks back to the system rather
   * than to the storage cache (which would keep up to 256 MiB of them). */
  bool prev = wk_set_grad_enabled(false), probe = wk__ckpt_probe, hit = wk__ckpt_probe_hit;
  wk__ckpt_probe = true;
  wk__ckpt_probe_hit = false;
  int depth = wk__call_depth;
  wk__call_depth = 0;
  wk_scope_begin();
  wk_tensor *out = fn(user, inputs, n);
  if (out && !out->scope) wk__scope_adopt(out);
  wk_retain(out); /* ours, past the scope */
  wk_scope_end();
  wk__storage_cache_clear();
  wk__call_depth = depth;
  any = any || wk__ckpt_probe_hit;
  wk__ckpt_probe = probe;
  wk__ckpt_probe_hit = hit || wk__ckpt_probe_hit; /* (an enclosing segment reads them too) */
  wk_set_grad_enabled(prev);
  wk__node *node = out && any && wk_dtype_is_floating(wk_tensor_dtype(out)) ? wk__node_new(n, n, 1) : NULL;
  if (!node) {
    free(k);
    if (!out && !wk__error_pending()) wk_error(WK_ERR_AUTOGRAD, "activation_checkpoint: the segment returned NULL");
    else if (out && any && wk_dtype_is_floating(wk_tensor_dtype(out)))
      wk_error(WK_ERR_NO_MEMORY, "activation_checkpoint: out of memory");
    if (out && wk__call_depth == 0) wk__scope_adopt(out); /* no history: the result as it is */
    return out;
  }
  node->f = &g_checkpoint_formula;
  node->name = g_checkpoint_formula.name;
  if (wk_anomaly_enabled()) node->forward_trace = wk__strdup("CheckpointBackward (forward: wk_activation_checkpoint)");
  node->extra = k;
  node->extra_free = free;
  node->has_saved = true;
  for (int i = 0; i < n; i++) {
    node->args[i] = (wk_value){.tag = WK_V_TENSOR};
    node->k_of_arg[i] = i;
    node->saved_args[i].t = wk_retain(inputs[i]);
    node->saved_args[i].version = versions[i];
    wk__node_set_input(node, i, inputs[i]);
  }
  /* a fresh handle on the result (fn may return a view of an input) */
  wk_tensor *r = wk__view_of(out, out->ndim, out->sizes, out->strides, out->offset);
  wk__call_depth = depth + 1; /* a plain release of our reference */
  wk_release(out);
  wk__call_depth = depth;
  wk__ameta *m = r ? wk__ameta_get(r) : NULL;
  if (!m) {
    wk_release(r);
    wk__node_release(node);
    return NULL;
  }
  wk__node_set_output(node, 0, r);
  m->grad_fn = node;
  m->output_nr = 0;
  if (wk__call_depth == 0) wk__scope_adopt(r);
  return r;
}
