/* cpu plugin entry: registers the reference kernels of every family. */
#include "cpu.h"
#include "simd.h"

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifdef CPU_HAVE_OPENBLAS
#include <cblas.h>
#endif

static wk_status cpu_init(void) {
#ifdef CPU_HAVE_OPENBLAS
  /* One pool owns the cores: OpenBLAS runs sequentially, called from our
   * parallel regions (the kernels split large GEMMs over wk_parallel_for).
   * Its own pthread pool would spin (sched_yield) next to ours. */
  openblas_set_num_threads(1);
#endif
  wk_status st = cpu_simd_init(); /* the f32 loops for this CPU, or WICK_CPU_ISA's */
  if (st != WK_OK) return st;
  wk_status (*families[])(void) = {cpu_register_copy,          cpu_register_factory,     cpu_register_unary,
                                   cpu_register_binary,        cpu_register_reduce,      cpu_register_scan,
                                   cpu_register_linalg,        cpu_register_nn,          cpu_register_loss,
                                   cpu_register_conv,          cpu_register_pool,        cpu_register_index,
                                   cpu_register_sort,          cpu_register_conv_backward, cpu_register_nn_backward,
                                   cpu_register_pointwise_backward, cpu_register_amp,
                                   cpu_register_lapack, cpu_register_index_reduce,
                                   cpu_register_index_put, cpu_register_interpolate,
                                   cpu_register_attention};
  for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
    wk_status s = families[i]();
    if (s != WK_OK) return s;
  }
  return cpu_register_quantized(); /* quantized.c: quantize/dequantize, int8 linear and conv */
}

WK_PLUGIN_DEFINE("cpu", "0.1.0", "reference CPU kernels for the standard op set", cpu_init, NULL)

wk_status cpu_reg(const char *op, wk_kernel_fn fn, void *user) {
  wk_kernel_desc d = {sizeof d, op, WK_DEVICE_CPU, WK_PRIORITY_REFERENCE, fn, NULL, user, "cpu.ref"};
  return wk_kernel_register(&d);
}

wk_status cpu_reg_row(const wk_kernel_row *row) {
  return cpu_reg(row->op, row->fn, (void *)row->user);
}

wk_tensor *cpu_empty(const int64_t *sizes, int ndim, wk_dtype dt) {
  return wk_empty(sizes, ndim, (wk_options){.dtype = dt});
}

bool cpu_same_shape(const wk_tensor *a, const wk_tensor *b) {
  int n = wk_tensor_dim(a);
  if (n != wk_tensor_dim(b)) return false;
  const int64_t *x = wk_tensor_sizes(a), *y = wk_tensor_sizes(b);
  for (int i = 0; i < n; i++)
    if (x[i] != y[i]) return false;
  return true;
}

wk_status cpu_deliver(const char *op, cpu_mode mode, wk_tensor *result, wk_tensor *target, wk_value *outs) {
  (void)op; /* the core's meta function checked target's shape and dtype against the result */
  return wk_deliver(result, mode == CPU_FUNCTIONAL ? NULL : target, outs, cpu_copy);
}
