/* optim plugin: the scheduler object, shared by scheduler.c (construction,
 * stepping) and scheduler_sd.c (state dicts). */
#ifndef WICK_OPTIM_SCHED_H
#define WICK_OPTIM_SCHED_H

#include "optim.h"

enum {
  S_STEP = 1,
  S_MULTISTEP,
  S_EXPONENTIAL,
  S_COSINE,
  S_LINEAR,
  S_ONECYCLE,
  S_PLATEAU,
  S_CHAINED,
  S_SEQUENTIAL,
  S_LAMBDA,
  S_MULTIPLICATIVE,
  S_CYCLIC,
  S_SWALR
};

struct wk_lr_scheduler {
  int kind;
  wk_optimizer *opt; /* borrowed */
  int ngroups;       /* the optimizer's groups when the scheduler was made */
  int64_t last_epoch, step_count;
  double *base_lrs, *last_lr; /* ngroups each */
  /* StepLR, MultiStepLR, ExponentialLR */
  int64_t step_size;
  double gamma;
  int64_t *milestones; /* MultiStepLR (sorted), SequentialLR */
  int nmilestones;
  /* CosineAnnealingLR */
  int64_t T_max;
  double eta_min;
  /* LinearLR */
  double start_factor, end_factor;
  int64_t total_iters;
  /* OneCycleLR */
  int64_t total_steps;
  double pct_start;
  int anneal;
  bool cycle_momentum, use_beta1, three_phase;
  /* ReduceLROnPlateau */
  int mode, threshold_mode;
  double factor, patience, threshold, eps, best;
  int64_t cooldown, cooldown_counter, num_bad_epochs;
  double *min_lrs;
  /* LambdaLR, MultiplicativeLR */
  wk_lr_lambda_fn lr_lambda;
  void *lambda_user;
  /* CyclicLR (also gamma, cycle_momentum, use_beta1) */
  double total_size, step_ratio;
  int cyc_mode;
  bool scale_iterations;
  double (*scale_fn)(double x, void *user);
  void *scale_user;
  double *max_lrs, *base_momentums, *max_momentums; /* ngroups each */
  /* SWALR (also total_iters: anneal_epochs, anneal) */
  /* ChainedScheduler, SequentialLR (owned) */
  wk_lr_scheduler **children;
  int nchildren;
};

const char *sched_kind_name(int kind);
/* Copies the optimizer's current lrs into s->last_lr. */
void sched_record_lrs(wk_lr_scheduler *s);

#endif
