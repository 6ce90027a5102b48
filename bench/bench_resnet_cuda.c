/* ResNet-18 (torchvision architecture, 10 classes) on 3x32x32 inputs, one
 * training step (forward, cross-entropy, backward, SGD momentum step) on a
 * device chosen at run time, timed to the device's completion; median of the
 * timed steps after warm-up. The PyTorch peer is bench/resnet_cuda.py (same
 * options, same output).
 *
 *   bench_resnet_cuda [--device cuda] [--batch 256] [--steps 10] [--benchmark]
 *
 * --benchmark sets WICK_CUDNN_BENCHMARK=1 (cudnn.benchmark). Prints
 * "step_ms X" and "images_per_s Y". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wick/nn.h>
#include <wick/optim.h>
#include <wick/wick.h>

#include "bench_util.h"

int main(int argc, char **argv) {
  const char *devname = "cuda";
  int64_t batch = 256;
  int steps = 10;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--device") && i + 1 < argc)
      devname = argv[++i];
    else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
      batch = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--steps") && i + 1 < argc)
      steps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--benchmark"))
      setenv("WICK_CUDNN_BENCHMARK", "1", 1);
    else {
      fprintf(stderr, "usage: %s [--device cuda] [--batch 256] [--steps 10] [--benchmark]\n", argv[0]);
      return 2;
    }
  }
  if (wk_init() != WK_OK || batch < 1 || steps < 1) return 1;
  wk_device dev;
  if (wk_device_parse(devname, &dev) != WK_OK || wk_device_count(dev.type) == 0) {
    fprintf(stderr, "bench_resnet_cuda: no device %s: %s\n", devname,
            wk_last_error() ? wk_last_error_message() : wk_device_type_status(dev.type));
    return 77;
  }
  wk_manual_seed(0);
  wk_module *model = wk_nn_resnet18((wk_resnet_opts){.num_classes = 10});
  if (!model || wk_module_to(model, dev, WK_DTYPE_DEFAULT) != WK_OK) {
    fprintf(stderr, "bench_resnet_cuda: %s\n", wk_last_error_message());
    return 1;
  }
  int np = wk_module_named_parameters(model, NULL, NULL, 0);
  wk_tensor **ps = calloc((size_t)np, sizeof *ps);
  wk_module_named_parameters(model, NULL, ps, np);
  wk_optimizer *opt = wk_optim_sgd(ps, np, (wk_sgd_opts){.lr = 0.01, .momentum = 0.9});
  wk_tensor *x = wk_to_device(wk_randn(WK_SHAPE(batch, 3, 32, 32), (wk_options){0}), dev);
  wk_tensor *y = wk_to_device(wk_randint(0, 10, WK_SHAPE(batch), (wk_options){.dtype = WK_I64}), dev);
  double *t = calloc((size_t)steps, sizeof *t);
  if (!opt || !x || !y || !t) {
    fprintf(stderr, "bench_resnet_cuda: %s\n", wk_last_error_message());
    return 1;
  }
  /* three warm-up steps: handles, algorithms, the allocator's cache */
  if (!bench_train_steps("bench_resnet_cuda", model, opt, x, y, dev, 3, steps, t)) return 1;
  double med = bench_median(t, steps);
  printf("device %s\nbatch %lld\nstep_ms %.3f\nimages_per_s %.1f\n", devname, (long long)batch, med * 1e3,
         (double)batch / med);
  wk_optimizer_free(opt);
  wk_module_release(model);
  free(ps);
  free(t);
  wk_release(x);
  wk_release(y);
  return 0;
}
