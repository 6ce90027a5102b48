/* Wick ABI: reverse-mode automatic differentiation, PyTorch's semantics.
 * Ops on tensors that require gradients record a node (a dynamic graph,
 * rebuilt every step); wk_backward walks it and accumulates into .grad.
 * The autograd dispatch layer lives in the core; derivative formulas are
 * written with ops, so any backend that implements the ops gets gradients. */
#ifndef WICK_AUTOGRAD_H
#define WICK_AUTOGRAD_H

#include <wick/dispatch.h>

/* ---- inspection ------------------------------------------------------------------ */
/* True for tensors created by the user (or requiring no grad); false for the
 * results of recorded ops. */
WK_API bool wk_tensor_is_leaf(const wk_tensor *t);
/* Name of the node that created t ("AddmmBackward0"), or NULL for leaves. Static. */
WK_API const char *wk_tensor_grad_fn_name(const wk_tensor *t);
/* Returns a new handle on t.grad's storage (writes through it change .grad),
 * or NULL (without an error) when unset. */
WK_API wk_tensor *wk_tensor_grad(wk_tensor *t);
/* Sets t.grad (borrows g, which must match t's shape; NULL clears). */
WK_API wk_status wk_tensor_set_grad(wk_tensor *t, wk_tensor *g);
/* Clears t.grad: set_to_none drops it, otherwise it is zeroed in place. */
WK_API wk_status wk_tensor_zero_grad(wk_tensor *t, bool set_to_none);
/* Makes a non-leaf keep its .grad after backward (retain_grad()). */
WK_API wk_status wk_tensor_retain_grad(wk_tensor *t);
/* Returns a new tensor sharing t's storage and version counter, with no
 * history and requires_grad false (t.detach()). */
WK_API wk_tensor *wk_detach(wk_tensor *t);

/* ---- backward -------------------------------------------------------------------------- */
typedef struct wk_backward_opts {
  size_t struct_size;
  bool retain_graph; /* keep saved tensors for another backward */
  bool create_graph; /* record the backward ops (double backward); implies retain_graph */
} wk_backward_opts;

/* loss.backward() for a one-element loss. Accumulates into the .grad of every
 * leaf that requires grad. */
WK_API wk_status wk_backward(wk_tensor *loss);
/* t.backward(gradient, retain_graph, create_graph); gradient may be NULL only
 * for one-element t. opts may be NULL (defaults). */
WK_API wk_status wk_backward_with(wk_tensor *t, wk_tensor *gradient, const wk_backward_opts *opts);
/* torch.autograd.grad: gradients of outputs w.r.t. inputs, written to
 * grads_out[i] (new references; NULL where an input is unused and
 * allow_unused), without touching any .grad. grad_outputs may be NULL (all
 * outputs one-element). */
WK_API wk_status wk_grad(wk_tensor *const *outputs, int noutputs, wk_tensor *const *grad_outputs,
                         wk_tensor *const *inputs, int ninputs, wk_tensor **grads_out,
                         const wk_backward_opts *opts, bool allow_unused);

/* ---- grad modes (thread-local, nestable) ------------------------------------------------ */
WK_API bool wk_grad_enabled(void);
/* Sets grad mode on this thread; returns the previous value (restore it). */
WK_API bool wk_set_grad_enabled(bool on);
/* torch.no_grad(): begin/end pairs nest. */
WK_API void wk_no_grad_begin(void);
WK_API wk_status wk_no_grad_end(void);
/* torch.inference_mode(): like no_grad, and tensors created inside can never
 * be used in a recorded op later. */
WK_API void wk_inference_mode_begin(void);
WK_API wk_status wk_inference_mode_end(void);
WK_API bool wk_is_inference_tensor(const wk_tensor *t);

/* ---- hooks --------------------------------------------------------------------------------- */
/* Called with the gradient flowing into t (borrowed); may return a
 * replacement (a new reference) or NULL to keep it. */
typedef wk_tensor *(*wk_grad_hook_fn)(void *user, wk_tensor *grad);
/* Registers a gradient hook on t (register_hook). */
WK_API wk_status wk_tensor_register_hook(wk_tensor *t, wk_grad_hook_fn fn, void *user);
/* Called after a leaf's .grad was updated by backward (borrowed param). */
typedef void (*wk_post_accumulate_hook_fn)(void *user, wk_tensor *param);
WK_API wk_status wk_tensor_register_post_accumulate_grad_hook(wk_tensor *t, wk_post_accumulate_hook_fn fn,
                                                               void *user);
/* ABI 1.3. Queues fn(user) to run when the backward running on this thread
 * (wk_backward, wk_backward_with, wk_grad) has run its whole graph, before it
 * returns: PyTorch's Variable._execution_engine.queue_callback, with which
 * DistributedDataParallel waits for its gradient all-reduces. Call it from a
 * hook or a derivative; callbacks run in the order queued (one may queue
 * another), only when the graph ran without error; the first one that fails
 * fails the backward with its error. WK_ERR_STATE when no backward runs. */
typedef wk_status (*wk_autograd_callback_fn)(void *user);
WK_API wk_status wk_autograd_queue_callback(wk_autograd_callback_fn fn, void *user);

/* ---- derivatives for plugin ops ---------------------------------------------------------- */
/* What a derivative function sees while it runs (opaque, valid during the call). */
typedef struct wk_backward_ctx wk_backward_ctx;
/* Saved argument i (a Tensor the registration asked to keep), borrowed; NULL
 * with an error recorded when it was modified in place or already freed. */
WK_API wk_tensor *wk_backward_saved_arg(wk_backward_ctx *c, int i);
/* Saved output i, borrowed. */
WK_API wk_tensor *wk_backward_saved_out(wk_backward_ctx *c, int i);
/* The op's non-tensor argument i as called (ints, floats, lists...). */
WK_API const wk_value *wk_backward_arg(wk_backward_ctx *c, int i);
/* True when Tensor argument i needs a gradient. */
WK_API bool wk_backward_needs(wk_backward_ctx *c, int i);
/* Gives the gradient of Tensor argument i (borrows grad; it may be broadcast:
 * the engine sums it back to the argument's shape). */
WK_API wk_status wk_backward_set_grad(wk_backward_ctx *c, int i, wk_tensor *grad);
/* A derivative: from the gradients of the outputs (never NULL), compute the
 * gradients of the inputs with ops and hand them over with
 * wk_backward_set_grad. Every argument for which wk_backward_needs() is true
 * must get one (zeros where the output does not depend on it): one left unset
 * fails the backward with "op: the derivative for 'x' (argument k) is not
 * implemented". Temporaries may be released or left to the scope the engine
 * opens around the call. */
typedef wk_status (*wk_derivative_fn)(wk_backward_ctx *c, wk_tensor *const *grad_outputs, int noutputs);
/* Registers the derivative of `op` (node name e.g. "SwigluBackward0", copied).
 * save_args / save_outputs: bit i keeps Tensor argument / output i for the
 * backward pass. Replaces a formula registered earlier. */
WK_API wk_status wk_op_register_derivative(const char *op, const char *node_name, wk_derivative_fn fn,
                                           uint32_t save_args, uint32_t save_outputs);

/* ---- activation checkpointing -------------------------------------------------------------- */
/* ABI 1.3. A checkpointed segment: returns a new reference to its one output,
 * computed from inputs[0..n) (borrowed) and whatever parameters it reaches
 * (a module's forward), or NULL with an error. It runs twice, so it must
 * compute the same function each time (it may use the RNG: see below). */
typedef wk_tensor *(*wk_activation_checkpoint_fn)(void *user, wk_tensor *const *inputs, int n);
/* ABI 1.3. torch.utils.checkpoint.checkpoint (use_reentrant=True,
 * preserve_rng_state=True), named apart from io.h's training checkpoints
 * (wk_checkpoint). Runs fn under no_grad, so none of its
 * intermediate results are kept for backward; the output gets a
 * CheckpointBackward node that keeps only the inputs. The backward pass runs
 * fn again with grad on, from detached copies of the inputs and with the RNG
 * states (cpu, and each device of an input) it had on the first run, so
 * dropout draws the same mask, then backpropagates through that recorded
 * segment: parameters inside accumulate their .grad as without
 * checkpointing, and the inputs' gradients flow on. Gradients are
 * bit-identical to the run without checkpointing. The output requires grad
 * when an input does or when the segment read a tensor that requires grad (a
 * parameter): unlike PyTorch's reentrant variant, a segment fed with data
 * (a network's stem on the images) still trains its parameters. The
 * segment's temporaries are freed when it returns, and their blocks go back
 * to the system rather than to the cpu storage cache. With grad mode off fn
 * simply runs; the segment cannot be differentiated by wk_grad (use
 * wk_backward); batch norm's running statistics update on both runs.
 * Returns a new reference, or NULL with an error (fn's own, or WK_ERR_NULL /
 * WK_ERR_INVALID_ARG for bad arguments, at most 32 inputs). */
WK_API wk_tensor *wk_activation_checkpoint(wk_activation_checkpoint_fn fn, void *user, wk_tensor *const *inputs, int n);

/* ---- anomaly mode ----------------------------------------------------------------------------- */
/* When on, a backward output holding NaN or Inf fails with an error naming the
 * node and the forward op that created it. */
WK_API void wk_set_anomaly_enabled(bool on);
WK_API bool wk_anomaly_enabled(void);

#endif
