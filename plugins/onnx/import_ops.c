/* onnx plugin, import: one ONNX node -> Wick graph nodes. Each row of the
 * table at the end names the ONNX op, the attributes it accepts (any other
 * attribute is refused) and its handler; handlers check the attribute values
 * and inputs they support and fail with the node's name otherwise. Shape
 * arithmetic (Shape, Gather, Concat, Unsqueeze, Add, Mul, ... on sizes) is
 * done here, on symbolic ints, and becomes int[] arguments of reshape/expand. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "onnx_import.h"

#include <wick/sdk/check.h> /* wk_sizes_str; after the SDK (onnx_import.h): calls route through the host table */

typedef struct ictx {
  ox_im *im;
  const Onnx__NodeProto *n;
  const char *wop; /* the table's Wick op */
  char path[160];
  bool one_d; /* set by 1-d conv/pool handlers before pool_attrs */
} ictx;
typedef wk_status (*ifn)(ictx *c);

#define FAIL(...) im_fail(c->im, WK_ERR_UNSUPPORTED, __VA_ARGS__)
#define BAD(...) im_fail(c->im, WK_ERR_INVALID_ARG, __VA_ARGS__)
#define G (c->im->g)
#define TRY(x)           \
  do {                   \
    wk_status st_ = (x); \
    if (st_) return st_; \
  } while (0)

/* ---- boxed arguments ---- */
static wk_garg GT(int v) {
  return (wk_garg){.tag = WK_V_TENSOR, .u.v = v};
}
static wk_garg GI(int64_t k) {
  return (wk_garg){.tag = WK_V_INT, .u.sym = WK_SYM_CONST(k)};
}
static wk_garg GIS(const wk_symdim *s, int n) {
  return (wk_garg){.tag = WK_V_INTS, .len = n, .u.syms = s};
}
static wk_garg GF(double f) {
  return (wk_garg){.tag = WK_V_FLOAT, .u.f = f};
}
static wk_garg GB(bool b) {
  return (wk_garg){.tag = WK_V_BOOL, .u.b = b};
}
static wk_garg GS(const char *s) {
  return (wk_garg){.tag = s ? WK_V_STR : WK_V_NONE, .u.s = s};
}
static wk_garg GN(void) {
  return (wk_garg){.tag = WK_V_NONE};
}
static wk_garg GDT(wk_dtype d) {
  return (wk_garg){.tag = WK_V_DTYPE, .u.dtype = d};
}

/* ---- attributes ---- */
static const Onnx__AttributeProto *att(ictx *c, const char *name) {
  for (size_t i = 0; i < c->n->n_attribute; i++)
    if (c->n->attribute[i]->name && !strcmp(c->n->attribute[i]->name, name)) return c->n->attribute[i];
  return NULL;
}
static bool att_type(const Onnx__AttributeProto *a, Onnx__AttributeProto__AttributeType t) {
  if (a->has_type) return a->type == t;
  /* IR < 3 files leave the type out: infer it from the field set */
  switch (t) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
      return a->has_i;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
      return a->has_f;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
      return a->has_s;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
      return a->n_ints > 0;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
      return a->n_floats > 0;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR:
      return a->t != NULL;
    default:
      return false;
  }
}
static wk_status att_i(ictx *c, const char *name, int64_t dflt, int64_t *v) {
  const Onnx__AttributeProto *a = att(c, name);
  *v = dflt;
  if (!a) return WK_OK;
  if (!att_type(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)) return BAD("attribute '%s' is not an int", name);
  *v = a->i;
  return WK_OK;
}
static wk_status att_f(ictx *c, const char *name, double dflt, double *v) {
  const Onnx__AttributeProto *a = att(c, name);
  *v = dflt;
  if (!a) return WK_OK;
  if (!att_type(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)) return BAD("attribute '%s' is not a float", name);
  *v = a->f;
  return WK_OK;
}
/* *n = -1 when absent */
static wk_status att_ints(ictx *c, const char *name, int64_t *v, int *n, int max) {
  const Onnx__AttributeProto *a = att(c, name);
  *n = -1;
  if (!a) return WK_OK;
  if (!att_type(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS) && !(a->has_type == 0 && a->n_ints == 0))
    return BAD("attribute '%s' is not an int list", name);
  if (a->n_ints > (size_t)max) return BAD("attribute '%s' has %zu elements (at most %d)", name, a->n_ints, max);
  *n = (int)a->n_ints;
  for (int i = 0; i < *n; i++) v[i] = a->ints[i];
  return WK_OK;
}
static wk_status att_s(ictx *c, const char *name, const char *dflt, char *buf, size_t cap) {
  const Onnx__AttributeProto *a = att(c, name);
  snprintf(buf, cap, "%s", dflt);
  if (!a) return WK_OK;
  if (!att_type(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING)) return BAD("attribute '%s' is not a string", name);
  if (a->s.len >= cap || memchr(a->s.data, 0, a->s.len)) return BAD("attribute '%s' is not a short string", name);
  memcpy(buf, a->s.data, a->s.len);
  buf[a->s.len] = 0;
  return WK_OK;
}

/* ---- inputs and outputs ---- */
static bool has_in(ictx *c, size_t i) {
  return i < c->n->n_input && c->n->input[i] && *c->n->input[i];
}
static bool has_out(ictx *c, size_t i) {
  return i < c->n->n_output && c->n->output[i] && *c->n->output[i];
}
static wk_status need_in(ictx *c, size_t lo, size_t hi) {
  if (c->n->n_input < lo || c->n->n_input > hi) {
    if (lo == hi) return BAD("%zu inputs, %zu expected", c->n->n_input, lo);
    return BAD("%zu inputs, %zu to %zu expected", c->n->n_input, lo, hi);
  }
  for (size_t i = 0; i < lo; i++)
    if (!has_in(c, i)) return BAD("input %zu is required", i);
  return WK_OK;
}
static int in_v(ictx *c, size_t i) {
  if (!has_in(c, i)) {
    BAD("input %zu is missing", i);
    return -1;
  }
  return im_value(c->im, c->n->input[i]);
}
static oxv *in_e(ictx *c, size_t i) {
  oxv *e = has_in(c, i) ? im_find(c->im, c->n->input[i]) : NULL;
  if (!e && has_in(c, i))
    BAD("input '%.100s' is not a graph input, an initializer or an earlier node's output", c->n->input[i]);
  return e;
}
/* The known ints of input i, or NULL with an error saying they must be constant. */
static oxv *in_known(ictx *c, size_t i, const char *what) {
  oxv *e = in_e(c, i);
  if (e && e->nk < 0) {
    FAIL("input %zu (%s) must be a constant or shape arithmetic known at import time", i, what);
    return NULL;
  }
  return e;
}
/* A constant int from known ints; symbolic ones are refused. */
static wk_status kconst(ictx *c, const oxv *e, int i, int64_t *v) {
  if (e->k[i].a != 0 && e->k[i].sym0 >= 0)
    return FAIL("'%.100s' holds a symbolic size where a constant is needed", e->name);
  *v = wk_symdim_eval(e->k[i], NULL);
  return WK_OK;
}
/* A one-element constant input as a double (Clip's bounds, Pad's value). */
static wk_status in_scalar(ictx *c, size_t i, double *v) {
  oxv *e = in_e(c, i);
  if (!e) return wk_last_error();
  if (e->nk == 1) {
    int64_t k;
    TRY(kconst(c, e, 0, &k));
    *v = (double)k;
    return WK_OK;
  }
  if (!e->t || wk_tensor_numel(e->t) != 1) return FAIL("input %zu must be a one-element constant", i);
  wk_tensor *d = wk_to_dtype(e->t, WK_F64);
  if (!d) return wk_last_error();
  *v = *(const double *)wk_tensor_data(d);
  wk_release(d);
  return WK_OK;
}
static int vnd(ictx *c, int v) {
  return wk_graph_value_ndim(G, v);
}
static const wk_symdim *vdims(ictx *c, int v) {
  return wk_graph_value_dims(G, v);
}
static wk_dtype vdt(ictx *c, int v) {
  return wk_graph_value_dtype(G, v);
}
static bool kis_const(wk_symdim d) {
  return d.a == 0 || d.sym0 < 0;
}

/* Adds a Wick node; returns its id or -1 (the error names the ONNX node). */
static int add(ictx *c, const char *op, const wk_garg *args, int n) {
  wk_op *o = wk_op_find(op);
  if (!o) {
    FAIL("Wick has no op '%s' (a plugin is missing?)", op);
    return -1;
  }
  int id = wk_graph_add_node(G, o, args, n, c->path, -1);
  if (id < 0) {
    char msg[400];
    snprintf(msg, sizeof msg, "%s", wk_last_error_message());
    im_fail(c->im, wk_last_error() == WK_ERR_SHAPE ? WK_ERR_SHAPE : WK_ERR_INVALID_ARG, "%s", msg);
  }
  return id;
}
/* A one-result op; its value id or -1. */
static int add1(ictx *c, const char *op, const wk_garg *args, int n) {
  int id = add(c, op, args, n);
  return id < 0 ? -1 : wk_graph_node_output(G, id, 0);
}
static wk_status set_out(ictx *c, size_t i, int v) {
  if (v < 0) return wk_last_error();
  if (!has_out(c, i)) return WK_OK;
  oxv *e = im_define(c->im, c->n->output[i]);
  if (!e) return wk_last_error();
  e->v = v;
  return WK_OK;
}
static wk_status set_known(ictx *c, size_t i, const wk_symdim *k, int n, bool scalar, wk_dtype dt) {
  if (n > 64) return FAIL("shape arithmetic on more than 64 values");
  oxv *e = im_define(c->im, c->n->output[i]);
  if (!e) return wk_last_error();
  memcpy(e->k, k, sizeof *k * (size_t)n);
  e->nk = n;
  e->kscalar = scalar;
  e->kdt = dt ? dt : WK_I64;
  return WK_OK;
}
static wk_status unused_outputs(ictx *c, size_t from, const char *what) {
  for (size_t i = from; i < c->n->n_output; i++)
    if (has_out(c, i)) return FAIL("output %zu (%s) is not supported", i, what);
  return WK_OK;
}

/* ---- symbolic int arithmetic (known ints) ---- */
static bool sym_add(wk_symdim x, wk_symdim y, wk_symdim *r) {
  if (kis_const(y)) {
    *r = x;
    r->d += wk_symdim_eval(y, NULL);
    if (kis_const(x)) *r = WK_SYM_CONST(wk_symdim_eval(x, NULL) + wk_symdim_eval(y, NULL));
    return true;
  }
  if (kis_const(x)) return sym_add(y, x, r);
  return false;
}
static bool sym_mul(wk_symdim x, wk_symdim y, wk_symdim *r) {
  if (kis_const(x) && kis_const(y)) {
    *r = WK_SYM_CONST(wk_symdim_eval(x, NULL) * wk_symdim_eval(y, NULL));
    return true;
  }
  if (kis_const(x)) return sym_mul(y, x, r);
  if (kis_const(y)) {
    int64_t k = wk_symdim_eval(y, NULL);
    *r = x;
    r->m *= k;
    r->d *= k;
    if (k == 0) *r = WK_SYM_CONST(0);
    return true;
  }
  /* s0 * s1 of two plain symbols */
  if (x.a == 1 && x.b == 0 && x.c == 1 && x.m == 1 && x.d == 0 && x.sym1 < 0 && y.a == 1 && y.b == 0 && y.c == 1 &&
      y.m == 1 && y.d == 0 && y.sym1 < 0) {
    *r = WK_SYM(x.sym0);
    r->sym1 = y.sym0;
    return true;
  }
  return false;
}
static bool sym_div(wk_symdim x, wk_symdim y, wk_symdim *r) { /* floor division by a positive constant */
  if (!kis_const(y)) return false;
  int64_t k = wk_symdim_eval(y, NULL);
  if (k <= 0) return false;
  if (kis_const(x)) {
    int64_t v = wk_symdim_eval(x, NULL);
    *r = WK_SYM_CONST(v >= 0 ? v / k : -((-v + k - 1) / k));
    return true;
  }
  *r = x;
  if (x.m % k == 0 && x.d % k == 0) {
    r->m /= k, r->d /= k;
    return true;
  }
  if (x.m == 1 && x.d == 0) {
    r->c *= k;
    return true;
  }
  if (x.m == 1) { /* floor((aS+b)/c + d) / k = floor((aS + b + d*c) / (c*k)) */
    r->b += x.d * x.c;
    r->d = 0;
    r->c *= k;
    return true;
  }
  return false;
}

/* ---- simple ops ---- */
static wk_status i_unary(ictx *c) {
  TRY(need_in(c, 1, 1));
  int x = in_v(c, 0);
  if (x < 0) return wk_last_error();
  return set_out(c, 0, add1(c, c->wop, (wk_garg[]){GT(x)}, 1));
}
static wk_status i_identity(ictx *c) { /* Identity, Dropout (inference) */
  TRY(need_in(c, 1, 3));
  if (!strcmp(c->n->op_type, "Dropout")) {
    int64_t is_test = 1;
    if (has_in(c, 2)) {
      double tm;
      TRY(in_scalar(c, 2, &tm));
      if (tm != 0) return FAIL("training_mode=1 is not supported (inference only)");
    }
    TRY(att_i(c, "is_test", 1, &is_test));
    if (!is_test) return FAIL("is_test=0 is not supported (inference only)");
    if (has_out(c, 1)) { /* the mask of an inference dropout keeps everything */
      int x = in_v(c, 0);
      int m = x < 0 ? -1 : add1(c, "ones_like", (wk_garg[]){GT(x), GDT(WK_BOOL)}, 2);
      TRY(set_out(c, 1, m));
    }
  }
  oxv *e = in_e(c, 0);
  if (!e) return wk_last_error();
  if (e->nk >= 0 && e->v < 0 && !e->t) return set_known(c, 0, e->k, e->nk, e->kscalar, e->kdt);
  return set_out(c, 0, in_v(c, 0));
}
static wk_status i_leaky(ictx *c) {
  double alpha;
  TRY(need_in(c, 1, 1));
  TRY(att_f(c, "alpha", !strcmp(c->wop, "leaky_relu") ? 0.01 : 1.0, &alpha));
  int x = in_v(c, 0);
  if (x < 0) return wk_last_error();
  return set_out(c, 0, add1(c, c->wop, (wk_garg[]){GT(x), GF(alpha)}, 2));
}
static wk_status i_selu(ictx *c) {
  double alpha, gamma;
  TRY(need_in(c, 1, 1));
  TRY(att_f(c, "alpha", 1.67326319217681884765625, &alpha));
  TRY(att_f(c, "gamma", 1.05070102214813232421875, &gamma));
  if (fabs(alpha - 1.6732632) < 1e-6 && fabs(gamma - 1.0507010) < 1e-6) return i_unary(c);
  int x = in_v(c, 0); /* gamma * elu(x, alpha) */
  if (x < 0) return wk_last_error();
  return set_out(c, 0, add1(c, "elu", (wk_garg[]){GT(x), GF(alpha), GF(gamma), GF(1)}, 4));
}
static wk_status i_hardsigmoid(ictx *c) {
  double alpha, beta;
  TRY(need_in(c, 1, 1));
  TRY(att_f(c, "alpha", 0.2, &alpha));
  TRY(att_f(c, "beta", 0.5, &beta));
  int x = in_v(c, 0);
  if (x < 0) return wk_last_error();
  if (fabs(alpha - 1.0 / 6) < 1e-7 && beta == 0.5) return set_out(c, 0, add1(c, "hardsigmoid", (wk_garg[]){GT(x)}, 1));
  int y = add1(c, "mul.Scalar", (wk_garg[]){GT(x), GF(alpha)}, 2);
  if (y >= 0) y = add1(c, "add.Scalar", (wk_garg[]){GT(y), GF(beta)}, 2);
  if (y >= 0) y = add1(c, "clamp", (wk_garg[]){GT(y), GF(0), GF(1)}, 3);
  return set_out(c, 0, y);
}
static wk_status i_softsign(ictx *c) {
  TRY(need_in(c, 1, 1));
  int x = in_v(c, 0);
  int a = x < 0 ? -1 : add1(c, "abs", (wk_garg[]){GT(x)}, 1);
  if (a >= 0) a = add1(c, "add.Scalar", (wk_garg[]){GT(a), GF(1)}, 2);
  return set_out(c, 0, a < 0 ? -1 : add1(c, "div", (wk_garg[]){GT(x), GT(a)}, 2));
}
static wk_status i_gelu(ictx *c) {
  char ap[16];
  TRY(need_in(c, 1, 1));
  TRY(att_s(c, "approximate", "none", ap, sizeof ap));
  if (strcmp(ap, "none") && strcmp(ap, "tanh")) return BAD("approximate='%s' is not 'none' or 'tanh'", ap);
  int x = in_v(c, 0);
  if (x < 0) return wk_last_error();
  return set_out(c, 0, add1(c, "gelu", (wk_garg[]){GT(x), GS(ap)}, 2));
}
static wk_status i_isinf(ictx *c) {
  int64_t neg, pos;
  TRY(need_in(c, 1, 1));
  TRY(att_i(c, "detect_negative", 1, &neg));
  TRY(att_i(c, "detect_positive", 1, &pos));
  if (neg && pos) return i_unary(c);
  int x = in_v(c, 0);
  int inf = x < 0 ? -1 : add1(c, "isinf", (wk_garg[]){GT(x)}, 1);
  if (!neg && !pos)
    return set_out(
        c, 0,
        inf < 0 ? -1
                : add1(c, "logical_and", (wk_garg[]){GT(inf), GT(add1(c, "logical_not", (wk_garg[]){GT(inf)}, 1))}, 2));
  int sg = inf < 0 ? -1 : add1(c, pos ? "gt.Scalar" : "lt.Scalar", (wk_garg[]){GT(x), GI(0)}, 2);
  return set_out(c, 0, sg < 0 ? -1 : add1(c, "logical_and", (wk_garg[]){GT(inf), GT(sg)}, 2));
}
static wk_status i_clip(ictx *c) {
  TRY(need_in(c, 1, 3));
  int x = in_v(c, 0);
  if (x < 0) return wk_last_error();
  wk_garg lo = GN(), hi = GN();
  if (c->im->opset < 11) {
    double a, b;
    TRY(att_f(c, "min", -INFINITY, &a));
    TRY(att_f(c, "max", INFINITY, &b));
    if (isfinite(a)) lo = GF(a);
    if (isfinite(b)) hi = GF(b);
  } else {
    double v;
    for (size_t i = 1; i <= 2; i++) {
      if (!has_in(c, i)) continue;
      oxv *e = in_e(c, i);
      if (!e) return wk_last_error();
      if (e->t || e->nk >= 0) { /* a constant bound */
        TRY(in_scalar(c, i, &v));
        *(i == 1 ? &lo : &hi) = wk_dtype_is_floating(vdt(c, x)) ? GF(v) : GI((int64_t)v);
        continue;
      }
      /* a bound computed at run time: maximum / minimum with it */
      int b = in_v(c, i);
      x = b < 0 ? -1 : add1(c, i == 1 ? "maximum" : "minimum", (wk_garg[]){GT(x), GT(b)}, 2);
      if (x < 0) return wk_last_error();
    }
  }
  return set_out(c, 0, add1(c, "clamp", (wk_garg[]){GT(x), lo, hi}, 3));
}

/* ---- binary and variadic ---- */
static wk_status known_binary(ictx *c, oxv *a, oxv *b) {
  const char *op = c->n->op_type;
  int n = a->nk > b->nk ? a->nk : b->nk;
  if ((a->nk != n && a->nk != 1) || (b->nk != n && b->nk != 1)) return BAD("shapes of %d and %d values", a->nk, b->nk);
  wk_symdim r[64];
  for (int i = 0; i < n; i++) {
    wk_symdim x = a->k[a->nk == 1 ? 0 : i], y = b->k[b->nk == 1 ? 0 : i];
    bool ok;
    if (!strcmp(op, "Add"))
      ok = sym_add(x, y, &r[i]);
    else if (!strcmp(op, "Sub")) {
      ok = kis_const(y);
      if (ok) {
        wk_symdim ny = WK_SYM_CONST(-wk_symdim_eval(y, NULL));
        ok = sym_add(x, ny, &r[i]);
      }
    } else if (!strcmp(op, "Mul"))
      ok = sym_mul(x, y, &r[i]);
    else
      ok = sym_div(x, y, &r[i]);
    if (!ok) return FAIL("size arithmetic %s on these symbolic values is not supported", op);
  }
  return set_known(c, 0, r, n, a->kscalar && b->kscalar, a->kdt);
}
static wk_status i_binary(ictx *c) { /* Add Sub Mul Div Pow Equal Less ... And Or Mod */
  TRY(need_in(c, 2, 2));
  oxv *a = in_e(c, 0), *b = in_e(c, 1);
  if (!a || !b) return wk_last_error();
  const char *op = c->n->op_type;
  bool arith = !strcmp(op, "Add") || !strcmp(op, "Sub") || !strcmp(op, "Mul") || !strcmp(op, "Div");
  /* size arithmetic: known ints stay known (constants may also be graph values already) */
  bool sym = (a->nk >= 0 && a->v < 0 && !a->t) || (b->nk >= 0 && b->v < 0 && !b->t);
  if (arith && a->nk >= 0 && b->nk >= 0 && (sym || (a->v < 0 && b->v < 0))) return known_binary(c, a, b);
  int x = in_v(c, 0), y = x < 0 ? -1 : in_v(c, 1);
  if (y < 0) return wk_last_error();
  if (c->im->opset < 7) { /* legacy broadcasting: B aligned at `axis` of A */
    int64_t bc, axis;
    TRY(att_i(c, "broadcast", 0, &bc));
    TRY(att_i(c, "axis", -1, &axis));
    int na = vnd(c, x), nb = vnd(c, y);
    if (bc && att(c, "axis") && nb < na) {
      if (axis < 0) axis += na;
      if (axis < 0 || axis + nb > na)
        return BAD("axis %lld does not fit B's %d dims in A's %d", (long long)axis, nb, na);
      for (int k = 0; k < na - (int)axis - nb && y >= 0; k++) y = add1(c, "unsqueeze", (wk_garg[]){GT(y), GI(-1)}, 2);
      if (y < 0) return wk_last_error();
    }
  }
  if (!strcmp(op, "Pow") && vdt(c, x) != vdt(c, y)) { /* Pow(T, T1): the exponent in the base's type */
    if ((y = add1(c, "to.dtype", (wk_garg[]){GT(y), GDT(vdt(c, x))}, 2)) < 0) return wk_last_error();
  }
  if (vdt(c, x) != vdt(c, y))
    return BAD("inputs have types %s and %s (ONNX requires one type)", wk_dtype_name(vdt(c, x)),
               wk_dtype_name(vdt(c, y)));
  const char *wop = c->wop;
  if (!strcmp(op, "Mod")) {
    int64_t fm;
    TRY(att_i(c, "fmod", 0, &fm));
    if (!fm && wk_dtype_is_floating(vdt(c, x))) return BAD("fmod=0 on floating point inputs");
    wop = fm ? "fmod" : "remainder";
  }
  if (!strcmp(op, "Div") && !wk_dtype_is_floating(vdt(c, x)))
    return set_out(c, 0, add1(c, "div", (wk_garg[]){GT(x), GT(y), GS("trunc")}, 3));
  if (!strcmp(op, "Xor")) { /* a != b on bools */
    return set_out(c, 0, add1(c, "ne", (wk_garg[]){GT(x), GT(y)}, 2));
  }
  return set_out(c, 0, add1(c, wop, (wk_garg[]){GT(x), GT(y)}, 2));
}
static wk_status i_variadic(ictx *c) { /* Sum Max Min Mean */
  if (c->n->n_input < 1) return BAD("no inputs");
  int acc = in_v(c, 0);
  for (size_t i = 1; i < c->n->n_input && acc >= 0; i++) {
    int y = in_v(c, i);
    acc = y < 0 ? -1 : add1(c, c->wop, (wk_garg[]){GT(acc), GT(y)}, 2);
  }
  if (acc >= 0 && !strcmp(c->n->op_type, "Mean"))
    acc = add1(c, "div.Scalar", (wk_garg[]){GT(acc), GF((double)c->n->n_input)}, 2);
  return set_out(c, 0, acc);
}
static wk_status i_where(ictx *c) {
  TRY(need_in(c, 3, 3));
  int a = in_v(c, 0), b = a < 0 ? -1 : in_v(c, 1), d = b < 0 ? -1 : in_v(c, 2);
  if (d < 0) return wk_last_error();
  return set_out(c, 0, add1(c, "where.self", (wk_garg[]){GT(a), GT(b), GT(d)}, 3));
}

/* ---- linear algebra ---- */
static wk_status i_matmul(ictx *c) {
  TRY(need_in(c, 2, 2));
  int a = in_v(c, 0), b = a < 0 ? -1 : in_v(c, 1);
  if (b < 0) return wk_last_error();
  return set_out(c, 0, add1(c, "matmul", (wk_garg[]){GT(a), GT(b)}, 2));
}
static wk_status i_gemm(ictx *c) {
  double alpha, beta;
  int64_t ta, tb;
  TRY(need_in(c, 2, 3));
  TRY(att_f(c, "alpha", 1, &alpha));
  TRY(att_f(c, "beta", 1, &beta));
  TRY(att_i(c, "transA", 0, &ta));
  TRY(att_i(c, "transB", 0, &tb));
  int64_t bc;
  TRY(att_i(c, "broadcast", 1, &bc));
  int a = in_v(c, 0), b = a < 0 ? -1 : in_v(c, 1), cc = has_in(c, 2) && b >= 0 ? in_v(c, 2) : -2;
  if (b < 0 || cc == -1) return wk_last_error();
  if (vnd(c, a) != 2 || vnd(c, b) != 2) return BAD("A and B must be matrices (ranks %d and %d)", vnd(c, a), vnd(c, b));
  /* nn.Linear's form: linear(x, W, b), as eager computes it */
  if (!ta && tb && alpha == 1 && beta == 1 && (cc < 0 || vnd(c, cc) == 1))
    return set_out(c, 0, add1(c, "linear", (wk_garg[]){GT(a), GT(b), cc >= 0 ? GT(cc) : GN()}, 3));
  if (ta) a = add1(c, "t", (wk_garg[]){GT(a)}, 1);
  if (tb && a >= 0) b = add1(c, "t", (wk_garg[]){GT(b)}, 1);
  if (a < 0 || b < 0) return wk_last_error();
  int y;
  if (cc >= 0 && beta != 0)
    y = add1(c, "addmm", (wk_garg[]){GT(cc), GT(a), GT(b), GF(beta), GF(alpha)}, 5);
  else {
    y = add1(c, "mm", (wk_garg[]){GT(a), GT(b)}, 2);
    if (y >= 0 && alpha != 1) y = add1(c, "mul.Scalar", (wk_garg[]){GT(y), GF(alpha)}, 2);
  }
  return set_out(c, 0, y);
}

/* ---- convolution and pooling (1-d to 3-d) ---- */
typedef struct poolnd {
  int ns; /* spatial dims of the Wick op: 2 (1-d runs as 2-d on (N, C, 1, L)) or 3 */
  int64_t k[3], s[3], p[3], d[3];
} poolnd;
/* kernel_shape, strides, pads (symmetric), dilations, auto_pad NOTSET/VALID/SAME_* (static sizes) */
/* A 1-d attribute [a] (or [a, b] for pads) as the 2-d one over (1, L): [1, a] / [0, a, 0, b]. */
static void widen(int64_t *v, int *n, int64_t fill) {
  if (*n == 1)
    v[1] = v[0], v[0] = fill, *n = 2;
  else if (*n == 2 && fill == 0)
    v[3] = v[1], v[1] = v[0], v[0] = v[2] = 0, *n = 4;
}
/* wk: the weight's kernel (ns sizes) or NULL. 1-d files (c->one_d, 3-d input) are widened to 2-d. */
static wk_status pool_attrs(ictx *c, int x, const int64_t *wk, poolnd *o, bool need_kernel) {
  int64_t v[8];
  int n, nd = vnd(c, x);
  bool one_d = nd == 3 && c->one_d;
  if (!one_d && nd != 4 && nd != 5)
    return FAIL("only 1-d, 2-d and 3-d (NCL, NCHW, NCDHW) inputs are supported, this one has %d dims", nd);
  int ns = o->ns = nd == 5 ? 3 : 2, nf = one_d ? 1 : ns; /* nf: spatial dims in the file */
  char b1[64], b2[64];
  TRY(att_ints(c, "kernel_shape", v, &n, 8));
  if (n < 0 && need_kernel) return BAD("kernel_shape is required");
  if (n >= 0 && n != nf && !(one_d && n == 2)) return BAD("kernel_shape has %d elements for %d spatial dims", n, nf);
  if (one_d && n == 1) widen(v, &n, 1);
  for (int i = 0; i < ns; i++) o->k[i] = n == ns ? v[i] : wk ? wk[i] : 1;
  if (wk && memcmp(o->k, wk, sizeof *wk * (size_t)ns))
    return im_fail(c->im, WK_ERR_SHAPE, "kernel_shape %s differs from the weight's %s",
                   wk_sizes_str(o->k, ns, b1, sizeof b1), wk_sizes_str(wk, ns, b2, sizeof b2));
  TRY(att_ints(c, "strides", v, &n, 8));
  if (one_d && n == 1) widen(v, &n, 1);
  if (n >= 0 && n != ns) return BAD("strides has %d elements", n);
  for (int i = 0; i < ns; i++) o->s[i] = n == ns ? v[i] : 1;
  TRY(att_ints(c, "dilations", v, &n, 8));
  if (one_d && n == 1) widen(v, &n, 1);
  if (n >= 0 && n != ns) return BAD("dilations has %d elements", n);
  for (int i = 0; i < ns; i++) o->d[i] = n == ns ? v[i] : 1;
  for (int i = 0; i < ns; i++)
    if (o->k[i] < 1 || o->s[i] < 1 || o->d[i] < 1) return BAD("kernel, strides and dilations must be positive");
  char ap[16];
  TRY(att_s(c, "auto_pad", "NOTSET", ap, sizeof ap));
  TRY(att_ints(c, "pads", v, &n, 8));
  if (one_d && n == 2) widen(v, &n, 0);
  for (int i = 0; i < ns; i++) o->p[i] = 0;
  if (!strcmp(ap, "NOTSET")) {
    if (n >= 0 && n != 2 * ns) return BAD("pads has %d elements, %d expected", n, 2 * ns);
    for (int i = 0; i < ns && n > 0; i++)
      if (v[i] != v[ns + i]) return FAIL("asymmetric pads %s are not supported", wk_sizes_str(v, n, b1, sizeof b1));
    for (int i = 0; i < ns && n > 0; i++) {
      if (v[i] < 0) return BAD("negative pads");
      o->p[i] = v[i];
    }
  } else if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
    wk_symdim d[5];
    memcpy(d, vdims(c, x), sizeof *d * (size_t)nd);
    if (one_d) d[3] = d[2], d[2] = WK_SYM_CONST(1);
    for (int i = 0; i < ns; i++) {
      if (!kis_const(d[2 + i])) return FAIL("auto_pad=%s needs static spatial sizes", ap);
      int64_t in = wk_symdim_eval(d[2 + i], NULL), out = (in + o->s[i] - 1) / o->s[i];
      int64_t total = (out - 1) * o->s[i] + (o->k[i] - 1) * o->d[i] + 1 - in;
      if (total < 0) total = 0;
      if (total % 2) return FAIL("auto_pad=%s needs odd padding here (asymmetric), not supported", ap);
      o->p[i] = total / 2;
    }
  } else if (strcmp(ap, "VALID")) {
    return BAD("auto_pad='%s' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID", ap);
  }
  return WK_OK;
}
/* A poolnd field as an int[ns] argument's storage. */
static void syms(wk_symdim *dst, const int64_t *v, int ns) {
  for (int i = 0; i < ns; i++) dst[i] = WK_SYM_CONST(v[i]);
}
static wk_status i_conv(ictx *c) {
  TRY(need_in(c, 2, 3));
  int x = in_v(c, 0), w = x < 0 ? -1 : in_v(c, 1), b = has_in(c, 2) && w >= 0 ? in_v(c, 2) : -2;
  if (w < 0 || b == -1) return wk_last_error();
  int wn = vnd(c, w), xn = vnd(c, x);
  bool one_d = wn == 3 && xn == 3;
  if ((xn == 4 || xn == 5) && wn != xn) return BAD("the weight has %d dims for an input of %d", wn, xn);
  if (wn != 4 && wn != 5 && !one_d)
    return FAIL("only 1-d, 2-d and 3-d convolutions are supported (weight of %d dims)", wn);
  const wk_symdim *wd = vdims(c, w);
  int64_t wk[3] = {1, 1, 1};
  for (int i = 2; i < wn; i++) {
    if (!kis_const(wd[i])) return FAIL("the weight's shape must be static");
    wk[i - 2 + one_d] = wk_symdim_eval(wd[i], NULL);
  }
  poolnd p;
  int64_t group;
  c->one_d = one_d;
  TRY(pool_attrs(c, x, wk, &p, false));
  if (one_d) {
    x = add1(c, "unsqueeze", (wk_garg[]){GT(x), GI(2)}, 2);
    w = x < 0 ? -1 : add1(c, "unsqueeze", (wk_garg[]){GT(w), GI(2)}, 2);
    if (w < 0) return wk_last_error();
  }
  TRY(att_i(c, "group", 1, &group));
  if (group < 1) return BAD("group=%lld", (long long)group);
  wk_symdim s[3], pd[3], dl[3];
  syms(s, p.s, p.ns), syms(pd, p.p, p.ns), syms(dl, p.d, p.ns);
  int y =
      add1(c, p.ns == 3 ? "conv3d" : "conv2d",
           (wk_garg[]){GT(x), GT(w), b >= 0 ? GT(b) : GN(), GIS(s, p.ns), GIS(pd, p.ns), GIS(dl, p.ns), GI(group)}, 7);
  if (y >= 0 && one_d) y = add1(c, "squeeze.dim", (wk_garg[]){GT(y), GI(2)}, 2);
  return set_out(c, 0, y);
}
/* ConvTranspose as Wick's ConvTranspose2d runs it: the input zero-stuffed
 * (stride - 1 zeros between elements: unsqueeze, pad, flatten, drop the
 * trailing zeros), padded by dilation * (kernel - 1) less the pads (negative:
 * cropped) plus output_padding at the end, then a stride-1 conv2d with the
 * weight regrouped to (out, in / group, kh, kw) and flipped. 1-d runs on
 * (N, C, 1, L). output_shape and auto_pad SAME_* need static spatial sizes. */
static wk_status i_conv_transpose(ictx *c) {
  TRY(need_in(c, 2, 3));
  int x = in_v(c, 0), w = x < 0 ? -1 : in_v(c, 1), b = has_in(c, 2) && w >= 0 ? in_v(c, 2) : -2;
  if (w < 0 || b == -1) return wk_last_error();
  int nd = vnd(c, x);
  if (nd != 3 && nd != 4) return FAIL("only 1-d and 2-d (NCL, NCHW) inputs are supported, this one has %d dims", nd);
  if (vnd(c, w) != nd) return BAD("the weight has %d dims for an input of %d", vnd(c, w), nd);
  int ns = nd - 2; /* spatial dims in the file */
  const wk_symdim *xd = vdims(c, x), *wd = vdims(c, w);
  for (int i = 0; i < nd; i++)
    if (!kis_const(wd[i])) return FAIL("the weight's shape must be static");
  int64_t group;
  TRY(att_i(c, "group", 1, &group));
  if (group < 1) return BAD("group=%lld", (long long)group);
  int64_t cin = wk_symdim_eval(wd[0], NULL), og = wk_symdim_eval(wd[1], NULL);
  if (cin % group)
    return BAD("the weight's %lld input channels are not divisible by group=%lld", (long long)cin, (long long)group);
  if (kis_const(xd[1]) && wk_symdim_eval(xd[1], NULL) != cin)
    return im_fail(c->im, WK_ERR_SHAPE, "the input has %lld channels, the weight expects %lld",
                   (long long)wk_symdim_eval(xd[1], NULL), (long long)cin);
  /* the attributes, per spatial dim i of the 2-d form (dim 0 is the unit height for 1-d) */
  int64_t k[2] = {1, 1}, s[2] = {1, 1}, d[2] = {1, 1}, op[2] = {0, 0}, pb[2] = {0, 0}, pe[2] = {0, 0},
          osz[2] = {-1, -1};
  int off = 2 - ns; /* 1-d attributes fill index 1 */
  for (int i = 0; i < ns; i++) k[off + i] = wk_symdim_eval(wd[2 + i], NULL);
  int64_t v[8];
  int n;
  TRY(att_ints(c, "kernel_shape", v, &n, 8));
  if (n >= 0 && n != ns) return BAD("kernel_shape has %d elements for %d spatial dims", n, ns);
  for (int i = 0; i < n; i++)
    if (v[i] != k[off + i])
      return im_fail(c->im, WK_ERR_SHAPE, "kernel_shape[%d] = %lld differs from the weight's %lld", i, (long long)v[i],
                     (long long)k[off + i]);
  static const char *const names[] = {"strides", "dilations", "output_padding"};
  int64_t *dst[] = {s, d, op};
  for (int a = 0; a < 3; a++) {
    TRY(att_ints(c, names[a], v, &n, 8));
    if (n >= 0 && n != ns) return BAD("%s has %d elements for %d spatial dims", names[a], n, ns);
    for (int i = 0; i < n; i++) dst[a][off + i] = v[i];
  }
  for (int i = 0; i < 2; i++) {
    if (s[i] < 1 || d[i] < 1) return BAD("strides and dilations must be positive");
    if (op[i] < 0 || (op[i] >= s[i] && op[i] >= d[i]))
      return BAD("output_padding %lld must be non-negative and smaller than the stride or the dilation",
                 (long long)op[i]);
  }
  TRY(att_ints(c, "pads", v, &n, 8));
  if (n >= 0 && n != 2 * ns) return BAD("pads has %d elements, %d expected", n, 2 * ns);
  for (int i = 0; i < ns && n > 0; i++) {
    if (v[i] < 0 || v[ns + i] < 0) return BAD("negative pads");
    pb[off + i] = v[i], pe[off + i] = v[ns + i];
  }
  char ap[16];
  TRY(att_s(c, "auto_pad", "NOTSET", ap, sizeof ap));
  bool same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER");
  if (!same && strcmp(ap, "NOTSET") && strcmp(ap, "VALID"))
    return BAD("auto_pad='%s' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID", ap);
  if (!strcmp(ap, "VALID")) memset(pb, 0, sizeof pb), memset(pe, 0, sizeof pe);
  TRY(att_ints(c, "output_shape", v, &n, 8));
  if (n >= 0) {
    if (n != ns && n != nd) return BAD("output_shape has %d elements for %d spatial dims", n, ns);
    for (int i = 0; i < ns; i++) osz[off + i] = v[n - ns + i];
  }
  if (same || n >= 0) { /* the pads follow from the wanted size: total = s (in - 1) + op + d (k - 1) + 1 - out */
    for (int i = 0; i < ns; i++) {
      int j = off + i;
      if (!kis_const(xd[2 + i])) return FAIL("%s needs static spatial sizes", n >= 0 ? "output_shape" : "auto_pad");
      int64_t in = wk_symdim_eval(xd[2 + i], NULL), out = osz[j] >= 0 ? osz[j] : in * s[j];
      if (out < 1) return BAD("output_shape[%d] = %lld", i, (long long)out);
      int64_t total = s[j] * (in - 1) + op[j] + d[j] * (k[j] - 1) + 1 - out;
      if (total < 0) { /* a bigger output than the full result: extra output padding at the end */
        op[j] -= total;
        total = 0;
      }
      bool upper = !strcmp(ap, "SAME_UPPER");
      pb[j] = upper ? total / 2 : total - total / 2;
      pe[j] = total - pb[j];
    }
  }
  if (ns == 1) { /* (N, C, L) -> (N, C, 1, L) */
    x = add1(c, "unsqueeze", (wk_garg[]){GT(x), GI(2)}, 2);
    w = x < 0 ? -1 : add1(c, "unsqueeze", (wk_garg[]){GT(w), GI(2)}, 2);
    if (w < 0) return wk_last_error();
  }
  /* zero-stuff dims 2 and 3: [.., L, ..] -> [.., L, s, ..] (zeros after each) -> [.., L s, ..] minus the last s - 1 */
  for (int i = 0; i < 2 && x >= 0; i++) {
    if (s[i] == 1) continue;
    int64_t pads[4] = {0, 0, 0, 0};
    pads[i ? 1 : 3] = s[i] - 1; /* the new dim is last (W) or second to last (H, before W) */
    x = add1(c, "unsqueeze", (wk_garg[]){GT(x), GI(3 + i)}, 2);
    if (x >= 0)
      x = add1(c, "pad",
               (wk_garg[]){GT(x), GIS((wk_symdim[]){WK_SYM_CONST(pads[0]), WK_SYM_CONST(pads[1]), WK_SYM_CONST(pads[2]),
                                                    WK_SYM_CONST(pads[3])},
                                      i ? 2 : 4)},
               2);
    if (x >= 0) x = add1(c, "flatten", (wk_garg[]){GT(x), GI(2 + i), GI(3 + i)}, 3);
    if (x >= 0) x = add1(c, "slice", (wk_garg[]){GT(x), GI(2 + i), GI(0), GI(-(s[i] - 1)), GI(1)}, 5);
  }
  if (x < 0) return wk_last_error();
  /* pads: [W lo, W hi, H lo, H hi]; negative ones crop */
  wk_symdim pd[4];
  bool any = false;
  for (int i = 0; i < 2; i++) {
    int64_t full = d[i] * (k[i] - 1);
    pd[2 * (1 - i)] = WK_SYM_CONST(full - pb[i]);
    pd[2 * (1 - i) + 1] = WK_SYM_CONST(full - pe[i] + op[i]);
    any = any || full - pb[i] || full - pe[i] + op[i];
  }
  if (any && (x = add1(c, "pad", (wk_garg[]){GT(x), GIS(pd, 4)}, 2)) < 0) return wk_last_error();
  /* weight (in, out/g, kh, kw) -> (g, in/g, out/g, kh, kw) -> (out, in/g, kh, kw), flipped */
  int64_t ig = cin / group;
  wk_symdim r5[5] = {WK_SYM_CONST(group), WK_SYM_CONST(ig), WK_SYM_CONST(og), WK_SYM_CONST(k[0]), WK_SYM_CONST(k[1])};
  wk_symdim r4[4] = {WK_SYM_CONST(og * group), WK_SYM_CONST(ig), WK_SYM_CONST(k[0]), WK_SYM_CONST(k[1])};
  wk_symdim fl[2] = {WK_SYM_CONST(2), WK_SYM_CONST(3)};
  if (group > 1) {
    w = add1(c, "reshape", (wk_garg[]){GT(w), GIS(r5, 5)}, 2);
    if (w >= 0) w = add1(c, "transpose", (wk_garg[]){GT(w), GI(1), GI(2)}, 3);
    if (w >= 0) w = add1(c, "reshape", (wk_garg[]){GT(w), GIS(r4, 4)}, 2);
  } else {
    w = add1(c, "transpose", (wk_garg[]){GT(w), GI(0), GI(1)}, 3);
  }
  if (w >= 0) w = add1(c, "flip", (wk_garg[]){GT(w), GIS(fl, 2)}, 2);
  if (w < 0) return wk_last_error();
  wk_symdim one[2] = {WK_SYM_CONST(1), WK_SYM_CONST(1)}, zero[2] = {WK_SYM_CONST(0), WK_SYM_CONST(0)},
            dl[2] = {WK_SYM_CONST(d[0]), WK_SYM_CONST(d[1])};
  int y = add1(c, "conv2d",
               (wk_garg[]){GT(x), GT(w), b >= 0 ? GT(b) : GN(), GIS(one, 2), GIS(zero, 2), GIS(dl, 2), GI(group)}, 7);
  if (y >= 0 && ns == 1) y = add1(c, "squeeze.dim", (wk_garg[]){GT(y), GI(2)}, 2);
  return set_out(c, 0, y);
}
static wk_status i_maxpool(ictx *c) {
  TRY(need_in(c, 1, 1));
  TRY(unused_outputs(c, 1, "Indices"));
  int x = in_v(c, 0);
  if (x < 0) return wk_last_error();
  poolnd p;
  int64_t ceil_mode, so;
  c->one_d = vnd(c, x) == 3;
  TRY(pool_attrs(c, x, NULL, &p, true));
  if (c->one_d && (x = add1(c, "unsqueeze", (wk_garg[]){GT(x), GI(2)}, 2)) < 0) return wk_last_error();
  TRY(att_i(c, "ceil_mode", 0, &ceil_mode));
  TRY(att_i(c, "storage_order", 0, &so));
  if (so) return FAIL("storage_order=1 is not supported");
  wk_symdim k[3], s[3], pd[3], dl[3];
  syms(k, p.k, p.ns), syms(s, p.s, p.ns), syms(pd, p.p, p.ns), syms(dl, p.d, p.ns);
  int y = add1(c, p.ns == 3 ? "max_pool3d_with_indices" : "max_pool2d_with_indices",
               (wk_garg[]){GT(x), GIS(k, p.ns), GIS(s, p.ns), GIS(pd, p.ns), GIS(dl, p.ns), GB(ceil_mode)}, 6);
  if (y >= 0 && c->one_d) y = add1(c, "squeeze.dim", (wk_garg[]){GT(y), GI(2)}, 2);
  return set_out(c, 0, y);
}
static wk_status i_avgpool(ictx *c) {
  TRY(need_in(c, 1, 1));
  int x = in_v(c, 0);
  if (x < 0) return wk_last_error();
  poolnd p;
  int64_t ceil_mode, cip;
  c->one_d = vnd(c, x) == 3;
  TRY(pool_attrs(c, x, NULL, &p, true));
  if (c->one_d && (x = add1(c, "unsqueeze", (wk_garg[]){GT(x), GI(2)}, 2)) < 0) return wk_last_error();
  for (int i = 0; i < p.ns; i++)
    if (p.d[i] != 1) return FAIL("dilations are not supported for AveragePool");
  TRY(att_i(c, "ceil_mode", 0, &ceil_mode));
  TRY(att_i(c, "count_include_pad", 0, &cip));
  wk_symdim k[3], s[3], pd[3];
  syms(k, p.k, p.ns), syms(s, p.s, p.ns), syms(pd, p.p, p.ns);
  int y = add1(c, p.ns == 3 ? "avg_pool3d" : "avg_pool2d",
               (wk_garg[]){GT(x), GIS(k, p.ns), GIS(s, p.ns), GIS(pd, p.ns), GB(ceil_mode), GB(cip), GN()}, 7);
  if (y >= 0 && c->one_d) y = add1(c, "squeeze.dim", (wk_garg[]){GT(y), GI(2)}, 2);
  return set_out(c, 0, y);
}
static wk_status i_global_pool(ictx *c) { /* GlobalAveragePool, GlobalMaxPool */
  TRY(need_in(c, 1, 1));
  int x = in_v(c, 0);
  if (x < 0) return wk_last_error();
  if (vnd(c, x) != 4) return FAIL("only 4-d (NCHW) inputs are supported");
  if (!strcmp(c->n->op_type, "GlobalAveragePool")) {
    wk_symdim one[2] = {WK_SYM_CONST(1), WK_SYM_CONST(1)};
    return set_out(c, 0, add1(c, "adaptive_avg_pool2d", (wk_garg[]){GT(x), GIS(one, 2)}, 2));
  }
  const wk_symdim *d = vdims(c, x);
  if (!kis_const(d[2]) || !kis_const(d[3])) return FAIL("GlobalMaxPool needs static spatial sizes");
  return set_out(c, 0, add1(c, "max_pool2d_with_indices", (wk_garg[]){GT(x), GIS(&d[2], 2)}, 2));
}

/* ---- normalisation, softmax ---- */
static wk_status i_batchnorm(ictx *c) {
  TRY(need_in(c, 5, 5));
  TRY(unused_outputs(c, 1, "training statistics"));
  double eps, mom;
  int64_t tm, spatial, is_test;
  TRY(att_f(c, "epsilon", 1e-5, &eps));
  TRY(att_f(c, "momentum", 0.9, &mom));
  TRY(att_i(c, "training_mode", 0, &tm));
  TRY(att_i(c, "spatial", 1, &spatial));
  TRY(att_i(c, "is_test", 1, &is_test));
  if (tm || !is_test) return FAIL("training mode is not supported (inference only)");
  if (!spatial) return FAIL("spatial=0 is not supported");
  int v[5];
  for (int i = 0; i < 5; i++)
    if ((v[i] = in_v(c, (size_t)i)) < 0) return wk_last_error();
  return set_out(
      c, 0,
      add1(c, "batch_norm",
           (wk_garg[]){GT(v[0]), GT(v[1]), GT(v[2]), GT(v[3]), GT(v[4]), GB(false), GF(1 - mom), GF(eps)}, 8));
}
static wk_status i_layernorm(ictx *c) {
  TRY(need_in(c, 2, 3));
  int64_t axis, stash;
  double eps;
  TRY(att_i(c, "axis", -1, &axis));
  TRY(att_f(c, "epsilon", 1e-5, &eps));
  TRY(att_i(c, "stash_type", 1, &stash));
  if (stash != 1) return FAIL("stash_type=%lld is not supported", (long long)stash);
  int x = in_v(c, 0), w = x < 0 ? -1 : in_v(c, 1), b = has_in(c, 2) && w >= 0 ? in_v(c, 2) : -2;
  if (w < 0 || b == -1) return wk_last_error();
  int nd = vnd(c, x);
  if (axis < -nd || axis >= nd) return BAD("axis %lld for %d dims", (long long)axis, nd);
  if (axis < 0) axis += nd;
  const wk_symdim *d = vdims(c, x);
  /* Wick's layer_norm gives (y, mean, rstd), the statistics shaped as ONNX's Mean and InvStdDev */
  int id =
      add(c, "layer_norm", (wk_garg[]){GT(x), GIS(&d[axis], nd - (int)axis), GT(w), b >= 0 ? GT(b) : GN(), GF(eps)}, 5);
  if (id < 0) return wk_last_error();
  for (int k = 0; k < 3; k++) TRY(set_out(c, (size_t)k, wk_graph_node_output(G, id, k)));
  return WK_OK;
}
static wk_status i_softmax(ictx *c) { /* Softmax, LogSoftmax */
  TRY(need_in(c, 1, 1));
  int x = in_v(c, 0);
  if (x < 0) return wk_last_error();
  int nd = vnd(c, x);
  int64_t axis;
  TRY(att_i(c, "axis", c->im->opset >= 13 ? -1 : 1, &axis));
  if (axis < -nd || axis >= (nd ? nd : 1)) return BAD("axis %lld for %d dims", (long long)axis, nd);
  if (axis < 0) axis += nd;
  if (c->im->opset >= 13 || axis == nd - 1) return set_out(c, 0, add1(c, c->wop, (wk_garg[]){GT(x), GI(axis)}, 2));
  /* before opset 13: the input as a matrix [prod(:axis), prod(axis:)] */
  int y = add1(c, "flatten", (wk_garg[]){GT(x), GI(axis), GI(-1)}, 3);
  if (y >= 0 && axis > 0)
    y = add1(c, "flatten", (wk_garg[]){GT(y), GI(0), GI(axis - 1)}, 3);
  else if (y >= 0)
    y = add1(c, "unsqueeze", (wk_garg[]){GT(y), GI(0)}, 2);
  if (y >= 0) y = add1(c, c->wop, (wk_garg[]){GT(y), GI(1)}, 2);
  if (y >= 0) y = add1(c, "reshape", (wk_garg[]){GT(y), GIS(vdims(c, x), nd)}, 2);
  return set_out(c, 0, y);
}

/* ---- shapes ---- */
static wk_status i_shape(ictx *c) {
  TRY(need_in(c, 1, 1));
  int64_t start, end;
  oxv *e = in_e(c, 0);
  if (!e) return wk_last_error();
  int x = in_v(c, 0);
  if (x < 0) return wk_last_error();
  int nd = vnd(c, x);
  TRY(att_i(c, "start", 0, &start));
  TRY(att_i(c, "end", nd, &end));
  if (start < 0) start += nd;
  if (end < 0) end += nd;
  start = start < 0 ? 0 : start > nd ? nd : start;
  end = end < start ? start : end > nd ? nd : end;
  return set_known(c, 0, vdims(c, x) + start, (int)(end - start), false, WK_I64);
}
static wk_status i_size(ictx *c) {
  TRY(need_in(c, 1, 1));
  int x = in_v(c, 0);
  if (x < 0) return wk_last_error();
  wk_symdim p = WK_SYM_CONST(1);
  for (int k = 0; k < vnd(c, x); k++)
    if (!sym_mul(p, vdims(c, x)[k], &p)) return FAIL("the size of this symbolic shape is not representable");
  return set_known(c, 0, &p, 1, true, WK_I64);
}
/* Sizes for reshape-like ops from known ints: ONNX Reshape's 0 copies the input dim. */
static wk_status i_reshape(ictx *c) {
  TRY(need_in(c, 1, 2));
  int64_t allowzero;
  TRY(att_i(c, "allowzero", 0, &allowzero));
  wk_symdim sz[WK_MAX_DIMS];
  int n;
  if (c->im->opset < 5) {
    int64_t v[WK_MAX_DIMS];
    TRY(att_ints(c, "shape", v, &n, WK_MAX_DIMS));
    if (n < 0) return BAD("shape is required");
    for (int i = 0; i < n; i++) sz[i] = WK_SYM_CONST(v[i]);
  } else {
    TRY(need_in(c, 2, 2));
    oxv *s = in_known(c, 1, "shape");
    if (!s) return wk_last_error();
    if (s->nk > WK_MAX_DIMS) return BAD("shape has %d elements", s->nk);
    n = s->nk;
    memcpy(sz, s->k, sizeof *sz * (size_t)n);
  }
  oxv *e = in_e(c, 0);
  if (!e) return wk_last_error();
  if (e->nk >= 0 && e->v < 0 && !e->t) { /* reshaping known ints: only their count matters */
    bool scalar = n == 0;
    return set_known(c, 0, e->k, e->nk, scalar, e->kdt);
  }
  int x = in_v(c, 0);
  if (x < 0) return wk_last_error();
  int nd = vnd(c, x);
  int neg = 0;
  for (int i = 0; i < n; i++) {
    if (kis_const(sz[i])) {
      int64_t v = wk_symdim_eval(sz[i], NULL);
      if (v == 0 && !allowzero) {
        if (i >= nd) return BAD("shape[%d] = 0 copies a dim the input does not have", i);
        sz[i] = vdims(c, x)[i];
      } else if (v == -1) {
        neg++;
      } else if (v < 0) {
        return BAD("shape[%d] = %lld", i, (long long)v);
      }
    }
  }
  if (neg > 1) return BAD("shape has %d entries of -1", neg);
  return set_out(c, 0, add1(c, "reshape", (wk_garg[]){GT(x), GIS(sz, n)}, 2));
}
static wk_status i_flatten(ictx *c) {
  TRY(need_in(c, 1, 1));
  int x = in_v(c, 0);
  if (x < 0) return wk_last_error();
  int nd = vnd(c, x);
  int64_t axis;
  TRY(att_i(c, "axis", 1, &axis));
  if (axis < -nd || axis > nd) return BAD("axis %lld for %d dims", (long long)axis, nd);
  if (axis < 0) axis += nd;
  int y;
  if (axis == 0 || axis == nd) {
    y = add1(c, "flatten", (wk_garg[]){GT(x), GI(0), GI(-1)}, 3);
    if (y >= 0) y = add1(c, "unsqueeze", (wk_garg[]){GT(y), GI(axis ? 1 : 0)}, 2);
  } else {
    y = add1(c, "flatten", (wk_garg[]){GT(x), GI(axis), GI(-1)}, 3);
    if (y >= 0) y = add1(c, "flatten", (wk_garg[]){GT(y), GI(0), GI(axis - 1)}, 3);
  }
  return set_out(c, 0, y);
}
/* Axes from the attribute (older opsets) or input `i` (newer); *n = -1 when absent. */
static wk_status axes_of(ictx *c, int64_t since_input, size_t i, int64_t *ax, int *n) {
  if (c->im->opset < since_input) return att_ints(c, "axes", ax, n, WK_MAX_DIMS);
  *n = -1;
  if (att(c, "axes")) return BAD("attribute 'axes' is an input since opset %lld", (long long)since_input);
  if (!has_in(c, i)) return WK_OK;
  oxv *e = in_known(c, i, "axes");
  if (!e) return wk_last_error();
  if (e->nk > WK_MAX_DIMS) return BAD("%d axes", e->nk);
  *n = e->nk;
  for (int k = 0; k < e->nk; k++) TRY(kconst(c, e, k, &ax[k]));
  return WK_OK;
}
static int cmp64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}
static wk_status i_unsqueeze(ictx *c) {
  int64_t ax[WK_MAX_DIMS];
  int n;
  TRY(need_in(c, 1, 2));
  TRY(axes_of(c, 13, 1, ax, &n));
  if (n <= 0) return BAD("axes are required");
  oxv *e = in_e(c, 0);
  if (!e) return wk_last_error();
  if (e->nk >= 0 && e->v < 0 && !e->t) { /* a known scalar or list stays known (as 1-d) */
    if (!(e->kscalar && n == 1) && !(!e->kscalar && n == 1 && (ax[0] == 0 || ax[0] == -2)))
      return FAIL("unsqueezing shape arithmetic to more than one dim");
    return set_known(c, 0, e->k, e->nk, false, e->kdt);
  }
  int x = in_v(c, 0);
  if (x < 0) return wk_last_error();
  int out_nd = vnd(c, x) + n;
  for (int k = 0; k < n; k++) {
    if (ax[k] < -out_nd || ax[k] >= out_nd) return BAD("axis %lld for %d output dims", (long long)ax[k], out_nd);
    if (ax[k] < 0) ax[k] += out_nd;
  }
  qsort(ax, (size_t)n, sizeof *ax, cmp64);
  for (int k = 0; k < n && x >= 0; k++) {
    if (k && ax[k] == ax[k - 1]) return BAD("axis %lld repeats", (long long)ax[k]);
    x = add1(c, "unsqueeze", (wk_garg[]){GT(x), GI(ax[k])}, 2);
  }
  return set_out(c, 0, x);
}
static wk_status i_squeeze(ictx *c) {
  int64_t ax[WK_MAX_DIMS];
  int n;
  TRY(need_in(c, 1, 2));
  TRY(axes_of(c, 13, 1, ax, &n));
  oxv *e = in_e(c, 0);
  if (!e) return wk_last_error();
  if (e->nk == 1 && e->v < 0 && !e->t && !e->kscalar) return set_known(c, 0, e->k, 1, true, e->kdt);
  int x = in_v(c, 0);
  if (x < 0) return wk_last_error();
  int nd = vnd(c, x);
  if (n < 0) {
    for (int k = 0; k < nd; k++)
      if (!kis_const(vdims(c, x)[k])) return FAIL("squeezing every size-1 dim of a symbolic shape");
    return set_out(c, 0, add1(c, "squeeze", (wk_garg[]){GT(x)}, 1));
  }
  for (int k = 0; k < n; k++) {
    if (ax[k] < -nd || ax[k] >= nd) return BAD("axis %lld for %d dims", (long long)ax[k], nd);
    if (ax[k] < 0) ax[k] += nd;
    wk_symdim d = vdims(c, x)[ax[k]];
    if (kis_const(d) && wk_symdim_eval(d, NULL) != 1)
      return im_fail(c->im, WK_ERR_SHAPE, "axis %lld has size %lld, not 1", (long long)ax[k],
                     (long long)wk_symdim_eval(d, NULL));
  }
  qsort(ax, (size_t)n, sizeof *ax, cmp64);
  for (int k = n - 1; k >= 0 && x >= 0; k--) x = add1(c, "squeeze.dim", (wk_garg[]){GT(x), GI(ax[k])}, 2);
  return set_out(c, 0, x);
}
static wk_status i_concat(ictx *c) {
  int64_t axis;
  if (c->n->n_input < 1) return BAD("no inputs");
  const Onnx__AttributeProto *a = att(c, "axis");
  if (!a && c->im->opset >= 4) return BAD("attribute 'axis' is required");
  TRY(att_i(c, "axis", 1, &axis));
  bool known = true;
  for (size_t i = 0; i < c->n->n_input && known; i++) {
    oxv *e = in_e(c, i);
    if (!e) return wk_last_error();
    /* 1-d ints known at import time (shapes, constants, initializers): concatenated here */
    known = e->nk >= 0 && !e->kscalar && (axis == 0 || axis == -1);
  }
  if (known) {
    wk_symdim r[64];
    int n = 0;
    for (size_t i = 0; i < c->n->n_input; i++) {
      oxv *e = im_find(c->im, c->n->input[i]);
      if (n + e->nk > 64) return FAIL("shape arithmetic on more than 64 values");
      memcpy(r + n, e->k, sizeof *r * (size_t)e->nk);
      n += e->nk;
    }
    return set_known(c, 0, r, n, false, im_find(c->im, c->n->input[0])->kdt);
  }
  if (c->n->n_input > 4096) return FAIL("more than 4096 inputs");
  int32_t *vs = wk_malloc(sizeof *vs * c->n->n_input);
  if (!vs) return im_fail(c->im, WK_ERR_NO_MEMORY, "out of memory");
  for (size_t i = 0; i < c->n->n_input; i++)
    if ((vs[i] = in_v(c, i)) < 0) {
      wk_free(vs);
      return wk_last_error();
    }
  wk_garg list = {.tag = WK_V_TENSORS, .len = (int32_t)c->n->n_input, .u.vs = vs};
  int y = add1(c, "cat", (wk_garg[]){list, GI(axis)}, 2);
  wk_free(vs);
  return set_out(c, 0, y);
}
static wk_status i_cast(ictx *c) {
  TRY(need_in(c, 1, 1));
  int64_t to, sat;
  TRY(att_i(c, "to", 0, &to));
  TRY(att_i(c, "saturate", 1, &sat));
  wk_dtype dt = ox_wick_dtype((int)to);
  if (!dt) return FAIL("cast to ONNX type %s (%lld) is not supported", ox_onnx_type_name((int)to), (long long)to);
  oxv *e = in_e(c, 0);
  if (!e) return wk_last_error();
  if (e->nk >= 0 && e->v < 0 && !e->t && (dt == WK_I64 || dt == WK_I32))
    return set_known(c, 0, e->k, e->nk, e->kscalar, dt);
  int x = in_v(c, 0);
  if (x < 0) return wk_last_error();
  return set_out(c, 0, add1(c, "to.dtype", (wk_garg[]){GT(x), GDT(dt)}, 2));
}
static wk_status i_transpose(ictx *c) {
  TRY(need_in(c, 1, 1));
  int x = in_v(c, 0);
  if (x < 0) return wk_last_error();
  int nd = vnd(c, x);
  int64_t p[WK_MAX_DIMS];
  int n;
  TRY(att_ints(c, "perm", p, &n, WK_MAX_DIMS));
  if (n < 0)
    for (n = 0; n < nd; n++) p[n] = nd - 1 - n;
  if (n != nd) return BAD("perm has %d elements for %d dims", n, nd);
  wk_symdim s[WK_MAX_DIMS];
  for (int k = 0; k < n; k++) s[k] = WK_SYM_CONST(p[k]);
  return set_out(c, 0, add1(c, "permute", (wk_garg[]){GT(x), GIS(s, n)}, 2));
}
static wk_status i_slice(ictx *c) {
  int64_t st[WK_MAX_DIMS], en[WK_MAX_DIMS], ax[WK_MAX_DIMS], sp[WK_MAX_DIMS];
  int n, ne, na = -1, ns = -1;
  if (c->im->opset < 10) {
    TRY(need_in(c, 1, 1));
    TRY(att_ints(c, "starts", st, &n, WK_MAX_DIMS));
    TRY(att_ints(c, "ends", en, &ne, WK_MAX_DIMS));
    TRY(att_ints(c, "axes", ax, &na, WK_MAX_DIMS));
  } else {
    TRY(need_in(c, 3, 5));
    oxv *e[4];
    for (int i = 0; i < 4; i++) {
      e[i] = NULL;
      if (has_in(c, (size_t)(i + 1)) && !(e[i] = in_known(c, (size_t)(i + 1), "starts/ends/axes/steps")))
        return wk_last_error();
      if (e[i] && e[i]->nk > WK_MAX_DIMS) return BAD("%d slice entries", e[i]->nk);
    }
    int64_t *dst[4] = {st, en, ax, sp};
    int *cnt[4] = {&n, &ne, &na, &ns};
    for (int i = 0; i < 4; i++)
      if (e[i]) {
        *cnt[i] = e[i]->nk;
        for (int k = 0; k < e[i]->nk; k++) TRY(kconst(c, e[i], k, &dst[i][k]));
      }
  }
  if (n < 0 || n != ne || (na >= 0 && na != n) || (ns >= 0 && ns != n))
    return BAD("starts/ends/axes/steps lengths differ");
  oxv *e = in_e(c, 0);
  if (!e) return wk_last_error();
  if (e->nk >= 0 && e->v < 0 && !e->t && !e->kscalar) { /* slicing known ints (a shape) */
    if (n != 1 || (na >= 0 && ax[0] != 0 && ax[0] != -1) || (ns >= 0 && sp[0] != 1))
      return FAIL("this slice of shape arithmetic is not supported");
    int64_t len = e->nk, s0 = st[0] < 0 ? st[0] + len : st[0], e0 = en[0] < 0 ? en[0] + len : en[0];
    s0 = s0 < 0 ? 0 : s0 > len ? len : s0;
    e0 = e0 < s0 ? s0 : e0 > len ? len : e0;
    return set_known(c, 0, e->k + s0, (int)(e0 - s0), false, e->kdt);
  }
  int x = in_v(c, 0);
  if (x < 0) return wk_last_error();
  int nd = vnd(c, x);
  for (int k = 0; k < n && x >= 0; k++) {
    int64_t a = na >= 0 ? ax[k] : k, step = ns >= 0 ? sp[k] : 1;
    if (a < -nd || a >= nd) return BAD("axis %lld for %d dims", (long long)a, nd);
    if (a < 0) a += nd;
    if (step == -1 && st[k] == -1 && en[k] <= -((int64_t)1 << 62)) { /* a reversal */
      wk_symdim d = WK_SYM_CONST(a);
      x = add1(c, "flip", (wk_garg[]){GT(x), GIS(&d, 1)}, 2);
      continue;
    }
    if (step <= 0) return FAIL("step %lld is not supported (positive steps only)", (long long)step);
    x = add1(c, "slice", (wk_garg[]){GT(x), GI(a), GI(st[k]), GI(en[k]), GI(step)}, 5);
  }
  return set_out(c, 0, x);
}
/* True when every element of an integer tensor is >= 0. */
static bool nonneg(wk_tensor *t) {
  wk_tensor *d = wk_to_dtype(t, WK_I64);
  bool ok = d != NULL;
  const int64_t *p = d ? wk_tensor_data(d) : NULL;
  for (int64_t k = 0; ok && k < wk_tensor_numel(d); k++) ok = p[k] >= 0;
  wk_release(d);
  return ok;
}
static wk_status i_gather(ictx *c) {
  TRY(need_in(c, 2, 2));
  int64_t axis;
  TRY(att_i(c, "axis", 0, &axis));
  oxv *d = in_e(c, 0), *ix = in_e(c, 1);
  if (!d || !ix) return wk_last_error();
  if (d->nk >= 0 && d->v < 0 && !d->t && ix->nk >= 0) { /* Shape -> Gather */
    if (axis != 0 && axis != -1) return BAD("axis %lld of a 1-d value", (long long)axis);
    wk_symdim r[64];
    for (int i = 0; i < ix->nk; i++) {
      int64_t k;
      TRY(kconst(c, ix, i, &k));
      if (k < -d->nk || k >= d->nk)
        return im_fail(c->im, WK_ERR_INDEX, "index %lld out of range for %d values", (long long)k, d->nk);
      r[i] = d->k[k < 0 ? k + d->nk : k];
    }
    return set_known(c, 0, r, ix->nk, ix->kscalar, d->kdt);
  }
  int x = in_v(c, 0);
  if (x < 0) return wk_last_error();
  int nd = vnd(c, x);
  if (axis < -nd || axis >= nd) return BAD("axis %lld for %d dims", (long long)axis, nd);
  if (axis < 0) axis += nd;
  if (ix->nk >= 0 && ix->kscalar && ix->v < 0) { /* one index: select */
    int64_t k;
    TRY(kconst(c, ix, 0, &k));
    return set_out(c, 0, add1(c, "select", (wk_garg[]){GT(x), GI(axis), GI(k)}, 3));
  }
  int i = in_v(c, 1);
  if (i < 0) return wk_last_error();
  /* ONNX allows negative indices (from the end); index_select and embedding do not */
  wk_symdim len = vdims(c, x)[axis];
  if (!(ix->t && wk_tensor_numel(ix->t) && nonneg(ix->t))) {
    if (!kis_const(len)) return FAIL("indices that may be negative on a symbolic dim");
    int neg = add1(c, "lt.Scalar", (wk_garg[]){GT(i), GI(0)}, 2);
    int sh = neg < 0 ? -1 : add1(c, "add.Scalar", (wk_garg[]){GT(i), GI(wk_symdim_eval(len, NULL))}, 2);
    i = sh < 0 ? -1 : add1(c, "where.self", (wk_garg[]){GT(neg), GT(sh), GT(i)}, 3);
    if (i < 0) return wk_last_error();
  }
  if (axis == 0 && nd == 2) return set_out(c, 0, add1(c, "embedding", (wk_garg[]){GT(x), GT(i)}, 2));
  /* index_select on the flattened indices, then the indices' shape in place of dim `axis` */
  int ni = vnd(c, i);
  int fi = ni == 1 ? i : add1(c, "reshape", (wk_garg[]){GT(i), GIS((wk_symdim[]){WK_SYM_CONST(-1)}, 1)}, 2);
  int y = fi < 0 ? -1 : add1(c, "index_select", (wk_garg[]){GT(x), GI(axis), GT(fi)}, 3);
  if (y >= 0 && ni != 1) {
    wk_symdim sz[WK_MAX_DIMS];
    int n = 0;
    const wk_symdim *xd = vdims(c, x), *id = vdims(c, i);
    if (nd - 1 + ni > WK_MAX_DIMS) return FAIL("the result has too many dims");
    for (int k = 0; k < axis; k++) sz[n++] = xd[k];
    for (int k = 0; k < ni; k++) sz[n++] = id[k];
    for (int k = (int)axis + 1; k < nd; k++) sz[n++] = xd[k];
    y = add1(c, "reshape", (wk_garg[]){GT(y), GIS(sz, n)}, 2);
  }
  return set_out(c, 0, y);
}
static wk_status i_constant(ictx *c) {
  TRY(need_in(c, 0, 0));
  if (c->n->n_attribute != 1) return BAD("a Constant has exactly one attribute, this one %zu", c->n->n_attribute);
  const Onnx__AttributeProto *a = c->n->attribute[0];
  wk_tensor *t = NULL;
  if (!strcmp(a->name, "value")) {
    if (!a->t) return BAD("attribute 'value' holds no tensor");
    t = im_tensor(c->im, a->t, "value");
  } else if (!strcmp(a->name, "value_float")) {
    t = wk_scalar_tensor(a->f, WK_F32);
  } else if (!strcmp(a->name, "value_int")) {
    t = wk_scalar_tensor((double)a->i, WK_I64);
    if (t) *(int64_t *)wk_tensor_data(t) = a->i; /* exact beyond 2^53 */
  } else if (!strcmp(a->name, "value_floats")) {
    int64_t n = (int64_t)a->n_floats;
    t = wk_tensor_from_data(n ? (const void *)a->floats : NULL, WK_F32, &n, 1);
  } else if (!strcmp(a->name, "value_ints")) {
    int64_t n = (int64_t)a->n_ints;
    t = wk_tensor_from_data(n ? (const void *)a->ints : NULL, WK_I64, &n, 1);
  } else {
    return FAIL("attribute '%.60s' is not supported", a->name);
  }
  if (!t) return wk_last_error();
  if (!has_out(c, 0)) {
    wk_release(t);
    return BAD("no output");
  }
  oxv *e = im_define(c->im, c->n->output[0]);
  if (!e) {
    wk_release(t);
    return wk_last_error();
  }
  return im_set_tensor(c->im, e, t, false);
}
static wk_status i_constant_of_shape(ictx *c) {
  TRY(need_in(c, 1, 1));
  oxv *s = in_known(c, 0, "shape");
  if (!s) return wk_last_error();
  if (s->nk > WK_MAX_DIMS) return BAD("shape of %d dims", s->nk);
  const Onnx__AttributeProto *a = att(c, "value");
  double v = 0;
  wk_dtype dt = WK_F32;
  if (a) {
    if (!a->t) return BAD("attribute 'value' holds no tensor");
    wk_tensor *t = im_tensor(c->im, a->t, "value");
    if (!t) return wk_last_error();
    if (wk_tensor_numel(t) != 1) {
      wk_release(t);
      return BAD("attribute 'value' must have one element");
    }
    dt = wk_tensor_dtype(t);
    wk_tensor *d = wk_to_dtype(t, WK_F64);
    wk_release(t);
    if (!d) return wk_last_error();
    v = *(const double *)wk_tensor_data(d);
    wk_release(d);
  }
  wk_garg dev = {.tag = WK_V_DEVICE, .u.device = c->im->dev.type ? c->im->dev : (wk_device){WK_DEVICE_CPU, 0}};
  return set_out(c, 0, add1(c, "full", (wk_garg[]){GIS(s->k, s->nk), GF(v), GDT(dt), dev}, 4));
}
static wk_status i_expand(ictx *c) {
  TRY(need_in(c, 2, 2));
  int x = in_v(c, 0);
  oxv *s = x < 0 ? NULL : in_known(c, 1, "shape");
  if (!s) return wk_last_error();
  int nd = vnd(c, x), ns = s->nk, no = nd > ns ? nd : ns;
  if (no > WK_MAX_DIMS) return BAD("%d dims", no);
  wk_symdim sz[WK_MAX_DIMS];
  const wk_symdim *xd = vdims(c, x);
  for (int k = 0; k < no; k++) { /* bidirectional broadcasting */
    int i = k - (no - nd), j = k - (no - ns);
    wk_symdim a = i >= 0 ? xd[i] : WK_SYM_CONST(1), b = j >= 0 ? s->k[j] : WK_SYM_CONST(1);
    sz[k] = kis_const(b) && wk_symdim_eval(b, NULL) == 1 ? a : b;
  }
  return set_out(c, 0, add1(c, "expand", (wk_garg[]){GT(x), GIS(sz, no)}, 2));
}
static wk_status i_tile(ictx *c) {
  TRY(need_in(c, 2, 2));
  int x = in_v(c, 0);
  oxv *r = x < 0 ? NULL : in_known(c, 1, "repeats");
  if (!r) return wk_last_error();
  if (r->nk != vnd(c, x)) return BAD("%d repeats for %d dims", r->nk, vnd(c, x));
  return set_out(c, 0, add1(c, "repeat", (wk_garg[]){GT(x), GIS(r->k, r->nk)}, 2));
}
static wk_status i_pad(ictx *c) {
  char mode[16];
  TRY(att_s(c, "mode", "constant", mode, sizeof mode));
  if (strcmp(mode, "constant") && strcmp(mode, "reflect") && strcmp(mode, "edge"))
    return FAIL("mode '%s' is not supported", mode);
  int64_t p[2 * WK_MAX_DIMS], axes[WK_MAX_DIMS];
  int n, na = -1;
  double value = 0;
  if (c->im->opset < 11) {
    TRY(need_in(c, 1, 1));
    TRY(att_ints(c, "pads", p, &n, 2 * WK_MAX_DIMS));
    TRY(att_f(c, "value", 0, &value));
  } else {
    TRY(need_in(c, 2, 4));
    oxv *e = in_known(c, 1, "pads");
    if (!e) return wk_last_error();
    if (e->nk > 2 * WK_MAX_DIMS) return BAD("%d pads", e->nk);
    n = e->nk;
    for (int k = 0; k < n; k++) TRY(kconst(c, e, k, &p[k]));
    if (has_in(c, 2)) TRY(in_scalar(c, 2, &value));
    if (has_in(c, 3)) {
      oxv *a = in_known(c, 3, "axes");
      if (!a) return wk_last_error();
      if (a->nk > WK_MAX_DIMS) return BAD("%d axes", a->nk);
      na = a->nk;
      for (int k = 0; k < na; k++) TRY(kconst(c, a, k, &axes[k]));
    }
  }
  int x = in_v(c, 0);
  if (x < 0) return wk_last_error();
  int nd = vnd(c, x);
  int64_t full[2 * WK_MAX_DIMS] = {0};
  int cnt = na >= 0 ? na : nd;
  if (n != 2 * cnt) return BAD("pads has %d elements for %d axes", n, cnt);
  for (int k = 0; k < cnt; k++) {
    int64_t a = na >= 0 ? axes[k] : k;
    if (a < -nd || a >= nd) return BAD("axis %lld for %d dims", (long long)a, nd);
    if (a < 0) a += nd;
    full[a] = p[k], full[nd + a] = p[cnt + k];
  }
  /* PyTorch's pad list: last dim first, (begin, end) pairs, up to the first padded dim */
  wk_symdim tp[2 * WK_MAX_DIMS];
  int first = nd;
  for (int d = 0; d < nd; d++)
    if (full[d] || full[nd + d]) {
      first = d;
      break;
    }
  int m = 0;
  for (int d = nd - 1; d >= first; d--) tp[m++] = WK_SYM_CONST(full[d]), tp[m++] = WK_SYM_CONST(full[nd + d]);
  if (!m) return set_out(c, 0, x);
  const char *wm = !strcmp(mode, "edge") ? "replicate" : mode;
  return set_out(
      c, 0, add1(c, "pad", (wk_garg[]){GT(x), GIS(tp, m), GS(wm), strcmp(mode, "constant") ? GN() : GF(value)}, 4));
}
static wk_status i_split(ictx *c) {
  TRY(need_in(c, 1, 2));
  int64_t axis, sizes[64], nout64;
  int n = -1;
  TRY(att_i(c, "axis", 0, &axis));
  TRY(att_i(c, "num_outputs", 0, &nout64));
  int x = in_v(c, 0);
  if (x < 0) return wk_last_error();
  int nd = vnd(c, x);
  if (axis < -nd || axis >= nd) return BAD("axis %lld for %d dims", (long long)axis, nd);
  if (axis < 0) axis += nd;
  size_t nout = c->n->n_output;
  if (nout < 1 || nout > 64) return BAD("%zu outputs", nout);
  if (c->im->opset < 13)
    TRY(att_ints(c, "split", sizes, &n, 64));
  else if (has_in(c, 1)) {
    oxv *e = in_known(c, 1, "split");
    if (!e) return wk_last_error();
    n = e->nk;
    for (int k = 0; k < n; k++) TRY(kconst(c, e, k, &sizes[k]));
  }
  wk_symdim d = vdims(c, x)[axis];
  if (n < 0) {
    if (!kis_const(d)) return FAIL("an even split of a symbolic dim");
    int64_t len = wk_symdim_eval(d, NULL), each = (len + (int64_t)nout - 1) / (int64_t)nout;
    for (size_t k = 0; k < nout; k++) {
      int64_t start = each * (int64_t)k;
      sizes[k] = start >= len ? 0 : (len - start < each ? len - start : each);
    }
    n = (int)nout;
  }
  if ((size_t)n != nout) return BAD("%d split sizes for %zu outputs", n, nout);
  int64_t start = 0;
  for (size_t k = 0; k < nout; k++) {
    if (sizes[k] < 0) return BAD("split size %lld", (long long)sizes[k]);
    TRY(set_out(c, k, add1(c, "narrow", (wk_garg[]){GT(x), GI(axis), GI(start), GI(sizes[k])}, 4)));
    start += sizes[k];
  }
  if (kis_const(d) && start != wk_symdim_eval(d, NULL))
    return im_fail(c->im, WK_ERR_SHAPE, "split sizes add up to %lld, the dim is %lld", (long long)start,
                   (long long)wk_symdim_eval(d, NULL));
  return WK_OK;
}
/* A sum over axes ax[0..n) (all of them: n == nd): sum, else the mean times the count (static dims). */
static int rsum(ictx *c, int x, const int64_t *ax, int n, bool keep) {
  int nd = vnd(c, x);
  if (n == nd) {
    int y = add1(c, "sum", (wk_garg[]){GT(x)}, 1);
    if (y >= 0 && keep) {
      wk_symdim ones[WK_MAX_DIMS];
      for (int k = 0; k < nd; k++) ones[k] = WK_SYM_CONST(1);
      y = add1(c, "reshape", (wk_garg[]){GT(y), GIS(ones, nd)}, 2);
    }
    return y;
  }
  int64_t count = 1;
  wk_symdim s[WK_MAX_DIMS];
  for (int k = 0; k < n; k++) {
    wk_symdim d = vdims(c, x)[ax[k]];
    if (!kis_const(d)) return FAIL("a sum over a symbolic dim is not supported"), -1;
    count *= wk_symdim_eval(d, NULL);
    s[k] = WK_SYM_CONST(ax[k]);
  }
  if (!wk_dtype_is_floating(vdt(c, x))) return FAIL("a sum over some axes of integers is not supported"), -1;
  int y = add1(c, "mean.dim", (wk_garg[]){GT(x), GIS(s, n), GB(keep)}, 3);
  return y < 0 ? -1 : add1(c, "mul.Scalar", (wk_garg[]){GT(y), GF((double)count)}, 2);
}
static wk_status i_reduce(ictx *c) { /* ReduceMean, Sum, SumSquare, L1, L2, LogSum, LogSumExp, Max, Min, Prod */
  int64_t ax[WK_MAX_DIMS], keep, noop;
  int n;
  const char *op = c->n->op_type + 6; /* after "Reduce" */
  TRY(need_in(c, 1, 2));
  TRY(axes_of(c, !strcmp(op, "Sum") ? 13 : 18, 1, ax, &n));
  TRY(att_i(c, "keepdims", 1, &keep));
  TRY(att_i(c, "noop_with_empty_axes", 0, &noop));
  int x = in_v(c, 0);
  if (x < 0) return wk_last_error();
  int nd = vnd(c, x);
  if (n <= 0 && noop) return set_out(c, 0, x);
  if (n <= 0)
    for (n = 0; n < nd; n++) ax[n] = n; /* every axis */
  bool seen[WK_MAX_DIMS] = {0};
  for (int k = 0; k < n; k++) {
    if (ax[k] < -nd || ax[k] >= nd) return BAD("axis %lld for %d dims", (long long)ax[k], nd);
    if (ax[k] < 0) ax[k] += nd;
    if (seen[ax[k]]) return BAD("axis %lld repeats", (long long)ax[k]);
    seen[ax[k]] = true;
  }
  qsort(ax, (size_t)n, sizeof *ax, cmp64);
  wk_symdim s[WK_MAX_DIMS];
  for (int k = 0; k < n; k++) s[k] = WK_SYM_CONST(ax[k]);
  int y = -1;
  if (!strcmp(op, "Mean"))
    y = add1(c, "mean.dim", (wk_garg[]){GT(x), GIS(s, n), GB(keep)}, 3);
  else if (!strcmp(op, "Sum"))
    y = rsum(c, x, ax, n, keep);
  else if (!strcmp(op, "SumSquare") || !strcmp(op, "L2")) {
    int sq = add1(c, "mul", (wk_garg[]){GT(x), GT(x)}, 2);
    y = sq < 0 ? -1 : rsum(c, sq, ax, n, keep);
    if (y >= 0 && op[0] == 'L') y = add1(c, "sqrt", (wk_garg[]){GT(y)}, 1);
  } else if (!strcmp(op, "L1")) {
    int ab = add1(c, "abs", (wk_garg[]){GT(x)}, 1);
    y = ab < 0 ? -1 : rsum(c, ab, ax, n, keep);
  } else if (!strcmp(op, "LogSum")) {
    y = rsum(c, x, ax, n, keep);
    if (y >= 0) y = add1(c, "log", (wk_garg[]){GT(y)}, 1);
  } else if (!strcmp(op, "LogSumExp")) {
    y = add1(c, "logsumexp", (wk_garg[]){GT(x), GIS(s, n), GB(keep)}, 3);
  } else if (!strcmp(op, "Max") || !strcmp(op, "Min")) {
    bool mn = op[1] == 'i';
    int in = mn ? add1(c, "neg", (wk_garg[]){GT(x)}, 1) : x;
    y = in < 0 ? -1 : add1(c, "amax", (wk_garg[]){GT(in), GIS(s, n), GB(keep)}, 3);
    if (y >= 0 && mn) y = add1(c, "neg", (wk_garg[]){GT(y)}, 1);
  } else if (!strcmp(op, "Prod")) {
    y = x;
    for (int k = n - 1; k >= 0 && y >= 0; k--) y = add1(c, "prod.dim_int", (wk_garg[]){GT(y), GI(ax[k]), GB(keep)}, 3);
  }
  return set_out(c, 0, y);
}
static wk_status i_topk(ictx *c) {
  TRY(need_in(c, 2, 2));
  int64_t axis, largest, sorted, k;
  TRY(att_i(c, "axis", -1, &axis));
  TRY(att_i(c, "largest", 1, &largest));
  TRY(att_i(c, "sorted", 1, &sorted));
  int x = in_v(c, 0);
  oxv *e = x < 0 ? NULL : in_known(c, 1, "K");
  if (!e) return wk_last_error();
  if (e->nk != 1) return BAD("K must have one element");
  TRY(kconst(c, e, 0, &k));
  int id = add(c, "topk", (wk_garg[]){GT(x), GI(k), GI(axis), GB(largest), GB(sorted)}, 5);
  if (id < 0) return wk_last_error();
  TRY(set_out(c, 0, wk_graph_node_output(G, id, 0)));
  return set_out(c, 1, wk_graph_node_output(G, id, 1));
}
/* NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss (and its log_prob output) */
static wk_status i_loss(ictx *c) {
  TRY(need_in(c, 2, 3));
  char red[16];
  int64_t ignore;
  TRY(att_s(c, "reduction", "mean", red, sizeof red));
  TRY(att_i(c, "ignore_index", -100, &ignore));
  int r = !strcmp(red, "none") ? 0 : !strcmp(red, "mean") ? 1 : !strcmp(red, "sum") ? 2 : -1;
  if (r < 0) return BAD("reduction '%s' is not none, mean or sum", red);
  int x = in_v(c, 0), t = x < 0 ? -1 : in_v(c, 1), w = has_in(c, 2) && t >= 0 ? in_v(c, 2) : -2;
  if (t < 0 || w == -1) return wk_last_error();
  if (vdt(c, t) != WK_I64 && (t = add1(c, "to.dtype", (wk_garg[]){GT(t), GDT(WK_I64)}, 2)) < 0) return wk_last_error();
  bool sce = !strcmp(c->n->op_type, "SoftmaxCrossEntropyLoss");
  int lp = x;
  if (sce && (lp = add1(c, "log_softmax", (wk_garg[]){GT(x), GI(1)}, 2)) < 0) return wk_last_error();
  int y = add1(c, "nll_loss", (wk_garg[]){GT(lp), GT(t), w >= 0 ? GT(w) : GN(), GI(r), GI(ignore)}, 5);
  TRY(set_out(c, 0, y));
  if (sce) return set_out(c, 1, lp);
  return WK_OK;
}
static wk_status i_argmax(ictx *c) {
  int64_t axis, keep, last;
  TRY(need_in(c, 1, 1));
  TRY(att_i(c, "axis", 0, &axis));
  TRY(att_i(c, "keepdims", 1, &keep));
  TRY(att_i(c, "select_last_index", 0, &last));
  int x = in_v(c, 0);
  if (x < 0) return wk_last_error();
  if (!last) return set_out(c, 0, add1(c, c->wop, (wk_garg[]){GT(x), GI(axis), GB(keep)}, 3));
  /* the last extreme: the first one of the reversed axis, counted from the end */
  int nd = vnd(c, x);
  if (axis < -nd || axis >= nd) return BAD("axis %lld for %d dims", (long long)axis, nd);
  if (axis < 0) axis += nd;
  wk_symdim len = vdims(c, x)[axis], ax = WK_SYM_CONST(axis);
  if (!kis_const(len)) return FAIL("select_last_index=1 on a symbolic dim");
  int f = add1(c, "flip", (wk_garg[]){GT(x), GIS(&ax, 1)}, 2);
  int i = f < 0 ? -1 : add1(c, c->wop, (wk_garg[]){GT(f), GI(axis), GB(keep)}, 3);
  int ng = i < 0 ? -1 : add1(c, "neg", (wk_garg[]){GT(i)}, 1);
  return set_out(c, 0, ng < 0 ? -1 : add1(c, "add.Scalar", (wk_garg[]){GT(ng), GI(wk_symdim_eval(len, NULL) - 1)}, 2));
}
static wk_status i_cumsum(ictx *c) {
  int64_t excl, rev, axis;
  TRY(need_in(c, 2, 2));
  TRY(att_i(c, "exclusive", 0, &excl));
  TRY(att_i(c, "reverse", 0, &rev));
  int x = in_v(c, 0);
  oxv *a = x < 0 ? NULL : in_known(c, 1, "axis");
  if (!a) return wk_last_error();
  if (a->nk != 1) return BAD("axis must have one element");
  TRY(kconst(c, a, 0, &axis));
  int nd = vnd(c, x);
  if (axis < -nd || axis >= nd) return BAD("axis %lld for %d dims", (long long)axis, nd);
  if (axis < 0) axis += nd;
  wk_symdim ax = WK_SYM_CONST(axis);
  int in = rev ? add1(c, "flip", (wk_garg[]){GT(x), GIS(&ax, 1)}, 2) : x; /* reverse: flip, sum, flip */
  int y = in < 0 ? -1 : add1(c, "cumsum", (wk_garg[]){GT(in), GI(axis)}, 2);
  if (y >= 0 && excl) y = add1(c, "sub", (wk_garg[]){GT(y), GT(in)}, 2); /* exclusive: without the element itself */
  if (y >= 0 && rev) y = add1(c, "flip", (wk_garg[]){GT(y), GIS(&ax, 1)}, 2);
  return set_out(c, 0, y);
}

static wk_status i_prelu(ictx *c) { /* x if x >= 0 else slope * x (slope broadcast to x) */
  TRY(need_in(c, 2, 2));
  int x = in_v(c, 0), sl = x < 0 ? -1 : in_v(c, 1);
  if (sl < 0) return wk_last_error();
  int nd = vnd(c, x);
  if (c->im->opset < 7 && vnd(c, sl) == 1 && nd >= 3) { /* opset 6: one slope per channel (dim 1) */
    wk_symdim sh[WK_MAX_DIMS];
    sh[0] = vdims(c, sl)[0];
    for (int k = 1; k < nd - 1; k++) sh[k] = WK_SYM_CONST(1);
    if ((sl = add1(c, "reshape", (wk_garg[]){GT(sl), GIS(sh, nd - 1)}, 2)) < 0) return wk_last_error();
  }
  int m = add1(c, "mul", (wk_garg[]){GT(x), GT(sl)}, 2);
  int pos = m < 0 ? -1 : add1(c, "ge.Scalar", (wk_garg[]){GT(x), GI(0)}, 2);
  return set_out(c, 0, pos < 0 ? -1 : add1(c, "where.self", (wk_garg[]){GT(pos), GT(x), GT(m)}, 3));
}
static wk_status i_instancenorm(ictx *c) { /* (x - mean) / sqrt(var + eps) * scale + B over the spatial dims */
  TRY(need_in(c, 3, 3));
  double eps;
  TRY(att_f(c, "epsilon", 1e-5, &eps));
  int x = in_v(c, 0), sc = x < 0 ? -1 : in_v(c, 1), b = sc < 0 ? -1 : in_v(c, 2);
  if (b < 0) return wk_last_error();
  int nd = vnd(c, x);
  if (nd < 3) return BAD("the input has %d dims (N, C, D1, ... expected)", nd);
  wk_symdim axes[WK_MAX_DIMS], shape[WK_MAX_DIMS];
  for (int k = 2; k < nd; k++) axes[k - 2] = WK_SYM_CONST(k);
  shape[0] = WK_SYM_CONST(-1);
  for (int k = 1; k < nd - 1; k++) shape[k] = WK_SYM_CONST(1);
  int mean = add1(c, "mean.dim", (wk_garg[]){GT(x), GIS(axes, nd - 2), GB(true)}, 3);
  int dx = mean < 0 ? -1 : add1(c, "sub", (wk_garg[]){GT(x), GT(mean)}, 2);
  int sq = dx < 0 ? -1 : add1(c, "mul", (wk_garg[]){GT(dx), GT(dx)}, 2);
  int var = sq < 0 ? -1 : add1(c, "mean.dim", (wk_garg[]){GT(sq), GIS(axes, nd - 2), GB(true)}, 3);
  int ve = var < 0 ? -1 : add1(c, "add.Scalar", (wk_garg[]){GT(var), GF(eps)}, 2);
  int rs = ve < 0 ? -1 : add1(c, "rsqrt", (wk_garg[]){GT(ve)}, 1);
  int y = rs < 0 ? -1 : add1(c, "mul", (wk_garg[]){GT(dx), GT(rs)}, 2);
  int s2 = y < 0 ? -1 : add1(c, "reshape", (wk_garg[]){GT(sc), GIS(shape, nd - 1)}, 2);
  int b2 = s2 < 0 ? -1 : add1(c, "reshape", (wk_garg[]){GT(b), GIS(shape, nd - 1)}, 2);
  y = b2 < 0 ? -1 : add1(c, "mul", (wk_garg[]){GT(y), GT(s2)}, 2);
  return set_out(c, 0, y < 0 ? -1 : add1(c, "add", (wk_garg[]){GT(y), GT(b2)}, 2));
}
static wk_status i_gather_elements(ictx *c) {
  TRY(need_in(c, 2, 2));
  int64_t axis;
  TRY(att_i(c, "axis", 0, &axis));
  int x = in_v(c, 0), i = x < 0 ? -1 : in_v(c, 1);
  if (i < 0) return wk_last_error();
  int nd = vnd(c, x);
  if (axis < -nd || axis >= nd) return BAD("axis %lld for %d dims", (long long)axis, nd);
  if (axis < 0) axis += nd;
  wk_symdim len = vdims(c, x)[axis];
  if (!kis_const(len)) return FAIL("indices that may be negative on a symbolic dim");
  int neg = add1(c, "lt.Scalar", (wk_garg[]){GT(i), GI(0)}, 2);
  int sh = neg < 0 ? -1 : add1(c, "add.Scalar", (wk_garg[]){GT(i), GI(wk_symdim_eval(len, NULL))}, 2);
  i = sh < 0 ? -1 : add1(c, "where.self", (wk_garg[]){GT(neg), GT(sh), GT(i)}, 3);
  return set_out(c, 0, i < 0 ? -1 : add1(c, "gather", (wk_garg[]){GT(x), GI(axis), GT(i)}, 3));
}
static wk_status i_castlike(ictx *c) {
  TRY(need_in(c, 2, 2));
  int x = in_v(c, 0), t = x < 0 ? -1 : in_v(c, 1);
  if (t < 0) return wk_last_error();
  if (vdt(c, x) == vdt(c, t)) return set_out(c, 0, x);
  return set_out(c, 0, add1(c, "to.dtype", (wk_garg[]){GT(x), GDT(vdt(c, t))}, 2));
}

static wk_status i_thresholded_relu(ictx *c) { /* x where x > alpha, else 0 */
  double alpha;
  TRY(need_in(c, 1, 1));
  TRY(att_f(c, "alpha", 1.0, &alpha));
  int x = in_v(c, 0);
  int m = x < 0 ? -1 : add1(c, "gt.Scalar", (wk_garg[]){GT(x), GF(alpha)}, 2);
  int z = m < 0 ? -1 : add1(c, "zeros_like", (wk_garg[]){GT(x)}, 1);
  return set_out(c, 0, z < 0 ? -1 : add1(c, "where.self", (wk_garg[]){GT(m), GT(x), GT(z)}, 3));
}
static wk_status i_shrink(ictx *c) { /* x + bias below -lambd, x - bias above lambd, else 0 */
  double lambd, bias;
  TRY(need_in(c, 1, 1));
  TRY(att_f(c, "lambd", 0.5, &lambd));
  TRY(att_f(c, "bias", 0.0, &bias));
  int x = in_v(c, 0);
  if (x < 0) return wk_last_error();
  bool fl = wk_dtype_is_floating(vdt(c, x));
  wk_garg L = fl ? GF(lambd) : GI((int64_t)lambd), B = fl ? GF(bias) : GI((int64_t)bias),
          NL = fl ? GF(-lambd) : GI(-(int64_t)lambd);
  int lo = add1(c, "lt.Scalar", (wk_garg[]){GT(x), NL}, 2);
  int hi = lo < 0 ? -1 : add1(c, "gt.Scalar", (wk_garg[]){GT(x), L}, 2);
  int xp = hi < 0 ? -1 : add1(c, "add.Scalar", (wk_garg[]){GT(x), B}, 2);
  int xm = xp < 0 ? -1 : add1(c, "sub.Scalar", (wk_garg[]){GT(x), B}, 2);
  int z = xm < 0 ? -1 : add1(c, "zeros_like", (wk_garg[]){GT(x)}, 1);
  int y = z < 0 ? -1 : add1(c, "where.self", (wk_garg[]){GT(hi), GT(xm), GT(z)}, 3);
  return set_out(c, 0, y < 0 ? -1 : add1(c, "where.self", (wk_garg[]){GT(lo), GT(xp), GT(y)}, 3));
}
static wk_status i_trilu(ictx *c) { /* keep j - i >= k (upper) or j - i <= k (lower) of the last two dims */
  int64_t upper, k = 0;
  TRY(need_in(c, 1, 2));
  TRY(att_i(c, "upper", 1, &upper));
  int kv = -1; /* k given at run time: a 0-d tensor compared with */
  if (has_in(c, 1)) {
    oxv *e = in_e(c, 1);
    if (!e) return wk_last_error();
    if (e->nk == 1)
      TRY(kconst(c, e, 0, &k));
    else if ((kv = in_v(c, 1)) < 0)
      return wk_last_error();
    else if (vnd(c, kv) != 0 || vdt(c, kv) != WK_I64)
      return BAD("k must be a 0-d int64 tensor");
  }
  int x = in_v(c, 0);
  if (x < 0) return wk_last_error();
  int nd = vnd(c, x);
  if (nd < 2) return BAD("the input has %d dims (at least 2)", nd);
  wk_symdim r = vdims(c, x)[nd - 2], cl = vdims(c, x)[nd - 1];
  if (!kis_const(r) || !kis_const(cl)) return FAIL("symbolic matrix sizes are not supported");
  wk_garg dev = {.tag = WK_V_DEVICE, .u.device = c->im->dev.type ? c->im->dev : (wk_device){WK_DEVICE_CPU, 0}};
  int rows = add1(c, "arange", (wk_garg[]){GI(0), GI(wk_symdim_eval(r, NULL)), GI(1), GDT(WK_I64), dev}, 5);
  int cols =
      rows < 0 ? -1 : add1(c, "arange", (wk_garg[]){GI(0), GI(wk_symdim_eval(cl, NULL)), GI(1), GDT(WK_I64), dev}, 5);
  int rc = cols < 0 ? -1 : add1(c, "unsqueeze", (wk_garg[]){GT(rows), GI(1)}, 2);
  int d = rc < 0 ? -1 : add1(c, "sub", (wk_garg[]){GT(cols), GT(rc)}, 2);
  int m = d < 0    ? -1
          : kv < 0 ? add1(c, upper ? "ge.Scalar" : "le.Scalar", (wk_garg[]){GT(d), GI(k)}, 2)
                   : add1(c, upper ? "ge" : "le", (wk_garg[]){GT(d), GT(kv)}, 2);
  int z = m < 0 ? -1 : add1(c, "zeros_like", (wk_garg[]){GT(x)}, 1);
  return set_out(c, 0, z < 0 ? -1 : add1(c, "where.self", (wk_garg[]){GT(m), GT(x), GT(z)}, 3));
}

static wk_status i_hardmax(ictx *c) { /* 1 at the first maximum along axis, 0 elsewhere */
  TRY(need_in(c, 1, 1));
  int64_t axis;
  TRY(att_i(c, "axis", c->im->opset >= 13 ? -1 : 1, &axis));
  int x = in_v(c, 0);
  if (x < 0) return wk_last_error();
  int nd = vnd(c, x);
  if (axis < -nd || axis >= nd) return BAD("axis %lld for %d dims", (long long)axis, nd);
  if (axis < 0) axis += nd;
  if (c->im->opset < 13 && axis != nd - 1) return FAIL("Hardmax before opset 13 over a non-last axis");
  wk_symdim n = vdims(c, x)[axis];
  if (!kis_const(n)) return FAIL("a symbolic axis size");
  int i = add1(c, "argmax", (wk_garg[]){GT(x), GI(axis), GB(false)}, 3);
  int oh = i < 0 ? -1 : add1(c, "one_hot", (wk_garg[]){GT(i), GI(wk_symdim_eval(n, NULL))}, 2);
  int y = oh < 0 ? -1 : add1(c, "to.dtype", (wk_garg[]){GT(oh), GDT(vdt(c, x))}, 2);
  if (y >= 0 && axis != nd - 1) { /* the one-hot dim back in place */
    wk_symdim perm[WK_MAX_DIMS];
    int k = 0;
    for (int d = 0; d < axis; d++) perm[k++] = WK_SYM_CONST(d);
    perm[k++] = WK_SYM_CONST(nd - 1);
    for (int d = (int)axis; d < nd - 1; d++) perm[k++] = WK_SYM_CONST(d);
    y = add1(c, "permute", (wk_garg[]){GT(y), GIS(perm, nd)}, 2);
  }
  return set_out(c, 0, y);
}
/* DepthToSpace (modes DCR, CRD) and SpaceToDepth: reshape, permute, reshape */
static wk_status i_depth_space(ictx *c) {
  TRY(need_in(c, 1, 1));
  int64_t b;
  char mode[8];
  TRY(att_i(c, "blocksize", 0, &b));
  TRY(att_s(c, "mode", "DCR", mode, sizeof mode));
  if (b < 1) return BAD("blocksize %lld", (long long)b);
  bool d2s = !strcmp(c->n->op_type, "DepthToSpace");
  if (d2s && strcmp(mode, "DCR") && strcmp(mode, "CRD")) return BAD("mode '%s' is not DCR or CRD", mode);
  int x = in_v(c, 0);
  if (x < 0) return wk_last_error();
  if (vnd(c, x) != 4) return BAD("the input has %d dims (4 expected)", vnd(c, x));
  const wk_symdim *d = vdims(c, x);
  for (int k = 1; k < 4; k++)
    if (!kis_const(d[k])) return FAIL("symbolic channel or spatial sizes");
  int64_t C = wk_symdim_eval(d[1], NULL), H = wk_symdim_eval(d[2], NULL), W = wk_symdim_eval(d[3], NULL);
  wk_symdim s6[6], s4[4];
  int64_t perm[6];
  s6[0] = s4[0] = d[0];
  if (d2s) {
    if (C % (b * b))
      return im_fail(c->im, WK_ERR_SHAPE, "%lld channels are not a multiple of blocksize^2", (long long)C);
    int64_t c2 = C / (b * b);
    bool dcr = !strcmp(mode, "DCR");
    int64_t a6[5] = {dcr ? b : c2, dcr ? b : b, dcr ? c2 : b, H, W};
    for (int k = 0; k < 5; k++) s6[k + 1] = WK_SYM_CONST(a6[k]);
    int64_t pd[6] = {0, 3, 4, 1, 5, 2}, pc[6] = {0, 1, 4, 2, 5, 3};
    memcpy(perm, dcr ? pd : pc, sizeof perm);
    s4[1] = WK_SYM_CONST(c2), s4[2] = WK_SYM_CONST(H * b), s4[3] = WK_SYM_CONST(W * b);
  } else {
    if (H % b || W % b)
      return im_fail(c->im, WK_ERR_SHAPE, "%lldx%lld is not a multiple of blocksize", (long long)H, (long long)W);
    int64_t a6[5] = {C, H / b, b, W / b, b};
    for (int k = 0; k < 5; k++) s6[k + 1] = WK_SYM_CONST(a6[k]);
    int64_t ps[6] = {0, 3, 5, 1, 2, 4};
    memcpy(perm, ps, sizeof perm);
    s4[1] = WK_SYM_CONST(C * b * b), s4[2] = WK_SYM_CONST(H / b), s4[3] = WK_SYM_CONST(W / b);
  }
  wk_symdim sp[6];
  for (int k = 0; k < 6; k++) sp[k] = WK_SYM_CONST(perm[k]);
  int y = add1(c, "reshape", (wk_garg[]){GT(x), GIS(s6, 6)}, 2);
  if (y >= 0) y = add1(c, "permute", (wk_garg[]){GT(y), GIS(sp, 6)}, 2);
  if (y >= 0) y = add1(c, "reshape", (wk_garg[]){GT(y), GIS(s4, 4)}, 2);
  return set_out(c, 0, y);
}

/* ---- the table ---- */
typedef struct irow {
  const char *op;
  ifn fn;
  const char *wop;
  const char *attrs; /* accepted attribute names, '|'-separated */
} irow;
#define POOL "auto_pad|kernel_shape|pads|strides|dilations"
static const irow k_rows[] = {
    {"Relu", i_unary, "relu", ""},
    {"Sigmoid", i_unary, "sigmoid", ""},
    {"Tanh", i_unary, "tanh", ""},
    {"Exp", i_unary, "exp", ""},
    {"Log", i_unary, "log", ""},
    {"Neg", i_unary, "neg", ""},
    {"Abs", i_unary, "abs", ""},
    {"Sqrt", i_unary, "sqrt", ""},
    {"Reciprocal", i_unary, "reciprocal", ""},
    {"Erf", i_unary, "erf", ""},
    {"Sin", i_unary, "sin", ""},
    {"Cos", i_unary, "cos", ""},
    {"Tan", i_unary, "tan", ""},
    {"Asin", i_unary, "asin", ""},
    {"Acos", i_unary, "acos", ""},
    {"Atan", i_unary, "atan", ""},
    {"Sinh", i_unary, "sinh", ""},
    {"Cosh", i_unary, "cosh", ""},
    {"Asinh", i_unary, "asinh", ""},
    {"Acosh", i_unary, "acosh", ""},
    {"Atanh", i_unary, "atanh", ""},
    {"Floor", i_unary, "floor", ""},
    {"Ceil", i_unary, "ceil", ""},
    {"Round", i_unary, "round", ""},
    {"Sign", i_unary, "sign", ""},
    {"Not", i_unary, "logical_not", ""},
    {"IsNaN", i_unary, "isnan", ""},
    {"IsInf", i_isinf, "isinf", "detect_negative|detect_positive"},
    {"Softplus", i_unary, "softplus", ""},
    {"HardSwish", i_unary, "hardswish", ""},
    {"Mish", i_unary, "mish", ""},
    {"Softsign", i_softsign, NULL, ""},
    {"LeakyRelu", i_leaky, "leaky_relu", "alpha"},
    {"Elu", i_leaky, "elu", "alpha"},
    {"Celu", i_leaky, "celu", "alpha"},
    {"Selu", i_selu, "selu", "alpha|gamma"},
    {"HardSigmoid", i_hardsigmoid, NULL, "alpha|beta"},
    {"Gelu", i_gelu, NULL, "approximate"},
    {"Clip", i_clip, NULL, "min|max"},
    {"Identity", i_identity, NULL, ""},
    {"Dropout", i_identity, NULL, "ratio|seed|is_test"},
    {"Add", i_binary, "add", "broadcast|axis"},
    {"Sub", i_binary, "sub", "broadcast|axis"},
    {"Mul", i_binary, "mul", "broadcast|axis"},
    {"Div", i_binary, "div", "broadcast|axis"},
    {"Pow", i_binary, "pow", "broadcast|axis"},
    {"Equal", i_binary, "eq", "broadcast|axis"},
    {"Less", i_binary, "lt", "broadcast|axis"},
    {"Greater", i_binary, "gt", "broadcast|axis"},
    {"LessOrEqual", i_binary, "le", ""},
    {"GreaterOrEqual", i_binary, "ge", ""},
    {"And", i_binary, "logical_and", "broadcast|axis"},
    {"Or", i_binary, "logical_or", "broadcast|axis"},
    {"Xor", i_binary, "ne", "broadcast|axis"},
    {"Mod", i_binary, "fmod", "fmod"},
    {"BitwiseAnd", i_binary, "bitwise_and", ""},
    {"BitwiseOr", i_binary, "bitwise_or", ""},
    {"BitwiseXor", i_binary, "bitwise_xor", ""},
    {"Sum", i_variadic, "add", ""},
    {"Max", i_variadic, "maximum", ""},
    {"Min", i_variadic, "minimum", ""},
    {"Mean", i_variadic, "add", ""},
    {"Where", i_where, NULL, ""},
    {"MatMul", i_matmul, NULL, ""},
    {"Gemm", i_gemm, NULL, "alpha|beta|transA|transB|broadcast"},
    {"Conv", i_conv, NULL, POOL "|group"},
    {"ConvTranspose", i_conv_transpose, NULL, POOL "|group|output_padding|output_shape"},
    {"MaxPool", i_maxpool, NULL, POOL "|ceil_mode|storage_order"},
    {"AveragePool", i_avgpool, NULL, POOL "|ceil_mode|count_include_pad"},
    {"GlobalAveragePool", i_global_pool, NULL, ""},
    {"GlobalMaxPool", i_global_pool, NULL, ""},
    {"BatchNormalization", i_batchnorm, NULL, "epsilon|momentum|training_mode|spatial|is_test"},
    {"LayerNormalization", i_layernorm, NULL, "axis|epsilon|stash_type"},
    {"Softmax", i_softmax, "softmax", "axis"},
    {"LogSoftmax", i_softmax, "log_softmax", "axis"},
    {"Shape", i_shape, NULL, "start|end"},
    {"Size", i_size, NULL, ""},
    {"Reshape", i_reshape, NULL, "allowzero|shape"},
    {"Flatten", i_flatten, NULL, "axis"},
    {"Unsqueeze", i_unsqueeze, NULL, "axes"},
    {"Squeeze", i_squeeze, NULL, "axes"},
    {"Concat", i_concat, NULL, "axis"},
    {"Cast", i_cast, NULL, "to|saturate"},
    {"Transpose", i_transpose, NULL, "perm"},
    {"Slice", i_slice, NULL, "starts|ends|axes"},
    {"Gather", i_gather, NULL, "axis"},
    {"Constant", i_constant, NULL,
     "value|value_float|value_floats|value_int|value_ints|sparse_value|value_string|value_strings"},
    {"ConstantOfShape", i_constant_of_shape, NULL, "value"},
    {"Expand", i_expand, NULL, ""},
    {"Tile", i_tile, NULL, ""},
    {"Pad", i_pad, NULL, "mode|pads|value"},
    {"Split", i_split, NULL, "axis|split|num_outputs"},
    {"ReduceMean", i_reduce, NULL, "axes|keepdims|noop_with_empty_axes"},
    {"ReduceSum", i_reduce, NULL, "axes|keepdims|noop_with_empty_axes"},
    {"ReduceMax", i_reduce, NULL, "axes|keepdims|noop_with_empty_axes"},
    {"ReduceMin", i_reduce, NULL, "axes|keepdims|noop_with_empty_axes"},
    {"ReduceSumSquare", i_reduce, NULL, "axes|keepdims|noop_with_empty_axes"},
    {"ReduceL1", i_reduce, NULL, "axes|keepdims|noop_with_empty_axes"},
    {"ReduceL2", i_reduce, NULL, "axes|keepdims|noop_with_empty_axes"},
    {"ReduceLogSum", i_reduce, NULL, "axes|keepdims|noop_with_empty_axes"},
    {"ReduceLogSumExp", i_reduce, NULL, "axes|keepdims|noop_with_empty_axes"},
    {"ReduceProd", i_reduce, NULL, "axes|keepdims|noop_with_empty_axes"},
    {"TopK", i_topk, NULL, "axis|largest|sorted"},
    {"NegativeLogLikelihoodLoss", i_loss, NULL, "reduction|ignore_index"},
    {"SoftmaxCrossEntropyLoss", i_loss, NULL, "reduction|ignore_index"},
    {"ArgMax", i_argmax, "argmax", "axis|keepdims|select_last_index"},
    {"ArgMin", i_argmax, "argmin", "axis|keepdims|select_last_index"},
    {"PRelu", i_prelu, NULL, ""},
    {"ThresholdedRelu", i_thresholded_relu, NULL, "alpha"},
    {"Shrink", i_shrink, NULL, "lambd|bias"},
    {"Hardmax", i_hardmax, NULL, "axis"},
    {"DepthToSpace", i_depth_space, NULL, "blocksize|mode"},
    {"SpaceToDepth", i_depth_space, NULL, "blocksize"},
    {"Trilu", i_trilu, NULL, "upper"},
    {"InstanceNormalization", i_instancenorm, NULL, "epsilon"},
    {"GatherElements", i_gather_elements, NULL, "axis"},
    {"CastLike", i_castlike, NULL, "saturate"},
    {"CumSum", i_cumsum, NULL, "exclusive|reverse"},
};

bool ox_import_supported(const char *op_type) {
  for (size_t i = 0; i < sizeof k_rows / sizeof *k_rows; i++)
    if (!strcmp(k_rows[i].op, op_type)) return true;
  return false;
}

static bool listed(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; *p;) {
    const char *e = strchr(p, '|');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == n && !strncmp(p, name, n)) return true;
    if (!e) break;
    p = e + 1;
  }
  return false;
}

wk_status ox_import_node(ox_im *im, const Onnx__NodeProto *n) {
  for (size_t i = 0; i < sizeof k_rows / sizeof *k_rows; i++) {
    if (strcmp(k_rows[i].op, n->op_type)) continue;
    ictx c = {im, n, k_rows[i].wop, "", false};
    for (size_t a = 0; a < n->n_attribute; a++) {
      const char *an = n->attribute[a]->name ? n->attribute[a]->name : "";
      if (!listed(k_rows[i].attrs, an)) return im_fail(im, WK_ERR_UNSUPPORTED, "unsupported attribute '%.60s'", an);
      if (n->attribute[a]->ref_attr_name && *n->attribute[a]->ref_attr_name)
        return im_fail(im, WK_ERR_UNSUPPORTED, "attribute '%.60s' refers to a function attribute", an);
    }
    /* the module path: the node's name up to its last '/' (Wick and PyTorch name nodes "path/Op") */
    const char *nm = n->name ? n->name : "";
    const char *sl = strrchr(nm, '/');
    if (sl) snprintf(c.path, sizeof c.path, "%.*s", (int)(sl - nm), nm);
    return k_rows[i].fn(&c);
  }
  return im_fail(im, WK_ERR_UNSUPPORTED, "op type '%.60s' is not supported", n->op_type);
}
