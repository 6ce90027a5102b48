/* data plugin: readers for real formats: MNIST / Fashion-MNIST IDX files
 * (plain or gzip) and CIFAR-10/100 binary batches. Files are read through a
 * small stream (plain, or gzip inflated in chunks) so that an IDX header is
 * checked before its data is inflated and memory never exceeds what the
 * header declares. Errors are WK_ERR_IO naming the file, the record and the fault. */
#include <errno.h>
#include <zlib.h>

#include "data.h"

#define DT_MAX_FILE ((size_t)1 << 34) /* 16 GiB: refuse anything larger */

/* ---- Input stream: a plain file, or gzip members inflated chunk by chunk -------------------------- */
typedef struct {
  const char *fn, *path;
  FILE *fp;
  bool gz, zinit, member_end, eof;
  z_stream z;
  size_t out;         /* bytes produced so far */
  uint8_t in[1 << 16]; /* compressed input (gzip only) */
} dt_src;

static wk_status src_read_error(dt_src *s) {
  return wk_error(WK_ERR_IO, "%s: cannot read '%s' after %zu bytes: %s", s->fn, s->path, s->out, strerror(errno));
}
static wk_status src_open(dt_src *s, const char *fn, const char *path) {
  memset(s, 0, sizeof *s);
  s->fn = fn;
  s->path = path;
  errno = 0;
  s->fp = fopen(path, "rb");
  if (!s->fp) return wk_error(WK_ERR_IO, "%s: cannot open '%s': %s", fn, path, errno ? strerror(errno) : "out of memory");
  size_t k = fread(s->in, 1, 2, s->fp);
  if (k == 2 && s->in[0] == 0x1f && s->in[1] == 0x8b) {
    s->gz = true;
    s->z.next_in = s->in;
    s->z.avail_in = 2;
    if (inflateInit2(&s->z, 15 + 16) != Z_OK) {
      fclose(s->fp);
      return wk_error(WK_ERR_NO_MEMORY, "%s: out of memory opening '%s'", fn, path);
    }
    s->zinit = true;
  } else if (k < 2 && ferror(s->fp)) {
    wk_status st = src_read_error(s);
    fclose(s->fp);
    return st;
  } else { /* plain: the peeked bytes are served first (no seek: pipes work too) */
    s->z.next_in = s->in;
    s->z.avail_in = (unsigned)k;
  }
  return WK_OK;
}
static void src_close(dt_src *s) {
  if (s->zinit) inflateEnd(&s->z);
  if (s->fp) fclose(s->fp);
  s->fp = NULL;
  s->zinit = false;
}
/* Tops the compressed input up to at least `need` bytes when the file has them. */
static wk_status src_fill(dt_src *s, unsigned need) {
  if (s->z.avail_in >= need || s->eof) return WK_OK;
  memmove(s->in, s->z.next_in, s->z.avail_in);
  s->z.next_in = s->in;
  while (s->z.avail_in < need && !s->eof) {
    size_t k = fread(s->in + s->z.avail_in, 1, sizeof s->in - s->z.avail_in, s->fp);
    if (k == 0 && ferror(s->fp)) return src_read_error(s);
    if (k == 0) s->eof = true;
    s->z.avail_in += (unsigned)k;
  }
  return WK_OK;
}
/* Reads up to `want` bytes into `buf`; *got < want only at the end of the data.
 * A gzip stream must end cleanly (complete member, CRC and length checked);
 * further gzip members are read on, anything else after a member is refused. */
static wk_status src_read(dt_src *s, uint8_t *buf, size_t want, size_t *got) {
  *got = 0;
  if (!s->gz) {
    size_t p = want < s->z.avail_in ? want : s->z.avail_in;
    memcpy(buf, s->z.next_in, p);
    s->z.next_in += p;
    s->z.avail_in -= (unsigned)p;
    size_t k = p + (want > p ? fread(buf + p, 1, want - p, s->fp) : 0);
    if (k < want && ferror(s->fp)) return src_read_error(s);
    s->out += k;
    *got = k;
    return WK_OK;
  }
  while (*got < want) {
    wk_status st;
    if (s->member_end) { /* between members: another member, the end, or trailing garbage */
      if ((st = src_fill(s, 2)) != WK_OK) return st;
      if (s->z.avail_in == 0) return WK_OK;
      if (s->z.avail_in < 2 || s->z.next_in[0] != 0x1f || s->z.next_in[1] != 0x8b)
        return wk_error(WK_ERR_IO, "%s: '%s': trailing garbage after the gzip stream (%zu bytes inflated): the "
                        "bytes that follow are not another gzip member", s->fn, s->path, s->out);
      inflateReset(&s->z);
      s->member_end = false;
    }
    if ((st = src_fill(s, 1)) != WK_OK) return st;
    size_t chunk = want - *got > (1u << 30) ? (1u << 30) : want - *got;
    s->z.next_out = buf + *got;
    s->z.avail_out = (unsigned)chunk;
    int zr = inflate(&s->z, Z_NO_FLUSH);
    size_t made = chunk - s->z.avail_out;
    *got += made;
    s->out += made;
    if (zr == Z_STREAM_END) {
      s->member_end = true;
    } else if (zr == Z_MEM_ERROR) {
      return wk_error(WK_ERR_NO_MEMORY, "%s: out of memory inflating '%s'", s->fn, s->path);
    } else if (zr == Z_NEED_DICT || zr == Z_DATA_ERROR || zr == Z_STREAM_ERROR) {
      return wk_error(WK_ERR_IO, "%s: '%s': corrupt or truncated gzip data after %zu bytes: %s", s->fn, s->path, s->out,
                      s->z.msg ? s->z.msg : "invalid stream");
    } else if (made == 0 && s->z.avail_in == 0 && s->eof) {
      return wk_error(WK_ERR_IO, "%s: '%s': corrupt or truncated gzip data after %zu bytes: unexpected end of file",
                      s->fn, s->path, s->out);
    }
  }
  return WK_OK;
}

/* Reads the rest of `s` into *buf / *n (malloc'd, capped at DT_MAX_FILE bytes); closes `s`.
 * For formats with no header that declares a size. */
static wk_status read_rest(dt_src *s, uint8_t **buf, size_t *n) {
  *buf = NULL;
  *n = 0;
  size_t cap = 1 << 16, len = 0, got;
  uint8_t *b = wk_malloc(cap);
  wk_status st = b ? WK_OK : wk_error(WK_ERR_NO_MEMORY, "%s: out of memory reading '%s'", s->fn, s->path);
  while (st == WK_OK) {
    if (len == cap) {
      if (cap >= DT_MAX_FILE) {
        st = wk_error(WK_ERR_IO, "%s: '%s' is larger than %zu bytes", s->fn, s->path, DT_MAX_FILE);
        break;
      }
      uint8_t *nb = wk_realloc(b, cap * 2);
      if (!nb) {
        st = wk_error(WK_ERR_NO_MEMORY, "%s: out of memory reading '%s' (%zu bytes so far)", s->fn, s->path, len);
        break;
      }
      b = nb;
      cap *= 2;
    }
    if ((st = src_read(s, b + len, cap - len, &got)) != WK_OK) break;
    len += got;
    if (len < cap) break;
  }
  src_close(s);
  if (st != WK_OK) {
    wk_free(b);
    return st;
  }
  *buf = b;
  *n = len;
  return WK_OK;
}
/* Reads `path` whole (decompressing gzip) into *buf / *n (malloc'd). */
static wk_status read_all(const char *fn, const char *path, uint8_t **buf, size_t *n) {
  *buf = NULL;
  *n = 0;
  dt_src *s = wk_malloc(sizeof *s);
  if (!s) return wk_error(WK_ERR_NO_MEMORY, "%s: out of memory reading '%s'", fn, path);
  wk_status st = src_open(s, fn, path);
  if (st == WK_OK) st = read_rest(s, buf, n);
  wk_free(s);
  return st;
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
 * "images" or "labels". The header is read and checked first; the data is then
 * read into a buffer of at most the declared size, so a stream holding more
 * (a gzip bomb) is refused after one extra chunk, and one holding less is
 * refused with the sizes. */
static wk_status idx_read(dt_src *s, const char *path, int nd, const char *what, idx_file *f) {
  uint8_t h[4 + 4 * 8];
  size_t hn = 0, got;
  wk_status st = src_read(s, h, 4, &hn);
  if (st != WK_OK) return st;
  if (hn < 4)
    return wk_error(WK_ERR_IO, "mnist: %s file '%s': truncated: %zu bytes, an IDX file starts with a 4-byte magic number",
                    what, path, hn);
  if (h[0] != 0 || h[1] != 0)
    return wk_error(WK_ERR_IO, "mnist: %s file '%s': bad magic number 0x%08x (IDX files start with two zero bytes, a "
                    "type byte and a dimension count)", what, path, be32(h));
  if (!idx_esize(h[2]))
    return wk_error(WK_ERR_IO, "mnist: %s file '%s': bad magic number 0x%08x: unknown element type 0x%02x", what, path,
                    be32(h), h[2]);
  if (h[3] != nd)
    return wk_error(WK_ERR_IO, "mnist: %s file '%s': magic number 0x%08x declares %d dimensions, %s files have %d%s", what,
                    path, be32(h), h[3], what, nd,
                    h[3] == 1 || h[3] == 3 ? (nd == 3 ? " (is this a labels file?)" : " (is this an images file?)") : "");
  if (h[2] != 0x08)
    return wk_error(WK_ERR_IO, "mnist: %s file '%s': element type 0x%02x, expected 0x08 (unsigned byte)", what, path, h[2]);
  f->hdr = 4 + 4 * (size_t)nd;
  if ((st = src_read(s, h + 4, f->hdr - 4, &got)) != WK_OK) return st;
  hn += got;
  if (hn < f->hdr)
    return wk_error(WK_ERR_IO, "mnist: %s file '%s': truncated header: %zu bytes, the %d dimensions need %d", what, path,
                    hn, nd, 4 + 4 * nd);
  f->type = h[2];
  f->nd = nd;
  uint64_t rec = idx_esize(h[2]); /* bytes per record: dims[1..) x element size, each factor < 2^32 */
  for (int d = 0; d < nd; d++) {
    f->dims[d] = be32(h + 4 + 4 * d);
    if (d > 0 && f->dims[d] == 0) return wk_error(WK_ERR_IO, "mnist: %s file '%s': dimension %d is 0", what, path, d);
    if (d > 0) rec *= (uint64_t)f->dims[d];
    if (rec > ((uint64_t)1 << 32)) /* checked at every step, so the next product cannot overflow */
      return wk_error(WK_ERR_IO, "mnist: %s file '%s': records of more than %llu bytes are too large", what, path,
                      (unsigned long long)1 << 32);
  }
  uint64_t want = (uint64_t)f->dims[0] * rec; /* < 2^32 * 2^32: no overflow */
  if (want > DT_MAX_FILE - f->hdr)
    return wk_error(WK_ERR_IO, "mnist: %s file '%s': the header declares %lld records of %llu bytes (%llu bytes), more "
                    "than the %zu-byte limit", what, path, (long long)f->dims[0], (unsigned long long)rec,
                    (unsigned long long)want, DT_MAX_FILE);
  /* The buffer grows with the data actually read, up to exactly the declared size. */
  size_t total = f->hdr + (size_t)want, cap = total < ((size_t)1 << 20) ? total : ((size_t)1 << 20), len = f->hdr;
  f->buf = wk_malloc(cap);
  if (!f->buf) return wk_error(WK_ERR_NO_MEMORY, "mnist: out of memory reading '%s' (%zu bytes)", path, cap);
  memcpy(f->buf, h, f->hdr);
  for (;;) {
    if ((st = src_read(s, f->buf + len, cap - len, &got)) != WK_OK) return st;
    len += got;
    if (len < cap || cap == total) break;
    size_t ncap = cap > total / 2 ? total : cap * 2;
    uint8_t *nb = wk_realloc(f->buf, ncap);
    if (!nb)
      return wk_error(WK_ERR_NO_MEMORY, "mnist: out of memory reading '%s' (%zu of %zu bytes)", path, ncap, total);
    f->buf = nb;
    cap = ncap;
  }
  size_t data = len - f->hdr;
  if (data < want)
    return wk_error(WK_ERR_IO, "mnist: %s file '%s': truncated: the header declares %lld records of %llu bytes (%llu bytes) "
                    "but %zu bytes follow: record %llu is incomplete", what, path, (long long)f->dims[0],
                    (unsigned long long)rec, (unsigned long long)want, data, (unsigned long long)(data / rec));
  /* Anything past the declared size is an error: look one chunk ahead, never further. */
  uint8_t extra[1 << 12];
  if ((st = src_read(s, extra, sizeof extra, &got)) != WK_OK) return st;
  if (got == sizeof extra)
    return wk_error(WK_ERR_IO, "mnist: %s file '%s': the data goes on past the %lld records (%llu bytes) the header "
                    "declares: at least %zu trailing bytes (reading stopped there)", what, path, (long long)f->dims[0],
                    (unsigned long long)want, got);
  if (got)
    return wk_error(WK_ERR_IO, "mnist: %s file '%s': %zu trailing bytes after the %lld records the header declares", what,
                    path, got, (long long)f->dims[0]);
  f->n = len;
  return WK_OK;
}
static wk_status idx_load(const char *path, int nd, const char *what, idx_file *f) {
  memset(f, 0, sizeof *f);
  dt_src *s = wk_malloc(sizeof *s);
  if (!s) return wk_error(WK_ERR_NO_MEMORY, "mnist: out of memory reading '%s'", path);
  wk_status st = src_open(s, "mnist", path);
  if (st == WK_OK) {
    st = idx_read(s, path, nd, what, f);
    src_close(s);
  }
  wk_free(s);
  if (st != WK_OK) {
    wk_free(f->buf);
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
  wk_free(d->buf);
  wk_free(d->labels);
  wk_free(d);
}

wk_dataset *dt_mnist(const char *images_path, const char *labels_path) {
  if (!images_path || !labels_path) {
    wk_error(WK_ERR_NULL, "mnist: argument '%s' is NULL", !images_path ? "images_path" : "labels_path");
    return NULL;
  }
  idx_file im, lb;
  if (idx_load(images_path, 3, "images", &im) != WK_OK) return NULL;
  if (idx_load(labels_path, 1, "labels", &lb) != WK_OK) {
    wk_free(im.buf);
    return NULL;
  }
  image_ds *d = wk_calloc(1, sizeof *d);
  int64_t *labels = wk_malloc(sizeof(int64_t) * (size_t)(lb.dims[0] ? lb.dims[0] : 1));
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
  wk_free(lb.buf);
  if (st != WK_OK) {
    wk_free(im.buf);
    wk_free(labels);
    wk_free(d);
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
  image_ds *d = wk_calloc(1, sizeof *d);
  if (!d) {
    wk_error(WK_ERR_NO_MEMORY, "cifar: out of memory");
    return NULL;
  }
  wk_status st = WK_OK;
  size_t total = 0, cap = 0;
  dt_src *s = wk_malloc(sizeof *s);
  if (!s) st = wk_error(WK_ERR_NO_MEMORY, "cifar: out of memory");
  for (int k = 0; k < npaths && st == WK_OK; k++) {
    if (!paths[k]) {
      st = wk_error(WK_ERR_NULL, "cifar: path %d is NULL", k);
      break;
    }
    if ((st = src_open(s, "cifar", paths[k])) != WK_OK) break;
    /* Record by record straight into the images buffer: no copy of the whole file is held. */
    uint8_t p[2 + 3072];
    for (size_t r = 0;; r++) {
      size_t got;
      if ((st = src_read(s, p, rec, &got)) != WK_OK) break;
      if (got == 0 && r == 0) {
        st = wk_error(WK_ERR_IO, "cifar: '%s' is empty", paths[k]);
        break;
      }
      if (got == 0) break;
      if (got < rec) {
        size_t n = r * rec + got;
        st = wk_error(WK_ERR_IO, "cifar: '%s': truncated: %zu bytes is not a whole number of %zu-byte CIFAR-%d records: "
                      "record %zu has %zu bytes%s", paths[k], n, rec, classes, r, got,
                      n % (classes == 10 ? 3074 : 3073) ? "" : classes == 10 ? " (the size fits CIFAR-100 records)"
                                                                           : " (the size fits CIFAR-10 records)");
        break;
      }
      if (total == cap) {
        if ((total + 1) * img > DT_MAX_FILE) {
          st = wk_error(WK_ERR_IO, "cifar: '%s': more than %zu bytes of images", paths[k], DT_MAX_FILE);
          break;
        }
        size_t ncap = cap ? cap * 2 : 1024;
        uint8_t *nb = wk_realloc(d->buf, ncap * img);
        if (nb) d->buf = nb;
        int64_t *nl = nb ? wk_realloc(d->labels, ncap * sizeof(int64_t)) : NULL;
        if (nl) d->labels = nl;
        if (!nb || !nl) {
          st = wk_error(WK_ERR_NO_MEMORY, "cifar: out of memory (%zu records)", ncap);
          break;
        }
        cap = ncap;
      }
      if (classes == 100 && p[0] >= 20)
        st = wk_error(WK_ERR_IO, "cifar: '%s': record %zu: coarse label %u is out of range [0, 19]", paths[k], r, p[0]);
      else if (p[nlab - 1] >= classes)
        st = wk_error(WK_ERR_IO, "cifar: '%s': record %zu: %slabel %u is out of range [0, %d]", paths[k], r,
                      classes == 100 ? "fine " : "", p[nlab - 1], classes - 1);
      if (st != WK_OK) break;
      d->labels[total] = p[nlab - 1];
      memcpy(d->buf + total * img, p + nlab, img);
      total++;
    }
    src_close(s);
  }
  wk_free(s);
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
  wk_free(d->x);
  wk_free(d->labels);
  wk_free(d);
}
wk_dataset *dt_csv(const char *path, bool header, int label_col) {
  if (!path) {
    wk_error(WK_ERR_NULL, "csv: argument 'path' is NULL");
    return NULL;
  }
  uint8_t *buf;
  size_t n;
  if (read_all("csv", path, &buf, &n) != WK_OK) return NULL;
  char *text = wk_realloc(buf, n + 1);
  if (!text) {
    wk_free(buf);
    wk_error(WK_ERR_NO_MEMORY, "csv: out of memory");
    return NULL;
  }
  text[n] = 0;
  size_t z = strlen(text);
  if (z != n) {
    wk_free(text);
    wk_error(WK_ERR_IO, "csv: '%s': contains a NUL byte at offset %zu (not a text file)", path, z);
    return NULL;
  }
  csv_ds *d = wk_calloc(1, sizeof *d);
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
      float *nx = wk_realloc(d->x, sizeof(float) * (size_t)(cap * d->nf + 1));
      if (nx) d->x = nx;
      int64_t *nl = label_col >= 0 ? wk_realloc(d->labels, sizeof(int64_t) * (size_t)cap) : NULL;
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
  wk_free(text);
  if (st != WK_OK) {
    if (d) csv_free(d);
    return NULL;
  }
  return dt_dataset_wrap(csv_len, csv_get, csv_free, d);
}
