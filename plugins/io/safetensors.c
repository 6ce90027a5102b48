/* io plugin: the safetensors format. A file is an 8-byte little-endian header
 * length N, N bytes of JSON header ({"name": {"dtype", "shape", "data_offsets":
 * [begin, end)}, "__metadata__": {str: str}}, padded with spaces), then the
 * data section the offsets point into. Loading trusts nothing in the file;
 * saving goes through a temporary file renamed over the target. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "io.h"
#include "stale_tmp.h"

#define ST_MAX_HEADER 100000000ull /* safetensors' own limit */
#define ST_MAX_TENSORS 65536       /* the documented limit (io.h): bounds a crafted file's memory */
#define ST_MAX_ELEMS 9.0e15        /* the core's limit on a shape's element count */
#define ST_MAX_DEPTH 64            /* JSON nesting: a safetensors header needs 3 */

static const struct {
  const char *name;
  wk_dtype dt;
} g_dtypes[] = {{"F32", WK_F32}, {"F64", WK_F64}, {"F16", WK_F16}, {"BF16", WK_BF16}, {"I8", WK_I8},
                {"U8", WK_U8},   {"I16", WK_I16}, {"I32", WK_I32}, {"I64", WK_I64},   {"BOOL", WK_BOOL}};
#define NDTYPES (sizeof g_dtypes / sizeof g_dtypes[0])

static const char *dtype_name(wk_dtype dt) {
  for (size_t i = 0; i < NDTYPES; i++)
    if (g_dtypes[i].dt == dt) return g_dtypes[i].name;
  return NULL;
}

static wk_dtype dtype_parse(const char *s) {
  for (size_t i = 0; i < NDTYPES; i++)
    if (strcmp(g_dtypes[i].name, s) == 0) return g_dtypes[i].dt;
  return WK_DTYPE_DEFAULT;
}

static bool big_endian_host(void) {
  const uint16_t one = 1;
  return *(const unsigned char *)&one == 0;
}

/* Index of the first byte that is not valid UTF-8, or -1. */
static int64_t utf8_bad(const unsigned char *p, size_t n) {
  size_t i = 0;
  while (i < n) {
    uint32_t c = p[i];
    size_t len;
    uint32_t min;
    if (c < 0x80) {
      i++;
      continue;
    }
    if ((c & 0xE0) == 0xC0)
      len = 2, min = 0x80, c &= 0x1F;
    else if ((c & 0xF0) == 0xE0)
      len = 3, min = 0x800, c &= 0x0F;
    else if ((c & 0xF8) == 0xF0)
      len = 4, min = 0x10000, c &= 0x07;
    else
      return (int64_t)i;
    if (len > n - i) return (int64_t)i;
    for (size_t k = 1; k < len; k++) {
      if ((p[i + k] & 0xC0) != 0x80) return (int64_t)i;
      c = (c << 6) | (p[i + k] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return (int64_t)i;
    i += len;
  }
  return -1;
}

/* Adds context in front of the error already recorded (keeping its code). */
static wk_status wrap_error(wk_status fallback, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static wk_status wrap_error(wk_status fallback, const char *fmt, ...) {
  char pre[512], inner[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(pre, sizeof pre, fmt, ap);
  va_end(ap);
  wk_status code = wk_last_error();
  snprintf(inner, sizeof inner, "%s", code ? wk_last_error_message() : "unknown error");
  return wk_error_replace(code ? code : fallback, "%s: %s", pre, inner);
}

/* ============================== loading ============================== */

typedef struct {
  const char *fn, *what; /* the public call; the file path or "<buffer>" */
  int fd;                /* -1 for a memory buffer */
  const unsigned char *buf;
  uint64_t size;
} src;

static wk_status fail(const src *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static wk_status fail(const src *s, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return wk_error(WK_ERR_IO, "%s: '%.300s': %s", s->fn, s->what, msg);
}

/* Reads n bytes at off (already checked to lie inside the source). */
static wk_status src_read(const src *s, uint64_t off, void *dst, uint64_t n) {
  if (s->fd < 0) {
    memcpy(dst, s->buf + off, (size_t)n);
    return WK_OK;
  }
  unsigned char *p = dst;
  while (n) {
    size_t chunk = n > (1u << 30) ? (1u << 30) : (size_t)n;
    ssize_t r = pread(s->fd, p, chunk, (off_t)off);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return fail(s, "read error at byte %llu: %s", (unsigned long long)off, strerror(errno));
    if (r == 0)
      return fail(s, "the file ended at byte %llu while reading it (was it truncated meanwhile?)",
                  (unsigned long long)off);
    p += r, off += (uint64_t)r, n -= (uint64_t)r;
  }
  return WK_OK;
}

typedef struct {
  const char *name; /* points into the parsed JSON */
  wk_dtype dt;
  int ndim;
  int64_t sizes[WK_MAX_DIMS];
  uint64_t begin, end;
} entry;

/* A JSON number that is an exact integer in [0, 2^53]. */
static bool json_u64(const cJSON *n, uint64_t *out) {
  if (!cJSON_IsNumber(n)) return false;
  double d = n->valuedouble;
  if (!(d >= 0 && d <= 9007199254740992.0)) return false;
  uint64_t u = (uint64_t)d;
  if ((double)u != d) return false;
  *out = u;
  return true;
}

static wk_status parse_entry(const src *s, const cJSON *item, uint64_t data_size, entry *e) {
  const char *name = item->string;
  e->name = name;
  if (!*name) return fail(s, "a tensor has an empty name");
  if (!cJSON_IsObject(item)) return fail(s, "tensor '%.200s': its entry is not a JSON object", name);
  const cJSON *dt = cJSON_GetObjectItemCaseSensitive(item, "dtype");
  const cJSON *sh = cJSON_GetObjectItemCaseSensitive(item, "shape");
  const cJSON *of = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
  if (!cJSON_IsString(dt)) return fail(s, "tensor '%.200s': \"dtype\" is missing or not a string", name);
  e->dt = dtype_parse(dt->valuestring);
  if (!e->dt)
    return fail(s,
                "tensor '%.200s': unknown or unsupported dtype '%.40s' (supported: F32 F64 F16 BF16 I8 U8 "
                "I16 I32 I64 BOOL)",
                name, dt->valuestring);
  if (!cJSON_IsArray(sh)) return fail(s, "tensor '%.200s': \"shape\" is missing or not an array", name);
  int nd = cJSON_GetArraySize(sh);
  if (nd > WK_MAX_DIMS)
    return fail(s, "tensor '%.200s': shape has %d dimensions, more than the %d supported", name, nd, WK_MAX_DIMS);
  e->ndim = nd;
  double span = 1; /* product of max(size, 1): bounds the strides too */
  bool empty = false;
  const cJSON *d;
  int i = 0;
  cJSON_ArrayForEach(d, sh) {
    uint64_t v;
    if (!json_u64(d, &v)) return fail(s, "tensor '%.200s': shape entry %d is not a non-negative integer", name, i);
    e->sizes[i++] = (int64_t)v;
    if (v == 0) empty = true;
    span *= v > 1 ? (double)v : 1.0;
  }
  char shp[256];
  wk_sizes_str(e->sizes, nd, shp, sizeof shp);
  if (span > ST_MAX_ELEMS) return fail(s, "tensor '%.200s': shape %s is too large", name, shp);
  uint64_t numel = 1;
  for (i = 0; i < nd && !empty; i++) numel *= (uint64_t)e->sizes[i]; /* < 9e15: no overflow */
  uint64_t need = empty ? 0 : numel * wk_dtype_size(e->dt);          /* < 7.2e16 */
  uint64_t b, en;
  if (!cJSON_IsArray(of) || cJSON_GetArraySize(of) != 2 || !json_u64(cJSON_GetArrayItem(of, 0), &b) ||
      !json_u64(cJSON_GetArrayItem(of, 1), &en))
    return fail(s, "tensor '%.200s': \"data_offsets\" is missing or not two non-negative integers", name);
  if (en < b)
    return fail(s, "tensor '%.200s': data_offsets [%llu, %llu] end before they begin", name, (unsigned long long)b,
                (unsigned long long)en);
  if (en > data_size)
    return fail(s, "tensor '%.200s': data_offsets [%llu, %llu] reach past the end of the data section (%llu bytes)",
                name, (unsigned long long)b, (unsigned long long)en, (unsigned long long)data_size);
  if (en - b != need)
    return fail(s, "tensor '%.200s': data_offsets [%llu, %llu] hold %llu bytes but shape %s of %s needs %llu", name,
                (unsigned long long)b, (unsigned long long)en, (unsigned long long)(en - b), shp, dt->valuestring,
                (unsigned long long)need);
  e->begin = b, e->end = en;
  return WK_OK;
}

static int by_name(const void *a, const void *b) {
  return strcmp((*(entry *const *)a)->name, (*(entry *const *)b)->name);
}
static int by_offset(const void *a, const void *b) {
  const entry *x = *(entry *const *)a, *y = *(entry *const *)b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return 0;
}

/* Duplicate names; offsets ordered, contiguous, non-overlapping and covering
 * the data section exactly (what the format requires). */
static wk_status check_layout(const src *s, entry *e, int n, uint64_t data_size) {
  entry **p = wk_malloc(sizeof *p * (size_t)(n ? n : 1));
  if (!p) return wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", s->fn);
  for (int i = 0; i < n; i++) p[i] = &e[i];
  wk_status st = WK_OK;
  qsort(p, (size_t)n, sizeof *p, by_name);
  for (int i = 1; i < n && !st; i++)
    if (strcmp(p[i - 1]->name, p[i]->name) == 0) st = fail(s, "tensor '%.200s' appears twice", p[i]->name);
  qsort(p, (size_t)n, sizeof *p, by_offset);
  uint64_t at = 0;
  const entry *prev = NULL;
  for (int i = 0; i < n && !st; i++) {
    if (p[i]->begin < at)
      st = fail(s, "tensor '%.200s' (data_offsets [%llu, %llu]) overlaps tensor '%.200s' (data_offsets [%llu, %llu])",
                p[i]->name, (unsigned long long)p[i]->begin, (unsigned long long)p[i]->end, prev->name,
                (unsigned long long)prev->begin, (unsigned long long)prev->end);
    else if (p[i]->begin > at)
      st = fail(s, "bytes [%llu, %llu) of the data section belong to no tensor (a gap before tensor '%.200s')",
                (unsigned long long)at, (unsigned long long)p[i]->begin, p[i]->name);
    prev = p[i];
    at = p[i]->end;
  }
  if (!st && at != data_size)
    st = fail(s, "the data section has %llu bytes but the tensors cover %llu: the rest belongs to no tensor",
              (unsigned long long)data_size, (unsigned long long)at);
  wk_free(p);
  return st;
}

/* Parses and validates the header; on success *json owns the strings the
 * entries point to and *meta is the "__metadata__" object (or NULL). */
static wk_status parse_header(const src *s, const char *h, uint64_t n, uint64_t data_size, cJSON **json, entry **ents,
                              int *nents, const cJSON **meta) {
  *json = NULL, *ents = NULL, *nents = 0, *meta = NULL;
  const char *nul = memchr(h, 0, (size_t)n);
  if (nul) return fail(s, "the header holds a NUL byte at header byte %lld", (long long)(nul - h));
  int64_t bad = utf8_bad((const unsigned char *)h, (size_t)n);
  if (bad >= 0) return fail(s, "the header is not valid UTF-8 (header byte %lld)", (long long)bad);
  if (h[0] != '{') return fail(s, "the header does not start with '{': not a safetensors file");
  size_t at = 0;
  char why[128];
  switch (io_json_strict(h, (size_t)n, ST_MAX_DEPTH, &at, why, sizeof why)) {
    case IO_JSON_BAD:
      return fail(s, "the header is not valid JSON: %s at header byte %zu", why, at);
    case IO_JSON_TRAILING:
      return fail(s, "the header has bytes after its JSON object (header byte %zu)", at);
    default:
      break;
  }
  const char *end = NULL;
  cJSON *js = cJSON_ParseWithLengthOpts(h, (size_t)n, &end, 0);
  if (!js) {
    long long at = end && end >= h && end <= h + n ? (long long)(end - h) : -1;
    return fail(s, "the header is not valid JSON (error near header byte %lld)", at);
  }
  for (const char *q = end; q < h + n; q++)
    if (*q != ' ' && *q != '\t' && *q != '\n' && *q != '\r') {
      cJSON_Delete(js);
      return fail(s, "the header has bytes after its JSON object (header byte %lld)", (long long)(q - h));
    }
  if (!cJSON_IsObject(js)) {
    cJSON_Delete(js);
    return fail(s, "the header is not a JSON object");
  }
  int count = 0;
  const cJSON *it;
  wk_status st = WK_OK;
  cJSON_ArrayForEach(it, js) {
    if (strcmp(it->string, "__metadata__") != 0) {
      if (++count > ST_MAX_TENSORS) {
        st = fail(s, "the header lists more than %d tensors", ST_MAX_TENSORS);
        break;
      }
    } else if (*meta) {
      st = fail(s, "\"__metadata__\" appears twice");
      break;
    } else if (!cJSON_IsObject(it)) {
      st = fail(s, "\"__metadata__\" is not a JSON object");
      break;
    } else {
      *meta = it;
    }
  }
  const cJSON *m;
  cJSON_ArrayForEach(m, *meta) {
    if (st) break;
    if (!cJSON_IsString(m)) st = fail(s, "\"__metadata__\" value of '%.200s' is not a string", m->string);
  }
  entry *e = st ? NULL : wk_calloc((size_t)(count ? count : 1), sizeof *e);
  if (!st && !e) st = wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", s->fn);
  int k = 0;
  cJSON_ArrayForEach(it, js) {
    if (st) break;
    if (it != *meta) st = parse_entry(s, it, data_size, &e[k++]);
  }
  if (!st) st = check_layout(s, e, count, data_size);
  if (st) {
    wk_free(e);
    cJSON_Delete(js);
    *meta = NULL;
    return st;
  }
  *json = js, *ents = e, *nents = count;
  return WK_OK;
}

static wk_status load_tensors(const src *s, uint64_t base, const entry *e, int n, const cJSON *meta, wk_device dev,
                              wk_state_dict *sd) {
  const cJSON *m;
  cJSON_ArrayForEach(m, meta) {
    if (wk_state_dict_set_meta(sd, m->string, m->valuestring)) return wrap_error(WK_ERR_IO, "%s", s->fn);
  }
  for (int i = 0; i < n; i++) {
    wk_tensor *t = wk_empty(e[i].sizes, e[i].ndim, (wk_options){.dtype = e[i].dt});
    if (!t) return wrap_error(WK_ERR_IO, "%s: '%.300s': tensor '%.200s'", s->fn, s->what, e[i].name);
    uint64_t nb = e[i].end - e[i].begin;
    wk_status st = nb ? src_read(s, base + e[i].begin, wk_tensor_data(t), nb) : WK_OK;
    if (!st && e[i].dt == WK_BOOL) {
      const unsigned char *b = wk_tensor_data(t);
      for (uint64_t j = 0; j < nb && !st; j++)
        if (b[j] > 1)
          st = fail(s, "tensor '%.200s': BOOL element %llu is %u, not 0 or 1", e[i].name, (unsigned long long)j, b[j]);
    }
    if (!st && dev.type != WK_DEVICE_CPU) {
      wk_tensor *moved = wk_to_device(t, dev);
      char db[64];
      if (!moved)
        st = wrap_error(WK_ERR_DEVICE, "%s: '%.300s': moving tensor '%.200s' to %s failed", s->fn, s->what, e[i].name,
                        wk_device_str(dev, db, sizeof db));
      wk_release(t);
      t = moved;
    }
    if (!st && wk_state_dict_set(sd, e[i].name, t)) st = wrap_error(WK_ERR_IO, "%s", s->fn);
    wk_release(t);
    if (st) return st;
  }
  return WK_OK;
}

static wk_status load_src(const src *s, wk_device dev, wk_state_dict **out) {
  if (s->size < 8)
    return fail(s, "%llu bytes are too few for the 8-byte header length: not a safetensors file",
                (unsigned long long)s->size);
  unsigned char b8[8];
  wk_status st = src_read(s, 0, b8, 8);
  if (st) return st;
  uint64_t n = 0;
  for (int i = 7; i >= 0; i--) n = (n << 8) | b8[i];
  if (n > ST_MAX_HEADER)
    return fail(s, "header length %llu exceeds the limit of %llu bytes: corrupted file, or not safetensors",
                (unsigned long long)n, ST_MAX_HEADER);
  if (n > s->size - 8)
    return fail(s, "header length %llu exceeds the %llu bytes that follow it: truncated or corrupted file",
                (unsigned long long)n, (unsigned long long)(s->size - 8));
  if (n < 2) return fail(s, "header length %llu is too small for a JSON object", (unsigned long long)n);
  char *h = wk_malloc((size_t)n);
  if (!h) return wk_error(WK_ERR_NO_MEMORY, "%s: out of memory for a %llu-byte header", s->fn, (unsigned long long)n);
  cJSON *js = NULL;
  entry *e = NULL;
  int ne = 0;
  const cJSON *meta = NULL;
  st = src_read(s, 8, h, n);
  if (!st) st = parse_header(s, h, n, s->size - 8 - n, &js, &e, &ne, &meta);
  wk_free(h);
  wk_state_dict *sd = NULL;
  if (!st) {
    sd = wk_state_dict_new();
    st = sd ? load_tensors(s, 8 + n, e, ne, meta, dev, sd) : wrap_error(WK_ERR_NO_MEMORY, "%s", s->fn);
  }
  wk_free(e);
  cJSON_Delete(js);
  if (st) {
    wk_state_dict_free(sd);
    return st;
  }
  *out = sd;
  return WK_OK;
}

wk_status io_st_load(const char *fn, const char *path, const void *data, size_t nbytes, const wk_io_load_opts *opts,
                     wk_state_dict **out) {
  if (!out) return wk_error(WK_ERR_NULL, "%s: argument 'out' is NULL", fn);
  *out = NULL;
  wk_io_load_opts o;
  wk_status st = io_opts(fn, opts, &o);
  if (st) return st;
  if (big_endian_host()) return wk_error(WK_ERR_UNSUPPORTED, "%s: big-endian hosts are not supported", fn);
  wk_device dev = o.map_location;
  if (dev.type == WK_DEVICE_DEFAULT) dev = wk_cpu();
  if (dev.type != WK_DEVICE_CPU) {
    char db[64];
    if (!wk_device_type_name(dev.type))
      return wk_error(WK_ERR_DEVICE, "%s: map_location has unknown device type %d", fn, (int)dev.type);
    if (dev.index < 0 || dev.index >= wk_device_count(dev.type))
      return wk_error(WK_ERR_DEVICE, "%s: map_location %s: there are %d %s device(s)", fn,
                      wk_device_str(dev, db, sizeof db), wk_device_count(dev.type), wk_device_type_name(dev.type));
  }
  src s = {fn, path ? path : "<buffer>", -1, data, nbytes};
  if (!path) return load_src(&s, dev, out);
  if (!*path) return wk_error(WK_ERR_INVALID_ARG, "%s: empty path", fn);
  /* O_NONBLOCK: opening a FIFO must not hang; it is rejected below. */
  s.fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (s.fd < 0) return wk_error(WK_ERR_IO, "%s: cannot open '%.300s': %s", fn, path, strerror(errno));
  struct stat sb;
  if (fstat(s.fd, &sb) != 0)
    st = fail(&s, "cannot stat: %s", strerror(errno));
  else if (!S_ISREG(sb.st_mode))
    st = fail(&s, "not a regular file");
  if (!st) {
    s.size = (uint64_t)sb.st_size;
    st = load_src(&s, dev, out);
  }
  close(s.fd);
  return st;
}

/* ============================== saving ============================== */

typedef struct {
  const char *fn, *path; /* path NULL: to memory */
  int fd;
  char *tmp;
  unsigned char *buf;
  size_t pos;
} sink;

static atomic_uint g_tmp_counter;

static wk_status sink_open(sink *k, size_t total) {
  if (!k->path) {
    k->buf = wk_malloc(total ? total : 1);
    return k->buf ? WK_OK : wk_error(WK_ERR_NO_MEMORY, "%s: out of memory for %zu bytes", k->fn, total);
  }
  const char *slash = strrchr(k->path, '/');
  const char *base = slash ? slash + 1 : k->path;
  if (!*base) return wk_error(WK_ERR_INVALID_ARG, "%s: '%.300s' names a directory, not a file", k->fn, k->path);
  size_t cap = strlen(k->path) + 64;
  k->tmp = wk_malloc(cap);
  if (!k->tmp) return wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", k->fn);
  /* best effort: remove what writers killed mid-save (kill -9) left in this directory */
  int dl = base == k->path ? 0 : base - 1 == k->path ? 1 : (int)(base - 1 - k->path); /* "/x": "/" */
  snprintf(k->tmp, cap, "%.*s", dl ? dl : 1, dl ? k->path : ".");
  io_tmp_stale(k->tmp, true, NULL, NULL);
  for (int attempt = 0; attempt < 100; attempt++) {
    snprintf(k->tmp, cap, "%.*s.%s.tmp-%ld-%u", (int)(base - k->path), k->path, base, (long)getpid(),
             atomic_fetch_add(&g_tmp_counter, 1u));
    k->fd = open(k->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (k->fd >= 0 || errno != EEXIST) break;
  }
  if (k->fd < 0) {
    wk_status st =
        wk_error(WK_ERR_IO, "%s: cannot create a temporary file next to '%.300s': %s", k->fn, k->path, strerror(errno));
    wk_free(k->tmp);
    k->tmp = NULL;
    return st;
  }
  struct stat sb; /* replacing a file keeps its permissions */
  if (stat(k->path, &sb) == 0 && S_ISREG(sb.st_mode) && fchmod(k->fd, sb.st_mode & 07777) != 0) {
    /* not fatal: the new file keeps the default mode */
  }
  return WK_OK;
}

static wk_status sink_write(sink *k, const void *p, size_t n) {
  if (!k->path) {
    memcpy(k->buf + k->pos, p, n);
    k->pos += n;
    return WK_OK;
  }
  const unsigned char *c = p;
  while (n) {
    ssize_t w = write(k->fd, c, n > (1u << 30) ? (1u << 30) : n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      return wk_error(WK_ERR_IO, "%s: writing '%.300s' failed: %s", k->fn, k->tmp,
                      w < 0 ? strerror(errno) : "no progress");
    c += w, n -= (size_t)w;
  }
  return WK_OK;
}

static void sink_abort(sink *k) {
  if (k->fd >= 0) close(k->fd);
  if (k->tmp) unlink(k->tmp);
  wk_free(k->tmp);
  wk_free(k->buf);
  k->fd = -1, k->tmp = NULL, k->buf = NULL;
}

/* fsync the file, rename it over the target, fsync the directory. */
static wk_status sink_commit(sink *k) {
  if (!k->path) return WK_OK;
  wk_status st = WK_OK;
  if (fsync(k->fd) != 0) st = wk_error(WK_ERR_IO, "%s: fsync of '%.300s' failed: %s", k->fn, k->tmp, strerror(errno));
  int fd = k->fd;
  k->fd = -1;
  if (close(fd) != 0 && !st)
    st = wk_error(WK_ERR_IO, "%s: closing '%.300s' failed: %s", k->fn, k->tmp, strerror(errno));
  if (!st && rename(k->tmp, k->path) != 0)
    st = wk_error(WK_ERR_IO, "%s: cannot replace '%.300s': %s", k->fn, k->path, strerror(errno));
  if (st) return st; /* the caller's sink_abort removes the temporary file */
  wk_free(k->tmp);
  k->tmp = NULL;
  const char *slash = strrchr(k->path, '/');
  size_t dl = slash ? (slash == k->path ? 1 : (size_t)(slash - k->path)) : 1;
  char *dir = wk_malloc(dl + 1);
  if (dir) {
    memcpy(dir, slash ? k->path : ".", dl);
    dir[dl] = 0;
  }
  int dfd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
  if (dfd >= 0) {
    if (fsync(dfd) != 0 && errno != EINVAL && errno != EROFS)
      st = wk_error(WK_ERR_IO, "%s: '%.300s' was written but fsync of its directory failed: %s", k->fn, k->path,
                    strerror(errno));
    close(dfd);
  }
  wk_free(dir);
  return st;
}

/* An exact decimal integer (cJSON would print 1e15 and up in exponent form). */
static cJSON *json_int(uint64_t v) {
  char b[32];
  snprintf(b, sizeof b, "%llu", (unsigned long long)v);
  return cJSON_CreateRaw(b);
}

static wk_status check_text(const char *fn, const char *what, const char *s) {
  if (utf8_bad((const unsigned char *)s, strlen(s)) >= 0)
    return wk_error(WK_ERR_INVALID_ARG, "%s: %s '%.200s' is not valid UTF-8", fn, what, s);
  return WK_OK;
}

/* The JSON header for sd (tensors in sd's order, data packed in that order). */
static wk_status build_header(const char *fn, const wk_state_dict *sd, char **out, uint64_t *data_bytes) {
  cJSON *root = cJSON_CreateObject();
  wk_status st = root ? WK_OK : wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", fn);
  int nm = wk_state_dict_meta_size(sd), n = wk_state_dict_size(sd);
  cJSON *meta = !st && nm ? cJSON_AddObjectToObject(root, "__metadata__") : NULL;
  for (int i = 0; i < nm && !st; i++) {
    const char *mk = wk_state_dict_meta_key(sd, i), *mv = wk_state_dict_meta_value(sd, i);
    if (!(st = check_text(fn, "metadata key", mk)) && !(st = check_text(fn, "metadata value", mv)) &&
        !cJSON_AddStringToObject(meta, mk, mv))
      st = wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", fn);
  }
  uint64_t off = 0;
  for (int i = 0; i < n && !st; i++) {
    const char *key = wk_state_dict_key(sd, i);
    wk_tensor *t = wk_state_dict_value(sd, i);
    const char *dn = dtype_name(wk_tensor_dtype(t));
    if (strcmp(key, "__metadata__") == 0) {
      st = wk_error(WK_ERR_INVALID_ARG, "%s: the tensor name '__metadata__' is reserved by the safetensors format", fn);
      break;
    }
    if ((st = check_text(fn, "tensor name", key))) break;
    if (!dn) {
      st = wk_error(WK_ERR_DTYPE, "%s: tensor '%.200s' has dtype %s, which safetensors cannot store", fn, key,
                    wk_dtype_name(wk_tensor_dtype(t)));
      break;
    }
    uint64_t nb = (uint64_t)wk_tensor_numel(t) * wk_dtype_size(wk_tensor_dtype(t));
    cJSON *obj = cJSON_AddObjectToObject(root, key), *shape = cJSON_CreateArray(), *offs = cJSON_CreateArray();
    bool ok = obj && shape && offs && cJSON_AddStringToObject(obj, "dtype", dn);
    for (int d = 0; ok && d < wk_tensor_dim(t); d++)
      ok = cJSON_AddItemToArray(shape, json_int((uint64_t)wk_tensor_size(t, d)));
    ok = ok && cJSON_AddItemToArray(offs, json_int(off)) && cJSON_AddItemToArray(offs, json_int(off + nb));
    if (ok && cJSON_AddItemToObject(obj, "shape", shape)) shape = NULL;
    if (ok && cJSON_AddItemToObject(obj, "data_offsets", offs)) offs = NULL;
    cJSON_Delete(shape);
    cJSON_Delete(offs);
    if (!ok || shape || offs) st = wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", fn);
    off += nb;
  }
  *out = st ? NULL : cJSON_PrintUnformatted(root);
  if (!st && !*out) st = wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", fn);
  cJSON_Delete(root);
  *data_bytes = off;
  return st;
}

/* Writes each tensor's bytes: moved to the cpu and made contiguous first. */
static wk_status write_tensors(sink *k, const wk_state_dict *sd) {
  bool grad = wk_set_grad_enabled(false);
  wk_status st = WK_OK;
  for (int i = 0; i < wk_state_dict_size(sd) && !st; i++) {
    wk_tensor *t = wk_state_dict_value(sd, i);
    size_t nb = (size_t)wk_tensor_numel(t) * wk_dtype_size(wk_tensor_dtype(t));
    if (!nb) continue;
    wk_tensor *c = wk_to_device(t, wk_cpu());
    wk_tensor *d = c ? wk_contiguous(c) : NULL;
    wk_release(c);
    char db[64];
    if (!d)
      st = wrap_error(WK_ERR_DEVICE, "%s: tensor '%.200s' (on %s) could not be copied to the cpu", k->fn,
                      wk_state_dict_key(sd, i), wk_device_str(wk_tensor_device(t), db, sizeof db));
    else
      st = sink_write(k, wk_tensor_data(d), nb);
    wk_release(d);
  }
  wk_set_grad_enabled(grad);
  return st;
}

wk_status io_st_save(const char *fn, const wk_state_dict *sd, const char *path, void **data, size_t *nbytes) {
  if (!sd) return wk_error(WK_ERR_NULL, "%s: argument 'sd' is NULL", fn);
  if (path && !*path) return wk_error(WK_ERR_INVALID_ARG, "%s: empty path", fn);
  if (big_endian_host()) return wk_error(WK_ERR_UNSUPPORTED, "%s: big-endian hosts are not supported", fn);
  char *js = NULL;
  uint64_t data_bytes = 0;
  wk_status st = build_header(fn, sd, &js, &data_bytes);
  if (st) return st;
  size_t hl = strlen(js), pad = (8 - hl % 8) % 8; /* the data section starts 8-byte aligned */
  uint64_t n = hl + pad;
  sink k = {fn, path, -1, NULL, NULL, 0};
  st = sink_open(&k, (size_t)(8 + n + data_bytes));
  unsigned char b8[8];
  for (int i = 0; i < 8; i++) b8[i] = (unsigned char)(n >> (8 * i));
  if (!st) st = sink_write(&k, b8, 8);
  if (!st) st = sink_write(&k, js, hl);
  if (!st) st = sink_write(&k, "        ", pad);
  cJSON_free(js); /* cJSON_PrintUnformatted's text */
  if (!st) st = write_tensors(&k, sd);
  if (!st) st = sink_commit(&k);
  if (st) {
    sink_abort(&k);
    return st;
  }
  if (!path) *data = k.buf, *nbytes = k.pos;
  return WK_OK;
}
