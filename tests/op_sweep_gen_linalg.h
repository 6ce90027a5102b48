/* check_op_sweep generators for issue 21's ops added by engineer A: mode,
 * unique, unique_consecutive, scatter_reduce, index_put, masked_scatter,
 * einsum, baddbmm, addbmm, tensordot, kron, the vector and matrix norms and
 * the linalg_* decompositions and solvers. Included by check_op_sweep.c
 * after op_sweep_gen.h (its helpers). */
#ifndef WICK_TESTS_OP_SWEEP_GEN_LINALG_H
#define WICK_TESTS_OP_SWEEP_GEN_LINALG_H

/* t with n * I added to its matrices (well conditioned, invertible). */
static wk_tensor *plus_eye(sw_case *c, wk_tensor *t, int64_t n, double scale) {
  if (!t) return NULL;
  wk_tensor *i = wk_eye(n, n, (wk_options){.dtype = wk_tensor_dtype(t)});
  (void)c;
  return i ? CALL1("add", WK_VT(t), WK_VT(i), WK_VF(scale)) : NULL;
}
/* Random [batch..., n, n] (batch: 0 or 1 dims), EMPTY: n = 0. */
static int sq_shape(sw_case *c, int64_t *s, int64_t *n) {
  int nd = 2;
  if (runif(c) < 0.5) s[0] = rpick(c, 1, 3), nd = 3;
  *n = c->mode == SW_EMPTY ? 0 : rpick(c, 1, 4);
  if (c->grad && *n < 2) *n = 2;
  s[nd - 2] = s[nd - 1] = *n;
  return nd;
}
/* Symmetric positive-definite: X X^T + n I. */
static wk_tensor *spd_t(sw_case *c, const int64_t *s, int nd, int64_t n) {
  wk_tensor *x = rt(c, c->dt, s, nd, -1, 1);
  wk_tensor *xt = x ? CALL1("transpose", WK_VT(x), WK_VI(-2), WK_VI(-1)) : NULL;
  wk_tensor *p = xt ? CALL1("matmul", WK_VT(x), WK_VT(xt)) : NULL;
  return plus_eye(c, p, n, (double)n + 1);
}

/* ---- decompositions and solvers (float32/float64) ---- */
static bool g_cholesky(sw_case *c) {
  int64_t s[3], n;
  int nd = sq_shape(c, s, &n);
  at(c, spd_t(c, s, nd, n));
  ab(c, runif(c) < 0.5);
  return true;
}
static bool g_eigh(sw_case *c) {
  int64_t s[3], n;
  int nd = sq_shape(c, s, &n);
  wk_tensor *x = rt(c, c->dt, s, nd, -1, 1);
  wk_tensor *xt = x ? CALL1("transpose", WK_VT(x), WK_VI(-2), WK_VI(-1)) : NULL;
  at(c, xt ? CALL1("add", WK_VT(x), WK_VT(xt), WK_VI(1)) : NULL); /* symmetric */
  astr(c, runif(c) < 0.5 ? "L" : "U");
  return true;
}
/* [batch..., m, n] of any shape (gradcheck: m, n >= 2). */
static int mat_shape(sw_case *c, int64_t *s) {
  int nd = 2;
  if (runif(c) < 0.4) s[0] = rpick(c, 1, 2), nd = 3;
  s[nd - 2] = rpick(c, c->grad ? 2 : 1, 4), s[nd - 1] = rpick(c, c->grad ? 2 : 1, 4);
  if (c->mode == SW_EMPTY) s[nd - 1 - rpick(c, 0, 1)] = 0;
  return nd;
}
static bool g_qr(sw_case *c) {
  int64_t s[3];
  int nd = mat_shape(c, s);
  at(c, rt(c, c->dt, s, nd, -1, 1));
  static const char *modes[] = {"reduced", "complete", "r"};
  astr(c, c->grad ? "reduced" : modes[rpick(c, 0, 2)]);
  return true;
}
static bool g_svd(sw_case *c) {
  int64_t s[3];
  int nd = mat_shape(c, s);
  at(c, rt(c, c->dt, s, nd, -1, 1));
  ab(c, !c->grad && runif(c) < 0.5); /* full U and Vh are not unique: gradcheck the reduced ones */
  anone(c);
  c->grad_out = c->grad ? (int)rpick(c, 0, 2) : 0;
  return true;
}
static bool g_solve(sw_case *c) {
  int64_t s[3], n;
  int nd = sq_shape(c, s, &n);
  at(c, plus_eye(c, rt(c, c->dt, s, nd, -1, 1), n, (double)n + 1));
  bool left = runif(c) < 0.6, vec = left && runif(c) < 0.3;
  int64_t b[3], k = rpick(c, 1, 3);
  int bn;
  if (vec) {
    b[0] = n, bn = 1;
  } else if (c->mode == SW_BCAST || nd == 2) {
    b[0] = nd == 2 ? rpick(c, 1, 2) : 1, b[1] = left ? n : k, b[2] = left ? k : n, bn = 3; /* batch broadcast */
  } else {
    b[0] = s[0], b[1] = left ? n : k, b[2] = left ? k : n, bn = 3;
  }
  at(c, rt(c, c->dt, b, bn, -1, 1));
  ab(c, left);
  return true;
}
static bool g_square_one(sw_case *c) { /* linalg_slogdet, linalg_inv, linalg_det */
  int64_t s[3], n;
  int nd = sq_shape(c, s, &n);
  at(c, plus_eye(c, rt(c, c->dt, s, nd, -1, 1), n, runif(c) < 0.5 ? 2.0 : -2.0));
  if (is_op(c, "linalg_slogdet")) c->grad_out = 1; /* the sign has no gradient */
  return true;
}
static bool g_pinv(sw_case *c) {
  int64_t s[3];
  int nd = mat_shape(c, s);
  bool herm = !c->grad && runif(c) < 0.3;
  if (herm) s[nd - 1] = s[nd - 2];
  wk_tensor *x = rt(c, c->dt, s, nd, -1, 1);
  if (herm && x) {
    wk_tensor *xt = CALL1("transpose", WK_VT(x), WK_VI(-2), WK_VI(-1));
    x = xt ? CALL1("add", WK_VT(x), WK_VT(xt), WK_VI(1)) : NULL;
  }
  at(c, x);
  if (runif(c) < 0.3) af(c, 1e-3); else anone(c);
  anone(c);
  ab(c, herm);
  return true;
}
static bool g_lstsq(sw_case *c) {
  int64_t a[3], b[3];
  int nd = 2;
  if (runif(c) < 0.4) a[0] = b[0] = rpick(c, 1, 2), nd = 3;
  int64_t n = rpick(c, 1, 3), m = n + rpick(c, 0, 2);
  a[nd - 2] = m, a[nd - 1] = n;
  bool vec = runif(c) < 0.3;
  b[nd - 2] = m, b[nd - 1] = rpick(c, 1, 3);
  at(c, rt(c, c->dt, a, nd, -1, 1));
  at(c, rt(c, c->dt, b, vec ? nd - 1 : nd, -1, 1));
  anone(c);
  anone(c);
  return true;
}
/* A non-square matrix; an integer matrix; (solve, lstsq) mismatched B. */
static bool e_linalg_a(sw_case *c, int k) {
  int64_t s23[2] = {2, 3}, s22[2] = {2, 2}, s32[2] = {3, 2}, s4[1] = {4};
  bool square = is_op(c, "linalg_cholesky") || is_op(c, "linalg_eigh") || is_op(c, "linalg_solve") ||
                is_op(c, "linalg_slogdet") || is_op(c, "linalg_inv") || is_op(c, "linalg_det");
  bool two = is_op(c, "linalg_solve") || is_op(c, "linalg_lstsq");
  if (k > 2 || (k == 0 && !square) || (k == 2 && !two)) return false;
  at(c, k == 0 ? rt(c, WK_F32, s23, 2, -1, 1) : k == 1 ? rt(c, WK_I64, s22, 2, -1, 1) : rt(c, WK_F32, s22, 2, -1, 1));
  if (two) at(c, k == 2 ? rt(c, WK_F32, is_op(c, "linalg_solve") ? s32 : s4, is_op(c, "linalg_solve") ? 2 : 1, -1, 1)
                      : rt(c, k == 1 ? WK_I64 : WK_F32, s22, 2, -1, 1));
  if (is_op(c, "linalg_cholesky")) ab(c, false);
  if (is_op(c, "linalg_qr")) astr(c, "reduced");
  if (is_op(c, "linalg_eigh")) astr(c, "L");
  if (is_op(c, "linalg_svd")) ab(c, false), anone(c);
  if (is_op(c, "linalg_solve")) ab(c, true);
  if (is_op(c, "linalg_pinv")) anone(c), anone(c), ab(c, false);
  if (is_op(c, "linalg_lstsq")) anone(c), anone(c);
  return true;
}

/* ---- norms ---- */
static bool g_vector_norm(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  wk_tensor *x = rself(c, s, nd);
  if (!c->grad) add_specials(c, x);
  at(c, x);
  static const double ords[] = {2, 1, INFINITY, -INFINITY, 0, 3, -1, 0.5};
  double o = ords[rpick(c, 0, c->grad ? 5 : 7)];
  if (c->grad && o <= 0) o = 2;
  bool empty = numel_of(s, nd) == 0;
  if (empty && (o < 0 || isinf(o))) o = 2; /* no identity for max/min over nothing */
  af(c, o);
  if (nd > 0 && runif(c) < 0.6) {
    int64_t d = rpick(c, 0, nd - 1);
    aints(c, &d, 1);
  } else {
    anone(c);
  }
  ab(c, runif(c) < 0.5);
  anone(c);
  return true;
}
static bool e_vector_norm(sw_case *c, int k) { /* an integer input; a dim out of range */
  int64_t s[2] = {2, 3}, d = 4;
  if (k > 1) return false;
  at(c, rt(c, k == 0 ? WK_I64 : WK_F32, s, 2, -1, 1));
  af(c, 2);
  if (k == 1) aints(c, &d, 1); else anone(c);
  ab(c, false);
  anone(c);
  return true;
}
static bool g_matrix_norm(sw_case *c) {
  int64_t s[3];
  int nd = mat_shape(c, s);
  bool str = is_op_full(c, "linalg_matrix_norm.str_ord");
  bool empty = numel_of(s, nd) == 0;
  at(c, rself(c, s, nd));
  if (str) {
    astr(c, empty || runif(c) < 0.5 ? "fro" : "nuc");
  } else {
    if (empty) return false; /* only 'fro' is defined on empty matrices */
    static const double ords[] = {1, -1, INFINITY, -INFINITY, 2, -2};
    af(c, ords[rpick(c, 0, c->grad ? 4 : 5)]);
  }
  if (nd == 3 && runif(c) < 0.5)
    AINTS(c, 2, 0);
  else
    AINTS(c, -2, -1);
  ab(c, runif(c) < 0.5);
  anone(c);
  return true;
}
static bool e_matrix_norm(sw_case *c, int k) { /* a vector; an unknown order */
  int64_t s3[1] = {3}, s23[2] = {2, 3};
  bool str = is_op_full(c, "linalg_matrix_norm.str_ord");
  if (k > 1) return false;
  at(c, rt(c, WK_F32, k == 0 ? s3 : s23, k == 0 ? 1 : 2, -1, 1));
  if (str) astr(c, k == 1 ? "bad" : "fro"); else af(c, k == 1 ? 3 : 2);
  AINTS(c, -2, -1);
  ab(c, false);
  anone(c);
  return true;
}

/* ---- einsum, baddbmm, addbmm, tensordot, kron ---- */
static bool g_einsum(sw_case *c) {
  static const struct { const char *eq; int n; int64_t s[3][3]; int nd[3]; } E[] = {
      {"ij,jk->ik", 2, {{2, 3}, {3, 4}}, {2, 2}},          {"bij,bjk->bik", 2, {{2, 2, 3}, {2, 3, 2}}, {3, 3}},
      {"ii->i", 1, {{3, 3}}, {2}},                          {"ij->ji", 1, {{2, 3}}, {2}},
      {"i,j->ij", 2, {{3}, {2}}, {1, 1}},                   {"...ij,jk->...ik", 2, {{2, 2, 3}, {3, 2}}, {3, 2}},
      {"bn,anm,bm->ba", 3, {{2, 3}, {2, 3, 2}, {2, 2}}, {2, 3, 2}}, {"ij,ij->", 2, {{2, 3}, {1, 3}}, {2, 2}}};
  int e = (int)rpick(c, 0, (int)(sizeof E / sizeof E[0]) - 1);
  if (c->mode == SW_EMPTY) e = runif(c) < 0.5 ? 3 : 4; /* a label of size 0 that no other operand shares */
  wk_tensor *ts[3];
  for (int i = 0; i < E[e].n; i++) {
    int64_t s[3];
    memcpy(s, E[e].s[i], sizeof s);
    if (c->mode == SW_EMPTY && i == 0) s[0] = 0;
    ts[i] = rself(c, s, E[e].nd[i]);
  }
  astr(c, E[e].eq);
  alist(c, ts, E[e].n);
  anone(c);
  return true;
}
static bool e_einsum(sw_case *c, int k) { /* mismatched sizes; a bad subscript; too few subscripts */
  int64_t s23[2] = {2, 3};
  if (k > 2) return false;
  wk_tensor *ts[2] = {rt(c, WK_F32, s23, 2, -1, 1), rt(c, WK_F32, s23, 2, -1, 1)};
  astr(c, k == 0 ? "ij,jk" : k == 1 ? "i1" : "i");
  alist(c, ts, k == 0 ? 2 : 1);
  anone(c);
  return true;
}
static bool g_baddbmm(sw_case *c) {
  int64_t n, k, m, bt = rpick(c, 1, 3);
  mnk(c, &n, &k, &m);
  bool b = is_op(c, "baddbmm");
  int64_t a[3] = {bt, n, k}, bb[3] = {bt, k, m}, o[3] = {bt, n, m};
  if (c->mode == SW_BCAST)
    at(c, rself(c, o + 2, 1));
  else
    at(c, rself(c, b ? o : o + 1, b ? 3 : 2));
  at(c, rself(c, a, 3));
  at(c, rself(c, bb, 3));
  ascalar(c, wk_dtype_is_floating(c->dt) ? 0.5 : 2);
  ascalar(c, runif(c) < 0.5 ? 1 : 2);
  return true;
}
static bool e_baddbmm(sw_case *c, int k) { /* a 2-d batch1; mismatched inner sizes */
  int64_t s23[2] = {2, 3}, a[3] = {2, 3, 4}, b[3] = {2, 5, 2}, o[3] = {2, 3, 2};
  if (k > 1) return false;
  at(c, rt(c, WK_F32, is_op(c, "baddbmm") ? o : o + 1, is_op(c, "baddbmm") ? 3 : 2, -1, 1));
  at(c, k == 0 ? rt(c, WK_F32, s23, 2, -1, 1) : rt(c, WK_F32, a, 3, -1, 1));
  at(c, rt(c, WK_F32, b, 3, -1, 1));
  af(c, 1);
  af(c, 1);
  return true;
}
static bool g_tensordot(sw_case *c) {
  int64_t a[3] = {rpick(c, 1, 3), rpick(c, 1, 3), rpick(c, 1, 3)}, b[3] = {0, 0, rpick(c, 1, 3)};
  if (c->mode == SW_EMPTY) a[0] = 0;
  int nc = (int)rpick(c, 0, 2);
  int64_t da[2] = {1, 2}, db[2] = {1, 0};
  b[1] = a[1];
  b[0] = nc == 2 ? a[2] : rpick(c, 1, 3);
  if (nc == 1) db[0] = 1, da[0] = 1;
  at(c, rself(c, a, 3));
  at(c, rself(c, b, 3));
  aints(c, da, nc);
  aints(c, db, nc);
  return true;
}
static bool e_tensordot(sw_case *c, int k) { /* lists of different lengths; sizes that differ */
  int64_t s23[2] = {2, 3}, d1[1] = {1}, d2[2] = {0, 1};
  if (k > 1) return false;
  at(c, rt(c, WK_F32, s23, 2, -1, 1));
  at(c, rt(c, WK_F32, s23, 2, -1, 1));
  aints(c, d1, 1);
  if (k == 0) aints(c, d2, 2); else aints(c, (const int64_t[]){0}, 1);
  return true;
}
static bool g_kron(sw_case *c) {
  int64_t a[WK_MAX_DIMS], b[WK_MAX_DIMS];
  int an = rshape(c, a, 0, 3), bn = (int)rpick(c, 0, 3);
  for (int d = 0; d < bn; d++) b[d] = rpick(c, 1, 3);
  at(c, rself(c, a, an));
  at(c, rself(c, b, bn));
  return true;
}
static bool e_kron(sw_case *c, int k) { /* dtypes that differ */
  int64_t s2[1] = {2};
  if (k > 0) return false;
  at(c, rt(c, WK_F32, s2, 1, -1, 1));
  at(c, rt(c, WK_I64, s2, 1, -1, 1));
  return true;
}

/* ---- mode, unique, unique_consecutive, scatter_reduce, index_put, masked_scatter ---- */
static bool g_mode(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3), d = nd ? (int)rpick(c, 0, nd - 1) : 0;
  if (nd && s[d] == 0) return false;
  /* gradcheck: distinct values (the mode is then the line's minimum); else small integers, with ties */
  at(c, c->grad ? rt_distinct(c, c->dt, s, nd, -2, 2) : rt(c, c->dt, s, nd, 0, c->dt == WK_BOOL ? 2 : 3));
  ai(c, d - (nd && runif(c) < 0.5 ? nd : 0));
  ab(c, runif(c) < 0.5);
  return true;
}
static bool e_mode(sw_case *c, int k) { /* an empty reduced dim; a dim out of range */
  int64_t s[2] = {2, 0};
  if (k > 1) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  ai(c, k == 0 ? 1 : 3);
  ab(c, false);
  return true;
}
static bool g_unique(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  bool consec = is_op(c, "unique_consecutive");
  int nd = rshape(c, s, 0, 3);
  at(c, rt(c, c->dt, s, nd, 0, c->dt == WK_BOOL ? 2 : 3)); /* few distinct values */
  if (!consec) ab(c, true);
  ab(c, runif(c) < 0.5);
  ab(c, runif(c) < 0.5);
  int64_t n = numel_of(s, nd);
  if (nd > 0 && runif(c) < 0.4) {
    int d = (int)rpick(c, 0, nd - 1);
    if (n == 0 && s[d] != 0) return false; /* PyTorch refuses (several zero-sized dims) */
    ai(c, d);
  } else {
    anone(c);
  }
  return true;
}
static bool e_unique(sw_case *c, int k) { /* a dim out of range */
  int64_t s[2] = {2, 3};
  if (k > 0) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  if (!is_op(c, "unique_consecutive")) ab(c, true);
  ab(c, false);
  ab(c, false);
  ai(c, 2);
  return true;
}
/* An index of shape is[] with values in [0, size). */
static wk_tensor *sw_rindex(sw_case *c, const int64_t *is, int nd, int64_t size) {
  return size > 0 ? rt(c, WK_I64, is, nd, 0, (double)size) : rt(c, WK_I64, is, nd, 0, 0);
}
static bool g_scatter_reduce(sw_case *c) {
  int64_t s[WK_MAX_DIMS], is[WK_MAX_DIMS];
  int nd = rshape(c, s, 1, 3), d = (int)rpick(c, 0, nd - 1);
  for (int i = 0; i < nd; i++) is[i] = s[i] ? rpick(c, i == d ? 1 : 1, i == d ? 4 : s[i]) : 0;
  if (s[d] == 0) is[d] = 0;
  static const char *reds[] = {"sum", "prod", "mean", "amax", "amin"};
  const char *red = reds[rpick(c, 0, 4)];
  at(c, strcmp(red, "prod") ? rself(c, s, nd) : rt(c, c->dt, s, nd, 0.5, 1.5));
  ai(c, d);
  at_frozen(c, sw_rindex(c, is, nd, s[d]));
  at(c, strcmp(red, "prod") ? rself(c, is, nd) : rt(c, c->dt, is, nd, 0.5, 1.5)); /* src of index's shape */
  astr(c, red);
  ab(c, runif(c) < 0.5);
  return true;
}
/* An unknown reduction; a float index. (An index out of range is data, which `meta` cannot see: it is checked in
 * check_linalg_surface.) */
static bool e_scatter_reduce(sw_case *c, int k) {
  int64_t s[2] = {2, 3};
  if (k > 1) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  ai(c, 1);
  at(c, k == 1 ? rt(c, WK_F32, s, 2, 0, 2) : rt(c, WK_I64, s, 2, 0, 2));
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  astr(c, k == 0 ? "max" : "sum");
  ab(c, true);
  return true;
}
/* index_put: the first ni dims indexed, each by a [cnt] long index (distinct positions unless accumulating, where
 * duplicates add; EMPTY: cnt 0); values of the indexing result's shape [cnt, other dims...]. No None (slice)
 * entries: the harness's strided copies cannot hold a None list element (check_linalg_surface covers slices). */
static bool g_index_put(sw_case *c) {
  int64_t s[WK_MAX_DIMS], vs[WK_MAX_DIMS];
  int nd = rshape(c, s, 1, 3);
  bool acc = runif(c) < 0.5;
  int ni = (int)rpick(c, 1, nd), vn = 0;
  int64_t cnt = c->mode == SW_EMPTY ? 0 : acc ? rpick(c, 1, 3) : 1;
  for (int d = 0; d < ni; d++)
    if (s[d] == 0) cnt = 0; /* an empty dim takes only an empty index */
  at(c, rself(c, s, nd));
  for (int d = 0; d < ni; d++) c->lists[c->n][d] = sw_rindex(c, &cnt, 1, s[d]);
  c->a[c->n] = WK_VTS(c->lists[c->n], ni);
  c->frozen[c->n] = true;
  c->n++;
  vs[vn++] = cnt;
  for (int d = ni; d < nd; d++) vs[vn++] = s[d];
  at(c, rself(c, vs, vn));
  ab(c, acc);
  return true;
}
static bool e_index_put(sw_case *c, int k) {
  int64_t s[2] = {2, 3}, i1[1] = {1};
  if (k > 2) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  wk_tensor *ix = rt(c, k == 0 ? WK_F32 : WK_I64, i1, 1, 0, 1);
  c->lists[c->n][0] = ix, c->lists[c->n][1] = ix, c->lists[c->n][2] = ix;
  c->a[c->n] = WK_VTS(c->lists[c->n], k == 2 ? 3 : 1);
  c->n++;
  at(c, rt(c, k == 1 ? WK_F64 : WK_F32, s + 1, 1, -1, 1));
  ab(c, false);
  return true;
}
static bool g_masked_scatter(sw_case *c) {
  int64_t s[WK_MAX_DIMS], m[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  int mn = c->mode == SW_BCAST ? bshape(c, s, nd, m) : nd;
  if (c->mode != SW_BCAST) memcpy(m, s, sizeof(int64_t) * (size_t)nd);
  at(c, rself(c, s, nd));
  at_frozen(c, rt(c, WK_BOOL, m, mn, 0, 1));
  int64_t ns[1] = {numel_of(s, nd) + rpick(c, 0, 2)};
  at(c, rself(c, ns, 1));
  return true;
}
/* A float mask; source of another dtype. (Too short a source is data: check_linalg_surface.) */
static bool e_masked_scatter(sw_case *c, int k) {
  int64_t s[2] = {2, 3}, n6[1] = {6};
  if (k > 1) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  at(c, k == 0 ? rt(c, WK_F32, s, 2, 0, 1) : wk_ones(s, 2, (wk_options){.dtype = WK_BOOL}));
  at(c, rt(c, k == 1 ? WK_F64 : WK_F32, n6, 1, -1, 1));
  return true;
}

#endif
