/* cpu plugin: scatter_reduce.two (issue 21): self's copy with src's elements
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

wk_status cpu_register_index_reduce(void) { return cpu_reg("scatter_reduce.two", k_scatter_reduce, NULL); }
