/* The op sweep's generators, part 2 (tests/check_op_sweep.c): the
 * neural-network ops, indexing and shape ops, backward ops (inputs from a
 * forward call) and the optim plugin's fused updates. */
#ifndef WICK_TESTS_OP_SWEEP_GEN_NN_H
#define WICK_TESTS_OP_SWEEP_GEN_NN_H

#include "op_sweep_util.h"

/* ==== generators: neural-network ops ======================================================== */

static bool g_softmax(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  at(c, rself(c, s, nd));
  ai(c, nd ? rpick(c, -nd, nd - 1) : 0);
  anone(c);
  return true;
}

/* Convolution geometry shared by conv2d and conv2d_backward. */
typedef struct {
  int64_t in[4], w[4], stride[2], pad[2], dil[2], groups;
  bool bias;
} sw_conv;
static void conv_geom(sw_case *c, sw_conv *g) {
  int64_t groups = rpick(c, 1, 2), cpg = rpick(c, 1, 2), opg = rpick(c, 1, 2);
  g->groups = groups;
  g->in[0] = c->mode == SW_EMPTY ? 0 : rpick(c, 1, 2);
  g->in[1] = groups * cpg;
  g->w[0] = groups * opg, g->w[1] = cpg;
  for (int d = 0; d < 2; d++) {
    g->w[2 + d] = rpick(c, 1, 3);
    g->stride[d] = rpick(c, 1, 2);
    g->pad[d] = rpick(c, 0, 1);
    g->dil[d] = rpick(c, 1, 2);
    int64_t span = g->dil[d] * (g->w[2 + d] - 1) + 1 - 2 * g->pad[d];
    g->in[2 + d] = (span < 1 ? 1 : span) + rpick(c, 0, c->grad ? 1 : 3);
  }
  g->bias = runif(c) < 0.5;
}
static bool g_conv2d(sw_case *c) {
  sw_conv g;
  conv_geom(c, &g);
  int64_t b[1] = {g.w[0]};
  at(c, rself(c, g.in, 4));
  at(c, rself(c, g.w, 4));
  if (g.bias)
    at(c, rself(c, b, 1));
  else
    anone(c);
  aints(c, g.stride, 2);
  aints(c, g.pad, 2);
  aints(c, g.dil, 2);
  ai(c, g.groups);
  return true;
}
/* Channels that do not match the weight; a 2-d input. */
static bool e_conv2d(sw_case *c, int k) {
  int64_t in[4] = {1, 4, 5, 5}, in2[2] = {5, 5}, w[4] = {2, 3, 3, 3};
  if (k > 1) return false;
  at(c, k == 0 ? rt(c, WK_F32, in, 4, -1, 1) : rt(c, WK_F32, in2, 2, -1, 1));
  at(c, rt(c, WK_F32, w, 4, -1, 1));
  return true;
}

/* Pooling geometry: 4-d (or 3-d unbatched) input, kernel, stride, padding <= k/2, dilation. */
typedef struct {
  int64_t in[4], k[2], stride[2], pad[2], dil[2];
  int nd, nstride;
  bool ceil;
} sw_pool;
static void pool_geom(sw_case *c, sw_pool *g, bool dilation) {
  g->nd = c->mode != SW_EMPTY && runif(c) < 0.25 ? 3 : 4; /* an empty input must be batched (PyTorch's rule) */
  int o = g->nd - 2;
  if (g->nd == 4) g->in[0] = c->mode == SW_EMPTY ? 0 : rpick(c, 1, 2);
  g->in[o - 1] = rpick(c, 1, 2);
  g->nstride = runif(c) < 0.3 ? 0 : 2;
  for (int d = 0; d < 2; d++) {
    g->k[d] = rpick(c, 1, 3);
    g->stride[d] = rpick(c, 1, 2);
    g->pad[d] = rpick(c, 0, g->k[d] / 2);
    g->dil[d] = dilation ? rpick(c, 1, 2) : 1;
    g->in[o + d] = g->dil[d] * (g->k[d] - 1) + 1 + rpick(c, 0, c->grad ? 1 : 3);
  }
  g->ceil = runif(c) < 0.4;
}
static void pool_args(sw_case *c, const sw_pool *g, bool dilation) {
  aints(c, g->k, 2);
  aints(c, g->stride, g->nstride);
  aints(c, g->pad, 2);
  if (dilation) aints(c, g->dil, 2);
  ab(c, g->ceil);
}
static bool g_max_pool(sw_case *c) {
  sw_pool g;
  pool_geom(c, &g, true);
  at(c, rt_distinct(c, c->dt, g.in, g.nd, -2, 2));
  pool_args(c, &g, true);
  return true;
}
static bool g_avg_pool(sw_case *c) {
  sw_pool g;
  pool_geom(c, &g, false);
  at(c, rself(c, g.in, g.nd));
  pool_args(c, &g, false);
  ab(c, runif(c) < 0.5);
  if (runif(c) < 0.3)
    ai(c, 3);
  else
    anone(c);
  return true;
}
/* Padding over half the kernel; a 2-d input. */
static bool e_pool(sw_case *c, int k) {
  int64_t in[4] = {1, 1, 5, 5}, in2[2] = {5, 5}, in3[3] = {0, 5, 5};
  if (k > 2) return false;
  if (k == 2) /* an empty unbatched input */
    at(c, rt(c, WK_F32, in3, 3, -1, 1));
  else
    at(c, k == 0 ? rt(c, WK_F32, in, 4, -1, 1) : rt(c, WK_F32, in2, 2, -1, 1));
  AINTS(c, 2, 2);
  AINTS(c, 1, 1);
  if (k == 0)
    AINTS(c, 2, 2);
  else
    AINTS(c, 0, 0); /* padding over half the kernel */
  return true;
}
static bool g_adaptive(sw_case *c) {
  int64_t in[4] = {rpick(c, 1, 2), rpick(c, 1, 2), rpick(c, 1, 5), rpick(c, 1, 5)};
  int nd = runif(c) < 0.25 ? 3 : 4;
  if (c->mode == SW_EMPTY) in[0] = 0;
  at(c, rself(c, in + (4 - nd), nd));
  AINTS(c, rpick(c, 1, in[2] + 1), rpick(c, 1, in[3]));
  return true;
}
static bool e_adaptive(sw_case *c, int k) {
  int64_t in[4] = {1, 1, 5, 5}, in2[2] = {5, 5};
  if (k > 1) return false;
  at(c, k == 0 ? rt(c, WK_F32, in, 4, -1, 1) : rt(c, WK_F32, in2, 2, -1, 1));
  if (k == 0)
    AINTS(c, -1, 2);
  else
    AINTS(c, 2, 2); /* a negative output size; a 2-d input */
  return true;
}

/* batch_norm(input [N, C, *], weight?, bias?, running_mean?, running_var?, training, momentum, eps). */
typedef struct {
  int64_t in[4];
  int nd;
  bool train, affine, stats;
} sw_bn;
static void bn_geom(sw_case *c, sw_bn *g) {
  g->nd = (int)rpick(c, 2, 4);
  for (int d = 0; d < g->nd; d++) g->in[d] = rpick(c, 1, 3);
  g->train = runif(c) < 0.6;
  if (g->train && numel_of(g->in, g->nd) / g->in[1] < 2) g->in[0] = 2;
  if (c->mode == SW_EMPTY && !g->train) g->in[0] = 0;
  g->affine = runif(c) < 0.6;
  g->stats = !g->train || runif(c) < 0.5;
}
static void bn_args(sw_case *c, const sw_bn *g, wk_tensor *input) {
  int64_t ch[1] = {g->in[1]};
  at(c, input);
  if (g->affine)
    at(c, rself(c, ch, 1)), at(c, rself(c, ch, 1));
  else
    anone(c), anone(c);
  if (g->stats)
    at_frozen(c, rt(c, c->dt, ch, 1, -1, 1)), at_frozen(c, rt(c, c->dt, ch, 1, 0.5, 2));
  else
    anone(c), anone(c);
}
static bool g_batch_norm(sw_case *c) {
  sw_bn g;
  bn_geom(c, &g);
  bn_args(c, &g, rself(c, g.in, g.nd));
  ab(c, g.train);
  af(c, 0.1);
  af(c, 1e-5);
  return true;
}
/* One value per channel in training; a weight of the wrong size. */
static bool e_batch_norm(sw_case *c, int k) {
  int64_t in[2] = {1, 3}, in2[2] = {2, 3}, ch[1] = {3}, ch4[1] = {4};
  if (k > 1) return false;
  at(c, rt(c, WK_F32, k == 0 ? in : in2, 2, -1, 1));
  at(c, rt(c, WK_F32, k == 0 ? ch : ch4, 1, -1, 1));
  at(c, rt(c, WK_F32, ch, 1, -1, 1));
  anone(c);
  anone(c);
  ab(c, true);
  return true;
}
static bool g_layer_norm(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 1, 3), nn = nd >= 2 && runif(c) < 0.4 ? 2 : 1;
  at(c, rself(c, s, nd));
  aints(c, s + nd - nn, nn);
  if (runif(c) < 0.6) {
    at(c, rself(c, s + nd - nn, nn));
    at(c, rself(c, s + nd - nn, nn));
  } else {
    anone(c), anone(c);
  }
  af(c, 1e-5);
  return true;
}
static bool e_layer_norm(sw_case *c, int k) {
  int64_t s[2] = {2, 3};
  if (k > 0) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  AINTS(c, 5);
  return true;
}
static bool g_dropout(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  at(c, rself(c, s, nd));
  af(c, 0.5);
  ab(c, runif(c) < 0.6);
  return true;
}
static bool e_dropout(sw_case *c, int k) {
  int64_t s[2] = {2, 3};
  if (k > 0) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  af(c, 1.5);
  ab(c, true);
  return true;
}
/* scaled_dot_product_attention: batch dims of 0..2, L, S, E, Ev of 1..4; no
 * mask, a float mask broadcast from (L, S), or is_causal; no dropout (random). */
static void sdpa_geom(sw_case *c, int64_t *q, int64_t *k, int64_t *v, int *nd) {
  int64_t b[WK_MAX_DIMS];
  int nb = c->mode == SW_EMPTY || runif(c) < 0.5 ? rshape(c, b, 1, 2) : 0;
  for (int d = 0; d < nb; d++) q[d] = k[d] = v[d] = b[d];
  int64_t lo = c->grad ? 2 : 1, L = rpick(c, lo, 4), S = rpick(c, lo, 4), E = rpick(c, lo, 4), Ev = rpick(c, lo, 4);
  q[nb] = L, q[nb + 1] = E;
  k[nb] = S, k[nb + 1] = E;
  v[nb] = S, v[nb + 1] = Ev;
  *nd = nb + 2;
}
static bool g_sdpa(sw_case *c) {
  int64_t q[WK_MAX_DIMS], k[WK_MAX_DIMS], v[WK_MAX_DIMS];
  int nd;
  sdpa_geom(c, q, k, v, &nd);
  at(c, rself(c, q, nd));
  at(c, rself(c, k, nd));
  at(c, rself(c, v, nd));
  double u = runif(c);
  int64_t ms[2] = {q[nd - 2], k[nd - 2]};
  if (u < 0.3) at(c, rt(c, c->dt, ms, 2, -1, 1));
  else anone(c);
  af(c, 0.0);
  ab(c, u > 0.7);
  if (runif(c) < 0.3) af(c, 0.5);
  else anone(c);
  return true;
}
static bool e_sdpa(sw_case *c, int k) {
  int64_t q[3] = {2, 3, 4}, kk[3] = {2, 5, 3}, v[3] = {2, 5, 2};
  if (k > 1) return false;
  at(c, rt(c, WK_F32, q, 3, -1, 1));
  at(c, rt(c, WK_F32, kk, 3, -1, 1));
  if (k == 1) c->a[1] = WK_VT(rt(c, WK_F32, (int64_t[]){2, 5, 4}, 3, -1, 1)); /* with a causal mask and attn_mask */
  at(c, rt(c, WK_F32, v, 3, -1, 1));
  if (k == 1) at(c, rt(c, WK_F32, (int64_t[]){3, 5}, 2, -1, 1));
  else anone(c);
  af(c, 0.0);
  ab(c, k == 1);
  anone(c);
  return true;
}
static bool g_embedding(sw_case *c) {
  int64_t w[2] = {rpick(c, 1, 5), rpick(c, 1, 4)}, s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 2);
  at(c, rself(c, w, 2));
  at_frozen(c, rt_index(c, s, nd, w[0]));
  ai(c, runif(c) < 0.5 || c->grad ? -1 : rpick(c, 0, w[0] - 1)); /* (the padding row gets no gradient, by design) */
  return true;
}
static bool e_embedding(sw_case *c, int k) {
  int64_t w[2] = {4, 3}, s[1] = {2};
  if (k > 1) return false;
  at(c, rt(c, WK_F32, w, 2, -1, 1));
  at(c, k == 0 ? rt(c, WK_F32, s, 1, 0, 3) : rt_index(c, s, 1, 4)); /* float indices; a 1-d weight */
  if (k == 1) c->a[0] = WK_VT(rt(c, WK_F32, s, 1, -1, 1));
  return true;
}
/* pad(self, pad, mode, value): constant (any rank, some negative), reflect and replicate (2- to 4-d). */
static bool g_pad(sw_case *c) {
  static const char *const modes[] = {"constant", "reflect", "replicate"};
  const char *mode = modes[rpick(c, 0, 2)];
  int64_t s[WK_MAX_DIMS], p[6];
  int nd, np;
  if (!strcmp(mode, "constant")) {
    nd = rshape(c, s, 1, 3);
    np = 2 * (int)rpick(c, 1, nd);
    for (int i = 0; i < np; i++) p[i] = rpick(c, 0, 2);
    if (s[nd - 1] > 1 && runif(c) < 0.3) p[0] = -1; /* cropping */
  } else {
    nd = (int)rpick(c, 2, 4);
    for (int d = 0; d < nd; d++) s[d] = rpick(c, 2, 4);
    if (c->mode == SW_EMPTY) s[0] = 0;
    np = nd == 4 ? 4 : 2;
    for (int i = 0; i < np; i++) p[i] = rpick(c, 0, !strcmp(mode, "reflect") ? s[nd - 1 - i / 2] - 1 : 2);
  }
  at(c, rself(c, s, nd));
  aints(c, p, np);
  astr(c, mode);
  if (!strcmp(mode, "constant") && runif(c) < 0.5)
    af(c, 0.5);
  else
    anone(c);
  return true;
}
static bool e_pad(sw_case *c, int k) {
  int64_t s[3] = {1, 1, 3};
  if (k > 1) return false;
  at(c, rt(c, WK_F32, s, 3, -1, 1));
  if (k == 0)
    AINTS(c, 1, 1, 1);
  else
    AINTS(c, 3, 3); /* odd length; reflect past the size */
  astr(c, k == 0 ? "constant" : "reflect");
  return true;
}
/* cross_entropy/nll_loss(self [N, C(, d)], target [N(, d)], weight?, reduction, ignore_index(, smoothing)). */
static bool g_class_loss(sw_case *c) {
  int64_t n = c->mode == SW_EMPTY ? 0 : rpick(c, 1, 4), cl = rpick(c, 2, 4), d = rpick(c, 1, 3);
  bool kdim = runif(c) < 0.3;
  int64_t s[3] = {n, cl, d}, t[2] = {n, d}, w[1] = {cl};
  at(c, rself(c, s, kdim ? 3 : 2));
  at_frozen(c, rt_index(c, t, kdim ? 2 : 1, cl));
  if (runif(c) < 0.5)
    at_frozen(c, rt(c, c->dt, w, 1, 0.5, 2));
  else
    anone(c);
  ai(c, rpick(c, 0, 2));
  ai(c, runif(c) < 0.5 ? -100 : rpick(c, 0, cl - 1));
  if (is_op(c, "cross_entropy")) af(c, runif(c) < 0.5 ? 0 : 0.1);
  return true;
}
static bool e_class_loss(sw_case *c, int k) {
  int64_t s[2] = {3, 4}, t[1] = {2}, t2[2] = {3, 4};
  if (k > 1) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  at(c, k == 0 ? rt_index(c, t, 1, 4) : rt_index(c, t2, 2, 4)); /* batch 3 vs 2; a 2-d target */
  return true;
}
static bool g_mse(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  at(c, rself(c, s, nd));
  at(c, rself(c, s, nd));
  ai(c, rpick(c, 0, 2));
  return true;
}
static bool e_mse(sw_case *c, int k) {
  int64_t s[2] = {2, 3}, s4[1] = {4};
  if (k > 0) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  at(c, rt(c, WK_F32, s4, 1, -1, 1));
  return true;
}
static bool g_bce_logits(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  at(c, rself(c, s, nd));
  at(c, rt(c, c->dt, s, nd, 0, 1));
  /* weight and pos_weight have no derivative (as in PyTorch) */
  if (runif(c) < 0.5)
    at_frozen(c, rt(c, c->dt, s, nd, 0.5, 2));
  else
    anone(c);
  if (nd && runif(c) < 0.5)
    at_frozen(c, rt(c, c->dt, s + nd - 1, 1, 0.5, 2));
  else
    anone(c);
  ai(c, rpick(c, 0, 2));
  return true;
}
static bool e_bce_logits(sw_case *c, int k) {
  int64_t s[2] = {2, 3}, s2[2] = {3, 2};
  if (k > 0) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  at(c, rt(c, WK_F32, s2, 2, 0, 1));
  return true;
}

/* ==== generators: indexing and shape ======================================================== */

static bool g_cat(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 1, 3), n = (int)rpick(c, 1, 3), d = (int)rpick(c, 0, nd - 1);
  wk_tensor *ts[3];
  for (int i = 0; i < n; i++) {
    int64_t si[WK_MAX_DIMS];
    memcpy(si, s, sizeof si);
    si[d] = c->mode == SW_EMPTY && i == 0 ? 0 : rpick(c, 1, 3);
    ts[i] = rself(c, si, nd);
  }
  alist(c, ts, n);
  ai(c, d - (runif(c) < 0.5 ? nd : 0));
  return true;
}
static bool e_cat(sw_case *c, int k) {
  int64_t a[2] = {2, 3}, b[2] = {2, 4};
  wk_tensor *ts[2];
  if (k > 1) return false;
  ts[0] = rt(c, WK_F32, a, 2, -1, 1);
  ts[1] = rt(c, WK_F32, b, 2, -1, 1);
  if (k == 1) ts[0] = rt(c, WK_F32, a, 0, -1, 1), ts[1] = ts[0]; /* 0-dim tensors */
  alist(c, ts, 2);
  ai(c, 0); /* sizes differ off the cat dim */
  return true;
}
static bool g_stack(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3), n = (int)rpick(c, 1, 3);
  wk_tensor *ts[3];
  for (int i = 0; i < n; i++) ts[i] = rself(c, s, nd);
  alist(c, ts, n);
  ai(c, rpick(c, -nd - 1, nd));
  return true;
}
static bool e_stack(sw_case *c, int k) {
  int64_t a[2] = {2, 3}, b[2] = {2, 4};
  wk_tensor *ts[2];
  if (k > 1) return false;
  ts[0] = rt(c, WK_F32, a, 2, -1, 1);
  ts[1] = rt(c, WK_F32, b, 2, -1, 1);
  alist(c, ts, k == 0 ? 2 : 0); /* sizes differ; no tensors */
  ai(c, 0);
  return true;
}
/* split(self, size, dim), split_with_sizes(self, sizes, dim), chunk(self, chunks, dim). */
static bool g_split(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 1, 3), d = (int)rpick(c, 0, nd - 1);
  if (c->mode != SW_EMPTY) s[d] = rpick(c, 1, 6);
  at(c, rself(c, s, nd));
  if (is_op(c, "split_with_sizes")) {
    int64_t sz[6], left = s[d];
    int n = 0;
    do {
      sz[n] = rpick(c, 0, left);
      left -= sz[n++];
    } while (left > 0 && n < 5);
    sz[n - 1] += left;
    aints(c, sz, n);
  } else {
    ai(c, rpick(c, 1, 4));
  }
  ai(c, d - (runif(c) < 0.5 ? nd : 0));
  return true;
}
static bool e_split(sw_case *c, int k) {
  int64_t s[2] = {5, 3};
  if (k > 0) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  if (is_op(c, "split_with_sizes"))
    AINTS(c, 1, 2);
  else
    ai(c, is_op(c, "chunk") ? 0 : -1);
  ai(c, 0);
  return true;
}
static bool g_index_select(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 1, 3), d = (int)rpick(c, 0, nd - 1);
  int64_t ni[1] = {s[d] == 0 ? 0 : rpick(c, 0, 5)};
  at(c, rself(c, s, nd));
  ai(c, d);
  at_frozen(c, rt_index(c, ni, 1, s[d]));
  return true;
}
static bool e_index_select(sw_case *c, int k) {
  int64_t s[2] = {2, 3}, i2[2] = {2, 2}, i1[1] = {2};
  if (k > 1) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  ai(c, 0);
  at(c, k == 0 ? rt_index(c, i2, 2, 2) : rt(c, WK_F32, i1, 1, 0, 2)); /* a 2-d index; a float index */
  return true;
}
/* ---- issue 21: glu, prelu, index_add/index_copy/index_fill, take, take_along_dim, argsort ---- */
static bool g_glu(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 1, 3), d = (int)rpick(c, 0, nd - 1);
  if (s[d]) s[d] = 2 * rpick(c, 1, 2);
  at(c, rself(c, s, nd));
  ai(c, d - (runif(c) < 0.5 ? nd : 0));
  return true;
}
static bool e_glu(sw_case *c, int k) { /* an odd halving dim; an integer input */
  int64_t s[2] = {2, 3}, s2[2] = {2, 4};
  if (k > 1) return false;
  at(c, k == 0 ? rt(c, WK_F32, s, 2, -1, 1) : rt(c, WK_I64, s2, 2, -3, 3));
  ai(c, -1);
  return true;
}
/* prelu: one weight or one per channel (dim 1). */
static bool g_prelu(sw_case *c) {
  int64_t s[WK_MAX_DIMS], ws[1];
  int nd = rshape(c, s, 0, 4);
  ws[0] = nd >= 2 && s[1] > 0 && runif(c) < 0.7 ? s[1] : 1;
  at(c, rself(c, s, nd));
  at(c, rt(c, c->dt, ws, ws[0] == 1 && runif(c) < 0.3 ? 0 : 1, -1, 1));
  return true;
}
static bool e_prelu(sw_case *c, int k) { /* weight count differs from the channels; a 2-d weight */
  int64_t s[2] = {2, 2}, w1[1] = {3}, w2[2] = {1, 2};
  if (k > 1) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  at(c, k == 0 ? rt(c, WK_F32, w1, 1, -1, 1) : rt(c, WK_F32, w2, 2, -1, 1));
  return true;
}
/* index_add/index_copy/index_fill: a vector index (int64, or int32 at times) into dim; index_copy's
 * indices distinct (duplicates leave the result to the kernel), the others' may repeat. */
static bool g_index_acf(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 1, 3), d = (int)rpick(c, 0, nd - 1);
  bool copy = is_op(c, "index_copy"), fill = is_op(c, "index_fill");
  int64_t n[1] = {s[d] == 0 ? 0 : copy ? rpick(c, 0, s[d]) : rpick(c, 0, 5)};
  wk_tensor *idx = copy ? rt_distinct(c, WK_I64, n, 1, 0, 1) : rt(c, runif(c) < 0.3 ? WK_I32 : WK_I64, n, 1, 0, (double)s[d]);
  if (copy && idx && s[d] > n[0] && runif(c) < 0.5) idx = CALL1("add.Scalar", WK_VT(idx), WK_VI(s[d] - n[0]));
  at(c, rself(c, s, nd));
  ai(c, d - (runif(c) < 0.5 ? nd : 0));
  at_frozen(c, idx);
  if (fill) {
    ascalar(c, -1.5);
    return true;
  }
  s[d] = n[0];
  at(c, rself(c, s, nd));
  if (is_op(c, "index_add")) ascalar(c, runif(c) < 0.5 ? 1 : 3);
  return true;
}
static bool e_index_acf(sw_case *c, int k) { /* a 2-d index; a float index; source slices shaped unlike self's */
  int64_t s[2] = {2, 3}, i2[2] = {2, 1}, i1[1] = {2}, s2[2] = {2, 2};
  bool fill = is_op(c, "index_fill");
  if (k > (fill ? 1 : 2)) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  ai(c, 0);
  at(c, k == 0 ? rt_index(c, i2, 2, 2) : k == 1 ? rt(c, WK_F32, i1, 1, 0, 2) : rt_index(c, i1, 1, 2));
  if (fill)
    af(c, 1);
  else
    at(c, rt(c, WK_F32, k == 2 ? s2 : s, 2, -1, 1));
  return true;
}
/* take: indices of either sign into the flattened self. */
static bool g_take(sw_case *c) {
  int64_t s[WK_MAX_DIMS], is[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3), ni = (int)rpick(c, 0, 2);
  int64_t n = numel_of(s, nd);
  for (int i = 0; i < ni; i++) is[i] = n ? rpick(c, 1, 3) : 0;
  if (!n && !ni) ni = 1, is[0] = 0;
  at(c, rself(c, s, nd));
  at_frozen(c, rt(c, WK_I64, is, ni, (double)-n, (double)n));
  return true;
}
static bool e_take(sw_case *c, int k) { /* a float index; an empty self */
  int64_t s[2] = {2, 3}, z[1] = {0}, i1[1] = {2};
  if (k > 1) return false;
  at(c, k == 0 ? rt(c, WK_F32, s, 2, -1, 1) : rt(c, WK_F32, z, 1, -1, 1));
  at(c, k == 0 ? rt(c, WK_F32, i1, 1, 0, 2) : rt_index(c, i1, 1, 1));
  return true;
}
/* take_along_dim: indices broadcast against self (either side size 1) but along dim; or dim None. */
static bool g_take_along_dim(sw_case *c) {
  int64_t s[WK_MAX_DIMS], is[WK_MAX_DIMS];
  int nd = rshape(c, s, 1, 3), d = (int)rpick(c, 0, nd - 1);
  bool none = runif(c) < 0.25;
  for (int k = 0; k < nd; k++) {
    double u = runif(c);
    is[k] = k == d ? (s[d] ? rpick(c, 0, 4) : 0) : u < 0.25 ? 1 : s[k];
    if (k != d && u > 0.85 && !c->grad) s[k] = 1, is[k] = rpick(c, 1, 3);
  }
  if (none) {
    int64_t n = numel_of(s, nd);
    for (int k = 0; k < nd; k++) is[k] = n ? rpick(c, 1, 3) : 0;
  }
  at(c, rself(c, s, nd));
  at_frozen(c, rt_index(c, is, nd, none ? numel_of(s, nd) : s[d]));
  if (none)
    anone(c);
  else
    ai(c, d - (runif(c) < 0.5 ? nd : 0));
  return true;
}
static bool e_take_along_dim(sw_case *c, int k) { /* int32 indices; ranks differ */
  int64_t s[2] = {2, 3}, i1[1] = {2};
  if (k > 1) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  at(c, k == 0 ? rt(c, WK_I32, s, 2, 0, 2) : rt_index(c, i1, 1, 2));
  ai(c, 0);
  return true;
}
/* argsort[.stable]: ties kept (sort is stable, so the indices are determined). */
static bool g_argsort(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  at(c, runif(c) < 0.5 ? rt_distinct(c, c->dt, s, nd, -2, 2) : rt(c, c->dt, s, nd, -2, 2));
  if (is_op_full(c, "argsort.stable")) ab(c, runif(c) < 0.5);
  ai(c, nd ? rpick(c, -nd, nd - 1) : 0);
  ab(c, runif(c) < 0.5);
  return true;
}
static bool e_argsort(sw_case *c, int k) { /* a dim out of range */
  int64_t s[2] = {2, 3};
  if (k > 0) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  if (is_op_full(c, "argsort.stable")) ab(c, true);
  ai(c, 5);
  return true;
}
/* kthvalue/median[.dim]: distinct values (PyTorch leaves the index among ties to its selection algorithm). */
static bool g_kth_median(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3), d = nd ? (int)rpick(c, 0, nd - 1) : 0;
  bool all = is_op_full(c, "median");
  int64_t n = nd ? s[d] : 1;
  if (all && numel_of(s, nd) == 0 && !wk_dtype_is_floating(c->dt)) return false; /* no integer NaN */
  if (!all && n == 0) return false;
  at(c, rt_distinct(c, c->dt, s, nd, -2, 2));
  if (all) return true;
  if (is_op(c, "kthvalue")) ai(c, rpick(c, 1, n));
  ai(c, d - (nd && runif(c) < 0.5 ? nd : 0));
  ab(c, runif(c) < 0.5);
  return true;
}
static bool e_kth_median(sw_case *c, int k) { /* k out of range / an empty reduced dim; a bool input */
  int64_t s[2] = {2, 3}, z[2] = {2, 0};
  bool all = is_op_full(c, "median"), kth = is_op(c, "kthvalue");
  if (k > 1 || (all && k == 0)) return false;
  at(c, k == 1 ? rt(c, WK_BOOL, s, 2, 0, 1) : rt(c, WK_F32, kth ? s : z, 2, -1, 1));
  if (all) return true;
  if (kth) ai(c, k == 0 ? 4 : 1);
  ai(c, -1);
  return true;
}
/* nonzero/argwhere: about half the elements zero (the rest any value, NaN included for floats). */
static bool g_nonzero(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 4);
  wk_tensor *x = rself(c, s, nd), *z = rt(c, WK_BOOL, s, nd, 0, 1);
  if (x && wk_dtype_is_floating(c->dt) && runif(c) < 0.3) add_specials(c, x);
  at(c, x && z ? CALL1("masked_fill.Scalar", WK_VT(x), WK_VT(z), WK_VI(0)) : NULL);
  return true;
}
/* searchsorted/bucketize: sorted boundaries (1-d, or searchsorted's rows matching self's leading dims; an
 * unsorted sequence with its sorter at times), values in the same range (integers: ties with boundaries). */
static bool g_searchsorted(sw_case *c) {
  int64_t s[WK_MAX_DIMS], bs[WK_MAX_DIMS];
  bool bucket = is_op(c, "bucketize");
  int nd = rshape(c, s, 0, 3);
  bool rows = !bucket && nd >= 2 && runif(c) < 0.5, use_sorter = !bucket && runif(c) < 0.3;
  int bn = rows ? nd : 1;
  for (int d = 0; d + 1 < bn; d++) bs[d] = s[d];
  bs[bn - 1] = rpick(c, 0, 5);
  wk_tensor *raw = rt(c, c->dt, bs, bn, -2, 2);
  wk_tensor *seq = use_sorter ? raw : raw ? CALL1("sort", WK_VT(raw), WK_VI(-1), WK_VB(false)) : NULL;
  wk_tensor *self = rself(c, s, nd);
  bool right = runif(c) < 0.5;
  at(c, bucket ? self : seq);
  at(c, bucket ? seq : self);
  ab(c, runif(c) < 0.3);
  ab(c, right);
  if (bucket) return true;
  if (runif(c) < 0.4)
    astr(c, right ? "right" : "left");
  else
    anone(c);
  if (use_sorter)
    at_frozen(c, raw ? CALL1("argsort", WK_VT(raw), WK_VI(-1), WK_VB(false)) : NULL);
  else
    anone(c);
  return true;
}
static bool e_searchsorted(sw_case *c, int k) { /* rows unlike self's; a bad side; bool values */
  int64_t s[2] = {2, 3}, b2[2] = {3, 4}, b1[1] = {4};
  bool bucket = is_op(c, "bucketize");
  if (k > 2 || (bucket && k == 1)) return false;
  wk_tensor *seq = k == 0 ? rt(c, WK_F32, b2, 2, -1, 1) : rt(c, k == 2 ? WK_BOOL : WK_F32, b1, 1, -1, 1);
  wk_tensor *self = rt(c, k == 2 ? WK_BOOL : WK_F32, s, 2, -1, 1);
  at(c, bucket ? self : seq);
  at(c, bucket ? seq : self);
  ab(c, false);
  ab(c, k == 1);
  if (bucket) return true;
  if (k == 1)
    astr(c, "left"); /* opposite of right=True */
  else
    anone(c);
  anone(c);
  return true;
}
/* bincount: a vector of small non-negative integers (int64/int32), weights of the case's dtype at times. */
static bool g_bincount(sw_case *c) {
  int64_t s[1] = {c->mode == SW_EMPTY ? 0 : rpick(c, 1, 8)};
  at(c, rt(c, runif(c) < 0.3 ? WK_I32 : WK_I64, s, 1, 0, 6));
  if (c->dt == WK_I64)
    anone(c);
  else
    at(c, rself(c, s, 1));
  ai(c, rpick(c, 0, 8));
  return true;
}
static bool e_bincount(sw_case *c, int k) { /* a 2-d input; weights of another length; a negative minlength */
  int64_t s[1] = {3}, s2[2] = {2, 2}, w[1] = {4};
  if (k > 2) return false;
  at(c, k == 0 ? rt_index(c, s2, 2, 3) : rt_index(c, s, 1, 3));
  if (k == 1)
    at(c, rt(c, WK_F32, w, 1, 0, 1));
  else
    anone(c);
  ai(c, k == 2 ? -1 : 0);
  return true;
}
/* histc: a given range (values partly outside it, the max itself at times) or min == max (the data's). */
static bool g_histc(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  wk_tensor *x = rt(c, c->dt, s, nd, -2, 2);
  bool data_range = runif(c) < 0.4;
  if (x && !data_range && runif(c) < 0.3) add_specials(c, x); /* NaN/inf extrema: no data range (an error) */
  at(c, x);
  ai(c, rpick(c, 1, 7));
  if (data_range) {
    ai(c, 0), ai(c, 0);
  } else {
    ai(c, -1), ai(c, rpick(c, 0, 2)); /* integer bounds: exact in every float dtype */
  }
  return true;
}
static bool e_histc(sw_case *c, int k) { /* bins 0; min > max; an integer input */
  int64_t s[1] = {4};
  if (k > 2) return false;
  at(c, rt(c, k == 2 ? WK_I64 : WK_F32, s, 1, -1, 1));
  ai(c, k == 0 ? 0 : 5);
  ai(c, k == 1 ? 2 : 0), ai(c, k == 1 ? 1 : 0);
  return true;
}
/* gather/scatter indices: index sizes <= self's, values distinct along dim
 * within each column (scatter without add is then deterministic). */
static wk_tensor *scatter_index(sw_case *c, const int64_t *s, int nd, int d, int64_t *is) {
  for (int i = 0; i < nd; i++) is[i] = i == d ? rpick(c, s[i] ? 1 : 0, s[i]) : rpick(c, s[i] ? 1 : 0, s[i]);
  int64_t n = numel_of(is, nd), off = rpick(c, 0, 7);
  double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
  for (int64_t l = 0; l < n; l++) {
    int64_t rem = l, j = 0, col = 0;
    for (int i = nd - 1; i >= 0; i--) {
      int64_t x = rem % is[i];
      rem /= is[i];
      if (i == d)
        j = x;
      else
        col = col * 5 + x;
    }
    v[l] = (double)((j + col * 3 + off) % s[d]);
  }
  wk_tensor *t = from_vals(WK_I64, is, nd, v);
  free(v);
  if (!t) gen_fail(c, "index");
  return t;
}
static bool g_gather(sw_case *c) {
  int64_t s[WK_MAX_DIMS], is[WK_MAX_DIMS];
  int nd = rshape(c, s, 1, 3), d = (int)rpick(c, 0, nd - 1);
  if (s[d] == 0) return false;
  at(c, rself(c, s, nd));
  ai(c, d);
  at_frozen(c, scatter_index(c, s, nd, d, is));
  return true;
}
static bool g_scatter(sw_case *c) {
  int64_t s[WK_MAX_DIMS], is[WK_MAX_DIMS], ss[WK_MAX_DIMS];
  int nd = rshape(c, s, 1, 3), d = (int)rpick(c, 0, nd - 1);
  if (s[d] == 0) return false;
  at(c, rself(c, s, nd));
  ai(c, d);
  at_frozen(c, scatter_index(c, s, nd, d, is));
  /* src may be larger than index; its gradient then has index's shape, which autograd refuses (as PyTorch's) */
  for (int i = 0; i < nd; i++) ss[i] = is[i] + (c->grad ? 0 : rpick(c, 0, 1));
  at(c, rself(c, ss, nd));
  return true;
}
static bool e_gather(sw_case *c, int k) {
  int64_t s[2] = {2, 3}, i1[1] = {2}, i2[2] = {2, 3};
  if (k > 1) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  ai(c, 0);
  at(c, k == 0 ? rt_index(c, i1, 1, 2) : rt(c, WK_F32, i2, 2, 0, 2)); /* rank differs; a float index */
  if (is_op(c, "scatter") || is_op(c, "scatter_add")) at(c, rt(c, WK_F32, s, 2, -1, 1));
  return true;
}
static bool g_repeat(sw_case *c) {
  int64_t s[WK_MAX_DIMS], r[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3), nr = nd + (int)rpick(c, nd ? 0 : 1, 1);
  for (int i = 0; i < nr; i++) r[i] = rpick(c, c->mode == SW_EMPTY ? 0 : 1, 3);
  at(c, rself(c, s, nd));
  aints(c, r, nr);
  return true;
}
static bool e_repeat(sw_case *c, int k) {
  int64_t s[2] = {2, 3};
  if (k > 0) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  AINTS(c, 2); /* fewer repeats than dims */
  return true;
}
static bool g_flip(sw_case *c) {
  int64_t s[WK_MAX_DIMS], dims[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3), n = 0;
  for (int d = 0; d < nd; d++)
    if (runif(c) < 0.6) dims[n++] = d - (runif(c) < 0.5 ? nd : 0);
  at(c, rself(c, s, nd));
  aints(c, dims, n);
  return true;
}
static bool e_flip(sw_case *c, int k) {
  int64_t s[2] = {2, 3};
  if (k > 1) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  if (k == 0)
    AINTS(c, 0, -2);
  else
    AINTS(c, 2); /* a repeated dim; out of range */
  return true;
}
static bool g_roll(sw_case *c) {
  int64_t s[WK_MAX_DIMS], sh[WK_MAX_DIMS], dims[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3), n = nd && runif(c) < 0.7 ? (int)rpick(c, 1, nd) : 0;
  at(c, rself(c, s, nd));
  for (int i = 0; i < n; i++) sh[i] = rpick(c, -5, 5), dims[i] = (i + (int)rpick(c, 0, 1)) % nd;
  if (n >= 2 && dims[0] == dims[1]) dims[1] = (dims[0] + 1) % nd;
  if (n == 0) sh[0] = rpick(c, -5, 5);
  aints(c, sh, n ? n : 1);
  aints(c, dims, n);
  return true;
}
static bool e_roll(sw_case *c, int k) {
  int64_t s[2] = {2, 3};
  if (k > 0) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  AINTS(c, 1, 2);
  AINTS(c, 0); /* shifts and dims differ in length */
  return true;
}
static bool g_topk(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3), d = nd ? (int)rpick(c, 0, nd - 1) : 0;
  at(c, rt_distinct(c, c->dt, s, nd, -2, 2));
  ai(c, rpick(c, 0, nd ? s[d] : 1));
  ai(c, d - (nd && runif(c) < 0.5 ? nd : 0));
  ab(c, runif(c) < 0.5);
  ab(c, true); /* sorted: the order of an unsorted result is the kernel's choice */
  return true;
}
static bool e_topk(sw_case *c, int k) {
  int64_t s[2] = {2, 3};
  if (k > 0) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  ai(c, 5); /* k past the size */
  return true;
}
static bool g_sort(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  at(c, rt_distinct(c, c->dt, s, nd, -2, 2));
  ai(c, nd ? rpick(c, -nd, nd - 1) : 0);
  ab(c, runif(c) < 0.5);
  return true;
}
static bool g_one_hot(sw_case *c) {
  int64_t s[WK_MAX_DIMS], nc = rpick(c, 1, 5);
  int nd = rshape(c, s, 0, 2);
  at(c, rt_index(c, s, nd, nc));
  ai(c, nc);
  return true;
}
static bool e_one_hot(sw_case *c, int k) {
  int64_t s[1] = {3};
  if (k > 0) return false;
  at(c, rt(c, WK_F32, s, 1, 0, 3)); /* not an index tensor */
  ai(c, 4);
  return true;
}

/* ==== generators: backward ops (inputs from a forward call) ================================ */

/* A tensor shaped like t, random values of the case's dtype. */
static wk_tensor *like(sw_case *c, wk_tensor *t) {
  if (!t) {
    gen_fail(c, "forward call");
    return NULL;
  }
  return rt(c, wk_tensor_dtype(t), wk_tensor_sizes(t), wk_tensor_dim(t), -1, 1);
}
static void amask(sw_case *c) {
  int64_t m[3] = {1, 1, 1};
  if (runif(c) < 0.5)
    for (int i = 0; i < 3; i++) m[i] = runif(c) < 0.6;
  aints(c, m, 3);
}
static bool g_conv2d_backward(sw_case *c) {
  sw_conv g;
  conv_geom(c, &g);
  wk_tensor *x = rself(c, g.in, 4), *w = rself(c, g.w, 4);
  wk_value fa[7] = {WK_VT(x),           WK_VT(w),           WK_VNONE,       WK_VINTS(g.stride, 2),
                    WK_VINTS(g.pad, 2), WK_VINTS(g.dil, 2), WK_VI(g.groups)};
  at(c, like(c, call1("conv2d", fa, 7)));
  at(c, x);
  at(c, w);
  aints(c, g.stride, 2);
  aints(c, g.pad, 2);
  aints(c, g.dil, 2);
  ai(c, g.groups);
  amask(c);
  return true;
}
static bool g_max_pool_backward(sw_case *c) {
  sw_pool g;
  pool_geom(c, &g, true);
  wk_tensor *x = rt_distinct(c, c->dt, g.in, g.nd, -2, 2);
  wk_value fa[6] = {WK_VT(x),           WK_VINTS(g.k, 2),   WK_VINTS(g.stride, g.nstride),
                    WK_VINTS(g.pad, 2), WK_VINTS(g.dil, 2), WK_VB(g.ceil)};
  wk_value o[WK_MAX_OUTS];
  if (wk_call("max_pool2d_with_indices", fa, 6, o) != WK_OK) {
    gen_fail(c, "max_pool2d_with_indices");
    return true;
  }
  at(c, like(c, o[0].u.t));
  at(c, x);
  pool_args(c, &g, true);
  at_frozen(c, o[1].u.t);
  return true;
}
static bool g_avg_pool_backward(sw_case *c) {
  sw_pool g;
  pool_geom(c, &g, false);
  wk_tensor *x = rself(c, g.in, g.nd);
  bool cip = runif(c) < 0.5;
  int64_t div = runif(c) < 0.3 ? 3 : 0;
  wk_value fa[7] = {WK_VT(x),      WK_VINTS(g.k, 2), WK_VINTS(g.stride, g.nstride), WK_VINTS(g.pad, 2),
                    WK_VB(g.ceil), WK_VB(cip),       div ? WK_VI(div) : WK_VNONE};
  at(c, like(c, call1("avg_pool2d", fa, 7)));
  at(c, x);
  pool_args(c, &g, false);
  ab(c, cip);
  if (div)
    ai(c, div);
  else
    anone(c);
  return true;
}
static bool g_adaptive_backward(sw_case *c) {
  int64_t in[4] = {rpick(c, 1, 2), rpick(c, 1, 2), rpick(c, 1, 5), rpick(c, 1, 5)};
  int64_t os[2] = {rpick(c, 1, in[2] + 1), rpick(c, 1, in[3])};
  if (c->mode == SW_EMPTY) in[0] = 0;
  wk_tensor *x = rself(c, in, 4);
  at(c, like(c, CALL1("adaptive_avg_pool2d", WK_VT(x), WK_VINTS(os, 2))));
  at(c, x);
  return true;
}
static bool g_batch_norm_backward(sw_case *c) {
  sw_bn g;
  bn_geom(c, &g);
  wk_tensor *x = rself(c, g.in, g.nd);
  sw_case fwd = *c;
  fwd.n = 0;
  bn_args(&fwd, &g, x);
  ab(&fwd, g.train);
  af(&fwd, 0.1);
  af(&fwd, 1e-5);
  wk_value o[WK_MAX_OUTS];
  if (wk_call("batch_norm", fwd.a, fwd.n, o) != WK_OK) {
    gen_fail(c, "batch_norm");
    return true;
  }
  c->rng = fwd.rng;
  at(c, like(c, o[0].u.t));
  at(c, x);
  c->a[c->n++] = fwd.a[1]; /* weight */
  c->frozen[c->n] = c->frozen[c->n + 1] = true;
  c->a[c->n++] = fwd.a[3]; /* running stats (updated by the forward call: any values do) */
  c->a[c->n++] = fwd.a[4];
  if (g.train)
    at_frozen(c, o[1].u.t), at_frozen(c, o[2].u.t);
  else
    anone(c), anone(c);
  ab(c, g.train);
  af(c, 1e-5);
  amask(c);
  return true;
}
static bool g_layer_norm_backward(sw_case *c) {
  sw_case fwd = *c;
  fwd.n = 0;
  g_layer_norm(&fwd);
  wk_value o[WK_MAX_OUTS];
  if (wk_call("layer_norm", fwd.a, fwd.n, o) != WK_OK) {
    gen_fail(c, "layer_norm");
    return true;
  }
  c->rng = fwd.rng;
  at(c, like(c, o[0].u.t));
  at(c, fwd.a[0].u.t);
  aints(c, fwd.a[1].u.ints, fwd.a[1].len);
  at_frozen(c, o[1].u.t);
  at_frozen(c, o[2].u.t);
  c->a[c->n++] = fwd.a[2];
  c->a[c->n++] = fwd.a[3];
  amask(c);
  return true;
}
static bool g_sdpa_backward(sw_case *c) {
  sw_case fwd = *c;
  fwd.n = 0;
  g_sdpa(&fwd);
  wk_value o[WK_MAX_OUTS];
  if (fwd.bad[0] || wk_call("scaled_dot_product_attention", fwd.a, fwd.n, o) != WK_OK) {
    gen_fail(c, "scaled_dot_product_attention");
    return true;
  }
  c->rng = fwd.rng;
  at(c, like(c, o[0].u.t));
  for (int i = 0; i < 4; i++) c->a[c->n++] = fwd.a[i];
  at_frozen(c, o[0].u.t);
  at_frozen(c, o[1].u.t);
  at_frozen(c, o[2].u.t);
  c->a[c->n++] = fwd.a[4];
  c->a[c->n++] = fwd.a[5];
  c->a[c->n++] = fwd.a[6];
  int64_t m[4] = {1, 1, 1, 1};
  if (runif(c) < 0.5)
    for (int i = 0; i < 4; i++) m[i] = runif(c) < 0.6;
  aints(c, m, 4);
  return true;
}
static bool g_embedding_backward(sw_case *c) {
  int64_t s[WK_MAX_DIMS], nw = rpick(c, 1, 5), dd = rpick(c, 1, 4);
  int nd = rshape(c, s, 0, 2);
  wk_tensor *idx = rt_index(c, s, nd, nw);
  s[nd] = dd;
  at(c, rself(c, s, nd + 1));
  at_frozen(c, idx);
  ai(c, nw);
  ai(c, runif(c) < 0.5 ? -1 : rpick(c, 0, nw - 1));
  return true;
}
static bool g_softmax_backward(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3), d = nd ? (int)rpick(c, -nd, nd - 1) : 0;
  wk_tensor *x = rself(c, s, nd);
  const char *fwd = is_op(c, "softmax_backward_data") ? "softmax" : "log_softmax";
  wk_tensor *y = CALL1(fwd, WK_VT(x), WK_VI(d));
  at(c, like(c, y));
  at(c, y);
  ai(c, d);
  adt(c, c->dt);
  return true;
}
static bool g_pad_backward(sw_case *c) {
  sw_case fwd = *c;
  fwd.n = 0;
  g_pad(&fwd);
  c->rng = fwd.rng;
  wk_tensor *y = call1("pad", fwd.a, fwd.n);
  at(c, like(c, y));
  at(c, fwd.a[0].u.t);
  aints(c, fwd.a[1].u.ints, fwd.a[1].len);
  astr(c, fwd.a[2].u.s);
  return true;
}
/* gelu/threshold/sigmoid/tanh_backward(grad, self or output, ...). */
static bool g_act_backward(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  at(c, rself(c, s, nd));
  wk_tensor *x = rself(c, s, nd);
  if (is_op(c, "sigmoid_backward")) x = CALL1("sigmoid", WK_VT(x));
  if (is_op(c, "tanh_backward")) x = CALL1("tanh", WK_VT(x));
  at(c, x);
  if (is_op(c, "threshold_backward")) af(c, runif(c) < 0.5 ? 0 : 0.5);
  if (is_op(c, "gelu_backward")) astr(c, runif(c) < 0.5 ? "none" : "tanh");
  return true;
}
/* Pointwise backward ops broadcast like PyTorch's: a gradient that does not broadcast. */
static bool e_act_backward(sw_case *c, int k) {
  int64_t g[2] = {2, 3}, x[1] = {4};
  if (k > 0) return false;
  at(c, rt(c, WK_F32, g, 2, -1, 1));
  at(c, rt(c, WK_F32, x, 1, -1, 1));
  if (is_op(c, "threshold_backward")) af(c, 0);
  return true;
}
/* A valid call whose first argument (the incoming gradient) has another shape. */
static bool e_grad_shape(sw_case *c, int k) {
  if (k > 0 || !c->row->gen(c) || c->bad[0]) return false;
  wk_tensor *g = c->a[0].u.t;
  int64_t s[WK_MAX_DIMS] = {2};
  int nd = wk_tensor_dim(g) ? wk_tensor_dim(g) : 1;
  if (wk_tensor_dim(g)) memcpy(s, wk_tensor_sizes(g), sizeof(int64_t) * (size_t)nd);
  if (wk_tensor_dim(g)) s[0] += 1; /* one more along the first dim (the batch; the last may be free, as embedding's) */
  c->a[0] = WK_VT(rt(c, wk_tensor_dtype(g), s, nd, -1, 1));
  return true;
}

/* ==== generators: the optim plugin's fused updates ========================================== */

/* param, grad, then the state buffers the schema names (optional ones given by chance). */
static bool g_optim(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 1, 3), nargs = wk_op_num_args(c->op);
  bool amsgrad = runif(c) < 0.5, centered = runif(c) < 0.5, mom = runif(c) < 0.5;
  for (int i = 0; i < nargs; i++) {
    const char *name = wk_op_arg_name(c->op, i), *type = wk_op_arg_type(c->op, i);
    bool tensor = !strncmp(type, "Tensor", 6);
    if (tensor) {
      bool given = !strchr(type, '?') || (!strcmp(name, "max_exp_avg_sq") && amsgrad) ||
                   (!strcmp(name, "grad_avg") && centered) || (!strcmp(name, "momentum_buffer") && mom);
      bool nonneg = strstr(name, "sq") || strstr(name, "square") || strstr(name, "sum");
      if (given)
        at(c, nonneg ? rt(c, c->dt, s, nd, 0, 1) : rself(c, s, nd));
      else
        anone(c);
    } else if (!strcmp(name, "step")) {
      af(c, (double)rpick(c, 1, 5));
    } else if (!strcmp(name, "lr")) {
      af(c, 0.1);
    } else if (!strcmp(name, "momentum")) {
      af(c, mom ? 0.9 : 0);
    } else if (!strcmp(name, "weight_decay")) {
      af(c, runif(c) < 0.5 ? 0 : 0.01);
    } else if (!strcmp(name, "amsgrad")) {
      ab(c, amsgrad);
    } else if (!strcmp(name, "centered")) {
      ab(c, centered);
    } else if (!strcmp(name, "maximize") || !strcmp(name, "decoupled_weight_decay")) {
      ab(c, runif(c) < 0.5);
    } else if (!strcmp(name, "nesterov")) {
      ab(c, mom && runif(c) < 0.5);
    } else if (!strcmp(name, "momentum_buffer_is_new")) {
      ab(c, runif(c) < 0.5);
    } else if (wk_op_arg_default(c->op, i)) {
      c->a[c->n++] = *wk_op_arg_default(c->op, i);
    } else {
      af(c, 0.5);
    }
  }
  return true;
}
/* A valid update whose grad has another shape. */
static bool e_optim(sw_case *c, int k) {
  if (k > 0 || !g_optim(c) || c->bad[0]) return false;
  int64_t s[1] = {7};
  c->a[1] = WK_VT(rt(c, WK_F32, s, 1, -1, 1));
  return true;
}

/* ---- GradScaler's fused ops ---- */
/* amp_foreach_non_finite_check_and_unscale_: 1-3 gradients of the dtype
 * under test (some inf/NaN outside gradcheck), found_inf 0 or 1, inv_scale a
 * power of two or not. */
static bool g_amp_unscale(sw_case *c) {
  wk_tensor *ts[3];
  int n = (int)rpick(c, 1, 3);
  for (int i = 0; i < n; i++) {
    int64_t s[WK_MAX_DIMS];
    int nd = rshape(c, s, 0, 3);
    ts[i] = rself(c, s, nd);
    if (runif(c) < 0.5) add_specials(c, ts[i]);
  }
  alist(c, ts, n);
  at(c, rt(c, WK_F32, NULL, 0, runif(c) < 0.5 ? 0 : 1, 1.5));
  at(c, rt(c, WK_F32, NULL, 0, 0.01, 1));
  return true;
}
static bool e_amp_unscale(sw_case *c, int k) {
  if (k > 2 || !g_amp_unscale(c) || c->bad[0]) return false;
  int64_t two[1] = {2};
  if (k == 0) c->a[2] = WK_VT(rt(c, WK_F32, two, 1, 0, 1));        /* inv_scale of 2 elements */
  if (k == 1) c->a[1] = WK_VT(rt(c, WK_I32, NULL, 0, 0, 1));        /* found_inf not float */
  if (k == 2) c->lists[0][0] = rt(c, WK_I64, two, 1, 0, 3);         /* an integer gradient */
  return true;
}
/* amp_update_scale_: a float32 scale, an int32 tracker below the interval, found_inf 0 or 1. */
static bool g_amp_update(sw_case *c) {
  int64_t interval = rpick(c, 1, 4);
  at(c, rt(c, WK_F32, NULL, 0, 1, 65536));
  at(c, rt(c, WK_I32, NULL, 0, 0, (double)interval));
  at(c, rt(c, WK_F32, NULL, 0, runif(c) < 0.5 ? 0 : 1, 1.5));
  af(c, 2.0);
  af(c, 0.5);
  ai(c, interval);
  return true;
}
static bool e_amp_update(sw_case *c, int k) {
  if (k > 2 || !g_amp_update(c) || c->bad[0]) return false;
  if (k == 0) c->a[1] = WK_VT(rt(c, WK_F32, NULL, 0, 0, 1)); /* growth_tracker not int32 */
  if (k == 1) c->a[0] = WK_VT(rt(c, WK_F64, NULL, 0, 1, 2)); /* current_scale not float32 */
  if (k == 2) c->a[5] = WK_VI(0);                            /* growth_interval 0 */
  return true;
}

#endif
