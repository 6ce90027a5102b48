/* cpu plugin: private declarations shared by its kernel files. Reference
 * kernels for the standard op set on the cpu device: correct for every dtype,
 * strided inputs, broadcasting and type promotion; parallel over the pool. */
#ifndef WICK_CPU_H
#define WICK_CPU_H

#include <string.h>

#include <wick/sdk.h>
#include <wick/sdk/kernel.h>
#include <wick/sdk/kernel_util.h>

#define CPU_HIDDEN __attribute__((visibility("hidden")))

/* One registration function per kernel family (file). */
CPU_HIDDEN wk_status cpu_register_copy(void);
CPU_HIDDEN wk_status cpu_register_factory(void);
CPU_HIDDEN wk_status cpu_register_unary(void);
CPU_HIDDEN wk_status cpu_register_binary(void);
CPU_HIDDEN wk_status cpu_register_reduce(void);
CPU_HIDDEN wk_status cpu_register_scan(void);
CPU_HIDDEN wk_status cpu_register_linalg(void);
CPU_HIDDEN wk_status cpu_register_nn(void);
CPU_HIDDEN wk_status cpu_register_loss(void);
CPU_HIDDEN wk_status cpu_register_conv(void);
CPU_HIDDEN wk_status cpu_register_pool(void);
CPU_HIDDEN wk_status cpu_register_index(void);
CPU_HIDDEN wk_status cpu_register_sort(void);
CPU_HIDDEN wk_status cpu_register_conv_backward(void);
CPU_HIDDEN wk_status cpu_register_nn_backward(void);
CPU_HIDDEN wk_status cpu_register_pointwise_backward(void);
CPU_HIDDEN wk_status cpu_register_attention(void);
CPU_HIDDEN wk_status cpu_register_quantized(void);
CPU_HIDDEN wk_status cpu_register_amp(void);
CPU_HIDDEN wk_status cpu_register_lapack(void);       /* lapack.c (issue 21, engineer A) */
CPU_HIDDEN wk_status cpu_register_index_reduce(void); /* index_reduce.c (issue 21, engineer A) */
CPU_HIDDEN wk_status cpu_register_index_put(void);    /* index_put.c (issue 21's speed leftovers) */
CPU_HIDDEN wk_status cpu_register_interpolate(void);  /* interpolate.c (issue 21's speed leftovers) */

/* Registers a boxed kernel for `op` on the cpu at reference priority; `user`
 * comes back as ctx->user. Fails (with the core's message) on an unknown op. */
CPU_HIDDEN wk_status cpu_reg(const char *op, wk_kernel_fn fn, void *user);
/* cpu_reg of one table row (aux unused): for wk_register_rows. */
CPU_HIDDEN wk_status cpu_reg_row(const wk_kernel_row *row);

/* New contiguous cpu tensor (not scope-owned: kernels run inside the
 * dispatcher). NULL with an error recorded on failure. */
CPU_HIDDEN wk_tensor *cpu_empty(const int64_t *sizes, int ndim, wk_dtype dt);

/* How an elementwise kernel delivers its result. */
typedef enum { CPU_FUNCTIONAL = 0, CPU_INPLACE = 1, CPU_OUT = 2 } cpu_mode;

/* Delivers `result` (a new reference, consumed) for the kernel's mode:
 * functional returns it; in place copies it into `target` (self) and returns
 * target borrowed; out= copies into `target` (out). The core's meta function
 * checked the target's shape and castability (SDK wk_deliver). */
CPU_HIDDEN wk_status cpu_deliver(const char *op, cpu_mode mode, wk_tensor *result, wk_tensor *target,
                                 wk_value *outs);

/* Copies src into dst (same shape after broadcasting src), converting dtypes;
 * both on the cpu. Handles overlap by going through a temporary. */
CPU_HIDDEN wk_status cpu_copy(wk_tensor *dst, wk_tensor *src);

/* True when the tensors' shapes are equal. */
CPU_HIDDEN bool cpu_same_shape(const wk_tensor *a, const wk_tensor *b);

/* ---- helpers shared by the nn and loss kernels (defined in nn.c) ---- */

/* Runs fn over [0, ntasks): on the calling thread when ntasks * per_task
 * elements are few, else split over the pool. */
CPU_HIDDEN void cpu_par(int64_t ntasks, int64_t per_task, void (*fn)(void *ctx, int64_t b, int64_t e), void *ctx);

/* The dtype a floating kernel computes in: f64 for f64, else f32. */
CPU_HIDDEN wk_dtype cpu_fcompute(wk_dtype dt);

/* t (borrowed) converted to dt and made contiguous: a new reference, NULL on
 * error. */
CPU_HIDDEN wk_tensor *cpu_prep(wk_tensor *t, wk_dtype dt);

/* New contiguous tensor of dtype dt and shape sizes[ndim] holding the n
 * doubles v: a new reference, NULL on error. */
CPU_HIDDEN wk_tensor *cpu_from_doubles(const double *v, int64_t n, const int64_t *sizes, int ndim, wk_dtype dt);

/* (log_)softmax over dimension d of a contiguous f32/f64 tensor: a new
 * tensor of the same shape and dtype. */
CPU_HIDDEN wk_tensor *cpu_softmax_cd(wk_tensor *x, int d, bool log);

/* ---- helpers shared by several kernel families (defined in common.c) ---- */

/* wk_parallel_for grain for items that each cost work_per_item elements. */
CPU_HIDDEN int64_t cpu_grain_for(int64_t work_per_item);

/* Size and stride of dimension d with 0-dim tensors seen as [1] (PyTorch's
 * ensure_nonempty). */
CPU_HIDDEN int64_t cpu_nsize(const wk_tensor *t, int d);
CPU_HIDDEN int64_t cpu_nstride(const wk_tensor *t, int d);

/* Copies one element of es bytes (1, 2, 4 or 8); inline because it runs per
 * element. */
static inline void cpu_copy_elem(char *d, const char *s, size_t es) {
  switch (es) {
    case 1: memcpy(d, s, 1); break;
    case 2: memcpy(d, s, 2); break;
    case 4: memcpy(d, s, 4); break;
    default: memcpy(d, s, 8); break;
  }
}


/* Pooling geometry shared by the forward and backward kernels (pool.c): reads
 * kernel_size, stride (empty: the kernel size) and padding at kv[0..2], which
 * the op's meta function has already checked. */
CPU_HIDDEN void cpu_pool_params(const wk_value *kv, int64_t k[2], int64_t s[2], int64_t p[2]);

/* cpu_empty in the memory format elementwise results take (PyTorch's rule):
 * channels_last when the first of ts[0..n) (NULLs skipped) that has the
 * result's sizes is channels-last, else row-major (common.c). */
CPU_HIDDEN wk_tensor *cpu_empty_like_format(const int64_t *sizes, int ndim, wk_dtype dt, wk_tensor *const *ts, int n);
/* True when a and b have one shape and one dense layout (both row-major, or
 * both channels_last with the same strides): their elements pair up in memory
 * order, so a flat loop over wk_tensor_numel elements computes them. */
CPU_HIDDEN bool cpu_same_dense_layout(const wk_tensor *a, const wk_tensor *b);
/* max_pool2d_with_indices (kernel k, stride s, padding p, dilation d, output
 * [oh, ow] = o) and its backward on channels_last f32 input, with
 * channels-last results (pool_nhwc.c): 0 when the call is not that case, 1
 * with outs set, -1 with an error recorded. */
CPU_HIDDEN int cpu_maxpool_nhwc(wk_tensor *x, const int64_t k[2], const int64_t s[2], const int64_t p[2],
                                const int64_t d[2], const int64_t o[2], wk_value *outs);
CPU_HIDDEN int cpu_maxpool_nhwc_backward(wk_tensor *go, wk_tensor *self, wk_tensor *indices, wk_value *outs);

#endif
