/* Derivative formulas of the standard op set, keyed by op name, each written
 * with ops (so every backend gets autograd by implementing the ops it uses,
 * and create_graph gives double backward). Broadcasting is undone once by the
 * engine, not here. This file: saved-tensor unpacking, shared helpers and the
 * table's assembly; the formulas live in derivatives_<family>.c. */
#include <stdarg.h>
#include <stdio.h>

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

wk_tensor *wk__call1(const char *op, const wk_value *a, int n) {
  wk_value o[WK_MAX_OUTS];
  if (wk_call(op, a, n, o) != WK_OK) return NULL;
  return o[0].u.t;
}

static const wk__formula_family *const g_families[] = {&wk__formulas_pointwise, &wk__formulas_shape,
                                                        &wk__formulas_reduce, &wk__formulas_nn,
                                                        &wk__formulas_quant, &wk__formulas_linalg};

/* Ops of the standard set that are differentiable in principle but have no
 * derivative here (yet): recording one whose input requires grad fails with
 * "the derivative for 'op' is not implemented". Any other op without a
 * formula must be tagged WK_TAG_NONDIFF, be a factory or a composite, or be
 * an out= variant (see wk__autograd_audit). */
static const char *const g_not_differentiable[] = {
    /* backward helpers: no double backward through these yet */
    "embedding_dense_backward", "pad_backward", "gelu_backward",
    "scaled_dot_product_attention_backward",
    "fake_quantize_per_tensor_affine_backward", "fake_quantize_per_channel_affine_backward",
};

static int g_core_ops = -1; /* ops declared before the formulas were bound: the core's own */

/* Appends "; " and a printf-formatted line to buf (truncating). */
static void add_problem(char *buf, size_t cap, int *count, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void add_problem(char *buf, size_t cap, int *count, const char *fmt, ...) {
  size_t len = strlen(buf);
  if (len + 8 >= cap) return;
  if ((*count)++) len += (size_t)snprintf(buf + len, cap - len, "; ");
  if (len >= cap) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + len, cap - len, fmt, ap);
  va_end(ap);
}

/* The op a formula row names, or NULL after noting the row as a problem. */
static wk_op *row_op(const wk__formula *row, char *problems, size_t cap, int *nbad) {
  wk_op *op = wk_op_find(row->op);
  if (!op) {
    wk_clear_error();
    add_problem(problems, cap, nbad, "the formula %s names op '%s', which is not declared", row->name, row->op);
  }
  return op;
}

/* Binds each formula row to its op, once, at start-up. A row naming an op
 * that is not declared (a misspelling, or an op renamed in the list) and two
 * rows for one op are errors. */
wk_status wk__formulas_init(void) {
  char problems[1024] = "";
  int nbad = 0;
  for (size_t f = 0; f < sizeof g_families / sizeof g_families[0]; f++)
    for (size_t i = 0; i < g_families[f]->n; i++) {
      const wk__formula *row = &g_families[f]->rows[i];
      wk_op *op = row_op(row, problems, sizeof problems, &nbad);
      if (!op) continue;
      const void **slot = wk__op_autograd_slot(op);
      if (*slot == row) continue; /* bound by an earlier call */
      if (*slot)
        add_problem(problems, sizeof problems, &nbad, "op '%s' has two formulas (%s and %s)", row->op,
                    ((const wk__formula *)*slot)->name, row->name);
      else
        *slot = row;
    }
  if (g_core_ops < 0) g_core_ops = wk_op_count();
  if (nbad) return wk_error(WK_ERR_INTERNAL, "autograd: the derivative formula table is broken: %s", problems);
  return WK_OK;
}

const wk__formula *wk__formula_for(const wk_op *op) { return *wk__op_autograd_slot((wk_op *)op); }

static bool listed_not_differentiable(const char *name) {
  for (size_t i = 0; i < sizeof g_not_differentiable / sizeof g_not_differentiable[0]; i++)
    if (strcmp(g_not_differentiable[i], name) == 0) return true;
  return false;
}

/* True when the autograd layer never needs a formula for op: it has no
 * derivative (tagged), creates tensors from no input (factories), is
 * recorded through the ops it is written with (composites), or writes an
 * out= argument (refused under autograd). */
static bool needs_no_formula(const wk_op *op) {
  uint32_t tags = wk_op_tags(op);
  if (tags & (WK_TAG_NONDIFF | WK_TAG_FACTORY | WK_TAG_COMPOSITE)) return true;
  int m = wk_op_mutated_arg(op);
  const char *mname = m >= 0 ? wk_op_arg_name(op, m) : NULL;
  return mname && strcmp(mname, "out") == 0;
}

wk_status wk__autograd_audit(const char *const *extra_rows, int nextra, bool all_ops) {
  char problems[2048] = "";
  int nbad = 0;
  /* every row names a declared op and is the formula bound to it */
  for (size_t f = 0; f < sizeof g_families / sizeof g_families[0]; f++)
    for (size_t i = 0; i < g_families[f]->n; i++) {
      const wk__formula *row = &g_families[f]->rows[i];
      wk_op *op = row_op(row, problems, sizeof problems, &nbad);
      if (op) {
        const wk__formula *bound = wk__formula_for(op);
        if (!bound || (bound != row && !bound->ext)) /* (a plugin may replace a core formula) */
          add_problem(problems, sizeof problems, &nbad, "the formula %s is not the one bound to op '%s'", row->name,
                      row->op);
      }
    }
  for (int i = 0; i < nextra; i++)
    if (!wk_op_find(extra_rows[i])) {
      wk_clear_error();
      add_problem(problems, sizeof problems, &nbad, "a formula names op '%s', which is not declared", extra_rows[i]);
    }
  /* the list of ops without a derivative names real ops that need one */
  for (size_t i = 0; i < sizeof g_not_differentiable / sizeof g_not_differentiable[0]; i++) {
    const wk_op *op = wk_op_find(g_not_differentiable[i]);
    if (!op) {
      wk_clear_error();
      add_problem(problems, sizeof problems, &nbad, "op '%s' is listed as not differentiable but is not declared",
                  g_not_differentiable[i]);
    } else if (wk__formula_for(op) || needs_no_formula(op)) {
      add_problem(problems, sizeof problems, &nbad, "op '%s' is listed as not differentiable but needs no such entry",
                  g_not_differentiable[i]);
    }
  }
  /* every differentiable op has a formula or is listed as not differentiable */
  int nops = all_ops || g_core_ops < 0 ? wk_op_count() : g_core_ops;
  for (int i = 0; i < nops; i++) {
    const wk_op *op = wk_op_at(i);
    if (!op || wk__formula_for(op) || needs_no_formula(op) || listed_not_differentiable(wk_op_name(op))) continue;
    add_problem(problems, sizeof problems, &nbad, "op '%s' has no derivative formula and is not tagged or listed as "
                "not differentiable", wk_op_name(op));
  }
  if (nbad) return wk_error(WK_ERR_INTERNAL, "autograd: %d problem%s in the derivative table: %s", nbad,
                            nbad == 1 ? "" : "s", problems);
  return WK_OK;
}
