/* Check suite: the onnx plugin (onnx.h). Export -> import -> replay of the
 * zoo models equals eager bit for bit on cpu; opsets; export errors name the
 * op and module path; the importer refuses malformed and hostile files with
 * the node and the fault (models built here with protobuf-c); and ONNX's own
 * node tests (Debian's libonnx-testdata) run through the importer, with the
 * pass / fail / unsupported counts printed. */
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>
#include <wick/nn.h>
#include <wick/onnx.h>

#include "onnx.pb-c.h"
#include "testutil.h"

static bool bit_equal(wk_tensor *a, wk_tensor *b) {
  if (!a || !b || wk_tensor_dtype(a) != wk_tensor_dtype(b) || wk_tensor_dim(a) != wk_tensor_dim(b)) return false;
  for (int d = 0; d < wk_tensor_dim(a); d++)
    if (wk_tensor_size(a, d) != wk_tensor_size(b, d)) return false;
  wk_tensor *ca = wk_contiguous(a), *cb = wk_contiguous(b);
  bool same =
      ca && cb &&
      !memcmp(wk_tensor_data(ca), wk_tensor_data(cb), (size_t)wk_tensor_numel(ca) * wk_dtype_size(wk_tensor_dtype(a)));
  wk_release(ca);
  wk_release(cb);
  return same;
}

/* Max |a - b| over elements of equal shapes (inf when shapes differ). */
static double max_diff(wk_tensor *a, wk_tensor *b) {
  if (!a || !b || wk_tensor_numel(a) != wk_tensor_numel(b)) return INFINITY;
  double *x = tu_values(a), *y = tu_values(b), m = 0;
  for (int64_t i = 0; i < wk_tensor_numel(a); i++) {
    double d = fabs(x[i] - y[i]);
    if (isnan(x[i]) != isnan(y[i])) d = INFINITY;
    if (d > m) m = d;
  }
  free(x), free(y);
  return m;
}
/* numpy.testing.assert_allclose's rule: |got - want| <= atol + rtol |want|, NaN equal to NaN. */
static bool allclose(wk_tensor *got, wk_tensor *want, double rtol, double atol) {
  if (wk_tensor_numel(got) != wk_tensor_numel(want)) return false;
  double *x = tu_values(got), *y = tu_values(want);
  bool ok = true;
  for (int64_t i = 0; i < wk_tensor_numel(got) && ok; i++)
    ok = (isnan(x[i]) && isnan(y[i])) || x[i] == y[i] || fabs(x[i] - y[i]) <= atol + rtol * fabs(y[i]);
  free(x), free(y);
  return ok;
}

static const wk_trace_dim k_batch[] = {{0, 0, "batch"}};

/* Batch norm's running statistics away from 0 and 1: a few training batches. */
static void warm_up(wk_module *m, const int64_t *shape, int nd) {
  TU_OK(wk_module_train(m, true));
  for (int i = 0; i < 2; i++) {
    wk_tensor *x = tu_rand(shape, nd, WK_F32, -1, 1, 40 + (uint64_t)i);
    wk_release(wk_module_forward(m, x));
    wk_release(x);
  }
  TU_OK(wk_module_train(m, false));
}

/* g exported to an in-memory ONNX file and imported again with lo (NULL: the defaults); g is kept. */
static wk_graph *through_onnx(wk_graph *g, const wk_onnx_load_opts *lo) {
  void *buf = NULL;
  size_t n = 0;
  TU_OK(wk_onnx_export_graph_buffer(g, &buf, &n, NULL));
  wk_graph *h = wk_onnx_load_buffer(buf, n, lo);
  wk_free(buf);
  TU_NOTNULL(h);
  return h;
}

/* Export m's trace with a dynamic batch, import it, replay at batch 1 and 3: equal to eager bit for bit. */
static void roundtrip(wk_module *m, const int64_t *item, int nd, const char *name) {
  int64_t shape[8] = {2};
  memcpy(shape + 1, item, sizeof *item * (size_t)nd);
  warm_up(m, shape, nd + 1);
  wk_tensor *x = tu_rand(shape, nd + 1, WK_F32, -1, 1, 3);
  wk_trace_options o = {sizeof o, k_batch, 1, NULL, NULL};
  wk_graph *g = wk_trace_module(m, &x, 1, &o);
  TU_NOTNULL(g);
  wk_release(x);
  wk_graph *h = through_onnx(g, NULL);
  wk_graph_release(g);
  ck_assert_int_eq(wk_graph_num_symbols(h), 1);
  ck_assert_str_eq(wk_graph_symbol_name(h, 0), "batch");
  ck_assert_int_ge(wk_graph_find_param(h, wk_graph_value_name(h, wk_graph_num_inputs(h) ? 1 : 0)), -1);
  for (int b = 0; b < 2; b++) {
    shape[0] = b ? 3 : 1;
    wk_scope_begin();
    wk_tensor *xb = tu_rand(shape, nd + 1, WK_F32, -1, 1, 11 + (uint64_t)b);
    wk_tensor *ye = wk_module_forward(m, xb), *yr = NULL;
    TU_NOTNULL(ye);
    TU_OK(wk_graph_run(h, &xb, 1, (wk_device){0}, &yr, 1));
    ck_assert_msg(bit_equal(ye, yr), "%s: export -> import -> replay at batch %lld differs from eager", name,
                  (long long)shape[0]);
    wk_scope_end();
  }
  wk_graph_release(h);
}

START_TEST(test_onnx_roundtrip_mlp_lenet) {
  int64_t hidden[] = {64, 32};
  wk_module *mlp = wk_nn_mlp(784, hidden, 2, 10);
  TU_NOTNULL(mlp);
  roundtrip(mlp, (const int64_t[]){784}, 1, "mlp");
  wk_module_release(mlp);
  wk_module *lenet = wk_nn_lenet();
  TU_NOTNULL(lenet);
  roundtrip(lenet, (const int64_t[]){1, 28, 28}, 3, "lenet");
  wk_module_release(lenet);
}
END_TEST

START_TEST(test_onnx_roundtrip_resnet18) {
  wk_module *m = wk_nn_resnet18((wk_resnet_opts){0});
  TU_NOTNULL(m);
  roundtrip(m, (const int64_t[]){3, 32, 32}, 3, "resnet18");
  wk_module_release(m);
}
END_TEST

/* ---- export: names, opsets, errors ---- */
typedef struct prog {
  int which;
} prog;
static wk_status run_prog(void *user, wk_tensor *const *in, int n, wk_tensor **out, int max, int *nout) {
  const prog *p = user;
  wk_tensor *x = in[0], *y = NULL;
  (void)n, (void)max;
  wk_scope_begin(); /* intermediates go with the scope */
  switch (p->which) {
    case 0: { /* layer_norm, gelu, softmax, view on a symbolic batch, transpose, mean */
      int64_t ns[] = {8};
      wk_tensor *ln = wk_layer_norm(x, ns, 1, NULL, NULL, 1e-5, NULL);
      wk_tensor *g = wk_gelu(ln, "none");
      wk_tensor *v = wk_view(g, (const int64_t[]){wk_tensor_size(x, 0) * 2, 4}, 2);
      wk_tensor *t = wk_transpose(v, 0, 1);
      wk_tensor *s = wk_softmax(t, 1);
      y = wk_add(wk_mul(s, s), wk_sigmoid(s));
      break;
    }
    case 1:
      y = wk_erfinv(wk_mul_scalar(x, 0.5)); /* ONNX has no inverse error function */
      break;
    default:
      y = wk_relu(x);
  }
  wk_scope_keep(y);
  wk_scope_end();
  out[0] = y;
  *nout = 1;
  return y ? WK_OK : wk_last_error();
}

START_TEST(test_onnx_export_opsets_and_dynamic_view) {
  int64_t shape[] = {3, 8};
  wk_tensor *x = tu_rand(shape, 2, WK_F32, -2, 2, 9);
  prog p = {0};
  wk_trace_options o = {sizeof o, k_batch, 1, NULL, NULL};
  wk_graph *g = wk_trace(run_prog, &p, &x, 1, &o);
  TU_NOTNULL(g);
  wk_tensor *want = NULL;
  int nout = 0;
  TU_OK(run_prog(&p, &x, 1, &want, 1, &nout));
  for (int opset = WK_ONNX_MIN_OPSET; opset <= WK_ONNX_MAX_OPSET; opset++) {
    void *buf = NULL;
    size_t n = 0;
    TU_OK(wk_onnx_export_graph_buffer(g, &buf, &n, WK_ONNX_EXPORT_OPTS(.opset = opset)));
    wk_graph *h = wk_onnx_load_buffer(buf, n, NULL);
    TU_NOTNULL(h);
    wk_free(buf);
    wk_tensor *got = NULL;
    TU_OK(wk_graph_run(h, &x, 1, (wk_device){0}, &got, 1));
    /* decompositions (opsets without LayerNormalization / Gelu) round differently */
    double err = max_diff(got, want);
    ck_assert_msg(err < 1e-5, "opset %d: max difference %g", opset, err);
    wk_release(got);
    wk_graph_release(h);
  }
  /* other batch sizes: the view's size is computed from the input's shape in the graph */
  wk_graph *h = through_onnx(g, NULL);
  int64_t s5[] = {5, 8};
  wk_tensor *x5 = tu_rand(s5, 2, WK_F32, -2, 2, 10), *w5 = NULL, *g5 = NULL;
  TU_OK(run_prog(&p, &x5, 1, &w5, 1, &nout));
  TU_OK(wk_graph_run(h, &x5, 1, (wk_device){0}, &g5, 1));
  ck_assert_int_eq(wk_tensor_size(g5, 1), 10);
  ck_assert(allclose(g5, w5, 1e-5, 1e-6));
  wk_release(x5), wk_release(w5), wk_release(g5), wk_release(want), wk_release(x);
  wk_graph_release(h);
  void *buf = NULL;
  size_t n = 0;
  ck_assert_int_eq(wk_onnx_export_graph_buffer(g, &buf, &n, WK_ONNX_EXPORT_OPTS(.opset = 12)), WK_ERR_UNSUPPORTED);
  ck_assert_ptr_null(buf);
  ck_assert_int_eq(wk_onnx_export_graph_buffer(g, &buf, &n, WK_ONNX_EXPORT_OPTS(.opset = WK_ONNX_MAX_OPSET + 1)),
                   WK_ERR_UNSUPPORTED);
  wk_graph_release(g);
}
END_TEST

START_TEST(test_onnx_export_errors) {
  int64_t shape[] = {2, 4};
  wk_tensor *x = tu_rand(shape, 2, WK_F32, -1, 1, 1);
  prog p = {1};
  wk_graph *g = wk_trace(run_prog, &p, &x, 1, NULL);
  TU_NOTNULL(g);
  void *buf = (void *)1;
  size_t n = 5;
  ck_assert_int_eq(wk_onnx_export_graph_buffer(g, &buf, &n, NULL), WK_ERR_UNSUPPORTED);
  ck_assert_ptr_null(buf);
  ck_assert_msg(strstr(wk_last_error_message(), "erfinv()"), "%s", wk_last_error_message());
  wk_graph_release(g);
  /* training-mode batch norm, with its module path */
  wk_module *m = wk_nn_resnet18((wk_resnet_opts){0});
  TU_NOTNULL(m);
  TU_OK(wk_module_train(m, true));
  int64_t img[] = {2, 3, 16, 16};
  wk_tensor *xi = tu_rand(img, 4, WK_F32, -1, 1, 2);
  ck_assert_int_eq(wk_onnx_export(m, &xi, 1, "/nonexistent-dir/x.onnx", NULL), WK_ERR_UNSUPPORTED);
  ck_assert_msg(strstr(wk_last_error_message(), "batch_norm()") && strstr(wk_last_error_message(), "'bn1'"), "%s",
                wk_last_error_message());
  TU_OK(wk_module_train(m, false));
  /* names and axes */
  ck_assert_int_eq(
      wk_onnx_export(m, &xi, 1, "/nonexistent-dir/x.onnx",
                     WK_ONNX_EXPORT_OPTS(.dynamic_axes = (wk_onnx_dynamic_axis[]){{"x", 5, "b"}}, .ndynamic_axes = 1)),
      WK_ERR_INDEX);
  ck_assert_int_eq(wk_onnx_export(m, &xi, 1, "/nonexistent-dir/x.onnx", NULL), WK_ERR_IO);
  ck_assert_msg(strstr(wk_last_error_message(), "/nonexistent-dir/x.onnx"), "%s", wk_last_error_message());
  ck_assert_int_eq(wk_onnx_export(NULL, &xi, 1, "a.onnx", NULL), WK_ERR_NULL);
  ck_assert_int_eq(wk_onnx_export(m, &xi, 1, NULL, NULL), WK_ERR_NULL);
  ck_assert_int_eq(wk_onnx_export_graph(NULL, "a.onnx", NULL), WK_ERR_NULL);
  ck_assert_int_eq(wk_onnx_export(m, &xi, 1, "a.onnx", &(wk_onnx_export_opts){.struct_size = 3}), WK_ERR_INVALID_ARG);
  ck_assert_ptr_null(wk_onnx_load(NULL, NULL));
  ck_assert_ptr_null(wk_onnx_load("/nonexistent-dir/x.onnx", NULL));
  ck_assert_int_eq(wk_last_error(), WK_ERR_IO);
  wk_release(xi), wk_release(x);
  wk_module_release(m);
}
END_TEST

START_TEST(test_onnx_export_file_and_info) {
  wk_module *m = wk_nn_lenet();
  TU_NOTNULL(m);
  TU_OK(wk_module_train(m, false));
  int64_t img[] = {2, 1, 28, 28};
  wk_tensor *x = tu_rand(img, 4, WK_F32, -1, 1, 2);
  char path[] = "/tmp/wick-onnx-XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  TU_OK(wk_onnx_export(m, &x, 1, path,
                       WK_ONNX_EXPORT_OPTS(.input_names = (const char *[]){"image"}, .ninput_names = 1,
                                           .output_names = (const char *[]){"logits"}, .noutput_names = 1,
                                           .dynamic_axes = (wk_onnx_dynamic_axis[]){{"image", 0, "N"}},
                                           .ndynamic_axes = 1, .opset = 18)));
  wk_onnx_info in = {.struct_size = sizeof in};
  TU_OK(wk_onnx_info_read(path, &in));
  ck_assert_int_eq(in.opset, 18);
  ck_assert_str_eq(in.producer_name, "wick");
  ck_assert_int_eq(in.ninputs, 1);
  ck_assert_str_eq(in.input_names[0], "image");
  ck_assert_str_eq(in.input_shapes[0], "f32[N, 1, 28, 28]");
  ck_assert_str_eq(in.output_names[0], "logits");
  ck_assert_str_eq(in.output_shapes[0], "f32[N, 10]");
  int convs = 0;
  for (int i = 0; i < in.nops; i++)
    if (!strcmp(in.op_types[i], "Conv")) convs = in.op_counts[i];
  ck_assert_int_eq(convs, 2);
  wk_onnx_info_free(&in);
  wk_onnx_info_free(NULL);
  wk_graph *g = wk_onnx_load(path, NULL);
  TU_NOTNULL(g);
  ck_assert_int_ge(wk_graph_find_param(g, "0.weight"), 0);
  ck_assert_int_ge(wk_graph_find_param(g, "7.bias"), 0);
  /* node names carry the module path */
  bool seen = false;
  for (int i = 0; i < wk_graph_num_nodes(g); i++)
    seen |= !strcmp(wk_graph_node_module_path(g, wk_graph_node_at(g, i)), "3");
  ck_assert(seen);
  wk_graph_release(g);
  unlink(path);
  wk_release(x);
  wk_module_release(m);
}
END_TEST

/* ---- hostile files, built with protobuf-c ---- */
typedef struct mb {
  Onnx__ModelProto m;
  Onnx__GraphProto g;
  Onnx__OperatorSetIdProto os, *osl[1];
  Onnx__NodeProto nodes[4], *np[4];
  Onnx__AttributeProto attrs[4], *ap[4];
  Onnx__ValueInfoProto vin, vout, *vip[1], *vop[1];
  Onnx__TypeProto tin, tout;
  Onnx__TypeProto__Tensor ttin, ttout;
  Onnx__TensorShapeProto sin, sout;
  Onnx__TensorShapeProto__Dimension din[2], dout[2], *dinp[2], *doutp[2];
  char *ins[4][2], *outs[4][1];
  Onnx__TensorShapeProto__Dimension dx[6], *dxp[6]; /* mb_weighted's input shape */
  Onnx__TensorProto w, *wp[1];                       /* and its zero weight 'w' */
  int64_t wdims[6];
  float wraw[128];
} mb;

/* x[2, 3] -> Relu -> y[2, 3] */
static void mb_init(mb *b) {
  memset(b, 0, sizeof *b);
  onnx__model_proto__init(&b->m);
  onnx__graph_proto__init(&b->g);
  onnx__operator_set_id_proto__init(&b->os);
  b->os.has_version = 1, b->os.version = 17, b->os.domain = "";
  b->osl[0] = &b->os;
  b->m.has_ir_version = 1, b->m.ir_version = 8, b->m.n_opset_import = 1, b->m.opset_import = b->osl;
  b->m.graph = &b->g;
  onnx__node_proto__init(&b->nodes[0]);
  b->ins[0][0] = "x", b->outs[0][0] = "y";
  b->nodes[0].op_type = "Relu", b->nodes[0].name = "relu1";
  b->nodes[0].n_input = 1, b->nodes[0].input = b->ins[0];
  b->nodes[0].n_output = 1, b->nodes[0].output = b->outs[0];
  b->np[0] = &b->nodes[0];
  b->g.n_node = 1, b->g.node = b->np;
  Onnx__ValueInfoProto *v[2] = {&b->vin, &b->vout};
  Onnx__TypeProto *t[2] = {&b->tin, &b->tout};
  Onnx__TypeProto__Tensor *tt[2] = {&b->ttin, &b->ttout};
  Onnx__TensorShapeProto *s[2] = {&b->sin, &b->sout};
  Onnx__TensorShapeProto__Dimension *d[2] = {b->din, b->dout}, **dp[2] = {b->dinp, b->doutp};
  for (int i = 0; i < 2; i++) {
    onnx__value_info_proto__init(v[i]);
    onnx__type_proto__init(t[i]);
    onnx__type_proto__tensor__init(tt[i]);
    onnx__tensor_shape_proto__init(s[i]);
    for (int k = 0; k < 2; k++) {
      onnx__tensor_shape_proto__dimension__init(&d[i][k]);
      d[i][k].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
      d[i][k].dim_value = k ? 3 : 2;
      dp[i][k] = &d[i][k];
    }
    s[i]->n_dim = 2, s[i]->dim = dp[i];
    tt[i]->has_elem_type = 1, tt[i]->elem_type = 1, tt[i]->shape = s[i];
    t[i]->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE, t[i]->tensor_type = tt[i];
    v[i]->type = t[i];
  }
  b->vin.name = "x", b->vout.name = "y";
  b->vip[0] = &b->vin, b->vop[0] = &b->vout;
  b->g.n_input = 1, b->g.input = b->vip, b->g.n_output = 1, b->g.output = b->vop;
}

/* node 0 becomes OP `name` on x (static shape xs) and a zero f32 weight
 * initializer 'w' of shape ws (at most 128 elements) */
static void mb_weighted(mb *b, const char *op, const char *name, const int64_t *xs, int xnd, const int64_t *ws,
                        int wnd) {
  for (int k = 0; k < xnd; k++) {
    onnx__tensor_shape_proto__dimension__init(&b->dx[k]);
    b->dx[k].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    b->dx[k].dim_value = xs[k];
    b->dxp[k] = &b->dx[k];
  }
  b->sin.n_dim = (size_t)xnd, b->sin.dim = b->dxp;
  onnx__tensor_proto__init(&b->w);
  size_t n = 1;
  for (int k = 0; k < wnd; k++) n *= (size_t)(b->wdims[k] = ws[k]);
  ck_assert(n <= sizeof b->wraw / sizeof b->wraw[0]);
  memset(b->wraw, 0, sizeof b->wraw);
  b->w.name = "w", b->w.n_dims = (size_t)wnd, b->w.dims = b->wdims, b->w.has_data_type = 1, b->w.data_type = 1;
  b->w.has_raw_data = 1, b->w.raw_data.data = (uint8_t *)b->wraw, b->w.raw_data.len = n * sizeof(float);
  b->wp[0] = &b->w;
  b->g.n_initializer = 1, b->g.initializer = b->wp;
  b->nodes[0].op_type = (char *)op, b->nodes[0].name = (char *)name;
  b->nodes[0].n_input = 2, b->ins[0][1] = "w";
}

/* Packs the model, loads it; expects failure with `code` and every needle in the message. */
static void expect_load_error(mb *b, wk_status code, const char *n1, const char *n2) {
  size_t n = onnx__model_proto__get_packed_size(&b->m);
  uint8_t *buf = malloc(n + 1);
  onnx__model_proto__pack(&b->m, buf);
  wk_graph *g = wk_onnx_load_buffer(buf, n, NULL);
  free(buf);
  ck_assert_msg(!g, "a bad model loaded (expected '%s')", n1);
  ck_assert_msg(wk_last_error() == code, "error %d, expected %d: %s", wk_last_error(), code, wk_last_error_message());
  ck_assert_msg(strstr(wk_last_error_message(), n1) && (!n2 || strstr(wk_last_error_message(), n2)),
                "message '%s' lacks '%s' / '%s'", wk_last_error_message(), n1, n2 ? n2 : "");
}

START_TEST(test_onnx_load_validation) {
  mb b;
  mb_init(&b);
  { /* the good model loads and runs */
    size_t n = onnx__model_proto__get_packed_size(&b.m);
    uint8_t *buf = malloc(n);
    onnx__model_proto__pack(&b.m, buf);
    wk_graph *g = wk_onnx_load_buffer(buf, n, NULL);
    free(buf);
    TU_NOTNULL(g);
    wk_tensor *x = TU_T(WK_F32, (2, 3), -1, 2, -3, 4, -5, 6), *y = NULL;
    TU_OK(wk_graph_run(g, &x, 1, (wk_device){0}, &y, 1));
    TU_EQ_VALS(y, 0, 2, 0, 4, 0, 6);
    wk_release(x), wk_release(y);
    wk_graph_release(g);
  }
  b.nodes[0].op_type = "Relx";
  expect_load_error(&b, WK_ERR_UNSUPPORTED, "node 'relu1' (Relx)", "op type 'Relx' is not supported");
  mb_init(&b);
  onnx__attribute_proto__init(&b.attrs[0]);
  b.attrs[0].name = "alpha", b.attrs[0].has_type = 1, b.attrs[0].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
  b.ap[0] = &b.attrs[0];
  b.nodes[0].n_attribute = 1, b.nodes[0].attribute = b.ap;
  expect_load_error(&b, WK_ERR_UNSUPPORTED, "node 'relu1' (Relu)", "unsupported attribute 'alpha'");
  mb_init(&b);
  b.os.version = 99;
  expect_load_error(&b, WK_ERR_UNSUPPORTED, "opset 99", NULL);
  mb_init(&b);
  b.os.domain = "com.example";
  expect_load_error(&b, WK_ERR_UNSUPPORTED, "no opset of the default domain", NULL);
  mb_init(&b);
  b.dout[1].dim_value = 4;
  expect_load_error(&b, WK_ERR_SHAPE, "output 'y' dim 1 is declared 4 but is 3", NULL);
  mb_init(&b);
  b.ins[0][0] = "nowhere";
  expect_load_error(&b, WK_ERR_INVALID_ARG, "node 'relu1'", "'nowhere' is not a graph input");
  mb_init(&b);
  b.outs[0][0] = "x";
  expect_load_error(&b, WK_ERR_INVALID_ARG, "'x' is defined twice", NULL);
  mb_init(&b);
  b.ttin.elem_type = 8; /* string */
  expect_load_error(&b, WK_ERR_DTYPE, "input 'x'", "string");
  mb_init(&b);
  b.nodes[0].n_input = 2; /* Relu(x, x) */
  b.ins[0][1] = "x";
  expect_load_error(&b, WK_ERR_INVALID_ARG, "node 'relu1' (Relu)", "2 inputs, 1 expected");
  mb_init(&b);
  { /* an initializer whose raw_data is too short for its dims */
    Onnx__TensorProto t, *tp[1] = {&t};
    onnx__tensor_proto__init(&t);
    int64_t dims[] = {1000000, 1000000};
    float raw[4] = {0};
    t.name = "w", t.n_dims = 2, t.dims = dims, t.has_data_type = 1, t.data_type = 1;
    t.has_raw_data = 1, t.raw_data.data = (uint8_t *)raw, t.raw_data.len = sizeof raw;
    b.g.n_initializer = 1, b.g.initializer = tp;
    expect_load_error(&b, WK_ERR_SHAPE, "tensor 'w'", "raw_data has 16");
    dims[0] = -1;
    expect_load_error(&b, WK_ERR_SHAPE, "tensor 'w' has a bad dim -1", NULL);
    b.g.n_initializer = 0;
  }
  mb_init(&b);
  { /* Conv with a 3-d weight and an asymmetric pad */
    Onnx__TensorProto t, *tp[1] = {&t};
    onnx__tensor_proto__init(&t);
    int64_t dims[] = {1, 2, 3, 3};
    float raw[18] = {0};
    t.name = "w", t.n_dims = 4, t.dims = dims, t.has_data_type = 1, t.data_type = 1;
    t.has_raw_data = 1, t.raw_data.data = (uint8_t *)raw, t.raw_data.len = sizeof raw;
    b.g.n_initializer = 1, b.g.initializer = tp;
    b.nodes[0].op_type = "Conv", b.nodes[0].name = "conv1";
    b.nodes[0].n_input = 2, b.ins[0][1] = "w";
    expect_load_error(&b, WK_ERR_UNSUPPORTED, "node 'conv1' (Conv)", "only 1-d, 2-d and 3-d (NCL, NCHW, NCDHW) inputs");
    b.g.n_initializer = 0;
  }
  /* not protobuf at all, truncated, empty */
  static const uint8_t junk[] = "this is not an onnx file at all \xff\xff\xff";
  ck_assert_ptr_null(wk_onnx_load_buffer(junk, sizeof junk, NULL));
  ck_assert_int_eq(wk_last_error(), WK_ERR_INVALID_ARG);
  ck_assert_ptr_null(wk_onnx_load_buffer(junk, 0, NULL));
  ck_assert_ptr_null(wk_onnx_load_buffer(NULL, 4, NULL));
  mb_init(&b);
  size_t n = onnx__model_proto__get_packed_size(&b.m);
  uint8_t *buf = malloc(n);
  onnx__model_proto__pack(&b.m, buf);
  for (size_t cut = 0; cut < n; cut++) { /* every prefix: an error or (rarely) a valid smaller model, no crash */
    wk_graph *g = wk_onnx_load_buffer(buf, cut, NULL);
    wk_graph_release(g);
  }
  uint64_t s = 77;
  for (int round = 0; round < 2000; round++) { /* flipped bytes */
    uint8_t *c = malloc(n);
    memcpy(c, buf, n);
    for (int k = 0; k < 3; k++) c[(size_t)(tu_uniform(&s) * (double)n) % n] ^= (uint8_t)(1 + tu_uniform(&s) * 254);
    wk_graph_release(wk_onnx_load_buffer(c, n, NULL));
    free(c);
  }
  free(buf);
}
END_TEST

/* Graphs nested in attributes, 3000 deep (9000 messages): refused before protobuf-c recurses. */
START_TEST(test_onnx_load_deep_nesting) {
  size_t depth = 3000, n = 0, cap = depth * 12 + 64;
  uint8_t *buf = malloc(cap), *tmp = malloc(cap);
  ck_assert(buf && tmp);
  /* built inside out: Graph{node: Node{attribute: Attr{g: Graph{...}}}} */
  for (size_t i = 0; i < depth; i++) {
    /* wrap the current bytes as field (6, LEN) of an Attribute, that as field (5) of a Node, that as field (1) of a
     * Graph */
    const uint8_t keys[3] = {(6 << 3) | 2, (5 << 3) | 2, (1 << 3) | 2};
    for (int k = 0; k < 3; k++) {
      size_t m = 0;
      tmp[m++] = keys[k];
      size_t len = n;
      do {
        tmp[m++] = (uint8_t)((len & 0x7f) | (len > 0x7f ? 0x80 : 0));
        len >>= 7;
      } while (len);
      if (m + n > cap) break;
      memcpy(tmp + m, buf, n);
      n += m;
      memcpy(buf, tmp, n);
    }
  }
  /* Model{graph (7): ...} */
  size_t m = 0, len = n;
  tmp[m++] = (7 << 3) | 2;
  do {
    tmp[m++] = (uint8_t)((len & 0x7f) | (len > 0x7f ? 0x80 : 0));
    len >>= 7;
  } while (len);
  memcpy(tmp + m, buf, n);
  ck_assert_ptr_null(wk_onnx_load_buffer(tmp, n + m, NULL));
  ck_assert_msg(strstr(wk_last_error_message(), "nested more than"), "%s", wk_last_error_message());
  free(buf);
  free(tmp);
}
END_TEST

/* ---- ONNX's node tests ---- */
/* ---- ConvTranspose ---- */
START_TEST(test_onnx_convtranspose) {
  /* Wick's ConvTranspose2d (composed of zero-stuffing, pad and conv2d) round trips bit for bit */
  wk_module *m =
      wk_nn_conv_transpose2d(4, 6, 3, (wk_conv2d_opts){.stride = 2, .padding = 1, .output_padding = 1, .groups = 2});
  TU_NOTNULL(m);
  roundtrip(m, (const int64_t[]){4, 5, 5}, 3, "conv_transpose2d");
  wk_module_release(m);
  m = wk_nn_conv_transpose2d(3, 2, 2, (wk_conv2d_opts){.stride = 3, .dilation = 2});
  TU_NOTNULL(m);
  roundtrip(m, (const int64_t[]){3, 4, 7}, 3, "conv_transpose2d stride 3 dilation 2");
  wk_module_release(m);
  /* the importer's faults: x[1, 2, 5, 5], w[2, 3, 3, 3] */
  mb b;
  mb_init(&b);
  mb_weighted(&b, "ConvTranspose", "up1", (const int64_t[]){1, 2, 5, 5}, 4, (const int64_t[]){2, 3, 3, 3}, 4);
  int64_t two[] = {2, 2}, pads3[] = {1, 1, 1};
  onnx__attribute_proto__init(&b.attrs[0]);
  onnx__attribute_proto__init(&b.attrs[1]);
  b.attrs[0].name = "strides", b.attrs[0].has_type = 1, b.attrs[0].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
  b.attrs[0].n_ints = 2, b.attrs[0].ints = two;
  b.attrs[1].name = "output_padding", b.attrs[1].has_type = 1,
  b.attrs[1].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
  b.attrs[1].n_ints = 2, b.attrs[1].ints = two;
  b.ap[0] = &b.attrs[0], b.ap[1] = &b.attrs[1];
  b.nodes[0].n_attribute = 2, b.nodes[0].attribute = b.ap;
  expect_load_error(&b, WK_ERR_INVALID_ARG, "node 'up1' (ConvTranspose)",
                    "output_padding 2 must be non-negative and smaller than the stride or the dilation");
  b.attrs[1].name = "pads", b.attrs[1].n_ints = 3, b.attrs[1].ints = pads3;
  expect_load_error(&b, WK_ERR_INVALID_ARG, "node 'up1' (ConvTranspose)", "pads has 3 elements, 4 expected");
  b.attrs[1].name = "group", b.attrs[1].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
  b.attrs[1].has_i = 1, b.attrs[1].i = 4, b.attrs[1].n_ints = 0;
  expect_load_error(&b, WK_ERR_INVALID_ARG, "node 'up1' (ConvTranspose)",
                    "2 input channels are not divisible by group=4");
  b.attrs[1].name = "auto_pad", b.attrs[1].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING, b.attrs[1].has_i = 0;
  b.attrs[1].has_s = 1, b.attrs[1].s.data = (uint8_t *)"SAME_MIDDLE", b.attrs[1].s.len = 11;
  expect_load_error(&b, WK_ERR_INVALID_ARG, "node 'up1' (ConvTranspose)", "auto_pad='SAME_MIDDLE'");
  b.nodes[0].n_attribute = 0;
  b.wdims[0] = 3, b.w.raw_data.len = 81 * sizeof(float);
  expect_load_error(&b, WK_ERR_SHAPE, "node 'up1' (ConvTranspose)", "the input has 2 channels, the weight expects 3");
  b.wdims[0] = 2;
  b.w.n_dims = 3, b.w.raw_data.len = 2 * 3 * 3 * 4; /* a 1-d weight for a 2-d input */
  expect_load_error(&b, WK_ERR_INVALID_ARG, "node 'up1' (ConvTranspose)", "the weight has 3 dims for an input of 4");
  b.sin.n_dim = 2, b.sin.dim = b.dinp; /* x[2, 3] */
  expect_load_error(&b, WK_ERR_UNSUPPORTED, "node 'up1' (ConvTranspose)", "only 1-d and 2-d (NCL, NCHW) inputs");
}
END_TEST

/* ---- BatchNormalization folded into Conv (wk_onnx_load_opts.fold_batch_norm) ---- */
static int count_op(const wk_graph *g, const char *op) {
  int n = 0;
  for (int p = 0; p < wk_graph_num_nodes(g); p++)
    n += !strcmp(wk_op_name(wk_graph_node_op(g, wk_graph_node_at(g, p))), op);
  return n;
}

static wk_tensor *g_fw[2], *g_fb[2], *g_bn[4];
/* bn(conv_a(x)) + conv_a(x): not folded (the conv's result has a second reader); bn(conv_b(x)): folded
 * (into conv_b's own bias; with no bias it would need BN's beta, which both BNs read, and stay) */
static wk_status fold_prog(void *user, wk_tensor *const *in, int n, wk_tensor **out, int max, int *nout) {
  (void)user, (void)n, (void)max;
  wk_scope_begin();
  const int64_t one[] = {1, 1}, zero[] = {0, 0};
  wk_tensor *a = wkx_conv2d(in[0], g_fw[0], g_fb[0], one, 2, one, 2, one, 2, 1);
  wk_tensor *b = wkx_conv2d(in[0], g_fw[1], g_fb[1], one, 2, zero, 2, one, 2, 1); /* BN's tensors are shared */
  wk_tensor *ya = wk_add(wk_batch_norm(a, g_bn[0], g_bn[1], g_bn[2], g_bn[3], false, 0.1, 1e-3, NULL), a);
  wk_tensor *yb = wk_batch_norm(b, g_bn[0], g_bn[1], g_bn[2], g_bn[3], false, 0.1, 1e-3, NULL);
  wk_tensor *y = wk_add(wk_narrow(wk_narrow(ya, 2, 0, 4), 3, 0, 4), yb);
  wk_scope_keep(y);
  wk_scope_end();
  out[0] = y;
  *nout = 1;
  return y ? WK_OK : wk_last_error();
}

START_TEST(test_onnx_fold_batch_norm) {
  /* resnet18: all 20 batch norms fold; the result stays within rounding of eager */
  wk_module *m = wk_nn_resnet18((wk_resnet_opts){0});
  TU_NOTNULL(m);
  int64_t shape[] = {2, 3, 32, 32};
  warm_up(m, shape, 4);
  wk_tensor *x = tu_rand(shape, 4, WK_F32, -1, 1, 3);
  wk_trace_options o = {sizeof o, k_batch, 1, NULL, NULL};
  wk_graph *g = wk_trace_module(m, &x, 1, &o);
  TU_NOTNULL(g);
  void *buf = NULL;
  size_t n = 0;
  TU_OK(wk_onnx_export_graph_buffer(g, &buf, &n, NULL));
  wk_graph_release(g);
  wk_graph *plain = wk_onnx_load_buffer(buf, n, NULL);
  wk_graph *fold = wk_onnx_load_buffer(buf, n, WK_ONNX_LOAD_OPTS(.fold_batch_norm = true));
  wk_onnx_load_opts v1 = {.struct_size = WK_ONNX_LOAD_OPTS_V1_SIZE, .fold_batch_norm = true};
  wk_graph *old = wk_onnx_load_buffer(buf, n, &v1); /* a version-1 caller: no folding */
  wk_free(buf);
  TU_NOTNULL(plain), TU_NOTNULL(fold), TU_NOTNULL(old);
  ck_assert_int_eq(count_op(plain, "batch_norm"), 20);
  ck_assert_int_eq(count_op(old, "batch_norm"), 20);
  ck_assert_int_eq(count_op(fold, "batch_norm"), 0);
  ck_assert_int_eq(count_op(fold, "conv2d"), count_op(plain, "conv2d"));
  wk_tensor *ye = wk_module_forward(m, x), *yp = NULL, *yf = NULL;
  TU_NOTNULL(ye);
  TU_OK(wk_graph_run(plain, &x, 1, (wk_device){0}, &yp, 1));
  TU_OK(wk_graph_run(fold, &x, 1, (wk_device){0}, &yf, 1));
  ck_assert(bit_equal(ye, yp));
  double d = max_diff(ye, yf);
  ck_assert_msg(d > 0 && d < 1e-5, "folded resnet18: max abs diff to eager %g", d);
  ck_assert(allclose(yf, ye, 1e-3, 1e-5));
  wk_release(x), wk_release(ye), wk_release(yp), wk_release(yf);
  wk_graph_release(plain), wk_graph_release(fold), wk_graph_release(old);
  wk_module_release(m);
  /* a conv whose result has another reader keeps its batch norm */
  g_fw[0] = tu_rand((const int64_t[]){4, 3, 3, 3}, 4, WK_F32, -1, 1, 7);
  g_fw[1] = tu_rand((const int64_t[]){4, 3, 3, 3}, 4, WK_F32, -1, 1, 8);
  g_fb[0] = tu_rand((const int64_t[]){4}, 1, WK_F32, -1, 1, 9);
  g_fb[1] = tu_rand((const int64_t[]){4}, 1, WK_F32, -1, 1, 19);
  for (int i = 0; i < 4; i++)
    g_bn[i] = tu_rand((const int64_t[]){4}, 1, WK_F32, i == 3 ? 0.5 : -1, 2, 10 + (uint64_t)i);
  x = tu_rand((const int64_t[]){2, 3, 6, 6}, 4, WK_F32, -1, 1, 4);
  g = wk_trace(fold_prog, NULL, &x, 1, NULL);
  TU_NOTNULL(g);
  fold = through_onnx(g, WK_ONNX_LOAD_OPTS(.fold_batch_norm = true));
  wk_graph_release(g);
  ck_assert_int_eq(count_op(fold, "batch_norm"), 1);
  wk_tensor *y = NULL, *want = NULL;
  int nout = 0;
  TU_OK(fold_prog(NULL, &x, 1, &want, 1, &nout));
  TU_OK(wk_graph_run(fold, &x, 1, (wk_device){0}, &y, 1));
  ck_assert(allclose(y, want, 1e-4, 1e-5));
  wk_release(y), wk_release(want), wk_release(x);
  wk_graph_release(fold);
  wk_release(g_fw[0]), wk_release(g_fw[1]), wk_release(g_fb[0]), wk_release(g_fb[1]);
  for (int i = 0; i < 4; i++) wk_release(g_bn[i]);
}
END_TEST

/* ---- 3-d convolution and pooling ---- */
static wk_tensor *g_w3, *g_b3;
/* conv3d (groups, bias, per-dim stride / padding / dilation) -> max_pool3d (dilation, ceil_mode) and
 * avg_pool3d (count_include_pad off) and avg_pool3d (on, the default stride) */
static wk_status prog3d(void *user, wk_tensor *const *in, int n, wk_tensor **out, int max, int *nout) {
  (void)user, (void)n, (void)max;
  wk_scope_begin();
  const int64_t s[] = {1, 2, 1}, p[] = {1, 0, 1}, d[] = {1, 1, 2};
  wk_tensor *y = wkx_conv3d(in[0], g_w3, g_b3, s, 3, p, 3, d, 3, 2);
  const int64_t mk[] = {2, 2, 2}, ms[] = {1, 1, 2}, mp[] = {1, 0, 1}, md[] = {2, 1, 1};
  wk_tensor *m = wkx_max_pool3d_with_indices(y, mk, 3, ms, 3, mp, 3, md, 3, true, NULL);
  const int64_t ak[] = {3, 2, 2}, as[] = {2, 1, 2}, ap[] = {1, 1, 0};
  wk_tensor *a = wkx_avg_pool3d(y, ak, 3, as, 3, ap, 3, false, false, NULL);
  const int64_t k2 = 2, one = 1;
  wk_tensor *b = wkx_avg_pool3d(y, &k2, 1, NULL, 0, &one, 1, false, true, NULL);
  out[0] = m, out[1] = a, out[2] = b;
  for (int i = 0; i < 3; i++) wk_scope_keep(out[i]);
  wk_scope_end();
  *nout = 3;
  return m && a && b ? WK_OK : wk_last_error();
}
/* Sets node 0's attribute i to an int list. */
static void set_ints(mb *b, int i, const char *name, int64_t *v, size_t n) {
  onnx__attribute_proto__init(&b->attrs[i]);
  b->attrs[i].name = (char *)name, b->attrs[i].has_type = 1;
  b->attrs[i].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
  b->attrs[i].n_ints = n, b->attrs[i].ints = v;
  b->ap[i] = &b->attrs[i];
  b->nodes[0].n_attribute = (size_t)i + 1, b->nodes[0].attribute = b->ap;
}

START_TEST(test_onnx_conv_pool_3d) {
  /* export (Conv / MaxPool / AveragePool with 3-element attributes) -> import -> replay equals eager bit for bit,
   * at the traced batch and another */
  g_w3 = tu_rand((const int64_t[]){6, 2, 3, 2, 3}, 5, WK_F32, -1, 1, 31);
  g_b3 = tu_rand((const int64_t[]){6}, 1, WK_F32, -1, 1, 32);
  int64_t shape[] = {2, 4, 6, 7, 8};
  wk_tensor *x = tu_rand(shape, 5, WK_F32, -1, 1, 33);
  wk_trace_options o = {sizeof o, k_batch, 1, NULL, NULL};
  wk_graph *g = wk_trace(prog3d, NULL, &x, 1, &o);
  TU_NOTNULL(g);
  wk_release(x);
  wk_graph *h = through_onnx(g, NULL);
  wk_graph_release(g);
  ck_assert_int_eq(count_op(h, "conv3d"), 1);
  ck_assert_int_eq(count_op(h, "max_pool3d_with_indices"), 1);
  ck_assert_int_eq(count_op(h, "avg_pool3d"), 2);
  for (int bs = 2; bs <= 3; bs++) {
    shape[0] = bs;
    wk_tensor *xb = tu_rand(shape, 5, WK_F32, -1, 1, 40 + (uint64_t)bs), *want[3] = {0}, *got[3] = {0};
    int nout = 0;
    TU_OK(prog3d(NULL, &xb, 1, want, 3, &nout));
    TU_OK(wk_graph_run(h, &xb, 1, (wk_device){0}, got, 3));
    for (int i = 0; i < 3; i++) {
      ck_assert_msg(bit_equal(want[i], got[i]), "3-d output %d at batch %d differs from eager", i, bs);
      wk_release(want[i]), wk_release(got[i]);
    }
    wk_release(xb);
  }
  wk_graph_release(h);
  wk_release(g_w3), wk_release(g_b3);
  /* the importer's faults: x[1, 2, 4, 4, 4], w[2, 2, 3, 3, 3] */
  mb b;
  mb_init(&b);
  mb_weighted(&b, "Conv", "conv3", (const int64_t[]){1, 2, 4, 4, 4}, 5, (const int64_t[]){2, 2, 3, 3, 3}, 5);
  int64_t pads[] = {1, 1, 1, 1, 1, 0}, k2[] = {3, 3}, k3[] = {3, 3, 2}, dil[] = {1, 2, 1};
  set_ints(&b, 0, "pads", pads, 6);
  expect_load_error(&b, WK_ERR_UNSUPPORTED, "node 'conv3' (Conv)",
                    "asymmetric pads [1, 1, 1, 1, 1, 0] are not supported");
  set_ints(&b, 0, "pads", pads, 4);
  expect_load_error(&b, WK_ERR_INVALID_ARG, "node 'conv3' (Conv)", "pads has 4 elements, 6 expected");
  set_ints(&b, 0, "kernel_shape", k2, 2);
  expect_load_error(&b, WK_ERR_INVALID_ARG, "node 'conv3' (Conv)", "kernel_shape has 2 elements for 3 spatial dims");
  set_ints(&b, 0, "kernel_shape", k3, 3);
  expect_load_error(&b, WK_ERR_SHAPE, "node 'conv3' (Conv)",
                    "kernel_shape [3, 3, 2] differs from the weight's [3, 3, 3]");
  b.nodes[0].n_attribute = 0;
  b.w.n_dims = 4, b.w.raw_data.len = 2 * 2 * 3 * 3 * 4; /* a 2-d weight for a 3-d input */
  expect_load_error(&b, WK_ERR_INVALID_ARG, "node 'conv3' (Conv)", "the weight has 4 dims for an input of 5");
  b.g.n_initializer = 0;
  b.nodes[0].n_input = 1;
  b.nodes[0].op_type = "AveragePool", b.nodes[0].name = "pool3";
  expect_load_error(&b, WK_ERR_INVALID_ARG, "node 'pool3' (AveragePool)", "kernel_shape is required");
  set_ints(&b, 0, "kernel_shape", k3, 3);
  set_ints(&b, 1, "dilations", dil, 3);
  expect_load_error(&b, WK_ERR_UNSUPPORTED, "node 'pool3' (AveragePool)", "dilations are not supported");
  b.nodes[0].op_type = "MaxPool";
  set_ints(&b, 1, "strides", dil, 2);
  expect_load_error(&b, WK_ERR_INVALID_ARG, "node 'pool3' (MaxPool)", "strides has 2 elements");
  set_ints(&b, 1, "pads", pads, 6);
  expect_load_error(&b, WK_ERR_UNSUPPORTED, "node 'pool3' (MaxPool)",
                    "asymmetric pads [1, 1, 1, 1, 1, 0] are not supported");
  mb_weighted(&b, "MaxPool", "pool3", (const int64_t[]){1, 2, 4, 4, 4, 4}, 6, (const int64_t[]){1}, 1);
  b.g.n_initializer = 0, b.nodes[0].n_input = 1; /* no 4-d pooling */
  expect_load_error(&b, WK_ERR_UNSUPPORTED, "node 'pool3' (MaxPool)",
                    "only 1-d, 2-d and 3-d (NCL, NCHW, NCDHW) inputs are supported, this one has 6 dims");
}
END_TEST

/* ---- external data ---- */
/* Writes b's model to path. */
static void write_model(mb *b, const char *path) {
  size_t n = onnx__model_proto__get_packed_size(&b->m);
  uint8_t *buf = malloc(n + 1);
  onnx__model_proto__pack(&b->m, buf);
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(buf, 1, n, f), n);
  fclose(f);
  free(buf);
}

static long file_size(const char *path) {
  struct stat st;
  return stat(path, &st) ? -1 : (long)st.st_size;
}

START_TEST(test_onnx_external_data) {
  char dir[] = "/tmp/wick-onnx-ext-XXXXXX", path[256], data[256], other[256];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  wk_module *m = wk_nn_lenet();
  TU_NOTNULL(m);
  TU_OK(wk_module_train(m, false));
  wk_tensor *x = tu_rand((const int64_t[]){2, 1, 28, 28}, 4, WK_F32, -1, 1, 5);
  /* forced: every initializer goes to net.onnx.data; the model loads back and replays as eager */
  snprintf(path, sizeof path, "%s/net.onnx", dir);
  snprintf(data, sizeof data, "%s/net.onnx.data", dir);
  TU_OK(wk_onnx_export(m, &x, 1, path, WK_ONNX_EXPORT_OPTS(.external_data = WK_ONNX_EXTERNAL_ALWAYS)));
  int64_t nparam = 0;
  wk_graph *tg = wk_trace_module(m, &x, 1, NULL);
  TU_NOTNULL(tg);
  for (int v = 0; v < wk_graph_num_values(tg); v++)
    if (wk_graph_value_kind(tg, v) == WK_GV_PARAM) nparam += wk_tensor_numel(wk_graph_value_tensor(tg, v));
  ck_assert_int_gt(nparam, 40000);
  ck_assert_int_ge(file_size(data), nparam * 4 * 9 / 10); /* biases under 1 KiB stay in the model */
  ck_assert_int_lt(file_size(path), 8192);                /* the graph alone */
  wk_graph *g = wk_onnx_load(path, NULL);
  TU_NOTNULL(g);
  wk_tensor *ye = wk_module_forward(m, x), *yr = NULL;
  TU_NOTNULL(ye);
  TU_OK(wk_graph_run(g, &x, 1, (wk_device){0}, &yr, 1));
  ck_assert_msg(bit_equal(ye, yr), "external data: import -> replay differs from eager");
  wk_release(yr);
  wk_graph_release(g);
  /* the export to a buffer cannot write a second file; a model in memory cannot read one */
  void *buf = NULL;
  size_t n = 0;
  ck_assert_int_ne(
      wk_onnx_export_graph_buffer(tg, &buf, &n, WK_ONNX_EXPORT_OPTS(.external_data = WK_ONNX_EXTERNAL_ALWAYS)), WK_OK);
  TU_FAILS_WITH(WK_ERR_UNSUPPORTED, "export to a path");
  ck_assert_ptr_null(buf);
  FILE *f = fopen(path, "rb");
  uint8_t mbuf[8192];
  size_t mn = fread(mbuf, 1, sizeof mbuf, f);
  fclose(f);
  ck_assert_ptr_null(wk_onnx_load_buffer(mbuf, mn, NULL));
  TU_FAILS_WITH(WK_ERR_UNSUPPORTED, "load the model from its path");
  /* a named data file; bad options */
  snprintf(path, sizeof path, "%s/named.onnx", dir);
  snprintf(other, sizeof other, "%s/weights.bin", dir);
  TU_OK(wk_onnx_export_graph(
      tg, path,
      WK_ONNX_EXPORT_OPTS(.external_data = WK_ONNX_EXTERNAL_ALWAYS, .external_data_location = "weights.bin")));
  ck_assert_int_ge(file_size(other), nparam * 4 * 9 / 10);
  g = wk_onnx_load(path, NULL);
  TU_NOTNULL(g);
  wk_graph_release(g);
  ck_assert_int_ne(wk_onnx_export_graph(tg, path,
                                        WK_ONNX_EXPORT_OPTS(.external_data = WK_ONNX_EXTERNAL_ALWAYS,
                                                            .external_data_location = "../w.bin")),
                   WK_OK);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "must be a plain file name");
  ck_assert_int_ne(wk_onnx_export_graph(tg, path, WK_ONNX_EXPORT_OPTS(.external_data = 7)), WK_OK);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "external_data is 7");
  /* a version-1 caller (struct_size 64) is still accepted: its initializers stay in the model */
  wk_onnx_export_opts v1 = {.struct_size = WK_ONNX_EXPORT_OPTS_V1_SIZE, .external_data = WK_ONNX_EXTERNAL_ALWAYS};
  snprintf(path, sizeof path, "%s/v1.onnx", dir);
  TU_OK(wk_onnx_export(m, &x, 1, path, &v1));
  ck_assert_int_ge(file_size(path), nparam * 4);
  snprintf(other, sizeof other, "%s/v1.onnx.data", dir);
  ck_assert_int_eq(file_size(other), -1);
  wk_graph_release(tg);
  wk_release(x), wk_release(ye);
  wk_module_release(m);

  /* hostile external_data: a [2, 2] f32 initializer 'w' in bytes [off, off + 16) of a file */
  mb b;
  mb_init(&b);
  Onnx__TensorProto t, *tp[1] = {&t};
  onnx__tensor_proto__init(&t);
  int64_t dims[] = {2, 2};
  Onnx__StringStringEntryProto kv[3], *kvp[3];
  const char *keys[3] = {"location", "offset", "length"};
  char *vals[3] = {"w.bin", "8", "16"};
  for (int k = 0; k < 3; k++) {
    onnx__string_string_entry_proto__init(&kv[k]);
    kv[k].key = (char *)keys[k], kv[k].value = vals[k], kvp[k] = &kv[k];
  }
  t.name = "w", t.n_dims = 2, t.dims = dims, t.has_data_type = 1, t.data_type = 1;
  t.has_data_location = 1, t.data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  t.n_external_data = 3, t.external_data = kvp;
  b.g.n_initializer = 1, b.g.initializer = tp;
  snprintf(path, sizeof path, "%s/w.bin", dir);
  f = fopen(path, "wb");
  float w[6] = {0, 0, 1, 2, 3, 4};
  fwrite(w, sizeof w, 1, f); /* 24 bytes: the tensor at 8 */
  fclose(f);
  snprintf(path, sizeof path, "%s/hostile.onnx", dir);
  write_model(&b, path);
  g = wk_onnx_load(path, NULL);
  TU_NOTNULL(g);
  wk_graph_release(g);
  static const struct {
    int key;
    const char *val;
    wk_status code;
    const char *needle;
  } bad[] = {
      {0, "../w.bin", WK_ERR_INVALID_ARG, "leaves the model's directory ('..')"},
      {0, "sub/../../w.bin", WK_ERR_INVALID_ARG, "leaves the model's directory ('..')"},
      {0, "/etc/passwd", WK_ERR_INVALID_ARG, "is an absolute path"},
      {0, "", WK_ERR_INVALID_ARG, "names no location"},
      {0, "missing.bin", WK_ERR_IO, "cannot open external data file"},
      {0, "link.bin", WK_ERR_INVALID_ARG, "leads out of the model's directory"},
      {1, "9", WK_ERR_INVALID_ARG, "would lie past the end"},
      {1, "18446744073709551615", WK_ERR_INVALID_ARG, "would lie past the end"},
      {1, "-8", WK_ERR_INVALID_ARG, "offset '-8' is not a number"},
      {2, "12", WK_ERR_SHAPE, "external data length is 12"},
  };
  char outside[] = "/tmp/wick-onnx-out-XXXXXX", link[300];
  int fd = mkstemp(outside);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, w, sizeof w), (ssize_t)sizeof w);
  close(fd);
  snprintf(link, sizeof link, "%s/link.bin", dir);
  ck_assert_int_eq(symlink(outside, link), 0);
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    vals[0] = "w.bin", vals[1] = "8", vals[2] = "16";
    vals[bad[i].key] = (char *)bad[i].val;
    kv[bad[i].key].value = vals[bad[i].key];
    for (int k = 0; k < 3; k++) kv[k].value = vals[k];
    write_model(&b, path);
    ck_assert_msg(!wk_onnx_load(path, NULL), "external data %s='%s' loaded", keys[bad[i].key], bad[i].val);
    ck_assert_msg(strstr(wk_last_error_message(), "tensor 'w'"), "'%s' does not name the tensor",
                  wk_last_error_message());
    TU_FAILS_WITH(bad[i].code, bad[i].needle);
  }
  for (int k = 0; k < 3; k++) kv[k].value = (char *)(k == 0 ? "w.bin" : k == 1 ? "8" : "16");
  t.has_raw_data = 1, t.raw_data.data = (uint8_t *)w, t.raw_data.len = 16;
  write_model(&b, path);
  ck_assert_ptr_null(wk_onnx_load(path, NULL));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "is external but also has data in the model");
  unlink(link), unlink(outside);
  static const char *const files[] = {"net.onnx", "net.onnx.data", "named.onnx",  "weights.bin",
                                      "v1.onnx",  "w.bin",         "hostile.onnx"};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    unlink(path);
  }
  ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

static int g_pb_type; /* the ONNX type of the last tensor read */
static wk_tensor *tensor_pb(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *buf = malloc(sz > 0 ? (size_t)sz : 1);
  size_t got = fread(buf, 1, (size_t)(sz > 0 ? sz : 0), f);
  fclose(f);
  Onnx__TensorProto *t = onnx__tensor_proto__unpack(NULL, got, buf);
  free(buf);
  if (!t) return NULL;
  g_pb_type = t->data_type;
  static const wk_dtype map[17] = {0,       WK_F32, WK_U8,  WK_I8, 0, WK_I16, WK_I32, WK_I64, 0,
                                   WK_BOOL, WK_F16, WK_F64, 0,     0, 0,      0,      WK_BF16};
  wk_dtype dt = t->data_type > 0 && t->data_type < 17 ? map[t->data_type] : 0;
  wk_tensor *r = NULL;
  int64_t dims[WK_MAX_DIMS], numel = 1;
  if (dt && t->n_dims <= WK_MAX_DIMS) {
    for (size_t i = 0; i < t->n_dims; i++) dims[i] = t->dims[i], numel *= t->dims[i];
    size_t es = wk_dtype_size(dt);
    void *data = malloc((size_t)numel * es + 1);
    bool ok = true;
    if (t->has_raw_data) {
      ok = t->raw_data.len == (size_t)numel * es;
      if (ok && numel) memcpy(data, t->raw_data.data, t->raw_data.len);
    } else if (dt == WK_F32 && t->n_float_data == (size_t)numel)
      memcpy(data, t->float_data, (size_t)numel * 4);
    else if (dt == WK_F64 && t->n_double_data == (size_t)numel)
      memcpy(data, t->double_data, (size_t)numel * 8);
    else if (dt == WK_I64 && t->n_int64_data == (size_t)numel)
      memcpy(data, t->int64_data, (size_t)numel * 8);
    else if (t->n_int32_data == (size_t)numel)
      for (int64_t i = 0; i < numel; i++) {
        int32_t v = t->int32_data[i];
        if (es == 4)
          ((int32_t *)data)[i] = v;
        else if (es == 2)
          ((int16_t *)data)[i] = (int16_t)v;
        else
          ((int8_t *)data)[i] = (int8_t)v;
      }
    else
      ok = false;
    if (ok) r = wk_tensor_from_data(numel ? data : NULL, dt, dims, (int)t->n_dims);
    free(data);
  }
  onnx__tensor_proto__free_unpacked(t, NULL);
  return r;
}

/* 1: pass, 0: fail, -1: unsupported (the importer refused the model) */
static int run_case(const char *dir, char *why, size_t nwhy) {
  char path[1400];
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  wk_graph *g = wk_onnx_load(path, NULL);
  if (!g) {
    snprintf(why, nwhy, "%s", wk_last_error_message());
    return -1;
  }
  wk_tensor *in[16] = {0}, *want[16] = {0}, *got[16] = {0};
  int nin = 0, nout = 0, res = 0;
  /* data Wick has no dtype for (1.12's bfloat16 cases store uint16): the case is unsupported, not failed */
  res = -1;
  snprintf(why, nwhy, "test data of an ONNX type Wick has no dtype for");
  for (; nin < 16; nin++) {
    snprintf(path, sizeof path, "%s/test_data_set_0/input_%d.pb", dir, nin);
    struct stat st;
    if (stat(path, &st)) break;
    if (!(in[nin] = tensor_pb(path))) {
      snprintf(why, nwhy, "input %d has ONNX type %d, which Wick has no dtype for", nin, g_pb_type);
      goto done;
    }
  }
  for (; nout < 16; nout++) {
    snprintf(path, sizeof path, "%s/test_data_set_0/output_%d.pb", dir, nout);
    struct stat st;
    if (stat(path, &st)) break;
    if (!(want[nout] = tensor_pb(path))) {
      snprintf(why, nwhy, "output %d has ONNX type %d, which Wick has no dtype for", nout, g_pb_type);
      goto done;
    }
  }
  res = 0;
  if (nin != wk_graph_num_inputs(g) || nout != wk_graph_num_outputs(g)) {
    snprintf(why, nwhy, "%d inputs / %d outputs in the data, %d / %d in the graph", nin, nout, wk_graph_num_inputs(g),
             wk_graph_num_outputs(g));
    goto done;
  }
  if (wk_graph_run(g, in, nin, (wk_device){0}, got, 16)) {
    snprintf(why, nwhy, "run: %s", wk_last_error_message());
    goto done;
  }
  res = 1;
  for (int i = 0; i < nout && res; i++) {
    bool same_shape =
        wk_tensor_dtype(got[i]) == wk_tensor_dtype(want[i]) && wk_tensor_dim(got[i]) == wk_tensor_dim(want[i]);
    for (int d = 0; same_shape && d < wk_tensor_dim(got[i]); d++)
      same_shape = wk_tensor_size(got[i], d) == wk_tensor_size(want[i], d);
    if (!same_shape) {
      snprintf(why, nwhy, "output %d: dtype/shape differ", i);
      res = 0;
    } else if (wk_tensor_numel(want[i]) && !allclose(got[i], want[i], 1e-3, 1e-7)) {
      snprintf(why, nwhy, "output %d: values differ (rtol 1e-3, atol 1e-7)", i);
      res = 0;
    }
  }
done:
  for (int i = 0; i < 16; i++) wk_release(in[i]), wk_release(want[i]), wk_release(got[i]);
  wk_graph_release(g);
  return res;
}

static int cmpstr(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void run_suite(const char *sub, int *pass, int *fail, int *unsup, FILE *report) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/%s", ONNX_TESTDATA, sub);
  DIR *d = opendir(dir);
  *pass = *fail = *unsup = 0;
  if (!d) return;
  char *names[2048];
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) && n < 2048)
    if (!strncmp(e->d_name, "test_", 5)) names[n++] = strdup(e->d_name);
  closedir(d);
  qsort(names, (size_t)n, sizeof *names, cmpstr);
  for (int i = 0; i < n; i++) {
    char path[1100], why[600] = "";
    snprintf(path, sizeof path, "%.500s/%.500s", dir, names[i]);
    wk_scope_begin();
    int r = run_case(path, why, sizeof why);
    wk_scope_end();
    if (r > 0) why[0] = 0; /* run_case leaves its last provisional reason */
    if (r > 0)
      (*pass)++;
    else if (r == 0)
      (*fail)++;
    else
      (*unsup)++;
    if (report)
      fprintf(report, "%s\t%s\t%s\t%s\n", sub, names[i], r > 0 ? "pass" : r == 0 ? "FAIL" : "unsupported", why);
    free(names[i]);
  }
}

START_TEST(test_onnx_node_tests) {
  DIR *d = opendir(ONNX_TESTDATA "/node");
  if (!d) {
    fprintf(stderr, "check_onnx: %s not found (apt-get install libonnx-testdata): node tests skipped\n", ONNX_TESTDATA);
    return;
  }
  closedir(d);
  const char *rep = getenv("WICK_ONNX_NODE_REPORT"); /* a TSV of every case, for the table in tests/ */
  FILE *report = rep ? fopen(rep, "w") : NULL;
  static const char *suites[] = {"node", "pytorch-converted", "pytorch-operator", "simple"};
  int total_pass = 0;
  for (int s = 0; s < 4; s++) {
    int p, f, u;
    run_suite(suites[s], &p, &f, &u, report);
    fprintf(stderr, "check_onnx: ONNX %s tests: %d passed, %d failed, %d unsupported (of %d)\n", suites[s], p, f, u,
            p + f + u);
    total_pass += p;
    if (s == 0) ck_assert_int_ge(p, 588); /* measured 2026-12-03 (with ConvTranspose): a drop is a regression */
    if (s == 1) ck_assert_int_ge(p, 69);
    if (s == 2) ck_assert_int_ge(p, 35);
    ck_assert_int_eq(f, 0);
  }
  if (report) fclose(report);
}
END_TEST

int main(void) {
  if (wk_init() != WK_OK) {
    fprintf(stderr, "check_onnx: %s\n", wk_last_error_message());
    return 1;
  }
  Suite *s = suite_create("onnx");
  TCase *tc = tcase_create("onnx");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_onnx_roundtrip_mlp_lenet);
  tcase_add_test(tc, test_onnx_roundtrip_resnet18);
  tcase_add_test(tc, test_onnx_export_opsets_and_dynamic_view);
  tcase_add_test(tc, test_onnx_export_errors);
  tcase_add_test(tc, test_onnx_export_file_and_info);
  tcase_add_test(tc, test_onnx_load_validation);
  tcase_add_test(tc, test_onnx_load_deep_nesting);
  tcase_add_test(tc, test_onnx_convtranspose);
  tcase_add_test(tc, test_onnx_external_data);
  tcase_add_test(tc, test_onnx_fold_batch_norm);
  tcase_add_test(tc, test_onnx_conv_pool_3d);
  tcase_add_test(tc, test_onnx_node_tests);
  suite_add_tcase(s, tc);
  SRunner *r = srunner_create(s);
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? 1 : 0;
}
