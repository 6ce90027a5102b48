/* Wick ABI: tensor handles: creation from memory, metadata accessors,
 * reference counting, element access for tests, printing. The view and
 * compute operations are ops (see ops.h); this header holds what is not. */
#ifndef WICK_TENSOR_H
#define WICK_TENSOR_H

#include <stdio.h>
#include <wick/types.h>

/* Shape literal: wk_zeros(WK_SHAPE(2, 3), opts) passes (sizes, ndim). */
#define WK_SHAPE(...)                                                   \
  (const int64_t[]){__VA_ARGS__},                                       \
      (int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t))

/* Options for factories. Zero-initialised fields mean the defaults: float32
 * (or the input's dtype for *_like), cpu (or the input's device). This struct
 * is frozen: new options arrive through new calls, never new fields. */
typedef struct wk_options {
  wk_dtype dtype;
  wk_device device;
  bool requires_grad;
} wk_options;
#define WK_OPTS(...) ((wk_options){__VA_ARGS__})

/* ---- Dtype helpers ---------------------------------------------------------- */
/* Size in bytes of one element; 0 for an unknown dtype. */
WK_API size_t wk_dtype_size(wk_dtype dt);
/* Short name ("f32"); "?" for an unknown dtype. Static. */
WK_API const char *wk_dtype_name(wk_dtype dt);
/* Parses "f32", "float32", "torch.float32", "float", "long", ... Returns
 * WK_DTYPE_DEFAULT and records WK_ERR_INVALID_ARG for an unknown name. */
WK_API wk_dtype wk_dtype_parse(const char *name);
WK_API bool wk_dtype_is_floating(wk_dtype dt);
WK_API bool wk_dtype_is_integral(wk_dtype dt); /* excludes bool */
/* PyTorch's promote_types for two dtypes. */
WK_API wk_dtype wk_promote_types(wk_dtype a, wk_dtype b);

/* ---- Creation from memory (no kernel involved) ----------------------------- */
/* Returns a new reference to an uninitialised tensor; NULL on error (bad shape,
 * unknown device, out of memory). */
WK_API wk_tensor *wk_empty(const int64_t *sizes, int ndim, wk_options opt);
/* Returns a new reference to an uninitialised tensor shaped like `t`, with
 * opt's dtype/device when given. Borrows t. */
WK_API wk_tensor *wk_empty_like(wk_tensor *t, wk_options opt);
/* Returns a new reference to a uninitialised tensor with explicit strides
 * (storage sized to fit the largest offset). */
WK_API wk_tensor *wk_empty_strided(const int64_t *sizes, const int64_t *strides,
                                  int ndim, wk_options opt);
/* Returns a new reference to a cpu tensor holding a copy of `data` (row-major,
 * numel elements of `dtype`). data may be NULL only when numel is 0. */
WK_API wk_tensor *wk_tensor_from_data(const void *data, wk_dtype dtype,
                                     const int64_t *sizes, int ndim);
/* Returns a new reference to a tensor that wraps caller-owned memory without
 * copying; `deleter(ctx)` is called when the last view of it dies (deleter may
 * be NULL when the memory outlives the tensor). */
WK_API wk_tensor *wk_tensor_from_blob(void *data, wk_dtype dtype, wk_device dev,
                                     const int64_t *sizes, const int64_t *strides,
                                     int ndim, void (*deleter)(void *ctx),
                                     void *ctx);
/* Returns a new reference to a 0-dim cpu tensor holding `value`. */
WK_API wk_tensor *wk_scalar_tensor(double value, wk_dtype dtype);

/* ---- Reference counting and scopes ---------------------------------------- */
/* Adds a reference; returns t. NULL is passed through. */
WK_API wk_tensor *wk_retain(wk_tensor *t);
/* Drops a reference; the last one frees the handle (and storage when no view
 * is left). NULL does nothing. Inside a scope, releasing a tensor the scope
 * owns gives up the scope's reference early. */
WK_API void wk_release(wk_tensor *t);
/* Drops a reference taken with wk_retain by code that holds tensors for a
 * while (optimizers, datasets, caches): a plain decrement that never touches
 * the caller's scopes, so a retain/unref pair is balanced even when a scope
 * owns the tensor. NULL does nothing. */
WK_API void wk_unref(wk_tensor *t);
/* Opens a scope on this thread: every tensor handle returned to the caller
 * until the matching wk_scope_end() is owned by the scope. Scopes nest.
 * Returns the new depth. */
WK_API int wk_scope_begin(void);
/* Closes the innermost scope, releasing every tensor it still owns. Returns
 * WK_ERR_STATE when no scope is open. */
WK_API wk_status wk_scope_end(void);
/* Takes `t` out of its scope: the caller now owns its reference and must
 * release it (or hand it on). Returns t. */
WK_API wk_tensor *wk_scope_keep(wk_tensor *t);
/* Moves `t` to the enclosing scope (or to the caller when there is none), so
 * a helper can return a result through its own scope. Returns t. */
WK_API wk_tensor *wk_scope_escape(wk_tensor *t);
/* Number of tensor handles alive in this process (for leak tests). */
WK_API int64_t wk_live_tensors(void);

/* ---- Metadata (all borrow t; NULL t gives 0/NULL/default) -------------------- */
WK_API int wk_tensor_dim(const wk_tensor *t);
/* Size of dimension d; negative d counts from the end. -1 on a bad d. */
WK_API int64_t wk_tensor_size(const wk_tensor *t, int d);
WK_API int64_t wk_tensor_stride(const wk_tensor *t, int d);
/* Borrowed pointers to ndim sizes/strides (strides in elements). */
WK_API const int64_t *wk_tensor_sizes(const wk_tensor *t);
WK_API const int64_t *wk_tensor_strides(const wk_tensor *t);
WK_API int64_t wk_tensor_offset(const wk_tensor *t); /* elements */
WK_API int64_t wk_tensor_numel(const wk_tensor *t);
WK_API wk_dtype wk_tensor_dtype(const wk_tensor *t);
WK_API wk_device wk_tensor_device(const wk_tensor *t);
WK_API bool wk_tensor_is_contiguous(const wk_tensor *t);
/* Pointer to the first element (storage base + offset). Borrowed: valid while
 * the tensor lives. On a non-cpu device this is a device pointer. */
WK_API void *wk_tensor_data(const wk_tensor *t);
/* Version counter shared by all views of a storage; bumped by in-place ops. */
WK_API uint64_t wk_tensor_version(const wk_tensor *t);
/* (ABI 1.1) An id of the tensor's storage that no other storage of this
 * process ever gets (unlike its address, which memory reuse recycles); 0 for
 * NULL. With wk_tensor_version it identifies the contents of a parameter, so
 * a backend can cache a derived form (a reordered weight) until the
 * optimizer writes it. */
WK_API uint64_t wk_tensor_storage_id(const wk_tensor *t);
/* Records an in-place write (kernels of mutating ops call this). */
WK_API void wk_tensor_bump_version(wk_tensor *t);
/* True when a and b view the same storage. */
WK_API bool wk_tensor_same_storage(const wk_tensor *a, const wk_tensor *b);
/* Bytes of the underlying storage. */
WK_API size_t wk_tensor_storage_nbytes(const wk_tensor *t);

/* Marks a leaf as requiring gradients (autograd records ops on it). Fails on
 * a non-floating dtype. */
WK_API wk_status wk_tensor_set_requires_grad(wk_tensor *t, bool on);
WK_API bool wk_tensor_requires_grad(const wk_tensor *t);

/* ---- Element access (tests, debugging; copies through the device) --------- */
/* Value of the single element of a one-element tensor, as double. */
WK_API wk_status wk_item(wk_tensor *t, double *out);
/* Same, as int64 (exact for integer dtypes). */
WK_API wk_status wk_item_i64(wk_tensor *t, int64_t *out);
/* Element at index[ndim], as double / written from double. */
WK_API wk_status wk_tensor_get(wk_tensor *t, const int64_t *index, double *out);
WK_API wk_status wk_tensor_set(wk_tensor *t, const int64_t *index, double v);
/* Copies all elements, row-major, converted to double / int64 into `out`
 * (capacity n elements). */
WK_API wk_status wk_tensor_to_f64(wk_tensor *t, double *out, int64_t n);

/* ---- Memory formats (ABI 1.4) ------------------------------------------------ */
/* How a tensor's elements are ordered in memory, PyTorch's torch.memory_format.
 * WK_CHANNELS_LAST is torch.channels_last: a 4-D tensor keeps its logical
 * [N, C, H, W] sizes (every op sees the same shape and gives the same values)
 * but its strides are NHWC's, (H*W*C, 1, W*C, C). Kernels that run NHWC
 * natively keep a channels-last input's format in their results (conv2d,
 * batch_norm, relu, add and the other elementwise ops, pooling, and their
 * gradients), so a conv -> batch_norm -> relu chain never reorders. */
typedef enum wk_memory_format {
  WK_CONTIGUOUS_FORMAT = 0, /* row-major (torch.contiguous_format) */
  WK_CHANNELS_LAST = 1      /* NHWC strides on an NCHW tensor, 4-D only (torch.channels_last) */
} wk_memory_format;
/* "contiguous_format", "channels_last", or "unknown" (static). */
WK_API const char *wk_memory_format_name(wk_memory_format f);
/* True when t's elements are dense in format f (t.is_contiguous(memory_format=f)).
 * Dimensions of size 1 may have any stride, so a tensor can be both (C == 1,
 * or H == W == 1). False for NULL, an unknown format, or channels_last on a
 * tensor that is not 4-D. */
WK_API bool wk_is_contiguous_format(const wk_tensor *t, wk_memory_format f);
/* The format results computed from t should have (PyTorch's
 * suggest_memory_format): WK_CHANNELS_LAST when t is a 4-D tensor dense in
 * channels-last order and not also row-major contiguous, else
 * WK_CONTIGUOUS_FORMAT (NULL included). */
WK_API wk_memory_format wk_suggest_memory_format(const wk_tensor *t);
/* The strides (in elements) of a dense tensor of `sizes` in format f; a
 * format that does not apply to ndim (channels_last unless 4-D) gives
 * row-major strides. strides has room for ndim values. */
WK_API void wk_format_strides(const int64_t *sizes, int ndim, wk_memory_format f, int64_t *strides);
/* wk_empty in format f (torch.empty(..., memory_format=f)). NULL with
 * WK_ERR_SHAPE for channels_last unless ndim is 4, WK_ERR_INVALID_ARG for an
 * unknown format. */
WK_API wk_tensor *wk_empty_format(const int64_t *sizes, int ndim, wk_options opt, wk_memory_format f);
/* t.contiguous(memory_format=f): t itself (a new reference to an alias) when
 * it is already dense in f, else a copy in f. Differentiable: recorded as ops,
 * so gradients flow back to t. WK_CONTIGUOUS_FORMAT is wk_contiguous(t).
 * NULL with WK_ERR_SHAPE ("required rank 4 tensor to use channels_last
 * format") when f is channels_last and t is not 4-D, WK_ERR_INVALID_ARG for
 * an unknown format, WK_ERR_NULL for NULL. */
WK_API wk_tensor *wk_contiguous_format(wk_tensor *t, wk_memory_format f);

/* ---- Printing ---------------------------------------------------------------- */
/* Returns PyTorch-style text ("tensor([[1., 2.]], dtype=torch.float64)"), a
 * new string the caller frees with wk_free. NULL on error. */
WK_API char *wk_tensor_to_string(wk_tensor *t);
/* Prints wk_tensor_to_string(t) and a newline to `f` (stdout when NULL). */
WK_API wk_status wk_print(wk_tensor *t, FILE *f);
/* Frees memory returned by Wick calls that say "free with wk_free". */
WK_API void wk_free(void *p);
/* The allocator every Wick allocation goes through (ABI 1.3), for plugins and
 * programs whose memory Wick frees or hands back: malloc/calloc/realloc
 * semantics (NULL when exhausted, no error recorded), freed with wk_free.
 * WICK_FAIL_ALLOC=N makes the Nth allocation fail (fault injection, see
 * tests/fault_sweep.sh). */
WK_API void *wk_malloc(size_t n);
WK_API void *wk_calloc(size_t n, size_t size);
WK_API void *wk_realloc(void *p, size_t n);

#endif
