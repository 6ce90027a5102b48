/* data plugin: private declarations shared by its files. */
#ifndef WICK_DATA_PLUGIN_H
#define WICK_DATA_PLUGIN_H
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wick/sdk.h>
#include <wick/sdk/kernel.h>
#include <wick/data.h>

/* ---- Reproducible streams: Philox keyed by a 64-bit key ------------------------------------ */
typedef struct dt_rng {
  uint64_t key, ctr;
  uint32_t buf[4];
  int nbuf;
} dt_rng;
static inline void dt_rng_init(dt_rng *r, uint64_t key) {
  r->key = key;
  r->ctr = 0;
  r->nbuf = 0;
}
static inline uint32_t dt_u32(dt_rng *r) {
  if (r->nbuf == 0) {
    wk_philox_at(r->key, r->ctr++, r->buf);
    r->nbuf = 4;
  }
  return r->buf[--r->nbuf];
}
static inline uint64_t dt_u64(dt_rng *r) {
  uint64_t hi = dt_u32(r);
  return (hi << 32) | dt_u32(r);
}
/* Uniform integer in [0, n) (n >= 1), bias below 2^-64 * n. */
static inline uint64_t dt_below(dt_rng *r, uint64_t n) { return (uint64_t)(((unsigned __int128)dt_u64(r) * n) >> 64); }
/* Uniform double in [0, 1). */
static inline double dt_unit(dt_rng *r) { return (double)(dt_u64(r) >> 11) * (1.0 / 9007199254740992.0); }
/* Fisher-Yates shuffle of a[0..n). */
static inline void dt_shuffle(int64_t *a, int64_t n, dt_rng *r) {
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t j = (int64_t)dt_below(r, (uint64_t)i + 1), t = a[i];
    a[i] = a[j];
    a[j] = t;
  }
}

/* ---- Handles -------------------------------------------------------------------------------- */
struct wk_dataset {
  atomic_int rc;
  wk_dataset_impl impl; /* map-style */
  void *self;
  bool iterable;         /* then iter is used and impl is empty */
  wk_iterable_impl iter;
};
/* Records an error naming fn unless ds is map-style. */
bool dt_need_map_style(const char *fn, wk_dataset *ds);
wk_dataset *dt_dataset_retain(wk_dataset *ds);
void dt_dataset_release(wk_dataset *ds);
/* Validates index (negative wraps) against len and calls get; on failure out is
 * empty and the error recorded. */
wk_status dt_dataset_get(wk_dataset *ds, int64_t index, const wk_sample_ctx *ctx, wk_sample *out);
int64_t dt_dataset_len(wk_dataset *ds);
/* A dataset over `self` with the given callbacks (self freed by free_fn). */
wk_dataset *dt_dataset_wrap(int64_t (*len)(void *), wk_status (*get)(void *, int64_t, const wk_sample_ctx *, wk_sample *),
                            void (*free_fn)(void *), void *self);
/* The default collate: stacks field k of every sample along a new dim 0. */
wk_status dt_collate_stack(const wk_sample *samples, int64_t n, wk_sample *out);

typedef struct dt_transform_vt dt_transform_vt;
struct wk_transform {
  atomic_int rc;
  const dt_transform_vt *vt;
};
struct dt_transform_vt {
  const char *name;
  /* New reference or NULL with an error. x borrowed. */
  wk_tensor *(*apply)(wk_transform *tf, wk_tensor *x, uint64_t seed);
  void (*destroy)(wk_transform *tf);
};
wk_transform *dt_transform_retain(wk_transform *tf);
/* Allocates a transform of `size` bytes (a struct starting with wk_transform), rc 1. */
void *dt_tf_alloc(size_t size, const dt_transform_vt *vt);
/* The key of a random transform's stream: (the sample's seed, the transform's own seed). */
uint64_t dt_tf_key(uint64_t sample_seed, uint64_t own);
/* True when x has at least `min` dims; else records a shape error naming fn and layout. */
bool dt_need_dims(const char *fn, wk_tensor *x, int min, const char *layout);
void dt_transform_release(wk_transform *tf);
wk_tensor *dt_transform_apply(wk_transform *tf, wk_tensor *x, uint64_t seed);

typedef struct dt_sampler_vt dt_sampler_vt;
struct wk_sampler {
  atomic_int rc;
  const dt_sampler_vt *vt;
  int64_t epoch;
};
struct dt_sampler_vt {
  int64_t (*len)(wk_sampler *s);
  /* Writes len indices of `epoch` to buf. */
  wk_status (*fill)(wk_sampler *s, int64_t epoch, int64_t *buf);
  void (*destroy)(wk_sampler *s);
};
wk_sampler *dt_sampler_retain(wk_sampler *s);
void dt_sampler_release(wk_sampler *s);

/* ---- Service functions (one file each family) ---------------------------------------------- */
wk_dataset *dt_dataset_new(const wk_dataset_impl *impl, void *self);
void dt_dataset_free(wk_dataset *ds);
int64_t dt_dataset_len_api(wk_dataset *ds);
wk_status dt_dataset_get_api(wk_dataset *ds, int64_t index, const wk_sample_ctx *ctx, wk_sample *out);
wk_dataset *dt_tensor_dataset(wk_tensor *const *tensors, int n);
wk_dataset *dt_subset(wk_dataset *ds, const int64_t *indices, int64_t n);
wk_dataset *dt_concat(wk_dataset *const *dss, int n);
wk_status dt_random_split(wk_dataset *ds, const int64_t *lengths, int n, uint64_t seed, wk_dataset **out);
wk_dataset *dt_map(wk_dataset *ds, int field, wk_transform *tf);
wk_status dt_channel_stats(wk_dataset *ds, int field, double *mean, double *std, int cap);

wk_dataset *dt_mnist(const char *images_path, const char *labels_path);
wk_dataset *dt_cifar(const char *const *paths, int npaths, int classes);
wk_dataset *dt_csv(const char *path, bool header, int label_col);

void dt_transform_free(wk_transform *tf);
wk_tensor *dt_transform_apply_api(wk_transform *tf, wk_tensor *x, uint64_t seed);
wk_transform *dt_to_tensor(bool hwc);
wk_transform *dt_normalize(const double *mean, const double *std, int n);
wk_transform *dt_random_crop(int64_t h, int64_t w, int64_t padding, double fill, uint64_t seed);
wk_transform *dt_random_hflip(double p, uint64_t seed);
wk_transform *dt_center_crop(int64_t h, int64_t w);
wk_transform *dt_compose(wk_transform *const *tfs, int n);
wk_transform *dt_lambda(wk_tensor *(*fn)(void *user, wk_tensor *x, uint64_t seed), void *user);

void dt_sampler_free(wk_sampler *s);
int64_t dt_sampler_len(wk_sampler *s);
void dt_sampler_set_epoch(wk_sampler *s, int64_t epoch);
int64_t dt_sampler_indices(wk_sampler *s, int64_t *buf, int64_t cap);
/* The indices of `epoch` (malloc'd, *n of them); NULL with an error. */
int64_t *dt_sampler_order(wk_sampler *s, int64_t epoch, int64_t *n);
wk_sampler *dt_sampler_sequential(int64_t n);
wk_sampler *dt_sampler_random(int64_t n, bool replacement, int64_t num_samples, uint64_t seed);
wk_sampler *dt_sampler_subset_random(const int64_t *indices, int64_t n, uint64_t seed);
wk_sampler *dt_sampler_weighted(const double *weights, int64_t n, int64_t num_samples, bool replacement, uint64_t seed);
wk_sampler *dt_sampler_distributed(int64_t n, int world_size, int rank, bool shuffle, uint64_t seed, bool drop_last);

wk_dataset *dt_iterable_new(const wk_iterable_impl *impl, void *self);
/* dataset_map over an iterable dataset (arguments checked by dt_map). */
wk_dataset *dt_map_iterable(wk_dataset *ds, int field, wk_transform *tf);
wk_status dt_collate_default(const wk_sample *samples, int64_t n, wk_sample *out);
wk_tensor *dt_pad_sequence(wk_tensor *const *seqs, int64_t n, bool batch_first, double padding_value);

wk_tensor *dt_image_decode(const void *data, size_t n, int channels);
/* As dt_image_decode, errors naming fn and name (the file). */
wk_tensor *dt_image_decode_named(const void *data, size_t n, int channels, const char *fn, const char *name);
wk_tensor *dt_image_read(const char *path, int channels);
/* Reads a file whole into a malloc'd buffer; errors name fn and path. */
wk_status dt_read_file(const char *fn, const char *path, uint8_t **buf, size_t *n);
wk_dataset *dt_image_folder(const char *root, int channels);
const char *dt_image_folder_class(wk_dataset *ds, int64_t k);
wk_transform *dt_resize(int64_t h, int64_t w);
wk_transform *dt_random_resized_crop(int64_t h, int64_t w, const double *scale, const double *ratio, uint64_t seed);
wk_transform *dt_color_jitter(const double *brightness, const double *contrast, uint64_t seed);

wk_dataloader *dt_loader_new(wk_dataset *ds, const wk_loader_opts *opts);
void dt_loader_free(wk_dataloader *dl);
int64_t dt_loader_len(wk_dataloader *dl);
wk_status dt_loader_set_epoch(wk_dataloader *dl, int64_t epoch);
wk_status dt_loader_next(wk_dataloader *dl, wk_sample *batch);

#endif
