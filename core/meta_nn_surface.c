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

/* ---- interpolate -------------------------------------------------------------------------------- */

/* interpolate(input, size?, scale_factor?, mode, align_corners?, recompute_scale_factor?, antialias):
 * functional.py's checks; output sizes = size, or floor(in * scale) (in double, as Python). */
static wk_status meta_interpolate(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *x = MT(0);
  const char *m = args[3].u.s;
  char a[WK_SHAPE_STR_MAX];
  static const char *const modes[] = {"nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area"};
  int mi = -1;
  for (int i = 0; i < 7; i++)
    if (!strcmp(m, modes[i])) mi = i;
  if (mi < 0)
    return wk_error(WK_ERR_INVALID_ARG,
                    "interpolate(): mode '%s' is not one of nearest | nearest-exact | linear | bilinear | bicubic | "
                    "trilinear | area",
                    m);
  int nsp = x->ndim - 2;
  if (nsp < 1 || nsp > 3)
    return wk_error(WK_ERR_SHAPE,
                    "interpolate(): Input Error: Only 3D, 4D and 5D input Tensors supported (got %dD) for the modes: "
                    "nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact (got %s)",
                    x->ndim, m);
  if (!wk_dtype_is_floating(x->dtype))
    return wk_error(WK_ERR_DTYPE, "interpolate(): \"upsample_%s\" not implemented for '%s' (a floating input is needed)", m,
                    wk__dtype_word(x->dtype));
  bool interp = mi >= 2 && mi <= 5;
  if (!MNONE(4) && !interp)
    return wk_error(WK_ERR_INVALID_ARG,
                    "interpolate(): align_corners option can only be set with the interpolating modes: linear | "
                    "bilinear | bicubic | trilinear");
  static const int need[7] = {0, 0, 1, 2, 2, 3, 0};
  if (need[mi] && need[mi] != nsp)
    return wk_error(WK_ERR_SHAPE, "interpolate(): Got %dD input, but %s mode needs %dD input", x->ndim, m, need[mi] + 2);
  if (args[6].tag == WK_V_BOOL && args[6].u.b && mi != 3 && mi != 4)
    return wk_error(WK_ERR_INVALID_ARG, "interpolate(): Anti-alias option is only supported for bilinear and bicubic modes");
  bool hs = !MNONE(1), hf = !MNONE(2);
  if (hs && hf) return wk_error(WK_ERR_INVALID_ARG, "interpolate(): only one of size or scale_factor should be defined");
  if (!hs && !hf) return wk_error(WK_ERR_INVALID_ARG, "interpolate(): either size or scale_factor should be defined");
  if (hs && args[5].tag == WK_V_BOOL && args[5].u.b)
    return wk_error(WK_ERR_INVALID_ARG, "interpolate(): recompute_scale_factor is not meaningful with an explicit size.");
  const wk_value *v = hs ? &args[1] : &args[2];
  if (v->len != 1 && v->len != nsp) {
    if (hs)
      return wk_error(WK_ERR_SHAPE,
                      "interpolate(): Input and output must have the same number of spatial dimensions, but got input "
                      "with spatial dimensions of %s and output size of %d values",
                      wk__shape_str(x->sizes + 2, nsp, a, sizeof a), v->len);
    return wk_error(WK_ERR_SHAPE,
                    "interpolate(): Input and scale_factor must have the same number of spatial dimensions, but got "
                    "input with spatial dimensions of %s and scale_factor of %d values",
                    wk__shape_str(x->sizes + 2, nsp, a, sizeof a), v->len);
  }
  wk__meta_like(o, x, x->dtype);
  for (int i = 0; i < nsp; i++) {
    int64_t in = x->sizes[2 + i], out;
    if (hs) {
      out = v->u.ints[v->len == 1 ? 0 : i];
    } else {
      double s = v->u.floats[v->len == 1 ? 0 : i];
      if (!(s > 0) || !isfinite(s))
        return wk_error(WK_ERR_INVALID_ARG, "interpolate(): scale_factor must be positive and finite, got %g", s);
      out = (int64_t)floor((double)in * s);
    }
    if (in <= 0 || out <= 0)
      return wk_error(WK_ERR_SHAPE,
                      "interpolate(): Input and output sizes should be greater than 0, but got input %s and output "
                      "sizes %lld at spatial dim %d",
                      wk__shape_str(x->sizes + 2, nsp, a, sizeof a), (long long)out, i);
    o->sizes[2 + i] = out;
  }
  return WK_OK;
}

/* interpolate_backward(grad_output, input_size, scale_factor?, mode, align_corners?, recompute_scale_factor?,
 * antialias):
 * interpolate's input gradient, shaped input_size (upsample_*_backward in ATen). grad_output is the forward
 * result's shape: N and C of input_size and, where scale_factor drives the index math, floor(in * scale). */
static wk_status meta_interpolate_backward(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  wk_tensor *g = MT(0);
  const char *m = args[3].u.s;
  static const char *const modes[] = {"nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area"};
  int mi = -1;
  for (int i = 0; i < 7; i++)
    if (!strcmp(m, modes[i])) mi = i;
  if (mi < 0)
    return wk_error(WK_ERR_INVALID_ARG,
                    "interpolate_backward(): mode '%s' is not one of nearest | nearest-exact | linear | bilinear | "
                    "bicubic | trilinear | area",
                    m);
  const wk_value *is = &args[1];
  int nsp = is->len - 2;
  if (nsp < 1 || nsp > 3)
    return wk_error(WK_ERR_SHAPE, "interpolate_backward(): input_size must have 3, 4 or 5 values, got %d", is->len);
  if (g->ndim != is->len)
    return wk_error(WK_ERR_SHAPE, "interpolate_backward(): Expected grad_output to be a tensor of dimension %d but got: dimension %d",
                    is->len, g->ndim);
  if (!wk_dtype_is_floating(g->dtype))
    return wk_error(WK_ERR_DTYPE, "interpolate_backward(): \"upsample_%s_backward\" not implemented for '%s'", m,
                    wk__dtype_word(g->dtype));
  static const int need[7] = {0, 0, 1, 2, 2, 3, 0};
  if (need[mi] && need[mi] != nsp)
    return wk_error(WK_ERR_SHAPE, "interpolate_backward(): Got %dD input, but %s mode needs %dD input", is->len, m,
                    need[mi] + 2);
  bool interp = mi >= 2 && mi <= 5;
  if (!MNONE(4) && !interp)
    return wk_error(WK_ERR_INVALID_ARG,
                    "interpolate_backward(): align_corners option can only be set with the interpolating modes: linear "
                    "| bilinear | bicubic | trilinear");
  if (args[6].tag == WK_V_BOOL && args[6].u.b && mi != 3 && mi != 4)
    return wk_error(WK_ERR_INVALID_ARG,
                    "interpolate_backward(): Anti-alias option is only supported for bilinear and bicubic modes");
  bool use_scale = args[2].tag == WK_V_FLOATS && !(args[5].tag == WK_V_BOOL && args[5].u.b);
  if (args[2].tag == WK_V_FLOATS && args[2].len != 1 && args[2].len != nsp)
    return wk_error(WK_ERR_SHAPE, "interpolate_backward(): scale_factor must have 1 or %d values, got %d", nsp,
                    args[2].len);
  for (int d = 0; d < is->len; d++) {
    int64_t in = is->u.ints[d], want = in;
    if (in < 0 || (d >= 2 && in == 0))
      return wk_error(WK_ERR_SHAPE, "interpolate_backward(): input_size[%d] must be %s, got %lld", d,
                      d >= 2 ? "positive" : "non-negative", (long long)in);
    if (d >= 2 && use_scale) {
      double s = args[2].u.floats[args[2].len == 1 ? 0 : d - 2];
      if (!(s > 0) || !isfinite(s))
        return wk_error(WK_ERR_INVALID_ARG, "interpolate_backward(): scale_factor must be positive and finite, got %g", s);
      want = (int64_t)floor((double)in * s);
    } else if (d >= 2) {
      want = g->sizes[d] > 0 ? g->sizes[d] : 1;
    }
    if (g->sizes[d] != want)
      return wk_error(WK_ERR_SHAPE,
                      "interpolate_backward(): Expected grad_output to have the same shape as output; output.size(%d) = "
                      "%lld but got grad_output.size(%d) = %lld",
                      d, (long long)want, d, (long long)g->sizes[d]);
  }
  wk__meta_like(o, g, g->dtype);
  for (int d = 0; d < is->len; d++) o->sizes[d] = is->u.ints[d];
  return WK_OK;
}

/* ---- pools in 1 and 3 dims ---------------------------------------------------------------------- */

/* An int[N] argument (one value repeats; stride may be empty: the kernel) into v[nsp]. */
static wk_status nd_arg(wk_op *op, const char *what, const wk_value *a, int nsp, const int64_t *dflt, int64_t *v) {
  if (a->tag != WK_V_INTS || (a->len != 1 && a->len != nsp && !(dflt && a->len == 0)))
    return wk_error(WK_ERR_INVALID_ARG, "%s(): %s must be a single int or %d ints, got %d values", MNAME, what, nsp,
                    a->tag == WK_V_INTS ? a->len : 0);
  const int64_t *src = a->len == 0 ? dflt : a->u.ints;
  if (!src) return wk_error(WK_ERR_INVALID_ARG, "%s(): %s must be given", MNAME, what);
  for (int i = 0; i < nsp; i++) v[i] = src[a->len == 1 ? 0 : a->len == 0 ? i : i];
  return WK_OK;
}

/* PyTorch's pooling_output_shape. */
static int64_t pool_out_size(int64_t in, int64_t k, int64_t pad, int64_t s, int64_t d, bool ceil_mode) {
  int64_t num = in + 2 * pad - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t q = num / s;
  if (num % s != 0 && num < 0) q--;
  int64_t o = q + 1;
  if (ceil_mode && (o - 1) * s >= in + pad) o--;
  return o;
}

/* Checks of a pool over the last nsp dims of x (batched: nsp + 2 dims, or nsp + 1): kernel k, stride s,
 * padding p, dilation d (max) -> the result shape in o (dtype x's). */
static wk_status pool_nd(wk_op *op, const wk_tensor *x, int nsp, const int64_t *k, const int64_t *s, const int64_t *p,
                         const int64_t *d, bool ceil_mode, bool is_max, wk_meta_out *o) {
  char a[WK_SHAPE_STR_MAX];
  if (x->ndim != nsp + 1 && x->ndim != nsp + 2)
    return wk_error(WK_ERR_SHAPE, "%s(): Expected %dD or %dD (batch mode) tensor for input, but got %s", MNAME, nsp + 1,
                    nsp + 2, wk__shape_str(x->sizes, x->ndim, a, sizeof a));
  if (!wk_dtype_is_floating(x->dtype))
    return wk_error(WK_ERR_DTYPE, "%s(): \"%s\" not implemented for '%s'", MNAME, MNAME, wk__dtype_word(x->dtype));
  for (int i = 1; i < x->ndim; i++)
    if (x->sizes[i] == 0)
      return wk_error(WK_ERR_SHAPE, "%s(): Expected input with non-zero sizes except an optional batch dim, but got %s",
                      MNAME, wk__shape_str(x->sizes, x->ndim, a, sizeof a));
  wk__meta_like(o, x, x->dtype);
  for (int i = 0; i < nsp; i++) {
    if (k[i] <= 0) return wk_error(WK_ERR_INVALID_ARG, "%s(): kernel size should be greater than zero, but got %lld", MNAME, (long long)k[i]);
    if (s[i] <= 0) return wk_error(WK_ERR_INVALID_ARG, "%s(): stride should be greater than zero, but got %lld", MNAME, (long long)s[i]);
    if (d[i] <= 0) return wk_error(WK_ERR_INVALID_ARG, "%s(): dilation should be greater than zero, but got %lld", MNAME, (long long)d[i]);
    if (p[i] < 0) return wk_error(WK_ERR_INVALID_ARG, "%s(): pad must be non-negative, but got pad: %lld", MNAME, (long long)p[i]);
    if (is_max ? p[i] > ((k[i] - 1) * d[i] + 1) / 2 : p[i] > k[i] / 2)
      return wk_error(WK_ERR_INVALID_ARG,
                      "%s(): pad should be at most half of %skernel size, but got pad=%lld, kernel_size=%lld%s", MNAME,
                      is_max ? "effective " : "", (long long)p[i], (long long)k[i],
                      is_max ? " (and its dilation)" : "");
    int dim = x->ndim - nsp + i;
    int64_t out = pool_out_size(x->sizes[dim], k[i], p[i], s[i], d[i], ceil_mode);
    if (out < 1)
      return wk_error(WK_ERR_SHAPE, "%s(): Given input size %s, the calculated output size is %lld at spatial dim %d: Output size is too small",
                      MNAME, wk__shape_str(x->sizes, x->ndim, a, sizeof a), (long long)out, i);
    o->sizes[dim] = out;
  }
  return WK_OK;
}

static int op_nsp(wk_op *op) {
  const char *n = MNAME;
  return strstr(n, "3d") ? 3 : strstr(n, "2d") ? 2 : 1;
}

/* avg_pool1d / avg_pool3d (self, kernel_size, stride, padding, ceil_mode, count_include_pad[, divisor_override]) */
static wk_status meta_avg_pool_nd(wk_op *op, const wk_value *args, wk_meta_out *o) {
  int nsp = op_nsp(op);
  int64_t k[3], s[3], p[3], d[3] = {1, 1, 1};
  wk_status st = nd_arg(op, "kernel_size", &args[1], nsp, NULL, k);
  if (!st) st = nd_arg(op, "stride", &args[2], nsp, k, s);
  if (!st) st = nd_arg(op, "padding", &args[3], nsp, NULL, p);
  if (st) return st;
  if (nsp == 3 && !MNONE(6) && args[6].u.i == 0) return wk_error(WK_ERR_INVALID_ARG, "%s(): divisor must be not zero", MNAME);
  return pool_nd(op, MT(0), nsp, k, s, p, d, args[4].u.b, false, o);
}

/* max_pool1d_with_indices / max_pool3d_with_indices (self, kernel_size, stride, padding, dilation, ceil_mode) */
static wk_status meta_max_pool_nd(wk_op *op, const wk_value *args, wk_meta_out *o) {
  int nsp = op_nsp(op);
  int64_t k[3], s[3], p[3], d[3];
  wk_status st = nd_arg(op, "kernel_size", &args[1], nsp, NULL, k);
  if (!st) st = nd_arg(op, "stride", &args[2], nsp, k, s);
  if (!st) st = nd_arg(op, "padding", &args[3], nsp, NULL, p);
  if (!st) st = nd_arg(op, "dilation", &args[4], nsp, NULL, d);
  if (!st) st = pool_nd(op, MT(0), nsp, k, s, p, d, args[5].u.b, true, o);
  if (st) return st;
  o[1] = o[0];
  o[1].dtype = WK_I64;
  return WK_OK;
}

/* adaptive_avg_pool1d/3d, adaptive_max_pool1d/2d/3d (self, output_size) */
static wk_status meta_adaptive_nd(wk_op *op, const wk_value *args, wk_meta_out *o) {
  int nsp = op_nsp(op);
  wk_tensor *x = MT(0);
  char a[WK_SHAPE_STR_MAX];
  int64_t os[3];
  wk_status st = nd_arg(op, "output_size", &args[1], nsp, NULL, os);
  if (st) return st;
  if (x->ndim != nsp + 1 && x->ndim != nsp + 2)
    return wk_error(WK_ERR_SHAPE, "%s(): Expected %dD or %dD tensor, but got %s", MNAME, nsp + 1, nsp + 2,
                    wk__shape_str(x->sizes, x->ndim, a, sizeof a));
  if (!wk_dtype_is_floating(x->dtype))
    return wk_error(WK_ERR_DTYPE, "%s(): \"%s\" not implemented for '%s'", MNAME, MNAME, wk__dtype_word(x->dtype));
  for (int i = 1; i < x->ndim; i++)
    if (x->sizes[i] == 0)
      return wk_error(WK_ERR_SHAPE,
                      "%s(): Expected input to have non-zero size for non-batch dimensions, but input has sizes %s with "
                      "dimension %d being empty",
                      MNAME, wk__shape_str(x->sizes, x->ndim, a, sizeof a), i);
  wk__meta_like(o, x, x->dtype);
  for (int i = 0; i < nsp; i++) {
    if (os[i] < 0) return wk_error(WK_ERR_INVALID_ARG, "%s(): output_size must be non-negative, got %lld", MNAME, (long long)os[i]);
    o->sizes[x->ndim - nsp + i] = os[i];
  }
  if (strncmp(MNAME, "adaptive_max", 12) == 0) {
    o[1] = o[0];
    o[1].dtype = WK_I64;
  }
  return WK_OK;
}

/* ---- convolutions -------------------------------------------------------------------------------- */

/* conv1d/conv3d (input, weight, bias, stride, padding, dilation, groups) and conv_transpose1d/2d/3d
 * (input, weight, bias, stride, padding, output_padding, groups, dilation): ATen's _convolution checks. */
static wk_status meta_conv_nd(wk_op *op, const wk_value *args, wk_meta_out *o) {
  const char *name = MNAME;
  bool tr = !strncmp(name, "conv_transpose", 14);
  int nsp = op_nsp(op);
  wk_tensor *x = MT(0), *w = MT(1), *b = OPT(2);
  char a[WK_SHAPE_STR_MAX], c[WK_SHAPE_STR_MAX];
  int64_t st[3], pd[3], dl[3], op_[3] = {0, 0, 0}, g = args[tr ? 6 : 6].u.i;
  wk_status s = nd_arg(op, "stride", &args[3], nsp, NULL, st);
  if (!s) s = nd_arg(op, "padding", &args[4], nsp, NULL, pd);
  if (!s) s = nd_arg(op, "dilation", &args[tr ? 7 : 5], nsp, NULL, dl);
  if (!s && tr) s = nd_arg(op, "output_padding", &args[5], nsp, NULL, op_);
  if (s) return s;
  if (x->ndim != nsp + 1 && x->ndim != nsp + 2)
    return wk_error(WK_ERR_SHAPE, "%s(): Expected %dD (unbatched) or %dD (batched) input to %s, but got input of size: %s",
                    name, nsp + 1, nsp + 2, name, wk__shape_str(x->sizes, x->ndim, a, sizeof a));
  if (w->ndim != nsp + 2)
    return wk_error(WK_ERR_SHAPE, "%s(): Expected %dD weight, but got weight of size %s", name, nsp + 2,
                    wk__shape_str(w->sizes, w->ndim, a, sizeof a));
  if (!wk_dtype_is_floating(x->dtype) || w->dtype != x->dtype || (b && b->dtype != x->dtype))
    return wk_error(WK_ERR_DTYPE, "%s(): expected floating input, weight and bias of one dtype, got %s, %s and %s", name,
                    wk_dtype_name(x->dtype), wk_dtype_name(w->dtype), b ? wk_dtype_name(b->dtype) : "None");
  if (g <= 0) return wk_error(WK_ERR_INVALID_ARG, "%s(): non-positive groups is not supported", name);
  for (int i = 0; i < nsp; i++) {
    if (st[i] <= 0) return wk_error(WK_ERR_INVALID_ARG, "%s(): non-positive stride is not supported", name);
    if (pd[i] < 0) return wk_error(WK_ERR_INVALID_ARG, "%s(): negative padding is not supported", name);
    if (dl[i] <= 0) return wk_error(WK_ERR_INVALID_ARG, "%s(): dilation should be greater than zero", name);
    if (tr && (op_[i] < 0 || (op_[i] >= st[i] && op_[i] >= dl[i])))
      return wk_error(WK_ERR_INVALID_ARG, "%s(): output padding must be smaller than either stride or dilation, but got output_padding=%lld, stride=%lld, dilation=%lld",
                      name, (long long)op_[i], (long long)st[i], (long long)dl[i]);
  }
  bool unb = x->ndim == nsp + 1;
  int64_t N = unb ? 1 : x->sizes[0], C = x->sizes[unb ? 0 : 1];
  int64_t wantc = tr ? w->sizes[0] : w->sizes[1] * g, outc = tr ? w->sizes[1] * g : w->sizes[0];
  if (!tr && w->sizes[0] % g)
    return wk_error(WK_ERR_SHAPE, "%s(): Given groups=%lld, expected weight to be divisible by %lld at dimension 0, but got weight of size %s instead",
                    name, (long long)g, (long long)g, wk__shape_str(w->sizes, w->ndim, a, sizeof a));
  if (C != wantc || (tr && w->sizes[0] % g))
    return wk_error(WK_ERR_SHAPE, "%s(): Given %sgroups=%lld, weight of size %s, expected input%s to have %lld channels, but got %lld channels instead",
                    name, tr ? "transposed=1, " : "", (long long)g, wk__shape_str(w->sizes, w->ndim, a, sizeof a),
                    wk__shape_str(x->sizes, x->ndim, c, sizeof c), (long long)wantc, (long long)C);
  if (b && (b->ndim != 1 || b->sizes[0] != outc))
    return wk_error(WK_ERR_SHAPE, "%s(): Given weight of size %s, expected bias to be 1-dimensional with %lld elements, but got bias of size %s instead",
                    name, wk__shape_str(w->sizes, w->ndim, a, sizeof a), (long long)outc,
                    wk__shape_str(b->sizes, b->ndim, c, sizeof c));
  int64_t shape[5];
  int n = 0;
  if (!unb) shape[n++] = N;
  shape[n++] = outc;
  for (int i = 0; i < nsp; i++) {
    int64_t in = x->sizes[x->ndim - nsp + i], k = w->sizes[2 + i], out;
    if (tr) {
      out = (in - 1) * st[i] - 2 * pd[i] + dl[i] * (k - 1) + op_[i] + 1;
    } else {
      int64_t span = dl[i] * (k - 1) + 1;
      if (in + 2 * pd[i] < span)
        return wk_error(WK_ERR_SHAPE, "%s(): Calculated padded input size per channel: %lld. Kernel size: %lld. Kernel size can't be greater than actual input size",
                        name, (long long)(in + 2 * pd[i]), (long long)span);
      out = (in + 2 * pd[i] - span) / st[i] + 1;
    }
    if (out <= 0)
      return wk_error(WK_ERR_SHAPE, "%s(): the output size %lld at spatial dim %d is too small", name, (long long)out, i);
    shape[n++] = out;
  }
  wk__meta_shape(o, shape, n, x->dtype);
  return WK_OK;
}

/* conv1d/conv2d/conv3d.padding (input, weight, bias, stride, padding "same" | "valid", dilation, groups):
 * ATen's _convolution_mode. "valid" is padding 0; "same" (stride 1 only) pads dilation * (kernel - 1) in
 * total per dim, half on the left and the odd one on the right, so the output keeps the input's sizes. The
 * other checks are the int-padding convolution's (meta_conv_nd with the left padding). */
static wk_status meta_conv_padding(wk_op *op, const wk_value *args, wk_meta_out *o) {
  const char *pad = args[4].u.s;
  bool same = !strcmp(pad, "same");
  if (!same && strcmp(pad, "valid"))
    return wk_error(WK_ERR_INVALID_ARG, "%s(): Invalid padding string: '%s'", MNAME, pad);
  int nsp = op_nsp(op);
  int64_t st[3], dl[3], pl[3] = {0, 0, 0};
  wk_status s = nd_arg(op, "stride", &args[3], nsp, NULL, st);
  if (!s) s = nd_arg(op, "dilation", &args[5], nsp, NULL, dl);
  if (s) return s;
  const wk_tensor *w = MT(1);
  wk_tensor xp; /* the input as the convolution sees it: with the odd extra of "same" on the right */
  memcpy(&xp, MT(0), sizeof xp);
  if (same) {
    for (int i = 0; i < nsp; i++)
      if (st[i] != 1) return wk_error(WK_ERR_INVALID_ARG, "%s(): padding='same' is not supported for strided convolutions", MNAME);
    for (int i = 0; w->ndim == nsp + 2 && i < nsp; i++) {
      int64_t total = dl[i] * (w->sizes[2 + i] - 1);
      pl[i] = total / 2;
      if (xp.ndim >= nsp) xp.sizes[xp.ndim - nsp + i] += total - 2 * pl[i];
    }
  }
  wk_value a[7];
  memcpy(a, args, sizeof a);
  a[0] = WK_VT(&xp);
  a[4] = WK_VINTS(pl, nsp);
  if ((s = meta_conv_nd(op, a, o))) return s;
  if (same) /* the asymmetric extra on the right restores the input's sizes */
    for (int i = 0; i < nsp; i++) o->sizes[o->ndim - nsp + i] = MT(0)->sizes[MT(0)->ndim - nsp + i];
  return WK_OK;
}

/* ---- pixel_shuffle, pixel_unshuffle, channel_shuffle ------------------------------------------- */

static wk_status meta_pixel_shuffle(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *x = MT(0);
  bool un = MNAME[6] == 'u';
  int64_t r = args[1].u.i;
  if (x->ndim < 3)
    return wk_error(WK_ERR_SHAPE, "%s(): expects input to have at least 3 dimensions, but got input with %d dimension(s)", MNAME, x->ndim);
  if (r <= 0)
    return wk_error(WK_ERR_INVALID_ARG, "%s(): %s factor must be > 0, but got %lld", MNAME, un ? "downscale" : "upscale", (long long)r);
  int b = x->ndim - 3;
  int64_t C = x->sizes[b], H = x->sizes[b + 1], W = x->sizes[b + 2];
  wk__meta_like(o, x, x->dtype);
  if (!un) {
    if (C % (r * r))
      return wk_error(WK_ERR_SHAPE, "pixel_shuffle(): expects its input's 'channel' dimension to be divisible by the square of upscale_factor, but input.size(-3)=%lld is not divisible by %lld",
                      (long long)C, (long long)(r * r));
    o->sizes[b] = C / (r * r), o->sizes[b + 1] = H * r, o->sizes[b + 2] = W * r;
  } else {
    if (H % r) return wk_error(WK_ERR_SHAPE, "pixel_unshuffle(): expects height to be divisible by downscale_factor, but input.size(-2)=%lld is not divisible by %lld", (long long)H, (long long)r);
    if (W % r) return wk_error(WK_ERR_SHAPE, "pixel_unshuffle(): expects width to be divisible by downscale_factor, but input.size(-1)=%lld is not divisible by %lld", (long long)W, (long long)r);
    o->sizes[b] = C * r * r, o->sizes[b + 1] = H / r, o->sizes[b + 2] = W / r;
  }
  return WK_OK;
}

static wk_status meta_channel_shuffle(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *x = MT(0);
  int64_t g = args[1].u.i;
  if (x->ndim < 3)
    return wk_error(WK_ERR_SHAPE, "channel_shuffle(): expects input to have at least 3 dimensions, but got input with %d dimension(s)", x->ndim);
  if (g <= 0) return wk_error(WK_ERR_INVALID_ARG, "channel_shuffle(): Number of groups to divide channels in must be positive. Value of groups:%lld", (long long)g);
  if (x->sizes[1] % g)
    return wk_error(WK_ERR_SHAPE, "channel_shuffle(): Number of channels must be divisible by groups. Got %lld channels and %lld groups.", (long long)x->sizes[1], (long long)g);
  (void)op;
  wk__meta_like(o, x, x->dtype);
  return WK_OK;
}

/* ---- normalizations ---------------------------------------------------------------------------- */

/* A per-channel vector (weight, bias, running statistics) of C elements. */
static wk_status channel_vec(wk_op *op, const char *what, const wk_tensor *t, int64_t C, wk_dtype dt) {
  char a[WK_SHAPE_STR_MAX];
  if (t->ndim != 1 || t->sizes[0] != C)
    return wk_error(WK_ERR_SHAPE, "%s(): Expected %s to be a vector of size equal to the number of channels in input, but got %s of shape %s and input of %lld channels",
                    MNAME, what, what, wk__shape_str(t->sizes, t->ndim, a, sizeof a), (long long)C);
  if (!wk_dtype_is_floating(t->dtype))
    return wk_error(WK_ERR_DTYPE, "%s(): expected a floating %s, got %s (input %s)", MNAME, what, wk_dtype_name(t->dtype), wk_dtype_name(dt));
  return WK_OK;
}

static wk_status meta_group_norm(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *x = MT(0);
  int64_t G = args[1].u.i;
  char a[WK_SHAPE_STR_MAX];
  if (x->ndim < 2)
    return wk_error(WK_ERR_SHAPE, "group_norm(): Expected at least 2 dimensions for input tensor but received %d", x->ndim);
  if (!wk_dtype_is_floating(x->dtype))
    return wk_error(WK_ERR_DTYPE, "group_norm(): expected a floating point input, got %s", wk_dtype_name(x->dtype));
  int64_t C = x->sizes[1];
  if (G <= 0 || C % G)
    return wk_error(WK_ERR_SHAPE, "group_norm(): Expected number of channels in input to be divisible by num_groups, but got input of shape %s and num_groups=%lld",
                    wk__shape_str(x->sizes, x->ndim, a, sizeof a), (long long)G);
  wk_status s;
  if (OPT(2) && (s = channel_vec(op, "weight", MT(2), C, x->dtype))) return s;
  if (OPT(3) && (s = channel_vec(op, "bias", MT(3), C, x->dtype))) return s;
  wk__meta_like(o, x, x->dtype);
  return WK_OK;
}

static wk_status meta_instance_norm(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *x = MT(0);
  if (x->ndim < 3)
    return wk_error(WK_ERR_SHAPE, "instance_norm(): Expected 3D or higher input (N, C, ...), got %dD", x->ndim);
  if (!wk_dtype_is_floating(x->dtype))
    return wk_error(WK_ERR_DTYPE, "instance_norm(): expected a floating point input, got %s", wk_dtype_name(x->dtype));
  int64_t C = x->sizes[1];
  static const char *const names[4] = {"weight", "bias", "running_mean", "running_var"};
  wk_status s;
  for (int i = 0; i < 4; i++)
    if (OPT(1 + i) && (s = channel_vec(op, names[i], MT(1 + i), C, x->dtype))) return s;
  if (!args[5].u.b && (!OPT(3) || !OPT(4)))
    return wk_error(WK_ERR_INVALID_ARG, "instance_norm(): Expected running_mean and running_var to be defined when use_input_stats is false");
  if (args[5].u.b) {
    int64_t n = 1;
    for (int i = 2; i < x->ndim; i++) n *= x->sizes[i];
    if (n <= 1 && numel_of(x->sizes, x->ndim) > 0)
      return wk_error(WK_ERR_SHAPE, "instance_norm(): Expected more than 1 spatial element when training, got input size %lld", (long long)n);
  }
  wk__meta_like(o, x, x->dtype);
  return WK_OK;
}

static wk_status meta_local_response_norm(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *x = MT(0);
  if (x->ndim < 3)
    return wk_error(WK_ERR_SHAPE, "local_response_norm(): Expected 3D or higher dimensionality input (got %d dimensions)", x->ndim);
  if (!wk_dtype_is_floating(x->dtype))
    return wk_error(WK_ERR_DTYPE, "local_response_norm(): expected a floating point input, got %s", wk_dtype_name(x->dtype));
  if (args[1].u.i <= 0)
    return wk_error(WK_ERR_INVALID_ARG, "local_response_norm(): size must be positive, got %lld", (long long)args[1].u.i);
  (void)op;
  wk__meta_like(o, x, x->dtype);
  return WK_OK;
}

/* alpha_dropout, feature_dropout, feature_alpha_dropout (input, p, train) */
static wk_status meta_dropout_variant(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *x = MT(0);
  double p = args[1].u.f;
  if (!(p >= 0 && p <= 1))
    return wk_error(WK_ERR_INVALID_ARG, "%s(): dropout probability has to be between 0 and 1, but got %g", MNAME, p);
  if (!wk_dtype_is_floating(x->dtype))
    return wk_error(WK_ERR_DTYPE, "%s(): expected a floating point input, got %s", MNAME, wk_dtype_name(x->dtype));
  if (MNAME[0] == 'f' && args[2].u.b && x->ndim < 2)
    return wk_error(WK_ERR_SHAPE, "%s(): Feature dropout requires at least 2 dimensions in the input", MNAME);
  wk__meta_like(o, x, x->dtype);
  return WK_OK;
}

/* ---- im2col, col2im, lp_pool1d/2d, max_unpool2d ------------------------------------------------- */

/* kernel_size, dilation, padding, stride pairs at args[a..a+3] (ATen's col2im_shape_check order). */
static wk_status fold_params(wk_op *op, const wk_value *args, int a, int64_t *k, int64_t *d, int64_t *p, int64_t *s) {
  wk_status st = nd_arg(op, "kernel_size", &args[a], 2, NULL, k);
  if (!st) st = nd_arg(op, "dilation", &args[a + 1], 2, NULL, d);
  if (!st) st = nd_arg(op, "padding", &args[a + 2], 2, NULL, p);
  if (!st) st = nd_arg(op, "stride", &args[a + 3], 2, NULL, s);
  if (st) return st;
  if (k[0] <= 0 || k[1] <= 0)
    return wk_error(WK_ERR_INVALID_ARG, "%s(): kernel size should be greater than zero, but got kernel_height: %lld kernel_width: %lld", MNAME, (long long)k[0], (long long)k[1]);
  if (s[0] <= 0 || s[1] <= 0)
    return wk_error(WK_ERR_INVALID_ARG, "%s(): stride should be greater than zero, but got stride_height: %lld stride_width: %lld", MNAME, (long long)s[0], (long long)s[1]);
  if (d[0] <= 0 || d[1] <= 0)
    return wk_error(WK_ERR_INVALID_ARG, "%s(): dilation should be greater than zero, but got dilation_height: %lld dilation_width: %lld", MNAME, (long long)d[0], (long long)d[1]);
  if (p[0] < 0 || p[1] < 0)
    return wk_error(WK_ERR_INVALID_ARG, "%s(): padding should be non-negative, but got pad_height: %lld pad_width: %lld", MNAME, (long long)p[0], (long long)p[1]);
  return WK_OK;
}

/* The sliding blocks over an (h, w) plane: both at least one. */
static wk_status blocks_of(wk_op *op, const int64_t *hw, const int64_t *k, const int64_t *d, const int64_t *p,
                           const int64_t *s, int64_t *o) {
  for (int i = 0; i < 2; i++) o[i] = (hw[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) / s[i] + 1;
  if (o[0] < 1 || o[1] < 1 || hw[0] + 2 * p[0] < d[0] * (k[0] - 1) + 1 || hw[1] + 2 * p[1] < d[1] * (k[1] - 1) + 1)
    return wk_error(WK_ERR_SHAPE,
                    "%s(): Given input with spatial size (%lld, %lld), kernel_size=(%lld, %lld), dilation=(%lld, %lld), "
                    "padding=(%lld, %lld), calculated shape of the array of sliding blocks as (%lld, %lld), but its "
                    "components must be at least one.",
                    MNAME, (long long)hw[0], (long long)hw[1], (long long)k[0], (long long)k[1], (long long)d[0],
                    (long long)d[1], (long long)p[0], (long long)p[1], (long long)o[0], (long long)o[1]);
  return WK_OK;
}

static wk_status meta_im2col(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *x = MT(0);
  char a[WK_SHAPE_STR_MAX];
  int64_t k[2], d[2], p[2], s[2], ob[2];
  wk_status st = fold_params(op, args, 1, k, d, p, s);
  if (st) return st;
  bool ok = (x->ndim == 3 || x->ndim == 4);
  for (int i = x->ndim - 3; ok && i < x->ndim; i++) ok = x->sizes[i] != 0;
  if (!ok)
    return wk_error(WK_ERR_SHAPE, "im2col(): Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but got: %s",
                    wk__shape_str(x->sizes, x->ndim, a, sizeof a));
  if ((st = blocks_of(op, x->sizes + x->ndim - 2, k, d, p, s, ob))) return st;
  int64_t shape[3];
  int n = 0;
  if (x->ndim == 4) shape[n++] = x->sizes[0];
  shape[n++] = x->sizes[x->ndim - 3] * k[0] * k[1];
  shape[n++] = ob[0] * ob[1];
  wk__meta_shape(o, shape, n, x->dtype);
  return WK_OK;
}

static wk_status meta_col2im(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *x = MT(0);
  char a[WK_SHAPE_STR_MAX];
  int64_t os[2], k[2], d[2], p[2], s[2], ob[2];
  wk_status st = nd_arg(op, "output_size", &args[1], 2, NULL, os);
  if (!st) st = fold_params(op, args, 2, k, d, p, s);
  if (st) return st;
  bool ok = (x->ndim == 2 || x->ndim == 3);
  for (int i = x->ndim - 2; ok && i < x->ndim; i++) ok = x->sizes[i] != 0;
  if (!ok)
    return wk_error(WK_ERR_SHAPE, "col2im(): Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero dimensions for input, but got: %s",
                    wk__shape_str(x->sizes, x->ndim, a, sizeof a));
  int64_t cols = x->sizes[x->ndim - 2], L = x->sizes[x->ndim - 1];
  if (cols % (k[0] * k[1]))
    return wk_error(WK_ERR_SHAPE, "col2im(): Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got input.size(1)=%lld and kernel_size=(%lld, %lld)",
                    (long long)cols, (long long)k[0], (long long)k[1]);
  if ((st = blocks_of(op, os, k, d, p, s, ob))) return st;
  if (ob[0] * ob[1] != L)
    return wk_error(WK_ERR_SHAPE, "col2im(): Given output_size=(%lld, %lld), kernel_size=(%lld, %lld), dilation=(%lld, %lld), padding=(%lld, %lld), stride=(%lld, %lld), expected size of input's dimension 2 to match the calculated number of sliding blocks %lld * %lld = %lld, but got input.size(2)=%lld.",
                    (long long)os[0], (long long)os[1], (long long)k[0], (long long)k[1], (long long)d[0], (long long)d[1],
                    (long long)p[0], (long long)p[1], (long long)s[0], (long long)s[1], (long long)ob[0], (long long)ob[1],
                    (long long)(ob[0] * ob[1]), (long long)L);
  int64_t shape[4];
  int n = 0;
  if (x->ndim == 3) shape[n++] = x->sizes[0];
  shape[n++] = cols / (k[0] * k[1]);
  shape[n++] = os[0];
  shape[n++] = os[1];
  wk__meta_shape(o, shape, n, x->dtype);
  return WK_OK;
}

/* lp_pool1d/2d(self, norm_type, kernel_size, stride, ceil_mode): avg_pool's checks, padding 0. */
static wk_status meta_lp_pool(wk_op *op, const wk_value *args, wk_meta_out *o) {
  int nsp = op_nsp(op);
  int64_t k[2], s[2], p[2] = {0, 0}, d[2] = {1, 1};
  wk_status st = nd_arg(op, "kernel_size", &args[2], nsp, NULL, k);
  if (!st) st = nd_arg(op, "stride", &args[3], nsp, k, s);
  if (st) return st;
  if (!(args[1].u.f != 0) || !isfinite(args[1].u.f))
    return wk_error(WK_ERR_INVALID_ARG, "%s(): norm_type must be a finite non-zero number, got %g", MNAME, args[1].u.f);
  return pool_nd(op, MT(0), nsp, k, s, p, d, args[4].u.b, false, o);
}

/* max_unpool2d(self, indices, output_size): indices int64 of self's shape, 3-d or 4-d. */
static wk_status meta_max_unpool2d(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *x = MT(0), *ix = MT(1);
  char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX];
  int64_t os[2] = {0, 0};
  wk_status st = nd_arg(op, "output_size", &args[2], 2, NULL, os);
  if (st) return st;
  if (args[2].len != 2)
    return wk_error(WK_ERR_INVALID_ARG, "max_unpool2d(): There should be exactly two elements (height, width) in output_size, but got %d elements.", args[2].len);
  if (ix->dtype != WK_I64)
    return wk_error(WK_ERR_DTYPE, "max_unpool2d(): elements in indices should be type int64 but got: %s", wk_dtype_name(ix->dtype));
  if (x->ndim != 3 && x->ndim != 4)
    return wk_error(WK_ERR_SHAPE, "max_unpool2d(): Input to max_unpooling2d should be a 3d or 4d Tensor, but got a tensor with %d dimensions.", x->ndim);
  if (x->ndim != ix->ndim || memcmp(x->sizes, ix->sizes, sizeof(int64_t) * (size_t)x->ndim))
    return wk_error(WK_ERR_SHAPE, "max_unpool2d(): Expected shape of indices to be same as that of the input tensor (%s) but got indices tensor with shape: %s",
                    wk__shape_str(x->sizes, x->ndim, a, sizeof a), wk__shape_str(ix->sizes, ix->ndim, b, sizeof b));
  if (!wk_dtype_is_floating(x->dtype))
    return wk_error(WK_ERR_DTYPE, "max_unpool2d(): expected a floating point input, got %s", wk_dtype_name(x->dtype));
  for (int i = 1; i < x->ndim; i++)
    if (x->sizes[i] <= 0)
      return wk_error(WK_ERR_SHAPE, "max_unpool2d(): Expected input to have non-zero size for non-batch dimensions, but got %s",
                      wk__shape_str(x->sizes, x->ndim, a, sizeof a));
  if (os[0] <= 0 || os[1] <= 0)
    return wk_error(WK_ERR_INVALID_ARG, "max_unpool2d(): output_size must be positive, got (%lld, %lld)", (long long)os[0], (long long)os[1]);
  wk__meta_like(o, x, x->dtype);
  o->sizes[x->ndim - 2] = os[0];
  o->sizes[x->ndim - 1] = os[1];
  return WK_OK;
}

/* ---- affine_grid, grid_sample ------------------------------------------------------------------- */

static wk_status meta_affine_grid(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *th = MT(0);
  char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX];
  const wk_value *sz = &args[1];
  if (!wk_dtype_is_floating(th->dtype))
    return wk_error(WK_ERR_DTYPE, "affine_grid(): Expected theta to have floating point type, but got %s", wk_dtype_name(th->dtype));
  if (sz->len != 4 && sz->len != 5)
    return wk_error(WK_ERR_INVALID_ARG, "affine_grid(): only supports 4D and 5D sizes, for 2D and 3D affine transforms, respectively. Got size of %d values.", sz->len);
  int nsp = sz->len - 2;
  if (th->ndim != 3 || th->sizes[0] != sz->u.ints[0] || th->sizes[1] != nsp || th->sizes[2] != nsp + 1)
    return wk_error(WK_ERR_SHAPE, "affine_grid(): Expected a batch of %dD affine matrices of shape Nx%dx%d for size %s. Got %s.",
                    nsp, nsp, nsp + 1, wk_sizes_str(sz->u.ints, sz->len, a, sizeof a), wk__shape_str(th->sizes, th->ndim, b, sizeof b));
  for (int i = 0; i < sz->len; i++)
    if (sz->u.ints[i] <= 0)
      return wk_error(WK_ERR_INVALID_ARG, "affine_grid(): Expected non-zero, positive output size. Got %s.", wk_sizes_str(sz->u.ints, sz->len, a, sizeof a));
  int64_t os[5];
  os[0] = sz->u.ints[0];
  for (int i = 0; i < nsp; i++) os[1 + i] = sz->u.ints[2 + i];
  os[1 + nsp] = nsp;
  wk__meta_shape(o, os, nsp + 2, th->dtype);
  (void)op;
  return WK_OK;
}

static wk_status meta_grid_sample(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *x = MT(0), *g = MT(1);
  char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX];
  const char *m = args[2].u.s, *pm = args[3].u.s;
  if (strcmp(m, "bilinear") && strcmp(m, "nearest") && strcmp(m, "bicubic"))
    return wk_error(WK_ERR_INVALID_ARG, "grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: '%s'", m);
  if (strcmp(pm, "zeros") && strcmp(pm, "border") && strcmp(pm, "reflection"))
    return wk_error(WK_ERR_INVALID_ARG, "grid_sample(): expected padding_mode to be 'zeros', 'border', or 'reflection', but got: '%s'", pm);
  if ((x->ndim != 4 && x->ndim != 5) || g->ndim != x->ndim)
    return wk_error(WK_ERR_SHAPE, "grid_sample(): expected 4D or 5D input and grid with same number of dimensions, but got input with sizes %s and grid with sizes %s",
                    wk__shape_str(x->sizes, x->ndim, a, sizeof a), wk__shape_str(g->sizes, g->ndim, b, sizeof b));
  int nsp = x->ndim - 2;
  if (g->sizes[g->ndim - 1] != nsp)
    return wk_error(WK_ERR_SHAPE, "grid_sample(): expected grid to have size %d in last dimension, but got grid with sizes %s", nsp,
                    wk__shape_str(g->sizes, g->ndim, a, sizeof a));
  if (g->sizes[0] != x->sizes[0])
    return wk_error(WK_ERR_SHAPE, "grid_sample(): expected grid and input to have same batch size, but got input with sizes %s and grid with sizes %s",
                    wk__shape_str(x->sizes, x->ndim, a, sizeof a), wk__shape_str(g->sizes, g->ndim, b, sizeof b));
  if (!wk_dtype_is_floating(x->dtype) || g->dtype != x->dtype)
    return wk_error(WK_ERR_DTYPE, "grid_sample(): expected input and grid to have the same floating dtype, but input has %s and grid has %s",
                    wk_dtype_name(x->dtype), wk_dtype_name(g->dtype));
  if (nsp == 3 && !strcmp(m, "bicubic"))
    return wk_error(WK_ERR_INVALID_ARG, "grid_sample(): bicubic interpolation only supports 4D input");
  for (int i = 0; i < nsp; i++)
    if (x->sizes[2 + i] <= 0)
      return wk_error(WK_ERR_SHAPE, "grid_sample(): expected input to have non-empty spatial dimensions, but input has sizes %s",
                      wk__shape_str(x->sizes, x->ndim, a, sizeof a));
  int64_t os[5] = {x->sizes[0], x->sizes[1], g->sizes[1], g->sizes[2], nsp == 3 ? g->sizes[3] : 0};
  wk__meta_shape(o, os, nsp + 2, x->dtype);
  (void)op;
  return WK_OK;
}

/* ---- embedding_bag ------------------------------------------------------------------------------ */

static wk_status meta_embedding_bag(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *w = MT(0), *ix = MT(1), *off = OPT(2), *psw = OPT(4);
  char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX];
  int64_t mode = args[3].u.i;
  static const char *const modes[3] = {"sum", "mean", "max"};
  if (mode < 0 || mode > 2)
    return wk_error(WK_ERR_INVALID_ARG, "embedding_bag(): mode must be 0 (sum), 1 (mean) or 2 (max), got %lld", (long long)mode);
  if (w->ndim != 2 || !wk_dtype_is_floating(w->dtype))
    return wk_error(WK_ERR_SHAPE, "embedding_bag(): expected a 2-D floating weight, got %s %s", wk_dtype_name(w->dtype),
                    wk__shape_str(w->sizes, w->ndim, a, sizeof a));
  if (ix->dtype != WK_I64 && ix->dtype != WK_I32)
    return wk_error(WK_ERR_DTYPE, "embedding_bag(): Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got %s instead",
                    wk_dtype_name(ix->dtype));
  if (ix->ndim != 1 && ix->ndim != 2)
    return wk_error(WK_ERR_SHAPE, "embedding_bag(): input has to be 1D or 2D Tensor, but got Tensor of dimension %d", ix->ndim);
  int64_t B;
  if (ix->ndim == 2) {
    if (off) return wk_error(WK_ERR_INVALID_ARG, "embedding_bag(): if input is 2D, then offsets has to be None, as input is treated is a mini-batch of fixed length sequences.");
    B = ix->sizes[0];
  } else {
    if (!off) return wk_error(WK_ERR_INVALID_ARG, "embedding_bag(): offsets has to be a 1D Tensor but got None");
    if (off->ndim != 1 || (off->dtype != WK_I64 && off->dtype != WK_I32))
      return wk_error(WK_ERR_SHAPE, "embedding_bag(): offsets has to be a 1D Tensor of int32 or int64, but got %s %s",
                      wk_dtype_name(off->dtype), wk__shape_str(off->sizes, off->ndim, a, sizeof a));
    B = off->sizes[0] - (args[5].u.b ? 1 : 0);
    if (B < 0) return wk_error(WK_ERR_SHAPE, "embedding_bag(): include_last_offset needs at least one offset");
  }
  if (psw) {
    if (mode != 0)
      return wk_error(WK_ERR_INVALID_ARG, "embedding_bag(): per_sample_weights was not None. per_sample_weights is only supported for mode='sum' (got mode='%s'). Please open a feature request on GitHub.", modes[mode]);
    if (psw->ndim != ix->ndim || memcmp(psw->sizes, ix->sizes, sizeof(int64_t) * (size_t)ix->ndim) || psw->dtype != w->dtype)
      return wk_error(WK_ERR_SHAPE, "embedding_bag(): expected per_sample_weights of the indices' shape %s and the weight's dtype %s, got %s %s",
                      wk__shape_str(ix->sizes, ix->ndim, a, sizeof a), wk_dtype_name(w->dtype), wk_dtype_name(psw->dtype),
                      wk__shape_str(psw->sizes, psw->ndim, b, sizeof b));
  }
  if (!MNONE(6) && (args[6].u.i < -w->sizes[0] || args[6].u.i >= w->sizes[0]))
    return wk_error(WK_ERR_INDEX, "embedding_bag(): padding_idx must be within the number of embeddings, got %lld", (long long)args[6].u.i);
  int64_t os[2] = {B, w->sizes[1]};
  wk__meta_shape(o, os, 2, w->dtype);
  return WK_OK;
}

/* ---- ctc_loss ---------------------------------------------------------------------------------- */

static wk_status meta_ctc_loss(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *lp = MT(0), *tg = MT(1), *il = MT(2), *tl = MT(3);
  char a[WK_SHAPE_STR_MAX];
  wk_status s = check_reduction(MNAME, args[5].u.i);
  if (s) return s;
  if (lp->ndim != 3 || !wk_dtype_is_floating(lp->dtype))
    return wk_error(WK_ERR_SHAPE, "ctc_loss(): expected floating log_probs of shape [T, N, C], got %s %s", wk_dtype_name(lp->dtype),
                    wk__shape_str(lp->sizes, lp->ndim, a, sizeof a));
  int64_t N = lp->sizes[1], C = lp->sizes[2];
  if (args[4].u.i < 0 || args[4].u.i >= C) return wk_error(WK_ERR_INDEX, "ctc_loss(): blank must be in label range");
  if ((tg->dtype != WK_I64 && tg->dtype != WK_I32) || (tg->ndim != 1 && tg->ndim != 2) || (tg->ndim == 2 && tg->sizes[0] != N))
    return wk_error(WK_ERR_SHAPE, "ctc_loss(): expected integer targets of shape [N, S] with N = %lld, or concatenated 1-d, got %s %s",
                    (long long)N, wk_dtype_name(tg->dtype), wk__shape_str(tg->sizes, tg->ndim, a, sizeof a));
  const wk_tensor *ls[2] = {il, tl};
  static const char *const names[2] = {"input_lengths", "target_lengths"};
  for (int i = 0; i < 2; i++)
    if ((ls[i]->dtype != WK_I64 && ls[i]->dtype != WK_I32) || ls[i]->ndim != 1 || ls[i]->sizes[0] != N)
      return wk_error(WK_ERR_SHAPE, "ctc_loss(): %s must be of size batch_size (%lld) and of an integer dtype, got %s %s", names[i],
                      (long long)N, wk_dtype_name(ls[i]->dtype), wk__shape_str(ls[i]->sizes, ls[i]->ndim, a, sizeof a));
  wk__meta_shape(o, &N, args[5].u.i == 0 ? 1 : 0, lp->dtype);
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
    {"interpolate", meta_interpolate},
    {"interpolate_backward", meta_interpolate_backward},
    {"avg_pool1d", meta_avg_pool_nd},
    {"avg_pool3d", meta_avg_pool_nd},
    {"adaptive_avg_pool1d", meta_adaptive_nd},
    {"adaptive_avg_pool3d", meta_adaptive_nd},
    {"max_pool1d_with_indices", meta_max_pool_nd},
    {"max_pool3d_with_indices", meta_max_pool_nd},
    {"adaptive_max_pool1d", meta_adaptive_nd},
    {"adaptive_max_pool2d", meta_adaptive_nd},
    {"adaptive_max_pool3d", meta_adaptive_nd},
    {"conv1d", meta_conv_nd},
    {"conv3d", meta_conv_nd},
    {"conv1d.padding", meta_conv_padding},
    {"conv2d.padding", meta_conv_padding},
    {"conv3d.padding", meta_conv_padding},
    {"conv_transpose1d", meta_conv_nd},
    {"conv_transpose2d", meta_conv_nd},
    {"conv_transpose3d", meta_conv_nd},
    {"pixel_shuffle", meta_pixel_shuffle},
    {"pixel_unshuffle", meta_pixel_shuffle},
    {"channel_shuffle", meta_channel_shuffle},
    {"group_norm", meta_group_norm},
    {"instance_norm", meta_instance_norm},
    {"local_response_norm", meta_local_response_norm},
    {"alpha_dropout", meta_dropout_variant},
    {"feature_dropout", meta_dropout_variant},
    {"feature_alpha_dropout", meta_dropout_variant},
    {"im2col", meta_im2col},
    {"col2im", meta_col2im},
    {"lp_pool1d", meta_lp_pool},
    {"lp_pool2d", meta_lp_pool},
    {"max_unpool2d", meta_max_unpool2d},
    {"affine_grid", meta_affine_grid},
    {"grid_sample", meta_grid_sample},
    {"embedding_bag", meta_embedding_bag},
    {"ctc_loss", meta_ctc_loss},
};

const wk__meta_family wk__metas_nn_surface = {g_rows, sizeof g_rows / sizeof g_rows[0]};
