/* The main job: trains an image classifier on Fashion-MNIST (Debian's
 * dataset-fashion-mnist) with the nn, optim and data plugins, reporting loss,
 * accuracy and images/s per epoch and the final test accuracy. The device is a
 * run-time value (--device), never a compile-time switch.
 *
 *   train [--model cnn|mlp] [--epochs 3] [--batch-size 64] [--lr 0.05]
 *         [--momentum 0.9] [--seed 0] [--workers 0] [--limit N]
 *         [--data DIR] [--device cpu] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <wick/data.h>
#include <wick/nn.h>
#include <wick/optim.h>
#include <wick/wick.h>

typedef struct {
  const char *model, *data, *device;
  int epochs, workers;
  int64_t batch, limit;
  double lr, momentum;
  uint64_t seed;
} config;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int die(const char *what) {
  fprintf(stderr, "train: %s: %s\n", what, wk_last_error_message());
  return 1;
}

static int usage(void) {
  fprintf(stderr, "usage: train [--model cnn|mlp] [--epochs N] [--batch-size N] [--lr X] [--momentum X]\n"
                  "             [--seed N] [--workers N] [--limit N] [--data DIR] [--device cpu|cuda:N]\n");
  return 2;
}

static bool parse(int argc, char **argv, config *c) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) return false;
    if (!v) {
      fprintf(stderr, "train: option %s needs a value\n", a);
      return false;
    }
    char *end = NULL;
    if (!strcmp(a, "--model")) c->model = v;
    else if (!strcmp(a, "--data")) c->data = v;
    else if (!strcmp(a, "--device")) c->device = v;
    else if (!strcmp(a, "--epochs")) c->epochs = (int)strtol(v, &end, 10);
    else if (!strcmp(a, "--workers")) c->workers = (int)strtol(v, &end, 10);
    else if (!strcmp(a, "--batch-size")) c->batch = strtoll(v, &end, 10);
    else if (!strcmp(a, "--limit")) c->limit = strtoll(v, &end, 10);
    else if (!strcmp(a, "--lr")) c->lr = strtod(v, &end);
    else if (!strcmp(a, "--momentum")) c->momentum = strtod(v, &end);
    else if (!strcmp(a, "--seed")) c->seed = strtoull(v, &end, 10);
    else {
      fprintf(stderr, "train: unknown option %s\n", a);
      return false;
    }
    if (end && *end) {
      fprintf(stderr, "train: bad value '%s' for %s\n", v, a);
      return false;
    }
    i++;
  }
  if (strcmp(c->model, "cnn") && strcmp(c->model, "mlp")) {
    fprintf(stderr, "train: unknown model '%s' (cnn or mlp)\n", c->model);
    return false;
  }
  if (c->epochs < 1 || c->batch < 1 || c->workers < 0 || c->lr <= 0 || c->limit < 0) {
    fprintf(stderr, "train: epochs, batch size and lr must be positive, workers and limit not negative\n");
    return false;
  }
  return true;
}

/* Fashion-MNIST split as normalised float images: (x / 255 - 0.2860) / 0.3530. */
static wk_dataset *load_split(const config *c, const char *prefix) {
  char img[1024], lab[1024];
  snprintf(img, sizeof img, "%s/%s-images-idx3-ubyte.gz", c->data, prefix);
  snprintf(lab, sizeof lab, "%s/%s-labels-idx1-ubyte.gz", c->data, prefix);
  wk_dataset *raw = wk_dataset_mnist(img, lab);
  if (!raw) return NULL;
  double mean = 0.2860, std = 0.3530;
  wk_transform *steps[2] = {wk_transform_to_tensor(false), wk_transform_normalize(&mean, &std, 1)};
  wk_transform *tf = steps[0] && steps[1] ? wk_transform_compose(steps, 2) : NULL;
  wk_dataset *ds = tf ? wk_dataset_map(raw, 0, tf) : NULL;
  wk_transform_free(steps[0]);
  wk_transform_free(steps[1]);
  wk_transform_free(tf);
  if (ds && c->limit > 0 && c->limit < wk_dataset_len(ds)) {
    int64_t n = c->limit, *idx = malloc(sizeof(int64_t) * (size_t)n);
    for (int64_t i = 0; idx && i < n; i++) idx[i] = i;
    wk_dataset *sub = idx ? wk_subset(ds, idx, n) : NULL;
    free(idx);
    wk_dataset_free(ds);
    ds = sub;
  }
  wk_dataset_free(raw);
  return ds;
}

static wk_module *build_model(const config *c) {
  if (!strcmp(c->model, "cnn")) return wk_nn_lenet();
  const int64_t hidden[1] = {256};
  wk_module *mods[2] = {wk_nn_flatten(1, -1), wk_nn_mlp(784, hidden, 1, 10)};
  return mods[0] && mods[1] ? wk_nn_sequential(mods, 2) : NULL;
}

/* Loss and accuracy over a loader (no_grad, eval mode). */
static wk_status evaluate(wk_module *model, wk_dataloader *dl, wk_device dev, double *loss, double *acc) {
  wk_module_train(model, false);
  wk_no_grad_begin();
  double total_loss = 0;
  int64_t correct = 0, seen = 0;
  wk_status s = WK_OK;
  wk_sample b = {0};
  while (!s && (s = wk_dataloader_next(dl, &b)) == WK_OK && b.n) {
    wk_scope_begin();
    wk_tensor *x = wk_to_device(b.t[0], dev), *y = wk_to_device(b.t[1], dev);
    wk_tensor *out = wk_module_forward(model, x);
    wk_tensor *l = wk_cross_entropy_ex(out, y, NULL, WK_REDUCTION_SUM, -100, 0);
    wk_tensor *hits = wk_sum(wk_eq(wk_argmax_dim(out, 1, false), y));
    double lv;
    int64_t hv;
    if (wk_item(l, &lv) || wk_item_i64(hits, &hv)) {
      s = wk_last_error();
    } else {
      total_loss += lv;
      correct += hv;
      seen += wk_tensor_size(b.t[1], 0);
    }
    wk_scope_end();
    wk_sample_clear(&b);
  }
  wk_no_grad_end();
  wk_module_train(model, true);
  if (s) return s;
  *loss = seen ? total_loss / (double)seen : 0;
  *acc = seen ? (double)correct / (double)seen : 0;
  return WK_OK;
}

int main(int argc, char **argv) {
  config c = {"cnn", "/usr/share/datasets/fashion-mnist", "cpu", 3, 0, 64, 0, 0.05, 0.9, 0};
  if (!parse(argc, argv, &c)) return usage();
  if (wk_init() != WK_OK) return die("wk_init");
  wk_device dev;
  if (wk_device_parse(c.device, &dev) != WK_OK) return die("--device");
  wk_manual_seed(c.seed);
  bool tty = isatty(STDOUT_FILENO);

  wk_dataset *train = load_split(&c, "train"), *test = train ? load_split(&c, "t10k") : NULL;
  if (!train || !test) return die("loading Fashion-MNIST (is dataset-fashion-mnist installed? see --data)");
  wk_dataloader *train_dl = wk_dataloader_new(train, WK_LOADER_OPTS(.batch_size = c.batch, .shuffle = true,
                                                                    .num_workers = c.workers, .seed = c.seed));
  wk_dataloader *test_dl = wk_dataloader_new(test, WK_LOADER_OPTS(.batch_size = 1000, .num_workers = c.workers));
  if (!train_dl || !test_dl) return die("creating the data loaders");

  wk_module *model = build_model(&c);
  if (!model || wk_module_to(model, dev, WK_DTYPE_DEFAULT) != WK_OK) return die("building the model");
  int np = wk_module_named_parameters(model, NULL, NULL, 0);
  wk_tensor **params = calloc((size_t)np, sizeof *params);
  wk_module_named_parameters(model, NULL, params, np);
  wk_optimizer *opt = wk_optim_sgd(params, np, (wk_sgd_opts){.lr = c.lr, .momentum = c.momentum});
  if (!opt) return die("creating the optimizer");
  char devname[32];
  printf("model %s (%lld parameters) on %s, %lld training and %lld test images, batch %lld, SGD lr %g momentum %g\n",
         c.model, (long long)wk_module_num_parameters(model, false), wk_device_str(dev, devname, sizeof devname),
         (long long)wk_dataset_len(train), (long long)wk_dataset_len(test), (long long)c.batch, c.lr, c.momentum);

  double test_acc = 0, t_all = now();
  for (int epoch = 1; epoch <= c.epochs; epoch++) {
    if (wk_dataloader_set_epoch(train_dl, epoch - 1) != WK_OK) return die("set_epoch");
    int64_t nbatches = wk_dataloader_len(train_dl), seen = 0, correct = 0, step = 0;
    double loss_sum = 0, t0 = now();
    wk_sample b = {0};
    wk_status s;
    while ((s = wk_dataloader_next(train_dl, &b)) == WK_OK && b.n) {
      wk_scope_begin();
      wk_tensor *x = wk_to_device(b.t[0], dev), *y = wk_to_device(b.t[1], dev);
      wk_tensor *out = wk_module_forward(model, x);
      wk_tensor *loss = wk_cross_entropy(out, y);
      if (!loss || wk_optim_zero_grad(opt, true) || wk_backward(loss) || wk_optim_step(opt)) return die("training step");
      double lv;
      int64_t hv;
      wk_no_grad_begin();
      wk_tensor *hits = wk_sum(wk_eq(wk_argmax_dim(out, 1, false), y));
      wk_no_grad_end();
      if (wk_item(loss, &lv) || wk_item_i64(hits, &hv)) return die("reading the loss");
      int64_t n = wk_tensor_size(b.t[1], 0);
      loss_sum += lv * (double)n;
      correct += hv;
      seen += n;
      step++;
      wk_scope_end();
      wk_sample_clear(&b);
      if (step % (tty ? 10 : 200) == 0 || step == nbatches) {
        double dt = now() - t0, ips = dt > 0 ? (double)seen / dt : 0;
        double eta = ips > 0 ? (double)(nbatches - step) * (double)c.batch / ips : 0;
        printf(tty ? "\r  epoch %d [%lld/%lld] loss %.4f acc %.4f  %.0f img/s  eta %.0fs   "
                   : "  epoch %d [%lld/%lld] loss %.4f acc %.4f  %.0f img/s  eta %.0fs\n",
               epoch, (long long)step, (long long)nbatches, loss_sum / (double)seen, (double)correct / (double)seen,
               ips, eta);
        fflush(stdout);
      }
    }
    if (s) return die("reading a training batch");
    if (tty) printf("\n");
    double epoch_s = now() - t0, val_loss, val_acc;
    if (evaluate(model, test_dl, dev, &val_loss, &val_acc) != WK_OK) return die("evaluating");
    test_acc = val_acc;
    printf("Epoch %d: train loss=%.4f acc=%.4f | val loss=%.4f acc=%.4f | %.0f img/s, %.1f s\n", epoch,
           loss_sum / (double)seen, (double)correct / (double)seen, val_loss, val_acc, (double)seen / epoch_s, epoch_s);
    fflush(stdout);
  }
  printf("final test accuracy: %.2f%% after %d epoch%s (%.1f s)\n", 100 * test_acc, c.epochs, c.epochs == 1 ? "" : "s",
         now() - t_all);
  wk_optimizer_free(opt);
  free(params);
  wk_module_release(model);
  wk_dataloader_free(train_dl);
  wk_dataloader_free(test_dl);
  wk_dataset_free(train);
  wk_dataset_free(test);
  wk_shutdown();
  return 0;
}
