/* onednn plugin: the primitive cache. Creating a oneDNN primitive costs
 * tens of microseconds to milliseconds (JIT code generation), so every
 * primitive is built once per key (op kind, shapes, strides, dtypes,
 * attributes) and kept in a bounded LRU; a training step re-creates none. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "onednn.h"

/* Enough for every distinct layer of a large network, forward and backward,
 * plus the reorders between layouts. WICK_ONEDNN_CACHE overrides. */
#define ODN_CACHE_DEFAULT 1024

struct odn_entry {
  uint64_t hash, tick;
  void *key;
  size_t n;
  void *val;
  void (*destroy)(void *);
  int pins;
  bool evicted;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static odn_entry **g_e;
static int g_n, g_cap = -1;
static uint64_t g_tick, g_hits, g_misses;

static uint64_t hash_bytes(const void *p, size_t n) {
  const unsigned char *b = p;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

static void entry_free(odn_entry *e) {
  if (e->destroy) e->destroy(e->val);
  wk_free(e->key);
  wk_free(e);
}

static int capacity(void) {
  if (g_cap < 0) {
    const char *s = getenv("WICK_ONEDNN_CACHE");
    g_cap = s && atoi(s) > 0 ? atoi(s) : ODN_CACHE_DEFAULT;
  }
  return g_cap;
}

static odn_entry *find_locked(const void *key, size_t n, uint64_t h) {
  for (int i = 0; i < g_n; i++) {
    odn_entry *e = g_e[i];
    if (e->hash == h && e->n == n && memcmp(e->key, key, n) == 0) {
      e->tick = ++g_tick;
      e->pins++;
      return e;
    }
  }
  return NULL;
}

odn_entry *odn_cache_find(const void *key, size_t n) {
  uint64_t h = hash_bytes(key, n);
  pthread_mutex_lock(&g_lock);
  odn_entry *e = find_locked(key, n, h);
  if (e)
    g_hits++;
  else
    g_misses++;
  pthread_mutex_unlock(&g_lock);
  return e;
}

/* Drops the least recently used entry; a pinned one is destroyed by its last user. */
static void evict_one_locked(void) {
  int victim = -1;
  for (int i = 0; i < g_n; i++)
    if (victim < 0 || g_e[i]->tick < g_e[victim]->tick) victim = i;
  if (victim < 0) return;
  odn_entry *e = g_e[victim];
  g_e[victim] = g_e[--g_n];
  e->evicted = true;
  if (e->pins == 0) entry_free(e);
}

odn_entry *odn_cache_add(const void *key, size_t n, void *val, void (*destroy)(void *)) {
  uint64_t h = hash_bytes(key, n);
  odn_entry *e = wk_calloc(1, sizeof *e);
  void *k = wk_malloc(n);
  if (!e || !k) {
    wk_free(e);
    wk_free(k);
    if (destroy) destroy(val);
    wk_error(WK_ERR_NO_MEMORY, "onednn: out of memory for the primitive cache");
    return NULL;
  }
  memcpy(k, key, n);
  *e = (odn_entry){h, 0, k, n, val, destroy, 1, false};
  pthread_mutex_lock(&g_lock);
  odn_entry *old = find_locked(key, n, h);
  if (old) { /* another thread built the same thing meanwhile */
    pthread_mutex_unlock(&g_lock);
    entry_free(e);
    return old;
  }
  int cap = capacity();
  while (g_n >= cap) evict_one_locked();
  if (!g_e) {
    g_e = wk_malloc(sizeof *g_e * (size_t)cap);
    if (!g_e) {
      pthread_mutex_unlock(&g_lock);
      entry_free(e);
      wk_error(WK_ERR_NO_MEMORY, "onednn: out of memory for the primitive cache");
      return NULL;
    }
  }
  e->tick = ++g_tick;
  g_e[g_n++] = e;
  pthread_mutex_unlock(&g_lock);
  return e;
}

void *odn_entry_val(odn_entry *e) {
  return e ? e->val : NULL;
}

void odn_cache_unpin(odn_entry *e) {
  if (!e) return;
  pthread_mutex_lock(&g_lock);
  bool dead = --e->pins == 0 && e->evicted;
  pthread_mutex_unlock(&g_lock);
  if (dead) entry_free(e);
}

void odn_cache_clear(void) {
  pthread_mutex_lock(&g_lock);
  while (g_n > 0) evict_one_locked();
  pthread_mutex_unlock(&g_lock);
}

void odn_cache_stats(uint64_t *hits, uint64_t *misses) {
  pthread_mutex_lock(&g_lock);
  if (hits) *hits = g_hits;
  if (misses) *misses = g_misses;
  pthread_mutex_unlock(&g_lock);
}

/* ---- primitives ------------------------------------------------------------------------------ */
void odn_prim_destroy(void *v) {
  odn_prim *p = v;
  if (!p) return;
  if (p->prim) odn.primitive_destroy(p->prim);
  if (p->pd) odn.primitive_desc_destroy(p->pd);
  wk_free(p);
}

odn_prim *odn_prim_from_pd(const char *op, dnnl_primitive_desc_t pd, const dnnl_query_t *queries, int nq) {
  odn_prim *p = wk_calloc(1, sizeof *p);
  if (!p) {
    odn.primitive_desc_destroy(pd);
    wk_error(WK_ERR_NO_MEMORY, "%s(): out of memory", op);
    return NULL;
  }
  p->pd = pd;
  for (int i = 0; i < nq && i < ODN_MAX_MD; i++)
    if (queries[i] != dnnl_query_undef) {
      const dnnl_memory_desc_t *md = odn.primitive_desc_query_md(pd, queries[i], 0);
      if (md) p->md[i] = *md;
    }
  const dnnl_memory_desc_t *sp = odn.primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  if (sp) p->scratch_md = *sp;
  p->scratch = sp ? odn.memory_desc_get_size(sp) : 0;
  if (odn_check(odn.primitive_create(&p->prim, pd), op, "primitive creation")) {
    odn_prim_destroy(p);
    return NULL;
  }
  return p;
}

dnnl_primitive_attr_t odn_attr(const char *op) {
  dnnl_primitive_attr_t a = NULL;
  if (odn_check(odn.primitive_attr_create(&a), op, "attribute creation")) return NULL;
  /* scratchpads come from the core allocator, not from oneDNN's own */
  if (odn_check(odn.primitive_attr_set_scratchpad_mode(a, dnnl_scratchpad_mode_user), op, "scratchpad mode")) {
    odn.primitive_attr_destroy(a);
    return NULL;
  }
  return a;
}

odn_prim *odn_prim_create(const char *op, const void *desc, dnnl_primitive_attr_t attr,
                          const_dnnl_primitive_desc_t hint, const dnnl_query_t *queries, int nq) {
  dnnl_primitive_attr_t a = attr ? attr : odn_attr(op);
  if (!a) return NULL;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_status_t st = odn.primitive_desc_create(&pd, desc, a, odn_engine, hint);
  if (!attr) odn.primitive_attr_destroy(a);
  if (odn_check(st, op, "primitive description")) return NULL;
  return odn_prim_from_pd(op, pd, queries, nq);
}

odn_entry *odn_prim_get(const void *key, size_t n, odn_prim *(*make)(void *ctx), void *ctx) {
  odn_entry *e = odn_cache_find(key, n);
  if (e) return e;
  odn_prim *p = make(ctx);
  if (!p) return NULL;
  return odn_cache_add(key, n, p, odn_prim_destroy);
}
