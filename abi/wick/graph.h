/* Wick ABI (1.3): graphs — one small IR for export, import, quantization and
 * compilation, built by tracing eager programs and run again by replay.
 *
 * WHAT A GRAPH IS. A wk_graph is a list of nodes in execution order (a
 * topological order: a node only reads values made before it). A node is one
 * call of a declared op (wk_op) with its arguments boxed as wk_garg: the same
 * tags as wk_value, except that a Tensor argument names a graph VALUE instead
 * of holding a tensor, and an int (or an int[] element) is a wk_symdim, which
 * may be symbolic. Values are numbered 0, 1, ... in creation order and are of
 * four kinds:
 *   WK_GV_INPUT  a graph input: dtype, device and a shape whose dims may be symbolic;
 *   WK_GV_PARAM  a parameter or buffer, named by its state_dict key ("layer1.0.conv1.weight");
 *   WK_GV_CONST  a constant tensor the program captured (the graph holds a reference);
 *   WK_GV_NODE   result i of a node.
 * Every value records its dtype, device and shape as the meta functions
 * decided them. A node also records the module path it ran in ("layer1.0.conv1",
 * "" at the top) and its op, which is its source op: traces record the ops the
 * program called, above autograd, so a forward graph holds no backward ops.
 * In-place ops appear as nodes whose result is a new value: later nodes read
 * the new value, replay mutates the same tensor eager mutated.
 *
 * SYMBOLIC DIMS. A graph has symbols s0, s1, ... (wk_graph_add_symbol), each
 * with a name ("batch") and an example value (the hint). A dim, or an int
 * argument, is  m * floor((a * S + b) / c) + d  where S is the product of at
 * most two symbols (1 when none): constants (a = 0), s0, s0*64, (s1+2)/2, s0*s1
 * and the compositions of convolution/pool arithmetic all have this form. It
 * prints as PyTorch prints SymInts: `[s0, 64, 56, 56]`, `(s1+3)/4`. Tracing
 * finds these expressions by running the program again on the meta device
 * with other values of each symbol and fitting every int that changed; an int
 * it cannot fit fails the trace with the op and module path.
 *
 * OWNERSHIP. Graphs are reference counted like tensors (new ones start at
 * one reference; wk_graph_release drops one). A graph owns its strings and
 * holds a reference to every PARAM and CONST tensor. Pointers a graph hands out
 * (names, wk_garg lists, tensors) are borrowed and stay valid until the graph
 * changes or goes. Functions that fail return NULL / -1 / a status and record
 * an error as every Wick call does; a NULL graph propagates the earlier error.
 *
 * WHAT PASSES MAY ASSUME. After wk_graph_validate: every value a node reads is
 * made before it; every op is declared and its arguments pass the schema;
 * value shapes and dtypes are those the meta functions give (rerun them with
 * wk_graph_propagate after rewriting); node ids and value ids are stable
 * across rewrites (erased ones are never reused); the graph's outputs are
 * live. Nodes that mutate (in-place ops, out=) or draw random numbers are
 * never removed, merged or folded by the passes here.
 *
 * REPLAY. wk_graph_run calls every node's op through the normal dispatcher,
 * on any device, so autograd through a replay gives the gradients eager gives.
 * It first checks the guards the trace recorded (input count, dtype, rank,
 * static dims, consistent symbols) and names the guard that failed. */
#ifndef WICK_GRAPH_H
#define WICK_GRAPH_H

#include <wick/dispatch.h>
#include <wick/module.h>

typedef struct wk_graph wk_graph;

typedef enum wk_gvalue_kind {
  WK_GV_INPUT = 1,
  WK_GV_PARAM = 2,
  WK_GV_CONST = 3,
  WK_GV_NODE = 4
} wk_gvalue_kind;

/* m * floor((a * S + b) / c) + d, S = s[sym0] * s[sym1] (a symbol index, or -1
 * for none). A constant k is {.a = 0, .c = 1, .m = 1, .d = k, .sym0 = -1, .sym1 = -1}. */
typedef struct wk_symdim {
  int64_t a, b, c, m, d;
  int32_t sym0, sym1;
} wk_symdim;

#define WK_SYM_CONST(k) ((wk_symdim){0, 0, 1, 1, (int64_t)(k), -1, -1})
#define WK_SYM(i) ((wk_symdim){1, 0, 1, 1, 0, (int32_t)(i), -1})

/* A node argument: wk_value's tags. WK_V_TENSOR: u.v is a value id;
 * WK_V_TENSORS: u.vs holds len value ids (-1 for a None element); WK_V_INT:
 * u.sym; WK_V_INTS: u.syms holds len dims; the rest as in wk_value. */
typedef struct wk_garg {
  int32_t tag; /* wk_value_tag */
  int32_t len;
  union {
    int32_t v;
    const int32_t *vs;
    wk_symdim sym;
    const wk_symdim *syms;
    double f;
    bool b;
    const char *s;
    wk_dtype dtype;
    wk_device device;
  } u;
} wk_garg;

/* ---- Building ---------------------------------------------------------------- */
WK_API wk_graph *wk_graph_new(void);
WK_API wk_graph *wk_graph_retain(wk_graph *g); /* returns g */
WK_API void wk_graph_release(wk_graph *g);
/* A deep copy (new nodes and values with the same ids; tensors shared). */
WK_API wk_graph *wk_graph_copy(const wk_graph *g);

/* Adds a symbol named `name` (NULL: "s<i>") with an example value >= 1; its index. */
WK_API int wk_graph_add_symbol(wk_graph *g, const char *name, int64_t hint);
WK_API int wk_graph_num_symbols(const wk_graph *g);
WK_API const char *wk_graph_symbol_name(const wk_graph *g, int sym);
WK_API int64_t wk_graph_symbol_hint(const wk_graph *g, int sym);

/* Values; each returns the new value id or -1. */
WK_API int wk_graph_add_input(wk_graph *g, const char *name, wk_dtype dtype, wk_device device, int ndim,
                              const wk_symdim *dims);
/* A parameter (buffer = false) or buffer named by its state_dict key; retains t. */
WK_API int wk_graph_add_param(wk_graph *g, const char *name, wk_tensor *t, bool buffer);
WK_API int wk_graph_add_const(wk_graph *g, wk_tensor *t);
/* Appends a node (before = -1) or inserts it before node `before`; infers its
 * results with the op's meta function (every symbolic dim refitted). Returns
 * the node id, or -1 when the arguments fail the schema or the meta function. */
WK_API int wk_graph_add_node(wk_graph *g, wk_op *op, const wk_garg *args, int nargs, const char *module_path,
                             int before);
WK_API wk_status wk_graph_set_outputs(wk_graph *g, const int *values, int n);

/* ---- Walking ------------------------------------------------------------------ */
WK_API int wk_graph_num_nodes(const wk_graph *g);      /* live nodes */
WK_API int wk_graph_node_at(const wk_graph *g, int pos); /* id of the pos-th node in order, or -1 */
WK_API wk_op *wk_graph_node_op(const wk_graph *g, int node);
WK_API const char *wk_graph_node_module_path(const wk_graph *g, int node);
WK_API int wk_graph_node_num_args(const wk_graph *g, int node);
WK_API const wk_garg *wk_graph_node_args(const wk_graph *g, int node); /* borrowed */
WK_API int wk_graph_node_num_outputs(const wk_graph *g, int node);
WK_API int wk_graph_node_output(const wk_graph *g, int node, int i); /* value id, -1 for a None result */

WK_API int wk_graph_num_values(const wk_graph *g); /* ids are 0 .. n-1; erased ones report kind 0 */
WK_API wk_gvalue_kind wk_graph_value_kind(const wk_graph *g, int v);
WK_API const char *wk_graph_value_name(const wk_graph *g, int v); /* input name, state_dict key, "%12" */
WK_API wk_dtype wk_graph_value_dtype(const wk_graph *g, int v);
WK_API wk_device wk_graph_value_device(const wk_graph *g, int v);
WK_API int wk_graph_value_ndim(const wk_graph *g, int v);
WK_API const wk_symdim *wk_graph_value_dims(const wk_graph *g, int v); /* borrowed, ndim entries */
WK_API wk_tensor *wk_graph_value_tensor(const wk_graph *g, int v);   /* PARAM/CONST, borrowed */
WK_API int wk_graph_value_producer(const wk_graph *g, int v, int *output_index); /* node id or -1 */
WK_API int wk_graph_value_num_uses(const wk_graph *g, int v); /* node reads plus graph outputs */
WK_API int wk_graph_num_inputs(const wk_graph *g);
WK_API int wk_graph_input(const wk_graph *g, int i);
WK_API int wk_graph_num_outputs(const wk_graph *g);
WK_API int wk_graph_output(const wk_graph *g, int i);
/* Finds a PARAM value by state_dict key, or -1. */
WK_API int wk_graph_find_param(const wk_graph *g, const char *name);
/* Points a PARAM value at another tensor of the same dtype and shape (loaded weights). */
WK_API wk_status wk_graph_set_param(wk_graph *g, const char *name, wk_tensor *t);

/* Writes a symbolic dim as PyTorch prints it ("s0*64", "(s1+2)/2") into buf. */
WK_API int wk_symdim_str(const wk_graph *g, wk_symdim d, char *buf, size_t n);
/* Its value for the symbol values syms[] (which may be NULL for a constant dim). */
WK_API int64_t wk_symdim_eval(wk_symdim d, const int64_t *syms);

/* The tabular printout (torch.fx's print_tabular: opcode, name, target, args,
 * plus shape and module path), then symbols and guards. Free with wk_free. */
WK_API char *wk_graph_to_string(const wk_graph *g);
/* Checks the invariants above; WK_OK or an error naming the node. */
WK_API wk_status wk_graph_validate(const wk_graph *g);

/* ---- Rewriting ------------------------------------------------------------------ */
/* Every read of value `from` (and graph outputs) reads `to` instead, in nodes
 * after `to` is made. Fails when `to` comes after a reader or differs in dtype or rank. */
WK_API wk_status wk_graph_replace_uses(wk_graph *g, int from, int to);
/* Erases a node whose results nobody reads. */
WK_API wk_status wk_graph_erase_node(wk_graph *g, int node);

/* ---- Passes ------------------------------------------------------------------------ */
/* Each returns the number of nodes it removed or changed, or -1 on error. */
WK_API int wk_graph_dce(wk_graph *g);
WK_API int wk_graph_cse(wk_graph *g);
/* Runs every node whose tensor inputs are all CONST (and, with fold_params,
 * PARAM: weights frozen) and replaces its results by constants. */
WK_API int wk_graph_fold_constants(wk_graph *g, bool fold_params);
/* Reruns every node's meta function in order and refits symbolic dims. */
WK_API wk_status wk_graph_propagate(wk_graph *g);

/* ---- Guards ----------------------------------------------------------------------- */
/* What a trace specialised on, one line each ("input 0 'x': dtype float32",
 * "input 0 'x': dim 1 == 3", "s0 (batch) >= 1"). */
WK_API int wk_graph_num_guards(const wk_graph *g);
WK_API const char *wk_graph_guard(const wk_graph *g, int i);

/* ---- Tracing ---------------------------------------------------------------------- */
/* Names input `input`'s dim `dim` dynamic, as symbol `name`. */
typedef struct wk_trace_dim {
  int32_t input, dim;
  const char *name;
} wk_trace_dim;

typedef struct wk_trace_options {
  size_t struct_size;           /* sizeof(wk_trace_options) */
  const wk_trace_dim *dynamic;  /* dims that may change between runs */
  int32_t ndynamic;
  wk_module *module;            /* names parameters and module paths (wk_trace of a function) */
  const char *const *input_names; /* (optional) one per input; default "x", "x1", ... */
} wk_trace_options;

/* A traced program: reads inputs[0..ninputs) and writes up to max_outputs new
 * references into outputs, setting *noutputs. */
typedef wk_status (*wk_trace_fn)(void *user, wk_tensor *const *inputs, int ninputs, wk_tensor **outputs,
                                 int max_outputs, int *noutputs);

/* Runs fn once on the example inputs (any device, the meta device included)
 * with the trace layer on, recording every op the program calls, then again
 * on the meta device for other values of each dynamic dim to make shapes
 * symbolic. Reading tensor data (wk_item, wk_tensor_data, ...) inside the
 * program, or an op whose result size depends on data, fails the trace with
 * the op and the module path. The program's own results are released. */
WK_API wk_graph *wk_trace(wk_trace_fn fn, void *user, wk_tensor *const *inputs, int ninputs,
                          const wk_trace_options *opts);
/* The same for m's forward (wk_module_forward_n); parameters and buffers
 * are named by m's state_dict keys. */
WK_API wk_graph *wk_trace_module(wk_module *m, wk_tensor *const *inputs, int ninputs, const wk_trace_options *opts);
/* Records a training step for a compile plugin: fn returns the loss (one
 * floating element) as output 0; the trace runs below autograd, so the graph
 * holds the forward ops and the backward ops the engine runs for the loss.
 * Its outputs are the loss, fn's other outputs, then the gradient of every
 * parameter of opts->module that requires grad (wk_module_named_parameters
 * order); .grad fields are not touched. Replay it under wk_no_grad. */
WK_API wk_graph *wk_trace_training(wk_trace_fn fn, void *user, wk_tensor *const *inputs, int ninputs,
                                   const wk_trace_options *opts);
/* True while this thread runs a program under wk_trace. */
WK_API bool wk_is_tracing(void);

/* ---- Replay ------------------------------------------------------------------------ */
/* Runs the graph on `device` (WK_DEVICE_DEFAULT: where it was traced) with
 * inputs that satisfy its guards, writing wk_graph_num_outputs(g) new
 * references into outputs (at most max_outputs). Parameters on another
 * device are copied there for the call. */
WK_API wk_status wk_graph_run(wk_graph *g, wk_tensor *const *inputs, int ninputs, wk_device device,
                              wk_tensor **outputs, int max_outputs);

#endif
