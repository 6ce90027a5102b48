/* Meta functions of issue 21's linalg, reduction and indexing ops added by
 * engineer A: mode, unique, unique_consecutive, scatter_reduce, index_put,
 * masked_scatter, einsum, baddbmm, addbmm, tensordot, kron, the vector and
 * matrix norms and the linalg_* decompositions and solvers. Each checks the
 * arguments once for every device, with PyTorch's messages, and sizes the
 * results; kernels: core/composite_linalg.c (composites), plugins/cpu/lapack.c
 * and plugins/cpu/index_reduce.c (cpu). */
#include <math.h>
#include <stdio.h>

#include <wick/sdk/check.h>

#include "linalg_internal.h"
#include "meta.h"

static const char *shp(const wk_tensor *t, char *b, size_t n) { return wk_sizes_str(t->sizes, t->ndim, b, n); }

/* x with dim d removed (keep: set to 1) into o. */
static void reduced_one(const wk_tensor *x, int d, bool keep, wk_meta_out *o, wk_dtype dt) {
  wk__meta_like(o, x, dt);
  if (x->ndim == 0) return;
  if (keep) {
    o->sizes[d] = 1;
    return;
  }
  for (int i = d; i + 1 < x->ndim; i++) o->sizes[i] = o->sizes[i + 1];
  o->ndim--;
}

/* ---- mode ---------------------------------------------------------------------------------------- */
static wk_status meta_mode(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  const wk_tensor *x = MT(0);
  int d;
  wk_status s = wk_check_dim("mode", args[1].u.i, x->ndim, &d);
  if (s) return s;
  if (x->ndim > 0 && x->sizes[d] == 0)
    return wk_error(WK_ERR_SHAPE, "mode(): Expected reduction dim %d to have non-zero size.", d);
  reduced_one(x, d, args[2].u.b, &o[0], x->dtype);
  reduced_one(x, d, args[2].u.b, &o[1], WK_I64);
  return WK_OK;
}

/* ---- unique, unique_consecutive: the number of groups is data ---------------------------------------- */
static wk_status meta_unique(wk_op *op, const wk_value *args, wk_meta_out *o) {
  const wk_tensor *x = MT(0);
  bool consec = strcmp(MNAME, "unique_consecutive") == 0;
  const wk_value *dim = &args[consec ? 3 : 4];
  if (x->ndim >= WK_MAX_DIMS)
    return wk_error(WK_ERR_SHAPE, "%s(): at most %d dims", MNAME, WK_MAX_DIMS - 1);
  if (dim->tag == WK_V_INT) {
    int d;
    wk_status s = wk_check_dim(MNAME, dim->u.i, x->ndim, &d);
    if (s) return s;
    if (x->ndim == 0)
      return wk_error(WK_ERR_INDEX, "%s(): a 0-d tensor has no dim to take unique slices along", MNAME);
    int64_t n = 1;
    for (int i = 0; i < x->ndim; i++) n *= x->sizes[i];
    if (n == 0 && x->sizes[d] != 0)
      return wk_error(WK_ERR_SHAPE, "Number of zero sized dimensions is more than one, so unique cannot be applied ");
  }
  (void)op;
  for (int i = 0; i < 3; i++) {
    o[i].dtype = i == 0 ? x->dtype : WK_I64;
    o[i].ndim = WK_META_DYNAMIC;
  }
  return WK_OK;
}

/* ---- scatter_reduce.two(self, dim, index, src, reduce, include_self) ----------------------------------- */
static wk_status meta_scatter_reduce(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  const wk_tensor *self = MT(0), *idx = MT(2), *src = MT(3);
  static const char *const kinds[] = {"sum", "prod", "mean", "amax", "amin", NULL};
  if (wk_option_index(args[4].u.s, kinds) < 0)
    return wk_error(WK_ERR_INVALID_ARG, "scatter_reduce(): reduce argument must be either sum, prod, mean, amax or amin, got %s",
                    args[4].u.s);
  int d;
  wk_status s = wk_check_dim("scatter_reduce", args[1].u.i, self->ndim, &d);
  if (s) return s;
  if (idx->dtype != WK_I64)
    return wk_error(WK_ERR_DTYPE, "scatter_reduce(): Expected dtype int64 for index");
  if (self->dtype != src->dtype)
    return wk_error(WK_ERR_DTYPE, "scatter_reduce(): Expected self.dtype to be equal to src.dtype");
  if (self->dtype == WK_BOOL)
    return wk_error(WK_ERR_DTYPE, "scatter_reduce(): \"scatter_reduce\" not implemented for 'Bool'");
  int64_t ni = 1;
  for (int i = 0; i < idx->ndim; i++) ni *= idx->sizes[i];
  if (ni > 0) {
    int nd = self->ndim ? self->ndim : 1;
    if ((idx->ndim ? idx->ndim : 1) != nd || (src->ndim ? src->ndim : 1) != nd)
      return wk_error(WK_ERR_SHAPE, "scatter_reduce(): Index tensor must have the same number of dimensions as self tensor");
    for (int i = 0; i < idx->ndim; i++) {
      char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX], c[WK_SHAPE_STR_MAX];
      if (idx->sizes[i] > (src->ndim ? src->sizes[i] : 1) || (i != d && idx->sizes[i] > (self->ndim ? self->sizes[i] : 1)))
        return wk_error(WK_ERR_SHAPE,
                        "scatter_reduce(): Expected index %s to be smaller than self %s apart from dimension %d and to be smaller size "
                        "than src %s",
                        shp(idx, a, sizeof a), shp(self, b, sizeof b), d, shp(src, c, sizeof c));
    }
  }
  wk__meta_like(o, self, self->dtype);
  return WK_OK;
}

/* ---- index_put(self, indices, values, accumulate) ---------------------------------------------------- */
static wk_status meta_index_put(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  const wk_tensor *self = MT(0), *v = MT(2);
  int n = args[1].len, used = 0;
  if (v->dtype != self->dtype)
    return wk_error(WK_ERR_DTYPE,
                    "index_put(): Index put requires the source and destination dtypes match, got %s for the destination and %s "
                    "for the source.",
                    wk__dtype_word(self->dtype), wk__dtype_word(v->dtype));
  for (int i = 0; i < n; i++) {
    const wk_tensor *t = args[1].u.tensors[i];
    if (!t) {
      used++;
      continue;
    }
    if (t->dtype == WK_BOOL || t->dtype == WK_U8) {
      used += t->ndim ? t->ndim : 1;
      for (int k = 0; k < t->ndim; k++) {
        int sd = used - t->ndim + k;
        if (sd < self->ndim && t->sizes[k] != self->sizes[sd])
          return wk_error(WK_ERR_INDEX,
                          "index_put(): The shape of the mask [%lld] at index %d does not match the shape of the indexed tensor "
                          "[%lld] at index %d",
                          (long long)t->sizes[k], k, (long long)self->sizes[sd], sd);
      }
    } else if (t->dtype == WK_I64 || t->dtype == WK_I32) {
      used++;
    } else {
      return wk_error(WK_ERR_INDEX, "index_put(): tensors used as indices must be long, int, byte or bool tensors");
    }
  }
  if (used > self->ndim)
    return wk_error(WK_ERR_INDEX, "index_put(): too many indices for tensor of dimension %d (got %d)", self->ndim, used);
  wk__meta_like(o, self, self->dtype);
  return WK_OK;
}

/* ---- masked_scatter(self, mask, source): self and mask broadcast --------------------------------------- */
static wk_status meta_masked_scatter(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *self = MT(0), *mask = MT(1), *src = MT(2);
  if (mask->dtype != WK_BOOL)
    return wk_error(WK_ERR_DTYPE, "masked_scatter_ only supports boolean masks, but got mask with dtype %s",
                    wk__dtype_word(mask->dtype));
  if (self->dtype != src->dtype)
    return wk_error(WK_ERR_DTYPE, "masked_scatter(): expected self and source to have same dtypes but got%s and %s",
                    wk__dtype_word(self->dtype), wk__dtype_word(src->dtype));
  wk_tensor *ts[2] = {self, mask};
  wk_status s = wk__meta_broadcast_op(op, ts, 2, o);
  if (s) return s;
  o->dtype = self->dtype;
  return WK_OK;
}

/* ---- einsum ---------------------------------------------------------------------------------------------- */
static int label_of(char ch) {
  if (ch >= 'a' && ch <= 'z') return ch - 'a';
  if (ch >= 'A' && ch <= 'Z') return 26 + ch - 'A';
  return -1;
}
/* ASCII order of a label (A-Z before a-z) for the implicit output. */
static int label_rank(int l) { return l < 26 ? 26 + l : l - 26; }

wk_status wk__einsum_parse(const char *eq, wk_tensor *const *ts, int n, wk__einsum_eq *e) {
  memset(e, 0, sizeof *e);
  for (int l = 0; l < WK__EIN_LABELS; l++) e->size[l] = -1;
  if (n < 1) return wk_error(WK_ERR_INVALID_ARG, "einsum(): must provide at least one operand");
  if (n > WK__EIN_MAX_OPS)
    return wk_error(WK_ERR_INVALID_ARG, "einsum(): at most %d operands (got %d)", WK__EIN_MAX_OPS, n);
  e->nops = n;
  const char *arrow = strstr(eq, "->");
  int op = 0, k = 0;
  bool ell[WK__EIN_MAX_OPS] = {false};
  int ell_at[WK__EIN_MAX_OPS] = {0};
  int8_t raw[WK__EIN_MAX_OPS][WK_MAX_DIMS + 1];
  int nraw[WK__EIN_MAX_OPS] = {0};
  int count[WK__EIN_LABELS] = {0};
  const char *p = eq;
  for (; *p && p != arrow; p++) {
    char ch = *p;
    if (ch == ' ') continue;
    if (ch == ',') {
      if (++op >= n)
        return wk_error(WK_ERR_INVALID_ARG, "einsum(): more operands were provided than specified in the equation");
      k = 0;
      continue;
    }
    if (ch == '.') {
      if (ell[op] || strncmp(p, "...", 3) != 0)
        return wk_error(WK_ERR_INVALID_ARG,
                        "einsum(): found '.' for operand %d that is not part of any ellipsis", op);
      ell[op] = true, ell_at[op] = k, p += 2;
      continue;
    }
    int l = label_of(ch);
    if (l < 0)
      return wk_error(WK_ERR_INVALID_ARG,
                      "einsum(): invalid subscript given at index %d in the equation string, subscripts must be in "
                      "[a-zA-Z]",
                      (int)(p - eq));
    if (nraw[op] >= WK_MAX_DIMS)
      return wk_error(WK_ERR_SHAPE, "einsum(): too many subscripts for operand %d", op);
    raw[op][nraw[op]++] = (int8_t)l;
    count[l]++;
    k++;
  }
  if (op + 1 < n)
    return wk_error(WK_ERR_INVALID_ARG, "einsum(): more operands were provided than specified in the equation");
  /* each operand's dims, the ellipsis' width */
  for (int i = 0; i < n; i++) {
    int nd = ts[i]->ndim;
    if (ell[i] ? nd < nraw[i] : nd != nraw[i])
      return wk_error(WK_ERR_SHAPE, "einsum(): the number of subscripts in the equation (%d) %s the number of "
                      "dimensions (%d) for operand %d%s",
                      nraw[i], ell[i] ? "is more than" : "does not match", nd, i,
                      ell[i] ? "" : " and no ellipsis was given");
    int w = ell[i] ? nd - nraw[i] : 0;
    if (w > e->nell) e->nell = w;
  }
  for (int i = 0; i < n; i++) {
    int nd = ts[i]->ndim, w = ell[i] ? nd - nraw[i] : 0, j = 0;
    e->ndim[i] = nd;
    for (int r = 0; r <= nraw[i]; r++) {
      if (ell[i] && r == ell_at[i])
        for (int q = 0; q < w; q++) e->lab[i][j++] = (int8_t)(WK__EIN_ELL + e->nell - w + q);
      if (r < nraw[i]) e->lab[i][j++] = raw[i][r];
    }
    for (int d = 0; d < nd; d++) {
      int l = e->lab[i][d];
      int64_t sz = ts[i]->sizes[d];
      if (e->size[l] < 0 || e->size[l] == 1)
        e->size[l] = sz;
      else if (sz != 1 && sz != e->size[l])
        return wk_error(WK_ERR_SHAPE,
                        "einsum(): operands do not broadcast with remapped shapes (original->remapped): subscript "
                        "'%c' has size %lld for operand %d which does not broadcast with previously seen size %lld",
                        l < WK__EIN_ELL ? (l < 26 ? 'a' + l : 'A' + l - 26) : '.', (long long)sz, i,
                        (long long)e->size[l]);
    }
  }
  for (int i = 1; i < n; i++)
    if (ts[i]->dtype != ts[0]->dtype)
      return wk_error(WK_ERR_DTYPE, "einsum(): expected scalar type %s but found %s", wk__dtype_word(ts[0]->dtype),
                      wk__dtype_word(ts[i]->dtype));
  /* the result's labels */
  if (arrow) {
    bool seen[WK__EIN_LABELS] = {false}, oell = false;
    for (p = arrow + 2; *p; p++) {
      if (*p == ' ') continue;
      if (*p == '.') {
        if (oell || strncmp(p, "...", 3) != 0)
          return wk_error(WK_ERR_INVALID_ARG, "einsum(): found '.' for output that is not part of any ellipsis");
        oell = true, p += 2;
        for (int q = 0; q < e->nell; q++) e->out[e->nout++] = (int8_t)(WK__EIN_ELL + q);
        continue;
      }
      int l = label_of(*p);
      if (l < 0)
        return wk_error(WK_ERR_INVALID_ARG,
                        "einsum(): invalid subscript given at index %d in the equation string, subscripts must be "
                        "in [a-zA-Z]",
                        (int)(p - eq));
      if (seen[l])
        return wk_error(WK_ERR_INVALID_ARG, "einsum(): output subscript %c appears more than once in the output", *p);
      if (!count[l])
        return wk_error(WK_ERR_INVALID_ARG,
                        "einsum(): output subscript %c does not appear in the equation for any input operand", *p);
      seen[l] = true;
      e->out[e->nout++] = (int8_t)l;
    }
    (void)oell; /* an output without "...": the ellipsis' dims are summed (PyTorch) */
  } else {
    for (int q = 0; q < e->nell; q++) e->out[e->nout++] = (int8_t)(WK__EIN_ELL + q);
    for (int r = 0; r < 52; r++)
      for (int l = 0; l < 52; l++)
        if (label_rank(l) == r && count[l] == 1) e->out[e->nout++] = (int8_t)l;
  }
  return WK_OK;
}

static wk_status meta_einsum(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  wk__einsum_eq e;
  wk_status s = wk__einsum_parse(args[0].u.s, args[1].u.tensors, args[1].len, &e);
  if (s) return s;
  o->dtype = args[1].u.tensors[0]->dtype;
  o->ndim = e.nout;
  for (int i = 0; i < e.nout; i++) o->sizes[i] = e.size[e.out[i]];
  return WK_OK;
}

/* ---- baddbmm / addbmm ------------------------------------------------------------------------------------- */
static wk_status meta_baddbmm(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *self = MT(0), *b1 = MT(1), *b2 = MT(2);
  bool batched = MNAME[0] == 'b';
  if (b1->ndim != 3) return wk_error(WK_ERR_SHAPE, "%s(): batch1 must be a 3D tensor", MNAME);
  if (b2->ndim != 3) return wk_error(WK_ERR_SHAPE, "%s(): batch2 must be a 3D tensor", MNAME);
  if (b1->sizes[0] != b2->sizes[0] || b1->sizes[2] != b2->sizes[1]) {
    char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX];
    return wk_error(WK_ERR_SHAPE, "%s(): Expected size for first two dimensions of batch2 tensor to be: [%lld, %lld] "
                    "but got: %s (batch1: %s).",
                    MNAME, (long long)b1->sizes[0], (long long)b1->sizes[2], shp(b2, a, sizeof a), shp(b1, b, sizeof b));
  }
  if (b1->dtype != b2->dtype || self->dtype != b1->dtype)
    return wk_error(WK_ERR_DTYPE, "%s(): expected scalar type %s but found %s", MNAME, wk__dtype_word(b1->dtype),
                    wk__dtype_word(b2->dtype != b1->dtype ? b2->dtype : self->dtype));
  if (b1->dtype == WK_BOOL) return wk_error(WK_ERR_DTYPE, "\"%s\" not implemented for 'Bool'", MNAME);
  int64_t full[3] = {b1->sizes[0], b1->sizes[1], b2->sizes[2]};
  const int64_t *want = batched ? full : full + 1;
  int nd = batched ? 3 : 2;
  /* self must broadcast to the product's shape */
  if (self->ndim > nd) goto bad;
  for (int i = 0; i < self->ndim; i++) {
    int64_t sz = self->sizes[self->ndim - 1 - i];
    if (sz != 1 && sz != want[nd - 1 - i]) goto bad;
  }
  wk__meta_shape(o, want, nd, b1->dtype);
  return WK_OK;
bad : {
  char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX];
  return wk_error(WK_ERR_SHAPE, "%s(): the size of self %s does not broadcast to the product's %s", MNAME,
                  shp(self, a, sizeof a), wk_sizes_str(want, nd, b, sizeof b));
}
}

/* ---- tensordot / kron ----------------------------------------------------------------------------------- */
static wk_status meta_tensordot(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  wk_tensor *a = MT(0), *b = MT(1);
  int n = args[2].len;
  if (n != args[3].len)
    return wk_error(WK_ERR_INVALID_ARG, "tensordot(): both dimension lists should have same length");
  if (a->dtype != b->dtype)
    return wk_error(WK_ERR_DTYPE, "tensordot(): expected scalar type %s but found %s", wk__dtype_word(a->dtype),
                    wk__dtype_word(b->dtype));
  bool ua[WK_MAX_DIMS] = {false}, ub[WK_MAX_DIMS] = {false};
  for (int i = 0; i < n; i++) {
    int da, db;
    wk_status s = wk_check_dim("tensordot", args[2].u.ints[i], a->ndim, &da);
    if (!s) s = wk_check_dim("tensordot", args[3].u.ints[i], b->ndim, &db);
    if (s) return s;
    if (a->ndim == 0 || b->ndim == 0)
      return wk_error(WK_ERR_INDEX, "tensordot(): cannot contract a dim of a 0-d tensor");
    if (ua[da] || ub[db])
      return wk_error(WK_ERR_INVALID_ARG, "tensordot(): dim %d appears multiple times in the list of dims",
                      ua[da] ? da : db);
    ua[da] = ub[db] = true;
    if (a->sizes[da] != b->sizes[db])
      return wk_error(WK_ERR_SHAPE,
                      "tensordot(): contracted dimensions need to match, but first has size %lld in dim %d and second has size "
                      "%lld in dim %d",
                      (long long)a->sizes[da], da, (long long)b->sizes[db], db);
  }
  o->dtype = a->dtype;
  o->ndim = 0;
  for (int d = 0; d < a->ndim; d++)
    if (!ua[d]) o->sizes[o->ndim++] = a->sizes[d];
  for (int d = 0; d < b->ndim; d++)
    if (!ub[d]) {
      if (o->ndim >= WK_MAX_DIMS) return wk_error(WK_ERR_SHAPE, "tensordot(): the result has too many dims");
      o->sizes[o->ndim++] = b->sizes[d];
    }
  return WK_OK;
}

static wk_status meta_kron(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  wk_tensor *a = MT(0), *b = MT(1);
  if (a->dtype != b->dtype)
    return wk_error(WK_ERR_DTYPE, "kron(): expected both operands to have the same dtype, got %s and %s",
                    wk__dtype_word(a->dtype), wk__dtype_word(b->dtype));
  int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
  o->dtype = a->dtype;
  o->ndim = nd;
  for (int i = 0; i < nd; i++) {
    int ia = i - (nd - a->ndim), ib = i - (nd - b->ndim);
    o->sizes[i] = (ia >= 0 ? a->sizes[ia] : 1) * (ib >= 0 ? b->sizes[ib] : 1);
  }
  return WK_OK;
}

/* ---- norms ---------------------------------------------------------------------------------------------- */
static double scalar_of(const wk_value *v) {
  return v->tag == WK_V_INT ? (double)v->u.i : v->tag == WK_V_BOOL ? v->u.b : v->u.f;
}
/* The reduced shape of x over dims (NULL or n == 0: all); duplicates refused. */
static wk_status reduce_dims(const char *nm, const wk_tensor *x, const int64_t *dims, int n, bool keep, wk_meta_out *o,
                             bool *red) {
  int nd = x->ndim;
  memset(red, 0, sizeof(bool) * WK_MAX_DIMS);
  for (int i = 0; i < n; i++) {
    int d;
    wk_status s = wk_check_dim(nm, dims[i], nd, &d);
    if (s) return s;
    if (red[d]) return wk_error(WK_ERR_INVALID_ARG, "%s: dim %d appears multiple times in the list of dims", nm, d);
    red[d] = true;
  }
  if (n == 0)
    for (int d = 0; d < nd; d++) red[d] = true;
  o->ndim = 0;
  for (int d = 0; d < nd; d++) {
    if (!red[d])
      o->sizes[o->ndim++] = x->sizes[d];
    else if (keep)
      o->sizes[o->ndim++] = 1;
  }
  return WK_OK;
}
static wk_status float_input(const char *nm, wk_dtype dt) {
  if (wk_dtype_is_floating(dt)) return WK_OK;
  return wk_error(WK_ERR_DTYPE, "%s: Expected a floating point or complex tensor as input. Got %s", nm,
                  wk__dtype_word(dt));
}

static wk_status meta_vector_norm(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  const wk_tensor *x = MT(0);
  const char *nm = "linalg_vector_norm()";
  wk_status s = float_input(nm, x->dtype);
  if (s) return s;
  double ord = scalar_of(&args[1]);
  bool red[WK_MAX_DIMS];
  int n = MNONE(2) ? 0 : args[2].len;
  s = reduce_dims(nm, x, MNONE(2) ? NULL : args[2].u.ints, n, args[3].u.b, o, red);
  if (s) return s;
  if (ord < 0 || isinf(ord)) { /* needs every reduced dim non-empty */
    for (int d = 0; d < x->ndim; d++)
      if (red[d] && x->sizes[d] == 0)
        return wk_error(WK_ERR_SHAPE,
                        "linalg_vector_norm(): cannot compute the %g norm on an empty tensor because the operation does "
                        "not have an identity",
                        ord);
  }
  wk_dtype dt = MNONE(4) ? x->dtype : args[4].u.dtype;
  if (!MNONE(4) && !wk_dtype_is_floating(dt))
    return wk_error(WK_ERR_DTYPE, "%s: dtype should be floating point or complex, but got %s", nm, wk__dtype_word(dt));
  o->dtype = dt;
  return WK_OK;
}

/* A square-or-not matrix check: ndim >= 2 ("A must have at least 2 dimensions"). */
static wk_status matrix_input(const char *nm, const wk_tensor *a, bool square) {
  wk_status s = float_input(nm, a->dtype);
  if (s) return s;
  if (a->dtype != WK_F32 && a->dtype != WK_F64)
    return wk_error(WK_ERR_DTYPE, "%s: Low precision dtypes not supported. Got %s", nm, wk__dtype_word(a->dtype));
  if (a->ndim < 2) return wk_error(WK_ERR_SHAPE, "%s: The input tensor A must have at least 2 dimensions.", nm);
  if (square && a->sizes[a->ndim - 1] != a->sizes[a->ndim - 2])
    return wk_error(WK_ERR_SHAPE, "%s: A must be batches of square matrices, but they are %lld by %lld matrices", nm,
                    (long long)a->sizes[a->ndim - 2], (long long)a->sizes[a->ndim - 1]);
  return WK_OK;
}

static wk_status meta_matrix_norm(wk_op *op, const wk_value *args, wk_meta_out *o) {
  const wk_tensor *x = MT(0);
  const char *nm = "linalg_matrix_norm()";
  bool str = strcmp(MNAME, "linalg_matrix_norm.str_ord") == 0;
  (void)op;
  wk_status s = float_input(nm, x->dtype);
  if (s) return s;
  if (x->ndim < 2) return wk_error(WK_ERR_SHAPE, "%s: The input tensor A must have at least 2 dimensions.", nm);
  if (str) {
    if (strcmp(args[1].u.s, "fro") && strcmp(args[1].u.s, "nuc"))
      return wk_error(WK_ERR_INVALID_ARG, "%s: Order %s not supported.", nm, args[1].u.s);
  } else {
    double ord = scalar_of(&args[1]);
    if (!(fabs(ord) == 2 || fabs(ord) == 1 || isinf(ord)))
      return wk_error(WK_ERR_INVALID_ARG, "%s: Order %g not supported.", nm, ord);
  }
  if (args[2].len != 2) return wk_error(WK_ERR_INVALID_ARG, "%s: dim must be a 2-tuple. Got %d dims", nm, args[2].len);
  bool red[WK_MAX_DIMS];
  s = reduce_dims(nm, x, args[2].u.ints, 2, args[3].u.b, o, red);
  if (s) return s;
  bool needs_svd = str ? args[1].u.s[0] == 'n' : fabs(scalar_of(&args[1])) == 2;
  if (needs_svd && (x->dtype != WK_F32 && x->dtype != WK_F64))
    return wk_error(WK_ERR_DTYPE, "%s: Low precision dtypes not supported. Got %s", nm, wk__dtype_word(x->dtype));
  if (!(str && args[1].u.s[0] == 'f')) /* max/min- and svd-based orders need non-empty matrices */
    for (int d = 0; d < x->ndim; d++)
      if (red[d] && x->sizes[d] == 0)
        return wk_error(WK_ERR_SHAPE, "%s: an empty matrix has no order-%s norm (only 'fro' is defined)", nm,
                        str ? args[1].u.s : (isinf(scalar_of(&args[1])) ? "inf" : scalar_of(&args[1]) < 0 ? "negative" : "1/2"));
  wk_dtype dt = MNONE(4) ? x->dtype : args[4].u.dtype;
  o->dtype = dt;
  return WK_OK;
}

/* ---- decompositions and solvers -------------------------------------------------------------------------- */
static void batch_shape(const wk_tensor *a, int keep, wk_meta_out *o, wk_dtype dt) {
  o->dtype = dt;
  o->ndim = a->ndim - keep;
  memcpy(o->sizes, a->sizes, sizeof(int64_t) * (size_t)o->ndim);
}
static void add_dim(wk_meta_out *o, int64_t n) { o->sizes[o->ndim++] = n; }

static wk_status meta_cholesky(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  wk_status s = matrix_input("linalg_cholesky()", MT(0), true);
  if (s) return s;
  wk__meta_like(o, MT(0), MT(0)->dtype);
  return WK_OK;
}
static wk_status meta_inv(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  wk_status s = matrix_input("linalg_inv()", MT(0), true);
  if (s) return s;
  wk__meta_like(o, MT(0), MT(0)->dtype);
  return WK_OK;
}
static wk_status meta_det(wk_op *op, const wk_value *args, wk_meta_out *o) {
  bool slog = strcmp(MNAME, "linalg_slogdet") == 0;
  wk_status s = matrix_input(slog ? "linalg_slogdet()" : "linalg_det()", MT(0), true);
  if (s) return s;
  (void)op;
  batch_shape(MT(0), 2, &o[0], MT(0)->dtype);
  if (slog) o[1] = o[0];
  return WK_OK;
}
static wk_status meta_eigh(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  wk_status s = matrix_input("linalg_eigh()", MT(0), true);
  if (s) return s;
  if (strcmp(args[1].u.s, "L") && strcmp(args[1].u.s, "U") && strcmp(args[1].u.s, "l") && strcmp(args[1].u.s, "u"))
    return wk_error(WK_ERR_INVALID_ARG, "linalg_eigh(): Expected UPLO argument to be 'L' or 'U', but got %s", args[1].u.s);
  const wk_tensor *a = MT(0);
  batch_shape(a, 1, &o[0], a->dtype);
  wk__meta_like(&o[1], a, a->dtype);
  return WK_OK;
}
static wk_status meta_qr(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  const wk_tensor *a = MT(0);
  wk_status s = matrix_input("linalg_qr()", a, false);
  if (s) return s;
  static const char *const modes[] = {"reduced", "complete", "r", NULL};
  int mode = wk_option_index(args[1].u.s, modes);
  if (mode < 0)
    return wk_error(WK_ERR_INVALID_ARG,
                    "linalg_qr(): qr received unrecognized mode '%s' but expected one of 'reduced' (default), 'r', or 'complete'",
                    args[1].u.s);
  int64_t m = a->sizes[a->ndim - 2], n = a->sizes[a->ndim - 1], k = m < n ? m : n;
  if (mode == 2) {
    o[0].dtype = a->dtype, o[0].ndim = 1, o[0].sizes[0] = 0;
  } else {
    batch_shape(a, 2, &o[0], a->dtype);
    add_dim(&o[0], m);
    add_dim(&o[0], mode == 1 ? m : k);
  }
  batch_shape(a, 2, &o[1], a->dtype);
  add_dim(&o[1], mode == 1 ? m : k);
  add_dim(&o[1], n);
  return WK_OK;
}
static wk_status meta_svd(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  const wk_tensor *a = MT(0);
  wk_status s = matrix_input("linalg_svd()", a, false);
  if (s) return s;
  if (!MNONE(2))
    return wk_error(WK_ERR_INVALID_ARG, "linalg_svd(): keyword argument `driver=` is only supported on CUDA inputs "
                    "with cuSOLVER backend.");
  bool full = args[1].u.b;
  int64_t m = a->sizes[a->ndim - 2], n = a->sizes[a->ndim - 1], k = m < n ? m : n;
  batch_shape(a, 2, &o[0], a->dtype);
  add_dim(&o[0], m);
  add_dim(&o[0], full ? m : k);
  batch_shape(a, 2, &o[1], a->dtype);
  add_dim(&o[1], k);
  batch_shape(a, 2, &o[2], a->dtype);
  add_dim(&o[2], full ? n : k);
  add_dim(&o[2], n);
  return WK_OK;
}
/* Batch dims of a [..., r, c] and b's broadcast into o (then the matrix dims appended by the caller). */
static wk_status batch_broadcast(const char *nm, const wk_tensor *a, int ka, const wk_tensor *b, int kb,
                                 wk_meta_out *o) {
  int na = a->ndim - ka, nb = b->ndim - kb, nd = na > nb ? na : nb;
  o->ndim = nd;
  for (int i = 0; i < nd; i++) {
    int ia = i - (nd - na), ib = i - (nd - nb);
    int64_t x = ia >= 0 ? a->sizes[ia] : 1, y = ib >= 0 ? b->sizes[ib] : 1;
    if (x != y && x != 1 && y != 1) {
      char p[WK_SHAPE_STR_MAX], q[WK_SHAPE_STR_MAX];
      return wk_error(WK_ERR_SHAPE, "%s: the batch dimensions of A %s and B %s do not broadcast", nm,
                      wk_sizes_str(a->sizes, na, p, sizeof p), wk_sizes_str(b->sizes, nb, q, sizeof q));
    }
    o->sizes[i] = x == 1 ? y : x;
  }
  return WK_OK;
}
/* PyTorch's linalg_solve_is_vector_rhs: B is a vector (or a batch of them). */
WK__HIDDEN bool wk__solve_vector_rhs(const wk_tensor *a, const wk_tensor *b);
bool wk__solve_vector_rhs(const wk_tensor *a, const wk_tensor *b) {
  if (b->ndim == 1) return true;
  if (b->ndim != a->ndim - 1) return false;
  for (int i = 0; i < b->ndim; i++)
    if (b->sizes[i] != a->sizes[i]) return false;
  return true;
}
static wk_status meta_solve(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  const wk_tensor *a = MT(0), *b = MT(1);
  const char *nm = "linalg_solve()";
  wk_status s = matrix_input(nm, a, true);
  if (s) return s;
  if (b->dtype != a->dtype)
    return wk_error(WK_ERR_DTYPE, "%s: Expected A and B to have the same dtype, but found A of type %s and B of type "
                    "%s instead",
                    nm, wk__dtype_word(a->dtype), wk__dtype_word(b->dtype));
  bool left = args[2].u.b, vec = wk__solve_vector_rhs(a, b);
  int64_t n = a->sizes[a->ndim - 1];
  if (!vec && b->ndim < 2) return wk_error(WK_ERR_SHAPE, "%s: The input tensor B must have at least 2 dimensions.", nm);
  if (vec) {
    if (b->sizes[b->ndim - 1] != n)
      return wk_error(WK_ERR_SHAPE, "%s: Incompatible shapes of A and B for the equation %s (%lldx%lld and %lld)", nm,
                      left ? "AX = B" : "XA = B", (long long)n, (long long)n, (long long)b->sizes[b->ndim - 1]);
    s = batch_broadcast(nm, a, 2, b, 1, o);
    if (s) return s;
    add_dim(o, n);
  } else {
    int64_t br = b->sizes[b->ndim - 2], bc = b->sizes[b->ndim - 1];
    if ((left ? br : bc) != n)
      return wk_error(WK_ERR_SHAPE, "%s: Incompatible shapes of A and B for the equation %s (%lldx%lld and %lldx%lld)",
                      nm, left ? "AX = B" : "XA = B", (long long)n, (long long)n, (long long)br, (long long)bc);
    s = batch_broadcast(nm, a, 2, b, 2, o);
    if (s) return s;
    add_dim(o, br);
    add_dim(o, bc);
  }
  o->dtype = a->dtype;
  return WK_OK;
}
static wk_status meta_pinv(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  const wk_tensor *a = MT(0);
  wk_status s = matrix_input("linalg_pinv()", a, false);
  if (s) return s;
  batch_shape(a, 2, o, a->dtype);
  add_dim(o, a->sizes[a->ndim - 1]);
  add_dim(o, a->sizes[a->ndim - 2]);
  return WK_OK;
}
static wk_status meta_lstsq(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  const wk_tensor *a = MT(0), *b = MT(1);
  const char *nm = "linalg_lstsq()";
  wk_status s = matrix_input(nm, a, false);
  if (s) return s;
  if (b->dtype != a->dtype)
    return wk_error(WK_ERR_DTYPE, "%s: Expected input and other to have the same dtype, but got input's dtype %s and "
                    "other's dtype %s",
                    nm, wk__dtype_word(a->dtype), wk__dtype_word(b->dtype));
  if (!MNONE(3)) {
    static const char *const drivers[] = {"gels", "gelsy", "gelsd", "gelss", NULL};
    if (wk_option_index(args[3].u.s, drivers) < 0)
      return wk_error(WK_ERR_INVALID_ARG, "%s: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)", nm);
  }
  int64_t m = a->sizes[a->ndim - 2], n = a->sizes[a->ndim - 1];
  bool vec = b->ndim == a->ndim - 1;
  if (b->ndim < 1 || (!vec && b->ndim != a->ndim))
    return wk_error(WK_ERR_SHAPE, "%s: input.dim() must be greater or equal to other.dim() and (input.dim() - "
                    "other.dim()) <= 1", nm);
  int64_t bm = b->sizes[b->ndim - (vec ? 1 : 2)];
  if (bm != m)
    return wk_error(WK_ERR_SHAPE, "%s: input.size(-2) should match other.size(-%d)", nm, vec ? 1 : 2);
  s = batch_broadcast(nm, a, 2, b, vec ? 1 : 2, &o[0]);
  if (s) return s;
  int nb = o[0].ndim;
  add_dim(&o[0], n);
  if (!vec) add_dim(&o[0], b->sizes[b->ndim - 1]);
  o[0].dtype = a->dtype;
  o[1].dtype = a->dtype, o[1].ndim = 1, o[1].sizes[0] = 0;
  o[2].dtype = WK_I64, o[2].ndim = nb;
  memcpy(o[2].sizes, o[0].sizes, sizeof(int64_t) * (size_t)nb);
  o[3].dtype = a->dtype, o[3].ndim = 1, o[3].sizes[0] = 0;
  return WK_OK;
}

static const wk__meta_row g_rows[] = {
    {"mode", meta_mode},
    {"unique", meta_unique},
    {"unique_consecutive", meta_unique},
    {"scatter_reduce.two", meta_scatter_reduce},
    {"index_put", meta_index_put},
    {"masked_scatter", meta_masked_scatter},
    {"einsum", meta_einsum},
    {"baddbmm", meta_baddbmm},
    {"addbmm", meta_baddbmm},
    {"tensordot", meta_tensordot},
    {"kron", meta_kron},
    {"linalg_vector_norm", meta_vector_norm},
    {"linalg_matrix_norm", meta_matrix_norm},
    {"linalg_matrix_norm.str_ord", meta_matrix_norm},
    {"linalg_cholesky", meta_cholesky},
    {"linalg_qr", meta_qr},
    {"linalg_eigh", meta_eigh},
    {"linalg_svd", meta_svd},
    {"linalg_solve", meta_solve},
    {"linalg_slogdet", meta_det},
    {"linalg_inv", meta_inv},
    {"linalg_det", meta_det},
    {"linalg_pinv", meta_pinv},
    {"linalg_lstsq", meta_lstsq},
};

const wk__meta_family wk__metas_linalg = {g_rows, sizeof g_rows / sizeof g_rows[0]};
