/* Dtype facts and PyTorch's type-promotion rules (promote_types and
 * result_type with its dimensioned / zero-dim / scalar priorities). */
#include <string.h>
#include <strings.h>

#include "internal.h"

size_t wk_dtype_size(wk_dtype dt) {
  switch (dt) {
#define WK__X(e, n, s, t, w, sz, k) \
  case e:                        \
    return sz;
    WK_DTYPE_LIST(WK__X)
    WK_QDTYPE_LIST(WK__X)
#undef WK__X
    default:
      return 0;
  }
}

static char dtype_kind(wk_dtype dt) {
  switch (dt) {
#define WK__X(e, n, s, t, w, sz, k) \
  case e:                        \
    return k;
    WK_DTYPE_LIST(WK__X)
#undef WK__X
    default:
      return 0;
  }
}

const char *wk_dtype_name(wk_dtype dt) {
  switch (dt) {
#define WK__X(e, n, s, t, w, sz, k) \
  case e:                        \
    return s;
    WK_DTYPE_LIST(WK__X)
    WK_QDTYPE_LIST(WK__X)
#undef WK__X
    default:
      return "?";
  }
}

wk_dtype wk_dtype_parse(const char *name) {
  if (!name) {
    wk__null_arg("wk_dtype_parse", "name");
    return WK_DTYPE_DEFAULT;
  }
  const char *n = strncmp(name, "torch.", 6) == 0 ? name + 6 : name;
#define WK__X(e, num, s, t, w, sz, k) \
  if (strcasecmp(n, s) == 0 || strcasecmp(n, t + 6) == 0) return e;
  WK_DTYPE_LIST(WK__X)
  WK_QDTYPE_LIST(WK__X)
#undef WK__X
  static const struct { const char *alias; wk_dtype dt; } aliases[] = {
      {"float", WK_F32}, {"double", WK_F64}, {"half", WK_F16}, {"long", WK_I64},
      {"int", WK_I32},   {"short", WK_I16},  {"char", WK_I8},  {"byte", WK_U8}};
  for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
    if (strcasecmp(n, aliases[i].alias) == 0) return aliases[i].dt;
  wk_error(WK_ERR_INVALID_ARG,
           "unknown dtype '%s' (expected one of f32 f64 f16 bf16 i8 u8 i16 i32 i64 bool qint8 quint8 qint32)", name);
  return WK_DTYPE_DEFAULT;
}

bool wk_dtype_is_floating(wk_dtype dt) { return dtype_kind(dt) == 'f'; }
bool wk_dtype_is_integral(wk_dtype dt) {
  char k = dtype_kind(dt);
  return k == 'i' || k == 'u';
}

wk_dtype wk_promote_types(wk_dtype a, wk_dtype b) {
  if (a == WK_DTYPE_DEFAULT) return b;
  if (b == WK_DTYPE_DEFAULT || a == b) return a;
  if (a == WK_BOOL) return b;
  if (b == WK_BOOL) return a;
  bool fa = wk_dtype_is_floating(a), fb = wk_dtype_is_floating(b);
  if (fa && fb) {
    if ((a == WK_F16 && b == WK_BF16) || (a == WK_BF16 && b == WK_F16)) return WK_F32;
    return wk_dtype_size(a) >= wk_dtype_size(b) ? a : b;
  }
  if (fa) return a;
  if (fb) return b;
  /* both integers */
  if (a == WK_U8 || b == WK_U8) {
    wk_dtype o = a == WK_U8 ? b : a;
    return o == WK_I8 ? WK_I16 : o;
  }
  return wk_dtype_size(a) >= wk_dtype_size(b) ? a : b;
}

static int category(wk_dtype d) {
  if (d == WK_DTYPE_DEFAULT) return -1;
  if (d == WK_BOOL) return 0;
  return wk_dtype_is_floating(d) ? 2 : 1;
}

/* PyTorch's combine_categories: the higher-priority group wins unless the
 * lower one brings a higher category. */
static wk_dtype combine(wk_dtype higher, wk_dtype lower) {
  if (higher == WK_DTYPE_DEFAULT) return lower;
  if (lower == WK_DTYPE_DEFAULT) return higher;
  if (category(lower) > category(higher)) return wk_promote_types(higher, lower);
  return higher;
}

wk_dtype wk_result_type(const wk_value *args, int n) {
  wk_dtype dim_r = WK_DTYPE_DEFAULT, zero_r = WK_DTYPE_DEFAULT, wrap_r = WK_DTYPE_DEFAULT;
  for (int i = 0; args && i < n; i++) {
    const wk_value *v = &args[i];
    switch (v->tag) {
      case WK_V_TENSOR:
        if (!v->u.t) break;
        if (v->u.t->ndim > 0)
          dim_r = wk_promote_types(dim_r, v->u.t->dtype);
        else
          zero_r = wk_promote_types(zero_r, v->u.t->dtype);
        break;
      case WK_V_TENSORS:
        for (int j = 0; j < v->len; j++) {
          wk_tensor *t = v->u.tensors[j];
          if (!t) continue;
          if (t->ndim > 0)
            dim_r = wk_promote_types(dim_r, t->dtype);
          else
            zero_r = wk_promote_types(zero_r, t->dtype);
        }
        break;
      case WK_V_INT:
        wrap_r = wk_promote_types(wrap_r, WK_I64);
        break;
      case WK_V_FLOAT:
        wrap_r = wk_promote_types(wrap_r, WK_F32);
        break;
      case WK_V_BOOL:
        wrap_r = wk_promote_types(wrap_r, WK_BOOL);
        break;
      default:
        break;
    }
  }
  return combine(dim_r, combine(zero_r, wrap_r));
}
