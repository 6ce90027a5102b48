/* Check suite: the graph IR (graph.h). Traces of the zoo models with a
 * dynamic batch replayed at other batch sizes (outputs and gradients equal to
 * eager, bit for bit), symbolic shapes, guards, data-dependent programs, the
 * passes, hand-built graphs and rewrites. */
#include <time.h>
#include <wick/nn.h>

#include "testutil.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static bool bit_equal(wk_tensor *a, wk_tensor *b) {
  if (!a || !b || wk_tensor_dtype(a) != wk_tensor_dtype(b) || wk_tensor_dim(a) != wk_tensor_dim(b)) return false;
  for (int d = 0; d < wk_tensor_dim(a); d++)
    if (wk_tensor_size(a, d) != wk_tensor_size(b, d)) return false;
  wk_tensor *ca = wk_contiguous(a), *cb = wk_contiguous(b);
  bool same = ca && cb &&
              !memcmp(wk_tensor_data(ca), wk_tensor_data(cb), (size_t)wk_tensor_numel(ca) * wk_dtype_size(wk_tensor_dtype(a)));
  wk_release(ca);
  wk_release(cb);
  return same;
}

static int count_op(const wk_graph *g, const char *name) {
  int c = 0;
  for (int i = 0; i < wk_graph_num_nodes(g); i++)
    if (!strcmp(wk_op_name(wk_graph_node_op(g, wk_graph_node_at(g, i))), name)) c++;
  return c;
}

static const wk_trace_dim k_batch[] = {{0, 0, "batch"}};
static wk_trace_options batch_opts(void) { return (wk_trace_options){sizeof(wk_trace_options), k_batch, 1, NULL, NULL}; }

/* Replays g at batch sizes 1, 3 and 64 and compares outputs and parameter
 * gradients with eager runs of m. */
static void check_replay(wk_module *m, wk_graph *g, const int64_t *item_shape, int item_ndim, const char *name) {
  static const int64_t batches[] = {1, 3, 64};
  int np = wk_module_named_parameters(m, NULL, NULL, 0);
  const char **pn = calloc((size_t)np, sizeof *pn);
  wk_tensor **ps = calloc((size_t)np, sizeof *ps);
  wk_tensor **eager_grads = calloc((size_t)np, sizeof *eager_grads);
  ck_assert(pn && ps && eager_grads);
  wk_module_named_parameters(m, pn, ps, np);
  for (int b = 0; b < 3; b++) {
    wk_scope_begin();
    int64_t shape[WK_MAX_DIMS];
    shape[0] = batches[b];
    for (int d = 0; d < item_ndim; d++) shape[d + 1] = item_shape[d];
    wk_tensor *x = tu_rand(shape, item_ndim + 1, WK_F32, -1, 1, 7 + (uint64_t)b);
    TU_NOTNULL(x);
    TU_OK(wk_module_zero_grad(m, true));
    wk_tensor *ye = wk_module_forward(m, x);
    TU_NOTNULL(ye);
    TU_OK(wk_backward(wk_sum(ye)));
    for (int i = 0; i < np; i++) eager_grads[i] = wk_clone(wk_tensor_grad(ps[i]));
    TU_OK(wk_module_zero_grad(m, true));
    wk_tensor *yr = NULL;
    TU_OK(wk_graph_run(g, &x, 1, (wk_device){0}, &yr, 1));
    ck_assert_msg(bit_equal(ye, yr), "%s: replay at batch %lld differs from eager", name, (long long)batches[b]);
    TU_OK(wk_backward(wk_sum(yr)));
    for (int i = 0; i < np; i++)
      ck_assert_msg(bit_equal(eager_grads[i], wk_tensor_grad(ps[i])), "%s: gradient of %s through the replay at batch %lld differs",
                    name, pn[i], (long long)batches[b]);
    wk_scope_end();
  }
  TU_OK(wk_module_zero_grad(m, true));
  free(pn);
  free(ps);
  free(eager_grads);
}

static wk_graph *trace_batch(wk_module *m, int64_t example_batch, const int64_t *item, int nd, double *ms) {
  int64_t shape[WK_MAX_DIMS];
  shape[0] = example_batch;
  for (int d = 0; d < nd; d++) shape[d + 1] = item[d];
  wk_tensor *x = tu_rand(shape, nd + 1, WK_F32, -1, 1, 3);
  wk_trace_options o = batch_opts();
  double t0 = now_ms();
  wk_graph *g = wk_trace_module(m, &x, 1, &o);
  if (ms) *ms = now_ms() - t0;
  wk_release(x);
  return g;
}

START_TEST(test_graph_mlp_lenet_replay) {
  int64_t hidden[] = {64, 32};
  wk_module *mlp = wk_nn_mlp(784, hidden, 2, 10);
  TU_NOTNULL(mlp);
  TU_OK(wk_module_train(mlp, false));
  const int64_t item[] = {784};
  wk_graph *g = trace_batch(mlp, 2, item, 1, NULL);
  TU_NOTNULL(g);
  TU_OK(wk_graph_validate(g));
  check_replay(mlp, g, item, 1, "mlp");
  wk_graph_release(g);
  wk_module_release(mlp);

  wk_module *lenet = wk_nn_lenet();
  TU_NOTNULL(lenet);
  TU_OK(wk_module_train(lenet, false));
  const int64_t img[] = {1, 28, 28};
  g = trace_batch(lenet, 4, img, 3, NULL);
  TU_NOTNULL(g);
  TU_OK(wk_graph_validate(g));
  check_replay(lenet, g, img, 3, "lenet");
  wk_graph_release(g);
  wk_module_release(lenet);
}
END_TEST

START_TEST(test_graph_resnet18_counts_and_replay) {
  wk_module *m = wk_nn_resnet18((wk_resnet_opts){0});
  TU_NOTNULL(m);
  TU_OK(wk_module_train(m, false));
  const int64_t img[] = {3, 32, 32};
  double ms;
  wk_graph *g = trace_batch(m, 2, img, 3, &ms);
  TU_NOTNULL(g);
  fprintf(stderr, "check_graph: resnet18 (cpu, batch 2, 3x32x32) traced in %.1f ms, %d nodes\n", ms, wk_graph_num_nodes(g));
  ck_assert_int_eq(count_op(g, "conv2d"), 20);
  ck_assert_int_eq(count_op(g, "batch_norm"), 20);
  ck_assert_int_eq(count_op(g, "relu") + count_op(g, "relu_"), 17);
  ck_assert_int_eq(count_op(g, "add") + count_op(g, "add_"), 8);
  ck_assert_int_eq(count_op(g, "max_pool2d_with_indices") + count_op(g, "max_pool2d"), 1);
  ck_assert_int_eq(count_op(g, "adaptive_avg_pool2d"), 1);
  ck_assert_int_eq(count_op(g, "linear"), 1);
  check_replay(m, g, img, 3, "resnet18");
  wk_graph_release(g);
  wk_module_release(m);
}
END_TEST

START_TEST(test_graph_resnet50_replay) {
  wk_module *m = wk_nn_resnet50((wk_resnet_opts){0});
  TU_NOTNULL(m);
  TU_OK(wk_module_train(m, false));
  const int64_t img[] = {3, 32, 32};
  wk_graph *g = trace_batch(m, 2, img, 3, NULL);
  TU_NOTNULL(g);
  ck_assert_int_eq(count_op(g, "conv2d"), 53);
  check_replay(m, g, img, 3, "resnet50");
  wk_graph_release(g);
  wk_module_release(m);
}
END_TEST

/* On the meta device: ResNet-18 at 224x224 prints PyTorch's symbolic shapes. */
START_TEST(test_graph_resnet18_symbolic_shapes_on_meta) {
  wk_device meta = {WK_DEVICE_META, 0};
  wk_device prev = wk_set_default_device(meta);
  wk_module *m = wk_nn_resnet18((wk_resnet_opts){0});
  wk_set_default_device(prev);
  TU_NOTNULL(m);
  TU_OK(wk_module_train(m, false));
  wk_tensor *x = wk_empty(WK_SHAPE(8, 3, 224, 224), (wk_options){.device = meta});
  wk_trace_options o = batch_opts();
  double t0 = now_ms();
  wk_graph *g = wk_trace_module(m, &x, 1, &o);
  double ms = now_ms() - t0;
  TU_NOTNULL(g);
  fprintf(stderr, "check_graph: resnet18 (meta, 224x224, dynamic batch) traced in %.1f ms\n", ms);
  char *s = wk_graph_to_string(g);
  TU_NOTNULL(s);
  ck_assert_msg(strstr(s, "[s0, 64, 56, 56]"), "no [s0, 64, 56, 56] in:\n%s", s);
  ck_assert_msg(strstr(s, "[s0, 512, 7, 7]"), "no [s0, 512, 7, 7]");
  ck_assert_msg(strstr(s, "[s0, 1000]"), "no [s0, 1000]");
  ck_assert_msg(strstr(s, "layer1.0.conv1"), "module paths missing");
  ck_assert_msg(strstr(s, "layer1.0.conv1.weight"), "parameters are not named by state_dict keys");
  ck_assert_msg(strstr(s, "guard: input 0 'x': dim 1 == 3"), "guards missing:\n%s", s);
  ck_assert_msg(strstr(s, "symbol s0: batch"), "symbols missing");
  wk_free(s);
  /* every result's dims: the batch dim is s0, the rest constant */
  int out = wk_graph_output(g, 0);
  const wk_symdim *d = wk_graph_value_dims(g, out);
  ck_assert_int_eq(wk_graph_value_ndim(g, out), 2);
  ck_assert(d[0].sym0 == 0 && d[0].a == 1 && d[0].c == 1 && d[0].d == 0);
  ck_assert_int_eq(wk_symdim_eval(d[1], NULL), 1000);
  /* replay on meta at another batch */
  wk_tensor *x5 = wk_empty(WK_SHAPE(5, 3, 224, 224), (wk_options){.device = meta}), *y = NULL;
  TU_OK(wk_graph_run(g, &x5, 1, (wk_device){0}, &y, 1));
  ck_assert_int_eq(wk_tensor_size(y, 0), 5);
  ck_assert_int_eq(wk_tensor_size(y, 1), 1000);
  wk_release(y);
  wk_release(x5);
  wk_release(x);
  wk_graph_release(g);
  wk_module_release(m);
}
END_TEST

/* Dynamic spatial dims give floor expressions. */
START_TEST(test_graph_symbolic_spatial_dims) {
  wk_module *m = wk_nn_resnet18((wk_resnet_opts){0});
  TU_NOTNULL(m);
  TU_OK(wk_module_train(m, false));
  wk_tensor *x = wk_empty(WK_SHAPE(2, 3, 64, 64), (wk_options){.device = {WK_DEVICE_META, 0}});
  const wk_trace_dim dims[] = {{0, 0, "batch"}, {0, 2, "height"}, {0, 3, "width"}};
  wk_trace_options o = {sizeof o, dims, 3, NULL, NULL};
  wk_graph *g = wk_trace_module(m, &x, 1, &o);
  TU_NOTNULL(g);
  char *s = wk_graph_to_string(g);
  TU_NOTNULL(s);
  /* conv1 (7x7, stride 2, pad 3): (s1+1)/2; after the max pool (3x3, stride 2, pad 1): (s1+3)/4 */
  ck_assert_msg(strstr(s, "[s0, 64, (s1+1)/2, (s2+1)/2]"), "conv1 shape missing:\n%s", s);
  ck_assert_msg(strstr(s, "[s0, 64, (s1+3)/4, (s2+3)/4]"), "pool shape missing");
  wk_free(s);
  /* replay at 2x3x50x70 on cpu equals eager */
  wk_tensor *xc = tu_rand(WK_SHAPE(2, 3, 50, 70), WK_F32, -1, 1, 5);
  wk_tensor *ye = wk_module_forward(m, xc), *yr = NULL;
  TU_NOTNULL(ye);
  TU_OK(wk_graph_run(g, &xc, 1, (wk_device){WK_DEVICE_CPU, 0}, &yr, 1));
  ck_assert(bit_equal(ye, yr));
  wk_release(ye);
  wk_release(yr);
  wk_release(xc);
  wk_release(x);
  wk_graph_release(g);
  wk_module_release(m);
}
END_TEST

/* ---- functions: sizes read from inputs become symbolic arguments ---- */
static wk_status flatten_fn(void *user, wk_tensor *const *in, int n, wk_tensor **out, int max, int *nout) {
  (void)user, (void)n, (void)max;
  int64_t b = wk_tensor_size(in[0], 0);
  wk_tensor *v = wk_reshape(in[0], WK_SHAPE(b, -1));
  wk_tensor *z = wk_zeros(WK_SHAPE(b, 1), (wk_options){0});
  wk_tensor *c = wk_cat((wk_tensor *[]){v, z}, 2, 1);
  out[0] = wk_mul_scalar(c, 2.0);
  *nout = 1;
  wk_release(v);
  wk_release(z);
  wk_release(c);
  return out[0] ? WK_OK : wk_last_error();
}

START_TEST(test_graph_function_sizes_become_symbols) {
  wk_tensor *x = tu_rand(WK_SHAPE(2, 3, 4), WK_F32, -1, 1, 9);
  wk_trace_options o = batch_opts();
  wk_graph *g = wk_trace(flatten_fn, NULL, &x, 1, &o);
  TU_NOTNULL(g);
  char *s = wk_graph_to_string(g);
  ck_assert_msg(strstr(s, "[s0, -1]"), "reshape's size argument is not symbolic:\n%s", s);
  ck_assert_msg(strstr(s, "[s0, 13]"), "cat's shape is not symbolic:\n%s", s);
  wk_free(s);
  wk_tensor *x7 = tu_rand(WK_SHAPE(7, 3, 4), WK_F32, -1, 1, 10), *y = NULL, *ye = NULL;
  TU_OK(wk_graph_run(g, &x7, 1, (wk_device){0}, &y, 1));
  int no = 0;
  TU_OK(flatten_fn(NULL, &x7, 1, &ye, 1, &no));
  ck_assert(bit_equal(y, ye));
  wk_release(y);
  wk_release(ye);
  wk_release(x7);
  wk_release(x);
  wk_graph_release(g);
}
END_TEST

/* ---- guards ---- */
START_TEST(test_graph_guards) {
  wk_tensor *x = tu_rand(WK_SHAPE(2, 3, 4), WK_F32, -1, 1, 9);
  wk_trace_options o = batch_opts();
  wk_graph *g = wk_trace(flatten_fn, NULL, &x, 1, &o);
  TU_NOTNULL(g);
  ck_assert_int_ge(wk_graph_num_guards(g), 3);
  wk_tensor *y = NULL;
  wk_tensor *bad_dim = wk_zeros(WK_SHAPE(2, 4, 4), (wk_options){0});
  ck_assert_int_ne(wk_graph_run(g, &bad_dim, 1, (wk_device){0}, &y, 1), WK_OK);
  ck_assert_msg(strstr(wk_last_error_message(), "guard failed: input 0 'x': dim 1") ||
                    strstr(wk_last_error_message(), "guard failed"),
                "%s", wk_last_error_message());
  ck_assert_msg(strstr(wk_last_error_message(), "dim 1"), "%s", wk_last_error_message());
  wk_tensor *bad_dt = wk_zeros(WK_SHAPE(2, 3, 4), (wk_options){.dtype = WK_F64});
  ck_assert_int_ne(wk_graph_run(g, &bad_dt, 1, (wk_device){0}, &y, 1), WK_OK);
  ck_assert_msg(strstr(wk_last_error_message(), "must be f32"), "%s", wk_last_error_message());
  wk_tensor *bad_rank = wk_zeros(WK_SHAPE(2, 12), (wk_options){0});
  ck_assert_int_ne(wk_graph_run(g, &bad_rank, 1, (wk_device){0}, &y, 1), WK_OK);
  ck_assert_msg(strstr(wk_last_error_message(), "3 dims"), "%s", wk_last_error_message());
  ck_assert_int_ne(wk_graph_run(g, NULL, 0, (wk_device){0}, &y, 1), WK_OK);
  ck_assert_msg(strstr(wk_last_error_message(), "takes 1 inputs"), "%s", wk_last_error_message());
  ck_assert_int_ne(wk_graph_run(g, &x, 1, (wk_device){0}, &y, 0), WK_OK);
  ck_assert_int_ne(wk_graph_run(NULL, &x, 1, (wk_device){0}, &y, 1), WK_OK);
  wk_release(bad_dim);
  wk_release(bad_dt);
  wk_release(bad_rank);
  wk_release(x);
  wk_graph_release(g);
}
END_TEST

/* ---- data-dependent programs fail the trace, naming op and module path ---- */
static wk_status item_fn(void *user, wk_tensor *const *in, int n, wk_tensor **out, int max, int *nout) {
  (void)user, (void)n, (void)max;
  wk_tensor *s = wk_sum(in[0]);
  double v = 0;
  wk_item(s, &v);
  out[0] = v > 0 ? wk_relu(in[0]) : wk_neg(in[0]);
  *nout = 1;
  wk_release(s);
  return out[0] ? WK_OK : wk_last_error();
}

static wk_status masked_fn(void *user, wk_tensor *const *in, int n, wk_tensor **out, int max, int *nout) {
  (void)user, (void)n, (void)max;
  wk_tensor *m = wk_gt_scalar(in[0], 0.0);
  out[0] = wk_masked_select(in[0], m);
  *nout = out[0] ? 1 : 0;
  wk_release(m);
  return out[0] ? WK_OK : wk_last_error();
}

static wk_tensor *branchy_forward(wk_module *self, wk_tensor *const *in, int n) {
  (void)n;
  wk_tensor *h = wk_module_forward(wk_module_child(self, "fc"), in[0]);
  int64_t idx[] = {0, 0};
  double v = 0;
  if (h) wk_tensor_get(h, idx, &v);
  wk_tensor *r = v > 0 ? wk_relu(h) : wk_sigmoid(h);
  wk_release(h);
  return r;
}
static const wk_module_class BRANCHY = {sizeof(wk_module_class), "Branchy", branchy_forward, NULL, NULL};

static wk_tensor *outer_forward(wk_module *self, wk_tensor *const *in, int n) {
  (void)n;
  return wk_module_forward(wk_module_child(self, "head"), in[0]);
}
static const wk_module_class OUTER = {sizeof(wk_module_class), "Outer", outer_forward, NULL, NULL};

START_TEST(test_graph_data_dependent_errors) {
  wk_tensor *x = tu_rand(WK_SHAPE(2, 4), WK_F32, -1, 1, 11);
  ck_assert_ptr_null(wk_trace(item_fn, NULL, &x, 1, NULL));
  ck_assert_msg(strstr(wk_last_error_message(), "item()") && strstr(wk_last_error_message(), "made by sum"),
                "%s", wk_last_error_message());
  ck_assert(!wk_is_tracing());
  ck_assert_ptr_null(wk_trace(masked_fn, NULL, &x, 1, NULL));
  ck_assert_msg(strstr(wk_last_error_message(), "masked_select()") &&
                    strstr(wk_last_error_message(), "depends on the data"),
                "%s", wk_last_error_message());
  /* inside a module: the path names where the read happened */
  wk_module *inner = wk_module_new(&BRANCHY, NULL), *outer = wk_module_new(&OUTER, NULL), *fc = wk_nn_linear(4, 3, true);
  TU_OK(wk_module_register_child(inner, "fc", fc));
  TU_OK(wk_module_register_child(outer, "head", inner));
  ck_assert_ptr_null(wk_trace_module(outer, &x, 1, NULL));
  ck_assert_msg(strstr(wk_last_error_message(), "tensor_get() in 'head'") &&
                    strstr(wk_last_error_message(), "made by linear in 'head.fc'"),
                "%s", wk_last_error_message());
  /* the eager program still runs after a failed trace */
  wk_tensor *y = wk_module_forward(outer, x);
  TU_NOTNULL(y);
  wk_release(y);
  wk_module_release(fc);
  wk_module_release(inner);
  wk_module_release(outer);
  /* bad arguments */
  ck_assert_ptr_null(wk_trace(NULL, NULL, &x, 1, NULL));
  const wk_trace_dim bad[] = {{0, 5, "batch"}};
  wk_trace_options o = {sizeof o, bad, 1, NULL, NULL};
  ck_assert_ptr_null(wk_trace(item_fn, NULL, &x, 1, &o));
  ck_assert_msg(strstr(wk_last_error_message(), "dim 5"), "%s", wk_last_error_message());
  wk_release(x);
}
END_TEST

/* ---- hand-built graphs, rewrites and passes ---- */
START_TEST(test_graph_build_passes) {
  wk_graph *g = wk_graph_new();
  TU_NOTNULL(g);
  int s0 = wk_graph_add_symbol(g, "batch", 4);
  ck_assert_int_eq(s0, 0);
  wk_symdim dims[] = {WK_SYM(0), WK_SYM_CONST(8)};
  int x = wk_graph_add_input(g, "x", WK_F32, (wk_device){WK_DEVICE_CPU, 0}, 2, dims);
  ck_assert_int_ge(x, 0);
  wk_tensor *w = tu_rand(WK_SHAPE(5, 8), WK_F32, -1, 1, 1);
  wk_tensor *c = TU_T(WK_F32, (5), 1, 2, 3, 4, 5);
  int pw = wk_graph_add_param(g, "fc.weight", w, false);
  int cc = wk_graph_add_const(g, c);
  ck_assert_int_ge(pw, 0);
  ck_assert_int_ge(cc, 0);
  ck_assert_int_eq(wk_graph_add_param(g, "fc.weight", w, false), -1); /* taken */
  wk_op *linear = wk_op_find("linear"), *relu = wk_op_find("relu"), *exp = wk_op_find("exp"), *add = wk_op_find("add");
  wk_garg la[] = {{.tag = WK_V_TENSOR, .u.v = x}, {.tag = WK_V_TENSOR, .u.v = pw}, {.tag = WK_V_NONE}};
  int n1 = wk_graph_add_node(g, linear, la, 3, "fc", -1);
  ck_assert_int_ge(n1, 0);
  int h = wk_graph_node_output(g, n1, 0);
  const wk_symdim *hd = wk_graph_value_dims(g, h);
  ck_assert(hd[0].sym0 == 0 && wk_symdim_eval(hd[1], NULL) == 5);
  /* two identical relus (CSE), an exp of a constant (folding), an unused exp (DCE) */
  wk_garg ra[] = {{.tag = WK_V_TENSOR, .u.v = h}};
  int r1 = wk_graph_add_node(g, relu, ra, 1, "act", -1), r2 = wk_graph_add_node(g, relu, ra, 1, "act", -1);
  wk_garg ea[] = {{.tag = WK_V_TENSOR, .u.v = cc}};
  int e1 = wk_graph_add_node(g, exp, ea, 1, "", -1);
  wk_garg ua[] = {{.tag = WK_V_TENSOR, .u.v = h}};
  int dead = wk_graph_add_node(g, exp, ua, 1, "", -1);
  ck_assert(r1 >= 0 && r2 >= 0 && e1 >= 0 && dead >= 0);
  wk_garg aa[] = {{.tag = WK_V_TENSOR, .u.v = wk_graph_node_output(g, r1, 0)},
                  {.tag = WK_V_TENSOR, .u.v = wk_graph_node_output(g, r2, 0)}};
  int a1 = wk_graph_add_node(g, add, aa, 2, "", -1);
  wk_garg ab[] = {{.tag = WK_V_TENSOR, .u.v = wk_graph_node_output(g, a1, 0)},
                  {.tag = WK_V_TENSOR, .u.v = wk_graph_node_output(g, e1, 0)}};
  int a2 = wk_graph_add_node(g, add, ab, 2, "", -1);
  ck_assert(a1 >= 0 && a2 >= 0);
  int outv = wk_graph_node_output(g, a2, 0);
  TU_OK(wk_graph_set_outputs(g, &outv, 1));
  TU_OK(wk_graph_validate(g));
  ck_assert_int_eq(wk_graph_num_nodes(g), 7);
  /* a bad node: shapes that do not broadcast, reported by the meta function */
  wk_garg bad[] = {{.tag = WK_V_TENSOR, .u.v = x}, {.tag = WK_V_TENSOR, .u.v = cc}};
  ck_assert_int_eq(wk_graph_add_node(g, add, bad, 2, "", -1), -1);
  ck_assert_msg(strstr(wk_last_error_message(), "add"), "%s", wk_last_error_message());
  ck_assert_int_eq(wk_graph_num_nodes(g), 7);
  /* malformed arguments: a NULL list, an unknown tag, a value the graph lacks */
  wk_garg nul[] = {{.tag = WK_V_TENSORS, .len = 2, .u.vs = NULL}};
  ck_assert_int_eq(wk_graph_add_node(g, wk_op_find("cat"), nul, 1, "", -1), -1);
  ck_assert_msg(strstr(wk_last_error_message(), "NULL pointer"), "%s", wk_last_error_message());
  wk_garg badtag[] = {{.tag = 99}};
  ck_assert_int_eq(wk_graph_add_node(g, relu, badtag, 1, "", -1), -1);
  wk_garg novalue[] = {{.tag = WK_V_TENSOR, .u.v = 999}};
  ck_assert_int_eq(wk_graph_add_node(g, relu, novalue, 1, "", -1), -1);
  ck_assert_msg(strstr(wk_last_error_message(), "value 999"), "%s", wk_last_error_message());
  ck_assert_int_eq(wk_graph_num_nodes(g), 7);
  /* erase refuses a node whose result is read */
  ck_assert_int_ne(wk_graph_erase_node(g, n1), WK_OK);
  /* reference result before the passes */
  wk_tensor *xin = tu_rand(WK_SHAPE(3, 8), WK_F32, -1, 1, 2), *before = NULL, *after = NULL;
  TU_OK(wk_graph_run(g, &xin, 1, (wk_device){0}, &before, 1));
  wk_graph *copy = wk_graph_copy(g);
  TU_NOTNULL(copy);
  ck_assert_int_eq(wk_graph_dce(g), 1);
  ck_assert_int_eq(wk_graph_cse(g), 1);
  ck_assert_int_eq(wk_graph_fold_constants(g, false), 1);
  ck_assert_int_eq(wk_graph_dce(g), 0);
  ck_assert_int_eq(wk_graph_num_nodes(g), 4); /* linear, relu, add, add */
  ck_assert_int_eq(count_op(g, "exp"), 0);
  TU_OK(wk_graph_validate(g));
  TU_OK(wk_graph_propagate(g));
  TU_OK(wk_graph_run(g, &xin, 1, (wk_device){0}, &after, 1));
  ck_assert(bit_equal(before, after));
  ck_assert_int_eq(wk_graph_num_nodes(copy), 7); /* the copy did not change */
  wk_release(after);
  TU_OK(wk_graph_run(copy, &xin, 1, (wk_device){0}, &after, 1));
  ck_assert(bit_equal(before, after));
  /* folding parameters too removes the linear's weight read only when every input is constant: here x is not */
  ck_assert_int_eq(wk_graph_fold_constants(g, true), 0);
  /* replace_uses: the output reads a relu instead */
  int rv = wk_graph_node_output(g, r1, 0);
  TU_OK(wk_graph_replace_uses(g, wk_graph_output(g, 0), rv));
  ck_assert_int_eq(wk_graph_output(g, 0), rv);
  ck_assert_int_eq(wk_graph_dce(g), 2);
  char *s = wk_graph_to_string(g);
  ck_assert_msg(strstr(s, "call_function") && strstr(s, "placeholder") && strstr(s, "get_attr") && strstr(s, "[s0, 5]"),
                "%s", s);
  wk_free(s);
  /* replace_uses refuses other dtypes */
  ck_assert_int_ne(wk_graph_replace_uses(g, rv, x) == WK_OK && 0, 1);
  wk_release(before);
  wk_release(after);
  wk_release(xin);
  wk_release(w);
  wk_release(c);
  wk_graph_release(copy);
  wk_graph_release(g);
  /* NULL graphs propagate */
  ck_assert_int_eq(wk_graph_num_nodes(NULL), 0);
  ck_assert_int_ne(wk_graph_validate(NULL), WK_OK);
  ck_assert_ptr_null(wk_graph_to_string(NULL));
}
END_TEST

START_TEST(test_graph_symdim_text) {
  char b[64];
  wk_symdim d = {1, 2, 2, 1, 0, 1, -1};
  wk_symdim_str(NULL, d, b, sizeof b);
  ck_assert_str_eq(b, "(s1+2)/2");
  wk_symdim e = {64, 0, 1, 1, 0, 0, -1};
  wk_symdim_str(NULL, e, b, sizeof b);
  ck_assert_str_eq(b, "s0*64");
  wk_symdim_str(NULL, WK_SYM_CONST(7), b, sizeof b);
  ck_assert_str_eq(b, "7");
  wk_symdim f = {3, 0, 1, 1, 0, 0, 1};
  wk_symdim_str(NULL, f, b, sizeof b);
  ck_assert_str_eq(b, "s0*s1*3");
  int64_t syms[] = {10, 7};
  ck_assert_int_eq(wk_symdim_eval(d, syms), 4);
  ck_assert_int_eq(wk_symdim_eval(f, syms), 210);
}
END_TEST

/* ---- training graphs: forward and backward below autograd ---- */
typedef struct {
  wk_module *m;
} loss_ctx;

static wk_status loss_fn(void *user, wk_tensor *const *in, int n, wk_tensor **out, int max, int *nout) {
  (void)n, (void)max;
  loss_ctx *c = user;
  wk_tensor *logits = wk_module_forward(c->m, in[0]);
  out[0] = wk_cross_entropy(logits, in[1]);
  wk_release(logits);
  *nout = out[0] ? 1 : 0;
  return out[0] ? WK_OK : wk_last_error();
}

START_TEST(test_graph_training_trace) {
  int64_t hidden[] = {16};
  wk_module *m = wk_nn_mlp(12, hidden, 1, 4);
  TU_NOTNULL(m);
  loss_ctx c = {m};
  wk_tensor *x = tu_rand(WK_SHAPE(3, 12), WK_F32, -1, 1, 21);
  wk_tensor *t = TU_T(WK_I64, (3), 0, 3, 1);
  wk_tensor *ins[] = {x, t};
  const wk_trace_dim dims[] = {{0, 0, "batch"}, {1, 0, "batch"}};
  wk_trace_options o = {sizeof o, dims, 2, m, NULL};
  wk_graph *g = wk_trace_training(loss_fn, &c, ins, 2, &o);
  TU_NOTNULL(g);
  int np = wk_module_named_parameters(m, NULL, NULL, 0);
  ck_assert_int_eq(wk_graph_num_outputs(g), 1 + np);
  ck_assert_int_ge(count_op(g, "linear"), 2);
  /* backward ops are in the graph, and .grad was not touched */
  int nodes = wk_graph_num_nodes(g);
  ck_assert_int_gt(nodes, 8);
  wk_tensor *ps[8];
  const char *pn[8];
  wk_module_named_parameters(m, pn, ps, 8);
  wk_scope_begin(); /* wk_tensor_grad gives new handles */
  for (int i = 0; i < np; i++) ck_assert_ptr_null(wk_tensor_grad(ps[i]));
  /* replay at batch 5 under no_grad = eager loss.backward() */
  wk_tensor *x5 = tu_rand(WK_SHAPE(5, 12), WK_F32, -1, 1, 22), *t5 = TU_T(WK_I64, (5), 1, 2, 3, 0, 1);
  wk_tensor *ins5[] = {x5, t5}, *outs[8] = {0};
  wk_no_grad_begin();
  TU_OK(wk_graph_run(g, ins5, 2, (wk_device){0}, outs, 8));
  TU_OK(wk_no_grad_end());
  wk_tensor *le = NULL;
  int no = 0;
  TU_OK(loss_fn(&c, ins5, 2, &le, 1, &no));
  TU_OK(wk_backward(le));
  ck_assert_msg(bit_equal(outs[0], le), "training replay: loss differs from eager");
  for (int i = 0; i < np; i++) {
    ck_assert_msg(bit_equal(outs[1 + i], wk_tensor_grad(ps[i])), "training replay: gradient of %s differs", pn[i]);
    wk_release(outs[1 + i]);
  }
  wk_release(outs[0]);
  wk_release(le);
  wk_scope_end(); /* x5 and t5 too */
  /* a program whose first output is not a loss */
  wk_trace_options o2 = {sizeof o2, NULL, 0, m, NULL};
  ck_assert_ptr_null(wk_trace_training(flatten_fn, NULL, &x, 1, &o2));
  ck_assert_msg(strstr(wk_last_error_message(), "loss"), "%s", wk_last_error_message());
  ck_assert_ptr_null(wk_trace_training(loss_fn, &c, ins, 2, NULL));
  wk_release(x);
  wk_release(t);
  wk_graph_release(g);
  wk_module_release(m);
}
END_TEST

/* Bad arguments to every building call: an error naming the fault, the graph unchanged. */
START_TEST(test_graph_bad_arguments) {
  wk_graph *g = wk_graph_new();
  TU_NOTNULL(g);
  ck_assert_int_eq(wk_graph_add_symbol(g, "batch", 0), -1);
  ck_assert_msg(strstr(wk_last_error_message(), ">= 1"), "%s", wk_last_error_message());
  for (int i = 0; i < 8; i++) ck_assert_int_eq(wk_graph_add_symbol(g, NULL, 2), i);
  ck_assert_int_eq(wk_graph_add_symbol(g, "ninth", 2), -1);
  ck_assert_str_eq(wk_graph_symbol_name(g, 3), "s3");
  wk_symdim bad_sym[] = {{1, 0, 1, 1, 0, 9, -1}};
  ck_assert_int_eq(wk_graph_add_input(g, "x", WK_F32, (wk_device){WK_DEVICE_CPU, 0}, 1, bad_sym), -1);
  ck_assert_msg(strstr(wk_last_error_message(), "not a valid symbolic dim"), "%s", wk_last_error_message());
  wk_symdim zero_div[] = {{1, 0, 0, 1, 0, 0, -1}};
  ck_assert_int_eq(wk_graph_add_input(g, "x", WK_F32, (wk_device){WK_DEVICE_CPU, 0}, 1, zero_div), -1);
  ck_assert_int_eq(wk_graph_add_input(g, "x", WK_F32, (wk_device){WK_DEVICE_CPU, 0}, 9, NULL), -1);
  ck_assert_int_eq(wk_graph_add_input(g, "x", (wk_dtype)99, (wk_device){WK_DEVICE_CPU, 0}, 0, NULL), -1);
  ck_assert_int_eq(wk_graph_add_input(g, "x", WK_F32, (wk_device){WK_DEVICE_CPU, 0}, 0, NULL), 0);
  ck_assert_int_eq(wk_graph_add_input(g, "x", WK_F32, (wk_device){WK_DEVICE_CPU, 0}, 0, NULL), -1); /* name taken */
  ck_assert_int_eq(wk_graph_num_inputs(g), 1);
  wk_tensor *w = wk_zeros(WK_SHAPE(2, 3), (wk_options){0});
  ck_assert_int_eq(wk_graph_add_param(g, NULL, w, false), -1);
  ck_assert_int_eq(wk_graph_add_param(g, "w", NULL, false), -1);
  ck_assert_int_ge(wk_graph_add_param(g, "w", w, false), 0);
  wk_tensor *w2 = wk_zeros(WK_SHAPE(3, 2), (wk_options){0});
  ck_assert_int_ne(wk_graph_set_param(g, "w", w2), WK_OK);
  ck_assert_msg(strstr(wk_last_error_message(), "[2, 3]") && strstr(wk_last_error_message(), "[3, 2]"), "%s",
                wk_last_error_message());
  ck_assert_int_ne(wk_graph_set_param(g, "nope", w), WK_OK);
  ck_assert_msg(strstr(wk_last_error_message(), "no parameter 'nope'"), "%s", wk_last_error_message());
  TU_OK(wk_graph_set_param(g, "w", w));
  ck_assert_int_ne(wk_graph_erase_node(g, 5), WK_OK);
  ck_assert_int_ne(wk_graph_replace_uses(g, 0, 77), WK_OK);
  ck_assert_int_ne(wk_graph_set_outputs(g, (const int[]){42}, 1), WK_OK);
  ck_assert_int_eq(wk_graph_add_node(g, NULL, NULL, 0, "", -1), -1);
  ck_assert_int_eq(wk_graph_add_node(g, wk_op_find("relu"), NULL, 0, "", -1), -1); /* self is required */
  ck_assert_msg(strstr(wk_last_error_message(), "missing required argument 'self'"), "%s", wk_last_error_message());
  ck_assert_int_eq(wk_graph_add_node(g, wk_op_find("relu"), (wk_garg[]){{.tag = WK_V_TENSOR, .u.v = 0}}, 1, "", 3), -1);
  ck_assert_int_eq(wk_graph_num_nodes(g), 0);
  TU_OK(wk_graph_validate(g));
  ck_assert_ptr_null(wk_graph_node_args(g, 0));
  ck_assert_int_eq(wk_graph_value_ndim(g, 99), -1);
  ck_assert_int_eq(wk_symdim_eval(WK_SYM(0), NULL), 0); /* symbolic without values: documented as 0 */
  wk_release(w);
  wk_release(w2);
  wk_graph_release(g);
  wk_graph_release(NULL);
  ck_assert_ptr_null(wk_graph_copy(NULL));
  ck_assert_int_eq(wk_graph_dce(NULL), -1);
  ck_assert_int_eq(wk_graph_cse(NULL), -1);
  ck_assert_int_eq(wk_graph_fold_constants(NULL, false), -1);
  ck_assert_int_ne(wk_graph_propagate(NULL), WK_OK);
  ck_assert_int_ne(wk_graph_set_param(NULL, "w", NULL), WK_OK);
  ck_assert_ptr_null(wk_trace_module(NULL, NULL, 0, NULL));
  ck_assert_int_ne(wk_graph_run(NULL, NULL, 0, (wk_device){0}, NULL, 0), WK_OK);
  ck_assert(!wk_is_tracing());
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("graph");
  TCase *tc = tcase_create("graph");
  tcase_set_timeout(tc, 300);
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_test(tc, test_graph_symdim_text);
  tcase_add_test(tc, test_graph_build_passes);
  tcase_add_test(tc, test_graph_bad_arguments);
  tcase_add_test(tc, test_graph_function_sizes_become_symbols);
  tcase_add_test(tc, test_graph_guards);
  tcase_add_test(tc, test_graph_data_dependent_errors);
  tcase_add_test(tc, test_graph_mlp_lenet_replay);
  tcase_add_test(tc, test_graph_resnet18_symbolic_shapes_on_meta);
  tcase_add_test(tc, test_graph_symbolic_spatial_dims);
  tcase_add_test(tc, test_graph_resnet18_counts_and_replay);
  tcase_add_test(tc, test_graph_resnet50_replay);
  suite_add_tcase(s, tc);
  TCase *tr = tcase_create("training");
  tcase_set_timeout(tr, 300);
  tcase_add_checked_fixture(tr, tu_setup, NULL);
  tcase_add_test(tr, test_graph_training_trace);
  suite_add_tcase(s, tr);
  return s;
}
TU_MAIN(make_suite)
