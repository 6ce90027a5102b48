/* The seed's SimpleNet in C (examples/simplenet.c trains it one step,
 * examples/trace_simplenet.c traces it): a user-defined model is a
 * struct-free module whose forward function calls its registered children,
 * exactly as an nn.Module subclass does in Python:
 *
 *   class SimpleNet(nn.Module):
 *       def __init__(self):
 *           super().__init__()
 *           self.fc1 = nn.Linear(784, 256); self.relu = nn.ReLU(); self.fc2 = nn.Linear(256, 10)
 *       def forward(self, x):
 *           return self.fc2(self.relu(self.fc1(x)))
 */
#ifndef WICK_EXAMPLES_SIMPLENET_H
#define WICK_EXAMPLES_SIMPLENET_H

#include <wick/nn.h>
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

#endif
