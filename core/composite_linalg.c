/* Composite kernels of issue 21's ops added by engineer A, written with other
 * ops and registered by the core for every device at fallback priority:
 * mode, unique, unique_consecutive, index_put, masked_scatter, einsum,
 * baddbmm, addbmm, tensordot, kron, linalg_vector_norm, linalg_matrix_norm,
 * linalg_inv, linalg_det, linalg_pinv and linalg_lstsq. The meta functions
 * (core/meta_linalg.c) checked the arguments; gradients come from the parts
 * autograd records (their derivative formulas), as PyTorch's composites. */
#include <float.h>
#include <math.h>
#include <string.h>

#include <wick/sdk/check.h>

#include "linalg_internal.h"
#include "composite_kernel.h"


/* All results of op(a...) into o (owned by the current scope); false on error. */
static bool calln(const char *op, const wk_value *a, int n, wk_value *o) { return wk_call(op, a, n, o) == WK_OK; }
#define CN(o, op, ...) calln(op, (const wk_value[]){__VA_ARGS__}, NARGS(__VA_ARGS__), o)

/* Fails the kernel with a message (inside BEGIN_K). */
#define FAILK(...)             \
  do {                         \
    wk_error(__VA_ARGS__);     \
    return FINISH1(NULL);      \
  } while (0)

static int wrap(int64_t d, int nd) { return (int)(d < 0 ? d + nd : d); }
static wk_options opts_of(const wk_tensor *x, wk_dtype dt) { return (wk_options){.dtype = dt, .device = x->storage->device}; }
static bool on_meta(const wk_tensor *x) { return x->storage->device.type == wk_device_type_find("meta"); }
static int64_t numel(const wk_tensor *t) {
  int64_t n = 1;
  for (int d = 0; d < t->ndim; d++) n *= t->sizes[d];
  return n;
}
/* Integer-preserving scalar arithmetic (wk_add_scalar and friends pass a float, which promotes int64 to float). */
static wk_tensor *addi(wk_tensor *t, int64_t v) { return t ? C1("add.Scalar", WK_VT(t), WK_VI(v)) : NULL; }
static wk_tensor *muli(wk_tensor *t, int64_t v) { return t ? C1("mul.Scalar", WK_VT(t), WK_VI(v)) : NULL; }
static wk_tensor *flat(wk_tensor *x) {
  int64_t all = -1;
  return x ? wk_reshape(x, &all, 1) : NULL;
}
static wk_tensor *to_meta_shape(wk_tensor *t, const wk_meta_out *m) { return t ? wk_reshape(t, m->sizes, m->ndim) : NULL; }
/* x's last two dims swapped. */
static wk_tensor *mT(wk_tensor *x) { return x ? wk_transpose(x, -2, -1) : NULL; }
static wk_tensor *movedim1(wk_tensor *x, int64_t from, int64_t to) {
  return x ? C1("movedim", WK_VT(x), WK_VINTS(&from, 1), WK_VINTS(&to, 1)) : NULL;
}

/* ---- mode --------------------------------------------------------------------------------------------------------
 * The stable sort along dim; each element's run of equal values [start, end] from a cummax of the run starts and a
 * reversed cummin of the run ends; the first longest run (the smallest value among equally frequent ones, as
 * PyTorch); its value and the original index at the run's end (the last occurrence, as PyTorch's cpu kernel). */
static wk_status k_mode(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  BEGIN_K;
  wk_tensor *x = T(0);
  int64_t one = 1;
  if (x->ndim == 0) x = wk_reshape(x, &one, 1);
  int d = x ? wrap(args[1].u.i, x->ndim) : 0;
  wk_value so[WK_MAX_OUTS];
  wk_tensor *r[2] = {NULL, NULL};
  if (x && CN(so, "sort", WK_VT(x), WK_VI(d), WK_VB(false))) {
    wk_tensor *v = so[0].u.t, *ix = so[1].u.t;
    int64_t n = x->sizes[d];
    int64_t vs[WK_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) vs[i] = i == d ? n : 1;
    wk_tensor *pos = wk_reshape(wk_arange_int(0, n, 1, opts_of(x, WK_I64)), vs, x->ndim);
    pos = pos ? wk_expand(pos, x->sizes, x->ndim) : NULL;
    wk_tensor *is_start, *is_end;
    if (n > 1) {
      wk_tensor *neq = wk_ne(wk_narrow(v, d, 1, n - 1), wk_narrow(v, d, 0, n - 1));
      int64_t es[WK_MAX_DIMS];
      memcpy(es, x->sizes, sizeof(int64_t) * (size_t)x->ndim);
      es[d] = 1;
      wk_tensor *t1 = wk_ones(es, x->ndim, opts_of(x, WK_BOOL));
      is_start = C1("cat", WK_VTS(((wk_tensor *[]){t1, neq}), 2), WK_VI(d));
      is_end = C1("cat", WK_VTS(((wk_tensor *[]){neq, t1}), 2), WK_VI(d));
    } else {
      is_start = is_end = wk_ones(x->sizes, x->ndim, opts_of(x, WK_BOOL));
    }
    wk_tensor *zero = pos ? wk_zeros_like(pos, (wk_options){0}) : NULL;
    wk_tensor *big = pos ? wk_full_like(pos, (double)n, (wk_options){0}) : NULL;
    wk_value cm[WK_MAX_OUTS], cn[WK_MAX_OUTS];
    wk_tensor *start = NULL, *end = NULL;
    if (is_start && is_end && zero && big && CN(cm, "cummax", WK_VT(wk_where(is_start, pos, zero)), WK_VI(d)))
      start = cm[0].u.t;
    wk_tensor *rev = is_end && big ? wk_flip(wk_where(is_end, pos, big), (const int64_t[]){d}, 1) : NULL;
    if (rev && CN(cn, "cummin", WK_VT(rev), WK_VI(d))) end = wk_flip(cn[0].u.t, (const int64_t[]){d}, 1);
    wk_tensor *cnt = start && end ? wk_sub(end, start) : NULL;
    wk_value am[WK_MAX_OUTS];
    if (cnt && CN(am, "max.dim", WK_VT(cnt), WK_VI(d), WK_VB(true))) {
      wk_tensor *e = C1("gather", WK_VT(end), WK_VI(d), am[1]);
      r[0] = e ? to_meta_shape(C1("gather", WK_VT(v), WK_VI(d), WK_VT(e)), &c->meta[0]) : NULL;
      r[1] = e ? to_meta_shape(C1("gather", WK_VT(ix), WK_VI(d), WK_VT(e)), &c->meta[1]) : NULL;
    }
  }
  return wk__composite_finish(outs, r, 2, depth__);
}

/* ---- unique, unique_consecutive ----------------------------------------------------------------------------------
 * Rows (dim given: the slices along dim, flattened; else the elements) in order (sorted: a stable lexicographic
 * sort, one stable sort per column from the last); a row starts a group when it differs from the previous one
 * (NaN never equals NaN, so each NaN is its own group, as PyTorch's sort-based unique). The values are the group
 * starts; inverse the group of each input row; counts the distance between group starts. */
static wk_status k_unique(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  BEGIN_K;
  bool consec = strcmp(wk_op_name(c->op), "unique_consecutive") == 0;
  wk_tensor *x = T(0);
  bool want_inv = args[consec ? 1 : 2].u.b, want_cnt = args[consec ? 2 : 3].u.b;
  const wk_value *dimv = &args[consec ? 3 : 4];
  bool by_dim = dimv->tag == WK_V_INT;
  int d = by_dim ? wrap(dimv->u.i, x->ndim) : 0;
  wk_options oi = opts_of(x, WK_I64);
  int64_t z = 0;
  wk_tensor *r[3] = {NULL, NULL, NULL};
  /* the rows: [n, w] */
  wk_tensor *rows;
  int64_t n, w = 1;
  if (by_dim) {
    wk_tensor *m = movedim1(x, d, 0);
    n = x->sizes[d];
    w = n ? numel(x) / n : 0;
    rows = m ? wk_reshape(m, (const int64_t[]){n, w}, 2) : NULL;
  } else {
    n = numel(x);
    rows = wk_reshape(x, (const int64_t[]){n, 1}, 2);
  }
  if (!rows) return wk__composite_finish(outs, r, 3, depth__);
  if (on_meta(x)) FAILK(WK_ERR_UNSUPPORTED, "%s(): the result's size is data; it has no meta form", wk_op_name(c->op));
  wk_tensor *order = NULL; /* the sorted position -> input row; NULL: the identity */
  if (!consec && n > 0) {
    order = wk_arange_int(0, n, 1, oi);
    for (int64_t col = w - 1; col >= 0 && order; col--) {
      wk_tensor *key = wk_index_select(wk_select(rows, 1, col), 0, order);
      wk_value so[WK_MAX_OUTS];
      order = key && CN(so, "sort", WK_VT(key), WK_VI(0), WK_VB(false)) ? wk_index_select(order, 0, so[1].u.t) : NULL;
    }
    if (!order) return wk__composite_finish(outs, r, 3, depth__);
  }
  wk_tensor *srt = order ? wk_index_select(rows, 0, order) : rows;
  wk_tensor *is_new;
  if (n == 0) {
    is_new = wk_empty(&z, 1, opts_of(x, WK_BOOL));
  } else {
    wk_tensor *t1 = wk_ones((const int64_t[]){1}, 1, opts_of(x, WK_BOOL));
    wk_tensor *diff = n > 1 ? wk_ne(wk_narrow(srt, 0, 1, n - 1), wk_narrow(srt, 0, 0, n - 1)) : NULL;
    if (diff && w != 1) diff = C1("any.dim", WK_VT(diff), WK_VI(1), WK_VB(false));
    else if (diff) diff = wk_reshape(diff, (const int64_t[]){n - 1}, 1);
    if (w == 0 && diff) diff = wk_zeros((const int64_t[]){n - 1}, 1, opts_of(x, WK_BOOL)); /* empty rows are equal */
    is_new = n > 1 ? (diff ? C1("cat", WK_VTS(((wk_tensor *[]){t1, diff}), 2), WK_VI(0)) : NULL) : t1;
  }
  wk_tensor *ramp = wk_arange_int(0, n, 1, oi);
  wk_tensor *starts = is_new && ramp ? wk_masked_select(ramp, is_new) : NULL; /* group start positions */
  if (!starts) return wk__composite_finish(outs, r, 3, depth__);
  int64_t k = numel(starts);
  wk_tensor *vals = wk_index_select(srt, 0, starts); /* [k, w] */
  if (by_dim) {
    int64_t vs[WK_MAX_DIMS];
    vs[0] = k;
    for (int i = 0, j = 1; i < x->ndim; i++)
      if (i != d) vs[j++] = x->sizes[i];
    vals = vals ? movedim1(wk_reshape(vals, vs, x->ndim), 0, d) : NULL;
    vals = vals ? wk_contiguous(vals) : NULL;
  } else {
    vals = flat(vals);
  }
  r[0] = vals;
  /* unique_dim and unique_consecutive with dim return all three; sorted unique computes the inverse for the
   * counts too (PyTorch's _unique2 returns it then) */
  bool full = by_dim;
  if (want_inv || full || (!consec && want_cnt)) {
    wk_tensor *gid = addi(wk_cumsum(wk_to_dtype(is_new, WK_I64), 0), -1);
    wk_tensor *inv = gid;
    if (order && gid) inv = C1("scatter.src", WK_VT(wk_empty(&n, 1, oi)), WK_VI(0), WK_VT(order), WK_VT(gid));
    r[1] = inv && !by_dim ? wk_reshape(inv, x->sizes, x->ndim) : inv;
  } else {
    r[1] = wk_empty(&z, 1, oi);
  }
  if ((want_cnt || full) && k == 0) {
    r[2] = wk_empty(&z, 1, oi);
  } else if (want_cnt || full) {
    wk_tensor *ends = C1("cat", WK_VTS(((wk_tensor *[]){wk_narrow(starts, 0, 1, k > 0 ? k - 1 : 0),
                                                          wk_full((const int64_t[]){1}, 1, (double)n, oi)}),
                                       2),
                         WK_VI(0));
    r[2] = ends ? wk_sub(ends, starts) : NULL;
  } else {
    r[2] = wk_empty(&z, 1, oi);
  }
  return wk__composite_finish(outs, r, 3, depth__);
}

/* ---- index_put ---------------------------------------------------------------------------------------------------
 * Boolean masks become their nonzero() columns; the index tensors broadcast to one shape B and address the indexed
 * dims (moved to the front) as one flattened dim; index_copy (index_add when accumulating) writes values, broadcast
 * to PyTorch's indexing-result shape, into self viewed as [prod(indexed sizes), other dims...]. The plan is shared
 * with the values' gradient (wk__index_put_values_grad: the same positions read back with index_select). */
typedef struct {
  wk_tensor *lin;                                         /* [nb] flat positions over the indexed dims */
  int64_t perm[WK_MAX_DIMS], inv[WK_MAX_DIMS];            /* self's dims indexed first, and back */
  int64_t psz[WK_MAX_DIMS], xf[WK_MAX_DIMS + 1];          /* the permuted sizes; [prod(indexed), rest...] */
  int64_t rs[WK_MAX_DIMS], bs[WK_MAX_DIMS], vp[WK_MAX_DIMS]; /* the indexing result's shape; B; rs -> [B, pre, post] */
  int nd, nr, ni, rn, bnd, pre;
  int64_t nb;
} ip_plan;

static wk_status ip_plan_make(wk_tensor *x, wk_tensor *const *list, int len, ip_plan *p) {
  int nd = x->ndim;
  memset(p, 0, sizeof *p);
  p->nd = nd;
  wk_tensor *idx[WK_MAX_DIMS] = {NULL}; /* per dim of self, its long index or NULL */
  int dim = 0;
  for (int i = 0; i < len; i++) {
    wk_tensor *t = list[i];
    if (!t) {
      dim++;
      continue;
    }
    if (t->dtype == WK_BOOL || t->dtype == WK_U8) {
      wk_tensor *m = t->dtype == WK_BOOL ? t : wk_ne_scalar(t, 0);
      int k = t->ndim;
      if (k == 0) return wk_error(WK_ERR_UNSUPPORTED, "index_put(): a 0-d boolean index is not supported");
      wk_tensor *nz = m ? C1("nonzero", WK_VT(m)) : NULL;
      if (!nz) return wk_last_error();
      for (int j = 0; j < k; j++) idx[dim + j] = wk_select(nz, 1, j);
      dim += k;
    } else {
      idx[dim++] = t->dtype == WK_I64 ? t : wk_to_dtype(t, WK_I64);
    }
  }
  int first = -1, last = -1;
  for (int d = 0; d < nd; d++) {
    if (!idx[d]) continue;
    if (first < 0) first = d;
    last = d, p->ni++;
    /* broadcast shapes */
    wk_tensor *t = idx[d];
    int tn = t->ndim, m = p->bnd > tn ? p->bnd : tn;
    int64_t nb[WK_MAX_DIMS];
    for (int i = 0; i < m; i++) {
      int ib = i - (m - p->bnd), it = i - (m - tn);
      int64_t a = ib >= 0 ? p->bs[ib] : 1, b = it >= 0 ? t->sizes[it] : 1;
      if (a != b && a != 1 && b != 1)
        return wk_error(WK_ERR_SHAPE, "index_put(): shape mismatch: indexing tensors could not be broadcast together");
      nb[i] = a == 1 ? b : a;
    }
    memcpy(p->bs, nb, sizeof(int64_t) * (size_t)m);
    p->bnd = m;
  }
  if (p->ni == 0) return WK_OK;
  bool adjacent = last - first + 1 == p->ni;
  /* self's dims: indexed first, then the others */
  int np = 0;
  int64_t rest[WK_MAX_DIMS];
  for (int d = 0; d < nd; d++)
    if (idx[d]) p->perm[np++] = d;
  for (int d = 0; d < nd; d++)
    if (!idx[d]) rest[p->nr] = x->sizes[d], p->perm[np + p->nr++] = d;
  for (int i = 0; i < nd; i++) p->inv[p->perm[i]] = i, p->psz[i] = x->sizes[p->perm[i]];
  /* the flat index over the indexed dims; negative indices wrap, out-of-range ones fail */
  wk_tensor *lin = NULL;
  int64_t prod = 1;
  for (int d = nd - 1; d >= 0; d--) {
    if (!idx[d]) continue;
    wk_tensor *t = wk_expand(idx[d], p->bs, p->bnd);
    int64_t sz = x->sizes[d];
    if (t && numel(t) > 0) {
      int64_t lo = 0, hi = 0;
      if (wk_item_i64(wk_min(t), &lo) || wk_item_i64(wk_max(t), &hi)) return wk_last_error();
      if (lo < -sz || hi >= sz)
        return wk_error(WK_ERR_INDEX, "index_put(): index %lld is out of bounds for dimension %d with size %lld",
                        (long long)(hi >= sz ? hi : lo), d, (long long)sz);
      t = wk_where(wk_lt_scalar(t, 0), addi(t, sz), t);
    }
    wk_tensor *term = t ? (prod == 1 ? t : muli(t, prod)) : NULL;
    lin = !term ? NULL : lin ? wk_add(lin, term) : term;
    if (!lin) return wk_last_error();
    prod *= sz;
  }
  /* the indexing result's shape: [pre..., B..., post...] (adjacent indexed dims) or [B..., rest...] */
  int rn = 0;
  p->pre = adjacent ? first : 0;
  int64_t rs[WK_MAX_DIMS * 2];
  for (int d = 0; d < p->pre; d++) rs[rn++] = x->sizes[d];
  for (int i = 0; i < p->bnd; i++) rs[rn++] = p->bs[i];
  for (int d = 0; d < nd; d++)
    if (!idx[d] && (!adjacent || d > last)) rs[rn++] = x->sizes[d];
  if (rn > WK_MAX_DIMS) return wk_error(WK_ERR_SHAPE, "index_put(): the indexing result has more than %d dims", WK_MAX_DIMS);
  memcpy(p->rs, rs, sizeof(int64_t) * (size_t)rn);
  p->rn = rn;
  int k = 0; /* [pre..., B..., post...] -> [B..., pre..., post...] */
  for (int i = 0; i < p->bnd; i++) p->vp[k++] = p->pre + i;
  for (int i = 0; i < p->pre; i++) p->vp[k++] = i;
  for (int i = p->pre + p->bnd; i < rn; i++) p->vp[k++] = i;
  p->nb = 1;
  for (int i = 0; i < p->bnd; i++) p->nb *= p->bs[i];
  p->xf[0] = prod;
  for (int i = 0; i < p->nr; i++) p->xf[i + 1] = rest[i];
  p->lin = wk_reshape(lin, &p->nb, 1);
  return p->lin ? WK_OK : wk_last_error();
}

static wk_status k_index_put(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  BEGIN_K;
  wk_tensor *x = T(0), *v = T(2);
  bool acc = args[3].u.b;
  int nd = x->ndim;
  if (on_meta(x)) return FINISH1(wk_zeros(c->meta[0].sizes, c->meta[0].ndim, opts_of(x, x->dtype)));
  ip_plan p;
  if (ip_plan_make(x, args[1].u.tensors, args[1].len, &p)) return FINISH1(NULL);
  if (p.ni == 0) { /* only slices: the whole of self */
    wk_tensor *ve = wk_expand(v, x->sizes, nd);
    return FINISH1(ve ? (acc ? wk_add(x, ve) : wk_add(wk_zeros_like(x, (wk_options){0}), ve)) : NULL);
  }
  /* values broadcast to the indexing result's shape, then B first */
  bool ok = v->ndim <= p.rn;
  for (int i = 0; ok && i < v->ndim; i++) {
    int64_t a = v->sizes[v->ndim - 1 - i], b = p.rs[p.rn - 1 - i];
    ok = a == b || a == 1;
  }
  if (!ok) {
    char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX];
    FAILK(WK_ERR_SHAPE, "index_put(): shape mismatch: value tensor of shape %s cannot be broadcast to indexing result of shape %s",
          wk_sizes_str(v->sizes, v->ndim, a, sizeof a), wk_sizes_str(p.rs, p.rn, b, sizeof b));
  }
  wk_tensor *ve = wk_expand(v, p.rs, p.rn);
  if (ve && p.pre > 0) ve = wk_permute(ve, p.vp, p.rn);
  int64_t vf[WK_MAX_DIMS + 1];
  vf[0] = p.nb;
  for (int i = 0; i < p.nr; i++) vf[i + 1] = p.xf[i + 1];
  wk_tensor *xp = wk_permute(x, p.perm, nd);
  wk_tensor *xs = xp ? wk_reshape(xp, p.xf, p.nr + 1) : NULL;
  wk_tensor *vs = ve ? wk_reshape(ve, vf, p.nr + 1) : NULL;
  wk_tensor *o = xs && vs ? C1(acc ? "index_add" : "index_copy", WK_VT(xs), WK_VI(0), WK_VT(p.lin), WK_VT(vs)) : NULL;
  o = o ? wk_reshape(o, p.psz, nd) : NULL;
  o = o ? wk_permute(o, p.inv, nd) : NULL;
  return FINISH1(o ? wk_contiguous(o) : NULL);
}

/* index_put's values gradient before the broadcast is undone: g (self's shape) read at the indexed positions, in
 * the indexing result's shape (PyTorch's grad.index(indices)); the engine sums it to values' shape. Runs in the
 * caller's scope (a derivative formula). */
wk_tensor *wk__index_put_values_grad(wk_tensor *g, wk_tensor *const *list, int len) {
  ip_plan p;
  if (!g || ip_plan_make(g, list, len, &p)) return NULL;
  if (p.ni == 0) return g;
  wk_tensor *gp = wk_reshape(wk_permute(g, p.perm, p.nd), p.xf, p.nr + 1);
  wk_tensor *sel = gp ? wk_index_select(gp, 0, p.lin) : NULL; /* [nb, rest...] */
  int64_t bs[WK_MAX_DIMS * 2];
  int n = 0;
  for (int i = 0; i < p.bnd; i++) bs[n++] = p.bs[i];
  for (int i = 0; i < p.nr; i++) bs[n++] = p.xf[i + 1];
  sel = sel ? wk_reshape(sel, bs, n) : NULL; /* [B..., pre..., post...] */
  if (sel && p.pre > 0) {
    int64_t iv[WK_MAX_DIMS];
    for (int i = 0; i < p.rn; i++) iv[p.vp[i]] = i;
    sel = wk_permute(sel, iv, p.rn);
  }
  return sel;
}

/* ---- masked_scatter: the k-th true element of the (broadcast) mask takes source's k-th element ------------- */
static wk_status k_masked_scatter(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  BEGIN_K;
  const wk_meta_out *m = &c->meta[0];
  wk_tensor *x = T(0), *src = T(2);
  if (on_meta(x)) return FINISH1(wk_zeros(m->sizes, m->ndim, opts_of(x, x->dtype)));
  wk_tensor *xe = flat(wk_expand(x, m->sizes, m->ndim)), *me = flat(wk_expand(T(1), m->sizes, m->ndim));
  wk_tensor *pos = me ? wk_cumsum(wk_to_dtype(me, WK_I64), 0) : NULL;
  int64_t cnt = 0, ns = numel(src);
  if (!xe || !pos) return FINISH1(NULL);
  if (numel(pos) > 0 && wk_item_i64(wk_select(pos, 0, -1), &cnt)) return FINISH1(NULL);
  if (cnt > ns)
    FAILK(WK_ERR_SHAPE, "masked_scatter(): expected source to have at least %lld elements (the mask's true count), got %lld",
          (long long)cnt, (long long)ns);
  if (cnt == 0) return FINISH1(to_meta_shape(wk_clone(xe), m));
  pos = C1("clamp", WK_VT(addi(pos, -1)), WK_VI(0), WK_VI(ns - 1));
  wk_tensor *taken = pos ? wk_index_select(flat(src), 0, pos) : NULL;
  return FINISH1(taken ? to_meta_shape(wk_where(me, taken, xe), m) : NULL);
}

/* ---- einsum ------------------------------------------------------------------------------------------------------
 * Each operand's repeated labels become diagonals; operands are then contracted left to right, two at a time, with
 * one bmm: labels in both that are still needed (by the result or a later operand) are the batch, labels in both
 * that are not are contracted, labels in one only are its free dims (summed first when nothing needs them). Tensors
 * between steps are kept as (tensor, labels). */
typedef struct {
  wk_tensor *t;
  int n;
  int8_t lab[WK__EIN_LABELS];
} ein_term;

static int lab_pos(const ein_term *a, int l) {
  for (int i = 0; i < a->n; i++)
    if (a->lab[i] == l) return i;
  return -1;
}
/* Sums the dims of a whose label is not in keep (a label-indexed bool array). */
static bool ein_sum_unneeded(ein_term *a, const bool *keep) {
  int64_t dims[WK__EIN_LABELS];
  int nd = 0, k = 0;
  int8_t lab[WK__EIN_LABELS];
  for (int i = 0; i < a->n; i++) {
    if (keep[a->lab[i]])
      lab[k++] = a->lab[i];
    else
      dims[nd++] = i;
  }
  if (nd == 0) return true;
  a->t = wk_sum_dim(a->t, dims, nd, false);
  memcpy(a->lab, lab, (size_t)k);
  a->n = k;
  return a->t != NULL;
}

static bool ein_contract(ein_term *a, ein_term *b, const bool *later, ein_term *r) {
  /* labels only in one operand and not needed: summed first */
  /* a label neither needed later nor of size > 1 in the other operand is summed (or, of size 1, dropped) now:
   * sum_k a_k * b_1 = b_1 * sum_k a_k */
  bool keep_a[WK__EIN_LABELS], keep_b[WK__EIN_LABELS];
  for (int l = 0; l < WK__EIN_LABELS; l++) {
    int ia = lab_pos(a, l), ib = lab_pos(b, l);
    keep_a[l] = later[l] || (ib >= 0 && b->t->sizes[ib] > 1);
    keep_b[l] = later[l] || (ia >= 0 && a->t->sizes[ia] > 1);
  }
  if (!ein_sum_unneeded(a, keep_a) || !ein_sum_unneeded(b, keep_b)) return false;
  /* classify: batch (in both, needed), contracted (in both, not needed), a-only, b-only; a dim of size 1 in one
   * operand and larger in the other is that other's own (broadcast) */
  int8_t bat[WK__EIN_LABELS], con[WK__EIN_LABELS], ao[WK__EIN_LABELS], bo[WK__EIN_LABELS];
  int nbat = 0, ncon = 0, nao = 0, nbo = 0;
  int64_t sb = 1, sc = 1, sa = 1, sbo = 1;
  int64_t pa[WK__EIN_LABELS], pb[WK__EIN_LABELS];
  bool squeeze_a[WK__EIN_LABELS] = {false}, squeeze_b[WK__EIN_LABELS] = {false};
  for (int i = 0; i < a->n; i++) {
    int l = a->lab[i], j = lab_pos(b, l);
    int64_t na = a->t->sizes[i], nb = j >= 0 ? b->t->sizes[j] : 1;
    if (j < 0) {
      ao[nao++] = (int8_t)l, sa *= na;
    } else if (na == nb) {
      if (later[l]) bat[nbat++] = (int8_t)l, sb *= na;
      else con[ncon++] = (int8_t)l, sc *= na;
    } else if (nb == 1) { /* b broadcasts along l (needed later: a's own) */
      squeeze_b[l] = true;
      ao[nao++] = (int8_t)l, sa *= na;
    } else {
      squeeze_a[l] = true;
    }
  }
  for (int j = 0; j < b->n; j++) {
    int l = b->lab[j];
    int i = lab_pos(a, l);
    if (i < 0 || squeeze_a[l]) bo[nbo++] = (int8_t)l, sbo *= b->t->sizes[j];
  }
  /* a: [batch, a-only, contracted]; b: [batch, contracted, b-only]; size-1 broadcast dims dropped */
  int k = 0;
  for (int i = 0; i < nbat; i++) pa[k++] = lab_pos(a, bat[i]);
  for (int i = 0; i < nao; i++) pa[k++] = lab_pos(a, ao[i]);
  for (int i = 0; i < ncon; i++) pa[k++] = lab_pos(a, con[i]);
  int nsa = 0;
  for (int i = 0; i < a->n; i++)
    if (squeeze_a[a->lab[i]]) pa[k + nsa++] = i;
  wk_tensor *ta = wk_permute(a->t, pa, a->n);
  k = 0;
  for (int i = 0; i < nbat; i++) pb[k++] = lab_pos(b, bat[i]);
  for (int i = 0; i < ncon; i++) pb[k++] = lab_pos(b, con[i]);
  for (int i = 0; i < nbo; i++) pb[k++] = lab_pos(b, bo[i]);
  int nsb = 0;
  for (int j = 0; j < b->n; j++)
    if (squeeze_b[b->lab[j]]) pb[k + nsb++] = j;
  wk_tensor *tb = wk_permute(b->t, pb, b->n);
  ta = ta ? wk_reshape(ta, (const int64_t[]){sb, sa, sc}, 3) : NULL;
  tb = tb ? wk_reshape(tb, (const int64_t[]){sb, sc, sbo}, 3) : NULL;
  wk_tensor *p = ta && tb ? wk_bmm(ta, tb) : NULL;
  if (!p) return false;
  r->n = 0;
  int64_t rs[WK__EIN_LABELS];
  for (int i = 0; i < nbat; i++) r->lab[r->n] = bat[i], rs[r->n++] = a->t->sizes[lab_pos(a, bat[i])];
  for (int i = 0; i < nao; i++) r->lab[r->n] = ao[i], rs[r->n++] = a->t->sizes[lab_pos(a, ao[i])];
  for (int i = 0; i < nbo; i++) r->lab[r->n] = bo[i], rs[r->n++] = b->t->sizes[lab_pos(b, bo[i])];
  if (r->n > WK_MAX_DIMS) {
    wk_error(WK_ERR_SHAPE, "einsum(): an intermediate result has more than %d dims", WK_MAX_DIMS);
    return false;
  }
  r->t = wk_reshape(p, rs, r->n);
  return r->t != NULL;
}

static wk_status k_einsum(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  BEGIN_K;
  wk__einsum_eq e;
  int n = args[1].len;
  wk_tensor *const *ts = args[1].u.tensors;
  if (wk__einsum_parse(args[0].u.s, ts, n, &e)) return FINISH1(NULL);
  ein_term terms[WK__EIN_MAX_OPS];
  for (int i = 0; i < n; i++) { /* repeated labels -> diagonals (moved last by diagonal) */
    ein_term *t = &terms[i];
    t->t = ts[i], t->n = e.ndim[i];
    memcpy(t->lab, e.lab[i], (size_t)t->n);
    for (bool again = true; again && t->t;) {
      again = false;
      for (int p = 0; p < t->n && !again; p++)
        for (int q = p + 1; q < t->n && !again; q++)
          if (t->lab[p] == t->lab[q]) {
            int8_t l = t->lab[p];
            t->t = C1("diagonal", WK_VT(t->t), WK_VI(0), WK_VI(p), WK_VI(q));
            int k = 0;
            for (int j = 0; j < t->n; j++)
              if (j != p && j != q) t->lab[k++] = t->lab[j];
            t->lab[k++] = l;
            t->n = k;
            again = true;
          }
    }
    if (!t->t) return FINISH1(NULL);
  }
  bool in_out[WK__EIN_LABELS] = {false};
  for (int i = 0; i < e.nout; i++) in_out[e.out[i]] = true;
  ein_term acc = terms[0];
  for (int i = 1; i < n; i++) {
    bool later[WK__EIN_LABELS];
    memcpy(later, in_out, sizeof later);
    for (int j = i + 1; j < n; j++)
      for (int k = 0; k < terms[j].n; k++) later[terms[j].lab[k]] = true;
    ein_term r;
    if (!ein_contract(&acc, &terms[i], later, &r)) return FINISH1(NULL);
    acc = r;
  }
  if (!ein_sum_unneeded(&acc, in_out)) return FINISH1(NULL);
  /* into the result's order; labels of size 1 here that broadcast to more are expanded */
  int64_t perm[WK__EIN_LABELS];
  for (int i = 0; i < e.nout; i++) {
    perm[i] = lab_pos(&acc, e.out[i]);
    if (perm[i] < 0) FAILK(WK_ERR_INTERNAL, "einsum(): a result label was lost");
  }
  wk_tensor *r = wk_permute(acc.t, perm, e.nout);
  r = r ? wk_expand(r, c->meta[0].sizes, c->meta[0].ndim) : NULL;
  return FINISH1(r ? wk_contiguous(r) : NULL);
}

/* ---- baddbmm / addbmm: beta * self + alpha * (batch1 @ batch2) (summed over the batch for addbmm: one mm of
 * [n, b*k] by [b*k, m]); beta == 0 ignores self (its NaNs too), as PyTorch. ---------------------------------------- */
static bool scalar_is(const wk_value *v, double x) {
  return (v->tag == WK_V_INT ? (double)v->u.i : v->tag == WK_V_BOOL ? (double)v->u.b : v->u.f) == x;
}
static wk_status k_baddbmm(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  BEGIN_K;
  bool batched = wk_op_name(c->op)[0] == 'b';
  wk_tensor *b1 = T(1), *b2 = T(2), *p;
  if (batched) {
    p = wk_bmm(b1, b2);
  } else {
    int64_t b = b1->sizes[0], n = b1->sizes[1], k = b1->sizes[2], m = b2->sizes[2];
    wk_tensor *a = wk_reshape(wk_permute(b1, (const int64_t[]){1, 0, 2}, 3), (const int64_t[]){n, b * k}, 2);
    wk_tensor *bb = wk_reshape(b2, (const int64_t[]){b * k, m}, 2);
    p = a && bb ? wk_mm(a, bb) : NULL;
  }
  if (p && !scalar_is(&args[4], 1)) p = C1("mul.Scalar", WK_VT(p), args[4]);
  if (!p || scalar_is(&args[3], 0)) return FINISH1(p);
  wk_tensor *s = scalar_is(&args[3], 1) ? T(0) : C1("mul.Scalar", WK_VT(T(0)), args[3]);
  return FINISH1(s ? wk_add(p, s) : NULL);
}

/* ---- tensordot: [free self, contracted] @ [contracted, free other] -------------------------------------------- */
static wk_status k_tensordot(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  BEGIN_K;
  wk_tensor *a = T(0), *b = T(1);
  int n = args[2].len;
  int64_t pa[WK_MAX_DIMS], pb[WK_MAX_DIMS], fa = 1, fb = 1, k = 1;
  bool ua[WK_MAX_DIMS] = {false}, ub[WK_MAX_DIMS] = {false};
  for (int i = 0; i < n; i++) {
    int da = wrap(args[2].u.ints[i], a->ndim), db = wrap(args[3].u.ints[i], b->ndim);
    ua[da] = ub[db] = true;
    pa[a->ndim - n + i] = da, pb[i] = db, k *= a->sizes[da];
  }
  for (int d = 0, j = 0; d < a->ndim; d++)
    if (!ua[d]) pa[j++] = d, fa *= a->sizes[d];
  for (int d = 0, j = n; d < b->ndim; d++)
    if (!ub[d]) pb[j++] = d, fb *= b->sizes[d];
  wk_tensor *ma = wk_reshape(wk_permute(a, pa, a->ndim), (const int64_t[]){fa, k}, 2);
  wk_tensor *mb = wk_reshape(wk_permute(b, pb, b->ndim), (const int64_t[]){k, fb}, 2);
  return FINISH1(ma && mb ? to_meta_shape(wk_mm(ma, mb), &c->meta[0]) : NULL);
}

/* ---- kron: self as [a0, 1, a1, 1, ...] times other as [1, b0, 1, b1, ...], reshaped to [a0*b0, a1*b1, ...] ------- */
static wk_status k_kron(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  BEGIN_K;
  wk_tensor *a = T(0), *b = T(1);
  int nd = c->meta[0].ndim;
  if (2 * nd > WK_MAX_DIMS) FAILK(WK_ERR_SHAPE, "kron(): at most %d dims", WK_MAX_DIMS / 2);
  int64_t as[WK_MAX_DIMS], bs[WK_MAX_DIMS];
  for (int i = 0; i < nd; i++) {
    int ia = i - (nd - a->ndim), ib = i - (nd - b->ndim);
    as[2 * i] = ia >= 0 ? a->sizes[ia] : 1, as[2 * i + 1] = 1;
    bs[2 * i] = 1, bs[2 * i + 1] = ib >= 0 ? b->sizes[ib] : 1;
  }
  wk_tensor *p = wk_mul(wk_reshape(a, as, 2 * nd), wk_reshape(b, bs, 2 * nd));
  return FINISH1(to_meta_shape(p, &c->meta[0]));
}

/* ---- norms ------------------------------------------------------------------------------------------------------- */
static double scalar_d(const wk_value *v) {
  return v->tag == WK_V_INT ? (double)v->u.i : v->tag == WK_V_BOOL ? v->u.b : v->u.f;
}
/* ||x||_ord over dims (n == 0: all), PyTorch's linalg.vector_norm. */
static wk_tensor *vnorm(wk_tensor *x, double ord, const int64_t *dims, int n, bool keep) {
  int64_t all[WK_MAX_DIMS];
  if (n == 0) {
    for (int d = 0; d < x->ndim; d++) all[d] = d;
    dims = all, n = x->ndim;
  }
  if (x->ndim == 0) { /* a 0-d tensor reduces to itself */
    wk_tensor *ax = wk_abs(x);
    if (ord == 0) return ax ? wk_to_dtype(wk_ne_scalar(ax, 0), x->dtype) : NULL;
    return ax;
  }
  if (isinf(ord)) return C1(ord > 0 ? "amax" : "amin", WK_VT(wk_abs(x)), WK_VINTS(dims, n), WK_VB(keep));
  if (ord == 0) {
    wk_tensor *nz = wk_to_dtype(wk_ne_scalar(x, 0), x->dtype);
    return nz ? wk_sum_dim(nz, dims, n, keep) : NULL;
  }
  if (ord > 0) return C1("norm", WK_VT(x), WK_VF(ord), WK_VINTS(dims, n), WK_VB(keep));
  wk_tensor *p = C1("pow.Scalar", WK_VT(wk_abs(x)), WK_VF(ord));
  return p ? C1("pow.Scalar", WK_VT(wk_sum_dim(p, dims, n, keep)), WK_VF(1.0 / ord)) : NULL;
}
static wk_status k_vector_norm(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  BEGIN_K;
  wk_tensor *x = T(0);
  if (args[4].tag == WK_V_DTYPE) x = wk_to_dtype(x, args[4].u.dtype);
  int n = args[2].tag == WK_V_NONE ? 0 : args[2].len;
  wk_tensor *r = x ? vnorm(x, scalar_d(&args[1]), n ? args[2].u.ints : NULL, n, args[3].u.b) : NULL;
  return FINISH1(to_meta_shape(r, &c->meta[0]));
}

/* The singular values of x's matrices over dims (d0, d1), moved last. */
static wk_tensor *svdvals(wk_tensor *x, int d0, int d1) {
  int64_t perm[WK_MAX_DIMS];
  int k = 0;
  for (int d = 0; d < x->ndim; d++)
    if (d != d0 && d != d1) perm[k++] = d;
  perm[k++] = d0, perm[k++] = d1;
  wk_value o[WK_MAX_OUTS];
  wk_tensor *m = wk_permute(x, perm, x->ndim);
  return m && CN(o, "linalg_svd", WK_VT(m), WK_VB(false), WK_VNONE) ? o[1].u.t : NULL;
}
static wk_status k_matrix_norm(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  BEGIN_K;
  wk_tensor *x = T(0);
  if (args[4].tag == WK_V_DTYPE) x = wk_to_dtype(x, args[4].u.dtype);
  if (!x) return FINISH1(NULL);
  int d0 = wrap(args[2].u.ints[0], x->ndim), d1 = wrap(args[2].u.ints[1], x->ndim);
  bool keep = args[3].u.b;
  int64_t dd[2] = {d0, d1};
  wk_tensor *r;
  if (args[1].tag == WK_V_STR && args[1].u.s[0] == 'f') {
    r = vnorm(x, 2, dd, 2, keep);
  } else if (args[1].tag == WK_V_STR || fabs(scalar_d(&args[1])) == 2) { /* 'nuc', 2, -2: the singular values */
    wk_tensor *s = svdvals(x, d0, d1);
    if (args[1].tag == WK_V_STR)
      r = s ? wk_sum_dim(s, (const int64_t[]){-1}, 1, false) : NULL;
    else
      r = s ? C1(scalar_d(&args[1]) > 0 ? "amax" : "amin", WK_VT(s), WK_VINTS((const int64_t[]){-1}, 1), WK_VB(false))
            : NULL;
  } else { /* 1, -1: max/min column sum; inf, -inf: max/min row sum */
    double ord = scalar_d(&args[1]);
    int sd = isinf(ord) ? d1 : d0, md = isinf(ord) ? d0 : d1;
    wk_tensor *s = wk_sum_dim(wk_abs(x), (const int64_t[]){sd}, 1, true);
    r = s ? C1(ord > 0 ? "amax" : "amin", WK_VT(s), WK_VINTS((const int64_t[]){md}, 1), WK_VB(true)) : NULL;
  }
  return FINISH1(to_meta_shape(r, &c->meta[0]));
}

/* ---- inv, det, pinv, lstsq --------------------------------------------------------------------------------------- */
static wk_tensor *eye_like(wk_tensor *a) {
  int64_t n = a->sizes[a->ndim - 1];
  return wk_eye(n, n, opts_of(a, a->dtype));
}
static wk_status k_inv(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  BEGIN_K;
  wk_tensor *a = T(0), *i = eye_like(a);
  if (i) i = wk_expand(i, a->sizes, a->ndim); /* as matrices: a [n, n] B with a batch of n would read as vectors */
  wk_tensor *r = i ? C1("linalg_solve", WK_VT(a), WK_VT(i), WK_VB(true)) : NULL;
  return FINISH1(r ? to_meta_shape(r, &c->meta[0]) : NULL);
}
/* det = sign * exp(logabsdet) (the gradient through slogdet's: det * A^-T, for invertible A). */
static wk_status k_det(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  BEGIN_K;
  wk_value o[WK_MAX_OUTS];
  wk_tensor *r = CN(o, "linalg_slogdet", WK_VT(T(0))) ? wk_mul(o[0].u.t, wk_exp(o[1].u.t)) : NULL;
  return FINISH1(r);
}

/* PyTorch's pinv tolerance: max(atol, rtol * largest singular value); rtol defaults to eps * max(m, n) when atol is
 * not given (or is 0), else to 0. */
static wk_tensor *pinv_of(wk_tensor *a, const wk_value *atol, const wk_value *rtol, bool herm, wk_tensor **rank) {
  int64_t m = a->sizes[a->ndim - 2], n = a->sizes[a->ndim - 1];
  double eps = a->dtype == WK_F32 ? FLT_EPSILON : DBL_EPSILON;
  double at = atol && atol->tag != WK_V_NONE ? atol->u.f : 0;
  double rt = rtol && rtol->tag != WK_V_NONE ? rtol->u.f : (at > 0 ? 0 : eps * (double)(m > n ? m : n));
  wk_value o[WK_MAX_OUTS];
  wk_tensor *U, *S, *Vh;
  if (herm) {
    if (!CN(o, "linalg_eigh", WK_VT(a), WK_VS("L"))) return NULL;
    wk_tensor *w = o[0].u.t;
    U = o[1].u.t, S = wk_abs(w);
    Vh = U ? mT(wk_mul(U, wk_unsqueeze(wk_sign(w), -2))) : NULL; /* A = U diag(|w|) (U sign(w))^T */
  } else {
    if (!CN(o, "linalg_svd", WK_VT(a), WK_VB(false), WK_VNONE)) return NULL;
    U = o[0].u.t, S = o[1].u.t, Vh = o[2].u.t;
  }
  if (!S || !Vh) return NULL;
  int64_t k = S->sizes[S->ndim - 1];
  wk_tensor *smax = k > 0 ? C1("amax", WK_VT(S), WK_VINTS((const int64_t[]){-1}, 1), WK_VB(true))
                          : wk_sum_dim(S, (const int64_t[]){-1}, 1, true); /* no singular values: 0 */
  wk_tensor *tol = smax ? C1("clamp_min", WK_VT(wk_mul_scalar(smax, rt)), WK_VF(at)) : NULL;
  wk_tensor *keep = tol ? wk_gt(S, tol) : NULL;
  if (!keep) return NULL;
  if (rank) *rank = wk_sum_dim(wk_to_dtype(keep, WK_I64), (const int64_t[]){-1}, 1, false);
  wk_tensor *safe = wk_where(keep, S, wk_ones_like(S, (wk_options){0}));
  wk_tensor *sinv = safe ? wk_mul(wk_reciprocal(safe), wk_to_dtype(keep, S->dtype)) : NULL;
  /* V diag(sinv) U^T */
  return sinv ? wk_matmul(mT(Vh), wk_mul(wk_unsqueeze(sinv, -1), mT(U))) : NULL;
}
static wk_status k_pinv(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  BEGIN_K;
  return FINISH1(to_meta_shape(pinv_of(T(0), &args[1], &args[2], args[3].u.b, NULL), &c->meta[0]));
}
/* lstsq: pinv(A) @ B (the minimum-norm solution; gelsy's for full-rank A) and gelsy's other results: the rank
 * (singular values over rcond * the largest), empty residuals and singular values. */
static wk_status k_lstsq(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  BEGIN_K;
  wk_tensor *a = T(0), *b = T(1), *rank = NULL;
  bool vec = b->ndim == a->ndim - 1;
  wk_value rc = args[2];
  wk_value none = WK_VNONE, zero = WK_VF(0);
  wk_tensor *p = pinv_of(a, &zero, rc.tag == WK_V_NONE ? &none : &rc, false, &rank);
  wk_tensor *x = p ? wk_matmul(p, vec ? wk_unsqueeze(b, -1) : b) : NULL;
  if (x && vec) x = wk_squeeze_dim(x, -1);
  int64_t z = 0;
  wk_tensor *r[4] = {x ? wk_contiguous(wk_expand(x, c->meta[0].sizes, c->meta[0].ndim)) : NULL,
                     wk_empty(&z, 1, opts_of(a, a->dtype)),
                     rank ? wk_contiguous(wk_expand(rank, c->meta[2].sizes, c->meta[2].ndim)) : NULL,
                     wk_empty(&z, 1, opts_of(a, a->dtype))};
  return wk__composite_finish(outs, r, 4, depth__);
}

/* ---- the decompositions, solvers and scatter_reduce on devices without their own kernel -------------------------
 * (cuda until it has cuSOLVER kernels, and any other device): the arguments copied to the cpu, the cpu kernel, the
 * results copied back. The op keeps its own derivative formula (the call records one node); declined on the cpu
 * (whose kernel needs LAPACK: without it the op has none) and on `meta` (its meta function sizes the results). */
static bool via_cpu_supports(const wk_kernel_ctx *c, const wk_value *args) {
  (void)args;
  return c->device.type != WK_DEVICE_CPU && c->device.type != WK_DEVICE_META;
}
static wk_status k_via_cpu(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  /* at call depth 0 in a scope of its own (the copies and the cpu results are temporaries of that scope, released
   * when it ends; below the dispatcher they would belong to no scope and leak), under no_grad: the op's own node
   * is the autograd record */
  BEGIN_K;
  wk_no_grad_begin();
  int n = wk_op_num_args(c->op), nout = wk_op_num_outs(c->op);
  wk_value a[WK_MAX_ARGS], o[WK_MAX_OUTS];
  wk_tensor *r[WK_MAX_OUTS] = {NULL};
  bool ok = true;
  for (int i = 0; i < n; i++) {
    a[i] = args[i];
    if (args[i].tag == WK_V_TENSOR) {
      a[i] = WK_VT(wk_to_device(args[i].u.t, wk_cpu()));
      ok = ok && a[i].u.t;
    }
  }
  if (ok && wk_call(wk_op_name(c->op), a, n, o) == WK_OK)
    for (int i = 0; i < nout; i++) r[i] = wk_to_device(o[i].u.t, c->device);
  wk_no_grad_end();
  return wk__composite_finish(outs, r, nout, depth__);
}

void wk__composites_linalg_register(void);
void wk__composites_linalg_register(void) {
  static const struct {
    const char *op;
    wk_kernel_fn fn;
  } ks[] = {{"mode", k_mode},
            {"unique", k_unique},
            {"unique_consecutive", k_unique},
            {"index_put", k_index_put},
            {"masked_scatter", k_masked_scatter},
            {"einsum", k_einsum},
            {"baddbmm", k_baddbmm},
            {"addbmm", k_baddbmm},
            {"tensordot", k_tensordot},
            {"kron", k_kron},
            {"linalg_vector_norm", k_vector_norm},
            {"linalg_matrix_norm", k_matrix_norm},
            {"linalg_matrix_norm.str_ord", k_matrix_norm},
            {"linalg_inv", k_inv},
            {"linalg_det", k_det},
            {"linalg_pinv", k_pinv},
            {"linalg_lstsq", k_lstsq}};
  for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
    wk_kernel_desc d = {sizeof d, ks[i].op, WK_DEVICE_DEFAULT, WK_PRIORITY_FALLBACK, ks[i].fn, NULL, NULL,
                        "core.composite"};
    wk_kernel_register(&d);
  }
  static const char *const via_cpu[] = {"linalg_cholesky", "linalg_qr",      "linalg_eigh",       "linalg_svd",
                                        "linalg_solve",    "linalg_slogdet", "scatter_reduce.two"};
  for (size_t i = 0; i < sizeof via_cpu / sizeof via_cpu[0]; i++) {
    wk_kernel_desc d = {sizeof d, via_cpu[i], WK_DEVICE_DEFAULT, WK_PRIORITY_FALLBACK, k_via_cpu, via_cpu_supports,
                        NULL, "core.via_cpu"};
    wk_kernel_register(&d);
  }
}
