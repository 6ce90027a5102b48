/* onnx plugin, export: one Wick op -> ONNX nodes. Each handler reads the
 * node's boxed arguments (graph.h's wk_garg) and writes ONNX nodes with the
 * helpers of export.c; the table at the end says which op goes where. An op
 * that is not in the table, or an argument ONNX cannot express, fails with
 * the op and the module path (ox_fail). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "onnx_int.h"

typedef struct xctx {
  ox_ex *ex;
  int node;
  const wk_garg *a;
  int na;
  const char *onnx; /* the table's ONNX op type, for the simple handlers */
  double k;         /* the table's constant */
} xctx;
typedef wk_status (*xfn)(xctx *c);

#define EX (c->ex)
#define G (c->ex->g)
#define FAIL(...) ox_fail(c->ex, WK_ERR_UNSUPPORTED, __VA_ARGS__)
#define NEED(p)                                                                                     \
  do {                                                                                              \
    if (!(p)) return EX->ar.oom ? ox_fail(EX, WK_ERR_NO_MEMORY, "out of memory") : wk_last_error(); \
  } while (0)
#define NEEDP(p)           \
  do {                     \
    if (!(p)) return NULL; \
  } while (0)

/* ---- argument access ---- */
static bool is_none(const xctx *c, int i) {
  return i >= c->na || c->a[i].tag == WK_V_NONE;
}
static int tv(const xctx *c, int i) {
  return i < c->na && c->a[i].tag == WK_V_TENSOR ? c->a[i].u.v : -1;
}
static const char *tin(const xctx *c, int i) {
  return ox_name(c->ex, tv(c, i));
}
static wk_dtype vdt(const xctx *c, int v) {
  return wk_graph_value_dtype(G, v);
}
static int vnd(const xctx *c, int v) {
  return wk_graph_value_ndim(G, v);
}
static const wk_symdim *vdims(const xctx *c, int v) {
  return wk_graph_value_dims(G, v);
}
static int outv(const xctx *c, int i) {
  return wk_graph_node_output(G, c->node, i);
}
static const char *out(const xctx *c, int i) {
  return ox_name(c->ex, outv(c, i));
}
static bool out_used(const xctx *c, int i) {
  int v = outv(c, i);
  return v >= 0 && wk_graph_value_num_uses(G, v) > 0;
}
static bool is_const(wk_symdim d) {
  return d.a == 0 || d.sym0 < 0;
}

/* A constant int argument (symbolic ones are refused: they only appear in sizes). */
static wk_status cint(xctx *c, int i, int64_t *v) {
  if (i >= c->na || c->a[i].tag != WK_V_INT) return FAIL("argument %d is not an int", i);
  if (!is_const(c->a[i].u.sym)) return FAIL("argument %d is a symbolic int, which this op cannot export", i);
  *v = wk_symdim_eval(c->a[i].u.sym, NULL);
  return WK_OK;
}
/* An int[] argument of constants, at most 8 elements. */
static wk_status cints(xctx *c, int i, int64_t *v, int *n) {
  if (i < c->na && c->a[i].tag == WK_V_INT) {
    *n = 1;
    return cint(c, i, v);
  }
  if (i >= c->na || c->a[i].tag != WK_V_INTS || c->a[i].len > 8) return FAIL("argument %d is not an int list", i);
  *n = c->a[i].len;
  for (int k = 0; k < *n; k++) {
    if (!is_const(c->a[i].u.syms[k])) return FAIL("argument %d holds a symbolic int", i);
    v[k] = wk_symdim_eval(c->a[i].u.syms[k], NULL);
  }
  return WK_OK;
}
/* int[ns] arguments (ns <= 3): one value repeats; an empty list takes dflt (max_pool's stride = kernel). */
static wk_status tuple(xctx *c, int i, int64_t *v, int ns, const int64_t *dflt) {
  int64_t t[8];
  int n;
  wk_status st = cints(c, i, t, &n);
  if (st) return st;
  if (!(n == 0 && dflt) && n != 1 && n != ns) return FAIL("argument %d has %d elements, %d expected", i, n, ns);
  for (int k = 0; k < ns; k++) v[k] = n == 0 ? dflt[k] : n == 1 ? t[0] : t[k];
  return WK_OK;
}
static double num(const xctx *c, int i, double dflt) {
  if (i >= c->na) return dflt;
  const wk_garg *a = &c->a[i];
  if (a->tag == WK_V_FLOAT) return a->u.f;
  if (a->tag == WK_V_INT) return (double)wk_symdim_eval(a->u.sym, NULL);
  if (a->tag == WK_V_BOOL) return a->u.b;
  return dflt;
}
static bool flag(const xctx *c, int i) {
  return i < c->na && c->a[i].tag == WK_V_BOOL && c->a[i].u.b;
}
static int64_t wrap_dim(int64_t d, int nd) {
  return d < 0 ? d + nd : d;
}

/* ---- building blocks ---- */
static const char *node1(xctx *c, const char *op, const char *const *ins, int nin, const char *dst) {
  const char *o = dst ? dst : ox_tmp(EX);
  if (!o || !ox_node(EX, op, ins, nin, &o, 1)) return NULL;
  return o;
}
static Onnx__NodeProto *last(xctx *c) {
  return EX->nodes[EX->nnodes - 1];
}
static const char *cast(xctx *c, const char *x, wk_dtype from, wk_dtype to) {
  if (!x || from == to) return x;
  const char *o = node1(c, "Cast", &x, 1, NULL);
  if (o) ox_attr_i(EX, last(c), "to", ox_onnx_type(to));
  return o;
}
static const char *scalar(xctx *c, wk_dtype dt, double v) {
  return ox_const_scalar(EX, dt, v);
}
static const char *bin(xctx *c, const char *op, const char *x, const char *y, const char *dst) {
  const char *in[] = {x, y};
  return x && y ? node1(c, op, in, 2, dst) : NULL;
}
static const char *un(xctx *c, const char *op, const char *x, const char *dst) {
  return x ? node1(c, op, &x, 1, dst) : NULL;
}
/* The graph output's name for result 0, or a rename of the result to x when
 * the op is an identity (alias, contiguous, same-dtype to). */
static wk_status same_as(xctx *c, const char *x) {
  int v = outv(c, 0);
  if (EX->named_out[v]) { /* written under an output's name: copy */
    NEED(un(c, "Identity", x, out(c, 0)));
    return WK_OK;
  }
  EX->vname[v] = (char *)x;
  return WK_OK;
}
static wk_status no_extra_outputs(xctx *c, int from, const char *what) {
  for (int i = from; i < wk_graph_node_num_outputs(G, c->node); i++)
    if (out_used(c, i)) return FAIL("its result %d (%s) is used, and ONNX has no equivalent", i, what);
  return WK_OK;
}
/* An int64 1-D shape tensor for `nd` dims d[], where k of them may be given
 * as literals lit[] (lit_ok[k]); the rest are computed from the symbols. */
static const char *shape_value(xctx *c, const wk_symdim *d, int nd, const int64_t *lit, const bool *lit_ok) {
  const char *parts[WK_MAX_DIMS + 1];
  int np = 0;
  int64_t run[WK_MAX_DIMS];
  int nrun = 0;
  for (int k = 0; k <= nd; k++) {
    bool literal = k < nd && (lit_ok[k] || is_const(d[k]));
    if (literal) {
      run[nrun++] = lit_ok[k] ? lit[k] : wk_symdim_eval(d[k], NULL);
      continue;
    }
    if (nrun) {
      NEEDP(parts[np++] = ox_const_i64(EX, run, nrun, false));
      nrun = 0;
    }
    if (k < nd) NEEDP(parts[np++] = ox_symdim_value(EX, d[k]));
  }
  if (np == 1) return parts[0];
  const char *o = node1(c, "Concat", parts, np, NULL);
  if (o) ox_attr_i(EX, last(c), "axis", 0);
  return o;
}

/* ---- pointwise ---- */
/* The tensor input i, cast to dtype dt. */
static const char *tin_as(xctx *c, int i, wk_dtype dt) {
  return cast(c, tin(c, i), vdt(c, tv(c, i)), dt);
}

static wk_status x_unary(xctx *c) { /* op(x), computed in the result's dtype */
  NEED(un(c, c->onnx, tin_as(c, 0, vdt(c, outv(c, 0))), out(c, 0)));
  return WK_OK;
}
static wk_status x_pred(xctx *c) { /* bool results: IsNaN, IsInf, Not (on bool) */
  const char *x = tin(c, 0);
  if (!strcmp(c->onnx, "Not")) x = cast(c, x, vdt(c, tv(c, 0)), WK_BOOL);
  NEED(un(c, c->onnx, x, out(c, 0)));
  return WK_OK;
}
static wk_status x_isfinite(xctx *c) {
  const char *x = tin(c, 0);
  NEED(un(c, "Not", bin(c, "Or", un(c, "IsNaN", x, NULL), un(c, "IsInf", x, NULL), NULL), out(c, 0)));
  return WK_OK;
}
/* f(x) built from other ops; c->onnx names which */
static wk_status x_composed(xctx *c) {
  wk_dtype dt = vdt(c, outv(c, 0));
  const char *x = tin_as(c, 0, dt), *o = out(c, 0), *r = NULL;
  const char *op = c->onnx;
  if (!strcmp(op, "rsqrt"))
    r = un(c, "Reciprocal", un(c, "Sqrt", x, NULL), o);
  else if (!strcmp(op, "log1p"))
    r = un(c, "Log", bin(c, "Add", x, scalar(c, dt, 1), NULL), o);
  else if (!strcmp(op, "expm1"))
    r = bin(c, "Sub", un(c, "Exp", x, NULL), scalar(c, dt, 1), o);
  else if (!strcmp(op, "log2"))
    r = bin(c, "Div", un(c, "Log", x, NULL), scalar(c, dt, log(2.0)), o);
  else if (!strcmp(op, "log10"))
    r = bin(c, "Div", un(c, "Log", x, NULL), scalar(c, dt, log(10.0)), o);
  else if (!strcmp(op, "exp2"))
    r = bin(c, "Pow", scalar(c, dt, 2), x, o);
  else if (!strcmp(op, "square"))
    r = bin(c, "Mul", x, x, o);
  else if (!strcmp(op, "silu"))
    r = bin(c, "Mul", x, un(c, "Sigmoid", x, NULL), o);
  else if (!strcmp(op, "log_sigmoid"))
    r = un(c, "Neg", un(c, "Softplus", un(c, "Neg", x, NULL), NULL), o);
  else if (!strcmp(op, "relu6")) {
    const char *in[] = {x, scalar(c, dt, 0), scalar(c, dt, 6)};
    r = in[1] && in[2] ? node1(c, "Clip", in, 3, o) : NULL;
  } else if (!strcmp(op, "hardsigmoid") || !strcmp(op, "hardswish")) {
    bool swish = op[4] == 's' && op[5] == 'w';
    if (swish && EX->opset >= 14) {
      r = un(c, "HardSwish", x, o);
    } else {
      r = un(c, "HardSigmoid", x, swish ? NULL : o);
      if (r) ox_attr_f(EX, last(c), "alpha", 1.0 / 6), ox_attr_f(EX, last(c), "beta", 0.5);
      if (r && swish) r = bin(c, "Mul", x, r, o);
    }
  } else if (!strcmp(op, "mish")) {
    r = EX->opset >= 18 ? un(c, "Mish", x, o) : bin(c, "Mul", x, un(c, "Tanh", un(c, "Softplus", x, NULL), NULL), o);
  }
  NEED(r);
  return WK_OK;
}
static wk_status x_leaky_relu(xctx *c) {
  NEED(un(c, "LeakyRelu", tin(c, 0), out(c, 0)));
  ox_attr_f(EX, last(c), "alpha", num(c, 1, 0.01));
  return WK_OK;
}
static wk_status x_elu(xctx *c) {
  if (num(c, 2, 1) != 1 || num(c, 3, 1) != 1) return FAIL("scale and input_scale other than 1 have no ONNX Elu");
  NEED(un(c, "Elu", tin(c, 0), out(c, 0)));
  ox_attr_f(EX, last(c), "alpha", num(c, 1, 1));
  return WK_OK;
}
static wk_status x_celu(xctx *c) {
  NEED(un(c, "Celu", tin(c, 0), out(c, 0)));
  ox_attr_f(EX, last(c), "alpha", num(c, 1, 1));
  return WK_OK;
}
static wk_status x_clip(xctx *c) { /* hardtanh(min_val, max_val), clamp(min?, max?) */
  wk_dtype dt = vdt(c, outv(c, 0));
  bool ht = !strcmp(c->onnx, "hardtanh");
  const char *in[3] = {tin_as(c, 0, dt), NULL, NULL};
  for (int k = 0; k < 2; k++)
    if (ht || !is_none(c, 1 + k)) NEED(in[1 + k] = scalar(c, dt, num(c, 1 + k, k ? 1 : -1)));
  NEED(in[0] && node1(c, "Clip", in, 3, out(c, 0)));
  return WK_OK;
}
static wk_status x_softplus(xctx *c) {
  wk_dtype dt = vdt(c, outv(c, 0));
  double beta = num(c, 1, 1);
  /* PyTorch's threshold (x when beta*x > threshold) differs from log1p(exp(x)) by under an ulp there */
  if (beta == 1)
    NEED(un(c, "Softplus", tin(c, 0), out(c, 0)));
  else
    NEED(bin(c, "Div", un(c, "Softplus", bin(c, "Mul", tin(c, 0), scalar(c, dt, beta), NULL), NULL),
             scalar(c, dt, beta), out(c, 0)));
  return WK_OK;
}
static wk_status x_gelu(xctx *c) {
  wk_dtype dt = vdt(c, outv(c, 0));
  const char *appr = c->na > 1 && c->a[1].tag == WK_V_STR ? c->a[1].u.s : "none";
  bool tanh_ = !strcmp(appr, "tanh");
  if (!tanh_ && strcmp(appr, "none")) return FAIL("approximate='%s' is not 'none' or 'tanh'", appr);
  const char *x = tin(c, 0), *o = out(c, 0);
  if (EX->opset >= 20) {
    NEED(un(c, "Gelu", x, o));
    if (tanh_) ox_attr_s(EX, last(c), "approximate", "tanh");
    return WK_OK;
  }
  const char *inner;
  if (!tanh_) { /* 0.5 x (1 + erf(x / sqrt 2)) */
    inner = un(c, "Erf", bin(c, "Div", x, scalar(c, dt, sqrt(2.0)), NULL), NULL);
  } else { /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
    const char *x3 = bin(c, "Mul", bin(c, "Mul", x, x, NULL), x, NULL);
    const char *s = bin(c, "Add", x, bin(c, "Mul", x3, scalar(c, dt, 0.044715), NULL), NULL);
    inner = un(c, "Tanh", bin(c, "Mul", s, scalar(c, dt, sqrt(2.0 / M_PI)), NULL), NULL);
  }
  NEED(bin(c, "Mul", bin(c, "Mul", x, scalar(c, dt, 0.5), NULL), bin(c, "Add", inner, scalar(c, dt, 1), NULL), o));
  return WK_OK;
}

/* The other operand of a binary op: tensor input 1 or a scalar in dtype dt. */
static const char *operand(xctx *c, int i, wk_dtype dt) {
  if (i < c->na && c->a[i].tag == WK_V_TENSOR) return tin_as(c, i, dt);
  return scalar(c, dt, num(c, i, 0));
}
/* The dtype two operands meet in for a comparison or logical op. */
static wk_dtype common(xctx *c) {
  wk_dtype a = vdt(c, tv(c, 0));
  if (c->na < 2 || c->a[1].tag != WK_V_TENSOR) return a == WK_BOOL && c->a[1].tag == WK_V_FLOAT ? WK_F32 : a;
  wk_dtype b = vdt(c, tv(c, 1));
  if (a == b) return a;
  bool fa = wk_dtype_is_floating(a), fb = wk_dtype_is_floating(b);
  if (fa != fb) return fa ? a : b;
  return wk_dtype_size(a) >= wk_dtype_size(b) ? a : b;
}
static wk_status x_binary(xctx *c) { /* add/sub with alpha, mul, div, max, min, pow: in the result's dtype */
  wk_dtype dt = vdt(c, outv(c, 0));
  const char *x = tin_as(c, 0, dt), *y = operand(c, 1, dt);
  const char *op = c->onnx;
  if (!strcmp(op, "Add") || !strcmp(op, "Sub")) {
    double alpha = num(c, 2, 1);
    if (alpha != 1) y = bin(c, "Mul", y, scalar(c, dt, alpha), NULL);
  }
  if (!strcmp(op, "Div")) {
    const char *mode = c->na > 2 && c->a[2].tag == WK_V_STR ? c->a[2].u.s : NULL;
    if (mode && strcmp(mode, "floor")) return FAIL("rounding_mode='%s' has no ONNX equivalent", mode);
    if (mode && !wk_dtype_is_floating(dt)) return FAIL("rounding_mode='floor' on integers has no ONNX equivalent");
    if (mode) {
      NEED(un(c, "Floor", bin(c, "Div", x, y, NULL), out(c, 0)));
      return WK_OK;
    }
  }
  if (!strcmp(op, "Mod") && !wk_dtype_is_floating(dt) && !strcmp(c->onnx, "Mod") && c->k == 0) {
    NEED(bin(c, "Mod", x, y, out(c, 0)));
    return WK_OK;
  }
  NEED(bin(c, op, x, y, out(c, 0)));
  if (!strcmp(op, "Mod")) {
    if (c->k == 0 && wk_dtype_is_floating(dt)) return FAIL("remainder on floating point has no ONNX equivalent");
    ox_attr_i(EX, last(c), "fmod", (int64_t)c->k);
  }
  return WK_OK;
}
static wk_status x_compare(xctx *c) { /* Equal, Less, ...; k = 1: negate (ne) */
  wk_dtype dt = common(c);
  const char *r = bin(c, c->onnx, tin_as(c, 0, dt), operand(c, 1, dt), c->k ? NULL : out(c, 0));
  if (c->k) r = un(c, "Not", r, out(c, 0));
  NEED(r);
  return WK_OK;
}
static wk_status x_logical(xctx *c) { /* And, Or on bools; Bitwise* on integers */
  wk_dtype dt = !strncmp(c->onnx, "Bitwise", 7) ? vdt(c, outv(c, 0)) : WK_BOOL;
  if (dt == WK_BOOL && !strncmp(c->onnx, "Bitwise", 7)) return FAIL("bitwise ops on bool have no ONNX equivalent");
  if (!strncmp(c->onnx, "Bitwise", 7) && EX->opset < 18) return FAIL("%s needs opset 18", c->onnx);
  NEED(bin(c, c->onnx, tin_as(c, 0, dt), operand(c, 1, dt), out(c, 0)));
  return WK_OK;
}
static wk_status x_where(xctx *c) {
  wk_dtype dt = vdt(c, outv(c, 0));
  const char *in[] = {tin_as(c, 0, WK_BOOL), tin_as(c, 1, dt), tin_as(c, 2, dt)};
  NEED(in[0] && in[1] && in[2] && node1(c, "Where", in, 3, out(c, 0)));
  return WK_OK;
}

/* ---- shapes and views ---- */
static wk_status x_identity(xctx *c) {
  return same_as(c, tin(c, 0));
}
static wk_status x_to_dtype(xctx *c) {
  wk_dtype from = vdt(c, tv(c, 0)), to = vdt(c, outv(c, 0));
  if (from == to) return same_as(c, tin(c, 0));
  NEED(un(c, "Cast", tin(c, 0), out(c, 0)));
  ox_attr_i(EX, last(c), "to", ox_onnx_type(to));
  return WK_OK;
}
static wk_status x_reshape(xctx *c) { /* view, reshape, flatten: the result's (symbolic) shape */
  int vi = tv(c, 0), vo = outv(c, 0);
  int ni = vnd(c, vi), no = vnd(c, vo);
  const wk_symdim *di = vdims(c, vi), *dout = vdims(c, vo);
  int64_t lit[WK_MAX_DIMS];
  bool ok[WK_MAX_DIMS] = {0};
  int left = 0, where = -1;
  for (int k = 0; k < no; k++) {
    if (is_const(dout[k])) {
      if (wk_symdim_eval(dout[k], NULL) == 0) return FAIL("a reshape to a zero-size dim is not exported");
      continue;
    }
    if (k < ni && !memcmp(&dout[k], &di[k], sizeof di[k])) { /* ONNX Reshape: 0 copies the input's dim */
      ok[k] = true;
      lit[k] = 0;
      continue;
    }
    left++;
    where = k;
  }
  if (left == 1) ok[where] = true, lit[where] = -1; /* the one left is inferred */
  const char *shape = shape_value(c, dout, no, lit, ok);
  NEED(bin(c, "Reshape", tin(c, 0), shape, out(c, 0)));
  return WK_OK;
}
static wk_status x_unsqueeze(xctx *c) {
  int64_t d;
  wk_status st = cint(c, 1, &d);
  if (st) return st;
  d = wrap_dim(d, vnd(c, outv(c, 0)));
  NEED(bin(c, "Unsqueeze", tin(c, 0), ox_const_i64(EX, &d, 1, false), out(c, 0)));
  return WK_OK;
}
static wk_status x_squeeze(xctx *c) { /* squeeze(): every static size-1 dim; squeeze.dim(d) */
  int vi = tv(c, 0), ni = vnd(c, vi);
  const wk_symdim *di = vdims(c, vi);
  int64_t axes[WK_MAX_DIMS];
  int n = 0;
  if (c->na > 1) {
    int64_t d;
    wk_status st = cint(c, 1, &d);
    if (st) return st;
    d = wrap_dim(d, ni);
    if (ni == 0 || !is_const(di[d]) || wk_symdim_eval(di[d], NULL) != 1) return same_as(c, tin(c, 0));
    axes[n++] = d;
  } else {
    for (int k = 0; k < ni; k++) {
      if (!is_const(di[k])) return FAIL("squeeze() of a symbolic dim depends on its value");
      if (wk_symdim_eval(di[k], NULL) == 1) axes[n++] = k;
    }
    if (!n) return same_as(c, tin(c, 0));
  }
  NEED(bin(c, "Squeeze", tin(c, 0), ox_const_i64(EX, axes, n, false), out(c, 0)));
  return WK_OK;
}
static wk_status x_transpose(xctx *c) { /* permute(dims), transpose(d0, d1), t() */
  int nd = vnd(c, tv(c, 0));
  int64_t perm[WK_MAX_DIMS];
  for (int k = 0; k < nd; k++) perm[k] = k;
  const char *op = wk_op_name(wk_graph_node_op(G, c->node));
  if (!strcmp(op, "permute")) {
    int n;
    wk_status st = cints(c, 1, perm, &n);
    if (st) return st;
    for (int k = 0; k < n; k++) perm[k] = wrap_dim(perm[k], nd);
  } else if (!strcmp(op, "t")) {
    if (nd < 2) return same_as(c, tin(c, 0));
    perm[0] = 1, perm[1] = 0;
  } else {
    int64_t d0, d1;
    wk_status st = cint(c, 1, &d0);
    if (!st) st = cint(c, 2, &d1);
    if (st) return st;
    d0 = wrap_dim(d0, nd), d1 = wrap_dim(d1, nd);
    perm[d0] = d1, perm[d1] = d0;
  }
  NEED(un(c, "Transpose", tin(c, 0), out(c, 0)));
  ox_attr_ints(EX, last(c), "perm", perm, nd);
  return WK_OK;
}
static wk_status x_expand(xctx *c) {
  int vi = tv(c, 0), vo = outv(c, 0);
  int ni = vnd(c, vi), no = vnd(c, vo);
  const wk_symdim *di = vdims(c, vi), *dout = vdims(c, vo);
  int64_t lit[WK_MAX_DIMS];
  bool ok[WK_MAX_DIMS] = {0};
  for (int k = 0; k < no; k++) {
    int j = k - (no - ni);
    if (j >= 0 && !memcmp(&dout[k], &di[j], sizeof *di)) ok[k] = true, lit[k] = 1; /* broadcasting keeps it */
  }
  NEED(bin(c, "Expand", tin(c, 0), shape_value(c, dout, no, lit, ok), out(c, 0)));
  return WK_OK;
}
/* zeros, ones, full and their _like forms: a 0-d constant expanded to the result's (symbolic) shape */
static wk_status x_fill(xctx *c) {
  const char *op = wk_op_name(wk_graph_node_op(G, c->node));
  double v = strstr(op, "full") ? num(c, 1, 0) : c->k;
  int vo = outv(c, 0), no = vnd(c, vo);
  bool ok[WK_MAX_DIMS] = {0};
  const char *k = ox_const_scalar(EX, vdt(c, vo), v);
  NEED(k);
  NEED(bin(c, "Expand", k, shape_value(c, vdims(c, vo), no, NULL, ok), out(c, 0)));
  return WK_OK;
}
static wk_status slice(xctx *c, int64_t dim, int64_t start, int64_t end, int64_t step, const char *dst) {
  const char *in[] = {tin(c, 0), ox_const_i64(EX, &start, 1, false), ox_const_i64(EX, &end, 1, false),
                      ox_const_i64(EX, &dim, 1, false), ox_const_i64(EX, &step, 1, false)};
  NEED(in[1] && in[2] && in[3] && in[4] && node1(c, "Slice", in, 5, dst));
  return WK_OK;
}
static wk_status x_slice(xctx *c) { /* slice(dim, start?, end?, step) */
  int64_t dim, start = 0, end = INT64_MAX, step = 1;
  wk_status st = cint(c, 1, &dim);
  if (!st && !is_none(c, 2)) st = cint(c, 2, &start);
  if (!st && !is_none(c, 3)) st = cint(c, 3, &end);
  if (!st && !is_none(c, 4)) st = cint(c, 4, &step);
  if (st) return st;
  return slice(c, wrap_dim(dim, vnd(c, tv(c, 0))), start, end, step, out(c, 0));
}
static wk_status x_narrow(xctx *c) {
  int64_t dim, start, len;
  wk_status st = cint(c, 1, &dim);
  if (!st) st = cint(c, 2, &start);
  if (!st) st = cint(c, 3, &len);
  if (st) return st;
  return slice(c, wrap_dim(dim, vnd(c, tv(c, 0))), start, start + len, 1, out(c, 0));
}
static wk_status x_select(xctx *c) {
  int64_t dim, idx;
  wk_status st = cint(c, 1, &dim);
  if (!st) st = cint(c, 2, &idx);
  if (st) return st;
  NEED(bin(c, "Gather", tin(c, 0), ox_const_i64(EX, &idx, 1, true), out(c, 0)));
  ox_attr_i(EX, last(c), "axis", wrap_dim(dim, vnd(c, tv(c, 0))));
  return WK_OK;
}
static wk_status x_cat(xctx *c) { /* cat, stack */
  if (c->a[0].tag != WK_V_TENSORS || c->a[0].len < 1 || c->a[0].len > 1024) return FAIL("expects 1 to 1024 tensors");
  int n = c->a[0].len;
  bool stack = !strcmp(c->onnx, "stack");
  int64_t dim;
  wk_status st = cint(c, 1, &dim);
  if (st) return st;
  wk_dtype dt = vdt(c, outv(c, 0));
  dim = wrap_dim(dim, vnd(c, outv(c, 0)));
  const char **in = ox_alloc(&EX->ar, sizeof *in * (size_t)n);
  NEED(in);
  int k = 0;
  for (int i = 0; i < n; i++) {
    int v = c->a[0].u.vs[i];
    if (v < 0) return FAIL("tensor %d of the list is None", i);
    const char *x = cast(c, ox_name(EX, v), vdt(c, v), dt);
    if (stack) x = bin(c, "Unsqueeze", x, ox_const_i64(EX, &dim, 1, false), NULL);
    NEED(x);
    in[k++] = x;
  }
  NEED(node1(c, "Concat", in, k, out(c, 0)));
  ox_attr_i(EX, last(c), "axis", dim);
  return WK_OK;
}
static wk_status x_repeat(xctx *c) {
  int64_t r[8];
  int n;
  wk_status st = cints(c, 1, r, &n);
  if (st) return st;
  if (n != vnd(c, tv(c, 0))) return FAIL("repeats with more dims than the input have no ONNX Tile");
  NEED(bin(c, "Tile", tin(c, 0), ox_const_i64(EX, r, n, false), out(c, 0)));
  return WK_OK;
}
static wk_status x_flip(xctx *c) {
  int64_t d[8];
  int n;
  wk_status st = cints(c, 1, d, &n);
  if (st) return st;
  int nd = vnd(c, tv(c, 0));
  int64_t starts[8], ends[8], steps[8];
  for (int k = 0; k < n; k++) d[k] = wrap_dim(d[k], nd), starts[k] = -1, ends[k] = INT64_MIN, steps[k] = -1;
  const char *in[] = {tin(c, 0), ox_const_i64(EX, starts, n, false), ox_const_i64(EX, ends, n, false),
                      ox_const_i64(EX, d, n, false), ox_const_i64(EX, steps, n, false)};
  NEED(in[1] && in[2] && in[3] && in[4] && node1(c, "Slice", in, 5, out(c, 0)));
  return WK_OK;
}
static wk_status x_pad(xctx *c) { /* pad(pad, mode, value): PyTorch's last-dim-first pairs */
  int64_t p[8];
  int n;
  wk_status st = cints(c, 1, p, &n);
  if (st) return st;
  int nd = vnd(c, tv(c, 0));
  if (n % 2 || n / 2 > nd) return FAIL("pad has %d elements for a %d-dim input", n, nd);
  const char *mode = c->na > 2 && c->a[2].tag == WK_V_STR ? c->a[2].u.s : "constant";
  if (strcmp(mode, "constant") && strcmp(mode, "reflect") && strcmp(mode, "replicate"))
    return FAIL("mode '%s' has no ONNX Pad equivalent", mode);
  int64_t pads[2 * WK_MAX_DIMS] = {0};
  for (int k = 0; k < n / 2; k++) {
    int d = nd - 1 - k;
    pads[d] = p[2 * k];
    pads[nd + d] = p[2 * k + 1];
  }
  wk_dtype dt = vdt(c, outv(c, 0));
  const char *in[3] = {tin(c, 0), ox_const_i64(EX, pads, 2 * nd, false), NULL};
  if (!strcmp(mode, "constant")) NEED(in[2] = scalar(c, dt, num(c, 3, 0)));
  NEED(in[1] && node1(c, "Pad", in, 3, out(c, 0)));
  ox_attr_s(EX, last(c), "mode", !strcmp(mode, "replicate") ? "edge" : mode);
  return WK_OK;
}

/* ---- linear algebra ---- */
static wk_status x_matmul(xctx *c) { /* mm, bmm, matmul */
  wk_dtype dt = vdt(c, outv(c, 0));
  NEED(bin(c, "MatMul", tin_as(c, 0, dt), tin_as(c, 1, dt), out(c, 0)));
  return WK_OK;
}
static wk_status x_linear(xctx *c) {
  int nd = vnd(c, tv(c, 0));
  if (nd == 2) { /* Gemm(x, W, b, transB=1), as PyTorch writes it */
    const char *in[] = {tin(c, 0), tin(c, 1), is_none(c, 2) ? NULL : tin(c, 2)};
    NEED(node1(c, "Gemm", in, in[2] ? 3 : 2, out(c, 0)));
    ox_attr_i(EX, last(c), "transB", 1);
    return WK_OK;
  }
  int64_t perm[2] = {1, 0};
  const char *wt = un(c, "Transpose", tin(c, 1), NULL);
  NEED(wt);
  ox_attr_ints(EX, last(c), "perm", perm, vnd(c, tv(c, 1)) == 2 ? 2 : 1);
  if (is_none(c, 2))
    NEED(bin(c, "MatMul", tin(c, 0), wt, out(c, 0)));
  else
    NEED(bin(c, "Add", bin(c, "MatMul", tin(c, 0), wt, NULL), tin(c, 2), out(c, 0)));
  return WK_OK;
}
static wk_status x_addmm(xctx *c) { /* beta * self + alpha * mat1 @ mat2 */
  wk_dtype dt = vdt(c, outv(c, 0));
  const char *in[] = {tin_as(c, 1, dt), tin_as(c, 2, dt), tin_as(c, 0, dt)};
  NEED(in[0] && in[1] && in[2] && node1(c, "Gemm", in, 3, out(c, 0)));
  ox_attr_f(EX, last(c), "beta", num(c, 3, 1));
  ox_attr_f(EX, last(c), "alpha", num(c, 4, 1));
  return WK_OK;
}

/* ---- nn ---- */
/* conv2d / conv3d and the pools: the table's constant is the number of spatial dims (2 or 3). */
static int spatial(const xctx *c) {
  return (int)c->k;
}
/* ONNX's pads [b1, .., bn, e1, .., en] from PyTorch's symmetric padding. */
static void onnx_pads(int64_t *pads, const int64_t *p, int ns) {
  for (int i = 0; i < ns; i++) pads[i] = pads[ns + i] = p[i];
}
static bool all_one(const int64_t *v, int ns) {
  for (int i = 0; i < ns; i++)
    if (v[i] != 1) return false;
  return true;
}
static wk_status x_conv(xctx *c) {
  int ns = spatial(c);
  int64_t s[3], p[3], d[3], groups, k[3], pads[6];
  wk_status st = tuple(c, 3, s, ns, NULL);
  if (!st) st = tuple(c, 4, p, ns, NULL);
  if (!st) st = tuple(c, 5, d, ns, NULL);
  if (!st) st = cint(c, 6, &groups);
  if (st) return st;
  int w = tv(c, 1);
  const wk_symdim *wd = vdims(c, w);
  bool ok = vnd(c, w) == ns + 2;
  for (int i = 0; i < ns && ok; i++) ok = is_const(wd[2 + i]);
  if (!ok) return FAIL("the weight is not a static %d-d tensor", ns + 2);
  for (int i = 0; i < ns; i++) k[i] = wk_symdim_eval(wd[2 + i], NULL);
  onnx_pads(pads, p, ns);
  const char *in[] = {tin(c, 0), tin(c, 1), is_none(c, 2) ? NULL : tin(c, 2)};
  NEED(node1(c, "Conv", in, in[2] ? 3 : 2, out(c, 0)));
  Onnx__NodeProto *n = last(c);
  ox_attr_ints(EX, n, "dilations", d, ns);
  ox_attr_i(EX, n, "group", groups);
  ox_attr_ints(EX, n, "kernel_shape", k, ns);
  ox_attr_ints(EX, n, "pads", pads, 2 * ns);
  ox_attr_ints(EX, n, "strides", s, ns);
  return WK_OK;
}
static wk_status x_max_pool(xctx *c) {
  int ns = spatial(c);
  int64_t k[3], s[3], p[3], d[3], pads[6];
  wk_status st = tuple(c, 1, k, ns, NULL);
  if (!st) st = tuple(c, 2, s, ns, k);
  if (!st) st = tuple(c, 3, p, ns, NULL);
  if (!st) st = tuple(c, 4, d, ns, NULL);
  if (!st) st = no_extra_outputs(c, 1, "the indices");
  if (st) return st;
  onnx_pads(pads, p, ns);
  NEED(un(c, "MaxPool", tin(c, 0), out(c, 0)));
  Onnx__NodeProto *n = last(c);
  ox_attr_i(EX, n, "ceil_mode", flag(c, 5));
  if (!all_one(d, ns)) ox_attr_ints(EX, n, "dilations", d, ns);
  ox_attr_ints(EX, n, "kernel_shape", k, ns);
  ox_attr_ints(EX, n, "pads", pads, 2 * ns);
  ox_attr_ints(EX, n, "strides", s, ns);
  return WK_OK;
}
static wk_status x_avg_pool(xctx *c) {
  int ns = spatial(c);
  int64_t k[3], s[3], p[3], pads[6];
  wk_status st = tuple(c, 1, k, ns, NULL);
  if (!st) st = tuple(c, 2, s, ns, k);
  if (!st) st = tuple(c, 3, p, ns, NULL);
  if (st) return st;
  if (!is_none(c, 6)) return FAIL("divisor_override has no ONNX AveragePool equivalent");
  bool ceil_mode = flag(c, 4), cip = c->na > 5 && c->a[5].tag == WK_V_BOOL ? c->a[5].u.b : true, padded = false;
  for (int i = 0; i < ns; i++) padded = padded || p[i];
  if (ceil_mode && cip && padded)
    return FAIL("ceil_mode with count_include_pad and padding counts windows differently in ONNX");
  onnx_pads(pads, p, ns);
  NEED(un(c, "AveragePool", tin(c, 0), out(c, 0)));
  Onnx__NodeProto *n = last(c);
  ox_attr_i(EX, n, "ceil_mode", ceil_mode);
  ox_attr_i(EX, n, "count_include_pad", cip);
  ox_attr_ints(EX, n, "kernel_shape", k, ns);
  ox_attr_ints(EX, n, "pads", pads, 2 * ns);
  ox_attr_ints(EX, n, "strides", s, ns);
  return WK_OK;
}
static wk_status x_adaptive_avg_pool2d(xctx *c) {
  int64_t o[2];
  wk_status st = tuple(c, 1, o, 2, NULL);
  if (st) return st;
  if (o[0] == 1 && o[1] == 1) {
    NEED(un(c, "GlobalAveragePool", tin(c, 0), out(c, 0)));
    return WK_OK;
  }
  int vi = tv(c, 0), nd = vnd(c, vi);
  const wk_symdim *di = vdims(c, vi);
  if (nd < 2 || !is_const(di[nd - 2]) || !is_const(di[nd - 1]))
    return FAIL("output size %lldx%lld of a symbolic input size has no ONNX equivalent", (long long)o[0],
                (long long)o[1]);
  int64_t h = wk_symdim_eval(di[nd - 2], NULL), w = wk_symdim_eval(di[nd - 1], NULL);
  if (!o[0] || !o[1] || h % o[0] || w % o[1])
    return FAIL("output size %lldx%lld does not divide the input's %lldx%lld (no ONNX equivalent)", (long long)o[0],
                (long long)o[1], (long long)h, (long long)w);
  int64_t k[2] = {h / o[0], w / o[1]};
  NEED(un(c, "AveragePool", tin(c, 0), out(c, 0)));
  ox_attr_ints(EX, last(c), "kernel_shape", k, 2);
  ox_attr_ints(EX, last(c), "strides", k, 2);
  return WK_OK;
}
/* A per-channel tensor argument, or a constant shaped dims[0..nd) of v when None. */
static const char *channel(xctx *c, int i, const int64_t *dims, int nd, wk_dtype dt, double v) {
  if (!is_none(c, i)) return tin(c, i);
  wk_tensor *t = wk_full(dims, nd, v, (wk_options){.dtype = dt});
  const char *r = t ? ox_init_tensor(EX, ox_fmt(&EX->ar, "_c%d", EX->seq++), t) : NULL;
  wk_release(t);
  return r;
}
static wk_status x_batch_norm(xctx *c) {
  if (flag(c, 5))
    return FAIL("training=True: put the module in eval mode (wk_module_train(m, false)) before exporting");
  if (is_none(c, 3) || is_none(c, 4)) return FAIL("without running statistics there is no ONNX BatchNormalization");
  wk_status st = no_extra_outputs(c, 1, "the saved statistics");
  if (st) return st;
  int x = tv(c, 0);
  const wk_symdim *d = vdims(c, x);
  if (vnd(c, x) < 2 || !is_const(d[1])) return FAIL("the channel dim is not static");
  int64_t ch = wk_symdim_eval(d[1], NULL);
  wk_dtype dt = vdt(c, tv(c, 3));
  const char *in[] = {tin(c, 0), channel(c, 1, &ch, 1, dt, 1), channel(c, 2, &ch, 1, dt, 0), tin(c, 3), tin(c, 4)};
  NEED(in[1] && in[2] && node1(c, "BatchNormalization", in, 5, out(c, 0)));
  ox_attr_f(EX, last(c), "epsilon", num(c, 7, 1e-5));
  ox_attr_f(EX, last(c), "momentum", 1 - num(c, 6, 0.1));
  return WK_OK;
}
static wk_status x_layer_norm(xctx *c) {
  int64_t ns[8];
  int n;
  wk_status st = cints(c, 1, ns, &n);
  if (!st) st = no_extra_outputs(c, 1, "the saved statistics");
  if (st) return st;
  wk_dtype dt = vdt(c, outv(c, 0));
  double eps = num(c, 4, 1e-5);
  if (EX->opset >= 17) {
    const char *in[] = {tin(c, 0), channel(c, 2, ns, n, dt, 1), is_none(c, 3) ? NULL : tin(c, 3)};
    NEED(in[1] && node1(c, "LayerNormalization", in, in[2] ? 3 : 2, out(c, 0)));
    ox_attr_i(EX, last(c), "axis", -n);
    ox_attr_f(EX, last(c), "epsilon", eps);
    return WK_OK;
  }
  /* opsets 13..16: mean and variance over the last n dims */
  int64_t axes[8];
  for (int k = 0; k < n; k++) axes[k] = -n + k;
  const char *x = tin(c, 0);
  const char *mean = un(c, "ReduceMean", x, NULL);
  NEED(mean);
  ox_attr_ints(EX, last(c), "axes", axes, n);
  const char *dx = bin(c, "Sub", x, mean, NULL);
  const char *var = un(c, "ReduceMean", bin(c, "Mul", dx, dx, NULL), NULL);
  NEED(var);
  ox_attr_ints(EX, last(c), "axes", axes, n);
  const char *y = bin(c, "Div", dx, un(c, "Sqrt", bin(c, "Add", var, scalar(c, dt, eps), NULL), NULL),
                      is_none(c, 2) && is_none(c, 3) ? out(c, 0) : NULL);
  if (!is_none(c, 2)) y = bin(c, "Mul", y, tin(c, 2), is_none(c, 3) ? out(c, 0) : NULL);
  if (!is_none(c, 3)) y = bin(c, "Add", y, tin(c, 3), out(c, 0));
  NEED(y);
  return WK_OK;
}
static wk_status x_softmax(xctx *c) { /* softmax, log_softmax (opset 13: one axis) */
  if (!is_none(c, 2)) return FAIL("a dtype argument is not exported; cast the input first");
  int64_t d;
  wk_status st = cint(c, 1, &d);
  if (st) return st;
  NEED(un(c, c->onnx, tin(c, 0), out(c, 0)));
  ox_attr_i(EX, last(c), "axis", d);
  return WK_OK;
}
static wk_status x_dropout(xctx *c) {
  if (flag(c, 2) && num(c, 1, 0) > 0) return FAIL("train=True: export the module in eval mode");
  wk_status st = no_extra_outputs(c, 1, "the mask");
  return st ? st : same_as(c, tin(c, 0));
}
static wk_status x_embedding(xctx *c) {
  NEED(bin(c, "Gather", tin(c, 0), tin(c, 1), out(c, 0)));
  ox_attr_i(EX, last(c), "axis", 0);
  return WK_OK;
}

/* ---- reductions ---- */
static wk_status reduce(xctx *c, const char *op, const int64_t *axes, int n, bool keepdim) {
  wk_dtype dt = vdt(c, outv(c, 0));
  const char *x = tin_as(c, 0, dt);
  bool axes_input = !strcmp(op, "ReduceSum") || EX->opset >= 18;
  const char *ax = n && axes_input ? ox_const_i64(EX, axes, n, false) : NULL;
  const char *in[] = {x, ax};
  NEED(x && node1(c, op, in, ax ? 2 : 1, out(c, 0)));
  if (n && !axes_input) ox_attr_ints(EX, last(c), "axes", axes, n);
  ox_attr_i(EX, last(c), "keepdims", keepdim);
  return WK_OK;
}
static wk_status x_reduce_all(xctx *c) {
  return reduce(c, c->onnx, NULL, 0, false);
} /* sum, mean */
static wk_status x_mean_dim(xctx *c) {
  int64_t axes[8];
  int n = 0;
  if (!is_none(c, 1)) {
    wk_status st = cints(c, 1, axes, &n);
    if (st) return st;
  }
  if (c->a[1].tag == WK_V_INTS && n == 0) return reduce(c, "ReduceMean", NULL, 0, flag(c, 2));
  return reduce(c, "ReduceMean", axes, n, flag(c, 2));
}

static wk_status x_reduce_dims(xctx *c) { /* amax(dims, keepdim), logsumexp(dims, keepdim) */
  int64_t axes[8];
  int n = 0;
  wk_status st = cints(c, 1, axes, &n);
  if (st) return st;
  return reduce(c, c->onnx, axes, n, flag(c, 2));
}
static wk_status x_reduce_dim1(xctx *c) { /* prod.dim_int(dim, keepdim) */
  if (!is_none(c, 3)) return FAIL("a dtype argument is not exported; cast the input first");
  int64_t d;
  wk_status st = cint(c, 1, &d);
  return st ? st : reduce(c, c->onnx, &d, 1, flag(c, 2));
}
static wk_status x_max_dim(xctx *c) { /* max.dim / min.dim: values (ReduceMax/Min) and indices (ArgMax/Min) */
  int64_t d;
  wk_status st = cint(c, 1, &d);
  if (st) return st;
  bool mx = c->onnx[0] == 'M';
  st = reduce(c, mx ? "ReduceMax" : "ReduceMin", &d, 1, flag(c, 2));
  if (st || !out_used(c, 1)) return st;
  NEED(un(c, mx ? "ArgMax" : "ArgMin", tin(c, 0), out(c, 1)));
  ox_attr_i(EX, last(c), "axis", d);
  ox_attr_i(EX, last(c), "keepdims", flag(c, 2));
  return WK_OK;
}
static wk_status x_argmax(xctx *c) { /* argmax / argmin(dim?, keepdim) */
  const char *x = tin(c, 0);
  int64_t d = 0;
  if (is_none(c, 1)) { /* over the flattened input */
    if (flag(c, 2)) return FAIL("keepdim=True without a dim is not exported");
    int64_t m1 = -1;
    NEED(x = bin(c, "Reshape", x, ox_const_i64(EX, &m1, 1, false), NULL));
  } else {
    wk_status st = cint(c, 1, &d);
    if (st) return st;
  }
  NEED(un(c, c->onnx, x, out(c, 0)));
  ox_attr_i(EX, last(c), "axis", d);
  ox_attr_i(EX, last(c), "keepdims", is_none(c, 1) ? 0 : flag(c, 2));
  return WK_OK;
}
static wk_status x_cumsum(xctx *c) {
  if (!is_none(c, 2)) return FAIL("a dtype argument is not exported; cast the input first");
  int64_t d;
  wk_status st = cint(c, 1, &d);
  if (st) return st;
  NEED(bin(c, "CumSum", tin(c, 0), ox_const_i64(EX, &d, 1, true), out(c, 0)));
  return WK_OK;
}
static wk_status x_topk(xctx *c) { /* topk(k, dim, largest, sorted) -> (values, indices) */
  int64_t k, d;
  wk_status st = cint(c, 1, &k);
  if (!st) st = cint(c, 2, &d);
  if (st) return st;
  const char *in[] = {tin(c, 0), ox_const_i64(EX, &k, 1, false)};
  const char *outs[] = {out(c, 0), out_used(c, 1) ? out(c, 1) : ox_tmp(EX)};
  NEED(in[1] && outs[1] && ox_node(EX, "TopK", in, 2, outs, 2));
  ox_attr_i(EX, last(c), "axis", d);
  ox_attr_i(EX, last(c), "largest", c->na > 3 && c->a[3].tag == WK_V_BOOL ? c->a[3].u.b : 1);
  ox_attr_i(EX, last(c), "sorted", c->na > 4 && c->a[4].tag == WK_V_BOOL ? c->a[4].u.b : 1);
  return WK_OK;
}
static wk_status x_gather(xctx *c) { /* gather(dim, index) -> GatherElements; index_select(dim, index) -> Gather */
  int64_t d;
  wk_status st = cint(c, 1, &d);
  if (st) return st;
  NEED(bin(c, c->onnx, tin(c, 0), tin(c, 2), out(c, 0)));
  ox_attr_i(EX, last(c), "axis", d);
  return WK_OK;
}
static wk_status x_split(xctx *c) { /* split(split_size, dim), chunk(chunks, dim): the pieces' static sizes */
  int64_t d;
  wk_status st = cint(c, 2, &d);
  if (st) return st;
  int n = wk_graph_node_num_outputs(G, c->node);
  if (n < 1 || n > 1024) return FAIL("%d pieces", n);
  d = wrap_dim(d, vnd(c, tv(c, 0)));
  int64_t *sizes = ox_alloc(&EX->ar, sizeof *sizes * (size_t)n);
  const char **outs = ox_alloc(&EX->ar, sizeof *outs * (size_t)n);
  NEED(sizes && outs);
  for (int i = 0; i < n; i++) {
    int v = outv(c, i);
    if (v < 0) return FAIL("piece %d has no value", i);
    wk_symdim sz = vdims(c, v)[d];
    if (!is_const(sz)) return FAIL("the pieces' sizes along dim %lld are symbolic", (long long)d);
    sizes[i] = wk_symdim_eval(sz, NULL);
    outs[i] = out(c, i);
  }
  const char *in[] = {tin(c, 0), ox_const_i64(EX, sizes, n, false)};
  NEED(in[1] && ox_node(EX, "Split", in, 2, outs, n));
  ox_attr_i(EX, last(c), "axis", d);
  return WK_OK;
}

/* ---- the table ---- */
typedef struct xrow {
  const char *op;
  xfn fn;
  const char *onnx;
  double k;
} xrow;
static const xrow k_rows[] = {
    /* unary */
    {"relu", x_unary, "Relu", 0},
    {"sigmoid", x_unary, "Sigmoid", 0},
    {"tanh", x_unary, "Tanh", 0},
    {"neg", x_unary, "Neg", 0},
    {"abs", x_unary, "Abs", 0},
    {"exp", x_unary, "Exp", 0},
    {"log", x_unary, "Log", 0},
    {"sqrt", x_unary, "Sqrt", 0},
    {"sin", x_unary, "Sin", 0},
    {"cos", x_unary, "Cos", 0},
    {"tan", x_unary, "Tan", 0},
    {"asin", x_unary, "Asin", 0},
    {"acos", x_unary, "Acos", 0},
    {"atan", x_unary, "Atan", 0},
    {"sinh", x_unary, "Sinh", 0},
    {"cosh", x_unary, "Cosh", 0},
    {"asinh", x_unary, "Asinh", 0},
    {"acosh", x_unary, "Acosh", 0},
    {"atanh", x_unary, "Atanh", 0},
    {"reciprocal", x_unary, "Reciprocal", 0},
    {"erf", x_unary, "Erf", 0},
    {"sign", x_unary, "Sign", 0},
    {"floor", x_unary, "Floor", 0},
    {"ceil", x_unary, "Ceil", 0},
    {"round", x_unary, "Round", 0},
    {"selu", x_unary, "Selu", 0},
    {"logical_not", x_pred, "Not", 0},
    {"isnan", x_pred, "IsNaN", 0},
    {"isinf", x_pred, "IsInf", 0},
    {"isfinite", x_isfinite, NULL, 0},
    {"rsqrt", x_composed, "rsqrt", 0},
    {"log1p", x_composed, "log1p", 0},
    {"expm1", x_composed, "expm1", 0},
    {"log2", x_composed, "log2", 0},
    {"log10", x_composed, "log10", 0},
    {"exp2", x_composed, "exp2", 0},
    {"square", x_composed, "square", 0},
    {"silu", x_composed, "silu", 0},
    {"log_sigmoid", x_composed, "log_sigmoid", 0},
    {"relu6", x_composed, "relu6", 0},
    {"hardsigmoid", x_composed, "hardsigmoid", 0},
    {"hardswish", x_composed, "hardswish", 0},
    {"mish", x_composed, "mish", 0},
    {"leaky_relu", x_leaky_relu, NULL, 0},
    {"elu", x_elu, NULL, 0},
    {"celu", x_celu, NULL, 0},
    {"hardtanh", x_clip, "hardtanh", 0},
    {"clamp", x_clip, "clamp", 0},
    {"softplus", x_softplus, NULL, 0},
    {"gelu", x_gelu, NULL, 0},
    /* binary (and .Scalar) */
    {"add", x_binary, "Add", 0},
    {"sub", x_binary, "Sub", 0},
    {"mul", x_binary, "Mul", 0},
    {"div", x_binary, "Div", 0},
    {"maximum", x_binary, "Max", 0},
    {"minimum", x_binary, "Min", 0},
    {"pow", x_binary, "Pow", 0},
    {"fmod", x_binary, "Mod", 1},
    {"remainder", x_binary, "Mod", 0},
    {"eq", x_compare, "Equal", 0},
    {"ne", x_compare, "Equal", 1},
    {"lt", x_compare, "Less", 0},
    {"le", x_compare, "LessOrEqual", 0},
    {"gt", x_compare, "Greater", 0},
    {"ge", x_compare, "GreaterOrEqual", 0},
    {"logical_and", x_logical, "And", 0},
    {"logical_or", x_logical, "Or", 0},
    {"bitwise_and", x_logical, "BitwiseAnd", 0},
    {"bitwise_or", x_logical, "BitwiseOr", 0},
    {"bitwise_xor", x_logical, "BitwiseXor", 0},
    {"where.self", x_where, NULL, 0},
    /* shapes */
    {"alias", x_identity, NULL, 0},
    {"contiguous", x_identity, NULL, 0},
    {"clone", x_identity, NULL, 0},
    {"to.device", x_to_dtype, NULL, 0},
    {"to.dtype", x_to_dtype, NULL, 0},
    {"view", x_reshape, NULL, 0},
    {"reshape", x_reshape, NULL, 0},
    {"flatten", x_reshape, NULL, 0},
    {"unsqueeze", x_unsqueeze, NULL, 0},
    {"squeeze", x_squeeze, NULL, 0},
    {"squeeze.dim", x_squeeze, NULL, 0},
    {"permute", x_transpose, NULL, 0},
    {"transpose", x_transpose, NULL, 0},
    {"t", x_transpose, NULL, 0},
    {"expand", x_expand, NULL, 0},
    {"zeros", x_fill, NULL, 0},
    {"ones", x_fill, NULL, 1},
    {"full", x_fill, NULL, 0},
    {"zeros_like", x_fill, NULL, 0},
    {"ones_like", x_fill, NULL, 1},
    {"full_like", x_fill, NULL, 0},
    {"slice", x_slice, NULL, 0},
    {"narrow", x_narrow, NULL, 0},
    {"select", x_select, NULL, 0},
    {"cat", x_cat, "cat", 0},
    {"stack", x_cat, "stack", 0},
    {"repeat", x_repeat, NULL, 0},
    {"flip", x_flip, NULL, 0},
    {"pad", x_pad, NULL, 0},
    /* linear algebra, nn */
    {"mm", x_matmul, NULL, 0},
    {"bmm", x_matmul, NULL, 0},
    {"matmul", x_matmul, NULL, 0},
    {"linear", x_linear, NULL, 0},
    {"addmm", x_addmm, NULL, 0},
    {"conv2d", x_conv, NULL, 2},
    {"conv3d", x_conv, NULL, 3},
    {"max_pool2d_with_indices", x_max_pool, NULL, 2},
    {"max_pool3d_with_indices", x_max_pool, NULL, 3},
    {"avg_pool2d", x_avg_pool, NULL, 2},
    {"avg_pool3d", x_avg_pool, NULL, 3},
    {"adaptive_avg_pool2d", x_adaptive_avg_pool2d, NULL, 0},
    {"batch_norm", x_batch_norm, NULL, 0},
    {"layer_norm", x_layer_norm, NULL, 0},
    {"softmax", x_softmax, "Softmax", 0},
    {"log_softmax", x_softmax, "LogSoftmax", 0},
    {"dropout", x_dropout, NULL, 0},
    {"embedding", x_embedding, NULL, 0},
    /* reductions */
    {"amax", x_reduce_dims, "ReduceMax", 0},
    {"logsumexp", x_reduce_dims, "ReduceLogSumExp", 0},
    {"prod.dim_int", x_reduce_dim1, "ReduceProd", 0},
    {"max.dim", x_max_dim, "Max", 0},
    {"min.dim", x_max_dim, "min", 0},
    {"argmax", x_argmax, "ArgMax", 0},
    {"argmin", x_argmax, "ArgMin", 0},
    {"cumsum", x_cumsum, NULL, 0},
    {"topk", x_topk, NULL, 0},
    {"gather", x_gather, "GatherElements", 0},
    {"index_select", x_gather, "Gather", 0},
    {"split", x_split, NULL, 0},
    {"chunk", x_split, NULL, 0},
    {"sum", x_reduce_all, "ReduceSum", 0},
    {"mean", x_reduce_all, "ReduceMean", 0},
    {"mean.dim", x_mean_dim, NULL, 0},
};

/* The op's name without the in-place mark: relu_ -> relu, add_.Scalar -> add.Scalar. */
static void base_name(const wk_op *op, char *buf, size_t n) {
  snprintf(buf, n, "%s", wk_op_name(op));
  if (!(wk_op_tags(op) & WK_TAG_INPLACE)) return;
  char *dot = strchr(buf, '.');
  char *end = dot ? dot : buf + strlen(buf);
  if (end > buf && end[-1] == '_') memmove(end - 1, end, strlen(end) + 1);
}

wk_status ox_export_node(ox_ex *ex, int node) {
  wk_op *op = wk_graph_node_op(ex->g, node);
  char name[128];
  base_name(op, name, sizeof name);
  char *scal = strstr(name, ".Scalar");
  if (scal) *scal = '\0'; /* the .Scalar forms take a number where the tensor was */
  for (size_t i = 0; i < sizeof k_rows / sizeof *k_rows; i++)
    if (!strcmp(k_rows[i].op, name)) {
      xctx c = {ex,         node, wk_graph_node_args(ex->g, node), wk_graph_node_num_args(ex->g, node), k_rows[i].onnx,
                k_rows[i].k};
      return k_rows[i].fn(&c);
    }
  return ox_fail(ex, WK_ERR_UNSUPPORTED, "no ONNX equivalent is known for this op");
}
