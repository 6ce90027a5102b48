/* The seed's CIFAR-10 recipe: ResNet-18 (CIFAR stem: 3x3 stride-1 conv1, no
 * maxpool), RandomCrop 32 padding 4, RandomHorizontalFlip, Normalize with the
 * CIFAR-10 statistics, SGD lr 0.1 momentum 0.9 weight decay 5e-4, cosine
 * schedule over the epochs, cross-entropy. Reads the binary batches
 * (data_batch_1..5.bin, test_batch.bin) from DIR.
 *
 *   cifar10_resnet18 DIR [--epochs 30] [--batch-size 128] [--lr 0.1] [--seed 0]
 *                        [--workers 2] [--limit N] [--device cpu|cuda:N] */
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
  const char *dir, *device;
  int epochs, workers;
  int64_t batch, limit;
  double lr;
  uint64_t seed;
} config;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int die(const char *what) {
  fprintf(stderr, "cifar10_resnet18: %s: %s\n", what, wk_last_error_message());
  return 1;
}

static int usage(void) {
  fprintf(stderr,
          "usage: cifar10_resnet18 DIR [--epochs N] [--batch-size N] [--lr X] [--seed N] [--workers N]\n"
          "                        [--limit N] [--device cpu|cuda:N]\n"
          "DIR holds CIFAR-10's binary batches: data_batch_1.bin .. data_batch_5.bin, test_batch.bin\n");
  return 2;
}

static bool parse(int argc, char **argv, config *c) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) return false;
    if (a[0] != '-') {
      if (c->dir) {
        fprintf(stderr, "cifar10_resnet18: unexpected argument %s\n", a);
        return false;
      }
      c->dir = a;
      continue;
    }
    if (!v) {
      fprintf(stderr, "cifar10_resnet18: option %s needs a value\n", a);
      return false;
    }
    char *end = NULL;
    if (!strcmp(a, "--device"))
      c->device = v;
    else if (!strcmp(a, "--epochs"))
      c->epochs = (int)strtol(v, &end, 10);
    else if (!strcmp(a, "--workers"))
      c->workers = (int)strtol(v, &end, 10);
    else if (!strcmp(a, "--batch-size"))
      c->batch = strtoll(v, &end, 10);
    else if (!strcmp(a, "--limit"))
      c->limit = strtoll(v, &end, 10);
    else if (!strcmp(a, "--lr"))
      c->lr = strtod(v, &end);
    else if (!strcmp(a, "--seed"))
      c->seed = strtoull(v, &end, 10);
    else {
      fprintf(stderr, "cifar10_resnet18: unknown option %s\n", a);
      return false;
    }
    if (end && *end) {
      fprintf(stderr, "cifar10_resnet18: bad value '%s' for %s\n", v, a);
      return false;
    }
    i++;
  }
  if (!c->dir) {
    fprintf(stderr, "cifar10_resnet18: no data directory given\n");
    return false;
  }
  if (c->epochs < 1 || c->batch < 1 || c->workers < 0 || c->lr <= 0 || c->limit < 0) {
    fprintf(stderr, "cifar10_resnet18: epochs, batch size and lr must be positive, workers and limit not negative\n");
    return false;
  }
  return true;
}

static const double cifar_mean[3] = {0.4914, 0.4822, 0.4465}, cifar_std[3] = {0.2470, 0.2435, 0.2616};

/* The training batches found in DIR (or the test batch), with the recipe's
 * transforms: augmentation (train only), ToTensor, Normalize. */
static wk_dataset *load_split(const config *c, bool train) {
  char paths[5][1100];
  const char *ps[5];
  int n = 0;
  for (int i = 1; i <= (train ? 5 : 1); i++) {
    if (train)
      snprintf(paths[n], sizeof paths[n], "%s/data_batch_%d.bin", c->dir, i);
    else
      snprintf(paths[n], sizeof paths[n], "%s/test_batch.bin", c->dir);
    if (access(paths[n], R_OK) == 0) {
      ps[n] = paths[n];
      n++;
    }
  }
  if (!n) {
    wk_error(WK_ERR_IO, "%s: no %s in %s", c->dir, train ? "data_batch_*.bin" : "test_batch.bin", c->dir);
    return NULL;
  }
  wk_dataset *raw = wk_dataset_cifar(ps, n, 10);
  if (!raw) return NULL;
  wk_transform *steps[4];
  int ns = 0;
  steps[ns++] = wk_transform_to_tensor(false);
  if (train) {
    steps[ns++] = wk_transform_random_crop(32, 32, 4, 0.0, c->seed);
    steps[ns++] = wk_transform_random_hflip(0.5, c->seed + 1);
  }
  steps[ns++] = wk_transform_normalize(cifar_mean, cifar_std, 3);
  bool ok = true;
  for (int i = 0; i < ns; i++) ok = ok && steps[i];
  wk_transform *tf = ok ? wk_transform_compose(steps, ns) : NULL;
  wk_dataset *ds = tf ? wk_dataset_map(raw, 0, tf) : NULL;
  for (int i = 0; i < ns; i++) wk_transform_free(steps[i]);
  wk_transform_free(tf);
  wk_dataset_free(raw);
  if (ds && c->limit > 0 && c->limit < wk_dataset_len(ds)) {
    int64_t m = c->limit, *idx = malloc(sizeof(int64_t) * (size_t)m);
    for (int64_t i = 0; idx && i < m; i++) idx[i] = i;
    wk_dataset *sub = idx ? wk_subset(ds, idx, m) : NULL;
    free(idx);
    wk_dataset_free(ds);
    ds = sub;
  }
  return ds;
}

static wk_status evaluate(wk_module *model, wk_dataloader *dl, wk_device dev, double *loss, double *acc) {
  wk_module_train(model, false);
  wk_no_grad_begin();
  double total = 0;
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
      total += lv;
      correct += hv;
      seen += wk_tensor_size(b.t[1], 0);
    }
    wk_scope_end();
    wk_sample_clear(&b);
  }
  wk_no_grad_end();
  wk_module_train(model, true);
  if (s) return s;
  *loss = seen ? total / (double)seen : 0;
  *acc = seen ? (double)correct / (double)seen : 0;
  return WK_OK;
}

int main(int argc, char **argv) {
  config c = {.device = "cpu", .epochs = 30, .workers = 2, .batch = 128, .lr = 0.1};
  if (!parse(argc, argv, &c)) return usage();
  if (wk_init() != WK_OK) return die("wk_init");
  wk_device dev;
  if (wk_device_parse(c.device, &dev) != WK_OK) return die("--device");
  wk_manual_seed(c.seed);
  bool tty = isatty(STDOUT_FILENO);

  wk_dataset *train = load_split(&c, true), *test = train ? load_split(&c, false) : NULL;
  if (!train || !test) return die("loading CIFAR-10");
  wk_dataloader *train_dl = wk_dataloader_new(
      train, WK_LOADER_OPTS(.batch_size = c.batch, .shuffle = true, .num_workers = c.workers, .seed = c.seed));
  wk_dataloader *test_dl = wk_dataloader_new(test, WK_LOADER_OPTS(.batch_size = 256, .num_workers = c.workers));
  if (!train_dl || !test_dl) return die("creating the data loaders");

  wk_module *model = wk_nn_resnet18((wk_resnet_opts){.num_classes = 10, .cifar_stem = true});
  if (!model || wk_module_to(model, dev, WK_DTYPE_DEFAULT) != WK_OK) return die("building ResNet-18");
  int np = wk_module_named_parameters(model, NULL, NULL, 0);
  wk_tensor **params = calloc((size_t)np, sizeof *params);
  wk_module_named_parameters(model, NULL, params, np);
  wk_optimizer *opt = wk_optim_sgd(params, np, (wk_sgd_opts){.lr = c.lr, .momentum = 0.9, .weight_decay = 5e-4});
  wk_lr_scheduler *sched = opt ? wk_lr_cosine_annealing(opt, (wk_cosine_annealing_lr_opts){.T_max = c.epochs}) : NULL;
  if (!sched) return die("creating the optimizer and its cosine schedule");
  char devname[32];
  printf(
      "ResNet-18 (CIFAR stem, %lld parameters) on %s, %lld training and %lld test images, batch %lld, "
      "SGD lr %g momentum 0.9 wd 5e-4, cosine over %d epochs\n",
      (long long)wk_module_num_parameters(model, false), wk_device_str(dev, devname, sizeof devname),
      (long long)wk_dataset_len(train), (long long)wk_dataset_len(test), (long long)c.batch, c.lr, c.epochs);

  int64_t nb = wk_dataloader_len(train_dl), quarter = nb / 4 > 0 ? nb / 4 : 1;
  double *losses = calloc((size_t)(nb > 0 ? nb : 1), sizeof *losses), first_loss = 0, last_loss = 0, t_all = now();
  double test_acc = 0;
  for (int epoch = 1; epoch <= c.epochs; epoch++) {
    if (wk_dataloader_set_epoch(train_dl, epoch - 1) != WK_OK) return die("set_epoch");
    int64_t seen = 0, correct = 0, step = 0;
    double loss_sum = 0, t0 = now(), lr = wk_optim_get_lr(opt, 0);
    wk_sample b = {0};
    wk_status s;
    while ((s = wk_dataloader_next(train_dl, &b)) == WK_OK && b.n) {
      wk_scope_begin();
      wk_tensor *x = wk_to_device(b.t[0], dev), *y = wk_to_device(b.t[1], dev);
      wk_tensor *out = wk_module_forward(model, x);
      wk_tensor *loss = wk_cross_entropy(out, y);
      if (!loss || wk_optim_zero_grad(opt, true) || wk_backward(loss) || wk_optim_step(opt))
        return die("training step");
      double lv;
      int64_t hv;
      wk_no_grad_begin();
      wk_tensor *hits = wk_sum(wk_eq(wk_argmax_dim(out, 1, false), y));
      wk_no_grad_end();
      if (wk_item(loss, &lv) || wk_item_i64(hits, &hv)) return die("reading the loss");
      int64_t n = wk_tensor_size(b.t[1], 0);
      if (step < nb) losses[step] = lv;
      loss_sum += lv * (double)n;
      correct += hv;
      seen += n;
      step++;
      wk_scope_end();
      wk_sample_clear(&b);
      if (step % (tty ? 1 : 50) == 0 || step == nb) {
        double dt = now() - t0, ips = dt > 0 ? (double)seen / dt : 0;
        printf(tty ? "\r  epoch %d [%lld/%lld] loss %.4f acc %.4f  %.0f img/s  eta %.0fs   "
                   : "  epoch %d [%lld/%lld] loss %.4f acc %.4f  %.0f img/s  eta %.0fs\n",
               epoch, (long long)step, (long long)nb, loss_sum / (double)seen, (double)correct / (double)seen, ips,
               ips > 0 ? (double)(nb - step) * (double)c.batch / ips : 0);
        fflush(stdout);
      }
    }
    if (s) return die("reading a training batch");
    if (tty) printf("\n");
    if (epoch == 1) {
      for (int64_t i = 0; i < quarter && i < step; i++) first_loss += losses[i] / (double)quarter;
    }
    last_loss = 0;
    for (int64_t i = step - quarter; i < step; i++) last_loss += i >= 0 ? losses[i] / (double)quarter : 0;
    if (wk_lr_scheduler_step(sched) != WK_OK) return die("scheduler step");
    double dt = now() - t0, val_loss, val_acc;
    if (evaluate(model, test_dl, dev, &val_loss, &val_acc) != WK_OK) return die("evaluating");
    test_acc = val_acc;
    printf("Epoch %d: train loss=%.4f acc=%.4f | val loss=%.4f acc=%.4f | lr %.5f | %.0f img/s, %.1f s\n", epoch,
           loss_sum / (double)seen, (double)correct / (double)seen, val_loss, val_acc, lr, (double)seen / dt, dt);
    fflush(stdout);
  }
  printf("training loss: first %lld batches %.4f -> last %lld batches %.4f\n", (long long)quarter, first_loss,
         (long long)quarter, last_loss);
  printf("final test accuracy: %.2f%% after %d epoch%s (%.1f s)\n", 100 * test_acc, c.epochs, c.epochs == 1 ? "" : "s",
         now() - t_all);
  free(losses);
  wk_lr_scheduler_free(sched);
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
