/* `wick graph MODEL --input 1x3x224x224`: traces a zoo model with a dynamic
 * batch (on the meta device by default: no data) and prints its graph as
 * torch.fx prints one, with symbolic shapes, module paths and guards. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools.h"

static const char g_help[] =
    "usage: wick graph MODEL --input 1x3x224x224 [--static] [--device meta] [--passes] [--stats]\n"
    "\n"
    "Traces a zoo model's forward (eval mode) and prints the graph: one row per op with\n"
    "its arguments, result shape and module path, then the symbols and guards.\n"
    "\n"
    "  MODEL          " WICK_ZOO_NAMES "\n"
    "  --input SHAPE  the example input's shape, batch first\n"
    "  --static       no dynamic batch (every dim specialised)\n"
    "  --device DEV   where the model and the trace run (default meta: no data)\n"
    "  --passes       run dead-code elimination and CSE before printing\n"
    "  --stats        print the node count and the trace time on stderr\n";

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int wick_graph_cmd(int argc, char **argv) {
  const char *model = NULL, *device = "meta";
  int64_t shape[WK_MAX_DIMS];
  int nd = -1;
  bool dynamic = true, passes = false, stats = false;
  for (int i = 2; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(g_help, stdout);
      return 0;
    } else if (strcmp(argv[i], "--input") == 0 && i + 1 < argc) {
      if ((nd = wick_parse_shape(argv[++i], shape)) < 1) {
        fprintf(stderr, "wick graph: bad --input '%s' (want e.g. 1x3x224x224)\n", argv[i]);
        return 2;
      }
    } else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
      device = argv[++i];
    } else if (strcmp(argv[i], "--static") == 0) {
      dynamic = false;
    } else if (strcmp(argv[i], "--passes") == 0) {
      passes = true;
    } else if (strcmp(argv[i], "--stats") == 0) {
      stats = true;
    } else if (argv[i][0] == '-' || model) {
      fprintf(stderr, "wick graph: unexpected argument '%s'\n%s", argv[i], g_help);
      return 2;
    } else {
      model = argv[i];
    }
  }
  if (!model || nd < 0) {
    fprintf(stderr, "wick graph: %s\n%s", model ? "--input is required" : "MODEL is required", g_help);
    return 2;
  }
  if (dynamic && shape[0] < 1) {
    fprintf(stderr, "wick graph: the example batch must be at least 1 (or pass --static)\n");
    return 2;
  }
  if (wk_init() != WK_OK) {
    fprintf(stderr, "wick: initialisation failed: %s\n", wk_last_error_message());
    return 1;
  }
  wk_device dev;
  if (wk_device_parse(device, &dev) != WK_OK) {
    fprintf(stderr, "wick graph: %s\n", wk_last_error_message());
    return 1;
  }
  bool known;
  wk_module *m = wick_zoo_model(model, dev, &known);
  if (!m) {
    if (!known) fprintf(stderr, "wick graph: unknown model '%s' (%s)\n", model, WICK_ZOO_NAMES);
    else fprintf(stderr, "wick graph: %s\n", wk_last_error_message());
    return known ? 1 : 2;
  }
  int rc = 1;
  wk_graph *g = NULL;
  wk_module_train(m, false);
  wk_tensor *x = wk_zeros(shape, nd, (wk_options){.device = dev});
  const wk_trace_dim batch[] = {{0, 0, "batch"}};
  wk_trace_options o = {sizeof o, batch, dynamic ? 1 : 0, NULL, NULL};
  double t0 = now_ms();
  g = x ? wk_trace_module(m, &x, 1, &o) : NULL;
  double t1 = now_ms();
  if (g && passes && (wk_graph_dce(g) < 0 || wk_graph_cse(g) < 0)) {
    wk_graph_release(g);
    g = NULL;
  }
  char *s = g ? wk_graph_to_string(g) : NULL;
  if (s) {
    fputs(s, stdout);
    if (stats) fprintf(stderr, "wick graph: %s: %d nodes, traced in %.1f ms\n", model, wk_graph_num_nodes(g), t1 - t0);
    rc = 0;
  } else {
    fprintf(stderr, "wick graph: %s\n", wk_last_error_message());
  }
  wk_free(s);
  wk_graph_release(g);
  wk_release(x);
  wk_module_release(m);
  wk_shutdown();
  return rc;
}
