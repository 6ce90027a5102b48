/* Wick ABI: the basic types every other header uses: status codes, dtypes,
 * devices and the opaque handles. Enum numbers are part of the ABI: they are
 * written once here and never reused. */
#ifndef WICK_TYPES_H
#define WICK_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define WK_EXTERN_C extern "C"
#else
#define WK_EXTERN_C
#endif

#if defined(WK_BUILDING_CORE)
#define WK_API WK_EXTERN_C __attribute__((visibility("default")))
#else
#define WK_API WK_EXTERN_C
#endif

#if defined(__cplusplus)
#define WK_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define WK_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif

/* ---- Status codes (X-macro: enum value, number, short name) ---------------- */
#define WK_STATUS_LIST(X)                                                   \
  X(WK_OK, 0, "ok")                                                          \
  X(WK_ERR_INVALID_ARG, 1, "invalid argument")                               \
  X(WK_ERR_SHAPE, 2, "shape mismatch")                                       \
  X(WK_ERR_DTYPE, 3, "dtype mismatch")                                       \
  X(WK_ERR_DEVICE, 4, "device mismatch")                                     \
  X(WK_ERR_NO_MEMORY, 5, "out of memory")                                    \
  X(WK_ERR_NOT_FOUND, 6, "not found")                                        \
  X(WK_ERR_NO_KERNEL, 7, "no kernel")                                        \
  X(WK_ERR_ABI, 8, "ABI mismatch")                                           \
  X(WK_ERR_PLUGIN, 9, "plugin failure")                                      \
  X(WK_ERR_IO, 10, "I/O error")                                              \
  X(WK_ERR_STATE, 11, "invalid state")                                       \
  X(WK_ERR_INDEX, 12, "index out of range")                                  \
  X(WK_ERR_INTERNAL, 13, "internal error")                                   \
  X(WK_ERR_NULL, 14, "NULL argument")                                        \
  X(WK_ERR_AUTOGRAD, 15, "autograd error")                                   \
  X(WK_ERR_SCHEMA, 16, "schema error")                                       \
  X(WK_ERR_UNSUPPORTED, 17, "unsupported")

typedef enum wk_status {
#define WK__X(e, n, s) e = n,
  WK_STATUS_LIST(WK__X)
#undef WK__X
} wk_status;

/* ---- Dtypes (X-macro: enum, number, short name, PyTorch name, PyTorch ScalarType
 * word, size, kind) ------------------------------------------------------------
 * The ScalarType word is what PyTorch's messages print ("not implemented for
 * 'Long'"); the SDK's wk_dtype_torch_name reads it.
 * kind: 'b' bool, 'i' signed int, 'u' unsigned int, 'f' floating.
 * Number 0 is WK_DTYPE_DEFAULT: "not given", so zero-initialised options mean
 * "the default dtype" (float32 for factories, the input's dtype otherwise). */
#define WK_DTYPE_LIST(X)                                      \
  X(WK_F32, 1, "f32", "torch.float32", "Float", 4, 'f')       \
  X(WK_F64, 2, "f64", "torch.float64", "Double", 8, 'f')      \
  X(WK_F16, 3, "f16", "torch.float16", "Half", 2, 'f')        \
  X(WK_BF16, 4, "bf16", "torch.bfloat16", "BFloat16", 2, 'f') \
  X(WK_I8, 5, "i8", "torch.int8", "Char", 1, 'i')             \
  X(WK_U8, 6, "u8", "torch.uint8", "Byte", 1, 'u')            \
  X(WK_I16, 7, "i16", "torch.int16", "Short", 2, 'i')         \
  X(WK_I32, 8, "i32", "torch.int32", "Int", 4, 'i')           \
  X(WK_I64, 9, "i64", "torch.int64", "Long", 8, 'i')          \
  X(WK_BOOL, 10, "bool", "torch.bool", "Bool", 1, 'b')

/* ---- Quantized dtypes (ABI 1.3; X-macro: enum, number, short name, PyTorch name,
 * PyTorch ScalarType word, size, underlying integer dtype) -------------------------
 * A quantized tensor stores integers of the underlying dtype plus quantization
 * parameters (<wick/qtensor.h>): per-tensor scale and zero_point, or per-channel
 * scales and zero_points along an axis; real value = (q - zero_point) * scale.
 * They are not in WK_DTYPE_LIST: ordinary ops do not compute on them. */
#define WK_QDTYPE_LIST(X)                                                \
  X(WK_QINT8, 11, "qint8", "torch.qint8", "QInt8", 1, WK_I8)              \
  X(WK_QUINT8, 12, "quint8", "torch.quint8", "QUInt8", 1, WK_U8)          \
  X(WK_QINT32, 13, "qint32", "torch.qint32", "QInt32", 4, WK_I32)

typedef enum wk_dtype {
  WK_DTYPE_DEFAULT = 0,
#define WK__X(e, n, s, t, w, sz, k) e = n,
  WK_DTYPE_LIST(WK__X)
#undef WK__X
  WK_DTYPE_COUNT_ = 11, /* end of the plain dtypes above (the quantized ones follow) */
#define WK__X(e, n, s, t, w, sz, u) e = n,
  WK_QDTYPE_LIST(WK__X)
#undef WK__X
  WK_QDTYPE_END_ = 14
} wk_dtype;

/* ---- Devices ---------------------------------------------------------------
 * A device is a run-time value: a device type id plus an index. Type 0 means
 * "not given" (defaults apply), type 1 is the built-in cpu; plugins register
 * further types by name (wk_device_type_register) and get ids from 16 up. */
typedef struct wk_device {
  int32_t type;  /* WK_DEVICE_DEFAULT, WK_DEVICE_CPU or a registered id */
  int32_t index; /* ordinal within the type; 0 for cpu */
} wk_device;

/* WK_DEVICE_META (ABI 1.2): built in, like PyTorch's meta device: tensors
 * with dtype, shape and strides but no data; ops run their meta functions only. */
enum { WK_DEVICE_DEFAULT = 0, WK_DEVICE_CPU = 1, WK_DEVICE_META = 2, WK_DEVICE_FIRST_PLUGIN = 16 };
#define WK_MAX_DEVICE_TYPES 64

/* ---- Opaque handles ---------------------------------------------------------- */
typedef struct wk_tensor wk_tensor; /* refcounted tensor handle */
typedef struct wk_op wk_op;         /* a declared operator (lives forever) */
typedef struct wk_layer wk_layer;   /* a dispatch layer (lives forever) */
typedef struct wk_plugin wk_plugin; /* a plugin candidate (lives forever) */

/* Largest number of dimensions a tensor may have. */
#define WK_MAX_DIMS 16

#endif
