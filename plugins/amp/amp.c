/* amp plugin: autocast (abi/wick/amp.h). A dispatch layer above autograd
 * casts the tensor arguments of listed ops before passing the call on, so the
 * casts are recorded by autograd like any op and gradients flow back to the
 * parameters in their own dtype.
 *
 * Regions are per thread and per device type. The layer is enabled for the
 * whole process when the first region opens (and stays so): a thread without
 * a region pays one thread-local check per op. Each op's policy is looked up
 * by name once and kept in a table keyed by the op handle. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wick/sdk.h> /* first: it routes the wk_* calls of the headers below */
#include <wick/amp.h>

#define AMP_MAX_TYPES 64 /* the core's limit on device types */
#define AMP_MAX_DEPTH 32
#define AMP_SLOTS 2048   /* op -> policy cache, power of two */

typedef enum { POL_UNKNOWN = 0, POL_NONE, POL_LOWER, POL_FP32, POL_PROMOTE } amp_policy;

/* PyTorch 1.13.1's CPU lists, as far as Wick has the ops (names without the
 * overload suffix). tests/check_amp.c holds PyTorch's result dtypes. */
static const char *const LOWER_OPS[] = {"conv1d", "conv2d", "conv3d", "mm", "addmm", "bmm", "baddbmm", "addbmm",
                                        "matmul", "linear", "prelu"};
static const char *const FP32_OPS[] = {"cross_entropy", "nll_loss", "mse_loss", "binary_cross_entropy",
                                       "binary_cross_entropy_with_logits", "l1_loss", "smooth_l1_loss",
                                       "huber_loss", "kl_div", "prod", "avg_pool3d", "max_pool3d",
                                       "adaptive_avg_pool3d", "cdist", "quantile", "nanquantile"};
static const char *const PROMOTE_OPS[] = {"cat", "stack", "index_copy"};

typedef struct {
  wk_op *op;
  int policy;
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

/* The policy of an op from its name (overload suffix ignored). */
static amp_policy decide(wk_op *op) {
  const char *name = wk_op_name(op);
  if (wk_op_mutated_arg(op) >= 0) return POL_NONE; /* in-place and out= forms keep their dtypes */
  if (in_list(name, LOWER_OPS, COUNT(LOWER_OPS))) return POL_LOWER;
  if (in_list(name, FP32_OPS, COUNT(FP32_OPS))) return POL_FP32;
  if (in_list(name, PROMOTE_OPS, COUNT(PROMOTE_OPS))) return POL_PROMOTE;
  return POL_NONE;
}

/* decide(), cached per op handle. */
static amp_policy policy_of(wk_op *op) {
  uintptr_t h = ((uintptr_t)op >> 4) * 0x9E3779B97F4A7C15ull;
  for (unsigned i = 0; i < AMP_SLOTS; i++) {
    policy_slot *s = &g_policy[(h + i) & (AMP_SLOTS - 1)];
    wk_op *cur = __atomic_load_n(&s->op, __ATOMIC_ACQUIRE);
    if (cur == op) {
      int p = __atomic_load_n(&s->policy, __ATOMIC_ACQUIRE);
      if (p != POL_UNKNOWN) return (amp_policy)p;
      break; /* another thread is filling it in: decide here too */
    }
    if (!cur) {
      wk_op *expected = NULL;
      if (!__atomic_compare_exchange_n(&s->op, &expected, op, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) &&
          expected != op)
        continue;
      amp_policy p = decide(op);
      __atomic_store_n(&s->policy, (int)p, __ATOMIC_RELEASE);
      return p;
    }
  }
  return decide(op); /* table full, or racing */
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
    wk_tensor **m = realloc(cl->made, sizeof *m * (size_t)cap);
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
  amp_policy pol = policy_of(op);
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
        lists[i] = malloc(sizeof(wk_tensor *) * (size_t)args[i].len);
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
  free(cl.made);
  for (int i = 0; i < n && i < WK_MAX_ARGS; i++) free(lists[i]);
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

static const wk_amp_api g_api = {
    .struct_size = sizeof(wk_amp_api),
    .autocast_begin = amp_begin,
    .autocast_end = amp_end,
    .autocast_enabled = amp_enabled,
    .autocast_dtype = amp_dtype,
};

static wk_status init(void) {
  g_layer = wk_layer_register("autocast", WK_LEVEL_AUTOCAST, layer_fn, NULL, false);
  if (!g_layer) return wk_last_error();
  return wk_service_register(WK_AMP_SERVICE, WK_AMP_API_VERSION, &g_api);
}

WK_PLUGIN_DEFINE("amp", "0.1.0", "autocast: mixed precision regions, PyTorch's op policy (service \"amp\")", init, NULL)
