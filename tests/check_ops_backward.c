/* check_ops_backward: the backward helper ops (conv2d_backward, the pooling
 * backwards, batch_norm_backward, layer_norm_backward, embedding_dense_backward,
 * (log_)softmax_backward_data, pad_backward) on the cpu against central finite
 * differences of their forward ops in float64: random shapes, strides,
 * padding, dilation, groups, pooling modes, train/eval, affine or not; plus
 * f32/f16/bf16 agreement, output_mask, thread-count independence, errors and
 * leaks. */
#include "testutil.h"

#define LEAK_START int64_t live0_ = wk_live_tensors()
#define LEAK_END ck_assert_int_eq(wk_live_tensors(), live0_)

/* Finite differences: step and tolerances for float64. */
#define FD_H 1e-6
#define FD_RTOL 1e-5
#define FD_ATOL 1e-6

/* ---- helpers --------------------------------------------------------------------------- */

/* n random doubles in [-1, 1) from seed (malloc'd). */
static double *rand_vals(int64_t n, uint64_t seed) {
  double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 12345;
  for (int64_t i = 0; i < n; i++) v[i] = 2 * tu_uniform(&s) - 1;
  return v;
}

/* A contiguous f64 tensor of the given shape with random values. */
static wk_tensor *rand64(const int64_t *sizes, int nd, uint64_t seed) {
  return tu_rand(sizes, nd, WK_F64, -1, 1, seed);
}

/* A tensor of t's shape holding random values g (returned through *g, malloc'd). */
static wk_tensor *rand_like_vals(wk_tensor *t, uint64_t seed, double **g) {
  int64_t n = wk_tensor_numel(t);
  *g = rand_vals(n, seed);
  return tu_tensor(*g, WK_F64, wk_tensor_sizes(t), wk_tensor_dim(t));
}

/* The forward under test, as a function of the tensors in ctx: a new reference. */
typedef wk_tensor *(*fwd_fn)(void *ctx);

/* sum(f(ctx) * G). */
static double fd_loss(fwd_fn f, void *ctx, const double *G) {
  wk_tensor *y = f(ctx);
  ck_assert_msg(y != NULL, "forward failed: %s", wk_last_error_message());
  int64_t n = wk_tensor_numel(y);
  double *v = tu_values(y), s = 0;
  for (int64_t i = 0; i < n; i++) s += v[i] * G[i];
  free(v);
  wk_release(y);
  return s;
}

/* Central differences of sum(f(ctx) * G) with respect to every element of p,
 * a contiguous f64 tensor that f reads (malloc'd). */
static double *fd_grad(fwd_fn f, void *ctx, wk_tensor *p, const double *G) {
  ck_assert(wk_tensor_dtype(p) == WK_F64 && wk_tensor_is_contiguous(p));
  int64_t n = wk_tensor_numel(p);
  double *d = wk_tensor_data(p), *out = malloc(sizeof(double) * (size_t)(n ? n : 1));
  for (int64_t i = 0; i < n; i++) {
    double v = d[i];
    d[i] = v + FD_H;
    double lp = fd_loss(f, ctx, G);
    d[i] = v - FD_H;
    double lm = fd_loss(f, ctx, G);
    d[i] = v;
    out[i] = (lp - lm) / (2 * FD_H);
  }
  return out;
}

/* Asserts gradient t matches the finite differences of f in p. */
#define CHECK_FD(t, f, ctx, p, G)                            \
  do {                                                       \
    double *ref_ = fd_grad(f, ctx, p, G);                    \
    TU_CLOSE(t, ref_, wk_tensor_numel(p), FD_RTOL, FD_ATOL); \
    free(ref_);                                              \
  } while (0)

/* Asserts a and b hold the same values within rtol/atol. */
static void assert_close_t(wk_tensor *a, wk_tensor *b, double rtol, double atol, int line) {
  ck_assert_msg(a && b, "line %d: NULL tensor: %s", line, wk_last_error_message());
  double *ref = tu_values(b);
  tu_assert_close_(a, ref, wk_tensor_numel(b), rtol, atol, "result", line);
  free(ref);
}
#define CLOSE_T(a, b, rtol, atol) assert_close_t(a, b, rtol, atol, __LINE__)

/* Asserts a and b are bitwise equal (same dtype and shape). */
static void assert_same_bits(wk_tensor *a, wk_tensor *b) {
  ck_assert(a && b);
  ck_assert(wk_tensor_dtype(a) == wk_tensor_dtype(b));
  ck_assert_int_eq(wk_tensor_numel(a), wk_tensor_numel(b));
  wk_tensor *ca = wk_contiguous(a), *cb = wk_contiguous(b);
  ck_assert(memcmp(wk_tensor_data(ca), wk_tensor_data(cb),
                   (size_t)wk_tensor_numel(a) * wk_dtype_size(wk_tensor_dtype(a))) == 0);
  wk_release(ca);
  wk_release(cb);
}

static void release_outs(wk_value *o, int n) {
  for (int i = 0; i < n; i++)
    if (o[i].tag == WK_V_TENSOR) wk_release(o[i].u.t);
}

static wk_tensor *cast(wk_tensor *t, wk_dtype dt) {
  return t ? wk_to_dtype(t, dt) : NULL;
}

static bool shape_is(wk_tensor *t, const int64_t *s, int nd) {
  if (!t || wk_tensor_dim(t) != nd) return false;
  for (int i = 0; i < nd; i++)
    if (wk_tensor_size(t, i) != s[i]) return false;
  return true;
}

/* ---- op callers ------------------------------------------------------------------------ */

typedef struct {
  int64_t sh, sw, ph, pw, dh, dw, groups;
} conv_par;

static wk_tensor *conv_fwd(wk_tensor *x, wk_tensor *w, wk_tensor *b, const conv_par *c) {
  int64_t st[2] = {c->sh, c->sw}, pd[2] = {c->ph, c->pw}, dl[2] = {c->dh, c->dw};
  wk_value a[7] = {WK_VT(x), WK_VT(w), WK_VT(b), WK_VINTS(st, 2), WK_VINTS(pd, 2), WK_VINTS(dl, 2), WK_VI(c->groups)};
  wk_value out[WK_MAX_OUTS];
  if (wk_call("conv2d", a, 7, out) != WK_OK) return NULL;
  return out[0].u.t;
}

static wk_status conv_bwd(wk_tensor *go, wk_tensor *x, wk_tensor *w, const conv_par *c, const int64_t mask[3],
                          wk_value out[3]) {
  int64_t st[2] = {c->sh, c->sw}, pd[2] = {c->ph, c->pw}, dl[2] = {c->dh, c->dw};
  wk_value a[8] = {WK_VT(go),       WK_VT(x),        WK_VT(w),         WK_VINTS(st, 2),
                   WK_VINTS(pd, 2), WK_VINTS(dl, 2), WK_VI(c->groups), WK_VINTS(mask, 3)};
  return wk_call("conv2d_backward", a, 8, out);
}

typedef struct {
  int64_t kh, kw, sh, sw, ph, pw, dh, dw; /* sh == 0: stride = [] (the kernel size) */
  bool ceil_mode, include_pad;
  int64_t divisor; /* 0: None */
} pool_par;

static wk_tensor *maxpool_fwd(wk_tensor *x, const pool_par *p, wk_tensor **ind) {
  int64_t k[2] = {p->kh, p->kw}, st[2] = {p->sh, p->sw}, pd[2] = {p->ph, p->pw}, dl[2] = {p->dh, p->dw};
  wk_value a[6] = {WK_VT(x),        WK_VINTS(k, 2),  WK_VINTS(st, p->sh ? 2 : 0),
                   WK_VINTS(pd, 2), WK_VINTS(dl, 2), WK_VB(p->ceil_mode)};
  wk_value out[WK_MAX_OUTS];
  if (ind) *ind = NULL;
  if (wk_call("max_pool2d_with_indices", a, 6, out) != WK_OK) return NULL;
  if (ind)
    *ind = out[1].u.t;
  else
    wk_release(out[1].u.t);
  return out[0].u.t;
}

static wk_tensor *maxpool_bwd(wk_tensor *go, wk_tensor *x, const pool_par *p, wk_tensor *ind) {
  int64_t k[2] = {p->kh, p->kw}, st[2] = {p->sh, p->sw}, pd[2] = {p->ph, p->pw}, dl[2] = {p->dh, p->dw};
  wk_value a[8] = {WK_VT(go),       WK_VT(x),        WK_VINTS(k, 2),      WK_VINTS(st, p->sh ? 2 : 0),
                   WK_VINTS(pd, 2), WK_VINTS(dl, 2), WK_VB(p->ceil_mode), WK_VT(ind)};
  wk_value out[WK_MAX_OUTS];
  if (wk_call("max_pool2d_with_indices_backward", a, 8, out) != WK_OK) return NULL;
  return out[0].u.t;
}

static wk_tensor *avgpool_fwd(wk_tensor *x, const pool_par *p) {
  int64_t k[2] = {p->kh, p->kw}, st[2] = {p->sh, p->sw}, pd[2] = {p->ph, p->pw};
  wk_value a[7] = {WK_VT(x),
                   WK_VINTS(k, 2),
                   WK_VINTS(st, p->sh ? 2 : 0),
                   WK_VINTS(pd, 2),
                   WK_VB(p->ceil_mode),
                   WK_VB(p->include_pad),
                   p->divisor ? WK_VI(p->divisor) : WK_VNONE};
  wk_value out[WK_MAX_OUTS];
  if (wk_call("avg_pool2d", a, 7, out) != WK_OK) return NULL;
  return out[0].u.t;
}

static wk_tensor *avgpool_bwd(wk_tensor *go, wk_tensor *x, const pool_par *p) {
  int64_t k[2] = {p->kh, p->kw}, st[2] = {p->sh, p->sw}, pd[2] = {p->ph, p->pw};
  wk_value a[8] = {WK_VT(go),
                   WK_VT(x),
                   WK_VINTS(k, 2),
                   WK_VINTS(st, p->sh ? 2 : 0),
                   WK_VINTS(pd, 2),
                   WK_VB(p->ceil_mode),
                   WK_VB(p->include_pad),
                   p->divisor ? WK_VI(p->divisor) : WK_VNONE};
  wk_value out[WK_MAX_OUTS];
  if (wk_call("avg_pool2d_backward", a, 8, out) != WK_OK) return NULL;
  return out[0].u.t;
}

static wk_tensor *adaptive_bwd(wk_tensor *go, wk_tensor *x) {
  wk_value a[2] = {WK_VT(go), WK_VT(x)}, out[WK_MAX_OUTS];
  if (wk_call("adaptive_avg_pool2d_backward", a, 2, out) != WK_OK) return NULL;
  return out[0].u.t;
}

static wk_tensor *softmax_bwd(bool log, wk_tensor *go, wk_tensor *y, int64_t dim, wk_dtype idt) {
  wk_value a[4] = {WK_VT(go), WK_VT(y), WK_VI(dim), WK_VDT(idt)}, out[WK_MAX_OUTS];
  if (wk_call(log ? "log_softmax_backward_data" : "softmax_backward_data", a, 4, out) != WK_OK) return NULL;
  return out[0].u.t;
}

/* batch_norm forward: all three results into out[3]. */
static wk_status bn_fwd(wk_tensor *x, wk_tensor *w, wk_tensor *b, wk_tensor *rm, wk_tensor *rv, bool train,
                        wk_value out[3]) {
  wk_value a[8] = {WK_VT(x), WK_VT(w), WK_VT(b), WK_VT(rm), WK_VT(rv), WK_VB(train), WK_VF(0.1), WK_VF(1e-5)};
  return wk_call("batch_norm", a, 8, out);
}

static wk_status bn_bwd(wk_tensor *go, wk_tensor *x, wk_tensor *w, wk_tensor *rm, wk_tensor *rv, wk_tensor *sm,
                        wk_tensor *si, bool train, const int64_t mask[3], wk_value out[3]) {
  wk_value a[10] = {WK_VT(go), WK_VT(x),  WK_VT(w),     WK_VT(rm),   WK_VT(rv),
                    WK_VT(sm), WK_VT(si), WK_VB(train), WK_VF(1e-5), WK_VINTS(mask, 3)};
  return wk_call("batch_norm_backward", a, 10, out);
}

static wk_status ln_fwd(wk_tensor *x, const int64_t *ns, int k, wk_tensor *w, wk_tensor *b, wk_value out[3]) {
  wk_value a[5] = {WK_VT(x), WK_VINTS(ns, k), WK_VT(w), WK_VT(b), WK_VF(1e-5)};
  return wk_call("layer_norm", a, 5, out);
}

static wk_status ln_bwd(wk_tensor *go, wk_tensor *x, const int64_t *ns, int k, wk_tensor *mean, wk_tensor *rstd,
                        wk_tensor *w, wk_tensor *b, const int64_t mask[3], wk_value out[3]) {
  wk_value a[8] = {WK_VT(go),   WK_VT(x), WK_VINTS(ns, k), WK_VT(mean),
                   WK_VT(rstd), WK_VT(w), WK_VT(b),        WK_VINTS(mask, 3)};
  return wk_call("layer_norm_backward", a, 8, out);
}

static wk_tensor *emb_bwd(wk_tensor *go, wk_tensor *idx, int64_t nw, int64_t pidx) {
  wk_value a[4] = {WK_VT(go), WK_VT(idx), WK_VI(nw), WK_VI(pidx)}, out[WK_MAX_OUTS];
  if (wk_call("embedding_dense_backward", a, 4, out) != WK_OK) return NULL;
  return out[0].u.t;
}

static wk_tensor *pad_bwd(wk_tensor *go, wk_tensor *x, const int64_t *pad, int npad, const char *mode) {
  wk_value a[4] = {WK_VT(go), WK_VT(x), WK_VINTS(pad, npad), WK_VS(mode)}, out[WK_MAX_OUTS];
  if (wk_call("pad_backward", a, 4, out) != WK_OK) return NULL;
  return out[0].u.t;
}

static const int64_t ALL3[3] = {1, 1, 1};

/* ---- conv2d_backward ---------------------------------------------------------------------- */

typedef struct {
  int64_t N, C, H, W, O, kh, kw; /* N == 0: unbatched */
  conv_par p;
} conv_case;

static const conv_case conv_cases[] = {
    {2, 3, 6, 7, 4, 3, 3, {1, 1, 0, 0, 1, 1, 1}}, {2, 4, 7, 6, 6, 3, 2, {2, 1, 1, 2, 1, 1, 2}},
    {1, 2, 8, 8, 2, 3, 3, {2, 3, 1, 0, 2, 1, 1}}, {0, 3, 5, 6, 3, 2, 3, {1, 2, 1, 1, 1, 2, 3}},
    {3, 2, 5, 5, 4, 1, 1, {1, 1, 0, 0, 1, 1, 2}}, {2, 6, 9, 5, 4, 3, 3, {3, 2, 2, 1, 1, 1, 2}},
    {0, 2, 4, 9, 3, 2, 2, {1, 1, 0, 3, 1, 3, 1}},
};

typedef struct {
  wk_tensor *x, *w, *b;
  const conv_par *p;
} conv_ctx;

static wk_tensor *conv_f(void *c) {
  conv_ctx *k = c;
  return conv_fwd(k->x, k->w, k->b, k->p);
}

/* Shapes of a case: x (nd 3 or 4), w. */
static int conv_shapes(const conv_case *c, int64_t xs[4], int64_t ws[4]) {
  int nd = c->N ? 4 : 3, o = 0;
  if (c->N) xs[o++] = c->N;
  xs[o++] = c->C;
  xs[o++] = c->H;
  xs[o++] = c->W;
  ws[0] = c->O;
  ws[1] = c->C / c->p.groups;
  ws[2] = c->kh;
  ws[3] = c->kw;
  return nd;
}

START_TEST(test_backward_conv2d_finite_differences) {
  LEAK_START;
  for (size_t ci = 0; ci < sizeof conv_cases / sizeof conv_cases[0]; ci++) {
    const conv_case *c = &conv_cases[ci];
    int64_t xs[4], ws[4], O = c->O;
    int nd = conv_shapes(c, xs, ws);
    wk_tensor *x = rand64(xs, nd, 10 + ci), *w = rand64(ws, 4, 20 + ci), *b = rand64(&O, 1, 30 + ci);
    conv_ctx k = {x, w, b, &c->p};
    wk_tensor *y = conv_f(&k);
    TU_NOTNULL(y);
    double *G;
    wk_tensor *go = rand_like_vals(y, 40 + ci, &G);
    /* odd cases hand the backward non-contiguous views */
    bool nc = ci % 2 == 1;
    wk_tensor *go2 = nc ? tu_noncontig(go) : wk_retain(go), *x2 = nc ? tu_noncontig(x) : wk_retain(x);
    wk_tensor *w2 = nc ? tu_noncontig(w) : wk_retain(w);
    wk_value r[3];
    TU_OK(conv_bwd(go2, x2, w2, &c->p, ALL3, r));
    ck_assert(shape_is(r[0].u.t, xs, nd));
    ck_assert(shape_is(r[1].u.t, ws, 4));
    ck_assert(shape_is(r[2].u.t, &O, 1));
    ck_assert(wk_tensor_dtype(r[0].u.t) == WK_F64);
    CHECK_FD(r[0].u.t, conv_f, &k, x, G);
    CHECK_FD(r[1].u.t, conv_f, &k, w, G);
    CHECK_FD(r[2].u.t, conv_f, &k, b, G);
    release_outs(r, 3);
    free(G);
    wk_release(go2);
    wk_release(x2);
    wk_release(w2);
    wk_release(go);
    wk_release(y);
    wk_release(x);
    wk_release(w);
    wk_release(b);
  }
  LEAK_END;
}
END_TEST

/* Many images share one GEMM chunk; a large image takes one GEMM per image:
 * both paths agree with a per-image computation. */
START_TEST(test_backward_conv2d_batch_chunks) {
  LEAK_START;
  conv_par p = {1, 1, 1, 1, 1, 1, 2};
  int64_t ws[4] = {4, 2, 3, 3};
  wk_tensor *w = rand64(ws, 4, 7);
  for (int big = 0; big < 2; big++) {
    int64_t xs[4] = {3, 4, big ? 70 : 5, big ? 64 : 6};
    wk_tensor *x = rand64(xs, 4, 8 + big);
    wk_tensor *y = conv_fwd(x, w, NULL, &p);
    double *G;
    wk_tensor *go = rand_like_vals(y, 9, &G);
    wk_value r[3];
    TU_OK(conv_bwd(go, x, w, &p, ALL3, r));
    /* per image, unbatched */
    wk_tensor *gw_sum = wk_zeros(ws, 4, (wk_options){.dtype = WK_F64});
    for (int64_t n = 0; n < xs[0]; n++) {
      wk_tensor *xn = wk_select(x, 0, n), *gn = wk_select(go, 0, n);
      wk_value q[3];
      TU_OK(conv_bwd(gn, xn, w, &p, ALL3, q));
      wk_tensor *gin = wk_select(r[0].u.t, 0, n);
      CLOSE_T(gin, q[0].u.t, 1e-12, 1e-12);
      wk_tensor *s = wk_add(gw_sum, q[1].u.t);
      wk_release(gw_sum);
      gw_sum = s;
      wk_release(gin);
      release_outs(q, 3);
      wk_release(xn);
      wk_release(gn);
    }
    CLOSE_T(r[1].u.t, gw_sum, 1e-10, 1e-10);
    wk_release(gw_sum);
    release_outs(r, 3);
    free(G);
    wk_release(go);
    wk_release(y);
    wk_release(x);
  }
  wk_release(w);
  LEAK_END;
}
END_TEST

START_TEST(test_backward_conv2d_output_mask) {
  LEAK_START;
  const conv_case *c = &conv_cases[1];
  int64_t xs[4], ws[4];
  int nd = conv_shapes(c, xs, ws);
  wk_tensor *x = rand64(xs, nd, 1), *w = rand64(ws, 4, 2);
  wk_tensor *y = conv_fwd(x, w, NULL, &c->p);
  wk_tensor *go = tu_rand(wk_tensor_sizes(y), wk_tensor_dim(y), WK_F64, -1, 1, 3);
  wk_value full[3];
  TU_OK(conv_bwd(go, x, w, &c->p, ALL3, full));
  for (int m = 0; m < 8; m++) {
    int64_t mask[3] = {m & 1, (m >> 1) & 1, (m >> 2) & 1};
    wk_value r[3];
    TU_OK(conv_bwd(go, x, w, &c->p, mask, r));
    for (int i = 0; i < 3; i++) {
      if (mask[i]) {
        ck_assert_int_eq(r[i].tag, WK_V_TENSOR);
        CLOSE_T(r[i].u.t, full[i].u.t, 0, 0);
      } else {
        ck_assert_int_eq(r[i].tag, WK_V_NONE);
      }
    }
    release_outs(r, 3);
  }
  release_outs(full, 3);
  wk_release(go);
  wk_release(y);
  wk_release(x);
  wk_release(w);
  LEAK_END;
}
END_TEST

/* f32 agrees with f64; f16 and bf16 (computed in f32) loosely; results keep
 * the input dtype. */
START_TEST(test_backward_conv2d_dtypes) {
  LEAK_START;
  const wk_dtype dts[3] = {WK_F32, WK_F16, WK_BF16};
  const double tol[3] = {1e-4, 3e-2, 1e-1};
  for (size_t ci = 0; ci < 3; ci++) {
    const conv_case *c = &conv_cases[ci * 2];
    int64_t xs[4], ws[4];
    int nd = conv_shapes(c, xs, ws);
    wk_tensor *x = rand64(xs, nd, 50 + ci), *w = rand64(ws, 4, 60 + ci);
    wk_tensor *y = conv_fwd(x, w, NULL, &c->p);
    wk_tensor *go = tu_rand(wk_tensor_sizes(y), wk_tensor_dim(y), WK_F64, -1, 1, 70 + ci);
    wk_value ref[3];
    TU_OK(conv_bwd(go, x, w, &c->p, ALL3, ref));
    for (int d = 0; d < 3; d++) {
      wk_tensor *x2 = cast(x, dts[d]), *w2 = cast(w, dts[d]), *g2 = cast(go, dts[d]);
      /* compare against f64 results from the rounded inputs */
      wk_tensor *x3 = cast(x2, WK_F64), *w3 = cast(w2, WK_F64), *g3 = cast(g2, WK_F64);
      wk_value r[3], q[3];
      TU_OK(conv_bwd(g2, x2, w2, &c->p, ALL3, r));
      TU_OK(conv_bwd(g3, x3, w3, &c->p, ALL3, q));
      for (int i = 0; i < 3; i++) {
        ck_assert(wk_tensor_dtype(r[i].u.t) == dts[d]);
        CLOSE_T(r[i].u.t, q[i].u.t, tol[d], tol[d]);
      }
      release_outs(r, 3);
      release_outs(q, 3);
      wk_release(x2);
      wk_release(w2);
      wk_release(g2);
      wk_release(x3);
      wk_release(w3);
      wk_release(g3);
    }
    release_outs(ref, 3);
    wk_release(go);
    wk_release(y);
    wk_release(x);
    wk_release(w);
  }
  LEAK_END;
}
END_TEST

/* Empty batch and empty channels give zero/empty gradients of the right shape. */
START_TEST(test_backward_conv2d_zero_size) {
  LEAK_START;
  conv_par p = {1, 1, 1, 1, 1, 1, 1};
  int64_t xs[4] = {0, 3, 5, 5}, ws[4] = {2, 3, 3, 3}, gs[4] = {0, 2, 5, 5}, O = 2;
  wk_tensor *x = rand64(xs, 4, 1), *w = rand64(ws, 4, 2), *go = rand64(gs, 4, 3);
  wk_value r[3];
  TU_OK(conv_bwd(go, x, w, &p, ALL3, r));
  ck_assert(shape_is(r[0].u.t, xs, 4));
  ck_assert(shape_is(r[1].u.t, ws, 4));
  ck_assert(shape_is(r[2].u.t, &O, 1));
  double z[54] = {0};
  TU_CLOSE(r[1].u.t, z, 54, 0, 0);
  TU_CLOSE(r[2].u.t, z, 2, 0, 0);
  release_outs(r, 3);
  wk_release(x);
  wk_release(w);
  wk_release(go);
  LEAK_END;
}
END_TEST

START_TEST(test_backward_conv2d_errors) {
  LEAK_START;
  conv_par p = {1, 1, 0, 0, 1, 1, 1};
  int64_t xs[4] = {2, 3, 5, 5}, ws[4] = {4, 3, 3, 3}, gs[4] = {2, 4, 3, 3}, bad[4] = {2, 4, 3, 4};
  wk_tensor *x = rand64(xs, 4, 1), *w = rand64(ws, 4, 2), *go = rand64(gs, 4, 3), *gb = rand64(bad, 4, 4);
  wk_value r[3];
  ck_assert_int_ne(conv_bwd(gb, x, w, &p, ALL3, r), WK_OK);
  TU_FAILS_WITH(WK_ERR_SHAPE, "expected grad_output of size [2, 4, 3, 3]");
  wk_tensor *g32 = cast(go, WK_F32);
  ck_assert_int_ne(conv_bwd(g32, x, w, &p, ALL3, r), WK_OK);
  TU_FAILS_WITH(WK_ERR_DTYPE, "should be the same");
  wk_tensor *xi = cast(x, WK_I64), *wi = cast(w, WK_I64), *gi = cast(go, WK_I64);
  ck_assert_int_ne(conv_bwd(gi, xi, wi, &p, ALL3, r), WK_OK);
  TU_FAILS_WITH(WK_ERR_DTYPE, "not implemented for 'Long'");
  conv_par g2 = p;
  g2.groups = 2;
  ck_assert_int_ne(conv_bwd(go, x, w, &g2, ALL3, r), WK_OK);
  TU_FAILS_WITH(WK_ERR_SHAPE, "groups=2");
  wk_tensor *x3 = wk_select(x, 1, 0), *x2 = wk_select(x3, 0, 0);
  wk_release(x3);
  ck_assert_int_ne(conv_bwd(go, x2, w, &p, ALL3, r), WK_OK);
  TU_FAILS_WITH(WK_ERR_SHAPE, "Expected 3D (unbatched) or 4D (batched) input");
  conv_par s0 = p;
  s0.sh = 0;
  ck_assert_int_ne(conv_bwd(go, x, w, &s0, ALL3, r), WK_OK);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "non-positive stride");
  {
    int64_t one[2] = {1, 1}, two[2] = {1, 1};
    wk_value a[8] = {WK_VT(go),        WK_VT(x),         WK_VT(w), WK_VINTS(one, 2),
                     WK_VINTS(one, 2), WK_VINTS(one, 2), WK_VI(1), WK_VINTS(two, 2)};
    ck_assert_int_ne(wk_call("conv2d_backward", a, 8, r), WK_OK);
    TU_FAILS_WITH(WK_ERR_INVALID_ARG, "output_mask");
  }
  ck_assert_int_ne(conv_bwd(NULL, x, w, &p, ALL3, r), WK_OK); /* must not crash */
  wk_clear_error();
  wk_release(x2);
  wk_release(xi);
  wk_release(wi);
  wk_release(gi);
  wk_release(g32);
  wk_release(x);
  wk_release(w);
  wk_release(go);
  wk_release(gb);
  LEAK_END;
}
END_TEST

/* ---- pooling backward ------------------------------------------------------------------ */

typedef struct {
  int64_t N, C, H, W; /* N == 0: unbatched */
  pool_par p;
} pool_case;

static const pool_case max_cases[] = {
    {2, 2, 6, 7, {2, 2, 2, 2, 0, 0, 1, 1, false, false, 0}}, {1, 3, 7, 7, {3, 3, 2, 2, 1, 1, 1, 1, true, false, 0}},
    {0, 2, 8, 9, {3, 2, 2, 3, 1, 1, 2, 1, false, false, 0}}, {2, 1, 5, 5, {2, 3, 1, 2, 1, 1, 2, 2, true, false, 0}},
    {1, 2, 7, 8, {3, 2, 0, 0, 1, 1, 1, 1, true, false, 0}},
};

static const pool_case avg_cases[] = {
    {2, 2, 6, 7, {2, 2, 2, 2, 0, 0, 1, 1, false, true, 0}}, {1, 3, 7, 7, {3, 3, 2, 2, 1, 1, 1, 1, true, true, 0}},
    {1, 3, 7, 7, {3, 3, 2, 2, 1, 1, 1, 1, true, false, 0}}, {0, 2, 8, 9, {3, 2, 2, 3, 1, 1, 1, 1, false, false, 0}},
    {2, 1, 5, 6, {3, 3, 2, 2, 1, 1, 1, 1, true, true, 5}},  {2, 1, 5, 6, {2, 2, 1, 1, 1, 0, 1, 1, false, false, 3}},
    {1, 2, 8, 7, {3, 2, 0, 0, 1, 1, 1, 1, true, false, 0}},
};

static int pool_shape(const pool_case *c, int64_t xs[4]) {
  int nd = c->N ? 4 : 3, o = 0;
  if (c->N) xs[o++] = c->N;
  xs[o++] = c->C;
  xs[o++] = c->H;
  xs[o++] = c->W;
  return nd;
}

typedef struct {
  wk_tensor *x;
  const pool_par *p;
  int64_t oh, ow;
} pool_ctx;

static wk_tensor *maxpool_f(void *c) {
  pool_ctx *k = c;
  return maxpool_fwd(k->x, k->p, NULL);
}
static wk_tensor *avgpool_f(void *c) {
  pool_ctx *k = c;
  return avgpool_fwd(k->x, k->p);
}
static wk_tensor *adaptive_f(void *c) {
  pool_ctx *k = c;
  int64_t os[2] = {k->oh, k->ow};
  wk_value a[2] = {WK_VT(k->x), WK_VINTS(os, 2)}, out[WK_MAX_OUTS];
  if (wk_call("adaptive_avg_pool2d", a, 2, out) != WK_OK) return NULL;
  return out[0].u.t;
}

START_TEST(test_backward_max_pool2d_finite_differences) {
  LEAK_START;
  for (size_t ci = 0; ci < sizeof max_cases / sizeof max_cases[0]; ci++) {
    const pool_case *c = &max_cases[ci];
    int64_t xs[4];
    int nd = pool_shape(c, xs);
    wk_tensor *x = rand64(xs, nd, 100 + ci), *ind = NULL;
    pool_ctx k = {x, &c->p, 0, 0};
    wk_tensor *y = maxpool_fwd(x, &c->p, &ind);
    TU_NOTNULL(y);
    double *G;
    wk_tensor *go = rand_like_vals(y, 110 + ci, &G);
    wk_tensor *go2 = ci % 2 ? tu_noncontig(go) : wk_retain(go);
    wk_tensor *gi = maxpool_bwd(go2, x, &c->p, ind);
    TU_NOTNULL(gi);
    ck_assert(shape_is(gi, xs, nd));
    CHECK_FD(gi, maxpool_f, &k, x, G);
    /* f32 gives the same scatter */
    wk_tensor *x32 = cast(x, WK_F32), *g32 = cast(go, WK_F32), *i32 = NULL;
    wk_tensor *y32 = maxpool_fwd(x32, &c->p, &i32);
    wk_tensor *gi32 = maxpool_bwd(g32, x32, &c->p, i32);
    ck_assert(wk_tensor_dtype(gi32) == WK_F32);
    CLOSE_T(gi32, gi, 1e-6, 1e-6);
    wk_release(x32);
    wk_release(g32);
    wk_release(i32);
    wk_release(y32);
    wk_release(gi32);
    wk_release(gi);
    wk_release(go2);
    free(G);
    wk_release(go);
    wk_release(ind);
    wk_release(y);
    wk_release(x);
  }
  LEAK_END;
}
END_TEST

START_TEST(test_backward_avg_pool2d_finite_differences) {
  LEAK_START;
  for (size_t ci = 0; ci < sizeof avg_cases / sizeof avg_cases[0]; ci++) {
    const pool_case *c = &avg_cases[ci];
    int64_t xs[4];
    int nd = pool_shape(c, xs);
    wk_tensor *x = rand64(xs, nd, 200 + ci);
    pool_ctx k = {x, &c->p, 0, 0};
    wk_tensor *y = avgpool_f(&k);
    TU_NOTNULL(y);
    double *G;
    wk_tensor *go = rand_like_vals(y, 210 + ci, &G);
    wk_tensor *go2 = ci % 2 ? tu_noncontig(go) : wk_retain(go), *x2 = ci % 2 ? tu_noncontig(x) : wk_retain(x);
    wk_tensor *gi = avgpool_bwd(go2, x2, &c->p);
    TU_NOTNULL(gi);
    ck_assert(shape_is(gi, xs, nd));
    CHECK_FD(gi, avgpool_f, &k, x, G);
    wk_tensor *x32 = cast(x, WK_F32), *g32 = cast(go, WK_F32);
    wk_tensor *gi32 = avgpool_bwd(g32, x32, &c->p);
    ck_assert(wk_tensor_dtype(gi32) == WK_F32);
    CLOSE_T(gi32, gi, 1e-5, 1e-6);
    wk_tensor *xb = cast(x, WK_BF16), *gbf = cast(go, WK_BF16);
    wk_tensor *gib = avgpool_bwd(gbf, xb, &c->p);
    ck_assert(wk_tensor_dtype(gib) == WK_BF16);
    CLOSE_T(gib, gi, 2e-2, 2e-2);
    wk_release(xb);
    wk_release(gbf);
    wk_release(gib);
    wk_release(x32);
    wk_release(g32);
    wk_release(gi32);
    wk_release(gi);
    wk_release(go2);
    wk_release(x2);
    free(G);
    wk_release(go);
    wk_release(y);
    wk_release(x);
  }
  LEAK_END;
}
END_TEST

START_TEST(test_backward_adaptive_avg_pool2d_finite_differences) {
  static const int64_t cases[][5] = {/* N (0: unbatched), H, W, oh, ow */
                                     {2, 7, 9, 3, 4},
                                     {1, 5, 5, 5, 5},
                                     {2, 4, 6, 7, 8},
                                     {0, 6, 5, 1, 1},
                                     {0, 6, 7, 4, 3}};
  LEAK_START;
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const int64_t *c = cases[ci];
    int64_t xs[4];
    int nd = c[0] ? 4 : 3, o = 0;
    if (c[0]) xs[o++] = c[0];
    xs[o++] = 3;
    xs[o++] = c[1];
    xs[o++] = c[2];
    wk_tensor *x = rand64(xs, nd, 300 + ci);
    pool_ctx k = {x, NULL, c[3], c[4]};
    wk_tensor *y = adaptive_f(&k);
    TU_NOTNULL(y);
    double *G;
    wk_tensor *go = rand_like_vals(y, 310 + ci, &G);
    wk_tensor *go2 = ci % 2 ? tu_noncontig(go) : wk_retain(go);
    wk_tensor *gi = adaptive_bwd(go2, x);
    TU_NOTNULL(gi);
    ck_assert(shape_is(gi, xs, nd));
    CHECK_FD(gi, adaptive_f, &k, x, G);
    wk_tensor *x32 = cast(x, WK_F32), *g32 = cast(go, WK_F32);
    wk_tensor *gi32 = adaptive_bwd(g32, x32);
    CLOSE_T(gi32, gi, 1e-5, 1e-6);
    wk_release(x32);
    wk_release(g32);
    wk_release(gi32);
    wk_release(gi);
    wk_release(go2);
    free(G);
    wk_release(go);
    wk_release(y);
    wk_release(x);
  }
  LEAK_END;
}
END_TEST

START_TEST(test_backward_pool_errors) {
  LEAK_START;
  int64_t xs[4] = {2, 3, 6, 6}, gs[4] = {2, 3, 3, 3}, bad[4] = {2, 3, 3, 2};
  pool_par p = {2, 2, 2, 2, 0, 0, 1, 1, false, true, 0};
  wk_tensor *x = rand64(xs, 4, 1), *go = rand64(gs, 4, 2), *gb = rand64(bad, 4, 3), *ind = NULL;
  wk_tensor *y = maxpool_fwd(x, &p, &ind);
  ck_assert_ptr_null(maxpool_bwd(gb, x, &p, ind));
  TU_FAILS_WITH(WK_ERR_SHAPE, "expected grad_output of size [2, 3, 3, 3]");
  ck_assert_ptr_null(maxpool_bwd(go, x, &p, gb));
  TU_FAILS_WITH(WK_ERR_SHAPE, "expected indices of size");
  wk_tensor *big = wk_full_like(ind, 36, (wk_options){0});
  ck_assert_ptr_null(maxpool_bwd(go, x, &p, big));
  TU_FAILS_WITH(WK_ERR_INDEX, "Found an invalid max index: 36");
  wk_tensor *g32 = cast(go, WK_F32);
  ck_assert_ptr_null(maxpool_bwd(g32, x, &p, ind));
  TU_FAILS_WITH(WK_ERR_DTYPE, "gradOutput");
  ck_assert_ptr_null(avgpool_bwd(g32, x, &p));
  TU_FAILS_WITH(WK_ERR_DTYPE, "gradOutput");
  ck_assert_ptr_null(avgpool_bwd(gb, x, &p));
  TU_FAILS_WITH(WK_ERR_SHAPE, "expected grad_output of size");
  pool_par bp = p;
  bp.ph = 2;
  ck_assert_ptr_null(avgpool_bwd(go, x, &bp));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "pad should be at most half of effective kernel size, but got pad=2, kernel_size=2");
  pool_par dz = p;
  dz.divisor = 0;
  {
    int64_t k[2] = {2, 2}, st[2] = {2, 2}, pd[2] = {0, 0};
    wk_value a[8] = {WK_VT(go),       WK_VT(x),     WK_VINTS(k, 2), WK_VINTS(st, 2),
                     WK_VINTS(pd, 2), WK_VB(false), WK_VB(true),    WK_VI(0)};
    wk_value out[WK_MAX_OUTS];
    ck_assert_int_ne(wk_call("avg_pool2d_backward", a, 8, out), WK_OK);
    TU_FAILS_WITH(WK_ERR_INVALID_ARG, "divisor must be not zero");
  }
  (void)dz;
  int64_t as[4] = {3, 3, 3, 3};
  wk_tensor *ga = rand64(as, 4, 5);
  ck_assert_ptr_null(adaptive_bwd(ga, x));
  TU_FAILS_WITH(WK_ERR_SHAPE, "expected grad_output of size [2, 3, 3, 3]");
  wk_tensor *x2 = wk_select(x, 0, 0);
  wk_tensor *x1 = wk_select(x2, 0, 0);
  ck_assert_ptr_null(adaptive_bwd(go, x1));
  TU_FAILS_WITH(WK_ERR_SHAPE, "Expected 3D or 4D tensor");
  wk_release(x1);
  wk_release(x2);
  wk_release(ga);
  wk_release(g32);
  wk_release(big);
  wk_release(y);
  wk_release(ind);
  wk_release(x);
  wk_release(go);
  wk_release(gb);
  LEAK_END;
}
END_TEST

/* ---- softmax / log_softmax ------------------------------------------------------------ */

typedef struct {
  wk_tensor *x;
  int64_t dim;
  bool log;
} smx_ctx;

static wk_tensor *smx_f(void *c) {
  smx_ctx *k = c;
  return k->log ? wk_log_softmax(k->x, k->dim) : wk_softmax(k->x, k->dim);
}

START_TEST(test_backward_softmax_finite_differences) {
  LEAK_START;
  int64_t s3[3] = {3, 4, 5}, s1[1] = {6};
  const struct {
    const int64_t *s;
    int nd;
    int64_t dim;
  } cases[] = {{s3, 3, 0}, {s3, 3, 1}, {s3, 3, 2}, {s3, 3, -1}, {s1, 1, 0}, {s1, 0, 0}};
  for (int log = 0; log < 2; log++)
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
      wk_tensor *x = tu_rand(cases[ci].s, cases[ci].nd, WK_F64, -2, 2, 400 + ci);
      smx_ctx k = {x, cases[ci].dim, log};
      wk_tensor *y = smx_f(&k);
      double *G;
      wk_tensor *go = rand_like_vals(y, 410 + ci, &G);
      wk_tensor *go2 = ci % 2 && cases[ci].nd ? tu_noncontig(go) : wk_retain(go);
      wk_tensor *gi = softmax_bwd(log, go2, y, cases[ci].dim, WK_F64);
      TU_NOTNULL(gi);
      ck_assert(shape_is(gi, cases[ci].s, cases[ci].nd));
      CHECK_FD(gi, smx_f, &k, x, G);
      /* f32 grads, f32 result; and input_dtype f32 from f64 grads */
      wk_tensor *y32 = cast(y, WK_F32), *g32 = cast(go, WK_F32);
      wk_tensor *gi32 = softmax_bwd(log, g32, y32, cases[ci].dim, WK_F32);
      ck_assert(wk_tensor_dtype(gi32) == WK_F32);
      CLOSE_T(gi32, gi, 1e-4, 1e-5);
      wk_tensor *gih = softmax_bwd(log, go, y, cases[ci].dim, WK_F16);
      ck_assert(wk_tensor_dtype(gih) == WK_F16);
      CLOSE_T(gih, gi, 1e-2, 1e-3);
      wk_tensor *yb = cast(y, WK_BF16), *gb = cast(go, WK_BF16);
      wk_tensor *gib = softmax_bwd(log, gb, yb, cases[ci].dim, WK_BF16);
      ck_assert(wk_tensor_dtype(gib) == WK_BF16);
      CLOSE_T(gib, gi, 5e-2, 5e-2);
      wk_release(yb);
      wk_release(gb);
      wk_release(gib);
      wk_release(gih);
      wk_release(y32);
      wk_release(g32);
      wk_release(gi32);
      wk_release(gi);
      wk_release(go2);
      free(G);
      wk_release(go);
      wk_release(y);
      wk_release(x);
    }
  LEAK_END;
}
END_TEST

START_TEST(test_backward_softmax_errors) {
  LEAK_START;
  int64_t s[2] = {3, 4}, t[2] = {4, 3};
  wk_tensor *y = rand64(s, 2, 1), *g = rand64(t, 2, 2), *gi = cast(y, WK_I64);
  ck_assert_ptr_null(softmax_bwd(false, g, y, 1, WK_F64));
  TU_FAILS_WITH(WK_ERR_SHAPE, "softmax_backward_data(): expected grad_output to have the shape of output [3, 4]");
  ck_assert_ptr_null(softmax_bwd(true, y, y, 2, WK_F64));
  TU_FAILS_WITH(WK_ERR_INDEX, "Dimension out of range");
  ck_assert_ptr_null(softmax_bwd(true, gi, y, 0, WK_F64));
  TU_FAILS_WITH(WK_ERR_DTYPE, "floating point grad_output");
  ck_assert_ptr_null(softmax_bwd(false, y, y, 0, WK_I32));
  TU_FAILS_WITH(WK_ERR_DTYPE, "input_dtype");
  int64_t z[2] = {0, 4};
  wk_tensor *e = rand64(z, 2, 3), *ge = softmax_bwd(false, e, e, 1, WK_F32);
  ck_assert(shape_is(ge, z, 2));
  wk_release(ge);
  wk_release(e);
  wk_release(gi);
  wk_release(y);
  wk_release(g);
  LEAK_END;
}
END_TEST

/* ---- batch_norm_backward ---------------------------------------------------------------- */

typedef struct {
  wk_tensor *x, *w, *b, *rm, *rv;
  bool train;
} bn_ctx;

static wk_tensor *bn_f(void *c) {
  bn_ctx *k = c;
  wk_value o[3];
  if (bn_fwd(k->x, k->w, k->b, k->rm, k->rv, k->train, o) != WK_OK) return NULL;
  wk_release(o[1].u.t);
  wk_release(o[2].u.t);
  return o[0].u.t;
}

START_TEST(test_backward_batch_norm_finite_differences) {
  LEAK_START;
  int64_t s2[2] = {5, 3}, s4[4] = {2, 3, 4, 3}, s3[3] = {3, 2, 5};
  const struct {
    const int64_t *s;
    int nd;
  } shapes[] = {{s2, 2}, {s4, 4}, {s3, 3}};
  for (size_t si = 0; si < 3; si++)
    for (int train = 0; train < 2; train++)
      for (int affine = 0; affine < 2; affine++) {
        uint64_t seed = 500 + si * 10 + (uint64_t)train * 4 + (uint64_t)affine;
        int64_t C = shapes[si].s[1];
        wk_tensor *x = tu_rand(shapes[si].s, shapes[si].nd, WK_F64, -2, 3, seed);
        wk_tensor *w = affine ? tu_rand(&C, 1, WK_F64, 0.5, 1.5, seed + 1) : NULL;
        wk_tensor *b = affine ? rand64(&C, 1, seed + 2) : NULL;
        /* running stats are only read in eval mode (training would update them) */
        wk_tensor *rm = train ? NULL : rand64(&C, 1, seed + 3);
        wk_tensor *rv = train ? NULL : tu_rand(&C, 1, WK_F64, 0.5, 2, seed + 4);
        bn_ctx k = {x, w, b, rm, rv, train};
        wk_value fo[3];
        TU_OK(bn_fwd(x, w, b, rm, rv, train, fo));
        double *G;
        wk_tensor *go = rand_like_vals(fo[0].u.t, seed + 5, &G);
        wk_tensor *go2 = si == 1 ? tu_noncontig(go) : wk_retain(go);
        wk_value r[3];
        TU_OK(bn_bwd(go2, x, w, rm, rv, train ? fo[1].u.t : NULL, train ? fo[2].u.t : NULL, train, ALL3, r));
        ck_assert(shape_is(r[0].u.t, shapes[si].s, shapes[si].nd));
        ck_assert(shape_is(r[1].u.t, &C, 1));
        ck_assert(shape_is(r[2].u.t, &C, 1));
        CHECK_FD(r[0].u.t, bn_f, &k, x, G);
        if (affine) {
          CHECK_FD(r[1].u.t, bn_f, &k, w, G);
          CHECK_FD(r[2].u.t, bn_f, &k, b, G);
        }
        /* f32 agrees */
        wk_tensor *x32 = cast(x, WK_F32), *g32 = cast(go, WK_F32), *w32 = cast(w, WK_F32);
        wk_tensor *rm32 = cast(rm, WK_F32), *rv32 = cast(rv, WK_F32);
        wk_value fo32[3], r32[3];
        TU_OK(bn_fwd(x32, w32, NULL, rm32, rv32, train, fo32));
        TU_OK(bn_bwd(g32, x32, w32, rm32, rv32, fo32[1].u.t, fo32[2].u.t, train, ALL3, r32));
        for (int i = 0; i < 3; i++) {
          ck_assert(wk_tensor_dtype(r32[i].u.t) == WK_F32);
          CLOSE_T(r32[i].u.t, r[i].u.t, 1e-4, 1e-4);
        }
        /* bf16 input with f32 weight: grad_input in bf16, the others in f32 */
        if (affine) {
          wk_tensor *xb = cast(x, WK_BF16), *gb = cast(go, WK_BF16);
          wk_value fob[3], rb[3];
          TU_OK(bn_fwd(xb, w32, NULL, rm32, rv32, train, fob));
          TU_OK(bn_bwd(gb, xb, w32, rm32, rv32, fob[1].u.t, fob[2].u.t, train, ALL3, rb));
          ck_assert(wk_tensor_dtype(rb[0].u.t) == WK_BF16);
          ck_assert(wk_tensor_dtype(rb[1].u.t) == WK_F32);
          CLOSE_T(rb[0].u.t, r[0].u.t, 6e-2, 6e-2);
          CLOSE_T(rb[2].u.t, r[2].u.t, 3e-2, 3e-2);
          release_outs(fob, 3);
          release_outs(rb, 3);
          wk_release(xb);
          wk_release(gb);
        }
        release_outs(fo32, 3);
        release_outs(r32, 3);
        wk_release(x32);
        wk_release(g32);
        wk_release(w32);
        wk_release(rm32);
        wk_release(rv32);
        release_outs(r, 3);
        release_outs(fo, 3);
        wk_release(go2);
        free(G);
        wk_release(go);
        wk_release(x);
        wk_release(w);
        wk_release(b);
        wk_release(rm);
        wk_release(rv);
      }
  LEAK_END;
}
END_TEST

START_TEST(test_backward_batch_norm_mask_and_errors) {
  LEAK_START;
  int64_t s[3] = {4, 3, 2}, C = 3, C4 = 4;
  wk_tensor *x = rand64(s, 3, 1), *go = rand64(s, 3, 2), *w = rand64(&C, 1, 3);
  wk_value fo[3], full[3];
  TU_OK(bn_fwd(x, w, NULL, NULL, NULL, true, fo));
  TU_OK(bn_bwd(go, x, w, NULL, NULL, fo[1].u.t, fo[2].u.t, true, ALL3, full));
  for (int m = 0; m < 8; m++) {
    int64_t mask[3] = {m & 1, (m >> 1) & 1, (m >> 2) & 1};
    wk_value r[3];
    TU_OK(bn_bwd(go, x, w, NULL, NULL, fo[1].u.t, fo[2].u.t, true, mask, r));
    for (int i = 0; i < 3; i++) {
      if (mask[i])
        CLOSE_T(r[i].u.t, full[i].u.t, 0, 0);
      else
        ck_assert_int_eq(r[i].tag, WK_V_NONE);
    }
    release_outs(r, 3);
  }
  wk_value r[3];
  ck_assert_int_ne(bn_bwd(go, x, w, NULL, NULL, NULL, NULL, true, ALL3, r), WK_OK);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "save_mean must be defined in training mode");
  ck_assert_int_ne(bn_bwd(go, x, w, NULL, NULL, NULL, NULL, false, ALL3, r), WK_OK);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "running_mean must be defined in evaluation mode");
  wk_tensor *w4 = rand64(&C4, 1, 4);
  ck_assert_int_ne(bn_bwd(go, x, w4, NULL, NULL, fo[1].u.t, fo[2].u.t, true, ALL3, r), WK_OK);
  TU_FAILS_WITH(WK_ERR_SHAPE, "weight should contain 3 elements not 4");
  wk_tensor *g2 = wk_select(go, 2, 0);
  ck_assert_int_ne(bn_bwd(g2, x, w, NULL, NULL, fo[1].u.t, fo[2].u.t, true, ALL3, r), WK_OK);
  TU_FAILS_WITH(WK_ERR_SHAPE, "expected grad_out to have the shape of input [4, 3, 2]");
  wk_tensor *x1 = wk_select(g2, 1, 0);
  ck_assert_int_ne(bn_bwd(x1, x1, NULL, NULL, NULL, fo[1].u.t, fo[2].u.t, true, ALL3, r), WK_OK);
  TU_FAILS_WITH(WK_ERR_SHAPE, "at least 2 dimensions");
  /* an empty batch: empty grad_input, zero grad_weight/grad_bias */
  int64_t e[3] = {0, 3, 2};
  wk_tensor *xe = rand64(e, 3, 5);
  TU_OK(bn_bwd(xe, xe, w, NULL, NULL, fo[1].u.t, fo[2].u.t, true, ALL3, r));
  ck_assert(shape_is(r[0].u.t, e, 3));
  TU_EQ_VALS(r[1].u.t, 0, 0, 0);
  TU_EQ_VALS(r[2].u.t, 0, 0, 0);
  release_outs(r, 3);
  wk_release(xe);
  wk_release(x1);
  wk_release(g2);
  wk_release(w4);
  release_outs(full, 3);
  release_outs(fo, 3);
  wk_release(x);
  wk_release(go);
  wk_release(w);
  LEAK_END;
}
END_TEST

/* ---- layer_norm_backward ------------------------------------------------------------------ */

typedef struct {
  wk_tensor *x, *w, *b;
  const int64_t *ns;
  int k;
} ln_ctx;

static wk_tensor *ln_f(void *c) {
  ln_ctx *k = c;
  wk_value o[3];
  if (ln_fwd(k->x, k->ns, k->k, k->w, k->b, o) != WK_OK) return NULL;
  wk_release(o[1].u.t);
  wk_release(o[2].u.t);
  return o[0].u.t;
}

START_TEST(test_backward_layer_norm_finite_differences) {
  LEAK_START;
  int64_t s3[3] = {3, 4, 5}, s2[2] = {2, 7};
  const struct {
    const int64_t *s;
    int nd, k;
  } cases[] = {{s3, 3, 1}, {s3, 3, 2}, {s2, 2, 1}, {s3, 3, 3}};
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
    for (int aff = 0; aff < 4; aff++) { /* bit 0: weight, bit 1: bias */
      uint64_t seed = 600 + ci * 10 + (uint64_t)aff;
      const int64_t *ns = cases[ci].s + cases[ci].nd - cases[ci].k;
      int k = cases[ci].k;
      wk_tensor *x = tu_rand(cases[ci].s, cases[ci].nd, WK_F64, -2, 3, seed);
      wk_tensor *w = aff & 1 ? tu_rand(ns, k, WK_F64, 0.5, 1.5, seed + 1) : NULL;
      wk_tensor *b = aff & 2 ? rand64(ns, k, seed + 2) : NULL;
      ln_ctx c = {x, w, b, ns, k};
      wk_value fo[3];
      TU_OK(ln_fwd(x, ns, k, w, b, fo));
      double *G;
      wk_tensor *go = rand_like_vals(fo[0].u.t, seed + 3, &G);
      wk_tensor *go2 = aff == 3 ? tu_noncontig(go) : wk_retain(go), *x2 = aff == 1 ? tu_noncontig(x) : wk_retain(x);
      wk_value r[3];
      TU_OK(ln_bwd(go2, x2, ns, k, fo[1].u.t, fo[2].u.t, w, b, ALL3, r));
      ck_assert(shape_is(r[0].u.t, cases[ci].s, cases[ci].nd));
      ck_assert(shape_is(r[1].u.t, ns, k));
      ck_assert(shape_is(r[2].u.t, ns, k));
      CHECK_FD(r[0].u.t, ln_f, &c, x, G);
      if (w) CHECK_FD(r[1].u.t, ln_f, &c, w, G);
      if (b) CHECK_FD(r[2].u.t, ln_f, &c, b, G);
      /* f32 and f16 agree */
      for (int d = 0; d < 2; d++) {
        wk_dtype dt = d ? WK_F16 : WK_F32;
        double tol = d ? 3e-2 : 1e-4;
        wk_tensor *xd = cast(x, dt), *gd = cast(go, dt), *wd = cast(w, dt), *bd = cast(b, dt);
        wk_value fd[3], rd[3];
        TU_OK(ln_fwd(xd, ns, k, wd, bd, fd));
        TU_OK(ln_bwd(gd, xd, ns, k, fd[1].u.t, fd[2].u.t, wd, bd, ALL3, rd));
        ck_assert(wk_tensor_dtype(rd[0].u.t) == dt);
        for (int i = 0; i < 3; i++) CLOSE_T(rd[i].u.t, r[i].u.t, tol, tol);
        release_outs(fd, 3);
        release_outs(rd, 3);
        wk_release(xd);
        wk_release(gd);
        wk_release(wd);
        wk_release(bd);
      }
      release_outs(r, 3);
      release_outs(fo, 3);
      wk_release(go2);
      wk_release(x2);
      free(G);
      wk_release(go);
      wk_release(x);
      wk_release(w);
      wk_release(b);
    }
  LEAK_END;
}
END_TEST

START_TEST(test_backward_layer_norm_mask_and_errors) {
  LEAK_START;
  int64_t s[3] = {2, 3, 4}, ns[1] = {4}, bad[1] = {3};
  wk_tensor *x = rand64(s, 3, 1), *go = rand64(s, 3, 2), *w = rand64(ns, 1, 3), *b = rand64(ns, 1, 4);
  wk_value fo[3], full[3], r[3];
  TU_OK(ln_fwd(x, ns, 1, w, b, fo));
  TU_OK(ln_bwd(go, x, ns, 1, fo[1].u.t, fo[2].u.t, w, b, ALL3, full));
  for (int m = 0; m < 8; m++) {
    int64_t mask[3] = {m & 1, (m >> 1) & 1, (m >> 2) & 1};
    TU_OK(ln_bwd(go, x, ns, 1, fo[1].u.t, fo[2].u.t, w, b, mask, r));
    for (int i = 0; i < 3; i++) {
      if (mask[i])
        CLOSE_T(r[i].u.t, full[i].u.t, 0, 0);
      else
        ck_assert_int_eq(r[i].tag, WK_V_NONE);
    }
    release_outs(r, 3);
  }
  ck_assert_int_ne(ln_bwd(go, x, bad, 1, fo[1].u.t, fo[2].u.t, NULL, NULL, ALL3, r), WK_OK);
  TU_FAILS_WITH(WK_ERR_SHAPE, "Given normalized_shape=[3], expected input with shape [*, 3]");
  ck_assert_int_ne(ln_bwd(go, x, ns, 1, fo[1].u.t, fo[2].u.t, x, NULL, ALL3, r), WK_OK);
  TU_FAILS_WITH(WK_ERR_SHAPE, "Expected weight to be of same shape as normalized_shape");
  ck_assert_int_ne(ln_bwd(go, x, ns, 1, x, fo[2].u.t, w, b, ALL3, r), WK_OK);
  TU_FAILS_WITH(WK_ERR_SHAPE, "expected mean and rstd with 6 elements");
  wk_tensor *g2 = wk_select(go, 0, 0);
  ck_assert_int_ne(ln_bwd(g2, x, ns, 1, fo[1].u.t, fo[2].u.t, w, b, ALL3, r), WK_OK);
  TU_FAILS_WITH(WK_ERR_SHAPE, "expected grad_out to have the shape of input");
  ck_assert_int_ne(ln_bwd(go, x, ns, 0, fo[1].u.t, fo[2].u.t, w, b, ALL3, r), WK_OK);
  TU_FAILS_WITH(WK_ERR_SHAPE, "at least 1-dimensional");
  wk_release(g2);
  release_outs(full, 3);
  release_outs(fo, 3);
  wk_release(x);
  wk_release(go);
  wk_release(w);
  wk_release(b);
  LEAK_END;
}
END_TEST

/* ---- embedding_dense_backward ------------------------------------------------------------ */

typedef struct {
  wk_tensor *w, *idx;
} emb_ctx;

static wk_tensor *emb_f(void *c) {
  emb_ctx *k = c;
  return wk_embedding(k->w, k->idx);
}

START_TEST(test_backward_embedding_finite_differences) {
  LEAK_START;
  int64_t ws[2] = {7, 4}, is2[2] = {3, 5}, is1[1] = {6};
  const struct {
    const int64_t *s;
    int nd;
    wk_dtype dt;
    int64_t pidx;
  } cases[] = {
      {is2, 2, WK_I64, -1}, {is2, 2, WK_I64, 3}, {is1, 1, WK_I32, 0}, {is1, 0, WK_I64, -1}, {is2, 2, WK_I32, 6}};
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    wk_tensor *w = rand64(ws, 2, 700 + ci);
    /* indices with repeats, including the padding row */
    wk_tensor *idx = tu_rand(cases[ci].s, cases[ci].nd, cases[ci].dt, 0, 7, 710 + ci);
    emb_ctx k = {w, idx};
    wk_tensor *y = emb_f(&k);
    TU_NOTNULL(y);
    double *G;
    wk_tensor *go = rand_like_vals(y, 720 + ci, &G);
    wk_tensor *go2 = ci % 2 ? tu_noncontig(go) : wk_retain(go);
    wk_tensor *gw = emb_bwd(go2, idx, 7, cases[ci].pidx);
    TU_NOTNULL(gw);
    ck_assert(shape_is(gw, ws, 2));
    double *ref = fd_grad(emb_f, &k, w, G);
    if (cases[ci].pidx >= 0)
      for (int i = 0; i < 4; i++) ref[cases[ci].pidx * 4 + i] = 0;
    TU_CLOSE(gw, ref, 28, FD_RTOL, FD_ATOL);
    wk_tensor *g32 = cast(go, WK_F32), *gw32 = emb_bwd(g32, idx, 7, cases[ci].pidx);
    ck_assert(wk_tensor_dtype(gw32) == WK_F32);
    TU_CLOSE(gw32, ref, 28, 1e-5, 1e-5);
    wk_tensor *gh = cast(go, WK_BF16), *gwh = emb_bwd(gh, idx, 7, cases[ci].pidx);
    ck_assert(wk_tensor_dtype(gwh) == WK_BF16);
    TU_CLOSE(gwh, ref, 28, 3e-2, 3e-2);
    /* more rows than indices use */
    wk_tensor *gw9 = emb_bwd(go, idx, 9, cases[ci].pidx);
    int64_t s9[2] = {9, 4};
    ck_assert(shape_is(gw9, s9, 2));
    wk_tensor *top = wk_narrow(gw9, 0, 0, 7), *tail = wk_narrow(gw9, 0, 7, 2);
    TU_CLOSE(top, ref, 28, FD_RTOL, FD_ATOL);
    double z[8] = {0};
    TU_CLOSE(tail, z, 8, 0, 0);
    wk_release(top);
    wk_release(tail);
    wk_release(gw9);
    wk_release(gh);
    wk_release(gwh);
    wk_release(g32);
    wk_release(gw32);
    free(ref);
    wk_release(gw);
    wk_release(go2);
    free(G);
    wk_release(go);
    wk_release(y);
    wk_release(idx);
    wk_release(w);
  }
  LEAK_END;
}
END_TEST

START_TEST(test_backward_embedding_errors) {
  LEAK_START;
  int64_t gs[3] = {2, 3, 4}, is[2] = {2, 3}, bad[2] = {3, 2};
  wk_tensor *go = rand64(gs, 3, 1), *idx = tu_rand(is, 2, WK_I64, 0, 5, 2), *ib = tu_rand(bad, 2, WK_I64, 0, 5, 3);
  wk_tensor *i4 = TU_T(WK_I64, (2, 3), 0, 1, 4, 2, 3, 3);
  ck_assert_ptr_null(emb_bwd(go, i4, 4, -1));
  TU_FAILS_WITH(WK_ERR_INDEX, "index out of range in self (index 4, num_weights 4)");
  wk_release(i4);
  wk_tensor *neg = TU_T(WK_I64, (2, 3), 0, 1, -1, 2, 3, 4);
  ck_assert_ptr_null(emb_bwd(go, neg, 5, -1));
  TU_FAILS_WITH(WK_ERR_INDEX, "index out of range in self (index -1");
  ck_assert_ptr_null(emb_bwd(go, ib, 5, -1));
  TU_FAILS_WITH(WK_ERR_SHAPE, "expected grad_output of shape indices.shape");
  wk_tensor *fi = cast(idx, WK_F32);
  ck_assert_ptr_null(emb_bwd(go, fi, 5, -1));
  TU_FAILS_WITH(WK_ERR_DTYPE, "'indices'");
  wk_tensor *gi = cast(go, WK_I64);
  ck_assert_ptr_null(emb_bwd(gi, idx, 5, -1));
  TU_FAILS_WITH(WK_ERR_DTYPE, "floating point grad_output");
  ck_assert_ptr_null(emb_bwd(go, idx, -1, -1));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "num_weights");
  /* no indices: a zero gradient */
  int64_t e[1] = {0}, ge[2] = {0, 4};
  wk_tensor *ie = tu_rand(e, 1, WK_I64, 0, 5, 4), *gee = rand64(ge, 2, 5), *z = emb_bwd(gee, ie, 3, -1);
  double zz[12] = {0};
  TU_CLOSE(z, zz, 12, 0, 0);
  wk_release(z);
  wk_release(ie);
  wk_release(gee);
  wk_release(gi);
  wk_release(fi);
  wk_release(neg);
  wk_release(go);
  wk_release(idx);
  wk_release(ib);
  LEAK_END;
}
END_TEST

/* ---- pad_backward -------------------------------------------------------------------------- */

typedef struct {
  wk_tensor *x;
  const int64_t *pad;
  int npad;
  const char *mode;
} pad_ctx;

static wk_tensor *pad_f(void *c) {
  pad_ctx *k = c;
  return wk_pad(k->x, k->pad, k->npad, k->mode, 0);
}

START_TEST(test_backward_pad_finite_differences) {
  LEAK_START;
  static const int64_t s235[3] = {2, 3, 5}, s245[3] = {2, 4, 5}, s36[2] = {3, 6}, s1244[4] = {1, 2, 4, 4};
  static const int64_t p1[2] = {2, 1}, p2[4] = {1, 2, 2, 0}, p3[4] = {3, 4, 1, 2}, p4[4] = {2, 2, 1, 3},
                       p5[4] = {-1, 2, 1, -2}, p6[4] = {1, 1, 2, 2}, p7[6] = {1, 0, 0, 2, 1, 1}, p8[2] = {0, 0},
                       p9[4] = {4, 4, 0, 0};
  const struct {
    const int64_t *s;
    int nd;
    const int64_t *pad;
    int npad;
    const char *mode;
  } cases[] = {
      {s235, 3, p1, 2, "constant"},  {s235, 3, p2, 4, "reflect"},  {s245, 3, p3, 4, "replicate"},
      {s245, 3, p4, 4, "circular"},  {s36, 2, p5, 4, "constant"},  {s1244, 4, p6, 4, "reflect"},
      {s245, 3, p7, 6, "replicate"}, {s235, 3, p7, 6, "constant"}, {s36, 2, p8, 2, "reflect"},
      {s235, 3, p9, 4, "reflect"},   {s36, 2, p5, 4, "replicate"}, {s1244, 4, p7, 6, "reflect"},
  };
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    wk_tensor *x = rand64(cases[ci].s, cases[ci].nd, 800 + ci);
    pad_ctx k = {x, cases[ci].pad, cases[ci].npad, cases[ci].mode};
    wk_tensor *y = pad_f(&k);
    if (!y) {
      /* reflect with padding >= size (case p9 on W=5) must fail forward and backward alike */
      wk_clear_error();
      wk_tensor *gb = pad_bwd(x, x, cases[ci].pad, cases[ci].npad, cases[ci].mode);
      ck_assert_ptr_null(gb);
      wk_clear_error();
      wk_release(x);
      continue;
    }
    double *G;
    wk_tensor *go = rand_like_vals(y, 810 + ci, &G);
    wk_tensor *go2 = ci % 2 ? tu_noncontig(go) : wk_retain(go);
    wk_tensor *gi = pad_bwd(go2, x, cases[ci].pad, cases[ci].npad, cases[ci].mode);
    ck_assert_msg(gi != NULL, "case %zu: %s", ci, wk_last_error_message());
    ck_assert(shape_is(gi, cases[ci].s, cases[ci].nd));
    ck_assert(!wk_tensor_same_storage(gi, go2));
    CHECK_FD(gi, pad_f, &k, x, G);
    wk_tensor *g32 = cast(go, WK_F32), *gi32 = pad_bwd(g32, x, cases[ci].pad, cases[ci].npad, cases[ci].mode);
    ck_assert(wk_tensor_dtype(gi32) == WK_F32);
    CLOSE_T(gi32, gi, 1e-5, 1e-5);
    wk_release(g32);
    wk_release(gi32);
    wk_release(gi);
    wk_release(go2);
    free(G);
    wk_release(go);
    wk_release(y);
    wk_release(x);
  }
  LEAK_END;
}
END_TEST

START_TEST(test_backward_pad_errors) {
  LEAK_START;
  int64_t s[2] = {3, 4}, gs[2] = {3, 6}, p[2] = {1, 1}, big[2] = {4, 0}, odd[1] = {1};
  wk_tensor *x = rand64(s, 2, 1), *go = rand64(gs, 2, 2);
  ck_assert_ptr_null(pad_bwd(x, x, p, 2, "constant"));
  TU_FAILS_WITH(WK_ERR_SHAPE, "expected grad_output of size [3, 6]");
  ck_assert_ptr_null(pad_bwd(go, x, p, 2, "mirror"));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "mode must be one of");
  ck_assert_ptr_null(pad_bwd(go, x, big, 2, "reflect"));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "Padding size should be less than the corresponding input dimension");
  ck_assert_ptr_null(pad_bwd(go, x, odd, 1, "constant"));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "divisible by 2");
  wk_tensor *gi = cast(go, WK_I64);
  ck_assert_ptr_null(pad_bwd(gi, x, p, 2, "constant"));
  TU_FAILS_WITH(WK_ERR_DTYPE, "floating point grad_output");
  /* 0-dim and empty inputs */
  wk_tensor *s0 = wk_scalar_tensor(2.5, WK_F64), *r0 = pad_bwd(s0, s0, NULL, 0, "constant");
  TU_EQ_VALS(r0, 2.5);
  ck_assert(!wk_tensor_same_storage(r0, s0));
  int64_t e[2] = {0, 4}, ge[2] = {0, 6};
  wk_tensor *xe = rand64(e, 2, 3), *gee = rand64(ge, 2, 4), *re = pad_bwd(gee, xe, p, 2, "reflect");
  ck_assert(shape_is(re, e, 2));
  wk_release(xe);
  wk_release(gee);
  wk_release(re);
  wk_release(s0);
  wk_release(r0);
  wk_release(gi);
  wk_release(x);
  wk_release(go);
  LEAK_END;
}
END_TEST

/* ---- thread-count independence ------------------------------------------------------------- */

/* Large enough to take the parallel paths; results must be bitwise equal for
 * one and four threads. */
START_TEST(test_backward_thread_count_independent) {
  LEAK_START;
  int old = wk_num_threads();
  int64_t xs[4] = {4, 16, 24, 24}, ws[4] = {8, 8, 3, 3}, ls[2] = {128, 384}, es[2] = {4000, 64}, ev[1] = {4000};
  int64_t pads[4] = {3, 2, 1, 4}, gss[4] = {4, 16, 24, 24};
  conv_par cp = {1, 1, 1, 1, 1, 1, 2};
  pool_par pp = {3, 3, 2, 2, 1, 1, 1, 1, true, false, 0};
  wk_tensor *x = tu_rand(xs, 4, WK_F32, -1, 1, 1), *w = tu_rand(ws, 4, WK_F32, -1, 1, 2);
  wk_tensor *cy = conv_fwd(x, w, NULL, &cp);
  wk_tensor *cg = tu_rand(wk_tensor_sizes(cy), 4, WK_F32, -1, 1, 3);
  wk_tensor *py = avgpool_fwd(x, &pp), *pg = tu_rand(wk_tensor_sizes(py), 4, WK_F32, -1, 1, 4);
  wk_tensor *lx = tu_rand(ls, 2, WK_F32, -1, 1, 5), *lg = tu_rand(ls, 2, WK_F32, -1, 1, 6);
  wk_tensor *eg = tu_rand(es, 2, WK_F32, -1, 1, 7), *ei = tu_rand(ev, 1, WK_I64, 0, 50, 8);
  wk_tensor *padded = wk_pad(x, pads, 4, "reflect", 0);
  wk_tensor *padg = tu_rand(wk_tensor_sizes(padded), 4, WK_F32, -1, 1, 9);
  wk_tensor *bng = tu_rand(gss, 4, WK_F32, -1, 1, 10);
  wk_tensor *res[2][10];
  for (int t = 0; t < 2; t++) {
    TU_OK(wk_set_num_threads(t ? 4 : 1));
    wk_value r[3], fo[3];
    TU_OK(conv_bwd(cg, x, w, &cp, ALL3, r));
    res[t][0] = r[0].u.t;
    res[t][1] = r[1].u.t;
    res[t][2] = r[2].u.t;
    res[t][3] = avgpool_bwd(pg, x, &pp);
    TU_OK(ln_fwd(lx, ls + 1, 1, NULL, NULL, fo));
    TU_OK(ln_bwd(lg, lx, ls + 1, 1, fo[1].u.t, fo[2].u.t, NULL, NULL, ALL3, r));
    release_outs(fo, 3);
    res[t][4] = r[0].u.t;
    res[t][5] = r[1].u.t;
    wk_release(r[2].u.t);
    res[t][6] = emb_bwd(eg, ei, 50, 1);
    res[t][7] = pad_bwd(padg, x, pads, 4, "reflect");
    TU_OK(bn_fwd(x, NULL, NULL, NULL, NULL, true, fo));
    TU_OK(bn_bwd(bng, x, NULL, NULL, NULL, fo[1].u.t, fo[2].u.t, true, ALL3, r));
    release_outs(fo, 3);
    res[t][8] = r[0].u.t;
    res[t][9] = r[1].u.t;
    wk_release(r[2].u.t);
  }
  TU_OK(wk_set_num_threads(old));
  for (int i = 0; i < 10; i++) {
    assert_same_bits(res[0][i], res[1][i]);
    wk_release(res[0][i]);
    wk_release(res[1][i]);
  }
  wk_tensor *all[] = {x, w, cy, cg, py, pg, lx, lg, eg, ei, padded, padg, bng};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) wk_release(all[i]);
  LEAK_END;
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("ops_backward");
  struct {
    const char *name;
    const TTest *tests[8];
  } groups[] = {
      {"conv2d",
       {test_backward_conv2d_finite_differences, test_backward_conv2d_batch_chunks, test_backward_conv2d_output_mask,
        test_backward_conv2d_dtypes, test_backward_conv2d_zero_size, test_backward_conv2d_errors}},
      {"pooling",
       {test_backward_max_pool2d_finite_differences, test_backward_avg_pool2d_finite_differences,
        test_backward_adaptive_avg_pool2d_finite_differences, test_backward_pool_errors}},
      {"softmax", {test_backward_softmax_finite_differences, test_backward_softmax_errors}},
      {"batch_norm", {test_backward_batch_norm_finite_differences, test_backward_batch_norm_mask_and_errors}},
      {"layer_norm", {test_backward_layer_norm_finite_differences, test_backward_layer_norm_mask_and_errors}},
      {"embedding", {test_backward_embedding_finite_differences, test_backward_embedding_errors}},
      {"pad", {test_backward_pad_finite_differences, test_backward_pad_errors}},
      {"threads", {test_backward_thread_count_independent}},
  };
  for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
    TCase *tc = tcase_create(groups[g].name);
    tcase_add_checked_fixture(tc, tu_setup, NULL);
    tcase_set_timeout(tc, 60);
    for (int i = 0; i < 8 && groups[g].tests[i]; i++) tcase_add_test(tc, groups[g].tests[i]);
    suite_add_tcase(s, tc);
  }
  return s;
}
TU_MAIN(make_suite)
