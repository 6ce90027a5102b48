/* The seed's SimpleNet (examples/simplenet.h): print it, then one SGD step. */
#include <stdio.h>
#include <wick/nn.h>
#include <wick/optim.h>
#include <wick/wick.h>

#include "simplenet.h"

int main(void) {
  if (wk_init() != WK_OK) return fprintf(stderr, "%s\n", wk_last_error_message()), 1;
  wk_manual_seed(0);
  wk_module *model = simplenet();
  if (!model) return fprintf(stderr, "simplenet: %s\n", wk_last_error_message()), 1;
  char *s = wk_module_to_string(model);
  printf("%s\nparameters: %lld\n", s, (long long)wk_module_num_parameters(model, false));
  wk_free(s);

  /* one training step, as in the seed */
  wk_tensor *params[8];
  int np = wk_module_named_parameters(model, NULL, params, 8);
  wk_optimizer *opt = wk_optim_sgd(params, np, (wk_sgd_opts){.lr = 0.01, .momentum = 0.9});
  wk_scope_begin();
  wk_tensor *x = wk_randn(WK_SHAPE(32, 784), (wk_options){0});
  wk_tensor *y = wk_randint(0, 10, WK_SHAPE(32), (wk_options){0});
  wk_tensor *loss = wk_cross_entropy(wk_module_forward(model, x), y);
  double before;
  if (!loss || wk_item(loss, &before) || wk_optim_zero_grad(opt, true) || wk_backward(loss) || wk_optim_step(opt))
    return fprintf(stderr, "simplenet: %s\n", wk_last_error_message()), 1;
  double after;
  if (wk_item(wk_cross_entropy(wk_module_forward(model, x), y), &after)) return 1;
  printf("loss %.4f -> %.4f after one SGD step\n", before, after);
  wk_scope_end();
  wk_optimizer_free(opt);
  wk_module_release(model);
  wk_shutdown();
  return 0;
}
