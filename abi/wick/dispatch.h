/* Wick ABI: schema-first operators and the dispatcher. An op is declared once
 * with a schema string; kernels register against (op, device type) with a
 * priority and an optional supports() predicate; dispatch layers (tracing,
 * autocast, autograd, profiling) interpose above the kernels. All kernels use
 * one boxed calling convention: an array of wk_value arguments in, an array of
 * wk_value results out. */
#ifndef WICK_DISPATCH_H
#define WICK_DISPATCH_H

#include <wick/types.h>

/* ---- Boxed values ------------------------------------------------------------ */
typedef enum wk_value_tag {
  WK_V_NONE = 0,    /* None (an optional argument not given) */
  WK_V_TENSOR = 1,  /* u.t (borrowed in args; a new reference in outs) */
  WK_V_INT = 2,     /* u.i */
  WK_V_FLOAT = 3,   /* u.f */
  WK_V_BOOL = 4,    /* u.b */
  WK_V_INTS = 5,    /* u.ints with len elements (borrowed) */
  WK_V_FLOATS = 6,  /* u.floats with len elements (borrowed) */
  WK_V_TENSORS = 7, /* u.tensors with len elements (borrowed; may hold NULL for Tensor?[]) */
  WK_V_STR = 8,     /* u.s (borrowed, NUL-terminated) */
  WK_V_DTYPE = 9,   /* u.dtype */
  WK_V_DEVICE = 10  /* u.device */
} wk_value_tag;

typedef struct wk_value {
  int32_t tag; /* wk_value_tag */
  int32_t len; /* element count for lists */
  union {
    wk_tensor *t;
    int64_t i;
    double f;
    bool b;
    const int64_t *ints;
    const double *floats;
    wk_tensor *const *tensors;
    const char *s;
    wk_dtype dtype;
    wk_device device;
  } u;
} wk_value;
WK_STATIC_ASSERT(sizeof(wk_value) == 16, "wk_value is frozen at ABI 1.0");

/* Value constructors (designated initialisers keep call sites short). */
#define WK_VNONE ((wk_value){.tag = WK_V_NONE})
#define WK_VI(x) ((wk_value){.tag = WK_V_INT, .u.i = (int64_t)(x)})
#define WK_VF(x) ((wk_value){.tag = WK_V_FLOAT, .u.f = (double)(x)})
#define WK_VB(x) ((wk_value){.tag = WK_V_BOOL, .u.b = (bool)(x)})
#define WK_VINTS(p, n) ((wk_value){.tag = WK_V_INTS, .len = (int32_t)(n), .u.ints = (p)})
#define WK_VFLOATS(p, n) ((wk_value){.tag = WK_V_FLOATS, .len = (int32_t)(n), .u.floats = (p)})
#define WK_VTS(p, n) ((wk_value){.tag = WK_V_TENSORS, .len = (int32_t)(n), .u.tensors = (p)})
/* These evaluate their argument once (NULL / 0 / a default device give None). */
static inline wk_value wk_vt(wk_tensor *t) {
  wk_value v = {0};
  v.tag = t ? WK_V_TENSOR : WK_V_NONE;
  v.u.t = t;
  return v;
}
static inline wk_value wk_vs(const char *s) {
  wk_value v = {0};
  v.tag = s ? WK_V_STR : WK_V_NONE;
  v.u.s = s;
  return v;
}
static inline wk_value wk_vdt(wk_dtype dt) {
  wk_value v = {0};
  v.tag = dt ? WK_V_DTYPE : WK_V_NONE;
  v.u.dtype = dt;
  return v;
}
static inline wk_value wk_vdev(wk_device d) {
  wk_value v = {0};
  v.tag = d.type ? WK_V_DEVICE : WK_V_NONE;
  v.u.device = d;
  return v;
}
#define WK_VT(x) wk_vt(x)
#define WK_VS(x) wk_vs(x)
#define WK_VDT(x) wk_vdt(x)
#define WK_VDEV(x) wk_vdev(x)

/* Largest number of arguments / results an op may have. */
#define WK_MAX_ARGS 24
#define WK_MAX_OUTS 8

/* ---- Operator declaration ------------------------------------------------------ */
/* Tags (bit flags) describing an op. */
enum {
  WK_TAG_POINTWISE = 1u << 0,
  WK_TAG_REDUCTION = 1u << 1,
  WK_TAG_VIEW = 1u << 2,      /* returns a view of an input */
  WK_TAG_INPLACE = 1u << 3,   /* mutates its first argument */
  WK_TAG_FACTORY = 1u << 4,   /* creates tensors from no tensor input */
  WK_TAG_RANDOM = 1u << 5,    /* consumes the RNG */
  WK_TAG_NONDIFF = 1u << 6,   /* has no derivative (comparisons, argmax, ...) */
  WK_TAG_BACKWARD = 1u << 7,  /* a backward helper op */
  WK_TAG_ANY_DEVICE = 1u << 8, /* tensor arguments may live on different devices */
  WK_TAG_COMPOSITE = 1u << 9   /* implemented with other ops (autograd sees those) */
};

/* Declares an op from its schema, e.g.
 *   "add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
 * Types: Tensor, int, float, bool, str, Scalar, ScalarType, Device, each with
 * "?" (optional) and "[]"/"[N]" lists (int[], float[], Tensor[], Tensor?[]);
 * Tensor annotations (a), (a!) mark aliasing and mutation. Declaring an op that
 * exists with the same schema returns it; a different schema is an error.
 * Returns the op (lives forever) or NULL with WK_ERR_SCHEMA naming the
 * offending text. */
WK_API wk_op *wk_op_declare(const char *schema, uint32_t tags);
/* Finds an op by name ("add", "sum.dim_IntList"). NULL (and WK_ERR_NOT_FOUND
 * naming the op) when absent. */
WK_API wk_op *wk_op_find(const char *name);
/* Accessors. Strings are static (live as long as the process). */
WK_API const char *wk_op_name(const wk_op *op);
WK_API const char *wk_op_schema(const wk_op *op);
WK_API uint32_t wk_op_tags(const wk_op *op);
WK_API int wk_op_num_args(const wk_op *op);
WK_API int wk_op_num_outs(const wk_op *op);
/* Name of argument i ("self"); NULL when out of range. */
WK_API const char *wk_op_arg_name(const wk_op *op, int i);
/* Index of the argument called `name`, or -1. */
WK_API int wk_op_arg_index(const wk_op *op, const char *name);
/* Type text of argument i as written in the schema ("int[2]", "Tensor(a!)"). */
WK_API const char *wk_op_arg_type(const wk_op *op, int i);
/* Default value of argument i (borrowed, static), or NULL when it has none. */
WK_API const wk_value *wk_op_arg_default(const wk_op *op, int i);
/* Index of the argument the op mutates (Tensor(x!)), or -1. */
WK_API int wk_op_mutated_arg(const wk_op *op);
/* Number of ops declared, and the i-th (declaration order). */
WK_API int wk_op_count(void);
WK_API wk_op *wk_op_at(int i);

/* ---- Kernels ----------------------------------------------------------------- */
/* What a kernel is told about its call. */
/* What an op's meta function decided about one result (ABI 1.2): its dtype,
 * shape and device, before any kernel runs. ndim == WK_META_DYNAMIC marks a
 * result whose shape depends on the data (masked_select): the kernel decides,
 * and the op cannot run on the meta device. Strides are contiguous unless
 * the meta function set WK_META_STRIDED and filled strides[]. For an op with
 * an `int[N] output_mask` argument, the dispatcher marks each result the
 * mask switches off WK_META_NONE (the kernel returns None there). */
enum { WK_META_DYNAMIC = -1, WK_META_STRIDED = 1,
       WK_META_NONE = 2 /* the result is None: an output the call's output_mask switched off */ };
typedef struct wk_meta_out {
  wk_dtype dtype;
  int32_t ndim;
  int64_t sizes[WK_MAX_DIMS];
  int64_t strides[WK_MAX_DIMS]; /* read only with WK_META_STRIDED */
  wk_device device;
  uint32_t flags;
  uint32_t reserved_;
} wk_meta_out;

typedef struct wk_kernel_ctx {
  size_t struct_size;
  wk_op *op;
  wk_device device; /* device the call dispatched to */
  void *user;       /* the registration's user pointer */
  /* ---- ABI 1.2 (check struct_size before reading) ---- */
  /* What the op's meta function decided, one entry per result (borrowed, valid
   * during the call); NULL when the op has no meta function. The arguments
   * were already checked by it: a kernel only computes. */
  const wk_meta_out *meta;
} wk_kernel_ctx;

/* A boxed kernel. args: wk_op_num_args(op) values, defaults already filled in,
 * checked against the schema's types. The kernel writes wk_op_num_outs(op)
 * results into outs: tensors as new references, except results that alias a
 * mutated argument (returns typed Tensor(a!)), which are the argument itself,
 * borrowed. A Tensor[] result is one WK_V_TENSORS value whose array the
 * kernel allocates with malloc (callers free it with wk_free) holding new
 * references. Returns WK_OK or a status after recording a message with
 * wk_error(); on failure it releases whatever it created. */
typedef wk_status (*wk_kernel_fn)(const wk_kernel_ctx *ctx, const wk_value *args,
                                  wk_value *outs);
/* (optional) Returns false to decline a call so a lower-priority kernel runs. */
typedef bool (*wk_supports_fn)(const wk_kernel_ctx *ctx, const wk_value *args);

/* Kernel priorities: the reference cpu plugin uses WK_PRIORITY_REFERENCE;
 * optimised backends register above it. */
enum { WK_PRIORITY_FALLBACK = 0, WK_PRIORITY_REFERENCE = 100, WK_PRIORITY_OPTIMIZED = 200 };

typedef struct wk_kernel_desc {
  size_t struct_size;      /* sizeof(wk_kernel_desc) */
  const char *op;          /* op name */
  int32_t device_type;     /* WK_DEVICE_CPU, a registered id, or
                              WK_DEVICE_DEFAULT for "any device" */
  int32_t priority;
  wk_kernel_fn fn;
  wk_supports_fn supports; /* (optional) */
  void *user;              /* (optional) handed back in ctx->user */
  const char *name;        /* (optional) shown by `wick info` */
} wk_kernel_desc;
WK_STATIC_ASSERT(sizeof(wk_kernel_desc) == 56, "wk_kernel_desc is frozen at ABI 1.0");

/* Registers a kernel. The registering plugin is recorded as its owner.
 * Fails when the op is unknown or the description is malformed. */
WK_API wk_status wk_kernel_register(const wk_kernel_desc *desc);

/* Registers a plain C function as a kernel: its natural signature is derived
 * from the op's schema (Tensor -> wk_tensor *, int -> int64_t, float -> double,
 * bool -> bool, ScalarType -> wk_dtype (int), str -> const char *,
 * int[]/float[] -> (const int64_t * / const double *, int64_t n),
 * Tensor[] -> (wk_tensor *const *, int64_t n),
 * Scalar -> double, Device -> const wk_device *; optional int/float/bool/
 * Scalar arrive as pointers (NULL for None), optional Tensor/str as NULL,
 * ScalarType? as 0). A single Tensor result is the function's return value (a
 * new reference; for an in-place op the borrowed mutated argument; NULL on
 * error); several results are wk_tensor ** out-parameters appended after the
 * arguments and the function returns wk_status. The call interface is built
 * once here (libffi). Ops returning Tensor[] need a boxed kernel. */
WK_API wk_status wk_kernel_register_unboxed(const char *op, int32_t device_type,
                                            int32_t priority, void (*fn)(void),
                                            const char *name);

/* Number of kernels registered for an op, and details of the i-th in dispatch
 * order (highest priority first). Strings are static or plugin-lifetime. */
WK_API int wk_op_num_kernels(const wk_op *op);
WK_API wk_status wk_op_kernel_info(const wk_op *op, int i, int32_t *device_type,
                                   int32_t *priority, const char **name,
                                   const char **plugin);

/* PyTorch's result_type over boxed arguments: tensors with dimensions decide
 * within a category (bool < integer < floating); 0-dim tensors and Scalar
 * values (WK_V_INT, WK_V_FLOAT, WK_V_BOOL) only raise the category (a float
 * scalar with integer tensors gives float32). Non-tensor, non-scalar values
 * are ignored. WK_DTYPE_DEFAULT when there is nothing to decide from. */
WK_API wk_dtype wk_result_type(const wk_value *args, int n);

/* ---- Meta functions (ABI 1.2) ---------------------------------------------------- */
/* An op's meaning, decided once for every device: a meta function checks the
 * arguments (PyTorch's messages, the op's name first) and fills one
 * wk_meta_out per result (outs[i] arrive zeroed except device, which holds the
 * device the call dispatched to). It reads shapes and dtypes only, never
 * data. The dispatcher runs it once below every layer, before the kernel,
 * and hands the kernel its decision in ctx->meta; on the `meta` device it is
 * the whole op. For a mutated result (in-place, out=) it describes the
 * functional result; the dispatcher then checks that the target can hold it
 * (same shape; a dtype the result can be cast to). Returns WK_OK, or a status
 * after recording a message with wk_error(). */
typedef wk_status (*wk_meta_fn)(wk_op *op, const wk_value *args, wk_meta_out *outs);

/* Sets the meta function of an op that has none (a plugin's own ops; the
 * standard ops have theirs from the core). Fails when the op already has one. */
WK_API wk_status wk_op_set_meta(wk_op *op, wk_meta_fn fn);
/* True when the op has a meta function (or runs on any device through a
 * kernel written with other ops, which then decide), so it runs on `meta`. */
WK_API bool wk_op_has_meta(const wk_op *op);
/* Runs the op's meta function alone on normalised-or-partial boxed arguments
 * (like wk_op_call: defaults filled in, types checked): fills outs[0..num_outs)
 * and returns WK_OK, or the error the op would give on any device. */
WK_API wk_status wk_op_meta(wk_op *op, const wk_value *args, int nargs, wk_meta_out *outs);

/* ---- Calling ------------------------------------------------------------------- */
/* Calls an op through every enabled dispatch layer and the best kernel.
 * nargs may be less than the schema's count when the rest have defaults.
 * On success outs holds num_outs results: tensors are new references, which
 * the current scope owns if one is open, except the results of in-place and
 * out= ops, which are the (borrowed) mutated argument. On failure outs are NONE and the
 * message names the op. A NULL tensor where a Tensor is required propagates:
 * the earlier error is kept. */
WK_API wk_status wk_op_call(wk_op *op, const wk_value *args, int nargs, wk_value *outs);
/* Calls the op's i-th kernel (wk_op_kernel_info order) directly, below every
 * dispatch layer, ignoring its supports() predicate: for conformance tests
 * that compare a plugin's kernel against the reference. */
WK_API wk_status wk_op_call_kernel(wk_op *op, int i, const wk_value *args, int nargs, wk_value *outs);
/* Finds the op by name and calls it (slower: one lookup per call). */
WK_API wk_status wk_call(const char *name, const wk_value *args, int nargs, wk_value *outs);

/* ---- Dispatch layers ------------------------------------------------------------- */
/* Layer levels, highest runs first. Layers below WK_LEVEL_AUTOGRAD see the
 * forward and the backward ops (profilers, lazy capture). */
enum {
  WK_LEVEL_TRACE = 400,
  WK_LEVEL_AUTOCAST = 300,
  WK_LEVEL_AUTOGRAD = 200,
  WK_LEVEL_PROFILE = 100
};

/* A layer's handler. It does its work and passes the call on with
 * wk_layer_redispatch(self, ...), which continues with the layers below it. */
typedef wk_status (*wk_layer_fn)(wk_layer *self, void *user, wk_op *op,
                                 const wk_value *args, wk_value *outs);

/* Registers a layer at `level` (one layer per level). It starts disabled for
 * every thread unless enabled_by_default. Returns the layer or NULL. */
WK_API wk_layer *wk_layer_register(const char *name, int level, wk_layer_fn fn,
                                   void *user, bool enabled_by_default);
WK_API wk_layer *wk_layer_find(const char *name);
/* Enables or disables a layer for the whole process. */
WK_API void wk_layer_set_enabled(wk_layer *layer, bool on);
/* Excludes a layer on this thread (nestable): returns the previous state so
 * callers restore it, like a guard. */
WK_API bool wk_layer_exclude(wk_layer *layer, bool excluded);
/* Continues dispatch below `self` with full (normalised) args. */
WK_API wk_status wk_layer_redispatch(wk_layer *self, wk_op *op, const wk_value *args,
                                     wk_value *outs);

#endif
