/* data plugin: readers for real formats: MNIST / Fashion-MNIST IDX files
 * (plain or gzip) and CIFAR-10/100 binary batches. Every file is read whole
 * (through zlib, which passes plain files through), then validated before any
 * record is used: no read goes past the buffer. Errors are WK_ERR_IO naming the
 * file, the record and the fault. */
#include <errno.h>
#include <zlib.h>

#include "data.h"

#define DT_MAX_FILE ((size_t)1 << 34) /* 16 GiB: refuse anything larger */

/* Reads `path` whole (decompressing gzip) into *buf / *n (malloc'd). */
static wk_status read_all(const char *fn, const char *path, uint8_t **buf, size_t *n) {
  *buf = NULL;
  *n = 0;
  gzFile f = gzopen(path, "rb");
  if (!f) return wk_error(WK_ERR_IO, "%s: cannot open '%s': %s", fn, path, errno ? strerror(errno) : "out of memory");
  gzbuffer(f, 1 << 17);
  size_t cap = 1 << 16, len = 0;
  uint8_t *b = malloc(cap);
  wk_status st = b ? WK_OK : wk_error(WK_ERR_NO_MEMORY, "%s: out of memory reading '%s'", fn, path);
  while (st == WK_OK) {
    if (len == cap) {
      if (cap >= DT_MAX_FILE) {
        st = wk_error(WK_ERR_IO, "%s: '%s' is larger than %zu bytes", fn, path, DT_MAX_FILE);
        break;
      }
      uint8_t *nb = realloc(b, cap * 2);
      if (!nb) {
        st = wk_error(WK_ERR_NO_MEMORY, "%s: out of memory reading '%s' (%zu bytes so far)", fn, path, len);
        break;
      }
      b = nb;
      cap *= 2;
    }
    size_t want = cap - len > (1u << 30) ? (1u << 30) : cap - len;
    int got = gzread(f, b + len, (unsigned)want);
    if (got < 0) {
      int zerr = 0;
      const char *m = gzerror(f, &zerr);
      st = wk_error(WK_ERR_IO, "%s: '%s': corrupt or truncated gzip data after %zu bytes: %s", fn, path, len,
                    zerr == Z_ERRNO ? strerror(errno) : m);
      break;
    }
    if (got == 0) break;
    len += (size_t)got;
  }
  int zc = gzclose(f); /* Z_BUF_ERROR: the last read ended inside a gzip stream */
  if (st == WK_OK && zc == Z_BUF_ERROR)
    st = wk_error(WK_ERR_IO, "%s: '%s': corrupt or truncated gzip data after %zu bytes: unexpected end of file", fn, path, len);
  if (st != WK_OK) {
    free(b);
    return st;
  }
  *buf = b;
  *n = len;
  return WK_OK;
}

/* ---- IDX ----------------------------------------------------------------------------------------- */
typedef struct {
  uint8_t *buf;
  size_t n, hdr;
  int type, nd;
  int64_t dims[8];
} idx_file;

static size_t idx_esize(int type) {
  switch (type) {
    case 0x08: case 0x09: return 1;
    case 0x0B: return 2;
    case 0x0C: case 0x0D: return 4;
    case 0x0E: return 8;
    default: return 0;
  }
}
static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

/* Reads and validates an IDX file of `nd` dims and unsigned bytes. `what` is
 * "images" or "labels". */
static wk_status idx_load(const char *path, int nd, const char *what, idx_file *f) {
  memset(f, 0, sizeof *f);
  wk_status st = read_all("mnist", path, &f->buf, &f->n);
  if (st != WK_OK) return st;
  const uint8_t *b = f->buf;
  if (f->n < 4)
    st = wk_error(WK_ERR_IO, "mnist: %s file '%s': truncated: %zu bytes, an IDX file starts with a 4-byte magic number",
                  what, path, f->n);
  else if (b[0] != 0 || b[1] != 0)
    st = wk_error(WK_ERR_IO, "mnist: %s file '%s': bad magic number 0x%08x (IDX files start with two zero bytes, a type "
                  "byte and a dimension count)", what, path, be32(b));
  else if (!idx_esize(b[2]))
    st = wk_error(WK_ERR_IO, "mnist: %s file '%s': bad magic number 0x%08x: unknown element type 0x%02x", what, path,
                  be32(b), b[2]);
  else if (b[3] != nd)
    st = wk_error(WK_ERR_IO, "mnist: %s file '%s': magic number 0x%08x declares %d dimensions, %s files have %d%s", what,
                  path, be32(b), b[3], what, nd,
                  b[3] == 1 || b[3] == 3 ? (nd == 3 ? " (is this a labels file?)" : " (is this an images file?)") : "");
  else if (b[2] != 0x08)
    st = wk_error(WK_ERR_IO, "mnist: %s file '%s': element type 0x%02x, expected 0x08 (unsigned byte)", what, path, b[2]);
  else if (f->n < 4 + 4 * (size_t)nd)
    st = wk_error(WK_ERR_IO, "mnist: %s file '%s': truncated header: %zu bytes, the %d dimensions need %d", what, path,
                  f->n, nd, 4 + 4 * nd);
  if (st != WK_OK) {
    free(f->buf);
    f->buf = NULL;
    return st;
  }
  f->type = b[2];
  f->nd = nd;
  f->hdr = 4 + 4 * (size_t)nd;
  uint64_t rec = 1; /* bytes per record */
  for (int d = 0; d < nd; d++) {
    f->dims[d] = be32(b + 4 + 4 * d);
    if (d > 0) rec *= (uint64_t)f->dims[d];
    if (d > 0 && f->dims[d] == 0)
      st = wk_error(WK_ERR_IO, "mnist: %s file '%s': dimension %d is 0", what, path, d);
  }
  size_t data = f->n - f->hdr;
  uint64_t want = (uint64_t)f->dims[0] * rec; /* < 2^96 cannot happen: dims < 2^32, rec < 2^64 checked below */
  if (st == WK_OK && rec > ((uint64_t)1 << 32))
    st = wk_error(WK_ERR_IO, "mnist: %s file '%s': records of %llu bytes are too large", what, path, (unsigned long long)rec);
  else if (st == WK_OK && want > data)
    st = wk_error(WK_ERR_IO, "mnist: %s file '%s': truncated: the header declares %lld records of %llu bytes (%llu bytes) "
                  "but %zu bytes follow: record %llu is incomplete", what, path, (long long)f->dims[0],
                  (unsigned long long)rec, (unsigned long long)want, data, (unsigned long long)(data / rec));
  else if (st == WK_OK && want < data)
    st = wk_error(WK_ERR_IO, "mnist: %s file '%s': %zu trailing bytes after the %lld records the header declares", what,
                  path, data - (size_t)want, (long long)f->dims[0]);
  if (st != WK_OK) {
    free(f->buf);
    f->buf = NULL;
  }
  return st;
}

typedef struct {
  int64_t n, c, h, w;
  uint8_t *buf;        /* owned: the images file (MNIST) or the records (CIFAR) */
  const uint8_t *img;  /* image i at img + i * stride */
  size_t stride;
  int64_t *labels;
} image_ds;
static int64_t image_len(void *p) { return ((image_ds *)p)->n; }
static wk_status image_get(void *p, int64_t i, const wk_sample_ctx *ctx, wk_sample *out) {
  image_ds *d = p;
  wk_tensor *x = wk_empty(WK_SHAPE(d->c, d->h, d->w), (wk_options){.dtype = WK_U8});
  if (!x) return wk_last_error();
  memcpy(wk_tensor_data(x), d->img + (size_t)i * d->stride, (size_t)(d->c * d->h * d->w));
  wk_tensor *y = wk_scalar_tensor((double)d->labels[i], WK_I64);
  if (!y) {
    wk_release(x);
    return wk_last_error();
  }
  out->t[0] = x;
  out->t[1] = y;
  out->n = 2;
  return WK_OK;
}
static void image_free(void *p) {
  image_ds *d = p;
  free(d->buf);
  free(d->labels);
  free(d);
}

wk_dataset *dt_mnist(const char *images_path, const char *labels_path) {
  if (!images_path || !labels_path) {
    wk_error(WK_ERR_NULL, "mnist: argument '%s' is NULL", !images_path ? "images_path" : "labels_path");
    return NULL;
  }
  idx_file im, lb;
  if (idx_load(images_path, 3, "images", &im) != WK_OK) return NULL;
  if (idx_load(labels_path, 1, "labels", &lb) != WK_OK) {
    free(im.buf);
    return NULL;
  }
  image_ds *d = calloc(1, sizeof *d);
  int64_t *labels = malloc(sizeof(int64_t) * (size_t)(lb.dims[0] ? lb.dims[0] : 1));
  wk_status st = d && labels ? WK_OK : wk_error(WK_ERR_NO_MEMORY, "mnist: out of memory");
  if (st == WK_OK && im.dims[0] != lb.dims[0])
    st = wk_error(WK_ERR_IO, "mnist: images file '%s' has %lld records but labels file '%s' has %lld", images_path,
                  (long long)im.dims[0], labels_path, (long long)lb.dims[0]);
  for (int64_t i = 0; st == WK_OK && i < lb.dims[0]; i++) {
    uint8_t v = lb.buf[lb.hdr + (size_t)i];
    if (v > 9)
      st = wk_error(WK_ERR_IO, "mnist: labels file '%s': record %lld: label %u is out of range [0, 9]", labels_path,
                    (long long)i, v);
    labels[i] = v;
  }
  free(lb.buf);
  if (st != WK_OK) {
    free(im.buf);
    free(labels);
    free(d);
    return NULL;
  }
  d->n = im.dims[0];
  d->c = 1;
  d->h = im.dims[1];
  d->w = im.dims[2];
  d->buf = im.buf;
  d->img = im.buf + im.hdr;
  d->stride = (size_t)(d->h * d->w);
  d->labels = labels;
  return dt_dataset_wrap(image_len, image_get, image_free, d);
}

/* ---- CIFAR-10 / CIFAR-100 binary batches ------------------------------------------------------- */
wk_dataset *dt_cifar(const char *const *paths, int npaths, int classes) {
  if (!paths) {
    wk_error(WK_ERR_NULL, "cifar: argument 'paths' is NULL");
    return NULL;
  }
  if (classes != 10 && classes != 100) {
    wk_error(WK_ERR_INVALID_ARG, "cifar: classes must be 10 or 100, got %d", classes);
    return NULL;
  }
  if (npaths < 1) {
    wk_error(WK_ERR_INVALID_ARG, "cifar: needs at least one batch file");
    return NULL;
  }
  const size_t nlab = classes == 10 ? 1 : 2, img = 3072, rec = nlab + img;
  image_ds *d = calloc(1, sizeof *d);
  if (!d) {
    wk_error(WK_ERR_NO_MEMORY, "cifar: out of memory");
    return NULL;
  }
  wk_status st = WK_OK;
  size_t total = 0;
  for (int k = 0; k < npaths && st == WK_OK; k++) {
    uint8_t *b;
    size_t n;
    if (!paths[k]) {
      st = wk_error(WK_ERR_NULL, "cifar: path %d is NULL", k);
      break;
    }
    if ((st = read_all("cifar", paths[k], &b, &n)) != WK_OK) break;
    if (n == 0)
      st = wk_error(WK_ERR_IO, "cifar: '%s' is empty", paths[k]);
    else if (n % rec)
      st = wk_error(WK_ERR_IO, "cifar: '%s': truncated: %zu bytes is not a whole number of %zu-byte CIFAR-%d records: "
                    "record %zu has %zu bytes%s", paths[k], n, rec, classes, n / rec, n % rec,
                    n % (classes == 10 ? 3074 : 3073) ? "" : classes == 10 ? " (the size fits CIFAR-100 records)"
                                                                         : " (the size fits CIFAR-10 records)");
    size_t m = st == WK_OK ? n / rec : 0;
    uint8_t *nb = st == WK_OK ? realloc(d->buf, (total + m) * img) : NULL;
    int64_t *nl = st == WK_OK && nb ? realloc(d->labels, (total + m) * sizeof(int64_t)) : NULL;
    if (nb) d->buf = nb;
    if (nl) d->labels = nl;
    if (st == WK_OK && (!nb || !nl)) st = wk_error(WK_ERR_NO_MEMORY, "cifar: out of memory");
    for (size_t r = 0; st == WK_OK && r < m; r++) {
      const uint8_t *p = b + r * rec;
      if (classes == 100 && p[0] >= 20)
        st = wk_error(WK_ERR_IO, "cifar: '%s': record %zu: coarse label %u is out of range [0, 19]", paths[k], r, p[0]);
      else if (p[nlab - 1] >= classes)
        st = wk_error(WK_ERR_IO, "cifar: '%s': record %zu: %slabel %u is out of range [0, %d]", paths[k], r,
                      classes == 100 ? "fine " : "", p[nlab - 1], classes - 1);
      d->labels[total + r] = p[nlab - 1];
      memcpy(d->buf + (total + r) * img, p + nlab, img);
    }
    total += m;
    free(b);
  }
  if (st != WK_OK) {
    image_free(d);
    return NULL;
  }
  d->n = (int64_t)total;
  d->c = 3;
  d->h = d->w = 32;
  d->img = d->buf;
  d->stride = img;
  return dt_dataset_wrap(image_len, image_get, image_free, d);
}

/* ---- CSV of numbers ------------------------------------------------------------------------------------ */
typedef struct {
  int64_t n, nf;
  float *x;
  int64_t *labels; /* NULL without a label column */
} csv_ds;
static int64_t csv_len(void *p) { return ((csv_ds *)p)->n; }
static wk_status csv_get(void *p, int64_t i, const wk_sample_ctx *ctx, wk_sample *out) {
  csv_ds *d = p;
  wk_tensor *x = wk_tensor_from_data(d->x + i * d->nf, WK_F32, WK_SHAPE(d->nf));
  if (!x) return wk_last_error();
  out->t[out->n++] = x;
  if (d->labels && !(out->t[out->n++] = wk_scalar_tensor((double)d->labels[i], WK_I64))) return wk_last_error();
  return WK_OK;
}
static void csv_free(void *p) {
  csv_ds *d = p;
  free(d->x);
  free(d->labels);
  free(d);
}
wk_dataset *dt_csv(const char *path, bool header, int label_col) {
  if (!path) {
    wk_error(WK_ERR_NULL, "csv: argument 'path' is NULL");
    return NULL;
  }
  uint8_t *buf;
  size_t n;
  if (read_all("csv", path, &buf, &n) != WK_OK) return NULL;
  char *text = realloc(buf, n + 1);
  if (!text) {
    free(buf);
    wk_error(WK_ERR_NO_MEMORY, "csv: out of memory");
    return NULL;
  }
  text[n] = 0;
  size_t z = strlen(text);
  if (z != n) {
    free(text);
    wk_error(WK_ERR_IO, "csv: '%s': contains a NUL byte at offset %zu (not a text file)", path, z);
    return NULL;
  }
  csv_ds *d = calloc(1, sizeof *d);
  wk_status st = d ? WK_OK : wk_error(WK_ERR_NO_MEMORY, "csv: out of memory");
  int64_t ncols = -1, cap = 0, line = 0;
  for (char *ln = text, *next = NULL; ln && st == WK_OK; ln = next ? next + 1 : NULL) {
    next = strchr(ln, '\n');
    if (next) *next = 0;
    line++;
    size_t L = strlen(ln);
    if (L && ln[L - 1] == '\r') ln[--L] = 0;
    if (L == 0 || (header && line == 1)) continue;
    int64_t cols = 1;
    for (char *c = ln; *c; c++) cols += *c == ',';
    if (ncols < 0) {
      ncols = cols;
      if (label_col >= ncols || (label_col >= 0 && ncols < 2))
        st = wk_error(WK_ERR_INVALID_ARG, "csv: '%s': label column %d but line %lld has %lld fields", path, label_col,
                      (long long)line, (long long)cols);
      d->nf = label_col >= 0 ? ncols - 1 : ncols;
    } else if (cols != ncols) {
      st = wk_error(WK_ERR_IO, "csv: '%s': line %lld has %lld fields, expected %lld", path, (long long)line, (long long)cols,
                    (long long)ncols);
    }
    if (st == WK_OK && d->n == cap) {
      cap = cap ? cap * 2 : 64;
      float *nx = realloc(d->x, sizeof(float) * (size_t)(cap * d->nf + 1));
      if (nx) d->x = nx;
      int64_t *nl = label_col >= 0 ? realloc(d->labels, sizeof(int64_t) * (size_t)cap) : NULL;
      if (nl) d->labels = nl;
      if (!nx || (label_col >= 0 && !nl)) st = wk_error(WK_ERR_NO_MEMORY, "csv: out of memory");
    }
    char *f = ln;
    for (int64_t c = 0, k = 0; st == WK_OK && c < ncols; c++) {
      char *end = strchr(f, ','), *num_end;
      if (end) *end = 0;
      double v = strtod(f, &num_end);
      while (*num_end == ' ' || *num_end == '\t') num_end++;
      if (num_end == f || *num_end)
        st = wk_error(WK_ERR_IO, "csv: '%s': line %lld, field %lld: '%.40s' is not a number", path, (long long)line,
                      (long long)c + 1, f);
      else if (c == label_col && (v < 0 || v != (double)(int64_t)v))
        st = wk_error(WK_ERR_IO, "csv: '%s': line %lld: label '%.40s' is not a non-negative integer", path, (long long)line, f);
      else if (c == label_col)
        d->labels[d->n] = (int64_t)v;
      else
        d->x[d->n * d->nf + k++] = (float)v;
      f = end ? end + 1 : f;
    }
    if (st == WK_OK) d->n++;
  }
  free(text);
  if (st != WK_OK) {
    if (d) csv_free(d);
    return NULL;
  }
  return dt_dataset_wrap(csv_len, csv_get, csv_free, d);
}
