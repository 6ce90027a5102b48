/* Derivatives that plugins register for their own ops, through the public
 * ABI: an opaque backward context with accessors, and a trampoline that runs
 * the plugin's function like a built-in formula (in a scope, with the
 * engine's saved-tensor and version checks). */
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
