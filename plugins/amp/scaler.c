/* amp plugin: GradScaler, PyTorch's torch/amp/grad_scaler.py in C. The scale
 * (float32) and the growth tracker (int32) are 0-dim tensors on the device of
 * the first scaled output; unscale_ runs the fused
 * amp_foreach_non_finite_check_and_unscale_ op once per device over an
 * optimizer's gradients; update runs amp_update_scale_. Only step() reads a
 * value back (whether to skip), as PyTorch's does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaler.h"
#include <wick/optim.h>

#define SC_MAX_DEVICES 16 /* devices one optimizer's gradients may span */

enum { STAGE_READY = 0, STAGE_UNSCALED, STAGE_STEPPED };

/* Per-optimizer state between two updates (PyTorch's _per_optimizer_states). */
typedef struct {
  wk_optimizer *opt;
  int stage;
  int ndev;
  wk_tensor *found[SC_MAX_DEVICES]; /* found_inf per device that had gradients (kept) */
} opt_state;

struct wk_grad_scaler {
  bool enabled;
  double init_scale, growth, backoff;
  int64_t interval, init_tracker;
  wk_tensor *scale, *tracker; /* NULL until the first scale() (kept out of scopes) */
  int nopt, capopt;
  opt_state *opts;
};

static wk_op *g_unscale_op, *g_update_op;

wk_status scaler_init(void) {
  g_unscale_op = wk_op_find("amp_foreach_non_finite_check_and_unscale_");
  g_update_op = g_unscale_op ? wk_op_find("amp_update_scale_") : NULL;
  return g_update_op ? WK_OK : wk_last_error();
}

static wk_status null_scaler(const char *fn) {
  return wk_error(WK_ERR_NULL, "GradScaler.%s: argument 'scaler' is NULL", fn);
}

/* ---- construction ---------------------------------------------------------------------- */
static wk_status check_opts(double init, double growth, double backoff, int64_t interval) {
  if (!(init > 0) || !isfinite(init))
    return wk_error(WK_ERR_INVALID_ARG, "GradScaler: init_scale must be positive and finite, got %g", init);
  if (!(growth > 1.0)) return wk_error(WK_ERR_INVALID_ARG, "GradScaler: The growth factor must be > 1.0. (got %g)", growth);
  if (!(backoff < 1.0)) return wk_error(WK_ERR_INVALID_ARG, "GradScaler: The backoff factor must be < 1.0. (got %g)", backoff);
  if (!(backoff > 0)) return wk_error(WK_ERR_INVALID_ARG, "GradScaler: the backoff factor must be > 0, got %g", backoff);
  if (interval < 1 || interval > INT32_MAX)
    return wk_error(WK_ERR_INVALID_ARG, "GradScaler: growth_interval must lie in [1, %d], got %lld", INT32_MAX,
                    (long long)interval);
  return WK_OK;
}

wk_grad_scaler *scaler_new(const wk_grad_scaler_opts *o, size_t osize) {
  wk_grad_scaler_opts x;
  memset(&x, 0, sizeof x);
  if (o) memcpy(&x, o, osize < sizeof x ? osize : sizeof x);
  double init = x.init_scale == 0 ? 65536.0 : x.init_scale, growth = x.growth_factor == 0 ? 2.0 : x.growth_factor,
         backoff = x.backoff_factor == 0 ? 0.5 : x.backoff_factor;
  int64_t interval = x.growth_interval == 0 ? 2000 : x.growth_interval;
  if (check_opts(init, growth, backoff, interval)) return NULL;
  wk_grad_scaler *s = wk_calloc(1, sizeof *s);
  if (!s) {
    wk_error(WK_ERR_NO_MEMORY, "GradScaler: out of memory");
    return NULL;
  }
  s->enabled = !x.disabled;
  s->init_scale = init;
  s->growth = growth;
  s->backoff = backoff;
  s->interval = interval;
  return s;
}

static void forget_optimizers(wk_grad_scaler *s) {
  for (int i = 0; i < s->nopt; i++)
    for (int d = 0; d < s->opts[i].ndev; d++) wk_release(s->opts[i].found[d]);
  s->nopt = 0;
}

void scaler_free(wk_grad_scaler *s) {
  if (!s) return;
  forget_optimizers(s);
  wk_free(s->opts);
  wk_release(s->scale);
  wk_release(s->tracker);
  wk_free(s);
}

static opt_state *state_of(wk_grad_scaler *s, wk_optimizer *opt) {
  for (int i = 0; i < s->nopt; i++)
    if (s->opts[i].opt == opt) return &s->opts[i];
  if (s->nopt == s->capopt) {
    int cap = s->capopt ? 2 * s->capopt : 4;
    opt_state *n = wk_realloc(s->opts, sizeof *n * (size_t)cap);
    if (!n) {
      wk_error(WK_ERR_NO_MEMORY, "GradScaler: out of memory");
      return NULL;
    }
    s->opts = n;
    s->capopt = cap;
  }
  opt_state *st = &s->opts[s->nopt++];
  memset(st, 0, sizeof *st);
  st->opt = opt;
  return st;
}

/* ---- scale ------------------------------------------------------------------------------- */
static wk_status lazy_init(wk_grad_scaler *s, wk_device dev) {
  if (s->scale) return WK_OK;
  wk_options f32 = {.dtype = WK_F32, .device = dev}, i32 = {.dtype = WK_I32, .device = dev};
  s->scale = wk_scope_keep(wk_full(NULL, 0, s->init_scale, f32));
  s->tracker = s->scale ? wk_scope_keep(wk_full(NULL, 0, (double)s->init_tracker, i32)) : NULL;
  if (s->tracker) return WK_OK;
  wk_release(s->scale);
  s->scale = NULL;
  return wk_last_error();
}

static wk_status check_started(const wk_grad_scaler *s, const char *fn) {
  if (s->scale) return WK_OK;
  return wk_error(WK_ERR_STATE,
                  "GradScaler.%s: Attempted %s but _scale is None.  This may indicate your script did not use "
                  "scaler.scale(loss or outputs) earlier in the iteration.",
                  fn, fn);
}

/* t on dev: t itself (retained) or a copy. */
static wk_tensor *on_device(wk_tensor *t, wk_device dev) {
  if (wk_device_equal(wk_tensor_device(t), dev)) return wk_retain(t);
  return wk_to_device(t, dev);
}

wk_tensor *scaler_scale(wk_grad_scaler *s, wk_tensor *outputs) {
  if (!s || !outputs) {
    if (!s)
      null_scaler("scale");
    else if (wk_last_error() == WK_OK)
      wk_error(WK_ERR_NULL, "GradScaler.scale: argument 'outputs' is NULL");
    return NULL;
  }
  if (!s->enabled) return wk_alias(outputs); /* a new handle like any op result (scopes own it) */
  wk_device dev = wk_tensor_device(outputs);
  if (lazy_init(s, dev)) return NULL;
  wk_tensor *sc = on_device(s->scale, dev);
  wk_tensor *r = sc ? wk_mul(outputs, sc) : NULL;
  wk_release(sc);
  return r;
}

/* ---- unscale_ ---------------------------------------------------------------------------- */
/* 1 / scale in double, rounded to float32 (PyTorch's
 * _scale.double().reciprocal().float()), on the scale's device. */
static wk_tensor *inverse_scale(const wk_grad_scaler *s) {
  wk_tensor *d = wk_to_dtype(s->scale, WK_F64);
  wk_tensor *one = d ? wk_full(NULL, 0, 1.0, (wk_options){.dtype = WK_F64, .device = wk_tensor_device(d)}) : NULL;
  wk_tensor *q = one ? wk_div(one, d) : NULL;
  wk_tensor *inv = q ? wk_to_dtype(q, WK_F32) : NULL;
  wk_release(d);
  wk_release(one);
  wk_release(q);
  return inv;
}

/* Runs the fused op over grads[0..n) of one device. */
static wk_status unscale_device(wk_tensor **grads, int n, wk_tensor *found, wk_tensor *inv) {
  wk_tensor *inv_here = on_device(inv, wk_tensor_device(found));
  if (!inv_here) return wk_last_error();
  wk_value a[3] = {WK_VTS(grads, n), WK_VT(found), WK_VT(inv_here)}, out[WK_MAX_OUTS];
  wk_status st = wk_op_call(g_unscale_op, a, 3, out);
  wk_release(inv_here);
  return st;
}

wk_status scaler_unscale_(wk_grad_scaler *s, wk_optimizer *opt) {
  if (!s) return null_scaler("unscale_");
  if (!opt) return wk_error(WK_ERR_NULL, "GradScaler.unscale_: argument 'optimizer' is NULL");
  if (!s->enabled) return WK_OK;
  wk_status st = check_started(s, "unscale_");
  if (st) return st;
  opt_state *os = state_of(s, opt);
  if (!os) return wk_last_error();
  if (os->stage == STAGE_UNSCALED)
    return wk_error(WK_ERR_STATE,
                    "GradScaler.unscale_: unscale_() has already been called on this optimizer since the last update().");
  if (os->stage == STAGE_STEPPED)
    return wk_error(WK_ERR_STATE, "GradScaler.unscale_: unscale_() is being called after step().");

  /* every gradient first (refusing float16 before anything changes) */
  int ngroups = wk_optim_num_param_groups(opt), total = 0;
  for (int g = 0; g < ngroups; g++) {
    int np = wk_optim_group_num_params(opt, g);
    if (np < 0) return wk_last_error();
    total += np;
  }
  wk_tensor **grads = wk_calloc((size_t)(total ? total : 1), sizeof *grads);
  if (!grads) return wk_error(WK_ERR_NO_MEMORY, "GradScaler.unscale_: out of memory");
  int n = 0;
  for (int g = 0; !st && g < ngroups; g++) {
    int np = wk_optim_group_num_params(opt, g);
    if (np < 0) st = wk_last_error();
    for (int i = 0; !st && i < np; i++) {
      wk_tensor *p = wk_optim_group_param(opt, g, i);
      if (!p) {
        st = wk_last_error();
        break;
      }
      wk_tensor *gr = wk_tensor_grad(p);
      if (!gr) continue;
      grads[n++] = gr;
      if (wk_tensor_dtype(gr) == WK_F16)
        st = wk_error(WK_ERR_DTYPE, "GradScaler.unscale_: Attempting to unscale FP16 gradients.");
    }
  }
  /* then one fused call per device, each with its own found_inf */
  wk_tensor *inv = st ? NULL : inverse_scale(s);
  if (!st && !inv) st = wk_last_error();
  wk_tensor **same = st ? NULL : wk_calloc((size_t)(n ? n : 1), sizeof *same);
  if (!st && !same) st = wk_error(WK_ERR_NO_MEMORY, "GradScaler.unscale_: out of memory");
  wk_tensor *found[SC_MAX_DEVICES] = {0};
  int ndev = 0;
  bool *done = st ? NULL : wk_calloc((size_t)(n ? n : 1), sizeof *done);
  if (!st && !done) st = wk_error(WK_ERR_NO_MEMORY, "GradScaler.unscale_: out of memory");
  for (int i = 0; !st && i < n; i++) {
    if (done[i]) continue;
    wk_device dev = wk_tensor_device(grads[i]);
    int m = 0;
    for (int j = i; j < n; j++)
      if (!done[j] && wk_device_equal(wk_tensor_device(grads[j]), dev)) same[m++] = grads[j], done[j] = true;
    if (ndev == SC_MAX_DEVICES) {
      st = wk_error(WK_ERR_UNSUPPORTED, "GradScaler.unscale_: gradients on more than %d devices", SC_MAX_DEVICES);
      break;
    }
    found[ndev] = wk_scope_keep(wk_full(NULL, 0, 0.0, (wk_options){.dtype = WK_F32, .device = dev}));
    if (!found[ndev]) {
      st = wk_last_error();
      break;
    }
    st = unscale_device(same, m, found[ndev++], inv);
  }
  wk_free(done);
  wk_free(same);
  wk_release(inv);
  for (int i = 0; i < n; i++) wk_release(grads[i]);
  wk_free(grads);
  if (st) {
    for (int d = 0; d < ndev; d++) wk_release(found[d]);
    return st;
  }
  memcpy(os->found, found, sizeof found);
  os->ndev = ndev;
  os->stage = STAGE_UNSCALED;
  return WK_OK;
}

/* ---- step / update ------------------------------------------------------------------------ */
wk_status scaler_step(wk_grad_scaler *s, wk_optimizer *opt, bool *stepped) {
  if (stepped) *stepped = false;
  if (!s) return null_scaler("step");
  if (!opt) return wk_error(WK_ERR_NULL, "GradScaler.step: argument 'optimizer' is NULL");
  if (!s->enabled) {
    wk_status st = wk_optim_step(opt);
    if (!st && stepped) *stepped = true;
    return st;
  }
  wk_status st = check_started(s, "step");
  if (st) return st;
  opt_state *os = state_of(s, opt);
  if (!os) return wk_last_error();
  if (os->stage == STAGE_STEPPED)
    return wk_error(WK_ERR_STATE, "GradScaler.step: step() has already been called since the last update().");
  if (os->stage == STAGE_READY && (st = scaler_unscale_(s, opt))) return st;
  os = state_of(s, opt); /* unscale_ may have grown the table */
  if (os->ndev == 0) return wk_error(WK_ERR_STATE, "GradScaler.step: No inf checks were recorded for this optimizer.");
  double sum = 0;
  for (int d = 0; d < os->ndev; d++) {
    double v;
    if ((st = wk_item(os->found[d], &v))) return st;
    sum += v;
  }
  if (sum == 0) {
    if ((st = wk_optim_step(opt))) return st;
    if (stepped) *stepped = true;
  }
  os->stage = STAGE_STEPPED;
  return WK_OK;
}

wk_status scaler_update(wk_grad_scaler *s, double new_scale) {
  if (!s) return null_scaler("update");
  if (!s->enabled) return WK_OK;
  wk_status st = check_started(s, "update");
  if (st) return st;
  if (new_scale == new_scale) { /* a given scale */
    if (!wk_fill_(s->scale, new_scale)) return wk_last_error();
    forget_optimizers(s);
    return WK_OK;
  }
  /* found_inf of every optimizer and device, summed on the scale's device */
  wk_device dev = wk_tensor_device(s->scale);
  wk_tensor *combined = NULL;
  for (int i = 0; !st && i < s->nopt; i++)
    for (int d = 0; !st && d < s->opts[i].ndev; d++) {
      wk_tensor *f = on_device(s->opts[i].found[d], dev);
      wk_tensor *c = f && combined ? wk_add(combined, f) : f ? wk_retain(f) : NULL;
      wk_release(f);
      wk_release(combined);
      combined = c;
      if (!c) st = wk_last_error();
    }
  if (!st && !combined) st = wk_error(WK_ERR_STATE, "GradScaler.update: No inf checks were recorded prior to update.");
  if (!st) {
    wk_value a[6] = {WK_VT(s->scale), WK_VT(s->tracker), WK_VT(combined), WK_VF(s->growth), WK_VF(s->backoff),
                     WK_VI(s->interval)},
             out[WK_MAX_OUTS];
    st = wk_op_call(g_update_op, a, 6, out);
  }
  wk_release(combined);
  if (!st) forget_optimizers(s);
  return st;
}

/* ---- queries and state dicts ------------------------------------------------------------- */
double scaler_get_scale(const wk_grad_scaler *s) {
  if (!s) {
    null_scaler("get_scale");
    return NAN;
  }
  if (!s->enabled) return 1.0;
  if (!s->scale) return s->init_scale;
  double v = NAN;
  return wk_item(s->scale, &v) ? NAN : v;
}

int64_t scaler_growth_tracker(const wk_grad_scaler *s) {
  if (!s) {
    null_scaler("growth_tracker");
    return -1;
  }
  if (!s->enabled) return 0;
  if (!s->tracker) return s->init_tracker;
  double v = -1;
  return wk_item(s->tracker, &v) ? -1 : (int64_t)v;
}

bool scaler_is_enabled(const wk_grad_scaler *s) {
  return s && s->enabled;
}

static wk_status put(wk_state_dict *sd, const char *key, double v) {
  wk_tensor *t = wk_scalar_tensor(v, WK_F64);
  if (!t) return wk_last_error();
  wk_status st = wk_state_dict_set(sd, key, t);
  wk_release(t);
  return st;
}

wk_state_dict *scaler_state_dict(const wk_grad_scaler *s) {
  if (!s) {
    null_scaler("state_dict");
    return NULL;
  }
  wk_state_dict *sd = wk_state_dict_new();
  if (!sd || !s->enabled) return sd;
  double scale = scaler_get_scale(s);
  int64_t tracker = scaler_growth_tracker(s);
  wk_status st = scale != scale || tracker < 0 ? wk_last_error() : wk_state_dict_set_meta(sd, "scaler", "GradScaler");
  if (!st) st = put(sd, "scale", scale);
  if (!st) st = put(sd, "growth_factor", s->growth);
  if (!st) st = put(sd, "backoff_factor", s->backoff);
  if (!st) st = put(sd, "growth_interval", (double)s->interval);
  if (!st) st = put(sd, "_growth_tracker", (double)tracker);
  if (st) {
    wk_state_dict_free(sd);
    return NULL;
  }
  return sd;
}

static wk_status read_key(const wk_state_dict *sd, const char *key, double *v) {
  wk_tensor *t = wk_state_dict_get(sd, key);
  if (!t) {
    wk_clear_error();
    return wk_error(WK_ERR_NOT_FOUND, "GradScaler.load_state_dict: missing key '%s'", key);
  }
  if (wk_tensor_numel(t) != 1)
    return wk_error(WK_ERR_SHAPE, "GradScaler.load_state_dict: '%s' must hold one value, it has %lld", key,
                    (long long)wk_tensor_numel(t));
  return wk_item(t, v);
}

wk_status scaler_load_state_dict(wk_grad_scaler *s, const wk_state_dict *sd) {
  if (!s) return null_scaler("load_state_dict");
  if (!sd) return wk_error(WK_ERR_NULL, "GradScaler.load_state_dict: argument 'state_dict' is NULL");
  if (!s->enabled) return WK_OK;
  if (wk_state_dict_size(sd) == 0)
    return wk_error(WK_ERR_INVALID_ARG,
                    "GradScaler.load_state_dict: The source state dict is empty, possibly because it was saved from "
                    "a disabled instance of GradScaler.");
  double scale, growth, backoff, interval, tracker;
  wk_status st;
  if ((st = read_key(sd, "scale", &scale)) || (st = read_key(sd, "growth_factor", &growth)) ||
      (st = read_key(sd, "backoff_factor", &backoff)) || (st = read_key(sd, "growth_interval", &interval)) ||
      (st = read_key(sd, "_growth_tracker", &tracker)))
    return st;
  if (interval != (double)(int64_t)interval || tracker != (double)(int64_t)tracker || tracker < 0 ||
      tracker >= interval)
    return wk_error(WK_ERR_INVALID_ARG,
                    "GradScaler.load_state_dict: growth_interval (%g) and _growth_tracker (%g) must be whole numbers "
                    "with 0 <= _growth_tracker < growth_interval",
                    interval, tracker);
  if ((st = check_opts(scale, growth, backoff, (int64_t)interval))) return st;
  if (s->scale && (!wk_fill_(s->scale, scale) || !wk_fill_(s->tracker, tracker))) return wk_last_error();
  s->init_scale = scale;
  s->growth = growth;
  s->backoff = backoff;
  s->interval = (int64_t)interval;
  s->init_tracker = (int64_t)tracker;
  return WK_OK;
}
