/* DataLoader throughput on the real Fashion-MNIST training set with the main
 * job's pipeline (ToTensor + Normalize per sample, default collate, batch 64,
 * shuffled): one full epoch per worker count, images/s. The training step
 * runs at a few thousand images/s; the loader must be far above that.
 * Usage: bench_loader [DIR] */
#include <stdio.h>
#include <wick/data.h>
#include <wick/wick.h>

#include "bench_util.h"

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
  char img[1024], lab[1024];
  snprintf(img, sizeof img, "%s/train-images-idx3-ubyte.gz", dir);
  snprintf(lab, sizeof lab, "%s/train-labels-idx1-ubyte.gz", dir);
  if (wk_init() != WK_OK) return 1;
  wk_dataset *raw = wk_dataset_mnist(img, lab);
  double mean = 0.2860, std = 0.3530;
  wk_transform *steps[2] = {wk_transform_to_tensor(false), wk_transform_normalize(&mean, &std, 1)};
  wk_transform *tf = raw && steps[0] && steps[1] ? wk_transform_compose(steps, 2) : NULL;
  wk_dataset *ds = tf ? wk_dataset_map(raw, 0, tf) : NULL;
  if (!ds) {
    fprintf(stderr, "bench_loader: %s\n", wk_last_error_message());
    return 1;
  }
  const int workers[3] = {0, 1, 2};
  for (int w = 0; w < 3; w++) {
    wk_dataloader *dl = wk_dataloader_new(ds, WK_LOADER_OPTS(.batch_size = 64, .shuffle = true,
                                                             .num_workers = workers[w], .seed = 1));
    if (!dl) {
      fprintf(stderr, "bench_loader: %s\n", wk_last_error_message());
      return 1;
    }
    wk_sample b = {0};
    int64_t n = 0;
    double t0 = bench_now();
    while (wk_dataloader_next(dl, &b) == WK_OK && b.n) {
      n += wk_tensor_size(b.t[0], 0);
      wk_sample_clear(&b);
    }
    double dt = bench_now() - t0;
    printf("loader_w%d_img_s %.0f\n", workers[w], (double)n / dt);
    wk_dataloader_free(dl);
  }
  wk_dataset_free(ds);
  wk_dataset_free(raw);
  wk_transform_free(tf);
  wk_transform_free(steps[0]);
  wk_transform_free(steps[1]);
  wk_shutdown();
  return 0;
}
