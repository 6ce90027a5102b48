/* nn plugin: the "nn" service table and the helpers shared by the layers. */
#include "nn.h"

char *nn_strf(const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *s = n < 0 ? NULL : wk_malloc((size_t)n + 1);
  if (s)
    vsnprintf(s, (size_t)n + 1, fmt, ap2);
  else /* reported: a printout (extra_repr) must not come back without this text */
    wk_error(WK_ERR_NO_MEMORY, "nn: out of memory for a %d-byte text", n + 1);
  va_end(ap2);
  return s;
}

const char *nn_pyfloat(double v, char *buf) {
  if (isnan(v)) return strcpy(buf, "nan");
  if (isinf(v)) return strcpy(buf, v > 0 ? "inf" : "-inf");
  if (v == 0) return strcpy(buf, signbit(v) ? "-0.0" : "0.0");
  char e[40];
  int p = 1;
  for (; p <= 17; p++) { /* shortest round-tripping digits */
    snprintf(e, sizeof e, "%.*e", p - 1, v);
    if (strtod(e, NULL) == v) break;
  }
  char *ep = strchr(e, 'e');
  int exp10 = atoi(ep + 1);
  char digits[24];
  int nd = 0;
  for (char *c = e; c < ep; c++)
    if (*c >= '0' && *c <= '9') digits[nd++] = *c;
  digits[nd] = 0;
  const char *sign = v < 0 ? "-" : "";
  if (exp10 < -4 || exp10 >= 16) { /* scientific, like Python's repr */
    if (nd == 1)
      sprintf(buf, "%s%ce%c%02d", sign, digits[0], exp10 < 0 ? '-' : '+', abs(exp10));
    else
      sprintf(buf, "%s%c.%se%c%02d", sign, digits[0], digits + 1, exp10 < 0 ? '-' : '+', abs(exp10));
    return buf;
  }
  char *o = buf + sprintf(buf, "%s", sign);
  if (exp10 < 0) {
    o += sprintf(o, "0.");
    for (int i = 0; i < -exp10 - 1; i++) *o++ = '0';
    sprintf(o, "%s", digits);
  } else {
    for (int i = 0; i <= exp10; i++) *o++ = i < nd ? digits[i] : '0';
    *o++ = '.';
    if (nd > exp10 + 1)
      sprintf(o, "%s", digits + exp10 + 1);
    else
      sprintf(o, "0");
  }
  return buf;
}

void nn_opts(void *dst, size_t full, const void *src, size_t osize) {
  memset(dst, 0, full);
  if (src) memcpy(dst, src, osize < full ? osize : full);
}

wk_tensor *nn_ret(wk_tensor *y) {
  if (y) wk_scope_escape(y);
  wk_scope_end();
  return y;
}

bool nn_check_inputs(const char *cls, wk_tensor *const *in, int n, int want) {
  if (n != want) {
    wk_error(WK_ERR_INVALID_ARG, "%s.forward() takes %d input%s but %d were given", cls, want, want == 1 ? "" : "s", n);
    return false;
  }
  for (int i = 0; i < n; i++)
    if (!in || !in[i]) {
      if (wk_last_error() == WK_OK) wk_error(WK_ERR_INVALID_ARG, "%s.forward(): input %d is NULL", cls, i);
      return false;
    }
  return true;
}

wk_status nn_param(wk_module *m, const char *name, wk_tensor *t) {
  if (!m) return wk_last_error();
  return wk_module_register_parameter(m, name, t);
}
wk_status nn_buffer(wk_module *m, const char *name, wk_tensor *t) {
  if (!m) return wk_last_error();
  if (!t) return wk_last_error() ? wk_last_error() : WK_ERR_INVALID_ARG;
  return wk_module_register_buffer(m, name, t, true);
}
wk_status nn_child(wk_module *m, const char *name, wk_module *child) {
  if (!m || !child) {
    wk_module_release(child);
    return wk_last_error() ? wk_last_error() : WK_ERR_INVALID_ARG;
  }
  wk_status st = wk_module_register_child(m, name, child);
  wk_module_release(child);
  return st;
}

wk_status nn_fill_uniform(wk_tensor *t, double lo, double hi) {
  wk_no_grad_begin();
  wk_tensor *r = wk_uniform_(t, lo, hi);
  wk_status st = wk_no_grad_end();
  return r ? st : wk_last_error();
}
wk_status nn_fill_normal(wk_tensor *t, double mean, double std) {
  wk_no_grad_begin();
  wk_tensor *r = wk_normal_(t, mean, std);
  wk_status st = wk_no_grad_end();
  return r ? st : wk_last_error();
}
wk_module *nn_module_new(const wk_module_class *cls, void *state) {
  if (!state) {
    wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", cls->name);
    return NULL;
  }
  wk_module *m = wk_module_new(cls, state);
  if (!m) wk_free(state);
  return m;
}

double nn_opt_or(double v, double dflt) { return v == 0 ? (signbit(v) ? 0.0 : dflt) : v; }

static const wk_nn_api NN_API = {
    .struct_size = sizeof(wk_nn_api),
    .linear = nn_linear,
    .activation = nn_activation,
    .flatten = nn_flatten,
    .conv2d = nn_conv2d,
    .conv1d = nn_conv1d,
    .conv_transpose2d = nn_conv_transpose2d,
    .max_pool2d = nn_max_pool2d,
    .avg_pool2d = nn_avg_pool2d,
    .adaptive_avg_pool2d = nn_adaptive_avg_pool2d,
    .batch_norm = nn_batch_norm,
    .layer_norm = nn_layer_norm,
    .group_norm = nn_group_norm,
    .embedding = nn_embedding,
    .sequential = nn_sequential,
    .module_list = nn_module_list,
    .module_dict = nn_module_dict,
    .append = nn_append,
    .loss_module = nn_loss_module,
    .loss = nn_loss,
    .init = nn_init,
    .calculate_gain = nn_calculate_gain,
    .mlp = nn_mlp,
    .lenet = nn_lenet,
    .resnet = nn_resnet,
    .multihead_attention = nn_multihead_attention,
    .mha_forward = nn_mha_forward,
    .transformer_layer = nn_transformer_layer,
    .transformer_encoder = nn_transformer_encoder,
    .transformer_forward = nn_transformer_forward,
    .rnn = nn_rnn,
    .rnn_forward = nn_rnn_forward,
    .positional_encoding = nn_positional_encoding,
    .transformer_decoder = nn_transformer_decoder,
    .transformer = nn_transformer,
    .transformer_model_forward = nn_transformer_model_forward,
};

static wk_status init(void) { return wk_service_register(WK_NN_SERVICE, WK_NN_API_VERSION, &NN_API); }

WK_PLUGIN_DEFINE("nn", "0.1.0", "layers, losses, initialisation and a model zoo (the nn service)", init, NULL)
