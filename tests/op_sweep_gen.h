/* The op sweep's generators (tests/check_op_sweep.c): the vocabulary of its
 * table (rows, cases, shape modes, dtype sets, flags) and, per op family, how
 * to build valid calls from random shapes and invalid ones for the error
 * checks. Only check_op_sweep.c includes this file. */
#ifndef WICK_TESTS_OP_SWEEP_GEN_H
#define WICK_TESTS_OP_SWEEP_GEN_H

#include "testutil.h"

/* ==== the table's vocabulary ========================================================== */

/* Shape modes a row can be tried in (BASIC always). */
enum { SW_BASIC, SW_BCAST, SW_EMPTY, SW_SCALAR, SW_NMODES };
#define M_BCAST (1u << SW_BCAST)
#define M_EMPTY (1u << SW_EMPTY)
#define M_SCALAR (1u << SW_SCALAR)
#define M_ALL (M_BCAST | M_EMPTY | M_SCALAR)

/* Dtype sets. */
#define DT(d) (1u << (d))
#define D_F (DT(WK_F32) | DT(WK_F64))
#define D_FI (D_F | DT(WK_I64))
#define D_FB (D_F | DT(WK_BF16))
#define D_FIB (D_FI | DT(WK_BF16))
#define D_ALL (D_FI | DT(WK_I32) | DT(WK_BOOL))

/* Row flags. */
enum {
  SW_NOGRAD = 1u << 0,  /* not gradchecked although the op has a derivative (reason in a comment) */
  SW_RANDOM = 1u << 1,  /* consumes the RNG: results compared by shape and dtype only */
  SW_DYNAMIC = 1u << 2, /* output shape depends on the data: cannot run on `meta` */
  SW_CONTIG = 1u << 3,  /* meaning depends on the input's strides (view, as_strided): no strided runs */
  SW_PLUGIN = 1u << 4   /* declared by a plugin that may be absent (the row is skipped then) */
};

/* The checks, for marking known failures. */
enum { C_VALUES = 1u << 0, C_ERRORS = 1u << 1, C_GRAD = 1u << 2, C_META = 1u << 3, C_DEVICE = 1u << 4 };

struct sw_row;

/* One concrete call of a row's op, built by the row's generator. Tensors are
 * owned by the scope the harness opens around each case. */
typedef struct sw_case {
  const struct sw_row *row;
  wk_op *op;
  wk_dtype dt;   /* the dtype under test */
  int mode;      /* SW_BASIC, ... */
  bool grad;     /* built for gradcheck: smooth inputs only (no NaN/inf, no ties) */
  bool maybe;    /* an error case only if the dispatcher rejects it (probe-built) */
  wk_device dev; /* where factories create (a Device argument follows it) */
  uint64_t rng;
  int n;
  wk_value a[WK_MAX_ARGS];
  bool devslot[WK_MAX_ARGS]; /* a Device argument that follows the case's device */
  bool frozen[WK_MAX_ARGS];  /* a tensor gradcheck leaves alone (indices, saved statistics) */
  int64_t ints[WK_MAX_ARGS][WK_MAX_DIMS];
  wk_tensor *lists[WK_MAX_ARGS][4];
  int grad_out;  /* the result gradcheck differentiates */
  char bad[256]; /* set when building failed (a helper op failed) */
} sw_case;

/* Builds a valid call in c (mode c->mode, dtype c->dt); false when the mode
 * does not apply to the op. */
typedef bool (*sw_gen)(sw_case *c);
/* Builds error case k (0, 1, ...); false when there is no case k. */
typedef bool (*sw_err)(sw_case *c, int k);

typedef struct sw_row {
  const char *op;
  sw_gen gen;
  sw_err err;      /* (optional) invalid calls */
  unsigned dtypes; /* DT(...) set */
  unsigned modes;  /* M_* beyond BASIC */
  unsigned flags;  /* SW_* */
  double lo, hi;   /* values of the main inputs (default [-2, 2)) */
  double tolx;     /* tolerance factor (default 1) */
  unsigned known;  /* checks known to fail (C_*): reported, not failed ... */
  unsigned crash;  /* ... modes (M_*) that crash the process: not run ... */
  const char *why; /* ... with the repro */
} sw_row;

/* ==== random inputs ==================================================================== */

static uint64_t rnext(sw_case *c) {
  c->rng ^= c->rng << 13;
  c->rng ^= c->rng >> 7;
  c->rng ^= c->rng << 17;
  return c->rng;
}
static double runif(sw_case *c) {
  return (double)(rnext(c) >> 11) / 9007199254740992.0;
}
/* A random integer in [lo, hi]. */
static int64_t rpick(sw_case *c, int64_t lo, int64_t hi) {
  return hi <= lo ? lo : lo + (int64_t)(rnext(c) % (uint64_t)(hi - lo + 1));
}

static void gen_fail(sw_case *c, const char *what) {
  if (!c->bad[0]) snprintf(c->bad, sizeof c->bad, "%s: %s", what, wk_last_error() ? wk_last_error_message() : "failed");
}

/* First result of an op called by name (scope-owned), or NULL. */
static wk_tensor *call1(const char *name, const wk_value *a, int n) {
  wk_value o[WK_MAX_OUTS];
  if (wk_call(name, a, n, o) != WK_OK) return NULL;
  return o[0].tag == WK_V_TENSOR ? o[0].u.t : NULL;
}
#define SW_NARGS(...) ((int)(sizeof((const wk_value[]){__VA_ARGS__}) / sizeof(wk_value)))
#define CALL1(name, ...) call1(name, (const wk_value[]){__VA_ARGS__}, SW_NARGS(__VA_ARGS__))

/* A cpu tensor of dtype dt holding vals (row-major). */
static wk_tensor *from_vals(wk_dtype dt, const int64_t *s, int nd, const double *vals) {
  wk_tensor *f = wk_tensor_from_data(vals, WK_F64, s, nd);
  if (!f || dt == WK_F64) return f;
  return CALL1("to.dtype", WK_VT(f), WK_VDT(dt));
}

static int64_t numel_of(const int64_t *s, int nd) {
  int64_t n = 1;
  for (int d = 0; d < nd; d++) n *= s[d];
  return n;
}

/* Random values in [lo, hi) (integer dtypes: floored; bool: half true). */
static wk_tensor *rt(sw_case *c, wk_dtype dt, const int64_t *s, int nd, double lo, double hi) {
  int64_t n = numel_of(s, nd);
  double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
  for (int64_t i = 0; i < n; i++) {
    double x = lo + (hi - lo) * runif(c);
    if (dt == WK_BOOL)
      x = runif(c) < 0.5;
    else if (!wk_dtype_is_floating(dt))
      x = floor(x);
    v[i] = x;
  }
  wk_tensor *t = from_vals(dt, s, nd, v);
  free(v);
  if (!t) gen_fail(c, "random tensor");
  return t;
}

/* Distinct values (a shuffled ramp scaled into [lo, hi)): no ties for sort/topk/max. */
static wk_tensor *rt_distinct(sw_case *c, wk_dtype dt, const int64_t *s, int nd, double lo, double hi) {
  int64_t n = numel_of(s, nd);
  double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
  for (int64_t i = 0; i < n; i++) v[i] = (double)i;
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t j = rpick(c, 0, i);
    double x = v[i];
    v[i] = v[j];
    v[j] = x;
  }
  bool integral = !wk_dtype_is_floating(dt);
  for (int64_t i = 0; i < n; i++) v[i] = integral ? v[i] + floor(lo) : lo + (hi - lo) * (v[i] + 0.5) / (double)n;
  wk_tensor *t = from_vals(dt, s, nd, v);
  free(v);
  if (!t) gen_fail(c, "distinct tensor");
  return t;
}

static wk_tensor *zeros_t(sw_case *c, wk_dtype dt, const int64_t *s, int nd) {
  int64_t n = numel_of(s, nd);
  double *v = calloc((size_t)(n ? n : 1), sizeof(double));
  wk_tensor *t = from_vals(dt, s, nd, v);
  free(v);
  if (!t) gen_fail(c, "zeros");
  return t;
}

/* Integer indices in [0, bound) (int64). */
static wk_tensor *rt_index(sw_case *c, const int64_t *s, int nd, int64_t bound) {
  return rt(c, WK_I64, s, nd, 0, (double)bound);
}

static void base_name(const char *op, char *buf, size_t n);

/* ---- per-name facts of the pointwise families (rows generated from op_list.h) ---- */
typedef struct {
  const char *name;
  double lo, hi;   /* 0, 0: the default range */
  unsigned dtypes; /* 0: the family's default */
} sw_trait;
static const sw_trait g_traits[] = {
    {"log", 0.1, 3, 0},   {"log1p", -0.5, 2, 0},        {"sqrt", 0.1, 3, 0},          {"rsqrt", 0.2, 3, 0},
    {"silu", 0, 0, D_FB}, {"logical_not", 0, 0, D_ALL}, {"logical_and", 0, 0, D_ALL}, {"logical_or", 0, 0, D_ALL},
    {"eq", 0, 0, D_ALL},  {"ne", 0, 0, D_ALL},
};
static const sw_trait *trait_of(const char *op) {
  char b[64];
  base_name(op, b, sizeof b);
  for (size_t i = 0; i < sizeof g_traits / sizeof g_traits[0]; i++)
    if (!strcmp(g_traits[i].name, b)) return &g_traits[i];
  return NULL;
}

/* The row's value range. */
static double lo_of(const sw_case *c) {
  const sw_trait *t = trait_of(c->row->op);
  return c->row->lo || c->row->hi ? c->row->lo : t && (t->lo || t->hi) ? t->lo : -2;
}
static double hi_of(const sw_case *c) {
  const sw_trait *t = trait_of(c->row->op);
  return c->row->lo || c->row->hi ? c->row->hi : t && (t->lo || t->hi) ? t->hi : 2;
}

/* The main input of most rows: c->dt, the row's range. */
static wk_tensor *rself(sw_case *c, const int64_t *s, int nd) {
  return rt(c, c->dt, s, nd, lo_of(c), hi_of(c));
}

/* A random shape for the case's mode, min_nd..max_nd dims of 1..4 (EMPTY: one
 * of them 0; SCALAR: 0 dims when min_nd is 0). Returns ndim. */
static int rshape(sw_case *c, int64_t *s, int min_nd, int max_nd) {
  if (c->mode == SW_SCALAR && min_nd == 0) return 0;
  int nd = (int)rpick(c, min_nd < 1 ? 1 : min_nd, max_nd);
  for (int d = 0; d < nd; d++) s[d] = c->grad ? rpick(c, 2, 3) : rpick(c, 1, 4); /* gradcheck: no degenerate dims */
  if (c->mode == SW_EMPTY) s[rpick(c, 0, nd - 1)] = 0;
  return nd;
}

/* A shape broadcastable to s[0..nd): trailing dims kept or set to 1, some
 * leading dims dropped. Returns its ndim. */
static int bshape(sw_case *c, const int64_t *s, int nd, int64_t *o) {
  int drop = nd > 1 ? (int)rpick(c, 0, 1) : 0, on = nd - drop;
  for (int d = 0; d < on; d++) o[d] = runif(c) < 0.5 ? 1 : s[drop + d];
  return on;
}

/* ---- argument builders ---- */
static void at(sw_case *c, wk_tensor *t) {
  if (!t) gen_fail(c, "argument tensor");
  c->a[c->n++] = WK_VT(t);
}
static void at_frozen(sw_case *c, wk_tensor *t) {
  c->frozen[c->n] = true;
  at(c, t);
}
static void ai(sw_case *c, int64_t v) {
  c->a[c->n++] = WK_VI(v);
}
static void af(sw_case *c, double v) {
  c->a[c->n++] = WK_VF(v);
}
static void ab(sw_case *c, bool v) {
  c->a[c->n++] = WK_VB(v);
}
static void anone(sw_case *c) {
  c->a[c->n++] = WK_VNONE;
}
static void astr(sw_case *c, const char *s) {
  c->a[c->n++] = WK_VS(s);
}
static void adt(sw_case *c, wk_dtype d) {
  c->a[c->n++] = WK_VDT(d);
}
static void adev(sw_case *c) {
  c->devslot[c->n] = true;
  c->a[c->n++] = WK_VDEV(c->dev);
}
static void aints(sw_case *c, const int64_t *v, int n) {
  memcpy(c->ints[c->n], v, sizeof(int64_t) * (size_t)n);
  c->a[c->n] = WK_VINTS(c->ints[c->n], n);
  c->n++;
}
#define AINTS(c, ...) aints(c, (const int64_t[]){__VA_ARGS__}, (int)(sizeof((const int64_t[]){__VA_ARGS__}) / 8))
static void alist(sw_case *c, wk_tensor *const *ts, int n) {
  for (int i = 0; i < n; i++) {
    if (!ts[i]) gen_fail(c, "list tensor");
    c->lists[c->n][i] = ts[i];
  }
  c->a[c->n] = WK_VTS(c->lists[c->n], n);
  c->n++;
}
/* A Scalar suited to the dtype under test: v for floating dtypes, round(v) otherwise. */
static void ascalar(sw_case *c, double v) {
  if (wk_dtype_is_floating(c->dt))
    af(c, v);
  else if (c->dt == WK_BOOL)
    ab(c, v != 0);
  else
    ai(c, (int64_t)llround(v));
}

/* The op's name without overload and trailing '_' ("add_.Scalar" -> "add"). */
static void base_name(const char *op, char *buf, size_t n) {
  snprintf(buf, n, "%s", op);
  char *dot = strchr(buf, '.');
  if (dot) *dot = 0;
  size_t l = strlen(buf);
  if (l > 1 && buf[l - 1] == '_') buf[l - 1] = 0;
}

/* An out= tensor for the functional variant of c's op on a[0..n): its dtype
 * and shape (zeros). */
static wk_tensor *out_like(sw_case *c, const wk_value *a, int n) {
  char base[64];
  base_name(c->row->op, base, sizeof base);
  wk_tensor *r = call1(base, a, n);
  if (!r) {
    gen_fail(c, "out= probe");
    return NULL;
  }
  return zeros_t(c, wk_tensor_dtype(r), wk_tensor_sizes(r), wk_tensor_dim(r));
}

static bool is_op(const sw_case *c, const char *base) {
  char b[64];
  base_name(c->row->op, b, sizeof b);
  return !strcmp(b, base);
}

/* Replaces a few elements of a floating tensor with NaN, inf and -inf (not
 * for gradcheck inputs). */
static void add_specials(sw_case *c, wk_tensor *t) {
  if (!t || c->grad || !wk_dtype_is_floating(wk_tensor_dtype(t)) || wk_tensor_numel(t) < 3) return;
  const double sp[3] = {NAN, INFINITY, -INFINITY};
  int nd = wk_tensor_dim(t);
  for (int k = 0; k < 3; k++) {
    int64_t idx[WK_MAX_DIMS];
    for (int d = 0; d < nd; d++) idx[d] = rpick(c, 0, wk_tensor_size(t, d) - 1);
    wk_tensor_set(t, idx, sp[k]);
  }
}
static bool wants_specials(const sw_case *c) {
  static const char *const names[] = {"isnan", "isinf", "nan_to_num", "maximum", "minimum", "clamp", "relu", "abs",
                                      "neg",   "sign",  "floor",      "ceil",    "round",   "eq",    "ne",   "lt",
                                      "le",    "gt",    "ge",         "sigmoid", "tanh",    "exp"};
  char b[64];
  base_name(c->row->op, b, sizeof b);
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (!strcmp(names[i], b)) return c->mode == SW_BASIC;
  return false;
}

/* ==== generators: pointwise, driven by the schema's argument names ======================= */

/* Every pointwise op: self/other/condition tensors, Scalars, and the out=
 * tensor; the variant (in place, out=, .Scalar) comes from the schema. */
static bool g_pw(sw_case *c) {
  int64_t s[WK_MAX_DIMS], o[WK_MAX_DIMS];
  int mut = wk_op_mutated_arg(c->op), nd = rshape(c, s, 0, 3), ond = nd;
  bool inplace = mut == 0;
  memcpy(o, s, sizeof s);
  double l1 = lo_of(c), h1 = hi_of(c), l2 = l1, h2 = h1;
  bool fl = wk_dtype_is_floating(c->dt);
  if (is_op(c, "pow")) {
    l1 = fl ? 0.5 : 1, h1 = fl ? 2 : 4, l2 = fl ? -2 : 0, h2 = 3;
  } else if (is_op(c, "div")) {
    l2 = fl ? 0.5 : 1, h2 = fl ? 2.5 : 3; /* no integer division by zero */
  }
  wk_dtype odt = c->dt;
  bool swap = false;
  if (c->mode == SW_BCAST) {
    ond = bshape(c, s, nd, o);
    if (!inplace && mut < 0) {
      swap = runif(c) < 0.5;
      odt = c->dt == WK_F64 ? WK_F32 : WK_F64; /* type promotion too */
    }
  } else if (c->mode == SW_SCALAR && !inplace) {
    ond = 1;
    o[0] = rpick(c, 2, 4);
  }
  wk_tensor *self = swap ? rt(c, c->dt, o, ond, l1, h1) : rt(c, c->dt, s, nd, l1, h1);
  wk_tensor *other = swap ? rt(c, odt, s, nd, l2, h2) : rt(c, odt, o, ond, l2, h2);
  if (wants_specials(c)) add_specials(c, self);
  int nargs = wk_op_num_args(c->op), which = (int)rpick(c, 0, 2); /* clamp: both bounds, min only, max only */
  for (int i = 0; i < nargs; i++) {
    const char *name = wk_op_arg_name(c->op, i), *type = wk_op_arg_type(c->op, i);
    bool tensor = !strncmp(type, "Tensor", 6);
    if (!strcmp(name, "self")) {
      at(c, self);
    } else if (!strcmp(name, "other") && tensor) {
      at(c, other);
    } else if (!strcmp(name, "other")) {
      ascalar(c, is_op(c, "pow") ? (fl ? 1.5 : 2) : fl ? 1.5 : 2);
    } else if (!strcmp(name, "condition")) {
      at(c, rt(c, WK_BOOL, o, ond, 0, 1));
    } else if (!strcmp(name, "alpha")) {
      ascalar(c, 2);
    } else if (!strcmp(name, "rounding_mode")) {
      static const char *const modes[] = {NULL, "trunc", "floor"};
      astr(c, modes[rpick(c, 0, 2)]);
    } else if (!strcmp(name, "negative_slope")) {
      af(c, 0.1);
    } else if (!strcmp(name, "approximate")) {
      astr(c, runif(c) < 0.5 ? "none" : "tanh");
    } else if (!strcmp(name, "min") || !strcmp(name, "max")) {
      double v = !strcmp(name, "min") ? -0.5 : 0.7;
      if ((which == 1 && v > 0) || (which == 2 && v < 0))
        anone(c);
      else
        ascalar(c, fl ? v : v * 2);
    } else if (!strcmp(name, "nan") || !strcmp(name, "posinf") || !strcmp(name, "neginf")) {
      if (runif(c) < 0.5)
        anone(c);
      else
        af(c, !strcmp(name, "nan") ? 0.25 : !strcmp(name, "posinf") ? 9 : -9);
    } else if (!strcmp(name, "out")) {
      at_frozen(c, out_like(c, c->a, c->n));
    } else {
      break; /* the rest take their defaults */
    }
  }
  return true;
}

/* Pointwise error cases, from the schema: non-broadcastable shapes, a
 * result the in-place/out= target cannot hold (dtype, shape), bool inputs
 * where the op refuses them, a bad string option, clamp without bounds.
 * Cases marked maybe count only when the dispatcher rejects them. */
static bool e_pw(sw_case *c, int k) {
  int mut = wk_op_mutated_arg(c->op), nargs = wk_op_num_args(c->op);
  int oi = wk_op_arg_index(c->op, "other");
  bool other_t = oi >= 0 && !strncmp(wk_op_arg_type(c->op, oi), "Tensor", 6);
  bool has_cond = wk_op_arg_index(c->op, "condition") >= 0;
  bool has_str = wk_op_arg_index(c->op, "rounding_mode") >= 0 || wk_op_arg_index(c->op, "approximate") >= 0;
  bool has_min = wk_op_arg_index(c->op, "min") >= 0;
  int64_t s23[2] = {2, 3}, s13[2] = {1, 3}, s4[1] = {4}, s7[1] = {7};
  wk_dtype sdt = WK_F32, odt = WK_F32, outdt = WK_F32;
  const int64_t *ss = s23, *os = s23, *outsz = s23;
  int snd = 2, ond = 2, outnd = 2;
  const char *str = NULL;
  bool nobounds = false;
  switch (k) {
    case 0: /* [2, 3] with [4]; in place: [1, 3] with [2, 3] */
      if (!other_t && !has_cond) return false;
      if (mut == 0)
        ss = s13;
      else
        os = s4, ond = 1;
      break;
    case 1: /* an integer self receiving a floating result, in place */
      if (mut != 0) return false;
      c->maybe = true;
      sdt = WK_I64;
      break;
    case 2: /* out= of a dtype the result cannot be cast to */
      if (mut <= 0) return false;
      c->maybe = true;
      outdt = WK_BOOL;
      break;
    case 3: /* out= of another shape */
      if (mut <= 0) return false;
      c->maybe = true;
      outsz = s7, outnd = 1;
      break;
    case 4: /* bool inputs (neg, sub, floor, ... refuse them) */
      c->maybe = true;
      sdt = odt = outdt = WK_BOOL;
      break;
    case 5: /* a bad string option */
      if (!has_str) return false;
      str = "bad";
      break;
    case 6: /* clamp with neither bound */
      if (!has_min) return false;
      nobounds = true;
      break;
    default:
      return false;
  }
  wk_tensor *self = rt(c, sdt, ss, snd, 0.5, 2), *other = rt(c, odt, os, ond, 0.5, 2);
  for (int i = 0; i < nargs; i++) {
    const char *name = wk_op_arg_name(c->op, i), *type = wk_op_arg_type(c->op, i);
    if (!strcmp(name, "self"))
      at(c, self);
    else if (!strcmp(name, "other") && !strncmp(type, "Tensor", 6))
      at(c, has_cond ? rt(c, odt, ss, snd, 0.5, 2) : other);
    else if (!strcmp(name, "other"))
      af(c, 1.5);
    else if (!strcmp(name, "condition"))
      at(c, rt(c, WK_BOOL, os, ond, 0, 1));
    else if (!strcmp(name, "out"))
      at(c, zeros_t(c, outdt, outsz, outnd));
    else if (!strcmp(name, "rounding_mode") || !strcmp(name, "approximate"))
      astr(c, str ? str : !strcmp(name, "approximate") ? "none" : NULL); /* NULL: None */
    else if (!strcmp(name, "min") || !strcmp(name, "max"))
      c->a[c->n++] = nobounds ? WK_VNONE : WK_VF(!strcmp(name, "min") ? -0.5 : 0.5);
    else if (!strcmp(name, "alpha"))
      af(c, 1);
    else
      break;
  }
  return true;
}

/* masked_fill(self, mask, value): mask broadcast to self. */
static bool g_masked_fill(sw_case *c) {
  int64_t s[WK_MAX_DIMS], m[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3), mnd = c->mode == SW_BCAST ? bshape(c, s, nd, m) : nd;
  if (c->mode != SW_BCAST) memcpy(m, s, sizeof m);
  at(c, rself(c, s, nd));
  at_frozen(c, rt(c, WK_BOOL, m, mnd, 0, 1));
  ascalar(c, 0.75);
  return true;
}
static bool e_masked_fill(sw_case *c, int k) {
  int64_t s[2] = {2, 3}, s4[1] = {4};
  if (k > 1) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  at(c, k == 0 ? rt(c, WK_F32, s, 2, 0, 1) : rt(c, WK_BOOL, s4, 1, 0, 1)); /* a float mask; a mask of another shape */
  af(c, 1);
  return true;
}
static bool g_masked_select(sw_case *c) {
  int64_t s[WK_MAX_DIMS], m[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3), mnd = c->mode == SW_BCAST ? bshape(c, s, nd, m) : nd;
  if (c->mode != SW_BCAST) memcpy(m, s, sizeof m);
  at(c, rself(c, s, nd));
  at_frozen(c, rt(c, WK_BOOL, m, mnd, 0, 1));
  return true;
}
static bool e_masked_select(sw_case *c, int k) {
  int64_t s[2] = {2, 3}, s4[1] = {4};
  if (k > 1) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  at(c, k == 0 ? rt(c, WK_F32, s, 2, 0, 1) : rt(c, WK_BOOL, s4, 1, 0, 1));
  return true;
}

/* ==== generators: factories =============================================================== */

/* zeros/ones/full/rand/randn(size, [fill], dtype, device) and randint(low, high, size, ...). */
static bool g_factory(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  if (is_op(c, "randint")) {
    ai(c, -3);
    ai(c, 5);
  }
  aints(c, s, nd);
  if (is_op(c, "full")) ascalar(c, 1.5);
  adt(c, c->dt);
  adev(c);
  return true;
}
static bool e_factory(sw_case *c, int k) {
  if (k > 1) return false;
  if (is_op(c, "randint")) {
    ai(c, 5);
    ai(c, k == 0 ? 5 : 2); /* low >= high */
  }
  if (k == 1 && !is_op(c, "randint")) return false;
  AINTS(c, 2, -1); /* a negative size */
  if (is_op(c, "full")) af(c, 1);
  return true;
}
static bool g_arange(sw_case *c) {
  bool fl = wk_dtype_is_floating(c->dt);
  double start = (double)rpick(c, -3, 2), step = fl ? 0.5 : (double)rpick(c, 1, 2);
  double end = c->mode == SW_EMPTY ? start : start + (double)rpick(c, 1, 6);
  af(c, start);
  af(c, end);
  af(c, step);
  adt(c, c->dt);
  adev(c);
  return true;
}
static bool e_arange(sw_case *c, int k) {
  if (k > 1) return false;
  af(c, 0);
  af(c, k == 0 ? 5 : -5);
  af(c, k == 0 ? 0 : 1); /* step 0; bounds inconsistent with the step's sign */
  return true;
}
static bool g_linspace(sw_case *c) {
  af(c, -1.5);
  af(c, 2);
  ai(c, c->mode == SW_EMPTY ? 0 : rpick(c, 1, 6));
  adt(c, c->dt);
  adev(c);
  return true;
}
static bool e_linspace(sw_case *c, int k) {
  if (k > 0) return false;
  af(c, 0);
  af(c, 1);
  ai(c, -1);
  return true;
}
static bool g_eye(sw_case *c) {
  ai(c, c->mode == SW_EMPTY ? 0 : rpick(c, 1, 4));
  ai(c, runif(c) < 0.5 ? -1 : rpick(c, 1, 4));
  adt(c, c->dt);
  adev(c);
  return true;
}
static bool e_eye(sw_case *c, int k) {
  if (k > 0) return false;
  ai(c, -1);
  return true;
}
/* zeros_like/ones_like/full_like/rand_like/randn_like(self, [fill], dtype). */
static bool g_like(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  at(c, rt(c, WK_F64, s, nd, -1, 1));
  if (is_op(c, "full_like")) ascalar(c, 2.5);
  adt(c, c->dt);
  return true;
}
static bool g_randperm(sw_case *c) {
  ai(c, c->mode == SW_EMPTY ? 0 : rpick(c, 1, 7));
  adt(c, c->dt);
  adev(c);
  return true;
}
static bool e_randperm(sw_case *c, int k) {
  if (k > 0) return false;
  ai(c, -1);
  return true;
}
/* fill_/zero_/uniform_/normal_/bernoulli(self, ...). */
static bool g_fill(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  bool probs = is_op(c, "bernoulli");
  at(c, probs ? rt(c, c->dt, s, nd, 0, 1) : rself(c, s, nd));
  if (is_op(c, "fill")) ascalar(c, 1.25);
  if (is_op(c, "uniform")) af(c, -1), af(c, 2);
  if (is_op(c, "normal")) af(c, 0.5), af(c, 2);
  if (!strcmp(c->row->op, "bernoulli.p")) af(c, 0.3);
  return true;
}
static bool e_fill(sw_case *c, int k) {
  int64_t s[2] = {2, 3};
  if (k > 0 || is_op(c, "zero") || is_op(c, "fill") || !strcmp(c->row->op, "bernoulli")) return false;
  at(c, rt(c, WK_F32, s, 2, 0, 1));
  if (is_op(c, "uniform")) af(c, 2), af(c, 1);        /* from > to */
  if (is_op(c, "normal")) af(c, 0), af(c, -1);        /* std < 0 */
  if (!strcmp(c->row->op, "bernoulli.p")) af(c, 1.5); /* p outside [0, 1] */
  return true;
}

/* ==== generators: views and copies ========================================================= */

/* view/reshape(self, [s0*s1, -1]) (explicit sizes when there are no elements: -1 would be ambiguous). */
static bool g_view(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  at(c, rself(c, s, nd));
  if (nd >= 2 && numel_of(s, nd) > 0) {
    AINTS(c, s[0] * s[1], -1);
  } else if (nd >= 2) {
    int64_t t[2] = {s[0] * s[1], numel_of(s + 2, nd - 2)};
    aints(c, t, 2);
  } else {
    AINTS(c, -1);
  }
  return true;
}
static bool e_view(sw_case *c, int k) {
  int64_t s[2] = {2, 3};
  if (k > 0) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  AINTS(c, 7); /* the wrong numel */
  return true;
}
static bool g_permute(sw_case *c) {
  int64_t s[WK_MAX_DIMS], p[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  at(c, rself(c, s, nd));
  for (int d = 0; d < nd; d++) p[d] = nd - 1 - d;
  aints(c, p, nd);
  return true;
}
static bool e_permute(sw_case *c, int k) {
  int64_t s[2] = {2, 3};
  if (k > 1) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  if (k == 0)
    AINTS(c, 0); /* too few dims */
  else
    AINTS(c, 0, 0); /* a repeated dim */
  return true;
}
static bool g_transpose(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  at(c, rself(c, s, nd));
  ai(c, 0);
  ai(c, -1);
  return true;
}
static bool e_dim5(sw_case *c, int k) { /* a dim out of range, for ops (self, dim, ...) */
  int64_t s[2] = {2, 3};
  if (k > 0) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  ai(c, 5);
  if (is_op(c, "transpose")) ai(c, 0);
  if (is_op(c, "narrow")) ai(c, 0), ai(c, 1);
  if (is_op(c, "select")) ai(c, 0);
  return true;
}
static bool g_t(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 2);
  at(c, rself(c, s, nd));
  return true;
}
static bool e_t(sw_case *c, int k) {
  int64_t s[3] = {2, 3, 4};
  if (k > 0) return false;
  at(c, rt(c, WK_F32, s, 3, -1, 1));
  return true;
}
static bool g_slice(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 1, 3), d = (int)rpick(c, 0, nd - 1);
  at(c, rself(c, s, nd));
  ai(c, d);
  if (runif(c) < 0.3)
    anone(c);
  else
    ai(c, rpick(c, -1, 1));
  if (runif(c) < 0.3)
    anone(c);
  else
    ai(c, rpick(c, 1, 5));
  ai(c, rpick(c, 1, 2));
  return true;
}
static bool e_slice(sw_case *c, int k) {
  int64_t s[2] = {2, 3};
  if (k > 1) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  ai(c, k == 0 ? 0 : 3); /* step 0; dim out of range */
  anone(c);
  anone(c);
  ai(c, k == 0 ? 0 : 1);
  return true;
}
static bool g_narrow(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 1, 3), d = (int)rpick(c, 0, nd - 1);
  at(c, rself(c, s, nd));
  int64_t start = rpick(c, 0, s[d]);
  ai(c, d);
  ai(c, start);
  ai(c, rpick(c, 0, s[d] - start));
  return true;
}
static bool e_narrow(sw_case *c, int k) {
  int64_t s[2] = {2, 3};
  if (k > 0) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  ai(c, 1);
  ai(c, 1);
  ai(c, 5); /* start + length past the end */
  return true;
}
static bool g_select(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 1, 3), d = (int)rpick(c, 0, nd - 1);
  if (s[d] == 0) return false;
  at(c, rself(c, s, nd));
  ai(c, d);
  ai(c, rpick(c, -s[d], s[d] - 1));
  return true;
}
static bool e_select(sw_case *c, int k) {
  int64_t s[2] = {2, 3};
  if (k > 0) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  ai(c, 0);
  ai(c, 5); /* index out of range */
  return true;
}
static bool g_expand(sw_case *c) {
  int64_t s[WK_MAX_DIMS], e[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  for (int d = 0; d < nd; d++)
    if (runif(c) < 0.5) s[d] = 1;
  e[0] = rpick(c, 1, 3);
  for (int d = 0; d < nd; d++) e[d + 1] = s[d] == 1 ? rpick(c, 1, 3) : runif(c) < 0.3 ? -1 : s[d];
  at(c, rself(c, s, nd));
  aints(c, e, nd + 1);
  return true;
}
static bool e_expand(sw_case *c, int k) {
  int64_t s[2] = {2, 3};
  if (k > 1) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  if (k == 0)
    AINTS(c, 4, 3); /* a non-singleton dim changed */
  else
    AINTS(c, 3); /* fewer dims */
  return true;
}
static bool g_squeeze(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  for (int d = 0; d < nd; d++)
    if (runif(c) < 0.5) s[d] = 1;
  at(c, rself(c, s, nd));
  if (!strcmp(c->row->op, "squeeze.dim")) ai(c, nd ? rpick(c, -nd, nd - 1) : 0);
  if (is_op(c, "unsqueeze")) ai(c, rpick(c, -nd - 1, nd));
  return true;
}
static bool g_flatten(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  at(c, rself(c, s, nd));
  int a = nd ? (int)rpick(c, 0, nd - 1) : 0;
  ai(c, a);
  ai(c, nd ? rpick(c, a, nd - 1) : -1);
  return true;
}
static bool e_flatten(sw_case *c, int k) {
  int64_t s[3] = {2, 3, 4};
  if (k > 0) return false;
  at(c, rt(c, WK_F32, s, 3, -1, 1));
  ai(c, 2);
  ai(c, 1); /* start after end */
  return true;
}
static bool g_self(sw_case *c) { /* ops taking just self (contiguous, alias, clone, sum, ...) */
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  at(c, rself(c, s, nd));
  return true;
}
static bool g_as_strided(sw_case *c) {
  int64_t s[2] = {3, 4};
  at(c, rself(c, s, 2));
  AINTS(c, 2, 2);
  AINTS(c, 1, 3);
  if (runif(c) < 0.5)
    anone(c);
  else
    ai(c, 2);
  return true;
}
static bool e_as_strided(sw_case *c, int k) {
  int64_t s[2] = {2, 3};
  if (k > 0) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  AINTS(c, 10);
  AINTS(c, 1); /* past the storage */
  return true;
}
static bool g_copy_(sw_case *c) {
  int64_t s[WK_MAX_DIMS], o[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3), ond = c->mode == SW_BCAST ? bshape(c, s, nd, o) : nd;
  if (c->mode != SW_BCAST) memcpy(o, s, sizeof o);
  at(c, rself(c, s, nd));
  at(c, rt(c, c->mode == SW_BCAST ? WK_F64 : c->dt, o, ond, -3, 3));
  return true;
}
static bool e_copy_(sw_case *c, int k) {
  int64_t s[2] = {2, 3}, s4[1] = {4};
  if (k > 0) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  at(c, rt(c, WK_F32, s4, 1, -1, 1)); /* not broadcastable */
  return true;
}
static bool g_to_dtype(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  at(c, rt(c, WK_F64, s, nd, -3, 3));
  adt(c, c->dt);
  ab(c, runif(c) < 0.5);
  return true;
}
static bool g_to_device(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  at(c, rself(c, s, nd));
  adev(c);
  adt(c, runif(c) < 0.5 ? WK_DTYPE_DEFAULT : WK_F64);
  ab(c, runif(c) < 0.5);
  return true;
}

/* ==== generators: reductions (schema-driven: dim, keepdim, dtype, correction, p) ========== */

static bool wants_distinct(const sw_case *c) {
  return is_op(c, "max") || is_op(c, "min") || is_op(c, "argmax") || is_op(c, "argmin") || is_op(c, "topk") ||
         is_op(c, "sort");
}

static bool g_reduce(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3), nargs = wk_op_num_args(c->op);
  bool needs_elems = is_op(c, "max") || is_op(c, "min") || is_op(c, "argmax") || is_op(c, "argmin");
  int d0 = nd ? (int)rpick(c, 0, nd - 1) : 0;
  if (needs_elems && c->mode == SW_EMPTY) { /* reduce over a non-empty dim of an empty tensor */
    int nz = -1;
    for (int d = 0; d < nd; d++)
      if (s[d]) nz = d;
    if (nz < 0 || wk_op_arg_index(c->op, "dim") < 0) return false;
    d0 = nz;
  }
  at(c, wants_distinct(c) ? rt_distinct(c, c->dt, s, nd, lo_of(c), hi_of(c)) : rself(c, s, nd));
  for (int i = 1; i < nargs; i++) {
    const char *name = wk_op_arg_name(c->op, i), *type = wk_op_arg_type(c->op, i);
    if (!strcmp(name, "dim") && !strncmp(type, "int[]", 5)) {
      bool opt = strchr(type, '?') != NULL;
      if (opt && runif(c) < 0.3) {
        anone(c);
      } else if (nd >= 2 && runif(c) < 0.4) {
        int64_t two[2] = {d0, (d0 + 1) % nd - nd}; /* two dims, one negative */
        aints(c, two, 2);
      } else {
        int64_t one[1] = {nd ? d0 - (runif(c) < 0.5 ? nd : 0) : 0};
        aints(c, one, 1);
      }
    } else if (!strcmp(name, "dim")) {
      if (strchr(type, '?') && runif(c) < 0.3 && !(needs_elems && c->mode == SW_EMPTY))
        anone(c);
      else
        ai(c, nd ? d0 - (runif(c) < 0.5 ? nd : 0) : (runif(c) < 0.5 ? 0 : -1));
    } else if (!strcmp(name, "keepdim")) {
      ab(c, runif(c) < 0.5);
    } else if (!strcmp(name, "dtype")) {
      adt(c, runif(c) < 0.3 ? WK_F64 : WK_DTYPE_DEFAULT);
    } else if (!strcmp(name, "correction")) {
      ai(c, rpick(c, 0, 1));
    } else if (!strcmp(name, "p")) {
      af(c, runif(c) < 0.5 ? 2 : 1);
    } else {
      break;
    }
  }
  return true;
}

/* A dim out of range, a repeated dim, a reduction of no elements, mean of integers. */
static bool e_reduce(sw_case *c, int k) {
  int64_t s[2] = {2, 3}, e[2] = {0, 3};
  int di = wk_op_arg_index(c->op, "dim");
  bool list = di >= 0 && !strncmp(wk_op_arg_type(c->op, di), "int[]", 5);
  bool needs_elems = is_op(c, "max") || is_op(c, "min") || is_op(c, "argmax") || is_op(c, "argmin");
  switch (k) {
    case 0:
    case 1:
      if (di < 0 || (k == 1 && !list)) return false;
      at(c, rt(c, WK_F32, s, 2, -1, 1));
      for (int i = 1; i < di; i++) /* the arguments before dim (norm's p): their defaults */
        c->a[c->n++] = wk_op_arg_default(c->op, i) ? *wk_op_arg_default(c->op, i) : WK_VNONE;
      if (k == 0 && list) AINTS(c, 5);
      if (k == 0 && !list) ai(c, 5);
      if (k == 1) AINTS(c, 0, 0);
      return true;
    case 2: /* max() of an empty tensor; max(dim) over an empty dim */
      if (!needs_elems) return false;
      at(c, rt(c, WK_F32, e, 2, -1, 1));
      if (di >= 0) ai(c, 0);
      return true;
    case 3:
      if (!is_op(c, "mean")) return false;
      at(c, rt(c, WK_I64, s, 2, 0, 5)); /* integers have no mean */
      if (di >= 0) AINTS(c, 0);
      return true;
    default:
      return false;
  }
}

static bool g_cumsum(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  at(c, rself(c, s, nd));
  ai(c, nd ? rpick(c, -nd, nd - 1) : 0);
  adt(c, runif(c) < 0.3 ? WK_F64 : WK_DTYPE_DEFAULT);
  return true;
}

/* ==== generators: linear algebra ============================================================ */

static void mnk(sw_case *c, int64_t *n, int64_t *k, int64_t *m) {
  *n = rpick(c, 1, 4), *k = rpick(c, 1, 4), *m = rpick(c, 1, 4);
  if (c->mode == SW_EMPTY) *(rpick(c, 0, 2) == 0 ? n : runif(c) < 0.5 ? k : m) = 0;
}
static bool g_mm(sw_case *c) {
  int64_t n, k, m;
  mnk(c, &n, &k, &m);
  int64_t a[2] = {n, k}, b[2] = {k, m};
  at(c, rself(c, a, 2));
  at(c, rself(c, b, 2));
  return true;
}
static bool g_bmm(sw_case *c) {
  int64_t n, k, m, bt = rpick(c, 1, 3);
  mnk(c, &n, &k, &m);
  int64_t a[3] = {bt, n, k}, b[3] = {bt, k, m};
  at(c, rself(c, a, 3));
  at(c, rself(c, b, 3));
  return true;
}
static bool g_addmm(sw_case *c) {
  int64_t n, k, m;
  mnk(c, &n, &k, &m);
  int64_t a[2] = {n, k}, b[2] = {k, m}, o[2] = {n, m}, ob[1] = {m};
  at(c, c->mode == SW_BCAST ? rself(c, ob, 1) : rself(c, o, 2));
  at(c, rself(c, a, 2));
  at(c, rself(c, b, 2));
  ascalar(c, wk_dtype_is_floating(c->dt) ? 0.5 : 2);
  ascalar(c, 2);
  return true;
}
static bool g_dot(sw_case *c) {
  int64_t n[1] = {c->mode == SW_EMPTY ? 0 : rpick(c, 1, 6)};
  at(c, rself(c, n, 1));
  at(c, rself(c, n, 1));
  return true;
}
static bool g_outer(sw_case *c) {
  int64_t n[1] = {c->mode == SW_EMPTY ? 0 : rpick(c, 1, 4)}, m[1] = {rpick(c, 1, 4)};
  at(c, rself(c, n, 1));
  at(c, rself(c, m, 1));
  return true;
}
/* matmul over its rank combinations: 1x1, 2x2, 1x2, 2x1, 3x2, 2x3, 3x3 (batch broadcast in BCAST). */
static bool g_matmul(sw_case *c) {
  int64_t n, k, m, bt = rpick(c, 2, 3);
  mnk(c, &n, &k, &m);
  int combo = (int)rpick(c, 0, 6);
  if (c->mode == SW_BCAST) combo = 7;
  int64_t a[3], b[3];
  int an, bn;
  switch (combo) {
    case 0:
      a[0] = k, an = 1, b[0] = k, bn = 1;
      break;
    case 1:
      a[0] = n, a[1] = k, an = 2, b[0] = k, b[1] = m, bn = 2;
      break;
    case 2:
      a[0] = k, an = 1, b[0] = k, b[1] = m, bn = 2;
      break;
    case 3:
      a[0] = n, a[1] = k, an = 2, b[0] = k, bn = 1;
      break;
    case 4:
      a[0] = bt, a[1] = n, a[2] = k, an = 3, b[0] = k, b[1] = m, bn = 2;
      break;
    case 5:
      a[0] = n, a[1] = k, an = 2, b[0] = bt, b[1] = k, b[2] = m, bn = 3;
      break;
    case 6:
      a[0] = bt, a[1] = n, a[2] = k, an = 3, b[0] = bt, b[1] = k, b[2] = m, bn = 3;
      break;
    default:
      a[0] = bt, a[1] = n, a[2] = k, an = 3, b[0] = 1, b[1] = k, b[2] = m, bn = 3;
      break;
  }
  at(c, rself(c, a, an));
  at(c, rself(c, b, bn));
  return true;
}
static bool g_linear(sw_case *c) {
  int64_t s[WK_MAX_DIMS], w[2];
  int nd = rshape(c, s, 1, 3);
  if (s[nd - 1] == 0 && c->mode != SW_EMPTY) s[nd - 1] = 1;
  w[0] = rpick(c, 1, 4), w[1] = s[nd - 1];
  int64_t b[1] = {w[0]};
  at(c, rself(c, s, nd));
  at(c, rself(c, w, 2));
  if (runif(c) < 0.5)
    at(c, rself(c, b, 1));
  else
    anone(c);
  return true;
}
/* Inner sizes that do not agree; operands of the wrong rank. */
static bool e_linalg(sw_case *c, int k) {
  int64_t s23[2] = {2, 3}, s45[2] = {4, 5}, s3[1] = {3}, s4[1] = {4}, s234[3] = {2, 3, 4}, s345[3] = {3, 4, 5};
  int64_t s0[1] = {0};
  if (k > 1) return false;
  bool one = is_op(c, "dot") || is_op(c, "outer");
  if (is_op(c, "addmm")) at(c, rt(c, WK_F32, k == 0 ? s4 : s45, 1 + (k != 0), -1, 1));
  if (is_op(c, "bmm")) {
    at(c, rt(c, WK_F32, k == 0 ? s234 : s23, k == 0 ? 3 : 2, -1, 1));
    at(c, rt(c, WK_F32, s345, 3, -1, 1)); /* batch 2 vs 3; a matrix */
  } else if (one) {
    at(c, rt(c, WK_F32, k == 0 ? s3 : s23, k == 0 ? 1 : 2, -1, 1));
    at(c, rt(c, WK_F32, k == 0 ? s4 : s23, k == 0 ? 1 : 2, -1, 1)); /* lengths; 2-d operands */
    if (is_op(c, "outer") && k == 0) return false;                  /* outer takes any lengths */
  } else if (is_op(c, "matmul") && k == 1) {
    at(c, rt(c, WK_F32, s0, 0, -1, 1)); /* a 0-dim operand */
    at(c, rt(c, WK_F32, s23, 2, -1, 1));
  } else {
    at(c, rt(c, WK_F32, k == 0 ? s23 : s234, k == 0 ? 2 : 3, -1, 1));
    at(c, rt(c, WK_F32, s45, 2, -1, 1)); /* 3 vs 4; a 3-d operand */
  }
  return true;
}

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

#endif
