/* cuda dnn family: conv2d and conv2d_backward through cuDNN (legacy
 * convolution API, still in cuDNN 9) for f32, f64, f16 and bf16, with
 * padding, stride, dilation and groups. Algorithms come from cuDNN's
 * heuristics, or are timed once per shape with WICK_CUDNN_BENCHMARK=1
 * (cudnn.benchmark); WICK_DETERMINISTIC=1 keeps only deterministic ones.
 * Choices are cached by shape, dtype and switches; workspaces come from
 * the caching allocator. The core's meta functions (core/meta_conv.c) check
 * the arguments and decide the output shapes. */
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_libs.h"

/* ---- geometry --------------------------------------------------------------------------- */
typedef struct {
  int64_t N, C, H, W, O, Cg, kh, kw, oh, ow, groups;
  int64_t st[2], pd[2], dl[2];
  int xd; /* 3 (unbatched) or 4 */
  wk_dtype dt;
} conv_geo;

/* Fills g from input, weight, (stride, padding, dilation, groups) at pv[0..3]
 * (args[3..6] of conv2d and of conv2d_backward) and ys, the output's sizes
 * (conv2d's result, conv2d_backward's grad_output). The op's meta function
 * (core/meta_conv.c) checked the arguments and decided ys; what is left is
 * cuDNN's own limit on sizes. */
static wk_status conv_geometry(const char *op, wk_tensor *input, wk_tensor *weight, const wk_value *pv,
                               const int64_t *ys, conv_geo *g) {
  int xd = wk_tensor_dim(input);
  const int64_t *xs = wk_tensor_sizes(input), *ws = wk_tensor_sizes(weight);
  g->xd = xd;
  g->dt = wk_tensor_dtype(input);
  g->N = xd == 4 ? xs[0] : 1, g->C = xs[xd - 3], g->H = xs[xd - 2], g->W = xs[xd - 1];
  g->O = ws[0], g->Cg = ws[1], g->kh = ws[2], g->kw = ws[3];
  g->oh = ys[xd - 2], g->ow = ys[xd - 1];
  g->groups = pv[3].u.i;
  for (int i = 0; i < 2; i++) /* int[2] arguments arrive normalised to two values */
    g->st[i] = pv[0].u.ints[i], g->pd[i] = pv[1].u.ints[i], g->dl[i] = pv[2].u.ints[i];
  int64_t lim[] = {g->N, g->C, g->H, g->W, g->O, g->oh, g->ow, g->N * g->C * g->H * g->W, g->N * g->O * g->oh * g->ow};
  for (size_t i = 0; i < sizeof lim / sizeof lim[0]; i++)
    if (lim[i] > INT_MAX)
      return wk_error(WK_ERR_UNSUPPORTED,
                      "%s(): tensors of more than %d elements per dimension or in all are not "
                      "supported by cuDNN's convolution",
                      op, INT_MAX);
  return WK_OK;
}

/* ---- descriptors --------------------------------------------------------------------------- */
typedef struct {
  cudnnTensorDescriptor_t x, y, b;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
  cudnnMathType_t math; /* what the switches allow */
} descs;

static cudnnDataType_t dnn_type(wk_dtype dt) {
  switch (dt) {
    case WK_F64:
      return CUDNN_DATA_DOUBLE;
    case WK_F16:
      return CUDNN_DATA_HALF;
    case WK_BF16:
      return CUDNN_DATA_BFLOAT16;
    default:
      return CUDNN_DATA_FLOAT;
  }
}

static void descs_free(descs *d) {
  if (d->x) cudnnDestroyTensorDescriptor(d->x);
  if (d->y) cudnnDestroyTensorDescriptor(d->y);
  if (d->b) cudnnDestroyTensorDescriptor(d->b);
  if (d->w) cudnnDestroyFilterDescriptor(d->w);
  if (d->conv) cudnnDestroyConvolutionDescriptor(d->conv);
  memset(d, 0, sizeof *d);
}

static wk_status descs_make(const char *op, const conv_geo *g, descs *d) {
  memset(d, 0, sizeof *d);
  cudnnDataType_t ty = dnn_type(g->dt);
  /* f16/bf16 accumulate in f32 (PyTorch's choice); f32 uses TF32 unless switched off */
  cudnnDataType_t ct = g->dt == WK_F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  d->math = g->dt == WK_F16 || g->dt == WK_BF16           ? CUDNN_TENSOR_OP_MATH
            : g->dt == WK_F32 && !cuda_allow_tf32_cudnn() ? CUDNN_FMA_MATH
                                                          : CUDNN_DEFAULT_MATH;
  wk_status s = CUDNN_CHECK(op, cudnnCreateTensorDescriptor(&d->x));
  if (!s) s = CUDNN_CHECK(op, cudnnCreateTensorDescriptor(&d->y));
  if (!s) s = CUDNN_CHECK(op, cudnnCreateTensorDescriptor(&d->b));
  if (!s) s = CUDNN_CHECK(op, cudnnCreateFilterDescriptor(&d->w));
  if (!s) s = CUDNN_CHECK(op, cudnnCreateConvolutionDescriptor(&d->conv));
  if (!s)
    s = CUDNN_CHECK(
        op, cudnnSetTensor4dDescriptor(d->x, CUDNN_TENSOR_NCHW, ty, (int)g->N, (int)g->C, (int)g->H, (int)g->W));
  if (!s)
    s = CUDNN_CHECK(
        op, cudnnSetTensor4dDescriptor(d->y, CUDNN_TENSOR_NCHW, ty, (int)g->N, (int)g->O, (int)g->oh, (int)g->ow));
  if (!s) s = CUDNN_CHECK(op, cudnnSetTensor4dDescriptor(d->b, CUDNN_TENSOR_NCHW, ty, 1, (int)g->O, 1, 1));
  if (!s)
    s = CUDNN_CHECK(
        op, cudnnSetFilter4dDescriptor(d->w, ty, CUDNN_TENSOR_NCHW, (int)g->O, (int)g->Cg, (int)g->kh, (int)g->kw));
  if (!s)
    s = CUDNN_CHECK(op,
                    cudnnSetConvolution2dDescriptor(d->conv, (int)g->pd[0], (int)g->pd[1], (int)g->st[0], (int)g->st[1],
                                                    (int)g->dl[0], (int)g->dl[1], CUDNN_CROSS_CORRELATION, ct));
  if (!s) s = CUDNN_CHECK(op, cudnnSetConvolutionGroupCount(d->conv, (int)g->groups));
  if (!s) s = CUDNN_CHECK(op, cudnnSetConvolutionMathType(d->conv, d->math));
  if (s) descs_free(d);
  return s;
}

/* ---- algorithm choice and its cache ------------------------------------------------------------ */
enum { FWD = 0, BWD_DATA = 1, BWD_FILTER = 2 };

typedef struct {
  int32_t kind, device, dtype, math, deterministic, benchmark;
  int64_t N, C, H, W, O, Cg, kh, kw, groups, st[2], pd[2], dl[2];
} algo_key;

typedef struct {
  algo_key key;
  int algo;
  cudnnMathType_t math;
  size_t ws;
} algo_entry;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static algo_entry *g_cache;
static size_t g_n, g_cap;

static bool cache_get(const algo_key *k, algo_entry *out) {
  bool hit = false;
  pthread_mutex_lock(&g_lock);
  for (size_t i = 0; i < g_n && !hit; i++)
    if (memcmp(&g_cache[i].key, k, sizeof *k) == 0) {
      *out = g_cache[i];
      hit = true;
    }
  pthread_mutex_unlock(&g_lock);
  return hit;
}

static void cache_put(const algo_entry *e) {
  pthread_mutex_lock(&g_lock);
  if (g_n == g_cap) {
    size_t cap = g_cap ? 2 * g_cap : 64;
    algo_entry *p = wk_realloc(g_cache, cap * sizeof *p);
    if (p) {
      g_cache = p;
      g_cap = cap;
    }
  }
  if (g_n < g_cap) g_cache[g_n++] = *e; /* out of host memory: just not cached */
  pthread_mutex_unlock(&g_lock);
}

/* One candidate, whatever the direction. */
typedef struct {
  int algo;
  cudnnStatus_t status;
  size_t memory;
  cudnnDeterminism_t det;
  cudnnMathType_t math;
} perf;

#define MAX_ALGOS 16

/* The buffers a direction reads and writes (for benchmarking). */
typedef struct {
  const void *x, *w, *y; /* fwd: x, w in; y out. bwd data: w, y (dy) in; x (dx) out. bwd filter: x, y in; w out */
} bufs;

static wk_status list_algos(const char *op, cudnnHandle_t h, int kind, const descs *d, bool bench, const bufs *b,
                            void *ws, size_t wsn, perf *out, int *n) {
  int got = 0;
  wk_status s;
  *n = 0;
#define TAKE(arr)               \
  for (int i = 0; i < got; i++) \
    out[i] = (perf){(int)arr[i].algo, arr[i].status, arr[i].memory, arr[i].determinism, arr[i].mathType};
  if (kind == FWD) {
    cudnnConvolutionFwdAlgoPerf_t p[MAX_ALGOS];
    s = bench
            ? CUDNN_CHECK(op, cudnnFindConvolutionForwardAlgorithmEx(h, d->x, b->x, d->w, b->w, d->conv, d->y,
                                                                     (void *)b->y, MAX_ALGOS, &got, p, ws, wsn))
            : CUDNN_CHECK(op, cudnnGetConvolutionForwardAlgorithm_v7(h, d->x, d->w, d->conv, d->y, MAX_ALGOS, &got, p));
    if (s) return s;
    TAKE(p)
  } else if (kind == BWD_DATA) {
    cudnnConvolutionBwdDataAlgoPerf_t p[MAX_ALGOS];
    s = bench ? CUDNN_CHECK(op, cudnnFindConvolutionBackwardDataAlgorithmEx(h, d->w, b->w, d->y, b->y, d->conv, d->x,
                                                                            (void *)b->x, MAX_ALGOS, &got, p, ws, wsn))
              : CUDNN_CHECK(
                    op, cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d->w, d->y, d->conv, d->x, MAX_ALGOS, &got, p));
    if (s) return s;
    TAKE(p)
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t p[MAX_ALGOS];
    s = bench
            ? CUDNN_CHECK(op, cudnnFindConvolutionBackwardFilterAlgorithmEx(h, d->x, b->x, d->y, b->y, d->conv, d->w,
                                                                            (void *)b->w, MAX_ALGOS, &got, p, ws, wsn))
            : CUDNN_CHECK(
                  op, cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d->x, d->y, d->conv, d->w, MAX_ALGOS, &got, p));
    if (s) return s;
    TAKE(p)
  }
#undef TAKE
  *n = got;
  return WK_OK;
}

static wk_status ws_size(const char *op, cudnnHandle_t h, int kind, const descs *d, int algo, size_t *n) {
  if (kind == FWD)
    return CUDNN_CHECK(
        op, cudnnGetConvolutionForwardWorkspaceSize(h, d->x, d->w, d->conv, d->y, (cudnnConvolutionFwdAlgo_t)algo, n));
  if (kind == BWD_DATA)
    return CUDNN_CHECK(op, cudnnGetConvolutionBackwardDataWorkspaceSize(h, d->w, d->y, d->conv, d->x,
                                                                        (cudnnConvolutionBwdDataAlgo_t)algo, n));
  return CUDNN_CHECK(op, cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d->x, d->y, d->conv, d->w,
                                                                        (cudnnConvolutionBwdFilterAlgo_t)algo, n));
}

/* Benchmarking gets the largest workspace any algorithm asks for (up to
 * 1 GiB), halved while the allocator cannot give it (down to 1 MiB, then none). */
static void *bench_workspace(cudnnHandle_t h, int kind, const descs *d, int device, size_t *n) {
  int count = kind == FWD        ? CUDNN_CONVOLUTION_FWD_ALGO_COUNT
              : kind == BWD_DATA ? CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT
                                 : CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
  size_t want = 0;
  for (int a = 0; a < count; a++) {
    size_t sz = 0;
    if (ws_size("conv2d", h, kind, d, a, &sz) == WK_OK && sz > want) want = sz;
    wk_clear_error(); /* algorithms that do not apply */
  }
  if (want > ((size_t)1 << 30)) want = (size_t)1 << 30;
  for (; want > 0; want = want > ((size_t)1 << 20) ? want / 2 : 0) {
    void *p = cuda_malloc(device, want);
    if (p) {
      *n = want;
      return p;
    }
    wk_clear_error();
  }
  *n = 0;
  return NULL;
}

/* Chooses (or recalls) the algorithm of one direction and allocates its
 * workspace (*ws, to cuda_free after the call is enqueued). Sets the math
 * type on d->conv. */
static wk_status choose(const char *op, cudnnHandle_t h, int kind, const conv_geo *g, descs *d, int device,
                        const bufs *b, int *algo, void **ws, size_t *wsn) {
  bool det = cuda_deterministic(), bench = cuda_cudnn_benchmark();
  algo_key k;
  memset(&k, 0, sizeof k); /* padding bytes too: the key is compared with memcmp */
  k.kind = kind, k.device = device, k.dtype = (int32_t)g->dt, k.math = (int32_t)d->math, k.deterministic = det;
  k.benchmark = bench;
  k.N = g->N, k.C = g->C, k.H = g->H, k.W = g->W, k.O = g->O, k.Cg = g->Cg, k.kh = g->kh, k.kw = g->kw;
  k.groups = g->groups;
  for (int i = 0; i < 2; i++) k.st[i] = g->st[i], k.pd[i] = g->pd[i], k.dl[i] = g->dl[i];
  algo_entry e;
  *ws = NULL;
  *wsn = 0;
  wk_status s;
  if (cache_get(&k, &e)) {
    if ((s = CUDNN_CHECK(op, cudnnSetConvolutionMathType(d->conv, e.math)))) return s;
    if (e.ws && !(*ws = cuda_malloc(device, e.ws))) return wk_last_error();
    *algo = e.algo;
    *wsn = e.ws;
    return WK_OK;
  }
  perf p[MAX_ALGOS];
  int n = 0;
  void *bws = NULL;
  size_t bwsn = 0;
  if (bench) bws = bench_workspace(h, kind, d, device, &bwsn);
  s = list_algos(op, h, kind, d, bench, b, bws, bwsn, p, &n);
  if (bws) cuda_free(device, bws);
  if (s) return s;
  /* f32 without TF32 takes FMA kernels only; a candidate's own math type is
   * set on the descriptor before the call, as cuDNN asks. */
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < n; i++) {
      if (p[i].status != CUDNN_STATUS_SUCCESS) continue;
      if (det && p[i].det != CUDNN_DETERMINISTIC) continue;
      bool math_ok = d->math != CUDNN_FMA_MATH || p[i].math == CUDNN_FMA_MATH;
      if (pass == 0 && !math_ok) continue;
      cudnnMathType_t m = math_ok ? p[i].math : d->math;
      size_t need = 0;
      if (cudnnSetConvolutionMathType(d->conv, m) != CUDNN_STATUS_SUCCESS ||
          ws_size(op, h, kind, d, p[i].algo, &need) != WK_OK) {
        wk_clear_error();
        continue;
      }
      void *mem = need ? cuda_malloc(device, need) : NULL;
      if (need && !mem) { /* out of memory for this one: try a leaner algorithm */
        wk_clear_error();
        continue;
      }
      e.key = k;
      e.algo = p[i].algo;
      e.math = m;
      e.ws = need;
      cache_put(&e);
      *algo = p[i].algo;
      *ws = mem;
      *wsn = need;
      return WK_OK;
    }
  static const char *kinds[3] = {"forward", "backward data", "backward filter"};
  return wk_error(WK_ERR_UNSUPPORTED, "%s: cuDNN has no %s%s convolution algorithm for this shape (%d candidates)", op,
                  det ? "deterministic " : "", kinds[kind], n);
}

/* ---- kernels ------------------------------------------------------------------------------------ */
/* conv2d of an empty input with a non-empty output (no input channels, or
 * an empty image with padding): out = bias broadcast over the channels, or 0. */
static wk_status empty_input_out(const char *op, wk_tensor *out, wk_tensor *bias, const conv_geo *g, wk_device dev) {
  cudaStream_t st = cuda_current_stream(dev.index);
  if (!bias)
    return CUDA_CHECK(op,
                      cudaMemsetAsync(wk_tensor_data(out), 0, (size_t)wk_tensor_numel(out) * wk_dtype_size(g->dt), st));
  cuda_strided lb = cuda_layout(out, NULL, 0);
  for (int d = 0; d < lb.ndim; d++) lb.strides[d] = d == lb.ndim - 3 ? 1 : 0; /* bias[c] along the channels */
  return (wk_status)cuda_launch_copy(wk_tensor_data(out), (int)g->dt, cuda_layout(out, NULL, 0), wk_tensor_data(bias),
                                     (int)g->dt, lb, wk_tensor_numel(out), st);
}

static wk_status k_conv2d(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "conv2d";
  wk_tensor *input = WK_ARG_T(0), *weight = WK_ARG_T(1), *bias = WK_ARG_OPT_T(2);
  const wk_meta_out *m = wk_kernel_meta(ctx, 0);
  if (!m) return wk_error(WK_ERR_INTERNAL, "%s(): no meta function decided the output", op);
  conv_geo g;
  wk_status s = conv_geometry(op, input, weight, &args[3], m->sizes, &g);
  if (s) return s;
  wk_device dev = ctx->device;
  if ((s = cuda_enter(op, dev))) return s;
  wk_tensor *out = wk_meta_empty(ctx, 0);
  if (!out) return wk_last_error();
  if (wk_tensor_numel(out) == 0) {
    outs[0] = WK_VT(out);
    return WK_OK;
  }
  wk_tensor *x = NULL, *w = NULL, *bc = NULL;
  descs d = {0};
  void *ws = NULL;
  cudnnHandle_t h;
  double one = 1.0, zero = 0.0;
  float onef = 1.0f, zerof = 0.0f;
  const void *pone = g.dt == WK_F64 ? (const void *)&one : (const void *)&onef;
  const void *pzero = g.dt == WK_F64 ? (const void *)&zero : (const void *)&zerof;
  if (!(x = cuda_lib_prep(input, g.dt)) || !(w = cuda_lib_prep(weight, g.dt)) ||
      (bias && !(bc = cuda_lib_prep(bias, g.dt)))) {
    s = wk_last_error();
    goto done;
  }
  if (wk_tensor_numel(x) == 0) { /* an empty sum (no channels, or only padding): the bias alone */
    s = empty_input_out(op, out, bc, &g, dev);
    goto done;
  }
  if ((s = cuda_cudnn(op, dev.index, &h)) || (s = descs_make(op, &g, &d))) goto done;
  {
    int algo = 0;
    size_t wsn = 0;
    bufs b = {wk_tensor_data(x), wk_tensor_data(w), wk_tensor_data(out)};
    if (!(s = choose(op, h, FWD, &g, &d, dev.index, &b, &algo, &ws, &wsn)))
      s = CUDNN_CHECK(
          op, cudnnConvolutionForward(h, pone, d.x, wk_tensor_data(x), d.w, wk_tensor_data(w), d.conv,
                                      (cudnnConvolutionFwdAlgo_t)algo, ws, wsn, pzero, d.y, wk_tensor_data(out)));
  }
  if (!s && bc) s = CUDNN_CHECK(op, cudnnAddTensor(h, pone, d.b, wk_tensor_data(bc), pone, d.y, wk_tensor_data(out)));
done:
  if (ws) cuda_free(dev.index, ws); /* stream-ordered: reused only by later work on this stream */
  descs_free(&d);
  wk_release(x);
  wk_release(w);
  wk_release(bc);
  return wk_kernel_done(s, out, outs);
}

static wk_status k_conv2d_backward(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "conv2d_backward";
  wk_tensor *go = WK_ARG_T(0), *input = WK_ARG_T(1), *weight = WK_ARG_T(2);
  conv_geo g;
  wk_status s = conv_geometry(op, input, weight, &args[3], wk_tensor_sizes(go), &g);
  if (s) return s;
  bool mask[3];
  wk_output_mask(&args[7], mask);
  wk_device dev = ctx->device;
  if ((s = cuda_enter(op, dev))) return s;
  wk_tensor *gi = NULL, *gw = NULL, *gb = NULL, *x = NULL, *w = NULL, *dy = NULL;
  descs d = {0};
  cudnnHandle_t h;
  double one = 1.0, zero = 0.0;
  float onef = 1.0f, zerof = 0.0f;
  const void *pone = g.dt == WK_F64 ? (const void *)&one : (const void *)&onef;
  const void *pzero = g.dt == WK_F64 ? (const void *)&zero : (const void *)&zerof;
  /* zeros: an empty grad_output (or input) leaves every gradient zero */
  if ((mask[0] && !(gi = cuda_lib_zeros(op, wk_tensor_sizes(input), g.xd, g.dt, dev))) ||
      (mask[1] && !(gw = cuda_lib_zeros(op, wk_tensor_sizes(weight), 4, g.dt, dev))) ||
      (mask[2] && !(gb = cuda_lib_zeros(op, &g.O, 1, g.dt, dev)))) {
    s = wk_last_error();
    goto done;
  }
  if (wk_tensor_numel(go) == 0 || !(mask[0] || mask[1] || mask[2])) goto done;
  if (wk_tensor_numel(input) == 0) { /* only the bias saw grad_output */
    if (gb) {
      int64_t dims4[3] = {0, 2, 3}, dims3[2] = {1, 2};
      wk_tensor *sum = wk_sum_dim(go, g.xd == 4 ? dims4 : dims3, g.xd == 4 ? 3 : 2, false);
      if (!sum || !wk_copy_(gb, sum)) s = wk_last_error();
      wk_release(sum);
    }
    goto done;
  }
  if (!(dy = cuda_lib_prep(go, g.dt)) || (mask[1] && !(x = cuda_lib_prep(input, g.dt))) ||
      (mask[0] && !(w = cuda_lib_prep(weight, g.dt)))) {
    s = wk_last_error();
    goto done;
  }
  if ((s = cuda_cudnn(op, dev.index, &h)) || (s = descs_make(op, &g, &d))) goto done;
  if (gb)
    s = CUDNN_CHECK(op, cudnnConvolutionBackwardBias(h, pone, d.y, wk_tensor_data(dy), pzero, d.b, wk_tensor_data(gb)));
  for (int kind = BWD_DATA; kind <= BWD_FILTER && !s; kind++) {
    if (!(kind == BWD_DATA ? gi : gw)) continue;
    int algo = 0;
    size_t wsn = 0;
    void *ws = NULL;
    bufs b = {kind == BWD_DATA ? wk_tensor_data(gi) : wk_tensor_data(x),
              kind == BWD_DATA ? wk_tensor_data(w) : wk_tensor_data(gw), wk_tensor_data(dy)};
    s = choose(op, h, kind, &g, &d, dev.index, &b, &algo, &ws, &wsn);
    if (!s && kind == BWD_DATA)
      s = CUDNN_CHECK(op, cudnnConvolutionBackwardData(h, pone, d.w, wk_tensor_data(w), d.y, wk_tensor_data(dy), d.conv,
                                                       (cudnnConvolutionBwdDataAlgo_t)algo, ws, wsn, pzero, d.x,
                                                       wk_tensor_data(gi)));
    else if (!s)
      s = CUDNN_CHECK(op, cudnnConvolutionBackwardFilter(h, pone, d.x, wk_tensor_data(x), d.y, wk_tensor_data(dy),
                                                         d.conv, (cudnnConvolutionBwdFilterAlgo_t)algo, ws, wsn, pzero,
                                                         d.w, wk_tensor_data(gw)));
    if (ws) cuda_free(dev.index, ws);
  }
done:
  descs_free(&d);
  wk_release(x);
  wk_release(w);
  wk_release(dy);
  if (s) {
    wk_release(gi);
    wk_release(gw);
    wk_release(gb);
    return s;
  }
  wk_kernel_put_opt(outs, (wk_tensor *[]){gi, gw, gb}, 3);
  return WK_OK;
}

wk_status cuda_register_dnn(void) {
  /* the meta function admits only floating dtypes, and cuDNN takes all four */
  wk_status s = cuda_reg("conv2d", k_conv2d, NULL, NULL, "cuda.conv2d_cudnn");
  if (!s) s = cuda_reg("conv2d_backward", k_conv2d_backward, NULL, NULL, "cuda.conv2d_backward_cudnn");
  return s;
}
