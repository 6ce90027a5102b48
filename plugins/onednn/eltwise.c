/* onednn plugin: activations (sigmoid, tanh, silu, gelu; functional and in
 * place) and the fused backward ops gelu_backward, sigmoid_backward and
 * tanh_backward with oneDNN's eltwise primitives, on contiguous f32 and bf16
 * tensors. silu's backward formula is written with ops in the core. relu
 * and threshold_backward stay with the cpu plugin: oneDNN's relu turns NaN
 * into 0 where PyTorch keeps NaN, and its backward differs on NaN/inf (below). */
#include <string.h>

#include "onednn.h"

typedef struct {
  const char *name;
  dnnl_alg_kind_t alg; /* gelu: the "none" form; "tanh" picks gelu_tanh */
  float alpha;
  bool inplace;
} act;

static const act g_acts[] = {
    {"sigmoid", dnnl_eltwise_logistic, 0, false}, {"sigmoid_", dnnl_eltwise_logistic, 0, true},
    {"tanh", dnnl_eltwise_tanh, 0, false},        {"tanh_", dnnl_eltwise_tanh, 0, true},
    {"silu", dnnl_eltwise_swish, 1, false},       {"silu_", dnnl_eltwise_swish, 1, true},
    {"gelu", dnnl_eltwise_gelu_erf, 0, false},
};

typedef struct {
  char tag[8];
  int32_t alg, bwd, dt, pad;
  float alpha;
  int32_t pad2;
  int64_t n;
} elt_key;

static odn_prim *elt_make(void *v) {
  const elt_key *k = v;
  const char *op = k->bwd ? "eltwise_backward" : "eltwise";
  dnnl_memory_desc_t md;
  int64_t one = 1;
  odn_md_strided(&md, 1, &k->n, &one, (dnnl_data_type_t)k->dt);
  dnnl_eltwise_desc_t fd, bd;
  if (odn_check(odn.eltwise_forward_desc_init(&fd, dnnl_forward_training, (dnnl_alg_kind_t)k->alg, &md, k->alpha, 0),
                op, "eltwise description"))
    return NULL;
  dnnl_query_t q[1] = {dnnl_query_undef};
  if (!k->bwd) return odn_prim_create(op, &fd, NULL, NULL, q, 0);
  dnnl_primitive_attr_t a = odn_attr(op);
  if (!a) return NULL;
  dnnl_primitive_desc_t hint = NULL;
  dnnl_status_t s = odn.primitive_desc_create(&hint, &fd, a, odn_engine, NULL);
  odn.primitive_attr_destroy(a);
  if (odn_check(s, op, "eltwise description")) return NULL;
  odn_prim *p = NULL;
  if (!odn_check(odn.eltwise_backward_desc_init(&bd, (dnnl_alg_kind_t)k->alg, &md, &md, k->alpha, 0), op,
                 "eltwise description"))
    p = odn_prim_create(op, &bd, NULL, hint, q, 0);
  odn.primitive_desc_destroy(hint);
  return p;
}

static void key_of(elt_key *k, dnnl_alg_kind_t alg, float alpha, bool bwd, const wk_tensor *t) {
  memset(k, 0, sizeof *k);
  memcpy(k->tag, "eltwise", 8);
  k->alg = (int32_t)alg;
  k->alpha = alpha;
  k->bwd = bwd;
  k->dt = (int32_t)odn_dt(wk_tensor_dtype(t));
  k->n = wk_tensor_numel(t);
}

/* gelu's approximate argument: "none" or "tanh"; anything else is the cpu's to reject. */
static bool gelu_alg(const wk_value *v, dnnl_alg_kind_t *alg) {
  if (v->tag != WK_V_STR) return false;
  int a = wk_option_index(v->u.s, (const char *const[]){"none", "tanh", NULL});
  if (a < 0) return false;
  *alg = a == 1 ? dnnl_eltwise_gelu_tanh : dnnl_eltwise_gelu_erf;
  return true;
}

static bool act_supports(const wk_kernel_ctx *ctx, const wk_value *args) {
  const act *a = ctx->user;
  dnnl_alg_kind_t alg;
  if (a->alg == dnnl_eltwise_gelu_erf && !gelu_alg(&args[1], &alg)) return false;
  return odn_usable() && odn_dense(WK_ARG_T(0), true);
}

static wk_status k_act(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const act *a = ctx->user;
  if (!act_supports(ctx, args))
    return wk_error(WK_ERR_UNSUPPORTED, "%s(): the onednn kernel does not handle these arguments (the cpu kernel does)",
                    a->name);
  wk_tensor *x = WK_ARG_T(0);
  dnnl_alg_kind_t alg = a->alg;
  if (alg == dnnl_eltwise_gelu_erf) gelu_alg(&args[1], &alg);
  elt_key k;
  key_of(&k, alg, a->alpha, false, x);
  wk_tensor *y = a->inplace ? x : wk_empty_like(x, (wk_options){0});
  if (!y) return wk_last_error();
  odn_entry *e = odn_prim_get(&k, sizeof k, elt_make, &k);
  wk_status s = e ? WK_OK : wk_last_error();
  if (!s) {
    dnnl_memory_desc_t md;
    int64_t one = 1;
    odn_md_strided(&md, 1, &k.n, &one, (dnnl_data_type_t)k.dt);
    odn_arg ar[2] = {{DNNL_ARG_SRC, NULL, &md, wk_tensor_data(x), false},
                     {DNNL_ARG_DST, NULL, &md, wk_tensor_data(y), true}};
    s = odn_exec(a->name, odn_entry_val(e), ar, 2);
  }
  odn_cache_unpin(e);
  if (s) {
    if (!a->inplace) wk_release(y);
    return s;
  }
  if (a->inplace) wk_tensor_bump_version(x);
  outs[0] = WK_VT(y); /* in place: the argument itself, borrowed */
  return WK_OK;
}

/* gelu_backward(grad_output, self, *, approximate) */
static bool gelu_bwd_supports(const wk_kernel_ctx *ctx, const wk_value *args) {
  wk_tensor *go = WK_ARG_T(0), *x = WK_ARG_T(1);
  dnnl_alg_kind_t alg;
  if (!odn_usable() || !odn_dense(go, true) || !odn_dense(x, true) || !gelu_alg(&args[2], &alg)) return false;
  if (wk_tensor_dtype(go) != wk_tensor_dtype(x) || wk_tensor_dim(go) != wk_tensor_dim(x)) return false;
  for (int d = 0; d < wk_tensor_dim(x); d++)
    if (wk_tensor_size(go, d) != wk_tensor_size(x, d)) return false;
  return true;
}

static wk_status k_gelu_backward(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "gelu_backward";
  if (!gelu_bwd_supports(ctx, args))
    return wk_error(WK_ERR_UNSUPPORTED, "%s(): the onednn kernel does not handle these arguments (the cpu kernel does)",
                    op);
  wk_tensor *go = WK_ARG_T(0), *x = WK_ARG_T(1);
  dnnl_alg_kind_t alg = dnnl_eltwise_gelu_erf;
  gelu_alg(&args[2], &alg);
  elt_key k;
  key_of(&k, alg, 0, true, x);
  wk_tensor *gi = wk_empty_like(x, (wk_options){0});
  if (!gi) return wk_last_error();
  odn_entry *e = odn_prim_get(&k, sizeof k, elt_make, &k);
  wk_status s = e ? WK_OK : wk_last_error();
  if (!s) {
    dnnl_memory_desc_t md;
    int64_t one = 1;
    odn_md_strided(&md, 1, &k.n, &one, (dnnl_data_type_t)k.dt);
    odn_arg ar[3] = {{DNNL_ARG_SRC, NULL, &md, wk_tensor_data(x), false},
                     {DNNL_ARG_DIFF_DST, NULL, &md, wk_tensor_data(go), false},
                     {DNNL_ARG_DIFF_SRC, NULL, &md, wk_tensor_data(gi), true}};
    s = odn_exec(op, odn_entry_val(e), ar, 3);
  }
  odn_cache_unpin(e);
  if (s) {
    wk_release(gi);
    return s;
  }
  outs[0] = WK_VT(gi);
  return WK_OK;
}

/* ---- sigmoid_backward, tanh_backward ------------------------------------------ */
typedef struct {
  const char *name;
  dnnl_alg_kind_t alg;
  int arg; /* what the second operand is to oneDNN (the activation's output) */
} bwd_act;

/* The sigmoid and tanh derivatives from their outputs, g*y*(1-y) and
 * g*(1-y*y) (measured 1.1-2x the cpu kernel in f32, 20-30x in bf16).
 * threshold_backward stays with the cpu plugin: oneDNN's relu backward
 * multiplies g by the derivative (0 * inf and 0 * NaN give NaN where x <= 0,
 * the cpu kernel and PyTorch give 0) and passes g where x is NaN (the cpu
 * kernel gives 0). */
static const bwd_act g_bwd[] = {
    {"sigmoid_backward", dnnl_eltwise_logistic_use_dst_for_bwd, DNNL_ARG_DST},
    {"tanh_backward", dnnl_eltwise_tanh_use_dst_for_bwd, DNNL_ARG_DST},
};

/* Same shape and dtype, dense (broadcasts and mixed dtypes are the cpu kernel's). */
static bool bwd_act_supports(const wk_kernel_ctx *ctx, const wk_value *args) {
  wk_tensor *go = WK_ARG_T(0), *x = WK_ARG_T(1);
  if (!odn_usable() || !odn_dense(go, true) || !odn_dense(x, true)) return false;
  if (wk_tensor_dtype(go) != wk_tensor_dtype(x) || wk_tensor_dim(go) != wk_tensor_dim(x)) return false;
  for (int d = 0; d < wk_tensor_dim(x); d++)
    if (wk_tensor_size(go, d) != wk_tensor_size(x, d)) return false;
  return true;
}

static wk_status k_bwd_act(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const bwd_act *b = ctx->user;
  if (!bwd_act_supports(ctx, args))
    return wk_error(WK_ERR_UNSUPPORTED, "%s(): the onednn kernel does not handle these arguments (the cpu kernel does)",
                    b->name);
  wk_tensor *go = WK_ARG_T(0), *x = WK_ARG_T(1);
  elt_key k;
  key_of(&k, b->alg, 0, true, x);
  wk_tensor *gi = wk_empty_like(x, (wk_options){0});
  if (!gi) return wk_last_error();
  odn_entry *e = odn_prim_get(&k, sizeof k, elt_make, &k);
  wk_status s = e ? WK_OK : wk_last_error();
  if (!s) {
    dnnl_memory_desc_t md;
    int64_t one = 1;
    odn_md_strided(&md, 1, &k.n, &one, (dnnl_data_type_t)k.dt);
    odn_arg ar[3] = {{b->arg, NULL, &md, wk_tensor_data(x), false},
                     {DNNL_ARG_DIFF_DST, NULL, &md, wk_tensor_data(go), false},
                     {DNNL_ARG_DIFF_SRC, NULL, &md, wk_tensor_data(gi), true}};
    s = odn_exec(b->name, odn_entry_val(e), ar, 3);
  }
  odn_cache_unpin(e);
  if (s) {
    wk_release(gi);
    return s;
  }
  outs[0] = WK_VT(gi);
  return WK_OK;
}

wk_status odn_register_eltwise(void) {
  wk_status s = WK_OK;
  for (size_t i = 0; i < sizeof g_acts / sizeof g_acts[0] && !s; i++)
    s = odn_reg(g_acts[i].name, k_act, act_supports, (void *)&g_acts[i]);
  if (!s) s = odn_reg("gelu_backward", k_gelu_backward, gelu_bwd_supports, NULL);
  for (size_t i = 0; i < sizeof g_bwd / sizeof g_bwd[0] && !s; i++)
    s = odn_reg(g_bwd[i].name, k_bwd_act, bwd_act_supports, (void *)&g_bwd[i]);
  if (!s) s = odn_register_softmax();
  return s;
}
