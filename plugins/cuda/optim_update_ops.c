/* cuda kernels for the optim plugin's fused update ops (optim.sgd_step_,
 * optim.adam_step_, optim.rmsprop_step_, optim.adagrad_step_): the same
 * checks and per-element arithmetic as the plugin's cpu kernels. The ops are
 * declared by the optim plugin; plugins load in name order (cuda before
 * optim), so this family declares them first with the same schema text: the
 * optim plugin's own declaration then finds them (an identical schema
 * returns the existing op). */
#include <math.h>
#include <stdio.h>

#include <wick/sdk/half.h>

#include "cuda_kernels.h"

#define SGD_SCHEMA                                                                                         \
  "optim.sgd_step_(Tensor(a!) param, Tensor grad, Tensor(b!)? momentum_buffer, float lr, float momentum, " \
  "float dampening=0, float weight_decay=0, bool nesterov=False, bool maximize=False, "                    \
  "bool momentum_buffer_is_new=False) -> Tensor(a!)"
#define ADAM_SCHEMA                                                                                         \
  "optim.adam_step_(Tensor(a!) param, Tensor grad, Tensor(b!) exp_avg, Tensor(c!) exp_avg_sq, "             \
  "Tensor(d!)? max_exp_avg_sq, float step, float lr, float beta1=0.9, float beta2=0.999, float eps=1e-08, " \
  "float weight_decay=0, bool amsgrad=False, bool maximize=False, bool decoupled_weight_decay=False) "      \
  "-> Tensor(a!)"
#define RMSPROP_SCHEMA                                                                               \
  "optim.rmsprop_step_(Tensor(a!) param, Tensor grad, Tensor(b!) square_avg, Tensor(c!)? grad_avg, " \
  "Tensor(d!)? momentum_buffer, float lr, float alpha=0.99, float eps=1e-08, float weight_decay=0, " \
  "float momentum=0, bool centered=False, bool maximize=False) -> Tensor(a!)"
#define ADAGRAD_SCHEMA                                                                              \
  "optim.adagrad_step_(Tensor(a!) param, Tensor grad, Tensor(b!) state_sum, float step, float lr, " \
  "float lr_decay=0, float weight_decay=0, float eps=1e-10, bool maximize=False) -> Tensor(a!)"

/* x rounded to the parameter's dtype (the cpu kernels' rnd). */
static double rnd(double x, wk_dtype dt) {
  switch (dt) {
    case WK_F32:
      return (double)(float)x;
    case WK_F16:
      return wk_f16_to_f32(wk_f32_to_f16((float)x));
    case WK_BF16:
      return wk_bf16_to_f32(wk_f32_to_bf16((float)x));
    default:
      return x;
  }
}

static wk_status check_like(const char *op, const char *what, wk_tensor *param, wk_tensor *t) {
  char a[160], b[160];
  if (!wk_dtype_is_floating(wk_tensor_dtype(t)))
    return wk_error(WK_ERR_DTYPE, "%s: %s must be floating point, got %s", op, what, wk_dtype_name(wk_tensor_dtype(t)));
  int nd = wk_tensor_dim(param);
  bool same = nd == wk_tensor_dim(t);
  for (int d = 0; same && d < nd; d++) same = wk_tensor_size(param, d) == wk_tensor_size(t, d);
  if (!same)
    return wk_error(WK_ERR_SHAPE, "%s: %s has shape %s but param has shape %s", op, what,
                    wk_shape_str(t, b, sizeof b), wk_shape_str(param, a, sizeof a));
  if (!wk_device_equal(wk_tensor_device(param), wk_tensor_device(t)))
    return wk_error(WK_ERR_DEVICE, "%s: %s is on a different device than param", op, what);
  return WK_OK;
}

/* Checks the operands and fills the tensor part of a; launches; bumps versions. */
static wk_status run(const wk_kernel_ctx *ctx, cuda_optim_args *a, wk_tensor *const *in, const char *const *names,
                     int n, wk_value *outs) {
  const char *op = WK_OPNAME;
  wk_tensor *param = in[0];
  if (!wk_dtype_is_floating(wk_tensor_dtype(param)))
    return wk_error(WK_ERR_DTYPE, "%s: param must be floating point, got %s", op,
                    wk_dtype_name(wk_tensor_dtype(param)));
  for (int k = 1; k < n; k++)
    if (in[k]) {
      wk_status s = check_like(op, names[k], param, in[k]);
      if (s) return s;
    }
  wk_status s = cuda_enter(op, ctx->device);
  if (s) return s;
  for (int k = 0; k < 5; k++) {
    a->t[k] = k < n && in[k] ? wk_tensor_data(in[k]) : NULL;
    a->dt[k] = k < n && in[k] ? cuda_dt(wk_tensor_dtype(in[k])) : 0;
    if (k < n && in[k]) a->l[k] = cuda_layout(in[k], NULL, 0);
  }
  if ((s = (wk_status)cuda_launch_optim(a, wk_tensor_numel(param), cuda_stream(ctx->device)))) return s;
  for (int k = 0; k < n; k++)
    if (in[k] && (k == 0 || k >= 2)) wk_tensor_bump_version(in[k]);
  outs[0] = WK_VT(param);
  return WK_OK;
}

static wk_status k_sgd(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  static const char *const names[] = {"param", "grad", "momentum_buffer"};
  wk_tensor *in[3] = {WK_ARG_T(0), WK_ARG_T(1), WK_ARG_OPT_T(2)};
  double lr = WK_ARG_F(3), momentum = WK_ARG_F(4), damp = WK_ARG_F(5), wd = WK_ARG_F(6);
  if (momentum != 0 && !in[2])
    return wk_error(WK_ERR_INVALID_ARG, "%s: momentum %g needs a momentum_buffer", WK_OPNAME, momentum);
  if (momentum == 0) in[2] = NULL; /* the buffer is not touched without momentum */
  wk_dtype dp = wk_tensor_dtype(in[0]);
  cuda_optim_args a = {.kind = CUDA_OPT_SGD};
  a.f[0] = rnd(wd, dp);
  a.f[1] = rnd(momentum, dp);
  a.f[2] = rnd(1 - damp, dp);
  a.f[3] = rnd(-lr, dp);
  a.b[0] = wd != 0;
  a.b[1] = momentum != 0;
  a.b[2] = WK_ARG_B(7);
  a.b[3] = WK_ARG_B(8);
  a.b[4] = WK_ARG_B(9);
  return run(ctx, &a, in, names, 3, outs);
}

static wk_status k_adam(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  static const char *const names[] = {"param", "grad", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  wk_tensor *in[5] = {WK_ARG_T(0), WK_ARG_T(1), WK_ARG_T(2), WK_ARG_T(3), WK_ARG_OPT_T(4)};
  double step = WK_ARG_F(5), lr = WK_ARG_F(6), beta1 = WK_ARG_F(7), beta2 = WK_ARG_F(8), eps = WK_ARG_F(9),
         wd = WK_ARG_F(10);
  bool amsgrad = WK_ARG_B(11);
  if (!(step >= 1))
    return wk_error(WK_ERR_INVALID_ARG, "%s: step must be >= 1 (the count after this update), got %g", WK_OPNAME, step);
  if (amsgrad && !in[4]) return wk_error(WK_ERR_INVALID_ARG, "%s: amsgrad needs a max_exp_avg_sq", WK_OPNAME);
  if (!amsgrad) in[4] = NULL;
  wk_dtype dp = wk_tensor_dtype(in[0]);
  const double bc1 = 1 - pow(beta1, step), bc2 = 1 - pow(beta2, step);
  const double step_size = lr / bc1, bc2_sqrt = sqrt(bc2);
  cuda_optim_args a = {.kind = CUDA_OPT_ADAM};
  a.f[0] = rnd(wd, dp);
  a.f[1] = rnd(1 - lr * wd, dp);
  a.f[2] = rnd(beta1, dp);
  a.f[3] = rnd(beta2, dp);
  a.f[4] = rnd(1 - beta1, dp);
  a.f[5] = rnd(1 - beta2, dp);
  a.f[6] = rnd(bc2_sqrt, dp);
  a.f[7] = rnd(eps, dp);
  a.f[8] = rnd(-step_size, dp);
  a.b[0] = WK_ARG_B(12);
  a.b[1] = WK_ARG_B(13);
  a.b[2] = wd != 0;
  a.b[3] = amsgrad;
  return run(ctx, &a, in, names, 5, outs);
}

static wk_status k_rmsprop(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  static const char *const names[] = {"param", "grad", "square_avg", "grad_avg", "momentum_buffer"};
  wk_tensor *in[5] = {WK_ARG_T(0), WK_ARG_T(1), WK_ARG_T(2), WK_ARG_OPT_T(3), WK_ARG_OPT_T(4)};
  double lr = WK_ARG_F(5), alpha = WK_ARG_F(6), eps = WK_ARG_F(7), wd = WK_ARG_F(8), momentum = WK_ARG_F(9);
  bool centered = WK_ARG_B(10);
  if (centered && !in[3]) return wk_error(WK_ERR_INVALID_ARG, "%s: centered needs a grad_avg", WK_OPNAME);
  if (momentum > 0 && !in[4])
    return wk_error(WK_ERR_INVALID_ARG, "%s: momentum %g needs a momentum_buffer", WK_OPNAME, momentum);
  if (!centered) in[3] = NULL;
  if (!(momentum > 0)) in[4] = NULL;
  wk_dtype dp = wk_tensor_dtype(in[0]);
  cuda_optim_args a = {.kind = CUDA_OPT_RMSPROP};
  a.f[0] = rnd(wd, dp);
  a.f[1] = rnd(alpha, dp);
  a.f[2] = rnd(1 - alpha, dp);
  a.f[3] = rnd(eps, dp);
  a.f[4] = rnd(momentum, dp);
  a.f[5] = rnd(-lr, dp);
  a.b[0] = WK_ARG_B(11);
  a.b[1] = wd != 0;
  a.b[2] = centered;
  a.b[3] = momentum > 0;
  return run(ctx, &a, in, names, 5, outs);
}

static wk_status k_adagrad(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  static const char *const names[] = {"param", "grad", "state_sum"};
  wk_tensor *in[3] = {WK_ARG_T(0), WK_ARG_T(1), WK_ARG_T(2)};
  double step = WK_ARG_F(3), lr = WK_ARG_F(4), lr_decay = WK_ARG_F(5), wd = WK_ARG_F(6), eps = WK_ARG_F(7);
  if (!(step >= 1))
    return wk_error(WK_ERR_INVALID_ARG, "%s: step must be >= 1 (the count after this update), got %g", WK_OPNAME, step);
  wk_dtype dp = wk_tensor_dtype(in[0]);
  const double clr = lr / (1 + (step - 1) * lr_decay);
  cuda_optim_args a = {.kind = CUDA_OPT_ADAGRAD};
  a.f[0] = rnd(wd, dp);
  a.f[1] = rnd(eps, dp);
  a.f[2] = rnd(-clr, dp);
  a.b[0] = WK_ARG_B(8);
  a.b[1] = wd != 0;
  return run(ctx, &a, in, names, 3, outs);
}

/* Finds or declares the row's op (aux: the same schema text as the optim
 * plugin's), then registers its kernel. */
static wk_status reg(const wk_kernel_row *row) {
  if (!wk_op_find(row->op)) {
    wk_clear_error(); /* not declared yet: not an error (wk_op_find recorded one) */
    if (!wk_op_declare(row->aux, WK_TAG_INPLACE | WK_TAG_NONDIFF)) return wk_last_error();
  }
  return cuda_reg(row->op, row->fn, NULL, NULL, "cuda.optim");
}

wk_status cuda_register_optim_update(void) {
  static const wk_kernel_row ks[] = {{"optim.sgd_step_", k_sgd, NULL, SGD_SCHEMA},
                                     {"optim.adam_step_", k_adam, NULL, ADAM_SCHEMA},
                                     {"optim.rmsprop_step_", k_rmsprop, NULL, RMSPROP_SCHEMA},
                                     {"optim.adagrad_step_", k_adagrad, NULL, ADAGRAD_SCHEMA}};
  return wk_register_rows(ks, sizeof ks / sizeof ks[0], reg);
}
