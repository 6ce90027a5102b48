/* nn plugin: Conv1d, Conv2d, ConvTranspose2d, MaxPool2d, AvgPool2d,
 * AdaptiveAvgPool2d. Conv1d runs as a conv2d over a height-1 view; ConvTranspose2d
 * as a conv2d over the zero-stuffed input with the flipped, transposed weight. */
#include "nn.h"

typedef struct {
  int dims;        /* 1 or 2 */
  bool transposed;
  int64_t in, out, groups;
  int64_t k[2], s[2], p[2], d[2], op[2];
  bool bias, same;
  int pmode; /* padding_mode: PMODE_* */
} conv_state;
enum { PMODE_ZEROS, PMODE_REFLECT, PMODE_REPLICATE, PMODE_CIRCULAR };
static const char *const PMODES[] = {"zeros", "reflect", "replicate", "circular"};

static wk_tensor *call_conv2d(wk_tensor *x, wk_tensor *w, wk_tensor *b, const int64_t *s, const int64_t *p,
                              const int64_t *d, int64_t groups) {
  if (!x || !w) return NULL;
  return wkx_conv2d(x, w, b, s, 2, p, 2, d, 2, groups);
}

/* Inserts s-1 zeros between elements along dim (differentiable view ops + cat). */
static wk_tensor *zero_stuff(wk_tensor *x, int dim, int64_t s) {
  if (s == 1 || !x) return x;
  int nd = wk_tensor_dim(x);
  int64_t sz[8], n = wk_tensor_size(x, dim);
  wk_tensor *u = wk_unsqueeze(x, dim + 1);
  for (int i = 0; i < nd + 1; i++) sz[i] = wk_tensor_size(u, i);
  sz[dim + 1] = s - 1;
  wk_tensor *z = wk_zeros(sz, nd + 1, WK_OPTS(.dtype = wk_tensor_dtype(x), .device = wk_tensor_device(x)));
  wk_tensor *parts[2] = {u, z};
  wk_tensor *c = wk_cat(parts, 2, dim + 1);
  for (int i = 0; i < nd; i++) sz[i] = wk_tensor_size(x, i);
  sz[dim] = n * s;
  wk_tensor *r = wk_reshape(c, sz, nd);
  return wk_narrow(r, dim, 0, n > 0 ? (n - 1) * s + 1 : 0);
}

static wk_tensor *conv_forward(wk_module *self, wk_tensor *const *in, int n) {
  const conv_state *s = wk_module_state(self);
  const char *cls = wk_module_class_name(self);
  if (!nn_check_inputs(cls, in, n, 1)) return NULL;
  wk_tensor *x = in[0], *w = wk_module_param(self, "weight"), *b = wk_module_param(self, "bias");
  int want = s->dims + 2, nd = wk_tensor_dim(x);
  char sh[160], wsh[160];
  if (nd != want && nd != want - 1) {
    wk_error(WK_ERR_SHAPE, "%s: expected %dD (unbatched) or %dD (batched) input to %s, but got input of size: %s", cls,
             want - 1, want, s->dims == 1 ? "conv1d" : "conv2d", wk_shape_str(x, sh, sizeof sh));
    return NULL;
  }
  int64_t c = wk_tensor_size(x, nd == want ? 1 : 0);
  if (c != s->in) {
    wk_error(WK_ERR_SHAPE, "%s: Given groups=%lld, weight of size %s, expected input%s to have %lld channels, but got %lld channels instead",
             cls, (long long)s->groups, wk_shape_str(w, wsh, sizeof wsh), wk_shape_str(x, sh, sizeof sh), (long long)s->in, (long long)c);
    return NULL;
  }
  wk_scope_begin();
  bool unbatched = nd == want - 1;
  if (unbatched) x = wk_unsqueeze(x, 0);
  if (s->dims == 1) { /* (N, C, L) -> (N, C, 1, L) */
    x = wk_unsqueeze(x, 2);
    w = wk_unsqueeze(w, 2);
  }
  int64_t st[2] = {s->s[0], s->s[1]}, pd[2] = {s->p[0], s->p[1]}, dl[2] = {s->d[0], s->d[1]};
  if (s->same && s->pmode == PMODE_ZEROS) {
    int64_t pads[4] = {0, 0, 0, 0};
    bool asym = false;
    for (int i = 0; i < 2; i++) {
      int64_t tot = s->d[i] * (s->k[i] - 1), lo = tot / 2;
      pd[i] = lo;
      pads[2 * (1 - i)] = lo;
      pads[2 * (1 - i) + 1] = tot - lo;
      if (tot - lo != lo) asym = true;
    }
    if (asym) {
      x = wk_pad(x, pads, 4, "constant", 0);
      pd[0] = pd[1] = 0;
    }
  }
  if (s->pmode != PMODE_ZEROS) { /* PyTorch: F.pad(x, _reversed_padding_repeated_twice, mode), then padding 0 */
    int64_t pads[4];
    for (int i = 0; i < 2; i++) {
      int64_t lo = s->p[i], hi = s->p[i];
      if (s->same) {
        int64_t tot = s->d[i] * (s->k[i] - 1);
        lo = tot / 2;
        hi = tot - lo;
      }
      pads[2 * (1 - i)] = lo;
      pads[2 * (1 - i) + 1] = hi;
    }
    /* conv1d runs on (N, C, 1, L): only the last dim is padded */
    x = wk_pad(x, pads, s->dims == 1 ? 2 : 4, PMODES[s->pmode], 0);
    pd[0] = pd[1] = 0;
  }
  wk_tensor *y;
  if (!s->transposed) {
    y = call_conv2d(x, w, b, st, pd, dl, s->groups);
  } else {
    /* weight (in, out/g, kh, kw) -> (out, in/g, kh, kw), flipped */
    int64_t g = s->groups, ig = s->in / g, og = s->out / g;
    wk_tensor *wt = wk_reshape(w, WK_SHAPE(g, ig, og, s->k[0], s->k[1]));
    wt = wk_transpose(wt, 1, 2);
    wt = wk_reshape(wt, WK_SHAPE(s->out, ig, s->k[0], s->k[1]));
    wt = wk_flip(wt, (const int64_t[]){2, 3}, 2);
    wk_tensor *xs = zero_stuff(zero_stuff(x, 2, st[0]), 3, st[1]);
    int64_t one[2] = {1, 1}, zero[2] = {0, 0}, pads[4];
    for (int i = 0; i < 2; i++) {
      int64_t lo = s->d[i] * (s->k[i] - 1) - s->p[i];
      pads[2 * (1 - i)] = lo;
      pads[2 * (1 - i) + 1] = lo + s->op[i];
    }
    if (pads[0] || pads[1] || pads[2] || pads[3]) xs = wk_pad(xs, pads, 4, "constant", 0);
    y = call_conv2d(xs, wt, b, one, zero, dl, g);
  }
  if (s->dims == 1) y = wk_squeeze_dim(y, 2);
  if (unbatched) y = wk_squeeze_dim(y, 0);
  return nn_ret(y);
}

static char *tuple(const int64_t *v, int n, char *buf) {
  if (n == 1)
    sprintf(buf, "(%lld,)", (long long)v[1]);
  else
    sprintf(buf, "(%lld, %lld)", (long long)v[0], (long long)v[1]);
  return buf;
}
static char *conv_repr(const wk_module *self) {
  const conv_state *s = wk_module_state(self);
  char k[48], st[48], p[48], d[48], op[48], out[400];
  int n = s->dims, o;
  o = snprintf(out, sizeof out, "%lld, %lld, kernel_size=%s, stride=%s", (long long)s->in, (long long)s->out,
               tuple(s->k, n, k), tuple(s->s, n, st));
  if (s->same)
    o += snprintf(out + o, sizeof out - o, ", padding=same");
  else if (s->p[0] || s->p[1])
    o += snprintf(out + o, sizeof out - o, ", padding=%s", tuple(s->p, n, p));
  if (s->d[0] != 1 || s->d[1] != 1) o += snprintf(out + o, sizeof out - o, ", dilation=%s", tuple(s->d, n, d));
  if (s->op[0] || s->op[1]) o += snprintf(out + o, sizeof out - o, ", output_padding=%s", tuple(s->op, n, op));
  if (s->groups != 1) o += snprintf(out + o, sizeof out - o, ", groups=%lld", (long long)s->groups);
  if (!s->bias) o += snprintf(out + o, sizeof out - o, ", bias=False");
  if (s->pmode != PMODE_ZEROS) snprintf(out + o, sizeof out - o, ", padding_mode=%s", PMODES[s->pmode]);
  return nn_strf("%s", out);
}
static const wk_module_class CONV2D = {sizeof(wk_module_class), "Conv2d", conv_forward, free, conv_repr};
static const wk_module_class CONV1D = {sizeof(wk_module_class), "Conv1d", conv_forward, free, conv_repr};
static const wk_module_class CONVT2D = {sizeof(wk_module_class), "ConvTranspose2d", conv_forward, free, conv_repr};

static wk_module *make_conv(int dims, bool transposed, int64_t in, int64_t out, int64_t k, const wk_conv2d_opts *o,
                            size_t osize) {
  const wk_module_class *cls = transposed ? &CONVT2D : dims == 1 ? &CONV1D : &CONV2D;
  wk_conv2d_opts op;
  nn_opts(&op, sizeof op, o, osize);
  conv_state s = {.dims = dims, .transposed = transposed, .in = in, .out = out, .bias = !op.no_bias, .same = op.padding_same};
  s.groups = op.groups ? op.groups : 1;
  int64_t st = op.stride ? op.stride : 1, dl = op.dilation ? op.dilation : 1;
  s.k[0] = s.k[1] = k;
  s.s[0] = s.s[1] = st;
  s.p[0] = s.p[1] = op.padding;
  s.d[0] = s.d[1] = dl;
  s.op[0] = s.op[1] = op.output_padding;
  if (dims == 1) { /* height 1 */
    s.k[0] = s.s[0] = s.d[0] = 1;
    s.p[0] = s.op[0] = 0;
  } else {
    if (op.kernel_w) s.k[1] = op.kernel_w;
    if (op.stride_w) s.s[1] = op.stride_w;
    if (op.dilation_w) s.d[1] = op.dilation_w;
    if (op.padding_w) s.p[1] = op.padding_w == WK_NN_PAD_W_ZERO ? 0 : op.padding_w;
  }
  if (in <= 0 || out <= 0 || s.groups <= 0 || in % s.groups || out % s.groups) {
    wk_error(WK_ERR_INVALID_ARG, "%s: in_channels (%lld) and out_channels (%lld) must be positive and divisible by groups (%lld)",
             cls->name, (long long)in, (long long)out, (long long)s.groups);
    return NULL;
  }
  for (int i = 0; i < 2; i++)
    if (s.k[i] <= 0 || s.s[i] <= 0 || s.d[i] <= 0 || s.p[i] < 0 || s.op[i] < 0) {
      wk_error(WK_ERR_INVALID_ARG, "%s: kernel_size, stride and dilation must be positive and padding non-negative", cls->name);
      return NULL;
    }
  if (s.same && (transposed || s.s[0] != 1 || s.s[1] != 1)) {
    wk_error(WK_ERR_INVALID_ARG, "%s: padding='same' is not supported for strided convolutions", cls->name);
    return NULL;
  }
  if (op.padding_mode) {
    int m = 0;
    while (m < 4 && strcmp(op.padding_mode, PMODES[m])) m++;
    if (m == 4) {
      wk_error(WK_ERR_INVALID_ARG,
               "%s: padding_mode must be one of ['zeros', 'reflect', 'replicate', 'circular'], but got "
               "padding_mode='%s'",
               cls->name, op.padding_mode);
      return NULL;
    }
    if (transposed && m != PMODE_ZEROS) {
      wk_error(WK_ERR_INVALID_ARG, "%s: Only \"zeros\" padding mode is supported for ConvTranspose2d", cls->name);
      return NULL;
    }
    s.pmode = m;
  }
  if (transposed && (s.op[0] >= s.s[0] && s.op[0] >= s.d[0])) {
    wk_error(WK_ERR_INVALID_ARG, "%s: output padding must be smaller than either stride or dilation", cls->name);
    return NULL;
  }
  conv_state *ps = wk_malloc(sizeof *ps);
  if (ps) *ps = s;
  wk_module *m = nn_module_new(cls, ps);
  if (!m) return NULL;
  wk_scope_begin();
  int64_t wsz[4] = {transposed ? in : out, transposed ? out / s.groups : in / s.groups, s.k[0], s.k[1]};
  wk_tensor *w = dims == 1 ? wk_empty(WK_SHAPE(wsz[0], wsz[1], k), (wk_options){0}) : wk_empty(wsz, 4, (wk_options){0});
  wk_tensor *b = s.bias ? wk_empty(WK_SHAPE(out), (wk_options){0}) : NULL;
  wk_status rc = nn_init_default_weight_bias(w, b);
  if (rc == WK_OK) rc = nn_param(m, "weight", w);
  if (rc == WK_OK) rc = nn_param(m, "bias", b);
  wk_scope_end();
  if (rc != WK_OK) {
    wk_module_release(m);
    return NULL;
  }
  return m;
}
wk_module *nn_conv2d(int64_t in, int64_t out, int64_t k, const wk_conv2d_opts *o, size_t osize) {
  return make_conv(2, false, in, out, k, o, osize);
}
wk_module *nn_conv1d(int64_t in, int64_t out, int64_t k, const wk_conv2d_opts *o, size_t osize) {
  return make_conv(1, false, in, out, k, o, osize);
}
wk_module *nn_conv_transpose2d(int64_t in, int64_t out, int64_t k, const wk_conv2d_opts *o, size_t osize) {
  return make_conv(2, true, in, out, k, o, osize);
}

/* ---- pooling ---- */
typedef struct {
  bool max, adaptive;
  int64_t k, s, p, d, oh, ow;
  bool ceil, count_pad;
} pool_state;

static wk_tensor *pool_forward(wk_module *self, wk_tensor *const *in, int n) {
  const pool_state *s = wk_module_state(self);
  const char *cls = wk_module_class_name(self);
  if (!nn_check_inputs(cls, in, n, 1)) return NULL;
  wk_tensor *x = in[0];
  int nd = wk_tensor_dim(x);
  if (nd != 3 && nd != 4) {
    char sh[160];
    wk_error(WK_ERR_SHAPE, "%s: expected 3D or 4D input, but got input of size: %s", cls, wk_shape_str(x, sh, sizeof sh));
    return NULL;
  }
  wk_scope_begin();
  if (nd == 3) x = wk_unsqueeze(x, 0);
  wk_tensor *y = NULL;
  int64_t k[2] = {s->k, s->k}, st[2] = {s->s, s->s}, p[2] = {s->p, s->p}, d[2] = {s->d, s->d};
  if (s->adaptive) {
    y = wk_adaptive_avg_pool2d(x, s->oh, s->ow ? s->ow : s->oh);
  } else if (s->max) {
    if (x) y = wkx_max_pool2d_with_indices(x, k, 2, st, 2, p, 2, d, 2, s->ceil, NULL);
  } else {
    if (x) y = wkx_avg_pool2d(x, k, 2, st, 2, p, 2, s->ceil, s->count_pad, NULL);
  }
  if (nd == 3) y = wk_squeeze_dim(y, 0);
  return nn_ret(y);
}
static char *pool_repr(const wk_module *self) {
  const pool_state *s = wk_module_state(self);
  if (s->adaptive) {
    if (!s->ow) return nn_strf("output_size=%lld", (long long)s->oh);
    return nn_strf("output_size=(%lld, %lld)", (long long)s->oh, (long long)s->ow);
  }
  if (s->max)
    return nn_strf("kernel_size=%lld, stride=%lld, padding=%lld, dilation=%lld, ceil_mode=%s", (long long)s->k,
                   (long long)s->s, (long long)s->p, (long long)s->d, s->ceil ? "True" : "False");
  /* PyTorch's AvgPool2d.extra_repr shows only these three */
  return nn_strf("kernel_size=%lld, stride=%lld, padding=%lld", (long long)s->k, (long long)s->s, (long long)s->p);
}
static const wk_module_class MAXPOOL = {sizeof(wk_module_class), "MaxPool2d", pool_forward, free, pool_repr};
static const wk_module_class AVGPOOL = {sizeof(wk_module_class), "AvgPool2d", pool_forward, free, pool_repr};
static const wk_module_class ADAPTIVE = {sizeof(wk_module_class), "AdaptiveAvgPool2d", pool_forward, free, pool_repr};

static wk_module *make_pool(bool max, int64_t k, const wk_pool2d_opts *o, size_t osize) {
  wk_pool2d_opts op;
  nn_opts(&op, sizeof op, o, osize);
  const char *name = max ? "MaxPool2d" : "AvgPool2d";
  pool_state s = {.max = max, .k = k, .s = op.stride ? op.stride : k, .p = op.padding, .d = op.dilation ? op.dilation : 1,
                  .ceil = op.ceil_mode, .count_pad = !op.no_count_include_pad};
  if (k <= 0 || s.s <= 0 || s.d <= 0 || s.p < 0) {
    wk_error(WK_ERR_INVALID_ARG, "%s: kernel_size, stride and dilation must be positive, got %lld, %lld, %lld", name,
             (long long)k, (long long)s.s, (long long)s.d);
    return NULL;
  }
  if (s.p * 2 > k) {
    wk_error(WK_ERR_INVALID_ARG, "%s: pad should be at most half of effective kernel size, but got pad=%lld, kernel_size=%lld",
             name, (long long)s.p, (long long)k);
    return NULL;
  }
  pool_state *ps = wk_malloc(sizeof *ps);
  if (ps) *ps = s;
  return nn_module_new(max ? &MAXPOOL : &AVGPOOL, ps);
}
wk_module *nn_max_pool2d(int64_t k, const wk_pool2d_opts *o, size_t osize) { return make_pool(true, k, o, osize); }
wk_module *nn_avg_pool2d(int64_t k, const wk_pool2d_opts *o, size_t osize) { return make_pool(false, k, o, osize); }
wk_module *nn_adaptive_avg_pool2d(int64_t oh, int64_t ow) {
  if (oh <= 0 || ow < 0) {
    wk_error(WK_ERR_INVALID_ARG, "AdaptiveAvgPool2d: output_size must be positive, got (%lld, %lld)", (long long)oh,
             (long long)ow);
    return NULL;
  }
  pool_state *ps = wk_calloc(1, sizeof *ps);
  if (ps) *ps = (pool_state){.adaptive = true, .oh = oh, .ow = ow};
  return nn_module_new(&ADAPTIVE, ps);
}
