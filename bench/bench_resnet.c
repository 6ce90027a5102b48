/* ResNet-18 (torchvision architecture, 10 classes) on 3x32x32 inputs: one
 * full training step (forward, cross-entropy, backward, SGD momentum step),
 * median of timed steps after warm-up, as images/s; then inference (eval,
 * no_grad) the same way. Usage: bench_resnet BATCH [STEPS] [amp]; with amp,
 * training only, the forward and the loss in a bf16 autocast region. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wick/nn.h>
#include <wick/optim.h>
#include <wick/wick.h>

#include "bench_util.h"

int main(int argc, char **argv) {
  int64_t batch = argc > 1 ? atoll(argv[1]) : 32;
  int steps = argc > 2 ? atoi(argv[2]) : 5;
  bool amp = argc > 3 && !strcmp(argv[3], "amp"); /* training only, forward and loss in bf16 autocast */
  if (wk_init() != WK_OK || batch < 1 || steps < 1) return 1;
  wk_manual_seed(0);
  wk_module *model = wk_nn_resnet18((wk_resnet_opts){.num_classes = 10});
  if (!model) {
    fprintf(stderr, "bench_resnet: %s\n", wk_last_error_message());
    return 1;
  }
  int np = wk_module_named_parameters(model, NULL, NULL, 0);
  wk_tensor **ps = calloc((size_t)np, sizeof *ps);
  wk_module_named_parameters(model, NULL, ps, np);
  wk_optimizer *opt = wk_optim_sgd(ps, np, (wk_sgd_opts){.lr = 0.01, .momentum = 0.9});
  wk_tensor *x = wk_randn(WK_SHAPE(batch, 3, 32, 32), (wk_options){0});
  wk_tensor *y = wk_randint(0, 10, WK_SHAPE(batch), (wk_options){0});
  double *t = calloc((size_t)steps, sizeof *t);
  if (!t || !bench_train_steps_amp("bench_resnet", model, opt, x, y, wk_cpu(), 2, steps, t, amp)) return 1;
  printf("resnet18_train%s_b%lld_img_s %.1f\n", amp ? "_amp" : "", (long long)batch, (double)batch / bench_median(t, steps));
  printf("resnet18_train%s_b%lld_peak_rss_mb %.1f\n", amp ? "_amp" : "", (long long)batch, bench_peak_rss_mb());
  if (amp) goto done;
  /* inference (eval, no_grad): one warm-up pass, then the median of `steps` */
  wk_module_train(model, false);
  wk_no_grad_begin();
  for (int s = -1; s < steps; s++) {
    double t0 = bench_now();
    wk_tensor *out = wk_module_forward(model, x);
    if (!out) {
      fprintf(stderr, "bench_resnet: inference: %s\n", wk_last_error_message());
      return 1;
    }
    wk_release(out);
    if (s >= 0) t[s] = bench_now() - t0;
  }
  wk_no_grad_end();
  printf("resnet18_infer_b%lld_img_s %.1f\n", (long long)batch, (double)batch / bench_median(t, steps));
  printf("resnet18_b%lld_peak_rss_mb %.1f\n", (long long)batch, bench_peak_rss_mb());
done:
  wk_release(x);
  wk_release(y);
  free(t);
  free(ps);
  wk_optimizer_free(opt);
  wk_module_release(model);
  wk_shutdown();
  return 0;
}
