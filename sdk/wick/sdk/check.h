/* Wick SDK: the checking vocabulary for plugin authors (like Lua's lauxlib),
 * built only on the public API: shape strings, PyTorch's dtype words, dim
 * wrapping, int[N] and string-option arguments, so every plugin's messages read
 * the same. Header-only; <wick/sdk.h> includes it for plugins (calls then go
 * through the host table); programs and tests may include it alone. */
#ifndef WICK_SDK_CHECK_H
#define WICK_SDK_CHECK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <wick/wick.h>

/* ---- shapes as text ----------------------------------------------------------------- */

/* A buffer size that holds any shape of up to WK_MAX_DIMS sizes: brackets,
 * separators and 20 characters per size (INT64_MIN), plus the terminator. */
#define WK_SHAPE_STR_MAX (22 * WK_MAX_DIMS + 3)

/* Writes the n sizes v[0..n-1] as PyTorch prints a size list, "[2, 3]" ("[]" for
 * n == 0), into buf (cap bytes; truncated, always NUL-terminated when cap > 0).
 * Returns buf, so the call can sit in a message's argument list. v may be NULL
 * only when n == 0. */
static inline const char *wk_sizes_str(const int64_t *v, int n, char *buf, size_t cap) {
  if (!buf || cap == 0) return buf;
  size_t k = 0;
  char num[24];
  /* Appends s, stopping one short of cap so the terminator always fits. */
#define WK__SZ_PUT(s)                                        \
  for (const char *p_ = (s); *p_ && k + 1 < cap; p_++) buf[k++] = *p_;
  WK__SZ_PUT("[")
  for (int i = 0; i < n; i++) {
    snprintf(num, sizeof num, "%lld", (long long)v[i]);
    if (i) WK__SZ_PUT(", ")
    WK__SZ_PUT(num)
  }
  WK__SZ_PUT("]")
#undef WK__SZ_PUT
  buf[k] = '\0';
  return buf;
}

/* The shape of tensor t as wk_sizes_str writes it ("[2, 3]"; "[]" for a 0-dim
 * tensor) into buf (cap bytes). Borrows t; a NULL t writes "[]". Returns buf. */
static inline const char *wk_shape_str(const wk_tensor *t, char *buf, size_t cap) {
  return t ? wk_sizes_str(wk_tensor_sizes(t), wk_tensor_dim(t), buf, cap) : wk_sizes_str((const int64_t *)0, 0, buf, cap);
}

/* ---- dtype names as PyTorch prints them ------------------------------------------------ */

/* PyTorch's ScalarType word for dt ("Float", "Double", "Half", "BFloat16", "Char",
 * "Byte", "Short", "Int", "Long", "Bool"), as in "not implemented for 'Long'";
 * read from the dtype list's column. "?" for anything else. Static string. */
static inline const char *wk_dtype_torch_name(wk_dtype dt) {
  switch (dt) {
#define WK__X(e, n, s, t, w, sz, k) \
  case e:                           \
    return w;
    WK_DTYPE_LIST(WK__X)
#undef WK__X
    default:
      return "?";
  }
}

/* The same word in lower case ("float", "bfloat16", "long", ...), the short type
 * name some PyTorch messages print ("... but got mask with dtype long"), written
 * into buf (cap bytes, NUL-terminated when cap > 0). Returns buf. */
static inline const char *wk_dtype_torch_lower(wk_dtype dt, char *buf, size_t cap) {
  if (!buf || cap == 0) return buf;
  const char *w = wk_dtype_torch_name(dt);
  size_t i = 0;
  for (; w[i] && i + 1 < cap; i++) buf[i] = (char)(w[i] >= 'A' && w[i] <= 'Z' ? w[i] - 'A' + 'a' : w[i]);
  buf[i] = '\0';
  return buf;
}

/* PyTorch's C++ type name for dt (caffe2::TypeMeta: "float", "double", "c10::Half",
 * "c10::BFloat16", "signed char", "unsigned char", "short int", "int", "long int",
 * "bool"), as in matmul's "expected m1 and m2 to have the same dtype, but got:
 * float != double". "?" for anything else. Static string. */
static inline const char *wk_dtype_cpp_name(wk_dtype dt) {
  switch (dt) {
    case WK_F32: return "float";
    case WK_F64: return "double";
    case WK_F16: return "c10::Half";
    case WK_BF16: return "c10::BFloat16";
    case WK_I8: return "signed char";
    case WK_U8: return "unsigned char";
    case WK_I16: return "short int";
    case WK_I32: return "int";
    case WK_I64: return "long int";
    case WK_BOOL: return "bool";
    default: return "?";
  }
}

/* ---- dims ------------------------------------------------------------------------ */

/* Wraps a possibly negative dim of a tensor with ndim dimensions (a 0-dim tensor
 * accepts -1 and 0, like PyTorch's maybe_wrap_dim) and stores it in *out.
 * Returns WK_OK, or records WK_ERR_INDEX "OP(): Dimension out of range (expected
 * to be in range of [-2, 1], but got 5)" (op is the bare op name, without "()")
 * and sets *out to 0. */
static inline wk_status wk_check_dim(const char *op, int64_t dim, int ndim, int *out) {
  int64_t n = ndim > 0 ? ndim : 1;
  *out = 0;
  if (dim < -n || dim >= n)
    return wk_error(WK_ERR_INDEX, "%s(): Dimension out of range (expected to be in range of [%lld, %lld], but got %lld)",
                    op, (long long)-n, (long long)(n - 1), (long long)dim);
  *out = (int)(dim < 0 ? dim + n : dim);
  return WK_OK;
}

/* ---- int[N] arguments of boxed kernels -------------------------------------------------- */

/* Reads an int[n] argument (stride, padding, kernel_size, ...) into out[0..n-1],
 * accepting PyTorch's single-value form (one value stands for all n). Returns
 * false, recording nothing, when v is not an int list of length 1 or n; the
 * caller words the error for its op. Borrows v. */
static inline bool wk_arg_int_tuple(const wk_value *v, int n, int64_t *out) {
  if (!v || v->tag != WK_V_INTS || n < 1 || (v->len != 1 && v->len != n)) return false;
  for (int i = 0; i < n; i++) out[i] = v->u.ints[v->len == 1 ? 0 : i];
  return true;
}

/* wk_arg_int_tuple for the common int[2] (height, width) arguments. */
static inline bool wk_arg_int_pair(const wk_value *v, int64_t out[2]) { return wk_arg_int_tuple(v, 2, out); }

/* ---- string options ------------------------------------------------------------------ */

/* The index of value in `allowed` (a NULL-terminated list), or -1 when absent
 * or when value is NULL. Records nothing: for callers whose message PyTorch words
 * its own way. */
static inline int wk_option_index(const char *value, const char *const *allowed) {
  if (!value || !allowed) return -1;
  for (int i = 0; allowed[i]; i++)
    if (strcmp(value, allowed[i]) == 0) return i;
  return -1;
}

/* The index of value in `allowed` (NULL-terminated). When absent, records
 * WK_ERR_INVALID_ARG "OP(): ARG must be one of 'a', 'b' or 'c', but got 'x'"
 * (pad's wording; op is the bare op name, arg names the argument) and returns -1. */
static inline int wk_arg_option(const char *op, const char *arg, const char *value, const char *const *allowed) {
  int i = wk_option_index(value, allowed);
  if (i >= 0) return i;
  char list[256];
  size_t k = 0;
  list[0] = '\0';
  int n = 0;
  while (allowed && allowed[n]) n++;
  for (int j = 0; j < n && k < sizeof list; j++)
    k += (size_t)snprintf(list + k, sizeof list - k, "%s'%s'", j == 0 ? "" : j == n - 1 ? " or " : ", ", allowed[j]);
  wk_error(WK_ERR_INVALID_ARG, "%s(): %s must be one of %s, but got '%s'", op, arg, list, value ? value : "None");
  return -1;
}

#endif
