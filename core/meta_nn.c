/* Meta functions of the neural-network ops: softmax/log_softmax and their
 * backward, batch_norm, layer_norm (and backward), dropout, embedding (and its
 * dense backward), pad (and backward) and the losses. Every argument check with
 * the cpu kernels' messages, and the result shapes and dtypes, decided here once
 * so the cpu, onednn and cuda kernels only compute. */
#include <math.h>
#include <stdio.h>

#include <wick/sdk/check.h>

#include "meta.h"

#define OPT(i) (MNONE(i) ? NULL : MT(i))

static wk_status need_float(const char *op, const char *what, const wk_tensor *t) {
  if (wk_dtype_is_floating(t->dtype)) return WK_OK;
  return wk_error(WK_ERR_DTYPE, "%s(): expected a floating point %s, got %s", op, what, wk_dtype_name(t->dtype));
}

/* grad (named gname) must have the shape of t (named tname). */
static wk_status same_shape(const char *op, const char *gname, const wk_tensor *g, const char *tname,
                            const wk_tensor *t) {
  if (g->ndim == t->ndim && !memcmp(g->sizes, t->sizes, sizeof(int64_t) * (size_t)t->ndim)) return WK_OK;
  char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX];
  return wk_error(WK_ERR_SHAPE, "%s(): expected %s to have the shape of %s %s, but got %s", op, gname, tname,
                  wk__shape_str(t->sizes, t->ndim, a, sizeof a), wk__shape_str(g->sizes, g->ndim, b, sizeof b));
}

static wk_status mask_arg(const char *op, const wk_value *v) {
  if (v->tag == WK_V_INTS && v->len == 3) return WK_OK;
  return wk_error(WK_ERR_INVALID_ARG, "%s(): output_mask must hold 3 values, got %d", op,
                  v->tag == WK_V_INTS ? v->len : 0);
}

static wk_status mask_arg_n(const char *op, const wk_value *v, int n) {
  if (v->tag == WK_V_INTS && v->len == n) return WK_OK;
  return wk_error(WK_ERR_INVALID_ARG, "%s(): output_mask must hold %d values, got %d", op, n,
                  v->tag == WK_V_INTS ? v->len : 0);
}

static wk_status check_reduction(const char *op, int64_t r) {
  if (r >= 0 && r <= 2) return WK_OK;
  return wk_error(WK_ERR_INVALID_ARG, "%s(): reduction must be 0 (none), 1 (mean) or 2 (sum), got %lld", op,
                  (long long)r);
}

static bool same_sizes(const wk_tensor *a, const wk_tensor *b) {
  return a->ndim == b->ndim && !memcmp(a->sizes, b->sizes, sizeof(int64_t) * (size_t)a->ndim);
}

/* ---- softmax ----------------------------------------------------------------------- */
/* softmax / log_softmax (self, dim, dtype?) */
static wk_status meta_softmax(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *self = MT(0);
  wk_dtype dt = MNONE(2) ? self->dtype : args[2].u.dtype;
  if (!wk_dtype_is_floating(dt))
    return wk_error(WK_ERR_DTYPE, "%s(): expected a floating point input or dtype, got %s", MNAME, wk_dtype_name(dt));
  int d;
  wk_status s = wk_check_dim(MNAME, args[1].u.i, self->ndim, &d);
  if (s) return s;
  wk__meta_like(o, self, dt);
  return WK_OK;
}

/* (log_)softmax_backward_data(grad_output, output, dim, input_dtype) */
static wk_status meta_softmax_backward(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *go = MT(0), *out = MT(1);
  wk_dtype idt = args[3].u.dtype;
  wk_status s;
  if ((s = need_float(MNAME, "grad_output", go)) || (s = need_float(MNAME, "output", out))) return s;
  if (!wk_dtype_is_floating(idt))
    return wk_error(WK_ERR_DTYPE, "%s(): expected a floating point input_dtype, got %s", MNAME, wk_dtype_name(idt));
  if ((s = same_shape(MNAME, "grad_output", go, "output", out))) return s;
  int d;
  if ((s = wk_check_dim(MNAME, args[2].u.i, out->ndim, &d))) return s;
  wk__meta_like(o, out, idt);
  return WK_OK;
}

/* ---- batch_norm ---------------------------------------------------------------------- */
static wk_status channel_param(const char *op, const char *name, const wk_tensor *t, int64_t C) {
  if (!t) return WK_OK;
  if (!wk_dtype_is_floating(t->dtype))
    return wk_error(WK_ERR_DTYPE, "%s(): expected %s to be floating point, got %s", op, name, wk_dtype_name(t->dtype));
  if (wk_tensor_numel(t) != C)
    return wk_error(WK_ERR_SHAPE, "%s(): %s should contain %lld elements not %lld", op, name, (long long)C,
                    (long long)wk_tensor_numel(t));
  return WK_OK;
}

/* Dtype of saved statistics: the input's, or f32 for a reduced-precision input
 * with an f32 parameter (PyTorch's mixed type). */
static wk_dtype stat_dtype(wk_dtype in, wk_tensor *const *params, int n) {
  if (in != WK_F16 && in != WK_BF16) return in;
  for (int i = 0; i < n; i++)
    if (params[i] && params[i]->dtype == WK_F32) return WK_F32;
  return in;
}

static wk_status bn_input(const char *op, const wk_tensor *input) {
  char a[WK_SHAPE_STR_MAX];
  if (input->ndim < 2)
    return wk_error(WK_ERR_SHAPE, "%s(): expected input with at least 2 dimensions (N, C, ...), got %s", op,
                    wk__shape_str(input->sizes, input->ndim, a, sizeof a));
  return WK_OK;
}

/* batch_norm(input, weight?, bias?, running_mean?, running_var?, training, momentum, eps)
 * -> (output, save_mean, save_invstd); the saved statistics are [C] when
 * training on a non-empty input, else [0]. */
static wk_status meta_batch_norm(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *input = MT(0), *weight = OPT(1), *bias = OPT(2), *rmean = OPT(3), *rvar = OPT(4);
  bool training = args[5].u.b;
  char a[WK_SHAPE_STR_MAX];
  wk_status s;
  if ((s = need_float(MNAME, "input", input)) || (s = bn_input(MNAME, input))) return s;
  int64_t N = input->sizes[0], C = input->sizes[1], S = 1;
  for (int i = 2; i < input->ndim; i++) S *= input->sizes[i];
  if ((s = channel_param(MNAME, "weight", weight, C)) || (s = channel_param(MNAME, "bias", bias, C)) ||
      (s = channel_param(MNAME, "running_mean", rmean, C)) || (s = channel_param(MNAME, "running_var", rvar, C)))
    return s;
  if (!training && (!rmean || !rvar))
    return wk_error(WK_ERR_INVALID_ARG, "%s(): %s must be defined in evaluation mode", MNAME,
                    rmean ? "running_var" : "running_mean");
  if (training && N * S == 1)
    return wk_error(WK_ERR_INVALID_ARG, "%s(): Expected more than 1 value per channel when training, got input size %s",
                    MNAME, wk__shape_str(input->sizes, input->ndim, a, sizeof a));
  wk_tensor *params[4] = {weight, bias, rmean, rvar};
  wk_dtype sdt = stat_dtype(input->dtype, params, 4);
  int64_t n = training && wk_tensor_numel(input) > 0 ? C : 0;
  wk__meta_like(&o[0], input, input->dtype);
  wk__meta_shape(&o[1], &n, 1, sdt);
  wk__meta_shape(&o[2], &n, 1, sdt);
  return WK_OK;
}

/* batch_norm_backward(grad_out, input, weight?, running_mean?, running_var?,
 * save_mean?, save_invstd?, train, eps, output_mask) -> (grad_input, grad_weight, grad_bias) */
static wk_status meta_batch_norm_backward(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *go = MT(0), *input = MT(1), *weight = OPT(2), *rmean = OPT(3), *rvar = OPT(4);
  wk_tensor *smean = OPT(5), *sinv = OPT(6);
  bool train = args[7].u.b;
  wk_status s;
  if ((s = mask_arg(MNAME, &args[9])) || (s = need_float(MNAME, "input", input)) ||
      (s = need_float(MNAME, "grad_out", go)) || (s = bn_input(MNAME, input)) ||
      (s = same_shape(MNAME, "grad_out", go, "input", input)))
    return s;
  int64_t C = input->sizes[1];
  if ((s = channel_param(MNAME, "weight", weight, C)) || (s = channel_param(MNAME, "running_mean", rmean, C)) ||
      (s = channel_param(MNAME, "running_var", rvar, C)))
    return s;
  if (train) {
    if (!smean || !sinv)
      return wk_error(WK_ERR_INVALID_ARG, "%s(): %s must be defined in training mode", MNAME,
                      smean ? "save_invstd" : "save_mean");
    if ((s = channel_param(MNAME, "save_mean", smean, C)) || (s = channel_param(MNAME, "save_invstd", sinv, C)))
      return s;
  } else if (!rmean || !rvar) {
    return wk_error(WK_ERR_INVALID_ARG, "%s(): %s must be defined in evaluation mode", MNAME,
                    rmean ? "running_var" : "running_mean");
  }
  wk_dtype pdt = weight ? weight->dtype : input->dtype;
  wk__meta_like(&o[0], input, input->dtype);
  wk__meta_shape(&o[1], &C, 1, pdt);
  wk__meta_shape(&o[2], &C, 1, pdt);
  return WK_OK;
}

/* ---- layer_norm ---------------------------------------------------------------------- */
static wk_status norm_param(const char *op, const char *name, const wk_tensor *t, const int64_t *ns, int k) {
  if (!t) return WK_OK;
  char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX];
  bool same = t->ndim == k && !memcmp(t->sizes, ns, sizeof(int64_t) * (size_t)k);
  if (!same)
    return wk_error(WK_ERR_SHAPE,
                    "%s(): Expected %s to be of same shape as normalized_shape, but got %s of shape %s and "
                    "normalized_shape = %s",
                    op, name, name, wk__shape_str(t->sizes, t->ndim, a, sizeof a), wk_sizes_str(ns, k, b, sizeof b));
  if (!wk_dtype_is_floating(t->dtype))
    return wk_error(WK_ERR_DTYPE, "%s(): expected %s to be floating point, got %s", op, name, wk_dtype_name(t->dtype));
  return WK_OK;
}

/* normalized_shape must be non-empty and end input's shape. */
static wk_status ln_shape(const char *op, const wk_tensor *input, const int64_t *ns, int k) {
  char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX], c[WK_SHAPE_STR_MAX + 4];
  if (k < 1)
    return wk_error(WK_ERR_SHAPE,
                    "%s(): Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
                    "element, but got normalized_shape = []",
                    op);
  int nd = input->ndim;
  bool ok = nd >= k && !memcmp(input->sizes + nd - k, ns, sizeof(int64_t) * (size_t)k);
  if (ok) return WK_OK;
  snprintf(c, sizeof c, "[*, %s", wk_sizes_str(ns, k, a, sizeof a) + 1); /* "[*, 3, 4]" */
  return wk_error(WK_ERR_SHAPE,
                  "%s(): Given normalized_shape=%s, expected input with shape %s, but got input of size%s", op, a, c,
                  wk__shape_str(input->sizes, nd, b, sizeof b));
}

/* layer_norm(input, normalized_shape, weight?, bias?, eps) -> (output, mean, rstd);
 * mean and rstd keep the leading dimensions and are 1 in the normalized ones. */
static wk_status meta_layer_norm(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *input = MT(0), *weight = OPT(2), *bias = OPT(3);
  const int64_t *ns = args[1].u.ints;
  int k = args[1].len;
  wk_status s;
  if ((s = need_float(MNAME, "input", input)) || (s = ln_shape(MNAME, input, ns, k)) ||
      (s = norm_param(MNAME, "weight", weight, ns, k)) || (s = norm_param(MNAME, "bias", bias, ns, k)))
    return s;
  int nd = input->ndim;
  int64_t ssz[WK_MAX_DIMS];
  for (int i = 0; i < nd; i++) ssz[i] = i < nd - k ? input->sizes[i] : 1;
  wk_tensor *params[2] = {weight, bias};
  wk_dtype sdt = stat_dtype(input->dtype, params, 2);
  wk__meta_like(&o[0], input, input->dtype);
  wk__meta_shape(&o[1], ssz, nd, sdt);
  wk__meta_shape(&o[2], ssz, nd, sdt);
  return WK_OK;
}

/* layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight?, bias?,
 * output_mask) -> (grad_input, grad_weight, grad_bias) */
static wk_status meta_layer_norm_backward(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *go = MT(0), *input = MT(1), *mean = MT(3), *rstd = MT(4), *weight = OPT(5), *bias = OPT(6);
  const int64_t *ns = args[2].u.ints;
  int k = args[2].len;
  wk_status s;
  if ((s = mask_arg(MNAME, &args[7])) || (s = need_float(MNAME, "input", input)) ||
      (s = need_float(MNAME, "grad_out", go)) || (s = ln_shape(MNAME, input, ns, k)) ||
      (s = same_shape(MNAME, "grad_out", go, "input", input)) || (s = norm_param(MNAME, "weight", weight, ns, k)) ||
      (s = norm_param(MNAME, "bias", bias, ns, k)))
    return s;
  int64_t M = 1;
  for (int i = 0; i < input->ndim - k; i++) M *= input->sizes[i];
  if (wk_tensor_numel(mean) != M || wk_tensor_numel(rstd) != M)
    return wk_error(WK_ERR_SHAPE, "%s(): expected mean and rstd with %lld elements, got %lld and %lld", MNAME,
                    (long long)M, (long long)wk_tensor_numel(mean), (long long)wk_tensor_numel(rstd));
  if ((s = need_float(MNAME, "mean", mean)) || (s = need_float(MNAME, "rstd", rstd))) return s;
  wk_dtype wdt = weight ? weight->dtype : input->dtype, bdt = bias ? bias->dtype : wdt;
  wk__meta_like(&o[0], input, input->dtype);
  wk__meta_shape(&o[1], ns, k, wdt);
  wk__meta_shape(&o[2], ns, k, bdt);
  return WK_OK;
}

/* ---- dropout ------------------------------------------------------------------------- */
/* dropout(input, p, train) -> (output, mask) */
static wk_status meta_dropout(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *input = MT(0);
  double p = args[1].u.f;
  bool train = args[2].u.b;
  if (!(p >= 0 && p <= 1))
    return wk_error(WK_ERR_INVALID_ARG, "%s(): dropout probability has to be between 0 and 1, but got %g", MNAME, p);
  if (train && p > 0 && !wk_dtype_is_floating(input->dtype))
    return wk_error(WK_ERR_DTYPE, "%s(): expected a floating point input when training, got %s", MNAME,
                    wk_dtype_name(input->dtype));
  wk__meta_like(&o[0], input, input->dtype);
  wk__meta_like(&o[1], input, WK_BOOL);
  return WK_OK;
}

/* ---- embedding ----------------------------------------------------------------------- */
static wk_status index_dtype(const char *op, const wk_tensor *indices) {
  if (wk_dtype_is_integral(indices->dtype)) return WK_OK;
  return wk_error(WK_ERR_DTYPE,
                  "%s(): Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, "
                  "Int; but got %s instead",
                  op, wk_dtype_name(indices->dtype));
}

/* embedding(weight, indices, padding_idx) -> indices.shape + [embedding_dim] */
static wk_status meta_embedding(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *weight = MT(0), *indices = MT(1);
  char a[WK_SHAPE_STR_MAX];
  if (weight->ndim != 2)
    return wk_error(WK_ERR_SHAPE, "%s(): 'weight' must be 2-D, got shape %s", MNAME,
                    wk__shape_str(weight->sizes, weight->ndim, a, sizeof a));
  wk_status s = index_dtype(MNAME, indices);
  if (s) return s;
  int nd = indices->ndim;
  if (nd + 1 > WK_MAX_DIMS)
    return wk_error(WK_ERR_SHAPE, "%s(): indices have %d dimensions, at most %d supported", MNAME, nd, WK_MAX_DIMS - 1);
  wk__meta_shape(o, indices->sizes, nd, weight->dtype);
  o->sizes[nd] = weight->sizes[1];
  o->ndim = nd + 1;
  return WK_OK;
}

/* embedding_dense_backward(grad_output, indices, num_weights, padding_idx) -> [num_weights, D] */
static wk_status meta_embedding_dense_backward(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *go = MT(0), *indices = MT(1);
  int64_t V = args[2].u.i;
  char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX];
  wk_status s;
  if ((s = need_float(MNAME, "grad_output", go)) || (s = index_dtype(MNAME, indices))) return s;
  if (V < 0)
    return wk_error(WK_ERR_INVALID_ARG, "%s(): num_weights must be non-negative, got %lld", MNAME, (long long)V);
  int nd = indices->ndim;
  if (go->ndim != nd + 1 || memcmp(go->sizes, indices->sizes, sizeof(int64_t) * (size_t)nd))
    return wk_error(
        WK_ERR_SHAPE, "%s(): expected grad_output of shape indices.shape + [embedding_dim] (indices %s), but got %s",
        MNAME, wk__shape_str(indices->sizes, nd, a, sizeof a), wk__shape_str(go->sizes, go->ndim, b, sizeof b));
  int64_t sz[2] = {V, go->sizes[nd]};
  wk__meta_shape(o, sz, 2, go->dtype);
  return WK_OK;
}

/* ---- pad ----------------------------------------------------------------------------- */
enum { PAD_CONSTANT, PAD_REFLECT, PAD_REPLICATE, PAD_CIRCULAR };

/* PyTorch's checks of mode and of the length of pad (mode_out: PAD_*). */
static wk_status pad_geometry(const char *op, const wk_tensor *self, const wk_value *padv, const char *ms,
                              int *mode_out) {
  static const char *const modes[] = {"constant", "reflect", "replicate", "circular", NULL}; /* PAD_* order */
  int mode = wk_arg_option(op, "mode", ms, modes);
  if (mode < 0) return wk_last_error();
  *mode_out = mode;
  int npad = padv->len, nd = self->ndim;
  if (npad % 2) return wk_error(WK_ERR_INVALID_ARG, "%s(): Padding length must be divisible by 2", op);
  if (npad / 2 > nd)
    return wk_error(WK_ERR_INVALID_ARG,
                    "%s(): Padding length should be less than or equal to two times the input dimension but got "
                    "padding length %d and input of dimension %d",
                    op, npad, nd);
  return WK_OK;
}

/* Per-dimension checks after pad_geometry's; fills osz. */
static wk_status pad_dims(const char *op, const wk_tensor *self, const wk_value *padv, int mode, int64_t *osz) {
  const int64_t *pad = padv->u.ints, *sz = self->sizes;
  int npad = padv->len, nd = self->ndim;
  char a[WK_SHAPE_STR_MAX];
  for (int d = 0; d < nd; d++) {
    int k = nd - 1 - d; /* pairs run from the last dimension */
    int64_t pl = k < npad / 2 ? pad[2 * k] : 0, pr = k < npad / 2 ? pad[2 * k + 1] : 0, n = sz[d];
    osz[d] = n + pl + pr;
    if (osz[d] < 0)
      return wk_error(WK_ERR_SHAPE,
                      "%s(): The input size %lld, plus negative padding %lld and %lld resulted in a negative output "
                      "size, which is invalid. Check dimension %d of your input.",
                      op, (long long)n, (long long)pl, (long long)pr, d);
    if ((pl > 0 || pr > 0) && osz[d] > 0) {
      if (mode == PAD_REFLECT && (pl >= n || pr >= n))
        return wk_error(WK_ERR_INVALID_ARG,
                        "%s(): Padding size should be less than the corresponding input dimension, but got: padding "
                        "(%lld, %lld) at dimension %d of input %s",
                        op, (long long)pl, (long long)pr, d, wk__shape_str(sz, nd, a, sizeof a));
      if (mode == PAD_REPLICATE && n == 0)
        return wk_error(WK_ERR_INVALID_ARG, "%s(): cannot replicate-pad dimension %d of size 0 of input %s", op, d,
                        wk__shape_str(sz, nd, a, sizeof a));
      if (mode == PAD_CIRCULAR && (pl > n || pr > n))
        return wk_error(WK_ERR_INVALID_ARG,
                        "%s(): Padding value causes wrapping around more than once (padding (%lld, %lld) at dimension "
                        "%d of input %s)",
                        op, (long long)pl, (long long)pr, d, wk__shape_str(sz, nd, a, sizeof a));
    }
  }
  return WK_OK;
}

/* pad(self, pad, mode, value?) */
static wk_status meta_pad(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *self = MT(0);
  int mode;
  int64_t osz[WK_MAX_DIMS];
  wk_status s = pad_geometry(MNAME, self, &args[1], args[2].u.s, &mode);
  if (s) return s;
  if (mode != PAD_CONSTANT && !MNONE(3) && args[3].u.f != 0)
    return wk_error(WK_ERR_INVALID_ARG, "%s(): Padding mode \"%s\" doesn't take in value argument", MNAME, args[2].u.s);
  if ((s = pad_dims(MNAME, self, &args[1], mode, osz))) return s;
  wk__meta_shape(o, osz, self->ndim, self->dtype);
  return WK_OK;
}

/* pad_backward(grad_output, self, pad, mode) -> shaped like self */
static wk_status meta_pad_backward(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *go = MT(0), *self = MT(1);
  int mode, nd = self->ndim;
  int64_t osz[WK_MAX_DIMS];
  char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX];
  wk_status s = pad_geometry(MNAME, self, &args[2], args[3].u.s, &mode);
  if (!s) s = need_float(MNAME, "grad_output", go);
  if (!s) s = pad_dims(MNAME, self, &args[2], mode, osz);
  if (s) return s;
  if (go->ndim != nd || memcmp(go->sizes, osz, sizeof(int64_t) * (size_t)nd))
    return wk_error(WK_ERR_SHAPE, "%s(): expected grad_output of size %s (the padded input), but got %s", MNAME,
                    wk_sizes_str(osz, nd, a, sizeof a), wk__shape_str(go->sizes, go->ndim, b, sizeof b));
  wk__meta_like(o, self, go->dtype);
  return WK_OK;
}

/* ---- losses -------------------------------------------------------------------------- */
/* A class-index target has the input's shape without the class dimension (1,
 * or 0 for a 1-D input) and holds integers. */
static wk_status index_target(const char *op, const wk_tensor *self, const wk_tensor *target) {
  char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX], c[WK_SHAPE_STR_MAX];
  int nd = self->ndim, tnd = target->ndim;
  const int64_t *sz = self->sizes, *tsz = target->sizes;
  if (!wk_dtype_is_integral(target->dtype))
    return wk_error(WK_ERR_DTYPE, "%s(): expected target of an integer dtype (class indices, i64), got %s", op,
                    wk_dtype_name(target->dtype));
  if (nd >= 2 && tnd >= 1 && tsz[0] != sz[0])
    return wk_error(WK_ERR_SHAPE, "%s(): Expected input batch_size (%lld) to match target batch_size (%lld).", op,
                    (long long)sz[0], (long long)tsz[0]);
  int64_t exp[WK_MAX_DIMS];
  int en = 0;
  for (int i = 0; i < nd; i++)
    if (i != (nd >= 2 ? 1 : 0)) exp[en++] = sz[i];
  if (en != tnd || memcmp(exp, tsz, sizeof(int64_t) * (size_t)en))
    return wk_error(WK_ERR_SHAPE, "%s(): Expected target size %s, got %s (input of shape %s)", op,
                    wk_sizes_str(exp, en, a, sizeof a), wk__shape_str(tsz, tnd, b, sizeof b),
                    wk__shape_str(sz, nd, c, sizeof c));
  return WK_OK;
}

/* The result of a class loss: the input's shape without the class dimension
 * (reduction none) or a scalar; weight must cover every class. */
static wk_status class_loss_out(const char *op, const wk_tensor *self, const wk_tensor *weight, int64_t reduction,
                                wk_dtype dt, wk_meta_out *o) {
  int nd = self->ndim, cdim = nd >= 2 ? 1 : 0;
  int64_t C = self->sizes[cdim];
  char a[WK_SHAPE_STR_MAX];
  if (weight && wk_tensor_numel(weight) != C)
    return wk_error(WK_ERR_SHAPE,
                    "%s(): weight tensor should be defined either for all %lld classes or no classes but got weight "
                    "tensor of shape: %s",
                    op, (long long)C, wk__shape_str(weight->sizes, weight->ndim, a, sizeof a));
  o->dtype = dt;
  o->ndim = 0;
  if (reduction == 0)
    for (int i = 0; i < nd; i++)
      if (i != cdim) o->sizes[o->ndim++] = self->sizes[i];
  return WK_OK;
}

static wk_status class_loss_common(const char *op, const wk_tensor *self, int64_t reduction) {
  wk_status s = need_float(op, "input", self);
  if (!s) s = check_reduction(op, reduction);
  return s;
}

static wk_status nonzero_dim(const char *op, const wk_tensor *self) {
  if (self->ndim >= 1) return WK_OK;
  return wk_error(WK_ERR_SHAPE, "%s(): input tensor should be 1D or more, got a 0-dim tensor", op);
}

/* cross_entropy(self, target, weight?, reduction, ignore_index, label_smoothing):
 * class indices, or class probabilities when target has self's shape. */
static wk_status meta_cross_entropy(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *self = MT(0), *target = MT(1), *weight = OPT(2);
  int64_t reduction = args[3].u.i, ignore = args[4].u.i;
  double ls = args[5].u.f;
  wk_status s = class_loss_common(MNAME, self, reduction);
  if (s) return s;
  if (!(ls >= 0 && ls <= 1))
    return wk_error(WK_ERR_INVALID_ARG, "%s(): label_smoothing must be between 0.0 and 1.0. Got: %g", MNAME, ls);
  if ((s = nonzero_dim(MNAME, self))) return s;
  wk_dtype dt = self->dtype;
  if (same_sizes(self, target)) {
    if (!wk_dtype_is_floating(target->dtype))
      return wk_error(WK_ERR_DTYPE, "%s(): Expected floating point type for target with class probabilities, got %s",
                      MNAME, wk_dtype_name(target->dtype));
    if (ignore >= 0)
      return wk_error(WK_ERR_INVALID_ARG, "%s(): ignore_index is not supported for floating point target", MNAME);
    dt = wk_promote_types(dt, target->dtype);
  } else if ((s = index_target(MNAME, self, target))) {
    return s;
  }
  return class_loss_out(MNAME, self, weight, reduction, dt, o);
}

/* nll_loss(self, target, weight?, reduction, ignore_index) */
static wk_status meta_nll_loss(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *self = MT(0), *target = MT(1), *weight = OPT(2);
  int64_t reduction = args[3].u.i;
  wk_status s = class_loss_common(MNAME, self, reduction);
  if (!s) s = nonzero_dim(MNAME, self);
  if (!s) s = index_target(MNAME, self, target);
  if (s) return s;
  return class_loss_out(MNAME, self, weight, reduction, self->dtype, o);
}

/* Result dtype of a pointwise loss: the promoted floating dtype of self and target. */
static wk_status float_pair(wk_op *op, const wk_value *args, wk_dtype *rt) {
  *rt = wk_result_type(args, 2);
  if (wk_dtype_is_floating(*rt)) return WK_OK;
  return wk_error(WK_ERR_DTYPE, "%s(): expected floating point inputs, got %s and %s", MNAME,
                  wk_dtype_name(MT(0)->dtype), wk_dtype_name(MT(1)->dtype));
}

/* mse_loss(self, target, reduction): self and target broadcast. */
static wk_status meta_mse_loss(wk_op *op, const wk_value *args, wk_meta_out *o) {
  int64_t reduction = args[2].u.i;
  wk_dtype rt;
  wk_status s = check_reduction(MNAME, reduction);
  if (!s) s = float_pair(op, args, &rt);
  if (s) return s;
  wk_tensor *pair[2] = {MT(0), MT(1)};
  if ((s = wk__meta_broadcast("mse_loss()", pair, 2, o))) return s;
  o->dtype = rt;
  if (reduction != 0) o->ndim = 0;
  return WK_OK;
}

/* binary_cross_entropy_with_logits(self, target, weight?, pos_weight?, reduction):
 * target has self's shape; weight and pos_weight broadcast to it. */
static wk_status meta_bce_logits(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *self = MT(0), *target = MT(1);
  int64_t reduction = args[4].u.i;
  char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX];
  wk_status s = check_reduction(MNAME, reduction);
  if (s) return s;
  if (!same_sizes(self, target))
    return wk_error(WK_ERR_SHAPE, "%s(): Target size (%s) must be the same as input size (%s)", MNAME,
                    wk__shape_str(target->sizes, target->ndim, a, sizeof a),
                    wk__shape_str(self->sizes, self->ndim, b, sizeof b));
  wk_dtype rt;
  if ((s = float_pair(op, args, &rt))) return s;
  static const char *const names[2] = {"weight", "pos_weight"};
  for (int i = 0; i < 2; i++) {
    wk_tensor *e = OPT(2 + i);
    if (!e) continue;
    /* e broadcasts to self when every trailing size is 1 or self's */
    bool ok = e->ndim <= self->ndim;
    for (int d = 0; ok && d < e->ndim; d++) {
      int64_t es = e->sizes[d], ss = self->sizes[self->ndim - e->ndim + d];
      ok = es == ss || es == 1;
    }
    if (!ok)
      return wk_error(WK_ERR_SHAPE, "%s(): %s of shape %s cannot be broadcast to the input shape %s", MNAME, names[i],
                      wk__shape_str(e->sizes, e->ndim, a, sizeof a),
                      wk__shape_str(self->sizes, self->ndim, b, sizeof b));
  }
  wk__meta_like(o, self, rt);
  if (reduction != 0) o->ndim = 0;
  return WK_OK;
}

/* ---- scaled_dot_product_attention ------------------------------------------------------ */
/* query [..., L, E], key [..., S, E], value [..., S, Ev] with equal batch dims
 * and one floating dtype; attn_mask (bool: True takes part; or the query's
 * floating dtype: added to the scores) broadcasts to [..., L, S] and is not
 * allowed with is_causal (PyTorch 2's checks). Sets L, S, E, Ev. */
static wk_status sdpa_operands(const char *op, const wk_tensor *q, const wk_tensor *k, const wk_tensor *v,
                               const wk_tensor *mask, bool causal, double p, int64_t *L, int64_t *S) {
  char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX], c[WK_SHAPE_STR_MAX];
  wk_status s;
  if ((s = need_float(op, "query", q))) return s;
  if (k->dtype != q->dtype || v->dtype != q->dtype)
    return wk_error(WK_ERR_DTYPE,
                    "%s(): Expected query, key, and value to have the same dtype, but got query.dtype: %s key.dtype: "
                    "%s and value.dtype: %s instead.",
                    op, wk_dtype_name(q->dtype), wk_dtype_name(k->dtype), wk_dtype_name(v->dtype));
  int nd = q->ndim;
  bool ok = nd >= 2 && k->ndim == nd && v->ndim == nd &&
            !memcmp(k->sizes, q->sizes, sizeof(int64_t) * (size_t)(nd - 2)) &&
            !memcmp(v->sizes, q->sizes, sizeof(int64_t) * (size_t)(nd - 2)) && k->sizes[nd - 1] == q->sizes[nd - 1] &&
            v->sizes[nd - 2] == k->sizes[nd - 2];
  if (!ok)
    return wk_error(WK_ERR_SHAPE,
                    "%s(): expected query [..., L, E], key [..., S, E] and value [..., S, Ev] with the same batch "
                    "dimensions, got query %s, key %s and value %s",
                    op, wk__shape_str(q->sizes, q->ndim, a, sizeof a), wk__shape_str(k->sizes, k->ndim, b, sizeof b),
                    wk__shape_str(v->sizes, v->ndim, c, sizeof c));
  *L = q->sizes[nd - 2];
  *S = k->sizes[nd - 2];
  if (!(p >= 0 && p <= 1))
    return wk_error(WK_ERR_INVALID_ARG, "%s(): dropout probability has to be between 0 and 1, but got %g", op, p);
  if (!mask) return WK_OK;
  if (causal)
    return wk_error(WK_ERR_INVALID_ARG, "%s(): Explicit attn_mask should not be set when is_causal=True", op);
  if (mask->dtype != WK_BOOL && mask->dtype != q->dtype)
    return wk_error(WK_ERR_DTYPE, "%s(): Expected attn_mask dtype to be bool or to match query dtype (%s), got %s",
                    op, wk_dtype_name(q->dtype), wk_dtype_name(mask->dtype));
  /* the mask broadcasts to [..., L, S] */
  bool bc = mask->ndim <= nd;
  for (int i = 0; bc && i < mask->ndim; i++) {
    int d = nd - mask->ndim + i;
    int64_t want = d == nd - 2 ? *L : d == nd - 1 ? *S : q->sizes[d];
    bc = mask->sizes[i] == want || mask->sizes[i] == 1;
  }
  if (!bc) {
    int64_t full[WK_MAX_DIMS];
    memcpy(full, q->sizes, sizeof(int64_t) * (size_t)nd);
    full[nd - 1] = *S;
    return wk_error(WK_ERR_SHAPE, "%s(): attn_mask of shape %s cannot be broadcast to the attention shape %s", op,
                    wk__shape_str(mask->sizes, mask->ndim, a, sizeof a), wk_sizes_str(full, nd, b, sizeof b));
  }
  return WK_OK;
}

static wk_status sdpa_scale(const char *op, const wk_value *v) {
  if (v->tag == WK_V_NONE || (v->tag == WK_V_FLOAT && isfinite(v->u.f)) || v->tag == WK_V_INT) return WK_OK;
  return wk_error(WK_ERR_INVALID_ARG, "%s(): scale must be a finite number or None, got %g", op, v->u.f);
}

/* scaled_dot_product_attention(query, key, value, attn_mask?, dropout_p, is_causal, scale?)
 * -> (output [..., L, Ev], logsumexp [..., L] in the compute dtype (f64 for
 * f64, else f32), rng_state: i64 [2] (Philox seed, offset) when dropout_p > 0,
 * else [0]) */
static wk_status meta_sdpa(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *q = MT(0), *k = MT(1), *v = MT(2), *mask = OPT(3);
  double p = args[4].u.f;
  int64_t L, S;
  wk_status s = sdpa_operands(MNAME, q, k, v, mask, args[5].u.b, p, &L, &S);
  if (!s) s = sdpa_scale(MNAME, &args[6]);
  if (s) return s;
  int nd = q->ndim;
  wk__meta_like(&o[0], q, q->dtype);
  o[0].sizes[nd - 1] = v->sizes[nd - 1];
  wk__meta_shape(&o[1], q->sizes, nd - 1, q->dtype == WK_F64 ? WK_F64 : WK_F32);
  int64_t n = p > 0 ? 2 : 0;
  wk__meta_shape(&o[2], &n, 1, WK_I64);
  return WK_OK;
}

/* scaled_dot_product_attention_backward(grad_out, query, key, value, attn_mask?, out,
 * logsumexp, rng_state, dropout_p, is_causal, scale?, output_mask)
 * -> (grad_query, grad_key, grad_value, grad_attn_mask [..., L, S] for a float mask) */
static wk_status meta_sdpa_backward(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *go = MT(0), *q = MT(1), *k = MT(2), *v = MT(3), *mask = OPT(4), *out = MT(5), *lse = MT(6), *rng = MT(7);
  double p = args[8].u.f;
  int64_t L, S;
  char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX];
  wk_status s = mask_arg_n(MNAME, &args[11], 4);
  if (!s) s = sdpa_operands(MNAME, q, k, v, mask, args[9].u.b, p, &L, &S);
  if (!s) s = sdpa_scale(MNAME, &args[10]);
  if (!s) s = need_float(MNAME, "grad_out", go);
  if (!s) s = same_shape(MNAME, "grad_out", go, "out", out);
  if (s) return s;
  int nd = q->ndim;
  int64_t osz[WK_MAX_DIMS];
  memcpy(osz, q->sizes, sizeof(int64_t) * (size_t)nd);
  osz[nd - 1] = v->sizes[nd - 1];
  if (out->ndim != nd || memcmp(out->sizes, osz, sizeof(int64_t) * (size_t)nd))
    return wk_error(WK_ERR_SHAPE, "%s(): expected out of shape %s, got %s", MNAME, wk_sizes_str(osz, nd, a, sizeof a),
                    wk__shape_str(out->sizes, out->ndim, b, sizeof b));
  if (!wk_dtype_is_floating(lse->dtype) || lse->ndim != nd - 1 ||
      memcmp(lse->sizes, q->sizes, sizeof(int64_t) * (size_t)(nd - 1)))
    return wk_error(WK_ERR_SHAPE, "%s(): expected a floating logsumexp of shape %s, got %s %s", MNAME,
                    wk_sizes_str(q->sizes, nd - 1, a, sizeof a), wk_dtype_name(lse->dtype),
                    wk__shape_str(lse->sizes, lse->ndim, b, sizeof b));
  if (rng->dtype != WK_I64 || rng->ndim != 1 || rng->sizes[0] != (p > 0 ? 2 : 0))
    return wk_error(WK_ERR_INVALID_ARG, "%s(): expected rng_state as the forward made it (i64 [%d]), got %s %s", MNAME,
                    p > 0 ? 2 : 0, wk_dtype_name(rng->dtype), wk__shape_str(rng->sizes, rng->ndim, a, sizeof a));
  wk__meta_like(&o[0], q, q->dtype);
  wk__meta_like(&o[1], k, q->dtype);
  wk__meta_like(&o[2], v, q->dtype);
  int64_t msz[WK_MAX_DIMS];
  memcpy(msz, q->sizes, sizeof(int64_t) * (size_t)nd);
  msz[nd - 1] = S;
  wk__meta_shape(&o[3], msz, nd, q->dtype);
  if (!mask || mask->dtype == WK_BOOL) o[3].flags |= WK_META_NONE;
  return WK_OK;
}

/* ---- glu / prelu (issue 21; kernels: core/composite_surface.c) ---------------------------- */
/* glu(self, dim): self halved along dim; floating only, as PyTorch's kernels. */
static wk_status meta_glu(wk_op *op, const wk_value *args, wk_meta_out *o) {
  const wk_tensor *x = MT(0);
  int d;
  if (x->ndim == 0) return wk_error(WK_ERR_SHAPE, "glu does not support scalars because halving size must be even");
  wk_status s = wk_check_dim(MNAME, args[1].u.i, x->ndim, &d);
  if (s) return s;
  if (!wk_dtype_is_floating(x->dtype))
    return wk_error(WK_ERR_DTYPE, "\"glu\" not implemented for '%s'", wk_dtype_name(x->dtype));
  if (x->sizes[d] % 2)
    return wk_error(WK_ERR_SHAPE, "glu: Halving dimension must be even, but dimension %d is size %lld", d,
                    (long long)x->sizes[d]);
  wk__meta_like(o, x, x->dtype);
  o->sizes[d] /= 2;
  return WK_OK;
}
/* prelu(self, weight): weight has one element or one per channel (dim 1). */
static wk_status meta_prelu(wk_op *op, const wk_value *args, wk_meta_out *o) {
  const wk_tensor *x = MT(0), *w = MT(1);
  if (!wk_dtype_is_floating(x->dtype))
    return wk_error(WK_ERR_DTYPE, "\"prelu\" not implemented for '%s'", wk_dtype_name(x->dtype));
  if (w->dtype != x->dtype)
    return wk_error(WK_ERR_DTYPE, "prelu: expected weight of dtype %s (the input's), got %s", wk_dtype_name(x->dtype),
                    wk_dtype_name(w->dtype));
  if (w->ndim > 1)
    return wk_error(WK_ERR_SHAPE, "prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = %d", w->ndim);
  int64_t nw = w->ndim ? w->sizes[0] : 1, ch = x->ndim >= 2 ? x->sizes[1] : 1;
  if (nw != 1 && nw != ch)
    return wk_error(WK_ERR_SHAPE,
                    "prelu: Mismatch of parameter numbers and input channel size. Found parameter numbers = %lld and "
                    "channel size = %lld.",
                    (long long)nw, (long long)ch);
  (void)op;
  wk__meta_like(o, x, x->dtype);
  return WK_OK;
}

static const wk__meta_row rows[] = {
    {"softmax", meta_softmax},
    {"log_softmax", meta_softmax},
    {"softmax_backward_data", meta_softmax_backward},
    {"log_softmax_backward_data", meta_softmax_backward},
    {"batch_norm", meta_batch_norm},
    {"batch_norm_backward", meta_batch_norm_backward},
    {"layer_norm", meta_layer_norm},
    {"layer_norm_backward", meta_layer_norm_backward},
    {"dropout", meta_dropout},
    {"embedding", meta_embedding},
    {"embedding_dense_backward", meta_embedding_dense_backward},
    {"pad", meta_pad},
    {"pad_backward", meta_pad_backward},
    {"cross_entropy", meta_cross_entropy},
    {"nll_loss", meta_nll_loss},
    {"mse_loss", meta_mse_loss},
    {"binary_cross_entropy_with_logits", meta_bce_logits},
    {"scaled_dot_product_attention", meta_sdpa},
    {"scaled_dot_product_attention_backward", meta_sdpa_backward},
    {"glu", meta_glu},
    {"prelu", meta_prelu},
};

const wk__meta_family wk__metas_nn = {rows, sizeof rows / sizeof rows[0]};
