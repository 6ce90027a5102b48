/* nn plugin: losses as functions and as modules. CrossEntropy, NLL, MSE and
 * BCEWithLogits call their ops; L1, SmoothL1, BCE and KLDiv are compositions
 * of pointwise ops and reductions (autograd comes with them). */
#include "nn.h"

static const char *const LOSS_NAMES[] = {"", "CrossEntropyLoss", "NLLLoss", "MSELoss", "L1Loss", "SmoothL1Loss", "BCELoss",
                                         "BCEWithLogitsLoss", "KLDivLoss"};

/* 0 none, 1 mean, 2 sum, 3 batchmean; -1 with an error. */
static int parse_reduction(const char *r, int kind) {
  if (!r || !strcmp(r, "mean")) return 1;
  if (!strcmp(r, "sum")) return 2;
  if (!strcmp(r, "none")) return 0;
  if (!strcmp(r, "batchmean") && kind == WK_NN_KL_DIV) return 3;
  wk_error(WK_ERR_INVALID_ARG, "%s is not a valid value for reduction", r);
  return -1;
}

static wk_tensor *reduce(wk_tensor *l, int red) {
  if (red == 0) return l;
  if (red == 2) return wk_sum(l);
  return wk_mean(l);
}

static bool same_shape(const char *what, wk_tensor *x, wk_tensor *t) {
  int nd = wk_tensor_dim(x);
  bool ok = nd == wk_tensor_dim(t);
  for (int i = 0; ok && i < nd; i++) ok = wk_tensor_size(x, i) == wk_tensor_size(t, i);
  if (!ok) {
    char a[160], b[160];
    wk_error(WK_ERR_SHAPE, "%s: Using a target size (%s) that is different to the input size (%s) is not supported. Please ensure they have the same size.",
             what, wk_shape_str(t, a, sizeof a), wk_shape_str(x, b, sizeof b));
  }
  return ok;
}

static wk_tensor *loss_impl(int kind, wk_tensor *x, wk_tensor *t, const wk_loss_opts *op) {
  if (kind < WK_NN_CROSS_ENTROPY || kind > WK_NN_KL_DIV) {
    wk_error(WK_ERR_INVALID_ARG, "nn loss: unknown kind %d", kind);
    return NULL;
  }
  const char *name = LOSS_NAMES[kind];
  if (!x || !t) {
    if (wk_last_error() == WK_OK) wk_error(WK_ERR_INVALID_ARG, "%s: input and target must not be NULL", name);
    return NULL;
  }
  int red = parse_reduction(op->reduction, kind);
  if (red < 0) return NULL;
  int64_t ii = op->has_ignore_index ? op->ignore_index : -100;
  switch (kind) {
  case WK_NN_CROSS_ENTROPY:
    return wkx_cross_entropy(x, t, op->weight, red, ii, op->label_smoothing);
  case WK_NN_NLL:
    return wkx_nll_loss(x, t, op->weight, red, ii);
  case WK_NN_MSE:
    if (!same_shape(name, x, t)) return NULL;
    return wkx_mse_loss(x, t, red);
  case WK_NN_BCE_WITH_LOGITS:
    if (!same_shape(name, x, t)) return NULL;
    return wkx_binary_cross_entropy_with_logits(x, t, op->weight, op->pos_weight, red);
  default: break;
  }
  wk_scope_begin();
  wk_tensor *l = NULL;
  switch (kind) {
  case WK_NN_L1:
    if (same_shape(name, x, t)) l = wk_abs(wk_sub(x, t));
    break;
  case WK_NN_SMOOTH_L1: {
    if (!same_shape(name, x, t)) break;
    double beta = op->beta == 0 && !signbit(op->beta) ? 1.0 : op->beta;
    if (beta < 0) {
      wk_error(WK_ERR_INVALID_ARG, "smooth_l1_loss does not support negative values for beta.");
      break;
    }
    wk_tensor *d = wk_abs(wk_sub(x, t));
    if (beta == 0)
      l = d;
    else
      l = wk_where(wk_lt_scalar(d, beta), wk_div_scalar(wk_mul_scalar(wk_mul(d, d), 0.5), beta), wk_sub_scalar(d, 0.5 * beta));
    break;
  }
  case WK_NN_BCE: {
    if (!same_shape(name, x, t)) break;
    double lo = 0, hi = 0;
    if (wk_tensor_numel(x) > 0) {
      wk_item(wk_min(x), &lo);
      wk_item(wk_max(x), &hi);
    }
    if (!(lo >= 0 && hi <= 1)) {
      wk_error(WK_ERR_INVALID_ARG, "%s: all elements of input should be between 0 and 1", name);
      break;
    }
    wk_tensor *lx = wk_clamp(wk_log(x), -100, NAN), *l1x = wk_clamp(wk_log(wk_add_scalar(wk_neg(x), 1)), -100, NAN);
    l = wk_neg(wk_add(wk_mul(t, lx), wk_mul(wk_add_scalar(wk_neg(t), 1), l1x)));
    if (op->weight) l = wk_mul(l, op->weight);
    break;
  }
  case WK_NN_KL_DIV:
    if (op->log_target)
      l = wk_mul(wk_exp(t), wk_sub(t, x));
    else {
      wk_tensor *pos = wk_gt_scalar(t, 0);
      wk_tensor *safe = wk_where(pos, t, wk_ones_like(t, (wk_options){0}));
      l = wk_sub(wk_mul(t, wk_log(safe)), wk_mul(t, x));
    }
    if (red == 3) {
      int64_t b = wk_tensor_dim(x) > 0 ? wk_tensor_size(x, 0) : 1;
      l = wk_div_scalar(wk_sum(l), (double)b);
      red = 0;
    }
    break;
  }
  return nn_ret(l ? reduce(l, red) : NULL);
}

wk_tensor *nn_loss(int kind, wk_tensor *input, wk_tensor *target, const wk_loss_opts *o, size_t osize) {
  wk_loss_opts op;
  nn_opts(&op, sizeof op, o, osize);
  return loss_impl(kind, input, target, &op);
}

/* ---- modules ---- */
typedef struct {
  int kind;
  wk_loss_opts o;
  char reduction[16];
} loss_state;
static wk_tensor *loss_forward(wk_module *self, wk_tensor *const *in, int n) {
  const loss_state *s = wk_module_state(self);
  if (!nn_check_inputs(LOSS_NAMES[s->kind], in, n, 2)) return NULL;
  wk_loss_opts op = s->o;
  op.reduction = s->reduction;
  op.weight = wk_module_buffer(self, "weight");
  op.pos_weight = wk_module_buffer(self, "pos_weight");
  wk_clear_error(); /* absent buffers are fine */
  return loss_impl(s->kind, in[0], in[1], &op);
}
static const wk_module_class LOSS_CLASSES[9] = {
    {0}, {sizeof(wk_module_class), "CrossEntropyLoss", loss_forward, free, NULL},
    {sizeof(wk_module_class), "NLLLoss", loss_forward, free, NULL}, {sizeof(wk_module_class), "MSELoss", loss_forward, free, NULL},
    {sizeof(wk_module_class), "L1Loss", loss_forward, free, NULL}, {sizeof(wk_module_class), "SmoothL1Loss", loss_forward, free, NULL},
    {sizeof(wk_module_class), "BCELoss", loss_forward, free, NULL},
    {sizeof(wk_module_class), "BCEWithLogitsLoss", loss_forward, free, NULL},
    {sizeof(wk_module_class), "KLDivLoss", loss_forward, free, NULL}};

wk_module *nn_loss_module(int kind, const wk_loss_opts *o, size_t osize) {
  wk_loss_opts op;
  nn_opts(&op, sizeof op, o, osize);
  if (kind < WK_NN_CROSS_ENTROPY || kind > WK_NN_KL_DIV) {
    wk_error(WK_ERR_INVALID_ARG, "nn loss: unknown kind %d", kind);
    return NULL;
  }
  if (parse_reduction(op.reduction, kind) < 0) return NULL;
  const wk_module_class *cls = &LOSS_CLASSES[kind];
  loss_state *s = wk_calloc(1, sizeof *s);
  if (s) {
    s->kind = kind;
    s->o = op;
    snprintf(s->reduction, sizeof s->reduction, "%s", op.reduction ? op.reduction : "mean");
    s->o.weight = s->o.pos_weight = NULL;
  }
  wk_module *m = nn_module_new(cls, s);
  if (!m) return NULL;
  wk_status st = WK_OK;
  if (op.weight) st = wk_module_register_buffer(m, "weight", op.weight, true);
  if (st == WK_OK && op.pos_weight) st = wk_module_register_buffer(m, "pos_weight", op.pos_weight, true);
  if (st != WK_OK) {
    wk_module_release(m);
    return NULL;
  }
  return m;
}
