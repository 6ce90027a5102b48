/* DLPack import and export: zero-copy exchange of tensors with other
 * frameworks; the storage stays alive until the consumer's deleter runs. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct {
  DLManagedTensor m;
  wk_tensor *owner;
  int64_t shape[WK_MAX_DIMS], strides[WK_MAX_DIMS];
} export_ctx;

static void export_deleter(DLManagedTensor *m) {
  export_ctx *c = (export_ctx *)m;
  int depth = wk__call_depth;
  wk__call_depth = depth + 1; /* plain release, whatever scope is open */
  wk_release(c->owner);
  wk__call_depth = depth;
  free(c);
}

static bool to_dl_dtype(wk_dtype dt, DLDataType *o) {
  o->lanes = 1;
  o->bits = (uint8_t)(wk_dtype_size(dt) * 8);
  switch (dt) {
    case WK_F32: case WK_F64: case WK_F16: o->code = kDLFloat; return true;
    case WK_BF16: o->code = kDLBfloat; return true;
    case WK_I8: case WK_I16: case WK_I32: case WK_I64: o->code = kDLInt; return true;
    case WK_U8: o->code = kDLUInt; return true;
    case WK_BOOL: o->code = kDLBool; o->bits = 8; return true;
    default: return false;
  }
}

static wk_dtype from_dl_dtype(DLDataType d) {
  if (d.lanes != 1) return WK_DTYPE_DEFAULT;
  switch (d.code) {
    case kDLFloat: return d.bits == 32 ? WK_F32 : d.bits == 64 ? WK_F64 : d.bits == 16 ? WK_F16 : WK_DTYPE_DEFAULT;
    case kDLBfloat: return d.bits == 16 ? WK_BF16 : WK_DTYPE_DEFAULT;
    case kDLInt:
      return d.bits == 8 ? WK_I8 : d.bits == 16 ? WK_I16 : d.bits == 32 ? WK_I32 : d.bits == 64 ? WK_I64 : WK_DTYPE_DEFAULT;
    case kDLUInt: return d.bits == 8 ? WK_U8 : WK_DTYPE_DEFAULT;
    case kDLBool: return d.bits == 8 ? WK_BOOL : WK_DTYPE_DEFAULT;
    default: return WK_DTYPE_DEFAULT;
  }
}

DLManagedTensor *wk_to_dlpack(wk_tensor *t) {
  if (!t) {
    wk__null_arg("to_dlpack", "t");
    return NULL;
  }
  export_ctx *c = wk_calloc(1, sizeof *c);
  if (!c) {
    wk_error(WK_ERR_NO_MEMORY, "to_dlpack: out of memory");
    return NULL;
  }
  if (!to_dl_dtype(t->dtype, &c->m.dl_tensor.dtype)) {
    free(c);
    wk_error(WK_ERR_DTYPE, "to_dlpack: dtype %s has no DLPack code", wk_dtype_name(t->dtype));
    return NULL;
  }
  wk_device dev = wk__device_norm(t->storage->device);
  const char *dn = wk_device_type_name(dev.type);
  if (dev.type == WK_DEVICE_CPU) {
    c->m.dl_tensor.device.device_type = kDLCPU;
  } else if (dn && strcmp(dn, "cuda") == 0) {
    c->m.dl_tensor.device.device_type = kDLCUDA;
  } else {
    free(c);
    wk_error(WK_ERR_DEVICE, "to_dlpack: device type '%s' has no DLPack code", dn ? dn : "?");
    return NULL;
  }
  c->m.dl_tensor.device.device_id = dev.index;
  memcpy(c->shape, t->sizes, sizeof c->shape);
  memcpy(c->strides, t->strides, sizeof c->strides);
  c->m.dl_tensor.data = t->storage->data;
  c->m.dl_tensor.byte_offset = (uint64_t)t->offset * wk_dtype_size(t->dtype);
  c->m.dl_tensor.ndim = t->ndim;
  c->m.dl_tensor.shape = c->shape;
  c->m.dl_tensor.strides = c->strides;
  c->m.manager_ctx = c;
  c->m.deleter = export_deleter;
  c->owner = wk_retain(t);
  return &c->m;
}

static void import_deleter(void *ctx) {
  DLManagedTensor *m = ctx;
  if (m->deleter) m->deleter(m);
}

wk_tensor *wk_from_dlpack(DLManagedTensor *m) {
  if (!m) {
    wk__null_arg("from_dlpack", "m");
    return NULL;
  }
  DLTensor *d = &m->dl_tensor;
  wk_dtype dt = from_dl_dtype(d->dtype);
  wk_device dev = {WK_DEVICE_CPU, 0};
  const char *why = NULL;
  if (!dt) why = "unsupported DLPack dtype";
  else if (d->ndim < 0 || d->ndim > WK_MAX_DIMS) why = "unsupported number of dimensions";
  else if (d->device.device_type == kDLCUDA || d->device.device_type == kDLCUDAHost) {
    if (d->device.device_type == kDLCUDA) {
      int32_t ty = wk_device_type_find("cuda");
      if (ty < 0) why = "a CUDA tensor, but no cuda device type is registered";
      else dev = (wk_device){ty, d->device.device_id};
    }
  } else if (d->device.device_type != kDLCPU) {
    why = "unsupported DLPack device";
  }
  if (!why && d->byte_offset % wk_dtype_size(dt)) why = "byte_offset is not a multiple of the element size";
  if (why) {
    wk_error(WK_ERR_INVALID_ARG, "from_dlpack: %s", why);
    if (m->deleter) m->deleter(m);
    return NULL;
  }
  int64_t strides[WK_MAX_DIMS];
  if (d->strides)
    memcpy(strides, d->strides, sizeof(int64_t) * (size_t)d->ndim);
  else
    wk__contiguous_strides(d->shape, d->ndim, strides);
  wk_tensor *t = wk_tensor_from_blob((char *)d->data + d->byte_offset, dt, dev, d->shape, strides, d->ndim,
                                     import_deleter, m);
  if (!t && m->deleter) m->deleter(m);
  return t;
}
