/* Unboxed kernels: a plain C function registered for an op is called from the
 * boxed convention through a libffi call interface built once from the
 * op's schema (see wk_kernel_register_unboxed for the type mapping). */
#include <ffi.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define MAX_FFI_ARGS (2 * WK_MAX_ARGS + WK_MAX_OUTS)

typedef struct {
  ffi_cif cif;
  ffi_type *types[MAX_FFI_ARGS];
  int nffi;
  void (*fn)(void);
  const wk__schema *schema;
} ffi_prep;

void *wk__ffi_prepare(const wk__schema *s, void (*fn)(void)) {
  if (s->returns_list) {
    wk_error(WK_ERR_UNSUPPORTED, "wk_kernel_register_unboxed: op '%s' returns Tensor[]; register a boxed kernel",
             s->name);
    return NULL;
  }
  ffi_prep *p = wk_calloc(1, sizeof *p);
  if (!p) {
    wk_error(WK_ERR_NO_MEMORY, "wk_kernel_register_unboxed: out of memory");
    return NULL;
  }
  int n = 0;
  for (int i = 0; i < s->nargs; i++) {
    const wk__arg *a = &s->args[i];
    switch (a->type) {
      case WK__A_TENSOR: case WK__A_STR: case WK__A_DEVICE: p->types[n++] = &ffi_type_pointer; break;
      case WK__A_INT: p->types[n++] = a->optional ? &ffi_type_pointer : &ffi_type_sint64; break;
      case WK__A_FLOAT: case WK__A_SCALAR: p->types[n++] = a->optional ? &ffi_type_pointer : &ffi_type_double; break;
      case WK__A_BOOL: p->types[n++] = a->optional ? &ffi_type_pointer : &ffi_type_uint8; break;
      case WK__A_DTYPE: p->types[n++] = &ffi_type_sint32; break;
      case WK__A_INTS: case WK__A_FLOATS: case WK__A_TENSORS:
        p->types[n++] = &ffi_type_pointer;
        p->types[n++] = &ffi_type_sint64;
        break;
    }
  }
  ffi_type *ret = &ffi_type_pointer;
  if (s->nouts != 1) {
    for (int i = 0; i < s->nouts; i++) p->types[n++] = &ffi_type_pointer;
    ret = &ffi_type_sint32;
  }
  p->nffi = n;
  if (ffi_prep_cif(&p->cif, FFI_DEFAULT_ABI, (unsigned)n, ret, p->types) != FFI_OK) {
    free(p);
    wk_error(WK_ERR_INTERNAL, "wk_kernel_register_unboxed: libffi could not prepare a call for '%s'", s->name);
    return NULL;
  }
  p->fn = fn;
  p->schema = s;
  return p;
}

typedef union {
  void *p;
  int64_t i;
  double f;
  uint8_t b;
  int32_t i32;
} slot;

wk_status wk__ffi_kernel(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const ffi_prep *p = ctx->user;
  const wk__schema *s = p->schema;
  slot vals[MAX_FFI_ARGS];
  double scal[WK_MAX_ARGS];
  void *ptrs[MAX_FFI_ARGS];
  wk_tensor *res[WK_MAX_OUTS] = {0};
  wk_tensor **resp[WK_MAX_OUTS];
  int n = 0;
  for (int i = 0; i < s->nargs; i++) {
    const wk__arg *a = &s->args[i];
    const wk_value *v = &args[i];
    bool none = v->tag == WK_V_NONE;
    switch (a->type) {
      case WK__A_TENSOR: vals[n++].p = none ? NULL : v->u.t; break;
      case WK__A_STR: vals[n++].p = none ? NULL : (void *)v->u.s; break;
      case WK__A_DEVICE: vals[n++].p = none ? NULL : (void *)&v->u.device; break;
      case WK__A_INT:
        if (a->optional) vals[n++].p = none ? NULL : (void *)&v->u.i;
        else vals[n++].i = v->u.i;
        break;
      case WK__A_FLOAT:
        if (a->optional) vals[n++].p = none ? NULL : (void *)&v->u.f;
        else vals[n++].f = v->u.f;
        break;
      case WK__A_SCALAR: {
        /* Scalars arrive as int, float or bool; the function sees a double. */
        double d = v->tag == WK_V_INT ? (double)v->u.i : v->tag == WK_V_BOOL ? (double)v->u.b : v->u.f;
        if (a->optional) {
          scal[i] = d;
          vals[n++].p = none ? NULL : &scal[i];
        } else {
          vals[n++].f = d;
        }
        break;
      }
      case WK__A_BOOL:
        if (a->optional) vals[n++].p = none ? NULL : (void *)&v->u.b;
        else vals[n++].b = v->u.b;
        break;
      case WK__A_DTYPE: vals[n++].i32 = none ? 0 : (int32_t)v->u.dtype; break;
      case WK__A_INTS: case WK__A_FLOATS: case WK__A_TENSORS:
        vals[n].p = none ? NULL : (void *)v->u.ints;
        vals[n + 1].i = none ? 0 : v->len;
        n += 2;
        break;
    }
  }
  if (s->nouts != 1)
    for (int i = 0; i < s->nouts; i++) {
      resp[i] = &res[i];
      vals[n++].p = resp[i];
    }
  for (int i = 0; i < n; i++) ptrs[i] = &vals[i];
  if (s->nouts == 1) {
    ffi_arg r = 0;
    ffi_call((ffi_cif *)&p->cif, p->fn, &r, ptrs);
    wk_tensor *t = (wk_tensor *)(uintptr_t)r;
    if (!t) {
      if (!wk__error_pending()) wk_error(WK_ERR_INTERNAL, "%s(): unboxed kernel returned NULL", s->name);
      return wk_last_error();
    }
    outs[0] = WK_VT(t);
    return WK_OK;
  }
  ffi_sarg r = 0;
  ffi_call((ffi_cif *)&p->cif, p->fn, &r, ptrs);
  if ((wk_status)r != WK_OK) {
    for (int i = 0; i < s->nouts; i++) wk_release(res[i]);
    if (!wk__error_pending()) wk_error((wk_status)r, "%s(): unboxed kernel failed", s->name);
    return wk_last_error();
  }
  for (int i = 0; i < s->nouts; i++) outs[i] = WK_VT(res[i]);
  return WK_OK;
}
