/* cpu plugin: private declarations shared by its kernel files. Reference
 * kernels for the standard op set on the cpu device: correct for every dtype,
 * strided inputs, broadcasting and type promotion; parallel over the pool. */
#ifndef WICK_CPU_H
#define WICK_CPU_H

#include <wick/sdk.h>
#include <wick/sdk/kernel.h>

#define CPU_HIDDEN __attribute__((visibility("hidden")))

/* One registration function per kernel family (file). */
CPU_HIDDEN wk_status cpu_register_copy(void);
CPU_HIDDEN wk_status cpu_register_factory(void);
CPU_HIDDEN wk_status cpu_register_unary(void);
CPU_HIDDEN wk_status cpu_register_binary(void);
CPU_HIDDEN wk_status cpu_register_reduce(void);
CPU_HIDDEN wk_status cpu_register_linalg(void);
CPU_HIDDEN wk_status cpu_register_nn(void);
CPU_HIDDEN wk_status cpu_register_conv(void);
CPU_HIDDEN wk_status cpu_register_index(void);
CPU_HIDDEN wk_status cpu_register_conv_backward(void);
CPU_HIDDEN wk_status cpu_register_nn_backward(void);
CPU_HIDDEN wk_status cpu_register_pointwise_backward(void);

/* Registers a boxed kernel for `op` on the cpu at reference priority; `user`
 * comes back as ctx->user. Fails (with the core's message) on an unknown op. */
CPU_HIDDEN wk_status cpu_reg(const char *op, wk_kernel_fn fn, void *user);

/* New contiguous cpu tensor (not scope-owned: kernels run inside the
 * dispatcher). NULL with an error recorded on failure. */
CPU_HIDDEN wk_tensor *cpu_empty(const int64_t *sizes, int ndim, wk_dtype dt);

/* PyTorch's canCast: floating -> integral and non-bool -> bool are refused. */
CPU_HIDDEN bool cpu_can_cast(wk_dtype from, wk_dtype to);

/* How an elementwise kernel delivers its result. */
typedef enum { CPU_FUNCTIONAL = 0, CPU_INPLACE = 1, CPU_OUT = 2 } cpu_mode;

/* Delivers `result` (a new reference, consumed) for the kernel's mode:
 * functional returns it; in place copies it into `target` (self) and returns
 * target borrowed; out= copies into `target` (out), which must have the
 * result's shape. Casting follows cpu_can_cast. */
CPU_HIDDEN wk_status cpu_deliver(const char *op, cpu_mode mode, wk_tensor *result, wk_tensor *target,
                                 wk_value *outs);

/* Copies src into dst (same shape after broadcasting src), converting dtypes;
 * both on the cpu. Handles overlap by going through a temporary. */
CPU_HIDDEN wk_status cpu_copy(wk_tensor *dst, wk_tensor *src);

/* True when the tensors' shapes are equal. */
CPU_HIDDEN bool cpu_same_shape(const wk_tensor *a, const wk_tensor *b);

/* "[2, 3]" into buf. */
CPU_HIDDEN const char *cpu_shape_str(const wk_tensor *t, char *buf, size_t n);

#endif
