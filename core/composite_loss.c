/* Device-generic loss composites: cross_entropy, nll_loss, mse_loss and
 * binary_cross_entropy_with_logits written with other ops (log_softmax, gather,
 * index_select, reductions, pointwise), registered by the core for every device
 * at fallback priority: any backend with those primitives gets the losses, and a
 * backend's fused kernel (the cpu plugin's) still wins by priority. Arguments
 * were checked by the ops' meta functions (meta_nn.c); sums run in f64. */
#include <math.h>
#include <string.h>

#include "internal.h"

/* Temporaries of one call, released together. */
#define ARENA 48
typedef struct {
  wk_tensor *t[ARENA];
  int n;
  bool failed;
} arena;

/* Records t (a new reference); NULL marks the call failed. */
static wk_tensor *K(arena *a, wk_tensor *t) {
  if (!t || a->n == ARENA) {
    if (t) {
      wk_release(t);
      wk_error(WK_ERR_INTERNAL, "loss composite: too many temporaries");
    }
    a->failed = true;
    return NULL;
  }
  a->t[a->n++] = t;
  return t;
}

static void arena_free(arena *a) {
  for (int i = 0; i < a->n; i++) wk_release(a->t[i]);
  a->n = 0;
}

/* The result r kept out of the arena, which is then freed. */
static wk_status finish(arena *a, wk_tensor *r, wk_value *outs) {
  r = r && !a->failed ? wk_retain(r) : NULL;
  wk_status s = r ? WK_OK : wk_last_error();
  arena_free(a);
  if (r) outs[0] = WK_VT(r);
  return s;
}

static wk_dtype compute_dtype(wk_dtype dt) {
  return dt == WK_F64 ? WK_F64 : WK_F32;
}

/* A valid class index outside [0, C) is an error naming its value (read on the
 * host; the meta device has no values to read). */
static wk_status check_targets(arena *ar, const char *op, wk_tensor *tg, wk_tensor *valid, int64_t C, int64_t ignore,
                               wk_device dev) {
  if (dev.type == WK_DEVICE_META) return WK_OK;
  wk_tensor *lo = K(ar, wkx_lt__Scalar(tg, WK_VI(0))), *hi = K(ar, wkx_ge__Scalar(tg, WK_VI(C)));
  wk_tensor *oob = K(ar, wk_logical_and(valid, K(ar, wk_logical_or(lo, hi))));
  wk_tensor *anyb = K(ar, wk_any(oob));
  double bad = 0;
  if (ar->failed || wk_item(anyb, &bad)) return wk_last_error();
  if (bad == 0) return WK_OK;
  wk_tensor *h = K(ar, wk_to_device(tg, wk_cpu())), *hc = h ? K(ar, wk_contiguous(h)) : NULL;
  if (!hc) return wk_last_error();
  const int64_t *v = wk_tensor_data(hc);
  for (int64_t i = 0, n = wk_tensor_numel(hc); i < n; i++)
    if (v[i] != ignore && (v[i] < 0 || v[i] >= C))
      return wk_error(WK_ERR_INDEX, "%s(): Target %lld is out of bounds.", op, (long long)v[i]);
  return wk_error(WK_ERR_INTERNAL, "%s(): a target is out of bounds", op);
}

/* The shared tail of cross_entropy and nll_loss: lp log-probabilities in the
 * compute dtype, target class indices or probabilities (prob, in lp's dtype). */
static wk_status nll_finish(const char *op, wk_tensor *lp, wk_tensor *target, bool prob, wk_tensor *weight,
                            int64_t reduction, int64_t ignore, double ls, const wk_meta_out *mo, wk_device dev,
                            wk_value *outs) {
  int nd = lp->ndim, cdim = nd >= 2 ? 1 : 0;
  int64_t N = nd >= 2 ? lp->sizes[0] : 1, C = lp->sizes[cdim], S = 1;
  for (int i = 2; i < nd; i++) S *= lp->sizes[i];
  wk_dtype cd = lp->dtype;
  arena ar = {{0}, 0, false};
  int64_t s3[3] = {N, C, S}, s1[3] = {N, 1, S}, wsh[3] = {1, C, 1}, dim1 = 1;
  wk_tensor *lp3 = K(&ar, wk_reshape(lp, s3, 3));
  wk_tensor *w3 = weight ? K(&ar, wk_reshape(K(&ar, wk_to_dtype(weight, cd)), wsh, 3)) : NULL;
  wk_tensor *loss = NULL, *wt = NULL;
  if (prob) {
    wk_tensor *q = K(&ar, wk_reshape(target, s3, 3));
    if (ls > 0) q = K(&ar, wk_add_scalar(K(&ar, wk_mul_scalar(q, 1 - ls)), ls / (double)C));
    wk_tensor *t = K(&ar, wk_mul(q, lp3));
    if (w3) t = K(&ar, wk_mul(t, w3));
    loss = K(&ar, wk_neg(K(&ar, wk_sum_dim(t, &dim1, 1, true))));
  } else {
    wk_tensor *tg = K(&ar, wk_to_dtype(target, WK_I64));
    wk_tensor *t1 = K(&ar, wk_reshape(tg, s1, 3));
    wk_tensor *valid = K(&ar, wkx_ne__Scalar(t1, WK_VI(ignore)));
    if (!ar.failed && check_targets(&ar, op, t1, valid, C, ignore, dev)) {
      wk_status s = wk_last_error();
      arena_free(&ar);
      return s;
    }
    wk_tensor *zero = K(&ar, wk_zeros_like(t1, (wk_options){.dtype = WK_I64, .device = dev}));
    wk_tensor *safe = K(&ar, wk_where(valid, t1, zero));
    wk_tensor *validf = K(&ar, wk_to_dtype(valid, cd));
    wk_tensor *picked = K(&ar, wk_gather(lp3, 1, safe)); /* [N, 1, S] */
    wk_tensor *wsel = NULL;
    if (w3) {
      int64_t flat = N * S;
      wk_tensor *sf = K(&ar, wk_reshape(safe, &flat, 1));
      wsel = K(&ar, wk_reshape(K(&ar, wk_index_select(K(&ar, wk_reshape(w3, &C, 1)), 0, sf)), s1, 3));
    }
    wt = wsel ? K(&ar, wk_mul(wsel, validf)) : validf;
    loss = K(&ar, wk_neg(K(&ar, wk_mul(picked, wt))));
    if (ls > 0) {
      wk_tensor *wl = w3 ? K(&ar, wk_mul(lp3, w3)) : lp3;
      wk_tensor *sm = K(&ar, wk_neg(K(&ar, wk_sum_dim(wl, &dim1, 1, true))));
      loss = K(&ar, wk_add(K(&ar, wk_mul_scalar(loss, 1 - ls)),
                           K(&ar, wk_mul(K(&ar, wk_mul_scalar(sm, ls / (double)C)), validf))));
    }
  }
  wk_tensor *res = NULL;
  if (!ar.failed) {
    if (reduction == 0) {
      res = K(&ar, wk_to_dtype(K(&ar, wk_reshape(loss, mo->sizes, mo->ndim)), mo->dtype));
    } else {
      wk_tensor *tot = K(&ar, wkx_sum(loss, WK_F64));
      if (reduction == 1)
        tot = wt ? K(&ar, wk_div(tot, K(&ar, wkx_sum(wt, WK_F64)))) : K(&ar, wk_div_scalar(tot, (double)(N * S)));
      res = tot ? K(&ar, wk_to_dtype(tot, mo->dtype)) : NULL;
    }
  }
  return finish(&ar, res, outs);
}

static bool same_sizes(const wk_tensor *a, const wk_tensor *b) {
  return a->ndim == b->ndim && !memcmp(a->sizes, b->sizes, sizeof(int64_t) * (size_t)a->ndim);
}

/* cross_entropy(self, target, weight?, reduction, ignore_index, label_smoothing) */
static wk_status k_cross_entropy(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *self = args[0].u.t, *target = args[1].u.t, *weight = args[2].tag == WK_V_NONE ? NULL : args[2].u.t;
  const wk_meta_out *mo = &ctx->meta[0];
  bool prob = same_sizes(self, target);
  wk_dtype cd = compute_dtype(mo->dtype);
  wk_tensor *x = wk_to_dtype(self, cd), *lp = x ? wk_log_softmax(x, self->ndim >= 2 ? 1 : 0) : NULL;
  wk_tensor *tp = prob && lp ? wk_to_dtype(target, cd) : NULL;
  wk_release(x);
  wk_status s = !lp || (prob && !tp) ? wk_last_error() : WK_OK;
  if (!s)
    s = nll_finish("cross_entropy", lp, prob ? tp : target, prob, weight, args[3].u.i, args[4].u.i, args[5].u.f, mo,
                   ctx->device, outs);
  wk_release(lp);
  wk_release(tp);
  return s;
}

/* nll_loss(self, target, weight?, reduction, ignore_index) */
static wk_status k_nll_loss(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *self = args[0].u.t, *weight = args[2].tag == WK_V_NONE ? NULL : args[2].u.t;
  wk_tensor *lp = wk_to_dtype(self, compute_dtype(self->dtype));
  if (!lp) return wk_last_error();
  wk_status s = nll_finish("nll_loss", lp, args[1].u.t, false, weight, args[3].u.i, args[4].u.i, 0, &ctx->meta[0],
                           ctx->device, outs);
  wk_release(lp);
  return s;
}

/* The loss L reduced (sum or mean, in f64) and converted to the result dtype. */
static wk_tensor *reduce_loss(arena *ar, wk_tensor *L, int64_t reduction, wk_dtype rt) {
  if (reduction == 0) return K(ar, wk_to_dtype(L, rt));
  wk_tensor *tot = K(ar, wkx_sum(L, WK_F64));
  if (reduction == 1 && tot) tot = K(ar, wk_div_scalar(tot, (double)wk_tensor_numel(L)));
  return tot ? K(ar, wk_to_dtype(tot, rt)) : NULL;
}

/* mse_loss(self, target, reduction) = reduce((self - target)^2) */
static wk_status k_mse_loss(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_dtype rt = ctx->meta[0].dtype, cd = compute_dtype(rt);
  arena ar = {{0}, 0, false};
  wk_tensor *d = K(&ar, wk_sub(K(&ar, wk_to_dtype(args[0].u.t, cd)), K(&ar, wk_to_dtype(args[1].u.t, cd))));
  wk_tensor *L = K(&ar, wk_mul(d, d));
  return finish(&ar, L ? reduce_loss(&ar, L, args[2].u.i, rt) : NULL, outs);
}

/* binary_cross_entropy_with_logits(self, target, weight?, pos_weight?, reduction):
 * loss = (1 - t) x - (1 + (pw - 1) t) logsigmoid(x), times weight, with
 * logsigmoid(x) = min(x, 0) - log1p(exp(-|x|)). */
static wk_status k_bce_logits(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *weight = args[2].tag == WK_V_NONE ? NULL : args[2].u.t;
  wk_tensor *pw = args[3].tag == WK_V_NONE ? NULL : args[3].u.t;
  wk_dtype rt = ctx->meta[0].dtype, cd = compute_dtype(rt);
  arena ar = {{0}, 0, false};
  wk_tensor *x = K(&ar, wk_to_dtype(args[0].u.t, cd)), *t = K(&ar, wk_to_dtype(args[1].u.t, cd));
  wk_tensor *lsig = K(&ar, wk_sub(K(&ar, wk_clamp(x, -INFINITY, 0)),
                                  K(&ar, wk_log1p(K(&ar, wk_exp(K(&ar, wk_neg(K(&ar, wk_abs(x))))))))));
  wk_tensor *lw = NULL;
  if (pw) lw = K(&ar, wk_add_scalar(K(&ar, wk_mul(K(&ar, wk_sub_scalar(K(&ar, wk_to_dtype(pw, cd)), 1)), t)), 1));
  wk_tensor *omt = K(&ar, wk_neg(K(&ar, wk_sub_scalar(t, 1)))); /* 1 - t */
  wk_tensor *L = K(&ar, wk_sub(K(&ar, wk_mul(omt, x)), lw ? K(&ar, wk_mul(lw, lsig)) : lsig));
  if (weight) L = K(&ar, wk_mul(L, K(&ar, wk_to_dtype(weight, cd))));
  return finish(&ar, L ? reduce_loss(&ar, L, args[4].u.i, rt) : NULL, outs);
}

void wk__composites_loss_register(void);
void wk__composites_loss_register(void) {
  static const struct {
    const char *op;
    wk_kernel_fn fn;
  } ks[] = {{"cross_entropy", k_cross_entropy},
            {"nll_loss", k_nll_loss},
            {"mse_loss", k_mse_loss},
            {"binary_cross_entropy_with_logits", k_bce_logits}};
  for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
    wk_kernel_desc d = {sizeof d, ks[i].op, WK_DEVICE_DEFAULT,    WK_PRIORITY_FALLBACK, ks[i].fn,
                        NULL,     NULL,     "core.composite_loss"};
    wk_kernel_register(&d);
  }
}
