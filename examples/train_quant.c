/* examples/train --quantize: post-training quantization (fuse, x86 qconfig,
 * calibrate, convert) or quantization-aware fine-tuning (fuse, prepare_qat,
 * train through FakeQuantize, freeze the observers, convert) of the trained
 * model, then float32 against int8: test accuracy, state-dict bytes and
 * inference speed, measured in the same run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <wick/io.h>
#include <wick/nn.h>
#include <wick/optim.h>
#include <wick/quant.h>
#include <wick/wick.h>

#include "train_quant.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

bool train_quant_check(const train_config *c, bool cpu) {
  if (!c->quantize) return true;
  const char *why = NULL;
  char buf[160];
  if (strcmp(c->model, "cnn") && strcmp(c->model, "mlp")) {
    snprintf(buf, sizeof buf, "supports --model cnn and mlp, not %s", c->model);
    why = buf;
  } else if (!cpu) {
    snprintf(buf, sizeof buf, "runs on the CPU only (the int8 kernels are CPU ones), not --device %s", c->device);
    why = buf;
  } else if (c->ddp) {
    why = "does not take --ddp (quantize a single-process run)";
  } else if (c->channels_last) {
    why = "does not take --channels-last";
  }
  if (why) {
    fprintf(stderr, "train: --quantize %s %s\n", c->quantize, why);
    return false;
  }
  if (!wk_quant_api_get()) {
    fprintf(stderr, "train: --quantize: int8 comes with the quant plugin, which is not loaded: %s\n",
            wk_last_error_message());
    return false;
  }
  return true;
}

/* ---- QuantWrapper: quant -> module -> dequant (torch.ao.quantization.QuantWrapper) ---- */
static wk_tensor *wrapper_forward(wk_module *self, wk_tensor *const *in, int n) {
  if (n != 1 || !in || !in[0]) {
    wk_error(WK_ERR_INVALID_ARG, "QuantWrapper.forward() takes one input, got %d", n);
    return NULL;
  }
  wk_scope_begin();
  wk_tensor *x = wk_module_forward(wk_module_child(self, "quant"), in[0]);
  if (x) x = wk_module_forward(wk_module_child(self, "module"), x);
  if (x) x = wk_module_forward(wk_module_child(self, "dequant"), x);
  if (x) wk_scope_escape(x);
  wk_scope_end();
  return x;
}
static const wk_module_class QUANT_WRAPPER = {sizeof(wk_module_class), "QuantWrapper", wrapper_forward, NULL, NULL};

/* A new wrapper holding model (retained) as its child "module", as PyTorch's
 * QuantWrapper: the float model's keys stay as they were under "module.". */
static wk_module *quant_wrap(wk_module *model) {
  wk_module *w = wk_module_new(&QUANT_WRAPPER, NULL), *q = wk_quant_stub(), *dq = wk_quant_dequant_stub();
  if (!w || !q || !dq || wk_module_register_child(w, "quant", q) || wk_module_register_child(w, "dequant", dq) ||
      wk_module_register_child(w, "module", model)) {
    wk_module_release(w);
    w = NULL;
  }
  wk_module_release(q);
  wk_module_release(dq);
  return w;
}

/* Fuses, below m (at `path` in root), every run of siblings fuse_modules
 * takes: Conv2d+BatchNorm2d[+ReLU], Conv2d+ReLU, Linear+ReLU. Counts the groups. */
static wk_status fuse_all(wk_module *root, wk_module *m, const char *path, int *groups) {
  const char *names[256], *cls[256];
  wk_module *kids[256];
  int nk = wk_module_named_children(m, names, kids, 256);
  if (nk > 256) return wk_error(WK_ERR_UNSUPPORTED, "--quantize: %s has more than 256 children", path);
  for (int i = 0; i < nk; i++) cls[i] = wk_module_class_name(kids[i]);
#define IS(i, name) ((i) < nk && !strcmp(cls[i], name))
  for (int i = 0; i < nk;) {
    int len = 0;
    if (IS(i, "Conv2d") && IS(i + 1, "BatchNorm2d"))
      len = IS(i + 2, "ReLU") ? 3 : 2;
    else if ((IS(i, "Conv2d") || IS(i, "Linear")) && IS(i + 1, "ReLU"))
      len = 2;
    char full[3][512];
    for (int k = 0; k < (len ? len : 1); k++)
      snprintf(full[k], sizeof full[k], "%s%s%s", path, *path ? "." : "", names[i + k]);
    wk_status st;
    if (len) {
      st = wk_quant_fuse(root, (const char *const[]){full[0], full[1], full[2]}, len);
      (*groups)++;
    } else {
      st = fuse_all(root, kids[i], full[0], groups);
    }
    if (st) return st;
    i += len ? len : 1;
  }
#undef IS
  return WK_OK;
}

/* Accuracy over dl (eval mode, no_grad) and the time spent in forward alone. */
static wk_status measure(wk_module *m, wk_dataloader *dl, double *acc, double *forward_s, int64_t *batches,
                         int64_t *images) {
  wk_status s = wk_module_train(m, false);
  wk_no_grad_begin();
  int64_t correct = 0, seen = 0, nb = 0;
  double fwd = 0;
  wk_sample b = {0};
  while (!s && (s = wk_dataloader_next(dl, &b)) == WK_OK && b.n) {
    wk_scope_begin();
    double t0 = now();
    wk_tensor *out = wk_module_forward(m, b.t[0]);
    fwd += now() - t0;
    int64_t hv;
    if (!out || wk_item_i64(wk_sum(wk_eq(wk_argmax_dim(out, 1, false), b.t[1])), &hv)) {
      s = wk_last_error();
    } else {
      correct += hv;
      seen += wk_tensor_size(b.t[1], 0);
      nb++;
    }
    wk_scope_end();
    wk_sample_clear(&b);
  }
  wk_no_grad_end();
  if (s) return s;
  *acc = seen ? (double)correct / (double)seen : 0;
  *forward_s = fwd;
  *batches = nb;
  *images = seen;
  return WK_OK;
}

typedef struct {
  double acc, forward_s; /* forward_s: the faster of two passes over the test set */
  int64_t batches, images, tensor_bytes, file_bytes;
} model_figures;

/* Accuracy and speed of m: two passes (the first also warms the allocator and caches). */
static wk_status measure_best(wk_module *m, wk_dataloader *dl, model_figures *f) {
  double acc2, t2;
  int64_t nb2, ni2;
  wk_status s = measure(m, dl, &f->acc, &f->forward_s, &f->batches, &f->images);
  if (!s) s = measure(m, dl, &acc2, &t2, &nb2, &ni2);
  if (!s && t2 < f->forward_s) f->forward_s = t2;
  return s;
}

/* Bytes of every tensor's elements in sd (quantized ones at 1 byte each). */
static int64_t tensor_bytes(const wk_state_dict *sd) {
  int64_t n = 0;
  for (int i = 0; i < wk_state_dict_size(sd); i++) {
    const wk_tensor *t = wk_state_dict_value(sd, i);
    n += wk_tensor_numel(t) * (int64_t)wk_dtype_size(wk_tensor_dtype(t));
  }
  return n;
}

/* m's state dict (packed when quantized) saved to c->out/name; its tensor and file bytes into f. */
static wk_status save_model(const train_config *c, wk_module *m, const char *name, bool quantized, model_figures *f) {
  char path[1100];
  snprintf(path, sizeof path, "%s/%s", c->out, name);
  wk_state_dict *sd = wk_module_state_dict(m), *out = sd && quantized ? wk_quant_state_dict_pack(sd) : sd;
  wk_status s = out ? wk_save_safetensors(out, path) : wk_last_error();
  struct stat st;
  if (!s && stat(path, &st) != 0) s = wk_error(WK_ERR_IO, "--quantize: cannot stat %s", path);
  if (!s) {
    f->tensor_bytes = tensor_bytes(out);
    f->file_bytes = (int64_t)st.st_size;
  }
  if (out != sd) wk_state_dict_free(out);
  wk_state_dict_free(sd);
  return s;
}

/* Fake-quantized fine-tuning of the prepared wrapper for c->qat_epochs epochs
 * at c->qat_lr (SGD with the run's momentum and weight decay); the observers
 * are frozen for the last third of the batches, so the q-params convert uses
 * are those the last weights were trained with. */
static wk_status qat_finetune(const train_config *c, wk_module *w, wk_dataloader *train_dl) {
  int np = wk_module_named_parameters(w, NULL, NULL, 0);
  wk_tensor **params = calloc((size_t)(np ? np : 1), sizeof *params);
  if (!params) return wk_error(WK_ERR_NO_MEMORY, "--quantize qat: out of memory");
  wk_module_named_parameters(w, NULL, params, np);
  wk_optimizer *opt = wk_optim_sgd(
      params, np, (wk_sgd_opts){.lr = c->qat_lr, .momentum = c->momentum, .weight_decay = c->weight_decay});
  free(params);
  if (!opt) return wk_last_error();
  int64_t per_epoch = wk_dataloader_len(train_dl), total = per_epoch * c->qat_epochs, freeze_at = total * 2 / 3,
          step = 0;
  wk_status s = wk_module_train(w, true);
  for (int e = 1; !s && e <= c->qat_epochs; e++) {
    s = wk_dataloader_set_epoch(train_dl, c->epochs + e - 1);
    double loss_sum = 0, t0 = now();
    int64_t seen = 0, correct = 0;
    wk_sample b = {0};
    while (!s && (s = wk_dataloader_next(train_dl, &b)) == WK_OK && b.n) {
      if (step == freeze_at) {
        s = wk_quant_set_qat(w, false, -1);
        printf("  QAT: observers frozen after %lld of %lld batches\n", (long long)step, (long long)total);
      }
      wk_scope_begin();
      wk_tensor *out = s ? NULL : wk_module_forward(w, b.t[0]);
      wk_tensor *loss = out ? wk_cross_entropy(out, b.t[1]) : NULL;
      double lv;
      int64_t hv;
      if (!loss || wk_optim_zero_grad(opt, true) || wk_backward(loss) || wk_optim_step(opt) || wk_item(loss, &lv)) {
        s = s ? s : wk_last_error();
      } else {
        wk_no_grad_begin();
        s = wk_item_i64(wk_sum(wk_eq(wk_argmax_dim(out, 1, false), b.t[1])), &hv);
        wk_no_grad_end();
        int64_t n = wk_tensor_size(b.t[1], 0);
        loss_sum += lv * (double)n;
        correct += hv;
        seen += n;
      }
      step++;
      wk_scope_end();
      wk_sample_clear(&b);
    }
    if (!s && seen) {
      double dt = now() - t0;
      printf("QAT epoch %d/%d: train loss=%.4f acc=%.4f (fake-quantized) | lr %g | %.0f img/s, %.1f s\n", e,
             c->qat_epochs, loss_sum / (double)seen, (double)correct / (double)seen, c->qat_lr,
             dt > 0 ? (double)seen / dt : 0, dt);
      fflush(stdout);
    }
  }
  if (!s && freeze_at >= total) s = wk_quant_set_qat(w, false, -1); /* a run shorter than 3 batches */
  wk_optimizer_free(opt);
  return s;
}

/* Post-training: calibrates the prepared wrapper on c->calib_batches training batches. */
static wk_status calibrate(const train_config *c, wk_module *w, wk_dataloader *train_dl, int64_t *batches,
                           int64_t *images) {
  wk_status s = wk_dataloader_set_epoch(train_dl, c->epochs);
  int64_t nb = 0;
  *images = 0;
  wk_no_grad_begin();
  wk_sample b = {0};
  while (!s && nb < c->calib_batches && (s = wk_dataloader_next(train_dl, &b)) == WK_OK && b.n) {
    wk_scope_begin();
    if (!wk_module_forward(w, b.t[0])) s = wk_last_error();
    *images += wk_tensor_size(b.t[1], 0);
    nb++;
    wk_scope_end();
    wk_sample_clear(&b);
  }
  wk_no_grad_end();
  *batches = nb;
  if (!s) s = wk_dataloader_set_epoch(train_dl, c->epochs); /* abandon the rest of that pass */
  return s;
}

wk_status train_quantize(const train_config *c, wk_module *model, wk_dataloader *train_dl, wk_dataloader *test_dl) {
  bool qat = !strcmp(c->quantize, "qat");
  model_figures f32 = {0}, i8 = {0};
  printf("--quantize %s: measuring the float32 model\n", c->quantize);
  fflush(stdout);
  wk_status s = measure_best(model, test_dl, &f32);
  if (!s) s = save_model(c, model, "model_f32.safetensors", false, &f32);
  if (s) return s;
  wk_module *w = quant_wrap(model);
  if (!w) return wk_last_error();
  int groups = 0;
  int64_t calib_batches = 0, calib_images = 0;
  wk_qconfig qc;
  s = wk_module_train(w, false); /* fusion folds BatchNorm with its running statistics */
  if (!s) s = fuse_all(w, w, "", &groups);
  double t0 = now();
  if (!qat) {
    if (!s) s = wk_quant_default_qconfig("x86", &qc);
    if (!s) s = wk_quant_prepare(w, &qc);
    if (!s) s = calibrate(c, w, train_dl, &calib_batches, &calib_images);
  } else {
    if (!s) s = wk_module_train(w, true);
    if (!s) s = wk_quant_default_qat_qconfig("x86", &qc);
    if (!s) s = wk_quant_prepare_qat(w, &qc);
    if (!s) s = qat_finetune(c, w, train_dl);
  }
  double fq_acc = 0, fq_t;
  int64_t fq_nb, fq_ni;
  if (!s && qat)
    s = measure(w, test_dl, &fq_acc, &fq_t, &fq_nb, &fq_ni); /* observers frozen: the test set changes nothing */
  if (!s) s = wk_module_train(w, false);
  if (!s) s = wk_quant_convert(w);
  double t_quant = now() - t0;
  if (!s) s = measure_best(w, test_dl, &i8);
  if (!s) s = save_model(c, w, "model_int8.safetensors", true, &i8);
  if (s) {
    wk_module_release(w);
    return s;
  }
  if (qat)
    printf(
        "quantized (qat): %d fused group%s, x86 QAT qconfig, %d epoch%s of fake-quantized fine-tuning, converted "
        "(%.1f s); fake-quantized test accuracy %.2f%%\n",
        groups, groups == 1 ? "" : "s", c->qat_epochs, c->qat_epochs == 1 ? "" : "s", t_quant, 100 * fq_acc);
  else
    printf(
        "quantized (ptq): %d fused group%s, x86 qconfig, calibrated on %lld training batch%s (%lld images), "
        "converted (%.1f s)\n",
        groups, groups == 1 ? "" : "s", (long long)calib_batches, calib_batches == 1 ? "" : "es",
        (long long)calib_images, t_quant);
  printf("quantized (%s) test accuracy: f32 %.2f%%, int8 %.2f%% (%+.2f points)\n", c->quantize, 100 * f32.acc,
         100 * i8.acc, 100 * (i8.acc - f32.acc));
  printf(
      "quantized (%s) model size: f32 %lld bytes, int8 %lld bytes of tensors (%.2fx smaller); safetensors files "
      "%lld and %lld bytes (%s/model_f32.safetensors, model_int8.safetensors)\n",
      c->quantize, (long long)f32.tensor_bytes, (long long)i8.tensor_bytes,
      i8.tensor_bytes ? (double)f32.tensor_bytes / (double)i8.tensor_bytes : 0, (long long)f32.file_bytes,
      (long long)i8.file_bytes, c->out);
  int th = wk_num_threads();
  printf(
      "quantized (%s) inference, forward over the %lld test images (%lld batches), best of 2 passes, %d thread%s: "
      "f32 %.0f img/s (%.2f ms/batch), int8 %.0f img/s (%.2f ms/batch), %.2fx\n",
      c->quantize, (long long)f32.images, (long long)f32.batches, th, th == 1 ? "" : "s",
      (double)f32.images / f32.forward_s, 1e3 * f32.forward_s / (double)f32.batches, (double)i8.images / i8.forward_s,
      1e3 * i8.forward_s / (double)i8.batches, i8.forward_s > 0 ? f32.forward_s / i8.forward_s : 0);
  fflush(stdout);
  wk_module_release(w);
  return WK_OK;
}
