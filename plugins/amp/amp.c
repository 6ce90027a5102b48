/* amp plugin: autocast (abi/wick/amp.h). A dispatch layer above autograd
 * casts the tensor arguments of listed ops before passing the call on, so the
 * casts are recorded by autograd like any op and gradients flow back to the
 * parameters in their own dtype. GradScaler lives in scaler.c.
 *
 * Regions are per thread and per device type. The layer is enabled for the
 * whole process when the first region opens (and stays so): a thread without
 * a region pays one thread-local check per op. Each op's policy is looked up
 * by name once per list set (cpu's, cuda's) and kept in a table keyed by the
 * op handle. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaler.h" /* first: <wick/sdk.h> routes the wk_* calls of the headers below */

#define AMP_MAX_TYPES 64 /* the core's limit on device types */
#define AMP_MAX_DEPTH 32
#define AMP_SLOTS 2048   /* op -> policy cache, power of two */

/* POL_FP32_OPT: PyTorch's fp32_set_opt_dtype (softmax, sum, prod, cumsum):
 * float32 unless the call gives its own dtype. POL_BANNED: refused. */
typedef enum { POL_UNKNOWN = 0, POL_NONE, POL_LOWER, POL_FP32, POL_PROMOTE, POL_FP32_OPT, POL_BANNED } amp_policy;
enum { LISTS_CPU = 0, LISTS_CUDA = 1, NLISTS };

/* PyTorch 1.13.1's CPU lists, as far as Wick has the ops (names without the
 * overload suffix). tests/check_amp.c holds PyTorch's result dtypes. */
static const char *const LOWER_OPS[] = {"conv1d", "conv2d", "conv3d", "mm", "addmm", "bmm", "baddbmm", "addbmm",
                                        "matmul", "linear", "prelu"};
static const char *const FP32_OPS[] = {"cross_entropy", "nll_loss", "mse_loss", "binary_cross_entropy",
                                       "binary_cross_entropy_with_logits", "l1_loss", "smooth_l1_loss",
                                       "huber_loss", "kl_div", "prod", "avg_pool3d", "max_pool3d",
                                       "adaptive_avg_pool3d", "cdist", "quantile", "nanquantile"};
static const char *const PROMOTE_OPS[] = {"cat", "stack", "index_copy"};

/* PyTorch 1.13.1's CUDA lists (aten/src/ATen/autocast_mode.cpp, KERNEL_CUDA;
 * the same for float16 and bfloat16), by name; ops Wick lacks match nothing
 * until they exist. cross_entropy is one op in Wick: PyTorch's composite runs
 * its log_softmax and nll_loss in float32. */
static const char *const CUDA_LOWER_OPS[] = {
    "_convolution", "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d",
    "conv_transpose3d", "convolution", "cudnn_convolution", "cudnn_convolution_transpose", "prelu", "addmm", "addmv",
    "addr", "matmul", "einsum", "mm", "mv", "linear", "addbmm", "baddbmm", "bmm", "chain_matmul", "linalg_multi_dot",
    "_thnn_fused_lstm_cell", "_thnn_fused_gru_cell", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"};
static const char *const CUDA_FP32_OPS[] = {
    "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal", "rsqrt", "sinh",
    "tan", "pow", "softplus", "layer_norm", "native_layer_norm", "group_norm", "frobenius_norm", "nuclear_norm",
    "cosine_similarity", "poisson_nll_loss", "cosine_embedding_loss", "nll_loss", "nll_loss2d",
    "hinge_embedding_loss", "kl_div", "l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss", "margin_ranking_loss",
    "multilabel_margin_loss", "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss",
    "binary_cross_entropy_with_logits", "dist", "pdist", "cdist", "renorm", "norm", "cross_entropy"};
static const char *const CUDA_FP32_OPT_OPS[] = {"prod", "softmax", "log_softmax", "cumprod", "cumsum",
                                                "linalg_vector_norm", "linalg_matrix_norm", "sum"};
static const char *const CUDA_PROMOTE_OPS[] = {"addcdiv", "addcmul", "atan2",   "bilinear",    "cat",      "cross",
                                               "dot",     "grid_sampler", "index_put", "scatter_add", "stack", "tensordot"};
static const char *const CUDA_BANNED_OPS[] = {"binary_cross_entropy"};

typedef struct {
  wk_op *op;
  int policy[NLISTS];
} policy_slot;
static policy_slot g_policy[AMP_SLOTS];

typedef struct {
  int depth;
  wk_dtype dtype[AMP_MAX_DEPTH];
} region_stack;
static __thread region_stack t_regions[AMP_MAX_TYPES];
static __thread int t_open; /* regions open on this thread, all device types */

static wk_layer *g_layer;

static bool in_list(const char *name, const char *const *list, size_t n) {
  size_t len = strcspn(name, ".");
  for (size_t i = 0; i < n; i++)
    if (strlen(list[i]) == len && strncmp(name, list[i], len) == 0) return true;
  return false;
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The policy of an op name (overload suffix ignored) under a list set. */
static amp_policy decide_name(const char *name, int lists) {
  if (lists == LISTS_CUDA) {
    if (in_list(name, CUDA_LOWER_OPS, COUNT(CUDA_LOWER_OPS))) return POL_LOWER;
    if (in_list(name, CUDA_FP32_OPS, COUNT(CUDA_FP32_OPS))) return POL_FP32;
    if (in_list(name, CUDA_FP32_OPT_OPS, COUNT(CUDA_FP32_OPT_OPS))) return POL_FP32_OPT;
    if (in_list(name, CUDA_PROMOTE_OPS, COUNT(CUDA_PROMOTE_OPS))) return POL_PROMOTE;
    if (in_list(name, CUDA_BANNED_OPS, COUNT(CUDA_BANNED_OPS))) return POL_BANNED;
    return POL_NONE;
  }
  if (in_list(name, LOWER_OPS, COUNT(LOWER_OPS))) return POL_LOWER;
  if (in_list(name, FP32_OPS, COUNT(FP32_OPS))) return POL_FP32;
  if (in_list(name, PROMOTE_OPS, COUNT(PROMOTE_OPS))) return POL_PROMOTE;
  return POL_NONE;
}

static amp_policy decide(wk_op *op, int lists) {
  if (wk_op_mutated_arg(op) >= 0) return POL_NONE; /* in-place and out= forms keep their dtypes */
  return decide_name(wk_op_name(op), lists);
}

/* decide(), cached per op handle and list set. */
static amp_policy policy_of(wk_op *op, int lists) {
  uintptr_t h = ((uintptr_t)op >> 4) * 0x9E3779B97F4A7C15ull;
  for (unsigned i = 0; i < AMP_SLOTS; i++) {
    policy_slot *s = &g_policy[(h + i) & (AMP_SLOTS - 1)];
    wk_op *cur = __atomic_load_n(&s->op, __ATOMIC_ACQUIRE);
    if (cur == op) {
      int p = __atomic_load_n(&s->policy[lists], __ATOMIC_ACQUIRE);
      if (p != POL_UNKNOWN) return (amp_policy)p;
      p = decide(op, lists);
      __atomic_store_n(&s->policy[lists], p, __ATOMIC_RELEASE);
      return (amp_policy)p;
    }
    if (!cur) {
      wk_op *expected = NULL;
      if (!__atomic_compare_exchange_n(&s->op, &expected, op, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) &&
          expected != op)
        continue;
      amp_policy p = decide(op, lists);
      __atomic_store_n(&s->policy[lists], (int)p, __ATOMIC_RELEASE);
      return p;
    }
  }
  return decide(op, lists); /* table full */
}

/* Which list set a device type uses: PyTorch's CUDA lists for "cuda", the
 * cpu lists for every other type. */
static int lists_of(int32_t dev) {
  const char *n = wk_device_type_name(dev);
  return n && strcmp(n, "cuda") == 0 ? LISTS_CUDA : LISTS_CPU;
}

/* PyTorch's is_eligible: a floating tensor other than float64. */
static bool eligible(const wk_tensor *t) {
  if (!t) return false;
  wk_dtype d = wk_tensor_dtype(t);
  return d == WK_F32 || d == WK_F16 || d == WK_BF16;
}

/* The first tensor argument's device type decides which region applies. */
static int32_t device_type_of(const wk_value *args, int n) {
  for (int i = 0; i < n; i++) {
    if (args[i].tag == WK_V_TENSOR && args[i].u.t) return wk_tensor_device(args[i].u.t).type;
    if (args[i].tag == WK_V_TENSORS)
      for (int k = 0; k < args[i].len; k++)
        if (args[i].u.tensors[k]) return wk_tensor_device(args[i].u.tensors[k]).type;
  }
  return -1;
}

static wk_dtype wider(wk_dtype a, wk_dtype b) {
  if (a == WK_DTYPE_DEFAULT) return b;
  if (a == b) return a;
  return WK_F32; /* f16 with bf16, or either with f32 */
}

/* Tensors cast for one call: released after it. */
typedef struct {
  wk_tensor **made;
  int n, cap;
} cast_list;

static wk_tensor *cast_to(wk_tensor *t, wk_dtype to, int32_t dev, cast_list *cl) {
  if (!eligible(t) || wk_tensor_dtype(t) == to || wk_tensor_device(t).type != dev) return t;
  if (cl->n == cl->cap) {
    int cap = cl->cap ? cl->cap * 2 : 8;
    wk_tensor **m = wk_realloc(cl->made, sizeof *m * (size_t)cap);
    if (!m) {
      wk_error(WK_ERR_NO_MEMORY, "autocast: out of memory");
      return NULL;
    }
    cl->made = m;
    cl->cap = cap;
  }
  wk_tensor *c = wk_to_dtype(t, to);
  if (c) cl->made[cl->n++] = c;
  return c;
}

static wk_status layer_fn(wk_layer *self, void *user, wk_op *op, const wk_value *args, wk_value *outs) {
  (void)user;
  if (t_open == 0) return wk_layer_redispatch(self, op, args, outs); /* no region on this thread */
  int n = wk_op_num_args(op);
  int32_t dev = device_type_of(args, n);
  if (dev < 0 || dev >= AMP_MAX_TYPES || t_regions[dev].depth == 0) return wk_layer_redispatch(self, op, args, outs);
  amp_policy pol = policy_of(op, lists_of(dev));
  if (pol == POL_FP32_OPT) { /* an explicit dtype argument wins, as PyTorch's set_opt_dtype */
    int d = wk_op_arg_index(op, "dtype");
    pol = d >= 0 && d < n && args[d].tag != WK_V_NONE ? POL_NONE : POL_FP32;
  }
  if (pol == POL_BANNED)
    return wk_error(WK_ERR_UNSUPPORTED,
                    "%s(): torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast. "
                    "Many models use a sigmoid layer right before the binary cross entropy layer. In this case, "
                    "combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits or "
                    "torch.nn.BCEWithLogitsLoss. binary_cross_entropy_with_logits and BCEWithLogits are safe to "
                    "autocast.",
                    wk_op_name(op));
  if (pol == POL_NONE) return wk_layer_redispatch(self, op, args, outs);

  wk_dtype to = pol == POL_LOWER ? t_regions[dev].dtype[t_regions[dev].depth - 1] : WK_F32;
  if (pol == POL_PROMOTE) {
    to = WK_DTYPE_DEFAULT;
    for (int i = 0; i < n; i++) {
      if (args[i].tag == WK_V_TENSOR && eligible(args[i].u.t)) to = wider(to, wk_tensor_dtype(args[i].u.t));
      if (args[i].tag == WK_V_TENSORS)
        for (int k = 0; k < args[i].len; k++)
          if (eligible(args[i].u.tensors[k])) to = wider(to, wk_tensor_dtype(args[i].u.tensors[k]));
    }
    if (to == WK_DTYPE_DEFAULT) return wk_layer_redispatch(self, op, args, outs);
  }

  /* The casts run with this layer excluded (a cast is never autocast) but
   * through autograd, which records them. */
  wk_value a[WK_MAX_ARGS];
  wk_tensor **lists[WK_MAX_ARGS] = {0};
  cast_list cl = {0};
  wk_status s = n <= WK_MAX_ARGS ? WK_OK
                                 : wk_error(WK_ERR_INTERNAL, "%s(): autocast: %d arguments, more than %d", wk_op_name(op),
                                            n, WK_MAX_ARGS);
  if (!s) {
    bool prev = wk_layer_exclude(self, true);
    for (int i = 0; i < n && !s; i++) {
      a[i] = args[i];
      if (args[i].tag == WK_V_TENSOR && args[i].u.t) {
        a[i].u.t = cast_to(args[i].u.t, to, dev, &cl);
        if (!a[i].u.t) s = wk_last_error();
      } else if (args[i].tag == WK_V_TENSORS && args[i].len > 0) {
        lists[i] = wk_malloc(sizeof(wk_tensor *) * (size_t)args[i].len);
        if (!lists[i]) {
          s = wk_error(WK_ERR_NO_MEMORY, "%s(): autocast: out of memory", wk_op_name(op));
          break;
        }
        for (int k = 0; k < args[i].len && !s; k++) {
          wk_tensor *t = args[i].u.tensors[k];
          lists[i][k] = t ? cast_to(t, to, dev, &cl) : NULL;
          if (t && !lists[i][k]) s = wk_last_error();
        }
        a[i].u.tensors = lists[i];
      }
    }
    wk_layer_exclude(self, prev);
  }
  if (!s) s = wk_layer_redispatch(self, op, a, outs);
  for (int i = 0; i < cl.n; i++) wk_release(cl.made[i]);
  wk_free(cl.made);
  for (int i = 0; i < n && i < WK_MAX_ARGS; i++) wk_free(lists[i]);
  return s;
}

/* ---- the service ------------------------------------------------------------------------- */
static int32_t type_of(const char *what, const char *device_type) {
  if (!device_type) {
    wk_error(WK_ERR_NULL, "%s: device_type is NULL", what);
    return -1;
  }
  int32_t t = wk_device_type_find(device_type);
  if (t <= 0 || t >= AMP_MAX_TYPES) {
    wk_clear_error();
    wk_error(WK_ERR_INVALID_ARG, "%s: unknown device type '%s' (no loaded plugin registers it)", what, device_type);
    return -1;
  }
  return t;
}

static wk_status amp_begin(const char *device_type, wk_dtype dtype) {
  int32_t t = type_of("autocast_begin", device_type);
  if (t < 0) return wk_last_error();
  if (dtype == WK_DTYPE_DEFAULT) dtype = t == WK_DEVICE_CPU ? WK_BF16 : WK_F16;
  if (dtype != WK_BF16 && dtype != WK_F16)
    return wk_error(WK_ERR_DTYPE,
                    "autocast_begin: in autocast, only bfloat16 and float16 are supported as the lower precision "
                    "dtype, got %s",
                    wk_dtype_name(dtype));
  region_stack *r = &t_regions[t];
  if (r->depth == AMP_MAX_DEPTH)
    return wk_error(WK_ERR_STATE, "autocast_begin: more than %d nested regions for '%s'", AMP_MAX_DEPTH, device_type);
  if (!g_layer) return wk_error(WK_ERR_STATE, "autocast_begin: the autocast layer is not registered");
  wk_layer_set_enabled(g_layer, true);
  r->dtype[r->depth++] = dtype;
  t_open++;
  return WK_OK;
}

static wk_status amp_end(const char *device_type) {
  int32_t t = type_of("autocast_end", device_type);
  if (t < 0) return wk_last_error();
  region_stack *r = &t_regions[t];
  if (r->depth == 0)
    return wk_error(WK_ERR_STATE, "autocast_end: no autocast region is open for '%s' on this thread", device_type);
  r->depth--;
  t_open--;
  return WK_OK;
}

/* The queries answer "no region" for NULL or unknown names, without an error. */
static region_stack *regions_of(const char *device_type) {
  int32_t t = device_type ? wk_device_type_find(device_type) : -1;
  if (t <= 0 || t >= AMP_MAX_TYPES) {
    wk_clear_error();
    return NULL;
  }
  return &t_regions[t];
}

static bool amp_enabled(const char *device_type) {
  region_stack *r = regions_of(device_type);
  return r && r->depth > 0;
}

static wk_dtype amp_dtype(const char *device_type) {
  region_stack *r = regions_of(device_type);
  return r && r->depth ? r->dtype[r->depth - 1] : WK_DTYPE_DEFAULT;
}

static int amp_op_policy(const char *device_type, const char *op_name) {
  if (!device_type || !op_name) {
    wk_error(WK_ERR_NULL, "autocast_op_policy: argument '%s' is NULL", device_type ? "op_name" : "device_type");
    return -1;
  }
  switch (decide_name(op_name, strcmp(device_type, "cuda") == 0 ? LISTS_CUDA : LISTS_CPU)) {
    case POL_LOWER: return WK_AUTOCAST_LOWER;
    case POL_FP32: return WK_AUTOCAST_FP32;
    case POL_FP32_OPT: return WK_AUTOCAST_FP32_UNLESS_DTYPE;
    case POL_PROMOTE: return WK_AUTOCAST_PROMOTE;
    case POL_BANNED: return WK_AUTOCAST_BANNED;
    default: return WK_AUTOCAST_NONE;
  }
}

static const wk_amp_api g_api = {
    .struct_size = sizeof(wk_amp_api),
    .autocast_begin = amp_begin,
    .autocast_end = amp_end,
    .autocast_enabled = amp_enabled,
    .autocast_dtype = amp_dtype,
    .grad_scaler_new = scaler_new,
    .grad_scaler_free = scaler_free,
    .grad_scaler_scale = scaler_scale,
    .grad_scaler_unscale_ = scaler_unscale_,
    .grad_scaler_step = scaler_step,
    .grad_scaler_update = scaler_update,
    .grad_scaler_get_scale = scaler_get_scale,
    .grad_scaler_growth_tracker = scaler_growth_tracker,
    .grad_scaler_is_enabled = scaler_is_enabled,
    .grad_scaler_state_dict = scaler_state_dict,
    .grad_scaler_load_state_dict = scaler_load_state_dict,
    .autocast_op_policy = amp_op_policy,
};

static wk_status init(void) {
  wk_status s = scaler_init();
  if (s) return s;
  g_layer = wk_layer_register("autocast", WK_LEVEL_AUTOCAST, layer_fn, NULL, false);
  if (!g_layer) return wk_last_error();
  return wk_service_register(WK_AMP_SERVICE, WK_AMP_API_VERSION, &g_api);
}

WK_PLUGIN_DEFINE("amp", "0.2.0", "autocast (PyTorch's cpu and cuda op lists) and GradScaler (service \"amp\")", init,
                 NULL)
