/* Private to the meta functions (meta_*.c) and the dispatcher: the table rows
 * that bind a meta function to each standard op, the helpers every meta
 * function is written with, and each family's slice of the table. A meta
 * function decides an op's meaning once for every device: it checks the
 * arguments with PyTorch's messages and describes the results; kernels only
 * compute. */
#ifndef WICK_CORE_META_H
#define WICK_CORE_META_H

#include <string.h>

#include "internal.h"

typedef struct wk__meta_row {
  const char *op; /* op name, e.g. "add.out" */
  wk_meta_fn fn;
} wk__meta_row;

typedef struct {
  const wk__meta_row *rows;
  size_t n;
} wk__meta_family;

/* Each family's rows (meta_<family>.c). A row naming an op that is not
 * declared is an error at wk_init (a misspelt row is never silently dropped). */
WK__HIDDEN extern const wk__meta_family wk__metas_pointwise;
WK__HIDDEN extern const wk__meta_family wk__metas_reduce;
WK__HIDDEN extern const wk__meta_family wk__metas_factory;
WK__HIDDEN extern const wk__meta_family wk__metas_index;
WK__HIDDEN extern const wk__meta_family wk__metas_conv;
WK__HIDDEN extern const wk__meta_family wk__metas_nn;
WK__HIDDEN extern const wk__meta_family wk__metas_quant; /* quantized_meta.c */
WK__HIDDEN extern const wk__meta_family wk__metas_linalg; /* meta_linalg.c (issue 21, engineer A) */
WK__HIDDEN extern const wk__meta_family wk__metas_nn_surface; /* meta_nn_surface.c (issue 21's nn and losses) */

/* Binds every family's rows to their ops (wk_init). */
WK__HIDDEN wk_status wk__metas_init(void);

/* Runs op's meta function for a call on `dev` (args normalised): fills
 * outs[0..nouts) and checks mutated results against their targets. */
WK__HIDDEN wk_status wk__meta_run(wk_op *op, const wk_value *args, wk_device dev, wk_meta_out *outs, int nouts,
                                  bool has_targets);
/* The meta device's kernel: results made from what the meta function decided
 * (targets of in-place and out= ops returned borrowed). */
WK__HIDDEN wk_status wk__meta_materialise(wk_op *op, const wk_value *args, const wk_meta_out *mo, wk_value *outs);

/* Records "meta function failed without a message" when st came bare; returns st. */
WK__HIDDEN wk_status wk__meta_failed(const wk_op *op, wk_status st);

/* Dispatcher slots (dispatch.c owns struct wk_op). */
WK__HIDDEN wk_meta_fn *wk__op_meta_slot(wk_op *op);
/* The op's `output_mask` argument, or -1. */
WK__HIDDEN int wk__op_mask_arg(const wk_op *op);
/* Argument a result aliases and mutates (in-place, out=), or -1. */
WK__HIDDEN int wk__op_out_target(const wk_op *op, int i);

/* ---- helpers for meta functions --------------------------------------------------- */
#define MT(i) (args[i].u.t)
#define MNONE(i) (args[i].tag == WK_V_NONE)
#define MNAME (wk_op_name(op))

/* Result i: dtype dt with t's shape (contiguous). */
static inline void wk__meta_like(wk_meta_out *o, const wk_tensor *t, wk_dtype dt) {
  o->dtype = dt;
  o->ndim = t->ndim;
  memcpy(o->sizes, t->sizes, sizeof(int64_t) * (size_t)t->ndim);
}
/* Result with an explicit shape. */
static inline void wk__meta_shape(wk_meta_out *o, const int64_t *sizes, int ndim, wk_dtype dt) {
  o->dtype = dt;
  o->ndim = ndim;
  if (ndim > 0) memcpy(o->sizes, sizes, sizeof(int64_t) * (size_t)ndim);
}
/* Broadcasts the shapes of the tensors among ts[0..n) (NULLs skipped) into o
 * with PyTorch's message on a mismatch. */
WK__HIDDEN wk_status wk__meta_broadcast(const char *op, wk_tensor *const *ts, int n, wk_meta_out *o);
/* The same, naming op's family ("add" for add_ and add.out) in the message;
 * inline and quick for the common call, two operands of one shape. */
WK__HIDDEN wk_status wk__meta_broadcast_slow(const wk_op *op, wk_tensor *const *ts, int n, wk_meta_out *o);
static inline wk_status wk__meta_broadcast_op(const wk_op *op, wk_tensor *const *ts, int n, wk_meta_out *o) {
  if (n == 2 && ts[0] && ts[1] && ts[0]->ndim == ts[1]->ndim) {
    int nd = ts[0]->ndim;
    const int64_t *a = ts[0]->sizes, *b = ts[1]->sizes;
    int d = 0;
    while (d < nd && a[d] == b[d]) {
      o->sizes[d] = a[d];
      d++;
    }
    if (d == nd) {
      o->ndim = nd;
      return WK_OK;
    }
  }
  return wk__meta_broadcast_slow(op, ts, n, o);
}
/* PyTorch's canCast: floating to integral and anything but bool to bool are refused. */
static inline bool wk__can_cast(wk_dtype from, wk_dtype to) {
  if (wk_dtype_is_floating(from) && !wk_dtype_is_floating(to)) return false;
  if (from != WK_BOOL && to == WK_BOOL) return false;
  return true;
}
/* The family name of an op's variant, for messages: "add_" and "add.out" -> "add". */
WK__HIDDEN const char *wk__meta_base_name(const wk_op *op, char *buf, size_t n);
/* An in-place write needs every element of its target at its own address
 * (PyTorch's "more than one element ... refers to a single memory location"). */
WK__HIDDEN wk_status wk__meta_no_overlap(const char *op, const wk_tensor *t);
/* PyTorch's ScalarType word ("Float", "Long"), for "not implemented for" messages. */
WK__HIDDEN const char *wk__dtype_word(wk_dtype dt);

#endif
