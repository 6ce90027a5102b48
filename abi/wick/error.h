/* Wick ABI: errors cross the ABI as values. Every call that fails returns a
 * status (or NULL) and records a thread-local message naming the op and the
 * offending values.
 *
 * Scoping (ABI 1.3). The slot is per thread and per top-level call:
 *  - A call whose arguments are all valid starts with a clean slot: if it
 *    fails, wk_last_error_message() names its own fault, never an earlier
 *    call's (load a bad file, then a good one, then another bad one: the
 *    message names the second bad file). If it succeeds, wk_last_error() is
 *    WK_OK. No wk_clear_error() is needed between calls.
 *  - A call receiving NULL (the handle an earlier call failed to make) keeps
 *    the propagated error, so wk_relu(wk_add(a, b)) with a failing add
 *    reports add's fault, not "argument 'self' is NULL".
 *  - Inside one call, the first error is kept: nested calls that fail and
 *    propagate NULL report the root cause.
 * Where: the dispatcher (every op call: wk_add, wk_op_call, wk_call, ...) at
 * the outermost level once it has checked the arguments, and the service
 * wrappers (wk_load_safetensors, wk_checkpoint_load, wk_dataset_mnist, ...
 * in io.h, data.h) through wk_error_new_call() before calling the plugin.
 * Other calls (accessors, wk_release, wk_state_dict_*) leave the slot alone,
 * so cleanup after a failure does not erase its message. */
#ifndef WICK_ERROR_H
#define WICK_ERROR_H

#include <stdarg.h>
#include <wick/types.h>

/* Returns the status of the first error recorded on this thread since the last
 * wk_clear_error(), or WK_OK. */
WK_API wk_status wk_last_error(void);

/* Returns the message of that error ("" when none). Borrowed: valid until the
 * next call that records or clears an error on this thread. */
WK_API const char *wk_last_error_message(void);

/* Forgets the recorded error on this thread. */
WK_API void wk_clear_error(void);

/* Returns the static short name of a status ("shape mismatch"). */
WK_API const char *wk_status_name(wk_status s);

/* Marks the start of a top-level call (ABI 1.3): an error recorded by an
 * earlier call is no longer reported (wk_last_error() gives WK_OK), the next
 * error recorded replaces it, and a WK_ERR_NULL error revives it instead (the
 * call received the NULL that failure returned). Does nothing inside a
 * dispatched op (kernels, composite ops). The service wrappers call it;
 * plugin authors offering a service through inline wrappers do the same. */
WK_API void wk_error_new_call(void);

/* Records an error (printf-style message) unless one is already recorded, and
 * returns `code` so callers can write `return wk_error(...)`. Plugins use this
 * to report failures from kernels and services. */
WK_API wk_status wk_error(wk_status code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Same as wk_error, but replaces an error that is already recorded. */
WK_API wk_status wk_error_replace(wk_status code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
