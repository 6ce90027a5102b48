/* wick run MODEL.onnx: an ONNX model imported by the onnx plugin and replayed
 * on any device (wk_graph_run), with inputs from .npy or safetensors files or
 * random data, outputs to .npy or safetensors, latency with --bench, and the
 * file's summary with --info. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wick/io.h>
#include <wick/onnx.h>
#include <wick/wick.h>

#include "tools.h"

static const char g_help[] =
    "usage: wick run MODEL.onnx [--input NAME=FILE]... [--shape NAME=1x3x224x224]... [--output FILE]\n"
    "                 [--device cpu|cuda[:N]] [--bench N] [--seed N] [--no-fold] [--no-channels-last]\n"
    "       wick run MODEL.onnx --info\n"
    "\n"
    "Imports MODEL.onnx (the onnx plugin) and runs it once on the device.\n"
    "  --input NAME=FILE  input NAME from a .npy file, or from the tensor NAME (or the only one) of a\n"
    "                     .safetensors file; NAME may be left out for a one-input model\n"
    "  --shape NAME=DIMS  random normal data of that shape for NAME (dynamic dims need it; static\n"
    "                     inputs without --input get random data of their declared shape)\n"
    "  --output FILE      every output to a .safetensors file (by output name), or the first to a .npy\n"
    "  --bench N          N timed runs after one warm-up: latency (mean, median, min) and throughput\n"
    "  --info             the inputs, outputs, opset, producer and op counts of the file\n"
    "  --no-fold          keep each BatchNormalization after a Conv as it is (by default it is folded\n"
    "                     into the Conv's weight and bias: faster, results differ by rounding)\n"
    "  --no-channels-last on the cpu, 4-D float inputs are passed in channels-last order (NHWC in\n"
    "                     memory, torch.channels_last) so convolutions run without layout reorders;\n"
    "                     this keeps them row-major (results differ by rounding)\n";

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- .npy (format 1.0 to 3.0, little-endian, C order) ---- */
static const struct {
  const char *descr;
  wk_dtype dt;
} k_npy[] = {{"<f4", WK_F32}, {"<f8", WK_F64}, {"<f2", WK_F16}, {"<i8", WK_I64}, {"<i4", WK_I32},
             {"<i2", WK_I16}, {"|i1", WK_I8},  {"|u1", WK_U8},  {"|b1", WK_BOOL}};

static wk_tensor *npy_read(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return wk_error(WK_ERR_IO, "wick run: cannot open '%s'", path), NULL;
  unsigned char pre[10];
  wk_tensor *t = NULL;
  char *hdr = NULL;
  if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) || pre[6] < 1 || pre[6] > 3) {
    wk_error(WK_ERR_IO, "wick run: '%s' is not a .npy file", path);
    goto out;
  }
  size_t hl = pre[8] | (size_t)pre[9] << 8;
  if (pre[6] >= 2) { /* a 4-byte header length */
    unsigned char more[2];
    if (fread(more, 1, 2, f) != 2) goto bad;
    hl |= (size_t)more[0] << 16 | (size_t)more[1] << 24;
  }
  if (hl > 1 << 20 || !(hdr = calloc(hl + 1, 1)) || fread(hdr, 1, hl, f) != hl) goto bad;
  const char *d = strstr(hdr, "'descr':"), *fo = strstr(hdr, "'fortran_order':"), *sh = strstr(hdr, "'shape':");
  if (!d || !fo || !sh) goto bad;
  wk_dtype dt = 0;
  for (size_t i = 0; i < sizeof k_npy / sizeof *k_npy && !dt; i++)
    if (strstr(d, k_npy[i].descr) && strstr(d, k_npy[i].descr) < d + 16) dt = k_npy[i].dt;
  if (!dt) {
    wk_error(WK_ERR_DTYPE, "wick run: '%s': unsupported dtype (little-endian f2/f4/f8, i1/i2/i4/i8, u1, b1)", path);
    goto out;
  }
  if (!strncmp(fo + 16, " True", 5)) {
    wk_error(WK_ERR_IO, "wick run: '%s' is in Fortran order", path);
    goto out;
  }
  const char *p = strchr(sh, '(');
  if (!p) goto bad;
  int64_t dims[WK_MAX_DIMS], numel = 1;
  int nd = 0;
  for (p++; *p && *p != ')';) {
    while (*p == ' ' || *p == ',') p++;
    if (*p == ')') break;
    char *end;
    long long v = strtoll(p, &end, 10);
    if (end == p || v < 0 || nd == WK_MAX_DIMS || (v && numel > INT64_MAX / v)) goto bad;
    dims[nd++] = v;
    numel *= v;
    p = end;
  }
  size_t nbytes = (size_t)numel * wk_dtype_size(dt);
  void *buf = malloc(nbytes ? nbytes : 1);
  if (!buf) {
    wk_error(WK_ERR_NO_MEMORY, "wick run: out of memory reading '%s'", path);
    goto out;
  }
  if (fread(buf, 1, nbytes, f) != nbytes) {
    free(buf);
    wk_error(WK_ERR_IO, "wick run: '%s' is shorter than its header says", path);
    goto out;
  }
  t = wk_tensor_from_data(numel ? buf : NULL, dt, dims, nd);
  free(buf);
  goto out;
bad:
  wk_error(WK_ERR_IO, "wick run: '%s' has a malformed .npy header", path);
out:
  free(hdr);
  fclose(f);
  return t;
}

static wk_status npy_write(const char *path, wk_tensor *t) {
  const char *descr = NULL;
  for (size_t i = 0; i < sizeof k_npy / sizeof *k_npy; i++)
    if (k_npy[i].dt == wk_tensor_dtype(t)) descr = k_npy[i].descr;
  if (!descr) return wk_error(WK_ERR_DTYPE, "wick run: %s has no .npy dtype", wk_dtype_name(wk_tensor_dtype(t)));
  char hdr[512];
  int n = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (int d = 0; d < wk_tensor_dim(t); d++)
    n += snprintf(hdr + n, sizeof hdr - (size_t)n, "%lld%s", (long long)wk_tensor_size(t, d),
                  wk_tensor_dim(t) == 1      ? ","
                  : d + 1 < wk_tensor_dim(t) ? ", "
                                             : "");
  n += snprintf(hdr + n, sizeof hdr - (size_t)n, "), }");
  while ((10 + n + 1) % 64) hdr[n++] = ' ';
  hdr[n++] = '\n';
  wk_tensor *c = wk_contiguous(t);
  FILE *f = c ? fopen(path, "wb") : NULL;
  if (!f) {
    wk_release(c);
    return wk_error(WK_ERR_IO, "wick run: cannot write '%s'", path);
  }
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(n & 0xff), (unsigned char)(n >> 8)};
  size_t nb = (size_t)wk_tensor_numel(c) * wk_dtype_size(wk_tensor_dtype(c));
  bool ok = fwrite(pre, 1, 10, f) == 10 && fwrite(hdr, 1, (size_t)n, f) == (size_t)n &&
            (!nb || fwrite(wk_tensor_data(c), 1, nb, f) == nb);
  ok &= fclose(f) == 0;
  wk_release(c);
  return ok ? WK_OK : wk_error(WK_ERR_IO, "wick run: writing '%s' failed", path);
}

static bool ends_with(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && !strcmp(s + a - b, suf);
}

/* An input from FILE: .npy, or tensor `name` (or the only one) of a .safetensors file. */
static wk_tensor *read_input(const char *name, const char *file) {
  if (ends_with(file, ".npy")) return npy_read(file);
  if (!ends_with(file, ".safetensors"))
    return wk_error(WK_ERR_INVALID_ARG, "wick run: '%s': inputs are .npy or .safetensors files", file), NULL;
  wk_state_dict *sd = NULL;
  if (wk_load_safetensors(file, &sd, NULL)) return NULL;
  wk_tensor *t = wk_state_dict_get(sd, name);
  if (!t && wk_state_dict_size(sd) == 1) t = wk_state_dict_value(sd, 0);
  if (!t) wk_error(WK_ERR_NOT_FOUND, "wick run: '%s' has no tensor named '%s' (and more than one tensor)", file, name);
  wk_retain(t);
  wk_state_dict_free(sd);
  return t;
}

static int info_cmd(const char *path) {
  wk_onnx_info in = {.struct_size = sizeof in};
  if (wk_onnx_info_read(path, &in)) {
    fprintf(stderr, "wick run: %s\n", wk_last_error_message());
    return 1;
  }
  printf("%s: ONNX IR %lld, opset %lld, producer %s %s, %d initializers\n", path, (long long)in.ir_version,
         (long long)in.opset, *in.producer_name ? in.producer_name : "?", in.producer_version, in.ninitializers);
  for (int i = 0; i < in.ninputs; i++) printf("  input  %-20s %s\n", in.input_names[i], in.input_shapes[i]);
  for (int i = 0; i < in.noutputs; i++) printf("  output %-20s %s\n", in.output_names[i], in.output_shapes[i]);
  int total = 0;
  for (int i = 0; i < in.nops; i++) total += in.op_counts[i];
  printf("  %d nodes:", total);
  for (int i = 0; i < in.nops; i++) printf(" %s %d%s", in.op_types[i], in.op_counts[i], i + 1 < in.nops ? "," : "\n");
  wk_onnx_info_free(&in);
  return 0;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int wick_run_cmd(int argc, char **argv) {
  const char *model = NULL, *output = NULL, *device = "cpu";
  const char *in_spec[64], *shape_spec[64];
  int nin_spec = 0, nshape = 0, bench = 0;
  bool info = false, fold = true, channels_last = true;
  unsigned long long seed = 0;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fputs(g_help, stdout);
      return 0;
    }
    if (!strcmp(a, "--info")) {
      info = true;
      continue;
    }
    if (!strcmp(a, "--no-fold")) {
      fold = false;
      continue;
    }
    if (!strcmp(a, "--no-channels-last")) {
      channels_last = false;
      continue;
    }
    if (a[0] == '-' && a[1] == '-') {
      if (!v) {
        fprintf(stderr, "wick run: %s needs a value\n%s", a, g_help);
        return 2;
      }
      char *end = NULL;
      if (!strcmp(a, "--input") && nin_spec < 64)
        in_spec[nin_spec++] = v;
      else if (!strcmp(a, "--shape") && nshape < 64)
        shape_spec[nshape++] = v;
      else if (!strcmp(a, "--output"))
        output = v;
      else if (!strcmp(a, "--device"))
        device = v;
      else if (!strcmp(a, "--bench"))
        bench = (int)strtol(v, &end, 10);
      else if (!strcmp(a, "--seed"))
        seed = strtoull(v, &end, 10);
      else {
        fprintf(stderr, "wick run: unknown option %s\n%s", a, g_help);
        return 2;
      }
      if ((end && *end) || bench < 0) {
        fprintf(stderr, "wick run: bad value '%s' for %s\n", v, a);
        return 2;
      }
      i++;
      continue;
    }
    if (model) {
      fprintf(stderr, "wick run: one model, got '%s' and '%s'\n", model, a);
      return 2;
    }
    model = a;
  }
  if (!model) {
    fputs(g_help, stderr);
    return 2;
  }
  if (wk_init() != WK_OK) {
    fprintf(stderr, "wick run: initialisation failed: %s\n", wk_last_error_message());
    return 1;
  }
  if (info) {
    int r = info_cmd(model);
    wk_shutdown();
    return r;
  }
  wk_device dev;
  if (wk_device_parse(device, &dev)) {
    fprintf(stderr, "wick run: --device: %s\n", wk_last_error_message());
    wk_shutdown();
    return 2;
  }
  wk_graph *g = wk_onnx_load(model, WK_ONNX_LOAD_OPTS(.device = dev, .fold_batch_norm = fold));
  if (!g) {
    fprintf(stderr, "wick run: %s\n", wk_last_error_message());
    wk_shutdown();
    return 1;
  }
  int nin = wk_graph_num_inputs(g), nout = wk_graph_num_outputs(g), rc = 1;
  /* the file's output names (the graph names values after their ops) */
  wk_onnx_info fi = {.struct_size = sizeof fi};
  if (wk_onnx_info_read(model, &fi) || fi.noutputs != nout) {
    fprintf(stderr, "wick run: %s\n", wk_last_error_message());
    wk_onnx_info_free(&fi);
    wk_graph_release(g);
    wk_shutdown();
    return 1;
  }
  wk_tensor **ins = calloc((size_t)(nin ? nin : 1), sizeof *ins),
            **outs = calloc((size_t)(nout ? nout : 1), sizeof *outs);
  if (!ins || !outs) goto done;
  wk_manual_seed(seed);
  for (int i = 0; i < nin; i++) {
    int v = wk_graph_input(g, i);
    const char *name = wk_graph_value_name(g, v);
    size_t nl = strlen(name);
    for (int k = 0; k < nin_spec && !ins[i]; k++) {
      const char *eq = strchr(in_spec[k], '=');
      bool match = eq ? (size_t)(eq - in_spec[k]) == nl && !strncmp(in_spec[k], name, nl) : nin == 1;
      if (match && !(ins[i] = read_input(name, eq ? eq + 1 : in_spec[k]))) {
        fprintf(stderr, "wick run: input '%s': %s\n", name, wk_last_error_message());
        goto done;
      }
    }
    if (ins[i]) continue;
    int64_t sizes[WK_MAX_DIMS];
    int nd = -1;
    for (int k = 0; k < nshape && nd < 0; k++) {
      const char *eq = strchr(shape_spec[k], '=');
      bool match = eq ? (size_t)(eq - shape_spec[k]) == nl && !strncmp(shape_spec[k], name, nl) : nin == 1;
      if (match && (nd = wick_parse_shape(eq ? eq + 1 : shape_spec[k], sizes)) < 0) {
        fprintf(stderr, "wick run: --shape '%s' is not like 1x3x224x224\n", shape_spec[k]);
        goto done;
      }
    }
    if (nd < 0) { /* the declared shape, when static */
      nd = wk_graph_value_ndim(g, v);
      const wk_symdim *d = wk_graph_value_dims(g, v);
      for (int k = 0; k < nd; k++) {
        if (d[k].a != 0 && d[k].sym0 >= 0) {
          char b[64];
          if (d[k].a == 1 && d[k].b == 0 && d[k].c == 1 && d[k].m == 1 && d[k].d == 0 && d[k].sym1 < 0)
            snprintf(b, sizeof b, "%s", wk_graph_symbol_name(g, d[k].sym0)); /* the file's dim_param */
          else
            wk_symdim_str(g, d[k], b, sizeof b);
          fprintf(stderr, "wick run: input '%s' has the dynamic dim %s: give --input or --shape %s=...\n", name, b,
                  name);
          goto done;
        }
        sizes[k] = wk_symdim_eval(d[k], NULL);
      }
    }
    wk_dtype dt = wk_graph_value_dtype(g, v);
    wk_tensor *r = wk_randn(sizes, nd, (wk_options){.dtype = wk_dtype_is_floating(dt) ? dt : WK_F32, .device = dev});
    ins[i] = r && !wk_dtype_is_floating(dt) ? wk_to_dtype(r, dt) : wk_retain(r);
    wk_release(r);
    if (!ins[i]) {
      fprintf(stderr, "wick run: input '%s': %s\n", name, wk_last_error_message());
      goto done;
    }
  }
  for (int i = 0; i < nin; i++) { /* file inputs go to the device */
    wk_tensor *m = wk_to_device(ins[i], dev);
    wk_release(ins[i]);
    if (!(ins[i] = m)) goto fail;
    /* 4-D float inputs on the cpu in channels-last order: the convolutions then run NHWC end to end
       (oneDNN's nhwc kernels, no reorder of the activations around each one) */
    bool image = wk_tensor_dim(m) == 4 && wk_dtype_is_floating(wk_tensor_dtype(m));
    if (channels_last && dev.type == WK_DEVICE_CPU && image) {
      wk_tensor *c = wk_contiguous_format(m, WK_CHANNELS_LAST);
      wk_release(m);
      if (!(ins[i] = c)) goto fail;
    }
  }
  double t0 = now_ms();
  if (wk_graph_run(g, ins, nin, dev, outs, nout)) goto fail;
  wk_device_synchronize(dev);
  double first = now_ms() - t0;
  for (int i = 0; i < nout; i++) {
    char b[256] = "";
    int n = 0;
    for (int d = 0; d < wk_tensor_dim(outs[i]); d++)
      n += snprintf(b + n, sizeof b - (size_t)n, "%s%lld", d ? ", " : "", (long long)wk_tensor_size(outs[i], d));
    printf("output %s: %s[%s]\n", fi.output_names[i], wk_dtype_name(wk_tensor_dtype(outs[i])), b);
  }
  printf("first run: %.2f ms on %s\n", first, device);
  if (bench > 0) {
    double *ms = calloc((size_t)bench, sizeof *ms), sum = 0;
    if (!ms) goto done;
    for (int r = 0; r < bench; r++) {
      wk_tensor *tmp[64] = {0};
      double s = now_ms();
      wk_status st = wk_graph_run(g, ins, nin, dev, tmp, nout < 64 ? nout : 64);
      wk_device_synchronize(dev);
      ms[r] = now_ms() - s;
      sum += ms[r];
      for (int k = 0; k < 64; k++) wk_release(tmp[k]);
      if (st) {
        free(ms);
        goto fail;
      }
    }
    qsort(ms, (size_t)bench, sizeof *ms, cmp_d);
    int64_t batch = nin && wk_tensor_dim(ins[0]) ? wk_tensor_size(ins[0], 0) : 1;
    double mean = sum / bench;
    printf(
        "bench: %d runs, latency mean %.3f ms, median %.3f ms, min %.3f ms; throughput %.1f samples/s (batch %lld)\n",
        bench, mean, ms[bench / 2], ms[0], 1e3 * (double)batch / mean, (long long)batch);
    free(ms);
  }
  if (output) {
    wk_status st;
    if (ends_with(output, ".npy")) {
      wk_tensor *c = wk_to_device(outs[0], (wk_device){WK_DEVICE_CPU, 0});
      st = c ? npy_write(output, c) : wk_last_error();
      wk_release(c);
    } else if (ends_with(output, ".safetensors")) {
      wk_state_dict *sd = wk_state_dict_new();
      st = sd ? WK_OK : wk_last_error();
      for (int i = 0; i < nout && !st; i++) st = wk_state_dict_set(sd, fi.output_names[i], outs[i]);
      if (!st) st = wk_save_safetensors(sd, output);
      wk_state_dict_free(sd);
    } else {
      st = wk_error(WK_ERR_INVALID_ARG, "--output '%s': write .npy or .safetensors", output);
    }
    if (st) goto fail;
    printf("outputs written to %s\n", output);
  }
  rc = 0;
  goto done;
fail:
  fprintf(stderr, "wick run: %s\n", wk_last_error_message());
done:
  for (int i = 0; ins && i < nin; i++) wk_release(ins[i]);
  for (int i = 0; outs && i < nout; i++) wk_release(outs[i]);
  free(ins);
  free(outs);
  wk_onnx_info_free(&fi);
  wk_graph_release(g);
  wk_shutdown();
  return rc;
}
