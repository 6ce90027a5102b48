/* Derivative formulas: views, copies and indexing. */
#include "derivatives.h"

/* ---- views and copies ------------------------------------------------------------------------ */
static wk_status d_reshape_back(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_reshape(G(0), IN_SHAPE(0)));
  END
}
static wk_status d_identity(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, G(0));
  END
}
static wk_status d_to_device(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_to_device(G(0), N->in_device0));
  END
}
static wk_status d_copy(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_zeros_like(G(0), OPT0)); /* self is overwritten: a zero gradient */
  GIN(1, G(0));
  END
}
static wk_status d_permute(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int n = N->args[1].len;
  int64_t inv[WK_MAX_DIMS];
  for (int i = 0; i < n; i++) {
    int64_t d = N->args[1].u.ints[i];
    inv[d < 0 ? d + n : d] = i;
  }
  GIN(0, wk_permute(G(0), inv, n));
  END
}
static wk_status d_transpose(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_transpose(G(0), IARG(1), IARG(2)));
  END
}
static wk_status d_t(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_t(G(0)));
  END
}
static wk_status d_expand(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, G(0)); /* the engine sums back to the input shape */
  END
}
/* Places g into zeros of the input's shape at positions start, start+step, ...
 * of dim, with a differentiable scatter. */
static wk_tensor *embed_slice(wk_tensor *g, const int64_t *in_sizes, int in_ndim, int dim, int64_t start, int64_t step) {
  wk_tensor *z = wk_zeros(in_sizes, in_ndim, (wk_options){.dtype = wk_tensor_dtype(g), .device = wk_tensor_device(g)});
  int64_t len = wk_tensor_size(g, dim);
  wk_tensor *idx = wk_arange_int(start, start + len * step, step, (wk_options){.device = wk_tensor_device(g)});
  if (!idx || len == 0) return z;
  int64_t shp[WK_MAX_DIMS];
  for (int i = 0; i < in_ndim; i++) shp[i] = i == dim ? len : 1;
  wk_tensor *ix = wk_expand(wk_reshape(idx, shp, in_ndim), wk_tensor_sizes(g), in_ndim);
  return wk_scatter(z, dim, ix, g);
}
static wk_status d_slice(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN const int64_t *sz = N->in_sizes[0];
  int nd = N->in_ndim[0];
  int dim = (int)(IARG(1) < 0 ? IARG(1) + nd : IARG(1));
  int64_t n = sz[dim], start = NONE(2) ? 0 : IARG(2);
  if (start < 0) start += n;
  if (start < 0) start = 0;
  if (start > n) start = n;
  GIN(0, embed_slice(G(0), sz, nd, dim, start, IARG(4)));
  END
}
static wk_status d_narrow(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN const int64_t *sz = N->in_sizes[0];
  int nd = N->in_ndim[0];
  int dim = (int)(IARG(1) < 0 ? IARG(1) + nd : IARG(1));
  int64_t start = IARG(2) < 0 ? IARG(2) + sz[dim] : IARG(2);
  GIN(0, embed_slice(G(0), sz, nd, dim, start, 1));
  END
}
static wk_status d_select(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN const int64_t *sz = N->in_sizes[0];
  int nd = N->in_ndim[0];
  int dim = (int)(IARG(1) < 0 ? IARG(1) + nd : IARG(1));
  int64_t idx = IARG(2) < 0 ? IARG(2) + sz[dim] : IARG(2);
  GIN(0, embed_slice(wk_unsqueeze(G(0), dim), sz, nd, dim, idx, 1));
  END
}

/* ---- as_strided and in-place ops on views ------------------------------------------------------------ */
static int64_t geom_numel(const int64_t *sz, int nd) {
  int64_t n = 1;
  for (int i = 0; i < nd; i++) n *= sz[i];
  return n;
}
/* The last storage element a geometry reaches (numel > 0). */
static int64_t geom_last(const int64_t *sz, const int64_t *st, int nd, int64_t off) {
  for (int i = 0; i < nd; i++) off += (sz[i] - 1) * st[i];
  return off;
}
/* True when two elements of the geometry may share a storage element
 * (PyTorch's _maybe_overlapping_memory: sorted by stride, each stride must
 * pass the reach of the smaller ones). */
static bool geom_overlaps(const int64_t *sz, const int64_t *st, int nd) {
  int idx[WK_MAX_DIMS], n = 0;
  for (int d = 0; d < nd; d++) {
    if (sz[d] < 2) continue;
    if (st[d] == 0) return true;
    int j = n++;
    while (j > 0 && st[idx[j - 1]] > st[d]) {
      idx[j] = idx[j - 1];
      j--;
    }
    idx[j] = d;
  }
  int64_t reach = 0;
  for (int i = 0; i < n; i++) {
    if (st[idx[i]] <= reach) return true;
    reach += (sz[idx[i]] - 1) * st[idx[i]];
  }
  return false;
}
static bool geom_dense(const wk__geom *g) {
  int64_t want = 1;
  for (int d = g->ndim - 1; d >= 0; d--) {
    if (g->sizes[d] != 1 && g->strides[d] != want) return false;
    want *= g->sizes[d];
  }
  return true;
}
/* The storage positions (relative to the first element of a buffer) of the
 * elements of a geometry, in logical order: a flat int64 tensor. */
static wk_tensor *positions(wk_tensor *pos, const int64_t *sz, const int64_t *st, int nd, int64_t off) {
  return wk_reshape(wk_as_strided(pos, sz, st, nd, off), WK_SHAPE(-1));
}

/* PyTorch's as_strided_backward: the output's gradient is summed into a zero
 * buffer covering both geometries' storage (overlapping output elements
 * accumulate), divided by how often the input reaches each element when the
 * input overlaps itself, and read back through the input's geometry. Written
 * with scatter_add and index_select, so it is differentiable again. */
static wk_tensor *as_strided_back(wk_tensor *g, const wk__geom *in, const int64_t *osz, const int64_t *ost, int ond,
                                  int64_t ooff) {
  wk_options fo = {.dtype = wk_tensor_dtype(g), .device = wk_tensor_device(g)};
  int64_t in_numel = geom_numel(in->sizes, in->ndim);
  if (in_numel == 0 || geom_numel(osz, ond) == 0) return wk_zeros(in->sizes, in->ndim, fo);
  int64_t lo = in->offset < ooff ? in->offset : ooff;
  int64_t hi = geom_last(in->sizes, in->strides, in->ndim, in->offset), ohi = geom_last(osz, ost, ond, ooff);
  if (ohi > hi) hi = ohi;
  int64_t extent = hi - lo + 1;
  wk_tensor *pos = wk_arange_int(0, extent, 1, (wk_options){.dtype = WK_I64, .device = fo.device});
  wk_tensor *flat = wk_scatter_add(wk_zeros(WK_SHAPE(extent), fo), 0, positions(pos, osz, ost, ond, ooff - lo),
                                   wk_reshape(g, WK_SHAPE(-1)));
  wk_tensor *ipos = positions(pos, in->sizes, in->strides, in->ndim, in->offset - lo);
  if (geom_overlaps(in->sizes, in->strides, in->ndim)) {
    wk_tensor *cnt = wk_scatter_add(wk_zeros(WK_SHAPE(extent), fo), 0, ipos, wk_ones(WK_SHAPE(in_numel), fo));
    flat = wk_div(flat, wk_clamp(cnt, 1, NAN));
  }
  return wk_reshape(wk_index_select(flat, 0, ipos), in->sizes, in->ndim);
}
static wk_status d_as_strided(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN const wk__geom *in = N->geom;
  if (!in) {
    st__ = wk_error(WK_ERR_INTERNAL, "%s: the input's geometry was not kept", N->name);
    goto done;
  }
  int64_t ooff = NONE(3) ? in->offset : IARG(3);
  GIN(0, as_strided_back(G(0), in, N->args[1].u.ints, N->args[2].u.ints, N->args[1].len, ooff));
  END
}

/* CopySlices (PyTorch's): the history of a base after an in-place op on one
 * of its views. The base's gradient passes unchanged outside the view; on
 * the view's elements it goes through the in-place op's own formula (the
 * inner node), whose other inputs' gradients are this node's inputs 1.. .
 * Out of place (index_select / scatter over the base's storage positions),
 * so create_graph records it like any formula. */
static wk_status d_copy_slices(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN const wk__geom *bg = &N->geom[0], *vg = &N->geom[1];
  wk__node *fn = N->inner;
  wk_tensor *g = G(0);
  wk_options fo = {.dtype = wk_tensor_dtype(g), .device = wk_tensor_device(g)};
  bool dense = geom_dense(bg);
  int64_t extent = geom_numel(bg->sizes, bg->ndim) ? geom_last(bg->sizes, bg->strides, bg->ndim, 0) + 1 : 0;
  wk_tensor *pos = wk_arange_int(0, extent, 1, (wk_options){.dtype = WK_I64, .device = fo.device});
  wk_tensor *bpos = dense ? NULL : positions(pos, bg->sizes, bg->strides, bg->ndim, 0);
  /* the base's gradient laid out over its storage elements */
  wk_tensor *flat = dense ? wk_reshape(g, WK_SHAPE(-1))
                          : wk_scatter(wk_zeros(WK_SHAPE(extent), fo), 0, bpos, wk_reshape(g, WK_SHAPE(-1)));
  wk_tensor *vpos = positions(pos, vg->sizes, vg->strides, vg->ndim, vg->offset - bg->offset);
  wk_tensor *gv = wk_reshape(wk_index_select(flat, 0, vpos), vg->sizes, vg->ndim);
  CHECK(gv);
  bool ineeds[WK__MAX_NODE_INPUTS];
  wk_tensor *igin[WK__MAX_NODE_INPUTS] = {0};
  for (int k = 0; k < fn->nin; k++) ineeds[k] = c->needs[k];
  wk__bctx ic = {fn, fn->nin, ineeds, c->create_graph, c->held, c->nheld, c->accumulate};
  wk_tensor *ig[1] = {gv};
  st__ = fn->f->fn(&ic, ig, igin);
  for (int k = 0; !st__ && k < fn->nin; k++)
    if (ineeds[k] && !igin[k])
      st__ = wk_error(WK_ERR_AUTOGRAD, "%s: the derivative of %s for input %d is not implemented", N->name, fn->name,
                      k);
  if (st__) {
    if (!wk__error_pending()) wk_error(st__, "autograd: %s failed", fn->name);
    for (int k = 0; k < fn->nin; k++) wk_release(igin[k]);
    goto done;
  }
  for (int k = 1; k < fn->nin; k++) gin[k] = igin[k];
  if (igin[0] && c->needs[0]) {
    wk_tensor *r = wk_scatter(flat, 0, vpos, wk_reshape(wk_expand(igin[0], vg->sizes, vg->ndim), WK_SHAPE(-1)));
    wk_tensor *res = dense ? wk_reshape(r, bg->sizes, bg->ndim)
                           : wk_reshape(wk_index_select(r, 0, bpos), bg->sizes, bg->ndim);
    if (res) gin[0] = wk_retain(res);
    else st__ = wk_last_error();
  }
  /* igin[0] is a plain reference (it may be one of this scope's tensors) */
  wk__call_depth = 1;
  wk_release(igin[0]);
  wk__call_depth = 0;
  END
}
const wk__formula wk__copy_slices_formula = {"copy_", "CopySlices", d_copy_slices, 0, 0, NULL, false};

/* ---- indexing ------------------------------------------------------------------------------------ */
static wk_status d_cat(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int n = N->args[0].len;
  int64_t dim = IARG(1), off = 0;
  int base = N->k_of_arg[0];
  for (int i = 0; i < n && base >= 0; i++) {
    int k = base + i;
    int nd = N->in_ndim[k];
    if (nd == 1 && N->in_sizes[k][0] == 0 && wk_tensor_dim(G(0)) != 1) { /* legacy empty input */
      if (c->needs[k]) {
        wk_tensor *z = wk_zeros(N->in_sizes[k], 1, (wk_options){.dtype = wk_tensor_dtype(G(0)), .device = wk_tensor_device(G(0))});
        CHECK(z);
        gin[k] = wk_retain(z);
      }
      continue;
    }
    int d = (int)(dim < 0 ? dim + nd : dim);
    int64_t len = N->in_sizes[k][d];
    if (c->needs[k]) {
      wk_tensor *piece = wk_narrow(G(0), d, off, len);
      CHECK(piece);
      gin[k] = wk_retain(piece);
    }
    off += len;
  }
  END
}
static wk_status d_index_select(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int nd = N->in_ndim[0];
  int d = (int)(IARG(1) < 0 ? IARG(1) + nd : IARG(1));
  wk_tensor *g = G(0), *idx = X(2);
  CHECK(idx);
  int64_t shp[WK_MAX_DIMS];
  for (int i = 0; i < nd; i++) shp[i] = i == d ? wk_tensor_numel(idx) : 1;
  wk_tensor *ix = nd ? wk_expand(wk_reshape(idx, shp, nd), wk_tensor_sizes(g), nd) : idx;
  wk_tensor *z = wk_zeros(IN_SHAPE(0), (wk_options){.dtype = wk_tensor_dtype(g), .device = wk_tensor_device(g)});
  GIN(0, nd ? wk_scatter_add(z, d, ix, g) : wk_add(z, g));
  END
}
static wk_status d_gather(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *g = G(0);
  wk_tensor *z = wk_zeros(IN_SHAPE(0), (wk_options){.dtype = wk_tensor_dtype(g), .device = wk_tensor_device(g)});
  GIN(0, wk_scatter_add(z, IARG(1), X(2), g));
  END
}
static wk_status d_scatter(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *idx = X(2);
  CHECK(idx);
  if (NEEDS(0)) GIN(0, wk_scatter(G(0), IARG(1), idx, wk_zeros(wk_tensor_sizes(idx), wk_tensor_dim(idx),
                                                              (wk_options){.dtype = wk_tensor_dtype(G(0))})));
  if (NEEDS(3)) GIN(3, wk_gather(G(0), IARG(1), idx));
  END
}
static wk_status d_scatter_add(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, G(0));
  if (NEEDS(3)) GIN(3, wk_gather(G(0), IARG(1), X(2)));
  END
}
static wk_status d_masked_fill(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_masked_fill(G(0), X(1), 0));
  END
}
static wk_status d_masked_select(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *mask = X(1);
  CHECK(mask);
  int64_t shape[WK_MAX_DIMS];
  int nd = N->in_ndim[0];
  memcpy(shape, N->in_sizes[0], sizeof(int64_t) * (size_t)nd);
  /* the selected positions, in the broadcast shape of self and mask */
  int mnd = wk_tensor_dim(mask);
  if (mnd > nd) {
    for (int i = 0; i < mnd; i++) shape[i] = wk_tensor_size(mask, i) > 1 ? wk_tensor_size(mask, i) : 1;
    nd = mnd;
  }
  int64_t total = 1;
  for (int i = 0; i < nd; i++) total *= shape[i];
  wk_tensor *pos = wk_reshape(wk_arange_int(0, total, 1, OPT0), shape, nd);
  wk_tensor *sel = wk_masked_select(pos, mask);
  wk_tensor *flat = wk_zeros(WK_SHAPE(total), (wk_options){.dtype = wk_tensor_dtype(G(0))});
  GIN(0, wk_reshape(wk_scatter(flat, 0, sel, G(0)), shape, nd));
  END
}
static wk_status d_repeat(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int nr = N->args[1].len, nd = N->in_ndim[0], lead = nr - nd;
  const int64_t *r = N->args[1].u.ints;
  /* view g as [r0, s0, r1, s1, ...] and sum the repeat axes */
  int64_t shp[2 * WK_MAX_DIMS], dims[WK_MAX_DIMS];
  int ns = 0, nds = 0;
  for (int i = 0; i < nr; i++) {
    int64_t s = i < lead ? 1 : N->in_sizes[0][i - lead];
    dims[nds++] = ns;
    shp[ns++] = r[i];
    shp[ns++] = s;
  }
  if (ns > WK_MAX_DIMS) {
    st__ = wk_error(WK_ERR_UNSUPPORTED, "RepeatBackward0: too many dimensions (%d) for the reduction view", ns);
    goto done;
  }
  wk_tensor *v = wk_reshape(G(0), shp, ns);
  GIN(0, wk_reshape(wk_sum_dim(v, dims, nds, false), IN_SHAPE(0)));
  END
}
static wk_status d_flip(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_flip(G(0), N->args[1].u.ints, N->args[1].len));
  END
}
static wk_status d_roll(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int n = N->args[1].len;
  int64_t neg[WK_MAX_DIMS];
  for (int i = 0; i < n && i < WK_MAX_DIMS; i++) neg[i] = -N->args[1].u.ints[i];
  if (N->args[2].len == 0) {
    wk_tensor *flat = wk_reshape(G(0), WK_SHAPE(-1));
    wk_value a[3] = {WK_VT(flat), WK_VINTS(neg, n), WK_VINTS((int64_t *)NULL, 0)};
    GIN(0, wk_reshape(wk__call1("roll", a, 3), IN_SHAPE(0)));
  } else {
    GIN(0, wk_roll(G(0), neg, N->args[2].u.ints, n));
  }
  END
}

/* PyTorch's diagonal_backward: zeros of the input's shape, grad copied into the diagonal's view. */
static wk_tensor *diagonal_grad(wk_tensor *g, const int64_t *in_sizes, int in_nd, wk_value off, wk_value d1,
                                wk_value d2) {
  wk_tensor *z = wk_zeros(in_sizes, in_nd, (wk_options){.dtype = wk_tensor_dtype(g), .device = wk_tensor_device(g)});
  if (!z) return NULL;
  wk_value a[4] = {WK_VT(z), off, d1, d2};
  wk_tensor *v = wk__call1("diagonal", a, 4);
  return v && wk_copy_(v, g) ? z : NULL;
}
static wk_status d_diagonal(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, diagonal_grad(G(0), IN_SHAPE(0), N->args[1], N->args[2], N->args[3]));
  END
}
/* diag: a vector's gradient is the grad matrix's diagonal; a matrix's, the grad vector on its diagonal. */
static wk_status d_diag(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN if (N->in_ndim[0] == 1) {
    wk_value a[4] = {WK_VT(G(0)), N->args[1], WK_VI(0), WK_VI(1)};
    GIN(0, wk__call1("diagonal", a, 4));
  } else {
    GIN(0, diagonal_grad(G(0), IN_SHAPE(0), N->args[1], WK_VI(0), WK_VI(1)));
  }
  END
}

static const wk__formula rows[] = {
    {"view", "ViewBackward0", d_reshape_back, 0, 0}, {"reshape", "ReshapeAliasBackward0", d_reshape_back, 0, 0},
    {"flatten", "ViewBackward0", d_reshape_back, 0, 0}, {"squeeze", "SqueezeBackward0", d_reshape_back, 0, 0},
    {"squeeze.dim", "SqueezeBackward1", d_reshape_back, 0, 0}, {"unsqueeze", "UnsqueezeBackward0", d_reshape_back, 0, 0},
    {"permute", "PermuteBackward0", d_permute, 0, 0}, {"transpose", "TransposeBackward0", d_transpose, 0, 0},
    {"t", "TBackward0", d_t, 0, 0}, {"expand", "ExpandBackward0", d_expand, 0, 0},
    {"slice", "SliceBackward0", d_slice, 0, 0}, {"narrow", "SliceBackward0", d_narrow, 0, 0},
    {"select", "SelectBackward0", d_select, 0, 0}, {"alias", "AliasBackward0", d_identity, 0, 0},
    {"contiguous", "CloneBackward0", d_identity, 0, 0}, {"clone", "CloneBackward0", d_identity, 0, 0},
    {"to.dtype", "ToCopyBackward0", d_identity, 0, 0}, {"to.device", "ToCopyBackward0", d_to_device, 0, 0},
    {"copy_", "CopyBackwards", d_copy, 0, 0},
    {"as_strided", "AsStridedBackward0", d_as_strided, 0, 0, NULL, true},
    /* indexing */
    {"cat", "CatBackward0", d_cat, 0, 0},
    {"diagonal", "DiagonalBackward0", d_diagonal, 0, 0}, {"diag", "DiagBackward0", d_diag, 0, 0},
    {"index_select", "IndexSelectBackward0", d_index_select, A(2), 0},
    {"gather", "GatherBackward0", d_gather, A(2), 0},
    {"scatter.src", "ScatterBackward0", d_scatter, A(2), 0}, {"scatter_.src", "ScatterBackward0", d_scatter, A(2), 0},
    {"scatter_add", "ScatterAddBackward0", d_scatter_add, A(2), 0}, {"scatter_add_", "ScatterAddBackward0", d_scatter_add, A(2), 0},
    {"masked_fill.Scalar", "MaskedFillBackward0", d_masked_fill, A(1), 0},
    {"masked_fill_.Scalar", "MaskedFillBackward0", d_masked_fill, A(1), 0},
    {"masked_select", "MaskedSelectBackward0", d_masked_select, A(1), 0},
    {"repeat", "RepeatBackward0", d_repeat, 0, 0},
    {"flip", "FlipBackward0", d_flip, 0, 0}, {"roll", "RollBackward0", d_roll, 0, 0},
};
const wk__formula_family wk__formulas_shape = {rows, sizeof rows / sizeof rows[0]};
