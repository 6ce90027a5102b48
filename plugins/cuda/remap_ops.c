/* cuda flip, roll, repeat and masked_select, written with other cuda ops:
 * flip and roll are index_select along each moved dim with a small index
 * built on the host; repeat is a broadcast view made contiguous (copy_);
 * masked_select reads the mask back (the result's size depends on it, as
 * in PyTorch, which synchronises too) and gathers with index_select. The
 * cpu plugin's checks and messages. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_kernels.h"

/* x (consumed) with dimension d remapped: out[.., c, ..] = x[.., src(c), ..],
 * src(c) = n-1-c (flip) or (c - shift) mod n (roll). */
static wk_tensor *remap_dim(wk_tensor *x, int d, bool flip, int64_t shift, wk_device dev) {
  if (!x) return NULL;
  int64_t n = wk_tensor_size(x, d);
  wk_tensor *h = wk_empty(&n, 1, (wk_options){.dtype = WK_I64});
  if (!h) {
    wk_release(x);
    return NULL;
  }
  int64_t *v = wk_tensor_data(h), sh = n ? ((shift % n) + n) % n : 0;
  for (int64_t c = 0; c < n; c++) v[c] = flip ? n - 1 - c : (c - sh + n) % n;
  wk_tensor *ix = wk_to_device(h, dev);
  wk_release(h);
  wk_tensor *r = ix ? wk_index_select(x, d, ix) : NULL;
  wk_release(ix);
  wk_release(x);
  return r;
}

/* flip/roll with per-dim flags: an unchanged copy when nothing moves. */
static wk_tensor *flip_roll(wk_tensor *self, const bool *flip, const int64_t *shift, wk_device dev) {
  int nd = wk_tensor_dim(self);
  wk_tensor *r = wk_retain(self);
  bool moved = false;
  if (wk_tensor_numel(self) > 0)
    for (int d = 0; d < nd && r; d++)
      if (flip[d] || shift[d]) {
        r = remap_dim(r, d, flip[d], shift[d], dev);
        moved = true;
      }
  if (r && !moved) {
    wk_tensor *c = wk_clone(r);
    wk_release(r);
    r = c;
  }
  return r;
}

static wk_status k_flip(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_remap_plan p;
  wk_flip_plan(&p, WK_ARG_T(0), &args[1]);
  wk_status s = cuda_enter("flip", ctx->device);
  if (s) return s;
  return wk_kernel_out1(outs, flip_roll(WK_ARG_T(0), p.flip, p.shift, ctx->device));
}

static wk_status k_roll(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *self = WK_ARG_T(0);
  wk_remap_plan p;
  wk_roll_plan(&p, self, &args[1], &args[2]);
  wk_status s = cuda_enter("roll", ctx->device);
  if (s) return s;
  if (!p.flat) return wk_kernel_out1(outs, flip_roll(self, p.flip, p.shift, ctx->device));
  /* no dims: roll the flattened tensor */
  int64_t numel = wk_tensor_numel(self);
  wk_tensor *flat = wk_reshape(self, &numel, 1), *rf = flat ? flip_roll(flat, p.flip, p.shift, ctx->device) : NULL;
  wk_release(flat);
  wk_tensor *r = rf ? wk_reshape(rf, wk_tensor_sizes(self), wk_tensor_dim(self)) : NULL;
  wk_release(rf);
  return wk_kernel_out1(outs, r);
}

/* repeat: x viewed as [1, s0, 1, s1, ...], expanded to [r0, s0, r1, s1, ...],
 * made contiguous and reshaped to [r0*s0, r1*s1, ...]. */
static wk_status k_repeat(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *self = WK_ARG_T(0);
  int64_t psz[WK_MAX_DIMS], osz[WK_MAX_DIMS], vsz[2 * WK_MAX_DIMS], esz[2 * WK_MAX_DIMS];
  int nr = wk_repeat_shapes(args, psz, NULL, osz);
  for (int k = 0; k < nr; k++) {
    vsz[2 * k] = 1;
    vsz[2 * k + 1] = psz[k];
    esz[2 * k] = args[1].u.ints[k]; /* repeats[k] */
    esz[2 * k + 1] = psz[k];
  }
  wk_status s = cuda_enter("repeat", ctx->device);
  if (s) return s;
  if (nr == 0) return wk_kernel_out1(outs, wk_clone(self));
  /* the [r, s] pairs need 2 * nr dims */
  if (2 * nr > WK_MAX_DIMS)
    return wk_error(WK_ERR_SHAPE, "repeat(): the cuda kernel handles at most %d repeat dims, got %d", WK_MAX_DIMS / 2,
                    nr);
  wk_tensor *c = wk_contiguous(self);
  wk_tensor *v = c ? wk_reshape(c, vsz, 2 * nr) : NULL;
  wk_tensor *e = v ? wk_expand(v, esz, 2 * nr) : NULL;
  wk_tensor *r = e ? cuda_new(esz, 2 * nr, wk_tensor_dtype(self), ctx->device) : NULL;
  if (r && wk_tensor_numel(r) > 0 && !wk_copy_(r, e)) {
    wk_release(r);
    r = NULL;
  }
  wk_tensor *o = r ? wk_reshape(r, osz, nr) : NULL;
  wk_release(c);
  wk_release(v);
  wk_release(e);
  wk_release(r);
  return wk_kernel_out1(outs, o);
}

static wk_status k_masked_select(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *xc, *mc;
  int64_t cnt;
  wk_status s = cuda_enter("masked_select", ctx->device);
  if (s || (s = wk_masked_select_operands(WK_ARG_T(0), WK_ARG_T(1), &xc, &mc, &cnt))) return s;
  /* the selected flat positions, gathered on the device by index_select */
  int64_t numel = wk_tensor_numel(mc);
  const bool *m = wk_tensor_data(mc);
  wk_tensor *r = NULL, *h = wk_empty(&cnt, 1, (wk_options){.dtype = WK_I64});
  if (h) {
    int64_t *ix = wk_tensor_data(h);
    for (int64_t i = 0, k = 0; i < numel; i++)
      if (m[i]) ix[k++] = i;
    wk_tensor *ixd = wk_to_device(h, ctx->device);
    wk_tensor *flat = ixd ? wk_reshape(xc, &numel, 1) : NULL;
    r = flat ? wk_index_select(flat, 0, ixd) : NULL;
    wk_release(flat);
    wk_release(ixd);
    wk_release(h);
  }
  wk_release(xc);
  wk_release(mc);
  return wk_kernel_out1(outs, r);
}

wk_status cuda_register_remap(void) {
  wk_status s = cuda_reg("flip", k_flip, NULL, NULL, "cuda.flip");
  if (!s) s = cuda_reg("roll", k_roll, NULL, NULL, "cuda.roll");
  if (!s) s = cuda_reg("repeat", k_repeat, NULL, NULL, "cuda.repeat");
  if (!s) s = cuda_reg("masked_select", k_masked_select, NULL, NULL, "cuda.masked_select");
  return s;
}
