/* onnx plugin entry: registers the "onnx" service (export of traced graphs
 * and modules to ONNX files, import of ONNX files as graphs). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "onnx_int.h"

static wk_status export_graph_buffer(const wk_graph *g, void **data, size_t *nbytes, const wk_onnx_export_opts *opts) {
  if (data) *data = NULL;
  if (nbytes) *nbytes = 0;
  if (!g) return wk_error(WK_ERR_NULL, "onnx export: the graph is NULL");
  if (!data || !nbytes) return wk_error(WK_ERR_NULL, "onnx export: argument '%s' is NULL", !data ? "data" : "nbytes");
  return ox_export(g, opts, NULL, data, nbytes, NULL, NULL);
}

static wk_status export_graph(const wk_graph *g, const char *path, const wk_onnx_export_opts *opts) {
  if (!g) return wk_error(WK_ERR_NULL, "onnx export: the graph is NULL");
  if (!path) return wk_error(WK_ERR_NULL, "onnx export: argument 'path' is NULL");
  /* the external data file, if one is written: next to the model, "<model>.data" unless named */
  const char *sl = strrchr(path, '/'), *base = sl ? sl + 1 : path;
  const char *loc = NULL;
  if (opts && opts->struct_size >= offsetof(wk_onnx_export_opts, external_data_location) + sizeof(char *))
    loc = opts->external_data_location;
  size_t dn = sl ? (size_t)(sl - path) + 1 : 0;
  char *dloc = loc ? NULL : wk_malloc(strlen(base) + 6);
  char *dpath = wk_malloc(dn + strlen(loc ? loc : base) + 6);
  if ((!loc && !dloc) || !dpath) {
    wk_free(dloc), wk_free(dpath);
    return wk_error(WK_ERR_NO_MEMORY, "onnx export: out of memory");
  }
  if (!loc) {
    sprintf(dloc, "%s.data", base);
    loc = dloc;
  }
  memcpy(dpath, path, dn);
  strcpy(dpath + dn, loc);
  void *data = NULL, *ext = NULL;
  size_t n = 0, next = 0;
  wk_status st = *base ? ox_export(g, opts, loc, &data, &n, &ext, &next)
                       : wk_error(WK_ERR_INVALID_ARG, "onnx export: path '%.300s' names no file", path);
  if (!st && ext) st = ox_write_atomic("onnx export", dpath, ext, next);
  if (!st) {
    st = ox_write_atomic("onnx export", path, data, n);
    if (st && ext) unlink(dpath); /* no model refers to it */
  }
  wk_free(ext);
  wk_free(data);
  wk_free(dloc);
  wk_free(dpath);
  return st;
}

static wk_status export_module(wk_module *m, wk_tensor *const *inputs, int ninputs, const char *path,
                               const wk_onnx_export_opts *opts) {
  if (!m) return wk_error(WK_ERR_NULL, "onnx export: the module is NULL");
  if (!path) return wk_error(WK_ERR_NULL, "onnx export: argument 'path' is NULL");
  if (ninputs < 1 || !inputs) return wk_error(WK_ERR_INVALID_ARG, "onnx export: at least one example input is needed");
  for (int i = 0; i < ninputs; i++)
    if (!inputs[i]) return wk_error(WK_ERR_NULL, "onnx export: example input %d is NULL", i);
  int nin_names = 0, ndyn = 0;
  const char *const *in_names = NULL;
  const wk_onnx_dynamic_axis *dyn = NULL;
  if (opts) {
    if (opts->struct_size < WK_ONNX_EXPORT_OPTS_V1_SIZE)
      return wk_error(WK_ERR_INVALID_ARG,
                      "onnx export: opts->struct_size is %zu; set it to sizeof(wk_onnx_export_opts)",
                      opts->struct_size);
    nin_names = opts->ninput_names, in_names = opts->input_names;
    ndyn = opts->ndynamic_axes, dyn = opts->dynamic_axes;
    if (nin_names < 0 || ndyn < 0 || (nin_names && !in_names) || (ndyn && !dyn))
      return wk_error(WK_ERR_INVALID_ARG, "onnx export: a name or axis count is negative or its array is NULL");
    if (nin_names > ninputs)
      return wk_error(WK_ERR_INVALID_ARG, "onnx export: %d input names for %d inputs", nin_names, ninputs);
  }
  /* the trace's names: the given ones, then "x", "x1", ... as wk_trace names them */
  char defname[64][16];
  const char **names = wk_calloc((size_t)ninputs, sizeof *names);
  wk_trace_dim *td = wk_calloc((size_t)(ndyn ? ndyn : 1), sizeof *td);
  if (!names || !td) {
    wk_free(names);
    wk_free(td);
    return wk_error(WK_ERR_NO_MEMORY, "onnx export: out of memory");
  }
  for (int i = 0; i < ninputs; i++) {
    if (i < nin_names)
      names[i] = in_names[i];
    else if (i < 64) {
      snprintf(defname[i], sizeof defname[i], i ? "x%d" : "x", i);
      names[i] = defname[i];
    } else
      names[i] = "x";
  }
  int ntd = 0;
  wk_status st = WK_OK;
  for (int k = 0; k < ndyn && !st; k++) {
    if (!dyn[k].tensor || !dyn[k].name) {
      st = wk_error(WK_ERR_INVALID_ARG, "onnx export: dynamic_axes[%d] has a NULL tensor or name", k);
      break;
    }
    for (int i = 0; i < ninputs; i++)
      if (names[i] && !strcmp(names[i], dyn[k].tensor)) {
        if (dyn[k].dim < 0 || dyn[k].dim >= wk_tensor_dim(inputs[i]))
          st = wk_error(WK_ERR_INDEX, "onnx export: dynamic axis: input '%s' has %d dims, no dim %d", dyn[k].tensor,
                        wk_tensor_dim(inputs[i]), dyn[k].dim);
        td[ntd++] = (wk_trace_dim){i, dyn[k].dim, dyn[k].name};
      }
  }
  wk_graph *g = NULL;
  if (!st) {
    wk_trace_options to = {sizeof to, td, ntd, NULL, names};
    g = wk_trace_module(m, inputs, ninputs, &to);
    if (!g) st = wk_last_error();
  }
  if (!st) {
    /* the symbols already carry the axes' names; output axes are named by export_graph */
    st = export_graph(g, path, opts);
  }
  wk_graph_release(g);
  wk_free(names);
  wk_free(td);
  return st;
}

static wk_graph *load_buffer(const void *data, size_t n, const wk_onnx_load_opts *opts) {
  if (!data && n) {
    wk_error(WK_ERR_NULL, "onnx load: argument 'data' is NULL");
    return NULL;
  }
  return ox_import(data ? data : (const void *)"", n, opts, NULL);
}

static wk_graph *load(const char *path, const wk_onnx_load_opts *opts) {
  if (!path) {
    wk_error(WK_ERR_NULL, "onnx load: argument 'path' is NULL");
    return NULL;
  }
  uint8_t *data;
  size_t n;
  if (ox_read_file("onnx load", path, OX_MAX_FILE, &data, &n)) return NULL;
  /* external data files are named relative to the model's directory */
  const char *sl = strrchr(path, '/');
  char *dir = sl ? wk_malloc((size_t)(sl - path) + 2) : NULL;
  if (sl && !dir) {
    wk_free(data);
    wk_error(WK_ERR_NO_MEMORY, "onnx load: out of memory");
    return NULL;
  }
  if (dir) {
    size_t dn = sl == path ? 1 : (size_t)(sl - path); /* "/m.onnx" -> "/" */
    memcpy(dir, path, dn);
    dir[dn] = 0;
  }
  wk_graph *g = ox_import(data, n, opts, dir ? dir : ".");
  wk_free(dir);
  wk_free(data);
  if (!g) {
    /* name the file in front of the message */
    char msg[768];
    snprintf(msg, sizeof msg, "%s", wk_last_error_message());
    wk_status code = wk_last_error();
    if (!strncmp(msg, "onnx load: ", 11)) {
      wk_clear_error(); /* replace the message, not keep the first */
      wk_error(code, "onnx load: '%.300s': %s", path, msg + 11);
    }
  }
  return g;
}

static wk_status info(const char *path, wk_onnx_info *out) {
  if (!path || !out) return wk_error(WK_ERR_NULL, "onnx info: argument '%s' is NULL", !path ? "path" : "out");
  uint8_t *data;
  size_t n;
  wk_status st = ox_read_file("onnx info", path, OX_MAX_FILE, &data, &n);
  if (st) return st;
  st = ox_info(data, n, out);
  wk_free(data);
  return st;
}

static const wk_onnx_iface g_onnx = {
    .struct_size = sizeof(wk_onnx_iface),
    .export_module = export_module,
    .export_graph = export_graph,
    .export_graph_buffer = export_graph_buffer,
    .load = load,
    .load_buffer = load_buffer,
    .info = info,
    .info_free = ox_info_free,
};

static wk_status onnx_init(void) {
  return wk_service_register(WK_ONNX_SERVICE, WK_ONNX_SERVICE_VERSION, &g_onnx);
}

WK_PLUGIN_DEFINE("onnx", "0.1.0", "ONNX export and import of graphs (the onnx service)", onnx_init, NULL)
