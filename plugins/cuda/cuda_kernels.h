/* cuda plugin: launchers of the pointwise, reduction, softmax, indexing, RNG
 * and optimizer-update families (extern "C", defined in the .cu files, called
 * from the matching *_ops.c). Each returns 0 or the wk_status of an error
 * already recorded; n == 0 launches nothing. Outputs are contiguous unless a
 * layout is given. Compute dtypes are CUDA_F32, CUDA_F64, CUDA_I64 or
 * CUDA_BOOL: the host converts operands first, as the cpu plugin does. */
#ifndef WICK_CUDA_KERNELS_H
#define WICK_CUDA_KERNELS_H

#include "cuda_plugin.h"
#include <wick/sdk/binary.h> /* the two-input pointwise ops' numbering */
#include <wick/sdk/unary.h>  /* the one-input pointwise ops' numbering */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- elementwise.cu: binary ops, numbered by <wick/sdk/binary.h> (WK_BOP_add ...) ---- */
/* out = a op b over n elements; a and b of dtype ct laid out over out's shape;
 * b == NULL takes the scalar (bf for floating ct, bi otherwise). Arithmetic
 * writes ct (F32, F64 or I64), comparisons and logical ops write bool. */
int cuda_launch_binary(int op, int ct, void *out, const void *a, cuda_strided la, const void *b, cuda_strided lb,
                       double bf, int64_t bi, double alpha, int64_t alpha_i, int64_t n, cudaStream_t st);
/* out (element size es) = cond ? a : b; cond bool; a or b NULL take the
 * bit patterns abits / bbits (already in the result dtype). */
int cuda_launch_where(int es, void *out, const void *cond, cuda_strided lc, const void *a, cuda_strided la,
                      uint64_t abits, const void *b, cuda_strided lb, uint64_t bbits, int64_t n, cudaStream_t st);
/* gelu_backward: out = g * d gelu(x)/dx (ct F32 or F64); tanh_approx selects the tanh form. */
int cuda_launch_gelu_backward(int ct, void *out, const void *g, cuda_strided lg, const void *x, cuda_strided lx,
                              int tanh_approx, int64_t n, cudaStream_t st);

/* threshold_backward / sigmoid_backward / tanh_backward: out = f(g, x) (ct F32 or F64). */
enum { CUDA_PB_THRESHOLD, CUDA_PB_SIGMOID, CUDA_PB_TANH };
int cuda_launch_pointwise_backward(int kind, int ct, void *out, const void *g, cuda_strided lg, const void *x,
                                   cuda_strided lx, double threshold, int64_t n, cudaStream_t st);

/* ---- unary.cu ---- */
/* Ops are numbered by <wick/sdk/unary.h> (WK_UOP_neg ...), as on every backend. */
/* out = op(a): ct F32/F64/I64; predicates (logical_not, isnan, isinf) write
 * bool. p, q, r: leaky slope | clamp bounds | nan_to_num values | fill;
 * ilo, ihi: integer clamp bounds. */
int cuda_launch_unary(int op, int ct, void *out, const void *a, cuda_strided la, double p, double q, double r,
                      int64_t ilo, int64_t ihi, int64_t n, cudaStream_t st);

/* ---- reduce.cu: rows of a contiguous [rows, len] matrix ---- */
enum {
  CUDA_R_SUM,
  CUDA_R_PROD,
  CUDA_R_MAX,
  CUDA_R_MIN,
  CUDA_R_ARGMAX,
  CUDA_R_ARGMIN,
  CUDA_R_MEAN,
  CUDA_R_VAR,
  CUDA_R_NORM,
  CUDA_R_LOGSUMEXP,
  CUDA_R_ALL,
  CUDA_R_ANY
};
/* x of dtype ct (F32, F64, I64 or BOOL); one block per row, a fixed-shape
 * tree (deterministic, no atomics). Floating results go to fout (double per
 * row: sum, prod, max/min values, mean, var with `p` = correction and q = 1
 * for std, norm of order p, logsumexp); integer results (sums and products
 * of I64, max/min of I64, all/any as 0/1) to iout (int64 per row); argmax/
 * argmin and the index of max/min to idx (may be NULL). */
int cuda_launch_reduce(int op, int ct, const void *x, int64_t rows, int64_t len, double p, double q, double *fout,
                       int64_t *iout, int64_t *idx, cudaStream_t st);

/* ---- softmax.cu: x contiguous [outer, C, inner], ct F32 or F64 ---- */
int cuda_launch_softmax(int ct, bool log, void *y, const void *x, int64_t outer, int64_t C, int64_t inner,
                        cudaStream_t st);
/* grad_in from grad_out g and output y (softmax: y*(g - sum g*y); log: g - exp(y)*sum g). */
int cuda_launch_softmax_backward(int ct, bool log, void *gi, const void *g, const void *y, int64_t outer, int64_t C,
                                 int64_t inner, cudaStream_t st);

/* ---- scan.cu: cumsum over the middle dim of contiguous [outer, len, inner] x
 * (I64, or any floating dtype summed in double) into out of dtype odt ---- */
int cuda_launch_cumsum(void *out, int odt, const void *x, int xdt, int64_t outer, int64_t len, int64_t inner,
                       cudaStream_t st);
/* cumprod, logcumsumexp, cummax, cummin (op: WK_SCAN_*, <wick/sdk/scan.h>) over the middle dim of
 * contiguous [outer, len, inner] x, double (is_int: int64), into y of x's dtype and idx (int64; may be NULL). */
int cuda_launch_scan2(int op, void *y, int64_t *idx, const void *x, bool is_int, int64_t outer, int64_t len,
                      int64_t inner, cudaStream_t st);

/* ---- layernorm.cu: rows of contiguous [M, N] (ct F32/F64; w, b may be NULL) ---- */
/* y = (x - mean) * rstd * w + b; mean and rstd (double, [M]) are saved. */
int cuda_launch_layer_norm(int ct, void *y, const void *x, const void *w, const void *b, int64_t M, int64_t N,
                           double eps, double *mean, double *rstd, cudaStream_t st);
/* gi (ct, may be NULL), gw and gb (double [N], may be NULL) from g, x, w and the saved statistics. */
int cuda_launch_layer_norm_backward(int ct, void *gi, double *gw, double *gb, const void *g, const void *x,
                                    const void *w, const double *mean, const double *rstd, int64_t M, int64_t N,
                                    cudaStream_t st);

/* ---- index.cu ---- */
/* out[o, k, i] = x[o, index[k], i] for x contiguous [outer, S, inner] with
 * element size es, index int64 [K]; an index outside [-S, S) sets *bad to
 * 1 + its position (first one seen; device int64). */
int cuda_launch_index_select(int es, void *out, const void *x, const int64_t *index, int64_t outer, int64_t S,
                             int64_t K, int64_t inner, int64_t *bad, cudaStream_t st);
/* gather: out (contiguous, index's shape) = self[..., index[...], ...] along dim. */
int cuda_launch_gather(int es, void *out, const void *self, cuda_strided ls, const int64_t *index, cuda_strided li,
                       int dim, int64_t *bad, int64_t n, cudaStream_t st);
/* scatter / scatter_add into self (strided, ct for add: F32/F64/I64; any es
 * for plain scatter) from src along dim for every element of index. One
 * thread per line of index along dim walks the line in order: deterministic,
 * no atomics. */
int cuda_launch_scatter(bool add, int ct, int es, void *self, cuda_strided lself, const int64_t *index, cuda_strided li,
                        const void *src, cuda_strided lsrc, int dim, int64_t *bad, cudaStream_t st);
/* embedding backward: out [num_weights, D] (ct F32/F64, zeroed here) += g[n, :]
 * for each n with idx[n] != padding_idx; one thread per (column, ...) walks n in
 * order: deterministic. */
int cuda_launch_embedding_backward(int ct, void *out, const void *g, const int64_t *idx, int64_t N, int64_t D,
                                   int64_t num_weights, int64_t padding_idx, int64_t *bad, cudaStream_t st);

/* ---- rng.cu: Philox 4x32-10, element i uses counter offset + i, as the cpu ---- */
enum { CUDA_RNG_UNIFORM, CUDA_RNG_NORMAL, CUDA_RNG_RANDINT, CUDA_RNG_BERN_T, CUDA_RNG_BERN_P };
/* Fills contiguous out (dtype dt) of n elements. a, b: from/to | mean/std |
 * p; low, range: randint; probs (dtype pdt, contiguous): bernoulli. */
int cuda_launch_random(int kind, int dt, void *out, int64_t n, uint64_t seed, uint64_t offset, double a, double b,
                       int64_t low, uint64_t range, const void *probs, int pdt, cudaStream_t st);
/* dropout: mask (bool) = uniform(f64 from r[0], r[1]) >= p, y = x * mask / (1 - p) (x, y of ct F32/F64). */
int cuda_launch_dropout(int ct, void *y, bool *mask, const void *x, int64_t n, double p, uint64_t seed, uint64_t offset,
                        cudaStream_t st);

/* ---- optim_update.cu: fused per-parameter updates (layouts share param's shape) ---- */
enum { CUDA_OPT_SGD, CUDA_OPT_ADAM, CUDA_OPT_RMSPROP, CUDA_OPT_ADAGRAD };
/* The constants are computed on the host exactly as the optim plugin's cpu
 * kernels compute them (rounded to param's dtype); the device repeats the
 * cpu's per-element steps with the same roundings (no FMA contraction).
 *   sgd:     f = wd, momentum, 1 - dampening, -lr;   b = has_wd, has_momentum, nesterov, maximize, is_new
 *   adam:    f = wd, 1 - lr*wd, beta1, beta2, 1 - beta1, 1 - beta2, sqrt(bias2), eps, -step_size;
 *            b = maximize, decoupled, has_wd, amsgrad
 *   rmsprop: f = wd, alpha, 1 - alpha, eps, momentum, -lr; b = maximize, has_wd, centered, has_momentum
 *   adagrad: f = wd, eps, -clr;                    b = maximize, has_wd */
typedef struct cuda_optim_args {
  int kind;
  void *t[5]; /* param, grad, then the op's state buffers in schema order (NULL: absent) */
  int dt[5];
  cuda_strided l[5];
  double f[10];
  bool b[6];
} cuda_optim_args;
int cuda_launch_optim(const cuda_optim_args *a, int64_t n, cudaStream_t st);

/* ---- amp.cu: GradScaler's fused steps (the cpu plugin's amp.c arithmetic) ---- */
/* x (dtype dt, layout l, n elements) *= *inv_scale in place, float math for
 * F32/F16/BF16 and double for F64; *found_inf = 1 when an element is inf or
 * NaN (never reset). inv_scale and found_inf are device pointers. */
int cuda_launch_amp_unscale(int dt, void *x, cuda_strided l, int64_t n, float *found_inf, const float *inv_scale,
                            cudaStream_t st);
/* One thread: PyTorch's _amp_update_scale_ on device scalars. */
int cuda_launch_amp_update_scale(float *scale, int32_t *growth_tracker, const float *found_inf, double growth_factor,
                                 double backoff_factor, int64_t growth_interval, cudaStream_t st);

#ifdef __cplusplus
}
#endif

/* ==== host helpers of the kernel families (kernel_util.c; .c files only) ==== */
#ifndef __CUDACC__
/* How an op delivers its result: functional, in place (self), out=. */
typedef enum { CUDA_FUNCTIONAL = 0, CUDA_INPLACE = 1, CUDA_OUT = 2 } cuda_mode;

/* New contiguous tensor on dev (not scope-owned); NULL with an error. */
wk_tensor *cuda_new(const int64_t *sizes, int ndim, wk_dtype dt, wk_device dev);
/* t (borrowed) on dev in dtype dt: a new reference (t itself when it is
 * already there; cpu 0-dim tensors, which the dispatcher lets through, are
 * copied over). NULL with an error. */
wk_tensor *cuda_operand(wk_tensor *t, wk_dtype dt, wk_device dev);
/* Same, and contiguous. */
wk_tensor *cuda_dense(wk_tensor *t, wk_dtype dt, wk_device dev);
/* Consumes t; returns it converted to dt (NULL for NULL). */
wk_tensor *cuda_cast_own(wk_tensor *t, wk_dtype dt);
/* Delivers result (a new reference, consumed): functional returns it; in
 * place / out= copy it into target and return target (the core's meta
 * function checked target's shape and that the result type casts to it). */
wk_status cuda_deliver(const char *op, cuda_mode mode, wk_tensor *result, wk_tensor *target, wk_value *outs);
/* The current stream of dev. */
static inline cudaStream_t cuda_stream(wk_device dev) {
  return cuda_current_stream(dev.index);
}
/* CUDA_* dtype code of a Wick dtype (the numbers are the ABI's). */
static inline int cuda_dt(wk_dtype dt) {
  return (int)dt;
}
/* A device int64 error slot set to 0 (read back with cuda_read_slot). */
wk_tensor *cuda_slot_new(wk_device dev);
/* gather (index_ops.c) of indices the caller has checked: no read-back. */
wk_tensor *cuda_gather_nocheck(wk_tensor *self, int dim, wk_tensor *index);
/* Reads the slot's value (synchronises the stream); consumes the slot. */
wk_status cuda_slot_take(wk_tensor *slot, int64_t *value);
#endif
#endif
