/* check_optim: the optim plugin's service: optimizer and scheduler
 * trajectories against PyTorch 1.13.1 (tests/torch_ref/optim_ref.h), state
 * dict round trips, parameter groups, zero_grad, gradient clipping, the fused
 * update ops, bad arguments and leaks. */
#include <wick/optim.h>

#include <wick/data.h>
#include <wick/nn.h>

#include "testutil.h"
#include "torch_ref/optim_ref.h"

/* ---- helpers ------------------------------------------------------------------------------ */
/* A call that must fail with `code` and a message containing `msg`. */
#define FAILS_NULL(expr, code, msg) \
  do {                              \
    ck_assert_ptr_null(expr);       \
    TU_FAILS_WITH(code, msg);       \
  } while (0)
#define FAILS_ST(expr, code, msg)        \
  do {                                   \
    ck_assert_int_eq((int)(expr), code); \
    TU_FAILS_WITH(code, msg);            \
  } while (0)
/* Value of "name=value" in a comma list; 0 (not given) when absent. */
static double optv(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; p && *p;) {
    if (strncmp(p, name, n) == 0 && p[n] == '=') return strtod(p + n + 1, NULL);
    p = strchr(p, ',');
    if (p) p++;
  }
  return 0;
}

/* Splits "a=1,b=2" into options (names point into buf). */
static int parse_group_opts(const char *list, char *buf, size_t cap, wk_optim_option *out, int max) {
  snprintf(buf, cap, "%s", list);
  int n = 0;
  for (char *tok = strtok(buf, ","); tok && n < max; tok = strtok(NULL, ",")) {
    char *eq = strchr(tok, '=');
    ck_assert_ptr_nonnull(eq);
    *eq = 0;
    out[n].name = tok;
    out[n++].value = strtod(eq + 1, NULL);
  }
  return n;
}

static wk_optimizer *make_opt(const char *kind, wk_tensor **params, int n, const char *o) {
  if (strcmp(kind, "SGD") == 0)
    return wk_optim_sgd(params, n,
                        (wk_sgd_opts){.lr = optv(o, "lr"),
                                      .momentum = optv(o, "momentum"),
                                      .dampening = optv(o, "dampening"),
                                      .weight_decay = optv(o, "weight_decay"),
                                      .nesterov = optv(o, "nesterov") != 0,
                                      .maximize = optv(o, "maximize") != 0});
  if (strcmp(kind, "Adam") == 0 || strcmp(kind, "AdamW") == 0) {
    wk_adam_opts a = {.lr = optv(o, "lr"),
                      .beta1 = optv(o, "beta1"),
                      .beta2 = optv(o, "beta2"),
                      .eps = optv(o, "eps"),
                      .weight_decay = optv(o, "weight_decay"),
                      .amsgrad = optv(o, "amsgrad") != 0,
                      .maximize = optv(o, "maximize") != 0};
    return kind[4] ? wk_optim_adamw(params, n, a) : wk_optim_adam(params, n, a);
  }
  if (strcmp(kind, "RMSprop") == 0)
    return wk_optim_rmsprop(params, n,
                            (wk_rmsprop_opts){.lr = optv(o, "lr"),
                                              .alpha = optv(o, "alpha"),
                                              .eps = optv(o, "eps"),
                                              .weight_decay = optv(o, "weight_decay"),
                                              .momentum = optv(o, "momentum"),
                                              .centered = optv(o, "centered") != 0,
                                              .maximize = optv(o, "maximize") != 0});
  return wk_optim_adagrad(params, n,
                          (wk_adagrad_opts){.lr = optv(o, "lr"),
                                            .lr_decay = optv(o, "lr_decay"),
                                            .weight_decay = optv(o, "weight_decay"),
                                            .initial_accumulator_value = optv(o, "initial_accumulator_value"),
                                            .eps = optv(o, "eps"),
                                            .maximize = optv(o, "maximize") != 0});
}

/* "2/5/9" (ending at ',', '|' or the end). */
static int parse_list(const char *s, int64_t *out, int max) {
  int n = 0;
  while (s && *s && *s != ',' && *s != '|' && n < max) {
    char *end;
    out[n++] = strtoll(s, &end, 10);
    s = *end == '/' ? end + 1 : NULL;
  }
  return n;
}

/* One scheduler from "Kind:name=value,...". */
static wk_lr_scheduler *make_one_sched(wk_optimizer *opt, const char *spec) {
  const char *a = strchr(spec, ':');
  a = a ? a + 1 : "";
  size_t kl = strcspn(spec, ":|");
  char kind[32];
  snprintf(kind, sizeof kind, "%.*s", (int)kl, spec);
  char head[256];
  snprintf(head, sizeof head, "%.*s", (int)strcspn(a, "|"), a);
  if (strcmp(kind, "StepLR") == 0)
    return wk_lr_step(opt,
                      (wk_step_lr_opts){.step_size = (int64_t)optv(head, "step_size"), .gamma = optv(head, "gamma")});
  if (strcmp(kind, "MultiStepLR") == 0) {
    int64_t ms[16];
    const char *m = strstr(head, "milestones=");
    int n = parse_list(m ? m + 11 : NULL, ms, 16);
    return wk_lr_multistep(opt,
                           (wk_multistep_lr_opts){.milestones = ms, .nmilestones = n, .gamma = optv(head, "gamma")});
  }
  if (strcmp(kind, "ExponentialLR") == 0) return wk_lr_exponential(opt, (wk_exponential_lr_opts){optv(head, "gamma")});
  if (strcmp(kind, "CosineAnnealingLR") == 0)
    return wk_lr_cosine_annealing(
        opt, (wk_cosine_annealing_lr_opts){.T_max = (int64_t)optv(head, "T_max"), .eta_min = optv(head, "eta_min")});
  if (strcmp(kind, "LinearLR") == 0)
    return wk_lr_linear(opt, (wk_linear_lr_opts){.start_factor = optv(head, "start_factor"),
                                                 .end_factor = optv(head, "end_factor"),
                                                 .total_iters = (int64_t)optv(head, "total_iters")});
  if (strcmp(kind, "OneCycleLR") == 0)
    return wk_lr_one_cycle(opt, (wk_one_cycle_lr_opts){.max_lr = optv(head, "max_lr"),
                                                       .total_steps = (int64_t)optv(head, "total_steps"),
                                                       .epochs = (int64_t)optv(head, "epochs"),
                                                       .steps_per_epoch = (int64_t)optv(head, "steps_per_epoch"),
                                                       .pct_start = optv(head, "pct_start"),
                                                       .anneal_strategy = (int)optv(head, "anneal"),
                                                       .no_cycle_momentum = optv(head, "no_cycle_momentum") != 0,
                                                       .base_momentum = optv(head, "base_momentum"),
                                                       .max_momentum = optv(head, "max_momentum"),
                                                       .div_factor = optv(head, "div_factor"),
                                                       .final_div_factor = optv(head, "final_div_factor"),
                                                       .three_phase = optv(head, "three_phase") != 0});
  if (strcmp(kind, "ReduceLROnPlateau") == 0)
    return wk_lr_reduce_on_plateau(opt,
                                   (wk_reduce_lr_on_plateau_opts){.mode = (int)optv(head, "mode"),
                                                                  .factor = optv(head, "factor"),
                                                                  .patience = optv(head, "patience"),
                                                                  .threshold = optv(head, "threshold"),
                                                                  .threshold_mode = (int)optv(head, "threshold_mode"),
                                                                  .cooldown = (int64_t)optv(head, "cooldown"),
                                                                  .min_lr = optv(head, "min_lr"),
                                                                  .eps = optv(head, "eps")});
  ck_abort_msg("unknown scheduler %s", kind);
  return NULL;
}

/* A scheduler from a spec, with "Chained|A|B" and "Sequential:milestones=3|A|B". */
static wk_lr_scheduler *make_sched(wk_optimizer *opt, const char *spec) {
  if (!*spec) return NULL;
  bool chained = strncmp(spec, "Chained", 7) == 0, seq = strncmp(spec, "Sequential", 10) == 0;
  if (!chained && !seq) return make_one_sched(opt, spec);
  wk_lr_scheduler *kids[8];
  int n = 0;
  for (const char *p = strchr(spec, '|'); p; p = strchr(p + 1, '|')) kids[n++] = make_one_sched(opt, p + 1);
  if (chained) return wk_lr_chained(kids, n);
  int64_t ms[8];
  int nm = parse_list(strstr(spec, "milestones=") + 11, ms, 8);
  return wk_lr_sequential(opt, kids, n, ms, nm);
}

static wk_dtype case_dtype(const oref_case *c) {
  return c->dtype == 1 ? WK_F32 : WK_F64;
}

static wk_tensor *from_f64(const double *v, wk_dtype dt, const int64_t *shape, int nd) {
  wk_tensor *t = wk_tensor_from_data(v, WK_F64, shape, nd);
  if (dt == WK_F64) return t;
  wk_tensor *r = wk_to_dtype(t, dt);
  wk_release(t);
  return r;
}

static int64_t numel_of(const oref_case *c, int i) {
  return c->shape[i][0] * (c->ndim[i] > 1 ? c->shape[i][1] : 1);
}

/* Leaf parameters from a flat value array. */
static void make_params(const oref_case *c, const double *vals, wk_tensor **p) {
  int64_t off = 0;
  for (int i = 0; i < c->nparams; i++) {
    p[i] = from_f64(vals + off, case_dtype(c), c->shape[i], c->ndim[i]);
    TU_NOTNULL(p[i]);
    TU_OK(wk_tensor_set_requires_grad(p[i], true));
    off += numel_of(c, i);
  }
}

/* The optimizer of a case (groups added); defaults_only builds every group
 * without options, for load_state_dict to restore them. */
static wk_optimizer *make_case_opt(const oref_case *c, wk_tensor **p, bool defaults_only) {
  wk_optimizer *opt = make_opt(c->kind, p, c->group_first[1], defaults_only ? "" : c->options);
  TU_NOTNULL(opt);
  for (int g = 1; g < c->ngroups; g++) {
    char buf[256];
    wk_optim_option o[16];
    int n = defaults_only ? 0 : parse_group_opts(c->group_opts[g], buf, sizeof buf, o, 16);
    TU_OK(wk_optim_add_param_group(opt, p + c->group_first[g], c->group_first[g + 1] - c->group_first[g], o, n));
  }
  return opt;
}

static void set_grads(const oref_case *c, wk_tensor **p, int k) {
  int64_t off = (int64_t)k * c->numel;
  for (int i = 0; i < c->nparams; i++) {
    if (c->has_grad[k * c->nparams + i]) {
      wk_tensor *g = from_f64(c->grads + off, case_dtype(c), c->shape[i], c->ndim[i]);
      TU_OK(wk_tensor_set_grad(p[i], g));
      wk_release(g);
    } else {
      TU_OK(wk_tensor_set_grad(p[i], NULL));
    }
    off += numel_of(c, i);
  }
}

static double tol_of(const oref_case *c) {
  return c->dtype == 1 ? 1e-6 : 1e-10;
}

/* Checks the parameters, lrs and momentum (or beta1) after step k. */
static void check_step(const oref_case *c, wk_optimizer *opt, wk_lr_scheduler *s, wk_tensor **p, int k) {
  int64_t off = (int64_t)k * c->numel;
  double tol = tol_of(c);
  for (int i = 0; i < c->nparams; i++) {
    double *v = tu_values(p[i]);
    for (int64_t j = 0; j < numel_of(c, i); j++) {
      double ref = c->expect[off + j];
      ck_assert_msg(fabs(v[j] - ref) <= tol + tol * fabs(ref), "%s step %d param %d[%lld] = %.17g, PyTorch %.17g",
                    c->name, k, i, (long long)j, v[j], ref);
    }
    free(v);
    off += numel_of(c, i);
  }
  double lrs[OREF_MAXG];
  if (s) ck_assert_int_eq(wk_lr_scheduler_get_last_lr(s, lrs, OREF_MAXG), c->ngroups);
  for (int g = 0; g < c->ngroups; g++) {
    double ref = c->lrs[k * c->ngroups + g], lr = s ? lrs[g] : wk_optim_get_lr(opt, g);
    ck_assert_msg(fabs(lr - ref) <= 1e-15 + 1e-12 * fabs(ref), "%s step %d group %d lr %.17g, PyTorch %.17g", c->name,
                  k, g, lr, ref);
    ck_assert_msg(fabs(wk_optim_get_lr(opt, g) - ref) <= 1e-15 + 1e-12 * fabs(ref), "%s: group lr", c->name);
    double m = 0;
    const char *mname = strncmp(c->kind, "Adam", 4) == 0 ? "beta1" : "momentum";
    if (wk_optim_get_option(opt, g, mname, &m) != WK_OK) {
      wk_clear_error();
      m = 0;
    }
    ref = c->moms[k * c->ngroups + g];
    ck_assert_msg(fabs(m - ref) <= 1e-15 + 1e-12 * fabs(ref), "%s step %d group %d %s %.17g, PyTorch %.17g", c->name, k,
                  g, mname, m, ref);
  }
}

static void do_step(const oref_case *c, wk_optimizer *opt, wk_lr_scheduler *s, wk_tensor **p, int k) {
  set_grads(c, p, k);
  TU_OK(wk_optim_step(opt));
  if (s) TU_OK(c->metrics ? wk_lr_scheduler_step_metric(s, c->metrics[k]) : wk_lr_scheduler_step(s));
  check_step(c, opt, s, p, k);
}

static void release_params(wk_tensor **p, int n) {
  for (int i = 0; i < n; i++) wk_release(p[i]);
}

/* ---- trajectories ----------------------------------------------------------------------- */
START_TEST(test_optim_trajectory) {
  const oref_case *c = &oref_cases[_i];
  int64_t live = wk_live_tensors();
  wk_tensor *p[OREF_MAXP];
  make_params(c, c->init, p);
  wk_optimizer *opt = make_case_opt(c, p, false);
  wk_lr_scheduler *s = make_sched(opt, c->sched);
  if (*c->sched) TU_NOTNULL(s);
  for (int g = 0; g < c->ngroups; g++)
    ck_assert_msg(fabs(wk_optim_get_lr(opt, g) - c->lr0[g]) <= 1e-15 + 1e-12 * fabs(c->lr0[g]),
                  "%s: lr after the scheduler's constructor %.17g, PyTorch %.17g", c->name, wk_optim_get_lr(opt, g),
                  c->lr0[g]);
  for (int k = 0; k < c->nsteps; k++) do_step(c, opt, s, p, k);
  wk_lr_scheduler_free(s);
  wk_optimizer_free(opt);
  release_params(p, c->nparams);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* state_dict mid-trajectory into a fresh optimizer (default options) and
 * scheduler: the rest of the trajectory is PyTorch's. */
START_TEST(test_optim_state_dict_round_trip) {
  const oref_case *c = &oref_cases[_i];
  int64_t live = wk_live_tensors();
  int half = c->nsteps / 2;
  wk_tensor *p[OREF_MAXP], *q[OREF_MAXP];
  make_params(c, c->init, p);
  wk_optimizer *opt = make_case_opt(c, p, false);
  wk_lr_scheduler *s = make_sched(opt, c->sched);
  for (int k = 0; k < half; k++) do_step(c, opt, s, p, k);
  wk_state_dict *osd = wk_optim_state_dict(opt), *ssd = s ? wk_lr_scheduler_state_dict(s) : NULL;
  TU_NOTNULL(osd);
  ck_assert_str_eq(wk_state_dict_get_meta(osd, "optimizer"), c->kind);
  /* fresh parameters holding the current values */
  double *vals = malloc(sizeof(double) * (size_t)c->numel);
  int64_t off = 0;
  for (int i = 0; i < c->nparams; i++) {
    TU_OK(wk_tensor_to_f64(p[i], vals + off, numel_of(c, i)));
    off += numel_of(c, i);
  }
  make_params(c, vals, q);
  free(vals);
  wk_optimizer *opt2 = make_case_opt(c, q, true);
  wk_lr_scheduler *s2 = make_sched(opt2, c->sched);
  TU_OK(wk_optim_load_state_dict(opt2, osd));
  if (s2) TU_OK(wk_lr_scheduler_load_state_dict(s2, ssd));
  wk_lr_scheduler_free(s);
  wk_optimizer_free(opt);
  release_params(p, c->nparams);
  wk_state_dict_free(osd);
  wk_state_dict_free(ssd);
  for (int k = half; k < c->nsteps; k++) do_step(c, opt2, s2, q, k);
  wk_lr_scheduler_free(s2);
  wk_optimizer_free(opt2);
  release_params(q, c->nparams);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_optim_state_dict_layout) {
  wk_tensor *w = TU_T(WK_F64, (2), 1, 2), *b = TU_T(WK_F64, (1), 3), *u = TU_T(WK_F64, (1), 4);
  wk_tensor *ps[] = {w, b};
  wk_optimizer *opt = wk_optim_adam(ps, 2, (wk_adam_opts){.lr = 0.01, .amsgrad = true});
  TU_OK(wk_optim_add_param_group(opt, &u, 1, (wk_optim_option[]){{"lr", 0.5}}, 1));
  wk_tensor *g = TU_T(WK_F64, (2), 1, 1);
  TU_OK(wk_tensor_set_grad(w, g));
  TU_OK(wk_optim_step(opt));
  wk_state_dict *sd = wk_optim_state_dict(opt);
  double v;
  TU_OK(wk_item(wk_state_dict_get(sd, "state.0.step"), &v));
  ck_assert_double_eq(v, 1);
  TU_NOTNULL(wk_state_dict_get(sd, "state.0.exp_avg"));
  TU_NOTNULL(wk_state_dict_get(sd, "state.0.max_exp_avg_sq"));
  ck_assert_ptr_null(wk_state_dict_get(sd, "state.1.step")); /* no grad: no state, as in PyTorch */
  TU_OK(wk_item(wk_state_dict_get(sd, "param_groups.1.lr"), &v));
  ck_assert_double_eq(v, 0.5);
  TU_OK(wk_item(wk_state_dict_get(sd, "param_groups.0.amsgrad"), &v));
  ck_assert_double_eq(v, 1);
  TU_EQ_VALS(wk_state_dict_get(sd, "param_groups.0.params"), 0, 1);
  TU_EQ_VALS(wk_state_dict_get(sd, "param_groups.1.params"), 2);
  ck_assert_int_eq(wk_tensor_dtype(wk_state_dict_get(sd, "param_groups.1.params")), WK_I64);
  /* errors leave the optimizer as it was */
  wk_tensor *sgdp[] = {w, b, u};
  wk_optimizer *sgd = wk_optim_sgd(sgdp, 3, (wk_sgd_opts){.lr = 0.1});
  FAILS_ST(wk_optim_load_state_dict(sgd, sd), WK_ERR_INVALID_ARG, "for a Adam optimizer");
  wk_optimizer *one = wk_optim_adam(ps, 2, (wk_adam_opts){0});
  FAILS_ST(wk_optim_load_state_dict(one, sd), WK_ERR_INVALID_ARG, "different number of parameter groups");
  wk_optimizer *two = wk_optim_adam(&w, 1, (wk_adam_opts){0});
  TU_OK(wk_optim_add_param_group(two, &b, 1, NULL, 0));
  TU_OK(wk_optim_add_param_group(two, &u, 1, NULL, 0));
  FAILS_ST(wk_optim_load_state_dict(two, sd), WK_ERR_INVALID_ARG, "doesn't match the size of optimizer's group");
  wk_optimizer *same = wk_optim_adam(ps, 2, (wk_adam_opts){.lr = 0.2});
  TU_OK(wk_optim_add_param_group(same, &u, 1, NULL, 0));
  wk_tensor *bad = TU_T(WK_F64, (3), 1, 2, 3);
  TU_OK(wk_state_dict_set(sd, "state.0.exp_avg", bad));
  FAILS_ST(wk_optim_load_state_dict(same, sd), WK_ERR_SHAPE, "state.0.exp_avg");
  ck_assert_double_eq(wk_optim_get_lr(same, 0), 0.2);
  TU_OK(wk_state_dict_remove(sd, "state.0.exp_avg"));
  TU_OK(wk_state_dict_set(sd, "state.0.velocity", g));
  FAILS_ST(wk_optim_load_state_dict(same, sd), WK_ERR_INVALID_ARG, "unexpected key 'state.0.velocity'");
  TU_OK(wk_state_dict_remove(sd, "state.0.velocity"));
  TU_OK(wk_state_dict_set(sd, "state.7.step", g));
  FAILS_ST(wk_optim_load_state_dict(same, sd), WK_ERR_INDEX, "parameter 7");
  TU_OK(wk_state_dict_remove(sd, "state.7.step"));
  wk_tensor *neg = wk_scalar_tensor(-1, WK_F64);
  TU_OK(wk_state_dict_set(sd, "param_groups.1.lr", neg));
  FAILS_ST(wk_optim_load_state_dict(same, sd), WK_ERR_INVALID_ARG, "Invalid learning rate");
  FAILS_ST(wk_optim_load_state_dict(same, NULL), WK_ERR_NULL, "state_dict");
  FAILS_ST(wk_optim_load_state_dict(NULL, sd), WK_ERR_NULL, "optimizer");
  FAILS_NULL(wk_optim_state_dict(NULL), WK_ERR_NULL, "optimizer");
  wk_state_dict_free(sd);
  wk_optimizer_free(opt);
  wk_optimizer_free(sgd);
  wk_optimizer_free(one);
  wk_optimizer_free(two);
  wk_optimizer_free(same);
  wk_release(w), wk_release(b), wk_release(u), wk_release(g), wk_release(bad), wk_release(neg);
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

/* ---- parameter groups and options --------------------------------------------------------- */
START_TEST(test_optim_param_groups) {
  wk_tensor *a = TU_T(WK_F32, (2), 1, 2), *b = TU_T(WK_F32, (2), 3, 4), *c = TU_T(WK_F32, (1), 5);
  wk_optimizer *opt = wk_optim_sgd(&a, 1, (wk_sgd_opts){.lr = 0.1, .momentum = 0.9, .nesterov = true});
  TU_NOTNULL(opt);
  ck_assert_str_eq(wk_optimizer_name(opt), "SGD");
  TU_OK(wk_optim_add_param_group(opt, &b, 1, (wk_optim_option[]){{"lr", 0.01}}, 1));
  ck_assert_int_eq(wk_optim_num_param_groups(opt), 2);
  ck_assert_int_eq(wk_optim_group_num_params(opt, 1), 1);
  ck_assert_ptr_eq(wk_optim_group_param(opt, 1, 0), b);
  double v;
  TU_OK(wk_optim_get_option(opt, 1, "momentum", &v)); /* inherited from the constructor */
  ck_assert_double_eq(v, 0.9);
  TU_OK(wk_optim_get_option(opt, 1, "nesterov", &v));
  ck_assert_double_eq(v, 1);
  ck_assert_double_eq(wk_optim_get_lr(opt, 1), 0.01);
  ck_assert_double_eq(wk_optim_get_lr(opt, 0), 0.1);
  TU_OK(wk_optim_set_option(opt, 0, "lr", 0.3));
  ck_assert_double_eq(wk_optim_get_lr(opt, 0), 0.3);
  /* invalid values and unknown names are refused, and change nothing */
  FAILS_ST(wk_optim_set_option(opt, 0, "lr", -1), WK_ERR_INVALID_ARG, "Invalid learning rate: -1");
  ck_assert_double_eq(wk_optim_get_lr(opt, 0), 0.3);
  FAILS_ST(wk_optim_set_option(opt, 0, "dampening", 0.5), WK_ERR_INVALID_ARG,
           "Nesterov momentum requires a momentum and zero dampening");
  FAILS_ST(wk_optim_set_option(opt, 0, "betas", 0.5), WK_ERR_NOT_FOUND, "no option 'betas'");
  FAILS_ST(wk_optim_get_option(opt, 2, "lr", &v), WK_ERR_INDEX, "parameter group 2 out of range (2 groups)");
  ck_assert(isnan(wk_optim_get_lr(opt, -1)));
  TU_FAILS_WITH(WK_ERR_INDEX, "out of range");
  ck_assert_int_eq(wk_optim_get_option(opt, 0, NULL, &v), WK_ERR_NULL);
  wk_clear_error();
  FAILS_NULL(wk_optim_group_param(opt, 0, 1), WK_ERR_INDEX, "index 1 out of range");
  ck_assert_int_eq(wk_optim_group_num_params(opt, 5), -1);
  wk_clear_error();
  FAILS_ST(wk_optim_add_param_group(opt, &c, 1, (wk_optim_option[]){{"momentun", 0.5}}, 1), WK_ERR_NOT_FOUND,
           "unknown option 'momentun'");
  FAILS_ST(wk_optim_add_param_group(opt, &c, 1, (wk_optim_option[]){{"lr", -0.5}}, 1), WK_ERR_INVALID_ARG,
           "Invalid learning rate: -0.5");
  FAILS_ST(wk_optim_add_param_group(opt, &a, 1, NULL, 0), WK_ERR_INVALID_ARG,
           "some parameters appear in more than one parameter group");
  FAILS_ST(wk_optim_add_param_group(opt, (wk_tensor *[]){c, c}, 2, NULL, 0), WK_ERR_INVALID_ARG, "the same tensor");
  FAILS_ST(wk_optim_add_param_group(opt, (wk_tensor *[]){NULL}, 1, NULL, 0), WK_ERR_NULL, "params[0] is NULL");
  ck_assert_int_eq(wk_optim_add_param_group(opt, NULL, 1, NULL, 0), WK_ERR_NULL);
  wk_clear_error();
  ck_assert_int_eq(wk_optim_num_param_groups(opt), 2);
  TU_OK(wk_optim_add_param_group(opt, &c, 1, (wk_optim_option[]){{"momentum", 0}, {"nesterov", 0}}, 2));
  TU_OK(wk_optim_add_param_group(opt, NULL, 0, NULL, 0)); /* an empty group, as PyTorch allows */
  ck_assert_int_eq(wk_optim_num_param_groups(opt), 4);
  /* one step: each group with its own lr (plain SGD on the third group) */
  wk_tensor *g1 = TU_T(WK_F32, (2), 1, 1), *g3 = TU_T(WK_F32, (1), 2);
  TU_OK(wk_tensor_set_grad(b, g1));
  TU_OK(wk_tensor_set_grad(c, g3));
  TU_OK(wk_optim_step(opt));
  /* nesterov, first step: d_p = g + 0.9 * g = 1.9 g */
  TU_CLOSE(b, ((const double[]){3 - 0.01 * 1.9, 4 - 0.01 * 1.9}), 2, 1e-6, 1e-7);
  TU_CLOSE(c, ((const double[]){5 - 0.1 * 2}), 1, 1e-6, 1e-7);
  TU_EQ_VALS(a, 1, 2); /* no gradient: unchanged */
  wk_optimizer_free(opt);
  wk_optimizer_free(NULL);
  wk_release(a), wk_release(b), wk_release(c), wk_release(g1), wk_release(g3);
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

START_TEST(test_optim_zero_grad) {
  wk_tensor *a = TU_T(WK_F64, (2), 1, 2), *b = TU_T(WK_F64, (1), 3);
  wk_tensor *ps[] = {a, b};
  wk_optimizer *opt = wk_optim_adagrad(ps, 2, (wk_adagrad_opts){0});
  wk_tensor *g = TU_T(WK_F64, (2), 5, 6);
  TU_OK(wk_tensor_set_grad(a, g));
  TU_OK(wk_optim_zero_grad(opt, false)); /* zeroed in place, kept */
  wk_tensor *ga = wk_tensor_grad(a);
  TU_EQ_VALS(ga, 0, 0);
  TU_EQ_VALS(g, 0, 0); /* the same storage */
  wk_release(ga);
  ck_assert_ptr_null(wk_tensor_grad(b));
  TU_OK(wk_optim_zero_grad(opt, true)); /* dropped */
  ck_assert_ptr_null(wk_tensor_grad(a));
  ck_assert_int_eq(wk_last_error(), WK_OK);
  FAILS_ST(wk_optim_zero_grad(NULL, true), WK_ERR_NULL, "optimizer");
  FAILS_ST(wk_optim_step(NULL), WK_ERR_NULL, "optimizer");
  wk_optimizer_free(opt);
  wk_release(a), wk_release(b), wk_release(g);
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

/* Parameters without gradients are skipped: unchanged, and no state. */
START_TEST(test_optim_missing_grads_skipped) {
  wk_tensor *a = TU_T(WK_F32, (2), 1, 2), *b = TU_T(WK_F32, (2), 3, 4);
  wk_tensor *ps[] = {a, b};
  wk_optimizer *opt = wk_optim_rmsprop(ps, 2, (wk_rmsprop_opts){.momentum = 0.9, .centered = true});
  TU_OK(wk_optim_step(opt)); /* nothing has a gradient */
  wk_tensor *g = TU_T(WK_F32, (2), 1, -1);
  TU_OK(wk_tensor_set_grad(b, g));
  TU_OK(wk_optim_step(opt));
  TU_EQ_VALS(a, 1, 2);
  wk_state_dict *sd = wk_optim_state_dict(opt);
  ck_assert_ptr_null(wk_state_dict_get(sd, "state.0.square_avg"));
  TU_NOTNULL(wk_state_dict_get(sd, "state.1.square_avg"));
  TU_NOTNULL(wk_state_dict_get(sd, "state.1.grad_avg"));
  TU_NOTNULL(wk_state_dict_get(sd, "state.1.momentum_buffer"));
  wk_state_dict_free(sd);
  wk_optimizer_free(opt);
  wk_release(a), wk_release(b), wk_release(g);
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

/* ---- bad arguments ------------------------------------------------------------------------- */
START_TEST(test_optim_bad_arguments) {
  wk_tensor *a = TU_T(WK_F32, (2), 1, 2);
  FAILS_NULL(wk_optim_sgd(&a, 1, (wk_sgd_opts){.lr = -0.1}), WK_ERR_INVALID_ARG, "SGD: Invalid learning rate: -0.1");
  FAILS_NULL(wk_optim_sgd(&a, 1, (wk_sgd_opts){.lr = NAN}), WK_ERR_INVALID_ARG, "Invalid learning rate: nan");
  FAILS_NULL(wk_optim_sgd(&a, 1, (wk_sgd_opts){.momentum = -0.5}), WK_ERR_INVALID_ARG, "Invalid momentum value: -0.5");
  FAILS_NULL(wk_optim_sgd(&a, 1, (wk_sgd_opts){.weight_decay = -1}), WK_ERR_INVALID_ARG,
             "Invalid weight_decay value: -1");
  FAILS_NULL(wk_optim_sgd(&a, 1, (wk_sgd_opts){.nesterov = true}), WK_ERR_INVALID_ARG,
             "Nesterov momentum requires a momentum and zero dampening");
  FAILS_NULL(wk_optim_adam(&a, 1, (wk_adam_opts){.beta1 = 1.0}), WK_ERR_INVALID_ARG,
             "Invalid beta parameter at index 0: 1");
  FAILS_NULL(wk_optim_adamw(&a, 1, (wk_adam_opts){.beta2 = -0.1}), WK_ERR_INVALID_ARG,
             "AdamW: Invalid beta parameter at index 1: -0.1");
  FAILS_NULL(wk_optim_adam(&a, 1, (wk_adam_opts){.eps = -1e-8}), WK_ERR_INVALID_ARG, "Invalid epsilon value");
  FAILS_NULL(wk_optim_adam(&a, 1, (wk_adam_opts){.lr = -1}), WK_ERR_INVALID_ARG, "Adam: Invalid learning rate: -1");
  FAILS_NULL(wk_optim_rmsprop(&a, 1, (wk_rmsprop_opts){.alpha = -0.9}), WK_ERR_INVALID_ARG,
             "Invalid alpha value: -0.9");
  FAILS_NULL(wk_optim_rmsprop(&a, 1, (wk_rmsprop_opts){.momentum = -1}), WK_ERR_INVALID_ARG, "Invalid momentum value");
  FAILS_NULL(wk_optim_adagrad(&a, 1, (wk_adagrad_opts){.lr_decay = -1}), WK_ERR_INVALID_ARG,
             "Invalid lr_decay value: -1");
  FAILS_NULL(wk_optim_adagrad(&a, 1, (wk_adagrad_opts){.initial_accumulator_value = -1}), WK_ERR_INVALID_ARG,
             "Invalid initial_accumulator_value value: -1");
  /* parameters */
  FAILS_NULL(wk_optim_sgd(NULL, 1, (wk_sgd_opts){0}), WK_ERR_NULL, "params is NULL");
  FAILS_NULL(wk_optim_adam(&a, 0, (wk_adam_opts){0}), WK_ERR_INVALID_ARG, "optimizer got an empty parameter list");
  FAILS_NULL(wk_optim_adam(&a, -1, (wk_adam_opts){0}), WK_ERR_INVALID_ARG, "n = -1");
  FAILS_NULL(wk_optim_sgd((wk_tensor *[]){a, NULL}, 2, (wk_sgd_opts){0}), WK_ERR_NULL, "params[1] is NULL");
  wk_tensor *i = TU_T(WK_I64, (2), 1, 2);
  FAILS_NULL(wk_optim_sgd(&i, 1, (wk_sgd_opts){0}), WK_ERR_DTYPE, "floating point");
  wk_tensor *leaf = TU_T(WK_F32, (2), 1, 2);
  TU_OK(wk_tensor_set_requires_grad(leaf, true));
  wk_tensor *nonleaf = wk_mul_scalar(leaf, 2);
  FAILS_NULL(wk_optim_sgd(&nonleaf, 1, (wk_sgd_opts){0}), WK_ERR_INVALID_ARG, "can't optimize a non-leaf Tensor");
  /* a failed call before keeps its error: the wrappers propagate NULL */
  ck_assert_ptr_null(wk_optim_sgd((wk_tensor *[]){wk_view(a, WK_SHAPE(5))}, 1, (wk_sgd_opts){0}));
  ck_assert_int_ne(wk_last_error(), WK_OK);
  ck_assert_ptr_null(strstr(wk_last_error_message(), "SGD"));
  wk_clear_error();
  ck_assert_ptr_null(wk_optimizer_name(NULL));
  ck_assert_int_eq(wk_optim_num_param_groups(NULL), 0);
  wk_release(a), wk_release(i), wk_release(leaf), wk_release(nonleaf);
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

/* ---- schedulers: errors, ownership, state dicts ---------------------------------------------- */
START_TEST(test_optim_scheduler_errors) {
  wk_tensor *a = TU_T(WK_F64, (2), 1, 2), *b = TU_T(WK_F64, (1), 1);
  wk_optimizer *opt = wk_optim_sgd(&a, 1, (wk_sgd_opts){.lr = 0.1, .momentum = 0.9});
  wk_optimizer *other = wk_optim_adagrad(&b, 1, (wk_adagrad_opts){0});
  FAILS_NULL(wk_lr_step(NULL, (wk_step_lr_opts){.step_size = 1}), WK_ERR_NULL, "optimizer");
  FAILS_NULL(wk_lr_step(opt, (wk_step_lr_opts){0}), WK_ERR_INVALID_ARG, "step_size must be positive");
  FAILS_NULL(wk_lr_cosine_annealing(opt, (wk_cosine_annealing_lr_opts){.T_max = -1}), WK_ERR_INVALID_ARG,
             "T_max must be positive");
  FAILS_NULL(wk_lr_exponential(opt, (wk_exponential_lr_opts){0}), WK_ERR_INVALID_ARG, "gamma is required");
  FAILS_NULL(wk_lr_linear(opt, (wk_linear_lr_opts){.start_factor = 2}), WK_ERR_INVALID_ARG,
             "Starting multiplicative factor");
  FAILS_NULL(wk_lr_linear(opt, (wk_linear_lr_opts){.end_factor = -1}), WK_ERR_INVALID_ARG,
             "Ending multiplicative factor");
  FAILS_NULL(wk_lr_multistep(opt, (wk_multistep_lr_opts){.nmilestones = 2}), WK_ERR_INVALID_ARG, "milestone");
  FAILS_NULL(wk_lr_one_cycle(opt, (wk_one_cycle_lr_opts){.max_lr = 1}), WK_ERR_INVALID_ARG,
             "You must define either total_steps OR (epochs AND steps_per_epoch)");
  FAILS_NULL(wk_lr_one_cycle(opt, (wk_one_cycle_lr_opts){.max_lr = 1, .total_steps = 5, .pct_start = 1.5}),
             WK_ERR_INVALID_ARG, "pct_start");
  FAILS_NULL(wk_lr_one_cycle(other, (wk_one_cycle_lr_opts){.max_lr = 1, .total_steps = 5}), WK_ERR_INVALID_ARG,
             "optimizer must support momentum");
  FAILS_NULL(wk_lr_reduce_on_plateau(opt, (wk_reduce_lr_on_plateau_opts){.factor = 1.0}), WK_ERR_INVALID_ARG,
             "Factor should be < 1.0.");
  /* OneCycleLR refuses to step past total_steps */
  wk_lr_scheduler *oc = wk_lr_one_cycle(opt, (wk_one_cycle_lr_opts){.max_lr = 1, .total_steps = 2});
  TU_NOTNULL(oc);
  TU_OK(wk_lr_scheduler_step(oc));
  TU_OK(wk_lr_scheduler_step(oc));
  FAILS_ST(wk_lr_scheduler_step(oc), WK_ERR_STATE, "Tried to step 4 times. The specified number of total steps is 2");
  ck_assert_int_eq(wk_lr_scheduler_last_epoch(oc), 2);
  wk_lr_scheduler_free(oc);
  /* ReduceLROnPlateau needs a metric */
  wk_lr_scheduler *pl = wk_lr_reduce_on_plateau(opt, (wk_reduce_lr_on_plateau_opts){0});
  FAILS_ST(wk_lr_scheduler_step(pl), WK_ERR_INVALID_ARG, "needs the metric");
  /* chains take ownership of their schedulers even when they fail */
  wk_lr_scheduler *x = wk_lr_exponential(opt, (wk_exponential_lr_opts){0.5});
  wk_lr_scheduler *y = wk_lr_exponential(other, (wk_exponential_lr_opts){0.5});
  FAILS_NULL(wk_lr_chained((wk_lr_scheduler *[]){x, y}, 2), WK_ERR_INVALID_ARG, "to belong to the same optimizer");
  x = wk_lr_exponential(opt, (wk_exponential_lr_opts){0.5});
  FAILS_NULL(
      wk_lr_chained((wk_lr_scheduler *[]){x, wk_lr_reduce_on_plateau(opt, (wk_reduce_lr_on_plateau_opts){0})}, 2),
      WK_ERR_INVALID_ARG, "cannot be chained");
  x = wk_lr_exponential(opt, (wk_exponential_lr_opts){0.5});
  FAILS_NULL(wk_lr_chained((wk_lr_scheduler *[]){x, x}, 2), WK_ERR_INVALID_ARG, "are the same");
  x = wk_lr_exponential(opt, (wk_exponential_lr_opts){0.5});
  ck_assert_ptr_null(wk_lr_chained((wk_lr_scheduler *[]){x, wk_lr_step(opt, (wk_step_lr_opts){0})}, 2));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "step_size must be positive"); /* the first error is kept */
  x = wk_lr_exponential(opt, (wk_exponential_lr_opts){0.5});
  y = wk_lr_exponential(opt, (wk_exponential_lr_opts){0.5});
  FAILS_NULL(wk_lr_sequential(opt, (wk_lr_scheduler *[]){x, y}, 2, (const int64_t[]){1, 2}, 2), WK_ERR_INVALID_ARG,
             "one more than the number of milestone points");
  x = wk_lr_exponential(opt, (wk_exponential_lr_opts){0.5});
  FAILS_NULL(wk_lr_sequential(NULL, &x, 1, NULL, 0), WK_ERR_NULL, "optimizer");
  ck_assert_ptr_null(wk_lr_chained(NULL, 0));
  wk_clear_error();
  FAILS_ST(wk_lr_scheduler_step(NULL), WK_ERR_NULL, "scheduler");
  ck_assert_int_eq(wk_lr_scheduler_get_last_lr(NULL, NULL, 0), -1);
  TU_FAILS_WITH(WK_ERR_NULL, "scheduler");
  ck_assert_ptr_null(wk_lr_scheduler_state_dict(NULL));
  wk_clear_error();
  ck_assert_ptr_null(wk_lr_scheduler_name(NULL));
  wk_lr_scheduler_free(NULL);
  /* a group added after the scheduler was made */
  wk_lr_scheduler *st = wk_lr_step(opt, (wk_step_lr_opts){.step_size = 2});
  ck_assert_str_eq(wk_lr_scheduler_name(st), "StepLR");
  wk_tensor *c = TU_T(WK_F64, (1), 0);
  TU_OK(wk_optim_add_param_group(opt, &c, 1, NULL, 0));
  FAILS_ST(wk_lr_scheduler_step(st), WK_ERR_STATE, "parameter groups");
  /* scheduler state dicts check the kind */
  wk_state_dict *sd = wk_lr_scheduler_state_dict(st);
  ck_assert_str_eq(wk_state_dict_get_meta(sd, "scheduler"), "StepLR");
  FAILS_ST(wk_lr_scheduler_load_state_dict(pl, sd), WK_ERR_INVALID_ARG, "is for a StepLR");
  ck_assert_int_eq(wk_lr_scheduler_load_state_dict(st, NULL), WK_ERR_NULL);
  wk_clear_error();
  wk_state_dict_free(sd);
  wk_lr_scheduler_free(st);
  wk_lr_scheduler_free(pl);
  wk_optimizer_free(opt);
  wk_optimizer_free(other);
  wk_release(a), wk_release(b), wk_release(c);
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

/* A chained/sequential state dict nests its schedulers' entries. */
START_TEST(test_optim_scheduler_state_dict_nested) {
  wk_tensor *a = TU_T(WK_F64, (1), 1);
  wk_optimizer *opt = wk_optim_sgd(&a, 1, (wk_sgd_opts){.lr = 0.1});
  wk_lr_scheduler *kids[] = {wk_lr_linear(opt, (wk_linear_lr_opts){.start_factor = 0.5, .total_iters = 2}),
                             wk_lr_multistep(opt, (wk_multistep_lr_opts){(const int64_t[]){1, 3}, 2, 0.5})};
  wk_lr_scheduler *seq = wk_lr_sequential(opt, kids, 2, (const int64_t[]){2}, 1);
  TU_NOTNULL(seq);
  for (int k = 0; k < 3; k++) TU_OK(wk_lr_scheduler_step(seq));
  wk_state_dict *sd = wk_lr_scheduler_state_dict(seq);
  ck_assert_str_eq(wk_state_dict_get_meta(sd, "_schedulers.1.scheduler"), "MultiStepLR");
  double v;
  TU_OK(wk_item(wk_state_dict_get(sd, "last_epoch"), &v));
  ck_assert_double_eq(v, 3);
  TU_OK(wk_item(wk_state_dict_get(sd, "_schedulers.1.milestones.1"), &v));
  ck_assert_double_eq(v, 3);
  TU_OK(wk_item(wk_state_dict_get(sd, "_schedulers.0.start_factor"), &v));
  ck_assert_double_eq(v, 0.5);
  /* a sequential of other kinds refuses it and keeps its own state */
  wk_lr_scheduler *k2[] = {wk_lr_linear(opt, (wk_linear_lr_opts){0}),
                           wk_lr_step(opt, (wk_step_lr_opts){.step_size = 1})};
  wk_lr_scheduler *seq2 = wk_lr_sequential(opt, k2, 2, (const int64_t[]){2}, 1);
  int64_t before = wk_lr_scheduler_last_epoch(seq2);
  FAILS_ST(wk_lr_scheduler_load_state_dict(seq2, sd), WK_ERR_INVALID_ARG, "is for a MultiStepLR");
  ck_assert_int_eq(wk_lr_scheduler_last_epoch(seq2), before);
  wk_state_dict_free(sd);
  wk_lr_scheduler_free(seq);
  wk_lr_scheduler_free(seq2);
  wk_optimizer_free(opt);
  wk_release(a);
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

/* ---- gradient clipping ----------------------------------------------------------------------- */
START_TEST(test_optim_clip_grad_norm_vs_torch) {
  const oref_clip *c = &oref_clips[_i];
  wk_dtype dt = c->dtype == 1 ? WK_F32 : WK_F64;
  wk_tensor *p[3] = {wk_zeros(WK_SHAPE(3, 2), (wk_options){.dtype = dt}),
                     wk_zeros(WK_SHAPE(4), (wk_options){.dtype = dt}),
                     wk_zeros(WK_SHAPE(1), (wk_options){.dtype = dt})};
  wk_tensor *g0 = from_f64(c->grads, dt, WK_SHAPE(3, 2)), *g1 = from_f64(c->grads + 6, dt, WK_SHAPE(4));
  TU_OK(wk_tensor_set_grad(p[0], g0));
  TU_OK(wk_tensor_set_grad(p[1], g1));
  wk_tensor *total = wk_clip_grad_norm_(p, 3, c->max_norm, c->norm_type, false);
  double tol = c->dtype == 1 ? 1e-6 : 1e-12;
  TU_CLOSE(total, &c->total, 1, tol, tol);
  ck_assert_int_eq(wk_tensor_dtype(total), dt);
  wk_tensor *a0 = wk_tensor_grad(p[0]), *a1 = wk_tensor_grad(p[1]);
  TU_CLOSE(a0, c->after, 6, tol, tol);
  TU_CLOSE(a1, c->after + 6, 4, tol, tol);
  ck_assert_ptr_null(wk_tensor_grad(p[2]));
  wk_release(a0), wk_release(a1), wk_release(total), wk_release(g0), wk_release(g1);
  release_params(p, 3);
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

START_TEST(test_optim_clip_grad_value_and_errors) {
  wk_tensor *p = TU_T(WK_F32, (4), 0, 0, 0, 0), *q = TU_T(WK_F32, (1), 0);
  wk_tensor *g = TU_T(WK_F32, (4), -3, 0.5, 2, -0.1);
  TU_OK(wk_tensor_set_grad(p, g));
  wk_tensor *ps[] = {p, q};
  TU_OK(wk_clip_grad_value_(ps, 2, 1.0));
  TU_CLOSE(g, ((const double[]){-1, 0.5, 1, -0.1}), 4, 1e-7, 0);
  /* no gradient at all: a zero norm */
  wk_tensor *z = wk_clip_grad_norm_(&q, 1, 1.0, 2.0, true);
  TU_EQ_VALS(z, 0);
  wk_release(z);
  /* a non-finite norm */
  wk_tensor_set(g, (const int64_t[]){0}, INFINITY);
  FAILS_NULL(wk_clip_grad_norm_(ps, 2, 1.0, 2.0, true), WK_ERR_INVALID_ARG, "is non-finite, so it cannot be clipped");
  wk_tensor *t = wk_clip_grad_norm_(ps, 2, 1.0, INFINITY, false); /* allowed without the check */
  TU_NOTNULL(t);
  wk_release(t);
  FAILS_NULL(wk_clip_grad_norm_(NULL, 2, 1.0, 2.0, false), WK_ERR_NULL, "params is NULL");
  FAILS_NULL(wk_clip_grad_norm_((wk_tensor *[]){p, NULL}, 2, 1.0, 2.0, false), WK_ERR_NULL, "params[1] is NULL");
  FAILS_NULL(wk_clip_grad_norm_(ps, 2, 1.0, NAN, false), WK_ERR_INVALID_ARG, "norm_type");
  FAILS_ST(wk_clip_grad_value_(NULL, 1, 1.0), WK_ERR_NULL, "clip_grad_value_");
  ck_assert_int_eq(wk_clip_grad_value_(ps, 2, NAN), WK_ERR_INVALID_ARG);
  wk_clear_error();
  wk_release(p), wk_release(q), wk_release(g);
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

/* ---- the fused ops ------------------------------------------------------------------------- */
START_TEST(test_optim_fused_ops) {
  const char *names[] = {"optim.sgd_step_", "optim.adam_step_", "optim.rmsprop_step_", "optim.adagrad_step_"};
  for (int i = 0; i < 4; i++) {
    wk_op *op = wk_op_find(names[i]);
    TU_NOTNULL(op);
    ck_assert(wk_op_tags(op) & WK_TAG_INPLACE);
    ck_assert_int_eq(wk_op_mutated_arg(op), 0);
    ck_assert_int_ge(wk_op_num_kernels(op), 1);
    /* the cpu kernel is the optim plugin's (a backend such as cuda may add its own) */
    int cpu_kernels = 0;
    for (int k = 0; k < wk_op_num_kernels(op); k++) {
      int32_t dev;
      const char *plugin;
      TU_OK(wk_op_kernel_info(op, k, &dev, NULL, NULL, &plugin));
      if (dev != WK_DEVICE_CPU) continue;
      ck_assert_str_eq(plugin, "optim");
      cpu_kernels++;
    }
    ck_assert_int_eq(cpu_kernels, 1);
  }
  /* a non-contiguous parameter, momentum buffer made new by the op */
  wk_tensor *base = TU_T(WK_F64, (2, 3), 1, 2, 3, 4, 5, 6);
  wk_tensor *p = wk_t(base); /* [3, 2], strides (1, 3) */
  wk_tensor *g = TU_T(WK_F64, (3, 2), 1, 1, 1, 1, 1, 1), *buf = wk_empty(WK_SHAPE(3, 2), (wk_options){.dtype = WK_F64});
  uint64_t v0 = wk_tensor_version(p);
  wk_value a[] = {WK_VT(p), WK_VT(g), WK_VT(buf),   WK_VF(0.5),   WK_VF(0.9),
                  WK_VF(0), WK_VF(0), WK_VB(false), WK_VB(false), WK_VB(true)};
  wk_value out[1];
  TU_OK(wk_call("optim.sgd_step_", a, 10, out));
  ck_assert_ptr_eq(out[0].u.t, p);
  ck_assert_uint_gt(wk_tensor_version(p), v0);
  TU_EQ_VALS(base, 0.5, 1.5, 2.5, 3.5, 4.5, 5.5);
  TU_EQ_VALS(buf, 1, 1, 1, 1, 1, 1);
  a[9] = WK_VB(false);
  TU_OK(wk_call("optim.sgd_step_", a, 10, out)); /* buf = 0.9 + 1 */
  TU_CLOSE(buf, ((const double[]){1.9, 1.9, 1.9, 1.9, 1.9, 1.9}), 6, 1e-15, 0);
  /* shape, dtype and missing-buffer errors */
  wk_tensor *g2 = TU_T(WK_F64, (2, 3), 1, 1, 1, 1, 1, 1);
  a[1] = WK_VT(g2);
  FAILS_ST(wk_call("optim.sgd_step_", a, 10, out), WK_ERR_SHAPE, "grad has shape [2, 3] but param has shape [3, 2]");
  a[1] = WK_VT(g);
  a[2] = WK_VNONE;
  FAILS_ST(wk_call("optim.sgd_step_", a, 10, out), WK_ERR_INVALID_ARG, "needs a momentum_buffer");
  wk_tensor *ip = TU_T(WK_I32, (1), 1), *ig = TU_T(WK_I32, (1), 1);
  wk_value b[] = {WK_VT(ip), WK_VT(ig), WK_VNONE, WK_VF(0.5), WK_VF(0)};
  FAILS_ST(wk_call("optim.sgd_step_", b, 5, out), WK_ERR_DTYPE, "param must be floating point");
  wk_value c[] = {WK_VT(p), WK_VT(g), WK_VT(buf), WK_VT(buf), WK_VNONE, WK_VF(0), WK_VF(0.1)};
  FAILS_ST(wk_call("optim.adam_step_", c, 7, out), WK_ERR_INVALID_ARG, "step must be >= 1");
  wk_release(base), wk_release(p), wk_release(g), wk_release(buf), wk_release(g2), wk_release(ip), wk_release(ig);
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

/* Half-precision parameters are updated (computing in float, rounding as PyTorch). */
START_TEST(test_optim_half_params) {
  wk_dtype dts[] = {WK_F16, WK_BF16};
  for (int k = 0; k < 2; k++) {
    wk_tensor *p = TU_T(dts[k], (3), 1, -2, 0.5), *g = TU_T(dts[k], (3), 0.5, 0.25, -1);
    TU_OK(wk_tensor_set_grad(p, g));
    wk_optimizer *opt = wk_optim_adam(&p, 1, (wk_adam_opts){.lr = 0.125});
    for (int s = 0; s < 3; s++) TU_OK(wk_optim_step(opt));
    /* Adam's first steps move each element by about lr against the gradient's sign */
    TU_CLOSE(p, ((const double[]){1 - 0.375, -2 - 0.375, 0.5 + 0.375}), 3, 1e-2, 1e-2);
    ck_assert_int_eq(wk_tensor_dtype(p), dts[k]);
    wk_optimizer_free(opt);
    wk_release(p), wk_release(g);
  }
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

/* ---- with autograd and scopes ------------------------------------------------------------------ */
/* Fits y = 3x with backward() and SGD inside a scope per step: the state made
 * inside the scopes survives them, and nothing leaks. */
START_TEST(test_optim_training_loop_scopes) {
  wk_tensor *w = TU_T(WK_F32, (1), 0);
  TU_OK(wk_tensor_set_requires_grad(w, true));
  wk_tensor *x = TU_T(WK_F32, (4), 1, 2, 3, 4), *y = TU_T(WK_F32, (4), 3, 6, 9, 12);
  wk_optimizer *opt = wk_optim_sgd(&w, 1, (wk_sgd_opts){.lr = 0.01, .momentum = 0.5});
  wk_lr_scheduler *s = wk_lr_exponential(opt, (wk_exponential_lr_opts){0.99});
  int64_t live = wk_live_tensors();
  double prev = INFINITY;
  for (int it = 0; it < 60; it++) {
    wk_scope_begin();
    TU_OK(wk_optim_zero_grad(opt, true));
    wk_tensor *loss = wk_mse_loss(wk_mul(x, w), y);
    TU_OK(wk_backward(loss));
    TU_OK(wk_optim_step(opt));
    TU_OK(wk_lr_scheduler_step(s));
    double l;
    TU_OK(wk_item(loss, &l));
    if (it == 0) ck_assert_double_eq_tol(l, 67.5, 1e-4);
    if (it > 30) ck_assert(l <= prev + 1e-6);
    prev = l;
    wk_scope_end();
  }
  double v;
  TU_OK(wk_item(w, &v));
  ck_assert_double_eq_tol(v, 3.0, 1e-3);
  ck_assert_int_eq(wk_live_tensors(), live + 2); /* the momentum buffer, and w's .grad */
  wk_state_dict *sd = wk_optim_state_dict(opt);
  TU_NOTNULL(wk_state_dict_get(sd, "state.0.momentum_buffer"));
  wk_state_dict_free(sd);
  wk_lr_scheduler_free(s);
  wk_optimizer_free(opt);
  wk_release(w), wk_release(x), wk_release(y);
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

/* ---- the service ------------------------------------------------------------------------------- */
START_TEST(test_optim_service) {
  const wk_optim_api *api = wk_service_get(WK_OPTIM_SERVICE, WK_OPTIM_API_VERSION);
  TU_NOTNULL(api);
  ck_assert_ptr_eq(api, wk_optim_api_get());
  ck_assert_uint_ge(api->struct_size, sizeof(wk_optim_api));
  FAILS_NULL(wk_service_get(WK_OPTIM_SERVICE, 99), WK_ERR_NOT_FOUND, "version 99 or later");
  ck_assert_str_eq(wk_plugin_get_status(wk_plugin_find("optim")) == WK_PLUGIN_LOADED ? "loaded" : "?", "loaded");
}
END_TEST

START_TEST(test_optim_missing_plugin) {
  setenv("WICK_DISABLE_PLUGINS", "optim", 1);
  ck_assert_int_eq(wk_init(), WK_OK);
  wk_tensor *a = TU_T(WK_F32, (1), 1);
  ck_assert_ptr_null(wk_optim_sgd(&a, 1, (wk_sgd_opts){.lr = 0.1}));
  ck_assert_ptr_nonnull(strstr(wk_last_error_message(), "plugin search path"));
  TU_FAILS_WITH(WK_ERR_NOT_FOUND, "service 'optim'");
  FAILS_ST(wk_optim_step(NULL), WK_ERR_NOT_FOUND, "service 'optim'");
  FAILS_NULL(wk_clip_grad_norm_(&a, 1, 1, 2, false), WK_ERR_NOT_FOUND, "service 'optim'");
  wk_optimizer_free(NULL);
  wk_release(a);
}
END_TEST


/* ==== NAdam, RAdam, Adadelta, Adamax: trajectories by hand ================================= */
/* PyTorch's documented algorithms (torch/optim/{nadam,radam,adadelta,adamax}.py,
 * the docs' pseudocode) written per element in double, on the quadratic
 * f(p) = sum(a p^2 / 2 + b p) whose gradient a p + b is set each step. */
#define QN 4
static const double Q_A[QN] = {1, 3, 0.5, 2}, Q_B[QN] = {0.1, -0.2, 0.3, 0}, Q_P0[QN] = {1.5, -0.75, 0.25, 2.0};

typedef struct {
  const char *kind;
  double lr, beta1, beta2, eps, wd, extra; /* extra: NAdam's momentum_decay, Adadelta's rho */
  bool decoupled, maximize;
} algo_case;

/* One step of the reference on every element; m, v: the two state buffers; *mp: NAdam's mu_product. */
static void algo_ref_step(const algo_case *c, double *p, double *m, double *v, double *mp, int t) {
  double mu = 0, mu_next = 0;
  if (!strcmp(c->kind, "NAdam")) {
    mu = c->beta1 * (1. - 0.5 * pow(0.96, t * c->extra));
    mu_next = c->beta1 * (1. - 0.5 * pow(0.96, (t + 1) * c->extra));
    *mp = (double)(float)(*mp * mu); /* a float32 tensor in PyTorch */
  }
  for (int i = 0; i < QN; i++) {
    double g = Q_A[i] * p[i] + Q_B[i];
    if (c->maximize) g = -g;
    if (c->wd != 0) {
      if (c->decoupled)
        p[i] *= 1 - c->lr * c->wd;
      else
        g += c->wd * p[i];
    }
    if (!strcmp(c->kind, "Adamax")) {
      m[i] = c->beta1 * m[i] + (1 - c->beta1) * g;
      v[i] = fmax(c->beta2 * v[i], fabs(g) + c->eps);
      p[i] -= c->lr / (1 - pow(c->beta1, t)) * m[i] / v[i];
    } else if (!strcmp(c->kind, "Adadelta")) {
      double rho = c->extra;
      m[i] = rho * m[i] + (1 - rho) * g * g;
      double delta = sqrt(v[i] + c->eps) / sqrt(m[i] + c->eps) * g;
      v[i] = rho * v[i] + (1 - rho) * delta * delta;
      p[i] -= c->lr * delta;
    } else if (!strcmp(c->kind, "NAdam")) {
      double bc2 = 1 - pow(c->beta2, t);
      m[i] = c->beta1 * m[i] + (1 - c->beta1) * g;
      v[i] = c->beta2 * v[i] + (1 - c->beta2) * g * g;
      double denom = sqrt(v[i] / bc2) + c->eps;
      p[i] -= c->lr * (1 - mu) / (1 - *mp) * g / denom;
      p[i] -= c->lr * mu_next / (1 - *mp * mu_next) * m[i] / denom;
    } else { /* RAdam */
      double bc1 = 1 - pow(c->beta1, t), bc2 = 1 - pow(c->beta2, t);
      m[i] = c->beta1 * m[i] + (1 - c->beta1) * g;
      v[i] = c->beta2 * v[i] + (1 - c->beta2) * g * g;
      double rho_inf = 2 / (1 - c->beta2) - 1, rho_t = rho_inf - 2 * t * pow(c->beta2, t) / bc2;
      if (rho_t > 5) {
        double rect = sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t));
        p[i] -= m[i] / bc1 * c->lr * (sqrt(bc2) / (sqrt(v[i]) + c->eps)) * rect;
      } else {
        p[i] -= m[i] / bc1 * c->lr;
      }
    }
  }
}

static wk_optimizer *algo_make(const algo_case *c, wk_tensor **p, bool defaults) {
  if (!strcmp(c->kind, "NAdam"))
    return defaults ? wk_optim_nadam(p, 1, (wk_nadam_opts){0})
                    : wk_optim_nadam(p, 1, (wk_nadam_opts){.lr = c->lr, .beta1 = c->beta1, .beta2 = c->beta2,
                                                            .eps = c->eps, .weight_decay = c->wd,
                                                            .momentum_decay = c->extra,
                                                            .decoupled_weight_decay = c->decoupled,
                                                            .maximize = c->maximize});
  if (!strcmp(c->kind, "RAdam"))
    return defaults ? wk_optim_radam(p, 1, (wk_radam_opts){0})
                    : wk_optim_radam(p, 1, (wk_radam_opts){.lr = c->lr, .beta1 = c->beta1, .beta2 = c->beta2,
                                                            .eps = c->eps, .weight_decay = c->wd,
                                                            .decoupled_weight_decay = c->decoupled,
                                                            .maximize = c->maximize});
  if (!strcmp(c->kind, "Adadelta"))
    return defaults ? wk_optim_adadelta(p, 1, (wk_adadelta_opts){0})
                    : wk_optim_adadelta(p, 1, (wk_adadelta_opts){.lr = c->lr, .rho = c->extra, .eps = c->eps,
                                                                  .weight_decay = c->wd, .maximize = c->maximize});
  return defaults ? wk_optim_adamax(p, 1, (wk_adamax_opts){0})
                  : wk_optim_adamax(p, 1, (wk_adamax_opts){.lr = c->lr, .beta1 = c->beta1, .beta2 = c->beta2,
                                                            .eps = c->eps, .weight_decay = c->wd,
                                                            .maximize = c->maximize});
}

/* The defaults (PyTorch's) first, then non-default options. RAdam runs 10
 * steps so both of its branches (rho_t <= 5 for t <= 5) are taken. */
static const algo_case g_algo_cases[] = {
    {"NAdam", 2e-3, 0.9, 0.999, 1e-8, 0, 4e-3, false, false},
    {"NAdam", 0.05, 0.8, 0.99, 1e-6, 0.1, 0.01, false, true},
    {"NAdam", 0.05, 0.8, 0.99, 1e-6, 0.1, 0.01, true, false},
    {"RAdam", 1e-3, 0.9, 0.999, 1e-8, 0, 0, false, false},
    {"RAdam", 0.1, 0.85, 0.9, 1e-6, 0.05, 0, false, true},
    {"RAdam", 0.1, 0.85, 0.99, 1e-6, 0.05, 0, true, false},
    {"Adadelta", 1.0, 0, 0, 1e-6, 0, 0.9, false, false},
    {"Adadelta", 0.5, 0, 0, 1e-4, 0.2, 0.7, false, true},
    {"Adamax", 2e-3, 0.9, 0.999, 1e-8, 0, 0, false, false},
    {"Adamax", 0.1, 0.7, 0.95, 1e-3, 0.3, 0, false, true},
};
#define NALGO ((int)(sizeof g_algo_cases / sizeof g_algo_cases[0]))

START_TEST(test_optim_more_algorithms_by_hand) {
  const algo_case *c = &g_algo_cases[_i / 2];
  wk_dtype dt = _i % 2 ? WK_F32 : WK_F64;
  bool defaults = _i / 2 == 0 || _i / 2 == 3 || _i / 2 == 6 || _i / 2 == 8; /* the {0} options must be PyTorch's defaults */
  wk_scope_begin();
  double p[QN], m[QN] = {0}, v[QN] = {0}, mp = 1;
  memcpy(p, Q_P0, sizeof p);
  wk_tensor *t = wk_to_dtype(TU_T(WK_F64, (QN), Q_P0[0], Q_P0[1], Q_P0[2], Q_P0[3]), dt);
  wk_tensor_set_requires_grad(t, true);
  wk_optimizer *opt = algo_make(c, &t, defaults);
  TU_NOTNULL(opt);
  ck_assert_str_eq(wk_optimizer_name(opt), c->kind);
  double tol = dt == WK_F64 ? 1e-12 : 1e-6;
  for (int k = 1; k <= 10; k++) {
    wk_scope_begin();
    double *cur = tu_values(t), g[QN];
    for (int i = 0; i < QN; i++) g[i] = Q_A[i] * cur[i] + Q_B[i];
    free(cur);
    TU_OK(wk_tensor_set_grad(t, wk_to_dtype(TU_T(WK_F64, (QN), g[0], g[1], g[2], g[3]), dt)));
    TU_OK(wk_optim_step(opt));
    algo_ref_step(c, p, m, v, &mp, k);
    double *now = tu_values(t);
    for (int i = 0; i < QN; i++)
      ck_assert_msg(fabs(now[i] - p[i]) <= tol * (1 + fabs(p[i])), "%s %s step %d p[%d]: %.17g, by hand %.17g",
                    c->kind, wk_dtype_name(dt), k, i, now[i], p[i]);
    free(now);
    wk_scope_end();
  }
  /* the state dict holds step (and NAdam's mu_product) and round-trips into a fresh optimizer */
  wk_state_dict *sd = wk_optim_state_dict(opt);
  TU_NOTNULL(sd);
  double step = 0;
  TU_OK(wk_item(wk_state_dict_get(sd, "state.0.step"), &step));
  ck_assert(step == 10);
  if (!strcmp(c->kind, "NAdam")) {
    double mpv = 0;
    TU_OK(wk_item(wk_state_dict_get(sd, "state.0.mu_product"), &mpv));
    ck_assert_msg(fabs(mpv - mp) <= 1e-15, "mu_product %.17g, by hand %.17g", mpv, mp);
  }
  wk_no_grad_begin();
  wk_tensor *t2 = wk_clone(t); /* a leaf with t's values */
  wk_no_grad_end();
  wk_tensor_set_requires_grad(t2, true);
  wk_optimizer *o2 = algo_make(c, &t2, false);
  TU_OK(wk_optim_load_state_dict(o2, sd));
  double *cur = tu_values(t), g[QN];
  for (int i = 0; i < QN; i++) g[i] = Q_A[i] * cur[i] + Q_B[i];
  free(cur);
  wk_tensor *gt = wk_to_dtype(TU_T(WK_F64, (QN), g[0], g[1], g[2], g[3]), dt);
  TU_OK(wk_tensor_set_grad(t, gt));
  TU_OK(wk_tensor_set_grad(t2, gt));
  TU_OK(wk_optim_step(opt));
  TU_OK(wk_optim_step(o2));
  double *a = tu_values(t), *b = tu_values(t2);
  for (int i = 0; i < QN; i++) ck_assert_msg(a[i] == b[i], "after load_state_dict p[%d]: %.17g vs %.17g", i, a[i], b[i]);
  free(a);
  free(b);
  wk_state_dict_free(sd);
  wk_optimizer_free(o2);
  wk_optimizer_free(opt);
  wk_scope_end();
}
END_TEST

START_TEST(test_optim_more_bad_options) {
  wk_scope_begin();
  wk_tensor *p = TU_T(WK_F32, (2), 1, 2);
  ck_assert_ptr_null(wk_optim_adadelta(&p, 1, (wk_adadelta_opts){.rho = 1.5}));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "Adadelta: Invalid rho value: 1.5");
  ck_assert_ptr_null(wk_optim_nadam(&p, 1, (wk_nadam_opts){.momentum_decay = -1}));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "NAdam: Invalid momentum_decay value: -1");
  ck_assert_ptr_null(wk_optim_radam(&p, 1, (wk_radam_opts){.beta2 = 1}));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "RAdam: Invalid beta parameter at index 1: 1");
  ck_assert_ptr_null(wk_optim_adamax(&p, 1, (wk_adamax_opts){.lr = -0.1}));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "Adamax: Invalid learning rate: -0.1");
  ck_assert_ptr_null(wk_optim_adamax(NULL, 1, (wk_adamax_opts){0}));
  TU_FAILS_WITH(WK_ERR_NULL, "params is NULL");
  /* options by name, as PyTorch's param_groups */
  wk_optimizer *o = wk_optim_nadam(&p, 1, (wk_nadam_opts){0});
  double v = 0;
  TU_OK(wk_optim_get_option(o, 0, "momentum_decay", &v));
  ck_assert(v == 4e-3);
  TU_OK(wk_optim_get_option(o, 0, "lr", &v));
  ck_assert(v == 2e-3);
  ck_assert_int_eq(wk_optim_set_option(o, 0, "beta1", 1.0), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "Invalid beta parameter at index 0");
  wk_optimizer_free(o);
  wk_optimizer *d = wk_optim_adadelta(&p, 1, (wk_adadelta_opts){.rho = WK_OPTIM_ZERO});
  TU_NOTNULL(d);
  TU_OK(wk_optim_get_option(d, 0, "rho", &v));
  ck_assert(v == 0);
  wk_optimizer_free(d);
  wk_scope_end();
}
END_TEST


/* ==== LambdaLR, MultiplicativeLR, CyclicLR ================================================== */
static double lam_by_group(int64_t e, int g, void *user) {
  (void)user;
  return g == 0 ? pow(0.95, (double)e) : 1.0 / (1.0 + (double)e);
}
static double lam_nan_at_3(int64_t e, int g, void *user) {
  (void)g;
  *(int *)user += 1;
  return e == 3 ? NAN : 0.5;
}
static double lam_const(int64_t e, int g, void *user) {
  (void)e, (void)g;
  return *(double *)user;
}

/* PyTorch's LambdaLR (lr = initial_lr * lambda(epoch)) and MultiplicativeLR
 * (lr *= lambda(epoch) after epoch 0), two groups. */
START_TEST(test_optim_lambda_schedulers) {
  wk_scope_begin();
  wk_tensor *a = TU_T(WK_F32, (2), 1, 2), *b = TU_T(WK_F32, (2), 3, 4);
  wk_optimizer *opt = wk_optim_sgd(&a, 1, (wk_sgd_opts){.lr = 0.1});
  TU_OK(wk_optim_add_param_group(opt, &b, 1, (wk_optim_option[]){{"lr", 0.01}}, 1));
  wk_lr_scheduler *s = wk_lr_lambda(opt, (wk_lambda_lr_opts){.lr_lambda = lam_by_group});
  TU_NOTNULL(s);
  ck_assert_str_eq(wk_lr_scheduler_name(s), "LambdaLR");
  for (int64_t e = 0; e <= 6; e++) {
    if (e) TU_OK(wk_lr_scheduler_step(s));
    ck_assert_msg(fabs(wk_optim_get_lr(opt, 0) - 0.1 * pow(0.95, (double)e)) < 1e-15, "LambdaLR group 0 epoch %d",
                  (int)e);
    ck_assert_msg(fabs(wk_optim_get_lr(opt, 1) - 0.01 / (1.0 + (double)e)) < 1e-15, "LambdaLR group 1 epoch %d",
                  (int)e);
  }
  wk_lr_scheduler_free(s);
  double f = 0.9;
  TU_OK(wk_optim_set_option(opt, 0, "lr", 0.1));
  TU_OK(wk_optim_set_option(opt, 1, "lr", 0.01));
  s = wk_lr_multiplicative(opt, (wk_lambda_lr_opts){.lr_lambda = lam_const, .user = &f});
  TU_NOTNULL(s);
  double want0 = 0.1, want1 = 0.01;
  for (int e = 0; e <= 5; e++) {
    if (e) {
      TU_OK(wk_lr_scheduler_step(s));
      want0 *= 0.9, want1 *= 0.9;
    }
    ck_assert(wk_optim_get_lr(opt, 0) == want0 && wk_optim_get_lr(opt, 1) == want1);
  }
  f = 0.5; /* the callback is read at each step */
  TU_OK(wk_lr_scheduler_step(s));
  ck_assert(wk_optim_get_lr(opt, 0) == want0 * 0.5);
  wk_lr_scheduler_free(s);
  /* errors: a NULL lambda, a NaN factor (the step changes nothing) */
  ck_assert_ptr_null(wk_lr_lambda(opt, (wk_lambda_lr_opts){0}));
  TU_FAILS_WITH(WK_ERR_NULL, "LambdaLR: lr_lambda is NULL");
  int calls = 0;
  s = wk_lr_multiplicative(opt, (wk_lambda_lr_opts){.lr_lambda = lam_nan_at_3, .user = &calls});
  TU_OK(wk_lr_scheduler_step(s));
  TU_OK(wk_lr_scheduler_step(s));
  double before = wk_optim_get_lr(opt, 0);
  ck_assert_int_eq(wk_lr_scheduler_step(s), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "lr_lambda returned NaN for group 0 at epoch 3");
  ck_assert(wk_optim_get_lr(opt, 0) == before);
  ck_assert_int_eq(wk_lr_scheduler_last_epoch(s), 2);
  wk_lr_scheduler_free(s);
  wk_optimizer_free(opt);
  wk_scope_end();
}
END_TEST

/* CyclicLR: torch/optim/lr_scheduler.py's get_lr written out (cycle =
 * floor(1 + e / total), x = 1 + e / total - cycle, ...), its documented
 * landmarks (peak max_lr at step_size_up, triangular2 halving), momentum in
 * opposite phase, state dict round trip. */
static double cyc_ref(double e, double up, double down, double base, double max, int mode, double gamma, double *mom) {
  double total = up + down, ratio = up / total, cycle = floor(1 + e / total), x = 1. + e / total - cycle;
  double sf = x <= ratio ? x / ratio : (x - 1) / (ratio - 1);
  double scale = mode == WK_CYCLIC_TRIANGULAR2 ? 1 / pow(2., cycle - 1) : mode == WK_CYCLIC_EXP_RANGE ? pow(gamma, e) : 1;
  if (mom) *mom = 0.9 - (0.9 - 0.8) * sf * scale;
  return base + (max - base) * sf * scale;
}

START_TEST(test_optim_cyclic_lr) {
  wk_scope_begin();
  wk_tensor *a = TU_T(WK_F32, (2), 1, 2);
  wk_optimizer *opt = wk_optim_sgd(&a, 1, (wk_sgd_opts){.lr = 0.5, .momentum = 0.3});
  wk_lr_scheduler *s = wk_lr_cyclic(opt, (wk_cyclic_lr_opts){.base_lr = 0.001, .max_lr = 0.006, .step_size_up = 4,
                                                             .step_size_down = 2, .mode = WK_CYCLIC_TRIANGULAR2});
  TU_NOTNULL(s);
  ck_assert(wk_optim_get_lr(opt, 0) == 0.001); /* the group starts at base_lr */
  double m = 0;
  TU_OK(wk_optim_get_option(opt, 0, "momentum", &m));
  ck_assert(m == 0.9); /* ... and max_momentum (x = 0) */
  for (int e = 1; e <= 20; e++) {
    TU_OK(wk_lr_scheduler_step(s));
    double wm, want = cyc_ref(e, 4, 2, 0.001, 0.006, WK_CYCLIC_TRIANGULAR2, 1, &wm);
    TU_OK(wk_optim_get_option(opt, 0, "momentum", &m));
    ck_assert_msg(wk_optim_get_lr(opt, 0) == want, "step %d: lr %.17g, PyTorch's formula %.17g", e,
                  wk_optim_get_lr(opt, 0), want);
    ck_assert_msg(fabs(m - wm) < 1e-15, "step %d: momentum %.17g, expected %.17g", e, m, wm);
    if (e == 4) ck_assert(fabs(wk_optim_get_lr(opt, 0) - 0.006) < 1e-15); /* the first peak */
    if (e == 6) ck_assert(fabs(wk_optim_get_lr(opt, 0) - 0.001) < 1e-15); /* back down after step_size_down */
    if (e == 10) ck_assert(fabs(wk_optim_get_lr(opt, 0) - 0.0035) < 1e-15); /* triangular2: half the height */
  }
  /* round trip at step 20: a fresh scheduler loaded from the dict continues identically */
  wk_state_dict *sd = wk_lr_scheduler_state_dict(s);
  TU_NOTNULL(sd);
  wk_tensor *b = TU_T(WK_F32, (2), 1, 2);
  wk_optimizer *opt2 = wk_optim_sgd(&b, 1, (wk_sgd_opts){.lr = 0.5});
  wk_lr_scheduler *s2 = wk_lr_cyclic(opt2, (wk_cyclic_lr_opts){.base_lr = 1, .max_lr = 2});
  TU_OK(wk_lr_scheduler_load_state_dict(s2, sd));
  for (int e = 21; e <= 25; e++) {
    TU_OK(wk_lr_scheduler_step(s));
    TU_OK(wk_lr_scheduler_step(s2));
    ck_assert_msg(wk_optim_get_lr(opt, 0) == wk_optim_get_lr(opt2, 0), "step %d after load: %.17g vs %.17g", e,
                  wk_optim_get_lr(opt, 0), wk_optim_get_lr(opt2, 0));
  }
  wk_state_dict_free(sd);
  wk_lr_scheduler_free(s2);
  wk_optimizer_free(opt2);
  wk_lr_scheduler_free(s);
  /* exp_range scales by iterations; Adam cycles beta1 */
  wk_optimizer *adam = wk_optim_adam(&a, 1, (wk_adam_opts){0});
  s = wk_lr_cyclic(adam, (wk_cyclic_lr_opts){.base_lr = 0.01, .max_lr = 0.1, .step_size_up = 3,
                                             .mode = WK_CYCLIC_EXP_RANGE, .gamma = 0.9});
  TU_NOTNULL(s);
  for (int e = 1; e <= 9; e++) {
    TU_OK(wk_lr_scheduler_step(s));
    double wm, want = cyc_ref(e, 3, 3, 0.01, 0.1, WK_CYCLIC_EXP_RANGE, 0.9, &wm), b1;
    TU_OK(wk_optim_get_option(adam, 0, "beta1", &b1));
    ck_assert_msg(wk_optim_get_lr(adam, 0) == want, "exp_range step %d: %.17g vs %.17g", e, wk_optim_get_lr(adam, 0),
                  want);
    ck_assert(fabs(b1 - wm) < 1e-15);
  }
  wk_lr_scheduler_free(s);
  /* errors */
  wk_optimizer *ada = wk_optim_adagrad(&a, 1, (wk_adagrad_opts){0});
  ck_assert_ptr_null(wk_lr_cyclic(ada, (wk_cyclic_lr_opts){.base_lr = 0.1, .max_lr = 1}));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "optimizer must support momentum or beta1 with `cycle_momentum` option enabled");
  ck_assert_ptr_nonnull(s = wk_lr_cyclic(ada, (wk_cyclic_lr_opts){.base_lr = 0.1, .max_lr = 1, .no_cycle_momentum = true}));
  wk_lr_scheduler_free(s);
  ck_assert_ptr_null(wk_lr_cyclic(adam, (wk_cyclic_lr_opts){.max_lr = 1}));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "base_lr and max_lr are required");
  ck_assert_ptr_null(wk_lr_cyclic(adam, (wk_cyclic_lr_opts){.base_lr = 0.1, .max_lr = 1, .mode = 7}));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "mode is invalid and scale_fn is None");
  ck_assert_ptr_null(wk_lr_cyclic(NULL, (wk_cyclic_lr_opts){.base_lr = 0.1, .max_lr = 1}));
  TU_FAILS_WITH(WK_ERR_NULL, "'optimizer' is NULL");
  wk_optimizer_free(ada);
  wk_optimizer_free(adam);
  wk_optimizer_free(opt);
  wk_scope_end();
}
END_TEST


/* ==== AveragedModel and update_bn (torch.optim.swa_utils) =================================== */
/* Sets every parameter of a Linear(3, 2) to base + k * (index + 1) (f64 values, exact in f32). */
static void set_linear(wk_module *m, double base, double step) {
  wk_tensor *ps[2];
  ck_assert_int_eq(wk_module_named_parameters(m, NULL, ps, 2), 2);
  wk_no_grad_begin();
  for (int j = 0; j < 2; j++) {
    int64_t n = wk_tensor_numel(ps[j]);
    double v[6];
    for (int64_t i = 0; i < n; i++) v[i] = base + step * (double)(i + 1);
    wk_tensor *t = wk_tensor_from_data(v, WK_F64, wk_tensor_sizes(ps[j]), wk_tensor_dim(ps[j]));
    TU_NOTNULL(wk_copy_(ps[j], t));
    wk_release(t);
  }
  wk_no_grad_end();
}
static wk_tensor *avg_max(wk_tensor *avg, wk_tensor *cur, int64_t n, void *user) {
  (void)n;
  *(int *)user += 1;
  return wk_maximum(avg, cur);
}

START_TEST(test_optim_averaged_model) {
  wk_scope_begin();
  wk_module *model = wk_nn_linear(3, 2, true), *copy = wk_nn_linear(3, 2, true), *copy2 = wk_nn_linear(3, 2, true),
            *copy3 = wk_nn_linear(3, 2, true);
  TU_NOTNULL(model);
  wk_averaged_model *swa = wk_averaged_model_new(copy, (wk_averaged_model_opts){0});
  wk_averaged_model *ema = wk_averaged_model_new(copy2, (wk_averaged_model_opts){.strategy = WK_AVERAGE_EMA, .decay = 0.75});
  int calls = 0;
  wk_averaged_model *mx = wk_averaged_model_new(copy3, (wk_averaged_model_opts){.avg_fn = avg_max, .user = &calls});
  TU_NOTNULL(swa);
  TU_NOTNULL(ema);
  /* four model states: base 1, -2, 4, 0.5 with step 0.25 */
  const double bases[4] = {1, -2, 4, 0.5};
  for (int k = 0; k < 4; k++) {
    set_linear(model, bases[k], 0.25);
    TU_OK(wk_averaged_model_update(swa, model));
    TU_OK(wk_averaged_model_update(ema, model));
    TU_OK(wk_averaged_model_update(mx, model));
  }
  ck_assert_int_eq(wk_averaged_model_n_averaged(swa), 4);
  ck_assert_int_eq(calls, 6); /* per tensor (weight, bias), never for the first copy */
  /* by hand: SWA is the mean; EMA folds 0.75 * avg + 0.25 * cur from the first state; max is the max */
  double mean = 0, e = bases[0], mxv = bases[0];
  for (int k = 0; k < 4; k++) mean += bases[k] / 4;
  for (int k = 1; k < 4; k++) e = 0.75 * e + 0.25 * bases[k], mxv = fmax(mxv, bases[k]);
  wk_tensor *ps[2];
  wk_module_named_parameters(wk_averaged_model_module(swa), NULL, ps, 2);
  double *w = tu_values(ps[0]);
  for (int i = 0; i < 6; i++)
    ck_assert_msg(fabs(w[i] - (mean + 0.25 * (i + 1))) < 1e-6, "SWA weight[%d] = %.9g, mean %.9g", i, w[i],
                  mean + 0.25 * (i + 1));
  free(w);
  wk_module_named_parameters(wk_averaged_model_module(ema), NULL, ps, 2);
  w = tu_values(ps[1]);
  for (int i = 0; i < 2; i++) /* bias: base + 0.25 (i + 1) folded the same way */
    ck_assert_msg(fabs(w[i] - (e + 0.25 * (i + 1))) < 1e-6, "EMA bias[%d] = %.9g, expected %.9g", i, w[i],
                  e + 0.25 * (i + 1));
  free(w);
  wk_module_named_parameters(wk_averaged_model_module(mx), NULL, ps, 2);
  w = tu_values(ps[0]);
  ck_assert(fabs(w[0] - (mxv + 0.25)) < 1e-6);
  free(w);
  /* state dict: module.<name> and n_averaged; a fresh AveragedModel loads it */
  wk_state_dict *sd = wk_averaged_model_state_dict(swa);
  TU_NOTNULL(sd);
  TU_NOTNULL(wk_state_dict_get(sd, "module.weight"));
  TU_NOTNULL(wk_state_dict_get(sd, "module.bias"));
  double n;
  TU_OK(wk_item(wk_state_dict_get(sd, "n_averaged"), &n));
  ck_assert(n == 4);
  wk_module *copy4 = wk_nn_linear(3, 2, true);
  wk_averaged_model *swa2 = wk_averaged_model_new(copy4, (wk_averaged_model_opts){0});
  TU_OK(wk_averaged_model_load_state_dict(swa2, sd));
  ck_assert_int_eq(wk_averaged_model_n_averaged(swa2), 4);
  set_linear(model, 10, 0.25);
  TU_OK(wk_averaged_model_update(swa, model));
  TU_OK(wk_averaged_model_update(swa2, model));
  wk_tensor *a[2], *b[2];
  wk_module_named_parameters(copy, NULL, a, 2);
  wk_module_named_parameters(copy4, NULL, b, 2);
  double *av = tu_values(a[0]), *bv = tu_values(b[0]);
  for (int i = 0; i < 6; i++) ck_assert(av[i] == bv[i]);
  ck_assert(fabs(av[0] - ((mean * 4 + 10) / 5 + 0.25)) < 1e-6); /* the fifth state joins the mean */
  free(av);
  free(bv);
  /* errors: a copy of another structure, bad options, bad dicts */
  wk_module *other = wk_nn_linear(4, 2, true);
  ck_assert_int_eq(wk_averaged_model_update(swa, other), WK_ERR_SHAPE);
  TU_FAILS_WITH(WK_ERR_SHAPE, "does not match");
  ck_assert_int_eq(wk_averaged_model_n_averaged(swa), 5);
  ck_assert_ptr_null(wk_averaged_model_new(copy, (wk_averaged_model_opts){.strategy = WK_AVERAGE_EMA, .decay = 2}));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "decay must lie in [0, 1]");
  ck_assert_ptr_null(wk_averaged_model_new(NULL, (wk_averaged_model_opts){0}));
  TU_FAILS_WITH(WK_ERR_NULL, "'module' is NULL");
  TU_OK(wk_state_dict_remove(sd, "n_averaged"));
  ck_assert_int_eq(wk_averaged_model_load_state_dict(swa2, sd), WK_ERR_NOT_FOUND);
  TU_FAILS_WITH(WK_ERR_NOT_FOUND, "missing key 'n_averaged'");
  wk_state_dict_free(sd);
  wk_module_release(other);
  wk_averaged_model_free(swa);
  wk_averaged_model_free(swa2);
  wk_averaged_model_free(ema);
  wk_averaged_model_free(mx);
  wk_averaged_model_free(NULL);
  wk_module_release(model);
  wk_module_release(copy);
  wk_module_release(copy2);
  wk_module_release(copy3);
  wk_module_release(copy4);
  wk_scope_end();
}
END_TEST

/* update_bn on Sequential(ReLU, BatchNorm1d(3)) over three batches of 4: the
 * running mean and variance are the cumulative averages of the batches'
 * mean and unbiased variance of relu(x) (PyTorch's momentum=None), computed
 * here by hand; num_batches_tracked counts the batches; the momentum and the
 * eval mode come back. */
START_TEST(test_optim_update_bn) {
  wk_scope_begin();
  double x[12][3];
  for (int r = 0; r < 12; r++)
    for (int c = 0; c < 3; c++) x[r][c] = sin(1.3 * r + 0.7 * c) * (c + 1) + 0.2 * c;
  wk_tensor *xt = wk_to_dtype(wk_tensor_from_data(x, WK_F64, WK_SHAPE(12, 3)), WK_F32);
  wk_dataset *ds = wk_tensor_dataset(&xt, 1);
  TU_NOTNULL(ds);
  wk_dataloader *dl = wk_dataloader_new(ds, WK_LOADER_OPTS(.batch_size = 4));
  TU_NOTNULL(dl);
  wk_module *bn = wk_nn_batch_norm1d(3, (wk_norm_opts){0});
  wk_module *net = wk_nn_sequential((wk_module *[]){wk_nn_relu(), bn}, 2);
  TU_NOTNULL(net);
  /* some ordinary training forwards first: the statistics to be replaced */
  TU_NOTNULL(wk_module_forward(net, xt));
  TU_NOTNULL(wk_module_forward(net, wk_mul_scalar(xt, 3)));
  TU_OK(wk_module_train(net, false));
  TU_OK(wk_update_bn(dl, net, (wk_device){0}));
  ck_assert(!wk_module_is_training(net));
  double rm[3] = {0}, rv[3] = {0};
  for (int b = 0; b < 3; b++) {
    double f = 1.0 / (b + 1);
    for (int c = 0; c < 3; c++) {
      double m = 0, v = 0;
      for (int r = 4 * b; r < 4 * b + 4; r++) m += fmax((float)x[r][c], 0) / 4;
      for (int r = 4 * b; r < 4 * b + 4; r++) v += pow(fmax((float)x[r][c], 0) - m, 2) / 3;
      rm[c] = (1 - f) * rm[c] + f * m;
      rv[c] = (1 - f) * rv[c] + f * v;
    }
  }
  TU_CLOSE(wk_module_buffer(bn, "running_mean"), rm, 3, 1e-5, 1e-6);
  TU_CLOSE(wk_module_buffer(bn, "running_var"), rv, 3, 1e-5, 1e-6);
  double nbt;
  TU_OK(wk_item(wk_module_buffer(bn, "num_batches_tracked"), &nbt));
  ck_assert(nbt == 3);
  /* the module's momentum (0.1) is untouched: one more training forward moves the mean by a tenth */
  TU_OK(wk_module_train(net, true));
  TU_NOTNULL(wk_module_forward(net, xt));
  double all[3] = {0};
  for (int c = 0; c < 3; c++) {
    for (int r = 0; r < 12; r++) all[c] += fmax((float)x[r][c], 0) / 12;
    all[c] = 0.9 * rm[c] + 0.1 * all[c];
  }
  TU_CLOSE(wk_module_buffer(bn, "running_mean"), all, 3, 1e-5, 1e-6);
  /* a model without BatchNorm is left alone; NULLs are refused */
  wk_module *lin = wk_nn_linear(3, 3, true);
  TU_OK(wk_update_bn(dl, lin, (wk_device){0}));
  ck_assert_int_eq(wk_update_bn(NULL, net, (wk_device){0}), WK_ERR_NULL);
  TU_FAILS_WITH(WK_ERR_NULL, "'loader' is NULL");
  ck_assert_int_eq(wk_update_bn(dl, NULL, (wk_device){0}), WK_ERR_NULL);
  TU_FAILS_WITH(WK_ERR_NULL, "'model' is NULL");
  wk_module_release(lin);
  wk_module_release(net);
  wk_dataloader_free(dl);
  wk_dataset_free(ds);
  wk_scope_end();
}
END_TEST


/* SWALR: swa_utils.py's get_lr worked by hand for lr 0.1 -> swa_lr 0.01 over 3 epochs. */
START_TEST(test_optim_swa_lr) {
  wk_scope_begin();
  wk_tensor *a = TU_T(WK_F32, (2), 1, 2);
  const double cosv[] = {0.1, 0.0775, 0.0325, 0.01, 0.01, 0.01}, linv[] = {0.1, 0.07, 0.04, 0.01, 0.01};
  for (int how = 0; how < 2; how++) {
    wk_optimizer *opt = wk_optim_sgd(&a, 1, (wk_sgd_opts){.lr = 0.1});
    wk_lr_scheduler *s = wk_lr_swa(opt, (wk_swa_lr_opts){.swa_lr = 0.01, .anneal_epochs = 3,
                                                        .anneal_strategy = how ? WK_ANNEAL_LINEAR : WK_ANNEAL_COS});
    TU_NOTNULL(s);
    ck_assert_str_eq(wk_lr_scheduler_name(s), "SWALR");
    double v;
    TU_OK(wk_optim_get_option(opt, 0, "swa_lr", &v));
    ck_assert(v == 0.01);
    const double *want = how ? linv : cosv;
    for (int e = 0; e < (how ? 5 : 6); e++) {
      if (e) TU_OK(wk_lr_scheduler_step(s));
      ck_assert_msg(fabs(wk_optim_get_lr(opt, 0) - want[e]) < 1e-12, "%s step %d: %.17g, by hand %.17g",
                    how ? "linear" : "cos", e, wk_optim_get_lr(opt, 0), want[e]);
    }
    wk_lr_scheduler_free(s);
    wk_optimizer_free(opt);
  }
  /* no annealing: swa_lr at once */
  wk_optimizer *opt = wk_optim_sgd(&a, 1, (wk_sgd_opts){.lr = 0.1});
  wk_lr_scheduler *s = wk_lr_swa(opt, (wk_swa_lr_opts){.swa_lr = 0.05, .anneal_epochs = WK_SWALR_NO_ANNEAL});
  TU_NOTNULL(s);
  ck_assert(fabs(wk_optim_get_lr(opt, 0) - 0.05) < 1e-15);
  wk_lr_scheduler_free(s);
  ck_assert_ptr_null(wk_lr_swa(opt, (wk_swa_lr_opts){0}));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "swa_lr is required");
  ck_assert_ptr_null(wk_lr_swa(opt, (wk_swa_lr_opts){.swa_lr = 0.1, .anneal_epochs = -5}));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "anneal_epochs must be equal or greater than 0");
  wk_optimizer_free(opt);
  wk_scope_end();
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("check_optim");
  TCase *tc = tcase_create("trajectories");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_loop_test(tc, test_optim_trajectory, 0, OREF_NCASES);
  tcase_add_loop_test(tc, test_optim_state_dict_round_trip, 0, OREF_NCASES);
  suite_add_tcase(s, tc);
  tc = tcase_create("optimizers");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_test(tc, test_optim_state_dict_layout);
  tcase_add_test(tc, test_optim_param_groups);
  tcase_add_test(tc, test_optim_zero_grad);
  tcase_add_test(tc, test_optim_missing_grads_skipped);
  tcase_add_test(tc, test_optim_bad_arguments);
  tcase_add_test(tc, test_optim_fused_ops);
  tcase_add_test(tc, test_optim_half_params);
  tcase_add_test(tc, test_optim_training_loop_scopes);
  tcase_add_loop_test(tc, test_optim_more_algorithms_by_hand, 0, 2 * NALGO);
  tcase_add_test(tc, test_optim_more_bad_options);
  suite_add_tcase(s, tc);
  tc = tcase_create("schedulers");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_test(tc, test_optim_scheduler_errors);
  tcase_add_test(tc, test_optim_scheduler_state_dict_nested);
  tcase_add_test(tc, test_optim_lambda_schedulers);
  tcase_add_test(tc, test_optim_cyclic_lr);
  tcase_add_test(tc, test_optim_swa_lr);
  suite_add_tcase(s, tc);
  tc = tcase_create("swa");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_test(tc, test_optim_averaged_model);
  tcase_add_test(tc, test_optim_update_bn);
  suite_add_tcase(s, tc);
  tc = tcase_create("clipping");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_loop_test(tc, test_optim_clip_grad_norm_vs_torch, 0, OREF_NCLIPS);
  tcase_add_test(tc, test_optim_clip_grad_value_and_errors);
  suite_add_tcase(s, tc);
  tc = tcase_create("service");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_add_test(tc, test_optim_service);
  suite_add_tcase(s, tc);
  tc = tcase_create("missing");
  tcase_add_test(tc, test_optim_missing_plugin); /* no fixture: the plugin is disabled before wk_init */
  suite_add_tcase(s, tc);
  return s;
}
TU_MAIN(make_suite)
