/* optim plugin: scheduler state dicts: every counter and setting as a 0-dim
 * f64 entry (lists as "<name>.<i>"), nested schedulers under
 * "_schedulers.<i>.", the kinds in metadata ("scheduler", and
 * "_schedulers.<i>.scheduler"). Loading restores what is present, like
 * PyTorch's __dict__.update, after checking the kinds match. */
#include <stdlib.h>

#include "sched.h"

typedef struct {
  const char *name;
  size_t off;
  int type; /* 'i' int64_t, 'd' double, 'b' bool, 'n' int */
} field;

#define F(n, t) \
  { #n, offsetof(wk_lr_scheduler, n), t }
static const field common[] = {F(last_epoch, 'i'), F(step_count, 'i')};
static const field f_step[] = {F(step_size, 'i'), F(gamma, 'd')};
static const field f_multistep[] = {F(gamma, 'd')};
static const field f_exp[] = {F(gamma, 'd')};
static const field f_cos[] = {F(T_max, 'i'), F(eta_min, 'd')};
static const field f_linear[] = {F(start_factor, 'd'), F(end_factor, 'd'), F(total_iters, 'i')};
static const field f_onecycle[] = {F(total_steps, 'i'),    F(pct_start, 'd'), F(anneal, 'n'),
                                   F(cycle_momentum, 'b'), F(use_beta1, 'b'), F(three_phase, 'b')};
static const field f_plateau[] = {F(factor, 'd'),
                                  F(patience, 'd'),
                                  F(threshold, 'd'),
                                  F(eps, 'd'),
                                  F(best, 'd'),
                                  F(mode, 'n'),
                                  F(threshold_mode, 'n'),
                                  F(cooldown, 'i'),
                                  F(cooldown_counter, 'i'),
                                  F(num_bad_epochs, 'i')};
static const field f_cyclic[] = {F(total_size, 'd'), F(step_ratio, 'd'),       F(cyc_mode, 'n'),
                                 F(gamma, 'd'),      F(scale_iterations, 'b'), F(cycle_momentum, 'b'),
                                 F(use_beta1, 'b')};
static const field f_swalr[] = {F(total_iters, 'i'), F(anneal, 'n')};
#undef F

static const field *fields_of(int kind, int *n) {
#define RET(a) (*n = (int)(sizeof a / sizeof a[0]), a)
  switch (kind) {
    case S_STEP:
      return RET(f_step);
    case S_MULTISTEP:
      return RET(f_multistep);
    case S_EXPONENTIAL:
      return RET(f_exp);
    case S_COSINE:
      return RET(f_cos);
    case S_LINEAR:
      return RET(f_linear);
    case S_ONECYCLE:
      return RET(f_onecycle);
    case S_PLATEAU:
      return RET(f_plateau);
    case S_CYCLIC:
      return RET(f_cyclic);
    case S_SWALR:
      return RET(f_swalr);
    default:
      *n = 0;
      return NULL;
  }
#undef RET
}

static double get_field(const wk_lr_scheduler *s, const field *f) {
  const char *p = (const char *)s + f->off;
  switch (f->type) {
    case 'i':
      return (double)*(const int64_t *)p;
    case 'b':
      return *(const bool *)p;
    case 'n':
      return *(const int *)p;
    default:
      return *(const double *)p;
  }
}

static void set_field(wk_lr_scheduler *s, const field *f, double v) {
  char *p = (char *)s + f->off;
  switch (f->type) {
    case 'i':
      *(int64_t *)p = (int64_t)v;
      break;
    case 'b':
      *(bool *)p = v != 0;
      break;
    case 'n':
      *(int *)p = (int)v;
      break;
    default:
      *(double *)p = v;
  }
}

/* Which lists a kind keeps. */
static bool has_base(const wk_lr_scheduler *s) {
  return s->kind <= S_ONECYCLE || s->kind >= S_LAMBDA;
}
static bool has_milestones(const wk_lr_scheduler *s) {
  return s->kind == S_MULTISTEP || s->kind == S_SEQUENTIAL;
}
static bool has_counters(const wk_lr_scheduler *s) {
  return s->kind != S_CHAINED;
}

static wk_status put_list(wk_state_dict *sd, const char *pre, const char *name, const double *v, int n) {
  char key[200];
  wk_status s = WK_OK;
  for (int i = 0; !s && i < n; i++) {
    snprintf(key, sizeof key, "%s%s.%d", pre, name, i);
    s = optim_put_scalar(sd, key, v[i]);
  }
  return s;
}

static wk_status save(const wk_lr_scheduler *s, wk_state_dict *sd, const char *pre) {
  char key[200];
  wk_status st = WK_OK;
  int nf;
  const field *fs = fields_of(s->kind, &nf);
  for (int i = 0; !st && has_counters(s) && i < 2; i++) {
    if (s->kind == S_SEQUENTIAL && i == 1) break; /* SequentialLR keeps no _step_count */
    snprintf(key, sizeof key, "%s%s", pre, i == 0 ? "last_epoch" : "_step_count");
    st = optim_put_scalar(sd, key, get_field(s, &common[i]));
  }
  for (int i = 0; !st && i < nf; i++) {
    snprintf(key, sizeof key, "%s%s", pre, fs[i].name);
    st = optim_put_scalar(sd, key, get_field(s, &fs[i]));
  }
  if (!st && has_base(s)) st = put_list(sd, pre, "base_lrs", s->base_lrs, s->ngroups);
  if (!st) st = put_list(sd, pre, "_last_lr", s->last_lr, s->ngroups);
  if (!st && s->kind == S_PLATEAU) st = put_list(sd, pre, "min_lrs", s->min_lrs, s->ngroups);
  if (!st && s->kind == S_CYCLIC) st = put_list(sd, pre, "max_lrs", s->max_lrs, s->ngroups);
  if (!st && s->kind == S_CYCLIC && s->cycle_momentum) {
    st = put_list(sd, pre, "base_momentums", s->base_momentums, s->ngroups);
    if (!st) st = put_list(sd, pre, "max_momentums", s->max_momentums, s->ngroups);
  }
  for (int i = 0; !st && has_milestones(s) && i < s->nmilestones; i++) {
    snprintf(key, sizeof key, "%s%s.%d", pre, s->kind == S_SEQUENTIAL ? "_milestones" : "milestones", i);
    st = optim_put_scalar(sd, key, (double)s->milestones[i]);
  }
  for (int i = 0; !st && i < s->nchildren; i++) {
    char sub[160];
    snprintf(sub, sizeof sub, "%s_schedulers.%d.", pre, i);
    snprintf(key, sizeof key, "%sscheduler", sub);
    st = wk_state_dict_set_meta(sd, key, sched_name(s->children[i]));
    if (!st) st = save(s->children[i], sd, sub);
  }
  return st;
}

wk_state_dict *sched_state_dict(const wk_lr_scheduler *s) {
  if (!s) {
    wk_error(WK_ERR_NULL, "state_dict: argument 'scheduler' is NULL");
    return NULL;
  }
  wk_state_dict *sd = wk_state_dict_new();
  if (!sd) return NULL;
  wk_status st = wk_state_dict_set_meta(sd, "scheduler", sched_name(s));
  if (!st) st = save(s, sd, "");
  if (st) {
    wk_state_dict_free(sd);
    return NULL;
  }
  return sd;
}

/* ---- loading: into a scratch copy first, so an error changes nothing ---- */
static void scratch_free(wk_lr_scheduler *c) {
  if (!c) return;
  for (int i = 0; i < c->nchildren; i++) scratch_free(c->children[i]);
  wk_free(c->children);
  wk_free(c->base_lrs);
  wk_free(c->last_lr);
  wk_free(c->milestones);
  wk_free(c->min_lrs);
  wk_free(c->max_lrs);
  wk_free(c->base_momentums);
  wk_free(c->max_momentums);
  wk_free(c);
}

static double *dup_d(const double *v, int n) {
  double *r = wk_malloc(sizeof(double) * (size_t)(n ? n : 1));
  if (r && v && n) memcpy(r, v, sizeof(double) * (size_t)n);
  return r;
}

static wk_lr_scheduler *scratch_of(const wk_lr_scheduler *s) {
  wk_lr_scheduler *c = wk_malloc(sizeof *c);
  if (!c) return NULL;
  *c = *s;
  c->base_lrs = dup_d(s->base_lrs, s->ngroups);
  c->last_lr = dup_d(s->last_lr, s->ngroups);
  c->min_lrs = s->min_lrs ? dup_d(s->min_lrs, s->ngroups) : NULL;
  c->max_lrs = s->max_lrs ? dup_d(s->max_lrs, s->ngroups) : NULL;
  c->base_momentums = s->base_momentums ? dup_d(s->base_momentums, s->ngroups) : NULL;
  c->max_momentums = s->max_momentums ? dup_d(s->max_momentums, s->ngroups) : NULL;
  c->milestones = wk_malloc(sizeof(int64_t) * (size_t)(s->nmilestones ? s->nmilestones : 1));
  c->children = s->nchildren ? wk_calloc((size_t)s->nchildren, sizeof *c->children) : NULL;
  bool ok = c->base_lrs && c->last_lr && (!s->min_lrs || c->min_lrs) && c->milestones &&
            (!s->nchildren || c->children) && (!s->max_lrs || c->max_lrs) &&
            (!s->base_momentums || c->base_momentums) && (!s->max_momentums || c->max_momentums);
  if (c->milestones && s->nmilestones) memcpy(c->milestones, s->milestones, sizeof(int64_t) * (size_t)s->nmilestones);
  int made = 0;
  for (int i = 0; ok && i < s->nchildren; i++, made++) ok = (c->children[i] = scratch_of(s->children[i])) != NULL;
  if (!ok) {
    c->nchildren = made;
    scratch_free(c);
    return NULL;
  }
  return c;
}

/* Moves the scratch copy's values into s (same shape of tree). */
static void commit(wk_lr_scheduler *s, wk_lr_scheduler *c) {
  for (int i = 0; i < s->nchildren; i++) commit(s->children[i], c->children[i]);
  wk_free(s->base_lrs);
  wk_free(s->last_lr);
  wk_free(s->milestones);
  wk_free(s->min_lrs);
  wk_free(s->max_lrs);
  wk_free(s->base_momentums);
  wk_free(s->max_momentums);
  wk_lr_scheduler **kids = s->children;
  *s = *c;
  s->children = kids;
  wk_free(c->children);
  wk_free(c);
}

static wk_status read_list(const wk_state_dict *sd, const char *pre, const char *name, double *v, int n) {
  char key[200];
  snprintf(key, sizeof key, "%s%s.%d", pre, name, n);
  if (wk_state_dict_get(sd, key))
    return wk_error(WK_ERR_INVALID_ARG, "scheduler load_state_dict: '%s' is beyond the optimizer's %d parameter groups",
                    key, n);
  wk_status s = WK_OK;
  for (int i = 0; !s && i < n; i++) {
    snprintf(key, sizeof key, "%s%s.%d", pre, name, i);
    s = optim_read_scalar(sd, key, &v[i], false);
  }
  return s;
}

static wk_status load(wk_lr_scheduler *c, const wk_state_dict *sd, const char *pre) {
  char key[200];
  snprintf(key, sizeof key, "%sscheduler", pre);
  const char *kind = wk_state_dict_get_meta(sd, key);
  if (kind && strcmp(kind, sched_name(c)) != 0)
    return wk_error(WK_ERR_INVALID_ARG, "%s: load_state_dict: the state dict %sis for a %s", sched_name(c),
                    *pre ? "entry of a nested scheduler " : "", kind);
  wk_status st = WK_OK;
  double v;
  for (int i = 0; !st && has_counters(c) && i < 2; i++) {
    snprintf(key, sizeof key, "%s%s", pre, i == 0 ? "last_epoch" : "_step_count");
    v = get_field(c, &common[i]);
    if (!(st = optim_read_scalar(sd, key, &v, false))) set_field(c, &common[i], v);
  }
  int nf;
  const field *fs = fields_of(c->kind, &nf);
  for (int i = 0; !st && i < nf; i++) {
    snprintf(key, sizeof key, "%s%s", pre, fs[i].name);
    v = get_field(c, &fs[i]);
    if (!(st = optim_read_scalar(sd, key, &v, false))) set_field(c, &fs[i], v);
  }
  if (!st && has_base(c)) st = read_list(sd, pre, "base_lrs", c->base_lrs, c->ngroups);
  if (!st) st = read_list(sd, pre, "_last_lr", c->last_lr, c->ngroups);
  if (!st && c->kind == S_PLATEAU) st = read_list(sd, pre, "min_lrs", c->min_lrs, c->ngroups);
  if (!st && c->kind == S_CYCLIC) st = read_list(sd, pre, "max_lrs", c->max_lrs, c->ngroups);
  if (!st && c->kind == S_CYCLIC && c->cycle_momentum) {
    st = read_list(sd, pre, "base_momentums", c->base_momentums, c->ngroups);
    if (!st) st = read_list(sd, pre, "max_momentums", c->max_momentums, c->ngroups);
  }
  if (!st && has_milestones(c)) { /* absent lists keep the current milestones */
    const char *mname = c->kind == S_SEQUENTIAL ? "_milestones" : "milestones";
    int n = 0;
    for (;; n++) {
      snprintf(key, sizeof key, "%s%s.%d", pre, mname, n);
      if (!wk_state_dict_get(sd, key)) break;
    }
    if (c->kind == S_SEQUENTIAL && n > 0 && n != c->nmilestones)
      st = wk_error(WK_ERR_INVALID_ARG, "SequentialLR: load_state_dict: %d milestones, this one has %d", n,
                    c->nmilestones);
    int64_t *m = !st && n > 0 ? wk_malloc(sizeof(int64_t) * (size_t)n) : NULL;
    if (!st && n > 0 && !m) st = wk_error(WK_ERR_NO_MEMORY, "scheduler load_state_dict: out of memory");
    for (int i = 0; !st && i < n; i++) {
      snprintf(key, sizeof key, "%s%s.%d", pre, mname, i);
      if (!(st = optim_read_scalar(sd, key, &v, true))) m[i] = (int64_t)v;
    }
    for (int i = 1; !st && i < n; i++) /* sorted, for the closed form */
      for (int j = i; j > 0 && m[j - 1] > m[j]; j--) {
        int64_t t = m[j];
        m[j] = m[j - 1];
        m[j - 1] = t;
      }
    if (!st && m) {
      wk_free(c->milestones);
      c->milestones = m;
      c->nmilestones = n;
    } else {
      wk_free(m);
    }
  }
  for (int i = 0; !st && i < c->nchildren; i++) {
    char sub[160];
    snprintf(sub, sizeof sub, "%s_schedulers.%d.", pre, i);
    st = load(c->children[i], sd, sub);
  }
  if (!st && c->kind == S_STEP && c->step_size <= 0)
    st = wk_error(WK_ERR_INVALID_ARG, "StepLR: load_state_dict: step_size must be positive");
  if (!st && c->kind == S_COSINE && c->T_max <= 0)
    st = wk_error(WK_ERR_INVALID_ARG, "CosineAnnealingLR: load_state_dict: T_max must be positive");
  if (!st && c->kind == S_LINEAR && c->total_iters <= 0 && c->start_factor != c->end_factor)
    st = wk_error(WK_ERR_INVALID_ARG, "LinearLR: load_state_dict: total_iters must be positive");
  return st;
}

wk_status sched_load_state_dict(wk_lr_scheduler *s, const wk_state_dict *sd) {
  if (!s || !sd)
    return wk_error(WK_ERR_NULL, "scheduler load_state_dict: argument '%s' is NULL", s ? "state_dict" : "scheduler");
  wk_lr_scheduler *c = scratch_of(s);
  if (!c) return wk_error(WK_ERR_NO_MEMORY, "scheduler load_state_dict: out of memory");
  wk_status st = load(c, sd, "");
  if (st) {
    scratch_free(c);
    return st;
  }
  commit(s, c);
  return WK_OK;
}
