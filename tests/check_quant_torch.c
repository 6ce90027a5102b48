/* check_quant_torch: Wick's eager-mode PTQ against PyTorch's own, on the
 * same float model, weights and calibration data. tests/quant_ref/x86_ref.h
 * was written by tests/quant_ref/gen_x86_ref.py with PyTorch 2.x (PyPI) and
 * its x86 quantized engine (get_default_qconfig("x86"): HistogramObserver
 * with reduce_range for activations, per-channel symmetric MinMax for
 * weights): fuse, prepare, calibrate on 3 batches, convert, then run a test
 * batch. Compared here:
 *   - the observers' q-params (Quantize and the output of each conv/linear):
 *     zero points equal, scales within 1e-6 relative (float32 rounding);
 *   - the int8 weights and their per-channel scales: equal;
 *   - the int8 output of every quantized layer on the test batch, feeding
 *     Wick's layer PyTorch's own input integers (so each layer is judged
 *     alone), and end to end: every integer equal.
 * A second model (a user's C module) uses FloatFunctional add_relu, cat and
 * add between layers, as torchvision's quantizable ResNet does: q-params and
 * every intermediate quantized result equal PyTorch's.
 * Measured when written: all integers equal (0 of 4840 and 0 of 16872);
 * scales equal or 1-2e-7 apart. */
#include <wick/nn.h>
#include <wick/quant.h>

#include "quant_ref/x86_ref.h"
#include "testutil.h"

static bool have_quant(void) {
  if (wk_quant_api_get()) return true;
  wk_clear_error();
  return false;
}

static wk_module *small_cnn(void) {
  wk_module *mods[] = {wk_quant_stub(),
                       wk_nn_conv2d(1, 4, 3, (wk_conv2d_opts){.padding = 1}),
                       wk_nn_batch_norm2d(4, (wk_norm_opts){0}),
                       wk_nn_relu(),
                       wk_nn_max_pool2d(2, (wk_pool2d_opts){0}),
                       wk_nn_conv2d(4, 8, 3, (wk_conv2d_opts){.padding = 1}),
                       wk_nn_relu(),
                       wk_nn_adaptive_avg_pool2d(2, 2),
                       wk_nn_flatten(1, -1),
                       wk_nn_linear(32, 16, true),
                       wk_nn_relu(),
                       wk_nn_linear(16, 10, true),
                       wk_quant_dequant_stub()};
  return wk_nn_sequential(mods, 13);
}

static void set_tensor(wk_tensor *dst, const float *v, int64_t n, const char *name) {
  ck_assert_msg(dst != NULL, "%s: %s", name, wk_last_error_message());
  ck_assert_int_eq(wk_tensor_numel(dst), n);
  wk_tensor *r = wk_copy_(dst, wk_reshape(wk_tensor_from_data(v, WK_F32, WK_SHAPE(n)), wk_tensor_sizes(dst), wk_tensor_dim(dst)));
  ck_assert_msg(r != NULL, "%s: %s", name, wk_last_error_message());
}
#define SET(kind, name, arr) set_tensor(wk_module_##kind(m, name), arr, (int64_t)(sizeof arr / sizeof arr[0]), name)

static wk_tensor *batch(const float *v) { return wk_tensor_from_data(v, WK_F32, WK_SHAPE(4, 1, 12, 12)); }

static const double g_scale_tol = 1e-6; /* relative: float32 rounding of the L2 search */

static void check_qparams(wk_module *m, const char *name, double scale, long long zp) {
  wk_module *obs = wk_module_child(wk_module_child(m, name), "activation_post_process");
  TU_NOTNULL(obs);
  wk_tensor *s = NULL, *z = NULL;
  TU_OK(wk_quant_calculate_qparams(obs, &s, &z));
  double sv;
  int64_t zv;
  TU_OK(wk_item(s, &sv));
  TU_OK(wk_item_i64(z, &zv));
  fprintf(stderr, "check_quant_torch: observer of %s: scale %.9g zero point %lld; PyTorch %.9g %lld\n", name, sv, (long long)zv, scale, zp);
  ck_assert_msg(zv == zp, "observer of '%s': zero point %lld, PyTorch %lld", name, (long long)zv, zp);
  ck_assert_msg(fabs(sv - scale) <= g_scale_tol * scale, "observer of '%s': scale %.9g, PyTorch %.9g", name, sv, scale);
  wk_release(s);
  wk_release(z);
}

static void check_weight(wk_module *m, const char *name, const double *scales, int64_t nch, const signed char *ints,
                         int64_t n) {
  char key[32];
  snprintf(key, sizeof key, "%s.weight", name);
  wk_tensor *w = wk_module_buffer(m, key);
  TU_NOTNULL(w);
  ck_assert_int_eq(wk_tensor_qscheme(w), WK_PER_CHANNEL_AFFINE);
  ck_assert_int_eq(wk_tensor_numel(w), n);
  double *s = tu_values(wk_q_per_channel_scales(w)), *v = tu_values(wk_int_repr(w));
  for (int64_t c = 0; c < nch; c++)
    ck_assert_msg(fabs(s[c] - scales[c]) <= 1e-7 * scales[c], "%s: channel %lld scale %.9g, PyTorch %.9g", key,
                  (long long)c, s[c], scales[c]);
  for (int64_t i = 0; i < n; i++)
    ck_assert_msg(v[i] == ints[i], "%s: element %lld is %g, PyTorch %d", key, (long long)i, v[i], ints[i]);
  free(s);
  free(v);
}

/* Differences between Wick's integers and PyTorch's: count and largest. */
static int64_t quanta_apart(wk_tensor *q, const unsigned char *ref, int64_t n, int64_t *worst) {
  ck_assert_msg(q != NULL, "%s", wk_last_error_message());
  ck_assert_int_eq(wk_tensor_numel(q), n);
  double *v = tu_values(wk_int_repr(q));
  int64_t diff = 0;
  *worst = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t d = (int64_t)fabs(v[i] - ref[i]);
    diff += d != 0;
    if (d > *worst) *worst = d;
  }
  free(v);
  return diff;
}

typedef struct {
  const char *name;
  const unsigned char *out;
  int64_t n;
  int64_t sizes[4];
  int nd;
} layer_ref;

START_TEST(test_x86_ptq_matches_pytorch) {
  if (!have_quant()) return;
  wk_scope_begin();
  wk_module *m = small_cnn();
  TU_NOTNULL(m);
  wk_no_grad_begin();
  SET(param, "1.weight", x86ref_p_1_weight);
  SET(param, "1.bias", x86ref_p_1_bias);
  SET(param, "2.weight", x86ref_p_2_weight);
  SET(param, "2.bias", x86ref_p_2_bias);
  SET(buffer, "2.running_mean", x86ref_p_2_running_mean);
  SET(buffer, "2.running_var", x86ref_p_2_running_var);
  SET(param, "5.weight", x86ref_p_5_weight);
  SET(param, "5.bias", x86ref_p_5_bias);
  SET(param, "9.weight", x86ref_p_9_weight);
  SET(param, "9.bias", x86ref_p_9_bias);
  SET(param, "11.weight", x86ref_p_11_weight);
  SET(param, "11.bias", x86ref_p_11_bias);
  wk_no_grad_end();
  TU_OK(wk_module_train(m, false));
  TU_OK(wk_quant_fuse(m, (const char *[]){"1", "2", "3"}, 3));
  TU_OK(wk_quant_fuse(m, (const char *[]){"5", "6"}, 2));
  TU_OK(wk_quant_fuse(m, (const char *[]){"9", "10"}, 2));
  wk_qconfig qc;
  TU_OK(wk_quant_default_qconfig("x86", &qc));
  TU_OK(wk_quant_prepare(m, &qc));
  TU_NOTNULL(wk_module_forward(m, batch(x86ref_calib0)));
  TU_NOTNULL(wk_module_forward(m, batch(x86ref_calib1)));
  TU_NOTNULL(wk_module_forward(m, batch(x86ref_calib2)));
  check_qparams(m, "0", x86ref_scale_0, x86ref_zp_0);
  check_qparams(m, "1", x86ref_scale_1, x86ref_zp_1);
  check_qparams(m, "5", x86ref_scale_5, x86ref_zp_5);
  check_qparams(m, "9", x86ref_scale_9, x86ref_zp_9);
  check_qparams(m, "11", x86ref_scale_11, x86ref_zp_11);
  TU_OK(wk_quant_convert(m));
  check_weight(m, "1", x86ref_wscale_1, 4, x86ref_wint_1, 36);
  check_weight(m, "5", x86ref_wscale_5, 8, x86ref_wint_5, 288);
  check_weight(m, "9", x86ref_wscale_9, 16, x86ref_wint_9, 512);
  check_weight(m, "11", x86ref_wscale_11, 10, x86ref_wint_11, 160);

  /* layer by layer: each quantized layer gets PyTorch's input integers */
  static const layer_ref layers[] = {
      {"0", x86ref_out_0, 576, {4, 1, 12, 12}, 4}, {"1", x86ref_out_1, 2304, {4, 4, 12, 12}, 4},
      {"4", x86ref_out_4, 576, {4, 4, 6, 6}, 4},   {"5", x86ref_out_5, 1152, {4, 8, 6, 6}, 4},
      {"7", x86ref_out_7, 128, {4, 8, 2, 2}, 4},   {"9", x86ref_out_9, 64, {4, 16}, 2},
      {"11", x86ref_out_11, 40, {4, 10}, 2}};
  static const double scales[] = {x86ref_scale_0, x86ref_scale_1, x86ref_scale_1, x86ref_scale_5,
                                  x86ref_scale_5, x86ref_scale_9, x86ref_scale_11};
  static const long long zps[] = {x86ref_zp_0, x86ref_zp_1, x86ref_zp_1, x86ref_zp_5,
                                  x86ref_zp_5, x86ref_zp_9, x86ref_zp_11};
  wk_tensor *h = batch(x86ref_x), *prev = NULL;
  int64_t total_diff = 0, total = 0;
  for (int i = 0; i < 7; i++) {
    const layer_ref *L = &layers[i];
    wk_tensor *in = h;
    if (i > 0) { /* PyTorch's integers of the previous quantized layer, reshaped as the layer wants */
      const layer_ref *P = &layers[i - 1];
      wk_tensor *ints = wk_tensor_from_data(P->out, WK_U8, P->sizes, P->nd);
      in = wk_make_per_tensor_quantized(ints, scales[i - 1], zps[i - 1]);
      if (!strcmp(L->name, "9")) in = wk_flatten(in, 1, -1);
    }
    wk_tensor *y = wk_module_forward(wk_module_child(m, L->name), in);
    int64_t worst, d = quanta_apart(y, L->out, L->n, &worst);
    fprintf(stderr, "check_quant_torch: layer %s (%s): %lld of %lld integers differ from PyTorch %s, at most %lld\n",
            L->name, wk_module_class_name(wk_module_child(m, L->name)), (long long)d, (long long)L->n, X86REF_TORCH,
            (long long)worst);
    ck_assert_msg(d == 0, "layer %s: %lld of %lld integers differ from PyTorch's, by up to %lld", L->name, (long long)d,
                  (long long)L->n, (long long)worst);
    total_diff += d, total += L->n;
    prev = y;
  }
  (void)prev;
  /* end to end: the whole converted model up to the last quantized layer */
  wk_tensor *e = batch(x86ref_x);
  for (int i = 0; i < 12; i++) {
    char nm[8];
    snprintf(nm, sizeof nm, "%d", i);
    e = wk_module_forward(wk_module_child(m, nm), e);
  }
  int64_t worst, d = quanta_apart(e, x86ref_out_11, 40, &worst);
  fprintf(stderr, "check_quant_torch: end to end: %lld of 40 logits differ, at most %lld quanta (layer by layer: %lld "
          "of %lld)\n", (long long)d, (long long)worst, (long long)total_diff, (long long)total);
  ck_assert_msg(d == 0, "end to end: %lld of 40 logits differ from PyTorch's, by up to %lld", (long long)d,
                (long long)worst);
  wk_module_release(m);
  wk_scope_end();
}
END_TEST


/* ---- FloatFunctional: add_relu, cat, add (a user's model, as a C module) ------------------------ */
typedef struct {
  wk_tensor *rec[8]; /* the quantized results of the last forward (after convert) */
} res_state;

static void res_free(void *p) {
  res_state *s = p;
  for (int i = 0; i < 8; i++) wk_release(s->rec[i]);
  free(s);
}

static wk_tensor *res_keep(res_state *s, int i, wk_tensor *t) {
  if (t && wk_dtype_is_quantized(wk_tensor_dtype(t))) {
    wk_release(s->rec[i]);
    s->rec[i] = wk_retain(t);
  }
  return t;
}

/* PyTorch's Res.forward in gen_x86_ref.py, child for child. */
static wk_tensor *res_forward(wk_module *self, wk_tensor *const *in, int n) {
  (void)n;
  res_state *s = wk_module_state(self);
  wk_scope_begin();
  wk_tensor *x = res_keep(s, 0, wk_module_forward(wk_module_child(self, "quant"), in[0]));
  wk_tensor *a = res_keep(s, 1, wk_module_forward(wk_module_child(self, "r1"), wk_module_forward(wk_module_child(self, "c1"), x)));
  wk_tensor *b = res_keep(s, 2, wk_module_forward(wk_module_child(self, "c2"), a));
  wk_tensor *ba[2] = {b, a};
  wk_tensor *sr = res_keep(s, 3, wk_module_forward_n(wk_module_child(self, "add_relu"), ba, 2));
  wk_tensor *sa[2] = {sr, a};
  wk_tensor *c = res_keep(s, 4, wk_module_forward_n(wk_module_child(self, "cat"), sa, 2));
  wk_tensor *cc[2] = {c, c};
  wk_tensor *d = res_keep(s, 5, wk_module_forward_n(wk_module_child(self, "add"), cc, 2));
  wk_tensor *e = res_keep(s, 6, wk_flatten(wk_module_forward(wk_module_child(self, "pool"), d), 1, -1));
  wk_tensor *y = res_keep(s, 7, wk_module_forward(wk_module_child(self, "fc"), e));
  y = wk_module_forward(wk_module_child(self, "dequant"), y);
  if (y) wk_scope_escape(y);
  wk_scope_end();
  return y;
}

static const wk_module_class C_RES = {sizeof(wk_module_class), "Res", res_forward, res_free, NULL};

/* register_child takes its own reference: the test's is dropped here. */
static void add_child(wk_module *m, const char *name, wk_module *child) {
  TU_NOTNULL(child);
  TU_OK(wk_module_register_child(m, name, child));
  wk_module_release(child);
}

START_TEST(test_x86_float_functional_matches_pytorch) {
  if (!have_quant()) return;
  wk_scope_begin();
  res_state *st = calloc(1, sizeof *st);
  wk_module *m = wk_module_new(&C_RES, st);
  TU_NOTNULL(m);
  add_child(m, "quant", wk_quant_stub());
  add_child(m, "c1", wk_nn_conv2d(1, 4, 3, (wk_conv2d_opts){.padding = 1}));
  add_child(m, "r1", wk_nn_relu());
  add_child(m, "c2", wk_nn_conv2d(4, 4, 3, (wk_conv2d_opts){.padding = 1}));
  add_child(m, "add_relu", wk_quant_float_functional("add_relu", 0));
  add_child(m, "cat", wk_quant_float_functional("cat", 1));
  add_child(m, "add", wk_quant_float_functional("add", 0));
  add_child(m, "pool", wk_nn_adaptive_avg_pool2d(2, 2));
  add_child(m, "fc", wk_nn_linear(32, 10, true));
  add_child(m, "dequant", wk_quant_dequant_stub());
  /* bad arguments */
  ck_assert_ptr_null(wk_quant_float_functional("mul", 0));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "unknown op 'mul'");
  ck_assert_ptr_null(wk_module_forward(wk_module_child(m, "add"), batch(x86ref_x)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "expected 2 inputs, got 1");
  wk_no_grad_begin();
  SET(param, "c1.weight", resref_p_c1_weight);
  SET(param, "c1.bias", resref_p_c1_bias);
  SET(param, "c2.weight", resref_p_c2_weight);
  SET(param, "c2.bias", resref_p_c2_bias);
  SET(param, "fc.weight", resref_p_fc_weight);
  SET(param, "fc.bias", resref_p_fc_bias);
  wk_no_grad_end();
  TU_OK(wk_module_train(m, false));
  TU_OK(wk_quant_fuse(m, (const char *[]){"c1", "r1"}, 2));
  wk_qconfig qc;
  TU_OK(wk_quant_default_qconfig("x86", &qc));
  TU_OK(wk_quant_prepare(m, &qc));
  TU_NOTNULL(wk_module_forward(m, batch(x86ref_calib0)));
  TU_NOTNULL(wk_module_forward(m, batch(x86ref_calib1)));
  TU_NOTNULL(wk_module_forward(m, batch(x86ref_calib2)));
  check_qparams(m, "quant", resref_scale_quant, resref_zp_quant);
  check_qparams(m, "c1", resref_scale_c1, resref_zp_c1);
  check_qparams(m, "c2", resref_scale_c2, resref_zp_c2);
  check_qparams(m, "add_relu", resref_scale_add_relu, resref_zp_add_relu);
  check_qparams(m, "cat", resref_scale_cat, resref_zp_cat);
  check_qparams(m, "add", resref_scale_add, resref_zp_add);
  check_qparams(m, "fc", resref_scale_fc, resref_zp_fc);
  TU_OK(wk_quant_convert(m));
  ck_assert_str_eq(wk_module_class_name(wk_module_child(m, "add_relu")), "QFunctional");
  char *txt = wk_module_to_string(wk_module_child(m, "cat"));
  TU_NOTNULL(txt);
  ck_assert_msg(strstr(txt, "QFunctional(op=cat, scale=0.0201978") != NULL, "%s", txt);
  wk_free(txt);
  TU_NOTNULL(wk_module_forward(m, batch(x86ref_x)));
  static const char *const names[8] = {"quant", "c1", "c2", "add_relu", "cat", "add", "pool", "fc"};
  const unsigned char *refs[8] = {resref_out_quant, resref_out_c1,  resref_out_c2,   resref_out_add_relu,
                                  resref_out_cat,   resref_out_add, resref_out_pool, resref_out_fc};
  static const int64_t ns[8] = {576, 2304, 2304, 2304, 4608, 4608, 128, 40};
  for (int i = 0; i < 8; i++) {
    int64_t worst, d = quanta_apart(st->rec[i], refs[i], ns[i], &worst);
    fprintf(stderr, "check_quant_torch: Res %s: %lld of %lld integers differ from PyTorch, at most %lld\n", names[i],
            (long long)d, (long long)ns[i], (long long)worst);
    ck_assert_msg(d == 0, "Res %s: %lld of %lld integers differ from PyTorch's, by up to %lld", names[i], (long long)d,
                  (long long)ns[i], (long long)worst);
  }
  /* quantized.add (one pass over the integers, inputs in one dense layout)
   * equals the composite (dequantize, add, quantize) that other layouts take */
  wk_tensor *qa = wk_quantize_per_tensor(tu_rand(WK_SHAPE(2, 3, 5, 7), WK_F32, -1, 1, 71), 0.01, 100, WK_QUINT8);
  wk_tensor *qb = wk_quantize_per_tensor(tu_rand(WK_SHAPE(2, 3, 5, 7), WK_F32, -1, 1, 72), 0.013, 120, WK_QUINT8);
  wk_tensor *qb_cl = wk_permute(wk_contiguous(wk_permute(qb, WK_SHAPE(0, 2, 3, 1))), WK_SHAPE(0, 3, 1, 2));
  wk_module *addr = wk_module_child(m, "add_relu");
  wk_tensor *ab[2] = {qa, qb}, *ab_cl[2] = {qa, qb_cl};
  wk_tensor *fast = wk_module_forward_n(addr, ab, 2), *slow = wk_module_forward_n(addr, ab_cl, 2);
  TU_NOTNULL(fast);
  TU_NOTNULL(slow);
  double *vf = tu_values(wk_int_repr(fast)), *vs = tu_values(wk_int_repr(slow));
  for (int i = 0; i < 210; i++) ck_assert_msg(vf[i] == vs[i], "quantized.add element %d: %g, composite %g", i, vf[i], vs[i]);
  free(vf);
  free(vs);
  wk_value bad[5] = {WK_VT(qa), WK_VT(wk_slice(qb, 3, 0, 6, 1)), WK_VF(0.02), WK_VI(0), WK_VB(false)}, out[1];
  ck_assert_int_eq(wk_call("quantized.add", bad, 5, out), WK_ERR_SHAPE);
  TU_FAILS_WITH(WK_ERR_SHAPE, "quantized.add(): qa and qb must have the same shape");
  bad[1] = WK_VT(qb);
  bad[2] = WK_VF(-1);
  ck_assert_int_eq(wk_call("quantized.add", bad, 5, out), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "scale -1 must be positive");
  /* a quantized input with per-channel q-params is refused with its reason */
  wk_tensor *pc = wk_quantize_per_channel(batch(x86ref_x), TU_T(WK_F32, (4), 0.1, 0.1, 0.1, 0.1),
                                          TU_T(WK_I64, (4), 0, 0, 0, 0), 0, WK_QUINT8);
  wk_tensor *pp[2] = {pc, pc};
  ck_assert_ptr_null(wk_module_forward_n(wk_module_child(m, "add"), pp, 2));
  TU_FAILS_WITH(WK_ERR_DTYPE, "per-tensor quantized quint8");
  wk_module_release(m);
  wk_scope_end();
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("quant_torch");
  TCase *tc = tcase_create("x86");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_test(tc, test_x86_ptq_matches_pytorch);
  tcase_add_test(tc, test_x86_float_functional_matches_pytorch);
  suite_add_tcase(s, tc);
  return s;
}

TU_MAIN(suite)
