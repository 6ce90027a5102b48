/* Check suite: meta functions of the factory and indexing/shape families.
 * Each case runs once on cpu and once on the meta device: both succeed with
 * equal result shapes and dtypes, or both fail with the same message. */
#include "testutil.h"

typedef wk_tensor *(*case_fn)(wk_device dev);

static wk_device cpu_dev(void) { return (wk_device){WK_DEVICE_CPU, 0}; }
static wk_device meta_dev(void) { return (wk_device){WK_DEVICE_META, 0}; }

static wk_tensor *Z(wk_device dev, wk_dtype dt, const int64_t *s, int n) {
  return wk_zeros(s, n, (wk_options){.dtype = dt, .device = dev});
}
#define ZT(dt, ...) Z(dev, dt, WK_SHAPE(__VA_ARGS__))
#define OPT(dt) ((wk_options){.dtype = dt, .device = dev})

static void same_on_meta(const char *what, case_fn f) {
  wk_scope_begin();
  wk_tensor *rc = f(cpu_dev());
  char cpu_msg[512] = "";
  if (!rc) snprintf(cpu_msg, sizeof cpu_msg, "%s", wk_last_error_message());
  wk_clear_error();
  wk_tensor *rm = f(meta_dev());
  if (!rc) {
    ck_assert_msg(rm == NULL, "%s: cpu failed (%s) but meta succeeded", what, cpu_msg);
    ck_assert_msg(strcmp(wk_last_error_message(), cpu_msg) == 0, "%s: cpu says '%s', meta says '%s'", what, cpu_msg,
                  wk_last_error_message());
    wk_clear_error();
  } else {
    ck_assert_msg(rm != NULL, "%s: meta failed: %s", what, wk_last_error_message());
    ck_assert_int_eq(wk_tensor_device(rm).type, WK_DEVICE_META);
    ck_assert_msg(wk_tensor_dtype(rm) == wk_tensor_dtype(rc), "%s: dtype", what);
    ck_assert_msg(wk_tensor_dim(rm) == wk_tensor_dim(rc), "%s: ndim %d vs %d", what, wk_tensor_dim(rm),
                  wk_tensor_dim(rc));
    for (int i = 0; i < wk_tensor_dim(rc); i++)
      ck_assert_msg(wk_tensor_size(rm, i) == wk_tensor_size(rc, i), "%s: size %d", what, i);
  }
  wk_scope_end();
}
#define SAME(f) same_on_meta(#f, f)

/* ---- factories ---- */
static wk_tensor *f_zeros(wk_device dev) { return ZT(WK_F32, 3, 4); }
static wk_tensor *f_ones_neg(wk_device dev) { return wk_ones(WK_SHAPE(3, -1), OPT(WK_I32)); }
static wk_tensor *f_full(wk_device dev) { return wk_full(WK_SHAPE(2, 2), 1.5, OPT(WK_F64)); }
static wk_tensor *f_full_overflow(wk_device dev) { return wk_full(WK_SHAPE(2), 300, OPT(WK_I8)); }
static wk_tensor *f_arange(wk_device dev) { return wk_arange(0, 10, 3, OPT(WK_F32)); }
static wk_tensor *f_arange_int(wk_device dev) { return wk_arange_int(10, 0, -3, OPT(WK_I64)); }
static wk_tensor *f_arange_sign(wk_device dev) { return wk_arange(0, 10, -1, OPT(WK_F32)); }
static wk_tensor *f_arange_zero(wk_device dev) { return wk_arange_int(0, 10, 0, OPT(WK_I64)); }
static wk_tensor *f_arange_bool(wk_device dev) { return wk_arange_int(0, 10, 1, OPT(WK_BOOL)); }
static wk_tensor *f_linspace(wk_device dev) { return wk_linspace(0, 1, 7, OPT(WK_F32)); }
static wk_tensor *f_linspace_neg(wk_device dev) { return wk_linspace(0, 1, -2, OPT(WK_F32)); }
static wk_tensor *f_eye(wk_device dev) { return wk_eye(3, 5, OPT(WK_F32)); }
static wk_tensor *f_eye_neg(wk_device dev) { return wk_eye(-1, -1, OPT(WK_F32)); }
static wk_tensor *f_zeros_like(wk_device dev) { return wk_zeros_like(ZT(WK_I16, 2, 0, 3), (wk_options){0}); }
static wk_tensor *f_fill(wk_device dev) { return wk_fill_(ZT(WK_I64, 4), 7); }
static wk_tensor *f_fill_overflow(wk_device dev) { return wk_fill_(ZT(WK_U8, 4), 1000); }
static wk_tensor *f_rand(wk_device dev) { return wk_rand(WK_SHAPE(5, 2), OPT(WK_F32)); }
static wk_tensor *f_rand_int(wk_device dev) { return wk_rand(WK_SHAPE(5, 2), OPT(WK_I32)); }
static wk_tensor *f_randn(wk_device dev) { return wk_randn(WK_SHAPE(4), OPT(WK_F64)); }
static wk_tensor *f_randint(wk_device dev) { return wk_randint(0, 10, WK_SHAPE(3, 3), OPT(WK_I64)); }
static wk_tensor *f_randint_bad(wk_device dev) { return wk_randint(5, 5, WK_SHAPE(3), OPT(WK_I64)); }
static wk_tensor *f_randint_bound(wk_device dev) { return wk_randint(0, 1000, WK_SHAPE(3), OPT(WK_I8)); }
static wk_tensor *f_randperm(wk_device dev) { return wk_randperm(9, OPT(WK_I64)); }
static wk_tensor *f_uniform(wk_device dev) { return wk_uniform_(ZT(WK_F32, 2, 3), -1, 1); }
static wk_tensor *f_uniform_bad(wk_device dev) { return wk_uniform_(ZT(WK_F32, 2, 3), 1, -1); }
static wk_tensor *f_uniform_int(wk_device dev) { return wk_uniform_(ZT(WK_I64, 2, 3), 0, 1); }
static wk_tensor *f_normal_bad(wk_device dev) { return wk_normal_(ZT(WK_F32, 2), 0, -1); }

START_TEST(test_meta_shape_factories) {
  SAME(f_zeros);
  SAME(f_ones_neg);
  SAME(f_full);
  SAME(f_full_overflow);
  SAME(f_arange);
  SAME(f_arange_int);
  SAME(f_arange_sign);
  SAME(f_arange_zero);
  SAME(f_arange_bool);
  SAME(f_linspace);
  SAME(f_linspace_neg);
  SAME(f_eye);
  SAME(f_eye_neg);
  SAME(f_zeros_like);
  SAME(f_fill);
  SAME(f_fill_overflow);
  SAME(f_rand);
  SAME(f_rand_int);
  SAME(f_randn);
  SAME(f_randint);
  SAME(f_randint_bad);
  SAME(f_randint_bound);
  SAME(f_randperm);
  SAME(f_uniform);
  SAME(f_uniform_bad);
  SAME(f_uniform_int);
  SAME(f_normal_bad);
}
END_TEST

START_TEST(test_meta_shape_factory_on_meta) {
  wk_scope_begin();
  wk_tensor *z = wk_zeros(WK_SHAPE(3, 4), (wk_options){.device = {WK_DEVICE_META, 0}});
  TU_NOTNULL(z);
  ck_assert_int_eq(wk_tensor_device(z).type, WK_DEVICE_META);
  ck_assert_ptr_null(wk_tensor_data(z));
  wk_tensor *a = wk_arange(0, 1, 0.25, (wk_options){.device = {WK_DEVICE_META, 0}});
  ck_assert_int_eq(wk_tensor_size(a, 0), 4);
  ck_assert_ptr_null(wk_arange(0, 10, -1, (wk_options){.device = {WK_DEVICE_META, 0}}));
  ck_assert_str_eq(wk_last_error_message(), "arange(): upper bound and larger bound inconsistent with step sign");
  wk_clear_error();
  wk_scope_end();
}
END_TEST

/* ---- indexing and shape ---- */
static wk_tensor *f_cat(wk_device dev) {
  wk_tensor *ts[3] = {ZT(WK_F32, 2, 3), ZT(WK_I64, 4, 3), ZT(WK_F32, 0)};
  return wk_cat(ts, 3, 0);
}
static wk_tensor *f_cat_bad(wk_device dev) {
  wk_tensor *ts[2] = {ZT(WK_F32, 2, 3), ZT(WK_F32, 2, 4)};
  return wk_cat(ts, 2, 0);
}
static wk_tensor *f_cat_dim(wk_device dev) {
  wk_tensor *ts[2] = {ZT(WK_F32, 2, 3), ZT(WK_F32, 2, 4)};
  return wk_cat(ts, 2, 2);
}
static wk_tensor *f_cat_scalar(wk_device dev) {
  wk_tensor *ts[2] = {ZT(WK_F32, 2), Z(dev, WK_F32, NULL, 0)};
  return wk_cat(ts, 2, 0);
}
static wk_tensor *f_stack(wk_device dev) {
  wk_tensor *ts[2] = {ZT(WK_F32, 2, 3), ZT(WK_F32, 2, 3)};
  return wk_stack(ts, 2, 1);
}
static wk_tensor *f_index_select(wk_device dev) { return wk_index_select(ZT(WK_F32, 4, 5), 1, ZT(WK_I64, 7)); }
static wk_tensor *f_index_select_2d(wk_device dev) { return wk_index_select(ZT(WK_F32, 4, 5), 1, ZT(WK_I64, 2, 2)); }
static wk_tensor *f_index_select_dt(wk_device dev) { return wk_index_select(ZT(WK_F32, 4, 5), 0, ZT(WK_F32, 2)); }
static wk_tensor *f_gather(wk_device dev) { return wk_gather(ZT(WK_F64, 4, 5), 1, ZT(WK_I64, 4, 9)); }
static wk_tensor *f_gather_rank(wk_device dev) { return wk_gather(ZT(WK_F64, 4, 5), 1, ZT(WK_I64, 4)); }
static wk_tensor *f_gather_size(wk_device dev) { return wk_gather(ZT(WK_F64, 4, 5), 1, ZT(WK_I64, 6, 2)); }
static wk_tensor *f_scatter(wk_device dev) { return wk_scatter(ZT(WK_F32, 4, 5), 0, ZT(WK_I64, 2, 5), ZT(WK_F32, 3, 5)); }
static wk_tensor *f_scatter_dt(wk_device dev) { return wk_scatter(ZT(WK_F32, 4, 5), 0, ZT(WK_I64, 2, 5), ZT(WK_F64, 3, 5)); }
static wk_tensor *f_scatter_add_(wk_device dev) {
  return wk_scatter_add_(ZT(WK_F32, 4, 5), 1, ZT(WK_I64, 4, 2), ZT(WK_F32, 4, 2));
}
static wk_tensor *f_scatter_add_size(wk_device dev) {
  return wk_scatter_add(ZT(WK_F32, 4, 5), 1, ZT(WK_I64, 4, 3), ZT(WK_F32, 4, 2));
}
static wk_tensor *f_scatter_idx_dt(wk_device dev) {
  return wk_scatter_(ZT(WK_F32, 4, 5), 1, ZT(WK_I32, 4, 2), ZT(WK_F32, 4, 2));
}
static wk_tensor *f_masked_fill(wk_device dev) { return wk_masked_fill(ZT(WK_F32, 3, 1), ZT(WK_BOOL, 4), 2.0); }
static wk_tensor *f_masked_fill_dt(wk_device dev) { return wk_masked_fill(ZT(WK_F32, 3), ZT(WK_U8, 3), 2.0); }
static wk_tensor *f_masked_fill_grow(wk_device dev) { return wk_masked_fill_(ZT(WK_F32, 3, 1), ZT(WK_BOOL, 4), 2.0); }
static wk_tensor *f_masked_fill_(wk_device dev) { return wk_masked_fill_(ZT(WK_F32, 3, 4), ZT(WK_BOOL, 4), 2.0); }
static wk_tensor *f_masked_select_dt(wk_device dev) { return wk_masked_select(ZT(WK_F32, 3), ZT(WK_I64, 3)); }
static wk_tensor *f_repeat(wk_device dev) { return wk_repeat(ZT(WK_I32, 2, 3), WK_SHAPE(2, 1, 3)); }
static wk_tensor *f_repeat_few(wk_device dev) { return wk_repeat(ZT(WK_I32, 2, 3), WK_SHAPE(2)); }
static wk_tensor *f_repeat_neg(wk_device dev) { return wk_repeat(ZT(WK_I32, 2, 3), WK_SHAPE(2, -1)); }
static wk_tensor *f_flip(wk_device dev) { return wk_flip(ZT(WK_F32, 2, 3, 4), WK_SHAPE(0, -1)); }
static wk_tensor *f_flip_dup(wk_device dev) { return wk_flip(ZT(WK_F32, 2, 3, 4), WK_SHAPE(1, -2)); }
static wk_tensor *f_roll(wk_device dev) {
  return wk_roll(ZT(WK_F32, 2, 3), (const int64_t[]){1, 2}, (const int64_t[]){0, 1}, 2);
}
static wk_tensor *f_roll_dim(wk_device dev) { return wk_roll(ZT(WK_F32, 2, 3), (const int64_t[]){1}, (const int64_t[]){3}, 1); }
static wk_tensor *f_one_hot(wk_device dev) { return wk_one_hot(ZT(WK_I64, 2, 3), 5); }
static wk_tensor *f_one_hot_dt(wk_device dev) { return wk_one_hot(ZT(WK_I32, 2, 3), 5); }
static wk_tensor *f_one_hot_empty(wk_device dev) { return wk_one_hot(ZT(WK_I64, 0), -1); }
static wk_tensor *f_clone(wk_device dev) { return wk_clone(ZT(WK_BF16, 2, 3)); }
static wk_tensor *f_to_dtype(wk_device dev) { return wk_to_dtype(ZT(WK_F32, 2, 3), WK_I64); }
static wk_tensor *f_contiguous(wk_device dev) { return wk_contiguous(wk_t(ZT(WK_F32, 2, 3))); }
static wk_tensor *f_copy(wk_device dev) { return wk_copy_(ZT(WK_F32, 2, 3), ZT(WK_I64, 3)); }
static wk_tensor *f_views(wk_device dev) {
  wk_tensor *x = ZT(WK_F32, 2, 3, 4);
  wk_tensor *v = wk_permute(wk_reshape(x, WK_SHAPE(6, 4)), WK_SHAPE(1, 0));
  return wk_alias(wk_as_strided(v, (const int64_t[]){2, 2}, (const int64_t[]){1, 4}, 2, 0));
}

START_TEST(test_meta_shape_index) {
  SAME(f_cat);
  SAME(f_cat_bad);
  SAME(f_cat_dim);
  SAME(f_cat_scalar);
  SAME(f_stack);
  SAME(f_index_select);
  SAME(f_index_select_2d);
  SAME(f_index_select_dt);
  SAME(f_gather);
  SAME(f_gather_rank);
  SAME(f_gather_size);
  SAME(f_scatter);
  SAME(f_scatter_dt);
  SAME(f_scatter_add_);
  SAME(f_scatter_add_size);
  SAME(f_scatter_idx_dt);
  SAME(f_masked_fill);
  SAME(f_masked_fill_dt);
  SAME(f_masked_fill_grow);
  SAME(f_masked_fill_);
  SAME(f_masked_select_dt);
  SAME(f_repeat);
  SAME(f_repeat_few);
  SAME(f_repeat_neg);
  SAME(f_flip);
  SAME(f_flip_dup);
  SAME(f_roll);
  SAME(f_roll_dim);
  SAME(f_one_hot);
  SAME(f_one_hot_dt);
  SAME(f_one_hot_empty);
  SAME(f_clone);
  SAME(f_to_dtype);
  SAME(f_contiguous);
  SAME(f_copy);
  SAME(f_views);
}
END_TEST

START_TEST(test_meta_shape_dynamic) {
  wk_scope_begin();
  wk_device dev = meta_dev();
  ck_assert_ptr_null(wk_masked_select(ZT(WK_F32, 3), ZT(WK_BOOL, 3)));
  ck_assert_ptr_nonnull(strstr(wk_last_error_message(), "depends on the data"));
  wk_clear_error();
  ck_assert_ptr_null(wk_one_hot(ZT(WK_I64, 3), -1));
  ck_assert_ptr_nonnull(strstr(wk_last_error_message(), "depends on the data"));
  wk_clear_error();
  wk_scope_end();
}
END_TEST

/* A ResNet-style feature path: cat of branches, flatten, a label one-hot. */
START_TEST(test_meta_shape_resnet) {
  wk_scope_begin();
  wk_device dev = meta_dev();
  wk_tensor *br[2] = {ZT(WK_F32, 8, 64, 56, 56), ZT(WK_F32, 8, 192, 56, 56)};
  wk_tensor *x = wk_cat(br, 2, 1);
  TU_NOTNULL(x);
  ck_assert_int_eq(wk_tensor_size(x, 1), 256);
  wk_tensor *f = wk_flatten(x, 1, -1);
  ck_assert_int_eq(wk_tensor_size(f, 1), 256 * 56 * 56);
  wk_tensor *y = wk_one_hot(ZT(WK_I64, 8), 10);
  ck_assert_int_eq(wk_tensor_size(y, 1), 10);
  wk_tensor *g = wk_gather(f, 1, ZT(WK_I64, 8, 3));
  ck_assert_int_eq(wk_tensor_size(g, 1), 3);
  wk_scope_end();
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("meta_shape");
  TCase *tc = tcase_create("meta_shape");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_test(tc, test_meta_shape_factories);
  tcase_add_test(tc, test_meta_shape_factory_on_meta);
  tcase_add_test(tc, test_meta_shape_index);
  tcase_add_test(tc, test_meta_shape_dynamic);
  tcase_add_test(tc, test_meta_shape_resnet);
  suite_add_tcase(s, tc);
  return s;
}
TU_MAIN(make_suite)
