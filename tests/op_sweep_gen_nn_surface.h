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

/* ---- issue 21's nn surface, second part: interpolate, pools, convolutions, shuffles, norms, dropouts ---- */

/* A float[] argument (stored in the case's per-argument ints storage, which has room for it). */
static void afloats(sw_case *c, const double *v, int n) {
  double *f = (double *)(void *)c->ints[c->n];
  memcpy(f, v, sizeof(double) * (size_t)n);
  c->a[c->n] = WK_VFLOATS(f, n);
  c->n++;
}

/* A pooled/convolved input: [N, C, spatial..] (N 0 in EMPTY) or unbatched [C, spatial..]. */
static int nd_input(sw_case *c, int nsp, int64_t C, const int64_t *sp, int64_t *s, bool allow_unbatched) {
  int n = 0;
  if (!allow_unbatched || c->mode == SW_EMPTY || runif(c) < 0.7) s[n++] = c->mode == SW_EMPTY ? 0 : rpick(c, 1, 2);
  s[n++] = C;
  for (int i = 0; i < nsp; i++) s[n++] = sp[i];
  return n;
}

static int op_nsp(const sw_case *c) {
  return strstr(c->row->op, "3d") ? 3 : strstr(c->row->op, "2d") ? 2 : 1;
}

/* interpolate: a mode the rank allows, size or scale_factor, align_corners for the interpolating modes. */
static bool g_interpolate(sw_case *c) {
  int nsp = (int)rpick(c, 1, 3);
  static const char *const per[4] = {NULL, "linear", "bilinear", "trilinear"};
  const char *modes[5] = {"nearest", "nearest-exact", "area", per[nsp], nsp == 2 ? "bicubic" : per[nsp]};
  const char *m = modes[rpick(c, 0, 4)];
  bool interp = !strcmp(m, per[nsp]) || !strcmp(m, "bicubic");
  int64_t sp[3], s[5], os[3];
  double sf[3];
  for (int i = 0; i < nsp; i++) {
    sp[i] = c->grad ? rpick(c, 2, 3) : rpick(c, 1, 4);
    os[i] = rpick(c, 1, 6);
    sf[i] = 0.5 + 0.25 * (double)rpick(c, 1, 8);
    if ((int64_t)floor((double)sp[i] * sf[i]) < 1) sf[i] = 1.5;
  }
  int n = nd_input(c, nsp, rpick(c, 1, 2), sp, s, false);
  at(c, rself(c, s, n));
  bool by_size = runif(c) < 0.5;
  if (by_size)
    aints(c, os, nsp);
  else
    anone(c);
  if (!by_size)
    afloats(c, sf, nsp);
  else
    anone(c);
  astr(c, m);
  if (interp && runif(c) < 0.7)
    ab(c, runif(c) < 0.5);
  else
    anone(c);
  if (!by_size && runif(c) < 0.3)
    ab(c, true);
  else
    anone(c);
  ab(c, (!strcmp(m, "bilinear") || !strcmp(m, "bicubic")) && runif(c) < 0.4); /* antialias */
  return true;
}
/* A 2-d input; size and scale_factor both; align_corners with nearest; bilinear on a 3-d input; an integer
 * input; a size of the wrong length; an unknown mode; antialias with nearest. */
static bool e_interpolate(sw_case *c, int k) {
  int64_t s3[3] = {1, 2, 4}, s4[4] = {1, 2, 3, 4}, s2[2] = {2, 4};
  double sf[2] = {2, 2};
  if (k > 7) return false; /* 7: antialias with nearest */
  at(c, k == 0 ? rt(c, WK_F32, s2, 2, -1, 1) : k == 3 ? rt(c, WK_F32, s3, 3, -1, 1) : rt(c, k == 4 ? WK_I64 : WK_F32, s4, 4, -1, 1));
  if (k == 5)
    AINTS(c, 2, 3, 4);
  else if (k == 3)
    AINTS(c, 5);
  else
    AINTS(c, 5, 6);
  if (k == 1)
    afloats(c, sf, 2);
  else
    anone(c);
  astr(c, k == 3 ? "bilinear" : k == 6 ? "cubic" : "nearest");
  if (k == 2)
    ab(c, true);
  else
    anone(c);
  anone(c);
  ab(c, k == 7);
  return true;
}

/* interpolate_backward: a forward interpolate case (g_interpolate), its result's shape for grad_output, the input's
 * sizes, and the forward's scale_factor, mode, align_corners and recompute_scale_factor. */
static bool g_interpolate_backward(sw_case *c) {
  sw_case f = *c;
  f.n = 0;
  if (!g_interpolate(&f)) return false;
  wk_tensor *x = f.a[0].u.t;
  wk_value o[WK_MAX_OUTS];
  wk_tensor *y = x && wk_call("interpolate", f.a, f.n, o) == WK_OK ? o[0].u.t : NULL; /* the scope owns it */
  if (!y) {
    gen_fail(c, "forward interpolate");
    return false;
  }
  at(c, rself(c, wk_tensor_sizes(y), wk_tensor_dim(y)));
  aints(c, wk_tensor_sizes(x), wk_tensor_dim(x));
  if (f.a[2].tag == WK_V_FLOATS)
    afloats(c, f.a[2].u.floats, f.a[2].len);
  else
    anone(c);
  astr(c, f.a[3].u.s);
  c->a[c->n++] = f.a[4];
  c->a[c->n++] = f.a[5];
  c->a[c->n++] = f.a[6];
  return true;
}
/* grad_output of the wrong rank, of the wrong spatial size for the scale, an integer grad_output, an input_size of
 * 2 values, an unknown mode, bicubic on a 3-d input. */
static bool e_interpolate_backward(sw_case *c, int k) {
  int64_t s4[4] = {1, 2, 6, 8}, s3[3] = {1, 2, 8};
  double sf[1] = {2};
  if (k > 5) return false;
  at(c, k == 0 ? rt(c, WK_F32, s3, 3, -1, 1) : k == 5 ? rt(c, WK_F32, s3, 3, -1, 1)
                                                      : rt(c, k == 2 ? WK_I64 : WK_F32, s4, 4, -1, 1));
  if (k == 3)
    AINTS(c, 1, 2);
  else if (k == 5)
    AINTS(c, 1, 2, 4);
  else
    AINTS(c, 1, 2, 3, 4);
  if (k == 1)
    afloats(c, (const double[]){3}, 1);
  else
    afloats(c, sf, 1);
  astr(c, k == 4 ? "cubic" : k == 5 ? "bicubic" : "bilinear");
  anone(c);
  anone(c);
  return true;
}

/* Pool geometry of one dim: kernel, stride, padding <= half the (dilated) kernel, an input that fits. */
static void pool1(sw_case *c, bool dil, int64_t *k, int64_t *st, int64_t *p, int64_t *d, int64_t *in) {
  *k = rpick(c, 1, 3);
  *st = rpick(c, 1, 2);
  *d = dil ? rpick(c, 1, 2) : 1;
  int64_t span = (*k - 1) * *d + 1;
  *p = rpick(c, 0, dil ? span / 2 : *k / 2);
  int64_t need = span - 2 * *p;
  *in = (need < 1 ? 1 : need) + rpick(c, 0, c->grad ? 1 : 3);
}

/* avg_pool1d/3d, max_pool1d/3d_with_indices. */
static bool g_pool_nd(sw_case *c) {
  int nsp = op_nsp(c);
  bool mx = is_op(c, "max_pool1d_with_indices") || is_op(c, "max_pool3d_with_indices");
  int64_t k[3], st[3], p[3], d[3], sp[3], s[5];
  for (int i = 0; i < nsp; i++) pool1(c, mx, &k[i], &st[i], &p[i], &d[i], &sp[i]);
  int n = nd_input(c, nsp, rpick(c, 1, 2), sp, s, true);
  at(c, rself(c, s, n));
  aints(c, k, nsp);
  if (runif(c) < 0.3)
    aints(c, st, 0);
  else
    aints(c, st, nsp);
  aints(c, p, nsp);
  if (mx) aints(c, d, nsp);
  ab(c, runif(c) < 0.5);
  if (!mx) {
    ab(c, runif(c) < 0.5);
    if (nsp == 3) {
      if (runif(c) < 0.3)
        ai(c, rpick(c, 1, 3));
      else
        anone(c);
    }
  }
  return true;
}
/* A too-large padding; a 2-d (1d) / 3-d (3d) input of the wrong rank; an integer input. */
static bool e_pool_nd(sw_case *c, int k) {
  int nsp = op_nsp(c);
  bool mx = strstr(c->row->op, "max") != NULL;
  int64_t s[5] = {1, 2, 4, 4, 4}, one = 1, two = 2, three = 3;
  if (k > 2) return false;
  at(c, rt(c, k == 2 ? WK_I64 : WK_F32, s, k == 1 ? nsp : nsp + 2, -1, 1));
  aints(c, &three, 1);
  aints(c, &one, 1);
  aints(c, k == 0 ? &three : &one, 1);
  if (mx) aints(c, &one, 1);
  ab(c, false);
  if (!mx) {
    ab(c, true);
    if (nsp == 3) anone(c);
  }
  (void)two;
  return true;
}

/* adaptive_avg_pool1d/3d, adaptive_max_pool1d/2d/3d: output sizes below and above the input's. */
static bool g_adaptive_nd(sw_case *c) {
  int nsp = op_nsp(c);
  int64_t sp[3], os[3], s[5];
  for (int i = 0; i < nsp; i++) sp[i] = c->grad ? rpick(c, 2, 3) : rpick(c, 1, 5), os[i] = rpick(c, 1, 5);
  int n = nd_input(c, nsp, rpick(c, 1, 2), sp, s, true);
  at(c, rself(c, s, n));
  aints(c, os, nsp);
  return true;
}
static bool e_adaptive_nd(sw_case *c, int k) { /* a wrong rank; an empty non-batch dim; an integer input */
  int nsp = op_nsp(c);
  int64_t s[5] = {1, 2, 3, 3, 3}, z[5] = {1, 0, 3, 3, 3}, os[3] = {2, 2, 2};
  if (k > 2) return false;
  at(c, k == 1 ? rt(c, WK_F32, z, nsp + 2, -1, 1) : rt(c, k == 2 ? WK_I64 : WK_F32, s, k == 0 ? nsp : nsp + 2, -1, 1));
  aints(c, os, nsp);
  return true;
}

/* conv1d/conv3d and conv_transpose1d/2d/3d: groups 1 or 2, random stride, padding, dilation (and output_padding). */
static bool g_conv_nd(sw_case *c) {
  int nsp = op_nsp(c);
  bool tr = strstr(c->row->op, "transpose") != NULL;
  int64_t g = rpick(c, 1, 2), cpg = rpick(c, 1, 2), opg = rpick(c, 1, 2);
  int64_t w[5], sp[3], st[3], p[3], d[3], op[3], s[5];
  w[0] = tr ? g * cpg : g * opg;
  w[1] = tr ? opg : cpg;
  bool one_stride = runif(c) < 0.2; /* stride given as one value for every dim */
  for (int i = 0; i < nsp; i++) {
    w[2 + i] = rpick(c, 1, 3);
    st[i] = one_stride && i ? st[0] : rpick(c, 1, 2);
    d[i] = rpick(c, 1, 2);
    p[i] = rpick(c, 0, 1);
    op[i] = tr ? rpick(c, 0, (st[i] > d[i] ? st[i] : d[i]) - 1) : 0;
    int64_t span = d[i] * (w[2 + i] - 1) + 1 - 2 * p[i];
    sp[i] = tr ? rpick(c, 1, c->grad ? 2 : 3) : (span < 1 ? 1 : span) + rpick(c, 0, c->grad ? 1 : 2);
  }
  if (tr) /* the output must not be empty: (in - 1) s - 2 p + d (k - 1) + op + 1 >= 1 */
    for (int i = 0; i < nsp; i++)
      while ((sp[i] - 1) * st[i] - 2 * p[i] + d[i] * (w[2 + i] - 1) + op[i] + 1 < 1) sp[i]++;
  int n = nd_input(c, nsp, g * cpg, sp, s, true);
  at(c, rself(c, s, n));
  at(c, rself(c, w, nsp + 2));
  int64_t outc = tr ? g * opg : w[0];
  if (runif(c) < 0.5)
    at(c, rself(c, &outc, 1));
  else
    anone(c);
  aints(c, st, one_stride ? 1 : nsp);
  aints(c, p, nsp);
  if (tr) {
    aints(c, op, nsp);
    ai(c, g);
    aints(c, d, nsp);
  } else {
    aints(c, d, nsp);
    ai(c, g);
  }
  return true;
}
/* Channels that do not match the weight; a weight of the wrong rank; mixed dtypes. */
static bool e_conv_nd(sw_case *c, int k) {
  int nsp = op_nsp(c);
  bool tr = strstr(c->row->op, "transpose") != NULL;
  int64_t s[5] = {1, 3, 4, 4, 4}, w[5] = {2, 2, 2, 2, 2}, one = 1, zero = 0;
  if (k > 2) return false;
  at(c, rt(c, WK_F32, s, nsp + 2, -1, 1));
  at(c, rt(c, k == 2 ? WK_F64 : WK_F32, w, k == 1 ? nsp + 1 : nsp + 2, -1, 1));
  anone(c);
  aints(c, &one, 1);
  aints(c, &zero, 1);
  if (tr) {
    aints(c, &zero, 1);
    ai(c, 1);
  }
  aints(c, &one, 1);
  if (!tr) ai(c, 1);
  return true;
}

/* conv1d/2d/3d.padding: "same" (stride 1; even and odd kernels, dilation) or "valid" (any stride). */
static bool g_conv_padding(sw_case *c) {
  int nsp = c->row->op[4] - '0';
  bool same = runif(c) < 0.6;
  int64_t g = rpick(c, 1, 2), cpg = rpick(c, 1, 2), opg = rpick(c, 1, 2);
  int64_t w[5], sp[3], st[3], d[3], s[5];
  w[0] = g * opg;
  w[1] = cpg;
  for (int i = 0; i < nsp; i++) {
    w[2 + i] = rpick(c, 1, 4);
    st[i] = same ? 1 : rpick(c, 1, 2);
    d[i] = rpick(c, 1, 2);
    int64_t span = d[i] * (w[2 + i] - 1) + 1;
    sp[i] = (same ? 1 : span) + rpick(c, 0, c->grad ? 1 : 3);
  }
  int n = nd_input(c, nsp, g * cpg, sp, s, true);
  at(c, rself(c, s, n));
  at(c, rself(c, w, nsp + 2));
  int64_t outc = w[0];
  if (runif(c) < 0.5)
    at(c, rself(c, &outc, 1));
  else
    anone(c);
  aints(c, st, nsp);
  astr(c, same ? "same" : "valid");
  aints(c, d, nsp);
  ai(c, g);
  return true;
}
/* An unknown padding string; "same" with a stride; channels that do not match the weight. */
static bool e_conv_padding(sw_case *c, int k) {
  int nsp = c->row->op[4] - '0';
  int64_t s[5] = {1, 3, 4, 4, 4}, w[5] = {2, k == 2 ? 2 : 3, 2, 2, 2}, one = 1, two = 2;
  if (k > 2) return false;
  at(c, rt(c, WK_F32, s, nsp + 2, -1, 1));
  at(c, rt(c, WK_F32, w, nsp + 2, -1, 1));
  anone(c);
  aints(c, k == 1 ? &two : &one, 1);
  astr(c, k == 0 ? "full" : "same");
  aints(c, &one, 1);
  ai(c, 1);
  return true;
}

/* pixel_shuffle / pixel_unshuffle / channel_shuffle: shapes that divide. */
static bool g_shuffle(sw_case *c) {
  int64_t r = rpick(c, 1, 3), s[5];
  int nb = (int)rpick(c, 0, 2), n = 0;
  for (int i = 0; i < nb; i++) s[n++] = c->mode == SW_EMPTY && i == 0 ? 0 : rpick(c, 1, 2);
  if (is_op(c, "channel_shuffle")) { /* [N, C, *] */
    n = 0;
    s[n++] = c->mode == SW_EMPTY ? 0 : rpick(c, 1, 2);
    s[n++] = r * rpick(c, 1, 2);
    for (int i = 0; i <= nb; i++) s[n++] = rpick(c, 1, 3);
  } else if (is_op(c, "pixel_shuffle")) {
    s[n++] = r * r * rpick(c, 1, 2);
    s[n++] = rpick(c, 1, 3);
    s[n++] = rpick(c, 1, 3);
  } else {
    s[n++] = rpick(c, 1, 2);
    s[n++] = r * rpick(c, 1, 2);
    s[n++] = r * rpick(c, 1, 2);
  }
  at(c, rself(c, s, n));
  ai(c, r);
  return true;
}
static bool e_shuffle(sw_case *c, int k) { /* a factor that does not divide; a 2-d input; a factor 0 */
  int64_t s[4] = {1, 3, 4, 4};
  if (k > 2) return false;
  at(c, rt(c, WK_F32, s, k == 1 ? 2 : 4, -1, 1));
  ai(c, k == 2 ? 0 : is_op(c, "pixel_unshuffle") ? 3 : 2);
  return true;
}

/* group_norm: G dividing C, optional affine. */
static bool g_group_norm(sw_case *c) {
  int64_t s[WK_MAX_DIMS], G = rpick(c, 1, 3);
  int nd = rshape(c, s, 2, 4);
  s[0] = c->mode == SW_EMPTY ? 0 : (s[0] ? s[0] : 1);
  for (int i = 1; i < nd; i++) if (!s[i]) s[i] = 1;
  s[1] = G * rpick(c, 1, 2);
  at(c, rself(c, s, nd));
  ai(c, G);
  for (int i = 0; i < 2; i++)
    if (runif(c) < 0.6)
      at(c, rself(c, s + 1, 1));
    else
      anone(c);
  af(c, 1e-5);
  return true;
}
static bool e_group_norm(sw_case *c, int k) { /* groups not dividing the channels; a bad weight; a 1-d input */
  int64_t s[3] = {2, 4, 3}, w[1] = {3};
  if (k > 2) return false;
  at(c, rt(c, WK_F32, s, k == 2 ? 1 : 3, -1, 1));
  ai(c, k == 0 ? 3 : 2);
  if (k == 1)
    at(c, rt(c, WK_F32, w, 1, -1, 1));
  else
    anone(c);
  anone(c);
  af(c, 1e-5);
  return true;
}

/* instance_norm: input statistics (with or without running statistics to update) or running statistics. */
static bool g_instance_norm(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 3, 4);
  for (int i = 1; i < nd; i++) s[i] = c->grad ? rpick(c, 2, 3) : rpick(c, 1, 3);
  s[2] = rpick(c, 2, 3); /* more than one spatial element */
  if (c->mode != SW_EMPTY && !s[0]) s[0] = 1;
  bool stats = runif(c) < 0.7;
  at(c, rself(c, s, nd));
  for (int i = 0; i < 2; i++)
    if (runif(c) < 0.6)
      at(c, rself(c, s + 1, 1));
    else
      anone(c);
  bool running = !stats || runif(c) < 0.5;
  if (running) {
    at_frozen(c, rt(c, c->dt, s + 1, 1, -1, 1));
    at_frozen(c, rt(c, c->dt, s + 1, 1, 0.5, 2));
  } else {
    anone(c);
    anone(c);
  }
  ab(c, stats);
  af(c, 0.1);
  af(c, 1e-5);
  return true;
}
static bool e_instance_norm(sw_case *c, int k) { /* a 2-d input; no running statistics without input statistics */
  int64_t s[3] = {2, 3, 4};
  if (k > 1) return false;
  at(c, rt(c, WK_F32, s, k == 0 ? 2 : 3, -1, 1));
  anone(c);
  anone(c);
  anone(c);
  anone(c);
  ab(c, k != 1);
  af(c, 0.1);
  af(c, 1e-5);
  return true;
}

static bool g_local_response_norm(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 3, 4);
  at(c, rself(c, s, nd));
  ai(c, rpick(c, 1, 4));
  af(c, 0.1);
  af(c, 0.75);
  af(c, 1.0);
  return true;
}
static bool e_local_response_norm(sw_case *c, int k) { /* a 2-d input; size 0 */
  int64_t s[3] = {2, 3, 4};
  if (k > 1) return false;
  at(c, rt(c, WK_F32, s, k == 0 ? 2 : 3, -1, 1));
  ai(c, k == 1 ? 0 : 2);
  af(c, 1e-4);
  af(c, 0.75);
  af(c, 1.0);
  return true;
}

static bool g_dropout_variant(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 2, 4);
  static const double ps[4] = {0, 0.3, 0.5, 1};
  at(c, rself(c, s, nd));
  af(c, ps[rpick(c, 0, 3)]);
  ab(c, runif(c) < 0.6);
  return true;
}
static bool e_dropout_variant(sw_case *c, int k) { /* p outside [0, 1]; an integer input */
  int64_t s[2] = {2, 3};
  if (k > 1) return false;
  at(c, rt(c, k == 1 ? WK_I64 : WK_F32, s, 2, -1, 1));
  af(c, k == 0 ? 1.5 : 0.5);
  ab(c, true);
  return true;
}

/* im2col / col2im: random kernel, dilation, padding, stride over a plane that fits. */
static bool g_fold(sw_case *c) {
  bool col = is_op(c, "col2im");
  int64_t k[2], d[2], p[2], st[2], hw[2], o[2];
  for (int i = 0; i < 2; i++) {
    k[i] = rpick(c, 1, 3), d[i] = rpick(c, 1, 2), p[i] = rpick(c, 0, 1), st[i] = rpick(c, 1, 2);
    int64_t need = d[i] * (k[i] - 1) + 1 - 2 * p[i];
    hw[i] = (need < 1 ? 1 : need) + rpick(c, 0, c->grad ? 1 : 3);
    o[i] = (hw[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) / st[i] + 1;
  }
  int64_t C = rpick(c, 1, 2), N = c->mode == SW_EMPTY ? 0 : rpick(c, 1, 2), s[4];
  bool batched = c->mode == SW_EMPTY || runif(c) < 0.7;
  int n = 0;
  if (batched) s[n++] = N;
  if (col) {
    s[n++] = C * k[0] * k[1];
    s[n++] = o[0] * o[1];
  } else {
    s[n++] = C;
    s[n++] = hw[0];
    s[n++] = hw[1];
  }
  at(c, rself(c, s, n));
  if (col) aints(c, hw, 2);
  aints(c, k, 2);
  aints(c, d, 2);
  aints(c, p, 2);
  aints(c, st, 2);
  return true;
}
static bool e_fold(sw_case *c, int k) { /* blocks that do not fit; a zero stride; (col2im) columns not divisible by the kernel */
  bool col = is_op(c, "col2im");
  int64_t s3[3] = {1, 5, 4}, s4[4] = {1, 2, 3, 3}, hw[2] = {3, 3}, k4[2] = {4, 4}, k2[2] = {2, 2}, one[2] = {1, 1},
          zero[2] = {0, 0}, st0[2] = {0, 1};
  if (k > (col ? 2 : 1)) return false;
  at(c, col ? rt(c, WK_F32, s3, 3, -1, 1) : rt(c, WK_F32, s4, 4, -1, 1));
  if (col) aints(c, hw, 2);
  aints(c, k == 0 ? k4 : k2, 2);
  aints(c, one, 2);
  aints(c, zero, 2);
  aints(c, k == 1 ? st0 : one, 2);
  return true;
}

/* lp_pool1d / lp_pool2d: positive inputs (x^p of negatives is NaN for fractional p), p 1, 2 or 3. */
static bool g_lp_pool(sw_case *c) {
  int nsp = op_nsp(c);
  int64_t k[2], st[2], sp[2], s[4];
  for (int i = 0; i < nsp; i++) k[i] = rpick(c, 1, 3), st[i] = rpick(c, 1, 2), sp[i] = k[i] + rpick(c, 0, c->grad ? 1 : 3);
  int n = nd_input(c, nsp, rpick(c, 1, 2), sp, s, true);
  at(c, rt(c, c->dt, s, n, 0.2, 2));
  af(c, (double)rpick(c, 1, 3));
  aints(c, k, nsp);
  if (runif(c) < 0.3)
    aints(c, st, 0);
  else
    aints(c, st, nsp);
  ab(c, runif(c) < 0.5);
  return true;
}
static bool e_lp_pool(sw_case *c, int k) { /* norm_type 0; a kernel larger than the input */
  int nsp = op_nsp(c);
  int64_t s[4] = {1, 2, 3, 3}, k2 = 2, k9 = 9;
  if (k > 1) return false;
  at(c, rt(c, WK_F32, s, nsp + 2, 0.1, 1));
  af(c, k == 0 ? 0 : 2);
  aints(c, k == 1 ? &k9 : &k2, 1);
  aints(c, &k2, 0);
  ab(c, false);
  return true;
}

/* max_unpool2d: values and the indices of a max_pool2d (distinct positions), into the pooled-from plane. */
static bool g_max_unpool2d(sw_case *c) {
  int64_t s[4] = {c->mode == SW_EMPTY ? 0 : rpick(c, 1, 2), rpick(c, 1, 2), 2 * rpick(c, 1, 3), 2 * rpick(c, 1, 3)};
  bool batched = c->mode == SW_EMPTY || runif(c) < 0.7;
  wk_tensor *x = rself(c, batched ? s : s + 1, batched ? 4 : 3);
  int64_t two = 2, zero = 0, one = 1;
  wk_tensor *idx = NULL;
  wk_tensor *v = x ? wkx_max_pool2d_with_indices(x, &two, 1, NULL, 0, &zero, 1, &one, 1, false, &idx) : NULL;
  if (!v || !idx) {
    gen_fail(c, "max_pool2d for max_unpool2d");
    return true;
  }
  at(c, v);
  at_frozen(c, idx);
  aints(c, s + 2, 2);
  return true;
}
static bool e_max_unpool2d(sw_case *c, int k) { /* float indices; indices of another shape; a 2-d input */
  int64_t s[3] = {2, 2, 2}, s2[3] = {2, 2, 3}, hw[2] = {4, 4};
  if (k > 2) return false;
  at(c, rt(c, WK_F32, s, k == 2 ? 2 : 3, -1, 1));
  at(c, k == 0 ? rt(c, WK_F32, s, 3, 0, 4) : rt_index(c, k == 1 ? s2 : s, k == 2 ? 2 : 3, 16));
  aints(c, hw, 2);
  return true;
}

/* affine_grid: a batch of 2-d (or 3-d) affine matrices and an output size. */
static bool g_affine_grid(sw_case *c) {
  bool three = runif(c) < 0.3;
  int nsp = three ? 3 : 2;
  int64_t sz[5], ts[3];
  sz[0] = rpick(c, 1, 2), sz[1] = rpick(c, 1, 3);
  for (int i = 0; i < nsp; i++) sz[2 + i] = c->grad ? rpick(c, 2, 3) : rpick(c, 1, 4);
  ts[0] = sz[0], ts[1] = nsp, ts[2] = nsp + 1;
  at(c, rt(c, c->dt, ts, 3, -1, 1));
  aints(c, sz, nsp + 2);
  ab(c, runif(c) < 0.5);
  return true;
}
static bool e_affine_grid(sw_case *c, int k) { /* theta of the wrong shape; a 3-value size; an integer theta */
  int64_t ts[3] = {1, 2, 3}, bad[3] = {1, 3, 3}, sz[4] = {1, 1, 2, 2};
  if (k > 2) return false;
  at(c, rt(c, k == 2 ? WK_I64 : WK_F32, k == 0 ? bad : ts, 3, -1, 1));
  aints(c, sz, k == 1 ? 3 : 4);
  ab(c, false);
  return true;
}

/* grid_sample: a grid a little beyond [-1, 1], every mode, padding mode and align_corners. */
static bool g_grid_sample(sw_case *c) { /* 4-D (every mode) or 5-D (bilinear, nearest) */
  static const char *const modes[3] = {"bilinear", "nearest", "bicubic"}, *const pads[3] = {"zeros", "border", "reflection"};
  int nsp = runif(c) < 0.3 ? 3 : 2;
  int64_t x[5] = {c->mode == SW_EMPTY ? 0 : rpick(c, 1, 2), rpick(c, 1, 2)}, g[5];
  for (int i = 2; i < nsp + 2; i++) x[i] = c->grad ? rpick(c, 2, 3) : rpick(c, 1, 4);
  g[0] = x[0];
  for (int i = 1; i <= nsp; i++) g[i] = c->grad ? rpick(c, 1, 2) : rpick(c, 1, 3);
  g[nsp + 1] = nsp;
  at(c, rself(c, x, nsp + 2));
  at(c, rt(c, c->dt, g, nsp + 2, -1.2, 1.2));
  astr(c, modes[rpick(c, 0, nsp == 3 ? 1 : 2)]);
  astr(c, pads[rpick(c, 0, 2)]);
  ab(c, runif(c) < 0.5);
  return true;
}
/* a grid whose last dim is 3 for a 4-D input; batch sizes differ; an unknown mode; a 3-d input; bicubic in 5-D */
static bool e_grid_sample(sw_case *c, int k) {
  int64_t x[5] = {1, 2, 3, 3, 3}, g3[4] = {1, 2, 2, 3}, g2[4] = {2, 2, 2, 2}, g[5] = {1, 2, 2, 2, 3};
  if (k > 4) return false;
  at(c, rt(c, WK_F32, x, k == 3 ? 3 : k == 4 ? 5 : 4, -1, 1));
  at(c, k == 4 ? rt(c, WK_F32, g, 5, -1, 1) : rt(c, WK_F32, k == 0 ? g3 : k == 1 ? g2 : g, 4, -1, 1));
  astr(c, k == 2 ? "linear" : k == 4 ? "bicubic" : "bilinear");
  astr(c, "zeros");
  ab(c, false);
  return true;
}

/* embedding_bag: 1-d indices with sorted offsets (empty bags too) or 2-d indices; sum, mean or max. */
static bool g_embedding_bag(sw_case *c) {
  int64_t ws[2] = {rpick(c, 2, 6), rpick(c, 1, 3)}, n = c->mode == SW_EMPTY ? 0 : rpick(c, 1, 6);
  int mode = (int)rpick(c, 0, 2);
  bool two = runif(c) < 0.3 && c->mode != SW_EMPTY, lastoff = !two && runif(c) < 0.3;
  at(c, rself(c, ws, 2));
  int64_t is[2] = {two ? 2 : n, n}, nb = rpick(c, 1, 3);
  at_frozen(c, rt_index(c, is, two ? 2 : 1, ws[0]));
  if (two) {
    anone(c);
  } else {
    double off[8];
    off[0] = 0;
    for (int64_t b = 1; b < nb; b++) off[b] = (double)rpick(c, (int64_t)off[b - 1], n);
    if (lastoff) off[nb++] = (double)n;
    wk_tensor *o = wk_tensor_from_data(off, WK_F64, &nb, 1);
    at_frozen(c, o ? CALL1("to.dtype", WK_VT(o), WK_VDT(WK_I64), WK_VB(false)) : NULL);
  }
  ai(c, mode);
  if (mode == 0 && runif(c) < 0.4)
    at(c, rself(c, is, two ? 2 : 1));
  else
    anone(c);
  ab(c, lastoff);
  if (runif(c) < 0.3)
    ai(c, rpick(c, 0, ws[0] - 1));
  else
    anone(c);
  return true;
}
static bool e_embedding_bag(sw_case *c, int k) { /* 2-d indices with offsets; mode 3; float indices */
  int64_t ws[2] = {5, 2}, is[2] = {2, 2}, os[1] = {2};
  if (k > 2) return false;
  at(c, rt(c, WK_F32, ws, 2, -1, 1));
  at(c, k == 2 ? rt(c, WK_F32, is, 2, 0, 4) : rt_index(c, is, k == 0 ? 2 : 1, 5));
  if (k == 2)
    anone(c);
  else
    at(c, rt_index(c, os, 1, 1));
  ai(c, k == 1 ? 3 : 0);
  anone(c);
  ab(c, false);
  anone(c);
  return true;
}

/* ctc_loss: [T, N, C] log-probabilities (log_softmax of random logits), padded targets without blanks,
 * input lengths long enough (or not: an impossible alignment gives inf, or 0 with zero_infinity). */
static bool g_ctc_loss(sw_case *c) {
  int64_t T = rpick(c, 2, 6), N = c->mode == SW_EMPTY ? 0 : rpick(c, 1, 3), C = rpick(c, 2, 4), S = rpick(c, 1, 3);
  int64_t ls[3] = {T, N, C}, ts[2] = {N, S};
  wk_tensor *x = rself(c, ls, 3);
  at(c, x ? CALL1("log_softmax", WK_VT(x), WK_VI(2), WK_VNONE) : NULL);
  wk_tensor *tg = rt(c, WK_I64, ts, 2, 1, (double)C); /* labels 1..C-1: blank is 0 */
  at_frozen(c, tg);
  double il[3], tl[3];
  for (int64_t n = 0; n < N; n++) tl[n] = (double)rpick(c, 0, S), il[n] = (double)rpick(c, c->grad ? T : 1, T);
  at_frozen(c, from_vals(WK_I64, &N, 1, il));
  at_frozen(c, from_vals(WK_I64, &N, 1, tl));
  ai(c, 0);
  ai(c, rpick(c, 0, 2));
  ab(c, c->grad || runif(c) < 0.5);
  return true;
}
static bool e_ctc_loss(sw_case *c, int k) { /* 2-d log_probs; lengths of the wrong size; blank out of range */
  int64_t ls[3] = {4, 2, 3}, ts[2] = {2, 2}, n2 = 2, n3 = 3;
  if (k > 2) return false;
  at(c, rt(c, WK_F32, ls, k == 0 ? 2 : 3, -1, 0));
  at(c, rt_index(c, ts, 2, 3));
  at(c, rt_index(c, k == 1 ? &n3 : &n2, 1, 4));
  at(c, rt_index(c, &n2, 1, 2));
  ai(c, k == 2 ? 3 : 0);
  ai(c, 1);
  ab(c, false);
  return true;
}

#define SW_NN_SURFACE_ROWS6 \
  {.op = "ctc_loss", .gen = g_ctc_loss, .err = e_ctc_loss, .dtypes = D_F, .modes = M_EMPTY},

#define SW_NN_SURFACE_ROWS5 \
  {.op = "embedding_bag", .gen = g_embedding_bag, .err = e_embedding_bag, .dtypes = D_FB, .modes = M_EMPTY},

#define SW_NN_SURFACE_ROWS4                                                                                   \
  {.op = "affine_grid", .gen = g_affine_grid, .err = e_affine_grid, .dtypes = D_FB},                          \
      {.op = "grid_sample", .gen = g_grid_sample, .err = e_grid_sample, .dtypes = D_FB, .modes = M_EMPTY},

#define SW_NN_SURFACE_ROWS3                                                                                     \
  {.op = "im2col", .gen = g_fold, .err = e_fold, .dtypes = D_FB, .modes = M_EMPTY},                             \
      {.op = "col2im", .gen = g_fold, .err = e_fold, .dtypes = D_FB, .modes = M_EMPTY},                         \
      {.op = "lp_pool1d", .gen = g_lp_pool, .err = e_lp_pool, .dtypes = D_FB, .modes = M_EMPTY},                \
      {.op = "lp_pool2d", .gen = g_lp_pool, .err = e_lp_pool, .dtypes = D_FB, .modes = M_EMPTY},                \
      {.op = "max_unpool2d", .gen = g_max_unpool2d, .err = e_max_unpool2d, .dtypes = D_FB, .modes = M_EMPTY},

#define SW_NN_SURFACE_ROWS2                                                                                       \
  {.op = "interpolate", .gen = g_interpolate, .err = e_interpolate, .dtypes = D_FB, .modes = M_EMPTY},            \
      {.op = "interpolate_backward", .gen = g_interpolate_backward, .err = e_interpolate_backward, .dtypes = D_FB, \
       .modes = M_EMPTY},                                                                                         \
      {.op = "avg_pool1d", .gen = g_pool_nd, .err = e_pool_nd, .dtypes = D_FB, .modes = M_EMPTY},                \
      {.op = "avg_pool3d", .gen = g_pool_nd, .err = e_pool_nd, .dtypes = D_FB, .modes = M_EMPTY},                \
      {.op = "max_pool1d_with_indices", .gen = g_pool_nd, .err = e_pool_nd, .dtypes = D_FB, .modes = M_EMPTY},   \
      {.op = "max_pool3d_with_indices", .gen = g_pool_nd, .err = e_pool_nd, .dtypes = D_FB, .modes = M_EMPTY},   \
      {.op = "adaptive_avg_pool1d", .gen = g_adaptive_nd, .err = e_adaptive_nd, .dtypes = D_FB, .modes = M_EMPTY}, \
      {.op = "adaptive_avg_pool3d", .gen = g_adaptive_nd, .err = e_adaptive_nd, .dtypes = D_FB, .modes = M_EMPTY}, \
      {.op = "adaptive_max_pool1d", .gen = g_adaptive_nd, .err = e_adaptive_nd, .dtypes = D_FB, .modes = M_EMPTY}, \
      {.op = "adaptive_max_pool2d", .gen = g_adaptive_nd, .err = e_adaptive_nd, .dtypes = D_FB, .modes = M_EMPTY}, \
      {.op = "adaptive_max_pool3d", .gen = g_adaptive_nd, .err = e_adaptive_nd, .dtypes = D_FB, .modes = M_EMPTY}, \
      {.op = "conv1d", .gen = g_conv_nd, .err = e_conv_nd, .dtypes = D_FB, .modes = M_EMPTY, .tolx = 10},       \
      {.op = "conv3d", .gen = g_conv_nd, .err = e_conv_nd, .dtypes = D_FB, .modes = M_EMPTY, .tolx = 10},       \
      {.op = "conv1d.padding", .gen = g_conv_padding, .err = e_conv_padding, .dtypes = D_FB, .modes = M_EMPTY, .tolx = 10}, \
      {.op = "conv2d.padding", .gen = g_conv_padding, .err = e_conv_padding, .dtypes = D_FB, .modes = M_EMPTY, .tolx = 10}, \
      {.op = "conv3d.padding", .gen = g_conv_padding, .err = e_conv_padding, .dtypes = D_FB, .modes = M_EMPTY, .tolx = 10}, \
      {.op = "conv_transpose1d", .gen = g_conv_nd, .err = e_conv_nd, .dtypes = D_FB, .modes = M_EMPTY, .tolx = 10}, \
      {.op = "conv_transpose2d", .gen = g_conv_nd, .err = e_conv_nd, .dtypes = D_FB, .modes = M_EMPTY, .tolx = 10}, \
      {.op = "conv_transpose3d", .gen = g_conv_nd, .err = e_conv_nd, .dtypes = D_FB, .modes = M_EMPTY, .tolx = 10}, \
      {.op = "pixel_shuffle", .gen = g_shuffle, .err = e_shuffle, .dtypes = D_FIB, .modes = M_EMPTY},           \
      {.op = "pixel_unshuffle", .gen = g_shuffle, .err = e_shuffle, .dtypes = D_FIB, .modes = M_EMPTY},         \
      {.op = "channel_shuffle", .gen = g_shuffle, .err = e_shuffle, .dtypes = D_FIB, .modes = M_EMPTY},         \
      {.op = "group_norm", .gen = g_group_norm, .err = e_group_norm, .dtypes = D_FB, .modes = M_EMPTY, .tolx = 10}, \
      {.op = "instance_norm", .gen = g_instance_norm, .err = e_instance_norm, .dtypes = D_FB, .modes = M_EMPTY, .tolx = 10}, \
      {.op = "local_response_norm", .gen = g_local_response_norm, .err = e_local_response_norm, .dtypes = D_FB, .modes = M_EMPTY}, \
      {.op = "alpha_dropout", .gen = g_dropout_variant, .err = e_dropout_variant, .dtypes = D_FB, .modes = M_EMPTY, .flags = SW_RANDOM}, \
      {.op = "feature_dropout", .gen = g_dropout_variant, .err = e_dropout_variant, .dtypes = D_FB, .modes = M_EMPTY, .flags = SW_RANDOM}, \
      {.op = "feature_alpha_dropout", .gen = g_dropout_variant, .err = e_dropout_variant, .dtypes = D_FB, .modes = M_EMPTY, .flags = SW_RANDOM},

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
      {.op = "cdist", .gen = g_cdist, .err = e_cdist, .dtypes = D_FB, .modes = M_EMPTY}, SW_NN_SURFACE_ROWS2 SW_NN_SURFACE_ROWS3 SW_NN_SURFACE_ROWS4 SW_NN_SURFACE_ROWS5 SW_NN_SURFACE_ROWS6

#endif
