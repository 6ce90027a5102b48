/* quant plugin: the "quant" service table and the helpers shared by its files. */
#include "quant.h"

char *qt_strf(const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *s = n < 0 ? NULL : wk_malloc((size_t)n + 1);
  if (s)
    vsnprintf(s, (size_t)n + 1, fmt, ap2);
  else /* reported: a printout (extra_repr) must not come back without this text */
    wk_error(WK_ERR_NO_MEMORY, "quant: out of memory for a %d-byte text", n + 1);
  va_end(ap2);
  return s;
}

const char *qt_pyfloat(double v, char *buf) {
  if (isnan(v)) return strcpy(buf, "nan");
  if (isinf(v)) return strcpy(buf, v > 0 ? "inf" : "-inf");
  if (v == 0) return strcpy(buf, "0.0");
  char e[40];
  for (int p = 0; p < 17; p++) { /* shortest round-tripping digits */
    snprintf(e, sizeof e, "%.*e", p, v);
    if (strtod(e, NULL) == v) break;
  }
  char *ep = strchr(e, 'e');
  int exp10 = atoi(ep + 1), nd = 0;
  char digits[24];
  for (char *c = e; c < ep; c++)
    if (*c >= '0' && *c <= '9') digits[nd++] = *c;
  digits[nd] = 0;
  const char *sign = v < 0 ? "-" : "";
  if (exp10 < -4 || exp10 >= 16) {
    sprintf(buf, nd == 1 ? "%s%c%se%c%02d" : "%s%c.%se%c%02d", sign, digits[0], digits + 1, exp10 < 0 ? '-' : '+',
            abs(exp10));
    return buf;
  }
  char *o = buf + sprintf(buf, "%s", sign);
  if (exp10 < 0) {
    o += sprintf(o, "0.");
    for (int i = 0; i < -exp10 - 1; i++) *o++ = '0';
    sprintf(o, "%s", digits);
  } else {
    for (int i = 0; i <= exp10; i++) *o++ = i < nd ? digits[i] : '0';
    *o++ = '.';
    sprintf(o, "%s", nd > exp10 + 1 ? digits + exp10 + 1 : "0");
  }
  return buf;
}

wk_tensor *qt_ret(wk_tensor *y) {
  if (y) wk_scope_escape(y);
  wk_scope_end();
  return y;
}

bool qt_one_input(const char *cls, wk_tensor *const *in, int n) {
  if (n != 1) {
    wk_error(WK_ERR_INVALID_ARG, "%s.forward() takes 1 input but %d were given", cls, n);
    return false;
  }
  if (!in || !in[0]) {
    if (!wk_last_error()) wk_error(WK_ERR_NULL, "%s.forward(): the input is NULL", cls);
    return false;
  }
  return true;
}

wk_status qt_buffer(wk_module *m, const char *name, wk_tensor *t) {
  if (!m) return wk_last_error();
  if (!t) return wk_last_error() ? wk_last_error() : WK_ERR_INVALID_ARG;
  return wk_module_register_buffer(m, name, t, true);
}

wk_status qt_child(wk_module *m, const char *name, wk_module *child) {
  if (!m || !child) {
    wk_module_release(child);
    return wk_last_error() ? wk_last_error() : WK_ERR_INVALID_ARG;
  }
  wk_status st = wk_module_register_child(m, name, child);
  wk_module_release(child);
  return st;
}

char *qt_repr_args(const wk_module *m) {
  char *s = wk_module_to_string(m);
  if (!s) return NULL;
  char *open = strchr(s, '('), *close = strrchr(s, ')');
  char *r = open && close && close > open ? qt_strf("%.*s", (int)(close - open - 1), open + 1) : qt_strf("%s", "");
  wk_free(s);
  return r;
}

bool qt_repr_ints(const char *repr, const char *key, int64_t v[2]) {
  size_t kl = strlen(key);
  for (const char *p = repr; (p = strstr(p, key)); p += kl) {
    if ((p != repr && p[-1] != ' ') || p[kl] != '=') continue;
    const char *q = p + kl + 1;
    if (*q == '(') {
      long long a, b;
      if (sscanf(q, "(%lld, %lld)", &a, &b) == 2) {
        v[0] = a, v[1] = b;
        return true;
      }
      if (sscanf(q, "(%lld,)", &a) == 1) {
        v[0] = v[1] = a;
        return true;
      }
      return false;
    }
    long long a;
    if (sscanf(q, "%lld", &a) != 1) return false;
    v[0] = v[1] = a;
    return true;
  }
  return false;
}

static const wk_quant_api QUANT_API = {
    .struct_size = sizeof(wk_quant_api),
    .observer = qt_observer,
    .calculate_qparams = qt_calculate_qparams,
    .default_qconfig = qt_default_qconfig,
    .quant_stub = qt_quant_stub,
    .dequant_stub = qt_dequant_stub,
    .fuse = qt_fuse,
    .prepare = qt_prepare,
    .convert = qt_convert,
    .quantize_dynamic = qt_quantize_dynamic,
    .state_dict_pack = qt_state_dict_pack,
    .state_dict_unpack = qt_state_dict_unpack,
    .default_qat_qconfig = qt_default_qat_qconfig,
    .prepare_qat = qt_prepare_qat,
    .set_qat = qt_set_qat,
    .float_functional = qt_float_functional,
};

static wk_status init(void) {
  wk_status s = qt_register_ops(); /* quantized.add (qops.c) */
  return s ? s : wk_service_register(WK_QUANT_SERVICE, WK_QUANT_API_VERSION, &QUANT_API);
}

WK_PLUGIN_DEFINE("quant", "0.1.0", "eager-mode int8: observers, qconfigs, fuse/prepare/convert (the quant service)", init,
                 NULL)
