/* check_nn: the nn service (layers, losses, init, zoo) against PyTorch 1.13
 * reference data (tests/nn_ref/gen.py -> nn_ref.h). */
#include "testutil.h"
#include <wick/sdk/gradcheck.h>
#include <wick/nn.h>
#include "nn_ref/nn_ref.h"

/* ---- reference helpers ---- */
static const nn_ref_case *ref_case(const char *name) {
  for (int i = 0; i < NN_REF_NCASES; i++)
    if (!strcmp(NN_REF_CASES[i].name, name)) return &NN_REF_CASES[i];
  ck_abort_msg("no reference case %s", name);
  return NULL;
}
static const nn_ref_tensor *ref_find(const nn_ref_case *c, const char *name) {
  for (int i = 0; i < c->n; i++)
    if (!strcmp(c->t[i].name, name)) return &c->t[i];
  return NULL;
}
static wk_tensor *ref_t(const nn_ref_case *c, const char *name) {
  const nn_ref_tensor *r = ref_find(c, name);
  ck_assert_msg(r != NULL, "case %s has no tensor %s", c->name, name);
  return wk_tensor_from_data(r->data, WK_F64, r->shape, r->ndim);
}
static int64_t ref_numel(const nn_ref_tensor *r) {
  int64_t n = 1;
  for (int i = 0; i < r->ndim; i++) n *= r->shape[i];
  return n;
}
#define REF_CLOSE(t, c, name, tol)                                                     \
  do {                                                                                 \
    const nn_ref_tensor *r_ = ref_find(c, name);                                       \
    ck_assert_msg(r_ != NULL, "missing %s", name);                                     \
    TU_NOTNULL(t);                                                                     \
    ck_assert_int_eq(wk_tensor_numel(t), ref_numel(r_));                               \
    ck_assert_int_eq(wk_tensor_dim(t), r_->ndim);                                      \
    TU_CLOSE(t, r_->data, ref_numel(r_), tol, tol);                                    \
  } while (0)

/* Loads every "p.<key>" tensor of the case into m (strict) after moving m to f64. */
static void ref_load(wk_module *m, const nn_ref_case *c) {
  TU_NOTNULL(m);
  TU_OK(wk_module_to(m, (wk_device){0, 0}, WK_F64));
  wk_state_dict *sd = wk_state_dict_new();
  for (int i = 0; i < c->n; i++)
    if (!strncmp(c->t[i].name, "p.", 2)) {
      wk_dtype dt = strstr(c->t[i].name, "num_batches_tracked") ? WK_I64 : WK_F64;
      wk_tensor *t = wk_tensor_from_data(c->t[i].data, WK_F64, c->t[i].shape, c->t[i].ndim);
      TU_OK(wk_state_dict_set(sd, c->t[i].name + 2, dt == WK_I64 ? wk_to_dtype(t, WK_I64) : t));
    }
  TU_OK(wk_module_load_state_dict(m, sd, true, NULL));
  wk_state_dict_free(sd);
}

static const char *ref_repr(const char *name) {
  for (int i = 0; i < NN_REF_NREPRS; i++)
    if (!strcmp(NN_REF_REPRS[i][0], name)) return NN_REF_REPRS[i][1];
  ck_abort_msg("no repr %s", name);
  return NULL;
}
static void repr_keep(wk_module *m, const char *name) {
  TU_NOTNULL(m);
  char *s = wk_module_to_string(m);
  TU_NOTNULL(s);
  /* a mismatch names the first differing line (whole printouts of resnets
   * overflow Check's 4 KB message limit, which ends the test as an early exit) */
  const char *ref = ref_repr(name);
  if (!ref) wk_free(s);
  ck_assert_msg(ref != NULL, "no PyTorch printout named %s", name);
  size_t at = 0, line = 0;
  while (s[at] && s[at] == ref[at]) at++;
  while (line < at && s[at - line - 1] != '\n') line++;
  bool same = !s[at] && !ref[at];
  if (!same) {
    char got[256];
    snprintf(got, sizeof got, "%.255s", s + at - line);
    wk_free(s);
    ck_abort_msg("repr %s differs from PyTorch's at byte %zu: '%.200s' vs '%.200s'", name, at, got, ref + at - line);
  }
  wk_free(s);
}
/* Compares the printout with PyTorch's, then releases m. */
static void repr_eq(wk_module *m, const char *name) {
  repr_keep(m, name);
  wk_module_release(m);
}

/* Wick's twin of each module case in gen.py. */
static wk_module *make_case_module(const char *name) {
  if (!strcmp(name, "linear")) return wk_nn_linear(5, 4, true);
  if (!strcmp(name, "linear_nobias")) return wk_nn_linear(5, 2, false);
  if (!strcmp(name, "conv2d_s2p1")) return wk_nn_conv2d(3, 4, 3, (wk_conv2d_opts){.stride = 2, .padding = 1});
  if (!strcmp(name, "conv2d_g2d2")) return wk_nn_conv2d(4, 6, 3, (wk_conv2d_opts){.dilation = 2, .groups = 2, .no_bias = true});
  if (!strcmp(name, "conv2d_same_even")) return wk_nn_conv2d(2, 3, 4, (wk_conv2d_opts){.padding_same = true});
  if (!strcmp(name, "conv2d_asym"))
    return wk_nn_conv2d(2, 3, 3, (wk_conv2d_opts){.kernel_w = 2, .stride = 2, .stride_w = 1, .padding = 1, .padding_w = WK_NN_PAD_W_ZERO});
  if (!strcmp(name, "conv2d_unbatched")) return wk_nn_conv2d(2, 3, 3, (wk_conv2d_opts){.padding = 1});
  if (!strcmp(name, "conv1d")) return wk_nn_conv1d(3, 5, 3, (wk_conv1d_opts){.stride = 2, .padding = 1});
  if (!strcmp(name, "conv1d_same")) return wk_nn_conv1d(2, 2, 4, (wk_conv1d_opts){.padding_same = true});
  if (!strcmp(name, "convt2d"))
    return wk_nn_conv_transpose2d(4, 6, 3, (wk_conv2d_opts){.stride = 2, .padding = 1, .output_padding = 1, .groups = 2});
  if (!strcmp(name, "convt2d_plain")) return wk_nn_conv_transpose2d(3, 2, 2, (wk_conv2d_opts){.stride = 2});
  if (!strcmp(name, "maxpool")) return wk_nn_max_pool2d(3, (wk_pool2d_opts){.stride = 2, .padding = 1});
  if (!strcmp(name, "maxpool_ceil_dil")) return wk_nn_max_pool2d(2, (wk_pool2d_opts){.dilation = 2, .ceil_mode = true});
  if (!strcmp(name, "avgpool")) return wk_nn_avg_pool2d(2, (wk_pool2d_opts){0});
  if (!strcmp(name, "avgpool_nopad"))
    return wk_nn_avg_pool2d(3, (wk_pool2d_opts){.stride = 2, .padding = 1, .no_count_include_pad = true});
  if (!strcmp(name, "adaptive11")) return wk_nn_adaptive_avg_pool2d(1, 1);
  if (!strcmp(name, "adaptive23")) return wk_nn_adaptive_avg_pool2d(2, 3);
  if (!strcmp(name, "layernorm")) return wk_nn_layer_norm((const int64_t[]){3, 4}, 2, (wk_norm_opts){0});
  if (!strcmp(name, "layernorm_affine")) return wk_nn_layer_norm((const int64_t[]){4}, 1, (wk_norm_opts){.eps = 1e-3});
  if (!strcmp(name, "groupnorm")) return wk_nn_group_norm(2, 4, (wk_norm_opts){0});
  if (!strcmp(name, "embedding")) return wk_nn_embedding(10, 3, (wk_embedding_opts){.has_padding_idx = true, .padding_idx = 0});
  if (!strcmp(name, "relu")) return wk_nn_relu();
  if (!strcmp(name, "leaky")) return wk_nn_leaky_relu(0.2);
  if (!strcmp(name, "gelu")) return wk_nn_gelu();
  if (!strcmp(name, "gelu_tanh")) return wk_nn_gelu_tanh();
  if (!strcmp(name, "silu")) return wk_nn_silu();
  if (!strcmp(name, "sigmoid")) return wk_nn_sigmoid();
  if (!strcmp(name, "tanh")) return wk_nn_tanh();
  if (!strcmp(name, "softmax")) return wk_nn_softmax(1);
  if (!strcmp(name, "log_softmax")) return wk_nn_log_softmax(0);
  if (!strcmp(name, "identity")) return wk_nn_identity();
  if (!strcmp(name, "flatten")) return wk_nn_flatten(1, -1);
  if (!strcmp(name, "dropout_eval")) {
    wk_module *m = wk_nn_dropout(0.3);
    wk_module_train(m, false);
    return m;
  }
  return NULL;
}
static const char *const MODULE_CASES[] = {
    "linear", "linear_nobias", "conv2d_s2p1", "conv2d_g2d2", "conv2d_same_even", "conv2d_asym", "conv2d_unbatched", "conv1d",
    "conv1d_same", "convt2d", "convt2d_plain", "maxpool", "maxpool_ceil_dil", "avgpool", "avgpool_nopad", "adaptive11",
    "adaptive23", "layernorm", "layernorm_affine", "groupnorm", "embedding", "relu", "leaky", "gelu", "gelu_tanh", "silu",
    "sigmoid", "tanh", "softmax", "log_softmax", "identity", "flatten", "dropout_eval"};
#define N_MODULE_CASES ((int)(sizeof MODULE_CASES / sizeof *MODULE_CASES))

START_TEST(test_nn_layer_forward_vs_torch) {
  const char *name = MODULE_CASES[_i];
  int64_t live = wk_live_tensors();
  wk_scope_begin();
  const nn_ref_case *c = ref_case(name);
  wk_module *m = make_case_module(name);
  TU_NOTNULL(m);
  ref_load(m, c);
  wk_tensor *x = ref_t(c, "x0");
  if (!strcmp(name, "embedding")) x = wk_to_dtype(x, WK_I64);
  wk_tensor *y = wk_module_forward(m, x);
  REF_CLOSE(y, c, "y", 1e-9);
  repr_eq(m, name);
  wk_scope_end();
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- BatchNorm: training steps update running stats; eval uses them ---- */
static void bn_check(const char *name, wk_module *m) {
  wk_scope_begin();
  const nn_ref_case *c = ref_case(name);
  ref_load(m, c);
  TU_OK(wk_module_train(m, true));
  char key[64];
  for (int i = 0; i < 3; i++) {
    snprintf(key, sizeof key, "x%d", i);
    wk_tensor *y = wk_module_forward(m, ref_t(c, key));
    snprintf(key, sizeof key, "y%d", i);
    REF_CLOSE(y, c, key, 1e-9);
  }
  const char *bufs[] = {"running_mean", "running_var", "num_batches_tracked"};
  for (int i = 0; i < 3; i++) {
    snprintf(key, sizeof key, "after.%s", bufs[i]);
    if (!ref_find(c, key)) continue;
    wk_tensor *b = wk_module_buffer(m, bufs[i]);
    REF_CLOSE(b, c, key, 1e-9);
  }
  TU_OK(wk_module_train(m, false));
  REF_CLOSE(wk_module_forward(m, ref_t(c, "xe")), c, "ye", 1e-9);
  repr_eq(m, name);
  wk_scope_end();
}
START_TEST(test_nn_batchnorm_train_eval_vs_torch) {
  int64_t live = wk_live_tensors();
  bn_check("bn2d", wk_nn_batch_norm2d(3, (wk_norm_opts){0}));
  bn_check("bn1d", wk_nn_batch_norm1d(3, (wk_norm_opts){.momentum = 0.3, .eps = 1e-3}));
  bn_check("bn1d_3d", wk_nn_batch_norm1d(2, (wk_norm_opts){0}));
  bn_check("bn1d_cma", wk_nn_batch_norm1d(2, (wk_norm_opts){.cumulative_average = true}));
  bn_check("bn2d_noaffine_notrack", wk_nn_batch_norm2d(2, (wk_norm_opts){.no_affine = true, .no_track_running_stats = true}));
  /* state dict names, num_batches_tracked is an int64 0-dim buffer */
  wk_scope_begin();
  wk_module *bn = wk_nn_batch_norm2d(4, (wk_norm_opts){0});
  wk_state_dict *sd = wk_module_state_dict(bn);
  ck_assert_int_eq(wk_state_dict_size(sd), 5);
  const char *keys[] = {"weight", "bias", "running_mean", "running_var", "num_batches_tracked"};
  for (int i = 0; i < 5; i++) ck_assert_str_eq(wk_state_dict_key(sd, i), keys[i]);
  ck_assert_int_eq(wk_tensor_dtype(wk_state_dict_get(sd, "num_batches_tracked")), WK_I64);
  ck_assert_int_eq(wk_tensor_dim(wk_state_dict_get(sd, "num_batches_tracked")), 0);
  wk_state_dict_free(sd);
  /* wrong input rank / channels name the layer */
  ck_assert_ptr_null(wk_module_forward(bn, wk_zeros(WK_SHAPE(2, 4, 3), (wk_options){0})));
  TU_FAILS_WITH(WK_ERR_SHAPE, "BatchNorm2d: expected 4D input (got 3D input)");
  ck_assert_ptr_null(wk_module_forward(bn, wk_zeros(WK_SHAPE(2, 3, 2, 2), (wk_options){0})));
  TU_FAILS_WITH(WK_ERR_SHAPE, "BatchNorm2d(4): expected input with 4 channels, got shape [2, 3, 2, 2]");
  wk_module_release(bn);
  wk_scope_end();
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- losses ---- */
START_TEST(test_nn_losses_vs_torch) {
  int64_t live = wk_live_tensors();
  wk_scope_begin();
  const double tol = 1e-9;
  const nn_ref_case *c = ref_case("ce");
  wk_tensor *x = ref_t(c, "x"), *t = wk_to_dtype(ref_t(c, "t"), WK_I64);
  REF_CLOSE(wk_nn_cross_entropy(x, t, (wk_loss_opts){0}), c, "y", tol);
  REF_CLOSE(wk_nn_cross_entropy(x, t, (wk_loss_opts){.reduction = "sum"}), c, "y_sum", tol);
  REF_CLOSE(wk_nn_cross_entropy(x, t, (wk_loss_opts){.reduction = "none"}), c, "y_none", tol);
  REF_CLOSE(wk_nn_cross_entropy(x, t, (wk_loss_opts){.weight = ref_t(c, "w")}), c, "y_w", tol);
  REF_CLOSE(wk_nn_cross_entropy(x, wk_to_dtype(ref_t(c, "t_ign"), WK_I64), (wk_loss_opts){0}), c, "y_ign", tol);
  REF_CLOSE(wk_nn_cross_entropy(x, t, (wk_loss_opts){.label_smoothing = 0.2}), c, "y_ls", tol);
  REF_CLOSE(wk_nn_cross_entropy(x, ref_t(c, "t_prob"), (wk_loss_opts){0}), c, "y_prob", tol);
  /* the module form */
  wk_module *ce = wk_nn_cross_entropy_loss((wk_loss_opts){.weight = ref_t(c, "w")});
  REF_CLOSE(wk_nn_loss(ce, x, t), c, "y_w", tol);
  ck_assert_ptr_nonnull(wk_module_buffer(ce, "weight"));
  wk_module_release(ce);

  c = ref_case("nll");
  x = ref_t(c, "x");
  t = wk_to_dtype(ref_t(c, "t"), WK_I64);
  REF_CLOSE(wk_nn_nll(x, t, (wk_loss_opts){0}), c, "y", tol);
  REF_CLOSE(wk_nn_nll(x, t, (wk_loss_opts){.weight = ref_t(c, "w")}), c, "y_w", tol);
  REF_CLOSE(wk_nn_nll(x, wk_to_dtype(ref_t(c, "t_ign"), WK_I64), (wk_loss_opts){.has_ignore_index = true, .ignore_index = 2}),
            c, "y_ign", tol);

  c = ref_case("mse");
  REF_CLOSE(wk_nn_mse(ref_t(c, "x"), ref_t(c, "t"), (wk_loss_opts){0}), c, "y", tol);
  wk_module *mse = wk_nn_mse_loss((wk_loss_opts){.reduction = "sum"});
  REF_CLOSE(wk_nn_loss(mse, ref_t(c, "x"), ref_t(c, "t")), c, "y_sum", tol);
  wk_module_release(mse);
  c = ref_case("l1");
  REF_CLOSE(wk_nn_l1(ref_t(c, "x"), ref_t(c, "t"), (wk_loss_opts){0}), c, "y", tol);
  REF_CLOSE(wk_nn_l1(ref_t(c, "x"), ref_t(c, "t"), (wk_loss_opts){.reduction = "none"}), c, "y_none", tol);
  c = ref_case("smoothl1");
  REF_CLOSE(wk_nn_smooth_l1(ref_t(c, "x"), ref_t(c, "t"), (wk_loss_opts){0}), c, "y", tol);
  REF_CLOSE(wk_nn_smooth_l1(ref_t(c, "x"), ref_t(c, "t"), (wk_loss_opts){.beta = 0.5}), c, "y_b", tol);
  REF_CLOSE(wk_nn_smooth_l1(ref_t(c, "x"), ref_t(c, "t"), (wk_loss_opts){.beta = WK_NN_ZERO}), c, "y_b0", tol);
  c = ref_case("bce");
  REF_CLOSE(wk_nn_bce(ref_t(c, "x"), ref_t(c, "t"), (wk_loss_opts){0}), c, "y", tol);
  REF_CLOSE(wk_nn_bce(ref_t(c, "x"), ref_t(c, "t"), (wk_loss_opts){.weight = ref_t(c, "w"), .reduction = "sum"}), c, "y_w", tol);
  c = ref_case("bcelogits");
  REF_CLOSE(wk_nn_bce_with_logits(ref_t(c, "x"), ref_t(c, "t"), (wk_loss_opts){0}), c, "y", tol);
  wk_module *bl = wk_nn_bce_with_logits_loss((wk_loss_opts){.pos_weight = ref_t(c, "pw")});
  REF_CLOSE(wk_nn_loss(bl, ref_t(c, "x"), ref_t(c, "t")), c, "y_pw", tol);
  wk_module_release(bl);
  c = ref_case("kldiv");
  REF_CLOSE(wk_nn_kl_div(ref_t(c, "x"), ref_t(c, "t"), (wk_loss_opts){.reduction = "batchmean"}), c, "y", tol);
  REF_CLOSE(wk_nn_kl_div(ref_t(c, "x"), ref_t(c, "t"), (wk_loss_opts){.reduction = "sum"}), c, "y_sum", tol);
  REF_CLOSE(wk_nn_kl_div(ref_t(c, "x"), ref_t(c, "lt"), (wk_loss_opts){.log_target = true}), c, "y_lt", tol);
  /* errors */
  ck_assert_ptr_null(wk_nn_mse(ref_t(c, "x"), ref_t(c, "t"), (wk_loss_opts){.reduction = "avg"}));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "avg is not a valid value for reduction");
  ck_assert_ptr_null(wk_nn_l1(wk_zeros(WK_SHAPE(3), (wk_options){0}), wk_zeros(WK_SHAPE(3, 1), (wk_options){0}), (wk_loss_opts){0}));
  TU_FAILS_WITH(WK_ERR_SHAPE, "L1Loss: Using a target size ([3, 1]) that is different to the input size ([3])");
  ck_assert_ptr_null(wk_nn_bce(TU_T(WK_F32, (2), 0.5, 1.5), TU_T(WK_F32, (2), 0, 1), (wk_loss_opts){0}));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "all elements of input should be between 0 and 1");
  wk_module *kl = wk_nn_kl_div_loss((wk_loss_opts){0});
  ck_assert_ptr_null(wk_module_forward(kl, x));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "KLDivLoss.forward() takes 2 inputs but 1 were given");
  wk_module_release(kl);
  wk_scope_end();
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- gradcheck (float64, small) ---- */
static wk_tensor *fwd_module(void *ctx, wk_tensor *const *in, int n) {
  (void)n;
  return wk_module_forward((wk_module *)ctx, in[0]);
}
typedef struct {
  int kind;
  wk_loss_opts o;
} loss_ctx;
static wk_tensor *fwd_loss(void *ctx, wk_tensor *const *in, int n) {
  (void)n;
  loss_ctx *l = ctx;
  return wk_nn_loss_fn(l->kind, in[0], in[1], l->o);
}
static void gc_module(wk_module *m, const int64_t *shape, int nd, bool params) {
  TU_NOTNULL(m);
  TU_OK(wk_module_to(m, (wk_device){0, 0}, WK_F64));
  wk_tensor *in[8];
  int n = 0;
  in[n++] = tu_rand(shape, nd, WK_F64, -1, 1, 7);
  wk_tensor_set_requires_grad(in[0], true);
  if (params) /* parameters too: perturbing them in place is seen by the forward */
    n += wk_module_named_parameters(m, NULL, in + 1, 7);
  wk_status st = wk_gradcheck(fwd_module, m, in, n, NULL);
  ck_assert_msg(st == WK_OK, "%s: %s", wk_module_class_name(m), wk_last_error_message());
  wk_module_release(m);
}
START_TEST(test_nn_gradcheck_layers_and_losses) {
  int64_t live = wk_live_tensors();
  wk_scope_begin();
  gc_module(wk_nn_linear(3, 2, true), WK_SHAPE(2, 3), true);
  gc_module(wk_nn_conv2d(4, 2, 3, (wk_conv2d_opts){.stride = 2, .padding = 1, .groups = 2}), WK_SHAPE(1, 4, 5, 5), true);
  gc_module(wk_nn_conv2d(2, 2, 2, (wk_conv2d_opts){.padding_same = true}), WK_SHAPE(1, 2, 4, 3), true);
  gc_module(wk_nn_conv1d(2, 3, 3, (wk_conv1d_opts){.stride = 2, .padding = 1}), WK_SHAPE(2, 2, 5), true);
  gc_module(wk_nn_conv_transpose2d(2, 2, 3, (wk_conv2d_opts){.stride = 2, .padding = 1, .output_padding = 1}), WK_SHAPE(1, 2, 3, 3), true);
  gc_module(wk_nn_group_norm(2, 4, (wk_norm_opts){0}), WK_SHAPE(2, 4, 3), true);
  gc_module(wk_nn_layer_norm((const int64_t[]){4}, 1, (wk_norm_opts){0}), WK_SHAPE(3, 4), true);
  gc_module(wk_nn_batch_norm1d(3, (wk_norm_opts){.no_track_running_stats = true}), WK_SHAPE(4, 3), true);
  gc_module(wk_nn_avg_pool2d(2, (wk_pool2d_opts){0}), WK_SHAPE(1, 2, 4, 4), false);
  /* losses: both input and target where differentiable */
  struct {
    int kind;
    wk_loss_opts o;
    double lo, hi;
  } L[] = {{WK_NN_L1, {0}, -1, 1}, {WK_NN_SMOOTH_L1, {.beta = 0.7}, -1, 1}, {WK_NN_BCE, {0}, 0.1, 0.9},
           {WK_NN_KL_DIV, {.reduction = "batchmean"}, 0.1, 0.9}, {WK_NN_MSE, {0}, -1, 1}};
  for (int i = 0; i < 5; i++) {
    loss_ctx lc = {L[i].kind, L[i].o};
    wk_tensor *in[2] = {tu_rand(WK_SHAPE(3, 4), WK_F64, L[i].lo, L[i].hi, 3 + i), tu_rand(WK_SHAPE(3, 4), WK_F64, 0.05, 0.95, 9 + i)};
    wk_tensor_set_requires_grad(in[0], true);
    wk_tensor_set_requires_grad(in[1], L[i].kind != WK_NN_L1);
    wk_status st = wk_gradcheck(fwd_loss, &lc, in, 2, NULL);
    ck_assert_msg(st == WK_OK, "loss %d: %s", L[i].kind, wk_last_error_message());
  }
  wk_scope_end();
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- Dropout train/eval ---- */
START_TEST(test_nn_dropout_train_eval) {
  int64_t live = wk_live_tensors();
  wk_scope_begin();
  wk_module *d = wk_nn_dropout(0.25);
  wk_tensor *x = wk_ones(WK_SHAPE(100, 100), (wk_options){0});
  double *v = tu_values(wk_module_forward(d, x));
  int zeros = 0;
  for (int i = 0; i < 10000; i++) {
    ck_assert(v[i] == 0 || fabs(v[i] - 1 / 0.75) < 1e-6);
    zeros += v[i] == 0;
  }
  ck_assert_msg(zeros > 2200 && zeros < 2800, "zeros %d", zeros);
  free(v);
  TU_OK(wk_module_train(d, false));
  v = tu_values(wk_module_forward(d, x));
  for (int i = 0; i < 10000; i++) ck_assert(v[i] == 1);
  free(v);
  wk_module_release(d);
  ck_assert_ptr_null(wk_nn_dropout(1.5));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "dropout probability has to be between 0 and 1, but got 1.5");
  wk_scope_end();
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- printing and containers ---- */
START_TEST(test_nn_repr_and_containers) {
  int64_t live = wk_live_tensors();
  wk_scope_begin();
  repr_eq(wk_nn_cross_entropy_loss((wk_loss_opts){0}), "ce_loss");
  repr_eq(wk_nn_mse_loss((wk_loss_opts){.reduction = "sum"}), "mse_loss");
  repr_eq(wk_nn_kl_div_loss((wk_loss_opts){0}), "kl_loss");
  wk_module *seq = wk_nn_sequential((wk_module *[]){wk_nn_linear(4, 3, true), wk_nn_relu(), wk_nn_dropout(0.5), wk_nn_linear(3, 2, false)}, 4);
  repr_keep(seq, "seq");
  repr_eq(wk_nn_conv2d(3, 64, 3, (wk_conv2d_opts){.stride = 2, .padding = 1}), "conv_repr");
  repr_eq(wk_nn_conv2d(4, 8, 3, (wk_conv2d_opts){.kernel_w = 2, .stride = 2, .stride_w = 1, .dilation = 2, .groups = 2, .no_bias = true}),
          "conv_repr2");
  repr_eq(wk_nn_conv2d(3, 3, 3, (wk_conv2d_opts){.padding_same = true}), "conv_same_repr");
  wk_module *misc = wk_nn_sequential(
      (wk_module *[]){wk_nn_conv1d(2, 3, 5, (wk_conv1d_opts){0}),
                      wk_nn_conv_transpose2d(2, 3, 3, (wk_conv2d_opts){.stride = 2, .output_padding = 1}),
                      wk_nn_adaptive_avg_pool2d(1, 0), wk_nn_avg_pool2d(2, (wk_pool2d_opts){0}),
                      wk_nn_layer_norm((const int64_t[]){5}, 1, (wk_norm_opts){0}), wk_nn_group_norm(2, 4, (wk_norm_opts){0}),
                      wk_nn_embedding(5, 2, (wk_embedding_opts){0}), wk_nn_batch_norm2d(8, (wk_norm_opts){.cumulative_average = true}),
                      wk_nn_leaky_relu(0.01), wk_nn_gelu_tanh(), wk_nn_softmax(-1), wk_nn_flatten(1, -1), wk_nn_identity(),
                      wk_nn_silu(), wk_nn_sigmoid(), wk_nn_tanh()},
      16);
  repr_eq(misc, "misc_repr");
  /* Sequential forward = chaining; append names by index */
  wk_tensor *x = wk_randn(WK_SHAPE(5, 4), (wk_options){0});
  TU_OK(wk_module_train(seq, false));
  wk_tensor *y = wk_module_forward(seq, x);
  wk_tensor *h = wk_relu(wk_module_forward(wk_module_child(seq, "0"), x));
  wk_tensor *y2 = wk_module_forward(wk_module_child(seq, "3"), h);
  double *a = tu_values(y), *b = tu_values(y2);
  for (int i = 0; i < 10; i++) ck_assert(fabs(a[i] - b[i]) < 1e-6);
  free(a);
  free(b);
  TU_OK(wk_nn_append(seq, NULL, wk_nn_softmax(1)));
  ck_assert_ptr_nonnull(wk_module_child(seq, "4"));
  wk_module_release(seq);
  /* ModuleList / ModuleDict: children by index / name; no forward */
  wk_module *ml = wk_nn_module_list((wk_module *[]){wk_nn_linear(2, 2, true), wk_nn_linear(2, 2, true)}, 2);
  ck_assert_int_eq(wk_module_named_parameters(ml, NULL, NULL, 0), 4);
  const char *names[4];
  wk_module_named_parameters(ml, names, NULL, 4);
  ck_assert_str_eq(names[2], "1.weight");
  ck_assert_ptr_null(wk_module_forward(ml, x));
  TU_FAILS_WITH(WK_ERR_UNSUPPORTED, "Module [ModuleList] is missing the required \"forward\" function");
  wk_module_release(ml);
  wk_module *md = wk_nn_module_dict((const char *[]){"enc", "dec"}, (wk_module *[]){wk_nn_linear(2, 3, true), wk_nn_linear(3, 2, true)}, 2);
  ck_assert_ptr_nonnull(wk_module_param(md, "dec.bias"));
  ck_assert_int_eq(wk_nn_append(md, NULL, wk_nn_relu()), WK_ERR_INVALID_ARG);
  TU_OK(wk_nn_append(md, "act", wk_nn_relu()));
  char *s = wk_module_to_string(md);
  ck_assert_str_eq(s, "ModuleDict(\n  (enc): Linear(in_features=2, out_features=3, bias=True)\n  (dec): Linear(in_features=3, "
                      "out_features=2, bias=True)\n  (act): ReLU()\n)");
  wk_free(s);
  wk_module_release(md);
  /* a NULL among the modules fails the container and releases the others */
  wk_clear_error();
  ck_assert_ptr_null(wk_nn_sequential((wk_module *[]){wk_nn_relu(), wk_nn_linear(-1, 2, true)}, 2));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "Linear: in_features and out_features must be non-negative");
  wk_module *r = wk_nn_relu();
  ck_assert_int_eq(wk_nn_append(r, NULL, wk_nn_relu()), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "append: ReLU is not a Sequential, ModuleList or ModuleDict");
  wk_module_release(r);
  wk_clear_error();
  wk_scope_end();
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- error messages name the layer and the shapes ---- */
START_TEST(test_nn_errors_name_layer_and_shapes) {
  int64_t live = wk_live_tensors();
  wk_scope_begin();
  wk_module *fc = wk_nn_linear(4, 3, true);
  ck_assert_ptr_null(wk_module_forward(fc, wk_zeros(WK_SHAPE(2, 5), (wk_options){0})));
  TU_FAILS_WITH(WK_ERR_SHAPE, "Linear(in_features=4, out_features=3): expected input with last dimension 4, got shape [2, 5]");
  ck_assert_ptr_null(wk_module_forward(fc, NULL));
  wk_clear_error();
  wk_module_release(fc);
  wk_module *conv = wk_nn_conv2d(3, 8, 3, (wk_conv2d_opts){0});
  ck_assert_ptr_null(wk_module_forward(conv, wk_zeros(WK_SHAPE(1, 4, 8, 8), (wk_options){0})));
  TU_FAILS_WITH(WK_ERR_SHAPE, "Conv2d: Given groups=1, weight of size [8, 3, 3, 3], expected input[1, 4, 8, 8] to have 3 "
                              "channels, but got 4 channels instead");
  ck_assert_ptr_null(wk_module_forward(conv, wk_zeros(WK_SHAPE(4, 8), (wk_options){0})));
  TU_FAILS_WITH(WK_ERR_SHAPE, "Conv2d: expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [4, 8]");
  wk_module_release(conv);
  ck_assert_ptr_null(wk_nn_conv2d(3, 8, 3, (wk_conv2d_opts){.groups = 2}));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "must be positive and divisible by groups");
  ck_assert_ptr_null(wk_nn_conv2d(3, 8, 3, (wk_conv2d_opts){.padding_same = true, .stride = 2}));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "padding='same' is not supported for strided convolutions");
  wk_module *ln = wk_nn_layer_norm((const int64_t[]){10}, 1, (wk_norm_opts){0});
  ck_assert_ptr_null(wk_module_forward(ln, wk_zeros(WK_SHAPE(2, 5), (wk_options){0})));
  TU_FAILS_WITH(WK_ERR_SHAPE, "LayerNorm: Given normalized_shape=[10], expected input with shape [*, 10], but got input of size[2, 5]");
  wk_module_release(ln);
  wk_module *emb = wk_nn_embedding(5, 2, (wk_embedding_opts){0});
  ck_assert_ptr_null(wk_module_forward(emb, wk_zeros(WK_SHAPE(3), (wk_options){0})));
  TU_FAILS_WITH(WK_ERR_DTYPE, "Embedding: expected indices of dtype int64 or int32, got");
  wk_module_release(emb);
  ck_assert_ptr_null(wk_nn_embedding(5, 2, (wk_embedding_opts){.has_padding_idx = true, .padding_idx = 5}));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "padding_idx must be within num_embeddings");
  wk_module *mp = wk_nn_max_pool2d(2, (wk_pool2d_opts){0});
  ck_assert_ptr_null(wk_module_forward(mp, wk_zeros(WK_SHAPE(2, 5), (wk_options){0})));
  TU_FAILS_WITH(WK_ERR_SHAPE, "MaxPool2d: expected 3D or 4D input, but got input of size: [2, 5]");
  wk_module_release(mp);
  ck_assert_ptr_null(wk_nn_group_norm(3, 4, (wk_norm_opts){0}));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "GroupNorm: num_channels must be divisible by num_groups");
  ck_assert_ptr_null(wk_nn_resnet(20, (wk_resnet_opts){0}));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "resnet: depth must be 18, 34 or 50, got 20");
  /* the service is registered under "nn" */
  ck_assert_ptr_nonnull(wk_service_get("nn", 1));
  ck_assert_ptr_null(wk_service_get("nn", 99));
  wk_clear_error();
  wk_scope_end();
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- initialisation ---- */
static void stats(wk_tensor *t, double *mn, double *mx, double *mean, double *sd) {
  int64_t n = wk_tensor_numel(t);
  double *v = tu_values(t), s = 0, s2 = 0;
  *mn = INFINITY;
  *mx = -INFINITY;
  for (int64_t i = 0; i < n; i++) {
    s += v[i];
    s2 += v[i] * v[i];
    if (v[i] < *mn) *mn = v[i];
    if (v[i] > *mx) *mx = v[i];
  }
  *mean = s / n;
  *sd = sqrt(s2 / n - *mean * *mean);
  free(v);
}
START_TEST(test_nn_init_defaults_and_functions) {
  int64_t live = wk_live_tensors();
  wk_scope_begin();
  double mn, mx, mean, sd;
  /* Linear(256, 128): weight and bias ~ U(-1/16, 1/16) */
  wk_module *fc = wk_nn_linear(256, 128, true);
  wk_tensor *w = wk_module_param(fc, "weight");
  stats(w, &mn, &mx, &mean, &sd);
  ck_assert(mn >= -1.0 / 16 && mx <= 1.0 / 16 && mn < -0.06 && mx > 0.06);
  ck_assert(fabs(sd - (1.0 / 16) / sqrt(3.0)) < 0.002 && fabs(mean) < 0.002);
  stats(wk_module_param(fc, "bias"), &mn, &mx, &mean, &sd);
  ck_assert(mn >= -1.0 / 16 && mx <= 1.0 / 16);
  ck_assert(wk_tensor_requires_grad(w));
  /* Conv2d(8, 16, 3): fan_in 72 */
  wk_module *cv = wk_nn_conv2d(8, 16, 3, (wk_conv2d_opts){0});
  stats(wk_module_param(cv, "weight"), &mn, &mx, &mean, &sd);
  ck_assert(mn >= -1 / sqrt(72.0) && mx <= 1 / sqrt(72.0) && mx > 0.9 / sqrt(72.0));
  wk_module *emb = wk_nn_embedding(200, 50, (wk_embedding_opts){.has_padding_idx = true, .padding_idx = -1});
  stats(wk_module_param(emb, "weight"), &mn, &mx, &mean, &sd);
  ck_assert(fabs(sd - 1) < 0.05 && fabs(mean) < 0.05);
  wk_tensor *last = wk_select(wk_module_param(emb, "weight"), 0, 199);
  TU_EQ_VALS(wk_sum(wk_abs(last)), 0);
  wk_module *bn = wk_nn_batch_norm2d(3, (wk_norm_opts){0});
  TU_EQ_VALS(wk_module_param(bn, "weight"), 1, 1, 1);
  TU_EQ_VALS(wk_module_param(bn, "bias"), 0, 0, 0);
  TU_EQ_VALS(wk_module_buffer(bn, "running_var"), 1, 1, 1);
  /* the public functions work on parameters (no_grad inside) */
  TU_OK(wk_nn_init_kaiming_normal_(w, 0, "fan_out", "relu"));
  stats(w, &mn, &mx, &mean, &sd);
  ck_assert(fabs(sd - sqrt(2.0 / 128)) < 0.005);
  ck_assert(wk_tensor_is_leaf(w) && wk_tensor_requires_grad(w));
  TU_OK(wk_nn_init_kaiming_uniform_(w, 0, NULL, NULL));
  stats(w, &mn, &mx, &mean, &sd);
  ck_assert(mx <= sqrt(6.0 / 256) && mx > 0.95 * sqrt(6.0 / 256));
  TU_OK(wk_nn_init_xavier_uniform_(w, 2.0));
  stats(w, &mn, &mx, &mean, &sd);
  double b = 2.0 * sqrt(6.0 / (256 + 128));
  ck_assert(mx <= b && mn >= -b && mx > 0.95 * b);
  TU_OK(wk_nn_init_xavier_normal_(w, 0));
  stats(w, &mn, &mx, &mean, &sd);
  ck_assert(fabs(sd - sqrt(2.0 / 384)) < 0.003);
  TU_OK(wk_nn_init_normal_(w, 3, 0.5));
  stats(w, &mn, &mx, &mean, &sd);
  ck_assert(fabs(mean - 3) < 0.01 && fabs(sd - 0.5) < 0.01);
  TU_OK(wk_nn_init_uniform_(w, 2, 5));
  stats(w, &mn, &mx, &mean, &sd);
  ck_assert(mn >= 2 && mx <= 5 && fabs(mean - 3.5) < 0.02);
  TU_OK(wk_nn_init_constant_(w, 0.25));
  stats(w, &mn, &mx, &mean, &sd);
  ck_assert(mn == 0.25 && mx == 0.25);
  TU_OK(wk_nn_init_zeros_(w));
  TU_OK(wk_nn_init_ones_(wk_module_param(fc, "bias")));
  stats(w, &mn, &mx, &mean, &sd);
  ck_assert(mn == 0 && mx == 0);
  /* orthogonal: Q Q^T = I for a wide matrix (rows < cols), scaled by gain */
  wk_tensor *q = wk_empty(WK_SHAPE(3, 5), WK_OPTS(.dtype = WK_F64));
  TU_OK(wk_nn_init_orthogonal_(q, 2.0));
  double *qq = tu_values(wk_matmul(q, wk_t(q)));
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) ck_assert(fabs(qq[i * 3 + j] - (i == j ? 4 : 0)) < 1e-9);
  free(qq);
  wk_tensor *q2 = wk_empty(WK_SHAPE(6, 2, 2), WK_OPTS(.dtype = WK_F64));
  TU_OK(wk_nn_init_orthogonal_(q2, 0));
  double *qt = tu_values(wk_matmul(wk_t(wk_reshape(q2, WK_SHAPE(6, 4))), wk_reshape(q2, WK_SHAPE(6, 4))));
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) ck_assert(fabs(qt[i * 4 + j] - (i == j)) < 1e-9);
  free(qt);
  /* gains and errors */
  ck_assert(fabs(wk_nn_calculate_gain("tanh", 0) - 5.0 / 3) < 1e-12);
  ck_assert(fabs(wk_nn_calculate_gain("leaky_relu", NAN) - sqrt(2 / 1.0001)) < 1e-12);
  ck_assert(fabs(wk_nn_calculate_gain("relu", 0) - sqrt(2.0)) < 1e-12);
  ck_assert(isnan(wk_nn_calculate_gain("swish", 0)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "Unsupported nonlinearity swish");
  ck_assert_int_eq(wk_nn_init_xavier_uniform_(wk_zeros(WK_SHAPE(5), (wk_options){0}), 1), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions");
  ck_assert_int_eq(wk_nn_init_kaiming_uniform_(w, 0, "fan_avg", NULL), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "Mode fan_avg not supported");
  wk_module_release(fc);
  wk_module_release(cv);
  wk_module_release(emb);
  wk_module_release(bn);
  wk_scope_end();
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- model zoo ---- */
START_TEST(test_nn_resnet18_matches_torchvision) {
  int64_t live = wk_live_tensors();
  wk_scope_begin();
  wk_module *r = wk_nn_resnet18((wk_resnet_opts){.num_classes = 10});
  TU_NOTNULL(r);
  ck_assert_int_eq(wk_module_num_parameters(r, false), NN_REF_RESNET18_PARAMS);
  ck_assert_int_eq(wk_module_num_parameters(r, false), 11181642);
  wk_state_dict *sd = wk_module_state_dict(r);
  ck_assert_int_eq(wk_state_dict_size(sd), NN_REF_RESNET18_NKEYS);
  /* every torchvision key, same sizes (the core orders all parameters before
   * all buffers, where PyTorch interleaves them per module: compared as a set) */
  for (int i = 0; i < NN_REF_RESNET18_NKEYS; i++) {
    wk_tensor *v = wk_state_dict_get(sd, NN_REF_RESNET18_KEYS[i]);
    ck_assert_msg(v != NULL, "missing key %s", NN_REF_RESNET18_KEYS[i]);
    ck_assert_int_eq(wk_tensor_numel(v), NN_REF_RESNET18_NUMEL[i]);
  }
  /* parameters alone come in torchvision's order */
  const char *pn[128];
  int np = wk_module_named_parameters(r, pn, NULL, 128), j = 0;
  for (int i = 0; i < NN_REF_RESNET18_NKEYS && j < np; i++)
    if (!strstr(NN_REF_RESNET18_KEYS[i], "running_") && !strstr(NN_REF_RESNET18_KEYS[i], "num_batches"))
      ck_assert_str_eq(pn[j++], NN_REF_RESNET18_KEYS[i]);
  ck_assert_int_eq(j, np);
  wk_state_dict_free(sd);
  repr_keep(r, "resnet18");
  /* forward on a small image; train mode updates the BN running stats */
  wk_tensor *x = wk_randn(WK_SHAPE(2, 3, 32, 32), (wk_options){0});
  wk_tensor *y = wk_module_forward(r, x);
  TU_NOTNULL(y);
  ck_assert_int_eq(wk_tensor_size(y, 0), 2);
  ck_assert_int_eq(wk_tensor_size(y, 1), 10);
  int64_t nbt = 0;
  TU_OK(wk_item_i64(wk_module_buffer(r, "layer3.1.bn2.num_batches_tracked"), &nbt));
  ck_assert_int_eq(nbt, 1);
  TU_OK(wk_backward(wk_nn_cross_entropy(y, TU_T(WK_I64, (2), 3, 7), (wk_loss_opts){0})));
  ck_assert_ptr_nonnull(wk_tensor_grad(wk_module_param(r, "conv1.weight")));
  ck_assert_ptr_nonnull(wk_tensor_grad(wk_module_param(r, "layer4.0.downsample.0.weight")));
  wk_module_release(r);
  /* resnet34 / resnet50 / CIFAR stem */
  r = wk_nn_resnet34((wk_resnet_opts){0});
  ck_assert_int_eq(wk_module_num_parameters(r, false), NN_REF_RESNET34_PARAMS);
  wk_module_release(r);
  r = wk_nn_resnet50((wk_resnet_opts){0});
  ck_assert_int_eq(wk_module_num_parameters(r, false), NN_REF_RESNET50_PARAMS);
  sd = wk_module_state_dict(r);
  ck_assert_int_eq(wk_state_dict_size(sd), NN_REF_RESNET50_NKEYS);
  wk_state_dict_free(sd);
  wk_module_release(r);
  r = wk_nn_resnet18((wk_resnet_opts){.num_classes = 10, .cifar_stem = true});
  ck_assert_int_eq(wk_tensor_size(wk_module_param(r, "conv1.weight"), 3), 3);
  ck_assert_ptr_null(wk_module_child(r, "maxpool"));
  wk_clear_error();
  TU_OK(wk_module_train(r, false));
  y = wk_module_forward(r, wk_randn(WK_SHAPE(1, 3, 16, 16), (wk_options){0}));
  TU_NOTNULL(y);
  ck_assert_int_eq(wk_tensor_size(y, 1), 10);
  wk_module_release(r);
  wk_scope_end();
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_nn_mlp_and_lenet) {
  int64_t live = wk_live_tensors();
  wk_scope_begin();
  wk_module *m = wk_nn_mlp(784, (const int64_t[]){256, 64}, 2, 10);
  ck_assert_int_eq(wk_module_num_parameters(m, false), 784 * 256 + 256 + 256 * 64 + 64 + 64 * 10 + 10);
  char *s = wk_module_to_string(m);
  ck_assert_str_eq(s, "Sequential(\n  (0): Linear(in_features=784, out_features=256, bias=True)\n  (1): ReLU()\n"
                      "  (2): Linear(in_features=256, out_features=64, bias=True)\n  (3): ReLU()\n"
                      "  (4): Linear(in_features=64, out_features=10, bias=True)\n)");
  wk_free(s);
  wk_tensor *y = wk_module_forward(m, wk_randn(WK_SHAPE(3, 784), (wk_options){0}));
  ck_assert_int_eq(wk_tensor_size(y, 1), 10);
  wk_module_release(m);
  m = wk_nn_lenet();
  ck_assert_int_eq(wk_module_num_parameters(m, false), 320 + 18496 + 3136 * 128 + 128 + 1290);
  y = wk_module_forward(m, wk_randn(WK_SHAPE(2, 1, 28, 28), (wk_options){0}));
  TU_NOTNULL(y);
  ck_assert_int_eq(wk_tensor_size(y, 0), 2);
  ck_assert_int_eq(wk_tensor_size(y, 1), 10);
  TU_OK(wk_backward(wk_sum(y)));
  ck_assert_ptr_nonnull(wk_tensor_grad(wk_module_param(m, "0.weight")));
  wk_module_release(m);
  wk_scope_end();
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* A Sequential releases each intermediate once the next layer has run (as
 * PyTorch's refcounts do): at the last layer of a no-grad forward through
 * four layers only the input and the current activation are alive. */
static int64_t g_live_at_probe;
static wk_tensor *probe_forward(wk_module *self, wk_tensor *const *in, int n) {
  (void)self, (void)n;
  g_live_at_probe = wk_live_tensors();
  return wk_alias(in[0]);
}
static const wk_module_class PROBE = {sizeof(wk_module_class), "Probe", probe_forward, NULL, NULL};

START_TEST(test_nn_sequential_releases_intermediates) {
  wk_scope_begin();
  wk_tensor *x = tu_rand(WK_SHAPE(8, 16), WK_F32, -1, 1, 3);
  wk_module *layers[5] = {wk_nn_linear(16, 16, true), wk_nn_relu(), wk_nn_linear(16, 16, true), wk_nn_sigmoid(),
                          wk_module_new(&PROBE, NULL)};
  wk_module *seq = wk_nn_sequential(layers, 5);
  TU_NOTNULL(seq);
  int64_t before = wk_live_tensors();
  wk_no_grad_begin();
  wk_tensor *y = wk_module_forward(seq, x);
  wk_no_grad_end();
  TU_NOTNULL(y);
  ck_assert_msg(g_live_at_probe <= before + 1, "%lld tensors alive at the last layer, %lld before the forward",
                (long long)g_live_at_probe, (long long)before);
  /* with autograd the graph keeps what backward needs, and backward still works */
  TU_OK(wk_backward(wk_sum(wk_module_forward(seq, x))));
  TU_NOTNULL(wk_tensor_grad(wk_module_param(seq, "0.weight")));
  wk_module_release(seq);
  wk_scope_end();
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("nn");
  TCase *tc = tcase_create("layers");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_set_timeout(tc, 60);
  tcase_add_loop_test(tc, test_nn_layer_forward_vs_torch, 0, N_MODULE_CASES);
  tcase_add_test(tc, test_nn_batchnorm_train_eval_vs_torch);
  tcase_add_test(tc, test_nn_dropout_train_eval);
  tcase_add_test(tc, test_nn_repr_and_containers);
  tcase_add_test(tc, test_nn_sequential_releases_intermediates);
  tcase_add_test(tc, test_nn_errors_name_layer_and_shapes);
  tcase_add_test(tc, test_nn_gradcheck_layers_and_losses);
  suite_add_tcase(s, tc);
  tc = tcase_create("losses");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_test(tc, test_nn_losses_vs_torch);
  suite_add_tcase(s, tc);
  tc = tcase_create("init");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_test(tc, test_nn_init_defaults_and_functions);
  suite_add_tcase(s, tc);
  tc = tcase_create("zoo");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_nn_resnet18_matches_torchvision);
  tcase_add_test(tc, test_nn_mlp_and_lenet);
  suite_add_tcase(s, tc);
  return s;
}
TU_MAIN(make_suite)
