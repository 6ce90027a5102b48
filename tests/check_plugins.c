/* check_plugins: the plugin loader against broken and well-behaved plugins:
 * wrong ABI major, an unresolved symbol, a failing init (with rollback of what
 * it registered, ops included), junk files, allow/deny lists, duplicates,
 * explicit loads (and before wk_init), namespaced ops, each plugin's ABI.
 * Each test builds its own plugin directory and initialises Wick itself. */
#include <unistd.h>

#include "testutil.h"

/* "1.1": the core's ABI as the loader prints it (follows WK_ABI_MINOR bumps). */
#define WK__STR2(x) #x
#define WK__STR(x) WK__STR2(x)
#define WK__ABI_TEXT WK__STR(WK_ABI_MAJOR) "." WK__STR(WK_ABI_MINOR)

static char g_dir[256];

/* A fresh directory with links to the named test plugins plus junk files. */
static void make_dir(const char *const *plugins, int n, bool junk) {
  snprintf(g_dir, sizeof g_dir, "/tmp/wick-plugins-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(g_dir));
  char src[512], dst[512];
  for (int i = 0; i < n; i++) {
    snprintf(src, sizeof src, "%s/%s.so", TEST_PLUGIN_DIR, plugins[i]);
    snprintf(dst, sizeof dst, "%s/%s.so", g_dir, plugins[i]);
    ck_assert_msg(symlink(src, dst) == 0, "symlink %s", src);
  }
  if (junk) {
    snprintf(dst, sizeof dst, "%s/junk.so", g_dir);
    FILE *f = fopen(dst, "w");
    fputs("this is not an ELF file\n", f);
    fclose(f);
    snprintf(dst, sizeof dst, "%s/notes.txt", g_dir);
    f = fopen(dst, "w");
    fputs("ignored: not a .so\n", f);
    fclose(f);
    snprintf(dst, sizeof dst, "%s/empty.so", g_dir);
    fclose(fopen(dst, "w"));
  }
  setenv("WICK_PLUGIN_PATH", g_dir, 1);
}

static void cleanup(void) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
  if (g_dir[0] && system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", g_dir);
}

static wk_plugin *find_any(const char *stem) {
  for (int i = 0; i < wk_plugin_count(); i++) {
    wk_plugin *p = wk_plugin_at(i);
    if (strcmp(wk_plugin_name(p), stem) == 0) return p;
  }
  return NULL;
}

static void assert_cpu_works(void) {
  wk_tensor *x = wk_tensor_from_data((float[]){1, -2}, WK_F32, WK_SHAPE(2));
  wk_tensor *y = wk_neg(x);
  TU_EQ_VALS(y, -1, 2);
  wk_release(x);
  wk_release(y);
}

START_TEST(test_plugins_broken_ones_are_listed_with_reasons) {
  const char *names[] = {"badabi", "missingsym", "initfail", "goodop"};
  make_dir(names, 4, true);
  ck_assert_int_eq(wk_init(), WK_OK);
  wk_plugin *p = find_any("badabi");
  TU_NOTNULL(p);
  ck_assert_int_eq(wk_plugin_get_status(p), WK_PLUGIN_FAILED);
  ck_assert_str_eq(wk_plugin_reason(p), "ABI mismatch: plugin built for ABI 99.0, core implements " WK__ABI_TEXT);
  p = find_any("missingsym");
  ck_assert_int_eq(wk_plugin_get_status(p), WK_PLUGIN_FAILED);
  ck_assert_msg(strstr(wk_plugin_reason(p), "dlopen failed") &&
                    strstr(wk_plugin_reason(p), "wick_test_symbol_that_does_not_exist"),
                "%s", wk_plugin_reason(p));
  p = find_any("initfail");
  ck_assert_int_eq(wk_plugin_get_status(p), WK_PLUGIN_FAILED);
  ck_assert_str_eq(wk_plugin_reason(p), "init failed: initfail: cannot find its accelerator (deliberate test failure)");
  ck_assert_str_eq(wk_plugin_version(p), "0.0.1");
  p = find_any("junk");
  ck_assert_int_eq(wk_plugin_get_status(p), WK_PLUGIN_FAILED);
  ck_assert_msg(strstr(wk_plugin_reason(p), "dlopen failed"), "%s", wk_plugin_reason(p));
  p = find_any("empty");
  ck_assert_int_eq(wk_plugin_get_status(p), WK_PLUGIN_FAILED);
  ck_assert_ptr_null(find_any("notes"));
  p = wk_plugin_find("goodop");
  TU_NOTNULL(p);
  ck_assert_str_eq(wk_plugin_version(p), "1.2.3");
  ck_assert_str_eq(wk_plugin_description(p), "test plugin adding goodop.twice_plus");
  ck_assert_ptr_nonnull(strstr(wk_plugin_search_path(), g_dir));
  /* the failed plugin's registrations were rolled back */
  ck_assert_ptr_null(wk_service_get("initfail.svc", 1));
  wk_clear_error();
  ck_assert_int_eq(wk_device_type_find("initfaildev"), -1);
  assert_cpu_works(); /* its high-priority neg kernel is gone */
  /* its own ops are gone; ops the core or goodop declared too stay */
  const char *gone[] = {"initfail::probe", "initfail::probe.v2", "initfail.legacy"};
  for (int i = 0; i < 3; i++) {
    ck_assert_msg(wk_op_find(gone[i]) == NULL, "op %s of the failed plugin is still declared", gone[i]);
    TU_FAILS_WITH(WK_ERR_NOT_FOUND, "unknown op");
  }
  for (int i = 0; i < wk_op_count(); i++)
    ck_assert_msg(strncmp(wk_op_name(wk_op_at(i)), "initfail", 8) != 0, "%s left", wk_op_name(wk_op_at(i)));
  TU_NOTNULL(wk_op_find("neg"));
  wk_op *tp = wk_op_find("goodop.twice_plus");
  TU_NOTNULL(tp);
  ck_assert_int_eq(wk_op_num_kernels(tp), 1);
  wk_tensor *x = wk_tensor_from_data((float[]){1, 2}, WK_F32, WK_SHAPE(2));
  wk_value out[1];
  TU_OK(wk_call("goodop.twice_plus", (wk_value[]){WK_VT(x), WK_VF(1)}, 2, out));
  TU_EQ_VALS(out[0].u.t, 3, 5);
  wk_release(out[0].u.t);
  wk_release(x);
  /* the ABI each plugin was built for: unknown (0) where no entry ran */
  ck_assert_uint_eq(wk_plugin_abi_version(wk_plugin_find("goodop")), wk_abi_version());
  ck_assert_uint_eq(wk_plugin_abi_version(find_any("initfail")), wk_abi_version());
  ck_assert_uint_eq(wk_plugin_abi_version(find_any("badabi")), 99u << 16);
  ck_assert_uint_eq(wk_plugin_abi_version(find_any("junk")), 0);
  ck_assert_uint_eq(wk_plugin_abi_version(NULL), 0);
  ck_assert_int_eq(wk_last_error(), WK_OK); /* broken plugins leave no pending error */
  cleanup();
}
END_TEST

START_TEST(test_plugins_third_party_op_and_service) {
  const char *names[] = {"goodop"};
  make_dir(names, 1, false);
  ck_assert_int_eq(wk_init(), WK_OK);
  wk_tensor *x = wk_tensor_from_data((float[]){1, 2}, WK_F32, WK_SHAPE(2));
  wk_value out[1];
  TU_OK(wk_call("goodop.twice_plus", (wk_value[]){WK_VT(x), WK_VF(0.5)}, 2, out));
  TU_EQ_VALS(out[0].u.t, 2.5, 4.5);
  wk_release(out[0].u.t);
  wk_op *op = wk_op_find("goodop.twice_plus");
  const char *plugin;
  TU_OK(wk_op_kernel_info(op, 0, NULL, NULL, NULL, &plugin));
  ck_assert_str_eq(plugin, "goodop");
  typedef struct {
    size_t struct_size;
    int (*version)(void);
  } goodop_iface;
  const goodop_iface *svc = wk_service_get("goodop", 2);
  TU_NOTNULL(svc);
  ck_assert_int_eq(svc->version(), 7);
  wk_release(x);
  cleanup();
}
END_TEST

START_TEST(test_plugins_allow_and_deny_lists) {
  const char *names[] = {"goodop", "initfail"};
  make_dir(names, 2, false);
  setenv("WICK_DISABLE_PLUGINS", "goodop", 1);
  setenv("WICK_PLUGINS", "cpu,goodop", 1);
  ck_assert_int_eq(wk_init(), WK_OK);
  ck_assert_int_eq(wk_plugin_get_status(find_any("goodop")), WK_PLUGIN_SKIPPED);
  ck_assert_str_eq(wk_plugin_reason(find_any("goodop")), "disabled by WICK_DISABLE_PLUGINS");
  ck_assert_int_eq(wk_plugin_get_status(find_any("initfail")), WK_PLUGIN_SKIPPED);
  ck_assert_str_eq(wk_plugin_reason(find_any("initfail")), "not in WICK_PLUGINS");
  ck_assert_ptr_null(wk_op_find("goodop.twice_plus"));
  wk_clear_error();
  assert_cpu_works();
  cleanup();
}
END_TEST

START_TEST(test_plugins_no_cpu_plugin_gives_clear_errors) {
  const char *names[] = {"goodop"};
  make_dir(names, 1, false);
  /* cuda (loaded from the build tree when built) has kernels for neg too */
  setenv("WICK_DISABLE_PLUGINS", "cpu,cuda", 1);
  ck_assert_int_eq(wk_init(), WK_OK);
  wk_tensor *x = wk_tensor_from_data((float[]){1, 2}, WK_F32, WK_SHAPE(2));
  ck_assert_ptr_null(wk_neg(x));
  TU_FAILS_WITH(WK_ERR_NO_KERNEL, "neg(): no kernel for device 'cpu' (kernels exist for: none); is the plugin that implements it loaded?");
  /* views live in the core and still work */
  wk_tensor *v = wk_view(x, WK_SHAPE(2, 1));
  TU_NOTNULL(v);
  wk_release(v);
  wk_release(x);
  cleanup();
}
END_TEST

START_TEST(test_plugins_duplicates_and_explicit_load) {
  const char *names[] = {"goodop"};
  make_dir(names, 1, false);
  ck_assert_int_eq(wk_init(), WK_OK);
  char path[512];
  snprintf(path, sizeof path, "%s/goodop.so", TEST_PLUGIN_DIR);
  TU_OK(wk_plugin_load(path)); /* the same file again: nothing to do */
  /* another file with the same plugin name is refused */
  char copy[600], cmd[1300];
  snprintf(copy, sizeof copy, "%s/other-goodop.so", g_dir);
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", path, copy);
  ck_assert_int_eq(system(cmd), 0);
  ck_assert_int_eq(wk_plugin_load(copy), WK_ERR_PLUGIN);
  TU_FAILS_WITH(WK_ERR_PLUGIN, "a plugin named 'goodop' is already loaded");
  snprintf(path, sizeof path, "%s/badabi.so", TEST_PLUGIN_DIR);
  ck_assert_int_eq(wk_plugin_load(path), WK_ERR_PLUGIN);
  TU_FAILS_WITH(WK_ERR_PLUGIN, "ABI mismatch: plugin built for ABI 99.0, core implements " WK__ABI_TEXT);
  ck_assert_int_eq(wk_plugin_load("/nonexistent/x.so"), WK_ERR_PLUGIN);
  TU_FAILS_WITH(WK_ERR_PLUGIN, "dlopen failed");
  ck_assert_int_eq(wk_plugin_load(NULL), WK_ERR_NULL);
  wk_clear_error();
  /* inspection of out-of-range and NULL handles never crashes */
  ck_assert_ptr_null(wk_plugin_at(-1));
  ck_assert_ptr_null(wk_plugin_at(wk_plugin_count()));
  ck_assert_ptr_null(wk_plugin_name(NULL));
  ck_assert_int_eq(wk_plugin_get_status(NULL), WK_PLUGIN_FAILED);
  wk_shutdown();
  cleanup();
}
END_TEST

/* stderr goes to a file between begin_stderr() and end_stderr(), which returns
 * what was written there (a static buffer). */
static int g_saved_stderr = -1;
static char g_err_path[64];
static void begin_stderr(void) {
  snprintf(g_err_path, sizeof g_err_path, "/tmp/wick-stderr-XXXXXX");
  int fd = mkstemp(g_err_path);
  ck_assert_int_ge(fd, 0);
  fflush(stderr);
  g_saved_stderr = dup(2);
  dup2(fd, 2);
  close(fd);
}
static const char *end_stderr(void) {
  static char buf[8192];
  fflush(stderr);
  dup2(g_saved_stderr, 2);
  close(g_saved_stderr);
  FILE *f = fopen(g_err_path, "r");
  size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
  buf[n] = 0;
  if (f) fclose(f);
  unlink(g_err_path);
  return buf;
}

static int count_of(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p++) n++;
  return n;
}

START_TEST(test_plugins_misspelled_kernel_override_is_reported) {
  const char *names[] = {"goodop", "initfail"};
  make_dir(names, 2, false);
  /* goodopp twice (one warning), nosuch in the other list; core, cpu, goodop and
   * the failed-but-present initfail are known names */
  setenv("WICK_DENY_KERNELS", "goodopp:goodop.twice_plus,cpu:relu,core:x,initfail,goodopp", 1);
  setenv("WICK_FORCE_KERNELS", "nosuch:relu,goodop", 1);
  begin_stderr();
  ck_assert_int_eq(wk_init(), WK_OK);
  const char *err = end_stderr();
  ck_assert_int_eq(count_of(err, "wick: warning: WICK_DENY_KERNELS names plugin 'goodopp', which matches no plugin "
                                 "candidate, so that entry has no effect; known plugins: core, "),
                   1);
  ck_assert_int_eq(count_of(err, "wick: warning: WICK_FORCE_KERNELS names plugin 'nosuch'"), 1);
  ck_assert_int_eq(count_of(err, "wick: warning:"), 2);
  ck_assert_msg(strstr(err, ", goodop") && strstr(err, ", initfail") && strstr(err, ", cpu"), "%s", err);
  /* the correctly spelled entry still applies: goodop's kernel is not denied */
  wk_op *op = wk_op_find("goodop.twice_plus");
  TU_NOTNULL(op);
  ck_assert_int_eq(wk_op_num_kernels(op), 1);
  cleanup();
}
END_TEST

START_TEST(test_plugins_kernel_override_for_a_plugin_loaded_later) {
  make_dir(NULL, 0, false);
  setenv("WICK_DENY_KERNELS", "goodop:goodop.twice_plus", 1);
  begin_stderr();
  ck_assert_int_eq(wk_init(), WK_OK);
  char path[512];
  snprintf(path, sizeof path, "%s/goodop.so", TEST_PLUGIN_DIR);
  wk_status st = wk_plugin_load(path);
  const char *err = end_stderr();
  TU_OK(st);
  ck_assert_msg(strstr(err, "wick: warning: WICK_DENY_KERNELS names plugin 'goodop'"), "%s", err);
  char want[700];
  snprintf(want, sizeof want, "wick: note: WICK_DENY_KERNELS: plugin 'goodop' is loaded now (from %s); its entries apply",
           path);
  ck_assert_msg(strstr(err, want), "%s", err);
  wk_op *op = wk_op_find("goodop.twice_plus");
  TU_NOTNULL(op);
  ck_assert_int_eq(wk_op_num_kernels(op), 0); /* denied indeed */
  cleanup();
}
END_TEST

START_TEST(test_plugins_init_failure_without_message_names_plugin_and_status) {
  const char *names[] = {"initfail"};
  make_dir(names, 1, false);
  setenv("WICK_TEST_INITFAIL_SILENT", "1", 1);
  ck_assert_int_eq(wk_init(), WK_OK);
  wk_plugin *p = find_any("initfail");
  ck_assert_int_eq(wk_plugin_get_status(p), WK_PLUGIN_FAILED);
  ck_assert_str_eq(wk_plugin_reason(p),
                   "init failed: plugin 'initfail': init returned WK_ERR_UNSUPPORTED (unsupported) without a message");
  ck_assert_int_eq(wk_last_error(), WK_OK);
  /* the same through an explicit load */
  char path[512];
  snprintf(path, sizeof path, "%s/initfail.so", TEST_PLUGIN_DIR);
  ck_assert_int_eq(wk_plugin_load(path), WK_ERR_PLUGIN);
  TU_FAILS_WITH(WK_ERR_PLUGIN, "initfail.so: init failed: plugin 'initfail': init returned WK_ERR_UNSUPPORTED");
  cleanup();
}
END_TEST

START_TEST(test_plugins_load_before_init_fails_cleanly) {
  make_dir(NULL, 0, false);
  char path[512];
  snprintf(path, sizeof path, "%s/goodop.so", TEST_PLUGIN_DIR);
  ck_assert_int_eq(wk_plugin_load(path), WK_ERR_STATE);
  TU_FAILS_WITH(WK_ERR_STATE, "wk_plugin_load: ");
  ck_assert_int_eq(wk_plugin_load(path), WK_ERR_STATE);
  ck_assert_msg(strstr(wk_last_error_message(), "goodop.so: Wick is not initialised; call wk_init() first"), "%s",
                wk_last_error_message());
  wk_clear_error();
  ck_assert_int_eq(wk_plugin_count(), 0); /* nothing was loaded, not even recorded */
  ck_assert_int_eq(wk_op_count(), 0);     /* and wk_init did not run behind the caller's back */
  ck_assert_int_eq(wk_init(), WK_OK);
  TU_OK(wk_plugin_load(path));
  TU_NOTNULL(wk_op_find("goodop.twice_plus"));
  cleanup();
}
END_TEST

START_TEST(test_plugins_namespaced_ops_with_overloads) {
  const char *names[] = {"goodop"};
  make_dir(names, 1, false);
  ck_assert_int_eq(wk_init(), WK_OK);
  /* a plugin's ns::name and ns::name.overload: two ops, found by their full names */
  wk_op *a = wk_op_find("goodop::scaled"), *b = wk_op_find("goodop::scaled.v2");
  TU_NOTNULL(a);
  TU_NOTNULL(b);
  ck_assert_ptr_ne(a, b);
  ck_assert_str_eq(wk_op_name(b), "goodop::scaled.v2");
  wk_tensor *x = wk_tensor_from_data((float[]){1, 2}, WK_F32, WK_SHAPE(2));
  wk_value out[1];
  TU_OK(wk_call("goodop::scaled", (wk_value[]){WK_VT(x)}, 1, out));
  TU_EQ_VALS(out[0].u.t, 2, 4);
  wk_release(out[0].u.t);
  TU_OK(wk_call("goodop::scaled.v2", (wk_value[]){WK_VT(x), WK_VF(3)}, 2, out));
  TU_EQ_VALS(out[0].u.t, 4, 7);
  wk_release(out[0].u.t);
  ck_assert_int_eq(wk_call("goodop::scaled", (wk_value[]){WK_VT(x), WK_VS("no")}, 2, out), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "goodop::scaled(): argument 's' (position 2) must be float");
  wk_release(x);
  ck_assert_ptr_null(wk_op_find("goodop::scaled.v3"));
  TU_FAILS_WITH(WK_ERR_NOT_FOUND, "unknown op 'goodop::scaled.v3'");
  /* the same scheme from a program; the legacy one-dot namespace stays valid */
  wk_op *n = wk_op_declare("acme::rms_norm(Tensor self, Tensor weight, float eps=1e-6) -> Tensor", 0);
  wk_op *v = wk_op_declare("acme::rms_norm.v2(Tensor self, Tensor? weight=None) -> Tensor", 0);
  TU_NOTNULL(n);
  TU_NOTNULL(v);
  ck_assert_ptr_eq(wk_op_find("acme::rms_norm"), n);
  ck_assert_ptr_eq(wk_op_find("acme::rms_norm.v2"), v);
  ck_assert_ptr_eq(wk_op_declare("  acme::rms_norm.v2(Tensor self, Tensor? weight=None) -> Tensor", 0), v);
  TU_NOTNULL(wk_op_declare("acme.legacy(Tensor self) -> Tensor", 0));
  ck_assert_str_eq(wk_op_name(wk_op_find("acme.legacy")), "acme.legacy");
  TU_NOTNULL(wk_op_declare("_acme::_x._y(Tensor self) -> Tensor", 0));
  /* malformed names: each a schema error saying what is wrong */
  static const struct { const char *schema, *why; } bad[] = {
      {"acme.rms_norm.v2(Tensor self) -> Tensor", "write a namespaced op with an overload as ns::name.overload"},
      {"acme::rms_norm.v2.v3(Tensor self) -> Tensor", "one overload at most (ns::name.overload)"},
      {"acme::sub::rms_norm(Tensor self) -> Tensor", "one namespace at most"},
      {"acme.rms_norm::v2(Tensor self) -> Tensor", "one '.' at most"},
      {"acme::(Tensor self) -> Tensor", "expected an op name after the namespace's '::'"},
      {"acme:: rms_norm(Tensor self) -> Tensor", "expected an op name after the namespace's '::'"},
      {"acme::rms_norm.(Tensor self) -> Tensor", "expected an overload name after '.'"},
      {"acme:rms_norm(Tensor self) -> Tensor", "expected '('"},
      {"::rms_norm(Tensor self) -> Tensor", "expected an op name"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    ck_assert_msg(wk_op_declare(bad[i].schema, 0) == NULL, "'%s' was accepted", bad[i].schema);
    TU_FAILS_WITH(WK_ERR_SCHEMA, bad[i].why);
  }
  cleanup();
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("plugins");
  TCase *tc = tcase_create("loader");
  tcase_add_test(tc, test_plugins_broken_ones_are_listed_with_reasons);
  tcase_add_test(tc, test_plugins_third_party_op_and_service);
  tcase_add_test(tc, test_plugins_allow_and_deny_lists);
  tcase_add_test(tc, test_plugins_no_cpu_plugin_gives_clear_errors);
  tcase_add_test(tc, test_plugins_duplicates_and_explicit_load);
  tcase_add_test(tc, test_plugins_misspelled_kernel_override_is_reported);
  tcase_add_test(tc, test_plugins_kernel_override_for_a_plugin_loaded_later);
  tcase_add_test(tc, test_plugins_init_failure_without_message_names_plugin_and_status);
  tcase_add_test(tc, test_plugins_load_before_init_fails_cleanly);
  tcase_add_test(tc, test_plugins_namespaced_ops_with_overloads);
  suite_add_tcase(s, tc);
  return s;
}
TU_MAIN(make_suite)
