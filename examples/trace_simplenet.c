/* Traces the seed's SimpleNet with a dynamic batch and prints its graph
 * (torch.fx's symbolic_trace + print_tabular), then replays the graph at
 * another batch size and checks it against the eager forward. */
#include <stdio.h>
#include <string.h>

#include "simplenet.h"

int main(void) {
  if (wk_init() != WK_OK) return fprintf(stderr, "%s\n", wk_last_error_message()), 1;
  wk_manual_seed(0);
  wk_module *model = simplenet();
  if (!model) return fprintf(stderr, "trace_simplenet: %s\n", wk_last_error_message()), 1;
  wk_scope_begin();
  wk_tensor *x = wk_randn(WK_SHAPE(4, 784), (wk_options){0});
  const wk_trace_dim batch[] = {{0, 0, "batch"}}; /* input 0's dim 0 may change */
  wk_trace_options opts = {sizeof opts, batch, 1, NULL, NULL};
  wk_graph *g = wk_trace_module(model, &x, 1, &opts);
  char *text = g ? wk_graph_to_string(g) : NULL;
  if (!text) return fprintf(stderr, "trace_simplenet: %s\n", wk_last_error_message()), 1;
  fputs(text, stdout);
  wk_free(text);

  /* the graph runs at any batch size its guards allow */
  wk_tensor *x32 = wk_randn(WK_SHAPE(32, 784), (wk_options){0}), *y = NULL;
  wk_tensor *eager = wk_module_forward(model, x32);
  if (wk_graph_run(g, &x32, 1, (wk_device){0}, &y, 1) != WK_OK || !eager)
    return fprintf(stderr, "trace_simplenet: %s\n", wk_last_error_message()), 1;
  double diff = -1;
  wk_item(wk_max(wk_abs(wk_sub(y, eager))), &diff);
  bool same = diff == 0;
  printf("replay at batch 32: [%lld, %lld], %s eager\n", (long long)wk_tensor_size(y, 0), (long long)wk_tensor_size(y, 1),
         same ? "equal to" : "DIFFERENT FROM");
  wk_scope_end();
  wk_graph_release(g);
  wk_module_release(model);
  wk_shutdown();
  return same ? 0 : 1;
}
