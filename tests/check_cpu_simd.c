/* check_cpu_simd: the cpu plugin's per-ISA f32 loops (plugins/cpu/simd.h):
 * add / mul (alpha, a broadcast scalar, in place, the output aliasing an
 * input), relu and relu_, threshold_backward, batch_norm (training and
 * evaluation, with and without affine parameters) and batch_norm_backward,
 * adaptive_avg_pool2d to 1x1 and its backward, and max_pool2d's backward
 * (an index outside its plane included), each against the same call in
 * float64 (the plugin's f64 loops, which the table does not touch), at sizes
 * around the 16-lane block (1, 7, 16, 17, 33) and past the parallel grain;
 * batch_norm also with fewer than 16 elements per channel plane (its
 * row-wise path); and the f32 <-> bf16 casts (copy_), bit for bit against
 * the rounding rule.
 *
 * The battery runs once per instruction set, each in a fresh process (Check
 * forks every test; WICK_CPU_ISA is set before wk_init): the baseline (sse2),
 * avx2 and avx512 where the CPU runs them, and the plugin's own choice. Each
 * run hashes the bits of every f32 result; the last test checks the hashes
 * are equal (the variants add in the same order and contract no FMA). An
 * ISA the CPU lacks must fail the cpu plugin's init with a message, as an
 * unknown name does. onednn is disabled so the cpu kernels take the calls. */
#include <stdint.h>
#include <unistd.h>

#include "testutil.h"

/* Releases n tensors (NULL entries skipped). */
static void release_n(wk_tensor **t, int n) {
  for (int i = 0; i < n; i++) wk_release(t[i]);
}

static uint64_t g_hash;  /* FNV-1a of the f32 results' bits, this process */
static int64_t g_hashed; /* elements hashed */

static void hash_t(wk_tensor *t) {
  wk_tensor *c = wk_contiguous(t);
  TU_NOTNULL(c);
  int64_t n = wk_tensor_numel(c);
  const unsigned char *p = wk_tensor_data(c);
  for (int64_t i = 0; i < n * (int64_t)sizeof(float); i++) {
    g_hash ^= p[i];
    g_hash *= 1099511628211ull;
  }
  g_hashed += n;
  wk_release(c);
}

/* The f32 result t against the f64 reference r: |t - r| <= atol + rtol*|r|
 * (NaN matches NaN); t goes into the hash. */
static void close_to(wk_tensor *t, wk_tensor *r, double rtol, double atol, const char *what, int64_t n) {
  TU_NOTNULL(t);
  TU_NOTNULL(r);
  ck_assert_msg(wk_tensor_dtype(t) == WK_F32, "%s (n=%lld): result dtype %d, not f32", what, (long long)n,
                (int)wk_tensor_dtype(t));
  ck_assert_int_eq(wk_tensor_numel(t), wk_tensor_numel(r));
  double *v = tu_values(t), *w = tu_values(r);
  for (int64_t i = 0; i < wk_tensor_numel(t); i++) {
    bool ok = (isnan(v[i]) && isnan(w[i])) || v[i] == w[i] || fabs(v[i] - w[i]) <= atol + rtol * fabs(w[i]);
    if (!ok) {
      double a = v[i], b = w[i];
      free(v);
      free(w);
      ck_abort_msg("%s (size %lld): [%lld] = %.9g, float64 gives %.9g", what, (long long)n, (long long)i, a, b);
    }
  }
  free(v);
  free(w);
  hash_t(t);
}

/* op(args) through the dispatcher; nout results into o (new references). */
static void call(const char *op, wk_value *a, int na, wk_value *o) {
  wk_status s = wk_call(op, a, na, o);
  ck_assert_msg(s == WK_OK, "%s failed: %s", op, wk_last_error_message());
}
static wk_tensor *call1(const char *op, wk_value *a, int na) {
  wk_value o[4];
  call(op, a, na, o);
  return o[0].u.t;
}

static wk_tensor *f64(wk_tensor *t) {
  wk_tensor *r = wk_to_dtype(t, WK_F64);
  TU_NOTNULL(r);
  return r;
}

static void check_pointwise(int64_t n, uint64_t seed) {
  int64_t sz[1] = {n};
  wk_tensor *a = tu_rand(sz, 1, WK_F32, -2, 2, seed), *b = tu_rand(sz, 1, WK_F32, -2, 2, seed + 1);
  float *av = wk_tensor_data(a);
  for (int64_t i = 0; i < n; i += 5) av[i] = 0; /* relu and threshold_backward at their threshold */
  if (n > 3) av[3] = NAN;
  wk_tensor *a64 = f64(a), *b64 = f64(b);
  wk_tensor *s0 = TU_T(WK_F32, (), 0.375), *s064 = f64(s0);
  struct {
    const char *op;
    double alpha;
    bool scalar;
  } bins[] = {{"add", 1, false}, {"add", -0.75, false}, {"mul", 0, false}, {"add", 2.5, true}, {"mul", 0, true}};
  for (size_t k = 0; k < sizeof bins / sizeof bins[0]; k++) {
    bool add = bins[k].op[0] == 'a';
    wk_value x[3] = {WK_VT(a), WK_VT(bins[k].scalar ? s0 : b), WK_VF(bins[k].alpha)};
    wk_value y[3] = {WK_VT(a64), WK_VT(bins[k].scalar ? s064 : b64), WK_VF(bins[k].alpha)};
    wk_tensor *r = call1(bins[k].op, x, add ? 3 : 2), *r64 = call1(bins[k].op, y, add ? 3 : 2);
    close_to(r, r64, 1e-6, 1e-6, bins[k].op, n);
    wk_release(r);
    wk_release(r64);
  }
  /* in place: c += -1.5 * b; then c += c (every input is the output) */
  wk_tensor *c = wk_clone(a), *c64 = wk_clone(a64);
  wk_value ip[3] = {WK_VT(c), WK_VT(b), WK_VF(-1.5)}, ip64[3] = {WK_VT(c64), WK_VT(b64), WK_VF(-1.5)}, o[2];
  call("add_", ip, 3, o);
  call("add_", ip64, 3, o);
  close_to(c, c64, 1e-6, 1e-6, "add_ alpha", n);
  wk_value self[3] = {WK_VT(c), WK_VT(c), WK_VF(1)}, self64[3] = {WK_VT(c64), WK_VT(c64), WK_VF(1)};
  call("add_", self, 3, o);
  call("add_", self64, 3, o);
  close_to(c, c64, 1e-6, 1e-6, "add_ of itself", n);
  wk_value mi[2] = {WK_VT(c), WK_VT(a)}, mi64[2] = {WK_VT(c64), WK_VT(a64)};
  call("mul_", mi, 2, o);
  call("mul_", mi64, 2, o);
  close_to(c, c64, 1e-6, 1e-6, "mul_", n);
  /* relu, relu_ */
  wk_value ra[1] = {WK_VT(a)}, ra64[1] = {WK_VT(a64)};
  wk_tensor *r = call1("relu", ra, 1), *r64 = call1("relu", ra64, 1);
  close_to(r, r64, 0, 0, "relu", n);
  wk_value rc[1] = {WK_VT(c)}, rc64[1] = {WK_VT(c64)};
  call("relu_", rc, 1, o);
  call("relu_", rc64, 1, o);
  close_to(c, c64, 1e-6, 1e-6, "relu_", n); /* c went through f32 and f64 arithmetic */
  /* threshold_backward(g = b, x = a) at 0 and 0.5 */
  for (int k = 0; k < 2; k++) {
    wk_value t[3] = {WK_VT(b), WK_VT(a), WK_VF(k * 0.5)}, t64[3] = {WK_VT(b64), WK_VT(a64), WK_VF(k * 0.5)};
    wk_tensor *g = call1("threshold_backward", t, 3), *g64 = call1("threshold_backward", t64, 3);
    close_to(g, g64, 0, 0, "threshold_backward", n);
    wk_release(g);
    wk_release(g64);
  }
  release_n((wk_tensor *[]){a, b, a64, b64, s0, s064, c, c64, r, r64}, 10);
}

static void check_batch_norm(const int64_t *sz, bool affine, bool train, uint64_t seed) {
  int64_t C = sz[1], csz[1] = {C}, n = sz[0] * sz[1] * sz[2] * sz[3];
  wk_tensor *x = tu_rand(sz, 4, WK_F32, -3, 5, seed), *x64 = f64(x);
  wk_tensor *w = affine ? tu_rand(csz, 1, WK_F32, 0.5, 1.5, seed + 1) : NULL, *w64 = w ? f64(w) : NULL;
  wk_tensor *bb = affine ? tu_rand(csz, 1, WK_F32, -1, 1, seed + 2) : NULL, *bb64 = bb ? f64(bb) : NULL;
  wk_tensor *rm = tu_rand(csz, 1, WK_F32, -0.5, 0.5, seed + 3), *rv = tu_rand(csz, 1, WK_F32, 0.5, 2, seed + 4);
  wk_tensor *rm64 = f64(rm), *rv64 = f64(rv);
  wk_value a[8] = {WK_VT(x), WK_VT(w), WK_VT(bb), WK_VT(rm), WK_VT(rv), WK_VB(train), WK_VF(0.1), WK_VF(1e-5)};
  wk_value a64[8] = {WK_VT(x64),  WK_VT(w64),   WK_VT(bb64), WK_VT(rm64),
                     WK_VT(rv64), WK_VB(train), WK_VF(0.1),  WK_VF(1e-5)};
  wk_value o[3], o64[3];
  call("batch_norm", a, 8, o);
  call("batch_norm", a64, 8, o64);
  const char *what = train ? "batch_norm (training)" : "batch_norm (evaluation)";
  close_to(o[0].u.t, o64[0].u.t, 1e-5, 1e-5, what, n);
  if (train) {
    close_to(o[1].u.t, o64[1].u.t, 1e-6, 1e-6, "batch_norm save_mean", n);
    close_to(o[2].u.t, o64[2].u.t, 1e-5, 1e-6, "batch_norm save_invstd", n);
    close_to(rm, rm64, 1e-6, 1e-6, "batch_norm running_mean", n);
    close_to(rv, rv64, 1e-5, 1e-6, "batch_norm running_var", n);
  }
  /* backward from those statistics */
  wk_tensor *go = tu_rand(sz, 4, WK_F32, -1, 1, seed + 5), *go64 = f64(go);
  int64_t mask[3] = {1, affine, affine};
  wk_value b[10] = {WK_VT(go),       WK_VT(x),        WK_VT(w),     WK_VT(rm),   WK_VT(rv),
                    WK_VT(o[1].u.t), WK_VT(o[2].u.t), WK_VB(train), WK_VF(1e-5), WK_VINTS(mask, 3)};
  wk_value b64[10] = {WK_VT(go64),       WK_VT(x64),        WK_VT(w64),   WK_VT(rm64), WK_VT(rv64),
                      WK_VT(o64[1].u.t), WK_VT(o64[2].u.t), WK_VB(train), WK_VF(1e-5), WK_VINTS(mask, 3)};
  wk_value g[3] = {WK_VNONE, WK_VNONE, WK_VNONE}, g64[3] = {WK_VNONE, WK_VNONE, WK_VNONE};
  call("batch_norm_backward", b, 10, g);
  call("batch_norm_backward", b64, 10, g64);
  close_to(g[0].u.t, g64[0].u.t, 1e-4, 1e-5,
           train ? "batch_norm_backward input (training)" : "batch_norm_backward input (evaluation)", n);
  if (affine) {
    close_to(g[1].u.t, g64[1].u.t, 1e-4, 1e-4, "batch_norm_backward weight", n);
    close_to(g[2].u.t, g64[2].u.t, 1e-5, 1e-5, "batch_norm_backward bias", n);
  }
  for (int i = 0; i < 3; i++) {
    wk_release(o[i].u.t);
    wk_release(o64[i].u.t);
    if (g[i].tag == WK_V_TENSOR) wk_release(g[i].u.t);
    if (g64[i].tag == WK_V_TENSOR) wk_release(g64[i].u.t);
  }
  release_n((wk_tensor *[]){x, x64, w, w64, bb, bb64, rm, rv, rm64, rv64, go, go64}, 12);
}

static void check_pools(const int64_t *sz, bool noncontig, uint64_t seed) {
  int64_t n = sz[0] * sz[1] * sz[2] * sz[3], one[2] = {1, 1};
  wk_tensor *x0 = tu_rand(sz, 4, WK_F32, -2, 2, seed), *x = noncontig ? tu_noncontig(x0) : wk_retain(x0);
  wk_tensor *x64 = f64(x);
  wk_value a[2] = {WK_VT(x), WK_VINTS(one, 2)}, a64[2] = {WK_VT(x64), WK_VINTS(one, 2)};
  wk_tensor *m = call1("adaptive_avg_pool2d", a, 2), *m64 = call1("adaptive_avg_pool2d", a64, 2);
  close_to(m, m64, 1e-6, 1e-6, "adaptive_avg_pool2d to 1x1", n);
  wk_tensor *go = tu_rand(wk_tensor_sizes(m), 4, WK_F32, -1, 1, seed + 1), *go64 = f64(go);
  wk_value b[2] = {WK_VT(go), WK_VT(x)}, b64[2] = {WK_VT(go64), WK_VT(x64)};
  wk_tensor *gi = call1("adaptive_avg_pool2d_backward", b, 2), *gi64 = call1("adaptive_avg_pool2d_backward", b64, 2);
  close_to(gi, gi64, 1e-6, 1e-7, "adaptive_avg_pool2d_backward from 1x1", n);
  release_n((wk_tensor *[]){m, m64, go, go64, gi, gi64}, 6);
  /* max_pool2d 3x3 stride 2 padding 1 (ResNet's stem) and its backward */
  int64_t k[2] = {3, 3}, st[2] = {2, 2}, pd[2] = {1, 1}, dl[2] = {1, 1};
  if (sz[2] >= 2 && sz[3] >= 2) {
    wk_value p[6] = {WK_VT(x), WK_VINTS(k, 2), WK_VINTS(st, 2), WK_VINTS(pd, 2), WK_VINTS(dl, 2), WK_VB(false)};
    wk_value o[2];
    call("max_pool2d_with_indices", p, 6, o);
    wk_tensor *gy = tu_rand(wk_tensor_sizes(o[0].u.t), 4, WK_F32, -1, 1, seed + 2), *gy64 = f64(gy);
    wk_value q[8] = {WK_VT(gy),       WK_VT(x),        WK_VINTS(k, 2), WK_VINTS(st, 2),
                     WK_VINTS(pd, 2), WK_VINTS(dl, 2), WK_VB(false),   WK_VT(o[1].u.t)};
    wk_value q64[8] = {WK_VT(gy64),     WK_VT(x64),      WK_VINTS(k, 2), WK_VINTS(st, 2),
                       WK_VINTS(pd, 2), WK_VINTS(dl, 2), WK_VB(false),   WK_VT(o[1].u.t)};
    wk_tensor *mg = call1("max_pool2d_with_indices_backward", q, 8);
    wk_tensor *mg64 = call1("max_pool2d_with_indices_backward", q64, 8);
    close_to(mg, mg64, 1e-6, 1e-7, "max_pool2d_with_indices_backward", n);
    /* an index outside its plane, in the last plane: the call fails naming it */
    wk_tensor *bad = wk_clone(o[1].u.t);
    int64_t *bv = wk_tensor_data(bad);
    bv[wk_tensor_numel(bad) - 1] = sz[2] * sz[3] + 7;
    q[7] = WK_VT(bad);
    wk_value r[1];
    ck_assert_int_eq(wk_call("max_pool2d_with_indices_backward", q, 8, r), WK_ERR_INDEX);
    char want[96];
    snprintf(want, sizeof want, "Found an invalid max index: %lld", (long long)(sz[2] * sz[3] + 7));
    TU_FAILS_WITH(WK_ERR_INDEX, want);
    release_n((wk_tensor *[]){o[0].u.t, o[1].u.t, gy, gy64, mg, mg64, bad}, 7);
  }
  release_n((wk_tensor *[]){x0, x, x64}, 3);
}

/* float32 -> bfloat16 by the definition (round to nearest even; a NaN keeps
 * its sign and top payload bits, quieted; subnormals rounded like any value),
 * written independently of the SDK's helper the kernels use. */
static uint16_t ref_bf16(uint32_t u) {
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  uint32_t hi = u >> 16, lo = u & 0xffffu;
  if (lo > 0x8000u || (lo == 0x8000u && (hi & 1u))) hi++;
  return (uint16_t)hi;
}

/* wk_to_dtype between f32 and bf16 (the cpu copy kernel's simd entries
 * f32_to_bf16 / bf16_to_f32) on n elements: random normals, and for n >= 16
 * the edge values (ties to even both ways, subnormals, the largest finite
 * value rounding to inf, infinities, NaNs, -0), each elsewhere in a 16-lane
 * block, against the definition bit for bit; the round trip goes into the
 * hash. */
static void check_bf16_casts(int64_t n, uint64_t seed) {
  static const uint32_t edge[] = {0x3f808000u, 0x3f818000u, 0x3f807fffu, 0x3f808001u, 0x00000001u, 0x80008000u,
                                  0x00018000u, 0x007fffffu, 0x7f7fffffu, 0xff7fffffu, 0x7f800000u, 0xff800000u,
                                  0x7fc00001u, 0xff812345u, 0x80000000u, 0x00000000u, 0x7f7f8000u};
  wk_tensor *x = tu_rand(WK_SHAPE(n), WK_F32, -3, 3, seed);
  TU_NOTNULL(x);
  uint32_t *xb = wk_tensor_data(x);
  int64_t ne = (int64_t)(sizeof edge / sizeof edge[0]);
  for (int64_t i = 0; n >= 16 && i < ne; i++) xb[(i * 7 + (int64_t)seed) % n] = edge[i];
  wk_tensor_bump_version(x);
  wk_tensor *b = wk_to_dtype(x, WK_BF16);
  TU_NOTNULL(b);
  const uint16_t *bb = wk_tensor_data(b);
  for (int64_t i = 0; i < n; i++)
    ck_assert_msg(bb[i] == ref_bf16(xb[i]), "f32 -> bf16 (n=%lld): [%lld] 0x%08x gave 0x%04x, not 0x%04x",
                  (long long)n, (long long)i, xb[i], bb[i], ref_bf16(xb[i]));
  wk_tensor *r = wk_to_dtype(b, WK_F32);
  TU_NOTNULL(r);
  const uint32_t *rb = wk_tensor_data(r);
  for (int64_t i = 0; i < n; i++)
    ck_assert_msg(rb[i] == (uint32_t)bb[i] << 16, "bf16 -> f32 (n=%lld): [%lld] 0x%04x gave 0x%08x", (long long)n,
                  (long long)i, bb[i], rb[i]);
  hash_t(r);
  release_n((wk_tensor *[]){x, b, r}, 3);
}

/* The whole battery; returns its hash. */
static uint64_t battery(void) {
  g_hash = 14695981039346656037ull;
  g_hashed = 0;
  int64_t live0 = wk_live_tensors();
  const int64_t ns[] = {1, 7, 16, 17, 33, 100003};
  for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) check_pointwise(ns[i], 11 + i);
  for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) check_bf16_casts(ns[i], 21 + i);
  /* per-channel planes of 63, 16, 17, 196 and 1155 elements; and under 16 (the row-wise path), with column
   * blocks that end inside the row: S = 1 (K = 520), 4 (K = 1200), 15 */
  const int64_t shapes[][4] = {{3, 5, 7, 9}, {2, 3, 4, 4},    {1, 1, 1, 17},  {8, 16, 14, 14}, {2, 64, 33, 35},
                               {4, 2, 1, 1}, {16, 520, 1, 1}, {5, 300, 2, 2}, {3, 7, 3, 5}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    for (int m = 0; m < 4; m++) check_batch_norm(shapes[i], m & 1, m & 2, 100 + 10 * i + m);
  const int64_t pools[][4] = {{4, 6, 7, 7}, {2, 3, 1, 1}, {1, 2, 5, 3}, {16, 64, 9, 9}};
  for (size_t i = 0; i < sizeof pools / sizeof pools[0]; i++)
    for (int nc = 0; nc < 2; nc++) check_pools(pools[i], nc, 300 + 10 * i + nc);
  ck_assert_int_eq(wk_live_tensors(), live0);
  return g_hash;
}

/* Where run `isa` leaves its hash: next to the other runs of this runner
 * (Check's forked tests share their parent). */
static void hash_path(char *buf, size_t n, const char *isa) {
  const char *dir = getenv("TMPDIR");
  snprintf(buf, n, "%s/check_cpu_simd.%ld.%s", dir && *dir ? dir : "/tmp", (long)getppid(), isa);
}

static bool cpu_runs(const char *isa) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (!strcmp(isa, "avx2")) return __builtin_cpu_supports("avx2");
  if (!strcmp(isa, "avx512"))
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
  return true;
#else
  return !strcmp(isa, "sse2");
#endif
}

/* The cpu plugin's record, loaded or not (wk_plugin_find finds loaded ones). */
static wk_plugin *cpu_plugin(void) {
  for (int i = 0; i < wk_plugin_count(); i++)
    if (!strcmp(wk_plugin_name(wk_plugin_at(i)), "cpu")) return wk_plugin_at(i);
  return NULL;
}

static bool forked(void) {
  const char *f = getenv("CK_FORK");
  return !(f && !strcmp(f, "no"));
}

/* One run of the battery under WICK_CPU_ISA=isa ("" for the plugin's choice). */
static void run_isa(const char *isa) {
  if (!forked()) { /* one process for every test: the ISA is fixed by the first wk_init */
    if (*isa) return;
    tu_setup();
    battery();
    return;
  }
  if (*isa)
    setenv("WICK_CPU_ISA", isa, 1);
  else
    unsetenv("WICK_CPU_ISA");
  wk_status s = wk_init();
  wk_plugin *cpu = cpu_plugin();
  if (*isa && !cpu_runs(isa)) { /* refused, with the reason */
    TU_NOTNULL(cpu);
    ck_assert_int_eq(wk_plugin_get_status(cpu), WK_PLUGIN_FAILED);
    ck_assert_msg(strstr(wk_plugin_reason(cpu), "does not run it") != NULL, "reason: %s", wk_plugin_reason(cpu));
    return;
  }
  ck_assert_msg(s == WK_OK, "wk_init: %s", wk_last_error_message());
  ck_assert_msg(cpu && wk_plugin_get_status(cpu) == WK_PLUGIN_LOADED, "cpu plugin: %s",
                cpu ? wk_plugin_reason(cpu) : "missing");
  wk_clear_error();
  uint64_t h = battery();
  ck_assert_int_gt(g_hashed, 1000000);
  char path[512];
  hash_path(path, sizeof path, *isa ? isa : "default");
  FILE *f = fopen(path, "w");
  ck_assert_msg(f != NULL, "cannot write %s", path);
  fprintf(f, "%016llx %lld\n", (unsigned long long)h, (long long)g_hashed);
  fclose(f);
}

START_TEST(test_isa_default) {
  run_isa("");
}
END_TEST
START_TEST(test_isa_sse2) {
  run_isa("sse2");
}
END_TEST
START_TEST(test_isa_avx2) {
  run_isa("avx2");
}
END_TEST
START_TEST(test_isa_avx512) {
  run_isa("avx512");
}
END_TEST

/* The runs above agree bit for bit (each that ran left its hash). */
START_TEST(test_same_bits) {
  if (!forked()) return;
  const char *isas[] = {"default", "sse2", "avx2", "avx512"};
  char line[4][64] = {"", "", "", ""}, path[512];
  bool have[4] = {false, false, false, false};
  for (int i = 0; i < 4; i++) { /* read and remove every file before judging */
    hash_path(path, sizeof path, isas[i]);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    have[i] = fgets(line[i], sizeof line[i], f) != NULL;
    fclose(f);
    unlink(path);
  }
  for (int i = 0; i < 4; i++) {
    ck_assert_msg(have[i] || (i >= 2 && !cpu_runs(isas[i])), "no hash from the %s run", isas[i]);
    if (have[i])
      ck_assert_msg(!strcmp(line[0], line[i]), "the %s run's f32 results differ from the default's: %s vs %s", isas[i],
                    line[i], line[0]);
  }
}
END_TEST

START_TEST(test_bad_isa) {
  if (!forked()) return;
  setenv("WICK_CPU_ISA", "avx9", 1);
  (void)wk_init();
  wk_plugin *cpu = cpu_plugin();
  TU_NOTNULL(cpu);
  ck_assert_int_eq(wk_plugin_get_status(cpu), WK_PLUGIN_FAILED);
  ck_assert_msg(strstr(wk_plugin_reason(cpu), "WICK_CPU_ISA='avx9' is not one of sse2, avx2, avx512") != NULL,
                "reason: %s", wk_plugin_reason(cpu));
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("cpu_simd");
  TCase *tc = tcase_create("isa");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_isa_default);
  tcase_add_test(tc, test_isa_sse2);
  tcase_add_test(tc, test_isa_avx2);
  tcase_add_test(tc, test_isa_avx512);
  tcase_add_test(tc, test_same_bits);
  tcase_add_test(tc, test_bad_isa);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  /* the cpu kernels, not onednn's, take the calls */
  const char *d = getenv("WICK_DISABLE_PLUGINS");
  char buf[256];
  snprintf(buf, sizeof buf, "onednn%s%s", d && *d ? "," : "", d && *d ? d : "");
  setenv("WICK_DISABLE_PLUGINS", buf, 1);
  SRunner *sr = srunner_create(make_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
