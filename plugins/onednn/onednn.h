/* onednn plugin: shared declarations. libdnnl is dlopen-ed at init (after the
 * OpenMP environment is set, see plugin.c), so every oneDNN call goes through
 * the `odn` table; plus the primitive cache, memory helpers and registration. */
#ifndef ODN_ONEDNN_H
#define ODN_ONEDNN_H

#include <oneapi/dnnl/dnnl.h>
#include <stdbool.h>
#include <stdint.h>
#include <wick/sdk.h>
#include <wick/sdk/kernel.h>

/* Every oneDNN function the plugin calls (resolved with dlsym at init). */
#define ODN_FUNCS(X)                                                                                                   \
  X(engine_create)                                                                                                     \
  X(engine_destroy) X(stream_create) X(stream_destroy) X(stream_wait) X(memory_desc_init_by_tag)                       \
      X(memory_desc_init_by_strides) X(memory_desc_equal) X(memory_desc_get_size) X(memory_create) X(memory_destroy)   \
          X(primitive_desc_create) X(primitive_desc_destroy) X(primitive_desc_query_md) X(primitive_create)            \
              X(primitive_destroy) X(primitive_execute) X(primitive_attr_create) X(primitive_attr_destroy)             \
                  X(primitive_attr_set_scratchpad_mode) X(primitive_attr_set_post_ops)                                 \
                      X(primitive_attr_set_output_scales) X(primitive_attr_set_fpmath_mode) X(post_ops_create)         \
                          X(post_ops_destroy) X(post_ops_append_eltwise) X(reorder_primitive_desc_create)              \
                              X(dilated_convolution_forward_desc_init) X(dilated_convolution_backward_data_desc_init)  \
                                  X(dilated_convolution_backward_weights_desc_init) X(matmul_desc_init)                \
                                      X(batch_normalization_forward_desc_init)                                         \
                                          X(batch_normalization_backward_desc_init)                                    \
                                              X(layer_normalization_forward_desc_init)                                 \
                                                  X(layer_normalization_backward_desc_init)                            \
                                                      X(pooling_v2_forward_desc_init) X(pooling_v2_backward_desc_init) \
                                                          X(eltwise_forward_desc_init) X(eltwise_backward_desc_init)   \
                                                              X(softmax_v2_forward_desc_init)                          \
                                                                  X(softmax_v2_backward_desc_init) X(version)                      \
                                                                      X(primitive_attr_set_zero_points)

#define ODN_FIELD(f) __typeof__(dnnl_##f) *f;
typedef struct odn_api {
  ODN_FUNCS(ODN_FIELD)
} odn_api;
#undef ODN_FIELD

extern odn_api odn;              /* filled by plugin.c before any kernel registers */
extern dnnl_engine_t odn_engine; /* the one cpu engine */

/* ---- plugin.c ------------------------------------------------------------------------- */
/* Registers a boxed kernel for the cpu device above the reference plugin. */
wk_status odn_reg(const char *op, wk_kernel_fn fn, wk_supports_fn sup, void *user);
/* The calling thread's stream, for a primitive touching `bytes` of memory;
 * also sets oneDNN's thread count: the pool's, or 1 for small primitives.
 * NULL with an error recorded on failure. */
dnnl_stream_t odn_stream(const char *op, size_t bytes);
/* WK_OK for dnnl_success, else records "op(): oneDNN <what> failed (status)". */
wk_status odn_check(dnnl_status_t st, const char *op, const char *what);
/* True when the call may run in oneDNN at all: not inside a pool chunk (its
 * OpenMP team would oversubscribe the cores). */
bool odn_usable(void);
/* True when WICK_ONEDNN_ALL_KERNELS is set: register also the kernels that
 * were measured slower than the cpu plugin's here (for tests and re-measuring). */
bool odn_all_kernels(void);
/* True when this machine's oneDNN implements bf16 primitives (AVX-512 and up). */
bool odn_bf16(void);
/* f32 (or bf16 when allow_bf16 and odn_bf16()) dense row-major tensor with at least one element. */
bool odn_dense(const wk_tensor *t, bool allow_bf16);
dnnl_data_type_t odn_dt(wk_dtype dt);

/* ---- cache.c: bounded LRU of primitives and anything else built from a key ----------------- */
typedef struct odn_entry odn_entry;
/* Finds a pinned entry for key (n bytes), or NULL. */
odn_entry *odn_cache_find(const void *key, size_t n);
/* Inserts val under key and returns the pinned entry; when another thread
 * inserted the same key first, destroys val and returns that entry. NULL
 * (val destroyed, error recorded) when out of memory. */
odn_entry *odn_cache_add(const void *key, size_t n, void *val, void (*destroy)(void *));
void *odn_entry_val(odn_entry *e);
/* Unpins; an evicted entry is destroyed by its last user. NULL is a no-op. */
void odn_cache_unpin(odn_entry *e);
/* Drops every unpinned entry (shutdown, tests). */
void odn_cache_clear(void);
/* Hits / misses since load (for tests and `wick info`-like reports). */
void odn_cache_stats(uint64_t *hits, uint64_t *misses);

/* A primitive with the memory descriptors it chose (md[i] for arg slot i,
 * the meaning of slots is the family's) and its scratchpad size. */
#define ODN_MAX_MD 6
typedef struct odn_prim {
  dnnl_primitive_t prim;
  dnnl_primitive_desc_t pd; /* kept: backward primitives need the forward one as a hint */
  dnnl_memory_desc_t md[ODN_MAX_MD];
  dnnl_memory_desc_t scratch_md;
  size_t scratch;
} odn_prim;
/* Builds an odn_prim from an op descriptor; queries[i] names md[i]'s query
 * (dnnl_query_undef: left zero). Returns NULL with an error recorded. */
odn_prim *odn_prim_create(const char *op, const void *desc, dnnl_primitive_attr_t attr,
                          const_dnnl_primitive_desc_t hint, const dnnl_query_t *queries, int nq);
/* Same from a primitive descriptor (taken over, destroyed on failure). */
odn_prim *odn_prim_from_pd(const char *op, dnnl_primitive_desc_t pd, const dnnl_query_t *queries, int nq);
/* A new attribute with the user scratchpad mode every primitive uses, or NULL. */
dnnl_primitive_attr_t odn_attr(const char *op);
void odn_prim_destroy(void *p);
/* The cached odn_prim for key, built by make(ctx) on a miss; pinned. */
odn_entry *odn_prim_get(const void *key, size_t n, odn_prim *(*make)(void *ctx), void *ctx);

/* ---- mem.c: memory descriptors, reorders, execution ------------------------------------------ */
/* A plain descriptor with the tensor's sizes and strides (optionally viewed
 * with other dims: nd/dims/strides given explicitly). */
void odn_md_of(dnnl_memory_desc_t *md, const wk_tensor *t);
void odn_md_strided(dnnl_memory_desc_t *md, int nd, const int64_t *dims, const int64_t *strides, dnnl_data_type_t dt);
/* Scratch memory from the core allocator (64-byte aligned), or NULL. */
void *odn_alloc(size_t n);
void odn_free(void *p);

/* One execution argument: an arg id with data in layout `have` that the
 * primitive wants in layout `want`. For inputs, odn_exec reorders have->want
 * into a temporary before running; for outputs, it runs into a temporary in
 * `want` and reorders it to `have` afterwards. */
typedef struct odn_arg {
  int id;
  const dnnl_memory_desc_t *want, *have;
  void *data;
  bool output;
} odn_arg;
/* Runs prim with args (reordering as described) and its scratchpad. */
wk_status odn_exec(const char *op, const odn_prim *p, const odn_arg *args, int n);
/* Reorders data between two layouts of the same tensor (cached primitive). */
wk_status odn_reorder(const char *op, const dnnl_memory_desc_t *from, const void *src, const dnnl_memory_desc_t *to,
                      void *dst);

/* ---- wcache.c: reordered weights, cached per parameter version ---------------------------- */
typedef struct odn_wentry odn_wentry;
/* For a weight input `a` of tensor w whose layout a->have differs from the
 * primitive's a->want: points a at a cache-owned copy in a->want and pins it
 * in *pin until odn_weight_unpin. The copy is made on the second use of the
 * same weight version and layout (or the first, when `reused`: the caller
 * has already seen it, see odn_weight_seen). Leaves a alone (*pin NULL)
 * when no copy applies (first use, cache off or too small): odn_exec then
 * reorders into a temporary as usual. */
wk_status odn_weight_arg(const char *op, const wk_tensor *w, odn_arg *a, bool reused, odn_wentry **pin);
void odn_weight_unpin(odn_wentry *e);
/* True when w (this view, this version) was seen before with `want` (NULL:
 * any) by the same op in the same grad mode; records it otherwise. Matmul
 * asks this before choosing a blocked layout for its second operand. */
bool odn_weight_seen(const char *op, const wk_tensor *w, const dnnl_memory_desc_t *want);
void odn_weight_clear(void);
void odn_weight_stats(uint64_t *hits, uint64_t *misses, size_t *bytes);

/* ---- kernel families ------------------------------------------------------------------------ */
wk_status odn_register_conv(void);
wk_status odn_register_norm(void);
wk_status odn_register_pool(void);
wk_status odn_register_eltwise(void);
wk_status odn_register_softmax(void);
wk_status odn_register_matmul(void);
wk_status odn_register_quantized(void); /* qconv.c: int8 quantized_conv2d / quantized_linear */

/* ---- nhwc.c: channels_last (WK_CHANNELS_LAST) activations -------------------------------- */
/* The nhwc-tagged (acdb) descriptor of a logical [N, C, H, W] tensor. */
void odn_md_nhwc(dnnl_memory_desc_t *md, const int64_t dims[4], dnnl_data_type_t dt);
/* True when t is 4-D and channels-last (and not also row-major: wk_suggest_memory_format). */
bool odn_is_nhwc(const wk_tensor *t);
/* True when a convolution of x with w runs NHWC: x or w channels-last (PyTorch's rule). */
bool odn_conv_nhwc(const wk_tensor *x, const wk_tensor *w);
/* Result i as the meta function decided, but channels-last when it is 4-D. */
wk_tensor *odn_meta_empty_nhwc(const wk_kernel_ctx *ctx, int i);
/* Result i in like's format (channels-last when like is). */
wk_tensor *odn_meta_empty_like_format(const wk_kernel_ctx *ctx, int i, const wk_tensor *like);
/* Per-channel mean and biased variance (double) of rows x C values stored row after row. */
void odn_nhwc_stats(const float *x, int64_t rows, int64_t C, double *mean, double *var);

#endif
