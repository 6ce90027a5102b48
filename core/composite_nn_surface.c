/* Composite kernels of issue 21's nn and loss surface: interpolate (nearest, nearest-exact, linear,
 * bilinear, bicubic, trilinear, area), pools in 1 and 3 dims and the adaptive max pools, conv1d/conv3d
 * and the transposed convolutions (as conv2d calls), pixel_shuffle/unshuffle, channel_shuffle, group_norm,
 * instance_norm, local_response_norm, the dropout variants; the losses (l1, smooth_l1, huber,
 * soft_margin, kl_div, binary_cross_entropy, poisson_nll, gaussian_nll, margin_ranking,
 * hinge_embedding, cosine_embedding, triplet_margin, multilabel_soft_margin, multi_margin) and the
 * distances (cosine_similarity, pairwise_distance, cdist), written with other ops the way
 * PyTorch 1.13 writes them (its CompositeImplicit decompositions in ATen's Loss.cpp and
 * Distance.cpp, and torch/nn/functional.py), registered by the core for every device at fallback
 * priority. The ops are tagged composite, so autograd records the parts and the gradients are
 * the parts' (equal to PyTorch's formulas away from the kinks). Arguments were checked by the
 * meta functions (meta_nn_surface.c); checks that need values (a probability outside [0, 1], a
 * class index out of range, a negative variance) read one flag back from the device. */
#include <math.h>
#include <string.h>

#include "internal.h"
#include "composite_kernel.h"

#define OPT(n) (args[n].tag == WK_V_TENSOR ? args[n].u.t : NULL)

/* Ends a kernel with an error already recorded. */
#define FAIL_K() wk__composite_finish(outs, (wk_tensor *const[]){NULL}, 1, depth__)

/* Losses compute in float32 (float64 for float64 results), as the existing loss composites. */
static wk_dtype compute_dtype(wk_dtype dt) {
  return dt == WK_F64 ? WK_F64 : WK_F32;
}
static wk_tensor *in_cd(wk_tensor *t, wk_dtype cd) {
  return t ? wk_to_dtype(t, cd) : NULL;
}

/* The elementwise loss L reduced (0 none, 1 mean, 2 sum; sums in float64) in dtype rt. */
static wk_tensor *reduce_loss(wk_tensor *L, int64_t reduction, wk_dtype rt) {
  if (!L) return NULL;
  if (reduction == 0) return wk_to_dtype(L, rt);
  wk_tensor *tot = wkx_sum(L, WK_F64);
  if (tot && reduction == 1) tot = wk_div_scalar(tot, (double)wk_tensor_numel(L));
  return tot ? wk_to_dtype(tot, rt) : NULL;
}

/* True when any element of the bool tensor flag is set: read back to the host (false on meta,
 * which has no values). *failed is set when the read failed. */
static bool any_set(wk_tensor *flag, wk_device dev, bool *failed) {
  if (dev.type == WK_DEVICE_META || !flag) {
    *failed = !flag;
    return false;
  }
  double v = 0;
  wk_tensor *a = wk_any(flag);
  if (!a || wk_item(a, &v)) {
    *failed = true;
    return false;
  }
  return v != 0;
}

/* ---- elementwise losses ------------------------------------------------------------------- */

/* l1_loss, smooth_l1_loss, huber_loss, soft_margin_loss (self, target, reduction[, beta/delta]). */
static wk_status k_elem_loss(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  const char *name = wk_op_name(c->op);
  wk_dtype rt = c->meta[0].dtype, cd = compute_dtype(rt);
  BEGIN_K;
  wk_tensor *x = in_cd(T(0), cd), *t = in_cd(T(1), cd), *L = NULL;
  if (name[0] == 's' && name[1] == 'o') { /* soft_margin: log1p(exp(-target * self)), no target gradient (PyTorch's) */
    L = t ? wk_log1p(wk_exp(wk_neg(wk_mul(wk_detach(t), x)))) : NULL;
  } else {
    wk_tensor *z = wk_abs(wk_sub(x, t));
    bool param = name[0] == 'h' || name[1] == 'm'; /* huber_loss, smooth_l1_loss: beta / delta at args[3] */
    double b = param ? args[3].u.f : 0;
    if (name[0] == 'l' || (name[0] == 's' && b == 0)) {
      L = z; /* l1, and smooth_l1 with beta 0 (PyTorch's l1 path) */
    } else if (name[0] == 's') { /* z < beta ? 0.5 z^2 / beta : z - 0.5 beta */
      L = wk_where(wk_lt_scalar(z, b), wk_div_scalar(wk_mul_scalar(wk_mul(z, z), 0.5), b), wk_sub_scalar(z, 0.5 * b));
    } else { /* huber: z < delta ? 0.5 z^2 : delta (z - 0.5 delta) */
      L = wk_where(wk_lt_scalar(z, b), wk_mul_scalar(wk_mul(z, z), 0.5), wk_mul_scalar(wk_sub_scalar(z, 0.5 * b), b));
    }
  }
  return FINISH1(reduce_loss(L, args[2].u.i, rt));
}

/* kl_div(self, target, reduction, log_target): log_target ? exp(t) (t - self) : xlogy(t, t) - t self,
 * with xlogy(t, t) = 0 where t == 0 (written with a safe log so the gradient stays finite). */
static wk_status k_kl_div(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  wk_dtype rt = c->meta[0].dtype, cd = compute_dtype(rt);
  BEGIN_K;
  wk_tensor *x = in_cd(T(0), cd), *t = in_cd(T(1), cd), *L;
  if (args[3].u.b) {
    L = wk_mul(wk_exp(t), wk_sub(t, x));
  } else {
    wk_tensor *zero = wk_eq_scalar(t, 0);
    wk_tensor *safe = wk_where(zero, wk_ones_like(t, (wk_options){.dtype = cd, .device = c->device}), t);
    L = wk_sub(wk_mul(t, wk_log(safe)), wk_mul(t, x));
  }
  return FINISH1(reduce_loss(L, args[2].u.i, rt));
}

/* binary_cross_entropy(self, target, weight?, reduction): (t - 1) max(log(1 - x), -100) - t max(log x, -100),
 * times weight; every input element must lie in [0, 1] (PyTorch's check, read back). */
static wk_status k_bce(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  wk_dtype rt = c->meta[0].dtype, cd = compute_dtype(rt);
  BEGIN_K;
  wk_tensor *x = in_cd(T(0), cd), *t = in_cd(T(1), cd);
  bool failed = false;
  wk_tensor *bad = x ? wk_logical_or(wk_lt_scalar(x, 0), wk_gt_scalar(x, 1)) : NULL;
  if (any_set(bad, c->device, &failed) && !failed) {
    wk_error(WK_ERR_INVALID_ARG, "binary_cross_entropy(): all elements of input should be between 0 and 1");
    return FAIL_K();
  }
  if (failed) return FAIL_K();
  wk_tensor *l1 = wkx_clamp_min(wk_log(wk_neg(wk_sub_scalar(x, 1))), WK_VF(-100));
  wk_tensor *l0 = wkx_clamp_min(wk_log(x), WK_VF(-100));
  wk_tensor *L = wk_sub(wk_mul(wk_sub_scalar(t, 1), l1), wk_mul(t, l0));
  if (OPT(2)) L = wk_mul(L, in_cd(T(2), cd));
  return FINISH1(reduce_loss(L, args[3].u.i, rt));
}

/* poisson_nll_loss(input, target, log_input, full, eps, reduction):
 * log_input ? exp(x) - t x : x - t log(x + eps); full adds Stirling's t log t - t + log(2 pi t) / 2 where t > 1. */
static wk_status k_poisson_nll(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  wk_dtype rt = c->meta[0].dtype, cd = compute_dtype(rt);
  BEGIN_K;
  wk_tensor *x = in_cd(T(0), cd), *t = in_cd(T(1), cd), *L;
  if (args[2].u.b)
    L = wk_sub(wk_exp(x), wk_mul(t, x));
  else
    L = wk_sub(x, wk_mul(t, wk_log(wk_add_scalar(x, args[4].u.f))));
  if (args[3].u.b) {
    wk_tensor *big = wk_gt_scalar(t, 1);
    wk_tensor *ts = wk_where(big, t, wk_ones_like(t, (wk_options){.dtype = cd, .device = c->device}));
    wk_tensor *st = wk_add(wk_sub(wk_mul(ts, wk_log(ts)), ts), wk_mul_scalar(wk_log(wk_mul_scalar(ts, 2 * M_PI)), 0.5));
    L = wk_add(L, wkx_masked_fill__Scalar(st, wk_logical_not(big), WK_VI(0)));
  }
  return FINISH1(reduce_loss(L, args[5].u.i, rt));
}

/* gaussian_nll_loss(input, target, var, full, eps, reduction): 0.5 (log v + (x - t)^2 / v) (+ 0.5 log 2 pi),
 * v = var clamped at eps without a gradient through the clamp (functional.py's no_grad clamp_). */
static wk_status k_gaussian_nll(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  wk_dtype rt = c->meta[0].dtype, cd = compute_dtype(rt);
  BEGIN_K;
  wk_tensor *x = in_cd(T(0), cd), *t = in_cd(T(1), cd), *v = in_cd(T(2), cd);
  bool failed = false;
  if (any_set(v ? wk_lt_scalar(v, 0) : NULL, c->device, &failed) && !failed) {
    wk_error(WK_ERR_INVALID_ARG, "gaussian_nll_loss(): var has negative entry/entries");
    return FAIL_K();
  }
  if (failed) return FAIL_K();
  if (v && x && v->ndim == x->ndim - 1) v = wk_unsqueeze(v, -1); /* one variance per row (homoscedastic) */
  wk_tensor *vc = wkx_clamp_min(v, WK_VF(args[4].u.f));
  vc = vc ? wk_add(v, wk_detach(wk_sub(vc, v))) : NULL; /* clamp's value, identity's gradient */
  wk_tensor *d = wk_sub(x, t);
  wk_tensor *L = wk_mul_scalar(wk_add(wk_log(vc), wk_div(wk_mul(d, d), vc)), 0.5);
  if (args[3].u.b) L = wk_add_scalar(L, 0.5 * log(2 * M_PI));
  return FINISH1(reduce_loss(L, args[5].u.i, rt));
}

/* margin_ranking_loss(input1, input2, target, margin, reduction): max(0, -t (x1 - x2) + margin). */
static wk_status k_margin_ranking(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  wk_dtype rt = c->meta[0].dtype, cd = compute_dtype(rt);
  BEGIN_K;
  wk_tensor *a = in_cd(T(0), cd), *b = in_cd(T(1), cd), *t = in_cd(T(2), cd);
  wk_tensor *L = wkx_clamp_min(wk_add_scalar(wk_neg(wk_mul(t, wk_sub(a, b))), args[3].u.f), WK_VI(0));
  return FINISH1(reduce_loss(L, args[4].u.i, rt));
}

/* hinge_embedding_loss(self, target, margin, reduction):
 * where(t != 1, max(0, margin - x), 0) + where(t != -1, x, 0). */
static wk_status k_hinge_embedding(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  wk_dtype rt = c->meta[0].dtype, cd = compute_dtype(rt);
  BEGIN_K;
  wk_tensor *x = in_cd(T(0), cd), *t = T(1);
  wk_tensor *zeros = wk_zeros_like(x, (wk_options){.dtype = cd, .device = c->device});
  wk_tensor *mc = wkx_clamp_min(wk_add_scalar(wk_neg(x), args[2].u.f), WK_VI(0));
  wk_tensor *L = wk_add(wk_where(wkx_ne__Scalar(t, WK_VI(1)), mc, zeros), wk_where(wkx_ne__Scalar(t, WK_VI(-1)), x, zeros));
  return FINISH1(reduce_loss(L, args[3].u.i, rt));
}

/* cosine_embedding_loss(input1, input2, target, margin, reduction), ATen's formula:
 * cos = sum(x1 x2) / sqrt((sum(x1^2) + 1e-12) (sum(x2^2) + 1e-12)) along the last dim;
 * where(t == 1, 1 - cos, 0) + where(t == -1, max(0, cos - margin), 0). */
static wk_status k_cosine_embedding(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  wk_dtype rt = c->meta[0].dtype, cd = compute_dtype(rt);
  BEGIN_K;
  wk_tensor *a = in_cd(T(0), cd), *b = in_cd(T(1), cd), *t = T(2);
  int64_t d = t->ndim;
  wk_tensor *prod = wk_sum_dim(wk_mul(a, b), &d, 1, false);
  wk_tensor *m1 = wk_add_scalar(wk_sum_dim(wk_mul(a, a), &d, 1, false), 1e-12);
  wk_tensor *m2 = wk_add_scalar(wk_sum_dim(wk_mul(b, b), &d, 1, false), 1e-12);
  wk_tensor *cs = wk_div(prod, wk_sqrt(wk_mul(m1, m2)));
  wk_tensor *zeros = wk_zeros_like(cs, (wk_options){.dtype = cd, .device = c->device});
  wk_tensor *pos = wk_where(wkx_eq__Scalar(t, WK_VI(1)), wk_neg(wk_sub_scalar(cs, 1)), zeros);
  wk_tensor *neg = wk_where(wkx_eq__Scalar(t, WK_VI(-1)), wkx_clamp_min(wk_sub_scalar(cs, args[3].u.f), WK_VI(0)), zeros);
  return FINISH1(reduce_loss(wk_add(pos, neg), args[4].u.i, rt));
}

/* pairwise_distance as ATen writes it: norm(x1 - x2 + eps, p) over the last dim of the broadcast
 * shape (a 0-d result for 0-d inputs reduces nothing: |x1 - x2 + eps|). */
static wk_tensor *pdist_of(wk_tensor *x1, wk_tensor *x2, double p, double eps, bool keepdim) {
  wk_tensor *d = wk_add_scalar(wk_sub(x1, x2), eps);
  if (!d) return NULL;
  if (d->ndim == 0) return p == 0 ? wk_to_dtype(wkx_ne__Scalar(d, WK_VI(0)), d->dtype) : wk_abs(d);
  int64_t last = d->ndim - 1;
  return wkx_norm(d, WK_VF(p), &last, 1, keepdim);
}

static wk_status k_pairwise_distance(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  wk_dtype rt = c->meta[0].dtype;
  BEGIN_K;
  wk_tensor *r = pdist_of(in_cd(T(0), rt), in_cd(T(1), rt), args[2].u.f, args[3].u.f, args[4].u.b);
  return FINISH1(r);
}

/* triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction):
 * max(margin + d(a, p) - d(a, n), 0), d(a, n) replaced by min(d(a, n), d(p, n)) with swap. */
static wk_status k_triplet_margin(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  wk_dtype rt = c->meta[0].dtype, cd = compute_dtype(rt);
  BEGIN_K;
  wk_tensor *a = in_cd(T(0), cd), *po = in_cd(T(1), cd), *ne = in_cd(T(2), cd);
  double p = args[4].u.f, eps = args[5].u.f;
  wk_tensor *dp = pdist_of(a, po, p, eps, false), *dn = pdist_of(a, ne, p, eps, false);
  if (args[6].u.b) dn = wkx_minimum(dn, pdist_of(po, ne, p, eps, false));
  wk_tensor *L = wkx_clamp_min(wk_sub(wk_add_scalar(dp, args[3].u.f), dn), WK_VI(0));
  return FINISH1(reduce_loss(L, args[7].u.i, rt));
}

/* multilabel_soft_margin_loss(self, target, weight?, reduction) (functional.py):
 * -(t logsigmoid(x) + (1 - t) logsigmoid(-x)) (times weight), summed over the class (last) dim / C. */
static wk_status k_multilabel_soft_margin(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  wk_dtype rt = c->meta[0].dtype, cd = compute_dtype(rt);
  BEGIN_K;
  wk_tensor *x = in_cd(T(0), cd), *t = in_cd(T(1), cd);
  wk_tensor *L = wk_neg(wk_add(wk_mul(t, wkx_log_sigmoid(x)), wk_mul(wk_neg(wk_sub_scalar(t, 1)), wkx_log_sigmoid(wk_neg(x)))));
  if (OPT(2)) L = wk_mul(L, in_cd(T(2), cd));
  int64_t cdim = x ? x->ndim - 1 : 0, C = x && x->ndim ? x->sizes[cdim] : 1;
  if (L && L->ndim) L = wk_div_scalar(wk_sum_dim(L, &cdim, 1, false), (double)C);
  return FINISH1(reduce_loss(L, args[3].u.i, rt));
}

/* multi_margin_loss(self, target, p, margin, weight?, reduction): for each row,
 * sum over i != y of max(0, margin - x[y] + x[i])^p (times weight[y]) / C. */
static wk_status k_multi_margin(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  wk_dtype rt = c->meta[0].dtype, cd = compute_dtype(rt);
  BEGIN_K;
  wk_tensor *x = in_cd(T(0), cd), *tg = T(1);
  if (x && x->ndim < 2) x = wk_reshape(x, (const int64_t[]){1, -1}, 2);
  int64_t C = x ? x->sizes[1] : 0, N = x ? x->sizes[0] : 0, all = -1;
  wk_tensor *t = wk_reshape(tg, &all, 1);
  bool failed = false;
  if (t && any_set(wk_logical_or(wk_lt_scalar(t, 0), wkx_ge__Scalar(t, WK_VI(C))), c->device, &failed) && !failed) {
    wk_error(WK_ERR_INDEX, "multi_margin_loss(): target out of range (every target must lie in [0, %lld))",
             (long long)C);
    return FAIL_K();
  }
  if (failed) return FAIL_K();
  wk_tensor *t2 = wk_unsqueeze(t, 1);
  double p = args[2].tag == WK_V_INT ? (double)args[2].u.i : args[2].u.f;
  double margin = args[3].tag == WK_V_INT ? (double)args[3].u.i : args[3].u.f;
  wk_tensor *xy = wk_gather(x, 1, t2);
  wk_tensor *z = wkx_clamp_min(wk_add_scalar(wk_sub(x, xy), margin), WK_VI(0));
  if (p == 2) z = wk_mul(z, z);
  if (OPT(4)) z = wk_mul(z, wk_unsqueeze(wk_index_select(in_cd(T(4), cd), 0, t), 1));
  wk_tensor *own = t2 ? wkx_eq(wk_unsqueeze(wk_arange_int(0, C, 1, (wk_options){.dtype = WK_I64, .device = c->device}), 0), t2)
                      : NULL;
  z = wkx_masked_fill__Scalar(z, own, WK_VI(0));
  int64_t one = 1;
  wk_tensor *L = wk_div_scalar(wk_sum_dim(z, &one, 1, false), (double)C);
  if (L && T(0)->ndim < 2 && args[5].u.i == 0) L = wk_reshape(L, c->meta[0].sizes, c->meta[0].ndim);
  (void)N;
  return FINISH1(reduce_loss(L, args[5].u.i, rt));
}

/* ---- distances -------------------------------------------------------------------------- */

/* cosine_similarity(x1, x2, dim, eps), ATen's: sum(x1 x2) / sqrt(max(|x1|^2, eps^2) max(|x2|^2, eps^2))
 * over dim of the broadcast shape. */
static wk_status k_cosine_similarity(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  wk_dtype rt = c->meta[0].dtype;
  BEGIN_K;
  wk_tensor *a = in_cd(T(0), rt), *b = in_cd(T(1), rt);
  int nd = a && b ? (a->ndim > b->ndim ? a->ndim : b->ndim) : 0;
  int64_t d = args[2].u.i < 0 ? args[2].u.i + nd : args[2].u.i;
  double e2 = args[3].u.f * args[3].u.f;
  wk_tensor *ab = wk_mul(a, b); /* the broadcast shape: both inputs expanded to it (ATen's) */
  if (ab) a = wk_expand(a, ab->sizes, ab->ndim), b = wk_expand(b, ab->sizes, ab->ndim);
  wk_tensor *w12 = wk_sum_dim(ab, &d, 1, false);
  wk_tensor *n1 = wkx_clamp_min(wk_sum_dim(wk_mul(a, a), &d, 1, false), WK_VF(e2));
  wk_tensor *n2 = wkx_clamp_min(wk_sum_dim(wk_mul(b, b), &d, 1, false), WK_VF(e2));
  wk_tensor *r = wk_mul(w12, wk_rsqrt(wk_mul(n1, n2)));
  return FINISH1(r ? wk_reshape(r, c->meta[0].sizes, c->meta[0].ndim) : NULL);
}

/* cdist(x1 [.., P, M], x2 [.., R, M], p): the p-norm of every row difference, [.., P, R]. */
static wk_status k_cdist(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  BEGIN_K;
  wk_tensor *a = T(0), *b = T(1);
  wk_tensor *d = wk_sub(wk_unsqueeze(a, -2), wk_unsqueeze(b, -3)); /* [.., P, R, M] */
  int64_t last = -1;
  wk_tensor *r = d && d->sizes[d->ndim - 1] == 0 ? wk_zeros(c->meta[0].sizes, c->meta[0].ndim,
                                                            (wk_options){.dtype = c->meta[0].dtype, .device = c->device})
                                                 : wkx_norm(d, WK_VF(args[2].u.f), &last, 1, false);
  return FINISH1(r ? wk_reshape(r, c->meta[0].sizes, c->meta[0].ndim) : NULL);
}

/* ---- separable gathers: interpolate, adaptive/avg/max pools in 1, 2 and 3 dims ----------------------- */
/* Every one of these reads, per spatial dim, K input positions for each output position (a box or a
 * kernel is a product of per-dim intervals), so it runs one dim at a time: index_select of the taps,
 * then a weighted sum (interpolation, averages) or a max with its position (max pools) over them. */

/* One dim's taps: output o reads input position idx[o * K + k] with weight w[o * K + k]. */
typedef struct {
  int64_t out, K;
  int64_t *idx;
  double *w;
} taps;

static void taps_free(taps *t) {
  wk_free(t->idx);
  wk_free(t->w);
  t->idx = NULL;
  t->w = NULL;
}
static bool taps_alloc(taps *t, int64_t out, int64_t K) {
  size_t n = (size_t)(out * K > 0 ? out * K : 1);
  t->out = out, t->K = K;
  t->idx = wk_malloc(n * sizeof(int64_t));
  t->w = wk_malloc(n * sizeof(double));
  if (t->idx && t->w) return true;
  taps_free(t);
  wk_error(WK_ERR_NO_MEMORY, "out of memory allocating %zu interpolation taps", n);
  return false;
}

/* A host array as a tensor of dtype `to` on dev (shape s). */
static wk_tensor *host_tensor(const void *data, wk_dtype dt, const int64_t *s, int nd, wk_dtype to, wk_device dev) {
  wk_tensor *t = wk_tensor_from_data(data, dt, s, nd);
  if (t && to != dt) t = wk_to_dtype(t, to);
  if (t && dev.type != WK_DEVICE_CPU) t = wk_to_device(t, dev);
  return t;
}

/* The taps of the last dim of x: [.., in] -> [.., out, K]. */
static wk_tensor *gather_last(wk_tensor *x, const taps *tp, wk_device dev) {
  int64_t n = tp->out * tp->K, s[WK_MAX_DIMS + 1];
  int nd = x ? x->ndim : 0;
  wk_tensor *y = x ? wk_index_select(x, nd - 1, host_tensor(tp->idx, WK_I64, &n, 1, WK_I64, dev)) : NULL;
  if (!y) return NULL;
  memcpy(s, x->sizes, sizeof(int64_t) * (size_t)(nd - 1));
  s[nd - 1] = tp->out;
  s[nd] = tp->K;
  return wk_reshape(y, s, nd + 1);
}

/* x with dim moved last (a transposed view), and back. */
static wk_tensor *dim_last(wk_tensor *x, int dim) {
  return !x || dim == x->ndim - 1 ? x : wk_transpose(x, dim, x->ndim - 1);
}

/* sum_k w[o, k] x[idx[o, k]] along dim (weights in x's dtype), computed along the last dim (the dim
 * transposed there and back): an index_select, a trailing-broadcast multiply, a last-dim sum. */
static wk_tensor *taps_sum(wk_tensor *x, int dim, const taps *tp, wk_device dev) {
  if (!x) return NULL;
  wk_tensor *xt = dim_last(x, dim);
  int nd = x->ndim;
  wk_tensor *r;
  if (tp->K == 1) { /* nearest: the weights are all 1 */
    int64_t n = tp->out;
    r = xt ? wk_index_select(xt, nd - 1, host_tensor(tp->idx, WK_I64, &n, 1, WK_I64, dev)) : NULL;
  } else {
    int64_t ws[2] = {tp->out, tp->K}, last = -1;
    wk_tensor *y = gather_last(xt, tp, dev), *w = host_tensor(tp->w, WK_F64, ws, 2, x->dtype, dev);
    if (tp->K > 4) {
      r = y && w ? wk_sum_dim(wk_mul(y, w), &last, 1, false) : NULL;
    } else { /* a few taps: products of the tap slices summed directly (a reduction over 2-4 elements
              * per output costs more than the adds) */
      r = NULL;
      for (int64_t k = 0; k < tp->K && y && w; k++) {
        wk_tensor *term = wk_mul(wk_select(y, y->ndim - 1, k), wk_select(w, 1, k));
        r = !term ? NULL : r ? wk_add(r, term) : term;
        if (!r) break;
      }
    }
  }
  return dim_last(r, dim);
}

/* The max over the taps along dim, and its input position: *ix (the flat position within the dims
 * from dim on, or NULL before the first dim) becomes pos * stride + the position chosen before.
 * Computed along the last dim, as taps_sum. */
static wk_tensor *taps_max(wk_tensor *v, wk_tensor **ix, int dim, const taps *tp, int64_t stride, wk_device dev) {
  wk_tensor *y = gather_last(dim_last(v, dim), tp, dev), *am = NULL;
  if (!y) return NULL;
  wk_tensor *mv = wkx_max__dim(y, y->ndim - 1, true, &am);
  int64_t ts[2] = {tp->out, tp->K};
  wk_tensor *pos = host_tensor(tp->idx, WK_I64, ts, 2, WK_I64, dev);
  pos = pos ? wk_expand(pos, y->sizes, y->ndim) : NULL;
  wk_tensor *p = am && pos ? wkx_mul__Scalar(wk_gather(pos, y->ndim - 1, am), WK_VI(stride)) : NULL;
  if (*ix) {
    wk_tensor *prev = gather_last(dim_last(*ix, dim), tp, dev);
    p = prev && p ? wk_add(p, wk_gather(prev, y->ndim - 1, am)) : NULL;
  }
  *ix = p ? dim_last(wk_squeeze_dim(p, y->ndim - 1), dim) : NULL;
  return mv ? dim_last(wk_squeeze_dim(mv, y->ndim - 1), dim) : NULL;
}

/* PyTorch's area_pixel_compute_scale / area_pixel_compute_source_index, in T (float for float32 and
 * bfloat16 inputs, double for float64: ATen's opmath type). */
#define WK__DEF_SRC(T, SUF)                                                                      \
  static T area_scale_##SUF(int64_t in, int64_t out, bool align, bool has, double s) {          \
    if (align) return out > 1 ? (T)(in - 1) / (T)(out - 1) : (T)0;                              \
    return has && s > 0 ? (T)(1.0 / s) : (T)in / (T)out;                                         \
  }                                                                                              \
  static T area_src_##SUF(T scale, int64_t o, bool align, bool cubic) {                          \
    if (align) return scale * (T)o;                                                              \
    T v = scale * ((T)o + (T)0.5) - (T)0.5;                                                      \
    return (!cubic && v < 0) ? (T)0 : v;                                                         \
  }                                                                                              \
  static void linear_tap_##SUF(int64_t in, int64_t out, int64_t o, bool align, bool has, double s, \
                               int64_t *i0, int64_t *i1, double *l0, double *l1) {              \
    if (out == in) {                                                                             \
      *i0 = *i1 = o, *l0 = 1, *l1 = 0;                                                           \
      return;                                                                                    \
    }                                                                                            \
    T real = area_src_##SUF(area_scale_##SUF(in, out, align, has, s), o, align, false);         \
    *i0 = (int64_t)real < in - 1 ? (int64_t)real : in - 1;                                       \
    *i1 = *i0 + (*i0 < in - 1 ? 1 : 0);                                                          \
    T lam = real - (T)*i0;                                                                       \
    lam = lam < 0 ? 0 : lam > 1 ? 1 : lam;                                                       \
    *l1 = (double)lam, *l0 = (double)((T)1 - lam);                                               \
  }                                                                                              \
  static void cubic_tap_##SUF(int64_t in, int64_t out, int64_t o, bool align, bool has, double s, \
                              int64_t *idx, double *w) {                                         \
    T real = area_src_##SUF(area_scale_##SUF(in, out, align, has, s), o, align, true);          \
    int64_t i = (int64_t)floor((double)real);                                                    \
    T t = real - (T)i, A = (T)-0.75, x1 = t + 1, x2 = 1 - t, x3 = 2 - t;                        \
    T c[4] = {((A * x1 - 5 * A) * x1 + 8 * A) * x1 - 4 * A, ((A + 2) * t - (A + 3)) * t * t + 1, \
              ((A + 2) * x2 - (A + 3)) * x2 * x2 + 1, ((A * x3 - 5 * A) * x3 + 8 * A) * x3 - 4 * A}; \
    for (int j = 0; j < 4; j++) {                                                                \
      int64_t p = i - 1 + j;                                                                     \
      idx[j] = p < 0 ? 0 : p > in - 1 ? in - 1 : p;                                              \
      w[j] = (double)c[j];                                                                       \
    }                                                                                            \
  }
WK__DEF_SRC(float, f)
WK__DEF_SRC(double, d)

/* Antialiased bilinear / bicubic taps (ATen's _compute_indices_weights_aa, in T): a filter (triangle, or cubic
 * with a = -0.5) stretched by the scale when downsampling, over the input positions within its support around
 * the output's centre, normalised to sum 1; K = 2 ceil(support) + 1 slots, the unused ones weight 0. */
#define WK__DEF_AA(T, SUF)                                                                       \
  static T aa_filter_##SUF(T x, bool cubic) {                                                   \
    x = x < 0 ? -x : x;                                                                          \
    if (!cubic) return x < 1 ? 1 - x : 0;                                                        \
    const T a = (T)-0.5;                                                                         \
    if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;                                       \
    if (x < 2) return (((x - 5) * x + 8) * x - 4) * a;                                           \
    return 0;                                                                                    \
  }                                                                                              \
  static int64_t aa_size_##SUF(int64_t in, int64_t out, bool align, bool has, double s, bool cubic) { \
    T scale = area_scale_##SUF(in, out, align, has, s), half = cubic ? 2 : 1;                   \
    T support = scale >= 1 ? half * scale : half;                                                \
    return (int64_t)ceilf((float)support) * 2 + 1;                                               \
  }                                                                                              \
  static void aa_tap_##SUF(int64_t in, int64_t out, int64_t o, bool align, bool has, double s, bool cubic, \
                           int64_t K, int64_t *idx, double *w) {                                 \
    T scale = area_scale_##SUF(in, out, align, has, s), half = cubic ? 2 : 1;                   \
    T support = scale >= 1 ? half * scale : half, center = scale * ((T)o + (T)0.5);             \
    T invscale = scale >= 1 ? (T)1 / scale : (T)1, total = 0;                                    \
    int64_t xmin = (int64_t)(center - support + (T)0.5), xmax = (int64_t)(center + support + (T)0.5); \
    if (xmin < 0) xmin = 0;                                                                      \
    int64_t xsize = (xmax < in ? xmax : in) - xmin;                                              \
    if (xsize > K) xsize = K;                                                                    \
    for (int64_t j = 0; j < xsize; j++)                                                          \
      total += aa_filter_##SUF(((T)(j + xmin) - center + (T)0.5) * invscale, cubic);            \
    for (int64_t j = 0; j < K; j++) {                                                            \
      bool on = j < xsize;                                                                       \
      T v = on ? aa_filter_##SUF(((T)(j + xmin) - center + (T)0.5) * invscale, cubic) : 0;      \
      idx[j] = on ? xmin + j : (xmin < in ? xmin : in - 1);                                      \
      w[j] = (double)(on && total != 0 ? v / total : on ? v : 0);                                \
    }                                                                                            \
  }
WK__DEF_AA(float, f)
WK__DEF_AA(double, d)

enum { IM_NEAREST, IM_NEAREST_EXACT, IM_LINEAR, IM_CUBIC, IM_AREA };

/* One spatial dim's taps of interpolate (in -> out; scale s when has; align_corners; antialias for the linear and
 * cubic modes). */
static bool interp_taps(taps *tp, int mode, int64_t in, int64_t out, bool align, bool has, double s, bool dbl,
                        bool aa) {
  int64_t K = mode == IM_LINEAR ? 2 : mode == IM_CUBIC ? 4 : 1;
  if (aa && (mode == IM_LINEAR || mode == IM_CUBIC)) {
    bool cubic = mode == IM_CUBIC;
    K = dbl ? aa_size_d(in, out, align, has, s, cubic) : aa_size_f(in, out, align, has, s, cubic);
    if (!taps_alloc(tp, out, K)) return false;
    for (int64_t o = 0; o < out; o++) {
      if (dbl)
        aa_tap_d(in, out, o, align, has, s, cubic, K, tp->idx + o * K, tp->w + o * K);
      else
        aa_tap_f(in, out, o, align, has, s, cubic, K, tp->idx + o * K, tp->w + o * K);
    }
    return true;
  }
  if (mode == IM_AREA)
    for (int64_t o = 0; o < out; o++) {
      int64_t st = (o * in) / out, en = ((o + 1) * in - 1) / out + 1;
      if (en - st > K) K = en - st;
    }
  if (!taps_alloc(tp, out, K)) return false;
  for (int64_t o = 0; o < out; o++) {
    int64_t *ix = tp->idx + o * K;
    double *w = tp->w + o * K;
    switch (mode) {
      case IM_NEAREST:
      case IM_NEAREST_EXACT: { /* ATen's nearest_idx / nearest_exact_idx, in float */
        float sc = has && s > 0 ? (float)(1.0 / s) : (float)in / (float)out;
        int64_t src;
        if (mode == IM_NEAREST && out == in)
          src = o;
        else if (mode == IM_NEAREST && out == 2 * in)
          src = o >> 1;
        else if (mode == IM_NEAREST)
          src = (int64_t)floorf((float)o * sc);
        else
          src = (int64_t)floorf((float)(((double)o + 0.5) * sc));
        ix[0] = src < in - 1 ? src : in - 1;
        w[0] = 1;
        break;
      }
      case IM_LINEAR:
        if (dbl)
          linear_tap_d(in, out, o, align, has, s, &ix[0], &ix[1], &w[0], &w[1]);
        else
          linear_tap_f(in, out, o, align, has, s, &ix[0], &ix[1], &w[0], &w[1]);
        break;
      case IM_CUBIC:
        if (dbl)
          cubic_tap_d(in, out, o, align, has, s, ix, w);
        else
          cubic_tap_f(in, out, o, align, has, s, ix, w);
        break;
      default: { /* area: adaptive average over [start, end) */
        int64_t st = (o * in) / out, en = ((o + 1) * in - 1) / out + 1;
        for (int64_t k = 0; k < K; k++) {
          ix[k] = k < en - st ? st + k : st;
          w[k] = k < en - st ? 1.0 / (double)(en - st) : 0;
        }
      }
    }
  }
  return true;
}

/* interpolate(input, size?, scale_factor?, mode, align_corners?, recompute_scale_factor?): the meta
 * function decided the output sizes (c->meta[0]); scales reach the index math unless recomputed. */
static wk_status k_interpolate(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  const char *m = args[3].u.s;
  int mode = !strcmp(m, "nearest")         ? IM_NEAREST
             : !strcmp(m, "nearest-exact") ? IM_NEAREST_EXACT
             : !strcmp(m, "bicubic")       ? IM_CUBIC
             : !strcmp(m, "area")          ? IM_AREA
                                           : IM_LINEAR;
  bool align = args[4].tag == WK_V_BOOL && args[4].u.b;
  bool use_scale = args[2].tag == WK_V_FLOATS && !(args[5].tag == WK_V_BOOL && args[5].u.b);
  bool aa = args[6].tag == WK_V_BOOL && args[6].u.b;
  wk_dtype dt = c->meta[0].dtype, cd = dt == WK_F64 ? WK_F64 : WK_F32;
  BEGIN_K;
  wk_tensor *x = T(0);
  int nsp = x->ndim - 2;
  wk_tensor *y = mode == IM_NEAREST || mode == IM_NEAREST_EXACT ? x : wk_to_dtype(x, cd);
  for (int i = nsp - 1; i >= 0 && y; i--) {
    int d = 2 + i;
    double s = use_scale ? args[2].u.floats[args[2].len == 1 ? 0 : i] : 0;
    taps tp = {0};
    if (!interp_taps(&tp, mode, x->sizes[d], c->meta[0].sizes[d], align, use_scale, s, dt == WK_F64, aa)) return FAIL_K();
    y = taps_sum(y, d, &tp, c->device);
    taps_free(&tp);
  }
  return FINISH1(y ? wk_contiguous(wk_to_dtype(y, dt)) : NULL);
}

/* The transpose of taps_sum along dim: sum_o w[o, k] g[o] added into position idx[o, k] (index_add per tap), a
 * tensor with in positions along dim. */
static wk_tensor *taps_sum_t(wk_tensor *g, int dim, int64_t in, const taps *tp, wk_device dev) {
  if (!g) return NULL;
  wk_tensor *gt = dim_last(g, dim);
  int nd = g->ndim;
  int64_t zs[WK_MAX_DIMS], n = tp->out;
  memcpy(zs, gt->sizes, sizeof(int64_t) * (size_t)nd);
  zs[nd - 1] = in;
  wk_tensor *acc = wk_zeros(zs, nd, (wk_options){.dtype = g->dtype, .device = dev});
  int64_t *col = wk_malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
  double *wc = wk_malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
  if (!col || !wc) {
    wk_free(col);
    wk_free(wc);
    wk_error(WK_ERR_NO_MEMORY, "interpolate_backward(): out of memory for %lld taps", (long long)n);
    return NULL;
  }
  for (int64_t k = 0; k < tp->K && acc; k++) {
    for (int64_t o = 0; o < n; o++) col[o] = tp->idx[o * tp->K + k], wc[o] = tp->w[o * tp->K + k];
    wk_tensor *ix = host_tensor(col, WK_I64, &n, 1, WK_I64, dev), *w = host_tensor(wc, WK_F64, &n, 1, g->dtype, dev);
    wk_tensor *src = ix && w ? wk_mul(gt, w) : NULL;
    acc = src ? C1("index_add", WK_VT(acc), WK_VI(nd - 1), WK_VT(ix), WK_VT(src)) : NULL;
  }
  wk_free(col);
  wk_free(wc);
  return dim_last(acc, dim);
}

/* interpolate_backward(grad_output, input_size, scale_factor?, mode, align_corners?, recompute_scale_factor?): the
 * forward's taps transposed, one spatial dim at a time in the reverse order of k_interpolate's. */
static wk_status k_interpolate_backward(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  const char *m = args[3].u.s;
  int mode = !strcmp(m, "nearest")         ? IM_NEAREST
             : !strcmp(m, "nearest-exact") ? IM_NEAREST_EXACT
             : !strcmp(m, "bicubic")       ? IM_CUBIC
             : !strcmp(m, "area")          ? IM_AREA
                                           : IM_LINEAR;
  bool align = args[4].tag == WK_V_BOOL && args[4].u.b;
  bool use_scale = args[2].tag == WK_V_FLOATS && !(args[5].tag == WK_V_BOOL && args[5].u.b);
  bool aa = args[6].tag == WK_V_BOOL && args[6].u.b;
  wk_dtype dt = c->meta[0].dtype, cd = dt == WK_F64 ? WK_F64 : WK_F32;
  BEGIN_K;
  wk_tensor *g = wk_to_dtype(T(0), cd);
  const int64_t *is = args[1].u.ints;
  int nsp = args[1].len - 2;
  for (int i = 0; i < nsp && g; i++) {
    int d = 2 + i;
    double s = use_scale ? args[2].u.floats[args[2].len == 1 ? 0 : i] : 0;
    taps tp = {0};
    if (!interp_taps(&tp, mode, is[d], T(0)->sizes[d], align, use_scale, s, dt == WK_F64, aa)) return FAIL_K();
    g = taps_sum_t(g, d, is[d], &tp, c->device);
    taps_free(&tp);
  }
  return FINISH1(g ? wk_contiguous(wk_to_dtype(g, dt)) : NULL);
}

/* The pooling geometry of one spatial dim. */
typedef struct {
  int64_t k, s, p, d;
  bool ceil;
} pool_dim;

/* avg_pool taps: weights 1 / (count_include_pad ? the window clipped to the padding : the window
 * clipped to the input), or 1 with a divisor_override (divided once afterwards). */
static bool avg_taps(taps *tp, int64_t in, int64_t out, const pool_dim *g, bool cip, bool override) {
  if (!taps_alloc(tp, out, g->k)) return false;
  for (int64_t o = 0; o < out; o++) {
    int64_t hs = o * g->s - g->p, he = hs + g->k < in + g->p ? hs + g->k : in + g->p, pool = he - hs;
    int64_t vs = hs > 0 ? hs : 0, ve = he < in ? he : in, cnt = ve - vs;
    for (int64_t k = 0; k < g->k; k++) {
      int64_t p = hs + k;
      bool ok = p >= vs && p < ve;
      tp->idx[o * g->k + k] = ok ? p : (vs < in ? vs : in - 1);
      tp->w[o * g->k + k] = !ok ? 0 : override ? 1 : 1.0 / (double)(cip ? pool : cnt);
    }
  }
  return true;
}

/* max_pool taps (dilation): the window's positions inside the input; the others repeat its first. */
static bool max_taps(taps *tp, int64_t in, int64_t out, const pool_dim *g) {
  if (!taps_alloc(tp, out, g->k)) return false;
  for (int64_t o = 0; o < out; o++) {
    int64_t hs = o * g->s - g->p, first = hs;
    while (first < 0) first += g->d;
    if (first > in - 1) first = in - 1;
    for (int64_t k = 0; k < g->k; k++) {
      int64_t p = hs + k * g->d;
      tp->idx[o * g->k + k] = p >= 0 && p < in ? p : first;
    }
  }
  return true;
}

/* adaptive max taps: [start, end) of each output, padded with its start. */
static bool adaptive_taps(taps *tp, int64_t in, int64_t out) {
  return interp_taps(tp, IM_AREA, in, out, false, false, 0, true, false);
}

/* The pool parameters at args[ka..]: kernel_size, stride ([] = kernel), padding, then dilation at
 * args[kd] (kd < 0: 1), ceil_mode at args[kc]; nsp spatial dims. Checked by the meta function. */
static void pool_dims(const wk_value *args, int ka, int kd, int kc, int nsp, pool_dim *g) {
  for (int i = 0; i < nsp; i++) {
    const wk_value *kv = &args[ka], *sv = &args[ka + 1], *pv = &args[ka + 2];
    g[i].k = kv->u.ints[kv->len == 1 ? 0 : i];
    g[i].s = sv->len == 0 ? g[i].k : sv->u.ints[sv->len == 1 ? 0 : i];
    g[i].p = pv->u.ints[pv->len == 1 ? 0 : i];
    g[i].d = kd < 0 ? 1 : args[kd].u.ints[args[kd].len == 1 ? 0 : i];
    g[i].ceil = args[kc].u.b;
  }
}

/* avg_pool1d (self, kernel_size, stride, padding, ceil_mode, count_include_pad) and
 * avg_pool3d (..., divisor_override). */
static wk_status k_avg_pool_nd(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  bool three = strstr(wk_op_name(c->op), "3d") != NULL;
  int nsp = three ? 3 : 1;
  pool_dim g[3];
  pool_dims(args, 1, -1, 4, nsp, g);
  bool cip = args[5].u.b, ov = three && args[6].tag == WK_V_INT;
  BEGIN_K;
  wk_tensor *x = T(0), *y = x;
  for (int i = nsp - 1; i >= 0 && y; i--) {
    int d = x->ndim - nsp + i;
    taps tp = {0};
    if (!avg_taps(&tp, x->sizes[d], c->meta[0].sizes[d], &g[i], cip, ov)) return FAIL_K();
    y = taps_sum(y, d, &tp, c->device);
    taps_free(&tp);
  }
  if (y && ov) y = wk_div_scalar(y, (double)args[6].u.i);
  return FINISH1(y ? wk_contiguous(y) : NULL);
}

/* adaptive_avg_pool1d / adaptive_avg_pool3d (self, output_size). */
static wk_status k_adaptive_avg_nd(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  int nsp = strstr(wk_op_name(c->op), "3d") ? 3 : 1;
  BEGIN_K;
  wk_tensor *x = T(0), *y = x;
  for (int i = nsp - 1; i >= 0 && y; i--) {
    int d = x->ndim - nsp + i;
    taps tp = {0};
    if (!interp_taps(&tp, IM_AREA, x->sizes[d], c->meta[0].sizes[d], false, false, 0, true, false)) return FAIL_K();
    y = taps_sum(y, d, &tp, c->device);
    taps_free(&tp);
  }
  return FINISH1(y ? wk_contiguous(y) : NULL);
}

/* max pools with indices: max_pool1d_with_indices / max_pool3d_with_indices (self, kernel_size,
 * stride, padding, dilation, ceil_mode), adaptive_max_pool1d/2d/3d (self, output_size). The index
 * is the position within each (n, c) plane of the input, as PyTorch's. */
static wk_status k_max_pool_nd(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  const char *name = wk_op_name(c->op);
  bool adaptive = !strncmp(name, "adaptive", 8);
  int nsp = strstr(name, "3d") ? 3 : strstr(name, "2d") ? 2 : 1;
  pool_dim g[3];
  if (!adaptive) pool_dims(args, 1, 4, 5, nsp, g);
  BEGIN_K;
  wk_tensor *x = T(0), *v = x, *ix = NULL;
  int64_t stride = 1;
  for (int i = nsp - 1; i >= 0 && v; i--) {
    int d = x->ndim - nsp + i;
    taps tp = {0};
    bool ok = adaptive ? adaptive_taps(&tp, x->sizes[d], c->meta[0].sizes[d])
                       : max_taps(&tp, x->sizes[d], c->meta[0].sizes[d], &g[i]);
    if (!ok) return FAIL_K();
    v = taps_max(v, &ix, d, &tp, stride, c->device);
    stride *= x->sizes[d];
    taps_free(&tp);
  }
  wk_tensor *r[2] = {v ? wk_contiguous(v) : NULL, ix ? wk_contiguous(ix) : NULL};
  return wk__composite_finish(outs, r, 2, depth__);
}

/* ---- convolutions in 1 and 3 dims, transposed convolutions, as conv2d calls ------------------------- */

/* An int[N] argument's element i (one element repeats). */
static int64_t arg_at(const wk_value *v, int i) {
  return v->u.ints[v->len == 1 ? 0 : i];
}

/* conv1d(input, weight, bias?, stride, padding, dilation, groups): conv2d over a height-1 view. */
static wk_status k_conv1d(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  BEGIN_K;
  wk_tensor *x = T(0);
  bool unb = x->ndim == 2;
  if (unb) x = wk_unsqueeze(x, 0);
  int64_t st[2] = {1, arg_at(&args[3], 0)}, pd[2] = {0, arg_at(&args[4], 0)}, dl[2] = {1, arg_at(&args[5], 0)};
  wk_tensor *y = wkx_conv2d(wk_unsqueeze(x, 2), wk_unsqueeze(T(1), 2), OPT(2), st, 2, pd, 2, dl, 2, args[6].u.i);
  y = y ? wk_squeeze_dim(y, 2) : NULL;
  return FINISH1(y && unb ? wk_squeeze_dim(y, 0) : y);
}

/* 3-d convolution of a batched x [N, C, D, H, W] by w [O, C/g, kD, kH, kW] (no bias): one conv2d of
 * the depth slices [N * OD, C, H, W] per kernel depth kd, summed. */
static wk_tensor *conv3d_parts(wk_tensor *x, wk_tensor *w, const int64_t *st, const int64_t *pd, const int64_t *dl,
                               int64_t groups) {
  if (!x || !w) return NULL;
  int64_t pads[6] = {0, 0, 0, 0, pd[0], pd[0]};
  wk_tensor *xp = pd[0] ? wk_pad(x, pads, 6, "constant", 0) : x;
  if (!xp) return NULL;
  int64_t N = xp->sizes[0], C = xp->sizes[1], D = xp->sizes[2], H = xp->sizes[3], W = xp->sizes[4];
  int64_t kD = w->sizes[2], OD = (D - dl[0] * (kD - 1) - 1) / st[0] + 1;
  wk_tensor *acc = NULL;
  for (int64_t kd = 0; kd < kD; kd++) {
    int64_t s0 = kd * dl[0];
    wk_tensor *sl = wk_slice(xp, 2, s0, s0 + (OD - 1) * st[0] + 1, st[0]);
    wk_tensor *xs = sl ? wk_reshape(wk_contiguous(wk_permute(sl, (const int64_t[]){0, 2, 1, 3, 4}, 5)),
                                    (const int64_t[]){N * OD, C, H, W}, 4)
                       : NULL;
    wk_tensor *wk2 = wk_select(w, 2, kd);
    wk_tensor *y = xs && wk2 ? wkx_conv2d(xs, wk2, NULL, st + 1, 2, pd + 1, 2, dl + 1, 2, groups) : NULL;
    acc = !y ? NULL : acc ? wk_add(acc, y) : y;
    if (!acc) return NULL;
  }
  int64_t O = acc->sizes[1], OH = acc->sizes[2], OW = acc->sizes[3];
  wk_tensor *r = wk_reshape(acc, (const int64_t[]){N, OD, O, OH, OW}, 5);
  return r ? wk_contiguous(wk_permute(r, (const int64_t[]){0, 2, 1, 3, 4}, 5)) : NULL;
}

static wk_tensor *add_channel_bias(wk_tensor *y, wk_tensor *b) {
  if (!y || !b) return y;
  int64_t s[WK_MAX_DIMS];
  s[0] = -1;
  for (int i = 2; i < y->ndim; i++) s[i - 1] = 1;
  return wk_add(y, wk_reshape(b, s, y->ndim - 1));
}

/* conv3d(input, weight, bias?, stride, padding, dilation, groups) */
static wk_status k_conv3d(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  BEGIN_K;
  wk_tensor *x = T(0);
  bool unb = x->ndim == 4;
  if (unb) x = wk_unsqueeze(x, 0);
  int64_t st[3], pd[3], dl[3];
  for (int i = 0; i < 3; i++) st[i] = arg_at(&args[3], i), pd[i] = arg_at(&args[4], i), dl[i] = arg_at(&args[5], i);
  wk_tensor *y = add_channel_bias(conv3d_parts(x, T(1), st, pd, dl, args[6].u.i), OPT(2));
  return FINISH1(y && unb ? wk_squeeze_dim(y, 0) : y);
}

/* conv1d/conv2d/conv3d.padding (input, weight, bias, stride, "same" | "valid", dilation, groups): the int-padding
 * convolution with the left padding, after a zero pad of the odd extra on the right when "same" needs an
 * asymmetric padding (ATen's _convolution_mode; the meta function checked the string and the strides). */
static wk_status k_conv_padding(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  const char *name = wk_op_name(c->op);
  int nsp = name[4] - '0'; /* conv1d / conv2d / conv3d */
  bool same = !strcmp(args[4].u.s, "same");
  wk_tensor *x = T(0), *w = T(1);
  int64_t pl[3] = {0, 0, 0}, pads[6] = {0, 0, 0, 0, 0, 0};
  bool asym = false;
  for (int i = 0; same && i < nsp; i++) {
    int64_t total = arg_at(&args[5], i) * (w->sizes[2 + i] - 1);
    pl[i] = total / 2;
    pads[2 * (nsp - 1 - i) + 1] = total - 2 * pl[i]; /* pad lists the last dim first */
    asym = asym || total % 2;
  }
  BEGIN_K;
  wk_tensor *xp = asym ? wk_pad(x, pads, 2 * nsp, "constant", 0) : x;
  const char *base = nsp == 1 ? "conv1d" : nsp == 2 ? "conv2d" : "conv3d";
  wk_tensor *y = xp ? C1(base, WK_VT(xp), WK_VT(w), args[2], args[3], WK_VINTS(pl, nsp), args[5], args[6]) : NULL;
  return FINISH1(y);
}

/* Inserts s - 1 zeros between the elements along dim. */
static wk_tensor *zero_stuff(wk_tensor *x, int dim, int64_t s, wk_device dev) {
  if (s == 1 || !x) return x;
  int nd = x->ndim;
  int64_t sz[WK_MAX_DIMS + 1], n = x->sizes[dim];
  wk_tensor *u = wk_unsqueeze(x, dim + 1);
  if (!u) return NULL;
  for (int i = 0; i < nd + 1; i++) sz[i] = u->sizes[i];
  sz[dim + 1] = s - 1;
  wk_tensor *z = wk_zeros(sz, nd + 1, (wk_options){.dtype = x->dtype, .device = dev});
  wk_tensor *parts[2] = {u, z};
  wk_tensor *cat = z ? wk_cat(parts, 2, dim + 1) : NULL;
  for (int i = 0; i < nd; i++) sz[i] = x->sizes[i];
  sz[dim] = n * s;
  wk_tensor *r = cat ? wk_reshape(cat, sz, nd) : NULL;
  return r ? wk_narrow(r, dim, 0, n > 0 ? (n - 1) * s + 1 : 0) : NULL;
}

/* conv_transpose1d/2d/3d(input, weight [Cin, Cout/g, k..], bias?, stride, padding, output_padding,
 * groups, dilation): a stride-1 convolution of the zero-stuffed input, padded by d (k - 1) - p on the
 * left (and output_padding more on the right; negative amounts crop), with the weight flipped and
 * transposed to [Cout, Cin/g, k..] (the gradient of the convolution with respect to its input). */
static wk_status k_conv_transpose(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  const char *name = wk_op_name(c->op);
  int nsp = name[14] - '0'; /* conv_transpose1d / 2d / 3d */
  BEGIN_K;
  wk_tensor *x = T(0), *w = T(1);
  bool unb = x->ndim == nsp + 1;
  if (unb) x = wk_unsqueeze(x, 0);
  int64_t g = args[6].u.i, st[3], pd[3], op[3], dl[3], k[3];
  for (int i = 0; i < nsp; i++) {
    st[i] = arg_at(&args[3], i), pd[i] = arg_at(&args[4], i), op[i] = arg_at(&args[5], i);
    dl[i] = arg_at(&args[7], i), k[i] = w->sizes[2 + i];
  }
  int64_t cin = w->sizes[0], cog = w->sizes[1], cig = cin / g, s5[WK_MAX_DIMS], flip[3];
  /* [Cin, Cout/g, k..] -> [g, Cin/g, Cout/g, k..] -> [g, Cout/g, Cin/g, k..] -> [Cout, Cin/g, k..], flipped */
  s5[0] = g, s5[1] = cig, s5[2] = cog;
  for (int i = 0; i < nsp; i++) s5[3 + i] = k[i], flip[i] = 2 + i;
  wk_tensor *wt = wk_transpose(wk_reshape(w, s5, 3 + nsp), 1, 2);
  s5[0] = g * cog, s5[1] = cig;
  for (int i = 0; i < nsp; i++) s5[2 + i] = k[i];
  wt = wt ? wk_reshape(wt, s5, 2 + nsp) : NULL;
  wt = wt ? wkx_flip(wt, flip, nsp) : NULL;
  wk_tensor *xs = x;
  for (int i = 0; i < nsp && xs; i++) {
    int d = 2 + i;
    xs = zero_stuff(xs, d, st[i], c->device);
    int64_t lo = dl[i] * (k[i] - 1) - pd[i], hi = lo + op[i];
    int64_t pads[6] = {0, 0, 0, 0, 0, 0}, at = 2 * (nsp - 1 - i);
    pads[at] = lo > 0 ? lo : 0, pads[at + 1] = hi > 0 ? hi : 0;
    if (xs && (pads[at] || pads[at + 1])) xs = wk_pad(xs, pads, 2 * nsp, "constant", 0);
    if (xs && lo < 0) xs = wk_narrow(xs, d, -lo, xs->sizes[d] + lo);
    if (xs && hi < 0) xs = wk_narrow(xs, d, 0, xs->sizes[d] + hi);
  }
  int64_t one[3] = {1, 1, 1}, zero[3] = {0, 0, 0};
  wk_tensor *y = NULL;
  if (xs && wt) {
    if (nsp == 3) {
      y = add_channel_bias(conv3d_parts(xs, wt, one, zero, dl, g), OPT(2));
    } else if (nsp == 2) {
      y = wkx_conv2d(xs, wt, OPT(2), one, 2, zero, 2, dl, 2, g);
    } else {
      int64_t d2[2] = {1, dl[0]};
      y = wkx_conv2d(wk_unsqueeze(xs, 2), wk_unsqueeze(wt, 2), OPT(2), one, 2, zero, 2, d2, 2, g);
      y = y ? wk_squeeze_dim(y, 2) : NULL;
    }
  }
  return FINISH1(y && unb ? wk_squeeze_dim(y, 0) : y);
}

/* ---- pixel_shuffle, pixel_unshuffle, channel_shuffle ---------------------------------------------- */

static wk_status k_pixel_shuffle(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  bool un = wk_op_name(c->op)[6] == 'u';
  BEGIN_K;
  wk_tensor *x = T(0);
  int nd = x->ndim, b = nd - 3;
  int64_t r = args[1].u.i, s[WK_MAX_DIMS + 3], p[WK_MAX_DIMS + 3];
  for (int i = 0; i < b; i++) s[i] = x->sizes[i], p[i] = i;
  int64_t C = x->sizes[b], H = x->sizes[b + 1], W = x->sizes[b + 2];
  if (!un) { /* [*, C r^2, H, W] -> [*, C, r, r, H, W] -> [*, C, H, r, W, r] */
    int64_t v[5] = {C / (r * r), r, r, H, W}, q[5] = {0, 3, 1, 4, 2};
    for (int i = 0; i < 5; i++) s[b + i] = v[i], p[b + i] = b + q[i];
  } else { /* [*, C, H r, W r] -> [*, C, H, r, W, r] -> [*, C, r, r, H, W] */
    int64_t v[5] = {C, H / r, r, W / r, r}, q[5] = {0, 2, 4, 1, 3};
    for (int i = 0; i < 5; i++) s[b + i] = v[i], p[b + i] = b + q[i];
  }
  wk_tensor *y = wk_permute(wk_reshape(x, s, b + 5), p, b + 5);
  return FINISH1(y ? wk_reshape(wk_contiguous(y), c->meta[0].sizes, c->meta[0].ndim) : NULL);
}

/* channel_shuffle(self, groups): [N, g, C/g, *] transposed to [N, C/g, g, *]. */
static wk_status k_channel_shuffle(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  BEGIN_K;
  wk_tensor *x = T(0);
  int64_t g = args[1].u.i, s[WK_MAX_DIMS + 1];
  s[0] = x->sizes[0], s[1] = g, s[2] = x->sizes[1] / g;
  for (int i = 2; i < x->ndim; i++) s[i + 1] = x->sizes[i];
  wk_tensor *y = wk_transpose(wk_reshape(x, s, x->ndim + 1), 1, 2);
  return FINISH1(y ? wk_reshape(wk_contiguous(y), c->meta[0].sizes, c->meta[0].ndim) : NULL);
}

/* ---- normalizations ---------------------------------------------------------------------------------- */

/* group_norm(input, num_groups, weight?, bias?, eps): per (n, group) standardisation, then the
 * per-channel affine; in float32 for bfloat16 inputs. */
static wk_status k_group_norm(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  wk_dtype dt = c->meta[0].dtype, cd = dt == WK_F64 ? WK_F64 : WK_F32;
  BEGIN_K;
  wk_tensor *x = wk_to_dtype(T(0), cd);
  if (!x) return FAIL_K();
  int64_t G = args[1].u.i, N = x->sizes[0], inner = x->sizes[1] / G, last = -1;
  for (int i = 2; i < x->ndim; i++) inner *= x->sizes[i];
  int64_t s3[3] = {N, G, inner};
  wk_tensor *xr = wk_reshape(x, s3, 3);
  wk_tensor *mean = wk_mean_dim(xr, &last, 1, true), *var = wk_var(xr, &last, 1, 0, true);
  wk_tensor *y = wk_mul(wk_sub(xr, mean), wk_rsqrt(wk_add_scalar(var, args[4].u.f)));
  y = y ? wk_reshape(y, x->sizes, x->ndim) : NULL;
  int64_t cs[WK_MAX_DIMS];
  cs[0] = -1;
  for (int i = 2; i < x->ndim; i++) cs[i - 1] = 1;
  if (y && OPT(2)) y = wk_mul(y, wk_reshape(wk_to_dtype(T(2), cd), cs, x->ndim - 1));
  if (y && OPT(3)) y = wk_add(y, wk_reshape(wk_to_dtype(T(3), cd), cs, x->ndim - 1));
  return FINISH1(y ? wk_to_dtype(y, dt) : NULL);
}

/* instance_norm(input, weight?, bias?, running_mean?, running_var?, use_input_stats, momentum, eps):
 * per (n, c) statistics over the spatial dims (use_input_stats; the running statistics, if given, move
 * towards the batch average of them: the variance unbiased), or the running statistics per channel. */
static wk_status k_instance_norm(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  wk_dtype dt = c->meta[0].dtype, cd = dt == WK_F64 ? WK_F64 : WK_F32;
  BEGIN_K;
  wk_tensor *x = wk_to_dtype(T(0), cd), *rm = OPT(3), *rv = OPT(4), *y = NULL;
  if (!x) return FAIL_K();
  int nd = x->ndim;
  int64_t cs[WK_MAX_DIMS], red[WK_MAX_DIMS], nr = 0;
  cs[0] = -1;
  for (int i = 2; i < nd; i++) cs[i - 1] = 1, red[nr++] = i;
  double eps = args[7].u.f, mom = args[6].u.f;
  if (args[5].u.b) {
    wk_tensor *mean = wk_mean_dim(x, red, (int)nr, true), *var = wk_var(x, red, (int)nr, 0, true);
    y = wk_mul(wk_sub(x, mean), wk_rsqrt(wk_add_scalar(var, eps)));
    if (rm || rv) { /* running statistics: no gradient, updated in place */
      int64_t zero = 0, n = 1;
      for (int i = 2; i < nd; i++) n *= x->sizes[i];
      wk_tensor *dm = wk_detach(mean), *dv = wk_detach(var);
      if (rm && dm) {
        wk_tensor *bm = wk_mean_dim(wk_reshape(dm, x->sizes, 2), &zero, 1, false);
        wk_tensor *nm = bm ? wk_add(wk_mul_scalar(wk_to_dtype(rm, cd), 1 - mom), wk_mul_scalar(bm, mom)) : NULL;
        if (!nm || !wk_copy_(rm, nm)) return FAIL_K();
      }
      if (rv && dv) {
        wk_tensor *ub = n > 1 ? wk_mul_scalar(dv, (double)n / (double)(n - 1)) : wk_full_like(dv, NAN, (wk_options){0});
        wk_tensor *bv = ub ? wk_mean_dim(wk_reshape(ub, x->sizes, 2), &zero, 1, false) : NULL;
        wk_tensor *nv = bv ? wk_add(wk_mul_scalar(wk_to_dtype(rv, cd), 1 - mom), wk_mul_scalar(bv, mom)) : NULL;
        if (!nv || !wk_copy_(rv, nv)) return FAIL_K();
      }
    }
  } else {
    wk_tensor *m = wk_reshape(wk_to_dtype(rm, cd), cs, nd - 1), *v = wk_reshape(wk_to_dtype(rv, cd), cs, nd - 1);
    y = wk_mul(wk_sub(x, m), wk_rsqrt(wk_add_scalar(v, eps)));
  }
  if (y && OPT(1)) y = wk_mul(y, wk_reshape(wk_to_dtype(T(1), cd), cs, nd - 1));
  if (y && OPT(2)) y = wk_add(y, wk_reshape(wk_to_dtype(T(2), cd), cs, nd - 1));
  return FINISH1(y ? wk_to_dtype(y, dt) : NULL);
}

/* local_response_norm(input, size, alpha, beta, k): x / (k + alpha * avg over the channel window
 * [c - size/2, c + (size - 1)/2] of x^2 (zeros outside, divided by size))^beta (functional.py's). */
static wk_status k_local_response_norm(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  BEGIN_K;
  wk_tensor *x = T(0);
  if (wk_tensor_numel(x) == 0) return FINISH1(wk_clone(x));
  int64_t size = args[1].u.i, C = x->sizes[1];
  taps tp = {0};
  if (!taps_alloc(&tp, C, size)) return FAIL_K();
  for (int64_t o = 0; o < C; o++)
    for (int64_t k = 0; k < size; k++) {
      int64_t p = o - size / 2 + k;
      bool ok = p >= 0 && p < C;
      tp.idx[o * size + k] = ok ? p : o;
      tp.w[o * size + k] = ok ? 1.0 / (double)size : 0;
    }
  wk_tensor *div = taps_sum(wk_mul(x, x), 1, &tp, c->device);
  taps_free(&tp);
  div = div ? wkx_pow__Scalar(wk_add_scalar(wk_mul_scalar(div, args[2].u.f), args[4].u.f), WK_VF(args[3].u.f)) : NULL;
  return FINISH1(div ? wk_div(x, div) : NULL);
}

/* ---- dropout variants -------------------------------------------------------------------------------- */

/* alpha_dropout, feature_dropout, feature_alpha_dropout (input, p, train): ATen's _dropout_impl. The
 * feature forms drop whole channels (noise [N, C, 1, ..]). */
static wk_status k_dropout_variant(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  const char *name = wk_op_name(c->op);
  bool feature = name[0] == 'f', alpha = strstr(name, "alpha") != NULL;
  double p = args[1].u.f;
  BEGIN_K;
  wk_tensor *x = T(0);
  if (p == 0 || !args[2].u.b || wk_tensor_numel(x) == 0) return FINISH1(wk_clone(x));
  if (p == 1) return FINISH1(wk_mul(x, wk_zeros(NULL, 0, (wk_options){.dtype = x->dtype, .device = c->device})));
  int64_t ns[WK_MAX_DIMS];
  for (int i = 0; i < x->ndim; i++) ns[i] = feature && i >= 2 ? 1 : x->sizes[i];
  wk_tensor *noise = wkx_bernoulli__p(wk_empty(ns, x->ndim, (wk_options){.dtype = x->dtype, .device = c->device}), 1 - p);
  if (!alpha) return FINISH1(noise ? wk_mul(x, wk_div_scalar(noise, 1 - p)) : NULL);
  const double al = 1.7580993408473766;
  double a = 1. / sqrt((al * al * p + 1) * (1 - p));
  wk_tensor *b = noise ? wk_add_scalar(wk_mul_scalar(wk_add_scalar(noise, -1), al * a), al * a * p) : NULL;
  return FINISH1(b ? wk_add(wk_mul(x, wk_mul_scalar(noise, a)), b) : NULL);
}

/* ---- im2col (unfold), col2im (fold), lp_pool1d/2d, max_unpool2d ----------------------------------- */

/* A pair argument's element i. */
static int64_t pair_at(const wk_value *v, int i) {
  return v->u.ints[v->len == 1 ? 0 : i];
}

/* im2col(self, kernel_size, dilation, padding, stride): [N, C, H, W] -> [N, C kh kw, OH OW], a strided
 * slice of the padded input per kernel offset, stacked (kernel offsets inner, as ATen's columns). */
static wk_status k_im2col(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  BEGIN_K;
  wk_tensor *x = T(0);
  bool unb = x->ndim == 3;
  if (unb) x = wk_unsqueeze(x, 0);
  int64_t k[2], d[2], p[2], s[2], o[2];
  for (int i = 0; i < 2; i++) {
    k[i] = pair_at(&args[1], i), d[i] = pair_at(&args[2], i), p[i] = pair_at(&args[3], i), s[i] = pair_at(&args[4], i);
    o[i] = (x->sizes[2 + i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) / s[i] + 1;
  }
  int64_t pads[4] = {p[1], p[1], p[0], p[0]};
  wk_tensor *xp = p[0] || p[1] ? wk_pad(x, pads, 4, "constant", 0) : x;
  int64_t nk = k[0] * k[1];
  wk_tensor **parts = wk_malloc(sizeof(wk_tensor *) * (size_t)nk);
  if (!parts) return FAIL_K();
  bool ok = xp != NULL;
  for (int64_t i = 0; i < k[0] && ok; i++)
    for (int64_t j = 0; j < k[1] && ok; j++) {
      wk_tensor *sl = wk_slice(xp, 2, i * d[0], i * d[0] + (o[0] - 1) * s[0] + 1, s[0]);
      sl = sl ? wk_slice(sl, 3, j * d[1], j * d[1] + (o[1] - 1) * s[1] + 1, s[1]) : NULL;
      parts[i * k[1] + j] = sl;
      ok = sl != NULL;
    }
  wk_tensor *st = ok ? wk_stack(parts, (int)nk, 2) : NULL; /* [N, C, kh kw, OH, OW] */
  wk_free(parts);
  int64_t rs[3] = {x->sizes[0], x->sizes[1] * nk, o[0] * o[1]};
  wk_tensor *r = st ? wk_reshape(st, rs, 3) : NULL;
  return FINISH1(r && unb ? wk_squeeze_dim(r, 0) : r);
}

/* col2im(self, output_size, kernel_size, dilation, padding, stride): the adjoint of im2col, each kernel
 * offset's block zero-stuffed by the stride, padded into place and summed; the padding cut off. */
static wk_status k_col2im(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  BEGIN_K;
  wk_tensor *x = T(0);
  bool unb = x->ndim == 2;
  if (unb) x = wk_unsqueeze(x, 0);
  int64_t os[2], k[2], d[2], p[2], s[2], o[2];
  for (int i = 0; i < 2; i++) {
    os[i] = pair_at(&args[1], i), k[i] = pair_at(&args[2], i), d[i] = pair_at(&args[3], i);
    p[i] = pair_at(&args[4], i), s[i] = pair_at(&args[5], i);
    o[i] = (os[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) / s[i] + 1;
  }
  int64_t N = x->sizes[0], C = x->sizes[1] / (k[0] * k[1]), Hp = os[0] + 2 * p[0], Wp = os[1] + 2 * p[1];
  int64_t s5[5] = {N, C, k[0] * k[1], o[0], o[1]};
  wk_tensor *b = wk_reshape(x, s5, 5), *acc = NULL;
  for (int64_t i = 0; i < k[0] && b; i++)
    for (int64_t j = 0; j < k[1]; j++) {
      wk_tensor *blk = zero_stuff(zero_stuff(wk_select(b, 2, i * k[1] + j), 2, s[0], c->device), 3, s[1], c->device);
      if (!blk) return FAIL_K();
      int64_t top = i * d[0], left = j * d[1];
      int64_t pads[4] = {left, Wp - left - blk->sizes[3], top, Hp - top - blk->sizes[2]};
      wk_tensor *placed = wk_pad(blk, pads, 4, "constant", 0);
      acc = !placed ? NULL : acc ? wk_add(acc, placed) : placed;
      if (!acc) return FAIL_K();
    }
  if (!acc) return FAIL_K();
  wk_tensor *r = wk_narrow(wk_narrow(acc, 2, p[0], os[0]), 3, p[1], os[1]);
  r = r ? wk_contiguous(r) : NULL;
  return FINISH1(r && unb ? wk_squeeze_dim(r, 0) : r);
}

/* lp_pool1d/lp_pool2d(self, norm_type, kernel_size, stride, ceil_mode), functional.py's:
 * (sign(a) relu(|a|) * kw kh)^(1/p) with a = avg_pool(x^p). */
static wk_status k_lp_pool(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  bool two = strstr(wk_op_name(c->op), "2d") != NULL;
  BEGIN_K;
  wk_tensor *x = T(0);
  double p = args[1].u.f;
  int64_t zero = 0, kk = pair_at(&args[2], 0) * (two ? pair_at(&args[2], 1) : 1);
  wk_tensor *xp = wkx_pow__Scalar(x, WK_VF(p)), *a;
  if (two)
    a = wkx_avg_pool2d(xp, args[2].u.ints, args[2].len, args[3].u.ints, args[3].len, &zero, 1, args[4].u.b, true, NULL);
  else
    a = wkx_avg_pool1d(xp, args[2].u.ints, args[2].len, args[3].u.ints, args[3].len, &zero, 1, args[4].u.b, true);
  wk_tensor *r = a ? wk_mul(wk_sign(a), wk_relu(wk_abs(a))) : NULL;
  r = r ? wkx_pow__Scalar(wk_mul_scalar(r, (double)kk), WK_VF(1.0 / p)) : NULL;
  return FINISH1(r);
}

/* max_unpool2d(self, indices, output_size): each value scattered to its index in a zero [oH oW] plane;
 * an index outside the plane is an error naming it (read back). */
static wk_status k_max_unpool2d(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  BEGIN_K;
  wk_tensor *x = T(0), *ix = T(1);
  int nd = x->ndim;
  int64_t plane = pair_at(&args[2], 0) * pair_at(&args[2], 1), in = x->sizes[nd - 1] * x->sizes[nd - 2];
  int64_t s3[3] = {nd == 4 ? x->sizes[0] : 1, x->sizes[nd - 3], in}, z3[3] = {s3[0], s3[1], plane};
  wk_tensor *i3 = wk_reshape(ix, s3, 3);
  bool failed = false;
  wk_tensor *bad = i3 ? wk_logical_or(wk_lt_scalar(i3, 0), wkx_ge__Scalar(i3, WK_VI(plane))) : NULL;
  if (any_set(bad, c->device, &failed) && !failed) {
    wk_error(WK_ERR_INDEX, "max_unpool2d(): Found an invalid max index (outside [0, %lld) of the %lldx%lld output plane)",
             (long long)plane, (long long)pair_at(&args[2], 0), (long long)pair_at(&args[2], 1));
    return FAIL_K();
  }
  if (failed) return FAIL_K();
  wk_tensor *z = wk_zeros(z3, 3, (wk_options){.dtype = x->dtype, .device = c->device});
  wk_tensor *r = z ? wkx_scatter__src(z, 2, i3, wk_reshape(x, s3, 3)) : NULL;
  return FINISH1(r ? wk_reshape(r, c->meta[0].sizes, c->meta[0].ndim) : NULL);
}

/* ---- affine_grid, grid_sample ---------------------------------------------------------------------- */

/* ATen's linspace_from_neg_one: n points over [-1, 1], scaled by (n - 1) / n without align_corners. */
static wk_tensor *neg_one_ramp(int64_t n, bool align, wk_dtype dt, wk_device dev) {
  if (n <= 1) return wk_zeros(&n, 1, (wk_options){.dtype = dt, .device = dev});
  wk_tensor *r = wk_linspace(-1, 1, n, (wk_options){.dtype = dt, .device = dev});
  return r && !align ? wk_mul_scalar(r, (double)(n - 1) / (double)n) : r;
}

/* affine_grid(theta [N, 2, 3] or [N, 3, 4], size [N, C, H, W] or [N, C, D, H, W], align_corners):
 * the base grid (x, y[, z], 1) of every output position times theta^T: [N, H, W, 2] / [N, D, H, W, 3]. */
static wk_status k_affine_grid(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  BEGIN_K;
  wk_tensor *th = T(0);
  const int64_t *sz = args[1].u.ints;
  int nsp = args[1].len - 2;
  bool al = args[2].u.b;
  int64_t N = sz[0], P = 1;
  for (int i = 0; i < nsp; i++) P *= sz[2 + i];
  /* base [P, nsp + 1]: column 0 varies along the last spatial dim (x), column 1 along the one before (y), ... */
  wk_tensor *cols[4] = {NULL, NULL, NULL, NULL};
  int64_t full[3];
  for (int i = 0; i < nsp; i++) full[i] = sz[2 + i];
  for (int j = 0; j < nsp; j++) {
    int d = nsp - 1 - j; /* the spatial dim that column j follows */
    int64_t vs[3] = {1, 1, 1};
    vs[d] = sz[2 + d];
    wk_tensor *r = neg_one_ramp(sz[2 + d], al, th->dtype, c->device);
    r = r ? wk_expand(wk_reshape(r, vs, nsp), full, nsp) : NULL;
    cols[j] = r ? wk_reshape(r, &P, 1) : NULL;
  }
  cols[nsp] = wk_ones(&P, 1, (wk_options){.dtype = th->dtype, .device = c->device});
  for (int j = 0; j <= nsp; j++)
    if (!cols[j]) return FAIL_K();
  wk_tensor *base = wk_stack(cols, nsp + 1, 1); /* [P, nsp + 1] */
  wk_tensor *g = base ? wk_matmul(base, wk_transpose(th, 1, 2)) : NULL; /* [N, P, nsp] */
  int64_t os[5];
  os[0] = N;
  for (int i = 0; i < nsp; i++) os[1 + i] = sz[2 + i];
  os[1 + nsp] = nsp;
  return FINISH1(g ? wk_reshape(g, os, nsp + 2) : NULL);
}

/* A pixel position with the border (clip) or reflection padding applied (ATen's compute_coordinates). */
static wk_tensor *grid_pad(wk_tensor *p, int64_t size, bool al, int pad) {
  if (p && pad == 2) { /* reflection: reflect over [lo, hi] = align ? [0, size - 1] : [-0.5, size - 0.5] */
    double lo = al ? 0 : -0.5, span = al ? (double)(size - 1) : (double)size;
    if (span <= 0) {
      p = wk_zeros_like(p, (wk_options){0});
    } else {
      wk_tensor *in = wk_abs(wk_sub_scalar(p, lo));
      wk_tensor *extra = wkx_fmod__Scalar(in, WK_VF(span)), *flips = wk_floor(wk_div_scalar(in, span));
      wk_tensor *even = flips ? wk_eq_scalar(wkx_remainder__Scalar(flips, WK_VI(2)), 0) : NULL;
      p = even ? wk_where(even, wk_add_scalar(extra, lo), wk_add_scalar(wk_neg(extra), span + lo)) : NULL;
    }
  }
  if (p && pad >= 1) p = wk_clamp(p, 0, (double)(size - 1));
  return p;
}

/* A grid coordinate in [-1, 1] to a pixel position (ATen's grid_sampler_unnormalize). */
static wk_tensor *grid_unnormalize(wk_tensor *g, int64_t size, bool al) {
  return al ? wk_mul_scalar(wk_add_scalar(g, 1), (double)(size - 1) / 2)
            : wk_div_scalar(wk_sub_scalar(wk_mul_scalar(wk_add_scalar(g, 1), (double)size), 1), 2);
}

/* The cubic convolution weights (A = -0.75, ATen's get_cubic_upsample_coefficients) of the taps at -1, 0, 1, 2
 * for the fraction t. */
static void cubic_weights(wk_tensor *t, wk_tensor **w) {
  const double A = -0.75;
  wk_tensor *x1 = wk_add_scalar(t, 1), *x2 = wk_neg(wk_sub_scalar(t, 1)), *x3 = wk_neg(wk_sub_scalar(t, 2));
  /* far taps: ((A x - 5A) x + 8A) x - 4A; near taps: ((A + 2) x - (A + 3)) x x + 1 */
#define FAR(x) wk_sub_scalar(wk_mul(wk_add_scalar(wk_mul(wk_sub_scalar(wk_mul_scalar(x, A), 5 * A), x), 8 * A), x), 4 * A)
#define NEAR(x) wk_add_scalar(wk_mul(wk_mul(wk_sub_scalar(wk_mul_scalar(x, A + 2), A + 3), x), x), 1)
  w[0] = FAR(x1), w[1] = NEAR(t), w[2] = NEAR(x2), w[3] = FAR(x3);
#undef FAR
#undef NEAR
}

/* grid_sample(input [N, C, H, W] or [N, C, D, H, W], grid [N, Ho, Wo, 2] or [N, Do, Ho, Wo, 3], mode,
 * padding_mode, align_corners): each output point is a weighted sum of taps gathered from the flattened
 * planes: bilinear (2 or 3 dims: the 4 or 8 corners, out-of-range corners zero), nearest (round half to even)
 * or bicubic (4-D: 16 taps, the padding applied to each tap's position, as ATen's get_value_bounded). Gradients
 * reach input (gather's) and grid (through the weights), as ATen's. */
static wk_status k_grid_sample(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  BEGIN_K;
  wk_tensor *x = T(0), *grid = T(1);
  bool nearest = !strcmp(args[2].u.s, "nearest"), cubic = !strcmp(args[2].u.s, "bicubic"), al = args[4].u.b;
  int pad = !strcmp(args[3].u.s, "border") ? 1 : !strcmp(args[3].u.s, "reflection") ? 2 : 0;
  int nsp = x->ndim - 2;
  int64_t N = x->sizes[0], C = x->sizes[1], P = 1, Q = 1, sz[3], stride[3];
  for (int k = 0; k < nsp; k++) { /* component k of the grid (x, y, z) addresses spatial dim nsp - 1 - k */
    sz[k] = x->sizes[2 + nsp - 1 - k];
    stride[k] = P;
    P *= sz[k];
    Q *= grid->sizes[1 + k];
  }
  int64_t xs[3] = {N, C, P}, os[3] = {N, 1, Q}, es[3] = {N, C, Q};
  wk_tensor *xf = wk_reshape(x, xs, 3), *p[3] = {NULL, NULL, NULL};
  for (int k = 0; k < nsp; k++) {
    wk_tensor *u = grid_unnormalize(wk_select(grid, nsp + 1, k), sz[k], al);
    p[k] = cubic ? u : grid_pad(u, sz[k], al, pad); /* bicubic pads each tap instead */
    p[k] = p[k] ? wk_reshape(p[k], os, 3) : NULL;
    if (!p[k]) return FAIL_K();
  }
  if (!xf) return FAIL_K();
  /* per component: the first tap's position, and each tap's weight (NULL: 1) */
  int per = nearest ? 1 : cubic ? 4 : 2, ntap = 1;
  wk_tensor *base[3], *wt[3][4] = {{NULL}};
  for (int k = 0; k < nsp; k++) {
    ntap *= per;
    base[k] = nearest ? wk_round(p[k]) : wk_floor(p[k]);
    if (!base[k]) return FAIL_K();
    wk_tensor *t = nearest ? NULL : wk_sub(p[k], base[k]);
    if (cubic) {
      if (t) cubic_weights(t, wt[k]);
      base[k] = wk_sub_scalar(base[k], 1);
    } else if (t) {
      wt[k][0] = wk_neg(wk_sub_scalar(t, 1)), wt[k][1] = t;
    }
    for (int j = 0; j < per && !nearest; j++)
      if (!wt[k][j]) return FAIL_K();
  }
  wk_tensor *acc = NULL;
  for (int tap = 0; tap < ntap; tap++) {
    wk_tensor *w = NULL, *ok = NULL, *lin = NULL;
    for (int k = 0, rest = tap; k < nsp; k++, rest /= per) {
      int j = rest % per;
      wk_tensor *tk = j ? wk_add_scalar(base[k], j) : base[k];
      if (cubic && pad) tk = grid_pad(tk, sz[k], al, pad); /* the tap's position padded: always in range */
      if (!cubic || !pad) {
        wk_tensor *in = tk ? wk_logical_and(wkx_ge__Scalar(tk, WK_VI(0)), wkx_le__Scalar(tk, WK_VI(sz[k] - 1))) : NULL;
        ok = !in ? NULL : ok ? wk_logical_and(ok, in) : in;
      }
      wk_tensor *term = tk ? wk_mul_scalar(wk_clamp(tk, 0, (double)(sz[k] - 1)), (double)stride[k]) : NULL;
      lin = !term ? NULL : lin ? wk_add(lin, term) : term;
      if (!nearest) w = w ? wk_mul(w, wt[k][j]) : wt[k][j];
      if (!lin || (!nearest && !w)) return FAIL_K();
    }
    wk_tensor *ix = wk_expand(wk_detach(wk_to_dtype(lin, WK_I64)), es, 3);
    wk_tensor *v = ix ? wk_gather(xf, 2, ix) : NULL;
    wk_tensor *wm = w;
    if (ok) wm = w ? wk_where(ok, w, wk_zeros_like(w, (wk_options){0})) : wk_to_dtype(ok, x->dtype);
    wk_tensor *term = v ? (wm ? wk_mul(v, wm) : v) : NULL;
    acc = !term ? NULL : acc ? wk_add(acc, term) : term;
    if (!acc) return FAIL_K();
  }
  return FINISH1(wk_reshape(acc, c->meta[0].sizes, c->meta[0].ndim));
}

/* ---- embedding_bag ------------------------------------------------------------------------------- */

/* embedding_bag(weight, indices, offsets?, mode, per_sample_weights?, include_last_offset, padding_idx?):
 * the rows of each bag (a 2-d indices' row, or [offsets[b], offsets[b + 1]) of 1-d indices) summed
 * (mode 0, times per_sample_weights), averaged (mode 1) or maxed (mode 2, scatter_reduce's amax); an
 * empty bag gives zeros; padding_idx's
 * rows count for nothing. The offsets are read on the host (checked as ATen checks them). */
static wk_status k_embedding_bag(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  BEGIN_K;
  wk_tensor *w = T(0), *ix = T(1), *psw = OPT(4);
  int64_t mode = args[3].u.i, D = w->sizes[1], B = c->meta[0].sizes[0], all = -1;
  bool last = args[5].u.b;
  wk_tensor *flat = wk_reshape(wk_to_dtype(ix, WK_I64), &all, 1);
  if (!flat) return FAIL_K();
  int64_t n = flat->sizes[0];
  int64_t *seg = wk_malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  if (!seg) return FAIL_K();
  if (ix->ndim == 2) {
    int64_t L = ix->sizes[1];
    for (int64_t i = 0; i < n; i++) seg[i] = i / (L ? L : 1);
  } else if (c->device.type == WK_DEVICE_META) { /* no values: the shapes only */
    for (int64_t i = 0; i < n; i++) seg[i] = 0;
  } else {
    wk_tensor *oh = wk_contiguous(wk_to_device(wk_to_dtype(T(2), WK_I64), wk_cpu()));
    const int64_t *off = oh ? wk_tensor_data(oh) : NULL;
    int64_t no = oh ? wk_tensor_numel(oh) : 0;
    const char *bad = NULL;
    if (!off)
      bad = "could not read the offsets";
    else if (no > 0 && off[0] != 0)
      bad = "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from position 0";
    for (int64_t b = 1; !bad && b < no; b++)
      if (off[b] < off[b - 1]) bad = "offsets must be non-decreasing";
    if (!bad && no > 0 && off[no - 1] > n) bad = "offsets[-1] can not be greater than input's length";
    if (!bad && last && no > 0 && off[no - 1] != n) bad = "with include_last_offset, offsets[-1] must equal input's length";
    if (bad) {
      wk_free(seg);
      if (off) wk_error(WK_ERR_INVALID_ARG, "embedding_bag(): %s", bad);
      return FAIL_K();
    }
    for (int64_t i = 0, b = 0; i < n; i++) {
      while (b + 1 < no && off[b + 1] <= i) b++;
      seg[i] = b;
    }
  }
  wk_tensor *sg = host_tensor(seg, WK_I64, &n, 1, WK_I64, c->device);
  wk_free(seg);
  wk_tensor *rows = sg ? wk_index_select(w, 0, flat) : NULL; /* [n, D] */
  wk_tensor *keep = NULL;
  if (rows && args[6].tag == WK_V_INT) {
    int64_t pi = args[6].u.i < 0 ? args[6].u.i + w->sizes[0] : args[6].u.i;
    keep = wkx_ne__Scalar(flat, WK_VI(pi));
    if (mode == 2) /* max: padding rows go to a bag of their own, dropped below */
      sg = wk_where(keep, sg, wk_full_like(sg, (double)B, (wk_options){0}));
    else
      rows = wk_mul(rows, wk_unsqueeze(wk_to_dtype(keep, w->dtype), 1));
  }
  if (rows && sg && mode == 2) { /* max: amax over each bag's rows; an empty bag keeps its zeros */
    int64_t os3[2] = {B + 1, D};
    wk_tensor *z3 = wk_zeros(os3, 2, (wk_options){.dtype = w->dtype, .device = c->device});
    wk_tensor *se3 = wk_expand(wk_unsqueeze(sg, 1), rows->sizes, 2);
    wk_tensor *m = z3 && se3 ? C1("scatter_reduce.two", WK_VT(z3), WK_VI(0), WK_VT(se3), WK_VT(rows), WK_VS("amax"), WK_VB(false))
                             : NULL;
    return FINISH1(m ? wk_narrow(m, 0, 0, B) : NULL);
  }
  if (rows && psw) rows = wk_mul(rows, wk_unsqueeze(wk_reshape(psw, &all, 1), 1));
  int64_t os[2] = {B, D};
  wk_tensor *z = wk_zeros(os, 2, (wk_options){.dtype = w->dtype, .device = c->device});
  wk_tensor *se = sg && rows ? wk_expand(wk_unsqueeze(sg, 1), rows->sizes, 2) : NULL;
  wk_tensor *r = se && z ? wk_scatter_add(z, 0, se, rows) : NULL;
  if (r && mode == 1) {
    wk_tensor *one = keep ? wk_to_dtype(keep, w->dtype) : wk_ones(&n, 1, (wk_options){.dtype = w->dtype, .device = c->device});
    wk_tensor *cnt = one ? wk_scatter_add(wk_zeros(&B, 1, (wk_options){.dtype = w->dtype, .device = c->device}), 0, sg, one) : NULL;
    r = cnt ? wk_div(r, wk_unsqueeze(wkx_clamp_min(cnt, WK_VI(1)), 1)) : NULL;
  }
  return FINISH1(r);
}

/* ---- ctc_loss ---------------------------------------------------------------------------------------- */

/* ctc_loss(log_probs [T, N, C], targets [N, S] or concatenated 1-d, input_lengths [N], target_lengths [N],
 * blank, reduction, zero_infinity): the CTC forward (alpha) recursion over the blank-extended targets,
 * in log space, one step of [N, 2 Smax + 1] ops per time step; a sequence's alphas stop moving after
 * its input length. Unreachable states hold -1e30 instead of -inf (so the parts' gradients stay finite:
 * logsumexp's backward of all -inf is NaN); a loss of 1e29 or more is an impossible alignment: inf (or 0
 * with zero_infinity), as PyTorch. Lengths and targets are read on the host and checked as ATen's. */
static wk_status k_ctc_loss(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  BEGIN_K;
  wk_tensor *lp = T(0), *tg = T(1);
  int64_t T_ = lp->sizes[0], N = lp->sizes[1], C = lp->sizes[2], blank = args[4].u.i, red = args[5].u.i;
  bool zinf = args[6].u.b, meta = c->device.type == WK_DEVICE_META;
  const double NEG = -1e30;
  wk_tensor *ilh = meta ? NULL : wk_contiguous(wk_to_device(wk_to_dtype(T(2), WK_I64), wk_cpu()));
  wk_tensor *tlh = meta ? NULL : wk_contiguous(wk_to_device(wk_to_dtype(T(3), WK_I64), wk_cpu()));
  wk_tensor *tgh = meta ? NULL : wk_contiguous(wk_to_device(wk_to_dtype(tg, WK_I64), wk_cpu()));
  if (!meta && (!ilh || !tlh || !tgh)) return FAIL_K();
  const int64_t *il = meta ? NULL : wk_tensor_data(ilh), *tl = meta ? NULL : wk_tensor_data(tlh);
  const int64_t *tv = meta ? NULL : wk_tensor_data(tgh);
  int64_t Smax = 0, tot = 0;
  for (int64_t n = 0; !meta && n < N; n++) {
    if (il[n] < 0 || il[n] > T_) {
      wk_error(WK_ERR_INVALID_ARG, "ctc_loss(): Expected input_lengths to have value at most %lld, but got value %lld", (long long)T_, (long long)il[n]);
      return FAIL_K();
    }
    if (tl[n] < 0 || (tg->ndim == 2 && tl[n] > tg->sizes[1])) {
      wk_error(WK_ERR_INVALID_ARG, "ctc_loss(): Expected target_lengths[%lld] = %lld to lie in [0, %lld]", (long long)n, (long long)tl[n],
               (long long)(tg->ndim == 2 ? tg->sizes[1] : wk_tensor_numel(tg)));
      return FAIL_K();
    }
    if (tl[n] > Smax) Smax = tl[n];
    tot += tl[n];
  }
  if (!meta && tg->ndim == 1 && tot > wk_tensor_numel(tg)) {
    wk_error(WK_ERR_INVALID_ARG, "ctc_loss(): the target lengths sum to %lld but targets holds %lld values", (long long)tot, (long long)wk_tensor_numel(tg));
    return FAIL_K();
  }
  int64_t L = 2 * Smax + 1, nl = N * L;
  int64_t *lab = wk_malloc(sizeof(int64_t) * (size_t)(nl ? nl : 1));
  double *skip = wk_malloc(sizeof(double) * (size_t)(nl ? nl : 1)), *valid = wk_malloc(sizeof(double) * (size_t)(nl ? nl : 1));
  int64_t *fin = wk_malloc(sizeof(int64_t) * (size_t)(2 * N + 1));
  double *run = wk_malloc(sizeof(double) * (size_t)(T_ * N + 1));
  bool bad = !lab || !skip || !valid || !fin || !run;
  for (int64_t n = 0, off = 0; !bad && n < N; n++) {
    int64_t S = meta ? 0 : tl[n];
    for (int64_t s = 0; s < L; s++) {
      int64_t k = s / 2, v = blank;
      if (s % 2 && k < S) v = tv[tg->ndim == 2 ? n * tg->sizes[1] + k : off + k];
      if (v < 0 || v >= C) {
        wk_error(WK_ERR_INDEX, "ctc_loss(): target value %lld of sequence %lld is outside [0, %lld)", (long long)v, (long long)n, (long long)C);
        bad = true;
        break;
      }
      lab[n * L + s] = v;
      valid[n * L + s] = s < 2 * S + 1;
      skip[n * L + s] = s >= 2 && s % 2 && s < 2 * S + 1 && v != lab[n * L + s - 2];
    }
    fin[2 * n] = 2 * S, fin[2 * n + 1] = S > 0 ? 2 * S - 1 : 2 * S;
    for (int64_t t = 0; t < T_; t++) run[t * N + n] = meta || t < il[n];
    off += S;
  }
  int64_t s2[2] = {N, L}, f2[2] = {N, 2}, r2[2] = {T_, N};
  wk_tensor *labt = bad ? NULL : host_tensor(lab, WK_I64, s2, 2, WK_I64, c->device);
  wk_tensor *skipt = bad ? NULL : host_tensor(skip, WK_F64, s2, 2, WK_BOOL, c->device);
  wk_tensor *validt = bad ? NULL : host_tensor(valid, WK_F64, s2, 2, WK_BOOL, c->device);
  wk_tensor *fint = bad ? NULL : host_tensor(fin, WK_I64, f2, 2, WK_I64, c->device);
  wk_tensor *runt = bad ? NULL : host_tensor(run, WK_F64, r2, 2, WK_BOOL, c->device);
  wk_free(lab), wk_free(skip), wk_free(valid), wk_free(fin), wk_free(run);
  if (!labt || !skipt || !validt || !fint || !runt) return FAIL_K();
  int64_t e3[3] = {T_, N, L};
  wk_tensor *E = wk_gather(lp, 2, wk_expand(wk_unsqueeze(labt, 0), e3, 3)); /* [T, N, L] */
  wk_tensor *negs = wk_full(s2, 2, NEG, (wk_options){.dtype = lp->dtype, .device = c->device});
  wk_tensor *pos = wk_arange_int(0, L, 1, (wk_options){.dtype = WK_I64, .device = c->device});
  wk_tensor *first = pos ? wk_logical_and(validt, wk_lt_scalar(wk_unsqueeze(pos, 0), 2)) : NULL;
  wk_tensor *alpha = E && first ? wk_where(first, wk_select(E, 0, 0), negs) : NULL;
  int64_t pad1[2] = {1, 0}, pad2[2] = {2, 0}, last = -1;
  for (int64_t t = 1; t < T_ && alpha; t++) {
    wk_tensor *a1 = wk_narrow(wkx_pad(alpha, pad1, 2, "constant", (const double[]){NEG}), 1, 0, L);
    wk_tensor *a2 = wk_narrow(wkx_pad(alpha, pad2, 2, "constant", (const double[]){NEG}), 1, 0, L);
    a2 = a2 ? wk_where(skipt, a2, negs) : NULL;
    wk_tensor *parts3[3] = {alpha, a1, a2};
    wk_tensor *st = a1 && a2 ? wk_stack(parts3, 3, 2) : NULL;
    wk_tensor *nw = st ? wk_add(wk_logsumexp(st, &last, 1, false), wk_select(E, 0, t)) : NULL;
    nw = nw ? wk_where(validt, nw, negs) : NULL;
    alpha = nw ? wk_where(wk_unsqueeze(wk_select(runt, 0, t), 1), nw, alpha) : NULL;
  }
  wk_tensor *ends = alpha ? wk_gather(alpha, 1, fint) : NULL; /* [N, 2] */
  if (ends) { /* an empty target has one final state, not two */
    wk_tensor *two = wk_ne(wk_select(fint, 1, 0), wk_select(fint, 1, 1));
    wk_tensor *second = wk_where(two, wk_select(ends, 1, 1), wk_select(negs, 1, 0));
    wk_tensor *pair[2] = {wk_select(ends, 1, 0), second};
    ends = second ? wk_stack(pair, 2, 1) : NULL;
  }
  wk_tensor *loss = ends ? wk_neg(wk_logsumexp(ends, &last, 1, false)) : NULL; /* [N] */
  if (loss) {
    wk_tensor *imp = wk_ge_scalar(wk_detach(loss), 1e29);
    wk_tensor *fill = wk_full_like(loss, zinf ? 0.0 : INFINITY, (wk_options){0});
    loss = wk_where(imp, fill, loss);
  }
  if (loss && red != 0) {
    if (red == 1) {
      wk_tensor *tlen = wk_to_dtype(wk_to_device(T(3), c->device), lp->dtype);
      loss = tlen ? wk_mean(wk_div(loss, wkx_clamp_min(tlen, WK_VI(1)))) : NULL;
    } else {
      loss = wk_sum(loss);
    }
  }
  return FINISH1(loss);
}

void wk__composites_nn_surface_register(void);
void wk__composites_nn_surface_register(void) {
  static const struct {
    const char *op;
    wk_kernel_fn fn;
  } ks[] = {{"l1_loss", k_elem_loss},
            {"smooth_l1_loss", k_elem_loss},
            {"huber_loss", k_elem_loss},
            {"soft_margin_loss", k_elem_loss},
            {"kl_div", k_kl_div},
            {"binary_cross_entropy", k_bce},
            {"poisson_nll_loss", k_poisson_nll},
            {"gaussian_nll_loss", k_gaussian_nll},
            {"margin_ranking_loss", k_margin_ranking},
            {"hinge_embedding_loss", k_hinge_embedding},
            {"cosine_embedding_loss", k_cosine_embedding},
            {"triplet_margin_loss", k_triplet_margin},
            {"multilabel_soft_margin_loss", k_multilabel_soft_margin},
            {"multi_margin_loss", k_multi_margin},
            {"cosine_similarity", k_cosine_similarity},
            {"pairwise_distance", k_pairwise_distance},
            {"cdist", k_cdist},
            {"interpolate", k_interpolate},
            {"interpolate_backward", k_interpolate_backward},
            {"avg_pool1d", k_avg_pool_nd},
            {"avg_pool3d", k_avg_pool_nd},
            {"adaptive_avg_pool1d", k_adaptive_avg_nd},
            {"adaptive_avg_pool3d", k_adaptive_avg_nd},
            {"max_pool1d_with_indices", k_max_pool_nd},
            {"max_pool3d_with_indices", k_max_pool_nd},
            {"adaptive_max_pool1d", k_max_pool_nd},
            {"adaptive_max_pool2d", k_max_pool_nd},
            {"adaptive_max_pool3d", k_max_pool_nd},
            {"conv1d", k_conv1d},
            {"conv3d", k_conv3d},
            {"conv1d.padding", k_conv_padding},
            {"conv2d.padding", k_conv_padding},
            {"conv3d.padding", k_conv_padding},
            {"conv_transpose1d", k_conv_transpose},
            {"conv_transpose2d", k_conv_transpose},
            {"conv_transpose3d", k_conv_transpose},
            {"pixel_shuffle", k_pixel_shuffle},
            {"pixel_unshuffle", k_pixel_shuffle},
            {"channel_shuffle", k_channel_shuffle},
            {"group_norm", k_group_norm},
            {"instance_norm", k_instance_norm},
            {"local_response_norm", k_local_response_norm},
            {"alpha_dropout", k_dropout_variant},
            {"feature_dropout", k_dropout_variant},
            {"feature_alpha_dropout", k_dropout_variant},
            {"im2col", k_im2col},
            {"col2im", k_col2im},
            {"lp_pool1d", k_lp_pool},
            {"lp_pool2d", k_lp_pool},
            {"max_unpool2d", k_max_unpool2d},
            {"affine_grid", k_affine_grid},
            {"grid_sample", k_grid_sample},
            {"embedding_bag", k_embedding_bag},
            {"ctc_loss", k_ctc_loss}};
  for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
    wk_kernel_desc d = {sizeof d, ks[i].op, WK_DEVICE_DEFAULT, WK_PRIORITY_FALLBACK, ks[i].fn, NULL, NULL,
                        "core.composite_nn"};
    wk_kernel_register(&d);
  }
}
