/* cpu plugin: index_put (advanced-indexing assignment, issue 21): self's copy with values written (or, with
 * accumulate, added) at the positions the index tensors name. Boolean masks stand for their nonzero() columns;
 * the index tensors broadcast to one shape B; values broadcast to PyTorch's indexing-result shape (B in place of
 * adjacent indexed dims, else B first). Elements are visited in index order, so with duplicate indices the last
 * write wins and sums are deterministic (PyTorch's cpu kernel). The work splits over the non-indexed elements
 * (each thread owns a slice of every indexed row), so duplicates never race. The core's composite
 * (core/composite_linalg.c) is the kernel of other devices; the meta function checked dtypes and mask shapes. */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

typedef struct {
  char *out;
  const char *val;
  const int64_t *off, *voff;   /* per index position b: element offsets into out and values */
  const int64_t *roff, *rvoff; /* per non-indexed position r: element offsets into out and values (NULL: r) */
  int64_t nb;
  wk_dtype dt;
  size_t es;
  bool acc;
} ip_job;

#define IP_LOOP(T, OP)                                                               \
  do {                                                                               \
    T *o_ = (T *)j->out;                                                             \
    const T *v_ = (const T *)j->val;                                                 \
    for (int64_t b = 0; b < j->nb; b++) {                                            \
      T *ob = o_ + j->off[b];                                                        \
      const T *vb = v_ + j->voff[b];                                                 \
      if (!j->roff && !j->rvoff)                                                     \
        for (int64_t r = rb; r < re; r++) OP(ob[r], vb[r]);                          \
      else                                                                           \
        for (int64_t r = rb; r < re; r++)                                            \
          OP(ob[j->roff ? j->roff[r] : r], vb[j->rvoff ? j->rvoff[r] : r]);          \
    }                                                                                \
  } while (0)
#define IP_SET(a, b) ((a) = (b))
#define IP_ADD(a, b) ((a) += (b))
#define IP_OR(a, b) ((a) = (a) || (b))

static void ip_rows(void *p, int64_t rb, int64_t re) {
  const ip_job *j = p;
  if (!j->acc) {
    switch (j->es) {
      case 1: IP_LOOP(uint8_t, IP_SET); return;
      case 2: IP_LOOP(uint16_t, IP_SET); return;
      case 4: IP_LOOP(uint32_t, IP_SET); return;
      default: IP_LOOP(uint64_t, IP_SET); return;
    }
  }
  switch (j->dt) {
    case WK_F32: IP_LOOP(float, IP_ADD); return;
    case WK_F64: IP_LOOP(double, IP_ADD); return;
    case WK_I64: IP_LOOP(int64_t, IP_ADD); return;
    case WK_I32: IP_LOOP(int32_t, IP_ADD); return;
    case WK_I16: IP_LOOP(int16_t, IP_ADD); return;
    case WK_I8: IP_LOOP(int8_t, IP_ADD); return;
    case WK_U8: IP_LOOP(uint8_t, IP_ADD); return;
    case WK_BOOL: IP_LOOP(bool, IP_OR); return;
    default: /* f16, bf16: each sum rounded to the dtype, as PyTorch adds in it */
      for (int64_t b = 0; b < j->nb; b++)
        for (int64_t r = rb; r < re; r++) {
          char *o = j->out + (size_t)(j->off[b] + (j->roff ? j->roff[r] : r)) * j->es;
          const char *v = j->val + (size_t)(j->voff[b] + (j->rvoff ? j->rvoff[r] : r)) * j->es;
          wk_store_f64(o, j->dt, wk_load_f64(o, j->dt) + wk_load_f64(v, j->dt));
        }
  }
}

/* The index tensors of index_put as one int64 tensor per indexed dim of self (NULL elsewhere): integer ones
 * converted, boolean masks replaced by their nonzero() columns (new references in idx). */
static wk_status ip_indices(const wk_value *list, int nd, wk_tensor **idx) {
  int dim = 0;
  for (int i = 0; i < list->len; i++) {
    wk_tensor *t = list->u.tensors[i];
    if (!t) {
      dim++;
      continue;
    }
    if (wk_tensor_dtype(t) != WK_BOOL && wk_tensor_dtype(t) != WK_U8) {
      if (dim >= nd) return wk_error(WK_ERR_INDEX, "index_put(): too many indices for tensor of dimension %d", nd);
      if (!(idx[dim++] = wk_kernel_cast(t, WK_I64))) return wk_last_error();
      continue;
    }
    int k = wk_tensor_dim(t);
    if (k == 0) return wk_error(WK_ERR_UNSUPPORTED, "index_put(): a 0-d boolean index is not supported");
    if (dim + k > nd) return wk_error(WK_ERR_INDEX, "index_put(): too many indices for tensor of dimension %d", nd);
    wk_tensor *m = wk_contiguous(t);
    if (!m) return wk_last_error();
    const uint8_t *mp = wk_tensor_data(m);
    int64_t n = wk_tensor_numel(m), cnt = 0;
    for (int64_t e = 0; e < n; e++) cnt += mp[e] != 0;
    int64_t ms[WK_MAX_DIMS];
    memcpy(ms, wk_tensor_sizes(m), sizeof(int64_t) * (size_t)k);
    int64_t *cols[WK_MAX_DIMS];
    for (int q = 0; q < k; q++) {
      idx[dim + q] = cpu_empty(&cnt, 1, WK_I64);
      if (!idx[dim + q]) {
        wk_release(m);
        return wk_last_error();
      }
      cols[q] = wk_tensor_data(idx[dim + q]);
    }
    int64_t coord[WK_MAX_DIMS] = {0}, w = 0;
    for (int64_t e = 0; e < n; e++) {
      if (mp[e])
        for (int q = 0; q < k; q++) cols[q][w] = coord[q];
      w += mp[e] != 0;
      for (int q = k - 1; q >= 0 && ++coord[q] == ms[q]; q--) coord[q] = 0;
    }
    wk_release(m);
    dim += k;
  }
  return WK_OK;
}

static wk_status k_index_put(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *self = WK_ARG_T(0), *v = WK_ARG_T(2);
  bool acc = WK_ARG_B(3);
  int nd = wk_tensor_dim(self);
  const int64_t *xs = wk_tensor_sizes(self);
  wk_dtype dt = wk_tensor_dtype(self);
  wk_tensor *idx[WK_MAX_DIMS] = {NULL}, *bidx[WK_MAX_DIMS] = {NULL}, *out = NULL, *ve = NULL;
  int64_t *off = NULL, *voff = NULL, *roff = NULL, *rvoff = NULL;
  wk_status s = ip_indices(&args[1], nd, idx);
  if (!s && !(out = cpu_empty(xs, nd, dt))) s = wk_last_error();
  if (!s) s = cpu_copy(out, self);
  if (s) goto end;
  /* the broadcast shape B of the index tensors */
  int64_t bs[WK_MAX_DIMS];
  int bnd = 0, first = -1, last = -1, ni = 0;
  for (int d = 0; d < nd; d++) {
    if (!idx[d]) continue;
    if (first < 0) first = d;
    last = d, ni++;
    int tn = wk_tensor_dim(idx[d]), m = bnd > tn ? bnd : tn;
    const int64_t *ts = wk_tensor_sizes(idx[d]);
    int64_t nb_[WK_MAX_DIMS];
    for (int i = 0; i < m; i++) {
      int ib = i - (m - bnd), it = i - (m - tn);
      int64_t a = ib >= 0 ? bs[ib] : 1, b = it >= 0 ? ts[it] : 1;
      if (a != b && a != 1 && b != 1) {
        s = wk_error(WK_ERR_SHAPE, "index_put(): shape mismatch: indexing tensors could not be broadcast together");
        goto end;
      }
      nb_[i] = a == 1 ? b : a;
    }
    memcpy(bs, nb_, sizeof(int64_t) * (size_t)m);
    bnd = m;
  }
  bool adjacent = ni > 0 && last - first + 1 == ni;
  int pre = adjacent ? first : 0;
  /* the indexing result's shape rs: [pre..., B..., post...] (adjacent) or [B..., rest...]; rd[i]: self's dim of
   * result dim i (-1 for B's dims) */
  int64_t rs[WK_MAX_DIMS * 2];
  int rd[WK_MAX_DIMS * 2], rn = 0;
  for (int d = 0; d < pre; d++) rd[rn] = d, rs[rn++] = xs[d];
  for (int i = 0; i < bnd; i++) rd[rn] = -1, rs[rn++] = bs[i];
  for (int d = 0; d < nd; d++)
    if (!idx[d] && (!adjacent || d > last)) rd[rn] = d, rs[rn++] = xs[d];
  if (rn > WK_MAX_DIMS) {
    s = wk_error(WK_ERR_SHAPE, "index_put(): the indexing result has more than %d dims", WK_MAX_DIMS);
    goto end;
  }
  int vn = wk_tensor_dim(v);
  bool ok = vn <= rn;
  for (int i = 0; ok && i < vn; i++) {
    int64_t a = wk_tensor_sizes(v)[vn - 1 - i], b = rs[rn - 1 - i];
    ok = a == b || a == 1;
  }
  if (!ok) {
    char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX];
    s = wk_error(WK_ERR_SHAPE,
                 "index_put(): shape mismatch: value tensor of shape %s cannot be broadcast to indexing result of "
                 "shape %s",
                 wk_sizes_str(wk_tensor_sizes(v), vn, a, sizeof a), wk_sizes_str(rs, rn, b, sizeof b));
    goto end;
  }
  if (!(ve = wk_expand(v, rs, rn))) {
    s = wk_last_error();
    goto end;
  }
  const int64_t *vst = wk_tensor_strides(ve);
  int64_t nb = 1, nr = 1, ost[WK_MAX_DIMS];
  for (int i = 0; i < bnd; i++) nb *= bs[i];
  {
    int64_t st_ = 1;
    for (int d = nd - 1; d >= 0; d--) ost[d] = st_, st_ *= xs[d];
  }
  for (int i = 0; i < rn; i++)
    if (rd[i] >= 0) nr *= rs[i];
  if (nb == 0 || nr == 0) goto end; /* nothing to write (nothing indexed: B is [] and nb 1, the whole of self) */
  off = malloc(sizeof(int64_t) * (size_t)nb);
  voff = malloc(sizeof(int64_t) * (size_t)nb);
  if (!off || !voff) {
    s = wk_error(WK_ERR_NO_MEMORY, "index_put(): out of memory for %lld index positions", (long long)nb);
    goto end;
  }
  /* off[b]: the indexed dims' offset in out (indices wrapped, bounds checked); voff[b]: B's offset in values */
  memset(off, 0, sizeof(int64_t) * (size_t)nb);
  for (int d = 0; d < nd; d++)
    if (idx[d] && !(bidx[d] = wk_contiguous(idx[d]))) {
      s = wk_last_error();
      goto end;
    }
  for (int d = 0; d < nd; d++) {
    if (!idx[d]) continue;
    /* idx[d]'s strides broadcast to B (0 where broadcast) walk its data in B's order */
    int tn = wk_tensor_dim(bidx[d]);
    const int64_t *ts = wk_tensor_sizes(bidx[d]);
    int64_t tst[WK_MAX_DIMS], c[WK_MAX_DIMS] = {0}, st_ = 1;
    for (int i = bnd - 1; i >= 0; i--) {
      int it = i - (bnd - tn);
      tst[i] = it >= 0 && ts[it] != 1 ? st_ : 0;
      if (it >= 0) st_ *= ts[it];
    }
    const int64_t *ip = wk_tensor_data(bidx[d]);
    int64_t sz = xs[d], pos = 0;
    for (int64_t b = 0; b < nb; b++) {
      int64_t iv = ip[pos];
      if (iv < -sz || iv >= sz) {
        s = wk_error(WK_ERR_INDEX, "index_put(): index %lld is out of bounds for dimension %d with size %lld",
                     (long long)iv, d, (long long)sz);
        goto end;
      }
      off[b] += (iv < 0 ? iv + sz : iv) * ost[d];
      for (int i = bnd - 1; i >= 0; i--) {
        pos += tst[i];
        if (++c[i] < bs[i]) break;
        pos -= tst[i] * bs[i];
        c[i] = 0;
      }
    }
  }
  {
    int64_t c[WK_MAX_DIMS] = {0}, pos = 0;
    for (int64_t b = 0; b < nb; b++) {
      voff[b] = pos;
      for (int i = bnd - 1; i >= 0; i--) {
        pos += vst[pre + i];
        if (++c[i] < bs[i]) break;
        pos -= vst[pre + i] * bs[i];
        c[i] = 0;
      }
    }
  }
  /* the non-indexed positions r (result order): their offsets in out and values; identity tables are skipped */
  bool rid = true, vid = true;
  int64_t expect = 1;
  for (int i = rn - 1; i >= 0; i--) {
    if (rd[i] < 0) continue;
    rid = rid && (rs[i] == 1 || ost[rd[i]] == expect);
    vid = vid && (rs[i] == 1 || vst[i] == expect);
    expect *= rs[i];
  }
  if (!rid || !vid) {
    roff = malloc(sizeof(int64_t) * (size_t)nr);
    rvoff = malloc(sizeof(int64_t) * (size_t)nr);
    if (!roff || !rvoff) {
      s = wk_error(WK_ERR_NO_MEMORY, "index_put(): out of memory for %lld positions", (long long)nr);
      goto end;
    }
    int64_t c[WK_MAX_DIMS * 2] = {0}, po = 0, pv = 0;
    for (int64_t r = 0; r < nr; r++) {
      roff[r] = po, rvoff[r] = pv;
      for (int i = rn - 1; i >= 0; i--) {
        if (rd[i] < 0) continue;
        po += ost[rd[i]], pv += vst[i];
        if (++c[i] < rs[i]) break;
        po -= ost[rd[i]] * rs[i], pv -= vst[i] * rs[i];
        c[i] = 0;
      }
    }
  }
  ip_job j = {wk_tensor_data(out), wk_tensor_data(ve), off, voff, roff, rvoff, nb, dt, wk_dtype_size(dt), acc};
  cpu_par(nr, nb, ip_rows, &j);
end:
  free(off);
  free(voff);
  free(roff);
  free(rvoff);
  wk_release(ve);
  for (int d = 0; d < WK_MAX_DIMS; d++) {
    wk_release(idx[d]);
    wk_release(bidx[d]);
  }
  if (s) {
    wk_release(out);
    return s;
  }
  outs[0] = WK_VT(out);
  return WK_OK;
}

wk_status cpu_register_index_put(void) { return cpu_reg("index_put", k_index_put, NULL); }
