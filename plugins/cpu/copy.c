/* cpu plugin: copies and fills: copy_ between strided cpu tensors with dtype
 * conversion and broadcasting, fill_, zero_ (their checks are the ops' meta
 * functions, core/meta_factory.c). */
#include <math.h>
#include <string.h>

#include "cpu.h"
#include "simd.h"

typedef struct {
  wk_dtype dst, src;
} copy_types;

static void loop_same(void *c, char **d, const int64_t *s, int64_t n) {
  size_t es = wk_dtype_size(((const copy_types *)c)->dst);
  if (s[0] == (int64_t)es && s[1] == (int64_t)es) {
    memmove(d[0], d[1], (size_t)n * es);
    return;
  }
  for (int64_t i = 0; i < n; i++) memcpy(d[0] + i * s[0], d[1] + i * s[1], es);
}

static void loop_int(void *c, char **d, const int64_t *s, int64_t n) {
  const copy_types *t = c;
  for (int64_t i = 0; i < n; i++) wk_store_i64(d[0] + i * s[0], t->dst, wk_load_i64(d[1] + i * s[1], t->src));
}

/* Integers to floating types convert from int64 directly, as C++ does, so a
 * large int64 is rounded once (not through double first). */
static void loop_int_to_float(void *c, char **d, const int64_t *s, int64_t n) {
  const copy_types *t = c;
  for (int64_t i = 0; i < n; i++) {
    int64_t v = wk_load_i64(d[1] + i * s[1], t->src);
    char *p = d[0] + i * s[0];
    switch (t->dst) {
      case WK_F64: *(double *)p = (double)v; break;
      case WK_F32: *(float *)p = (float)v; break;
      case WK_F16: *(uint16_t *)p = wk_f32_to_f16((float)v); break;
      default: *(uint16_t *)p = wk_f32_to_bf16((float)v); break;
    }
  }
}

static void loop_f32_from(void *c, char **d, const int64_t *s, int64_t n) {
  const copy_types *t = c;
  for (int64_t i = 0; i < n; i++) *(float *)(d[0] + i * s[0]) = (float)wk_load_f64(d[1] + i * s[1], t->src);
}

/* float32 <-> bfloat16: what autocast and every bf16 kernel computing in f32
 * do all the time. Contiguous runs take the per-ISA loops (simd.h; the same
 * bits as the SDK's conversions). */
static void loop_f32_to_bf16(void *c, char **d, const int64_t *s, int64_t n) {
  if (s[0] == 2 && s[1] == 4) {
    uint16_t *restrict o = (uint16_t *)d[0];
    const float *restrict in = (const float *)d[1];
    cpu_simd->f32_to_bf16(o, in, n); /* cpu_copy copies overlapping tensors through a temporary */
    return;
  }
  for (int64_t i = 0; i < n; i++) *(uint16_t *)(d[0] + i * s[0]) = wk_f32_to_bf16(*(const float *)(d[1] + i * s[1]));
}
static void loop_bf16_to_f32(void *c, char **d, const int64_t *s, int64_t n) {
  if (s[0] == 4 && s[1] == 2) {
    float *restrict o = (float *)d[0];
    const uint16_t *restrict in = (const uint16_t *)d[1];
    cpu_simd->bf16_to_f32(o, in, n);
    return;
  }
  for (int64_t i = 0; i < n; i++) *(float *)(d[0] + i * s[0]) = wk_bf16_to_f32(*(const uint16_t *)(d[1] + i * s[1]));
}

static void loop_any(void *c, char **d, const int64_t *s, int64_t n) {
  const copy_types *t = c;
  for (int64_t i = 0; i < n; i++) wk_store_f64(d[0] + i * s[0], t->dst, wk_load_f64(d[1] + i * s[1], t->src));
}

static bool integral_or_bool(wk_dtype dt) { return wk_dtype_is_integral(dt) || dt == WK_BOOL; }

wk_status cpu_copy(wk_tensor *dst, wk_tensor *src) {
  wk_tensor *tmp = NULL;
  if (wk_tensor_same_storage(dst, src)) { /* overlap: read everything first */
    tmp = cpu_empty(wk_tensor_sizes(src), wk_tensor_dim(src), wk_tensor_dtype(src));
    if (!tmp) return wk_last_error();
    wk_status s = cpu_copy(tmp, src);
    if (s) {
      wk_release(tmp);
      return s;
    }
    src = tmp;
  }
  wk_tensor *ops[2] = {dst, src};
  wk_iter it;
  wk_status s = wk_iter_init(&it, "copy_", ops, 2);
  if (!s) {
    copy_types t = {wk_tensor_dtype(dst), wk_tensor_dtype(src)};
    wk_loop_fn fn = t.dst == t.src                                    ? loop_same
                    : integral_or_bool(t.dst) && integral_or_bool(t.src) ? loop_int
                    : integral_or_bool(t.src)                           ? loop_int_to_float
                    : t.dst == WK_BF16 && t.src == WK_F32               ? loop_f32_to_bf16
                    : t.dst == WK_F32 && t.src == WK_BF16               ? loop_bf16_to_f32
                    : t.dst == WK_F32                                   ? loop_f32_from
                                                                        : loop_any;
    wk_iter_run(&it, fn, &t);
  }
  wk_release(tmp);
  return s;
}

static wk_status k_copy(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *self = WK_ARG_T(0), *src = WK_ARG_T(1); /* shapes and overlap: the meta function checked */
  wk_status s = cpu_copy(self, src);
  return wk_kernel_done_inplace(s, self, outs);
}

/* copy_ on the cpu handles cpu sources only; other devices go through the
 * core's cross-device kernel. */
static bool copy_supports(const wk_kernel_ctx *ctx, const wk_value *args) {
  wk_device d = wk_tensor_device(WK_ARG_T(1));
  return d.type == WK_DEVICE_CPU || d.type == WK_DEVICE_DEFAULT;
}

typedef struct {
  wk_dtype dt;
  _Alignas(8) unsigned char bytes[8];
} fill_ctx;

static void loop_fill(void *c, char **d, const int64_t *s, int64_t n) {
  const fill_ctx *f = c;
  size_t es = wk_dtype_size(f->dt);
  if (es == 4 && s[0] == 4) {
    uint32_t v;
    memcpy(&v, f->bytes, 4);
    for (int64_t i = 0; i < n; i++) ((uint32_t *)d[0])[i] = v;
    return;
  }
  for (int64_t i = 0; i < n; i++) memcpy(d[0] + i * s[0], f->bytes, es);
}

/* Fills self with v (the meta function has refused values that overflow self's dtype). */
static wk_status fill(wk_tensor *self, const wk_value *v) {
  fill_ctx f = {wk_tensor_dtype(self), {0}};
  if (v->tag == WK_V_INT && integral_or_bool(f.dt))
    wk_store_i64(f.bytes, f.dt, v->u.i);
  else
    wk_store_f64(f.bytes, f.dt, wk_value_as_f64(v));
  wk_iter it;
  wk_status s = wk_iter_init(&it, "fill_", &self, 1);
  if (s) return s;
  wk_iter_run(&it, loop_fill, &f);
  wk_tensor_bump_version(self);
  return WK_OK;
}

static wk_status k_fill(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_status s = fill(WK_ARG_T(0), &args[1]);
  if (!s) outs[0] = WK_VT(WK_ARG_T(0));
  return s;
}

static wk_status k_zero(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_value z = WK_VI(0);
  wk_status s = fill(WK_ARG_T(0), &z);
  if (!s) outs[0] = WK_VT(WK_ARG_T(0));
  return s;
}

wk_status cpu_register_copy(void) {
  wk_kernel_desc d = {sizeof d, "copy_", WK_DEVICE_CPU, WK_PRIORITY_REFERENCE, k_copy, copy_supports, NULL, "cpu.ref"};
  wk_status s = wk_kernel_register(&d);
  if (!s) s = cpu_reg("fill_", k_fill, NULL);
  if (!s) s = cpu_reg("zero_", k_zero, NULL);
  return s;
}
