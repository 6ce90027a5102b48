/* Private to the core's composite kernels (composite_*.c): kernels written
 * with other ops, one implementation for every device. A kernel runs its
 * parts as a derivative formula does: at call depth 0 inside a scope of its
 * own, so the parts' results (temporaries included) belong to that scope.
 * BEGIN_K opens it; FINISH1 / wk__composite_finish close it. */
#ifndef WICK_CORE_COMPOSITE_KERNEL_H
#define WICK_CORE_COMPOSITE_KERNEL_H

#include "internal.h"

#define T(n) (args[n].u.t)

/* The first result of op(a...) (owned by the current scope), or NULL with the error recorded. */
static inline wk_tensor *wk__call1(const char *op, const wk_value *a, int n) {
  wk_value o[WK_MAX_OUTS];
  return wk_call(op, a, n, o) == WK_OK ? o[0].u.t : NULL;
}
#define NARGS(...) ((int)(sizeof((const wk_value[]){__VA_ARGS__}) / sizeof(wk_value)))
#define C1(op, ...) wk__call1(op, (const wk_value[]){__VA_ARGS__}, NARGS(__VA_ARGS__))

#define BEGIN_K                 \
  int depth__ = wk__call_depth; \
  wk__call_depth = 0;           \
  wk_scope_begin()

/* Ends a kernel: the results r[0..n) leave the kernel's scope (new references
 * in outs). A NULL result fails the kernel with the error of the part that
 * failed, even when later successful calls marked it stale (a part without a
 * kernel on this device reports WK_ERR_NO_KERNEL, not "failed without a
 * message"). */
WK__HIDDEN wk_status wk__composite_finish(wk_value *outs, wk_tensor *const *r, int n, int depth);
#define FINISH1(t) wk__composite_finish(outs, (wk_tensor *const[]){(t)}, 1, depth__)

#endif
