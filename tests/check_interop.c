/* check_interop: a torchvision-architecture ResNet-18 moves between PyTorch
 * and Wick through safetensors files in both directions: PyTorch's weights
 * give PyTorch's output in Wick, and Wick's saved weights give Wick's output
 * in PyTorch (1e-4 relative). Skips when /usr/bin/python3 has no torch. */
#include <unistd.h>
#include <wick/io.h>
#include <wick/nn.h>

#include "testutil.h"

static char g_dir[128];

static int run_python(const char *mode) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s/tests/io_data/resnet_interop.py' %s '%s' >'%s/python.log' 2>&1",
           TOP_SRCDIR, mode, g_dir, g_dir);
  int rc = system(cmd);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static double max_rel_err(wk_tensor *a, wk_tensor *b) {
  double *x = tu_values(a), *y = tu_values(b), err = 0, scale = 1e-12;
  for (int64_t i = 0; i < wk_tensor_numel(b); i++) {
    err = fmax(err, fabs(x[i] - y[i]));
    scale = fmax(scale, fabs(y[i]));
  }
  free(x);
  free(y);
  return err / scale;
}

START_TEST(test_interop_resnet18_both_ways) {
  wk_scope_begin();
  char path[256];
  wk_state_dict *weights = NULL, *io = NULL;
  snprintf(path, sizeof path, "%s/weights.safetensors", g_dir);
  TU_OK(wk_load_safetensors(path, &weights, NULL));
  snprintf(path, sizeof path, "%s/io.safetensors", g_dir);
  TU_OK(wk_load_safetensors(path, &io, NULL));
  wk_module *model = wk_nn_resnet18((wk_resnet_opts){.num_classes = 10});
  TU_NOTNULL(model);
  ck_assert_int_eq(wk_module_num_parameters(model, false), 11181642);
  TU_OK(wk_module_load_state_dict(model, weights, true, NULL));
  TU_OK(wk_module_train(model, false));
  wk_no_grad_begin();
  wk_tensor *y = wk_module_forward(model, wk_state_dict_get(io, "input"));
  TU_NOTNULL(y);
  double err = max_rel_err(y, wk_state_dict_get(io, "output"));
  ck_assert_msg(err < 1e-4, "Wick's output differs from PyTorch's by %.3g (relative)", err);
  /* the reverse direction: Wick saves, PyTorch loads and reproduces */
  wk_state_dict *mine = wk_module_state_dict(model), *myio = wk_state_dict_new();
  TU_OK(wk_state_dict_set(myio, "input", wk_state_dict_get(io, "input")));
  TU_OK(wk_state_dict_set(myio, "output", y));
  snprintf(path, sizeof path, "%s/wick_weights.safetensors", g_dir);
  TU_OK(wk_save_safetensors(mine, path));
  snprintf(path, sizeof path, "%s/wick_io.safetensors", g_dir);
  TU_OK(wk_save_safetensors(myio, path));
  wk_no_grad_end();
  ck_assert_msg(run_python("check") == 0, "PyTorch could not reproduce Wick's output (see %s/python.log)", g_dir);
  wk_state_dict_free(weights);
  wk_state_dict_free(io);
  wk_state_dict_free(mine);
  wk_state_dict_free(myio);
  wk_module_release(model);
  wk_scope_end();
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

int main(void) {
  snprintf(g_dir, sizeof g_dir, "/tmp/wick-interop-XXXXXX");
  if (!mkdtemp(g_dir)) return 99;
  int rc = run_python("make");
  if (rc != 0) {
    printf("SKIP: PyTorch (/usr/bin/python3 with torch) is needed to produce the reference model (exit %d)\n", rc);
    return 77;
  }
  Suite *s = suite_create("interop");
  TCase *tc = tcase_create("resnet18");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_interop_resnet18_both_ways);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  char cmd[160];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  if (!failed && system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", g_dir);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
