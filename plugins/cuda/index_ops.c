/* cuda indexing family: index_select, gather, scatter / scatter_add (all
 * forms), masked_fill, embedding and embedding_dense_backward and one_hot
 * (cat is the core's composite). Argument checks and result shapes of the
 * indexing ops are their meta functions (core/meta_index.c). Index bounds are
 * checked on the device (index.cu records the first bad position); reading
 * that slot back waits for the kernel, as PyTorch's device-side asserts
 * would fail the next synchronisation instead. Scatters and embedding's
 * backward are deterministic (no atomics on the data). */
#include <string.h>

#include "cuda_kernels.h"

static int64_t nsize(const wk_tensor *t, int d) {
  return wk_tensor_dim(t) == 0 ? 1 : wk_tensor_sizes(t)[d];
}

/* Reads the bad-index slot of a launch over n indices (contiguous i64 idx):
 * *found and the offending value. Consumes slot. */
static wk_status bad_index(wk_tensor *slot, wk_tensor *idx, int64_t n, bool *found, int64_t *value) {
  int64_t v = 0;
  *found = false;
  wk_status s = cuda_slot_take(slot, &v);
  if (s || v == 0) return s;
  *found = true;
  wk_tensor *flat = wk_reshape(idx, &n, 1);
  wk_tensor *e = flat ? wk_narrow(flat, 0, n - v, 1) : NULL;
  s = e ? wk_item_i64(e, value) : wk_last_error();
  wk_release(e);
  wk_release(flat);
  return s;
}

/* ---- index_select ---- */
static wk_status k_index_select(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *self = WK_ARG_T(0), *index = WK_ARG_T(2);
  int nd = wk_tensor_dim(self), d = 0;
  wk_status s = wk_check_dim("index_select", WK_ARG_I(1), nd, &d); /* checked by the meta function */
  if (s) return s;
  int64_t n = wk_tensor_numel(index);
  wk_device dev = ctx->device;
  if ((s = cuda_enter("index_select", dev))) return s;
  wk_dtype dt = wk_tensor_dtype(self);
  int64_t S = nsize(self, d), outer = 1, inner = 1;
  for (int k = 0; k < d; k++) outer *= nsize(self, k);
  for (int k = d + 1; k < nd; k++) inner *= nsize(self, k);
  wk_tensor *x = cuda_dense(self, dt, dev), *ix = cuda_dense(index, WK_I64, dev), *slot = cuda_slot_new(dev);
  wk_tensor *r = x && ix && slot ? wk_meta_empty(ctx, 0) : NULL;
  if (r)
    s = (wk_status)cuda_launch_index_select((int)wk_dtype_size(dt), wk_tensor_data(r), wk_tensor_data(x),
                                            wk_tensor_data(ix), outer, S, n, inner, wk_tensor_data(slot),
                                            cuda_stream(dev));
  else
    s = wk_last_error();
  bool bad = false;
  int64_t bv = 0;
  if (!s)
    s = bad_index(slot, ix, n, &bad, &bv);
  else
    wk_release(slot);
  if (!s && bad)
    s = wk_error(WK_ERR_INDEX,
                 "index_select(): index %lld is out of bounds for dimension %d with size %lld (index out of range in "
                 "self)",
                 (long long)bv, d, (long long)S);
  wk_release(x);
  wk_release(ix);
  if (s) {
    wk_release(r);
    return s;
  }
  return wk_kernel_out1(outs, r);
}

/* ---- gather / scatter ---- */
/* Layout of t seen with index's number of dims (0-dim tensors as [1]). */
static cuda_strided sg_layout(const wk_tensor *t, int nd) {
  cuda_strided l = cuda_layout(t, NULL, 0);
  if (l.ndim == 0 && nd > 0) {
    l.ndim = 1;
    l.sizes[0] = 1;
    l.strides[0] = 0;
  }
  return l;
}

static wk_status bounds_error(const char *op, int64_t v, int d, int64_t size) {
  return wk_error(WK_ERR_INDEX, "%s(): index %lld is out of bounds for dimension %d with size %lld", op, (long long)v,
                  d, (long long)size);
}

/* gather of checked arguments on dev; with check, out-of-range indices are
 * an error (read back from the device: a synchronisation), without it the
 * caller guarantees them in range (they are skipped if not). */
static wk_tensor *gather_run(wk_tensor *self, int d, wk_tensor *index, wk_device dev, bool check) {
  int64_t n = wk_tensor_numel(index);
  wk_dtype dt = wk_tensor_dtype(self);
  wk_tensor *r = cuda_new(wk_tensor_sizes(index), wk_tensor_dim(index), dt, dev);
  if (!r || n == 0) return r;
  wk_tensor *x = cuda_operand(self, dt, dev), *ix = cuda_dense(index, WK_I64, dev), *slot = cuda_slot_new(dev);
  int ind = wk_tensor_dim(ix) > 0 ? wk_tensor_dim(ix) : 1;
  wk_status s;
  if (x && ix && slot)
    s = (wk_status)cuda_launch_gather((int)wk_dtype_size(dt), wk_tensor_data(r), wk_tensor_data(x), sg_layout(x, ind),
                                      wk_tensor_data(ix), sg_layout(ix, ind), d, wk_tensor_data(slot), n,
                                      cuda_stream(dev));
  else
    s = wk_last_error();
  bool bad = false;
  int64_t bv = 0;
  if (!s && check)
    s = bad_index(slot, ix, n, &bad, &bv);
  else
    wk_release(slot);
  if (!s && bad) s = bounds_error("gather", bv, d, nsize(self, d));
  wk_release(x);
  wk_release(ix);
  if (s) {
    wk_release(r);
    return NULL;
  }
  return r;
}

wk_tensor *cuda_gather_nocheck(wk_tensor *self, int dim, wk_tensor *index) {
  return gather_run(self, dim, index, wk_tensor_device(self), false);
}

static wk_status k_gather(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *self = WK_ARG_T(0), *index = WK_ARG_T(2);
  int d = 0;
  wk_status s = wk_check_dim("gather", WK_ARG_I(1), wk_tensor_dim(self), &d); /* checked by the meta function */
  if (s) return s;
  if ((s = cuda_enter("gather", ctx->device))) return s;
  return wk_kernel_out1(outs, gather_run(self, d, index, ctx->device, true));
}

static wk_status k_scatter(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_scatter_args a; /* variant (add, inplace, label), dim checked by the meta function: SDK kernel_util.h */
  wk_scatter_args_of(&a, ctx, args);
  wk_status s = WK_OK;
  wk_device dev = ctx->device;
  if ((s = cuda_enter(a.op, dev))) return s;
  /* the work copy: self in the compute dtype (sums of f16/bf16/narrow ints in f32/i64) */
  wk_dtype cd = a.v->add ? (wk_dtype_is_floating(a.dt) ? (a.dt == WK_F64 ? WK_F64 : WK_F32) : WK_I64) : a.dt;
  wk_tensor *w = cuda_operand(a.self, cd, dev);
  if (w && w == a.self) { /* never write the caller's tensor before the checks pass */
    wk_release(w);
    w = wk_clone(a.self);
  }
  if (w && !wk_tensor_is_contiguous(w)) {
    wk_tensor *c = wk_contiguous(w);
    wk_release(w);
    w = c;
  }
  wk_tensor *sv = NULL, *ix = NULL, *slot = NULL;
  if (w && a.n) {
    sv = cuda_operand(a.src, cd, dev);
    ix = cuda_dense(a.index, WK_I64, dev);
    slot = cuda_slot_new(dev);
  }
  if (!w || (a.n && (!sv || !ix || !slot))) s = wk_last_error();
  if (!s && a.n) {
    int ind = wk_tensor_dim(ix) > 0 ? wk_tensor_dim(ix) : 1;
    s = (wk_status)cuda_launch_scatter(a.v->add, cuda_dt(cd), (int)wk_dtype_size(cd), wk_tensor_data(w),
                                       sg_layout(w, ind), wk_tensor_data(ix), sg_layout(ix, ind), wk_tensor_data(sv),
                                       sg_layout(sv, ind), a.dim, wk_tensor_data(slot), cuda_stream(dev));
    bool bad = false;
    int64_t bv = 0;
    if (!s) {
      s = bad_index(slot, ix, a.n, &bad, &bv);
      slot = NULL;
    }
    if (!s && bad) s = bounds_error(a.op, bv, a.dim, nsize(a.self, a.dim));
  }
  wk_release(slot);
  wk_release(sv);
  wk_release(ix);
  if (s) {
    wk_release(w);
    return s;
  }
  if (a.v->inplace) return cuda_deliver(a.op, CUDA_INPLACE, w, a.self, outs);
  return wk_kernel_out1(outs, wk_cast_own(w, a.dt));
}

/* ---- masked_fill ---- */
static wk_status k_masked_fill(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  bool inplace = ((const wk_index_variant *)ctx->user)->inplace;
  const char *op = inplace ? "masked_fill_" : "masked_fill";
  wk_tensor *self = WK_ARG_T(0), *mask = WK_ARG_T(1);
  wk_dtype dt = wk_tensor_dtype(self);
  uint64_t bits = 0;
  if (args[2].tag == WK_V_INT && !wk_dtype_is_floating(dt))
    wk_store_i64(&bits, dt, args[2].u.i);
  else
    wk_store_f64(&bits, dt, wk_value_as_f64(&args[2]));
  const wk_meta_out *mo = wk_kernel_meta(ctx, 0); /* the broadcast shape */
  const int64_t *shape = mo->sizes;
  int nd = mo->ndim;
  wk_device dev = ctx->device;
  wk_status s = cuda_enter(op, dev);
  if (s) return s;
  wk_tensor *m = cuda_operand(mask, WK_BOOL, dev), *x = cuda_operand(self, dt, dev);
  wk_tensor *r = m && x ? cuda_new(shape, nd, dt, dev) : NULL;
  if (r)
    s = (wk_status)cuda_launch_where((int)wk_dtype_size(dt), wk_tensor_data(r), wk_tensor_data(m),
                                     cuda_layout(m, shape, nd), NULL, cuda_layout(r, NULL, 0), bits, wk_tensor_data(x),
                                     cuda_layout(x, shape, nd), 0, wk_tensor_numel(r), cuda_stream(dev));
  else
    s = wk_last_error();
  wk_release(m);
  wk_release(x);
  if (s) {
    wk_release(r);
    return s;
  }
  return cuda_deliver(op, inplace ? CUDA_INPLACE : CUDA_FUNCTIONAL, r, self, outs);
}

/* ---- embedding ---- */
static wk_status k_embedding(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *weight = WK_ARG_T(0), *indices = WK_ARG_T(1);
  char a[160];
  if (wk_tensor_dim(weight) != 2)
    return wk_error(WK_ERR_SHAPE, "embedding(): 'weight' must be 2-D, got shape %s",
                    wk_shape_str(weight, a, sizeof a));
  wk_dtype it = wk_tensor_dtype(indices);
  if (!wk_dtype_is_integral(it))
    return wk_error(WK_ERR_DTYPE,
                    "embedding(): Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                    "Long, Int; but got %s instead",
                    wk_dtype_name(it));
  int nd = wk_tensor_dim(indices);
  if (nd + 1 > WK_MAX_DIMS)
    return wk_error(WK_ERR_SHAPE, "embedding(): indices have %d dimensions, at most %d supported", nd, WK_MAX_DIMS - 1);
  wk_device dev = ctx->device;
  wk_status s = cuda_enter("embedding", dev);
  if (s) return s;
  int64_t V = wk_tensor_size(weight, 0), D = wk_tensor_size(weight, 1), n = wk_tensor_numel(indices), osz[WK_MAX_DIMS];
  memcpy(osz, wk_tensor_sizes(indices), sizeof(int64_t) * (size_t)nd);
  osz[nd] = D;
  wk_dtype dt = wk_tensor_dtype(weight);
  wk_tensor *w = cuda_dense(weight, dt, dev), *ix = cuda_dense(indices, WK_I64, dev), *slot = cuda_slot_new(dev);
  wk_tensor *r = w && ix && slot ? cuda_new(osz, nd + 1, dt, dev) : NULL;
  if (r)
    s = (wk_status)cuda_launch_index_select((int)wk_dtype_size(dt), wk_tensor_data(r), wk_tensor_data(w),
                                            wk_tensor_data(ix), 1, V, n, D, wk_tensor_data(slot), cuda_stream(dev));
  else
    s = wk_last_error();
  bool bad = false;
  int64_t bv = 0;
  if (!s)
    s = bad_index(slot, ix, n, &bad, &bv);
  else
    wk_release(slot);
  if (!s && bad)
    s = wk_error(WK_ERR_INDEX, "embedding(): index out of range in self (index %lld, num_embeddings %lld)",
                 (long long)bv, (long long)V);
  wk_release(w);
  wk_release(ix);
  if (s) {
    wk_release(r);
    return s;
  }
  return wk_kernel_out1(outs, r);
}

static wk_status k_embedding_dense_backward(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = "embedding_dense_backward";
  wk_tensor *go = WK_ARG_T(0), *indices = WK_ARG_T(1);
  int64_t V = WK_ARG_I(2), pidx = WK_ARG_I(3);
  char a[160], b[160];
  if (!wk_dtype_is_floating(wk_tensor_dtype(go)))
    return wk_error(WK_ERR_DTYPE, "%s(): expected a floating point grad_output, got %s", op,
                    wk_dtype_name(wk_tensor_dtype(go)));
  if (!wk_dtype_is_integral(wk_tensor_dtype(indices)))
    return wk_error(WK_ERR_DTYPE,
                    "%s(): Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, "
                    "Int; but got %s instead",
                    op, wk_dtype_name(wk_tensor_dtype(indices)));
  if (V < 0) return wk_error(WK_ERR_INVALID_ARG, "%s(): num_weights must be non-negative, got %lld", op, (long long)V);
  int nd = wk_tensor_dim(indices);
  bool ok = wk_tensor_dim(go) == nd + 1;
  for (int i = 0; ok && i < nd; i++) ok = wk_tensor_sizes(go)[i] == wk_tensor_sizes(indices)[i];
  if (!ok)
    return wk_error(WK_ERR_SHAPE,
                    "%s(): expected grad_output of shape indices.shape + [embedding_dim] (indices %s), but got %s", op,
                    wk_shape_str(indices, a, sizeof a), wk_shape_str(go, b, sizeof b));
  wk_device dev = ctx->device;
  wk_status s = cuda_enter(op, dev);
  if (s) return s;
  int64_t D = wk_tensor_size(go, nd), osz[2] = {V, D}, n = wk_tensor_numel(indices);
  wk_dtype dt = wk_tensor_dtype(go), cd = dt == WK_F64 ? WK_F64 : WK_F32;
  wk_tensor *g = cuda_dense(go, cd, dev), *ix = cuda_dense(indices, WK_I64, dev), *slot = cuda_slot_new(dev);
  wk_tensor *r = g && ix && slot ? cuda_new(osz, 2, cd, dev) : NULL;
  if (r)
    s = (wk_status)cuda_launch_embedding_backward(cuda_dt(cd), wk_tensor_data(r), wk_tensor_data(g), wk_tensor_data(ix),
                                                  n, D, V, pidx, wk_tensor_data(slot), cuda_stream(dev));
  else
    s = wk_last_error();
  bool bad = false;
  int64_t bv = 0;
  if (!s)
    s = bad_index(slot, ix, n, &bad, &bv);
  else
    wk_release(slot);
  if (!s && bad)
    s = wk_error(WK_ERR_INDEX, "%s(): index out of range in self (index %lld, num_weights %lld)", op, (long long)bv,
                 (long long)V);
  wk_release(g);
  wk_release(ix);
  if (s) {
    wk_release(r);
    return s;
  }
  return wk_kernel_out1(outs, wk_cast_own(r, dt));
}

/* ---- one_hot: eq(self[..., None], arange(C)) as int64 ---- */
static wk_status k_one_hot(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *self = WK_ARG_T(0);
  int64_t nc = WK_ARG_I(1);
  int nd = wk_tensor_dim(self);
  int64_t n = wk_tensor_numel(self);
  wk_device dev = ctx->device;
  wk_status s = cuda_enter("one_hot", dev);
  if (s) return s;
  if (n > 0 && nc > 0) { /* one read-back: are all classes in [0, nc)? */
    wk_tensor *lo = wkx_lt__Scalar(self, WK_VI(0)), *hi = lo ? wkx_ge__Scalar(self, WK_VI(nc)) : NULL;
    wk_tensor *bad = hi ? wk_logical_or(lo, hi) : NULL, *any = bad ? wk_any(bad) : NULL;
    double v = 0;
    s = any ? wk_item(any, &v) : wk_last_error();
    wk_release(lo);
    wk_release(hi);
    wk_release(bad);
    wk_release(any);
    if (s) return s;
    if (v == 0) n = 0; /* valid: skip the min/max below */
  }
  if (n > 0) {
    wk_tensor *tmn = wk_min(self), *tmx = tmn ? wk_max(self) : NULL;
    int64_t mn = 0, mx = 0;
    s = tmn && tmx ? wk_item_i64(tmn, &mn) : wk_last_error();
    if (!s) s = wk_item_i64(tmx, &mx);
    wk_release(tmn);
    wk_release(tmx);
    if (s) return s;
    if (mn < 0)
      return wk_error(WK_ERR_INVALID_ARG, "one_hot(): Class values must be non-negative. (got %lld)", (long long)mn);
    if (nc == -1)
      nc = mx + 1;
    else if (nc <= mx)
      return wk_error(WK_ERR_INVALID_ARG,
                      "one_hot(): Class values must be smaller than num_classes. (got class %lld, num_classes %lld)",
                      (long long)mx, (long long)nc);
  }
  wk_tensor *ar = wk_arange_int(0, nc, 1, (wk_options){.dtype = WK_I64, .device = dev});
  wk_tensor *u = ar ? wk_unsqueeze(self, nd) : NULL;
  wk_tensor *e = u ? wk_eq(u, ar) : NULL;
  wk_tensor *r = e ? wk_to_dtype(e, WK_I64) : NULL;
  wk_release(ar);
  wk_release(u);
  wk_release(e);
  return wk_kernel_out1(outs, r);
}

wk_status cuda_register_index(void) {
  wk_status s = WK_OK;
#define REG(op, k, v) \
  if (!s) s = cuda_reg(op, k_##k, NULL, (void *)wk_index_variant_at(v), "cuda.index");
  WK_INDEX_KERNELS(REG)
  REG("embedding", embedding, 0)
  REG("embedding_dense_backward", embedding_dense_backward, 0)
#undef REG
  return s;
}
