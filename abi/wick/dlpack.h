/* Wick ABI: DLPack interchange. The structs below follow the DLPack 0.8
 * layout (dlpack.h from dmlc), so a DLManagedTensor from PyTorch, NumPy or
 * another framework can be handed to wk_from_dlpack and vice versa. When the
 * real dlpack.h was included first, its definitions are used instead. */
#ifndef WICK_DLPACK_H
#define WICK_DLPACK_H

#include <wick/types.h>

#ifndef DLPACK_VERSION
#define DLPACK_VERSION 80
typedef enum { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3 } DLDeviceType;
typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;
typedef enum { kDLInt = 0U, kDLUInt = 1U, kDLFloat = 2U, kDLBfloat = 4U, kDLBool = 6U } DLDataTypeCode;
typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;
typedef struct {
  void *data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t *shape;
  int64_t *strides; /* in elements; NULL means compact row-major */
  uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;
#endif

/* Exports `t` (borrowed) as a new DLManagedTensor that keeps the storage alive
 * until the consumer calls its deleter. NULL on error. */
WK_API DLManagedTensor *wk_to_dlpack(wk_tensor *t);
/* Imports `m`, taking ownership: its deleter runs when the last Wick view of
 * the memory dies (or at once if the import fails). Returns a new reference. */
WK_API wk_tensor *wk_from_dlpack(DLManagedTensor *m);

#endif
