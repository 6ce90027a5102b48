/* quant plugin: the op quantized.add (PyTorch's torch.ops.quantized.add and
 * add_relu), declared by this plugin with its meta function and a cpu kernel,
 * as a third-party op plugin would:
 *   quantized.add(Tensor qa, Tensor qb, float scale, int zero_point, bool relu=False) -> Tensor
 * qa and qb: per-tensor quint8 of one shape. Each element:
 *   y = clamp(zero_point + nearbyint(f * (1 / scale)), relu ? zero_point : 0, 255),
 *   f = sa * (qa - za) + sb * (qb - zb)   (float32: dequantize, add, as
 *                                          QFunctional's composite computes it)
 * in one pass over the integers, the result with qa's strides when qa and qb
 * share a dense layout (channels-last activations stay channels-last). The
 * QFunctional add / add_relu modules call it; other layouts go through the
 * composite (dequantize, add, quantize). */
#include "quant.h"
#include <wick/sdk/kernel.h>
#include <wick/sdk/kernel_util.h>

#define QADD "quantized.add"

/* Both dense in the same dimension order with equal strides. */
static bool same_dense_layout(const wk_tensor *a, const wk_tensor *b) {
  int nd = wk_tensor_dim(a);
  if (nd != wk_tensor_dim(b)) return false;
  const int64_t *sa = wk_tensor_strides(a), *sb = wk_tensor_strides(b), *za = wk_tensor_sizes(a);
  for (int d = 0; d < nd; d++)
    if (za[d] != 1 && sa[d] != sb[d]) return false;
  /* dense: the strides sorted descending are the running products of the sizes */
  int idx[WK_MAX_DIMS], m = 0;
  for (int d = 0; d < nd; d++)
    if (za[d] != 1) idx[m++] = d;
  for (int i = 1; i < m; i++)
    for (int j = i; j > 0 && sa[idx[j]] > sa[idx[j - 1]]; j--) {
      int k = idx[j];
      idx[j] = idx[j - 1];
      idx[j - 1] = k;
    }
  int64_t want = 1;
  for (int i = m - 1; i >= 0; i--) {
    if (sa[idx[i]] != want) return false;
    want *= za[idx[i]];
  }
  return true;
}

bool qt_qadd_applies(const wk_tensor *a, const wk_tensor *b) {
  return a && b && wk_tensor_dtype(a) == WK_QUINT8 && wk_tensor_dtype(b) == WK_QUINT8 &&
         wk_tensor_qscheme(a) == WK_PER_TENSOR_AFFINE && wk_tensor_qscheme(b) == WK_PER_TENSOR_AFFINE &&
         wk_tensor_device(a).type == WK_DEVICE_CPU && wk_tensor_device(b).type == WK_DEVICE_CPU &&
         same_dense_layout(a, b);
}

static wk_status qadd_meta(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)op;
  wk_tensor *a = args[0].u.t, *b = args[1].u.t;
  for (int i = 0; i < 2; i++) {
    wk_tensor *t = i ? b : a;
    if (wk_tensor_dtype(t) != WK_QUINT8 || wk_tensor_qscheme(t) != WK_PER_TENSOR_AFFINE)
      return wk_error(WK_ERR_DTYPE, QADD "(): expected per-tensor quantized quint8 inputs, got %s for '%s'",
                      wk_dtype_name(wk_tensor_dtype(t)), i ? "qb" : "qa");
  }
  int nd = wk_tensor_dim(a);
  bool same = nd == wk_tensor_dim(b);
  for (int d = 0; same && d < nd; d++) same = wk_tensor_size(a, d) == wk_tensor_size(b, d);
  if (!same) return wk_error(WK_ERR_SHAPE, QADD "(): qa and qb must have the same shape");
  double sc = args[2].u.f;
  int64_t zp = args[3].u.i;
  if (!(sc > 0) || !isfinite(sc) || zp < 0 || zp > 255)
    return wk_error(WK_ERR_INVALID_ARG, QADD "(): scale %g must be positive and zero_point %lld within [0, 255]", sc,
                    (long long)zp);
  o->dtype = WK_QUINT8;
  o->ndim = nd;
  memcpy(o->sizes, wk_tensor_sizes(a), sizeof(int64_t) * (size_t)nd);
  return WK_OK;
}

typedef struct {
  const uint8_t *a, *b;
  uint8_t *y;
  float sa, sb, inv, lo, hi;
  int32_t za, zb, zp;
} qadd_job;

/* A loop built for AVX-512, AVX2 and the baseline, picked at load time (GCC's
 * function multiversioning), vectorised, and with fp-contract off: no
 * product is fused into an add (the reference rounds each). Elsewhere a
 * plain function (clang contracts only with FP_CONTRACT on: turned off in
 * the body). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define QT_VEC __attribute__((target_clones("avx512f", "avx2", "default"), optimize("O3", "fp-contract=off")))
#elif defined(__GNUC__) && !defined(__clang__)
#define QT_VEC __attribute__((optimize("O3", "fp-contract=off")))
#else
#define QT_VEC
#endif

/* fp-contract=off: sa * x + sb * y must not become a fused multiply-add (the
 * composite rounds both products) */
QT_VEC static void
qadd_range(const uint8_t *restrict a, const uint8_t *restrict b, uint8_t *restrict y, int64_t n, float sa, float sb,
           int32_t za, int32_t zb, float inv, float lo, float hi, int32_t zp) {
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif
  for (int64_t i = 0; i < n; i++) {
    float f = sa * (float)((int32_t)a[i] - za) + sb * (float)((int32_t)b[i] - zb);
    float v = f * inv;
    /* nearbyint for |v| < 2^22 (ties to even); beyond, the clamp decides alike */
    v = (v + 12582912.0f) - 12582912.0f;
    v = v < lo ? lo : v;
    v = v > hi ? hi : v;
    y[i] = (uint8_t)((int32_t)v + zp);
  }
}

static void qadd_run(void *vj, int64_t b, int64_t e) {
  const qadd_job *j = vj;
  qadd_range(j->a + b, j->b + b, j->y + b, e - b, j->sa, j->sb, j->za, j->zb, j->inv, j->lo, j->hi, j->zp);
}

static bool qadd_supports(const wk_kernel_ctx *ctx, const wk_value *args) {
  (void)ctx;
  return qt_qadd_applies(args[0].u.t, args[1].u.t);
}

static wk_status qadd_cpu(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *a = args[0].u.t, *b = args[1].u.t;
  if (!qt_qadd_applies(a, b))
    return wk_error(WK_ERR_UNSUPPORTED, QADD "(): the cpu kernel needs qa and qb in one dense layout");
  double sc = args[2].u.f;
  int32_t zp = (int32_t)args[3].u.i;
  bool relu = args[4].u.b;
  wk_options o = {0};
  o.dtype = WK_U8;
  o.device = ctx->device;
  wk_tensor *y = wk_empty_strided(wk_tensor_sizes(a), wk_tensor_strides(a), wk_tensor_dim(a), o);
  if (!y) return wk_last_error();
  /* PyTorch's quantize: x * (1.0f / scale) */
  qadd_job j = {wk_tensor_data(a), wk_tensor_data(b), wk_tensor_data(y), (float)wk_q_scale(a), (float)wk_q_scale(b),
                1.0f / (float)sc, (float)((relu ? zp : 0) - zp), (float)(255 - zp), (int32_t)wk_q_zero_point(a),
                (int32_t)wk_q_zero_point(b), zp};
  wk_parallel_for(0, wk_tensor_numel(a), 32768, qadd_run, &j);
  wk_tensor *q = wk_make_per_tensor_quantized(y, sc, zp);
  wk_release(y);
  return wk_kernel_done(q ? WK_OK : wk_last_error(), q, outs);
}

wk_status qt_register_ops(void) {
  wk_op *op = wk_op_find(QADD);
  if (!op) {
    wk_clear_error();
    op = wk_op_declare(QADD "(Tensor qa, Tensor qb, float scale, int zero_point, bool relu=False) -> Tensor",
                       WK_TAG_NONDIFF);
    if (!op) return wk_last_error();
    wk_status s = wk_op_set_meta(op, qadd_meta);
    if (s) return s;
  }
  return wk_kernel_register(&(wk_kernel_desc){.struct_size = sizeof(wk_kernel_desc),
                                              .op = QADD,
                                              .device_type = WK_DEVICE_CPU,
                                              .priority = WK_PRIORITY_REFERENCE,
                                              .fn = qadd_cpu,
                                              .supports = qadd_supports,
                                              .name = "quant.qadd_cpu"});
}

wk_tensor *qt_qadd(wk_tensor *a, wk_tensor *b, double scale, int64_t zp, bool relu) {
  wk_value args[5] = {WK_VT(a), WK_VT(b), WK_VF(scale), WK_VI(zp), WK_VB(relu)}, out[1];
  if (wk_call(QADD, args, 5, out)) return NULL;
  return out[0].u.t;
}
