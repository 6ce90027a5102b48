/* onednn plugin: convolutions with one output position whose window holds
 * the whole image — a 1x1 image under a 3x3 kernel padded by 1, or a 2x2
 * image under a stride-2 3x3 kernel, as in ResNet's last stage on 32x32
 * inputs. The taps that meet the image form an HxW block of the kernel, the
 * rest only meet padding, so the convolution is a matrix product of the
 * image as an [N, C*H*W] matrix with that block of the weight ([O, C*H*W]):
 * the forward and the data gradient are matmuls, and the weight gradient is
 * one [O, N] x [N, C*H*W] product in the block and zero elsewhere. oneDNN's
 * direct convolution computes every tap of the weight gradient there
 * (several times the forward's time, more in bf16). */
#include <stdlib.h>
#include <string.h>
#include <wick/sdk/half.h>

#include "onednn.h"
#include "conv_point.h"

/* The first tap of the block that meets the image, when the geometry is this case. */
bool odn_conv_point(int64_t H, int64_t W, int64_t oh, int64_t ow, int64_t groups, const int64_t pl[2],
                    const int64_t dl[2], int64_t kh, int64_t kw, int64_t *ty, int64_t *tx) {
  static int off = -1; /* WICK_ONEDNN_POINT_CONV=0: oneDNN's convolution instead (for measuring) */
  if (off < 0) {
    const char *e = getenv("WICK_ONEDNN_POINT_CONV");
    off = e && !strcmp(e, "0");
  }
  if (off || oh != 1 || ow != 1 || groups != 1 || (kh == 1 && kw == 1)) return false;
  if (H == 1 && W == 1) { /* one pixel: any dilation, one tap */
    if (pl[0] % dl[0] || pl[1] % dl[1]) return false; /* no tap meets it: the output is the bias */
    *ty = pl[0] / dl[0];
    *tx = pl[1] / dl[1];
    return *ty < kh && *tx < kw;
  }
  /* an undilated window that starts in the padding and covers the image */
  if (dl[0] != 1 || dl[1] != 1 || pl[0] + H > kh || pl[1] + W > kw) return false;
  *ty = pl[0];
  *tx = pl[1];
  return true;
}

typedef struct {
  char tag[8];
  int32_t dt, has_bias;
  int64_t M, K, N;
  int64_t sa[2], sb[2];
} pmm_key;

/* The plain descriptors of a key's operands: a and b strided, c dense, bias [1, N]. */
static void pmm_descs(const pmm_key *k, dnnl_memory_desc_t *a, dnnl_memory_desc_t *b, dnnl_memory_desc_t *bias,
                      dnnl_memory_desc_t *c) {
  int64_t da[2] = {k->M, k->K}, db[2] = {k->K, k->N}, dc[2] = {k->M, k->N}, sc[2] = {k->N, 1}, dbias[2] = {1, k->N};
  dnnl_data_type_t dt = (dnnl_data_type_t)k->dt;
  odn_md_strided(a, 2, da, k->sa, dt);
  odn_md_strided(b, 2, db, k->sb, dt);
  odn_md_strided(c, 2, dc, sc, dt);
  odn_md_strided(bias, 2, dbias, sc, dt);
}

static odn_prim *pmm_make(void *v) {
  const pmm_key *k = v;
  dnnl_memory_desc_t a, b, bias, c;
  pmm_descs(k, &a, &b, &bias, &c);
  dnnl_matmul_desc_t md;
  if (odn_check(odn.matmul_desc_init(&md, &a, &b, k->has_bias ? &bias : NULL, &c), "conv2d", "matmul description"))
    return NULL;
  dnnl_query_t q[1] = {dnnl_query_undef};
  return odn_prim_create("conv2d", &md, NULL, NULL, q, 1);
}

/* c[M, N] (dense) = a[M, K] @ b[K, N] (+ bias[N]); a and b strided, each
 * with a unit stride (oneDNN's fast paths). */
static wk_status pmm(const char *op, dnnl_data_type_t dt, int64_t M, int64_t K, int64_t N, const void *a,
                     const int64_t sa[2], const void *b, const int64_t sb[2], const void *bias, void *c) {
  pmm_key k;
  memset(&k, 0, sizeof k); /* the key is hashed as bytes */
  memcpy(k.tag, "convpt", 7);
  k.dt = (int32_t)dt;
  k.has_bias = bias != NULL;
  k.M = M;
  k.K = K;
  k.N = N;
  memcpy(k.sa, sa, sizeof k.sa);
  memcpy(k.sb, sb, sizeof k.sb);
  odn_entry *e = odn_prim_get(&k, sizeof k, pmm_make, &k);
  if (!e) return wk_last_error();
  dnnl_memory_desc_t ma, mb, mbias, mc;
  pmm_descs(&k, &ma, &mb, &mbias, &mc);
  odn_arg ar[4] = {{DNNL_ARG_SRC, NULL, &ma, (void *)a, false},
                   {DNNL_ARG_WEIGHTS, NULL, &mb, (void *)b, false},
                   {DNNL_ARG_DST, NULL, &mc, c, true},
                   {DNNL_ARG_BIAS, NULL, &mbias, (void *)bias, false}};
  wk_status s = odn_exec(op, odn_entry_val(e), ar, bias ? 4 : 3);
  odn_cache_unpin(e);
  return s;
}

/* A batched [N, C, H, W] tensor as an [N, C*H*W] matrix: its element
 * strides, when each sample is contiguous (for 1x1 images, when one of the
 * strides is 1): what oneDNN's fast matmul paths read. */
static bool mat_view(const wk_tensor *t, int64_t s[2]) {
  if (wk_tensor_dim(t) != 4) return false;
  const int64_t *st = wk_tensor_strides(t), *sz = wk_tensor_sizes(t);
  s[0] = st[0];
  if (sz[2] == 1 && sz[3] == 1) {
    s[1] = st[1];
    return s[1] == 1 || s[0] == 1;
  }
  s[1] = 1;
  return st[3] == 1 && st[2] == sz[3] && st[1] == sz[2] * sz[3];
}

/* The [O, C, H, W] block of w from tap (ty, tx), dense, into out (element size es). */
static void tap_gather(const wk_tensor *w, int64_t ty, int64_t tx, int64_t H, int64_t W, size_t es, char *out) {
  const int64_t *s = wk_tensor_strides(w), *z = wk_tensor_sizes(w);
  const char *base = (const char *)wk_tensor_data(w) + (ty * s[2] + tx * s[3]) * (int64_t)es;
  char *d = out;
  for (int64_t o = 0; o < z[0]; o++)
    for (int64_t c = 0; c < z[1]; c++)
      for (int64_t y = 0; y < H; y++)
        for (int64_t x = 0; x < W; x++, d += es)
          memcpy(d, base + (o * s[0] + c * s[1] + y * s[2] + x * s[3]) * (int64_t)es, es);
}

bool odn_conv_point_supported(const wk_tensor *x, const wk_tensor *go) {
  int64_t s[2];
  return mat_view(x, s) && (!go || mat_view(go, s));
}

wk_status odn_conv_point_fwd(const char *op, const wk_tensor *x, const wk_tensor *w, const wk_tensor *b, int64_t ty,
                             int64_t tx, dnnl_data_type_t dt, wk_tensor *y) {
  const int64_t N = wk_tensor_size(x, 0), H = wk_tensor_size(x, 2), W = wk_tensor_size(x, 3), O = wk_tensor_size(w, 0);
  const int64_t K = wk_tensor_size(w, 1) * H * W;
  size_t es = wk_dtype_size(wk_tensor_dtype(w));
  char *wc = odn_alloc((size_t)(O * K) * es);
  if (!wc) return wk_error(WK_ERR_NO_MEMORY, "%s(): out of memory for a weight block", op);
  tap_gather(w, ty, tx, H, W, es, wc);
  int64_t sx[2], swt[2] = {1, K}; /* the block transposed: [K, O] */
  mat_view(x, sx);
  wk_status s = pmm(op, dt, N, K, O, wk_tensor_data(x), sx, wc, swt, b ? wk_tensor_data(b) : NULL, wk_tensor_data(y));
  odn_free(wc);
  return s;
}

wk_status odn_conv_point_bwd(const char *op, const wk_tensor *go, const wk_tensor *x, const wk_tensor *w, int64_t ty,
                             int64_t tx, dnnl_data_type_t dt, wk_tensor *gi, wk_tensor *gw, wk_tensor *gb) {
  const int64_t N = wk_tensor_size(x, 0), H = wk_tensor_size(x, 2), W = wk_tensor_size(x, 3), O = wk_tensor_size(w, 0);
  const int64_t C = wk_tensor_size(w, 1), K = C * H * W;
  const wk_dtype wdt = wk_tensor_dtype(w);
  size_t es = wk_dtype_size(wdt);
  int64_t sgo[2], sx[2];
  mat_view(go, sgo);
  mat_view(x, sx);
  wk_status s = WK_OK;
  if (gi) { /* gi[N, K] = go[N, O] @ block[O, K] (gi is contiguous) */
    char *wc = odn_alloc((size_t)(O * K) * es);
    if (!wc) return wk_error(WK_ERR_NO_MEMORY, "%s(): out of memory for a weight block", op);
    tap_gather(w, ty, tx, H, W, es, wc);
    int64_t swc[2] = {K, 1};
    s = pmm(op, dt, N, O, K, wk_tensor_data(go), sgo, wc, swc, NULL, wk_tensor_data(gi));
    odn_free(wc);
    if (s) return s;
  }
  if (gw) { /* gw = 0 except in the block: [O, K] = go^T[O, N] @ x[N, K] */
    char *t = odn_alloc((size_t)(O * K) * es);
    if (!t) return wk_error(WK_ERR_NO_MEMORY, "%s(): out of memory for a weight gradient", op);
    int64_t sgot[2] = {sgo[1], sgo[0]};
    s = pmm(op, dt, O, N, K, wk_tensor_data(go), sgot, wk_tensor_data(x), sx, NULL, t);
    if (!s) {
      const int64_t kh = wk_tensor_size(w, 2), kw = wk_tensor_size(w, 3);
      char *g = wk_tensor_data(gw); /* fresh and dense [O, C, kh, kw]: row-major or channels_last */
      const int64_t *gs = wk_tensor_strides(gw);
      memset(g, 0, (size_t)(O * C * kh * kw) * es);
      const char *src = t;
      for (int64_t o = 0; o < O; o++)
        for (int64_t c = 0; c < C; c++)
          for (int64_t y = 0; y < H; y++)
            for (int64_t xx = 0; xx < W; xx++, src += es)
              memcpy(g + (o * gs[0] + c * gs[1] + (ty + y) * gs[2] + (tx + xx) * gs[3]) * (int64_t)es, src, es);
    }
    odn_free(t);
    if (s) return s;
  }
  if (gb) { /* the sum of go over the batch, accumulated in f32 */
    const char *g = wk_tensor_data(go);
    char *out = wk_tensor_data(gb);
    for (int64_t o = 0; o < O; o++) {
      float acc = 0;
      for (int64_t n = 0; n < N; n++) {
        const char *p = g + (n * sgo[0] + o * sgo[1]) * (int64_t)es;
        acc += wdt == WK_BF16 ? wk_bf16_to_f32(*(const uint16_t *)p) : *(const float *)p;
      }
      if (wdt == WK_BF16)
        ((uint16_t *)out)[o] = wk_f32_to_bf16(acc);
      else
        ((float *)out)[o] = acc;
    }
  }
  return WK_OK;
}
