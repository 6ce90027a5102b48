/* The seed's SimpleNet in C: a user-defined model is a struct-free module
 * whose forward function calls its registered children, exactly as an
 * nn.Module subclass does in Python:
 *
 *   class SimpleNet(nn.Module):
 *       def __init__(self):
 *           super().__init__()
 *           self.fc1 = nn.Linear(784, 256); self.relu = nn.ReLU(); self.fc2 = nn.Linear(256, 10)
 *       def forward(self, x):
 *           return self.fc2(self.relu(self.fc1(x)))
 */
#include <stdio.h>
#include <wick/nn.h>
#include <wick/optim.h>
#include <wick/wick.h>

static wk_tensor *simplenet_forward(wk_module *self, wk_tensor *const *in, int n) {
  (void)n;
  wk_scope_begin(); /* temporaries of this forward */
  wk_tensor *x = wk_module_forward(wk_module_child(self, "fc1"), in[0]);
  x = wk_module_forward(wk_module_child(self, "relu"), x);
  x = wk_module_forward(wk_module_child(self, "fc2"), x);
  wk_scope_escape(x); /* the result belongs to the caller's scope */
  wk_scope_end();
  return x;
}

static const wk_module_class SIMPLENET = {sizeof(wk_module_class), "SimpleNet", simplenet_forward, NULL, NULL};

static wk_module *simplenet(void) {
  wk_module *m = wk_module_new(&SIMPLENET, NULL);
  wk_module *fc1 = wk_nn_linear(784, 256, true), *relu = wk_nn_relu(), *fc2 = wk_nn_linear(256, 10, true);
  if (!m || !fc1 || !relu || !fc2 || wk_module_register_child(m, "fc1", fc1) ||
      wk_module_register_child(m, "relu", relu) || wk_module_register_child(m, "fc2", fc2)) {
    wk_module_release(m);
    m = NULL;
  }
  wk_module_release(fc1); /* the model holds them */
  wk_module_release(relu);
  wk_module_release(fc2);
  return m;
}

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
