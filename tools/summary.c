/* `wick summary MODEL --input 1x3x224x224`: torchinfo's table for a zoo model
 * (per-layer output shapes, parameters, multiply-adds, sizes), computed on the
 * meta device by default, so no parameter or activation data is allocated. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <wick/nn.h>
#include <wick/wick.h>

#include "tools.h"

int wick_parse_shape(const char *text, int64_t *sizes) {
  int nd = 0;
  for (const char *p = text; *p;) {
    char *end;
    long long v = strtoll(p, &end, 10);
    if (end == p || v < 0 || nd == WK_MAX_DIMS || (*end && *end != 'x') || (*end == 'x' && !end[1])) return -1;
    sizes[nd++] = v;
    p = *end == 'x' ? end + 1 : end;
  }
  return nd;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static const char g_help[] =
    "usage: wick summary MODEL --input 1x3x224x224 [--batch N] [--depth 3] [--device meta] [--stats]\n"
    "\n"
    "Prints torchinfo's table of a zoo model: one row per module call (class:depth-index,\n"
    "output shape, parameters, multiply-adds), then the totals and sizes.\n"
    "\n"
    "  MODEL          resnet18, resnet34, resnet50, lenet (input 1x1x28x28), mlp (input 1x784)\n"
    "  --input SHAPE  the input's shape, batch first\n"
    "  --batch N      replaces the input's first dimension\n"
    "  --depth D      rows deeper than D are folded into their parent (default 3)\n"
    "  --device DEV   where the model and the forward live (default meta: no data)\n"
    "  --stats        print the time and the peak memory of the run on stderr\n";

wk_module *wick_zoo_model(const char *name, wk_device dev, bool *known) {
  wk_module *m = NULL;
  *known = true;
  /* built where it runs (torch's `with torch.device(...)`): on meta the
   * constructors allocate and initialise no data */
  wk_device prev = wk_set_default_device(dev);
  if (!strcmp(name, "resnet18") || !strcmp(name, "resnet34") || !strcmp(name, "resnet50")) {
    m = wk_nn_resnet(atoi(name + 6), (wk_resnet_opts){0});
  } else if (!strcmp(name, "lenet")) {
    m = wk_nn_lenet();
  } else if (!strcmp(name, "mlp")) {
    m = wk_nn_mlp(784, (const int64_t[]){128}, 1, 10);
  } else {
    *known = false;
  }
  wk_set_default_device(prev);
  /* the model lives where it runs: on meta its parameters hold no data */
  if (m && wk_module_to(m, dev, WK_DTYPE_DEFAULT) != WK_OK) {
    wk_module_release(m);
    m = NULL;
  }
  return m;
}

int wick_summary_cmd(int argc, char **argv) {
  const char *model = NULL, *device = "meta";
  int64_t shape[WK_MAX_DIMS];
  int nd = -1, depth = 3;
  long long batch = -1;
  bool stats = false;
  for (int i = 2; i < argc; i++) {
    char *end;
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(g_help, stdout);
      return 0;
    } else if (strcmp(argv[i], "--input") == 0 && i + 1 < argc) {
      if ((nd = wick_parse_shape(argv[++i], shape)) < 1) {
        fprintf(stderr, "wick summary: bad --input '%s' (want e.g. 1x3x224x224)\n", argv[i]);
        return 2;
      }
    } else if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc) {
      batch = strtoll(argv[++i], &end, 10);
      if (*end || end == argv[i] || batch < 0) {
        fprintf(stderr, "wick summary: bad --batch '%s'\n", argv[i]);
        return 2;
      }
    } else if (strcmp(argv[i], "--depth") == 0 && i + 1 < argc) {
      depth = (int)strtol(argv[++i], &end, 10);
      if (*end || end == argv[i] || depth < 1 || depth > 255) {
        fprintf(stderr, "wick summary: bad --depth '%s' (1 to 255)\n", argv[i]);
        return 2;
      }
    } else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
      device = argv[++i];
    } else if (strcmp(argv[i], "--stats") == 0) {
      stats = true;
    } else if (argv[i][0] == '-' || model) {
      fprintf(stderr, "wick summary: unexpected argument '%s'\n%s", argv[i], g_help);
      return 2;
    } else {
      model = argv[i];
    }
  }
  if (!model || nd < 0) {
    fprintf(stderr, "wick summary: %s\n%s", model ? "--input is required" : "MODEL is required", g_help);
    return 2;
  }
  if (batch >= 0) shape[0] = batch;
  double t0 = now_ms();
  if (wk_init() != WK_OK) {
    fprintf(stderr, "wick: initialisation failed: %s\n", wk_last_error_message());
    return 1;
  }
  wk_device dev;
  if (wk_device_parse(device, &dev) != WK_OK) {
    fprintf(stderr, "wick summary: %s\n", wk_last_error_message());
    return 1;
  }
  double t1 = now_ms();
  bool known;
  wk_module *m = wick_zoo_model(model, dev, &known);
  if (!m) {
    if (!known) fprintf(stderr, "wick summary: unknown model '%s' (%s)\n", model, WICK_ZOO_NAMES);
    else fprintf(stderr, "wick summary: %s\n", wk_last_error_message());
    return known ? 1 : 2;
  }
  double t2 = now_ms();
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  double rss_built = (double)ru.ru_maxrss / 1024.0;
  char *s = wk_module_summary(m, shape, nd, &(wk_summary_opts){sizeof(wk_summary_opts), .depth = depth, .device = dev});
  double t3 = now_ms();
  wk_module_release(m);
  if (!s) {
    fprintf(stderr, "wick summary: %s\n", wk_last_error_message());
    return 1;
  }
  fputs(s, stdout);
  wk_free(s);
  if (stats) {
    getrusage(RUSAGE_SELF, &ru);
    fprintf(stderr, "wick summary: init %.1f ms, model built %.1f ms, summary %.1f ms; peak RSS %.1f MB (%.1f MB once the "
            "model was built)\n", t1 - t0, t2 - t1, t3 - t2, (double)ru.ru_maxrss / 1024.0, rss_built);
  }
  wk_shutdown();
  return 0;
}
