/* Training-step throughput of the small models on Fashion-MNIST-shaped
 * batches: the CNN (conv32-pool-conv64-pool-fc128-fc10) or the MLP
 * (784-256-10), batch B, SGD lr 0.05 momentum 0.9, cross-entropy. Median of
 * timed steps after warm-up, as images/s, and the process's peak RSS.
 * Usage: bench_train cnn|mlp BATCH [STEPS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wick/nn.h>
#include <wick/optim.h>
#include <wick/wick.h>

#include "bench_util.h"

int main(int argc, char **argv) {
  const char *which = argc > 1 ? argv[1] : "cnn";
  int64_t batch = argc > 2 ? atoll(argv[2]) : 64;
  int steps = argc > 3 ? atoi(argv[3]) : 50;
  if (wk_init() != WK_OK || batch < 1 || steps < 1) return 1;
  wk_manual_seed(0);
  wk_module *model;
  if (!strcmp(which, "cnn")) {
    model = wk_nn_lenet();
  } else {
    const int64_t hidden[1] = {256};
    wk_module *mods[2] = {wk_nn_flatten(1, -1), wk_nn_mlp(784, hidden, 1, 10)};
    model = wk_nn_sequential(mods, 2);
  }
  if (!model) {
    fprintf(stderr, "bench_train: %s\n", wk_last_error_message());
    return 1;
  }
  int np = wk_module_named_parameters(model, NULL, NULL, 0);
  wk_tensor **ps = calloc((size_t)np, sizeof *ps);
  wk_module_named_parameters(model, NULL, ps, np);
  wk_optimizer *opt = wk_optim_sgd(ps, np, (wk_sgd_opts){.lr = 0.05, .momentum = 0.9});
  wk_tensor *x = wk_randn(WK_SHAPE(batch, 1, 28, 28), (wk_options){0});
  wk_tensor *y = wk_randint(0, 10, WK_SHAPE(batch), (wk_options){0});
  double *t = calloc((size_t)steps, sizeof *t);
  if (!t || !bench_train_steps("bench_train", model, opt, x, y, wk_cpu(), 5, steps, t)) return 1;
  double med = bench_median(t, steps);
  printf("%s_train_b%lld_img_s %.1f\n", which, (long long)batch, (double)batch / med);
  printf("%s_train_b%lld_peak_rss_mb %.1f\n", which, (long long)batch, bench_peak_rss_mb());
  wk_release(x);
  wk_release(y);
  free(t);
  free(ps);
  wk_optimizer_free(opt);
  wk_module_release(model);
  wk_shutdown();
  return 0;
}
