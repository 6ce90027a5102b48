/* The `wick` command line: `wick info [--json]` shows what the core found:
 * version and ABI, the plugin search path, every plugin candidate with its
 * status and reason, device types, services, and which plugin's kernel wins
 * each op on each device type. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wick/wick.h>
#include <wick/sdk/opcheck.h>

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
    printf("  %-12s %-8s %-8s %s\n", wk_plugin_name(p), status_word(wk_plugin_get_status(p)),
           wk_plugin_version(p), wk_plugin_path(p));
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

/* wick opcheck [--plugin PATH] [--shape AxB] OP: conformance checks of OP on
 * float64 sample inputs built from its schema. */
static int opcheck_cmd(int argc, char **argv) {
  const char *plugin = NULL, *opname = NULL;
  int64_t shape[WK_MAX_DIMS] = {3, 4};
  int nd = 2;
  for (int i = 2; i < argc; i++) {
    if (strcmp(argv[i], "--plugin") == 0 && i + 1 < argc) {
      plugin = argv[++i];
    } else if (strcmp(argv[i], "--shape") == 0 && i + 1 < argc) {
      nd = 0;
      for (char *p = argv[++i]; *p && nd < WK_MAX_DIMS;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0) {
          fprintf(stderr, "wick opcheck: bad --shape '%s' (want e.g. 3x4)\n", argv[i]);
          return 2;
        }
        shape[nd++] = v;
        p = *end == 'x' ? end + 1 : end;
        if (*end && *end != 'x') {
          fprintf(stderr, "wick opcheck: bad --shape '%s' (want e.g. 3x4)\n", argv[i]);
          return 2;
        }
      }
    } else if (argv[i][0] == '-') {
      fprintf(stderr, "wick opcheck: unknown option '%s'\n", argv[i]);
      return 2;
    } else {
      opname = argv[i];
    }
  }
  if (!opname) {
    fprintf(stderr, "usage: wick opcheck [--plugin PATH] [--shape 3x4] OP\n");
    return 2;
  }
  if (wk_init() != WK_OK || (plugin && wk_plugin_load(plugin) != WK_OK)) {
    fprintf(stderr, "wick opcheck: %s\n", wk_last_error_message());
    return 1;
  }
  wk_op *op = wk_op_find(opname);
  if (!op) {
    fprintf(stderr, "wick opcheck: %s\n", wk_last_error_message());
    return 1;
  }
  wk_value args[WK_MAX_ARGS];
  wk_tensor *tensors[WK_MAX_ARGS];
  int64_t scratch[WK_MAX_ARGS];
  int nt = 0;
  int n = wk_opcheck_sample_args(op, shape, nd, 1, args, tensors, &nt, scratch);
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
          "usage: wick info [--json]   show version, plugins (with reasons), devices, services and kernels\n"
          "       wick opcheck [--plugin PATH] [--shape 3x4] OP\n"
          "                            run the SDK conformance checks on OP\n"
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
