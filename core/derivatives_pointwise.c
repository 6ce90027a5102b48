/* Derivative formulas: unary and binary pointwise ops. */
#include "derivatives.h"

#define WK__SELU_ALPHA 1.6732632423543772848170429916717
#define WK__SELU_SCALE 1.0507009873554804934193349852946

/* ---- pointwise ------------------------------------------------------------------------------ */
static wk_status d_neg(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_neg(G(0)));
  END
}
static wk_status d_abs(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_mul(G(0), wk_sign(X(0))));
  END
}
static wk_status d_exp(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_mul(G(0), Y(0)));
  END
}
static wk_status d_log(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_div(G(0), X(0)));
  END
}
static wk_status d_log1p(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_div(G(0), wk_add_scalar(X(0), 1)));
  END
}
static wk_status d_sqrt(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_div(G(0), wk_mul_scalar(Y(0), 2)));
  END
}
static wk_status d_rsqrt(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *y = Y(0);
  GIN(0, wk_mul_scalar(wk_mul(G(0), wk_mul(y, wk_mul(y, y))), -0.5));
  END
}
static wk_status d_sin(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_mul(G(0), wk_cos(X(0))));
  END
}
static wk_status d_cos(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_neg(wk_mul(G(0), wk_sin(X(0)))));
  END
}
/* d erf(x) = 2/sqrt(pi) exp(-x^2) */
static wk_status d_erf(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *x = X(0);
  GIN(0, wk_mul(G(0), wk_mul_scalar(wk_exp(wk_neg(wk_mul(x, x))), M_2_SQRTPI)));
  END
}
/* relu, sigmoid and tanh go through fused backward ops (PyTorch's), which a
 * backend can implement in one pass; the ops have formulas of their own
 * (below) for double backward. */
static wk_status d_tanh(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *y = Y(0);
  CHECK(y);
  wk_value a[2] = {WK_VT(G(0)), WK_VT(y)};
  GIN(0, wk__call1("tanh_backward", a, 2));
  END
}
static wk_status d_sigmoid(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *y = Y(0);
  CHECK(y);
  wk_value a[2] = {WK_VT(G(0)), WK_VT(y)};
  GIN(0, wk__call1("sigmoid_backward", a, 2));
  END
}
static wk_status d_relu(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *y = Y(0);
  CHECK(y);
  wk_value a[3] = {WK_VT(G(0)), WK_VT(y), WK_VF(0)};
  GIN(0, wk__call1("threshold_backward", a, 3));
  END
}
/* threshold_backward(g, x, t) = x > t ? g : 0: linear in g, flat in x. */
static wk_status d_threshold_backward(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *x = X(1);
  CHECK(x);
  if (NEEDS(0)) {
    wk_value a[3] = {WK_VT(G(0)), WK_VT(x), N->args[2]};
    GIN(0, wk__call1("threshold_backward", a, 3));
  }
  if (NEEDS(1)) GIN(1, wk_zeros_like(x, OPT0));
  END
}
/* sigmoid_backward(g, y) = g y (1 - y): d/dg = y (1 - y), d/dy = g (1 - 2y). */
static wk_status d_sigmoid_backward(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *g = X(0), *y = X(1);
  CHECK(g);
  CHECK(y);
  if (NEEDS(0)) {
    wk_value a[2] = {WK_VT(G(0)), WK_VT(y)};
    GIN(0, wk__call1("sigmoid_backward", a, 2));
  }
  if (NEEDS(1)) GIN(1, wk_mul(wk_mul(G(0), g), wk_add_scalar(wk_mul_scalar(y, -2.0), 1.0)));
  END
}
/* tanh_backward(g, y) = g (1 - y^2): d/dg = 1 - y^2, d/dy = -2 g y. */
static wk_status d_tanh_backward(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *g = X(0), *y = X(1);
  CHECK(g);
  CHECK(y);
  if (NEEDS(0)) {
    wk_value a[2] = {WK_VT(G(0)), WK_VT(y)};
    GIN(0, wk__call1("tanh_backward", a, 2));
  }
  if (NEEDS(1)) GIN(1, wk_mul_scalar(wk_mul(wk_mul(G(0), g), y), -2.0));
  END
}
static wk_status d_silu(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *x = X(0), *s = wk_sigmoid(x);
  /* s * (1 + x * (1 - s)) */
  GIN(0, wk_mul(G(0), wk_mul(s, wk_add_scalar(wk_mul(x, wk_sub(wk_ones_like(s, OPT0), s)), 1))));
  END
}
static wk_status d_leaky_relu(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *x = X(0);
  wk_tensor *pos = wk_gt_scalar(x, 0);
  wk_tensor *slope = wk_full_like(x, FARG(1), OPT0);
  GIN(0, wk_mul(G(0), wk_where(pos, wk_ones_like(x, OPT0), slope)));
  END
}
static wk_status d_gelu(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_value a[3] = {WK_VT(G(0)), WK_VT(X(0)), N->args[1]};
  wk_value o[1];
  CHECK(a[1].u.t);
  if (wk_call("gelu_backward", a, 3, o) != WK_OK) {
    st__ = wk_last_error();
    goto done;
  }
  wk__scope_adopt(o[0].u.t);
  GIN(0, o[0].u.t);
  END
}
static wk_status d_clamp(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *x = X(0), *m = wk_ones_like(x, (wk_options){.dtype = WK_BOOL});
  if (!NONE(1)) m = wk_logical_and(m, wk_ge_scalar(x, FARG(1)));
  if (!NONE(2)) m = wk_logical_and(m, wk_le_scalar(x, FARG(2)));
  GIN(0, wk_mul(G(0), m));
  END
}
static wk_status d_nan_to_num(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *x = X(0);
  GIN(0, wk_mul(G(0), wk_logical_not(wk_logical_or(wk_isnan(x), wk_isinf(x)))));
  END
}
static wk_status d_where(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *cond = X(0), *z = wk_zeros_like(G(0), OPT0);
  GIN(1, wk_where(cond, G(0), z));
  GIN(2, wk_where(cond, z, G(0)));
  END
}
/* ---- the issue-21 unary ops (derivatives.yaml's formulas) ---------------------------------- */
static wk_status d_expm1(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_mul(G(0), wk_add_scalar(Y(0), 1)));
  END
}
static wk_status d_log2(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_div(G(0), wk_mul_scalar(X(0), M_LN2)));
  END
}
static wk_status d_log10(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_div(G(0), wk_mul_scalar(X(0), M_LN10)));
  END
}
static wk_status d_exp2(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_mul(G(0), wk_mul_scalar(Y(0), M_LN2)));
  END
}
/* tan: grad * (1 + result^2) */
static wk_status d_tan(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *y = Y(0);
  GIN(0, wk_mul(G(0), wk_add_scalar(wk_mul(y, y), 1)));
  END
}
/* asin: grad * (1 - x^2)^-1/2; acos: its negative */
static wk_status d_asin(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *x = X(0);
  GIN(0, wk_mul(G(0), wk_rsqrt(wk_add_scalar(wk_neg(wk_mul(x, x)), 1))));
  END
}
static wk_status d_acos(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *x = X(0);
  GIN(0, wk_neg(wk_mul(G(0), wk_rsqrt(wk_add_scalar(wk_neg(wk_mul(x, x)), 1)))));
  END
}
static wk_status d_atan(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *x = X(0);
  GIN(0, wk_div(G(0), wk_add_scalar(wk_mul(x, x), 1)));
  END
}
static wk_status d_sinh(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_mul(G(0), wk_cosh(X(0))));
  END
}
static wk_status d_cosh(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_mul(G(0), wk_sinh(X(0))));
  END
}
/* asinh: grad * (x^2 + 1)^-1/2; acosh: grad * (x^2 - 1)^-1/2; atanh: grad / (1 - x^2) */
static wk_status d_asinh(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *x = X(0);
  GIN(0, wk_mul(G(0), wk_rsqrt(wk_add_scalar(wk_mul(x, x), 1))));
  END
}
static wk_status d_acosh(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *x = X(0);
  GIN(0, wk_mul(G(0), wk_rsqrt(wk_add_scalar(wk_mul(x, x), -1))));
  END
}
static wk_status d_atanh(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *x = X(0);
  GIN(0, wk_div(G(0), wk_add_scalar(wk_neg(wk_mul(x, x)), 1)));
  END
}
/* reciprocal: -grad * result^2 */
static wk_status d_reciprocal(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *y = Y(0);
  GIN(0, wk_neg(wk_mul(G(0), wk_mul(y, y))));
  END
}
static wk_status d_square(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_mul(G(0), wk_mul_scalar(X(0), 2)));
  END
}
/* frac: grad */
static wk_status d_frac(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, G(0));
  END
}
/* erfinv: grad * sqrt(pi)/2 * exp(erfinv(x)^2) */
static wk_status d_erfinv(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *y = Y(0);
  GIN(0, wk_mul(G(0), wk_mul_scalar(wk_exp(wk_mul(y, y)), 0.5 * sqrt(M_PI))));
  END
}
/* PyTorch's elu_backward (is_result=false): x <= 0 ? grad * input_scale * alpha * scale * exp(x * input_scale)
 * : grad * scale; selu and celu are elu with fixed coefficients. */
static wk_tensor *elu_grad(wk_tensor *g, wk_tensor *x, double alpha, double scale, double input_scale) {
  wk_tensor *neg = wk_mul(g, wk_mul_scalar(wk_exp(wk_mul_scalar(x, input_scale)), input_scale * alpha * scale));
  return wk_where(wk_le_scalar(x, 0), neg, wk_mul_scalar(g, scale));
}
static wk_status d_elu(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, elu_grad(G(0), X(0), FARG(1), FARG(2), FARG(3)));
  END
}
static wk_status d_celu(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, elu_grad(G(0), X(0), FARG(1), 1.0, 1.0 / FARG(1)));
  END
}
static wk_status d_selu(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, elu_grad(G(0), X(0), WK__SELU_ALPHA, WK__SELU_SCALE, 1.0));
  END
}
/* softplus_backward: x * beta > threshold ? grad : grad * sigmoid(x * beta) */
static wk_status d_softplus(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *xb = wk_mul_scalar(X(0), FARG(1));
  GIN(0, wk_where(wk_gt_scalar(xb, FARG(2)), G(0), wk_mul(G(0), wk_sigmoid(xb))));
  END
}
/* mish_backward: t = tanh(softplus(x)): grad * (t + x * sigmoid(x) * (1 - t^2)) */
static wk_status d_mish(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *x = X(0);
  CHECK(x);
  wk_value a[3] = {WK_VT(x), WK_VI(1), WK_VI(20)};
  wk_tensor *t = wk_tanh(wk__call1("softplus", a, 3));
  wk_tensor *u = wk_mul(wk_mul(x, wk_sigmoid(x)), wk_add_scalar(wk_neg(wk_mul(t, t)), 1));
  GIN(0, wk_mul(G(0), wk_add(t, u)));
  END
}
/* hardswish_backward: x < -3 ? 0 : x <= 3 ? grad * (x / 3 + 0.5) : grad */
static wk_status d_hardswish(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *x = X(0), *g = G(0);
  wk_tensor *mid = wk_where(wk_le_scalar(x, 3), wk_mul(g, wk_add_scalar(wk_div_scalar(x, 3), 0.5)), g);
  GIN(0, wk_where(wk_lt_scalar(x, -3), wk_zeros_like(g, OPT0), mid));
  END
}
/* hardsigmoid_backward: -3 < x < 3 ? grad / 6 : 0 */
static wk_status d_hardsigmoid(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *x = X(0), *g = G(0);
  wk_tensor *in = wk_logical_and(wk_gt_scalar(x, -3), wk_lt_scalar(x, 3));
  GIN(0, wk_where(in, wk_div_scalar(g, 6), wk_zeros_like(g, OPT0)));
  END
}
/* hardtanh_backward: x <= min_val || x >= max_val ? 0 : grad (relu6: min 0, max 6) */
static wk_tensor *hardtanh_grad(wk_tensor *g, wk_tensor *x, double lo, double hi) {
  wk_tensor *out = wk_logical_or(wk_le_scalar(x, lo), wk_ge_scalar(x, hi));
  return wk_where(out, wk_zeros_like(g, OPT0), g);
}
static wk_status d_hardtanh(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, hardtanh_grad(G(0), X(0), FARG(1), FARG(2)));
  END
}
static wk_status d_relu6(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, hardtanh_grad(G(0), X(0), 0, 6));
  END
}
/* log_sigmoid_backward: grad * sigmoid(-x) */
static wk_status d_log_sigmoid(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_mul(G(0), wk_sigmoid(wk_neg(X(0)))));
  END
}

/* fill_, zero_, uniform_, normal_: the old values do not matter (PyTorch: zeros_like(grad)). */
static wk_status d_zero(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_zeros_like(G(0), OPT0));
  END
}

/* ---- binary -------------------------------------------------------------------------------- */
static double alpha_of(const wk__node *n, int i) {
  if (i >= n->nargs || n->args[i].tag == WK_V_NONE) return 1;
  const wk_value *v = &n->args[i];
  return v->tag == WK_V_INT ? (double)v->u.i : v->tag == WK_V_BOOL ? v->u.b : v->u.f;
}
static wk_status d_add(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN double al = alpha_of(N, 2);
  GIN(0, G(0));
  GIN(1, al == 1 ? G(0) : wk_mul_scalar(G(0), al));
  END
}
static wk_status d_sub(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN double al = alpha_of(N, 2);
  GIN(0, G(0));
  GIN(1, wk_mul_scalar(G(0), -al));
  END
}
static wk_status d_add_scalar(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, G(0));
  END
}
static wk_status d_mul(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN if (NEEDS(0)) GIN(0, wk_mul(G(0), X(1)));
  if (NEEDS(1)) GIN(1, wk_mul(G(0), X(0)));
  END
}
static wk_status d_mul_scalar(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_mul_scalar(G(0), FARG(1)));
  END
}
static bool has_rounding(const wk__node *n) { return n->nargs > 2 && n->args[2].tag == WK_V_STR; }
static wk_status d_div(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN if (has_rounding(N)) { /* piecewise constant */
    GIN(0, wk_zeros_like(G(0), OPT0));
    GIN(1, wk_zeros_like(G(0), OPT0));
    goto done;
  }
  wk_tensor *b = X(1);
  if (NEEDS(0)) GIN(0, wk_div(G(0), b));
  if (NEEDS(1)) GIN(1, wk_neg(wk_div(wk_mul(G(0), X(0)), wk_mul(b, b))));
  END
}
static wk_status d_div_scalar(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN if (has_rounding(N)) {
    GIN(0, wk_zeros_like(G(0), OPT0));
    goto done;
  }
  GIN(0, wk_div_scalar(G(0), FARG(1)));
  END
}
/* maximum/minimum: gradient to the larger (smaller) input, split on ties. */
static wk_status minmax(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin, bool is_max) {
  BEGIN wk_tensor *a = X(0), *b = X(1);
  CHECK(a);
  CHECK(b);
  wk_tensor *win = is_max ? wk_gt(a, b) : wk_lt(a, b);
  wk_tensor *w = wk_add(wk_to_dtype(win, wk_tensor_dtype(G(0))), wk_mul_scalar(wk_to_dtype(wk_eq(a, b), wk_tensor_dtype(G(0))), 0.5));
  GIN(0, wk_mul(G(0), w));
  GIN(1, wk_mul(G(0), wk_sub(wk_ones_like(w, OPT0), w)));
  END
}
static wk_status d_maximum(const wk__bctx *c, wk_tensor *const *g, wk_tensor **gi) { return minmax(c, g, gi, true); }
static wk_status d_minimum(const wk__bctx *c, wk_tensor *const *g, wk_tensor **gi) { return minmax(c, g, gi, false); }
static wk_status minmax_scalar(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin, bool is_max) {
  BEGIN wk_tensor *a = X(0);
  double s = FARG(1);
  wk_tensor *win = is_max ? wk_gt_scalar(a, s) : wk_lt_scalar(a, s);
  wk_tensor *w = wk_add(wk_to_dtype(win, wk_tensor_dtype(G(0))), wk_mul_scalar(wk_to_dtype(wk_eq_scalar(a, s), wk_tensor_dtype(G(0))), 0.5));
  GIN(0, wk_mul(G(0), w));
  END
}
static wk_status d_maximum_s(const wk__bctx *c, wk_tensor *const *g, wk_tensor **gi) { return minmax_scalar(c, g, gi, true); }
static wk_status d_minimum_s(const wk__bctx *c, wk_tensor *const *g, wk_tensor **gi) { return minmax_scalar(c, g, gi, false); }
static wk_status d_pow(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *a = X(0), *b = X(1);
  CHECK(a);
  CHECK(b);
  if (NEEDS(0)) GIN(0, wk_mul(G(0), wk_mul(b, wk_pow(a, wk_sub_scalar(b, 1)))));
  if (NEEDS(1)) {
    /* where a == 0 and b >= 0 the derivative is 0 (PyTorch's masking) */
    wk_tensor *term = wk_mul(wk_pow(a, b), wk_log(a));
    wk_tensor *mask = wk_logical_and(wk_eq_scalar(a, 0), wk_ge_scalar(b, 0));
    GIN(1, wk_mul(G(0), wk_where(mask, wk_zeros_like(term, OPT0), term)));
  }
  END
}
static wk_status d_pow_scalar(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN double e = FARG(1);
  if (e == 0) {
    GIN(0, wk_zeros_like(G(0), OPT0));
  } else {
    GIN(0, wk_mul(G(0), wk_mul_scalar(wk_pow_scalar(X(0), e - 1), e)));
  }
  END
}

/* ---- the issue-21 binary ops (derivatives.yaml's formulas) --------------------------------- */
/* atan2: self: grad * other / (self^2 + other^2); other: -grad * self / (self^2 + other^2) */
static wk_status d_atan2(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *a = X(0), *b = X(1);
  wk_tensor *den = wk_add(wk_mul(a, a), wk_mul(b, b));
  if (NEEDS(0)) GIN(0, wk_div(wk_mul(G(0), b), den));
  if (NEEDS(1)) GIN(1, wk_neg(wk_div(wk_mul(G(0), a), den)));
  END
}
static wk_status d_atan2_s(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *a = X(0);
  double b = FARG(1);
  GIN(0, wk_div(wk_mul_scalar(G(0), b), wk_add_scalar(wk_mul(a, a), b * b)));
  END
}
/* fmod: self: grad; other: -grad * self.div(other, rounding_mode="trunc"); remainder: "floor" */
static wk_status fmod_like(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin, const char *mode) {
  BEGIN GIN(0, G(0));
  if (NEEDS(1)) GIN(1, wk_neg(wk_mul(G(0), wk_div_mode(X(0), X(1), mode))));
  END
}
static wk_status d_fmod(const wk__bctx *c, wk_tensor *const *g, wk_tensor **gi) { return fmod_like(c, g, gi, "trunc"); }
static wk_status d_remainder(const wk__bctx *c, wk_tensor *const *g, wk_tensor **gi) {
  return fmod_like(c, g, gi, "floor");
}
/* hypot: self: grad * self / result; other: grad * other / result */
static wk_status d_hypot(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *y = Y(0);
  if (NEEDS(0)) GIN(0, wk_div(wk_mul(G(0), X(0)), y));
  if (NEEDS(1)) GIN(1, wk_div(wk_mul(G(0), X(1)), y));
  END
}
static wk_status d_hypot_s(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_div(wk_mul(G(0), X(0)), Y(0)));
  END
}
/* logaddexp: self: grad / (1 + exp(other - self)); other: grad / (1 + exp(self - other)) */
static wk_status d_logaddexp(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *a = X(0), *b = X(1);
  if (NEEDS(0)) GIN(0, wk_div(G(0), wk_add_scalar(wk_exp(wk_sub(b, a)), 1)));
  if (NEEDS(1)) GIN(1, wk_div(G(0), wk_add_scalar(wk_exp(wk_sub(a, b)), 1)));
  END
}
static wk_status d_logaddexp_s(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN GIN(0, wk_div(G(0), wk_add_scalar(wk_exp(wk_add_scalar(wk_neg(X(0)), FARG(1))), 1)));
  END
}
/* copysign: self: copysign_tensor_self_backward (grad * result / self, 0 where self == 0); other: 0 */
static wk_status d_copysign(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *a = X(0), *z = wk_zeros_like(G(0), OPT0);
  CHECK(a);
  GIN(0, wk_mul(G(0), wk_where(wk_eq_scalar(a, 0), z, wk_div(Y(0), a))));
  if (N->nargs > 1 && N->args[1].tag == WK_V_TENSOR) GIN(1, z);
  END
}

#define BINARY_FORMULAS(op, nm, nms, fn, fns, saved, saved_s, outs)                               \
  {op, nm, fn, saved, outs}, {op "_", nm, fn, saved, outs}, {op ".Scalar", nms, fns, saved_s, outs}, \
      {op "_.Scalar", nms, fns, saved_s, outs}

static const wk__formula rows[] = {
    {"neg", "NegBackward0", d_neg, 0, 0}, {"neg_", "NegBackward0", d_neg, 0, 0},
    UNARY_SAVE_X("abs", "AbsBackward0", d_abs), UNARY_SAVE_Y("exp", "ExpBackward0", d_exp),
    UNARY_SAVE_X("log", "LogBackward0", d_log), UNARY_SAVE_X("log1p", "Log1PBackward0", d_log1p),
    UNARY_SAVE_Y("sqrt", "SqrtBackward0", d_sqrt), UNARY_SAVE_Y("rsqrt", "RsqrtBackward0", d_rsqrt),
    UNARY_SAVE_X("sin", "SinBackward0", d_sin), UNARY_SAVE_X("cos", "CosBackward0", d_cos),
    UNARY_SAVE_X("erf", "ErfBackward0", d_erf),
    UNARY_SAVE_Y("expm1", "Expm1Backward0", d_expm1), UNARY_SAVE_X("log2", "Log2Backward0", d_log2),
    UNARY_SAVE_X("log10", "Log10Backward0", d_log10), UNARY_SAVE_Y("exp2", "Exp2Backward0", d_exp2),
    UNARY_SAVE_Y("tan", "TanBackward0", d_tan), UNARY_SAVE_X("asin", "AsinBackward0", d_asin),
    UNARY_SAVE_X("acos", "AcosBackward0", d_acos), UNARY_SAVE_X("atan", "AtanBackward0", d_atan),
    UNARY_SAVE_X("sinh", "SinhBackward0", d_sinh), UNARY_SAVE_X("cosh", "CoshBackward0", d_cosh),
    UNARY_SAVE_X("asinh", "AsinhBackward0", d_asinh), UNARY_SAVE_X("acosh", "AcoshBackward0", d_acosh),
    UNARY_SAVE_X("atanh", "AtanhBackward0", d_atanh), UNARY_SAVE_Y("reciprocal", "ReciprocalBackward0", d_reciprocal),
    UNARY_SAVE_X("square", "PowBackward0", d_square), {"frac", "FracBackward0", d_frac, 0, 0},
    {"frac_", "FracBackward0", d_frac, 0, 0}, UNARY_SAVE_Y("erfinv", "ErfinvBackward0", d_erfinv),
    UNARY_SAVE_X("selu", "EluBackward0", d_selu), UNARY_SAVE_X("mish", "MishBackward0", d_mish),
    UNARY_SAVE_X("hardswish", "HardswishBackward0", d_hardswish),
    UNARY_SAVE_X("hardsigmoid", "HardsigmoidBackward0", d_hardsigmoid),
    UNARY_SAVE_X("relu6", "HardtanhBackward0", d_relu6), UNARY_SAVE_X("log_sigmoid", "LogSigmoidBackward0", d_log_sigmoid),
    {"softplus", "SoftplusBackward0", d_softplus, A(0), 0}, UNARY_SAVE_X("elu", "EluBackward0", d_elu),
    UNARY_SAVE_X("celu", "EluBackward0", d_celu), UNARY_SAVE_X("hardtanh", "HardtanhBackward0", d_hardtanh),
    UNARY_SAVE_Y("tanh", "TanhBackward0", d_tanh), UNARY_SAVE_Y("sigmoid", "SigmoidBackward0", d_sigmoid),
    UNARY_SAVE_Y("relu", "ReluBackward0", d_relu), UNARY_SAVE_X("silu", "SiluBackward0", d_silu),
    UNARY_SAVE_X("leaky_relu", "LeakyReluBackward0", d_leaky_relu),
    {"threshold_backward", "ThresholdBackwardBackward0", d_threshold_backward, A(1), 0},
    {"sigmoid_backward", "SigmoidBackwardBackward0", d_sigmoid_backward, A(0) | A(1), 0},
    {"tanh_backward", "TanhBackwardBackward0", d_tanh_backward, A(0) | A(1), 0},
    {"gelu", "GeluBackward0", d_gelu, A(0), 0},
    UNARY_SAVE_X("clamp", "ClampBackward1", d_clamp),
    {"nan_to_num", "NanToNumBackward0", d_nan_to_num, A(0), 0},
    {"where.self", "WhereBackward0", d_where, A(0), 0},
    {"fill_", "FillBackward0", d_zero, 0, 0}, {"zero_", "ZeroBackward0", d_zero, 0, 0},
    {"uniform_", "UniformBackward0", d_zero, 0, 0}, {"normal_", "NormalBackward0", d_zero, 0, 0},
    {"add", "AddBackward0", d_add, 0, 0}, {"add_", "AddBackward0", d_add, 0, 0},
    {"add.Scalar", "AddBackward1", d_add_scalar, 0, 0}, {"add_.Scalar", "AddBackward1", d_add_scalar, 0, 0},
    {"sub", "SubBackward0", d_sub, 0, 0}, {"sub_", "SubBackward0", d_sub, 0, 0},
    {"sub.Scalar", "SubBackward1", d_add_scalar, 0, 0}, {"sub_.Scalar", "SubBackward1", d_add_scalar, 0, 0},
    {"mul", "MulBackward0", d_mul, A(0) | A(1), 0}, {"mul_", "MulBackward0", d_mul, A(0) | A(1), 0},
    {"mul.Scalar", "MulBackward1", d_mul_scalar, 0, 0}, {"mul_.Scalar", "MulBackward1", d_mul_scalar, 0, 0},
    {"div", "DivBackward0", d_div, A(0) | A(1), 0}, {"div_", "DivBackward0", d_div, A(0) | A(1), 0},
    {"div.Scalar", "DivBackward1", d_div_scalar, 0, 0}, {"div_.Scalar", "DivBackward1", d_div_scalar, 0, 0},
    {"maximum", "MaximumBackward0", d_maximum, A(0) | A(1), 0}, {"maximum_", "MaximumBackward0", d_maximum, A(0) | A(1), 0},
    {"maximum.Scalar", "MaximumBackward1", d_maximum_s, A(0), 0}, {"maximum_.Scalar", "MaximumBackward1", d_maximum_s, A(0), 0},
    {"minimum", "MinimumBackward0", d_minimum, A(0) | A(1), 0}, {"minimum_", "MinimumBackward0", d_minimum, A(0) | A(1), 0},
    {"minimum.Scalar", "MinimumBackward1", d_minimum_s, A(0), 0}, {"minimum_.Scalar", "MinimumBackward1", d_minimum_s, A(0), 0},
    {"pow", "PowBackward1", d_pow, A(0) | A(1), 0}, {"pow_", "PowBackward1", d_pow, A(0) | A(1), 0},
    {"pow.Scalar", "PowBackward0", d_pow_scalar, A(0), 0}, {"pow_.Scalar", "PowBackward0", d_pow_scalar, A(0), 0},
    BINARY_FORMULAS("atan2", "Atan2Backward0", "Atan2Backward0", d_atan2, d_atan2_s, A(0) | A(1), A(0), 0),
    BINARY_FORMULAS("fmod", "FmodBackward1", "FmodBackward0", d_fmod, d_add_scalar, A(0) | A(1), 0, 0),
    BINARY_FORMULAS("remainder", "RemainderBackward1", "RemainderBackward0", d_remainder, d_add_scalar, A(0) | A(1), 0, 0),
    BINARY_FORMULAS("hypot", "HypotBackward0", "HypotBackward0", d_hypot, d_hypot_s, A(0) | A(1), A(0), A(0)),
    BINARY_FORMULAS("logaddexp", "LogaddexpBackward0", "LogaddexpBackward0", d_logaddexp, d_logaddexp_s, A(0) | A(1), A(0), 0),
    BINARY_FORMULAS("copysign", "CopysignBackward0", "CopysignBackward1", d_copysign, d_copysign, A(0), A(0), A(0)),
};
const wk__formula_family wk__formulas_pointwise = {rows, sizeof rows / sizeof rows[0]};
