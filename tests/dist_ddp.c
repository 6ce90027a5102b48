/* dist_ddp: DistributedDataParallel checked against one process, run by
 * tests/dist.sh under `mpirun -np N` and `wick launch --nproc-per-node N`.
 * Every rank also trains the same model alone on the whole global batch (the
 * 1-process reference, seeded as rank 0) and compares: after the steps, each
 * parameter's relative difference ||ddp - ref|| / ||ref|| must be <= 1e-6
 * (float32). Rank r's DDP model is seeded with r + 1, so equality also shows
 * the broadcast from rank 0.
 *
 *   dist_ddp [--steps 20] [--bucket-mb 25] [--accum K] [--check features]
 *            [--die-rank R --die-at STEP --die-how kill|stop]
 *
 * --accum K: K micro-batches per step, the first K-1 under no_sync.
 * --check features: find_unused_parameters, buffers broadcast, errors.
 * --die-*: rank R kills (SIGKILL) or stops (SIGSTOP) itself at STEP, for the
 * dead-rank tests: the others must fail within WICK_DIST_TIMEOUT. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wick/dist.h>
#include <wick/nn.h>
#include <wick/optim.h>
#include <wick/wick.h>

/* Open MPI unloads its components at MPI_Finalize, after which LeakSanitizer
 * can neither name nor suppress what they kept: this process keeps every
 * shared object loaded (its dlclose, found before libc's, does nothing). */
int dlclose(void *handle);
int dlclose(void *handle) {
  (void)handle;
  return 0;
}

/* Full stacks through Open MPI's frame-pointer-less code, so its allocations
 * are recognised below (the fast unwinder stops inside libc). */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "fast_unwind_on_malloc=0"; }

/* Open MPI keeps allocations until exit; they are not Wick's leaks. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) {
  return "leak:libmpi\nleak:libopen-pal\nleak:libopen-rte\nleak:libpmix\nleak:libevent\nleak:libhwloc\n"
         "leak:mca_\nleak:pmix\nleak:orte_\nleak:opal_\n";
}

#define IN 24
#define HID 48
#define OUT 5
#define GLOBAL_BATCH 24

static int R, S;

static int fail(const char *what) {
  fprintf(stderr, "dist_ddp rank %d: %s: %s\n", R, what, wk_last_error_message());
  return 1;
}

static wk_module *make_model(uint64_t seed) {
  wk_manual_seed(seed);
  wk_module *m[5] = {wk_nn_linear(IN, HID, true), wk_nn_relu(), wk_nn_linear(HID, HID, true), wk_nn_relu(),
                     wk_nn_linear(HID, OUT, true)};
  return wk_nn_sequential(m, 5);
}

/* Global batch of a step: inputs and class targets, the same on every rank. */
static void batch(int step, wk_tensor **x, wk_tensor **y) {
  float xs[GLOBAL_BATCH * IN];
  int64_t ys[GLOBAL_BATCH];
  uint64_t s = 0x9E3779B97F4A7C15ull * (uint64_t)(step + 1);
  for (int i = 0; i < GLOBAL_BATCH * IN; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    xs[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 2 - 1);
  }
  for (int i = 0; i < GLOBAL_BATCH; i++) ys[i] = (i * 7 + step) % OUT;
  *x = wk_tensor_from_data(xs, WK_F32, WK_SHAPE(GLOBAL_BATCH, IN));
  *y = wk_tensor_from_data(ys, WK_I64, WK_SHAPE(GLOBAL_BATCH));
}

static int params_of(wk_module *m, wk_tensor **p, int cap) {
  return wk_module_named_parameters(m, NULL, p, cap);
}

/* One step of the reference (whole batch) or of DDP (this rank's rows, in accum micro-batches). */
static wk_status train_step(wk_module *m, wk_optimizer *opt, wk_tensor *x, wk_tensor *y, int64_t lo, int64_t n,
                            int accum, wk_module *ddp) {
  wk_status s = wk_optim_zero_grad(opt, true);
  int64_t per = n / accum;
  for (int k = 0; k < accum && !s; k++) {
    wk_scope_begin();
    bool last = k == accum - 1;
    if (ddp && !last) s = wk_ddp_no_sync_begin(ddp);
    wk_tensor *xb = wk_narrow(x, 0, lo + k * per, per), *yb = wk_narrow(y, 0, lo + k * per, per);
    wk_tensor *loss = wk_div_scalar(wk_cross_entropy(wk_module_forward(m, xb), yb), (double)accum);
    if (!s) s = loss ? wk_backward(loss) : wk_last_error();
    if (ddp && !last && !s) s = wk_ddp_no_sync_end(ddp);
    wk_scope_end();
  }
  return s ? s : wk_optim_step(opt);
}

static double rel_diff(wk_tensor *a, wk_tensor *b) {
  double d = 0, n = 0;
  int64_t k = wk_tensor_numel(a);
  const float *pa = wk_tensor_data(a), *pb = wk_tensor_data(b);
  for (int64_t i = 0; i < k; i++) {
    d += ((double)pa[i] - pb[i]) * ((double)pa[i] - pb[i]);
    n += (double)pb[i] * pb[i];
  }
  return n > 0 ? sqrt(d / n) : sqrt(d);
}

static int equivalence(wk_dist_group *world, int steps, double bucket_mb, int accum, int die_rank, int die_at,
                       const char *die_how) {
  if (GLOBAL_BATCH % (S * accum)) {
    fprintf(stderr, "dist_ddp: the global batch %d does not split over %d ranks x %d micro-batches\n", GLOBAL_BATCH, S,
            accum);
    return 2;
  }
  wk_module *ref = make_model(1), *local = make_model((uint64_t)R + 1);
  if (!ref || !local) return fail("building the models");
  wk_ddp_opts o = {.struct_size = sizeof o, .bucket_cap_mb = bucket_mb};
  wk_module *ddp = wk_ddp_wrap(local, world, &o);
  if (!ddp) return fail("wk_ddp_wrap");
  wk_tensor *pr[16], *pd[16];
  int np = params_of(ref, pr, 16);
  params_of(local, pd, 16);
  wk_sgd_opts so = {.lr = 0.1, .momentum = 0.9};
  wk_optimizer *oref = wk_optim_sgd(pr, np, so), *oddp = wk_optim_sgd(pd, np, so);
  if (!oref || !oddp) return fail("optimizers");
  wk_ddp_stats st = {.struct_size = sizeof st};
  wk_ddp_get_stats(ddp, &st);
  int64_t per_rank = GLOBAL_BATCH / S;
  for (int step = 0; step < steps; step++) {
    if (R == die_rank && step == die_at) {
      fprintf(stderr, "dist_ddp rank %d: %s myself at step %d\n", R, die_how, step);
      fflush(stderr);
      raise(strcmp(die_how, "stop") == 0 ? SIGSTOP : SIGKILL);
    }
    wk_tensor *x, *y;
    batch(step, &x, &y);
    if (train_step(ref, oref, x, y, 0, GLOBAL_BATCH, 1, NULL)) return fail("reference step");
    if (train_step(ddp, oddp, x, y, R * per_rank, per_rank, accum, ddp)) return fail("DDP step");
    wk_release(x);
    wk_release(y);
  }
  double worst = 0;
  for (int i = 0; i < np; i++) {
    double d = rel_diff(pd[i], pr[i]);
    if (d > worst) worst = d;
  }
  wk_ddp_get_stats(ddp, &st);
  printf(
      "rank %d/%d: %d steps, accum %d, %d buckets (%lld bytes): max relative parameter difference to 1 process "
      "%.3g; all-reduce %.4f s, exposed %.4f s\n",
      R, S, steps, accum, st.buckets, (long long)st.bucket_bytes, worst, st.comm_s, st.exposed_s);
  int rc = worst <= 1e-6 && st.syncs == steps ? 0 : 1;
  if (rc)
    fprintf(stderr, "dist_ddp rank %d: FAIL (difference %.3g > 1e-6, or %lld syncs for %d steps)\n", R, worst,
            (long long)st.syncs, steps);
  wk_optimizer_free(oref);
  wk_optimizer_free(oddp);
  wk_module_release(ddp);
  wk_module_release(local);
  wk_module_release(ref);
  return rc;
}

/* ---- features: find_unused_parameters, buffers, errors ---- */
typedef struct {
  bool use_b; /* whether this rank's forward uses child b */
} two_state;

static wk_tensor *two_forward(wk_module *self, wk_tensor *const *in, int n) {
  (void)n;
  two_state *s = wk_module_state(self);
  wk_tensor *h = wk_module_forward(wk_module_child(self, "a"), in[0]);
  if (!s->use_b) return h;
  wk_tensor *r = wk_add(h, wk_module_forward(wk_module_child(self, "b"), in[0]));
  return r;
}
static const wk_module_class TWO = {
    .struct_size = sizeof(wk_module_class), .name = "Two", .forward = two_forward, .destroy = free};

static wk_module *two(bool use_b) {
  two_state *s = calloc(1, sizeof *s);
  s->use_b = use_b;
  wk_module *m = wk_module_new(&TWO, s);
  wk_module *a = wk_nn_linear(IN, OUT, true), *b = wk_nn_linear(IN, OUT, true);
  wk_module_register_child(m, "a", a);
  wk_module_register_child(m, "b", b);
  wk_module_release(a);
  wk_module_release(b);
  return m;
}

#define CHECK(cond, ...)                                   \
  do {                                                     \
    if (!(cond)) {                                         \
      fprintf(stderr, "dist_ddp rank %d: FAIL: ", R);      \
      fprintf(stderr, __VA_ARGS__);                        \
      fprintf(stderr, " (%s)\n", wk_last_error_message()); \
      return 1;                                            \
    }                                                      \
  } while (0)

/* Whether t is the same on every rank. */
static bool same_everywhere(wk_dist_group *g, wk_tensor *t) {
  wk_tensor *c = wk_contiguous(t), *mx = wk_clone(c), *mn = wk_clone(c);
  int64_t eq = 0;
  bool ok = !wk_dist_all_reduce(g, mx, WK_REDUCE_MAX) && !wk_dist_all_reduce(g, mn, WK_REDUCE_MIN) &&
            wk_item_i64(wk_all(wk_eq(mx, mn)), &eq) == WK_OK && eq;
  return ok;
}

static int features(wk_dist_group *world) {
  wk_scope_begin();
  wk_tensor *x, *y;
  batch(0, &x, &y);
  /* 1. find_unused_parameters: b is used on rank 0 only; its gradient is rank 0's divided by S everywhere. */
  {
    wk_manual_seed(7);
    wk_module *m = two(R == 0);
    wk_ddp_opts o = {.struct_size = sizeof o, .find_unused_parameters = true};
    wk_module *d = wk_ddp_wrap(m, world, &o);
    CHECK(d, "wrap with find_unused_parameters");
    wk_tensor *loss = wk_cross_entropy(wk_module_forward(d, x), y);
    CHECK(loss && wk_backward(loss) == WK_OK, "backward with a parameter unused on some ranks");
    wk_tensor *gb = wk_tensor_grad(wk_module_param(m, "b.weight")),
              *ga = wk_tensor_grad(wk_module_param(m, "a.weight"));
    CHECK(gb && ga, "b.weight and a.weight have gradients on every rank");
    CHECK(same_everywhere(world, gb) && same_everywhere(world, ga), "gradients agree across ranks");
    /* without the option, the unused parameter is an error naming it */
    wk_module *m2 = two(false);
    wk_module *d2 = wk_ddp_wrap(m2, world, NULL);
    CHECK(d2, "wrap without find_unused_parameters");
    wk_tensor *l2 = wk_cross_entropy(wk_module_forward(d2, x), y);
    wk_clear_error();
    CHECK(wk_backward(l2) == WK_ERR_AUTOGRAD && strstr(wk_last_error_message(), "'b.weight' received no gradient") &&
              strstr(wk_last_error_message(), "find_unused_parameters"),
          "an unused parameter without find_unused_parameters is refused, naming it");
    wk_clear_error();
    /* no rank uses b: its grad stays unset */
    wk_module *m3 = two(false);
    wk_module *d3 = wk_ddp_wrap(m3, world, &o);
    wk_tensor *l3 = wk_cross_entropy(wk_module_forward(d3, x), y);
    CHECK(l3 && wk_backward(l3) == WK_OK, "backward with b unused everywhere");
    wk_tensor *gb3 = wk_tensor_grad(wk_module_param(m3, "b.weight"));
    CHECK(!gb3, "a parameter no rank used keeps no gradient");
    wk_release(gb);
    wk_release(ga);
    wk_module_release(d3);
    wk_module_release(m3);
    wk_module_release(d2);
    wk_module_release(m2);
    wk_module_release(d);
    wk_module_release(m);
  }
  /* 2. BatchNorm buffers: broadcast at wrap and before each training forward. */
  {
    wk_manual_seed((uint64_t)R + 3);
    wk_module *mods[2] = {wk_nn_linear(IN, HID, true), wk_nn_batch_norm1d(HID, (wk_norm_opts){0})};
    wk_module *m = wk_nn_sequential(mods, 2);
    wk_tensor *rm = wk_module_buffer(m, "1.running_mean");
    CHECK(rm, "running_mean");
    wk_fill_(rm, (double)R);
    wk_module *d = wk_ddp_wrap(m, world, NULL);
    CHECK(d && same_everywhere(world, rm), "running_mean equal after wrap");
    wk_fill_(rm, 10.0 * R); /* diverge, then a training forward on the same data */
    CHECK(wk_module_forward(d, x), "forward");
    CHECK(same_everywhere(world, rm) && same_everywhere(world, wk_module_buffer(m, "1.running_var")),
          "running stats equal after a forward (broadcast from rank 0 first)");
    double v = 0;
    wk_item(wk_select(rm, 0, 0), &v);
    CHECK(fabs(v) < 5, "the broadcast took rank 0's value (got %g)", v);
    /* errors */
    wk_clear_error();
    CHECK(!wk_ddp_wrap(NULL, world, NULL) && wk_last_error() == WK_ERR_NULL, "NULL module refused");
    wk_clear_error();
    CHECK(!wk_ddp_wrap(m, NULL, NULL) && wk_last_error() == WK_ERR_NULL, "NULL group refused");
    wk_clear_error();
    CHECK(!wk_ddp_module(m) && strstr(wk_last_error_message(), "not a DistributedDataParallel"),
          "plain module refused");
    wk_clear_error();
    CHECK(wk_ddp_no_sync_end(d) == WK_ERR_STATE, "no_sync_end without begin refused");
    wk_clear_error();
    wk_ddp_opts bad = {.struct_size = sizeof bad, .bucket_cap_mb = -1};
    CHECK(!wk_ddp_wrap(m, world, &bad) && strstr(wk_last_error_message(), "bucket_cap_mb"), "negative cap refused");
    wk_clear_error();
    CHECK(wk_ddp_module(d) == m, "wk_ddp_module gives the wrapped module");
    wk_module_release(d);
    wk_module_release(m);
  }
  wk_release(x);
  wk_release(y);
  wk_scope_end();
  printf("rank %d/%d: DDP features pass (find_unused_parameters, buffer broadcast, errors)\n", R, S);
  return 0;
}

int main(int argc, char **argv) {
  int steps = 20, accum = 1, die_rank = -1, die_at = -1;
  double bucket_mb = 0;
  const char *check = "equivalence", *die_how = "kill";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--steps"))
      steps = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--bucket-mb"))
      bucket_mb = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--accum"))
      accum = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--check"))
      check = argv[i + 1];
    else if (!strcmp(argv[i], "--die-rank"))
      die_rank = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--die-at"))
      die_at = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--die-how"))
      die_how = argv[i + 1];
    else {
      fprintf(stderr, "dist_ddp: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (wk_init() != WK_OK) return fail("wk_init");
  if (!wk_dist_backend(NULL) || !wk_ddp_api_get()) {
    printf("SKIP: %s\n", wk_last_error_message());
    return 77;
  }
  wk_dist_group *world = wk_dist_init(NULL);
  if (!world) return fail("wk_dist_init");
  R = wk_dist_rank(world);
  S = wk_dist_size(world);
  int rc = !strcmp(check, "features")
               ? features(world)
               : equivalence(world, steps, bucket_mb, accum < 1 ? 1 : accum, die_rank, die_at, die_how);
  wk_shutdown();
  return rc;
}
