/* Wick ABI: errors cross the ABI as values. Every call that fails returns a
 * status (or NULL) and records a thread-local message naming the op and the
 * offending values. The first error is kept until wk_clear_error(). */
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

/* Records an error (printf-style message) unless one is already recorded, and
 * returns `code` so callers can write `return wk_error(...)`. Plugins use this
 * to report failures from kernels and services. */
WK_API wk_status wk_error(wk_status code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Same as wk_error, but replaces an error that is already recorded. */
WK_API wk_status wk_error_replace(wk_status code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
