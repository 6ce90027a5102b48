/* onednn plugin: the int8 compute ops quantized_conv2d and quantized_linear
 * with oneDNN's int8 convolution and matmul (u8 activations x s8 weights,
 * s32 accumulation: VNNI's vpdpbusd on this CPU, with no 16-bit
 * intermediate saturation).
 *
 * Numerics: bit-exact with the cpu plugin's reference kernels, by
 * construction. oneDNN computes only the integer part, the accumulator
 *   acc = sum (x - x_zp) * w     (x_zp passed as oneDNN's source zero point;
 *                                 weights must have zero points 0, as the
 *                                 fbgemm/x86 qconfigs' symmetric ones do)
 * into an s32 destination with no scales, bias or post-ops. That integer is
 * exact in both kernels. The requantisation is then done here with the
 * reference's float32 arithmetic, operation for operation (fbgemm's
 * ReQuantizeOutput with a float bias):
 *   y = clamp(nearbyint((acc + bias / (sx * sw)) * ((sx * sw) / sy)) + y_zp,
 *             relu ? y_zp : 0, 255)
 * while the s32 result is read out of oneDNN's channels-last layout into
 * the u8 result, which keeps that layout (sizes [N, C, H, W], strides
 * channels-last, as PyTorch's quantized conv returns): a chain of int8
 * convs then runs without layout reorders. (Letting oneDNN scale and add the zero point in its
 * own kernel would differ by one quantum in rare near-tie cases: it adds the
 * zero point in float before rounding.)
 *
 * Weights are reordered into oneDNN's blocked s8 layout once per weight
 * version (wcache.c) and primitives are cached per geometry and source zero
 * point. Calls oneDNN cannot take (weight zero points other than 0, qint32
 * or per-channel activations, inside a pool chunk) fall back to the cpu
 * plugin's kernel; WICK_DISABLE_PLUGINS=onednn runs the reference alone. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onednn.h"
#include <wick/sdk/kernel_util.h>

/* ---- weight parameters ---------------------------------------------------------------------- */
/* The weight's per-output-channel scales as float (per-tensor ones repeated),
 * when every zero point is 0; false otherwise (nothing allocated). */
static bool weight_scales(wk_tensor *w, int64_t nout, float **out) {
  *out = NULL;
  wk_qscheme qs = wk_tensor_qscheme(w);
  if (wk_tensor_dtype(w) != WK_QINT8) return false;
  float *s = malloc(sizeof(float) * (size_t)(nout ? nout : 1));
  if (!s) return false;
  if (qs == WK_PER_TENSOR_AFFINE) {
    if (wk_q_zero_point(w) != 0) {
      free(s);
      return false;
    }
    for (int64_t i = 0; i < nout; i++) s[i] = (float)wk_q_scale(w);
    *out = s;
    return true;
  }
  if (qs != WK_PER_CHANNEL_AFFINE || wk_q_per_channel_axis(w) != 0) {
    free(s);
    return false;
  }
  wk_tensor *st = wk_q_per_channel_scales(w), *zt = wk_q_per_channel_zero_points(w);
  double *sd = malloc(sizeof(double) * (size_t)(nout ? nout : 1)), *zd = malloc(sizeof(double) * (size_t)(nout ? nout : 1));
  bool ok = st && zt && sd && zd && wk_tensor_numel(st) == nout && wk_tensor_numel(zt) == nout &&
            wk_tensor_to_f64(st, sd, nout) == WK_OK && wk_tensor_to_f64(zt, zd, nout) == WK_OK;
  for (int64_t i = 0; ok && i < nout; i++) {
    ok = zd[i] == 0;
    s[i] = (float)sd[i];
  }
  wk_release(st);
  wk_release(zt);
  free(sd);
  free(zd);
  if (!ok) {
    free(s);
    wk_clear_error();
    return false;
  }
  *out = s;
  return true;
}

/* ---- requantisation (the cpu plugin's, operation for operation) ------------------------------- */
typedef struct {
  float *mult, *bias_scaled; /* per output channel */
  int32_t ozp, lo;
} requant;

/* The u8 integers of result 0 (the meta function's shape, contiguous). */
static wk_tensor *u8_result(const wk_kernel_ctx *ctx) {
  const wk_meta_out *m = wk_kernel_meta(ctx, 0);
  if (!m) return wk_meta_empty(ctx, 0); /* records the error */
  wk_options o = {0};
  o.dtype = WK_U8;
  o.device = ctx->device;
  return wk_empty(m->sizes, m->ndim, o);
}

static wk_status requant_init(requant *rq, float sx, const float *wsc, int64_t nout, const float *bias, double osc,
                              int64_t ozp, bool relu, bool per_tensor) {
  rq->mult = malloc(sizeof(float) * (size_t)(nout ? nout : 1));
  rq->bias_scaled = malloc(sizeof(float) * (size_t)(nout ? nout : 1));
  if (!rq->mult || !rq->bias_scaled) return wk_error(WK_ERR_NO_MEMORY, "quantized kernel (onednn): out of memory");
  for (int64_t n = 0; n < nout; n++) {
    float atws = sx * wsc[n];
    rq->mult[n] = atws / (float)osc;
    /* fbgemm: bias * (1 / atws) per tensor, bias / atws per channel */
    rq->bias_scaled[n] = !bias ? 0.0f : per_tensor ? bias[n] * (1.0f / atws) : bias[n] / atws;
  }
  rq->ozp = (int32_t)ozp;
  rq->lo = relu ? (int32_t)ozp : 0;
  return WK_OK;
}

static void requant_free(requant *rq) {
  free(rq->mult);
  free(rq->bias_scaled);
}

/* nearbyintf(v) for |v| < 2^22 without a libm call (vectorisable): adding
 * and subtracting 1.5 * 2^23 rounds to an integer in the current (nearest,
 * ties-to-even) mode. Larger magnitudes stay larger than the u8 range with
 * their sign, so the clamp below gives the reference's result for them too. */
static inline float round_even(float v) {
  const float magic = 12582912.0f;
  return (v + magic) - magic;
}

/* acc [rows, C] (row-major: channels last) -> y: element (r, c) goes to
 * y[(r / inner) * C * inner + c * inner + r % inner]; inner = 1 is a plain
 * [rows, C] matrix (linear), inner = H * W an NCHW tensor (conv). */
typedef struct {
  const int32_t *acc;
  uint8_t *y;
  int64_t C, inner;
  const requant *rq;
} rq_job;

/* A loop built for AVX-512, AVX2 and the baseline, picked at load time (GCC's
 * function multiversioning), vectorised, and with fp-contract off: no
 * product is fused into an add (the reference rounds each). Elsewhere a
 * plain function (clang contracts only with FP_CONTRACT on: turned off in
 * the body). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define ODN_VEC __attribute__((target_clones("avx512f", "avx2", "default"), optimize("O3", "fp-contract=off")))
#elif defined(__GNUC__) && !defined(__clang__)
#define ODN_VEC __attribute__((optimize("O3", "fp-contract=off")))
#else
#define ODN_VEC
#endif

/* One row of C channels into contiguous u8 (the channels-last and linear
 * case): written to vectorise, compiled for AVX-512 / AVX2 / baseline with
 * the best picked at load time. The same arithmetic as rq_run's loop. */
ODN_VEC static void
rq_row(const int32_t *restrict a, uint8_t *restrict y, const float *restrict bias, const float *restrict mult,
       int64_t C, float lo, float hi, int32_t ozp) {
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif
  for (int64_t c = 0; c < C; c++) {
    float v = ((float)a[c] + bias[c]) * mult[c];
    v = (v + 12582912.0f) - 12582912.0f;
    v = v < lo ? lo : v;
    v = v > hi ? hi : v;
    y[c] = (uint8_t)((int32_t)v + ozp);
  }
}

static void rq_run(void *vj, int64_t b, int64_t e) {
  const rq_job *j = vj;
  if (j->inner == 1) {
    for (int64_t r = b; r < e; r++)
      rq_row(j->acc + r * j->C, j->y + r * j->C, j->rq->bias_scaled, j->rq->mult, j->C, (float)(j->rq->lo - j->rq->ozp),
             (float)(255 - j->rq->ozp), j->rq->ozp);
    return;
  }
  /* locals (u8 stores may alias anything: the loop would reload every field) */
  const float *restrict mult = j->rq->mult, *restrict bias = j->rq->bias_scaled;
  const int32_t ozp = j->rq->ozp;
  const float lo = (float)(j->rq->lo - ozp), hi = (float)(255 - ozp);
  const int64_t C = j->C, inner = j->inner;
  for (int64_t r = b; r < e; r++) {
    const int32_t *restrict a = j->acc + r * C;
    uint8_t *restrict y = j->y + (r / inner) * C * inner + r % inner;
    for (int64_t c = 0; c < C; c++) { /* requantise one accumulator */
      float v = round_even(((float)a[c] + bias[c]) * mult[c]);
      v = v < lo ? lo : v > hi ? hi : v;
      y[c * inner] = (uint8_t)((int32_t)v + ozp);
    }
  }
}

static void requant_out(const int32_t *acc, uint8_t *y, int64_t rows, int64_t C, int64_t inner, const requant *rq) {
  rq_job j = {acc, y, C, inner, rq};
  int64_t grain = 16384 / (C ? C : 1);
  wk_parallel_for(0, rows, grain ? grain : 1, rq_run, &j);
}

/* The float bias (NULL when absent) as a contiguous f32 copy. */
static wk_status bias_f32(wk_tensor *b, wk_tensor **out) {
  *out = NULL;
  if (!b) return WK_OK;
  wk_tensor *c = wk_dtype_is_floating(wk_tensor_dtype(b)) ? wk_contiguous(b) : NULL;
  if (c && wk_tensor_dtype(c) != WK_F32) {
    wk_tensor *f = wk_to_dtype(c, WK_F32);
    wk_release(c);
    c = f;
  }
  if (!c) return wk_last_error();
  *out = c;
  return WK_OK;
}

/* ---- quantized_conv2d ------------------------------------------------------------------------ */
typedef struct {
  char tag[8];
  int64_t N, C, H, W, O, G, kh, kw, oh, ow;
  int64_t st[2], pl[2], pr[2], dl[2];
  int64_t sx[4]; /* input strides (elements) */
  int32_t xzp, pad;
} qconv_key;

static bool qconv_parse(const wk_kernel_ctx *ctx, const wk_value *args, qconv_key *k) {
  memset(k, 0, sizeof *k);
  memcpy(k->tag, "qconv2d", 8);
  if (!odn_usable()) return false;
  const wk_meta_out *m = wk_kernel_meta(ctx, 0);
  wk_tensor *x = WK_ARG_T(0), *w = WK_ARG_T(1);
  if (!m || wk_tensor_dim(x) != 4 || wk_tensor_dim(w) != 4 || wk_tensor_dtype(x) != WK_QUINT8 ||
      wk_tensor_qscheme(x) != WK_PER_TENSOR_AFFINE || wk_tensor_dtype(w) != WK_QINT8 ||
      wk_tensor_device(x).type != WK_DEVICE_CPU || wk_tensor_device(w).type != WK_DEVICE_CPU)
    return false;
  const int64_t *xs = wk_tensor_sizes(x), *ws = wk_tensor_sizes(w);
  k->N = xs[0], k->C = xs[1], k->H = xs[2], k->W = xs[3];
  k->O = ws[0], k->kh = ws[2], k->kw = ws[3];
  k->G = args[6].u.i;
  k->oh = m->sizes[2], k->ow = m->sizes[3];
  for (int i = 0; i < 2; i++) {
    int64_t in = i ? k->W : k->H, out = i ? k->ow : k->oh, kk = i ? k->kw : k->kh;
    k->st[i] = args[3].u.ints[i];
    k->pl[i] = args[4].u.ints[i];
    k->dl[i] = args[5].u.ints[i];
    k->pr[i] = (out - 1) * k->st[i] + k->dl[i] * (kk - 1) + 1 - in - k->pl[i];
  }
  memcpy(k->sx, wk_tensor_strides(x), sizeof k->sx);
  k->xzp = (int32_t)wk_q_zero_point(x);
  return k->N * k->C * k->H * k->W > 0 && k->O * ws[1] * k->kh * k->kw > 0 && k->oh > 0 && k->ow > 0;
}

static void qconv_wei_md(dnnl_memory_desc_t *md, const qconv_key *k, const int64_t *s, bool any) {
  int64_t cpg = k->C / k->G, opg = k->O / k->G;
  if (k->G > 1) {
    int64_t dims[5] = {k->G, opg, cpg, k->kh, k->kw}, st[5] = {s ? s[0] * opg : 0, s ? s[0] : 0, s ? s[1] : 0,
                                                               s ? s[2] : 0, s ? s[3] : 0};
    if (any) {
      dnnl_dims_t d = {k->G, opg, cpg, k->kh, k->kw};
      memset(md, 0, sizeof *md);
      odn.memory_desc_init_by_tag(md, 5, d, dnnl_s8, dnnl_format_tag_any);
    } else {
      odn_md_strided(md, 5, dims, st, dnnl_s8);
    }
  } else {
    dnnl_dims_t d = {k->O, cpg, k->kh, k->kw};
    memset(md, 0, sizeof *md);
    if (any)
      odn.memory_desc_init_by_tag(md, 4, d, dnnl_s8, dnnl_format_tag_any);
    else
      odn_md_strided(md, 4, (const int64_t[]){k->O, cpg, k->kh, k->kw}, s, dnnl_s8);
  }
}

static void qconv_acc_md(dnnl_memory_desc_t *md, const qconv_key *k) {
  dnnl_dims_t d = {k->N, k->O, k->oh, k->ow};
  memset(md, 0, sizeof *md);
  odn.memory_desc_init_by_tag(md, 4, d, dnnl_s32, dnnl_nhwc);
}

static odn_prim *qconv_make(void *v) {
  const qconv_key *k = v;
  const char *op = "quantized_conv2d";
  dnnl_memory_desc_t src, wei, dst;
  dnnl_dims_t xd = {k->N, k->C, k->H, k->W};
  memset(&src, 0, sizeof src);
  odn.memory_desc_init_by_tag(&src, 4, xd, dnnl_u8, dnnl_nhwc);
  qconv_wei_md(&wei, k, NULL, true);
  qconv_acc_md(&dst, k);
  dnnl_dims_t st, dl, pl, pr;
  for (int i = 0; i < 2; i++) st[i] = k->st[i], dl[i] = k->dl[i] - 1, pl[i] = k->pl[i], pr[i] = k->pr[i];
  dnnl_convolution_desc_t cd;
  if (odn_check(odn.dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, &src,
                                                          &wei, NULL, &dst, st, dl, pl, pr),
                op, "convolution description"))
    return NULL;
  dnnl_primitive_attr_t a = odn_attr(op);
  if (!a) return NULL;
  odn_prim *p = NULL;
  if (!k->xzp || !odn_check(odn.primitive_attr_set_zero_points(a, DNNL_ARG_SRC, 1, 0, &k->xzp), op, "zero points")) {
    dnnl_query_t q[3] = {dnnl_query_src_md, dnnl_query_weights_md, dnnl_query_dst_md};
    p = odn_prim_create(op, &cd, a, NULL, q, 3);
  }
  odn.primitive_attr_destroy(a);
  return p;
}

static bool qconv_supports(const wk_kernel_ctx *ctx, const wk_value *args) {
  qconv_key k;
  float *ws = NULL;
  bool ok = qconv_parse(ctx, args, &k) && weight_scales(WK_ARG_T(1), k.O, &ws);
  free(ws);
  return ok;
}

static wk_status k_qconv2d(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "quantized_conv2d";
  wk_tensor *x = WK_ARG_T(0), *w = WK_ARG_T(1), *b = WK_ARG_OPT_T(2);
  qconv_key k;
  float *wsc = NULL;
  if (!qconv_parse(ctx, args, &k) || !weight_scales(w, k.O, &wsc))
    return wk_error(WK_ERR_UNSUPPORTED, "%s(): the onednn kernel does not handle these arguments (the cpu kernel does)",
                    op);
  double osc = args[7].u.f;
  int64_t ozp = args[8].u.i;
  requant rq = {0};
  wk_tensor *bf = NULL, *y = NULL, *q = NULL;
  int32_t *acc = NULL;
  odn_entry *e = NULL;
  odn_wentry *we = NULL;
  wk_status s = bias_f32(b, &bf);
  if (!s)
    s = requant_init(&rq, (float)wk_q_scale(x), wsc, k.O, bf ? wk_tensor_data(bf) : NULL, osc, ozp, args[9].u.b,
                     wk_tensor_qscheme(w) == WK_PER_TENSOR_AFFINE);
  if (!s && !(e = odn_prim_get(&k, sizeof k, qconv_make, &k))) s = wk_last_error();
  int64_t nacc = k.N * k.O * k.oh * k.ow;
  if (!s && !(acc = odn_alloc(sizeof(int32_t) * (size_t)nacc)))
    s = wk_error(WK_ERR_NO_MEMORY, "%s(): out of memory for the int32 accumulators", op);
  if (!s) { /* u8 [N, O, oh, ow] channels-last, as PyTorch's quantized conv returns it: the
             * accumulators' order (a plain copy), and the next conv's input without a reorder */
    const wk_meta_out *m = wk_kernel_meta(ctx, 0);
    int64_t st[4] = {k.oh * k.ow * k.O, 1, k.ow * k.O, k.O};
    wk_options o = {0};
    o.dtype = WK_U8;
    o.device = ctx->device;
    if (!(y = wk_empty_strided(m->sizes, st, 4, o))) s = wk_last_error();
  }
  if (!s) {
    const odn_prim *p = odn_entry_val(e);
    dnnl_memory_desc_t hx, hw, hy;
    odn_md_strided(&hx, 4, wk_tensor_sizes(x), k.sx, dnnl_u8);
    qconv_wei_md(&hw, &k, wk_tensor_strides(w), false);
    qconv_acc_md(&hy, &k);
    odn_arg a[3] = {{DNNL_ARG_SRC, &p->md[0], &hx, wk_tensor_data(x), false},
                    {DNNL_ARG_WEIGHTS, &p->md[1], &hw, wk_tensor_data(w), false},
                    {DNNL_ARG_DST, &p->md[2], &hy, acc, true}};
    s = odn_weight_arg(op, w, &a[1], true, &we);
    if (!s) s = odn_exec(op, p, a, 3);
  }
  if (!s) {
    requant_out(acc, wk_tensor_data(y), k.N * k.oh * k.ow, k.O, 1, &rq);
    if (!(q = wk_make_per_tensor_quantized(y, osc, ozp))) s = wk_last_error();
  }
  odn_weight_unpin(we);
  odn_cache_unpin(e);
  odn_free(acc);
  requant_free(&rq);
  free(wsc);
  wk_release(bf);
  wk_release(y);
  return wk_kernel_done(s, q, outs);
}

/* ---- quantized_linear ------------------------------------------------------------------------ */
typedef struct {
  char tag[8];
  int64_t M, K, N;
  int64_t sw[2]; /* weight [N, K] strides */
  int32_t xzp, pad;
} qlin_key;

static bool qlin_parse(const wk_value *args, qlin_key *k) {
  memset(k, 0, sizeof *k);
  memcpy(k->tag, "qlinear", 8);
  if (!odn_usable()) return false;
  wk_tensor *x = WK_ARG_T(0), *w = WK_ARG_T(1);
  if (wk_tensor_dtype(x) != WK_QUINT8 || wk_tensor_qscheme(x) != WK_PER_TENSOR_AFFINE || wk_tensor_dim(w) != 2 ||
      !wk_tensor_is_contiguous(x) || wk_tensor_device(x).type != WK_DEVICE_CPU ||
      wk_tensor_device(w).type != WK_DEVICE_CPU)
    return false;
  k->N = wk_tensor_size(w, 0);
  k->K = wk_tensor_size(w, 1);
  k->M = k->K ? wk_tensor_numel(x) / k->K : 0;
  memcpy(k->sw, wk_tensor_strides(w), sizeof k->sw);
  k->xzp = (int32_t)wk_q_zero_point(x);
  return k->M > 0 && k->N > 0 && k->K > 0;
}

static void qlin_mds(const qlin_key *k, dnnl_memory_desc_t *a, dnnl_memory_desc_t *b, dnnl_memory_desc_t *c) {
  int64_t da[2] = {k->M, k->K}, sa[2] = {k->K, 1}, db[2] = {k->K, k->N}, sb[2] = {k->sw[1], k->sw[0]},
          dc[2] = {k->M, k->N}, sc[2] = {k->N, 1};
  odn_md_strided(a, 2, da, sa, dnnl_u8);
  odn_md_strided(b, 2, db, sb, dnnl_s8); /* w^T: [K, N] */
  odn_md_strided(c, 2, dc, sc, dnnl_s32);
}

static odn_prim *qlin_make(void *v) {
  const qlin_key *k = v;
  const char *op = "quantized_linear";
  dnnl_memory_desc_t a, b, c;
  qlin_mds(k, &a, &b, &c);
  dnnl_dims_t db = {k->K, k->N};
  memset(&b, 0, sizeof b);
  odn.memory_desc_init_by_tag(&b, 2, db, dnnl_s8, dnnl_format_tag_any);
  dnnl_matmul_desc_t md;
  if (odn_check(odn.matmul_desc_init(&md, &a, &b, NULL, &c), op, "matmul description")) return NULL;
  dnnl_primitive_attr_t at = odn_attr(op);
  if (!at) return NULL;
  odn_prim *p = NULL;
  if (!k->xzp || !odn_check(odn.primitive_attr_set_zero_points(at, DNNL_ARG_SRC, 1, 0, &k->xzp), op, "zero points")) {
    dnnl_query_t q[2] = {dnnl_query_undef, dnnl_query_weights_md};
    p = odn_prim_create(op, &md, at, NULL, q, 2);
  }
  odn.primitive_attr_destroy(at);
  return p;
}

static bool qlin_supports(const wk_kernel_ctx *ctx, const wk_value *args) {
  (void)ctx;
  qlin_key k;
  float *ws = NULL;
  bool ok = qlin_parse(args, &k) && weight_scales(WK_ARG_T(1), k.N, &ws);
  free(ws);
  return ok;
}

static wk_status k_qlinear(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "quantized_linear";
  wk_tensor *x = WK_ARG_T(0), *w = WK_ARG_T(1), *b = WK_ARG_OPT_T(2);
  qlin_key k;
  float *wsc = NULL;
  if (!qlin_parse(args, &k) || !weight_scales(w, k.N, &wsc))
    return wk_error(WK_ERR_UNSUPPORTED, "%s(): the onednn kernel does not handle these arguments (the cpu kernel does)",
                    op);
  double osc = args[3].u.f;
  int64_t ozp = args[4].u.i;
  requant rq = {0};
  wk_tensor *bf = NULL, *y = NULL, *q = NULL;
  int32_t *acc = NULL;
  odn_entry *e = NULL;
  odn_wentry *we = NULL;
  wk_status s = bias_f32(b, &bf);
  if (!s)
    s = requant_init(&rq, (float)wk_q_scale(x), wsc, k.N, bf ? wk_tensor_data(bf) : NULL, osc, ozp, args[5].u.b,
                     wk_tensor_qscheme(w) == WK_PER_TENSOR_AFFINE);
  if (!s && !(e = odn_prim_get(&k, sizeof k, qlin_make, &k))) s = wk_last_error();
  if (!s && !(acc = odn_alloc(sizeof(int32_t) * (size_t)(k.M * k.N))))
    s = wk_error(WK_ERR_NO_MEMORY, "%s(): out of memory for the int32 accumulators", op);
  if (!s && !(y = u8_result(ctx))) s = wk_last_error();
  if (!s) {
    const odn_prim *p = odn_entry_val(e);
    dnnl_memory_desc_t ma, mb, mc;
    qlin_mds(&k, &ma, &mb, &mc);
    odn_arg a[3] = {{DNNL_ARG_SRC, NULL, &ma, wk_tensor_data(x), false},
                    {DNNL_ARG_WEIGHTS, &p->md[1], &mb, wk_tensor_data(w), false},
                    {DNNL_ARG_DST, NULL, &mc, acc, true}};
    s = odn_weight_arg(op, w, &a[1], true, &we);
    if (!s) s = odn_exec(op, p, a, 3);
  }
  if (!s) {
    requant_out(acc, wk_tensor_data(y), k.M, k.N, 1, &rq);
    if (!(q = wk_make_per_tensor_quantized(y, osc, ozp))) s = wk_last_error();
  }
  odn_weight_unpin(we);
  odn_cache_unpin(e);
  odn_free(acc);
  requant_free(&rq);
  free(wsc);
  wk_release(bf);
  wk_release(y);
  return wk_kernel_done(s, q, outs);
}

wk_status odn_register_quantized(void) {
  wk_status s = odn_reg("quantized_conv2d", k_qconv2d, qconv_supports, NULL);
  if (!s) s = odn_reg("quantized_linear", k_qlinear, qlin_supports, NULL);
  return s;
}
