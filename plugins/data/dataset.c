/* data plugin: the dataset handle, TensorDataset, Subset, ConcatDataset,
 * random_split, mapped (transformed) datasets, the default collate and
 * per-channel statistics. */
#include <math.h>

#include "data.h"

/* ---- The handle ------------------------------------------------------------------------------ */
wk_dataset *dt_dataset_retain(wk_dataset *ds) {
  if (ds) atomic_fetch_add(&ds->rc, 1);
  return ds;
}
void dt_dataset_release(wk_dataset *ds) {
  if (!ds || atomic_fetch_sub(&ds->rc, 1) != 1) return;
  if (ds->iterable ? ds->iter.free != NULL : ds->impl.free != NULL) (ds->iterable ? ds->iter.free : ds->impl.free)(ds->self);
  wk_free(ds);
}
void dt_dataset_free(wk_dataset *ds) { dt_dataset_release(ds); }

wk_dataset *dt_dataset_new(const wk_dataset_impl *impl, void *self) {
  if (!impl) {
    wk_error(WK_ERR_NULL, "dataset_new: argument 'impl' is NULL");
    return NULL;
  }
  if (impl->struct_size < offsetof(wk_dataset_impl, get) + sizeof impl->get || !impl->len || !impl->get) {
    wk_error(WK_ERR_INVALID_ARG, "dataset_new: impl needs struct_size = sizeof(wk_dataset_impl), len and get");
    return NULL;
  }
  wk_dataset *ds = wk_calloc(1, sizeof *ds);
  if (!ds) {
    wk_error(WK_ERR_NO_MEMORY, "dataset_new: out of memory");
    return NULL;
  }
  memcpy(&ds->impl, impl, impl->struct_size < sizeof ds->impl ? impl->struct_size : sizeof ds->impl);
  ds->impl.struct_size = sizeof ds->impl;
  ds->self = self;
  atomic_init(&ds->rc, 1);
  return ds;
}

wk_dataset *dt_dataset_wrap(int64_t (*len)(void *), wk_status (*get)(void *, int64_t, const wk_sample_ctx *, wk_sample *),
                            void (*free_fn)(void *), void *self) {
  wk_dataset_impl impl = {.struct_size = sizeof impl, .len = len, .get = get, .free = free_fn};
  wk_dataset *ds = dt_dataset_new(&impl, self);
  if (!ds && free_fn) free_fn(self);
  return ds;
}

int64_t dt_dataset_len(wk_dataset *ds) { return dt_need_map_style("dataset_len", ds) ? ds->impl.len(ds->self) : -1; }

int64_t dt_dataset_len_api(wk_dataset *ds) {
  if (!ds) {
    wk_error(WK_ERR_NULL, "dataset_len: argument 'ds' is NULL");
    return -1;
  }
  return dt_dataset_len(ds);
}

wk_status dt_dataset_get(wk_dataset *ds, int64_t index, const wk_sample_ctx *ctx, wk_sample *out) {
  memset(out, 0, sizeof *out);
  if (!dt_need_map_style("dataset_get", ds)) return wk_last_error();
  int64_t n = dt_dataset_len(ds);
  if (n < 0) return wk_error(WK_ERR_STATE, "dataset: len() failed");
  if (index < -n || index >= n)
    return wk_error(WK_ERR_INDEX, "dataset: index %lld is out of range for a dataset of %lld samples", (long long)index,
                    (long long)n);
  if (index < 0) index += n;
  wk_sample_ctx c = {.struct_size = sizeof c, .seed = wk_data_sample_seed(0, 0, index), .index = index, .worker_id = -1};
  if (ctx) { /* an older, smaller ctx: the missing tail keeps the defaults */
    memcpy(&c, ctx, ctx->struct_size < sizeof c ? ctx->struct_size : sizeof c);
    c.struct_size = sizeof c;
  }
  wk_status st = ds->impl.get(ds->self, index, &c, out);
  if (st == WK_OK && (out->n < 1 || out->n > WK_SAMPLE_MAX))
    st = wk_error(WK_ERR_STATE, "dataset: get(%lld) returned %d tensors (1..%d allowed)", (long long)index, out->n,
                  WK_SAMPLE_MAX);
  for (int i = 0; st == WK_OK && i < out->n; i++)
    if (!out->t[i]) st = wk_error(WK_ERR_STATE, "dataset: get(%lld) returned a NULL tensor in field %d", (long long)index, i);
  if (st != WK_OK) {
    if (wk_last_error() == WK_OK) wk_error(st, "dataset: get(%lld) failed without a message", (long long)index);
    if (out->n < 0 || out->n > WK_SAMPLE_MAX) out->n = WK_SAMPLE_MAX;
    for (int i = 0; i < out->n; i++) wk_release(out->t[i]);
    memset(out, 0, sizeof *out);
    return wk_last_error();
  }
  return WK_OK;
}

wk_status dt_dataset_get_api(wk_dataset *ds, int64_t index, const wk_sample_ctx *ctx, wk_sample *out) {
  if (!ds || !out) return wk_error(WK_ERR_NULL, "dataset_get: argument '%s' is NULL", !ds ? "ds" : "out");
  return dt_dataset_get(ds, index, ctx, out);
}

/* ---- TensorDataset ------------------------------------------------------------------------- */
typedef struct {
  int n;
  int64_t len;
  wk_tensor *t[WK_SAMPLE_MAX];
} tds;
static int64_t tds_len(void *p) { return ((tds *)p)->len; }
static wk_status tds_get(void *p, int64_t i, const wk_sample_ctx *ctx, wk_sample *out) {
  tds *d = p;
  for (int k = 0; k < d->n; k++) {
    wk_tensor *row = wk_select(d->t[k], 0, i);
    wk_tensor *c = row ? wk_contiguous(row) : NULL;
    wk_release(row);
    if (!c) return wk_last_error();
    out->t[out->n++] = c;
  }
  return WK_OK;
}
/* The batch in one gather per field: rows copied straight from a contiguous
 * cpu tensor, index_select for any other. */
static wk_status tds_get_batch(void *p, const int64_t *idx, int64_t n, wk_sample *out) {
  tds *d = p;
  for (int k = 0; k < d->n; k++) {
    wk_tensor *t = d->t[k], *o;
    if (wk_tensor_device(t).type == WK_DEVICE_CPU && wk_tensor_is_contiguous(t)) {
      int nd = wk_tensor_dim(t);
      int64_t sizes[WK_MAX_DIMS];
      memcpy(sizes, wk_tensor_sizes(t), sizeof(int64_t) * (size_t)nd);
      sizes[0] = n;
      o = wk_empty(sizes, nd, (wk_options){.dtype = wk_tensor_dtype(t)});
      if (!o) return wk_last_error();
      size_t row = (size_t)(d->len ? wk_tensor_numel(t) / d->len : 0) * wk_dtype_size(wk_tensor_dtype(t));
      const char *src = wk_tensor_data(t);
      char *dst = wk_tensor_data(o);
      for (int64_t i = 0; i < n && row; i++) memcpy(dst + (size_t)i * row, src + (size_t)idx[i] * row, row);
    } else {
      wk_tensor *it = wk_tensor_from_data(idx, WK_I64, WK_SHAPE(n));
      wk_tensor *dev = it ? wk_to_device(it, wk_tensor_device(t)) : NULL;
      wk_tensor *sel = dev ? wk_index_select(t, 0, dev) : NULL;
      o = sel ? wk_detach(sel) : NULL;
      wk_release(sel);
      wk_release(dev);
      wk_release(it);
      if (!o) return wk_last_error();
    }
    out->t[out->n++] = o;
  }
  return WK_OK;
}
static void tds_free(void *p) {
  tds *d = p;
  for (int k = 0; k < d->n; k++) wk_unref(d->t[k]); /* balances the retain of creation */
  wk_free(d);
}
wk_dataset *dt_tensor_dataset(wk_tensor *const *tensors, int n) {
  if (!tensors && n) {
    wk_error(WK_ERR_NULL, "tensor_dataset: argument 'tensors' is NULL");
    return NULL;
  }
  if (n < 1 || n > WK_SAMPLE_MAX) {
    wk_error(WK_ERR_INVALID_ARG, "tensor_dataset: needs 1 to %d tensors, got %d", WK_SAMPLE_MAX, n);
    return NULL;
  }
  for (int k = 0; k < n; k++) {
    if (!tensors[k]) {
      wk_error(WK_ERR_NULL, "tensor_dataset: tensor %d is NULL", k);
      return NULL;
    }
    if (wk_tensor_dim(tensors[k]) < 1 || wk_tensor_size(tensors[k], 0) != wk_tensor_size(tensors[0], 0)) {
      char a[128], b[128];
      wk_error(WK_ERR_SHAPE, "tensor_dataset: size mismatch between tensors: tensor 0 is %s, tensor %d is %s",
               wk_sizes_str(wk_tensor_sizes(tensors[0]), wk_tensor_dim(tensors[0]), a, sizeof a), k,
               wk_sizes_str(wk_tensor_sizes(tensors[k]), wk_tensor_dim(tensors[k]), b, sizeof b));
      return NULL;
    }
  }
  tds *d = wk_calloc(1, sizeof *d);
  if (!d) {
    wk_error(WK_ERR_NO_MEMORY, "tensor_dataset: out of memory");
    return NULL;
  }
  d->n = n;
  d->len = wk_tensor_size(tensors[0], 0);
  for (int k = 0; k < n; k++) d->t[k] = wk_retain(tensors[k]);
  wk_dataset_impl impl = {.struct_size = sizeof impl, .len = tds_len, .get = tds_get, .free = tds_free,
                          .get_batch = tds_get_batch};
  wk_dataset *ds = dt_dataset_new(&impl, d);
  if (!ds) tds_free(d);
  return ds;
}

/* ---- Subset ---------------------------------------------------------------------------------- */
typedef struct {
  wk_dataset *parent;
  int64_t n;
  int64_t idx[];
} subset;
static int64_t subset_len(void *p) { return ((subset *)p)->n; }
static wk_status subset_get(void *p, int64_t i, const wk_sample_ctx *ctx, wk_sample *out) {
  subset *s = p;
  return dt_dataset_get(s->parent, s->idx[i], ctx, out);
}
/* Only when the parent gathers batches: the batch's parent indices, then the parent's gather. */
static wk_status subset_get_batch(void *p, const int64_t *idx, int64_t n, wk_sample *out) {
  subset *s = p;
  int64_t *pi = wk_malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
  if (!pi) return wk_error(WK_ERR_NO_MEMORY, "subset: out of memory for a batch of %lld indices", (long long)n);
  for (int64_t i = 0; i < n; i++) pi[i] = s->idx[idx[i]];
  wk_status st = s->parent->impl.get_batch(s->parent->self, pi, n, out);
  wk_free(pi);
  return st;
}
static void subset_free(void *p) {
  subset *s = p;
  dt_dataset_release(s->parent);
  wk_free(s);
}
wk_dataset *dt_subset(wk_dataset *ds, const int64_t *indices, int64_t n) {
  if (!ds || (!indices && n)) {
    wk_error(WK_ERR_NULL, "subset: argument '%s' is NULL", !ds ? "ds" : "indices");
    return NULL;
  }
  if (!dt_need_map_style("subset", ds)) return NULL;
  int64_t len = dt_dataset_len(ds);
  if (n < 0) {
    wk_error(WK_ERR_INVALID_ARG, "subset: negative number of indices %lld", (long long)n);
    return NULL;
  }
  for (int64_t i = 0; i < n; i++)
    if (indices[i] < -len || indices[i] >= len) {
      wk_error(WK_ERR_INDEX, "subset: index %lld (position %lld) is out of range for a dataset of %lld samples",
               (long long)indices[i], (long long)i, (long long)len);
      return NULL;
    }
  subset *s = wk_malloc(sizeof *s + sizeof(int64_t) * (size_t)n);
  if (!s) {
    wk_error(WK_ERR_NO_MEMORY, "subset: out of memory");
    return NULL;
  }
  s->parent = dt_dataset_retain(ds);
  s->n = n;
  for (int64_t i = 0; i < n; i++) s->idx[i] = indices[i] < 0 ? indices[i] + len : indices[i];
  wk_dataset_impl impl = {.struct_size = sizeof impl, .len = subset_len, .get = subset_get, .free = subset_free,
                          .get_batch = ds->impl.get_batch ? subset_get_batch : NULL};
  wk_dataset *out = dt_dataset_new(&impl, s);
  if (!out) subset_free(s);
  return out;
}

wk_status dt_random_split(wk_dataset *ds, const int64_t *lengths, int n, uint64_t seed, wk_dataset **out) {
  if (!ds || !lengths || !out)
    return wk_error(WK_ERR_NULL, "random_split: argument '%s' is NULL", !ds ? "ds" : !lengths ? "lengths" : "out");
  for (int i = 0; i < n; i++) out[i] = NULL;
  if (!dt_need_map_style("random_split", ds)) return wk_last_error();
  int64_t len = dt_dataset_len(ds), sum = 0;
  for (int i = 0; i < n; i++) {
    if (lengths[i] < 0) return wk_error(WK_ERR_INVALID_ARG, "random_split: length %d is negative (%lld)", i, (long long)lengths[i]);
    sum += lengths[i];
  }
  if (n < 1 || sum != len)
    return wk_error(WK_ERR_INVALID_ARG,
                    "random_split: sum of input lengths (%lld) does not equal the length of the input dataset (%lld)",
                    (long long)sum, (long long)len);
  int64_t *perm = wk_malloc(sizeof(int64_t) * (size_t)(len ? len : 1));
  if (!perm) return wk_error(WK_ERR_NO_MEMORY, "random_split: out of memory");
  for (int64_t i = 0; i < len; i++) perm[i] = i;
  dt_rng r;
  dt_rng_init(&r, wk_data_mix(seed));
  dt_shuffle(perm, len, &r);
  int64_t off = 0;
  for (int i = 0; i < n; i++) {
    out[i] = dt_subset(ds, perm + off, lengths[i]);
    off += lengths[i];
    if (!out[i]) {
      for (int j = 0; j < i; j++) dt_dataset_release(out[j]), out[j] = NULL;
      wk_free(perm);
      return wk_last_error();
    }
  }
  wk_free(perm);
  return WK_OK;
}

/* ---- ConcatDataset --------------------------------------------------------------------------- */
typedef struct {
  int n;
  wk_dataset **ds;
  int64_t *cum; /* cum[i] = samples before dataset i; cum[n] = total */
} concat;
static int64_t concat_len(void *p) { return ((concat *)p)->cum[((concat *)p)->n]; }
static wk_status concat_get(void *p, int64_t i, const wk_sample_ctx *ctx, wk_sample *out) {
  concat *c = p;
  int lo = 0, hi = c->n - 1;
  while (lo < hi) { /* last k with cum[k] <= i */
    int mid = (lo + hi + 1) / 2;
    if (c->cum[mid] <= i) lo = mid;
    else hi = mid - 1;
  }
  return dt_dataset_get(c->ds[lo], i - c->cum[lo], ctx, out);
}
static void concat_free(void *p) {
  concat *c = p;
  for (int i = 0; i < c->n; i++) dt_dataset_release(c->ds[i]);
  wk_free(c->ds);
  wk_free(c->cum);
  wk_free(c);
}
wk_dataset *dt_concat(wk_dataset *const *dss, int n) {
  if (!dss || n < 1) {
    wk_error(dss ? WK_ERR_INVALID_ARG : WK_ERR_NULL, "concat_dataset: needs at least one dataset");
    return NULL;
  }
  for (int i = 0; i < n; i++)
    if (!dss[i]) {
      wk_error(WK_ERR_NULL, "concat_dataset: dataset %d is NULL", i);
      return NULL;
    } else if (!dt_need_map_style("concat_dataset", dss[i])) {
      return NULL;
    }
  concat *c = wk_calloc(1, sizeof *c);
  if (c) c->ds = wk_calloc((size_t)n, sizeof *c->ds), c->cum = wk_calloc((size_t)n + 1, sizeof *c->cum);
  if (!c || !c->ds || !c->cum) {
    if (c) wk_free(c->ds), wk_free(c->cum);
    wk_free(c);
    wk_error(WK_ERR_NO_MEMORY, "concat_dataset: out of memory");
    return NULL;
  }
  c->n = n;
  for (int i = 0; i < n; i++) {
    c->ds[i] = dt_dataset_retain(dss[i]);
    c->cum[i + 1] = c->cum[i] + dt_dataset_len(dss[i]);
  }
  return dt_dataset_wrap(concat_len, concat_get, concat_free, c);
}

/* ---- Mapped dataset (a transform on one field) ---------------------------------------------- */
typedef struct {
  wk_dataset *parent;
  wk_transform *tf;
  int field;
} mapped;
static int64_t mapped_len(void *p) { return dt_dataset_len(((mapped *)p)->parent); }
static wk_status mapped_get(void *p, int64_t i, const wk_sample_ctx *ctx, wk_sample *out) {
  mapped *m = p;
  wk_status st = dt_dataset_get(m->parent, i, ctx, out);
  if (st != WK_OK) return st;
  if (m->field >= out->n)
    return wk_error(WK_ERR_INDEX, "dataset_map: sample %lld has %d fields, the transform applies to field %d",
                    (long long)i, out->n, m->field);
  wk_tensor *y = dt_transform_apply(m->tf, out->t[m->field], ctx->seed);
  if (!y) return wk_last_error();
  wk_release(out->t[m->field]);
  out->t[m->field] = y;
  return WK_OK;
}
static void mapped_free(void *p) {
  mapped *m = p;
  dt_dataset_release(m->parent);
  dt_transform_release(m->tf);
  wk_free(m);
}
wk_dataset *dt_map(wk_dataset *ds, int field, wk_transform *tf) {
  if (!ds || !tf) {
    wk_error(WK_ERR_NULL, "dataset_map: argument '%s' is NULL", !ds ? "ds" : "tf");
    return NULL;
  }
  if (field < 0 || field >= WK_SAMPLE_MAX) {
    wk_error(WK_ERR_INDEX, "dataset_map: field %d is out of range [0, %d)", field, WK_SAMPLE_MAX);
    return NULL;
  }
  if (ds->iterable) return dt_map_iterable(ds, field, tf);
  mapped *m = wk_malloc(sizeof *m);
  if (!m) {
    wk_error(WK_ERR_NO_MEMORY, "dataset_map: out of memory");
    return NULL;
  }
  m->parent = dt_dataset_retain(ds);
  m->tf = dt_transform_retain(tf);
  m->field = field;
  return dt_dataset_wrap(mapped_len, mapped_get, mapped_free, m);
}

/* ---- Default collate ------------------------------------------------------------------------- */
wk_status dt_collate_stack(const wk_sample *samples, int64_t n, wk_sample *out) {
  memset(out, 0, sizeof *out);
  if (n < 1) return wk_error(WK_ERR_INVALID_ARG, "collate: no samples");
  int nf = samples[0].n;
  for (int64_t s = 1; s < n; s++)
    if (samples[s].n != nf)
      return wk_error(WK_ERR_SHAPE, "collate: sample %lld of the batch has %d fields, sample 0 has %d", (long long)s,
                      samples[s].n, nf);
  for (int f = 0; f < nf; f++) {
    wk_tensor *t0 = samples[0].t[f];
    int nd = wk_tensor_dim(t0);
    wk_dtype dt = wk_tensor_dtype(t0);
    int64_t sizes[WK_MAX_DIMS + 1];
    if (nd >= WK_MAX_DIMS) {
      wk_sample_clear(out);
      return wk_error(WK_ERR_SHAPE, "collate: field %d has %d dims; stacking adds one (max %d)", f, nd, WK_MAX_DIMS);
    }
    sizes[0] = n;
    memcpy(sizes + 1, wk_tensor_sizes(t0), sizeof(int64_t) * (size_t)nd);
    for (int64_t s = 1; s < n; s++) {
      wk_tensor *t = samples[s].t[f];
      if (wk_tensor_dtype(t) != dt || wk_tensor_dim(t) != nd ||
          memcmp(wk_tensor_sizes(t), sizes + 1, sizeof(int64_t) * (size_t)nd) != 0) {
        char a[160], b[160];
        wk_sample_clear(out);
        return wk_error(WK_ERR_SHAPE,
                        "collate: stack expects each tensor to be equal size and dtype, but field %d of sample 0 is %s %s "
                        "and of sample %lld is %s %s",
                        f, wk_dtype_name(dt), wk_sizes_str(sizes + 1, nd, a, sizeof a), (long long)s,
                        wk_dtype_name(wk_tensor_dtype(t)), wk_sizes_str(wk_tensor_sizes(t), wk_tensor_dim(t), b, sizeof b));
      }
    }
    wk_tensor *o = wk_empty(sizes, nd + 1, (wk_options){.dtype = dt});
    if (!o) {
      wk_sample_clear(out);
      return wk_last_error();
    }
    out->t[out->n++] = o;
    size_t row = (size_t)wk_tensor_numel(t0) * wk_dtype_size(dt);
    char *dst = wk_tensor_data(o);
    for (int64_t s = 0; s < n; s++) {
      wk_tensor *t = samples[s].t[f];
      if (wk_tensor_device(t).type != WK_DEVICE_CPU) {
        wk_sample_clear(out);
        return wk_error(WK_ERR_DEVICE, "collate: field %d of sample %lld is not on the cpu", f, (long long)s);
      }
      wk_tensor *c = wk_tensor_is_contiguous(t) ? wk_retain(t) : wk_contiguous(t);
      if (!c) {
        wk_sample_clear(out);
        return wk_last_error();
      }
      if (row) memcpy(dst + row * (size_t)s, wk_tensor_data(c), row);
      wk_release(c);
    }
  }
  return WK_OK;
}

/* ---- Per-channel statistics ------------------------------------------------------------------ */
wk_status dt_channel_stats(wk_dataset *ds, int field, double *mean, double *std, int cap) {
  if (!ds || !mean || !std) return wk_error(WK_ERR_NULL, "channel_stats: argument '%s' is NULL", !ds ? "ds" : !mean ? "mean" : "std");
  if (!dt_need_map_style("channel_stats", ds)) return wk_last_error();
  int64_t n = dt_dataset_len(ds);
  double *sum = NULL, *sq = NULL;
  int64_t count = 0;
  int C = -1;
  wk_status st = WK_OK;
  for (int64_t i = 0; i < n && st == WK_OK; i++) {
    wk_sample s;
    st = dt_dataset_get(ds, i, NULL, &s);
    if (st != WK_OK) break;
    wk_tensor *x = field < s.n ? s.t[field] : NULL;
    if (!x || wk_tensor_dim(x) < 1) {
      st = wk_error(WK_ERR_SHAPE, "channel_stats: sample %lld has no [C, ...] tensor in field %d", (long long)i, field);
    } else if (C < 0) {
      C = (int)wk_tensor_size(x, 0);
      if (C > cap) st = wk_error(WK_ERR_INVALID_ARG, "channel_stats: %d channels but room for %d", C, cap);
      sum = wk_calloc((size_t)C + 1, sizeof *sum);
      sq = wk_calloc((size_t)C + 1, sizeof *sq);
      if (st == WK_OK && (!sum || !sq)) st = wk_error(WK_ERR_NO_MEMORY, "channel_stats: out of memory");
    } else if (wk_tensor_size(x, 0) != C) {
      st = wk_error(WK_ERR_SHAPE, "channel_stats: sample %lld has %lld channels, sample 0 has %d", (long long)i,
                    (long long)wk_tensor_size(x, 0), C);
    }
    if (st == WK_OK) {
      int64_t m = wk_tensor_numel(x), per = C ? m / C : 0;
      double *v = wk_malloc(sizeof(double) * (size_t)(m ? m : 1));
      if (!v) st = wk_error(WK_ERR_NO_MEMORY, "channel_stats: out of memory");
      else st = wk_tensor_to_f64(x, v, m);
      double scale = wk_tensor_dtype(x) == WK_U8 ? 1.0 / 255.0 : 1.0;
      for (int c = 0; st == WK_OK && c < C; c++)
        for (int64_t k = 0; k < per; k++) {
          double y = v[c * per + k] * scale;
          sum[c] += y;
          sq[c] += y * y;
        }
      if (st == WK_OK) count += per;
      wk_free(v);
    }
    wk_sample_clear(&s);
  }
  if (st == WK_OK && (C < 0 || count == 0)) st = wk_error(WK_ERR_INVALID_ARG, "channel_stats: the dataset is empty");
  for (int c = 0; st == WK_OK && c < C; c++) {
    mean[c] = sum[c] / (double)count;
    double var = sq[c] / (double)count - mean[c] * mean[c];
    std[c] = sqrt(var > 0 ? var : 0);
  }
  wk_free(sum);
  wk_free(sq);
  return st;
}
