/* Wick SDK: opcheck, the conformance suite any operator plugin can run on its
 * op: schema sanity, every kernel against the reference kernel, strided
 * inputs give the same results as contiguous ones, the schema's mutation
 * annotations are honoured, gradients pass gradcheck, and every device with a
 * kernel agrees with the cpu. Header-only on the public API; the `wick
 * opcheck` command wraps it. Include after <wick/wick.h> or <wick/sdk.h>. */
#ifndef WICK_SDK_OPCHECK_H
#define WICK_SDK_OPCHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wick/sdk/gradcheck.h>

typedef struct wk_opcheck_opts {
  double rtol, atol; /* default 1e-5 / 1e-6 (f32 compares use 1e-4 / 1e-5) */
  bool skip_gradcheck;
  FILE *log; /* progress lines ("ok: ...") or NULL */
} wk_opcheck_opts;

/* Values of t as doubles (cpu copy), malloc'd; NULL on error. */
static inline double *wk__oc_values(wk_tensor *t) {
  int64_t n = wk_tensor_numel(t);
  double *v = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
  if (v && wk_tensor_to_f64(t, v, n) != WK_OK) {
    free(v);
    return NULL;
  }
  return v;
}

/* Records a mismatch between a and b (same shape expected). */
static inline wk_status wk__oc_compare(const char *op, const char *what, wk_tensor *a, wk_tensor *b, double rtol,
                                       double atol) {
  if (!a || !b) return wk_error(WK_ERR_INTERNAL, "opcheck %s: %s: missing output", op, what);
  if (wk_tensor_dim(a) != wk_tensor_dim(b) || wk_tensor_numel(a) != wk_tensor_numel(b))
    return wk_error(WK_ERR_SHAPE, "opcheck %s: %s: shapes differ (%d-d with %lld elements vs %d-d with %lld)", op, what,
                    wk_tensor_dim(a), (long long)wk_tensor_numel(a), wk_tensor_dim(b), (long long)wk_tensor_numel(b));
  for (int d = 0; d < wk_tensor_dim(a); d++)
    if (wk_tensor_size(a, d) != wk_tensor_size(b, d))
      return wk_error(WK_ERR_SHAPE, "opcheck %s: %s: size of dim %d differs (%lld vs %lld)", op, what, d,
                      (long long)wk_tensor_size(a, d), (long long)wk_tensor_size(b, d));
  if (wk_tensor_dtype(a) != wk_tensor_dtype(b))
    return wk_error(WK_ERR_DTYPE, "opcheck %s: %s: dtypes differ (%s vs %s)", op, what,
                    wk_dtype_name(wk_tensor_dtype(a)), wk_dtype_name(wk_tensor_dtype(b)));
  if (wk_tensor_dtype(a) == WK_F32 || wk_tensor_dtype(a) == WK_F16 || wk_tensor_dtype(a) == WK_BF16) {
    double f = wk_tensor_dtype(a) == WK_F32 ? 10 : 1000;
    rtol *= f;
    atol *= f;
  }
  double *x = wk__oc_values(a), *y = wk__oc_values(b);
  wk_status s = x && y ? WK_OK : wk_last_error();
  for (int64_t i = 0; !s && i < wk_tensor_numel(a); i++) {
    bool ok = x[i] == y[i] || (x[i] != x[i] && y[i] != y[i]) || fabs(x[i] - y[i]) <= atol + rtol * fabs(y[i]);
    if (!ok) s = wk_error(WK_ERR_INTERNAL, "opcheck %s: %s: element %lld is %.10g, expected %.10g", op, what,
                          (long long)i, x[i], y[i]);
  }
  free(x);
  free(y);
  return s;
}

/* A strided copy of t with the same values (every other element of a wider buffer). */
static inline wk_tensor *wk__oc_strided(wk_tensor *t) {
  int nd = wk_tensor_dim(t);
  if (nd == 0) return wk_retain(t);
  int64_t big[WK_MAX_DIMS];
  for (int d = 0; d < nd; d++) big[d] = wk_tensor_size(t, d);
  big[nd - 1] *= 2;
  wk_tensor *b = wk_zeros(big, nd, (wk_options){.dtype = wk_tensor_dtype(t), .device = wk_tensor_device(t)});
  wk_tensor *v = b ? wk_slice(b, nd - 1, 0, big[nd - 1], 2) : NULL;
  if (v && !wk_copy_(v, t)) {
    wk_release(v);
    v = NULL;
  }
  wk_release(b);
  return v;
}

/* Index of the reference kernel for the cpu: the lowest-priority one. */
static inline int wk__oc_reference(const wk_op *op) {
  int ref = -1;
  for (int k = 0; k < wk_op_num_kernels(op); k++) {
    int32_t dt;
    if (wk_op_kernel_info(op, k, &dt, NULL, NULL, NULL) == WK_OK && (dt == WK_DEVICE_CPU || dt == WK_DEVICE_DEFAULT))
      ref = k;
  }
  return ref;
}

/* Deep-copies tensor args (so each run starts from identical inputs). */
static inline void wk__oc_clone_args(const wk_value *in, int n, wk_value *out, wk_tensor **owned, int *nowned,
                                     bool strided) {
  for (int i = 0; i < n; i++) {
    out[i] = in[i];
    if (in[i].tag == WK_V_TENSOR && in[i].u.t) {
      wk_tensor *c = strided ? wk__oc_strided(in[i].u.t) : wk_clone(in[i].u.t);
      owned[(*nowned)++] = c;
      out[i] = WK_VT(c);
    }
  }
}

typedef struct {
  wk_op *op;
  const wk_value *args;
  int nargs;
  int tensor_pos[WK_MAX_ARGS];
} wk__oc_gc;

static inline wk_tensor *wk__oc_gc_fn(void *c_, wk_tensor *const *in, int n) {
  const wk__oc_gc *c = (const wk__oc_gc *)c_;
  wk_value a[WK_MAX_ARGS], o[WK_MAX_OUTS];
  memcpy(a, c->args, sizeof(wk_value) * (size_t)c->nargs);
  for (int k = 0; k < n; k++) a[c->tensor_pos[k]] = WK_VT(in[k]);
  if (wk_op_call(c->op, a, c->nargs, o) != WK_OK) return NULL;
  for (int i = 1; i < wk_op_num_outs(c->op); i++) wk_release(o[i].u.t);
  return o[0].u.t;
}

/* Runs the conformance checks of `opname` on the given sample arguments.
 * Returns WK_OK when every check passed; otherwise the first failure, with a
 * message naming the check, the kernel and the values. */
static inline wk_status wk_opcheck(const char *opname, const wk_value *args, int nargs, const wk_opcheck_opts *o) {
  double rtol = o && o->rtol > 0 ? o->rtol : 1e-5, atol = o && o->atol > 0 ? o->atol : 1e-6;
  FILE *log = o ? o->log : NULL;
  wk_op *op = wk_op_find(opname);
  if (!op) return wk_last_error();
  int nouts = wk_op_num_outs(op), mut = wk_op_mutated_arg(op);
  if (log) fprintf(log, "schema: %s\n", wk_op_schema(op));
  int ref = wk__oc_reference(op);
  if (ref < 0) return wk_error(WK_ERR_NO_KERNEL, "opcheck %s: no cpu kernel to use as the reference", opname);
  wk_tensor *owned[4 * WK_MAX_ARGS];
  int nowned = 0;
  wk_value a[WK_MAX_ARGS], refout[WK_MAX_OUTS], out[WK_MAX_OUTS];
  wk_status s;
  /* 1. the reference, and mutation honesty */
  wk__oc_clone_args(args, nargs, a, owned, &nowned, false);
  double *before[WK_MAX_ARGS] = {0};
  uint64_t ver[WK_MAX_ARGS] = {0};
  for (int i = 0; i < nargs; i++)
    if (a[i].tag == WK_V_TENSOR) {
      before[i] = wk__oc_values(a[i].u.t);
      ver[i] = wk_tensor_version(a[i].u.t);
    }
  /* random ops draw the same numbers in every run from this state */
  uint64_t rseed = 0, roff = 0;
  bool random = (wk_op_tags(op) & WK_TAG_RANDOM) != 0;
  if (random) wk_rng_get_state(wk_cpu(), &rseed, &roff);
  s = wk_op_call_kernel(op, ref, a, nargs, refout);
  if (s) {
    char why[1024];
    snprintf(why, sizeof why, "%s", wk_last_error_message());
    wk_error_replace(s, "opcheck %s: the reference kernel failed on the sample inputs: %s", opname, why);
  }
  for (int i = 0; !s && i < nargs; i++) {
    if (a[i].tag != WK_V_TENSOR) continue;
    double *after = wk__oc_values(a[i].u.t);
    bool changed = false;
    for (int64_t k = 0; after && before[i] && k < wk_tensor_numel(a[i].u.t); k++)
      changed = changed || (after[k] != before[i][k] && !(after[k] != after[k] && before[i][k] != before[i][k]));
    free(after);
    if (i == mut) {
      if (refout[0].u.t != a[i].u.t)
        s = wk_error(WK_ERR_INTERNAL, "opcheck %s: schema marks '%s' as mutated and returned, but the kernel returned "
                     "another tensor", opname, wk_op_arg_name(op, i));
      else if (wk_tensor_version(a[i].u.t) == ver[i] && changed)
        s = wk_error(WK_ERR_INTERNAL, "opcheck %s: the kernel wrote '%s' without bumping its version counter", opname,
                     wk_op_arg_name(op, i));
    } else if (changed) {
      s = wk_error(WK_ERR_INTERNAL, "opcheck %s: the kernel modified '%s', which the schema does not mark (a!)", opname,
                   wk_op_arg_name(op, i));
    }
  }
  for (int i = 0; i < nargs; i++) free(before[i]);
  if (!s && log) fprintf(log, "ok: reference kernel runs; mutation annotations honoured\n");
  /* keep reference outputs as independent copies (in-place results alias inputs) */
  wk_tensor *refc[WK_MAX_OUTS] = {0};
  for (int i = 0; !s && i < nouts; i++) refc[i] = refout[i].tag == WK_V_TENSOR ? wk_clone(refout[i].u.t) : NULL;
  for (int i = 0; i < nouts; i++)
    if (refout[i].tag == WK_V_TENSOR && !(i == 0 && mut >= 0)) wk_release(refout[i].u.t);
  /* 2. every other kernel (cpu and any-device) against the reference */
  for (int k = 0; !s && k < wk_op_num_kernels(op); k++) {
    int32_t dt;
    const char *kname, *plugin;
    wk_op_kernel_info(op, k, &dt, NULL, &kname, &plugin);
    if (k == ref || (dt != WK_DEVICE_CPU && dt != WK_DEVICE_DEFAULT)) continue;
    wk__oc_clone_args(args, nargs, a, owned, &nowned, false);
    if (random) wk_rng_set_state(wk_cpu(), rseed, roff);
    s = wk_op_call_kernel(op, k, a, nargs, out);
    for (int i = 0; !s && i < nouts; i++) {
      char what[160];
      snprintf(what, sizeof what, "kernel '%s' of plugin '%s', output %d", kname, plugin, i);
      s = wk__oc_compare(opname, what, out[i].u.t, refc[i], rtol, atol);
    }
    for (int i = 0; i < nouts; i++)
      if (out[i].tag == WK_V_TENSOR && !(i == 0 && mut >= 0)) wk_release(out[i].u.t);
    if (!s && log) fprintf(log, "ok: kernel '%s' (%s) agrees with the reference\n", kname, plugin);
  }
  /* 3. strided inputs through the dispatcher */
  if (!s) {
    wk__oc_clone_args(args, nargs, a, owned, &nowned, true);
    if (random) wk_rng_set_state(wk_cpu(), rseed, roff);
    s = wk_op_call(op, a, nargs, out);
    for (int i = 0; !s && i < nouts; i++) s = wk__oc_compare(opname, "strided inputs", out[i].u.t, refc[i], rtol, atol);
    for (int i = 0; i < nouts; i++)
      if (out[i].tag == WK_V_TENSOR && !(i == 0 && mut >= 0)) wk_release(out[i].u.t);
    if (!s && log) fprintf(log, "ok: strided inputs give the same results\n");
  }
  /* 4. gradients (float64 inputs, ops with a derivative) */
  if (!s && !(o && o->skip_gradcheck) && mut < 0 && !random && !(wk_op_tags(op) & WK_TAG_NONDIFF)) {
    wk__oc_gc c = {op, args, nargs, {0}};
    wk_tensor *gin[WK_MAX_ARGS];
    int ng = 0;
    for (int i = 0; i < nargs; i++)
      if (args[i].tag == WK_V_TENSOR && args[i].u.t && wk_tensor_dtype(args[i].u.t) == WK_F64) {
        wk_tensor *cpy = wk_clone(args[i].u.t);
        wk_tensor_set_requires_grad(cpy, true);
        owned[nowned++] = cpy;
        c.tensor_pos[ng] = i;
        gin[ng++] = cpy;
      }
    if (ng) {
      wk_gradcheck_opts go = {1e-6, 1e-5, 1e-4, 7};
      s = wk_gradcheck(wk__oc_gc_fn, &c, gin, ng, &go);
      if (!s && log) fprintf(log, "ok: gradcheck (%d float64 input%s)\n", ng, ng == 1 ? "" : "s");
    } else if (log) {
      fprintf(log, "skip: gradcheck needs float64 tensor inputs\n");
    }
  }
  /* 5. every other device with a kernel and a device present agrees with the cpu */
  for (int32_t t = WK_DEVICE_CPU + 1; !s && t < WK_MAX_DEVICE_TYPES; t++) {
    if (!wk_device_type_name(t) || wk_device_count(t) == 0) continue;
    bool has = false;
    for (int k = 0; k < wk_op_num_kernels(op); k++) {
      int32_t dt;
      wk_op_kernel_info(op, k, &dt, NULL, NULL, NULL);
      has = has || dt == t;
    }
    if (!has) continue;
    wk_device dev = {t, 0};
    for (int i = 0; i < nargs; i++) {
      a[i] = args[i];
      if (args[i].tag == WK_V_TENSOR && args[i].u.t) {
        wk_tensor *m = wk_to_device(args[i].u.t, dev);
        owned[nowned++] = m;
        a[i] = WK_VT(m);
      }
    }
    if (random) s = WK_OK; /* device streams differ from the cpu's: nothing to compare */
    else s = wk_op_call(op, a, nargs, out);
    for (int i = 0; !s && !random && i < nouts; i++) {
      wk_tensor *back = wk_to_device(out[i].u.t, wk_cpu());
      char what[96];
      snprintf(what, sizeof what, "device '%s', output %d", wk_device_type_name(t), i);
      s = wk__oc_compare(opname, what, back, refc[i], rtol, atol);
      wk_release(back);
    }
    for (int i = 0; i < nouts; i++)
      if (out[i].tag == WK_V_TENSOR && !(i == 0 && mut >= 0)) wk_release(out[i].u.t);
    if (!s && log) fprintf(log, "ok: device '%s' agrees with the cpu\n", wk_device_type_name(t));
  }
  for (int i = 0; i < nouts; i++) wk_release(refc[i]);
  for (int i = 0; i < nowned; i++) wk_release(owned[i]);
  return s;
}

/* ---- Sample arguments ------------------------------------------------------------
 * `wick opcheck` builds its inputs from the op's schema: every Tensor argument
 * a pseudo-random tensor of one default shape and dtype, defaults where the
 * schema gives them, small values otherwise. A wk_opcheck_arg overrides one
 * argument: a tensor's shape and/or dtype, None for an optional argument, or
 * another argument's value. wk_opcheck_parse_arg reads the command line's
 * form of it, "NAME=VALUE":
 *   Tensor     SHAPE[:DTYPE] or :DTYPE   weight=4x3:f32, bias=3, x=:i64, s=scalar
 *              (SHAPE: sizes joined by 'x'; "scalar" is a 0-dim tensor)
 *   int, float, Scalar, bool             k=2, alpha=0.25, flag=true
 *   int[], float[]                       dims=0,1 (comma list; "" is empty)
 *   str, ScalarType                      reduction=sum, dtype=f32
 *   any optional type                    bias=none
 */
typedef struct wk_opcheck_arg {
  char name[64];              /* the schema's argument name */
  bool is_none;               /* pass None (optional types only) */
  int ndim;                   /* Tensor: -1 keeps the default shape */
  int64_t shape[WK_MAX_DIMS]; /* Tensor: the sizes when ndim >= 0 */
  wk_dtype dtype;             /* Tensor: WK_DTYPE_DEFAULT keeps the default dtype */
  bool has_value;             /* other types: `value` is the argument */
  wk_value value;             /* may point into ints/floats/str below: do not copy the struct after parsing */
  int64_t ints[WK_MAX_DIMS];
  double floats[WK_MAX_DIMS];
  char str[64];
} wk_opcheck_arg;

/* Reads a shape "3x4" ("5": 1-d, "scalar": 0-d) into shape/ndim. Returns
 * false (nothing recorded) when the text is not one. */
static inline bool wk_opcheck_parse_shape(const char *text, int64_t *shape, int *ndim) {
  if (!text) return false;
  if (strcmp(text, "scalar") == 0) {
    *ndim = 0;
    return true;
  }
  int n = 0;
  for (const char *p = text;;) {
    char *end;
    long long v = strtoll(p, &end, 10);
    if (end == p || v < 0 || n == WK_MAX_DIMS || (*end && *end != 'x') || (*end == 'x' && !end[1])) return false;
    shape[n++] = v;
    if (!*end) break;
    p = end + 1;
  }
  *ndim = n;
  return true;
}

/* Reads a comma list of numbers (integers when `ints`) into out; false when
 * the text is not one. "" is the empty list. */
static inline bool wk__oc_parse_list(const char *text, bool ints, int64_t *iout, double *fout, int *n) {
  *n = 0;
  for (const char *p = text; *p;) {
    char *end;
    if (*n == WK_MAX_DIMS) return false;
    if (ints) iout[*n] = strtoll(p, &end, 10);
    else fout[*n] = strtod(p, &end);
    if (end == p || (*end && *end != ',')) return false;
    (*n)++;
    p = *end ? end + 1 : end;
  }
  return true;
}

/* Parses spec "NAME=VALUE" for an argument of `op` (forms above) into *out.
 * Returns WK_OK, or WK_ERR_INVALID_ARG naming the op, the spec and what is
 * wrong (no such argument, with the op's argument names; a value that does not
 * fit the argument's type). */
static inline wk_status wk_opcheck_parse_arg(const wk_op *op, const char *spec, wk_opcheck_arg *out) {
  if (!op || !spec || !out) return wk_error(WK_ERR_NULL, "wk_opcheck_parse_arg: argument '%s' is NULL",
                                            !op ? "op" : !spec ? "spec" : "out");
  memset(out, 0, sizeof *out);
  out->ndim = -1;
  const char *opname = wk_op_name(op), *eq = strchr(spec, '=');
  if (!eq || eq == spec || (size_t)(eq - spec) >= sizeof out->name)
    return wk_error(WK_ERR_INVALID_ARG, "opcheck %s: argument spec '%s' is not NAME=VALUE", opname, spec);
  memcpy(out->name, spec, (size_t)(eq - spec));
  const char *v = eq + 1;
  int i = wk_op_arg_index(op, out->name);
  if (i < 0) {
    char names[512] = "";
    size_t k = 0;
    for (int j = 0; j < wk_op_num_args(op) && k < sizeof names; j++)
      k += (size_t)snprintf(names + k, sizeof names - k, "%s%s", j ? ", " : "", wk_op_arg_name(op, j));
    return wk_error(WK_ERR_INVALID_ARG, "opcheck %s: argument spec '%s': the op has no argument '%s' (it has: %s)",
                    opname, spec, out->name, wk_op_num_args(op) ? names : "none");
  }
  const char *ty = wk_op_arg_type(op, i);
  bool opt = ty[strlen(ty) - 1] == '?';
  if (strcmp(v, "none") == 0 || strcmp(v, "None") == 0) {
    if (!opt)
      return wk_error(WK_ERR_INVALID_ARG, "opcheck %s: argument spec '%s': '%s' is %s, which cannot be None", opname,
                      spec, out->name, ty);
    out->is_none = true;
    return WK_OK;
  }
  char *end = NULL;
  bool ok = true;
  if (strncmp(ty, "Tensor", 6) == 0 && strstr(ty, "[]")) {
    return wk_error(WK_ERR_INVALID_ARG, "opcheck %s: argument spec '%s': '%s' is %s; only none is accepted for it",
                    opname, spec, out->name, ty);
  } else if (strncmp(ty, "Tensor", 6) == 0) {
    char shape[128];
    const char *colon = strchr(v, ':');
    size_t n = colon ? (size_t)(colon - v) : strlen(v);
    if (n >= sizeof shape) n = sizeof shape - 1;
    memcpy(shape, v, n);
    shape[n] = 0;
    if (n && !wk_opcheck_parse_shape(shape, out->shape, &out->ndim))
      return wk_error(WK_ERR_INVALID_ARG, "opcheck %s: argument spec '%s': bad shape '%s' (want e.g. 4x3, 5 or scalar)",
                      opname, spec, shape);
    if (colon) {
      out->dtype = wk_dtype_parse(colon + 1);
      if (out->dtype == WK_DTYPE_DEFAULT) {
        char why[256];
        snprintf(why, sizeof why, "%s", wk_last_error_message());
        wk_clear_error();
        return wk_error(WK_ERR_INVALID_ARG, "opcheck %s: argument spec '%s': %s", opname, spec, why);
      }
    }
    if (!n && !colon) ok = false;
  } else if (strncmp(ty, "int[", 4) == 0 || strncmp(ty, "float[", 6) == 0) {
    bool ints = ty[0] == 'i';
    int n = 0;
    ok = wk__oc_parse_list(v, ints, out->ints, out->floats, &n);
    out->value = ints ? WK_VINTS(out->ints, n) : WK_VFLOATS(out->floats, n);
  } else if (strncmp(ty, "int", 3) == 0) {
    long long x = strtoll(v, &end, 10);
    ok = end != v && !*end;
    out->value = WK_VI(x);
  } else if (strncmp(ty, "float", 5) == 0 || strncmp(ty, "Scalar", 6) == 0) {
    double x = strtod(v, &end);
    ok = end != v && !*end;
    bool integral = ok && strncmp(ty, "Scalar", 6) == 0 && !strpbrk(v, ".eEinfINF");
    out->value = integral ? WK_VI((int64_t)x) : WK_VF(x);
  } else if (strncmp(ty, "bool", 4) == 0) {
    bool t = strcmp(v, "true") == 0 || strcmp(v, "True") == 0 || strcmp(v, "1") == 0;
    ok = t || strcmp(v, "false") == 0 || strcmp(v, "False") == 0 || strcmp(v, "0") == 0;
    out->value = WK_VB(t);
  } else if (strncmp(ty, "ScalarType", 10) == 0) {
    wk_dtype dt = wk_dtype_parse(v);
    wk_clear_error();
    ok = dt != WK_DTYPE_DEFAULT;
    out->value = WK_VDT(dt);
  } else if (strncmp(ty, "str", 3) == 0) {
    ok = strlen(v) < sizeof out->str;
    snprintf(out->str, sizeof out->str, "%s", v);
    out->value = WK_VS(out->str);
  } else {
    return wk_error(WK_ERR_INVALID_ARG, "opcheck %s: argument spec '%s': '%s' is %s, which takes no value here",
                    opname, spec, out->name, ty);
  }
  if (!ok)
    return wk_error(WK_ERR_INVALID_ARG, "opcheck %s: argument spec '%s': '%s' is not a value of '%s' (%s)", opname,
                    spec, v, out->name, ty);
  out->has_value = strncmp(ty, "Tensor", 6) != 0;
  return WK_OK;
}

/* A pseudo-random tensor of shape/dtype: floats in [-1, 1), integers in
 * [-10, 10) (u8: [0, 10)), bools both ways. A new reference, or NULL. */
static inline wk_tensor *wk__oc_sample(const int64_t *shape, int ndim, wk_dtype dtype, uint64_t seed) {
  wk_tensor *e = wk_empty(shape, ndim, (wk_options){.dtype = WK_F64});
  wk_tensor *t = e ? wk__gc_proj(e, seed) : NULL;
  wk_release(e);
  if (t && !wk_dtype_is_floating(dtype)) { /* spread [-1, 1) over a few integers first */
    bool from0 = dtype == WK_U8 || dtype == WK_BOOL;
    double scale = dtype == WK_BOOL ? 1.0 : dtype == WK_U8 ? 5.0 : 10.0;
    wk_tensor *s = from0 ? wk_add_scalar(t, 1.0) : wk_retain(t), *m = s ? wk_mul_scalar(s, scale) : NULL;
    wk_tensor *f = m ? wk_floor(m) : NULL;
    wk_release(s);
    wk_release(m);
    wk_release(t);
    t = f;
  }
  if (!t || dtype == WK_F64) return t;
  wk_tensor *c = wk_to_dtype(t, dtype);
  wk_release(t);
  return c;
}

/* Sample arguments for `op`: each Tensor argument a pseudo-random tensor of
 * `shape`/`ndim` and `dtype` (WK_DTYPE_DEFAULT: float64); optional tensors
 * None; defaults where given, small values otherwise; then each of the
 * `nspecs` specs (wk_opcheck_parse_arg) overrides its argument. Returns the
 * number of arguments written to args (the op's), or -1 with the error
 * recorded. Tensors are new references in tensors[] (*ntensors of them:
 * release them); args may point into scratch (WK_MAX_ARGS int64s) and specs. */
static inline int wk_opcheck_sample_args_ex(wk_op *op, const int64_t *shape, int ndim, wk_dtype dtype,
                                            const wk_opcheck_arg *specs, int nspecs, uint64_t seed, wk_value *args,
                                            wk_tensor **tensors, int *ntensors, int64_t *scratch) {
  int n = wk_op_num_args(op);
  *ntensors = 0;
  if (dtype == WK_DTYPE_DEFAULT) dtype = WK_F64;
  for (int i = 0; i < n; i++) {
    const char *ty = wk_op_arg_type(op, i);
    bool opt = strchr(ty, '?') != NULL, tensor = strncmp(ty, "Tensor", 6) == 0 && !strstr(ty, "[]");
    const wk_value *def = wk_op_arg_default(op, i);
    const wk_opcheck_arg *sp = NULL;
    for (int k = 0; k < nspecs; k++)
      if (strcmp(specs[k].name, wk_op_arg_name(op, i)) == 0) sp = &specs[k];
    if (sp && sp->is_none) {
      args[i] = WK_VNONE;
    } else if (sp && sp->has_value) {
      args[i] = sp->value;
    } else if (def && strncmp(ty, "Tensor", 6) != 0) {
      args[i] = *def;
    } else if (tensor) {
      if (opt && !sp) {
        args[i] = WK_VNONE;
        continue;
      }
      bool own = sp && sp->ndim >= 0;
      wk_tensor *t = wk__oc_sample(own ? sp->shape : shape, own ? sp->ndim : ndim,
                                   sp && sp->dtype != WK_DTYPE_DEFAULT ? sp->dtype : dtype, seed + (uint64_t)i);
      if (!t) {
        for (int k = 0; k < *ntensors; k++) wk_release(tensors[k]);
        *ntensors = 0;
        return -1;
      }
      tensors[(*ntensors)++] = t;
      args[i] = WK_VT(t);
    } else if (strncmp(ty, "int[", 4) == 0) {
      scratch[i] = 1;
      args[i] = WK_VINTS(&scratch[i], 1);
    } else if (strncmp(ty, "int", 3) == 0) {
      args[i] = opt ? WK_VNONE : WK_VI(1);
    } else if (strncmp(ty, "float", 5) == 0 || strncmp(ty, "Scalar", 6) == 0) {
      args[i] = opt ? WK_VNONE : WK_VF(0.5);
    } else if (strncmp(ty, "bool", 4) == 0) {
      args[i] = WK_VB(false);
    } else {
      args[i] = WK_VNONE; /* str, ScalarType, Device, Tensor[]: rely on defaults */
    }
  }
  return n;
}

/* wk_opcheck_sample_args_ex with float64 tensors and no overrides. */
static inline int wk_opcheck_sample_args(wk_op *op, const int64_t *shape, int ndim, uint64_t seed, wk_value *args,
                                         wk_tensor **tensors, int *ntensors, int64_t *scratch) {
  return wk_opcheck_sample_args_ex(op, shape, ndim, WK_F64, NULL, 0, seed, args, tensors, ntensors, scratch);
}

#endif
