#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* qsort_r */
#endif
/* cpu plugin: scatter_reduce.two, mode, unique, unique_consecutive and masked_scatter (issue 21).
 * scatter_reduce.two: self's copy with src's elements
 * reduced into the positions index names along dim, by sum, prod, mean, amax
 * or amin, with or without self's own values (include_self). Floating dtypes
 * accumulate in double, integers in wrapping int64; elements are visited in
 * index order, one after another, so sums are deterministic. NaN propagates
 * through amax/amin as in PyTorch. mean divides by the count of values
 * reduced (floor division for integers, as PyTorch). The meta function
 * checked dtypes and shapes; index values are checked here. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

#define T(i) (args[i].u.t)

enum { R_SUM, R_PROD, R_MEAN, R_AMAX, R_AMIN };

static wk_status k_scatter_reduce(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *self = T(0), *index = T(2), *src = T(3);
  const char *rs = args[4].u.s;
  int red = !strcmp(rs, "sum") ? R_SUM : !strcmp(rs, "prod") ? R_PROD : !strcmp(rs, "mean") ? R_MEAN
            : !strcmp(rs, "amax") ? R_AMAX : R_AMIN;
  bool incl = args[5].u.b;
  int nd = wk_tensor_dim(self) > 0 ? wk_tensor_dim(self) : 1;
  int dim = (int)(args[1].u.i < 0 ? args[1].u.i + nd : args[1].u.i);
  wk_dtype dt = wk_tensor_dtype(self);
  bool fl = wk_dtype_is_floating(dt);
  size_t es = wk_dtype_size(dt);
  wk_tensor *out = wk_meta_empty(ctx, 0);
  wk_tensor *sc = wk_contiguous(self), *ic = wk_contiguous(index), *srcc = wk_contiguous(src);
  int64_t n = wk_tensor_numel(self), ni = wk_tensor_numel(index);
  double *acc = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
  int64_t *iacc = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
  int64_t *cnt = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
  wk_status s = WK_OK;
  if (!out || !sc || !ic || !srcc || !acc || !iacc || !cnt) {
    s = out && sc && ic && srcc ? wk_error(WK_ERR_NO_MEMORY, "scatter_reduce: out of memory") : wk_last_error();
    goto end;
  }
  const char *sp = wk_tensor_data(sc), *xp = wk_tensor_data(srcc);
  const int64_t *ip = wk_tensor_data(ic);
  for (int64_t i = 0; i < n; i++) {
    if (fl)
      acc[i] = wk_load_f64(sp + (size_t)i * es, dt);
    else
      iacc[i] = wk_load_i64(sp + (size_t)i * es, dt);
    cnt[i] = incl ? 1 : 0;
  }
  /* strides (elements) of self and src, and the index's sizes */
  int64_t ssz[WK_MAX_DIMS], sst[WK_MAX_DIMS], xst[WK_MAX_DIMS], isz[WK_MAX_DIMS];
  int ind = wk_tensor_dim(index) > 0 ? wk_tensor_dim(index) : 1;
  int64_t a = 1, b = 1;
  for (int d = nd - 1; d >= 0; d--) {
    ssz[d] = cpu_nsize(self, d);
    sst[d] = a, a *= ssz[d];
    xst[d] = b, b *= cpu_nsize(src, d);
    isz[d] = d < ind ? cpu_nsize(index, d) : 1;
  }
  int64_t co[WK_MAX_DIMS] = {0};
  for (int64_t e = 0; e < ni; e++) {
    int64_t v = ip[e];
    if (v < -ssz[dim] || v >= ssz[dim]) {
      s = wk_error(WK_ERR_INDEX, "scatter_reduce(): index %lld is out of bounds for dimension %d with size %lld",
                   (long long)v, dim, (long long)ssz[dim]);
      goto end;
    }
    if (v < 0) v += ssz[dim];
    int64_t so = 0, xo = 0;
    for (int d = 0; d < nd; d++) {
      so += (d == dim ? v : co[d]) * sst[d];
      xo += co[d] * xst[d];
    }
    bool first = cnt[so] == 0;
    if (fl) {
      double x = wk_load_f64(xp + (size_t)xo * es, dt), *t = &acc[so];
      if (first)
        *t = x;
      else if (red == R_SUM || red == R_MEAN)
        *t += x;
      else if (red == R_PROD)
        *t *= x;
      else if (red == R_AMAX)
        *t = (isnan(*t) || isnan(x)) ? NAN : (x > *t ? x : *t);
      else
        *t = (isnan(*t) || isnan(x)) ? NAN : (x < *t ? x : *t);
    } else {
      int64_t x = wk_load_i64(xp + (size_t)xo * es, dt), *t = &iacc[so];
      if (first)
        *t = x;
      else if (red == R_SUM || red == R_MEAN)
        *t = (int64_t)((uint64_t)*t + (uint64_t)x);
      else if (red == R_PROD)
        *t = (int64_t)((uint64_t)*t * (uint64_t)x);
      else if (red == R_AMAX)
        *t = x > *t ? x : *t;
      else
        *t = x < *t ? x : *t;
    }
    cnt[so]++;
    for (int d = nd - 1; d >= 0; d--) { /* next index element */
      if (++co[d] < isz[d]) break;
      co[d] = 0;
    }
  }
  char *op = wk_tensor_data(out);
  for (int64_t i = 0; i < n; i++) {
    if (fl) {
      double v = acc[i];
      if (red == R_MEAN && cnt[i] > 1) v /= (double)cnt[i];
      wk_store_f64(op + (size_t)i * es, dt, v);
    } else {
      int64_t v = iacc[i];
      if (red == R_MEAN && cnt[i] > 1) {
        int64_t q = v / cnt[i];
        if ((v % cnt[i] != 0) && ((v < 0) != (cnt[i] < 0))) q--; /* floor */
        v = q;
      }
      wk_store_i64(op + (size_t)i * es, dt, v);
    }
  }
end:
  free(acc);
  free(iacc);
  free(cnt);
  wk_release(sc);
  wk_release(ic);
  wk_release(srcc);
  if (s) {
    wk_release(out);
    return s;
  }
  outs[0] = WK_VT(out);
  return WK_OK;
}

/* ---- unique, unique_consecutive (no dim), mode: one sort of (value, position) keys ---------------------------
 * The same results as the core's composites (core/composite_linalg.c), which stay the kernels of other devices and
 * of unique's dim form: a stable order (ties by position), NaN last and never equal to anything (each NaN is its
 * own group), -0 equal to 0; values are copied bit for bit from the input. */
typedef struct {
  union {
    double f;
    int64_t i;
  } v;
  int64_t pos;
} ukey;
static bool ueq(const ukey *a, const ukey *b, bool fl) { return fl ? a->v.f == b->v.f : a->v.i == b->v.i; }
/* a strictly before b (values only: the merge sort below is stable, so equal values keep their positions' order) */
static inline bool ult_f(const ukey *a, const ukey *b) {
  bool an = a->v.f != a->v.f, bn = b->v.f != b->v.f;
  return an || bn ? !an && bn : a->v.f < b->v.f;
}
static inline bool ult_i(const ukey *a, const ukey *b) { return a->v.i < b->v.i; }
/* Stable bottom-up merge sort of k[0..n) (tmp: n more keys): ascending, NaN last, equal values in position order
 * (keys are loaded in position order), with the comparison inlined (qsort's calls through a pointer cost ~2x here). */
#define USORT(NAME, LT)                                                                  \
  static void NAME(ukey *k, ukey *tmp, int64_t n) {                                      \
    for (int64_t i = 0; i + 1 < n; i += 2)                                               \
      if (LT(&k[i + 1], &k[i])) {                                                        \
        ukey t = k[i];                                                                   \
        k[i] = k[i + 1], k[i + 1] = t;                                                   \
      }                                                                                  \
    ukey *a = k, *b = tmp;                                                               \
    for (int64_t w = 2; w < n; w *= 2) {                                                 \
      for (int64_t lo = 0; lo < n; lo += 2 * w) {                                        \
        int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;     \
        int64_t i = lo, j = mid, o = lo;                                                 \
        while (i < mid && j < hi) b[o++] = LT(&a[j], &a[i]) ? a[j++] : a[i++];           \
        while (i < mid) b[o++] = a[i++];                                                 \
        while (j < hi) b[o++] = a[j++];                                                  \
      }                                                                                  \
      ukey *t = a;                                                                       \
      a = b, b = t;                                                                      \
    }                                                                                    \
    if (a != k) memcpy(k, a, sizeof(ukey) * (size_t)n);                                  \
  }
USORT(usort_f, ult_f)
USORT(usort_i, ult_i)
/* Sorts n keys (loaded in position order) stably; false when out of memory. */
static bool usort(ukey *k, int64_t n, bool fl) {
  if (n < 2) return true;
  ukey *tmp = malloc(sizeof(ukey) * (size_t)n);
  if (!tmp) return false;
  if (fl)
    usort_f(k, tmp, n);
  else
    usort_i(k, tmp, n);
  free(tmp);
  return true;
}
/* n keys of the contiguous data p (element stride st elements) */
static void load_keys(ukey *k, const char *p, int64_t n, int64_t st, wk_dtype dt, bool fl) {
  size_t es = wk_dtype_size(dt);
  for (int64_t j = 0; j < n; j++) {
    const char *e = p + (size_t)(j * st) * es;
    if (fl)
      k[j].v.f = wk_load_f64(e, dt);
    else
      k[j].v.i = wk_load_i64(e, dt);
    k[j].pos = j;
  }
}

/* The rows (dim given: the slices along dim, as [n, w]; else the n elements, w = 1) of the contiguous copy, as keys. */
typedef struct {
  const ukey *k; /* [n, w] row-major */
  int64_t w;
  bool fl;
} rows_ctx;
static int key_cmp(const ukey *a, const ukey *b, bool fl) {
  if (fl) {
    bool an = a->v.f != a->v.f, bn = b->v.f != b->v.f;
    if (an != bn) return an ? 1 : -1;
    if (!an && a->v.f != b->v.f) return a->v.f < b->v.f ? -1 : 1;
    return 0;
  }
  return a->v.i != b->v.i ? (a->v.i < b->v.i ? -1 : 1) : 0;
}
/* lexicographic, NaN last, ties by row position: what stable sorts column by column from the last give */
static int row_cmp(const void *x, const void *y, void *cp) {
  const rows_ctx *c = cp;
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  for (int64_t q = 0; q < c->w; q++) {
    int r = key_cmp(&c->k[a * c->w + q], &c->k[b * c->w + q], c->fl);
    if (r) return r;
  }
  return (a > b) - (a < b);
}
static bool row_eq(const rows_ctx *c, int64_t a, int64_t b) {
  for (int64_t q = 0; q < c->w; q++)
    if (!ueq(&c->k[a * c->w + q], &c->k[b * c->w + q], c->fl)) return false;
  return true;
}

/* unique_consecutive without dim: one typed pass marks where each run of equal elements starts (NaN never equals
 * anything, -0 equals 0), a second writes the runs' first elements, the inverse and the counts. */
#define UC_SCAN(T)                                                                \
  do {                                                                            \
    const T *v_ = (const T *)p;                                                   \
    for (int64_t j = 0; j < n; j++)                                               \
      if (j == 0 || !(v_[j] == v_[j - 1])) starts[g++] = j;                       \
  } while (0)
static wk_status unique_consec_flat(const wk_kernel_ctx *ctx, wk_tensor *self, bool want_inv, bool want_cnt,
                                    wk_value *outs) {
  wk_dtype dt = wk_tensor_dtype(self);
  size_t es = wk_dtype_size(dt);
  int64_t n = wk_tensor_numel(self), z = 0, g = 0;
  wk_tensor *sc = wk_contiguous(self), *vals = NULL, *inv = NULL, *cnt = NULL;
  int64_t *starts = malloc(sizeof(int64_t) * (size_t)(n + 1));
  wk_status s = WK_OK;
  if (!sc || !starts) {
    s = sc ? wk_error(WK_ERR_NO_MEMORY, "%s(): out of memory for %lld elements", wk_op_name(ctx->op), (long long)n)
           : wk_last_error();
    goto end;
  }
  const char *p = wk_tensor_data(sc);
  switch (dt) {
    case WK_F32: UC_SCAN(float); break;
    case WK_F64: UC_SCAN(double); break;
    case WK_I64: UC_SCAN(int64_t); break;
    case WK_I32: UC_SCAN(int32_t); break;
    case WK_I16: UC_SCAN(int16_t); break;
    case WK_I8: UC_SCAN(int8_t); break;
    case WK_U8: UC_SCAN(uint8_t); break;
    case WK_BOOL: UC_SCAN(bool); break;
    default: /* f16, bf16: compared as their float values */
      for (int64_t j = 0; j < n; j++)
        if (j == 0 || !(wk_load_f64(p + (size_t)j * es, dt) == wk_load_f64(p + (size_t)(j - 1) * es, dt)))
          starts[g++] = j;
  }
  starts[g] = n;
  vals = wk_empty(&g, 1, (wk_options){.dtype = dt});
  inv = want_inv ? wk_empty(wk_tensor_sizes(self), wk_tensor_dim(self), (wk_options){.dtype = WK_I64})
                 : wk_empty(&z, 1, (wk_options){.dtype = WK_I64});
  cnt = wk_empty(want_cnt ? &g : &z, 1, (wk_options){.dtype = WK_I64});
  if (!vals || !inv || !cnt) {
    s = wk_last_error();
    goto end;
  }
  char *vp = wk_tensor_data(vals);
  int64_t *ip = want_inv ? wk_tensor_data(inv) : NULL, *cp = want_cnt ? wk_tensor_data(cnt) : NULL;
  for (int64_t q = 0; q < g; q++) {
    cpu_copy_elem(vp + (size_t)q * es, p + (size_t)starts[q] * es, es);
    if (cp) cp[q] = starts[q + 1] - starts[q];
    if (ip)
      for (int64_t r = starts[q]; r < starts[q + 1]; r++) ip[r] = q;
  }
end:
  free(starts);
  wk_release(sc);
  if (s) {
    wk_release(vals);
    wk_release(inv);
    wk_release(cnt);
    return s;
  }
  outs[0] = WK_VT(vals), outs[1] = WK_VT(inv), outs[2] = WK_VT(cnt);
  return WK_OK;
}

static wk_status k_unique(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  bool consec = !strcmp(wk_op_name(ctx->op), "unique_consecutive");
  wk_tensor *self = T(0);
  bool want_inv = args[consec ? 1 : 2].u.b, want_cnt = args[consec ? 2 : 3].u.b;
  const wk_value *dimv = &args[consec ? 3 : 4];
  bool by_dim = dimv->tag == WK_V_INT;
  if (consec && !by_dim) return unique_consec_flat(ctx, self, want_inv, want_cnt, outs);
  if (!consec && want_cnt) want_inv = true; /* _unique2 returns the inverse with the counts */
  if (by_dim) want_inv = want_cnt = true;    /* unique_dim and unique_consecutive(dim) return all three */
  wk_dtype dt = wk_tensor_dtype(self);
  bool fl = wk_dtype_is_floating(dt);
  size_t es = wk_dtype_size(dt);
  int nd = wk_tensor_dim(self);
  int dim = by_dim ? (int)(dimv->u.i < 0 ? dimv->u.i + nd : dimv->u.i) : 0;
  int64_t total = wk_tensor_numel(self), z = 0, n = by_dim ? cpu_nsize(self, dim) : total, inner = 1;
  for (int d = dim + 1; by_dim && d < nd; d++) inner *= cpu_nsize(self, d);
  int64_t w = by_dim ? (n ? total / n : 0) : 1, outer = by_dim && inner * n != 0 ? total / (inner * n) : 1;
  wk_tensor *sc = wk_contiguous(self), *vals = NULL, *inv = NULL, *cnt = NULL;
  ukey *k = malloc(sizeof(ukey) * (size_t)(total > 0 ? total : 1));
  int64_t *order = malloc(sizeof(int64_t) * (size_t)(n + 1)), *starts = malloc(sizeof(int64_t) * (size_t)(n + 1));
  wk_status s = WK_OK;
  if (!sc || !k || !order || !starts) {
    s = sc ? wk_error(WK_ERR_NO_MEMORY, "%s(): out of memory", wk_op_name(ctx->op)) : wk_last_error();
    goto end;
  }
  const char *p = wk_tensor_data(sc);
  /* key [r, c] of row r (position r along dim), column c = (o, i) in order */
  for (int64_t r = 0; r < n; r++)
    for (int64_t o = 0; o < outer; o++)
      for (int64_t i = 0; i < inner; i++) {
        const char *e = p + (size_t)((o * n + r) * inner + i) * es;
        ukey *kk = &k[r * w + o * inner + i];
        if (fl)
          kk->v.f = wk_load_f64(e, dt);
        else
          kk->v.i = wk_load_i64(e, dt);
        kk->pos = r;
      }
  rows_ctx rc = {k, w, fl};
  for (int64_t r = 0; r < n; r++) order[r] = r;
  if (!consec && n > 1) {
    if (w == 1) {
      if (!usort(k, n, fl)) {
        s = wk_error(WK_ERR_NO_MEMORY, "%s(): out of memory", wk_op_name(ctx->op));
        goto end;
      }
    } else
      qsort_r(order, (size_t)n, sizeof(int64_t), row_cmp, &rc);
    if (w == 1)
      for (int64_t r = 0; r < n; r++) order[r] = k[r].pos;
  }
  /* after a 1-column sort the keys are in sorted order: compare neighbours there (row_eq on positions r, r - 1) */
  bool sorted_keys = !consec && n > 1 && w == 1;
  int64_t g = 0;
  for (int64_t r = 0; r < n; r++) {
    bool same = r > 0 && (sorted_keys ? ueq(&k[r], &k[r - 1], fl) : row_eq(&rc, order[r], order[r - 1]));
    if (!same) starts[g++] = r;
  }
  starts[g] = n;
  g = 0;
  while (starts[g] != n) g++;
  if (by_dim) {
    int64_t vs[WK_MAX_DIMS];
    for (int d = 0; d < nd; d++) vs[d] = d == dim ? g : cpu_nsize(self, d);
    vals = wk_empty(vs, nd, (wk_options){.dtype = dt});
    inv = wk_empty(&n, 1, (wk_options){.dtype = WK_I64});
  } else {
    vals = wk_empty(&g, 1, (wk_options){.dtype = dt});
    inv = want_inv ? wk_empty(wk_tensor_sizes(self), nd, (wk_options){.dtype = WK_I64})
                   : wk_empty(&z, 1, (wk_options){.dtype = WK_I64});
  }
  cnt = want_cnt ? wk_empty(&g, 1, (wk_options){.dtype = WK_I64}) : wk_empty(&z, 1, (wk_options){.dtype = WK_I64});
  if (!vals || !inv || !cnt) {
    s = wk_last_error();
    goto end;
  }
  char *vp = wk_tensor_data(vals);
  int64_t *ip = want_inv ? wk_tensor_data(inv) : NULL, *cp = want_cnt ? wk_tensor_data(cnt) : NULL;
  for (int64_t q = 0; q < g; q++) {
    int64_t r0 = order[starts[q]]; /* the group's first row (by position among equal rows) */
    for (int64_t o = 0; o < outer; o++)
      for (int64_t i = 0; i < inner; i++)
        cpu_copy_elem(vp + (size_t)((o * g + q) * inner + i) * es, p + (size_t)((o * n + r0) * inner + i) * es, es);
    if (cp) cp[q] = starts[q + 1] - starts[q];
    if (ip)
      for (int64_t r = starts[q]; r < starts[q + 1]; r++) ip[order[r]] = q;
  }
end:
  free(k);
  free(order);
  free(starts);
  wk_release(sc);
  if (s) {
    wk_release(vals);
    wk_release(inv);
    wk_release(cnt);
    return s;
  }
  outs[0] = WK_VT(vals), outs[1] = WK_VT(inv), outs[2] = WK_VT(cnt);
  return WK_OK;
}

/* mode(self, dim, keepdim): per line, the first longest run of equal sorted keys (the smallest most frequent
 * value) and the position of its last element (the last occurrence, as PyTorch's cpu kernel). */
typedef struct {
  const char *src;
  char *vals;
  int64_t *inds;
  wk_dtype dt;
  size_t es;
  int64_t n, inner; /* line length, the stride of dim (elements) */
  bool fl;
  int failed;
} mode_job;
static void mode_lines(void *jp, int64_t b, int64_t e) {
  mode_job *j = jp;
  ukey *k = malloc(sizeof(ukey) * (size_t)j->n);
  if (!k) {
    __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
    return;
  }
  for (int64_t l = b; l < e; l++) {
    int64_t o = l / j->inner, i = l % j->inner;
    const char *base = j->src + (size_t)(o * j->n * j->inner + i) * j->es;
    load_keys(k, base, j->n, j->inner, j->dt, j->fl);
    if (!usort(k, j->n, j->fl)) {
      __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
      break;
    }
    int64_t best = 0, best_len = 0, start = 0;
    for (int64_t q = 1; q <= j->n; q++)
      if (q == j->n || !ueq(&k[q], &k[q - 1], j->fl)) {
        if (q - start > best_len) best_len = q - start, best = q - 1;
        start = q;
      }
    int64_t pos = k[best].pos;
    cpu_copy_elem(j->vals + (size_t)l * j->es, base + (size_t)(pos * j->inner) * j->es, j->es);
    j->inds[l] = pos;
  }
  free(k);
}
static wk_status k_mode(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *self = T(0);
  int nd = wk_tensor_dim(self);
  int dim = (int)(args[1].u.i < 0 ? args[1].u.i + (nd > 0 ? nd : 1) : args[1].u.i);
  wk_tensor *sc = wk_contiguous(self), *v = wk_meta_empty(ctx, 0), *ix = wk_meta_empty(ctx, 1);
  if (!sc || !v || !ix) {
    wk_release(sc);
    wk_release(v);
    wk_release(ix);
    return wk_last_error();
  }
  mode_job j = {wk_tensor_data(sc), wk_tensor_data(v), wk_tensor_data(ix), wk_tensor_dtype(self),
                wk_dtype_size(wk_tensor_dtype(self)), nd ? cpu_nsize(self, dim) : 1, 1,
                wk_dtype_is_floating(wk_tensor_dtype(self)), 0};
  for (int d = dim + 1; d < nd; d++) j.inner *= cpu_nsize(self, d);
  int64_t lines = j.n ? wk_tensor_numel(self) / j.n : 0;
  if (lines > 0) wk_parallel_for(0, lines, cpu_grain_for(j.n * 16), mode_lines, &j);
  wk_release(sc);
  if (j.failed) {
    wk_release(v);
    wk_release(ix);
    return wk_error(WK_ERR_NO_MEMORY, "mode(): out of memory for a line of %lld elements", (long long)j.n);
  }
  outs[0] = WK_VT(v), outs[1] = WK_VT(ix);
  return WK_OK;
}

/* ---- masked_scatter(self, mask, source): self and mask broadcast to the result; the k-th true element (row-major)
 * takes source's k-th element. Too short a source fails after counting the mask's trues (the composite's message). */
static wk_status k_masked_scatter(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *self = T(0), *mask = T(1), *src = T(2);
  const wk_meta_out *mo = &ctx->meta[0];
  wk_tensor *out = wk_meta_empty(ctx, 0), *srcc = wk_contiguous(src);
  wk_tensor *xe = wk_expand(self, mo->sizes, mo->ndim), *me = wk_expand(mask, mo->sizes, mo->ndim);
  wk_status s = WK_OK;
  if (!out || !srcc || !xe || !me) {
    s = wk_last_error();
    goto end;
  }
  {
    int nd = mo->ndim;
    wk_dtype dt = wk_tensor_dtype(self);
    size_t es = wk_dtype_size(dt);
    int64_t n = wk_tensor_numel(out), ns = wk_tensor_numel(src), k = 0, co[WK_MAX_DIMS] = {0};
    const char *xp = (const char *)wk_tensor_data(xe), *mp = (const char *)wk_tensor_data(me);
    const char *sp = wk_tensor_data(srcc);
    char *op = wk_tensor_data(out);
    int64_t xo = 0, mo_ = 0;
    for (int64_t e = 0; e < n; e++) {
      if (mp[mo_]) {
        if (k < ns) cpu_copy_elem(op + (size_t)e * es, sp + (size_t)k * es, es);
        k++;
      } else {
        cpu_copy_elem(op + (size_t)e * es, xp + (size_t)xo * es, es);
      }
      for (int d = nd - 1; d >= 0; d--) { /* next element: strided offsets of the broadcast views */
        xo += cpu_nstride(xe, d), mo_ += cpu_nstride(me, d);
        if (++co[d] < mo->sizes[d]) break;
        xo -= co[d] * cpu_nstride(xe, d), mo_ -= co[d] * cpu_nstride(me, d);
        co[d] = 0;
      }
    }
    if (k > ns)
      s = wk_error(WK_ERR_SHAPE, "masked_scatter(): expected source to have at least %lld elements (the mask's true "
                   "count), got %lld", (long long)k, (long long)ns);
  }
end:
  wk_release(srcc);
  wk_release(xe);
  wk_release(me);
  if (s) {
    wk_release(out);
    return s;
  }
  outs[0] = WK_VT(out);
  return WK_OK;
}

wk_status cpu_register_index_reduce(void) {
  wk_status s = cpu_reg("scatter_reduce.two", k_scatter_reduce, NULL);
  if (!s) s = cpu_reg("mode", k_mode, NULL);
  if (!s) s = cpu_reg("masked_scatter", k_masked_scatter, NULL);
  if (!s) s = cpu_reg("unique", k_unique, NULL);
  if (!s) s = cpu_reg("unique_consecutive", k_unique, NULL);
  return s;
}
