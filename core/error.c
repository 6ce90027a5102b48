/* Thread-local error state: the first error of a call is kept, so nested
 * calls that propagate NULL report the root cause. A new top-level call with
 * valid arguments (wk__error_new_call: the dispatcher at depth 0, the service
 * wrappers) marks an earlier call's error stale: it is no longer reported,
 * the next error replaces it, and a WK_ERR_NULL (a call receiving the NULL an
 * earlier failure returned) revives it instead of naming the NULL. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

_Thread_local wk_status wk__err_code = WK_OK;
_Thread_local bool wk__err_stale;
_Thread_local unsigned wk__err_reports;
static _Thread_local char g_msg[1024];

wk_status wk_last_error(void) { return wk__err_stale ? WK_OK : wk__err_code; }
const char *wk_last_error_message(void) { return wk__err_code == WK_OK || wk__err_stale ? "" : g_msg; }
void wk_clear_error(void) {
  wk__err_code = WK_OK;
  wk__err_stale = false;
  g_msg[0] = 0;
}
bool wk__error_pending(void) { return wk__err_code != WK_OK && !wk__err_stale; }
bool wk__error_revive(void) {
  if (!wk__err_stale || wk__err_code == WK_OK) return false;
  wk__err_stale = false;
  return true;
}

void wk_error_new_call(void) {
  if (wk__call_depth == 0) wk__error_new_call();
}

const char *wk_status_name(wk_status s) {
  switch (s) {
#define WK__X(e, n, str) \
  case e:                \
    return str;
    WK_STATUS_LIST(WK__X)
#undef WK__X
  }
  return "unknown status";
}

static wk_status record(bool replace, wk_status code, const char *fmt, va_list ap) {
  wk__err_reports++;
  if (code == WK_OK) code = WK_ERR_INTERNAL;
  if (wk__err_stale && wk__err_code != WK_OK) {
    wk__err_stale = false;
    if (code == WK_ERR_NULL && !replace) return code; /* a propagated NULL: the earlier failure is the cause */
  } else if (wk__err_code != WK_OK && !replace) {
    return code;
  }
  wk__err_stale = false;
  wk__err_code = code;
  vsnprintf(g_msg, sizeof g_msg, fmt, ap);
  return code;
}

wk_status wk_error(wk_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  wk_status s = record(false, code, fmt, ap);
  va_end(ap);
  return s;
}

wk_status wk_error_replace(wk_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  wk_status s = record(true, code, fmt, ap);
  va_end(ap);
  return s;
}

void wk__null_arg(const char *fn, const char *arg) {
  if (!wk__error_pending()) wk_error(WK_ERR_NULL, "%s: argument '%s' is NULL", fn, arg);
}

const char *wk__shape_str(const int64_t *sizes, int ndim, char *buf, size_t n) {
  size_t k = 0;
  k += (size_t)snprintf(buf + k, n - k, "[");
  for (int i = 0; i < ndim && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)sizes[i]);
  if (k < n) snprintf(buf + k, n - k, "]");
  return buf;
}

char *wk__strdup(const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *p = wk_malloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

int wk__wrap_dim(const char *op, int64_t dim, int ndim, bool *ok) {
  int64_t n = ndim > 0 ? ndim : 1;
  if (dim < -n || dim >= n) {
    wk_error(WK_ERR_INDEX,
             "%s: dimension out of range (expected to be in range of [%lld, %lld], but got %lld)",
             op, (long long)-n, (long long)(n - 1), (long long)dim);
    *ok = false;
    return 0;
  }
  *ok = true;
  return (int)(dim < 0 ? dim + n : dim);
}
