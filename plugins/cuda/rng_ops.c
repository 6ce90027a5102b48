/* cuda random and factory family: rand, randn, randint, rand_like,
 * randn_like, bernoulli (tensor and p), uniform_, normal_, dropout and
 * randperm draw from the cuda device's Philox stream with the core's
 * counter scheme (wk_rng_reserve, one counter per element, as the cpu
 * plugin), so manual_seed reproduces them. zeros/ones/full and their *_like
 * forms fill on the device; arange, linspace and eye are computed by the
 * cpu kernel and copied over (identical values, one host-to-device copy).
 * Argument checks are the cpu kernel's: it is called with an empty size
 * first where the message must match. */
#include <stdio.h>
#include <string.h>

#include "cuda_kernels.h"

static wk_dtype opt_dtype(const wk_value *v, wk_dtype def) {
  return v->tag == WK_V_DTYPE ? v->u.dtype : def;
}

static wk_status check_sizes(const char *op, const int64_t *sizes, int nd) {
  if (nd > WK_MAX_DIMS)
    return wk_error(WK_ERR_SHAPE, "%s(): %d dimensions requested, at most %d supported", op, nd, WK_MAX_DIMS);
  for (int i = 0; i < nd; i++)
    if (sizes[i] < 0) {
      char b[WK_SHAPE_STR_MAX];
      wk_sizes_str(sizes, nd, b, sizeof b);
      return wk_error(WK_ERR_SHAPE, "%s(): Trying to create tensor with negative dimension %lld: %s", op,
                      (long long)sizes[i], b);
    }
  return WK_OK;
}

/* Calls this op's cpu kernel with the device argument set to cpu and, when
 * size_arg >= 0, that int[] argument replaced by [0] (a validation-only
 * call). Returns the cpu result (a new reference) or NULL with its error. */
static wk_tensor *call_cpu(const wk_kernel_ctx *ctx, const wk_value *args, int size_arg) {
  wk_op *op = ctx->op;
  int n = wk_op_num_args(op), dev_arg = wk_op_arg_index(op, "device");
  wk_value a[WK_MAX_ARGS], o[WK_MAX_OUTS];
  memcpy(a, args, sizeof(wk_value) * (size_t)n);
  static const int64_t zero = 0;
  if (dev_arg >= 0) a[dev_arg] = WK_VDEV(wk_cpu());
  if (size_arg >= 0) a[size_arg] = WK_VINTS(&zero, 1);
  if (wk_op_call(op, a, n, o) != WK_OK) return NULL;
  return o[0].u.t;
}

/* cpu result moved to the device (consumed). */
static wk_tensor *to_dev(wk_tensor *t, wk_device dev) {
  if (!t) return NULL;
  wk_tensor *r = wk_to_device(t, dev);
  wk_release(t);
  return r;
}

static wk_status k_via_cpu(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_status s = cuda_enter(WK_OPNAME, ctx->device);
  if (s) return s;
  return wk_kernel_out1(outs, to_dev(call_cpu(ctx, args, -1), ctx->device));
}

/* New tensor of shape sizes on dev filled with the Scalar v (checked by the
 * cpu kernel through a 0-dim call). */
static wk_tensor *filled(const wk_kernel_ctx *ctx, const int64_t *sizes, int nd, wk_dtype dt, const wk_value *v) {
  const char *op = wk_op_name(ctx->op);
  if (check_sizes(op, sizes, nd)) return NULL;
  wk_value pv = *v;
  /* 0 and 1 (zeros, ones: autograd makes many) fit every dtype: no cpu check */
  if (!(v->tag == WK_V_INT && (v->u.i == 0 || v->u.i == 1)) || !(dt >= WK_F32 && dt <= WK_BOOL)) {
    wk_device cpu = wk_cpu();
    wk_tensor *probe = wkx_full(NULL, 0, *v, dt, &cpu);
    if (!probe) return NULL;
    if (v->tag == WK_V_INT && !wk_dtype_is_floating(dt)) { /* exact int64 through item_i64 */
      int64_t x = 0;
      if (wk_item_i64(probe, &x))
        pv.tag = WK_V_NONE;
      else
        pv = WK_VI(x);
    }
    wk_release(probe);
    if (pv.tag == WK_V_NONE) return NULL;
  }
  if (cuda_enter(op, ctx->device)) return NULL;
  wk_tensor *t = cuda_new(sizes, nd, dt, ctx->device);
  if (t && !wkx_fill_(t, pv)) {
    wk_release(t);
    return NULL;
  }
  return t;
}

static wk_status k_zeros(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_value z = WK_VI(0);
  return wk_kernel_out1(outs, filled(ctx, args[0].u.ints, args[0].len, opt_dtype(&args[1], WK_F32), &z));
}
static wk_status k_ones(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_value one = WK_VI(1);
  return wk_kernel_out1(outs, filled(ctx, args[0].u.ints, args[0].len, opt_dtype(&args[1], WK_F32), &one));
}
static wk_status k_full(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_dtype def = args[1].tag == WK_V_INT ? WK_I64 : args[1].tag == WK_V_BOOL ? WK_BOOL : WK_F32;
  return wk_kernel_out1(outs, filled(ctx, args[0].u.ints, args[0].len, opt_dtype(&args[2], def), &args[1]));
}
static wk_status k_zeros_like(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *x = WK_ARG_T(0);
  wk_value z = WK_VI(0);
  return wk_kernel_out1(outs, filled(ctx, wk_tensor_sizes(x), wk_tensor_dim(x), opt_dtype(&args[1], wk_tensor_dtype(x)), &z));
}
static wk_status k_ones_like(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *x = WK_ARG_T(0);
  wk_value one = WK_VI(1);
  return wk_kernel_out1(outs, filled(ctx, wk_tensor_sizes(x), wk_tensor_dim(x), opt_dtype(&args[1], wk_tensor_dtype(x)), &one));
}
static wk_status k_full_like(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *x = WK_ARG_T(0);
  return wk_kernel_out1(outs,
              filled(ctx, wk_tensor_sizes(x), wk_tensor_dim(x), opt_dtype(&args[2], wk_tensor_dtype(x)), &args[1]));
}

/* ---- random ---- */
typedef struct {
  int kind;
  double a, b;
  int64_t low;
  uint64_t range;
  wk_tensor *probs; /* bernoulli: contiguous on the device */
} rjob;

/* Reserves numel counters of dev's generator and fills the contiguous t. */
static wk_status run_random(const rjob *j, wk_device dev, wk_tensor *t) {
  int64_t n = wk_tensor_numel(t);
  uint64_t seed = 0, offset = 0;
  wk_status s = wk_rng_reserve(dev, (uint64_t)n, &seed, &offset);
  if (s) return s;
  return (wk_status)cuda_launch_random(j->kind, cuda_dt(wk_tensor_dtype(t)), wk_tensor_data(t), n, seed, offset, j->a,
                                       j->b, j->low, j->range, j->probs ? wk_tensor_data(j->probs) : NULL,
                                       j->probs ? cuda_dt(wk_tensor_dtype(j->probs)) : 0, cuda_stream(dev));
}

static wk_tensor *random_new(const char *op, wk_device dev, const rjob *j, const int64_t *sizes, int nd, wk_dtype dt) {
  if (check_sizes(op, sizes, nd) || cuda_enter(op, dev)) return NULL;
  wk_tensor *t = cuda_new(sizes, nd, dt, dev);
  if (t && run_random(j, dev, t)) {
    wk_release(t);
    return NULL;
  }
  return t;
}

/* rand/randn/randint: the cpu kernel validates with size [0] (it draws nothing). */
static wk_status k_rand_factory(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = WK_OPNAME;
  bool randint = strcmp(op, "randint") == 0;
  int size_arg = randint ? 2 : 0;
  wk_tensor *probe = call_cpu(ctx, args, size_arg);
  if (!probe) return wk_last_error();
  wk_dtype dt = wk_tensor_dtype(probe);
  wk_release(probe);
  rjob j = {strcmp(op, "randn") == 0 ? CUDA_RNG_NORMAL : CUDA_RNG_UNIFORM, 0, 1, 0, 0, NULL};
  if (randint) {
    j.kind = CUDA_RNG_RANDINT;
    j.low = args[0].u.i;
    j.range = (uint64_t)args[1].u.i - (uint64_t)args[0].u.i;
  }
  return wk_kernel_out1(outs, random_new(op, ctx->device, &j, args[size_arg].u.ints, args[size_arg].len, dt));
}

static wk_status k_rand_like(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  const char *op = WK_OPNAME;
  wk_tensor *x = WK_ARG_T(0);
  wk_dtype dt = opt_dtype(&args[1], wk_tensor_dtype(x));
  if (!wk_dtype_is_floating(dt))
    return wk_error(WK_ERR_DTYPE, "%s(): expected a floating point dtype, but got %s", op, wk_dtype_name(dt));
  rjob j = {strcmp(op, "randn_like") == 0 ? CUDA_RNG_NORMAL : CUDA_RNG_UNIFORM, 0, 1, 0, 0, NULL};
  return wk_kernel_out1(outs, random_new(op, ctx->device, &j, wk_tensor_sizes(x), wk_tensor_dim(x), dt));
}

/* randperm: the cpu's Fisher-Yates on the host, drawing from the cuda
 * generator's counters (a sequential algorithm), then copied over. */
static wk_status k_randperm(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  int64_t n = args[0].u.i; /* n and the dtype: checked by the meta function */
  wk_tensor *h = wk_empty(&n, 1, (wk_options){.dtype = WK_I64});
  if (!h) return wk_last_error();
  uint64_t seed, off;
  wk_status s = wk_rng_reserve(ctx->device, (uint64_t)n, &seed, &off);
  if (!s) {
    wk_randperm_fill(wk_tensor_data(h), n, seed, off);
    s = cuda_enter("randperm", ctx->device);
  }
  if (s) {
    wk_release(h);
    return s;
  }
  wk_tensor *d = to_dev(h, ctx->device);
  return wk_kernel_out1(outs, wk_cast_own(d, wk_kernel_meta(ctx, 0)->dtype));
}

static wk_status k_bernoulli(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *x = WK_ARG_T(0);
  wk_dtype dt = wk_tensor_dtype(x);
  if (!wk_dtype_is_floating(dt))
    return wk_error(WK_ERR_DTYPE, "bernoulli(): expected a floating point tensor of probabilities, but got %s",
                    wk_dtype_name(dt));
  wk_status s = cuda_enter("bernoulli", ctx->device);
  if (s) return s;
  /* probabilities outside [0, 1] (or NaN): the first one, as the cpu reports it */
  wk_tensor *ge = wk_ge_scalar(x, 0), *le = ge ? wk_le_scalar(x, 1) : NULL, *ok = le ? wk_logical_and(ge, le) : NULL;
  wk_tensor *bad = ok ? wk_logical_not(ok) : NULL, *any = bad ? wk_any(bad) : NULL;
  double anyv = 0;
  s = any ? wk_item(any, &anyv) : wk_last_error();
  wk_release(ge);
  wk_release(le);
  wk_release(ok);
  wk_release(bad);
  wk_release(any);
  if (s) return s;
  if (anyv != 0) {
    wk_tensor *h = wk_to_device(x, wk_cpu()), *hc = h ? wk_contiguous(h) : NULL;
    wk_release(h);
    if (!hc) return wk_last_error();
    int64_t n = wk_tensor_numel(hc);
    const char *p = wk_tensor_data(hc);
    for (int64_t i = 0; i < n; i++) {
      double v = wk_load_f64(p + i * (int64_t)wk_dtype_size(dt), dt);
      if (!(v >= 0 && v <= 1)) {
        wk_release(hc);
        return wk_error(WK_ERR_INVALID_ARG,
                        "bernoulli(): expected all probabilities to be in [0, 1], but got %g at flat index %lld", v,
                        (long long)i);
      }
    }
    wk_release(hc);
  }
  rjob j = {CUDA_RNG_BERN_T, 0, 0, 0, 0, cuda_dense(x, dt, ctx->device)};
  if (!j.probs) return wk_last_error();
  wk_tensor *r = random_new("bernoulli", ctx->device, &j, wk_tensor_sizes(x), wk_tensor_dim(x), dt);
  wk_release(j.probs);
  return wk_kernel_out1(outs, r);
}

static wk_status k_bernoulli_p(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *x = WK_ARG_T(0);
  double p = args[1].u.f; /* in [0, 1]: checked by the meta function */
  rjob j = {CUDA_RNG_BERN_P, p, 0, 0, 0, NULL};
  return wk_kernel_out1(outs, random_new("bernoulli", ctx->device, &j, wk_tensor_sizes(x), wk_tensor_dim(x), wk_tensor_dtype(x)));
}

/* run_random as wk_fill_inplace wants it (buf on its own device). */
static wk_status fill_random(void *job, wk_tensor *buf) {
  return run_random(job, wk_tensor_device(buf), buf);
}

/* wk_copy_ as the status wk_fill_inplace wants. */
static wk_status copy_into(wk_tensor *dst, wk_tensor *src) {
  return wk_copy_(dst, src) ? WK_OK : wk_last_error();
}

/* In-place fills draw in logical row-major order into a contiguous buffer
 * (the arguments and self's internal overlap checked by the meta function). */
static wk_status random_inplace(const char *op, const wk_kernel_ctx *ctx, wk_tensor *self, rjob *j, wk_value *outs) {
  wk_status s = cuda_enter(op, ctx->device);
  return s ? s : wk_fill_inplace(self, fill_random, j, copy_into, outs);
}

static wk_status k_uniform_(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *self = WK_ARG_T(0);
  rjob j = {CUDA_RNG_UNIFORM, args[1].u.f, args[2].u.f, 0, 0, NULL};
  return random_inplace("uniform_", ctx, self, &j, outs);
}
static wk_status k_normal_(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *self = WK_ARG_T(0);
  rjob j = {CUDA_RNG_NORMAL, args[1].u.f, args[2].u.f, 0, 0, NULL};
  return random_inplace("normal_", ctx, self, &j, outs);
}

/* ---- dropout: (y, mask), the cpu's arithmetic and counters ---- */
static wk_status k_dropout(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *input = WK_ARG_T(0);
  double p = WK_ARG_F(1);
  bool train = WK_ARG_B(2);
  bool active = train && p > 0; /* p and the dtype checked by the meta function */
  wk_dtype dt = wk_tensor_dtype(input);
  int64_t n = wk_tensor_numel(input);
  wk_device dev = ctx->device;
  wk_status s = cuda_enter("dropout", dev);
  if (s) return s;
  wk_tensor *mask = wk_meta_empty(ctx, 1), *y = NULL, *x = NULL;
  if (!mask) return wk_last_error();
  if (!active || p == 1) {
    if (!wkx_fill_(mask, WK_VB(!active))) goto fail;
    y = !active ? wk_clone(input) : wk_meta_empty(ctx, 0);
    if (!y) goto fail;
    if (active && !wk_zero_(y)) goto fail;
  } else {
    wk_dtype cd = dt == WK_F64 ? WK_F64 : WK_F32;
    uint64_t seed = 0, offset = 0;
    if (wk_rng_reserve(dev, (uint64_t)n, &seed, &offset)) goto fail;
    if (!(x = cuda_dense(input, cd, dev)) || !(y = cuda_new(wk_tensor_sizes(input), wk_tensor_dim(input), cd, dev)))
      goto fail;
    if (cuda_launch_dropout(cuda_dt(cd), wk_tensor_data(y), wk_tensor_data(mask), wk_tensor_data(x), n, p, seed, offset,
                            cuda_stream(dev)))
      goto fail;
    wk_release(x);
    x = NULL;
    y = wk_cast_own(y, dt);
  }
  return wk_kernel_done_n(WK_OK, (wk_tensor *[]){y, mask}, 2, outs);
fail:
  wk_release(x);
  return wk_kernel_done_n(wk_last_error(), (wk_tensor *[]){y, mask}, 2, outs);
}

wk_status cuda_register_rng(void) {
  static const struct {
    const char *op;
    wk_kernel_fn fn;
  } regs[] = {
      {"zeros", k_zeros},
      {"ones", k_ones},
      {"full", k_full},
      {"zeros_like", k_zeros_like},
      {"ones_like", k_ones_like},
      {"full_like", k_full_like},
      {"arange", k_via_cpu},
      {"linspace", k_via_cpu},
      {"eye", k_via_cpu},
      {"rand", k_rand_factory},
      {"randn", k_rand_factory},
      {"randint", k_rand_factory},
      {"randperm", k_randperm},
      {"rand_like", k_rand_like},
      {"randn_like", k_rand_like},
      {"bernoulli", k_bernoulli},
      {"bernoulli.p", k_bernoulli_p},
      {"uniform_", k_uniform_},
      {"normal_", k_normal_},
      {"dropout", k_dropout},
  };
  for (size_t i = 0; i < sizeof regs / sizeof regs[0]; i++) {
    wk_status s = cuda_reg(regs[i].op, regs[i].fn, NULL, NULL, "cuda.rng");
    if (s) return s;
  }
  return WK_OK;
}
