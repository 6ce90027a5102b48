/* Meta functions of the pointwise ops: the unary, binary and comparison
 * families (functional, in-place, out= and Scalar forms), add/sub/div,
 * leaky_relu, gelu, clamp, where, isnan/isinf, nan_to_num and the pointwise
 * backward helpers. PyTorch's dtype rules and messages, decided once here. */
#include <math.h>
#include <stdio.h>

#include "meta.h"


/* ---- unary ---------------------------------------------------------------------- */
/* Result dtype of a unary op with dtype rule `rule` on input dtype dt. */
static wk_status unary_dtype(wk_op *op, int rule, wk_dtype dt, wk_dtype *rt) {
  char b[64];
  const char *base = wk__meta_base_name(op, b, sizeof b);
  *rt = dt;
  if (rule == WK_UNARY_PRED) {
    *rt = WK_BOOL;
    return WK_OK;
  }
  if (rule == WK_UNARY_INTEGER && wk_dtype_is_floating(dt))
    return wk_error(WK_ERR_DTYPE, "%s: \"%s_cpu\" not implemented for '%s'", MNAME, base, wk__dtype_word(dt));
  if (wk_dtype_is_floating(dt)) return WK_OK;
  switch (rule) {
    case WK_UNARY_FLOAT:
      *rt = WK_F32;
      return WK_OK;
    case WK_UNARY_FLOAT_ONLY:
      return wk_error(WK_ERR_DTYPE, "%s: \"%s_cpu\" not implemented for '%s'", MNAME, base, wk__dtype_word(dt));
    case WK_UNARY_ROUNDING:
      if (dt == WK_BOOL && strcmp(base, "nan_to_num") != 0)
        return wk_error(WK_ERR_DTYPE, "%s: \"%s_cpu\" not implemented for '%s'", MNAME, base, wk__dtype_word(dt));
      return WK_OK;
    default: /* WK_UNARY_KEEP */
      if (dt == WK_BOOL && strcmp(base, "neg") == 0)
        return wk_error(WK_ERR_DTYPE, "%s: Negation, the `-` operator, on a bool tensor is not supported. If you are "
                        "trying to invert a mask, use the `~` or `logical_not()` operator instead.", MNAME);
      if (dt == WK_BOOL && strcmp(base, "relu") == 0)
        return wk_error(WK_ERR_DTYPE, "%s: Boolean inputs not supported for relu", MNAME);
      if (dt == WK_BOOL && (strcmp(base, "relu6") == 0 || strcmp(base, "hardtanh") == 0))
        return wk_error(WK_ERR_DTYPE, "%s: Bool inputs not supported for hardtanh", MNAME);
      if (dt == WK_BOOL && strcmp(base, "square") == 0) *rt = WK_I64; /* pow(bool, 2) is int64 */
      return WK_OK;
  }
}

static wk_status unary_with(wk_op *op, const wk_value *args, wk_meta_out *o, int rule) {
  wk_dtype rt;
  wk_status s = unary_dtype(op, rule, MT(0)->dtype, &rt);
  if (s) return s;
  wk__meta_like(o, MT(0), rt);
  return WK_OK;
}

/* One meta function per dtype rule (the family's rows pick theirs). */
#define UNARY_RULE_FN(rule)                                                              \
  static wk_status meta_unary_##rule(wk_op *op, const wk_value *args, wk_meta_out *o) { \
    return unary_with(op, args, o, rule);                                                \
  }
UNARY_RULE_FN(WK_UNARY_FLOAT)
UNARY_RULE_FN(WK_UNARY_FLOAT_ONLY)
UNARY_RULE_FN(WK_UNARY_KEEP)
UNARY_RULE_FN(WK_UNARY_ROUNDING)
UNARY_RULE_FN(WK_UNARY_PRED)
UNARY_RULE_FN(WK_UNARY_INTEGER)

static wk_status meta_leaky_relu(wk_op *op, const wk_value *args, wk_meta_out *o) {
  return unary_with(op, args, o, WK_UNARY_FLOAT_ONLY);
}

static wk_status meta_gelu(wk_op *op, const wk_value *args, wk_meta_out *o) {
  const char *mode = args[1].u.s;
  if (strcmp(mode, "none") != 0 && strcmp(mode, "tanh") != 0)
    return wk_error(WK_ERR_INVALID_ARG, "%s: approximate argument must be either none or tanh, not '%s'", MNAME,
                    mode);
  return unary_with(op, args, o, WK_UNARY_FLOAT_ONLY);
}

static double scalar_f64(const wk_value *v) {
  return v->tag == WK_V_INT ? (double)v->u.i : v->tag == WK_V_BOOL ? (double)v->u.b : v->u.f;
}

/* softplus(beta, threshold), elu(alpha, scale, input_scale): floating only. */
static wk_status meta_float_act(wk_op *op, const wk_value *args, wk_meta_out *o) {
  return unary_with(op, args, o, WK_UNARY_FLOAT_ONLY);
}
static wk_status meta_celu(wk_op *op, const wk_value *args, wk_meta_out *o) {
  if (scalar_f64(&args[1]) == 0)
    return wk_error(WK_ERR_INVALID_ARG, "%s: ZeroDivisionError from celu calculation, make sure alpha is not zero",
                    MNAME);
  return unary_with(op, args, o, WK_UNARY_FLOAT_ONLY);
}

static wk_status int_bound(const char *name, const wk_value *v, wk_dtype rt);
/* hardtanh(min_val, max_val): integers keep their dtype (bounds must fit it), bool is refused. */
static wk_status meta_hardtanh(wk_op *op, const wk_value *args, wk_meta_out *o) {
  double lo = scalar_f64(&args[1]), hi = scalar_f64(&args[2]);
  if (lo > hi) return wk_error(WK_ERR_INVALID_ARG, "%s: min_val cannot be greater than max_val", MNAME);
  wk_status s = unary_with(op, args, o, WK_UNARY_KEEP);
  if (!s && !wk_dtype_is_floating(o->dtype)) {
    for (int i = 1; i <= 2 && !s; i++) {
      double v = scalar_f64(&args[i]);
      if (!(fabs(v) < 9.2e18))
        s = wk_error(WK_ERR_INVALID_ARG, "%s: value %g cannot be converted to type %s without overflow", MNAME, v,
                     wk_dtype_name(o->dtype));
      else
        s = int_bound(MNAME, &(wk_value){.tag = WK_V_INT, .u.i = (int64_t)v}, o->dtype);
    }
  }
  return s;
}

static wk_status meta_nan_to_num(wk_op *op, const wk_value *args, wk_meta_out *o) {
  return unary_with(op, args, o, WK_UNARY_ROUNDING);
}

/* An integer clamp bound must fit the result dtype. */
static wk_status int_bound(const char *name, const wk_value *v, wk_dtype rt) {
  int64_t x = v->tag == WK_V_INT ? v->u.i : v->tag == WK_V_BOOL ? (int64_t)v->u.b : (int64_t)v->u.f;
  int64_t lo = INT64_MIN, hi = INT64_MAX;
  switch (rt) {
    case WK_I8: lo = INT8_MIN; hi = INT8_MAX; break;
    case WK_U8: lo = 0; hi = UINT8_MAX; break;
    case WK_I16: lo = INT16_MIN; hi = INT16_MAX; break;
    case WK_I32: lo = INT32_MIN; hi = INT32_MAX; break;
    default: break;
  }
  if (x < lo || x > hi)
    return wk_error(WK_ERR_INVALID_ARG, "%s: value %lld cannot be converted to type %s without overflow", name,
                    (long long)x, wk_dtype_name(rt));
  return WK_OK;
}

static wk_status meta_clamp(wk_op *op, const wk_value *args, wk_meta_out *o) {
  bool lo = !MNONE(1), hi = !MNONE(2);
  if (!lo && !hi) return wk_error(WK_ERR_INVALID_ARG, "%s: At least one of 'min' or 'max' must not be None", MNAME);
  wk_dtype rt = wk_result_type(args, 3);
  if (rt == WK_BOOL)
    return wk_error(WK_ERR_DTYPE, "%s: \"clamp_scalar_cpu\" not implemented for '%s'", MNAME, wk__dtype_word(rt));
  if (!wk_dtype_is_floating(rt)) {
    wk_status s = lo ? int_bound(MNAME, &args[1], rt) : WK_OK;
    if (!s && hi) s = int_bound(MNAME, &args[2], rt);
    if (s) return s;
  }
  wk__meta_like(o, MT(0), rt);
  return WK_OK;
}

/* clamp_min(self, min) / clamp_max(self, max): clamp with one bound. */
static wk_status meta_clamp_min(wk_op *op, const wk_value *args, wk_meta_out *o) {
  const wk_value a[3] = {args[0], args[1], WK_VNONE};
  return meta_clamp(op, a, o);
}
static wk_status meta_clamp_max(wk_op *op, const wk_value *args, wk_meta_out *o) {
  const wk_value a[3] = {args[0], WK_VNONE, args[1]};
  return meta_clamp(op, a, o);
}

/* lerp(self, end, weight): one floating dtype for all tensors, broadcast. */
static wk_status meta_lerp(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *self = MT(0), *end = MT(1), *w = args[2].tag == WK_V_TENSOR ? MT(2) : NULL;
  if (!wk_dtype_is_floating(self->dtype))
    return wk_error(WK_ERR_DTYPE, "lerp: \"lerp_kernel_%s\" not implemented for '%s'", w ? "tensor" : "scalar",
                    wk__dtype_word(self->dtype));
  if (end->dtype != self->dtype)
    return wk_error(WK_ERR_DTYPE, "lerp: expected dtype %s for `end` but got dtype %s", wk_dtype_name(self->dtype),
                    wk_dtype_name(end->dtype));
  if (w && w->dtype != self->dtype)
    return wk_error(WK_ERR_DTYPE, "lerp: expected dtype %s for `weight` but got dtype %s", wk_dtype_name(self->dtype),
                    wk_dtype_name(w->dtype));
  wk_tensor *ts[3] = {self, end, w};
  wk_status s = wk__meta_broadcast("lerp", ts, w ? 3 : 2, o);
  o->dtype = self->dtype;
  return s;
}

/* addcmul/addcdiv(self, tensor1, tensor2, *, value): promoted dtype, broadcast; no integer addcdiv. */
static wk_status meta_addc(wk_op *op, const wk_value *args, wk_meta_out *o) {
  char b[32];
  const char *name = wk__meta_base_name(op, b, sizeof b);
  wk_tensor *ts[3] = {MT(0), MT(1), MT(2)};
  if (!strcmp(name, "addcdiv") && !wk_dtype_is_floating(ts[1]->dtype) && !wk_dtype_is_floating(ts[2]->dtype))
    return wk_error(WK_ERR_DTYPE, "addcdiv: Integer division with addcdiv is no longer supported, and in a future "
                    "release addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
                    "behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) "
                    "for integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future "
                    "addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), for "
                    "all dtypes.");
  wk_dtype rt = wk_result_type(args, 3);
  if (!wk_dtype_is_floating(rt) && args[3].tag == WK_V_FLOAT)
    return wk_error(WK_ERR_DTYPE, "%s: For integral input tensors, argument value must not be a floating point number.",
                    name);
  wk_status s = wk__meta_broadcast(name, ts, 3, o);
  o->dtype = rt;
  return s;
}

/* ---- binary ---------------------------------------------------------------------- */
typedef enum { B_ARITH, B_SUB, B_DIV, B_POW, B_LOGICAL, B_COMPARE, B_FLOAT, B_FLOAT_ONLY, B_MOD, B_BITWISE } bkind;

/* self (op) other, where other is a Tensor or a Scalar; alpha/rounding as given.
 * The common call (two tensors of one dtype, no bool, no alpha) takes no
 * string work: names are formatted only for messages. */
/* Inlined into each row's function, so the branches on k, alpha and rounding fold away. */
static inline __attribute__((always_inline)) wk_status binary(wk_op *op, const wk_value *args, wk_meta_out *o,
                                                               bkind k, const wk_value *alpha, const char *rounding) {
  wk_tensor *self = MT(0);
  const wk_value *other = &args[1];
  wk_tensor *ot = other->tag == WK_V_TENSOR ? other->u.t : NULL;
  wk_dtype rt = ot && ot->dtype == self->dtype ? self->dtype : wk_result_type(args, 2);
  char b[64];
  if (k == B_SUB) { /* PyTorch's sub_check */
    bool self_bool = self->dtype == WK_BOOL;
    bool other_bool = ot ? ot->dtype == WK_BOOL : other->tag == WK_V_BOOL;
    if (self_bool && other_bool)
      return wk_error(WK_ERR_DTYPE, "sub: subtraction, the `-` operator, with two bool tensors is not supported. "
                      "Use the `^` or `logical_xor()` operator instead.");
    if (self_bool || other_bool)
      return wk_error(WK_ERR_DTYPE, "sub: subtraction, the `-` operator, with a bool tensor is not supported. "
                      "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.");
  }
  bool trunc_ = false, floor_ = false;
  if (rounding) {
    if (strcmp(rounding, "trunc") == 0)
      trunc_ = true;
    else if (strcmp(rounding, "floor") == 0)
      floor_ = true;
    else
      return wk_error(WK_ERR_INVALID_ARG,
                      "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '%s'", rounding);
  }
  if (rt == WK_BOOL && (k == B_POW || trunc_ || floor_))
    return wk_error(WK_ERR_DTYPE, "%s: \"%s\" not implemented for 'Bool'", wk__meta_base_name(op, b, sizeof b),
                    k == B_POW ? "pow" : trunc_ ? "div_trunc" : "div_floor");
  if (k == B_POW && !wk_dtype_is_floating(self->dtype) && other->tag == WK_V_INT && other->u.i < 0)
    return wk_error(WK_ERR_INVALID_ARG, "%s: Integers to negative integer powers are not allowed.",
                    wk__meta_base_name(op, b, sizeof b));
  if (alpha && !(alpha->tag == WK_V_INT && alpha->u.i == 1)) {
    double af = alpha->tag == WK_V_FLOAT ? alpha->u.f : alpha->tag == WK_V_INT ? (double)alpha->u.i : alpha->u.b;
    if (!wk_dtype_is_floating(rt) && alpha->tag == WK_V_FLOAT && !(isfinite(af) && af == trunc(af)))
      return wk_error(WK_ERR_DTYPE,
                      "%s: for integral input tensors, argument alpha must not be a floating point number",
                      wk__meta_base_name(op, b, sizeof b));
    if (alpha->tag == WK_V_BOOL && rt != WK_BOOL)
      return wk_error(WK_ERR_DTYPE, "%s: Boolean alpha only supported for Boolean results.", wk__meta_base_name(op, b, sizeof b));
  }
  if (k == B_DIV && !trunc_ && !floor_ && !wk_dtype_is_floating(rt)) rt = WK_F32; /* true division */
  if (k == B_FLOAT && !wk_dtype_is_floating(rt)) rt = WK_F32; /* atan2, copysign */
  if ((k == B_FLOAT_ONLY && !wk_dtype_is_floating(rt)) || (k == B_MOD && rt == WK_BOOL) ||
      (k == B_BITWISE && wk_dtype_is_floating(rt))) { /* PyTorch's kernel names in the message */
    const char *base = wk__meta_base_name(op, b, sizeof b);
    const char *kn = !strcmp(base, "bitwise_left_shift") ? "lshift" : !strcmp(base, "bitwise_right_shift") ? "rshift" : base;
    return wk_error(WK_ERR_DTYPE, "%s: \"%s_cpu\" not implemented for '%s'", base, kn, wk__dtype_word(rt));
  }
  if (k == B_BITWISE && rt == WK_BOOL && strstr(wk__meta_base_name(op, b, sizeof b), "shift"))
    return wk_error(WK_ERR_DTYPE, "%s: \"%s_cpu\" not implemented for 'Bool'", b, b[8] == 'l' ? "lshift" : "rshift");
  if (k == B_LOGICAL || k == B_COMPARE) rt = WK_BOOL;
  wk_tensor *ts[2] = {self, ot};
  wk_status s = wk__meta_broadcast_op(op, ts, 2, o);
  o->dtype = rt;
  return s;
}

/* The binary family's kind by name (a constant once inlined into each row's function). */
static inline bkind kind_of_name(const char *base) {
  if (strcmp(base, "pow") == 0) return B_POW;
  if (strncmp(base, "logical_", 8) == 0) return B_LOGICAL;
  if (strcmp(base, "atan2") == 0 || strcmp(base, "copysign") == 0) return B_FLOAT;
  if (strcmp(base, "hypot") == 0 || strcmp(base, "logaddexp") == 0) return B_FLOAT_ONLY;
  if (strcmp(base, "fmod") == 0 || strcmp(base, "remainder") == 0) return B_MOD;
  if (strncmp(base, "bitwise_", 8) == 0) return B_BITWISE;
  return B_ARITH;
}

/* mul, maximum, minimum, pow, logical_and/or, atan2 ... bitwise_right_shift in every form (no extra arguments). */
#define BINARY_FN(name, tags)                                                              \
  static wk_status meta_b_##name(wk_op *op, const wk_value *args, wk_meta_out *o) {      \
    return binary(op, args, o, kind_of_name(#name), NULL, NULL);                         \
  }
WK_BINARY_OPS(BINARY_FN)
static wk_status meta_compare(wk_op *op, const wk_value *args, wk_meta_out *o) {
  return binary(op, args, o, B_COMPARE, NULL, NULL);
}
/* add/sub(self, other, alpha[, out]) */
static wk_status meta_add(wk_op *op, const wk_value *args, wk_meta_out *o) {
  return binary(op, args, o, B_ARITH, &args[2], NULL);
}
static wk_status meta_sub(wk_op *op, const wk_value *args, wk_meta_out *o) {
  return binary(op, args, o, B_SUB, &args[2], NULL);
}
/* div(self, other, rounding_mode[, out]) */
static wk_status meta_div(wk_op *op, const wk_value *args, wk_meta_out *o) {
  return binary(op, args, o, B_DIV, NULL, MNONE(2) ? NULL : args[2].u.s);
}

static wk_status meta_where(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_dtype ct = MT(0)->dtype;
  if (ct != WK_BOOL && ct != WK_U8) /* uint8 masks: PyTorch's deprecated legacy form */
    return wk_error(WK_ERR_DTYPE, "where: expected condition to be a boolean tensor, but got a tensor with dtype %s",
                    wk_dtype_name(ct));
  wk_tensor *ts[3] = {MT(0), MT(1), MT(2)};
  wk_status s = wk__meta_broadcast("where", ts, 3, o);
  o->dtype = wk_result_type(args + 1, 2);
  return s;
}

/* ---- pointwise backward helpers -------------------------------------------------- */
/* grad_output and self/output broadcast; a floating result. */
static wk_status pointwise_backward(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_dtype rt = wk_promote_types(MT(0)->dtype, MT(1)->dtype);
  if (!wk_dtype_is_floating(rt))
    return wk_error(WK_ERR_DTYPE, "%s(): expected floating point tensors, got %s and %s", MNAME,
                    wk_dtype_name(MT(0)->dtype), wk_dtype_name(MT(1)->dtype));
  char what[64];
  snprintf(what, sizeof what, "%s()", MNAME);
  wk_tensor *ts[2] = {MT(0), MT(1)};
  wk_status s = wk__meta_broadcast(what, ts, 2, o);
  o->dtype = rt;
  return s;
}

static wk_status meta_gelu_backward(wk_op *op, const wk_value *args, wk_meta_out *o) {
  const char *mode = args[2].u.s;
  if (strcmp(mode, "none") != 0 && strcmp(mode, "tanh") != 0)
    return wk_error(WK_ERR_INVALID_ARG, "gelu_backward(): approximate argument must be either none or tanh, got '%s'",
                    mode);
  wk_dtype rt = wk_promote_types(MT(0)->dtype, MT(1)->dtype);
  if (!wk_dtype_is_floating(rt))
    return wk_error(WK_ERR_DTYPE, "gelu_backward(): expected floating tensors, got %s", wk_dtype_name(rt));
  wk_tensor *ts[2] = {MT(0), MT(1)};
  wk_status s = wk__meta_broadcast("gelu_backward()", ts, 2, o);
  o->dtype = rt;
  return s;
}

/* ---- the table ------------------------------------------------------------------- */
#define UNARY_ROWS(name, tags, rule)                                                    \
  {#name, meta_unary_##rule}, {#name "_", meta_unary_##rule}, {#name ".out", meta_unary_##rule},
#define BINARY_ROWS(name, tags)                                                                        \
  {#name, meta_b_##name}, {#name "_", meta_b_##name}, {#name ".out", meta_b_##name},                           \
      {#name ".Scalar", meta_b_##name}, {#name "_.Scalar", meta_b_##name},
#define COMPARE_ROWS(name) {#name, meta_compare}, {#name ".Scalar", meta_compare}, {#name ".out", meta_compare},

/* ---- GradScaler's fused steps (PyTorch's _amp_* ops, their messages) ----------------- */
static int64_t numel_of(const wk_tensor *t) {
  int64_t n = 1;
  for (int d = 0; d < t->ndim; d++) n *= t->sizes[d];
  return n;
}

/* A one-element tensor of dtype dt, named `what` in PyTorch's messages. */
static wk_status amp_scalar_arg(wk_op *op, const wk_tensor *t, const char *what, wk_dtype dt, const char *word) {
  if (numel_of(t) != 1) return wk_error(WK_ERR_SHAPE, "%s: %s must be a 1-element tensor.", MNAME, what);
  if (t->dtype != dt) return wk_error(WK_ERR_DTYPE, "%s: %s must be %s tensor.", MNAME, what, word);
  return WK_OK;
}

/* amp_foreach_non_finite_check_and_unscale_(Tensor(a!)[] self, Tensor(b!) found_inf, Tensor inv_scale) -> () */
static wk_status meta_amp_unscale(wk_op *op, const wk_value *args, wk_meta_out *o) {
  (void)o;
  wk_tensor *found = MT(1), *inv = MT(2);
  wk_status s;
  if ((s = amp_scalar_arg(op, inv, "inv_scale", WK_F32, "a float")) ||
      (s = amp_scalar_arg(op, found, "found_inf", WK_F32, "a float")))
    return s;
  if (!wk_device_equal(found->storage->device, inv->storage->device))
    return wk_error(WK_ERR_DEVICE, "%s: inv_scale and found_inf must be on the same device", MNAME);
  for (int i = 0; i < args[0].len; i++) {
    const wk_tensor *t = args[0].u.tensors[i];
    if (!t) return wk_error(WK_ERR_NULL, "%s: scaled_grads[%d] is NULL", MNAME, i);
    if (!wk_dtype_is_floating(t->dtype))
      return wk_error(WK_ERR_DTYPE, "%s: scaled_grads[%d] must be floating point, got %s", MNAME, i,
                      wk_dtype_name(t->dtype));
    if (!wk_device_equal(t->storage->device, found->storage->device))
      return wk_error(WK_ERR_DEVICE, "%s: scaled_grads[%d] is not on found_inf's device", MNAME, i);
    s = wk__meta_no_overlap(MNAME, t);
    if (s) return s;
  }
  return WK_OK;
}

/* amp_update_scale_(Tensor(a!) self, Tensor(b!) growth_tracker, Tensor found_inf, float scale_growth_factor,
 *                   float scale_backoff_factor, int growth_interval) -> Tensor(a!) */
static wk_status meta_amp_update_scale(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *scale = MT(0), *tracker = MT(1), *found = MT(2);
  wk_status s;
  if ((s = amp_scalar_arg(op, scale, "current_scale", WK_F32, "a float")) ||
      (s = amp_scalar_arg(op, tracker, "growth_tracker", WK_I32, "an int")) ||
      (s = amp_scalar_arg(op, found, "found_inf", WK_F32, "a float")))
    return s;
  if (!wk_device_equal(scale->storage->device, tracker->storage->device) ||
      !wk_device_equal(scale->storage->device, found->storage->device))
    return wk_error(WK_ERR_DEVICE, "%s: current_scale, growth_tracker and found_inf must be on the same device", MNAME);
  if (args[5].u.i < 1)
    return wk_error(WK_ERR_INVALID_ARG, "%s: growth_interval must be positive, got %lld", MNAME,
                    (long long)args[5].u.i);
  wk__meta_like(o, scale, WK_F32);
  return WK_OK;
}

static const wk__meta_row g_rows[] = {
    WK_UNARY_OPS(UNARY_ROWS) WK_BINARY_OPS(BINARY_ROWS) WK_COMPARE_OPS(COMPARE_ROWS)
    {"add", meta_add},
    {"add_", meta_add},
    {"add.out", meta_add},
    {"add.Scalar", meta_add},
    {"add_.Scalar", meta_add},
    {"sub", meta_sub},
    {"sub_", meta_sub},
    {"sub.out", meta_sub},
    {"sub.Scalar", meta_sub},
    {"sub_.Scalar", meta_sub},
    {"div", meta_div},
    {"div_", meta_div},
    {"div.out", meta_div},
    {"div.Scalar", meta_div},
    {"div_.Scalar", meta_div},
    {"leaky_relu", meta_leaky_relu},
    {"leaky_relu_", meta_leaky_relu},
    {"gelu", meta_gelu},
    {"clamp", meta_clamp},
    {"clamp_", meta_clamp},
    {"where.self", meta_where},
    {"isnan", meta_unary_WK_UNARY_PRED},
    {"isinf", meta_unary_WK_UNARY_PRED},
    {"nan_to_num", meta_nan_to_num},
    {"softplus", meta_float_act},
    {"elu", meta_float_act},
    {"elu_", meta_float_act},
    {"celu", meta_celu},
    {"celu_", meta_celu},
    {"hardtanh", meta_hardtanh},
    {"hardtanh_", meta_hardtanh},
    {"clamp_min", meta_clamp_min},
    {"clamp_min_", meta_clamp_min},
    {"clamp_max", meta_clamp_max},
    {"clamp_max_", meta_clamp_max},
    {"lerp.Scalar", meta_lerp},
    {"lerp.Tensor", meta_lerp},
    {"addcmul", meta_addc},
    {"addcmul_", meta_addc},
    {"addcdiv", meta_addc},
    {"addcdiv_", meta_addc},
    {"gelu_backward", meta_gelu_backward},
    {"threshold_backward", pointwise_backward},
    {"sigmoid_backward", pointwise_backward},
    {"tanh_backward", pointwise_backward},
    {"amp_foreach_non_finite_check_and_unscale_", meta_amp_unscale},
    {"amp_update_scale_", meta_amp_update_scale},
};

const wk__meta_family wk__metas_pointwise = {g_rows, sizeof g_rows / sizeof g_rows[0]};
