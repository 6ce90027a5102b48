/* Core-internal: full backward hooks on modules (module_hooks.c), used by
 * module.c's forward. Never installed. */
#ifndef WICK_CORE_MODULE_INTERNAL_H
#define WICK_CORE_MODULE_INTERNAL_H

#include <wick/module.h>

#include "internal.h"

/* One registered backward hook: a wk_full_backward_hook (full) or a
 * wk_full_backward_pre_hook. */
typedef struct wk__bw_hook {
  int64_t id;
  bool full;
  void *fn, *user;
} wk__bw_hook;

/* The backward-hook state of one forward call, shared by its two
 * BackwardHookFunctionBackward nodes (PyTorch's BackwardHook). */
typedef struct wk__bw_call wk__bw_call;

/* Before forward: snapshots hooks[0..nh) and, when one of them is a full hook,
 * gives each input that requires grad a fresh handle whose grad_fn is a node
 * on which the full hooks see and may replace grad_input. wrapped[0..n)
 * receives the inputs to call forward with (the new handles, or the inputs
 * themselves: borrowed). NULL with an error (out of memory). */
WK__HIDDEN wk__bw_call *wk__bw_begin(wk_module *m, const wk__bw_hook *hooks, int nh, wk_tensor *const *inputs, int n,
                                     wk_tensor **wrapped);
/* After forward and its forward hooks: when r requires grad, returns a new
 * handle on it whose node runs the pre hooks (which may replace grad_output)
 * and keeps grad_output for the full hooks; r is released (user-level, so it
 * leaves the scope at depth 0) and the new handle takes its place. Otherwise
 * returns r. NULL with an error (r released). */
WK__HIDDEN wk_tensor *wk__bw_end(wk__bw_call *c, wk_tensor *r);
/* Drops the forward's reference to the call and the wrapped handles made by
 * wk__bw_begin. NULL does nothing. */
WK__HIDDEN void wk__bw_finish(wk__bw_call *c, wk_tensor **wrapped, int n);

#endif
