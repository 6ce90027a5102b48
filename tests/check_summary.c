/* Check suite: module forward hooks and the call stack, modules on the meta
 * device (the zoo's ResNets run with no data), and wk_module_summary's figures
 * and layout (torchinfo 1.8) for the zoo and a user module. */
#include <stddef.h>
#include <sys/resource.h>
#include <time.h>
#include <wick/nn.h>

#include "testutil.h"

/* ---- a user module: y = relu(fc2(relu(fc1(x)))) @ W ---- */
static wk_tensor *net_forward(wk_module *self, wk_tensor *const *in, int n) {
  (void)n;
  wk_module *act = wk_module_child(self, "act");
  wk_tensor *a = wk_module_forward(wk_module_child(self, "fc1"), in[0]);
  wk_tensor *h = wk_module_forward(act, a);
  wk_tensor *b = wk_module_forward(wk_module_child(self, "fc2"), h);
  wk_tensor *y = wk_module_forward(act, b);
  wk_tensor *r = wk_matmul(y, wk_module_param(self, "W"));
  wk_release(a); /* every intermediate, also when a child failed (NULL is fine) */
  wk_release(h);
  wk_release(b);
  wk_release(y);
  return r;
}
static const wk_module_class NET = {sizeof(wk_module_class), "Net", net_forward, NULL, NULL};

static wk_module *make_net(void) {
  wk_module *m = wk_module_new(&NET, NULL);
  wk_module *fc1 = wk_nn_linear(8, 16, true), *act = wk_nn_relu(), *fc2 = wk_nn_linear(16, 4, true);
  wk_tensor *w = wk_ones(WK_SHAPE(4, 4), (wk_options){0});
  ck_assert(m && fc1 && act && fc2 && w);
  TU_OK(wk_module_register_child(m, "fc1", fc1));
  TU_OK(wk_module_register_child(m, "act", act));
  TU_OK(wk_module_register_child(m, "fc2", fc2));
  TU_OK(wk_module_register_parameter(m, "W", w));
  wk_module_release(fc1);
  wk_module_release(act);
  wk_module_release(fc2);
  wk_release(w);
  return m;
}

/* ---- hooks ---- */
typedef struct {
  char log[256];
  int depth_seen;
} trace;

static void note(trace *t, const char *what, wk_module *m) {
  size_t k = strlen(t->log);
  snprintf(t->log + k, sizeof t->log - k, "%s%s:%s", k ? " " : "", what, wk_module_class_name(m));
}
static wk_status pre_a(void *u, wk_module *m, wk_tensor *const *in, int n) {
  (void)in, (void)n;
  note(u, "preA", m);
  return WK_OK;
}
static wk_status pre_global(void *u, wk_module *m, wk_tensor *const *in, int n) {
  (void)in, (void)n;
  note(u, "preG", m);
  trace *t = u;
  int d = wk_module_call_stack(NULL, 0);
  if (d > t->depth_seen) t->depth_seen = d;
  return WK_OK;
}
static wk_status post_a(void *u, wk_module *m, wk_tensor *const *in, int n, wk_tensor **out) {
  (void)in, (void)n, (void)out;
  note(u, "postA", m);
  return WK_OK;
}
static wk_status post_double(void *u, wk_module *m, wk_tensor *const *in, int n, wk_tensor **out) {
  (void)u, (void)m, (void)in, (void)n;
  wk_tensor *d = wk_mul_scalar(*out, 2.0);
  if (!d) return wk_last_error();
  wk_release(*out);
  *out = d;
  return WK_OK;
}
static wk_status pre_fail(void *u, wk_module *m, wk_tensor *const *in, int n) {
  (void)u, (void)in, (void)n;
  return wk_error(WK_ERR_INVALID_ARG, "%s: refused by a hook", wk_module_class_name(m));
}
static wk_status pre_stack(void *u, wk_module *m, wk_tensor *const *in, int n) {
  (void)in, (void)n;
  wk_module *st[8];
  int d = wk_module_call_stack(st, 8);
  ck_assert_int_eq(d, 2);
  ck_assert_ptr_eq(st[1], m);
  ck_assert_ptr_eq(st[0], u);
  return WK_OK;
}

START_TEST(test_summary_hooks_run_in_order) {
  wk_module *net = make_net();
  wk_module *fc1 = wk_module_child(net, "fc1");
  trace t = {{0}, 0};
  int64_t a = wk_module_register_forward_pre_hook(fc1, pre_a, &t);
  int64_t b = wk_module_register_forward_hook(fc1, post_a, &t);
  int64_t g = wk_module_register_forward_pre_hook(NULL, pre_global, &t);
  ck_assert(a > 0 && b > 0 && g > 0 && a != b);
  wk_tensor *x = wk_ones(WK_SHAPE(2, 8), (wk_options){0});
  wk_tensor *y = wk_module_forward(net, x);
  TU_NOTNULL(y);
  ck_assert_str_eq(t.log, "preG:Net preG:Linear preA:Linear postA:Linear preG:ReLU preG:Linear preG:ReLU");
  ck_assert_int_eq(t.depth_seen, 2);
  ck_assert_int_eq(wk_module_call_stack(NULL, 0), 0);
  TU_OK(wk_module_remove_hook(fc1, a));
  TU_OK(wk_module_remove_hook(fc1, b));
  TU_OK(wk_module_remove_hook(NULL, g));
  ck_assert_int_eq(wk_module_remove_hook(NULL, g), WK_ERR_NOT_FOUND);
  ck_assert_int_eq(wk_module_remove_hook(fc1, a), WK_ERR_NOT_FOUND);
  wk_clear_error();
  t.log[0] = 0;
  wk_release(y);
  y = wk_module_forward(net, x);
  ck_assert_str_eq(t.log, ""); /* removed hooks stay silent */
  /* a forward hook replaces the output */
  wk_module *fc2 = wk_module_child(net, "fc2");
  int64_t d = wk_module_register_forward_hook(fc2, post_double, NULL);
  wk_tensor *y2 = wk_module_forward(net, x);
  TU_NOTNULL(y2);
  wk_tensor *s1 = wk_sum(y), *s2 = wk_sum(y2);
  double v1, v2;
  TU_OK(wk_item(s1, &v1));
  TU_OK(wk_item(s2, &v2));
  ck_assert_double_eq_tol(v2, 2 * v1, 1e-5 * fabs(v1) + 1e-6);
  wk_release(s1);
  wk_release(s2);
  TU_OK(wk_module_remove_hook(fc2, d));
  /* a failing pre hook stops the forward with its error; the stack unwinds */
  int64_t f = wk_module_register_forward_pre_hook(fc2, pre_fail, NULL);
  ck_assert_ptr_null(wk_module_forward(net, x));
  ck_assert_str_eq(wk_last_error_message(), "Linear: refused by a hook");
  ck_assert_int_eq(wk_module_call_stack(NULL, 0), 0);
  TU_OK(wk_module_remove_hook(fc2, f));
  wk_clear_error();
  /* the call stack inside a child's forward: outermost first */
  int64_t s = wk_module_register_forward_pre_hook(fc1, pre_stack, net);
  wk_release(y2);
  y2 = wk_module_forward(net, x);
  TU_NOTNULL(y2);
  TU_OK(wk_module_remove_hook(fc1, s));
  wk_release(x);
  wk_release(y);
  wk_release(y2);
  wk_module_release(net);
}
END_TEST

START_TEST(test_summary_hooks_bad_arguments) {
  wk_module *net = make_net();
  ck_assert_int_eq(wk_module_register_forward_pre_hook(net, NULL, NULL), 0);
  ck_assert_int_eq(wk_last_error(), WK_ERR_NULL);
  ck_assert_int_eq(wk_module_register_forward_hook(NULL, NULL, NULL), 0);
  ck_assert_int_eq(wk_module_remove_hook(net, 12345), WK_ERR_NOT_FOUND);
  wk_clear_error();
  ck_assert_int_eq(wk_module_named_children(NULL, NULL, NULL, 0), 0);
  const char *names[4];
  wk_module *kids[4];
  ck_assert_int_eq(wk_module_named_children(net, names, kids, 4), 3);
  ck_assert_str_eq(names[2], "fc2");
  ck_assert_ptr_eq(kids[0], wk_module_child(net, "fc1"));
  ck_assert_ptr_null(wk_module_summary(NULL, WK_SHAPE(1, 8), NULL));
  ck_assert_int_eq(wk_last_error(), WK_ERR_NULL);
  wk_clear_error();
  ck_assert_ptr_null(wk_module_summary(net, NULL, 2, NULL));
  wk_clear_error();
  ck_assert_ptr_null(wk_module_summary(net, WK_SHAPE(1, 8), &(wk_summary_opts){sizeof(wk_summary_opts), .depth = -1}));
  ck_assert_int_eq(wk_last_error(), WK_ERR_INVALID_ARG);
  wk_clear_error();
  /* a wrong input shape: the error names the module that failed */
  ck_assert_ptr_null(wk_module_summary(net, WK_SHAPE(1, 7), NULL));
  ck_assert_msg(strstr(wk_last_error_message(), "module_summary: the forward failed in Net > Linear: ") != NULL, "%s",
                wk_last_error_message());
  wk_clear_error();
  wk_module_release(net);
}
END_TEST

/* ---- the meta device ---- */
START_TEST(test_summary_resnets_run_on_meta) {
  static const int depths[3] = {18, 34, 50};
  for (int i = 0; i < 3; i++) {
    wk_module *m = wk_nn_resnet(depths[i], (wk_resnet_opts){0});
    TU_NOTNULL(m);
    wk_device meta = {WK_DEVICE_META, 0};
    TU_OK(wk_module_to(m, meta, WK_DTYPE_DEFAULT));
    int np = wk_module_named_parameters(m, NULL, NULL, 0), nb = wk_module_named_buffers(m, NULL, NULL, 0);
    wk_tensor *ts[1024];
    ck_assert_int_le(np + nb, 1024);
    wk_module_named_parameters(m, NULL, ts, np);
    wk_module_named_buffers(m, NULL, ts + np, nb);
    for (int k = 0; k < np + nb; k++) {
      ck_assert_int_eq(wk_tensor_device(ts[k]).type, WK_DEVICE_META);
      ck_assert_ptr_null(wk_tensor_data(ts[k]));
    }
    int64_t live = wk_live_tensors();
    wk_tensor *x = wk_empty(WK_SHAPE(2, 3, 224, 224), WK_OPTS(.device = meta));
    wk_tensor *y = wk_module_forward(m, x);
    ck_assert_msg(y != NULL, "resnet%d on meta: %s", depths[i], wk_last_error_message());
    ck_assert_int_eq(wk_tensor_dim(y), 2);
    ck_assert_int_eq(wk_tensor_size(y, 0), 2);
    ck_assert_int_eq(wk_tensor_size(y, 1), 1000);
    ck_assert_int_eq(wk_tensor_device(y).type, WK_DEVICE_META);
    ck_assert_ptr_null(wk_tensor_data(y));
    wk_release(y);
    wk_release(x);
    ck_assert_int_eq(wk_live_tensors(), live); /* the forward's temporaries are gone */
    wk_module_release(m);
  }
}
END_TEST

/* ---- summary figures ---- */
START_TEST(test_summary_resnet18_hand_count) {
  wk_module *m = wk_nn_resnet18((wk_resnet_opts){0});
  TU_NOTNULL(m);
  wk_tensor *w = wk_module_param(m, "conv1.weight");
  double w0, w1;
  TU_OK(wk_tensor_get(w, (int64_t[]){0, 0, 0, 0}, &w0));
  wk_summary_stats st = {sizeof st};
  char *s = wk_module_summary(m, WK_SHAPE(1, 3, 224, 224), &(wk_summary_opts){sizeof(wk_summary_opts), .stats = &st});
  ck_assert_msg(s != NULL, "%s", wk_last_error_message());
  ck_assert_int_eq(st.total_params, 11689512);
  ck_assert_int_eq(st.trainable_params, 11689512);
  /* convolutions 1,813,561,344 + fc 512 x 1000 */
  ck_assert_int_eq(st.total_mult_adds, 1814073344);
  ck_assert_int_eq(st.input_bytes, 602112);
  ck_assert_int_eq(st.param_bytes, 46758048);
  ck_assert_int_eq(st.forward_backward_bytes, 39747392); /* torchinfo: 39.75 MB */
  /* ptflops' rule (issue 12's hand count): conv 1,813,561,344 + BatchNorm 2 x 2,483,712
   * + ReLU 2,308,096 (each call of a block's one ReLU) + maxpool input 802,816
   * + avgpool input 25,088 + fc 512,000 + its bias 1,000 */
  ck_assert_int_eq(st.ptflops_macs, 1822177768);
  static const char *const lines[] = {
      "Layer (type:depth-idx)                   Output Shape              Param #                   Mult-Adds\n",
      "\nResNet                                   [1, 1000]                 --                        --\n",
      "├─Conv2d: 1-1                            [1, 64, 112, 112]         9,408                     118,013,952\n",
      "├─BatchNorm2d: 1-2                       [1, 64, 112, 112]         128                       --\n",
      "├─MaxPool2d: 1-4                         [1, 64, 56, 56]           --                        --\n",
      "│    └─BasicBlock: 2-1                   [1, 64, 56, 56]           --                        --\n",
      "│    │    └─Conv2d: 3-1                  [1, 64, 56, 56]           36,864                    115,605,504\n",
      "│    │    └─ReLU: 3-6                    [1, 64, 56, 56]           --                        --\n",
      "│    │    └─Sequential: 3-18             [1, 128, 28, 28]          8,448                     6,422,528\n",
      "├─AdaptiveAvgPool2d: 1-9                 [1, 512, 1, 1]            --                        --\n",
      "├─Linear: 1-10                           [1, 1000]                 513,000                   512,000\n",
      "Total params: 11,689,512\nTrainable params: 11,689,512\nNon-trainable params: 0\nTotal mult-adds (G): 1.81\n"
      "Total MACs, ptflops rule (G): 1.82\n",
      "Input size (MB): 0.60\nForward/backward pass size (MB): 39.75\nParams size (MB): 46.76\n"
      "Estimated Total Size (MB): 87.11\n"};
  for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
    if (!strstr(s, lines[i])) fprintf(stderr, "%s", s);
    ck_assert_msg(strstr(s, lines[i]) != NULL, "missing line %zu: %s", i, lines[i]);
  }
  ck_assert_ptr_null(strstr(s, "Conv2d: 4-")); /* depth 3 folds the downsample's layers */
  wk_free(s);
  /* the model is unchanged: its parameters are back on cpu with their values */
  ck_assert_int_eq(wk_tensor_device(w).type, WK_DEVICE_CPU);
  TU_OK(wk_tensor_get(w, (int64_t[]){0, 0, 0, 0}, &w1));
  ck_assert_double_eq(w1, w0);
  ck_assert_int_eq(wk_module_num_parameters(m, false), 11689512);
  /* depth 1: one row per child of the model, each with its whole count */
  s = wk_module_summary(m, WK_SHAPE(1, 3, 224, 224), &(wk_summary_opts){sizeof(wk_summary_opts), .depth = 1});
  TU_NOTNULL(s);
  ck_assert_ptr_nonnull(strstr(s, "├─Sequential: 1-5                        [1, 64, 56, 56]           147,968                   462,422,016\n"));
  ck_assert_ptr_null(strstr(s, "BasicBlock"));
  wk_free(s);
  wk_module_release(m);
}
END_TEST

START_TEST(test_summary_resnet34_50_params) {
  /* pt: ptflops' rule, counted by hand as for ResNet-18 (ptflops' table: 3.68 and 4.12 GMac) */
  static const struct {
    int depth;
    int64_t params, macs, pt;
  } want[] = {{34, 21797672, 3663761408, 3675629032}, {50, 25557032, 4089184256, 4121925096}};
  for (int i = 0; i < 2; i++) {
    wk_module *m = wk_nn_resnet(want[i].depth, (wk_resnet_opts){0});
    TU_NOTNULL(m);
    TU_OK(wk_module_to(m, (wk_device){WK_DEVICE_META, 0}, WK_DTYPE_DEFAULT));
    wk_summary_stats st = {sizeof st};
    char *s = wk_module_summary(m, WK_SHAPE(1, 3, 224, 224), &(wk_summary_opts){sizeof(wk_summary_opts), .stats = &st});
    ck_assert_msg(s != NULL, "%s", wk_last_error_message());
    ck_assert_int_eq(st.total_params, want[i].params);
    ck_assert_int_eq(st.total_mult_adds, want[i].macs);
    ck_assert_int_eq(st.ptflops_macs, want[i].pt);
    wk_free(s);
    wk_module_release(m);
  }
}
END_TEST

START_TEST(test_summary_user_module_layout) {
  wk_module *net = make_net();
  wk_summary_stats st = {sizeof st};
  char *s = wk_module_summary(net, WK_SHAPE(2, 8), &(wk_summary_opts){sizeof(wk_summary_opts), .stats = &st});
  ck_assert_msg(s != NULL, "%s", wk_last_error_message());
  const char *want =
      "===================================================================================================================\n"
      "Layer (type:depth-idx)                   Output Shape              Param #                   Mult-Adds\n"
      "===================================================================================================================\n"
      "Net                                      [2, 4]                    16                        32\n"
      "├─Linear: 1-1                            [2, 16]                   144                       256\n"
      "├─ReLU: 1-2                              [2, 16]                   --                        --\n"
      "├─Linear: 1-3                            [2, 4]                    68                        128\n"
      "├─ReLU: 1-4                              [2, 4]                    --                        --\n"
      "===================================================================================================================\n"
      "Total params: 228\n"
      "Trainable params: 228\n"
      "Non-trainable params: 0\n"
      "Total mult-adds (M): 0.00\n"
      "Total MACs, ptflops rule (M): 0.00\n"
      "===================================================================================================================\n"
      "Input size (MB): 0.00\n"
      "Forward/backward pass size (MB): 0.00\n"
      "Params size (MB): 0.00\n"
      "Estimated Total Size (MB): 0.00\n"
      "===================================================================================================================\n";
  ck_assert_str_eq(s, want);
  ck_assert_int_eq(st.total_mult_adds, 416);
  /* ptflops: fc1 256 + bias 32, relu 32, fc2 128 + bias 8, relu 8; Net's own matmul is functional */
  ck_assert_int_eq(st.ptflops_macs, 464);
  ck_assert_int_eq(st.forward_backward_bytes, 320);
  wk_free(s);
  /* frozen parameters print in parentheses and count as non-trainable */
  TU_OK(wk_tensor_set_requires_grad(wk_module_param(net, "fc1.weight"), false));
  TU_OK(wk_tensor_set_requires_grad(wk_module_param(net, "fc1.bias"), false));
  s = wk_module_summary(net, WK_SHAPE(2, 8), &(wk_summary_opts){sizeof(wk_summary_opts), .stats = &st});
  TU_NOTNULL(s);
  ck_assert_ptr_nonnull(strstr(s, "├─Linear: 1-1                            [2, 16]                   (144)"));
  ck_assert_ptr_nonnull(strstr(s, "Non-trainable params: 144\n"));
  ck_assert_int_eq(st.trainable_params, 84);
  wk_free(s);
  /* a caller built against ABI 1.1's struct: the appended field is not written */
  wk_summary_stats old = {offsetof(wk_summary_stats, ptflops_macs), .ptflops_macs = -7};
  s = wk_module_summary(net, WK_SHAPE(2, 8), &(wk_summary_opts){sizeof(wk_summary_opts), .stats = &old});
  TU_NOTNULL(s);
  ck_assert_int_eq(old.struct_size, offsetof(wk_summary_stats, ptflops_macs));
  ck_assert_int_eq(old.total_mult_adds, 416);
  ck_assert_int_eq(old.ptflops_macs, -7);
  wk_free(s);
  /* on cpu, with data: the same figures */
  s = wk_module_summary(net, WK_SHAPE(2, 8), &(wk_summary_opts){sizeof(wk_summary_opts), .device = {WK_DEVICE_CPU, 0}});
  ck_assert_msg(s != NULL, "%s", wk_last_error_message());
  ck_assert_ptr_nonnull(strstr(s, "├─Linear: 1-3                            [2, 4]                    68                        128\n"));
  wk_free(s);
  wk_module_release(net);
}
END_TEST

/* ptflops' rule for the layers the ResNets don't use: bias-free convs,
 * ConvTranspose2d (per input position), GroupNorm, non-affine BatchNorm,
 * AvgPool2d, LeakyReLU, LayerNorm, bias-free Linear; Flatten counts nothing. */
START_TEST(test_summary_ptflops_rule_layers) {
  wk_module *mods[] = {
      wk_nn_conv2d(3, 4, 3, (wk_conv2d_opts){.padding = 1, .no_bias = true}), /* 25 x 4 x 27 = 2,700 */
      wk_nn_conv_transpose2d(4, 8, 3, (wk_conv2d_opts){.stride = 2}), /* 25 x 4 x 8 x 9 + bias 8 x 11 x 11 = 8,168 */
      wk_nn_group_norm(2, 8, (wk_norm_opts){0}),                      /* 2 x 968 */
      wk_nn_batch_norm2d(8, (wk_norm_opts){.no_affine = true}),       /* 968 */
      wk_nn_avg_pool2d(2, (wk_pool2d_opts){0}),                       /* input 968 -> [1, 8, 5, 5] */
      wk_nn_leaky_relu(0.1),                                          /* 200 */
      wk_nn_flatten(1, -1),                                           /* 0 */
      wk_nn_layer_norm(WK_SHAPE(200), (wk_norm_opts){0}),             /* 2 x 200 */
      wk_nn_linear(200, 3, false)};                                   /* 600 */
  for (size_t i = 0; i < sizeof mods / sizeof *mods; i++) ck_assert_msg(mods[i] != NULL, "%zu: %s", i, wk_last_error_message());
  wk_module *net = wk_nn_sequential(mods, (int)(sizeof mods / sizeof *mods)); /* takes the references */
  TU_NOTNULL(net);
  wk_summary_stats st = {sizeof st};
  char *s = wk_module_summary(net, WK_SHAPE(1, 3, 5, 5), &(wk_summary_opts){sizeof(wk_summary_opts), .stats = &st});
  ck_assert_msg(s != NULL, "%s", wk_last_error_message());
  ck_assert_int_eq(st.ptflops_macs, 2700 + 8168 + 1936 + 968 + 968 + 200 + 400 + 600);
  ck_assert_ptr_nonnull(strstr(s, "Total MACs, ptflops rule (M): 0.02\n"));
  wk_free(s);
  /* batch 3: three times every count */
  s = wk_module_summary(net, WK_SHAPE(3, 3, 5, 5), &(wk_summary_opts){sizeof(wk_summary_opts), .stats = &st});
  ck_assert_msg(s != NULL, "%s", wk_last_error_message());
  ck_assert_int_eq(st.ptflops_macs, 3 * (2700 + 8168 + 1936 + 968 + 968 + 200 + 400 + 600));
  wk_free(s);
  wk_module_release(net);
}
END_TEST

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Not a timed test: prints ResNet-50 at batch 256 for the record. */
START_TEST(test_summary_resnet50_batch256_cost) {
  wk_module *m = wk_nn_resnet50((wk_resnet_opts){0});
  TU_NOTNULL(m);
  TU_OK(wk_module_to(m, (wk_device){WK_DEVICE_META, 0}, WK_DTYPE_DEFAULT));
  wk_summary_stats st = {sizeof st};
  double t0 = now_ms();
  char *s = wk_module_summary(m, WK_SHAPE(256, 3, 224, 224), &(wk_summary_opts){sizeof(wk_summary_opts), .stats = &st});
  double t1 = now_ms();
  ck_assert_msg(s != NULL, "%s", wk_last_error_message());
  ck_assert_int_eq(st.total_mult_adds, 256 * 4089184256LL);
  ck_assert_int_eq(st.ptflops_macs, 256 * 4121925096LL); /* batch N: N x every count */
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  fprintf(stderr, "check_summary: resnet50 batch 256 summarised in %.1f ms (peak RSS of this test process %.1f MB)\n",
          t1 - t0, ru.ru_maxrss / 1024.0);
  wk_free(s);
  wk_module_release(m);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("summary");
  TCase *tc = tcase_create("summary");
  tcase_set_timeout(tc, 120);
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_test(tc, test_summary_hooks_run_in_order);
  tcase_add_test(tc, test_summary_hooks_bad_arguments);
  tcase_add_test(tc, test_summary_resnets_run_on_meta);
  tcase_add_test(tc, test_summary_resnet18_hand_count);
  tcase_add_test(tc, test_summary_resnet34_50_params);
  tcase_add_test(tc, test_summary_user_module_layout);
  tcase_add_test(tc, test_summary_ptflops_rule_layers);
  tcase_add_test(tc, test_summary_resnet50_batch256_cost);
  suite_add_tcase(s, tc);
  return s;
}
TU_MAIN(make_suite)
