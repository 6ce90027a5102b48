/* Meta functions: binding each standard op to its meta function, running it
 * for the dispatcher (with the checks every in-place and out= op shares), the
 * meta device's kernel that makes data-less results, and the public calls
 * wk_op_set_meta / wk_op_has_meta / wk_op_meta. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "meta.h"

static const wk__meta_family *const g_families[] = {&wk__metas_pointwise, &wk__metas_reduce, &wk__metas_factory, &wk__metas_index, &wk__metas_conv, &wk__metas_nn, &wk__metas_quant, &wk__metas_nn_surface, &wk__metas_linalg};

wk_status wk__metas_init(void) {
  for (size_t f = 0; f < sizeof g_families / sizeof g_families[0]; f++)
    for (size_t i = 0; i < g_families[f]->n; i++) {
      const wk__meta_row *row = &g_families[f]->rows[i];
      wk_op *op = wk_op_find(row->op);
      if (!op) /* a misspelt row, or a row for an op the list lost */
        return wk_error(WK_ERR_INTERNAL, "meta function table: row '%s' names no declared op", row->op);
      *wk__op_meta_slot(op) = row->fn;
    }
  return WK_OK;
}

const char *wk__dtype_word(wk_dtype dt) {
  switch (dt) {
#define WK__X(e, n, s, t, w, sz, k) \
  case e:                           \
    return w; /* the dtype list's ScalarType column */
    WK_DTYPE_LIST(WK__X)
    WK_QDTYPE_LIST(WK__X)
#undef WK__X
    default: return "Undefined";
  }
}

const char *wk__meta_base_name(const wk_op *op, char *buf, size_t n) {
  const char *s = wk_op_name(op);
  size_t len = strcspn(s, ".");
  if (len >= n) len = n - 1;
  memcpy(buf, s, len);
  buf[len] = 0;
  if (len > 1 && buf[len - 1] == '_') buf[len - 1] = 0;
  return buf;
}

wk_status wk__meta_no_overlap(const char *op, const wk_tensor *t) {
  for (int d = 0; d < t->ndim; d++)
    if (t->strides[d] == 0 && t->sizes[d] > 1)
      return wk_error(WK_ERR_INVALID_ARG,
                      "%s(): unsupported operation: more than one element of the written-to tensor refers to a "
                      "single memory location. Please clone() the tensor before performing the operation.",
                      op);
  return WK_OK;
}

wk_status wk__meta_broadcast_slow(const wk_op *op, wk_tensor *const *ts, int n, wk_meta_out *o) {
  char b[64]; /* the family's name, for the message (this path is not the common call) */
  return wk__meta_broadcast(wk__meta_base_name(op, b, sizeof b), ts, n, o);
}

wk_status wk__meta_broadcast(const char *op, wk_tensor *const *ts, int n, wk_meta_out *o) {
  int nd = 0;
  for (int i = 0; i < n; i++)
    if (ts[i] && ts[i]->ndim > nd) nd = ts[i]->ndim;
  for (int d = 0; d < nd; d++) o->sizes[d] = 1;
  for (int i = 0; i < n; i++) {
    const wk_tensor *t = ts[i];
    if (!t) continue;
    for (int d = 0; d < t->ndim; d++) {
      int k = nd - t->ndim + d;
      int64_t s = t->sizes[d];
      if (s == o->sizes[k] || s == 1) continue;
      if (o->sizes[k] == 1) {
        o->sizes[k] = s;
        continue;
      }
      char a[256], b[256];
      return wk_error(WK_ERR_SHAPE,
                      "%s: the size of tensor a (%lld) must match the size of tensor b (%lld) at non-singleton "
                      "dimension %d (shapes %s and %s)",
                      op ? op : "", (long long)o->sizes[k], (long long)s, k, wk__shape_str(o->sizes, nd, b, sizeof b),
                      wk__shape_str(t->sizes, t->ndim, a, sizeof a));
    }
  }
  o->ndim = nd;
  return WK_OK;
}

static bool same_shape(const wk_meta_out *o, const wk_tensor *t) {
  return o->ndim == t->ndim && memcmp(o->sizes, t->sizes, sizeof(int64_t) * (size_t)t->ndim) == 0;
}

wk_status wk__meta_failed(const wk_op *op, wk_status st) {
  if (!wk__error_pending()) wk_error(st, "%s(): meta function failed without a message", wk_op_name(op));
  return st;
}

wk_status wk__meta_run(wk_op *op, const wk_value *args, wk_device dev, wk_meta_out *outs, int nouts,
                       bool has_targets) {
  for (int i = 0; i < nouts; i++) {
    outs[i].dtype = WK_DTYPE_DEFAULT;
    outs[i].ndim = 0;
    outs[i].device = dev;
    outs[i].flags = 0;
  }
  wk_meta_fn fn = *wk__op_meta_slot(op);
  wk_status st = fn(op, args, outs);
  if (st) return wk__meta_failed(op, st);
  int m = wk__op_mask_arg(op); /* results the call does not want are None */
  if (m >= 0 && args[m].tag == WK_V_INTS)
    for (int i = 0; i < nouts && i < args[m].len; i++)
      if (!args[m].u.ints[i]) outs[i].flags |= WK_META_NONE;
  /* In-place and out= results: the target must hold the functional result. */
  for (int i = 0; has_targets && i < nouts; i++) {
    int a = wk__op_out_target(op, i);
    if (a < 0 || args[a].tag != WK_V_TENSOR || outs[i].ndim == WK_META_DYNAMIC) continue;
    const wk_tensor *tg = args[a].u.t;
    char x[256], y[256];
    bool inplace = (wk_op_tags(op) & WK_TAG_INPLACE) != 0;
    if (!same_shape(&outs[i], tg))
      return wk_error(WK_ERR_SHAPE, "%s: %s has shape %s but the result has shape %s", wk_op_name(op),
                      inplace ? "self (in-place)" : "out", wk__shape_str(tg->sizes, tg->ndim, x, sizeof x),
                      wk__shape_str(outs[i].sizes, outs[i].ndim, y, sizeof y));
    if (!wk__can_cast(outs[i].dtype, tg->dtype))
      return wk_error(WK_ERR_DTYPE, "%s: result type %s can't be cast to the desired output type %s",
                      wk_op_name(op), wk_dtype_name(outs[i].dtype), wk_dtype_name(tg->dtype));
  }
  return WK_OK;
}

wk_status wk__meta_materialise(wk_op *op, const wk_value *args, const wk_meta_out *mo, wk_value *outs) {
  int nouts = wk_op_num_outs(op);
  for (int i = 0; i < nouts; i++) {
    int a = wk__op_out_target(op, i);
    if (a >= 0 && args[a].tag == WK_V_TENSOR) { /* in place: the target itself, borrowed */
      wk_tensor_bump_version(args[a].u.t);
      outs[i] = WK_VT(args[a].u.t);
      continue;
    }
    if (mo[i].flags & WK_META_NONE) {
      outs[i] = WK_VNONE;
      continue;
    }
    if (mo[i].ndim == WK_META_DYNAMIC) {
      for (int k = 0; k < i; k++)
        if (wk__op_out_target(op, k) < 0 && outs[k].tag == WK_V_TENSOR) wk_release(outs[k].u.t);
      return wk_error(WK_ERR_UNSUPPORTED,
                      "%s(): the shape of result %d depends on the data, so the op cannot run on the meta device",
                      wk_op_name(op), i);
    }
    wk_options o = {0};
    o.dtype = mo[i].dtype;
    o.device = (wk_device){WK_DEVICE_META, 0};
    wk_tensor *t = wk_empty_strided(mo[i].sizes, mo[i].flags & WK_META_STRIDED ? mo[i].strides : NULL,
                                    mo[i].ndim, o);
    if (!t) {
      for (int k = 0; k < i; k++)
        if (wk__op_out_target(op, k) < 0 && outs[k].tag == WK_V_TENSOR) wk_release(outs[k].u.t);
      return wk_last_error();
    }
    outs[i] = WK_VT(t);
  }
  return WK_OK;
}

/* ---- public ---- */
wk_status wk_op_set_meta(wk_op *op, wk_meta_fn fn) {
  if (!op || !fn) return wk_error(WK_ERR_NULL, "wk_op_set_meta: argument '%s' is NULL", op ? "fn" : "op");
  wk_meta_fn *slot = wk__op_meta_slot(op);
  if (*slot && *slot != fn)
    return wk_error(WK_ERR_INVALID_ARG, "wk_op_set_meta: op '%s' already has a meta function", wk_op_name(op));
  *slot = fn;
  return WK_OK;
}
