/* Shared helpers for the Check suites: tensors from literal values, random
 * tensors from a generator independent of Wick's, non-contiguous copies,
 * comparisons against float64 references, and the suite runner. */
#ifndef WICK_TESTUTIL_H
#define WICK_TESTUTIL_H

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wick/wick.h>

#define TU_OK(expr) ck_assert_msg((expr) == WK_OK, "%s failed: %s", #expr, wk_last_error_message())
#define TU_NOTNULL(p) ck_assert_msg((p) != NULL, "%s is NULL: %s", #p, wk_last_error_message())

/* Tensor from literal doubles converted to dtype dt. */
static inline wk_tensor *tu_tensor(const double *vals, wk_dtype dt, const int64_t *sizes, int ndim) {
  wk_tensor *t = wk_empty(sizes, ndim, (wk_options){.dtype = dt});
  if (!t) return NULL;
  int64_t n = wk_tensor_numel(t), idx[WK_MAX_DIMS] = {0};
  for (int64_t k = 0; k < n; k++) {
    wk_tensor_set(t, idx, vals[k]);
    for (int d = ndim - 1; d >= 0; d--) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
  return t;
}
/* TU_T(WK_F32, (2, 2), 1, 2, 3, 4): dtype, parenthesised shape, then the values. */
#define TU_T(dt, shape, ...) tu_tensor((const double[]){__VA_ARGS__}, dt, WK_SHAPE shape)

/* Deterministic pseudo-random numbers (xorshift), not Wick's RNG. */
static inline double tu_uniform(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return (double)(*s >> 11) / 9007199254740992.0;
}

/* Random tensor with values in [lo, hi) (integers rounded for int dtypes). */
static inline wk_tensor *tu_rand(const int64_t *sizes, int ndim, wk_dtype dt, double lo, double hi, uint64_t seed) {
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) n *= sizes[i];
  double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
  uint64_t s = seed * 2654435761u + 88172645463325252ull;
  for (int64_t i = 0; i < n; i++) {
    double x = lo + (hi - lo) * tu_uniform(&s);
    if (!wk_dtype_is_floating(dt)) x = dt == WK_BOOL ? (x > (lo + hi) / 2) : floor(x);
    v[i] = x;
  }
  wk_tensor *t = tu_tensor(v, dt, sizes, ndim);
  free(v);
  return t;
}

/* A non-contiguous tensor with the same values as t: the values live in every
 * other element of the last dimension of a larger buffer. */
static inline wk_tensor *tu_noncontig(wk_tensor *t) {
  int nd = wk_tensor_dim(t);
  if (nd == 0) return wk_retain(t);
  int64_t big[WK_MAX_DIMS];
  memcpy(big, wk_tensor_sizes(t), sizeof(int64_t) * (size_t)nd);
  big[nd - 1] *= 2;
  wk_tensor *b = wk_zeros(big, nd, (wk_options){.dtype = wk_tensor_dtype(t)});
  wk_tensor *v = wk_slice(b, nd - 1, 0, big[nd - 1], 2);
  wk_copy_(v, t);
  wk_release(b);
  return v;
}

/* All values of t as doubles (malloc'd). */
static inline double *tu_values(wk_tensor *t) {
  int64_t n = wk_tensor_numel(t);
  double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
  wk_tensor_to_f64(t, v, n);
  return v;
}

/* Asserts t's values match ref within atol + rtol*|ref| (NaN matches NaN). */
static inline void tu_assert_close_(wk_tensor *t, const double *ref, int64_t n, double rtol, double atol,
                                    const char *what, int line) {
  ck_assert_msg(t != NULL, "line %d: %s is NULL: %s", line, what, wk_last_error_message());
  ck_assert_msg(wk_tensor_numel(t) == n, "line %d: %s has %lld elements, expected %lld", line, what,
                (long long)wk_tensor_numel(t), (long long)n);
  double *v = tu_values(t);
  for (int64_t i = 0; i < n; i++) {
    bool ok = (isnan(v[i]) && isnan(ref[i])) || (v[i] == ref[i]) || fabs(v[i] - ref[i]) <= atol + rtol * fabs(ref[i]);
    if (!ok) {
      double got = v[i];
      free(v);
      ck_abort_msg("line %d: %s[%lld] = %.17g, expected %.17g", line, what, (long long)i, got, ref[i]);
    }
  }
  free(v);
}
#define TU_CLOSE(t, ref, n, rtol, atol) tu_assert_close_(t, ref, n, rtol, atol, #t, __LINE__)
#define TU_EQ_VALS(t, ...)                                                                       \
  tu_assert_close_(t, (const double[]){__VA_ARGS__},                                              \
                   (int64_t)(sizeof((const double[]){__VA_ARGS__}) / sizeof(double)), 0, 0, #t, __LINE__)

/* Asserts the last call failed with `code` and a message containing `needle`. */
#define TU_FAILS_WITH(code, needle)                                                              \
  do {                                                                                            \
    ck_assert_msg(wk_last_error() == (code), "expected status %s, got %s (%s)", wk_status_name(code), \
                  wk_status_name(wk_last_error()), wk_last_error_message());                       \
    ck_assert_msg(strstr(wk_last_error_message(), needle) != NULL, "message '%s' lacks '%s'",      \
                  wk_last_error_message(), needle);                                               \
    wk_clear_error();                                                                             \
  } while (0)

/* Every test starts with Wick initialised and no pending error. */
static inline void tu_setup(void) {
  ck_assert_int_eq(wk_init(), WK_OK);
  wk_clear_error();
}

/* Runs one suite and exits with Automake's conventions. */
#define TU_MAIN(make_suite)                                              \
  int main(void) {                                                       \
    SRunner *sr = srunner_create(make_suite());                          \
    srunner_run_all(sr, CK_NORMAL);                                      \
    int failed = srunner_ntests_failed(sr);                              \
    srunner_free(sr);                                                    \
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;                         \
  }

#endif
