/* Derivative formulas of issue 21's linalg decompositions and solvers, of
 * scatter_reduce and of mode (engineer A), transcribed from PyTorch 1.13's
 * FunctionsManual.cpp (cholesky_backward, linalg_eig_backward for Hermitian
 * input, svd_backward, linalg_qr_backward, linalg_solve's and slogdet's
 * formulas in derivatives.yaml, scatter_reduce_backward). Real dtypes only.
 * A gradient PyTorch would leave undefined arrives here zero-filled; where a
 * formula divides by a possibly zero quantity only for that term (svd's gU
 * and gVh, eigh's gV), an all-zero gradient skips the term, as PyTorch skips
 * an undefined one. */
#include "derivatives.h"
#include "linalg_internal.h"

static wk_tensor *c1(const char *op, const wk_value *a, int n) { return wk__call1(op, a, n); }
#define NARGS(...) ((int)(sizeof((const wk_value[]){__VA_ARGS__}) / sizeof(wk_value)))
#define C1(op, ...) c1(op, (const wk_value[]){__VA_ARGS__}, NARGS(__VA_ARGS__))

static wk_tensor *mT(wk_tensor *x) { return x ? wk_transpose(x, -2, -1) : NULL; }
static wk_tensor *mm(wk_tensor *a, wk_tensor *b) { return a && b ? wk_matmul(a, b) : NULL; }
static int64_t last(const wk_tensor *x, int k) { return wk_tensor_size((wk_tensor *)x, wk_tensor_dim((wk_tensor *)x) - k); }
static wk_tensor *eye_of(wk_tensor *like, int64_t n) {
  return wk_eye(n, n, (wk_options){.dtype = wk_tensor_dtype(like), .device = wk_tensor_device(like)});
}
/* A batch of vectors as diagonal matrices. */
static wk_tensor *diag_embed(wk_tensor *v) {
  wk_tensor *i = v ? eye_of(v, last(v, 1)) : NULL;
  return i ? wk_mul(wk_unsqueeze(v, -2), i) : NULL;
}
/* x with its diagonals set to 1 (a divisor whose diagonal is unused). */
static wk_tensor *diag_one(wk_tensor *x) {
  wk_tensor *i = x ? eye_of(x, last(x, 1)) : NULL;
  return i ? wk_add(wk_mul(x, wk_sub(wk_ones_like(i, OPT0), i)), i) : NULL;
}
/* Whether g holds a nonzero element (false also on error: the caller's next op reports it). */
static bool nonzero_any(wk_tensor *g) {
  double m = 0;
  wk_tensor *a = g ? wk_any(wk_ne_scalar(g, 0)) : NULL;
  return a && wk_item(a, &m) == WK_OK && m != 0;
}
/* g summed over the dims it broadcast from a tensor of shape sizes[0..nd). */
static wk_tensor *sum_to(wk_tensor *g, const int64_t *sizes, int nd) {
  if (!g) return NULL;
  int gd = wk_tensor_dim(g), lead = gd - nd;
  int64_t dims[WK_MAX_DIMS];
  int n = 0;
  for (int d = 0; d < gd; d++)
    if (d < lead || (sizes[d - lead] == 1 && wk_tensor_size(g, d) != 1)) dims[n++] = d;
  wk_tensor *r = n ? wk_sum_dim(g, dims, n, true) : g;
  return r ? wk_reshape(r, sizes, nd) : NULL;
}

/* ---- linalg_cholesky(self, upper): gA = sym(L^-T Phi(L^T gL) L^-1), Phi = tril with the diagonal halved ---- */
static wk_status d_cholesky(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *L = Y(0), *gL = G(0);
  CHECK(L);
  if (BARG(1)) L = mT(L), gL = mT(gL);
  wk_tensor *Linv = C1("linalg_solve", WK_VT(L), WK_VT(eye_of(L, last(L, 1))), WK_VB(true));
  wk_tensor *phi = C1("tril", WK_VT(mm(mT(L), gL)), WK_VI(0));
  phi = phi ? wk_sub(phi, wk_mul_scalar(wk_mul(phi, eye_of(phi, last(phi, 1))), 0.5)) : NULL;
  wk_tensor *ga = mm(mm(mT(Linv), phi), Linv);
  GIN(0, ga ? wk_mul_scalar(wk_add(ga, mT(ga)), 0.5) : NULL);
  END
}

/* ---- linalg_eigh(self, UPLO): gA = V (skew(V^T gV) / E + diag(gL)) V^T, E_ij = L_j - L_i ---- */
static wk_status d_eigh(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *L = Y(0), *V = Y(1), *gL = G(0), *gV = G(1);
  CHECK(L);
  CHECK(V);
  wk_tensor *inner = diag_embed(gL);
  if (nonzero_any(gV)) {
    wk_tensor *vg = mm(mT(V), gV);
    vg = vg ? wk_mul_scalar(wk_sub(vg, mT(vg)), 0.5) : NULL;
    wk_tensor *E = diag_one(wk_sub(wk_unsqueeze(L, -2), wk_unsqueeze(L, -1)));
    wk_tensor *off = vg && E ? wk_div(vg, E) : NULL;
    wk_tensor *i = off ? eye_of(off, last(off, 1)) : NULL;
    off = i ? wk_mul(off, wk_sub(wk_ones_like(i, OPT0), i)) : NULL;
    inner = off && inner ? wk_add(inner, off) : NULL;
  }
  GIN(0, mm(mm(V, inner), mT(V)));
  END
}

/* ---- linalg_svd(A, full_matrices): PyTorch's svd_backward (the reduced factors; a full U or Vh is narrowed) ---- */
static wk_status d_svd(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *U = Y(0), *S = Y(1), *Vh = Y(2), *gU = G(0), *gS = G(1), *gVh = G(2);
  CHECK(U);
  CHECK(S);
  CHECK(Vh);
  int nd = N->in_ndim[0];
  int64_t m = N->in_sizes[0][nd - 2], n = N->in_sizes[0][nd - 1], k = m < n ? m : n;
  if (BARG(1)) {
    U = wk_narrow(U, -1, 0, k), gU = wk_narrow(gU, -1, 0, k);
    Vh = wk_narrow(Vh, -2, 0, k), gVh = wk_narrow(gVh, -2, 0, k);
  }
  bool hasU = nonzero_any(gU), hasV = nonzero_any(gVh);
  wk_tensor *gA;
  if (!hasU && !hasV) {
    gA = mm(wk_mul(U, wk_unsqueeze(gS, -2)), Vh);
  } else {
    wk_tensor *V = mT(Vh), *gV = mT(gVh);
    wk_tensor *S2 = wk_mul(S, S);
    wk_tensor *E = S2 ? diag_one(wk_sub(wk_unsqueeze(S2, -2), wk_unsqueeze(S2, -1))) : NULL;
    wk_tensor *UhgU = hasU ? mm(mT(U), gU) : NULL, *VhgV = hasV ? mm(mT(V), gV) : NULL;
    if (UhgU) UhgU = wk_sub(UhgU, mT(UhgU));
    if (VhgV) VhgV = wk_sub(VhgV, mT(VhgV));
    wk_tensor *num = NULL;
    if (hasU) num = wk_mul(UhgU, wk_unsqueeze(S, -2));
    if (hasV) {
      wk_tensor *t = wk_mul(wk_unsqueeze(S, -1), VhgV);
      num = num ? wk_add(num, t) : t;
    }
    gA = num && E ? wk_div(num, E) : NULL;
    if (gA) {
      wk_tensor *i = eye_of(gA, k);
      gA = wk_add(wk_mul(gA, wk_sub(wk_ones_like(i, OPT0), i)), diag_embed(gS));
    }
    if (m > n && hasU) {
      gA = mm(U, gA);
      wk_tensor *gUS = wk_div(gU, wk_unsqueeze(S, -2));
      gA = gA && gUS ? wk_sub(wk_add(gA, gUS), mm(U, mm(mT(U), gUS))) : NULL;
      gA = mm(gA, Vh);
    } else if (m < n && hasV) {
      gA = mm(gA, Vh);
      wk_tensor *gVS = mT(wk_div(gV, wk_unsqueeze(S, -2)));
      gA = gA && gVS ? wk_sub(wk_add(gA, gVS), mm(mm(gVS, V), Vh)) : NULL;
      gA = mm(U, gA);
    } else {
      gA = mm(U, mm(gA, Vh));
    }
  }
  GIN(0, gA);
  END
}

/* ---- linalg_qr(A, mode) (PyTorch 1.10's formula): for m >= n, M = R gR^T - gQ^T Q, M = tril(M) + tril(M)^T with
 * its diagonal halved, gA = (gQ + Q M) R^-T; for m < n, A = [X | Y], R = [U | V]: gX from the square case with
 * gQ + Y gV^T, gY = Q gV. ---- */
static wk_tensor *qr_square_grad(wk_tensor *Q, wk_tensor *R, wk_tensor *gQ, wk_tensor *gR) {
  wk_tensor *M = wk_sub(mm(R, mT(gR)), mm(mT(gQ), Q));
  wk_tensor *Mt = M ? C1("tril", WK_VT(M), WK_VI(0)) : NULL;
  M = Mt ? wk_add(Mt, mT(Mt)) : NULL;
  M = M ? wk_sub(M, wk_mul_scalar(wk_mul(M, eye_of(M, last(M, 1))), 0.5)) : NULL;
  wk_tensor *rhs = M ? wk_add(gQ, mm(Q, M)) : NULL;
  /* X R^T = rhs */
  return rhs ? C1("linalg_solve", WK_VT(mT(R)), WK_VT(rhs), WK_VB(false)) : NULL;
}
static wk_status d_qr(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN const char *mode = N->args[1].u.s;
  int nd = N->in_ndim[0];
  int64_t m = N->in_sizes[0][nd - 2], n = N->in_sizes[0][nd - 1];
  if (!strcmp(mode, "r")) {
    st__ = wk_error(WK_ERR_INVALID_ARG,
                    "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please use "
                    "linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.");
    goto done;
  }
  if (!strcmp(mode, "complete") && m > n) {
    st__ = wk_error(WK_ERR_INVALID_ARG,
                    "The QR decomposition is not differentiable when mode='complete' and nrows > ncols.");
    goto done;
  }
  wk_tensor *Q = Y(0), *R = Y(1), *gQ = G(0), *gR = G(1);
  CHECK(Q);
  CHECK(R);
  if (m >= n) {
    GIN(0, qr_square_grad(Q, R, gQ, gR));
  } else {
    wk_tensor *A = X(0);
    CHECK(A);
    wk_tensor *Yb = wk_narrow(A, -1, m, n - m), *U = wk_narrow(R, -1, 0, m), *gU = wk_narrow(gR, -1, 0, m);
    wk_tensor *gV = wk_narrow(gR, -1, m, n - m);
    wk_tensor *gX = qr_square_grad(Q, U, gQ ? wk_add(gQ, mm(Yb, mT(gV))) : NULL, gU);
    wk_tensor *gY = mm(Q, gV);
    wk_tensor *parts[2] = {gX, gY};
    GIN(0, gX && gY ? C1("cat", WK_VTS(parts, 2), WK_VI(-1)) : NULL);
  }
  END
}

/* ---- linalg_solve(A, B, left): gB = solve(A^T, g), gA = -gB X^T (left); right: gA = -X^T gB ---- */
static wk_status d_solve(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *A = X(0), *Xr = Y(0), *g = G(0);
  CHECK(A);
  CHECK(Xr);
  bool left = BARG(2);
  int an = N->in_ndim[0], bn = N->in_ndim[1];
  const int64_t *as = N->in_sizes[0], *bs = N->in_sizes[1];
  bool vec = bn == 1;
  if (!vec && bn == an - 1) {
    vec = true;
    for (int i = 0; i < bn; i++) vec = vec && bs[i] == as[i];
  }
  wk_tensor *gB = C1("linalg_solve", WK_VT(mT(A)), WK_VT(g), WK_VB(left));
  CHECK(gB);
  if (NEEDS(0)) {
    wk_tensor *gA = vec ? wk_mul(wk_unsqueeze(gB, -1), wk_unsqueeze(Xr, -2))
                        : (left ? mm(gB, mT(Xr)) : mm(mT(Xr), gB));
    GIN(0, sum_to(gA ? wk_neg(gA) : NULL, IN_SHAPE(0)));
  }
  GIN(1, sum_to(gB, IN_SHAPE(1)));
  END
}

/* ---- linalg_slogdet(A): gA = g_logabsdet * A^-T (sign has no gradient) ---- */
static wk_status d_slogdet(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *A = X(0), *g = G(1);
  CHECK(A);
  wk_tensor *inv = C1("linalg_solve", WK_VT(mT(A)), WK_VT(eye_of(A, last(A, 1))), WK_VB(true));
  GIN(0, inv ? wk_mul(inv, wk_unsqueeze(wk_unsqueeze(g, -1), -1)) : NULL);
  END
}

/* ---- scatter_reduce.two(self, dim, index, src, reduce, include_self): PyTorch's scatter_reduce_backward ---- */
/* The part of src (or any tensor at least index's size) that index addresses: its leading index.size(d) per dim. */
static wk_tensor *narrow_to(wk_tensor *t, wk_tensor *index) {
  for (int d = 0; t && d < wk_tensor_dim(index); d++)
    if (wk_tensor_size(t, d) != wk_tensor_size(index, d)) t = wk_narrow(t, d, 0, wk_tensor_size(index, d));
  return t;
}
/* g (index-shaped) padded with zeros to src's shape. */
static wk_tensor *pad_to(wk_tensor *g, const int64_t *sizes, int nd) {
  if (!g) return NULL;
  int64_t pad[2 * WK_MAX_DIMS];
  bool same = true;
  for (int d = 0; d < nd; d++) {
    int64_t have = wk_tensor_dim(g) ? wk_tensor_size(g, d) : 1;
    pad[2 * (nd - 1 - d)] = 0, pad[2 * (nd - 1 - d) + 1] = sizes[d] - have;
    same = same && sizes[d] == have;
  }
  if (same) return wk_reshape(g, sizes, nd);
  return C1("pad", WK_VT(g), WK_VINTS(pad, 2 * nd), WK_VS("constant"), WK_VF(0));
}
static wk_status d_scatter_reduce(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *self = X(0), *index = X(2), *src = X(3), *res = Y(0), *g = G(0);
  CHECK(self);
  CHECK(index);
  CHECK(src);
  CHECK(res);
  int64_t dim = IARG(1);
  const char *red = N->args[4].u.s;
  bool incl = BARG(5);
  wk_dtype dt = wk_tensor_dtype(self);
  wk_tensor *gself = NULL, *gsrc = NULL;
  if (!strcmp(red, "sum")) {
    gself = g;
    gsrc = wk_gather(g, dim, index);
  } else if (!strcmp(red, "mean")) {
    wk_tensor *Nc = incl ? wk_ones_like(g, OPT0) : wk_zeros_like(g, OPT0);
    Nc = Nc ? wk_scatter_add(Nc, dim, index, wk_ones_like(index, (wk_options){.dtype = dt})) : NULL;
    Nc = Nc ? wk_masked_fill(Nc, wk_eq_scalar(Nc, 0), 1) : NULL;
    gself = Nc ? wk_div(g, Nc) : NULL;
    gsrc = gself ? wk_gather(gself, dim, index) : NULL;
  } else if (!strcmp(red, "prod")) {
    wk_tensor *ms = wk_masked_fill(self, wk_eq_scalar(self, 0), 1);
    wk_tensor *msr = ms ? C1("scatter_reduce.two", WK_VT(ms), WK_VI(dim), WK_VT(index), WK_VT(src), WK_VS(red),
                             WK_VB(incl))
                        : NULL;
    gself = msr ? wk_div(wk_mul(g, msr), ms) : NULL;
    wk_tensor *sz = wk_eq_scalar(src, 0);
    wk_tensor *nz = sz ? wk_gather(wk_scatter_add(wk_zeros_like(self, OPT0), dim, index, wk_to_dtype(sz, dt)), dim, index)
                       : NULL;
    wk_tensor *sz_idx = sz ? narrow_to(sz, index) : NULL;
    wk_tensor *src_i = narrow_to(src, index);
    wk_tensor *single = nz && sz_idx ? wk_logical_and(sz_idx, wk_eq_scalar(nz, 1)) : NULL;
    wk_tensor *msrc = single ? wk_masked_fill(src_i, single, 1) : NULL;
    wk_tensor *msrcr = msrc ? C1("scatter_reduce.two", WK_VT(self), WK_VI(dim), WK_VT(index), WK_VT(msrc), WK_VS(red),
                                 WK_VB(incl))
                            : NULL;
    wk_tensor *a = msrcr ? wk_gather(wk_mul(g, msrcr), dim, index) : NULL;
    wk_tensor *b = single ? wk_div(wk_gather(wk_mul(g, res), dim, index), wk_masked_fill(src_i, sz_idx, 1)) : NULL;
    gsrc = a && b ? wk_where(single, a, b) : NULL;
  } else { /* amax, amin: the gradient shared by the elements equal to the result */
    wk_tensor *value = wk_gather(res, dim, index);
    wk_tensor *src_i = narrow_to(src, index);
    wk_tensor *self_is = wk_to_dtype(wk_eq(self, res), dt);
    /* PyTorch counts self's ties even when include_self=False (its grad_self is zeroed at the end) */
    wk_tensor *src_is = value && src_i ? wk_to_dtype(wk_eq(src_i, value), dt) : NULL;
    wk_tensor *Nd = self_is && src_is ? wk_scatter_add(self_is, dim, index, src_is) : NULL;
    wk_tensor *gd = Nd ? wk_div(g, Nd) : NULL;
    gself = gd ? wk_mul(self_is, gd) : NULL;
    gsrc = gd ? wk_mul(src_is, wk_gather(gd, dim, index)) : NULL;
  }
  if (gself && !incl) { /* the positions written to take no gradient from self */
    wk_tensor *z = wk_zeros(wk_tensor_sizes(index), wk_tensor_dim(index), (wk_options){.dtype = dt, .device = wk_tensor_device(g)});
    gself = z ? C1("scatter.src", WK_VT(gself), WK_VI(dim), WK_VT(index), WK_VT(z)) : NULL;
  }
  if (NEEDS(0)) GIN(0, gself);
  if (NEEDS(3)) GIN(3, pad_to(gsrc, IN_SHAPE(3)));
  END
}

/* ---- mode(self, dim, keepdim): the gradient to the selected element (value_selecting_reduction_backward) ---- */
static wk_status d_mode(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int nd = N->in_ndim[0];
  if (nd == 0) {
    GIN(0, G(0));
    goto done;
  }
  int64_t d = IARG(1) < 0 ? IARG(1) + nd : IARG(1);
  wk_tensor *ix = Y(1);
  CHECK(ix);
  wk_tensor *g = BARG(2) ? G(0) : wk_unsqueeze(G(0), d);
  if (!BARG(2)) ix = wk_unsqueeze(ix, d);
  wk_tensor *z = g ? wk_zeros(IN_SHAPE(0), (wk_options){.dtype = wk_tensor_dtype(g), .device = wk_tensor_device(g)}) : NULL;
  GIN(0, z && ix ? wk_scatter(z, d, ix, g) : NULL);
  END
}

/* ---- masked_scatter(self, mask, source): self's gradient where the mask is false; source's the masked gradient
 * in order, zero-padded to its size (masked_scatter_backward) ---- */
static wk_status d_masked_scatter(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *mask = X(1), *g = G(0);
  CHECK(mask);
  if (NEEDS(0)) GIN(0, sum_to(wk_masked_fill(g, mask, 0), IN_SHAPE(0)));
  if (NEEDS(2)) {
    int64_t ns = 1, all = -1;
    for (int d = 0; d < N->in_ndim[N->k_of_arg[2]]; d++) ns *= N->in_sizes[N->k_of_arg[2]][d];
    wk_tensor *sel = wk_masked_select(g, mask);
    int64_t k = sel ? wk_tensor_numel(sel) : 0;
    wk_tensor *flat = sel && k < ns ? C1("pad", WK_VT(sel), WK_VINTS(((int64_t[]){0, ns - k}), 2), WK_VS("constant"), WK_VF(0))
                                    : sel;
    GIN(2, flat ? wk_reshape(wk_reshape(flat, &all, 1), IN_SHAPE(2)) : NULL);
  }
  END
}

/* ---- index_put(self, indices, values, accumulate): self's gradient with the written positions zeroed (all of it
 * when accumulating); values' the gradient read at the indexed positions (grad.index(indices)), summed to values'
 * shape by the engine (PyTorch's IndexPutBackward0) ---- */
static wk_status d_index_put(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int len = N->args[1].len;
  wk_tensor *ix[WK_MAX_DIMS] = {NULL};
  if (len > WK_MAX_DIMS) {
    st__ = wk_error(WK_ERR_INTERNAL, "IndexPutBackward0: %d indices for at most %d dims", len, WK_MAX_DIMS);
    goto done;
  }
  for (int k = 0; k < len; k++)
    if (N->saved_lists[1] && N->saved_lists[1][k].t) CHECK(ix[k] = wk__saved_list(c, 1, k));
  wk_tensor *g = G(0);
  if (NEEDS(0)) {
    if (BARG(3)) {
      GIN(0, g);
    } else {
      wk_tensor *z = wk_zeros(IN_SHAPE(2), (wk_options){.dtype = wk_tensor_dtype(g), .device = wk_tensor_device(g)});
      GIN(0, z ? C1("index_put", WK_VT(g), WK_VTS(ix, len), WK_VT(z), WK_VB(false)) : NULL);
    }
  }
  GIN(2, wk__index_put_values_grad(g, ix, len));
  END
}

static const wk__formula rows[] = {
    {"masked_scatter", "MaskedScatterBackward0", d_masked_scatter, A(1), 0},
    {"index_put", "IndexPutBackward0", d_index_put, A(1), 0},
    {"mode", "ModeBackward0", d_mode, 0, A(1)},
    {"linalg_cholesky", "LinalgCholeskyExBackward0", d_cholesky, 0, A(0)},
    {"linalg_eigh", "LinalgEighBackward0", d_eigh, 0, A(0) | A(1)},
    {"linalg_svd", "LinalgSvdBackward0", d_svd, 0, A(0) | A(1) | A(2)},
    {"linalg_qr", "LinalgQrBackward0", d_qr, A(0), A(0) | A(1)},
    {"linalg_solve", "LinalgSolveExBackward0", d_solve, A(0), A(0)},
    {"linalg_slogdet", "LinalgSlogdetBackward0", d_slogdet, A(0), 0},
    {"scatter_reduce.two", "ScatterReduceBackward0", d_scatter_reduce, A(0) | A(2) | A(3), A(0)},
};
const wk__formula_family wk__formulas_linalg = {rows, sizeof rows / sizeof rows[0]};
