/* ResNet-18 (torchvision architecture, 10 classes) on 3x32x32 inputs: one
 * full training step (forward, cross-entropy, backward, SGD momentum step),
 * median of timed steps after warm-up, as images/s; then inference (eval,
 * no_grad) the same way. Usage: bench_resnet [--channels-last] BATCH [STEPS] [amp];
 * with amp, training only, the forward and the loss in a bf16 autocast region;
 * with --channels-last, the model's weights and the input in channels_last
 * (wk_module_to_memory_format, wk_contiguous_format: PyTorch's
 * model.to(memory_format=torch.channels_last)), the keys get "_cl". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wick/nn.h>
#include <wick/optim.h>
#include <wick/wick.h>

#include "bench_util.h"

int main(int argc, char **argv) {
  bool chlast = false;
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--channels-last")) {
      chlast = true;
      memmove(&argv[i], &argv[i + 1], sizeof *argv * (size_t)(argc - i)); /* argv[argc] is NULL */
      argc--;
      break;
    }
  const char *cl = chlast ? "_cl" : "";
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
  if (chlast) {
    wk_tensor *xc = wk_contiguous_format(x, WK_CHANNELS_LAST);
    if (!xc || wk_module_to_memory_format(model, WK_CHANNELS_LAST) != WK_OK) {
      fprintf(stderr, "bench_resnet: channels_last: %s\n", wk_last_error_message());
      return 1;
    }
    wk_release(x);
    x = xc;
  }
  wk_tensor *y = wk_randint(0, 10, WK_SHAPE(batch), (wk_options){0});
  double *t = calloc((size_t)steps, sizeof *t);
  if (!t || !bench_train_steps_amp("bench_resnet", model, opt, x, y, wk_cpu(), 2, steps, t, amp)) return 1;
  printf("resnet18_train%s%s_b%lld_img_s %.1f\n", amp ? "_amp" : "", cl, (long long)batch, (double)batch / bench_median(t, steps));
  printf("resnet18_train%s%s_b%lld_peak_rss_mb %.1f\n", amp ? "_amp" : "", cl, (long long)batch, bench_peak_rss_mb());
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
  printf("resnet18_infer%s_b%lld_img_s %.1f\n", cl, (long long)batch, (double)batch / bench_median(t, steps));
  printf("resnet18%s_b%lld_peak_rss_mb %.1f\n", cl, (long long)batch, bench_peak_rss_mb());
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
