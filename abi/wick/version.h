/* Wick ABI: library and ABI version numbers. The ABI major must match between
 * the core and a plugin; a core accepts plugins built for a minor <= its own. */
#ifndef WICK_VERSION_H
#define WICK_VERSION_H

#include <wick/types.h>

#define WK_VERSION_MAJOR 0
#define WK_VERSION_MINOR 1
#define WK_VERSION_PATCH 0
#define WK_VERSION_STRING "0.1.0"

#define WK_ABI_MAJOR 1
#define WK_ABI_MINOR 4 /* 1.1: streams, events, pinned memory, memory statistics, device properties;
                          1.2: meta functions (wk_op_set_meta, ctx->meta), the meta device;
                          1.3: error scoping (wk_error_new_call), the allocator hook (wk_malloc),
                               quantized tensors (qint8/quint8/qint32, <wick/qtensor.h>),
                               activation checkpointing (wk_activation_checkpoint),
                               graphs, tracing and replay (<wick/graph.h>), autograd queue callbacks;
                          1.4: a plugin-supplied parallel runtime (wk_set_parallel_runtime),
                               full backward (pre) hooks on modules, wk_module_requires_grad_,
                               memory formats (WK_CHANNELS_LAST, wk_contiguous_format) */

/* Returns the library's version string (static, never freed). Compare with
 * WK_VERSION_STRING to check that header and library match. */
WK_API const char *wk_version(void);

/* Returns the ABI version the library implements: (major << 16) | minor. */
WK_API uint32_t wk_abi_version(void);

#endif
