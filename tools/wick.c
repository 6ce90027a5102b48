/* The `wick` command line: `wick info [--json]` shows what the core found:
 * version and ABI, the plugin search path, every plugin candidate with its
 * status, reason and the ABI it was built for, device types, services, and
 * which plugin's kernel wins each op on each device type; `wick opcheck` runs
 * the SDK conformance checks on one op. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wick/wick.h>
#include <wick/sdk/opcheck.h>

#include "tools.h"

static const char *status_word(wk_plugin_status s) {
  return s == WK_PLUGIN_LOADED ? "loaded" : s == WK_PLUGIN_SKIPPED ? "skipped" : "failed";
}

/* Prints s as a JSON string literal. */
static void json_str(const char *s) {
  putchar('"');
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      printf("\\%c", c);
    else if (c == '\n')
      printf("\\n");
    else if (c < 0x20)
      printf("\\u%04x", c);
    else
      putchar(c);
  }
  putchar('"');
}

/* "1.2" for a plugin's ABI version, "?" (and false) when unknown (0). */
static bool abi_text(uint32_t v, char *buf, size_t n) {
  if (!v) {
    snprintf(buf, n, "?");
    return false;
  }
  snprintf(buf, n, "%u.%u", v >> 16, v & 0xffff);
  return true;
}

/* Device type ids that exist (cpu first). */
static int device_types(int32_t *out, int cap) {
  int n = 0;
  for (int32_t t = WK_DEVICE_CPU; t < WK_MAX_DEVICE_TYPES && n < cap; t++)
    if (wk_device_type_name(t)) out[n++] = t;
  return n;
}

/* Plugin whose kernel wins `op` on device type `t` (ignoring supports()),
 * or NULL. Kernels are kept in dispatch order. */
static const char *winner(const wk_op *op, int32_t t, int *nalt) {
  const char *win = NULL;
  *nalt = 0;
  for (int k = 0; k < wk_op_num_kernels(op); k++) {
    int32_t dt;
    const char *plugin;
    if (wk_op_kernel_info(op, k, &dt, NULL, NULL, &plugin)) continue;
    if (dt != t && dt != WK_DEVICE_DEFAULT) continue;
    if (!win)
      win = plugin;
    else
      (*nalt)++;
  }
  return win;
}

/* A WICK_DENY_KERNELS / WICK_FORCE_KERNELS entry (plugin[:op],...) whose plugin
 * part is neither "core" nor any candidate's name: it has no effect. The core
 * warns about these on stderr at start-up; `wick info` lists them too. */
typedef struct {
  const char *var;
  char name[128];
} unknown_entry;

static int unknown_kernel_plugins(unknown_entry *out, int cap) {
  static const char *const vars[] = {"WICK_DENY_KERNELS", "WICK_FORCE_KERNELS"};
  int n = 0;
  for (int v = 0; v < 2; v++) {
    const char *list = getenv(vars[v]);
    if (!list) continue;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
      char *colon = strchr(tok, ':');
      if (colon) *colon = 0;
      bool known = strcmp(tok, "core") == 0;
      for (int i = 0; i < wk_plugin_count() && !known; i++) known = strcmp(wk_plugin_name(wk_plugin_at(i)), tok) == 0;
      for (int j = 0; j < n && !known; j++) known = out[j].var == vars[v] && strcmp(out[j].name, tok) == 0;
      if (known || n == cap) continue;
      out[n].var = vars[v];
      snprintf(out[n].name, sizeof out[n].name, "%s", tok);
      n++;
    }
  }
  return n;
}

static void info_text(void) {
  printf("Wick %s (ABI %u.%u)\n", wk_version(), wk_abi_version() >> 16, wk_abi_version() & 0xffff);
  printf("Threads: %d\n", wk_num_threads());
  printf("Plugin search path: %s\n\nPlugins:\n", wk_plugin_search_path());
  for (int i = 0; i < wk_plugin_count(); i++) {
    wk_plugin *p = wk_plugin_at(i);
    char abi[32];
    abi_text(wk_plugin_abi_version(p), abi, sizeof abi);
    printf("  %-12s %-8s %-8s ABI %-5s %s\n", wk_plugin_name(p), status_word(wk_plugin_get_status(p)),
           wk_plugin_version(p), abi, wk_plugin_path(p));
    if (*wk_plugin_reason(p)) printf("               reason: %s\n", wk_plugin_reason(p));
    else if (*wk_plugin_description(p)) printf("               %s\n", wk_plugin_description(p));
  }
  if (wk_plugin_count() == 0) printf("  (none found)\n");
  unknown_entry unk[32];
  int nunk = unknown_kernel_plugins(unk, 32);
  if (nunk) printf("\nKernel overrides that name no plugin (they have no effect):\n");
  for (int i = 0; i < nunk; i++) printf("  %s: '%s'\n", unk[i].var, unk[i].name);
  int32_t types[WK_MAX_DEVICE_TYPES];
  int nt = device_types(types, WK_MAX_DEVICE_TYPES);
  printf("\nDevices:\n");
  for (int i = 0; i < nt; i++) {
    const char *st = wk_device_type_status(types[i]);
    printf("  %-12s %d device%s%s%s\n", wk_device_type_name(types[i]), wk_device_count(types[i]),
           wk_device_count(types[i]) == 1 ? "" : "s", *st ? ": " : "", st);
  }
  printf("\nServices:\n");
  for (int i = 0; i < wk_service_count(); i++) {
    const char *name, *plugin;
    uint32_t ver;
    if (wk_service_info(i, &name, &ver, &plugin) == WK_OK) printf("  %-16s v%u  from %s\n", name, ver, plugin);
  }
  if (wk_service_count() == 0) printf("  (none)\n");
  printf("\nOps (%d) and the plugin whose kernel wins per device type (+N: fallbacks):\n", wk_op_count());
  printf("  %-36s", "op");
  for (int i = 0; i < nt; i++) printf(" %-14s", wk_device_type_name(types[i]));
  printf("\n");
  for (int o = 0; o < wk_op_count(); o++) {
    wk_op *op = wk_op_at(o);
    printf("  %-36s", wk_op_name(op));
    for (int i = 0; i < nt; i++) {
      int alt;
      const char *w = winner(op, types[i], &alt);
      char cell[64];
      if (!w)
        snprintf(cell, sizeof cell, "-");
      else if (alt)
        snprintf(cell, sizeof cell, "%s +%d", w, alt);
      else
        snprintf(cell, sizeof cell, "%s", w);
      printf(" %-14s", cell);
    }
    printf("\n");
  }
}

static void info_json(void) {
  printf("{\"version\": ");
  json_str(wk_version());
  printf(", \"abi\": \"%u.%u\", \"threads\": %d, \"search_path\": ", wk_abi_version() >> 16,
         wk_abi_version() & 0xffff, wk_num_threads());
  json_str(wk_plugin_search_path());
  printf(",\n \"plugins\": [");
  for (int i = 0; i < wk_plugin_count(); i++) {
    wk_plugin *p = wk_plugin_at(i);
    printf("%s\n  {\"name\": ", i ? "," : "");
    json_str(wk_plugin_name(p));
    printf(", \"status\": \"%s\", \"version\": ", status_word(wk_plugin_get_status(p)));
    json_str(wk_plugin_version(p));
    char abi[32];
    if (abi_text(wk_plugin_abi_version(p), abi, sizeof abi))
      printf(", \"abi\": \"%s\"", abi);
    else
      printf(", \"abi\": null");
    printf(", \"path\": ");
    json_str(wk_plugin_path(p));
    printf(", \"reason\": ");
    json_str(wk_plugin_reason(p));
    printf("}");
  }
  unknown_entry unk[32];
  int nunk = unknown_kernel_plugins(unk, 32);
  printf("],\n \"unknown_kernel_plugins\": [");
  for (int i = 0; i < nunk; i++) {
    printf("%s{\"variable\": \"%s\", \"name\": ", i ? ", " : "", unk[i].var);
    json_str(unk[i].name);
    printf("}");
  }
  int32_t types[WK_MAX_DEVICE_TYPES];
  int nt = device_types(types, WK_MAX_DEVICE_TYPES);
  printf("],\n \"devices\": [");
  for (int i = 0; i < nt; i++) {
    printf("%s{\"type\": ", i ? ", " : "");
    json_str(wk_device_type_name(types[i]));
    printf(", \"count\": %d, \"status\": ", wk_device_count(types[i]));
    json_str(wk_device_type_status(types[i]));
    printf("}");
  }
  printf("],\n \"services\": [");
  for (int i = 0; i < wk_service_count(); i++) {
    const char *name, *plugin;
    uint32_t ver;
    if (wk_service_info(i, &name, &ver, &plugin)) continue;
    printf("%s{\"name\": ", i ? ", " : "");
    json_str(name);
    printf(", \"version\": %u, \"plugin\": ", ver);
    json_str(plugin);
    printf("}");
  }
  printf("],\n \"ops\": [");
  for (int o = 0; o < wk_op_count(); o++) {
    wk_op *op = wk_op_at(o);
    printf("%s\n  {\"name\": ", o ? "," : "");
    json_str(wk_op_name(op));
    printf(", \"schema\": ");
    json_str(wk_op_schema(op));
    printf(", \"kernels\": {");
    int first = 1;
    for (int i = 0; i < nt; i++) {
      int alt;
      const char *w = winner(op, types[i], &alt);
      if (!w) continue;
      printf("%s", first ? "" : ", ");
      first = 0;
      json_str(wk_device_type_name(types[i]));
      printf(": {\"plugin\": ");
      json_str(w);
      printf(", \"fallbacks\": %d}", alt);
    }
    printf("}}");
  }
  printf("]}\n");
}

static const char g_opcheck_help[] =
    "usage: wick opcheck [OPTIONS] OP\n"
    "\n"
    "Runs the SDK conformance checks on OP (schema sanity, every kernel against the\n"
    "reference cpu kernel, mutation annotations, strided inputs, gradcheck, other\n"
    "devices against the cpu) on sample inputs built from its schema: a pseudo-random\n"
    "tensor for every Tensor argument (optional tensors: None), the schema's\n"
    "defaults, small values otherwise. Prints 'ok: ...' per check, then PASS (exit 0)\n"
    "or FAIL (exit 1); bad usage exits 2.\n"
    "\n"
    "Options:\n"
    "  --plugin PATH       load this plugin file first (repeatable); or put its\n"
    "                      directory on WICK_PLUGIN_PATH, not both\n"
    "  --shape SHAPE       shape of every tensor argument (default 3x4)\n"
    "  --dtype DTYPE       dtype of every tensor argument (default f64; gradcheck\n"
    "                      runs on float64 inputs only)\n"
    "  --arg NAME=VALUE    one argument's input (repeatable), by its schema name:\n"
    "                        Tensor:   SHAPE[:DTYPE] or :DTYPE  weight=4x3:f32  x=:i64\n"
    "                        int, float, Scalar, bool           alpha=0.25  keepdim=true\n"
    "                        int[], float[]                     dim=0,1\n"
    "                        str, ScalarType                    reduction=sum  dtype=f32\n"
    "                        optional arguments                 bias=none  (an optional\n"
    "                                                           tensor given a SHAPE is passed)\n"
    "  -h, --help          show this help\n"
    "\n"
    "SHAPE is sizes joined by 'x' (3x4, 5) or 'scalar' (0-dim); DTYPE is one of\n"
    "f32 f64 f16 bf16 i8 u8 i16 i32 i64 bool (or torch names: float32, int64, ...).\n"
    "\n"
    "Examples:\n"
    "  wick opcheck --plugin ./swiglu.so custom.swiglu\n"
    "  wick opcheck --arg self=2x3:f32 --arg other=3:f32 add\n"
    "  WICK_PLUGIN_PATH=$PWD wick opcheck --arg weight=4x3 --arg bias=none acme::linear\n";

/* wick opcheck [OPTIONS] OP: conformance checks of OP (see g_opcheck_help). */
static int opcheck_cmd(int argc, char **argv) {
  const char *plugins[16], *opname = NULL, *argspecs[WK_MAX_ARGS];
  int nplugins = 0, nspecs = 0;
  int64_t shape[WK_MAX_DIMS] = {3, 4};
  int nd = 2;
  wk_dtype dtype = WK_F64;
  for (int i = 2; i < argc; i++) {
    const char *o = argv[i];
    bool takes = strcmp(o, "--plugin") == 0 || strcmp(o, "--shape") == 0 || strcmp(o, "--dtype") == 0 ||
                 strcmp(o, "--arg") == 0;
    if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0) {
      fputs(g_opcheck_help, stdout);
      return 0;
    } else if (takes && i + 1 == argc) {
      fprintf(stderr, "wick opcheck: option '%s' needs a value (see wick opcheck --help)\n", o);
      return 2;
    } else if (strcmp(o, "--plugin") == 0) {
      if (nplugins == 16) {
        fprintf(stderr, "wick opcheck: at most 16 --plugin options\n");
        return 2;
      }
      plugins[nplugins++] = argv[++i];
    } else if (strcmp(o, "--shape") == 0) {
      if (!wk_opcheck_parse_shape(argv[++i], shape, &nd)) {
        fprintf(stderr, "wick opcheck: bad --shape '%s' (want e.g. 3x4, 5 or scalar)\n", argv[i]);
        return 2;
      }
    } else if (strcmp(o, "--dtype") == 0) {
      dtype = wk_dtype_parse(argv[++i]);
      if (dtype == WK_DTYPE_DEFAULT) {
        fprintf(stderr, "wick opcheck: --dtype: %s\n", wk_last_error_message());
        return 2;
      }
    } else if (strcmp(o, "--arg") == 0) {
      if (nspecs == WK_MAX_ARGS) {
        fprintf(stderr, "wick opcheck: at most %d --arg options\n", WK_MAX_ARGS);
        return 2;
      }
      argspecs[nspecs++] = argv[++i];
    } else if (o[0] == '-') {
      fprintf(stderr, "wick opcheck: unknown option '%s' (see wick opcheck --help)\n", o);
      return 2;
    } else if (opname) {
      fprintf(stderr, "wick opcheck: one OP at a time ('%s' and '%s' given)\n", opname, o);
      return 2;
    } else {
      opname = o;
    }
  }
  if (!opname) {
    fprintf(stderr, "usage: wick opcheck [--plugin PATH] [--shape 3x4] [--dtype f64] [--arg NAME=VALUE] OP\n"
                    "       (wick opcheck --help for more)\n");
    return 2;
  }
  if (wk_init() != WK_OK) {
    fprintf(stderr, "wick opcheck: %s\n", wk_last_error_message());
    return 1;
  }
  for (int i = 0; i < nplugins; i++)
    if (wk_plugin_load(plugins[i]) != WK_OK) {
      fprintf(stderr, "wick opcheck: %s\n", wk_last_error_message());
      return 1;
    }
  wk_op *op = wk_op_find(opname);
  if (!op) {
    fprintf(stderr,
            "wick opcheck: %s\n"
            "  If a plugin declares it, load that plugin: wick opcheck --plugin PATH/TO/PLUGIN.so %s,\n"
            "  or put its directory on WICK_PLUGIN_PATH (searched now: %s).\n"
            "  `wick info` lists the plugins found (with why any failed) and every declared op.\n",
            wk_last_error_message(), opname, *wk_plugin_search_path() ? wk_plugin_search_path() : "(nothing)");
    return 1;
  }
  static wk_opcheck_arg specs[WK_MAX_ARGS]; /* values point into them */
  for (int i = 0; i < nspecs; i++)
    if (wk_opcheck_parse_arg(op, argspecs[i], &specs[i]) != WK_OK) {
      fprintf(stderr, "wick opcheck: %s\n", wk_last_error_message());
      return 2;
    }
  wk_value args[WK_MAX_ARGS];
  wk_tensor *tensors[WK_MAX_ARGS];
  int64_t scratch[WK_MAX_ARGS];
  int nt = 0;
  int n = wk_opcheck_sample_args_ex(op, shape, nd, dtype, specs, nspecs, 1, args, tensors, &nt, scratch);
  if (n < 0) {
    printf("FAIL: %s: cannot build the sample inputs: %s\n", opname, wk_last_error_message());
    return 1;
  }
  wk_opcheck_opts o = {0, 0, false, stdout};
  wk_status s = wk_opcheck(opname, args, n, &o);
  for (int i = 0; i < nt; i++) wk_release(tensors[i]);
  if (s) {
    printf("FAIL: %s\n", wk_last_error_message());
    return 1;
  }
  printf("PASS: %s\n", opname);
  return 0;
}

static int usage(FILE *f) {
  fprintf(f,
          "usage: wick info [--json]   show version, plugins (with reasons and ABI), devices, services and kernels\n"
          "       wick info --probe    load each plugin alone in a child process: report crashes (signal), hangs\n"
          "       wick opcheck [--plugin PATH] [--shape 3x4] [--dtype f64] [--arg NAME=SHAPE[:DTYPE]] OP\n"
          "                            run the SDK conformance checks on OP (wick opcheck --help)\n"
          "       wick summary MODEL --input 1x3x224x224 [--batch N] [--depth 3] [--device meta] [--stats]\n"
          "                            torchinfo's table of a zoo model (shapes, params, mult-adds)\n"
          "       wick graph MODEL --input 1x3x224x224 [--static] [--device meta] [--passes]\n"
          "                            trace a zoo model and print its graph (symbolic batch)\n"
          "       wick run MODEL.onnx [--input NAME=FILE] [--shape NAME=DIMS] [--output FILE] [--device D] [--bench N]\n"
          "                            run an ONNX model (the onnx plugin); --info lists its inputs, outputs, ops\n"
          "       wick doctor DIR [--clean]  list (remove) temporary files that killed saves left in DIR\n"
          "       wick launch --nproc-per-node N PROGRAM [ARGS]  start N ranks with torchrun's environment\n"
          "                            (through Open MPI's mpirun; wick launch --help)\n"
          "       wick version         print the library version\n");
  return f == stderr ? 2 : 0;
}

int main(int argc, char **argv) {
  if (argc < 2) return usage(stderr);
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) return usage(stdout);
  if (strcmp(argv[1], "version") == 0) {
    printf("%s\n", wk_version());
    return 0;
  }
  if (strcmp(argv[1], "opcheck") == 0) return opcheck_cmd(argc, argv);
  if (strcmp(argv[1], "summary") == 0) return wick_summary_cmd(argc, argv);
  if (strcmp(argv[1], "graph") == 0) return wick_graph_cmd(argc, argv);
  if (strcmp(argv[1], "doctor") == 0) return wick_doctor_cmd(argc, argv);
  if (strcmp(argv[1], "launch") == 0) return wick_launch_cmd(argc, argv);
  if (strcmp(argv[1], "run") == 0) return wick_run_cmd(argc, argv);
  if (strcmp(argv[1], "info") == 0 && argc == 3 && strcmp(argv[2], "--probe") == 0) return wick_probe_cmd();
  if (strcmp(argv[1], "info") == 0) {
    bool json = argc > 2 && strcmp(argv[2], "--json") == 0;
    if (argc > 2 && !json) {
      fprintf(stderr, "wick info: unknown option '%s'\n", argv[2]);
      return 2;
    }
    if (wk_init() != WK_OK) {
      fprintf(stderr, "wick: initialisation failed: %s\n", wk_last_error_message());
      return 1;
    }
    if (json)
      info_json();
    else
      info_text();
    wk_shutdown();
    return 0;
  }
  fprintf(stderr, "wick: unknown command '%s'\n", argv[1]);
  return usage(stderr);
}
