/* Tensor handles and their storage: creation, reference counting, metadata
 * accessors and element access. Views and compute are ops (see dispatch.c). */
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <wick/sdk/half.h>

#include "internal.h"
#include "graph_internal.h"

static atomic_llong g_live;

/* A cache of freed cpu storage blocks of 64 KiB and more, by exact size: a
 * training step allocates the same activation sizes every iteration, and
 * returning them to the system costs page faults each time. */
#define CACHE_MIN ((size_t)64 << 10)
#define CACHE_LIMIT ((size_t)256 << 20)
#define CACHE_BINS 128
typedef struct cached_block {
  struct cached_block *next;
} cached_block;
static struct {
  size_t size;
  cached_block *head;
} g_bins[CACHE_BINS];
static size_t g_cached_bytes;
static pthread_mutex_t g_cache_lock = PTHREAD_MUTEX_INITIALIZER;

static void *cache_take(size_t total) {
  if (total < CACHE_MIN) return NULL;
  void *p = NULL;
  pthread_mutex_lock(&g_cache_lock);
  for (int i = 0; i < CACHE_BINS; i++)
    if (g_bins[i].size == total && g_bins[i].head) {
      p = g_bins[i].head;
      g_bins[i].head = g_bins[i].head->next;
      g_cached_bytes -= total;
      break;
    }
  pthread_mutex_unlock(&g_cache_lock);
  return p;
}

/* Keeps the block for reuse (true) or leaves it to the caller to free. */
static bool cache_give(void *p, size_t total) {
  if (total < CACHE_MIN) return false;
  bool kept = false;
  pthread_mutex_lock(&g_cache_lock);
  if (g_cached_bytes + total <= CACHE_LIMIT) {
    int slot = -1;
    for (int i = 0; i < CACHE_BINS && slot < 0; i++)
      if (g_bins[i].size == total) slot = i;
    for (int i = 0; i < CACHE_BINS && slot < 0; i++)
      if (!g_bins[i].head) slot = i; /* an empty bin takes the new size */
    if (slot >= 0) {
      cached_block *b = p;
      g_bins[slot].size = total;
      b->next = g_bins[slot].head;
      g_bins[slot].head = b;
      g_cached_bytes += total;
      kept = true;
    }
  }
  pthread_mutex_unlock(&g_cache_lock);
  return kept;
}

/* Small cpu blocks (header + data up to 4 KiB) are kept per thread by size
 * class: aligned_alloc + free of a 1-element tensor cost ~500 of the ~2,000
 * instructions of an eager op, a thread-local free list a few. A thread's
 * blocks are freed when it exits (a pthread key's destructor) or when it
 * calls wk__storage_cache_clear (wk_shutdown, empty_cache). */
#define SMALL_MAX ((size_t)4096)
#define SMALL_CLASSES 64 /* total / 64 - 1 */
#define SMALL_KEEP 32    /* blocks kept per class and thread */
typedef struct {
  cached_block *head[SMALL_CLASSES];
  uint8_t n[SMALL_CLASSES];
  bool registered;
} small_cache;
static _Thread_local small_cache tl_small;
static pthread_key_t g_small_key;
static bool g_small_key_ok;
static pthread_once_t g_small_once = PTHREAD_ONCE_INIT;

static void small_clear(small_cache *c) {
  for (int i = 0; i < SMALL_CLASSES; i++)
    while (c->head[i]) {
      cached_block *b = c->head[i];
      c->head[i] = b->next;
      free(b);
    }
  memset(c->n, 0, sizeof c->n);
}
static void handles_clear(void);
static void small_key_destroy(void *c) {
  small_clear(c);
  handles_clear();
}
static void small_key_make(void) {
  g_small_key_ok = pthread_key_create(&g_small_key, small_key_destroy) == 0;
}

/* Registers this thread's caches with the key so they are freed when it exits. */
static bool small_register_slow(void) {
  pthread_once(&g_small_once, small_key_make);
  if (!g_small_key_ok || pthread_setspecific(g_small_key, &tl_small) != 0) return false;
  tl_small.registered = true;
  return true;
}
static inline bool small_register(void) { return tl_small.registered || small_register_slow(); }

static void *small_take(size_t total) {
  if (total > SMALL_MAX) return NULL;
  size_t k = total / 64 - 1;
  cached_block *b = tl_small.head[k];
  if (b) {
    tl_small.head[k] = b->next;
    tl_small.n[k]--;
  }
  return b;
}

static bool small_give(void *p, size_t total) {
  if (total > SMALL_MAX) return false;
  size_t k = total / 64 - 1;
  if (tl_small.n[k] >= SMALL_KEEP) return false;
  if (!small_register()) return false;
  cached_block *b = p;
  b->next = tl_small.head[k];
  tl_small.head[k] = b;
  tl_small.n[k]++;
  return true;
}

void *wk__block_alloc(size_t n) {
  size_t total = n ? (n + 63) & ~(size_t)63 : 64;
  if (total < n) return NULL;
  void *p = total <= SMALL_MAX ? small_take(total) : NULL;
  return p ? p : wk__aligned_alloc(64, total);
}

void wk__block_free(void *p, size_t n) {
  if (!p) return;
  size_t total = n ? (n + 63) & ~(size_t)63 : 64;
  if (total <= SMALL_MAX && small_give(p, total)) return;
  free(p);
}

/* Tensor handles are recycled the same way (malloc/free of a ~330-byte
 * handle cost ~130 instructions per op); they share the thread's key. */
#define HANDLE_KEEP 64
static _Thread_local struct {
  cached_block *head;
  int n;
} tl_handles;

static wk_tensor *handle_take(void) {
  cached_block *b = tl_handles.head;
  if (!b) return wk_malloc(sizeof(wk_tensor));
  tl_handles.head = b->next;
  tl_handles.n--;
  return (wk_tensor *)b;
}

static void handle_give(wk_tensor *t) {
  if (tl_handles.n >= HANDLE_KEEP || !small_register()) {
    free(t);
    return;
  }
  cached_block *b = (cached_block *)t;
  b->next = tl_handles.head;
  tl_handles.head = b;
  tl_handles.n++;
}

static void handles_clear(void) {
  while (tl_handles.head) {
    cached_block *b = tl_handles.head;
    tl_handles.head = b->next;
    free(b);
  }
  tl_handles.n = 0;
}

void wk__storage_cache_clear(void) {
  small_clear(&tl_small);
  handles_clear();
  pthread_mutex_lock(&g_cache_lock);
  for (int i = 0; i < CACHE_BINS; i++)
    while (g_bins[i].head) {
      cached_block *b = g_bins[i].head;
      g_bins[i].head = b->next;
      free(b);
    }
  g_cached_bytes = 0;
  pthread_mutex_unlock(&g_cache_lock);
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

static atomic_uint_fast64_t g_storage_ids;
static uint64_t next_storage_id(void) { return atomic_fetch_add(&g_storage_ids, 1) + 1; }

wk__storage *wk__storage_new(wk_device dev, size_t nbytes) {
  dev = wk__device_norm(dev);
  if (dev.type == WK_DEVICE_CPU) { /* one block: the header, then 64-byte aligned data */
    size_t head = (sizeof(wk__storage) + 63) & ~(size_t)63;
    size_t total = (head + nbytes + 63) & ~(size_t)63;
    wk__storage *st = NULL;
    if (total >= head && total - head >= nbytes) {
      st = total <= SMALL_MAX ? small_take(total) : cache_take(total);
      if (!st) st = wk__aligned_alloc(64, total);
    }
    if (!st) {
      wk_error(WK_ERR_NO_MEMORY, "cpu: out of memory allocating %zu bytes", nbytes);
      return NULL;
    }
    memset(st, 0, sizeof *st);
    atomic_init(&st->refcount, 1);
    st->device = dev;
    st->data = (char *)st + head;
    st->nbytes = nbytes;
    st->inline_data = true;
    st->id = next_storage_id();
    return st;
  }
  if (dev.type == WK_DEVICE_META) { /* a size and no memory */
    wk__storage *st = wk_calloc(1, sizeof *st);
    if (!st) {
      wk_error(WK_ERR_NO_MEMORY, "out of memory allocating a storage");
      return NULL;
    }
    atomic_init(&st->refcount, 1);
    st->device = dev;
    st->nbytes = nbytes;
    st->external = true; /* no deleter: releasing frees the header only */
    st->id = next_storage_id();
    return st;
  }
  void *data = wk_device_alloc(dev, nbytes);
  if (!data) return NULL;
  wk__storage *st = wk_calloc(1, sizeof *st);
  if (!st) {
    wk_device_free(dev, data);
    wk_error(WK_ERR_NO_MEMORY, "out of memory allocating a storage");
    return NULL;
  }
  atomic_init(&st->refcount, 1);
  st->device = dev;
  st->data = data;
  st->nbytes = nbytes;
  st->id = next_storage_id();
  return st;
}

void wk__storage_release(wk__storage *st) {
  if (!st || atomic_fetch_sub(&st->refcount, 1) != 1) return;
  if (st->external) {
    if (st->deleter) st->deleter(st->deleter_ctx);
  } else if (!st->inline_data) {
    wk_device_free(st->device, st->data);
  } else {
    size_t head = (sizeof(wk__storage) + 63) & ~(size_t)63;
    size_t total = (head + st->nbytes + 63) & ~(size_t)63;
    if (total <= SMALL_MAX ? small_give(st, total) : cache_give(st, total)) return;
  }
  free(st);
}

void wk__contiguous_strides(const int64_t *sizes, int ndim, int64_t *strides) {
  int64_t s = 1;
  for (int i = ndim - 1; i >= 0; i--) {
    strides[i] = s;
    s *= sizes[i] > 1 ? sizes[i] : 1;
  }
}

bool wk__check_shape(const char *op, const int64_t *sizes, int ndim) {
  if (ndim < 0 || ndim > WK_MAX_DIMS) {
    wk_error(WK_ERR_SHAPE, "%s: %d dimensions requested, at most %d supported", op, ndim, WK_MAX_DIMS);
    return false;
  }
  if (ndim > 0 && !sizes) {
    wk__null_arg(op, "sizes");
    return false;
  }
  double total = 1, span = 1; /* span: the stride product, which empty dims do not shrink */
  for (int i = 0; i < ndim; i++) {
    span *= sizes[i] > 1 ? (double)sizes[i] : 1;
    if (sizes[i] < 0) {
      char b[256];
      wk_error(WK_ERR_SHAPE, "%s: negative dimension %lld in shape %s", op, (long long)sizes[i],
               wk__shape_str(sizes, ndim, b, sizeof b));
      return false;
    }
    total *= (double)sizes[i];
  }
  if (total > 9.0e15 || span > 9.0e15) {
    wk_error(WK_ERR_SHAPE, "%s: shape has too many elements", op);
    return false;
  }
  return true;
}

wk_tensor *wk__tensor_new(wk__storage *st, wk_dtype dt, int ndim, const int64_t *sizes,
                          const int64_t *strides, int64_t offset) {
  /* malloc, not calloc: only the first ndim sizes/strides are ever read */
  wk_tensor *t = handle_take();
  if (!t) {
    wk_error(WK_ERR_NO_MEMORY, "out of memory allocating a tensor handle");
    return NULL;
  }
  t->flags = 0;
  t->scope = NULL;
  t->autograd = NULL;
  t->quant = NULL;
  atomic_init(&t->refcount, 1);
  atomic_fetch_add(&st->refcount, 1);
  t->storage = st;
  t->dtype = dt;
  t->ndim = ndim;
  t->offset = offset;
  if (ndim) memcpy(t->sizes, sizes, sizeof(int64_t) * (size_t)ndim);
  if (strides)
    memcpy(t->strides, strides, sizeof(int64_t) * (size_t)ndim);
  else
    wk__contiguous_strides(sizes, ndim, t->strides);
  t->scope_slot = -1;
  atomic_fetch_add(&g_live, 1);
  return t;
}

wk_tensor *wk__view_of(wk_tensor *t, int ndim, const int64_t *sizes, const int64_t *strides,
                       int64_t offset) {
  wk_tensor *v = wk__tensor_new(t->storage, t->dtype, ndim, sizes, strides, offset);
  if (v && t->quant) v->quant = wk__qparams_retain(t->quant); /* views keep the q-params */
  return v;
}

wk_status wk__tensor_assign(wk_tensor *t, wk_tensor *src) {
  if (!t || !src) return wk_error(WK_ERR_NULL, "tensor_assign: NULL tensor");
  if (src->storage != t->storage) {
    atomic_fetch_add(&src->storage->refcount, 1);
    wk__storage_release(t->storage);
    t->storage = src->storage;
  }
  t->dtype = src->dtype;
  t->ndim = src->ndim;
  memcpy(t->sizes, src->sizes, sizeof(int64_t) * (size_t)src->ndim);
  memcpy(t->strides, src->strides, sizeof(int64_t) * (size_t)src->ndim);
  t->offset = src->offset;
  if (t->quant != src->quant) {
    void *q = src->quant ? wk__qparams_retain(src->quant) : NULL;
    wk__qparams_release(t->quant);
    t->quant = q;
  }
  return WK_OK;
}

static wk_tensor *adopt(wk_tensor *t) {
  if (t && wk__call_depth == 0) wk__scope_adopt(t);
  return t;
}

static bool check_dtype(const char *fn, wk_dtype dt) {
  if (wk_dtype_size(dt) == 0) {
    wk_error(WK_ERR_DTYPE, "%s: unknown dtype %d", fn, (int)dt);
    return false;
  }
  return true;
}

/* The common allocation, a contiguous tensor of a valid shape, in one pass:
 * strides and size together. Returns false, doing nothing, for a shape or
 * dtype the checked path must word an error for; true otherwise, with *out
 * the tensor or NULL (out of memory, said). */
static bool empty_contiguous(const int64_t *sizes, int ndim, wk_dtype dt, wk_device dev, wk_tensor **out) {
  size_t es = wk_dtype_size(dt);
  if (ndim < 0 || ndim > WK_MAX_DIMS || (ndim && !sizes) || !es) return false;
  int64_t strides[WK_MAX_DIMS], s = 1, numel = 1;
  for (int i = ndim - 1; i >= 0; i--) {
    int64_t n = sizes[i];
    if (n < 0 || n > ((int64_t)1 << 53) || s > ((int64_t)1 << 53) / (n > 1 ? n : 1)) return false;
    strides[i] = s;
    s *= n > 1 ? n : 1;
    numel *= n;
  }
  wk__storage *st = wk__storage_new(dev, (size_t)numel * es);
  *out = st ? wk__tensor_new(st, dt, ndim, sizes, strides, 0) : NULL;
  wk__storage_release(st);
  return true;
}

wk_tensor *wk_empty_strided(const int64_t *sizes, const int64_t *strides, int ndim, wk_options o) {
  wk_dtype dt = o.dtype ? o.dtype : WK_F32;
  if (!o.device.type && !wk__call_depth) o.device = wk__default_dev; /* the program's call, not a kernel's */
  wk_tensor *fast = NULL;
  if (!strides && !o.requires_grad && empty_contiguous(sizes, ndim, dt, o.device, &fast)) return adopt(fast);
  if (!wk__check_shape("empty", sizes, ndim) || !check_dtype("empty", dt)) return NULL;
  int64_t st_[WK_MAX_DIMS];
  if (!strides) {
    wk__contiguous_strides(sizes, ndim, st_);
    strides = st_;
  }
  int64_t span = 1;
  bool empty = false;
  for (int i = 0; i < ndim; i++) {
    if (sizes[i] == 0) empty = true;
    if (strides[i] < 0) {
      wk_error(WK_ERR_INVALID_ARG, "empty_strided: negative strides are not supported");
      return NULL;
    }
    span += (sizes[i] - 1) * strides[i];
  }
  if (empty) span = 0;
  wk__storage *st = wk__storage_new(o.device, (size_t)span * wk_dtype_size(dt));
  if (!st) return NULL;
  wk_tensor *t = wk__tensor_new(st, dt, ndim, sizes, strides, 0);
  wk__storage_release(st);
  if (t && o.requires_grad && wk_tensor_set_requires_grad(t, true) != WK_OK) {
    wk_release(t);
    return NULL;
  }
  return adopt(t);
}

wk_tensor *wk_empty(const int64_t *sizes, int ndim, wk_options o) {
  return wk_empty_strided(sizes, NULL, ndim, o);
}

wk_tensor *wk_empty_like(wk_tensor *t, wk_options o) {
  if (!t) {
    wk__null_arg("empty_like", "t");
    return NULL;
  }
  if (!o.dtype) o.dtype = t->dtype;
  if (!o.device.type) o.device = t->storage->device;
  return wk_empty(t->sizes, t->ndim, o);
}

wk_tensor *wk_tensor_from_data(const void *data, wk_dtype dtype, const int64_t *sizes, int ndim) {
  if (!wk__check_shape("tensor_from_data", sizes, ndim) || !check_dtype("tensor_from_data", dtype))
    return NULL;
  int depth = wk__call_depth;
  wk__call_depth = depth + 1; /* keep the intermediate out of the scope */
  wk_tensor *t = wk_empty(sizes, ndim, (wk_options){.dtype = dtype});
  wk__call_depth = depth;
  if (!t) return NULL;
  size_t n = (size_t)wk_tensor_numel(t) * wk_dtype_size(dtype);
  if (n && !data) {
    wk_release(t);
    wk__null_arg("tensor_from_data", "data");
    return NULL;
  }
  if (n) memcpy(t->storage->data, data, n);
  return adopt(t);
}

wk_tensor *wk_tensor_from_blob(void *data, wk_dtype dtype, wk_device dev, const int64_t *sizes,
                               const int64_t *strides, int ndim, void (*deleter)(void *), void *ctx) {
  if (!wk__check_shape("tensor_from_blob", sizes, ndim) || !check_dtype("tensor_from_blob", dtype))
    return NULL;
  dev = wk__device_norm(dev);
  if (!wk__device_iface(dev.type)) {
    wk_error(WK_ERR_DEVICE, "tensor_from_blob: unknown device type %d", dev.type);
    return NULL;
  }
  int64_t span = 1, st_[WK_MAX_DIMS];
  if (!strides) {
    wk__contiguous_strides(sizes, ndim, st_);
    strides = st_;
  }
  bool empty = false;
  for (int i = 0; i < ndim; i++) {
    if (sizes[i] == 0) empty = true;
    if (strides[i] < 0) {
      wk_error(WK_ERR_INVALID_ARG, "tensor_from_blob: negative strides are not supported");
      return NULL;
    }
    span += (sizes[i] - 1) * strides[i];
  }
  if (!data && !empty) {
    wk__null_arg("tensor_from_blob", "data");
    return NULL;
  }
  wk__storage *st = wk_calloc(1, sizeof *st);
  if (!st) {
    wk_error(WK_ERR_NO_MEMORY, "tensor_from_blob: out of memory");
    return NULL;
  }
  atomic_init(&st->refcount, 1);
  st->device = dev;
  st->data = data;
  st->nbytes = empty ? 0 : (size_t)span * wk_dtype_size(dtype);
  st->id = next_storage_id();
  st->external = true;
  st->deleter = deleter;
  st->deleter_ctx = ctx;
  wk_tensor *t = wk__tensor_new(st, dtype, ndim, sizes, strides, 0);
  if (!t) st->deleter = NULL; /* the caller keeps ownership on failure */
  wk__storage_release(st);
  return adopt(t);
}

/* Stores v into one element of dtype dt at p. */
static void store_f64(void *p, wk_dtype dt, double v) {
  switch (dt) {
    case WK_F32: *(float *)p = (float)v; break;
    case WK_F64: *(double *)p = v; break;
    case WK_F16: *(uint16_t *)p = wk_f32_to_f16((float)v); break;
    case WK_BF16: *(uint16_t *)p = wk_f32_to_bf16((float)v); break;
    case WK_I8: *(int8_t *)p = (int8_t)(int64_t)v; break;
    case WK_U8: *(uint8_t *)p = (uint8_t)(int64_t)v; break;
    case WK_I16: *(int16_t *)p = (int16_t)v; break;
    case WK_I32: *(int32_t *)p = (int32_t)v; break;
    case WK_I64: *(int64_t *)p = (int64_t)v; break;
    case WK_BOOL: *(bool *)p = v != 0; break;
    default: break;
  }
}

static double load_f64(const void *p, wk_dtype dt) {
  switch (dt) {
    case WK_F32: return *(const float *)p;
    case WK_F64: return *(const double *)p;
    case WK_F16: return wk_f16_to_f32(*(const uint16_t *)p);
    case WK_BF16: return wk_bf16_to_f32(*(const uint16_t *)p);
    case WK_I8: return *(const int8_t *)p;
    case WK_U8: return *(const uint8_t *)p;
    case WK_I16: return *(const int16_t *)p;
    case WK_I32: return *(const int32_t *)p;
    case WK_I64: return (double)*(const int64_t *)p;
    case WK_BOOL: return *(const bool *)p;
    case WK_QINT8: return *(const int8_t *)p; /* the stored integer (to_f64 dequantizes) */
    case WK_QUINT8: return *(const uint8_t *)p;
    case WK_QINT32: return *(const int32_t *)p;
    default: return NAN;
  }
}

wk_tensor *wk_scalar_tensor(double value, wk_dtype dtype) {
  if (!dtype) dtype = WK_F32;
  if (!check_dtype("scalar_tensor", dtype)) return NULL;
  unsigned char buf[8];
  store_f64(buf, dtype, value);
  return wk_tensor_from_data(buf, dtype, NULL, 0);
}

wk_tensor *wk_retain(wk_tensor *t) {
  if (t) atomic_fetch_add(&t->refcount, 1);
  return t;
}

WK__HIDDEN void wk__scope_forget(wk_tensor *t);

void wk_release(wk_tensor *t) {
  if (!t) return;
  /* User code releasing a tensor its scope owns gives up the scope's reference. */
  if (t->scope && wk__call_depth == 0) wk__scope_forget(t);
  if (atomic_fetch_sub(&t->refcount, 1) != 1) return;
  if (t->scope) wk__scope_forget(t);
  if (t->autograd) wk__ameta_free(t);
  if (t->quant) wk__qparams_release(t->quant);
  wk__storage_release(t->storage);
  atomic_fetch_sub(&g_live, 1);
  handle_give(t);
}

void wk_unref(wk_tensor *t) {
  int depth = wk__call_depth;
  wk__call_depth = depth + 1; /* below user level: a plain decrement */
  wk_release(t);
  wk__call_depth = depth;
}

int64_t wk_live_tensors(void) { return atomic_load(&g_live); }

/* ---- metadata ---- */
int wk_tensor_dim(const wk_tensor *t) { return t ? t->ndim : 0; }
int64_t wk_tensor_size(const wk_tensor *t, int d) {
  if (!t) return -1;
  if (d < 0) d += t->ndim;
  return d >= 0 && d < t->ndim ? t->sizes[d] : -1;
}
int64_t wk_tensor_stride(const wk_tensor *t, int d) {
  if (!t) return -1;
  if (d < 0) d += t->ndim;
  return d >= 0 && d < t->ndim ? t->strides[d] : -1;
}
const int64_t *wk_tensor_sizes(const wk_tensor *t) { return t ? t->sizes : NULL; }
const int64_t *wk_tensor_strides(const wk_tensor *t) { return t ? t->strides : NULL; }
int64_t wk_tensor_offset(const wk_tensor *t) { return t ? t->offset : 0; }
int64_t wk_tensor_numel(const wk_tensor *t) {
  if (!t) return 0;
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++) n *= t->sizes[i];
  return n;
}
wk_dtype wk_tensor_dtype(const wk_tensor *t) { return t ? t->dtype : WK_DTYPE_DEFAULT; }
wk_device wk_tensor_device(const wk_tensor *t) {
  return t ? t->storage->device : (wk_device){WK_DEVICE_DEFAULT, 0};
}
bool wk_tensor_is_contiguous(const wk_tensor *t) {
  if (!t) return false;
  int64_t s = 1;
  for (int i = t->ndim - 1; i >= 0; i--) {
    if (t->sizes[i] == 0) return true;
    if (t->sizes[i] != 1 && t->strides[i] != s) return false;
    s *= t->sizes[i];
  }
  return true;
}
void *wk_tensor_data(const wk_tensor *t) {
  if (!t || !t->storage->data) return NULL;
  if (__builtin_expect(wk__tl_trace != NULL, 0)) wk__trace_note_read(t, "tensor_data()");
  if (!t->offset) return t->storage->data;
  return (char *)t->storage->data + t->offset * (int64_t)wk_dtype_size(t->dtype);
}
uint64_t wk_tensor_version(const wk_tensor *t) { return t ? atomic_load(&t->storage->version) : 0; }
uint64_t wk_tensor_storage_id(const wk_tensor *t) { return t ? t->storage->id : 0; }
void wk_tensor_bump_version(wk_tensor *t) {
  if (t) atomic_fetch_add(&t->storage->version, 1);
}
bool wk_tensor_same_storage(const wk_tensor *a, const wk_tensor *b) {
  return a && b && a->storage == b->storage;
}
size_t wk_tensor_storage_nbytes(const wk_tensor *t) { return t ? t->storage->nbytes : 0; }

wk_status wk_tensor_set_requires_grad(wk_tensor *t, bool on) {
  if (!t) return wk_error(WK_ERR_NULL, "requires_grad_: argument 'self' is NULL");
  if (!on && !wk_tensor_is_leaf(t))
    return wk_error(WK_ERR_AUTOGRAD, "requires_grad_: you can only change requires_grad flags of leaf variables. If "
                    "you want to use a computed variable in a subgraph that doesn't require differentiation use "
                    "var_no_grad = var.detach().");
  if (on && !wk_dtype_is_floating(t->dtype))
    return wk_error(WK_ERR_DTYPE, "requires_grad_: only tensors of floating point dtype can require "
                    "gradients (got %s)", wk_dtype_name(t->dtype));
  if (on)
    t->flags |= WK__T_REQUIRES_GRAD;
  else
    t->flags &= ~(uint32_t)WK__T_REQUIRES_GRAD;
  return WK_OK;
}
bool wk_tensor_requires_grad(const wk_tensor *t) { return wk__requires_grad(t); }

/* ---- element access ---- */
static wk_status elem_ptr(const char *fn, wk_tensor *t, const int64_t *index, int64_t *off) {
  if (!t) return wk_error(WK_ERR_NULL, "%s: argument 'tensor' is NULL", fn);
  if (t->ndim && !index) return wk_error(WK_ERR_NULL, "%s: argument 'index' is NULL", fn);
  int64_t o = t->offset;
  for (int i = 0; i < t->ndim; i++) {
    if (index[i] < 0 || index[i] >= t->sizes[i])
      return wk_error(WK_ERR_INDEX, "%s: index %lld is out of bounds for dimension %d with size %lld", fn,
                      (long long)index[i], i, (long long)t->sizes[i]);
    o += index[i] * t->strides[i];
  }
  *off = o;
  return WK_OK;
}

static wk_status read_elem(wk_tensor *t, int64_t off, unsigned char *buf) {
  size_t es = wk_dtype_size(t->dtype);
  const char *src = (const char *)t->storage->data + off * (int64_t)es;
  return wk_device_copy(buf, wk_cpu(), src, t->storage->device, es);
}

wk_status wk_tensor_get(wk_tensor *t, const int64_t *index, double *out) {
  int64_t off;
  if (!out) return wk_error(WK_ERR_NULL, "tensor_get: argument 'out' is NULL");
  if (wk__tl_trace) wk__trace_note_read(t, "tensor_get()");
  wk_status s = elem_ptr("tensor_get", t, index, &off);
  if (s) return s;
  unsigned char buf[8];
  if ((s = read_elem(t, off, buf))) return s;
  *out = load_f64(buf, t->dtype);
  if (t->quant) *out = wk__q_dequant_at(t, *out, index); /* the real value, like PyTorch */
  return WK_OK;
}

wk_status wk_tensor_set(wk_tensor *t, const int64_t *index, double v) {
  int64_t off;
  wk_status s = elem_ptr("tensor_set", t, index, &off);
  if (s) return s;
  unsigned char buf[8];
  size_t es = wk_dtype_size(t->dtype);
  store_f64(buf, t->dtype, v);
  s = wk_device_copy((char *)t->storage->data + off * (int64_t)es, t->storage->device, buf, wk_cpu(), es);
  if (!s) wk_tensor_bump_version(t);
  return s;
}

static wk_status single(const char *fn, wk_tensor *t, unsigned char *buf) {
  if (!t) return wk_error(WK_ERR_NULL, "%s: argument 'tensor' is NULL", fn);
  if (wk_tensor_numel(t) != 1) {
    char b[256];
    return wk_error(WK_ERR_SHAPE, "%s: a Tensor with %lld elements cannot be converted to Scalar (shape %s)",
                    fn, (long long)wk_tensor_numel(t), wk__shape_str(t->sizes, t->ndim, b, sizeof b));
  }
  return read_elem(t, t->offset, buf);
}

wk_status wk_item(wk_tensor *t, double *out) {
  unsigned char buf[8];
  if (!out) return wk_error(WK_ERR_NULL, "item: argument 'out' is NULL");
  if (wk__tl_trace) wk__trace_note_read(t, "item()");
  wk_status s = single("item", t, buf);
  if (!s) *out = load_f64(buf, t->dtype);
  if (!s && t->quant) *out = wk__q_dequant_at(t, *out, (const int64_t[WK_MAX_DIMS]){0});
  return s;
}

wk_status wk_item_i64(wk_tensor *t, int64_t *out) {
  unsigned char buf[8];
  if (!out) return wk_error(WK_ERR_NULL, "item: argument 'out' is NULL");
  if (wk__tl_trace) wk__trace_note_read(t, "item()");
  wk_status s = single("item", t, buf);
  if (s) return s;
  if (t->dtype == WK_I64)
    memcpy(out, buf, 8);
  else
    *out = (int64_t)load_f64(buf, t->dtype);
  return WK_OK;
}

wk_status wk_tensor_to_f64(wk_tensor *t, double *out, int64_t n) {
  if (!t) return wk_error(WK_ERR_NULL, "tensor_to_f64: argument 'tensor' is NULL");
  if (wk__tl_trace) wk__trace_note_read(t, "tensor_to_f64()");
  int64_t numel = wk_tensor_numel(t);
  if (numel > 0 && !out) return wk_error(WK_ERR_NULL, "tensor_to_f64: argument 'out' is NULL");
  if (n < numel)
    return wk_error(WK_ERR_INVALID_ARG, "tensor_to_f64: output holds %lld elements, tensor has %lld",
                    (long long)n, (long long)numel);
  if (numel == 0) return WK_OK;
  size_t es = wk_dtype_size(t->dtype);
  const char *base = t->storage->data;
  char *host = NULL;
  if (wk__device_norm(t->storage->device).type != WK_DEVICE_CPU) {
    host = wk_malloc(t->storage->nbytes);
    if (!host) return wk_error(WK_ERR_NO_MEMORY, "tensor_to_f64: out of memory");
    wk_status s = wk_device_copy(host, wk_cpu(), base, t->storage->device, t->storage->nbytes);
    if (s) {
      free(host);
      return s;
    }
    base = host;
  }
  int64_t idx[WK_MAX_DIMS] = {0};
  for (int64_t k = 0; k < numel; k++) {
    int64_t off = t->offset;
    for (int d = 0; d < t->ndim; d++) off += idx[d] * t->strides[d];
    out[k] = load_f64(base + off * (int64_t)es, t->dtype);
    if (t->quant) out[k] = wk__q_dequant_at(t, out[k], idx);
    for (int d = t->ndim - 1; d >= 0; d--) {
      if (++idx[d] < t->sizes[d]) break;
      idx[d] = 0;
    }
  }
  free(host);
  return WK_OK;
}

void wk_free(void *p) { free(p); }
