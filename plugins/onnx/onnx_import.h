/* onnx plugin, import: the state import.c and import_ops.c share (the name
 * table and the helpers that turn ONNX values into graph values). */
#ifndef WICK_ONNX_IMPORT_H
#define WICK_ONNX_IMPORT_H

#include "onnx_int.h"

/* An ONNX value name: a graph value, a tensor not yet in the graph
 * (initializers and constants enter it when a node reads them), and/or up to
 * 64 ints known at import time (shape arithmetic: Shape, Gather, Concat, ...
 * on symbolic dims), which become int[] arguments. */
typedef struct oxv {
  const char *name; /* borrowed from the unpacked model */
  int v;            /* graph value id, or -1 */
  wk_tensor *t;     /* owned, until the graph takes a reference */
  bool param;       /* an initializer (PARAM), else a constant */
  int nk;           /* known ints, or -1 */
  bool kscalar;     /* the known ints are a 0-d tensor */
  wk_dtype kdt;     /* their dtype */
  wk_symdim k[64];
} oxv;

struct ox_im {
  wk_graph *g;
  int64_t opset;
  wk_device dev;
  oxv *tab;
  size_t n, cap;
  const Onnx__NodeProto *node; /* the node being imported, for errors */
  const char *dir;             /* the model file's directory (external data), or NULL from memory */
  bool fold_bn;                /* opts->fold_batch_norm */
};

wk_status im_fail(ox_im *im, wk_status code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
oxv *im_find(ox_im *im, const char *name);
oxv *im_define(ox_im *im, const char *name);
/* A tensor from a TensorProto (new reference), or NULL with the fault named. */
wk_tensor *im_tensor(ox_im *im, const Onnx__TensorProto *t, const char *what);
/* Gives e the tensor t (takes the reference); small int tensors are known ints too. */
wk_status im_set_tensor(ox_im *im, oxv *e, wk_tensor *t, bool param);
/* The graph value of a name (making initializers and known ints values), or -1. */
int im_value(ox_im *im, const char *name);

#endif
