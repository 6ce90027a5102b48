/* The main job's datasets: --dataset NAME [--data DIR] -> train and test
 * datasets with the transforms each one's recipe uses, the image geometry the
 * model needs, and the files whose checksum goes into run.json. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wick/data.h>
#include <wick/wick.h>

#include "train_data.h"

static const double fmnist_mean[1] = {0.2860}, fmnist_std[1] = {0.3530};
static const double mnist_mean[1] = {0.1307}, mnist_std[1] = {0.3081};
static const double cifar_mean[3] = {0.4914, 0.4822, 0.4465}, cifar_std[3] = {0.2470, 0.2435, 0.2616};
static const double imagenet_mean[3] = {0.485, 0.456, 0.406}, imagenet_std[3] = {0.229, 0.224, 0.225};

static bool add_file(train_data *d, const char *dir, const char *name) {
  if (d->nfiles >= TRAIN_DATA_MAX_FILES) return false;
  snprintf(d->filebuf[d->nfiles], sizeof d->filebuf[0], "%s/%s", dir, name);
  d->files[d->nfiles] = d->filebuf[d->nfiles];
  d->nfiles++;
  return true;
}

/* Keeps the first `limit` samples (--limit; 0 keeps all). Takes ds. */
static wk_dataset *limit_to(wk_dataset *ds, int64_t limit) {
  if (!ds || limit <= 0 || limit >= wk_dataset_len(ds)) return ds;
  int64_t *idx = malloc(sizeof(int64_t) * (size_t)limit);
  for (int64_t i = 0; idx && i < limit; i++) idx[i] = i;
  wk_dataset *sub = idx ? wk_subset(ds, idx, limit) : NULL;
  if (!idx) wk_error(WK_ERR_NO_MEMORY, "--limit: cannot allocate %lld indices", (long long)limit);
  free(idx);
  wk_dataset_free(ds);
  return sub;
}

/* Grey images repeated to 3 channels, for models with an RGB stem (resnet18). */
static wk_tensor *grey_to_rgb(void *user, wk_tensor *x, uint64_t seed) {
  (void)user;
  (void)seed;
  return wk_expand(x, WK_SHAPE(3, wk_tensor_size(x, 1), wk_tensor_size(x, 2)));
}

/* raw mapped through ToTensor, [augmentation], [grey->rgb], Normalize. Takes raw. */
static wk_dataset *with_transforms(wk_dataset *raw, const train_config *c, const train_data *d, bool train,
                                   bool augment_crop, int64_t crop) {
  if (!raw) return NULL;
  wk_transform *steps[6];
  int ns = 0;
  steps[ns++] = wk_transform_to_tensor(false);
  if (train && augment_crop) {
    steps[ns++] = wk_transform_random_crop(crop, crop, 4, 0.0, c->seed);
    steps[ns++] = wk_transform_random_hflip(0.5, c->seed + 1);
  }
  if (d->rgb_from_grey) steps[ns++] = wk_transform_lambda(grey_to_rgb, NULL);
  steps[ns++] = wk_transform_normalize(d->mean, d->std, d->nstats);
  bool ok = true;
  for (int i = 0; i < ns; i++) ok = ok && steps[i];
  wk_transform *tf = ok ? wk_transform_compose(steps, ns) : NULL;
  wk_dataset *ds = tf ? wk_dataset_map(raw, 0, tf) : NULL;
  for (int i = 0; i < ns; i++) wk_transform_free(steps[i]);
  wk_transform_free(tf);
  wk_dataset_free(raw);
  return limit_to(ds, c->limit);
}

/* ds decoded once into memory (its transforms must not be random): a
 * TensorDataset of its fields, which the loader batches in one gather per
 * field instead of a transform chain per sample and a stack, as the PyTorch
 * peer (bench/fmnist_epoch.py) normalises its tensors before its epoch.
 * Read in chunks into the stacked tensors, so the decoding never holds more
 * than the result and one chunk. Takes ds. */
static wk_dataset *in_memory(wk_dataset *ds) {
  int64_t n = ds ? wk_dataset_len(ds) : -1;
  wk_dataloader *dl = n > 0 ? wk_dataloader_new(ds, WK_LOADER_OPTS(.batch_size = 4096)) : NULL;
  wk_tensor *all[WK_SAMPLE_MAX] = {0};
  int nf = 0;
  int64_t at = 0;
  bool ok = dl != NULL;
  wk_sample b = {0};
  while (ok && (ok = wk_dataloader_next(dl, &b) == WK_OK) && b.n) {
    if (!nf) { /* the first chunk gives the fields' shapes and dtypes */
      for (nf = 0; ok && nf < b.n; nf++) {
        int64_t sizes[WK_MAX_DIMS];
        int nd = wk_tensor_dim(b.t[nf]);
        memcpy(sizes, wk_tensor_sizes(b.t[nf]), sizeof(int64_t) * (size_t)nd);
        sizes[0] = n;
        ok = (all[nf] = wk_empty(sizes, nd, (wk_options){.dtype = wk_tensor_dtype(b.t[nf])})) != NULL;
      }
    }
    int64_t m = wk_tensor_size(b.t[0], 0);
    for (int f = 0; ok && f < nf; f++) {
      wk_tensor *dst = wk_narrow(all[f], 0, at, m);
      ok = dst && wk_copy_(dst, b.t[f]) != NULL; /* in place: returns dst, borrowed */
      wk_release(dst);
    }
    at += m;
    wk_sample_clear(&b);
  }
  wk_sample_clear(&b);
  wk_dataloader_free(dl);
  wk_dataset *mem = ok && at == n ? wk_tensor_dataset(all, nf) : NULL;
  for (int f = 0; f < nf; f++) wk_release(all[f]);
  if (!mem && n == 0) return ds; /* nothing to decode */
  wk_dataset_free(ds);
  return mem;
}

static bool load_idx(const train_config *c, train_data *d, const char *dir, const double *mean, const double *std) {
  const char *names[4] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
                          "t10k-labels-idx1-ubyte.gz"};
  for (int i = 0; i < 4; i++) {
    char plain[1100];
    /* Accept the uncompressed files too (torchvision's raw/ folder keeps both). */
    snprintf(plain, sizeof plain, "%s/%.*s", dir, (int)(strlen(names[i]) - 3), names[i]);
    if (access(plain, R_OK) == 0) {
      snprintf(d->filebuf[d->nfiles], sizeof d->filebuf[0], "%s", plain);
      d->files[d->nfiles] = d->filebuf[d->nfiles];
      d->nfiles++;
    } else {
      add_file(d, dir, names[i]);
    }
  }
  d->channels = 1;
  d->height = d->width = 28;
  d->classes = 10;
  d->nstats = 1;
  d->mean[0] = mean[0];
  d->std[0] = std[0];
  d->train = with_transforms(wk_dataset_mnist(d->files[0], d->files[1]), c, d, true, false, 0);
  d->test = d->train ? with_transforms(wk_dataset_mnist(d->files[2], d->files[3]), c, d, false, false, 0) : NULL;
  if (!d->rgb_from_grey) { /* 28x28 grey: decoded once (3-channel copies would triple the memory) */
    d->train = in_memory(d->train);
    d->test = d->train ? in_memory(d->test) : d->test;
  }
  return d->train && d->test;
}

static bool load_cifar(const train_config *c, train_data *d, const char *dir, int classes) {
  const char *ps[5];
  int n = 0;
  if (classes == 10) {
    for (int i = 1; i <= 5; i++) {
      char name[32];
      snprintf(name, sizeof name, "data_batch_%d.bin", i);
      char full[1100];
      snprintf(full, sizeof full, "%s/%s", dir, name);
      if (access(full, R_OK) == 0 && add_file(d, dir, name)) ps[n++] = d->files[d->nfiles - 1];
    }
  } else if (add_file(d, dir, "train.bin")) {
    ps[n++] = d->files[d->nfiles - 1];
  }
  const char *test_name = classes == 10 ? "test_batch.bin" : "test.bin";
  if (!n) {
    wk_error(WK_ERR_IO, "--data %s: no %s in it", dir, classes == 10 ? "data_batch_*.bin" : "train.bin");
    return false;
  }
  add_file(d, dir, test_name);
  const char *test_path = d->files[d->nfiles - 1];
  d->channels = 3;
  d->height = d->width = 32;
  d->classes = classes;
  d->nstats = 3;
  memcpy(d->mean, cifar_mean, sizeof cifar_mean);
  memcpy(d->std, cifar_std, sizeof cifar_std);
  d->train = with_transforms(wk_dataset_cifar(ps, n, classes), c, d, true, true, 32);
  d->test = d->train ? with_transforms(wk_dataset_cifar(&test_path, 1, classes), c, d, false, true, 32) : NULL;
  return d->train && d->test;
}

/* torchvision's ImageFolder recipe at --image-size S: RandomResizedCrop(S) and
 * a flip for training, Resize(S * 8 / 7) + CenterCrop(S) for validation (the
 * 256/224 ratio), ImageNet statistics. DIR/train and DIR/val (or DIR/test). */
static bool load_imagefolder(const train_config *c, train_data *d) {
  if (!c->data) {
    wk_error(WK_ERR_INVALID_ARG, "--dataset imagefolder needs --data DIR (with train/ and val/ class folders)");
    return false;
  }
  char tr[1100], va[1100];
  snprintf(tr, sizeof tr, "%s/train", c->data);
  snprintf(va, sizeof va, "%s/val", c->data);
  if (access(va, R_OK) != 0) snprintf(va, sizeof va, "%s/test", c->data);
  if (access(tr, R_OK) != 0 || access(va, R_OK) != 0) {
    wk_error(WK_ERR_IO, "--data %s: an ImageFolder root needs train/ and val/ (or test/) subfolders of class folders",
             c->data);
    return false;
  }
  int64_t s = c->image_size;
  d->channels = 3;
  d->height = d->width = s;
  d->nstats = 3;
  memcpy(d->mean, imagenet_mean, sizeof imagenet_mean);
  memcpy(d->std, imagenet_std, sizeof imagenet_std);
  wk_dataset *raw_tr = wk_dataset_image_folder(tr, 3), *raw_va = raw_tr ? wk_dataset_image_folder(va, 3) : NULL;
  if (!raw_tr || !raw_va) {
    wk_dataset_free(raw_tr);
    return false;
  }
  int64_t k = 0;
  while (wk_image_folder_class(raw_tr, k)) k++;
  wk_clear_error();
  d->classes = k;
  for (int64_t j = 0; j < k; j++) { /* labels must mean the same classes in both splits */
    const char *a = wk_image_folder_class(raw_tr, j), *b = wk_image_folder_class(raw_va, j);
    if (!b || strcmp(a, b)) {
      wk_error(WK_ERR_INVALID_ARG, "--data %s: class %lld is '%s' in train/ but '%s' in %s", c->data, (long long)j, a,
               b ? b : "(missing)", va);
      wk_dataset_free(raw_tr);
      wk_dataset_free(raw_va);
      return false;
    }
  }
  if (wk_image_folder_class(raw_va, k)) {
    wk_error(WK_ERR_INVALID_ARG, "--data %s: %s has class '%s', which train/ does not", c->data, va,
             wk_image_folder_class(raw_va, k));
    wk_dataset_free(raw_tr);
    wk_dataset_free(raw_va);
    return false;
  }
  wk_clear_error();
  wk_transform *t_steps[4] = {wk_transform_to_tensor(true), wk_transform_random_resized_crop(s, s, NULL, NULL, c->seed),
                              wk_transform_random_hflip(0.5, c->seed + 1),
                              wk_transform_normalize(d->mean, d->std, 3)};
  wk_transform *v_steps[4] = {wk_transform_to_tensor(true), wk_transform_resize(s * 8 / 7, 0),
                              wk_transform_center_crop(s, s), wk_transform_normalize(d->mean, d->std, 3)};
  bool ok = true;
  for (int i = 0; i < 4; i++) ok = ok && t_steps[i] && v_steps[i];
  wk_transform *tt = ok ? wk_transform_compose(t_steps, 4) : NULL, *vt = ok ? wk_transform_compose(v_steps, 4) : NULL;
  d->train = tt && vt ? limit_to(wk_dataset_map(raw_tr, 0, tt), c->limit) : NULL;
  d->test = d->train ? limit_to(wk_dataset_map(raw_va, 0, vt), c->limit) : NULL;
  for (int i = 0; i < 4; i++) {
    wk_transform_free(t_steps[i]);
    wk_transform_free(v_steps[i]);
  }
  wk_transform_free(tt);
  wk_transform_free(vt);
  wk_dataset_free(raw_tr);
  wk_dataset_free(raw_va);
  return d->train && d->test;
}

bool train_data_load(const train_config *c, train_data *d) {
  memset(d, 0, sizeof *d);
  const char *name = c->dataset;
  bool grey = !strcmp(name, "fashion-mnist") || !strcmp(name, "mnist");
  /* resnet18 has an RGB stem: grey images are repeated to 3 channels. */
  d->rgb_from_grey = grey && !strcmp(c->model, "resnet18");
  bool ok;
  if (!strcmp(name, "fashion-mnist")) {
    ok = load_idx(c, d, c->data ? c->data : TRAIN_FMNIST_DIR, fmnist_mean, fmnist_std);
  } else if (!strcmp(name, "mnist")) {
    if (!c->data) {
      wk_error(WK_ERR_INVALID_ARG, "--dataset mnist needs --data DIR (the four IDX files; Debian ships no MNIST)");
      return false;
    }
    ok = load_idx(c, d, c->data, mnist_mean, mnist_std);
  } else if (!strcmp(name, "cifar10") || !strcmp(name, "cifar100")) {
    if (!c->data) {
      wk_error(WK_ERR_INVALID_ARG, "--dataset %s needs --data DIR (the binary batches)", name);
      return false;
    }
    ok = load_cifar(c, d, c->data, name[5] == '1' && name[6] == '0' && name[7] == '0' ? 100 : 10);
  } else if (!strcmp(name, "imagefolder")) {
    ok = load_imagefolder(c, d);
  } else {
    wk_error(WK_ERR_INVALID_ARG, "--dataset '%s' is not one of fashion-mnist, mnist, cifar10, cifar100, imagefolder",
             name);
    return false;
  }
  if (ok && d->rgb_from_grey) d->channels = 3;
  if (!ok) train_data_free(d);
  return ok;
}

void train_data_free(train_data *d) {
  wk_dataset_free(d->train);
  wk_dataset_free(d->test);
  d->train = d->test = NULL;
}
