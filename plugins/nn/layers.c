/* nn plugin: Linear, activations, Dropout, Flatten, Identity, Embedding and
 * the containers (Sequential, ModuleList, ModuleDict). */
#include "nn.h"

/* ---- Linear ---- */
typedef struct {
  int64_t in, out;
  bool bias;
} linear_state;

static wk_tensor *linear_forward(wk_module *self, wk_tensor *const *in, int n) {
  const linear_state *s = wk_module_state(self);
  if (!nn_check_inputs("Linear", in, n, 1)) return NULL;
  if (wk_tensor_dim(in[0]) < 1 || wk_tensor_size(in[0], -1) != s->in) {
    char b[160];
    wk_error(WK_ERR_SHAPE, "Linear(in_features=%lld, out_features=%lld): expected input with last dimension %lld, got shape %s",
             (long long)s->in, (long long)s->out, (long long)s->in, wk_shape_str(in[0], b, sizeof b));
    return NULL;
  }
  return wk_linear(in[0], wk_module_param(self, "weight"), wk_module_param(self, "bias"));
}
static char *linear_repr(const wk_module *self) {
  const linear_state *s = wk_module_state(self);
  return nn_strf("in_features=%lld, out_features=%lld, bias=%s", (long long)s->in, (long long)s->out,
                 s->bias ? "True" : "False");
}
static const wk_module_class LINEAR = {sizeof(wk_module_class), "Linear", linear_forward, free, linear_repr};

wk_module *nn_linear(int64_t in, int64_t out, bool bias) {
  if (in < 0 || out < 0) {
    wk_error(WK_ERR_INVALID_ARG, "Linear: in_features and out_features must be non-negative, got %lld and %lld",
             (long long)in, (long long)out);
    return NULL;
  }
  linear_state *s = wk_malloc(sizeof *s);
  if (s) *s = (linear_state){in, out, bias};
  wk_module *m = nn_module_new(&LINEAR, s);
  if (!m) return NULL;
  wk_scope_begin();
  wk_tensor *w = wk_empty(WK_SHAPE(out, in), (wk_options){0});
  wk_tensor *b = bias ? wk_empty(WK_SHAPE(out), (wk_options){0}) : NULL;
  wk_status st = nn_init_default_weight_bias(w, b);
  if (st == WK_OK) st = nn_param(m, "weight", w);
  if (st == WK_OK) st = nn_param(m, "bias", b);
  wk_scope_end();
  if (st != WK_OK) {
    wk_module_release(m);
    return NULL;
  }
  return m;
}

/* ---- activations, Identity, Dropout ---- */
typedef struct {
  int kind;
  double arg;
  bool inplace;
} act_state;

/* Dropout2d: one keep/drop draw per channel (the core's dropout on a (N, C, 1, 1)
 * tensor of ones gives the scaled mask), broadcast over the spatial dims. */
static wk_tensor *dropout2d(wk_module *self, wk_tensor *x, double p) {
  int nd = wk_tensor_dim(x);
  if (nd != 3 && nd != 4) {
    char b[160];
    wk_error(WK_ERR_SHAPE, "Dropout2d: expected a 3D (C, H, W) or 4D (N, C, H, W) input, got %s", wk_shape_str(x, b, sizeof b));
    return NULL;
  }
  if (!wk_module_is_training(self) || p == 0) return wk_alias(x);
  int64_t ms[4];
  for (int d = 0; d < nd; d++) ms[d] = d < nd - 2 ? wk_tensor_size(x, d) : 1;
  wk_scope_begin();
  wk_tensor *ones = wk_ones(ms, nd, (wk_options){.dtype = wk_tensor_dtype(x), .device = wk_tensor_device(x)});
  wk_tensor *mask = ones ? wk_dropout(ones, p, true, NULL) : NULL;
  return nn_ret(mask ? wk_mul(x, mask) : NULL);
}

static wk_tensor *act_forward(wk_module *self, wk_tensor *const *in, int n) {
  const act_state *s = wk_module_state(self);
  if (!nn_check_inputs(wk_module_class_name(self), in, n, 1)) return NULL;
  wk_tensor *x = in[0];
  switch (s->kind) {
  case WK_NN_RELU:
    /* ReLU(inplace=True) as torchvision's ResNet uses it: no new activation
     * per call (memory), and the result is an alias of the input, a new
     * reference like every forward's (its derivative uses the result). */
    if (s->inplace) return wk_relu_(x) ? wk_alias(x) : NULL;
    return wk_relu(x);
  case WK_NN_LEAKY_RELU: return wk_leaky_relu(x, s->arg);
  case WK_NN_GELU: return wk_gelu(x, "none");
  case WK_NN_GELU_TANH: return wk_gelu(x, "tanh");
  case WK_NN_SILU: return wk_silu(x);
  case WK_NN_SIGMOID: return wk_sigmoid(x);
  case WK_NN_TANH: return wk_tanh(x);
  case WK_NN_SOFTMAX: return wk_softmax(x, (int64_t)s->arg);
  case WK_NN_LOG_SOFTMAX: return wk_log_softmax(x, (int64_t)s->arg);
  case WK_NN_DROPOUT:
    if (wk_module_is_training(self) && s->arg > 0) return wk_dropout(x, s->arg, true, NULL);
    return wk_alias(x);
  case WK_NN_DROPOUT2D: return dropout2d(self, x, s->arg);
  default: return wk_alias(x);
  }
}
static char *act_repr(const wk_module *self) {
  const act_state *s = wk_module_state(self);
  char b[32];
  switch (s->kind) {
  case WK_NN_RELU:
  case WK_NN_SILU: return nn_strf("%s", s->inplace ? "inplace=True" : "");
  case WK_NN_LEAKY_RELU: return nn_strf("negative_slope=%s", nn_pyfloat(s->arg, b));
  case WK_NN_GELU: return nn_strf("approximate='none'");
  case WK_NN_GELU_TANH: return nn_strf("approximate='tanh'");
  case WK_NN_SOFTMAX:
  case WK_NN_LOG_SOFTMAX: return nn_strf("dim=%lld", (long long)s->arg);
  case WK_NN_DROPOUT:
  case WK_NN_DROPOUT2D: return nn_strf("p=%s, inplace=False", nn_pyfloat(s->arg, b));
  default: return nn_strf("%s", "");
  }
}
#define ACT_CLASS(var, name) static const wk_module_class var = {sizeof(wk_module_class), name, act_forward, free, act_repr};
ACT_CLASS(RELU, "ReLU")
ACT_CLASS(LEAKY, "LeakyReLU")
ACT_CLASS(GELU, "GELU")
ACT_CLASS(SILU, "SiLU")
ACT_CLASS(SIGMOID, "Sigmoid")
ACT_CLASS(TANH, "Tanh")
ACT_CLASS(SOFTMAX, "Softmax")
ACT_CLASS(LOG_SOFTMAX, "LogSoftmax")
ACT_CLASS(IDENTITY, "Identity")
ACT_CLASS(DROPOUT, "Dropout")
ACT_CLASS(DROPOUT2D, "Dropout2d")

wk_module *nn_activation(int kind, double arg) {
  const wk_module_class *cls = NULL;
  switch (kind) {
  case WK_NN_RELU: cls = &RELU; break;
  case WK_NN_LEAKY_RELU: cls = &LEAKY; break;
  case WK_NN_GELU:
  case WK_NN_GELU_TANH: cls = &GELU; break;
  case WK_NN_SILU: cls = &SILU; break;
  case WK_NN_SIGMOID: cls = &SIGMOID; break;
  case WK_NN_TANH: cls = &TANH; break;
  case WK_NN_SOFTMAX: cls = &SOFTMAX; break;
  case WK_NN_LOG_SOFTMAX: cls = &LOG_SOFTMAX; break;
  case WK_NN_IDENTITY: cls = &IDENTITY; break;
  case WK_NN_DROPOUT:
  case WK_NN_DROPOUT2D:
    if (!(arg >= 0 && arg <= 1)) {
      char b[32];
      wk_error(WK_ERR_INVALID_ARG, "dropout probability has to be between 0 and 1, but got %s", nn_pyfloat(arg, b));
      return NULL;
    }
    cls = kind == WK_NN_DROPOUT ? &DROPOUT : &DROPOUT2D;
    break;
  default: wk_error(WK_ERR_INVALID_ARG, "nn activation: unknown kind %d", kind); return NULL;
  }
  act_state *s = wk_malloc(sizeof *s);
  if (s) *s = (act_state){kind, arg, false};
  return nn_module_new(cls, s);
}

wk_module *nn_relu_inplace(void) {
  wk_module *m = nn_activation(WK_NN_RELU, 0);
  if (m) ((act_state *)wk_module_state(m))->inplace = true;
  return m;
}

/* ---- Flatten ---- */
typedef struct {
  int64_t start, end;
} flatten_state;
static wk_tensor *flatten_forward(wk_module *self, wk_tensor *const *in, int n) {
  const flatten_state *s = wk_module_state(self);
  if (!nn_check_inputs("Flatten", in, n, 1)) return NULL;
  return wk_flatten(in[0], s->start, s->end);
}
static char *flatten_repr(const wk_module *self) {
  const flatten_state *s = wk_module_state(self);
  return nn_strf("start_dim=%lld, end_dim=%lld", (long long)s->start, (long long)s->end);
}
static const wk_module_class FLATTEN = {sizeof(wk_module_class), "Flatten", flatten_forward, free, flatten_repr};
wk_module *nn_flatten(int64_t start_dim, int64_t end_dim) {
  flatten_state *s = wk_malloc(sizeof *s);
  if (s) *s = (flatten_state){start_dim, end_dim};
  return nn_module_new(&FLATTEN, s);
}

/* ---- Embedding ---- */
typedef struct {
  int64_t num, dim;
  bool has_pad;
  int64_t pad;
  double max_norm, norm_type; /* max_norm 0: None */
} emb_state;

/* PyTorch's embedding_renorm_: under no_grad, each distinct row that idx
 * looks up whose norm exceeds max_norm is scaled in place by
 * max_norm / (norm + 1e-7). Indices out of range are left to the lookup's error. */
static wk_status emb_renorm(wk_tensor *w, wk_tensor *idx, const emb_state *s) {
  wk_scope_begin();
  wk_no_grad_begin();
  wk_status st = WK_OK;
  wk_tensor *ic = wk_contiguous(wk_to_dtype(wk_to_device(idx, wk_cpu()), WK_I64));
  char *seen = wk_calloc((size_t)(s->num ? s->num : 1), 1);
  if (!ic || !seen) st = ic ? wk_error(WK_ERR_NO_MEMORY, "Embedding: out of memory") : wk_last_error();
  const int64_t *iv = ic ? wk_tensor_data(ic) : NULL;
  for (int64_t k = 0, n = ic ? wk_tensor_numel(ic) : 0; !st && k < n; k++) {
    int64_t i = iv[k] < 0 ? iv[k] + s->num : iv[k];
    if (i < 0 || i >= s->num || seen[i]) continue;
    seen[i] = 1;
    wk_tensor *row = wk_select(w, 0, i);
    double nrm = 0;
    wk_tensor *nt = row ? wk_norm(row, s->norm_type, NULL, 0, false) : NULL;
    st = nt ? wk_item(nt, &nrm) : wk_last_error();
    if (!st && nrm > s->max_norm && !wk_mul_scalar_(row, s->max_norm / (nrm + 1e-7))) st = wk_last_error();
  }
  wk_free(seen);
  wk_status e = wk_no_grad_end();
  wk_scope_end();
  return st ? st : e;
}
static wk_tensor *emb_forward(wk_module *self, wk_tensor *const *in, int n) {
  const emb_state *s = wk_module_state(self);
  if (!nn_check_inputs("Embedding", in, n, 1)) return NULL;
  wk_dtype dt = wk_tensor_dtype(in[0]);
  if (dt != WK_I64 && dt != WK_I32) {
    wk_error(WK_ERR_DTYPE, "Embedding: expected indices of dtype int64 or int32, got %s", wk_dtype_name(dt));
    return NULL;
  }
  wk_tensor *w = wk_module_param(self, "weight");
  if (s->max_norm > 0 && emb_renorm(w, in[0], s)) return NULL;
  return wkx_embedding(w, in[0], s->has_pad ? s->pad : -1);
}
static char *emb_repr(const wk_module *self) {
  const emb_state *s = wk_module_state(self);
  char pad[48] = "", mn[64] = "", nt[64] = "", b1[32], b2[32];
  if (s->has_pad) snprintf(pad, sizeof pad, ", padding_idx=%lld", (long long)s->pad);
  if (s->max_norm > 0) snprintf(mn, sizeof mn, ", max_norm=%s", nn_pyfloat(s->max_norm, b1));
  if (s->norm_type != 2) snprintf(nt, sizeof nt, ", norm_type=%s", nn_pyfloat(s->norm_type, b2));
  return nn_strf("%lld, %lld%s%s%s", (long long)s->num, (long long)s->dim, pad, mn, nt);
}
static const wk_module_class EMBEDDING = {sizeof(wk_module_class), "Embedding", emb_forward, free, emb_repr};
wk_module *nn_embedding(int64_t num, int64_t dim, const wk_embedding_opts *o, size_t osize) {
  wk_embedding_opts op;
  nn_opts(&op, sizeof op, o, osize);
  int64_t pad = op.padding_idx;
  if (op.has_padding_idx) {
    if (pad >= num || pad < -num) {
      wk_error(WK_ERR_INVALID_ARG, "Embedding: padding_idx must be within num_embeddings (%lld), got %lld", (long long)num,
               (long long)pad);
      return NULL;
    }
    if (pad < 0) pad += num;
  }
  if (num < 0 || dim < 0) {
    wk_error(WK_ERR_INVALID_ARG, "Embedding: sizes must be non-negative, got %lld and %lld", (long long)num, (long long)dim);
    return NULL;
  }
  double norm_type = op.norm_type == 0 ? 2.0 : op.norm_type;
  if (op.max_norm < 0 || !isfinite(op.max_norm)) {
    wk_error(WK_ERR_INVALID_ARG, "Embedding: max_norm must be positive (or 0 for None), got %g", op.max_norm);
    return NULL;
  }
  emb_state *s = wk_malloc(sizeof *s);
  if (s) *s = (emb_state){num, dim, op.has_padding_idx, pad, op.max_norm, norm_type};
  wk_module *m = nn_module_new(&EMBEDDING, s);
  if (!m) return NULL;
  wk_scope_begin();
  wk_tensor *w = wk_empty(WK_SHAPE(num, dim), (wk_options){0});
  wk_status st = nn_fill_normal(w, 0, 1);
  if (st == WK_OK && op.has_padding_idx) {
    wk_tensor *row = wk_select(w, 0, pad);
    st = row && wk_zero_(row) ? WK_OK : wk_last_error();
  }
  if (st == WK_OK) st = nn_param(m, "weight", w);
  wk_scope_end();
  if (st != WK_OK) {
    wk_module_release(m);
    return NULL;
  }
  return m;
}

/* ---- containers ---- */
typedef struct {
  uint32_t magic;
  int n, cap;
  wk_module **mods; /* borrowed: the core holds them as children */
  char **names;
} cont_state;
static void cont_destroy(void *p) {
  cont_state *s = p;
  for (int i = 0; i < s->n; i++) wk_free(s->names[i]);
  wk_free(s->mods);
  wk_free(s->names);
  wk_free(s);
}
static wk_tensor *seq_forward(wk_module *self, wk_tensor *const *in, int n) {
  const cont_state *s = wk_module_state(self);
  if (!nn_check_inputs(wk_module_class_name(self), in, n, 1)) return NULL;
  wk_scope_begin();
  wk_tensor *x = in[0];
  /* children by name: wk_module_set_child may have replaced one (s->mods[i] is then stale).
     Each intermediate result is released once the next child has run, as PyTorch's refcounts
     free it: held to the scope's end, a no-grad forward (evaluation) would keep every layer's
     activation at once. What autograd saved for backward it holds by its own reference. */
  for (int i = 0; i < s->n && x; i++) {
    wk_tensor *y = wk_module_forward(wk_module_child(self, s->names[i]), x);
    if (x != in[0] && y != x) wk_release(x);
    x = y;
  }
  if (s->n == 0) x = wk_alias(x);
  return nn_ret(x);
}
static wk_tensor *list_forward(wk_module *self, wk_tensor *const *in, int n) {
  (void)in;
  (void)n;
  wk_error(WK_ERR_UNSUPPORTED, "Module [%s] is missing the required \"forward\" function", wk_module_class_name(self));
  return NULL;
}
static const wk_module_class SEQUENTIAL = {sizeof(wk_module_class), "Sequential", seq_forward, cont_destroy, NULL};
static const wk_module_class MODULE_LIST = {sizeof(wk_module_class), "ModuleList", list_forward, cont_destroy, NULL};
static const wk_module_class MODULE_DICT = {sizeof(wk_module_class), "ModuleDict", list_forward, cont_destroy, NULL};

#define CONT_MAGIC 0x6e6e636fu
static cont_state *container_state(const wk_module *m) {
  const char *c = wk_module_class_name(m);
  if (!c || (strcmp(c, "Sequential") && strcmp(c, "ModuleList") && strcmp(c, "ModuleDict"))) return NULL;
  cont_state *s = wk_module_state(m);
  return s && s->magic == CONT_MAGIC ? s : NULL;
}

wk_status nn_append(wk_module *container, const char *name, wk_module *mod) {
  if (!container || !mod) {
    wk_module_release(mod);
    if (wk_last_error() == WK_OK) wk_error(WK_ERR_INVALID_ARG, "append: NULL module");
    return wk_last_error();
  }
  const char *cls = wk_module_class_name(container);
  bool dict = !strcmp(cls, "ModuleDict");
  cont_state *s = container_state(container);
  if (!s) {
    wk_module_release(mod);
    return wk_error(WK_ERR_INVALID_ARG, "append: %s is not a Sequential, ModuleList or ModuleDict", cls);
  }
  if (dict && !name) {
    wk_module_release(mod);
    return wk_error(WK_ERR_INVALID_ARG, "ModuleDict: a module needs a name");
  }
  /* room first: out of memory leaves the container as it was */
  if (s->n == s->cap) {
    int cap = s->cap ? 2 * s->cap : 8;
    wk_module **mods = wk_realloc(s->mods, (size_t)cap * sizeof *s->mods);
    if (mods) s->mods = mods;
    char **names = mods ? wk_realloc(s->names, (size_t)cap * sizeof *s->names) : NULL;
    if (names) s->names = names;
    if (!names) {
      wk_module_release(mod);
      return wk_error(WK_ERR_NO_MEMORY, "append: out of memory growing the %s", cls);
    }
    s->cap = cap;
  }
  char *nm = name ? nn_strf("%s", name) : nn_strf("%d", s->n);
  if (!nm) {
    wk_module_release(mod);
    return wk_error(WK_ERR_NO_MEMORY, "append: out of memory naming a child of the %s", cls);
  }
  wk_status st = wk_module_register_child(container, nm, mod);
  wk_module_release(mod);
  if (st != WK_OK) {
    wk_free(nm);
    return st;
  }
  s->mods[s->n] = mod; /* still alive: the container holds it */
  s->names[s->n++] = nm;
  return WK_OK;
}

static cont_state *new_cont_state(void) {
  cont_state *s = wk_calloc(1, sizeof *s);
  if (s) s->magic = CONT_MAGIC;
  return s;
}
static wk_module *make_container(const wk_module_class *cls, const char *const *names, wk_module *const *mods, int n) {
  bool bad = n < 0 || (n > 0 && !mods);
  for (int i = 0; !bad && i < n; i++) bad = !mods[i];
  wk_module *c = bad ? NULL : nn_module_new(cls, new_cont_state());
  for (int i = 0; i < n && mods; i++) {
    if (!c) {
      wk_module_release(mods[i]);
      continue;
    }
    if (nn_append(c, names ? names[i] : NULL, mods[i]) != WK_OK) {
      wk_module_release(c);
      c = NULL;
    }
  }
  if (!c && wk_last_error() == WK_OK) wk_error(WK_ERR_INVALID_ARG, "%s: a module given to it is NULL", cls->name);
  return c;
}
wk_module *nn_sequential(wk_module *const *mods, int n) { return make_container(&SEQUENTIAL, NULL, mods, n); }
wk_module *nn_module_list(wk_module *const *mods, int n) { return make_container(&MODULE_LIST, NULL, mods, n); }
wk_module *nn_module_dict(const char *const *names, wk_module *const *mods, int n) {
  if (n > 0 && !names) {
    for (int i = 0; i < n && mods; i++) wk_module_release(mods[i]);
    wk_error(WK_ERR_INVALID_ARG, "ModuleDict: names are required");
    return NULL;
  }
  return make_container(&MODULE_DICT, names, mods, n);
}
