/* optim plugin: learning-rate schedulers, transcribing PyTorch 1.13's
 * lr_scheduler.py: the chainable get_lr() forms used by step(), the closed
 * forms used by step(epoch) (SequentialLR's milestones), the constructors'
 * initial step, ReduceLROnPlateau, ChainedScheduler and SequentialLR. */
#include <stdlib.h>

#include "sched.h"

static const char *const kind_names[] = {
    "?",        "StepLR",     "MultiStepLR",       "ExponentialLR",    "CosineAnnealingLR",
    "LinearLR", "OneCycleLR", "ReduceLROnPlateau", "ChainedScheduler", "SequentialLR",
    "LambdaLR", "MultiplicativeLR", "CyclicLR", "SWALR"};

const char *sched_kind_name(int kind) {
  return kind >= 1 && kind <= S_SWALR ? kind_names[kind] : "?";
}
const char *sched_name(const wk_lr_scheduler *s) {
  return s ? sched_kind_name(s->kind) : NULL;
}

void sched_free(wk_lr_scheduler *s) {
  if (!s) return;
  for (int i = 0; i < s->nchildren; i++) sched_free(s->children[i]);
  wk_free(s->children);
  wk_free(s->base_lrs);
  wk_free(s->last_lr);
  wk_free(s->milestones);
  wk_free(s->min_lrs);
  wk_free(s->max_lrs);
  wk_free(s->base_momentums);
  wk_free(s->max_momentums);
  wk_free(s);
}

static double lr_of(wk_lr_scheduler *s, int g) {
  double *p = optim_opt_slot(s->opt, g, "lr");
  return p ? *p : NAN;
}

void sched_record_lrs(wk_lr_scheduler *s) {
  for (int g = 0; g < s->ngroups; g++) s->last_lr[g] = lr_of(s, g);
}

/* A scheduler over opt's groups with last_lr filled; base_lrs from each
 * group's "initial_lr" (set to its lr when absent) when with_base. */
static wk_lr_scheduler *alloc_sched(int kind, wk_optimizer *opt, bool with_base) {
  const char *name = sched_kind_name(kind);
  if (!opt) {
    wk_error(WK_ERR_NULL, "%s: argument 'optimizer' is NULL", name);
    return NULL;
  }
  wk_lr_scheduler *s = wk_calloc(1, sizeof *s);
  int ng = optim_num_param_groups(opt);
  if (s) {
    s->base_lrs = wk_calloc((size_t)(ng ? ng : 1), sizeof(double));
    s->last_lr = wk_calloc((size_t)(ng ? ng : 1), sizeof(double));
  }
  if (!s || !s->base_lrs || !s->last_lr) {
    sched_free(s);
    wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", name);
    return NULL;
  }
  s->kind = kind;
  s->opt = opt;
  s->ngroups = ng;
  s->last_epoch = -1;
  for (int g = 0; with_base && g < ng; g++) {
    double *init = optim_opt_slot(opt, g, "initial_lr");
    if (!init) {
      if (optim_opt_put(opt, g, "initial_lr", lr_of(s, g))) {
        sched_free(s);
        return NULL;
      }
      init = optim_opt_slot(opt, g, "initial_lr");
    }
    s->base_lrs[g] = *init;
  }
  sched_record_lrs(s);
  return s;
}

static wk_status check_groups(const wk_lr_scheduler *s) {
  if (optim_num_param_groups(s->opt) != s->ngroups)
    return wk_error(WK_ERR_STATE, "%s: the optimizer has %d parameter groups, the scheduler was made for %d",
                    sched_name(s), optim_num_param_groups(s->opt), s->ngroups);
  return WK_OK;
}

/* ---- the schedules ---- */
static double anneal(int how, double start, double end, double pct) {
  if (how == WK_ANNEAL_LINEAR) return (end - start) * pct + start;
  double cos_out = cos(M_PI * pct) + 1;
  return end + (start - end) / 2.0 * cos_out;
}

static double opt_value(wk_lr_scheduler *s, int g, const char *name) {
  double *p = optim_opt_slot(s->opt, g, name);
  return p ? *p : NAN;
}

/* OneCycleLR's get_lr (also sets the momentum or beta1 of each group). */
static wk_status one_cycle_lrs(wk_lr_scheduler *s, double *out) {
  int64_t step_num = s->last_epoch;
  if (step_num > s->total_steps)
    return wk_error(WK_ERR_STATE, "OneCycleLR: Tried to step %lld times. The specified number of total steps is %lld",
                    (long long)(step_num + 1), (long long)s->total_steps);
  double ts = (double)s->total_steps;
  struct {
    double end_step;
    const char *start_lr, *end_lr, *start_m, *end_m;
  } ph[3];
  int nph;
  if (s->three_phase) {
    ph[0].end_step = s->pct_start * ts - 1;
    ph[0].start_lr = "initial_lr", ph[0].end_lr = "max_lr", ph[0].start_m = "max_momentum",
    ph[0].end_m = "base_momentum";
    ph[1].end_step = 2 * s->pct_start * ts - 2;
    ph[1].start_lr = "max_lr", ph[1].end_lr = "initial_lr", ph[1].start_m = "base_momentum",
    ph[1].end_m = "max_momentum";
    ph[2].end_step = ts - 1;
    ph[2].start_lr = "initial_lr", ph[2].end_lr = "min_lr", ph[2].start_m = "max_momentum",
    ph[2].end_m = "max_momentum";
    nph = 3;
  } else {
    ph[0].end_step = s->pct_start * ts - 1;
    ph[0].start_lr = "initial_lr", ph[0].end_lr = "max_lr", ph[0].start_m = "max_momentum",
    ph[0].end_m = "base_momentum";
    ph[1].end_step = ts - 1;
    ph[1].start_lr = "max_lr", ph[1].end_lr = "min_lr", ph[1].start_m = "base_momentum", ph[1].end_m = "max_momentum";
    nph = 2;
  }
  for (int g = 0; g < s->ngroups; g++) {
    double start_step = 0, lr = 0, mom = 0;
    for (int i = 0; i < nph; i++) {
      double end_step = ph[i].end_step;
      if ((double)step_num <= end_step || i == nph - 1) {
        double pct = ((double)step_num - start_step) / (end_step - start_step);
        lr = anneal(s->anneal, opt_value(s, g, ph[i].start_lr), opt_value(s, g, ph[i].end_lr), pct);
        if (s->cycle_momentum)
          mom = anneal(s->anneal, opt_value(s, g, ph[i].start_m), opt_value(s, g, ph[i].end_m), pct);
        break;
      }
      start_step = ph[i].end_step;
    }
    out[g] = lr;
    if (s->cycle_momentum) {
      wk_status st = optim_opt_put(s->opt, g, s->use_beta1 ? "beta1" : "momentum", mom);
      if (st) return st;
    }
  }
  return WK_OK;
}

/* CyclicLR's get_lr (also sets the momentum or beta1 of each group). */
static wk_status cyclic_lrs(wk_lr_scheduler *s, double *out) {
  double e = (double)s->last_epoch;
  double cycle = floor(1 + e / s->total_size), x = 1. + e / s->total_size - cycle;
  double scale_factor = x <= s->step_ratio ? x / s->step_ratio : (x - 1) / (s->step_ratio - 1);
  double arg = s->scale_iterations ? e : cycle, scale;
  if (s->scale_fn)
    scale = s->scale_fn(arg, s->scale_user);
  else if (s->cyc_mode == WK_CYCLIC_TRIANGULAR2)
    scale = 1 / pow(2., arg - 1);
  else if (s->cyc_mode == WK_CYCLIC_EXP_RANGE)
    scale = pow(s->gamma, arg);
  else
    scale = 1.;
  if (scale != scale) return wk_error(WK_ERR_INVALID_ARG, "CyclicLR: scale_fn returned NaN for %g", arg);
  for (int g = 0; g < s->ngroups; g++) {
    out[g] = s->base_lrs[g] + (s->max_lrs[g] - s->base_lrs[g]) * scale_factor * scale;
    if (s->cycle_momentum) {
      double m = s->max_momentums[g] - (s->max_momentums[g] - s->base_momentums[g]) * scale_factor * scale;
      wk_status st = optim_opt_put(s->opt, g, s->use_beta1 ? "beta1" : "momentum", m);
      if (st) return st;
    }
  }
  return WK_OK;
}

/* SWALR's get_lr (swa_utils.py): the previous step's starting lr recovered
 * from the current one, then the anneal towards swa_lr. */
static double swa_anneal(int how, double t) {
  return how == WK_ANNEAL_LINEAR ? t : (1 - cos(M_PI * t)) / 2;
}
static double clamp01(double t) {
  return t < 0 ? 0 : t > 1 ? 1 : t;
}
static wk_status swa_lrs(wk_lr_scheduler *s, double *out) {
  double step = (double)(s->step_count - 1), epochs = (double)s->total_iters;
  if (s->total_iters == 0 && step < 1) step = 1;
  double den = epochs > 1 ? epochs : 1;
  double prev_alpha = swa_anneal(s->anneal, clamp01((step - 1) / den)), alpha = swa_anneal(s->anneal, clamp01(step / den));
  for (int g = 0; g < s->ngroups; g++) {
    double lr = lr_of(s, g), swa = opt_value(s, g, "swa_lr");
    double prev = prev_alpha == 1 ? swa : (lr - prev_alpha * swa) / (1 - prev_alpha);
    out[g] = swa * alpha + prev * (1 - alpha);
  }
  return WK_OK;
}

/* LambdaLR / MultiplicativeLR: the user's factor, NaN refused. */
static wk_status lambda_factor(wk_lr_scheduler *s, int64_t e, int g, double *f) {
  *f = s->lr_lambda(e, g, s->lambda_user);
  if (*f != *f)
    return wk_error(WK_ERR_INVALID_ARG, "%s: lr_lambda returned NaN for group %d at epoch %lld", sched_name(s), g,
                    (long long)e);
  return WK_OK;
}

static int count_milestone(const wk_lr_scheduler *s, int64_t e) {
  int c = 0;
  for (int i = 0; i < s->nmilestones; i++) c += s->milestones[i] == e;
  return c;
}

/* get_lr(): the chainable form, from each group's current lr. */
static wk_status get_lr(wk_lr_scheduler *s, double *out) {
  int64_t e = s->last_epoch;
  for (int g = 0; g < s->ngroups; g++) {
    double lr = lr_of(s, g), base = s->base_lrs[g], v = lr;
    switch (s->kind) {
      case S_STEP:
        if (!(e == 0 || e % s->step_size != 0)) v = lr * s->gamma;
        break;
      case S_MULTISTEP: {
        int c = count_milestone(s, e);
        if (c) v = lr * pow(s->gamma, c);
        break;
      }
      case S_EXPONENTIAL:
        if (e != 0) v = lr * s->gamma;
        break;
      case S_COSINE: {
        double T = (double)s->T_max;
        if (e == 0)
          v = lr;
        else if (s->step_count == 1 && e > 0)
          v = s->eta_min + (base - s->eta_min) * (1 + cos((double)e * M_PI / T)) / 2;
        else if ((e - 1 - s->T_max) % (2 * s->T_max) == 0)
          v = lr + (base - s->eta_min) * (1 - cos(M_PI / T)) / 2;
        else
          v = (1 + cos(M_PI * (double)e / T)) / (1 + cos(M_PI * (double)(e - 1) / T)) * (lr - s->eta_min) + s->eta_min;
        break;
      }
      case S_LAMBDA: {
        double f;
        wk_status st = lambda_factor(s, e, g, &f);
        if (st) return st;
        v = base * f;
        break;
      }
      case S_MULTIPLICATIVE:
        if (e > 0) {
          double f;
          wk_status st = lambda_factor(s, e, g, &f);
          if (st) return st;
          v = lr * f;
        }
        break;
      case S_LINEAR:
        if (e == 0)
          v = lr * s->start_factor;
        else if (e <= s->total_iters)
          v = lr * (1. + (s->end_factor - s->start_factor) / ((double)s->total_iters * s->start_factor +
                                                              (double)(e - 1) * (s->end_factor - s->start_factor)));
        break;
      default:
        break;
    }
    out[g] = v;
  }
  return s->kind == S_ONECYCLE ? one_cycle_lrs(s, out)
         : s->kind == S_CYCLIC ? cyclic_lrs(s, out)
         : s->kind == S_SWALR  ? swa_lrs(s, out)
                               : WK_OK;
}

/* _get_closed_form_lr(), for step(epoch); kinds without one use get_lr. */
static wk_status closed_form_lr(wk_lr_scheduler *s, double *out) {
  int64_t e = s->last_epoch;
  for (int g = 0; g < s->ngroups; g++) {
    double base = s->base_lrs[g];
    switch (s->kind) {
      case S_STEP: {
        int64_t q = e / s->step_size - ((e % s->step_size != 0) && ((e < 0) != (s->step_size < 0)));
        out[g] = base * pow(s->gamma, (double)q);
        break;
      }
      case S_MULTISTEP: {
        int c = 0; /* bisect_right over the sorted milestones */
        while (c < s->nmilestones && s->milestones[c] <= e) c++;
        out[g] = base * pow(s->gamma, c);
        break;
      }
      case S_EXPONENTIAL:
        out[g] = base * pow(s->gamma, (double)e);
        break;
      case S_COSINE:
        out[g] = s->eta_min + (base - s->eta_min) * (1 + cos(M_PI * (double)e / (double)s->T_max)) / 2;
        break;
      case S_LINEAR: {
        int64_t m = s->total_iters < e ? s->total_iters : e;
        out[g] = base * (s->start_factor + (s->end_factor - s->start_factor) * (double)m / (double)s->total_iters);
        break;
      }
      default:
        return get_lr(s, out);
    }
  }
  return WK_OK;
}

/* _LRScheduler.step(epoch): epoch < 0 means None. */
static wk_status base_step(wk_lr_scheduler *s, int64_t epoch) {
  wk_status st = check_groups(s);
  if (st) return st;
  double *v = wk_malloc(sizeof(double) * (size_t)(s->ngroups ? s->ngroups : 1));
  if (!v) return wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", sched_name(s));
  int64_t prev_epoch = s->last_epoch;
  s->step_count++;
  if (epoch < 0) {
    s->last_epoch++;
    st = get_lr(s, v);
  } else {
    s->last_epoch = epoch;
    st = closed_form_lr(s, v);
  }
  if (st) {
    s->step_count--;
    s->last_epoch = prev_epoch;
  } else {
    for (int g = 0; g < s->ngroups; g++) *optim_opt_slot(s->opt, g, "lr") = v[g];
    sched_record_lrs(s);
  }
  wk_free(v);
  return st;
}

static wk_status initial_step(wk_lr_scheduler *s) {
  s->step_count = 0;
  return base_step(s, -1);
}

static wk_lr_scheduler *finish(wk_lr_scheduler *s) {
  if (s && initial_step(s)) {
    sched_free(s);
    return NULL;
  }
  return s;
}

/* ---- constructors ---- */
wk_lr_scheduler *sched_step_lr(wk_optimizer *opt, const wk_step_lr_opts *o, size_t osize) {
  wk_step_lr_opts x;
  optim_copy_opts(&x, sizeof x, o, osize);
  if (opt && x.step_size <= 0) {
    wk_error(WK_ERR_INVALID_ARG, "StepLR: step_size must be positive, got %lld", (long long)x.step_size);
    return NULL;
  }
  wk_lr_scheduler *s = alloc_sched(S_STEP, opt, true);
  if (!s) return NULL;
  s->step_size = x.step_size;
  s->gamma = optim_or(x.gamma, 0.1);
  return finish(s);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

wk_lr_scheduler *sched_multistep_lr(wk_optimizer *opt, const wk_multistep_lr_opts *o, size_t osize) {
  wk_multistep_lr_opts x;
  optim_copy_opts(&x, sizeof x, o, osize);
  if (opt && (x.nmilestones < 0 || (x.nmilestones > 0 && !x.milestones))) {
    wk_error(WK_ERR_INVALID_ARG, "MultiStepLR: bad milestone list (%d milestones%s)", x.nmilestones,
             x.milestones ? "" : ", NULL");
    return NULL;
  }
  wk_lr_scheduler *s = alloc_sched(S_MULTISTEP, opt, true);
  if (!s) return NULL;
  s->gamma = optim_or(x.gamma, 0.1);
  s->milestones = wk_malloc(sizeof(int64_t) * (size_t)(x.nmilestones ? x.nmilestones : 1));
  if (!s->milestones) {
    sched_free(s);
    wk_error(WK_ERR_NO_MEMORY, "MultiStepLR: out of memory");
    return NULL;
  }
  if (x.nmilestones) memcpy(s->milestones, x.milestones, sizeof(int64_t) * (size_t)x.nmilestones);
  s->nmilestones = x.nmilestones;
  qsort(s->milestones, (size_t)s->nmilestones, sizeof(int64_t), cmp_i64);
  return finish(s);
}

wk_lr_scheduler *sched_exponential_lr(wk_optimizer *opt, const wk_exponential_lr_opts *o, size_t osize) {
  wk_exponential_lr_opts x;
  optim_copy_opts(&x, sizeof x, o, osize);
  double gamma = optim_or(x.gamma, NAN);
  if (opt && gamma != gamma) {
    wk_error(WK_ERR_INVALID_ARG, "ExponentialLR: gamma is required (WK_OPTIM_ZERO for 0)");
    return NULL;
  }
  wk_lr_scheduler *s = alloc_sched(S_EXPONENTIAL, opt, true);
  if (!s) return NULL;
  s->gamma = gamma;
  return finish(s);
}

wk_lr_scheduler *sched_cosine_annealing_lr(wk_optimizer *opt, const wk_cosine_annealing_lr_opts *o, size_t osize) {
  wk_cosine_annealing_lr_opts x;
  optim_copy_opts(&x, sizeof x, o, osize);
  if (opt && x.T_max <= 0) {
    wk_error(WK_ERR_INVALID_ARG, "CosineAnnealingLR: T_max must be positive, got %lld", (long long)x.T_max);
    return NULL;
  }
  wk_lr_scheduler *s = alloc_sched(S_COSINE, opt, true);
  if (!s) return NULL;
  s->T_max = x.T_max;
  s->eta_min = x.eta_min;
  return finish(s);
}

wk_lr_scheduler *sched_linear_lr(wk_optimizer *opt, const wk_linear_lr_opts *o, size_t osize) {
  wk_linear_lr_opts x;
  optim_copy_opts(&x, sizeof x, o, osize);
  double sf = optim_or(x.start_factor, 1.0 / 3), ef = optim_or(x.end_factor, 1.0);
  int64_t ti = x.total_iters ? x.total_iters : 5;
  if (opt) {
    const char *bad = !(sf > 0 && sf <= 1)
                          ? "Starting multiplicative factor expected to be greater than 0 and less or equal to 1."
                      : !(ef >= 0 && ef <= 1) ? "Ending multiplicative factor expected to be between 0 and 1."
                      : ti < 0                ? "total_iters must not be negative"
                                              : NULL;
    if (bad) {
      wk_error(WK_ERR_INVALID_ARG, "LinearLR: %s (start_factor %g, end_factor %g, total_iters %lld)", bad, sf, ef,
               (long long)ti);
      return NULL;
    }
  }
  wk_lr_scheduler *s = alloc_sched(S_LINEAR, opt, true);
  if (!s) return NULL;
  s->start_factor = sf;
  s->end_factor = ef;
  s->total_iters = ti;
  return finish(s);
}

wk_lr_scheduler *sched_one_cycle_lr(wk_optimizer *opt, const wk_one_cycle_lr_opts *o, size_t osize) {
  wk_one_cycle_lr_opts x;
  optim_copy_opts(&x, sizeof x, o, osize);
  static const char nm[] = "OneCycleLR";
  if (!opt) {
    wk_error(WK_ERR_NULL, "%s: argument 'optimizer' is NULL", nm);
    return NULL;
  }
  int64_t total = x.total_steps;
  if (total == 0 && (x.epochs != 0 || x.steps_per_epoch != 0)) {
    if (x.epochs <= 0 || x.steps_per_epoch <= 0) {
      wk_error(WK_ERR_INVALID_ARG, "%s: Expected positive integer epochs and steps_per_epoch, but got %lld and %lld",
               nm, (long long)x.epochs, (long long)x.steps_per_epoch);
      return NULL;
    }
    total = x.epochs * x.steps_per_epoch;
  }
  double pct = optim_or(x.pct_start, 0.3);
  const char *bad = total == 0 && x.epochs == 0 ? "You must define either total_steps OR (epochs AND steps_per_epoch)"
                    : total <= 0                ? "Expected positive integer total_steps"
                    : !(pct >= 0 && pct <= 1)   ? "Expected float between 0 and 1 pct_start"
                    : x.anneal_strategy != WK_ANNEAL_COS && x.anneal_strategy != WK_ANNEAL_LINEAR
                        ? "anneal_strategy must by one of 'cos' or 'linear'"
                    : x.max_lr != x.max_lr ? "max_lr is NaN"
                    : !x.no_cycle_momentum && !optim_kind_has(opt, "momentum") && !optim_kind_has(opt, "beta1")
                        ? "optimizer must support momentum with `cycle_momentum` option enabled"
                        : NULL;
  if (bad) {
    wk_error(WK_ERR_INVALID_ARG, "%s: %s (total_steps %lld, pct_start %g)", nm, bad, (long long)total, pct);
    return NULL;
  }
  double div = optim_or(x.div_factor, 25.), fdiv = optim_or(x.final_div_factor, 1e4);
  double maxm = optim_or(x.max_momentum, 0.95), basem = optim_or(x.base_momentum, 0.85);
  bool use_beta1 = optim_kind_has(opt, "beta1");
  int ng = optim_num_param_groups(opt);
  for (int g = 0; g < ng; g++) {
    double init = x.max_lr / div;
    if (optim_opt_put(opt, g, "initial_lr", init) || optim_opt_put(opt, g, "max_lr", x.max_lr) ||
        optim_opt_put(opt, g, "min_lr", init / fdiv))
      return NULL;
    if (!x.no_cycle_momentum &&
        (optim_opt_put(opt, g, use_beta1 ? "beta1" : "momentum", maxm) || optim_opt_put(opt, g, "max_momentum", maxm) ||
         optim_opt_put(opt, g, "base_momentum", basem)))
      return NULL;
  }
  wk_lr_scheduler *s = alloc_sched(S_ONECYCLE, opt, true);
  if (!s) return NULL;
  s->total_steps = total;
  s->pct_start = pct;
  s->anneal = x.anneal_strategy;
  s->cycle_momentum = !x.no_cycle_momentum;
  s->use_beta1 = use_beta1;
  s->three_phase = x.three_phase;
  return finish(s);
}

static wk_lr_scheduler *lambda_like(int kind, wk_optimizer *opt, const wk_lambda_lr_opts *o, size_t osize) {
  wk_lambda_lr_opts x;
  optim_copy_opts(&x, sizeof x, o, osize);
  if (opt && !x.lr_lambda) {
    wk_error(WK_ERR_NULL, "%s: lr_lambda is NULL", sched_kind_name(kind));
    return NULL;
  }
  wk_lr_scheduler *s = alloc_sched(kind, opt, true);
  if (!s) return NULL;
  s->lr_lambda = x.lr_lambda;
  s->lambda_user = x.user;
  return finish(s);
}
wk_lr_scheduler *sched_lambda_lr(wk_optimizer *opt, const wk_lambda_lr_opts *o, size_t osize) {
  return lambda_like(S_LAMBDA, opt, o, osize);
}
wk_lr_scheduler *sched_multiplicative_lr(wk_optimizer *opt, const wk_lambda_lr_opts *o, size_t osize) {
  return lambda_like(S_MULTIPLICATIVE, opt, o, osize);
}

wk_lr_scheduler *sched_cyclic_lr(wk_optimizer *opt, const wk_cyclic_lr_opts *o, size_t osize) {
  wk_cyclic_lr_opts x;
  optim_copy_opts(&x, sizeof x, o, osize);
  static const char nm[] = "CyclicLR";
  if (!opt) {
    wk_error(WK_ERR_NULL, "%s: argument 'optimizer' is NULL", nm);
    return NULL;
  }
  double base_lr = optim_or(x.base_lr, NAN), max_lr = optim_or(x.max_lr, NAN);
  double up = x.step_size_up ? (double)x.step_size_up : 2000., down = x.step_size_down ? (double)x.step_size_down : up;
  bool use_beta1 = !optim_kind_has(opt, "momentum") && optim_kind_has(opt, "beta1");
  const char *bad = base_lr != base_lr || max_lr != max_lr ? "base_lr and max_lr are required (WK_OPTIM_ZERO for 0)"
                    : up < 0 || down < 0 ? "step_size_up and step_size_down must be positive"
                    : !x.scale_fn && x.mode != WK_CYCLIC_TRIANGULAR && x.mode != WK_CYCLIC_TRIANGULAR2 &&
                            x.mode != WK_CYCLIC_EXP_RANGE
                        ? "mode is invalid and scale_fn is None"
                    : !x.no_cycle_momentum && !optim_kind_has(opt, "momentum") && !optim_kind_has(opt, "beta1")
                        ? "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"
                        : NULL;
  if (bad) {
    wk_error(WK_ERR_INVALID_ARG, "%s: %s (base_lr %g, max_lr %g, mode %d)", nm, bad, base_lr, max_lr, x.mode);
    return NULL;
  }
  int ng = optim_num_param_groups(opt);
  double basem = optim_or(x.base_momentum, 0.8), maxm = optim_or(x.max_momentum, 0.9);
  for (int g = 0; g < ng; g++) { /* last_epoch == -1: the groups start at base_lr (and base_momentum) */
    if (optim_opt_put(opt, g, "lr", base_lr)) return NULL;
    if (!x.no_cycle_momentum && optim_opt_put(opt, g, use_beta1 ? "beta1" : "momentum", basem)) return NULL;
  }
  wk_lr_scheduler *s = alloc_sched(S_CYCLIC, opt, true);
  if (!s) return NULL;
  size_t nb = sizeof(double) * (size_t)(ng > 0 ? ng : 1);
  s->max_lrs = wk_malloc(nb);
  s->base_momentums = wk_malloc(nb);
  s->max_momentums = wk_malloc(nb);
  if (!s->max_lrs || !s->base_momentums || !s->max_momentums) {
    sched_free(s);
    wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", nm);
    return NULL;
  }
  for (int g = 0; g < ng; g++) {
    s->max_lrs[g] = max_lr;
    s->base_momentums[g] = x.no_cycle_momentum ? 0 : *optim_opt_slot(opt, g, use_beta1 ? "beta1" : "momentum");
    s->max_momentums[g] = maxm;
  }
  s->total_size = up + down;
  s->step_ratio = up / s->total_size;
  s->cyc_mode = x.mode;
  s->gamma = optim_or(x.gamma, 1.0);
  s->scale_fn = x.scale_fn;
  s->scale_user = x.scale_user;
  /* the modes' own scale_mode: exp_range scales by iterations, the triangles by cycle */
  s->scale_iterations = x.scale_fn ? x.scale_by_iterations : x.mode == WK_CYCLIC_EXP_RANGE;
  s->cycle_momentum = !x.no_cycle_momentum;
  s->use_beta1 = use_beta1;
  if (!(s = finish(s))) return NULL;
  for (int g = 0; g < ng; g++) s->base_lrs[g] = base_lr; /* set after the initial step, as PyTorch's __init__ */
  return s;
}

wk_lr_scheduler *sched_swa_lr(wk_optimizer *opt, const wk_swa_lr_opts *o, size_t osize) {
  wk_swa_lr_opts x;
  optim_copy_opts(&x, sizeof x, o, osize);
  static const char nm[] = "SWALR";
  if (!opt) {
    wk_error(WK_ERR_NULL, "%s: argument 'optimizer' is NULL", nm);
    return NULL;
  }
  double swa_lr = optim_or(x.swa_lr, NAN);
  int64_t epochs = x.anneal_epochs == 0 ? 10 : x.anneal_epochs == WK_SWALR_NO_ANNEAL ? 0 : x.anneal_epochs;
  const char *bad = swa_lr != swa_lr ? "swa_lr is required (WK_OPTIM_ZERO for 0)"
                    : x.anneal_strategy != WK_ANNEAL_COS && x.anneal_strategy != WK_ANNEAL_LINEAR
                        ? "anneal_strategy must by one of 'cos' or 'linear'"
                    : epochs < 0 ? "anneal_epochs must be equal or greater than 0"
                                 : NULL;
  if (bad) {
    wk_error(WK_ERR_INVALID_ARG, "%s: %s (swa_lr %g, anneal_epochs %lld)", nm, bad, swa_lr, (long long)x.anneal_epochs);
    return NULL;
  }
  for (int g = 0; g < optim_num_param_groups(opt); g++)
    if (optim_opt_put(opt, g, "swa_lr", swa_lr)) return NULL;
  wk_lr_scheduler *s = alloc_sched(S_SWALR, opt, true);
  if (!s) return NULL;
  s->total_iters = epochs;
  s->anneal = x.anneal_strategy;
  return finish(s);
}

wk_lr_scheduler *sched_reduce_lr_on_plateau(wk_optimizer *opt, const wk_reduce_lr_on_plateau_opts *o, size_t osize) {
  wk_reduce_lr_on_plateau_opts x;
  optim_copy_opts(&x, sizeof x, o, osize);
  static const char nm[] = "ReduceLROnPlateau";
  double factor = optim_or(x.factor, 0.1);
  if (opt) {
    const char *bad = !(factor < 1.0)                                        ? "Factor should be < 1.0."
                      : x.mode != WK_PLATEAU_MIN && x.mode != WK_PLATEAU_MAX ? "mode is unknown"
                      : x.threshold_mode != WK_THRESHOLD_REL && x.threshold_mode != WK_THRESHOLD_ABS
                          ? "threshold mode is unknown"
                      : x.patience < 0 || x.cooldown < 0 ? "patience and cooldown must not be negative"
                                                         : NULL;
    if (bad) {
      wk_error(WK_ERR_INVALID_ARG, "%s: %s (factor %g, mode %d, threshold_mode %d)", nm, bad, factor, x.mode,
               x.threshold_mode);
      return NULL;
    }
  }
  wk_lr_scheduler *s = alloc_sched(S_PLATEAU, opt, false);
  if (!s) return NULL;
  s->min_lrs = wk_calloc((size_t)(s->ngroups ? s->ngroups : 1), sizeof(double));
  if (!s->min_lrs) {
    sched_free(s);
    wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", nm);
    return NULL;
  }
  for (int g = 0; g < s->ngroups; g++) s->min_lrs[g] = x.min_lr;
  s->factor = factor;
  s->patience = optim_or(x.patience, 10);
  s->threshold = optim_or(x.threshold, 1e-4);
  s->eps = optim_or(x.eps, 1e-8);
  s->mode = x.mode;
  s->threshold_mode = x.threshold_mode;
  s->cooldown = x.cooldown;
  s->last_epoch = 0;
  s->best = x.mode == WK_PLATEAU_MIN ? INFINITY : -INFINITY;
  return s;
}

/* Frees scheds[0..n), each distinct one once. */
static void free_unique(wk_lr_scheduler *const *scheds, int n) {
  for (int i = 0; scheds && i < n; i++) {
    bool dup = false;
    for (int j = 0; j < i; j++) dup = dup || scheds[j] == scheds[i];
    if (!dup) sched_free(scheds[i]);
  }
}

/* Takes ownership of scheds[0..n): on error frees them (each once). */
static wk_status adopt(const char *nm, wk_lr_scheduler *const *scheds, int n, wk_optimizer *opt, bool sequential) {
  wk_status st = WK_OK;
  if (n <= 0 || !scheds)
    st = wk_error(n < 0 || scheds ? WK_ERR_INVALID_ARG : WK_ERR_NULL, "%s: needs at least one scheduler (n = %d)", nm,
                  n);
  for (int i = 0; !st && i < n; i++) {
    const wk_lr_scheduler *c = scheds[i];
    if (!c) {
      st = wk_error(WK_ERR_NULL, "%s: scheduler %d is NULL", nm, i);
      break;
    }
    for (int j = 0; !st && j < i; j++)
      if (scheds[j] == c) st = wk_error(WK_ERR_INVALID_ARG, "%s: schedulers %d and %d are the same", nm, j, i);
    if (st) break;
    if (c->opt != (opt ? opt : scheds[0]->opt))
      st = wk_error(WK_ERR_INVALID_ARG,
                    "%s expects all schedulers to belong to the same optimizer, but got "
                    "scheduler %d with a different one",
                    nm, i);
    else if (c->kind == S_PLATEAU)
      st = wk_error(WK_ERR_INVALID_ARG, "%s: ReduceLROnPlateau (scheduler %d) cannot be chained", nm, i);
    else if (sequential && (c->kind == S_CHAINED || c->kind == S_SEQUENTIAL))
      st = wk_error(WK_ERR_INVALID_ARG, "%s: scheduler %d is a %s, which has no step(epoch)", nm, i, sched_name(c));
  }
  if (st) free_unique(scheds, n);
  return st;
}

static wk_lr_scheduler *wrap(int kind, wk_optimizer *opt, wk_lr_scheduler *const *scheds, int n) {
  wk_lr_scheduler *s = alloc_sched(kind, opt, false);
  if (s && !(s->children = wk_malloc(sizeof *s->children * (size_t)n))) {
    sched_free(s);
    s = NULL;
    wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", sched_kind_name(kind));
  }
  if (!s) {
    for (int i = 0; i < n; i++) sched_free(scheds[i]);
    return NULL;
  }
  memcpy(s->children, scheds, sizeof *scheds * (size_t)n);
  s->nchildren = n;
  return s;
}

wk_lr_scheduler *sched_chained(wk_lr_scheduler *const *scheds, int n) {
  if (adopt("ChainedScheduler", scheds, n, NULL, false)) return NULL;
  return wrap(S_CHAINED, scheds[0]->opt, scheds, n);
}

wk_lr_scheduler *sched_sequential(wk_optimizer *opt, wk_lr_scheduler *const *scheds, int n, const int64_t *milestones,
                                  int nmilestones) {
  static const char nm[] = "SequentialLR";
  if (!opt) {
    wk_error(WK_ERR_NULL, "%s: argument 'optimizer' is NULL", nm);
    free_unique(scheds, n);
    return NULL;
  }
  if (adopt(nm, scheds, n, opt, true)) return NULL;
  if (nmilestones != n - 1 || (nmilestones > 0 && !milestones)) {
    wk_error(WK_ERR_INVALID_ARG,
             "%s expects number of schedulers provided to be one more than the number of milestone points, but got "
             "number of schedulers %d and the number of milestones to be equal to %d",
             nm, n, nmilestones);
    for (int i = 0; i < n; i++) sched_free(scheds[i]);
    return NULL;
  }
  wk_lr_scheduler *s = wrap(S_SEQUENTIAL, opt, scheds, n);
  if (!s) return NULL;
  s->milestones = wk_malloc(sizeof(int64_t) * (size_t)(nmilestones ? nmilestones : 1));
  if (!s->milestones) {
    sched_free(s);
    wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", nm);
    return NULL;
  }
  if (nmilestones) memcpy(s->milestones, milestones, sizeof(int64_t) * (size_t)nmilestones);
  s->nmilestones = nmilestones;
  s->last_epoch = 0;
  wk_status st = check_groups(s->children[0]);
  for (int g = 0; !st && g < s->ngroups; g++) {
    double *init = optim_opt_slot(opt, g, "initial_lr");
    if (!init)
      st = wk_error(WK_ERR_STATE, "%s: parameter group %d has no initial_lr", nm, g);
    else
      *optim_opt_slot(opt, g, "lr") = *init;
  }
  for (int i = 0; i < n; i++) s->children[i]->last_epoch -= 1;
  if (!st) st = initial_step(s->children[0]);
  if (st) {
    sched_free(s);
    return NULL;
  }
  memcpy(s->last_lr, s->children[0]->last_lr, sizeof(double) * (size_t)s->ngroups);
  return s;
}

/* ---- stepping ---- */
wk_status sched_step(wk_lr_scheduler *s) {
  if (!s) return wk_error(WK_ERR_NULL, "scheduler step: argument 'scheduler' is NULL");
  wk_status st = check_groups(s);
  if (st) return st;
  switch (s->kind) {
    case S_PLATEAU:
      return wk_error(WK_ERR_INVALID_ARG, "ReduceLROnPlateau: step needs the metric (wk_lr_scheduler_step_metric)");
    case S_CHAINED:
      for (int i = 0; !st && i < s->nchildren; i++) st = sched_step(s->children[i]);
      sched_record_lrs(s);
      return st;
    case S_SEQUENTIAL: {
      s->last_epoch++;
      int idx = 0; /* bisect_right */
      while (idx < s->nmilestones && s->milestones[idx] <= s->last_epoch) idx++;
      wk_lr_scheduler *c = s->children[idx];
      st = idx > 0 && s->milestones[idx - 1] == s->last_epoch ? base_step(c, 0) : sched_step(c);
      if (!st) memcpy(s->last_lr, c->last_lr, sizeof(double) * (size_t)s->ngroups);
      return st;
    }
    default:
      return base_step(s, -1);
  }
}

static bool is_better(const wk_lr_scheduler *s, double a, double best) {
  if (s->mode == WK_PLATEAU_MIN && s->threshold_mode == WK_THRESHOLD_REL) return a < best * (1. - s->threshold);
  if (s->mode == WK_PLATEAU_MIN) return a < best - s->threshold;
  if (s->threshold_mode == WK_THRESHOLD_REL) return a > best * (s->threshold + 1.);
  return a > best + s->threshold;
}

wk_status sched_step_metric(wk_lr_scheduler *s, double metric) {
  if (!s) return wk_error(WK_ERR_NULL, "scheduler step: argument 'scheduler' is NULL");
  if (s->kind != S_PLATEAU) return sched_step(s);
  wk_status st = check_groups(s);
  if (st) return st;
  s->last_epoch++;
  if (is_better(s, metric, s->best)) {
    s->best = metric;
    s->num_bad_epochs = 0;
  } else {
    s->num_bad_epochs++;
  }
  if (s->cooldown_counter > 0) {
    s->cooldown_counter--;
    s->num_bad_epochs = 0;
  }
  if ((double)s->num_bad_epochs > s->patience) {
    for (int g = 0; g < s->ngroups; g++) {
      double old = lr_of(s, g), nw = old * s->factor;
      if (s->min_lrs[g] > nw) nw = s->min_lrs[g]; /* Python's max(a, b) keeps a unless b > a */
      if (old - nw > s->eps) *optim_opt_slot(s->opt, g, "lr") = nw;
    }
    s->cooldown_counter = s->cooldown;
    s->num_bad_epochs = 0;
  }
  sched_record_lrs(s);
  return WK_OK;
}

int sched_get_last_lr(const wk_lr_scheduler *s, double *out, int cap) {
  if (!s) {
    wk_error(WK_ERR_NULL, "get_last_lr: argument 'scheduler' is NULL");
    return -1;
  }
  if (cap > 0 && !out) {
    wk_error(WK_ERR_NULL, "get_last_lr: argument 'out' is NULL");
    return -1;
  }
  for (int g = 0; g < s->ngroups && g < cap; g++) out[g] = s->last_lr[g];
  return s->ngroups;
}

int64_t sched_last_epoch(const wk_lr_scheduler *s) {
  if (!s) {
    wk_error(WK_ERR_NULL, "last_epoch: argument 'scheduler' is NULL");
    return -1;
  }
  return s->last_epoch;
}
