/* The op sweep's generators for issue 21's nn and loss surface (core/composite_nn_surface.c):
 * valid calls over random shapes (broadcast, empty, 0-d where the op takes them) and error cases
 * the meta functions reject. Value-dependent errors (a probability outside [0, 1], a class index
 * out of range, a negative variance) are not here: meta cannot see values; check_nn_surface has them.
 * Included by check_op_sweep.c after op_sweep_gen_nn.h; SW_NN_SURFACE_ROWS is its table's block. */
#ifndef WICK_TESTS_OP_SWEEP_GEN_NN_SURFACE_H
#define WICK_TESTS_OP_SWEEP_GEN_NN_SURFACE_H

#include "op_sweep_util.h"

/* Values -1 and 1 (dtype dt), a target of the embedding losses. */
static wk_tensor *rt_pm1(sw_case *c, wk_dtype dt, const int64_t *s, int nd) {
  wk_tensor *b = rt(c, WK_I64, s, nd, 0, 2);
  wk_tensor *v = b ? CALL1("sub.Scalar", WK_VT(CALL1("mul.Scalar", WK_VT(b), WK_VI(2))), WK_VI(1), WK_VI(1)) : NULL;
  v = v && dt != WK_I64 ? CALL1("to.dtype", WK_VT(v), WK_VDT(dt), WK_VB(false)) : v;
  if (!v) gen_fail(c, "+-1 target");
  return v;
}

/* The elementwise losses' tail after (self, target): reduction, then beta / delta / log_target. */
static void elem_tail(sw_case *c, int64_t reduction, double extra) {
  ai(c, reduction);
  if (is_op(c, "smooth_l1_loss") || is_op(c, "huber_loss"))
    af(c, extra);
  else if (is_op(c, "kl_div"))
    ab(c, extra != 0);
}

/* l1_loss, smooth_l1_loss, huber_loss, soft_margin_loss, kl_div: self and a broadcastable target. */
static bool g_elem_loss(sw_case *c) {
  int64_t s[WK_MAX_DIMS], ts[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3), tn = nd;
  memcpy(ts, s, sizeof s);
  if (c->mode == SW_BCAST) tn = bshape(c, s, nd, ts);
  bool kl = is_op(c, "kl_div"), logt = kl && runif(c) < 0.5;
  at(c, rself(c, s, nd));
  wk_tensor *t = kl && !logt ? rt(c, c->dt, ts, tn, 0.05, 1) : rself(c, ts, tn);
  if (is_op(c, "soft_margin_loss"))
    at_frozen(c, t); /* no target derivative (PyTorch's) */
  else
    at(c, t);
  double extra = is_op(c, "smooth_l1_loss") ? (double)rpick(c, 0, 2) * 0.5 : is_op(c, "huber_loss") ? 0.5 + runif(c) : logt;
  elem_tail(c, rpick(c, 0, 2), extra);
  return true;
}
/* Shapes that do not broadcast; integer inputs; reduction 3; smooth_l1's negative beta and huber's zero delta. */
static bool e_elem_loss(sw_case *c, int k) {
  int64_t s[2] = {2, 3}, s4[1] = {4};
  bool param = is_op(c, "smooth_l1_loss") || is_op(c, "huber_loss");
  if (k > (param ? 3 : 2)) return false;
  wk_dtype dt = k == 1 ? WK_I64 : WK_F32;
  at(c, rt(c, dt, s, 2, -1, 1));
  at(c, rt(c, dt, k == 0 ? s4 : s, k == 0 ? 1 : 2, 0.1, 1));
  elem_tail(c, k == 2 ? 3 : 1, k == 3 ? (is_op(c, "huber_loss") ? 0 : -1) : 1);
  return true;
}

/* binary_cross_entropy: probabilities in (0, 1), a target of the same shape, an optional weight. */
static bool g_bce(sw_case *c) {
  int64_t s[WK_MAX_DIMS], ws[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  at(c, rt(c, c->dt, s, nd, 0.05, 0.95));
  at(c, rt(c, c->dt, s, nd, 0, 1));
  if (runif(c) < 0.5) {
    int wn = bshape(c, s, nd, ws);
    at_frozen(c, rt(c, c->dt, ws, wn, 0.5, 2));
  } else {
    anone(c);
  }
  ai(c, rpick(c, 0, 2));
  return true;
}
/* A target of another shape; a weight that does not broadcast; integer inputs. */
static bool e_bce(sw_case *c, int k) {
  int64_t s[2] = {2, 3}, s4[1] = {4};
  if (k > 2) return false;
  wk_dtype dt = k == 2 ? WK_I64 : WK_F32;
  at(c, rt(c, dt, s, 2, 0.1, 0.9));
  at(c, rt(c, dt, k == 0 ? s4 : s, k == 0 ? 1 : 2, 0, 1));
  if (k == 1)
    at(c, rt(c, WK_F32, s4, 1, 0, 1));
  else
    anone(c);
  ai(c, 1);
  return true;
}

/* poisson_nll_loss: log-rates (log_input) or positive rates, counts in [0, 3). */
static bool g_poisson_nll(sw_case *c) {
  int64_t s[WK_MAX_DIMS], ts[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3), tn = nd;
  memcpy(ts, s, sizeof s);
  if (c->mode == SW_BCAST) tn = bshape(c, s, nd, ts);
  bool logi = runif(c) < 0.5;
  at(c, logi ? rself(c, s, nd) : rt(c, c->dt, s, nd, 0.1, 2));
  at(c, rt(c, c->dt, ts, tn, 0, 3));
  ab(c, logi);
  ab(c, runif(c) < 0.5);
  af(c, 1e-8);
  ai(c, rpick(c, 0, 2));
  return true;
}
static bool e_poisson_nll(sw_case *c, int k) { /* shapes that do not broadcast; integer inputs; reduction 5 */
  int64_t s[2] = {2, 3}, s4[1] = {4};
  if (k > 2) return false;
  wk_dtype dt = k == 1 ? WK_I64 : WK_F32;
  at(c, rt(c, dt, s, 2, 0, 2));
  at(c, rt(c, dt, k == 0 ? s4 : s, k == 0 ? 1 : 2, 0, 2));
  ab(c, true);
  ab(c, false);
  af(c, 1e-8);
  ai(c, k == 2 ? 5 : 1);
  return true;
}

/* gaussian_nll_loss: var of the input's shape, without its last dim, or with a last dim of 1. */
static bool g_gaussian_nll(sw_case *c) {
  int64_t s[WK_MAX_DIMS], vs[WK_MAX_DIMS];
  int nd = rshape(c, s, 1, 3), vn = nd, form = (int)rpick(c, 0, 2);
  memcpy(vs, s, sizeof s);
  if (form == 1) vn = nd - 1;
  if (form == 2) vs[nd - 1] = 1;
  at(c, rself(c, s, nd));
  at(c, rself(c, s, nd));
  at(c, rt(c, c->dt, vs, vn, 0.2, 2));
  ab(c, runif(c) < 0.5);
  af(c, 1e-6);
  ai(c, rpick(c, 0, 2));
  return true;
}
static bool e_gaussian_nll(sw_case *c, int k) { /* var of a wrong shape; eps 0; integer inputs */
  int64_t s[2] = {2, 3}, v[2] = {3, 2};
  if (k > 2) return false;
  wk_dtype dt = k == 2 ? WK_I64 : WK_F32;
  at(c, rt(c, dt, s, 2, -1, 1));
  at(c, rt(c, dt, s, 2, -1, 1));
  at(c, rt(c, dt, k == 0 ? v : s, 2, 1, 2));
  ab(c, false);
  af(c, k == 1 ? 0 : 1e-6);
  ai(c, 1);
  return true;
}

/* margin_ranking_loss: three inputs of one rank (sizes 1 here and there in BCAST). */
static bool g_margin_ranking(sw_case *c) {
  int64_t s[WK_MAX_DIMS], s2[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 2);
  memcpy(s2, s, sizeof s);
  if (c->mode == SW_BCAST)
    for (int d = 0; d < nd; d++)
      if (runif(c) < 0.5) s2[d] = 1;
  at(c, rself(c, s, nd));
  at(c, rself(c, s2, nd));
  at(c, rt(c, c->dt, s, nd, -1, 1));
  af(c, runif(c) < 0.5 ? 0 : 0.5);
  ai(c, rpick(c, 0, 2));
  return true;
}
static bool e_margin_ranking(sw_case *c, int k) { /* ranks differ; integer inputs */
  int64_t s[2] = {2, 3}, s3[1] = {3};
  if (k > 1) return false;
  wk_dtype dt = k == 1 ? WK_I64 : WK_F32;
  at(c, rt(c, dt, s, 2, -1, 1));
  at(c, rt(c, dt, s, 2, -1, 1));
  at(c, rt(c, dt, k == 0 ? s3 : s, k == 0 ? 1 : 2, -1, 1));
  af(c, 0);
  ai(c, 1);
  return true;
}

/* hinge_embedding_loss: a +-1 target of self's (or a broadcastable) shape. */
static bool g_hinge_embedding(sw_case *c) {
  int64_t s[WK_MAX_DIMS], ts[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3), tn = nd;
  memcpy(ts, s, sizeof s);
  if (c->mode == SW_BCAST) tn = bshape(c, s, nd, ts);
  at(c, rself(c, s, nd));
  at_frozen(c, rt_pm1(c, runif(c) < 0.5 ? WK_I64 : c->dt, ts, tn));
  af(c, runif(c) < 0.5 ? 1 : 0.5);
  ai(c, rpick(c, 0, 2));
  return true;
}
static bool e_hinge_embedding(sw_case *c, int k) { /* an integer input; shapes that do not broadcast */
  int64_t s[2] = {2, 3}, s4[1] = {4};
  if (k > 1) return false;
  at(c, rt(c, k == 0 ? WK_I64 : WK_F32, s, 2, -1, 1));
  at(c, rt_pm1(c, WK_F32, k == 1 ? s4 : s, k == 1 ? 1 : 2));
  af(c, 1);
  ai(c, 1);
  return true;
}

/* cosine_embedding_loss: [N, D] inputs with an [N] target, or [D] inputs with a 0-d target. */
static bool g_cosine_embedding(sw_case *c) {
  bool batched = runif(c) < 0.7;
  int64_t s[2] = {c->mode == SW_EMPTY ? 0 : rpick(c, 1, 4), rpick(c, 1, 4)};
  if (c->grad) s[0] = rpick(c, 2, 3), s[1] = rpick(c, 2, 3);
  if (c->mode == SW_EMPTY) batched = true;
  at(c, rself(c, batched ? s : s + 1, batched ? 2 : 1));
  at(c, rself(c, batched ? s : s + 1, batched ? 2 : 1));
  at_frozen(c, rt_pm1(c, WK_I64, s, batched ? 1 : 0));
  af(c, runif(c) < 0.5 ? 0 : 0.3);
  ai(c, rpick(c, 0, 2));
  return true;
}
static bool e_cosine_embedding(sw_case *c, int k) { /* a 2-d target; a 1-d target with 1-d inputs; integer inputs */
  int64_t s[2] = {2, 3};
  if (k > 2) return false;
  wk_dtype dt = k == 2 ? WK_I64 : WK_F32;
  at(c, rt(c, dt, k == 1 ? s + 1 : s, k == 1 ? 1 : 2, -1, 1));
  at(c, rt(c, dt, k == 1 ? s + 1 : s, k == 1 ? 1 : 2, -1, 1));
  at(c, rt_pm1(c, WK_I64, s, k == 0 ? 2 : 1));
  af(c, 0);
  ai(c, 1);
  return true;
}

/* triplet_margin_loss: three inputs [N, D] (or [D]), p 1 or 2, with or without swap. */
static bool g_triplet_margin(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 1, 2);
  for (int i = 0; i < 3; i++) at(c, rself(c, s, nd));
  af(c, runif(c) < 0.5 ? 1 : 0.5);
  af(c, runif(c) < 0.5 ? 2 : 1);
  af(c, 1e-6);
  ab(c, runif(c) < 0.5);
  ai(c, rpick(c, 0, 2));
  return true;
}
static bool e_triplet_margin(sw_case *c, int k) { /* ranks differ; a negative p; integer inputs */
  int64_t s[2] = {2, 3};
  if (k > 2) return false;
  wk_dtype dt = k == 2 ? WK_I64 : WK_F32;
  at(c, rt(c, dt, s, 2, -1, 1));
  at(c, rt(c, dt, s, 2, -1, 1));
  at(c, rt(c, dt, k == 0 ? s + 1 : s, k == 0 ? 1 : 2, -1, 1));
  af(c, 1);
  af(c, k == 1 ? -1 : 2);
  af(c, 1e-6);
  ab(c, false);
  ai(c, 1);
  return true;
}

/* multilabel_soft_margin_loss: x [N, C] or [C], a 0/1 target of its shape, an optional weight [C]. */
static bool g_multilabel_soft_margin(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 1, 2);
  at(c, rself(c, s, nd));
  at(c, rt(c, c->dt, s, nd, 0, 2));
  c->a[c->n - 1] = WK_VT(CALL1("floor", WK_VT(c->a[c->n - 1].u.t)));
  if (runif(c) < 0.5)
    at_frozen(c, rt(c, c->dt, s + nd - 1, 1, 0.5, 2));
  else
    anone(c);
  ai(c, rpick(c, 0, 2));
  return true;
}
static bool e_multilabel_soft_margin(sw_case *c, int k) { /* a target of another shape; a 0-d input; a bad weight */
  int64_t s[2] = {2, 3}, s4[1] = {4};
  if (k > 2) return false;
  at(c, rt(c, WK_F32, s, k == 1 ? 0 : 2, -1, 1));
  at(c, rt(c, WK_F32, k == 0 ? s4 : s, k == 0 ? 1 : k == 1 ? 0 : 2, 0, 1));
  if (k == 2)
    at(c, rt(c, WK_F32, s4, 1, 0, 1));
  else
    anone(c);
  ai(c, 1);
  return true;
}

/* multi_margin_loss: x [N, C] (or [C]), class indices in range, p 1 or 2, an optional weight [C]. */
static bool g_multi_margin(sw_case *c) {
  bool batched = c->mode == SW_EMPTY || runif(c) < 0.7;
  int64_t s[2] = {c->mode == SW_EMPTY ? 0 : rpick(c, 1, 4), rpick(c, 1, 4)};
  if (c->grad) s[0] = rpick(c, 2, 3), s[1] = rpick(c, 2, 3);
  at(c, rself(c, batched ? s : s + 1, batched ? 2 : 1));
  int64_t one = 1;
  at_frozen(c, batched ? rt_index(c, s, 1, s[1]) : rt_index(c, &one, runif(c) < 0.5 ? 1 : 0, s[1]));
  ai(c, rpick(c, 1, 2));
  af(c, runif(c) < 0.5 ? 1 : 0.5);
  if (runif(c) < 0.5)
    at_frozen(c, rt(c, c->dt, s + 1, 1, 0.5, 2));
  else
    anone(c);
  ai(c, rpick(c, 0, 2));
  return true;
}
static bool e_multi_margin(sw_case *c, int k) { /* p 3; a target of the wrong size; a bad weight; a float target */
  int64_t s[2] = {2, 3}, s3[1] = {3}, s4[1] = {4};
  if (k > 3) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  at(c, k == 3 ? rt(c, WK_F32, s, 1, 0, 2) : rt_index(c, k == 1 ? s3 : s, 1, 3));
  ai(c, k == 0 ? 3 : 1);
  af(c, 1);
  if (k == 2)
    at(c, rt(c, WK_F32, s4, 1, 0, 1));
  else
    anone(c);
  ai(c, 1);
  return true;
}

/* cosine_similarity: x1 and a broadcastable x2, dim of either sign. */
static bool g_cosine_similarity(sw_case *c) {
  int64_t s[WK_MAX_DIMS], s2[WK_MAX_DIMS];
  int nd = rshape(c, s, 1, 3), n2 = nd;
  memcpy(s2, s, sizeof s);
  if (c->mode == SW_BCAST) n2 = bshape(c, s, nd, s2);
  at(c, rself(c, s, nd));
  at(c, rself(c, s2, n2));
  ai(c, rpick(c, 0, nd - 1) - (runif(c) < 0.5 ? nd : 0));
  af(c, 1e-8);
  return true;
}
static bool e_cosine_similarity(sw_case *c, int k) { /* dim out of range; integer inputs; no broadcast */
  int64_t s[2] = {2, 3}, s4[1] = {4};
  if (k > 2) return false;
  wk_dtype dt = k == 1 ? WK_I64 : WK_F32;
  at(c, rt(c, dt, s, 2, -1, 1));
  at(c, rt(c, dt, k == 2 ? s4 : s, k == 2 ? 1 : 2, -1, 1));
  ai(c, k == 0 ? 2 : 1);
  af(c, 1e-8);
  return true;
}

/* pairwise_distance: [N, D] (or [D]) pairs, p 1, 2 or 3, keepdim either way. */
static bool g_pairwise_distance(sw_case *c) {
  int64_t s[WK_MAX_DIMS], s2[WK_MAX_DIMS];
  int nd = rshape(c, s, 1, 2), n2 = nd;
  memcpy(s2, s, sizeof s);
  if (c->mode == SW_BCAST) n2 = bshape(c, s, nd, s2);
  at(c, rself(c, s, nd));
  at(c, rself(c, s2, n2));
  af(c, (double)rpick(c, 1, 3));
  af(c, 1e-6);
  ab(c, runif(c) < 0.5);
  return true;
}
static bool e_pairwise_distance(sw_case *c, int k) { /* integer inputs; no broadcast; a negative p */
  int64_t s[2] = {2, 3}, s4[1] = {4};
  if (k > 2) return false;
  wk_dtype dt = k == 0 ? WK_I64 : WK_F32;
  at(c, rt(c, dt, s, 2, -1, 1));
  at(c, rt(c, dt, k == 1 ? s4 : s, k == 1 ? 1 : 2, -1, 1));
  af(c, k == 2 ? -1 : 2);
  af(c, 1e-6);
  ab(c, false);
  return true;
}

/* cdist: [B?, P, M] and [B?, R, M], p 1 or 2 (p 0 and inf for values only). */
static bool g_cdist(sw_case *c) {
  bool batch = runif(c) < 0.4;
  int64_t a[3], b[3];
  for (int i = 0; i < 3; i++) a[i] = c->grad ? rpick(c, 2, 3) : rpick(c, 1, 4);
  b[0] = runif(c) < 0.3 ? 1 : a[0];
  b[1] = c->grad ? rpick(c, 2, 3) : rpick(c, 1, 4);
  b[2] = a[2];
  if (c->mode == SW_EMPTY) a[1] = 0;
  at(c, rself(c, batch ? a : a + 1, batch ? 3 : 2));
  at(c, rself(c, batch ? b : b + 1, batch ? 3 : 2));
  double ps[4] = {2, 1, 0, INFINITY};
  af(c, ps[rpick(c, 0, c->grad ? 1 : 3)]);
  anone(c);
  return true;
}
static bool e_cdist(sw_case *c, int k) { /* a 1-d x1; columns differ; integer inputs; a negative p */
  int64_t s[2] = {2, 3}, s4[2] = {2, 4};
  if (k > 3) return false;
  wk_dtype dt = k == 2 ? WK_I64 : WK_F32;
  at(c, rt(c, dt, k == 0 ? s + 1 : s, k == 0 ? 1 : 2, -1, 1));
  at(c, rt(c, dt, k == 1 ? s4 : s, 2, -1, 1));
  af(c, k == 3 ? -1 : 2);
  anone(c);
  return true;
}

#define SW_NN_SURFACE_ROWS                                                                                         \
  {.op = "l1_loss", .gen = g_elem_loss, .err = e_elem_loss, .dtypes = D_FB, .modes = M_BES},                        \
      {.op = "smooth_l1_loss", .gen = g_elem_loss, .err = e_elem_loss, .dtypes = D_FB, .modes = M_BES},             \
      {.op = "huber_loss", .gen = g_elem_loss, .err = e_elem_loss, .dtypes = D_FB, .modes = M_BES},                 \
      {.op = "soft_margin_loss", .gen = g_elem_loss, .err = e_elem_loss, .dtypes = D_FB, .modes = M_BES},           \
      {.op = "kl_div", .gen = g_elem_loss, .err = e_elem_loss, .dtypes = D_FB, .modes = M_BES},                     \
      {.op = "binary_cross_entropy", .gen = g_bce, .err = e_bce, .dtypes = D_FB, .modes = M_ES},                    \
      {.op = "poisson_nll_loss", .gen = g_poisson_nll, .err = e_poisson_nll, .dtypes = D_FB, .modes = M_BES},       \
      {.op = "gaussian_nll_loss", .gen = g_gaussian_nll, .err = e_gaussian_nll, .dtypes = D_FB, .modes = M_EMPTY},  \
      {.op = "margin_ranking_loss", .gen = g_margin_ranking, .err = e_margin_ranking, .dtypes = D_FB, .modes = M_BES}, \
      {.op = "hinge_embedding_loss", .gen = g_hinge_embedding, .err = e_hinge_embedding, .dtypes = D_FB, .modes = M_BES}, \
      {.op = "cosine_embedding_loss", .gen = g_cosine_embedding, .err = e_cosine_embedding, .dtypes = D_FB, .modes = M_EMPTY}, \
      {.op = "triplet_margin_loss", .gen = g_triplet_margin, .err = e_triplet_margin, .dtypes = D_FB, .modes = M_EMPTY}, \
      {.op = "multilabel_soft_margin_loss", .gen = g_multilabel_soft_margin, .err = e_multilabel_soft_margin, .dtypes = D_FB, .modes = M_EMPTY}, \
      {.op = "multi_margin_loss", .gen = g_multi_margin, .err = e_multi_margin, .dtypes = D_FB, .modes = M_EMPTY},  \
      {.op = "cosine_similarity", .gen = g_cosine_similarity, .err = e_cosine_similarity, .dtypes = D_FB, .modes = M_BCAST | M_EMPTY}, \
      {.op = "pairwise_distance", .gen = g_pairwise_distance, .err = e_pairwise_distance, .dtypes = D_FB, .modes = M_BCAST | M_EMPTY}, \
      {.op = "cdist", .gen = g_cdist, .err = e_cdist, .dtypes = D_FB, .modes = M_EMPTY},

#endif
