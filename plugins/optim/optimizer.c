/* optim plugin: optimizer objects: kinds (SGD, Adam, AdamW, RMSprop, Adagrad)
 * with their options and state buffers, parameter groups, step() calling the
 * fused update op of each parameter under no_grad, zero_grad(). State dicts
 * live in optimizer_sd.c. */
#include <stdlib.h>

#include "optim.h"

/* ---- option tables --------------------------------------------------------------- */
enum { R_ANY, R_NONNEG, R_BETA, R_BOOL, R_UNIT };

static const optdef sgd_defs[] = {{"lr", R_NONNEG, "Invalid learning rate"},
                                  {"momentum", R_NONNEG, "Invalid momentum value"},
                                  {"dampening", R_ANY, NULL},
                                  {"weight_decay", R_NONNEG, "Invalid weight_decay value"},
                                  {"nesterov", R_BOOL, NULL},
                                  {"maximize", R_BOOL, NULL}};
static const optdef adam_defs[] = {{"lr", R_NONNEG, "Invalid learning rate"},
                                   {"beta1", R_BETA, "Invalid beta parameter at index 0"},
                                   {"beta2", R_BETA, "Invalid beta parameter at index 1"},
                                   {"eps", R_NONNEG, "Invalid epsilon value"},
                                   {"weight_decay", R_NONNEG, "Invalid weight_decay value"},
                                   {"amsgrad", R_BOOL, NULL},
                                   {"maximize", R_BOOL, NULL}};
static const optdef rmsprop_defs[] = {{"lr", R_NONNEG, "Invalid learning rate"},
                                      {"momentum", R_NONNEG, "Invalid momentum value"},
                                      {"alpha", R_NONNEG, "Invalid alpha value"},
                                      {"eps", R_NONNEG, "Invalid epsilon value"},
                                      {"centered", R_BOOL, NULL},
                                      {"weight_decay", R_NONNEG, "Invalid weight_decay value"},
                                      {"maximize", R_BOOL, NULL}};
static const optdef adagrad_defs[] = {
    {"lr", R_NONNEG, "Invalid learning rate"},
    {"lr_decay", R_NONNEG, "Invalid lr_decay value"},
    {"eps", R_NONNEG, "Invalid epsilon value"},
    {"weight_decay", R_NONNEG, "Invalid weight_decay value"},
    {"initial_accumulator_value", R_NONNEG, "Invalid initial_accumulator_value value"},
    {"maximize", R_BOOL, NULL}};

static const optdef nadam_defs[] = {{"lr", R_NONNEG, "Invalid learning rate"},
                                    {"beta1", R_BETA, "Invalid beta parameter at index 0"},
                                    {"beta2", R_BETA, "Invalid beta parameter at index 1"},
                                    {"eps", R_NONNEG, "Invalid epsilon value"},
                                    {"weight_decay", R_NONNEG, "Invalid weight_decay value"},
                                    {"momentum_decay", R_NONNEG, "Invalid momentum_decay value"},
                                    {"decoupled_weight_decay", R_BOOL, NULL},
                                    {"maximize", R_BOOL, NULL}};
static const optdef radam_defs[] = {{"lr", R_NONNEG, "Invalid learning rate"},
                                    {"beta1", R_BETA, "Invalid beta parameter at index 0"},
                                    {"beta2", R_BETA, "Invalid beta parameter at index 1"},
                                    {"eps", R_NONNEG, "Invalid epsilon value"},
                                    {"weight_decay", R_NONNEG, "Invalid weight_decay value"},
                                    {"decoupled_weight_decay", R_BOOL, NULL},
                                    {"maximize", R_BOOL, NULL}};
static const optdef adadelta_defs[] = {{"lr", R_NONNEG, "Invalid learning rate"},
                                       {"rho", R_UNIT, "Invalid rho value"},
                                       {"eps", R_NONNEG, "Invalid epsilon value"},
                                       {"weight_decay", R_NONNEG, "Invalid weight_decay value"},
                                       {"maximize", R_BOOL, NULL}};
static const optdef adamax_defs[] = {{"lr", R_NONNEG, "Invalid learning rate"},
                                     {"beta1", R_BETA, "Invalid beta parameter at index 0"},
                                     {"beta2", R_BETA, "Invalid beta parameter at index 1"},
                                     {"eps", R_NONNEG, "Invalid epsilon value"},
                                     {"weight_decay", R_NONNEG, "Invalid weight_decay value"},
                                     {"maximize", R_BOOL, NULL}};

static const char *const sgd_bufs[] = {"momentum_buffer"};
static const char *const adam_bufs[] = {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
static const char *const rmsprop_bufs[] = {"square_avg", "momentum_buffer", "grad_avg"};
static const char *const adagrad_bufs[] = {"sum"};
static const char *const nadam_bufs[] = {"exp_avg", "exp_avg_sq"};
static const char *const radam_bufs[] = {"exp_avg", "exp_avg_sq"};
static const char *const adadelta_bufs[] = {"square_avg", "acc_delta"};
static const char *const adamax_bufs[] = {"exp_avg", "exp_inf"};

/* ---- group option access ------------------------------------------------------------ */
static double *slot(optim_group *g, const char *name) {
  for (int i = 0; i < g->nopt; i++)
    if (strcmp(g->o[i].name, name) == 0) return &g->o[i].v;
  return NULL;
}
static double gv(const optim_group *g, const char *name) {
  double *p = slot((optim_group *)g, name);
  return p ? *p : 0;
}
static wk_status put(optim_group *g, const char *name, double v) {
  double *p = slot(g, name);
  if (p) {
    *p = v;
    return WK_OK;
  }
  if (strlen(name) >= OPTIM_NAME_LEN)
    return wk_error(WK_ERR_INVALID_ARG, "optimizer option name '%s' is too long (%d characters at most)", name,
                    OPTIM_NAME_LEN - 1);
  if (g->nopt == OPTIM_MAX_OPTS)
    return wk_error(WK_ERR_INVALID_ARG, "too many options in a parameter group (%d at most)", OPTIM_MAX_OPTS);
  snprintf(g->o[g->nopt].name, OPTIM_NAME_LEN, "%s", name);
  g->o[g->nopt++].v = v;
  return WK_OK;
}

static const optdef *find_def(const optim_kind *k, const char *name) {
  for (int i = 0; i < k->ndefs; i++)
    if (strcmp(k->defs[i].name, name) == 0) return &k->defs[i];
  return NULL;
}

/* Validates one value of a known option; booleans are normalised to 0/1. */
static wk_status check_value(const optim_kind *k, const optdef *d, double *v) {
  switch (d->rule) {
    case R_NONNEG:
      if (!(*v >= 0)) return wk_error(WK_ERR_INVALID_ARG, "%s: %s: %g", k->name, d->msg, *v);
      break;
    case R_BETA:
      if (!(*v >= 0 && *v < 1)) return wk_error(WK_ERR_INVALID_ARG, "%s: %s: %g", k->name, d->msg, *v);
      break;
    case R_UNIT: /* Adadelta's rho: [0, 1] */
      if (!(*v >= 0 && *v <= 1)) return wk_error(WK_ERR_INVALID_ARG, "%s: %s: %g", k->name, d->msg, *v);
      break;
    case R_BOOL:
      if (*v != *v) return wk_error(WK_ERR_INVALID_ARG, "%s: option '%s' is boolean, got NaN", k->name, d->name);
      *v = *v != 0;
      break;
    default:
      if (*v != *v) return wk_error(WK_ERR_INVALID_ARG, "%s: option '%s' is NaN", k->name, d->name);
      break;
  }
  return WK_OK;
}

/* Checks every known option of a group, then the kind's combinations. */
wk_status optim_check_group(const optim_kind *k, optim_group *g) {
  for (int i = 0; i < k->ndefs; i++) {
    double *v = slot(g, k->defs[i].name);
    if (!v) return wk_error(WK_ERR_INTERNAL, "%s: group lacks option '%s'", k->name, k->defs[i].name);
    wk_status s = check_value(k, &k->defs[i], v);
    if (s) return s;
  }
  if (k->id == OPTIM_SGD && gv(g, "nesterov") != 0 && (gv(g, "momentum") <= 0 || gv(g, "dampening") != 0))
    return wk_error(WK_ERR_INVALID_ARG, "%s: Nesterov momentum requires a momentum and zero dampening", k->name);
  return WK_OK;
}

/* ---- state buffers ------------------------------------------------------------------ */
/* A new zero (or `fill`) buffer shaped like param, kept out of any scope. */
static wk_tensor *new_buffer(wk_tensor *param, double fill) {
  wk_tensor *t = fill == 0 ? wk_zeros_like(param, (wk_options){0}) : wk_full_like(param, fill, (wk_options){0});
  return optim_keep(t);
}

static wk_status ensure(wk_tensor **slotp, wk_tensor *param, double fill) {
  if (*slotp) return WK_OK;
  *slotp = new_buffer(param, fill);
  return *slotp ? WK_OK : wk_last_error();
}

void optim_state_clear(optim_pstate *st) {
  for (int b = 0; b < OPTIM_NBUF; b++) {
    wk_release(st->buf[b]);
    st->buf[b] = NULL;
  }
  st->init = false;
  st->step = 0;
}

/* Creates the state a kind keeps from construction (Adagrad's sum). */
wk_status optim_eager_state(wk_optimizer *opt, const optim_group *g, int i) {
  if (opt->kind->id != OPTIM_ADAGRAD) return WK_OK;
  optim_pstate *st = &opt->state[i];
  st->step = 0;
  wk_status s = ensure(&st->buf[0], opt->params[i], gv(g, "initial_accumulator_value"));
  st->init = s == WK_OK;
  return s;
}

/* ---- per-kind updates: one fused op call per parameter --------------------------------- */
static wk_status call(wk_op *op, const wk_value *a, int n) {
  wk_value out[WK_MAX_OUTS];
  return wk_op_call(op, a, n, out);
}

static wk_status upd_sgd(wk_optimizer *opt, const optim_group *g, int i, wk_tensor *grad) {
  optim_pstate *st = &opt->state[i];
  wk_tensor *p = opt->params[i];
  double mom = gv(g, "momentum");
  bool is_new = false;
  if (mom != 0 && !st->buf[0]) {
    if (!(st->buf[0] = optim_keep(wk_empty_like(p, (wk_options){0})))) return wk_last_error();
    is_new = true;
  }
  wk_value a[] = {WK_VT(p),
                  WK_VT(grad),
                  mom != 0 ? WK_VT(st->buf[0]) : WK_VNONE,
                  WK_VF(gv(g, "lr")),
                  WK_VF(mom),
                  WK_VF(gv(g, "dampening")),
                  WK_VF(gv(g, "weight_decay")),
                  WK_VB(gv(g, "nesterov") != 0),
                  WK_VB(gv(g, "maximize") != 0),
                  WK_VB(is_new)};
  wk_status s = call(optim_op_sgd, a, (int)(sizeof a / sizeof a[0]));
  if (s && is_new) {
    wk_release(st->buf[0]);
    st->buf[0] = NULL;
  }
  if (!s) st->init = true;
  return s;
}

static wk_status upd_adam(wk_optimizer *opt, const optim_group *g, int i, wk_tensor *grad) {
  optim_pstate *st = &opt->state[i];
  wk_tensor *p = opt->params[i];
  bool ams = gv(g, "amsgrad") != 0;
  if (!st->init) st->step = 0;
  wk_status s;
  if ((s = ensure(&st->buf[0], p, 0)) || (s = ensure(&st->buf[1], p, 0)) || (ams && (s = ensure(&st->buf[2], p, 0))))
    return s;
  st->init = true;
  wk_value a[] = {WK_VT(p),
                  WK_VT(grad),
                  WK_VT(st->buf[0]),
                  WK_VT(st->buf[1]),
                  ams ? WK_VT(st->buf[2]) : WK_VNONE,
                  WK_VF(st->step + 1),
                  WK_VF(gv(g, "lr")),
                  WK_VF(gv(g, "beta1")),
                  WK_VF(gv(g, "beta2")),
                  WK_VF(gv(g, "eps")),
                  WK_VF(gv(g, "weight_decay")),
                  WK_VB(ams),
                  WK_VB(gv(g, "maximize") != 0),
                  WK_VB(opt->kind->id == OPTIM_ADAMW)};
  if (!(s = call(optim_op_adam, a, (int)(sizeof a / sizeof a[0])))) st->step += 1;
  return s;
}

static wk_status upd_rmsprop(wk_optimizer *opt, const optim_group *g, int i, wk_tensor *grad) {
  optim_pstate *st = &opt->state[i];
  wk_tensor *p = opt->params[i];
  double mom = gv(g, "momentum");
  bool centered = gv(g, "centered") != 0;
  if (!st->init) st->step = 0;
  wk_status s;
  if ((s = ensure(&st->buf[0], p, 0)) || (mom > 0 && (s = ensure(&st->buf[1], p, 0))) ||
      (centered && (s = ensure(&st->buf[2], p, 0))))
    return s;
  st->init = true;
  wk_value a[] = {WK_VT(p),
                  WK_VT(grad),
                  WK_VT(st->buf[0]),
                  centered ? WK_VT(st->buf[2]) : WK_VNONE,
                  mom > 0 ? WK_VT(st->buf[1]) : WK_VNONE,
                  WK_VF(gv(g, "lr")),
                  WK_VF(gv(g, "alpha")),
                  WK_VF(gv(g, "eps")),
                  WK_VF(gv(g, "weight_decay")),
                  WK_VF(mom),
                  WK_VB(centered),
                  WK_VB(gv(g, "maximize") != 0)};
  if (!(s = call(optim_op_rmsprop, a, (int)(sizeof a / sizeof a[0])))) st->step += 1;
  return s;
}

static wk_status upd_adagrad(wk_optimizer *opt, const optim_group *g, int i, wk_tensor *grad) {
  optim_pstate *st = &opt->state[i];
  wk_tensor *p = opt->params[i];
  if (!st->init) st->step = 0;
  wk_status s = ensure(&st->buf[0], p, gv(g, "initial_accumulator_value"));
  if (s) return s;
  st->init = true;
  wk_value a[] = {WK_VT(p),
                  WK_VT(grad),
                  WK_VT(st->buf[0]),
                  WK_VF(st->step + 1),
                  WK_VF(gv(g, "lr")),
                  WK_VF(gv(g, "lr_decay")),
                  WK_VF(gv(g, "weight_decay")),
                  WK_VF(gv(g, "eps")),
                  WK_VB(gv(g, "maximize") != 0)};
  if (!(s = call(optim_op_adagrad, a, (int)(sizeof a / sizeof a[0])))) st->step += 1;
  return s;
}


/* ---- NAdam, RAdam, Adadelta, Adamax: PyTorch's single-tensor algorithms op
 * by op (torch/optim/nadam.py, radam.py, adadelta.py, adamax.py), so each
 * step rounds where PyTorch's does and runs on any device without a fused
 * kernel. Temporaries live in a scope of their own. ---- */
#define TRY(x)                  \
  do {                          \
    if (!(x)) goto fail;        \
  } while (0)

/* The gradient after maximize and (coupled) weight decay: a new tensor, or grad itself. */
static wk_tensor *effective_grad(wk_tensor *p, wk_tensor *grad, bool maximize, double wd, bool decoupled) {
  wk_tensor *g = maximize ? wk_neg(grad) : grad;
  if (g && wd != 0 && !decoupled) g = wk_add_scaled(g, p, wd);
  return g;
}

/* Zero buffers (two) like p on first use; the state is then initialised. */
static wk_status first_use(optim_pstate *st, wk_tensor *p) {
  wk_status s = WK_OK;
  for (int b = 0; !s && b < 2; b++) s = ensure(&st->buf[b], p, 0);
  if (!s) st->init = true;
  return s;
}

/* A step that failed inside its scope: the scope goes, the error stays. */
static wk_status step_failed(const char *name) {
  wk_status s = wk_last_error();
  wk_scope_end();
  return s ? s : wk_error(WK_ERR_INTERNAL, "%s: step failed", name);
}

static wk_status upd_nadam(wk_optimizer *opt, const optim_group *g, int i, wk_tensor *grad) {
  optim_pstate *st = &opt->state[i];
  wk_tensor *p = opt->params[i];
  if (!st->init) st->step = 0, st->aux = 1;
  wk_status s = first_use(st, p);
  if (s) return s;
  const double lr = gv(g, "lr"), b1 = gv(g, "beta1"), b2 = gv(g, "beta2"), eps = gv(g, "eps"),
               wd = gv(g, "weight_decay"), md = gv(g, "momentum_decay");
  const bool decoupled = gv(g, "decoupled_weight_decay") != 0;
  const double step = st->step + 1, bc2 = 1 - pow(b2, step);
  const double mu = b1 * (1. - 0.5 * pow(0.96, step * md)), mu_next = b1 * (1. - 0.5 * pow(0.96, (step + 1) * md));
  /* mu_product is a float32 tensor in PyTorch: rounded at each product */
  const double mu_product = (double)(float)(st->aux * mu), mu_product_next = mu_product * mu_next;
  wk_tensor *ea = st->buf[0], *eas = st->buf[1];
  wk_scope_begin();
  if (wd != 0 && decoupled) TRY(wk_mul_scalar_(p, 1 - lr * wd));
  wk_tensor *gr = effective_grad(p, grad, gv(g, "maximize") != 0, wd, decoupled);
  TRY(gr);
  TRY(wk_add_scaled_(wk_mul_scalar_(ea, b1), gr, 1 - b1));
  TRY(wk_add_scaled_(wk_mul_scalar_(eas, b2), wk_mul(gr, gr), 1 - b2));
  wk_tensor *denom = wk_add_scalar_(wk_sqrt_(wk_div_scalar(eas, bc2)), eps);
  TRY(denom);
  TRY(wk_add_scaled_(p, wk_div(gr, denom), -lr * (1. - mu) / (1. - mu_product)));
  TRY(wk_add_scaled_(p, wk_div(ea, denom), -lr * mu_next / (1. - mu_product_next)));
  wk_scope_end();
  st->aux = mu_product;
  st->step = step;
  return WK_OK;
fail:
  return step_failed("NAdam");
}

static wk_status upd_radam(wk_optimizer *opt, const optim_group *g, int i, wk_tensor *grad) {
  optim_pstate *st = &opt->state[i];
  wk_tensor *p = opt->params[i];
  if (!st->init) st->step = 0;
  wk_status s = first_use(st, p);
  if (s) return s;
  const double lr = gv(g, "lr"), b1 = gv(g, "beta1"), b2 = gv(g, "beta2"), eps = gv(g, "eps"),
               wd = gv(g, "weight_decay");
  const bool decoupled = gv(g, "decoupled_weight_decay") != 0;
  const double step = st->step + 1, bc1 = 1 - pow(b1, step), bc2 = 1 - pow(b2, step);
  const double rho_inf = 2 / (1 - b2) - 1, rho_t = rho_inf - 2 * step * pow(b2, step) / bc2;
  wk_tensor *ea = st->buf[0], *eas = st->buf[1];
  wk_scope_begin();
  if (wd != 0 && decoupled) TRY(wk_mul_scalar_(p, 1 - lr * wd));
  wk_tensor *gr = effective_grad(p, grad, gv(g, "maximize") != 0, wd, decoupled);
  TRY(gr);
  TRY(wk_add_scaled_(wk_mul_scalar_(ea, b1), gr, 1 - b1));
  TRY(wk_add_scaled_(wk_mul_scalar_(eas, b2), wk_mul(gr, gr), 1 - b2));
  wk_tensor *upd = wk_mul_scalar(wk_div_scalar(ea, bc1), lr); /* bias_corrected_exp_avg * lr */
  TRY(upd);
  if (rho_t > 5.) { /* the variance is tractable: rectified adaptive step */
    double rect = sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t));
    wk_tensor *num = wk_full(NULL, 0, sqrt(bc2), (wk_options){.dtype = wk_tensor_dtype(p), .device = wk_tensor_device(p)});
    wk_tensor *adaptive = wk_div(num, wk_add_scalar_(wk_sqrt(eas), eps));
    TRY(adaptive);
    upd = wk_mul_scalar(wk_mul(upd, adaptive), rect);
    TRY(upd);
  }
  TRY(wk_add_scaled_(p, upd, -1.0));
  wk_scope_end();
  st->step = step;
  return WK_OK;
fail:
  return step_failed("RAdam");
}

static wk_status upd_adadelta(wk_optimizer *opt, const optim_group *g, int i, wk_tensor *grad) {
  optim_pstate *st = &opt->state[i];
  wk_tensor *p = opt->params[i];
  if (!st->init) st->step = 0;
  wk_status s = first_use(st, p);
  if (s) return s;
  const double lr = gv(g, "lr"), rho = gv(g, "rho"), eps = gv(g, "eps"), wd = gv(g, "weight_decay");
  wk_tensor *sq = st->buf[0], *acc = st->buf[1];
  wk_scope_begin();
  wk_tensor *gr = effective_grad(p, grad, gv(g, "maximize") != 0, wd, false);
  TRY(gr);
  TRY(wk_add_scaled_(wk_mul_scalar_(sq, rho), wk_mul(gr, gr), 1 - rho));
  wk_tensor *std = wk_sqrt_(wk_add_scalar(sq, eps));
  wk_tensor *delta = wk_mul_(wk_div_(wk_sqrt_(wk_add_scalar(acc, eps)), std), gr);
  TRY(delta);
  TRY(wk_add_scaled_(wk_mul_scalar_(acc, rho), wk_mul(delta, delta), 1 - rho));
  TRY(wk_add_scaled_(p, delta, -lr));
  wk_scope_end();
  st->step += 1;
  return WK_OK;
fail:
  return step_failed("Adadelta");
}

static wk_status upd_adamax(wk_optimizer *opt, const optim_group *g, int i, wk_tensor *grad) {
  optim_pstate *st = &opt->state[i];
  wk_tensor *p = opt->params[i];
  if (!st->init) st->step = 0;
  wk_status s = first_use(st, p);
  if (s) return s;
  const double lr = gv(g, "lr"), b1 = gv(g, "beta1"), b2 = gv(g, "beta2"), eps = gv(g, "eps"),
               wd = gv(g, "weight_decay");
  const double step = st->step + 1, clr = lr / (1 - pow(b1, step));
  wk_tensor *ea = st->buf[0], *ei = st->buf[1];
  wk_scope_begin();
  wk_tensor *gr = effective_grad(p, grad, gv(g, "maximize") != 0, wd, false);
  TRY(gr);
  TRY(wk_add_scaled_(wk_mul_scalar_(ea, b1), gr, 1 - b1));
  /* exp_inf = max(exp_inf * beta2, |grad| + eps), NaN propagating as torch.maximum / amax */
  TRY(wk_maximum_(wk_mul_scalar_(ei, b2), wk_add_scalar_(wk_abs(gr), eps)));
  TRY(wk_add_scaled_(p, wk_div(ea, ei), -clr));
  wk_scope_end();
  st->step = step;
  return WK_OK;
fail:
  return step_failed("Adamax");
}
#undef TRY

#define NDEFS(a) ((int)(sizeof a / sizeof a[0]))
static const optim_kind k_sgd = {OPTIM_SGD, "SGD", sgd_defs, NDEFS(sgd_defs), sgd_bufs, 1, false, upd_sgd};
static const optim_kind k_adam = {OPTIM_ADAM, "Adam", adam_defs, NDEFS(adam_defs), adam_bufs, 3, true, upd_adam};
static const optim_kind k_adamw = {OPTIM_ADAMW, "AdamW", adam_defs, NDEFS(adam_defs), adam_bufs, 3, true, upd_adam};
static const optim_kind k_rmsprop = {OPTIM_RMSPROP, "RMSprop", rmsprop_defs, NDEFS(rmsprop_defs),
                                     rmsprop_bufs,  3,         true,         upd_rmsprop};
static const optim_kind k_adagrad = {OPTIM_ADAGRAD, "Adagrad", adagrad_defs, NDEFS(adagrad_defs),
                                     adagrad_bufs,  1,         true,         upd_adagrad};
static const optim_kind k_nadam = {OPTIM_NADAM, "NAdam", nadam_defs, NDEFS(nadam_defs), nadam_bufs, 2, true,
                                   upd_nadam,   "mu_product"};
static const optim_kind k_radam = {OPTIM_RADAM, "RAdam", radam_defs, NDEFS(radam_defs), radam_bufs, 2, true, upd_radam};
static const optim_kind k_adadelta = {OPTIM_ADADELTA, "Adadelta", adadelta_defs, NDEFS(adadelta_defs),
                                      adadelta_bufs,  2,          true,          upd_adadelta};
static const optim_kind k_adamax = {OPTIM_ADAMAX, "Adamax", adamax_defs, NDEFS(adamax_defs), adamax_bufs, 2, true,
                                    upd_adamax};

/* ---- construction ---------------------------------------------------------------------- */
void optim_free(wk_optimizer *opt) {
  if (!opt) return;
  for (int i = 0; i < opt->nparams; i++) {
    optim_state_clear(&opt->state[i]);
    wk_unref(opt->params[i]); /* the retain of creation: never the caller's scope reference */
  }
  wk_free(opt->params);
  wk_free(opt->state);
  wk_free(opt->groups);
  wk_free(opt);
}

static wk_optimizer *create(const optim_kind *k, wk_tensor *const *params, int n, const double *vals) {
  if (n <= 0 || !params) {
    if (n < 0 || (n > 0 && !params))
      wk_error(n < 0 ? WK_ERR_INVALID_ARG : WK_ERR_NULL, "%s: params is %s (n = %d)", k->name,
               params ? "invalid" : "NULL", n);
    else
      wk_error(WK_ERR_INVALID_ARG, "%s: optimizer got an empty parameter list", k->name);
    return NULL;
  }
  wk_optimizer *opt = wk_calloc(1, sizeof *opt);
  if (!opt) {
    wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", k->name);
    return NULL;
  }
  opt->kind = k;
  for (int i = 0; i < k->ndefs; i++) put(&opt->defaults, k->defs[i].name, vals[i]);
  if (optim_check_group(k, &opt->defaults) || optim_add_param_group(opt, params, n, NULL, 0)) {
    optim_free(opt);
    return NULL;
  }
  return opt;
}

wk_optimizer *optim_sgd(wk_tensor *const *params, int n, const wk_sgd_opts *o, size_t osize) {
  wk_sgd_opts x;
  optim_copy_opts(&x, sizeof x, o, osize);
  double v[] = {optim_or(x.lr, 1e-3), x.momentum, x.dampening, x.weight_decay, x.nesterov, x.maximize};
  return create(&k_sgd, params, n, v);
}

static wk_optimizer *adam_like(const optim_kind *k, wk_tensor *const *params, int n, const wk_adam_opts *o,
                               size_t osize, double wd_default) {
  wk_adam_opts x;
  optim_copy_opts(&x, sizeof x, o, osize);
  double v[] = {optim_or(x.lr, 1e-3),
                optim_or(x.beta1, 0.9),
                optim_or(x.beta2, 0.999),
                optim_or(x.eps, 1e-8),
                optim_or(x.weight_decay, wd_default),
                x.amsgrad,
                x.maximize};
  return create(k, params, n, v);
}
wk_optimizer *optim_adam(wk_tensor *const *params, int n, const wk_adam_opts *o, size_t osize) {
  return adam_like(&k_adam, params, n, o, osize, 0);
}
wk_optimizer *optim_adamw(wk_tensor *const *params, int n, const wk_adam_opts *o, size_t osize) {
  return adam_like(&k_adamw, params, n, o, osize, 1e-2);
}

wk_optimizer *optim_rmsprop(wk_tensor *const *params, int n, const wk_rmsprop_opts *o, size_t osize) {
  wk_rmsprop_opts x;
  optim_copy_opts(&x, sizeof x, o, osize);
  double v[] = {optim_or(x.lr, 1e-2), x.momentum, optim_or(x.alpha, 0.99), optim_or(x.eps, 1e-8), x.centered,
                x.weight_decay,       x.maximize};
  return create(&k_rmsprop, params, n, v);
}

wk_optimizer *optim_adagrad(wk_tensor *const *params, int n, const wk_adagrad_opts *o, size_t osize) {
  wk_adagrad_opts x;
  optim_copy_opts(&x, sizeof x, o, osize);
  double v[] = {optim_or(x.lr, 1e-2),        x.lr_decay, optim_or(x.eps, 1e-10), x.weight_decay,
                x.initial_accumulator_value, x.maximize};
  return create(&k_adagrad, params, n, v);
}

wk_optimizer *optim_nadam(wk_tensor *const *params, int n, const wk_nadam_opts *o, size_t osize) {
  wk_nadam_opts x;
  optim_copy_opts(&x, sizeof x, o, osize);
  double v[] = {optim_or(x.lr, 2e-3),  optim_or(x.beta1, 0.9),         optim_or(x.beta2, 0.999),
                optim_or(x.eps, 1e-8), x.weight_decay,                 optim_or(x.momentum_decay, 4e-3),
                x.decoupled_weight_decay, x.maximize};
  return create(&k_nadam, params, n, v);
}

wk_optimizer *optim_radam(wk_tensor *const *params, int n, const wk_radam_opts *o, size_t osize) {
  wk_radam_opts x;
  optim_copy_opts(&x, sizeof x, o, osize);
  double v[] = {optim_or(x.lr, 1e-3), optim_or(x.beta1, 0.9), optim_or(x.beta2, 0.999), optim_or(x.eps, 1e-8),
                x.weight_decay,       x.decoupled_weight_decay, x.maximize};
  return create(&k_radam, params, n, v);
}

wk_optimizer *optim_adadelta(wk_tensor *const *params, int n, const wk_adadelta_opts *o, size_t osize) {
  wk_adadelta_opts x;
  optim_copy_opts(&x, sizeof x, o, osize);
  double v[] = {optim_or(x.lr, 1.0), optim_or(x.rho, 0.9), optim_or(x.eps, 1e-6), x.weight_decay, x.maximize};
  return create(&k_adadelta, params, n, v);
}

wk_optimizer *optim_adamax(wk_tensor *const *params, int n, const wk_adamax_opts *o, size_t osize) {
  wk_adamax_opts x;
  optim_copy_opts(&x, sizeof x, o, osize);
  double v[] = {optim_or(x.lr, 2e-3),  optim_or(x.beta1, 0.9), optim_or(x.beta2, 0.999),
                optim_or(x.eps, 1e-8), x.weight_decay,         x.maximize};
  return create(&k_adamax, params, n, v);
}

const char *optim_name(const wk_optimizer *opt) {
  return opt ? opt->kind->name : NULL;
}

static wk_status null_opt(const char *fn) {
  return wk_error(WK_ERR_NULL, "%s: argument 'optimizer' is NULL", fn);
}

/* ---- parameter groups ---------------------------------------------------------------------- */
wk_status optim_add_param_group(wk_optimizer *opt, wk_tensor *const *params, int n, const wk_optim_option *opts,
                                int nopts) {
  if (!opt) return null_opt("add_param_group");
  const optim_kind *k = opt->kind;
  if (n < 0 || (n > 0 && !params))
    return wk_error(n < 0 ? WK_ERR_INVALID_ARG : WK_ERR_NULL, "%s: add_param_group: params is %s (n = %d)", k->name,
                    params ? "invalid" : "NULL", n);
  if (nopts < 0 || (nopts > 0 && !opts))
    return wk_error(WK_ERR_INVALID_ARG, "%s: add_param_group: bad option list (nopts = %d)", k->name, nopts);
  optim_group g = opt->defaults;
  for (int i = 0; i < nopts; i++) {
    if (!opts[i].name) return wk_error(WK_ERR_NULL, "%s: add_param_group: option %d has a NULL name", k->name, i);
    if (!find_def(k, opts[i].name))
      return wk_error(WK_ERR_NOT_FOUND, "%s: add_param_group: unknown option '%s'", k->name, opts[i].name);
    put(&g, opts[i].name, opts[i].value);
  }
  wk_status s = optim_check_group(k, &g);
  if (s) return s;
  for (int i = 0; i < n; i++) {
    wk_tensor *p = params[i];
    if (!p) return wk_error(WK_ERR_NULL, "%s: params[%d] is NULL", k->name, i);
    if (!wk_dtype_is_floating(wk_tensor_dtype(p)))
      return wk_error(WK_ERR_DTYPE,
                      "%s: optimizer can only optimize Tensors of floating point dtype, but params[%d] is %s", k->name,
                      i, wk_dtype_name(wk_tensor_dtype(p)));
    if (!wk_tensor_is_leaf(p))
      return wk_error(WK_ERR_INVALID_ARG, "%s: can't optimize a non-leaf Tensor (params[%d])", k->name, i);
    for (int j = 0; j < i; j++)
      if (params[j] == p)
        return wk_error(WK_ERR_INVALID_ARG, "%s: params[%d] and params[%d] are the same tensor", k->name, j, i);
    for (int j = 0; j < opt->nparams; j++)
      if (opt->params[j] == p)
        return wk_error(WK_ERR_INVALID_ARG, "%s: some parameters appear in more than one parameter group (params[%d])",
                        k->name, i);
  }
  if (opt->ngroups == opt->capgroups) {
    int cap = opt->capgroups ? opt->capgroups * 2 : 4;
    optim_group *ng = wk_realloc(opt->groups, sizeof *ng * (size_t)cap);
    if (!ng) return wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", k->name);
    opt->groups = ng;
    opt->capgroups = cap;
  }
  if (opt->nparams + n > opt->capparams) {
    int cap = opt->capparams ? opt->capparams : 8;
    while (cap < opt->nparams + n) cap *= 2;
    wk_tensor **np = wk_realloc(opt->params, sizeof *np * (size_t)cap);
    if (!np) return wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", k->name);
    opt->params = np;
    optim_pstate *ns = wk_realloc(opt->state, sizeof *ns * (size_t)cap);
    if (!ns) return wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", k->name);
    opt->state = ns;
    opt->capparams = cap;
  }
  g.first = opt->nparams;
  g.count = n;
  for (int i = 0; i < n; i++) {
    int j = opt->nparams + i;
    opt->params[j] = wk_retain(params[i]);
    memset(&opt->state[j], 0, sizeof opt->state[j]);
  }
  opt->nparams += n;
  opt->groups[opt->ngroups++] = g;
  for (int i = 0; i < n; i++)
    if ((s = optim_eager_state(opt, &g, g.first + i))) return s;
  return WK_OK;
}

int optim_num_param_groups(const wk_optimizer *opt) {
  return opt ? opt->ngroups : 0;
}

static wk_status check_group_index(const wk_optimizer *opt, int group, const char *fn) {
  if (!opt) return null_opt(fn);
  if (group < 0 || group >= opt->ngroups)
    return wk_error(WK_ERR_INDEX, "%s: %s: parameter group %d out of range (%d groups)", opt->kind->name, fn, group,
                    opt->ngroups);
  return WK_OK;
}

int optim_group_num_params(const wk_optimizer *opt, int group) {
  return check_group_index(opt, group, "group_num_params") ? -1 : opt->groups[group].count;
}

wk_tensor *optim_group_param(const wk_optimizer *opt, int group, int i) {
  if (check_group_index(opt, group, "group_param")) return NULL;
  if (i < 0 || i >= opt->groups[group].count) {
    wk_error(WK_ERR_INDEX, "%s: group_param: index %d out of range (group %d has %d parameters)", opt->kind->name, i,
             group, opt->groups[group].count);
    return NULL;
  }
  return opt->params[opt->groups[group].first + i];
}

wk_status optim_get_option(const wk_optimizer *opt, int group, const char *name, double *value) {
  wk_status s = check_group_index(opt, group, "get_option");
  if (s) return s;
  if (!name || !value) return wk_error(WK_ERR_NULL, "get_option: argument '%s' is NULL", name ? "value" : "name");
  double *p = slot(&opt->groups[group], name);
  if (!p) return wk_error(WK_ERR_NOT_FOUND, "%s: parameter group %d has no option '%s'", opt->kind->name, group, name);
  *value = *p;
  return WK_OK;
}

wk_status optim_set_option(wk_optimizer *opt, int group, const char *name, double value) {
  wk_status s = check_group_index(opt, group, "set_option");
  if (s) return s;
  if (!name) return wk_error(WK_ERR_NULL, "set_option: argument 'name' is NULL");
  optim_group g = opt->groups[group];
  double *p = slot(&g, name);
  if (!p) return wk_error(WK_ERR_NOT_FOUND, "%s: parameter group %d has no option '%s'", opt->kind->name, group, name);
  *p = value;
  if ((s = optim_check_group(opt->kind, &g))) return s;
  opt->groups[group] = g;
  return WK_OK;
}

double *optim_opt_slot(wk_optimizer *opt, int group, const char *name) {
  return opt && group >= 0 && group < opt->ngroups ? slot(&opt->groups[group], name) : NULL;
}
wk_status optim_opt_put(wk_optimizer *opt, int group, const char *name, double v) {
  wk_status s = check_group_index(opt, group, "set_option");
  return s ? s : put(&opt->groups[group], name, v);
}
bool optim_kind_has(const wk_optimizer *opt, const char *name) {
  return opt && find_def(opt->kind, name);
}

/* ---- step / zero_grad ------------------------------------------------------------------------ */
wk_status optim_step(wk_optimizer *opt) {
  if (!opt) return null_opt("step");
  wk_status s = WK_OK;
  wk_no_grad_begin();
  for (int gi = 0; !s && gi < opt->ngroups; gi++) {
    const optim_group *g = &opt->groups[gi];
    for (int i = g->first; !s && i < g->first + g->count; i++) {
      wk_tensor *grad = wk_tensor_grad(opt->params[i]);
      if (!grad) continue; /* no gradient: skipped, as in PyTorch */
      s = opt->kind->update(opt, g, i, grad);
      wk_release(grad);
    }
  }
  wk_no_grad_end();
  return s;
}

wk_status optim_zero_grad(wk_optimizer *opt, bool set_to_none) {
  if (!opt) return null_opt("zero_grad");
  for (int i = 0; i < opt->nparams; i++) {
    wk_status s = wk_tensor_zero_grad(opt->params[i], set_to_none);
    if (s) return s;
  }
  return WK_OK;
}
