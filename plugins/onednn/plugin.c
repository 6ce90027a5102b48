/* onednn plugin entry: loads libdnnl at run time, owns the engine and the
 * per-thread streams, and registers every kernel family above the cpu plugin.
 *
 * Threads: Debian's libdnnl runs on OpenMP (libgomp). libgomp reads its
 * environment once, when it is loaded, so the plugin does not link libdnnl:
 * it sets OMP_NUM_THREADS to the pool size (and, with two pools, a zero
 * spin count) first and dlopens libdnnl afterwards. oneDNN then runs on the
 * calling thread plus (pool size - 1) OpenMP workers.
 *
 * Since ABI 1.4 the plugin hands that OpenMP team to the core as its
 * parallel runtime (wk_set_parallel_runtime), so Wick's kernels and oneDNN's
 * primitives run on the same threads, which spin between ops before
 * sleeping with libgomp's default policy, as PyTorch's do (see set_omp_env).
 *
 * Environment: WICK_ONEDNN_SHARED_POOL=0 (keep Wick's own pool next to a
 * passive OpenMP team, the behaviour before 1.4),
 * WICK_ONEDNN_SPINCOUNT (OpenMP spin iterations before sleeping; default
 * libgomp's own with the shared pool, else 0; 0 is faster when other busy
 * processes share the cores),
 * WICK_ONEDNN_CACHE (primitive cache entries, default 1024),
 * WICK_ONEDNN_WEIGHT_CACHE_MB (reordered weights, default 256; 0: off),
 * WICK_ONEDNN_ALL_KERNELS=1 (also the kernels measured slower than the cpu
 * plugin), WICK_ONEDNN_STATS=1 (per-op taken/declined counts at shutdown),
 * WICK_ONEDNN_DEBUG=1 (argument layouts checked against each primitive). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onednn.h"

odn_api odn;
dnnl_engine_t odn_engine;
static void *g_lib;
static void (*g_omp_set_num_threads)(int);
static void (*g_gomp_parallel)(void (*)(void *), void *, unsigned, unsigned);
static bool g_shared_pool;
static pthread_key_t g_stream_key;
static _Thread_local dnnl_stream_t t_stream;
static _Thread_local int t_threads;

static void stream_free(void *s) {
  odn.stream_destroy((dnnl_stream_t)s);
}

/* Spin count for idle OpenMP workers (iterations before they sleep). 0 is
 * OMP_WAIT_POLICY=PASSIVE; libgomp's default is 300000 (~0.1-1 ms of spinning
 * after every primitive, which steals a core from Wick's pool on 2 cores;
 * measured: ACTIVE made a conv training step 5-10x slower on a loaded 2-core
 * machine). A short spin (20000) sped ResNet-18 batch 32 up 1.1-1.4x but made
 * the MLP step bimodal (38-52k img/s in 2 of 5 runs instead of 120-136k: the
 * OpenMP worker and Wick's pool worker, which spins too, both spinning on two
 * cores): with two pools (WICK_ONEDNN_SHARED_POOL=0) passive stays the default.
 * WICK_ONEDNN_SPINCOUNT overrides; a user's own OMP_WAIT_POLICY or
 * GOMP_SPINCOUNT is left alone. */
#define ODN_DEFAULT_SPINCOUNT "0"
/* With one shared team nothing else spins next to it, so the team keeps
 * libgomp's default wait policy (GOMP_SPINCOUNT left unset: 300,000 pause
 * iterations, about 3 ms here, throttled when OpenMP threads outnumber
 * cores), which is what PyTorch runs with. Measured on 2 vCPUs (Intel Xeon
 * family 6 model 167), same binary, spin count 0 / ~50 us / default:
 * quiet machine, sgemm 256 192 / 321 / 315 GFLOP/s, ResNet-18 b32 training
 * 325 / 420 / 439 img/s, inference 1236 / 1563 / 1662; next to a nice-19
 * busy loop, inference 1401 / 891 / 1618; next to a busy loop at the same
 * priority, training 286 / 217 / 232 and inference 1175 / 859 / 730, which
 * is where WICK_ONEDNN_SPINCOUNT=0 pays. */
/* Below this many bytes of arguments a primitive runs single-threaded. */
#define ODN_SERIAL_BYTES (256u << 10)

static void set_omp_env(void) {
  char buf[32];
  if (!getenv("OMP_NUM_THREADS")) {
    snprintf(buf, sizeof buf, "%d", wk_num_threads());
    setenv("OMP_NUM_THREADS", buf, 0);
  }
  if (!getenv("OMP_WAIT_POLICY") && !getenv("GOMP_SPINCOUNT")) {
    const char *sc = getenv("WICK_ONEDNN_SPINCOUNT");
    if (sc && *sc)
      setenv("GOMP_SPINCOUNT", sc, 0);
    else if (!g_shared_pool)
      setenv("GOMP_SPINCOUNT", ODN_DEFAULT_SPINCOUNT, 0);
  }
}

static wk_status load_dnnl(void) {
  const char *sp = getenv("WICK_ONEDNN_SHARED_POOL");
  g_shared_pool = !(sp && strcmp(sp, "0") == 0);
  set_omp_env();
  const char *names[] = {"libdnnl.so.2", "libdnnl.so.3", "libdnnl.so"};
  for (size_t i = 0; i < sizeof names / sizeof names[0] && !g_lib; i++) g_lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!g_lib)
    return wk_error(WK_ERR_NOT_FOUND, "onednn: cannot load libdnnl.so.2 (apt-get install libdnnl2): %s", dlerror());
#define ODN_RESOLVE(f)                                \
  if (!(*(void **)&odn.f = dlsym(g_lib, "dnnl_" #f))) \
    return wk_error(WK_ERR_NOT_FOUND, "onednn: libdnnl lacks dnnl_%s (oneDNN 2.6 or newer is needed)", #f);
  ODN_FUNCS(ODN_RESOLVE)
#undef ODN_RESOLVE
  const dnnl_version_t *v = odn.version();
  if (!v || v->major != 2 || v->minor < 6)
    return wk_error(WK_ERR_UNSUPPORTED, "onednn: oneDNN %d.%d found, the plugin needs 2.x with x >= 6",
                    v ? v->major : 0, v ? v->minor : 0);
  *(void **)&g_omp_set_num_threads = dlsym(g_lib, "omp_set_num_threads");
  /* libgomp's entry for `#pragma omp parallel` (stable since GCC 4.9); absent
   * when libdnnl was built on another threading runtime */
  *(void **)&g_gomp_parallel = dlsym(g_lib, "GOMP_parallel");
  return WK_OK;
}

static void print_stats(void);
static bool g_count;
static bool g_bf16;

/* oneDNN implements bf16 only from AVX-512 on (not on AVX2 machines, nor
 * under valgrind): probe once, so the kernels decline bf16 there instead of
 * failing with "unimplemented". */
static bool probe_bf16(void) {
  dnnl_memory_desc_t md;
  dnnl_dims_t d = {16, 16};
  if (odn.memory_desc_init_by_tag(&md, 2, d, dnnl_bf16, dnnl_ab) != dnnl_success) return false;
  dnnl_matmul_desc_t mm;
  if (odn.matmul_desc_init(&mm, &md, &md, NULL, &md) != dnnl_success) return false;
  dnnl_primitive_desc_t pd = NULL;
  if (odn.primitive_desc_create(&pd, &mm, NULL, odn_engine, NULL) != dnnl_success) return false;
  odn.primitive_desc_destroy(pd);
  return true;
}

bool odn_bf16(void) {
  return g_bf16;
}

/* conv_wgrad.c: the bf16 conv2d weight gradient as a matmul, registered above conv.c's kernel */
wk_status odn_register_conv_wgrad(void);

static void omp_run(int nthreads, void (*body)(void *), void *ctx) {
  g_gomp_parallel(body, ctx, (unsigned)nthreads, 0);
}

static wk_status odn_init(void) {
  const char *st = getenv("WICK_ONEDNN_STATS");
  g_count = st && *st && strcmp(st, "0") != 0;
  wk_status s = load_dnnl();
  if (s) return s;
  if ((s = odn_check(odn.engine_create(&odn_engine, dnnl_cpu, 0), "onednn", "engine creation"))) return s;
  g_bf16 = probe_bf16();
  if (pthread_key_create(&g_stream_key, stream_free) != 0)
    return wk_error(WK_ERR_INTERNAL, "onednn: cannot create the per-thread stream key");
  wk_status (*families[])(void) = {odn_register_conv, odn_register_norm, odn_register_pool, odn_register_eltwise,
                                   odn_register_matmul, odn_register_quantized,
                                   odn_register_conv_wgrad};
  for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
    if ((s = families[i]()) != WK_OK) return s;
  if (g_shared_pool && g_gomp_parallel) {
    wk_parallel_runtime rt = {sizeof rt, "openmp (onednn)", omp_run};
    if ((s = wk_set_parallel_runtime(&rt)) != WK_OK) return s;
  }
  return WK_OK;
}

static void odn_shutdown(void) {
  print_stats();
  odn_cache_clear();
  odn_weight_clear();
  /* Streams of other threads die with their threads; the library stays
   * loaded (plugins are never unloaded, and libgomp workers may still run),
   * so the parallel runtime stays valid until the core drops it when its
   * pool shuts down. */
}

WK_PLUGIN_DEFINE("onednn", "0.1.0",
                 "oneDNN 2.x kernels for the cpu device (conv, norms, pooling, eltwise, softmax, matmul)", odn_init,
                 odn_shutdown)

/* ---- registration, with optional counts of taken and declined calls --------------------------- */
/* WICK_ONEDNN_STATS=1: every registration goes through a counting supports()
 * wrapper and shutdown prints, per op, how many calls oneDNN took and how
 * many it left to the cpu plugin (`wick info` shows only who is registered). */
#define ODN_MAX_REG 64
typedef struct {
  const char *op;
  wk_supports_fn sup;
  void *user;
  atomic_long taken, declined;
} reg_stat;
static reg_stat g_stats[ODN_MAX_REG];
static int g_nstats;

static bool counting_supports(const wk_kernel_ctx *ctx, const wk_value *args) {
  reg_stat *r = ctx->user;
  wk_kernel_ctx c = *ctx;
  c.user = r->user;
  bool ok = !r->sup || r->sup(&c, args);
  atomic_fetch_add(ok ? &r->taken : &r->declined, 1);
  return ok;
}

static wk_kernel_fn g_fns[ODN_MAX_REG];

static wk_status counting_kernel(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  reg_stat *r = ctx->user;
  wk_kernel_ctx c = *ctx;
  c.user = r->user;
  return g_fns[r - g_stats](&c, args, outs);
}

wk_status odn_reg(const char *op, wk_kernel_fn fn, wk_supports_fn sup, void *user) {
  if (g_count && g_nstats < ODN_MAX_REG) {
    reg_stat *r = &g_stats[g_nstats];
    r->op = op;
    r->sup = sup;
    r->user = user;
    g_fns[g_nstats++] = fn;
    wk_kernel_desc d = {sizeof d,          op, WK_DEVICE_CPU, WK_PRIORITY_OPTIMIZED, counting_kernel,
                        counting_supports, r,  "onednn"};
    return wk_kernel_register(&d);
  }
  wk_kernel_desc d = {sizeof d, op, WK_DEVICE_CPU, WK_PRIORITY_OPTIMIZED, fn, sup, user, "onednn"};
  return wk_kernel_register(&d);
}

static void print_stats(void) {
  if (!g_count) return;
  uint64_t hits, misses;
  odn_cache_stats(&hits, &misses);
  fprintf(stderr, "onednn: primitive cache %llu hits, %llu misses\n", (unsigned long long)hits,
          (unsigned long long)misses);
  size_t bytes;
  odn_weight_stats(&hits, &misses, &bytes);
  fprintf(stderr, "onednn: weight cache %llu hits, %llu misses (copies made), %zu bytes held\n",
          (unsigned long long)hits, (unsigned long long)misses, bytes);
  for (int i = 0; i < g_nstats; i++)
    if (g_stats[i].taken || g_stats[i].declined)
      fprintf(stderr, "onednn: %-30s %8ld calls taken, %8ld left to the cpu plugin\n", g_stats[i].op,
              (long)g_stats[i].taken, (long)g_stats[i].declined);
}

wk_status odn_check(dnnl_status_t st, const char *op, const char *what) {
  if (st == dnnl_success) return WK_OK;
  static const char *names[] = {"success",          "out of memory", "invalid arguments", "unimplemented",
                                "iterator ends",    "runtime error", "not required",      "invalid graph",
                                "invalid graph op", "invalid shape", "invalid data type"};
  const char *n = (unsigned)st < sizeof names / sizeof names[0] ? names[st] : "unknown status";
  return wk_error(st == dnnl_out_of_memory ? WK_ERR_NO_MEMORY : WK_ERR_INTERNAL, "%s(): oneDNN %s failed: %s", op, what,
                  n);
}

dnnl_stream_t odn_stream(const char *op, size_t bytes) {
  /* Small primitives run on the calling thread alone: waking the OpenMP
   * team costs more than it saves (tens of microseconds, far more when the
   * cores are busy). */
  int n = bytes < ODN_SERIAL_BYTES ? 1 : wk_num_threads();
  if (n != t_threads) {
    /* OpenMP's thread count is per thread: follow the pool's on each caller */
    if (g_omp_set_num_threads) g_omp_set_num_threads(n);
    t_threads = n;
  }
  if (!t_stream) {
    if (odn_check(odn.stream_create(&t_stream, odn_engine, dnnl_stream_default_flags), op, "stream creation"))
      return NULL;
    pthread_setspecific(g_stream_key, t_stream);
  }
  return t_stream;
}

bool odn_usable(void) {
  return !wk_in_parallel();
}

bool odn_all_kernels(void) {
  const char *e = getenv("WICK_ONEDNN_ALL_KERNELS");
  return e && *e && strcmp(e, "0") != 0;
}

dnnl_data_type_t odn_dt(wk_dtype dt) {
  switch (dt) {
    case WK_F32:
      return dnnl_f32;
    case WK_BF16:
      return dnnl_bf16;
    case WK_F16:
      return dnnl_f16;
    default:
      return dnnl_data_type_undef;
  }
}

bool odn_dense(const wk_tensor *t, bool allow_bf16) {
  if (!t) return false;
  wk_dtype dt = wk_tensor_dtype(t);
  if (dt != WK_F32 && !(allow_bf16 && g_bf16 && dt == WK_BF16)) return false;
  if (wk_tensor_device(t).type != WK_DEVICE_CPU) return false;
  return wk_tensor_numel(t) > 0 && wk_tensor_is_contiguous(t);
}
