/* cpu plugin: reductions (sum, mean, prod, max/min with indices, argmax/argmin,
 * var/std, norm, logsumexp, all/any) and the cumsum scan. A reduction sees its
 * input as a contiguous [outer, n, inner] array (the reduced dims in the middle;
 * when they are not consecutive in a contiguous input, a copy moves them last).
 * Each output element's n values are cut into fixed blocks whose partial
 * results combine in block order, with the same arithmetic on every path, so
 * results depend neither on the thread count nor on the input's layout. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

#define RBLOCK 16384 /* fixed block of a row: partials combine in this grouping */
#define RCHUNK 256   /* elements converted to double / int64 at a time */
#define RGRAIN 32768 /* elements below which work stays on one thread */
#define RTILE 4096   /* most output columns reduced together when the reduced dims are not innermost */

/* PyTorch's ScalarType names, for messages that read like PyTorch's. */
static const char *torch_name(wk_dtype dt) {
  switch (dt) {
    case WK_F32: return "Float";
    case WK_F64: return "Double";
    case WK_F16: return "Half";
    case WK_BF16: return "BFloat16";
    case WK_I8: return "Char";
    case WK_U8: return "Byte";
    case WK_I16: return "Short";
    case WK_I32: return "Int";
    case WK_I64: return "Long";
    case WK_BOOL: return "Bool";
    default: return "?";
  }
}

static wk_status wrap_dim(const char *op, int64_t d, int nd, int *out) {
  int64_t n = nd > 0 ? nd : 1;
  if (d < -n || d >= n)
    return wk_error(WK_ERR_INDEX, "%s(): Dimension out of range (expected to be in range of [%lld, %lld], but got %lld)",
                    op, (long long)-n, (long long)(n - 1), (long long)d);
  *out = (int)(d < 0 ? d + n : d);
  return WK_OK;
}

/* ---- plan: the reduced dims, the output shape and the data layout ------------- */
typedef struct {
  wk_tensor *c;               /* contiguous data viewed as [outer, n, inner] (new reference) */
  int64_t outer, n, inner;    /* n: elements reduced into each output element */
  int64_t rows;               /* output elements: outer * inner, in row-major output order */
  int64_t shape[WK_MAX_DIMS];
  int nd;                     /* output shape */
} rplan;

/* Plans a reduction of x over dims (ndims == 0: every dim). */
static wk_status plan_make(rplan *p, const char *op, wk_tensor *x, const int64_t *dims, int ndims, bool keepdim) {
  memset(p, 0, sizeof *p);
  int nd = wk_tensor_dim(x);
  const int64_t *sz = wk_tensor_sizes(x);
  bool red[WK_MAX_DIMS] = {false}, seen[WK_MAX_DIMS] = {false};
  for (int i = 0; i < ndims; i++) {
    int d;
    wk_status s = wrap_dim(op, dims[i], nd, &d);
    if (s) return s;
    if (seen[d]) return wk_error(WK_ERR_INVALID_ARG, "%s(): dim %d appears multiple times in the list of dims", op, d);
    seen[d] = true;
    if (nd > 0) red[d] = true;
  }
  if (ndims == 0)
    for (int d = 0; d < nd; d++) red[d] = true;
  int64_t perm[WK_MAX_DIMS];
  int k = 0;
  p->rows = 1;
  p->n = 1;
  for (int d = 0; d < nd; d++) {
    if (!red[d]) {
      perm[k++] = d;
      p->rows *= sz[d];
      p->shape[p->nd++] = sz[d];
    } else if (keepdim) {
      p->shape[p->nd++] = 1;
    }
  }
  for (int d = 0; d < nd; d++)
    if (red[d]) {
      perm[k++] = d;
      p->n *= sz[d];
    }
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
    wk_tensor *v = wk_permute(x, perm, nd);
    p->c = wk_contiguous(v);
    wk_release(v);
  }
  return p->c ? WK_OK : wk_last_error();
}

/* ---- the row reducer ----------------------------------------------------------------- */
typedef enum {
  R_SUM, R_SQDEV, R_EXPSUM, R_ABS, R_SQ, R_POW, R_NZ, /* additive, in double */
  R_PROD, R_AMAX, R_AMIN, R_MAX, R_MIN, R_ANY, R_ALL, /* in double */
  R_SUM_I, R_PROD_I, R_MAX_I, R_MIN_I                 /* in int64 (wrap-around) */
} rkind;

/* A partial result: d (double kinds) or i (int kinds, any/all), and the index
 * of the extreme element for max/min (-1: no element seen). */
typedef struct {
  double d;
  int64_t i, idx;
} acc_t;

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

static void load_f64(const char *p, wk_dtype dt, int64_t n, double *o) {
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

static void load_i64(const char *p, wk_dtype dt, int64_t n, int64_t *o) {
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
      load_f64(base + off * j->es, j->dt, m, buf);
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
      load_i64(base + off * j->es, j->dt, m, buf);
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
  char *m = malloc(COLWS_BYTES * (size_t)want), *q = m;
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
        load_i64(p, j->dt, w, ws->ibuf);
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
      load_f64(p, j->dt, w, ws->buf);
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
  free(mem);
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
  free(mem);
}

/* Reduces every output element of the plan; returns a malloc'd array of
 * p->rows partials (at least one slot), or NULL with an error recorded. */
static acc_t *reduce_rows(const rplan *p, rkind k, double pw, const double *param) {
  acc_t *res = malloc(sizeof(acc_t) * (size_t)(p->rows > 0 ? p->rows : 1));
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
  } else if (j.nb > 1 && units < 2 * (int64_t)nt && (j.parts = malloc(sizeof(acc_t) * (size_t)(p->rows * j.nb)))) {
    /* Few long reductions: their blocks run in parallel, then combine in order. */
    wk_parallel_for(0, units * j.nb, 1, cols ? colparts_range : parts_range, &j);
    for (int64_t r = 0; r < p->rows; r++) {
      acc_t a = j.parts[r * j.nb];
      for (int64_t b = 1; b < j.nb; b++) a = acc_combine(k, a, j.parts[r * j.nb + b]);
      res[r] = a;
    }
    free(j.parts);
  } else {
    int64_t grain = RGRAIN / (per_unit > 0 ? per_unit : 1);
    wk_parallel_for(0, units, grain > 0 ? grain : 1, cols ? cols_range : rows_range, &j);
  }
  return res;
}

/* ---- results -------------------------------------------------------------------------- */
static wk_tensor *new_out(const rplan *p, wk_dtype dt) { return cpu_empty(p->shape, p->nd, dt); }

/* Element writer for a new contiguous result. */
typedef struct {
  char *p;
  wk_dtype dt;
  int64_t es;
} outw;

static outw writer(wk_tensor *t) {
  outw w = {NULL, WK_DTYPE_DEFAULT, 0};
  if (t) {
    w.p = wk_tensor_data(t);
    w.dt = wk_tensor_dtype(t);
    w.es = (int64_t)wk_dtype_size(w.dt);
  }
  return w;
}
static void put_f64(const outw *w, int64_t i, double v) { wk_store_f64(w->p + i * w->es, w->dt, v); }
static void put_i64(const outw *w, int64_t i, int64_t v) { wk_store_i64(w->p + i * w->es, w->dt, v); }

static wk_status finish(rplan *p, acc_t *res, wk_tensor *out, wk_value *outs) {
  wk_release(p->c);
  free(res);
  if (!out) return wk_last_error();
  outs[0] = WK_VT(out);
  return WK_OK;
}

/* Optional int[] argument: (dims, ndims); None and [] both mean every dim. */
static const int64_t *opt_dims(const wk_value *v, int *n) {
  *n = v->tag == WK_V_INTS ? v->len : 0;
  return v->tag == WK_V_INTS ? v->u.ints : NULL;
}

static wk_dtype opt_dtype(const wk_value *v) { return v->tag == WK_V_DTYPE ? v->u.dtype : WK_DTYPE_DEFAULT; }

/* ---- sum, prod -------------------------------------------------------------------------- */
static wk_status sum_prod(const char *op, bool prod, wk_tensor *x, const int64_t *dims, int ndims, bool keepdim,
                          wk_dtype dtype, wk_value *outs) {
  /* A given dtype converts the input first, as PyTorch does. */
  wk_tensor *in = dtype ? wk_kernel_cast(x, dtype) : wk_retain(x);
  if (!in) return wk_last_error();
  wk_dtype dt = wk_tensor_dtype(in);
  bool isint = !wk_dtype_is_floating(dt);
  wk_dtype rt = dtype ? dtype : isint ? WK_I64 : dt;
  rplan p;
  wk_status s = plan_make(&p, op, in, dims, ndims, keepdim);
  wk_release(in);
  if (s) return s;
  acc_t *res = reduce_rows(&p, prod ? (isint ? R_PROD_I : R_PROD) : (isint ? R_SUM_I : R_SUM), 0, NULL);
  wk_tensor *out = res ? new_out(&p, rt) : NULL;
  outw wo = writer(out);
  if (out)
    for (int64_t r = 0; r < p.rows; r++) {
      if (isint)
        put_i64(&wo, r, res[r].i);
      else
        put_f64(&wo, r, res[r].d);
    }
  return finish(&p, res, out, outs);
}

static wk_status k_sum(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  return sum_prod("sum", false, WK_ARG_T(0), NULL, 0, false, opt_dtype(&args[1]), outs);
}
static wk_status k_sum_dim(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  int nd;
  const int64_t *dims = opt_dims(&args[1], &nd);
  return sum_prod("sum", false, WK_ARG_T(0), dims, nd, WK_ARG_B(2), opt_dtype(&args[3]), outs);
}
static wk_status k_prod(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  return sum_prod("prod", true, WK_ARG_T(0), NULL, 0, false, opt_dtype(&args[1]), outs);
}
static wk_status k_prod_dim(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  return sum_prod("prod", true, WK_ARG_T(0), &WK_ARG_I(1), 1, WK_ARG_B(2), opt_dtype(&args[3]), outs);
}

/* ---- mean ------------------------------------------------------------------------------- */
static wk_status mean(wk_tensor *x, const int64_t *dims, int ndims, bool keepdim, wk_dtype dtype, wk_value *outs) {
  if (dtype && !wk_dtype_is_floating(dtype))
    return wk_error(WK_ERR_DTYPE, "mean(): could not infer output dtype. Optional dtype must be either a floating "
                    "point or complex dtype. Got: %s", torch_name(dtype));
  if (!dtype && !wk_dtype_is_floating(wk_tensor_dtype(x)))
    return wk_error(WK_ERR_DTYPE, "mean(): could not infer output dtype. Input dtype must be either a floating "
                    "point or complex dtype. Got: %s", torch_name(wk_tensor_dtype(x)));
  wk_tensor *in = dtype ? wk_kernel_cast(x, dtype) : wk_retain(x);
  if (!in) return wk_last_error();
  rplan p;
  wk_status s = plan_make(&p, "mean", in, dims, ndims, keepdim);
  wk_release(in);
  if (s) return s;
  acc_t *res = reduce_rows(&p, R_SUM, 0, NULL);
  wk_tensor *out = res ? new_out(&p, wk_tensor_dtype(p.c)) : NULL;
  outw wo = writer(out);
  if (out)
    for (int64_t r = 0; r < p.rows; r++) put_f64(&wo, r, res[r].d / (double)p.n);
  return finish(&p, res, out, outs);
}

static wk_status k_mean(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  return mean(WK_ARG_T(0), NULL, 0, false, opt_dtype(&args[1]), outs);
}
static wk_status k_mean_dim(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  int nd;
  const int64_t *dims = opt_dims(&args[1], &nd);
  return mean(WK_ARG_T(0), dims, nd, WK_ARG_B(2), opt_dtype(&args[3]), outs);
}

/* ---- max, min, argmax, argmin ------------------------------------------------------------ */
enum { WANT_VALUES = 1, WANT_INDICES = 2 };

static wk_status extreme(const char *op, bool is_max, int want, wk_tensor *x, bool has_dim, int64_t dim,
                         bool keepdim, wk_value *outs) {
  wk_dtype dt = wk_tensor_dtype(x);
  int nd = wk_tensor_dim(x), d = 0;
  if (want == WANT_INDICES && dt == WK_BOOL)
    return wk_error(WK_ERR_DTYPE, "%s(): \"%s_cpu\" not implemented for 'Bool'", op, op);
  if (has_dim) {
    wk_status s = wrap_dim(op, dim, nd, &d);
    if (s) return s;
    if (nd > 0 && wk_tensor_size(x, d) == 0)
      return wk_error(WK_ERR_INDEX, "%s(): Expected reduction dim %d to have non-zero size.", op, d);
  } else if (wk_tensor_numel(x) == 0) {
    if (want == WANT_INDICES)
      return wk_error(WK_ERR_INDEX, "%s(): Expected reduction dim to be specified for input.numel() == 0.", op);
    return wk_error(WK_ERR_INVALID_ARG, "%s(): Expected reduction dim to be specified for input.numel() == 0. "
                    "Specify the reduction dim with the 'dim' argument.", op);
  }
  bool isint = !wk_dtype_is_floating(dt);
  rkind k = is_max ? (isint ? R_MAX_I : R_MAX) : (isint ? R_MIN_I : R_MIN);
  int64_t dd = d;
  rplan p;
  wk_status s = plan_make(&p, op, x, has_dim ? &dd : NULL, has_dim ? 1 : 0, keepdim);
  if (s) return s;
  acc_t *res = reduce_rows(&p, k, 0, NULL);
  wk_tensor *vals = NULL, *idx = NULL;
  if (res && (want & WANT_VALUES)) vals = new_out(&p, dt);
  if (res && (want & WANT_INDICES)) idx = new_out(&p, WK_I64);
  bool ok = res && (vals || !(want & WANT_VALUES)) && (idx || !(want & WANT_INDICES));
  outw wv = writer(vals), wi = writer(idx);
  if (ok)
    for (int64_t r = 0; r < p.rows; r++) {
      if (vals) {
        if (isint)
          put_i64(&wv, r, res[r].i);
        else
          put_f64(&wv, r, res[r].d);
      }
      if (idx) put_i64(&wi, r, res[r].idx);
    }
  wk_release(p.c);
  free(res);
  if (!ok) {
    wk_release(vals);
    wk_release(idx);
    return wk_last_error();
  }
  if (want == (WANT_VALUES | WANT_INDICES)) {
    outs[0] = WK_VT(vals);
    outs[1] = WK_VT(idx);
  } else {
    outs[0] = WK_VT(vals ? vals : idx);
  }
  return WK_OK;
}

static wk_status k_max(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  return extreme("max", true, WANT_VALUES, WK_ARG_T(0), false, 0, false, outs);
}
static wk_status k_min(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  return extreme("min", false, WANT_VALUES, WK_ARG_T(0), false, 0, false, outs);
}
static wk_status k_max_dim(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  return extreme("max", true, WANT_VALUES | WANT_INDICES, WK_ARG_T(0), true, WK_ARG_I(1), WK_ARG_B(2), outs);
}
static wk_status k_min_dim(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  return extreme("min", false, WANT_VALUES | WANT_INDICES, WK_ARG_T(0), true, WK_ARG_I(1), WK_ARG_B(2), outs);
}
/* argmax with dim None reduces the flattened input (keepdim keeps every dim as 1). */
static wk_status k_argmax(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  return extreme("argmax", true, WANT_INDICES, WK_ARG_T(0), !WK_ARG_IS_NONE(1), WK_ARG_IS_NONE(1) ? 0 : WK_ARG_I(1),
                 WK_ARG_B(2), outs);
}
static wk_status k_argmin(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  return extreme("argmin", false, WANT_INDICES, WK_ARG_T(0), !WK_ARG_IS_NONE(1), WK_ARG_IS_NONE(1) ? 0 : WK_ARG_I(1),
                 WK_ARG_B(2), outs);
}

/* ---- var, std (two passes: the mean, then squared deviations) ----------------------------- */
static wk_status var_std(const char *op, bool is_std, const wk_value *args, wk_value *outs) {
  wk_tensor *x = WK_ARG_T(0);
  int nd;
  const int64_t *dims = opt_dims(&args[1], &nd);
  int64_t correction = WK_ARG_I(2);
  bool keepdim = WK_ARG_B(3);
  if (!wk_dtype_is_floating(wk_tensor_dtype(x)))
    return wk_error(WK_ERR_DTYPE, "%s(): std and var only support floating point and complex dtypes, got %s", op,
                    torch_name(wk_tensor_dtype(x)));
  rplan p;
  wk_status s = plan_make(&p, op, x, dims, nd, keepdim);
  if (s) return s;
  acc_t *res = reduce_rows(&p, R_SUM, 0, NULL);
  double *mu = res ? malloc(sizeof(double) * (size_t)(p.rows > 0 ? p.rows : 1)) : NULL;
  if (res && !mu) wk_error(WK_ERR_NO_MEMORY, "%s(): out of memory", op);
  wk_tensor *out = NULL;
  if (mu) {
    for (int64_t r = 0; r < p.rows; r++) mu[r] = res[r].d / (double)p.n;
    free(res);
    res = reduce_rows(&p, R_SQDEV, 0, mu);
    free(mu);
    double dof = (double)p.n - (double)correction;
    if (dof < 0) dof = 0; /* PyTorch: max(0, N - correction), giving inf or nan */
    out = res ? new_out(&p, wk_tensor_dtype(x)) : NULL;
    outw wo = writer(out);
  if (out)
      for (int64_t r = 0; r < p.rows; r++) {
        double v = res[r].d / dof;
        put_f64(&wo, r, is_std ? sqrt(v) : v);
      }
  }
  return finish(&p, res, out, outs);
}

static wk_status k_var(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  return var_std("var", false, args, outs);
}
static wk_status k_std(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  return var_std("std", true, args, outs);
}

/* ---- norm ------------------------------------------------------------------------------------ */
static wk_status k_norm(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  wk_tensor *x = WK_ARG_T(0);
  double pw = wk_value_as_f64(&args[1]);
  int nd;
  const int64_t *dims = opt_dims(&args[2], &nd);
  wk_dtype dt = wk_tensor_dtype(x);
  if (!wk_dtype_is_floating(dt))
    return wk_error(WK_ERR_DTYPE, "norm(): Expected a floating point or complex tensor as input. Got %s",
                    torch_name(dt));
  if (pw != pw) return wk_error(WK_ERR_INVALID_ARG, "norm(): the order p must not be NaN");
  rplan p;
  wk_status s = plan_make(&p, "norm", x, dims, nd, WK_ARG_B(3));
  if (s) return s;
  if (p.n == 0 && (pw < 0 || isinf(pw))) {
    wk_release(p.c);
    return wk_error(WK_ERR_INVALID_ARG, "norm(): cannot compute the %g norm on an empty tensor because the "
                    "operation does not have an identity", pw);
  }
  rkind k = pw == 2 ? R_SQ : pw == 1 ? R_ABS : pw == 0 ? R_NZ : pw == INFINITY ? R_AMAX : pw == -INFINITY ? R_AMIN : R_POW;
  acc_t *res = reduce_rows(&p, k, pw, NULL);
  wk_tensor *out = res ? new_out(&p, dt) : NULL;
  outw wo = writer(out);
  if (out)
    for (int64_t r = 0; r < p.rows; r++) {
      double v = res[r].d;
      put_f64(&wo, r, k == R_SQ ? sqrt(v) : k == R_POW ? pow(v, 1.0 / pw) : v);
    }
  return finish(&p, res, out, outs);
}

/* ---- logsumexp (max-shifted: m + log(sum(exp(x - m))), with infinite m shifted by 0) ------- */
static wk_status k_logsumexp(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  wk_tensor *x = WK_ARG_T(0);
  int nd = args[1].len;
  /* Integer inputs give the default floating dtype, as in PyTorch 2. */
  wk_tensor *in = wk_kernel_cast(x, wk_dtype_is_floating(wk_tensor_dtype(x)) ? wk_tensor_dtype(x) : WK_F32);
  if (!in) return wk_last_error();
  rplan p;
  wk_status s = plan_make(&p, "logsumexp", in, args[1].u.ints, nd, WK_ARG_B(2));
  wk_release(in);
  if (s) return s;
  acc_t *res = reduce_rows(&p, R_MAX, 0, NULL);
  double *m = res ? malloc(sizeof(double) * (size_t)(p.rows > 0 ? p.rows : 1)) : NULL;
  if (res && !m) wk_error(WK_ERR_NO_MEMORY, "logsumexp(): out of memory");
  wk_tensor *out = NULL;
  if (m) {
    for (int64_t r = 0; r < p.rows; r++) m[r] = isinf(res[r].d) ? 0 : res[r].d;
    free(res);
    res = reduce_rows(&p, R_EXPSUM, 0, m);
    out = res ? new_out(&p, wk_tensor_dtype(p.c)) : NULL;
    outw wo = writer(out);
  if (out)
      for (int64_t r = 0; r < p.rows; r++) put_f64(&wo, r, log(res[r].d) + m[r]);
    free(m);
  }
  return finish(&p, res, out, outs);
}

/* ---- all, any (bool results; uint8 inputs keep uint8, as in PyTorch) ------------------------- */
static wk_status all_any(const char *op, bool is_all, wk_tensor *x, bool has_dim, int64_t dim, bool keepdim,
                         wk_value *outs) {
  rplan p;
  wk_status s = plan_make(&p, op, x, has_dim ? &dim : NULL, has_dim ? 1 : 0, keepdim);
  if (s) return s;
  acc_t *res = reduce_rows(&p, is_all ? R_ALL : R_ANY, 0, NULL);
  wk_tensor *out = res ? new_out(&p, wk_tensor_dtype(x) == WK_U8 ? WK_U8 : WK_BOOL) : NULL;
  outw wo = writer(out);
  if (out)
    for (int64_t r = 0; r < p.rows; r++) put_i64(&wo, r, res[r].i);
  return finish(&p, res, out, outs);
}

static wk_status k_all(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  return all_any("all", true, WK_ARG_T(0), false, 0, false, outs);
}
static wk_status k_all_dim(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  return all_any("all", true, WK_ARG_T(0), true, WK_ARG_I(1), WK_ARG_B(2), outs);
}
static wk_status k_any(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  return all_any("any", false, WK_ARG_T(0), false, 0, false, outs);
}
static wk_status k_any_dim(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  return all_any("any", false, WK_ARG_T(0), true, WK_ARG_I(1), WK_ARG_B(2), outs);
}

/* ---- cumsum: the input as a contiguous [outer, len, inner] array; each of the
 * outer * inner lines is scanned in order (in double, or int64 wrapping). -------------- */
#define RSCAN 2048 /* most columns scanned together when dim is not the last */

typedef struct {
  const char *in;
  char *out;
  wk_dtype idt, odt;
  int64_t ies, oes, outer, len, inner, tile, ntiles;
  bool isint;
} scan_job;

typedef union {
  double d[RSCAN];
  int64_t i[RSCAN];
} scan_buf;

static void store_run(const scan_job *j, char *o, const scan_buf *b, int64_t m) {
  if (j->isint) {
    if (j->odt == WK_I64)
      memcpy(o, b->i, sizeof(int64_t) * (size_t)m);
    else
      for (int64_t t = 0; t < m; t++) wk_store_i64(o + t * j->oes, j->odt, b->i[t]);
  } else if (j->odt == WK_F32) {
    for (int64_t t = 0; t < m; t++) ((float *)o)[t] = (float)b->d[t];
  } else if (j->odt == WK_F64) {
    memcpy(o, b->d, sizeof(double) * (size_t)m);
  } else {
    for (int64_t t = 0; t < m; t++) wk_store_f64(o + t * j->oes, j->odt, b->d[t]);
  }
}

/* dim is the last (inner == 1): whole lines, a chunk at a time. */
static void scan_rows(void *cp, int64_t b, int64_t e) {
  const scan_job *j = cp;
  scan_buf buf;
  for (int64_t r = b; r < e; r++) {
    const char *x = j->in + r * j->len * j->ies;
    char *o = j->out + r * j->len * j->oes;
    double dacc = 0;
    uint64_t iacc = 0;
    for (int64_t off = 0; off < j->len; off += RSCAN) {
      int64_t m = j->len - off < RSCAN ? j->len - off : RSCAN;
      if (j->isint) {
        load_i64(x + off * j->ies, j->idt, m, buf.i);
        for (int64_t t = 0; t < m; t++) buf.i[t] = (int64_t)(iacc += (uint64_t)buf.i[t]);
      } else {
        load_f64(x + off * j->ies, j->idt, m, buf.d);
        for (int64_t t = 0; t < m; t++) buf.d[t] = dacc += buf.d[t];
      }
      store_run(j, o + off * j->oes, &buf, m);
    }
  }
}

/* dim is not the last: a tile of columns advances along dim together. */
static void scan_cols(void *cp, int64_t b, int64_t e) {
  const scan_job *j = cp;
  scan_buf acc, buf;
  for (int64_t u = b; u < e; u++) {
    int64_t o = u / j->ntiles, j0 = (u % j->ntiles) * j->tile, w = j->inner - j0 < j->tile ? j->inner - j0 : j->tile;
    memset(&acc, 0, sizeof(int64_t) * (size_t)w);
    for (int64_t i = 0; i < j->len; i++) {
      int64_t at = (o * j->len + i) * j->inner + j0;
      if (j->isint) {
        load_i64(j->in + at * j->ies, j->idt, w, buf.i);
        for (int64_t c = 0; c < w; c++) buf.i[c] = acc.i[c] = (int64_t)((uint64_t)acc.i[c] + (uint64_t)buf.i[c]);
      } else {
        load_f64(j->in + at * j->ies, j->idt, w, buf.d);
        for (int64_t c = 0; c < w; c++) buf.d[c] = acc.d[c] += buf.d[c];
      }
      store_run(j, j->out + at * j->oes, &buf, w);
    }
  }
}

static wk_status k_cumsum(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  wk_tensor *x = WK_ARG_T(0);
  wk_dtype dtype = opt_dtype(&args[2]);
  int nd = wk_tensor_dim(x), d;
  wk_status s = wrap_dim("cumsum", WK_ARG_I(1), nd, &d);
  if (s) return s;
  /* A given dtype converts the input first; integers and bools give int64. */
  wk_tensor *in = dtype ? wk_kernel_cast(x, dtype) : wk_retain(x);
  wk_tensor *c = wk_contiguous(in);
  wk_release(in);
  if (!c) return wk_last_error();
  wk_dtype dt = wk_tensor_dtype(c);
  bool isint = !wk_dtype_is_floating(dt);
  wk_dtype rt = dtype ? dtype : isint ? WK_I64 : dt;
  wk_tensor *out = cpu_empty(wk_tensor_sizes(c), nd, rt);
  if (!out) {
    wk_release(c);
    return wk_last_error();
  }
  const int64_t *sz = wk_tensor_sizes(c);
  scan_job j = {wk_tensor_data(c), wk_tensor_data(out), dt, rt, (int64_t)wk_dtype_size(dt), (int64_t)wk_dtype_size(rt),
                1, nd > 0 ? sz[d] : 1, 1, 1, 1, isint};
  for (int i = 0; i < d; i++) j.outer *= sz[i];
  for (int i = d + 1; i < nd; i++) j.inner *= sz[i];
  int64_t numel = wk_tensor_numel(out);
  if (numel > 0) {
    int nt = wk_num_threads();
    j.tile = (j.inner + nt - 1) / nt;
    j.tile = j.tile < 64 ? 64 : j.tile > RSCAN ? RSCAN : j.tile;
    j.ntiles = (j.inner + j.tile - 1) / j.tile;
    bool cols = j.inner > 1;
    int64_t units = cols ? j.outer * j.ntiles : j.outer, per_unit = j.len * (cols ? j.tile : 1);
    void (*fn)(void *, int64_t, int64_t) = cols ? scan_cols : scan_rows;
    if (numel < RGRAIN || nt <= 1) {
      fn(&j, 0, units);
    } else {
      int64_t grain = RGRAIN / per_unit;
      wk_parallel_for(0, units, grain > 0 ? grain : 1, fn, &j);
    }
  }
  wk_release(c);
  outs[0] = WK_VT(out);
  return WK_OK;
}

wk_status cpu_register_reduce(void) {
  static const struct {
    const char *op;
    wk_kernel_fn fn;
  } table[] = {
      {"sum", k_sum},           {"sum.dim_IntList", k_sum_dim}, {"mean", k_mean},
      {"mean.dim", k_mean_dim}, {"prod", k_prod},               {"prod.dim_int", k_prod_dim},
      {"max", k_max},           {"max.dim", k_max_dim},         {"min", k_min},
      {"min.dim", k_min_dim},   {"argmax", k_argmax},           {"argmin", k_argmin},
      {"var.correction", k_var}, {"std.correction", k_std},     {"norm", k_norm},
      {"logsumexp", k_logsumexp}, {"all", k_all},               {"all.dim", k_all_dim},
      {"any", k_any},           {"any.dim", k_any_dim},         {"cumsum", k_cumsum},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    wk_status s = cpu_reg(table[i].op, table[i].fn, NULL);
    if (s) return s;
  }
  return WK_OK;
}
