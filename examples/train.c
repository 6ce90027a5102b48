/* The main job: trains an image classifier (Fashion-MNIST from Debian's
 * dataset-fashion-mnist by default) with the nn, optim and data plugins,
 * reporting loss, accuracy and images/s per epoch and the final test accuracy.
 * The device is a run-time value (--device), never a compile-time switch.
 *
 *   train [--model cnn|mlp|resnet18] [--dataset fashion-mnist|mnist|cifar10|cifar100|imagefolder]
 *         [--data DIR] [--epochs 3] [--batch-size 64] [--optimizer sgd|adam|adamw]
 *         [--lr 0.05] [--momentum 0.9] [--weight-decay 0] [--scheduler cosine|step|onecycle|none]
 *         [--seed 0] [--workers 0] [--limit N] [--image-size 64] [--device cpu|cuda:N]
 *         [--amp [bf16|f16]]
 *         [--out DIR] [--resume CHECKPOINT] [--stop-after EPOCH] [--ddp] [--phases]
 *         [--quantize ptq|qat] [--calib-batches 32] [--qat-epochs 1] [--qat-lr X]
 *
 * Into --out (default ./runs/fmnist) it writes last.safetensors every epoch and
 * best.safetensors when the validation accuracy improves (model, optimizer,
 * epoch, step and RNG states: --resume continues exactly where it stopped),
 * run.json (the reproducibility record), metrics.csv and a TensorBoard event
 * file. --stop-after ends the run after an epoch as a preempted job would; the
 * schedule is still the one for --epochs, so --resume continues it.
 *
 * --ddp trains with DistributedDataParallel over the world the launcher made
 * (`wick launch --nproc-per-node N train --ddp`, or `mpirun -np N`): each rank
 * reads its share of every epoch through a DistributedSampler (set_epoch each
 * epoch), --batch-size is per rank (the global batch is N times it), and rank
 * 0 alone logs, evaluates and writes the checkpoints (of the wrapped model, so
 * --resume works on any world size).
 *
 * --phases adds, after each epoch's line, where its time went per batch
 * (loading, forward, backward, optimizer step, metrics, release and logging)
 * and the time of the evaluation and checkpoint writes after it.
 *
 * --quantize ptq|qat makes the trained model int8 after the last epoch
 * (train_quant.c: post-training calibration on --calib-batches batches, or
 * --qat-epochs of quantization-aware fine-tuning) and compares it with the
 * float32 model: test accuracy, state-dict bytes, inference speed. The
 * checkpoints stay float32 ones; the int8 state dict goes to
 * model_int8.safetensors. */
#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>
#include <wick/amp.h>
#include <wick/data.h>
#include <wick/dist.h>
#include <wick/io.h>
#include <wick/nn.h>
#include <wick/onnx.h>
#include <wick/optim.h>
#include <wick/wick.h>

#include "train.h"
#include "train_data.h"
#include "train_quant.h"
#include "train_record.h"
#include "train_tb.h"

typedef train_config config;

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
  fprintf(stderr,
          "usage: train [--model cnn|mlp|resnet18] [--dataset fashion-mnist|mnist|cifar10|cifar100|imagefolder]\n"
          "             [--data DIR] [--epochs N] [--batch-size N] [--optimizer sgd|adam|adamw] [--lr X]\n"
          "             [--momentum X] [--weight-decay X] [--scheduler cosine|step|onecycle|none] [--seed N]\n"
          "             [--workers N] [--limit N] [--image-size N] [--device cpu|cuda:N] [--amp [bf16|f16]] [--out DIR]\n"
          "             [--resume CHECKPOINT] [--stop-after EPOCH] [--ddp] [--export-onnx PATH] [--phases]\n"
          "             [--channels-last] [--quantize ptq|qat] [--calib-batches N] [--qat-epochs N] [--qat-lr X]\n"
          "defaults: cnn on fashion-mnist (%s), 3 epochs, batch 64, SGD lr 0.05 momentum 0.9,\n"
          "          cosine schedule, out runs/fmnist\n"
          "--quantize: int8 after training (cnn and mlp, CPU): ptq calibrates on --calib-batches training\n"
          "          batches (32); qat fine-tunes --qat-epochs (1) at --qat-lr (a tenth of --lr); both report\n"
          "          float32 against int8 test accuracy, model size and inference speed\n",
          TRAIN_FMNIST_DIR);
  return 2;
}

static bool parse(int argc, char **argv, config *c) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) return false;
    if (!strcmp(a, "--amp")) { /* alone: bfloat16, as before f16 existed */
      c->amp = true;
      if (v && strncmp(v, "--", 2) != 0) {
        if (strcmp(v, "bf16") != 0 && strcmp(v, "f16") != 0) {
          fprintf(stderr, "train: --amp takes bf16 or f16, got '%s'\n", v);
          return false;
        }
        c->amp_f16 = !strcmp(v, "f16");
        i++;
      }
      continue;
    }
    if (!strcmp(a, "--ddp")) {
      c->ddp = true;
      continue;
    }
    if (!strcmp(a, "--phases")) {
      c->phases = true;
      continue;
    }
    if (!strcmp(a, "--channels-last")) {
      c->channels_last = true;
      continue;
    }
    if (!v) {
      fprintf(stderr, "train: option %s needs a value\n", a);
      return false;
    }
    char *end = NULL;
    if (!strcmp(a, "--model")) c->model = v;
    else if (!strcmp(a, "--dataset")) c->dataset = v;
    else if (!strcmp(a, "--optimizer")) c->optimizer = v;
    else if (!strcmp(a, "--scheduler")) c->scheduler = v;
    else if (!strcmp(a, "--weight-decay")) c->weight_decay = strtod(v, &end);
    else if (!strcmp(a, "--data")) c->data = v;
    else if (!strcmp(a, "--device")) c->device = v;
    else if (!strcmp(a, "--out")) c->out = v;
    else if (!strcmp(a, "--resume")) c->resume = v;
    else if (!strcmp(a, "--export-onnx")) c->export_onnx = v;
    else if (!strcmp(a, "--quantize")) c->quantize = v;
    else if (!strcmp(a, "--calib-batches")) c->calib_batches = strtoll(v, &end, 10);
    else if (!strcmp(a, "--qat-epochs")) c->qat_epochs = (int)strtol(v, &end, 10);
    else if (!strcmp(a, "--qat-lr")) c->qat_lr = strtod(v, &end);
    else if (!strcmp(a, "--epochs")) c->epochs = (int)strtol(v, &end, 10);
    else if (!strcmp(a, "--stop-after")) c->stop_after = (int)strtol(v, &end, 10);
    else if (!strcmp(a, "--workers")) c->workers = (int)strtol(v, &end, 10);
    else if (!strcmp(a, "--batch-size")) c->batch = strtoll(v, &end, 10);
    else if (!strcmp(a, "--limit")) c->limit = strtoll(v, &end, 10);
    else if (!strcmp(a, "--image-size")) c->image_size = strtoll(v, &end, 10);
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
  if (strcmp(c->model, "cnn") && strcmp(c->model, "mlp") && strcmp(c->model, "resnet18")) {
    fprintf(stderr, "train: unknown model '%s' (cnn, mlp or resnet18)\n", c->model);
    return false;
  }
  if (strcmp(c->optimizer, "sgd") && strcmp(c->optimizer, "adam") && strcmp(c->optimizer, "adamw")) {
    fprintf(stderr, "train: unknown optimizer '%s' (sgd, adam or adamw)\n", c->optimizer);
    return false;
  }
  if (strcmp(c->scheduler, "cosine") && strcmp(c->scheduler, "step") && strcmp(c->scheduler, "onecycle") &&
      strcmp(c->scheduler, "none")) {
    fprintf(stderr, "train: unknown scheduler '%s' (cosine, step, onecycle or none)\n", c->scheduler);
    return false;
  }
  if (c->epochs < 1 || c->batch < 1 || c->workers < 0 || c->lr <= 0 || c->limit < 0 || c->weight_decay < 0 ||
      c->momentum < 0 || c->stop_after < 0 || c->image_size < 8 || c->image_size > 4096) {
    fprintf(stderr, "train: epochs, batch size and lr must be positive; workers, limit, momentum and weight decay "
                    "not negative; --image-size in [8, 4096]\n");
    return false;
  }
  if (c->quantize && strcmp(c->quantize, "ptq") && strcmp(c->quantize, "qat")) {
    fprintf(stderr, "train: unknown --quantize '%s' (ptq or qat)\n", c->quantize);
    return false;
  }
  if (c->calib_batches < 1 || c->qat_epochs < 1 || c->qat_lr < 0) {
    fprintf(stderr, "train: --calib-batches and --qat-epochs must be positive, --qat-lr not negative\n");
    return false;
  }
  if (c->qat_lr == 0) c->qat_lr = c->lr / 10;
  if (c->stop_after > c->epochs) c->stop_after = 0;
  return true;
}

/* The model for the data's geometry: cnn (LeNet-style, 1x28x28 only), an MLP
 * over the flattened image, or torchvision's ResNet-18 (CIFAR stem below 64 px). */
static wk_module *build_model(const config *c, const train_data *d) {
  if (!strcmp(c->model, "cnn")) {
    if (d->channels != 1 || d->height != 28 || d->width != 28) {
      wk_error(WK_ERR_INVALID_ARG, "--model cnn takes 1x28x28 images, --dataset %s gives %lldx%lldx%lld (try resnet18)",
               c->dataset, (long long)d->channels, (long long)d->height, (long long)d->width);
      return NULL;
    }
    return wk_nn_lenet();
  }
  if (!strcmp(c->model, "resnet18"))
    return wk_nn_resnet18((wk_resnet_opts){.num_classes = d->classes, .cifar_stem = d->height < 64});
  const int64_t hidden[1] = {256};
  wk_module *mods[2] = {wk_nn_flatten(1, -1), wk_nn_mlp(d->channels * d->height * d->width, hidden, 1, d->classes)};
  wk_module *m = mods[0] && mods[1] ? wk_nn_sequential(mods, 2) : NULL;
  if (!m) {
    wk_module_release(mods[0]);
    wk_module_release(mods[1]);
  }
  return m;
}

/* The trained model (eval mode) as ONNX at c->export_onnx: input "input" [batch, C, H, W]
 * with a dynamic batch, output "logits", initializers named by state_dict keys. */
static wk_status export_onnx(const config *c, wk_module *model, const train_data *d, wk_device dev) {
  int64_t shape[4] = {1, d->channels, d->height, d->width};
  wk_tensor *x = wk_zeros(shape, 4, (wk_options){.device = dev});
  if (!x) return wk_last_error();
  wk_status st = wk_module_train(model, false);
  if (!st)
    st = wk_onnx_export(model, &x, 1, c->export_onnx,
                        WK_ONNX_EXPORT_OPTS(.input_names = (const char *[]){"input"}, .ninput_names = 1,
                                            .output_names = (const char *[]){"logits"}, .noutput_names = 1,
                                            .dynamic_axes = (wk_onnx_dynamic_axis[]){{"input", 0, "batch"}},
                                            .ndynamic_axes = 1, .doc_string = c->model));
  wk_release(x);
  if (!st) printf("ONNX model (opset %d, dynamic batch) written to %s\n", WK_ONNX_DEFAULT_OPSET, c->export_onnx);
  return st;
}

static wk_optimizer *build_optimizer(const config *c, wk_tensor *const *params, int np) {
  if (!strcmp(c->optimizer, "sgd"))
    return wk_optim_sgd(params, np, (wk_sgd_opts){.lr = c->lr, .momentum = c->momentum, .weight_decay = c->weight_decay});
  /* AdamW's 0 means its default 1e-2; an explicit 0 must stay 0. */
  double wd = c->weight_decay == 0 ? WK_OPTIM_ZERO : c->weight_decay;
  wk_adam_opts o = {.lr = c->lr, .weight_decay = wd};
  return !strcmp(c->optimizer, "adam") ? wk_optim_adam(params, np, o) : wk_optim_adamw(params, np, o);
}

/* Epoch-wise cosine annealing to 0 or step decay (x0.1 at 2/3 of the run), or
 * OneCycle stepped per batch; NULL (and no error) for none. */
static wk_lr_scheduler *build_scheduler(const config *c, wk_optimizer *opt, int64_t steps_per_epoch, bool *per_batch) {
  *per_batch = false;
  if (!strcmp(c->scheduler, "cosine")) return wk_lr_cosine_annealing(opt, (wk_cosine_annealing_lr_opts){.T_max = c->epochs});
  if (!strcmp(c->scheduler, "step")) {
    int64_t at = c->epochs * 2 / 3;
    return wk_lr_step(opt, (wk_step_lr_opts){.step_size = at > 0 ? at : 1});
  }
  if (!strcmp(c->scheduler, "onecycle")) {
    *per_batch = true;
    return wk_lr_one_cycle(opt, (wk_one_cycle_lr_opts){.max_lr = c->lr, .epochs = c->epochs,
                                                        .steps_per_epoch = steps_per_epoch,
                                                        /* plain SGD has no momentum to cycle */
                                                        .no_cycle_momentum = !strcmp(c->optimizer, "sgd") &&
                                                                             c->momentum == 0});
  }
  return NULL;
}

/* Loss and accuracy over a loader (no_grad, eval mode). */
/* --amp [bf16|f16]: forward and loss in an autocast region; backward runs
 * outside it, as in PyTorch. bfloat16 needs no gradient scaling; float16's
 * small gradients underflow, so --amp f16 trains through a GradScaler
 * (scaled loss, unscaled gradients, steps skipped on inf/NaN, its state in
 * the checkpoints' "scaler" part). */
static wk_dtype g_amp_dtype = WK_BF16;
static wk_grad_scaler *g_scaler; /* --amp f16 */
static bool g_channels_last;      /* --channels-last: images go in NHWC order too */
static wk_status amp_begin(bool amp, wk_device dev) {
  return amp ? wk_autocast_begin(wk_device_type_name(dev.type), g_amp_dtype) : WK_OK;
}
static wk_status amp_end(bool amp, wk_device dev) {
  return amp ? wk_autocast_end(wk_device_type_name(dev.type)) : WK_OK;
}

static wk_status evaluate(wk_module *model, wk_dataloader *dl, wk_device dev, bool amp, double *loss, double *acc) {
  wk_module_train(model, false);
  wk_no_grad_begin();
  double total_loss = 0;
  int64_t correct = 0, seen = 0;
  wk_status s = WK_OK;
  wk_sample b = {0};
  while (!s && (s = wk_dataloader_next(dl, &b)) == WK_OK && b.n) {
    wk_scope_begin();
    wk_tensor *x = wk_to_device(b.t[0], dev), *y = wk_to_device(b.t[1], dev);
    if (g_channels_last && x && wk_tensor_dim(x) == 4) x = wk_contiguous_format(x, WK_CHANNELS_LAST);
    wk_tensor *out = NULL, *l = NULL;
    if (amp_begin(amp, dev) == WK_OK) {
      out = wk_module_forward(model, x);
      l = wk_cross_entropy_ex(out, y, NULL, WK_REDUCTION_SUM, -100, 0);
      if (amp_end(amp, dev) != WK_OK) l = NULL;
    }
    wk_tensor *hits = wk_sum(wk_eq(wk_argmax_dim(out, 1, false), y));
    double lv;
    int64_t hv;
    if (!l || wk_item(l, &lv) || wk_item_i64(hits, &hv)) {
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

/* mkdir -p. */
static bool make_dirs(const char *path) {
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *p = buf + 1;; p++) {
    if (*p == '/' || !*p) {
      char ch = *p;
      *p = 0;
      if (mkdir(buf, 0777) != 0 && errno != EEXIST) return false;
      *p = ch;
      if (!ch) return true;
    }
  }
}

/* Saves model + optimizer + epoch/step + the generators' states (current) +
 * the best accuracy so far to path, atomically (the io service). */
static wk_status save_checkpoint(const char *path, const config *c, wk_module *model, wk_optimizer *opt,
                                 wk_lr_scheduler *sched, int epoch, int64_t step, double best_acc, int best_epoch) {
  wk_state_dict *msd = wk_module_state_dict(model), *osd = wk_optim_state_dict(opt), *meta = wk_state_dict_new();
  wk_state_dict *ssd = sched ? wk_lr_scheduler_state_dict(sched) : NULL;
  wk_status s = msd && osd && meta && (!sched || ssd) ? WK_OK : wk_last_error();
  char num[64];
  wk_checkpoint ck = WK_CHECKPOINT_INIT;
  if (!s) s = wk_state_dict_set_meta(meta, "model", c->model);
  snprintf(num, sizeof num, "%.17g", best_acc);
  if (!s) s = wk_state_dict_set_meta(meta, "best_acc", num);
  snprintf(num, sizeof num, "%d", best_epoch);
  if (!s) s = wk_state_dict_set_meta(meta, "best_epoch", num);
  snprintf(num, sizeof num, "%llu", (unsigned long long)c->seed);
  if (!s) s = wk_state_dict_set_meta(meta, "seed", num);
  if (!s) s = wk_checkpoint_add(&ck, "model", msd);
  if (!s) s = wk_checkpoint_add(&ck, "optim", osd);
  if (!s && ssd) s = wk_checkpoint_add(&ck, "sched", ssd);
  wk_state_dict *gsd = !s && g_scaler ? wk_grad_scaler_state_dict(g_scaler) : NULL;
  if (!s && g_scaler) s = gsd ? wk_checkpoint_add(&ck, "scaler", gsd) : wk_last_error();
  if (!s) s = wk_state_dict_set_meta(meta, "scheduler", c->scheduler);
  ck.epoch = epoch;
  ck.step = step;
  ck.meta = meta;
  if (!s) s = wk_checkpoint_save(path, &ck);
  wk_state_dict_free(msd);
  wk_state_dict_free(osd);
  wk_state_dict_free(ssd);
  wk_state_dict_free(gsd);
  wk_state_dict_free(meta);
  return s;
}

/* Restores model, optimizer and the generators from a checkpoint; returns the
 * last completed epoch (-1 on error). */
static int load_checkpoint(const config *c, wk_module *model, wk_optimizer *opt, wk_lr_scheduler *sched,
                           int64_t *step, double *best_acc, int *best_epoch) {
  wk_checkpoint ck = WK_CHECKPOINT_INIT;
  if (wk_checkpoint_load(c->resume, &ck, NULL) != WK_OK) return -1;
  wk_state_dict *msd = wk_checkpoint_part(&ck, "model"), *osd = wk_checkpoint_part(&ck, "optim");
  wk_state_dict *ssd = wk_checkpoint_part(&ck, "sched");
  wk_state_dict *gsd = wk_checkpoint_part(&ck, "scaler"); /* --amp f16 runs; absent: a fresh scaler */
  const char *name = ck.meta ? wk_state_dict_get_meta(ck.meta, "model") : NULL;
  const char *sname = ck.meta ? wk_state_dict_get_meta(ck.meta, "scheduler") : NULL;
  int epoch = -1;
  if (!msd || !osd) {
    wk_error(WK_ERR_IO, "%s: not a checkpoint of examples/train (no model or optim part)", c->resume);
  } else if (name && strcmp(name, c->model)) {
    wk_error(WK_ERR_INVALID_ARG, "%s holds a '%s' model, not '%s' (see --model)", c->resume, name, c->model);
  } else if (strcmp(sname ? sname : "none", c->scheduler)) {
    wk_error(WK_ERR_INVALID_ARG, "%s was trained with scheduler '%s', not '%s' (see --scheduler)", c->resume,
             sname ? sname : "none", c->scheduler);
  } else if (wk_module_load_state_dict(model, msd, true, NULL) == WK_OK && wk_optim_load_state_dict(opt, osd) == WK_OK &&
             (!sched || !ssd || wk_lr_scheduler_load_state_dict(sched, ssd) == WK_OK) &&
             (!g_scaler || !gsd || wk_grad_scaler_load_state_dict(g_scaler, gsd) == WK_OK)) {
    const char *b = ck.meta ? wk_state_dict_get_meta(ck.meta, "best_acc") : NULL;
    const char *be = ck.meta ? wk_state_dict_get_meta(ck.meta, "best_epoch") : NULL;
    *best_acc = b ? strtod(b, NULL) : -1;
    *best_epoch = be ? atoi(be) : 0;
    *step = ck.step;
    epoch = (int)ck.epoch;
  }
  wk_checkpoint_clear(&ck);
  return epoch;
}

int main(int argc, char **argv) {
  config c = {.model = "cnn", .dataset = "fashion-mnist", .device = "cpu", .out = "runs/fmnist",
              .optimizer = "sgd", .scheduler = "cosine", .epochs = 3, .batch = 64, .lr = 0.05, .momentum = 0.9,
              .image_size = 64, .calib_batches = 32, .qat_epochs = 1};
  if (!parse(argc, argv, &c)) return usage();
#ifdef __GLIBC__
  /* Every batch frees and allocates again the same activation and gradient
   * buffers (6.4 MB for the CNN's first conv at batch 64). Above glibc's
   * mmap threshold each one is a fresh mapping, and heap tops above the trim
   * threshold go back to the kernel: either way first touches fault in zeroed
   * pages again every batch (~1,300 faults a CNN step, 5-8% of its CPU time).
   * Kept in the heap, the buffers are reused; the peak stays the peak. */
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
#endif
  if (wk_init() != WK_OK) return die("wk_init");
  wk_device dev;
  if (wk_device_parse(c.device, &dev) != WK_OK) return die("--device");
  if (!train_quant_check(&c, dev.type == WK_DEVICE_CPU)) return 2;
  if (dev.type != WK_DEVICE_CPU && dev.index >= wk_device_count(dev.type)) {
    const char *why = wk_device_type_status(dev.type);
    fprintf(stderr, "train: --device %s: not available (%d %s device%s%s%s)\n", c.device, wk_device_count(dev.type),
            wk_device_type_name(dev.type), wk_device_count(dev.type) == 1 ? "" : "s", why && *why ? ": " : "",
            why ? why : "");
    return 1;
  }
  if (c.amp && !wk_service_get(WK_AMP_SERVICE, WK_AMP_API_VERSION))
    return die("--amp (mixed precision comes with the amp plugin)");
  g_amp_dtype = c.amp_f16 ? WK_F16 : WK_BF16;
  wk_manual_seed(c.seed);
  /* --ddp: the world the launcher made; rank 0 (lead) alone logs and writes. */
  wk_dist_group *world = NULL;
  int rank = 0, world_size = 1;
  if (c.ddp) {
    if (!(world = wk_dist_init(NULL))) return die("--ddp (joining the world)");
    rank = wk_dist_rank(world);
    world_size = wk_dist_size(world);
    if (!wk_ddp_api_get()) return die("--ddp (DistributedDataParallel comes with the ddp plugin)");
  }
  bool lead = rank == 0;
  if (!lead && !freopen("/dev/null", "w", stdout)) return die("--ddp (silencing rank > 0)");
  bool tty = isatty(STDOUT_FILENO);
  if (lead && !make_dirs(c.out)) {
    fprintf(stderr, "train: cannot create --out %s: %s\n", c.out, strerror(errno));
    return 1;
  }

  train_data data;
  if (!train_data_load(&c, &data)) {
    if (!strcmp(c.dataset, "fashion-mnist") && !c.data)
      return die("loading Fashion-MNIST (is dataset-fashion-mnist installed? see --data)");
    return die("loading the data");
  }
  wk_dataset *train = data.train, *test = data.test;
  /* Under --ddp each rank reads its share of every epoch (PyTorch's DistributedSampler, shuffled by seed and epoch). */
  wk_sampler *dsampler =
      c.ddp ? wk_sampler_distributed(wk_dataset_len(train), world_size, rank, true, c.seed, false) : NULL;
  if (c.ddp && !dsampler) return die("--ddp (the distributed sampler)");
  wk_dataloader *train_dl = wk_dataloader_new(train, WK_LOADER_OPTS(.batch_size = c.batch, .shuffle = !c.ddp,
                                                                    .sampler = dsampler, .num_workers = c.workers,
                                                                    .seed = c.seed));
  wk_dataloader *test_dl = wk_dataloader_new(test, WK_LOADER_OPTS(.batch_size = 500, .num_workers = c.workers));
  if (!train_dl || !test_dl) return die("creating the data loaders");

  wk_module *model = build_model(&c, &data);
  if (!model || wk_module_to(model, dev, WK_DTYPE_DEFAULT) != WK_OK) return die("building the model");
  g_channels_last = c.channels_last;
  if (c.channels_last && wk_module_to_memory_format(model, WK_CHANNELS_LAST) != WK_OK) return die("--channels-last");
  int np = wk_module_named_parameters(model, NULL, NULL, 0);
  wk_tensor **params = calloc((size_t)np, sizeof *params);
  wk_module_named_parameters(model, NULL, params, np);
  wk_optimizer *opt = build_optimizer(&c, params, np);
  if (!opt) return die("creating the optimizer");
  if (c.amp && c.amp_f16 && !(g_scaler = wk_grad_scaler_new((wk_grad_scaler_opts){0})))
    return die("--amp f16 (creating the GradScaler)");
  bool sched_per_batch;
  wk_lr_scheduler *sched = build_scheduler(&c, opt, wk_dataloader_len(train_dl), &sched_per_batch);
  if (!sched && strcmp(c.scheduler, "none")) return die("creating the scheduler");

  /* DDP: rank 0's parameters and buffers everywhere, gradients averaged in buckets during backward. */
  wk_module *net = model;
  if (c.ddp && !(net = wk_ddp_wrap(model, world, NULL))) return die("--ddp (wrapping the model)");
  int start_epoch = 1, best_epoch = 0;
  int64_t gstep = 0;
  double best_acc = -1;
  if (c.resume) {
    int done = load_checkpoint(&c, model, opt, sched, &gstep, &best_acc, &best_epoch);
    if (done < 0) return die("--resume");
    start_epoch = done + 1;
    printf("resumed from %s after epoch %d (step %lld, best val acc %.4f at epoch %d)\n", c.resume, done,
           (long long)gstep, best_acc, best_epoch);
  }

  char devname[32], path[1100];
  wk_device_str(dev, devname, sizeof devname);
  char optdesc[96];
  if (!strcmp(c.optimizer, "sgd")) snprintf(optdesc, sizeof optdesc, "SGD lr %g momentum %g", c.lr, c.momentum);
  else snprintf(optdesc, sizeof optdesc, "%s lr %g", !strcmp(c.optimizer, "adam") ? "Adam" : "AdamW", c.lr);
  printf("model %s (%lld parameters) on %s, %s: %lld training and %lld test images, batch %lld, %s, weight decay %g, "
         "scheduler %s%s\n",
         c.model, (long long)wk_module_num_parameters(model, false), devname, c.dataset,
         (long long)wk_dataset_len(train), (long long)wk_dataset_len(test), (long long)c.batch, optdesc,
         c.weight_decay, c.scheduler, !c.amp         ? ""
         : c.amp_f16 ? ", mixed precision (autocast f16, GradScaler)"
                     : ", mixed precision (autocast bf16)");
  if (c.ddp)
    printf("DistributedDataParallel over %d processes (%s backend): batch %lld per rank, global batch %lld\n",
           world_size, world->api->backend, (long long)c.batch, (long long)c.batch * world_size);

  /* The reproducibility record, metrics.csv (appended to on resume) and the TensorBoard events. */
  snprintf(path, sizeof path, "%s/run.json", c.out);
  if (lead && !record_write(path, &c, devname, &data, start_epoch, wk_module_num_parameters(model, false)))
    fprintf(stderr, "train: warning: cannot write %s: %s\n", path, strerror(errno));
  snprintf(path, sizeof path, "%s/metrics.csv", c.out);
  bool append = c.resume && access(path, F_OK) == 0;
  FILE *csv = lead ? fopen(path, append ? "a" : "w") : NULL;
  if (lead && !csv) fprintf(stderr, "train: warning: cannot write %s: %s\n", path, strerror(errno));
  else if (csv && !append) fprintf(csv, "epoch,train_loss,train_acc,val_loss,val_acc,lr,img_per_s\n");
  tb_writer tb = {0};
  if (lead && !tb_open(&tb, c.out)) fprintf(stderr, "train: warning: cannot write a TensorBoard event file in %s\n", c.out);

  double test_acc = 0, t_all = now();
  int last_epoch = start_epoch - 1;
  for (int epoch = start_epoch; epoch <= c.epochs; epoch++) {
    if (wk_dataloader_set_epoch(train_dl, epoch - 1) != WK_OK) return die("set_epoch");
    int64_t nbatches = wk_dataloader_len(train_dl), seen = 0, correct = 0, step = 0;
    double loss_sum = 0, t0 = now(), lr = wk_optim_get_lr(opt, 0);
    /* --phases: seconds spent in each part of the loop (a clock read between parts, ~20 ns each) */
    enum { PH_DATA, PH_FORWARD, PH_BACKWARD, PH_STEP, PH_METRICS, PH_REST, PH_N };
    double ph[PH_N] = {0}, tp = t0, tq;
#define PHASE(i) (tq = now(), ph[i] += tq - tp, tp = tq)
    wk_sample b = {0};
    wk_status s;
    while ((s = wk_dataloader_next(train_dl, &b)) == WK_OK && b.n) {
      wk_scope_begin();
      wk_tensor *x = wk_to_device(b.t[0], dev), *y = wk_to_device(b.t[1], dev);
      if (c.channels_last && x && wk_tensor_dim(x) == 4) x = wk_contiguous_format(x, WK_CHANNELS_LAST);
      PHASE(PH_DATA);
      if (amp_begin(c.amp, dev)) return die("--amp");
      wk_tensor *out = wk_module_forward(net, x);
      wk_tensor *loss = wk_cross_entropy(out, y);
      if (amp_end(c.amp, dev)) return die("--amp");
      PHASE(PH_FORWARD);
      if (!loss || wk_optim_zero_grad(opt, true)) return die("training step");
      if (g_scaler ? wk_backward(wk_grad_scaler_scale(g_scaler, loss)) : wk_backward(loss)) return die("training step");
      PHASE(PH_BACKWARD);
      if (g_scaler ? wk_grad_scaler_step(g_scaler, opt, NULL) || wk_grad_scaler_update(g_scaler) : wk_optim_step(opt))
        return die("training step");
      if (sched_per_batch && wk_lr_scheduler_step(sched)) return die("scheduler step");
      PHASE(PH_STEP);
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
      gstep++;
      PHASE(PH_METRICS);
      wk_scope_end();
      wk_sample_clear(&b);
      if (gstep % 20 == 0) tb_scalar(&tb, "batch/loss", gstep, lv);
      if (step % (tty ? 10 : 200) == 0 || step == nbatches) {
        double dt = now() - t0, ips = dt > 0 ? (double)seen * world_size / dt : 0;
        double eta = ips > 0 ? (double)(nbatches - step) * (double)c.batch / ips : 0;
        printf(tty ? "\r  epoch %d [%lld/%lld] loss %.4f acc %.4f  %.0f img/s  eta %.0fs   "
                   : "  epoch %d [%lld/%lld] loss %.4f acc %.4f  %.0f img/s  eta %.0fs\n",
               epoch, (long long)step, (long long)nbatches, loss_sum / (double)seen, (double)correct / (double)seen,
               ips, eta);
        fflush(stdout);
      }
      PHASE(PH_REST);
    }
#undef PHASE
    if (s) return die("reading a training batch");
    if (tty) printf("\n");
    double epoch_s = now() - t0, val_loss = 0, val_acc = 0;
    if (c.ddp) { /* the epoch's training figures over every rank's share */
      double sums[3] = {loss_sum, (double)correct, (double)seen};
      wk_tensor *t = wk_tensor_from_data(sums, WK_F64, WK_SHAPE(3));
      if (!t || wk_dist_all_reduce(world, t, WK_REDUCE_SUM) != WK_OK) return die("--ddp (summing the epoch's figures)");
      const double *v = wk_tensor_data(t);
      loss_sum = v[0], correct = (int64_t)v[1], seen = (int64_t)v[2];
      wk_release(t);
    }
    double t_eval = now();
    if (lead && evaluate(model, test_dl, dev, c.amp, &val_loss, &val_acc) != WK_OK) return die("evaluating");
    t_eval = now() - t_eval;
    test_acc = val_acc;
    double train_loss = loss_sum / (double)seen, train_acc = (double)correct / (double)seen;
    double ips = epoch_s > 0 ? (double)seen / epoch_s : 0;
    if (sched && !sched_per_batch && wk_lr_scheduler_step(sched)) return die("scheduler step");
    printf("Epoch %d: train loss=%.4f acc=%.4f | val loss=%.4f acc=%.4f | %.0f img/s, %.1f s\n", epoch, train_loss,
           train_acc, val_loss, val_acc, ips, epoch_s);
    fflush(stdout);

    bool improved = val_acc > best_acc;
    if (improved) {
      best_acc = val_acc;
      best_epoch = epoch;
    }
    double t_save = now();
    snprintf(path, sizeof path, "%s/last.safetensors", c.out);
    if (lead && save_checkpoint(path, &c, model, opt, sched, epoch, gstep, best_acc, best_epoch) != WK_OK) return die(path);
    if (improved && lead) {
      snprintf(path, sizeof path, "%s/best.safetensors", c.out);
      if (save_checkpoint(path, &c, model, opt, sched, epoch, gstep, best_acc, best_epoch) != WK_OK) return die(path);
    }
    if (csv) {
      fprintf(csv, "%d,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g\n", epoch, train_loss, train_acc, val_loss, val_acc, lr, ips);
      fflush(csv);
    }
    tb_scalar(&tb, "train/loss", epoch, train_loss);
    tb_scalar(&tb, "train/accuracy", epoch, train_acc);
    tb_scalar(&tb, "val/loss", epoch, val_loss);
    tb_scalar(&tb, "val/accuracy", epoch, val_acc);
    tb_scalar(&tb, "lr", epoch, lr);
    tb_scalar(&tb, "throughput/img_per_s", epoch, ips);
    tb_flush(&tb);
    if (c.phases && step > 0) {
      double ms = 1e3 / (double)step;
      printf("  phases, ms per batch: data %.3f, forward+loss %.3f, backward %.3f, optimizer step %.3f, metrics "
             "%.3f, release+logging %.3f (sum %.3f); evaluation %.1f ms, checkpoints+logs %.1f ms\n",
             ph[PH_DATA] * ms, ph[PH_FORWARD] * ms, ph[PH_BACKWARD] * ms, ph[PH_STEP] * ms, ph[PH_METRICS] * ms,
             ph[PH_REST] * ms, (ph[PH_DATA] + ph[PH_FORWARD] + ph[PH_BACKWARD] + ph[PH_STEP] + ph[PH_METRICS] + ph[PH_REST]) * ms,
             t_eval * 1e3, (now() - t_save) * 1e3);
      fflush(stdout);
    }
    last_epoch = epoch;
    if (epoch == c.stop_after) {
      printf("stopping after epoch %d of %d (--stop-after): continue with --resume %s/last.safetensors\n", epoch,
             c.epochs, c.out);
      break;
    }
  }
  if (start_epoch > c.epochs && lead) {
    double val_loss;
    if (evaluate(model, test_dl, dev, c.amp, &val_loss, &test_acc) != WK_OK) return die("evaluating");
  }
  printf("final test accuracy: %.2f%% after %d epoch%s (%.1f s)\n", 100 * test_acc, last_epoch,
         last_epoch == 1 ? "" : "s", now() - t_all);
  printf("checkpoints, run.json, metrics.csv and TensorBoard events in %s (best val acc %.4f at epoch %d)\n", c.out,
         best_acc, best_epoch);
  if (c.export_onnx && lead && export_onnx(&c, model, &data, dev) != WK_OK) return die("--export-onnx");
  if (c.quantize && last_epoch < c.epochs)
    printf("--quantize %s: skipped, the run stopped before its last epoch (--resume it to the end)\n", c.quantize);
  else if (c.quantize && train_quantize(&c, model, train_dl, test_dl) != WK_OK)
    return die("--quantize");
  if (csv) fclose(csv);
  tb_close(&tb);
  wk_grad_scaler_free(g_scaler);
  wk_lr_scheduler_free(sched);
  wk_optimizer_free(opt);
  free(params);
  if (net != model) wk_module_release(net);
  wk_module_release(model);
  wk_sampler_free(dsampler);
  wk_dataloader_free(train_dl);
  wk_dataloader_free(test_dl);
  train_data_free(&data);
  wk_shutdown();
  return 0;
}
