/* Printing tensors the way PyTorch does: one number format per tensor
 * (integer-valued floats as "1.", fixed "%.4f", or scientific), right-aligned
 * columns, nested brackets, summarisation past 1000 elements, and the
 * dtype/device/requires_grad suffix. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct {
  char *buf;
  size_t n, cap;
  bool oom;
} sbuf;

static void put(sbuf *b, const char *s) {
  size_t l = strlen(s);
  if (b->n + l + 1 > b->cap) {
    size_t cap = (b->cap + l + 1) * 2;
    char *p = wk_realloc(b->buf, cap);
    if (!p) {
      b->oom = true;
      return;
    }
    b->buf = p;
    b->cap = cap;
  }
  memcpy(b->buf + b->n, s, l + 1);
  b->n += l;
}

typedef enum { F_INT, F_BOOL, F_FLOAT_INT, F_FIXED, F_SCI } fmt_kind;

typedef struct {
  fmt_kind kind;
  int width;
  bool summarize;
  const double *vals;
  const int64_t *sizes;
  int ndim;
  int64_t strides[WK_MAX_DIMS]; /* contiguous strides over vals */
} fmtctx;

static void fmt_one(const fmtctx *f, double v, char *out, size_t n) {
  if (f->kind == F_BOOL) {
    snprintf(out, n, "%s", v != 0 ? "True" : "False");
  } else if (f->kind == F_INT) {
    snprintf(out, n, "%lld", (long long)v);
  } else if (isnan(v)) {
    snprintf(out, n, "nan");
  } else if (isinf(v)) {
    snprintf(out, n, "%sinf", v < 0 ? "-" : "");
  } else if (f->kind == F_FLOAT_INT) {
    snprintf(out, n, "%.0f.", v);
  } else if (f->kind == F_FIXED) {
    snprintf(out, n, "%.4f", v);
  } else {
    snprintf(out, n, "%.4e", v);
  }
}

/* Does index i of a dimension of size n get printed (summarised view)? */
static bool shown(const fmtctx *f, int64_t i, int64_t n) { return !f->summarize || n <= 6 || i < 3 || i >= n - 3; }

/* Mirrors PyTorch's _tensor_str: rows are chunked by line width, the ellipsis
 * counts as an item, and nested slices join with ",\n\n..." by depth. */
static void rec(sbuf *b, const fmtctx *f, int d, int64_t off, int indent) {
  int64_t n = f->sizes[d];
  put(b, "[");
  if (d == f->ndim - 1) {
    int per_line = (80 - indent) / (f->width + 2);
    if (per_line < 1) per_line = 1;
    int col = 0;
    bool first = true;
    for (int64_t i = 0; i < n; i++) {
      char e[64], item[160];
      if (!shown(f, i, n)) {
        if (i != 3) continue;
        snprintf(item, sizeof item, " ...");
      } else {
        fmt_one(f, f->vals[off + i * f->strides[d]], e, sizeof e);
        int w = (int)strlen(e);
        snprintf(item, sizeof item, "%*s%s", f->width - w > 0 ? f->width - w : 0, "", e);
      }
      if (!first) {
        if (col == per_line) {
          put(b, ",\n");
          for (int k = 0; k < indent + 1; k++) put(b, " ");
          col = 0;
        } else {
          put(b, ", ");
        }
      }
      put(b, item);
      first = false;
      col++;
    }
  } else {
    bool first = true;
    for (int64_t i = 0; i < n; i++) {
      bool ell = !shown(f, i, n);
      if (ell && i != 3) continue;
      if (!first) {
        put(b, ",");
        for (int k = 0; k < f->ndim - d - 1; k++) put(b, "\n");
        for (int k = 0; k < indent + 1; k++) put(b, " ");
      }
      first = false;
      if (ell)
        put(b, "...");
      else
        rec(b, f, d + 1, off + i * f->strides[d], indent + 1);
    }
  }
  put(b, "]");
}

/* Picks the format from the values that will be shown. */
static void choose(fmtctx *f, wk_dtype dt, int64_t numel) {
  if (dt == WK_BOOL) {
    f->kind = F_BOOL;
  } else if (!wk_dtype_is_floating(dt)) {
    f->kind = F_INT;
  } else {
    bool all_int = true;
    double amin = INFINITY, amax = 0;
    for (int64_t i = 0; i < numel; i++) {
      double v = f->vals[i];
      if (!isfinite(v)) continue;
      if (v != floor(v)) all_int = false;
      double a = fabs(v);
      if (a != 0) {
        if (a < amin) amin = a;
        if (a > amax) amax = a;
      }
    }
    if (all_int) {
      f->kind = (amax > 1e8 || (amax > 0 && amax / amin > 1000)) ? F_SCI : F_FLOAT_INT;
    } else if (amax == 0) {
      f->kind = F_FIXED;
    } else {
      f->kind = (amax / amin > 1000 || amax > 1e8 || amin < 1e-4) ? F_SCI : F_FIXED;
    }
  }
  f->width = 1;
  for (int64_t i = 0; i < numel; i++) {
    char e[64];
    /* PyTorch sizes float columns from the nonzero finite values only */
    if (wk_dtype_is_floating(dt) && (!isfinite(f->vals[i]) || f->vals[i] == 0)) continue;
    fmt_one(f, f->vals[i], e, sizeof e);
    int w = (int)strlen(e);
    if (w > f->width) f->width = w;
  }
}

/* Python's repr of a float (the shortest digits that read back the same;
 * fixed notation for exponents -4..15, else "1e-05"), as str(q_scale()) prints. */
static void py_float(double v, char *out, size_t n) {
  if (!isfinite(v)) {
    snprintf(out, n, "%s", isnan(v) ? "nan" : v < 0 ? "-inf" : "inf");
    return;
  }
  char e[40];
  for (int p = 0; p < 17; p++) {
    snprintf(e, sizeof e, "%.*e", p, v);
    if (strtod(e, NULL) == v) break;
  }
  /* e is "-d.ddde+XX": split digits and exponent */
  char digits[40];
  int nd = 0, exp10 = 0;
  bool neg = e[0] == '-';
  for (const char *c = e + neg; *c && *c != 'e'; c++)
    if (*c != '.') digits[nd++] = *c;
  digits[nd] = 0;
  const char *ep = strchr(e, 'e');
  if (ep) exp10 = atoi(ep + 1);
  while (nd > 1 && digits[nd - 1] == '0') digits[--nd] = 0;
  size_t k = 0;
  if (neg) k += (size_t)snprintf(out + k, n - k, "-");
  if (exp10 >= -4 && exp10 < 16) {
    if (exp10 < 0) {
      k += (size_t)snprintf(out + k, n - k, "0.");
      for (int i = 0; i < -exp10 - 1 && k < n; i++) k += (size_t)snprintf(out + k, n - k, "0");
      snprintf(out + k, n - k, "%s", digits);
    } else {
      for (int i = 0; i <= exp10 && k < n; i++) k += (size_t)snprintf(out + k, n - k, "%c", i < nd ? digits[i] : '0');
      if (k < n) k += (size_t)snprintf(out + k, n - k, ".");
      if (nd > exp10 + 1)
        snprintf(out + k, n - k, "%s", digits + exp10 + 1);
      else
        snprintf(out + k, n - k, "0");
    }
  } else {
    k += (size_t)snprintf(out + k, n - k, "%c", digits[0]);
    if (nd > 1) k += (size_t)snprintf(out + k, n - k, ".%s", digits + 1);
    snprintf(out + k, n - k, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
  }
}

/* PyTorch's _add_suffixes: a suffix that would pass column 80 starts a new
 * line indented like the values. */
static void put_suffix(sbuf *b, const char *suffix, size_t *last) {
  size_t n = strlen(suffix);
  if (*last + n + 2 > 80) {
    put(b, ",\n       ");
    *last = 7 + n;
  } else {
    put(b, ", ");
    *last += n + 2;
  }
  put(b, suffix);
}

/* PyTorch's suffixes of a quantized tensor: size, dtype, scheme and q-params. */
static void put_quant_suffix(sbuf *b, wk_tensor *t) {
  char s[256], num[64];
  const char *nl = b->buf ? strrchr(b->buf, '\n') : NULL;
  size_t last = nl ? (size_t)(b->buf + b->n - nl) + 1 : b->n + 2; /* len(s) - s.rfind("\n") + 1 */
  size_t k = (size_t)snprintf(s, sizeof s, "size=(");
  for (int i = 0; i < t->ndim && k < sizeof s; i++)
    k += (size_t)snprintf(s + k, sizeof s - k, "%s%lld", i ? ", " : "", (long long)t->sizes[i]);
  if (k < sizeof s) snprintf(s + k, sizeof s - k, "%s)", t->ndim == 1 ? "," : "");
  put_suffix(b, s, &last);
  const char *tn = t->dtype == WK_QINT8 ? "torch.qint8" : t->dtype == WK_QUINT8 ? "torch.quint8" : "torch.qint32";
  wk_qscheme qs = wk_tensor_qscheme(t);
  snprintf(s, sizeof s, "dtype=%s", tn);
  put_suffix(b, s, &last);
  snprintf(s, sizeof s, "quantization_scheme=%s", wk_qscheme_name(qs));
  put_suffix(b, s, &last);
  if (qs == WK_PER_TENSOR_AFFINE) {
    py_float(wk_q_scale(t), num, sizeof num);
    snprintf(s, sizeof s, "scale=%s", num);
    put_suffix(b, s, &last);
    snprintf(s, sizeof s, "zero_point=%lld", (long long)wk_q_zero_point(t));
    put_suffix(b, s, &last);
  } else if (qs == WK_PER_CHANNEL_AFFINE) {
    wk_tensor *sc = wk_q_per_channel_scales(t), *zp = wk_q_per_channel_zero_points(t);
    char *ss = sc ? wk_tensor_to_string(sc) : NULL, *zs = zp ? wk_tensor_to_string(zp) : NULL;
    sbuf tmp = {0};
    put(&tmp, "scale=");
    put(&tmp, ss ? ss : "?");
    put_suffix(b, tmp.buf ? tmp.buf : "scale=?", &last);
    tmp.n = 0;
    put(&tmp, "zero_point=");
    put(&tmp, zs ? zs : "?");
    put_suffix(b, tmp.buf ? tmp.buf : "zero_point=?", &last);
    free(tmp.buf);
    snprintf(s, sizeof s, "axis=%lld", (long long)wk_q_per_channel_axis(t));
    put_suffix(b, s, &last);
    free(ss);
    free(zs);
    wk_unref(sc);
    wk_unref(zp);
  }
}

char *wk_tensor_to_string(wk_tensor *t) {
  if (!t) {
    wk__null_arg("tensor_to_string", "t");
    return NULL;
  }
  /* A meta tensor has no values: PyTorch prints tensor(..., device='meta', size=(2, 3)). */
  bool meta = t->storage->device.type == WK_DEVICE_META;
  bool quantized = t->quant != NULL; /* values print dequantized, q-params in the suffix */
  int64_t numel = meta ? 0 : wk_tensor_numel(t);
  double *vals = wk_malloc(sizeof(double) * (size_t)(numel ? numel : 1));
  if (!vals) {
    wk_error(WK_ERR_NO_MEMORY, "tensor_to_string: out of memory");
    return NULL;
  }
  if (!meta && wk_tensor_to_f64(t, vals, numel) != WK_OK) {
    free(vals);
    return NULL;
  }
  fmtctx f = {0};
  f.vals = vals;
  f.sizes = t->sizes;
  f.ndim = t->ndim;
  f.summarize = numel > 1000;
  wk__contiguous_strides(t->sizes, t->ndim, f.strides);
  /* choose the format from the shown elements only, as PyTorch does */
  if (f.summarize) {
    double *sel = wk_malloc(sizeof(double) * (size_t)numel);
    int64_t k = 0, idx[WK_MAX_DIMS] = {0};
    for (int64_t i = 0; sel && i < numel; i++) {
      bool keep = true;
      for (int d = 0; d < t->ndim; d++) keep = keep && shown(&f, idx[d], t->sizes[d]);
      if (keep) sel[k++] = vals[i];
      for (int d = t->ndim - 1; d >= 0; d--) {
        if (++idx[d] < t->sizes[d]) break;
        idx[d] = 0;
      }
    }
    const double *all = f.vals;
    f.vals = sel ? sel : vals;
    choose(&f, quantized ? WK_F32 : t->dtype, sel ? k : numel);
    f.vals = all;
    free(sel);
  } else {
    choose(&f, quantized ? WK_F32 : t->dtype, numel);
  }
  sbuf b = {0};
  put(&b, "tensor(");
  if (meta) {
    put(&b, "...");
  } else if (t->ndim == 0) {
    char e[64];
    fmt_one(&f, vals[0], e, sizeof e);
    put(&b, e);
  } else if (numel == 0) {
    put(&b, "[]");
  } else {
    rec(&b, &f, 0, 0, 7);
  }
  free(vals);
  char extra[256] = "";
  if (!quantized && (meta || (numel == 0 && t->ndim != 1))) {
    char s[200];
    size_t k = 0;
    k += (size_t)snprintf(s + k, sizeof s - k, "(");
    for (int i = 0; i < t->ndim && k < sizeof s; i++)
      k += (size_t)snprintf(s + k, sizeof s - k, "%s%lld", i ? ", " : "", (long long)t->sizes[i]);
    if (k < sizeof s) snprintf(s + k, sizeof s - k, "%s)", t->ndim == 1 ? "," : "");
    snprintf(extra, sizeof extra, ", size=%s", s);
    if (!meta) put(&b, extra);
  }
  char size_part[256];
  snprintf(size_part, sizeof size_part, "%s", meta ? extra : "");
  wk_device dev = wk__device_norm(t->storage->device);
  if (dev.type != WK_DEVICE_CPU) {
    char db[48];
    snprintf(extra, sizeof extra, ", device='%s'", wk_device_str(dev, db, sizeof db));
    put(&b, extra);
  }
  put(&b, size_part); /* PyTorch puts a meta tensor's size after its device */
  if (quantized) put_quant_suffix(&b, t);
  bool default_dt = t->dtype == WK_F32 || t->dtype == WK_I64 || t->dtype == WK_BOOL;
  if (!quantized && (!default_dt || (!meta && numel == 0 && t->dtype != WK_F32))) {
    const char *tn = "";
    switch (t->dtype) {
#define WK__X(e, n, s, tname, w, sz, k) \
  case e:                            \
    tn = tname;                      \
    break;
      WK_DTYPE_LIST(WK__X)
      WK_QDTYPE_LIST(WK__X) /* a meta tensor of a quantized dtype (no q-params) */
#undef WK__X
      default: break;
    }
    snprintf(extra, sizeof extra, ", dtype=%s", tn);
    put(&b, extra);
  }
  if (wk_tensor_requires_grad(t)) put(&b, ", requires_grad=True");
  put(&b, ")");
  if (b.oom) {
    free(b.buf);
    wk_error(WK_ERR_NO_MEMORY, "tensor_to_string: out of memory");
    return NULL;
  }
  return b.buf;
}

wk_status wk_print(wk_tensor *t, FILE *f) {
  char *s = wk_tensor_to_string(t);
  if (!s) return wk_last_error();
  fprintf(f ? f : stdout, "%s\n", s);
  free(s);
  return WK_OK;
}
