/* check_state_dict: ordered name -> tensor maps with string metadata; large
 * dicts (65,536 tensors, 70,000 metadata entries) and their safetensors round
 * trip, timed (printed, not asserted). */
#include <time.h>
#include <wick/io.h>

#include "testutil.h"

#define BIG_N 65536  /* tensors: the safetensors loader's limit */
#define BIG_NM 70000 /* metadata entries */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A new 1-element i32 tensor holding v. */
static wk_tensor *scalar_i32(int v) {
  wk_tensor *t = wk_empty(WK_SHAPE(1), (wk_options){.dtype = WK_I32});
  if (t) *(int32_t *)wk_tensor_data(t) = v;
  return t;
}

static int value_i32(const wk_tensor *t) {
  return t ? *(const int32_t *)wk_tensor_data(t) : -1;
}

/* A dict of n tensors "layer.<i>.weight" -> i, in order. */
static wk_state_dict *big_dict(int n) {
  wk_state_dict *sd = wk_state_dict_new();
  char k[64];
  for (int i = 0; sd && i < n; i++) {
    wk_tensor *t = scalar_i32(i);
    snprintf(k, sizeof k, "layer.%d.weight", i);
    ck_assert_int_eq(wk_state_dict_set(sd, k, t), WK_OK);
    wk_release(t);
  }
  return sd;
}

START_TEST(test_state_dict_set_get_order) {
  wk_state_dict *sd = wk_state_dict_new();
  TU_NOTNULL(sd);
  wk_tensor *a = TU_T(WK_F32, (2), 1, 2), *b = TU_T(WK_I64, (1), 7), *c = TU_T(WK_F64, (1), 3);
  TU_OK(wk_state_dict_set(sd, "fc1.weight", a));
  TU_OK(wk_state_dict_set(sd, "fc1.bias", b));
  TU_OK(wk_state_dict_set(sd, "fc2.weight", c));
  ck_assert_int_eq(wk_state_dict_size(sd), 3);
  ck_assert_str_eq(wk_state_dict_key(sd, 1), "fc1.bias");
  ck_assert_ptr_eq(wk_state_dict_get(sd, "fc2.weight"), c);
  ck_assert_ptr_null(wk_state_dict_get(sd, "nope"));
  ck_assert_int_eq(wk_last_error(), WK_OK);    /* absent is not an error */
  TU_OK(wk_state_dict_set(sd, "fc1.bias", c)); /* replace keeps the position */
  ck_assert_str_eq(wk_state_dict_key(sd, 1), "fc1.bias");
  ck_assert_ptr_eq(wk_state_dict_value(sd, 1), c);
  TU_OK(wk_state_dict_remove(sd, "fc1.weight"));
  ck_assert_int_eq(wk_state_dict_size(sd), 2);
  ck_assert_str_eq(wk_state_dict_key(sd, 0), "fc1.bias");
  ck_assert_int_eq(wk_state_dict_remove(sd, "fc1.weight"), WK_ERR_NOT_FOUND);
  TU_FAILS_WITH(WK_ERR_NOT_FOUND, "no entry named 'fc1.weight'");
  ck_assert_ptr_null(wk_state_dict_key(sd, 5));
  ck_assert_ptr_null(wk_state_dict_value(sd, -1));
  wk_release(a);
  wk_release(b);
  wk_release(c);
  ck_assert_int_eq(wk_live_tensors(), 1); /* the dict holds its own references (c, twice) */
  wk_state_dict_free(sd);
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

START_TEST(test_state_dict_metadata_and_errors) {
  wk_state_dict *sd = wk_state_dict_new();
  TU_OK(wk_state_dict_set_meta(sd, "epoch", "3"));
  TU_OK(wk_state_dict_set_meta(sd, "lr", "0.1"));
  TU_OK(wk_state_dict_set_meta(sd, "epoch", "4"));
  ck_assert_str_eq(wk_state_dict_get_meta(sd, "epoch"), "4");
  ck_assert_int_eq(wk_state_dict_meta_size(sd), 2);
  ck_assert_str_eq(wk_state_dict_meta_key(sd, 1), "lr");
  ck_assert_str_eq(wk_state_dict_meta_value(sd, 1), "0.1");
  ck_assert_ptr_null(wk_state_dict_get_meta(sd, "none"));
  wk_tensor *t = TU_T(WK_F32, (1), 1);
  ck_assert_int_eq(wk_state_dict_set(sd, "", t), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "empty name");
  ck_assert_int_eq(wk_state_dict_set(sd, "x", NULL), WK_ERR_NULL);
  TU_FAILS_WITH(WK_ERR_NULL, "tensor");
  ck_assert_int_eq(wk_state_dict_set(NULL, "x", t), WK_ERR_NULL);
  wk_clear_error();
  ck_assert_int_eq(wk_state_dict_set_meta(sd, "k", NULL), WK_ERR_NULL);
  wk_clear_error();
  ck_assert_int_eq(wk_state_dict_size(NULL), 0);
  wk_state_dict_free(NULL);
  /* inside a scope the dict's references outlive the scope */
  wk_scope_begin();
  TU_OK(wk_state_dict_set(sd, "scoped", wk_ones(WK_SHAPE(2), (wk_options){0})));
  wk_scope_end();
  TU_EQ_VALS(wk_state_dict_get(sd, "scoped"), 1, 1);
  wk_release(t);
  wk_state_dict_free(sd);
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

START_TEST(test_state_dict_many_tensors) {
  char k[64];
  double t0 = now_s();
  wk_state_dict *sd = big_dict(BIG_N);
  double t1 = now_s();
  TU_NOTNULL(sd);
  ck_assert_int_eq(wk_state_dict_size(sd), BIG_N);
  for (int i = 0; i < BIG_N; i++) {
    snprintf(k, sizeof k, "layer.%d.weight", i);
    ck_assert_str_eq(wk_state_dict_key(sd, i), k);
    ck_assert_int_eq(value_i32(wk_state_dict_value(sd, i)), i);
    ck_assert_int_eq(value_i32(wk_state_dict_get(sd, k)), i);
  }
  ck_assert_ptr_null(wk_state_dict_get(sd, "layer.65536.weight"));
  ck_assert_ptr_null(wk_state_dict_get(sd, "layer.1.weigh"));
  double t2 = now_s();
  /* remove every eighth entry, front to back (each remove moves the later entries): the rest keep their order */
  for (int i = 0; i < BIG_N; i += 8) {
    snprintf(k, sizeof k, "layer.%d.weight", i);
    ck_assert_int_eq(wk_state_dict_remove(sd, k), WK_OK);
  }
  double t3 = now_s();
  int left = BIG_N - (BIG_N + 7) / 8;
  ck_assert_int_eq(wk_state_dict_size(sd), left);
  for (int i = 0, j = 0; i < BIG_N; i++) {
    snprintf(k, sizeof k, "layer.%d.weight", i);
    if (i % 8 == 0) {
      ck_assert_ptr_null(wk_state_dict_get(sd, k));
      continue;
    }
    ck_assert_str_eq(wk_state_dict_key(sd, j), k);
    ck_assert_int_eq(value_i32(wk_state_dict_get(sd, k)), i);
    j++;
  }
  ck_assert_int_eq(wk_state_dict_remove(sd, "layer.0.weight"), WK_ERR_NOT_FOUND);
  TU_FAILS_WITH(WK_ERR_NOT_FOUND, "no entry named 'layer.0.weight'");
  /* re-added names go to the end; replacing keeps the position */
  wk_tensor *a = scalar_i32(-5), *b = scalar_i32(-6);
  TU_OK(wk_state_dict_set(sd, "layer.0.weight", a));
  TU_OK(wk_state_dict_set(sd, "layer.1.weight", b));
  ck_assert_str_eq(wk_state_dict_key(sd, left), "layer.0.weight");
  ck_assert_str_eq(wk_state_dict_key(sd, 0), "layer.1.weight");
  ck_assert_int_eq(value_i32(wk_state_dict_value(sd, 0)), -6);
  ck_assert_int_eq(value_i32(wk_state_dict_get(sd, "layer.0.weight")), -5);
  ck_assert_int_eq(wk_state_dict_size(sd), left + 1);
  wk_release(a);
  wk_release(b);
  /* remove everything from the back, then refill: the index survives emptying */
  while (wk_state_dict_size(sd) > 0) TU_OK(wk_state_dict_remove(sd, wk_state_dict_key(sd, wk_state_dict_size(sd) - 1)));
  ck_assert_ptr_null(wk_state_dict_get(sd, "layer.2.weight"));
  a = scalar_i32(9);
  TU_OK(wk_state_dict_set(sd, "layer.2.weight", a));
  wk_release(a);
  ck_assert_int_eq(value_i32(wk_state_dict_get(sd, "layer.2.weight")), 9);
  wk_state_dict_free(sd);
  ck_assert_int_eq(wk_live_tensors(), 0);
  printf("state_dict: %d tensors: set %.3f s, key/get %.3f s, remove an eighth %.3f s\n", BIG_N, t1 - t0, t2 - t1,
         t3 - t2);
}
END_TEST

START_TEST(test_state_dict_many_metadata) {
  char k[64], v[64];
  wk_state_dict *sd = wk_state_dict_new();
  TU_NOTNULL(sd);
  double t0 = now_s();
  for (int i = 0; i < BIG_NM; i++) {
    snprintf(k, sizeof k, "key.%d", i);
    snprintf(v, sizeof v, "%d", i);
    TU_OK(wk_state_dict_set_meta(sd, k, v));
  }
  double t1 = now_s();
  ck_assert_int_eq(wk_state_dict_meta_size(sd), BIG_NM);
  for (int i = 0; i < BIG_NM; i++) {
    snprintf(k, sizeof k, "key.%d", i);
    snprintf(v, sizeof v, "%d", i);
    ck_assert_str_eq(wk_state_dict_meta_key(sd, i), k);
    ck_assert_str_eq(wk_state_dict_meta_value(sd, i), v);
    ck_assert_str_eq(wk_state_dict_get_meta(sd, k), v);
  }
  ck_assert_ptr_null(wk_state_dict_get_meta(sd, "key.70000"));
  TU_OK(wk_state_dict_set_meta(sd, "key.123", "replaced")); /* in place */
  ck_assert_str_eq(wk_state_dict_meta_value(sd, 123), "replaced");
  ck_assert_int_eq(wk_state_dict_meta_size(sd), BIG_NM);
  ck_assert_int_eq(wk_state_dict_size(sd), 0);
  ck_assert_ptr_null(wk_state_dict_get(sd, "key.1")); /* tensors and metadata are separate maps */
  wk_state_dict_free(sd);
  printf("state_dict: %d metadata entries: set %.3f s\n", BIG_NM, t1 - t0);
}
END_TEST

/* Random sets, replaces and removes over a small name space (long probe runs,
 * wrapping round the index) against a plain ordered list. */
START_TEST(test_state_dict_random_ops) {
  enum { NAMES = 300, OPS = 20000 };
  int order[NAMES], n = 0, val[NAMES];
  char k[32];
  uint64_t rng = 12345;
  wk_state_dict *sd = wk_state_dict_new();
  TU_NOTNULL(sd);
  for (int op = 0; op < OPS; op++) {
    int x = (int)(tu_uniform(&rng) * NAMES) % NAMES, at = -1;
    for (int i = 0; i < n; i++)
      if (order[i] == x) at = i;
    snprintf(k, sizeof k, "n%d", x);
    if (tu_uniform(&rng) < 0.45) {
      ck_assert_int_eq(wk_state_dict_remove(sd, k), at >= 0 ? WK_OK : WK_ERR_NOT_FOUND);
      wk_clear_error();
      if (at >= 0) memmove(&order[at], &order[at + 1], sizeof *order * (size_t)(n-- - at - 1));
    } else {
      wk_tensor *t = scalar_i32(op);
      TU_OK(wk_state_dict_set(sd, k, t));
      wk_release(t);
      if (at < 0) order[n++] = x;
      val[x] = op;
    }
    ck_assert_int_eq(wk_state_dict_size(sd), n);
    if (op % 97 == 0 || op == OPS - 1)
      for (int i = 0; i < NAMES; i++) {
        snprintf(k, sizeof k, "n%d", i);
        wk_tensor *t = wk_state_dict_get(sd, k);
        bool in = false;
        for (int j = 0; j < n; j++) in |= order[j] == i;
        if (in)
          ck_assert_int_eq(value_i32(t), val[i]);
        else
          ck_assert_ptr_null(t);
        if (i < n) {
          snprintf(k, sizeof k, "n%d", order[i]);
          ck_assert_str_eq(wk_state_dict_key(sd, i), k);
        }
      }
  }
  wk_state_dict_free(sd);
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

/* Saves sd through the io service and loads it back; returns the load time. */
static double round_trip(const wk_state_dict *sd, wk_state_dict **back) {
  void *buf = NULL;
  size_t n = 0;
  TU_OK(wk_save_safetensors_buffer(sd, &buf, &n));
  double t0 = now_s();
  TU_OK(wk_load_safetensors_buffer(buf, n, back, NULL));
  double t = now_s() - t0;
  wk_free(buf);
  return t;
}

START_TEST(test_state_dict_safetensors_round_trip_large) {
  if (!wk_service_get(WK_IO_SERVICE, WK_IO_SERVICE_VERSION)) {
    wk_clear_error();
    printf("state_dict: no io plugin: safetensors round trip skipped\n");
    return;
  }
  char k[64], v[64];
  wk_state_dict *sd = big_dict(BIG_N), *back = NULL;
  double lt = round_trip(sd, &back);
  ck_assert_int_eq(wk_state_dict_size(back), BIG_N);
  for (int i = 0; i < BIG_N; i++) {
    snprintf(k, sizeof k, "layer.%d.weight", i);
    ck_assert_str_eq(wk_state_dict_key(back, i), k);
    ck_assert_int_eq(value_i32(wk_state_dict_get(back, k)), i);
  }
  wk_state_dict_free(back);
  wk_state_dict_free(sd);
  printf("state_dict: safetensors load of %d tensors: %.3f s\n", BIG_N, lt);

  sd = wk_state_dict_new();
  wk_tensor *t = scalar_i32(7);
  TU_OK(wk_state_dict_set(sd, "w", t));
  wk_release(t);
  for (int i = 0; i < BIG_NM; i++) {
    snprintf(k, sizeof k, "key.%d", i);
    snprintf(v, sizeof v, "v%d", i);
    TU_OK(wk_state_dict_set_meta(sd, k, v));
  }
  lt = round_trip(sd, &back);
  ck_assert_int_eq(wk_state_dict_meta_size(back), BIG_NM);
  for (int i = 0; i < BIG_NM; i += 997) {
    snprintf(k, sizeof k, "key.%d", i);
    snprintf(v, sizeof v, "v%d", i);
    ck_assert_str_eq(wk_state_dict_get_meta(back, k), v);
  }
  ck_assert_int_eq(value_i32(wk_state_dict_get(back, "w")), 7);
  wk_state_dict_free(back);
  wk_state_dict_free(sd);
  ck_assert_int_eq(wk_live_tensors(), 0);
  printf("state_dict: safetensors load of %d metadata entries: %.3f s\n", BIG_NM, lt);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("state_dict");
  TCase *tc = tcase_create("map");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_test(tc, test_state_dict_set_get_order);
  tcase_add_test(tc, test_state_dict_metadata_and_errors);
  suite_add_tcase(s, tc);
  tc = tcase_create("large");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_set_timeout(tc, 120); /* seconds of headroom on a loaded machine; linear maps need about one */
  tcase_add_test(tc, test_state_dict_many_tensors);
  tcase_add_test(tc, test_state_dict_many_metadata);
  tcase_add_test(tc, test_state_dict_random_ops);
  tcase_add_test(tc, test_state_dict_safetensors_round_trip_large);
  suite_add_tcase(s, tc);
  return s;
}
TU_MAIN(make_suite)
