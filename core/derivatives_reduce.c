/* Derivative formulas: reductions and linear algebra. */
#include "derivatives.h"

/* ---- reductions --------------------------------------------------------------------------------- */
static wk_status d_sum(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_expand(G(0), IN_SHAPE(0)));
  END
}
static wk_status d_sum_dim(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int nd = NONE(1) ? 0 : N->args[1].len;
  const int64_t *dims = NONE(1) ? NULL : N->args[1].u.ints;
  wk_tensor *g = BARG(2) ? G(0) : wk__unsqueeze_dims(G(0), dims, nd, N->in_ndim[0]);
  GIN(0, wk_expand(g, IN_SHAPE(0)));
  END
}
static wk_status d_mean(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int64_t n = wk__count_of(IN_SHAPE(0), NULL, 0);
  GIN(0, wk_div_scalar(wk_expand(G(0), IN_SHAPE(0)), (double)n));
  END
}
static wk_status d_mean_dim(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int nd = NONE(1) ? 0 : N->args[1].len;
  const int64_t *dims = NONE(1) ? NULL : N->args[1].u.ints;
  wk_tensor *g = BARG(2) ? G(0) : wk__unsqueeze_dims(G(0), dims, nd, N->in_ndim[0]);
  GIN(0, wk_div_scalar(wk_expand(g, IN_SHAPE(0)), (double)wk__count_of(IN_SHAPE(0), dims, nd)));
  END
}
/* d prod / d x_i is the product of the other elements (PyTorch's
 * prod_backward): y / x when the reduced slices hold no zero. With zeros,
 * from z (zeros per slice), P (product of the nonzero elements) and S (sum of
 * the zero elements: 0, but it carries their gradient, so double backward is
 * exact as well): at a zero, P if it is the slice's only zero, P times the
 * other zero if there are two, else 0; elsewhere P / x times S if the slice
 * holds one zero, else 0. dim: the reduced dim, or NULL for all. */
static wk_tensor *prod_grad(wk_tensor *g, wk_tensor *x, wk_tensor *y, const int64_t *dim) {
  wk_tensor *e = wk_eq_scalar(x, 0);
  wk_tensor *ef = wk_to_dtype(e, wk_tensor_dtype(x));
  double zeros = 0;
  if (!ef || wk_item(wk_sum(ef), &zeros) != WK_OK) return NULL;
  if (zeros == 0) return wk_mul(g, wk_div(y, x));
  wk_tensor *one = wk_ones_like(x, OPT0), *zero = wk_zeros_like(x, OPT0);
  wk_tensor *xnz = wk_where(e, one, x), *xz = wk_where(e, x, zero);
  wk_tensor *z = dim ? wk_sum_dim(ef, dim, 1, true) : wk_sum(ef);
  wk_tensor *P = dim ? wk_prod_dim(xnz, *dim, true) : wk_prod(xnz);
  wk_tensor *S = dim ? wk_sum_dim(xz, dim, 1, true) : wk_sum(xz);
  wk_tensor *at_zero = wk_where(wk_eq_scalar(z, 1), one, wk_where(wk_eq_scalar(z, 2), wk_sub(S, x), zero));
  wk_tensor *elsewhere = wk_where(wk_eq_scalar(z, 0), one, wk_where(wk_eq_scalar(z, 1), wk_add(zero, S), zero));
  wk_tensor *others = wk_where(e, wk_mul(P, at_zero), wk_mul(wk_div(P, xnz), elsewhere));
  return wk_mul(g, others);
}
static wk_status d_prod(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, prod_grad(wk_expand(G(0), IN_SHAPE(0)), X(0), Y(0), NULL));
  END
}
static wk_status d_prod_dim(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN if (N->in_ndim[0] == 0) {
    GIN(0, G(0));
    goto done;
  }
  int64_t d = IARG(1) < 0 ? IARG(1) + N->in_ndim[0] : IARG(1);
  wk_tensor *g = BARG(2) ? G(0) : wk_unsqueeze(G(0), d);
  wk_tensor *y = BARG(2) ? Y(0) : wk_unsqueeze(Y(0), d);
  GIN(0, prod_grad(g, X(0), y, &d));
  END
}
/* max()/min() over everything: the gradient is shared by the tied extrema. */
static wk_status d_extreme_all(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *x = X(0), *m = wk_to_dtype(wk_eq(x, Y(0)), wk_tensor_dtype(G(0)));
  GIN(0, wk_div(wk_mul(m, G(0)), wk_sum(m)));
  END
}
/* Scatters g (a reduced result) back to the positions named by indices. */
static wk_status d_values_indices(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int64_t d = IARG(1);
  bool keep = BARG(2);
  wk_tensor *g = keep ? G(0) : wk_unsqueeze(G(0), d);
  wk_tensor *ix = keep ? Y(1) : wk_unsqueeze(Y(1), d);
  GIN(0, wk_scatter(wk_zeros(IN_SHAPE(0), (wk_options){.dtype = wk_tensor_dtype(g), .device = wk_tensor_device(g)}), d, ix, g));
  END
}
static wk_status d_sorted(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int64_t d = IARG(N->op && strcmp(wk_op_name(N->op), "topk") == 0 ? 2 : 1);
  wk_tensor *g = G(0);
  GIN(0, wk_scatter(wk_zeros(IN_SHAPE(0), (wk_options){.dtype = wk_tensor_dtype(g), .device = wk_tensor_device(g)}), d, Y(1), g));
  END
}
static wk_status var_like(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin, bool is_std) {
  BEGIN int nd = NONE(1) ? 0 : N->args[1].len;
  const int64_t *dims = NONE(1) ? NULL : N->args[1].u.ints;
  int64_t n = wk__count_of(IN_SHAPE(0), dims, nd), corr = IARG(2);
  bool keep = BARG(3);
  wk_tensor *x = X(0);
  CHECK(x);
  int64_t all[WK_MAX_DIMS];
  int na = nd;
  if (nd == 0)
    for (na = 0; na < wk_tensor_dim(x); na++) all[na] = na;
  else
    memcpy(all, dims, sizeof(int64_t) * (size_t)nd);
  wk_tensor *centered = wk_sub(x, wk_mean_dim(x, all, na, true));
  wk_tensor *g = keep ? G(0) : wk__unsqueeze_dims(G(0), dims, nd, wk_tensor_dim(x));
  double denom = (double)(n - corr);
  if (is_std) {
    wk_tensor *y = keep ? Y(0) : wk__unsqueeze_dims(Y(0), dims, nd, wk_tensor_dim(x));
    GIN(0, wk_div(wk_mul(g, centered), wk_mul_scalar(y, denom)));
  } else {
    GIN(0, wk_mul(g, wk_mul_scalar(centered, 2.0 / denom)));
  }
  END
}
static wk_status d_var(const wk__bctx *c, wk_tensor *const *g, wk_tensor **gi) { return var_like(c, g, gi, false); }
static wk_status d_std(const wk__bctx *c, wk_tensor *const *g, wk_tensor **gi) { return var_like(c, g, gi, true); }
static wk_status d_norm(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN double p = FARG(1);
  int nd = NONE(2) ? 0 : N->args[2].len;
  const int64_t *dims = NONE(2) ? NULL : N->args[2].u.ints;
  bool keep = BARG(3);
  wk_tensor *x = X(0);
  CHECK(x);
  wk_tensor *g = keep ? G(0) : wk__unsqueeze_dims(G(0), dims, nd, wk_tensor_dim(x));
  wk_tensor *y = keep ? Y(0) : wk__unsqueeze_dims(Y(0), dims, nd, wk_tensor_dim(x));
  wk_tensor *r;
  if (p == 0) {
    r = wk_zeros_like(x, OPT0);
  } else if (p == 1) {
    r = wk_mul(g, wk_sign(x));
  } else if (isinf(p)) {
    wk_tensor *m = wk_to_dtype(wk_eq(wk_abs(x), y), wk_tensor_dtype(x));
    r = wk_div(wk_mul(wk_mul(g, wk_sign(x)), m), wk_sum_dim(m, dims, nd, true));
  } else if (p == 2) {
    /* x / norm, with 0 where the norm is 0 */
    wk_tensor *q = wk_div(x, y);
    r = wk_mul(g, wk_masked_fill(q, wk_eq_scalar(y, 0), 0));
  } else {
    wk_tensor *q = wk_div(wk_mul(x, wk_pow_scalar(wk_abs(x), p - 2)), wk_pow_scalar(y, p - 1));
    r = wk_mul(g, wk_masked_fill(q, wk_eq_scalar(y, 0), 0));
  }
  GIN(0, r);
  END
}
static wk_status d_logsumexp(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *x = X(0);
  CHECK(x);
  bool keep = BARG(2);
  wk_tensor *g = keep ? G(0) : wk__unsqueeze_dims(G(0), N->args[1].u.ints, N->args[1].len, wk_tensor_dim(x));
  wk_tensor *y = keep ? Y(0) : wk__unsqueeze_dims(Y(0), N->args[1].u.ints, N->args[1].len, wk_tensor_dim(x));
  GIN(0, wk_mul(g, wk_exp(wk_sub(x, y))));
  END
}
static wk_status d_cumsum(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int64_t d = IARG(1);
  GIN(0, wk_flip(wk_cumsum(wk_flip(G(0), &d, 1), d), &d, 1));
  END
}
/* t summed from the end along d (PyTorch's reversed_cumsum). */
static wk_tensor *rcumsum(wk_tensor *t, int64_t d) { return wk_flip(wk_cumsum(wk_flip(t, &d, 1), d), &d, 1); }
/* PyTorch's cumprod_backward, its O(n) path for any zeros: before a line's
 * first zero, reversed_cumsum(grad * out) / x; at the first zero, the
 * reversed cumsum (up to the second zero) of grad times the cumprod with that
 * zero read as 1; after it, 0. Without zeros this is reversed_cumsum(grad * out) / x. */
static wk_status d_cumprod(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN if (N->in_ndim[0] == 0) {
    GIN(0, G(0));
    goto done;
  }
  int64_t d = IARG(1) < 0 ? IARG(1) + N->in_ndim[0] : IARG(1);
  wk_tensor *x = X(0), *y = Y(0), *g = G(0), *zero = wk_zeros_like(G(0), OPT0);
  CHECK(x);
  wk_tensor *is_zero = wk_eq_scalar(x, 0), *cs = wk_cumsum(is_zero, d);
  wk_tensor *before = wk_eq_scalar(cs, 0), *upto2 = wk_eq_scalar(cs, 1), *first = wk_logical_and(is_zero, upto2);
  wk_tensor *a = wk_div(rcumsum(wk_where(before, wk_mul(g, y), zero), d), x);
  wk_value ca[3] = {WK_VT(wk_where(first, wk_ones_like(x, OPT0), x)), WK_VI(d), WK_VNONE};
  wk_tensor *b = rcumsum(wk_where(upto2, wk_mul(g, wk__call1("cumprod", ca, 3)), zero), d);
  GIN(0, wk_where(before, a, wk_where(first, b, zero)));
  END
}
/* PyTorch's logcumsumexp_backward: the positive and negative parts of grad in log space. */
static wk_status d_logcumsumexp(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *g = G(0), *x = X(0), *y = Y(0);
  if (N->in_ndim[0] == 0 || wk_tensor_numel(g) == 0) {
    GIN(0, g);
    goto done;
  }
  int64_t d = IARG(1) < 0 ? IARG(1) + N->in_ndim[0] : IARG(1);
  double lowest = wk_tensor_dtype(g) == WK_F64 ? -1.7976931348623157e308 : -3.4028234663852886e38;
  wk_tensor *low = wk_full_like(g, lowest, OPT0), *la = wk_log(wk_abs(g));
  wk_tensor *parts[2] = {wk_where(wk_gt_scalar(g, 0), la, low), wk_where(wk_lt_scalar(g, 0), la, low)};
  for (int i = 0; i < 2; i++) { /* exp(reverse_logcumsumexp(part - result) + self) */
    wk_value a[2] = {WK_VT(wk_flip(wk_sub(parts[i], y), &d, 1)), WK_VI(d)};
    CHECK(a[0].u.t);
    parts[i] = wk_exp(wk_add(wk_flip(wk__call1("logcumsumexp", a, 2), &d, 1), x));
  }
  GIN(0, wk_sub(parts[0], parts[1]));
  END
}
/* cummax/cummin: the gradient goes to the running extreme's position (scatter_add of grad at indices). */
static wk_status d_cummaxmin(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN if (N->in_ndim[0] == 0) {
    GIN(0, G(0));
    goto done;
  }
  int64_t d = IARG(1) < 0 ? IARG(1) + N->in_ndim[0] : IARG(1);
  GIN(0, wk_scatter_add(wk_zeros_like(G(0), OPT0), d, Y(1), G(0)));
  END
}

/* ---- linear algebra ------------------------------------------------------------------------------- */
static wk_status d_mm(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN if (NEEDS(0)) GIN(0, wk_mm(G(0), wk_t(X(1))));
  if (NEEDS(1)) GIN(1, wk_mm(wk_t(X(0)), G(0)));
  END
}
static wk_status d_bmm(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN if (NEEDS(0)) GIN(0, wk_bmm(G(0), wk_transpose(X(1), 1, 2)));
  if (NEEDS(1)) GIN(1, wk_bmm(wk_transpose(X(0), 1, 2), G(0)));
  END
}
/* x * alpha, or x itself when alpha is 1 (no extra pass over the gradient). */
static wk_tensor *scaled(wk_tensor *x, double alpha) { return alpha == 1 ? x : wk_mul_scalar(x, alpha); }
static wk_status d_addmm(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN double beta = FARG(3), alpha = FARG(4);
  GIN(0, scaled(G(0), beta));
  if (NEEDS(1)) GIN(1, scaled(wk_mm(G(0), wk_t(X(2))), alpha));
  if (NEEDS(2)) GIN(2, scaled(wk_mm(wk_t(X(1)), G(0)), alpha));
  END
}
/* linear(x, W, b) = x W^T + b over any leading dims of x (W [out, in] or [in]).
 * Its own formula rather than the parts' (t, addmm): the weight's gradient
 * comes out as G^T x, already in W's layout, so it becomes .grad without a
 * copy (through t it was a transposed view, copied at every step). */
static wk_status d_linear(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *x = X(0), *w = X(1), *g = G(0);
  CHECK(x);
  CHECK(w);
  int64_t in = wk_tensor_size(x, -1);
  bool w1 = wk_tensor_dim(w) == 1; /* y = x . w: the output lost the last dim */
  wk_tensor *g2 = w1 ? wk_unsqueeze(g, -1) : g; /* [..., out] */
  CHECK(g2);
  int64_t out = wk_tensor_size(g2, -1);
  if (NEEDS(0)) GIN(0, w1 ? wk_mul(g2, w) : wk_matmul(g2, w));
  if (NEEDS(1)) {
    wk_tensor *gw = wk_mm(wk_t(wk_reshape(g2, WK_SHAPE(-1, out))), wk_reshape(x, WK_SHAPE(-1, in))); /* [out, in] */
    GIN(1, w1 ? wk_reshape(gw, WK_SHAPE(in)) : gw);
  }
  if (NEEDS(2)) GIN(2, g); /* the engine sums the broadcast dims away */
  END
}
static wk_status d_dot(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN if (NEEDS(0)) GIN(0, wk_mul(G(0), X(1)));
  if (NEEDS(1)) GIN(1, wk_mul(G(0), X(0)));
  END
}

/* amax/amin (PyTorch's scale_grad_by_count): the gradient split evenly between
 * the elements equal to the result. */
static wk_status d_amax_amin(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int nd = N->args[1].len, in_nd = N->in_ndim[0];
  const int64_t *dims = N->args[1].u.ints;
  wk_tensor *g = G(0), *y = Y(0), *x = X(0);
  CHECK(y);
  CHECK(x);
  if (!BARG(2)) {
    g = wk__unsqueeze_dims(g, dims, nd, in_nd);
    y = wk__unsqueeze_dims(y, dims, nd, in_nd);
  }
  wk_tensor *mask = wk_to_dtype(wk_eq(x, y), wk_tensor_dtype(G(0)));
  wk_tensor *count = wk_sum_dim(mask, dims, nd, true);
  GIN(0, wk_div(wk_mul(g, mask), count));
  END
}

/* median() over everything (PyTorch's evenly_distribute_backward): the gradient split evenly between the
 * elements equal to the result, or between the NaNs when the result is NaN. */
static wk_status d_median_all(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *x = X(0), *y = Y(0);
  CHECK(x);
  CHECK(y);
  wk_tensor *eq = wk_logical_or(wk_eq(x, y), wk_logical_and(wk_isnan(x), wk_isnan(y)));
  wk_tensor *m = wk_to_dtype(eq, wk_tensor_dtype(G(0)));
  GIN(0, wk_div(wk_mul(m, G(0)), wk_sum(m)));
  END
}

static const wk__formula rows[] = {
    {"sum", "SumBackward0", d_sum, 0, 0}, {"sum.dim_IntList", "SumBackward1", d_sum_dim, 0, 0},
    {"mean", "MeanBackward0", d_mean, 0, 0}, {"mean.dim", "MeanBackward1", d_mean_dim, 0, 0},
    {"prod", "ProdBackward0", d_prod, A(0), A(0)}, {"prod.dim_int", "ProdBackward1", d_prod_dim, A(0), A(0)},
    {"max", "MaxBackward1", d_extreme_all, A(0), A(0)}, {"min", "MinBackward1", d_extreme_all, A(0), A(0)},
    {"max.dim", "MaxBackward0", d_values_indices, 0, A(1)}, {"min.dim", "MinBackward0", d_values_indices, 0, A(1)},
    {"topk", "TopkBackward0", d_sorted, 0, A(1)}, {"sort", "SortBackward0", d_sorted, 0, A(1)},
    {"var.correction", "VarBackward0", d_var, A(0), 0}, {"std.correction", "StdBackward0", d_std, A(0), A(0)},
    {"norm", "NormBackward1", d_norm, A(0), A(0)}, {"logsumexp", "LogsumexpBackward0", d_logsumexp, A(0), A(0)},
    {"cumsum", "CumsumBackward0", d_cumsum, 0, 0},
    {"amax", "AmaxBackward0", d_amax_amin, A(0), A(0)}, {"amin", "AminBackward0", d_amax_amin, A(0), A(0)},
    {"cumprod", "CumprodBackward0", d_cumprod, A(0), A(0)},
    {"logcumsumexp", "LogcumsumexpBackward0", d_logcumsumexp, A(0), A(0)},
    {"cummax", "CummaxBackward0", d_cummaxmin, 0, A(1)}, {"cummin", "CumminBackward0", d_cummaxmin, 0, A(1)},
    {"median", "MedianBackward0", d_median_all, A(0), A(0)},
    /* linear algebra */
    {"mm", "MmBackward0", d_mm, A(0) | A(1), 0}, {"bmm", "BmmBackward0", d_bmm, A(0) | A(1), 0},
    {"addmm", "AddmmBackward0", d_addmm, A(1) | A(2), 0}, {"dot", "DotBackward0", d_dot, A(0) | A(1), 0},
    /* PyTorch names linear's node after the op it decomposes to in the common (2-D, bias) case */
    {"linear", "AddmmBackward0", d_linear, A(0) | A(1), 0},
};
const wk__formula_family wk__formulas_reduce = {rows, sizeof rows / sizeof rows[0]};
