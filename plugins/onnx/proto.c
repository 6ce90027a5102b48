/* onnx plugin: the small things both directions share: an arena for the
 * messages the exporter builds, dtype and IR-version tables, file reading
 * and atomic writing. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx_int.h"

void *ox_alloc(ox_arena *ar, size_t n) {
  if (ar->oom) return NULL;
  if (ar->n == ar->cap) {
    size_t cap = ar->cap ? ar->cap * 2 : 256;
    void **p = wk_realloc(ar->ptrs, cap * sizeof *p);
    if (!p) {
      ar->oom = true;
      return NULL;
    }
    ar->ptrs = p;
    ar->cap = cap;
  }
  void *m = wk_calloc(1, n ? n : 1);
  if (!m) {
    ar->oom = true;
    return NULL;
  }
  ar->ptrs[ar->n++] = m;
  return m;
}

char *ox_strdup(ox_arena *ar, const char *s) {
  size_t n = strlen(s);
  char *d = ox_alloc(ar, n + 1);
  if (d) memcpy(d, s, n + 1);
  return d;
}

char *ox_fmt(ox_arena *ar, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *d = n < 0 ? NULL : ox_alloc(ar, (size_t)n + 1);
  if (!d) return NULL;
  va_start(ap, fmt);
  vsnprintf(d, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return d;
}

void ox_arena_free(ox_arena *ar) {
  for (size_t i = 0; i < ar->n; i++) wk_free(ar->ptrs[i]);
  wk_free(ar->ptrs);
  memset(ar, 0, sizeof *ar);
}

bool ox_push(ox_arena *ar, void ***arr, size_t *n, size_t *cap, void *p) {
  if (!p) return false;
  if (*n == *cap) {
    size_t nc = *cap ? *cap * 2 : 16;
    void **na = ox_alloc(ar, nc * sizeof *na);
    if (!na) return false;
    if (*n) memcpy(na, *arr, *n * sizeof *na);
    *arr = na; /* the old array stays in the arena until the end */
    *cap = nc;
  }
  (*arr)[(*n)++] = p;
  return true;
}

/* ---- dtypes ---- */
int ox_onnx_type(wk_dtype dt) {
  switch (dt) {
    case WK_F32:
      return ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    case WK_F64:
      return ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE;
    case WK_F16:
      return ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16;
    case WK_BF16:
      return ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16;
    case WK_I8:
      return ONNX__TENSOR_PROTO__DATA_TYPE__INT8;
    case WK_U8:
      return ONNX__TENSOR_PROTO__DATA_TYPE__UINT8;
    case WK_I16:
      return ONNX__TENSOR_PROTO__DATA_TYPE__INT16;
    case WK_I32:
      return ONNX__TENSOR_PROTO__DATA_TYPE__INT32;
    case WK_I64:
      return ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
    case WK_BOOL:
      return ONNX__TENSOR_PROTO__DATA_TYPE__BOOL;
    default:
      return 0;
  }
}

wk_dtype ox_wick_dtype(int t) {
  switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
      return WK_F32;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
      return WK_F64;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
      return WK_F16;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16:
      return WK_BF16;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
      return WK_I8;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8:
      return WK_U8;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16:
      return WK_I16;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32:
      return WK_I32;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
      return WK_I64;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL:
      return WK_BOOL;
    default:
      return (wk_dtype)0;
  }
}

const char *ox_onnx_type_name(int t) {
  static const char *names[] = {"undefined", "float",  "uint8",     "int8",       "uint16",  "int16",
                                "int32",     "int64",  "string",    "bool",       "float16", "double",
                                "uint32",    "uint64", "complex64", "complex128", "bfloat16"};
  if (t >= 0 && t < (int)(sizeof names / sizeof *names)) return names[t];
  return "unknown";
}

int64_t ox_ir_version(int opset) {
  /* onnx.helper.VERSION_TABLE: the IR version each release wrote with its newest opset */
  if (opset <= 12) return 7;
  if (opset <= 13) return 7;
  if (opset <= 18) return 8;
  if (opset <= 20) return 9;
  if (opset <= 22) return 10;
  return 11;
}

/* ---- files ---- */
wk_status ox_read_file(const char *fn, const char *path, size_t max, uint8_t **data, size_t *n) {
  *data = NULL;
  *n = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return wk_error(WK_ERR_IO, "%s: cannot open '%.300s': %s", fn, path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return wk_error(WK_ERR_IO, "%s: '%.300s' is not a regular file", fn, path);
  }
  if ((uint64_t)st.st_size > max) {
    close(fd);
    return wk_error(WK_ERR_IO, "%s: '%.300s' is %lld bytes, over the %zu-byte limit of one protobuf message", fn, path,
                    (long long)st.st_size, max);
  }
  size_t size = (size_t)st.st_size;
  uint8_t *buf = wk_malloc(size ? size : 1);
  if (!buf) {
    close(fd);
    return wk_error(WK_ERR_NO_MEMORY, "%s: out of memory reading '%.300s' (%zu bytes)", fn, path, size);
  }
  size_t got = 0;
  while (got < size) {
    ssize_t r = read(fd, buf + got, size - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  if (got != size) {
    wk_free(buf);
    return wk_error(WK_ERR_IO, "%s: reading '%.300s' failed (%zu of %zu bytes)", fn, path, got, size);
  }
  *data = buf;
  *n = size;
  return WK_OK;
}

static atomic_uint g_tmp_counter;

wk_status ox_write_atomic(const char *fn, const char *path, const void *data, size_t n) {
  size_t cap = strlen(path) + 64;
  char *tmp = wk_malloc(cap);
  if (!tmp) return wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", fn);
  snprintf(tmp, cap, "%s.tmp-%ld-%u", path, (long)getpid(), atomic_fetch_add(&g_tmp_counter, 1u));
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    wk_status st = wk_error(WK_ERR_IO, "%s: cannot create '%.300s': %s", fn, tmp, strerror(errno));
    wk_free(tmp);
    return st;
  }
  const uint8_t *p = data;
  size_t done = 0;
  wk_status st = WK_OK;
  while (done < n) {
    ssize_t w = write(fd, p + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      st = wk_error(WK_ERR_IO, "%s: writing '%.300s' failed: %s", fn, tmp, strerror(errno));
      break;
    }
    done += (size_t)w;
  }
  if (!st && fsync(fd) != 0) st = wk_error(WK_ERR_IO, "%s: fsync of '%.300s' failed: %s", fn, tmp, strerror(errno));
  if (close(fd) != 0 && !st) st = wk_error(WK_ERR_IO, "%s: closing '%.300s' failed: %s", fn, tmp, strerror(errno));
  if (!st && rename(tmp, path) != 0)
    st = wk_error(WK_ERR_IO, "%s: renaming '%.300s' to '%.300s' failed: %s", fn, tmp, path, strerror(errno));
  if (st) unlink(tmp);
  wk_free(tmp);
  return st;
}
