/* cpu plugin: indexing and shape kernels: index_select, gather,
 * scatter/scatter_add (functional and in place), masked_fill, masked_select,
 * repeat, flip, roll and one_hot (sort and topk are in sort.c). Kernels that only
 * move elements work on bytes (one path for every dtype); scatter_add adds typed values.
 * Argument checks and result shapes are the ops' meta functions (core/meta_index.c);
 * index values are data, so their bounds are checked here. */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

/* ---- shared helpers -------------------------------------------------------------- */

int64_t cpu_nsize(const wk_tensor *t, int d) { return wk_tensor_dim(t) == 0 ? 1 : wk_tensor_sizes(t)[d]; }
int64_t cpu_nstride(const wk_tensor *t, int d) { return wk_tensor_dim(t) == 0 ? 0 : wk_tensor_strides(t)[d]; }

/* The index values, row-major, as a malloc'd int64 array (int32 widened). */
static int64_t *load_index(wk_tensor *index) {
  int64_t n = wk_tensor_numel(index);
  int64_t *v = wk_malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
  if (!v) {
    wk_error(WK_ERR_NO_MEMORY, "index: out of memory for %lld indices", (long long)n);
    return NULL;
  }
  if (n == 0) return v;
  wk_tensor *c = wk_contiguous(index);
  if (!c) {
    wk_free(v);
    return NULL;
  }
  const void *p = wk_tensor_data(c);
  wk_dtype dt = wk_tensor_dtype(c);
  if (dt == WK_I64)
    memcpy(v, p, sizeof(int64_t) * (size_t)n);
  else
    for (int64_t i = 0; i < n; i++) v[i] = wk_load_i64((const char *)p + i * (int64_t)wk_dtype_size(dt), dt);
  wk_release(c);
  return v;
}

static wk_status check_bounds(const char *op, const int64_t *idx, int64_t n, int64_t size, int dim) {
  for (int64_t i = 0; i < n; i++)
    if (idx[i] < 0 || idx[i] >= size)
      return wk_error(WK_ERR_INDEX, "%s(): index %lld is out of bounds for dimension %d with size %lld", op,
                      (long long)idx[i], dim, (long long)size);
  return WK_OK;
}

/* ---- remap: out[c] = src[sum_d tab_d[c_d]] ---------------------------------------
 * flip, roll, repeat and index_select each map every output coordinate of every
 * dimension to a source byte offset; one table per dimension, and the copy runs
 * row by row over a contiguous output. */
typedef struct {
  int nd; /* >= 1 */
  int64_t osz[WK_MAX_DIMS];
  const int64_t *tab[WK_MAX_DIMS];
  const char *src;
  char *dst;
  size_t es;
  int64_t inner;
} remap_ctx;

#define REMAP_INNER(T)                                                      \
  do {                                                                      \
    T *o_ = (T *)o;                                                         \
    for (int64_t j = 0; j < n; j++) memcpy(&o_[j], s + it[j], sizeof(T));   \
  } while (0)

static void remap_rows(void *p, int64_t b, int64_t e) {
  const remap_ctx *c = p;
  int nd = c->nd;
  int64_t idx[WK_MAX_DIMS], rem = b, n = c->inner;
  for (int d = nd - 2; d >= 0; d--) {
    idx[d] = rem % c->osz[d];
    rem /= c->osz[d];
  }
  const int64_t *it = c->tab[nd - 1];
  for (int64_t r = b; r < e; r++) {
    int64_t base = 0;
    for (int d = 0; d < nd - 1; d++) base += c->tab[d][idx[d]];
    const char *s = c->src + base;
    char *o = c->dst + r * n * (int64_t)c->es;
    switch (c->es) {
      case 1: REMAP_INNER(uint8_t); break;
      case 2: REMAP_INNER(uint16_t); break;
      case 4: REMAP_INNER(uint32_t); break;
      default: REMAP_INNER(uint64_t); break;
    }
    for (int d = nd - 2; d >= 0; d--) {
      if (++idx[d] < c->osz[d]) break;
      idx[d] = 0;
    }
  }
}

/* Table storage for a remap over osz[nd]: returns the malloc'd block and points
 * tab[d] into it. */
static int64_t *remap_tables(const int64_t *osz, int nd, int64_t **tab) {
  int64_t total = 0;
  for (int d = 0; d < nd; d++) total += osz[d];
  int64_t *buf = wk_malloc(sizeof(int64_t) * (size_t)(total > 0 ? total : 1));
  if (!buf) {
    wk_error(WK_ERR_NO_MEMORY, "index: out of memory");
    return NULL;
  }
  int64_t off = 0;
  for (int d = 0; d < nd; d++) {
    tab[d] = buf + off;
    off += osz[d];
  }
  return buf;
}

/* Fills `out` (contiguous, numel = prod osz) from self through the tables. */
static void remap_run(wk_tensor *out, wk_tensor *self, const int64_t *osz, int nd, int64_t *const *tab) {
  remap_ctx c;
  c.nd = nd;
  int64_t rows = 1;
  for (int d = 0; d < nd; d++) {
    c.osz[d] = osz[d];
    c.tab[d] = tab[d];
    if (d < nd - 1) rows *= osz[d];
  }
  c.inner = osz[nd - 1];
  if (rows == 0 || c.inner == 0) return;
  c.src = wk_tensor_data(self);
  c.dst = wk_tensor_data(out);
  c.es = wk_dtype_size(wk_tensor_dtype(self));
  wk_parallel_for(0, rows, cpu_grain_for(c.inner), remap_rows, &c);
}

/* cat: the core's composite (narrow + copy_) serves every device. */

/* ---- index_select ---------------------------------------------------------------- */

static wk_status k_index_select(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *self = WK_ARG_T(0), *index = WK_ARG_T(2);
  int nd = wk_tensor_dim(self), d = 0;
  wk_status s = wk_check_dim("index_select", WK_ARG_I(1), nd, &d); /* wraps; the meta function checked it */
  if (s) return s;
  int64_t n = wk_tensor_numel(index);
  int64_t *idx = load_index(index);
  if (!idx) return wk_last_error();
  int64_t size = cpu_nsize(self, d);
  for (int64_t i = 0; i < n; i++)
    if (idx[i] < 0 || idx[i] >= size) {
      s = wk_error(WK_ERR_INDEX,
                   "index_select(): index %lld is out of bounds for dimension %d with size %lld (index out of "
                   "range in self)",
                   (long long)idx[i], d, (long long)size);
      wk_free(idx);
      return s;
    }
  int64_t osz[WK_MAX_DIMS];
  int ind = nd > 0 ? nd : 1;
  for (int k = 0; k < ind; k++) osz[k] = cpu_nsize(self, k);
  osz[d] = n;
  wk_tensor *r = wk_meta_empty(ctx, 0);
  int64_t *tab[WK_MAX_DIMS];
  int64_t *buf = r ? remap_tables(osz, ind, tab) : NULL;
  if (!buf) {
    wk_free(idx);
    wk_release(r);
    return wk_last_error();
  }
  int64_t es = (int64_t)wk_dtype_size(wk_tensor_dtype(self));
  for (int k = 0; k < ind; k++) {
    int64_t st = cpu_nstride(self, k) * es;
    for (int64_t c = 0; c < osz[k]; c++) tab[k][c] = (k == d ? idx[c] : c) * st;
  }
  remap_run(r, self, osz, ind, tab);
  wk_free(buf);
  wk_free(idx);
  outs[0] = WK_VT(r);
  return WK_OK;
}

/* ---- gather / scatter / scatter_add --------------------------------------------------
 * Walks the index tensor line by line along `dim`. Tensor A is the one the index
 * addresses (self for gather, the target for scatter), tensor B follows the
 * index's own coordinates (the result for gather, src for scatter). Lines differ
 * in their coordinates off `dim`, so they touch disjoint elements of A and run
 * in parallel without changing any result. */
typedef enum { SG_GATHER, SG_SCATTER, SG_ADD } sg_kind;

typedef struct {
  sg_kind kind;
  int nd, dim;
  int64_t isz[WK_MAX_DIMS], istr[WK_MAX_DIMS]; /* index shape and row-major strides */
  const int64_t *idx;
  char *a, *b;
  int64_t astr[WK_MAX_DIMS], bstr[WK_MAX_DIMS]; /* bytes */
  wk_dtype dt;
  size_t es;
} sg_ctx;

#define SG_ADD_LOOP(T, U)                                                        \
  for (int64_t k = 0; k < len; k++) {                                           \
    T *pa = (T *)(pa0 + ip[k * is] * as);                                        \
    const T *pb = (const T *)(pb0 + k * bs);                                     \
    *pa = (T)((U)*pa + (U)*pb);                                                  \
  }

static void sg_lines(void *p, int64_t b, int64_t e) {
  const sg_ctx *c = p;
  int nd = c->nd, dim = c->dim;
  int64_t co[WK_MAX_DIMS] = {0}, rem = b;
  for (int d = nd - 1; d >= 0; d--) {
    if (d == dim) continue;
    co[d] = rem % c->isz[d];
    rem /= c->isz[d];
  }
  int64_t len = c->isz[dim], is = c->istr[dim], as = c->astr[dim], bs = c->bstr[dim];
  size_t es = c->es;
  for (int64_t l = b; l < e; l++) {
    int64_t ib = 0, ab = 0, bb = 0;
    for (int d = 0; d < nd; d++) {
      ib += co[d] * c->istr[d];
      ab += co[d] * c->astr[d];
      bb += co[d] * c->bstr[d];
    }
    const int64_t *ip = c->idx + ib;
    char *pa0 = c->a + ab, *pb0 = c->b + bb;
    switch (c->kind) {
      case SG_GATHER:
        for (int64_t k = 0; k < len; k++) cpu_copy_elem(pb0 + k * bs, pa0 + ip[k * is] * as, es);
        break;
      case SG_SCATTER:
        for (int64_t k = 0; k < len; k++) cpu_copy_elem(pa0 + ip[k * is] * as, pb0 + k * bs, es);
        break;
      case SG_ADD:
        switch (c->dt) {
          case WK_F32: SG_ADD_LOOP(float, float) break;
          case WK_F64: SG_ADD_LOOP(double, double) break;
          case WK_I8: SG_ADD_LOOP(int8_t, uint8_t) break;
          case WK_U8: SG_ADD_LOOP(uint8_t, uint8_t) break;
          case WK_I16: SG_ADD_LOOP(int16_t, uint16_t) break;
          case WK_I32: SG_ADD_LOOP(int32_t, uint32_t) break;
          case WK_I64: SG_ADD_LOOP(int64_t, uint64_t) break;
          case WK_BOOL:
            for (int64_t k = 0; k < len; k++) {
              bool *pa = (bool *)(pa0 + ip[k * is] * as);
              *pa = *pa || *(const bool *)(pb0 + k * bs);
            }
            break;
          default: break; /* f16/bf16 are added in f32 by the caller */
        }
        break;
    }
    for (int d = nd - 1; d >= 0; d--) {
      if (d == dim) continue;
      if (++co[d] < c->isz[d]) break;
      co[d] = 0;
    }
  }
}

/* Runs the walk; a and b are the two tensors (A, B above), already checked. */
static void sg_run(sg_kind kind, int dim, wk_tensor *index, const int64_t *idx, wk_tensor *a, wk_tensor *b) {
  sg_ctx c;
  c.kind = kind;
  c.nd = wk_tensor_dim(index) > 0 ? wk_tensor_dim(index) : 1;
  c.dim = dim;
  c.idx = idx;
  c.dt = wk_tensor_dtype(a);
  c.es = wk_dtype_size(c.dt);
  c.a = wk_tensor_data(a);
  c.b = wk_tensor_data(b);
  int64_t st = 1;
  for (int d = c.nd - 1; d >= 0; d--) {
    c.isz[d] = cpu_nsize(index, d);
    c.istr[d] = st;
    st *= c.isz[d];
    c.astr[d] = cpu_nstride(a, d) * (int64_t)c.es;
    c.bstr[d] = cpu_nstride(b, d) * (int64_t)c.es;
  }
  int64_t numel = st, len = c.isz[dim];
  if (numel == 0) return;
  wk_parallel_for(0, numel / len, cpu_grain_for(len), sg_lines, &c);
}

static wk_status k_gather(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *self = WK_ARG_T(0), *index = WK_ARG_T(2);
  int d = 0;
  wk_status s = wk_check_dim("gather", WK_ARG_I(1), wk_tensor_dim(self), &d); /* checked by the meta function */
  if (s) return s;
  int64_t n = wk_tensor_numel(index);
  wk_tensor *r = wk_meta_empty(ctx, 0);
  if (!r) return wk_last_error();
  if (n != 0) {
    int64_t *idx = load_index(index);
    s = idx ? check_bounds("gather", idx, n, cpu_nsize(self, d), d) : wk_last_error();
    if (!s) sg_run(SG_GATHER, d, index, idx, self, r);
    wk_free(idx);
    if (s) {
      wk_release(r);
      return s;
    }
  }
  outs[0] = WK_VT(r);
  return WK_OK;
}

static wk_status k_scatter(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_scatter_args a; /* variant (add, inplace, label), dim checked by the meta function: SDK kernel_util.h */
  wk_scatter_args_of(&a, ctx, args);
  wk_status s = WK_OK;
  int64_t *idx = a.n ? load_index(a.index) : NULL;
  if (a.n && !idx) return wk_last_error();
  if (a.n && (s = check_bounds(a.op, idx, a.n, cpu_nsize(a.self, a.dim), a.dim))) {
    wk_free(idx);
    return s;
  }
  /* f16/bf16 accumulate in f32; the target is a copy unless we can write self. */
  wk_dtype cd = a.v->add && (a.dt == WK_F16 || a.dt == WK_BF16) ? WK_F32 : a.dt;
  wk_tensor *target = NULL, *srcc = NULL;
  if (a.v->inplace && cd == a.dt) {
    target = wk_retain(a.self);
  } else {
    target = cpu_empty(wk_tensor_sizes(a.self), wk_tensor_dim(a.self), cd);
    if (target && (s = cpu_copy(target, a.self))) {
      wk_release(target);
      target = NULL;
    }
  }
  if (target) {
    if (cd != a.dt)
      srcc = wk_kernel_cast(a.src, cd);
    else if (wk_tensor_same_storage(a.src, target))
      srcc = wk_clone(a.src);
    else
      srcc = wk_retain(a.src);
  }
  if (!target || !srcc) s = wk_last_error();
  if (!s && a.n) sg_run(a.v->add ? SG_ADD : SG_SCATTER, a.dim, a.index, idx, target, srcc);
  wk_free(idx);
  wk_release(srcc);
  if (s) {
    wk_release(target);
    return s;
  }
  if (!a.v->inplace) return wk_kernel_out1(outs, wk_cast_own(target, a.dt));
  if (target != a.self) s = cpu_copy(a.self, target);
  wk_release(target);
  return wk_kernel_done_inplace(s, a.self, outs);
}

/* ---- masked_fill / masked_select ---------------------------------------------------- */

typedef struct {
  size_t es;
  _Alignas(8) unsigned char value[8]; /* the fill value in self's dtype */
} mfill_ctx;

/* In place: operands (self, mask). */
static void loop_mfill_(void *cp, char **d, const int64_t *s, int64_t n) {
  const mfill_ctx *c = cp;
  for (int64_t i = 0; i < n; i++)
    if (*(const bool *)(d[1] + i * s[1])) cpu_copy_elem(d[0] + i * s[0], (const char *)c->value, c->es);
}

/* Functional: operands (out, self, mask). */
static void loop_mfill(void *cp, char **d, const int64_t *s, int64_t n) {
  const mfill_ctx *c = cp;
  for (int64_t i = 0; i < n; i++)
    cpu_copy_elem(d[0] + i * s[0], *(const bool *)(d[2] + i * s[2]) ? (const char *)c->value : d[1] + i * s[1], c->es);
}

static wk_status k_masked_fill(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  bool inplace = ((const wk_index_variant *)ctx->user)->inplace;
  const char *op = inplace ? "masked_fill_" : "masked_fill";
  wk_tensor *self = WK_ARG_T(0), *mask = WK_ARG_T(1);
  wk_dtype dt = wk_tensor_dtype(self);
  mfill_ctx c = {wk_dtype_size(dt), {0}};
  if (args[2].tag == WK_V_INT && dt != WK_F32 && dt != WK_F64 && dt != WK_F16 && dt != WK_BF16)
    wk_store_i64(c.value, dt, args[2].u.i);
  else
    wk_store_f64(c.value, dt, wk_value_as_f64(&args[2]));
  wk_tensor *pair[2] = {self, mask};
  wk_status s;
  wk_iter it;
  if (inplace) {
    if ((s = wk_iter_init(&it, op, pair, 2))) return s;
    wk_iter_run(&it, loop_mfill_, &c);
    wk_tensor_bump_version(self);
    outs[0] = WK_VT(self);
    return WK_OK;
  }
  wk_tensor *r = wk_meta_empty(ctx, 0);
  if (!r) return wk_last_error();
  wk_tensor *ops[3] = {r, self, mask};
  if ((s = wk_iter_init(&it, op, ops, 3))) {
    wk_release(r);
    return s;
  }
  wk_iter_run(&it, loop_mfill, &c);
  outs[0] = WK_VT(r);
  return WK_OK;
}

static wk_status k_masked_select(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  wk_tensor *self = WK_ARG_T(0), *xc, *mc;
  int64_t cnt;
  wk_status s = wk_masked_select_operands(self, WK_ARG_T(1), &xc, &mc, &cnt);
  if (s) return s;
  int64_t numel = wk_tensor_numel(mc);
  const bool *m = wk_tensor_data(mc);
  wk_tensor *r = cpu_empty(&cnt, 1, wk_tensor_dtype(self));
  if (r && cnt) {
    size_t es = wk_dtype_size(wk_tensor_dtype(self));
    const char *x = wk_tensor_data(xc);
    char *o = wk_tensor_data(r);
    for (int64_t i = 0, k = 0; i < numel; i++)
      if (m[i]) cpu_copy_elem(o + (k++) * (int64_t)es, x + i * (int64_t)es, es);
  }
  wk_release(xc);
  wk_release(mc);
  return wk_kernel_out1(outs, r);
}

/* ---- repeat / flip / roll ------------------------------------------------------------ */

static wk_status k_repeat(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *self = WK_ARG_T(0);
  int64_t psz[WK_MAX_DIMS], pst[WK_MAX_DIMS], osz[WK_MAX_DIMS];
  int nr = wk_repeat_shapes(args, psz, pst, osz);
  int64_t es = (int64_t)wk_dtype_size(wk_tensor_dtype(self));
  for (int k = 0; k < nr; k++) pst[k] *= es; /* remap tables hold byte offsets */
  wk_tensor *r = wk_meta_empty(ctx, 0);
  if (!r) return wk_last_error();
  if (nr == 0) { /* 0-dim self, no repeats: a copy */
    wk_status s = cpu_copy(r, self);
    return wk_kernel_done(s, r, outs);
  }
  int64_t *tab[WK_MAX_DIMS];
  int64_t *buf = remap_tables(osz, nr, tab);
  if (!buf) {
    wk_release(r);
    return wk_last_error();
  }
  for (int k = 0; k < nr; k++)
    for (int64_t c = 0; c < osz[k]; c++) tab[k][c] = (c % psz[k]) * pst[k];
  remap_run(r, self, osz, nr, tab);
  wk_free(buf);
  outs[0] = WK_VT(r);
  return WK_OK;
}

/* Shared by flip and roll: out[c] = self[src(c)] per dimension, where flip[d]
 * reverses dimension d and shift[d] rolls it. */
static wk_tensor *flip_roll(wk_tensor *self, const bool *flip, const int64_t *shift) {
  int nd = wk_tensor_dim(self);
  wk_tensor *r = cpu_empty(wk_tensor_sizes(self), nd, wk_tensor_dtype(self));
  if (!r) return NULL;
  if (nd == 0 || wk_tensor_numel(self) == 0) {
    if (cpu_copy(r, self)) {
      wk_release(r);
      return NULL;
    }
    return r;
  }
  const int64_t *sz = wk_tensor_sizes(self);
  int64_t *tab[WK_MAX_DIMS];
  int64_t *buf = remap_tables(sz, nd, tab);
  if (!buf) {
    wk_release(r);
    return NULL;
  }
  int64_t es = (int64_t)wk_dtype_size(wk_tensor_dtype(self));
  for (int d = 0; d < nd; d++) {
    int64_t n = sz[d], st = wk_tensor_strides(self)[d] * es;
    int64_t sh = ((shift[d] % n) + n) % n;
    for (int64_t c = 0; c < n; c++) {
      int64_t src = flip[d] ? n - 1 - c : (c - sh + n) % n;
      tab[d][c] = src * st;
    }
  }
  remap_run(r, self, sz, nd, tab);
  wk_free(buf);
  return r;
}

static wk_status k_flip(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  wk_remap_plan p;
  wk_flip_plan(&p, WK_ARG_T(0), &args[1]);
  return wk_kernel_out1(outs, flip_roll(WK_ARG_T(0), p.flip, p.shift));
}

static wk_status k_roll(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  wk_tensor *self = WK_ARG_T(0);
  wk_remap_plan p;
  wk_roll_plan(&p, self, &args[1], &args[2]);
  if (!p.flat) return wk_kernel_out1(outs, flip_roll(self, p.flip, p.shift));
  int64_t numel = wk_tensor_numel(self); /* no dims: roll the flattened tensor */
  wk_tensor *flat = wk_reshape(self, &numel, 1);
  wk_tensor *rf = flat ? flip_roll(flat, p.flip, p.shift) : NULL;
  wk_release(flat);
  wk_tensor *r = rf ? wk_reshape(rf, wk_tensor_sizes(self), wk_tensor_dim(self)) : NULL;
  wk_release(rf);
  return wk_kernel_out1(outs, r);
}

/* ---- one_hot -------------------------------------------------------------------------- */

static wk_status k_one_hot(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  wk_tensor *self = WK_ARG_T(0);
  int64_t nc = WK_ARG_I(1);
  int nd = wk_tensor_dim(self);
  int64_t n = wk_tensor_numel(self);
  int64_t *v = load_index(self);
  if (!v) return wk_last_error();
  int64_t mn = INT64_MAX, mx = INT64_MIN;
  for (int64_t i = 0; i < n; i++) {
    if (v[i] < mn) mn = v[i];
    if (v[i] > mx) mx = v[i];
  }
  if (n > 0 && mn < 0) {
    wk_free(v);
    return wk_error(WK_ERR_INVALID_ARG, "one_hot(): Class values must be non-negative. (got %lld)", (long long)mn);
  }
  if (n > 0) {
    if (nc == -1) {
      nc = mx + 1;
    } else if (nc <= mx) {
      wk_free(v);
      return wk_error(WK_ERR_INVALID_ARG,
                      "one_hot(): Class values must be smaller than num_classes. (got class %lld, num_classes %lld)",
                      (long long)mx, (long long)nc);
    }
  }
  int64_t osz[WK_MAX_DIMS];
  memcpy(osz, wk_tensor_sizes(self), sizeof(int64_t) * (size_t)nd);
  osz[nd] = nc;
  wk_tensor *r = cpu_empty(osz, nd + 1, WK_I64);
  if (!r) {
    wk_free(v);
    return wk_last_error();
  }
  int64_t *o = wk_tensor_data(r);
  if (n > 0) {
    memset(o, 0, sizeof(int64_t) * (size_t)(n * nc));
    for (int64_t i = 0; i < n; i++) o[i * nc + v[i]] = 1;
  }
  wk_free(v);
  outs[0] = WK_VT(r);
  return WK_OK;
}

/* ---- registration ---------------------------------------------------------------------- */

wk_status cpu_register_index(void) {
  wk_status s = WK_OK;
#define REG(op, k, v) \
  if (!s) s = cpu_reg(op, k_##k, (void *)wk_index_variant_at(v));
  WK_INDEX_KERNELS(REG)
  REG("masked_select", masked_select, 0)
  REG("repeat", repeat, 0)
  REG("flip", flip, 0)
  REG("roll", roll, 0)
#undef REG
  return s;
}
