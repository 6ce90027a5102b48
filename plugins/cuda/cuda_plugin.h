/* cuda plugin internals, shared by its .c files and its .cu kernel files.
 * nvcc sees only the plain part (Wick's headers are C, not C++): the
 * strided-tensor descriptor, launch helpers, the error hook and the
 * launchers. The .c files also get the SDK, the device type id and the
 * per-family registration hooks. */
#ifndef WICK_CUDA_PLUGIN_H
#define WICK_CUDA_PLUGIN_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ==== shared by .c and .cu =================================================== */

/* Dtype codes as in <wick/types.h> (fixed ABI numbers), for device code. */
enum {
  CUDA_F32 = 1, CUDA_F64 = 2, CUDA_F16 = 3, CUDA_BF16 = 4, CUDA_I8 = 5,
  CUDA_U8 = 6, CUDA_I16 = 7, CUDA_I32 = 8, CUDA_I64 = 9, CUDA_BOOL = 10
};

/* A tensor's layout for device code: sizes and strides in elements, strides
 * 0 on broadcast dimensions. Passed by value to kernels (264 bytes). */
#define CUDA_MAX_DIMS 16 /* == WK_MAX_DIMS */
typedef struct cuda_strided {
  int32_t ndim;
  int64_t sizes[CUDA_MAX_DIMS];
  int64_t strides[CUDA_MAX_DIMS];
} cuda_strided;

/* Launch configuration for n independent elements with a grid-stride loop:
 * CUDA_THREADS threads per block, at most CUDA_MAX_BLOCKS blocks (the loop
 * covers the rest, so any n fits in 32-bit grid sizes). n == 0 launches
 * nothing: check it before launching. */
#define CUDA_THREADS 256
#define CUDA_MAX_BLOCKS 65536
static inline unsigned cuda_blocks(int64_t n) {
  int64_t b = (n + CUDA_THREADS - 1) / CUDA_THREADS;
  return (unsigned)(b < 1 ? 1 : b > CUDA_MAX_BLOCKS ? CUDA_MAX_BLOCKS : b);
}

/* The calling thread's current stream on `device` (0 = the default stream
 * until wk_set_current_stream picks another). Every kernel and async copy of
 * the plugin runs on it, like PyTorch's getCurrentCUDAStream(). */
cudaStream_t cuda_current_stream(int device);

/* Checks a CUDA runtime result. On failure records a Wick error naming the op
 * and the call ("add: cudaLaunchKernel failed: out of memory
 * (cudaErrorMemoryAllocation)"); a sticky error (the context is unusable
 * until the process exits) is reported as such. Returns the wk_status as an
 * int: 0 on success. Callable from .cu host code. */
int cuda_check_error(cudaError_t err, const char *op, const char *call);
#define CUDA_CHECK(op, call) cuda_check_error((call), (op), #call)
/* After a launch: configuration errors now; execution errors too when
 * WICK_CUDA_LAUNCH_BLOCKING=1 (like CUDA_LAUNCH_BLOCKING, for debugging). */
int cuda_check_launch(const char *op, const char *kernel);
#define CUDA_CHECK_LAUNCH(op, kernel) cuda_check_launch((op), (kernel))

/* ---- launchers (extern "C", defined in the .cu files; return 0 or the
 * wk_status of an error already recorded). One block per op family. ---- */

/* copy.cu: dst[i] = (dst dtype) src[i] over `shape`, any strides, any of the
 * ten dtypes; src may broadcast (stride 0). */
int cuda_launch_copy(void *dst, int dst_dtype, cuda_strided dst_layout, const void *src, int src_dtype,
                     cuda_strided src_layout, int64_t n, cudaStream_t stream);
/* copy.cu: every element of dst (any strides) set to the `elem_size`-byte
 * pattern `bits` (the value already converted to dst's dtype). */
int cuda_launch_fill(void *dst, int elem_size, cuda_strided dst_layout, uint64_t bits, int64_t n,
                     cudaStream_t stream);

/* elementwise.cu: f32 out = op(a, b) with out contiguous of n elements and a,
 * b laid out over out's shape (broadcast strides 0). op: CUDA_EW_*. */
enum { CUDA_EW_ADD = 0, CUDA_EW_MUL = 1, CUDA_EW_RELU = 2 };
int cuda_launch_binary_f32(int op, float *out, const float *a, cuda_strided la, const float *b,
                           cuda_strided lb, float alpha, int64_t n, cudaStream_t stream);
int cuda_launch_unary_f32(int op, float *out, const float *a, cuda_strided la, int64_t n, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

/* ==== .c files only ============================================================= */
#ifndef __CUDACC__
#include <wick/sdk.h>
#include <wick/sdk/kernel.h>
#include <wick/sdk/kernel_util.h>

/* In C the checks give a wk_status: `if ((s = CUDA_CHECK("op", cudaX(...)))) return s;` */
#undef CUDA_CHECK
#undef CUDA_CHECK_LAUNCH
#define CUDA_CHECK(op, call) ((wk_status)cuda_check_error((call), (op), #call))
#define CUDA_CHECK_LAUNCH(op, kernel) ((wk_status)cuda_check_launch((op), (kernel)))

/* Device type id the core gave "cuda" (valid after the plugin's init). */
extern int32_t cuda_device_type;
/* Number of devices (0 without a driver or GPU), cached at load. */
int cuda_num_devices(void);
/* wk_device for cuda:index. */
static inline wk_device cuda_device(int index) {
  wk_device d = {cuda_device_type, index};
  return d;
}

/* Op families: each provides `wk_status cuda_register_<family>(void)`
 * (registering its kernels with cuda_reg) in plugins/cuda/<family>_ops.c,
 * and its device code in <family>.cu. plugin.c calls them in this order. */
#define CUDA_OP_FAMILIES(X) X(copy) X(elementwise) X(unary) X(reduce) X(softmax) X(index) X(rng) X(optim_update) X(scan) X(remap) X(layernorm) X(host) X(blas) X(dnn) X(bn) X(pool) X(amp)
#define CUDA__DECLARE_FAMILY(f) wk_status cuda_register_##f(void);
CUDA_OP_FAMILIES(CUDA__DECLARE_FAMILY)
#undef CUDA__DECLARE_FAMILY

/* Registers a boxed kernel for `op` on cuda at WK_PRIORITY_REFERENCE (above
 * the core's device-agnostic composites, below a third party's OPTIMIZED
 * override); `supports` may be NULL; `name` is shown by `wick info`
 * ("cuda.add_f32"). */
wk_status cuda_reg(const char *op, wk_kernel_fn fn, wk_supports_fn supports, void *user, const char *name);

/* Layout of t for device code, optionally broadcast to `shape` (ndim dims;
 * NULL keeps t's own shape). The caller has checked broadcastability. */
cuda_strided cuda_layout(const wk_tensor *t, const int64_t *shape, int ndim);
/* Makes `dev` current on this thread (cudaSetDevice) before touching memory
 * or launching; records an error naming `op` on failure. */
wk_status cuda_enter(const char *op, wk_device dev);

/* ---- runtime.c: devices, streams, copies (plugin internals) ---- */
void cuda_runtime_init(void);
const char *cuda_status_message(void);
wk_status cuda_set_device(const char *op, int index);
int cuda_current_device(void);
wk_status cuda_set_current_stream(int device, cudaStream_t s);
/* Copies n bytes between cuda and cpu or two cuda devices on `stream`;
 * blocking: wait for a host-side copy to finish (D2D copies never wait). */
wk_status cuda_copy_bytes(void *dst, wk_device dd, const void *src, wk_device sd, size_t n, cudaStream_t stream,
                          bool blocking);

wk_status cuda_get_properties(int index, wk_device_props *out);
wk_status cuda_stream_create(int index, int priority, void **out);
void cuda_stream_destroy(int index, void *stream);
wk_status cuda_stream_synchronize(int index, void *stream);
wk_status cuda_stream_query(int index, void *stream, bool *done);
wk_status cuda_stream_wait_event(int index, void *stream, void *event);
wk_status cuda_event_create(int index, unsigned flags, void **out);
void cuda_event_destroy(int index, void *event);
wk_status cuda_event_record(int index, void *event, void *stream);
wk_status cuda_event_synchronize(int index, void *event);
wk_status cuda_event_query(int index, void *event, bool *done);
wk_status cuda_event_elapsed_ms(int index, void *start, void *end, float *ms);

/* ---- memory.c: the caching allocator and pinned host memory ---- */
wk_status cuda_memory_init(int num_devices);
void cuda_memory_shutdown(void);
void *cuda_malloc(int device, size_t nbytes);
void cuda_free(int device, void *ptr);
wk_status cuda_memory_stats(int device, wk_memory_stats *out);
wk_status cuda_reset_peak(int device);
wk_status cuda_empty_cache(int device);
size_t cuda_memory_summary(int device, char *buf, size_t n);
void *cuda_host_alloc_pinned(size_t nbytes);
void cuda_host_free_pinned(void *ptr);

#endif

#endif
