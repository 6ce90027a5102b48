/* Wick ABI: the optim service: optimizers (SGD, Adam, AdamW, RMSprop, Adagrad,
 * NAdam, RAdam, Adadelta, Adamax)
 * with parameter groups and state dicts, learning-rate schedulers, and
 * gradient clipping, with PyTorch 1.13's semantics. The optim plugin provides
 * the service; the inline wrappers below fetch it once and call it, so user
 * code never links the plugin. When the plugin is missing, every wrapper
 * returns NULL (or an error status) and the message names the service and the
 * plugin search path.
 *
 * Each parameter update is a fused per-parameter op ("optim.sgd_step_",
 * "optim.adam_step_", "optim.rmsprop_step_", "optim.adagrad_step_"; schemas
 * below) that step() calls under no_grad, so a backend plugin can register
 * its own kernel for those names and keep updates on its device.
 *
 * Options structs: a zero field means PyTorch's default (written next to each
 * field). To ask for a literal zero where the default is not zero, write
 * WK_OPTIM_ZERO (negative zero). */
#ifndef WICK_OPTIM_H
#define WICK_OPTIM_H

#include <math.h>
#include <stddef.h>
#include <wick/wick.h>

/* A literal zero for an option whose default is not zero: .weight_decay =
 * WK_OPTIM_ZERO gives AdamW without weight decay (0 would mean 1e-2). */
#define WK_OPTIM_ZERO (-0.0)

/* ---- handles ------------------------------------------------------------------------ */
typedef struct wk_optimizer wk_optimizer;       /* an optimizer over parameter groups */
typedef struct wk_lr_scheduler wk_lr_scheduler; /* a learning-rate scheduler */

/* ---- optimizer options ---------------------------------------------------------------- */
typedef struct wk_sgd_opts {
  double lr;           /* 0 -> 1e-3 (PyTorch >= 2.0's default; 1.13 requires it) */
  double momentum;     /* 0 -> 0 (no momentum buffer) */
  double dampening;    /* 0 -> 0 */
  double weight_decay; /* 0 -> 0 (L2 penalty added to the gradient) */
  bool nesterov;       /* false; needs momentum > 0 and dampening 0 */
  bool maximize;       /* false; true ascends the objective */
} wk_sgd_opts;

/* Adam and AdamW. AdamW decouples the weight decay (param *= 1 - lr * wd). */
typedef struct wk_adam_opts {
  double lr;           /* 0 -> 1e-3 */
  double beta1;        /* 0 -> 0.9; must lie in [0, 1) */
  double beta2;        /* 0 -> 0.999; must lie in [0, 1) */
  double eps;          /* 0 -> 1e-8 */
  double weight_decay; /* 0 -> 0 for Adam, 1e-2 for AdamW */
  bool amsgrad;        /* false */
  bool maximize;       /* false */
} wk_adam_opts;

typedef struct wk_rmsprop_opts {
  double lr;           /* 0 -> 1e-2 */
  double alpha;        /* 0 -> 0.99 (smoothing constant) */
  double eps;          /* 0 -> 1e-8 */
  double weight_decay; /* 0 -> 0 */
  double momentum;     /* 0 -> 0 */
  bool centered;       /* false; true normalises by the estimated variance */
  bool maximize;       /* false */
} wk_rmsprop_opts;

typedef struct wk_adagrad_opts {
  double lr;                        /* 0 -> 1e-2 */
  double lr_decay;                  /* 0 -> 0 */
  double weight_decay;              /* 0 -> 0 */
  double initial_accumulator_value; /* 0 -> 0 */
  double eps;                       /* 0 -> 1e-10 */
  bool maximize;                    /* false */
} wk_adagrad_opts;

/* NAdam: Adam with Nesterov momentum (PyTorch 2.x's options; the momentum
 * schedule mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay))). */
typedef struct wk_nadam_opts {
  double lr;                   /* 0 -> 2e-3 */
  double beta1;                /* 0 -> 0.9; in [0, 1) */
  double beta2;                /* 0 -> 0.999; in [0, 1) */
  double eps;                  /* 0 -> 1e-8 */
  double weight_decay;         /* 0 -> 0 */
  double momentum_decay;       /* 0 -> 4e-3 */
  bool decoupled_weight_decay; /* false; true: param *= 1 - lr * wd (NAdamW) */
  bool maximize;               /* false */
} wk_nadam_opts;

/* RAdam: Adam with the variance rectification (plain momentum steps while
 * rho_t <= 5). */
typedef struct wk_radam_opts {
  double lr;                   /* 0 -> 1e-3 */
  double beta1;                /* 0 -> 0.9 */
  double beta2;                /* 0 -> 0.999 */
  double eps;                  /* 0 -> 1e-8 */
  double weight_decay;         /* 0 -> 0 */
  bool decoupled_weight_decay; /* false; true: param *= 1 - lr * wd */
  bool maximize;               /* false */
} wk_radam_opts;

typedef struct wk_adadelta_opts {
  double lr;           /* 0 -> 1.0 */
  double rho;          /* 0 -> 0.9; in [0, 1] (WK_OPTIM_ZERO for 0) */
  double eps;          /* 0 -> 1e-6 */
  double weight_decay; /* 0 -> 0 */
  bool maximize;       /* false */
} wk_adadelta_opts;

/* Adamax: Adam with the infinity norm (exp_inf = max(beta2 * exp_inf, |g| + eps)). */
typedef struct wk_adamax_opts {
  double lr;           /* 0 -> 2e-3 */
  double beta1;        /* 0 -> 0.9 */
  double beta2;        /* 0 -> 0.999 */
  double eps;          /* 0 -> 1e-8 */
  double weight_decay; /* 0 -> 0 */
  bool maximize;       /* false */
} wk_adamax_opts;

/* One option of a parameter group, by name, as in PyTorch's param_groups
 * dicts. Names: "lr", "weight_decay", "maximize" (all); SGD: "momentum",
 * "dampening", "nesterov"; Adam/AdamW: "beta1", "beta2", "eps", "amsgrad";
 * RMSprop: "alpha", "eps", "momentum", "centered"; Adagrad: "lr_decay", "eps",
 * "initial_accumulator_value". Booleans are 0 or 1. Schedulers add
 * "initial_lr" (and OneCycleLR "max_lr", "min_lr", "max_momentum",
 * "base_momentum"). */
typedef struct wk_optim_option {
  const char *name;
  double value;
} wk_optim_option;

/* ---- scheduler options --------------------------------------------------------------- */
/* StepLR: lr *= gamma every step_size epochs. */
typedef struct wk_step_lr_opts {
  int64_t step_size; /* required, > 0 */
  double gamma;      /* 0 -> 0.1 */
} wk_step_lr_opts;

/* MultiStepLR: lr *= gamma at each milestone (borrowed, copied). */
typedef struct wk_multistep_lr_opts {
  const int64_t *milestones; /* increasing epoch indices; repeats decay twice */
  int nmilestones;
  double gamma; /* 0 -> 0.1 */
} wk_multistep_lr_opts;

/* ExponentialLR: lr *= gamma every epoch. */
typedef struct wk_exponential_lr_opts {
  double gamma; /* required (WK_OPTIM_ZERO for a literal 0) */
} wk_exponential_lr_opts;

/* CosineAnnealingLR (the recursive form, as PyTorch's step()). */
typedef struct wk_cosine_annealing_lr_opts {
  int64_t T_max;  /* required, > 0 */
  double eta_min; /* 0 -> 0 */
} wk_cosine_annealing_lr_opts;

/* LinearLR: multiplies the lr by a factor moving linearly from start_factor
 * to end_factor over total_iters epochs (warm-up). */
typedef struct wk_linear_lr_opts {
  double start_factor; /* 0 -> 1/3; in (0, 1] */
  double end_factor;   /* 0 -> 1.0; in [0, 1] */
  int64_t total_iters; /* 0 -> 5 */
} wk_linear_lr_opts;

enum { WK_ANNEAL_COS = 0, WK_ANNEAL_LINEAR = 1 };

/* OneCycleLR. Give total_steps, or epochs and steps_per_epoch. */
typedef struct wk_one_cycle_lr_opts {
  double max_lr;           /* required: the peak lr of every group */
  int64_t total_steps;     /* 0 -> epochs * steps_per_epoch */
  int64_t epochs;          /* used when total_steps is 0 */
  int64_t steps_per_epoch; /* used when total_steps is 0 */
  double pct_start;        /* 0 -> 0.3 (WK_OPTIM_ZERO for 0) */
  int anneal_strategy;     /* WK_ANNEAL_COS (default) or WK_ANNEAL_LINEAR */
  bool no_cycle_momentum;  /* false: cycle momentum / beta1 (PyTorch's cycle_momentum=True) */
  double base_momentum;    /* 0 -> 0.85 */
  double max_momentum;     /* 0 -> 0.95 */
  double div_factor;       /* 0 -> 25: initial_lr = max_lr / div_factor */
  double final_div_factor; /* 0 -> 1e4: min_lr = initial_lr / final_div_factor */
  bool three_phase;        /* false */
} wk_one_cycle_lr_opts;

enum { WK_PLATEAU_MIN = 0, WK_PLATEAU_MAX = 1 };
enum { WK_THRESHOLD_REL = 0, WK_THRESHOLD_ABS = 1 };

/* ReduceLROnPlateau: stepped with a metric (wk_lr_scheduler_step_metric). */
typedef struct wk_reduce_lr_on_plateau_opts {
  int mode;           /* WK_PLATEAU_MIN (default) or WK_PLATEAU_MAX */
  double factor;      /* 0 -> 0.1; must be < 1 */
  double patience;    /* 0 -> 10 epochs (WK_OPTIM_ZERO for 0); whole numbers */
  double threshold;   /* 0 -> 1e-4 (WK_OPTIM_ZERO for 0) */
  int threshold_mode; /* WK_THRESHOLD_REL (default) or WK_THRESHOLD_ABS */
  int64_t cooldown;   /* 0 -> 0 */
  double min_lr;      /* 0 -> 0 (every group) */
  double eps;         /* 0 -> 1e-8: smaller lr changes are ignored */
} wk_reduce_lr_on_plateau_opts;

/* LambdaLR / MultiplicativeLR: a C callback gives the factor of group
 * `group` at epoch `epoch` (PyTorch's lr_lambda; one function serves every
 * group, told which). Returning NaN fails the step with an error. */
typedef double (*wk_lr_lambda_fn)(int64_t epoch, int group, void *user);
typedef struct wk_lambda_lr_opts {
  wk_lr_lambda_fn lr_lambda; /* required */
  void *user;                /* handed back to lr_lambda (borrowed: must outlive the scheduler) */
} wk_lambda_lr_opts;

enum { WK_CYCLIC_TRIANGULAR = 0, WK_CYCLIC_TRIANGULAR2 = 1, WK_CYCLIC_EXP_RANGE = 2 };

/* CyclicLR (PyTorch's, stepped per batch): the lr cycles between base_lr and
 * max_lr (the same for every group); momentum (or Adam's beta1) cycles the
 * other way between max_momentum and base_momentum. */
typedef struct wk_cyclic_lr_opts {
  double base_lr;          /* required (WK_OPTIM_ZERO for 0): sets every group's lr */
  double max_lr;           /* required */
  int64_t step_size_up;    /* 0 -> 2000 iterations */
  int64_t step_size_down;  /* 0 -> step_size_up */
  int mode;                /* WK_CYCLIC_TRIANGULAR (default), WK_CYCLIC_TRIANGULAR2, WK_CYCLIC_EXP_RANGE */
  double gamma;            /* 0 -> 1.0 (exp_range: scale gamma^iterations) */
  double (*scale_fn)(double x, void *user); /* (optional) replaces the mode's scale */
  void *scale_user;                         /* handed back to scale_fn */
  bool scale_by_iterations;                 /* with scale_fn: x is the iteration ('iterations'), else the cycle */
  bool no_cycle_momentum;  /* false: cycle momentum (PyTorch's cycle_momentum=True) */
  double base_momentum;    /* 0 -> 0.8 */
  double max_momentum;     /* 0 -> 0.9 */
} wk_cyclic_lr_opts;

/* ---- weight averaging (torch.optim.swa_utils) ---------------------------------------- */
typedef struct wk_averaged_model wk_averaged_model; /* AveragedModel */
typedef struct wk_module wk_module;                 /* <wick/module.h> */
typedef struct wk_dataloader wk_dataloader;         /* <wick/data.h> */
enum { WK_AVERAGE_SWA = 0, WK_AVERAGE_EMA = 1 };
/* A custom average (PyTorch's avg_fn): the new value of `averaged` from the
 * model's `current` after num_averaged earlier updates; returns a new
 * reference (NULL with an error fails the update). Both are borrowed. */
typedef wk_tensor *(*wk_avg_fn)(wk_tensor *averaged, wk_tensor *current, int64_t num_averaged, void *user);
typedef struct wk_averaged_model_opts {
  int strategy;     /* WK_AVERAGE_SWA (default): avg + (cur - avg) / (n + 1), the equal average;
                       WK_AVERAGE_EMA: decay * avg + (1 - decay) * cur */
  double decay;     /* EMA: 0 -> 0.999; in [0, 1] */
  wk_avg_fn avg_fn; /* (optional) replaces the strategy */
  void *user;       /* handed back to avg_fn */
  bool use_buffers; /* false: buffers are copied from the model at each update (PyTorch 2.x);
                       true: averaged with the parameters */
} wk_averaged_model_opts;

/* SWALR: anneals each group's lr to swa_lr over anneal_epochs steps (cos or
 * linear), then holds it (torch.optim.swa_utils.SWALR). */
typedef struct wk_swa_lr_opts {
  double swa_lr;          /* required (WK_OPTIM_ZERO for 0): every group's "swa_lr" */
  int64_t anneal_epochs;  /* 0 -> 10; WK_SWALR_NO_ANNEAL for 0 (jump to swa_lr) */
  int anneal_strategy;    /* WK_ANNEAL_COS (default) or WK_ANNEAL_LINEAR */
} wk_swa_lr_opts;
#define WK_SWALR_NO_ANNEAL (-1)

/* ---- the service interface (append-only) ------------------------------------------ */
#define WK_OPTIM_SERVICE "optim"
#define WK_OPTIM_API_VERSION 1u

/* Version 1. Options structs are passed with their size, so a newer header's
 * larger struct works with an older plugin (the tail is ignored) and an older
 * header's smaller struct with a newer one (the missing tail means defaults).
 * Contracts are on the wrappers below. */
typedef struct wk_optim_api {
  size_t struct_size;
  /* optimizers */
  wk_optimizer *(*sgd)(wk_tensor *const *params, int n, const wk_sgd_opts *o, size_t osize);
  wk_optimizer *(*adam)(wk_tensor *const *params, int n, const wk_adam_opts *o, size_t osize);
  wk_optimizer *(*adamw)(wk_tensor *const *params, int n, const wk_adam_opts *o, size_t osize);
  wk_optimizer *(*rmsprop)(wk_tensor *const *params, int n, const wk_rmsprop_opts *o, size_t osize);
  wk_optimizer *(*adagrad)(wk_tensor *const *params, int n, const wk_adagrad_opts *o, size_t osize);
  void (*optimizer_free)(wk_optimizer *opt);
  const char *(*optimizer_name)(const wk_optimizer *opt);
  wk_status (*add_param_group)(wk_optimizer *opt, wk_tensor *const *params, int n, const wk_optim_option *opts,
                               int nopts);
  int (*num_param_groups)(const wk_optimizer *opt);
  int (*group_num_params)(const wk_optimizer *opt, int group);
  wk_tensor *(*group_param)(const wk_optimizer *opt, int group, int i);
  wk_status (*get_option)(const wk_optimizer *opt, int group, const char *name, double *value);
  wk_status (*set_option)(wk_optimizer *opt, int group, const char *name, double value);
  wk_status (*step)(wk_optimizer *opt);
  wk_status (*zero_grad)(wk_optimizer *opt, bool set_to_none);
  wk_state_dict *(*state_dict)(const wk_optimizer *opt);
  wk_status (*load_state_dict)(wk_optimizer *opt, const wk_state_dict *sd);
  /* schedulers */
  wk_lr_scheduler *(*step_lr)(wk_optimizer *opt, const wk_step_lr_opts *o, size_t osize);
  wk_lr_scheduler *(*multistep_lr)(wk_optimizer *opt, const wk_multistep_lr_opts *o, size_t osize);
  wk_lr_scheduler *(*exponential_lr)(wk_optimizer *opt, const wk_exponential_lr_opts *o, size_t osize);
  wk_lr_scheduler *(*cosine_annealing_lr)(wk_optimizer *opt, const wk_cosine_annealing_lr_opts *o, size_t osize);
  wk_lr_scheduler *(*linear_lr)(wk_optimizer *opt, const wk_linear_lr_opts *o, size_t osize);
  wk_lr_scheduler *(*one_cycle_lr)(wk_optimizer *opt, const wk_one_cycle_lr_opts *o, size_t osize);
  wk_lr_scheduler *(*reduce_lr_on_plateau)(wk_optimizer *opt, const wk_reduce_lr_on_plateau_opts *o, size_t osize);
  wk_lr_scheduler *(*chained)(wk_lr_scheduler *const *scheds, int n);
  wk_lr_scheduler *(*sequential)(wk_optimizer *opt, wk_lr_scheduler *const *scheds, int n, const int64_t *milestones,
                                 int nmilestones);
  void (*scheduler_free)(wk_lr_scheduler *s);
  const char *(*scheduler_name)(const wk_lr_scheduler *s);
  wk_status (*scheduler_step)(wk_lr_scheduler *s);
  wk_status (*scheduler_step_metric)(wk_lr_scheduler *s, double metric);
  int (*scheduler_get_last_lr)(const wk_lr_scheduler *s, double *out, int cap);
  int64_t (*scheduler_last_epoch)(const wk_lr_scheduler *s);
  wk_state_dict *(*scheduler_state_dict)(const wk_lr_scheduler *s);
  wk_status (*scheduler_load_state_dict)(wk_lr_scheduler *s, const wk_state_dict *sd);
  /* gradient clipping */
  wk_tensor *(*clip_grad_norm_)(wk_tensor *const *params, int n, double max_norm, double norm_type,
                                bool error_if_nonfinite);
  wk_status (*clip_grad_value_)(wk_tensor *const *params, int n, double clip_value);
  /* ---- appended after the first release (the wrappers check struct_size) ---- */
  wk_optimizer *(*nadam)(wk_tensor *const *params, int n, const wk_nadam_opts *o, size_t osize);
  wk_optimizer *(*radam)(wk_tensor *const *params, int n, const wk_radam_opts *o, size_t osize);
  wk_optimizer *(*adadelta)(wk_tensor *const *params, int n, const wk_adadelta_opts *o, size_t osize);
  wk_optimizer *(*adamax)(wk_tensor *const *params, int n, const wk_adamax_opts *o, size_t osize);
  wk_lr_scheduler *(*lambda_lr)(wk_optimizer *opt, const wk_lambda_lr_opts *o, size_t osize);
  wk_lr_scheduler *(*multiplicative_lr)(wk_optimizer *opt, const wk_lambda_lr_opts *o, size_t osize);
  wk_lr_scheduler *(*cyclic_lr)(wk_optimizer *opt, const wk_cyclic_lr_opts *o, size_t osize);
  wk_averaged_model *(*averaged_model_new)(wk_module *copy, const wk_averaged_model_opts *o, size_t osize);
  void (*averaged_model_free)(wk_averaged_model *am);
  wk_module *(*averaged_model_module)(const wk_averaged_model *am);
  wk_status (*averaged_model_update)(wk_averaged_model *am, wk_module *model);
  int64_t (*averaged_model_n_averaged)(const wk_averaged_model *am);
  wk_state_dict *(*averaged_model_state_dict)(const wk_averaged_model *am);
  wk_status (*averaged_model_load_state_dict)(wk_averaged_model *am, const wk_state_dict *sd);
  wk_status (*update_bn)(wk_dataloader *loader, wk_module *model, wk_device device);
  wk_lr_scheduler *(*swa_lr)(wk_optimizer *opt, const wk_swa_lr_opts *o, size_t osize);
} wk_optim_api;

/* ---- wrappers ------------------------------------------------------------------------------ */
/* The service table (borrowed, lives forever), fetched once per translation
 * unit; NULL with WK_ERR_NOT_FOUND naming the service and the plugin search
 * path when the optim plugin is not loaded. */
static inline const wk_optim_api *wk_optim_api_get(void) {
  static const wk_optim_api *api_cache; /* filled on first use, maybe by several threads at once */
  const wk_optim_api *api = __atomic_load_n(&api_cache, __ATOMIC_ACQUIRE);
  if (!api) __atomic_store_n(&api_cache, api = (const wk_optim_api *)wk_service_get(WK_OPTIM_SERVICE, WK_OPTIM_API_VERSION), __ATOMIC_RELEASE);
  return api;
}
/* True when the service table has slot `field` (an older plugin may lack it). */
#define WK__OPTIM_HAS(api, field) \
  ((api) && (api)->struct_size >= offsetof(wk_optim_api, field) + sizeof((api)->field) && (api)->field)
static inline wk_status wk__optim_missing(const char *what) {
  if (wk_last_error() != WK_OK) return wk_last_error();
  return wk_error(WK_ERR_UNSUPPORTED, "%s: the loaded optim plugin is too old to provide it", what);
}
#define WK__OPTIM_CALL_PTR(field, ...)           \
  do {                                           \
    const wk_optim_api *a_ = wk_optim_api_get(); \
    if (!WK__OPTIM_HAS(a_, field)) {             \
      if (a_) wk__optim_missing(#field);         \
      return NULL;                               \
    }                                            \
    return a_->field(__VA_ARGS__);               \
  } while (0)
#define WK__OPTIM_CALL_STATUS(field, ...)                                                   \
  do {                                                                                      \
    const wk_optim_api *a_ = wk_optim_api_get();                                            \
    if (!WK__OPTIM_HAS(a_, field)) return a_ ? wk__optim_missing(#field) : wk_last_error(); \
    return a_->field(__VA_ARGS__);                                                          \
  } while (0)

/* ---- optimizers ---- */
/* Create an optimizer over params[0..n) (one parameter group with options o).
 * Each parameter must be a floating-point leaf, appear once, and is retained
 * (the optimizer holds a reference until wk_optimizer_free). Returns a new
 * optimizer (free with wk_optimizer_free), or NULL with the error recorded:
 * invalid options ("Invalid learning rate: -1"), NULL params, duplicates. */
static inline wk_optimizer *wk_optim_sgd(wk_tensor *const *params, int n, wk_sgd_opts o) {
  WK__OPTIM_CALL_PTR(sgd, params, n, &o, sizeof o);
}
static inline wk_optimizer *wk_optim_adam(wk_tensor *const *params, int n, wk_adam_opts o) {
  WK__OPTIM_CALL_PTR(adam, params, n, &o, sizeof o);
}
static inline wk_optimizer *wk_optim_adamw(wk_tensor *const *params, int n, wk_adam_opts o) {
  WK__OPTIM_CALL_PTR(adamw, params, n, &o, sizeof o);
}
static inline wk_optimizer *wk_optim_rmsprop(wk_tensor *const *params, int n, wk_rmsprop_opts o) {
  WK__OPTIM_CALL_PTR(rmsprop, params, n, &o, sizeof o);
}
static inline wk_optimizer *wk_optim_adagrad(wk_tensor *const *params, int n, wk_adagrad_opts o) {
  WK__OPTIM_CALL_PTR(adagrad, params, n, &o, sizeof o);
}
/* NAdam, RAdam, Adadelta and Adamax (same contract). Their updates are
 * PyTorch's single-tensor algorithms written with standard ops (no fused
 * op), so they run on any device; state buffers: "exp_avg", "exp_avg_sq" and
 * the scalar "mu_product" (NAdam, rounded to float32 as PyTorch's tensor);
 * "exp_avg", "exp_avg_sq" (RAdam); "square_avg", "acc_delta" (Adadelta);
 * "exp_avg", "exp_inf" (Adamax); all keep "step". Group options: their
 * struct's field names ("momentum_decay", "decoupled_weight_decay", "rho"). */
static inline wk_optimizer *wk_optim_nadam(wk_tensor *const *params, int n, wk_nadam_opts o) {
  WK__OPTIM_CALL_PTR(nadam, params, n, &o, sizeof o);
}
static inline wk_optimizer *wk_optim_radam(wk_tensor *const *params, int n, wk_radam_opts o) {
  WK__OPTIM_CALL_PTR(radam, params, n, &o, sizeof o);
}
static inline wk_optimizer *wk_optim_adadelta(wk_tensor *const *params, int n, wk_adadelta_opts o) {
  WK__OPTIM_CALL_PTR(adadelta, params, n, &o, sizeof o);
}
static inline wk_optimizer *wk_optim_adamax(wk_tensor *const *params, int n, wk_adamax_opts o) {
  WK__OPTIM_CALL_PTR(adamax, params, n, &o, sizeof o);
}
/* Frees the optimizer, its state, and its references to the parameters.
 * Schedulers attached to it must be freed first. NULL does nothing. */
static inline void wk_optimizer_free(wk_optimizer *opt) {
  if (!opt) return;
  const wk_optim_api *a = wk_optim_api_get();
  if (a) a->optimizer_free(opt);
}
/* "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "NAdam", "RAdam", "Adadelta"
 * or "Adamax" (static); NULL for NULL. */
static inline const char *wk_optimizer_name(const wk_optimizer *opt) {
  if (!opt) return NULL;
  WK__OPTIM_CALL_PTR(optimizer_name, opt);
}
/* add_param_group: appends a group over params[0..n) (retained). Options not
 * named in opts[0..nopts) take the optimizer's defaults (its constructor's
 * options), as in PyTorch; unknown names and invalid values are errors, and
 * so is a parameter already in a group. */
static inline wk_status wk_optim_add_param_group(wk_optimizer *opt, wk_tensor *const *params, int n,
                                                 const wk_optim_option *opts, int nopts) {
  WK__OPTIM_CALL_STATUS(add_param_group, opt, params, n, opts, nopts);
}
/* Number of parameter groups (0 for NULL). */
static inline int wk_optim_num_param_groups(const wk_optimizer *opt) {
  const wk_optim_api *a = opt ? wk_optim_api_get() : NULL;
  return a ? a->num_param_groups(opt) : 0;
}
/* Number of parameters in a group (-1 with an error for a bad group). */
static inline int wk_optim_group_num_params(const wk_optimizer *opt, int group) {
  const wk_optim_api *a = wk_optim_api_get();
  return a ? a->group_num_params(opt, group) : -1;
}
/* The i-th parameter of a group (borrowed), or NULL with an error. */
static inline wk_tensor *wk_optim_group_param(const wk_optimizer *opt, int group, int i) {
  WK__OPTIM_CALL_PTR(group_param, opt, group, i);
}
/* Reads option `name` of a group into *value (see wk_optim_option). */
static inline wk_status wk_optim_get_option(const wk_optimizer *opt, int group, const char *name, double *value) {
  WK__OPTIM_CALL_STATUS(get_option, opt, group, name, value);
}
/* Sets option `name` of a group (validated like the constructor's). */
static inline wk_status wk_optim_set_option(wk_optimizer *opt, int group, const char *name, double value) {
  WK__OPTIM_CALL_STATUS(set_option, opt, group, name, value);
}
/* The lr of a group (NAN with an error for a bad group). */
static inline double wk_optim_get_lr(const wk_optimizer *opt, int group) {
  double v = NAN;
  return wk_optim_get_option(opt, group, "lr", &v) == WK_OK ? v : NAN;
}
/* optimizer.step(): one fused update op per parameter that has a .grad,
 * under no_grad; parameters without a gradient are skipped (their state is
 * not created or advanced), as in PyTorch. */
static inline wk_status wk_optim_step(wk_optimizer *opt) {
  WK__OPTIM_CALL_STATUS(step, opt);
}
/* optimizer.zero_grad(set_to_none): drops every parameter's .grad when
 * set_to_none, else zeroes it in place (PyTorch 1.13's default is false). */
static inline wk_status wk_optim_zero_grad(wk_optimizer *opt, bool set_to_none) {
  WK__OPTIM_CALL_STATUS(zero_grad, opt, set_to_none);
}
/* optimizer.state_dict(): returns a new dict (free with wk_state_dict_free):
 *   "state.<i>.<buffer>"       per-parameter state (only for parameters that
 *                              have some), i counting parameters across groups
 *                              in order; "step" (0-dim f64), and the buffers
 *                              "momentum_buffer" (SGD, RMSprop), "exp_avg",
 *                              "exp_avg_sq", "max_exp_avg_sq" (Adam, AdamW),
 *                              "square_avg", "grad_avg" (RMSprop), "sum"
 *                              (Adagrad): the optimizer's live tensors, as in
 *                              PyTorch (later steps change them; clone them to
 *                              keep a snapshot);
 *   "param_groups.<g>.<option>" 0-dim f64, one per group option;
 *   "param_groups.<g>.params"  1-D i64: the parameter indices of group g;
 * and metadata "optimizer" = wk_optimizer_name(). */
static inline wk_state_dict *wk_optim_state_dict(const wk_optimizer *opt) {
  WK__OPTIM_CALL_PTR(state_dict, opt);
}
/* optimizer.load_state_dict(sd) (sd borrowed): the group layout must match
 * (same number of groups and parameters per group, same shapes); options and
 * state are copied (cast to each parameter's dtype and device). On error
 * nothing changes. */
static inline wk_status wk_optim_load_state_dict(wk_optimizer *opt, const wk_state_dict *sd) {
  WK__OPTIM_CALL_STATUS(load_state_dict, opt, sd);
}

/* ---- learning-rate schedulers ---- */
/* Each constructor attaches to opt (borrowed: it must outlive the scheduler),
 * records every group's "initial_lr" (kept when present) and takes the
 * initial step, as PyTorch's constructors do. Returns a new scheduler (free
 * with wk_lr_scheduler_free) or NULL with the error recorded. */
static inline wk_lr_scheduler *wk_lr_step(wk_optimizer *opt, wk_step_lr_opts o) {
  WK__OPTIM_CALL_PTR(step_lr, opt, &o, sizeof o);
}
static inline wk_lr_scheduler *wk_lr_multistep(wk_optimizer *opt, wk_multistep_lr_opts o) {
  WK__OPTIM_CALL_PTR(multistep_lr, opt, &o, sizeof o);
}
static inline wk_lr_scheduler *wk_lr_exponential(wk_optimizer *opt, wk_exponential_lr_opts o) {
  WK__OPTIM_CALL_PTR(exponential_lr, opt, &o, sizeof o);
}
static inline wk_lr_scheduler *wk_lr_cosine_annealing(wk_optimizer *opt, wk_cosine_annealing_lr_opts o) {
  WK__OPTIM_CALL_PTR(cosine_annealing_lr, opt, &o, sizeof o);
}
static inline wk_lr_scheduler *wk_lr_linear(wk_optimizer *opt, wk_linear_lr_opts o) {
  WK__OPTIM_CALL_PTR(linear_lr, opt, &o, sizeof o);
}
/* Also sets the groups' "max_lr", "min_lr" and, when cycling momentum,
 * "max_momentum"/"base_momentum" and the momentum (SGD, RMSprop) or beta1
 * (Adam, AdamW); Adagrad needs no_cycle_momentum. Stepping past total_steps
 * is an error. */
static inline wk_lr_scheduler *wk_lr_one_cycle(wk_optimizer *opt, wk_one_cycle_lr_opts o) {
  WK__OPTIM_CALL_PTR(one_cycle_lr, opt, &o, sizeof o);
}
/* LambdaLR: lr = initial_lr * lr_lambda(epoch, group). */
static inline wk_lr_scheduler *wk_lr_lambda(wk_optimizer *opt, wk_lambda_lr_opts o) {
  WK__OPTIM_CALL_PTR(lambda_lr, opt, &o, sizeof o);
}
/* MultiplicativeLR: lr *= lr_lambda(epoch, group) at every epoch after the first. */
static inline wk_lr_scheduler *wk_lr_multiplicative(wk_optimizer *opt, wk_lambda_lr_opts o) {
  WK__OPTIM_CALL_PTR(multiplicative_lr, opt, &o, sizeof o);
}
/* CyclicLR: sets every group's lr to base_lr (and momentum/beta1 to
 * base_momentum when cycling it) before the initial step; step it after
 * every batch. Cycling momentum needs an optimizer with "momentum" or
 * "beta1". */
static inline wk_lr_scheduler *wk_lr_cyclic(wk_optimizer *opt, wk_cyclic_lr_opts o) {
  WK__OPTIM_CALL_PTR(cyclic_lr, opt, &o, sizeof o);
}
/* Takes no initial step; step it with wk_lr_scheduler_step_metric. */
static inline wk_lr_scheduler *wk_lr_reduce_on_plateau(wk_optimizer *opt, wk_reduce_lr_on_plateau_opts o) {
  WK__OPTIM_CALL_PTR(reduce_lr_on_plateau, opt, &o, sizeof o);
}
/* ChainedScheduler: each step() steps every scheduler in order. Takes
 * ownership of scheds[0..n) in every case (they are freed with the chain, or
 * at once on error); all must drive the same optimizer. ReduceLROnPlateau
 * cannot be chained. */
static inline wk_lr_scheduler *wk_lr_chained(wk_lr_scheduler *const *scheds, int n) {
  WK__OPTIM_CALL_PTR(chained, scheds, n);
}
/* SequentialLR: scheds[i] runs from milestones[i-1] (nmilestones == n - 1).
 * Takes ownership of scheds[0..n) in every case, like wk_lr_chained. */
static inline wk_lr_scheduler *wk_lr_sequential(wk_optimizer *opt, wk_lr_scheduler *const *scheds, int n,
                                                const int64_t *milestones, int nmilestones) {
  WK__OPTIM_CALL_PTR(sequential, opt, scheds, n, milestones, nmilestones);
}
/* Frees a scheduler (and the schedulers it owns). NULL does nothing. */
static inline void wk_lr_scheduler_free(wk_lr_scheduler *s) {
  if (!s) return;
  const wk_optim_api *a = wk_optim_api_get();
  if (a) a->scheduler_free(s);
}
/* "StepLR", "OneCycleLR", ... (static); NULL for NULL. */
static inline const char *wk_lr_scheduler_name(const wk_lr_scheduler *s) {
  if (!s) return NULL;
  WK__OPTIM_CALL_PTR(scheduler_name, s);
}
/* scheduler.step(): advances one epoch and sets every group's lr. */
static inline wk_status wk_lr_scheduler_step(wk_lr_scheduler *s) {
  WK__OPTIM_CALL_STATUS(scheduler_step, s);
}
/* ReduceLROnPlateau's step(metric). */
static inline wk_status wk_lr_scheduler_step_metric(wk_lr_scheduler *s, double metric) {
  WK__OPTIM_CALL_STATUS(scheduler_step_metric, s, metric);
}
/* get_last_lr(): writes min(cap, groups) lrs to out and returns the number of
 * groups, or -1 with an error. */
static inline int wk_lr_scheduler_get_last_lr(const wk_lr_scheduler *s, double *out, int cap) {
  const wk_optim_api *a = wk_optim_api_get();
  return a ? a->scheduler_get_last_lr(s, out, cap) : -1;
}
/* last_epoch (-1 with an error for NULL). */
static inline int64_t wk_lr_scheduler_last_epoch(const wk_lr_scheduler *s) {
  const wk_optim_api *a = wk_optim_api_get();
  return a ? a->scheduler_last_epoch(s) : -1;
}
/* scheduler.state_dict(): a new dict (free with wk_state_dict_free) of 0-dim
 * f64 values: "last_epoch", "_step_count", "base_lrs.<g>", "_last_lr.<g>",
 * the scheduler's settings, and for chains "_schedulers.<i>.<key>"; metadata
 * "scheduler" = its name. */
static inline wk_state_dict *wk_lr_scheduler_state_dict(const wk_lr_scheduler *s) {
  WK__OPTIM_CALL_PTR(scheduler_state_dict, s);
}
/* scheduler.load_state_dict(sd) (borrowed): restores counters and settings of
 * a scheduler of the same kind (and chain layout). */
static inline wk_status wk_lr_scheduler_load_state_dict(wk_lr_scheduler *s, const wk_state_dict *sd) {
  WK__OPTIM_CALL_STATUS(scheduler_load_state_dict, s, sd);
}

/* ---- weight averaging ---- */
/* AveragedModel(model): `copy` is a module of the model's structure (built
 * the same way: C has no deepcopy), retained; the first update copies the
 * model's values into it, later ones average. Forward through
 * wk_averaged_model_module(). Returns a new object (free with
 * wk_averaged_model_free) or NULL with an error. */
static inline wk_averaged_model *wk_averaged_model_new(wk_module *copy, wk_averaged_model_opts o) {
  WK__OPTIM_CALL_PTR(averaged_model_new, copy, &o, sizeof o);
}
/* Releases the copy's reference and frees am. NULL does nothing. */
static inline void wk_averaged_model_free(wk_averaged_model *am) {
  const wk_optim_api *a = am ? wk_optim_api_get() : NULL;
  if (WK__OPTIM_HAS(a, averaged_model_free)) a->averaged_model_free(am);
}
/* The averaged module (borrowed, lives as long as am). */
static inline wk_module *wk_averaged_model_module(const wk_averaged_model *am) {
  WK__OPTIM_CALL_PTR(averaged_model_module, am);
}
/* update_parameters(model): parameters (and buffers with use_buffers) by
 * position, shapes checked first (on error nothing changes); n_averaged += 1. */
static inline wk_status wk_averaged_model_update(wk_averaged_model *am, wk_module *model) {
  WK__OPTIM_CALL_STATUS(averaged_model_update, am, model);
}
/* Updates so far (-1 with an error for NULL). */
static inline int64_t wk_averaged_model_n_averaged(const wk_averaged_model *am) {
  const wk_optim_api *a = wk_optim_api_get();
  if (!WK__OPTIM_HAS(a, averaged_model_n_averaged)) return a ? (wk__optim_missing("averaged_model_n_averaged"), -1) : -1;
  return a->averaged_model_n_averaged(am);
}
/* state_dict(): "module.<name>" for the copy's entries and "n_averaged"
 * (0-dim int64), PyTorch's keys; a new dict. */
static inline wk_state_dict *wk_averaged_model_state_dict(const wk_averaged_model *am) {
  WK__OPTIM_CALL_PTR(averaged_model_state_dict, am);
}
/* load_state_dict(sd) (borrowed), strict about the copy's keys. */
static inline wk_status wk_averaged_model_load_state_dict(wk_averaged_model *am, const wk_state_dict *sd) {
  WK__OPTIM_CALL_STATUS(averaged_model_load_state_dict, am, sd);
}
/* torch.optim.swa_utils.update_bn(loader, model, device): resets the running
 * statistics of every BatchNorm module under model and recomputes them over
 * one pass of loader (field 0 of each batch, moved to `device` unless its
 * type is WK_DEVICE_DEFAULT) as cumulative averages (momentum=None), in
 * training mode under no_grad; restores the mode. A model without BatchNorm
 * is left alone. */
static inline wk_status wk_update_bn(wk_dataloader *loader, wk_module *model, wk_device device) {
  WK__OPTIM_CALL_STATUS(update_bn, loader, model, device);
}

/* SWALR(optimizer, swa_lr, anneal_epochs, anneal_strategy): sets every
 * group's "swa_lr" and takes the initial step, as PyTorch's constructor. */
static inline wk_lr_scheduler *wk_lr_swa(wk_optimizer *opt, wk_swa_lr_opts o) {
  WK__OPTIM_CALL_PTR(swa_lr, opt, &o, sizeof o);
}

/* ---- gradient clipping ---- */
/* torch.nn.utils.clip_grad_norm_: the norm of order norm_type (INFINITY for
 * the max norm) of all .grads together; when it exceeds max_norm every grad is
 * scaled in place by max_norm / (norm + 1e-6). Parameters without a .grad are
 * skipped. Returns the total norm as a new 0-dim tensor (0 when no parameter
 * has a grad), or NULL with an error (also for a non-finite norm when
 * error_if_nonfinite). */
static inline wk_tensor *wk_clip_grad_norm_(wk_tensor *const *params, int n, double max_norm, double norm_type,
                                            bool error_if_nonfinite) {
  WK__OPTIM_CALL_PTR(clip_grad_norm_, params, n, max_norm, norm_type, error_if_nonfinite);
}
/* torch.nn.utils.clip_grad_value_: clamps every .grad to [-clip_value, clip_value] in place. */
static inline wk_status wk_clip_grad_value_(wk_tensor *const *params, int n, double clip_value) {
  WK__OPTIM_CALL_STATUS(clip_grad_value_, params, n, clip_value);
}

#endif
