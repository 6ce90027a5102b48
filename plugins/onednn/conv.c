/* onednn plugin: conv2d forward and conv2d_backward (data, weights, bias)
 * with oneDNN's convolution primitives. Primitives pick their own (blocked)
 * layouts; Wick's NCHW tensors are reordered in and out around them. The
 * core's meta function (core/meta_conv.c) checks the arguments and decides the
 * output shape before these run. */
#include <string.h>

#include "onednn.h"
#include "conv_point.h"

typedef struct {
  int64_t N, C, H, W, O, G, kh, kw, oh, ow;
  int64_t st[2], pl[2], pr[2], dl[2];
  int32_t dt, bias;
  int32_t nhwc, pad_; /* channels_last: activations in NHWC (acdb), no reorder (nhwc.c) */
} conv_geo;

/* Fills g from input x, weight w, (stride, padding, dilation, groups) at pv[0..3]
 * (args[3..6] of conv2d and of conv2d_backward) and ys, the sizes of the
 * output (conv2d's result, conv2d_backward's grad_output), when the call is
 * one oneDNN handles. The op's meta function (core/meta_conv.c) checked the
 * arguments and decided ys: this only answers "can I run this". */
static bool conv_parse(wk_tensor *x, wk_tensor *w, const wk_value *pv, const int64_t *ys, conv_geo *g) {
  memset(g, 0, sizeof *g);
  if (!odn_usable()) return false;
  wk_dtype dt = wk_tensor_dtype(x);
  if (dt != WK_F32 && !(dt == WK_BF16 && odn_bf16())) return false;
  int xd = wk_tensor_dim(x);
  const int64_t *xs = wk_tensor_sizes(x), *ws = wk_tensor_sizes(w);
  g->N = xd == 4 ? xs[0] : 1;
  g->C = xs[xd - 3];
  g->H = xs[xd - 2];
  g->W = xs[xd - 1];
  g->O = ws[0];
  g->G = pv[3].u.i;
  g->kh = ws[2];
  g->kw = ws[3];
  g->oh = ys[xd - 2];
  g->ow = ys[xd - 1];
  for (int i = 0; i < 2; i++) { /* int[2] arguments arrive normalised to two values */
    int64_t in = i ? g->W : g->H, out = i ? g->ow : g->oh, k = i ? g->kw : g->kh;
    g->st[i] = pv[0].u.ints[i];
    g->pl[i] = pv[1].u.ints[i];
    g->dl[i] = pv[2].u.ints[i];
    /* oneDNN wants the right padding that makes the output size exact */
    g->pr[i] = (out - 1) * g->st[i] + g->dl[i] * (k - 1) + 1 - in - g->pl[i];
  }
  g->dt = (int32_t)odn_dt(dt);
  return g->N * g->C * g->H * g->W > 0 && g->O * ws[1] * g->kh * g->kw > 0 && g->oh > 0 && g->ow > 0;
}

/* ---- descriptors -------------------------------------------------------------------------------- */
static void md_any(dnnl_memory_desc_t *md, int nd, const int64_t *dims, dnnl_data_type_t dt) {
  dnnl_dims_t d;
  for (int i = 0; i < nd; i++) d[i] = dims[i];
  memset(md, 0, sizeof *md);
  odn.memory_desc_init_by_tag(md, nd, d, dt, dnnl_format_tag_any);
}

typedef struct {
  dnnl_memory_desc_t src, wei, bias, dst;
  dnnl_dims_t st, dl, pl, pr;
} conv_descs;

static void conv_descs_init(const conv_geo *g, conv_descs *d) {
  dnnl_data_type_t dt = (dnnl_data_type_t)g->dt;
  int64_t xs[4] = {g->N, g->C, g->H, g->W}, ys[4] = {g->N, g->O, g->oh, g->ow};
  int64_t w4[4] = {g->O, g->C / g->G, g->kh, g->kw}, w5[5] = {g->G, g->O / g->G, g->C / g->G, g->kh, g->kw};
  if (g->nhwc) {
    odn_md_nhwc(&d->src, xs, dt);
    odn_md_nhwc(&d->dst, ys, dt);
  } else {
    md_any(&d->src, 4, xs, dt);
    md_any(&d->dst, 4, ys, dt);
  }
  if (g->G > 1)
    md_any(&d->wei, 5, w5, dt);
  else
    md_any(&d->wei, 4, w4, dt);
  dnnl_dims_t o = {g->O};
  memset(&d->bias, 0, sizeof d->bias);
  odn.memory_desc_init_by_tag(&d->bias, 1, o, dt, dnnl_a); /* plain: the bias tensor is used in place */
  for (int i = 0; i < 2; i++) {
    d->st[i] = g->st[i];
    d->dl[i] = g->dl[i] - 1; /* oneDNN counts dilation from 0 */
    d->pl[i] = g->pl[i];
    d->pr[i] = g->pr[i];
  }
}

static dnnl_status_t fwd_desc(const conv_geo *g, dnnl_convolution_desc_t *cd, bool bias) {
  conv_descs d;
  conv_descs_init(g, &d);
  return odn.dilated_convolution_forward_desc_init(cd, dnnl_forward_training, dnnl_convolution_direct, &d.src, &d.wei,
                                                   bias ? &d.bias : NULL, &d.dst, d.st, d.dl, d.pl, d.pr);
}

enum { K_FWD = 1, K_BWD_DATA, K_BWD_WEIGHTS };
typedef struct {
  char tag[8];
  int32_t kind, pad;
  conv_geo g;
} conv_key;

static odn_prim *make_fwd(void *v) {
  const conv_geo *g = v;
  dnnl_convolution_desc_t cd;
  if (odn_check(fwd_desc(g, &cd, g->bias), "conv2d", "convolution description")) return NULL;
  dnnl_query_t q[4] = {dnnl_query_src_md, dnnl_query_weights_md, dnnl_query_dst_md, dnnl_query_undef};
  return odn_prim_create("conv2d", &cd, NULL, NULL, q, 4);
}

/* The forward description a backward primitive is matched against. */
static dnnl_primitive_desc_t fwd_hint(const conv_geo *g, const char *op) {
  dnnl_convolution_desc_t cd;
  if (odn_check(fwd_desc(g, &cd, g->bias), op, "convolution description")) return NULL;
  dnnl_primitive_attr_t a = odn_attr(op);
  if (!a) return NULL;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_status_t st = odn.primitive_desc_create(&pd, &cd, a, odn_engine, NULL);
  odn.primitive_attr_destroy(a);
  return odn_check(st, op, "convolution description") ? NULL : pd;
}

static odn_prim *make_bwd_data(void *v) {
  const conv_geo *g = v;
  const char *op = "conv2d_backward";
  dnnl_primitive_desc_t hint = fwd_hint(g, op);
  if (!hint) return NULL;
  conv_descs d;
  conv_descs_init(g, &d);
  dnnl_convolution_desc_t cd;
  odn_prim *p = NULL;
  if (!odn_check(odn.dilated_convolution_backward_data_desc_init(&cd, dnnl_convolution_direct, &d.src, &d.wei, &d.dst,
                                                                 d.st, d.dl, d.pl, d.pr),
                 op, "convolution description")) {
    dnnl_query_t q[3] = {dnnl_query_diff_src_md, dnnl_query_weights_md, dnnl_query_diff_dst_md};
    p = odn_prim_create(op, &cd, NULL, hint, q, 3);
  }
  odn.primitive_desc_destroy(hint);
  return p;
}

static odn_prim *make_bwd_weights(void *v) {
  const conv_geo *g = v;
  const char *op = "conv2d_backward";
  dnnl_primitive_desc_t hint = fwd_hint(g, op);
  if (!hint) return NULL;
  conv_descs d;
  conv_descs_init(g, &d);
  dnnl_convolution_desc_t cd;
  odn_prim *p = NULL;
  if (!odn_check(
          odn.dilated_convolution_backward_weights_desc_init(&cd, dnnl_convolution_direct, &d.src, &d.wei,
                                                             g->bias ? &d.bias : NULL, &d.dst, d.st, d.dl, d.pl, d.pr),
          op, "convolution description")) {
    dnnl_query_t q[4] = {dnnl_query_src_md, dnnl_query_diff_weights_md, dnnl_query_diff_dst_md,
                         dnnl_query_diff_weights_md};
    p = odn_prim_create(op, &cd, NULL, hint, q, 3);
  }
  odn.primitive_desc_destroy(hint);
  return p;
}

static odn_entry *get_prim(int kind, const conv_geo *g) {
  conv_key k;
  memset(&k, 0, sizeof k);
  memcpy(k.tag, "conv2d", 7);
  k.kind = kind;
  k.g = *g;
  odn_prim *(*make)(void *) = kind == K_FWD ? make_fwd : kind == K_BWD_DATA ? make_bwd_data : make_bwd_weights;
  return odn_prim_get(&k, sizeof k, make, (void *)g);
}

/* ---- plain layouts of Wick's tensors ------------------------------------------------------------- */
static void plain_act(dnnl_memory_desc_t *md, const wk_tensor *t, int64_t N, int64_t C, int64_t H, int64_t W,
                      dnnl_data_type_t dt) {
  int nd = wk_tensor_dim(t);
  if (nd == 4 && wk_is_contiguous_format(t, WK_CHANNELS_LAST)) { /* by tag: size-1 dims' strides do not matter */
    int64_t dims[4] = {N, C, H, W};
    odn_md_nhwc(md, dims, dt);
    return;
  }
  const int64_t *s = wk_tensor_strides(t);
  int64_t dims[4] = {N, C, H, W};
  int64_t st[4] = {nd == 4 ? s[0] : C * H * W, s[nd - 3], s[nd - 2], s[nd - 1]};
  odn_md_strided(md, 4, dims, st, dt);
}

static void plain_wei(dnnl_memory_desc_t *md, const wk_tensor *w, const conv_geo *g) {
  const int64_t *s = wk_tensor_strides(w), *z = wk_tensor_sizes(w);
  if (g->G > 1) {
    int64_t dims[5] = {g->G, g->O / g->G, z[1], z[2], z[3]}, st[5] = {s[0] * (g->O / g->G), s[0], s[1], s[2], s[3]};
    odn_md_strided(md, 5, dims, st, (dnnl_data_type_t)g->dt);
  } else {
    odn_md_strided(md, 4, z, s, (dnnl_data_type_t)g->dt);
  }
}

/* ---- conv2d --------------------------------------------------------------------------------------- */
/* conv2d's geometry; the output's sizes are the meta function's. */
static bool fwd_parse(const wk_kernel_ctx *ctx, const wk_value *args, conv_geo *g) {
  const wk_meta_out *m = wk_kernel_meta(ctx, 0);
  return m && conv_parse(WK_ARG_T(0), WK_ARG_T(1), &args[3], m->sizes, g);
}

static bool conv2d_supports(const wk_kernel_ctx *ctx, const wk_value *args) {
  conv_geo g;
  wk_tensor *b = WK_ARG_OPT_T(2);
  return fwd_parse(ctx, args, &g) && (!b || odn_dense(b, true));
}

static wk_status k_conv2d(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "conv2d";
  wk_tensor *x = WK_ARG_T(0), *w = WK_ARG_T(1), *b = WK_ARG_OPT_T(2);
  conv_geo g;
  if (!fwd_parse(ctx, args, &g) || (b && !odn_dense(b, true)))
    return wk_error(WK_ERR_UNSUPPORTED, "%s(): the onednn kernel does not handle these arguments (the cpu kernel does)",
                    op);
  g.bias = b != NULL;
  int xd = wk_tensor_dim(x);
  g.nhwc = odn_conv_nhwc(x, w);
  wk_tensor *y = g.nhwc ? odn_meta_empty_nhwc(ctx, 0) : wk_meta_empty(ctx, 0);
  if (!y) return wk_last_error();
  int64_t ty, tx;
  if (xd == 4 && odn_conv_point(g.H, g.W, g.oh, g.ow, g.G, g.pl, g.dl, g.kh, g.kw, &ty, &tx) &&
      odn_conv_point_supported(x, NULL) && wk_tensor_is_contiguous(y)) {
    wk_status s = odn_conv_point_fwd(op, x, w, b, ty, tx, (dnnl_data_type_t)g.dt, y);
    if (s) {
      wk_release(y);
      return s;
    }
    outs[0] = WK_VT(y);
    return WK_OK;
  }
  odn_entry *e = get_prim(K_FWD, &g);
  if (!e) {
    wk_release(y);
    return wk_last_error();
  }
  const odn_prim *p = odn_entry_val(e);
  dnnl_data_type_t dt = (dnnl_data_type_t)g.dt;
  dnnl_memory_desc_t hx, hw, hb, hy;
  plain_act(&hx, x, g.N, g.C, g.H, g.W, dt);
  plain_wei(&hw, w, &g);
  plain_act(&hy, y, g.N, g.O, g.oh, g.ow, dt);
  odn_arg a[4] = {{DNNL_ARG_SRC, &p->md[0], &hx, wk_tensor_data(x), false},
                  {DNNL_ARG_WEIGHTS, &p->md[1], &hw, wk_tensor_data(w), false},
                  {DNNL_ARG_DST, &p->md[2], &hy, wk_tensor_data(y), true},
                  {DNNL_ARG_BIAS, NULL, &hb, NULL, false}};
  if (b) {
    odn_md_of(&hb, b);
    a[3].data = wk_tensor_data(b);
  }
  odn_wentry *we = NULL;
  wk_status s = odn_weight_arg(op, w, &a[1], false, &we);
  if (!s) s = odn_exec(op, p, a, b ? 4 : 3);
  odn_weight_unpin(we);
  odn_cache_unpin(e);
  if (s) {
    wk_release(y);
    return s;
  }
  outs[0] = WK_VT(y);
  return WK_OK;
}

/* ---- conv2d_backward -------------------------------------------------------------------------------- */
/* conv2d_backward's geometry; grad_output has the forward's output sizes. */
static bool bwd_ok(const wk_value *args, conv_geo *g) {
  return conv_parse(WK_ARG_T(1), WK_ARG_T(2), &args[3], wk_tensor_sizes(WK_ARG_T(0)), g);
}

/* Few input channels per group (first layers): oneDNN pads them to a block
 * of 16 for the data gradient and reorders the large grad_output; measured
 * slower than the cpu kernel (0.5-0.75x), except for the weights' gradient
 * alone of a large kernel (7x7 on RGB: 1.4x faster). */
static bool bwd_supports(const wk_kernel_ctx *ctx, const wk_value *args) {
  conv_geo g;
  if (!bwd_ok(args, &g)) return false;
  int64_t cg = wk_tensor_size(WK_ARG_T(2), 1), khw = wk_tensor_size(WK_ARG_T(2), 2) * wk_tensor_size(WK_ARG_T(2), 3);
  return !(cg < 4 && (args[7].u.ints[0] || cg * khw < 16));
}

static wk_status k_conv2d_backward(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "conv2d_backward";
  conv_geo g;
  if (!bwd_ok(args, &g))
    return wk_error(WK_ERR_UNSUPPORTED, "%s(): the onednn kernel does not handle these arguments (the cpu kernel does)",
                    op);
  wk_tensor *go = WK_ARG_T(0), *x = WK_ARG_T(1), *w = WK_ARG_T(2);
  const int64_t *mask = args[7].u.ints;
  dnnl_data_type_t dt = (dnnl_data_type_t)g.dt;
  wk_tensor *gi = NULL, *gw = NULL, *gb = NULL;
  odn_entry *ed = NULL, *ew = NULL;
  void *go_tmp = NULL;
  wk_status s = WK_OK;
  dnnl_memory_desc_t hx, hw, hgo, hgi, hgw, hgb;
  int64_t ty, tx;
  g.nhwc = odn_conv_nhwc(x, w);
  if (wk_tensor_dim(x) == 4 && odn_conv_point(g.H, g.W, g.oh, g.ow, g.G, g.pl, g.dl, g.kh, g.kw, &ty, &tx) &&
      odn_conv_point_supported(x, go)) {
    if ((mask[0] && !(gi = wk_meta_empty(ctx, 0))) || (mask[1] && !(gw = odn_meta_empty_like_format(ctx, 1, w))) ||
        (mask[2] && !(gb = wk_meta_empty(ctx, 2))))
      goto fail;
    if ((s = odn_conv_point_bwd(op, go, x, w, ty, tx, dt, gi, gw, gb))) goto fail;
    outs[0] = gi ? WK_VT(gi) : WK_VNONE;
    outs[1] = gw ? WK_VT(gw) : WK_VNONE;
    outs[2] = gb ? WK_VT(gb) : WK_VNONE;
    return WK_OK;
  }
  plain_act(&hgo, go, g.N, g.O, g.oh, g.ow, dt);
  if (mask[0] && !(ed = get_prim(K_BWD_DATA, &g))) goto fail;
  g.bias = mask[2] != 0;
  if ((mask[1] || mask[2]) && !(ew = get_prim(K_BWD_WEIGHTS, &g))) goto fail;
  /* Both gradients want grad_output in the same blocked layout (the usual
   * case): reorder it once for the two. */
  const dnnl_memory_desc_t *go_want[2] = {ed ? &((odn_prim *)odn_entry_val(ed))->md[2] : NULL,
                                          ew ? &((odn_prim *)odn_entry_val(ew))->md[2] : NULL};
  const dnnl_memory_desc_t *go_have = &hgo;
  void *go_data = wk_tensor_data(go);
  if (ed && ew && odn.memory_desc_equal(go_want[0], go_want[1]) && !odn.memory_desc_equal(go_want[0], &hgo)) {
    if (!(go_tmp = odn_alloc(odn.memory_desc_get_size(go_want[0])))) {
      s = wk_error(WK_ERR_NO_MEMORY, "%s(): out of memory for a layout copy", op);
      goto fail;
    }
    if ((s = odn_reorder(op, &hgo, go_data, go_want[0], go_tmp))) goto fail;
    go_have = go_want[0];
    go_data = go_tmp;
  }
  if (mask[0]) {
    if (!(gi = g.nhwc ? odn_meta_empty_nhwc(ctx, 0) : wk_meta_empty(ctx, 0))) goto fail;
    const odn_prim *p = odn_entry_val(ed);
    plain_act(&hgi, gi, g.N, g.C, g.H, g.W, dt);
    plain_wei(&hw, w, &g);
    odn_arg a[3] = {{DNNL_ARG_DIFF_DST, go_want[0], go_have, go_data, false},
                    {DNNL_ARG_WEIGHTS, &p->md[1], &hw, wk_tensor_data(w), false},
                    {DNNL_ARG_DIFF_SRC, &p->md[0], &hgi, wk_tensor_data(gi), true}};
    /* its own layout (on AVX-512 f32 not the forward's: OIhw16o16i, not
     * OIhw16i16o), so its own copy, made at a second use of this version */
    odn_wentry *we = NULL;
    if (!(s = odn_weight_arg(op, w, &a[1], false, &we))) s = odn_exec(op, p, a, 3);
    odn_weight_unpin(we);
    if (s) goto fail;
  }
  if (ew) {
    /* weights' gradient is computed even when only the bias' is asked for */
    wk_tensor *gwt = odn_meta_empty_like_format(ctx, 1, w); /* the weight's format (channels_last weights) */
    if (!gwt || (mask[2] && !(gb = wk_meta_empty(ctx, 2)))) {
      wk_release(gwt);
      goto fail;
    }
    const odn_prim *p = odn_entry_val(ew);
    plain_act(&hx, x, g.N, g.C, g.H, g.W, dt);
    plain_wei(&hgw, gwt, &g);
    odn_arg a[4] = {{DNNL_ARG_SRC, &p->md[0], &hx, wk_tensor_data(x), false},
                    {DNNL_ARG_DIFF_DST, go_want[1], go_have, go_data, false},
                    {DNNL_ARG_DIFF_WEIGHTS, &p->md[1], &hgw, wk_tensor_data(gwt), true},
                    {DNNL_ARG_DIFF_BIAS, NULL, &hgb, NULL, true}};
    if (gb) {
      odn_md_of(&hgb, gb);
      a[3].data = wk_tensor_data(gb);
    }
    s = odn_exec(op, p, a, gb ? 4 : 3);
    if (mask[1])
      gw = gwt;
    else
      wk_release(gwt);
    if (s) goto fail;
  }
  odn_free(go_tmp);
  odn_cache_unpin(ed);
  odn_cache_unpin(ew);
  outs[0] = gi ? WK_VT(gi) : WK_VNONE;
  outs[1] = gw ? WK_VT(gw) : WK_VNONE;
  outs[2] = gb ? WK_VT(gb) : WK_VNONE;
  return WK_OK;
fail:
  if (!s) s = wk_last_error();
  odn_free(go_tmp);
  odn_cache_unpin(ed);
  odn_cache_unpin(ew);
  wk_release(gi);
  wk_release(gw);
  wk_release(gb);
  return s;
}

wk_status odn_register_conv(void) {
  wk_status s = odn_reg("conv2d", k_conv2d, conv2d_supports, NULL);
  if (!s) s = odn_reg("conv2d_backward", k_conv2d_backward, bwd_supports, NULL);
  return s;
}
