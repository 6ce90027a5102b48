/* quant plugin: quantized state dicts for files that know no quantized dtype
 * (safetensors): each quantized tensor K becomes its integers under K (I8,
 * U8 or I32) plus the named tensors K.q_scale (F64) and K.q_zero_point (I64)
 * of shape [1] (per tensor) or [C] (per channel) and K.q_axis (I64 [], per
 * channel), and the metadata entry "wick.quant:K" = "qint8,per_tensor_affine";
 * unpack reverses it. Other entries and metadata pass through. */
#include "quant.h"

#define META_PREFIX "wick.quant:"

static wk_status put(wk_state_dict *sd, const char *key, const char *suffix, wk_tensor *t) {
  char k[1024];
  snprintf(k, sizeof k, "%s%s", key, suffix);
  return t ? wk_state_dict_set(sd, k, t) : wk_last_error();
}

static wk_status copy_meta(const wk_state_dict *from, wk_state_dict *to, bool skip_quant) {
  for (int i = 0; i < wk_state_dict_meta_size(from); i++) {
    const char *k = wk_state_dict_meta_key(from, i);
    if (skip_quant && !strncmp(k, META_PREFIX, strlen(META_PREFIX))) continue;
    wk_status st = wk_state_dict_set_meta(to, k, wk_state_dict_meta_value(from, i));
    if (st) return st;
  }
  return WK_OK;
}

wk_state_dict *qt_state_dict_pack(const wk_state_dict *sd) {
  if (!sd) {
    wk_error(WK_ERR_NULL, "state_dict_pack: argument 'sd' is NULL");
    return NULL;
  }
  wk_state_dict *out = wk_state_dict_new();
  wk_status st = out ? copy_meta(sd, out, false) : wk_last_error();
  wk_scope_begin();
  for (int i = 0; !st && i < wk_state_dict_size(sd); i++) {
    const char *k = wk_state_dict_key(sd, i);
    wk_tensor *t = wk_state_dict_value(sd, i);
    wk_qscheme qs = wk_tensor_qscheme(t);
    if (!t || qs == WK_QSCHEME_NONE) {
      st = wk_state_dict_set(out, k, t);
      continue;
    }
    st = put(out, k, "", wk_int_repr(t));
    if (!st && qs == WK_PER_TENSOR_AFFINE) {
      double s = wk_q_scale(t);
      int64_t z = wk_q_zero_point(t);
      st = put(out, k, ".q_scale", wk_tensor_from_data(&s, WK_F64, WK_SHAPE(1)));
      if (!st) st = put(out, k, ".q_zero_point", wk_tensor_from_data(&z, WK_I64, WK_SHAPE(1)));
    } else if (!st) {
      int64_t ax = wk_q_per_channel_axis(t);
      st = put(out, k, ".q_scale", wk_q_per_channel_scales(t));
      if (!st) st = put(out, k, ".q_zero_point", wk_q_per_channel_zero_points(t));
      if (!st) st = put(out, k, ".q_axis", wk_tensor_from_data(&ax, WK_I64, NULL, 0));
    }
    if (!st) {
      char mk[1024], mv[96];
      snprintf(mk, sizeof mk, META_PREFIX "%s", k);
      snprintf(mv, sizeof mv, "%s,%s", wk_dtype_name(wk_tensor_dtype(t)), wk_qscheme_name(qs) + 6);
      st = wk_state_dict_set_meta(out, mk, mv);
    }
  }
  wk_scope_end();
  if (st) {
    wk_state_dict_free(out);
    return NULL;
  }
  return out;
}

static wk_tensor *aux(const wk_state_dict *sd, const char *key, const char *suffix) {
  char k[1024];
  snprintf(k, sizeof k, "%s%s", key, suffix);
  wk_tensor *t = wk_state_dict_get(sd, k);
  if (!t) wk_error_replace(WK_ERR_NOT_FOUND, "state_dict_unpack: quantized tensor '%s' has no '%s'", key, k);
  return t;
}

static bool is_aux_of_quant(const wk_state_dict *sd, const char *k) {
  const char *sfx[] = {".q_scale", ".q_zero_point", ".q_axis"};
  for (int j = 0; j < 3; j++) {
    size_t n = strlen(k), m = strlen(sfx[j]);
    if (n <= m || strcmp(k + n - m, sfx[j])) continue;
    char mk[1024];
    snprintf(mk, sizeof mk, META_PREFIX "%.*s", (int)(n - m), k);
    if (wk_state_dict_get_meta(sd, mk)) return true;
  }
  return false;
}

wk_state_dict *qt_state_dict_unpack(const wk_state_dict *sd) {
  if (!sd) {
    wk_error(WK_ERR_NULL, "state_dict_unpack: argument 'sd' is NULL");
    return NULL;
  }
  wk_state_dict *out = wk_state_dict_new();
  wk_status st = out ? copy_meta(sd, out, true) : wk_last_error();
  wk_scope_begin();
  for (int i = 0; !st && i < wk_state_dict_size(sd); i++) {
    const char *k = wk_state_dict_key(sd, i);
    wk_tensor *t = wk_state_dict_value(sd, i);
    char mk[1024];
    snprintf(mk, sizeof mk, META_PREFIX "%s", k);
    const char *desc = wk_state_dict_get_meta(sd, mk);
    wk_clear_error();
    if (!desc) {
      if (!is_aux_of_quant(sd, k)) st = wk_state_dict_set(out, k, t);
      continue;
    }
    char dt[32] = "", scheme[64] = "";
    if (sscanf(desc, "%31[^,],%63s", dt, scheme) != 2) {
      st = wk_error(WK_ERR_INVALID_ARG, "state_dict_unpack: bad description '%s' of '%s'", desc, k);
      break;
    }
    wk_dtype want = wk_dtype_parse(dt);
    wk_clear_error();
    wk_tensor *sc = aux(sd, k, ".q_scale"), *zp = sc ? aux(sd, k, ".q_zero_point") : NULL, *q = NULL;
    if (!sc || !zp) {
      st = wk_last_error();
      break;
    }
    if (!strcmp(scheme, "per_tensor_affine")) {
      double s;
      int64_t z;
      if (wk_tensor_numel(sc) != 1 || wk_tensor_numel(zp) != 1) {
        st = wk_error(WK_ERR_SHAPE, "state_dict_unpack: '%s' is per tensor but has %lld scales", k,
                      (long long)wk_tensor_numel(sc));
        break;
      }
      st = wk_item(sc, &s);
      if (!st) st = wk_item_i64(zp, &z);
      if (!st) q = wk_make_per_tensor_quantized(t, s, z);
    } else if (!strcmp(scheme, "per_channel_affine")) {
      wk_tensor *ax = aux(sd, k, ".q_axis");
      int64_t a = 0;
      st = ax ? wk_item_i64(ax, &a) : wk_last_error();
      if (!st) q = wk_make_per_channel_quantized(t, sc, zp, a);
    } else {
      st = wk_error(WK_ERR_INVALID_ARG, "state_dict_unpack: unknown scheme '%s' of '%s'", scheme, k);
    }
    if (!st && !q) st = wk_last_error();
    if (!st && wk_tensor_dtype(q) != want)
      st = wk_error(WK_ERR_DTYPE, "state_dict_unpack: '%s' holds %s integers but is described as %s", k,
                    wk_dtype_name(wk_tensor_dtype(t)), dt);
    if (!st) st = wk_state_dict_set(out, k, q);
  }
  wk_scope_end();
  if (st) {
    wk_state_dict_free(out);
    return NULL;
  }
  return out;
}
