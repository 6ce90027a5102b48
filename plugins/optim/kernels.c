/* optim plugin: the fused per-parameter update ops, their meta functions
 * (argument checks for every device) and their reference cpu kernels. Each kernel walks param, grad and the state buffers once,
 * computing in double and rounding to the parameter's dtype wherever PyTorch
 * 1.13's single-tensor implementation ends an op, so float32 trajectories
 * follow PyTorch's to the last bits and float64 ones exactly. A backend
 * plugin registers its own kernel for the same op names. */
#include "optim.h"

wk_op *optim_op_sgd, *optim_op_adam, *optim_op_rmsprop, *optim_op_adagrad;

#define SGD_SCHEMA                                                                                         \
  "optim.sgd_step_(Tensor(a!) param, Tensor grad, Tensor(b!)? momentum_buffer, float lr, float momentum, " \
  "float dampening=0, float weight_decay=0, bool nesterov=False, bool maximize=False, "                    \
  "bool momentum_buffer_is_new=False) -> Tensor(a!)"
#define ADAM_SCHEMA                                                                                         \
  "optim.adam_step_(Tensor(a!) param, Tensor grad, Tensor(b!) exp_avg, Tensor(c!) exp_avg_sq, "             \
  "Tensor(d!)? max_exp_avg_sq, float step, float lr, float beta1=0.9, float beta2=0.999, float eps=1e-08, " \
  "float weight_decay=0, bool amsgrad=False, bool maximize=False, bool decoupled_weight_decay=False) "      \
  "-> Tensor(a!)"
#define RMSPROP_SCHEMA                                                                               \
  "optim.rmsprop_step_(Tensor(a!) param, Tensor grad, Tensor(b!) square_avg, Tensor(c!)? grad_avg, " \
  "Tensor(d!)? momentum_buffer, float lr, float alpha=0.99, float eps=1e-08, float weight_decay=0, " \
  "float momentum=0, bool centered=False, bool maximize=False) -> Tensor(a!)"
#define ADAGRAD_SCHEMA                                                                              \
  "optim.adagrad_step_(Tensor(a!) param, Tensor grad, Tensor(b!) state_sum, float step, float lr, " \
  "float lr_decay=0, float weight_decay=0, float eps=1e-10, bool maximize=False) -> Tensor(a!)"

/* ---- rounding to the parameter's dtype ---- */
static inline __attribute__((always_inline)) double rnd(double x, wk_dtype dt) {
  switch (dt) {
    case WK_F32:
      return (double)(float)x;
    case WK_F16:
      return wk_f16_to_f32(wk_f32_to_f16((float)x));
    case WK_BF16:
      return wk_bf16_to_f32(wk_f32_to_bf16((float)x));
    default:
      return x;
  }
}

/* ---- meta functions: the arguments checked once for every device (the
 * meta device included); each op returns param, updated in place ---- */
static wk_status check_like(const char *op, const char *what, wk_tensor *param, wk_tensor *t) {
  char a[WK_SHAPE_STR_MAX], b[WK_SHAPE_STR_MAX];
  if (!wk_dtype_is_floating(wk_tensor_dtype(t)))
    return wk_error(WK_ERR_DTYPE, "%s: %s must be floating point, got %s", op, what, wk_dtype_name(wk_tensor_dtype(t)));
  int nd = wk_tensor_dim(param);
  bool same = nd == wk_tensor_dim(t);
  for (int d = 0; same && d < nd; d++) same = wk_tensor_size(param, d) == wk_tensor_size(t, d);
  if (!same) {
    wk_shape_str(param, a, sizeof a);
    wk_shape_str(t, b, sizeof b);
    return wk_error(WK_ERR_SHAPE, "%s: %s has shape %s but param has shape %s", op, what, b, a);
  }
  if (!wk_device_equal(wk_tensor_device(param), wk_tensor_device(t)))
    return wk_error(WK_ERR_DEVICE, "%s: %s is on a different device than param", op, what);
  return WK_OK;
}

/* Checks the present operands (in[k] NULL: absent or unused) against param,
 * in[0], and describes the result: param's shape and dtype. */
static wk_status check_operands(wk_op *op, wk_tensor *const *in, const char *const *names, int n, wk_meta_out *o) {
  const char *name = wk_op_name(op);
  wk_dtype dp = wk_tensor_dtype(in[0]);
  if (!wk_dtype_is_floating(dp))
    return wk_error(WK_ERR_DTYPE, "%s: param must be floating point, got %s", name, wk_dtype_name(dp));
  for (int k = 1; k < n; k++) {
    wk_status s = in[k] ? check_like(name, names[k], in[0], in[k]) : WK_OK;
    if (s) return s;
  }
  o->dtype = dp;
  o->ndim = wk_tensor_dim(in[0]);
  memcpy(o->sizes, wk_tensor_sizes(in[0]), sizeof(int64_t) * (size_t)o->ndim);
  return WK_OK;
}

static wk_status step_at_least_one(wk_op *op, double step) {
  if (!(step >= 1))
    return wk_error(WK_ERR_INVALID_ARG, "%s: step must be >= 1 (the count after this update), got %g",
                    wk_op_name(op), step);
  return WK_OK;
}

#define OPT_T(n) (args[n].tag == WK_V_NONE ? (wk_tensor *)0 : args[n].u.t)

static const char *const sgd_names[] = {"param", "grad", "momentum_buffer"};
static const char *const adam_names[] = {"param", "grad", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
static const char *const rmsprop_names[] = {"param", "grad", "square_avg", "grad_avg", "momentum_buffer"};
static const char *const adagrad_names[] = {"param", "grad", "state_sum"};

static wk_status meta_sgd(wk_op *op, const wk_value *args, wk_meta_out *o) {
  double momentum = args[4].u.f;
  wk_tensor *in[3] = {args[0].u.t, args[1].u.t, OPT_T(2)};
  if (momentum != 0 && !in[2])
    return wk_error(WK_ERR_INVALID_ARG, "%s: momentum %g needs a momentum_buffer", wk_op_name(op), momentum);
  if (momentum == 0) in[2] = NULL; /* the buffer is not touched without momentum */
  return check_operands(op, in, sgd_names, 3, o);
}

static wk_status meta_adam(wk_op *op, const wk_value *args, wk_meta_out *o) {
  bool amsgrad = args[11].u.b;
  wk_tensor *in[5] = {args[0].u.t, args[1].u.t, args[2].u.t, args[3].u.t, OPT_T(4)};
  wk_status s = step_at_least_one(op, args[5].u.f);
  if (s) return s;
  if (amsgrad && !in[4]) return wk_error(WK_ERR_INVALID_ARG, "%s: amsgrad needs a max_exp_avg_sq", wk_op_name(op));
  if (!amsgrad) in[4] = NULL;
  return check_operands(op, in, adam_names, 5, o);
}

static wk_status meta_rmsprop(wk_op *op, const wk_value *args, wk_meta_out *o) {
  double momentum = args[9].u.f;
  bool centered = args[10].u.b;
  wk_tensor *in[5] = {args[0].u.t, args[1].u.t, args[2].u.t, OPT_T(3), OPT_T(4)};
  if (centered && !in[3]) return wk_error(WK_ERR_INVALID_ARG, "%s: centered needs a grad_avg", wk_op_name(op));
  if (momentum > 0 && !in[4])
    return wk_error(WK_ERR_INVALID_ARG, "%s: momentum %g needs a momentum_buffer", wk_op_name(op), momentum);
  if (!centered) in[3] = NULL;
  if (!(momentum > 0)) in[4] = NULL;
  return check_operands(op, in, rmsprop_names, 5, o);
}

static wk_status meta_adagrad(wk_op *op, const wk_value *args, wk_meta_out *o) {
  wk_tensor *in[3] = {args[0].u.t, args[1].u.t, args[2].u.t};
  wk_status s = step_at_least_one(op, args[3].u.f);
  return s ? s : check_operands(op, in, adagrad_names, 3, o);
}

/* ---- kernels ---- */
/* Collects the present operands (param first; checked by the meta function).
 * idx[k] receives operand k's position in ts, or -1 when it is absent. */
static void gather(wk_tensor *const *in, int n, wk_tensor **ts, int *nts, int *idx, wk_dtype *dts,
                   wk_dtype *uniform) {
  *nts = 0;
  *uniform = wk_tensor_dtype(in[0]);
  for (int k = 0; k < n; k++) {
    idx[k] = -1;
    dts[k] = *uniform;
    if (!in[k]) continue;
    idx[k] = *nts;
    dts[k] = wk_tensor_dtype(in[k]);
    if (dts[k] != *uniform) *uniform = WK_DTYPE_DEFAULT;
    ts[(*nts)++] = in[k];
  }
}

static void bump(wk_tensor *const *ts, int n) {
  for (int k = 0; k < n; k++)
    if (ts[k]) wk_tensor_bump_version(ts[k]);
}

/* Pointer of operand k in the current chunk (a local dummy when absent, never
 * read) and its stride. */
#define OPND(k) (c->idx[k] >= 0 ? data[c->idx[k]] : (char *)&dummy)
#define STEP(k) (c->idx[k] >= 0 ? strides[c->idx[k]] : 0)

/* ---- SGD ---- */
typedef struct {
  double lr, momentum, dampening, wd;
  bool nesterov, maximize, is_new;
  int idx[3];
  wk_dtype dt[3], uniform;
} sgd_ctx;

static inline __attribute__((always_inline)) void sgd_run(const sgd_ctx *c, char **data, const int64_t *strides,
                                                          int64_t n, wk_dtype dp, wk_dtype dg, wk_dtype db) {
  double dummy = 0;
  char *pp = OPND(0), *pg = OPND(1), *pb = OPND(2);
  int64_t sp = STEP(0), sg = STEP(1), sb = STEP(2);
  const double wd = rnd(c->wd, dp), mom = rnd(c->momentum, dp), damp1 = rnd(1 - c->dampening, dp),
               neglr = rnd(-c->lr, dp);
  for (int64_t i = 0; i < n; i++, pp += sp, pg += sg, pb += sb) {
    double p = wk_load_f64(pp, dp), g = wk_load_f64(pg, dg);
    if (c->maximize) g = -g;
    if (c->wd != 0) g = rnd(g + wd * p, dp);
    if (c->momentum != 0) {
      double b = c->is_new ? g : rnd(rnd(wk_load_f64(pb, db) * mom, dp) + damp1 * g, dp);
      wk_store_f64(pb, db, b);
      b = wk_load_f64(pb, db);
      g = c->nesterov ? rnd(g + mom * b, dp) : b;
    }
    wk_store_f64(pp, dp, p + neglr * g);
  }
}

/* The f32 contiguous case with momentum (every parameter of an ordinary SGD
 * run after the first step), the same arithmetic as sgd_run's, as a loop the
 * compiler vectorises (-fopenmp-simd): scalar, the update was ~18% of a small
 * MLP's training step. Returns false for the cases it does not cover. */
/* The step of every f32 parameter with momentum: AVX-512, AVX2 and baseline
 * copies picked at load by the CPU (GCC target_clones: one source, no -m flag
 * on the build). fp-contract=off keeps the FMA the wider copies would form
 * out, so every copy rounds as the baseline does and as PyTorch does. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define SGD_CLONES __attribute__((target_clones("avx512f", "avx2", "default"), optimize("fp-contract=off")))
#else
#define SGD_CLONES
#endif
SGD_CLONES static bool sgd_f32_momentum(const sgd_ctx *c, float *restrict pp, const float *restrict pg,
                                        float *restrict pb, int64_t n) {
  if (!pb || c->momentum == 0 || c->is_new || c->nesterov) return false;
  const double wd = (float)c->wd, mom = (float)c->momentum, damp1 = (float)(1 - c->dampening),
               neglr = (float)-c->lr, sign = c->maximize ? -1.0 : 1.0;
  /* two loops, not a branch inside one: branches stop the vectoriser */
  if (c->wd != 0) {
#pragma omp simd
    for (int64_t i = 0; i < n; i++) {
      double p = pp[i], g = (double)(float)(sign * (double)pg[i] + wd * p);
      float b = (float)((double)(float)((double)pb[i] * mom) + damp1 * g);
      pb[i] = b;
      pp[i] = (float)(p + neglr * (double)b);
    }
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; i++) {
      double p = pp[i], g = sign * (double)pg[i];
      float b = (float)((double)(float)((double)pb[i] * mom) + damp1 * g);
      pb[i] = b;
      pp[i] = (float)(p + neglr * (double)b);
    }
  }
  return true;
}

static void sgd_loop(void *vc, char **data, const int64_t *strides, int64_t n) {
  const sgd_ctx *c = vc;
  if (c->uniform == WK_F32 && c->idx[2] >= 0 && strides[0] == 4 && strides[1] == 4 && strides[c->idx[2]] == 4 &&
      sgd_f32_momentum(c, (float *)data[0], (const float *)data[1], (float *)data[c->idx[2]], n))
    return;
  if (c->uniform == WK_F32)
    sgd_run(c, data, strides, n, WK_F32, WK_F32, WK_F32);
  else if (c->uniform == WK_F64)
    sgd_run(c, data, strides, n, WK_F64, WK_F64, WK_F64);
  else
    sgd_run(c, data, strides, n, c->dt[0], c->dt[1], c->dt[2]);
}

static wk_status k_sgd(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *in[3] = {WK_ARG_T(0), WK_ARG_T(1), WK_ARG_OPT_T(2)}, *ts[3];
  sgd_ctx c = {WK_ARG_F(3), WK_ARG_F(4), WK_ARG_F(5), WK_ARG_F(6), WK_ARG_B(7), WK_ARG_B(8), WK_ARG_B(9)};
  if (c.momentum == 0) in[2] = NULL; /* the buffer is not touched without momentum */
  int nts;
  gather(in, 3, ts, &nts, c.idx, c.dt, &c.uniform);
  wk_iter it;
  wk_status s;
  if ((s = wk_iter_init(&it, WK_OPNAME, ts, nts))) return s;
  wk_iter_run(&it, sgd_loop, &c);
  bump(ts, nts);
  outs[0] = WK_VT(in[0]);
  return WK_OK;
}

/* ---- Adam / AdamW ---- */
typedef struct {
  double step, lr, beta1, beta2, eps, wd;
  bool amsgrad, maximize, decoupled;
  int idx[5];
  wk_dtype dt[5], uniform;
} adam_ctx;

static inline __attribute__((always_inline)) void adam_run(const adam_ctx *c, char **data, const int64_t *strides,
                                                           int64_t n, wk_dtype dp, wk_dtype dg, wk_dtype dm,
                                                           wk_dtype dv, wk_dtype dx) {
  double dummy = 0;
  char *pp = OPND(0), *pg = OPND(1), *pm = OPND(2), *pv = OPND(3), *px = OPND(4);
  int64_t sp = STEP(0), sg = STEP(1), sm = STEP(2), sv = STEP(3), sx = STEP(4);
  const double bc1 = 1 - pow(c->beta1, c->step), bc2 = 1 - pow(c->beta2, c->step);
  const double step_size = c->lr / bc1, bc2_sqrt = sqrt(bc2);
  const double wd = rnd(c->wd, dp), decay = rnd(1 - c->lr * c->wd, dp), b1 = rnd(c->beta1, dp), b2 = rnd(c->beta2, dp),
               ob1 = rnd(1 - c->beta1, dp), ob2 = rnd(1 - c->beta2, dp), bc2s = rnd(bc2_sqrt, dp),
               eps = rnd(c->eps, dp), negss = rnd(-step_size, dp);
  for (int64_t i = 0; i < n; i++, pp += sp, pg += sg, pm += sm, pv += sv, px += sx) {
    double p = wk_load_f64(pp, dp), g = wk_load_f64(pg, dg);
    if (c->maximize) g = -g;
    if (c->decoupled)
      p = rnd(p * decay, dp);
    else if (c->wd != 0)
      g = rnd(g + wd * p, dp);
    double m = rnd(rnd(wk_load_f64(pm, dm) * b1, dp) + ob1 * g, dp);
    double v = rnd(rnd(wk_load_f64(pv, dv) * b2, dp) + rnd(rnd(ob2 * g, dp) * g, dp), dp);
    wk_store_f64(pm, dm, m);
    wk_store_f64(pv, dv, v);
    m = wk_load_f64(pm, dm);
    v = wk_load_f64(pv, dv);
    if (c->amsgrad) {
      double x = wk_load_f64(px, dx);
      x = (v != v || x != x) ? NAN : v > x ? v : x; /* torch.maximum propagates NaN */
      wk_store_f64(px, dx, x);
      v = wk_load_f64(px, dx);
    }
    double denom = rnd(rnd(rnd(sqrt(v), dp) / bc2s, dp) + eps, dp);
    wk_store_f64(pp, dp, p + rnd(rnd(negss * m, dp) / denom, dp));
  }
}

static void adam_loop(void *vc, char **data, const int64_t *strides, int64_t n) {
  const adam_ctx *c = vc;
  if (c->uniform == WK_F32)
    adam_run(c, data, strides, n, WK_F32, WK_F32, WK_F32, WK_F32, WK_F32);
  else if (c->uniform == WK_F64)
    adam_run(c, data, strides, n, WK_F64, WK_F64, WK_F64, WK_F64, WK_F64);
  else
    adam_run(c, data, strides, n, c->dt[0], c->dt[1], c->dt[2], c->dt[3], c->dt[4]);
}

static wk_status k_adam(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *in[5] = {WK_ARG_T(0), WK_ARG_T(1), WK_ARG_T(2), WK_ARG_T(3), WK_ARG_OPT_T(4)}, *ts[5];
  adam_ctx c = {WK_ARG_F(5),  WK_ARG_F(6),  WK_ARG_F(7),  WK_ARG_F(8), WK_ARG_F(9),
                WK_ARG_F(10), WK_ARG_B(11), WK_ARG_B(12), WK_ARG_B(13)};
  if (!c.amsgrad) in[4] = NULL;
  int nts;
  gather(in, 5, ts, &nts, c.idx, c.dt, &c.uniform);
  wk_iter it;
  wk_status s;
  if ((s = wk_iter_init(&it, WK_OPNAME, ts, nts))) return s;
  wk_iter_run(&it, adam_loop, &c);
  bump(ts, nts);
  outs[0] = WK_VT(in[0]);
  return WK_OK;
}

/* ---- RMSprop ---- */
typedef struct {
  double lr, alpha, eps, wd, momentum;
  bool centered, maximize;
  int idx[5];
  wk_dtype dt[5], uniform;
} rmsprop_ctx;

static inline __attribute__((always_inline)) void rmsprop_run(const rmsprop_ctx *c, char **data, const int64_t *strides,
                                                              int64_t n, wk_dtype dp, wk_dtype dg, wk_dtype ds,
                                                              wk_dtype da, wk_dtype db) {
  double dummy = 0;
  char *pp = OPND(0), *pg = OPND(1), *ps = OPND(2), *pa = OPND(3), *pb = OPND(4);
  int64_t sp = STEP(0), sg = STEP(1), ss = STEP(2), sa = STEP(3), sb = STEP(4);
  const double wd = rnd(c->wd, dp), al = rnd(c->alpha, dp), oal = rnd(1 - c->alpha, dp), eps = rnd(c->eps, dp),
               mom = rnd(c->momentum, dp), neglr = rnd(-c->lr, dp);
  for (int64_t i = 0; i < n; i++, pp += sp, pg += sg, ps += ss, pa += sa, pb += sb) {
    double p = wk_load_f64(pp, dp), g = wk_load_f64(pg, dg);
    if (c->maximize) g = -g;
    if (c->wd != 0) g = rnd(g + wd * p, dp);
    double sq = rnd(rnd(wk_load_f64(ps, ds) * al, dp) + rnd(rnd(oal * g, dp) * g, dp), dp);
    wk_store_f64(ps, ds, sq);
    sq = wk_load_f64(ps, ds);
    double avg;
    if (c->centered) {
      double ga = rnd(rnd(wk_load_f64(pa, da) * al, dp) + oal * g, dp);
      wk_store_f64(pa, da, ga);
      ga = wk_load_f64(pa, da);
      avg = rnd(sqrt(rnd(sq + rnd(-ga * ga, dp), dp)), dp);
    } else {
      avg = rnd(sqrt(sq), dp);
    }
    avg = rnd(avg + eps, dp);
    if (c->momentum > 0) {
      double b = rnd(rnd(wk_load_f64(pb, db) * mom, dp) + rnd(g / avg, dp), dp);
      wk_store_f64(pb, db, b);
      b = wk_load_f64(pb, db);
      wk_store_f64(pp, dp, p + neglr * b);
    } else {
      wk_store_f64(pp, dp, p + rnd(rnd(neglr * g, dp) / avg, dp));
    }
  }
}

static void rmsprop_loop(void *vc, char **data, const int64_t *strides, int64_t n) {
  const rmsprop_ctx *c = vc;
  if (c->uniform == WK_F32)
    rmsprop_run(c, data, strides, n, WK_F32, WK_F32, WK_F32, WK_F32, WK_F32);
  else if (c->uniform == WK_F64)
    rmsprop_run(c, data, strides, n, WK_F64, WK_F64, WK_F64, WK_F64, WK_F64);
  else
    rmsprop_run(c, data, strides, n, c->dt[0], c->dt[1], c->dt[2], c->dt[3], c->dt[4]);
}

static wk_status k_rmsprop(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *in[5] = {WK_ARG_T(0), WK_ARG_T(1), WK_ARG_T(2), WK_ARG_OPT_T(3), WK_ARG_OPT_T(4)}, *ts[5];
  rmsprop_ctx c = {WK_ARG_F(5), WK_ARG_F(6), WK_ARG_F(7), WK_ARG_F(8), WK_ARG_F(9), WK_ARG_B(10), WK_ARG_B(11)};
  if (!c.centered) in[3] = NULL;
  if (!(c.momentum > 0)) in[4] = NULL;
  int nts;
  gather(in, 5, ts, &nts, c.idx, c.dt, &c.uniform);
  wk_iter it;
  wk_status s;
  if ((s = wk_iter_init(&it, WK_OPNAME, ts, nts))) return s;
  wk_iter_run(&it, rmsprop_loop, &c);
  bump(ts, nts);
  outs[0] = WK_VT(in[0]);
  return WK_OK;
}

/* ---- Adagrad ---- */
typedef struct {
  double step, lr, lr_decay, wd, eps;
  bool maximize;
  int idx[3];
  wk_dtype dt[3], uniform;
} adagrad_ctx;

static inline __attribute__((always_inline)) void adagrad_run(const adagrad_ctx *c, char **data, const int64_t *strides,
                                                              int64_t n, wk_dtype dp, wk_dtype dg, wk_dtype ds) {
  double dummy = 0;
  char *pp = OPND(0), *pg = OPND(1), *ps = OPND(2);
  int64_t sp = STEP(0), sg = STEP(1), ss = STEP(2);
  const double clr = c->lr / (1 + (c->step - 1) * c->lr_decay);
  const double wd = rnd(c->wd, dp), eps = rnd(c->eps, dp), negclr = rnd(-clr, dp);
  for (int64_t i = 0; i < n; i++, pp += sp, pg += sg, ps += ss) {
    double p = wk_load_f64(pp, dp), g = wk_load_f64(pg, dg);
    if (c->maximize) g = -g;
    if (c->wd != 0) g = rnd(g + wd * p, dp);
    double sum = rnd(wk_load_f64(ps, ds) + rnd(g * g, dp), dp);
    wk_store_f64(ps, ds, sum);
    sum = wk_load_f64(ps, ds);
    double std = rnd(rnd(sqrt(sum), dp) + eps, dp);
    wk_store_f64(pp, dp, p + rnd(rnd(negclr * g, dp) / std, dp));
  }
}

static void adagrad_loop(void *vc, char **data, const int64_t *strides, int64_t n) {
  const adagrad_ctx *c = vc;
  if (c->uniform == WK_F32)
    adagrad_run(c, data, strides, n, WK_F32, WK_F32, WK_F32);
  else if (c->uniform == WK_F64)
    adagrad_run(c, data, strides, n, WK_F64, WK_F64, WK_F64);
  else
    adagrad_run(c, data, strides, n, c->dt[0], c->dt[1], c->dt[2]);
}

static wk_status k_adagrad(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *in[3] = {WK_ARG_T(0), WK_ARG_T(1), WK_ARG_T(2)}, *ts[3];
  adagrad_ctx c = {WK_ARG_F(3), WK_ARG_F(4), WK_ARG_F(5), WK_ARG_F(6), WK_ARG_F(7), WK_ARG_B(8)};
  int nts;
  gather(in, 3, ts, &nts, c.idx, c.dt, &c.uniform);
  wk_iter it;
  wk_status s;
  if ((s = wk_iter_init(&it, WK_OPNAME, ts, nts))) return s;
  wk_iter_run(&it, adagrad_loop, &c);
  bump(ts, nts);
  outs[0] = WK_VT(in[0]);
  return WK_OK;
}

/* ---- registration: each op with its meta function (wk_op_set_meta) and its cpu kernel ---- */
static wk_status declare(wk_op **slot, const char *schema, wk_meta_fn meta, wk_kernel_fn fn, const char *op) {
  *slot = wk_op_declare(schema, WK_TAG_INPLACE | WK_TAG_NONDIFF);
  if (!*slot) return wk_last_error();
  wk_status s = wk_op_set_meta(*slot, meta);
  if (s) return s;
  wk_kernel_desc d = {sizeof d, op, WK_DEVICE_CPU, WK_PRIORITY_REFERENCE, fn, NULL, NULL, "optim.cpu"};
  return wk_kernel_register(&d);
}

wk_status optim_register_ops(void) {
  wk_status s;
  if ((s = declare(&optim_op_sgd, SGD_SCHEMA, meta_sgd, k_sgd, "optim.sgd_step_"))) return s;
  if ((s = declare(&optim_op_adam, ADAM_SCHEMA, meta_adam, k_adam, "optim.adam_step_"))) return s;
  if ((s = declare(&optim_op_rmsprop, RMSPROP_SCHEMA, meta_rmsprop, k_rmsprop, "optim.rmsprop_step_"))) return s;
  return declare(&optim_op_adagrad, ADAGRAD_SCHEMA, meta_adagrad, k_adagrad, "optim.adagrad_step_");
}
