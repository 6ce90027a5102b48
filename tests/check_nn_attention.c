/* check_nn_attention: scaled_dot_product_attention (the op: fused cpu kernel,
 * the core's composite, gradcheck, errors), MultiheadAttention and the
 * Transformer layers against PyTorch 1.13 (tests/nn_ref/gen_layers.py ->
 * layers_ref.h; SDPA against PyTorch 2's documented math written with 1.13's
 * ops, since 1.13 has no F.scaled_dot_product_attention). */
#include <wick/sdk/gradcheck.h>
#include "nn_ref/lr_util.h"

#define F64_TOL 1e-10
#define F32_TOL 1e-5

/* ---- scaled_dot_product_attention ---- */
typedef struct {
  const char *name;
  bool causal;
  double scale; /* 0: default */
  bool bool_mask;
} sdpa_ref;
static const sdpa_ref SDPA_CASES[] = {{"sdpa_basic", false, 0, false},   {"sdpa_causal", true, 0, false},
                                      {"sdpa_boolmask", false, 0, true}, {"sdpa_floatmask", false, 0.3, false},
                                      {"sdpa_blocks", true, 0, false}};

static wk_tensor *sdpa(wk_tensor *q, wk_tensor *k, wk_tensor *v, wk_tensor *m, double p, bool causal, double scale) {
  return wk_nn_scaled_dot_product_attention(q, k, v, m, p, causal, scale);
}

static void sdpa_ref_check(const sdpa_ref *rc, wk_dtype dt, double tol) {
  wk_scope_begin();
  const lr_case *c = lr_case_get(rc->name);
  wk_tensor *q = lr_leaf(c, "q", dt), *k = lr_leaf(c, "k", dt), *v = lr_leaf(c, "v", dt), *m = NULL;
  if (lr_find(c, "mask")) m = rc->bool_mask ? lr_bool(c, "mask") : lr_leaf(c, "mask", dt);
  wk_tensor *y = sdpa(q, k, v, m, 0, rc->causal, rc->scale);
  LR_CLOSE(y, c, "y", tol);
  ck_assert_int_eq(wk_tensor_dtype(y), dt);
  ck_assert_str_eq(wk_tensor_grad_fn_name(y), "ScaledDotProductAttentionBackward0");
  TU_OK(wk_backward(lr_dot(c, "gy", y)));
  LR_CLOSE(wk_tensor_grad(q), c, "g.q", tol);
  LR_CLOSE(wk_tensor_grad(k), c, "g.k", tol);
  LR_CLOSE(wk_tensor_grad(v), c, "g.v", tol);
  if (m && !rc->bool_mask) LR_CLOSE(wk_tensor_grad(m), c, "g.mask", tol);
  wk_scope_end();
}

START_TEST(test_sdpa_matches_torch_f64) {
  for (size_t i = 0; i < sizeof SDPA_CASES / sizeof SDPA_CASES[0]; i++) sdpa_ref_check(&SDPA_CASES[i], WK_F64, F64_TOL);
}
END_TEST

START_TEST(test_sdpa_matches_torch_f32) {
  for (size_t i = 0; i < sizeof SDPA_CASES / sizeof SDPA_CASES[0]; i++) sdpa_ref_check(&SDPA_CASES[i], WK_F32, F32_TOL);
}
END_TEST

/* The fused kernel against softmax(q k^T * scale + mask) v written with ops
 * (matmul, softmax, masked_fill, dropout's mask reused) on random shapes,
 * forward and gradients, f64. */
static wk_tensor *sdpa_composite(wk_tensor *q, wk_tensor *k, wk_tensor *v, wk_tensor *bmask, wk_tensor *fmask,
                                 bool causal, double scale) {
  int64_t L = wk_tensor_size(q, -2), S = wk_tensor_size(k, -2);
  wk_tensor *s = wk_mul_scalar(wk_matmul(q, wk_transpose(k, -2, -1)), scale);
  if (causal) {
    wk_tensor *idx_i = wk_unsqueeze(wk_arange(0, (double)L, 1, (wk_options){.dtype = WK_I64}), 1);
    wk_tensor *idx_j = wk_unsqueeze(wk_arange(0, (double)S, 1, (wk_options){.dtype = WK_I64}), 0);
    s = wk_masked_fill(s, wk_gt(idx_j, idx_i), -INFINITY);
  }
  if (bmask) s = wk_masked_fill(s, wk_logical_not(bmask), -INFINITY);
  if (fmask) s = wk_add(s, fmask);
  return wk_matmul(wk_softmax(s, -1), v);
}

START_TEST(test_sdpa_fused_vs_composite_random) {
  uint64_t seed = 7;
  for (int it = 0; it < 24; it++) {
    wk_scope_begin();
    int64_t B = 1 + it % 2, H = 1 + it % 3, L = 1 + (it * 7) % 37, S = 1 + (it * 13) % 41, E = 1 + it % 9,
            Ev = 1 + (it * 5) % 7;
    bool causal = it % 3 == 1, use_b = it % 4 == 2, use_f = it % 5 == 3 && !use_b;
    double scale = it % 2 ? 0.7 : 1.0 / sqrt((double)E);
    wk_tensor *q = tu_rand(WK_SHAPE(B, H, L, E), WK_F64, -2, 2, seed++);
    wk_tensor *k = tu_rand(WK_SHAPE(B, H, S, E), WK_F64, -2, 2, seed++);
    wk_tensor *v = tu_rand(WK_SHAPE(B, H, S, Ev), WK_F64, -2, 2, seed++);
    wk_tensor *bm = NULL, *fm = NULL;
    if (use_b) { /* (L, S) bool with key 0 always taking part, so no row is empty */
      bm = wk_gt_scalar(tu_rand(WK_SHAPE(L, S), WK_F64, 0, 1, seed++), 0.3);
      wk_tensor *col = wk_narrow(bm, 1, 0, 1);
      TU_NOTNULL(wk_fill_(col, 1.0));
    }
    if (use_f) fm = tu_rand(WK_SHAPE(B, 1, L, S), WK_F64, -1, 1, seed++);
    TU_OK(wk_tensor_set_requires_grad(q, true));
    TU_OK(wk_tensor_set_requires_grad(k, true));
    TU_OK(wk_tensor_set_requires_grad(v, true));
    if (fm) TU_OK(wk_tensor_set_requires_grad(fm, true));
    wk_tensor *m = bm ? bm : fm;
    wk_tensor *y1 = sdpa(q, k, v, m, 0, causal && !m, it % 2 ? 0.7 : 0);
    wk_tensor *y2 = sdpa_composite(q, k, v, bm, fm, causal && !m, scale);
    TU_NOTNULL(y1);
    TU_NOTNULL(y2);
    double *ref = tu_values(y2);
    TU_CLOSE(y1, ref, wk_tensor_numel(y2), 1e-12, 1e-12);
    free(ref);
    wk_tensor *g = tu_rand(wk_tensor_sizes(y1), wk_tensor_dim(y1), WK_F64, -1, 1, seed++);
    wk_tensor *in[4] = {q, k, v, fm};
    wk_tensor *g1[4] = {0}, *g2[4] = {0};
    int nin = fm ? 4 : 3;
    wk_tensor *l1 = wk_sum(wk_mul(y1, g)), *l2 = wk_sum(wk_mul(y2, g));
    TU_OK(wk_grad(&l1, 1, NULL, in, nin, g1, NULL, false));
    TU_OK(wk_grad(&l2, 1, NULL, in, nin, g2, NULL, false));
    for (int i = 0; i < nin; i++) {
      double *r2 = tu_values(g2[i]);
      TU_CLOSE(g1[i], r2, wk_tensor_numel(g2[i]), 1e-11, 1e-11);
      free(r2);
      wk_release(g1[i]);
      wk_release(g2[i]);
    }
    wk_scope_end();
  }
}
END_TEST

/* The core's composite kernel (what devices without a fused kernel run, such
 * as cuda) against the cpu's fused one, called directly, forward and backward,
 * with dropout: both draw the same Philox stream. */
static int kernel_index(wk_op *op, const char *name) {
  for (int i = 0; i < wk_op_num_kernels(op); i++) {
    int32_t dev, prio;
    const char *nm, *pl;
    TU_OK(wk_op_kernel_info(op, i, &dev, &prio, &nm, &pl));
    if (nm && strstr(nm, name)) return i;
  }
  ck_abort_msg("op %s has no kernel %s", wk_op_name(op), name);
  return -1;
}

START_TEST(test_sdpa_composite_kernel_matches_fused) {
  wk_op *op = wk_op_find("scaled_dot_product_attention"), *bop = wk_op_find("scaled_dot_product_attention_backward");
  TU_NOTNULL(op);
  TU_NOTNULL(bop);
  int kc = kernel_index(op, "composite"), kbc = kernel_index(bop, "composite");
  int kf = kc == 0 ? 1 : 0, kbf = kbc == 0 ? 1 : 0;
  for (int mode = 0; mode < 4; mode++) {
    wk_scope_begin();
    wk_tensor *q = tu_rand(WK_SHAPE(2, 2, 9, 4), WK_F64, -1, 1, 11), *k = tu_rand(WK_SHAPE(2, 2, 13, 4), WK_F64, -1, 1, 12);
    wk_tensor *v = tu_rand(WK_SHAPE(2, 2, 13, 3), WK_F64, -1, 1, 13);
    wk_tensor *fm = mode == 2 ? tu_rand(WK_SHAPE(9, 13), WK_F64, -1, 1, 14) : NULL;
    double p = mode == 3 ? 0.4 : 0;
    bool causal = mode == 1;
    wk_value a[7] = {WK_VT(q), WK_VT(k), WK_VT(v), fm ? WK_VT(fm) : WK_VNONE, WK_VF(p), WK_VB(causal), WK_VNONE};
    wk_value of[3], oc[3];
    wk_manual_seed(5);
    TU_OK(wk_op_call_kernel(op, kf, a, 7, of));
    wk_manual_seed(5);
    TU_OK(wk_op_call_kernel(op, kc, a, 7, oc));
    for (int i = 0; i < 3; i++) {
      double *r = tu_values(oc[i].u.t);
      TU_CLOSE(of[i].u.t, r, wk_tensor_numel(oc[i].u.t), 1e-12, 1e-12);
      free(r);
    }
    wk_tensor *go = tu_rand(WK_SHAPE(2, 2, 9, 3), WK_F64, -1, 1, 15);
    int64_t om[4] = {1, 1, 1, 1};
    wk_value b[12] = {WK_VT(go),         WK_VT(q),       WK_VT(k),         WK_VT(v),
                      a[3],              WK_VT(of[0].u.t), WK_VT(of[1].u.t), WK_VT(of[2].u.t),
                      WK_VF(p),          WK_VB(causal),  WK_VNONE,         WK_VINTS(om, 4)};
    wk_value gf[4], gc[4];
    TU_OK(wk_op_call_kernel(bop, kbf, b, 12, gf));
    TU_OK(wk_op_call_kernel(bop, kbc, b, 12, gc));
    for (int i = 0; i < 4; i++) {
      ck_assert_int_eq(gf[i].tag, gc[i].tag);
      if (gf[i].tag != WK_V_TENSOR) continue;
      double *r = tu_values(gc[i].u.t);
      TU_CLOSE(gf[i].u.t, r, wk_tensor_numel(gc[i].u.t), 1e-11, 1e-11);
      free(r);
      wk_release(gf[i].u.t);
      wk_release(gc[i].u.t);
    }
    ck_assert_int_eq(gf[3].tag, mode == 2 ? WK_V_TENSOR : WK_V_NONE);
    for (int i = 0; i < 3; i++) {
      wk_release(of[i].u.t);
      wk_release(oc[i].u.t);
    }
    wk_scope_end();
  }
}
END_TEST

/* gradcheck by central differences, with dropout: every evaluation reseeds,
 * so the same elements drop (the backward regenerates them from the state). */
typedef struct {
  wk_tensor *bmask;
  double p;
  bool causal;
} gc_ctx;
static wk_tensor *gc_fn(void *ctx, wk_tensor *const *in, int n) {
  const gc_ctx *g = ctx;
  wk_manual_seed(99);
  return sdpa(in[0], in[1], in[2], n > 3 ? in[3] : g->bmask, g->p, g->causal, 0);
}

START_TEST(test_sdpa_gradcheck) {
  wk_scope_begin();
  gc_ctx cfg[4] = {{NULL, 0, false}, {NULL, 0, true}, {NULL, 0.3, false}, {NULL, 0.25, true}};
  for (int ci = 0; ci < 5; ci++) {
    wk_tensor *q = tu_rand(WK_SHAPE(2, 3, 4), WK_F64, -1, 1, 21 + ci), *k = tu_rand(WK_SHAPE(2, 5, 4), WK_F64, -1, 1, 31);
    wk_tensor *v = tu_rand(WK_SHAPE(2, 5, 3), WK_F64, -1, 1, 41), *fm = tu_rand(WK_SHAPE(3, 5), WK_F64, -1, 1, 51);
    wk_tensor *in[4] = {q, k, v, fm};
    for (int i = 0; i < 4; i++) TU_OK(wk_tensor_set_requires_grad(in[i], true));
    gc_ctx c = ci < 4 ? cfg[ci] : (gc_ctx){NULL, 0.2, false};
    wk_gradcheck_opts o = {.eps = 1e-6, .atol = 1e-7, .rtol = 1e-5, .seed = (uint64_t)ci};
    TU_OK(wk_gradcheck(gc_fn, &c, in, ci == 4 ? 4 : 3, &o));
  }
  wk_scope_end();
}
END_TEST

/* Dropout: the expected fraction is dropped, kept weights are scaled by
 * 1/(1-p) (so with v = I the output rows are the dropped probabilities), the
 * same seed gives the same result, p = 1 gives zeros. */
START_TEST(test_sdpa_dropout) {
  wk_scope_begin();
  int64_t L = 64, S = 64;
  wk_tensor *q = wk_zeros(WK_SHAPE(1, L, 8), (wk_options){.dtype = WK_F64});
  wk_tensor *k = wk_zeros(WK_SHAPE(1, S, 8), (wk_options){.dtype = WK_F64});
  wk_tensor *v = wk_eye(S, S, (wk_options){.dtype = WK_F64});
  v = wk_unsqueeze(v, 0);
  wk_manual_seed(3);
  wk_tensor *y = sdpa(q, k, v, NULL, 0.25, false, 0);
  wk_manual_seed(3);
  wk_tensor *y2 = sdpa(q, k, v, NULL, 0.25, false, 0);
  double *a = tu_values(y), *b = tu_values(y2);
  int64_t zeros = 0;
  for (int64_t i = 0; i < L * S; i++) {
    ck_assert(a[i] == b[i]);
    if (a[i] == 0) zeros++;
    else ck_assert_msg(fabs(a[i] - (1.0 / S) / 0.75) < 1e-15, "kept weight %g", a[i]);
  }
  free(a);
  free(b);
  double frac = (double)zeros / (double)(L * S);
  ck_assert_msg(frac > 0.22 && frac < 0.28, "dropped fraction %g", frac);
  wk_tensor *y3 = sdpa(q, k, v, NULL, 0.25, false, 0); /* the generator moved on */
  double *c3 = tu_values(y3), *c1 = tu_values(y);
  ck_assert(memcmp(c3, c1, sizeof(double) * (size_t)(L * S)) != 0);
  free(c3);
  free(c1);
  wk_tensor *z = sdpa(q, k, v, NULL, 1.0, false, 0);
  double *zz = tu_values(z);
  for (int64_t i = 0; i < L * S; i++) ck_assert(zz[i] == 0);
  free(zz);
  wk_scope_end();
}
END_TEST

START_TEST(test_sdpa_half_and_empty) {
  wk_scope_begin();
  const lr_case *c = lr_case_get("sdpa_basic");
  wk_tensor *q = lr_t(c, "q", WK_BF16), *k = lr_t(c, "k", WK_BF16), *v = lr_t(c, "v", WK_BF16);
  wk_tensor *y = sdpa(q, k, v, NULL, 0, false, 0);
  TU_NOTNULL(y);
  ck_assert_int_eq(wk_tensor_dtype(y), WK_BF16);
  LR_CLOSE(y, c, "y", 3e-2);
  /* empty batch and empty key set */
  wk_tensor *e = sdpa(wk_zeros(WK_SHAPE(0, 3, 4), (wk_options){0}), wk_zeros(WK_SHAPE(0, 5, 4), (wk_options){0}),
                      wk_zeros(WK_SHAPE(0, 5, 2), (wk_options){0}), NULL, 0, false, 0);
  TU_NOTNULL(e);
  ck_assert_int_eq(wk_tensor_numel(e), 0);
  /* a row with every key masked is NaN, as softmax over -inf in PyTorch */
  wk_tensor *m = wk_ones(WK_SHAPE(2, 3), (wk_options){.dtype = WK_BOOL});
  TU_NOTNULL(wk_fill_(wk_select(m, 0, 1), 0.0));
  wk_tensor *n = sdpa(tu_rand(WK_SHAPE(2, 4), WK_F32, -1, 1, 1), tu_rand(WK_SHAPE(3, 4), WK_F32, -1, 1, 2),
                      tu_rand(WK_SHAPE(3, 2), WK_F32, -1, 1, 3), m, 0, false, 0);
  double *nv = tu_values(n);
  ck_assert(!isnan(nv[0]) && !isnan(nv[1]) && isnan(nv[2]) && isnan(nv[3]));
  free(nv);
  /* meta device: shapes only */
  wk_options mo = {.device = {WK_DEVICE_META, 0}};
  wk_tensor *mq = wk_empty(WK_SHAPE(2, 7, 4), mo), *mk = wk_empty(WK_SHAPE(2, 9, 4), mo), *mv = wk_empty(WK_SHAPE(2, 9, 6), mo);
  wk_tensor *lse = NULL;
  wk_tensor *my = wkx_scaled_dot_product_attention(mq, mk, mv, NULL, 0.0, false, NULL, &lse, NULL);
  TU_NOTNULL(my);
  ck_assert_int_eq(wk_tensor_size(my, 2), 6);
  ck_assert_int_eq(wk_tensor_dim(lse), 2);
  ck_assert_int_eq(wk_tensor_size(lse, 1), 7);
  wk_scope_end();
}
END_TEST

START_TEST(test_sdpa_errors) {
  wk_scope_begin();
  wk_options f = {.dtype = WK_F32};
  wk_tensor *q = wk_zeros(WK_SHAPE(2, 3, 4), f), *k = wk_zeros(WK_SHAPE(2, 5, 4), f), *v = wk_zeros(WK_SHAPE(2, 5, 6), f);
  ck_assert_ptr_null(sdpa(q, wk_zeros(WK_SHAPE(2, 5, 3), f), v, NULL, 0, false, 0));
  TU_FAILS_WITH(WK_ERR_SHAPE, "expected query [..., L, E], key [..., S, E]");
  ck_assert_ptr_null(sdpa(q, k, wk_zeros(WK_SHAPE(2, 4, 6), f), NULL, 0, false, 0));
  TU_FAILS_WITH(WK_ERR_SHAPE, "scaled_dot_product_attention");
  ck_assert_ptr_null(sdpa(q, k, wk_zeros(WK_SHAPE(2, 5, 6), (wk_options){.dtype = WK_F64}), NULL, 0, false, 0));
  TU_FAILS_WITH(WK_ERR_DTYPE, "same dtype");
  wk_options i64 = {.dtype = WK_I64};
  ck_assert_ptr_null(sdpa(wk_zeros(WK_SHAPE(3, 4), i64), wk_zeros(WK_SHAPE(5, 4), i64), wk_zeros(WK_SHAPE(5, 4), i64),
                          NULL, 0, false, 0));
  TU_FAILS_WITH(WK_ERR_DTYPE, "floating point");
  ck_assert_ptr_null(sdpa(q, k, v, NULL, 1.5, false, 0));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "dropout probability");
  wk_tensor *bm = wk_ones(WK_SHAPE(3, 5), (wk_options){.dtype = WK_BOOL});
  ck_assert_ptr_null(sdpa(q, k, v, bm, 0, true, 0));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "should not be set when is_causal=True");
  ck_assert_ptr_null(sdpa(q, k, v, wk_ones(WK_SHAPE(4, 5), (wk_options){.dtype = WK_BOOL}), 0, false, 0));
  TU_FAILS_WITH(WK_ERR_SHAPE, "cannot be broadcast");
  ck_assert_ptr_null(sdpa(q, k, v, wk_zeros(WK_SHAPE(3, 5), i64), 0, false, 0));
  TU_FAILS_WITH(WK_ERR_DTYPE, "attn_mask dtype");
  ck_assert_ptr_null(sdpa(q, k, v, wk_zeros(WK_SHAPE(3, 5), (wk_options){.dtype = WK_F64}), 0, false, 0));
  TU_FAILS_WITH(WK_ERR_DTYPE, "attn_mask dtype");
  ck_assert_ptr_null(sdpa(wk_zeros(WK_SHAPE(4), f), wk_zeros(WK_SHAPE(4), f), wk_zeros(WK_SHAPE(4), f), NULL, 0, false, 0));
  TU_FAILS_WITH(WK_ERR_SHAPE, "scaled_dot_product_attention");
  ck_assert_ptr_null(sdpa(NULL, k, v, NULL, 0, false, 0));
  ck_assert_int_ne(wk_last_error(), WK_OK);
  wk_clear_error();
  /* the backward op checks what it is handed */
  wk_tensor *lse = NULL, *rng = NULL;
  wk_tensor *y = wkx_scaled_dot_product_attention(q, k, v, NULL, 0.0, false, NULL, &lse, &rng);
  TU_NOTNULL(y);
  int64_t om[4] = {1, 1, 1, 0};
  ck_assert_ptr_null(wkx_scaled_dot_product_attention_backward(wk_zeros(WK_SHAPE(2, 3, 5), f), q, k, v, NULL, y, lse,
                                                               rng, 0.0, false, NULL, om, 4, NULL, NULL, NULL));
  TU_FAILS_WITH(WK_ERR_SHAPE, "grad_out");
  ck_assert_ptr_null(wkx_scaled_dot_product_attention_backward(y, q, k, v, NULL, y, lse, rng, 0.5, false, NULL, om, 4,
                                                               NULL, NULL, NULL));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "rng_state");
  ck_assert_ptr_null(wkx_scaled_dot_product_attention_backward(y, q, k, v, NULL, y, lse, rng, 0.0, false, NULL, om, 3,
                                                               NULL, NULL, NULL));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "output_mask");
  wk_scope_end();
}
END_TEST

/* ---- MultiheadAttention ---- */
START_TEST(test_mha_matches_torch) {
  static const struct {
    const char *name;
    int64_t E, H;
    wk_mha_opts o;
    bool self, weights, average;
  } cs[] = {{"mha_self", 8, 2, {0}, true, true, true},
            {"mha_cross_bf", 8, 2, {.batch_first = true}, false, true, false},
            {"mha_mask3d_nobias", 8, 4, {.no_bias = true}, false, false, false},
            {"mha_kvdim", 8, 2, {.kdim = 5, .vdim = 3}, false, true, true},
            {"mha_bias_kv_zero_attn_bf", 8, 2, {.batch_first = true, .add_bias_kv = true, .add_zero_attn = true}, false,
             true, false},
            {"mha_kvdim_bias_kv_boolmask", 8, 2, {.kdim = 5, .vdim = 7, .add_bias_kv = true}, false, false, false},
            {"mha_zero_attn_nobias", 8, 4, {.add_zero_attn = true, .no_bias = true}, false, true, true}};
  for (int dti = 0; dti < 2; dti++)
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
      wk_dtype dt = dti ? WK_F32 : WK_F64;
      double tol = dti ? F32_TOL : F64_TOL;
      wk_scope_begin();
      const lr_case *c = lr_case_get(cs[i].name);
      wk_module *m = wk_nn_multihead_attention(cs[i].E, cs[i].H, cs[i].o);
      lr_load(m, c, dt);
      wk_tensor *q = lr_leaf(c, "q", dt), *k = cs[i].self ? q : lr_leaf(c, "k", dt), *v = cs[i].self ? q : lr_leaf(c, "v", dt);
      wk_attn_masks mk = {.no_average_attn_weights = !cs[i].average};
      const lr_tensor *kr = lr_find(c, "kpm"), *ar = lr_find(c, "am");
      if (kr) mk.key_padding_mask = lr_bool(c, "kpm");
      if (ar) mk.attn_mask = lr_find(c, "g.am") ? lr_leaf(c, "am", dt) : lr_bool(c, "am");
      wk_tensor *w = NULL;
      wk_tensor *y = wk_nn_mha_forward(m, q, k, v, &mk, cs[i].weights ? &w : NULL);
      LR_CLOSE(y, c, "y", tol);
      if (cs[i].weights) LR_CLOSE(w, c, "w", tol);
      TU_OK(wk_backward(lr_dot(c, "gy", y)));
      LR_CLOSE(wk_tensor_grad(q), c, "g.q", tol);
      if (!cs[i].self) {
        LR_CLOSE(wk_tensor_grad(k), c, "g.k", tol);
        LR_CLOSE(wk_tensor_grad(v), c, "g.v", tol);
      }
      if (mk.attn_mask && lr_find(c, "g.am")) LR_CLOSE(wk_tensor_grad(mk.attn_mask), c, "g.am", tol);
      lr_param_grads(m, c, tol);
      wk_release(w);
      wk_module_release(m);
      wk_scope_end();
    }
}
END_TEST

START_TEST(test_mha_module_forward_and_errors) {
  wk_scope_begin();
  const lr_case *c = lr_case_get("mha_self");
  wk_module *m = wk_nn_multihead_attention(8, 2, (wk_mha_opts){0});
  lr_load(m, c, WK_F64);
  wk_tensor *x = lr_t(c, "q", WK_F64);
  LR_CLOSE(wk_module_forward(m, x), c, "y", F64_TOL); /* key and value default to query */
  LR_CLOSE(wk_module_forward_n(m, (wk_tensor *[]){x, x, x}, 3), c, "y", F64_TOL);
  /* unbatched (L, E): batch 0 of the batched result */
  wk_tensor *y0 = wk_module_forward(m, wk_select(x, 1, 0));
  wk_tensor *yb = wk_select(wk_module_forward(m, x), 1, 0);
  double *rb = tu_values(yb);
  TU_CLOSE(y0, rb, wk_tensor_numel(yb), 1e-12, 1e-12);
  free(rb);
  /* state dict keys are PyTorch's */
  const char *names[8];
  ck_assert_int_eq(wk_module_named_parameters(m, names, NULL, 8), 4);
  ck_assert_str_eq(names[0], "in_proj_weight");
  ck_assert_str_eq(names[1], "in_proj_bias");
  ck_assert_str_eq(names[2], "out_proj.weight");
  ck_assert_str_eq(names[3], "out_proj.bias");
  lr_repr_eq(wk_nn_multihead_attention(8, 2, (wk_mha_opts){0}), "mha");
  /* errors */
  ck_assert_ptr_null(wk_nn_multihead_attention(8, 3, (wk_mha_opts){0}));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "divisible by num_heads");
  ck_assert_ptr_null(wk_nn_multihead_attention(0, 1, (wk_mha_opts){0}));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "must be positive");
  ck_assert_ptr_null(wk_nn_multihead_attention(8, 2, (wk_mha_opts){.kdim = -1}));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "kdim and vdim must be positive");
  {
    /* kdim/vdim: separate projection weights (in_proj_weight is None), bias_k/bias_v [1, 1, E]; the key's features are checked */
    wk_module *kv = wk_nn_multihead_attention(8, 2, (wk_mha_opts){.kdim = 5, .vdim = 3, .add_bias_kv = true});
    TU_NOTNULL(kv);
    ck_assert_ptr_null(wk_module_param(kv, "in_proj_weight"));
    wk_clear_error();
    ck_assert_int_eq(wk_tensor_size(wk_module_param(kv, "k_proj_weight"), 1), 5);
    ck_assert_int_eq(wk_tensor_size(wk_module_param(kv, "v_proj_weight"), 1), 3);
    ck_assert_int_eq(wk_tensor_dim(wk_module_param(kv, "bias_k")), 3);
    wk_tensor *q8 = wk_zeros(WK_SHAPE(4, 2, 8), (wk_options){0}), *k8 = wk_zeros(WK_SHAPE(6, 2, 8), (wk_options){0});
    wk_tensor *v3 = wk_zeros(WK_SHAPE(6, 2, 3), (wk_options){0});
    ck_assert_ptr_null(wk_nn_mha_forward(kv, q8, k8, v3, NULL, NULL));
    TU_FAILS_WITH(WK_ERR_SHAPE, "MultiheadAttention(embed_dim=8, kdim=5, vdim=3): expected query (N, L, 8), key (N, S, 5)");
    wk_module_release(kv);
  }
  ck_assert_ptr_null(wk_module_forward(m, wk_zeros(WK_SHAPE(5, 3, 7), (wk_options){.dtype = WK_F64})));
  TU_FAILS_WITH(WK_ERR_SHAPE, "MultiheadAttention(embed_dim=8)");
  ck_assert_ptr_null(wk_module_forward(m, wk_zeros(WK_SHAPE(8), (wk_options){.dtype = WK_F64})));
  TU_FAILS_WITH(WK_ERR_SHAPE, "unbatched 2D or batched 3D");
  ck_assert_ptr_null(wk_module_forward_n(m, (wk_tensor *[]){x, x}, 2));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "takes (query");
  wk_attn_masks bad = {.key_padding_mask = wk_zeros(WK_SHAPE(3, 4), (wk_options){.dtype = WK_BOOL})};
  ck_assert_ptr_null(wk_nn_mha_forward(m, x, x, x, &bad, NULL));
  TU_FAILS_WITH(WK_ERR_SHAPE, "key_padding_mask shape");
  bad = (wk_attn_masks){.attn_mask = wk_zeros(WK_SHAPE(5, 4), (wk_options){.dtype = WK_BOOL})};
  ck_assert_ptr_null(wk_nn_mha_forward(m, x, x, x, &bad, NULL));
  TU_FAILS_WITH(WK_ERR_SHAPE, "The shape of the attn_mask");
  bad = (wk_attn_masks){.attn_mask = wk_zeros(WK_SHAPE(5, 5), (wk_options){.dtype = WK_I64})};
  ck_assert_ptr_null(wk_nn_mha_forward(m, x, x, x, &bad, NULL));
  TU_FAILS_WITH(WK_ERR_DTYPE, "bool and floating");
  wk_tensor *w = x;
  ck_assert_ptr_null(wk_nn_mha_forward(m, x, NULL, x, NULL, &w));
  ck_assert_ptr_null(w);
  TU_FAILS_WITH(WK_ERR_NULL, "key");
  wk_module *lin = wk_nn_linear(2, 2, true);
  ck_assert_ptr_null(wk_nn_mha_forward(lin, x, x, x, NULL, NULL));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "expected a MultiheadAttention");
  wk_module_release(lin);
  wk_module_release(m);
  wk_scope_end();
}
END_TEST

/* ---- Transformer layers ---- */
typedef struct {
  const char *name;
  bool decoder, stack;
  int64_t d, nhead;
  wk_transformer_opts o;
} tl_ref;
static const tl_ref TL_CASES[] = {
    {"enc_post_relu", false, false, 8, 2, {.dim_feedforward = 16, .dropout = WK_NN_ZERO}},
    {"enc_pre_gelu_bf", false, false, 8, 2,
     {.dim_feedforward = 16, .dropout = WK_NN_ZERO, .activation = "gelu", .norm_first = true, .batch_first = true,
      .layer_norm_eps = 1e-6}},
    {"dec_post", true, false, 8, 2, {.dim_feedforward = 16, .dropout = WK_NN_ZERO}},
    {"dec_pre_gelu_bf", true, false, 8, 4,
     {.dim_feedforward = 12, .dropout = WK_NN_ZERO, .activation = "gelu", .norm_first = true, .batch_first = true}},
    {"encoder_stack", false, true, 8, 2, {.dim_feedforward = 16, .dropout = WK_NN_ZERO}},
    {"decoder_stack", true, true, 8, 2, {.dim_feedforward = 16, .dropout = WK_NN_ZERO, .norm_first = true}},
};

/* A mask input: bool ones stay bool, float ones require grad when PyTorch
 * differentiated them. */
static wk_tensor *mask_in(const lr_case *c, const char *name, wk_dtype dt, bool is_bool) {
  if (!lr_find(c, name)) return NULL;
  if (is_bool) return lr_bool(c, name);
  char g[64];
  snprintf(g, sizeof g, "g.%s", name);
  return lr_find(c, g) ? lr_leaf(c, name, dt) : lr_t(c, name, dt);
}

static wk_module *make_layer(const tl_ref *r) {
  if (!r->stack)
    return r->decoder ? wk_nn_transformer_decoder_layer(r->d, r->nhead, r->o)
                      : wk_nn_transformer_encoder_layer(r->d, r->nhead, r->o);
  wk_module *layer = r->decoder ? wk_nn_transformer_decoder_layer(r->d, r->nhead, r->o)
                                : wk_nn_transformer_encoder_layer(r->d, r->nhead, r->o);
  wk_module *norm = wk_nn_layer_norm(WK_SHAPE(8), (wk_norm_opts){0});
  wk_module *stack = r->decoder ? wk_nn_transformer_decoder(layer, 2, norm) : wk_nn_transformer_encoder(layer, 2, norm);
  wk_module_release(layer);
  return stack;
}

START_TEST(test_transformer_layers_match_torch) {
  for (int dti = 0; dti < 2; dti++)
    for (size_t i = 0; i < sizeof TL_CASES / sizeof TL_CASES[0]; i++) {
      const tl_ref *r = &TL_CASES[i];
      wk_dtype dt = dti ? WK_F32 : WK_F64;
      double tol = dti ? F32_TOL : F64_TOL;
      wk_scope_begin();
      const lr_case *c = lr_case_get(r->name);
      wk_module *m = make_layer(r);
      lr_load(m, c, dt);
      TU_OK(wk_module_train(m, true));
      wk_attn_masks mk = {0};
      wk_tensor *x = lr_leaf(c, r->decoder ? "tgt" : "src", dt), *mem = NULL;
      if (r->decoder) {
        mem = lr_leaf(c, "memory", dt);
        mk.attn_mask = mask_in(c, "tgt_mask", dt, !strcmp(r->name, "dec_post"));
        mk.memory_mask = mask_in(c, "memory_mask", dt, false);
        mk.key_padding_mask = mask_in(c, "tgt_key_padding_mask", dt, true);
        mk.memory_key_padding_mask = mask_in(c, "memory_key_padding_mask", dt, true);
      } else {
        mk.attn_mask = mask_in(c, r->stack ? "mask" : "src_mask", dt, false);
        mk.key_padding_mask = mask_in(c, "src_key_padding_mask", dt, true);
      }
      wk_tensor *y = wk_nn_transformer_forward(m, x, mem, &mk);
      LR_CLOSE(y, c, "y", tol);
      TU_OK(wk_backward(lr_dot(c, "gy", y)));
      LR_CLOSE(wk_tensor_grad(x), c, r->decoder ? "g.tgt" : "g.src", tol);
      if (mem) LR_CLOSE(wk_tensor_grad(mem), c, "g.memory", tol);
      if (mk.memory_mask) LR_CLOSE(wk_tensor_grad(mk.memory_mask), c, "g.memory_mask", tol);
      lr_param_grads(m, c, tol);
      wk_module_release(m);
      wk_scope_end();
    }
}
END_TEST

/* nn.Transformer (encoder-decoder) against PyTorch 1.13.1: output and every gradient. */
START_TEST(test_transformer_model_matches_torch) {
  static const struct {
    const char *name;
    int64_t nhead, ne, nd;
    wk_transformer_opts o;
  } cs[] = {{"transformer_post", 2, 2, 1, {.dim_feedforward = 16, .dropout = WK_NN_ZERO}},
            {"transformer_pre_gelu_bf", 4, 1, 2,
             {.dim_feedforward = 12, .dropout = WK_NN_ZERO, .activation = "gelu", .norm_first = true,
              .batch_first = true}}};
  for (int dti = 0; dti < 2; dti++)
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
      wk_dtype dt = dti ? WK_F32 : WK_F64;
      double tol = dti ? F32_TOL : F64_TOL;
      wk_scope_begin();
      const lr_case *c = lr_case_get(cs[i].name);
      wk_module *m = wk_nn_transformer(8, cs[i].nhead, cs[i].ne, cs[i].nd, cs[i].o);
      TU_NOTNULL(m);
      lr_load(m, c, dt);
      TU_OK(wk_module_train(m, true));
      wk_tensor *src = lr_leaf(c, "src", dt), *tgt = lr_leaf(c, "tgt", dt);
      wk_attn_masks mk = {.src_mask = mask_in(c, "src_mask", dt, false),
                          .attn_mask = mask_in(c, "tgt_mask", dt, false),
                          .memory_mask = mask_in(c, "memory_mask", dt, false),
                          .src_key_padding_mask = mask_in(c, "src_key_padding_mask", dt, true),
                          .memory_key_padding_mask = mask_in(c, "memory_key_padding_mask", dt, true)};
      wk_tensor *y = wk_nn_transformer_model_forward(m, src, tgt, &mk);
      LR_CLOSE(y, c, "y", tol);
      TU_OK(wk_backward(lr_dot(c, "gy", y)));
      LR_CLOSE(wk_tensor_grad(src), c, "g.src", tol);
      LR_CLOSE(wk_tensor_grad(tgt), c, "g.tgt", tol);
      if (mk.src_mask) LR_CLOSE(wk_tensor_grad(mk.src_mask), c, "g.src_mask", tol);
      if (mk.memory_mask) LR_CLOSE(wk_tensor_grad(mk.memory_mask), c, "g.memory_mask", tol);
      lr_param_grads(m, c, tol);
      wk_module_release(m);
      wk_scope_end();
    }
  /* construction, xavier_uniform_ init, module forward, bad arguments */
  wk_scope_begin();
  wk_module *m = wk_nn_transformer(8, 2, 1, 1, (wk_transformer_opts){.dim_feedforward = 16});
  TU_NOTNULL(m);
  TU_NOTNULL(wk_module_param(m, "encoder.norm.weight"));
  TU_NOTNULL(wk_module_param(m, "decoder.layers.0.multihead_attn.in_proj_weight"));
  double *w = tu_values(wk_module_param(m, "encoder.layers.0.linear1.weight")); /* [16, 8]: U(+-sqrt(6 / 24)) */
  double lim = sqrt(6.0 / 24.0), mx = 0;
  for (int i = 0; i < 128; i++) mx = fabs(w[i]) > mx ? fabs(w[i]) : mx;
  free(w);
  ck_assert(mx <= lim && mx > 0.8 * lim);
  wk_tensor *a = wk_zeros(WK_SHAPE(5, 2, 8), (wk_options){0}), *b3 = wk_zeros(WK_SHAPE(4, 3, 8), (wk_options){0});
  ck_assert_ptr_null(wk_nn_transformer_model_forward(m, a, b3, NULL));
  TU_FAILS_WITH(WK_ERR_SHAPE, "the batch number of src and tgt must be equal");
  ck_assert_ptr_null(wk_nn_transformer_model_forward(m, a, wk_zeros(WK_SHAPE(4, 2, 6), (wk_options){0}), NULL));
  TU_FAILS_WITH(WK_ERR_SHAPE, "the feature number of src and tgt must be equal to d_model (8)");
  ck_assert_ptr_null(wk_nn_transformer_model_forward(m, NULL, a, NULL));
  TU_FAILS_WITH(WK_ERR_NULL, "src");
  ck_assert_ptr_null(wk_module_forward(m, a));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "Transformer.forward() takes (src, tgt");
  wk_tensor *t2 = tu_rand(WK_SHAPE(3, 2, 8), WK_F32, -1, 1, 5);
  TU_OK(wk_module_train(m, false));
  wk_tensor *y1 = wk_module_forward_n(m, (wk_tensor *[]){a, t2}, 2), *y2 = wk_nn_transformer_model_forward(m, a, t2, NULL);
  double *v2 = tu_values(y2);
  TU_CLOSE(y1, v2, 48, 0, 0); /* module forward (src, tgt) is the same call */
  free(v2);
  ck_assert_ptr_null(wk_nn_transformer(8, 2, 0, 1, (wk_transformer_opts){0}));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "num_encoder_layers");
  wk_module_release(m);
  wk_scope_end();
}
END_TEST

START_TEST(test_transformer_module_forward_repr_errors) {
  wk_scope_begin();
  const lr_case *c = lr_case_get("enc_pre_gelu_bf");
  wk_module *m = make_layer(&TL_CASES[1]);
  lr_load(m, c, WK_F64);
  wk_tensor *src = lr_t(c, "src", WK_F64);
  LR_CLOSE(wk_module_forward_n(m, (wk_tensor *[]){src, lr_t(c, "src_mask", WK_F64)}, 2), c, "y", F64_TOL);
  /* eval: dropout off, same numbers with dropout 0; with dropout 0.5 eval is deterministic */
  wk_module *d = wk_nn_transformer_encoder_layer(8, 2, (wk_transformer_opts){.dim_feedforward = 16, .dropout = 0.5});
  TU_OK(wk_module_train(d, false));
  wk_tensor *x = tu_rand(WK_SHAPE(4, 2, 8), WK_F32, -1, 1, 3);
  double *a = tu_values(wk_module_forward(d, x)), *b = tu_values(wk_module_forward(d, x));
  ck_assert(memcmp(a, b, sizeof(double) * 64) == 0);
  free(a);
  free(b);
  TU_OK(wk_module_train(d, true));
  a = tu_values(wk_module_forward(d, x));
  b = tu_values(wk_module_forward(d, x));
  ck_assert(memcmp(a, b, sizeof(double) * 64) != 0);
  free(a);
  free(b);
  /* decoder module forward (tgt, memory) */
  const lr_case *dc = lr_case_get("dec_pre_gelu_bf");
  wk_module *dec = make_layer(&TL_CASES[3]);
  lr_load(dec, dc, WK_F64);
  LR_CLOSE(wk_module_forward_n(dec, (wk_tensor *[]){lr_t(dc, "tgt", WK_F64), lr_t(dc, "memory", WK_F64),
                                                    wk_zeros(WK_SHAPE(4, 4), (wk_options){.dtype = WK_F64}),
                                                    lr_t(dc, "memory_mask", WK_F64)},
                               4),
           dc, "y", F64_TOL);
  ck_assert_ptr_null(wk_module_forward(dec, src));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "TransformerDecoderLayer.forward() takes (tgt, memory");
  ck_assert_ptr_null(wk_nn_transformer_forward(dec, src, NULL, NULL));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "memory is required");
  ck_assert_ptr_null(wk_nn_transformer_forward(m, src, src, NULL));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "takes no memory");
  /* PyTorch's names and printout */
  const char *names[64];
  int n = wk_module_named_parameters(dec, names, NULL, 64);
  ck_assert_int_eq(n, 18);
  ck_assert_str_eq(names[0], "self_attn.in_proj_weight");
  ck_assert_str_eq(names[4], "multihead_attn.in_proj_weight");
  ck_assert_str_eq(names[8], "linear1.weight");
  ck_assert_str_eq(names[17], "norm3.bias");
  lr_repr_eq(wk_nn_transformer_encoder_layer(8, 2, (wk_transformer_opts){.dim_feedforward = 16}), "enc");
  lr_repr_eq(wk_nn_transformer_decoder_layer(8, 2, (wk_transformer_opts){.dim_feedforward = 16, .norm_first = true}),
             "dec");
  /* TransformerEncoder copies the layer's weights into every layer */
  wk_module *stack = wk_nn_transformer_encoder(m, 3, NULL);
  TU_NOTNULL(stack);
  wk_tensor *w0 = wk_module_param(stack, "layers.0.linear1.weight"), *w2 = wk_module_param(stack, "layers.2.linear1.weight");
  double *v0 = tu_values(w0), *v2 = tu_values(w2), *vm = tu_values(wk_module_param(m, "linear1.weight"));
  ck_assert(memcmp(v0, vm, sizeof(double) * 128) == 0 && memcmp(v2, vm, sizeof(double) * 128) == 0);
  ck_assert_ptr_ne(w0, wk_module_param(m, "linear1.weight"));
  free(v0);
  free(v2);
  free(vm);
  wk_module_release(stack);
  ck_assert_ptr_null(wk_nn_transformer_encoder(dec, 2, NULL));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "expected a TransformerEncoderLayer");
  ck_assert_ptr_null(wk_nn_transformer_decoder(m, 2, NULL));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "TransformerDecoder: expected a TransformerDecoderLayer");
  wk_module *dstack = wk_nn_transformer_decoder(dec, 2, NULL);
  TU_NOTNULL(dstack);
  ck_assert_ptr_null(wk_nn_transformer_forward(dstack, src, NULL, NULL));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "TransformerDecoder.forward(): memory is required");
  ck_assert_ptr_null(wk_module_forward(dstack, src));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "TransformerDecoder.forward() takes (tgt, memory");
  wk_module_release(dstack);
  ck_assert_ptr_null(wk_nn_transformer_encoder(m, 0, NULL));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "num_layers");
  ck_assert_ptr_null(wk_nn_transformer_encoder_layer(8, 2, (wk_transformer_opts){.activation = "tanh"}));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "activation should be relu/gelu");
  ck_assert_ptr_null(wk_nn_transformer_encoder_layer(8, 3, (wk_transformer_opts){0}));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "divisible by num_heads");
  wk_module_release(d);
  wk_module_release(dec);
  wk_module_release(m);
  wk_scope_end();
}
END_TEST

/* PositionalEncoding against the tutorial's module in float32: the table and x + pe[:T]. */
START_TEST(test_positional_encoding) {
  wk_scope_begin();
  const lr_case *c = lr_case_get("positional_encoding");
  wk_module *m = wk_nn_positional_encoding(16, 50, WK_NN_ZERO, false);
  TU_NOTNULL(m);
  LR_CLOSE(wk_module_buffer(m, "pe"), c, "pe", 1e-6);
  wk_tensor *x = lr_t(c, "x", WK_F32);
  LR_CLOSE(wk_module_forward(m, x), c, "y", 1e-6);
  /* batch_first: the same numbers on (N, T, d) */
  wk_module *bf = wk_nn_positional_encoding(16, 50, WK_NN_ZERO, true);
  wk_tensor *yb = wk_transpose(wk_module_forward(bf, wk_transpose(x, 0, 1)), 0, 1);
  LR_CLOSE(wk_contiguous(yb), c, "y", 1e-6);
  /* the state dict holds pe (loads from the tutorial's module) */
  const char *names[4];
  ck_assert_int_eq(wk_module_named_buffers(m, names, NULL, 4), 1);
  ck_assert_str_eq(names[0], "pe");
  lr_repr_eq(wk_nn_positional_encoding(16, 50, 0.2, false), "pe");
  ck_assert_ptr_null(wk_module_forward(m, wk_zeros(WK_SHAPE(51, 1, 16), (wk_options){0})));
  TU_FAILS_WITH(WK_ERR_SHAPE, "at most 50 steps");
  ck_assert_ptr_null(wk_module_forward(m, wk_zeros(WK_SHAPE(5, 1, 15), (wk_options){0})));
  TU_FAILS_WITH(WK_ERR_SHAPE, "PositionalEncoding(d_model=16, max_len=50)");
  ck_assert_ptr_null(wk_nn_positional_encoding(0, 50, 0, false));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "must be positive");
  wk_module_release(bf);
  wk_module_release(m);
  wk_scope_end();
}
END_TEST

static Suite *nn_attention_suite(void) {
  Suite *s = suite_create("nn_attention");
  TCase *tc = tcase_create("sdpa");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_sdpa_matches_torch_f64);
  tcase_add_test(tc, test_sdpa_matches_torch_f32);
  tcase_add_test(tc, test_sdpa_fused_vs_composite_random);
  tcase_add_test(tc, test_sdpa_composite_kernel_matches_fused);
  tcase_add_test(tc, test_sdpa_gradcheck);
  tcase_add_test(tc, test_sdpa_dropout);
  tcase_add_test(tc, test_sdpa_half_and_empty);
  tcase_add_test(tc, test_sdpa_errors);
  suite_add_tcase(s, tc);
  TCase *tm = tcase_create("modules");
  tcase_add_checked_fixture(tm, tu_setup, NULL);
  tcase_set_timeout(tm, 120);
  tcase_add_test(tm, test_mha_matches_torch);
  tcase_add_test(tm, test_mha_module_forward_and_errors);
  tcase_add_test(tm, test_transformer_layers_match_torch);
  tcase_add_test(tm, test_transformer_model_matches_torch);
  tcase_add_test(tm, test_transformer_module_forward_repr_errors);
  tcase_add_test(tm, test_positional_encoding);
  suite_add_tcase(s, tm);
  return s;
}

TU_MAIN(nn_attention_suite)
