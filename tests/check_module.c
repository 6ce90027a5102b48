/* check_module: the module object model with a user-defined model written
 * the way a C user would (the seed's SimpleNet: fc1, relu, fc2). */
#include <wick/nn.h>

#include "testutil.h"

/* ---- a user's Linear and ReLU, as plain C ---- */
typedef struct {
  int64_t in, out;
  bool bias;
} lin_state;

static wk_tensor *lin_forward(wk_module *self, wk_tensor *const *in, int n) {
  (void)n;
  return wk_linear(in[0], wk_module_param(self, "weight"), wk_module_param(self, "bias"));
}
static char *lin_repr(const wk_module *self) {
  const lin_state *s = wk_module_state(self);
  char *r = malloc(96);
  snprintf(r, 96, "in_features=%lld, out_features=%lld, bias=%s", (long long)s->in, (long long)s->out,
           s->bias ? "True" : "False");
  return r;
}
static const wk_module_class LINEAR = {sizeof(wk_module_class), "Linear", lin_forward, free, lin_repr};

static wk_module *my_linear(int64_t in, int64_t out, bool bias) {
  lin_state *s = malloc(sizeof *s);
  *s = (lin_state){in, out, bias};
  wk_module *m = wk_module_new(&LINEAR, s);
  wk_tensor *w = wk_mul_scalar(wk_randn(WK_SHAPE(out, in), (wk_options){0}), 0.5);
  wk_module_register_parameter(m, "weight", w);
  wk_tensor *b = bias ? wk_zeros(WK_SHAPE(out), (wk_options){0}) : NULL;
  wk_module_register_parameter(m, "bias", b);
  return m;
}

static wk_tensor *relu_forward(wk_module *self, wk_tensor *const *in, int n) { return wk_relu(in[0]); }
static const wk_module_class RELU = {sizeof(wk_module_class), "ReLU", relu_forward, NULL, NULL};

/* SimpleNet: forward calls its children by name, like nn.Module. */
static wk_tensor *net_forward(wk_module *self, wk_tensor *const *in, int n) {
  wk_tensor *h = wk_module_forward(wk_module_child(self, "fc1"), in[0]);
  wk_tensor *a = wk_module_forward(wk_module_child(self, "relu"), h);
  wk_tensor *o = wk_module_forward(wk_module_child(self, "fc2"), a);
  wk_release(h);
  wk_release(a);
  return o;
}
static const wk_module_class SIMPLENET = {sizeof(wk_module_class), "SimpleNet", net_forward, NULL, NULL};

static wk_module *simple_net(void) {
  wk_module *net = wk_module_new(&SIMPLENET, NULL), *fc1 = my_linear(4, 3, true), *relu = wk_module_new(&RELU, NULL),
            *fc2 = my_linear(3, 2, true);
  wk_module_register_child(net, "fc1", fc1);
  wk_module_register_child(net, "relu", relu);
  wk_module_register_child(net, "fc2", fc2);
  wk_module_release(fc1); /* the parent holds them now */
  wk_module_release(relu);
  wk_module_release(fc2);
  return net;
}

START_TEST(test_module_simplenet_walks_and_prints) {
  wk_scope_begin();
  wk_module *net = simple_net();
  const char *names[8];
  wk_tensor *ps[8];
  ck_assert_int_eq(wk_module_named_parameters(net, names, ps, 8), 4);
  ck_assert_str_eq(names[0], "fc1.weight");
  ck_assert_str_eq(names[3], "fc2.bias");
  ck_assert(wk_tensor_requires_grad(ps[0]) && wk_tensor_is_leaf(ps[0]));
  ck_assert_int_eq(wk_module_num_parameters(net, false), 4 * 3 + 3 + 3 * 2 + 2);
  ck_assert_ptr_eq(wk_module_param(net, "fc2.weight"), ps[2]);
  ck_assert_ptr_null(wk_module_param(net, "fc3.weight"));
  TU_FAILS_WITH(WK_ERR_NOT_FOUND, "SimpleNet has no parameter 'fc3.weight'");
  char *s = wk_module_to_string(net);
  ck_assert_str_eq(s, "SimpleNet(\n"
                      "  (fc1): Linear(in_features=4, out_features=3, bias=True)\n"
                      "  (relu): ReLU()\n"
                      "  (fc2): Linear(in_features=3, out_features=2, bias=True)\n"
                      ")");
  wk_free(s);
  /* forward + backward reach every parameter */
  wk_tensor *x = wk_randn(WK_SHAPE(5, 4), (wk_options){0});
  wk_tensor *y = wk_module_forward(net, x);
  TU_NOTNULL(y);
  ck_assert_int_eq(wk_tensor_size(y, 1), 2);
  TU_OK(wk_backward(wk_sum(y)));
  for (int i = 0; i < 4; i++) ck_assert_ptr_nonnull(wk_tensor_grad(ps[i]));
  TU_OK(wk_module_zero_grad(net, true));
  for (int i = 0; i < 4; i++) ck_assert_ptr_null(wk_tensor_grad(ps[i]));
  /* train/eval reach the children */
  TU_OK(wk_module_train(net, false));
  ck_assert(!wk_module_is_training(wk_module_child(net, "fc2")));
  TU_OK(wk_module_train(net, true));
  ck_assert(wk_module_is_training(wk_module_child(net, "relu")));
  wk_module_release(net);
  wk_scope_end();
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

START_TEST(test_module_state_dict_round_trip_and_reports) {
  wk_scope_begin();
  wk_module *a = simple_net(), *b = simple_net();
  wk_state_dict *sd = wk_module_state_dict(a);
  ck_assert_int_eq(wk_state_dict_size(sd), 4);
  ck_assert_str_eq(wk_state_dict_key(sd, 1), "fc1.bias");
  TU_OK(wk_module_load_state_dict(b, sd, true, NULL));
  wk_tensor *x = wk_randn(WK_SHAPE(2, 4), (wk_options){0});
  double *ya = tu_values(wk_module_forward(a, x)), *yb = tu_values(wk_module_forward(b, x));
  for (int i = 0; i < 4; i++) ck_assert(ya[i] == yb[i]);
  free(ya);
  free(yb);
  /* strict: missing, unexpected and mismatched keys are all listed, nothing copied */
  wk_state_dict *bad = wk_state_dict_new();
  TU_OK(wk_state_dict_set(bad, "fc1.weight", wk_zeros(WK_SHAPE(3, 5), (wk_options){0})));
  TU_OK(wk_state_dict_set(bad, "fc1.bias", wk_ones(WK_SHAPE(3), (wk_options){0})));
  TU_OK(wk_state_dict_set(bad, "extra.thing", wk_ones(WK_SHAPE(1), (wk_options){0})));
  wk_load_report r;
  ck_assert_int_eq(wk_module_load_state_dict(b, bad, true, &r), WK_ERR_SHAPE);
  ck_assert_int_eq(r.n_missing, 2);
  ck_assert_int_eq(r.n_unexpected, 1);
  ck_assert_int_eq(r.n_mismatched, 1);
  ck_assert_str_eq(r.missing[0], "fc2.weight");
  ck_assert_str_eq(r.unexpected[0], "extra.thing");
  TU_FAILS_WITH(WK_ERR_SHAPE, "Error(s) in loading state_dict for SimpleNet:\n\tMissing key(s) in state_dict: \"fc2.weight\", "
                              "\"fc2.bias\"\n\tUnexpected key(s) in state_dict: \"extra.thing\"\n\tsize mismatch for "
                              "fc1.weight: copying a param with shape [3, 5] from checkpoint, the shape in current model "
                              "is [3, 4].");
  TU_EQ_VALS(wk_module_param(b, "fc1.bias"), 0, 0, 0); /* untouched */
  wk_load_report_clear(&r);
  /* non-strict loads what matches, reports the rest */
  TU_OK(wk_module_load_state_dict(b, bad, false, &r));
  ck_assert_int_eq(r.n_missing, 2);
  TU_EQ_VALS(wk_module_param(b, "fc1.bias"), 1, 1, 1);
  wk_load_report_clear(&r);
  /* a checkpoint in float64 loads into float32 parameters */
  wk_state_dict *dbl = wk_state_dict_new();
  for (int i = 0; i < wk_state_dict_size(sd); i++)
    TU_OK(wk_state_dict_set(dbl, wk_state_dict_key(sd, i), wk_to_dtype(wk_state_dict_value(sd, i), WK_F64)));
  TU_OK(wk_module_load_state_dict(b, dbl, true, NULL));
  ck_assert_int_eq(wk_tensor_dtype(wk_module_param(b, "fc1.weight")), WK_F32);
  wk_state_dict_free(sd);
  wk_state_dict_free(bad);
  wk_state_dict_free(dbl);
  wk_module_release(a);
  wk_module_release(b);
  wk_scope_end();
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

START_TEST(test_module_to_keeps_parameter_identity) {
  wk_scope_begin();
  wk_module *net = simple_net();
  wk_tensor *w = wk_module_param(net, "fc1.weight");
  double before;
  TU_OK(wk_tensor_get(w, (int64_t[]){1, 2}, &before));
  TU_OK(wk_module_to(net, (wk_device){0, 0}, WK_F64));
  ck_assert_ptr_eq(wk_module_param(net, "fc1.weight"), w);
  ck_assert_int_eq(wk_tensor_dtype(w), WK_F64);
  ck_assert(wk_tensor_requires_grad(w));
  double after;
  TU_OK(wk_tensor_get(w, (int64_t[]){1, 2}, &after));
  ck_assert(before == after);
  wk_tensor *x = wk_randn(WK_SHAPE(2, 4), WK_OPTS(.dtype = WK_F64));
  TU_OK(wk_backward(wk_sum(wk_module_forward(net, x))));
  ck_assert_int_eq(wk_tensor_dtype(wk_tensor_grad(w)), WK_F64);
  ck_assert_int_eq(wk_module_to(net, (wk_device){0, 0}, WK_I64), WK_ERR_DTYPE);
  TU_FAILS_WITH(WK_ERR_DTYPE, "only accepts floating point dtypes");
  wk_module_release(net);
  wk_scope_end();
}
END_TEST

START_TEST(test_module_buffers_none_shared_and_errors) {
  wk_scope_begin();
  wk_module *m = my_linear(2, 2, false);
  ck_assert_ptr_null(wk_module_param(m, "bias")); /* None, not an error */
  ck_assert_int_eq(wk_last_error(), WK_OK);
  ck_assert_int_eq(wk_module_named_parameters(m, NULL, NULL, 0), 1);
  TU_OK(wk_module_register_buffer(m, "running_mean", wk_zeros(WK_SHAPE(2), (wk_options){0}), true));
  TU_OK(wk_module_register_buffer(m, "scratch", wk_zeros(WK_SHAPE(2), (wk_options){0}), false));
  wk_state_dict *sd = wk_module_state_dict(m);
  ck_assert_int_eq(wk_state_dict_size(sd), 2); /* weight + persistent buffer */
  ck_assert_ptr_nonnull(wk_state_dict_get(sd, "running_mean"));
  wk_state_dict_free(sd);
  ck_assert_int_eq(wk_module_register_parameter(m, "weight", NULL), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "attribute 'weight' already exists in Linear");
  ck_assert_int_eq(wk_module_register_parameter(m, "a.b", NULL), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "can't be empty or contain \".\"");
  wk_tensor *nonleaf = wk_mul_scalar(wk_module_param(m, "weight"), 2);
  ck_assert_int_eq(wk_module_register_parameter(m, "w2", nonleaf), WK_ERR_AUTOGRAD);
  TU_FAILS_WITH(WK_ERR_AUTOGRAD, "a parameter must be a leaf tensor");
  ck_assert_int_eq(wk_module_register_child(m, "self", m), WK_ERR_INVALID_ARG);
  wk_clear_error();
  /* a shared parameter appears once in walks */
  wk_module *tied = wk_module_new(&SIMPLENET, NULL);
  wk_module_register_child(tied, "fc1", m);
  wk_module_register_child(tied, "fc2", m);
  ck_assert_int_eq(wk_module_named_parameters(tied, NULL, NULL, 0), 1);
  ck_assert_int_eq(wk_module_num_parameters(tied, false), 4);
  ck_assert_ptr_null(wk_module_new(NULL, NULL));
  TU_FAILS_WITH(WK_ERR_NULL, "module_new");
  ck_assert_ptr_null(wk_module_forward(NULL, NULL));
  wk_clear_error();
  wk_module_release(NULL);
  wk_module_release(tied);
  wk_module_release(m);
  wk_scope_end();
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

/* Transfer learning: resnet18's fc replaced by a 10-class head (built on meta). */
START_TEST(test_module_set_child_replaces_in_place) {
  wk_scope_begin();
  wk_device meta = {WK_DEVICE_META, 0};
  wk_device prev = wk_set_default_device(meta);
  wk_module *net = wk_nn_resnet(18, (wk_resnet_opts){0});
  wk_module *head = wk_nn_linear(512, 10, true);
  wk_set_default_device(prev);
  TU_NOTNULL(net);
  TU_NOTNULL(head);
  char first[64];
  wk_state_dict *sd = wk_module_state_dict(net);
  snprintf(first, sizeof first, "%s", wk_state_dict_key(sd, 0));
  wk_state_dict_free(sd);
  TU_OK(wk_module_set_child(net, "fc", head));
  ck_assert_ptr_eq(wk_module_child(net, "fc"), head);
  ck_assert_int_eq(wk_tensor_size(wk_module_param(net, "fc.weight"), 0), 10);
  sd = wk_module_state_dict(net);
  ck_assert_str_eq(wk_state_dict_key(sd, 0), first); /* order kept */
  wk_state_dict_free(sd);
  wk_tensor *x = wk_empty(WK_SHAPE(2, 3, 64, 64), (wk_options){.device = meta});
  wk_module_train(net, false);
  wk_tensor *y = wk_module_forward(net, x);
  TU_NOTNULL(y);
  ck_assert_int_eq(wk_tensor_size(y, 1), 10);
  /* a dotted path, and the errors */
  wk_module *conv = wk_nn_conv2d(512, 512, 3, (wk_conv2d_opts){.padding = 1, .no_bias = true});
  if (conv) {
    TU_OK(wk_module_set_child(net, "layer4.1.conv2", conv));
    ck_assert_ptr_eq(wk_module_child(net, "layer4.1.conv2"), conv);
    wk_module_release(conv);
  }
  wk_clear_error();
  ck_assert_int_eq(wk_module_set_child(net, "classifier", head), WK_ERR_NOT_FOUND);
  ck_assert_str_eq(wk_last_error_message(), "set_child: ResNet has no submodule 'classifier'");
  wk_clear_error();
  ck_assert_int_eq(wk_module_set_child(net, "fc", NULL), WK_ERR_NULL);
  wk_clear_error();
  ck_assert_int_eq(wk_module_set_child(NULL, "fc", head), WK_ERR_NULL);
  wk_clear_error();
  ck_assert_int_eq(wk_module_set_child(net, "layer1", net), WK_ERR_INVALID_ARG); /* a cycle */
  wk_clear_error();
  wk_module_release(head);
  wk_module_release(net);
  wk_scope_end();
}
END_TEST

/* Freezing a subtree (model.requires_grad_(False)), then unfreezing the head:
 * only the head trains; a refusal changes nothing. */
START_TEST(test_module_requires_grad_freezes_subtree) {
  wk_scope_begin();
  wk_module *net = simple_net();
  TU_OK(wk_module_requires_grad_(net, false));
  ck_assert_int_eq(wk_module_num_parameters(net, true), 0);
  TU_OK(wk_module_requires_grad_(wk_module_child(net, "fc2"), true));
  ck_assert_int_eq(wk_module_num_parameters(net, true), 3 * 2 + 2);
  wk_tensor *y = wk_module_forward(net, wk_randn(WK_SHAPE(5, 4), (wk_options){0}));
  TU_NOTNULL(y);
  TU_OK(wk_backward(wk_sum(y)));
  ck_assert_ptr_null(wk_tensor_grad(wk_module_param(net, "fc1.weight")));
  ck_assert_ptr_null(wk_tensor_grad(wk_module_param(net, "fc1.bias")));
  wk_tensor *g = wk_tensor_grad(wk_module_param(net, "fc2.weight"));
  TU_NOTNULL(g);
  wk_release(g);
  /* an integer parameter cannot require grad: refused, naming it, and fc1 stays frozen */
  wk_module *fc1 = wk_module_child(net, "fc1");
  TU_OK(wk_module_register_parameter(fc1, "steps", wk_zeros(WK_SHAPE(1), (wk_options){.dtype = WK_I64})));
  ck_assert_int_eq(wk_module_requires_grad_(net, true), WK_ERR_DTYPE);
  ck_assert_msg(strstr(wk_last_error_message(), "parameter 'fc1.steps' is i64") != NULL, "%s",
                wk_last_error_message());
  ck_assert(!wk_tensor_requires_grad(wk_module_param(net, "fc1.weight")));
  ck_assert_int_eq(wk_module_num_parameters(net, true), 3 * 2 + 2);
  wk_clear_error();
  TU_OK(wk_module_requires_grad_(net, false)); /* turning off needs no floating dtype */
  ck_assert_int_eq(wk_module_requires_grad_(NULL, true), WK_ERR_NULL);
  ck_assert_str_eq(wk_last_error_message(), "module_requires_grad_: argument 'module' is NULL");
  wk_clear_error();
  wk_module_release(net);
  wk_scope_end();
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("module");
  TCase *tc = tcase_create("object-model");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_test(tc, test_module_simplenet_walks_and_prints);
  tcase_add_test(tc, test_module_state_dict_round_trip_and_reports);
  tcase_add_test(tc, test_module_to_keeps_parameter_identity);
  tcase_add_test(tc, test_module_buffers_none_shared_and_errors);
  tcase_add_test(tc, test_module_set_child_replaces_in_place);
  tcase_add_test(tc, test_module_requires_grad_freezes_subtree);
  suite_add_tcase(s, tc);
  return s;
}
TU_MAIN(make_suite)
