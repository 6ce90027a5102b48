/* int8 vs float32 inference of ResNet-18 with the CIFAR stem (3x3 stride-1
 * conv1, no maxpool; 10 classes) on 3x32x32 inputs, in one process:
 * the float model, and a copy (same weights) fused as one name
 * (wk_quant_fuse "1"), prepared with the x86 qconfig, calibrated on 4
 * batches and converted. Timed passes alternate float / int8 (eval,
 * no_grad) and the medians are printed as images/s, with the int8 / f32
 * ratio and how often the two agree on the top-1 class.
 * Usage: bench_quant BATCH [ROUNDS] */
#include <stdio.h>
#include <stdlib.h>
#include <wick/nn.h>
#include <wick/quant.h>
#include <wick/wick.h>

#include "bench_util.h"

static wk_module *model(void) {
  wk_manual_seed(0);
  wk_module *mods[] = {wk_quant_stub(), wk_nn_resnet(18, (wk_resnet_opts){.num_classes = 10, .cifar_stem = true}),
                       wk_quant_dequant_stub()};
  wk_module *m = wk_nn_sequential(mods, 3);
  if (m && wk_module_train(m, false)) {
    wk_module_release(m);
    return NULL;
  }
  return m;
}

static double timed(wk_module *m, wk_tensor *x) {
  double t0 = bench_now();
  wk_scope_begin();
  wk_tensor *y = wk_module_forward(m, x);
  wk_scope_end();
  return y ? bench_now() - t0 : -1;
}

int main(int argc, char **argv) {
  int64_t batch = argc > 1 ? atoll(argv[1]) : 32;
  int rounds = argc > 2 ? atoi(argv[2]) : 5;
  if (wk_init() != WK_OK || batch < 1 || rounds < 1 || rounds > 64) return 1;
  wk_module *f = model(), *q = model();
  wk_qconfig qc;
  wk_no_grad_begin();
  bool ok = f && q && !wk_quant_fuse(q, (const char *[]){"1"}, 1) && !wk_quant_default_qconfig("x86", &qc) &&
            !wk_quant_prepare(q, &qc);
  wk_manual_seed(1);
  for (int b = 0; ok && b < 4; b++) {
    wk_scope_begin();
    ok = wk_module_forward(q, wk_randn(WK_SHAPE(batch, 3, 32, 32), (wk_options){0})) != NULL;
    wk_scope_end();
  }
  ok = ok && !wk_quant_convert(q);
  wk_tensor *x = ok ? wk_randn(WK_SHAPE(batch, 3, 32, 32), (wk_options){0}) : NULL;
  double tf[64], tq[64];
  ok = ok && timed(f, x) >= 0 && timed(q, x) >= 0; /* warm-up: caches, reordered weights */
  for (int r = 0; ok && r < rounds; r++) {
    tf[r] = timed(f, x);
    tq[r] = timed(q, x);
    ok = tf[r] >= 0 && tq[r] >= 0;
  }
  if (!ok) {
    fprintf(stderr, "bench_quant: %s\n", wk_last_error_message());
    return 1;
  }
  /* top-1 agreement of the int8 model with the float one on x */
  wk_scope_begin();
  wk_tensor *same = wk_eq(wk_argmax_dim(wk_module_forward(f, x), 1, false), wk_argmax_dim(wk_module_forward(q, x), 1, false));
  double agree = 0;
  if (!same || wk_item(wk_mean(wk_to_dtype(same, WK_F32)), &agree)) agree = -1;
  wk_scope_end();
  wk_no_grad_end();
  double mf = bench_median(tf, rounds), mq = bench_median(tq, rounds);
  printf("quant_resnet18_f32_b%lld_img_s %.1f\n", (long long)batch, (double)batch / mf);
  printf("quant_resnet18_int8_b%lld_img_s %.1f\n", (long long)batch, (double)batch / mq);
  printf("quant_resnet18_int8_speedup_b%lld %.3f\n", (long long)batch, mf / mq);
  printf("quant_resnet18_top1_agree_b%lld %.3f\n", (long long)batch, agree);
  wk_module_release(f);
  wk_module_release(q);
  wk_release(x);
  return 0;
}
