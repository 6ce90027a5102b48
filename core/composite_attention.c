/* Device-generic scaled_dot_product_attention and its backward, written with
 * other ops (matmul, logsumexp, exp, masked_fill): registered by the core for
 * every device at fallback priority, so a backend without a fused kernel (the
 * cuda plugin) runs attention; the cpu plugin's fused kernels win by priority.
 * Same contract as the fused kernels: the backward recomputes the
 * probabilities from the saved logsumexp, and the dropout decisions come from
 * the saved Philox state (drawn on the host, element (bh, i, j) from counter
 * offset + (bh * L + i) * S + j, exactly as the cpu kernel draws them). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Philox 4x32-10 word 0 for counter i of stream `seed` as a float in [0, 1):
 * the SDK's wk_philox_at / wk_u32_to_unit_f32 (sdk/wick/sdk/kernel.h, which
 * the core cannot include: it routes calls through the plugin host table),
 * so the composite drops exactly the elements the cpu kernel drops. */
static float philox_unit(uint64_t seed, uint64_t i) {
  uint32_t ctr[4] = {(uint32_t)i, (uint32_t)(i >> 32), 0, 0}, key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
  for (int r = 0; r < 10; r++) {
    uint64_t p0 = (uint64_t)0xD2511F53u * ctr[0], p1 = (uint64_t)0xCD9E8D57u * ctr[2];
    uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0, hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    uint32_t c0 = hi1 ^ ctr[1] ^ key[0], c2 = hi0 ^ ctr[3] ^ key[1];
    ctr[0] = c0;
    ctr[1] = lo1;
    ctr[2] = c2;
    ctr[3] = lo0;
    key[0] += 0x9E3779B9u;
    key[1] += 0xBB67AE85u;
  }
  return (float)(ctr[0] >> 8) * (1.0f / 16777216.0f);
}

#define T(n) (args[n].u.t)

/* A kernel runs below the dispatcher (wk__call_depth > 0), where the results of
 * the ops it calls belong to no scope. These composites open a scope at call
 * depth 0, as the derivative formulas do, so every temporary is released when
 * it ends (the results are taken out of it with wk_scope_keep), and run under
 * no_grad: the op's own node is the autograd record. */
#define SDC_BEGIN                   \
  int depth__ = wk__call_depth;     \
  wk__call_depth = 0;               \
  wk_no_grad_begin();               \
  wk_scope_begin();
#define SDC_END                     \
  wk_scope_end();                   \
  wk_no_grad_end();                 \
  wk__call_depth = depth__;

typedef struct {
  int nd;
  int64_t BH, L, S, E;
  double scale, p;
  bool causal;
} sdc_geom;

static void geom(sdc_geom *g, const wk_value *args, wk_tensor *q, wk_tensor *k, int ip, int ic, int isc) {
  g->nd = q->ndim;
  g->BH = 1;
  for (int d = 0; d < q->ndim - 2; d++) g->BH *= q->sizes[d];
  g->L = q->sizes[q->ndim - 2];
  g->E = q->sizes[q->ndim - 1];
  g->S = k->sizes[k->ndim - 2];
  const wk_value *sc = &args[isc];
  g->scale = sc->tag == WK_V_NONE ? 1.0 / sqrt((double)g->E) : sc->tag == WK_V_INT ? (double)sc->u.i : sc->u.f;
  g->p = args[ip].u.f;
  g->causal = args[ic].u.b;
}

/* A bool [..., L, S] on `dev`, built on the host by fill(g, seed, offset, buf). */
static wk_tensor *host_bool(const sdc_geom *g, const int64_t *sizes, uint64_t seed, uint64_t offset, bool dropout,
                            wk_device dev) {
  int64_t n = g->BH * g->L * g->S;
  bool *b = wk_malloc((size_t)(n ? n : 1));
  if (!b) {
    wk_error(WK_ERR_NO_MEMORY, "scaled_dot_product_attention(): out of memory");
    return NULL;
  }
  for (int64_t e = 0; e < n; e++) {
    if (dropout) {
      b[e] = (double)philox_unit(seed, offset + (uint64_t)e) < 1 - g->p;
    } else { /* the causal mask: key j takes part in row i when j <= i */
      int64_t j = e % g->S, i = (e / g->S) % g->L;
      b[e] = j <= i;
    }
  }
  wk_tensor *h = wk_tensor_from_data(b, WK_BOOL, sizes, g->nd);
  free(b);
  if (!h || dev.type == WK_DEVICE_CPU) return h;
  return wk_to_device(h, dev);
}

/* The scores with the mask applied: scale * q k^T (+ mask), -inf where masked. */
static wk_tensor *scores(const sdc_geom *g, wk_tensor *q, wk_tensor *k, wk_tensor *mask, wk_dtype cd) {
  if (!q || !k) return NULL; /* a failed conversion (a device without the kernel): its error stands */
  wk_tensor *s = wk_mul_scalar(wk_matmul(q, wk_transpose(k, -2, -1)), g->scale);
  int64_t sz[WK_MAX_DIMS];
  memcpy(sz, q->sizes, sizeof(int64_t) * (size_t)g->nd);
  sz[g->nd - 1] = g->S;
  if (g->causal) {
    int64_t one[WK_MAX_DIMS];
    for (int d = 0; d < g->nd; d++) one[d] = d < g->nd - 2 ? 1 : sz[d];
    sdc_geom g1 = *g;
    g1.BH = 1;
    wk_tensor *cm = host_bool(&g1, one, 0, 0, false, wk_tensor_device(q));
    s = wk_masked_fill(s, wk_logical_not(cm), -INFINITY);
  }
  if (mask && mask->dtype == WK_BOOL) s = wk_masked_fill(s, wk_logical_not(mask), -INFINITY);
  else if (mask) s = wk_add(s, wk_to_dtype(mask, cd));
  return s;
}

/* The dropout factor tensor (keep / (1 - p)), or NULL without dropout. */
static wk_tensor *drop_factor(const sdc_geom *g, const int64_t *sz, uint64_t seed, uint64_t off, wk_dtype cd,
                              wk_device dev) {
  wk_tensor *keep = host_bool(g, sz, seed, off, true, dev);
  return wk_mul_scalar(wk_to_dtype(keep, cd), g->p < 1 ? 1 / (1 - g->p) : 0);
}

static wk_status k_sdpa_composite(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  wk_tensor *query = T(0), *mask = args[3].tag == WK_V_NONE ? NULL : T(3);
  sdc_geom g;
  geom(&g, args, query, T(1), 4, 5, 6);
  wk_dtype dt = query->dtype, cd = dt == WK_F64 ? WK_F64 : WK_F32;
  wk_device dev = wk_tensor_device(query);
  uint64_t seed = 0, off = 0;
  if (g.p > 0) {
    wk_status s = wk_rng_reserve(dev, (uint64_t)(g.BH * g.L * g.S), &seed, &off);
    if (s) return s;
  }
  SDC_BEGIN
  wk_tensor *q = wk_to_dtype(query, cd), *k = wk_to_dtype(T(1), cd), *v = wk_to_dtype(T(2), cd);
  wk_tensor *s = scores(&g, q, k, mask, cd);
  int64_t last = -1;
  wk_tensor *lse = wk_logsumexp(s, &last, 1, false);
  wk_tensor *p = wk_exp(wk_sub(s, wk_unsqueeze(lse, -1)));
  if (g.p > 0 && s) p = wk_mul(p, drop_factor(&g, s->sizes, seed, off, cd, dev));
  wk_tensor *o = wk_to_dtype(wk_matmul(p, v), dt);
  int64_t st[2] = {(int64_t)seed, (int64_t)off}, n = g.p > 0 ? 2 : 0;
  wk_tensor *rng = wk_tensor_from_data(st, WK_I64, &n, 1);
  if (rng && dev.type != WK_DEVICE_CPU) rng = wk_to_device(rng, dev);
  bool ok = o && lse && rng;
  if (ok) {
    wk_scope_keep(o);
    wk_scope_keep(lse);
    wk_scope_keep(rng);
  }
  /* the calls above run as top-level calls (depth 0), so a later success
   * would leave the first failure stale: keep its message for the caller */
  wk_status code = ok ? WK_OK : wk_last_error();
  char msg[512];
  snprintf(msg, sizeof msg, "%s", ok ? "" : wk_last_error_message());
  SDC_END
  if (!ok)
    return code ? wk_error_replace(code, "%s", msg)
                : wk_error_replace(WK_ERR_NO_KERNEL, "scaled_dot_product_attention(): the composite failed on device '%s'",
                                   wk_device_type_name(dev.type));
  outs[0] = WK_VT(o);
  outs[1] = WK_VT(lse);
  outs[2] = WK_VT(rng);
  return WK_OK;
}

static wk_status k_sdpa_backward_composite(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  wk_tensor *mask = args[4].tag == WK_V_NONE ? NULL : T(4);
  const int64_t *om = args[11].u.ints;
  bool want[4] = {om[0] != 0, om[1] != 0, om[2] != 0, om[3] != 0 && mask && mask->dtype != WK_BOOL};
  sdc_geom g;
  geom(&g, args, T(1), T(2), 8, 9, 10);
  wk_dtype dt = T(1)->dtype, cd = dt == WK_F64 ? WK_F64 : WK_F32;
  wk_device dev = wk_tensor_device(T(1));
  uint64_t seed = 0, off = 0;
  SDC_BEGIN
  if (g.p > 0) {
    wk_tensor *rh = wk_contiguous(wk_to_device(T(7), wk_cpu()));
    if (rh) {
      const int64_t *rs = wk_tensor_data(rh);
      seed = (uint64_t)rs[0];
      off = (uint64_t)rs[1];
    }
  }
  wk_tensor *q = wk_to_dtype(T(1), cd), *k = wk_to_dtype(T(2), cd), *v = wk_to_dtype(T(3), cd);
  wk_tensor *go = wk_to_dtype(T(0), cd), *o = wk_to_dtype(T(5), cd), *lse = wk_to_dtype(T(6), cd);
  wk_tensor *s = scores(&g, q, k, mask, cd);
  wk_tensor *p = wk_exp(wk_sub(s, wk_unsqueeze(lse, -1)));
  wk_tensor *f = g.p > 0 && s ? drop_factor(&g, s->sizes, seed, off, cd, dev) : NULL;
  wk_tensor *pd = f ? wk_mul(p, f) : p;
  wk_tensor *dv = wk_matmul(wk_transpose(pd, -2, -1), go);
  wk_tensor *dp = wk_matmul(go, wk_transpose(v, -2, -1));
  if (f) dp = wk_mul(dp, f);
  int64_t last = -1;
  wk_tensor *delta = wk_sum_dim(wk_mul(go, o), &last, 1, true);
  wk_tensor *ds = wk_mul(p, wk_sub(dp, delta));
  /* a masked score has p = 0 and so ds = 0, except in a row with every key
   * masked, where p is NaN (softmax over -inf) and so is its gradient */
  wk_tensor *dq = wk_mul_scalar(wk_matmul(ds, k), g.scale);
  wk_tensor *dk = wk_mul_scalar(wk_matmul(wk_transpose(ds, -2, -1), q), g.scale);
  wk_tensor *r[4] = {want[0] ? wk_to_dtype(dq, dt) : NULL, want[1] ? wk_to_dtype(dk, dt) : NULL,
                     want[2] ? wk_to_dtype(dv, dt) : NULL, want[3] ? wk_to_dtype(ds, dt) : NULL};
  bool ok = true;
  for (int i = 0; i < 4; i++)
    if (want[i] && !r[i]) ok = false;
  if (ok)
    for (int i = 0; i < 4; i++)
      if (r[i]) wk_scope_keep(r[i]);
  SDC_END
  if (!ok) return wk_last_error();
  for (int i = 0; i < 4; i++) outs[i] = r[i] ? WK_VT(r[i]) : WK_VNONE;
  return WK_OK;
}

void wk__composites_attention_register(void);
void wk__composites_attention_register(void) {
  static const struct {
    const char *op;
    wk_kernel_fn fn;
  } ks[] = {{"scaled_dot_product_attention", k_sdpa_composite},
            {"scaled_dot_product_attention_backward", k_sdpa_backward_composite}};
  for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
    wk_kernel_desc d = {sizeof d, ks[i].op, WK_DEVICE_DEFAULT, WK_PRIORITY_FALLBACK, ks[i].fn, NULL, NULL,
                        "core.composite"};
    wk_kernel_register(&d);
  }
}
