/* swiglu: an out-of-tree Wick operator plugin, written only against the SDK.
 *
 * It shows the two things third parties do with operator plugins:
 *
 *   1. bring a NEW op: custom.swiglu(x, gate) = x * silu(gate), with
 *      - a cpu kernel that is a plain C function (registered unboxed: the core
 *        builds the call from the schema with libffi),
 *      - a derivative written with ops, so autograd (and gradcheck) work and
 *        any backend that implements those ops gets gradients for free;
 *
 *   2. drop a FASTER kernel into an EXISTING op: a boxed `relu` kernel for
 *      contiguous f32/f64 tensors at WK_PRIORITY_OPTIMIZED. Its supports()
 *      predicate declines everything else, so the reference cpu kernel still
 *      handles strided inputs, other dtypes, in-place and out= variants.
 *
 * Build:  make                  (uses only `pkg-config --cflags --libs wick-sdk`)
 * Check:  wick opcheck --plugin ./swiglu.so custom.swiglu
 *         WICK_PLUGIN_PATH=$PWD wick opcheck relu
 * The plugin never links to libwick: <wick/sdk.h> routes every wk_* call
 * through the host table the core hands over at load time. */
#include <wick/sdk.h>
#include <wick/sdk/kernel.h> /* wk_iter, wk_broadcast_shapes, wk_compute_dtype, WK_ARG_* */

#define SWIGLU "custom.swiglu"

/* ==== 1. custom.swiglu ============================================================== */

/* Inner loops for wk_iter: operand 0 is the output, 1 is x, 2 is gate; strides
 * are in bytes and may be 0 (broadcast) or anything else (strided views). */
#define SWIGLU_LOOP(NAME, T, EXP)                                                   \
  static void NAME(void *ctx, char **data, const int64_t *strides, int64_t n) {     \
    (void)ctx;                                                                      \
    for (int64_t i = 0; i < n; i++) {                                               \
      const T x = *(const T *)(data[1] + i * strides[1]);                          \
      const T g = *(const T *)(data[2] + i * strides[2]);                          \
      *(T *)(data[0] + i * strides[0]) = x * (g / ((T)1 + EXP(-g)));                \
    }                                                                               \
  }
SWIGLU_LOOP(swiglu_loop_f32, float, expf)
SWIGLU_LOOP(swiglu_loop_f64, double, exp)

/* The cpu kernel, with the natural signature of its schema
 * "custom.swiglu(Tensor x, Tensor gate) -> Tensor": tensors are borrowed; it
 * returns a new reference, or NULL after recording an error with wk_error().
 * Kernels run inside the dispatcher where no scope owns anything, so every
 * tensor created here is released explicitly. */
static wk_tensor *swiglu_cpu(wk_tensor *x, wk_tensor *gate) {
  /* Result dtype by PyTorch's promotion rules (0-dim tensors only raise the
   * category, like Python scalars). */
  const wk_value both[2] = {WK_VT(x), WK_VT(gate)};
  wk_dtype rt = wk_result_type(both, 2);
  if (!wk_dtype_is_floating(rt)) {
    wk_error(WK_ERR_DTYPE, SWIGLU "(): expected floating-point tensors, got x of dtype %s and gate of dtype %s",
             wk_dtype_name(wk_tensor_dtype(x)), wk_dtype_name(wk_tensor_dtype(gate)));
    return NULL;
  }
  /* Broadcast shape (NumPy/PyTorch rules); the helper names both shapes on error. */
  wk_tensor *const ins[2] = {x, gate};
  int64_t shape[WK_MAX_DIMS];
  int nd = 0;
  if (wk_broadcast_shapes(SWIGLU "()", ins, 2, shape, &nd) != WK_OK) return NULL;

  /* Compute in f32 or f64 (f16/bf16 are upcast to f32 and the result cast back). */
  wk_dtype cd = wk_compute_dtype(rt);
  wk_tensor *xc = wk_kernel_cast(x, cd), *gc = wk_kernel_cast(gate, cd);
  wk_tensor *out = xc && gc ? wk_empty(shape, nd, (wk_options){.dtype = cd}) : NULL;
  wk_iter it;
  wk_tensor *const ops[3] = {out, xc, gc};
  if (out && wk_iter_init(&it, SWIGLU "()", ops, 3) == WK_OK) {
    /* The iterator broadcasts and walks any strides (no wk_contiguous needed)
     * and splits large work over the shared thread pool. */
    wk_iter_run(&it, cd == WK_F64 ? swiglu_loop_f64 : swiglu_loop_f32, NULL);
  } else {
    wk_release(out);
    out = NULL;
  }
  wk_release(xc);
  wk_release(gc);
  if (out && cd != rt) { /* f16 / bf16 */
    wk_tensor *r = wk_to_dtype(out, rt);
    wk_release(out);
    out = r;
  }
  return out;
}

/* d/dx    = silu(g)                     = g * s
 * d/dgate = x * s * (1 + g * (1 - s))   with s = sigmoid(g)
 * Written with ops: the engine runs this inside a scope, so temporaries may be
 * left to it; wk_backward_set_grad borrows the gradient it is given. Each op
 * returns NULL on error and passes a NULL argument on (keeping the first
 * error), so the chain needs one check at the end. Gradients of broadcast
 * arguments may keep the broadcast shape: the engine sums them back. */
static wk_status swiglu_backward(wk_backward_ctx *c, wk_tensor *const *grad_outputs, int noutputs) {
  (void)noutputs;
  wk_tensor *gy = grad_outputs[0];
  wk_tensor *x = wk_backward_saved_arg(c, 0), *g = wk_backward_saved_arg(c, 1);
  if (!x || !g) return wk_last_error();
  wk_tensor *s = wk_sigmoid(g);
  if (wk_backward_needs(c, 0)) {
    wk_tensor *gx = wk_mul(gy, wk_mul(g, s));
    if (!gx) return wk_last_error();
    wk_status st = wk_backward_set_grad(c, 0, gx);
    if (st) return st;
  }
  if (wk_backward_needs(c, 1)) {
    wk_tensor *one_minus_s = wk_add_scalar(wk_neg(s), 1.0);
    wk_tensor *inner = wk_add_scalar(wk_mul(g, one_minus_s), 1.0);
    wk_tensor *gg = wk_mul(wk_mul(gy, x), wk_mul(s, inner));
    if (!gg) return wk_last_error();
    wk_status st = wk_backward_set_grad(c, 1, gg);
    if (st) return st;
  }
  return WK_OK;
}

/* ==== 2. a faster relu for contiguous f32 / f64 ========================================= */

typedef struct {
  const void *x;
  void *y;
} relu_job;

/* Same expression as the reference kernel (x < 0 ? 0 : x), so the results are
 * bit for bit identical: NaN stays NaN, -0.0 stays -0.0. Written as a flat
 * loop over contiguous memory that the compiler vectorises. */
static void relu_range_f32(void *p, int64_t b, int64_t e) {
  const relu_job *j = p;
  const float *restrict x = j->x;
  float *restrict y = j->y;
  for (int64_t i = b; i < e; i++) y[i] = x[i] < 0 ? 0 : x[i];
}
static void relu_range_f64(void *p, int64_t b, int64_t e) {
  const relu_job *j = p;
  const double *restrict x = j->x;
  double *restrict y = j->y;
  for (int64_t i = b; i < e; i++) y[i] = x[i] < 0 ? 0 : x[i];
}

/* Accept only what the fast path handles; the dispatcher then tries the next
 * kernel (the reference cpu one) for everything else. */
static bool relu_fast_supports(const wk_kernel_ctx *ctx, const wk_value *args) {
  (void)ctx;
  wk_tensor *x = WK_ARG_T(0);
  wk_dtype dt = wk_tensor_dtype(x);
  return (dt == WK_F32 || dt == WK_F64) && wk_tensor_is_contiguous(x);
}

/* A boxed kernel for "relu(Tensor self) -> Tensor": args are normalised to the
 * schema; outs[0] receives a new reference. Conformance tools call kernels
 * directly, bypassing supports() (wk_op_call_kernel), so the kernel still
 * copes with strided inputs and names what it refuses. */
static wk_status relu_fast(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *self = WK_ARG_T(0);
  wk_dtype dt = wk_tensor_dtype(self);
  if (dt != WK_F32 && dt != WK_F64)
    return wk_error(WK_ERR_UNSUPPORTED, "%s(): kernel 'swiglu.relu_fast' handles f32 and f64, not %s", WK_OPNAME,
                    wk_dtype_name(dt));
  wk_tensor *x = wk_contiguous(self); /* a new reference; no copy when already contiguous */
  wk_tensor *y = x ? wk_empty_like(x, (wk_options){0}) : NULL;
  if (!y) {
    wk_release(x);
    return wk_last_error();
  }
  relu_job job = {wk_tensor_data(x), wk_tensor_data(y)};
  void (*range)(void *, int64_t, int64_t) = dt == WK_F32 ? relu_range_f32 : relu_range_f64;
  int64_t n = wk_tensor_numel(y);
  if (n >= WK_ITER_GRAIN)
    wk_parallel_for(0, n, WK_ITER_GRAIN, range, &job); /* the shared intra-op pool */
  else
    range(&job, 0, n);
  wk_release(x);
  outs[0] = WK_VT(y);
  return WK_OK;
}

/* ==== the plugin ============================================================================ */

static wk_status swiglu_init(void) {
  /* A new op: schema first. Tags tell tools what it is (pointwise here). */
  if (!wk_op_declare(SWIGLU "(Tensor x, Tensor gate) -> Tensor", WK_TAG_POINTWISE)) return wk_last_error();
  wk_status s = wk_kernel_register_unboxed(SWIGLU, WK_DEVICE_CPU, WK_PRIORITY_REFERENCE, (void (*)(void))swiglu_cpu,
                                           "swiglu.cpu");
  /* Keep Tensor arguments 0 (x) and 1 (gate) for the backward pass. */
  if (!s) s = wk_op_register_derivative(SWIGLU, "SwigluBackward0", swiglu_backward, (1u << 0) | (1u << 1), 0);

  /* A faster kernel for an existing op, above the reference cpu kernel. */
  if (!s)
    s = wk_kernel_register(&(wk_kernel_desc){
        .struct_size = sizeof(wk_kernel_desc),
        .op = "relu",
        .device_type = WK_DEVICE_CPU,
        .priority = WK_PRIORITY_OPTIMIZED,
        .fn = relu_fast,
        .supports = relu_fast_supports,
        .name = "swiglu.relu_fast",
    });
  /* On failure the core lists the plugin as failed with our message and
   * removes whatever we registered. */
  return s;
}

WK_PLUGIN_DEFINE("swiglu", "1.0.0", "example: custom.swiglu op and a contiguous f32/f64 relu kernel", swiglu_init,
                 NULL)
