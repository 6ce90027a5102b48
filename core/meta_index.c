/* Meta functions of the indexing and shape ops: cat, index_select, gather,
 * scatter/scatter_add (all forms), masked_fill, masked_select, repeat, flip,
 * roll, one_hot, clone and to.dtype. Index dtypes, ranks and shapes are
 * checked here; index values are data, so their ranges stay in the kernels. */
#include <math.h>
#include <stdio.h>

#include <wick/sdk/check.h>

#include "meta.h"

static int64_t nsize(const wk_tensor *t, int d) { return t->ndim == 0 ? 1 : t->sizes[d]; }
static int64_t numel(const wk_tensor *t) {
  int64_t n = 1;
  for (int d = 0; d < t->ndim; d++) n *= t->sizes[d];
  return n;
}
static const char *shape_of(const wk_tensor *t, char *b, size_t n) { return wk_sizes_str(t->sizes, t->ndim, b, n); }


/* ---- cat --------------------------------------------------------------------------- */
/* PyTorch skips legacy empty tensors of shape [0] when checking shapes. */
static bool cat_skip(const wk_tensor *t) { return t->ndim == 1 && t->sizes[0] == 0; }

static wk_status meta_cat(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  int n = args[0].len;
  wk_tensor *const *ts = args[0].u.tensors;
  if (n == 0) return wk_error(WK_ERR_INVALID_ARG, "cat(): expected a non-empty list of Tensors");
  for (int i = 0; i < n; i++)
    if (ts[i]->ndim == 0)
      return wk_error(WK_ERR_SHAPE, "cat(): zero-dimensional tensor (at position %d) cannot be concatenated", i);
  wk_dtype rt = wk_result_type(&args[0], 1);
  int valid = n;
  for (int i = 0; i < n && valid == n; i++)
    if (!cat_skip(ts[i])) valid = i;
  if (valid == n) { /* only legacy empties: the result is one too */
    int64_t z = 0;
    wk__meta_shape(o, &z, 1, rt);
    return WK_OK;
  }
  const wk_tensor *ref = ts[valid];
  int nd = ref->ndim, d;
  wk_status s = wk_check_dim("cat", args[1].u.i, nd, &d);
  if (s) return s;
  wk__meta_shape(o, ref->sizes, nd, rt);
  o->sizes[d] = 0;
  for (int i = 0; i < n; i++) {
    if (cat_skip(ts[i])) continue;
    if (ts[i]->ndim != nd)
      return wk_error(WK_ERR_SHAPE, "cat(): Tensors must have same number of dimensions: got %d and %d", nd,
                      ts[i]->ndim);
    for (int k = 0; k < nd; k++)
      if (k != d && ts[i]->sizes[k] != ref->sizes[k])
        return wk_error(WK_ERR_SHAPE,
                        "cat(): Sizes of tensors must match except in dimension %d. Expected size %lld but got size "
                        "%lld for tensor number %d in the list.",
                        d, (long long)ref->sizes[k], (long long)ts[i]->sizes[k], i);
    o->sizes[d] += ts[i]->sizes[d];
  }
  return WK_OK;
}

/* ---- index_select ---------------------------------------------------------------------- */
static wk_status meta_index_select(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  wk_tensor *self = MT(0), *index = MT(2);
  int nd = self->ndim, d = 0;
  wk_status s = wk_check_dim("index_select", args[1].u.i, nd, &d);
  if (s) return s;
  int64_t n = numel(index);
  if (index->ndim > 1)
    return wk_error(WK_ERR_INDEX, "index_select(): Index is supposed to be a vector, got a %dD index", index->ndim);
  if (nd == 0 && n != 1)
    return wk_error(WK_ERR_INDEX, "index_select(): Index to scalar can have only 1 value, got %lld value(s)",
                    (long long)n);
  if (index->dtype != WK_I64 && index->dtype != WK_I32)
    return wk_error(WK_ERR_DTYPE, "index_select(): Expected dtype int32 or int64 for index, got %s",
                    wk_dtype_name(index->dtype));
  wk__meta_like(o, self, self->dtype);
  if (nd > 0) o->sizes[d] = n;
  return WK_OK;
}

/* ---- gather / scatter / scatter_add ------------------------------------------------------ */
/* PyTorch's gather/scatter shape rules (index.size(d) <= self.size(d) for d != dim,
 * index.size(d) <= src.size(d) for every d), with its messages. */
static wk_status sg_shape_check(const char *op, wk_tensor *self, int dim, wk_tensor *index, wk_tensor *src) {
  int nd = self->ndim > 0 ? self->ndim : 1;
  int ni = index->ndim > 0 ? index->ndim : 1;
  char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX], c[WK_SHAPE_STR_MAX];
  if (nd != ni)
    return wk_error(WK_ERR_SHAPE, "%s(): Index tensor must have the same number of dimensions as %s tensor (%d vs %d)",
                    op, src ? "self" : "input", ni, nd);
  if (src) {
    int ns = src->ndim > 0 ? src->ndim : 1;
    if (ns != ni)
      return wk_error(WK_ERR_SHAPE, "%s(): Index tensor must have the same number of dimensions as src tensor (%d vs %d)",
                      op, ni, ns);
  }
  int bad = -1;
  for (int d = 0; d < nd && bad < 0; d++)
    if (d != dim && nsize(index, d) > nsize(self, d)) bad = d;
  for (int d = 0; src && d < nd && bad < 0; d++)
    if (nsize(index, d) > nsize(src, d)) bad = d;
  if (bad < 0) return WK_OK;
  if (!src)
    return wk_error(WK_ERR_SHAPE,
                    "%s(): Size does not match at dimension %d expected index %s to be smaller than self %s apart "
                    "for dimension %d",
                    op, bad, shape_of(index, a, sizeof a), shape_of(self, b, sizeof b), dim);
  return wk_error(WK_ERR_SHAPE,
                  "%s(): Expected index %s to be smaller than self %s apart from dimension %d and to be smaller "
                  "size than src %s",
                  op, shape_of(index, a, sizeof a), shape_of(self, b, sizeof b), dim, shape_of(src, c, sizeof c));
}

static wk_status meta_gather(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  wk_tensor *self = MT(0), *index = MT(2);
  int d = 0;
  wk_status s = wk_check_dim("gather", args[1].u.i, self->ndim, &d);
  if (s) return s;
  if (numel(index) != 0) {
    if (index->dtype != WK_I64)
      return wk_error(WK_ERR_DTYPE, "gather(): Expected dtype int64 for index, got %s", wk_dtype_name(index->dtype));
    if ((s = sg_shape_check("gather", self, d, index, NULL))) return s;
  }
  wk__meta_like(o, index, self->dtype);
  return WK_OK;
}

/* scatter.src, scatter_.src, scatter_add, scatter_add_: the result is self's shape. */
static wk_status meta_scatter(wk_op *op, const wk_value *args, wk_meta_out *o) {
  char op_name[32];
  const char *name = wk_op_name(op);
  size_t len = strcspn(name, ".");
  if (len >= sizeof op_name) len = sizeof op_name - 1;
  memcpy(op_name, name, len);
  op_name[len] = 0; /* "scatter_.src" -> "scatter_" */
  wk_tensor *self = MT(0), *index = MT(2), *src = MT(3);
  int d = 0;
  wk_status s = wk_check_dim(op_name, args[1].u.i, self->ndim, &d);
  if (s) return s;
  int64_t n = numel(index);
  if (n != 0 && index->dtype != WK_I64)
    return wk_error(WK_ERR_DTYPE, "%s(): Expected dtype int64 for index, got %s", op_name,
                    wk_dtype_name(index->dtype));
  if (src->dtype != self->dtype)
    return wk_error(WK_ERR_DTYPE, "%s(): Expected self.dtype to be equal to src.dtype (got %s and %s)", op_name,
                    wk_dtype_name(self->dtype), wk_dtype_name(src->dtype));
  if (n != 0 && (s = sg_shape_check(op_name, self, d, index, src))) return s;
  if ((wk_op_tags(op) & WK_TAG_INPLACE) && (s = wk__meta_no_overlap(op_name, self))) return s;
  wk__meta_like(o, self, self->dtype);
  return WK_OK;
}

/* ---- masked_fill / masked_select ---------------------------------------------------------- */
static wk_status meta_masked_fill(wk_op *op, const wk_value *args, wk_meta_out *o) {
  bool inplace = (wk_op_tags(op) & WK_TAG_INPLACE) != 0;
  const char *name = inplace ? "masked_fill_" : "masked_fill";
  wk_tensor *self = MT(0), *mask = MT(1);
  char tn[16];
  if (mask->dtype != WK_BOOL)
    return wk_error(WK_ERR_DTYPE, "%s(): masked_fill_ only supports boolean masks, but got mask with dtype %s", name,
                    wk_dtype_torch_lower(mask->dtype, tn, sizeof tn));
  wk_tensor *pair[2] = {self, mask};
  wk_status s = wk__meta_broadcast(name, pair, 2, o);
  if (s) return s;
  o->dtype = self->dtype;
  if (!inplace) return WK_OK;
  if (o->ndim != self->ndim || memcmp(o->sizes, self->sizes, sizeof(int64_t) * (size_t)self->ndim)) {
    char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX];
    return wk_error(WK_ERR_SHAPE, "%s(): mask of shape %s cannot be broadcast to self of shape %s", name,
                    shape_of(mask, a, sizeof a), shape_of(self, b, sizeof b));
  }
  return wk__meta_no_overlap(name, self);
}

static wk_status meta_masked_select(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  wk_tensor *self = MT(0), *mask = MT(1);
  char tn[16];
  if (mask->dtype != WK_BOOL)
    return wk_error(WK_ERR_DTYPE, "masked_select(): expected BoolTensor for mask, got mask with dtype %s",
                    wk_dtype_torch_lower(mask->dtype, tn, sizeof tn));
  wk_tensor *pair[2] = {self, mask};
  wk_status s = wk__meta_broadcast("masked_select", pair, 2, o);
  if (s) return s;
  o->dtype = self->dtype;
  o->ndim = WK_META_DYNAMIC; /* as many elements as the mask has true values */
  return WK_OK;
}

/* ---- repeat / flip / roll ------------------------------------------------------------------ */
static wk_status meta_repeat(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  wk_tensor *self = MT(0);
  const int64_t *rep = args[1].u.ints;
  int nr = args[1].len, nd = self->ndim;
  if (nr < nd)
    return wk_error(WK_ERR_SHAPE,
                    "repeat(): Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                    "tensor (got %d repeat dims for a %d-dim tensor)",
                    nr, nd);
  if (nr > WK_MAX_DIMS)
    return wk_error(WK_ERR_SHAPE, "repeat(): %d repeat dims requested, at most %d supported", nr, WK_MAX_DIMS);
  int lead = nr - nd;
  for (int k = 0; k < nr; k++) {
    if (rep[k] < 0) {
      char b[WK_SHAPE_STR_MAX];
      return wk_error(WK_ERR_INVALID_ARG, "repeat(): Trying to create tensor with negative dimension %lld: repeats %s",
                      (long long)rep[k], wk_sizes_str(rep, nr, b, sizeof b));
    }
    o->sizes[k] = (k < lead ? 1 : self->sizes[k - lead]) * rep[k];
  }
  o->ndim = nr;
  o->dtype = self->dtype;
  return WK_OK;
}

static wk_status meta_flip(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  wk_tensor *self = MT(0);
  bool seen[WK_MAX_DIMS + 1] = {false};
  for (int i = 0; i < args[1].len; i++) {
    int d = 0;
    wk_status s = wk_check_dim("flip", args[1].u.ints[i], self->ndim, &d);
    if (s) return s;
    if (seen[d]) return wk_error(WK_ERR_INVALID_ARG, "flip(): dim %d appears multiple times in the list of dims", d);
    seen[d] = true;
  }
  wk__meta_like(o, self, self->dtype);
  return WK_OK;
}

static wk_status meta_roll(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  wk_tensor *self = MT(0);
  int ns = args[1].len, ndims = args[2].len;
  if (ns == 0) return wk_error(WK_ERR_INVALID_ARG, "roll(): `shifts` required");
  if (!(ndims == 0 && ns == 1)) { /* otherwise: roll the flattened tensor */
    if (ns != ndims)
      return wk_error(WK_ERR_INVALID_ARG, "roll(): shifts and dimensions must align. shifts: %d, dims:%d", ns, ndims);
    for (int i = 0; i < ndims; i++) {
      int d = 0;
      wk_status s = wk_check_dim("roll", args[2].u.ints[i], self->ndim, &d);
      if (s) return s;
    }
  }
  wk__meta_like(o, self, self->dtype);
  return WK_OK;
}

/* ---- one_hot ------------------------------------------------------------------------------ */
/* The class values' range is data (the kernels check it); without num_classes
 * the size of the last dimension is data too. */
static wk_status meta_one_hot(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  wk_tensor *self = MT(0);
  int64_t nc = args[1].u.i;
  int nd = self->ndim;
  if (self->dtype != WK_I64)
    return wk_error(WK_ERR_DTYPE, "one_hot(): one_hot is only applicable to index tensor (int64), got %s",
                    wk_dtype_name(self->dtype));
  if (nd == WK_MAX_DIMS) return wk_error(WK_ERR_SHAPE, "one_hot(): input already has %d dimensions", WK_MAX_DIMS);
  int64_t n = numel(self);
  if (n == 0 && nc <= 0)
    return wk_error(WK_ERR_INVALID_ARG, "one_hot(): Can not infer total number of classes from empty tensor.");
  o->dtype = WK_I64;
  if (nc < 0) { /* -1: as many classes as the largest value; other negatives fail on the data */
    o->ndim = WK_META_DYNAMIC;
    return WK_OK;
  }
  wk__meta_like(o, self, WK_I64);
  o->sizes[nd] = nc;
  o->ndim = nd + 1;
  return WK_OK;
}

/* ---- clone, to.dtype ------------------------------------------------------------------------ */
static wk_status meta_clone(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  wk__meta_like(o, MT(0), MT(0)->dtype);
  return WK_OK;
}

static wk_status meta_to_dtype(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  wk__meta_like(o, MT(0), args[1].u.dtype);
  return WK_OK;
}

/* copy_(self, src): src broadcasts to self, which must not write one memory
 * location twice (the same check on every device, and on meta). */
static wk_status meta_copy_(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  wk_tensor *self = MT(0), *src = MT(1);
  for (int d = 0; d < self->ndim; d++)
    if (self->strides[d] == 0 && self->sizes[d] > 1)
      return wk_error(WK_ERR_INVALID_ARG, "copy_: unsupported operation: more than one element of the written-to "
                      "tensor refers to a single memory location. Please clone() the tensor before performing the "
                      "operation.");
  wk_tensor *pair[2] = {self, src};
  wk_status s = wk__meta_broadcast("copy_", pair, 2, o);
  if (s) return s;
  if (o->ndim != self->ndim || memcmp(o->sizes, self->sizes, sizeof(int64_t) * (size_t)self->ndim) != 0) {
    char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX];
    return wk_error(WK_ERR_SHAPE, "copy_: source of shape %s cannot be broadcast to destination of shape %s",
                    wk__shape_str(src->sizes, src->ndim, a, sizeof a), wk__shape_str(self->sizes, self->ndim, b, sizeof b));
  }
  o->dtype = self->dtype; /* the result is self */
  return WK_OK;
}

/* ---- issue 21's shape ops (kernels: core/composite_surface.c) -------------------------- */
/* tril/triu(self, diagonal): a matrix or a batch of them, same shape and dtype. */
static wk_status meta_tril_triu(wk_op *op, const wk_value *args, wk_meta_out *o) {
  const wk_tensor *x = MT(0);
  if (x->ndim < 2)
    return wk_error(WK_ERR_SHAPE, "%s: input tensor must have at least 2 dimensions, got %d", MNAME, x->ndim);
  wk__meta_like(o, x, x->dtype);
  return WK_OK;
}
/* Length of the diagonal at offset off of a rows x cols matrix. */
static int64_t diag_len(int64_t rows, int64_t cols, int64_t off) {
  int64_t n = off >= 0 ? (rows < cols - off ? rows : cols - off) : (rows + off < cols ? rows + off : cols);
  return n > 0 ? n : 0;
}
/* diag(self, diagonal): a vector gives the square matrix with it on that diagonal, a matrix its diagonal. */
static wk_status meta_diag(wk_op *op, const wk_value *args, wk_meta_out *o) {
  const wk_tensor *x = MT(0);
  int64_t k = args[1].u.i;
  o->dtype = x->dtype;
  if (x->ndim == 1) {
    int64_t n = x->sizes[0] + (k < 0 ? -k : k);
    o->ndim = 2, o->sizes[0] = n, o->sizes[1] = n;
  } else if (x->ndim == 2) {
    o->ndim = 1, o->sizes[0] = diag_len(x->sizes[0], x->sizes[1], k);
  } else {
    return wk_error(WK_ERR_SHAPE, "diag(): matrix or a vector expected, got a %dD tensor", x->ndim);
  }
  return WK_OK;
}
/* diagonal(self, offset, dim1, dim2): the two dims dropped, the diagonal's length appended. */
static wk_status meta_diagonal(wk_op *op, const wk_value *args, wk_meta_out *o) {
  const wk_tensor *x = MT(0);
  int d1, d2;
  wk_status s;
  if ((s = wk_check_dim("diagonal", args[2].u.i, x->ndim, &d1)) || (s = wk_check_dim("diagonal", args[3].u.i, x->ndim, &d2)))
    return s;
  if (x->ndim < 2) return wk_error(WK_ERR_SHAPE, "diagonal(): input tensor must have at least 2 dimensions, got %d", x->ndim);
  if (d1 == d2) return wk_error(WK_ERR_INVALID_ARG, "diagonal(): diagonal dimensions cannot be identical %d, %d",
                                (int)args[2].u.i, (int)args[3].u.i);
  o->dtype = x->dtype;
  o->ndim = 0;
  for (int d = 0; d < x->ndim; d++)
    if (d != d1 && d != d2) o->sizes[o->ndim++] = x->sizes[d];
  o->sizes[o->ndim++] = diag_len(x->sizes[d1], x->sizes[d2], args[1].u.i);
  return WK_OK;
}
/* movedim(self, source, destination): the permutation that moves each source dim to its destination. */
WK__HIDDEN wk_status wk__movedim_perm(const wk_tensor *x, const wk_value *src, const wk_value *dst, int64_t *perm);
wk_status wk__movedim_perm(const wk_tensor *x, const wk_value *src, const wk_value *dst, int64_t *perm) {
  int nd = x->ndim, n = src->len;
  if (src->len != dst->len)
    return wk_error(WK_ERR_INVALID_ARG, "movedim: Invalid source or destination dims: source (%d dims) should "
                    "contain the same number of dims as destination (%d dims)", src->len, dst->len);
  bool used_s[WK_MAX_DIMS] = {false}, used_d[WK_MAX_DIMS] = {false};
  int s_[WK_MAX_DIMS], d_[WK_MAX_DIMS];
  for (int i = 0; i < n; i++) {
    wk_status s;
    if ((s = wk_check_dim("movedim", src->u.ints[i], nd, &s_[i])) || (s = wk_check_dim("movedim", dst->u.ints[i], nd, &d_[i])))
      return s;
    if (used_s[s_[i]]) return wk_error(WK_ERR_INVALID_ARG, "movedim: repeated dim in `source` (dim %d)", s_[i]);
    if (used_d[d_[i]]) return wk_error(WK_ERR_INVALID_ARG, "movedim: repeated dim in `destination` (dim %d)", d_[i]);
    used_s[s_[i]] = used_d[d_[i]] = true;
  }
  for (int d = 0; d < nd; d++) perm[d] = -1;
  for (int i = 0; i < n; i++) perm[d_[i]] = s_[i];
  int next = 0; /* the other dims keep their order in the free slots */
  for (int d = 0; d < nd; d++) {
    if (perm[d] >= 0) continue;
    while (used_s[next]) next++;
    perm[d] = next++;
  }
  return WK_OK;
}
static wk_status meta_movedim(wk_op *op, const wk_value *args, wk_meta_out *o) {
  const wk_tensor *x = MT(0);
  int64_t perm[WK_MAX_DIMS];
  wk_status s = wk__movedim_perm(x, &args[1], &args[2], perm);
  if (s) return s;
  o->dtype = x->dtype;
  o->ndim = x->ndim;
  for (int d = 0; d < x->ndim; d++) o->sizes[d] = x->sizes[perm[d]];
  return WK_OK;
}
/* tile(self, dims): repeat with dims padded by leading 1s to self's rank. */
static wk_status meta_tile(wk_op *op, const wk_value *args, wk_meta_out *o) {
  const wk_tensor *x = MT(0);
  int n = args[1].len, nd = n > x->ndim ? n : x->ndim;
  if (nd > WK_MAX_DIMS) return wk_error(WK_ERR_SHAPE, "tile: at most %d dims, got %d", WK_MAX_DIMS, nd);
  o->dtype = x->dtype;
  o->ndim = nd;
  for (int d = 0; d < nd; d++) {
    int64_t r = d - (nd - n) >= 0 ? args[1].u.ints[d - (nd - n)] : 1;
    int64_t s = d - (nd - x->ndim) >= 0 ? x->sizes[d - (nd - x->ndim)] : 1;
    if (r < 0) return wk_error(WK_ERR_INVALID_ARG, "tile: Trying to create tensor with negative dimension %lld", (long long)r);
    o->sizes[d] = r * s;
  }
  return WK_OK;
}
/* unflatten(self, dim, sizes): dim split into sizes (one may be -1). */
static wk_status meta_unflatten(wk_op *op, const wk_value *args, wk_meta_out *o) {
  const wk_tensor *x = MT(0);
  int d, n = args[2].len, infer = -1;
  wk_status s = wk_check_dim("unflatten", args[1].u.i, x->ndim, &d);
  if (s) return s;
  if (n == 0) return wk_error(WK_ERR_INVALID_ARG, "unflatten: sizes must be non-empty");
  if (x->ndim == 0) return wk_error(WK_ERR_SHAPE, "unflatten: cannot unflatten a 0-dim tensor");
  if (x->ndim - 1 + n > WK_MAX_DIMS) return wk_error(WK_ERR_SHAPE, "unflatten: at most %d dims", WK_MAX_DIMS);
  int64_t prod = 1, dimsz = x->sizes[d];
  for (int i = 0; i < n; i++) {
    int64_t v = args[2].u.ints[i];
    if (v == -1) {
      if (infer >= 0) return wk_error(WK_ERR_INVALID_ARG, "unflatten: only one dimension can be inferred");
      infer = i;
    } else if (v < 0) {
      return wk_error(WK_ERR_INVALID_ARG, "unflatten: invalid size %lld", (long long)v);
    } else {
      prod *= v;
    }
  }
  bool ok = infer >= 0 ? (prod != 0 && dimsz % prod == 0) : prod == dimsz;
  if (!ok) {
    char b[WK_SHAPE_STR_MAX];
    return wk_error(WK_ERR_SHAPE, "unflatten: Provided sizes %s don't multiply up to the size of dim %d (%lld) in the "
                    "input tensor", wk__shape_str(args[2].u.ints, n, b, sizeof b), d, (long long)dimsz);
  }
  o->dtype = x->dtype;
  o->ndim = 0;
  for (int k = 0; k < x->ndim; k++) {
    if (k != d) {
      o->sizes[o->ndim++] = x->sizes[k];
      continue;
    }
    for (int i = 0; i < n; i++) o->sizes[o->ndim++] = i == infer ? dimsz / prod : args[2].u.ints[i];
  }
  return WK_OK;
}
/* repeat_interleave.self_int(self, repeats, dim=None): each element repeated (None: of the flattened input). */
static wk_status meta_repeat_interleave(wk_op *op, const wk_value *args, wk_meta_out *o) {
  const wk_tensor *x = MT(0);
  int64_t r = args[1].u.i;
  if (r < 0) return wk_error(WK_ERR_INVALID_ARG, "repeat_interleave: repeats can not be negative, got %lld", (long long)r);
  o->dtype = x->dtype;
  if (MNONE(2)) {
    o->ndim = 1;
    o->sizes[0] = wk_tensor_numel(x) * r;
    return WK_OK;
  }
  int d;
  wk_status s = wk_check_dim("repeat_interleave", args[2].u.i, x->ndim, &d);
  if (s) return s;
  wk__meta_like(o, x, x->dtype);
  if (x->ndim == 0) {
    o->ndim = 1, o->sizes[0] = r;
  } else {
    o->sizes[d] *= r;
  }
  return WK_OK;
}

/* ---- issue 21's indexing ops (kernels: core/composite_surface.c) ------------------------- */
/* index_add/index_copy(self, dim, index, source) and index_fill.int_Scalar(self, dim, index, value):
 * PyTorch's checks (a vector index of int32/int64, source's slices shaped like self's, one index per
 * source slice), self's shape. Index values are checked by the scatter kernels they run. */
static wk_status meta_index_acf(wk_op *op, const wk_value *args, wk_meta_out *o) {
  char nm[24];
  const char *name = wk_op_name(op);
  size_t len = strcspn(name, ".");
  if (len >= sizeof nm) len = sizeof nm - 1;
  memcpy(nm, name, len);
  nm[len] = 0; /* "index_fill.int_Scalar" -> "index_fill" */
  wk_tensor *self = MT(0), *index = MT(2);
  int d = 0;
  wk_status s = wk_check_dim(nm, args[1].u.i, self->ndim, &d);
  if (s) return s;
  if (index->ndim > 1)
    return wk_error(WK_ERR_INDEX, "%s_(): Index is supposed to be a vector, got a %dD index", nm, index->ndim);
  if (index->dtype != WK_I64 && index->dtype != WK_I32)
    return wk_error(WK_ERR_DTYPE, "%s_(): Expected dtype int32/int64 for index, got %s", nm,
                    wk_dtype_name(index->dtype));
  if (args[3].tag == WK_V_TENSOR) { /* index_add / index_copy: source */
    wk_tensor *src = MT(3);
    char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX];
    if (src->dtype != self->dtype)
      return wk_error(WK_ERR_DTYPE, "%s_(): self (%s) and source (%s) must have the same scalar type", nm,
                      wk_dtype_name(self->dtype), wk_dtype_name(src->dtype));
    bool same = (src->ndim > 0 ? src->ndim : 1) == (self->ndim > 0 ? self->ndim : 1);
    for (int k = 0; same && k < self->ndim && src->ndim > 0; k++)
      if (k != d && src->sizes[k] != self->sizes[k]) same = false;
    if (!same)
      return wk_error(WK_ERR_SHAPE, "%s_(): Source/destination tensor must have same slice shapes. Destination "
                      "slice shape: %s at dimension %d and source slice shape: %s at dimension %d.", nm,
                      shape_of(self, a, sizeof a), d, shape_of(src, b, sizeof b), d);
    if (numel(index) != nsize(src, d))
      return wk_error(WK_ERR_INDEX, "%s_(): Number of indices (%lld) should be equal to source.size(dim) (%lld)",
                      nm, (long long)numel(index), (long long)nsize(src, d));
  }
  wk__meta_like(o, self, self->dtype);
  return WK_OK;
}
/* take(self, index): index's shape; a long index. */
static wk_status meta_take(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  wk_tensor *self = MT(0), *index = MT(1);
  if (index->dtype != WK_I64)
    return wk_error(WK_ERR_DTYPE, "take(): Expected a long tensor for index, but got %s", wk_dtype_name(index->dtype));
  if (numel(self) == 0 && numel(index) != 0)
    return wk_error(WK_ERR_INDEX, "take(): tried to take from an empty tensor");
  wk__meta_like(o, index, self->dtype);
  return WK_OK;
}
/* take_along_dim(self, indices, dim): self and indices broadcast but along dim, which takes indices' size;
 * dim None: indices' elements of the flattened self (a vector). */
static wk_status meta_take_along_dim(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  wk_tensor *self = MT(0), *idx = MT(1);
  if (idx->dtype != WK_I64)
    return wk_error(WK_ERR_DTYPE, "torch.take_along_dim(): dtype of indices should be Long but got %s",
                    wk_dtype_name(idx->dtype));
  if (MNONE(2)) {
    o->dtype = self->dtype, o->ndim = 1, o->sizes[0] = numel(idx);
    return WK_OK;
  }
  int d;
  wk_status s = wk_check_dim("take_along_dim", args[2].u.i, self->ndim, &d);
  if (s) return s;
  if (self->ndim != idx->ndim)
    return wk_error(WK_ERR_SHAPE, "torch.take_along_dim(): input and indices should have the same number of "
                    "dimensions, but got %d dimensions for input, and %d dimensions for indices", self->ndim, idx->ndim);
  wk__meta_like(o, self, self->dtype);
  for (int k = 0; k < self->ndim; k++) {
    int64_t a = self->sizes[k], b = idx->sizes[k];
    if (k == d) {
      o->sizes[k] = b;
    } else if (a != b && a != 1 && b != 1) {
      return wk_error(WK_ERR_SHAPE, "take_along_dim(): The size of tensor a (%lld) must match the size of tensor b "
                      "(%lld) at non-singleton dimension %d", (long long)a, (long long)b, k);
    } else {
      o->sizes[k] = a == 1 ? b : a;
    }
  }
  if (self->ndim == 0) o->ndim = 0;
  return WK_OK;
}
/* argsort(self, dim, descending) and argsort.stable(self, stable, dim, descending): sort's indices. */
static wk_status meta_argsort(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *self = MT(0);
  bool st = args[1].tag == WK_V_BOOL;
  int d;
  wk_status s = wk_check_dim("argsort", args[st ? 2 : 1].u.i, self->ndim, &d);
  if (s) return s;
  (void)op;
  wk__meta_like(o, self, WK_I64);
  return WK_OK;
}

/* nonzero/argwhere(self): [number of nonzero elements, self's rank] of int64, the count being data. */
static wk_status meta_nonzero(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  wk_tensor *self = MT(0);
  if (self->ndim >= WK_MAX_DIMS)
    return wk_error(WK_ERR_SHAPE, "%s(): at most %d dims", wk_op_name(op), WK_MAX_DIMS - 1);
  o->dtype = WK_I64;
  o->ndim = WK_META_DYNAMIC;
  return WK_OK;
}

/* searchsorted.Tensor(sorted_sequence, self, out_int32, right, side, sorter) and bucketize.Tensor(self,
 * boundaries, out_int32, right): PyTorch's searchsorted_pre_check, self's shape of int64 (int32). */
static wk_status meta_searchsorted(wk_op *op, const wk_value *args, wk_meta_out *o) {
  bool bucket = wk_op_name(op)[0] == 'b';
  const char *nm = bucket ? "torch.bucketize()" : "torch.searchsorted()";
  wk_tensor *seq = MT(bucket ? 1 : 0), *self = MT(bucket ? 0 : 1);
  char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX];
  if (seq->dtype == WK_BOOL || self->dtype == WK_BOOL)
    return wk_error(WK_ERR_DTYPE, "%s: \"searchsorted\" not implemented for 'Bool'", nm);
  if (bucket && seq->ndim != 1)
    return wk_error(WK_ERR_SHAPE, "%s: boundaries tensor must be 1 dimension, but got dim(%d)", nm, seq->ndim);
  if (seq->ndim == 0)
    return wk_error(WK_ERR_SHAPE, "%s: boundaries tensor should have positive dimension, but got 0 dimension", nm);
  if (seq->ndim > 1) {
    bool ok = self->ndim == seq->ndim;
    for (int d = 0; ok && d + 1 < seq->ndim; d++) ok = seq->sizes[d] == self->sizes[d];
    if (self->ndim == 0)
      return wk_error(WK_ERR_SHAPE, "%s: input value can be a scalar only when boundaries tensor dimension is 1, but we "
                      "got boundaries tensor dim(%d) and input value's dim(0) numel(1)", nm, seq->ndim);
    if (!ok)
      return wk_error(WK_ERR_SHAPE, "%s: boundaries tensor should be 1 dimension or the first N-1 dimensions of "
                      "boundaries tensor and input value tensor must match, but we got boundaries tensor %s and input "
                      "value tensor %s", nm, shape_of(seq, a, sizeof a), shape_of(self, b, sizeof b));
  }
  if (!bucket) {
    const char *side = MNONE(4) ? NULL : args[4].u.s;
    if (side && strcmp(side, "left") && strcmp(side, "right"))
      return wk_error(WK_ERR_INVALID_ARG, "%s: side can only be 'left' or 'right' but got %s", nm, side);
    if (side && args[3].u.b && !strcmp(side, "left"))
      return wk_error(WK_ERR_INVALID_ARG, "%s: side and right can't be set to opposites, got side of left while right "
                      "was True", nm);
    if (!MNONE(5)) {
      wk_tensor *so = MT(5);
      if (so->dtype != WK_I64)
        return wk_error(WK_ERR_DTYPE, "%s: sorter must be a tensor of long dtype but got dtype %s", nm,
                        wk_dtype_name(so->dtype));
      bool same = so->ndim == seq->ndim;
      for (int d = 0; same && d < so->ndim; d++) same = so->sizes[d] == seq->sizes[d];
      if (!same)
        return wk_error(WK_ERR_SHAPE, "%s: boundary and sorter must have the same size, but got boundary tensor %s "
                        "and got sorter tensor %s", nm, shape_of(seq, a, sizeof a), shape_of(so, b, sizeof b));
    }
  }
  wk__meta_like(o, self, args[2].u.b ? WK_I32 : WK_I64);
  return WK_OK;
}

/* bincount(self, weights, minlength): a 1-d integer input; the length (max + 1) is data. int64 counts, or
 * the weights' sums in float32 (float32 weights) or float64 (others), as PyTorch's. */
static wk_status meta_bincount(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  wk_tensor *self = MT(0), *w = MNONE(1) ? NULL : MT(1);
  if (self->dtype == WK_BOOL || wk_dtype_is_floating(self->dtype))
    return wk_error(WK_ERR_DTYPE, "bincount(): \"bincount_cpu\" not implemented for '%s'", wk_dtype_torch_name(self->dtype));
  if (self->ndim != 1) return wk_error(WK_ERR_SHAPE, "bincount(): bincount only supports 1-d non-negative integral inputs.");
  if (w && (w->ndim != 1 || w->sizes[0] != self->sizes[0]))
    return wk_error(WK_ERR_SHAPE, "bincount(): weights should be 1-d and have the same length as input");
  if (args[2].u.i < 0) return wk_error(WK_ERR_INVALID_ARG, "bincount(): minlength should be >= 0");
  o->dtype = !w ? WK_I64 : w->dtype == WK_F32 ? WK_F32 : WK_F64;
  o->ndim = WK_META_DYNAMIC;
  return WK_OK;
}
/* histc(self, bins, min, max): [bins] of self's (floating) dtype. */
static double scalar_of(const wk_value *v) {
  return v->tag == WK_V_INT ? (double)v->u.i : v->tag == WK_V_BOOL ? v->u.b : v->u.f;
}
static wk_status meta_histc(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  wk_tensor *self = MT(0);
  int64_t bins = args[1].u.i;
  if (!wk_dtype_is_floating(self->dtype))
    return wk_error(WK_ERR_DTYPE, "histc(): \"histogram_cpu\" not implemented for '%s'", wk_dtype_torch_name(self->dtype));
  if (bins <= 0) return wk_error(WK_ERR_INVALID_ARG, "torch.histc(): bins must be > 0, but got %lld", (long long)bins);
  double lo = scalar_of(&args[2]), hi = scalar_of(&args[3]);
  if (!isfinite(lo) || !isfinite(hi))
    return wk_error(WK_ERR_INVALID_ARG, "torch.histc: range of [%g, %g] is not finite", lo, hi);
  if (lo > hi) return wk_error(WK_ERR_INVALID_ARG, "torch.histc: max must be larger than min");
  wk__meta_shape(o, &bins, 1, self->dtype);
  return WK_OK;
}

static const wk__meta_row g_rows[] = {
    {"copy_", meta_copy_},
    {"cat", meta_cat},
    {"index_select", meta_index_select},
    {"gather", meta_gather},
    {"scatter.src", meta_scatter},
    {"scatter_.src", meta_scatter},
    {"scatter_add", meta_scatter},
    {"scatter_add_", meta_scatter},
    {"masked_fill.Scalar", meta_masked_fill},
    {"masked_fill_.Scalar", meta_masked_fill},
    {"masked_select", meta_masked_select},
    {"repeat", meta_repeat},
    {"flip", meta_flip},
    {"roll", meta_roll},
    {"one_hot", meta_one_hot},
    {"clone", meta_clone},
    {"to.dtype", meta_to_dtype},
    {"tril", meta_tril_triu},
    {"triu", meta_tril_triu},
    {"diag", meta_diag},
    {"diagonal", meta_diagonal},
    {"movedim", meta_movedim},
    {"tile", meta_tile},
    {"unflatten", meta_unflatten},
    {"repeat_interleave.self_int", meta_repeat_interleave},
    {"index_add", meta_index_acf},
    {"index_copy", meta_index_acf},
    {"index_fill.int_Scalar", meta_index_acf},
    {"take", meta_take},
    {"take_along_dim", meta_take_along_dim},
    {"argsort", meta_argsort},
    {"argsort.stable", meta_argsort},
    {"nonzero", meta_nonzero},
    {"argwhere", meta_nonzero},
    {"searchsorted.Tensor", meta_searchsorted},
    {"bucketize.Tensor", meta_searchsorted},
    {"bincount", meta_bincount},
    {"histc", meta_histc},
};

const wk__meta_family wk__metas_index = {g_rows, sizeof g_rows / sizeof g_rows[0]};
