/* Wick SDK: helpers for kernel authors, header-only so a plugin needs nothing
 * but the host table: element load/store for every dtype, broadcasting, a
 * strided multi-operand iterator (TensorIterator-like: broadcast, coalesce,
 * split over the shared pool), and argument accessors for boxed kernels.
 * Include after <wick/sdk.h>. */
#ifndef WICK_SDK_KERNEL_H
#define WICK_SDK_KERNEL_H

#include <math.h>
#include <string.h>
#include <wick/sdk.h>
#include <wick/sdk/half.h>

/* ---- results the op's meta function decided (ABI 1.2) ------------------------------ */
/* The meta function's description of result i, or NULL when the op has none
 * (a third party's op without wk_op_set_meta, or a core older than 1.2). */
static inline const wk_meta_out *wk_kernel_meta(const wk_kernel_ctx *ctx, int i) {
  if (ctx->struct_size < offsetof(wk_kernel_ctx, meta) + sizeof(ctx->meta) || !ctx->meta) return NULL;
  return &ctx->meta[i];
}
/* A new tensor for result i, on the call's device, with the dtype and shape
 * (and strides, when it set them) the meta function decided: a kernel only
 * fills it. Returns a new reference, or NULL with an error recorded. */
static inline wk_tensor *wk_meta_empty(const wk_kernel_ctx *ctx, int i) {
  const wk_meta_out *m = wk_kernel_meta(ctx, i);
  if (!m) {
    wk_error(WK_ERR_INTERNAL, "%s: no meta function decided result %d", wk_op_name(ctx->op), i);
    return NULL;
  }
  wk_options o = {0};
  o.dtype = m->dtype;
  o.device = ctx->device;
  return wk_empty_strided(m->sizes, (m->flags & WK_META_STRIDED) ? m->strides : NULL, m->ndim, o);
}

/* ---- boxed argument accessors ----------------------------------------------------- */
#define WK_ARG_T(n) (args[n].u.t)
#define WK_ARG_I(n) (args[n].u.i)
#define WK_ARG_F(n) (args[n].u.f)
#define WK_ARG_B(n) (args[n].u.b)
#define WK_ARG_IS_NONE(n) (args[n].tag == WK_V_NONE)
/* Optional tensor: NULL when None. */
#define WK_ARG_OPT_T(n) (args[n].tag == WK_V_NONE ? (wk_tensor *)0 : args[n].u.t)
/* Scalar argument (int, float or bool) as double. */
static inline double wk_value_as_f64(const wk_value *v) {
  return v->tag == WK_V_INT ? (double)v->u.i : v->tag == WK_V_BOOL ? (double)v->u.b : v->u.f;
}
/* Op name for messages. */
#define WK_OPNAME (wk_op_name(ctx->op))

/* ---- element access by dtype ----------------------------------------------------------- */
static inline double wk_load_f64(const void *p, wk_dtype dt) {
  switch (dt) {
    case WK_F32: return *(const float *)p;
    case WK_F64: return *(const double *)p;
    case WK_F16: return wk_f16_to_f32(*(const uint16_t *)p);
    case WK_BF16: return wk_bf16_to_f32(*(const uint16_t *)p);
    case WK_I8: return *(const int8_t *)p;
    case WK_U8: return *(const uint8_t *)p;
    case WK_I16: return *(const int16_t *)p;
    case WK_I32: return *(const int32_t *)p;
    case WK_I64: return (double)*(const int64_t *)p;
    case WK_BOOL: return *(const bool *)p;
    default: return NAN;
  }
}
static inline int64_t wk_load_i64(const void *p, wk_dtype dt) {
  switch (dt) {
    case WK_I8: return *(const int8_t *)p;
    case WK_U8: return *(const uint8_t *)p;
    case WK_I16: return *(const int16_t *)p;
    case WK_I32: return *(const int32_t *)p;
    case WK_I64: return *(const int64_t *)p;
    case WK_BOOL: return *(const bool *)p;
    default: return (int64_t)wk_load_f64(p, dt);
  }
}
/* Float -> integer conversion follows C (truncation); out-of-range values are
 * clamped first so the conversion is defined. */
static inline int64_t wk_f64_to_i64_sat(double v) {
  if (v != v) return 0;
  if (v >= 9.2233720368547758e18) return INT64_MAX;
  if (v <= -9.2233720368547758e18) return INT64_MIN;
  return (int64_t)v;
}
static inline void wk_store_f64(void *p, wk_dtype dt, double v) {
  switch (dt) {
    case WK_F32: *(float *)p = (float)v; break;
    case WK_F64: *(double *)p = v; break;
    case WK_F16: *(uint16_t *)p = wk_f32_to_f16((float)v); break;
    case WK_BF16: *(uint16_t *)p = wk_f32_to_bf16((float)v); break;
    case WK_I8: *(int8_t *)p = (int8_t)wk_f64_to_i64_sat(v); break;
    case WK_U8: *(uint8_t *)p = (uint8_t)wk_f64_to_i64_sat(v); break;
    case WK_I16: *(int16_t *)p = (int16_t)wk_f64_to_i64_sat(v); break;
    case WK_I32: *(int32_t *)p = (int32_t)wk_f64_to_i64_sat(v); break;
    case WK_I64: *(int64_t *)p = wk_f64_to_i64_sat(v); break;
    case WK_BOOL: *(bool *)p = v != 0; break;
    default: break;
  }
}
static inline void wk_store_i64(void *p, wk_dtype dt, int64_t v) {
  switch (dt) {
    case WK_I8: *(int8_t *)p = (int8_t)v; break;
    case WK_U8: *(uint8_t *)p = (uint8_t)v; break;
    case WK_I16: *(int16_t *)p = (int16_t)v; break;
    case WK_I32: *(int32_t *)p = (int32_t)v; break;
    case WK_I64: *(int64_t *)p = v; break;
    case WK_BOOL: *(bool *)p = v != 0; break;
    default: wk_store_f64(p, dt, (double)v); break;
  }
}

/* The dtype a kernel computes in: f64 for f64, f32 for the other floats
 * (f16/bf16 upcast), i64 for integers, bool for bool. */
static inline wk_dtype wk_compute_dtype(wk_dtype dt) {
  if (dt == WK_F64 || dt == WK_BOOL) return dt;
  if (wk_dtype_is_floating(dt)) return WK_F32;
  return WK_I64;
}

/* Dtype switch: runs BODY with `scalar_t` bound to the C type of a compute
 * dtype (f32 float, f64 double, i64 int64_t, bool bool); records an error
 * naming `op` for anything else. Use after wk_compute_dtype(). Example:
 *   WK_COMPUTE_SWITCH(cd, "myop", { scalar_t *p = ...; }); */
#define WK_COMPUTE_SWITCH(dt, op, ...)                                                          \
  switch (dt) {                                                                                 \
    case WK_F32: { typedef float scalar_t; __VA_ARGS__ } break;                                 \
    case WK_F64: { typedef double scalar_t; __VA_ARGS__ } break;                                \
    case WK_I64: { typedef int64_t scalar_t; __VA_ARGS__ } break;                               \
    case WK_BOOL: { typedef bool scalar_t; __VA_ARGS__ } break;                                 \
    default: wk_error(WK_ERR_DTYPE, "%s: unsupported compute dtype %s", op, wk_dtype_name(dt)); \
  }

/* Scratch memory for a kernel: 64-byte aligned host memory from the core's
 * allocator (wk_scratch_free releases it). NULL with an error on failure. */
static inline void *wk_scratch_alloc(size_t nbytes) { return wk_device_alloc(wk_cpu(), nbytes); }
static inline void wk_scratch_free(void *p) { wk_device_free(wk_cpu(), p); }

/* ---- shapes ------------------------------------------------------------------------ */
/* Broadcasts n shapes (NumPy rules) into out/out_ndim. Records a message naming
 * the op and both shapes on failure. */
static inline wk_status wk_broadcast_shapes(const char *op, wk_tensor *const *ts, int n, int64_t *out,
                                            int *out_ndim) {
  int nd = 0;
  for (int i = 0; i < n; i++)
    if (ts[i] && wk_tensor_dim(ts[i]) > nd) nd = wk_tensor_dim(ts[i]);
  for (int d = 0; d < nd; d++) out[d] = 1;
  for (int i = 0; i < n; i++) {
    if (!ts[i]) continue;
    int tn = wk_tensor_dim(ts[i]);
    const int64_t *s = wk_tensor_sizes(ts[i]);
    for (int d = 0; d < tn; d++) {
      int o = nd - tn + d;
      if (s[d] == out[o] || s[d] == 1) continue;
      if (out[o] == 1) {
        out[o] = s[d];
        continue;
      }
      char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX];
      wk_sizes_str(s, tn, a, sizeof a);
      wk_sizes_str(out, nd, b, sizeof b);
      return wk_error(WK_ERR_SHAPE,
                      "%s: the size of tensor a (%lld) must match the size of tensor b (%lld) at non-singleton "
                      "dimension %d (shapes %s and %s)",
                      op, (long long)out[o], (long long)s[d], o, b, a);
    }
  }
  *out_ndim = nd;
  return WK_OK;
}

/* Returns t converted to dtype dt: a new reference to t itself when it already
 * has that dtype, else a converted copy. NULL on error. */
static inline wk_tensor *wk_kernel_cast(wk_tensor *t, wk_dtype dt) {
  if (!t) return (wk_tensor *)0;
  if (wk_tensor_dtype(t) == dt) return wk_retain(t);
  return wk_to_dtype(t, dt);
}

/* ---- the strided iterator ------------------------------------------------------------ */
#define WK_ITER_MAX_OPS 8

typedef struct wk_iter {
  int nops;   /* operands: [0] is the output, the rest inputs */
  int ndim;   /* after coalescing; dimension ndim-1 is innermost */
  int64_t numel;
  int64_t shape[WK_MAX_DIMS];
  char *data[WK_ITER_MAX_OPS];
  int64_t strides[WK_ITER_MAX_OPS][WK_MAX_DIMS]; /* bytes; 0 on broadcast dims */
} wk_iter;

/* Inner loop: n elements; data[k] and strides[k] (bytes) per operand. */
typedef void (*wk_loop_fn)(void *ctx, char **data, const int64_t *strides, int64_t n);

/* Sets up iteration over ts[0] (the output, whose shape is the iteration shape)
 * and inputs ts[1..n-1] broadcast to it. Every operand must be on the cpu (or
 * a device whose pointers the caller can dereference). */
static inline wk_status wk_iter_init(wk_iter *it, const char *op, wk_tensor *const *ts, int n) {
  memset(it, 0, sizeof *it);
  if (n < 1 || n > WK_ITER_MAX_OPS) return wk_error(WK_ERR_INTERNAL, "%s: iterator given %d operands", op, n);
  int nd = wk_tensor_dim(ts[0]);
  const int64_t *shape = wk_tensor_sizes(ts[0]);
  it->nops = n;
  int64_t st[WK_ITER_MAX_OPS][WK_MAX_DIMS];
  for (int k = 0; k < n; k++) {
    int tn = wk_tensor_dim(ts[k]);
    const int64_t *s = wk_tensor_sizes(ts[k]), *str = wk_tensor_strides(ts[k]);
    int64_t es = (int64_t)wk_dtype_size(wk_tensor_dtype(ts[k]));
    if (tn > nd) return wk_error(WK_ERR_SHAPE, "%s: input has more dimensions (%d) than the output (%d)", op, tn, nd);
    for (int d = 0; d < nd; d++) {
      int j = d - (nd - tn);
      if (j < 0) {
        st[k][d] = 0;
      } else if (s[j] == shape[d]) {
        st[k][d] = shape[d] == 1 ? 0 : str[j] * es;
      } else if (s[j] == 1) {
        st[k][d] = 0;
      } else {
        return wk_error(WK_ERR_SHAPE, "%s: operand %d of size %lld cannot broadcast to %lld at dimension %d", op, k,
                        (long long)s[j], (long long)shape[d], d);
      }
    }
    it->data[k] = (char *)wk_tensor_data(ts[k]);
  }
  /* Walk the dims in the output's memory order, outermost first (as
   * PyTorch's TensorIterator does): a channels_last output (NHWC strides on
   * NCHW sizes) with operands of its own layout then runs as one dense
   * loop. A row-major output keeps the plain order. */
  int perm[WK_MAX_DIMS];
  for (int d = 0; d < nd; d++) {
    int j = d;
    while (j > 0 && st[0][perm[j - 1]] < st[0][d]) { /* stable: equal strides keep their order */
      perm[j] = perm[j - 1];
      j--;
    }
    perm[j] = d;
  }
  /* Drop size-1 dims and merge neighbours that are contiguous for every operand. */
  int64_t cs[WK_MAX_DIMS];
  int cn = 0;
  it->numel = 1;
  for (int pd = 0; pd < nd; pd++) {
    int d = perm[pd];
    it->numel *= shape[d];
    if (shape[d] == 1) continue;
    if (cn > 0) {
      bool merge = true;
      for (int k = 0; k < n && merge; k++) merge = it->strides[k][cn - 1] == st[k][d] * shape[d];
      if (merge) {
        cs[cn - 1] *= shape[d];
        for (int k = 0; k < n; k++) it->strides[k][cn - 1] = st[k][d];
        continue;
      }
    }
    cs[cn] = shape[d];
    for (int k = 0; k < n; k++) it->strides[k][cn] = st[k][d];
    cn++;
  }
  if (cn == 0) { /* a single element */
    cs[0] = 1;
    for (int k = 0; k < n; k++) it->strides[k][0] = 0;
    cn = 1;
  }
  it->ndim = cn;
  memcpy(it->shape, cs, sizeof(int64_t) * (size_t)cn);
  return WK_OK;
}

typedef struct {
  const wk_iter *it;
  wk_loop_fn fn;
  void *ctx;
} wk__iter_job;

/* Runs the loop over linear element range [b, e). */
static inline void wk__iter_range(void *p, int64_t b, int64_t e) {
  const wk__iter_job *j = (const wk__iter_job *)p;
  const wk_iter *it = j->it;
  int nd = it->ndim, n = it->nops;
  int64_t inner = it->shape[nd - 1];
  int64_t idx[WK_MAX_DIMS];
  int64_t rem = b;
  for (int d = nd - 1; d >= 0; d--) {
    idx[d] = rem % it->shape[d];
    rem /= it->shape[d];
  }
  char *ptr[WK_ITER_MAX_OPS];
  int64_t istr[WK_ITER_MAX_OPS];
  for (int k = 0; k < n; k++) istr[k] = it->strides[k][nd - 1];
  int64_t pos = b;
  while (pos < e) {
    for (int k = 0; k < n; k++) {
      int64_t off = 0;
      for (int d = 0; d < nd; d++) off += idx[d] * it->strides[k][d];
      ptr[k] = it->data[k] + off;
    }
    int64_t cnt = inner - idx[nd - 1];
    if (cnt > e - pos) cnt = e - pos;
    j->fn(j->ctx, ptr, istr, cnt);
    pos += cnt;
    idx[nd - 1] += cnt;
    for (int d = nd - 1; d > 0 && idx[d] >= it->shape[d]; d--) {
      idx[d] = 0;
      idx[d - 1]++;
    }
  }
}

/* Grain below which elementwise work stays on one thread. */
#define WK_ITER_GRAIN 32768

/* Runs fn over every element, in parallel chunks over the shared pool when the
 * work is large enough. */
static inline void wk_iter_run(const wk_iter *it, wk_loop_fn fn, void *ctx) {
  if (it->numel == 0) return;
  wk__iter_job j = {it, fn, ctx};
  if (it->numel < WK_ITER_GRAIN)
    wk__iter_range(&j, 0, it->numel);
  else
    wk_parallel_for(0, it->numel, WK_ITER_GRAIN, wk__iter_range, &j);
}

/* Same, always on the calling thread (for order-dependent loops). */
static inline void wk_iter_run_serial(const wk_iter *it, wk_loop_fn fn, void *ctx) {
  if (it->numel == 0) return;
  wk__iter_job j = {it, fn, ctx};
  wk__iter_range(&j, 0, it->numel);
}

/* ---- Philox 4x32-10 (counter-based RNG; identical on every backend) ------------ */
static inline void wk_philox4x32(uint32_t ctr[4], const uint32_t key_in[2]) {
  uint32_t key[2] = {key_in[0], key_in[1]};
  for (int r = 0; r < 10; r++) {
    uint64_t p0 = (uint64_t)0xD2511F53u * ctr[0], p1 = (uint64_t)0xCD9E8D57u * ctr[2];
    uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0, hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    uint32_t c0 = hi1 ^ ctr[1] ^ key[0], c2 = hi0 ^ ctr[3] ^ key[1];
    ctr[0] = c0;
    ctr[1] = lo1;
    ctr[2] = c2;
    ctr[3] = lo0;
    key[0] += 0x9E3779B9u;
    key[1] += 0xBB67AE85u;
  }
}
/* Four 32-bit random words for counter value `i` of a stream keyed by seed. */
static inline void wk_philox_at(uint64_t seed, uint64_t i, uint32_t out[4]) {
  uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
  out[0] = (uint32_t)i;
  out[1] = (uint32_t)(i >> 32);
  out[2] = 0;
  out[3] = 0;
  wk_philox4x32(out, key);
}
/* Uniform in [0, 1) with 24 bits (float) or 53 bits (double). */
static inline float wk_u32_to_unit_f32(uint32_t x) { return (float)(x >> 8) * (1.0f / 16777216.0f); }
static inline double wk_u64_to_unit_f64(uint32_t hi, uint32_t lo) {
  return (double)((((uint64_t)hi << 32) | lo) >> 11) * (1.0 / 9007199254740992.0);
}

#endif
