/* Composite kernels of issue 21's nn and loss surface: the losses (l1, smooth_l1, huber,
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

#define T(n) (args[n].u.t)
#define OPT(n) (args[n].tag == WK_V_TENSOR ? args[n].u.t : NULL)

/* A kernel runs its parts at call depth 0 inside a scope of its own (as derivative formulas do),
 * so the parts' temporaries belong to that scope. BEGIN_K opens it, finish closes it. */
#define BEGIN_K                 \
  int depth__ = wk__call_depth; \
  wk__call_depth = 0;           \
  wk_scope_begin()

/* Ends a kernel: the results r[0..n) leave the kernel's scope (new references in outs). */
static wk_status finish(wk_value *outs, wk_tensor *const *r, int n, int depth) {
  wk_status s = WK_OK;
  for (int i = 0; i < n && !s; i++)
    if (!r[i]) s = wk_last_error() ? wk_last_error() : WK_ERR_INTERNAL;
  for (int i = 0; i < n && !s; i++) outs[i] = WK_VT(wk_scope_keep(r[i]));
  wk_scope_end();
  wk__call_depth = depth;
  return s;
}
#define FINISH1(t) finish(outs, (wk_tensor *const[]){(t)}, 1, depth__)
/* Ends a kernel with an error already recorded. */
#define FAIL_K() finish(outs, (wk_tensor *const[]){NULL}, 1, depth__)

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
    double b = args[3].tag == WK_V_FLOAT ? args[3].u.f : 0;
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
            {"cdist", k_cdist}};
  for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
    wk_kernel_desc d = {sizeof d, ks[i].op, WK_DEVICE_DEFAULT, WK_PRIORITY_FALLBACK, ks[i].fn, NULL, NULL,
                        "core.composite_nn"};
    wk_kernel_register(&d);
  }
}
