/* Composite ops, registered by the core for every device: written with other
 * ops (so autograd records those) or with the device interface (cross-device
 * copies). A backend may still register a direct kernel at higher priority. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "composite_kernel.h"

#define T(n) (args[n].u.t)
#define I(n) (args[n].u.i)

static wk_status out1(wk_value *outs, wk_tensor *t) {
  if (!t) return wk_last_error();
  outs[0] = WK_VT(t);
  return WK_OK;
}

static wk_status k_clone(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  wk_tensor *r = wk_empty_like(T(0), (wk_options){0});
  if (r && !wk_copy_(r, T(0))) {
    wk_release(r);
    r = NULL;
  }
  return out1(outs, r);
}

static wk_tensor *copy_to(wk_tensor *self, wk_dtype dt, wk_device dev) {
  wk_tensor *r = wk_empty(self->sizes, self->ndim, (wk_options){.dtype = dt, .device = dev});
  if (r && !wk_copy_(r, self)) {
    wk_release(r);
    return NULL;
  }
  return r;
}

static wk_status k_to_dtype(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  wk_tensor *self = T(0);
  wk_dtype dt = args[1].u.dtype;
  if (dt == self->dtype && !args[2].u.b) return out1(outs, wk_alias(self));
  return out1(outs, copy_to(self, dt, self->storage->device));
}

static wk_status k_to_device(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  wk_tensor *self = T(0);
  wk_device dev = wk__device_norm(args[1].u.device);
  wk_dtype dt = args[2].tag == WK_V_NONE ? self->dtype : args[2].u.dtype;
  if (!wk__device_iface(dev.type)) return wk_error(WK_ERR_DEVICE, "to(): unknown device type %d", dev.type);
  if (wk_device_equal(dev, self->storage->device) && dt == self->dtype && !args[3].u.b)
    return out1(outs, wk_alias(self));
  return out1(outs, copy_to(self, dt, dev));
}

/* Raw bytes of a contiguous tensor moved to a new cpu tensor. */
static wk_tensor *to_host(wk_tensor *src) {
  wk_tensor *dense = wk_contiguous(src); /* a view when already dense */
  if (!dense) return NULL;
  wk_tensor *h = wk_empty(src->sizes, src->ndim, (wk_options){.dtype = src->dtype});
  size_t n = (size_t)wk_tensor_numel(src) * wk_dtype_size(src->dtype);
  if (h && wk_device_copy(wk_tensor_data(h), wk_cpu(), wk_tensor_data(dense), dense->storage->device, n)) {
    wk_release(h);
    h = NULL;
  }
  wk_release(dense);
  return h;
}

/* copy_ between different devices: broadcasting and dtype conversion happen
 * on the cpu (whose kernels always exist), the bytes move through the device
 * interface; a strided non-cpu destination is filled by that device's copy_. */
static wk_status k_copy_cross(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  wk_tensor *self = T(0), *src = T(1);
  wk_device sd = wk__device_norm(src->storage->device), dd = wk__device_norm(self->storage->device);
  char a[48];
  if (dd.type == WK_DEVICE_META) { /* no data to write: the op's checks were its meta function */
    wk_tensor_bump_version(self);
    outs[0] = WK_VT(self);
    return WK_OK;
  }
  if (wk_device_equal(sd, dd))
    return wk_error(WK_ERR_NO_KERNEL, "copy_(): no kernel copies within device '%s'", wk_device_str(dd, a, sizeof a));
  bool same_layout = src->dtype == self->dtype && wk_tensor_is_contiguous(src) && wk_tensor_is_contiguous(self) &&
                     src->ndim == self->ndim && !memcmp(src->sizes, self->sizes, sizeof(int64_t) * (size_t)self->ndim);
  wk_status st = WK_OK;
  if (same_layout) { /* the common case: one transfer */
    st = wk_device_copy(wk_tensor_data(self), dd, wk_tensor_data(src), sd,
                        (size_t)wk_tensor_numel(self) * wk_dtype_size(self->dtype));
  } else {
    wk_tensor *host_src = sd.type == WK_DEVICE_CPU ? wk_retain(src) : to_host(src);
    if (!host_src) return wk_last_error();
    if (dd.type == WK_DEVICE_CPU) {
      if (!wk_copy_(self, host_src)) st = wk_last_error();
    } else {
      wk_tensor *staged = wk_empty(self->sizes, self->ndim, (wk_options){.dtype = self->dtype});
      if (!staged || !wk_copy_(staged, host_src)) st = wk_last_error();
      size_t n = (size_t)wk_tensor_numel(self) * wk_dtype_size(self->dtype);
      if (!st && wk_tensor_is_contiguous(self)) {
        st = wk_device_copy(wk_tensor_data(self), dd, wk_tensor_data(staged), wk_cpu(), n);
      } else if (!st) {
        wk_tensor *dev = wk_empty(self->sizes, self->ndim, (wk_options){.dtype = self->dtype, .device = dd});
        st = dev ? wk_device_copy(wk_tensor_data(dev), dd, wk_tensor_data(staged), wk_cpu(), n) : wk_last_error();
        if (!st && !wk_copy_(self, dev)) st = wk_last_error();
        wk_release(dev);
      }
      wk_release(staged);
    }
    wk_release(host_src);
  }
  if (st) return st;
  wk_tensor_bump_version(self);
  outs[0] = WK_VT(self);
  return WK_OK;
}

/* matmul over PyTorch's rank cases: dot, mm, matrix-vector, batched with
 * broadcast batch dimensions. */
static wk_status k_matmul(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  wk_tensor *a = T(0), *b = T(1);
  int da = a->ndim, db = b->ndim;
  char s1[256], s2[256];
  if (da == 0 || db == 0)
    return wk_error(WK_ERR_SHAPE, "matmul(): both arguments need at least 1 dimension, got %dD and %dD", da, db);
  if (da == 1 && db == 1) return out1(outs, wk_dot(a, b));
  if (da == 2 && db == 2) return out1(outs, wk_mm(a, b));
  int64_t ka = a->sizes[da - 1], kb = b->sizes[db == 1 ? 0 : db - 2];
  if (ka != kb) {
    return wk_error(WK_ERR_SHAPE, "matmul(): shapes %s and %s cannot be multiplied (%lld != %lld)",
                    wk__shape_str(a->sizes, da, s1, sizeof s1), wk__shape_str(b->sizes, db, s2, sizeof s2),
                    (long long)ka, (long long)kb);
  }
  if (da == 1 && db == 2) {
    wk_tensor *u = wk_unsqueeze(a, 0), *m = wk_mm(u, b), *r = wk_squeeze_dim(m, 0);
    wk_release(u);
    wk_release(m);
    return out1(outs, r);
  }
  if (db == 1 && da == 2) {
    wk_tensor *u = wk_unsqueeze(b, 1), *m = wk_mm(a, u), *r = wk_squeeze_dim(m, 1);
    wk_release(u);
    wk_release(m);
    return out1(outs, r);
  }
  if (da >= 3 && db <= 2) { /* fold the batch into rows: one mm */
    int64_t rows = 1; /* the batch's rows (numel / ka fails for ka == 0) */
    for (int i = 0; i < da - 1; i++) rows *= a->sizes[i];
    int64_t shp[2] = {rows, ka};
    wk_tensor *bb = db == 1 ? wk_unsqueeze(b, 1) : wk_retain(b);
    wk_tensor *a2 = wk_reshape(a, shp, 2), *m = wk_mm(a2, bb);
    int64_t osz[WK_MAX_DIMS];
    int on = 0;
    for (int i = 0; i < da - 1; i++) osz[on++] = a->sizes[i];
    if (db == 2) osz[on++] = b->sizes[1];
    wk_tensor *r = wk_reshape(m, osz, on);
    wk_release(bb);
    wk_release(a2);
    wk_release(m);
    return out1(outs, r);
  }
  /* general batched case */
  wk_tensor *a1 = da == 1 ? wk_unsqueeze(a, 0) : wk_retain(a);
  wk_tensor *b1 = db == 1 ? wk_unsqueeze(b, 1) : wk_retain(b);
  if (!a1 || !b1) {
    wk_release(a1);
    wk_release(b1);
    return wk_last_error();
  }
  int na = a1->ndim - 2, nb = b1->ndim - 2, nbat = na > nb ? na : nb;
  int64_t batch[WK_MAX_DIMS], B = 1;
  for (int i = 0; i < nbat; i++) {
    int ia = i - (nbat - na), ib = i - (nbat - nb);
    int64_t x = ia >= 0 ? a1->sizes[ia] : 1, y = ib >= 0 ? b1->sizes[ib] : 1;
    if (x != y && x != 1 && y != 1) {
      wk_release(a1);
      wk_release(b1);
      return wk_error(WK_ERR_SHAPE, "matmul(): batch dimensions of %s and %s are not broadcastable",
                      wk__shape_str(a->sizes, da, s1, sizeof s1), wk__shape_str(b->sizes, db, s2, sizeof s2));
    }
    batch[i] = x == 1 ? y : x;
    B *= batch[i];
  }
  int64_t n = a1->sizes[a1->ndim - 2], k = ka, m = b1->sizes[b1->ndim - 1];
  int64_t ea[WK_MAX_DIMS], eb[WK_MAX_DIMS];
  memcpy(ea, batch, sizeof(int64_t) * (size_t)nbat);
  memcpy(eb, batch, sizeof(int64_t) * (size_t)nbat);
  ea[nbat] = n;
  ea[nbat + 1] = k;
  eb[nbat] = k;
  eb[nbat + 1] = m;
  int64_t fa[3] = {B, n, k}, fb[3] = {B, k, m};
  wk_tensor *xa = wk_expand(a1, ea, nbat + 2), *xb = wk_expand(b1, eb, nbat + 2);
  wk_tensor *ra = wk_reshape(xa, fa, 3), *rb = wk_reshape(xb, fb, 3);
  wk_tensor *prod = wk_bmm(ra, rb);
  int64_t osz[WK_MAX_DIMS];
  int on = 0;
  for (int i = 0; i < nbat; i++) osz[on++] = batch[i];
  if (da > 1) osz[on++] = n;
  if (db > 1) osz[on++] = m;
  wk_tensor *r = wk_reshape(prod, osz, on);
  wk_release(a1);
  wk_release(b1);
  wk_release(xa);
  wk_release(xb);
  wk_release(ra);
  wk_release(rb);
  wk_release(prod);
  return out1(outs, r);
}

static wk_status k_linear(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  wk_tensor *x = T(0), *w = T(1), *bias = args[2].tag == WK_V_NONE ? NULL : T(2);
  if (w->ndim != 2 && w->ndim != 1)
    return wk_error(WK_ERR_SHAPE, "linear(): weight must be 1D or 2D, got %dD", w->ndim);
  wk_tensor *wt = wk_t(w);
  if (!wt) return wk_last_error();
  wk_tensor *r;
  if (x->ndim == 2 && bias && w->ndim == 2) {
    r = wk_addmm(bias, x, wt, 1.0, 1.0);
  } else {
    wk_tensor *m = wk_matmul(x, wt);
    r = bias && m ? wk_add(m, bias) : wk_retain(m);
    wk_release(m);
  }
  wk_release(wt);
  return out1(outs, r);
}

static wk_status k_outer(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  if (T(0)->ndim != 1 || T(1)->ndim != 1)
    return wk_error(WK_ERR_SHAPE, "outer(): expects 1D tensors, got %dD and %dD", T(0)->ndim, T(1)->ndim);
  wk_tensor *col = wk_unsqueeze(T(0), 1);
  wk_tensor *r = wk_mul(col, T(1));
  wk_release(col);
  return out1(outs, r);
}

static wk_status k_stack(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  int n = args[0].len;
  if (n == 0) return wk_error(WK_ERR_INVALID_ARG, "stack(): expects a non-empty TensorList");
  wk_tensor *const *ts = args[0].u.tensors;
  char s1[256], s2[256];
  for (int i = 1; i < n; i++) {
    bool same = ts[i]->ndim == ts[0]->ndim;
    for (int d = 0; same && d < ts[0]->ndim; d++) same = ts[i]->sizes[d] == ts[0]->sizes[d];
    if (!same)
      return wk_error(WK_ERR_SHAPE, "stack(): expects each tensor to be equal size, but got %s at entry 0 and %s at entry %d",
                      wk__shape_str(ts[0]->sizes, ts[0]->ndim, s1, sizeof s1),
                      wk__shape_str(ts[i]->sizes, ts[i]->ndim, s2, sizeof s2), i);
  }
  bool ok;
  int d = wk__wrap_dim("stack", I(1), ts[0]->ndim + 1, &ok);
  if (!ok) return wk_last_error();
  wk_tensor **u = wk_calloc((size_t)n, sizeof *u);
  if (!u) return wk_error(WK_ERR_NO_MEMORY, "stack(): out of memory");
  wk_tensor *r = NULL;
  int k = 0;
  for (; k < n; k++)
    if (!(u[k] = wk_unsqueeze(ts[k], d))) break;
  if (k == n) r = wk_cat(u, n, d);
  for (int i = 0; i < k; i++) wk_release(u[i]);
  free(u);
  return out1(outs, r);
}

/* cat on any device with narrow and copy_: the result is what the meta function
 * decided (core/meta_index.c); each input is copied into its slice. */
static wk_status k_cat(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  const wk_meta_out *m = &c->meta[0];
  wk_tensor *r = wk_empty(m->sizes, m->ndim, (wk_options){.dtype = m->dtype, .device = c->device});
  if (!r) return wk_last_error();
  if (wk_tensor_numel(r) == 0 || c->device.type == WK_DEVICE_META) return out1(outs, r); /* nothing to copy */
  bool ok = true;
  int d = wk__wrap_dim("cat", I(1), r->ndim, &ok); /* checked by the meta function */
  int64_t off = 0;
  for (int i = 0; i < args[0].len && ok; i++) {
    wk_tensor *t = args[0].u.tensors[i];
    if (t->ndim == 1 && t->sizes[0] == 0) continue; /* a legacy empty tensor takes no part */
    int64_t len = t->sizes[d];
    if (len > 0) {
      wk_tensor *v = wk_narrow(r, d, off, len);
      ok = v && wk_copy_(v, t);
      wk_release(v);
    }
    off += len;
  }
  if (!ok) {
    wk_release(r);
    return wk_last_error();
  }
  return out1(outs, r);
}

/* The fused pointwise backward ops (relu's, sigmoid's, tanh's derivative), for
 * devices whose plugin has no kernel of its own: written with forward ops. */
static wk_status k_threshold_backward(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  wk_tensor *mask = wk_gt_scalar(T(1), args[2].u.f);
  wk_tensor *zero = wk_scalar_tensor(0, T(0)->dtype);
  wk_tensor *r = mask && zero ? wk_where(mask, T(0), zero) : NULL;
  wk_release(mask);
  wk_release(zero);
  return out1(outs, r);
}

/* 1 - t, a new reference. */
static wk_tensor *one_minus(wk_tensor *t) {
  wk_tensor *n = wk_neg(t), *r = n ? wk_add_scalar(n, 1.0) : NULL;
  wk_release(n);
  return r;
}

static wk_status k_sigmoid_backward(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  wk_tensor *om = one_minus(T(1));
  wk_tensor *d = om ? wk_mul(T(1), om) : NULL;
  wk_tensor *r = d ? wk_mul(T(0), d) : NULL;
  wk_release(om);
  wk_release(d);
  return out1(outs, r);
}

static wk_status k_tanh_backward(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  wk_tensor *sq = wk_mul(T(1), T(1));
  wk_tensor *d = sq ? one_minus(sq) : NULL; /* 1 - y^2 */
  wk_tensor *r = d ? wk_mul(T(0), d) : NULL;
  wk_release(sq);
  wk_release(d);
  return out1(outs, r);
}

void wk__composites_register(void);
void wk__composites_register(void) {
  static const struct {
    const char *op;
    wk_kernel_fn fn;
    int prio;
  } ks[] = {{"clone", k_clone, WK_PRIORITY_FALLBACK},      {"to.dtype", k_to_dtype, WK_PRIORITY_FALLBACK},
            {"to.device", k_to_device, WK_PRIORITY_FALLBACK}, {"copy_", k_copy_cross, WK_PRIORITY_FALLBACK},
            {"matmul", k_matmul, WK_PRIORITY_FALLBACK},    {"linear", k_linear, WK_PRIORITY_FALLBACK},
            {"outer", k_outer, WK_PRIORITY_FALLBACK},      {"stack", k_stack, WK_PRIORITY_FALLBACK},
            {"cat", k_cat, WK_PRIORITY_FALLBACK},
            {"threshold_backward", k_threshold_backward, WK_PRIORITY_FALLBACK},
            {"sigmoid_backward", k_sigmoid_backward, WK_PRIORITY_FALLBACK},
            {"tanh_backward", k_tanh_backward, WK_PRIORITY_FALLBACK}};
  for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
    wk_kernel_desc d = {sizeof d, ks[i].op, WK_DEVICE_DEFAULT, ks[i].prio, ks[i].fn, NULL, NULL, "core.composite"};
    wk_kernel_register(&d);
  }
}

wk_status wk__composite_finish(wk_value *outs, wk_tensor *const *r, int n, int depth) {
  wk_status s = WK_OK;
  for (int i = 0; i < n && !s; i++)
    if (!r[i]) {
      if (!wk__error_pending()) wk__error_revive();
      s = wk_last_error() ? wk_last_error() : WK_ERR_INTERNAL;
    }
  for (int i = 0; i < n && !s; i++) outs[i] = WK_VT(wk_scope_keep(r[i]));
  wk_scope_end();
  wk__call_depth = depth;
  return s;
}
