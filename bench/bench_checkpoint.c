/* Activation checkpointing on ResNet-18 (torchvision architecture, 1000
 * classes): one training step's forward and backward with and without
 * wk_activation_checkpoint segments: conv1 alone, then bn1 + relu + maxpool,
 * then each BasicBlock (layer1.0 .. layer4.1), each configuration in a child
 * process of its own so that each peak RSS is its own; prints peak RSS, the
 * time of the step and whether every parameter gradient is bit-identical.
 * The stem's backward sets the peak: with conv1 in a segment of its own, its
 * weight gradient (an im2col of the 112x112 output) runs after the rest of
 * the stem's recomputed activations are gone (one stem segment: -26% instead
 * of -30% at 8x224). relu is in place, so it cannot start a segment.
 * Usage: bench_checkpoint [BATCH [SIZE]] (default 8 224). glibc raises its
 * mmap threshold to the size of the blocks a program frees, so freed
 * activations may stay in the heap and count in RSS; MALLOC_MMAP_THRESHOLD_=
 * 131072 in the environment fixes the threshold and RSS follows what is held.
 * Peak RSS also counts the onednn plugin's cached copies of the weights in
 * its blocked layout (WICK_DISABLE_PLUGINS=onednn leaves them out). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <wick/nn.h>
#include <wick/wick.h>

#include "bench_util.h"

static wk_tensor *stage(void *user, wk_tensor *const *in, int n) {
  (void)n;
  return wk_module_forward((wk_module *)user, in[0]);
}

/* bn1, relu (in place), maxpool: the stem after conv1 */
static wk_tensor *stem_rest(void *user, wk_tensor *const *in, int n) {
  (void)n;
  static const char *const names[] = {"bn1", "relu", "maxpool"};
  wk_tensor *x = in[0];
  for (int i = 0; i < 3; i++) x = wk_module_forward(wk_module_child((wk_module *)user, names[i]), x);
  return x;
}

static wk_tensor *forward(wk_module *r, wk_tensor *x, bool ckpt) {
  wk_module *conv1 = wk_module_child(r, "conv1");
  x = ckpt ? wk_activation_checkpoint(stage, conv1, &x, 1) : wk_module_forward(conv1, x);
  x = ckpt ? wk_activation_checkpoint(stem_rest, r, &x, 1) : stem_rest(r, &x, 1);
  for (int l = 1; l <= 4; l++)
    for (int b = 0; b < 2; b++) { /* each BasicBlock a segment */
      char name[16];
      snprintf(name, sizeof name, "layer%d.%d", l, b);
      wk_module *s = wk_module_child(r, name);
      x = ckpt ? wk_activation_checkpoint(stage, s, &x, 1) : wk_module_forward(s, x);
    }
  x = wk_flatten(wk_module_forward(wk_module_child(r, "avgpool"), x), 1, -1);
  return wk_module_forward(wk_module_child(r, "fc"), x);
}

/* FNV-1a over the bytes of every parameter gradient. */
static uint64_t grads_hash(wk_module *r) {
  wk_tensor *ps[128];
  int np = wk_module_named_parameters(r, NULL, ps, 128);
  uint64_t h = 1469598103934665603ull;
  for (int i = 0; i < np; i++) {
    wk_tensor *g = wk_tensor_grad(ps[i]);
    wk_tensor *c = g ? wk_contiguous(g) : NULL;
    if (!c) return 0;
    const unsigned char *p = wk_tensor_data(c);
    size_t n = (size_t)wk_tensor_numel(c) * wk_dtype_size(wk_tensor_dtype(c));
    for (size_t k = 0; k < n; k++) h = (h ^ p[k]) * 1099511628211ull;
  }
  return h;
}

typedef struct {
  double rss_before_mb, rss_peak_mb, seconds;
  uint64_t hash;
  int ok;
} result;

static result run(int64_t batch, int64_t size, bool ckpt) {
  result res = {0};
  if (wk_init() != WK_OK) return res;
  wk_manual_seed(0);
  wk_module *r = wk_nn_resnet18((wk_resnet_opts){0});
  if (!r) {
    fprintf(stderr, "bench_checkpoint: %s\n", wk_last_error_message());
    return res;
  }
  wk_scope_begin();
  wk_tensor *x = wk_randn(WK_SHAPE(batch, 3, size, size), (wk_options){0});
  wk_tensor *t = wk_randint(0, 1000, WK_SHAPE(batch), (wk_options){0});
  res.rss_before_mb = bench_peak_rss_mb();
  double t0 = bench_now();
  wk_tensor *loss = wk_cross_entropy(forward(r, x, ckpt), t);
  res.ok = loss && wk_backward(loss) == WK_OK;
  res.seconds = bench_now() - t0;
  res.rss_peak_mb = bench_peak_rss_mb();
  if (!res.ok) fprintf(stderr, "bench_checkpoint: %s\n", wk_last_error_message());
  res.hash = grads_hash(r);
  wk_scope_end();
  wk_module_release(r);
  return res;
}

/* Runs one configuration in a child, its result through a pipe. */
static result in_child(int64_t batch, int64_t size, bool ckpt) {
  result res = {0};
  int fd[2];
  if (pipe(fd) != 0) return res;
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    result r = run(batch, size, ckpt);
    ssize_t w = write(fd[1], &r, sizeof r);
    _exit(w == (ssize_t)sizeof r ? 0 : 1);
  }
  close(fd[1]);
  if (pid > 0 && read(fd[0], &res, sizeof res) != (ssize_t)sizeof res) res.ok = 0;
  close(fd[0]);
  if (pid > 0) waitpid(pid, NULL, 0);
  return res;
}

int main(int argc, char **argv) {
  int64_t batch = argc > 1 ? atoll(argv[1]) : 8, size = argc > 2 ? atoll(argv[2]) : 224;
  if (batch < 1 || size < 32) {
    fprintf(stderr, "usage: bench_checkpoint [BATCH [SIZE >= 32]]\n");
    return 2;
  }
  result plain = in_child(batch, size, false), ck = in_child(batch, size, true);
  if (!plain.ok || !ck.ok) {
    fprintf(stderr, "bench_checkpoint: a run failed\n");
    return 1;
  }
  printf("resnet18 %lldx3x%lldx%lld, one training step (forward + backward), cpu\n", (long long)batch,
         (long long)size, (long long)size);
  printf("  %-34s peak RSS %8.1f MiB (%.1f MiB before the step), %6.2f s\n", "without checkpointing:",
         plain.rss_peak_mb, plain.rss_before_mb, plain.seconds);
  printf("  %-34s peak RSS %8.1f MiB (%.1f MiB before the step), %6.2f s\n", "ckpt: conv1, stem rest, each block:",
         ck.rss_peak_mb, ck.rss_before_mb, ck.seconds);
  printf("  peak RSS %.1f%% lower; gradients %s\n", 100.0 * (1.0 - ck.rss_peak_mb / plain.rss_peak_mb),
         plain.hash == ck.hash ? "bit-identical" : "DIFFER");
  return plain.hash == ck.hash ? 0 : 1;
}
