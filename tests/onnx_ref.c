/* For tests/onnx_export.sh: exports mlp, lenet, resnet18 and resnet50 (eval mode,
 * random weights, a dynamic batch axis) to DIR/<model>.onnx and writes, for
 * batch sizes 1, 3 and 8, a random input and Wick's eager output as raw
 * little-endian float32 files, listed in DIR/manifest.txt:
 *   <model> <batch> <input.bin> <output.bin> <in dims...> : <out dims...>
 * tests/onnx_ort.py then checks the files with onnx's checker and runs them
 * in ONNX Runtime. Also a model with ConvTranspose2d layers, and resnet18
 * again with its initializers in an external data file (resnet18_ext). */
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

static int one_x(const char *dir, const char *name, wk_module *m, const int64_t *item, int nd, FILE *man, int ext) {
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
                                                    .ndynamic_axes = 1, .doc_string = name, .external_data = ext));
  wk_release(x);
  if (st) {
    fprintf(stderr, "onnx_ref: exporting %s: %s\n", name, wk_last_error_message());
    return 1;
  }
  static const int64_t batches[] = {1, 3, 8};
  for (int b = 0; b < 3; b++) {
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

static int one(const char *dir, const char *name, wk_module *m, const int64_t *item, int nd, FILE *man) {
  return one_x(dir, name, m, item, nd, man, WK_ONNX_EXTERNAL_AUTO);
}

/* Many ops in one program (x: [batch, 16] -> one [batch, K] result), to check
 * the exporter's mappings against ONNX Runtime op by op. The weights are
 * constants the program captures (initializers of the ONNX file). */
static wk_tensor *g_w, *g_b;
static wk_status ops_prog(void *user, wk_tensor *const *in, int n, wk_tensor **out, int max, int *nout) {
  (void)user, (void)n, (void)max;
  wk_scope_begin();
  wk_tensor *x = in[0], *a = wk_add_scalar(wk_abs(x), 1); /* a > 0 */
  wk_tensor *p[96];
  int k = 0;
  p[k++] = wk_relu(x), p[k++] = wk_sigmoid(x), p[k++] = wk_tanh(x), p[k++] = wk_neg(x),
  p[k++] = wk_exp(wk_mul_scalar(x, 0.5));
  p[k++] = wk_sin(x), p[k++] = wk_cos(x), p[k++] = wk_atan(x), p[k++] = wk_erf(x), p[k++] = wk_silu(x);
  p[k++] = wk_gelu(x, "none"), p[k++] = wk_gelu(x, "tanh"), p[k++] = wk_hardswish(x), p[k++] = wk_hardsigmoid(x);
  p[k++] = wk_relu6(wk_mul_scalar(x, 4)), p[k++] = wk_leaky_relu(x, 0.2), p[k++] = wk_selu(x), p[k++] = wk_mish(x);
  p[k++] = wk_log_sigmoid(x), p[k++] = wk_sqrt(a), p[k++] = wk_rsqrt(a), p[k++] = wk_log1p(a), p[k++] = wk_expm1(x);
  p[k++] = wk_log2(a), p[k++] = wk_reciprocal(a), p[k++] = wk_square(x), p[k++] = wk_floor(wk_mul_scalar(x, 3));
  p[k++] = wk_ceil(wk_mul_scalar(x, 3)), p[k++] = wk_clamp(x, -0.5, 0.5);
  p[k++] = wkx_elu(x, WK_VF(0.7), WK_VF(1), WK_VF(1)), p[k++] = wkx_celu(x, WK_VF(1.3));
  p[k++] = wkx_softplus(x, WK_VF(2), WK_VF(20)), p[k++] = wkx_hardtanh(x, WK_VF(-0.3), WK_VF(0.4));
  p[k++] = wk_add_scaled(x, wk_cos(x), 2), p[k++] = wk_sub(x, a), p[k++] = wk_div(x, a),
  p[k++] = wk_maximum(x, wk_sin(x));
  p[k++] = wk_minimum(x, wk_sin(x)), p[k++] = wk_pow(a, wk_cos(x)), p[k++] = wk_mul_scalar(x, -3);
  p[k++] = wk_div_scalar(x, 7), p[k++] = wk_where(wk_gt_scalar(x, 0.1), x, wk_mul_scalar(x, 2));
  p[k++] = wk_softmax(x, 1), p[k++] = wk_log_softmax(x, 1);
  p[k++] = wk_layer_norm(x, (const int64_t[]){16}, 1, g_b, g_b, 1e-5, NULL);
  p[k++] = wk_mean_dim(x, (const int64_t[]){1}, 1, true);
  /* shapes: [b, 16] -> [b, 4, 4] and back through transposes, slices, pads, pools */
  wk_tensor *s = wk_view(x, (const int64_t[]){wk_tensor_size(x, 0), 4, 4}, 3);
  p[k++] = wk_flatten(wk_permute(s, (const int64_t[]){0, 2, 1}, 3), 1, -1);
  p[k++] = wk_flatten(wk_transpose(s, 1, 2), 1, -1);
  p[k++] = wk_slice(x, 1, 2, 14, 3), p[k++] = wk_narrow(x, 1, 5, 4), p[k++] = wk_unsqueeze(wk_select(x, 1, 3), 1);
  p[k++] = wk_flip(x, (const int64_t[]){1}, 1), p[k++] = wk_repeat(wk_narrow(x, 1, 0, 2), (const int64_t[]){1, 3}, 2);
  p[k++] = wk_pad(x, (const int64_t[]){1, 2}, 2, "constant", 0.5),
  p[k++] = wk_pad(x, (const int64_t[]){2, 1}, 2, "reflect", 0);
  p[k++] = wk_expand(wk_narrow(x, 1, 0, 1), (const int64_t[]){-1, 3}, 2);
  wk_tensor *im = wk_unsqueeze(s, 1); /* [b, 1, 4, 4] */
  p[k++] = wk_flatten(wk_avg_pool2d(im, 2, 2, 0), 1, -1), p[k++] = wk_flatten(wk_adaptive_avg_pool2d(im, 2, 2), 1, -1);
  p[k++] = wk_flatten(wk_adaptive_avg_pool2d(im, 1, 1), 1, -1);
  p[k++] = wk_flatten(wk_max_pool2d_with_indices(im, 3, 1, 1, NULL), 1, -1);
  p[k++] = wk_flatten(wk_stack((wk_tensor *[]){x, a}, 2, 2), 1, -1);
  /* linear algebra with captured weights */
  p[k++] = wk_mm(x, g_w), p[k++] = wk_addmm(g_b, x, wk_t(wk_narrow(wk_t(g_w), 0, 0, 16)), 0.5, 2);
  p[k++] = wk_linear(x, wk_t(g_w), NULL), p[k++] = wk_matmul(x, g_w);
  p[k++] = wk_flatten(wk_bmm(s, wk_transpose(s, 1, 2)), 1, -1);
  /* reductions, indexing, splits */
  p[k++] = wk_cumsum(x, 1), p[k++] = wk_to_dtype(wk_argmax_dim(x, 1, true), WK_F32);
  p[k++] = wkx_amax(x, (const int64_t[]){1}, 1, true), p[k++] = wkx_logsumexp(x, (const int64_t[]){1}, 1, true);
  p[k++] = wk_prod_dim(wk_mul_scalar(a, 0.5), 1, true);
  wk_tensor *mi = NULL;
  p[k++] = wk_max_dim(x, 1, true, &mi), p[k++] = wk_to_dtype(mi, WK_F32);
  wk_tensor *ti = NULL;
  p[k++] = wk_topk(x, 3, 1, true, true, &ti), p[k++] = wk_to_dtype(ti, WK_F32);
  wk_tensor *idx = wk_tensor_from_data((const int64_t[]){3, 0, 15, 7}, WK_I64, (const int64_t[]){4}, 1);
  p[k++] = wk_index_select(x, 1, idx);
  wk_tensor *gi = wk_expand(wk_unsqueeze(idx, 0), (const int64_t[]){wk_tensor_size(x, 0), 4}, 2);
  p[k++] = wk_gather(x, 1, gi);
  wk_tensor *pieces[4];
  int np = wk_chunk(x, 3, 1, pieces, 4);
  for (int i = 0; i < np; i++) p[k++] = pieces[i];
  wk_tensor *y = wk_cat(p, k, 1);
  for (int i = 0; i < k; i++)
    if (!p[i]) y = NULL;
  wk_scope_keep(y);
  wk_scope_end();
  out[0] = y;
  *nout = 1;
  return y ? WK_OK : wk_last_error();
}

static int ops(const char *dir, FILE *man, int opset) {
  char path[1024], in[1024], outp[1024];
  int64_t wshape[] = {16, 16};
  wk_manual_seed(9);
  g_w = wk_randn(wshape, 2, (wk_options){0});
  g_b = wk_randn(wshape + 1, 1, (wk_options){0});
  int64_t shape[] = {2, 16};
  wk_tensor *x = wk_randn(shape, 2, (wk_options){0});
  static const wk_trace_dim dyn[] = {{0, 0, "batch"}};
  wk_trace_options o = {sizeof o, dyn, 1, NULL, (const char *[]){"input"}};
  wk_graph *g = wk_trace(ops_prog, NULL, &x, 1, &o);
  wk_release(x);
  char name[32];
  snprintf(name, sizeof name, "ops%d", opset);
  snprintf(path, sizeof path, "%s/%s.onnx", dir, name);
  if (!g || wk_onnx_export_graph(g, path, WK_ONNX_EXPORT_OPTS(.opset = opset))) {
    fprintf(stderr, "onnx_ref: ops at opset %d: %s\n", opset, wk_last_error_message());
    return 1;
  }
  wk_graph_release(g);
  for (int64_t b = 1; b <= 3; b += 2) {
    shape[0] = b;
    wk_tensor *xb = wk_randn(shape, 2, (wk_options){0}), *y = NULL;
    int nout = 0;
    if (ops_prog(NULL, &xb, 1, &y, 1, &nout)) return 1;
    snprintf(in, sizeof in, "%s/%s_b%lld_in.bin", dir, name, (long long)b);
    snprintf(outp, sizeof outp, "%s/%s_b%lld_out.bin", dir, name, (long long)b);
    if (write_raw(in, xb) || write_raw(outp, y)) return 1;
    fprintf(man, "%s %lld %s %s %lld 16 : %lld %lld\n", name, (long long)b, in, outp, (long long)b, (long long)b,
            (long long)wk_tensor_size(y, 1));
    wk_release(xb), wk_release(y);
  }
  wk_release(g_w), wk_release(g_b);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2 && !(argc == 3 && !strcmp(argv[2], "--resnet18-224"))) {
    fprintf(stderr, "usage: onnx_ref DIR [--resnet18-224]\n");
    return 2;
  }
  if (wk_init()) {
    fprintf(stderr, "onnx_ref: %s\n", wk_last_error_message());
    return 1;
  }
  if (argc == 3) { /* for bench/onnx_resnet.py: DIR/resnet18_224.onnx only, dynamic batch */
    wk_module *m = wk_nn_resnet18((wk_resnet_opts){0});
    int64_t shape[] = {1, 3, 224, 224};
    wk_tensor *x = m && !wk_module_train(m, false) ? wk_randn(shape, 4, (wk_options){0}) : NULL;
    char path[1024];
    snprintf(path, sizeof path, "%s/resnet18_224.onnx", argv[1]);
    wk_status st =
        x ? wk_onnx_export(m, &x, 1, path,
                           WK_ONNX_EXPORT_OPTS(.input_names = (const char *[]){"input"}, .ninput_names = 1,
                                               .dynamic_axes = (wk_onnx_dynamic_axis[]){{"input", 0, "batch"}},
                                               .ndynamic_axes = 1))
          : wk_last_error();
    if (st) fprintf(stderr, "onnx_ref: %s\n", wk_last_error_message());
    wk_release(x);
    wk_module_release(m);
    return st ? 1 : 0;
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
  bad |= one(argv[1], "resnet50", wk_nn_resnet50((wk_resnet_opts){0}), rgb, 3, man);
  /* ConvTranspose2d (Wick composes it: zero-stuffing, pad, conv2d) between two convs */
  const int64_t small[] = {3, 9, 9};
  bad |= one(
      argv[1], "convtranspose",
      wk_nn_sequential(
          (wk_module *[]){wk_nn_conv2d(3, 8, 3, (wk_conv2d_opts){.stride = 2, .padding = 1}), wk_nn_relu(),
                          wk_nn_conv_transpose2d(
                              8, 6, 3, (wk_conv2d_opts){.stride = 2, .padding = 1, .output_padding = 1, .groups = 2}),
                          wk_nn_relu(), wk_nn_conv_transpose2d(6, 4, 2, (wk_conv2d_opts){.stride = 3, .dilation = 2})},
          5),
      small, 3, man);
  /* external data (forced; the file is small): resnet18's initializers in resnet18_ext.onnx.data */
  bad |= one_x(argv[1], "resnet18_ext", wk_nn_resnet18((wk_resnet_opts){0}), rgb, 3, man, WK_ONNX_EXTERNAL_ALWAYS);
  bad |= ops(argv[1], man, 13) | ops(argv[1], man, 17) | ops(argv[1], man, 20);
  bad |= fclose(man) != 0;
  return bad;
}
