/* The op sweep's vocabulary (tests/check_op_sweep.c): its table's rows,
 * cases, shape modes, dtype sets and flags, random inputs, and the argument
 * builders the generators share. */
#ifndef WICK_TESTS_OP_SWEEP_UTIL_H
#define WICK_TESTS_OP_SWEEP_UTIL_H

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
#define D_INT (DT(WK_I64) | DT(WK_I32))
#define D_INPLACE (1u << 31) /* a family's in-place row: the name's trait says (default D_FB) */

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
  unsigned inplace; /* the in-place variants' dtypes (0: D_FB) */
} sw_trait;
static const sw_trait g_traits[] = {
    {"log", 0.1, 3, 0},   {"log1p", -0.5, 2, 0},        {"sqrt", 0.1, 3, 0},          {"rsqrt", 0.2, 3, 0},
    {"silu", 0, 0, D_FB}, {"logical_not", 0, 0, D_ALL}, {"logical_and", 0, 0, D_ALL}, {"logical_or", 0, 0, D_ALL},
    {"eq", 0, 0, D_ALL},  {"ne", 0, 0, D_ALL},
    /* issue 21's unary ops: their domains, and the dtypes their rule accepts */
    {"log2", 0.1, 3, 0}, {"log10", 0.1, 3, 0}, {"tan", -1.2, 1.2, 0}, {"asin", -0.9, 0.9, 0},
    {"acos", -0.9, 0.9, 0}, {"atanh", -0.9, 0.9, 0}, {"acosh", 1.1, 3, 0}, {"erfinv", -0.9, 0.9, 0},
    {"reciprocal", 0.25, 3, 0}, {"square", 0, 0, D_ALL}, {"frac", 0, 0, D_FB}, {"selu", 0, 0, D_FB},
    {"mish", 0, 0, D_FB}, {"hardswish", -4.5, 4.5, D_FB}, {"hardsigmoid", -4.5, 4.5, D_FB},
    {"relu6", -2, 8, 0}, {"hardtanh", 0, 0, 0}, {"log_sigmoid", 0, 0, D_FB}, {"softplus", 0, 0, D_FB},
    {"elu", 0, 0, D_FB}, {"celu", 0, 0, D_FB}, {"isfinite", 0, 0, D_ALL}, {"signbit", 0, 0, D_ALL},
    {"bitwise_not", 0, 0, D_INT | DT(WK_BOOL), DT(WK_I64)},
    /* issue 21's binary ops */
    {"hypot", 0, 0, D_FB}, {"logaddexp", 0, 0, D_FB}, {"bitwise_and", 0, 0, D_INT | DT(WK_BOOL), D_INT},
    {"bitwise_or", 0, 0, D_INT | DT(WK_BOOL), D_INT}, {"bitwise_xor", 0, 0, D_INT | DT(WK_BOOL), D_INT},
    {"bitwise_left_shift", 0, 0, D_INT, D_INT}, {"bitwise_right_shift", -40, 40, D_INT, D_INT},
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

static bool is_op_full(const sw_case *c, const char *name) { return !strcmp(c->row->op, name); }
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
                                      "le",    "gt",    "ge",         "sigmoid", "tanh",    "exp",
                                      "isfinite", "signbit", "trunc", "frac", "square", "reciprocal", "expm1",
                                      "exp2", "log_sigmoid", "softplus", "relu6", "hardtanh", "hardswish", "mish",
                                      "elu", "selu", "celu", "sinh", "cosh", "atan", "asinh", "nansum",
                                      "nanmean", "amax", "amin", "aminmax", "count_nonzero"};
  char b[64];
  base_name(c->row->op, b, sizeof b);
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (!strcmp(names[i], b)) return c->mode == SW_BASIC;
  return false;
}

#endif
