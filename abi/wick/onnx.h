/* Wick ABI: the onnx service: graphs (graph.h) written to and read from ONNX
 * files (https://onnx.ai, the ModelProto of onnx.proto), so a model trained in
 * Wick runs in ONNX Runtime and a model exported by PyTorch runs in Wick.
 * The onnx plugin provides the service (it links protobuf-c); the inline
 * wrappers below fetch it once and call it, so user code never links it.
 *
 *   wk_onnx_export(net, &x, 1, "net.onnx", WK_ONNX_EXPORT_OPTS(
 *       .input_names = (const char *[]){"input"}, .ninput_names = 1,
 *       .dynamic_axes = (wk_onnx_dynamic_axis[]){{"input", 0, "batch"}}, .ndynamic_axes = 1));
 *   wk_graph *g = wk_onnx_load("net.onnx", NULL);   // then wk_graph_run(g, ...)
 *
 * EXPORT maps every node of a traced graph onto ONNX operators of the chosen
 * opset (PyTorch's torch.onnx.export conventions): parameters and buffers
 * become initializers named by their state_dict keys, node names carry the
 * module path ("layer1.0.conv1/Conv_12"), the graph's symbols become dim_params
 * ("batch"), and a view or reshape whose size depends on a symbol computes
 * its shape in the graph (a 0 / -1 shape, or Shape/Gather/arithmetic/Concat).
 * An op with no ONNX equivalent, or an argument ONNX cannot express (training
 * mode batch_norm, the indices of max_pool2d_with_indices, ...), fails the
 * export with an error naming the op and the module path; nothing is written.
 *
 * Models over protobuf's 2 GiB limit keep their initializers in an external
 * data file next to the model (opts->external_data; the ONNX convention of
 * location / offset / length), and the importer reads such files (wk_onnx_load
 * only, relative to the model's directory, never outside it).
 *
 * IMPORT checks the whole file before building anything: the protobuf
 * encoding, the IR version and opset imports (the default domain, opsets 6 to
 * WK_ONNX_MAX_OPSET), every node's op, attributes (unknown or unsupported
 * values are refused) and inputs, and every shape as the node produces it
 * against the shapes the file declares. A fault gives WK_ERR_INVALID_ARG
 * ("onnx: node 'conv1' (Conv): ...") and no graph. Initializers become PARAM
 * values named as in the file, symbolic input dims (dim_param) become graph
 * symbols, and the graph replays on any device with wk_graph_run. */
#ifndef WICK_ONNX_H
#define WICK_ONNX_H

#include <stddef.h>
#include <string.h>
#include <wick/graph.h>
#include <wick/wick.h>

#define WK_ONNX_SERVICE "onnx"
#define WK_ONNX_SERVICE_VERSION 1u

/* Opsets the exporter writes (default WK_ONNX_DEFAULT_OPSET) and the importer reads (6 and up). */
#define WK_ONNX_MIN_OPSET 13
#define WK_ONNX_MAX_OPSET 23
#define WK_ONNX_DEFAULT_OPSET 17

/* PyTorch's dynamic_axes={"input": {0: "batch"}}: dim `dim` of the input or
 * output named `tensor` is the symbol `name` (written as its dim_param). */
typedef struct wk_onnx_dynamic_axis {
  const char *tensor;
  int32_t dim;
  const char *name;
} wk_onnx_dynamic_axis;

/* Export options. Zero fields mean the defaults; pass NULL for all defaults,
 * or WK_ONNX_EXPORT_OPTS(.opset = 18, ...), which sets struct_size. */
typedef struct wk_onnx_export_opts {
  size_t struct_size;   /* sizeof(wk_onnx_export_opts) */
  int32_t opset;        /* 0 -> WK_ONNX_DEFAULT_OPSET; WK_ONNX_MIN_OPSET..WK_ONNX_MAX_OPSET */
  int32_t ninput_names; /* input_names[0..n): 0 -> the graph's names ("x", "x1", ...) */
  const char *const *input_names;
  const char *const *output_names; /* output_names[0..n): 0 -> "output", "output1", ... */
  int32_t noutput_names;
  int32_t ndynamic_axes;
  /* Dims that may change between runs. wk_onnx_export traces the module with
   * these symbolic; wk_onnx_export_graph only renames the graph's symbols
   * (the axis must already be symbolic there). */
  const wk_onnx_dynamic_axis *dynamic_axes;
  const char *doc_string; /* (optional) the model's doc_string */
  const char *graph_name; /* (optional) default "main_graph" */
  /* ---- version 2 (appended; a version-1 caller's struct_size of 64 leaves them 0) ---- */
  /* Where initializers go (ONNX's external data): WK_ONNX_EXTERNAL_AUTO keeps
   * them in the model unless it would pass protobuf's 2 GiB limit, then writes
   * every initializer of 1 KiB or more to one file next to the model (smaller
   * ones, such as shape constants, stay: onnx's size_threshold); _ALWAYS does
   * that for any size; _NEVER fails a model over 2 GiB. The export to a buffer cannot
   * write a second file: there _ALWAYS fails and _AUTO fails over 2 GiB. */
  int32_t external_data;
  /* (optional) that file's name, in the model's directory (no '/'); default
   * "<model file name>.data" ("net.onnx" -> "net.onnx.data"). */
  const char *external_data_location;
} wk_onnx_export_opts;
enum { WK_ONNX_EXTERNAL_AUTO = 0, WK_ONNX_EXTERNAL_ALWAYS = 1, WK_ONNX_EXTERNAL_NEVER = -1 };
/* The size of a version-1 wk_onnx_export_opts (before external_data), which is still accepted. */
#define WK_ONNX_EXPORT_OPTS_V1_SIZE 64
#define WK_ONNX_EXPORT_OPTS(...) (&(const wk_onnx_export_opts){.struct_size = sizeof(wk_onnx_export_opts), __VA_ARGS__})

/* Import options (NULL for the defaults). */
typedef struct wk_onnx_load_opts {
  size_t struct_size; /* sizeof(wk_onnx_load_opts) */
  wk_device device;   /* where weights and inputs live; {0} -> cpu */
  /* ---- version 2 (appended; a version-1 caller's struct_size of 16 leaves it false) ---- */
  /* Inference rewrite: a BatchNormalization (inference mode) whose input is
   * a Conv's result read by nothing else is folded into that Conv's weight
   * and bias, when all of them are float32 initializers used only there (the
   * folded tensors keep the weight's name, and the bias's, or BN's bias name
   * when the Conv had none). Results change by rounding (about 1e-6
   * relative), so it is off by default; `wick run` turns it on. */
  bool fold_batch_norm;
} wk_onnx_load_opts;
/* The size of a version-1 wk_onnx_load_opts (before fold_batch_norm), which is still accepted. */
#define WK_ONNX_LOAD_OPTS_V1_SIZE 16
#define WK_ONNX_LOAD_OPTS(...) (&(const wk_onnx_load_opts){.struct_size = sizeof(wk_onnx_load_opts), __VA_ARGS__})

/* A summary of a file, for `wick run --info`: filled by wk_onnx_info and
 * freed by wk_onnx_info_free. Strings and arrays are owned by the struct. */
typedef struct wk_onnx_info {
  size_t struct_size;
  int64_t ir_version, opset;
  char *producer_name, *producer_version;
  int32_t ninputs, noutputs, nops, ninitializers;
  char **input_names, **output_names;
  char **input_shapes, **output_shapes; /* "float32[batch, 3, 224, 224]" */
  char **op_types;                      /* distinct op types ... */
  int32_t *op_counts;                   /* ... and how many nodes each */
} wk_onnx_info;

/* ---- The service interface (append-only; readers honour struct_size) -------------- */
typedef struct wk_onnx_iface {
  size_t struct_size;
  wk_status (*export_module)(wk_module *m, wk_tensor *const *inputs, int ninputs, const char *path,
                             const wk_onnx_export_opts *opts);
  wk_status (*export_graph)(const wk_graph *g, const char *path, const wk_onnx_export_opts *opts);
  wk_status (*export_graph_buffer)(const wk_graph *g, void **data, size_t *nbytes, const wk_onnx_export_opts *opts);
  wk_graph *(*load)(const char *path, const wk_onnx_load_opts *opts);
  wk_graph *(*load_buffer)(const void *data, size_t nbytes, const wk_onnx_load_opts *opts);
  wk_status (*info)(const char *path, wk_onnx_info *out);
  void (*info_free)(wk_onnx_info *info);
} wk_onnx_iface;
WK_STATIC_ASSERT(sizeof(wk_onnx_iface) == 64, "wk_onnx_iface version 1 is frozen");
WK_STATIC_ASSERT(offsetof(wk_onnx_export_opts, external_data) == WK_ONNX_EXPORT_OPTS_V1_SIZE,
                 "wk_onnx_export_opts version 1 (64 bytes) is frozen; later fields are appended");
WK_STATIC_ASSERT(sizeof(wk_onnx_export_opts) == 80, "wk_onnx_export_opts is frozen at version 2");
WK_STATIC_ASSERT(offsetof(wk_onnx_load_opts, fold_batch_norm) == WK_ONNX_LOAD_OPTS_V1_SIZE,
                 "wk_onnx_load_opts version 1 (16 bytes) is frozen; later fields are appended");
WK_STATIC_ASSERT(sizeof(wk_onnx_load_opts) == 24, "wk_onnx_load_opts is frozen at version 2");

/* The onnx service, fetched once per translation unit; NULL with the error of
 * wk_service_get (naming the service and the plugin search path). */
static inline const wk_onnx_iface *wk__onnx(size_t need) {
  static const wk_onnx_iface *api;
  if (!api) api = (const wk_onnx_iface *)wk_service_get(WK_ONNX_SERVICE, WK_ONNX_SERVICE_VERSION);
  if (api && api->struct_size < need) {
    wk_error(WK_ERR_UNSUPPORTED, "the onnx service is too old (interface of %zu bytes, %zu needed)", api->struct_size,
             need);
    return NULL;
  }
  return api;
}
#define WK__ONNX(field) (wk_error_new_call(), wk__onnx(offsetof(wk_onnx_iface, field) + sizeof(void (*)(void))))

/* Traces m's forward on the example inputs (borrowed; any device) with
 * opts->dynamic_axes symbolic, then writes the graph as an ONNX model to
 * `path` (see wk_onnx_export_graph). Put m in eval mode first: a training-mode
 * batch_norm or dropout fails the export. */
static inline wk_status wk_onnx_export(wk_module *m, wk_tensor *const *inputs, int ninputs, const char *path,
                                       const wk_onnx_export_opts *opts) {
  const wk_onnx_iface *api = WK__ONNX(export_module);
  return api ? api->export_module(m, inputs, ninputs, path, opts) : wk_last_error();
}
/* Writes a graph (borrowed) as an ONNX model to `path`: written to a
 * temporary file in the same directory and renamed, so `path` is either the
 * old file or the whole new one. */
static inline wk_status wk_onnx_export_graph(const wk_graph *g, const char *path, const wk_onnx_export_opts *opts) {
  const wk_onnx_iface *api = WK__ONNX(export_graph);
  return api ? api->export_graph(g, path, opts) : wk_last_error();
}
/* The same in memory: *data (free with wk_free) receives *nbytes bytes. */
static inline wk_status wk_onnx_export_graph_buffer(const wk_graph *g, void **data, size_t *nbytes,
                                                    const wk_onnx_export_opts *opts) {
  const wk_onnx_iface *api = WK__ONNX(export_graph_buffer);
  if (!api && data) *data = NULL;
  return api ? api->export_graph_buffer(g, data, nbytes, opts) : wk_last_error();
}
/* Reads an ONNX model into a new graph (release with wk_graph_release) whose
 * PARAM values hold the initializers; NULL with the error naming the node and
 * the fault. */
static inline wk_graph *wk_onnx_load(const char *path, const wk_onnx_load_opts *opts) {
  const wk_onnx_iface *api = WK__ONNX(load);
  return api ? api->load(path, opts) : NULL;
}
/* The same from nbytes bytes at data (borrowed). */
static inline wk_graph *wk_onnx_load_buffer(const void *data, size_t nbytes, const wk_onnx_load_opts *opts) {
  const wk_onnx_iface *api = WK__ONNX(load_buffer);
  return api ? api->load_buffer(data, nbytes, opts) : NULL;
}
/* Reads a file's inputs, outputs, opset and op counts into *out (its
 * struct_size set to sizeof(wk_onnx_info)); free with wk_onnx_info_free. */
static inline wk_status wk_onnx_info_read(const char *path, wk_onnx_info *out) {
  const wk_onnx_iface *api = WK__ONNX(info);
  return api ? api->info(path, out) : wk_last_error();
}
/* Frees what wk_onnx_info_read put in info, keeping struct_size. NULL does nothing. */
static inline void wk_onnx_info_free(wk_onnx_info *info) {
  const wk_onnx_iface *api = info ? wk__onnx(offsetof(wk_onnx_iface, info_free) + sizeof(void (*)(void))) : NULL;
  if (api) api->info_free(info);
}

#endif
