/* check_ops_index: indexing and shape ops (cat, stack, split, chunk,
 * index_select, gather, scatter, scatter_add, masked_fill, masked_select,
 * repeat, flip, roll, sort, topk, one_hot) against naive float64 references
 * written here, over random shapes, every dim, non-contiguous views, zero-size
 * and 0-dim tensors, every dtype, and bad input. */
#include "testutil.h"

static const wk_dtype ALL[] = {WK_F32, WK_F64, WK_F16, WK_BF16, WK_I8, WK_U8, WK_I16, WK_I32, WK_I64, WK_BOOL};
#define NALL ((int)(sizeof ALL / sizeof ALL[0]))

/* ---- helpers ------------------------------------------------------------------------ */

static uint64_t g_rng = 1;
static void rseed(uint64_t s) { g_rng = s * 0x9E3779B97F4A7C15ull + 12345; }
/* Uniform integer in [lo, hi). */
static int64_t ri(int64_t lo, int64_t hi) { return lo + (int64_t)(tu_uniform(&g_rng) * (double)(hi - lo)); }

static int64_t prod(const int64_t *sz, int nd) {
  int64_t n = 1;
  for (int i = 0; i < nd; i++) n *= sz[i];
  return n;
}
static void unravel(int64_t lin, const int64_t *sz, int nd, int64_t *co) {
  for (int d = nd - 1; d >= 0; d--) {
    co[d] = sz[d] ? lin % sz[d] : 0;
    lin = sz[d] ? lin / sz[d] : 0;
  }
}
static int64_t ravel(const int64_t *co, const int64_t *sz, int nd) {
  int64_t l = 0;
  for (int d = 0; d < nd; d++) l = l * sz[d] + co[d];
  return l;
}
/* Linear index into a tensor of shape sz (nd dims) broadcast to an output
 * coordinate co of ond dims. */
static int64_t bidx(const int64_t *co, int ond, const int64_t *sz, int nd) {
  int64_t l = 0;
  for (int d = 0; d < nd; d++) {
    int64_t c = sz[d] == 1 ? 0 : co[ond - nd + d];
    l = l * sz[d] + c;
  }
  return l;
}

#define CHECK_SHAPE(t, sz, nd)                                                                       \
  do {                                                                                               \
    ck_assert_msg((t) != NULL, "line %d: NULL: %s", __LINE__, wk_last_error_message());            \
    ck_assert_int_eq(wk_tensor_dim(t), (nd));                                                        \
    for (int q_ = 0; q_ < (nd); q_++) ck_assert_int_eq(wk_tensor_size(t, q_), (sz)[q_]);            \
  } while (0)

/* Random values that every dtype holds. */
static wk_tensor *rnd(const int64_t *sz, int nd, wk_dtype dt, uint64_t seed) {
  double lo = -20, hi = 20;
  if (dt == WK_U8) lo = 0, hi = 40;
  if (dt == WK_BOOL) lo = 0, hi = 2;
  return tu_rand(sz, nd, dt, lo, hi, seed);
}

/* Tensor of dtype dt from int64 values. */
static wk_tensor *itensor(const int64_t *v, const int64_t *sz, int nd, wk_dtype dt) {
  int64_t n = prod(sz, nd);
  double *d = malloc(sizeof(double) * (size_t)(n ? n : 1));
  for (int64_t i = 0; i < n; i++) d[i] = (double)v[i];
  wk_tensor *t = tu_tensor(d, dt, sz, nd);
  free(d);
  return t;
}

/* A view with t's values, every other element of the last dimension of a
 * bigger buffer (built from core ops only). */
static wk_tensor *nc_slice(wk_tensor *t) {
  int nd = wk_tensor_dim(t);
  if (nd == 0) return wk_retain(t);
  int64_t big[WK_MAX_DIMS];
  memcpy(big, wk_tensor_sizes(t), sizeof(int64_t) * (size_t)nd);
  big[nd - 1] *= 2;
  wk_tensor *b = wk_empty(big, nd, (wk_options){.dtype = wk_tensor_dtype(t)});
  wk_tensor *v = wk_slice(b, nd - 1, 0, big[nd - 1], 2);
  wk_copy_(v, t);
  wk_release(b);
  return v;
}
/* A transposed view with t's values (first and last dims swapped in memory). */
static wk_tensor *nc_trans(wk_tensor *t) {
  int nd = wk_tensor_dim(t);
  if (nd < 2) return nc_slice(t);
  wk_tensor *a = wk_transpose(t, 0, nd - 1), *c = wk_contiguous(a), *r = wk_transpose(c, 0, nd - 1);
  wk_release(a);
  wk_release(c);
  return r;
}
/* Layout variant k: contiguous, strided slice or transposed. Consumes t. */
static wk_tensor *variant(wk_tensor *t, int k) {
  wk_tensor *r = k % 3 == 0 ? wk_retain(t) : k % 3 == 1 ? nc_slice(t) : nc_trans(t);
  wk_release(t);
  return r;
}

static double tol_for(wk_dtype dt) {
  return dt == WK_F32 ? 1e-5 : dt == WK_F16 ? 1e-2 : dt == WK_BF16 ? 2e-2 : 0;
}

#define LEAK_START int64_t live0_ = wk_live_tensors()
#define LEAK_END ck_assert_int_eq(wk_live_tensors(), live0_)

/* ---- cat ---------------------------------------------------------------------------- */

START_TEST(test_index_cat_random) {
  LEAK_START;
  for (int seed = 1; seed <= 14; seed++) {
    rseed(seed);
    int nd = 1 + seed % 4;
    int64_t base[WK_MAX_DIMS];
    for (int i = 0; i < nd; i++) base[i] = ri(1, 4);
    wk_dtype dt = ALL[seed % NALL];
    for (int dd = -nd; dd < nd; dd++) {
      int d = dd < 0 ? dd + nd : dd;
      int n = (int)ri(1, 5);
      wk_tensor *ts[5];
      double *vals[5];
      int64_t szs[5][WK_MAX_DIMS], off[6] = {0};
      for (int k = 0; k < n; k++) {
        memcpy(szs[k], base, sizeof base);
        szs[k][d] = ri(0, 4);
        ts[k] = variant(rnd(szs[k], nd, dt, (uint64_t)(seed * 100 + k)), k + seed);
        vals[k] = tu_values(ts[k]);
        off[k + 1] = off[k] + szs[k][d];
      }
      wk_tensor *r = wk_cat(ts, n, dd);
      int64_t osz[WK_MAX_DIMS];
      memcpy(osz, base, sizeof base);
      osz[d] = off[n];
      CHECK_SHAPE(r, osz, nd);
      ck_assert_int_eq(wk_tensor_dtype(r), dt);
      int64_t on = prod(osz, nd), co[WK_MAX_DIMS];
      double *ref = malloc(sizeof(double) * (size_t)(on ? on : 1));
      for (int64_t l = 0; l < on; l++) {
        unravel(l, osz, nd, co);
        int k = 0;
        while (co[d] >= off[k + 1]) k++;
        co[d] -= off[k];
        ref[l] = vals[k][ravel(co, szs[k], nd)];
      }
      TU_CLOSE(r, ref, on, 0, 0);
      free(ref);
      wk_release(r);
      for (int k = 0; k < n; k++) {
        wk_release(ts[k]);
        free(vals[k]);
      }
    }
  }
  LEAK_END;
}
END_TEST

START_TEST(test_index_cat_every_dtype) {
  LEAK_START;
  for (int i = 0; i < NALL; i++) {
    wk_tensor *a = rnd(WK_SHAPE(2, 3), ALL[i], 7), *b = variant(rnd(WK_SHAPE(2, 2), ALL[i], 8), 1);
    wk_tensor *list[2] = {a, b};
    wk_tensor *r = wk_cat(list, 2, 1);
    CHECK_SHAPE(r, ((int64_t[]){2, 5}), 2);
    ck_assert_int_eq(wk_tensor_dtype(r), ALL[i]);
    double *va = tu_values(a), *vb = tu_values(b), ref[10];
    for (int row = 0; row < 2; row++) {
      for (int c = 0; c < 3; c++) ref[row * 5 + c] = va[row * 3 + c];
      for (int c = 0; c < 2; c++) ref[row * 5 + 3 + c] = vb[row * 2 + c];
    }
    TU_CLOSE(r, ref, 10, 0, 0);
    free(va);
    free(vb);
    wk_release(a);
    wk_release(b);
    wk_release(r);
  }
  LEAK_END;
}
END_TEST

START_TEST(test_index_cat_promotion) {
  LEAK_START;
  static const struct {
    wk_dtype a, b, want;
  } cases[] = {{WK_I32, WK_F32, WK_F32}, {WK_BOOL, WK_U8, WK_U8},  {WK_F16, WK_BF16, WK_F32},
               {WK_I8, WK_U8, WK_I16},   {WK_I64, WK_F16, WK_F16}, {WK_BOOL, WK_BOOL, WK_BOOL},
               {WK_I16, WK_I32, WK_I32}, {WK_F64, WK_F32, WK_F64}, {WK_BOOL, WK_F64, WK_F64}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    wk_tensor *a = TU_T(cases[i].a, (3), 1, 0, 3), *b = TU_T(cases[i].b, (2), 1, 1);
    wk_tensor *list[3] = {a, b, a};
    wk_tensor *r = wk_cat(list, 3, 0);
    TU_NOTNULL(r);
    ck_assert_msg(wk_tensor_dtype(r) == cases[i].want, "case %zu: got %s", i, wk_dtype_name(wk_tensor_dtype(r)));
    double va[3], vb[2];
    wk_tensor_to_f64(a, va, 3);
    wk_tensor_to_f64(b, vb, 2);
    double ref[8] = {va[0], va[1], va[2], vb[0], vb[1], va[0], va[1], va[2]};
    TU_CLOSE(r, ref, 8, 0, 0);
    wk_release(a);
    wk_release(b);
    wk_release(r);
  }
  LEAK_END;
}
END_TEST

START_TEST(test_index_cat_empty) {
  LEAK_START;
  /* legacy [0] tensors are skipped for shapes but still promote */
  int64_t z = 0;
  wk_tensor *e = wk_empty(&z, 1, (wk_options){.dtype = WK_F64});
  wk_tensor *a = TU_T(WK_I32, (2, 3), 1, 2, 3, 4, 5, 6), *b = TU_T(WK_I32, (2, 1), 7, 8);
  wk_tensor *l1[4] = {e, a, e, b};
  wk_tensor *r = wk_cat(l1, 4, 1);
  CHECK_SHAPE(r, ((int64_t[]){2, 4}), 2);
  ck_assert_int_eq(wk_tensor_dtype(r), WK_F64);
  TU_EQ_VALS(r, 1, 2, 3, 7, 4, 5, 6, 8);
  wk_release(r);
  /* dim is wrapped against the first non-skipped tensor */
  r = wk_cat(l1, 4, -1);
  CHECK_SHAPE(r, ((int64_t[]){2, 4}), 2);
  wk_release(r);
  /* only legacy empties: a [0] result */
  wk_tensor *l2[2] = {e, e};
  r = wk_cat(l2, 2, 0);
  CHECK_SHAPE(r, ((int64_t[]){0}), 1);
  wk_release(r);
  /* zero-size along and off the cat dim */
  wk_tensor *z1 = wk_empty(WK_SHAPE(2, 0), (wk_options){.dtype = WK_I32});
  wk_tensor *l3[3] = {z1, a, z1};
  r = wk_cat(l3, 3, 1);
  CHECK_SHAPE(r, ((int64_t[]){2, 3}), 2);
  TU_EQ_VALS(r, 1, 2, 3, 4, 5, 6);
  wk_release(r);
  wk_tensor *z2 = wk_empty(WK_SHAPE(0, 3), (wk_options){.dtype = WK_F32});
  wk_tensor *l4[2] = {z2, z2};
  r = wk_cat(l4, 2, 0);
  CHECK_SHAPE(r, ((int64_t[]){0, 3}), 2);
  wk_release(r);
  r = wk_cat(l4, 2, 1);
  CHECK_SHAPE(r, ((int64_t[]){0, 6}), 2);
  wk_release(r);
  wk_release(e);
  wk_release(a);
  wk_release(b);
  wk_release(z1);
  wk_release(z2);
  LEAK_END;
}
END_TEST

START_TEST(test_index_cat_errors) {
  LEAK_START;
  wk_tensor *a = rnd(WK_SHAPE(2, 4), WK_F32, 1), *b = rnd(WK_SHAPE(3, 5), WK_F32, 2);
  wk_tensor *c = rnd(WK_SHAPE(2, 2, 2), WK_F32, 3), *s = wk_scalar_tensor(1, WK_F32);
  ck_assert_ptr_null(wk_cat(NULL, 0, 0));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "expected a non-empty list of Tensors");
  wk_tensor *l1[2] = {a, b};
  ck_assert_ptr_null(wk_cat(l1, 2, 1));
  TU_FAILS_WITH(WK_ERR_SHAPE,
                "Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 for tensor number 1 "
                "in the list.");
  wk_tensor *l2[2] = {a, c};
  ck_assert_ptr_null(wk_cat(l2, 2, 0));
  TU_FAILS_WITH(WK_ERR_SHAPE, "Tensors must have same number of dimensions: got 2 and 3");
  wk_tensor *l3[2] = {a, s};
  ck_assert_ptr_null(wk_cat(l3, 2, 0));
  TU_FAILS_WITH(WK_ERR_SHAPE, "zero-dimensional tensor (at position 1) cannot be concatenated");
  wk_tensor *l4[2] = {a, a};
  ck_assert_ptr_null(wk_cat(l4, 2, 2));
  TU_FAILS_WITH(WK_ERR_INDEX, "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  ck_assert_ptr_null(wk_cat(l4, 2, -3));
  TU_FAILS_WITH(WK_ERR_INDEX, "Dimension out of range");
  wk_tensor *l5[2] = {a, NULL};
  ck_assert_ptr_null(wk_cat(l5, 2, 0));
  TU_FAILS_WITH(WK_ERR_NULL, "element 1");
  wk_release(a);
  wk_release(b);
  wk_release(c);
  wk_release(s);
  LEAK_END;
}
END_TEST

/* ---- stack / split / chunk (core composites over cat and narrow) ---------------------- */

START_TEST(test_index_stack) {
  LEAK_START;
  for (int seed = 1; seed <= 8; seed++) {
    rseed(seed);
    int nd = seed % 4;
    int64_t sz[WK_MAX_DIMS];
    for (int i = 0; i < nd; i++) sz[i] = ri(0, 4);
    wk_dtype dt = ALL[(seed * 3) % NALL];
    for (int dd = -(nd + 1); dd <= nd; dd++) {
      int d = dd < 0 ? dd + nd + 1 : dd;
      int n = (int)ri(1, 4);
      wk_tensor *ts[4];
      double *vals[4];
      for (int k = 0; k < n; k++) {
        ts[k] = variant(rnd(sz, nd, dt, (uint64_t)(seed * 10 + k)), k);
        vals[k] = tu_values(ts[k]);
      }
      wk_tensor *r = wk_stack(ts, n, dd);
      int64_t osz[WK_MAX_DIMS + 1];
      for (int i = 0, j = 0; i <= nd; i++) osz[i] = i == d ? n : sz[j++];
      CHECK_SHAPE(r, osz, nd + 1);
      ck_assert_int_eq(wk_tensor_dtype(r), dt);
      int64_t on = prod(osz, nd + 1), co[WK_MAX_DIMS + 1], ic[WK_MAX_DIMS];
      double *ref = malloc(sizeof(double) * (size_t)(on ? on : 1));
      for (int64_t l = 0; l < on; l++) {
        unravel(l, osz, nd + 1, co);
        for (int i = 0, j = 0; i <= nd; i++)
          if (i != d) ic[j++] = co[i];
        ref[l] = vals[co[d]][ravel(ic, sz, nd)];
      }
      TU_CLOSE(r, ref, on, 0, 0);
      free(ref);
      wk_release(r);
      for (int k = 0; k < n; k++) {
        wk_release(ts[k]);
        free(vals[k]);
      }
    }
  }
  /* mixed dtypes promote like cat */
  wk_tensor *a = TU_T(WK_I32, (2), 1, 2), *b = TU_T(WK_F32, (2), 0.5, 1.5);
  wk_tensor *l[2] = {a, b};
  wk_tensor *r = wk_stack(l, 2, 1);
  ck_assert_int_eq(wk_tensor_dtype(r), WK_F32);
  TU_EQ_VALS(r, 1, 0.5, 2, 1.5);
  wk_release(r);
  /* errors */
  wk_tensor *c = TU_T(WK_I32, (3), 1, 2, 3);
  wk_tensor *l2[2] = {a, c};
  ck_assert_ptr_null(wk_stack(l2, 2, 0));
  TU_FAILS_WITH(WK_ERR_SHAPE, "expects each tensor to be equal size, but got [2] at entry 0 and [3] at entry 1");
  ck_assert_ptr_null(wk_stack(NULL, 0, 0));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "non-empty TensorList");
  ck_assert_ptr_null(wk_stack(l, 2, 3));
  TU_FAILS_WITH(WK_ERR_INDEX, "out of range");
  wk_release(a);
  wk_release(b);
  wk_release(c);
  LEAK_END;
}
END_TEST

START_TEST(test_index_split_chunk) {
  LEAK_START;
  wk_tensor *x = rnd(WK_SHAPE(7, 4), WK_F64, 3);
  double *v = tu_values(x);
  wk_tensor *parts[8];
  /* split(3) along 0: 3, 3, 1 */
  int n = wk_split(x, 3, 0, parts, 8);
  ck_assert_int_eq(n, 3);
  int64_t want0[3] = {3, 3, 1}, start = 0;
  for (int i = 0; i < n; i++) {
    CHECK_SHAPE(parts[i], ((int64_t[]){want0[i], 4}), 2);
    ck_assert(wk_tensor_same_storage(parts[i], x));
    TU_CLOSE(parts[i], v + start * 4, want0[i] * 4, 0, 0);
    start += want0[i];
    wk_release(parts[i]);
  }
  /* split(3) along -1: 3, 1 */
  n = wk_split(x, 3, -1, parts, 8);
  ck_assert_int_eq(n, 2);
  CHECK_SHAPE(parts[0], ((int64_t[]){7, 3}), 2);
  CHECK_SHAPE(parts[1], ((int64_t[]){7, 1}), 2);
  double ref[28];
  for (int r = 0; r < 7; r++) ref[r] = v[r * 4 + 3];
  TU_CLOSE(parts[1], ref, 7, 0, 0);
  wk_release(parts[0]);
  wk_release(parts[1]);
  /* chunk(3) of 7 rows: 3, 3, 1; chunk(4) of 4 cols: 1 each */
  n = wk_chunk(x, 3, 0, parts, 8);
  ck_assert_int_eq(n, 3);
  for (int i = 0; i < n; i++) {
    ck_assert_int_eq(wk_tensor_size(parts[i], 0), want0[i]);
    wk_release(parts[i]);
  }
  n = wk_chunk(x, 4, 1, parts, 8);
  ck_assert_int_eq(n, 4);
  for (int i = 0; i < n; i++) {
    for (int r = 0; r < 7; r++) ref[r] = v[r * 4 + i];
    TU_CLOSE(parts[i], ref, 7, 0, 0);
    wk_release(parts[i]);
  }
  /* chunk(5) of 4 columns: 1 each (4 chunks, as in PyTorch) */
  n = wk_chunk(x, 5, 1, parts, 8);
  ck_assert_int_eq(n, 4);
  for (int i = 0; i < n; i++) wk_release(parts[i]);
  /* split_with_sizes [2, 0, 5] */
  int64_t ss[3] = {2, 0, 5};
  wk_value a[3] = {WK_VT(x), WK_VINTS(ss, 3), WK_VI(0)}, o[1];
  TU_OK(wk_call("split_with_sizes", a, 3, o));
  ck_assert_int_eq(o[0].len, 3);
  for (int i = 0; i < 3; i++) {
    ck_assert_int_eq(wk_tensor_size(o[0].u.tensors[i], 0), ss[i]);
    wk_release(o[0].u.tensors[i]);
  }
  wk_free((void *)o[0].u.tensors);
  /* split of a non-contiguous tensor keeps values */
  wk_tensor *t = nc_trans(x);
  n = wk_split(t, 2, 1, parts, 8);
  ck_assert_int_eq(n, 2);
  for (int r = 0; r < 7; r++) ref[r * 2] = v[r * 4 + 2], ref[r * 2 + 1] = v[r * 4 + 3];
  TU_CLOSE(parts[1], ref, 14, 0, 0);
  wk_release(parts[0]);
  wk_release(parts[1]);
  wk_release(t);
  /* errors */
  int64_t bad[2] = {3, 3};
  wk_value a2[3] = {WK_VT(x), WK_VINTS(bad, 2), WK_VI(0)};
  ck_assert_int_ne(wk_call("split_with_sizes", a2, 3, o), WK_OK);
  TU_FAILS_WITH(WK_ERR_SHAPE, "split sizes sum to 6");
  ck_assert_int_eq(wk_chunk(x, 0, 0, parts, 8), -1);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "chunks must be greater than 0");
  ck_assert_int_eq(wk_split(x, 2, 2, parts, 8), -1);
  TU_FAILS_WITH(WK_ERR_INDEX, "out of range");
  free(v);
  wk_release(x);
  LEAK_END;
}
END_TEST

/* ---- index_select -------------------------------------------------------------------- */

START_TEST(test_index_index_select_random) {
  LEAK_START;
  for (int seed = 1; seed <= 20; seed++) {
    rseed(seed);
    int nd = 1 + seed % 4;
    int64_t sz[WK_MAX_DIMS];
    for (int i = 0; i < nd; i++) sz[i] = ri(1, 5);
    wk_dtype dt = ALL[seed % NALL];
    wk_tensor *x = variant(rnd(sz, nd, dt, (uint64_t)seed), seed);
    double *xv = tu_values(x);
    for (int dd = -nd; dd < nd; dd++) {
      int d = dd < 0 ? dd + nd : dd;
      int64_t n = ri(0, 7), iv[8];
      for (int64_t i = 0; i < n; i++) iv[i] = ri(0, sz[d]);
      wk_tensor *idx = variant(itensor(iv, &n, 1, (dd & 1) ? WK_I32 : WK_I64), dd + nd);
      wk_tensor *r = wk_index_select(x, dd, idx);
      int64_t osz[WK_MAX_DIMS];
      memcpy(osz, sz, sizeof sz);
      osz[d] = n;
      CHECK_SHAPE(r, osz, nd);
      ck_assert_int_eq(wk_tensor_dtype(r), dt);
      int64_t on = prod(osz, nd), co[WK_MAX_DIMS];
      double *ref = malloc(sizeof(double) * (size_t)(on ? on : 1));
      for (int64_t l = 0; l < on; l++) {
        unravel(l, osz, nd, co);
        co[d] = iv[co[d]];
        ref[l] = xv[ravel(co, sz, nd)];
      }
      TU_CLOSE(r, ref, on, 0, 0);
      free(ref);
      wk_release(r);
      wk_release(idx);
    }
    free(xv);
    wk_release(x);
  }
  LEAK_END;
}
END_TEST

START_TEST(test_index_index_select_special) {
  LEAK_START;
  wk_tensor *x = TU_T(WK_F32, (2, 3), 1, 2, 3, 4, 5, 6);
  /* 0-dim index keeps the dim with size 1 */
  wk_tensor *i0 = wk_scalar_tensor(2, WK_I64);
  wk_tensor *r = wk_index_select(x, 1, i0);
  CHECK_SHAPE(r, ((int64_t[]){2, 1}), 2);
  TU_EQ_VALS(r, 3, 6);
  wk_release(r);
  /* 0-dim self */
  wk_tensor *s = wk_scalar_tensor(7.5, WK_F64), *i1 = TU_T(WK_I64, (1), 0);
  r = wk_index_select(s, 0, i1);
  CHECK_SHAPE(r, ((int64_t[]){0}), 0);
  TU_EQ_VALS(r, 7.5);
  wk_release(r);
  wk_tensor *i32s = wk_scalar_tensor(0, WK_I32);
  r = wk_index_select(s, -1, i32s);
  TU_EQ_VALS(r, 7.5);
  wk_release(r);
  wk_release(i32s);
  /* zero-size self with an empty index, and repeated indices */
  wk_tensor *z = wk_empty(WK_SHAPE(0, 3), (wk_options){.dtype = WK_I16});
  int64_t zero = 0;
  wk_tensor *ie = wk_empty(&zero, 1, (wk_options){.dtype = WK_I64});
  r = wk_index_select(z, 0, ie);
  CHECK_SHAPE(r, ((int64_t[]){0, 3}), 2);
  wk_release(r);
  wk_tensor *i22 = TU_T(WK_I64, (2), 2, 2);
  r = wk_index_select(z, 1, i22);
  CHECK_SHAPE(r, ((int64_t[]){0, 2}), 2);
  wk_release(r);
  wk_release(i22);
  wk_tensor *rep = TU_T(WK_I64, (4), 1, 1, 0, 1);
  r = wk_index_select(x, 0, rep);
  TU_EQ_VALS(r, 4, 5, 6, 4, 5, 6, 1, 2, 3, 4, 5, 6);
  wk_release(r);
  wk_release(x);
  wk_release(s);
  wk_release(i0);
  wk_release(i1);
  wk_release(z);
  wk_release(ie);
  wk_release(rep);
  LEAK_END;
}
END_TEST

START_TEST(test_index_index_select_errors) {
  LEAK_START;
  wk_tensor *x = rnd(WK_SHAPE(3, 4), WK_F32, 1);
  wk_tensor *oob = TU_T(WK_I64, (2), 0, 5), *neg = TU_T(WK_I64, (1), -1);
  wk_tensor *fidx = TU_T(WK_F32, (1), 0), *i2d = TU_T(WK_I64, (1, 2), 0, 1);
  wk_tensor *s = wk_scalar_tensor(1, WK_F32), *two = TU_T(WK_I64, (2), 0, 0);
  ck_assert_ptr_null(wk_index_select(x, 0, oob));
  TU_FAILS_WITH(WK_ERR_INDEX, "index 5 is out of bounds for dimension 0 with size 3");
  ck_assert_ptr_null(wk_index_select(x, 0, neg));
  TU_FAILS_WITH(WK_ERR_INDEX, "index -1 is out of bounds for dimension 0 with size 3");
  ck_assert_ptr_null(wk_index_select(x, 1, fidx));
  TU_FAILS_WITH(WK_ERR_DTYPE, "Expected dtype int32 or int64 for index");
  ck_assert_ptr_null(wk_index_select(x, 1, i2d));
  TU_FAILS_WITH(WK_ERR_INDEX, "Index is supposed to be a vector");
  ck_assert_ptr_null(wk_index_select(x, 2, two));
  TU_FAILS_WITH(WK_ERR_INDEX, "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  ck_assert_ptr_null(wk_index_select(s, 0, two));
  TU_FAILS_WITH(WK_ERR_INDEX, "Index to scalar can have only 1 value, got 2 value(s)");
  ck_assert_ptr_null(wk_index_select(x, 0, NULL));
  TU_FAILS_WITH(WK_ERR_NULL, "index");
  ck_assert_ptr_null(wk_index_select(NULL, 0, two));
  TU_FAILS_WITH(WK_ERR_NULL, "self");
  wk_release(x);
  wk_release(oob);
  wk_release(neg);
  wk_release(fidx);
  wk_release(i2d);
  wk_release(s);
  wk_release(two);
  LEAK_END;
}
END_TEST

/* ---- gather ------------------------------------------------------------------------------ */

/* A random index shape for gather/scatter along d: index.size(e) <= lim[e] for
 * e != d, and 0..4 along d; values in [0, size_d). */
static wk_tensor *rand_index(const int64_t *lim, int nd, int d, int64_t size_d, int64_t *isz, int64_t **vals) {
  for (int e = 0; e < nd; e++) isz[e] = e == d ? ri(0, 5) : ri(lim[e] > 0 ? 1 : 0, lim[e] + 1);
  int64_t n = prod(isz, nd);
  *vals = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  for (int64_t i = 0; i < n; i++) (*vals)[i] = ri(0, size_d);
  return itensor(*vals, isz, nd, WK_I64);
}

START_TEST(test_index_gather_random) {
  LEAK_START;
  for (int seed = 1; seed <= 20; seed++) {
    rseed(seed);
    int nd = 1 + seed % 4;
    int64_t sz[WK_MAX_DIMS];
    for (int i = 0; i < nd; i++) sz[i] = ri(1, 5);
    wk_dtype dt = ALL[seed % NALL];
    wk_tensor *x = variant(rnd(sz, nd, dt, (uint64_t)seed), seed);
    double *xv = tu_values(x);
    for (int dd = -nd; dd < nd; dd++) {
      int d = dd < 0 ? dd + nd : dd;
      int64_t isz[WK_MAX_DIMS], *iv;
      wk_tensor *idx = variant(rand_index(sz, nd, d, sz[d], isz, &iv), dd + nd);
      wk_tensor *r = wk_gather(x, dd, idx);
      CHECK_SHAPE(r, isz, nd);
      ck_assert_int_eq(wk_tensor_dtype(r), dt);
      int64_t on = prod(isz, nd), co[WK_MAX_DIMS];
      double *ref = malloc(sizeof(double) * (size_t)(on ? on : 1));
      for (int64_t l = 0; l < on; l++) {
        unravel(l, isz, nd, co);
        co[d] = iv[l];
        ref[l] = xv[ravel(co, sz, nd)];
      }
      TU_CLOSE(r, ref, on, 0, 0);
      free(ref);
      free(iv);
      wk_release(r);
      wk_release(idx);
    }
    free(xv);
    wk_release(x);
  }
  LEAK_END;
}
END_TEST

START_TEST(test_index_gather_special) {
  LEAK_START;
  /* the classic example */
  wk_tensor *x = TU_T(WK_I64, (2, 2), 1, 2, 3, 4), *i = TU_T(WK_I64, (2, 2), 0, 0, 1, 0);
  wk_tensor *r = wk_gather(x, 1, i);
  TU_EQ_VALS(r, 1, 1, 4, 3);
  wk_release(r);
  r = wk_gather(x, 0, i);
  TU_EQ_VALS(r, 1, 2, 3, 2);
  wk_release(r);
  /* 0-dim self and index */
  wk_tensor *s = wk_scalar_tensor(2.5, WK_BF16), *i0 = wk_scalar_tensor(0, WK_I64);
  r = wk_gather(s, 0, i0);
  CHECK_SHAPE(r, ((int64_t[]){0}), 0);
  ck_assert_int_eq(wk_tensor_dtype(r), WK_BF16);
  TU_EQ_VALS(r, 2.5);
  wk_release(r);
  /* an empty index gives an empty result, whatever its dtype */
  wk_tensor *ie = wk_empty(WK_SHAPE(2, 0), (wk_options){.dtype = WK_I32});
  r = wk_gather(x, 1, ie);
  CHECK_SHAPE(r, ((int64_t[]){2, 0}), 2);
  wk_release(r);
  wk_release(x);
  wk_release(i);
  wk_release(s);
  wk_release(i0);
  wk_release(ie);
  LEAK_END;
}
END_TEST

START_TEST(test_index_gather_errors) {
  LEAK_START;
  wk_tensor *x = rnd(WK_SHAPE(3, 2), WK_F32, 1);
  wk_tensor *oob = TU_T(WK_I64, (1, 2), 0, 5), *neg = TU_T(WK_I64, (1, 1), -1);
  wk_tensor *i32 = TU_T(WK_I32, (1, 1), 0), *big = TU_T(WK_I64, (1, 3), 0, 0, 0);
  wk_tensor *i1d = TU_T(WK_I64, (1), 0);
  ck_assert_ptr_null(wk_gather(x, 0, oob));
  TU_FAILS_WITH(WK_ERR_INDEX, "index 5 is out of bounds for dimension 0 with size 3");
  ck_assert_ptr_null(wk_gather(x, 1, neg));
  TU_FAILS_WITH(WK_ERR_INDEX, "index -1 is out of bounds for dimension 1 with size 2");
  ck_assert_ptr_null(wk_gather(x, 0, i32));
  TU_FAILS_WITH(WK_ERR_DTYPE, "Expected dtype int64 for index");
  ck_assert_ptr_null(wk_gather(x, 0, big));
  TU_FAILS_WITH(WK_ERR_SHAPE, "Size does not match at dimension 1 expected index [1, 3] to be smaller than self [3, 2] apart for dimension 0");
  ck_assert_ptr_null(wk_gather(x, 0, i1d));
  TU_FAILS_WITH(WK_ERR_SHAPE, "Index tensor must have the same number of dimensions as input tensor");
  ck_assert_ptr_null(wk_gather(x, -3, i1d));
  TU_FAILS_WITH(WK_ERR_INDEX, "Dimension out of range");
  ck_assert_ptr_null(wk_gather(x, 0, NULL));
  TU_FAILS_WITH(WK_ERR_NULL, "index");
  wk_release(x);
  wk_release(oob);
  wk_release(neg);
  wk_release(i32);
  wk_release(big);
  wk_release(i1d);
  LEAK_END;
}
END_TEST

/* ---- scatter / scatter_add ------------------------------------------------------------ */

/* Reference: self with src written (add=false, later writes win) or added at
 * the indexed positions, walking the index in row-major order. */
static double *scatter_ref(const double *xv, const int64_t *sz, int nd, int d, const int64_t *iv, const int64_t *isz,
                           const double *sv, const int64_t *ssz, bool add, bool as_bool) {
  int64_t n = prod(sz, nd), in = prod(isz, nd), co[WK_MAX_DIMS];
  double *r = malloc(sizeof(double) * (size_t)(n ? n : 1));
  memcpy(r, xv, sizeof(double) * (size_t)n);
  for (int64_t l = 0; l < in; l++) {
    unravel(l, isz, nd, co);
    double v = sv[ravel(co, ssz, nd)];
    co[d] = iv[l];
    int64_t t = ravel(co, sz, nd);
    r[t] = add ? r[t] + v : v;
  }
  if (as_bool)
    for (int64_t i = 0; i < n; i++) r[i] = r[i] != 0;
  return r;
}

START_TEST(test_index_scatter_random) {
  LEAK_START;
  for (int seed = 1; seed <= 20; seed++) {
    rseed(seed);
    int nd = 1 + seed % 4;
    int64_t sz[WK_MAX_DIMS];
    for (int i = 0; i < nd; i++) sz[i] = ri(1, 5);
    for (int add = 0; add <= 1; add++) {
      for (int inplace = 0; inplace <= 1; inplace++) {
        wk_dtype dt = ALL[(seed + 3 * add + inplace) % NALL];
        for (int dd = -nd; dd < nd; dd++) {
          int d = dd < 0 ? dd + nd : dd;
          wk_tensor *x = variant(rnd(sz, nd, dt, (uint64_t)(seed * 7 + dd)), seed + dd);
          int64_t isz[WK_MAX_DIMS], ssz[WK_MAX_DIMS], *iv;
          wk_tensor *idx = variant(rand_index(sz, nd, d, sz[d], isz, &iv), dd + nd);
          for (int e = 0; e < nd; e++) ssz[e] = isz[e] + ri(0, 2);
          wk_tensor *src = variant(rnd(ssz, nd, dt, (uint64_t)(seed * 13 + dd)), seed + dd + 1);
          double *xv = tu_values(x), *sv = tu_values(src);
          double *ref = scatter_ref(xv, sz, nd, d, iv, isz, sv, ssz, add, dt == WK_BOOL);
          wk_tensor *r;
          uint64_t v0 = wk_tensor_version(x);
          if (inplace) {
            r = add ? wk_scatter_add_(x, dd, idx, src) : wk_scatter_(x, dd, idx, src);
            ck_assert_msg(r == x, "in-place scatter must return self: %s", wk_last_error_message());
            ck_assert_uint_gt(wk_tensor_version(x), v0);
          } else {
            r = add ? wk_scatter_add(x, dd, idx, src) : wk_scatter(x, dd, idx, src);
            ck_assert_uint_eq(wk_tensor_version(x), v0);
            TU_CLOSE(x, xv, prod(sz, nd), 0, 0); /* self untouched */
          }
          CHECK_SHAPE(r, sz, nd);
          ck_assert_int_eq(wk_tensor_dtype(r), dt);
          double tol = add ? tol_for(dt) : 0;
          TU_CLOSE(r, ref, prod(sz, nd), tol, tol);
          if (!inplace) wk_release(r);
          free(ref);
          free(xv);
          free(sv);
          free(iv);
          wk_release(x);
          wk_release(idx);
          wk_release(src);
        }
      }
    }
  }
  LEAK_END;
}
END_TEST

START_TEST(test_index_scatter_special) {
  LEAK_START;
  /* duplicates: scatter keeps the last write, scatter_add sums every one */
  wk_tensor *x = TU_T(WK_F32, (5), 0, 0, 0, 0, 0), *i = TU_T(WK_I64, (4), 1, 3, 1, 1);
  wk_tensor *src = TU_T(WK_F32, (5), 1, 2, 3, 4, 99);
  wk_tensor *r = wk_scatter(x, 0, i, src);
  TU_EQ_VALS(r, 0, 4, 0, 2, 0);
  wk_release(r);
  r = wk_scatter_add(x, 0, i, src);
  TU_EQ_VALS(r, 0, 8, 0, 2, 0);
  wk_release(r);
  /* f16 and bf16 accumulate without drifting from the float64 sum */
  wk_dtype halves[2] = {WK_F16, WK_BF16};
  for (int h = 0; h < 2; h++) {
    int64_t n = 64, zero1 = 1;
    int64_t *iv = calloc((size_t)n, sizeof(int64_t));
    wk_tensor *acc = tu_rand(&zero1, 1, halves[h], 0, 0, 1);
    wk_tensor *ii = itensor(iv, &n, 1, WK_I64), *sv = tu_rand(&n, 1, halves[h], 0, 1, 9);
    double *s = tu_values(sv), sum = 0;
    for (int k = 0; k < n; k++) sum += s[k];
    wk_tensor *y = wk_scatter_add_(acc, 0, ii, sv);
    ck_assert_ptr_eq(y, acc);
    TU_CLOSE(acc, &sum, 1, tol_for(halves[h]), 0);
    free(s);
    free(iv);
    wk_release(acc);
    wk_release(ii);
    wk_release(sv);
  }
  /* integers wrap like PyTorch's */
  wk_tensor *u = TU_T(WK_U8, (1), 250), *iu = TU_T(WK_I64, (2), 0, 0), *su = TU_T(WK_U8, (2), 5, 5);
  r = wk_scatter_add(u, 0, iu, su);
  TU_EQ_VALS(r, 4);
  wk_release(r);
  /* bool scatter_add is a logical or */
  wk_tensor *b = TU_T(WK_BOOL, (3), 0, 1, 0), *ib = TU_T(WK_I64, (3), 0, 0, 1);
  wk_tensor *sb = TU_T(WK_BOOL, (3), 1, 1, 0);
  r = wk_scatter_add(b, 0, ib, sb);
  TU_EQ_VALS(r, 1, 1, 0);
  wk_release(r);
  /* in place into a non-contiguous view writes through to its base */
  wk_tensor *base = TU_T(WK_I32, (2, 3), 1, 2, 3, 4, 5, 6);
  wk_tensor *col = wk_t(base); /* [3, 2] view */
  wk_tensor *ic = TU_T(WK_I64, (1, 2), 2, 0), *sc = TU_T(WK_I32, (1, 2), 70, 80);
  r = wk_scatter_(col, 0, ic, sc);
  ck_assert_ptr_eq(r, col);
  TU_EQ_VALS(base, 1, 2, 70, 80, 5, 6);
  /* src aliasing self is read before it is overwritten */
  wk_tensor *al = TU_T(WK_F64, (3), 1, 2, 3), *rev = TU_T(WK_I64, (3), 2, 1, 0);
  r = wk_scatter_(al, 0, rev, al);
  TU_EQ_VALS(al, 3, 2, 1);
  /* 0-dim and empty index */
  wk_tensor *s0 = wk_scalar_tensor(1, WK_I16), *i0 = wk_scalar_tensor(0, WK_I64), *v0 = wk_scalar_tensor(9, WK_I16);
  r = wk_scatter(s0, 0, i0, v0);
  CHECK_SHAPE(r, ((int64_t[]){0}), 0);
  TU_EQ_VALS(r, 9);
  wk_release(r);
  wk_tensor *ie = wk_empty(WK_SHAPE(0), (wk_options){.dtype = WK_I64});
  r = wk_scatter_add(x, 0, ie, src);
  TU_EQ_VALS(r, 0, 0, 0, 0, 0);
  wk_release(r);
  wk_tensor *objs[] = {x, i, src, u, iu, su, b, ib, sb, base, col, ic, sc, al, rev, s0, i0, v0, ie};
  for (size_t k = 0; k < sizeof objs / sizeof objs[0]; k++) wk_release(objs[k]);
  LEAK_END;
}
END_TEST

START_TEST(test_index_scatter_errors) {
  LEAK_START;
  wk_tensor *x = rnd(WK_SHAPE(3, 2), WK_F32, 1), *src = rnd(WK_SHAPE(2, 2), WK_F32, 2);
  wk_tensor *srcd = rnd(WK_SHAPE(2, 2), WK_F64, 2);
  wk_tensor *oob = TU_T(WK_I64, (1, 2), 0, 3), *neg = TU_T(WK_I64, (1, 1), -1);
  wk_tensor *i32 = TU_T(WK_I32, (1, 1), 0), *big = TU_T(WK_I64, (1, 3), 0, 0, 0);
  wk_tensor *tall = TU_T(WK_I64, (3, 1), 0, 0, 0), *i1d = TU_T(WK_I64, (1), 0);
  wk_tensor *ok = TU_T(WK_I64, (1, 1), 0);
  ck_assert_ptr_null(wk_scatter(x, 0, oob, src));
  TU_FAILS_WITH(WK_ERR_INDEX, "index 3 is out of bounds for dimension 0 with size 3");
  ck_assert_ptr_null(wk_scatter_add(x, 1, neg, src));
  TU_FAILS_WITH(WK_ERR_INDEX, "index -1 is out of bounds for dimension 1 with size 2");
  ck_assert_ptr_null(wk_scatter_(x, 0, i32, src));
  TU_FAILS_WITH(WK_ERR_DTYPE, "Expected dtype int64 for index");
  ck_assert_ptr_null(wk_scatter_add_(x, 0, ok, srcd));
  TU_FAILS_WITH(WK_ERR_DTYPE, "Expected self.dtype to be equal to src.dtype");
  ck_assert_ptr_null(wk_scatter(x, 0, big, src));
  TU_FAILS_WITH(WK_ERR_SHAPE, "Expected index [1, 3] to be smaller than self [3, 2] apart from dimension 0");
  ck_assert_ptr_null(wk_scatter(x, 0, tall, src));
  TU_FAILS_WITH(WK_ERR_SHAPE, "and to be smaller size than src [2, 2]");
  ck_assert_ptr_null(wk_scatter(x, 0, i1d, src));
  TU_FAILS_WITH(WK_ERR_SHAPE, "Index tensor must have the same number of dimensions");
  ck_assert_ptr_null(wk_scatter(x, 2, ok, src));
  TU_FAILS_WITH(WK_ERR_INDEX, "Dimension out of range");
  /* an in-place write into an expanded tensor is refused */
  wk_tensor *row = TU_T(WK_F32, (1, 2), 1, 2), *ex = wk_expand(row, WK_SHAPE(3, 2));
  ck_assert_ptr_null(wk_scatter_(ex, 0, ok, src));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "more than one element of the written-to tensor refers to a single memory location");
  ck_assert_ptr_null(wk_scatter(x, 0, ok, NULL));
  TU_FAILS_WITH(WK_ERR_NULL, "src");
  /* a failed in-place call leaves self as it was */
  double before[6], after[6];
  wk_tensor_to_f64(x, before, 6);
  ck_assert_ptr_null(wk_scatter_(x, 0, oob, src));
  wk_clear_error();
  wk_tensor_to_f64(x, after, 6);
  ck_assert(memcmp(before, after, sizeof before) == 0);
  wk_tensor *objs[] = {x, src, srcd, oob, neg, i32, big, tall, i1d, ok, row, ex};
  for (size_t k = 0; k < sizeof objs / sizeof objs[0]; k++) wk_release(objs[k]);
  LEAK_END;
}
END_TEST

/* ---- masked_fill / masked_select --------------------------------------------------------- */

/* A shape that broadcasts to sz: some dims set to 1, maybe fewer leading dims. */
static int bcast_shape(const int64_t *sz, int nd, int64_t *out) {
  int drop = (int)ri(0, nd + 1);
  for (int i = drop; i < nd; i++) out[i - drop] = ri(0, 3) == 0 ? 1 : sz[i];
  return nd - drop;
}

/* Broadcast shape of two shapes (assumed compatible). */
static int bshape(const int64_t *a, int na, const int64_t *b, int nb, int64_t *out) {
  int n = na > nb ? na : nb;
  for (int i = 0; i < n; i++) {
    int ia = i - (n - na), ib = i - (n - nb);
    int64_t x = ia >= 0 ? a[ia] : 1, y = ib >= 0 ? b[ib] : 1;
    out[i] = x == 1 ? y : x;
  }
  return n;
}

START_TEST(test_index_masked_fill_random) {
  LEAK_START;
  for (int seed = 1; seed <= 24; seed++) {
    rseed(seed);
    int nd = seed % 5;
    int64_t sz[WK_MAX_DIMS], msz[WK_MAX_DIMS], osz[WK_MAX_DIMS];
    for (int i = 0; i < nd; i++) sz[i] = ri(0, 4);
    wk_dtype dt = ALL[seed % NALL];
    bool inplace = seed % 2;
    bool self_small = !inplace && seed % 3 == 0; /* functional form broadcasts self too */
    int mnd;
    int64_t xsz[WK_MAX_DIMS];
    int xnd;
    if (self_small) {
      memcpy(msz, sz, sizeof sz);
      mnd = nd;
      xnd = bcast_shape(sz, nd, xsz);
    } else {
      memcpy(xsz, sz, sizeof sz);
      xnd = nd;
      mnd = bcast_shape(sz, nd, msz);
    }
    int ond = bshape(xsz, xnd, msz, mnd, osz);
    wk_tensor *x = variant(rnd(xsz, xnd, dt, (uint64_t)seed), seed);
    wk_tensor *m = variant(tu_rand(msz, mnd, WK_BOOL, 0, 2, (uint64_t)seed + 50), seed + 1);
    double value = dt == WK_BOOL ? 1 : dt == WK_U8 ? 77 : wk_dtype_is_floating(dt) ? -3.25 : -7;
    double *xv = tu_values(x), *mv = tu_values(m);
    int64_t on = prod(osz, ond), co[WK_MAX_DIMS];
    double *ref = malloc(sizeof(double) * (size_t)(on ? on : 1));
    for (int64_t l = 0; l < on; l++) {
      unravel(l, osz, ond, co);
      ref[l] = mv[bidx(co, ond, msz, mnd)] != 0 ? value : xv[bidx(co, ond, xsz, xnd)];
    }
    if (inplace) {
      uint64_t v0 = wk_tensor_version(x);
      wk_tensor *r = wk_masked_fill_(x, m, value);
      ck_assert_msg(r == x, "masked_fill_ must return self: %s", wk_last_error_message());
      ck_assert_uint_gt(wk_tensor_version(x), v0);
      TU_CLOSE(x, ref, on, 0, 0);
    } else {
      wk_tensor *r = wk_masked_fill(x, m, value);
      CHECK_SHAPE(r, osz, ond);
      ck_assert_int_eq(wk_tensor_dtype(r), dt);
      TU_CLOSE(r, ref, on, 0, 0);
      TU_CLOSE(x, xv, prod(xsz, xnd), 0, 0);
      wk_release(r);
    }
    free(ref);
    free(xv);
    free(mv);
    wk_release(x);
    wk_release(m);
  }
  LEAK_END;
}
END_TEST

START_TEST(test_index_masked_fill_values) {
  LEAK_START;
  wk_tensor *m = TU_T(WK_BOOL, (3), 1, 0, 1);
  /* the value converts to self's dtype: truncation for integers, nonzero for bool */
  wk_tensor *xi = TU_T(WK_I32, (3), 1, 2, 3), *xb = TU_T(WK_BOOL, (3), 0, 0, 0);
  wk_tensor *xh = TU_T(WK_F16, (3), 1, 2, 3);
  wk_tensor *r = wk_masked_fill(xi, m, 2.75);
  TU_EQ_VALS(r, 2, 2, 2);
  wk_release(r);
  r = wk_masked_fill(xb, m, 5);
  TU_EQ_VALS(r, 1, 0, 1);
  wk_release(r);
  r = wk_masked_fill(xh, m, -INFINITY);
  TU_EQ_VALS(r, -INFINITY, 2, -INFINITY);
  wk_release(r);
  /* a large integer value stays exact in int64 */
  wk_value a[3] = {WK_VT(NULL), WK_VT(m), WK_VI(9007199254740993LL)}, o[1];
  wk_tensor *x64 = TU_T(WK_I64, (3), 0, 0, 0);
  a[0] = WK_VT(x64);
  TU_OK(wk_call("masked_fill_.Scalar", a, 3, o));
  int64_t got;
  wk_tensor *first = wk_select(x64, 0, 0);
  TU_OK(wk_item_i64(first, &got));
  ck_assert(got == 9007199254740993LL);
  wk_release(first);
  /* 0-dim mask and 0-dim self */
  wk_tensor *m0 = TU_T(WK_BOOL, (1), 1), *s = wk_scalar_tensor(4, WK_F64);
  wk_tensor *mm = wk_squeeze(m0);
  r = wk_masked_fill(xi, mm, 9);
  TU_EQ_VALS(r, 9, 9, 9);
  wk_release(r);
  r = wk_masked_fill(s, mm, 1.5);
  CHECK_SHAPE(r, ((int64_t[]){0}), 0);
  TU_EQ_VALS(r, 1.5);
  wk_release(r);
  wk_tensor *objs[] = {m, xi, xb, xh, x64, m0, s, mm};
  for (size_t k = 0; k < sizeof objs / sizeof objs[0]; k++) wk_release(objs[k]);
  LEAK_END;
}
END_TEST

START_TEST(test_index_masked_fill_errors) {
  LEAK_START;
  wk_tensor *x = rnd(WK_SHAPE(2, 3), WK_F32, 1), *ml = TU_T(WK_I64, (3), 1, 0, 1);
  wk_tensor *mu = TU_T(WK_U8, (3), 1, 0, 1), *mb = tu_rand(WK_SHAPE(4, 2, 3), WK_BOOL, 0, 2, 3);
  wk_tensor *mbad = TU_T(WK_BOOL, (2), 1, 0);
  ck_assert_ptr_null(wk_masked_fill(x, ml, 1));
  TU_FAILS_WITH(WK_ERR_DTYPE, "masked_fill_ only supports boolean masks, but got mask with dtype long");
  ck_assert_ptr_null(wk_masked_fill_(x, mu, 1));
  TU_FAILS_WITH(WK_ERR_DTYPE, "masked_fill_ only supports boolean masks, but got mask with dtype byte");
  ck_assert_ptr_null(wk_masked_fill_(x, mb, 1));
  TU_FAILS_WITH(WK_ERR_SHAPE, "mask of shape [4, 2, 3] cannot be broadcast to self of shape [2, 3]");
  ck_assert_ptr_null(wk_masked_fill(x, mbad, 1));
  TU_FAILS_WITH(WK_ERR_SHAPE, "must match");
  wk_tensor *row = TU_T(WK_F32, (1, 3), 1, 2, 3), *ex = wk_expand(row, WK_SHAPE(2, 3));
  wk_tensor *m1 = TU_T(WK_BOOL, (3), 1, 0, 0);
  ck_assert_ptr_null(wk_masked_fill_(ex, m1, 0));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "more than one element of the written-to tensor");
  ck_assert_ptr_null(wk_masked_fill(x, NULL, 0));
  TU_FAILS_WITH(WK_ERR_NULL, "mask");
  /* masked_select */
  ck_assert_ptr_null(wk_masked_select(x, ml));
  TU_FAILS_WITH(WK_ERR_DTYPE, "expected BoolTensor for mask");
  ck_assert_ptr_null(wk_masked_select(x, mbad));
  TU_FAILS_WITH(WK_ERR_SHAPE, "must match");
  wk_tensor *objs[] = {x, ml, mu, mb, mbad, row, ex, m1};
  for (size_t k = 0; k < sizeof objs / sizeof objs[0]; k++) wk_release(objs[k]);
  LEAK_END;
}
END_TEST

START_TEST(test_index_masked_select_random) {
  LEAK_START;
  for (int seed = 1; seed <= 24; seed++) {
    rseed(seed);
    int nd = seed % 5;
    int64_t sz[WK_MAX_DIMS], xsz[WK_MAX_DIMS], msz[WK_MAX_DIMS], osz[WK_MAX_DIMS];
    for (int i = 0; i < nd; i++) sz[i] = ri(0, 4);
    int xnd, mnd;
    if (seed % 2) {
      memcpy(xsz, sz, sizeof sz);
      xnd = nd;
      mnd = bcast_shape(sz, nd, msz);
    } else {
      memcpy(msz, sz, sizeof sz);
      mnd = nd;
      xnd = bcast_shape(sz, nd, xsz);
    }
    int ond = bshape(xsz, xnd, msz, mnd, osz);
    wk_dtype dt = ALL[(seed * 7) % NALL];
    wk_tensor *x = variant(rnd(xsz, xnd, dt, (uint64_t)seed), seed);
    wk_tensor *m = variant(tu_rand(msz, mnd, WK_BOOL, 0, 2, (uint64_t)seed + 9), seed + 2);
    double *xv = tu_values(x), *mv = tu_values(m);
    int64_t on = prod(osz, ond), co[WK_MAX_DIMS], cnt = 0;
    double *ref = malloc(sizeof(double) * (size_t)(on ? on : 1));
    for (int64_t l = 0; l < on; l++) {
      unravel(l, osz, ond, co);
      if (mv[bidx(co, ond, msz, mnd)] != 0) ref[cnt++] = xv[bidx(co, ond, xsz, xnd)];
    }
    wk_tensor *r = wk_masked_select(x, m);
    CHECK_SHAPE(r, &cnt, 1);
    ck_assert_int_eq(wk_tensor_dtype(r), dt);
    TU_CLOSE(r, ref, cnt, 0, 0);
    wk_release(r);
    free(ref);
    free(xv);
    free(mv);
    wk_release(x);
    wk_release(m);
  }
  LEAK_END;
}
END_TEST

/* ---- repeat / flip / roll -------------------------------------------------------------- */

START_TEST(test_index_repeat_random) {
  LEAK_START;
  for (int seed = 1; seed <= 30; seed++) {
    rseed(seed);
    int nd = seed % 4, nr = nd + (int)ri(0, 3);
    int64_t sz[WK_MAX_DIMS], rep[WK_MAX_DIMS], psz[WK_MAX_DIMS], osz[WK_MAX_DIMS];
    for (int i = 0; i < nd; i++) sz[i] = ri(seed % 7 == 0 ? 0 : 1, 4);
    for (int i = 0; i < nr; i++) {
      rep[i] = ri(seed % 5 == 0 ? 0 : 1, 4);
      psz[i] = i < nr - nd ? 1 : sz[i - (nr - nd)];
      osz[i] = psz[i] * rep[i];
    }
    wk_dtype dt = ALL[seed % NALL];
    wk_tensor *x = variant(rnd(sz, nd, dt, (uint64_t)seed), seed);
    double *xv = tu_values(x);
    wk_tensor *r = wk_repeat(x, rep, nr);
    CHECK_SHAPE(r, osz, nr);
    ck_assert_int_eq(wk_tensor_dtype(r), dt);
    int64_t on = prod(osz, nr), co[WK_MAX_DIMS];
    double *ref = malloc(sizeof(double) * (size_t)(on ? on : 1));
    for (int64_t l = 0; l < on; l++) {
      unravel(l, osz, nr, co);
      for (int i = 0; i < nr; i++) co[i] %= psz[i];
      ref[l] = xv[ravel(co + (nr - nd), sz, nd)];
    }
    TU_CLOSE(r, ref, on, 0, 0);
    free(ref);
    free(xv);
    wk_release(r);
    wk_release(x);
  }
  wk_tensor *x = TU_T(WK_I64, (3), 1, 2, 3);
  wk_tensor *r = wk_repeat(x, (int64_t[]){2, 2}, 2);
  CHECK_SHAPE(r, ((int64_t[]){2, 6}), 2);
  TU_EQ_VALS(r, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3);
  wk_release(r);
  ck_assert_ptr_null(wk_repeat(x, NULL, 0));
  TU_FAILS_WITH(WK_ERR_SHAPE, "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
  ck_assert_ptr_null(wk_repeat(x, (int64_t[]){2, -1}, 2));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "negative dimension -1");
  wk_release(x);
  LEAK_END;
}
END_TEST

START_TEST(test_index_flip_random) {
  LEAK_START;
  for (int seed = 1; seed <= 30; seed++) {
    rseed(seed);
    int nd = seed % 5;
    int64_t sz[WK_MAX_DIMS], dims[WK_MAX_DIMS];
    for (int i = 0; i < nd; i++) sz[i] = ri(seed % 6 == 0 ? 0 : 1, 5);
    bool fl[WK_MAX_DIMS] = {false};
    int nf = 0;
    for (int i = 0; i < nd; i++)
      if (ri(0, 2)) {
        fl[i] = true;
        dims[nf++] = ri(0, 2) ? i : i - nd; /* negative dims too */
      }
    if (nd == 0 && seed % 2) dims[nf++] = -1; /* a 0-dim tensor flips over dim 0/-1 */
    wk_dtype dt = ALL[(seed * 3) % NALL];
    wk_tensor *x = variant(rnd(sz, nd, dt, (uint64_t)seed), seed);
    double *xv = tu_values(x);
    wk_tensor *r = wk_flip(x, dims, nf);
    CHECK_SHAPE(r, sz, nd);
    ck_assert_int_eq(wk_tensor_dtype(r), dt);
    int64_t on = prod(sz, nd), co[WK_MAX_DIMS];
    double *ref = malloc(sizeof(double) * (size_t)(on ? on : 1));
    for (int64_t l = 0; l < on; l++) {
      unravel(l, sz, nd, co);
      for (int i = 0; i < nd; i++)
        if (fl[i]) co[i] = sz[i] - 1 - co[i];
      ref[l] = xv[ravel(co, sz, nd)];
    }
    TU_CLOSE(r, ref, on, 0, 0);
    free(ref);
    free(xv);
    wk_release(r);
    wk_release(x);
  }
  wk_tensor *x = TU_T(WK_F32, (2, 3), 1, 2, 3, 4, 5, 6);
  wk_tensor *r = wk_flip(x, (int64_t[]){0, 1}, 2);
  TU_EQ_VALS(r, 6, 5, 4, 3, 2, 1);
  wk_release(r);
  ck_assert_ptr_null(wk_flip(x, (int64_t[]){1, -1}, 2));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "dim 1 appears multiple times in the list of dims");
  ck_assert_ptr_null(wk_flip(x, (int64_t[]){2}, 1));
  TU_FAILS_WITH(WK_ERR_INDEX, "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  wk_release(x);
  LEAK_END;
}
END_TEST

static wk_tensor *roll_call(wk_tensor *x, const int64_t *shifts, int ns, const int64_t *dims, int nd) {
  wk_value a[3] = {WK_VT(x), WK_VINTS(shifts, ns), WK_VINTS(dims, nd)}, o[1];
  if (wk_call("roll", a, 3, o) != WK_OK) return NULL;
  return o[0].u.t;
}

START_TEST(test_index_roll_random) {
  LEAK_START;
  for (int seed = 1; seed <= 30; seed++) {
    rseed(seed);
    int nd = 1 + seed % 4;
    int64_t sz[WK_MAX_DIMS], dims[8], shifts[8], total[WK_MAX_DIMS] = {0};
    for (int i = 0; i < nd; i++) sz[i] = ri(seed % 6 == 0 ? 0 : 1, 5);
    int n = (int)ri(1, 4);
    for (int k = 0; k < n; k++) { /* dims may repeat: each roll applies */
      int d = (int)ri(0, nd);
      dims[k] = ri(0, 2) ? d : d - nd;
      shifts[k] = ri(-9, 10);
      total[d] += shifts[k];
    }
    wk_dtype dt = ALL[(seed * 5) % NALL];
    wk_tensor *x = variant(rnd(sz, nd, dt, (uint64_t)seed), seed);
    double *xv = tu_values(x);
    wk_tensor *r = wk_roll(x, shifts, dims, n);
    CHECK_SHAPE(r, sz, nd);
    ck_assert_int_eq(wk_tensor_dtype(r), dt);
    int64_t on = prod(sz, nd), co[WK_MAX_DIMS];
    double *ref = malloc(sizeof(double) * (size_t)(on ? on : 1));
    for (int64_t l = 0; l < on; l++) {
      unravel(l, sz, nd, co);
      for (int i = 0; i < nd; i++) co[i] = (((co[i] - total[i]) % sz[i]) + sz[i]) % sz[i];
      ref[l] = xv[ravel(co, sz, nd)];
    }
    TU_CLOSE(r, ref, on, 0, 0);
    wk_release(r);
    /* no dims: roll the flattened tensor */
    r = roll_call(x, shifts, 1, NULL, 0);
    CHECK_SHAPE(r, sz, nd);
    for (int64_t l = 0; l < on; l++) ref[l] = xv[(((l - shifts[0]) % on) + on) % on];
    TU_CLOSE(r, ref, on, 0, 0);
    wk_release(r);
    free(ref);
    free(xv);
    wk_release(x);
  }
  wk_tensor *x = TU_T(WK_I64, (2, 3), 1, 2, 3, 4, 5, 6);
  wk_tensor *r = roll_call(x, (int64_t[]){1}, 1, NULL, 0);
  TU_EQ_VALS(r, 6, 1, 2, 3, 4, 5);
  wk_release(r);
  r = wk_roll(x, (int64_t[]){-1, 1}, (int64_t[]){1, 0}, 2);
  TU_EQ_VALS(r, 5, 6, 4, 2, 3, 1);
  wk_release(r);
  wk_tensor *s = wk_scalar_tensor(3, WK_F32);
  r = roll_call(s, (int64_t[]){5}, 1, NULL, 0);
  CHECK_SHAPE(r, ((int64_t[]){0}), 0);
  TU_EQ_VALS(r, 3);
  wk_release(r);
  r = wk_roll(s, (int64_t[]){2}, (int64_t[]){0}, 1);
  TU_EQ_VALS(r, 3);
  wk_release(r);
  ck_assert_ptr_null(roll_call(x, (int64_t[]){1, 2}, 2, (int64_t[]){0}, 1));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "shifts and dimensions must align. shifts: 2, dims:1");
  ck_assert_ptr_null(roll_call(x, NULL, 0, NULL, 0));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "`shifts` required");
  ck_assert_ptr_null(wk_roll(x, (int64_t[]){1}, (int64_t[]){2}, 1));
  TU_FAILS_WITH(WK_ERR_INDEX, "Dimension out of range");
  wk_release(x);
  wk_release(s);
  LEAK_END;
}
END_TEST

/* ---- sort / topk ------------------------------------------------------------------------ */

/* a comes before b in an ascending order where NaN is the largest value. */
static bool less_nan(double a, double b) {
  if (isnan(a)) return false;
  if (isnan(b)) return true;
  return a < b;
}

/* Stable insertion sort of one line: fills order[] with positions. */
static void ref_sort_line(const double *v, int64_t n, bool desc, int64_t *order) {
  for (int64_t i = 0; i < n; i++) {
    int64_t j = i;
    while (j > 0 && (desc ? less_nan(v[order[j - 1]], v[i]) : less_nan(v[i], v[order[j - 1]]))) {
      order[j] = order[j - 1];
      j--;
    }
    order[j] = i;
  }
}

/* Values of dtype dt with many ties (and NaN for floats). */
static wk_tensor *tie_values(const int64_t *sz, int nd, wk_dtype dt, uint64_t seed) {
  int64_t n = prod(sz, nd);
  double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
  uint64_t s = seed * 77 + 5;
  for (int64_t i = 0; i < n; i++) {
    double u = tu_uniform(&s);
    v[i] = dt == WK_BOOL ? (u > 0.5) : dt == WK_U8 ? floor(u * 6) : floor(u * 7) - 3;
    if (wk_dtype_is_floating(dt)) {
      if (u > 0.9) v[i] = NAN;
      else if (u < 0.05) v[i] = -INFINITY;
      else if (u > 0.5) v[i] += 0.5;
    }
  }
  wk_tensor *t = tu_tensor(v, dt, sz, nd);
  free(v);
  return t;
}

/* Checks (values, indices) of sorting x along d against the reference, keeping
 * the first k of each line. */
static void check_sorted(wk_tensor *x, int d, int64_t k, bool desc, wk_tensor *vals, wk_tensor *inds, int line) {
  int nd = wk_tensor_dim(x);
  int64_t sz[WK_MAX_DIMS], osz[WK_MAX_DIMS], co[WK_MAX_DIMS];
  for (int i = 0; i < nd; i++) sz[i] = osz[i] = wk_tensor_size(x, i);
  if (nd > 0) osz[d] = k;
  ck_assert_msg(vals && inds, "line %d: %s", line, wk_last_error_message());
  CHECK_SHAPE(vals, osz, nd);
  CHECK_SHAPE(inds, osz, nd);
  ck_assert_int_eq(wk_tensor_dtype(vals), wk_tensor_dtype(x));
  ck_assert_int_eq(wk_tensor_dtype(inds), WK_I64);
  double *xv = tu_values(x);
  int64_t on = prod(osz, nd), n = nd ? sz[d] : 1;
  double *rv = malloc(sizeof(double) * (size_t)(on ? on : 1)), *ri_ = malloc(sizeof(double) * (size_t)(on ? on : 1));
  double *lv = malloc(sizeof(double) * (size_t)(n ? n : 1));
  int64_t *order = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  /* one reference sort per line: lines are the positions with coordinate 0 on d */
  int64_t lsz[WK_MAX_DIMS];
  memcpy(lsz, sz, sizeof lsz);
  if (nd) lsz[d] = 1;
  int64_t lines = prod(lsz, nd);
  for (int64_t l = 0; l < lines && k > 0; l++) {
    unravel(l, lsz, nd, co);
    for (int64_t t = 0; t < n; t++) {
      if (nd) co[d] = t;
      lv[t] = xv[ravel(co, sz, nd)];
    }
    ref_sort_line(lv, n, desc, order);
    for (int64_t j = 0; j < k; j++) {
      if (nd) co[d] = j;
      int64_t o = ravel(co, osz, nd);
      rv[o] = lv[order[j]];
      ri_[o] = (double)order[j];
    }
  }
  tu_assert_close_(vals, rv, on, 0, 0, "values", line);
  tu_assert_close_(inds, ri_, on, 0, 0, "indices", line);
  free(xv);
  free(rv);
  free(ri_);
  free(lv);
  free(order);
}

START_TEST(test_index_sort_random) {
  LEAK_START;
  for (int seed = 1; seed <= 20; seed++) {
    rseed(seed);
    int nd = seed % 4;
    int64_t sz[WK_MAX_DIMS];
    for (int i = 0; i < nd; i++) sz[i] = ri(seed % 7 == 0 ? 0 : 1, 7);
    wk_dtype dt = ALL[seed % NALL];
    wk_tensor *x = variant(tie_values(sz, nd, dt, (uint64_t)seed), seed);
    int lo = nd ? -nd : -1, hi = nd ? nd : 1;
    for (int dd = lo; dd < hi; dd++) {
      int d = dd < 0 ? dd + (nd ? nd : 1) : dd;
      for (int desc = 0; desc <= 1; desc++) {
        wk_tensor *idx = NULL, *v = wk_sort(x, dd, desc, &idx);
        check_sorted(x, d, nd ? sz[d] : 1, desc, v, idx, __LINE__);
        wk_release(v);
        wk_release(idx);
      }
    }
    wk_release(x);
  }
  /* the default call sorts the last dim ascending */
  wk_tensor *x = TU_T(WK_F32, (2, 3), 3, NAN, 1, 2, -INFINITY, 2);
  wk_value a[1] = {WK_VT(x)}, o[2];
  TU_OK(wk_call("sort", a, 1, o));
  TU_EQ_VALS(o[0].u.t, 1, 3, NAN, -INFINITY, 2, 2);
  TU_EQ_VALS(o[1].u.t, 2, 0, 1, 1, 0, 2);
  wk_release(o[0].u.t);
  wk_release(o[1].u.t);
  wk_tensor *idx;
  wk_tensor *v = wk_sort(x, 1, true, &idx);
  TU_EQ_VALS(v, NAN, 3, 1, 2, 2, -INFINITY);
  TU_EQ_VALS(idx, 1, 0, 2, 0, 2, 1);
  wk_release(v);
  wk_release(idx);
  /* large int64 values compare exactly */
  int64_t big[3] = {INT64_MAX, INT64_MAX - 1, INT64_MIN};
  wk_tensor *b = wk_tensor_from_data(big, WK_I64, WK_SHAPE(3));
  v = wk_sort(b, 0, false, &idx);
  TU_EQ_VALS(idx, 2, 1, 0);
  int64_t got[3];
  memcpy(got, wk_tensor_data(v), sizeof got);
  ck_assert(got[0] == INT64_MIN && got[1] == INT64_MAX - 1 && got[2] == INT64_MAX);
  wk_release(v);
  wk_release(idx);
  ck_assert_ptr_null(wk_sort(x, 2, false, &idx));
  TU_FAILS_WITH(WK_ERR_INDEX, "Dimension out of range");
  ck_assert_ptr_null(idx);
  ck_assert_ptr_null(wk_sort(NULL, 0, false, &idx));
  TU_FAILS_WITH(WK_ERR_NULL, "self");
  wk_release(x);
  wk_release(b);
  LEAK_END;
}
END_TEST

START_TEST(test_index_topk_random) {
  LEAK_START;
  for (int seed = 1; seed <= 20; seed++) {
    rseed(seed);
    int nd = seed % 4;
    int64_t sz[WK_MAX_DIMS];
    for (int i = 0; i < nd; i++) sz[i] = ri(seed % 7 == 0 ? 0 : 1, 7);
    wk_dtype dt = ALL[seed % (NALL - 1)]; /* no bool: topk does not support it */
    wk_tensor *x = variant(tie_values(sz, nd, dt, (uint64_t)seed + 3), seed);
    int lo = nd ? -nd : -1, hi = nd ? nd : 1;
    for (int dd = lo; dd < hi; dd++) {
      int d = dd < 0 ? dd + (nd ? nd : 1) : dd;
      int64_t n = nd ? sz[d] : 1;
      for (int largest = 0; largest <= 1; largest++) {
        int64_t k = ri(0, n + 1);
        wk_tensor *idx = NULL, *v = wk_topk(x, k, dd, largest, true, &idx);
        check_sorted(x, d, nd ? k : 1, largest, v, idx, __LINE__);
        /* the indices point at the values, whatever the tie order */
        wk_tensor *g = nd ? wk_gather(x, d, idx) : NULL;
        if (g) {
          double *gv = tu_values(g);
          TU_CLOSE(v, gv, wk_tensor_numel(v), 0, 0);
          free(gv);
          wk_release(g);
        }
        wk_release(v);
        wk_release(idx);
      }
    }
    wk_release(x);
  }
  /* NaN is the largest value; sorted=False returns the same set */
  wk_tensor *x = TU_T(WK_F64, (5), 1, NAN, 5, -2, 4), *idx;
  wk_tensor *v = wk_topk(x, 2, 0, true, true, &idx);
  TU_EQ_VALS(v, NAN, 5);
  TU_EQ_VALS(idx, 1, 2);
  wk_release(v);
  wk_release(idx);
  v = wk_topk(x, 3, -1, false, false, &idx);
  double got[3];
  wk_tensor_to_f64(v, got, 3);
  double mn = fmin(got[0], fmin(got[1], got[2])), mx = fmax(got[0], fmax(got[1], got[2]));
  ck_assert(mn == -2 && mx == 4 && got[0] + got[1] + got[2] == 3);
  wk_release(v);
  wk_release(idx);
  /* errors */
  ck_assert_ptr_null(wk_topk(x, 6, 0, true, true, &idx));
  TU_FAILS_WITH(WK_ERR_INDEX, "selected index k out of range");
  ck_assert_ptr_null(wk_topk(x, -1, 0, true, true, &idx));
  TU_FAILS_WITH(WK_ERR_INDEX, "selected index k out of range");
  ck_assert_ptr_null(wk_topk(x, 1, 1, true, true, &idx));
  TU_FAILS_WITH(WK_ERR_INDEX, "Dimension out of range");
  wk_tensor *b = TU_T(WK_BOOL, (2), 1, 0);
  ck_assert_ptr_null(wk_topk(b, 1, 0, true, true, &idx));
  TU_FAILS_WITH(WK_ERR_DTYPE, "not implemented for 'Bool'");
  wk_release(x);
  wk_release(b);
  LEAK_END;
}
END_TEST

/* ---- one_hot ------------------------------------------------------------------------------ */

START_TEST(test_index_one_hot) {
  LEAK_START;
  for (int seed = 1; seed <= 12; seed++) {
    rseed(seed);
    int nd = seed % 4;
    int64_t sz[WK_MAX_DIMS + 1];
    for (int i = 0; i < nd; i++) sz[i] = ri(1, 4);
    int64_t n = prod(sz, nd), iv[64], mx = 0;
    for (int64_t i = 0; i < n; i++) {
      iv[i] = ri(0, 6);
      if (iv[i] > mx) mx = iv[i];
    }
    wk_tensor *x = variant(itensor(iv, sz, nd, WK_I64), seed);
    int64_t nc = seed % 2 ? -1 : 8, c = nc == -1 ? mx + 1 : nc;
    wk_tensor *r = wk_one_hot(x, nc);
    sz[nd] = c;
    CHECK_SHAPE(r, sz, nd + 1);
    ck_assert_int_eq(wk_tensor_dtype(r), WK_I64);
    double *ref = calloc((size_t)(n * c), sizeof(double));
    for (int64_t i = 0; i < n; i++) ref[i * c + iv[i]] = 1;
    TU_CLOSE(r, ref, n * c, 0, 0);
    free(ref);
    wk_release(r);
    wk_release(x);
  }
  wk_tensor *x = TU_T(WK_I64, (3), 0, 2, 1);
  wk_tensor *r = wk_one_hot(x, -1);
  TU_EQ_VALS(r, 1, 0, 0, 0, 0, 1, 0, 1, 0);
  wk_release(r);
  int64_t zero = 0;
  wk_tensor *e = wk_empty(&zero, 1, (wk_options){.dtype = WK_I64});
  r = wk_one_hot(e, 4);
  CHECK_SHAPE(r, ((int64_t[]){0, 4}), 2);
  wk_release(r);
  ck_assert_ptr_null(wk_one_hot(e, -1));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "Can not infer total number of classes from empty tensor.");
  ck_assert_ptr_null(wk_one_hot(x, 2));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "Class values must be smaller than num_classes.");
  wk_tensor *neg = TU_T(WK_I64, (2), 0, -1), *f = TU_T(WK_F32, (2), 0, 1), *i32 = TU_T(WK_I32, (2), 0, 1);
  ck_assert_ptr_null(wk_one_hot(neg, -1));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "Class values must be non-negative.");
  ck_assert_ptr_null(wk_one_hot(f, -1));
  TU_FAILS_WITH(WK_ERR_DTYPE, "one_hot is only applicable to index tensor");
  ck_assert_ptr_null(wk_one_hot(i32, 3));
  TU_FAILS_WITH(WK_ERR_DTYPE, "one_hot is only applicable to index tensor");
  wk_tensor *objs[] = {x, e, neg, f, i32};
  for (size_t k = 0; k < sizeof objs / sizeof objs[0]; k++) wk_release(objs[k]);
  LEAK_END;
}
END_TEST

/* ---- larger inputs run on the pool with the same results -------------------------------- */

START_TEST(test_index_large_parallel) {
  LEAK_START;
  int64_t sz[2] = {300, 257};
  wk_tensor *x = tu_rand(sz, 2, WK_F32, -1, 1, 5);
  wk_tensor *xt = nc_trans(x);
  double *xv = tu_values(x);
  /* flip over both dims */
  wk_tensor *r = wk_flip(xt, (int64_t[]){0, 1}, 2);
  int64_t n = sz[0] * sz[1];
  double *ref = malloc(sizeof(double) * (size_t)n);
  for (int64_t i = 0; i < n; i++) ref[i] = xv[n - 1 - i];
  TU_CLOSE(r, ref, n, 0, 0);
  wk_release(r);
  /* sort each row and check against a per-row reference */
  wk_tensor *idx, *v = wk_sort(xt, 1, false, &idx);
  check_sorted(x, 1, sz[1], false, v, idx, __LINE__);
  wk_release(v);
  wk_release(idx);
  /* scatter_add with many duplicates into 7 bins per row */
  int64_t *iv = malloc(sizeof(int64_t) * (size_t)n);
  rseed(3);
  for (int64_t i = 0; i < n; i++) iv[i] = ri(0, 7);
  wk_tensor *ii = itensor(iv, sz, 2, WK_I64);
  wk_tensor *acc = tu_rand(WK_SHAPE(300, 7), WK_F64, 0, 0, 1);
  wk_tensor *src = wk_to_dtype(x, WK_F64);
  r = wk_scatter_add(acc, 1, ii, src);
  double sums[300 * 7] = {0};
  for (int64_t i = 0; i < n; i++) sums[(i / sz[1]) * 7 + iv[i]] += xv[i];
  TU_CLOSE(r, sums, 300 * 7, 1e-12, 1e-12);
  wk_release(r);
  /* gather along 1 with the same index, and index_select of every row reversed */
  r = wk_gather(xt, 1, ii);
  for (int64_t i = 0; i < n; i++) ref[i] = xv[(i / sz[1]) * sz[1] + iv[i]];
  TU_CLOSE(r, ref, n, 0, 0);
  wk_release(r);
  int64_t rows[300];
  for (int i = 0; i < 300; i++) rows[i] = 299 - i;
  int64_t nrows = 300;
  wk_tensor *ir = itensor(rows, &nrows, 1, WK_I32);
  r = wk_index_select(xt, 0, ir);
  for (int64_t i = 0; i < n; i++) ref[i] = xv[(299 - i / sz[1]) * sz[1] + i % sz[1]];
  TU_CLOSE(r, ref, n, 0, 0);
  wk_release(r);
  /* cat of the tensor with itself, repeat, masked_fill and masked_select */
  wk_tensor *pair[2] = {xt, x};
  r = wk_cat(pair, 2, 1);
  double *cv = tu_values(r);
  for (int64_t i = 0; i < 2 * n; i++) ck_assert(cv[i] == xv[(i / (2 * sz[1])) * sz[1] + i % sz[1]]);
  free(cv);
  wk_release(r);
  r = wk_repeat(xt, (int64_t[]){2, 1}, 2);
  cv = tu_values(r);
  for (int64_t i = 0; i < 2 * n; i++) ck_assert(cv[i] == xv[i % n]);
  free(cv);
  wk_release(r);
  wk_tensor *m = tu_rand(sz, 2, WK_BOOL, 0, 2, 11);
  double *mv = tu_values(m);
  r = wk_masked_fill(xt, m, 7);
  for (int64_t i = 0; i < n; i++) ref[i] = mv[i] != 0 ? 7 : xv[i];
  TU_CLOSE(r, ref, n, 0, 0);
  wk_release(r);
  r = wk_masked_select(xt, m);
  int64_t cnt = 0;
  for (int64_t i = 0; i < n; i++)
    if (mv[i] != 0) ref[cnt++] = xv[i];
  CHECK_SHAPE(r, &cnt, 1);
  TU_CLOSE(r, ref, cnt, 0, 0);
  wk_release(r);
  free(mv);
  wk_release(m);
  wk_release(ir);
  free(iv);
  free(ref);
  free(xv);
  wk_tensor *objs[] = {x, xt, ii, acc, src};
  for (size_t k = 0; k < sizeof objs / sizeof objs[0]; k++) wk_release(objs[k]);
  LEAK_END;
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("check_ops_index");
  struct {
    const char *name;
    const TTest *tests[8];
  } groups[] = {
      {"cat", {test_index_cat_random, test_index_cat_every_dtype, test_index_cat_promotion, test_index_cat_empty,
               test_index_cat_errors}},
      {"stack_split", {test_index_stack, test_index_split_chunk}},
      {"index_select", {test_index_index_select_random, test_index_index_select_special, test_index_index_select_errors}},
      {"gather", {test_index_gather_random, test_index_gather_special, test_index_gather_errors}},
      {"scatter", {test_index_scatter_random, test_index_scatter_special, test_index_scatter_errors}},
      {"masked", {test_index_masked_fill_random, test_index_masked_fill_values, test_index_masked_fill_errors,
                  test_index_masked_select_random}},
      {"repeat_flip_roll", {test_index_repeat_random, test_index_flip_random, test_index_roll_random}},
      {"sort_topk", {test_index_sort_random, test_index_topk_random}},
      {"one_hot", {test_index_one_hot}},
      {"parallel", {test_index_large_parallel}},
  };
  for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
    TCase *tc = tcase_create(groups[g].name);
    tcase_add_checked_fixture(tc, tu_setup, NULL);
    for (int t = 0; t < 8 && groups[g].tests[t]; t++) tcase_add_test(tc, groups[g].tests[t]);
    suite_add_tcase(s, tc);
  }
  return s;
}
TU_MAIN(make_suite)
