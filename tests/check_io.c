/* check_io: the io service: safetensors round trips (every dtype, strided,
 * 0-dim, empty, other devices), byte-exact layout, interop with files written
 * and read by PyTorch (tests/io_data/gen.py), rejection of corrupt files,
 * a mutation fuzz, atomic writes, and training checkpoints. */
#define _GNU_SOURCE /* nftw */
#include <dirent.h>
#include <ftw.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <wick/io.h>

#include "testutil.h"

/* ---- helpers -------------------------------------------------------------------------- */
static char g_dir[64];

static void dir_setup(void) {
  tu_setup();
  snprintf(g_dir, sizeof g_dir, "/tmp/check_io.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(g_dir));
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  return remove(p);
}
static void dir_teardown(void) {
  chmod(g_dir, 0700);
  nftw(g_dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

static const char *path_in(const char *name) {
  static char p[16][512];
  static int k;
  k = (k + 1) % 16;
  snprintf(p[k], sizeof p[k], "%s/%s", g_dir, name);
  return p[k];
}

static int dir_entries(void) {
  DIR *d = opendir(g_dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  if (d) closedir(d);
  return n;
}

static unsigned char *read_all(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  fseek(f, 0, SEEK_END);
  *n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc(*n ? *n : 1);
  ck_assert_uint_eq(fread(b, 1, *n, f), *n);
  fclose(f);
  return b;
}

static void write_all(const char *path, const void *b, size_t n) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(b, 1, n, f), n);
  fclose(f);
}

static const char *data_dir(void) {
  static char p[1024];
  const char *top = getenv("top_srcdir");
  if (top) {
    snprintf(p, sizeof p, "%s/tests/io_data", top);
  } else { /* run by hand: next to this source file */
    snprintf(p, sizeof p, "%s", __FILE__);
    char *s = strrchr(p, '/');
    snprintf(s ? s + 1 : p, sizeof p - (size_t)(s ? s + 1 - p : 0), "io_data");
  }
  return p;
}

/* Same dtype, shape and bytes (wherever the tensors live). */
static void assert_same(wk_tensor *a, wk_tensor *b, const char *what) {
  ck_assert_msg(a && b, "%s: NULL tensor (%s)", what, wk_last_error_message());
  ck_assert_msg(wk_tensor_dtype(a) == wk_tensor_dtype(b), "%s: dtype %s vs %s", what, wk_dtype_name(wk_tensor_dtype(a)),
                wk_dtype_name(wk_tensor_dtype(b)));
  ck_assert_int_eq(wk_tensor_dim(a), wk_tensor_dim(b));
  for (int d = 0; d < wk_tensor_dim(a); d++) ck_assert_int_eq(wk_tensor_size(a, d), wk_tensor_size(b, d));
  wk_scope_begin();
  wk_tensor *ca = wk_contiguous(wk_to_device(a, wk_cpu())), *cb = wk_contiguous(wk_to_device(b, wk_cpu()));
  size_t n = (size_t)wk_tensor_numel(a) * wk_dtype_size(wk_tensor_dtype(a));
  ck_assert_msg(ca && cb && (!n || memcmp(wk_tensor_data(ca), wk_tensor_data(cb), n) == 0), "%s: values differ", what);
  wk_scope_end();
}

/* A device type whose memory is host memory; copies fail when `failing`. */
// clang-format off
static int fk_count(void *u) { return 1; }
static void *fk_alloc(void *u, int i, size_t n) { return malloc(n ? n : 1); }
static void fk_free(void *u, int i, void *p) { free(p); }
// clang-format on
static wk_status fk_copy(void *u, void *dst, wk_device dd, const void *src, wk_device sd, size_t n) {
  if (u) return wk_error(WK_ERR_DEVICE, "iofail: copy refused (simulated hardware fault)");
  memcpy(dst, src, n);
  return WK_OK;
}
static wk_device fake_device(bool failing) {
  wk_device_iface f = {.struct_size = sizeof f,
                       .abi_version = (WK_ABI_MAJOR << 16) | WK_ABI_MINOR,
                       .name = failing ? "iofail" : "iofake",
                       .user = failing ? (void *)1 : NULL,
                       .device_count = fk_count,
                       .alloc = fk_alloc,
                       .free = fk_free,
                       .copy = fk_copy};
  int32_t type = wk_device_type_find(f.name);
  if (type < 0) TU_OK(wk_device_type_register(&f, &type));
  return (wk_device){type, 0};
}

/* ---- the service --------------------------------------------------------------------------- */
START_TEST(test_io_service_registered) {
  const wk_io_iface *io = wk_service_get(WK_IO_SERVICE, WK_IO_SERVICE_VERSION);
  TU_NOTNULL(io);
  ck_assert_uint_ge(io->struct_size, sizeof(wk_io_iface));
  ck_assert_ptr_null(wk_service_get(WK_IO_SERVICE, 99));
  TU_FAILS_WITH(WK_ERR_NOT_FOUND, "version 99 or later");
}
END_TEST

START_TEST(test_io_missing_plugin) {
  if (wk_plugin_find("io")) return; /* CK_FORK=no: an earlier test loaded it */
  setenv("WICK_DISABLE_PLUGINS", "io", 1);
  ck_assert_int_eq(wk_init(), WK_OK);
  wk_state_dict *sd = wk_state_dict_new();
  ck_assert_int_eq(wk_save_safetensors(sd, path_in("x")), WK_ERR_NOT_FOUND);
  ck_assert_ptr_nonnull(strstr(wk_last_error_message(), "plugin search path"));
  TU_FAILS_WITH(WK_ERR_NOT_FOUND, "service 'io'");
  wk_state_dict *out = sd;
  ck_assert_int_eq(wk_load_safetensors(path_in("x"), &out, NULL), WK_ERR_NOT_FOUND);
  ck_assert_ptr_null(out);
  wk_state_dict_free(sd);
}
END_TEST

START_TEST(test_io_null_arguments) {
  wk_state_dict *sd = wk_state_dict_new(), *out = sd;
  ck_assert_int_eq(wk_save_safetensors(NULL, path_in("a")), WK_ERR_NULL);
  TU_FAILS_WITH(WK_ERR_NULL, "'sd'");
  ck_assert_int_eq(wk_save_safetensors(sd, NULL), WK_ERR_NULL);
  TU_FAILS_WITH(WK_ERR_NULL, "'path'");
  ck_assert_int_eq(wk_save_safetensors(sd, ""), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "empty path");
  ck_assert_int_eq(wk_load_safetensors(NULL, &out, NULL), WK_ERR_NULL);
  ck_assert_ptr_null(out);
  TU_FAILS_WITH(WK_ERR_NULL, "'path'");
  ck_assert_int_eq(wk_load_safetensors(path_in("a"), NULL, NULL), WK_ERR_NULL);
  TU_FAILS_WITH(WK_ERR_NULL, "'out'");
  ck_assert_int_eq(wk_load_safetensors(path_in("a"), &out, &(wk_io_load_opts){0}), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "WK_IO_LOAD_OPTS");
  ck_assert_int_eq(wk_save_safetensors_buffer(sd, NULL, NULL), WK_ERR_NULL);
  wk_clear_error();
  ck_assert_int_eq(wk_load_safetensors_buffer(NULL, 5, &out, NULL), WK_ERR_NULL);
  wk_clear_error();
  ck_assert_int_eq(wk_checkpoint_save(path_in("c"), NULL), WK_ERR_NULL);
  TU_FAILS_WITH(WK_ERR_NULL, "'ck'");
  ck_assert_int_eq(wk_checkpoint_load(path_in("c"), NULL, NULL), WK_ERR_NULL);
  wk_clear_error();
  wk_checkpoint ck = {0};
  ck_assert_int_eq(wk_checkpoint_load(path_in("c"), &ck, NULL), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "WK_CHECKPOINT_INIT");
  wk_checkpoint_clear(NULL);
  ck_assert_int_eq(wk_checkpoint_add(NULL, "m", sd), WK_ERR_NULL);
  wk_clear_error();
  wk_state_dict_free(sd);
}
END_TEST

/* ---- round trips ---------------------------------------------------------------------------- */
static const wk_dtype ALL[] = {WK_F32, WK_F64, WK_F16, WK_BF16, WK_I8, WK_U8, WK_I16, WK_I32, WK_I64, WK_BOOL};

/* Every dtype in several shapes and layouts: contiguous, 0-dim, empty,
 * strided slices, transposes, broadcast (stride 0) views. */
static wk_state_dict *varied_dict(void) {
  wk_state_dict *sd = wk_state_dict_new();
  char k[64];
  wk_scope_begin();
  for (size_t i = 0; i < sizeof ALL / sizeof ALL[0]; i++) {
    wk_dtype dt = ALL[i];
    const char *n = wk_dtype_name(dt);
    wk_tensor *a = tu_rand(WK_SHAPE(3, 4, 5), dt, -50, 50, 11 + i);
#define PUT(suffix, t) (snprintf(k, sizeof k, "%s.%s", n, suffix), TU_OK(wk_state_dict_set(sd, k, t)))
    PUT("dense", a);
    PUT("scalar", tu_rand(NULL, 0, dt, -9, 9, 5 + i));
    PUT("empty", wk_empty(WK_SHAPE(0, 3), (wk_options){.dtype = dt}));
    PUT("empty2", wk_empty(WK_SHAPE(2, 0, 4), (wk_options){.dtype = dt}));
    PUT("noncontig", tu_noncontig(a));
    PUT("transposed", wk_transpose(a, 0, 2));
    PUT("sliced", wk_slice(a, 1, 1, 4, 2));
    PUT("expanded", wk_expand(tu_rand(WK_SHAPE(1, 3), dt, -5, 5, 3), WK_SHAPE(4, 3)));
#undef PUT
  }
  wk_scope_end();
  TU_OK(wk_state_dict_set_meta(sd, "epoch", "3"));
  TU_OK(wk_state_dict_set_meta(sd, "quote\"back\\slash\nnewline", "ünïcødé ✓ \t tab"));
  TU_OK(wk_state_dict_set_meta(sd, "empty", ""));
  return sd;
}

static void assert_dicts_equal(const wk_state_dict *a, const wk_state_dict *b) {
  ck_assert_int_eq(wk_state_dict_size(a), wk_state_dict_size(b));
  for (int i = 0; i < wk_state_dict_size(a); i++) {
    ck_assert_str_eq(wk_state_dict_key(a, i), wk_state_dict_key(b, i)); /* order kept */
    assert_same(wk_state_dict_value(a, i), wk_state_dict_value(b, i), wk_state_dict_key(a, i));
  }
  ck_assert_int_eq(wk_state_dict_meta_size(a), wk_state_dict_meta_size(b));
  for (int i = 0; i < wk_state_dict_meta_size(a); i++)
    ck_assert_str_eq(wk_state_dict_get_meta(b, wk_state_dict_meta_key(a, i)), wk_state_dict_meta_value(a, i));
}

START_TEST(test_io_roundtrip_all_dtypes) {
  int64_t live = wk_live_tensors();
  wk_state_dict *sd = varied_dict(), *back = NULL;
  TU_OK(wk_save_safetensors(sd, path_in("all.safetensors")));
  TU_OK(wk_load_safetensors(path_in("all.safetensors"), &back, NULL));
  assert_dicts_equal(sd, back);
  for (int i = 0; i < wk_state_dict_size(back); i++) /* loaded tensors are plain dense cpu tensors */
    ck_assert(wk_tensor_is_contiguous(wk_state_dict_value(back, i)) &&
              wk_device_equal(wk_tensor_device(wk_state_dict_value(back, i)), wk_cpu()));
  ck_assert_int_eq(dir_entries(), 1);
  /* the same bytes through memory */
  void *buf = NULL;
  size_t n = 0, fn = 0;
  TU_OK(wk_save_safetensors_buffer(sd, &buf, &n));
  unsigned char *file = read_all(path_in("all.safetensors"), &fn);
  ck_assert_uint_eq(n, fn);
  ck_assert(memcmp(buf, file, n) == 0);
  wk_state_dict *back2 = NULL;
  TU_OK(wk_load_safetensors_buffer(buf, n, &back2, NULL));
  assert_dicts_equal(sd, back2);
  free(file);
  wk_free(buf);
  /* an empty dict is a valid file too */
  wk_state_dict *none = wk_state_dict_new(), *none2 = NULL;
  TU_OK(wk_save_safetensors(none, path_in("none.safetensors")));
  TU_OK(wk_load_safetensors(path_in("none.safetensors"), &none2, NULL));
  ck_assert_int_eq(wk_state_dict_size(none2), 0);
  wk_state_dict_free(none);
  wk_state_dict_free(none2);
  wk_state_dict_free(sd);
  wk_state_dict_free(back);
  wk_state_dict_free(back2);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_io_map_location_and_devices) {
  int64_t live = wk_live_tensors();
  wk_device fake = fake_device(false);
  wk_state_dict *sd = varied_dict(), *back = NULL;
  TU_OK(wk_save_safetensors(sd, path_in("m.safetensors")));
  TU_OK(wk_load_safetensors(path_in("m.safetensors"), &back, WK_IO_LOAD_OPTS(.map_location = fake)));
  for (int i = 0; i < wk_state_dict_size(back); i++)
    ck_assert(wk_device_equal(wk_tensor_device(wk_state_dict_value(back, i)), fake));
  assert_dicts_equal(sd, back);
  /* tensors living on another device are saved from there */
  TU_OK(wk_save_safetensors(back, path_in("from_dev.safetensors")));
  wk_state_dict_free(back);
  TU_OK(wk_load_safetensors(path_in("from_dev.safetensors"), &back, WK_IO_LOAD_OPTS(.map_location = wk_cpu())));
  assert_dicts_equal(sd, back);
  wk_state_dict_free(back);
  ck_assert_int_eq(wk_load_safetensors(path_in("m.safetensors"), &back, WK_IO_LOAD_OPTS(.map_location = {60, 0})),
                   WK_ERR_DEVICE);
  TU_FAILS_WITH(WK_ERR_DEVICE, "unknown device type 60");
  ck_assert_int_eq(
      wk_load_safetensors(path_in("m.safetensors"), &back, WK_IO_LOAD_OPTS(.map_location = {fake.type, 3})),
      WK_ERR_DEVICE);
  TU_FAILS_WITH(WK_ERR_DEVICE, "iofake:3");
  ck_assert_ptr_null(back);
  /* a device whose copies fail: the load fails cleanly, naming the tensor */
  wk_device bad = fake_device(true);
  ck_assert_int_eq(wk_load_safetensors(path_in("m.safetensors"), &back, WK_IO_LOAD_OPTS(.map_location = bad)),
                   WK_ERR_DEVICE);
  TU_FAILS_WITH(WK_ERR_DEVICE, "moving tensor 'f32.dense' to iofail:0 failed");
  ck_assert_ptr_null(back);
  wk_state_dict_free(sd);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- interop with PyTorch ---------------------------------------------------------------------- */
/* The tensors of tests/io_data/gen.py's tensors(), built independently here. */
static wk_state_dict *torch_formulas(void) {
  wk_state_dict *sd = wk_state_dict_new();
  double v[12];
  wk_scope_begin();
#define FILL(n, expr) \
  for (int i = 0; i < (n); i++) v[i] = (expr)
  FILL(12, i * 0.25 - 1);
  wk_state_dict_set(sd, "f32", tu_tensor(v, WK_F32, WK_SHAPE(3, 4)));
  FILL(6, i / 3.0);
  wk_state_dict_set(sd, "f64", tu_tensor(v, WK_F64, WK_SHAPE(2, 3)));
  FILL(8, (i - 4) * 0.5);
  wk_state_dict_set(sd, "f16", tu_tensor(v, WK_F16, WK_SHAPE(8)));
  FILL(8, (i - 4) * 0.125);
  wk_state_dict_set(sd, "bf16", tu_tensor(v, WK_BF16, WK_SHAPE(2, 2, 2)));
  FILL(10, i - 5);
  wk_state_dict_set(sd, "i8", tu_tensor(v, WK_I8, WK_SHAPE(10)));
  FILL(6, 250 + i);
  wk_state_dict_set(sd, "u8", tu_tensor(v, WK_U8, WK_SHAPE(6)));
  FILL(6, i * 1000 - 3000);
  wk_state_dict_set(sd, "i16", tu_tensor(v, WK_I16, WK_SHAPE(2, 3)));
  FILL(4, i * 100000 - 7);
  wk_state_dict_set(sd, "i32", tu_tensor(v, WK_I32, WK_SHAPE(4)));
  const int64_t big[] = {-(INT64_C(1) << 62), 0, (INT64_C(1) << 62) + 5, (INT64_C(1) << 40) + 1};
  wk_state_dict_set(sd, "i64", wk_tensor_from_data(big, WK_I64, WK_SHAPE(4)));
  FILL(5, i % 2 == 0);
  wk_state_dict_set(sd, "bool", tu_tensor(v, WK_BOOL, WK_SHAPE(5)));
  wk_state_dict_set(sd, "scalar", wk_scalar_tensor(3.5, WK_F32));
  wk_state_dict_set(sd, "empty", wk_zeros(WK_SHAPE(0, 3), (wk_options){0}));
  FILL(6, i);
  wk_state_dict_set(sd, "transposed", wk_t(tu_tensor(v, WK_F32, WK_SHAPE(2, 3)))); /* a real strided view */
#undef FILL
  wk_scope_end();
  ck_assert_int_eq(wk_state_dict_size(sd), 13);
  return sd;
}

START_TEST(test_io_interop_loads_torch_file) {
  int64_t live = wk_live_tensors();
  char p[1100];
  snprintf(p, sizeof p, "%s/torch_dtypes.safetensors", data_dir());
  wk_state_dict *got = NULL, *want = torch_formulas();
  TU_OK(wk_load_safetensors(p, &got, NULL));
  ck_assert_int_eq(wk_state_dict_size(got), 13);
  for (int i = 0; i < wk_state_dict_size(want); i++) {
    const char *k = wk_state_dict_key(want, i);
    assert_same(wk_state_dict_get(got, k), wk_state_dict_value(want, i), k);
  }
  TU_EQ_VALS(wk_state_dict_get(got, "transposed"), 0, 3, 1, 4, 2, 5);
  ck_assert_str_eq(wk_state_dict_get_meta(got, "format"), "pt");
  ck_assert_ptr_nonnull(strstr(wk_state_dict_get_meta(got, "producer"), "torch"));
  wk_state_dict_free(got);
  wk_state_dict_free(want);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_io_interop_torch_reads_ours) {
  wk_state_dict *sd = torch_formulas();
  TU_OK(wk_state_dict_set_meta(sd, "producer", "wick"));
  const char *p = path_in("ours.safetensors");
  TU_OK(wk_save_safetensors(sd, p));
  wk_state_dict_free(sd);
  if (access("/usr/bin/python3", X_OK) != 0) {
    fprintf(stderr, "test_io_interop_torch_reads_ours: /usr/bin/python3 absent, PyTorch check skipped\n");
    return;
  }
  char cmd[2400];
  snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s/gen.py' verify '%s' 1>&2", data_dir(), p);
  int rc = system(cmd);
  rc = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  if (rc == 77) {
    fprintf(stderr, "test_io_interop_torch_reads_ours: torch not importable, PyTorch check skipped\n");
    return;
  }
  ck_assert_msg(rc == 0, "PyTorch could not read our file (gen.py verify exit %d)", rc);
}
END_TEST

/* ---- byte layout against the spec ------------------------------------------------------------ */
START_TEST(test_io_spec_bytes) {
  wk_state_dict *sd = wk_state_dict_new();
  wk_scope_begin();
  wk_state_dict_set(sd, "w", TU_T(WK_F32, (2), 1.0, -2.0));
  wk_state_dict_set(sd, "h", TU_T(WK_F16, (1, 1), 1.0));
  wk_state_dict_set(sd, "b", TU_T(WK_BF16, (), 1.0));
  wk_state_dict_set(sd, "n", wk_tensor_from_data((const int64_t[]){-2}, WK_I64, WK_SHAPE(1)));
  wk_state_dict_set(sd, "e", wk_empty(WK_SHAPE(0), (wk_options){.dtype = WK_U8}));
  wk_state_dict_set(sd, "q", TU_T(WK_BOOL, (2), 1, 0));
  wk_scope_end();
  TU_OK(wk_state_dict_set_meta(sd, "k", "v"));
  TU_OK(wk_save_safetensors(sd, path_in("spec.safetensors")));
  size_t n;
  unsigned char *b = read_all(path_in("spec.safetensors"), &n);
  const char *json =
      "{\"__metadata__\":{\"k\":\"v\"},\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
      "\"h\":{\"dtype\":\"F16\",\"shape\":[1,1],\"data_offsets\":[8,10]},"
      "\"b\":{\"dtype\":\"BF16\",\"shape\":[],\"data_offsets\":[10,12]},"
      "\"n\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[12,20]},"
      "\"e\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[20,20]},"
      "\"q\":{\"dtype\":\"BOOL\",\"shape\":[2],\"data_offsets\":[20,22]}}";
  size_t jl = strlen(json), hl = (jl + 7) / 8 * 8;
  uint64_t len = 0;
  for (int i = 7; i >= 0; i--) len = len << 8 | b[i]; /* u64 little-endian */
  ck_assert_uint_eq(len, hl);
  ck_assert_uint_eq(n, 8 + hl + 22);
  ck_assert_msg(memcmp(b + 8, json, jl) == 0, "header is %.*s", (int)hl, b + 8);
  for (size_t i = jl; i < hl; i++) ck_assert_int_eq(b[8 + i], ' ');               /* padded with spaces to 8 bytes */
  const unsigned char data[22] = {0,    0,    0x80, 0x3f, 0,    0,    0,    0xc0, /* f32 1, -2 */
                                  0x00, 0x3c, 0x80, 0x3f,                         /* f16 1, bf16 1 */
                                  0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, /* i64 -2 */
                                  1,    0};                                       /* bool */
  ck_assert(memcmp(b + 8 + hl, data, 22) == 0);
  free(b);
  wk_state_dict_free(sd);
}
END_TEST

/* ---- corrupt files ------------------------------------------------------------------------------ */
/* A file: u64 header length (or `len` when not ~0), header text, `data` bytes of 0x00. */
static size_t craft(unsigned char *out, uint64_t len, const char *header, size_t data) {
  size_t hl = strlen(header);
  if (len == ~0ull) len = hl;
  for (int i = 0; i < 8; i++) out[i] = (unsigned char)(len >> (8 * i));
  memcpy(out + 8, header, hl);
  memset(out + 8 + hl, 0, data);
  return 8 + hl + data;
}

START_TEST(test_io_rejects_corrupt_files) {
  int64_t live = wk_live_tensors();
  char line[1024], path[1100];
  unsigned char buf[1024];
  int cases = 0;
  snprintf(path, sizeof path, "%s/bad_headers.tsv", data_dir());
  FILE *f = fopen(path, "r");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    if (line[0] == '#' || !line[0]) continue;
    char *len = strtok(line, "\t"), *data = strtok(NULL, "\t"), *header = strtok(NULL, "\t");
    char *needle = strtok(NULL, "\t");
    ck_assert_msg(needle != NULL, "%s: bad line %d", path, cases + 1);
    size_t n = craft(buf, *len == '-' ? ~0ull : strtoull(len, NULL, 10), header, strtoul(data, NULL, 10));
    wk_state_dict *sd = (wk_state_dict *)buf;
    wk_status st = wk_load_safetensors_buffer(buf, n, &sd, NULL);
    cases++;
    if (strcmp(needle, "-") == 0) { /* a valid file */
      ck_assert_msg(st == WK_OK && sd, "%s: %s", header, wk_last_error_message());
      wk_state_dict_free(sd);
      continue;
    }
    ck_assert_msg(st == WK_ERR_IO && !sd, "%s loaded: status %d", header, st);
    ck_assert_msg(strstr(wk_last_error_message(), needle) && strstr(wk_last_error_message(), "'<buffer>'"),
                  "%s: message '%s' lacks '%s'", header, wk_last_error_message(), needle);
    wk_clear_error();
  }
  fclose(f);
  ck_assert_int_ge(cases, 30);
  /* invalid UTF-8, a NUL inside the header, a BOOL byte that is neither 0 nor 1 */
  size_t n = craft(buf, ~0ull, "{\"a\xff\":{}}", 0);
  wk_state_dict *sd = NULL;
  ck_assert_int_eq(wk_load_safetensors_buffer(buf, n, &sd, NULL), WK_ERR_IO);
  TU_FAILS_WITH(WK_ERR_IO, "not valid UTF-8 (header byte 3)");
  n = craft(buf, ~0ull, "{\"a\":{\"dtype\":\"BOOL\",\"shape\":[2],\"data_offsets\":[0,2]}}", 2);
  buf[n - 1] = 2;
  ck_assert_int_eq(wk_load_safetensors_buffer(buf, n, &sd, NULL), WK_ERR_IO);
  TU_FAILS_WITH(WK_ERR_IO, "tensor 'a': BOOL element 1 is 2, not 0 or 1");
  buf[10] = 0;
  ck_assert_int_eq(wk_load_safetensors_buffer(buf, n, &sd, NULL), WK_ERR_IO);
  TU_FAILS_WITH(WK_ERR_IO, "NUL byte at header byte 2");
  ck_assert_int_eq(wk_load_safetensors_buffer(buf, 5, &sd, NULL), WK_ERR_IO);
  TU_FAILS_WITH(WK_ERR_IO, "5 bytes are too few for the 8-byte header length");
  /* more tensors than a file may hold (bounded: core state dicts are linear maps) */
  size_t cap = 65537 * 64 + 16, k = 8;
  unsigned char *many = malloc(cap);
  k += (size_t)sprintf((char *)many + k, "{");
  for (int i = 0; i < 65537; i++)
    k += (size_t)sprintf((char *)many + k, "%s\"t%d\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}",
                         i ? "," : "", i);
  k += (size_t)sprintf((char *)many + k, "}");
  for (int i = 0; i < 8; i++) many[i] = (unsigned char)((k - 8) >> (8 * i));
  ck_assert_int_eq(wk_load_safetensors_buffer(many, k, &sd, NULL), WK_ERR_IO);
  TU_FAILS_WITH(WK_ERR_IO, "more than 65536 tensors");
  free(many);
  /* files: the message names the path; truncation; not a file; no file */
  wk_state_dict *good = torch_formulas();
  const char *p = path_in("t.safetensors");
  TU_OK(wk_save_safetensors(good, p));
  unsigned char *whole = read_all(p, &n);
  write_all(p, whole, n - 3);
  ck_assert_int_eq(wk_load_safetensors(p, &sd, NULL), WK_ERR_IO);
  ck_assert_ptr_nonnull(strstr(wk_last_error_message(), p));
  TU_FAILS_WITH(WK_ERR_IO, "reach past the end of the data section");
  write_all(p, whole, 100);
  ck_assert_int_eq(wk_load_safetensors(p, &sd, NULL), WK_ERR_IO);
  TU_FAILS_WITH(WK_ERR_IO, "truncated or corrupted file");
  ck_assert_int_eq(wk_load_safetensors(g_dir, &sd, NULL), WK_ERR_IO);
  TU_FAILS_WITH(WK_ERR_IO, "not a regular file");
  ck_assert_int_eq(wk_load_safetensors(path_in("nope"), &sd, NULL), WK_ERR_IO);
  TU_FAILS_WITH(WK_ERR_IO, "No such file");
  /* names we cannot write */
  wk_state_dict *odd = wk_state_dict_new();
  wk_state_dict_set(odd, "__metadata__", wk_state_dict_value(good, 0));
  ck_assert_int_eq(wk_save_safetensors(odd, p), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "reserved by the safetensors format");
  wk_state_dict_remove(odd, "__metadata__");
  wk_state_dict_set_meta(odd, "bad\xc3", "x");
  ck_assert_int_eq(wk_save_safetensors(odd, p), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "not valid UTF-8");
  wk_state_dict_free(odd);
  free(whole);
  wk_state_dict_free(good);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* The strict JSON pre-check: what cJSON would tolerate or mangle is refused with its byte offset. */
static void strict_rejects(const char *header, size_t data, const char *needle) {
  static unsigned char buf[4096];
  size_t n = craft(buf, ~0ull, header, data);
  wk_state_dict *sd = (wk_state_dict *)buf;
  ck_assert_msg(wk_load_safetensors_buffer(buf, n, &sd, NULL) == WK_ERR_IO && !sd, "%s loaded", header);
  TU_FAILS_WITH(WK_ERR_IO, needle);
  wk_clear_error();
}

START_TEST(test_io_strict_json) {
  int64_t live = wk_live_tensors();
  /* \u0000 would end cJSON's string early: "F32\u0000garbage" read as F32, two keys collapsed into one */
  strict_rejects("{\"a\":{\"dtype\":\"F32\\u0000garbage\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
                 "not valid JSON: \\u0000 (NUL) in a string at header byte 18");
  strict_rejects("{\"__metadata__\":{\"a\\u0000x\":\"1\",\"a\\u0000y\":\"2\"}}", 0,
                 "\\u0000 (NUL) in a string at header byte 19");
  /* a raw newline inside a string; a 0x02 byte between tokens */
  strict_rejects("{\"a\n\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
                 "control character 0x0a in a string at header byte 3");
  strict_rejects("{\"__metadata__\":\x02{}}", 0, "unexpected byte 0x02 where a value should be at header byte 16");
  strict_rejects("{\"__metadata__\":{}\x02}", 0, "unexpected byte 0x02 where ',' or '}' should be at header byte 18");
  /* deep nesting */
  char deep[512] = "{\"__metadata__\":";
  for (int i = 0; i < 100; i++) strcat(deep, "[");
  for (int i = 0; i < 100; i++) strcat(deep, "]");
  strcat(deep, "}");
  strict_rejects(deep, 0, "nesting deeper than 64 levels at header byte 79");
  /* the rest of the grammar */
  strict_rejects("{\"a\":{\"dtype\":\"F32\",\"shape\":[01],\"data_offsets\":[0,4]}}", 4,
                 "leading zero at header byte 29");
  strict_rejects("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,],\"data_offsets\":[0,4]}}", 4,
                 "unexpected character ']' where a value should be at header byte 31");
  strict_rejects("{\"a\":{\"dtype\":\"F32\",\"shape\":[1.],\"data_offsets\":[0,4]}}", 4, "malformed number");
  strict_rejects("{\"a\\x\":{}}", 0, "invalid escape sequence in a string at header byte 3");
  strict_rejects("{\"a\\ud800\":{}}", 0, "unpaired UTF-16 surrogate");
  strict_rejects("{\"a\\u12\":{}}", 0, "invalid \\u escape");
  strict_rejects("{\"__metadata__\":{\"k\":tru}}", 0, "where a value should be at header byte 21");
  strict_rejects("{\"__metadata__\":{'k':\"v\"}}", 0, "where an object key should be at header byte 17");
  strict_rejects("{\"__metadata__\":{\"k\" \"v\"}}", 0, "where ':' should be at header byte 21");
  strict_rejects("{\"__metadata__\":{\"k\":\"v", 0, "unterminated string at header byte 21");
  strict_rejects("{\"__metadata__\":{}\f}", 0, "unexpected byte 0x0c");
  strict_rejects("{}\v", 3, "bytes after its JSON object (header byte 2)");
  /* a valid header with every escape, \u escapes (a surrogate pair too), raw UTF-8 and spaces, tabs, CR, LF */
  const char *ok =
      "{ \"__metadata__\" :\t{\"k\\\"\\\\\\/\\b\\f\\n\\r\\t\":\"caf\\u00e9 \\ud83d\\ude00 \xc3\xa9\"},\r\n"
      "\"a\\u00e9\":{\"dtype\":\"F32\",\"shape\":[1E0],\"data_offsets\":[0,4]}}  ";
  unsigned char buf[512];
  size_t n = craft(buf, ~0ull, ok, 4);
  wk_state_dict *sd = NULL;
  TU_OK(wk_load_safetensors_buffer(buf, n, &sd, NULL));
  ck_assert_str_eq(wk_state_dict_get_meta(sd, "k\"\\/\b\f\n\r\t"), "caf\xc3\xa9 \xf0\x9f\x98\x80 \xc3\xa9");
  ck_assert_ptr_nonnull(wk_state_dict_get(sd, "a\xc3\xa9"));
  wk_state_dict_free(sd);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_io_fuzz_mutations) {
  int64_t live = wk_live_tensors();
  wk_state_dict *sd = wk_state_dict_new();
  wk_scope_begin();
  wk_state_dict_set(sd, "a.weight", tu_rand(WK_SHAPE(3, 4), WK_F32, -1, 1, 1));
  wk_state_dict_set(sd, "a.bias", tu_rand(WK_SHAPE(4), WK_BF16, -1, 1, 2));
  wk_state_dict_set(sd, "idx", tu_rand(WK_SHAPE(2, 2), WK_I64, -9, 9, 3));
  wk_state_dict_set(sd, "mask", tu_rand(WK_SHAPE(3), WK_BOOL, 0, 1, 4));
  wk_state_dict_set(sd, "s", wk_scalar_tensor(2, WK_F64));
  wk_state_dict_set(sd, "e", wk_empty(WK_SHAPE(0, 2), (wk_options){.dtype = WK_I8}));
  wk_scope_end();
  wk_state_dict_set_meta(sd, "k", "v");
  void *orig;
  size_t n;
  TU_OK(wk_save_safetensors_buffer(sd, &orig, &n));
  unsigned char *m = malloc(n + 64);
  uint64_t rs = 12345;
  int ok = 0, failed = 0;
  for (int it = 0; it < 2000; it++) {
    memcpy(m, orig, n);
    size_t len = n;
    int kind = (int)(tu_uniform(&rs) * 6);
    int flips = kind >= 4 ? 1 : 1 + (int)(tu_uniform(&rs) * 4);
    for (int f = 0; f < flips; f++) { /* mostly in the header, where the structure is */
      size_t at = (size_t)(tu_uniform(&rs) * (double)(kind < 4 && n > 300 ? 300 : n));
      unsigned r = (unsigned)(tu_uniform(&rs) * 256);
      if (kind == 0) m[at] ^= (unsigned char)(1u << (r % 8));
      if (kind == 1) m[at] = (unsigned char)r;
      if (kind == 2) m[at] = (unsigned char)"{}[]\",:0123456789-. e\\"[r % 22];
      if (kind == 3) m[r % 8] = (unsigned char)r; /* the header length */
      if (kind == 4) len = at;                    /* truncation */
      for (unsigned k = 0; kind == 5 && k <= r % 64; k++) m[len++] = (unsigned char)(tu_uniform(&rs) * 256);
    }
    wk_state_dict *out = NULL;
    wk_status st = wk_load_safetensors_buffer(m, len, &out, NULL);
    if (st == WK_OK) {
      ck_assert_ptr_nonnull(out);
      for (int i = 0; i < wk_state_dict_size(out); i++) { /* a valid dict: readable values */
        wk_tensor *t = wk_state_dict_value(out, i);
        double *v = malloc(sizeof(double) * (size_t)(wk_tensor_numel(t) + 1));
        TU_OK(wk_tensor_to_f64(t, v, wk_tensor_numel(t)));
        free(v);
      }
      wk_state_dict_free(out);
      ok++;
    } else {
      ck_assert_msg(st == WK_ERR_IO && !out && *wk_last_error_message(), "iteration %d: status %d (%s)", it, st,
                    wk_last_error_message());
      wk_clear_error();
      failed++;
    }
  }
  ck_assert(ok > 0 && failed > 0);
  free(m);
  wk_free(orig);
  wk_state_dict_free(sd);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- atomic writes --------------------------------------------------------------------------------- */
static wk_state_dict *small_dict(double v) {
  wk_state_dict *sd = wk_state_dict_new();
  wk_tensor *t = wk_full(WK_SHAPE(16, 1024), v, (wk_options){0});
  wk_state_dict_set(sd, "w", t);
  wk_release(t);
  return sd;
}

START_TEST(test_io_atomic_device_failure_keeps_old_file) {
  int64_t live = wk_live_tensors();
  const char *p = path_in("model.safetensors");
  wk_state_dict *sd = small_dict(1);
  TU_OK(wk_save_safetensors(sd, p));
  size_t n0, n1;
  unsigned char *before = read_all(p, &n0);
  wk_tensor *bad = wk_empty(WK_SHAPE(4), (wk_options){.device = fake_device(true)});
  wk_state_dict_set(sd, "z.on_failing_device", bad);
  wk_release(bad);
  ck_assert_int_eq(wk_save_safetensors(sd, p), WK_ERR_DEVICE);
  TU_FAILS_WITH(WK_ERR_DEVICE, "tensor 'z.on_failing_device' (on iofail:0) could not be copied to the cpu");
  unsigned char *after = read_all(p, &n1);
  ck_assert(n0 == n1 && memcmp(before, after, n0) == 0);
  ck_assert_int_eq(dir_entries(), 1); /* the temporary file is gone */
  free(before);
  free(after);
  wk_state_dict_free(sd);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_io_atomic_write_failure_keeps_old_file) {
  const char *p = path_in("model.safetensors");
  wk_state_dict *sd = small_dict(1), *big = small_dict(2), *back = NULL;
  TU_OK(wk_save_safetensors(sd, p));
  chmod(p, 0640);
  /* disk full, simulated: a file-size limit below the new file's size */
  signal(SIGXFSZ, SIG_IGN);
  struct rlimit old, lim = {16384, 16384};
  getrlimit(RLIMIT_FSIZE, &old);
  lim.rlim_max = old.rlim_max;
  ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
  ck_assert_int_eq(wk_save_safetensors(big, p), WK_ERR_IO);
  setrlimit(RLIMIT_FSIZE, &old);
  TU_FAILS_WITH(WK_ERR_IO, "File too large");
  ck_assert_int_eq(dir_entries(), 1);
  TU_OK(wk_load_safetensors(p, &back, NULL));
  assert_dicts_equal(sd, back); /* the old contents */
  wk_state_dict_free(back);
  /* a successful replacement keeps the file's permissions */
  TU_OK(wk_save_safetensors(big, p));
  struct stat sb;
  ck_assert_int_eq(stat(p, &sb), 0);
  ck_assert_int_eq(sb.st_mode & 0777, 0640);
  /* a directory in the way, a path naming a directory, a missing directory */
  mkdir(path_in("dir.safetensors"), 0700);
  mkdir(path_in("dir.safetensors/keep"), 0700);
  ck_assert_int_eq(wk_save_safetensors(sd, path_in("dir.safetensors")), WK_ERR_IO);
  TU_FAILS_WITH(WK_ERR_IO, "cannot replace");
  ck_assert_int_eq(wk_save_safetensors(sd, path_in("sub/")), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "names a directory");
  ck_assert_int_eq(wk_save_safetensors(sd, path_in("missing/x.safetensors")), WK_ERR_IO);
  TU_FAILS_WITH(WK_ERR_IO, "cannot create a temporary file");
  ck_assert_int_eq(dir_entries(), 2);
  rmdir(path_in("dir.safetensors/keep"));
  /* a read-only directory (root ignores permissions: checked as a user only) */
  if (geteuid() != 0) {
    chmod(g_dir, 0500);
    ck_assert_int_eq(wk_save_safetensors(sd, p), WK_ERR_IO);
    TU_FAILS_WITH(WK_ERR_IO, "Permission denied");
    chmod(g_dir, 0700);
  }
  TU_OK(wk_load_safetensors(p, &back, NULL));
  assert_dicts_equal(big, back);
  wk_state_dict_free(back);
  wk_state_dict_free(sd);
  wk_state_dict_free(big);
}
END_TEST

/* ---- checkpoints --------------------------------------------------------------------------------- */
typedef struct {
  wk_state_dict *model, *optim, *sched, *meta;
  wk_checkpoint ck;
} trainer;

static void trainer_init(trainer *t) {
  t->model = wk_state_dict_new(), t->optim = wk_state_dict_new(), t->sched = wk_state_dict_new();
  t->meta = wk_state_dict_new();
  wk_scope_begin();
  wk_state_dict_set(t->model, "fc1.weight", tu_rand(WK_SHAPE(4, 3), WK_F32, -1, 1, 7));
  wk_state_dict_set(t->model, "fc1.bias", tu_rand(WK_SHAPE(4), WK_F32, -1, 1, 8));
  wk_state_dict_set(t->model, "bn.num_batches_tracked", wk_scalar_tensor(12, WK_I64));
  wk_state_dict_set(t->optim, "state.0.exp_avg", tu_rand(WK_SHAPE(4, 3), WK_F32, -1, 1, 9));
  wk_state_dict_set(t->optim, "state.0.step", wk_scalar_tensor(100, WK_F32));
  wk_scope_end();
  wk_state_dict_set_meta(t->model, "version", "2");
  wk_state_dict_set_meta(t->optim, "param_groups.0.lr", "0.001");
  wk_state_dict_set_meta(t->sched, "last_epoch", "4");
  wk_state_dict_set_meta(t->meta, "arch", "mlp");
  wk_state_dict_set_meta(t->meta, "torch_compat", "1.13.1");
  t->ck = WK_CHECKPOINT_INIT;
  TU_OK(wk_checkpoint_add(&t->ck, "model", t->model));
  TU_OK(wk_checkpoint_add(&t->ck, "optim", t->optim));
  TU_OK(wk_checkpoint_add(&t->ck, "sched", t->sched));
  t->ck.epoch = 5, t->ck.step = -1234567890123ll, t->ck.meta = t->meta;
}

static void trainer_free(trainer *t) {
  wk_state_dict_free(t->model), wk_state_dict_free(t->optim), wk_state_dict_free(t->sched);
  wk_state_dict_free(t->meta);
}

START_TEST(test_io_checkpoint_roundtrip) {
  int64_t live = wk_live_tensors();
  trainer t;
  trainer_init(&t);
  uint64_t seed, off, s2, o2;
  wk_manual_seed(42);
  TU_OK(wk_rng_reserve(wk_cpu(), 1000, &seed, &off));
  TU_OK(wk_rng_get_state(wk_cpu(), &seed, &off));
  const char *p = path_in("ck.safetensors");
  TU_OK(wk_checkpoint_save(p, &t.ck));
  wk_manual_seed(7);
  wk_checkpoint got = WK_CHECKPOINT_INIT;
  TU_OK(wk_checkpoint_load(p, &got, NULL));
  ck_assert_int_eq(got.nparts, 3);
  ck_assert_str_eq(got.part_names[1], "optim");
  assert_dicts_equal(t.model, wk_checkpoint_part(&got, "model"));
  assert_dicts_equal(t.optim, wk_checkpoint_part(&got, "optim"));
  assert_dicts_equal(t.sched, wk_checkpoint_part(&got, "sched"));
  assert_dicts_equal(t.meta, got.meta);
  ck_assert_int_eq(got.epoch, 5);
  ck_assert_int_eq(got.step, -1234567890123ll);
  ck_assert(got.has_rng && got.rng_seed == 42 && got.rng_offset == 1000);
  TU_OK(wk_rng_get_state(wk_cpu(), &s2, &o2));
  ck_assert(s2 == seed && o2 == off); /* restored */
  ck_assert_int_eq(got.nmissing + got.nunexpected, 0);
  wk_checkpoint_clear(&got);
  ck_assert_int_eq(got.nparts, 0);
  ck_assert_uint_eq(got.struct_size, sizeof(wk_checkpoint));
  /* keep_rng; an explicit state; map_location */
  wk_manual_seed(7);
  t.ck.has_rng = true, t.ck.rng_seed = 99, t.ck.rng_offset = 5;
  wk_device fake = fake_device(false); /* its generator is saved too */
  TU_OK(wk_checkpoint_save(p, &t.ck));
  TU_OK(wk_checkpoint_load(p, &got, WK_IO_LOAD_OPTS(.keep_rng = true, .map_location = fake)));
  ck_assert(got.rng_seed == 99 && got.rng_offset == 5);
  TU_OK(wk_rng_get_state(wk_cpu(), &s2, &o2));
  ck_assert(s2 == 7 && o2 == 0);
  ck_assert(
      wk_device_equal(wk_tensor_device(wk_state_dict_get(wk_checkpoint_part(&got, "model"), "fc1.weight")), fake));
  assert_dicts_equal(t.model, wk_checkpoint_part(&got, "model"));
  wk_checkpoint_clear(&got);
  /* Python sees a plain safetensors file with prefixed keys */
  wk_state_dict *flat = NULL;
  TU_OK(wk_load_safetensors(p, &flat, NULL));
  ck_assert_ptr_nonnull(wk_state_dict_get(flat, "model.fc1.weight"));
  ck_assert_ptr_nonnull(wk_state_dict_get(flat, "optim.state.0.exp_avg"));
  ck_assert_str_eq(wk_state_dict_get_meta(flat, "wick.epoch"), "5");
  ck_assert_str_eq(wk_state_dict_get_meta(flat, "wick.parts"), "model,optim,sched");
  ck_assert_str_eq(wk_state_dict_get_meta(flat, "user.arch"), "mlp");
  ck_assert_str_eq(wk_state_dict_get_meta(flat, "optim.param_groups.0.lr"), "0.001");
  ck_assert_str_eq(wk_state_dict_get_meta(flat, "wick.rng.cpu"), "99,5");
  ck_assert_str_eq(wk_state_dict_get_meta(flat, "wick.rng.iofake:0"), "7,0");
  wk_state_dict_free(flat);
  trainer_free(&t);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_io_checkpoint_strict_and_non_strict) {
  int64_t live = wk_live_tensors();
  trainer t;
  trainer_init(&t);
  const char *p = path_in("ck.safetensors");
  TU_OK(wk_checkpoint_save(p, &t.ck));
  /* the current model: fc1.bias gone, fc2.weight new */
  wk_state_dict *cur = wk_state_dict_new();
  wk_scope_begin();
  wk_state_dict_set(cur, "fc1.weight", wk_zeros(WK_SHAPE(4, 3), (wk_options){0}));
  wk_state_dict_set(cur, "fc2.weight", wk_zeros(WK_SHAPE(2, 4), (wk_options){0}));
  wk_state_dict_set(cur, "bn.num_batches_tracked", wk_scalar_tensor(0, WK_I64));
  wk_scope_end();
  wk_checkpoint want = WK_CHECKPOINT_INIT, got = WK_CHECKPOINT_INIT;
  wk_checkpoint_add(&want, "model", cur);
  wk_checkpoint_add(&want, "optim", t.optim); /* identical */
  ck_assert_int_eq(wk_checkpoint_load(p, &got, WK_IO_LOAD_OPTS(.expected = &want)), WK_ERR_NOT_FOUND);
  ck_assert_int_eq(got.nparts, 0);
  ck_assert_ptr_nonnull(strstr(wk_last_error_message(), "Unexpected key(s): \"model.fc1.bias\""));
  TU_FAILS_WITH(WK_ERR_NOT_FOUND, "Missing key(s): \"model.fc2.weight\"");
  TU_OK(wk_checkpoint_load(p, &got, WK_IO_LOAD_OPTS(.expected = &want, .non_strict = true)));
  ck_assert_int_eq(got.nmissing, 1);
  ck_assert_str_eq(got.missing[0], "model.fc2.weight");
  ck_assert_int_eq(got.nunexpected, 1);
  ck_assert_str_eq(got.unexpected[0], "model.fc1.bias");
  ck_assert_ptr_nonnull(wk_state_dict_get(wk_checkpoint_part(&got, "model"), "fc1.bias")); /* still loaded */
  wk_checkpoint_clear(&got);
  /* a part absent from the file: all its keys are missing */
  wk_checkpoint_add(&want, "ema", t.model);
  TU_OK(wk_checkpoint_load(p, &got, WK_IO_LOAD_OPTS(.expected = &want, .non_strict = true)));
  ck_assert_int_eq(got.nmissing, 4);
  ck_assert_str_eq(got.missing[3], "ema.bn.num_batches_tracked");
  wk_checkpoint_clear(&got);
  /* shape and dtype mismatches are errors even when not strict */
  wk_scope_begin();
  wk_state_dict_set(cur, "fc1.weight", wk_zeros(WK_SHAPE(4, 2), (wk_options){0}));
  wk_scope_end();
  ck_assert_int_eq(wk_checkpoint_load(p, &got, WK_IO_LOAD_OPTS(.expected = &want, .non_strict = true)), WK_ERR_SHAPE);
  TU_FAILS_WITH(WK_ERR_SHAPE,
                "size mismatch for model.fc1.weight: copying a param with shape [4, 3] from checkpoint, "
                "the shape in current model is [4, 2]");
  wk_scope_begin();
  wk_state_dict_set(cur, "fc1.weight", wk_zeros(WK_SHAPE(4, 3), (wk_options){.dtype = WK_F64}));
  wk_scope_end();
  ck_assert_int_eq(wk_checkpoint_load(p, &got, WK_IO_LOAD_OPTS(.expected = &want, .non_strict = true)), WK_ERR_DTYPE);
  TU_FAILS_WITH(WK_ERR_DTYPE, "dtype mismatch for model.fc1.weight: the checkpoint holds f32, the current model f64");
  ck_assert_int_eq(got.nparts + got.nmissing, 0);
  wk_state_dict_free(cur);
  trainer_free(&t);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_io_checkpoint_bad_input) {
  int64_t live = wk_live_tensors();
  trainer t;
  trainer_init(&t);
  const char *p = path_in("ck.safetensors");
  const char *bad_names[] = {"wick", "user", "a.b", "", "sp ace"};
  for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
    t.ck.part_names[2] = bad_names[i];
    ck_assert_int_eq(wk_checkpoint_save(p, &t.ck), WK_ERR_INVALID_ARG);
    TU_FAILS_WITH(WK_ERR_INVALID_ARG, "is invalid");
  }
  t.ck.part_names[2] = "model";
  ck_assert_int_eq(wk_checkpoint_save(p, &t.ck), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "part 'model' appears twice");
  t.ck.part_names[2] = "sched";
  t.ck.parts[2] = NULL;
  ck_assert_int_eq(wk_checkpoint_save(p, &t.ck), WK_ERR_NULL);
  TU_FAILS_WITH(WK_ERR_NULL, "part 2 has a NULL state dict");
  t.ck.parts[2] = t.sched;
  t.ck.meta = t.model;
  ck_assert_int_eq(wk_checkpoint_save(p, &t.ck), WK_ERR_INVALID_ARG);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "user metadata holds tensors");
  t.ck.meta = t.meta;
  ck_assert_int_eq(dir_entries(), 0);
  /* files that are not (valid) checkpoints */
  wk_checkpoint got = WK_CHECKPOINT_INIT;
  static const struct {
    const char *k, *v, *needle;
    wk_status code;
  } cases[] = {
      {"x", "y", "not a Wick checkpoint (no \"wick.checkpoint\" metadata)", WK_ERR_IO},
      {"wick.checkpoint", "2", "checkpoint format '2' is not supported", WK_ERR_UNSUPPORTED},
      {"wick.parts", "model,,optim", "invalid or repeated part name", WK_ERR_IO},
      {"wick.parts", "model,model", "invalid or repeated part name", WK_ERR_IO},
      {"wick.parts", "model,", "ends with a comma", WK_ERR_IO},
      {"wick.parts", "model", "tensor 'optim.state.0.exp_avg' belongs to no part", WK_ERR_IO},
      {"wick.epoch", "5x", "\"wick.epoch\" is '5x', not an integer", WK_ERR_IO},
      {"wick.step", "99999999999999999999", "not an integer", WK_ERR_IO},
      {"wick.rng.cpu", "1;2", "not 'seed,offset'", WK_ERR_IO},
      {"stray.key", "1", "metadata key 'stray.key' belongs to no part", WK_ERR_IO},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    wk_state_dict *flat = NULL;
    TU_OK(wk_checkpoint_save(p, &t.ck));
    TU_OK(wk_load_safetensors(p, &flat, NULL));
    if (i == 0) wk_state_dict_free(flat), flat = t.model;
    TU_OK(wk_state_dict_set_meta(flat, cases[i].k, cases[i].v));
    TU_OK(wk_save_safetensors(flat, p));
    if (flat != t.model) wk_state_dict_free(flat);
    wk_manual_seed(3);
    ck_assert_int_eq(wk_checkpoint_load(p, &got, NULL), cases[i].code);
    ck_assert_ptr_nonnull(strstr(wk_last_error_message(), p));
    TU_FAILS_WITH(cases[i].code, cases[i].needle);
    ck_assert_int_eq(got.nparts, 0);
    uint64_t s, o;
    wk_rng_get_state(wk_cpu(), &s, &o);
    ck_assert(s == 3 && o == 0); /* a failed load changes nothing */
  }
  trainer_free(&t);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_io_checkpoint_written_by_torch) {
  int64_t live = wk_live_tensors();
  char p[1100];
  snprintf(p, sizeof p, "%s/torch_checkpoint.safetensors", data_dir());
  wk_checkpoint got = WK_CHECKPOINT_INIT;
  TU_OK(wk_checkpoint_load(p, &got, NULL));
  ck_assert_int_eq(got.epoch, 7);
  ck_assert_int_eq(got.step, 700);
  uint64_t s, o;
  wk_rng_get_state(wk_cpu(), &s, &o);
  ck_assert(s == 1234 && o == 5678);
  wk_state_dict *model = wk_checkpoint_part(&got, "model"), *optim = wk_checkpoint_part(&got, "optim");
  TU_EQ_VALS(wk_state_dict_get(model, "fc.weight"), -2.5, -1.5, -0.5, 0.5, 1.5, 2.5);
  TU_EQ_VALS(wk_state_dict_get(model, "fc.bias"), 0.5, -0.5);
  TU_EQ_VALS(wk_state_dict_get(optim, "state.0.momentum_buffer"), 0.125, 0.125, 0.125, 0.125, 0.125, 0.125);
  int64_t step;
  TU_OK(wk_item_i64(wk_state_dict_get(optim, "step"), &step));
  ck_assert_int_eq(step, 700);
  ck_assert_str_eq(wk_state_dict_get_meta(optim, "lr"), "0.1");
  ck_assert_str_eq(wk_state_dict_get_meta(got.meta, "arch"), "tiny");
  wk_checkpoint_clear(&got);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* Temporary files a writer killed with kill -9 left (".NAME.tmp-PID-N", PID gone) are removed at the next
 * save into the directory; a live writer's file and other names stay. */
START_TEST(test_io_save_removes_stale_temp_files) {
  pid_t dead = fork();
  ck_assert_int_ge(dead, 0);
  if (dead == 0) _exit(0);
  ck_assert_int_eq(waitpid(dead, NULL, 0), dead);
  if (kill(dead, 0) == 0) return; /* reused already: nothing to test */
  char stale1[64], stale2[64], mine[64], nodot[64], suffix[64];
  snprintf(stale1, sizeof stale1, ".model.safetensors.tmp-%ld-0", (long)dead);
  snprintf(stale2, sizeof stale2, ".other.safetensors.tmp-%ld-7", (long)dead);
  snprintf(mine, sizeof mine, ".model.safetensors.tmp-%ld-999", (long)getpid());
  snprintf(nodot, sizeof nodot, "model.safetensors.tmp-%ld-0", (long)dead);
  snprintf(suffix, sizeof suffix, ".model.safetensors.tmp-%ld-0.bak", (long)dead);
  const char *names[] = {stale1, stale2, mine, nodot, suffix};
  for (int i = 0; i < 5; i++) write_all(path_in(names[i]), "x", 1);
  wk_state_dict *sd = small_dict(1);
  TU_OK(wk_save_safetensors(sd, path_in("model.safetensors")));
  struct stat sb;
  ck_assert_int_ne(stat(path_in(stale1), &sb), 0);
  ck_assert_int_ne(stat(path_in(stale2), &sb), 0);
  for (int i = 2; i < 5; i++) ck_assert_msg(stat(path_in(names[i]), &sb) == 0, "%s was removed", names[i]);
  ck_assert_int_eq(dir_entries(), 4);
  wk_state_dict_free(sd);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("check_io");
  struct {
    const char *name;
    const TTest *tests[8];
  } groups[] = {
      {"service", {test_io_service_registered, test_io_null_arguments}},
      {"roundtrip", {test_io_roundtrip_all_dtypes, test_io_map_location_and_devices, test_io_spec_bytes}},
      {"interop", {test_io_interop_loads_torch_file, test_io_interop_torch_reads_ours}},
      {"corrupt", {test_io_rejects_corrupt_files, test_io_fuzz_mutations, test_io_strict_json}},
      {"atomic",
       {test_io_atomic_device_failure_keeps_old_file, test_io_atomic_write_failure_keeps_old_file,
        test_io_save_removes_stale_temp_files}},
      {"checkpoint",
       {test_io_checkpoint_roundtrip, test_io_checkpoint_strict_and_non_strict, test_io_checkpoint_bad_input,
        test_io_checkpoint_written_by_torch}},
  };
  for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
    TCase *tc = tcase_create(groups[g].name);
    tcase_add_checked_fixture(tc, dir_setup, dir_teardown);
    tcase_set_timeout(tc, 60);
    for (int i = 0; i < 8 && groups[g].tests[i]; i++) tcase_add_test(tc, groups[g].tests[i]);
    suite_add_tcase(s, tc);
  }
  /* without the fixture's wk_init: the plugin is disabled first */
  TCase *tc = tcase_create("missing");
  tcase_add_checked_fixture(tc, NULL, NULL);
  tcase_add_test(tc, test_io_missing_plugin);
  suite_add_tcase(s, tc);
  return s;
}
TU_MAIN(make_suite)
