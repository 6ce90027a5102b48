/* onednn plugin: softmax and log_softmax, forward and backward
 * (softmax_backward_data, log_softmax_backward_data), on contiguous f32
 * tensors with oneDNN's softmax v2 primitives. */
#include <string.h>

#include "onednn.h"

typedef struct {
  char tag[8];
  int32_t log, bwd, nd, axis;
  int64_t dims[WK_MAX_DIMS];
} sm_key;

static void md_of_key(const sm_key *k, dnnl_memory_desc_t *md) {
  int64_t st[WK_MAX_DIMS];
  st[k->nd - 1] = 1;
  for (int i = k->nd - 2; i >= 0; i--) st[i] = st[i + 1] * k->dims[i + 1];
  odn_md_strided(md, k->nd, k->dims, st, dnnl_f32);
}

static odn_prim *sm_make(void *v) {
  const sm_key *k = v;
  const char *op =
      k->bwd ? (k->log ? "log_softmax_backward_data" : "softmax_backward_data") : (k->log ? "log_softmax" : "softmax");
  dnnl_alg_kind_t alg = k->log ? dnnl_softmax_log : dnnl_softmax_accurate;
  dnnl_memory_desc_t md;
  md_of_key(k, &md);
  dnnl_softmax_v2_desc_t fd, bd;
  if (odn_check(odn.softmax_v2_forward_desc_init(&fd, dnnl_forward_training, alg, &md, &md, k->axis), op,
                "softmax description"))
    return NULL;
  dnnl_query_t q[1] = {dnnl_query_undef};
  if (!k->bwd) return odn_prim_create(op, &fd, NULL, NULL, q, 0);
  dnnl_primitive_attr_t a = odn_attr(op);
  if (!a) return NULL;
  dnnl_primitive_desc_t hint = NULL;
  dnnl_status_t s = odn.primitive_desc_create(&hint, &fd, a, odn_engine, NULL);
  odn.primitive_attr_destroy(a);
  if (odn_check(s, op, "softmax description")) return NULL;
  odn_prim *p = NULL;
  if (!odn_check(odn.softmax_v2_backward_desc_init(&bd, alg, &md, &md, &md, k->axis), op, "softmax description"))
    p = odn_prim_create(op, &bd, NULL, hint, q, 0);
  odn.primitive_desc_destroy(hint);
  return p;
}

/* Key for tensor t and dim (negative from the end); false when not ours. */
static bool sm_parse(wk_tensor *t, int64_t dim, bool log, bool bwd, sm_key *k) {
  memset(k, 0, sizeof *k);
  memcpy(k->tag, "softmax", 8);
  if (!odn_usable() || !odn_dense(t, false)) return false;
  int nd = wk_tensor_dim(t);
  if (nd < 1) return false;
  if (dim < 0) dim += nd;
  if (dim < 0 || dim >= nd) return false;
  k->log = log;
  k->bwd = bwd;
  k->nd = nd;
  k->axis = (int32_t)dim;
  memcpy(k->dims, wk_tensor_sizes(t), sizeof(int64_t) * (size_t)nd);
  return true;
}

/* softmax(self, dim, dtype=None): ctx->user non-NULL for log_softmax */
static bool fwd_supports(const wk_kernel_ctx *ctx, const wk_value *args) {
  sm_key k;
  if (!WK_ARG_IS_NONE(2) && args[2].u.dtype != WK_F32) return false;
  return sm_parse(WK_ARG_T(0), WK_ARG_I(1), ctx->user != NULL, false, &k);
}

/* *_backward_data(grad_output, output, dim, input_dtype) */
static bool bwd_supports(const wk_kernel_ctx *ctx, const wk_value *args) {
  sm_key k;
  wk_tensor *go = WK_ARG_T(0), *y = WK_ARG_T(1);
  if (args[3].u.dtype != WK_F32 || !odn_dense(go, false)) return false; /* shapes: the meta function's */
  return sm_parse(y, WK_ARG_I(2), ctx->user != NULL, true, &k);
}

static wk_status k_softmax(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  bool log = ctx->user != NULL, bwd = wk_op_tags(ctx->op) & WK_TAG_BACKWARD;
  const char *op = wk_op_name(ctx->op);
  if (!(bwd ? bwd_supports(ctx, args) : fwd_supports(ctx, args)))
    return wk_error(WK_ERR_UNSUPPORTED, "%s(): the onednn kernel does not handle these arguments (the cpu kernel does)",
                    op);
  sm_key k;
  wk_tensor *t = bwd ? WK_ARG_T(1) : WK_ARG_T(0);
  sm_parse(t, bwd ? WK_ARG_I(2) : WK_ARG_I(1), log, bwd, &k);
  wk_tensor *r = wk_empty_like(t, (wk_options){0});
  if (!r) return wk_last_error();
  odn_entry *e = odn_prim_get(&k, sizeof k, sm_make, &k);
  wk_status s = e ? WK_OK : wk_last_error();
  if (!s) {
    dnnl_memory_desc_t md;
    md_of_key(&k, &md);
    odn_arg fa[2] = {{DNNL_ARG_SRC, NULL, &md, wk_tensor_data(t), false},
                     {DNNL_ARG_DST, NULL, &md, wk_tensor_data(r), true}};
    odn_arg ba[3] = {{DNNL_ARG_DST, NULL, &md, wk_tensor_data(t), false},
                     {DNNL_ARG_DIFF_DST, NULL, &md, wk_tensor_data(WK_ARG_T(0)), false},
                     {DNNL_ARG_DIFF_SRC, NULL, &md, wk_tensor_data(r), true}};
    s = bwd ? odn_exec(op, odn_entry_val(e), ba, 3) : odn_exec(op, odn_entry_val(e), fa, 2);
  }
  odn_cache_unpin(e);
  if (s) {
    wk_release(r);
    return s;
  }
  outs[0] = WK_VT(r);
  return WK_OK;
}

/* log_softmax stays with the cpu plugin: oneDNN 2.6's dnnl_softmax_log was
 * measured at up to 8.5e-4 relative error on [256, 10] logits (the cpu
 * kernel: 1.9e-7; PyTorch's: about 1e-7), enough to move cross-entropy
 * gradients by 1e-6 and a DDP run 1e-5 away from PyTorch's. Its kernel is
 * kept (WICK_ONEDNN_ALL_KERNELS=1 registers it) for comparison. softmax
 * itself is as accurate as the cpu kernel (1.4e-6 vs 1.1e-6). */
wk_status odn_register_softmax(void) {
  wk_status s = odn_reg("softmax", k_softmax, fwd_supports, NULL);
  if (!s) s = odn_reg("softmax_backward_data", k_softmax, bwd_supports, NULL);
  if (!s && odn_all_kernels()) s = odn_reg("log_softmax", k_softmax, fwd_supports, (void *)1);
  if (!s && odn_all_kernels()) s = odn_reg("log_softmax_backward_data", k_softmax, bwd_supports, (void *)1);
  return s;
}
