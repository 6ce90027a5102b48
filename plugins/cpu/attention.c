/* cpu plugin: scaled_dot_product_attention, fused. The forward walks blocks of
 * query rows against blocks of keys with an online softmax (running max and
 * sum per row), so no [L, S] matrix is made; it keeps the logsumexp of each
 * row. The backward recomputes each probability from it (and each dropout
 * decision from the saved Philox state), FlashAttention's way. Causal masks,
 * boolean and additive masks (broadcast, read in place through strides) and
 * dropout. Every dtype computes in double (operands converted once); the
 * key blocks are transposed so the inner products vectorise. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

#define SD_BR 16 /* query rows per task */
#define SD_BC 64 /* keys per block */
/* The tile loops built twice, for AVX2 and the baseline, picked at load time
 * (GCC's function multiversioning; 4 doubles per operation instead of 2). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SD_SIMD __attribute__((target_clones("avx2", "default")))
#else
#define SD_SIMD
#endif

/* The problem, shared by both kernels. Tensors are contiguous f64; the mask is a strided view of [..., L, S] (a broadcast mask has zero
 * strides). */
typedef struct {
  int64_t BH, L, S, E, Ev;
  double scale;
  bool causal;
  /* mask: kind 0 none, 1 bool, 2 additive (f64) */
  int mkind;
  const char *mdata;
  int nb;                    /* batch dims */
  int64_t bsz[WK_MAX_DIMS];  /* batch sizes */
  int64_t mbst[WK_MAX_DIMS]; /* mask strides (elements) of the batch dims */
  int64_t mst_l, mst_s;
  /* dropout */
  bool drop;
  double keep_p, keep_scale;
  uint64_t seed, offset;
} sd_geom;

static int64_t mask_base(const sd_geom *g, int64_t bh) {
  int64_t off = 0;
  for (int d = g->nb - 1; d >= 0; d--) {
    off += (bh % g->bsz[d]) * g->mbst[d];
    bh /= g->bsz[d];
  }
  return off;
}

/* Dropout factor of element (bh, i, j): 0 or 1/(1-p); 1 without dropout. */
static inline double drop_factor(const sd_geom *g, int64_t bh, int64_t i, int64_t j) {
  if (!g->drop) return 1.0;
  uint32_t r[4];
  wk_philox_at(g->seed, g->offset + (uint64_t)((bh * g->L + i) * g->S + j), r);
  return (double)wk_u32_to_unit_f32(r[0]) < g->keep_p ? g->keep_scale : 0.0;
}

/* The mask's verdict on (i, j) at mask offset mb: -INFINITY (masked), else the
 * additive bias (0 without a float mask). */
static inline double sd_bias(const sd_geom *g, int64_t mb, int64_t i, int64_t j) {
  if (g->causal && j > i) return -INFINITY;
  if (!g->mkind) return 0.0;
  int64_t o = mb + i * g->mst_l + j * g->mst_s;
  if (g->mkind == 1) return ((const bool *)g->mdata)[o] ? 0.0 : -INFINITY;
  return ((const double *)g->mdata)[o];
}

/* Copies rows [j0, j0 + nc) of the row-major (n x d) block src into dst as
 * columns: dst[x * SD_BC + c] = src[(j0 + c) * d + x], so that the products
 * with one query row run over contiguous memory (vectorised). */
static void sd_transpose(double *dst, const double *src, int64_t j0, int nc, int64_t d) {
  for (int c = 0; c < nc; c++) {
    const double *r = src + (j0 + c) * d;
    for (int64_t x = 0; x < d; x++) dst[x * SD_BC + c] = r[x];
  }
}

/* s[0..nc) = row . cols[:, 0..nc) (cols from sd_transpose), summed over x in order. */
static inline void sd_rowdot(double *s, const double *row, const double *cols, int nc, int64_t d) {
  for (int c = 0; c < nc; c++) s[c] = 0;
  for (int64_t x = 0; x < d; x++) {
    const double rx = row[x], *cx = cols + x * SD_BC;
    for (int c = 0; c < nc; c++) s[c] += rx * cx[c];
  }
}

/* Everything runs in double: the operands are converted once (f32, f16 and
 * bf16 results are rounded from the double result). */
typedef struct {
  const sd_geom *g;
  const double *q, *k, *v;
  double *o, *lse;
  int64_t nrb; /* row blocks per (batch, head) */
  int failed;  /* a task could not allocate its tiles */
} sd_fwd_job;

SD_SIMD static void sd_fwd(void *p, int64_t b, int64_t e) {
  sd_fwd_job *j = p;
  const sd_geom *g = j->g;
  const int64_t L = g->L, S = g->S, E = g->E, Ev = g->Ev;
  double *buf = wk_malloc(sizeof(double) * (size_t)(SD_BR * Ev + E * SD_BC + 1));
  if (!buf) {
    j->failed = 1;
    return;
  }
  double *acc = buf, *kt = buf + SD_BR * Ev;
  double sc[SD_BR][SD_BC], m[SD_BR], l[SD_BR];
  for (int64_t t = b; t < e; t++) {
    int64_t bh = t / j->nrb, i0 = (t % j->nrb) * SD_BR, i1 = i0 + SD_BR < L ? i0 + SD_BR : L;
    int nr = (int)(i1 - i0);
    const double *Q = j->q + bh * L * E, *K = j->k + bh * S * E, *V = j->v + bh * S * Ev;
    double *O = j->o + bh * L * Ev;
    int64_t mb = g->mkind ? mask_base(g, bh) : 0;
    for (int r = 0; r < nr; r++) m[r] = -INFINITY, l[r] = 0;
    memset(acc, 0, sizeof(double) * (size_t)(nr * Ev));
    int64_t jend = g->causal && i1 < S ? i1 : S; /* causal: keys past the last row take no part */
    for (int64_t j0 = 0; j0 < jend; j0 += SD_BC) {
      int nc = (int)(j0 + SD_BC < jend ? SD_BC : jend - j0);
      sd_transpose(kt, K, j0, nc, E);
      for (int r = 0; r < nr; r++) {
        int64_t i = i0 + r;
        double *s = sc[r], bm = -INFINITY;
        sd_rowdot(s, Q + i * E, kt, nc, E);
        for (int c = 0; c < nc; c++) {
          double bias = sd_bias(g, mb, i, j0 + c);
          s[c] = bias == -INFINITY ? -INFINITY : s[c] * g->scale + bias;
          if (s[c] > bm) bm = s[c];
        }
        if (bm == -INFINITY) continue; /* nothing of this block takes part */
        double mn = bm > m[r] ? bm : m[r], alpha = exp(m[r] - mn);
        double *ai = acc + (size_t)r * (size_t)Ev;
        if (alpha != 1.0) {
          l[r] *= alpha;
          for (int64_t x = 0; x < Ev; x++) ai[x] *= alpha;
        }
        m[r] = mn;
        for (int c = 0; c < nc; c++) {
          if (s[c] == -INFINITY) continue;
          double pe = exp(s[c] - mn);
          l[r] += pe;
          double w = pe * drop_factor(g, bh, i, j0 + c);
          if (w == 0) continue;
          const double *vj = V + (j0 + c) * Ev;
          for (int64_t x = 0; x < Ev; x++) ai[x] += w * vj[x];
        }
      }
    }
    for (int r = 0; r < nr; r++) {
      double *oi = O + (i0 + r) * Ev;
      const double *ai = acc + (size_t)r * (size_t)Ev;
      if (l[r] == 0) { /* every key masked: NaN, as softmax over all -inf; no keys at all: 0 */
        for (int64_t x = 0; x < Ev; x++) oi[x] = S ? NAN : 0.0;
        j->lse[bh * L + i0 + r] = -INFINITY;
      } else {
        double inv = 1.0 / l[r];
        for (int64_t x = 0; x < Ev; x++) oi[x] = ai[x] * inv;
        j->lse[bh * L + i0 + r] = m[r] + log(l[r]);
      }
    }
  }
  wk_free(buf);
}

typedef struct {
  const sd_geom *g;
  const double *go, *q, *k, *v, *o, *lse;
  double *dq, *dk, *dv, *dm; /* dm: [BH, L, S] or NULL */
  int failed;
} sd_bwd_job;

/* One task per (batch, head): it owns that head's dK and dV. Key blocks run
 * outside the rows, so each block is transposed once; every sum runs in the
 * order the unblocked loops would take (dQ over keys, dK and dV over rows). */
SD_SIMD static void sd_bwd(void *p, int64_t b, int64_t e) {
  sd_bwd_job *j = p;
  const sd_geom *g = j->g;
  const int64_t L = g->L, S = g->S, E = g->E, Ev = g->Ev;
  double *buf = wk_malloc(sizeof(double) * (size_t)((E + Ev) * SD_BC + L + 1));
  if (!buf) {
    j->failed = 1;
    return;
  }
  double *kt = buf, *vt = kt + E * SD_BC, *delta = vt + Ev * SD_BC;
  double s[SD_BC], dp[SD_BC], pf[SD_BC], ds[SD_BC];
  for (int64_t bh = b; bh < e; bh++) {
    const double *Q = j->q + bh * L * E, *K = j->k + bh * S * E, *V = j->v + bh * S * Ev;
    const double *GO = j->go + bh * L * Ev, *O = j->o + bh * L * Ev, *LSE = j->lse + bh * L;
    double *DQ = j->dq + bh * L * E, *DK = j->dk + bh * S * E, *DV = j->dv + bh * S * Ev;
    double *DM = j->dm ? j->dm + bh * L * S : NULL;
    int64_t mb = g->mkind ? mask_base(g, bh) : 0;
    memset(DQ, 0, sizeof(double) * (size_t)(L * E));
    memset(DK, 0, sizeof(double) * (size_t)(S * E));
    memset(DV, 0, sizeof(double) * (size_t)(S * Ev));
    for (int64_t i = 0; i < L; i++) {
      double d = 0;
      for (int64_t x = 0; x < Ev; x++) d += GO[i * Ev + x] * O[i * Ev + x];
      delta[i] = d;
    }
    for (int64_t j0 = 0; j0 < S; j0 += SD_BC) {
      int nc = (int)(j0 + SD_BC < S ? SD_BC : S - j0);
      sd_transpose(kt, K, j0, nc, E);
      sd_transpose(vt, V, j0, nc, Ev);
      for (int64_t i = 0; i < L; i++) {
        const double *qi = Q + i * E, *gi = GO + i * Ev;
        double lse = LSE[i];
        bool any = false;
        if (lse == -INFINITY) { /* a row with every key masked: softmax gave NaN */
          for (int c = 0; c < nc; c++) ds[c] = NAN, pf[c] = 0;
          any = true;
        } else if (g->causal && j0 > i) { /* the whole block lies past the diagonal */
          for (int c = 0; c < nc; c++) ds[c] = 0;
        } else {
          sd_rowdot(s, qi, kt, nc, E);
          sd_rowdot(dp, gi, vt, nc, Ev);
          for (int c = 0; c < nc; c++) {
            double bias = sd_bias(g, mb, i, j0 + c);
            if (bias == -INFINITY) {
              ds[c] = pf[c] = 0;
              continue;
            }
            double pr = exp(s[c] * g->scale + bias - lse), f = drop_factor(g, bh, i, j0 + c);
            pf[c] = pr * f;
            ds[c] = pr * (f * dp[c] - delta[i]);
            any = true;
          }
        }
        if (DM)
          for (int c = 0; c < nc; c++) DM[i * S + j0 + c] = ds[c];
        if (!any) continue;
        double *dqi = DQ + i * E;
        for (int c = 0; c < nc; c++) {
          if (pf[c] != 0) {
            double *dvj = DV + (j0 + c) * Ev;
            for (int64_t x = 0; x < Ev; x++) dvj[x] += pf[c] * gi[x];
          }
          if (ds[c] == 0) continue;
          double dss = ds[c] * g->scale, *dkj = DK + (j0 + c) * E;
          const double *kj = K + (j0 + c) * E;
          for (int64_t x = 0; x < E; x++) {
            dqi[x] += dss * kj[x];
            dkj[x] += dss * qi[x];
          }
        }
      }
    }
  }
  wk_free(buf);
}

/* Fills g from the operands (checked by the meta function); *mview gets the
 * mask as a strided view of [..., L, S] in the compute dtype (or NULL). */
static wk_status sd_setup(sd_geom *g, wk_tensor *q, wk_tensor *k, wk_tensor *v, wk_tensor *mask, double p,
                          bool causal, const wk_value *scale, wk_dtype cd, wk_tensor **mview) {
  int nd = wk_tensor_dim(q);
  const int64_t *qs = wk_tensor_sizes(q);
  memset(g, 0, sizeof *g);
  g->nb = nd - 2;
  g->BH = 1;
  for (int d = 0; d < nd - 2; d++) {
    g->bsz[d] = qs[d];
    g->BH *= qs[d];
  }
  g->L = qs[nd - 2];
  g->E = qs[nd - 1];
  g->S = wk_tensor_sizes(k)[nd - 2];
  g->Ev = wk_tensor_sizes(v)[nd - 1];
  g->scale = scale->tag == WK_V_NONE ? 1.0 / sqrt((double)g->E)
             : scale->tag == WK_V_INT ? (double)scale->u.i
                                      : scale->u.f;
  g->causal = causal;
  g->drop = p > 0;
  g->keep_p = 1 - p;
  g->keep_scale = p < 1 ? 1 / (1 - p) : 0;
  *mview = NULL;
  if (mask) {
    bool isb = wk_tensor_dtype(mask) == WK_BOOL;
    wk_tensor *mc = isb ? wk_retain(mask) : wk_kernel_cast(mask, cd);
    if (!mc) return wk_last_error();
    int64_t full[WK_MAX_DIMS];
    memcpy(full, qs, sizeof(int64_t) * (size_t)nd);
    full[nd - 1] = g->S;
    wk_tensor *ex = wk_expand(mc, full, nd);
    wk_release(mc);
    if (!ex) return wk_last_error();
    const int64_t *st = wk_tensor_strides(ex);
    for (int d = 0; d < nd - 2; d++) g->mbst[d] = st[d];
    g->mst_l = st[nd - 2];
    g->mst_s = st[nd - 1];
    g->mkind = isb ? 1 : 2;
    g->mdata = (const char *)wk_tensor_data(ex);
    *mview = ex;
  }
  return WK_OK;
}

static wk_status k_sdpa(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *query = WK_ARG_T(0), *key = WK_ARG_T(1), *value = WK_ARG_T(2);
  wk_tensor *mask = args[3].tag == WK_V_NONE ? NULL : WK_ARG_T(3);
  double p = WK_ARG_F(4);
  wk_dtype dt = wk_tensor_dtype(query), cd = WK_F64;
  wk_tensor *q = NULL, *k = NULL, *v = NULL, *mv = NULL, *o = NULL, *lse = NULL, *rng = NULL;
  double *lb = NULL;
  sd_geom g;
  wk_status s = sd_setup(&g, query, key, value, mask, p, WK_ARG_B(5), &args[6], cd, &mv);
  if (s) goto fail;
  if (!(lse = wk_meta_empty(ctx, 1)) || !(rng = wk_meta_empty(ctx, 2))) goto fail_err;
  if (g.drop) {
    if ((s = wk_rng_reserve(wk_tensor_device(query), (uint64_t)(g.BH * g.L * g.S), &g.seed, &g.offset))) goto fail;
    int64_t *rs = wk_tensor_data(rng);
    rs[0] = (int64_t)g.seed;
    rs[1] = (int64_t)g.offset;
  }
  const int64_t *qs = wk_tensor_sizes(query);
  int nd = wk_tensor_dim(query);
  int64_t osz[WK_MAX_DIMS];
  memcpy(osz, qs, sizeof(int64_t) * (size_t)nd);
  osz[nd - 1] = g.Ev;
  if (!(q = cpu_prep(query, cd)) || !(k = cpu_prep(key, cd)) || !(v = cpu_prep(value, cd)) ||
      !(o = cpu_empty(osz, nd, cd)))
    goto fail_err;
  int64_t nrows = g.BH * g.L, nrb = (g.L + SD_BR - 1) / SD_BR;
  lb = wk_malloc(sizeof(double) * (size_t)(nrows + 1));
  if (!lb) {
    s = wk_error(WK_ERR_NO_MEMORY, "scaled_dot_product_attention(): out of memory");
    goto fail;
  }
  sd_fwd_job j = {&g, wk_tensor_data(q), wk_tensor_data(k), wk_tensor_data(v), wk_tensor_data(o), lb, nrb, 0};
  if (nrows > 0) cpu_par(g.BH * nrb, SD_BR * g.S * (g.E + g.Ev + 1), sd_fwd, &j);
  if (j.failed) {
    s = wk_error(WK_ERR_NO_MEMORY, "scaled_dot_product_attention(): out of memory");
    goto fail;
  }
  {
    char *ld = wk_tensor_data(lse);
    wk_dtype ldt = wk_tensor_dtype(lse);
    for (int64_t r = 0; r < nrows; r++) wk_store_f64(ld + (size_t)r * wk_dtype_size(ldt), ldt, lb[r]);
  }
  wk_free(lb);
  lb = NULL;
  wk_release(q);
  wk_release(k);
  wk_release(v);
  wk_release(mv);
  q = k = v = mv = NULL;
  o = wk_cast_own(o, dt);
  return wk_kernel_done_n(WK_OK, (wk_tensor *[]){o, lse, rng}, 3, outs);
fail_err:
  s = wk_last_error();
fail:
  wk_free(lb);
  wk_release_n((wk_tensor *[]){q, k, v, mv, o, lse, rng}, 7);
  return s;
}

static wk_status k_sdpa_backward(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *gout = WK_ARG_T(0), *query = WK_ARG_T(1), *key = WK_ARG_T(2), *value = WK_ARG_T(3);
  wk_tensor *mask = args[4].tag == WK_V_NONE ? NULL : WK_ARG_T(4);
  wk_tensor *out = WK_ARG_T(5), *lset = WK_ARG_T(6), *rng = WK_ARG_T(7);
  double p = WK_ARG_F(8);
  const int64_t *om = args[11].u.ints;
  bool want[4] = {om[0] != 0, om[1] != 0, om[2] != 0, om[3] != 0 && mask && wk_tensor_dtype(mask) != WK_BOOL};
  wk_dtype dt = wk_tensor_dtype(query), cd = WK_F64;
  wk_tensor *go = NULL, *q = NULL, *k = NULL, *v = NULL, *o = NULL, *ls = NULL, *mv = NULL;
  wk_tensor *r[4] = {NULL, NULL, NULL, NULL};
  sd_geom g;
  wk_status s = sd_setup(&g, query, key, value, mask, p, WK_ARG_B(9), &args[10], cd, &mv);
  if (s) goto fail;
  if (g.drop) {
    wk_tensor *rc = wk_contiguous(rng);
    if (!rc) goto fail_err;
    const int64_t *rs = wk_tensor_data(rc);
    g.seed = (uint64_t)rs[0];
    g.offset = (uint64_t)rs[1];
    wk_release(rc);
  }
  if (!(go = cpu_prep(gout, cd)) || !(q = cpu_prep(query, cd)) || !(k = cpu_prep(key, cd)) ||
      !(v = cpu_prep(value, cd)) || !(o = cpu_prep(out, cd)) || !(ls = cpu_prep(lset, WK_F64)))
    goto fail_err;
  if (!(r[0] = cpu_empty(wk_tensor_sizes(query), wk_tensor_dim(query), cd)) ||
      !(r[1] = cpu_empty(wk_tensor_sizes(key), wk_tensor_dim(key), cd)) ||
      !(r[2] = cpu_empty(wk_tensor_sizes(value), wk_tensor_dim(value), cd)))
    goto fail_err;
  if (want[3]) {
    const wk_meta_out *mm = wk_kernel_meta(ctx, 3);
    if (!(r[3] = cpu_empty(mm->sizes, mm->ndim, cd))) goto fail_err;
  }
  sd_bwd_job j = {&g, wk_tensor_data(go), wk_tensor_data(q), wk_tensor_data(k), wk_tensor_data(v), wk_tensor_data(o),
                  wk_tensor_data(ls), wk_tensor_data(r[0]), wk_tensor_data(r[1]), wk_tensor_data(r[2]),
                  r[3] ? wk_tensor_data(r[3]) : NULL, 0};
  if (g.BH > 0) cpu_par(g.BH, (g.L + 1) * g.S * (g.E + g.Ev + 1), sd_bwd, &j);
  if (j.failed) {
    s = wk_error(WK_ERR_NO_MEMORY, "scaled_dot_product_attention_backward(): out of memory");
    goto fail;
  }
  wk_release_n((wk_tensor *[]){go, q, k, v, o, ls, mv}, 7);
  go = q = k = v = o = ls = mv = NULL;
  for (int i = 0; i < 4; i++) {
    if (!want[i]) {
      wk_release(r[i]);
      r[i] = NULL;
    } else if (!(r[i] = wk_cast_own(r[i], dt))) {
      goto fail_err;
    }
  }
  return wk_kernel_done_opt(WK_OK, r, want, 4, outs);
fail_err:
  s = wk_last_error();
fail:
  wk_release_n((wk_tensor *[]){go, q, k, v, o, ls, mv}, 7);
  wk_release_n(r, 4);
  return s;
}

wk_status cpu_register_attention(void) {
  static const wk_kernel_row ks[] = {{"scaled_dot_product_attention", k_sdpa, NULL, NULL},
                                     {"scaled_dot_product_attention_backward", k_sdpa_backward, NULL, NULL}};
  return wk_register_rows(ks, sizeof ks / sizeof ks[0], cpu_reg_row);
}
