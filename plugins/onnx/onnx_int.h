/* onnx plugin: private declarations shared by its files: proto.c (arena,
 * messages, dtypes, files), export.c / export_ops.c (graph -> ModelProto),
 * import.c / import_ops.c (ModelProto -> graph). */
#ifndef WICK_ONNX_PLUGIN_H
#define WICK_ONNX_PLUGIN_H

#include <wick/sdk.h>
#include <wick/onnx.h>

#include "onnx.pb-c.h"

/* ---- arena: every message the exporter builds is freed in one go ---- */
typedef struct ox_arena {
  void **ptrs;
  size_t n, cap;
  bool oom;
} ox_arena;
void *ox_alloc(ox_arena *ar, size_t n); /* zeroed; NULL (and ar->oom) when out of memory */
char *ox_strdup(ox_arena *ar, const char *s);
char *ox_fmt(ox_arena *ar, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ox_arena_free(ox_arena *ar);
/* Appends p to a growing pointer array (*arr, *n) allocated in the arena. */
bool ox_push(ox_arena *ar, void ***arr, size_t *n, size_t *cap, void *p);

/* ONNX TensorProto.DataType <-> Wick dtype (0 when there is none). */
int ox_onnx_type(wk_dtype dt);
wk_dtype ox_wick_dtype(int onnx_type);
const char *ox_onnx_type_name(int onnx_type);

/* The IR version that goes with an opset (onnx.helper's VERSION_TABLE). */
int64_t ox_ir_version(int opset);

/* Files: the whole file into a new buffer (at most max bytes); an atomic write. */
wk_status ox_read_file(const char *fn, const char *path, size_t max, uint8_t **data, size_t *n);
wk_status ox_write_atomic(const char *fn, const char *path, const void *data, size_t n);

/* ---- export ---- */
typedef struct ox_ex ox_ex;
/* protobuf's limit on one message; a larger model needs external data */
#define OX_MAX_FILE ((size_t)2 << 30)
/* Builds the model for g into *out (packed bytes, wk_malloc'd). With
 * ext_location (the data file's name; NULL for a model in memory) the
 * initializers may go to *ext (*next bytes, wk_malloc'd; NULL when they
 * stay in the model), as o->external_data says. */
wk_status ox_export(const wk_graph *g, const wk_onnx_export_opts *o, const char *ext_location, void **out,
                    size_t *nbytes, void **ext, size_t *next);
/* Emits the ONNX nodes for graph node `node`; export_ops.c. */
wk_status ox_export_node(ox_ex *ex, int node);

/* What export_ops.c needs from the exporter (export.c). */
struct ox_ex {
  const wk_graph *g;
  int opset;
  ox_arena ar;
  Onnx__NodeProto **nodes;
  size_t nnodes, cap_nodes;
  Onnx__TensorProto **inits;
  size_t ninits, cap_inits;
  char **vname;    /* per graph value id */
  bool *named_out; /* per value id: written under a graph output's name */
  char **symname;  /* per symbol: a 1-D int64 [1] value holding it, once emitted */
  int seq;         /* node counter, for unique names */
  int cur;         /* graph node being emitted */
};
const char *ox_name(ox_ex *ex, int v); /* the ONNX name of graph value v */
char *ox_tmp(ox_ex *ex);               /* a fresh value name */
/* Adds a node reading ins[0..nin) (NULL entries are omitted inputs, "") and
 * writing outs[0..nout); named after the current graph node's module path. */
Onnx__NodeProto *ox_node(ox_ex *ex, const char *op_type, const char *const *ins, int nin, const char *const *outs,
                         int nout);
void ox_attr_i(ox_ex *ex, Onnx__NodeProto *n, const char *name, int64_t v);
void ox_attr_f(ox_ex *ex, Onnx__NodeProto *n, const char *name, double v);
void ox_attr_s(ox_ex *ex, Onnx__NodeProto *n, const char *name, const char *v);
void ox_attr_ints(ox_ex *ex, Onnx__NodeProto *n, const char *name, const int64_t *v, int nv);
/* Initializers: a tensor's copy under `name`; int64 lists; a scalar of a dtype. */
const char *ox_init_tensor(ox_ex *ex, const char *name, wk_tensor *t);
const char *ox_const_i64(ox_ex *ex, const int64_t *v, int n, bool scalar);
const char *ox_const_scalar(ox_ex *ex, wk_dtype dt, double v);
/* A 1-D int64 [1] value holding symbolic dim d (Shape/Gather/arithmetic). */
const char *ox_symdim_value(ox_ex *ex, wk_symdim d);
/* An error naming the current node's op and module path. */
wk_status ox_fail(ox_ex *ex, wk_status code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- import ---- */
/* dir: the model file's directory, where external data files are read (NULL: a model in memory, which cannot have them)
 */
wk_graph *ox_import(const uint8_t *data, size_t n, const wk_onnx_load_opts *o, const char *dir);
wk_status ox_info(const uint8_t *data, size_t n, wk_onnx_info *out);
void ox_info_free(wk_onnx_info *info);

typedef struct ox_im ox_im;
/* Builds the Wick nodes for one ONNX node; import_ops.c. */
wk_status ox_import_node(ox_im *im, const Onnx__NodeProto *n);
/* The op types import_ops.c maps (for the node-test report and --info). */
bool ox_import_supported(const char *op_type);

#endif
