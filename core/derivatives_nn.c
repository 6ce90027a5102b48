/* Derivative formulas: neural-network ops (softmax, convolution, pooling, normalisation, losses). */
#include "derivatives.h"

/* ---- neural-network ops ---------------------------------------------------------------------------- */
static wk_status d_softmax(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *y = Y(0);
  CHECK(y);
  wk_value a[4] = {WK_VT(G(0)), WK_VT(y), WK_VI(IARG(1)), WK_VDT(N->in_dtype[0])};
  GIN(0, wk__call1("softmax_backward_data", a, 4));
  END
}
static wk_status d_log_softmax(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *y = Y(0);
  CHECK(y);
  wk_value a[4] = {WK_VT(G(0)), WK_VT(y), WK_VI(IARG(1)), WK_VDT(N->in_dtype[0])};
  GIN(0, wk__call1("log_softmax_backward_data", a, 4));
  END
}
/* Second derivatives of the softmax backward helpers (double backward through
 * softmax, log_softmax and the losses built on them). */
static wk_status d_softmax_bd(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int64_t d = IARG(2);
  wk_tensor *g = X(0), *y = X(1), *h = G(0);
  CHECK(g);
  CHECK(y);
  wk_tensor *s = wk_sum_dim(wk_mul(g, y), &d, 1, true), *hy = wk_sum_dim(wk_mul(h, y), &d, 1, true);
  if (NEEDS(0)) GIN(0, wk_mul(y, wk_sub(h, hy)));
  if (NEEDS(1)) GIN(1, wk_sub(wk_mul(h, wk_sub(g, s)), wk_mul(g, hy)));
  END
}
static wk_status d_log_softmax_bd(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int64_t d = IARG(2);
  wk_tensor *g = X(0), *y = X(1), *h = G(0);
  CHECK(g);
  CHECK(y);
  wk_tensor *ey = wk_exp(y);
  if (NEEDS(0)) GIN(0, wk_sub(h, wk_sum_dim(wk_mul(h, ey), &d, 1, true)));
  if (NEEDS(1)) GIN(1, wk_neg(wk_mul(wk_mul(h, ey), wk_sum_dim(g, &d, 1, true))));
  END
}
static wk_status d_conv2d(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int64_t mask[3] = {NEEDS(0), NEEDS(1), NEEDS(2)};
  wk_value a[8] = {WK_VT(G(0)), WK_VT(X(0)), WK_VT(X(1)), N->args[3], N->args[4], N->args[5], N->args[6], WK_VINTS(mask, 3)};
  CHECK(a[1].u.t);
  CHECK(a[2].u.t);
  wk_value o[3];
  if (wk_call("conv2d_backward", a, 8, o) != WK_OK) {
    st__ = wk_last_error();
    goto done;
  }
  for (int i = 0; i < 3; i++)
    if (o[i].tag == WK_V_TENSOR) wk__scope_adopt(o[i].u.t);
  for (int i = 0; i < 3; i++)
    if (o[i].tag == WK_V_TENSOR) GIN(i, o[i].u.t);
  END
}
static wk_status d_max_pool(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_value a[8] = {WK_VT(G(0)), WK_VT(X(0)), N->args[1], N->args[2], N->args[3], N->args[4], N->args[5], WK_VT(Y(1))};
  CHECK(a[1].u.t);
  CHECK(a[7].u.t);
  GIN(0, wk__call1("max_pool2d_with_indices_backward", a, 8));
  END
}
static wk_status d_avg_pool(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_value a[8] = {WK_VT(G(0)), WK_VT(X(0)), N->args[1], N->args[2], N->args[3], N->args[4], N->args[5], N->args[6]};
  CHECK(a[1].u.t);
  GIN(0, wk__call1("avg_pool2d_backward", a, 8));
  END
}
static wk_status d_adaptive_avg_pool(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_value a[2] = {WK_VT(G(0)), WK_VT(X(0))};
  CHECK(a[1].u.t);
  GIN(0, wk__call1("adaptive_avg_pool2d_backward", a, 2));
  END
}
static wk_status d_batch_norm(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int64_t mask[3] = {NEEDS(0), NEEDS(1), NEEDS(2)};
  bool train = BARG(5);
  wk_tensor *w = NONE(1) ? NULL : X(1);
  wk_tensor *rm = NONE(3) ? NULL : X(3), *rv = NONE(4) ? NULL : X(4);
  wk_value a[10] = {WK_VT(G(0)), WK_VT(X(0)), WK_VT(w), WK_VT(train ? NULL : rm), WK_VT(train ? NULL : rv),
                    WK_VT(train ? Y(1) : NULL), WK_VT(train ? Y(2) : NULL), WK_VB(train), N->args[7], WK_VINTS(mask, 3)};
  CHECK(a[1].u.t);
  wk_value o[3];
  if (wk_call("batch_norm_backward", a, 10, o) != WK_OK) {
    st__ = wk_last_error();
    goto done;
  }
  for (int i = 0; i < 3; i++)
    if (o[i].tag == WK_V_TENSOR) wk__scope_adopt(o[i].u.t);
  for (int i = 0; i < 3; i++)
    if (o[i].tag == WK_V_TENSOR) GIN(i, o[i].u.t);
  END
}
static wk_status d_layer_norm(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int64_t mask[3] = {NEEDS(0), NEEDS(2), NEEDS(3)};
  wk_value a[8] = {WK_VT(G(0)), WK_VT(X(0)), N->args[1], WK_VT(Y(1)), WK_VT(Y(2)),
                   WK_VT(NONE(2) ? NULL : X(2)), WK_VT(NONE(3) ? NULL : X(3)), WK_VINTS(mask, 3)};
  CHECK(a[1].u.t);
  wk_value o[3];
  if (wk_call("layer_norm_backward", a, 8, o) != WK_OK) {
    st__ = wk_last_error();
    goto done;
  }
  for (int i = 0; i < 3; i++)
    if (o[i].tag == WK_V_TENSOR) wk__scope_adopt(o[i].u.t);
  if (o[0].tag == WK_V_TENSOR) GIN(0, o[0].u.t);
  if (o[1].tag == WK_V_TENSOR) GIN(2, o[1].u.t);
  if (o[2].tag == WK_V_TENSOR) GIN(3, o[2].u.t);
  END
}
static wk_status d_dropout(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN double p = FARG(1);
  bool train = BARG(2);
  if (!train || p == 0) {
    GIN(0, G(0));
  } else if (p >= 1) {
    GIN(0, wk_zeros_like(G(0), OPT0));
  } else {
    GIN(0, wk_mul_scalar(wk_mul(G(0), Y(1)), 1.0 / (1.0 - p)));
  }
  END
}
static wk_status d_embedding(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_value a[4] = {WK_VT(G(0)), WK_VT(X(1)), WK_VI(N->in_sizes[0][0]), N->args[2]};
  CHECK(a[1].u.t);
  GIN(0, wk__call1("embedding_dense_backward", a, 4));
  END
}
static wk_status d_pad(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_value a[4] = {WK_VT(G(0)), WK_VT(X(0)), N->args[1], N->args[2]};
  CHECK(a[1].u.t);
  GIN(0, wk__call1("pad_backward", a, 4));
  END
}

/* scaled_dot_product_attention: one backward op recomputes the probabilities
 * from the saved logsumexp (and the dropout mask from the saved Philox state),
 * so nothing of size [..., L, S] is kept between forward and backward. */
static wk_status d_sdpa(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN int64_t mask[4] = {NEEDS(0), NEEDS(1), NEEDS(2), NEEDS(3)};
  wk_tensor *am = NONE(3) ? NULL : X(3);
  wk_value a[12] = {WK_VT(G(0)), WK_VT(X(0)), WK_VT(X(1)), WK_VT(X(2)), am ? WK_VT(am) : N->args[3],
                    WK_VT(Y(0)),  WK_VT(Y(1)), WK_VT(Y(2)), N->args[4],  N->args[5],
                    N->args[6],   WK_VINTS(mask, 4)};
  for (int i = 1; i < 8; i++)
    if (i != 4) CHECK(a[i].u.t);
  wk_value o[4];
  if (wk_call("scaled_dot_product_attention_backward", a, 12, o) != WK_OK) {
    st__ = wk_last_error();
    goto done;
  }
  for (int i = 0; i < 4; i++)
    if (o[i].tag == WK_V_TENSOR) wk__scope_adopt(o[i].u.t);
  for (int i = 0; i < 4; i++)
    if (o[i].tag == WK_V_TENSOR) GIN(i, o[i].u.t);
  END
}

/* ---- double backward: derivatives of the backward kernels ------------------------------------------- */
/* Output i's gradient, or NULL when the output was not produced (masked). */
#define GOPT(i) (N->out_differentiable[i] ? G(i) : NULL)
/* A saved optional tensor argument, or NULL when it was None / NULL. */
#define XO(i) (N->saved_args[i].t ? X(i) : NULL)

static wk_tensor *conv_call(wk_tensor *x, wk_tensor *w, const wk__node *n) {
  wk_value a[7] = {WK_VT(x), WK_VT(w), WK_VNONE, n->args[3], n->args[4], n->args[5], n->args[6]};
  return wk__call1("conv2d", a, 7);
}
/* conv2d_backward's output i (a new tensor adopted by the scope): the
 * gradient of conv2d(x, w) with g flowing into its result. */
static wk_tensor *conv_back_call(wk_tensor *g, wk_tensor *x, wk_tensor *w, const wk__node *n, int i) {
  int64_t mask[3] = {i == 0, i == 1, i == 2};
  wk_value a[8] = {WK_VT(g), WK_VT(x), WK_VT(w), n->args[3], n->args[4], n->args[5], n->args[6], WK_VINTS(mask, 3)};
  wk_value o[3];
  if (wk_call("conv2d_backward", a, 8, o) != WK_OK) return NULL;
  wk_tensor *r = NULL;
  for (int k = 0; k < 3; k++)
    if (o[k].tag == WK_V_TENSOR) {
      wk__scope_adopt(o[k].u.t);
      if (k == i) r = o[k].u.t;
    }
  return r;
}
/* conv2d_backward(gO, x, w) = (gI, gW, gB) is linear in gO and bilinear in
 * (gO, x) and (gO, w) (PyTorch's _convolution_double_backward):
 * ggO = conv(ggI, w) + conv(x, ggW) + ggB, gx = convolution_backward's input
 * gradient with weight ggW, gw = its weight gradient with input ggI. */
static wk_status d_conv2d_backward(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *gO = X(0), *x = X(1), *w = X(2);
  CHECK(gO);
  CHECK(x);
  CHECK(w);
  wk_tensor *ggI = GOPT(0), *ggW = GOPT(1), *ggB = GOPT(2);
  if (NEEDS(0)) {
    wk_tensor *r = NULL;
    if (ggI) r = conv_call(ggI, w, N);
    if (ggW) r = r ? wk_add(r, conv_call(x, ggW, N)) : conv_call(x, ggW, N);
    if (ggB) {
      wk_tensor *b = wk_reshape(ggB, WK_SHAPE(1, -1, 1, 1));
      r = r ? wk_add(r, b) : wk_expand(b, wk_tensor_sizes(gO), wk_tensor_dim(gO));
    }
    GIN(0, r ? r : wk_zeros_like(gO, OPT0));
  }
  if (NEEDS(1)) GIN(1, ggW ? conv_back_call(gO, x, ggW, N, 0) : wk_zeros_like(x, OPT0));
  if (NEEDS(2)) GIN(2, ggI ? conv_back_call(gO, ggI, w, N, 1) : wk_zeros_like(w, OPT0));
  END
}
/* max_pool2d backward routes each output gradient to its argmax: the second
 * derivative gathers ggI at the same indices (self only decides indices). */
static wk_status d_max_pool_backward(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *ind = X(7);
  CHECK(ind);
  if (NEEDS(0)) {
    int nd = wk_tensor_dim(ind);
    int64_t shp[WK_MAX_DIMS], ishp[WK_MAX_DIMS];
    for (int d = 0; d < nd - 2; d++) shp[d] = ishp[d] = wk_tensor_size(ind, d);
    shp[nd - 2] = ishp[nd - 2] = -1;
    wk_tensor *gg = wk_reshape(G(0), shp, nd - 1), *fi = wk_reshape(ind, ishp, nd - 1);
    GIN(0, wk_reshape(wk_gather(gg, nd - 2, fi), wk_tensor_sizes(ind), nd));
  }
  GIN(1, wk_zeros(IN_SHAPE(1), (wk_options){.dtype = wk_tensor_dtype(G(0)), .device = wk_tensor_device(G(0))}));
  END
}
/* avg_pool2d backward is linear in grad_output with adjoint avg_pool2d. */
static wk_status d_avg_pool_backward(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN if (NEEDS(0)) {
    wk_value a[7] = {WK_VT(G(0)), N->args[2], N->args[3], N->args[4], N->args[5], N->args[6], N->args[7]};
    GIN(0, wk__call1("avg_pool2d", a, 7));
  }
  GIN(1, wk_zeros(IN_SHAPE(1), (wk_options){.dtype = wk_tensor_dtype(G(0)), .device = wk_tensor_device(G(0))}));
  END
}
static wk_status d_adaptive_avg_pool_backward(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN if (NEEDS(0)) {
    int nd = N->in_ndim[N->k_of_arg[0]];
    const int64_t *gs = N->in_sizes[N->k_of_arg[0]];
    GIN(0, wk_adaptive_avg_pool2d(G(0), gs[nd - 2], gs[nd - 1]));
  }
  GIN(1, wk_zeros(IN_SHAPE(1), (wk_options){.dtype = wk_tensor_dtype(G(0)), .device = wk_tensor_device(G(0))}));
  END
}

/* t viewed as [1, C, 1, ...] against an input of nd dims. */
static wk_tensor *as_dim1(wk_tensor *t, int nd) {
  int64_t shp[WK_MAX_DIMS];
  for (int d = 0; d < nd; d++) shp[d] = d == 1 ? -1 : 1;
  return wk_reshape(t, shp, nd);
}
/* sum over every dim but dims [from, from + nkeep) (kept as size 1). */
static wk_tensor *sum_except(wk_tensor *t, int from, int nkeep) {
  int64_t dims[WK_MAX_DIMS];
  int n = 0, nd = wk_tensor_dim(t);
  for (int d = 0; d < nd; d++)
    if (d < from || d >= from + nkeep) dims[n++] = d;
  return n ? wk_sum_dim(t, dims, n, true) : t;
}
static wk_tensor *add_opt(wk_tensor *a, wk_tensor *b) { return a ? wk_add(a, b) : b; }

/* The second derivative of normalisation over groups: PyTorch's
 * batchnorm_double_backward / layer_norm_double_backward in one. x is
 * normalised over the reduction dims (sum_r, M elements) with mean mu and
 * inverse deviation is; gamma (or NULL) scales per channel; ggI/ggG/ggB are
 * the incoming gradients of (gI, gG, gB); gamma_in_red: gamma varies along
 * the reduction dims (layer norm), so it enters before the sums. */
typedef struct {
  wk_tensor *(*sum_r)(wk_tensor *t, int nd); /* reduce over the normalised elements, keep dims */
  wk_tensor *(*sum_g)(wk_tensor *t, int nd); /* reduce to gamma's elements, keep dims */
} norm_dims;
typedef struct {
  wk_tensor *gI, *gG, *ggO;
} norm_dd;
static norm_dd norm_double_backward(wk_tensor *x, wk_tensor *gO, wk_tensor *mu, wk_tensor *is, wk_tensor *gamma,
                                    wk_tensor *ggI, wk_tensor *ggG, wk_tensor *ggB, double M, bool training,
                                    bool gamma_in_red, const norm_dims *nd_) {
  norm_dd r = {NULL, NULL, NULL};
  int nd = wk_tensor_dim(x);
  wk_tensor *xmu = wk_sub(x, mu), *is2 = wk_mul(is, is), *is3 = wk_mul(is2, is);
  wk_tensor *g = gamma ? gamma : wk_ones(WK_SHAPE(1), (wk_options){.dtype = wk_tensor_dtype(x), .device = wk_tensor_device(x)});
  /* gxhat: the gradient reaching the normalised value */
  wk_tensor *gx = gamma_in_red ? wk_mul(gO, g) : gO;
  wk_tensor *xmu_is3 = wk_mul(xmu, is3);
  wk_tensor *gx_xmu_sum = nd_->sum_r(wk_mul(gx, xmu), nd), *gx_sum = nd_->sum_r(gx, nd);
  if (ggI && training) {
    wk_tensor *ggI_sum = nd_->sum_r(ggI, nd), *ggI_xmu_sum = nd_->sum_r(wk_mul(ggI, xmu), nd);
    wk_tensor *all = wk_add(wk_sub(wk_div_scalar(wk_mul(ggI_sum, gx_sum), M), nd_->sum_r(wk_mul(gx, ggI), nd)),
                            wk_mul_scalar(wk_mul(wk_mul(is2, gx_xmu_sum), ggI_xmu_sum), 3.0 / M));
    wk_tensor *t0 = wk_div_scalar(wk_mul(xmu_is3, all), M);
    wk_tensor *t1 = wk_mul(wk_div_scalar(wk_mul(ggI_xmu_sum, is3), M), wk_sub(wk_div_scalar(gx_sum, M), gx));
    wk_tensor *t2 = wk_mul(wk_div_scalar(wk_mul(gx_xmu_sum, is3), M), wk_sub(wk_div_scalar(ggI_sum, M), ggI));
    wk_tensor *s = wk_add(wk_add(t0, t1), t2);
    r.gI = gamma_in_red ? s : wk_mul(g, s);
  }
  if (gamma && ggG) {
    wk_tensor *t;
    if (training) {
      wk_tensor *gG_ = wk_mul(gO, ggG);
      t = wk_add(wk_sub(wk_mul(gG_, is), wk_div_scalar(wk_mul(is, nd_->sum_r(gG_, nd)), M)),
                 wk_div_scalar(wk_mul(xmu_is3, nd_->sum_r(wk_mul(gG_, xmu), nd)), -M));
    } else {
      t = wk_mul(wk_mul(ggG, is), gO);
    }
    r.gI = add_opt(r.gI, t);
  }
  if (ggI) { /* first backward's grad_input, with gO -> ggI */
    wk_tensor *h1 = training ? wk_sub(wk_sub(wk_mul_scalar(ggI, M), nd_->sum_r(ggI, nd)),
                                      wk_mul(wk_mul(xmu, is2), nd_->sum_r(wk_mul(ggI, xmu), nd)))
                             : wk_mul_scalar(ggI, M);
    wk_tensor *base = wk_div_scalar(wk_mul(is, h1), M); /* the first backward without gamma */
    if (gamma) r.gG = nd_->sum_g(wk_mul(gO, base), nd);
    r.ggO = wk_mul(g, base);
  }
  if (ggG) r.ggO = add_opt(r.ggO, wk_mul(wk_mul(xmu, is), ggG));
  if (ggB) r.ggO = add_opt(r.ggO, wk_expand(ggB, wk_tensor_sizes(x), nd));
  return r;
}
static wk_tensor *bn_sum_r(wk_tensor *t, int nd) {
  (void)nd;
  return sum_except(t, 1, 1);
}
static wk_status d_batch_norm_backward(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *gO = X(0), *x = X(1);
  CHECK(gO);
  CHECK(x);
  bool train = BARG(7);
  double eps = FARG(8);
  int nd = wk_tensor_dim(x);
  wk_tensor *w = XO(2), *mu, *is;
  if (train) {
    mu = X(5);
    is = X(6);
  } else {
    mu = X(3);
    is = XO(4) ? wk_rsqrt(wk_add_scalar(X(4), eps)) : NULL;
  }
  CHECK(mu);
  CHECK(is);
  double M = (double)wk_tensor_numel(x) / (double)wk_tensor_size(x, 1);
  norm_dims dims = {bn_sum_r, bn_sum_r};
  wk_tensor *ggG = GOPT(1), *ggB = GOPT(2);
  norm_dd r = norm_double_backward(x, gO, as_dim1(mu, nd), as_dim1(is, nd), w ? as_dim1(w, nd) : NULL, GOPT(0),
                                   ggG ? as_dim1(ggG, nd) : NULL, ggB ? as_dim1(ggB, nd) : NULL, M, train, false,
                                   &dims);
  wk_options fo = {.dtype = wk_tensor_dtype(x), .device = wk_tensor_device(x)};
  GIN(0, r.ggO ? r.ggO : wk_zeros_like(gO, OPT0));
  GIN(1, r.gI ? r.gI : wk_zeros_like(x, OPT0));
  if (NEEDS(2)) GIN(2, r.gG ? wk_reshape(r.gG, WK_SHAPE(-1)) : wk_zeros(IN_SHAPE(2), fo));
  /* the statistics are functions of the input, already differentiated
   * through it above: no second path */
  for (int a = 3; a <= 6; a++)
    if (NEEDS(a)) GIN(a, wk_zeros(IN_SHAPE(a), fo));
  END
}
static int g_ln_axis; /* (set right before each norm_double_backward call of layer norm) */
static wk_tensor *ln_sum_r(wk_tensor *t, int nd) { return sum_except(t, 0, g_ln_axis < nd ? g_ln_axis : nd); }
static wk_tensor *ln_sum_g(wk_tensor *t, int nd) { return sum_except(t, g_ln_axis, nd - g_ln_axis); }
static wk_status d_layer_norm_backward(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *gO = X(0), *x = X(1), *mu = X(3), *is = X(4);
  CHECK(gO);
  CHECK(x);
  CHECK(mu);
  CHECK(is);
  int nd = wk_tensor_dim(x), axis = nd - N->args[2].len;
  int64_t sshape[WK_MAX_DIMS];
  double M = 1;
  for (int d = 0; d < nd; d++) {
    sshape[d] = d < axis ? wk_tensor_size(x, d) : 1;
    if (d >= axis) M *= (double)wk_tensor_size(x, d);
  }
  wk_tensor *w = XO(5);
  wk_tensor *ggG = GOPT(1), *ggB = GOPT(2);
  norm_dims dims = {ln_sum_r, ln_sum_g};
  g_ln_axis = axis;
  norm_dd r = norm_double_backward(x, gO, wk_reshape(mu, sshape, nd), wk_reshape(is, sshape, nd), w, GOPT(0), ggG,
                                   ggB, M, true, true, &dims);
  wk_options fo = {.dtype = wk_tensor_dtype(x), .device = wk_tensor_device(x)};
  GIN(0, r.ggO ? r.ggO : wk_zeros_like(gO, OPT0));
  GIN(1, r.gI ? r.gI : wk_zeros_like(x, OPT0));
  if (NEEDS(5)) GIN(5, r.gG ? wk_reshape(r.gG, IN_SHAPE(5)) : wk_zeros(IN_SHAPE(5), fo));
  for (int a = 3; a <= 6; a += a == 4 ? 2 : 1)
    if (NEEDS(a)) GIN(a, wk_zeros(IN_SHAPE(a), fo));
  END
}

/* Losses are differentiated with forward ops (so double backward works):
 * G = dloss/dlogp for class targets, then through log_softmax. */
static wk_tensor *class_index_grad(wk_tensor *logp_like, wk_tensor *target, wk_tensor *weight, int64_t reduction,
                                   int64_t ignore_index, double smoothing, wk_tensor *g, int cdim) {
  int nd = wk_tensor_dim(logp_like);
  int64_t C = wk_tensor_size(logp_like, cdim);
  wk_options fo = {.dtype = wk_tensor_dtype(logp_like), .device = wk_tensor_device(logp_like)};
  wk_tensor *valid = wk_ne_scalar(target, (double)ignore_index);
  wk_tensor *safe_t = wk_where(valid, target, wk_zeros_like(target, OPT0));
  /* one-hot over classes, moved to the class dim: [N, C, d...] */
  wk_tensor *oh = wk_to_dtype(wk_one_hot(safe_t, C), fo.dtype);
  if (nd > 1) {
    int64_t perm[WK_MAX_DIMS];
    int k = 0;
    perm[k++] = 0;
    perm[k++] = nd - 1;
    for (int d = 1; d < nd - 1; d++) perm[k++] = d;
    oh = wk_permute(oh, perm, nd);
  }
  int64_t wshape[WK_MAX_DIMS];
  for (int d = 0; d < nd; d++) wshape[d] = d == cdim ? C : 1;
  wk_tensor *w = weight ? wk_reshape(weight, wshape, nd) : wk_ones(wshape, nd, fo);
  wk_tensor *validf = wk_unsqueeze(wk_to_dtype(valid, fo.dtype), cdim);
  /* per-element weight of the target class, and the mean denominator */
  wk_tensor *wt = wk_sum_dim(wk_mul(oh, w), (int64_t[]){cdim}, 1, true);
  wk_tensor *wtv = wk_mul(wt, validf);
  wk_tensor *G = wk_neg(wk_mul(wk_mul_scalar(oh, 1.0 - smoothing), wk_mul(w, validf)));
  if (smoothing > 0) G = wk_sub(G, wk_mul_scalar(wk_mul(w, validf), smoothing / (double)C));
  wk_tensor *scale;
  if (reduction == 0) {
    scale = wk_unsqueeze(g, cdim);
  } else {
    scale = g;
    if (reduction == 1) scale = wk_div(g, wk_sum(wtv));
  }
  return wk_mul(G, scale);
}
static wk_status d_nll_loss(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *x = X(0);
  CHECK(x);
  int cdim = wk_tensor_dim(x) == 1 ? 0 : 1;
  wk_tensor *t = X(1);
  if (wk_tensor_dim(x) == 1) {
    x = wk_unsqueeze(x, 0);
    t = wk_unsqueeze(t, 0);
    cdim = 1;
  }
  wk_tensor *g = IARG(3) == 0 && wk_tensor_dim(X(0)) == 1 ? wk_unsqueeze(G(0), 0) : G(0);
  wk_tensor *gl = class_index_grad(x, t, NONE(2) ? NULL : X(2), IARG(3), IARG(4), 0, g, cdim);
  GIN(0, wk_tensor_dim(X(0)) == 1 ? wk_squeeze_dim(gl, 0) : gl);
  END
}
static wk_status d_cross_entropy(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *x = X(0), *t = X(1);
  CHECK(x);
  CHECK(t);
  bool one_d = wk_tensor_dim(x) == 1;
  if (one_d) {
    x = wk_unsqueeze(x, 0);
    t = wk_unsqueeze(t, 0);
  }
  int64_t red = IARG(3);
  double eps = FARG(5);
  wk_tensor *w = NONE(2) ? NULL : X(2);
  wk_tensor *logp = wk_log_softmax(x, 1);
  wk_tensor *Gl;
  if (wk_dtype_is_floating(wk_tensor_dtype(t))) {
    /* class probabilities (PyTorch's cross_entropy_loss_prob_target):
     * loss = -sum_c w_c t'_c logp_c per element, t' = t (1 - eps) + eps / C,
     * mean over the N = numel / C elements */
    int nd = wk_tensor_dim(x);
    int64_t C = wk_tensor_size(x, 1), wshape[WK_MAX_DIMS];
    for (int d = 0; d < nd; d++) wshape[d] = d == 1 ? C : 1;
    wk_tensor *pt = eps > 0 ? wk_add_scalar(wk_mul_scalar(t, 1 - eps), eps / (double)C) : t;
    wk_tensor *ww = w ? wk_reshape(w, wshape, nd) : NULL;
    wk_tensor *g = G(0);
    if (red == 0)
      g = wk_unsqueeze(one_d ? wk_unsqueeze(g, 0) : g, 1);
    else if (red == 1)
      g = wk_div_scalar(g, (double)(C ? wk_tensor_numel(x) / C : 0));
    Gl = wk_mul(wk_neg(ww ? wk_mul(pt, ww) : pt), g);
    if (NEEDS(1)) { /* -(1 - eps) w logp g */
      wk_tensor *gt = wk_mul(wk_neg(ww ? wk_mul(logp, ww) : logp), g);
      if (eps > 0) gt = wk_mul_scalar(gt, 1 - eps);
      GIN(1, one_d ? wk_squeeze_dim(gt, 0) : gt);
    }
    if (NEEDS(2)) { /* -sum over every dim but the class dim of t' logp g */
      int64_t dims[WK_MAX_DIMS];
      int n = 0;
      for (int d = 0; d < nd; d++)
        if (d != 1) dims[n++] = d;
      GIN(2, wk_sum_dim(wk_neg(wk_mul(wk_mul(pt, logp), g)), dims, n, false));
    }
  } else {
    wk_tensor *g = red == 0 && one_d ? wk_unsqueeze(G(0), 0) : G(0);
    Gl = class_index_grad(x, t, w, red, IARG(4), eps, g, 1);
  }
  CHECK(Gl);
  if (NEEDS(0)) { /* through log_softmax: G - softmax * sum(G) */
    wk_tensor *gx = wk_sub(Gl, wk_mul(wk_exp(logp), wk_sum_dim(Gl, (int64_t[]){1}, 1, true)));
    GIN(0, one_d ? wk_squeeze_dim(gx, 0) : gx);
  }
  END
}
static double reduce_scale(int64_t red, wk_tensor *x) { return red == 1 ? 1.0 / (double)wk_tensor_numel(x) : 1.0; }
static wk_status d_mse(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *x = X(0), *y = X(1);
  CHECK(x);
  CHECK(y);
  wk_tensor *d = wk_mul(wk_sub(x, y), G(0));
  d = wk_mul_scalar(d, 2.0 * reduce_scale(IARG(2), x));
  if (NEEDS(0)) GIN(0, d);
  if (NEEDS(1)) GIN(1, wk_neg(d));
  END
}
static wk_status d_bce_logits(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *x = X(0), *y = X(1);
  CHECK(x);
  CHECK(y);
  wk_tensor *w = NONE(2) ? NULL : X(2), *pw = NONE(3) ? NULL : X(3);
  wk_tensor *g = wk_mul_scalar(G(0), reduce_scale(IARG(4), x));
  if (w) g = wk_mul(g, w);
  wk_tensor *s = wk_sigmoid(x);
  if (NEEDS(0)) {
    wk_tensor *r;
    if (pw) {
      wk_tensor *py = wk_mul(pw, y);
      r = wk_sub(wk_mul(wk_add(wk_sub(py, y), wk_ones_like(y, OPT0)), s), py);
    } else {
      r = wk_sub(s, y);
    }
    GIN(0, wk_mul(r, g));
  }
  if (NEEDS(1)) {
    /* d/dy = -x + (pw - 1) * softplus(-x) */
    wk_tensor *r = wk_neg(x);
    if (pw) {
      wk_tensor *sp = wk_add(wk_relu(wk_neg(x)), wk_log1p(wk_exp(wk_neg(wk_abs(x)))));
      r = wk_add(r, wk_mul(wk_sub_scalar(pw, 1), sp));
    }
    GIN(1, wk_mul(r, g));
  }
  END
}

/* interpolate(input, size?, scale_factor?, mode, align_corners?, recompute_scale_factor?): the input's gradient is
 * interpolate_backward (the taps transposed: ATen's upsample_*_backward); its own gradient (double backward) is
 * interpolate of the incoming gradient to the same output sizes. */
static wk_status d_interpolate(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_value a[7] = {WK_VT(G(0)), WK_VINTS(N->in_sizes[N->k_of_arg[0]], N->in_ndim[N->k_of_arg[0]]),
                         N->args[2], N->args[3], N->args[4], N->args[5], N->args[6]};
  GIN(0, wk__call1("interpolate_backward", a, 7));
  END
}
static wk_status d_interpolate_backward(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN bool use_scale = N->args[2].tag == WK_V_FLOATS && !(N->args[5].tag == WK_V_BOOL && N->args[5].u.b);
  int nd = N->in_ndim[N->k_of_arg[0]];
  const int64_t *gs = N->in_sizes[N->k_of_arg[0]];
  wk_value a[7] = {WK_VT(G(0)), use_scale ? WK_VNONE : WK_VINTS(gs + 2, nd - 2), use_scale ? N->args[2] : WK_VNONE,
                   N->args[3], N->args[4], use_scale ? N->args[5] : WK_VNONE, N->args[6]};
  GIN(0, wk__call1("interpolate", a, 7));
  END
}

static const wk__formula rows[] = {
    {"softmax", "SoftmaxBackward0", d_softmax, 0, A(0)}, {"log_softmax", "LogSoftmaxBackward0", d_log_softmax, 0, A(0)},
    {"softmax_backward_data", "SoftmaxBackwardDataBackward0", d_softmax_bd, A(0) | A(1), 0},
    {"log_softmax_backward_data", "LogSoftmaxBackwardDataBackward0", d_log_softmax_bd, A(0) | A(1), 0},
    {"conv2d", "ConvolutionBackward0", d_conv2d, A(0) | A(1), 0},
    {"max_pool2d_with_indices", "MaxPool2DWithIndicesBackward0", d_max_pool, A(0), A(1)},
    {"avg_pool2d", "AvgPool2DBackward0", d_avg_pool, A(0), 0},
    {"adaptive_avg_pool2d", "AdaptiveAvgPool2DBackward0", d_adaptive_avg_pool, A(0), 0},
    {"interpolate", "UpsampleBackward0", d_interpolate, 0, 0},
    {"interpolate_backward", "UpsampleBackwardBackward0", d_interpolate_backward, 0, 0},
    {"batch_norm", "NativeBatchNormBackward0", d_batch_norm, A(0) | A(1) | A(3) | A(4), A(1) | A(2)},
    {"layer_norm", "NativeLayerNormBackward0", d_layer_norm, A(0) | A(2) | A(3), A(1) | A(2)},
    {"dropout", "NativeDropoutBackward0", d_dropout, 0, A(1)},
    {"embedding", "EmbeddingBackward0", d_embedding, A(1), 0},
    {"pad", "ConstantPadNdBackward0", d_pad, A(0), 0},
    {"cross_entropy", "CrossEntropyLossBackward0", d_cross_entropy, A(0) | A(1) | A(2), 0},
    {"nll_loss", "NllLossBackward0", d_nll_loss, A(0) | A(1) | A(2), 0},
    {"mse_loss", "MseLossBackward0", d_mse, A(0) | A(1), 0},
    {"binary_cross_entropy_with_logits", "BinaryCrossEntropyWithLogitsBackward0", d_bce_logits, A(0) | A(1) | A(2) | A(3), 0},
    /* double backward */
    {"conv2d_backward", "ConvolutionBackwardBackward0", d_conv2d_backward, A(0) | A(1) | A(2), 0},
    {"max_pool2d_with_indices_backward", "MaxPool2DWithIndicesBackwardBackward0", d_max_pool_backward, A(7), 0},
    {"avg_pool2d_backward", "AvgPool2DBackwardBackward0", d_avg_pool_backward, 0, 0},
    {"adaptive_avg_pool2d_backward", "AdaptiveAvgPool2DBackwardBackward0", d_adaptive_avg_pool_backward, 0, 0},
    {"batch_norm_backward", "NativeBatchNormBackwardBackward0", d_batch_norm_backward,
     A(0) | A(1) | A(2) | A(3) | A(4) | A(5) | A(6), 0},
    {"layer_norm_backward", "NativeLayerNormBackwardBackward0", d_layer_norm_backward,
     A(0) | A(1) | A(3) | A(4) | A(5), 0},
    {"scaled_dot_product_attention", "ScaledDotProductAttentionBackward0", d_sdpa, A(0) | A(1) | A(2) | A(3),
     A(0) | A(1) | A(2)},
};
const wk__formula_family wk__formulas_nn = {rows, sizeof rows / sizeof rows[0]};
