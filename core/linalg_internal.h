/* Private to core/meta_linalg.c and core/composite_linalg.c (issue 21, the
 * linalg and indexing ops): einsum's parsed equation, shared by the meta
 * function (which checks it and sizes the result) and the composite kernel. */
#ifndef WICK_CORE_LINALG_INTERNAL_H
#define WICK_CORE_LINALG_INTERNAL_H

#include "internal.h"

#define WK__EIN_MAX_OPS 16     /* operands */
#define WK__EIN_LABELS 64      /* a-z, A-Z, then the ellipsis' dims (52 + up to WK_MAX_DIMS) */
#define WK__EIN_ELL 52         /* label of the ellipsis' first dim */

typedef struct {
  int nops;
  int ndim[WK__EIN_MAX_OPS];                  /* each operand's dims */
  int8_t lab[WK__EIN_MAX_OPS][WK_MAX_DIMS];   /* each operand's dim -> label (ellipsis dims: 52 + k) */
  int nell;                                   /* dims the ellipsis stands for (broadcast over operands) */
  int nout;
  int8_t out[WK__EIN_LABELS];                 /* the result's labels in order */
  int64_t size[WK__EIN_LABELS];               /* each label's (broadcast) size, -1 when unused */
} wk__einsum_eq;

/* Parses equation for the operands ts[0..n) (PyTorch's rules: a-z and A-Z labels, one "..." per term,
 * an implicit output of the ellipsis then the labels seen once, in ASCII order; sizes equal or 1).
 * Records PyTorch's message and returns the error on a malformed equation or mismatched operands. */
WK__HIDDEN wk_status wk__einsum_parse(const char *equation, wk_tensor *const *ts, int n, wk__einsum_eq *e);

/* index_put's values gradient (core/composite_linalg.c): g, shaped like self, read at the positions the indices
 * (index_put's list: NULL, integer or boolean tensors) name, in PyTorch's indexing-result shape (the caller sums
 * it to values' shape). NULL with the error recorded. Tensors belong to the caller's scope. */
WK__HIDDEN wk_tensor *wk__index_put_values_grad(wk_tensor *g, wk_tensor *const *list, int len);

#endif
