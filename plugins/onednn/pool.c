/* onednn plugin: avg_pool2d and adaptive_avg_pool2d (when the input divides
 * evenly into the output) forward and backward, f32 NCHW, with oneDNN's
 * pooling primitives. max_pool2d_with_indices stays with the cpu plugin:
 * its result includes PyTorch's flat indices, which oneDNN's opaque
 * workspace cannot give. The core's meta functions (core/meta_conv.c) check
 * the arguments and decide the output shapes. */
#include <string.h>

#include "onednn.h"

typedef struct {
  char tag[8];
  int32_t bwd, include_pad;
  int64_t N, C, H, W, oh, ow, k[2], s[2], pl[2], pr[2];
} pool_key;

static void key_dims(pool_key *k, wk_tensor *x) {
  int nd = wk_tensor_dim(x);
  k->N = nd == 4 ? wk_tensor_size(x, 0) : 1;
  k->C = wk_tensor_size(x, nd - 3);
  k->H = wk_tensor_size(x, nd - 2);
  k->W = wk_tensor_size(x, nd - 1);
}

/* avg_pool2d arguments (self, kernel, stride, padding, ceil_mode,
 * count_include_pad, divisor_override) and ys, the sizes of the pooled output
 * (the forward's result, the backward's grad_output) as a key, when oneDNN
 * computes exactly what PyTorch does. The op's meta function
 * (core/meta_conv.c) checked the arguments and decided ys. */
static bool avg_parse(const wk_value *args, const int64_t *ys, pool_key *k) {
  memset(k, 0, sizeof *k);
  memcpy(k->tag, "avgpool", 8);
  wk_tensor *x = WK_ARG_T(0);
  if (!odn_usable() || !odn_dense(x, false)) return false;
  if (!WK_ARG_IS_NONE(6)) return false; /* divisor_override */
  key_dims(k, x);
  int nd = wk_tensor_dim(x);
  k->oh = ys[nd - 2];
  k->ow = ys[nd - 1];
  k->include_pad = WK_ARG_B(5);
  /* int[2] arguments arrive normalised to two values (stride: or none) */
  const int64_t *kv = args[1].u.ints, *sv = args[2].len ? args[2].u.ints : kv, *p = args[3].u.ints;
  for (int i = 0; i < 2; i++) {
    int64_t in = i ? k->W : k->H, o = i ? k->ow : k->oh;
    k->k[i] = kv[i];
    k->s[i] = sv[i];
    k->pl[i] = p[i];
    k->pr[i] = (o - 1) * k->s[i] + k->k[i] - in - p[i];
    /* ceil mode's extra right window: PyTorch divides by the part inside the
     * padded input, oneDNN's include-padding mode by the whole kernel */
    if (k->include_pad && k->pr[i] > p[i]) return false;
  }
  return true;
}

/* adaptive_avg_pool2d of x to ys's last two sizes, when its windows are even. */
static bool adaptive_parse(wk_tensor *x, const int64_t *ys, pool_key *k) {
  memset(k, 0, sizeof *k);
  memcpy(k->tag, "avgpool", 8);
  if (!odn_usable() || !odn_dense(x, false)) return false;
  int nd = wk_tensor_dim(x);
  int64_t o[2] = {ys[nd - 2], ys[nd - 1]};
  if (o[0] <= 0 || o[1] <= 0) return false;
  key_dims(k, x);
  if (k->H % o[0] || k->W % o[1]) return false; /* uneven windows: cpu */
  k->oh = o[0];
  k->ow = o[1];
  k->k[0] = k->s[0] = k->H / o[0];
  k->k[1] = k->s[1] = k->W / o[1];
  return true;
}

/* The result's sizes the meta function decided (NULL: none, decline). */
static const int64_t *meta_sizes(const wk_kernel_ctx *ctx) {
  const wk_meta_out *m = wk_kernel_meta(ctx, 0);
  return m ? m->sizes : NULL;
}

static void plain(dnnl_memory_desc_t *md, int64_t N, int64_t C, int64_t H, int64_t W) {
  int64_t d[4] = {N, C, H, W}, s[4] = {C * H * W, H * W, W, 1};
  odn_md_strided(md, 4, d, s, dnnl_f32);
}

static odn_prim *pool_make(void *v) {
  const pool_key *k = v;
  const char *op = k->bwd ? "avg_pool2d_backward" : "avg_pool2d";
  dnnl_memory_desc_t src, dst;
  plain(&src, k->N, k->C, k->H, k->W);
  plain(&dst, k->N, k->C, k->oh, k->ow);
  dnnl_alg_kind_t alg = k->include_pad ? dnnl_pooling_avg_include_padding : dnnl_pooling_avg_exclude_padding;
  dnnl_dims_t st = {k->s[0], k->s[1]}, ker = {k->k[0], k->k[1]}, dil = {0, 0}, pl = {k->pl[0], k->pl[1]},
              pr = {k->pr[0], k->pr[1]};
  dnnl_pooling_v2_desc_t fd, bd;
  if (odn_check(odn.pooling_v2_forward_desc_init(&fd, dnnl_forward_training, alg, &src, &dst, st, ker, dil, pl, pr), op,
                "pooling description"))
    return NULL;
  dnnl_query_t q[1] = {dnnl_query_undef};
  if (!k->bwd) return odn_prim_create(op, &fd, NULL, NULL, q, 0);
  dnnl_primitive_attr_t a = odn_attr(op);
  if (!a) return NULL;
  dnnl_primitive_desc_t hint = NULL;
  dnnl_status_t s = odn.primitive_desc_create(&hint, &fd, a, odn_engine, NULL);
  odn.primitive_attr_destroy(a);
  if (odn_check(s, op, "pooling description")) return NULL;
  odn_prim *p = NULL;
  if (!odn_check(odn.pooling_v2_backward_desc_init(&bd, alg, &src, &dst, st, ker, dil, pl, pr), op,
                 "pooling description"))
    p = odn_prim_create(op, &bd, NULL, hint, q, 0);
  odn.primitive_desc_destroy(hint);
  return p;
}

/* Runs the pooling primitive of k: forward x -> new y, or backward go -> new gi
 * (the result as the meta function decided). */
static wk_status pool_run(const wk_kernel_ctx *ctx, const char *op, pool_key *k, wk_tensor *in, wk_value *outs) {
  wk_tensor *r = wk_meta_empty(ctx, 0);
  if (!r) return wk_last_error();
  odn_entry *e = odn_prim_get(k, sizeof *k, pool_make, k);
  if (!e) {
    wk_release(r);
    return wk_last_error();
  }
  dnnl_memory_desc_t src, dst;
  plain(&src, k->N, k->C, k->H, k->W);
  plain(&dst, k->N, k->C, k->oh, k->ow);
  odn_arg a[2] = {{k->bwd ? DNNL_ARG_DIFF_DST : DNNL_ARG_SRC, NULL, k->bwd ? &dst : &src, wk_tensor_data(in), false},
                  {k->bwd ? DNNL_ARG_DIFF_SRC : DNNL_ARG_DST, NULL, k->bwd ? &src : &dst, wk_tensor_data(r), true}};
  wk_status s = odn_exec(op, odn_entry_val(e), a, 2);
  odn_cache_unpin(e);
  if (s) {
    wk_release(r);
    return s;
  }
  outs[0] = WK_VT(r);
  return WK_OK;
}

static const char *unsupported = "%s(): the onednn kernel does not handle these arguments (the cpu kernel does)";

static bool avg_supports(const wk_kernel_ctx *ctx, const wk_value *args) {
  pool_key k;
  const int64_t *ys = meta_sizes(ctx);
  return ys && avg_parse(args, ys, &k);
}

static wk_status k_avg_pool2d(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  pool_key k;
  const int64_t *ys = meta_sizes(ctx);
  if (!ys || !avg_parse(args, ys, &k)) return wk_error(WK_ERR_UNSUPPORTED, unsupported, "avg_pool2d");
  return pool_run(ctx, "avg_pool2d", &k, WK_ARG_T(0), outs);
}

/* Backward ops take (grad_output, self, ...the forward's arguments...);
 * grad_output has the forward's output sizes. */
static bool avg_bwd_parse(const wk_value *args, pool_key *k) {
  wk_tensor *go = WK_ARG_T(0);
  if (!odn_dense(go, false) || !avg_parse(args + 1, wk_tensor_sizes(go), k)) return false;
  k->bwd = 1;
  return true;
}

static bool avg_bwd_supports(const wk_kernel_ctx *ctx, const wk_value *args) {
  pool_key k;
  return avg_bwd_parse(args, &k);
}

static wk_status k_avg_pool2d_backward(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  pool_key k;
  if (!avg_bwd_parse(args, &k)) return wk_error(WK_ERR_UNSUPPORTED, unsupported, "avg_pool2d_backward");
  return pool_run(ctx, "avg_pool2d_backward", &k, WK_ARG_T(0), outs);
}

static bool adaptive_supports(const wk_kernel_ctx *ctx, const wk_value *args) {
  pool_key k;
  const int64_t *ys = meta_sizes(ctx);
  return ys && adaptive_parse(WK_ARG_T(0), ys, &k);
}

static wk_status k_adaptive(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  pool_key k;
  const int64_t *ys = meta_sizes(ctx);
  if (!ys || !adaptive_parse(WK_ARG_T(0), ys, &k))
    return wk_error(WK_ERR_UNSUPPORTED, unsupported, "adaptive_avg_pool2d");
  return pool_run(ctx, "adaptive_avg_pool2d", &k, WK_ARG_T(0), outs);
}

/* adaptive_avg_pool2d_backward(grad_output, self): the output size is grad_output's. */
static bool adaptive_bwd_parse(const wk_value *args, pool_key *k) {
  wk_tensor *go = WK_ARG_T(0);
  if (!odn_dense(go, false) || !adaptive_parse(WK_ARG_T(1), wk_tensor_sizes(go), k)) return false;
  k->bwd = 1;
  return true;
}

static bool adaptive_bwd_supports(const wk_kernel_ctx *ctx, const wk_value *args) {
  pool_key k;
  return adaptive_bwd_parse(args, &k);
}

static wk_status k_adaptive_backward(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  pool_key k;
  if (!adaptive_bwd_parse(args, &k)) return wk_error(WK_ERR_UNSUPPORTED, unsupported, "adaptive_avg_pool2d_backward");
  return pool_run(ctx, "adaptive_avg_pool2d_backward", &k, WK_ARG_T(0), outs);
}

wk_status odn_register_pool(void) {
  wk_status s = odn_reg("avg_pool2d", k_avg_pool2d, avg_supports, NULL);
  if (!s) s = odn_reg("avg_pool2d_backward", k_avg_pool2d_backward, avg_bwd_supports, NULL);
  if (!s) s = odn_reg("adaptive_avg_pool2d", k_adaptive, adaptive_supports, NULL);
  if (!s) s = odn_reg("adaptive_avg_pool2d_backward", k_adaptive_backward, adaptive_bwd_supports, NULL);
  return s;
}
