/* onednn plugin: the weight cache. Convolutions and matmuls want their
 * weights in blocked layouts; reordering a parameter on every call costs a
 * pass over it per call (twice per training step: forward and data
 * gradient). A reordered copy is kept per (storage id, version, view,
 * target layout) in cache-owned memory (no tensor is kept alive), bounded by
 * bytes (LRU); a parameter written in place (optimizer step, in-place op)
 * gets a new version, so its old copies are never hit again and are dropped
 * as soon as the new version is stored.
 *
 * The version counter is the contract: a weight's memory written behind the
 * core's back (wk_tensor_data, a DLPack producer) must bump it, or run with
 * WICK_ONEDNN_WEIGHT_CACHE_MB=0. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "onednn.h"

#define ODN_WCACHE_DEFAULT_MB 256

typedef struct {
  char tag[8];
  uint64_t id, version;
  int64_t offset;
  dnnl_memory_desc_t have, want;
} wkey;

struct odn_wentry {
  wkey key;
  uint64_t hash, tick;
  void *data;
  size_t bytes;
  int pins;
  bool evicted;
  struct odn_wentry *next;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static odn_wentry *g_head; /* unordered list: a network has tens of weights */
static size_t g_bytes;
static long long g_limit = -1;
static uint64_t g_tick, g_hits, g_misses;

static size_t limit(void) {
  if (g_limit < 0) {
    const char *s = getenv("WICK_ONEDNN_WEIGHT_CACHE_MB");
    g_limit = (s && *s ? atoll(s) : ODN_WCACHE_DEFAULT_MB) << 20;
    if (g_limit < 0) g_limit = 0;
  }
  return (size_t)g_limit;
}

static uint64_t hash_key(const wkey *k) {
  const unsigned char *b = (const unsigned char *)k;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < sizeof *k; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

static void entry_free(odn_wentry *e) {
  odn_free(e->data);
  wk_free(e);
}

/* Unlinks e; freed now or by its last user. */
static void drop_locked(odn_wentry **link) {
  odn_wentry *e = *link;
  *link = e->next;
  g_bytes -= e->bytes;
  e->evicted = true;
  if (e->pins == 0) entry_free(e);
}

static odn_wentry *find_locked(const wkey *k, uint64_t h) {
  for (odn_wentry *e = g_head; e; e = e->next)
    if (e->hash == h && memcmp(&e->key, k, sizeof *k) == 0) {
      e->tick = ++g_tick;
      e->pins++;
      return e;
    }
  return NULL;
}

/* Drops other versions of the storage, then least recently used entries
 * until `need` more bytes fit. */
static void make_room_locked(const wkey *k, size_t need) {
  for (odn_wentry **l = &g_head; *l;)
    if ((*l)->key.id == k->id && (*l)->key.version != k->version)
      drop_locked(l);
    else
      l = &(*l)->next;
  while (g_head && g_bytes + need > limit()) {
    odn_wentry **victim = &g_head;
    for (odn_wentry **l = &g_head; *l; l = &(*l)->next)
      if ((*l)->tick < (*victim)->tick) victim = l;
    drop_locked(victim);
  }
}

static void key_of(wkey *k, const wk_tensor *w, const dnnl_memory_desc_t *have, const dnnl_memory_desc_t *want) {
  memset(k, 0, sizeof *k);
  memcpy(k->tag, "weight", 7);
  k->id = wk_tensor_storage_id(w);
  k->version = wk_tensor_version(w);
  k->offset = wk_tensor_offset(w);
  k->have = *have;
  k->want = *want;
}

/* Hashes of recent (weight view, version, layout, op, grad mode) uses, so a
 * copy is kept only for a weight used twice at one version by the same kind
 * of call (inference, gradient accumulation): a training step's single use
 * per layout gains nothing from a copy, and would hold a second set of
 * weights in memory. The op and the grad mode are part of the use: with
 * activation checkpointing a step runs a segment's convolutions once without
 * grad (the forward), once with grad (the recompute in backward) and then
 * conv2d_backward's data gradient, often in the forward's layout; counted as
 * one kind, the second use would copy every weight of the segment (44 MiB
 * for ResNet-18) for nothing, at the backward's peak of memory. */
#define ODN_SEEN 512
static uint64_t g_seen[ODN_SEEN];
static unsigned g_seen_next;

bool odn_weight_seen(const char *op, const wk_tensor *w, const dnnl_memory_desc_t *want) {
  if (!w || limit() == 0) return false;
  wkey k;
  dnnl_memory_desc_t have, none;
  memset(&none, 0, sizeof none);
  odn_md_of(&have, w);
  key_of(&k, w, &have, want ? want : &none);
  uint64_t h = hash_key(&k);
  for (const char *c = op; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ull;
  h = (h ^ (wk_grad_enabled() ? 1u : 2u)) * 1099511628211ull;
  h |= 1; /* 0 marks an empty slot */
  bool seen = false;
  pthread_mutex_lock(&g_lock);
  for (int i = 0; i < ODN_SEEN && !seen; i++) seen = g_seen[i] == h;
  if (!seen) g_seen[g_seen_next++ % ODN_SEEN] = h;
  pthread_mutex_unlock(&g_lock);
  return seen;
}

wk_status odn_weight_arg(const char *op, const wk_tensor *w, odn_arg *a, bool reused, odn_wentry **pin) {
  *pin = NULL;
  if (!a->want || a->want->ndims == 0 || odn.memory_desc_equal(a->want, a->have)) return WK_OK;
  size_t bytes = odn.memory_desc_get_size(a->want);
  if (bytes == 0 || bytes > limit() || wk_tensor_storage_id(w) == 0) return WK_OK; /* plain reorder in odn_exec */
  wkey k;
  key_of(&k, w, a->have, a->want);
  uint64_t h = hash_key(&k);
  pthread_mutex_lock(&g_lock);
  odn_wentry *e = find_locked(&k, h);
  if (e) g_hits++;
  pthread_mutex_unlock(&g_lock);
  if (!e && !reused && !odn_weight_seen(op, w, a->want)) return WK_OK; /* first use: plain reorder in odn_exec */
  if (!e) {
    pthread_mutex_lock(&g_lock);
    g_misses++; /* a copy made */
    pthread_mutex_unlock(&g_lock);
    void *data = odn_alloc(bytes);
    if (!data) return wk_error(WK_ERR_NO_MEMORY, "%s(): out of memory for a reordered weight (%zu bytes)", op, bytes);
    wk_status s = odn_reorder(op, a->have, a->data, a->want, data);
    if (s || !(e = wk_calloc(1, sizeof *e))) {
      odn_free(data);
      return s ? s : wk_error(WK_ERR_NO_MEMORY, "%s(): out of memory for the weight cache", op);
    }
    *e = (odn_wentry){k, h, 0, data, bytes, 1, false, NULL};
    pthread_mutex_lock(&g_lock);
    odn_wentry *old = find_locked(&k, h);
    if (old) { /* another thread stored the same copy meanwhile */
      pthread_mutex_unlock(&g_lock);
      entry_free(e);
      e = old;
    } else {
      make_room_locked(&k, bytes);
      e->tick = ++g_tick;
      e->next = g_head;
      g_head = e;
      g_bytes += bytes;
      pthread_mutex_unlock(&g_lock);
    }
  }
  a->have = a->want;
  a->data = e->data;
  *pin = e;
  return WK_OK;
}

void odn_weight_unpin(odn_wentry *e) {
  if (!e) return;
  pthread_mutex_lock(&g_lock);
  bool dead = --e->pins == 0 && e->evicted;
  pthread_mutex_unlock(&g_lock);
  if (dead) entry_free(e);
}

void odn_weight_clear(void) {
  pthread_mutex_lock(&g_lock);
  while (g_head) drop_locked(&g_head);
  pthread_mutex_unlock(&g_lock);
}

void odn_weight_stats(uint64_t *hits, uint64_t *misses, size_t *bytes) {
  pthread_mutex_lock(&g_lock);
  if (hits) *hits = g_hits;
  if (misses) *misses = g_misses;
  if (bytes) *bytes = g_bytes;
  pthread_mutex_unlock(&g_lock);
}
