/* data plugin: samplers. An epoch's order depends only on (seed, epoch):
 * the stream is Philox keyed by mix(seed, epoch). */
#include <math.h>

#include "data.h"

wk_sampler *dt_sampler_retain(wk_sampler *s) {
  if (s) atomic_fetch_add(&s->rc, 1);
  return s;
}
void dt_sampler_release(wk_sampler *s) {
  if (!s || atomic_fetch_sub(&s->rc, 1) != 1) return;
  if (s->vt->destroy) s->vt->destroy(s);
  wk_free(s);
}
void dt_sampler_free(wk_sampler *s) { dt_sampler_release(s); }
int64_t dt_sampler_len(wk_sampler *s) {
  if (!s) {
    wk_error(WK_ERR_NULL, "sampler_len: argument 's' is NULL");
    return -1;
  }
  return s->vt->len(s);
}
void dt_sampler_set_epoch(wk_sampler *s, int64_t epoch) {
  if (s) s->epoch = epoch;
}
int64_t *dt_sampler_order(wk_sampler *s, int64_t epoch, int64_t *n) {
  *n = s->vt->len(s);
  int64_t *buf = wk_malloc(sizeof(int64_t) * (size_t)(*n > 0 ? *n : 1));
  if (!buf) {
    wk_error(WK_ERR_NO_MEMORY, "sampler: out of memory for %lld indices", (long long)*n);
    return NULL;
  }
  if (s->vt->fill(s, epoch, buf) != WK_OK) {
    wk_free(buf);
    return NULL;
  }
  return buf;
}
int64_t dt_sampler_indices(wk_sampler *s, int64_t *buf, int64_t cap) {
  if (!s || !buf) {
    wk_error(WK_ERR_NULL, "sampler_indices: argument '%s' is NULL", !s ? "s" : "buf");
    return -1;
  }
  int64_t n = s->vt->len(s);
  if (cap < n) {
    wk_error(WK_ERR_INVALID_ARG, "sampler_indices: buffer of %lld for %lld indices", (long long)cap, (long long)n);
    return -1;
  }
  return s->vt->fill(s, s->epoch, buf) == WK_OK ? n : -1;
}

static void *sm_alloc(size_t size, const dt_sampler_vt *vt) {
  wk_sampler *s = wk_calloc(1, size);
  if (!s) {
    wk_error(WK_ERR_NO_MEMORY, "sampler: out of memory");
    return NULL;
  }
  atomic_init(&s->rc, 1);
  s->vt = vt;
  return s;
}
static void epoch_rng(dt_rng *r, uint64_t seed, int64_t epoch) { dt_rng_init(r, wk_data_mix(wk_data_mix(seed) ^ (uint64_t)epoch)); }
static bool check_n(const char *fn, int64_t n) {
  if (n >= 0) return true;
  wk_error(WK_ERR_INVALID_ARG, "%s: the number of samples must be non-negative, got %lld", fn, (long long)n);
  return false;
}

/* ---- Sequential and Random ------------------------------------------------------------------------- */
typedef struct {
  wk_sampler base;
  int64_t n, num_samples;
  bool replacement;
  uint64_t seed;
  int64_t *idx; /* SubsetRandom: the indices; NULL otherwise */
} basic;
static int64_t basic_len(wk_sampler *s) { return ((basic *)s)->num_samples; }
static wk_status seq_fill(wk_sampler *s, int64_t epoch, int64_t *buf) {
  for (int64_t i = 0; i < ((basic *)s)->n; i++) buf[i] = i;
  return WK_OK;
}
static const dt_sampler_vt seq_vt = {basic_len, seq_fill, NULL};
wk_sampler *dt_sampler_sequential(int64_t n) {
  if (!check_n("sampler_sequential", n)) return NULL;
  basic *b = sm_alloc(sizeof *b, &seq_vt);
  if (b) b->n = b->num_samples = n;
  return b ? &b->base : NULL;
}

static wk_status random_fill(wk_sampler *s, int64_t epoch, int64_t *buf) {
  basic *b = (basic *)s;
  dt_rng r;
  epoch_rng(&r, b->seed, epoch);
  if (b->replacement) {
    for (int64_t i = 0; i < b->num_samples; i++) buf[i] = (int64_t)dt_below(&r, (uint64_t)b->n);
  } else { /* whole permutations, the last one cut (PyTorch's num_samples > n) */
    for (int64_t off = 0; off < b->num_samples; off += b->n) {
      int64_t m = b->num_samples - off < b->n ? b->num_samples - off : b->n;
      int64_t *p = m == b->n ? buf + off : wk_malloc(sizeof(int64_t) * (size_t)b->n);
      if (!p) return wk_error(WK_ERR_NO_MEMORY, "sampler_random: out of memory");
      for (int64_t i = 0; i < b->n; i++) p[i] = i;
      dt_shuffle(p, b->n, &r);
      if (p != buf + off) {
        memcpy(buf + off, p, sizeof(int64_t) * (size_t)m);
        wk_free(p);
      }
    }
  }
  if (b->idx)
    for (int64_t i = 0; i < b->num_samples; i++) buf[i] = b->idx[buf[i]];
  return WK_OK;
}
static void basic_destroy(wk_sampler *s) { wk_free(((basic *)s)->idx); }
static const dt_sampler_vt random_vt = {basic_len, random_fill, basic_destroy};
wk_sampler *dt_sampler_random(int64_t n, bool replacement, int64_t num_samples, uint64_t seed) {
  if (!check_n("sampler_random", n)) return NULL;
  if (num_samples < 0) {
    wk_error(WK_ERR_INVALID_ARG, "sampler_random: num_samples should be a positive integer value, but got num_samples=%lld",
             (long long)num_samples);
    return NULL;
  }
  if (n == 0 && num_samples > 0) {
    wk_error(WK_ERR_INVALID_ARG, "sampler_random: cannot draw %lld samples from an empty dataset", (long long)num_samples);
    return NULL;
  }
  basic *b = sm_alloc(sizeof *b, &random_vt);
  if (!b) return NULL;
  b->n = n;
  b->num_samples = num_samples ? num_samples : n;
  b->replacement = replacement;
  b->seed = seed;
  return &b->base;
}
wk_sampler *dt_sampler_subset_random(const int64_t *indices, int64_t n, uint64_t seed) {
  if (!indices && n) {
    wk_error(WK_ERR_NULL, "sampler_subset_random: argument 'indices' is NULL");
    return NULL;
  }
  if (!check_n("sampler_subset_random", n)) return NULL;
  basic *b = sm_alloc(sizeof *b, &random_vt);
  if (!b) return NULL;
  b->idx = wk_malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  if (!b->idx) {
    wk_free(b);
    wk_error(WK_ERR_NO_MEMORY, "sampler_subset_random: out of memory");
    return NULL;
  }
  if (n) memcpy(b->idx, indices, sizeof(int64_t) * (size_t)n);
  b->n = b->num_samples = n;
  b->seed = seed;
  return &b->base;
}

/* ---- WeightedRandom --------------------------------------------------------------------------------- */
typedef struct {
  wk_sampler base;
  int64_t n, num_samples;
  bool replacement;
  uint64_t seed;
  double *cum; /* cumulative weights, cum[n-1] = total */
  double *w;
} weighted;
static int64_t weighted_len(wk_sampler *s) { return ((weighted *)s)->num_samples; }
typedef struct {
  double key;
  int64_t i;
} keyed;
static int by_key_desc(const void *a, const void *b) {
  double x = ((const keyed *)a)->key, y = ((const keyed *)b)->key;
  if (x != y) return x < y ? 1 : -1;
  int64_t i = ((const keyed *)a)->i, j = ((const keyed *)b)->i;
  return (i > j) - (i < j);
}
static wk_status weighted_fill(wk_sampler *s, int64_t epoch, int64_t *buf) {
  weighted *w = (weighted *)s;
  dt_rng r;
  epoch_rng(&r, w->seed, epoch);
  if (w->replacement) {
    double total = w->cum[w->n - 1];
    for (int64_t k = 0; k < w->num_samples; k++) {
      double u = dt_unit(&r) * total;
      int64_t lo = 0, hi = w->n - 1; /* first i with cum[i] > u, skipping zero weights */
      while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (w->cum[mid] > u) hi = mid;
        else lo = mid + 1;
      }
      while (lo > 0 && w->w[lo] == 0) lo--; /* u rounding onto a zero-weight tail */
      buf[k] = lo;
    }
    return WK_OK;
  }
  /* Without replacement: Efraimidis-Spirakis keys log(u) / w, the largest win. */
  keyed *ks = wk_malloc(sizeof *ks * (size_t)w->n);
  if (!ks) return wk_error(WK_ERR_NO_MEMORY, "sampler_weighted: out of memory");
  for (int64_t i = 0; i < w->n; i++) {
    double u = dt_unit(&r);
    ks[i].key = w->w[i] > 0 ? log(u > 0 ? u : 1e-300) / w->w[i] : -INFINITY;
    ks[i].i = i;
  }
  qsort(ks, (size_t)w->n, sizeof *ks, by_key_desc);
  for (int64_t k = 0; k < w->num_samples; k++) buf[k] = ks[k].i;
  wk_free(ks);
  return WK_OK;
}
static void weighted_destroy(wk_sampler *s) {
  wk_free(((weighted *)s)->cum);
  wk_free(((weighted *)s)->w);
}
static const dt_sampler_vt weighted_vt = {weighted_len, weighted_fill, weighted_destroy};
wk_sampler *dt_sampler_weighted(const double *weights, int64_t n, int64_t num_samples, bool replacement, uint64_t seed) {
  if (!weights) {
    wk_error(WK_ERR_NULL, "sampler_weighted: argument 'weights' is NULL");
    return NULL;
  }
  if (n < 1 || num_samples < 1) {
    wk_error(WK_ERR_INVALID_ARG, "sampler_weighted: needs n >= 1 weights and num_samples >= 1, got %lld and %lld",
             (long long)n, (long long)num_samples);
    return NULL;
  }
  double total = 0;
  int64_t positive = 0;
  for (int64_t i = 0; i < n; i++) {
    if (!(weights[i] >= 0) || !isfinite(weights[i])) {
      wk_error(WK_ERR_INVALID_ARG, "sampler_weighted: weight %lld is %g; weights must be finite and non-negative",
               (long long)i, weights[i]);
      return NULL;
    }
    total += weights[i];
    positive += weights[i] > 0;
  }
  if (!(total > 0)) {
    wk_error(WK_ERR_INVALID_ARG, "sampler_weighted: invalid multinomial distribution (sum of probabilities <= 0)");
    return NULL;
  }
  if (!replacement && num_samples > positive) {
    wk_error(WK_ERR_INVALID_ARG, "sampler_weighted: cannot draw %lld samples without replacement from %lld non-zero weights",
             (long long)num_samples, (long long)positive);
    return NULL;
  }
  weighted *w = sm_alloc(sizeof *w, &weighted_vt);
  if (!w) return NULL;
  w->cum = wk_malloc(sizeof(double) * (size_t)n);
  w->w = wk_malloc(sizeof(double) * (size_t)n);
  if (!w->cum || !w->w) {
    dt_sampler_release(&w->base);
    wk_error(WK_ERR_NO_MEMORY, "sampler_weighted: out of memory");
    return NULL;
  }
  double acc = 0;
  for (int64_t i = 0; i < n; i++) w->cum[i] = (acc += weights[i]), w->w[i] = weights[i];
  w->n = n;
  w->num_samples = num_samples;
  w->replacement = replacement;
  w->seed = seed;
  return &w->base;
}

/* ---- Distributed ----------------------------------------------------------------------------------- */
typedef struct {
  wk_sampler base;
  int64_t n, total, per_rank;
  int world, rank;
  bool shuffle;
  uint64_t seed;
} distributed;
static int64_t dist_len(wk_sampler *s) { return ((distributed *)s)->per_rank; }
static wk_status dist_fill(wk_sampler *s, int64_t epoch, int64_t *buf) {
  distributed *d = (distributed *)s;
  int64_t *all = wk_malloc(sizeof(int64_t) * (size_t)(d->n > d->total ? d->n : d->total) + 8);
  if (!all) return wk_error(WK_ERR_NO_MEMORY, "sampler_distributed: out of memory");
  for (int64_t i = 0; i < d->n; i++) all[i] = i;
  if (d->shuffle) {
    dt_rng r;
    epoch_rng(&r, d->seed, epoch);
    dt_shuffle(all, d->n, &r);
  }
  for (int64_t i = d->n; i < d->total; i++) all[i] = all[(i - d->n) % d->n]; /* padding repeats the start */
  for (int64_t k = 0; k < d->per_rank; k++) buf[k] = all[d->rank + k * d->world];
  wk_free(all);
  return WK_OK;
}
static const dt_sampler_vt dist_vt = {dist_len, dist_fill, NULL};
wk_sampler *dt_sampler_distributed(int64_t n, int world_size, int rank, bool shuffle, uint64_t seed, bool drop_last) {
  if (!check_n("sampler_distributed", n)) return NULL;
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    wk_error(WK_ERR_INVALID_ARG, "sampler_distributed: invalid rank %d, rank should be in the interval [0, %d]", rank,
             world_size - 1);
    return NULL;
  }
  distributed *d = sm_alloc(sizeof *d, &dist_vt);
  if (!d) return NULL;
  d->n = n;
  d->world = world_size;
  d->rank = rank;
  d->shuffle = shuffle;
  d->seed = seed;
  d->per_rank = drop_last ? n / world_size : (n + world_size - 1) / world_size;
  if (n == 0) d->per_rank = 0;
  d->total = d->per_rank * world_size;
  return &d->base;
}
