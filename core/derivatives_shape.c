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
    /* indexing */
    {"cat", "CatBackward0", d_cat, 0, 0},
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
