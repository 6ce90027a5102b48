/* check_tensor: tensor handles: creation, metadata, element access, views
 * sharing storage and version counters, scopes, printing (against strings
 * PyTorch 1.13.1 printed for the same tensors) and DLPack. */
#include "testutil.h"

/* ---- creation and metadata ---- */
START_TEST(test_tensor_from_data) {
  wk_tensor *t = wk_tensor_from_data((float[]){1, 2, 3, 4, 5, 6}, WK_F32, WK_SHAPE(2, 3));
  TU_NOTNULL(t);
  ck_assert_int_eq(wk_tensor_dim(t), 2);
  ck_assert_int_eq(wk_tensor_size(t, 0), 2);
  ck_assert_int_eq(wk_tensor_size(t, -1), 3);
  ck_assert_int_eq(wk_tensor_size(t, 2), -1);
  ck_assert_int_eq(wk_tensor_stride(t, 0), 3);
  ck_assert_int_eq(wk_tensor_stride(t, 1), 1);
  ck_assert_int_eq(wk_tensor_numel(t), 6);
  ck_assert_int_eq(wk_tensor_dtype(t), WK_F32);
  ck_assert(wk_tensor_is_contiguous(t));
  ck_assert_int_eq(wk_tensor_device(t).type, WK_DEVICE_CPU);
  ck_assert_int_eq(((uintptr_t)wk_tensor_data(t)) % 64, 0);
  double v;
  TU_OK(wk_tensor_get(t, (int64_t[]){1, 2}, &v));
  ck_assert(v == 6);
  TU_OK(wk_tensor_set(t, (int64_t[]){0, 1}, 7.5));
  TU_EQ_VALS(t, 1, 7.5, 3, 4, 5, 6);
  wk_release(t);
}
END_TEST

START_TEST(test_tensor_every_dtype_roundtrip) {
  wk_dtype all[] = {WK_F32, WK_F64, WK_F16, WK_BF16, WK_I8, WK_U8, WK_I16, WK_I32, WK_I64, WK_BOOL};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    wk_tensor *t = TU_T(all[i], (4), 0, 1, 0, 1);
    TU_NOTNULL(t);
    ck_assert_int_eq(wk_tensor_dtype(t), all[i]);
    ck_assert_uint_eq(wk_tensor_storage_nbytes(t), 4 * wk_dtype_size(all[i]));
    TU_EQ_VALS(t, 0, 1, 0, 1);
    wk_release(t);
  }
  wk_tensor *h = TU_T(WK_F16, (3), 1.0009765625, 65504, 1e-8);
  TU_EQ_VALS(h, 1.0009765625, 65504, 0);
  wk_release(h);
}
END_TEST

START_TEST(test_tensor_bad_arguments) {
  ck_assert_ptr_null(wk_empty(WK_SHAPE(2, -1), (wk_options){0}));
  TU_FAILS_WITH(WK_ERR_SHAPE, "negative dimension -1");
  ck_assert_ptr_null(wk_empty(WK_SHAPE(2), (wk_options){.dtype = (wk_dtype)99}));
  TU_FAILS_WITH(WK_ERR_DTYPE, "unknown dtype 99");
  ck_assert_ptr_null(wk_empty(NULL, 2, (wk_options){0}));
  TU_FAILS_WITH(WK_ERR_NULL, "sizes");
  ck_assert_ptr_null(wk_empty_like(NULL, (wk_options){0}));
  TU_FAILS_WITH(WK_ERR_NULL, "empty_like");
  ck_assert_ptr_null(wk_tensor_from_data(NULL, WK_F32, WK_SHAPE(2)));
  TU_FAILS_WITH(WK_ERR_NULL, "data");
  ck_assert_ptr_null(wk_empty(WK_SHAPE(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1), (wk_options){0}));
  TU_FAILS_WITH(WK_ERR_SHAPE, "at most 16");
  wk_tensor *t = wk_zeros(WK_SHAPE(2, 2), (wk_options){0});
  double v;
  ck_assert_int_eq(wk_tensor_get(t, (int64_t[]){0, 2}, &v), WK_ERR_INDEX);
  TU_FAILS_WITH(WK_ERR_INDEX, "index 2 is out of bounds for dimension 1 with size 2");
  ck_assert_int_eq(wk_item(t, &v), WK_ERR_SHAPE);
  TU_FAILS_WITH(WK_ERR_SHAPE, "a Tensor with 4 elements cannot be converted to Scalar");
  ck_assert_int_eq(wk_item(NULL, &v), WK_ERR_NULL);
  wk_clear_error();
  ck_assert_int_eq(wk_tensor_to_f64(t, &v, 1), WK_ERR_INVALID_ARG);
  wk_clear_error();
  wk_tensor *ints = wk_zeros(WK_SHAPE(1), WK_OPTS(.dtype = WK_I64));
  ck_assert_int_eq(wk_tensor_set_requires_grad(ints, true), WK_ERR_DTYPE);
  TU_FAILS_WITH(WK_ERR_DTYPE, "only tensors of floating point dtype can require gradients");
  wk_release(ints);
  /* NULL accessors never crash */
  ck_assert_int_eq(wk_tensor_dim(NULL), 0);
  ck_assert_int_eq(wk_tensor_numel(NULL), 0);
  ck_assert_ptr_null(wk_tensor_data(NULL));
  wk_release(NULL);
  wk_release(t);
}
END_TEST

START_TEST(test_tensor_item_and_scalar) {
  wk_tensor *s = wk_scalar_tensor(2.5, WK_F64);
  double v;
  int64_t i;
  TU_OK(wk_item(s, &v));
  ck_assert(v == 2.5);
  ck_assert_int_eq(wk_tensor_dim(s), 0);
  wk_tensor *big = TU_T(WK_I64, (1), 0);
  TU_OK(wk_tensor_set(big, (int64_t[]){0}, 0));
  *(int64_t *)wk_tensor_data(big) = INT64_C(9007199254740993);
  TU_OK(wk_item_i64(big, &i));
  ck_assert(i == INT64_C(9007199254740993));
  wk_release(s);
  wk_release(big);
}
END_TEST

START_TEST(test_tensor_from_blob_deleter) {
  static int freed;
  freed = 0;
  float *buf = malloc(6 * sizeof(float));
  for (int k = 0; k < 6; k++) buf[k] = (float)k;
  void (*del)(void *) = free;
  wk_tensor *t = wk_tensor_from_blob(buf, WK_F32, wk_cpu(), (int64_t[]){2, 3}, (int64_t[]){1, 2}, 2, del, buf);
  TU_NOTNULL(t);
  TU_EQ_VALS(t, 0, 2, 4, 1, 3, 5);
  wk_tensor *v = wk_select(t, 0, 1);
  wk_release(t);
  TU_EQ_VALS(v, 1, 3, 5); /* the view keeps the blob alive */
  wk_release(v);
  (void)freed;
}
END_TEST

/* ---- views ---- */
START_TEST(test_tensor_views_share_storage_and_version) {
  wk_tensor *x = wk_tensor_from_data((float[]){0, 1, 2, 3, 4, 5}, WK_F32, WK_SHAPE(2, 3));
  wk_tensor *v = wk_view(x, WK_SHAPE(3, 2));
  wk_tensor *t = wk_t(x);
  ck_assert(wk_tensor_same_storage(x, v) && wk_tensor_same_storage(x, t));
  ck_assert(!wk_tensor_is_contiguous(t));
  uint64_t ver = wk_tensor_version(x);
  TU_OK(wk_tensor_set(v, (int64_t[]){2, 1}, 50));
  ck_assert_uint_eq(wk_tensor_version(x), ver + 1);
  ck_assert_uint_eq(wk_tensor_version(t), ver + 1);
  TU_EQ_VALS(t, 0, 3, 1, 4, 2, 50);
  wk_tensor *c = wk_contiguous(t);
  ck_assert(!wk_tensor_same_storage(c, t));
  ck_assert(wk_tensor_is_contiguous(c));
  TU_EQ_VALS(c, 0, 3, 1, 4, 2, 50);
  wk_tensor *c2 = wk_contiguous(x);
  ck_assert(wk_tensor_same_storage(c2, x));
  wk_release(x);
  wk_release(v);
  wk_release(t);
  wk_release(c);
  wk_release(c2);
}
END_TEST

/* Storage ids: shared by views, distinct per storage, never reused even when
 * the allocator hands back the same block. */
START_TEST(test_tensor_storage_ids) {
  wk_tensor *x = wk_zeros(WK_SHAPE(4), (wk_options){0}), *v = wk_view(x, WK_SHAPE(2, 2));
  uint64_t id = wk_tensor_storage_id(x);
  ck_assert_uint_ne(id, 0);
  ck_assert_uint_eq(wk_tensor_storage_id(v), id);
  ck_assert_uint_eq(wk_tensor_storage_id(NULL), 0);
  void *addr = wk_tensor_data(x);
  wk_release(v);
  wk_release(x);
  bool same_block = false;
  for (int i = 0; i < 8; i++) { /* the small-block cache usually returns the same memory */
    wk_tensor *y = wk_zeros(WK_SHAPE(4), (wk_options){0});
    same_block |= wk_tensor_data(y) == addr;
    ck_assert_uint_gt(wk_tensor_storage_id(y), id);
    wk_release(y);
  }
  ck_assert_msg(same_block, "expected the freed block to be reused (the case the id exists for)");
  float blob[2] = {1, 2};
  wk_tensor *b = wk_tensor_from_blob(blob, WK_F32, wk_cpu(), (int64_t[]){2}, NULL, 1, NULL, NULL);
  ck_assert_ptr_nonnull(b);
  ck_assert_uint_gt(wk_tensor_storage_id(b), id);
  wk_release(b);
}
END_TEST

START_TEST(test_tensor_view_shapes) {
  wk_tensor *x = wk_arange(0, 24, 1, (wk_options){0});
  TU_NOTNULL(x);
  wk_tensor *a = wk_view(x, WK_SHAPE(2, -1, 4));
  ck_assert_int_eq(wk_tensor_size(a, 1), 3);
  wk_tensor *p = wk_permute(a, WK_SHAPE(2, 0, 1));
  ck_assert_int_eq(wk_tensor_size(p, 0), 4);
  ck_assert_int_eq(wk_tensor_stride(p, 0), 1);
  ck_assert_int_eq(wk_tensor_stride(p, 2), 4);
  /* view of a permuted tensor that spans two subspaces fails, reshape copies */
  ck_assert_ptr_null(wk_view(p, WK_SHAPE(24)));
  TU_FAILS_WITH(WK_ERR_SHAPE, "view size is not compatible with input tensor's size and stride");
  wk_tensor *r = wk_reshape(p, WK_SHAPE(24));
  TU_NOTNULL(r);
  ck_assert(!wk_tensor_same_storage(r, x));
  double v;
  TU_OK(wk_tensor_get(r, (int64_t[]){1}, &v));
  ck_assert(v == 4);
  ck_assert_ptr_null(wk_view(x, WK_SHAPE(5, 5)));
  TU_FAILS_WITH(WK_ERR_SHAPE, "shape '[5, 5]' is invalid for input of size 24");
  ck_assert_ptr_null(wk_view(x, WK_SHAPE(-1, -1)));
  TU_FAILS_WITH(WK_ERR_SHAPE, "only one dimension can be inferred");
  /* slice, narrow, select */
  wk_tensor *s = wk_slice(a, 2, 1, 100, 2);
  ck_assert_int_eq(wk_tensor_size(s, 2), 2);
  TU_OK(wk_tensor_get(s, (int64_t[]){1, 2, 1}, &v));
  ck_assert(v == 23);
  wk_tensor *sn = wk_slice(a, -1, -3, -1, 1);
  ck_assert_int_eq(wk_tensor_size(sn, 2), 2);
  wk_tensor *n = wk_narrow(a, 1, 1, 2);
  ck_assert_int_eq(wk_tensor_size(n, 1), 2);
  ck_assert_ptr_null(wk_narrow(a, 1, 2, 2));
  TU_FAILS_WITH(WK_ERR_INDEX, "exceeds dimension size");
  wk_tensor *sel = wk_select(a, 1, -1);
  ck_assert_int_eq(wk_tensor_dim(sel), 2);
  TU_OK(wk_tensor_get(sel, (int64_t[]){0, 0}, &v));
  ck_assert(v == 8);
  ck_assert_ptr_null(wk_select(a, 1, 3));
  TU_FAILS_WITH(WK_ERR_INDEX, "index 3 out of range");
  ck_assert_ptr_null(wk_select(a, 3, 0));
  TU_FAILS_WITH(WK_ERR_INDEX, "dimension out of range (expected to be in range of [-3, 2], but got 3)");
  ck_assert_ptr_null(wk_slice(a, 0, 0, 1, 0));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "slice step must be positive");
  wk_release(x);
  wk_release(a);
  wk_release(p);
  wk_release(r);
  wk_release(s);
  wk_release(sn);
  wk_release(n);
  wk_release(sel);
}
END_TEST

START_TEST(test_tensor_expand_squeeze_flatten) {
  wk_tensor *x = wk_tensor_from_data((float[]){1, 2, 3}, WK_F32, WK_SHAPE(3, 1));
  wk_tensor *e = wk_expand(x, WK_SHAPE(2, 3, 4));
  TU_NOTNULL(e);
  ck_assert_int_eq(wk_tensor_stride(e, 0), 0);
  ck_assert_int_eq(wk_tensor_stride(e, 2), 0);
  wk_tensor *total = wk_sum(e);
  TU_EQ_VALS(total, 48);
  wk_release(total);
  wk_tensor *e2 = wk_expand(x, WK_SHAPE(-1, 5));
  ck_assert_int_eq(wk_tensor_size(e2, 1), 5);
  ck_assert_ptr_null(wk_expand(x, WK_SHAPE(4, 2)));
  TU_FAILS_WITH(WK_ERR_SHAPE, "must match the existing size (3) at non-singleton dimension 0");
  wk_tensor *u = wk_unsqueeze(x, 0), *u2 = wk_unsqueeze(x, -1);
  ck_assert_int_eq(wk_tensor_dim(u), 3);
  ck_assert_int_eq(wk_tensor_size(u, 0), 1);
  ck_assert_int_eq(wk_tensor_size(u2, 2), 1);
  wk_tensor *sq = wk_squeeze(u), *sq1 = wk_squeeze_dim(u, 1);
  ck_assert_int_eq(wk_tensor_dim(sq), 1);
  ck_assert_int_eq(wk_tensor_dim(sq1), 3); /* size 3 is not squeezed */
  wk_tensor *f = wk_flatten(e, 1, -1);
  ck_assert_int_eq(wk_tensor_size(f, 1), 12);
  wk_tensor *z = wk_scalar_tensor(5, WK_F32), *zf = wk_flatten(z, 0, -1);
  ck_assert_int_eq(wk_tensor_dim(zf), 1);
  wk_tensor *as = wk_as_strided(x, (int64_t[]){2, 2}, (int64_t[]){1, 1}, 2, 0);
  TU_EQ_VALS(as, 1, 2, 2, 3);
  ck_assert_ptr_null(wk_as_strided(x, (int64_t[]){2, 2}, (int64_t[]){2, 1}, 2, 0));
  TU_FAILS_WITH(WK_ERR_INDEX, "out of bounds for storage of 3 elements");
  wk_release(x);
  wk_release(e);
  wk_release(e2);
  wk_release(u);
  wk_release(u2);
  wk_release(sq);
  wk_release(sq1);
  wk_release(f);
  wk_release(z);
  wk_release(zf);
  wk_release(as);
}
END_TEST

START_TEST(test_tensor_split_chunk) {
  wk_tensor *x = wk_arange(0, 10, 1, (wk_options){0});
  wk_tensor *parts[8];
  int n = wk_split(x, 4, 0, parts, 8);
  ck_assert_int_eq(n, 3);
  ck_assert_int_eq(wk_tensor_numel(parts[2]), 2);
  TU_EQ_VALS(parts[1], 4, 5, 6, 7);
  for (int i = 0; i < n; i++) wk_release(parts[i]);
  n = wk_chunk(x, 3, 0, parts, 8);
  ck_assert_int_eq(n, 3);
  ck_assert_int_eq(wk_tensor_numel(parts[0]), 4);
  ck_assert(wk_tensor_same_storage(parts[0], x));
  for (int i = 0; i < n; i++) wk_release(parts[i]);
  ck_assert_int_eq(wk_chunk(x, 0, 0, parts, 8), -1);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "number of chunks must be greater than 0");
  wk_release(x);
}
END_TEST

/* ---- scopes ---- */
START_TEST(test_tensor_scope_releases_and_keeps) {
  int64_t live = wk_live_tensors();
  wk_scope_begin();
  wk_tensor *a = wk_ones(WK_SHAPE(3), (wk_options){0});
  wk_tensor *b = wk_add(a, a);
  wk_tensor *kept = wk_scope_keep(wk_mul(b, b));
  wk_scope_begin();
  wk_tensor *inner = wk_add(b, a);
  wk_tensor *esc = wk_scope_escape(wk_add(inner, a));
  wk_scope_end(); /* inner is released; esc moved to the outer scope */
  TU_EQ_VALS(esc, 4, 4, 4);
  wk_release(a); /* releasing a scope-owned tensor early is allowed */
  wk_scope_end();
  ck_assert_int_eq(wk_live_tensors(), live + 1);
  TU_EQ_VALS(kept, 4, 4, 4);
  wk_release(kept);
  ck_assert_int_eq(wk_live_tensors(), live);
  ck_assert_int_eq(wk_scope_end(), WK_ERR_STATE);
  TU_FAILS_WITH(WK_ERR_STATE, "no scope is open");
}
END_TEST

START_TEST(test_tensor_null_propagation) {
  wk_tensor *x = wk_ones(WK_SHAPE(2), (wk_options){0});
  wk_tensor *bad = wk_view(x, WK_SHAPE(3));
  ck_assert_ptr_null(bad);
  /* the first error is kept through the chain */
  ck_assert_ptr_null(wk_relu(wk_add(bad, x)));
  TU_FAILS_WITH(WK_ERR_SHAPE, "shape '[3]' is invalid for input of size 2");
  wk_release(x);
}
END_TEST

/* ---- printing: expected strings are what PyTorch 1.13.1 printed ---- */
static void expect_str(wk_tensor *t, const char *want) {
  char *s = wk_tensor_to_string(t);
  ck_assert_msg(s != NULL, "to_string failed: %s", wk_last_error_message());
  ck_assert_msg(strcmp(s, want) == 0, "got\n%s\nwant\n%s", s, want);
  wk_free(s);
  wk_release(t);
}

START_TEST(test_tensor_print_like_pytorch) {
  wk_scope_begin(); /* owns the temporaries of the nested calls below */
  expect_str(TU_T(WK_F32, (2, 2), 1, 2, 3, 4), "tensor([[1., 2.],\n        [3., 4.]])");
  expect_str(TU_T(WK_F32, (2), 0.1, 2.5), "tensor([0.1000, 2.5000])");
  expect_str(TU_T(WK_F32, (2), 1e-5, 1.0), "tensor([1.0000e-05, 1.0000e+00])");
  expect_str(TU_T(WK_I64, (3), 1, 2, 3), "tensor([1, 2, 3])");
  expect_str(TU_T(WK_I32, (3), 1, 2, 3), "tensor([1, 2, 3], dtype=torch.int32)");
  expect_str(TU_T(WK_BOOL, (2), 1, 0), "tensor([ True, False])");
  expect_str(TU_T(WK_F64, (2), 1.5, 2.0), "tensor([1.5000, 2.0000], dtype=torch.float64)");
  expect_str(wk_scalar_tensor(3, WK_F32), "tensor(3.)");
  expect_str(wk_scalar_tensor(3.5, WK_F32), "tensor(3.5000)");
  expect_str(wk_empty(WK_SHAPE(0), (wk_options){0}), "tensor([])");
  expect_str(wk_empty(WK_SHAPE(0, 3), (wk_options){0}), "tensor([], size=(0, 3))");
  expect_str(wk_empty(WK_SHAPE(0), WK_OPTS(.dtype = WK_I32)), "tensor([], dtype=torch.int32)");
  expect_str(TU_T(WK_F32, (3), NAN, INFINITY, 1.0), "tensor([nan, inf, 1.])");
  expect_str(TU_T(WK_F32, (2, 2), -1.5, 2.25, 100.125, -0.5),
             "tensor([[ -1.5000,   2.2500],\n        [100.1250,  -0.5000]])");
  expect_str(TU_T(WK_F16, (2), 1, 2), "tensor([1., 2.], dtype=torch.float16)");
  expect_str(TU_T(WK_U8, (2), 1, 255), "tensor([  1, 255], dtype=torch.uint8)");
  expect_str(TU_T(WK_F32, (2), 1e9, 1), "tensor([1.0000e+09, 1.0000e+00])");
  expect_str(wk_reshape(wk_arange(0, 8, 1, (wk_options){0}), WK_SHAPE(2, 2, 2)),
             "tensor([[[0., 1.],\n         [2., 3.]],\n\n        [[4., 5.],\n         [6., 7.]]])");
  expect_str(wk_div_scalar(wk_arange(0, 30, 1, (wk_options){0}), 7),
             "tensor([0.0000, 0.1429, 0.2857, 0.4286, 0.5714, 0.7143, 0.8571, 1.0000, 1.1429,\n"
             "        1.2857, 1.4286, 1.5714, 1.7143, 1.8571, 2.0000, 2.1429, 2.2857, 2.4286,\n"
             "        2.5714, 2.7143, 2.8571, 3.0000, 3.1429, 3.2857, 3.4286, 3.5714, 3.7143,\n"
             "        3.8571, 4.0000, 4.1429])");
  expect_str(wk_arange(0, 2000, 1, (wk_options){0}),
             "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n        1.9990e+03])");
  expect_str(wk_reshape(wk_arange(0, 2000, 1, (wk_options){0}), WK_SHAPE(40, 50)),
             "tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 4.7000e+01, 4.8000e+01,\n         4.9000e+01],\n"
             "        [5.0000e+01, 5.1000e+01, 5.2000e+01,  ..., 9.7000e+01, 9.8000e+01,\n         9.9000e+01],\n"
             "        [1.0000e+02, 1.0100e+02, 1.0200e+02,  ..., 1.4700e+02, 1.4800e+02,\n         1.4900e+02],\n"
             "        ...,\n"
             "        [1.8500e+03, 1.8510e+03, 1.8520e+03,  ..., 1.8970e+03, 1.8980e+03,\n         1.8990e+03],\n"
             "        [1.9000e+03, 1.9010e+03, 1.9020e+03,  ..., 1.9470e+03, 1.9480e+03,\n         1.9490e+03],\n"
             "        [1.9500e+03, 1.9510e+03, 1.9520e+03,  ..., 1.9970e+03, 1.9980e+03,\n         1.9990e+03]])");
  wk_tensor *rg = TU_T(WK_F32, (2), 1, 2);
  TU_OK(wk_tensor_set_requires_grad(rg, true));
  expect_str(rg, "tensor([1., 2.], requires_grad=True)");
  ck_assert_ptr_null(wk_tensor_to_string(NULL));
  wk_clear_error();
  ck_assert_int_eq(wk_print(NULL, NULL), WK_ERR_NULL);
  wk_clear_error();
  wk_scope_end();
}
END_TEST

/* ---- DLPack ---- */
static int g_dl_deleted;
static void dl_free(DLManagedTensor *m) {
  g_dl_deleted++;
  free(m->dl_tensor.data);
  free(m->dl_tensor.shape);
  free(m);
}

START_TEST(test_tensor_dlpack_roundtrip) {
  int64_t live = wk_live_tensors();
  wk_tensor *x = wk_tensor_from_data((double[]){1, 2, 3, 4, 5, 6}, WK_F64, WK_SHAPE(2, 3));
  wk_tensor *t = wk_t(x);
  DLManagedTensor *m = wk_to_dlpack(t);
  TU_NOTNULL(m);
  ck_assert_int_eq(m->dl_tensor.ndim, 2);
  ck_assert_int_eq(m->dl_tensor.dtype.code, kDLFloat);
  ck_assert_int_eq(m->dl_tensor.dtype.bits, 64);
  ck_assert_int_eq(m->dl_tensor.strides[0], 1);
  ck_assert_int_eq(m->dl_tensor.strides[1], 3);
  wk_release(x);
  wk_release(t); /* the export keeps the storage alive */
  wk_tensor *back = wk_from_dlpack(m);
  TU_NOTNULL(back);
  TU_EQ_VALS(back, 1, 4, 2, 5, 3, 6);
  wk_release(back); /* runs the export's deleter, which releases the storage */
  ck_assert_int_eq(wk_live_tensors(), live);

  /* a foreign tensor: our deleter must run exactly once */
  g_dl_deleted = 0;
  DLManagedTensor *f = calloc(1, sizeof *f);
  f->dl_tensor.data = malloc(4 * sizeof(int32_t));
  ((int32_t *)f->dl_tensor.data)[3] = 42;
  f->dl_tensor.shape = malloc(sizeof(int64_t));
  f->dl_tensor.shape[0] = 4;
  f->dl_tensor.ndim = 1;
  f->dl_tensor.device.device_type = kDLCPU;
  f->dl_tensor.dtype = (DLDataType){kDLInt, 32, 1};
  f->deleter = dl_free;
  wk_tensor *w = wk_from_dlpack(f);
  TU_NOTNULL(w);
  ck_assert_int_eq(wk_tensor_dtype(w), WK_I32);
  double v;
  TU_OK(wk_tensor_get(w, (int64_t[]){3}, &v));
  ck_assert(v == 42);
  ck_assert_int_eq(g_dl_deleted, 0);
  wk_release(w);
  ck_assert_int_eq(g_dl_deleted, 1);

  /* unsupported dtype: an error, and the producer's deleter still runs */
  DLManagedTensor *bad = calloc(1, sizeof *bad);
  bad->dl_tensor.data = malloc(8);
  bad->dl_tensor.shape = malloc(sizeof(int64_t));
  bad->dl_tensor.shape[0] = 1;
  bad->dl_tensor.ndim = 1;
  bad->dl_tensor.device.device_type = kDLCPU;
  bad->dl_tensor.dtype = (DLDataType){5 /* complex */, 64, 1};
  bad->deleter = dl_free;
  ck_assert_ptr_null(wk_from_dlpack(bad));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "unsupported DLPack dtype");
  ck_assert_int_eq(g_dl_deleted, 2);
  ck_assert_ptr_null(wk_from_dlpack(NULL));
  wk_clear_error();
  ck_assert_ptr_null(wk_to_dlpack(NULL));
  wk_clear_error();
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("tensor");
  struct {
    const char *name;
    const TTest *tests[8];
  } groups[] = {
      {"create", {test_tensor_from_data, test_tensor_every_dtype_roundtrip, test_tensor_bad_arguments,
                  test_tensor_item_and_scalar, test_tensor_from_blob_deleter}},
      {"views", {test_tensor_views_share_storage_and_version, test_tensor_storage_ids, test_tensor_view_shapes,
                 test_tensor_expand_squeeze_flatten, test_tensor_split_chunk}},
      {"scopes", {test_tensor_scope_releases_and_keeps, test_tensor_null_propagation}},
      {"print", {test_tensor_print_like_pytorch}},
      {"dlpack", {test_tensor_dlpack_roundtrip}},
  };
  for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
    TCase *tc = tcase_create(groups[g].name);
    tcase_add_checked_fixture(tc, tu_setup, NULL);
    for (int i = 0; i < 8 && groups[g].tests[i]; i++) tcase_add_test(tc, groups[g].tests[i]);
    suite_add_tcase(s, tc);
  }
  return s;
}
TU_MAIN(make_suite)
