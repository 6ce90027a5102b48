/* cpu plugin: loss kernels: cross_entropy, nll_loss, mse_loss and
 * binary_cross_entropy_with_logits, in f32/f64 with double accumulators summed in
 * fixed blocks, so results do not depend on the number of threads. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

/* ---- helpers ------------------------------------------------------------------------- */

static inline double ld(const void *p, int64_t i, bool dbl) {
  return dbl ? ((const double *)p)[i] : (double)((const float *)p)[i];
}

/* Sum of n f32/f64 values in fixed blocks (deterministic for any thread count). */
#define BSUM_BLOCK 16384
typedef struct {
  const void *p;
  bool dbl;
  int64_t n;
  double *part;
} bsum_job;

static double bsum_block(const bsum_job *j, int64_t blk) {
  int64_t lo = blk * BSUM_BLOCK, hi = lo + BSUM_BLOCK < j->n ? lo + BSUM_BLOCK : j->n;
  double s = 0;
  if (j->dbl)
    for (int64_t i = lo; i < hi; i++) s += ((const double *)j->p)[i];
  else
    for (int64_t i = lo; i < hi; i++) s += ((const float *)j->p)[i];
  return s;
}

static void bsum_range(void *c, int64_t b, int64_t e) {
  const bsum_job *j = c;
  for (int64_t blk = b; blk < e; blk++) j->part[blk] = bsum_block(j, blk);
}

static double block_sum(const void *p, bool dbl, int64_t n) {
  if (n <= 0) return 0;
  int64_t nb = (n + BSUM_BLOCK - 1) / BSUM_BLOCK;
  bsum_job j = {p, dbl, n, nb > 1 ? wk_malloc(sizeof(double) * (size_t)nb) : NULL};
  double s = 0;
  if (!j.part) { /* one block, or no memory: the same blocks, serially */
    for (int64_t blk = 0; blk < nb; blk++) s += bsum_block(&j, blk);
    return s;
  }
  cpu_par(nb, BSUM_BLOCK, bsum_range, &j);
  for (int64_t blk = 0; blk < nb; blk++) s += j.part[blk];
  wk_free(j.part);
  return s;
}

/* ---- classification losses --------------------------------------------------------------- */
/* Log-probabilities laid out as contiguous [N, C, S] (f32 or f64). */
typedef struct {
  const void *lp;
  bool dbl;
  int64_t N, C, S;
  const int64_t *tgt;       /* class indices [N*S], or NULL for probabilities */
  const void *prob;         /* probabilities [N, C, S] (same dtype as lp) */
  const double *w;          /* class weights [C] or NULL */
  int64_t ignore;
  double ls;                /* label smoothing */
  double *loss, *wsum;      /* per (n, s) */
} nll_job;

static void nll_range(void *p, int64_t b, int64_t e) {
  const nll_job *j = p;
  const int64_t C = j->C, S = j->S;
  for (int64_t r = b; r < e; r++) {
    int64_t n = r / S, s = r % S, base = n * C * S + s;
    double loss = 0, wt = 0;
    if (j->tgt) {
      int64_t t = j->tgt[r];
      if (t != j->ignore) {
        wt = j->w ? j->w[t] : 1;
        loss = -wt * ld(j->lp, base + t * S, j->dbl);
        if (j->ls > 0) {
          double sm = 0;
          for (int64_t c = 0; c < C; c++) sm -= (j->w ? j->w[c] : 1) * ld(j->lp, base + c * S, j->dbl);
          loss = (1 - j->ls) * loss + j->ls / (double)C * sm;
        }
      }
    } else {
      for (int64_t c = 0; c < C; c++) {
        double q = ld(j->prob, base + c * S, j->dbl);
        if (j->ls > 0) q = q * (1 - j->ls) + j->ls / (double)C;
        loss -= (j->w ? j->w[c] : 1) * q * ld(j->lp, base + c * S, j->dbl);
      }
      wt = 1;
    }
    j->loss[r] = loss;
    j->wsum[r] = wt;
  }
}

/* The shared tail of cross_entropy and nll_loss. lp: log-probabilities,
 * contiguous f32/f64 shaped like the input; target: class indices or
 * probabilities (prob=true, contiguous of lp's dtype). Shapes, dtypes and
 * options were checked by the op's meta function. */
static wk_status nll_finish(const char *op, wk_tensor *lp, wk_tensor *target, bool prob, wk_tensor *weight,
                            int64_t reduction, int64_t ignore, double ls, const wk_meta_out *meta, wk_value *outs) {
  wk_dtype out_dt = meta->dtype;
  int nd = wk_tensor_dim(lp);
  const int64_t *sz = wk_tensor_sizes(lp);
  int cdim = nd >= 2 ? 1 : 0;
  int64_t N = nd >= 2 ? sz[0] : 1, C = sz[cdim], S = 1;
  for (int i = 2; i < nd; i++) S *= sz[i];
  int64_t rows = N * S;
  double *buf = wk_malloc(sizeof(double) * (size_t)(2 * rows + C + 1));
  if (!buf) return wk_error(WK_ERR_NO_MEMORY, "%s(): out of memory", op);
  double *w = weight ? buf + 2 * rows : NULL;
  wk_tensor *tg = NULL, *res = NULL;
  wk_status s = WK_OK;
  if (weight && (s = wk_tensor_to_f64(weight, w, C))) goto done;
  nll_job j = {wk_tensor_data(lp), wk_tensor_dtype(lp) == WK_F64, N, C, S, NULL, NULL, w, ignore, ls, buf, buf + rows};
  if (prob) {
    j.prob = wk_tensor_data(target);
  } else {
    if (!(tg = cpu_prep(target, WK_I64))) {
      s = wk_last_error();
      goto done;
    }
    j.tgt = wk_tensor_data(tg);
    for (int64_t r = 0; r < rows; r++)
      if (j.tgt[r] != ignore && (j.tgt[r] < 0 || j.tgt[r] >= C)) {
        s = wk_error(WK_ERR_INDEX, "%s(): Target %lld is out of bounds.", op, (long long)j.tgt[r]);
        goto done;
      }
  }
  cpu_par(rows, C, nll_range, &j);
  if (reduction == 0) {
    res = cpu_from_doubles(buf, rows, meta->sizes, meta->ndim, out_dt);
  } else {
    double tot = block_sum(buf, true, rows);
    if (reduction == 1) tot /= block_sum(buf + rows, true, rows);
    res = wk_scalar_tensor(tot, out_dt);
  }
  if (!res) s = wk_last_error();
done:
  wk_free(buf);
  wk_release(tg);
  if (!s) outs[0] = WK_VT(res);
  return s;
}

static wk_status k_cross_entropy(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "cross_entropy";
  wk_tensor *self = WK_ARG_T(0), *target = WK_ARG_T(1), *weight = WK_ARG_OPT_T(2);
  int64_t reduction = WK_ARG_I(3), ignore = WK_ARG_I(4);
  double ls = WK_ARG_F(5);
  wk_status s = WK_OK;
  int nd = wk_tensor_dim(self);
  bool prob = cpu_same_shape(self, target); /* class probabilities (the meta function checked both forms) */
  const wk_meta_out *meta = wk_kernel_meta(ctx, 0);
  wk_dtype cd = cpu_fcompute(meta->dtype);
  wk_tensor *x = cpu_prep(self, cd), *lp = x ? cpu_softmax_cd(x, nd >= 2 ? 1 : 0, true) : NULL;
  wk_tensor *tp = prob && lp ? cpu_prep(target, cd) : NULL;
  wk_release(x);
  if (!lp || (prob && !tp)) s = wk_last_error();
  if (!s) s = nll_finish(op, lp, prob ? tp : target, prob, weight, reduction, ignore, ls, meta, outs);
  wk_release(lp);
  wk_release(tp);
  return s;
}

static wk_status k_nll_loss(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "nll_loss";
  wk_tensor *self = WK_ARG_T(0), *target = WK_ARG_T(1), *weight = WK_ARG_OPT_T(2);
  int64_t reduction = WK_ARG_I(3), ignore = WK_ARG_I(4);
  wk_tensor *lp = cpu_prep(self, cpu_fcompute(wk_tensor_dtype(self)));
  if (!lp) return wk_last_error();
  wk_status s = nll_finish(op, lp, target, false, weight, reduction, ignore, 0, wk_kernel_meta(ctx, 0), outs);
  wk_release(lp);
  return s;
}

/* ---- pointwise losses ---------------------------------------------------------------------- */
typedef struct {
  bool dbl, has_w, has_pw;
} pl_ctx;

#define DEF_MSE(T, SUF)                                                             \
  static void mse_##SUF(void *c, char **d, const int64_t *s, int64_t n) {           \
    for (int64_t i = 0; i < n; i++) {                                               \
      T v = *(const T *)(d[1] + i * s[1]) - *(const T *)(d[2] + i * s[2]);          \
      *(T *)(d[0] + i * s[0]) = v * v;                                              \
    }                                                                               \
  }
DEF_MSE(float, f32)
DEF_MSE(double, f64)

/* loss = (1 - t) x - (1 + (pw - 1) t) logsigmoid(x), times w. */
#define DEF_BCE(T, SUF, EXP, LOG1P)                                                   \
  static void bce_##SUF(void *c, char **d, const int64_t *s, int64_t n) {             \
    const pl_ctx *pc = c;                                                             \
    int k = 3;                                                                        \
    int wi = pc->has_w ? k++ : 0, pi = pc->has_pw ? k++ : 0;                          \
    for (int64_t i = 0; i < n; i++) {                                                 \
      T x = *(const T *)(d[1] + i * s[1]), t = *(const T *)(d[2] + i * s[2]);         \
      T lsig = (x < 0 ? x : 0) - LOG1P(EXP(-(x < 0 ? -x : x)));                        \
      T lw = pi ? (*(const T *)(d[pi] + i * s[pi]) - 1) * t + 1 : 1;                  \
      T l = (1 - t) * x - lw * lsig;                                                  \
      if (wi) l *= *(const T *)(d[wi] + i * s[wi]);                                   \
      *(T *)(d[0] + i * s[0]) = l;                                                    \
    }                                                                                 \
  }
DEF_BCE(float, f32, expf, log1pf)
DEF_BCE(double, f64, exp, log1p)

/* Runs a pointwise loss over ops[1..n-1] (already in dtype cd) into a new
 * tensor of shape/ndim, then reduces it and converts to out_dt. */
static wk_status pointwise_loss(const char *op, wk_tensor **ops, int n, const int64_t *shape, int nd, wk_dtype cd,
                                wk_loop_fn fn, pl_ctx *pc, int64_t reduction, wk_dtype out_dt, wk_value *outs) {
  wk_tensor *L = cpu_empty(shape, nd, cd), *res = NULL;
  if (!L) return wk_last_error();
  ops[0] = L;
  wk_iter it;
  wk_status s = wk_iter_init(&it, op, ops, n);
  if (s) {
    wk_release(L);
    return s;
  }
  wk_iter_run(&it, fn, pc);
  if (reduction == 0) {
    res = wk_cast_own(L, out_dt);
  } else {
    int64_t numel = wk_tensor_numel(L);
    double tot = block_sum(wk_tensor_data(L), cd == WK_F64, numel);
    if (reduction == 1) tot /= (double)numel;
    wk_release(L);
    res = wk_scalar_tensor(tot, out_dt);
  }
  return wk_kernel_out1(outs, res);
}

static wk_status k_mse_loss(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "mse_loss";
  wk_tensor *self = WK_ARG_T(0), *target = WK_ARG_T(1);
  int64_t reduction = WK_ARG_I(2);
  wk_dtype rt = wk_kernel_meta(ctx, 0)->dtype; /* arguments checked by the meta function */
  wk_status s;
  wk_tensor *pair[2] = {self, target};
  int64_t shape[WK_MAX_DIMS];
  int nd = 0;
  if ((s = wk_broadcast_shapes("mse_loss()", pair, 2, shape, &nd))) return s;
  wk_dtype cd = cpu_fcompute(rt);
  wk_tensor *a = wk_kernel_cast(self, cd), *b = wk_kernel_cast(target, cd);
  if (!a || !b) {
    s = wk_last_error();
  } else {
    wk_tensor *ops[3] = {NULL, a, b};
    pl_ctx pc = {cd == WK_F64, false, false};
    s = pointwise_loss(op, ops, 3, shape, nd, cd, cd == WK_F64 ? mse_f64 : mse_f32, &pc, reduction, rt, outs);
  }
  wk_release(a);
  wk_release(b);
  return s;
}

static wk_status k_bce_logits(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "binary_cross_entropy_with_logits";
  wk_tensor *self = WK_ARG_T(0), *target = WK_ARG_T(1), *weight = WK_ARG_OPT_T(2), *pw = WK_ARG_OPT_T(3);
  int64_t reduction = WK_ARG_I(4);
  wk_status s;
  wk_dtype rt = wk_kernel_meta(ctx, 0)->dtype; /* shapes and dtypes checked by the meta function */
  wk_dtype cd = cpu_fcompute(rt);
  wk_tensor *ops[5] = {NULL, wk_kernel_cast(self, cd), wk_kernel_cast(target, cd), NULL, NULL};
  int n = 3;
  bool ok = ops[1] && ops[2];
  if (weight) ok = ok && (ops[n++] = wk_kernel_cast(weight, cd));
  if (pw) ok = ok && (ops[n++] = wk_kernel_cast(pw, cd));
  if (!ok) {
    s = wk_last_error();
  } else {
    pl_ctx pc = {cd == WK_F64, weight != NULL, pw != NULL};
    s = pointwise_loss(op, ops, n, wk_tensor_sizes(self), wk_tensor_dim(self), cd, cd == WK_F64 ? bce_f64 : bce_f32,
                       &pc, reduction, rt, outs);
  }
  for (int i = 1; i < 5; i++) wk_release(ops[i]);
  return s;
}

wk_status cpu_register_loss(void) {
  wk_status s = cpu_reg("cross_entropy", k_cross_entropy, NULL);
  if (!s) s = cpu_reg("nll_loss", k_nll_loss, NULL);
  if (!s) s = cpu_reg("mse_loss", k_mse_loss, NULL);
  if (!s) s = cpu_reg("binary_cross_entropy_with_logits", k_bce_logits, NULL);
  return s;
}
