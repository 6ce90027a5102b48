/* Private to the derivative formulas (derivatives*.c): the macros a formula
 * is written with, shared helpers, and each family's slice of the table. A
 * formula runs inside a scope that owns its temporaries; GIN hands a result
 * to the engine. */
#ifndef WICK_CORE_DERIVATIVES_H
#define WICK_CORE_DERIVATIVES_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd_internal.h"

#define BEGIN                         \
  int depth__ = wk__call_depth;       \
  wk__call_depth = 0;                 \
  wk_scope_begin();                   \
  wk_status st__ = WK_OK;             \
  const wk__node *N = c->node;        \
  (void)N;
#define END                           \
  goto done;                          \
  done:                               \
  wk_scope_end();                     \
  wk__call_depth = depth__;           \
  return st__;
/* Writes the gradient of argument `arg` (skipped when it needs none). */
#define GIN(arg, expr)                                       \
  do {                                                       \
    int k__ = N->k_of_arg[arg];                              \
    if (k__ >= 0 && c->needs[k__]) {                         \
      wk_tensor *t__ = (expr);                               \
      if (!t__) {                                            \
        st__ = wk_last_error();                              \
        goto done;                                           \
      }                                                      \
      gin[k__] = wk_retain(t__);                             \
    }                                                        \
  } while (0)
#define NEEDS(arg) (N->k_of_arg[arg] >= 0 && c->needs[N->k_of_arg[arg]])
#define G(i) (gout[i])
#define X(i) wk__saved_arg(c, i)
#define Y(i) wk__saved_out(c, i)
#define IARG(j_) (N->args[j_].u.i)
#define FARG(j_) (N->args[j_].tag == WK_V_INT ? (double)N->args[j_].u.i : N->args[j_].tag == WK_V_BOOL ? (double)N->args[j_].u.b : N->args[j_].u.f)
#define BARG(j_) (N->args[j_].u.b)
#define NONE(j_) (N->args[j_].tag == WK_V_NONE)
#define CHECK(t)                 \
  do {                           \
    if (!(t)) {                  \
      st__ = wk_last_error();    \
      goto done;                 \
    }                            \
  } while (0)
#define IN_SHAPE(arg) N->in_sizes[N->k_of_arg[arg]], N->in_ndim[N->k_of_arg[arg]]
#define OPT0 ((wk_options){0})

/* g with the dims reduced by a keepdim=False reduction put back as size 1. */
WK__HIDDEN wk_tensor *wk__unsqueeze_dims(wk_tensor *g, const int64_t *dims, int nd, int in_ndim);
/* The first output of op(a[0..n)), adopted by the formula's scope; NULL on error. */
WK__HIDDEN wk_tensor *wk__call1(const char *op, const wk_value *a, int n);
/* Number of elements a reduction over dims (nd == 0: all) combines. */
WK__HIDDEN int64_t wk__count_of(const int64_t *sizes, int ndim, const int64_t *dims, int nd);

/* Table rows: op name, grad_fn name, formula, saved arguments and outputs. */
#define A(i) (1u << (i))
#define UNARY_SAVE_X(op, nm, fn)                                                         \
  {op, nm, fn, A(0), 0}, {op "_", nm, fn, A(0), 0}
#define UNARY_SAVE_Y(op, nm, fn)                                                         \
  {op, nm, fn, 0, A(0)}, {op "_", nm, fn, 0, A(0)}

/* Each family's rows (derivatives_<family>.c). */
typedef struct {
  const wk__formula *rows;
  size_t n;
} wk__formula_family;
WK__HIDDEN extern const wk__formula_family wk__formulas_pointwise, wk__formulas_shape, wk__formulas_reduce,
    wk__formulas_nn;
WK__HIDDEN extern const wk__formula_family wk__formulas_quant; /* quantized_derivatives.c */
WK__HIDDEN extern const wk__formula_family wk__formulas_linalg; /* derivatives_linalg.c (issue 21, engineer A) */

#endif
