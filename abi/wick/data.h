/* Wick ABI: the data service: datasets (map-style and iterable-style,
 * user-implemented in C, TensorDataset, Subset, ConcatDataset, random_split,
 * MNIST/Fashion-MNIST IDX, CIFAR-10/100, CSV and ImageFolder readers, PNG/JPEG
 * decoding), per-sample transforms with their own seeded streams, samplers,
 * and a DataLoader with worker threads. The data plugin
 * provides the service; the inline wrappers below fetch it once and call it,
 * so user code never links the plugin.
 *
 * Handles (wk_dataset, wk_transform, wk_sampler, wk_dataloader) are opaque and
 * reference counted inside the plugin: objects that use another (a Subset its
 * parent, a loader its dataset) hold their own reference, so the caller may
 * free its handle as soon as it no longer calls it. Every *_free(NULL) does
 * nothing.
 *
 * Randomness is reproducible and independent of threads: sample i of epoch e
 * of a loader seeded s is produced with the stream wk_data_sample_seed(s, e, i);
 * a transform draws from a stream keyed by that seed and its own seed. */
#ifndef WICK_DATA_H
#define WICK_DATA_H

#include <stddef.h>
#include <string.h>
#include <wick/wick.h>

#define WK_DATA_SERVICE "data"
/* Version 2 appended ImageFolder and image decoding, Resize,
 * RandomResizedCrop, ColorJitter, iterable datasets, pad_sequence and the
 * loader options persistent_workers, pin_memory, timeout and worker_init_fn.
 * Version 3 appended wk_dataset_impl.get_batch (whole batches gathered by the
 * dataset; TensorDataset and Subset have it).
 * The wrappers below accept any version and check struct_size per call. */
#define WK_DATA_SERVICE_VERSION 3u

typedef struct wk_dataset wk_dataset;       /* map-style dataset */
typedef struct wk_transform wk_transform;   /* per-sample tensor transform */
typedef struct wk_sampler wk_sampler;       /* yields the indices of an epoch */
typedef struct wk_dataloader wk_dataloader; /* batches of a dataset */

/* ---- Samples ----------------------------------------------------------------------------- */
#define WK_SAMPLE_MAX 8
/* A sample or a batch: n tensors (field 0 the image, field 1 the label for
 * the built-in readers). The holder owns one reference to each t[i]. */
typedef struct wk_sample {
  int n;
  wk_tensor *t[WK_SAMPLE_MAX];
} wk_sample;
/* Releases the sample's tensors and sets n to 0. NULL does nothing. */
static inline void wk_sample_clear(wk_sample *s) {
  if (!s) return;
  for (int i = 0; i < s->n && i < WK_SAMPLE_MAX; i++) wk_release(s->t[i]);
  memset(s, 0, sizeof *s);
}

/* What a get() call is asked for: the random stream of this sample. */
typedef struct wk_sample_ctx {
  size_t struct_size;  /* sizeof(wk_sample_ctx) */
  uint64_t seed;       /* the sample's stream: wk_data_sample_seed(base, epoch, index) */
  int64_t epoch;
  int64_t index;       /* the index asked for (before any Subset mapping) */
  int worker_id;       /* -1 in the caller's thread */
} wk_sample_ctx;

/* Mixes (base seed, epoch, index) into a sample's seed (splitmix64 steps). */
static inline uint64_t wk_data_mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
static inline uint64_t wk_data_sample_seed(uint64_t base, int64_t epoch, int64_t index) {
  return wk_data_mix(wk_data_mix(wk_data_mix(base) ^ (uint64_t)epoch) ^ (uint64_t)index);
}

/* A map-style dataset written in C. len and get are required; get must be
 * safe to call from several threads at once when a loader has workers. get
 * fills out->t[0..n) with new references (n <= WK_SAMPLE_MAX) and returns
 * WK_OK, or records an error with wk_error() and returns its status (out is
 * then cleared by the caller). free (optional) is called with `self` when the
 * last reference to the dataset goes.
 * get_batch (optional; version 3, a data plugin of version 2 calls get per
 * sample): the whole batch of the n >= 1
 * samples indices[0..n) (each in [0, len)) at once, each field stacked along
 * a new dim 0, exactly what the default collate of n get() calls would give
 * (PyTorch's __getitems__). For datasets whose samples do not draw from their
 * random stream, such as in-memory tensors: one gather per field instead of n
 * samples and a stack. A DataLoader without a collate function calls it; the
 * same thread-safety and error rules as get. */
typedef struct wk_dataset_impl {
  size_t struct_size; /* sizeof(wk_dataset_impl) */
  int64_t (*len)(void *self);
  wk_status (*get)(void *self, int64_t index, const wk_sample_ctx *ctx, wk_sample *out);
  void (*free)(void *self);
  wk_status (*get_batch)(void *self, const int64_t *indices, int64_t n, wk_sample *out);
} wk_dataset_impl;

/* ---- Iterable-style datasets ----------------------------------------------------------------- */
/* Who is reading an iterable dataset: PyTorch's get_worker_info(). */
typedef struct wk_worker_info {
  size_t struct_size; /* sizeof(wk_worker_info) */
  int worker_id;      /* 0 .. num_workers-1; 0 in the caller's thread (num_workers 0) */
  int num_workers;    /* the loader's num_workers; 1 in the caller's thread */
  uint64_t seed;      /* this stream's seed: wk_data_sample_seed(loader seed, epoch, worker_id) */
  int64_t epoch;
} wk_worker_info;

/* An iterable-style dataset written in C (a stream of samples, no length,
 * no random access). A DataLoader opens one stream per worker and epoch: use
 * info->worker_id and info->num_workers to give each worker its own share
 * (else every worker yields every sample, as in PyTorch). open and next are
 * required; open may be called from several threads at once, each stream is
 * used by one thread at a time.
 * open: sets *stream (may be NULL) and returns WK_OK, or records an error.
 * next: fills out with the next sample (new references, 1..WK_SAMPLE_MAX
 *   tensors) and returns WK_OK; at the end of the stream returns WK_OK with
 *   out->n == 0; on failure records an error and returns its status.
 * close (optional): ends a stream opened by open, also when abandoned early.
 * free (optional): called with `self` when the last reference goes. */
typedef struct wk_iterable_impl {
  size_t struct_size; /* sizeof(wk_iterable_impl) */
  wk_status (*open)(void *self, const wk_worker_info *info, void **stream);
  wk_status (*next)(void *self, void *stream, wk_sample *out);
  void (*close)(void *self, void *stream);
  void (*free)(void *self);
} wk_iterable_impl;

/* ---- Loader options ------------------------------------------------------------------------ */
/* Zero fields mean the defaults. Pass NULL for all defaults, or
 * WK_LOADER_OPTS(.batch_size = 64, .shuffle = true), which sets struct_size. */
typedef struct wk_loader_opts {
  size_t struct_size;
  int64_t batch_size;   /* 0: 1 */
  bool shuffle;         /* a RandomSampler seeded with `seed` (excludes `sampler`) */
  bool drop_last;       /* drop the last incomplete batch */
  int num_workers;      /* worker threads; 0 loads in the caller's thread */
  int prefetch_factor;  /* batches in flight per worker; 0: 2 */
  uint64_t seed;        /* base seed of shuffling and of every sample's stream */
  wk_sampler *sampler;  /* borrowed (the loader keeps a reference), or NULL */
  /* Batches a list of samples (borrowed) into out (new references). NULL:
   * stack field k of every sample along a new dim 0 (same shapes/dtypes). */
  wk_status (*collate)(void *user, const wk_sample *samples, int64_t n, wk_sample *out);
  void *collate_user;
  /* version 2 */
  bool persistent_workers; /* keep the worker threads (and what worker_init_fn set up) across epochs;
                              needs num_workers > 0 */
  /* Batches in page-locked host memory (wk_pin_memory, done in the workers),
   * which a device plugin copies from asynchronously (wk_to_non_blocking).
   * When no loaded device plugin offers pinned memory, or its device is
   * unusable (no driver), batches stay in pageable memory, as PyTorch's
   * pin_memory without CUDA; running out of pinned memory fails the batch. */
  bool pin_memory;
  /* Seconds to wait for a batch from the workers (0: forever). A batch not
   * ready in time is a WK_ERR_STATE naming the timeout, returned at once; the
   * iteration is over, and its workers are joined by the next call (or free)
   * once a stuck get() returns. Ignored with num_workers 0, as in PyTorch. */
  double timeout;
  /* Called once in each worker thread when it starts (each epoch, or once
   * with persistent_workers), before it loads anything. The workers' start
   * waits for every call, so an error fails the next() that starts them,
   * naming the worker (and each later epoch tries again). Not called with
   * num_workers 0. */
  wk_status (*worker_init_fn)(int worker_id, void *user);
  void *worker_init_user;
} wk_loader_opts;
#define WK_LOADER_OPTS(...) (&(const wk_loader_opts){.struct_size = sizeof(wk_loader_opts), __VA_ARGS__})

/* ---- The service interface (append-only; readers honour struct_size) --------------------- */
typedef struct wk_data_iface {
  size_t struct_size;
  /* datasets */
  wk_dataset *(*dataset_new)(const wk_dataset_impl *impl, void *self);
  void (*dataset_free)(wk_dataset *ds);
  int64_t (*dataset_len)(wk_dataset *ds);
  wk_status (*dataset_get)(wk_dataset *ds, int64_t index, const wk_sample_ctx *ctx, wk_sample *out);
  wk_dataset *(*tensor_dataset)(wk_tensor *const *tensors, int n);
  wk_dataset *(*subset)(wk_dataset *ds, const int64_t *indices, int64_t n);
  wk_dataset *(*concat)(wk_dataset *const *dss, int n);
  wk_status (*random_split)(wk_dataset *ds, const int64_t *lengths, int n, uint64_t seed, wk_dataset **out);
  wk_dataset *(*map)(wk_dataset *ds, int field, wk_transform *tf);
  wk_dataset *(*mnist)(const char *images_path, const char *labels_path);
  wk_dataset *(*cifar)(const char *const *paths, int npaths, int classes);
  wk_status (*channel_stats)(wk_dataset *ds, int field, double *mean, double *std, int cap);
  wk_dataset *(*csv)(const char *path, bool header, int label_col);
  /* transforms */
  void (*transform_free)(wk_transform *tf);
  wk_tensor *(*transform_apply)(wk_transform *tf, wk_tensor *x, uint64_t seed);
  wk_transform *(*to_tensor)(bool hwc);
  wk_transform *(*normalize)(const double *mean, const double *std, int n);
  wk_transform *(*random_crop)(int64_t h, int64_t w, int64_t padding, double fill, uint64_t seed);
  wk_transform *(*random_hflip)(double p, uint64_t seed);
  wk_transform *(*center_crop)(int64_t h, int64_t w);
  wk_transform *(*compose)(wk_transform *const *tfs, int n);
  wk_transform *(*lambda)(wk_tensor *(*fn)(void *user, wk_tensor *x, uint64_t seed), void *user);
  /* samplers */
  void (*sampler_free)(wk_sampler *s);
  int64_t (*sampler_len)(wk_sampler *s);
  void (*sampler_set_epoch)(wk_sampler *s, int64_t epoch);
  int64_t (*sampler_indices)(wk_sampler *s, int64_t *buf, int64_t cap);
  wk_sampler *(*sampler_sequential)(int64_t n);
  wk_sampler *(*sampler_random)(int64_t n, bool replacement, int64_t num_samples, uint64_t seed);
  wk_sampler *(*sampler_subset_random)(const int64_t *indices, int64_t n, uint64_t seed);
  wk_sampler *(*sampler_weighted)(const double *weights, int64_t n, int64_t num_samples, bool replacement,
                                  uint64_t seed);
  wk_sampler *(*sampler_distributed)(int64_t n, int world_size, int rank, bool shuffle, uint64_t seed,
                                     bool drop_last);
  /* loader */
  wk_dataloader *(*dataloader_new)(wk_dataset *ds, const wk_loader_opts *opts);
  void (*dataloader_free)(wk_dataloader *dl);
  int64_t (*dataloader_len)(wk_dataloader *dl);
  wk_status (*dataloader_set_epoch)(wk_dataloader *dl, int64_t epoch);
  wk_status (*dataloader_next)(wk_dataloader *dl, wk_sample *batch);
  /* version 2 */
  wk_dataset *(*iterable_new)(const wk_iterable_impl *impl, void *self);
  wk_tensor *(*image_decode)(const void *data, size_t n, int channels);
  wk_tensor *(*image_read)(const char *path, int channels);
  wk_dataset *(*image_folder)(const char *root, int channels);
  const char *(*image_folder_class)(wk_dataset *ds, int64_t k);
  wk_transform *(*resize)(int64_t h, int64_t w);
  wk_transform *(*random_resized_crop)(int64_t h, int64_t w, const double *scale, const double *ratio, uint64_t seed);
  wk_transform *(*color_jitter)(const double *brightness, const double *contrast, uint64_t seed);
  wk_status (*collate_default)(const wk_sample *samples, int64_t n, wk_sample *out);
  wk_tensor *(*pad_sequence)(wk_tensor *const *seqs, int64_t n, bool batch_first, double padding_value);
} wk_data_iface;
/* Version 1 layouts stay where they were; version 2 only appended. */
WK_STATIC_ASSERT(offsetof(wk_data_iface, iterable_new) == 296, "wk_data_iface version 1 is frozen");
WK_STATIC_ASSERT(offsetof(wk_loader_opts, persistent_workers) == 64, "wk_loader_opts version 1 is frozen");
WK_STATIC_ASSERT(sizeof(wk_data_iface) == 376, "wk_data_iface is frozen at version 2");
WK_STATIC_ASSERT(sizeof(wk_loader_opts) == 96, "wk_loader_opts is frozen at version 2");
WK_STATIC_ASSERT(sizeof(wk_worker_info) == 32, "wk_worker_info is frozen at version 2");
WK_STATIC_ASSERT(sizeof(wk_iterable_impl) == 40, "wk_iterable_impl is frozen at version 2");
WK_STATIC_ASSERT(sizeof(wk_sample_ctx) == 40, "wk_sample_ctx is frozen at version 1");
WK_STATIC_ASSERT(offsetof(wk_dataset_impl, get_batch) == 32, "wk_dataset_impl version 1 is frozen");
WK_STATIC_ASSERT(sizeof(wk_dataset_impl) == 40, "wk_dataset_impl is frozen at version 3");

/* The data service, fetched once per translation unit; NULL with the error of
 * wk_service_get (naming the service and the plugin search path). */
static inline const wk_data_iface *wk__data(size_t need) {
  static const wk_data_iface *d_cache; /* filled on first use, maybe by several threads at once */
  const wk_data_iface *d = __atomic_load_n(&d_cache, __ATOMIC_ACQUIRE);
  if (!d) __atomic_store_n(&d_cache, d = (const wk_data_iface *)wk_service_get(WK_DATA_SERVICE, 1u), __ATOMIC_RELEASE); /* struct_size decides per call */
  if (d && d->struct_size < need) {
    wk_error(WK_ERR_UNSUPPORTED, "the data service is too old (interface of %zu bytes, %zu needed)",
             d->struct_size, need);
    return NULL;
  }
  return d;
}
#define WK__DATA(field) wk__data(offsetof(wk_data_iface, field) + sizeof(void (*)(void)))
/* Every call but the *_free ones starts a new error scope (error.h). */
#define WK__DATA_CALL(field, fail, ...)               \
  do {                                                \
    wk_error_new_call();                              \
    const wk_data_iface *d_ = WK__DATA(field);        \
    return d_ ? d_->field(__VA_ARGS__) : (fail);      \
  } while (0)

/* ---- Datasets ------------------------------------------------------------------------------ */
/* A dataset calling impl (copied) with `self` (owned by the dataset when
 * impl->free is set). Returns a new handle; free it with wk_dataset_free. */
static inline wk_dataset *wk_dataset_new(const wk_dataset_impl *impl, void *self) { WK__DATA_CALL(dataset_new, NULL, impl, self); }
/* Drops the caller's reference. */
static inline void wk_dataset_free(wk_dataset *ds) {
  const wk_data_iface *d = ds ? WK__DATA(dataset_free) : NULL;
  if (d) d->dataset_free(ds);
}
/* Number of samples; -1 with an error recorded on failure. Borrows ds. */
static inline int64_t wk_dataset_len(wk_dataset *ds) { WK__DATA_CALL(dataset_len, -1, ds); }
/* Sample `index` (negative counts from the end) into *out (new references;
 * clear it with wk_sample_clear). ctx NULL: epoch 0, seed of (0, 0, index).
 * Errors name the index; *out is then empty. */
static inline wk_status wk_dataset_get(wk_dataset *ds, int64_t index, const wk_sample_ctx *ctx, wk_sample *out) {
  WK__DATA_CALL(dataset_get, wk_last_error(), ds, index, ctx, out);
}
/* PyTorch's TensorDataset: sample i is (tensors[0][i], ..., tensors[n-1][i]).
 * All tensors share dim 0. Retains the tensors. New handle. A DataLoader
 * gathers each batch of it in one copy per field (get_batch), as it does for
 * a Subset of it. */
static inline wk_dataset *wk_tensor_dataset(wk_tensor *const *tensors, int n) { WK__DATA_CALL(tensor_dataset, NULL, tensors, n); }
/* Samples ds[indices[0..n)] (indices copied, checked against len(ds)). New handle. */
static inline wk_dataset *wk_subset(wk_dataset *ds, const int64_t *indices, int64_t n) { WK__DATA_CALL(subset, NULL, ds, indices, n); }
/* The datasets one after another. New handle. */
static inline wk_dataset *wk_concat_dataset(wk_dataset *const *dss, int n) { WK__DATA_CALL(concat, NULL, dss, n); }
/* Splits ds into n Subsets of lengths[i] (summing to len(ds)) over a random
 * permutation drawn from `seed`; out[0..n) receive new handles (all NULL on error). */
static inline wk_status wk_random_split(wk_dataset *ds, const int64_t *lengths, int n, uint64_t seed, wk_dataset **out) {
  WK__DATA_CALL(random_split, wk_last_error(), ds, lengths, n, seed, out);
}
/* A dataset whose samples are ds's with `tf` applied to field `field`, drawing
 * from the sample's stream. Retains ds and tf. New handle (iterable when ds is). */
static inline wk_dataset *wk_dataset_map(wk_dataset *ds, int field, wk_transform *tf) { WK__DATA_CALL(map, NULL, ds, field, tf); }
/* MNIST / Fashion-MNIST from IDX files (plain or gzip): samples (image uint8
 * [1, H, W], label int64 []). Validates magic numbers, dims, sizes, label range
 * [0, 9] and matching counts: errors (WK_ERR_IO) name the file, the record and
 * the fault. New handle. */
static inline wk_dataset *wk_dataset_mnist(const char *images_path, const char *labels_path) {
  WK__DATA_CALL(mnist, NULL, images_path, labels_path);
}
/* CIFAR-10 (classes 10: 1 label byte + 3072) or CIFAR-100 (classes 100: coarse
 * and fine label bytes; the fine label is used) binary batches, concatenated:
 * samples (image uint8 [3, 32, 32], label int64 []). New handle. */
static inline wk_dataset *wk_dataset_cifar(const char *const *paths, int npaths, int classes) {
  WK__DATA_CALL(cifar, NULL, paths, npaths, classes);
}
/* A CSV file of numbers (plain or gzip; the first line skipped when header):
 * samples (float32 [F] of the other fields, int64 [] label from column
 * label_col), or (float32 [F]) alone when label_col is -1. Every line must
 * have the same number of fields; errors name the file, line and field. */
static inline wk_dataset *wk_dataset_csv(const char *path, bool header, int label_col) {
  WK__DATA_CALL(csv, NULL, path, header, label_col);
}
/* A dataset over a user's stream of samples (see wk_iterable_impl; impl is
 * copied; `self` is owned by the dataset when impl->free is set). It has no
 * length and no random access: wk_dataset_len/get, Subset, Concat and
 * random_split refuse it (WK_ERR_UNSUPPORTED); wk_dataset_map wraps its
 * stream (sample k of a stream draws from wk_data_sample_seed(info->seed, 0, k)).
 * Read it with a DataLoader (no shuffle, no sampler). New handle. */
static inline wk_dataset *wk_iterable_dataset_new(const wk_iterable_impl *impl, void *self) {
  WK__DATA_CALL(iterable_new, NULL, impl, self);
}
/* torchvision's ImageFolder: root/<class>/.../<image>.{png,jpg,jpeg} (any
 * case). Classes are root's subfolders sorted by name (byte order), class k
 * has label k; each class folder is walked recursively (symlinks followed),
 * files sorted by folder path then name. Samples (image uint8 [H, W, C],
 * label int64 []); images are decoded when asked for (wk_image_decode), and
 * a file that fails names itself in the error. channels: 0 as stored (1 gray,
 * 2 gray+alpha, 3 RGB, 4 RGBA), or 1, 3, 4 to convert (torchvision's default
 * loader converts to RGB: pass 3). Errors: no class folder, a class without
 * any image. Apply wk_transform_to_tensor(true) to get float [C, H, W]. */
static inline wk_dataset *wk_dataset_image_folder(const char *root, int channels) {
  WK__DATA_CALL(image_folder, NULL, root, channels);
}
/* The name of class k of an ImageFolder (borrowed from ds), NULL past the last
 * class (WK_ERR_INDEX) or for another kind of dataset. */
static inline const char *wk_image_folder_class(wk_dataset *ds, int64_t k) { WK__DATA_CALL(image_folder_class, NULL, ds, k); }
/* Decodes a PNG or JPEG (told apart by signature) into a new uint8 tensor
 * [H, W, C]. PNG: palette, transparency (tRNS -> alpha), 1/2/4/16-bit and
 * interlaced images are handled (16-bit samples keep their high byte, as PIL
 * reads 16-bit RGB); JPEG: gray and RGB/YCbCr (CMYK is refused). Channel
 * conversion follows PIL's convert(): gray -> RGB replicates, RGB -> gray is
 * L = R*299/1000 + G*587/1000 + B*114/1000, alpha is dropped (not composited)
 * or set to 255. Corrupt or truncated data (including a JPEG libjpeg would
 * pad with grey) is a WK_ERR_IO naming what was wrong; images over
 * 178,956,970 pixels (PIL's bomb limit) are refused. Never exits or aborts. */
static inline wk_tensor *wk_image_decode(const void *data, size_t n, int channels) {
  WK__DATA_CALL(image_decode, NULL, data, n, channels);
}
/* wk_image_decode of a file; errors name the file. */
static inline wk_tensor *wk_image_read(const char *path, int channels) { WK__DATA_CALL(image_read, NULL, path, channels); }
/* Per-channel mean and (population) std of field `field` (a [C, ...] image;
 * uint8 values are scaled to [0, 1] as ToTensor would) over the whole dataset,
 * in float64. mean/std receive C values (cap >= C). */
static inline wk_status wk_dataset_channel_stats(wk_dataset *ds, int field, double *mean, double *std, int cap) {
  WK__DATA_CALL(channel_stats, wk_last_error(), ds, field, mean, std, cap);
}

/* ---- Transforms ---------------------------------------------------------------------------- */
/* Every constructor returns a new handle (free with wk_transform_free). Images
 * are [C, H, W] unless said otherwise. */
static inline void wk_transform_free(wk_transform *tf) {
  const wk_data_iface *d = tf ? WK__DATA(transform_free) : NULL;
  if (d) d->transform_free(tf);
}
/* Applies tf to x (borrowed) with the stream `seed`; returns a new reference. */
static inline wk_tensor *wk_transform_apply(wk_transform *tf, wk_tensor *x, uint64_t seed) {
  WK__DATA_CALL(transform_apply, NULL, tf, x, seed);
}
/* uint8 [C, H, W] (or [H, W, C] when hwc, or [H, W]) -> float32 [C, H, W] / 255;
 * floating input is converted to float32 unscaled. */
static inline wk_transform *wk_transform_to_tensor(bool hwc) { WK__DATA_CALL(to_tensor, NULL, hwc); }
/* (x - mean[c]) / std[c] per channel on float input (n == C, or 1 for all). */
static inline wk_transform *wk_transform_normalize(const double *mean, const double *std, int n) {
  WK__DATA_CALL(normalize, NULL, mean, std, n);
}
/* Pads every side by `padding` with `fill`, then crops a random h x w window. */
static inline wk_transform *wk_transform_random_crop(int64_t h, int64_t w, int64_t padding, double fill, uint64_t seed) {
  WK__DATA_CALL(random_crop, NULL, h, w, padding, fill, seed);
}
/* Flips the last dim with probability p. */
static inline wk_transform *wk_transform_random_hflip(double p, uint64_t seed) { WK__DATA_CALL(random_hflip, NULL, p, seed); }
/* Crops the central h x w window (torchvision's rounding). */
static inline wk_transform *wk_transform_center_crop(int64_t h, int64_t w) { WK__DATA_CALL(center_crop, NULL, h, w); }
/* Applies tfs[0], then tfs[1], ... (retained), each with its own sub-stream. */
static inline wk_transform *wk_transform_compose(wk_transform *const *tfs, int n) { WK__DATA_CALL(compose, NULL, tfs, n); }
/* A user C function: returns a new reference (or NULL with an error); must
 * be thread-safe. */
static inline wk_transform *wk_transform_lambda(wk_tensor *(*fn)(void *user, wk_tensor *x, uint64_t seed), void *user) {
  WK__DATA_CALL(lambda, NULL, fn, user);
}

/* Bilinear resize of the last two dims to h x w (w 0: the smaller edge
 * becomes h, the other int(h * long / short), torchvision's Resize(int)),
 * with PyTorch's F.interpolate(mode='bilinear', align_corners=False,
 * antialias=False) numbers; uint8 is computed in float32 and rounded half
 * to even, as torchvision does for tensors. uint8, float32, float64. */
static inline wk_transform *wk_transform_resize(int64_t h, int64_t w) { WK__DATA_CALL(resize, NULL, h, w); }
/* torchvision's RandomResizedCrop: a window of area scale[0..1] of the image
 * and aspect ratio log-uniform in ratio[0..1], ten tries, then a centre crop
 * clamped to the ratio range; the window is resized to h x w (bilinear as
 * wk_transform_resize). scale NULL: {0.08, 1}; ratio NULL: {3/4, 4/3}. */
static inline wk_transform *wk_transform_random_resized_crop(int64_t h, int64_t w, const double *scale, const double *ratio,
                                                             uint64_t seed) {
  WK__DATA_CALL(random_resized_crop, NULL, h, w, scale, ratio, seed);
}
/* torchvision's ColorJitter on [C, H, W] (uint8 or float in [0, 1]) with
 * brightness and contrast factor ranges {min, max} (NULL or {1, 1}: off),
 * applied in a random order: brightness blends with black, contrast with the
 * mean of the grayscale image (1 or 3 channels), clamped to the dtype range. */
static inline wk_transform *wk_transform_color_jitter_range(const double *brightness, const double *contrast, uint64_t seed) {
  WK__DATA_CALL(color_jitter, NULL, brightness, contrast, seed);
}
/* ColorJitter(brightness=b, contrast=c): factors in [max(0, 1 - b), 1 + b]. */
static inline wk_transform *wk_transform_color_jitter(double brightness, double contrast, uint64_t seed) {
  double b[2] = {brightness > 1 ? 0 : 1 - brightness, 1 + brightness}, c[2] = {contrast > 1 ? 0 : 1 - contrast, 1 + contrast};
  return wk_transform_color_jitter_range(b, c, seed);
}

/* ---- Samplers ------------------------------------------------------------------------------ */
/* Every constructor returns a new handle (free with wk_sampler_free). The
 * order of an epoch depends only on (seed, epoch). */
static inline void wk_sampler_free(wk_sampler *s) {
  const wk_data_iface *d = s ? WK__DATA(sampler_free) : NULL;
  if (d) d->sampler_free(s);
}
/* Number of indices per epoch; -1 on error. */
static inline int64_t wk_sampler_len(wk_sampler *s) { WK__DATA_CALL(sampler_len, -1, s); }
/* Selects the epoch whose order wk_sampler_indices gives (a loader sets it). */
static inline void wk_sampler_set_epoch(wk_sampler *s, int64_t epoch) {
  const wk_data_iface *d = s ? WK__DATA(sampler_set_epoch) : NULL;
  if (d) d->sampler_set_epoch(s, epoch);
}
/* Writes the current epoch's indices to buf (cap >= len); returns their count, -1 on error. */
static inline int64_t wk_sampler_indices(wk_sampler *s, int64_t *buf, int64_t cap) {
  WK__DATA_CALL(sampler_indices, -1, s, buf, cap);
}
/* 0, 1, ..., n-1. */
static inline wk_sampler *wk_sampler_sequential(int64_t n) { WK__DATA_CALL(sampler_sequential, NULL, n); }
/* A permutation of [0, n) (num_samples 0: n; more than n repeats fresh
 * permutations), or num_samples uniform draws when replacement. */
static inline wk_sampler *wk_sampler_random(int64_t n, bool replacement, int64_t num_samples, uint64_t seed) {
  WK__DATA_CALL(sampler_random, NULL, n, replacement, num_samples, seed);
}
/* A permutation of the given indices (copied). */
static inline wk_sampler *wk_sampler_subset_random(const int64_t *indices, int64_t n, uint64_t seed) {
  WK__DATA_CALL(sampler_subset_random, NULL, indices, n, seed);
}
/* num_samples indices drawn with probability proportional to weights[i] (>= 0, finite). */
static inline wk_sampler *wk_sampler_weighted(const double *weights, int64_t n, int64_t num_samples, bool replacement,
                                              uint64_t seed) {
  WK__DATA_CALL(sampler_weighted, NULL, weights, n, num_samples, replacement, seed);
}
/* PyTorch's DistributedSampler: rank's share of an (optionally shuffled)
 * order, padded by repeating the first indices to a multiple of world_size, or
 * with drop_last truncated to one. Call wk_sampler_set_epoch each epoch. */
static inline wk_sampler *wk_sampler_distributed(int64_t n, int world_size, int rank, bool shuffle, uint64_t seed,
                                                 bool drop_last) {
  WK__DATA_CALL(sampler_distributed, NULL, n, world_size, rank, shuffle, seed, drop_last);
}

/* ---- Collate building blocks ------------------------------------------------------------------ */
/* The default collate (what a loader does without collate_fn): field k of
 * every sample stacked along a new dim 0 into out (new references). */
static inline wk_status wk_collate_default(const wk_sample *samples, int64_t n, wk_sample *out) {
  WK__DATA_CALL(collate_default, wk_last_error(), samples, n, out);
}
/* PyTorch's pad_sequence: n tensors [L_i, *] (same dtype and * sizes,
 * borrowed) -> a new tensor [B, max L, *] (batch_first) or [max L, B, *], the
 * shorter ones padded with padding_value. */
static inline wk_tensor *wk_pad_sequence(wk_tensor *const *seqs, int64_t n, bool batch_first, double padding_value) {
  WK__DATA_CALL(pad_sequence, NULL, seqs, n, batch_first, padding_value);
}

/* ---- DataLoader ---------------------------------------------------------------------------- */
/* A loader over ds (retained). opts may be NULL. New handle: free it with
 * wk_dataloader_free, which stops and joins every worker thread, mid-epoch too
 * (a worker stuck inside get() is joined when get() returns).
 * Over an iterable dataset each worker batches its own stream (drop_last per
 * worker) and the caller takes a batch from each active worker in turn, as in
 * PyTorch: the order depends on the number of workers but not on timing. */
static inline wk_dataloader *wk_dataloader_new(wk_dataset *ds, const wk_loader_opts *opts) {
  WK__DATA_CALL(dataloader_new, NULL, ds, opts);
}
static inline void wk_dataloader_free(wk_dataloader *dl) {
  const wk_data_iface *d = dl ? WK__DATA(dataloader_free) : NULL;
  if (d) d->dataloader_free(dl);
}
/* Batches per epoch; -1 on error (WK_ERR_UNSUPPORTED for an iterable dataset). */
static inline int64_t wk_dataloader_len(wk_dataloader *dl) { WK__DATA_CALL(dataloader_len, -1, dl); }
/* Abandons the current iteration (joining its workers); the next call to
 * wk_dataloader_next starts epoch `epoch` (also set on the sampler). */
static inline wk_status wk_dataloader_set_epoch(wk_dataloader *dl, int64_t epoch) {
  WK__DATA_CALL(dataloader_set_epoch, wk_last_error(), dl, epoch);
}
/* The next batch, in sampler order whatever the number of workers: WK_OK with
 * batch->n > 0 (new references, owned by the caller's scope when one is open;
 * release with wk_sample_clear); WK_OK with batch->n == 0 at the end of the
 * epoch; or an error naming the failing sample index, after which the
 * iteration is over. A call after the end (or an error) starts the next epoch. */
static inline wk_status wk_dataloader_next(wk_dataloader *dl, wk_sample *batch) {
  WK__DATA_CALL(dataloader_next, wk_last_error(), dl, batch);
}

#endif
