/* Core-internal declarations shared across core/ files. Never installed.
 * Names are wk__ prefixed and hidden (built with -fvisibility=hidden). */
#ifndef WICK_CORE_INTERNAL_H
#define WICK_CORE_INTERNAL_H

#ifndef WK_BUILDING_CORE
#define WK_BUILDING_CORE 1
#endif
#include <stdatomic.h>
#include <wick/wick.h>
#include <wick/host_api.h>

#define WK__HIDDEN __attribute__((visibility("hidden")))

/* ---- storage and tensors ---------------------------------------------------------- */
typedef struct wk__storage {
  atomic_int refcount;
  wk_device device;
  void *data;
  size_t nbytes;
  void (*deleter)(void *ctx); /* external memory: called with deleter_ctx */
  void *deleter_ctx;
  bool external;              /* memory not from the device allocator */
  bool inline_data;           /* cpu: data lives in this block, after the header */
  atomic_uint_fast64_t version; /* shared by every view */
  uint64_t id;                  /* never reused within the process (wk_tensor_storage_id) */
} wk__storage;

struct wk__scope;

enum { WK__T_REQUIRES_GRAD = 1u << 0 };

struct wk_tensor {
  atomic_int refcount;
  wk_dtype dtype;
  int32_t ndim;
  uint32_t flags;
  wk__storage *storage;
  int64_t offset; /* elements */
  int64_t sizes[WK_MAX_DIMS];
  int64_t strides[WK_MAX_DIMS];
  struct wk__scope *scope; /* scope owning the birth reference, or NULL */
  int64_t scope_slot;
  void *autograd; /* autograd metadata (owned by the autograd layer) */
  void *quant;    /* quantization parameters (wk__qparams, refcounted; quantized.c), or NULL */
};

/* Quantization parameters shared by a quantized tensor and its views (quantized.c). */
WK__HIDDEN void *wk__qparams_retain(void *q);
WK__HIDDEN void wk__qparams_release(void *q);
/* The real value of stored integer q at multi-index idx of quantized t, as
 * PyTorch's dequantize computes it (float32). */
WK__HIDDEN double wk__q_dequant_at(const wk_tensor *t, double q, const int64_t *idx);


/* New handle on `st` (retains st). Not registered with any scope. */
WK__HIDDEN wk_tensor *wk__tensor_new(wk__storage *st, wk_dtype dt, int ndim,
                                     const int64_t *sizes, const int64_t *strides,
                                     int64_t offset);
/* Allocates storage of nbytes on dev; NULL with error. */
WK__HIDDEN wk__storage *wk__storage_new(wk_device dev, size_t nbytes);
WK__HIDDEN void wk__storage_release(wk__storage *st);
WK__HIDDEN void wk__contiguous_strides(const int64_t *sizes, int ndim, int64_t *strides);
WK__HIDDEN bool wk__check_shape(const char *op, const int64_t *sizes, int ndim);
/* A view of t sharing storage (new handle, not scope-registered). */
WK__HIDDEN wk_tensor *wk__view_of(wk_tensor *t, int ndim, const int64_t *sizes,
                                  const int64_t *strides, int64_t offset);
/* t takes over src's data (storage, dtype, shape, strides, offset) and keeps
 * its identity and autograd metadata (module.to moves parameters this way). */
WK__HIDDEN wk_status wk__tensor_assign(wk_tensor *t, wk_tensor *src);
/* Registers a handle returned to user code with the current scope. */
WK__HIDDEN void wk__scope_adopt(wk_tensor *t);
/* Depth of dispatcher calls on this thread: 0 in user code. */
WK__HIDDEN extern _Thread_local int wk__call_depth;

/* ---- errors ------------------------------------------------------------------------ */
WK__HIDDEN bool wk__error_pending(void);
/* The error slot (error.c): the code recorded, and whether it is stale (left
 * by an earlier top-level call: not reported, replaced by the next error,
 * revived by a WK_ERR_NULL). */
WK__HIDDEN extern _Thread_local wk_status wk__err_code;
WK__HIDDEN extern _Thread_local bool wk__err_stale;
/* Counts wk_error/wk_error_replace calls on this thread, recorded or not (one
 * is already kept): a caller compares it around a callback whose NULL may mean
 * either "nothing" or "failed" (extra_repr) to tell which. */
WK__HIDDEN extern _Thread_local unsigned wk__err_reports;
/* A top-level call whose arguments are valid starts here: an earlier call's
 * error stops being reported (one store; callers check wk__call_depth == 0). */
static inline void wk__error_new_call(void) { wk__err_stale = true; }
/* Makes a stale error current again (true) for a caller about to report
 * "returned NULL without an error": the NULL came from that failure. */
WK__HIDDEN bool wk__error_revive(void);
/* Records WK_ERR_NULL for a NULL argument unless an error is pending. */
WK__HIDDEN void wk__null_arg(const char *fn, const char *arg);
/* Formats a shape as "[2, 3]" into buf. */
WK__HIDDEN const char *wk__shape_str(const int64_t *sizes, int ndim, char *buf, size_t n);

/* ---- the allocator hook (alloc.c) ---- */
/* aligned_alloc through the hook (wk_malloc and friends are public). */
WK__HIDDEN void *wk__aligned_alloc(size_t align, size_t n);
/* wk_init has finished: WICK_FAIL_ALLOC_AFTER_INIT starts counting here. */
WK__HIDDEN void wk__alloc_init_done(void);

/* ---- the allocator hook (alloc.c) ---- */
/* aligned_alloc through the hook (wk_malloc and friends are public). */
WK__HIDDEN void *wk__aligned_alloc(size_t align, size_t n);

/* ---- small blocks ------------------------------------------------------------------- */
/* n bytes (64-byte aligned) from the calling thread's cache of small blocks
 * (up to 4 KiB; larger ones come from aligned_alloc), uninitialised; NULL
 * when memory is exhausted (no error recorded). Free with the same n, from
 * any thread. For the per-op allocations of the core: storages, autograd
 * nodes and metadata. */
WK__HIDDEN void *wk__block_alloc(size_t n);
WK__HIDDEN void wk__block_free(void *p, size_t n);

/* ---- devices ----------------------------------------------------------------------- */
WK__HIDDEN void wk__device_init(void);
WK__HIDDEN const wk_device_iface *wk__device_iface(int32_t type);
/* The thread's default device for new tensors (wk_set_default_device). */
WK__HIDDEN extern _Thread_local wk_device wk__default_dev;
/* A device with "not given" read as cpu (inline: every allocation asks). */
static inline wk_device wk__device_norm(wk_device d) {
  if (d.type == WK_DEVICE_DEFAULT) d.type = WK_DEVICE_CPU;
  return d;
}
WK__HIDDEN void wk__device_rollback(wk_plugin *owner);

/* ---- dispatcher and schemas ----------------------------------------------------------- */
typedef enum wk__argtype {
  WK__A_TENSOR, WK__A_INT, WK__A_FLOAT, WK__A_BOOL, WK__A_STR, WK__A_SCALAR,
  WK__A_DTYPE, WK__A_DEVICE, WK__A_INTS, WK__A_FLOATS, WK__A_TENSORS
} wk__argtype;

typedef struct wk__arg {
  char *name;
  char *type_text;   /* as written, e.g. "Tensor(a!)?" */
  wk__argtype type;
  bool optional;     /* T? */
  bool elem_optional;/* Tensor?[] */
  int fixed_len;     /* int[2] -> 2; 0 otherwise */
  bool kwarg_only;
  bool mutates;      /* (a!) */
  char alias;        /* alias set letter or 0 */
  bool has_default;
  wk_value def;      /* default value (lists owned by the schema) */
} wk__arg;

typedef struct wk__schema {
  char *name; /* "add.out" (base name plus overload) */
  int nargs, nouts;
  wk__arg args[WK_MAX_ARGS];
  wk__arg outs[WK_MAX_OUTS];
  bool returns_list; /* -> Tensor[] */
} wk__schema;

/* Parses `text`; on error records WK_ERR_SCHEMA and returns false. */
WK__HIDDEN bool wk__schema_parse(const char *text, wk__schema *out);
WK__HIDDEN void wk__schema_free(wk__schema *s);
WK__HIDDEN bool wk__schema_equal(const wk__schema *a, const wk__schema *b);

WK__HIDDEN void wk__ops_declare_standard(void);
WK__HIDDEN void wk__core_kernels_register(void);
WK__HIDDEN void wk__kernel_rollback(wk_plugin *owner);
WK__HIDDEN void wk__op_rollback(wk_plugin *owner); /* after wk__kernel_rollback */
WK__HIDDEN void wk__dispatch_apply_env(void);
WK__HIDDEN const wk__schema *wk__op_schema(const wk_op *op);
WK__HIDDEN const void **wk__op_autograd_slot(wk_op *op);
/* What the autograd layer reads from an op on every recorded call, in one call. */
typedef struct wk__op_info {
  int nargs, nouts, mutated_arg;
  uint32_t tags;
  const void *autograd;
} wk__op_info;
WK__HIDDEN void wk__op_get_info(const wk_op *op, wk__op_info *out);
/* wk_layer_redispatch with `self` excluded on this thread meanwhile (what a
 * layer does to call through without seeing the call itself again). */
WK__HIDDEN wk_status wk__layer_call_below(wk_layer *self, wk_op *op, const wk_value *args, wk_value *outs);
/* Calls a kernel below every layer (used by the ffi trampoline and tests). */
WK__HIDDEN wk_status wk__ffi_kernel(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs);
WK__HIDDEN void *wk__ffi_prepare(const wk__schema *s, void (*fn)(void));

/* ---- plugins and services --------------------------------------------------------------- */
WK__HIDDEN wk_plugin *wk__plugin_current(void); /* plugin whose init is running */
WK__HIDDEN const char *wk__plugin_name_or_core(const wk_plugin *p);
WK__HIDDEN void wk__plugins_load_all(void);
WK__HIDDEN void wk__plugins_shutdown(void);
WK__HIDDEN void wk__service_rollback(wk_plugin *owner);
WK__HIDDEN const void *wk__host_api_get(uint32_t major, uint32_t minor);

/* ---- threads and rng ------------------------------------------------------------------ */
WK__HIDDEN void wk__pool_shutdown(void);
WK__HIDDEN void wk__storage_cache_clear(void);
WK__HIDDEN void wk__ameta_free(wk_tensor *t);
WK__HIDDEN bool wk__requires_grad(const wk_tensor *t);
WK__HIDDEN void wk__autograd_init(void);

/* Small helpers */
WK__HIDDEN char *wk__strdup(const char *s);
WK__HIDDEN int wk__wrap_dim(const char *op, int64_t dim, int ndim, bool *ok);

#endif
