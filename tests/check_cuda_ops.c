/* The cuda plugin's own kernels against the cpu ones: pointwise binary and
 * unary ops (type promotion, broadcast, strided, empty, 0-dim cpu operands,
 * Scalar, in-place and out= forms), comparisons, where, reductions over dims
 * with keepdim, softmax, layer_norm, indexing (index_select, gather, scatter,
 * embedding, masked_fill, cat, one_hot, flip, roll, repeat, masked_select,
 * cumsum), losses, the Philox RNG (the same streams as the cpu for one seed),
 * dropout and the fused optimizer updates; forward and gradients through
 * autograd; then every op with a cuda kernel against the cpu on
 * schema-sampled arguments (the device step of the SDK's opcheck).
 *
 * Tolerance: max |cuda - cpu| <= tol * max(1, max |cpu|): f32 1e-5, f64 1e-12,
 * f16 1e-2, bf16 4e-2; integer and bool results exactly. Without a GPU it
 * still checks that every op of its families has a cuda kernel registered,
 * then skips (77) with the plugin's reason. WICK_CUDA_OPS_ON_CPU=1 runs the
 * harness cpu against cpu (to check the test itself without a GPU). */
#include <math.h>
#include <stdlib.h>

#include <wick/sdk/opcheck.h>

#include "cuda_twin.h"
#include "testutil.h"


static double tol_of(wk_dtype dt) {
  switch (dt) {
    case WK_F64:
      return 1e-12;
    case WK_F16:
      return 1e-2;
    case WK_BF16:
      return 4e-2;
    case WK_F32:
      return 1e-5;
    default:
      return 0;
  }
}

/* A non-contiguous twin: the transpose of a fresh [.., b, a] tensor. */
static twin strided(const int64_t *shape, int nd, wk_dtype dt, double lo, double hi, uint64_t seed) {
  int64_t s[WK_MAX_DIMS];
  for (int i = 0; i < nd; i++) s[i] = shape[i];
  s[nd - 2] = shape[nd - 1];
  s[nd - 1] = shape[nd - 2];
  twin t = rnd(s, nd, dt, lo, hi, seed);
  return (twin){wk_transpose(t.c, nd - 2, nd - 1), wk_transpose(t.g, nd - 2, nd - 1)};
}

#define SHAPE(...) (const int64_t[]){__VA_ARGS__}, (int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
#define V2(a, b) \
  (wk_value[]) { \
    a, b         \
  }

static const wk_dtype g_float_dts[] = {WK_F32, WK_F64, WK_F16, WK_BF16};

/* ---- pointwise binary ------------------------------------------------------------------------ */
START_TEST(test_cuda_ops_binary_float) {
  static const char *ops[] = {"add", "sub", "mul", "div", "maximum", "minimum", "pow"};
  for (int k = 0; k < 4; k++) {
    wk_dtype dt = g_float_dts[k];
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
      wk_scope_begin();
      bool pw = strcmp(ops[o], "pow") == 0;
      double lo = pw ? 0.5 : -2, hi = 2;
      char what[96];
      /* same shape, broadcast, strided and empty operands, with gradients */
      twin a = leaf(rnd(SHAPE(3, 4), dt, lo, hi, 1)), b = leaf(rnd(SHAPE(3, 4), dt, 0.5, 2, 2));
      twin l2[2] = {a, b};
      snprintf(what, sizeof what, "%s same shape", wk_dtype_name(dt));
      run_both(ops[o], V2(WK_VT(a.c), WK_VT(b.c)), V2(WK_VT(a.g), WK_VT(b.g)), 2, tol_of(dt), 0, l2, 2, what, 10);
      twin c = leaf(rnd(SHAPE(2, 1, 4), dt, lo, hi, 3)), d = leaf(rnd(SHAPE(3, 1), dt, 0.5, 2, 4));
      twin l2b[2] = {c, d};
      snprintf(what, sizeof what, "%s broadcast", wk_dtype_name(dt));
      run_both(ops[o], V2(WK_VT(c.c), WK_VT(d.c)), V2(WK_VT(c.g), WK_VT(d.g)), 2, tol_of(dt), 0, l2b, 2, what, 10);
      twin e = strided(SHAPE(5, 3), dt, lo, hi, 5), f = strided(SHAPE(5, 3), dt, 0.5, 2, 6);
      snprintf(what, sizeof what, "%s strided", wk_dtype_name(dt));
      run_both(ops[o], V2(WK_VT(e.c), WK_VT(f.c)), V2(WK_VT(e.g), WK_VT(f.g)), 2, tol_of(dt), 0, NULL, 0, what, 10);
      twin z = rnd(SHAPE(0, 4), dt, lo, hi, 7), y = rnd(SHAPE(4), dt, 0.5, 2, 8);
      run_both(ops[o], V2(WK_VT(z.c), WK_VT(y.c)), V2(WK_VT(z.g), WK_VT(y.g)), 2, tol_of(dt), 0, NULL, 0, "empty", 10);
      /* Scalar form, and a cpu 0-dim operand mixed with a cuda tensor */
      char sname[64];
      snprintf(sname, sizeof sname, "%s.Scalar", ops[o]);
      run_both(sname, V2(WK_VT(a.c), WK_VF(1.5)), V2(WK_VT(a.g), WK_VF(1.5)), 2, tol_of(dt), 0, NULL, 0, "Scalar", 10);
      wk_tensor *s0 = wk_scalar_tensor(0.75, WK_F64);
      run_both(ops[o], V2(WK_VT(a.c), WK_VT(s0)), V2(WK_VT(a.g), WK_VT(s0)), 2, tol_of(dt), 0, NULL, 0, "cpu 0-dim", 10);
      wk_scope_end();
    }
  }
}
END_TEST

START_TEST(test_cuda_ops_binary_int_promotion) {
  static const wk_dtype dts[] = {WK_I8, WK_U8, WK_I16, WK_I32, WK_I64, WK_BOOL};
  static const char *ops[] = {"add", "mul", "maximum", "minimum", "div", "logical_and", "logical_or",
                              "eq",  "ne",  "lt",      "le",      "gt",  "ge"};
  for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++)
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
      wk_scope_begin();
      twin a = rnd(SHAPE(4, 5), dts[i], 0, 5, 10 + i), b = rnd(SHAPE(5), dts[i], 1, 5, 20 + i);
      twin f = rnd(SHAPE(4, 1), WK_F32, -3, 3, 30);
      char what[96];
      snprintf(what, sizeof what, "%s with %s", wk_dtype_name(dts[i]), wk_dtype_name(dts[i]));
      run_both(ops[o], V2(WK_VT(a.c), WK_VT(b.c)), V2(WK_VT(a.g), WK_VT(b.g)), 2, 1e-6, 0, NULL, 0, what, 10);
      snprintf(what, sizeof what, "%s with float32 (promotion)", wk_dtype_name(dts[i]));
      run_both(ops[o], V2(WK_VT(a.c), WK_VT(f.c)), V2(WK_VT(a.g), WK_VT(f.g)), 2, 1e-6, 0, NULL, 0, what, 10);
      wk_scope_end();
    }
  /* integer division modes, and pow of integers */
  wk_scope_begin();
  twin a = rnd(SHAPE(6, 7), WK_I64, -50, 50, 40), b = rnd(SHAPE(7), WK_I64, 1, 9, 41);
  const char *modes[2] = {"trunc", "floor"};
  for (int m = 0; m < 2; m++) {
    wk_value sc = {.tag = WK_V_STR, .u.s = modes[m]};
    run_both("div", (wk_value[]){WK_VT(a.c), WK_VT(b.c), sc}, (wk_value[]){WK_VT(a.g), WK_VT(b.g), sc}, 3, 0, 0, NULL,
             0, modes[m], 10);
  }
  twin p = rnd(SHAPE(6), WK_I32, -3, 4, 42), q = rnd(SHAPE(6), WK_I32, 0, 5, 43);
  run_both("pow", V2(WK_VT(p.c), WK_VT(q.c)), V2(WK_VT(p.g), WK_VT(q.g)), 2, 0, 0, NULL, 0, "int pow", 10);
  /* errors name the op like the cpu's */
  wk_tensor *z = cu(wk_zeros(SHAPE(7), (wk_options){.dtype = WK_I64}));
  ck_assert_ptr_null(wk_div_mode(a.g, z, "floor"));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "ZeroDivisionError");
  wk_tensor *bb = cu(wk_ones(SHAPE(3), (wk_options){.dtype = WK_BOOL}));
  ck_assert_ptr_null(wk_sub(bb, bb));
  TU_FAILS_WITH(WK_ERR_DTYPE, "subtraction, the `-` operator, with two bool tensors");
  wk_scope_end();
}
END_TEST

START_TEST(test_cuda_ops_inplace_out_where) {
  wk_scope_begin();
  twin a = rnd(SHAPE(3, 4), WK_F32, -1, 1, 1), b = rnd(SHAPE(4), WK_F32, -1, 1, 2);
  wk_tensor *ac = wk_clone(a.c), *ag = wk_clone(a.g);
  ck_assert_ptr_eq(wk_add_(ac, b.c), ac);
  ck_assert_ptr_eq(wk_add_(ag, b.g), ag);
  close_t(ag, ac, 1e-6, "add_ broadcast");
  wk_tensor *oc = wk_empty(SHAPE(3, 4), (wk_options){.dtype = WK_F64});
  wk_tensor *og = cu(oc);
  ck_assert_ptr_eq(wk_mul_out(a.c, b.c, oc), oc);
  ck_assert_ptr_eq(wk_mul_out(a.g, b.g, og), og);
  close_t(og, oc, 1e-6, "mul.out into float64");
  /* in place into an integer tensor is refused like the cpu does */
  wk_tensor *ig = cu(wk_zeros(SHAPE(3, 4), (wk_options){.dtype = WK_I32}));
  ck_assert_ptr_null(wk_add_(ig, a.g));
  TU_FAILS_WITH(WK_ERR_DTYPE, "can't be cast");
  /* where with promotion and broadcast; masked_fill */
  twin cond = rnd(SHAPE(3, 1), WK_BOOL, 0, 2, 3), x = rnd(SHAPE(3, 4), WK_F16, -1, 1, 4),
       y = rnd(SHAPE(4), WK_F32, -1, 1, 5);
  run_both("where.self", (wk_value[]){WK_VT(cond.c), WK_VT(x.c), WK_VT(y.c)},
           (wk_value[]){WK_VT(cond.g), WK_VT(x.g), WK_VT(y.g)}, 3, 1e-6, 0, NULL, 0, "where", 10);
  twin m = rnd(SHAPE(4), WK_BOOL, 0, 2, 6);
  run_both("masked_fill.Scalar", (wk_value[]){WK_VT(x.c), WK_VT(m.c), WK_VF(-7.5)},
           (wk_value[]){WK_VT(x.g), WK_VT(m.g), WK_VF(-7.5)}, 3, 1e-6, 0, NULL, 0, "masked_fill", 10);
  wk_scope_end();
}
END_TEST

/* ---- unary ----------------------------------------------------------------------------------- */
START_TEST(test_cuda_ops_unary) {
  static const char *ops[] = {"neg",   "abs",         "exp",     "log",   "log1p", "sqrt",      "rsqrt", "sin",
                              "cos",   "tanh",        "sigmoid", "relu",  "silu",  "sign",      "floor", "ceil",
                              "round", "logical_not", "isnan",   "isinf", "gelu",  "leaky_relu"};
  static const bool diff[] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 1};
  for (int k = 0; k < 4; k++) {
    wk_dtype dt = g_float_dts[k];
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
      wk_scope_begin();
      bool pos =
          !strcmp(ops[o], "log") || !strcmp(ops[o], "sqrt") || !strcmp(ops[o], "rsqrt") || !strcmp(ops[o], "log1p");
      twin a = rnd(SHAPE(4, 6), dt, pos ? 0.1 : -3, 3, 50 + o);
      if (diff[o]) leaf(a);
      char what[64];
      snprintf(what, sizeof what, "%s", wk_dtype_name(dt));
      run_both(ops[o], (wk_value[]){WK_VT(a.c)}, (wk_value[]){WK_VT(a.g)}, 1, tol_of(dt) * 4, 0, diff[o] ? &a : NULL,
               diff[o] ? 1 : 0, what, 10);
      twin s = strided(SHAPE(5, 3), dt, pos ? 0.1 : -3, 3, 60 + o);
      run_both(ops[o], (wk_value[]){WK_VT(s.c)}, (wk_value[]){WK_VT(s.g)}, 1, tol_of(dt) * 4, 0, NULL, 0, "strided", 10);
      wk_scope_end();
    }
  }
  /* integer dtypes: kept (neg, abs, sign, relu), promoted (exp), predicates */
  static const char *iops[] = {"neg", "abs", "sign", "relu", "exp", "sqrt", "logical_not", "isnan", "floor"};
  static const wk_dtype idts[] = {WK_I8, WK_U8, WK_I32, WK_I64};
  for (size_t i = 0; i < 4; i++)
    for (size_t o = 0; o < sizeof iops / sizeof iops[0]; o++) {
      wk_scope_begin();
      twin a = rnd(SHAPE(7), idts[i], 0, 9, 70);
      run_both(iops[o], (wk_value[]){WK_VT(a.c)}, (wk_value[]){WK_VT(a.g)}, 1, 1e-6, 0, NULL, 0,
               wk_dtype_name(idts[i]), 10);
      wk_scope_end();
    }
  /* clamp (float and int bounds), nan_to_num, in place and out= forms */
  wk_scope_begin();
  twin a = leaf(rnd(SHAPE(3, 5), WK_F32, -3, 3, 80));
  run_both("clamp", (wk_value[]){WK_VT(a.c), WK_VF(-1), WK_VF(0.5)}, (wk_value[]){WK_VT(a.g), WK_VF(-1), WK_VF(0.5)}, 3,
           1e-6, 0, &a, 1, "clamp", 10);
  twin ia = rnd(SHAPE(9), WK_I16, -100, 100, 81);
  run_both("clamp", (wk_value[]){WK_VT(ia.c), WK_VI(-5), WK_VNONE}, (wk_value[]){WK_VT(ia.g), WK_VI(-5), WK_VNONE}, 3,
           0, 0, NULL, 0, "int clamp", 10);
  twin gl = leaf(rnd(SHAPE(8), WK_F64, -3, 3, 82));
  wk_value tanh_s = {.tag = WK_V_STR, .u.s = "tanh"};
  run_both("gelu", V2(WK_VT(gl.c), tanh_s), V2(WK_VT(gl.g), tanh_s), 2, 1e-12, 0, &gl, 1, "gelu tanh", 10);
  wk_tensor *ec = wk_clone(a.c), *eg = wk_clone(a.g);
  wk_exp_(wk_detach(ec));
  wk_exp_(wk_detach(eg));
  close_t(eg, ec, 1e-6, "exp_");
  wk_tensor *oc = wk_empty(SHAPE(3, 5), (wk_options){.dtype = WK_F64}), *og = cu(oc);
  wk_tanh_out(a.c, oc);
  wk_tanh_out(a.g, og);
  close_t(og, oc, 1e-6, "tanh.out float64");
  wk_scope_end();
}
END_TEST

/* ---- reductions ------------------------------------------------------------------------------ */
START_TEST(test_cuda_ops_reduce) {
  for (int k = 0; k < 4; k++) {
    wk_dtype dt = g_float_dts[k];
    double tol = tol_of(dt) * 10;
    wk_scope_begin();
    twin a = leaf(rnd(SHAPE(4, 3, 5), dt, -2, 2, 90));
    int64_t d02[2] = {0, 2}, d1[1] = {-2};
    wk_value dims02 = WK_VINTS(d02, 2), dims1 = WK_VINTS(d1, 1);
    run_both("sum.dim_IntList", (wk_value[]){WK_VT(a.c), dims02, WK_VB(true)},
             (wk_value[]){WK_VT(a.g), dims02, WK_VB(true)}, 3, tol, 0, &a, 1, "sum dims 0,2 keepdim", 10);
    run_both("mean.dim", (wk_value[]){WK_VT(a.c), dims1, WK_VB(false)}, (wk_value[]){WK_VT(a.g), dims1, WK_VB(false)},
             3, tol, 0, &a, 1, "mean dim -2", 10);
    run_both("sum", (wk_value[]){WK_VT(a.c)}, (wk_value[]){WK_VT(a.g)}, 1, tol, 0, &a, 1, "sum all", 10);
    run_both("prod.dim_int", (wk_value[]){WK_VT(a.c), WK_VI(1)}, (wk_value[]){WK_VT(a.g), WK_VI(1)}, 2, tol, 0, NULL, 0,
             "prod dim 1", 10);
    run_both("max.dim", (wk_value[]){WK_VT(a.c), WK_VI(2), WK_VB(true)},
             (wk_value[]){WK_VT(a.g), WK_VI(2), WK_VB(true)}, 3, tol, 0, &a, 1, "max.dim", 10);
    run_both("min.dim", (wk_value[]){WK_VT(a.c), WK_VI(0)}, (wk_value[]){WK_VT(a.g), WK_VI(0)}, 2, tol, 0, NULL, 0,
             "min.dim", 10);
    run_both("max", (wk_value[]){WK_VT(a.c)}, (wk_value[]){WK_VT(a.g)}, 1, tol, 0, NULL, 0, "max", 10);
    run_both("argmax", (wk_value[]){WK_VT(a.c), WK_VI(1), WK_VB(false)},
             (wk_value[]){WK_VT(a.g), WK_VI(1), WK_VB(false)}, 3, 0, 0, NULL, 0, "argmax", 10);
    run_both("argmin", (wk_value[]){WK_VT(a.c)}, (wk_value[]){WK_VT(a.g)}, 1, 0, 0, NULL, 0, "argmin flat", 10);
    run_both("var.correction", (wk_value[]){WK_VT(a.c), dims1}, (wk_value[]){WK_VT(a.g), dims1}, 2, tol, 0, &a, 1,
             "var", 10);
    run_both("std.correction", (wk_value[]){WK_VT(a.c), WK_VNONE, WK_VI(0), WK_VB(true)},
             (wk_value[]){WK_VT(a.g), WK_VNONE, WK_VI(0), WK_VB(true)}, 4, tol, 0, NULL, 0, "std all", 10);
    const double ps[] = {2, 1, 3, INFINITY, -INFINITY, 0};
    for (int i = 0; i < 6; i++)
      run_both("norm", (wk_value[]){WK_VT(a.c), WK_VF(ps[i]), dims02}, (wk_value[]){WK_VT(a.g), WK_VF(ps[i]), dims02},
               3, tol, 0, NULL, 0, "norm", 10);
    run_both("logsumexp", (wk_value[]){WK_VT(a.c), dims1, WK_VB(true)}, (wk_value[]){WK_VT(a.g), dims1, WK_VB(true)}, 3,
             tol, 0, &a, 1, "logsumexp", 10);
    /* strided input, a long row (many blocks' worth of tree), empty rows */
    twin s = strided(SHAPE(6, 7), dt, -1, 1, 91);
    run_both("sum.dim_IntList", (wk_value[]){WK_VT(s.c), dims1}, (wk_value[]){WK_VT(s.g), dims1}, 2, tol, 0, NULL, 0,
             "strided", 10);
    twin big = rnd(SHAPE(3, 5000), dt, -1, 1, 92);
    int64_t dl[1] = {1};
    run_both("sum.dim_IntList", (wk_value[]){WK_VT(big.c), WK_VINTS(dl, 1)},
             (wk_value[]){WK_VT(big.g), WK_VINTS(dl, 1)}, 2, tol * 10, 0, NULL, 0, "long rows", 10);
    twin e = rnd(SHAPE(3, 0), dt, -1, 1, 93);
    run_both("sum.dim_IntList", (wk_value[]){WK_VT(e.c), WK_VINTS(dl, 1)}, (wk_value[]){WK_VT(e.g), WK_VINTS(dl, 1)}, 2,
             tol, 0, NULL, 0, "empty rows", 10);
    wk_scope_end();
  }
  /* integers and bools: exact sums (int64), all/any, max of ints */
  wk_scope_begin();
  twin i = rnd(SHAPE(5, 6), WK_I32, -100, 100, 94), b = rnd(SHAPE(5, 6), WK_BOOL, 0, 2, 95);
  run_both("sum", (wk_value[]){WK_VT(i.c)}, (wk_value[]){WK_VT(i.g)}, 1, 0, 0, NULL, 0, "int sum", 10);
  run_both("prod", (wk_value[]){WK_VT(b.c)}, (wk_value[]){WK_VT(b.g)}, 1, 0, 0, NULL, 0, "bool prod", 10);
  run_both("max.dim", (wk_value[]){WK_VT(i.c), WK_VI(1)}, (wk_value[]){WK_VT(i.g), WK_VI(1)}, 2, 0, 0, NULL, 0,
           "int max", 10);
  run_both("all.dim", (wk_value[]){WK_VT(b.c), WK_VI(0)}, (wk_value[]){WK_VT(b.g), WK_VI(0)}, 2, 0, 0, NULL, 0, "all", 10);
  run_both("any", (wk_value[]){WK_VT(i.c)}, (wk_value[]){WK_VT(i.g)}, 1, 0, 0, NULL, 0, "any", 10);
  ck_assert_ptr_null(wk_mean(i.g));
  TU_FAILS_WITH(WK_ERR_DTYPE, "could not infer output dtype");
  wk_scope_end();
}
END_TEST

/* ---- softmax, losses -------------------------------------------------------------------------- */
START_TEST(test_cuda_ops_softmax_losses) {
  for (int k = 0; k < 4; k++) {
    wk_dtype dt = g_float_dts[k];
    double tol = tol_of(dt) * 10;
    wk_scope_begin();
    twin x = leaf(rnd(SHAPE(4, 7, 3), dt, -3, 3, 100));
    for (int d = -1; d <= 1; d++) {
      run_both("softmax", V2(WK_VT(x.c), WK_VI(d)), V2(WK_VT(x.g), WK_VI(d)), 2, tol, 0, &x, 1, "softmax", 10);
      run_both("log_softmax", V2(WK_VT(x.c), WK_VI(d)), V2(WK_VT(x.g), WK_VI(d)), 2, tol, 0, &x, 1, "log_softmax", 10);
    }
    twin wide = leaf(rnd(SHAPE(3, 1000), dt, -5, 5, 101));
    run_both("log_softmax", V2(WK_VT(wide.c), WK_VI(1)), V2(WK_VT(wide.g), WK_VI(1)), 2, tol, 0, &wide, 1, "wide rows", 10);
    /* cross_entropy: class indices with weight, ignore_index, label smoothing; probabilities; nll_loss */
    twin logits = leaf(rnd(SHAPE(6, 5), dt, -2, 2, 102));
    wk_tensor *tc = TU_T(WK_I64, (6), 0, 4, 2, -100, 1, 3), *tg = cu(tc);
    twin w = rnd(SHAPE(5), dt, 0.5, 2, 103);
    for (int red = 0; red < 3; red++) {
      run_both("cross_entropy",
               (wk_value[]){WK_VT(logits.c), WK_VT(tc), WK_VT(w.c), WK_VI(red), WK_VI(-100), WK_VF(0.1)},
               (wk_value[]){WK_VT(logits.g), WK_VT(tg), WK_VT(w.g), WK_VI(red), WK_VI(-100), WK_VF(0.1)}, 6, tol, 0,
               &logits, 1, "cross_entropy weight smoothing", 10);
      run_both("nll_loss", (wk_value[]){WK_VT(logits.c), WK_VT(tc), WK_VNONE, WK_VI(red)},
               (wk_value[]){WK_VT(logits.g), WK_VT(tg), WK_VNONE, WK_VI(red)}, 4, tol, 0, &logits, 1, "nll_loss", 10);
    }
    twin probs = rnd(SHAPE(6, 5), dt, 0, 1, 104);
    run_both("cross_entropy", V2(WK_VT(logits.c), WK_VT(probs.c)), V2(WK_VT(logits.g), WK_VT(probs.g)), 2, tol, 0,
             &logits, 1, "cross_entropy probabilities", 10);
    twin img = leaf(rnd(SHAPE(2, 4, 3, 3), dt, -2, 2, 105));
    twin it = rnd(SHAPE(2, 3, 3), WK_I64, 0, 4, 106);
    run_both("cross_entropy", V2(WK_VT(img.c), WK_VT(it.c)), V2(WK_VT(img.g), WK_VT(it.g)), 2, tol, 0, &img, 1,
             "cross_entropy spatial", 10);
    twin a = leaf(rnd(SHAPE(4, 3), dt, -1, 1, 107)), b = rnd(SHAPE(3), dt, -1, 1, 108);
    run_both("mse_loss", V2(WK_VT(a.c), WK_VT(b.c)), V2(WK_VT(a.g), WK_VT(b.g)), 2, tol, 0, &a, 1, "mse broadcast", 10);
    twin t01 = rnd(SHAPE(4, 3), dt, 0, 1, 109), pw = rnd(SHAPE(3), dt, 0.5, 2, 110);
    run_both(
        "binary_cross_entropy_with_logits", (wk_value[]){WK_VT(a.c), WK_VT(t01.c), WK_VNONE, WK_VT(pw.c), WK_VI(2)},
        (wk_value[]){WK_VT(a.g), WK_VT(t01.g), WK_VNONE, WK_VT(pw.g), WK_VI(2)}, 5, tol, 0, &a, 1, "bce pos_weight", 10);
    /* layer_norm over the last two dims, with weight and bias gradients */
    twin lx = leaf(rnd(SHAPE(3, 4, 5), dt, -2, 2, 111)), lw = leaf(rnd(SHAPE(4, 5), dt, 0.5, 1.5, 112));
    twin lb = leaf(rnd(SHAPE(4, 5), dt, -1, 1, 113));
    twin l3[3] = {lx, lw, lb};
    int64_t nsh[2] = {4, 5};
    run_both("layer_norm", (wk_value[]){WK_VT(lx.c), WK_VINTS(nsh, 2), WK_VT(lw.c), WK_VT(lb.c)},
             (wk_value[]){WK_VT(lx.g), WK_VINTS(nsh, 2), WK_VT(lw.g), WK_VT(lb.g)}, 4, tol, 0, l3, 3, "layer_norm", 10);
    /* a target out of range is an error naming it */
    wk_tensor *bad = cu(TU_T(WK_I64, (6), 0, 5, 0, 0, 0, 0));
    ck_assert_ptr_null(wk_cross_entropy(logits.g, bad));
    TU_FAILS_WITH(WK_ERR_INDEX, "Target 5 is out of bounds");
    wk_scope_end();
  }
}
END_TEST

/* ---- indexing ------------------------------------------------------------------------------- */
START_TEST(test_cuda_ops_index) {
  for (int k = 0; k < 4; k++) {
    wk_dtype dt = g_float_dts[k];
    wk_scope_begin();
    twin x = leaf(rnd(SHAPE(5, 4, 3), dt, -1, 1, 120));
    wk_tensor *ic = TU_T(WK_I64, (4), 2, 0, 2, 1), *ig = cu(ic);
    for (int d = 0; d < 3; d++)
      run_both("index_select", (wk_value[]){WK_VT(x.c), WK_VI(d), WK_VT(ic)},
               (wk_value[]){WK_VT(x.g), WK_VI(d), WK_VT(ig)}, 3, 0, 0, &x, 1, "index_select", 10);
    twin gi = rnd(SHAPE(5, 2, 3), WK_I64, 0, 4, 121);
    run_both("gather", (wk_value[]){WK_VT(x.c), WK_VI(1), WK_VT(gi.c)}, (wk_value[]){WK_VT(x.g), WK_VI(1), WK_VT(gi.g)},
             3, 0, 0, &x, 1, "gather", 10);
    twin src = leaf(rnd(SHAPE(5, 2, 3), dt, -1, 1, 122));
    twin l2[2] = {x, src};
    run_both("scatter_add", (wk_value[]){WK_VT(x.c), WK_VI(1), WK_VT(gi.c), WK_VT(src.c)},
             (wk_value[]){WK_VT(x.g), WK_VI(1), WK_VT(gi.g), WK_VT(src.g)}, 4, tol_of(dt) * 10, 0, l2, 2,
             "scatter_add", 10);
    run_both("scatter.src", (wk_value[]){WK_VT(x.c), WK_VI(1), WK_VT(gi.c), WK_VT(src.c)},
             (wk_value[]){WK_VT(x.g), WK_VI(1), WK_VT(gi.g), WK_VT(src.g)}, 4, 0, 0, NULL, 0, "scatter", 10);
    /* embedding forward and its dense backward (repeated indices sum) */
    twin w = leaf(rnd(SHAPE(6, 4), dt, -1, 1, 123));
    wk_tensor *ec = TU_T(WK_I64, (2, 3), 5, 0, 5, 2, 2, 5), *eg = cu(ec);
    run_both("embedding", V2(WK_VT(w.c), WK_VT(ec)), V2(WK_VT(w.g), WK_VT(eg)), 2, tol_of(dt) * 10, 0, &w, 1,
             "embedding", 10);
    /* cat with promotion and a strided part; one_hot */
    twin c1 = rnd(SHAPE(2, 3), dt, -1, 1, 124), c2 = strided(SHAPE(4, 3), WK_F64, -1, 1, 125);
    wk_tensor *lc[2] = {c1.c, c2.c}, *lg[2] = {c1.g, c2.g};
    run_both("cat", V2(WK_VTS(lc, 2), WK_VI(0)), V2(WK_VTS(lg, 2), WK_VI(0)), 2, 1e-12, 0, NULL, 0, "cat", 10);
    run_both("one_hot", V2(WK_VT(ic), WK_VI(-1)), V2(WK_VT(ig), WK_VI(-1)), 2, 0, 0, NULL, 0, "one_hot", 10);
    /* flip, roll, repeat, masked_select, cumsum (with gradients where the op has them) */
    int64_t fd[2] = {0, 2}, sh[2] = {2, -1};
    run_both("flip", V2(WK_VT(x.c), WK_VINTS(fd, 2)), V2(WK_VT(x.g), WK_VINTS(fd, 2)), 2, 0, 0, &x, 1, "flip", 10);
    run_both("roll", (wk_value[]){WK_VT(x.c), WK_VINTS(sh, 2), WK_VINTS(fd, 2)},
             (wk_value[]){WK_VT(x.g), WK_VINTS(sh, 2), WK_VINTS(fd, 2)}, 3, 0, 0, &x, 1, "roll", 10);
    int64_t rp[4] = {2, 1, 3, 1};
    run_both("repeat", V2(WK_VT(x.c), WK_VINTS(rp, 4)), V2(WK_VT(x.g), WK_VINTS(rp, 4)), 2, tol_of(dt) * 10, 0, &x, 1,
             "repeat", 10);
    twin mk = rnd(SHAPE(4, 1), WK_BOOL, 0, 2, 126);
    run_both("masked_select", V2(WK_VT(x.c), WK_VT(mk.c)), V2(WK_VT(x.g), WK_VT(mk.g)), 2, 0, 0, NULL, 0,
             "masked_select", 10);
    run_both("cumsum", V2(WK_VT(x.c), WK_VI(1)), V2(WK_VT(x.g), WK_VI(1)), 2, tol_of(dt) * 10, 0, &x, 1, "cumsum", 10);
    twin ci = rnd(SHAPE(3, 5), WK_I16, -9, 9, 127);
    run_both("cumsum", V2(WK_VT(ci.c), WK_VI(-1)), V2(WK_VT(ci.g), WK_VI(-1)), 2, 0, 0, NULL, 0, "int cumsum", 10);
    /* sort, topk, pad (through the host for now) */
    run_both("sort", (wk_value[]){WK_VT(x.c), WK_VI(1), WK_VB(true)}, (wk_value[]){WK_VT(x.g), WK_VI(1), WK_VB(true)},
             3, 0, 0, &x, 1, "sort", 10);
    run_both("topk", (wk_value[]){WK_VT(x.c), WK_VI(2)}, (wk_value[]){WK_VT(x.g), WK_VI(2)}, 2, 0, 0, &x, 1, "topk", 10);
    int64_t pd[4] = {1, 2, 0, 1};
    wk_value refl = {.tag = WK_V_STR, .u.s = "reflect"};
    run_both("pad", (wk_value[]){WK_VT(x.c), WK_VINTS(pd, 4), refl}, (wk_value[]){WK_VT(x.g), WK_VINTS(pd, 4), refl}, 3,
             tol_of(dt) * 10, 0, &x, 1, "pad reflect", 10);
    /* out-of-range indices: the cpu's messages */
    wk_tensor *bad = cu(TU_T(WK_I64, (3), 0, 7, 1));
    ck_assert_ptr_null(wk_index_select(x.g, 0, bad));
    TU_FAILS_WITH(WK_ERR_INDEX, "index 7 is out of bounds for dimension 0 with size 5");
    ck_assert_ptr_null(wk_embedding(w.g, bad));
    TU_FAILS_WITH(WK_ERR_INDEX, "index out of range in self (index 7");
    wk_scope_end();
  }
}
END_TEST

/* ---- RNG, dropout, factories ---------------------------------------------------------------- */
START_TEST(test_cuda_ops_rng_streams) {
  wk_scope_begin();
  /* one seed, the same counters: cpu and cuda streams agree */
  for (int k = 0; k < 4; k++) {
    wk_dtype dt = g_float_dts[k];
    wk_manual_seed(1234);
    wk_tensor *rc = wk_rand(SHAPE(1000), (wk_options){.dtype = dt});
    wk_tensor *nc = wk_randn(SHAPE(3, 333), (wk_options){.dtype = dt});
    wk_manual_seed(1234);
    wk_tensor *rg = wk_rand(SHAPE(1000), (wk_options){.dtype = dt, .device = g_cuda});
    wk_tensor *ng = wk_randn(SHAPE(3, 333), (wk_options){.dtype = dt, .device = g_cuda});
    close_t(rg, rc, 0, "rand (bit-identical)");
    close_t(ng, nc, dt == WK_F64 ? 1e-13 : tol_of(dt), "randn");
  }
  wk_manual_seed(7);
  wk_tensor *ic = wk_randint(-5, 1000, SHAPE(50), (wk_options){.dtype = WK_I32});
  wk_tensor *pc = wk_randperm(100, (wk_options){0});
  wk_manual_seed(7);
  wk_tensor *ig = wk_randint(-5, 1000, SHAPE(50), (wk_options){.dtype = WK_I32, .device = g_cuda});
  wk_tensor *pg = wk_randperm(100, (wk_options){.device = g_cuda});
  close_t(ig, ic, 0, "randint");
  close_t(pg, pc, 0, "randperm");
  /* dropout: the same mask and values; uniform_/normal_ on strided views */
  twin x = rnd(SHAPE(64, 33), WK_F32, -1, 1, 130);
  wk_manual_seed(99);
  wk_tensor *mc = NULL, *mg = NULL;
  wk_tensor *yc = wk_dropout(x.c, 0.3, true, &mc);
  wk_manual_seed(99);
  wk_tensor *yg = wk_dropout(x.g, 0.3, true, &mg);
  close_t(yg, yc, 1e-6, "dropout values");
  close_t(mg, mc, 0, "dropout mask");
  twin s = strided(SHAPE(9, 8), WK_F32, 0, 1, 131);
  wk_manual_seed(5);
  wk_uniform_(s.c, -2, 3);
  wk_manual_seed(5);
  wk_uniform_(s.g, -2, 3);
  close_t(s.g, s.c, 0, "uniform_ strided");
  twin pr = rnd(SHAPE(40), WK_F64, 0, 1, 132);
  wk_manual_seed(11);
  wk_tensor *bc = wk_bernoulli(pr.c);
  wk_manual_seed(11);
  wk_tensor *bg = wk_bernoulli(pr.g);
  close_t(bg, bc, 0, "bernoulli");
  /* factories on the device */
  close_t(wk_zeros(SHAPE(3, 2), (wk_options){.dtype = WK_BF16, .device = g_cuda}),
          wk_zeros(SHAPE(3, 2), (wk_options){.dtype = WK_BF16}), 0, "zeros");
  close_t(wk_full(SHAPE(4), 2.5, (wk_options){.device = g_cuda}), wk_full(SHAPE(4), 2.5, (wk_options){0}), 0, "full");
  close_t(wk_arange_int(3, 20, 4, (wk_options){.dtype = WK_I64, .device = g_cuda}),
          wk_arange_int(3, 20, 4, (wk_options){.dtype = WK_I64}), 0, "arange");
  wk_scope_end();
}
END_TEST

/* ---- fused optimizer updates ---------------------------------------------------------------- */
static void optim_case(const char *op, wk_value *ca, wk_value *ga, int n, int nt, wk_dtype dt) {
  wk_value oc[1], og[1];
  ck_assert_msg(wk_call(op, ca, n, oc) == WK_OK, "%s cpu: %s", op, wk_last_error_message());
  ck_assert_msg(wk_call(op, ga, n, og) == WK_OK, "%s cuda: %s", op, wk_last_error_message());
  char what[96];
  for (int i = 0; i < nt; i++) {
    if (ca[i].tag != WK_V_TENSOR || i == 1) continue;
    snprintf(what, sizeof what, "%s %s tensor %d", op, wk_dtype_name(dt), i);
    close_t(ga[i].u.t, ca[i].u.t, dt == WK_F64 ? 1e-15 : dt == WK_F32 ? 1e-7 : tol_of(dt), what);
  }
}

START_TEST(test_cuda_ops_optim) {
  if (!wk_op_find("optim.adam_step_")) return; /* the optim plugin is not loaded */
  for (int k = 0; k < 4; k++) {
    wk_dtype dt = g_float_dts[k];
    wk_scope_begin();
    twin p = rnd(SHAPE(7, 5), dt, -1, 1, 140), g = rnd(SHAPE(7, 5), dt, -1, 1, 141);
    twin m = rnd(SHAPE(7, 5), dt, -1, 1, 142), v = rnd(SHAPE(7, 5), dt, 0, 1, 143), x = rnd(SHAPE(7, 5), dt, 0, 1, 144);
    for (int step = 1; step <= 3; step++) {
      optim_case(
          "optim.adam_step_",
          (wk_value[]){WK_VT(p.c), WK_VT(g.c), WK_VT(m.c), WK_VT(v.c), WK_VT(x.c), WK_VF(step), WK_VF(1e-2), WK_VF(0.9),
                       WK_VF(0.999), WK_VF(1e-8), WK_VF(0.01), WK_VB(true), WK_VB(false), WK_VB(true)},
          (wk_value[]){WK_VT(p.g), WK_VT(g.g), WK_VT(m.g), WK_VT(v.g), WK_VT(x.g), WK_VF(step), WK_VF(1e-2), WK_VF(0.9),
                       WK_VF(0.999), WK_VF(1e-8), WK_VF(0.01), WK_VB(true), WK_VB(false), WK_VB(true)},
          14, 5, dt);
      optim_case("optim.sgd_step_",
                 (wk_value[]){WK_VT(p.c), WK_VT(g.c), WK_VT(m.c), WK_VF(0.1), WK_VF(0.9), WK_VF(0.1), WK_VF(1e-4),
                              WK_VB(true), WK_VB(false), WK_VB(step == 1)},
                 (wk_value[]){WK_VT(p.g), WK_VT(g.g), WK_VT(m.g), WK_VF(0.1), WK_VF(0.9), WK_VF(0.1), WK_VF(1e-4),
                              WK_VB(true), WK_VB(false), WK_VB(step == 1)},
                 10, 3, dt);
      optim_case("optim.rmsprop_step_",
                 (wk_value[]){WK_VT(p.c), WK_VT(g.c), WK_VT(v.c), WK_VT(x.c), WK_VT(m.c), WK_VF(1e-2), WK_VF(0.99),
                              WK_VF(1e-8), WK_VF(0), WK_VF(0.5), WK_VB(true), WK_VB(false)},
                 (wk_value[]){WK_VT(p.g), WK_VT(g.g), WK_VT(v.g), WK_VT(x.g), WK_VT(m.g), WK_VF(1e-2), WK_VF(0.99),
                              WK_VF(1e-8), WK_VF(0), WK_VF(0.5), WK_VB(true), WK_VB(false)},
                 12, 5, dt);
      optim_case("optim.adagrad_step_",
                 (wk_value[]){WK_VT(p.c), WK_VT(g.c), WK_VT(v.c), WK_VF(step), WK_VF(0.1), WK_VF(0.01), WK_VF(0),
                              WK_VF(1e-10), WK_VB(false)},
                 (wk_value[]){WK_VT(p.g), WK_VT(g.g), WK_VT(v.g), WK_VF(step), WK_VF(0.1), WK_VF(0.01), WK_VF(0),
                              WK_VF(1e-10), WK_VB(false)},
                 9, 3, dt);
    }
    wk_scope_end();
  }
}
END_TEST

/* ---- every op with a cuda kernel against the cpu on schema-sampled arguments ----------------
 * The device step of the SDK's opcheck (wk_opcheck stops at its cpu-side
 * checks, where the cpu and onednn kernels are judged, before it reaches the
 * devices): float64 [3, 4] tensors and the schema's defaults, the op on the
 * cpu, the same arguments moved to cuda, every result compared. */
static bool agree(wk_tensor *got, wk_tensor *ref, char *why, size_t n) {
  wk_tensor *h = got ? wk_to_device(got, g_cpu) : NULL;
  if (!h || wk_tensor_dim(h) != wk_tensor_dim(ref) || wk_tensor_numel(h) != wk_tensor_numel(ref) ||
      wk_tensor_dtype(h) != wk_tensor_dtype(ref)) {
    snprintf(why, n, "result shape or dtype differs (%s)", h ? "" : wk_last_error_message());
    return false;
  }
  int64_t k = wk_tensor_numel(ref);
  double *a = tu_values(h), *b = tu_values(ref);
  bool ok = true;
  for (int64_t i = 0; ok && i < k; i++) {
    bool same = (isnan(a[i]) && isnan(b[i])) || a[i] == b[i] || fabs(a[i] - b[i]) <= 1e-9 * fmax(1, fabs(b[i]));
    if (!same) {
      snprintf(why, n, "element %lld is %.12g, cpu gives %.12g", (long long)i, a[i], b[i]);
      ok = false;
    }
  }
  free(a);
  free(b);
  return ok;
}

START_TEST(test_cuda_ops_every_op_vs_cpu) {
  int checked = 0, skipped = 0, failed = 0;
  char failures[4096] = "";
  for (int i = 0; i < wk_op_count(); i++) {
    wk_op *op = wk_op_at(i);
    bool on_cuda = false;
    for (int k = 0; k < wk_op_num_kernels(op); k++) {
      int32_t type = -1;
      if (wk_op_kernel_info(op, k, &type, NULL, NULL, NULL) == WK_OK && type == g_cuda.type) on_cuda = true;
    }
    if (!on_cuda || (wk_op_tags(op) & (WK_TAG_RANDOM | WK_TAG_FACTORY | WK_TAG_ANY_DEVICE))) continue;
    wk_scope_begin();
    wk_value args[WK_MAX_ARGS], ga[WK_MAX_ARGS], oc[WK_MAX_OUTS], og[WK_MAX_OUTS];
    wk_tensor *ts[WK_MAX_ARGS];
    int64_t scratch[WK_MAX_ARGS];
    int nt = 0;
    int n = wk_opcheck_sample_args(op, (const int64_t[]){3, 4}, 2, 1, args, ts, &nt, scratch);
    int mut = wk_op_mutated_arg(op);
    for (int k = 0; k < n; k++) {
      ga[k] = args[k];
      if (args[k].tag == WK_V_TENSOR && args[k].u.t) ga[k] = WK_VT(cu(args[k].u.t));
    }
    /* sampled arguments the cpu refuses (an index op given floats, ...) say nothing about cuda */
    bool cpu_ok = n >= 0 && wk_op_call(op, args, n, oc) == WK_OK;
    wk_clear_error();
    if (!cpu_ok) {
      skipped++;
    } else {
      char why[256] = "";
      bool ok = wk_op_call(op, ga, n, og) == WK_OK;
      if (!ok) snprintf(why, sizeof why, "cuda failed: %s", wk_last_error_message());
      for (int k = 0; ok && k < wk_op_num_outs(op); k++)
        if (oc[k].tag == WK_V_TENSOR && oc[k].u.t) ok = agree(og[k].u.t, oc[k].u.t, why, sizeof why);
      if (ok && mut >= 0) ok = agree(ga[mut].u.t, args[mut].u.t, why, sizeof why);
      if (!ok) {
        failed++;
        size_t len = strlen(failures);
        snprintf(failures + len, sizeof failures - len, "\n  %s: %s", wk_op_name(op), why);
      }
      wk_clear_error();
      checked++;
    }
    for (int k = 0; k < nt; k++) wk_release(ts[k]);
    wk_scope_end();
  }
  printf("every cuda op vs cpu: %d ops checked, %d skipped (sample arguments refused by the cpu), %d failed\n", checked,
         skipped, failed);
  ck_assert_msg(failed == 0, "ops where cuda and cpu disagree:%s", failures);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("cuda_ops");
  TCase *tc = tcase_create("cuda_ops");
  tcase_set_timeout(tc, 300);
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_test(tc, test_cuda_ops_binary_float);
  tcase_add_test(tc, test_cuda_ops_binary_int_promotion);
  tcase_add_test(tc, test_cuda_ops_inplace_out_where);
  tcase_add_test(tc, test_cuda_ops_unary);
  tcase_add_test(tc, test_cuda_ops_reduce);
  tcase_add_test(tc, test_cuda_ops_softmax_losses);
  tcase_add_test(tc, test_cuda_ops_index);
  tcase_add_test(tc, test_cuda_ops_rng_streams);
  tcase_add_test(tc, test_cuda_ops_optim);
  tcase_add_test(tc, test_cuda_ops_every_op_vs_cpu);
  suite_add_tcase(s, tc);
  return s;
}

/* Ops this suite's families give a cuda kernel (checked with or without a GPU). */
static const char *const g_cuda_ops[] = {"add",
                                         "add_",
                                         "add.out",
                                         "add.Scalar",
                                         "sub",
                                         "mul",
                                         "mul.Scalar",
                                         "div",
                                         "div.Scalar",
                                         "maximum",
                                         "minimum",
                                         "pow",
                                         "logical_and",
                                         "logical_or",
                                         "eq",
                                         "ne.Scalar",
                                         "lt",
                                         "le",
                                         "gt.Scalar",
                                         "ge",
                                         "where.self",
                                         "gelu_backward",
                                         "neg",
                                         "abs",
                                         "exp",
                                         "log",
                                         "log1p",
                                         "sqrt",
                                         "rsqrt",
                                         "sin",
                                         "cos",
                                         "tanh",
                                         "sigmoid",
                                         "relu",
                                         "relu_",
                                         "silu",
                                         "sign",
                                         "floor",
                                         "ceil",
                                         "round",
                                         "logical_not",
                                         "leaky_relu",
                                         "gelu",
                                         "clamp",
                                         "clamp_",
                                         "isnan",
                                         "isinf",
                                         "nan_to_num",
                                         "sum",
                                         "sum.dim_IntList",
                                         "mean",
                                         "mean.dim",
                                         "prod",
                                         "prod.dim_int",
                                         "max",
                                         "max.dim",
                                         "min",
                                         "min.dim",
                                         "argmax",
                                         "argmin",
                                         "var.correction",
                                         "std.correction",
                                         "norm",
                                         "logsumexp",
                                         "all",
                                         "all.dim",
                                         "any",
                                         "any.dim",
                                         "cumsum",
                                         "softmax",
                                         "log_softmax",
                                         "softmax_backward_data",
                                         "log_softmax_backward_data",
                                         "layer_norm",
                                         "layer_norm_backward",
                                         "cross_entropy",
                                         "nll_loss",
                                         "mse_loss",
                                         "binary_cross_entropy_with_logits",
                                         "index_select",
                                         "gather",
                                         "scatter.src",
                                         "scatter_.src",
                                         "scatter_add",
                                         "scatter_add_",
                                         "masked_fill.Scalar",
                                         "masked_fill_.Scalar",
                                         "masked_select",
                                         "embedding",
                                         "embedding_dense_backward",
                                         "cat",
                                         "one_hot",
                                         "flip",
                                         "roll",
                                         "repeat",
                                         "sort",
                                         "topk",
                                         "pad",
                                         "pad_backward",
                                         "zeros",
                                         "ones",
                                         "full",
                                         "arange",
                                         "linspace",
                                         "eye",
                                         "zeros_like",
                                         "ones_like",
                                         "full_like",
                                         "rand",
                                         "randn",
                                         "randint",
                                         "randperm",
                                         "rand_like",
                                         "randn_like",
                                         "bernoulli",
                                         "bernoulli.p",
                                         "uniform_",
                                         "normal_",
                                         "dropout",
                                         "optim.sgd_step_",
                                         "optim.adam_step_",
                                         "optim.rmsprop_step_",
                                         "optim.adagrad_step_"};

/* Every op above has a kernel for device type `type`, or a core composite for
 * every device (losses, cat); prints the missing ones. */
static int missing_kernels(int32_t type) {
  int missing = 0;
  for (size_t i = 0; i < sizeof g_cuda_ops / sizeof g_cuda_ops[0]; i++) {
    wk_op *op = wk_op_find(g_cuda_ops[i]);
    bool has = false;
    for (int k = 0; op && k < wk_op_num_kernels(op); k++) {
      int32_t t = -1;
      if (wk_op_kernel_info(op, k, &t, NULL, NULL, NULL) == WK_OK && (t == type || t == WK_DEVICE_DEFAULT)) has = true;
    }
    if (!has && !(strncmp(g_cuda_ops[i], "optim.", 6) == 0 && !op)) {
      printf("check_cuda_ops: no cuda kernel for %s\n", g_cuda_ops[i]);
      missing++;
    }
  }
  wk_clear_error();
  return missing;
}

int main(void) {
  if (wk_init() != WK_OK) {
    fprintf(stderr, "check_cuda_ops: wk_init failed: %s\n", wk_last_error_message());
    return EXIT_FAILURE;
  }
  int32_t type = wk_device_type_find("cuda");
  /* the kernels register whether or not a GPU is present: checked here too */
  if (type >= 0 && missing_kernels(type)) return EXIT_FAILURE;
  const char *self = getenv("WICK_CUDA_OPS_ON_CPU");
  if (self && strcmp(self, "1") == 0) type = WK_DEVICE_CPU;
  if (type < 0) {
    printf("SKIP: the cuda plugin is not loaded (not built, or failed: see `wick info`)\n");
    return 77;
  }
  if (type != WK_DEVICE_CPU && wk_device_count(type) == 0) {
    printf("SKIP: no CUDA device: %s\n", wk_device_type_status(type));
    return 77;
  }
  g_cuda = (wk_device){type, 0};
  SRunner *sr = srunner_create(make_suite());
  srunner_set_fork_status(sr, CK_NOFORK); /* CUDA is initialised already: a forked child cannot use it */
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
