/* The op sweep's generators, part 1 (tests/check_op_sweep.c): how to build
 * valid calls from random shapes, and invalid ones for the error checks, for
 * the pointwise ops, factories, views and copies, reductions and linear
 * algebra. Part 2 is op_sweep_gen_nn.h. */
#ifndef WICK_TESTS_OP_SWEEP_GEN_H
#define WICK_TESTS_OP_SWEEP_GEN_H

#include "op_sweep_util.h"

/* ==== generators: pointwise, driven by the schema's argument names ======================= */

/* Every pointwise op: self/other/condition tensors, Scalars, and the out=
 * tensor; the variant (in place, out=, .Scalar) comes from the schema. */
static bool g_pw(sw_case *c) {
  int64_t s[WK_MAX_DIMS], o[WK_MAX_DIMS];
  int mut = wk_op_mutated_arg(c->op), nd = rshape(c, s, 0, 3), ond = nd;
  bool inplace = mut == 0;
  memcpy(o, s, sizeof s);
  double l1 = lo_of(c), h1 = hi_of(c), l2 = l1, h2 = h1;
  bool fl = wk_dtype_is_floating(c->dt);
  if (is_op(c, "pow")) {
    l1 = fl ? 0.5 : 1, h1 = fl ? 2 : 4, l2 = fl ? -2 : 0, h2 = 3;
  } else if (is_op(c, "div") || is_op(c, "fmod") || is_op(c, "remainder")) {
    l2 = fl ? 0.5 : 1, h2 = fl ? 2.5 : 3; /* no integer division by zero */
    if (!is_op(c, "div") && runif(c) < 0.5) l2 = -h2, h2 = fl ? -0.5 : 0; /* negative divisors too */
  } else if (is_op(c, "bitwise_left_shift") || is_op(c, "bitwise_right_shift")) {
    l2 = 0, h2 = 9; /* counts in range (PyTorch 1.13 leaves negative counts undefined) */
  }
  wk_dtype odt = c->dt;
  bool swap = false;
  if (c->mode == SW_BCAST) {
    ond = bshape(c, s, nd, o);
    if (!inplace && mut < 0) {
      swap = runif(c) < 0.5;
      odt = c->dt == WK_F64 ? WK_F32 : WK_F64; /* type promotion too */
      if (!strncmp(c->row->op, "bitwise_", 8)) odt = c->dt == WK_I64 ? WK_I32 : WK_I64; /* integers only */
    }
  } else if (c->mode == SW_SCALAR && !inplace) {
    ond = 1;
    o[0] = rpick(c, 2, 4);
  }
  wk_tensor *self = swap ? rt(c, c->dt, o, ond, l1, h1) : rt(c, c->dt, s, nd, l1, h1);
  wk_tensor *other = swap ? rt(c, odt, s, nd, l2, h2) : rt(c, odt, o, ond, l2, h2);
  if (wants_specials(c)) add_specials(c, self);
  int nargs = wk_op_num_args(c->op), which = (int)rpick(c, 0, 2); /* clamp: both bounds, min only, max only */
  for (int i = 0; i < nargs; i++) {
    const char *name = wk_op_arg_name(c->op, i), *type = wk_op_arg_type(c->op, i);
    bool tensor = !strncmp(type, "Tensor", 6);
    if (!strcmp(name, "self")) {
      at(c, self);
    } else if (!strcmp(name, "other") && tensor) {
      at(c, other);
    } else if (!strcmp(name, "other")) {
      ascalar(c, is_op(c, "pow") ? (fl ? 1.5 : 2) : fl ? 1.5 : 2);
    } else if (!strcmp(name, "condition")) {
      at(c, rt(c, WK_BOOL, o, ond, 0, 1));
    } else if (!strcmp(name, "alpha")) {
      ascalar(c, 2);
    } else if (!strcmp(name, "rounding_mode")) {
      static const char *const modes[] = {NULL, "trunc", "floor"};
      astr(c, modes[rpick(c, 0, 2)]);
    } else if (!strcmp(name, "negative_slope")) {
      af(c, 0.1);
    } else if (!strcmp(name, "approximate")) {
      astr(c, runif(c) < 0.5 ? "none" : "tanh");
    } else if (!strcmp(name, "min") || !strcmp(name, "max")) {
      double v = !strcmp(name, "min") ? -0.5 : 0.7;
      bool both = wk_op_arg_index(c->op, "min") >= 0 && wk_op_arg_index(c->op, "max") >= 0; /* not clamp_min */
      if (both && ((which == 1 && v > 0) || (which == 2 && v < 0)))
        anone(c);
      else
        ascalar(c, fl ? v : v * 2);
    } else if (!strcmp(name, "min_val") || !strcmp(name, "max_val")) { /* hardtanh */
      ascalar(c, !strcmp(name, "min_val") ? -0.5 : 0.7);
    } else if (!strcmp(name, "beta")) { /* softplus: both sides of the threshold in [-2, 2) */
      af(c, 1.5);
    } else if (!strcmp(name, "threshold")) {
      af(c, 2);
    } else if (!strcmp(name, "scale") || !strcmp(name, "input_scale")) { /* elu */
      af(c, !strcmp(name, "scale") ? 1.25 : 0.75);
    } else if (!strcmp(name, "nan") || !strcmp(name, "posinf") || !strcmp(name, "neginf")) {
      if (runif(c) < 0.5)
        anone(c);
      else
        af(c, !strcmp(name, "nan") ? 0.25 : !strcmp(name, "posinf") ? 9 : -9);
    } else if (!strcmp(name, "out")) {
      at_frozen(c, out_like(c, c->a, c->n));
    } else {
      break; /* the rest take their defaults */
    }
  }
  return true;
}

/* Pointwise error cases, from the schema: non-broadcastable shapes, a
 * result the in-place/out= target cannot hold (dtype, shape), bool inputs
 * where the op refuses them, a bad string option, clamp without bounds.
 * Cases marked maybe count only when the dispatcher rejects them. */
static bool e_pw(sw_case *c, int k) {
  int mut = wk_op_mutated_arg(c->op), nargs = wk_op_num_args(c->op);
  int oi = wk_op_arg_index(c->op, "other");
  bool other_t = oi >= 0 && !strncmp(wk_op_arg_type(c->op, oi), "Tensor", 6);
  bool has_cond = wk_op_arg_index(c->op, "condition") >= 0;
  bool has_str = wk_op_arg_index(c->op, "rounding_mode") >= 0 || wk_op_arg_index(c->op, "approximate") >= 0;
  bool has_min = wk_op_arg_index(c->op, "min") >= 0 && wk_op_arg_index(c->op, "max") >= 0; /* clamp */
  int64_t s23[2] = {2, 3}, s13[2] = {1, 3}, s4[1] = {4}, s7[1] = {7};
  wk_dtype sdt = WK_F32, odt = WK_F32, outdt = WK_F32;
  const int64_t *ss = s23, *os = s23, *outsz = s23;
  int snd = 2, ond = 2, outnd = 2;
  const char *str = NULL;
  bool nobounds = false, badparam = false;
  switch (k) {
    case 0: /* [2, 3] with [4]; in place: [1, 3] with [2, 3] */
      if (!other_t && !has_cond) return false;
      if (mut == 0)
        ss = s13;
      else
        os = s4, ond = 1;
      break;
    case 1: /* an integer self receiving a floating result, in place */
      if (mut != 0) return false;
      c->maybe = true;
      sdt = WK_I64;
      break;
    case 2: /* out= of a dtype the result cannot be cast to */
      if (mut <= 0) return false;
      c->maybe = true;
      outdt = WK_BOOL;
      break;
    case 3: /* out= of another shape */
      if (mut <= 0) return false;
      c->maybe = true;
      outsz = s7, outnd = 1;
      break;
    case 4: /* bool inputs (neg, sub, floor, ... refuse them) */
      c->maybe = true;
      sdt = odt = outdt = WK_BOOL;
      break;
    case 5: /* a bad string option */
      if (!has_str) return false;
      str = "bad";
      break;
    case 6: /* clamp with neither bound */
      if (!has_min) return false;
      nobounds = true;
      break;
    case 7: /* hardtanh with min_val > max_val; celu with alpha 0 */
      if (wk_op_arg_index(c->op, "min_val") < 0 && !is_op(c, "celu")) return false;
      badparam = true;
      break;
    default:
      return false;
  }
  wk_tensor *self = rt(c, sdt, ss, snd, 0.5, 2), *other = rt(c, odt, os, ond, 0.5, 2);
  for (int i = 0; i < nargs; i++) {
    const char *name = wk_op_arg_name(c->op, i), *type = wk_op_arg_type(c->op, i);
    if (!strcmp(name, "self"))
      at(c, self);
    else if (!strcmp(name, "other") && !strncmp(type, "Tensor", 6))
      at(c, has_cond ? rt(c, odt, ss, snd, 0.5, 2) : other);
    else if (!strcmp(name, "other"))
      af(c, 1.5);
    else if (!strcmp(name, "condition"))
      at(c, rt(c, WK_BOOL, os, ond, 0, 1));
    else if (!strcmp(name, "out"))
      at(c, zeros_t(c, outdt, outsz, outnd));
    else if (!strcmp(name, "rounding_mode") || !strcmp(name, "approximate"))
      astr(c, str ? str : !strcmp(name, "approximate") ? "none" : NULL); /* NULL: None */
    else if (!strcmp(name, "min") || !strcmp(name, "max"))
      c->a[c->n++] = nobounds ? WK_VNONE : WK_VF(!strcmp(name, "min") ? -0.5 : 0.5);
    else if (!strcmp(name, "alpha"))
      af(c, badparam ? 0 : 1);
    else if (!strcmp(name, "min_val") || !strcmp(name, "max_val"))
      af(c, (!strcmp(name, "min_val")) == badparam ? 1 : 0); /* min 0, max 1; badparam: min 1, max 0 */
    else
      break;
  }
  return true;
}

/* masked_fill(self, mask, value): mask broadcast to self. */
static bool g_masked_fill(sw_case *c) {
  int64_t s[WK_MAX_DIMS], m[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3), mnd = c->mode == SW_BCAST ? bshape(c, s, nd, m) : nd;
  if (c->mode != SW_BCAST) memcpy(m, s, sizeof m);
  at(c, rself(c, s, nd));
  at_frozen(c, rt(c, WK_BOOL, m, mnd, 0, 1));
  ascalar(c, 0.75);
  return true;
}
static bool e_masked_fill(sw_case *c, int k) {
  int64_t s[2] = {2, 3}, s4[1] = {4};
  if (k > 1) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  at(c, k == 0 ? rt(c, WK_F32, s, 2, 0, 1) : rt(c, WK_BOOL, s4, 1, 0, 1)); /* a float mask; a mask of another shape */
  af(c, 1);
  return true;
}
static bool g_masked_select(sw_case *c) {
  int64_t s[WK_MAX_DIMS], m[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3), mnd = c->mode == SW_BCAST ? bshape(c, s, nd, m) : nd;
  if (c->mode != SW_BCAST) memcpy(m, s, sizeof m);
  at(c, rself(c, s, nd));
  at_frozen(c, rt(c, WK_BOOL, m, mnd, 0, 1));
  return true;
}
static bool e_masked_select(sw_case *c, int k) {
  int64_t s[2] = {2, 3}, s4[1] = {4};
  if (k > 1) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  at(c, k == 0 ? rt(c, WK_F32, s, 2, 0, 1) : rt(c, WK_BOOL, s4, 1, 0, 1));
  return true;
}

/* ==== generators: factories =============================================================== */

/* zeros/ones/full/rand/randn(size, [fill], dtype, device) and randint(low, high, size, ...). */
static bool g_factory(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  if (is_op(c, "randint")) {
    ai(c, -3);
    ai(c, 5);
  }
  aints(c, s, nd);
  if (is_op(c, "full")) ascalar(c, 1.5);
  adt(c, c->dt);
  adev(c);
  return true;
}
static bool e_factory(sw_case *c, int k) {
  if (k > 1) return false;
  if (is_op(c, "randint")) {
    ai(c, 5);
    ai(c, k == 0 ? 5 : 2); /* low >= high */
  }
  if (k == 1 && !is_op(c, "randint")) return false;
  AINTS(c, 2, -1); /* a negative size */
  if (is_op(c, "full")) af(c, 1);
  return true;
}
static bool g_arange(sw_case *c) {
  bool fl = wk_dtype_is_floating(c->dt);
  double start = (double)rpick(c, -3, 2), step = fl ? 0.5 : (double)rpick(c, 1, 2);
  double end = c->mode == SW_EMPTY ? start : start + (double)rpick(c, 1, 6);
  af(c, start);
  af(c, end);
  af(c, step);
  adt(c, c->dt);
  adev(c);
  return true;
}
static bool e_arange(sw_case *c, int k) {
  if (k > 1) return false;
  af(c, 0);
  af(c, k == 0 ? 5 : -5);
  af(c, k == 0 ? 0 : 1); /* step 0; bounds inconsistent with the step's sign */
  return true;
}
static bool g_linspace(sw_case *c) {
  af(c, -1.5);
  af(c, 2);
  ai(c, c->mode == SW_EMPTY ? 0 : rpick(c, 1, 6));
  adt(c, c->dt);
  adev(c);
  return true;
}
static bool e_linspace(sw_case *c, int k) {
  if (k > 0) return false;
  af(c, 0);
  af(c, 1);
  ai(c, -1);
  return true;
}
static bool g_eye(sw_case *c) {
  ai(c, c->mode == SW_EMPTY ? 0 : rpick(c, 1, 4));
  ai(c, runif(c) < 0.5 ? -1 : rpick(c, 1, 4));
  adt(c, c->dt);
  adev(c);
  return true;
}
static bool e_eye(sw_case *c, int k) {
  if (k > 0) return false;
  ai(c, -1);
  return true;
}
/* zeros_like/ones_like/full_like/rand_like/randn_like(self, [fill], dtype). */
static bool g_like(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  at(c, rt(c, WK_F64, s, nd, -1, 1));
  if (is_op(c, "full_like")) ascalar(c, 2.5);
  adt(c, c->dt);
  return true;
}
static bool g_randperm(sw_case *c) {
  ai(c, c->mode == SW_EMPTY ? 0 : rpick(c, 1, 7));
  adt(c, c->dt);
  adev(c);
  return true;
}
static bool e_randperm(sw_case *c, int k) {
  if (k > 0) return false;
  ai(c, -1);
  return true;
}
/* fill_/zero_/uniform_/normal_/bernoulli(self, ...). */
static bool g_fill(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  bool probs = is_op(c, "bernoulli");
  at(c, probs ? rt(c, c->dt, s, nd, 0, 1) : rself(c, s, nd));
  if (is_op(c, "fill")) ascalar(c, 1.25);
  if (is_op(c, "uniform")) af(c, -1), af(c, 2);
  if (is_op(c, "normal")) af(c, 0.5), af(c, 2);
  if (!strcmp(c->row->op, "bernoulli.p")) af(c, 0.3);
  return true;
}
static bool e_fill(sw_case *c, int k) {
  int64_t s[2] = {2, 3};
  if (k > 0 || is_op(c, "zero") || is_op(c, "fill") || !strcmp(c->row->op, "bernoulli")) return false;
  at(c, rt(c, WK_F32, s, 2, 0, 1));
  if (is_op(c, "uniform")) af(c, 2), af(c, 1);        /* from > to */
  if (is_op(c, "normal")) af(c, 0), af(c, -1);        /* std < 0 */
  if (!strcmp(c->row->op, "bernoulli.p")) af(c, 1.5); /* p outside [0, 1] */
  return true;
}

/* ==== generators: views and copies ========================================================= */

/* view/reshape(self, [s0*s1, -1]) (explicit sizes when there are no elements: -1 would be ambiguous). */
static bool g_view(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  at(c, rself(c, s, nd));
  if (nd >= 2 && numel_of(s, nd) > 0) {
    AINTS(c, s[0] * s[1], -1);
  } else if (nd >= 2) {
    int64_t t[2] = {s[0] * s[1], numel_of(s + 2, nd - 2)};
    aints(c, t, 2);
  } else {
    AINTS(c, -1);
  }
  return true;
}
static bool e_view(sw_case *c, int k) {
  int64_t s[2] = {2, 3};
  if (k > 0) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  AINTS(c, 7); /* the wrong numel */
  return true;
}
static bool g_permute(sw_case *c) {
  int64_t s[WK_MAX_DIMS], p[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  at(c, rself(c, s, nd));
  for (int d = 0; d < nd; d++) p[d] = nd - 1 - d;
  aints(c, p, nd);
  return true;
}
static bool e_permute(sw_case *c, int k) {
  int64_t s[2] = {2, 3};
  if (k > 1) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  if (k == 0)
    AINTS(c, 0); /* too few dims */
  else
    AINTS(c, 0, 0); /* a repeated dim */
  return true;
}
static bool g_transpose(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  at(c, rself(c, s, nd));
  ai(c, 0);
  ai(c, -1);
  return true;
}
static bool e_dim5(sw_case *c, int k) { /* a dim out of range, for ops (self, dim, ...) */
  int64_t s[2] = {2, 3};
  if (k > 0) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  ai(c, 5);
  if (is_op(c, "transpose")) ai(c, 0);
  if (is_op(c, "narrow")) ai(c, 0), ai(c, 1);
  if (is_op(c, "select")) ai(c, 0);
  return true;
}
static bool g_t(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 2);
  at(c, rself(c, s, nd));
  return true;
}
static bool e_t(sw_case *c, int k) {
  int64_t s[3] = {2, 3, 4};
  if (k > 0) return false;
  at(c, rt(c, WK_F32, s, 3, -1, 1));
  return true;
}
static bool g_slice(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 1, 3), d = (int)rpick(c, 0, nd - 1);
  at(c, rself(c, s, nd));
  ai(c, d);
  if (runif(c) < 0.3)
    anone(c);
  else
    ai(c, rpick(c, -1, 1));
  if (runif(c) < 0.3)
    anone(c);
  else
    ai(c, rpick(c, 1, 5));
  ai(c, rpick(c, 1, 2));
  return true;
}
static bool e_slice(sw_case *c, int k) {
  int64_t s[2] = {2, 3};
  if (k > 1) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  ai(c, k == 0 ? 0 : 3); /* step 0; dim out of range */
  anone(c);
  anone(c);
  ai(c, k == 0 ? 0 : 1);
  return true;
}
static bool g_narrow(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 1, 3), d = (int)rpick(c, 0, nd - 1);
  at(c, rself(c, s, nd));
  int64_t start = rpick(c, 0, s[d]);
  ai(c, d);
  ai(c, start);
  ai(c, rpick(c, 0, s[d] - start));
  return true;
}
static bool e_narrow(sw_case *c, int k) {
  int64_t s[2] = {2, 3};
  if (k > 0) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  ai(c, 1);
  ai(c, 1);
  ai(c, 5); /* start + length past the end */
  return true;
}
static bool g_select(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 1, 3), d = (int)rpick(c, 0, nd - 1);
  if (s[d] == 0) return false;
  at(c, rself(c, s, nd));
  ai(c, d);
  ai(c, rpick(c, -s[d], s[d] - 1));
  return true;
}
static bool e_select(sw_case *c, int k) {
  int64_t s[2] = {2, 3};
  if (k > 0) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  ai(c, 0);
  ai(c, 5); /* index out of range */
  return true;
}
static bool g_expand(sw_case *c) {
  int64_t s[WK_MAX_DIMS], e[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  for (int d = 0; d < nd; d++)
    if (runif(c) < 0.5) s[d] = 1;
  e[0] = rpick(c, 1, 3);
  for (int d = 0; d < nd; d++) e[d + 1] = s[d] == 1 ? rpick(c, 1, 3) : runif(c) < 0.3 ? -1 : s[d];
  at(c, rself(c, s, nd));
  aints(c, e, nd + 1);
  return true;
}
static bool e_expand(sw_case *c, int k) {
  int64_t s[2] = {2, 3};
  if (k > 1) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  if (k == 0)
    AINTS(c, 4, 3); /* a non-singleton dim changed */
  else
    AINTS(c, 3); /* fewer dims */
  return true;
}
static bool g_squeeze(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  for (int d = 0; d < nd; d++)
    if (runif(c) < 0.5) s[d] = 1;
  at(c, rself(c, s, nd));
  if (!strcmp(c->row->op, "squeeze.dim")) ai(c, nd ? rpick(c, -nd, nd - 1) : 0);
  if (is_op(c, "unsqueeze")) ai(c, rpick(c, -nd - 1, nd));
  return true;
}
static bool g_flatten(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  at(c, rself(c, s, nd));
  int a = nd ? (int)rpick(c, 0, nd - 1) : 0;
  ai(c, a);
  ai(c, nd ? rpick(c, a, nd - 1) : -1);
  return true;
}
static bool e_flatten(sw_case *c, int k) {
  int64_t s[3] = {2, 3, 4};
  if (k > 0) return false;
  at(c, rt(c, WK_F32, s, 3, -1, 1));
  ai(c, 2);
  ai(c, 1); /* start after end */
  return true;
}
static bool g_self(sw_case *c) { /* ops taking just self (contiguous, alias, clone, sum, ...) */
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  at(c, rself(c, s, nd));
  return true;
}
static bool g_as_strided(sw_case *c) {
  int64_t s[2] = {3, 4};
  at(c, rself(c, s, 2));
  AINTS(c, 2, 2);
  AINTS(c, 1, 3);
  if (runif(c) < 0.5)
    anone(c);
  else
    ai(c, 2);
  return true;
}
static bool e_as_strided(sw_case *c, int k) {
  int64_t s[2] = {2, 3};
  if (k > 0) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  AINTS(c, 10);
  AINTS(c, 1); /* past the storage */
  return true;
}
static bool g_copy_(sw_case *c) {
  int64_t s[WK_MAX_DIMS], o[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3), ond = c->mode == SW_BCAST ? bshape(c, s, nd, o) : nd;
  if (c->mode != SW_BCAST) memcpy(o, s, sizeof o);
  at(c, rself(c, s, nd));
  at(c, rt(c, c->mode == SW_BCAST ? WK_F64 : c->dt, o, ond, -3, 3));
  return true;
}
static bool e_copy_(sw_case *c, int k) {
  int64_t s[2] = {2, 3}, s4[1] = {4};
  if (k > 0) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  at(c, rt(c, WK_F32, s4, 1, -1, 1)); /* not broadcastable */
  return true;
}
static bool g_to_dtype(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  at(c, rt(c, WK_F64, s, nd, -3, 3));
  adt(c, c->dt);
  ab(c, runif(c) < 0.5);
  return true;
}
static bool g_to_device(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  at(c, rself(c, s, nd));
  adev(c);
  adt(c, runif(c) < 0.5 ? WK_DTYPE_DEFAULT : WK_F64);
  ab(c, runif(c) < 0.5);
  return true;
}

/* ==== generators: reductions (schema-driven: dim, keepdim, dtype, correction, p) ========== */

static bool wants_distinct(const sw_case *c) {
  return is_op(c, "max") || is_op(c, "min") || is_op(c, "argmax") || is_op(c, "argmin") || is_op(c, "topk") ||
         is_op(c, "sort") || (c->grad && (is_op(c, "cummax") || is_op(c, "cummin")));
}

static bool g_reduce(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3), nargs = wk_op_num_args(c->op);
  bool needs_elems = is_op(c, "max") || is_op(c, "min") || is_op(c, "argmax") || is_op(c, "argmin") ||
                     is_op(c, "amax") || is_op(c, "amin") || is_op(c, "aminmax");
  int d0 = nd ? (int)rpick(c, 0, nd - 1) : 0;
  if (needs_elems && c->mode == SW_EMPTY) { /* reduce over a non-empty dim of an empty tensor */
    int nz = -1;
    for (int d = 0; d < nd; d++)
      if (s[d]) nz = d;
    if (nz < 0 || wk_op_arg_index(c->op, "dim") < 0) return false;
    d0 = nz;
  }
  at(c, wants_distinct(c) ? rt_distinct(c, c->dt, s, nd, lo_of(c), hi_of(c)) : rself(c, s, nd));
  for (int i = 1; i < nargs; i++) {
    const char *name = wk_op_arg_name(c->op, i), *type = wk_op_arg_type(c->op, i);
    if (!strcmp(name, "dim") && !strncmp(type, "int[", 4)) {
      bool opt = strchr(type, '?') != NULL;
      if (needs_elems && c->mode == SW_EMPTY) { /* amax/amin: only the non-empty dim */
        int64_t one[1] = {d0};
        aints(c, one, 1);
      } else if (opt && runif(c) < 0.3) {
        anone(c);
      } else if (nd >= 2 && runif(c) < 0.4) {
        int64_t two[2] = {d0, (d0 + 1) % nd - nd}; /* two dims, one negative */
        aints(c, two, 2);
      } else {
        int64_t one[1] = {nd ? d0 - (runif(c) < 0.5 ? nd : 0) : 0};
        aints(c, one, 1);
      }
    } else if (!strcmp(name, "dim")) {
      if (strchr(type, '?') && runif(c) < 0.3 && !(needs_elems && c->mode == SW_EMPTY))
        anone(c);
      else
        ai(c, nd ? d0 - (runif(c) < 0.5 ? nd : 0) : (runif(c) < 0.5 ? 0 : -1));
    } else if (!strcmp(name, "keepdim")) {
      ab(c, runif(c) < 0.5);
    } else if (!strcmp(name, "dtype")) {
      adt(c, runif(c) < 0.3 ? WK_F64 : WK_DTYPE_DEFAULT);
    } else if (!strcmp(name, "correction")) {
      ai(c, rpick(c, 0, 1));
    } else if (!strcmp(name, "p")) {
      af(c, runif(c) < 0.5 ? 2 : 1);
    } else {
      break;
    }
  }
  return true;
}

/* A dim out of range, a repeated dim, a reduction of no elements, mean of integers. */
static bool e_reduce(sw_case *c, int k) {
  int64_t s[2] = {2, 3}, e[2] = {0, 3};
  int di = wk_op_arg_index(c->op, "dim");
  bool list = di >= 0 && !strncmp(wk_op_arg_type(c->op, di), "int[", 4);
  bool needs_elems = is_op(c, "max") || is_op(c, "min") || is_op(c, "argmax") || is_op(c, "argmin") ||
                     is_op(c, "amax") || is_op(c, "amin") || is_op(c, "aminmax");
  switch (k) {
    case 0:
    case 1:
      if (di < 0 || (k == 1 && !list)) return false;
      at(c, rt(c, WK_F32, s, 2, -1, 1));
      for (int i = 1; i < di; i++) /* the arguments before dim (norm's p): their defaults */
        c->a[c->n++] = wk_op_arg_default(c->op, i) ? *wk_op_arg_default(c->op, i) : WK_VNONE;
      if (k == 0 && list) AINTS(c, 5);
      if (k == 0 && !list) ai(c, 5);
      if (k == 1) AINTS(c, 0, 0);
      return true;
    case 2: /* max() of an empty tensor; max(dim) over an empty dim */
      if (!needs_elems) return false;
      at(c, rt(c, WK_F32, e, 2, -1, 1));
      if (di >= 0 && list) AINTS(c, 0);
      if (di >= 0 && !list) ai(c, 0);
      return true;
    case 3:
      if (!is_op(c, "mean") && !is_op(c, "nanmean") && !is_op(c, "var_mean") && !is_op(c, "std_mean")) return false;
      at(c, rt(c, WK_I64, s, 2, 0, 5)); /* integers have no mean */
      if (di >= 0) AINTS(c, 0);
      return true;
    default:
      return false;
  }
}

static bool g_cumsum(sw_case *c) { /* also cumprod, logcumsumexp, cummax, cummin */
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  wk_tensor *x = wants_distinct(c) ? rt_distinct(c, c->dt, s, nd, lo_of(c), hi_of(c)) : rself(c, s, nd);
  if (!c->grad && (is_op(c, "cumprod") || is_op(c, "cummax") || is_op(c, "cummin") || is_op(c, "logcumsumexp")) &&
      wk_dtype_is_floating(c->dt) && numel_of(s, nd) >= 3)
    add_specials(c, x);
  if (is_op(c, "cumprod") && c->grad && numel_of(s, nd) >= 4) { /* a zero: the backward's masks */
    int64_t idx[WK_MAX_DIMS] = {0};
    wk_tensor_set(x, idx, 0.0);
  }
  at(c, x);
  ai(c, nd ? rpick(c, -nd, nd - 1) : 0);
  if (wk_op_num_args(c->op) > 2) adt(c, runif(c) < 0.3 ? WK_F64 : WK_DTYPE_DEFAULT);
  return true;
}

/* ==== generators: linear algebra ============================================================ */

static void mnk(sw_case *c, int64_t *n, int64_t *k, int64_t *m) {
  *n = rpick(c, 1, 4), *k = rpick(c, 1, 4), *m = rpick(c, 1, 4);
  if (c->mode == SW_EMPTY) *(rpick(c, 0, 2) == 0 ? n : runif(c) < 0.5 ? k : m) = 0;
}
static bool g_mm(sw_case *c) {
  int64_t n, k, m;
  mnk(c, &n, &k, &m);
  int64_t a[2] = {n, k}, b[2] = {k, m};
  at(c, rself(c, a, 2));
  at(c, rself(c, b, 2));
  return true;
}
static bool g_bmm(sw_case *c) {
  int64_t n, k, m, bt = rpick(c, 1, 3);
  mnk(c, &n, &k, &m);
  int64_t a[3] = {bt, n, k}, b[3] = {bt, k, m};
  at(c, rself(c, a, 3));
  at(c, rself(c, b, 3));
  return true;
}
static bool g_addmm(sw_case *c) {
  int64_t n, k, m;
  mnk(c, &n, &k, &m);
  int64_t a[2] = {n, k}, b[2] = {k, m}, o[2] = {n, m}, ob[1] = {m};
  at(c, c->mode == SW_BCAST ? rself(c, ob, 1) : rself(c, o, 2));
  at(c, rself(c, a, 2));
  at(c, rself(c, b, 2));
  ascalar(c, wk_dtype_is_floating(c->dt) ? 0.5 : 2);
  ascalar(c, 2);
  return true;
}
static bool g_dot(sw_case *c) {
  int64_t n[1] = {c->mode == SW_EMPTY ? 0 : rpick(c, 1, 6)};
  at(c, rself(c, n, 1));
  at(c, rself(c, n, 1));
  return true;
}
static bool g_outer(sw_case *c) {
  int64_t n[1] = {c->mode == SW_EMPTY ? 0 : rpick(c, 1, 4)}, m[1] = {rpick(c, 1, 4)};
  at(c, rself(c, n, 1));
  at(c, rself(c, m, 1));
  return true;
}
/* matmul over its rank combinations: 1x1, 2x2, 1x2, 2x1, 3x2, 2x3, 3x3 (batch broadcast in BCAST). */
static bool g_matmul(sw_case *c) {
  int64_t n, k, m, bt = rpick(c, 2, 3);
  mnk(c, &n, &k, &m);
  int combo = (int)rpick(c, 0, 6);
  if (c->mode == SW_BCAST) combo = 7;
  int64_t a[3], b[3];
  int an, bn;
  switch (combo) {
    case 0:
      a[0] = k, an = 1, b[0] = k, bn = 1;
      break;
    case 1:
      a[0] = n, a[1] = k, an = 2, b[0] = k, b[1] = m, bn = 2;
      break;
    case 2:
      a[0] = k, an = 1, b[0] = k, b[1] = m, bn = 2;
      break;
    case 3:
      a[0] = n, a[1] = k, an = 2, b[0] = k, bn = 1;
      break;
    case 4:
      a[0] = bt, a[1] = n, a[2] = k, an = 3, b[0] = k, b[1] = m, bn = 2;
      break;
    case 5:
      a[0] = n, a[1] = k, an = 2, b[0] = bt, b[1] = k, b[2] = m, bn = 3;
      break;
    case 6:
      a[0] = bt, a[1] = n, a[2] = k, an = 3, b[0] = bt, b[1] = k, b[2] = m, bn = 3;
      break;
    default:
      a[0] = bt, a[1] = n, a[2] = k, an = 3, b[0] = 1, b[1] = k, b[2] = m, bn = 3;
      break;
  }
  at(c, rself(c, a, an));
  at(c, rself(c, b, bn));
  return true;
}
static bool g_linear(sw_case *c) {
  int64_t s[WK_MAX_DIMS], w[2];
  int nd = rshape(c, s, 1, 3);
  if (s[nd - 1] == 0 && c->mode != SW_EMPTY) s[nd - 1] = 1;
  w[0] = rpick(c, 1, 4), w[1] = s[nd - 1];
  int64_t b[1] = {w[0]};
  at(c, rself(c, s, nd));
  at(c, rself(c, w, 2));
  if (runif(c) < 0.5)
    at(c, rself(c, b, 1));
  else
    anone(c);
  return true;
}
/* Inner sizes that do not agree; operands of the wrong rank. */
static bool e_linalg(sw_case *c, int k) {
  int64_t s23[2] = {2, 3}, s45[2] = {4, 5}, s3[1] = {3}, s4[1] = {4}, s234[3] = {2, 3, 4}, s345[3] = {3, 4, 5};
  int64_t s0[1] = {0};
  if (k > 1) return false;
  bool one = is_op(c, "dot") || is_op(c, "outer");
  if (is_op(c, "addmm")) at(c, rt(c, WK_F32, k == 0 ? s4 : s45, 1 + (k != 0), -1, 1));
  if (is_op(c, "bmm")) {
    at(c, rt(c, WK_F32, k == 0 ? s234 : s23, k == 0 ? 3 : 2, -1, 1));
    at(c, rt(c, WK_F32, s345, 3, -1, 1)); /* batch 2 vs 3; a matrix */
  } else if (one) {
    at(c, rt(c, WK_F32, k == 0 ? s3 : s23, k == 0 ? 1 : 2, -1, 1));
    at(c, rt(c, WK_F32, k == 0 ? s4 : s23, k == 0 ? 1 : 2, -1, 1)); /* lengths; 2-d operands */
    if (is_op(c, "outer") && k == 0) return false;                  /* outer takes any lengths */
  } else if (is_op(c, "matmul") && k == 1) {
    at(c, rt(c, WK_F32, s0, 0, -1, 1)); /* a 0-dim operand */
    at(c, rt(c, WK_F32, s23, 2, -1, 1));
  } else {
    at(c, rt(c, WK_F32, k == 0 ? s23 : s234, k == 0 ? 2 : 3, -1, 1));
    at(c, rt(c, WK_F32, s45, 2, -1, 1)); /* 3 vs 4; a 3-d operand */
  }
  return true;
}

/* ==== generators: issue 21's lerp, addcmul, addcdiv ======================================== */

/* lerp(self, end, weight): weight a Scalar or a tensor (both sides of 0.5); BCAST: end and weight broadcast. */
static bool g_lerp(sw_case *c) {
  int64_t s[WK_MAX_DIMS], o[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3), ond = c->mode == SW_BCAST ? bshape(c, s, nd, o) : nd;
  if (c->mode != SW_BCAST) memcpy(o, s, sizeof o);
  at(c, rself(c, s, nd));
  at(c, rself(c, o, ond));
  if (is_op_full(c, "lerp.Tensor"))
    at(c, rt(c, c->dt, o, ond, -0.25, 1.25));
  else
    af(c, runif(c) < 0.5 ? 0.25 : 0.75);
  return true;
}
static bool e_lerp(sw_case *c, int k) { /* an integer self; end of another dtype */
  int64_t s[2] = {2, 3};
  if (k > 1) return false;
  at(c, rt(c, k == 0 ? WK_I64 : WK_F32, s, 2, -1, 1));
  at(c, rt(c, k == 0 ? WK_I64 : WK_F64, s, 2, -1, 1));
  if (is_op_full(c, "lerp.Tensor"))
    at(c, rt(c, k == 0 ? WK_I64 : WK_F32, s, 2, 0, 1));
  else
    af(c, 0.5);
  return true;
}
/* addcmul/addcdiv(self, tensor1, tensor2, value): divisors away from 0; BCAST: the tensors broadcast to self. */
static bool g_addc(sw_case *c) {
  int64_t s[WK_MAX_DIMS], o[WK_MAX_DIMS];
  int mut = wk_op_mutated_arg(c->op), nd = rshape(c, s, 0, 3), ond = c->mode == SW_BCAST ? bshape(c, s, nd, o) : nd;
  if (c->mode != SW_BCAST) memcpy(o, s, sizeof o);
  bool div = is_op(c, "addcdiv"), fl = wk_dtype_is_floating(c->dt);
  (void)mut;
  at(c, rself(c, s, nd));
  at(c, rself(c, o, ond));
  at(c, div ? rt(c, fl ? c->dt : WK_F32, s, nd, 0.5, 2) : rself(c, s, nd));
  ascalar(c, fl ? 0.5 : 2);
  return true;
}
static bool e_addc(sw_case *c, int k) { /* shapes that do not broadcast; addcdiv of integers; a float value for integers */
  int64_t s[2] = {2, 3}, s4[1] = {4};
  if (k > 2 || (k == 1 && !is_op(c, "addcdiv"))) return false;
  wk_dtype dt = k == 0 ? WK_F32 : WK_I64;
  at(c, rt(c, dt, s, 2, -1, 1));
  at(c, rt(c, dt, k == 0 ? s4 : s, k == 0 ? 1 : 2, -1, 1));
  at(c, rt(c, dt, s, 2, 1, 3));
  if (k == 2) af(c, 0.5);
  else ai(c, 1);
  return true;
}

/* ==== generators: issue 21's shape ops ===================================================== */

/* tril/triu(self, diagonal): matrices or batches of them, diagonals on both sides. */
static bool g_tril(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 2, 4);
  at(c, rself(c, s, nd));
  ai(c, rpick(c, -2, 2));
  return true;
}
static bool e_tril(sw_case *c, int k) { /* a vector */
  int64_t s[1] = {3};
  if (k > 0) return false;
  at(c, rt(c, WK_F32, s, 1, -1, 1));
  ai(c, 0);
  return true;
}
/* diag(self, diagonal): a vector or a matrix. */
static bool g_diag(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 1, 2);
  at(c, rself(c, s, nd));
  ai(c, rpick(c, -2, 2));
  return true;
}
static bool e_diag(sw_case *c, int k) { /* a 3-d tensor */
  int64_t s[3] = {2, 2, 2};
  if (k > 0) return false;
  at(c, rt(c, WK_F32, s, 3, -1, 1));
  ai(c, 0);
  return true;
}
/* diagonal(self, offset, dim1, dim2): two different dims, either sign. */
static bool g_diagonal(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 2, 4), d1 = (int)rpick(c, 0, nd - 1), d2 = (int)rpick(c, 0, nd - 2);
  if (d2 >= d1) d2++;
  at(c, rself(c, s, nd));
  ai(c, rpick(c, -2, 2));
  ai(c, d1 - (runif(c) < 0.5 ? nd : 0));
  ai(c, d2 - (runif(c) < 0.5 ? nd : 0));
  return true;
}
static bool e_diagonal(sw_case *c, int k) { /* identical dims; a dim out of range */
  int64_t s[2] = {2, 3};
  if (k > 1) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  ai(c, 0);
  ai(c, 0);
  ai(c, k == 0 ? -2 : 5);
  return true;
}
/* movedim(self, source, destination): a random subset of dims to random free places. */
static bool g_movedim(sw_case *c) {
  int64_t s[WK_MAX_DIMS], src[WK_MAX_DIMS], dst[WK_MAX_DIMS], perm[WK_MAX_DIMS];
  int nd = rshape(c, s, 1, 4), n = (int)rpick(c, 1, nd);
  for (int d = 0; d < nd; d++) perm[d] = d;
  for (int d = nd - 1; d > 0; d--) { /* shuffle */
    int64_t j = rpick(c, 0, d), x = perm[d];
    perm[d] = perm[j], perm[j] = x;
  }
  for (int i = 0; i < n; i++) src[i] = perm[i] - (runif(c) < 0.3 ? nd : 0);
  for (int d = nd - 1; d > 0; d--) {
    int64_t j = rpick(c, 0, d), x = perm[d];
    perm[d] = perm[j], perm[j] = x;
  }
  for (int i = 0; i < n; i++) dst[i] = perm[i];
  at(c, rself(c, s, nd));
  aints(c, src, n);
  aints(c, dst, n);
  return true;
}
static bool e_movedim(sw_case *c, int k) { /* lengths differ; a repeated source dim */
  int64_t s[3] = {2, 3, 4};
  if (k > 1) return false;
  at(c, rt(c, WK_F32, s, 3, -1, 1));
  if (k == 0) AINTS(c, 0), AINTS(c, 0, 1);
  if (k == 1) AINTS(c, 0, 0), AINTS(c, 1, 2);
  return true;
}
/* tile(self, dims): fewer, as many or more dims than self. */
static bool g_tile(sw_case *c) {
  int64_t s[WK_MAX_DIMS], r[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3), n = (int)rpick(c, 0, nd + 1);
  for (int i = 0; i < n; i++) r[i] = rpick(c, c->mode == SW_EMPTY ? 0 : 1, 3);
  at(c, rself(c, s, nd));
  aints(c, r, n);
  return true;
}
static bool e_tile(sw_case *c, int k) { /* a negative repeat */
  int64_t s[2] = {2, 3};
  if (k > 0) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  AINTS(c, 2, -1);
  return true;
}
/* unflatten(self, dim, sizes): a dim of 1..6 split in two (one of them -1 at times). */
static bool g_unflatten(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 1, 3), d = (int)rpick(c, 0, nd - 1);
  int64_t a = rpick(c, 1, 3), b = c->mode == SW_EMPTY ? 0 : rpick(c, 1, 2);
  s[d] = a * b;
  at(c, rself(c, s, nd));
  ai(c, d - (runif(c) < 0.5 ? nd : 0));
  double u = runif(c);
  if (u < 0.3 && b > 0)
    AINTS(c, a, -1);
  else if (u < 0.5 && a > 0 && b > 0)
    AINTS(c, -1, b);
  else
    AINTS(c, a, b);
  return true;
}
static bool e_unflatten(sw_case *c, int k) { /* sizes that do not multiply up; two -1 */
  int64_t s[1] = {6};
  if (k > 1) return false;
  at(c, rt(c, WK_F32, s, 1, -1, 1));
  ai(c, 0);
  if (k == 0) AINTS(c, 4, -1);
  if (k == 1) AINTS(c, -1, -1);
  return true;
}
/* repeat_interleave(self, repeats, dim): None flattens. */
static bool g_repeat_interleave(sw_case *c) {
  int64_t s[WK_MAX_DIMS];
  int nd = rshape(c, s, 0, 3);
  at(c, rself(c, s, nd));
  ai(c, rpick(c, 0, 3));
  if (runif(c) < 0.3)
    anone(c);
  else
    ai(c, nd ? rpick(c, 0, nd - 1) - (runif(c) < 0.5 ? nd : 0) : 0);
  return true;
}
static bool e_repeat_interleave(sw_case *c, int k) { /* negative repeats; a dim out of range */
  int64_t s[2] = {2, 3};
  if (k > 1) return false;
  at(c, rt(c, WK_F32, s, 2, -1, 1));
  ai(c, k == 0 ? -1 : 2);
  ai(c, k == 0 ? 0 : 4);
  return true;
}

#endif
