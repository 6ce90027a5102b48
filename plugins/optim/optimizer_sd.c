/* optim plugin: optimizer state dicts. Keys follow PyTorch's layout,
 * flattened: "state.<param index>.<buffer>" and "param_groups.<g>.<option>",
 * plus "param_groups.<g>.params" (the indices of the group's parameters). */
#include <stdlib.h>

#include "optim.h"

wk_status optim_put_scalar(wk_state_dict *sd, const char *key, double v) {
  wk_tensor *t = optim_scalar(v);
  if (!t) return wk_last_error();
  wk_status s = wk_state_dict_set(sd, key, t);
  wk_release(t);
  return s;
}

wk_status optim_read_scalar(const wk_state_dict *sd, const char *key, double *out, bool required) {
  wk_tensor *t = wk_state_dict_get(sd, key);
  if (!t) return required ? wk_error(WK_ERR_NOT_FOUND, "load_state_dict: missing key '%s'", key) : WK_OK;
  if (wk_tensor_numel(t) != 1)
    return wk_error(WK_ERR_SHAPE, "load_state_dict: '%s' must hold one value, it has %lld", key,
                    (long long)wk_tensor_numel(t));
  return wk_item(t, out);
}

wk_state_dict *optim_state_dict(const wk_optimizer *opt) {
  if (!opt) {
    wk_error(WK_ERR_NULL, "state_dict: argument 'optimizer' is NULL");
    return NULL;
  }
  const optim_kind *k = opt->kind;
  wk_state_dict *sd = wk_state_dict_new();
  if (!sd) return NULL;
  wk_status s = wk_state_dict_set_meta(sd, "optimizer", k->name);
  char key[96];
  for (int i = 0; !s && i < opt->nparams; i++) {
    const optim_pstate *st = &opt->state[i];
    if (!st->init) continue;
    if (k->has_step) {
      snprintf(key, sizeof key, "state.%d.step", i);
      s = optim_put_scalar(sd, key, st->step);
    }
    if (!s && k->aux) {
      snprintf(key, sizeof key, "state.%d.%s", i, k->aux);
      s = optim_put_scalar(sd, key, st->aux);
    }
    for (int b = 0; !s && b < k->nbuf; b++) {
      if (!st->buf[b]) continue;
      snprintf(key, sizeof key, "state.%d.%s", i, k->bufs[b]);
      s = wk_state_dict_set(sd, key, st->buf[b]); /* the live tensor, as PyTorch's state_dict */
    }
  }
  for (int g = 0; !s && g < opt->ngroups; g++) {
    const optim_group *gr = &opt->groups[g];
    for (int j = 0; !s && j < gr->nopt; j++) {
      snprintf(key, sizeof key, "param_groups.%d.%s", g, gr->o[j].name);
      s = optim_put_scalar(sd, key, gr->o[j].v);
    }
    if (s) break;
    int64_t *idx = wk_malloc(sizeof *idx * (size_t)(gr->count ? gr->count : 1));
    if (!idx) {
      s = wk_error(WK_ERR_NO_MEMORY, "state_dict: out of memory");
      break;
    }
    for (int j = 0; j < gr->count; j++) idx[j] = gr->first + j;
    int64_t n = gr->count;
    wk_tensor *t = optim_keep(wk_tensor_from_data(idx, WK_I64, &n, 1));
    wk_free(idx);
    if (!t) {
      s = wk_last_error();
      break;
    }
    snprintf(key, sizeof key, "param_groups.%d.params", g);
    s = wk_state_dict_set(sd, key, t);
    wk_release(t);
  }
  if (s) {
    wk_state_dict_free(sd);
    return NULL;
  }
  return sd;
}

/* ---- loading ---- */
/* Parses "<prefix><int>.<rest>": the index and a pointer to rest, or -1. */
static long parse_index(const char *key, const char *prefix, const char **rest) {
  size_t n = strlen(prefix);
  if (strncmp(key, prefix, n) != 0) return -1;
  char *end;
  long v = strtol(key + n, &end, 10);
  if (end == key + n || *end != '.' || v < 0) return -1;
  *rest = end + 1;
  return v;
}

static int buf_index(const optim_kind *k, const char *name) {
  for (int b = 0; b < k->nbuf; b++)
    if (strcmp(k->bufs[b], name) == 0) return b;
  return -1;
}

/* Copies src into a new tensor like param (its dtype and device), kept out of scopes. */
static wk_tensor *copy_like(wk_tensor *param, wk_tensor *src) {
  wk_tensor *t = optim_keep(wk_empty_like(param, (wk_options){0}));
  if (!t) return NULL;
  bool prev = wk_set_grad_enabled(false);
  wk_tensor *r = wk_copy_(t, src);
  wk_set_grad_enabled(prev);
  if (!r) {
    wk_release(t);
    return NULL;
  }
  return t;
}

static bool same_shape(wk_tensor *a, wk_tensor *b) {
  if (wk_tensor_dim(a) != wk_tensor_dim(b)) return false;
  for (int d = 0; d < wk_tensor_dim(a); d++)
    if (wk_tensor_size(a, d) != wk_tensor_size(b, d)) return false;
  return true;
}

static void free_states(optim_pstate *st, int n) {
  if (!st) return;
  for (int i = 0; i < n; i++) optim_state_clear(&st[i]);
  wk_free(st);
}

wk_status optim_load_state_dict(wk_optimizer *opt, const wk_state_dict *sd) {
  if (!opt || !sd)
    return wk_error(WK_ERR_NULL, "load_state_dict: argument '%s' is NULL", opt ? "state_dict" : "optimizer");
  const optim_kind *k = opt->kind;
  const char *kind = wk_state_dict_get_meta(sd, "optimizer");
  if (kind && strcmp(kind, k->name) != 0)
    return wk_error(WK_ERR_INVALID_ARG, "%s: load_state_dict: the state dict is for a %s optimizer", k->name, kind);
  /* Group layout. */
  char key[96];
  snprintf(key, sizeof key, "param_groups.%d.params", opt->ngroups);
  if (wk_state_dict_get(sd, key))
    return wk_error(WK_ERR_INVALID_ARG,
                    "%s: loaded state dict has a different number of parameter groups (more than %d)", k->name,
                    opt->ngroups);
  for (int g = 0; g < opt->ngroups; g++) {
    snprintf(key, sizeof key, "param_groups.%d.params", g);
    wk_tensor *t = wk_state_dict_get(sd, key);
    if (!t)
      return wk_error(WK_ERR_INVALID_ARG,
                      "%s: loaded state dict has a different number of parameter groups (%d, not %d)", k->name, g,
                      opt->ngroups);
    if (wk_tensor_dim(t) != 1 || wk_tensor_numel(t) != opt->groups[g].count)
      return wk_error(WK_ERR_INVALID_ARG,
                      "%s: loaded state dict contains a parameter group that doesn't match the size of optimizer's "
                      "group (group %d: %lld parameters, expected %d)",
                      k->name, g, (long long)wk_tensor_numel(t), opt->groups[g].count);
  }
  /* New groups: the kind's options from the dict (missing ones keep their
   * value), other entries (scheduler keys) exactly as saved. */
  optim_group *groups = wk_malloc(sizeof *groups * (size_t)opt->ngroups);
  optim_pstate *states = wk_calloc((size_t)opt->nparams, sizeof *states);
  wk_status s = WK_OK;
  if (!groups || !states) s = wk_error(WK_ERR_NO_MEMORY, "%s: load_state_dict: out of memory", k->name);
  for (int i = 0; states && k->aux && i < opt->nparams; i++) states[i].aux = 1; /* mu_product's start */
  for (int g = 0; !s && g < opt->ngroups; g++) {
    optim_group *ng = &groups[g];
    memset(ng, 0, sizeof *ng);
    ng->first = opt->groups[g].first;
    ng->count = opt->groups[g].count;
    for (int j = 0; j < k->ndefs; j++) {
      ng->o[j] = opt->groups[g].o[j];
      ng->nopt++;
    }
  }
  int nsd = wk_state_dict_size(sd);
  for (int e = 0; !s && e < nsd; e++) {
    const char *name = wk_state_dict_key(sd, e), *rest;
    wk_tensor *t = wk_state_dict_value(sd, e);
    long g = parse_index(name, "param_groups.", &rest);
    if (g >= 0) {
      if (g >= opt->ngroups || strcmp(rest, "params") == 0) continue;
      double v;
      if (!(s = optim_read_scalar(sd, name, &v, true))) {
        double *p = NULL;
        for (int j = 0; j < groups[g].nopt; j++)
          if (strcmp(groups[g].o[j].name, rest) == 0) p = &groups[g].o[j].v;
        if (p)
          *p = v;
        else if (strlen(rest) >= OPTIM_NAME_LEN || groups[g].nopt == OPTIM_MAX_OPTS)
          s = wk_error(WK_ERR_INVALID_ARG, "%s: load_state_dict: cannot keep option '%s'", k->name, name);
        else {
          snprintf(groups[g].o[groups[g].nopt].name, OPTIM_NAME_LEN, "%s", rest);
          groups[g].o[groups[g].nopt++].v = v;
        }
      }
      continue;
    }
    long i = parse_index(name, "state.", &rest);
    if (i < 0) {
      s = wk_error(WK_ERR_INVALID_ARG, "%s: load_state_dict: unexpected key '%s'", k->name, name);
      break;
    }
    if (i >= opt->nparams) {
      s = wk_error(WK_ERR_INDEX, "%s: load_state_dict: '%s' names parameter %ld, the optimizer has %d", k->name, name,
                   i, opt->nparams);
      break;
    }
    optim_pstate *st = &states[i];
    st->init = true;
    if (k->has_step && strcmp(rest, "step") == 0) {
      s = optim_read_scalar(sd, name, &st->step, true);
      continue;
    }
    if (k->aux && strcmp(rest, k->aux) == 0) {
      s = optim_read_scalar(sd, name, &st->aux, true);
      continue;
    }
    int b = buf_index(k, rest);
    if (b < 0) {
      s = wk_error(WK_ERR_INVALID_ARG, "%s: load_state_dict: unexpected key '%s'", k->name, name);
      break;
    }
    wk_tensor *p = opt->params[i];
    if (!same_shape(p, t)) {
      s = wk_error(WK_ERR_SHAPE, "%s: load_state_dict: '%s' does not match the shape of parameter %ld", k->name, name,
                   i);
      break;
    }
    if (!wk_dtype_is_floating(wk_tensor_dtype(t))) {
      s = wk_error(WK_ERR_DTYPE, "%s: load_state_dict: '%s' is %s, a floating dtype is needed", k->name, name,
                   wk_dtype_name(wk_tensor_dtype(t)));
      break;
    }
    wk_release(st->buf[b]);
    if (!(st->buf[b] = copy_like(p, t))) s = wk_last_error();
  }
  for (int g = 0; !s && g < opt->ngroups; g++) s = optim_check_group(k, &groups[g]);
  if (s) {
    wk_free(groups);
    free_states(states, opt->nparams);
    return s;
  }
  /* Commit. */
  for (int i = 0; i < opt->nparams; i++) optim_state_clear(&opt->state[i]);
  memcpy(opt->state, states, sizeof *states * (size_t)opt->nparams);
  wk_free(states);
  memcpy(opt->groups, groups, sizeof *groups * (size_t)opt->ngroups);
  wk_free(groups);
  for (int g = 0; !s && g < opt->ngroups; g++)
    for (int i = opt->groups[g].first; !s && i < opt->groups[g].first + opt->groups[g].count; i++)
      if (!opt->state[i].init) s = optim_eager_state(opt, &opt->groups[g], i);
  return s;
}
