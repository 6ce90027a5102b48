/* Wick SDK: device-independent plumbing that every kernel family repeats once
 * the core's meta functions have checked the arguments: handing results over,
 * delivering into an in-place / out= target, planning a reduction's layout,
 * flip/roll plans, a seeded permutation, and the op lists of the families that
 * the reference plugins share. Header-only, public API only. Include after
 * <wick/sdk/kernel.h>. */
#ifndef WICK_SDK_KERNEL_UTIL_H
#define WICK_SDK_KERNEL_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <wick/sdk.h>
#include <wick/sdk/kernel.h>

/* ---- results --------------------------------------------------------------------- */

/* Ends a kernel with one result: with s == WK_OK and r not NULL, hands r over
 * as outs[0] and returns WK_OK; else releases r (NULL is fine) and returns s,
 * or the pending error when s is WK_OK but r is NULL. Consumes r. */
static inline wk_status wk_kernel_done(wk_status s, wk_tensor *r, wk_value *outs) {
  if (!s && !r) s = wk_last_error();
  if (s) {
    wk_release(r);
    return s;
  }
  outs[0] = WK_VT(r);
  return WK_OK;
}

/* outs[0] = r, or the pending error when r is NULL (a constructor that failed). */
static inline wk_status wk_kernel_out1(wk_value *outs, wk_tensor *r) { return wk_kernel_done(WK_OK, r, outs); }

/* Releases n tensors (NULL entries are skipped). */
static inline void wk_release_n(wk_tensor *const *ts, int n) {
  for (int i = 0; i < n; i++) wk_release(ts[i]);
}

/* Delivers a kernel's fresh result (consumed) as outs[0]. target NULL: the
 * functional variant, result itself. Else in place / out=: result is copied
 * into target with copy (the plugin's own copy; returns a status), target's
 * version is bumped and target is returned borrowed. The shape and the
 * castability of result into target were checked by the op's meta function
 * before the kernel ran (core/meta.c), so no check is made here. A NULL
 * result is the pending error. */
static inline wk_status wk_deliver(wk_tensor *result, wk_tensor *target, wk_value *outs,
                                   wk_status (*copy)(wk_tensor *dst, wk_tensor *src)) {
  if (!result) return wk_last_error();
  if (!target) {
    outs[0] = WK_VT(result);
    return WK_OK;
  }
  wk_status s = copy(target, result); /* result is fresh: no overlap with target */
  wk_release(result);
  if (s) return s;
  wk_tensor_bump_version(target);
  outs[0] = WK_VT(target);
  return WK_OK;
}

/* ---- reduction layout ------------------------------------------------------------ */

/* Which dims of a reduction's input are reduced, and the permutation that
 * puts the kept dims first and the reduced ones last (each group in order). */
typedef struct {
  int ndim;
  bool reduced[WK_MAX_DIMS];
  int64_t perm[WK_MAX_DIMS];
  int64_t rows; /* product of the kept sizes (output elements) */
  int64_t n;    /* product of the reduced sizes (values per output element) */
} wk_reduce_layout;

/* Fills l for x reduced over dims[0..ndims) (ndims == 0: every dim). The dims
 * were checked by the op's meta function: they are only wrapped here. */
static inline void wk_reduce_layout_of(wk_reduce_layout *l, wk_tensor *x, const int64_t *dims, int ndims) {
  int nd = wk_tensor_dim(x);
  const int64_t *sz = wk_tensor_sizes(x);
  memset(l, 0, sizeof *l);
  l->ndim = nd;
  for (int i = 0; i < ndims && nd > 0; i++) l->reduced[dims[i] < 0 ? dims[i] + nd : dims[i]] = true;
  if (ndims == 0)
    for (int d = 0; d < nd; d++) l->reduced[d] = true;
  int k = 0;
  l->rows = 1;
  l->n = 1;
  for (int pass = 0; pass < 2; pass++)
    for (int d = 0; d < nd; d++)
      if (l->reduced[d] == (pass == 1)) {
        l->perm[k++] = d;
        if (pass)
          l->n *= sz[d];
        else
          l->rows *= sz[d];
      }
}

/* A dim the meta function checked, wrapped: d < 0 counts from the end (a
 * 0-dim tensor wraps as 1-dim, as wk_check_dim does). */
static inline int wk_wrap_dim(int64_t d, int nd) { return (int)(d < 0 ? d + (nd > 0 ? nd : 1) : d); }

/* *ae and *be: a and b expanded (new view references) to their broadcast
 * shape, which the meta function checked; an error status otherwise. */
static inline wk_status wk_expand_pair(const char *op, wk_tensor *a, wk_tensor *b, wk_tensor **ae, wk_tensor **be) {
  wk_tensor *pair[2] = {a, b};
  int64_t shape[WK_MAX_DIMS];
  int nd = 0;
  *ae = *be = NULL;
  wk_status s = wk_broadcast_shapes(op, pair, 2, shape, &nd);
  if (s) return s;
  *ae = wk_expand(a, shape, nd);
  *be = *ae ? wk_expand(b, shape, nd) : NULL;
  if (*be) return WK_OK;
  wk_release(*ae);
  *ae = NULL;
  return wk_last_error();
}

/* ---- flip / roll ----------------------------------------------------------------- */

/* What flip(self, dims) and roll(self, shifts, dims) do per dim: reverse it,
 * or rotate it by shift[d] in [0, size). flat: roll with no dims rotates the
 * flattened tensor by shift[0]. */
typedef struct {
  bool flip[WK_MAX_DIMS + 1];
  int64_t shift[WK_MAX_DIMS + 1];
  bool flat;
} wk_remap_plan;

/* flip's plan from its dims argument (checked by the meta function). */
static inline void wk_flip_plan(wk_remap_plan *p, wk_tensor *self, const wk_value *dims) {
  int nd = wk_tensor_dim(self);
  memset(p, 0, sizeof *p);
  for (int i = 0; i < dims->len; i++) {
    p->flip[wk_wrap_dim(dims->u.ints[i], nd)] = true;
  }
}

/* roll's plan from its shifts and dims arguments (aligned and in range: the
 * meta function checked); a dim repeated rolls again. */
static inline void wk_roll_plan(wk_remap_plan *p, wk_tensor *self, const wk_value *shifts, const wk_value *dims) {
  int nd = wk_tensor_dim(self);
  memset(p, 0, sizeof *p);
  if (dims->len == 0 && shifts->len == 1) {
    p->flat = true;
    p->shift[0] = shifts->u.ints[0];
    return;
  }
  for (int i = 0; i < dims->len; i++) {
    int d = wk_wrap_dim(dims->u.ints[i], nd);
    int64_t n = nd ? wk_tensor_sizes(self)[d] : 1;
    if (n > 0) p->shift[d] = (p->shift[d] + shifts->u.ints[i] % n) % n;
  }
}

/* ---- randperm -------------------------------------------------------------------- */

/* A permutation of 0..n-1 into perm by Fisher-Yates: step i swaps i with a
 * uniform pick from [i, n), drawn from the Philox counter off + i of seed (a
 * sequential algorithm; every device draws the same permutation). */
static inline void wk_randperm_fill(int64_t *perm, int64_t n, uint64_t seed, uint64_t off) {
  for (int64_t i = 0; i < n; i++) perm[i] = i;
  for (int64_t i = 0; i + 1 < n; i++) {
    uint32_t r[4];
    wk_philox_at(seed, off + (uint64_t)i, r);
    uint64_t span = (uint64_t)(n - i);
    uint64_t x = span <= ((uint64_t)1 << 32) ? (uint64_t)r[0] % span : ((((uint64_t)r[0] << 32) | r[1]) % span);
    int64_t k = i + (int64_t)x, tmp = perm[i];
    perm[i] = perm[k];
    perm[k] = tmp;
  }
}

/* ---- normalization rows ---------------------------------------------------------- */

/* layer_norm's view of x normalized over its last k dims: *rows = product of
 * the leading sizes, *cols = product of the last k. */
static inline void wk_norm_rows(wk_tensor *x, int k, int64_t *rows, int64_t *cols) {
  int nd = wk_tensor_dim(x);
  const int64_t *sz = wk_tensor_sizes(x);
  *rows = 1;
  *cols = 1;
  for (int i = 0; i < nd; i++) {
    if (i < nd - k)
      *rows *= sz[i];
    else
      *cols *= sz[i];
  }
}

/* ---- op lists the reference plugins share ---------------------------------------- */

/* User data of the index family's kernels: in place or functional; for
 * scatter, whether it adds and the name its messages use. */
typedef struct {
  bool inplace, add;
  const char *label;
} wk_index_variant;

/* Variant v of the table the list below refers to (one static table per
 * translation unit; the pointers stay valid for the program's life). */
static inline const wk_index_variant *wk_index_variant_at(int v) {
  static const wk_index_variant t[] = {{false, false, NULL},           {true, false, NULL},
                                       {false, false, "scatter"},      {true, false, "scatter_"},
                                       {false, true, "scatter_add"},   {true, true, "scatter_add_"}};
  return &t[v];
}

/* X(op, kernel, variant) for each index op every reference plugin registers:
 * the plugin defines k_<kernel> and passes wk_index_variant_at(variant) as
 * the kernel's user data. */
#define WK_INDEX_KERNELS(X)                                                                    \
  X("index_select", index_select, 0)                                                           \
  X("gather", gather, 0)                                                                       \
  X("scatter.src", scatter, 2)                                                                 \
  X("scatter_.src", scatter, 3)                                                                \
  X("scatter_add", scatter, 4)                                                                 \
  X("scatter_add_", scatter, 5)                                                                \
  X("masked_fill.Scalar", masked_fill, 0)                                                      \
  X("masked_fill_.Scalar", masked_fill, 1)                                                     \
  X("one_hot", one_hot, 0)

/* X(op, kernel) for the dense linear algebra every reference plugin registers. */
#define WK_LINALG_KERNELS(X) X("mm", mm) X("bmm", bmm) X("addmm", addmm) X("dot", dot)

#endif
