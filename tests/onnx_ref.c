/* For tests/onnx_export.sh: exports mlp, lenet and resnet18 (eval mode,
 * random weights, a dynamic batch axis) to DIR/<model>.onnx and writes, for
 * batch sizes 1 and 3, a random input and Wick's eager output as raw
 * little-endian float32 files, listed in DIR/manifest.txt:
 *   <model> <batch> <input.bin> <output.bin> <in dims...> : <out dims...>
 * tests/onnx_ort.py then checks the files with onnx's checker and runs them
 * in ONNX Runtime. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wick/nn.h>
#include <wick/onnx.h>

static int write_raw(const char *path, wk_tensor *t) {
  wk_tensor *c = wk_contiguous(t);
  FILE *f = c ? fopen(path, "wb") : NULL;
  size_t n = f ? fwrite(wk_tensor_data(c), 4, (size_t)wk_tensor_numel(c), f) : 0;
  int bad = !f || n != (size_t)wk_tensor_numel(c);
  if (f) bad |= fclose(f) != 0;
  wk_release(c);
  return bad;
}

static int one(const char *dir, const char *name, wk_module *m, const int64_t *item, int nd, FILE *man) {
  char path[1024], in[1024], out[1024];
  int64_t shape[8] = {4};
  memcpy(shape + 1, item, sizeof *item * (size_t)nd);
  wk_manual_seed(5);
  /* a few training-mode batches first, so batch norm's running statistics are not 0 and 1 */
  if (!m || wk_module_train(m, true)) return 1;
  for (int i = 0; i < 2; i++) {
    wk_tensor *w = wk_randn(shape, nd + 1, (wk_options){0});
    wk_release(wk_module_forward(m, w));
    wk_release(w);
  }
  if (wk_module_train(m, false)) return 1;
  shape[0] = 2;
  wk_tensor *x = wk_randn(shape, nd + 1, (wk_options){0});
  snprintf(path, sizeof path, "%s/%s.onnx", dir, name);
  wk_status st = wk_onnx_export(m, &x, 1, path,
                                WK_ONNX_EXPORT_OPTS(.input_names = (const char *[]){"input"}, .ninput_names = 1,
                                                    .output_names = (const char *[]){"logits"}, .noutput_names = 1,
                                                    .dynamic_axes = (wk_onnx_dynamic_axis[]){{"input", 0, "batch"}},
                                                    .ndynamic_axes = 1, .doc_string = name));
  wk_release(x);
  if (st) {
    fprintf(stderr, "onnx_ref: exporting %s: %s\n", name, wk_last_error_message());
    return 1;
  }
  static const int64_t batches[] = {1, 3};
  for (int b = 0; b < 2; b++) {
    shape[0] = batches[b];
    wk_tensor *xb = wk_randn(shape, nd + 1, (wk_options){0});
    wk_tensor *y = wk_module_forward(m, xb);
    if (!y) {
      fprintf(stderr, "onnx_ref: %s forward: %s\n", name, wk_last_error_message());
      return 1;
    }
    snprintf(in, sizeof in, "%s/%s_b%lld_in.bin", dir, name, (long long)batches[b]);
    snprintf(out, sizeof out, "%s/%s_b%lld_out.bin", dir, name, (long long)batches[b]);
    if (write_raw(in, xb) || write_raw(out, y)) return 1;
    fprintf(man, "%s %lld %s %s", name, (long long)batches[b], in, out);
    for (int d = 0; d <= nd; d++) fprintf(man, " %lld", (long long)shape[d]);
    fprintf(man, " :");
    for (int d = 0; d < wk_tensor_dim(y); d++) fprintf(man, " %lld", (long long)wk_tensor_size(y, d));
    fprintf(man, "\n");
    wk_release(xb);
    wk_release(y);
  }
  wk_module_release(m);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: onnx_ref DIR\n");
    return 2;
  }
  if (wk_init()) {
    fprintf(stderr, "onnx_ref: %s\n", wk_last_error_message());
    return 1;
  }
  char path[1024];
  snprintf(path, sizeof path, "%s/manifest.txt", argv[1]);
  FILE *man = fopen(path, "w");
  if (!man) return 1;
  int64_t hidden[] = {64, 32};
  const int64_t vec[] = {784}, gray[] = {1, 28, 28}, rgb[] = {3, 64, 64};
  int bad = one(argv[1], "mlp", wk_nn_mlp(784, hidden, 2, 10), vec, 1, man);
  bad |= one(argv[1], "lenet", wk_nn_lenet(), gray, 3, man);
  bad |= one(argv[1], "resnet18", wk_nn_resnet18((wk_resnet_opts){0}), rgb, 3, man);
  bad |= fclose(man) != 0;
  return bad;
}
