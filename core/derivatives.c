/* Derivative formulas of the standard op set, keyed by op name, each written
 * with ops (so every backend gets autograd by implementing the ops it uses,
 * and create_graph gives double backward). Broadcasting is undone once by the
 * engine, not here. This file: saved-tensor unpacking, shared helpers and the
 * table's assembly; the formulas live in derivatives_<family>.c. */
#include "derivatives.h"

static wk_tensor *unpack(const wk__bctx *c, wk__saved *s, const char *what, int i) {
  wk__node *n = c->node;
  if (n->released || !s->t) {
    wk_error(WK_ERR_AUTOGRAD, "Trying to backward through the graph a second time (or directly access saved tensors "
             "after they have already been freed): %s needs saved %s %d. Specify retain_graph=True", n->name, what, i);
    return NULL;
  }
  uint64_t v = wk_tensor_version(s->t);
  if (v != s->version) {
    char b[160];
    wk_error(WK_ERR_AUTOGRAD, "one of the variables needed for gradient computation has been modified by an inplace "
             "operation: [%s %s], which is %s %d of %s, is at version %llu; expected version %llu instead.",
             wk_dtype_name(s->t->dtype), wk__shape_str(s->t->sizes, s->t->ndim, b, sizeof b), what, i, n->name,
             (unsigned long long)v, (unsigned long long)s->version);
    return NULL;
  }
  if (!s->is_output) { /* the input itself, with its history; may belong to a user scope */
    if (*c->nheld == WK__MAX_HELD) {
      wk_error(WK_ERR_INTERNAL, "autograd: %s unpacked too many saved tensors", n->name);
      return NULL;
    }
    c->held[(*c->nheld)++] = wk_retain(s->t);
    return s->t;
  }
  wk_tensor *t = wk__view_of(s->t, s->t->ndim, s->t->sizes, s->t->strides, s->t->offset);
  if (!t) return NULL;
  if (c->create_graph) { /* reattach history so double backward sees it */
    wk__ameta *m = wk__ameta_get(t);
    if (m) {
      m->grad_fn = wk__node_retain(n);
      m->output_nr = i;
    }
  }
  wk__scope_adopt(t);
  return t;
}

wk_tensor *wk__saved_arg(const wk__bctx *c, int i) { return unpack(c, &c->node->saved_args[i], "argument", i); }
wk_tensor *wk__saved_out(const wk__bctx *c, int i) { return unpack(c, &c->node->saved_outs[i], "output", i); }
wk_tensor *wk__saved_list(const wk__bctx *c, int i, int k) {
  if (!c->node->saved_lists[i]) return NULL;
  return unpack(c, &c->node->saved_lists[i][k], "list element", k);
}

wk_tensor *wk__unsqueeze_dims(wk_tensor *g, const int64_t *dims, int nd, int in_ndim) {
  bool red[WK_MAX_DIMS] = {0};
  if (nd == 0)
    for (int i = 0; i < in_ndim; i++) red[i] = true;
  for (int i = 0; i < nd; i++) red[dims[i] < 0 ? dims[i] + in_ndim : dims[i]] = true;
  wk_tensor *r = g;
  for (int d = 0; d < in_ndim && r; d++)
    if (red[d]) r = wk_unsqueeze(r, d);
  return r;
}

int64_t wk__count_of(const int64_t *sizes, int ndim, const int64_t *dims, int nd) {
  int64_t n = 1;
  if (nd == 0) {
    for (int i = 0; i < ndim; i++) n *= sizes[i];
    return n;
  }
  for (int i = 0; i < nd; i++) n *= sizes[dims[i] < 0 ? dims[i] + ndim : dims[i]];
  return n;
}

/* Attaches each formula to its op once, at start-up. */
wk_tensor *wk__call1(const char *op, const wk_value *a, int n) {
  wk_value o[WK_MAX_OUTS];
  if (wk_call(op, a, n, o) != WK_OK) return NULL;
  return o[0].u.t;
}

static const wk__formula_family *const g_families[] = {&wk__formulas_pointwise, &wk__formulas_shape,
                                                        &wk__formulas_reduce, &wk__formulas_nn};

void wk__formulas_init(void) {
  for (size_t f = 0; f < sizeof g_families / sizeof g_families[0]; f++)
    for (size_t i = 0; i < g_families[f]->n; i++) {
      const wk__formula *row = &g_families[f]->rows[i];
      wk_op *op = wk_op_find(row->op);
      if (op) *wk__op_autograd_slot(op) = row;
      else wk_clear_error(); /* a formula for an op this build does not declare */
    }
}

const wk__formula *wk__formula_for(const wk_op *op) { return *wk__op_autograd_slot((wk_op *)op); }

int wk__formula_count(void);
int wk__formula_count(void) {
  size_t n = 0;
  for (size_t f = 0; f < sizeof g_families / sizeof g_families[0]; f++) n += g_families[f]->n;
  return (int)n;
}
