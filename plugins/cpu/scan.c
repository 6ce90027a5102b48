/* cpu plugin: cumsum, a scan along one dimension (deterministic: each line
 * is summed in order, in double or wrapping int64); cumprod, logcumsumexp,
 * cummax and cummin, one line at a time by the SDK's formulas. */
#include <string.h>

#include "reduce.h"
#include <wick/sdk/scan.h>

/* The input as a contiguous [outer, len, inner] array; each of the
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
        cpu_load_i64_run(x + off * j->ies, j->idt, m, buf.i);
        for (int64_t t = 0; t < m; t++) buf.i[t] = (int64_t)(iacc += (uint64_t)buf.i[t]);
      } else {
        cpu_load_f64_run(x + off * j->ies, j->idt, m, buf.d);
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
        cpu_load_i64_run(j->in + at * j->ies, j->idt, w, buf.i);
        for (int64_t c = 0; c < w; c++) buf.i[c] = acc.i[c] = (int64_t)((uint64_t)acc.i[c] + (uint64_t)buf.i[c]);
      } else {
        cpu_load_f64_run(j->in + at * j->ies, j->idt, w, buf.d);
        for (int64_t c = 0; c < w; c++) buf.d[c] = acc.d[c] += buf.d[c];
      }
      store_run(j, j->out + at * j->oes, &buf, w);
    }
  }
}

static wk_status k_cumsum(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *x = WK_ARG_T(0);
  wk_dtype dtype = cpu_reduce_opt_dtype(&args[2]);
  int nd = wk_tensor_dim(x), d = (int)(WK_ARG_I(1) < 0 ? WK_ARG_I(1) + (nd > 0 ? nd : 1) : WK_ARG_I(1));
  /* A given dtype converts the input first (the result's dtype: the meta function's). */
  wk_tensor *in = dtype ? wk_kernel_cast(x, dtype) : wk_retain(x);
  wk_tensor *c = wk_contiguous(in);
  wk_release(in);
  if (!c) return wk_last_error();
  wk_dtype dt = wk_tensor_dtype(c);
  bool isint = !wk_dtype_is_floating(dt);
  wk_tensor *out = wk_meta_empty(ctx, 0);
  if (!out) {
    wk_release(c);
    return wk_last_error();
  }
  const int64_t *sz = wk_tensor_sizes(c);
  wk_dtype rt = wk_tensor_dtype(out);
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

/* ---- cumprod, logcumsumexp, cummax, cummin: each of the outer * inner lines
 * of a contiguous double (or int64) copy, by wk_scan_line_f64/_i64. ---- */
typedef struct {
  int op;
  bool isint;
  const void *x;
  void *y;
  int64_t *idx, len, inner;
} scan2_job;

static void scan2_lines(void *cp, int64_t b, int64_t e) {
  const scan2_job *j = cp;
  for (int64_t l = b; l < e; l++) {
    int64_t base = (l / j->inner) * j->len * j->inner + l % j->inner;
    int64_t *idx = j->idx ? j->idx + base : NULL;
    if (j->isint)
      wk_scan_line_i64(j->op, (const int64_t *)j->x + base, (int64_t *)j->y + base, idx, j->len, j->inner);
    else
      wk_scan_line_f64(j->op, (const double *)j->x + base, (double *)j->y + base, idx, j->len, j->inner);
  }
}

static wk_status k_scan2(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  int op = (int)(intptr_t)ctx->user;
  wk_tensor *x = WK_ARG_T(0);
  int nd = wk_tensor_dim(x), d = (int)(WK_ARG_I(1) < 0 ? WK_ARG_I(1) + (nd > 0 ? nd : 1) : WK_ARG_I(1));
  wk_dtype rt = wk_kernel_meta(ctx, 0)->dtype, cd = wk_dtype_is_floating(rt) ? WK_F64 : WK_I64;
  bool extreme = op == WK_SCAN_cummax || op == WK_SCAN_cummin;
  /* cumprod's dtype converts the input first, then it accumulates like any input of that dtype */
  wk_tensor *given = op == WK_SCAN_cumprod && args[2].tag == WK_V_DTYPE ? wk_kernel_cast(x, args[2].u.dtype) : wk_retain(x);
  wk_tensor *in = given ? wk_kernel_cast(given, cd) : NULL, *c = in ? wk_contiguous(in) : NULL;
  wk_release(given);
  wk_release(in);
  wk_tensor *y = c ? cpu_empty(wk_tensor_sizes(c), nd, cd) : NULL;
  wk_tensor *idx = y && extreme ? cpu_empty(wk_tensor_sizes(c), nd, WK_I64) : NULL;
  if (!y || (extreme && !idx)) {
    wk_release_n((wk_tensor *const[]){c, y, idx}, 3);
    return wk_last_error();
  }
  const int64_t *sz = wk_tensor_sizes(c);
  scan2_job j = {op, cd == WK_I64, wk_tensor_data(c), wk_tensor_data(y), idx ? wk_tensor_data(idx) : NULL,
                 nd > 0 ? sz[d] : 1, 1};
  int64_t lines = 1;
  for (int i = 0; i < nd; i++)
    if (i != d) lines *= sz[i];
  for (int i = d + 1; i < nd; i++) j.inner *= sz[i];
  int64_t numel = wk_tensor_numel(y);
  if (numel > 0) {
    if (numel < RGRAIN || j.len == 0)
      scan2_lines(&j, 0, lines);
    else
      wk_parallel_for(0, lines, RGRAIN / j.len > 0 ? RGRAIN / j.len : 1, scan2_lines, &j);
  }
  wk_release(c);
  if (rt != cd) y = wk_cast_own(y, rt);
  return extreme ? wk_kernel_done_n(WK_OK, (wk_tensor *const[]){y, idx}, 2, outs) : wk_kernel_out1(outs, y);
}

wk_status cpu_register_scan(void) {
  static const struct {
    const char *op;
    int scan;
  } rows[] = {{"cumprod", WK_SCAN_cumprod},
              {"logcumsumexp", WK_SCAN_logcumsumexp},
              {"cummax", WK_SCAN_cummax},
              {"cummin", WK_SCAN_cummin}};
  wk_status s = cpu_reg("cumsum", k_cumsum, NULL);
  for (size_t i = 0; i < sizeof rows / sizeof rows[0] && !s; i++)
    s = cpu_reg(rows[i].op, k_scan2, (void *)(intptr_t)rows[i].scan);
  return s;
}
