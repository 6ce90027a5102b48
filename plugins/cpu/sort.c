/* cpu plugin: sort and topk kernels, for every dtype; both sort each line along
 * one dimension and keep its first k elements. */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

/* ---- sort / topk -----------------------------------------------------------------------
 * Each line along `dim` is sorted as (key, position) pairs with qsort; ties
 * break on position, which makes the order stable. NaN sorts as the largest
 * value. Values are copied from self by the sorted positions, bit for bit. */
typedef struct {
  union {
    double f;
    int64_t i;
  } v;
  int64_t pos;
} skey;

static int cmp_pos(const skey *a, const skey *b) { return (a->pos > b->pos) - (a->pos < b->pos); }

static int cmp_f_asc(const void *x, const void *y) {
  const skey *a = x, *b = y;
  bool an = a->v.f != a->v.f, bn = b->v.f != b->v.f;
  if (an != bn) return an ? 1 : -1;
  if (!an && a->v.f != b->v.f) return a->v.f < b->v.f ? -1 : 1;
  return cmp_pos(a, b);
}
static int cmp_f_desc(const void *x, const void *y) {
  const skey *a = x, *b = y;
  bool an = a->v.f != a->v.f, bn = b->v.f != b->v.f;
  if (an != bn) return an ? -1 : 1;
  if (!an && a->v.f != b->v.f) return a->v.f > b->v.f ? -1 : 1;
  return cmp_pos(a, b);
}
static int cmp_i_asc(const void *x, const void *y) {
  const skey *a = x, *b = y;
  if (a->v.i != b->v.i) return a->v.i < b->v.i ? -1 : 1;
  return cmp_pos(a, b);
}
static int cmp_i_desc(const void *x, const void *y) {
  const skey *a = x, *b = y;
  if (a->v.i != b->v.i) return a->v.i > b->v.i ? -1 : 1;
  return cmp_pos(a, b);
}

typedef struct {
  int nd, dim; /* nd >= 1 */
  int64_t sz[WK_MAX_DIMS], sstr[WK_MAX_DIMS], ostr[WK_MAX_DIMS]; /* self sizes, bytes; output elements */
  int64_t k;
  const char *src;
  char *vals;
  int64_t *inds;
  wk_dtype dt;
  size_t es;
  bool desc, floating;
  int failed;
} sort_ctx;

static void sort_lines(void *p, int64_t b, int64_t e) {
  sort_ctx *c = p;
  int nd = c->nd, dim = c->dim;
  int64_t n = c->sz[dim];
  skey *keys = wk_malloc(sizeof(skey) * (size_t)(n > 0 ? n : 1));
  if (!keys) {
    __atomic_store_n(&c->failed, 1, __ATOMIC_RELAXED);
    return;
  }
  int (*cmp)(const void *, const void *) =
      c->floating ? (c->desc ? cmp_f_desc : cmp_f_asc) : (c->desc ? cmp_i_desc : cmp_i_asc);
  int64_t co[WK_MAX_DIMS] = {0}, rem = b;
  for (int d = nd - 1; d >= 0; d--) {
    if (d == dim) continue;
    co[d] = rem % c->sz[d];
    rem /= c->sz[d];
  }
  int64_t ss = c->sstr[dim], os = c->ostr[dim];
  for (int64_t l = b; l < e; l++) {
    int64_t sb = 0, ob = 0;
    for (int d = 0; d < nd; d++) {
      sb += co[d] * c->sstr[d];
      ob += co[d] * c->ostr[d];
    }
    const char *s = c->src + sb;
    for (int64_t j = 0; j < n; j++) {
      if (c->floating)
        keys[j].v.f = wk_load_f64(s + j * ss, c->dt);
      else
        keys[j].v.i = wk_load_i64(s + j * ss, c->dt);
      keys[j].pos = j;
    }
    qsort(keys, (size_t)n, sizeof(skey), cmp);
    for (int64_t j = 0; j < c->k; j++) {
      int64_t o = ob + j * os;
      cpu_copy_elem(c->vals + o * (int64_t)c->es, s + keys[j].pos * ss, c->es);
      c->inds[o] = keys[j].pos;
    }
    for (int d = nd - 1; d >= 0; d--) {
      if (d == dim) continue;
      if (++co[d] < c->sz[d]) break;
      co[d] = 0;
    }
  }
  wk_free(keys);
}

/* Sorts self along dim (wrapped here; the meta function checked it and k) and
 * keeps the first k of each line, into the results the meta function decided. */
static wk_status sort_k(const wk_kernel_ctx *ctx, wk_tensor *self, int64_t dim64, int64_t k, bool desc,
                        wk_value *outs) {
  int nd = wk_tensor_dim(self);
  int dim = (int)(dim64 < 0 ? dim64 + (nd > 0 ? nd : 1) : dim64);
  wk_dtype dt = wk_tensor_dtype(self);
  if (k < 0) k = cpu_nsize(self, dim); /* sort: the whole line */
  wk_tensor *v = wk_meta_empty(ctx, 0), *ix = wk_meta_empty(ctx, 1);
  if (!v || !ix) {
    wk_release(v);
    wk_release(ix);
    return wk_last_error();
  }
  sort_ctx c;
  memset(&c, 0, sizeof c);
  c.nd = nd > 0 ? nd : 1;
  c.dim = dim;
  c.k = nd > 0 ? k : 1;
  c.dt = dt;
  c.es = wk_dtype_size(dt);
  c.desc = desc;
  c.floating = wk_dtype_is_floating(dt);
  c.src = wk_tensor_data(self);
  c.vals = wk_tensor_data(v);
  c.inds = wk_tensor_data(ix);
  int64_t st = 1, lines = 1;
  for (int d = c.nd - 1; d >= 0; d--) {
    c.sz[d] = cpu_nsize(self, d);
    c.sstr[d] = cpu_nstride(self, d) * (int64_t)c.es;
    c.ostr[d] = st;
    st *= d == dim ? c.k : c.sz[d];
    if (d != dim) lines *= c.sz[d];
  }
  int64_t n = c.sz[dim];
  if (lines > 0 && c.k > 0) wk_parallel_for(0, lines, cpu_grain_for(n * 8), sort_lines, &c);
  if (c.failed) {
    wk_release(v);
    wk_release(ix);
    return wk_error(WK_ERR_NO_MEMORY, "sort: out of memory for a line of %lld elements", (long long)n);
  }
  outs[0] = WK_VT(v);
  outs[1] = WK_VT(ix);
  return WK_OK;
}

static wk_status k_sort(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return sort_k(ctx, WK_ARG_T(0), WK_ARG_I(1), -1, WK_ARG_B(2), outs);
}

static wk_status k_topk(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return sort_k(ctx, WK_ARG_T(0), WK_ARG_I(2), WK_ARG_I(1), WK_ARG_B(3), outs);
}

wk_status cpu_register_sort(void) {
  wk_status s = cpu_reg("topk", k_topk, NULL);
  if (!s) s = cpu_reg("sort", k_sort, NULL);
  return s;
}
