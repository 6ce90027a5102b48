/* nn plugin: model zoo: mlp, a LeNet-style CNN, torchvision's ResNet
 * (BasicBlock for 18/34, Bottleneck for 50) with torchvision's module names,
 * so state dicts exchange with PyTorch. */
#include "nn.h"

wk_module *nn_mlp(int64_t in, const int64_t *hidden, int nh, int64_t out) {
  if (nh < 0 || (nh > 0 && !hidden)) {
    wk_error(WK_ERR_INVALID_ARG, "mlp: hidden sizes missing");
    return NULL;
  }
  wk_module *seq = nn_sequential(NULL, 0);
  int64_t prev = in;
  for (int i = 0; i < nh && seq; i++) {
    if (nn_append(seq, NULL, nn_linear(prev, hidden[i], true)) != WK_OK ||
        nn_append(seq, NULL, nn_activation(WK_NN_RELU, 0)) != WK_OK) {
      wk_module_release(seq);
      return NULL;
    }
    prev = hidden[i];
  }
  if (seq && nn_append(seq, NULL, nn_linear(prev, out, true)) != WK_OK) {
    wk_module_release(seq);
    return NULL;
  }
  return seq;
}

wk_module *nn_lenet(void) {
  wk_conv2d_opts c = {.padding = 1};
  wk_pool2d_opts p = {0};
  wk_module *mods[] = {nn_conv2d(1, 32, 3, &c, sizeof c), nn_activation(WK_NN_RELU, 0), nn_max_pool2d(2, &p, sizeof p),
                       nn_conv2d(32, 64, 3, &c, sizeof c), nn_activation(WK_NN_RELU, 0), nn_max_pool2d(2, &p, sizeof p),
                       nn_flatten(1, -1), nn_linear(64 * 7 * 7, 128, true), nn_activation(WK_NN_RELU, 0),
                       nn_linear(128, 10, true)};
  return nn_sequential(mods, (int)(sizeof mods / sizeof *mods));
}

/* ---- ResNet ---- */
static wk_tensor *block_forward(wk_module *self, wk_tensor *const *in, int n) {
  const char *cls = wk_module_class_name(self);
  if (!nn_check_inputs(cls, in, n, 1)) return NULL;
  bool bottleneck = !strcmp(cls, "Bottleneck");
  wk_scope_begin();
  wk_module *relu = wk_module_child(self, "relu");
  wk_tensor *x = in[0];
  wk_tensor *o = wk_module_forward(wk_module_child(self, "bn1"), wk_module_forward(wk_module_child(self, "conv1"), x));
  o = wk_module_forward(relu, o);
  o = wk_module_forward(wk_module_child(self, "bn2"), wk_module_forward(wk_module_child(self, "conv2"), o));
  if (bottleneck) {
    o = wk_module_forward(relu, o);
    o = wk_module_forward(wk_module_child(self, "bn3"), wk_module_forward(wk_module_child(self, "conv3"), o));
  }
  wk_module *ds = wk_module_child(self, "downsample");
  if (!ds && o) wk_clear_error(); /* no downsample: identity (keep a failure of the main path) */
  wk_tensor *id = ds ? wk_module_forward(ds, x) : x;
  return nn_ret(o && id ? wk_module_forward(relu, wk_add(o, id)) : NULL);
}
static const wk_module_class BASIC = {sizeof(wk_module_class), "BasicBlock", block_forward, NULL, NULL};
static const wk_module_class BOTTLENECK = {sizeof(wk_module_class), "Bottleneck", block_forward, NULL, NULL};

static wk_tensor *resnet_forward(wk_module *self, wk_tensor *const *in, int n) {
  if (!nn_check_inputs("ResNet", in, n, 1)) return NULL;
  static const char *const order[] = {"conv1", "bn1", "relu", "maxpool", "layer1", "layer2", "layer3", "layer4", "avgpool"};
  wk_scope_begin();
  wk_tensor *x = in[0];
  for (int i = 0; i < 9 && x; i++) {
    wk_module *c = wk_module_child(self, order[i]);
    if (!c) { /* the CIFAR stem has no maxpool */
      wk_clear_error();
      continue;
    }
    x = wk_module_forward(c, x);
  }
  x = wk_flatten(x, 1, -1);
  return nn_ret(wk_module_forward(wk_module_child(self, "fc"), x));
}
static const wk_module_class RESNET = {sizeof(wk_module_class), "ResNet", resnet_forward, NULL, NULL};

/* torchvision: conv kaiming_normal_(fan_out, relu); BatchNorm 1/0 (already). */
static wk_module *rconv(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t pad) {
  wk_conv2d_opts o = {.stride = stride, .padding = pad, .no_bias = true};
  wk_module *c = nn_conv2d(in, out, k, &o, sizeof o);
  if (c && nn_init(WK_NN_INIT_KAIMING_NORMAL, wk_module_param(c, "weight"),
                   &(wk_init_opts){.mode = "fan_out", .nonlinearity = "relu"}, sizeof(wk_init_opts)) != WK_OK) {
    wk_module_release(c);
    return NULL;
  }
  return c;
}
static wk_module *bn(int64_t c) { return nn_batch_norm(2, c, NULL, 0); }

static wk_module *make_block(bool bottleneck, int64_t inplanes, int64_t planes, int64_t stride) {
  int64_t exp = bottleneck ? 4 : 1;
  wk_module *b = wk_module_new(bottleneck ? &BOTTLENECK : &BASIC, NULL);
  wk_status st;
  if (bottleneck) {
    st = nn_child(b, "conv1", rconv(inplanes, planes, 1, 1, 0));
    if (st == WK_OK) st = nn_child(b, "bn1", bn(planes));
    if (st == WK_OK) st = nn_child(b, "conv2", rconv(planes, planes, 3, stride, 1));
    if (st == WK_OK) st = nn_child(b, "bn2", bn(planes));
    if (st == WK_OK) st = nn_child(b, "conv3", rconv(planes, planes * 4, 1, 1, 0));
    if (st == WK_OK) st = nn_child(b, "bn3", bn(planes * 4));
    if (st == WK_OK) st = nn_child(b, "relu", nn_relu_inplace());
  } else {
    st = nn_child(b, "conv1", rconv(inplanes, planes, 3, stride, 1));
    if (st == WK_OK) st = nn_child(b, "bn1", bn(planes));
    if (st == WK_OK) st = nn_child(b, "relu", nn_relu_inplace());
    if (st == WK_OK) st = nn_child(b, "conv2", rconv(planes, planes, 3, 1, 1));
    if (st == WK_OK) st = nn_child(b, "bn2", bn(planes));
  }
  if (st == WK_OK && (stride != 1 || inplanes != planes * exp))
    st = nn_child(b, "downsample", nn_sequential((wk_module *[]){rconv(inplanes, planes * exp, 1, stride, 0), bn(planes * exp)}, 2));
  if (st != WK_OK) {
    wk_module_release(b);
    return NULL;
  }
  return b;
}

wk_module *nn_resnet(int depth, const wk_resnet_opts *o, size_t osize) {
  wk_resnet_opts op;
  nn_opts(&op, sizeof op, o, osize);
  static const int L18[4] = {2, 2, 2, 2}, L34[4] = {3, 4, 6, 3};
  const int *layers = depth == 18 ? L18 : (depth == 34 || depth == 50) ? L34 : NULL;
  if (!layers) {
    wk_error(WK_ERR_INVALID_ARG, "resnet: depth must be 18, 34 or 50, got %d", depth);
    return NULL;
  }
  bool bottleneck = depth == 50;
  int64_t nc = op.num_classes ? op.num_classes : 1000, exp = bottleneck ? 4 : 1, inplanes = 64;
  if (nc < 0) {
    wk_error(WK_ERR_INVALID_ARG, "resnet: num_classes must be positive, got %lld", (long long)nc);
    return NULL;
  }
  wk_module *m = wk_module_new(&RESNET, NULL);
  wk_status st = op.cifar_stem ? nn_child(m, "conv1", rconv(3, 64, 3, 1, 1)) : nn_child(m, "conv1", rconv(3, 64, 7, 2, 3));
  if (st == WK_OK) st = nn_child(m, "bn1", bn(64));
  if (st == WK_OK) st = nn_child(m, "relu", nn_relu_inplace());
  wk_pool2d_opts mp = {.stride = 2, .padding = 1};
  if (st == WK_OK && !op.cifar_stem) st = nn_child(m, "maxpool", nn_max_pool2d(3, &mp, sizeof mp));
  for (int l = 0; l < 4 && st == WK_OK; l++) {
    int64_t planes = 64 << l, stride = l == 0 ? 1 : 2;
    wk_module *seq = nn_sequential(NULL, 0);
    for (int i = 0; i < layers[l] && seq; i++) {
      if (nn_append(seq, NULL, make_block(bottleneck, inplanes, planes, i == 0 ? stride : 1)) != WK_OK) {
        wk_module_release(seq);
        seq = NULL;
      }
      inplanes = planes * exp;
    }
    char name[8];
    snprintf(name, sizeof name, "layer%d", l + 1);
    st = nn_child(m, name, seq);
  }
  if (st == WK_OK) st = nn_child(m, "avgpool", nn_adaptive_avg_pool2d(1, 1));
  if (st == WK_OK) st = nn_child(m, "fc", nn_linear(512 * exp, nc, true));
  if (st != WK_OK) {
    wk_module_release(m);
    return NULL;
  }
  return m;
}
