/* nn plugin: torch.nn.init (in place, under no_grad) and the default
 * initialisation of Linear/Conv layers. */
#include "nn.h"

double nn_calculate_gain(const char *nl, double param) {
  if (!nl || !strcmp(nl, "linear") || !strcmp(nl, "sigmoid") || !strncmp(nl, "conv", 4)) {
    if (nl && !strcmp(nl, "sigmoid")) return 1.0;
    if (!nl || !strcmp(nl, "linear") || !strcmp(nl, "conv1d") || !strcmp(nl, "conv2d") || !strcmp(nl, "conv3d") ||
        !strcmp(nl, "conv_transpose1d") || !strcmp(nl, "conv_transpose2d") || !strcmp(nl, "conv_transpose3d"))
      return 1.0;
  }
  if (!strcmp(nl, "tanh")) return 5.0 / 3;
  if (!strcmp(nl, "relu")) return sqrt(2.0);
  if (!strcmp(nl, "leaky_relu")) {
    double slope = isnan(param) ? 0.01 : param;
    return sqrt(2.0 / (1 + slope * slope));
  }
  if (!strcmp(nl, "selu")) return 3.0 / 4;
  wk_error(WK_ERR_INVALID_ARG, "Unsupported nonlinearity %s", nl);
  return NAN;
}

static wk_status fans(wk_tensor *t, double *fan_in, double *fan_out) {
  int nd = wk_tensor_dim(t);
  if (nd < 2)
    return wk_error(WK_ERR_INVALID_ARG, "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions");
  double rf = 1;
  for (int i = 2; i < nd; i++) rf *= (double)wk_tensor_size(t, i);
  *fan_in = (double)wk_tensor_size(t, 1) * rf;
  *fan_out = (double)wk_tensor_size(t, 0) * rf;
  return WK_OK;
}

static wk_status fill_const(wk_tensor *t, double v) {
  wk_no_grad_begin();
  wk_tensor *r = wk_fill_(t, v);
  wk_status st = wk_no_grad_end();
  return r ? st : wk_last_error();
}

/* Orthogonal: QR (modified Gram-Schmidt) of a normal matrix, signs fixed by diag(R). */
static wk_status orthogonal(wk_tensor *t, double gain) {
  int nd = wk_tensor_dim(t);
  if (nd < 2) return wk_error(WK_ERR_INVALID_ARG, "Only tensors with 2 or more dimensions are supported");
  int64_t rows = wk_tensor_size(t, 0), cols = wk_tensor_numel(t) / (rows ? rows : 1);
  if (rows == 0 || cols == 0) return WK_OK;
  bool tr = rows < cols;
  int64_t m = tr ? cols : rows, n = tr ? rows : cols; /* m >= n: A is m x n */
  wk_scope_begin();
  wk_tensor *flat = wk_randn(WK_SHAPE(rows * cols), WK_OPTS(.dtype = WK_F64));
  double *a = wk_malloc((size_t)(m * n) * sizeof *a), *src = wk_malloc((size_t)(m * n) * sizeof *src);
  wk_status st = flat ? wk_tensor_to_f64(flat, src, rows * cols) : wk_last_error();
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++) {
      double v = src[i * cols + j];
      if (tr)
        a[j * n + i] = v;
      else
        a[i * n + j] = v;
    }
  for (int64_t k = 0; st == WK_OK && k < n; k++) {
    double nrm = 0;
    for (int64_t i = 0; i < m; i++) nrm += a[i * n + k] * a[i * n + k];
    nrm = sqrt(nrm);
    for (int64_t i = 0; i < m; i++) a[i * n + k] /= nrm; /* R[k][k] = nrm > 0: sign already positive */
    for (int64_t j = k + 1; j < n; j++) {
      double d = 0;
      for (int64_t i = 0; i < m; i++) d += a[i * n + k] * a[i * n + j];
      for (int64_t i = 0; i < m; i++) a[i * n + j] -= d * a[i * n + k];
    }
  }
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++) src[i * cols + j] = gain * (tr ? a[j * n + i] : a[i * n + j]);
  if (st == WK_OK) {
    wk_tensor *q = wk_tensor_from_data(src, WK_F64, wk_tensor_sizes(t), nd);
    wk_no_grad_begin();
    wk_tensor *r = q ? wk_copy_(t, q) : NULL;
    st = wk_no_grad_end();
    if (!r) st = wk_last_error();
  }
  wk_free(a);
  wk_free(src);
  wk_scope_end();
  return st;
}

wk_status nn_init(int kind, wk_tensor *t, const wk_init_opts *o, size_t osize) {
  wk_init_opts op;
  nn_opts(&op, sizeof op, o, osize);
  if (!t) return wk_last_error() ? wk_last_error() : wk_error(WK_ERR_INVALID_ARG, "nn init: NULL tensor");
  double fi = 0, fo = 0, gain = nn_opt_or(op.gain, 1.0);
  wk_status st;
  switch (kind) {
  case WK_NN_INIT_ZEROS: return fill_const(t, 0);
  case WK_NN_INIT_ONES: return fill_const(t, 1);
  case WK_NN_INIT_CONSTANT: return fill_const(t, op.value);
  case WK_NN_INIT_NORMAL: return nn_fill_normal(t, op.mean, nn_opt_or(op.std, 1.0));
  case WK_NN_INIT_UNIFORM: return nn_fill_uniform(t, op.lo, op.lo == 0 && op.hi == 0 ? 1.0 : op.hi);
  case WK_NN_INIT_ORTHOGONAL: return orthogonal(t, gain);
  case WK_NN_INIT_XAVIER_UNIFORM:
  case WK_NN_INIT_XAVIER_NORMAL: {
    if ((st = fans(t, &fi, &fo)) != WK_OK) return st;
    double std = gain * sqrt(2.0 / (fi + fo));
    if (kind == WK_NN_INIT_XAVIER_NORMAL) return nn_fill_normal(t, 0, std);
    return nn_fill_uniform(t, -sqrt(3.0) * std, sqrt(3.0) * std);
  }
  case WK_NN_INIT_KAIMING_UNIFORM:
  case WK_NN_INIT_KAIMING_NORMAL: {
    if ((st = fans(t, &fi, &fo)) != WK_OK) return st;
    const char *mode = op.mode ? op.mode : "fan_in";
    if (strcmp(mode, "fan_in") && strcmp(mode, "fan_out"))
      return wk_error(WK_ERR_INVALID_ARG, "Mode %s not supported, please use one of fan_in, fan_out", mode);
    double fan = !strcmp(mode, "fan_in") ? fi : fo;
    if (fan == 0) return WK_OK; /* PyTorch warns and leaves the tensor alone */
    double g = nn_calculate_gain(op.nonlinearity ? op.nonlinearity : "leaky_relu", op.a);
    if (isnan(g)) return wk_last_error();
    double std = g / sqrt(fan);
    if (kind == WK_NN_INIT_KAIMING_NORMAL) return nn_fill_normal(t, 0, std);
    return nn_fill_uniform(t, -sqrt(3.0) * std, sqrt(3.0) * std);
  }
  default: return wk_error(WK_ERR_INVALID_ARG, "nn init: unknown kind %d", kind);
  }
}

wk_status nn_init_default_weight_bias(wk_tensor *w, wk_tensor *b) {
  if (!w) return wk_last_error();
  wk_status st = nn_init(WK_NN_INIT_KAIMING_UNIFORM, w, &(wk_init_opts){.a = sqrt(5.0)}, sizeof(wk_init_opts));
  if (st != WK_OK || !b) return st;
  double fi = (double)wk_tensor_size(w, 1);
  for (int i = 2; i < wk_tensor_dim(w); i++) fi *= (double)wk_tensor_size(w, i);
  double bound = fi > 0 ? 1 / sqrt(fi) : 0;
  return nn_fill_uniform(b, -bound, bound);
}
