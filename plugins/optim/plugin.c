/* optim plugin entry: declares the fused update ops with their cpu kernels
 * and offers the "optim" service (optimizers, schedulers, clipping). */
#include "optim.h"

static const wk_optim_api g_api = {
    .struct_size = sizeof(wk_optim_api),
    .sgd = optim_sgd,
    .adam = optim_adam,
    .adamw = optim_adamw,
    .rmsprop = optim_rmsprop,
    .adagrad = optim_adagrad,
    .optimizer_free = optim_free,
    .optimizer_name = optim_name,
    .add_param_group = optim_add_param_group,
    .num_param_groups = optim_num_param_groups,
    .group_num_params = optim_group_num_params,
    .group_param = optim_group_param,
    .get_option = optim_get_option,
    .set_option = optim_set_option,
    .step = optim_step,
    .zero_grad = optim_zero_grad,
    .state_dict = optim_state_dict,
    .load_state_dict = optim_load_state_dict,
    .step_lr = sched_step_lr,
    .multistep_lr = sched_multistep_lr,
    .exponential_lr = sched_exponential_lr,
    .cosine_annealing_lr = sched_cosine_annealing_lr,
    .linear_lr = sched_linear_lr,
    .one_cycle_lr = sched_one_cycle_lr,
    .reduce_lr_on_plateau = sched_reduce_lr_on_plateau,
    .chained = sched_chained,
    .sequential = sched_sequential,
    .scheduler_free = sched_free,
    .scheduler_name = sched_name,
    .scheduler_step = sched_step,
    .scheduler_step_metric = sched_step_metric,
    .scheduler_get_last_lr = sched_get_last_lr,
    .scheduler_last_epoch = sched_last_epoch,
    .scheduler_state_dict = sched_state_dict,
    .scheduler_load_state_dict = sched_load_state_dict,
    .clip_grad_norm_ = optim_clip_grad_norm_,
    .clip_grad_value_ = optim_clip_grad_value_,
    .nadam = optim_nadam,
    .radam = optim_radam,
    .adadelta = optim_adadelta,
    .adamax = optim_adamax,
    .lambda_lr = sched_lambda_lr,
    .multiplicative_lr = sched_multiplicative_lr,
    .cyclic_lr = sched_cyclic_lr,
    .averaged_model_new = optim_averaged_model_new,
    .averaged_model_free = optim_averaged_model_free,
    .averaged_model_module = optim_averaged_model_module,
    .averaged_model_update = optim_averaged_model_update,
    .averaged_model_n_averaged = optim_averaged_model_n_averaged,
    .averaged_model_state_dict = optim_averaged_model_state_dict,
    .averaged_model_load_state_dict = optim_averaged_model_load_state_dict,
    .update_bn = optim_update_bn,
    .swa_lr = sched_swa_lr,
};

static wk_status init(void) {
  wk_status s = optim_register_ops();
  if (s) return s;
  return wk_service_register(WK_OPTIM_SERVICE, WK_OPTIM_API_VERSION, &g_api);
}

WK_PLUGIN_DEFINE("optim", "0.1.0", "optimizers, learning-rate schedulers and gradient clipping (service \"optim\")",
                 init, NULL)
