/* nn plugin: MultiheadAttention, TransformerEncoderLayer, TransformerDecoderLayer
 * and TransformerEncoder with PyTorch 1.13's parameter names, masks and
 * arithmetic. Attention runs through the scaled_dot_product_attention op
 * (fused on the cpu), or through an explicit softmax when the caller wants
 * the attention weights (as PyTorch's need_weights=True path). */
#include "nn.h"

/* ---- NonDynamicallyQuantizableLinear (MHA's out_proj: a Linear by another name) ---- */
typedef struct {
  int64_t in, out;
  bool bias;
} oproj_state;

static wk_tensor *oproj_forward(wk_module *self, wk_tensor *const *in, int n) {
  if (!nn_check_inputs("NonDynamicallyQuantizableLinear", in, n, 1)) return NULL;
  return wk_linear(in[0], wk_module_param(self, "weight"), wk_module_param(self, "bias"));
}
static char *oproj_repr(const wk_module *self) {
  const oproj_state *s = wk_module_state(self);
  return nn_strf("in_features=%lld, out_features=%lld, bias=%s", (long long)s->in, (long long)s->out,
                 s->bias ? "True" : "False");
}
static const wk_module_class OPROJ = {sizeof(wk_module_class), "NonDynamicallyQuantizableLinear", oproj_forward, free,
                                      oproj_repr};

/* ---- MultiheadAttention ---- */
typedef struct {
  int64_t E, H;
  wk_mha_opts o;
} mha_state;

static wk_tensor *mha_forward_fn(wk_module *self, wk_tensor *const *in, int n);
static const wk_module_class MHA = {sizeof(wk_module_class), "MultiheadAttention", mha_forward_fn, free, NULL};

wk_module *nn_multihead_attention(int64_t E, int64_t H, const wk_mha_opts *o, size_t osize) {
  wk_mha_opts op;
  nn_opts(&op, sizeof op, o, osize);
  if (E <= 0 || H <= 0) {
    wk_error(WK_ERR_INVALID_ARG, "MultiheadAttention: embed_dim and num_heads must be positive, got %lld and %lld",
             (long long)E, (long long)H);
    return NULL;
  }
  if (E % H) {
    wk_error(WK_ERR_INVALID_ARG, "MultiheadAttention: embed_dim must be divisible by num_heads (%lld and %lld)",
             (long long)E, (long long)H);
    return NULL;
  }
  if (!(op.dropout >= 0 && op.dropout <= 1)) {
    wk_error(WK_ERR_INVALID_ARG, "MultiheadAttention: dropout probability has to be between 0 and 1, but got %g",
             op.dropout);
    return NULL;
  }
  if (op.kdim < 0 || op.vdim < 0) {
    wk_error(WK_ERR_INVALID_ARG, "MultiheadAttention: kdim and vdim must be positive (0: embed_dim), got %lld and %lld",
             (long long)op.kdim, (long long)op.vdim);
    return NULL;
  }
  if (op.kdim == 0) op.kdim = E;
  if (op.vdim == 0) op.vdim = E;
  mha_state *s = wk_malloc(sizeof *s);
  oproj_state *ps = wk_malloc(sizeof *ps);
  if (!s || !ps) {
    wk_free(s);
    wk_free(ps);
    wk_error(WK_ERR_NO_MEMORY, "MultiheadAttention: out of memory");
    return NULL;
  }
  *s = (mha_state){E, H, op};
  *ps = (oproj_state){E, E, !op.no_bias};
  wk_module *m = wk_module_new(&MHA, s);
  wk_module *proj = wk_module_new(&OPROJ, ps);
  if (!m || !proj) {
    if (!m) wk_free(s);
    if (!proj) wk_free(ps);
    wk_module_release(m);
    wk_module_release(proj);
    return NULL;
  }
  bool b = !op.no_bias, same = op.kdim == E && op.vdim == E;
  wk_scope_begin();
  /* PyTorch's _reset_parameters: xavier_uniform_ in_proj_weight (or each of
   * q/k/v_proj_weight), zero biases, xavier_normal_ bias_k and bias_v;
   * out_proj.weight keeps Linear's default init */
  wk_tensor *w = same ? wk_empty(WK_SHAPE(3 * E, E), (wk_options){0}) : NULL;
  wk_tensor *qkv[3] = {NULL, NULL, NULL};
  if (!same) {
    qkv[0] = wk_empty(WK_SHAPE(E, E), (wk_options){0});
    qkv[1] = wk_empty(WK_SHAPE(E, op.kdim), (wk_options){0});
    qkv[2] = wk_empty(WK_SHAPE(E, op.vdim), (wk_options){0});
  }
  wk_tensor *ib = b ? wk_zeros(WK_SHAPE(3 * E), (wk_options){0}) : NULL;
  wk_tensor *pw = wk_empty(WK_SHAPE(E, E), (wk_options){0});
  wk_tensor *pb = b ? wk_empty(WK_SHAPE(E), (wk_options){0}) : NULL;
  wk_tensor *bk = op.add_bias_kv ? wk_empty(WK_SHAPE(1, 1, E), (wk_options){0}) : NULL;
  wk_tensor *bv = op.add_bias_kv ? wk_empty(WK_SHAPE(1, 1, E), (wk_options){0}) : NULL;
  wk_status st = (same ? w != NULL : qkv[0] && qkv[1] && qkv[2]) && pw && (!b || (ib && pb)) &&
                         (!op.add_bias_kv || (bk && bv))
                     ? WK_OK
                     : wk_last_error();
  if (!st && same) st = nn_init(WK_NN_INIT_XAVIER_UNIFORM, w, &(wk_init_opts){0}, sizeof(wk_init_opts));
  for (int i = 0; i < 3 && !st && !same; i++)
    st = nn_init(WK_NN_INIT_XAVIER_UNIFORM, qkv[i], &(wk_init_opts){0}, sizeof(wk_init_opts));
  if (!st) st = nn_init_default_weight_bias(pw, pb);
  if (!st && pb) st = nn_init(WK_NN_INIT_ZEROS, pb, &(wk_init_opts){0}, sizeof(wk_init_opts));
  if (!st && bk) st = nn_init(WK_NN_INIT_XAVIER_NORMAL, bk, &(wk_init_opts){0}, sizeof(wk_init_opts));
  if (!st && bv) st = nn_init(WK_NN_INIT_XAVIER_NORMAL, bv, &(wk_init_opts){0}, sizeof(wk_init_opts));
  if (!st && same) st = nn_param(m, "in_proj_weight", w);
  if (!st && !same) st = nn_param(m, "q_proj_weight", qkv[0]);
  if (!st && !same) st = nn_param(m, "k_proj_weight", qkv[1]);
  if (!st && !same) st = nn_param(m, "v_proj_weight", qkv[2]);
  if (!st) st = nn_param(m, "in_proj_bias", ib);
  if (!st && bk) st = nn_param(m, "bias_k", bk);
  if (!st && bv) st = nn_param(m, "bias_v", bv);
  if (!st) st = nn_param(proj, "weight", pw);
  if (!st) st = nn_param(proj, "bias", pb);
  wk_scope_end();
  if (!st) st = nn_child(m, "out_proj", proj);
  else wk_module_release(proj);
  if (st) {
    wk_module_release(m);
    return NULL;
  }
  return m;
}

static bool is_float_or_bool(const char *what, wk_tensor *t) {
  if (wk_tensor_dtype(t) == WK_BOOL || wk_dtype_is_floating(wk_tensor_dtype(t))) return true;
  wk_error(WK_ERR_DTYPE, "MultiheadAttention: only bool and floating types of %s are supported, got %s", what,
           wk_dtype_name(wk_tensor_dtype(t)));
  return false;
}

/* A mask as an additive float mask of dtype dt: bool True -> -inf. */
static wk_tensor *additive(wk_tensor *m, wk_dtype dt) {
  if (wk_tensor_dtype(m) != WK_BOOL) return wk_to_dtype(m, dt);
  wk_tensor *z = wk_zeros(wk_tensor_sizes(m), wk_tensor_dim(m), (wk_options){.dtype = dt, .device = wk_tensor_device(m)});
  return wk_masked_fill(z, m, -INFINITY);
}

/* An additive mask with `extra` zero (allowed) key columns appended (add_bias_kv, add_zero_attn). */
static wk_tensor *pad_keys(wk_tensor *m, int64_t extra) {
  if (!m || extra == 0) return m;
  int nd = wk_tensor_dim(m);
  int64_t sz[WK_MAX_DIMS];
  memcpy(sz, wk_tensor_sizes(m), sizeof(int64_t) * (size_t)nd);
  sz[nd - 1] = extra;
  wk_tensor *z = wk_zeros(sz, nd, (wk_options){.dtype = wk_tensor_dtype(m), .device = wk_tensor_device(m)});
  return wk_cat((wk_tensor *[]){m, z}, 2, nd - 1);
}

/* PyTorch's multi_head_attention_forward on batch-first 3-D inputs (N, L, E),
 * (N, S, E): the merged additive mask (N or 1, H or 1, L, S), then attention.
 * Runs in the caller's scope. */
static wk_tensor *mha_core(wk_module *self, wk_tensor *query, wk_tensor *key, wk_tensor *value,
                           const wk_attn_masks *mk, wk_tensor **weights) {
  const mha_state *s = wk_module_state(self);
  const int64_t E = s->E, H = s->H, hd = E / H;
  char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX], c[WK_SHAPE_STR_MAX];
  const int64_t kd = s->o.kdim ? s->o.kdim : E, vd = s->o.vdim ? s->o.vdim : E;
  int64_t N = wk_tensor_size(query, 0), L = wk_tensor_size(query, 1), S = wk_tensor_size(key, 1);
  if (wk_tensor_size(query, 2) != E || wk_tensor_size(key, 2) != kd || wk_tensor_size(value, 2) != vd ||
      wk_tensor_size(key, 0) != N || wk_tensor_size(value, 0) != N || wk_tensor_size(value, 1) != S) {
    if (kd == E && vd == E)
      wk_error(WK_ERR_SHAPE,
               "MultiheadAttention(embed_dim=%lld): expected query (N, L, %lld), key and value (N, S, %lld) (batch "
               "first), got %s, %s and %s",
               (long long)E, (long long)E, (long long)E, wk_shape_str(query, a, sizeof a),
               wk_shape_str(key, b, sizeof b), wk_shape_str(value, c, sizeof c));
    else
      wk_error(WK_ERR_SHAPE,
               "MultiheadAttention(embed_dim=%lld, kdim=%lld, vdim=%lld): expected query (N, L, %lld), key (N, S, "
               "%lld) and value (N, S, %lld) (batch first), got %s, %s and %s",
               (long long)E, (long long)kd, (long long)vd, (long long)E, (long long)kd, (long long)vd,
               wk_shape_str(query, a, sizeof a), wk_shape_str(key, b, sizeof b), wk_shape_str(value, c, sizeof c));
    return NULL;
  }
  wk_dtype dt = wk_tensor_dtype(query);
  bool same = kd == E && vd == E;
  wk_tensor *W = same ? wk_module_param(self, "in_proj_weight") : NULL, *B = wk_module_param(self, "in_proj_bias");
  static const char *const sep[3] = {"q_proj_weight", "k_proj_weight", "v_proj_weight"};
  wk_tensor *proj[3], *src[3] = {query, key, value};
  /* PyTorch's add_bias_kv appends bias_k / bias_v as one more key and value,
   * add_zero_attn a zero one after the heads split; the masks get a zero
   * (allowed) column for each */
  int64_t S2 = S + (s->o.add_bias_kv ? 1 : 0) + (s->o.add_zero_attn ? 1 : 0);
  for (int i = 0; i < 3; i++) {
    int64_t len = i == 0 ? L : S;
    wk_tensor *w = same ? wk_narrow(W, 0, i * E, E) : wk_module_param(self, sep[i]);
    wk_tensor *y = wk_linear(src[i], w, B ? wk_narrow(B, 0, i * E, E) : NULL);
    if (i > 0 && s->o.add_bias_kv) {
      wk_tensor *bias = wk_module_param(self, i == 1 ? "bias_k" : "bias_v"); /* (1, 1, E) */
      y = wk_cat((wk_tensor *[]){y, wk_expand(bias, WK_SHAPE(N, 1, E))}, 2, 1);
      len++;
    }
    proj[i] = wk_permute(wk_reshape(y, WK_SHAPE(N, len, H, hd)), WK_SHAPE(0, 2, 1, 3)); /* (N, H, len, hd) */
    if (i > 0 && s->o.add_zero_attn) {
      wk_options zo = {.dtype = wk_tensor_dtype(query), .device = wk_tensor_device(query)};
      proj[i] = wk_cat((wk_tensor *[]){proj[i], wk_zeros(WK_SHAPE(N, H, 1, hd), zo)}, 2, 2);
    }
  }
  /* the merged mask */
  wk_tensor *mask = NULL;
  wk_tensor *am = mk ? mk->attn_mask : NULL, *kpm = mk ? mk->key_padding_mask : NULL;
  if (am) {
    if (!is_float_or_bool("attn_mask", am)) return NULL;
    int nd = wk_tensor_dim(am);
    const int64_t *sz = wk_tensor_sizes(am);
    if (nd == 2 && sz[0] == L && sz[1] == S) {
      mask = pad_keys(additive(am, dt), S2 - S);
    } else if (nd == 3 && sz[0] == N * H && sz[1] == L && sz[2] == S) {
      mask = wk_reshape(pad_keys(additive(am, dt), S2 - S), WK_SHAPE(N, H, L, S2));
    } else {
      int64_t want[3] = {N * H, L, S};
      wk_error(WK_ERR_SHAPE, "MultiheadAttention: The shape of the attn_mask is %s, but should be %s or %s",
               wk_shape_str(am, a, sizeof a), wk_sizes_str(want + 1, 2, b, sizeof b), wk_sizes_str(want, 3, c, sizeof c));
      return NULL;
    }
  }
  if (kpm) {
    if (!is_float_or_bool("key_padding_mask", kpm)) return NULL;
    if (wk_tensor_dim(kpm) != 2 || wk_tensor_size(kpm, 0) != N || wk_tensor_size(kpm, 1) != S) {
      int64_t want[2] = {N, S};
      wk_error(WK_ERR_SHAPE, "MultiheadAttention: expecting key_padding_mask shape of %s, but got %s",
               wk_sizes_str(want, 2, a, sizeof a), wk_shape_str(kpm, b, sizeof b));
      return NULL;
    }
    wk_tensor *k4 = wk_reshape(pad_keys(additive(kpm, dt), S2 - S), WK_SHAPE(N, 1, 1, S2));
    mask = mask ? wk_add(mask, k4) : k4;
  }
  double p = wk_module_is_training(self) ? s->o.dropout : 0.0;
  wk_tensor *o;
  if (weights) { /* explicit softmax: the weights are a result */
    wk_tensor *sc = wk_mul_scalar(wk_matmul(proj[0], wk_transpose(proj[1], -2, -1)), 1.0 / sqrt((double)hd));
    if (mask) sc = wk_add(sc, mask);
    wk_tensor *attn = wk_softmax(sc, -1);
    if (p > 0) attn = wk_dropout(attn, p, true, NULL);
    o = wk_matmul(attn, proj[2]);
    *weights = mk && mk->no_average_attn_weights ? attn : wk_mean_dim(attn, WK_SHAPE(1), false);
  } else {
    o = wk_nn_scaled_dot_product_attention(proj[0], proj[1], proj[2], mask, p, false, 0);
  }
  o = wk_reshape(wk_permute(o, WK_SHAPE(0, 2, 1, 3)), WK_SHAPE(N, L, E));
  return wk_module_forward(wk_module_child(self, "out_proj"), o);
}

/* Seq-first (L, N, E) <-> batch-first, and unbatched (L, E) -> (1, L, E). */
static wk_tensor *to_bf(wk_tensor *x, bool batch_first, bool unbatched) {
  if (unbatched) return wk_unsqueeze(x, 0);
  return batch_first ? x : wk_transpose(x, 0, 1);
}
static wk_tensor *from_bf(wk_tensor *y, bool batch_first, bool unbatched) {
  if (unbatched) return wk_squeeze_dim(y, 0);
  return batch_first ? y : wk_transpose(y, 0, 1);
}

static wk_tensor *mha_run(wk_module *self, wk_tensor *q, wk_tensor *k, wk_tensor *v, const wk_attn_masks *mk,
                          wk_tensor **weights) {
  const mha_state *s = wk_module_state(self);
  char a[WK_SHAPE_STR_MAX];
  int nd = wk_tensor_dim(q);
  if (nd != 2 && nd != 3) {
    wk_error(WK_ERR_SHAPE, "MultiheadAttention: query should be unbatched 2D or batched 3D tensor but received %s",
             wk_shape_str(q, a, sizeof a));
    return NULL;
  }
  if (wk_tensor_dim(k) != nd || wk_tensor_dim(v) != nd) {
    wk_error(WK_ERR_SHAPE, "MultiheadAttention: key and value must have the query's number of dimensions (%d)", nd);
    return NULL;
  }
  bool ub = nd == 2, bf = s->o.batch_first;
  wk_attn_masks m = mk ? *mk : (wk_attn_masks){0};
  if (ub && m.key_padding_mask) m.key_padding_mask = wk_unsqueeze(m.key_padding_mask, 0);
  wk_tensor *w = NULL;
  wk_tensor *y = mha_core(self, to_bf(q, bf, ub), to_bf(k, bf, ub), to_bf(v, bf, ub), &m, weights ? &w : NULL);
  if (y && weights) *weights = ub ? wk_squeeze_dim(w, 0) : w;
  return y ? from_bf(y, bf, ub) : NULL;
}

static wk_tensor *mha_forward_fn(wk_module *self, wk_tensor *const *in, int n) {
  if (n < 1 || n > 5 || n == 2) {
    wk_error(WK_ERR_INVALID_ARG,
             "MultiheadAttention.forward() takes (query[, key, value[, key_padding_mask[, attn_mask]]]), got %d "
             "inputs",
             n);
    return NULL;
  }
  wk_scope_begin();
  wk_attn_masks m = {.key_padding_mask = n > 3 ? in[3] : NULL, .attn_mask = n > 4 ? in[4] : NULL};
  return nn_ret(mha_run(self, in[0], n > 1 ? in[1] : in[0], n > 1 ? in[2] : in[0], &m, NULL));
}

wk_tensor *nn_mha_forward(wk_module *mha, wk_tensor *q, wk_tensor *k, wk_tensor *v, const wk_attn_masks *mk,
                          size_t msize, wk_tensor **weights) {
  if (weights) *weights = NULL;
  if (!mha || !q || !k || !v) {
    wk_error(WK_ERR_NULL, "mha_forward: %s is NULL", !mha ? "module" : !q ? "query" : !k ? "key" : "value");
    return NULL;
  }
  if (wk_module_class_name(mha) != MHA.name) {
    wk_error(WK_ERR_INVALID_ARG, "mha_forward: expected a MultiheadAttention, got %s", wk_module_class_name(mha));
    return NULL;
  }
  wk_attn_masks m;
  nn_opts(&m, sizeof m, mk, mk ? msize : 0);
  wk_scope_begin();
  wk_tensor *w = NULL;
  wk_tensor *y = mha_run(mha, q, k, v, &m, weights ? &w : NULL);
  if (y && weights) *weights = wk_scope_keep(w);
  return nn_ret(y);
}

/* ---- TransformerEncoderLayer / TransformerDecoderLayer ---- */
typedef struct {
  bool decoder, gelu;
  int64_t d_model, nhead;
  wk_transformer_opts o; /* defaults applied; activation points to a static name */
} tl_state;

static wk_tensor *tl_forward_fn(wk_module *self, wk_tensor *const *in, int n);
static const wk_module_class ENC = {sizeof(wk_module_class), "TransformerEncoderLayer", tl_forward_fn, free, NULL};
static const wk_module_class DEC = {sizeof(wk_module_class), "TransformerDecoderLayer", tl_forward_fn, free, NULL};

wk_module *nn_transformer_layer(bool decoder, int64_t d_model, int64_t nhead, const wk_transformer_opts *o,
                                size_t osize) {
  wk_transformer_opts op;
  nn_opts(&op, sizeof op, o, osize);
  const char *cls = decoder ? "TransformerDecoderLayer" : "TransformerEncoderLayer";
  bool gelu = false;
  if (op.activation && strcmp(op.activation, "relu") != 0) {
    if (strcmp(op.activation, "gelu") != 0) {
      wk_error(WK_ERR_INVALID_ARG, "%s: activation should be relu/gelu, not %s", cls, op.activation);
      return NULL;
    }
    gelu = true;
  }
  op.activation = gelu ? "gelu" : "relu";
  if (op.dim_feedforward == 0) op.dim_feedforward = 2048;
  op.dropout = nn_opt_or(op.dropout, 0.1);
  op.layer_norm_eps = nn_opt_or(op.layer_norm_eps, 1e-5);
  if (d_model <= 0 || op.dim_feedforward < 0) {
    wk_error(WK_ERR_INVALID_ARG, "%s: d_model must be positive and dim_feedforward non-negative, got %lld and %lld",
             cls, (long long)d_model, (long long)op.dim_feedforward);
    return NULL;
  }
  if (!(op.dropout >= 0 && op.dropout <= 1)) {
    wk_error(WK_ERR_INVALID_ARG, "%s: dropout probability has to be between 0 and 1, but got %g", cls, op.dropout);
    return NULL;
  }
  tl_state *s = wk_malloc(sizeof *s);
  if (!s) {
    wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", cls);
    return NULL;
  }
  *s = (tl_state){decoder, gelu, d_model, nhead, op};
  wk_module *m = wk_module_new(decoder ? &DEC : &ENC, s);
  if (!m) {
    wk_free(s);
    return NULL;
  }
  wk_mha_opts mo = {.dropout = op.dropout, .batch_first = op.batch_first};
  wk_norm_opts no = {.eps = op.layer_norm_eps};
  wk_status st = nn_child(m, "self_attn", nn_multihead_attention(d_model, nhead, &mo, sizeof mo));
  if (!st && decoder) st = nn_child(m, "multihead_attn", nn_multihead_attention(d_model, nhead, &mo, sizeof mo));
  if (!st) st = nn_child(m, "linear1", nn_linear(d_model, op.dim_feedforward, true));
  if (!st) st = nn_child(m, "dropout", nn_activation(WK_NN_DROPOUT, op.dropout));
  if (!st) st = nn_child(m, "linear2", nn_linear(op.dim_feedforward, d_model, true));
  static const char *const norms[3] = {"norm1", "norm2", "norm3"}, *const drops[3] = {"dropout1", "dropout2", "dropout3"};
  for (int i = 0; i < (decoder ? 3 : 2) && !st; i++) st = nn_child(m, norms[i], nn_layer_norm(&d_model, 1, &no, sizeof no));
  for (int i = 0; i < (decoder ? 3 : 2) && !st; i++) st = nn_child(m, drops[i], nn_activation(WK_NN_DROPOUT, op.dropout));
  if (st) {
    wk_module_release(m);
    return NULL;
  }
  return m;
}

static wk_tensor *child_fwd(wk_module *m, const char *name, wk_tensor *x) {
  return wk_module_forward(wk_module_child(m, name), x);
}

/* dropout_k(self_attn(x, x, x, masks)) */
static wk_tensor *sa_block(wk_module *m, const char *attn, const char *drop, wk_tensor *x, wk_tensor *mem,
                           wk_tensor *am, wk_tensor *kpm) {
  wk_attn_masks mk = {.attn_mask = am, .key_padding_mask = kpm};
  wk_tensor *kv = mem ? mem : x;
  return child_fwd(m, drop, mha_run(wk_module_child(m, attn), x, kv, kv, &mk, NULL));
}

/* dropout2(linear2(dropout(activation(linear1(x))))) (dropout3 in the decoder) */
static wk_tensor *ff_block(wk_module *m, const tl_state *s, wk_tensor *x) {
  wk_tensor *h = child_fwd(m, "linear1", x);
  h = s->gelu ? wk_gelu(h, "none") : wk_relu(h);
  h = child_fwd(m, "linear2", child_fwd(m, "dropout", h));
  return child_fwd(m, s->decoder ? "dropout3" : "dropout2", h);
}

/* One layer, in the caller's scope. */
static wk_tensor *tl_run(wk_module *m, wk_tensor *x, wk_tensor *mem, const wk_attn_masks *mk) {
  const tl_state *s = wk_module_state(m);
  wk_tensor *am = mk->attn_mask, *kpm = mk->key_padding_mask;
  if (s->decoder && !mem) {
    wk_error(WK_ERR_INVALID_ARG, "TransformerDecoderLayer.forward(): memory is required");
    return NULL;
  }
  if (!s->decoder && mem) {
    wk_error(WK_ERR_INVALID_ARG, "TransformerEncoderLayer.forward(): takes no memory");
    return NULL;
  }
  if (s->o.norm_first) {
    x = wk_add(x, sa_block(m, "self_attn", "dropout1", child_fwd(m, "norm1", x), NULL, am, kpm));
    if (s->decoder)
      x = wk_add(x, sa_block(m, "multihead_attn", "dropout2", child_fwd(m, "norm2", x), mem, mk->memory_mask,
                             mk->memory_key_padding_mask));
    x = wk_add(x, ff_block(m, s, child_fwd(m, s->decoder ? "norm3" : "norm2", x)));
  } else {
    x = child_fwd(m, "norm1", wk_add(x, sa_block(m, "self_attn", "dropout1", x, NULL, am, kpm)));
    if (s->decoder)
      x = child_fwd(m, "norm2", wk_add(x, sa_block(m, "multihead_attn", "dropout2", x, mem, mk->memory_mask,
                                                   mk->memory_key_padding_mask)));
    x = child_fwd(m, s->decoder ? "norm3" : "norm2", wk_add(x, ff_block(m, s, x)));
  }
  return x;
}

static wk_tensor *tl_forward_fn(wk_module *self, wk_tensor *const *in, int n) {
  const tl_state *s = wk_module_state(self);
  int lo = s->decoder ? 2 : 1, hi = s->decoder ? 6 : 3;
  if (n < lo || n > hi) {
    wk_error(WK_ERR_INVALID_ARG, "%s.forward() takes %s, got %d inputs", wk_module_class_name(self),
             s->decoder ? "(tgt, memory[, tgt_mask[, memory_mask[, tgt_key_padding_mask[, memory_key_padding_mask]]]])"
                        : "(src[, src_mask[, src_key_padding_mask]])",
             n);
    return NULL;
  }
  wk_attn_masks mk = {0};
  if (s->decoder) {
    mk.attn_mask = n > 2 ? in[2] : NULL;
    mk.memory_mask = n > 3 ? in[3] : NULL;
    mk.key_padding_mask = n > 4 ? in[4] : NULL;
    mk.memory_key_padding_mask = n > 5 ? in[5] : NULL;
  } else {
    mk.attn_mask = n > 1 ? in[1] : NULL;
    mk.key_padding_mask = n > 2 ? in[2] : NULL;
  }
  wk_scope_begin();
  return nn_ret(tl_run(self, in[0], s->decoder ? in[1] : NULL, &mk));
}

/* ---- TransformerEncoder / TransformerDecoder ---- */
typedef struct {
  bool decoder, has_norm;
} te_state;
static wk_tensor *te_forward_fn(wk_module *self, wk_tensor *const *in, int n);
static const wk_module_class TENC = {sizeof(wk_module_class), "TransformerEncoder", te_forward_fn, free, NULL};
static const wk_module_class TDEC = {sizeof(wk_module_class), "TransformerDecoder", te_forward_fn, free, NULL};

/* Every layer in turn (the decoder's with the same memory and masks), then norm. */
static wk_tensor *te_run(wk_module *self, wk_tensor *x, wk_tensor *mem, const wk_attn_masks *mk) {
  const te_state *ts = wk_module_state(self);
  if (ts->decoder && !mem) {
    wk_error(WK_ERR_INVALID_ARG, "TransformerDecoder.forward(): memory is required");
    return NULL;
  }
  if (!ts->decoder && mem) {
    wk_error(WK_ERR_INVALID_ARG, "TransformerEncoder.forward(): takes no memory");
    return NULL;
  }
  wk_module *layers = wk_module_child(self, "layers");
  int nl = wk_module_named_children(layers, NULL, NULL, 0);
  wk_module *kids[64];
  wk_module **k = nl <= 64 ? kids : wk_malloc(sizeof *k * (size_t)nl);
  if (!k) {
    wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", wk_module_class_name(self));
    return NULL;
  }
  wk_module_named_children(layers, NULL, k, nl);
  for (int i = 0; i < nl && x; i++) x = tl_run(k[i], x, mem, mk);
  if (k != kids) wk_free(k);
  if (!x || !ts->has_norm) return x;
  return wk_module_forward(wk_module_child(self, "norm"), x);
}

static wk_tensor *te_forward_fn(wk_module *self, wk_tensor *const *in, int n) {
  const te_state *ts = wk_module_state(self);
  int lo = ts->decoder ? 2 : 1, hi = ts->decoder ? 6 : 3;
  if (n < lo || n > hi) {
    wk_error(WK_ERR_INVALID_ARG, "%s.forward() takes %s, got %d inputs", wk_module_class_name(self),
             ts->decoder ? "(tgt, memory[, tgt_mask[, memory_mask[, tgt_key_padding_mask[, memory_key_padding_mask]]]])"
                         : "(src[, mask[, src_key_padding_mask]])",
             n);
    return NULL;
  }
  wk_attn_masks mk = {0};
  if (ts->decoder) {
    mk.attn_mask = n > 2 ? in[2] : NULL;
    mk.memory_mask = n > 3 ? in[3] : NULL;
    mk.key_padding_mask = n > 4 ? in[4] : NULL;
    mk.memory_key_padding_mask = n > 5 ? in[5] : NULL;
  } else {
    mk.attn_mask = n > 1 ? in[1] : NULL;
    mk.key_padding_mask = n > 2 ? in[2] : NULL;
  }
  wk_scope_begin();
  return nn_ret(te_run(self, in[0], ts->decoder ? in[1] : NULL, &mk));
}

/* TransformerEncoder(encoder_layer, ...) or TransformerDecoder(decoder_layer, ...). */
static wk_module *make_stack(bool decoder, wk_module *layer, int64_t num_layers, wk_module *norm) {
  const char *cls = decoder ? "TransformerDecoder" : "TransformerEncoder";
  const char *want = decoder ? DEC.name : ENC.name;
  if (!layer || wk_module_class_name(layer) != want) {
    wk_module_release(norm);
    if (layer) wk_error(WK_ERR_INVALID_ARG, "%s: expected a %s, got %s", cls, want, wk_module_class_name(layer));
    else wk_error(WK_ERR_NULL, "%s: %s_layer is NULL", cls, decoder ? "decoder" : "encoder");
    return NULL;
  }
  if (num_layers < 1) {
    wk_module_release(norm);
    wk_error(WK_ERR_INVALID_ARG, "%s: num_layers must be at least 1, got %lld", cls, (long long)num_layers);
    return NULL;
  }
  const tl_state *s = wk_module_state(layer);
  te_state *ts = wk_malloc(sizeof *ts);
  if (!ts) {
    wk_module_release(norm);
    wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", cls);
    return NULL;
  }
  ts->decoder = decoder;
  ts->has_norm = norm != NULL;
  wk_module *m = wk_module_new(decoder ? &TDEC : &TENC, ts);
  if (!m) wk_free(ts);
  wk_module *list = nn_module_list(NULL, 0);
  wk_status st = m && list ? WK_OK : wk_last_error();
  wk_state_dict *sd = st ? NULL : wk_module_state_dict(layer);
  if (!st && !sd) st = wk_last_error();
  wk_transformer_opts lo = s->o; /* resolved values: a zero must stay zero */
  if (lo.dropout == 0) lo.dropout = WK_NN_ZERO;
  if (lo.layer_norm_eps == 0) lo.layer_norm_eps = WK_NN_ZERO;
  wk_tensor *w = wk_module_param(layer, "linear1.weight");
  for (int64_t i = 0; i < num_layers && !st; i++) { /* PyTorch deep-copies the layer: same weights in each */
    wk_module *c = nn_transformer_layer(decoder, s->d_model, s->nhead, &lo, sizeof lo);
    if (c) wk_module_train(c, wk_module_is_training(layer));
    if (c && w && wk_module_to(c, wk_tensor_device(w), wk_tensor_dtype(w))) {
      wk_module_release(c);
      c = NULL;
    }
    st = c ? wk_module_load_state_dict(c, sd, true, NULL) : wk_last_error();
    if (!st) st = nn_append(list, NULL, c);
    else wk_module_release(c);
  }
  wk_state_dict_free(sd);
  if (!st) {
    st = nn_child(m, "layers", list);
    list = NULL;
  }
  if (!st && norm) {
    st = nn_child(m, "norm", norm);
    norm = NULL;
  }
  wk_module_release(list);
  wk_module_release(norm);
  if (st) {
    wk_module_release(m);
    return NULL;
  }
  return m;
}

wk_module *nn_transformer_encoder(wk_module *layer, int64_t num_layers, wk_module *norm) {
  return make_stack(false, layer, num_layers, norm);
}
wk_module *nn_transformer_decoder(wk_module *layer, int64_t num_layers, wk_module *norm) {
  return make_stack(true, layer, num_layers, norm);
}

wk_tensor *nn_transformer_forward(wk_module *m, wk_tensor *x, wk_tensor *mem, const wk_attn_masks *mk, size_t msize) {
  if (!m || !x) {
    wk_error(WK_ERR_NULL, "transformer_forward: %s is NULL", !m ? "module" : "input");
    return NULL;
  }
  const char *cn = wk_module_class_name(m);
  if (cn != ENC.name && cn != DEC.name && cn != TENC.name && cn != TDEC.name) {
    wk_error(WK_ERR_INVALID_ARG,
             "transformer_forward: expected a TransformerEncoderLayer, TransformerDecoderLayer, "
             "TransformerEncoder or TransformerDecoder, got %s",
             cn);
    return NULL;
  }
  wk_attn_masks k;
  nn_opts(&k, sizeof k, mk, mk ? msize : 0);
  wk_scope_begin();
  if (cn == TENC.name || cn == TDEC.name) return nn_ret(te_run(m, x, mem, &k));
  return nn_ret(tl_run(m, x, mem, &k));
}

/* ---- Transformer (encoder-decoder) ---- */
typedef struct {
  int64_t d_model;
  bool batch_first;
} tf_state;

static wk_tensor *tf_forward_fn(wk_module *self, wk_tensor *const *in, int n);
static const wk_module_class TF = {sizeof(wk_module_class), "Transformer", tf_forward_fn, free, NULL};

wk_module *nn_transformer(int64_t d, int64_t nhead, int64_t ne, int64_t nd, const wk_transformer_opts *o,
                          size_t osize) {
  wk_transformer_opts op;
  nn_opts(&op, sizeof op, o, osize);
  if (ne < 1 || nd < 1) {
    wk_error(WK_ERR_INVALID_ARG, "Transformer: num_encoder_layers and num_decoder_layers must be at least 1, got %lld "
             "and %lld", (long long)ne, (long long)nd);
    return NULL;
  }
  wk_norm_opts no = {.eps = nn_opt_or(op.layer_norm_eps, 1e-5)};
  wk_module *layer = nn_transformer_layer(false, d, nhead, &op, sizeof op), *enc = NULL, *dec = NULL;
  wk_module *norm = layer ? nn_layer_norm(&d, 1, &no, sizeof no) : NULL;
  if (norm) enc = nn_transformer_encoder(layer, ne, norm); /* (takes norm) */
  wk_module_release(layer);
  layer = enc ? nn_transformer_layer(true, d, nhead, &op, sizeof op) : NULL;
  norm = layer ? nn_layer_norm(&d, 1, &no, sizeof no) : NULL;
  if (norm) dec = nn_transformer_decoder(layer, nd, norm);
  wk_module_release(layer);
  tf_state *s = dec ? wk_malloc(sizeof *s) : NULL;
  wk_module *m = NULL;
  if (s) {
    *s = (tf_state){d, op.batch_first};
    if (!(m = wk_module_new(&TF, s))) wk_free(s);
  } else if (dec) {
    wk_error(WK_ERR_NO_MEMORY, "Transformer: out of memory");
  }
  wk_status st;
  if (!m) {
    st = wk_last_error() ? wk_last_error() : WK_ERR_NO_MEMORY;
    wk_module_release(enc);
    wk_module_release(dec);
  } else if (!(st = nn_child(m, "encoder", enc))) { /* (takes enc) */
    st = nn_child(m, "decoder", dec);
  } else {
    wk_module_release(dec);
  }
  /* PyTorch's _reset_parameters: xavier_uniform_ every parameter with more than one dimension */
  int np = st ? 0 : wk_module_named_parameters(m, NULL, NULL, 0);
  wk_tensor **ps = np > 0 ? wk_malloc(sizeof *ps * (size_t)np) : NULL;
  if (np > 0 && !ps) st = wk_error(WK_ERR_NO_MEMORY, "Transformer: out of memory");
  if (ps) wk_module_named_parameters(m, NULL, ps, np);
  for (int i = 0; i < np && !st; i++)
    if (wk_tensor_dim(ps[i]) > 1) st = nn_init(WK_NN_INIT_XAVIER_UNIFORM, ps[i], &(wk_init_opts){0}, sizeof(wk_init_opts));
  wk_free(ps);
  if (st) {
    wk_module_release(m);
    return NULL;
  }
  return m;
}

/* The encoder on src, then the decoder on tgt and that memory; caller's scope. */
static wk_tensor *tf_run(wk_module *self, wk_tensor *src, wk_tensor *tgt, const wk_attn_masks *mk) {
  const tf_state *s = wk_module_state(self);
  char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX];
  int bd = s->batch_first ? 0 : 1;
  if (wk_tensor_dim(src) != wk_tensor_dim(tgt) || (wk_tensor_dim(src) == 3 && wk_tensor_size(src, bd) != wk_tensor_size(tgt, bd))) {
    wk_error(WK_ERR_SHAPE, "Transformer: the batch number of src and tgt must be equal, got %s and %s%s",
             wk_shape_str(src, a, sizeof a), wk_shape_str(tgt, b, sizeof b), s->batch_first ? " (batch_first)" : "");
    return NULL;
  }
  if (wk_tensor_size(src, -1) != s->d_model || wk_tensor_size(tgt, -1) != s->d_model) {
    wk_error(WK_ERR_SHAPE, "Transformer: the feature number of src and tgt must be equal to d_model (%lld), got %s and %s",
             (long long)s->d_model, wk_shape_str(src, a, sizeof a), wk_shape_str(tgt, b, sizeof b));
    return NULL;
  }
  wk_attn_masks em = {.attn_mask = mk->src_mask, .key_padding_mask = mk->src_key_padding_mask};
  wk_attn_masks dm = {.attn_mask = mk->attn_mask, .key_padding_mask = mk->key_padding_mask,
                      .memory_mask = mk->memory_mask, .memory_key_padding_mask = mk->memory_key_padding_mask};
  wk_tensor *memory = te_run(wk_module_child(self, "encoder"), src, NULL, &em);
  return memory ? te_run(wk_module_child(self, "decoder"), tgt, memory, &dm) : NULL;
}

static wk_tensor *tf_forward_fn(wk_module *self, wk_tensor *const *in, int n) {
  if (n < 2 || n > 8) {
    wk_error(WK_ERR_INVALID_ARG,
             "Transformer.forward() takes (src, tgt[, src_mask[, tgt_mask[, memory_mask[, src_key_padding_mask[, "
             "tgt_key_padding_mask[, memory_key_padding_mask]]]]]]), got %d inputs",
             n);
    return NULL;
  }
  wk_attn_masks mk = {.src_mask = n > 2 ? in[2] : NULL,
                      .attn_mask = n > 3 ? in[3] : NULL,
                      .memory_mask = n > 4 ? in[4] : NULL,
                      .src_key_padding_mask = n > 5 ? in[5] : NULL,
                      .key_padding_mask = n > 6 ? in[6] : NULL,
                      .memory_key_padding_mask = n > 7 ? in[7] : NULL};
  wk_scope_begin();
  return nn_ret(tf_run(self, in[0], in[1], &mk));
}

wk_tensor *nn_transformer_model_forward(wk_module *m, wk_tensor *src, wk_tensor *tgt, const wk_attn_masks *mk,
                                        size_t msize) {
  if (!m || !src || !tgt) {
    wk_error(WK_ERR_NULL, "transformer_model_forward: %s is NULL", !m ? "module" : !src ? "src" : "tgt");
    return NULL;
  }
  if (wk_module_class_name(m) != TF.name) {
    wk_error(WK_ERR_INVALID_ARG, "transformer_model_forward: expected a Transformer, got %s", wk_module_class_name(m));
    return NULL;
  }
  wk_attn_masks k;
  nn_opts(&k, sizeof k, mk, mk ? msize : 0);
  wk_scope_begin();
  return nn_ret(tf_run(m, src, tgt, &k));
}

/* ---- PositionalEncoding (PyTorch's Transformer tutorial) ---- */
typedef struct {
  int64_t d, max_len;
  bool batch_first;
} pe_state;

static wk_tensor *pe_forward(wk_module *self, wk_tensor *const *in, int n) {
  const pe_state *s = wk_module_state(self);
  if (!nn_check_inputs("PositionalEncoding", in, n, 1)) return NULL;
  wk_tensor *x = in[0];
  char a[WK_SHAPE_STR_MAX];
  int64_t T = wk_tensor_size(x, s->batch_first ? 1 : 0);
  if (wk_tensor_dim(x) != 3 || wk_tensor_size(x, 2) != s->d || T > s->max_len) {
    wk_error(WK_ERR_SHAPE, "PositionalEncoding(d_model=%lld, max_len=%lld): expected input %s with at most %lld steps, got %s",
             (long long)s->d, (long long)s->max_len, s->batch_first ? "(N, T, d_model)" : "(T, N, d_model)",
             (long long)s->max_len, wk_shape_str(x, a, sizeof a));
    return NULL;
  }
  wk_scope_begin();
  wk_tensor *pe = wk_narrow(wk_module_buffer(self, "pe"), 0, 0, T); /* (T, 1, d) */
  if (s->batch_first) pe = wk_transpose(pe, 0, 1);
  return nn_ret(wk_module_forward(wk_module_child(self, "dropout"), wk_add(x, pe)));
}
static const wk_module_class PE = {sizeof(wk_module_class), "PositionalEncoding", pe_forward, free, NULL};

wk_module *nn_positional_encoding(int64_t d, int64_t max_len, double dropout, bool batch_first) {
  if (d <= 0 || max_len <= 0) {
    wk_error(WK_ERR_INVALID_ARG, "PositionalEncoding: d_model and max_len must be positive, got %lld and %lld",
             (long long)d, (long long)max_len);
    return NULL;
  }
  double *t = wk_malloc(sizeof(double) * (size_t)(max_len * d));
  pe_state *s = wk_malloc(sizeof *s);
  if (!t || !s) {
    wk_free(t);
    wk_free(s);
    wk_error(WK_ERR_NO_MEMORY, "PositionalEncoding: out of memory");
    return NULL;
  }
  *s = (pe_state){d, max_len, batch_first};
  /* the tutorial's div_term = exp(arange(0, d, 2) * (-log(10000) / d)), in float32 as there */
  const float f = (float)(-log(10000.0) / (double)d);
  for (int64_t pos = 0; pos < max_len; pos++)
    for (int64_t i = 0; i < d; i += 2) {
      float div = expf((float)i * f), arg = (float)pos * div;
      t[pos * d + i] = sinf(arg);
      if (i + 1 < d) t[pos * d + i + 1] = cosf(arg);
    }
  wk_module *m = wk_module_new(&PE, s);
  if (!m) {
    wk_free(s);
    wk_free(t);
    return NULL;
  }
  wk_scope_begin();
  wk_tensor *pe = wk_to_dtype(wk_tensor_from_data(t, WK_F64, WK_SHAPE(max_len, 1, d)), WK_F32);
  wk_free(t);
  wk_status st = nn_buffer(m, "pe", pe);
  wk_scope_end();
  if (!st) st = nn_child(m, "dropout", nn_activation(WK_NN_DROPOUT, nn_opt_or(dropout, 0.1)));
  if (st) {
    wk_module_release(m);
    return NULL;
  }
  return m;
}
