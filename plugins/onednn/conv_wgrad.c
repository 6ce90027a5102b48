/* onednn plugin: the bf16 weight gradient of conv2d as one matrix product.
 *
 * On AMX machines oneDNN 2.6 runs bf16 convolutions on the tile unit, 4-8x
 * the f32 speed for the forward and the data gradient, but its weight
 * gradient (jit:avx512_core_amx_bf16) is slower than f32 on small images:
 * measured on a 2-vCPU Xeon (AMX, 1 thread, batch 128), 256->256 3x3 on 2x2
 * 26.2 ms (f32 14.9), 128->256 3x3 stride 2 on 4x4 10.6 ms (f32 3.5), the
 * 7x7 RGB stem 18.4 ms (f32 8.2); in a ResNet-18 bf16 training step it took
 * 161 of 274 ms of oneDNN time. As a GEMM (PyTorch's slow_conv2d way):
 *   gw[O, C*kh*kw] = go[O, N*oh*ow] @ col[N*oh*ow, C*kh*kw]
 * with col the unfolded input (im2col), one oneDNN matmul, which runs on the
 * tile unit at full speed for these shapes.
 *
 * This kernel is registered for conv2d_backward above the plugin's direct
 * one and takes the calls that ask for the weight gradient of a bf16
 * convolution (groups 1, no bias gradient, row-major tensors); the data
 * gradient, when asked for too, is the direct kernel's (a nested call with
 * only that part of the mask). Called directly (wk_op_call_kernel) with
 * other arguments, it hands them to the kernel below it.
 * WICK_ONEDNN_BF16_WGRAD=direct turns it off (for measuring). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "onednn.h"
#include "conv_point.h"

wk_status odn_register_conv_wgrad(void); /* plugin.c registers it */

#define WGRAD_PRIORITY (WK_PRIORITY_OPTIMIZED + 10) /* above conv.c's kernel */

typedef struct {
  const uint16_t *x;
  uint16_t *col;     /* [C*kh*kw, N*oh*ow] */
  const int32_t *at; /* [kh*kw, oh*ow]: the input offset in a plane under each tap, -1 in the padding */
  int64_t N, C, HW, kk, P;
} im2col_job;

/* Rows [b, e) of col: row (c, tap) holds, for every (n, oy, ox), the input
 * element under that tap, 0 in the padding. A gather through the tap's
 * offset table: an image's oh*ow outputs are one run of col (ResNet's are
 * 1-16 wide rows, too short for row copies). */
static void im2col_rows(void *v, int64_t b, int64_t e) {
  const im2col_job *j = v;
  const int64_t P = j->P, M = j->N * P;
  for (int64_t r = b; r < e; r++) {
    const int64_t c = r / j->kk;
    const int32_t *restrict at = j->at + (r % j->kk) * P;
    uint16_t *restrict out = j->col + r * M;
    for (int64_t n = 0; n < j->N; n++, out += P) {
      const uint16_t *restrict plane = j->x + (n * j->C + c) * j->HW;
      for (int64_t q = 0; q < P; q++) {
        int32_t i = at[q];
        uint16_t val = plane[i < 0 ? 0 : i];
        out[q] = i < 0 ? 0 : val;
      }
    }
  }
}

/* The offset tables of im2col_job.at. */
static void tap_offsets(int32_t *at, int64_t H, int64_t W, int64_t kh, int64_t kw, int64_t oh, int64_t ow,
                        const int64_t st[2], const int64_t pl[2], const int64_t dl[2]) {
  for (int64_t ky = 0; ky < kh; ky++)
    for (int64_t kx = 0; kx < kw; kx++)
      for (int64_t oy = 0; oy < oh; oy++)
        for (int64_t ox = 0; ox < ow; ox++) {
          int64_t iy = oy * st[0] - pl[0] + ky * dl[0], ix = ox * st[1] - pl[1] + kx * dl[1];
          *at++ = iy < 0 || iy >= H || ix < 0 || ix >= W ? -1 : (int32_t)(iy * W + ix);
        }
}

typedef struct {
  const uint16_t *go;
  uint16_t *got; /* [O, N, P] */
  int64_t N, O, P;
} trans_job;

/* go [N, O, P] -> [O, N, P], output rows o in [b, e) */
static void go_transpose(void *v, int64_t b, int64_t e) {
  const trans_job *j = v;
  for (int64_t o = b; o < e; o++)
    for (int64_t n = 0; n < j->N; n++)
      for (int64_t q = 0; q < j->P; q++) j->got[(o * j->N + n) * j->P + q] = j->go[(n * j->O + o) * j->P + q];
}

typedef struct {
  char tag[8];
  int64_t M, K, N;         /* c[M, N] (dense) = a[M, K] @ b[K, N] */
  int64_t sa[2], sb[2];    /* a's and b's strides */
} wg_key;

static void wg_descs(const wg_key *k, dnnl_memory_desc_t *a, dnnl_memory_desc_t *b, dnnl_memory_desc_t *c) {
  int64_t da[2] = {k->M, k->K}, db[2] = {k->K, k->N}, dc[2] = {k->M, k->N}, sc[2] = {k->N, 1};
  odn_md_strided(a, 2, da, k->sa, dnnl_bf16);
  odn_md_strided(b, 2, db, k->sb, dnnl_bf16);
  odn_md_strided(c, 2, dc, sc, dnnl_bf16);
}

static odn_prim *wg_make(void *v) {
  const wg_key *k = v;
  dnnl_memory_desc_t a, b, c;
  wg_descs(k, &a, &b, &c);
  dnnl_matmul_desc_t md;
  if (odn_check(odn.matmul_desc_init(&md, &a, &b, NULL, &c), "conv2d_backward", "matmul description")) return NULL;
  dnnl_query_t q[1] = {dnnl_query_undef};
  return odn_prim_create("conv2d_backward", &md, NULL, NULL, q, 1);
}

/* channels_last (NHWC) input and grad_output: col is [N*oh*ow, kh*kw*C],
 * a row per output position holding, tap by tap, the C channels of the input
 * pixel under it (one C-long copy), 0 in the padding. */
typedef struct {
  const uint16_t *x;
  uint16_t *col;
  const int32_t *at; /* as im2col_job's */
  int64_t C, HW, kk, P;
} im2row_job;

static void im2row_rows(void *v, int64_t b, int64_t e) {
  const im2row_job *j = v;
  const int64_t C = j->C, Kp = j->kk * C;
  for (int64_t m = b; m < e; m++) {
    const int64_t n = m / j->P, q = m % j->P;
    const uint16_t *img = j->x + n * j->HW * C;
    uint16_t *out = j->col + m * Kp;
    for (int64_t t = 0; t < j->kk; t++, out += C) {
      int32_t i = j->at[t * j->P + q];
      if (i < 0)
        memset(out, 0, (size_t)C * 2);
      else
        memcpy(out, img + (int64_t)i * C, (size_t)C * 2);
    }
  }
}

static bool wgrad_off(void) {
  static int off = -1;
  if (off < 0) {
    const char *e = getenv("WICK_ONEDNN_BF16_WGRAD");
    off = e && strcmp(e, "direct") == 0;
  }
  return off;
}

/* conv2d_backward(go, input, weight, stride, padding, dilation, groups, output_mask) */
static bool wgrad_supports(const wk_kernel_ctx *ctx, const wk_value *args) {
  (void)ctx;
  wk_tensor *go = WK_ARG_T(0), *x = WK_ARG_T(1), *w = WK_ARG_T(2);
  const int64_t *mask = args[7].u.ints;
  if (wgrad_off() || !odn_usable() || !odn_bf16() || !mask[1] || mask[2] || args[6].u.i != 1) return false;
  if (wk_tensor_dim(x) != 4 || wk_tensor_dtype(x) != WK_BF16 || wk_tensor_dtype(go) != WK_BF16 ||
      wk_tensor_dtype(w) != WK_BF16)
    return false;
  /* both row-major, or both channels_last (the weight is only read for its sizes) */
  bool rows = wk_tensor_is_contiguous(x) && wk_tensor_is_contiguous(go);
  bool cl = wk_is_contiguous_format(x, WK_CHANNELS_LAST) && wk_is_contiguous_format(go, WK_CHANNELS_LAST);
  if ((!rows && !cl) || wk_tensor_device(x).type != WK_DEVICE_CPU || wk_tensor_numel(x) == 0 ||
      wk_tensor_numel(go) == 0)
    return false;
  const int64_t *xs = wk_tensor_sizes(x), *ws = wk_tensor_sizes(w), *ys = wk_tensor_sizes(go);
  int64_t ty, tx, pl[2] = {args[4].u.ints[0], args[4].u.ints[1]}, dl[2] = {args[5].u.ints[0], args[5].u.ints[1]};
  /* ResNet's one-position convolutions are conv_point.c's (a smaller product) */
  if (odn_conv_point(xs[2], xs[3], ys[2], ys[3], 1, pl, dl, ws[2], ws[3], &ty, &tx)) return false;
  /* oneDNN's direct kernel is as fast on the larger stride-1 images (64->64
   * 3x3 on 8x8: 1.5 ms direct, 1.4 ms matmul plus 4 ms unfolding) */
  const int64_t st = args[3].u.ints[0] > args[3].u.ints[1] ? args[3].u.ints[0] : args[3].u.ints[1];
  if (st == 1 && ws[1] >= 16 && ws[2] * ws[3] > 1 && ys[2] * ys[3] > 16) return false;
  if (xs[2] * xs[3] > INT32_MAX) return false; /* offsets in a plane are int32 */
  /* col must stay reasonable: the unfolded input, 2 bytes an element */
  double col = (double)ws[1] * (double)(ws[2] * ws[3]) * (double)(xs[0] * ys[2] * ys[3]) * 2;
  return col <= (double)(256 << 20);
}

/* out (gw, any strides) from a dense [O, C, kh, kw] (ohwi false) or
 * [O, kh, kw, C] (ohwi true) buffer. */
static void store_weights(wk_tensor *gw, const uint16_t *src, bool ohwi) {
  const int64_t *z = wk_tensor_sizes(gw), *st = wk_tensor_strides(gw);
  uint16_t *d = wk_tensor_data(gw);
  for (int64_t o = 0; o < z[0]; o++)
    for (int64_t c = 0; c < z[1]; c++)
      for (int64_t y = 0; y < z[2]; y++)
        for (int64_t x = 0; x < z[3]; x++)
          d[o * st[0] + c * st[1] + y * st[2] + x * st[3]] =
              src[ohwi ? ((o * z[2] + y) * z[3] + x) * z[1] + c : ((o * z[1] + c) * z[2] + y) * z[3] + x];
}

static wk_status wgrad(const char *op, wk_tensor *go, wk_tensor *x, wk_tensor *gw, const wk_value *args) {
  const int64_t *xs = wk_tensor_sizes(x), *ws = wk_tensor_sizes(gw), *ys = wk_tensor_sizes(go);
  int64_t st[2], pl[2], dl[2];
  for (int i = 0; i < 2; i++) {
    st[i] = args[3].u.ints[i];
    pl[i] = args[4].u.ints[i];
    dl[i] = args[5].u.ints[i];
  }
  const int64_t O = ws[0], C = xs[1], kk = ws[2] * ws[3], K = C * kk, P = ys[2] * ys[3], M = xs[0] * P;
  /* channels_last: x and go are NHWC, no transposes; the product comes out
   * as [O, kh, kw, C], a channels_last weight's own order */
  const bool cl = !(wk_tensor_is_contiguous(x) && wk_tensor_is_contiguous(go)); /* as wgrad_supports decided */
  const bool direct_out = cl ? wk_is_contiguous_format(gw, WK_CHANNELS_LAST) : wk_tensor_is_contiguous(gw);
  /* tensors, not odn_alloc: the core's storage cache hands the same memory
   * back every step (fresh pages fault in at ~1 ns a byte) */
  wk_tensor *tcol = wk_empty((int64_t[]){K * M}, 1, (wk_options){.dtype = WK_BF16});
  wk_tensor *tgot = cl ? NULL : wk_empty((int64_t[]){O * M}, 1, (wk_options){.dtype = WK_BF16});
  wk_tensor *tout = direct_out ? NULL : wk_empty((int64_t[]){O * K}, 1, (wk_options){.dtype = WK_BF16});
  int32_t *at = wk_malloc(sizeof(int32_t) * (size_t)(kk * P));
  wk_status s = WK_OK;
  if (!tcol || (!cl && !tgot) || (!direct_out && !tout) || !at) {
    s = wk_error(WK_ERR_NO_MEMORY, "%s(): out of memory for the unfolded input (%lld x %lld bf16)", op, (long long)K,
                 (long long)M);
    goto done;
  }
  uint16_t *col = wk_tensor_data(tcol);
  tap_offsets(at, xs[2], xs[3], ws[2], ws[3], ys[2], ys[3], st, pl, dl);
  wg_key k;
  memset(&k, 0, sizeof k); /* hashed as bytes */
  memcpy(k.tag, "wgradmm", 8);
  k.M = O;
  k.K = M;
  k.N = K;
  const void *a;
  if (cl) {
    im2row_job j = {wk_tensor_data(x), col, at, C, xs[2] * xs[3], kk, P};
    wk_parallel_for(0, M, 1 + 16384 / (K ? K : 1), im2row_rows, &j);
    a = wk_tensor_data(go); /* [M, O]: a = go^T */
    k.sa[0] = 1;
    k.sa[1] = O;
    k.sb[0] = K;
    k.sb[1] = 1;
  } else {
    im2col_job j = {wk_tensor_data(x), col, at, xs[0], C, xs[2] * xs[3], kk, P};
    wk_parallel_for(0, K, 1 + 16384 / (M ? M : 1), im2col_rows, &j);
    trans_job t = {wk_tensor_data(go), wk_tensor_data(tgot), xs[0], O, P};
    wk_parallel_for(0, O, 1 + 16384 / (M ? M : 1), go_transpose, &t);
    a = wk_tensor_data(tgot); /* [O, M] */
    k.sa[0] = M;
    k.sa[1] = 1;
    k.sb[0] = 1; /* b = col^T */
    k.sb[1] = M;
  }
  odn_entry *e = odn_prim_get(&k, sizeof k, wg_make, &k);
  if (!e) {
    s = wk_last_error();
    goto done;
  }
  dnnl_memory_desc_t ma, mb, mc;
  wg_descs(&k, &ma, &mb, &mc);
  void *out = direct_out ? wk_tensor_data(gw) : wk_tensor_data(tout);
  odn_arg ar[3] = {{DNNL_ARG_SRC, NULL, &ma, (void *)a, false},
                   {DNNL_ARG_WEIGHTS, NULL, &mb, col, false},
                   {DNNL_ARG_DST, NULL, &mc, out, true}};
  s = odn_exec(op, odn_entry_val(e), ar, 3);
  odn_cache_unpin(e);
  if (!s && !direct_out) store_weights(gw, out, cl);
done:
  wk_free(at);
  wk_release(tcol);
  wk_release(tgot);
  wk_release(tout);
  return s;
}

/* The kernel below this one (conv.c's), for a call made to this kernel
 * directly (wk_op_call_kernel) with arguments it does not take. */
static wk_status below(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  for (int i = 0; i < wk_op_num_kernels(ctx->op); i++) {
    int32_t dev, prio;
    const char *name, *owner;
    if (wk_op_kernel_info(ctx->op, i, &dev, &prio, &name, &owner) == WK_OK && dev == WK_DEVICE_CPU &&
        prio < WGRAD_PRIORITY)
      return wk_op_call_kernel(ctx->op, i, args, 8, outs);
  }
  return wk_error(WK_ERR_UNSUPPORTED, "conv2d_backward(): no cpu kernel below the onednn bf16 weight-gradient one");
}

static wk_status k_wgrad(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "conv2d_backward";
  if (!wgrad_supports(ctx, args)) return below(ctx, args, outs);
  wk_tensor *gi = NULL, *gw = NULL;
  wk_status s = WK_OK;
  if (args[7].u.ints[0]) { /* the data gradient: the next kernel's */
    wk_value a[8], r[3];
    memcpy(a, args, sizeof a);
    int64_t m[3] = {1, 0, 0};
    a[7].u.ints = m;
    if ((s = wk_op_call(ctx->op, a, 8, r))) return s;
    gi = r[0].tag == WK_V_TENSOR ? r[0].u.t : NULL;
    for (int i = 1; i < 3; i++)
      if (r[i].tag == WK_V_TENSOR) wk_release(r[i].u.t);
    if (!gi) return wk_error(WK_ERR_INTERNAL, "%s(): the data gradient came back empty", op);
  }
  if (!(gw = odn_meta_empty_like_format(ctx, 1, WK_ARG_T(2))) || (s = wgrad(op, WK_ARG_T(0), WK_ARG_T(1), gw, args))) {
    if (!s) s = wk_last_error();
    wk_release(gi);
    wk_release(gw);
    return s;
  }
  outs[0] = gi ? WK_VT(gi) : WK_VNONE;
  outs[1] = WK_VT(gw);
  outs[2] = WK_VNONE;
  return WK_OK;
}

wk_status odn_register_conv_wgrad(void) {
  wk_kernel_desc d = {sizeof d,       "conv2d_backward", WK_DEVICE_CPU, WGRAD_PRIORITY,             k_wgrad,
                      wgrad_supports, NULL,              "onednn (bf16 weight gradient as a matmul)"};
  return wk_kernel_register(&d);
}
