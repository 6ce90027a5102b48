/* cuda loss family: cross_entropy, nll_loss, mse_loss and
 * binary_cross_entropy_with_logits, written with the cuda ops of the other
 * families (log_softmax, gather, index_select, reductions, pointwise) with
 * the cpu plugin's checks, formulas and result dtypes. The sums are the
 * reduction family's deterministic trees (double accumulators). Temporaries
 * are collected in a small arena and released together. */
#include <math.h>
#include <string.h>

#include "cuda_kernels.h"

#define ARENA 48
typedef struct {
  wk_tensor *t[ARENA];
  int n;
  bool failed;
} arena;

/* Records t (a new reference) for release at the end; NULL marks failure. */
static wk_tensor *K(arena *a, wk_tensor *t) {
  if (!t || a->n == ARENA) {
    if (t) wk_release(t), wk_error(WK_ERR_INTERNAL, "cuda loss: arena full");
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
/* The final result: retained out of the arena, which is then freed. */
static wk_status finish(arena *a, wk_tensor *r, wk_value *outs) {
  if (r && !a->failed)
    r = wk_retain(r);
  else
    r = NULL;
  wk_status s = r ? WK_OK : wk_last_error();
  arena_free(a);
  if (r) outs[0] = WK_VT(r);
  return s;
}

/* sum of every element in double (the reduction's dtype argument). */
static wk_tensor *sum_dtype(wk_tensor *x, wk_dtype dt) {
  if (!x) return NULL;
  return wkx_sum(x, dt);
}

static wk_status check_reduction(const char *op, int64_t r) {
  if (r >= 0 && r <= 2) return WK_OK;
  return wk_error(WK_ERR_INVALID_ARG, "%s(): reduction must be 0 (none), 1 (mean) or 2 (sum), got %lld", op,
                  (long long)r);
}

static bool same_shape(const wk_tensor *a, const wk_tensor *b) {
  int n = wk_tensor_dim(a);
  return n == wk_tensor_dim(b) && memcmp(wk_tensor_sizes(a), wk_tensor_sizes(b), sizeof(int64_t) * (size_t)n) == 0;
}

static wk_status check_index_target(const char *op, wk_tensor *self, wk_tensor *target) {
  char a[160], b[160], c[160];
  int nd = wk_tensor_dim(self), tnd = wk_tensor_dim(target);
  const int64_t *sz = wk_tensor_sizes(self), *tsz = wk_tensor_sizes(target);
  if (!wk_dtype_is_integral(wk_tensor_dtype(target)))
    return wk_error(WK_ERR_DTYPE, "%s(): expected target of an integer dtype (class indices, i64), got %s", op,
                    wk_dtype_name(wk_tensor_dtype(target)));
  if (nd >= 2 && tnd >= 1 && tsz[0] != sz[0])
    return wk_error(WK_ERR_SHAPE, "%s(): Expected input batch_size (%lld) to match target batch_size (%lld).", op,
                    (long long)sz[0], (long long)tsz[0]);
  int64_t exp[WK_MAX_DIMS];
  int en = 0;
  for (int i = 0; i < nd; i++)
    if (i != (nd >= 2 ? 1 : 0)) exp[en++] = sz[i];
  bool same = en == tnd;
  for (int i = 0; same && i < en; i++) same = exp[i] == tsz[i];
  if (!same) {
    return wk_error(WK_ERR_SHAPE, "%s(): Expected target size %s, got %s (input of shape %s)", op,
                    wk_sizes_str(exp, en, a, sizeof a),
                    wk_shape_str(target, b, sizeof b), wk_shape_str(self, c, sizeof c));
  }
  return WK_OK;
}

/* The shared tail of cross_entropy and nll_loss (the cpu's nll_finish): lp
 * log-probabilities in the compute dtype cd, target class indices (checked)
 * or probabilities (prob, already in cd). */
static wk_status nll_finish(const char *op, wk_tensor *lp, wk_tensor *target, bool prob, wk_tensor *weight,
                            int64_t reduction, int64_t ignore, double ls, wk_dtype out_dt, wk_device dev,
                            wk_value *outs) {
  int nd = wk_tensor_dim(lp);
  const int64_t *sz = wk_tensor_sizes(lp);
  int cdim = nd >= 2 ? 1 : 0;
  int64_t N = nd >= 2 ? sz[0] : 1, C = sz[cdim], S = 1;
  for (int i = 2; i < nd; i++) S *= sz[i];
  char a[160];
  if (weight && wk_tensor_numel(weight) != C)
    return wk_error(WK_ERR_SHAPE,
                    "%s(): weight tensor should be defined either for all %lld classes or no classes but got weight "
                    "tensor of shape: %s",
                    op, (long long)C, wk_shape_str(weight, a, sizeof a));
  wk_dtype cd = wk_tensor_dtype(lp);
  arena ar = {{0}, 0, false};
  int64_t s3[3] = {N, C, S}, s1[3] = {N, 1, S}, wsh[3] = {1, C, 1};
  wk_tensor *lp3 = K(&ar, wk_reshape(lp, s3, 3));
  wk_tensor *w3 = weight ? K(&ar, wk_reshape(K(&ar, cuda_operand(weight, cd, dev)), wsh, 3)) : NULL;
  wk_tensor *loss = NULL, *wt = NULL;
  if (prob) {
    wk_tensor *q = K(&ar, wk_reshape(target, s3, 3));
    if (ls > 0) q = K(&ar, wk_add_scalar(K(&ar, wk_mul_scalar(q, 1 - ls)), ls / (double)C));
    wk_tensor *t = K(&ar, wk_mul(q, lp3));
    if (w3) t = K(&ar, wk_mul(t, w3));
    loss = K(&ar, wk_neg(K(&ar, wk_sum_dim(t, (int64_t[]){1}, 1, true))));
  } else {
    wk_tensor *tg = K(&ar, cuda_operand(target, WK_I64, dev));
    wk_tensor *t1 = K(&ar, wk_reshape(tg, s1, 3));
    wk_tensor *valid = K(&ar, wkx_ne__Scalar(t1, WK_VI(ignore)));
    /* bounds: a valid target outside [0, C) is an error naming its value */
    wk_tensor *oob = K(&ar, wk_logical_and(valid, K(&ar, wk_logical_or(K(&ar, wkx_lt__Scalar(t1, WK_VI(0))),
                                                                       K(&ar, wkx_ge__Scalar(t1, WK_VI(C)))))));
    wk_tensor *anyb = K(&ar, wk_any(oob));
    double bad = 0;
    if (!ar.failed && wk_item(anyb, &bad)) ar.failed = true;
    if (!ar.failed && bad != 0) {
      wk_tensor *h = K(&ar, wk_to_device(tg, wk_cpu())), *hc = h ? K(&ar, wk_contiguous(h)) : NULL;
      if (hc) {
        const int64_t *v = wk_tensor_data(hc);
        for (int64_t i = 0, n = wk_tensor_numel(hc); i < n; i++)
          if (v[i] != ignore && (v[i] < 0 || v[i] >= C)) {
            wk_error(WK_ERR_INDEX, "%s(): Target %lld is out of bounds.", op, (long long)v[i]);
            break;
          }
      }
      arena_free(&ar);
      return wk_last_error();
    }
    wk_tensor *zero = K(&ar, wk_zeros_like(t1, (wk_options){.dtype = WK_I64, .device = dev}));
    wk_tensor *safe = K(&ar, wk_where(valid, t1, zero));
    wk_tensor *validf = K(&ar, wk_to_dtype(valid, cd));
    wk_tensor *picked = K(&ar, cuda_gather_nocheck(lp3, 1, safe)); /* [N, 1, S] */
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
      wk_tensor *sm = K(&ar, wk_neg(K(&ar, wk_sum_dim(wl, (int64_t[]){1}, 1, true))));
      loss = K(&ar, wk_add(K(&ar, wk_mul_scalar(loss, 1 - ls)),
                           K(&ar, wk_mul(K(&ar, wk_mul_scalar(sm, ls / (double)C)), validf))));
    }
  }
  wk_tensor *res = NULL;
  if (!ar.failed) {
    if (reduction == 0) {
      int64_t tsz[WK_MAX_DIMS];
      int tn = 0;
      for (int i = 0; i < nd; i++)
        if (i != cdim) tsz[tn++] = sz[i];
      res = K(&ar, wk_to_dtype(K(&ar, wk_reshape(loss, tsz, tn)), out_dt));
    } else {
      wk_tensor *tot = K(&ar, sum_dtype(loss, WK_F64));
      if (reduction == 1)
        tot = wt ? K(&ar, wk_div(tot, K(&ar, sum_dtype(wt, WK_F64)))) : K(&ar, wk_div_scalar(tot, (double)(N * S)));
      res = tot ? K(&ar, wk_to_dtype(tot, out_dt)) : NULL;
    }
  }
  return finish(&ar, res, outs);
}

static wk_status k_cross_entropy(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "cross_entropy";
  wk_tensor *self = WK_ARG_T(0), *target = WK_ARG_T(1), *weight = WK_ARG_OPT_T(2);
  int64_t reduction = WK_ARG_I(3), ignore = WK_ARG_I(4);
  double ls = WK_ARG_F(5);
  wk_status s = WK_OK;
  if (!wk_dtype_is_floating(wk_tensor_dtype(self)))
    return wk_error(WK_ERR_DTYPE, "%s(): expected a floating point input, got %s", op,
                    wk_dtype_name(wk_tensor_dtype(self)));
  if ((s = check_reduction(op, reduction))) return s;
  if (!(ls >= 0 && ls <= 1))
    return wk_error(WK_ERR_INVALID_ARG, "%s(): label_smoothing must be between 0.0 and 1.0. Got: %g", op, ls);
  int nd = wk_tensor_dim(self);
  if (nd < 1) return wk_error(WK_ERR_SHAPE, "%s(): input tensor should be 1D or more, got a 0-dim tensor", op);
  bool prob = same_shape(self, target);
  wk_dtype dt = wk_tensor_dtype(self), out_dt = dt;
  if (prob) {
    if (!wk_dtype_is_floating(wk_tensor_dtype(target)))
      return wk_error(WK_ERR_DTYPE, "%s(): Expected floating point type for target with class probabilities, got %s",
                      op, wk_dtype_name(wk_tensor_dtype(target)));
    if (ignore >= 0)
      return wk_error(WK_ERR_INVALID_ARG, "%s(): ignore_index is not supported for floating point target", op);
    out_dt = wk_promote_types(dt, wk_tensor_dtype(target));
  } else if ((s = check_index_target(op, self, target))) {
    return s;
  }
  wk_device dev = ctx->device;
  if ((s = cuda_enter(op, dev))) return s;
  wk_dtype cd = out_dt == WK_F64 ? WK_F64 : WK_F32;
  wk_tensor *x = cuda_operand(self, cd, dev), *lp = x ? wk_log_softmax(x, nd >= 2 ? 1 : 0) : NULL;
  wk_tensor *tp = prob && lp ? cuda_dense(target, cd, dev) : NULL;
  wk_release(x);
  if (!lp || (prob && !tp)) s = wk_last_error();
  if (!s) s = nll_finish(op, lp, prob ? tp : target, prob, weight, reduction, ignore, ls, out_dt, dev, outs);
  wk_release(lp);
  wk_release(tp);
  return s;
}

static wk_status k_nll_loss(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "nll_loss";
  wk_tensor *self = WK_ARG_T(0), *target = WK_ARG_T(1), *weight = WK_ARG_OPT_T(2);
  int64_t reduction = WK_ARG_I(3), ignore = WK_ARG_I(4);
  if (!wk_dtype_is_floating(wk_tensor_dtype(self)))
    return wk_error(WK_ERR_DTYPE, "%s(): expected a floating point input, got %s", op,
                    wk_dtype_name(wk_tensor_dtype(self)));
  wk_status s = check_reduction(op, reduction);
  if (s) return s;
  if (wk_tensor_dim(self) < 1)
    return wk_error(WK_ERR_SHAPE, "%s(): input tensor should be 1D or more, got a 0-dim tensor", op);
  if ((s = check_index_target(op, self, target))) return s;
  wk_device dev = ctx->device;
  if ((s = cuda_enter(op, dev))) return s;
  wk_dtype dt = wk_tensor_dtype(self);
  wk_tensor *lp = cuda_dense(self, dt == WK_F64 ? WK_F64 : WK_F32, dev);
  if (!lp) return wk_last_error();
  s = nll_finish(op, lp, target, false, weight, reduction, ignore, 0, dt, dev, outs);
  wk_release(lp);
  return s;
}

/* sum or mean of L, then the result dtype. */
static wk_tensor *reduce_loss(arena *ar, wk_tensor *L, int64_t reduction, wk_dtype rt) {
  if (reduction == 0) return K(ar, wk_to_dtype(L, rt));
  wk_tensor *tot = K(ar, sum_dtype(L, WK_F64));
  if (reduction == 1 && tot) tot = K(ar, wk_div_scalar(tot, (double)wk_tensor_numel(L)));
  return tot ? K(ar, wk_to_dtype(tot, rt)) : NULL;
}

static wk_status k_mse_loss(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "mse_loss";
  wk_tensor *self = WK_ARG_T(0), *target = WK_ARG_T(1);
  int64_t reduction = WK_ARG_I(2);
  wk_status s = check_reduction(op, reduction);
  if (s) return s;
  wk_dtype rt = wk_result_type(args, 2);
  if (!wk_dtype_is_floating(rt))
    return wk_error(WK_ERR_DTYPE, "%s(): expected floating point inputs, got %s and %s", op,
                    wk_dtype_name(wk_tensor_dtype(self)), wk_dtype_name(wk_tensor_dtype(target)));
  wk_tensor *pair[2] = {self, target};
  int64_t shape[WK_MAX_DIMS];
  int nd = 0;
  if ((s = wk_broadcast_shapes("mse_loss()", pair, 2, shape, &nd))) return s;
  wk_device dev = ctx->device;
  if ((s = cuda_enter(op, dev))) return s;
  wk_dtype cd = rt == WK_F64 ? WK_F64 : WK_F32;
  arena ar = {{0}, 0, false};
  wk_tensor *d = K(&ar, wk_sub(K(&ar, cuda_operand(self, cd, dev)), K(&ar, cuda_operand(target, cd, dev))));
  wk_tensor *L = K(&ar, wk_mul(d, d));
  return finish(&ar, L ? reduce_loss(&ar, L, reduction, rt) : NULL, outs);
}

static wk_status k_bce_logits(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "binary_cross_entropy_with_logits";
  wk_tensor *self = WK_ARG_T(0), *target = WK_ARG_T(1), *weight = WK_ARG_OPT_T(2), *pw = WK_ARG_OPT_T(3);
  int64_t reduction = WK_ARG_I(4);
  char a[160], b[160];
  wk_status s = check_reduction(op, reduction);
  if (s) return s;
  if (!same_shape(self, target))
    return wk_error(WK_ERR_SHAPE, "%s(): Target size (%s) must be the same as input size (%s)", op,
                    wk_shape_str(target, a, sizeof a), wk_shape_str(self, b, sizeof b));
  wk_dtype rt = wk_result_type(args, 2);
  if (!wk_dtype_is_floating(rt))
    return wk_error(WK_ERR_DTYPE, "%s(): expected floating point inputs, got %s and %s", op,
                    wk_dtype_name(wk_tensor_dtype(self)), wk_dtype_name(wk_tensor_dtype(target)));
  const char *names[2] = {"weight", "pos_weight"};
  wk_tensor *extra[2] = {weight, pw};
  for (int i = 0; i < 2; i++) {
    if (!extra[i]) continue;
    wk_tensor *pair[2] = {self, extra[i]};
    int64_t shape[WK_MAX_DIMS];
    int nd = 0;
    if (wk_broadcast_shapes(op, pair, 2, shape, &nd) == WK_OK && nd == wk_tensor_dim(self) &&
        !memcmp(shape, wk_tensor_sizes(self), sizeof(int64_t) * (size_t)nd))
      continue;
    return wk_error_replace(WK_ERR_SHAPE, "%s(): %s of shape %s cannot be broadcast to the input shape %s", op,
                            names[i], wk_shape_str(extra[i], a, sizeof a), wk_shape_str(self, b, sizeof b));
  }
  wk_device dev = ctx->device;
  if ((s = cuda_enter(op, dev))) return s;
  wk_dtype cd = rt == WK_F64 ? WK_F64 : WK_F32;
  arena ar = {{0}, 0, false};
  wk_tensor *x = K(&ar, cuda_operand(self, cd, dev)), *t = K(&ar, cuda_operand(target, cd, dev));
  /* loss = (1 - t) x - (1 + (pw - 1) t) logsigmoid(x), logsigmoid(x) = min(x, 0) - log1p(exp(-|x|)) */
  wk_tensor *lsig = K(&ar, wk_sub(K(&ar, wk_clamp(x, -INFINITY, 0)),
                                  K(&ar, wk_log1p(K(&ar, wk_exp(K(&ar, wk_neg(K(&ar, wk_abs(x))))))))));
  wk_tensor *lw = NULL;
  if (pw) lw = K(&ar, wk_add_scalar(K(&ar, wk_mul(K(&ar, wk_sub_scalar(K(&ar, cuda_operand(pw, cd, dev)), 1)), t)), 1));
  wk_tensor *omt = K(&ar, wk_neg(K(&ar, wk_sub_scalar(t, 1)))); /* 1 - t */
  wk_tensor *L = K(&ar, wk_sub(K(&ar, wk_mul(omt, x)), lw ? K(&ar, wk_mul(lw, lsig)) : lsig));
  if (weight) L = K(&ar, wk_mul(L, K(&ar, cuda_operand(weight, cd, dev))));
  return finish(&ar, L ? reduce_loss(&ar, L, reduction, rt) : NULL, outs);
}

wk_status cuda_register_loss(void) {
  wk_status s = cuda_reg("cross_entropy", k_cross_entropy, NULL, NULL, "cuda.loss");
  if (!s) s = cuda_reg("nll_loss", k_nll_loss, NULL, NULL, "cuda.loss");
  if (!s) s = cuda_reg("mse_loss", k_mse_loss, NULL, NULL, "cuda.loss");
  if (!s) s = cuda_reg("binary_cross_entropy_with_logits", k_bce_logits, NULL, NULL, "cuda.loss");
  return s;
}
