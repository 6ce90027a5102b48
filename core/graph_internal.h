/* The graph IR's private layout (graph.h has the meaning), shared by the
 * builder (graph.c), symbolic dims (graph_sym.c), replay and shape
 * propagation (graph_run.c), the passes (graph_passes.c) and the tracer
 * (trace.c). */
#ifndef WICK_CORE_GRAPH_INTERNAL_H
#define WICK_CORE_GRAPH_INTERNAL_H

#include <wick/graph.h>

#include "internal.h"

typedef struct gvalue {
  int kind; /* wk_gvalue_kind; 0 = erased */
  char *name;
  wk_dtype dtype;
  wk_device device;
  int ndim;
  wk_symdim dims[WK_MAX_DIMS];
  wk_tensor *t; /* PARAM / CONST: a reference */
  bool buffer;
  int producer, out_index; /* NODE */
} gvalue;

typedef struct gnode {
  wk_op *op;
  int nargs;
  wk_garg *args; /* owned, lists and strings too */
  int nouts;
  int *outs;      /* value ids (-1: None) */
  bool list_out;  /* the op returns Tensor[]: outs are its elements */
  char *path;
  bool alive;
} gnode;

typedef struct gsym {
  char *name;
  int64_t hint;
} gsym;

struct wk_graph {
  atomic_int refcount;
  gvalue *vals;
  int nvals, capvals;
  gnode *nodes;
  int nnodes, capnodes;
  int *order; /* live node ids, execution order */
  int norder, caporder;
  gsym *syms;
  int nsyms;
  int *inputs, ninputs;
  int *outputs, noutputs;
  char **guards;
  int nguards;
  struct gname { char *base; int count; } *names; /* next suffix per base name */
  int nnames;
  _Atomic(void *) plan; /* replay's precomputed walk (graph_run.c); dropped by every change */
};

/* Every change to nodes, values or outputs calls this: the replay plan goes. */
WK__HIDDEN void wk__graph_changed(wk_graph *g);
WK__HIDDEN void wk__graph_plan_free(void *plan);

/* Frees the lists and strings of a node's arguments (not the array). */
WK__HIDDEN void wk__garg_free(wk_garg *a);
/* Deep-copies src into dst (lists and strings). false on out of memory. */
WK__HIDDEN bool wk__garg_copy(wk_garg *dst, const wk_garg *src);
/* Adds a NODE value (result i of node) with the given metadata; its id or -1. */
WK__HIDDEN int wk__graph_add_node_value(wk_graph *g, int node, int i, wk_dtype dt, wk_device dev, int ndim,
                                        const wk_symdim *dims, const char *name_hint);
/* Appends a node without inferring its results (the tracer knows them).
 * Takes ownership of args (an array of nargs). Returns the node id or -1. */
WK__HIDDEN int wk__graph_append_raw(wk_graph *g, wk_op *op, wk_garg *args, int nargs, const char *path);
WK__HIDDEN wk_status wk__graph_add_guard(wk_graph *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Use counts of every value (node reads and graph outputs); caller frees. */
WK__HIDDEN int *wk__graph_use_counts(const wk_graph *g);
WK__HIDDEN bool wk__graph_value_ok(const wk_graph *g, int v);
WK__HIDDEN bool wk__graph_node_ok(const wk_graph *g, int n);
/* The op's base name for value names ("conv2d" for "conv2d.out"). */
WK__HIDDEN void wk__graph_fresh_name(wk_graph *g, const char *base, char *buf, size_t n);

/* ---- symbolic dims (graph_sym.c) ---- */
#define WK__SYM_MAX 8      /* symbols a graph may have */
#define WK__SYM_PERIOD 20160 /* 2^6*3^2*5*7: probes this far apart give exact slopes */
/* Sample points: each row gives every symbol a value; row 0 is the hints. */
typedef struct wk__sym_points {
  int npts, nsyms;
  int64_t (*v)[WK__SYM_MAX];
} wk__sym_points;
WK__HIDDEN wk_status wk__sym_points_make(const int64_t *hints, int nsyms, wk__sym_points *p);
WK__HIDDEN void wk__sym_points_free(wk__sym_points *p);
/* Fits vals[0..npts) (an int seen at each point) to one wk_symdim. */
WK__HIDDEN bool wk__sym_fit(const wk__sym_points *p, const int64_t *vals, wk_symdim *out);
WK__HIDDEN bool wk__sym_is_const(wk_symdim d);
WK__HIDDEN bool wk__sym_equal(wk_symdim x, wk_symdim y);

/* ---- replay over sample points (graph_run.c) ---- */
/* Runs nodes [from, to) of g's order on the meta device at every sample point
 * of p and refits the dims of their results (shape propagation). */
WK__HIDDEN wk_status wk__graph_infer(wk_graph *g, int from, int to);

/* ---- tracing (trace.c) ---- */
WK__HIDDEN void wk__trace_init(void);
/* Called by data readers (wk_item, wk_tensor_data, ...) when wk__tl_trace is
 * set: a read of a value that depends on the inputs fails the trace (the
 * reader itself still answers, so the program never sees a NULL it did not
 * expect). */
WK__HIDDEN extern _Thread_local void *wk__tl_trace;
WK__HIDDEN void wk__trace_note_read(const wk_tensor *t, const char *what);

#endif
