/* optim plugin: private declarations shared by its files (the fused update
 * ops and their cpu kernels, optimizers, schedulers, clipping, the service). */
#ifndef WICK_OPTIM_PLUGIN_H
#define WICK_OPTIM_PLUGIN_H

#include <wick/sdk.h>
#include <wick/sdk/kernel.h>
#include <wick/optim.h>

/* ---- fused update ops (kernels.c) ---- */
extern wk_op *optim_op_sgd, *optim_op_adam, *optim_op_rmsprop, *optim_op_adagrad;
/* Declares the ops and registers their cpu kernels. */
wk_status optim_register_ops(void);

/* ---- optimizers (optimizer.c) ---- */
#define OPTIM_MAX_OPTS 24 /* options per group, scheduler entries included */
#define OPTIM_NAME_LEN 32 /* longest option name + 1 */
#define OPTIM_NBUF 3      /* state tensors per parameter */

typedef struct optim_entry {
  char name[OPTIM_NAME_LEN];
  double v;
} optim_entry;

typedef struct optim_group {
  int first, count; /* parameters [first, first + count) of the optimizer */
  int nopt;
  optim_entry o[OPTIM_MAX_OPTS];
} optim_group;

typedef struct optim_pstate {
  bool init;                  /* state exists (created on the first gradient) */
  double step;                /* steps taken (kinds with a "step" entry) */
  double aux;                 /* the kind's scalar state besides step (NAdam's mu_product) */
  wk_tensor *buf[OPTIM_NBUF]; /* the kind's buffers; NULL when absent */
} optim_pstate;

enum { OPTIM_SGD = 1, OPTIM_ADAM, OPTIM_ADAMW, OPTIM_RMSPROP, OPTIM_ADAGRAD, OPTIM_NADAM, OPTIM_RADAM, OPTIM_ADADELTA,
       OPTIM_ADAMAX };

/* A known option of a kind: its name, validation rule and PyTorch's message. */
typedef struct optdef {
  const char *name;
  int rule;
  const char *msg;
} optdef;

typedef struct wk_optimizer wk_optimizer;
/* An optimizer kind: its options, state buffers and update. */
typedef struct optim_kind {
  int id;
  const char *name;
  const optdef *defs;
  int ndefs;
  const char *const *bufs; /* names of buf[0..nbuf) in the state dict */
  int nbuf;
  bool has_step; /* the state holds a "step" count */
  wk_status (*update)(wk_optimizer *opt, const optim_group *g, int i, wk_tensor *grad);
  const char *aux; /* name of the scalar state pstate.aux in the state dict, or NULL */
} optim_kind;

struct wk_optimizer {
  const optim_kind *kind;
  optim_group defaults; /* the constructor's options (count unused) */
  int ngroups, capgroups;
  optim_group *groups;
  int nparams, capparams;
  wk_tensor **params;  /* retained */
  optim_pstate *state; /* one per parameter */
};

wk_optimizer *optim_sgd(wk_tensor *const *params, int n, const wk_sgd_opts *o, size_t osize);
wk_optimizer *optim_adam(wk_tensor *const *params, int n, const wk_adam_opts *o, size_t osize);
wk_optimizer *optim_adamw(wk_tensor *const *params, int n, const wk_adam_opts *o, size_t osize);
wk_optimizer *optim_rmsprop(wk_tensor *const *params, int n, const wk_rmsprop_opts *o, size_t osize);
wk_optimizer *optim_adagrad(wk_tensor *const *params, int n, const wk_adagrad_opts *o, size_t osize);
wk_optimizer *optim_nadam(wk_tensor *const *params, int n, const wk_nadam_opts *o, size_t osize);
wk_optimizer *optim_radam(wk_tensor *const *params, int n, const wk_radam_opts *o, size_t osize);
wk_optimizer *optim_adadelta(wk_tensor *const *params, int n, const wk_adadelta_opts *o, size_t osize);
wk_optimizer *optim_adamax(wk_tensor *const *params, int n, const wk_adamax_opts *o, size_t osize);
void optim_free(wk_optimizer *opt);
const char *optim_name(const wk_optimizer *opt);
wk_status optim_add_param_group(wk_optimizer *opt, wk_tensor *const *params, int n, const wk_optim_option *opts,
                                int nopts);
int optim_num_param_groups(const wk_optimizer *opt);
int optim_group_num_params(const wk_optimizer *opt, int group);
wk_tensor *optim_group_param(const wk_optimizer *opt, int group, int i);
wk_status optim_get_option(const wk_optimizer *opt, int group, const char *name, double *value);
wk_status optim_set_option(wk_optimizer *opt, int group, const char *name, double value);
wk_status optim_step(wk_optimizer *opt);
wk_status optim_zero_grad(wk_optimizer *opt, bool set_to_none);
wk_state_dict *optim_state_dict(const wk_optimizer *opt);
wk_status optim_load_state_dict(wk_optimizer *opt, const wk_state_dict *sd);

/* Shared by optimizer.c and optimizer_sd.c. */
wk_status optim_check_group(const optim_kind *k, optim_group *g);
void optim_state_clear(optim_pstate *st);
wk_status optim_eager_state(wk_optimizer *opt, const optim_group *g, int i);

/* For schedulers: the value slot of a group's option (NULL when absent), and
 * setting one without validation, adding it when absent. */
double *optim_opt_slot(wk_optimizer *opt, int group, const char *name);
wk_status optim_opt_put(wk_optimizer *opt, int group, const char *name, double v);
/* True when the optimizer kind has option `name` ("momentum", "beta1"). */
bool optim_kind_has(const wk_optimizer *opt, const char *name);

/* Temporaries created by service code belong to the caller's open scope (the
 * call depth is 0); state the optimizer keeps must leave it. */
static inline wk_tensor *optim_keep(wk_tensor *t) {
  return wk_scope_keep(t);
}
/* A 0-dim f64 tensor holding v, kept out of any scope (NULL on error). */
static inline wk_tensor *optim_scalar(double v) {
  return optim_keep(wk_scalar_tensor(v, WK_F64));
}
/* Reads a one-element tensor as double (error naming `key` otherwise). */
wk_status optim_read_scalar(const wk_state_dict *sd, const char *key, double *out, bool required);
/* Stores v under key as a 0-dim f64 tensor. */
wk_status optim_put_scalar(wk_state_dict *sd, const char *key, double v);

/* ---- schedulers (scheduler.c, scheduler_sd.c) ---- */
wk_lr_scheduler *sched_step_lr(wk_optimizer *opt, const wk_step_lr_opts *o, size_t osize);
wk_lr_scheduler *sched_multistep_lr(wk_optimizer *opt, const wk_multistep_lr_opts *o, size_t osize);
wk_lr_scheduler *sched_exponential_lr(wk_optimizer *opt, const wk_exponential_lr_opts *o, size_t osize);
wk_lr_scheduler *sched_cosine_annealing_lr(wk_optimizer *opt, const wk_cosine_annealing_lr_opts *o, size_t osize);
wk_lr_scheduler *sched_linear_lr(wk_optimizer *opt, const wk_linear_lr_opts *o, size_t osize);
wk_lr_scheduler *sched_one_cycle_lr(wk_optimizer *opt, const wk_one_cycle_lr_opts *o, size_t osize);
wk_lr_scheduler *sched_reduce_lr_on_plateau(wk_optimizer *opt, const wk_reduce_lr_on_plateau_opts *o, size_t osize);
wk_lr_scheduler *sched_chained(wk_lr_scheduler *const *scheds, int n);
wk_lr_scheduler *sched_sequential(wk_optimizer *opt, wk_lr_scheduler *const *scheds, int n, const int64_t *milestones,
                                  int nmilestones);
wk_lr_scheduler *sched_lambda_lr(wk_optimizer *opt, const wk_lambda_lr_opts *o, size_t osize);
wk_lr_scheduler *sched_multiplicative_lr(wk_optimizer *opt, const wk_lambda_lr_opts *o, size_t osize);
wk_lr_scheduler *sched_cyclic_lr(wk_optimizer *opt, const wk_cyclic_lr_opts *o, size_t osize);
wk_lr_scheduler *sched_swa_lr(wk_optimizer *opt, const wk_swa_lr_opts *o, size_t osize);
void sched_free(wk_lr_scheduler *s);
const char *sched_name(const wk_lr_scheduler *s);
wk_status sched_step(wk_lr_scheduler *s);
wk_status sched_step_metric(wk_lr_scheduler *s, double metric);
int sched_get_last_lr(const wk_lr_scheduler *s, double *out, int cap);
int64_t sched_last_epoch(const wk_lr_scheduler *s);
wk_state_dict *sched_state_dict(const wk_lr_scheduler *s);
wk_status sched_load_state_dict(wk_lr_scheduler *s, const wk_state_dict *sd);

/* ---- weight averaging (swa.c) ---- */
wk_averaged_model *optim_averaged_model_new(wk_module *copy, const wk_averaged_model_opts *o, size_t osize);
void optim_averaged_model_free(wk_averaged_model *am);
wk_module *optim_averaged_model_module(const wk_averaged_model *am);
wk_status optim_averaged_model_update(wk_averaged_model *am, wk_module *model);
int64_t optim_averaged_model_n_averaged(const wk_averaged_model *am);
wk_state_dict *optim_averaged_model_state_dict(const wk_averaged_model *am);
wk_status optim_averaged_model_load_state_dict(wk_averaged_model *am, const wk_state_dict *sd);
wk_status optim_update_bn(wk_dataloader *loader, wk_module *model, wk_device device);

/* ---- clipping (clip.c) ---- */
wk_tensor *optim_clip_grad_norm_(wk_tensor *const *params, int n, double max_norm, double norm_type,
                                 bool error_if_nonfinite);
wk_status optim_clip_grad_value_(wk_tensor *const *params, int n, double clip_value);

/* Copies an options struct of `osize` bytes into a zeroed `full`-byte one. */
static inline void optim_copy_opts(void *dst, size_t full, const void *src, size_t osize) {
  memset(dst, 0, full);
  if (src) memcpy(dst, src, osize < full ? osize : full);
}
/* Option value: `v` unless it is +0 (not given), then `def`. -0 is a literal zero. */
static inline double optim_or(double v, double def) {
  return (v == 0 && !signbit(v)) ? def : v;
}

#endif
