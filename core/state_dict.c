/* State dicts: insertion-ordered name -> tensor maps with string metadata.
 * Each map is an array in insertion order plus an open-addressing hash index
 * (linear probing, at most half full), so set and get take constant time. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* One entry: a tensor (the tensor map) or a string (the metadata map). */
typedef struct {
  char *key;
  void *val;
  uint64_t hash;
} item;

/* An ordered map: items in insertion order; slot[] holds item positions, or
 * -1 for an empty slot; nslot is 0 or a power of two at least 2 * (n + 1). */
typedef struct {
  item *v;
  int n, cap;
  int32_t *slot;
  size_t nslot;
} map;

struct wk_state_dict {
  map e; /* name -> wk_tensor * (one reference held) */
  map m; /* key -> malloc'd value string */
  uint64_t seed;
};

/* The 64-bit finaliser of MurmurHash3: spreads every input bit over the result. */
static uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

/* FNV-1a over the bytes of s from a per-dict seed, then mixed. */
static uint64_t hash_str(uint64_t seed, const char *s) {
  uint64_t h = 0xcbf29ce484222325ull ^ seed;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) h = (h ^ *p) * 0x100000001b3ull;
  return mix64(h);
}

/* Position of key in m, or -1. */
static int map_find(const map *m, const char *key, uint64_t h) {
  if (!m->nslot) return -1;
  size_t mask = m->nslot - 1;
  for (size_t s = (size_t)h & mask;; s = (s + 1) & mask) {
    int32_t i = m->slot[s];
    if (i < 0) return -1;
    if (m->v[i].hash == h && strcmp(m->v[i].key, key) == 0) return i;
  }
}

/* Puts position i (whose key is not in the index yet) into the first free slot. */
static void index_put(map *m, int32_t i) {
  size_t mask = m->nslot - 1, s = (size_t)m->v[i].hash & mask;
  while (m->slot[s] >= 0) s = (s + 1) & mask;
  m->slot[s] = i;
}

/* Makes room for one more item in the array and the index; false when out of memory. */
static bool map_reserve(map *m) {
  if (m->n >= INT32_MAX / 4) return false;
  if (m->n == m->cap) {
    int cap = m->cap ? m->cap * 2 : 16;
    item *p = wk_realloc(m->v, sizeof *p * (size_t)cap);
    if (!p) return false;
    m->v = p;
    m->cap = cap;
  }
  if (2 * ((size_t)m->n + 1) > m->nslot) {
    size_t ns = m->nslot ? m->nslot * 2 : 32;
    int32_t *s = wk_malloc(sizeof *s * ns);
    if (!s) return false;
    free(m->slot);
    m->slot = s;
    m->nslot = ns;
    memset(s, 0xff, sizeof *s * ns); /* every slot -1 */
    for (int32_t i = 0; i < m->n; i++) index_put(m, i);
  }
  return true;
}

/* Appends key (taking ownership) -> val; map_reserve must have succeeded. */
static void map_push(map *m, char *key, uint64_t h, void *val) {
  int32_t i = m->n++;
  m->v[i] = (item){key, val, h};
  index_put(m, i);
}

/* Removes the item at position i from the index and the array (the caller has
 * freed its key and value): the later items move down one place, in order. */
static void map_remove_at(map *m, int i) {
  size_t mask = m->nslot - 1, s = (size_t)m->v[i].hash & mask;
  while (m->slot[s] != i) s = (s + 1) & mask;
  /* backward-shift deletion: pull later members of the probe run into the hole */
  for (size_t j = (s + 1) & mask; m->slot[j] >= 0; j = (j + 1) & mask) {
    size_t home = (size_t)m->v[m->slot[j]].hash & mask;
    if (((j - home) & mask) >= ((j - s) & mask)) { /* home is at or before the hole, cyclically */
      m->slot[s] = m->slot[j];
      s = j;
    }
  }
  m->slot[s] = -1;
  memmove(&m->v[i], &m->v[i + 1], sizeof(item) * (size_t)(m->n - i - 1));
  m->n--;
  if ((size_t)(m->n - i) * 4 < m->nslot) { /* few moved: find each one's slot */
    for (int32_t j = i; j < m->n; j++) {
      for (s = (size_t)m->v[j].hash & mask; m->slot[s] != j + 1;) s = (s + 1) & mask;
      m->slot[s] = j;
    }
  } else {
    for (size_t k = 0; k < m->nslot; k++) m->slot[k] -= m->slot[k] > i;
  }
}

wk_state_dict *wk_state_dict_new(void) {
  wk_state_dict *sd = wk_calloc(1, sizeof *sd);
  if (!sd)
    wk_error(WK_ERR_NO_MEMORY, "state_dict: out of memory");
  else
    sd->seed = mix64((uint64_t)(uintptr_t)sd); /* differs per dict and per run (ASLR) */
  return sd;
}

void wk_state_dict_free(wk_state_dict *sd) {
  if (!sd) return;
  int depth = wk__call_depth;
  wk__call_depth = depth + 1; /* the dict's own references, whatever scope is open */
  for (int i = 0; i < sd->e.n; i++) {
    free(sd->e.v[i].key);
    wk_release(sd->e.v[i].val);
  }
  wk__call_depth = depth;
  for (int i = 0; i < sd->m.n; i++) {
    free(sd->m.v[i].key);
    free(sd->m.v[i].val);
  }
  free(sd->e.v);
  free(sd->e.slot);
  free(sd->m.v);
  free(sd->m.slot);
  free(sd);
}

wk_status wk_state_dict_set(wk_state_dict *sd, const char *name, wk_tensor *t) {
  if (!sd || !name || !t)
    return wk_error(WK_ERR_NULL, "state_dict_set: argument '%s' is NULL", !sd ? "sd" : !name ? "name" : "tensor");
  if (!*name) return wk_error(WK_ERR_INVALID_ARG, "state_dict_set: empty name");
  uint64_t h = hash_str(sd->seed, name);
  int i = map_find(&sd->e, name, h);
  if (i >= 0) {
    wk_retain(t);
    int depth = wk__call_depth;
    wk__call_depth = depth + 1;
    wk_release(sd->e.v[i].val);
    wk__call_depth = depth;
    sd->e.v[i].val = t;
    return WK_OK;
  }
  char *k = map_reserve(&sd->e) ? wk__strdup(name) : NULL;
  if (!k) return wk_error(WK_ERR_NO_MEMORY, "state_dict_set: out of memory");
  map_push(&sd->e, k, h, wk_retain(t));
  return WK_OK;
}

wk_tensor *wk_state_dict_get(const wk_state_dict *sd, const char *name) {
  if (!sd || !name) return NULL;
  int i = map_find(&sd->e, name, hash_str(sd->seed, name));
  return i >= 0 ? sd->e.v[i].val : NULL;
}

wk_status wk_state_dict_remove(wk_state_dict *sd, const char *name) {
  if (!sd || !name) return wk_error(WK_ERR_NULL, "state_dict_remove: argument '%s' is NULL", sd ? "name" : "sd");
  int i = map_find(&sd->e, name, hash_str(sd->seed, name));
  if (i < 0) return wk_error(WK_ERR_NOT_FOUND, "state_dict_remove: no entry named '%s'", name);
  wk_tensor *t = sd->e.v[i].val;
  free(sd->e.v[i].key);
  map_remove_at(&sd->e, i);
  int depth = wk__call_depth;
  wk__call_depth = depth + 1;
  wk_release(t);
  wk__call_depth = depth;
  return WK_OK;
}

int wk_state_dict_size(const wk_state_dict *sd) {
  return sd ? sd->e.n : 0;
}
const char *wk_state_dict_key(const wk_state_dict *sd, int i) {
  return sd && i >= 0 && i < sd->e.n ? sd->e.v[i].key : NULL;
}
wk_tensor *wk_state_dict_value(const wk_state_dict *sd, int i) {
  return sd && i >= 0 && i < sd->e.n ? sd->e.v[i].val : NULL;
}

wk_status wk_state_dict_set_meta(wk_state_dict *sd, const char *key, const char *value) {
  if (!sd || !key || !value)
    return wk_error(WK_ERR_NULL, "state_dict_set_meta: argument '%s' is NULL", !sd ? "sd" : !key ? "key" : "value");
  uint64_t h = hash_str(sd->seed, key);
  int i = map_find(&sd->m, key, h);
  char *v = wk__strdup(value);
  if (!v) return wk_error(WK_ERR_NO_MEMORY, "state_dict_set_meta: out of memory");
  if (i >= 0) {
    free(sd->m.v[i].val);
    sd->m.v[i].val = v;
    return WK_OK;
  }
  char *k = map_reserve(&sd->m) ? wk__strdup(key) : NULL;
  if (!k) {
    free(v);
    return wk_error(WK_ERR_NO_MEMORY, "state_dict_set_meta: out of memory");
  }
  map_push(&sd->m, k, h, v);
  return WK_OK;
}

const char *wk_state_dict_get_meta(const wk_state_dict *sd, const char *key) {
  if (!sd || !key) return NULL;
  int i = map_find(&sd->m, key, hash_str(sd->seed, key));
  return i >= 0 ? sd->m.v[i].val : NULL;
}
int wk_state_dict_meta_size(const wk_state_dict *sd) {
  return sd ? sd->m.n : 0;
}
const char *wk_state_dict_meta_key(const wk_state_dict *sd, int i) {
  return sd && i >= 0 && i < sd->m.n ? sd->m.v[i].key : NULL;
}
const char *wk_state_dict_meta_value(const wk_state_dict *sd, int i) {
  return sd && i >= 0 && i < sd->m.n ? sd->m.v[i].val : NULL;
}
