/* Wick SDK: device-independent plumbing that every kernel family repeats once
 * the core's meta functions have checked the arguments: handing results over
 * (one, several, optional, in place), delivering into an in-place / out=
 * target, reading the arguments of ops with many, BLAS operand layouts,
 * reduction / flip / roll / repeat plans, a seeded permutation, registration
 * tables and the op lists of the families the reference plugins share.
 * Header-only, public API only. Include after <wick/sdk/kernel.h>. */
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

/* Ends a kernel with n results rs[0..n): with s == WK_OK and none of them
 * NULL, hands them over as outs[0..n) and returns WK_OK; else releases them
 * all (NULL entries are fine) and returns s, or the pending error when s is
 * WK_OK but one is NULL. Consumes rs[0..n). */
static inline wk_status wk_kernel_done_n(wk_status s, wk_tensor *const *rs, int n, wk_value *outs) {
  for (int i = 0; i < n && !s; i++)
    if (!rs[i]) s = wk_last_error();
  if (s) {
    for (int i = 0; i < n; i++) wk_release(rs[i]);
    return s;
  }
  for (int i = 0; i < n; i++) outs[i] = WK_VT(rs[i]);
  return WK_OK;
}

/* Ends a kernel whose results are those of (a, b) it was asked for (want_a,
 * want_b; a result not asked for is NULL): wk_kernel_done_n over them, in
 * order. Consumes a and b. */
static inline wk_status wk_kernel_done_some(wk_status s, wk_tensor *a, bool want_a, wk_tensor *b, bool want_b,
                                            wk_value *outs) {
  wk_tensor *rs[2];
  int n = 0;
  if (want_a) rs[n++] = a;
  if (want_b) rs[n++] = b;
  return wk_kernel_done_n(s, rs, n, outs);
}

/* Stores n optional results (consumed; NULL: None), as the backward ops that
 * take an output_mask return them. */
static inline void wk_kernel_put_opt(wk_value *outs, wk_tensor *const *rs, int n) {
  for (int i = 0; i < n; i++) outs[i] = rs[i] ? WK_VT(rs[i]) : WK_VNONE;
}

/* Ends a backward kernel with n optional results, want[i] from its
 * output_mask (a result not wanted is NULL): with s == WK_OK and every wanted
 * one there, stores them as wk_kernel_put_opt does; else releases them all
 * and returns s, or the pending error where a wanted one is NULL. Consumes
 * rs[0..n). */
static inline wk_status wk_kernel_done_opt(wk_status s, wk_tensor *const *rs, const bool *want, int n, wk_value *outs) {
  for (int i = 0; i < n && !s; i++)
    if (want[i] && !rs[i]) s = wk_last_error();
  if (s) {
    for (int i = 0; i < n; i++) wk_release(rs[i]);
    return s;
  }
  wk_kernel_put_opt(outs, rs, n);
  return WK_OK;
}

/* Ends an in-place kernel that wrote self: with s == WK_OK, bumps self's
 * version and returns self, borrowed, as outs[0]; else returns s. */
static inline wk_status wk_kernel_done_inplace(wk_status s, wk_tensor *self, wk_value *outs) {
  if (s) return s;
  wk_tensor_bump_version(self);
  outs[0] = WK_VT(self);
  return WK_OK;
}

/* t (consumed) converted to dt: t itself when it already has dt or is NULL;
 * NULL (the pending error) when the conversion fails. */
static inline wk_tensor *wk_cast_own(wk_tensor *t, wk_dtype dt) {
  if (!t || wk_tensor_dtype(t) == dt) return t;
  wk_tensor *r = wk_to_dtype(t, dt);
  wk_release(t);
  return r;
}

/* Writes every element of self (any strides; the meta function checked that
 * no two share memory) with fill(job, buf), which fills a contiguous tensor
 * in row-major order: buf is self when self is contiguous, else a fresh
 * contiguous tensor like self (its dtype, on its device) then copied into
 * self with copy (the plugin's own; returns a status). Ends the in-place
 * kernel as wk_kernel_done_inplace does. */
static inline wk_status wk_fill_inplace(wk_tensor *self, wk_status (*fill)(void *job, wk_tensor *buf), void *job,
                                        wk_status (*copy)(wk_tensor *dst, wk_tensor *src), wk_value *outs) {
  bool contig = wk_tensor_is_contiguous(self);
  wk_tensor *buf = contig ? wk_retain(self)
                          : wk_empty(wk_tensor_sizes(self), wk_tensor_dim(self),
                                     (wk_options){.dtype = wk_tensor_dtype(self), .device = wk_tensor_device(self)});
  if (!buf) return wk_last_error();
  wk_status s = fill(job, buf);
  if (!s && !contig) s = copy(self, buf);
  wk_release(buf);
  return wk_kernel_done_inplace(s, self, outs);
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
  return wk_kernel_done_inplace(s, target, outs);
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

/* masked_select(self, mask)'s operands broadcast (the meta function checked
 * that they do): *xc self expanded and contiguous on its device, *mc the mask
 * expanded and contiguous on the cpu (the caller reads it there), *count its
 * true elements. New references; on error both are NULL. */
static inline wk_status wk_masked_select_operands(wk_tensor *self, wk_tensor *mask, wk_tensor **xc, wk_tensor **mc,
                                                  int64_t *count) {
  wk_tensor *xe, *me;
  *xc = *mc = NULL;
  *count = 0;
  wk_status s = wk_expand_pair("masked_select", self, mask, &xe, &me);
  if (s) return s;
  wk_tensor *mh = wk_tensor_device(me).type == WK_DEVICE_CPU ? wk_retain(me) : wk_to_device(me, wk_cpu());
  *xc = wk_contiguous(xe);
  *mc = mh ? wk_contiguous(mh) : NULL;
  wk_release(xe);
  wk_release(me);
  wk_release(mh);
  if (!*xc || !*mc) {
    wk_release(*xc);
    wk_release(*mc);
    *xc = *mc = NULL;
    return wk_last_error();
  }
  int64_t n = wk_tensor_numel(*mc);
  const bool *m = wk_tensor_data(*mc);
  for (int64_t i = 0; i < n; i++) *count += m[i];
  return WK_OK;
}

/* ---- BLAS operands ---------------------------------------------------------------- */

/* A batch of row-major matrices [batch, rows, cols] ([rows, cols]: one)
 * seen through element strides. */
typedef struct {
  const char *data;
  int64_t rows, cols, sb, s0, s1; /* sb: 0 for a single matrix */
} wk_blas_mat;

/* t (2-d or 3-d) as a wk_blas_mat. */
static inline wk_blas_mat wk_blas_mat_of(wk_tensor *t) {
  int nd = wk_tensor_dim(t);
  const int64_t *sz = wk_tensor_sizes(t), *st = wk_tensor_strides(t);
  wk_blas_mat m = {
      (const char *)wk_tensor_data(t), sz[nd - 2], sz[nd - 1], nd == 3 ? st[0] : 0, st[nd - 2], st[nd - 1]};
  return m;
}

/* How a BLAS call reads the row-major view x without a copy: as itself with
 * unit column stride (*trans false, *ld its row stride; a column-major
 * library sees x^T), or as the transpose of a row-major matrix with unit row
 * stride (*trans true, *ld its column stride). Strides of size-1 dims do not
 * matter. False when neither, or when ld is not an int. */
static inline bool wk_blas_layout(const wk_blas_mat *x, bool *trans, int64_t *ld) {
  int64_t r = x->rows, c = x->cols;
  if ((c <= 1 || x->s1 == 1) && (r <= 1 || x->s0 >= (c > 1 ? c : 1))) {
    *trans = false;
    *ld = r <= 1 ? (c > 1 ? c : 1) : x->s0;
  } else if ((r <= 1 || x->s0 == 1) && (c <= 1 || x->s1 >= (r > 1 ? r : 1))) {
    *trans = true;
    *ld = c <= 1 ? (r > 1 ? r : 1) : x->s1;
  } else {
    return false;
  }
  return *ld >= 0 && *ld <= INT32_MAX;
}

/* The two operands of a product, ops[0..2) (references the caller owns),
 * made readable by BLAS: an operand BLAS cannot read as it is (e.g. a view
 * with both strides > 1) is replaced by a contiguous copy; x, tr, ld then
 * describe each. Returns the pending error when a copy fails; *ok false when
 * even a contiguous operand has no layout (the caller reports it). */
static inline wk_status wk_blas_operands(wk_tensor *ops[2], wk_blas_mat x[2], bool tr[2], int64_t ld[2], bool *ok) {
  *ok = true;
  for (int i = 0; i < 2 && *ok; i++) {
    x[i] = wk_blas_mat_of(ops[i]);
    if (wk_blas_layout(&x[i], &tr[i], &ld[i])) continue;
    wk_tensor *cc = wk_contiguous(ops[i]);
    wk_release(ops[i]);
    ops[i] = cc;
    if (!cc) return wk_last_error();
    x[i] = wk_blas_mat_of(cc);
    *ok = wk_blas_layout(&x[i], &tr[i], &ld[i]);
  }
  return WK_OK;
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

/* ---- repeat ---------------------------------------------------------------------- */

/* repeat(self, repeats) from its args (repeats cover self's dims: checked
 * by the meta function): returns nr, the number of repeats, and fills psz
 * with self's sizes left-padded with 1 to nr dims, osz with the result's
 * (psz times the repeats) and, when pst is not NULL, pst with self's strides
 * (elements) left-padded with 0. */
static inline int wk_repeat_shapes(const wk_value *args, int64_t *psz, int64_t *pst, int64_t *osz) {
  wk_tensor *self = WK_ARG_T(0);
  const int64_t *rep = args[1].u.ints;
  int nr = args[1].len, lead = nr - wk_tensor_dim(self);
  for (int k = 0; k < nr; k++) {
    psz[k] = k < lead ? 1 : wk_tensor_sizes(self)[k - lead];
    if (pst) pst[k] = k < lead ? 0 : wk_tensor_strides(self)[k - lead];
    osz[k] = psz[k] * rep[k];
  }
  return nr;
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

/* ---- arguments --------------------------------------------------------------------- */

/* Reads a backward op's output_mask (bool[3], checked by the meta function). */
static inline void wk_output_mask(const wk_value *v, bool m[3]) {
  for (int i = 0; i < 3; i++) m[i] = v->u.ints[i] != 0;
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

/* layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight?,
 * bias?, output_mask) as its kernels read it (checked by the meta function):
 * input viewed as rows x cols, cols the product of the normalized_shape's k
 * trailing dims ns[0..k). */
typedef struct {
  wk_tensor *go, *input, *mean, *rstd, *weight;
  const int64_t *ns;
  int k;
  bool mask[3];
  int64_t rows, cols;
} wk_lnb_args;

static inline void wk_lnb_args_of(wk_lnb_args *a, const wk_value *args) {
  a->go = WK_ARG_T(0);
  a->input = WK_ARG_T(1);
  a->ns = args[2].u.ints;
  a->k = args[2].len;
  a->mean = WK_ARG_T(3);
  a->rstd = WK_ARG_T(4);
  a->weight = WK_ARG_OPT_T(5);
  wk_output_mask(&args[7], a->mask);
  wk_norm_rows(a->input, a->k, &a->rows, &a->cols);
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

/* scatter / scatter_add (self, dim, index, src) as their kernels read them:
 * the variant (ctx->user), its label, dim wrapped (checked by the meta
 * function), the index's element count n and self's dtype. */
typedef struct {
  const wk_index_variant *v;
  const char *op;
  wk_tensor *self, *index, *src;
  int dim;
  int64_t n;
  wk_dtype dt;
} wk_scatter_args;

static inline void wk_scatter_args_of(wk_scatter_args *a, const wk_kernel_ctx *ctx, const wk_value *args) {
  a->v = ctx->user;
  a->op = a->v->label;
  a->self = WK_ARG_T(0);
  a->index = WK_ARG_T(2);
  a->src = WK_ARG_T(3);
  a->dim = wk_wrap_dim(WK_ARG_I(1), wk_tensor_dim(a->self));
  a->n = wk_tensor_numel(a->index);
  a->dt = wk_tensor_dtype(a->self);
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

/* ---- registration tables --------------------------------------------------------- */

/* One row of a plugin's registration table: the op, its kernel, the kernel's
 * user data and one string more that the plugin's registrar reads (a schema
 * to declare, a kernel name; NULL where it reads none). */
typedef struct {
  const char *op;
  wk_kernel_fn fn;
  const void *user;
  const char *aux;
} wk_kernel_row;

/* Registers rows[0..n) in order with reg (the plugin's registrar) and stops
 * at the first failure; returns its status. */
static inline wk_status wk_register_rows(const wk_kernel_row *rows, size_t n, wk_status (*reg)(const wk_kernel_row *)) {
  wk_status s = WK_OK;
  for (size_t i = 0; i < n && !s; i++) s = reg(&rows[i]);
  return s;
}

/* X(op, kernel) for the dense linear algebra every reference plugin registers. */
#define WK_LINALG_KERNELS(X) X("mm", mm) X("bmm", bmm) X("addmm", addmm) X("dot", dot)

#endif
