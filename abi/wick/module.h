/* Wick ABI: the module object model (torch.nn.Module's skeleton, in C):
 * named parameters, buffers and children, train/eval, moving to a device or
 * dtype with parameter identity kept, recursive walks, zero_grad, state dicts
 * with missing/unexpected/mismatched reports, and PyTorch-style printing.
 * Layers come from the nn plugin; a user's own model is a C struct with a
 * forward function registered the same way. */
#ifndef WICK_MODULE_H
#define WICK_MODULE_H

#include <wick/state_dict.h>
#include <wick/tensor.h> /* wk_memory_format */
#include <wick/types.h>

typedef struct wk_module wk_module;

/* What a kind of module does. Only name and forward are required. */
typedef struct wk_module_class {
  size_t struct_size; /* sizeof(wk_module_class) */
  const char *name;   /* "Linear", "SimpleNet": static */
  /* Forward pass: inputs borrowed; returns a new reference, or NULL with an
   * error recorded. */
  wk_tensor *(*forward)(wk_module *self, wk_tensor *const *inputs, int n);
  /* (optional) frees the user state when the module dies. */
  void (*destroy)(void *state);
  /* (optional) the text inside the parentheses when printed
   * ("in_features=784, out_features=256, bias=True"); malloc'd, freed by the core.
   * NULL: no text. One that fails (out of memory) records an error with
   * wk_error and returns NULL: the printout (wk_module_to_string) then fails
   * instead of coming back without that text. */
  char *(*extra_repr)(const wk_module *self);
} wk_module_class;

/* Returns a new module (reference count 1) of class cls (borrowed for the
 * module's life) owning `state` (given to cls->destroy at the end). */
WK_API wk_module *wk_module_new(const wk_module_class *cls, void *state);
WK_API wk_module *wk_module_retain(wk_module *m); /* returns m */
/* Drops a reference; the last one releases parameters, buffers, children and
 * the state. NULL does nothing. */
WK_API void wk_module_release(wk_module *m);
WK_API void *wk_module_state(const wk_module *m);
WK_API const char *wk_module_class_name(const wk_module *m);

/* Registers a parameter (retains p and marks it requires_grad; p NULL
 * registers None, as bias=False does). Names are unique per module and may
 * not contain '.'. */
WK_API wk_status wk_module_register_parameter(wk_module *m, const char *name, wk_tensor *p);
/* Registers a buffer (running stats); non-persistent ones stay out of state dicts. */
WK_API wk_status wk_module_register_buffer(wk_module *m, const char *name, wk_tensor *b, bool persistent);
/* Registers a child module (retained). */
WK_API wk_status wk_module_register_child(wk_module *m, const char *name, wk_module *child);

/* Lookups by name or dotted path ("layer1.0.conv1.weight"); borrowed; NULL
 * with WK_ERR_NOT_FOUND naming the path when absent (a None parameter gives
 * NULL without an error). */
WK_API wk_tensor *wk_module_param(const wk_module *m, const char *path);
WK_API wk_tensor *wk_module_buffer(const wk_module *m, const char *path);
WK_API wk_module *wk_module_child(const wk_module *m, const char *path);
/* ABI 1.2. Replaces the existing child at `path` ("fc", "layer4.1.conv2") by
 * `child` (retained; the old one released), keeping its name and place in
 * the order: PyTorch's `model.fc = nn.Linear(512, 10)` for transfer
 * learning. WK_ERR_NOT_FOUND when no child has that path; WK_ERR_NULL for a
 * NULL argument; WK_ERR_INVALID_ARG when the module itself would become its
 * own descendant. */
WK_API wk_status wk_module_set_child(wk_module *m, const char *path, wk_module *child);

/* forward(inputs) through the class; returns a new reference. */
WK_API wk_tensor *wk_module_forward(wk_module *m, wk_tensor *input);
WK_API wk_tensor *wk_module_forward_n(wk_module *m, wk_tensor *const *inputs, int n);

/* train(on) / eval() for the module and every descendant. */
WK_API wk_status wk_module_train(wk_module *m, bool on);
WK_API bool wk_module_is_training(const wk_module *m);

/* Recursive walks, in registration order, each parameter once (shared ones
 * are not repeated). Fill up to cap entries (borrowed; names are static while
 * the module lives) and return the total count. names may be NULL. */
WK_API int wk_module_named_parameters(const wk_module *m, const char **names, wk_tensor **params, int cap);
WK_API int wk_module_named_buffers(const wk_module *m, const char **names, wk_tensor **buffers, int cap);
/* Number of parameter elements (trainable_only: those requiring grad). */
WK_API int64_t wk_module_num_parameters(const wk_module *m, bool trainable_only);
/* zero_grad on every parameter. */
WK_API wk_status wk_module_zero_grad(wk_module *m, bool set_to_none);
/* (ABI 1.4) model.requires_grad_(flag): sets requires_grad on every parameter
 * of m and its children, e.g. to freeze a pretrained backbone before
 * replacing its head (wk_module_set_child). Every parameter is checked first:
 * WK_ERR_DTYPE for a non-floating parameter when turning it on, WK_ERR_AUTOGRAD
 * for a parameter that is not a leaf; either way nothing is changed. */
WK_API wk_status wk_module_requires_grad_(wk_module *m, bool requires_grad);

/* Moves parameters, their gradients and buffers to `dev` and/or converts
 * floating ones to `dtype` (WK_DTYPE_DEFAULT / a zero device keep them).
 * Parameter handles keep their identity, so optimizers holding them see the
 * moved values. */
WK_API wk_status wk_module_to(wk_module *m, wk_device dev, wk_dtype dtype);
/* (ABI 1.4) model.to(memory_format=f): every 4-D parameter and buffer of m
 * and its children (convolution weights) and the gradients they hold are
 * rewritten in format f (see wk_memory_format in tensor.h); other tensors are
 * left as they are. Handles keep their identity, as with wk_module_to. With
 * WK_CHANNELS_LAST and a channels-last input (wk_contiguous_format), a CNN
 * then runs NHWC from end to end. WK_ERR_INVALID_ARG for an unknown format. */
WK_API wk_status wk_module_to_memory_format(wk_module *m, wk_memory_format f);

/* Returns a new state dict with every parameter and persistent buffer under
 * its dotted name (the tensors are shared, not copied). Free with
 * wk_state_dict_free. */
WK_API wk_state_dict *wk_module_state_dict(const wk_module *m);

/* What load_state_dict found (lists of malloc'd names). */
typedef struct wk_load_report {
  int n_missing, n_unexpected, n_mismatched;
  char **missing;    /* keys the module has and the dict lacks */
  char **unexpected; /* keys the dict has and the module lacks */
  char **mismatched; /* "name: checkpoint [a, b] vs model [c, d]" */
} wk_load_report;
/* Frees the lists of a report (not the struct). NULL does nothing. */
WK_API void wk_load_report_clear(wk_load_report *r);

/* Copies values from sd into the module's parameters and buffers (shapes must
 * match; dtypes and devices are converted to the module's). strict: any
 * missing, unexpected or mismatched key fails with a message listing them
 * (PyTorch's "Error(s) in loading state_dict"), and nothing is copied.
 * Non-strict: loads what matches and reports the rest. report may be NULL. */
WK_API wk_status wk_module_load_state_dict(wk_module *m, const wk_state_dict *sd, bool strict, wk_load_report *report);

/* PyTorch-style printout ("SimpleNet(\n  (fc1): Linear(...)\n)"); malloc'd,
 * free with wk_free. */
WK_API char *wk_module_to_string(const wk_module *m);

/* ---- forward hooks and the call stack (ABI 1.2) ----
 * PyTorch's register_forward_pre_hook / register_forward_hook, and their global
 * twins (register_module_forward_pre_hook / _hook) when the module is NULL.
 * wk_module_forward runs: global pre hooks, the module's pre hooks (each in
 * registration order), forward, global hooks, the module's hooks. A hook that
 * returns an error stops the call: forward returns NULL with that error. A
 * hook may not add or remove hooks of the module it runs for. */

/* Runs before forward. inputs are borrowed. */
typedef wk_status (*wk_forward_pre_hook)(void *user, wk_module *m, wk_tensor *const *inputs, int n);
/* Runs after a forward that succeeded. *output is the forward's new reference;
 * a hook may replace it (release the old one, store a new reference). */
typedef wk_status (*wk_forward_hook)(void *user, wk_module *m, wk_tensor *const *inputs, int n, wk_tensor **output);

/* The direct children of m in registration order (PyTorch's named_children):
 * fills up to cap entries (borrowed; names live as long as m) and returns
 * their count. names or children may be NULL. */
WK_API int wk_module_named_children(const wk_module *m, const char **names, wk_module **children, int cap);

/* Register a hook on m, or on every module when m is NULL. Return the hook's
 * id (> 0) for wk_module_remove_hook, or 0 with an error (NULL fn, out of memory). */
WK_API int64_t wk_module_register_forward_pre_hook(wk_module *m, wk_forward_pre_hook fn, void *user);
WK_API int64_t wk_module_register_forward_hook(wk_module *m, wk_forward_hook fn, void *user);
/* Removes hook `id` from m (NULL: a global hook). WK_ERR_NOT_FOUND when absent. */
WK_API wk_status wk_module_remove_hook(wk_module *m, int64_t id);

/* ---- full backward hooks (ABI 1.4) ----
 * PyTorch's register_full_backward_hook / register_full_backward_pre_hook,
 * per module. While m has one, each forward with grad enabled passes the
 * inputs that require grad through an identity node (after the forward pre
 * hooks: forward and the forward hooks see those handles) and the output
 * through another, so backward calls, once per forward call:
 *  - the pre hooks when the gradient of the output is known; each may replace
 *    it (what the module's own backward, its parameters' .grad and the full
 *    hooks then see);
 *  - the full hooks when the gradients of the inputs are known; each may
 *    replace them (what flows on to the inputs). When no input requires grad
 *    they run right after the pre hooks, with every grad_input NULL, and may
 *    not replace any.
 * Hooks run in registration order; the hooks registered when forward ran are
 * the ones called (removing one later does not affect a graph already built).
 * A hook that returns an error fails the backward with it. A replacement has
 * the shape of the gradient it replaces (else WK_ERR_SHAPE naming the module). */

/* grad_input[0..n_in): the gradient of each forward input (borrowed; NULL for
 * one that does not require grad); grad_output[0..n_out): of the output
 * (n_out is 1, or 0 when the output's gradient was not seen). To replace
 * grad_input[i], store a new reference in new_grad_input[i] (the array is
 * zeroed; NULL keeps it). */
typedef wk_status (*wk_full_backward_hook)(void *user, wk_module *m, wk_tensor *const *grad_input, int n_in,
                                           wk_tensor *const *grad_output, int n_out, wk_tensor **new_grad_input);
/* grad_output[0..n_out) borrowed; to replace grad_output[i] store a new
 * reference in new_grad_output[i] (zeroed; NULL keeps it). */
typedef wk_status (*wk_full_backward_pre_hook)(void *user, wk_module *m, wk_tensor *const *grad_output, int n_out,
                                               wk_tensor **new_grad_output);
/* Register a hook on m (not NULL: there are no global ones). Return its id
 * (> 0) for wk_module_remove_hook, or 0 with an error (NULL module or fn,
 * out of memory). A module with full backward hooks takes at most 64 inputs. */
WK_API int64_t wk_module_register_full_backward_hook(wk_module *m, wk_full_backward_hook fn, void *user);
WK_API int64_t wk_module_register_full_backward_pre_hook(wk_module *m, wk_full_backward_pre_hook fn, void *user);

/* The modules whose forward is running on this thread, outermost first:
 * fills up to cap entries (borrowed) and returns the depth (0 outside any
 * forward). out may be NULL to ask for the depth. */
WK_API int wk_module_call_stack(wk_module **out, int cap);

/* ---- summary (torchinfo's summary(), ABI 1.2) ---- */
/* Totals of a summary, as torchinfo computes them. */
typedef struct wk_summary_stats {
  size_t struct_size;             /* sizeof(wk_summary_stats) */
  int64_t total_params;           /* each parameter once */
  int64_t trainable_params;       /* of those, requiring grad */
  int64_t total_mult_adds;        /* every op run by the forward (see wk_module_summary) */
  int64_t input_bytes;            /* the input tensor */
  int64_t forward_backward_bytes; /* 2 x the outputs of leaf modules with parameters */
  int64_t param_bytes;
  /* Appended in ABI 1.2 (read only when struct_size covers it): */
  int64_t ptflops_macs; /* ptflops' count: leaf module calls only (see wk_module_summary) */
} wk_summary_stats;

/* Options of wk_module_summary; zero fields mean the defaults. */
typedef struct wk_summary_opts {
  size_t struct_size;       /* sizeof(wk_summary_opts) */
  int depth;                /* rows deeper than this are folded into their parent (torchinfo's depth). Default: 3 */
  wk_dtype dtype;           /* the input's dtype. Default: float32 */
  wk_device device;         /* where the forward runs. Default: meta (no data is allocated) */
  wk_summary_stats *stats;  /* (optional) filled with the totals */
} wk_summary_opts;

/* torchinfo.summary(m, input_size=sizes, col_names=("output_size", "num_params",
 * "mult_adds")): runs one forward of m on an input of `sizes` (batch included)
 * under no_grad, and returns a new string (free with wk_free) with one row per
 * module call (class: depth-index, output shape, parameters, multiply-adds)
 * and the totals, in torchinfo 1.8's layout. On the meta device (the default)
 * nothing is computed: parameters and buffers on another device are swapped
 * for data-less twins during the call and put back, so m is unchanged.
 * Multiply-adds are counted per op from its shapes, below autograd: conv2d
 * out_numel * C_in/groups * kH * kW; mm, bmm, addmm, matmul, linear and dot
 * M * N * K (times the batch); every other op 0 (the convention of fvcore and
 * torchvision's GFLOPS tables; torchinfo's own per-module rule also adds
 * batch x the parameters of other layers, such as BatchNorm and biases). A
 * row shows the multiply-adds of the ops run inside it when it is a leaf or
 * folds deeper rows, else those its own forward ran directly ("--" for 0).
 * A second total, "Total MACs, ptflops rule", follows ptflops' PyTorch
 * module backend: each call of a leaf module counts conv / linear / addmm
 * MACs plus out_numel for a bias, BatchNorm/LayerNorm/GroupNorm the input's
 * numel (twice when affine), ReLU/LeakyReLU the output's numel, max, avg and
 * adaptive-avg pools the input's numel, ConvTranspose2d per input position;
 * ops run by non-leaf modules (functional adds, matmuls) count nothing.
 * Returns NULL with the error of the failing forward (naming the module). */
WK_API char *wk_module_summary(wk_module *m, const int64_t *sizes, int ndim, const wk_summary_opts *opts);

#endif
