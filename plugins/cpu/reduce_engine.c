/* cpu plugin: the reduction engine (see reduce.h) behind sum, mean, prod,
 * max/min, argmax/argmin, var/std, norm, logsumexp and all/any. A reduction sees its
 * input as a contiguous [outer, n, inner] array (the reduced dims in the middle;
 * when they are not consecutive in a contiguous input, a copy moves them last).
 * Each output element's n values are cut into fixed blocks whose partial
 * results combine in block order, with the same arithmetic on every path, so
 * results depend neither on the thread count nor on the input's layout. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reduce.h"

#define RBLOCK 16384 /* fixed block of a row: partials combine in this grouping */
#define RCHUNK 256   /* elements converted to double / int64 at a time */
#define RTILE 4096   /* most output columns reduced together when the reduced dims are not innermost */

/* ---- plan: the reduced dims, the output shape and the data layout ------------- */

/* Plans a reduction of x over dims (ndims == 0: every dim); the meta function
 * checked the dims, so they are only wrapped here. */
wk_status cpu_reduce_plan(rplan *p, wk_tensor *x, const int64_t *dims, int ndims) {
  memset(p, 0, sizeof *p);
  wk_reduce_layout l;
  wk_reduce_layout_of(&l, x, dims, ndims);
  int nd = l.ndim;
  const int64_t *sz = wk_tensor_sizes(x);
  const bool *red = l.reduced;
  p->rows = l.rows;
  p->n = l.n;
  p->outer = p->rows;
  p->inner = 1;
  /* Reduced dims (of size > 1) with no kept dim between them, in a contiguous
   * input, need no copy: the kept dims before and after are outer and inner. */
  int first = -1, last = -1;
  for (int d = 0; d < nd; d++)
    if (red[d] && sz[d] != 1) {
      if (first < 0) first = d;
      last = d;
    }
  bool consecutive = true;
  for (int d = first + 1; d < last; d++)
    if (!red[d] && sz[d] != 1) consecutive = false;
  if (nd == 0 || p->rows * p->n == 0 || (consecutive && wk_tensor_is_contiguous(x))) {
    if (first >= 0 && p->rows * p->n > 0) {
      p->inner = 1;
      for (int d = last + 1; d < nd; d++)
        if (!red[d]) p->inner *= sz[d];
      p->outer = p->rows / p->inner;
    }
    p->c = wk_retain(x);
  } else {
    wk_tensor *v = wk_permute(x, l.perm, nd);
    p->c = wk_contiguous(v);
    wk_release(v);
  }
  return p->c ? WK_OK : wk_last_error();
}

/* ---- the row reducer ----------------------------------------------------------------- */


typedef struct {
  rkind k;
  const char *data;
  wk_dtype dt;
  int64_t es, rows, n, nb; /* nb: blocks per output element */
  int64_t outer, inner, tile, ntiles; /* column layout (inner > 1): tiles of `tile` columns */
  double p;                /* R_POW exponent */
  const double *param;     /* per-output shift (R_SQDEV, R_EXPSUM) */
  acc_t *res;              /* rows results */
  acc_t *parts;            /* rows * nb partials (split reductions only) */
} rjob;

static bool int_kind(rkind k) { return k >= R_SUM_I; }

static acc_t acc_init(rkind k) {
  acc_t a = {0, 0, -1};
  if (k == R_PROD) a.d = 1;
  if (k == R_PROD_I || k == R_ALL) a.i = 1;
  if (k == R_AMAX || k == R_MAX) a.d = -INFINITY;
  if (k == R_AMIN || k == R_MIN) a.d = INFINITY;
  return a;
}

void cpu_load_f64_run(const char *p, wk_dtype dt, int64_t n, double *o) {
  switch (dt) {
    case WK_F32: for (int64_t i = 0; i < n; i++) o[i] = ((const float *)p)[i]; break;
    case WK_F64: memcpy(o, p, sizeof(double) * (size_t)n); break;
    case WK_F16: for (int64_t i = 0; i < n; i++) o[i] = wk_f16_to_f32(((const uint16_t *)p)[i]); break;
    case WK_BF16: for (int64_t i = 0; i < n; i++) o[i] = wk_bf16_to_f32(((const uint16_t *)p)[i]); break;
    case WK_I8: for (int64_t i = 0; i < n; i++) o[i] = ((const int8_t *)p)[i]; break;
    case WK_U8: for (int64_t i = 0; i < n; i++) o[i] = ((const uint8_t *)p)[i]; break;
    case WK_I16: for (int64_t i = 0; i < n; i++) o[i] = ((const int16_t *)p)[i]; break;
    case WK_I32: for (int64_t i = 0; i < n; i++) o[i] = ((const int32_t *)p)[i]; break;
    case WK_I64: for (int64_t i = 0; i < n; i++) o[i] = (double)((const int64_t *)p)[i]; break;
    case WK_BOOL: for (int64_t i = 0; i < n; i++) o[i] = ((const bool *)p)[i]; break;
    default: for (int64_t i = 0; i < n; i++) o[i] = NAN; break;
  }
}

void cpu_load_i64_run(const char *p, wk_dtype dt, int64_t n, int64_t *o) {
  switch (dt) {
    case WK_I8: for (int64_t i = 0; i < n; i++) o[i] = ((const int8_t *)p)[i]; break;
    case WK_U8: for (int64_t i = 0; i < n; i++) o[i] = ((const uint8_t *)p)[i]; break;
    case WK_I16: for (int64_t i = 0; i < n; i++) o[i] = ((const int16_t *)p)[i]; break;
    case WK_I32: for (int64_t i = 0; i < n; i++) o[i] = ((const int32_t *)p)[i]; break;
    case WK_I64: memcpy(o, p, sizeof(int64_t) * (size_t)n); break;
    case WK_BOOL: for (int64_t i = 0; i < n; i++) o[i] = ((const bool *)p)[i]; break;
    default: for (int64_t i = 0; i < n; i++) o[i] = wk_load_i64(p + i * (int64_t)wk_dtype_size(dt), dt); break;
  }
}

/* Additive kinds keep four partial sums, by element position within the block
 * (chunks hold a multiple of four), for speed without changing the grouping. */
#define LANES(E)                                        \
  do {                                                  \
    int64_t t = 0;                                      \
    for (; t + 4 <= m; t += 4) {                        \
      lane[0] += E(t);                                  \
      lane[1] += E(t + 1);                              \
      lane[2] += E(t + 2);                              \
      lane[3] += E(t + 3);                              \
    }                                                   \
    for (; t < m; t++) lane[t & 3] += E(t);             \
  } while (0)
#define E_SUM(t) x[t]
#define E_SQDEV(t) ((x[t] - prm) * (x[t] - prm))
#define E_EXP(t) exp(x[t] - prm)
#define E_ABS(t) fabs(x[t])
#define E_SQ(t) (x[t] * x[t])
#define E_POW(t) pow(fabs(x[t]), j->p)
#define E_NZ(t) (double)(x[t] != 0)

/* Reduces elements [start, start + len) of row `row` in the double kinds. */
static acc_t block_f(const rjob *j, int64_t row, int64_t start, int64_t len) {
  acc_t a = acc_init(j->k);
  const char *base = j->data + (row * j->n + start) * j->es;
  double prm = j->param ? j->param[row] : 0, buf[RCHUNK], lane[4] = {0, 0, 0, 0};
  for (int64_t off = 0; off < len; off += RCHUNK) {
    int64_t m = len - off < RCHUNK ? len - off : RCHUNK;
    const double *x = buf;
    if (j->dt == WK_F64)
      x = (const double *)base + off;
    else
      cpu_load_f64_run(base + off * j->es, j->dt, m, buf);
    double s = a.d;
    switch (j->k) {
      case R_SUM: LANES(E_SUM); break;
      case R_SQDEV: LANES(E_SQDEV); break;
      case R_EXPSUM: LANES(E_EXP); break;
      case R_ABS: LANES(E_ABS); break;
      case R_SQ: LANES(E_SQ); break;
      case R_POW: LANES(E_POW); break;
      case R_NZ: LANES(E_NZ); break;
      case R_PROD: for (int64_t t = 0; t < m; t++) s *= x[t]; break;
      case R_AMAX:
      case R_AMIN:
        for (int64_t t = 0; t < m; t++) {
          double v = fabs(x[t]);
          if (v != v) { /* NaN propagates */
            a.d = v;
            return a;
          }
          if (j->k == R_AMAX ? v > s : v < s) s = v;
        }
        break;
      case R_MAX:
      case R_MIN:
        for (int64_t t = 0; t < m; t++) {
          double v = x[t];
          if (a.idx < 0 || v != v || (j->k == R_MAX ? v > a.d : v < a.d)) {
            a.d = v;
            a.idx = start + off + t;
            if (v != v) return a; /* the first NaN wins */
          }
        }
        s = a.d;
        break;
      case R_ANY:
        for (int64_t t = 0; t < m; t++)
          if (x[t] != 0) {
            a.i = 1;
            return a;
          }
        break;
      case R_ALL:
        for (int64_t t = 0; t < m; t++)
          if (x[t] == 0) {
            a.i = 0;
            return a;
          }
        break;
      default: break;
    }
    a.d = s;
  }
  if (j->k <= R_NZ) a.d = (lane[0] + lane[1]) + (lane[2] + lane[3]);
  return a;
}

/* Same for the int64 kinds (integer and bool inputs; sums and products wrap). */
static acc_t block_i(const rjob *j, int64_t row, int64_t start, int64_t len) {
  acc_t a = acc_init(j->k);
  const char *base = j->data + (row * j->n + start) * j->es;
  int64_t buf[RCHUNK];
  for (int64_t off = 0; off < len; off += RCHUNK) {
    int64_t m = len - off < RCHUNK ? len - off : RCHUNK;
    const int64_t *x = buf;
    if (j->dt == WK_I64)
      x = (const int64_t *)base + off;
    else
      cpu_load_i64_run(base + off * j->es, j->dt, m, buf);
    uint64_t s = (uint64_t)a.i;
    switch (j->k) {
      case R_SUM_I: for (int64_t t = 0; t < m; t++) s += (uint64_t)x[t]; break;
      case R_PROD_I: for (int64_t t = 0; t < m; t++) s *= (uint64_t)x[t]; break;
      case R_MAX_I:
      case R_MIN_I:
        for (int64_t t = 0; t < m; t++)
          if (a.idx < 0 || (j->k == R_MAX_I ? x[t] > a.i : x[t] < a.i)) {
            a.i = x[t];
            a.idx = start + off + t;
          }
        s = (uint64_t)a.i;
        break;
      default: break;
    }
    a.i = (int64_t)s;
  }
  return a;
}

/* Combines the partial of an earlier block (a) with a later one (b). */
static acc_t acc_combine(rkind k, acc_t a, acc_t b) {
  switch (k) {
    case R_SUM: case R_SQDEV: case R_EXPSUM: case R_ABS: case R_SQ: case R_POW: case R_NZ:
      a.d += b.d;
      return a;
    case R_PROD: a.d *= b.d; return a;
    case R_AMAX:
    case R_AMIN:
      if (a.d != a.d) return a;
      if (b.d != b.d || (k == R_AMAX ? b.d > a.d : b.d < a.d)) return b;
      return a;
    case R_MAX:
    case R_MIN:
      if (b.idx < 0 || (a.idx >= 0 && a.d != a.d)) return a;
      if (a.idx < 0 || b.d != b.d || (k == R_MAX ? b.d > a.d : b.d < a.d)) return b;
      return a;
    case R_ANY: a.i = a.i || b.i; return a;
    case R_ALL: a.i = a.i && b.i; return a;
    case R_SUM_I: a.i = (int64_t)((uint64_t)a.i + (uint64_t)b.i); return a;
    case R_PROD_I: a.i = (int64_t)((uint64_t)a.i * (uint64_t)b.i); return a;
    case R_MAX_I:
    case R_MIN_I:
      if (b.idx < 0) return a;
      if (a.idx < 0 || (k == R_MAX_I ? b.i > a.i : b.i < a.i)) return b;
      return a;
  }
  return a;
}

static acc_t reduce_block(const rjob *j, int64_t row, int64_t b) {
  int64_t s = b * RBLOCK, len = j->n - s < RBLOCK ? j->n - s : RBLOCK;
  return int_kind(j->k) ? block_i(j, row, s, len) : block_f(j, row, s, len);
}

static void rows_range(void *cp, int64_t b, int64_t e) {
  const rjob *j = cp;
  for (int64_t r = b; r < e; r++) {
    acc_t a = acc_init(j->k);
    for (int64_t k = 0; k < j->nb; k++) {
      acc_t part = reduce_block(j, r, k);
      a = k == 0 ? part : acc_combine(j->k, a, part);
    }
    j->res[r] = a;
  }
}

static void parts_range(void *cp, int64_t b, int64_t e) {
  const rjob *j = cp;
  for (int64_t u = b; u < e; u++) j->parts[u] = reduce_block(j, u / j->nb, u % j->nb);
}

/* Scratch for a tile of up to cap columns. */
typedef struct {
  double *lane[4], *buf;
  int64_t *ibuf;
  acc_t *tot, *part;
  int64_t cap;
} colws;

#define COLWS_SMALL 32 /* columns of the on-stack fallback when malloc fails */
#define COLWS_BYTES (4 * sizeof(double) + sizeof(double) + sizeof(int64_t) + 2 * sizeof(acc_t))

/* Points ws at heap memory for `want` columns, or at the small stack arrays. */
static void *colws_init(colws *ws, int64_t want, char *small) {
  char *m = wk_malloc(COLWS_BYTES * (size_t)want), *q = m;
  if (!m) {
    want = COLWS_SMALL;
    q = small;
  }
  ws->cap = want;
  ws->tot = (acc_t *)q;
  ws->part = ws->tot + want;
  for (int i = 0; i < 4; i++) ws->lane[i] = (double *)(ws->part + want) + i * want;
  ws->buf = ws->lane[3] + want;
  ws->ibuf = (int64_t *)(ws->buf + want);
  return m;
}

/* The column layout: the partials of block `blk` for the w columns from j0 of
 * slice o, into ws->part. Element i of a column updates it exactly as
 * block_f/block_i update element i of a row, so both layouts give the same
 * bits; the tile width changes nothing either. */
static void col_block(const rjob *j, colws *ws, int64_t o, int64_t j0, int64_t w, int64_t blk) {
  acc_t *out = ws->part;
  const double *prm = j->param ? j->param + o * j->inner + j0 : NULL;
  for (int64_t c = 0; c < w; c++) {
    out[c] = acc_init(j->k);
    ws->lane[0][c] = ws->lane[1][c] = ws->lane[2][c] = ws->lane[3][c] = 0;
  }
  int64_t i0 = blk * RBLOCK, i1 = j->n - i0 < RBLOCK ? j->n : i0 + RBLOCK;
  for (int64_t i = i0; i < i1; i++) {
    const char *p = j->data + ((o * j->n + i) * j->inner + j0) * j->es;
    if (int_kind(j->k)) {
      const int64_t *x = ws->ibuf;
      if (j->dt == WK_I64)
        x = (const int64_t *)p;
      else
        cpu_load_i64_run(p, j->dt, w, ws->ibuf);
      for (int64_t c = 0; c < w; c++) {
        acc_t *a = &out[c];
        switch (j->k) {
          case R_SUM_I: a->i = (int64_t)((uint64_t)a->i + (uint64_t)x[c]); break;
          case R_PROD_I: a->i = (int64_t)((uint64_t)a->i * (uint64_t)x[c]); break;
          case R_MAX_I:
          case R_MIN_I:
            if (a->idx < 0 || (j->k == R_MAX_I ? x[c] > a->i : x[c] < a->i)) {
              a->i = x[c];
              a->idx = i;
            }
            break;
          default: break;
        }
      }
      continue;
    }
    const double *x = ws->buf;
    if (j->dt == WK_F64)
      x = (const double *)p;
    else
      cpu_load_f64_run(p, j->dt, w, ws->buf);
    double *lq = ws->lane[(i - i0) & 3];
    switch (j->k) {
      case R_SUM: for (int64_t c = 0; c < w; c++) lq[c] += x[c]; break;
      case R_SQDEV: for (int64_t c = 0; c < w; c++) lq[c] += (x[c] - prm[c]) * (x[c] - prm[c]); break;
      case R_EXPSUM: for (int64_t c = 0; c < w; c++) lq[c] += exp(x[c] - prm[c]); break;
      case R_ABS: for (int64_t c = 0; c < w; c++) lq[c] += fabs(x[c]); break;
      case R_SQ: for (int64_t c = 0; c < w; c++) lq[c] += x[c] * x[c]; break;
      case R_POW: for (int64_t c = 0; c < w; c++) lq[c] += pow(fabs(x[c]), j->p); break;
      case R_NZ: for (int64_t c = 0; c < w; c++) lq[c] += (double)(x[c] != 0); break;
      case R_PROD: for (int64_t c = 0; c < w; c++) out[c].d *= x[c]; break;
      case R_AMAX:
      case R_AMIN:
        for (int64_t c = 0; c < w; c++) {
          double v = fabs(x[c]);
          if (out[c].d != out[c].d) continue;
          if (v != v || (j->k == R_AMAX ? v > out[c].d : v < out[c].d)) out[c].d = v;
        }
        break;
      case R_MAX:
      case R_MIN:
        for (int64_t c = 0; c < w; c++) {
          acc_t *a = &out[c];
          double v = x[c];
          if (a->idx >= 0 && a->d != a->d) continue;
          if (a->idx < 0 || v != v || (j->k == R_MAX ? v > a->d : v < a->d)) {
            a->d = v;
            a->idx = i;
          }
        }
        break;
      case R_ANY: for (int64_t c = 0; c < w; c++) out[c].i |= x[c] != 0; break;
      case R_ALL: for (int64_t c = 0; c < w; c++) out[c].i &= x[c] != 0; break;
      default: break;
    }
  }
  if (j->k <= R_NZ)
    for (int64_t c = 0; c < w; c++) out[c].d = (ws->lane[0][c] + ws->lane[1][c]) + (ws->lane[2][c] + ws->lane[3][c]);
}

/* Column units (slice, tile): every block in order. */
static void cols_range(void *cp, int64_t b, int64_t e) {
  const rjob *j = cp;
  _Alignas(16) char small[COLWS_BYTES * COLWS_SMALL];
  colws ws;
  void *mem = colws_init(&ws, j->tile, small);
  for (int64_t u = b; u < e; u++) {
    int64_t o = u / j->ntiles, t0 = (u % j->ntiles) * j->tile, tw = j->inner - t0 < j->tile ? j->inner - t0 : j->tile;
    for (int64_t j0 = t0; j0 < t0 + tw; j0 += ws.cap) {
      int64_t w = t0 + tw - j0 < ws.cap ? t0 + tw - j0 : ws.cap;
      for (int64_t c = 0; c < w; c++) ws.tot[c] = acc_init(j->k);
      for (int64_t blk = 0; blk < j->nb; blk++) {
        col_block(j, &ws, o, j0, w, blk);
        for (int64_t c = 0; c < w; c++) ws.tot[c] = blk == 0 ? ws.part[c] : acc_combine(j->k, ws.tot[c], ws.part[c]);
      }
      memcpy(j->res + o * j->inner + j0, ws.tot, sizeof(acc_t) * (size_t)w);
    }
  }
  wk_free(mem);
}

/* Column units (slice, tile, block): one block's partials into parts. */
static void colparts_range(void *cp, int64_t b, int64_t e) {
  const rjob *j = cp;
  _Alignas(16) char small[COLWS_BYTES * COLWS_SMALL];
  colws ws;
  void *mem = colws_init(&ws, j->tile, small);
  for (int64_t u = b; u < e; u++) {
    int64_t blk = u % j->nb, t = u / j->nb, o = t / j->ntiles, t0 = (t % j->ntiles) * j->tile;
    int64_t tw = j->inner - t0 < j->tile ? j->inner - t0 : j->tile;
    for (int64_t j0 = t0; j0 < t0 + tw; j0 += ws.cap) {
      int64_t w = t0 + tw - j0 < ws.cap ? t0 + tw - j0 : ws.cap;
      col_block(j, &ws, o, j0, w, blk);
      for (int64_t c = 0; c < w; c++) j->parts[(o * j->inner + j0 + c) * j->nb + blk] = ws.part[c];
    }
  }
  wk_free(mem);
}

/* Reduces every output element of the plan; returns a malloc'd array of
 * p->rows partials (at least one slot), or NULL with an error recorded. */
acc_t *cpu_reduce_rows(const rplan *p, rkind k, double pw, const double *param) {
  acc_t *res = wk_malloc(sizeof(acc_t) * (size_t)(p->rows > 0 ? p->rows : 1));
  if (!res) {
    wk_error(WK_ERR_NO_MEMORY, "reduction: out of memory for %lld results", (long long)p->rows);
    return NULL;
  }
  int nt = wk_num_threads();
  /* Column tiles: wide enough for the prefetcher, narrow enough to share out. */
  int64_t tile = (p->inner + nt - 1) / nt;
  tile = tile < 256 ? 256 : tile > RTILE ? RTILE : tile;
  rjob j = {k, wk_tensor_data(p->c), wk_tensor_dtype(p->c), (int64_t)wk_dtype_size(wk_tensor_dtype(p->c)),
            p->rows, p->n, (p->n + RBLOCK - 1) / RBLOCK, p->outer, p->inner, tile, (p->inner + tile - 1) / tile,
            pw, param, res, NULL};
  if (p->rows == 0) return res;
  bool cols = p->inner > 1;
  int64_t units = cols ? p->outer * j.ntiles : p->rows, per_unit = cols ? p->n * tile : p->n;
  if (p->rows * p->n < RGRAIN || nt <= 1) {
    (cols ? cols_range : rows_range)(&j, 0, units);
  } else if (j.nb > 1 && units < 2 * (int64_t)nt && (j.parts = wk_malloc(sizeof(acc_t) * (size_t)(p->rows * j.nb)))) {
    /* Few long reductions: their blocks run in parallel, then combine in order. */
    wk_parallel_for(0, units * j.nb, 1, cols ? colparts_range : parts_range, &j);
    for (int64_t r = 0; r < p->rows; r++) {
      acc_t a = j.parts[r * j.nb];
      for (int64_t b = 1; b < j.nb; b++) a = acc_combine(k, a, j.parts[r * j.nb + b]);
      res[r] = a;
    }
    wk_free(j.parts);
  } else {
    int64_t grain = RGRAIN / (per_unit > 0 ? per_unit : 1);
    wk_parallel_for(0, units, grain > 0 ? grain : 1, cols ? cols_range : rows_range, &j);
  }
  return res;
}
