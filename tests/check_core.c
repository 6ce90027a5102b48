/* check_core: the microkernel itself: errors, dtypes and promotion, devices
 * (a fake device type registered from the test), the schema parser, the
 * dispatcher (priorities, supports(), argument normalisation, env overrides),
 * libffi unboxed kernels, dispatch layers, services, the thread pool, RNG. */
#include <pthread.h>
#include <stdatomic.h>

#include "testutil.h"

/* ---- errors and versions ---- */
START_TEST(test_core_version_and_errors) {
  ck_assert_str_eq(wk_version(), WK_VERSION_STRING);
  ck_assert_uint_eq(wk_abi_version(), ((uint32_t)WK_ABI_MAJOR << 16) | WK_ABI_MINOR);
  ck_assert_int_eq(wk_last_error(), WK_OK);
  ck_assert_str_eq(wk_last_error_message(), "");
  ck_assert_int_eq(wk_error(WK_ERR_SHAPE, "first %d", 1), WK_ERR_SHAPE);
  wk_error(WK_ERR_DTYPE, "second");
  ck_assert_int_eq(wk_last_error(), WK_ERR_SHAPE);
  ck_assert_str_eq(wk_last_error_message(), "first 1");
  wk_error_replace(WK_ERR_DTYPE, "replaced");
  ck_assert_str_eq(wk_last_error_message(), "replaced");
  wk_clear_error();
  ck_assert_int_eq(wk_last_error(), WK_OK);
  ck_assert_str_eq(wk_status_name(WK_ERR_NO_KERNEL), "no kernel");
  ck_assert_str_eq(wk_status_name((wk_status)999), "unknown status");
}
END_TEST

/* ---- dtypes ---- */
START_TEST(test_core_dtype_facts_and_parse) {
  ck_assert_uint_eq(wk_dtype_size(WK_BF16), 2);
  ck_assert_uint_eq(wk_dtype_size(WK_I64), 8);
  ck_assert_uint_eq(wk_dtype_size((wk_dtype)77), 0);
  ck_assert_str_eq(wk_dtype_name(WK_U8), "u8");
  ck_assert_int_eq(wk_dtype_parse("torch.float64"), WK_F64);
  ck_assert_int_eq(wk_dtype_parse("bfloat16"), WK_BF16);
  ck_assert_int_eq(wk_dtype_parse("long"), WK_I64);
  ck_assert_int_eq(wk_dtype_parse("i8"), WK_I8);
  ck_assert_int_eq(wk_dtype_parse("complex"), WK_DTYPE_DEFAULT);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "unknown dtype 'complex'");
  ck_assert_int_eq(wk_dtype_parse(NULL), WK_DTYPE_DEFAULT);
  TU_FAILS_WITH(WK_ERR_NULL, "name");
  ck_assert(wk_dtype_is_floating(WK_F16) && !wk_dtype_is_floating(WK_I32));
  ck_assert(wk_dtype_is_integral(WK_U8) && !wk_dtype_is_integral(WK_BOOL));
}
END_TEST

START_TEST(test_core_promote_types_table) {
  /* pairs checked against torch.promote_types in PyTorch 1.13.1 */
  struct { wk_dtype a, b, r; } cases[] = {
      {WK_U8, WK_I8, WK_I16},    {WK_U8, WK_I16, WK_I16},   {WK_I32, WK_I64, WK_I64}, {WK_BOOL, WK_I8, WK_I8},
      {WK_BOOL, WK_BOOL, WK_BOOL}, {WK_I64, WK_F16, WK_F16}, {WK_F16, WK_BF16, WK_F32}, {WK_BF16, WK_F32, WK_F32},
      {WK_F32, WK_F64, WK_F64},  {WK_U8, WK_BOOL, WK_U8},   {WK_I8, WK_F32, WK_F32},  {WK_U8, WK_I64, WK_I64}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ck_assert_int_eq(wk_promote_types(cases[i].a, cases[i].b), cases[i].r);
    ck_assert_int_eq(wk_promote_types(cases[i].b, cases[i].a), cases[i].r);
  }
}
END_TEST

START_TEST(test_core_result_type) {
  wk_tensor *i32 = wk_empty(WK_SHAPE(2), WK_OPTS(.dtype = WK_I32));
  wk_tensor *f16 = wk_empty(WK_SHAPE(2), WK_OPTS(.dtype = WK_F16));
  wk_tensor *z64 = wk_scalar_tensor(1, WK_F64), *zi64 = wk_scalar_tensor(1, WK_I64);
  wk_value a[] = {WK_VT(i32), WK_VF(2.5)};
  ck_assert_int_eq(wk_result_type(a, 2), WK_F32); /* int tensor + float scalar -> default float */
  wk_value b[] = {WK_VT(i32), WK_VT(z64)};
  ck_assert_int_eq(wk_result_type(b, 2), WK_F64); /* 0-dim of a higher category wins */
  wk_value c[] = {WK_VT(i32), WK_VT(zi64)};
  ck_assert_int_eq(wk_result_type(c, 2), WK_I32); /* same category: dimensioned wins */
  wk_value d[] = {WK_VT(f16), WK_VF(1e10)};
  ck_assert_int_eq(wk_result_type(d, 2), WK_F16);
  wk_value e[] = {WK_VT(i32), WK_VI(7)};
  ck_assert_int_eq(wk_result_type(e, 2), WK_I32);
  wk_value f[] = {WK_VB(true), WK_VI(7)};
  ck_assert_int_eq(wk_result_type(f, 2), WK_I64);
  ck_assert_int_eq(wk_result_type(NULL, 0), WK_DTYPE_DEFAULT);
  wk_release(i32);
  wk_release(f16);
  wk_release(z64);
  wk_release(zi64);
}
END_TEST

/* ---- a fake device type, to exercise device plumbing without hardware ---- */
static atomic_int g_fake_allocs;
static int fake_count(void *u) { return 2; }
static void *fake_alloc(void *u, int index, size_t n) {
  atomic_fetch_add(&g_fake_allocs, 1);
  return malloc(n ? n : 1);
}
static void fake_free(void *u, int index, void *p) {
  atomic_fetch_sub(&g_fake_allocs, 1);
  free(p);
}
static wk_status fake_copy(void *u, void *dst, wk_device dd, const void *src, wk_device sd, size_t n) {
  memcpy(dst, src, n);
  return WK_OK;
}
static int32_t register_fake(void) {
  wk_device_iface f = {sizeof f, wk_abi_version(), "fake", NULL, fake_count, fake_alloc, fake_free, fake_copy, NULL, NULL};
  int32_t ty = -1;
  TU_OK(wk_device_type_register(&f, &ty));
  return ty;
}

START_TEST(test_core_device_parse) {
  wk_device d;
  TU_OK(wk_device_parse("cpu", &d));
  ck_assert_int_eq(d.type, WK_DEVICE_CPU);
  ck_assert_int_eq(wk_device_parse("npu:1", &d), WK_ERR_DEVICE); /* (cuda may be a plugin in the build tree) */
  TU_FAILS_WITH(WK_ERR_DEVICE, "unknown device type 'npu' in 'npu:1' (known types: cpu");
  int32_t ty = register_fake();
  ck_assert_int_ge(ty, WK_DEVICE_FIRST_PLUGIN);
  TU_OK(wk_device_parse("fake:1", &d));
  ck_assert_int_eq(d.type, ty);
  ck_assert_int_eq(d.index, 1);
  char buf[32];
  ck_assert_str_eq(wk_device_str(d, buf, sizeof buf), "fake:1");
  ck_assert_int_eq(wk_device_count(ty), 2);
  ck_assert_int_eq(wk_device_parse("fake:x", &d), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "invalid device index in 'fake:x'");
  ck_assert_int_eq(wk_device_parse("", &d), WK_ERR_INVALID_ARG);
  wk_clear_error();
  ck_assert_int_eq(wk_device_parse(NULL, &d), WK_ERR_NULL);
  wk_clear_error();
  wk_device_iface dup = {sizeof dup, wk_abi_version(), "fake", NULL, fake_count, fake_alloc, fake_free, fake_copy, NULL, NULL};
  ck_assert_int_eq(wk_device_type_register(&dup, NULL), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "already registered");
  dup.name = "Bad Name";
  ck_assert_int_eq(wk_device_type_register(&dup, NULL), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "bad device name");
  dup.name = "other";
  dup.abi_version = 7u << 16;
  ck_assert_int_eq(wk_device_type_register(&dup, NULL), WK_ERR_ABI);
  TU_FAILS_WITH(WK_ERR_ABI, "built for ABI 7.0");
  ck_assert_ptr_null(wk_device_alloc((wk_device){ty, 5}, 8));
  TU_FAILS_WITH(WK_ERR_DEVICE, "device fake:5 not available (2 devices present)");
}
END_TEST

START_TEST(test_core_cross_device) {
  int32_t ty = register_fake();
  wk_device fake = {ty, 0}, fake1 = {ty, 1};
  wk_tensor *x = wk_tensor_from_data((float[]){1, 2, 3, 4}, WK_F32, WK_SHAPE(2, 2));
  wk_tensor *y = wk_to_device(x, fake);
  TU_NOTNULL(y);
  ck_assert_int_eq(wk_tensor_device(y).type, ty);
  ck_assert_int_ge(atomic_load(&g_fake_allocs), 1);
  /* printing copies through the device interface */
  char *s = wk_tensor_to_string(y);
  ck_assert_str_eq(s, "tensor([[1., 2.],\n        [3., 4.]], device='fake:0')");
  wk_free(s);
  /* no kernels on the fake device: the error lists who has one */
  ck_assert_ptr_null(wk_add(y, y));
  TU_FAILS_WITH(WK_ERR_NO_KERNEL, "add(): no kernel for device 'fake' (kernels exist for: "); /* cpu, and cuda when built */
  /* mixing devices names both */
  ck_assert_ptr_null(wk_add(x, y));
  TU_FAILS_WITH(WK_ERR_DEVICE, "expected all tensors to be on the same device, but found at least two devices, cpu (argument 'self') and fake:0 (argument 'other')");
  wk_tensor *y1 = wk_to_device(y, fake1); /* between two fake devices: the plugin's copy */
  TU_NOTNULL(y1);
  ck_assert_int_eq(wk_tensor_device(y1).index, 1);
  TU_EQ_VALS(y1, 1, 2, 3, 4);
  wk_release(y1);
  /* a strided cpu destination from a fake source, with dtype conversion */
  wk_tensor *dst = wk_zeros(WK_SHAPE(2, 2), WK_OPTS(.dtype = WK_F64));
  wk_tensor *dt = wk_t(dst);
  ck_assert_ptr_nonnull(wk_copy_(dt, y));
  TU_EQ_VALS(dst, 1, 3, 2, 4);
  wk_tensor *back = wk_to_device(y, wk_cpu());
  TU_EQ_VALS(back, 1, 2, 3, 4);
  wk_release(back);
  wk_release(dt);
  wk_release(dst);
  wk_release(y);
  wk_release(x);
  ck_assert_int_eq(atomic_load(&g_fake_allocs), 0);
}
END_TEST

/* ---- schema parser ---- */
START_TEST(test_core_schema_parse_valid) {
  const char *ok[] = {
      "t1.a(Tensor self, Tensor? other=None, *, Scalar alpha=1, float eps=1e-05) -> Tensor",
      "t1.b(Tensor(a!) self, int[2] stride=1, int[] dims=[], bool flag=True, str mode=\"x\") -> Tensor(a!)",
      "t1.c(Tensor[] xs, Tensor?[] ys, ScalarType? dtype=None, Device? device=None) -> (Tensor values, Tensor indices)",
      "t1.d(Tensor(a -> *) self) -> Tensor[]",
      "t1.e() -> ()",
      "t1.f(float x=-inf, int y=-3, float[] zs=[1, 2]) -> Tensor"};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) ck_assert_msg(wk_op_declare(ok[i], 0) != NULL, "%s: %s", ok[i], wk_last_error_message());
  wk_op *b = wk_op_find("t1.b");
  ck_assert_int_eq(wk_op_num_args(b), 5);
  ck_assert_int_eq(wk_op_mutated_arg(b), 0);
  ck_assert_str_eq(wk_op_arg_type(b, 1), "int[2]");
  ck_assert_int_eq(wk_op_arg_index(b, "mode"), 4);
  ck_assert_int_eq(wk_op_num_outs(wk_op_find("t1.c")), 2);
  ck_assert_int_eq(wk_op_num_outs(wk_op_find("t1.e")), 0);
  /* the same schema again gives the same op; another one is an error */
  ck_assert_ptr_eq(wk_op_declare(ok[0], 0), wk_op_find("t1.a"));
  ck_assert_ptr_null(wk_op_declare("t1.a(Tensor self) -> Tensor", 0));
  TU_FAILS_WITH(WK_ERR_SCHEMA, "op 't1.a' already declared");
}
END_TEST

START_TEST(test_core_schema_parse_invalid) {
  struct { const char *schema, *msg; } bad[] = {
      {"x(Tensr self) -> Tensor", "unknown type"},
      {"x(Tensor self -> Tensor", "expected ',' or ')'"},
      {"x(Tensor self) Tensor", "expected '->'"},
      {"x(Tensor self, Tensor self) -> Tensor", "duplicate argument name"},
      {"x(int a=1, int b) -> Tensor", "positional argument without default follows"},
      {"x(int a=None) -> Tensor", "default None for a non-optional argument"},
      {"x(bool a=yes) -> Tensor", "expected True or False"},
      {"x(Tensor self) -> int", "only Tensor and Tensor[] returns"},
      {"x(Tensor self) -> Tensor(b!)", "alias set matches no argument"},
      {"x(Tensor self) -> Tensor trailing junk", "unexpected text"},
      {"(Tensor self) -> Tensor", "expected an op name"},
      {"x(str s=\"open) -> Tensor", "unterminated string"},
      {"x(bool[] b) -> Tensor", "lists are only supported"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ck_assert_ptr_null(wk_op_declare(bad[i].schema, 0));
    ck_assert_int_eq(wk_last_error(), WK_ERR_SCHEMA);
    ck_assert_msg(strstr(wk_last_error_message(), bad[i].msg), "'%s': message '%s' lacks '%s'", bad[i].schema,
                  wk_last_error_message(), bad[i].msg);
    wk_clear_error();
  }
  ck_assert_ptr_null(wk_op_declare(NULL, 0));
  TU_FAILS_WITH(WK_ERR_NULL, "schema");
}
END_TEST

/* ---- dispatcher ---- */
static wk_status k_tag(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  outs[0] = WK_VT(wk_full(WK_SHAPE(1), (double)(intptr_t)ctx->user, (wk_options){0}));
  return outs[0].u.t ? WK_OK : wk_last_error();
}
static bool only_small(const wk_kernel_ctx *ctx, const wk_value *args) { return wk_tensor_numel(args[0].u.t) < 4; }

START_TEST(test_core_dispatch_priority_and_supports) {
  TU_NOTNULL(wk_op_declare("tp.pick(Tensor self) -> Tensor", 0));
  wk_kernel_desc lo = {sizeof lo, "tp.pick", WK_DEVICE_CPU, 10, k_tag, NULL, (void *)1, "low"};
  wk_kernel_desc hi = {sizeof hi, "tp.pick", WK_DEVICE_CPU, 20, k_tag, only_small, (void *)2, "high"};
  TU_OK(wk_kernel_register(&lo));
  TU_OK(wk_kernel_register(&hi));
  wk_tensor *small = wk_zeros(WK_SHAPE(2), (wk_options){0}), *big = wk_zeros(WK_SHAPE(8), (wk_options){0});
  wk_value out[1];
  TU_OK(wk_call("tp.pick", (wk_value[]){WK_VT(small)}, 1, out));
  TU_EQ_VALS(out[0].u.t, 2);
  wk_release(out[0].u.t);
  TU_OK(wk_call("tp.pick", (wk_value[]){WK_VT(big)}, 1, out));
  TU_EQ_VALS(out[0].u.t, 1); /* high declined, low ran */
  wk_release(out[0].u.t);
  wk_op *op = wk_op_find("tp.pick");
  ck_assert_int_eq(wk_op_num_kernels(op), 2);
  int32_t prio;
  const char *name, *plugin;
  TU_OK(wk_op_kernel_info(op, 0, NULL, &prio, &name, &plugin));
  ck_assert_int_eq(prio, 20);
  ck_assert_str_eq(name, "high");
  ck_assert_str_eq(plugin, "core");
  ck_assert_int_eq(wk_op_kernel_info(op, 5, NULL, NULL, NULL, NULL), WK_ERR_INDEX);
  wk_clear_error();
  /* unknown op and malformed descriptions */
  wk_kernel_desc bad = {sizeof bad, "tp.nope", WK_DEVICE_CPU, 1, k_tag, NULL, NULL, NULL};
  ck_assert_int_eq(wk_kernel_register(&bad), WK_ERR_NOT_FOUND);
  TU_FAILS_WITH(WK_ERR_NOT_FOUND, "unknown op 'tp.nope'");
  bad.op = "tp.pick";
  bad.fn = NULL;
  ck_assert_int_eq(wk_kernel_register(&bad), WK_ERR_INVALID_ARG);
  wk_clear_error();
  ck_assert_int_eq(wk_kernel_register(NULL), WK_ERR_NULL);
  wk_clear_error();
  /* a declared op without kernels */
  TU_NOTNULL(wk_op_declare("tp.none(Tensor self) -> Tensor", 0));
  ck_assert_int_eq(wk_call("tp.none", (wk_value[]){WK_VT(small)}, 1, out), WK_ERR_NO_KERNEL);
  TU_FAILS_WITH(WK_ERR_NO_KERNEL, "tp.none(): no kernel for device 'cpu' (kernels exist for: none)");
  ck_assert_int_eq(wk_call("tp.missing", NULL, 0, out), WK_ERR_NOT_FOUND);
  TU_FAILS_WITH(WK_ERR_NOT_FOUND, "unknown op 'tp.missing'");
  wk_release(small);
  wk_release(big);
}
END_TEST

static wk_status k_echo(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  /* returns [a, len(list), list[1], flag, alpha] as f64 */
  double v[5] = {(double)args[1].u.i, (double)args[2].len, args[2].len > 1 ? (double)args[2].u.ints[1] : -1,
                 args[3].u.b ? 1 : 0, wk_op_num_args(ctx->op) > 4 ? args[4].u.f : 0};
  outs[0] = WK_VT(wk_tensor_from_data(v, WK_F64, WK_SHAPE(5)));
  return WK_OK;
}

START_TEST(test_core_dispatch_normalises_arguments) {
  TU_NOTNULL(wk_op_declare("tn.echo(Tensor self, int a, int[2] st=1, bool flag=False, *, float alpha=0.5) -> Tensor", 0));
  wk_kernel_desc d = {sizeof d, "tn.echo", WK_DEVICE_CPU, 1, k_echo, NULL, NULL, "echo"};
  TU_OK(wk_kernel_register(&d));
  wk_tensor *x = wk_zeros(WK_SHAPE(1), (wk_options){0});
  wk_value out[1];
  TU_OK(wk_call("tn.echo", (wk_value[]){WK_VT(x), WK_VI(3)}, 2, out));
  TU_EQ_VALS(out[0].u.t, 3, 2, 1, 0, 0.5); /* defaults filled, int[2]=1 expanded */
  wk_release(out[0].u.t);
  TU_OK(wk_call("tn.echo", (wk_value[]){WK_VT(x), WK_VI(3), WK_VI(7), WK_VI(1), WK_VI(2)}, 5, out));
  TU_EQ_VALS(out[0].u.t, 3, 2, 7, 1, 2); /* int -> int[2], int -> bool, int -> float */
  wk_release(out[0].u.t);
  ck_assert_int_eq(wk_call("tn.echo", (wk_value[]){WK_VT(x), WK_VF(1.5)}, 2, out), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "tn.echo(): argument 'a' (position 2) must be int, not float");
  ck_assert_int_eq(wk_call("tn.echo", (wk_value[]){WK_VT(x)}, 1, out), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "missing required argument 'a'");
  ck_assert_int_eq(wk_call("tn.echo", (wk_value[]){WK_VT(x), WK_VI(1), WK_VINTS(((int64_t[]){1, 2, 3}), 3)}, 3, out),
                   WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "argument 'st' must have 2 elements, not 3");
  wk_value many[7] = {WK_VT(x), WK_VI(1), WK_VI(1), WK_VB(0), WK_VF(1), WK_VF(1), WK_VF(1)};
  ck_assert_int_eq(wk_call("tn.echo", many, 7, out), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "takes 5 arguments but 7 were given");
  ck_assert_int_eq(wk_call("tn.echo", (wk_value[]){WK_VNONE, WK_VI(1)}, 2, out), WK_ERR_NULL);
  TU_FAILS_WITH(WK_ERR_NULL, "argument 'self' (position 1) is NULL");
  ck_assert_int_eq(wk_op_call(NULL, NULL, 0, out), WK_ERR_NULL);
  wk_clear_error();
  ck_assert_int_eq(wk_op_call(wk_op_find("tn.echo"), NULL, 0, NULL), WK_ERR_NULL);
  wk_clear_error();
  wk_release(x);
}
END_TEST

/* Unboxed kernels: plain C functions called through libffi. */
static wk_tensor *unboxed_axpy(wk_tensor *x, wk_tensor *y, double alpha, const int64_t *dims, int64_t ndims,
                               const double *maybe, bool flag) {
  wk_tensor *ax = wk_mul_scalar(x, alpha);
  wk_tensor *r = wk_add(ax, y);
  wk_release(ax);
  wk_tensor *s = wk_add_scalar(r, (double)ndims * 100 + (ndims ? (double)dims[0] * 10 : 0) + (maybe ? *maybe : 0) +
                                      (flag ? 1000 : 0));
  wk_release(r);
  return s;
}
static wk_status unboxed_two(wk_tensor *x, int64_t k, wk_tensor **a, wk_tensor **b) {
  if (k < 0) return wk_error(WK_ERR_INVALID_ARG, "tu.two(): k must be >= 0, got %lld", (long long)k);
  *a = wk_add_scalar(x, (double)k);
  *b = wk_mul_scalar(x, (double)k);
  return WK_OK;
}

START_TEST(test_core_unboxed_libffi_kernels) {
  TU_NOTNULL(wk_op_declare("tu.axpy(Tensor x, Tensor y, Scalar alpha, int[] dims, float? maybe=None, bool flag=False) -> Tensor", 0));
  TU_NOTNULL(wk_op_declare("tu.two(Tensor x, int k) -> (Tensor, Tensor)", 0));
  TU_OK(wk_kernel_register_unboxed("tu.axpy", WK_DEVICE_CPU, 1, (void (*)(void))unboxed_axpy, "axpy"));
  TU_OK(wk_kernel_register_unboxed("tu.two", WK_DEVICE_CPU, 1, (void (*)(void))unboxed_two, "two"));
  wk_tensor *x = wk_tensor_from_data((float[]){1, 2}, WK_F32, WK_SHAPE(2));
  wk_tensor *y = wk_tensor_from_data((float[]){10, 20}, WK_F32, WK_SHAPE(2));
  wk_value out[2];
  TU_OK(wk_call("tu.axpy", (wk_value[]){WK_VT(x), WK_VT(y), WK_VI(3), WK_VINTS(((int64_t[]){4, 5}), 2)}, 4, out));
  TU_EQ_VALS(out[0].u.t, 253, 266);
  wk_release(out[0].u.t);
  TU_OK(wk_call("tu.axpy", (wk_value[]){WK_VT(x), WK_VT(y), WK_VF(0.5), WK_VINTS((int64_t *)NULL, 0), WK_VF(0.25), WK_VB(1)}, 6, out));
  TU_EQ_VALS(out[0].u.t, 1010.75, 1021.25);
  wk_release(out[0].u.t);
  TU_OK(wk_call("tu.two", (wk_value[]){WK_VT(x), WK_VI(3)}, 2, out));
  TU_EQ_VALS(out[0].u.t, 4, 5);
  TU_EQ_VALS(out[1].u.t, 3, 6);
  wk_release(out[0].u.t);
  wk_release(out[1].u.t);
  ck_assert_int_eq(wk_call("tu.two", (wk_value[]){WK_VT(x), WK_VI(-1)}, 2, out), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "k must be >= 0");
  ck_assert_int_eq(wk_kernel_register_unboxed("split", WK_DEVICE_CPU, 1, (void (*)(void))unboxed_two, "x"), WK_ERR_UNSUPPORTED);
  TU_FAILS_WITH(WK_ERR_UNSUPPORTED, "returns Tensor[]");
  ck_assert_int_eq(wk_kernel_register_unboxed("tu.nope", WK_DEVICE_CPU, 1, (void (*)(void))unboxed_two, "x"), WK_ERR_NOT_FOUND);
  wk_clear_error();
  wk_release(x);
  wk_release(y);
}
END_TEST

/* ---- dispatch layers ---- */
static atomic_int g_layer_calls;
static wk_status counting_layer(wk_layer *self, void *user, wk_op *op, const wk_value *args, wk_value *outs) {
  atomic_fetch_add(&g_layer_calls, 1);
  /* the layer sees the op and may inspect args before passing the call on */
  ck_assert_ptr_nonnull(wk_op_name(op));
  return wk_layer_redispatch(self, op, args, outs);
}
static wk_status blocking_layer(wk_layer *self, void *user, wk_op *op, const wk_value *args, wk_value *outs) {
  return wk_error(WK_ERR_STATE, "%s(): blocked by layer '%s'", wk_op_name(op), (const char *)user);
}

START_TEST(test_core_dispatch_layers) {
  /* below the profiler plugin's layer, which holds WK_LEVEL_PROFILE */
  wk_layer *prof = wk_layer_register("test.profile", WK_LEVEL_PROFILE - 10, counting_layer, NULL, false);
  TU_NOTNULL(prof);
  wk_tensor *x = wk_ones(WK_SHAPE(3), (wk_options){0});
  wk_release(wk_add(x, x));
  ck_assert_int_eq(atomic_load(&g_layer_calls), 0); /* disabled */
  wk_layer_set_enabled(prof, true);
  wk_tensor *y = wk_add(x, x);
  ck_assert_int_eq(atomic_load(&g_layer_calls), 1);
  TU_EQ_VALS(y, 2, 2, 2);
  bool prev = wk_layer_exclude(prof, true);
  ck_assert(!prev);
  wk_release(wk_add(x, x));
  ck_assert_int_eq(atomic_load(&g_layer_calls), 1); /* excluded on this thread */
  wk_layer_exclude(prof, prev);
  /* a higher layer (above the core's trace layer) that refuses the call: lower layers and kernels never run */
  wk_layer *blk = wk_layer_register("test.block", WK_LEVEL_TRACE + 50, blocking_layer, "test.block", true);
  TU_NOTNULL(blk);
  ck_assert_ptr_null(wk_add(x, x));
  TU_FAILS_WITH(WK_ERR_STATE, "add(): blocked by layer 'test.block'");
  ck_assert_int_eq(atomic_load(&g_layer_calls), 1);
  wk_layer_set_enabled(blk, false);
  wk_release(wk_add(x, x));
  ck_assert_int_eq(atomic_load(&g_layer_calls), 2);
  ck_assert_ptr_eq(wk_layer_find("test.block"), blk);
  ck_assert_ptr_null(wk_layer_register("test.again", WK_LEVEL_TRACE + 50, blocking_layer, NULL, false));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "is taken by layer 'test.block'");
  ck_assert_ptr_null(wk_layer_find("nope"));
  TU_FAILS_WITH(WK_ERR_NOT_FOUND, "no dispatch layer named 'nope'");
  wk_release(x);
  wk_release(y);
}
END_TEST

/* ---- services ---- */
typedef struct {
  size_t struct_size;
  int (*answer)(void);
} test_iface;
static int answer42(void) { return 42; }

START_TEST(test_core_services) {
  static const test_iface iface = {sizeof(test_iface), answer42};
  TU_OK(wk_service_register("test.svc", 3, &iface));
  const test_iface *got = wk_service_get("test.svc", 2);
  TU_NOTNULL(got);
  ck_assert_int_eq(got->answer(), 42);
  ck_assert_ptr_null(wk_service_get("test.svc", 4));
  TU_FAILS_WITH(WK_ERR_NOT_FOUND, "service 'test.svc' is version 3 (from plugin 'core'), version 4 or later is needed");
  ck_assert_ptr_null(wk_service_get("quantum", 1));
  TU_FAILS_WITH(WK_ERR_NOT_FOUND, "service 'quantum' is not available: no loaded plugin provides it (plugin search path: ");
  ck_assert_int_eq(wk_service_register("test.svc", 1, &iface), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "already provided by 'core'");
  ck_assert_int_eq(wk_service_register(NULL, 1, &iface), WK_ERR_NULL);
  wk_clear_error();
  const char *name, *plugin;
  uint32_t ver;
  int n = wk_service_count();
  ck_assert_int_ge(n, 1);
  TU_OK(wk_service_info(n - 1, &name, &ver, &plugin));
  ck_assert_str_eq(name, "test.svc");
  ck_assert_int_eq(wk_service_info(n, &name, &ver, &plugin), WK_ERR_INDEX);
  wk_clear_error();
}
END_TEST

/* ---- threads ---- */
static void mark(void *ctx, int64_t b, int64_t e) {
  atomic_int *hits = ctx;
  for (int64_t i = b; i < e; i++) {
    atomic_fetch_add(&hits[i], 1);
    /* nested parallel_for runs inline */
    if (i == b) ck_assert(wk_in_parallel());
  }
}

START_TEST(test_core_parallel_for_covers_range) {
  enum { N = 100003 };
  static atomic_int hits[N];
  for (int t = 1; t <= 4; t++) {
    TU_OK(wk_set_num_threads(t));
    ck_assert_int_eq(wk_num_threads(), t);
    for (int i = 0; i < N; i++) atomic_store(&hits[i], 0);
    wk_parallel_for(0, N, 100, mark, hits);
    for (int i = 0; i < N; i++) ck_assert_int_eq(atomic_load(&hits[i]), 1);
  }
  ck_assert(!wk_in_parallel());
  wk_parallel_for(5, 5, 1, mark, hits); /* empty range: nothing */
  ck_assert_int_eq(wk_set_num_threads(0), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "need at least 1 thread");
}
END_TEST

/* A parallel runtime of the test's own (ABI 1.4): body on nthreads pthreads,
 * the caller among them; counts its calls. */
static atomic_int g_rt_calls;
static void *rt_thread(void *arg) {
  void **a = arg;
  ((void (*)(void *))a[0])(a[1]);
  return NULL;
}
static void rt_run(int nthreads, void (*body)(void *), void *ctx) {
  atomic_fetch_add(&g_rt_calls, 1);
  pthread_t th[8];
  void *arg[2] = {(void *)body, ctx};
  int n = nthreads > 8 ? 8 : nthreads, made = 0;
  for (int i = 1; i < n; i++)
    if (pthread_create(&th[made], NULL, rt_thread, arg) == 0) made++;
  body(ctx);
  for (int i = 0; i < made; i++) pthread_join(th[i], NULL);
}
static void try_switch_inside(void *ctx, int64_t b, int64_t e) {
  (void)b, (void)e;
  wk_parallel_runtime rt = {sizeof rt, "inner", rt_run};
  atomic_store((atomic_int *)ctx, (int)wk_set_parallel_runtime(&rt));
  wk_clear_error(); /* the refusal is recorded on whichever thread ran the chunk */
}
static void rt_none(int nthreads, void (*body)(void *), void *ctx) {
  (void)nthreads, (void)body, (void)ctx; /* runs nothing: the caller must do the work */
}

START_TEST(test_core_parallel_runtime) {
  enum { N = 50021 };
  static atomic_int hits[N];
  wk_parallel_runtime rt = {sizeof rt, "test-threads", rt_run};
  TU_OK(wk_set_parallel_runtime(&rt));
  ck_assert_str_eq(wk_parallel_runtime_name(), "test-threads");
  for (int t = 1; t <= 4; t++) {
    TU_OK(wk_set_num_threads(t));
    ck_assert_int_eq(wk_num_threads(), t);
    atomic_store(&g_rt_calls, 0);
    for (int i = 0; i < N; i++) atomic_store(&hits[i], 0);
    wk_parallel_for(0, N, 100, mark, hits);
    for (int i = 0; i < N; i++) ck_assert_int_eq(atomic_load(&hits[i]), 1);
    ck_assert_int_eq(atomic_load(&g_rt_calls), t > 1 ? 1 : 0); /* one thread: inline, no team */
  }
  ck_assert(!wk_in_parallel());
  /* switching from inside a chunk is refused; the job still completes */
  atomic_int inner = WK_OK;
  wk_parallel_for(0, 2, 1, try_switch_inside, &inner);
  ck_assert_int_eq(atomic_load(&inner), WK_ERR_STATE);
  /* a runtime that runs no thread: the caller does every chunk */
  wk_parallel_runtime lazy = {sizeof lazy, NULL, rt_none};
  TU_OK(wk_set_parallel_runtime(&lazy));
  ck_assert_str_eq(wk_parallel_runtime_name(), "plugin");
  for (int i = 0; i < N; i++) atomic_store(&hits[i], 0);
  wk_parallel_for(0, N, 100, mark, hits);
  for (int i = 0; i < N; i++) ck_assert_int_eq(atomic_load(&hits[i]), 1);
  /* bad runtimes */
  wk_parallel_runtime bad = {sizeof bad, "broken", NULL};
  ck_assert_int_eq(wk_set_parallel_runtime(&bad), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "broken");
  wk_parallel_runtime old = {4, "short", rt_run};
  ck_assert_int_eq(wk_set_parallel_runtime(&old), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "struct_size");
  /* back to Wick's own pool */
  TU_OK(wk_set_parallel_runtime(NULL));
  ck_assert_str_eq(wk_parallel_runtime_name(), "wick");
  for (int i = 0; i < N; i++) atomic_store(&hits[i], 0);
  wk_parallel_for(0, N, 100, mark, hits);
  for (int i = 0; i < N; i++) ck_assert_int_eq(atomic_load(&hits[i]), 1);
}
END_TEST

/* ---- RNG bookkeeping ---- */
START_TEST(test_core_rng_state) {
  wk_manual_seed(123);
  uint64_t seed, off, s2, o2;
  TU_OK(wk_rng_reserve(wk_cpu(), 10, &seed, &off));
  ck_assert_uint_eq(seed, 123);
  ck_assert_uint_eq(off, 0);
  TU_OK(wk_rng_reserve(wk_cpu(), 5, &seed, &off));
  ck_assert_uint_eq(off, 10);
  TU_OK(wk_rng_get_state(wk_cpu(), &s2, &o2));
  ck_assert_uint_eq(o2, 15);
  TU_OK(wk_rng_set_state(wk_cpu(), 7, 3));
  TU_OK(wk_rng_reserve(wk_cpu(), 1, &seed, &off));
  ck_assert_uint_eq(seed, 7);
  ck_assert_uint_eq(off, 3);
  wk_manual_seed(123);
  TU_OK(wk_rng_reserve(wk_cpu(), 1, &seed, &off));
  ck_assert_uint_eq(off, 0);
  ck_assert_int_eq(wk_rng_reserve(wk_cpu(), 1, NULL, &off), WK_ERR_NULL);
  wk_clear_error();
}
END_TEST

/* ---- environment overrides, read at wk_init (no fixture: each test forks) ---- */
START_TEST(test_core_env_deny_kernels) {
  setenv("WICK_DENY_KERNELS", "cpu:mul,nothing", 1);
  ck_assert_int_eq(wk_init(), WK_OK);
  wk_tensor *x = wk_tensor_from_data((float[]){1, 2}, WK_F32, WK_SHAPE(2));
  ck_assert_ptr_null(wk_mul(x, x));
  TU_FAILS_WITH(WK_ERR_NO_KERNEL, "mul(): no kernel for device 'cpu'");
  wk_tensor *s = wk_add(x, x); /* other ops unaffected */
  TU_EQ_VALS(s, 2, 4);
  wk_release(s);
  wk_release(x);
}
END_TEST

START_TEST(test_core_env_force_kernels) {
  setenv("WICK_FORCE_KERNELS", "core:tf.pick", 1);
  ck_assert_int_eq(wk_init(), WK_OK);
  TU_NOTNULL(wk_op_declare("tf.pick(Tensor self) -> Tensor", 0));
  wk_kernel_desc lo = {sizeof lo, "tf.pick", WK_DEVICE_CPU, 10, k_tag, NULL, (void *)1, "low"};
  TU_OK(wk_kernel_register(&lo));
  int32_t prio;
  TU_OK(wk_op_kernel_info(wk_op_find("tf.pick"), 0, NULL, &prio, NULL, NULL));
  ck_assert_int_gt(prio, 1000000);
}
END_TEST

START_TEST(test_core_uninitialised_use) {
  /* no wk_init: ops are unknown, and the message says why */
  wk_tensor *x = wk_empty(WK_SHAPE(2), (wk_options){0});
  TU_NOTNULL(x);
  ck_assert_ptr_null(wk_add(x, x));
  TU_FAILS_WITH(WK_ERR_NOT_FOUND, "was wk_init() called?");
  wk_release(x);
}
END_TEST

/* Every public call survives NULL and out-of-range arguments with a clear error. */
START_TEST(test_core_null_and_bad_arguments) {
  wk_value out[WK_MAX_OUTS];
  ck_assert_int_eq(wk_op_call_kernel(NULL, 0, NULL, 0, out), WK_ERR_NULL);
  wk_clear_error();
  ck_assert_int_eq(wk_op_call_kernel(wk_op_find("add"), 99, NULL, 0, out), WK_ERR_INDEX);
  TU_FAILS_WITH(WK_ERR_INDEX, "asked for 99");
  ck_assert_ptr_null(wk_op_arg_default(NULL, 0));
  ck_assert_ptr_null(wk_op_arg_default(wk_op_find("add"), 0)); /* self has no default */
  ck_assert_ptr_nonnull(wk_op_arg_default(wk_op_find("add"), 2));
  ck_assert_ptr_null(wk_op_arg_name(wk_op_find("add"), 9));
  ck_assert_int_eq(wk_op_arg_index(wk_op_find("add"), NULL), -1);
  ck_assert_ptr_null(wk_op_find(NULL));
  wk_clear_error();
  ck_assert_int_eq(wk_device_synchronize((wk_device){WK_DEVICE_CPU, 3}), WK_ERR_DEVICE);
  TU_FAILS_WITH(WK_ERR_DEVICE, "device cpu:3 not available");
  TU_OK(wk_device_synchronize(wk_cpu()));
  ck_assert_int_eq(wk_device_copy(NULL, wk_cpu(), "x", wk_cpu(), 1), WK_ERR_NULL);
  wk_clear_error();
  ck_assert_ptr_null(wk_layer_register(NULL, 1, NULL, NULL, false));
  wk_clear_error();
  ck_assert_int_eq(wk_layer_redispatch(NULL, NULL, NULL, NULL), WK_ERR_NULL);
  wk_clear_error();
  ck_assert_int_eq(wk_tensor_register_hook(NULL, NULL, NULL), WK_ERR_NULL);
  wk_clear_error();
  ck_assert_int_eq(wk_tensor_set_grad(NULL, NULL), WK_ERR_NULL);
  wk_clear_error();
  ck_assert_int_eq(wk_grad(NULL, 0, NULL, NULL, 0, NULL, NULL, false), WK_ERR_NULL);
  wk_clear_error();
  ck_assert_int_eq(wk_op_register_derivative("nope.op", "X", NULL, 0, 0), WK_ERR_NULL);
  wk_clear_error();
  ck_assert_ptr_null(wk_detach(NULL));
  wk_clear_error();
  ck_assert(!wk_tensor_is_leaf(NULL) || wk_tensor_is_leaf(NULL));
  ck_assert_ptr_null(wk_tensor_grad_fn_name(NULL));
  ck_assert_ptr_null(wk_tensor_grad(NULL));
  ck_assert_ptr_null(wk_backward_saved_arg(NULL, 0));
  wk_clear_error();
  ck_assert(!wk_backward_needs(NULL, 0));
  ck_assert_ptr_null(wk_backward_arg(NULL, 0));
  ck_assert_int_eq(wk_backward_set_grad(NULL, 0, NULL), WK_ERR_NULL);
  wk_clear_error();
  ck_assert_int_eq(wk_inference_mode_end(), WK_ERR_STATE);
  TU_FAILS_WITH(WK_ERR_STATE, "no inference_mode scope is open");
  ck_assert_int_eq(wk_tensor_zero_grad(NULL, true), WK_ERR_NULL);
  wk_clear_error();
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("core");
  struct {
    const char *name;
    bool fixture;
    const TTest *tests[8];
  } groups[] = {
      {"errors", true, {test_core_version_and_errors}},
      {"dtypes", true, {test_core_dtype_facts_and_parse, test_core_promote_types_table, test_core_result_type}},
      {"devices", true, {test_core_device_parse, test_core_cross_device}},
      {"schema", true, {test_core_schema_parse_valid, test_core_schema_parse_invalid}},
      {"dispatch", true, {test_core_dispatch_priority_and_supports, test_core_dispatch_normalises_arguments,
                          test_core_unboxed_libffi_kernels, test_core_dispatch_layers}},
      {"services", true, {test_core_services, test_core_null_and_bad_arguments}},
      {"runtime", true, {test_core_parallel_for_covers_range, test_core_parallel_runtime, test_core_rng_state}},
      {"env", false, {test_core_env_deny_kernels, test_core_env_force_kernels, test_core_uninitialised_use}},
  };
  for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
    TCase *tc = tcase_create(groups[g].name);
    if (groups[g].fixture) tcase_add_checked_fixture(tc, tu_setup, NULL);
    for (int i = 0; i < 8 && groups[g].tests[i]; i++) tcase_add_test(tc, groups[g].tests[i]);
    suite_add_tcase(s, tc);
  }
  return s;
}
TU_MAIN(make_suite)
