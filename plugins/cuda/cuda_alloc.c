/* Caching allocator bookkeeping (plain C, see cuda_alloc.h). Segments come
 * from the backing allocator and are cut into blocks; free blocks wait in
 * power-of-two size bins of a (stream, small|large) pool and are reused best
 * fit, split when the rest is worth keeping, and merged with free neighbours
 * when released, so a training step's repeated sizes never reach cudaMalloc. */
#include "cuda_alloc.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NBINS 64

typedef struct block {
  char *ptr;
  size_t size;      /* rounded size of this block */
  size_t requested; /* what the caller asked for (allocated blocks) */
  size_t seg_size;  /* segment size, on the segment's first block only */
  uintptr_t stream;
  int device;
  bool allocated, small;
  struct block *prev, *next;   /* address neighbours inside the segment */
  struct block *fprev, *fnext; /* free list of the bin (free blocks) */
  struct block *hnext;         /* hash chain (allocated blocks) */
} block;

typedef struct pool {
  uintptr_t stream;
  bool small;
  block *bins[NBINS];
} pool;

typedef struct device {
  pool *pools;
  int npools, cap;
  ca_stats st;
  int64_t alloc_bytes_total, freed_bytes_total, seg_alloc_total, seg_freed_total;
} device;

struct ca_allocator {
  ca_backing b;
  int ndev;
  size_t max_split;
  pthread_mutex_t mu;
  device *devs;
  block **hash; /* allocated blocks by address */
  size_t hcap, hcount;
};

/* ---- sizes and bins ------------------------------------------------------------- */
static size_t round_size(size_t n) {
  if (n < CA_MIN_BLOCK) return CA_MIN_BLOCK;
  return (n + CA_MIN_BLOCK - 1) / CA_MIN_BLOCK * CA_MIN_BLOCK;
}
static size_t segment_size(size_t rounded) {
  if (rounded <= CA_SMALL_SIZE) return CA_SMALL_BUFFER;
  if (rounded < CA_MIN_LARGE_ALLOC) return CA_LARGE_BUFFER;
  return (rounded + CA_ROUND_LARGE - 1) / CA_ROUND_LARGE * CA_ROUND_LARGE;
}
static int bin_of(size_t size) {
  int b = 0;
  while (size >>= 1) b++;
  return b < NBINS ? b : NBINS - 1;
}

static void bin_insert(pool *p, block *k) {
  int b = bin_of(k->size);
  k->fprev = NULL;
  k->fnext = p->bins[b];
  if (k->fnext) k->fnext->fprev = k;
  p->bins[b] = k;
}
static void bin_remove(pool *p, block *k) {
  if (k->fprev)
    k->fprev->fnext = k->fnext;
  else
    p->bins[bin_of(k->size)] = k->fnext;
  if (k->fnext) k->fnext->fprev = k->fprev;
  k->fprev = k->fnext = NULL;
}

static pool *get_pool(device *d, uintptr_t stream, bool small, bool create) {
  for (int i = 0; i < d->npools; i++)
    if (d->pools[i].stream == stream && d->pools[i].small == small) return &d->pools[i];
  if (!create) return NULL;
  if (d->npools == d->cap) {
    int cap = d->cap ? 2 * d->cap : 4;
    pool *np = realloc(d->pools, sizeof *np * (size_t)cap);
    if (!np) return NULL;
    d->pools = np;
    d->cap = cap;
  }
  pool *p = &d->pools[d->npools++];
  memset(p, 0, sizeof *p);
  p->stream = stream;
  p->small = small;
  return p;
}

/* ---- the hash of allocated blocks ---------------------------------------------- */
static size_t hslot(const ca_allocator *a, const void *ptr) {
  uintptr_t x = (uintptr_t)ptr >> 9;
  x ^= x >> 17;
  x *= 0x9e3779b97f4a7c15ull;
  return (size_t)(x >> 7) & (a->hcap - 1);
}
static bool hash_grow(ca_allocator *a) {
  size_t ncap = a->hcap ? a->hcap * 2 : 1024;
  block **nh = calloc(ncap, sizeof *nh);
  if (!nh) return false;
  block **old = a->hash;
  size_t ocap = a->hcap;
  a->hash = nh;
  a->hcap = ncap;
  for (size_t i = 0; i < ocap; i++)
    for (block *k = old[i], *n; k; k = n) {
      n = k->hnext;
      size_t s = hslot(a, k->ptr);
      k->hnext = a->hash[s];
      a->hash[s] = k;
    }
  free(old);
  return true;
}
static bool hash_put(ca_allocator *a, block *k) {
  if (a->hcount + 1 > a->hcap && !hash_grow(a)) return false;
  size_t s = hslot(a, k->ptr);
  k->hnext = a->hash[s];
  a->hash[s] = k;
  a->hcount++;
  return true;
}
static block *hash_take(ca_allocator *a, const void *ptr, bool remove) {
  if (!a->hcap) return NULL;
  for (block **pp = &a->hash[hslot(a, ptr)]; *pp; pp = &(*pp)->hnext)
    if ((*pp)->ptr == ptr) {
      block *k = *pp;
      if (remove) {
        *pp = k->hnext;
        k->hnext = NULL;
        a->hcount--;
      }
      return k;
    }
  return NULL;
}

/* ---- create and destroy --------------------------------------------------------- */
ca_allocator *ca_new(const ca_backing *backing, int num_devices, size_t max_split_size) {
  if (!backing || !backing->alloc || !backing->free || num_devices < 0) return NULL;
  ca_allocator *a = calloc(1, sizeof *a);
  if (!a) return NULL;
  a->b = *backing;
  a->ndev = num_devices;
  a->max_split = max_split_size;
  a->devs = calloc(num_devices ? (size_t)num_devices : 1, sizeof *a->devs);
  if (!a->devs) {
    free(a);
    return NULL;
  }
  pthread_mutex_init(&a->mu, NULL);
  return a;
}

static void release_block_memory(ca_allocator *a, block *k) {
  if (!k->prev) a->b.free(a->b.ctx, k->device, k->ptr); /* segment head */
  free(k);
}

void ca_destroy(ca_allocator *a) {
  if (!a) return;
  for (size_t i = 0; i < a->hcap; i++)
    for (block *k = a->hash[i], *n; k; k = n) {
      n = k->hnext;
      release_block_memory(a, k);
    }
  for (int d = 0; d < a->ndev; d++) {
    for (int i = 0; i < a->devs[d].npools; i++)
      for (int b = 0; b < NBINS; b++)
        for (block *k = a->devs[d].pools[i].bins[b], *n; k; k = n) {
          n = k->fnext;
          release_block_memory(a, k);
        }
    free(a->devs[d].pools);
  }
  free(a->hash);
  free(a->devs);
  pthread_mutex_destroy(&a->mu);
  free(a);
}

/* ---- allocation ------------------------------------------------------------------ */
static bool oversize(const ca_allocator *a, size_t size) { return a->max_split && size >= a->max_split; }

/* Best fit in the pool: the first bin holding a fitting block has the smallest ones. */
static block *find_free(ca_allocator *a, pool *p, size_t size) {
  for (int b = bin_of(size); b < NBINS; b++) {
    block *best = NULL;
    for (block *k = p->bins[b]; k; k = k->fnext) {
      if (k->size < size) continue;
      /* an unsplittable block serves only requests of about its size */
      if (oversize(a, k->size) && (!oversize(a, size) || k->size >= size + CA_LARGE_BUFFER)) continue;
      if (!best || k->size < best->size || (k->size == best->size && k->ptr < best->ptr)) best = k;
    }
    if (best) return best;
  }
  return NULL;
}

/* Releases the fully free cached segments of device d; returns the bytes freed. */
static size_t release_free_segments(ca_allocator *a, int d) {
  device *dv = &a->devs[d];
  size_t freed = 0;
  for (int i = 0; i < dv->npools; i++)
    for (int b = 0; b < NBINS; b++)
      for (block *k = dv->pools[i].bins[b], *n; k; k = n) {
        n = k->fnext;
        if (k->prev || k->next) continue; /* part of a segment still in use */
        bin_remove(&dv->pools[i], k);
        freed += k->seg_size;
        dv->st.reserved -= (int64_t)k->seg_size;
        dv->st.segments--;
        dv->seg_freed_total += (int64_t)k->seg_size;
        a->b.free(a->b.ctx, d, k->ptr);
        free(k);
      }
  return freed;
}

static void oom_message(ca_allocator *a, int d, size_t nbytes, char *msg, size_t msg_n) {
  device *dv = &a->devs[d];
  char req[32], alloc[32], unalloc[32], tot[32], fr[32], dev_part[160] = "";
  size_t free_b = 0, total_b = 0;
  int64_t unused = dv->st.reserved - dv->st.allocated;
  if (a->b.mem_info && a->b.mem_info(a->b.ctx, d, &free_b, &total_b) == 0)
    snprintf(dev_part, sizeof dev_part, " GPU %d has a total capacity of %s of which %s is free.", d,
             ca_format_bytes((int64_t)total_b, tot, sizeof tot), ca_format_bytes((int64_t)free_b, fr, sizeof fr));
  snprintf(msg, msg_n,
           "CUDA out of memory. Tried to allocate %s.%s Of the allocated memory %s is allocated by tensors, and "
           "%s is reserved by the caching allocator but unallocated. To go on: release tensors you no longer "
           "need (wk_release, or end their scope) and call wk_device_empty_cache(); use a smaller batch size; "
           "use mixed precision (amp) to halve activations%s",
           ca_format_bytes((int64_t)nbytes, req, sizeof req), dev_part,
           ca_format_bytes(dv->st.allocated, alloc, sizeof alloc), ca_format_bytes(unused, unalloc, sizeof unalloc),
           unused > dv->st.reserved / 4 && unused > (int64_t)CA_LARGE_BUFFER
               ? ". Reserved but unallocated memory is large: to avoid fragmentation, set "
                 "WICK_CUDA_ALLOC_CONF=max_split_size_mb:128 (like PYTORCH_CUDA_ALLOC_CONF)."
               : ".");
}

ca_result ca_alloc(ca_allocator *a, int d, uintptr_t stream, size_t nbytes, void **ptr, char *msg, size_t msg_n) {
  if (ptr) *ptr = NULL;
  if (msg && msg_n) msg[0] = 0;
  if (!a || !ptr || d < 0 || d >= a->ndev) {
    if (msg && msg_n) snprintf(msg, msg_n, "invalid allocator arguments (device %d)", d);
    return CA_BAD_ARG;
  }
  if (nbytes > SIZE_MAX / 2) {
    if (msg && msg_n) snprintf(msg, msg_n, "CUDA out of memory. Tried to allocate %zu bytes", nbytes);
    pthread_mutex_lock(&a->mu);
    a->devs[d].st.num_ooms++;
    pthread_mutex_unlock(&a->mu);
    return CA_OOM;
  }
  size_t size = round_size(nbytes);
  bool small = size <= CA_SMALL_SIZE;
  pthread_mutex_lock(&a->mu);
  device *dv = &a->devs[d];
  pool *p = get_pool(dv, stream, small, true);
  block *k = p ? find_free(a, p, size) : NULL;
  ca_result r = CA_OK;
  if (k) {
    bin_remove(p, k);
    dv->st.cache_hits++;
  } else if (p) {
    size_t seg = segment_size(size);
    void *mem = NULL;
    char bmsg[256] = "";
    int br = a->b.alloc(a->b.ctx, d, seg, &mem, bmsg, sizeof bmsg);
    if (br == 1 && release_free_segments(a, d) > 0) { /* cached memory cures many OOMs */
      dv->st.num_alloc_retries++;
      br = a->b.alloc(a->b.ctx, d, seg, &mem, bmsg, sizeof bmsg);
    }
    if (br == 0) {
      k = calloc(1, sizeof *k);
      if (!k) {
        a->b.free(a->b.ctx, d, mem);
        br = -1;
        snprintf(bmsg, sizeof bmsg, "out of host memory for the allocator's bookkeeping");
      } else {
        k->ptr = mem;
        k->size = k->seg_size = seg;
        k->stream = stream;
        k->device = d;
        k->small = small;
        dv->st.reserved += (int64_t)seg;
        dv->st.segments++;
        dv->seg_alloc_total += (int64_t)seg;
        if (dv->st.reserved > dv->st.max_reserved) dv->st.max_reserved = dv->st.reserved;
      }
    }
    if (br == 1) {
      dv->st.num_ooms++;
      if (msg && msg_n) oom_message(a, d, nbytes, msg, msg_n);
      r = CA_OOM;
    } else if (br != 0) {
      if (msg && msg_n) snprintf(msg, msg_n, "%s", bmsg[0] ? bmsg : "the device allocation failed");
      r = CA_ERROR;
    }
  } else {
    if (msg && msg_n) snprintf(msg, msg_n, "out of host memory for the allocator's pools");
    r = CA_ERROR;
  }
  if (r == CA_OK) {
    size_t rest = k->size - size;
    bool split = !oversize(a, k->size) && (small ? rest >= CA_MIN_BLOCK : rest > CA_SMALL_SIZE);
    block *tail = split ? calloc(1, sizeof *tail) : NULL;
    if (tail) { /* the tail stays cached; it is merged back when this block is freed */
      tail->ptr = k->ptr + size;
      tail->size = rest;
      tail->stream = stream;
      tail->device = d;
      tail->small = small;
      tail->prev = k;
      tail->next = k->next;
      if (k->next) k->next->prev = tail;
      k->next = tail;
      k->size = size;
      bin_insert(p, tail);
    }
    k->allocated = true;
    k->requested = nbytes;
    if (!hash_put(a, k)) { /* cannot track it: give it back */
      k->allocated = false;
      bin_insert(p, k);
      if (msg && msg_n) snprintf(msg, msg_n, "out of host memory for the allocator's table");
      r = CA_ERROR;
    } else {
      dv->st.allocated += (int64_t)k->size;
      dv->st.requested += (int64_t)nbytes;
      dv->st.active_blocks++;
      dv->st.alloc_count++;
      dv->alloc_bytes_total += (int64_t)k->size;
      if (dv->st.allocated > dv->st.max_allocated) dv->st.max_allocated = dv->st.allocated;
      *ptr = k->ptr;
    }
  }
  pthread_mutex_unlock(&a->mu);
  return r;
}

bool ca_free(ca_allocator *a, void *ptr) {
  if (!a || !ptr) return ptr == NULL;
  pthread_mutex_lock(&a->mu);
  block *k = hash_take(a, ptr, true);
  if (!k) {
    pthread_mutex_unlock(&a->mu);
    return false;
  }
  device *dv = &a->devs[k->device];
  pool *p = get_pool(dv, k->stream, k->small, false);
  dv->st.allocated -= (int64_t)k->size;
  dv->st.requested -= (int64_t)k->requested;
  dv->st.active_blocks--;
  dv->st.free_count++;
  dv->freed_bytes_total += (int64_t)k->size;
  k->allocated = false;
  k->requested = 0;
  block *n = k->next;
  if (n && !n->allocated) { /* absorb the free block after */
    bin_remove(p, n);
    k->size += n->size;
    k->next = n->next;
    if (n->next) n->next->prev = k;
    free(n);
  }
  block *pr = k->prev;
  if (pr && !pr->allocated) { /* the free block before absorbs this one */
    bin_remove(p, pr);
    pr->size += k->size;
    pr->next = k->next;
    if (k->next) k->next->prev = pr;
    free(k);
    k = pr;
  }
  bin_insert(p, k);
  pthread_mutex_unlock(&a->mu);
  return true;
}

size_t ca_block_size(ca_allocator *a, const void *ptr) {
  if (!a || !ptr) return 0;
  pthread_mutex_lock(&a->mu);
  block *k = hash_take(a, ptr, false);
  size_t s = k ? k->size : 0;
  pthread_mutex_unlock(&a->mu);
  return s;
}

/* ---- statistics ------------------------------------------------------------------- */
void ca_empty_cache(ca_allocator *a, int device) {
  if (!a) return;
  pthread_mutex_lock(&a->mu);
  for (int d = 0; d < a->ndev; d++)
    if (device < 0 || d == device) release_free_segments(a, d);
  pthread_mutex_unlock(&a->mu);
}

static int64_t inactive_split(const device *dv) {
  int64_t s = 0;
  for (int i = 0; i < dv->npools; i++)
    for (int b = 0; b < NBINS; b++)
      for (const block *k = dv->pools[i].bins[b]; k; k = k->fnext)
        if (k->prev || k->next) s += (int64_t)k->size;
  return s;
}

void ca_get_stats(ca_allocator *a, int device, ca_stats *out) {
  if (!out) return;
  memset(out, 0, sizeof *out);
  if (!a || device < 0 || device >= a->ndev) return;
  pthread_mutex_lock(&a->mu);
  *out = a->devs[device].st;
  out->inactive_split = inactive_split(&a->devs[device]);
  pthread_mutex_unlock(&a->mu);
}

void ca_reset_peak(ca_allocator *a, int device) {
  if (!a || device < 0 || device >= a->ndev) return;
  pthread_mutex_lock(&a->mu);
  ca_stats *s = &a->devs[device].st;
  s->max_allocated = s->allocated;
  s->max_reserved = s->reserved;
  pthread_mutex_unlock(&a->mu);
}

const char *ca_format_bytes(int64_t bytes, char *buf, size_t n) {
  static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)(bytes < 0 ? -bytes : bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    u++;
  }
  if (u == 0)
    snprintf(buf, n, "%s%lld B", bytes < 0 ? "-" : "", (long long)(bytes < 0 ? -bytes : bytes));
  else
    snprintf(buf, n, "%s%.2f %s", bytes < 0 ? "-" : "", v, units[u]);
  return buf;
}

size_t ca_summary(ca_allocator *a, int device, char *buf, size_t n) {
  ca_stats s;
  ca_get_stats(a, device, &s);
  int64_t at = 0, ft = 0, st = 0, sf = 0;
  if (a && device >= 0 && device < a->ndev) {
    pthread_mutex_lock(&a->mu);
    const struct device *dv = &a->devs[device];
    at = dv->alloc_bytes_total;
    ft = dv->freed_bytes_total;
    st = dv->seg_alloc_total;
    sf = dv->seg_freed_total;
    pthread_mutex_unlock(&a->mu);
  }
  char c1[32], c2[32], c3[32], c4[32];
  const char *rule = "|===========================================================================|\n";
  const char *thin = "|---------------------------------------------------------------------------|\n";
  size_t k = 0;
#define OUT(...) k += (size_t)snprintf(buf + (k < n ? k : n), k < n ? n - k : 0, __VA_ARGS__)
  char title[80];
  int tl = snprintf(title, sizeof title, "Wick CUDA memory summary, device ID %d", device), pad = (75 - tl) / 2;
  OUT("%s|%*s%s%*s|\n", rule, pad, "", title, 75 - tl - pad, "");
  OUT("%s|  CUDA OOMs: %-22lld|  cudaMalloc retries: %-19lld|\n", thin, (long long)s.num_ooms,
      (long long)s.num_alloc_retries);
  OUT("%s|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |\n%s", rule, thin);
  OUT("| Allocated memory      | %10s | %10s | %10s | %10s |\n", ca_format_bytes(s.allocated, c1, sizeof c1),
      ca_format_bytes(s.max_allocated, c2, sizeof c2), ca_format_bytes(at, c3, sizeof c3),
      ca_format_bytes(ft, c4, sizeof c4));
  OUT("| Reserved memory       | %10s | %10s | %10s | %10s |\n", ca_format_bytes(s.reserved, c1, sizeof c1),
      ca_format_bytes(s.max_reserved, c2, sizeof c2), ca_format_bytes(st, c3, sizeof c3),
      ca_format_bytes(sf, c4, sizeof c4));
  OUT("| Requested memory      | %10s | %10s | %10s | %10s |\n", ca_format_bytes(s.requested, c1, sizeof c1), "-", "-",
      "-");
  OUT("| Non-releasable memory | %10s | %10s | %10s | %10s |\n", ca_format_bytes(s.inactive_split, c1, sizeof c1), "-",
      "-", "-");
  OUT("%s| Allocations           | %10lld | %10s | %10lld | %10lld |\n", thin, (long long)s.active_blocks, "-",
      (long long)s.alloc_count, (long long)s.free_count);
  OUT("| GPU reserved segments | %10lld | %10s | %10s | %10s |\n", (long long)s.segments, "-", "-", "-");
  OUT("| Served from the cache | %10lld | %10s | %10s | %10s |\n%s", (long long)s.cache_hits, "-", "-", "-", rule);
#undef OUT
  return k;
}
