/* nn plugin: LSTM and GRU (multi-layer, bidirectional, batch_first, dropout
 * between layers) with PyTorch 1.13's parameter names, gate order and cell
 * arithmetic, written with ops so autograd differentiates them. Sequence
 * lengths give pack_padded_sequence's semantics without a packed type: a
 * step past a sequence's end leaves its state alone and outputs zeros. */
#include "nn.h"

typedef struct {
  int kind; /* WK_NN_LSTM / WK_NN_GRU */
  int64_t in, H;
  wk_rnn_opts o; /* num_layers >= 1 */
} rnn_state;

static const char *rnn_name(int kind) { return kind == WK_NN_LSTM ? "LSTM" : "GRU"; }

static char *rnn_repr(const wk_module *self) {
  const rnn_state *s = wk_module_state(self);
  char b[32], extra[256] = "";
  size_t n = 0;
  if (s->o.proj_size) n += (size_t)snprintf(extra + n, sizeof extra - n, ", proj_size=%lld", (long long)s->o.proj_size);
  if (s->o.num_layers != 1) n += (size_t)snprintf(extra + n, sizeof extra - n, ", num_layers=%lld", (long long)s->o.num_layers);
  if (s->o.no_bias) n += (size_t)snprintf(extra + n, sizeof extra - n, ", bias=False");
  if (s->o.batch_first) n += (size_t)snprintf(extra + n, sizeof extra - n, ", batch_first=True");
  if (s->o.dropout != 0) n += (size_t)snprintf(extra + n, sizeof extra - n, ", dropout=%s", nn_pyfloat(s->o.dropout, b));
  if (s->o.bidirectional) snprintf(extra + n, sizeof extra - n, ", bidirectional=True");
  return nn_strf("%lld, %lld%s", (long long)s->in, (long long)s->H, extra);
}

static wk_tensor *rnn_forward_fn(wk_module *self, wk_tensor *const *in, int n);
static const wk_module_class LSTM = {sizeof(wk_module_class), "LSTM", rnn_forward_fn, free, rnn_repr};
static const wk_module_class GRU = {sizeof(wk_module_class), "GRU", rnn_forward_fn, free, rnn_repr};

static void pname(char *buf, size_t cap, const char *what, int64_t layer, int dir) {
  snprintf(buf, cap, "%s_l%lld%s", what, (long long)layer, dir ? "_reverse" : "");
}

wk_module *nn_rnn(int kind, int64_t in, int64_t H, const wk_rnn_opts *o, size_t osize) {
  wk_rnn_opts op;
  nn_opts(&op, sizeof op, o, osize);
  if (kind != WK_NN_LSTM && kind != WK_NN_GRU) {
    wk_error(WK_ERR_INVALID_ARG, "rnn: unknown kind %d (WK_NN_LSTM or WK_NN_GRU)", kind);
    return NULL;
  }
  const char *cls = rnn_name(kind);
  if (op.num_layers == 0) op.num_layers = 1;
  if (in <= 0 || H <= 0 || op.num_layers < 1) {
    wk_error(WK_ERR_INVALID_ARG, "%s: input_size, hidden_size and num_layers must be positive, got %lld, %lld and %lld",
             cls, (long long)in, (long long)H, (long long)op.num_layers);
    return NULL;
  }
  if (!(op.dropout >= 0 && op.dropout <= 1)) {
    wk_error(WK_ERR_INVALID_ARG,
             "%s: dropout should be a number in range [0, 1] representing the probability of an element being "
             "zeroed, got %g",
             cls, op.dropout);
    return NULL;
  }
  if (op.proj_size && kind != WK_NN_LSTM) {
    wk_error(WK_ERR_INVALID_ARG, "%s: proj_size argument is only supported for LSTM, not RNN or GRU", cls);
    return NULL;
  }
  if (op.proj_size < 0 || op.proj_size >= H) {
    wk_error(WK_ERR_INVALID_ARG, "%s: proj_size should be a positive integer smaller than hidden_size (%lld), got %lld",
             cls, (long long)H, (long long)op.proj_size);
    return NULL;
  }
  rnn_state *s = wk_malloc(sizeof *s);
  if (!s) {
    wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", cls);
    return NULL;
  }
  *s = (rnn_state){kind, in, H, op};
  wk_module *m = wk_module_new(kind == WK_NN_LSTM ? &LSTM : &GRU, s);
  if (!m) {
    wk_free(s);
    return NULL;
  }
  int64_t G = kind == WK_NN_LSTM ? 4 : 3;
  int D = op.bidirectional ? 2 : 1;
  double k = 1.0 / sqrt((double)H);
  wk_status st = WK_OK;
  wk_scope_begin();
  for (int64_t l = 0; l < op.num_layers && !st; l++)
    for (int d = 0; d < D && !st; d++) {
      const int64_t Hr = op.proj_size ? op.proj_size : H, lin = l == 0 ? in : Hr * D;
      /* PyTorch's order: weight_ih, weight_hh[, bias_ih, bias_hh][, weight_hr] */
      wk_tensor *t[5] = {wk_empty(WK_SHAPE(G * H, lin), (wk_options){0}), wk_empty(WK_SHAPE(G * H, Hr), (wk_options){0}),
                         op.no_bias ? NULL : wk_empty(WK_SHAPE(G * H), (wk_options){0}),
                         op.no_bias ? NULL : wk_empty(WK_SHAPE(G * H), (wk_options){0}),
                         op.proj_size ? wk_empty(WK_SHAPE(op.proj_size, H), (wk_options){0}) : NULL};
      static const char *const what[5] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr"};
      for (int i = 0; i < 5 && !st; i++) {
        if ((op.no_bias && (i == 2 || i == 3)) || (!op.proj_size && i == 4)) continue;
        char nm[64];
        pname(nm, sizeof nm, what[i], l, d);
        st = t[i] ? nn_fill_uniform(t[i], -k, k) : wk_last_error();
        if (!st) st = nn_param(m, nm, t[i]);
      }
    }
  wk_scope_end();
  if (st) {
    wk_module_release(m);
    return NULL;
  }
  return m;
}

/* One direction of one layer over x (T, N, in) from h (and c): fills out[t]
 * (N, H) and leaves the final state in *h / *c. keep[t] (N, 1) bool, or NULL:
 * every step valid. Runs in the caller's scope. */
static bool run_dir(const rnn_state *s, wk_module *m, int64_t l, int d, wk_tensor *x, wk_tensor **keep,
                    wk_tensor **h, wk_tensor **c, wk_tensor **out) {
  char nm[64];
  const int64_t H = s->H, T = wk_tensor_size(x, 0);
  pname(nm, sizeof nm, "weight_ih", l, d);
  wk_tensor *wih = wk_module_param(m, nm);
  pname(nm, sizeof nm, "weight_hh", l, d);
  wk_tensor *whh = wk_module_param(m, nm);
  wk_tensor *bih = NULL, *bhh = NULL, *whr = NULL;
  if (s->o.proj_size) {
    pname(nm, sizeof nm, "weight_hr", l, d);
    whr = wk_module_param(m, nm);
  }
  if (!s->o.no_bias) {
    pname(nm, sizeof nm, "bias_ih", l, d);
    bih = wk_module_param(m, nm);
    pname(nm, sizeof nm, "bias_hh", l, d);
    bhh = wk_module_param(m, nm);
  }
  wk_tensor *xp = wk_linear(x, wih, bih); /* every step's input gates in one product */
  if (!xp) return false;
  for (int64_t st = 0; st < T; st++) {
    int64_t t = d ? T - 1 - st : st;
    wk_tensor *xt = wk_select(xp, 0, t), *gh = wk_linear(*h, whh, bhh), *hn, *cn = NULL;
    if (s->kind == WK_NN_LSTM) {
      wk_tensor *g = wk_add(gh, xt);
      wk_tensor *ig = wk_sigmoid(wk_narrow(g, 1, 0, H)), *fg = wk_sigmoid(wk_narrow(g, 1, H, H));
      wk_tensor *cg = wk_tanh(wk_narrow(g, 1, 2 * H, H)), *og = wk_sigmoid(wk_narrow(g, 1, 3 * H, H));
      cn = wk_add(wk_mul(fg, *c), wk_mul(ig, cg));
      hn = wk_mul(og, wk_tanh(cn));
      if (whr) hn = wk_linear(hn, whr, NULL); /* proj_size */
    } else {
      wk_tensor *r = wk_sigmoid(wk_add(wk_narrow(xt, 1, 0, H), wk_narrow(gh, 1, 0, H)));
      wk_tensor *z = wk_sigmoid(wk_add(wk_narrow(xt, 1, H, H), wk_narrow(gh, 1, H, H)));
      wk_tensor *ng = wk_tanh(wk_add(wk_narrow(xt, 1, 2 * H, H), wk_mul(wk_narrow(gh, 1, 2 * H, H), r)));
      hn = wk_add(wk_mul(wk_sub(*h, ng), z), ng); /* (h - n) * z + n, PyTorch's order */
    }
    if (keep) {
      wk_tensor *k = keep[t];
      out[t] = wk_mul(hn, wk_to_dtype(k, wk_tensor_dtype(hn)));
      hn = wk_where(k, hn, *h);
      if (cn) cn = wk_where(k, cn, *c);
    } else {
      out[t] = hn;
    }
    *h = hn;
    if (cn) *c = cn;
    if (!hn || !out[t] || (s->kind == WK_NN_LSTM && !cn)) return false;
  }
  return true;
}

/* The whole forward, in the caller's scope. */
static wk_tensor *rnn_run(wk_module *m, wk_tensor *input, wk_tensor *h0, wk_tensor *c0, wk_tensor *lengths,
                          wk_tensor **h_n, wk_tensor **c_n) {
  const rnn_state *s = wk_module_state(m);
  const char *cls = rnn_name(s->kind);
  const int64_t H = s->H, NL = s->o.num_layers, Hr = s->o.proj_size ? s->o.proj_size : H;
  const int D = s->o.bidirectional ? 2 : 1;
  char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX];
  int nd = wk_tensor_dim(input);
  if ((nd != 2 && nd != 3) || wk_tensor_size(input, -1) != s->in) {
    wk_error(WK_ERR_SHAPE, "%s: expected input of shape (T, N, %lld)%s or unbatched (T, %lld), got %s", cls,
             (long long)s->in, s->o.batch_first ? " (batch_first: (N, T, ...))" : "", (long long)s->in,
             wk_shape_str(input, a, sizeof a));
    return NULL;
  }
  if (c0 && s->kind != WK_NN_LSTM) {
    wk_error(WK_ERR_INVALID_ARG, "GRU: takes no c_0");
    return NULL;
  }
  bool ub = nd == 2;
  wk_tensor *x = ub ? wk_unsqueeze(input, 1) : s->o.batch_first ? wk_transpose(input, 0, 1) : input;
  if (!x) return NULL;
  const int64_t T = wk_tensor_size(x, 0), N = wk_tensor_size(x, 1);
  wk_options fo = {.dtype = wk_tensor_dtype(x), .device = wk_tensor_device(x)};
  wk_tensor *st0[2] = {h0, c0};
  for (int i = 0; i < 2; i++) {
    if (!st0[i]) continue;
    int64_t hs[3] = {NL * D, N, i ? H : Hr}; /* h has proj_size features */
    if (ub) st0[i] = wk_unsqueeze(st0[i], 1);
    if (!st0[i]) return NULL;
    if (wk_tensor_dim(st0[i]) != 3 || memcmp(wk_tensor_sizes(st0[i]), hs, sizeof hs)) {
      wk_error(WK_ERR_SHAPE, "%s: Expected hidden%s size %s, got %s", cls, i ? "[1]" : s->kind == WK_NN_LSTM ? "[0]" : "",
               wk_sizes_str(hs, 3, a, sizeof a), wk_shape_str(i ? c0 : h0, b, sizeof b));
      return NULL;
    }
  }
  /* lengths: keep[t] (N, 1) = t < lengths[n] */
  wk_tensor **keep = NULL, *kall = NULL;
  if (lengths) {
    if (wk_tensor_dtype(lengths) != WK_I64 || wk_tensor_dim(lengths) != 1 || wk_tensor_size(lengths, 0) != N ||
        wk_tensor_device(lengths).type != WK_DEVICE_CPU) {
      wk_error(WK_ERR_INVALID_ARG, "%s: lengths must be a 1-D int64 cpu tensor of %lld elements (the batch), got %s %s",
               cls, (long long)N, wk_dtype_name(wk_tensor_dtype(lengths)), wk_shape_str(lengths, a, sizeof a));
      return NULL;
    }
    wk_tensor *lc = wk_contiguous(lengths);
    if (!lc) return NULL;
    const int64_t *lv = wk_tensor_data(lc);
    bool *kb = wk_malloc((size_t)(T * N > 0 ? T * N : 1));
    if (!kb) {
      wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", cls);
      return NULL;
    }
    bool bad = false, all = true;
    for (int64_t n = 0; n < N; n++) {
      if (lv[n] < 1 || lv[n] > T) bad = true;
      if (lv[n] != T) all = false;
    }
    if (bad) {
      wk_free(kb);
      wk_error(WK_ERR_INVALID_ARG, "%s: every length must be in [1, %lld] (the sequence length), got %s", cls,
               (long long)T, wk_sizes_str(lv, (int)(N < 8 ? N : 8), a, sizeof a));
      return NULL;
    }
    if (!all) {
      for (int64_t t = 0; t < T; t++)
        for (int64_t n = 0; n < N; n++) kb[t * N + n] = t < lv[n];
      kall = wk_tensor_from_data(kb, WK_BOOL, WK_SHAPE(T, N, 1));
      if (kall && fo.device.type != WK_DEVICE_CPU) kall = wk_to_device(kall, fo.device);
      keep = kall ? wk_malloc(sizeof *keep * (size_t)T) : NULL;
      for (int64_t t = 0; keep && t < T; t++) keep[t] = wk_select(kall, 0, t);
    }
    wk_free(kb);
    if (!all && !keep) {
      if (kall) wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", cls);
      return NULL;
    }
  }
  wk_tensor **outs = wk_malloc(sizeof *outs * (size_t)(T ? T : 1) * 2);
  wk_tensor **hl = wk_malloc(sizeof *hl * (size_t)(NL * D) * 2);
  bool ok = outs && hl;
  if (!ok) wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", cls);
  wk_tensor *zero = ok && (!st0[0] || (s->kind == WK_NN_LSTM && !st0[1])) ? wk_zeros(WK_SHAPE(N, H), fo) : NULL;
  wk_tensor *zero_h = ok && !st0[0] && Hr != H ? wk_zeros(WK_SHAPE(N, Hr), fo) : zero;
  double p = wk_module_is_training(m) ? s->o.dropout : 0;
  for (int64_t l = 0; ok && l < NL; l++) {
    wk_tensor *dir_out[2] = {NULL, NULL};
    for (int d = 0; ok && d < D; d++) {
      int64_t k = l * D + d;
      wk_tensor *h = st0[0] ? wk_select(st0[0], 0, k) : zero_h;
      wk_tensor *c = s->kind == WK_NN_LSTM ? (st0[1] ? wk_select(st0[1], 0, k) : zero) : NULL;
      ok = h && (s->kind != WK_NN_LSTM || c) && run_dir(s, m, l, d, x, keep, &h, &c, outs + d * T);
      if (ok) {
        hl[k] = h;
        hl[NL * D + k] = c;
        dir_out[d] = wk_stack(outs + d * T, (int)T, 0);
        ok = dir_out[d] != NULL;
      }
    }
    if (!ok) break;
    x = D == 2 ? wk_cat(dir_out, 2, 2) : dir_out[0];
    if (x && p > 0 && l < NL - 1) x = wk_dropout(x, p, true, NULL);
    ok = x != NULL;
  }
  if (ok && h_n) *h_n = wk_stack(hl, (int)(NL * D), 0);
  if (ok && c_n) *c_n = s->kind == WK_NN_LSTM ? wk_stack(hl + NL * D, (int)(NL * D), 0) : NULL;
  wk_free(outs);
  wk_free(hl);
  wk_free(keep);
  if (!ok) return NULL;
  if (ub) {
    if (h_n && *h_n) *h_n = wk_squeeze_dim(*h_n, 1);
    if (c_n && *c_n) *c_n = wk_squeeze_dim(*c_n, 1);
    return wk_squeeze_dim(x, 1);
  }
  return s->o.batch_first ? wk_transpose(x, 0, 1) : x;
}

static wk_tensor *rnn_forward_fn(wk_module *self, wk_tensor *const *in, int n) {
  const rnn_state *s = wk_module_state(self);
  if (n < 1 || n > (s->kind == WK_NN_LSTM ? 3 : 2)) {
    wk_error(WK_ERR_INVALID_ARG, "%s.forward() takes %s, got %d inputs", rnn_name(s->kind),
             s->kind == WK_NN_LSTM ? "(input[, h_0[, c_0]])" : "(input[, h_0])", n);
    return NULL;
  }
  wk_scope_begin();
  return nn_ret(rnn_run(self, in[0], n > 1 ? in[1] : NULL, n > 2 ? in[2] : NULL, NULL, NULL, NULL));
}

wk_tensor *nn_rnn_forward(wk_module *m, wk_tensor *input, wk_tensor *h0, wk_tensor *c0, wk_tensor *lengths,
                          wk_tensor **h_n, wk_tensor **c_n) {
  if (h_n) *h_n = NULL;
  if (c_n) *c_n = NULL;
  if (!m || !input) {
    wk_error(WK_ERR_NULL, "rnn_forward: %s is NULL", !m ? "module" : "input");
    return NULL;
  }
  const char *cn = wk_module_class_name(m);
  if (cn != LSTM.name && cn != GRU.name) {
    wk_error(WK_ERR_INVALID_ARG, "rnn_forward: expected an LSTM or a GRU, got %s", cn);
    return NULL;
  }
  wk_scope_begin();
  wk_tensor *hn = NULL, *cc = NULL;
  wk_tensor *y = rnn_run(m, input, h0, c0, lengths, h_n ? &hn : NULL, c_n ? &cc : NULL);
  if (y && h_n) *h_n = wk_scope_keep(hn);
  if (y && c_n && cc) *c_n = wk_scope_keep(cc);
  return nn_ret(y);
}
