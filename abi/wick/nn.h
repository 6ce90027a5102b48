/* Wick ABI: the nn service: layers, losses, initialisation and a model zoo
 * with PyTorch 1.13's semantics (torch.nn / torchvision names). The nn plugin
 * provides the service; the inline wrappers below fetch it once and call it,
 * so user code never links the plugin:
 *
 *   wk_module *net = wk_nn_sequential((wk_module *[]){
 *       wk_nn_conv2d(3, 64, 3, (wk_conv2d_opts){.stride = 2, .padding = 1}),
 *       wk_nn_relu(), wk_nn_flatten(1, -1), wk_nn_linear(64 * 16 * 16, 10, true)}, 4);
 *
 * Every layer is a wk_module (module.h): parameters and buffers carry
 * PyTorch's names ("weight", "bias", "running_mean", "running_var",
 * "num_batches_tracked") and printing matches PyTorch's repr. Constructors
 * return a new module (release with wk_module_release), or NULL with the error
 * recorded; when the plugin is missing the message names the service and the
 * plugin search path. Containers (sequential, module_list, module_dict and
 * their append/insert) TAKE the references of the modules given to them, so
 * nested construction leaks nothing; a NULL among them fails the container
 * (the others are released) and keeps the first error.
 *
 * Options structs: a zero field means PyTorch's default (written next to each
 * field); boolean options whose default is true are spelled negatively
 * (no_bias). Write WK_NN_ZERO for a literal 0.0 where the default is not 0. */
#ifndef WICK_NN_H
#define WICK_NN_H

#include <stddef.h>
#include <wick/wick.h>

#define WK_NN_ZERO (-0.0)

/* ---- options -------------------------------------------------------------------------- */
/* Conv1d / Conv2d / ConvTranspose2d. Square values apply to both spatial dims
 * unless a *_w field overrides the width (0: same as the square value). */
typedef struct wk_conv2d_opts {
  int64_t stride;         /* 0 -> 1 */
  int64_t padding;        /* 0 -> 0 */
  int64_t dilation;       /* 0 -> 1 */
  int64_t groups;         /* 0 -> 1 */
  bool no_bias;           /* false: the layer has a bias (bias=True) */
  bool padding_same;      /* padding="same" (stride must be 1); not for ConvTranspose2d */
  int64_t output_padding; /* ConvTranspose2d only; 0 -> 0 */
  int64_t kernel_w, stride_w, dilation_w; /* 0 -> the square value */
  int64_t padding_w;      /* 0 -> padding; WK_NN_PAD_W_ZERO for a literal 0 */
  /* appended (issue 17): */
  const char *padding_mode; /* NULL -> "zeros"; "reflect", "replicate", "circular" (not ConvTranspose2d) */
} wk_conv2d_opts;
#define WK_NN_PAD_W_ZERO (-1)
typedef wk_conv2d_opts wk_conv1d_opts; /* the *_w fields are ignored */

/* MaxPool2d / AvgPool2d. */
typedef struct wk_pool2d_opts {
  int64_t stride;   /* 0 -> kernel_size */
  int64_t padding;  /* 0 -> 0 */
  int64_t dilation; /* 0 -> 1 (MaxPool2d only) */
  bool ceil_mode;   /* false */
  bool no_count_include_pad; /* AvgPool2d: false -> count_include_pad=True */
} wk_pool2d_opts;

/* BatchNorm1d / BatchNorm2d / LayerNorm / GroupNorm. */
typedef struct wk_norm_opts {
  double eps;                 /* 0 -> 1e-5 */
  double momentum;            /* BatchNorm: 0 -> 0.1 (WK_NN_ZERO for 0) */
  bool cumulative_average;    /* BatchNorm momentum=None: running averages over all batches */
  bool no_affine;             /* false -> affine=True (LayerNorm: elementwise_affine) */
  bool no_track_running_stats; /* BatchNorm: false -> track_running_stats=True */
} wk_norm_opts;

/* Embedding. */
typedef struct wk_embedding_opts {
  bool has_padding_idx; /* false: padding_idx=None */
  int64_t padding_idx;  /* when has_padding_idx (negative counts from the end) */
  /* appended (issue 17): */
  double max_norm;  /* 0 -> None; > 0: rows looked up are renormalised in place to at most this norm */
  double norm_type; /* 0 -> 2.0: the p of max_norm's norm */
} wk_embedding_opts;

/* Losses (modules and functions). */
typedef struct wk_loss_opts {
  const char *reduction;   /* NULL -> "mean"; "sum", "none" (KLDivLoss also "batchmean") */
  wk_tensor *weight;       /* borrowed (modules retain it as buffer "weight"): CE, NLL, BCE, BCEWithLogits */
  wk_tensor *pos_weight;   /* BCEWithLogitsLoss */
  bool has_ignore_index;   /* CE, NLL: false -> ignore_index=-100 */
  int64_t ignore_index;
  double label_smoothing;  /* CE: 0 -> 0 */
  double beta;             /* SmoothL1Loss: 0 -> 1.0 */
  bool log_target;         /* KLDivLoss */
} wk_loss_opts;

enum wk_nn_loss_kind {
  WK_NN_CROSS_ENTROPY = 1, WK_NN_NLL, WK_NN_MSE, WK_NN_L1, WK_NN_SMOOTH_L1, WK_NN_BCE,
  WK_NN_BCE_WITH_LOGITS, WK_NN_KL_DIV
};
enum wk_nn_act_kind {
  WK_NN_RELU = 1, WK_NN_LEAKY_RELU, WK_NN_GELU, WK_NN_GELU_TANH, WK_NN_SILU, WK_NN_SIGMOID,
  WK_NN_TANH, WK_NN_SOFTMAX, WK_NN_LOG_SOFTMAX, WK_NN_IDENTITY, WK_NN_DROPOUT,
  WK_NN_DROPOUT2D /* appended (issue 17) */
};

/* Initialisers (torch.nn.init). mode: NULL -> "fan_in" (or "fan_out");
 * nonlinearity: NULL -> "leaky_relu" (kaiming), as PyTorch's defaults. */
typedef struct wk_init_opts {
  double a;           /* kaiming: negative slope (0 -> 0) */
  double gain;        /* xavier / orthogonal: 0 -> 1.0 */
  double mean, std;   /* normal_: std 0 -> 1.0 */
  double lo, hi;      /* uniform_: hi 0 -> 1.0 when lo is 0 */
  double value;       /* constant_ */
  const char *mode;
  const char *nonlinearity;
} wk_init_opts;
enum wk_nn_init_kind {
  WK_NN_INIT_KAIMING_UNIFORM = 1, WK_NN_INIT_KAIMING_NORMAL, WK_NN_INIT_XAVIER_UNIFORM,
  WK_NN_INIT_XAVIER_NORMAL, WK_NN_INIT_ZEROS, WK_NN_INIT_ONES, WK_NN_INIT_NORMAL, WK_NN_INIT_UNIFORM,
  WK_NN_INIT_CONSTANT, WK_NN_INIT_ORTHOGONAL
};

/* ResNet (torchvision). */
typedef struct wk_resnet_opts {
  int64_t num_classes; /* 0 -> 1000 */
  bool cifar_stem;     /* 3x3 stride-1 conv1 and no maxpool (for 32x32 inputs) */
} wk_resnet_opts;

/* MultiheadAttention (torch.nn.MultiheadAttention). Parameters, with
 * PyTorch's state-dict keys: in_proj_weight [3E, E] when kdim = vdim = E,
 * else q_proj_weight [E, E], k_proj_weight [E, kdim], v_proj_weight
 * [E, vdim]; in_proj_bias [3E]; bias_k, bias_v [1, 1, E] with add_bias_kv;
 * out_proj.weight [E, E], out_proj.bias [E]. */
typedef struct wk_mha_opts {
  double dropout;   /* on the attention weights in training: 0 -> 0.0 */
  bool no_bias;     /* false -> bias=True */
  bool batch_first; /* false -> inputs (L, N, E); true -> (N, L, E) */
  /* appended (issue 17): */
  int64_t kdim, vdim; /* features of key / value: 0 -> embed_dim */
  bool add_bias_kv;   /* learnt bias_k / bias_v appended to the projected keys / values (one more key) */
  bool add_zero_attn; /* a zero key and value appended after the heads split (one more key) */
} wk_mha_opts;

/* TransformerEncoderLayer / TransformerDecoderLayer (PyTorch 1.13). */
typedef struct wk_transformer_opts {
  int64_t dim_feedforward; /* 0 -> 2048 */
  double dropout;          /* 0 -> 0.1 (WK_NN_ZERO for 0) */
  const char *activation;  /* NULL -> "relu"; or "gelu" */
  double layer_norm_eps;   /* 0 -> 1e-5 */
  bool batch_first;        /* false */
  bool norm_first;         /* false: post-norm (x = norm(x + block(x))); true: pre-norm */
} wk_transformer_opts;

/* The optional masks of an attention call (all borrowed; NULL: None). Boolean
 * masks use PyTorch's nn convention: True marks a position that may NOT be
 * attended to; float masks are added to the attention scores. */
typedef struct wk_attn_masks {
  wk_tensor *attn_mask;        /* (L, S) or (N * num_heads, L, S); src_mask / tgt_mask of the layers */
  wk_tensor *key_padding_mask; /* (N, S): src_key_padding_mask / tgt_key_padding_mask */
  wk_tensor *memory_mask;      /* decoder layer: (L, S) mask over the memory */
  wk_tensor *memory_key_padding_mask; /* decoder layer: (N, S) */
  bool no_average_attn_weights; /* MHA weights: false -> averaged over heads (average_attn_weights=True) */
  /* appended (issue 17): nn.Transformer's encoder masks (attn_mask and key_padding_mask are then tgt's) */
  wk_tensor *src_mask;             /* (S, S) or (N * num_heads, S, S) */
  wk_tensor *src_key_padding_mask; /* (N, S) */
} wk_attn_masks;

/* LSTM / GRU (torch.nn.LSTM / GRU). Parameters per layer k and direction:
 * weight_ih_l{k}[_reverse] [G*H, in], weight_hh_l{k}[_reverse] [G*H, Hr],
 * bias_ih_l{k}[_reverse], bias_hh_l{k}[_reverse] [G*H], and with proj_size
 * weight_hr_l{k}[_reverse] [proj_size, H], with PyTorch's gate order (LSTM
 * G = 4: i, f, g, o; GRU G = 3: r, z, n). Hr is proj_size when set, else H:
 * the size of h (outputs, h_0, h_n); c keeps H. */
typedef struct wk_rnn_opts {
  int64_t num_layers; /* 0 -> 1 */
  bool no_bias;       /* false -> bias=True */
  bool batch_first;   /* false -> (T, N, in); true -> (N, T, in) */
  double dropout;     /* between layers, in training: 0 -> 0.0 */
  bool bidirectional; /* false */
  /* appended (issue 17): */
  int64_t proj_size;  /* LSTM only: 0 -> none; else h = (o * tanh(c)) W_hr^T, 0 < proj_size < hidden_size */
} wk_rnn_opts;
enum wk_nn_rnn_kind { WK_NN_LSTM = 1, WK_NN_GRU = 2 };

/* ---- the service interface (append-only) ---------------------------------------------- */
#define WK_NN_SERVICE "nn"
#define WK_NN_API_VERSION 1u

typedef struct wk_nn_api {
  size_t struct_size;
  /* layers */
  wk_module *(*linear)(int64_t in, int64_t out, bool bias);
  wk_module *(*activation)(int kind, double arg); /* slope, dim or p */
  wk_module *(*flatten)(int64_t start_dim, int64_t end_dim);
  wk_module *(*conv2d)(int64_t in, int64_t out, int64_t k, const wk_conv2d_opts *o, size_t osize);
  wk_module *(*conv1d)(int64_t in, int64_t out, int64_t k, const wk_conv2d_opts *o, size_t osize);
  wk_module *(*conv_transpose2d)(int64_t in, int64_t out, int64_t k, const wk_conv2d_opts *o, size_t osize);
  wk_module *(*max_pool2d)(int64_t k, const wk_pool2d_opts *o, size_t osize);
  wk_module *(*avg_pool2d)(int64_t k, const wk_pool2d_opts *o, size_t osize);
  wk_module *(*adaptive_avg_pool2d)(int64_t oh, int64_t ow);
  wk_module *(*batch_norm)(int dims, int64_t num_features, const wk_norm_opts *o, size_t osize);
  wk_module *(*layer_norm)(const int64_t *shape, int nd, const wk_norm_opts *o, size_t osize);
  wk_module *(*group_norm)(int64_t groups, int64_t channels, const wk_norm_opts *o, size_t osize);
  wk_module *(*embedding)(int64_t num, int64_t dim, const wk_embedding_opts *o, size_t osize);
  /* containers (take the references of mods) */
  wk_module *(*sequential)(wk_module *const *mods, int n);
  wk_module *(*module_list)(wk_module *const *mods, int n);
  wk_module *(*module_dict)(const char *const *names, wk_module *const *mods, int n);
  wk_status (*append)(wk_module *container, const char *name, wk_module *mod);
  /* losses */
  wk_module *(*loss_module)(int kind, const wk_loss_opts *o, size_t osize);
  wk_tensor *(*loss)(int kind, wk_tensor *input, wk_tensor *target, const wk_loss_opts *o, size_t osize);
  /* initialisation (in place, under no_grad) */
  wk_status (*init)(int kind, wk_tensor *t, const wk_init_opts *o, size_t osize);
  double (*calculate_gain)(const char *nonlinearity, double param);
  /* model zoo */
  wk_module *(*mlp)(int64_t in, const int64_t *hidden, int nh, int64_t out);
  wk_module *(*lenet)(void);
  wk_module *(*resnet)(int depth, const wk_resnet_opts *o, size_t osize);
  /* ---- appended (issue 17): attention, Transformer and recurrent layers ---- */
  wk_module *(*multihead_attention)(int64_t embed_dim, int64_t num_heads, const wk_mha_opts *o, size_t osize);
  wk_tensor *(*mha_forward)(wk_module *mha, wk_tensor *query, wk_tensor *key, wk_tensor *value,
                            const wk_attn_masks *m, size_t msize, wk_tensor **attn_weights);
  wk_module *(*transformer_layer)(bool decoder, int64_t d_model, int64_t nhead, const wk_transformer_opts *o,
                                  size_t osize);
  wk_module *(*transformer_encoder)(wk_module *encoder_layer, int64_t num_layers, wk_module *norm);
  wk_tensor *(*transformer_forward)(wk_module *m, wk_tensor *x, wk_tensor *memory, const wk_attn_masks *masks,
                                    size_t msize);
  wk_module *(*rnn)(int kind, int64_t input_size, int64_t hidden_size, const wk_rnn_opts *o, size_t osize);
  wk_tensor *(*rnn_forward)(wk_module *rnn, wk_tensor *input, wk_tensor *h0, wk_tensor *c0, wk_tensor *lengths,
                            wk_tensor **h_n, wk_tensor **c_n);
  wk_module *(*positional_encoding)(int64_t d_model, int64_t max_len, double dropout, bool batch_first);
  wk_module *(*transformer_decoder)(wk_module *decoder_layer, int64_t num_layers, wk_module *norm);
  wk_module *(*transformer)(int64_t d_model, int64_t nhead, int64_t num_encoder_layers, int64_t num_decoder_layers,
                            const wk_transformer_opts *o, size_t osize);
  wk_tensor *(*transformer_model_forward)(wk_module *m, wk_tensor *src, wk_tensor *tgt, const wk_attn_masks *masks,
                                          size_t msize);
} wk_nn_api;

/* ---- wrappers ------------------------------------------------------------------------------ */
static inline const wk_nn_api *wk_nn_api_get(void) {
  static const wk_nn_api *api_cache; /* filled on first use, maybe by several threads at once */
  const wk_nn_api *api = __atomic_load_n(&api_cache, __ATOMIC_ACQUIRE);
  if (!api) __atomic_store_n(&api_cache, api = (const wk_nn_api *)wk_service_get(WK_NN_SERVICE, WK_NN_API_VERSION), __ATOMIC_RELEASE);
  return api;
}
#define WK__NN_HAS(api, field) \
  ((api) && (api)->struct_size >= offsetof(wk_nn_api, field) + sizeof((api)->field) && (api)->field)
static inline void wk__nn_missing(const wk_nn_api *a, const char *what) {
  if (a) wk_error(WK_ERR_UNSUPPORTED, "%s: the loaded nn plugin is too old to provide it", what);
}
#define WK__NN_CALL_PTR(field, ...)                      \
  do {                                                   \
    const wk_nn_api *a_ = wk_nn_api_get();               \
    if (!WK__NN_HAS(a_, field)) {                        \
      wk__nn_missing(a_, #field);                        \
      return NULL;                                       \
    }                                                    \
    return a_->field(__VA_ARGS__);                       \
  } while (0)
#define WK__NN_CALL_STATUS(field, ...)                   \
  do {                                                   \
    const wk_nn_api *a_ = wk_nn_api_get();               \
    if (!WK__NN_HAS(a_, field)) {                        \
      wk__nn_missing(a_, #field);                        \
      return wk_last_error() ? wk_last_error() : WK_ERR_NOT_FOUND; \
    }                                                    \
    return a_->field(__VA_ARGS__);                       \
  } while (0)

/* ---- layers ---- */
/* Linear(in, out, bias): y = x W^T + b; weight [out, in]. */
static inline wk_module *wk_nn_linear(int64_t in, int64_t out, bool bias) { WK__NN_CALL_PTR(linear, in, out, bias); }
static inline wk_module *wk_nn_relu(void) { WK__NN_CALL_PTR(activation, WK_NN_RELU, 0); }
static inline wk_module *wk_nn_leaky_relu(double negative_slope) { WK__NN_CALL_PTR(activation, WK_NN_LEAKY_RELU, negative_slope); }
/* GELU(approximate='none'); wk_nn_gelu_tanh: approximate='tanh'. */
static inline wk_module *wk_nn_gelu(void) { WK__NN_CALL_PTR(activation, WK_NN_GELU, 0); }
static inline wk_module *wk_nn_gelu_tanh(void) { WK__NN_CALL_PTR(activation, WK_NN_GELU_TANH, 0); }
static inline wk_module *wk_nn_silu(void) { WK__NN_CALL_PTR(activation, WK_NN_SILU, 0); }
static inline wk_module *wk_nn_sigmoid(void) { WK__NN_CALL_PTR(activation, WK_NN_SIGMOID, 0); }
static inline wk_module *wk_nn_tanh(void) { WK__NN_CALL_PTR(activation, WK_NN_TANH, 0); }
static inline wk_module *wk_nn_softmax(int64_t dim) { WK__NN_CALL_PTR(activation, WK_NN_SOFTMAX, (double)dim); }
static inline wk_module *wk_nn_log_softmax(int64_t dim) { WK__NN_CALL_PTR(activation, WK_NN_LOG_SOFTMAX, (double)dim); }
static inline wk_module *wk_nn_identity(void) { WK__NN_CALL_PTR(activation, WK_NN_IDENTITY, 0); }
/* Dropout(p): zeroes with probability p and scales by 1/(1-p) in training; identity in eval. */
static inline wk_module *wk_nn_dropout(double p) { WK__NN_CALL_PTR(activation, WK_NN_DROPOUT, p); }
/* Dropout2d(p): zeroes whole channels of (N, C, H, W) or unbatched (C, H, W)
 * input with probability p, scaling the others by 1/(1-p), in training. */
static inline wk_module *wk_nn_dropout2d(double p) { WK__NN_CALL_PTR(activation, WK_NN_DROPOUT2D, p); }
/* Flatten(start_dim, end_dim): PyTorch's defaults are (1, -1). */
static inline wk_module *wk_nn_flatten(int64_t start_dim, int64_t end_dim) { WK__NN_CALL_PTR(flatten, start_dim, end_dim); }
static inline wk_module *wk_nn_conv2d(int64_t in, int64_t out, int64_t kernel, wk_conv2d_opts o) {
  WK__NN_CALL_PTR(conv2d, in, out, kernel, &o, sizeof o);
}
static inline wk_module *wk_nn_conv1d(int64_t in, int64_t out, int64_t kernel, wk_conv1d_opts o) {
  WK__NN_CALL_PTR(conv1d, in, out, kernel, &o, sizeof o);
}
static inline wk_module *wk_nn_conv_transpose2d(int64_t in, int64_t out, int64_t kernel, wk_conv2d_opts o) {
  WK__NN_CALL_PTR(conv_transpose2d, in, out, kernel, &o, sizeof o);
}
static inline wk_module *wk_nn_max_pool2d(int64_t kernel, wk_pool2d_opts o) { WK__NN_CALL_PTR(max_pool2d, kernel, &o, sizeof o); }
static inline wk_module *wk_nn_avg_pool2d(int64_t kernel, wk_pool2d_opts o) { WK__NN_CALL_PTR(avg_pool2d, kernel, &o, sizeof o); }
/* AdaptiveAvgPool2d((oh, ow)); ow == 0 means the int form AdaptiveAvgPool2d(oh). */
static inline wk_module *wk_nn_adaptive_avg_pool2d(int64_t oh, int64_t ow) { WK__NN_CALL_PTR(adaptive_avg_pool2d, oh, ow); }
static inline wk_module *wk_nn_batch_norm1d(int64_t num_features, wk_norm_opts o) { WK__NN_CALL_PTR(batch_norm, 1, num_features, &o, sizeof o); }
static inline wk_module *wk_nn_batch_norm2d(int64_t num_features, wk_norm_opts o) { WK__NN_CALL_PTR(batch_norm, 2, num_features, &o, sizeof o); }
static inline wk_module *wk_nn_layer_norm(const int64_t *shape, int nd, wk_norm_opts o) { WK__NN_CALL_PTR(layer_norm, shape, nd, &o, sizeof o); }
static inline wk_module *wk_nn_group_norm(int64_t groups, int64_t channels, wk_norm_opts o) {
  WK__NN_CALL_PTR(group_norm, groups, channels, &o, sizeof o);
}
static inline wk_module *wk_nn_embedding(int64_t num, int64_t dim, wk_embedding_opts o) { WK__NN_CALL_PTR(embedding, num, dim, &o, sizeof o); }

/* ---- containers (take the references of mods) ---- */
static inline wk_module *wk_nn_sequential(wk_module *const *mods, int n) { WK__NN_CALL_PTR(sequential, mods, n); }
static inline wk_module *wk_nn_module_list(wk_module *const *mods, int n) { WK__NN_CALL_PTR(module_list, mods, n); }
static inline wk_module *wk_nn_module_dict(const char *const *names, wk_module *const *mods, int n) {
  WK__NN_CALL_PTR(module_dict, names, mods, n);
}
/* Appends mod (reference taken) to a Sequential/ModuleList (name NULL: its
 * index) or inserts it in a ModuleDict under name. */
static inline wk_status wk_nn_append(wk_module *container, const char *name, wk_module *mod) {
  WK__NN_CALL_STATUS(append, container, name, mod);
}

/* ---- losses: modules (forward with wk_nn_loss) and functions ---- */
static inline wk_module *wk_nn_loss_module(int kind, wk_loss_opts o) { WK__NN_CALL_PTR(loss_module, kind, &o, sizeof o); }
static inline wk_tensor *wk_nn_loss_fn(int kind, wk_tensor *input, wk_tensor *target, wk_loss_opts o) {
  WK__NN_CALL_PTR(loss, kind, input, target, &o, sizeof o);
}
/* loss_module(input, target): a new reference. */
static inline wk_tensor *wk_nn_loss(wk_module *loss, wk_tensor *input, wk_tensor *target) {
  wk_tensor *in[2] = {input, target};
  return wk_module_forward_n(loss, in, 2);
}
#define WK__NN_LOSS(name, kind)                                                              \
  static inline wk_module *wk_nn_##name##_loss(wk_loss_opts o) { return wk_nn_loss_module(kind, o); } \
  static inline wk_tensor *wk_nn_##name(wk_tensor *input, wk_tensor *target, wk_loss_opts o) {     \
    return wk_nn_loss_fn(kind, input, target, o);                                                 \
  }
WK__NN_LOSS(cross_entropy, WK_NN_CROSS_ENTROPY)
WK__NN_LOSS(nll, WK_NN_NLL)
WK__NN_LOSS(mse, WK_NN_MSE)
WK__NN_LOSS(l1, WK_NN_L1)
WK__NN_LOSS(smooth_l1, WK_NN_SMOOTH_L1)
WK__NN_LOSS(bce, WK_NN_BCE)
WK__NN_LOSS(bce_with_logits, WK_NN_BCE_WITH_LOGITS)
WK__NN_LOSS(kl_div, WK_NN_KL_DIV)

/* ---- initialisation (torch.nn.init; in place under no_grad; WK_OK or an error) ---- */
static inline wk_status wk_nn_init(int kind, wk_tensor *t, wk_init_opts o) { WK__NN_CALL_STATUS(init, kind, t, &o, sizeof o); }
static inline wk_status wk_nn_init_kaiming_uniform_(wk_tensor *t, double a, const char *mode, const char *nonlinearity) {
  return wk_nn_init(WK_NN_INIT_KAIMING_UNIFORM, t, (wk_init_opts){.a = a, .mode = mode, .nonlinearity = nonlinearity});
}
static inline wk_status wk_nn_init_kaiming_normal_(wk_tensor *t, double a, const char *mode, const char *nonlinearity) {
  return wk_nn_init(WK_NN_INIT_KAIMING_NORMAL, t, (wk_init_opts){.a = a, .mode = mode, .nonlinearity = nonlinearity});
}
static inline wk_status wk_nn_init_xavier_uniform_(wk_tensor *t, double gain) {
  return wk_nn_init(WK_NN_INIT_XAVIER_UNIFORM, t, (wk_init_opts){.gain = gain});
}
static inline wk_status wk_nn_init_xavier_normal_(wk_tensor *t, double gain) {
  return wk_nn_init(WK_NN_INIT_XAVIER_NORMAL, t, (wk_init_opts){.gain = gain});
}
static inline wk_status wk_nn_init_zeros_(wk_tensor *t) { return wk_nn_init(WK_NN_INIT_ZEROS, t, (wk_init_opts){0}); }
static inline wk_status wk_nn_init_ones_(wk_tensor *t) { return wk_nn_init(WK_NN_INIT_ONES, t, (wk_init_opts){0}); }
static inline wk_status wk_nn_init_constant_(wk_tensor *t, double v) { return wk_nn_init(WK_NN_INIT_CONSTANT, t, (wk_init_opts){.value = v}); }
static inline wk_status wk_nn_init_normal_(wk_tensor *t, double mean, double std) {
  return wk_nn_init(WK_NN_INIT_NORMAL, t, (wk_init_opts){.mean = mean, .std = std});
}
static inline wk_status wk_nn_init_uniform_(wk_tensor *t, double lo, double hi) {
  return wk_nn_init(WK_NN_INIT_UNIFORM, t, (wk_init_opts){.lo = lo, .hi = hi});
}
static inline wk_status wk_nn_init_orthogonal_(wk_tensor *t, double gain) {
  return wk_nn_init(WK_NN_INIT_ORTHOGONAL, t, (wk_init_opts){.gain = gain});
}
/* torch.nn.init.calculate_gain; param NAN means PyTorch's default (leaky_relu: 0.01).
 * Returns NAN (with an error) for an unknown name. */
static inline double wk_nn_calculate_gain(const char *nonlinearity, double param) {
  const wk_nn_api *a = wk_nn_api_get();
  if (!WK__NN_HAS(a, calculate_gain)) {
    wk__nn_missing(a, "calculate_gain");
    return 0.0 / 0.0;
  }
  return a->calculate_gain(nonlinearity, param);
}

/* ---- attention, Transformer and recurrent layers ---- */
/* F.scaled_dot_product_attention (PyTorch 2's math): softmax(q k^T * scale +
 * mask) v over the last two dims of query [..., L, E], key [..., S, E] and
 * value [..., S, Ev]. attn_mask (NULL: none) is bool (True: takes part, the
 * opposite of nn.MultiheadAttention's convention) or float (added) and
 * broadcasts to [..., L, S]; is_causal masks key j > query i; dropout_p drops
 * attention weights (training); scale 0 means 1/sqrt(E). One op
 * (scaled_dot_product_attention) with a fused cpu kernel and a backward that
 * recomputes the weights: returns a new reference. */
static inline wk_tensor *wk_nn_scaled_dot_product_attention(wk_tensor *query, wk_tensor *key, wk_tensor *value,
                                                            wk_tensor *attn_mask, double dropout_p, bool is_causal,
                                                            double scale) {
  return wkx_scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal,
                                          scale != 0 ? &scale : (const double *)0, (wk_tensor **)0, (wk_tensor **)0);
}
/* MultiheadAttention(embed_dim, num_heads). Its module forward takes
 * (query[, key, value[, key_padding_mask[, attn_mask]]]) (key and value
 * default to query) and returns the attention output; wk_nn_mha_forward also
 * gives the weights. */
static inline wk_module *wk_nn_multihead_attention(int64_t embed_dim, int64_t num_heads, wk_mha_opts o) {
  WK__NN_CALL_PTR(multihead_attention, embed_dim, num_heads, &o, sizeof o);
}
/* MHA forward with optional masks (m may be NULL). attn_weights (NULL: not
 * needed, need_weights=False) receives a new reference to the weights after
 * dropout, averaged over heads (N, L, S) unless no_average_attn_weights
 * (N, num_heads, L, S). Returns the output, a new reference. */
static inline wk_tensor *wk_nn_mha_forward(wk_module *mha, wk_tensor *query, wk_tensor *key, wk_tensor *value,
                                           const wk_attn_masks *m, wk_tensor **attn_weights) {
  WK__NN_CALL_PTR(mha_forward, mha, query, key, value, m, sizeof(wk_attn_masks), attn_weights);
}
/* TransformerEncoderLayer(d_model, nhead): module forward (src[, src_mask[, src_key_padding_mask]]). */
static inline wk_module *wk_nn_transformer_encoder_layer(int64_t d_model, int64_t nhead, wk_transformer_opts o) {
  WK__NN_CALL_PTR(transformer_layer, false, d_model, nhead, &o, sizeof o);
}
/* TransformerDecoderLayer(d_model, nhead): module forward (tgt, memory[, tgt_mask[, memory_mask[,
 * tgt_key_padding_mask[, memory_key_padding_mask]]]]). */
static inline wk_module *wk_nn_transformer_decoder_layer(int64_t d_model, int64_t nhead, wk_transformer_opts o) {
  WK__NN_CALL_PTR(transformer_layer, true, d_model, nhead, &o, sizeof o);
}
/* TransformerEncoder(encoder_layer, num_layers, norm): num_layers copies of
 * encoder_layer (borrowed; each starts with its weights, as PyTorch's deepcopy)
 * in a ModuleList "layers", then norm (reference taken; NULL: none). Module
 * forward (src[, mask[, src_key_padding_mask]]). */
static inline wk_module *wk_nn_transformer_encoder(wk_module *encoder_layer, int64_t num_layers, wk_module *norm) {
  WK__NN_CALL_PTR(transformer_encoder, encoder_layer, num_layers, norm);
}
/* TransformerDecoder(decoder_layer, num_layers, norm): the same for decoder
 * layers. Module forward (tgt, memory[, tgt_mask[, memory_mask[,
 * tgt_key_padding_mask[, memory_key_padding_mask]]]]). */
static inline wk_module *wk_nn_transformer_decoder(wk_module *decoder_layer, int64_t num_layers, wk_module *norm) {
  WK__NN_CALL_PTR(transformer_decoder, decoder_layer, num_layers, norm);
}
/* Forward of an encoder or decoder layer or stack (decoders: memory
 * required) with optional masks (NULL: none). Returns a new reference. */
static inline wk_tensor *wk_nn_transformer_forward(wk_module *m, wk_tensor *x, wk_tensor *memory,
                                                   const wk_attn_masks *masks) {
  WK__NN_CALL_PTR(transformer_forward, m, x, memory, masks, sizeof(wk_attn_masks));
}
/* LSTM(input_size, hidden_size) / GRU: module forward (input[, h_0[, c_0]])
 * returns the output (T, N, D * H) (batch_first: (N, T, D * H)). */
static inline wk_module *wk_nn_lstm(int64_t input_size, int64_t hidden_size, wk_rnn_opts o) {
  WK__NN_CALL_PTR(rnn, WK_NN_LSTM, input_size, hidden_size, &o, sizeof o);
}
static inline wk_module *wk_nn_gru(int64_t input_size, int64_t hidden_size, wk_rnn_opts o) {
  WK__NN_CALL_PTR(rnn, WK_NN_GRU, input_size, hidden_size, &o, sizeof o);
}
/* Recurrent forward with the optional initial states h0 / c0 (LSTM only)
 * ((num_layers * D, N, H); NULL: zeros) and lengths (int64 (N,) on the cpu,
 * NULL: all T): pack_padded_sequence's semantics, so outputs past a
 * sequence's length are zero and h_n / c_n hold the state at its last valid
 * step (the reverse direction starts there). h_n and c_n (NULL: not wanted)
 * receive new references; returns the output, a new reference. */
static inline wk_tensor *wk_nn_rnn_forward(wk_module *rnn, wk_tensor *input, wk_tensor *h0, wk_tensor *c0,
                                           wk_tensor *lengths, wk_tensor **h_n, wk_tensor **c_n) {
  WK__NN_CALL_PTR(rnn_forward, rnn, input, h0, c0, lengths, h_n, c_n);
}

/* nn.Transformer(d_model, nhead, num_encoder_layers, num_decoder_layers, ...)
 * (PyTorch 1.13; its defaults are 512, 8, 6, 6): children "encoder" (a
 * TransformerEncoder with a final LayerNorm "norm") and "decoder" (a
 * TransformerDecoder with one), every parameter of two or more dimensions
 * xavier_uniform_ (PyTorch's _reset_parameters). Module forward (src, tgt[,
 * src_mask[, tgt_mask[, memory_mask[, src_key_padding_mask[,
 * tgt_key_padding_mask[, memory_key_padding_mask]]]]]]): the decoder's output,
 * a new reference. */
static inline wk_module *wk_nn_transformer(int64_t d_model, int64_t nhead, int64_t num_encoder_layers,
                                           int64_t num_decoder_layers, wk_transformer_opts o) {
  WK__NN_CALL_PTR(transformer, d_model, nhead, num_encoder_layers, num_decoder_layers, &o, sizeof o);
}
/* Transformer forward with optional masks (NULL: none): src_mask and
 * src_key_padding_mask for the encoder, attn_mask (tgt_mask),
 * key_padding_mask (tgt_key_padding_mask), memory_mask and
 * memory_key_padding_mask for the decoder. Returns a new reference. */
static inline wk_tensor *wk_nn_transformer_model_forward(wk_module *m, wk_tensor *src, wk_tensor *tgt,
                                                         const wk_attn_masks *masks) {
  WK__NN_CALL_PTR(transformer_model_forward, m, src, tgt, masks, sizeof(wk_attn_masks));
}

/* PositionalEncoding(d_model, dropout, max_len) of PyTorch's Transformer
 * tutorial: the sinusoidal table pe[pos, 2i] = sin(pos / 10000^(2i / d_model)),
 * pe[pos, 2i + 1] = cos(...) as buffer "pe" (max_len, 1, d_model), added to
 * x (T, N, d_model) (batch_first: (N, T, d_model)), then Dropout(dropout)
 * (child "dropout"). dropout 0 means 0.1; WK_NN_ZERO for none. */
static inline wk_module *wk_nn_positional_encoding(int64_t d_model, int64_t max_len, double dropout, bool batch_first) {
  WK__NN_CALL_PTR(positional_encoding, d_model, max_len, dropout, batch_first);
}

/* ---- model zoo ---- */
/* Linear-ReLU stack: in -> hidden[0] -> ... -> out (a Sequential). */
static inline wk_module *wk_nn_mlp(int64_t in, const int64_t *hidden, int nh, int64_t out) { WK__NN_CALL_PTR(mlp, in, hidden, nh, out); }
/* conv32-pool-conv64-pool-fc128-fc10 for 1x28x28 inputs. */
static inline wk_module *wk_nn_lenet(void) { WK__NN_CALL_PTR(lenet); }
/* torchvision resnet18/34 (BasicBlock) and resnet50 (Bottleneck). */
static inline wk_module *wk_nn_resnet(int depth, wk_resnet_opts o) { WK__NN_CALL_PTR(resnet, depth, &o, sizeof o); }
static inline wk_module *wk_nn_resnet18(wk_resnet_opts o) { return wk_nn_resnet(18, o); }
static inline wk_module *wk_nn_resnet34(wk_resnet_opts o) { return wk_nn_resnet(34, o); }
static inline wk_module *wk_nn_resnet50(wk_resnet_opts o) { return wk_nn_resnet(50, o); }

#endif
