/* Meta functions of issue 21's nn and loss surface (kernels: core/composite_nn_surface.c): every
 * argument check with PyTorch's message (its ATen checks, or functional.py's where the op is
 * Python there), and the result shapes and dtypes, decided once for every device. */
#include <math.h>
#include <stdio.h>

#include <wick/sdk/check.h>

#include "meta.h"

#define OPT(i) (MNONE(i) ? NULL : MT(i))

static wk_status check_reduction(const char *op, int64_t r) {
  if (r >= 0 && r <= 2) return WK_OK;
  return wk_error(WK_ERR_INVALID_ARG, "%s(): reduction must be 0 (none), 1 (mean) or 2 (sum), got %lld", op,
                  (long long)r);
}

/* The result dtype of the first n (tensor) arguments, which must be floating. */
static wk_status float_result(wk_op *op, const wk_value *args, int n, wk_dtype *rt) {
  *rt = wk_result_type(args, n);
  if (wk_dtype_is_floating(*rt)) return WK_OK;
  char names[96] = "";
  for (int i = 0; i < n; i++) {
    size_t l = strlen(names);
    snprintf(names + l, sizeof names - l, "%s%s", i ? (i == n - 1 ? " and " : ", ") : "", wk_dtype_name(MT(i)->dtype));
  }
  return wk_error(WK_ERR_DTYPE, "%s(): expected floating point inputs, got %s", MNAME, names);
}

static wk_status need_floating(wk_op *op, const char *what, const wk_tensor *t) {
  if (wk_dtype_is_floating(t->dtype)) return WK_OK;
  return wk_error(WK_ERR_DTYPE, "%s(): expected a floating point %s, got %s", MNAME, what, wk_dtype_name(t->dtype));
}

/* The loss result: the broadcast shape (none) or a 0-d tensor. */
static void loss_result(wk_meta_out *o, int64_t reduction, wk_dtype rt) {
  o->dtype = rt;
  if (reduction != 0) o->ndim = 0;
}

static int64_t numel_of(const int64_t *s, int nd) {
  int64_t n = 1;
  for (int d = 0; d < nd; d++) n *= s[d];
  return n;
}

static bool same_sizes(const wk_tensor *a, const wk_tensor *b) {
  return a->ndim == b->ndim && !memcmp(a->sizes, b->sizes, sizeof(int64_t) * (size_t)a->ndim);
}

/* e broadcasts to t's shape (trailing sizes 1 or t's). */
static bool broadcasts_to(const wk_tensor *e, const wk_tensor *t) {
  if (e->ndim > t->ndim) return false;
  for (int d = 0; d < e->ndim; d++) {
    int64_t es = e->sizes[d], ts = t->sizes[t->ndim - e->ndim + d];
    if (es != ts && es != 1) return false;
  }
  return true;
}

/* l1_loss, smooth_l1_loss (beta >= 0), huber_loss (delta > 0), soft_margin_loss, kl_div:
 * (self, target, reduction, ...), self and target broadcast. */
static wk_status meta_elem_loss(wk_op *op, const wk_value *args, wk_meta_out *o) {
  const char *name = MNAME;
  wk_dtype rt;
  wk_status s = check_reduction(name, args[2].u.i);
  if (!s) s = float_result(op, args, 2, &rt);
  if (s) return s;
  if (!strcmp(name, "smooth_l1_loss") && !(args[3].u.f >= 0))
    return wk_error(WK_ERR_INVALID_ARG, "smooth_l1_loss does not support negative values for beta (got %g)",
                    args[3].u.f);
  if (!strcmp(name, "huber_loss") && !(args[3].u.f > 0))
    return wk_error(WK_ERR_INVALID_ARG, "huber_loss does not support non-positive values for delta (got %g)",
                    args[3].u.f);
  wk_tensor *pair[2] = {MT(0), MT(1)};
  char what[64];
  snprintf(what, sizeof what, "%s()", name);
  if ((s = wk__meta_broadcast(what, pair, 2, o))) return s;
  loss_result(o, args[2].u.i, rt);
  return WK_OK;
}

/* binary_cross_entropy(self, target, weight?, reduction): target has self's shape, weight broadcasts. */
static wk_status meta_bce(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *x = MT(0), *t = MT(1), *w = OPT(2);
  char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX];
  wk_dtype rt;
  wk_status s = check_reduction(MNAME, args[3].u.i);
  if (!s) s = float_result(op, args, 2, &rt);
  if (s) return s;
  if (!same_sizes(x, t))
    return wk_error(WK_ERR_SHAPE,
                    "binary_cross_entropy(): Using a target size (%s) that is different to the input size (%s) is "
                    "deprecated. Please ensure they have the same size.",
                    wk__shape_str(t->sizes, t->ndim, a, sizeof a), wk__shape_str(x->sizes, x->ndim, b, sizeof b));
  if (w && !broadcasts_to(w, x))
    return wk_error(WK_ERR_SHAPE, "binary_cross_entropy(): weight of shape %s cannot be broadcast to the input shape %s",
                    wk__shape_str(w->sizes, w->ndim, a, sizeof a), wk__shape_str(x->sizes, x->ndim, b, sizeof b));
  if (w && (s = need_floating(op, "weight", w))) return s;
  wk__meta_like(o, x, rt);
  loss_result(o, args[3].u.i, rt);
  return WK_OK;
}

/* poisson_nll_loss(input, target, log_input, full, eps, reduction): input and target broadcast. */
static wk_status meta_poisson_nll(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_dtype rt;
  wk_status s = check_reduction(MNAME, args[5].u.i);
  if (!s) s = float_result(op, args, 2, &rt);
  if (s) return s;
  wk_tensor *pair[2] = {MT(0), MT(1)};
  if ((s = wk__meta_broadcast("poisson_nll_loss()", pair, 2, o))) return s;
  loss_result(o, args[5].u.i, rt);
  return WK_OK;
}

/* gaussian_nll_loss(input, target, var, full, eps, reduction): var has input's shape, or input's
 * without the last dim, or input's with a last dim of 1 (functional.py's rule); eps > 0. */
static wk_status meta_gaussian_nll(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *x = MT(0), *v = MT(2);
  char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX];
  wk_dtype rt;
  wk_status s = check_reduction(MNAME, args[5].u.i);
  if (!s) s = float_result(op, args, 3, &rt);
  if (s) return s;
  if (!(args[4].u.f > 0))
    return wk_error(WK_ERR_INVALID_ARG, "gaussian_nll_loss(): eps must be positive, got %g", args[4].u.f);
  bool ok = same_sizes(v, x);
  if (!ok && x->ndim >= 1 && v->ndim == x->ndim - 1)
    ok = !memcmp(v->sizes, x->sizes, sizeof(int64_t) * (size_t)v->ndim);
  if (!ok && x->ndim >= 1 && v->ndim == x->ndim && v->sizes[v->ndim - 1] == 1)
    ok = !memcmp(v->sizes, x->sizes, sizeof(int64_t) * (size_t)(v->ndim - 1));
  if (!ok)
    return wk_error(WK_ERR_SHAPE,
                    "gaussian_nll_loss(): var is of incorrect size: %s for input %s (expected the input's shape, "
                    "or it without its last dim, or with a last dim of 1)",
                    wk__shape_str(v->sizes, v->ndim, a, sizeof a), wk__shape_str(x->sizes, x->ndim, b, sizeof b));
  wk_tensor *pair[2] = {x, MT(1)};
  if ((s = wk__meta_broadcast("gaussian_nll_loss()", pair, 2, o))) return s;
  if (!same_sizes(x, MT(1)) && (o->ndim != x->ndim || memcmp(o->sizes, x->sizes, sizeof(int64_t) * (size_t)x->ndim)))
    return wk_error(WK_ERR_SHAPE, "gaussian_nll_loss(): target of shape %s does not broadcast to the input shape %s",
                    wk__shape_str(MT(1)->sizes, MT(1)->ndim, a, sizeof a), wk__shape_str(x->sizes, x->ndim, b, sizeof b));
  loss_result(o, args[5].u.i, rt);
  return WK_OK;
}

/* margin_ranking_loss(input1, input2, target, margin, reduction): three inputs of one rank, broadcast. */
static wk_status meta_margin_ranking(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *ts[3] = {MT(0), MT(1), MT(2)};
  char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX], c[WK_SHAPE_STR_MAX];
  wk_dtype rt;
  wk_status s = check_reduction(MNAME, args[4].u.i);
  if (!s) s = float_result(op, args, 3, &rt);
  if (s) return s;
  if (ts[0]->ndim != ts[1]->ndim || ts[1]->ndim != ts[2]->ndim)
    return wk_error(WK_ERR_SHAPE,
                    "margin_ranking_loss(): All input tensors should have same dimension but got sizes: input1: %s, "
                    "input2: %s, target: %s ",
                    wk__shape_str(ts[0]->sizes, ts[0]->ndim, a, sizeof a),
                    wk__shape_str(ts[1]->sizes, ts[1]->ndim, b, sizeof b),
                    wk__shape_str(ts[2]->sizes, ts[2]->ndim, c, sizeof c));
  if ((s = wk__meta_broadcast("margin_ranking_loss()", ts, 3, o))) return s;
  loss_result(o, args[4].u.i, rt);
  return WK_OK;
}

/* hinge_embedding_loss(self, target, margin, reduction): self floating, target broadcast with it. */
static wk_status meta_hinge_embedding(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_status s = check_reduction(MNAME, args[3].u.i);
  if (!s) s = need_floating(op, "input", MT(0));
  if (s) return s;
  wk_tensor *pair[2] = {MT(0), MT(1)};
  if ((s = wk__meta_broadcast("hinge_embedding_loss()", pair, 2, o))) return s;
  loss_result(o, args[3].u.i, MT(0)->dtype);
  return WK_OK;
}

/* cosine_embedding_loss(input1, input2, target, margin, reduction): a 1-d target [N] with 2-d
 * inputs [N, D], or a 0-d target with 1-d inputs (ATen's checks). */
static wk_status meta_cosine_embedding(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *x1 = MT(0), *x2 = MT(1), *t = MT(2);
  char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX];
  wk_dtype rt;
  wk_status s = check_reduction(MNAME, args[4].u.i);
  if (!s) s = float_result(op, args, 2, &rt);
  if (s) return s;
  if (t->ndim > 1)
    return wk_error(WK_ERR_SHAPE, "cosine_embedding_loss(): 0D or 1D target tensor expected, multi-target not supported");
  int want = t->ndim + 1;
  if (x1->ndim != want || x2->ndim != want)
    return wk_error(WK_ERR_SHAPE, "cosine_embedding_loss(): %dD target tensor expects %dD input tensors, but found inputs with sizes %s and %s.",
                    t->ndim, want, wk__shape_str(x1->sizes, x1->ndim, a, sizeof a),
                    wk__shape_str(x2->sizes, x2->ndim, b, sizeof b));
  wk_tensor *pair[2] = {x1, x2};
  if ((s = wk__meta_broadcast("cosine_embedding_loss()", pair, 2, o))) return s;
  if (t->ndim == 1 && o->sizes[0] != t->sizes[0] && o->sizes[0] != 1 && t->sizes[0] != 1)
    return wk_error(WK_ERR_SHAPE, "cosine_embedding_loss(): target of size %lld does not match the inputs' batch of %lld",
                    (long long)t->sizes[0], (long long)o->sizes[0]);
  if (t->ndim == 1 && o->sizes[0] == 1) o->sizes[0] = t->sizes[0];
  o->ndim = t->ndim;
  loss_result(o, args[4].u.i, rt);
  return WK_OK;
}

/* The broadcast shape of n tensors without its last dim (keepdim: last dim 1); 0-d stays 0-d. */
static wk_status drop_last(const char *what, wk_tensor *const *ts, int n, bool keepdim, wk_meta_out *o) {
  wk_status s = wk__meta_broadcast(what, ts, n, o);
  if (s) return s;
  if (o->ndim > 0) {
    if (keepdim)
      o->sizes[o->ndim - 1] = 1;
    else
      o->ndim--;
  }
  return WK_OK;
}

/* triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction): one rank for all three. */
static wk_status meta_triplet_margin(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *ts[3] = {MT(0), MT(1), MT(2)};
  wk_dtype rt;
  wk_status s = check_reduction(MNAME, args[7].u.i);
  if (!s) s = float_result(op, args, 3, &rt);
  if (s) return s;
  if (ts[0]->ndim != ts[1]->ndim || ts[1]->ndim != ts[2]->ndim)
    return wk_error(WK_ERR_SHAPE,
                    "triplet_margin_loss(): All inputs should have same dimension but got %dD, %dD and %dD inputs.",
                    ts[0]->ndim, ts[1]->ndim, ts[2]->ndim);
  if (!(args[4].u.f >= 0))
    return wk_error(WK_ERR_INVALID_ARG, "triplet_margin_loss(): p must be non-negative, got %g", args[4].u.f);
  if ((s = drop_last("triplet_margin_loss()", ts, 3, false, o))) return s;
  loss_result(o, args[7].u.i, rt);
  return WK_OK;
}

/* multilabel_soft_margin_loss(self, target, weight?, reduction): target has self's shape (at least 1-d),
 * weight broadcasts to it; the none result drops the class (last) dim. */
static wk_status meta_multilabel_soft_margin(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *x = MT(0), *t = MT(1), *w = OPT(2);
  char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX];
  wk_dtype rt;
  wk_status s = check_reduction(MNAME, args[3].u.i);
  if (!s) s = float_result(op, args, 2, &rt);
  if (s) return s;
  if (x->ndim < 1)
    return wk_error(WK_ERR_SHAPE, "multilabel_soft_margin_loss(): expected an input of at least 1 dim (the classes), got a 0-d tensor");
  if (!same_sizes(x, t))
    return wk_error(WK_ERR_SHAPE, "multilabel_soft_margin_loss(): target of shape %s differs from the input shape %s",
                    wk__shape_str(t->sizes, t->ndim, a, sizeof a), wk__shape_str(x->sizes, x->ndim, b, sizeof b));
  if (w && !broadcasts_to(w, x))
    return wk_error(WK_ERR_SHAPE, "multilabel_soft_margin_loss(): weight of shape %s cannot be broadcast to the input shape %s",
                    wk__shape_str(w->sizes, w->ndim, a, sizeof a), wk__shape_str(x->sizes, x->ndim, b, sizeof b));
  if (w && (s = need_floating(op, "weight", w))) return s;
  wk__meta_like(o, x, rt);
  o->ndim--;
  loss_result(o, args[3].u.i, rt);
  return WK_OK;
}

/* multi_margin_loss(self, target, p, margin, weight?, reduction): ATen's checks. */
static wk_status meta_multi_margin(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *x = MT(0), *t = MT(1), *w = OPT(4);
  char a[WK_SHAPE_STR_MAX];
  wk_status s = check_reduction(MNAME, args[5].u.i);
  if (!s) s = need_floating(op, "input", x);
  if (s) return s;
  double p = args[2].tag == WK_V_INT ? (double)args[2].u.i : args[2].u.f;
  if (p != 1 && p != 2) return wk_error(WK_ERR_INVALID_ARG, "multi_margin_loss(): only p == 1 and p == 2 supported");
  if (!((x->ndim == 2 && x->sizes[1] != 0) || (x->ndim == 1 && x->sizes[0] != 0) || x->ndim == 0))
    return wk_error(WK_ERR_SHAPE,
                    "multi_margin_loss(): Expected non-empty vector or matrix with optional 0-dim batch size, but got: %s",
                    wk__shape_str(x->sizes, x->ndim, a, sizeof a));
  int64_t nframe = x->ndim == 2 ? x->sizes[0] : 1, dim = x->ndim == 0 ? 1 : x->sizes[x->ndim - 1];
  if (t->dtype != WK_I64)
    return wk_error(WK_ERR_DTYPE, "multi_margin_loss(): expected target of dtype int64, got %s", wk_dtype_name(t->dtype));
  if (t->ndim > 1 || numel_of(t->sizes, t->ndim) != nframe)
    return wk_error(WK_ERR_SHAPE, "multi_margin_loss(): inconsistent target size, expected %lld but got %s",
                    (long long)nframe, wk__shape_str(t->sizes, t->ndim, a, sizeof a));
  if (w && (w->ndim > 1 || numel_of(w->sizes, w->ndim) != dim))
    return wk_error(WK_ERR_SHAPE, "multi_margin_loss(): inconsistent weight size, expected %lld but got %s",
                    (long long)dim, wk__shape_str(w->sizes, w->ndim, a, sizeof a));
  if (w && (s = need_floating(op, "weight", w))) return s;
  int64_t n = nframe;
  wk__meta_shape(o, &n, args[5].u.i == 0 && t->ndim > 0 ? 1 : 0, x->dtype);
  return WK_OK;
}

/* cosine_similarity(x1, x2, dim, eps): broadcast, floating, dim of the broadcast shape reduced. */
static wk_status meta_cosine_similarity(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_dtype rt;
  wk_status s = float_result(op, args, 2, &rt);
  if (s) return s;
  wk_tensor *pair[2] = {MT(0), MT(1)};
  if ((s = wk__meta_broadcast("cosine_similarity()", pair, 2, o))) return s;
  int d;
  if ((s = wk_check_dim(MNAME, args[2].u.i, o->ndim, &d))) return s;
  if (o->ndim > 0) {
    memmove(o->sizes + d, o->sizes + d + 1, sizeof(int64_t) * (size_t)(o->ndim - d - 1));
    o->ndim--;
  }
  o->dtype = rt;
  return WK_OK;
}

/* pairwise_distance(x1, x2, p, eps, keepdim): the broadcast shape without (keepdim: with 1 as) its last dim. */
static wk_status meta_pairwise_distance(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_dtype rt;
  wk_status s = float_result(op, args, 2, &rt);
  if (s) return s;
  if (!(args[2].u.f >= 0))
    return wk_error(WK_ERR_INVALID_ARG, "pairwise_distance(): p must be non-negative, got %g", args[2].u.f);
  wk_tensor *pair[2] = {MT(0), MT(1)};
  if ((s = drop_last("pairwise_distance()", pair, 2, args[4].u.b, o))) return s;
  o->dtype = rt;
  return WK_OK;
}

/* cdist(x1 [B.., P, M], x2 [B.., R, M], p, compute_mode): ATen's checks; [B.., P, R]. */
static wk_status meta_cdist(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *a = MT(0), *b = MT(1);
  if (a->ndim < 2) return wk_error(WK_ERR_SHAPE, "cdist only supports at least 2D tensors, X1 got: %dD", a->ndim);
  if (b->ndim < 2) return wk_error(WK_ERR_SHAPE, "cdist only supports at least 2D tensors, X2 got: %dD", b->ndim);
  if (!wk_dtype_is_floating(a->dtype))
    return wk_error(WK_ERR_DTYPE, "cdist only supports floating-point dtypes, X1 got: %s", wk_dtype_name(a->dtype));
  if (!wk_dtype_is_floating(b->dtype))
    return wk_error(WK_ERR_DTYPE, "cdist only supports floating-point dtypes, X2 got: %s", wk_dtype_name(b->dtype));
  if (a->dtype != b->dtype)
    return wk_error(WK_ERR_DTYPE, "cdist(): X1 and X2 must have the same dtype, got %s and %s", wk_dtype_name(a->dtype),
                    wk_dtype_name(b->dtype));
  if (a->sizes[a->ndim - 1] != b->sizes[b->ndim - 1])
    return wk_error(WK_ERR_SHAPE, "cdist(): X1 and X2 must have the same number of columns. X1: %lld X2: %lld",
                    (long long)a->sizes[a->ndim - 1], (long long)b->sizes[b->ndim - 1]);
  if (!(args[2].u.f >= 0)) return wk_error(WK_ERR_INVALID_ARG, "cdist only supports non-negative p values");
  if (!MNONE(3) && (args[3].u.i < 0 || args[3].u.i > 2))
    return wk_error(WK_ERR_INVALID_ARG, "cdist(): possible modes: None, 0, 1, 2, but was: %lld", (long long)args[3].u.i);
  /* batch dims broadcast */
  int nb = (a->ndim > b->ndim ? a->ndim : b->ndim) - 2;
  int64_t out[WK_MAX_DIMS];
  for (int i = 0; i < nb; i++) {
    int ia = i - (nb - (a->ndim - 2)), ib = i - (nb - (b->ndim - 2));
    int64_t sa = ia >= 0 ? a->sizes[ia] : 1, sb = ib >= 0 ? b->sizes[ib] : 1;
    if (sa != sb && sa != 1 && sb != 1)
      return wk_error(WK_ERR_SHAPE, "cdist(): the batch dims of X1 and X2 do not broadcast (%lld and %lld at batch dim %d)",
                      (long long)sa, (long long)sb, i);
    out[i] = sa == 1 ? sb : sa;
  }
  out[nb] = a->sizes[a->ndim - 2];
  out[nb + 1] = b->sizes[b->ndim - 2];
  wk__meta_shape(o, out, nb + 2, a->dtype);
  return WK_OK;
}

static const wk__meta_row g_rows[] = {
    {"l1_loss", meta_elem_loss},
    {"smooth_l1_loss", meta_elem_loss},
    {"huber_loss", meta_elem_loss},
    {"soft_margin_loss", meta_elem_loss},
    {"kl_div", meta_elem_loss},
    {"binary_cross_entropy", meta_bce},
    {"poisson_nll_loss", meta_poisson_nll},
    {"gaussian_nll_loss", meta_gaussian_nll},
    {"margin_ranking_loss", meta_margin_ranking},
    {"hinge_embedding_loss", meta_hinge_embedding},
    {"cosine_embedding_loss", meta_cosine_embedding},
    {"triplet_margin_loss", meta_triplet_margin},
    {"multilabel_soft_margin_loss", meta_multilabel_soft_margin},
    {"multi_margin_loss", meta_multi_margin},
    {"cosine_similarity", meta_cosine_similarity},
    {"pairwise_distance", meta_pairwise_distance},
    {"cdist", meta_cdist},
};

const wk__meta_family wk__metas_nn_surface = {g_rows, sizeof g_rows / sizeof g_rows[0]};
