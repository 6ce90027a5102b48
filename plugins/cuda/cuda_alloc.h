/* The cuda plugin's caching allocator, as plain C over a backing allocator
 * (cudaMalloc in the plugin, malloc in the CPU unit tests): size-class bins
 * in a small and a large pool per stream, best fit, block split and merge,
 * statistics, empty_cache and a PyTorch-like memory summary. No CUDA and no
 * Wick headers here, so tests/check_cuda_alloc.c runs it without a GPU. */
#ifndef WICK_CUDA_ALLOC_H
#define WICK_CUDA_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Sizes, like PyTorch's CUDACachingAllocator. */
#define CA_MIN_BLOCK ((size_t)512)           /* every size is rounded up to this */
#define CA_SMALL_SIZE ((size_t)1 << 20)      /* requests up to 1 MiB use the small pool */
#define CA_SMALL_BUFFER ((size_t)2 << 20)    /* small-pool segments are 2 MiB */
#define CA_MIN_LARGE_ALLOC ((size_t)10 << 20) /* large requests below this get ... */
#define CA_LARGE_BUFFER ((size_t)20 << 20)   /* ... a 20 MiB segment */
#define CA_ROUND_LARGE ((size_t)2 << 20)     /* larger segments: 2 MiB multiples */

/* Memory behind the cache. alloc returns 0 with *ptr set, 1 when the device is
 * out of memory (the cache then frees unused segments and retries), or -1
 * for another error (described into msg, msg_n bytes). */
typedef struct ca_backing {
  void *ctx;
  int (*alloc)(void *ctx, int device, size_t nbytes, void **ptr, char *msg, size_t msg_n);
  void (*free)(void *ctx, int device, void *ptr);
  /* (optional) free and total bytes of the device, for OOM messages. */
  int (*mem_info)(void *ctx, int device, size_t *free_bytes, size_t *total_bytes);
} ca_backing;

/* Statistics of one device (bytes unless named counts). */
typedef struct ca_stats {
  int64_t allocated, max_allocated;   /* blocks handed out (rounded sizes) */
  int64_t requested;                  /* bytes asked for by the callers */
  int64_t reserved, max_reserved;     /* segments obtained from the backing */
  int64_t active_blocks, segments;    /* counts now */
  int64_t inactive_split;             /* free bytes in segments partly in use */
  int64_t alloc_count, free_count;    /* calls since start */
  int64_t num_alloc_retries;          /* backing OOMs cured by freeing cached segments */
  int64_t num_ooms;                   /* OOMs reported to callers */
  int64_t cache_hits;                 /* allocations served without the backing */
} ca_stats;

typedef struct ca_allocator ca_allocator;

/* A cache for devices 0..num_devices-1 over `backing` (copied). NULL when out
 * of host memory. max_split_size (bytes, 0 = unlimited): cached blocks at
 * least this big are never split, and serve only requests near their size. */
ca_allocator *ca_new(const ca_backing *backing, int num_devices, size_t max_split_size);
/* Returns every segment to the backing (blocks still in use included) and frees the cache. */
void ca_destroy(ca_allocator *a);

/* Result of ca_alloc. */
typedef enum { CA_OK = 0, CA_OOM = 1, CA_ERROR = 2, CA_BAD_ARG = 3 } ca_result;

/* Allocates nbytes (0 is served as one minimal block) for use on `stream` of
 * `device`. On CA_OOM or CA_ERROR *ptr is NULL and msg holds a sentence
 * (for CA_OOM: requested, allocated, reserved and free sizes, and what to try). */
ca_result ca_alloc(ca_allocator *a, int device, uintptr_t stream, size_t nbytes, void **ptr, char *msg,
                   size_t msg_n);
/* Returns a block to the cache of its stream (merged with free neighbours).
 * Returns false when ptr is not a live block of this cache (double free). */
bool ca_free(ca_allocator *a, void *ptr);
/* Size of the block holding ptr (its rounded size), 0 when unknown. */
size_t ca_block_size(ca_allocator *a, const void *ptr);

/* Releases every fully free cached segment of `device` (-1: all devices). */
void ca_empty_cache(ca_allocator *a, int device);
void ca_get_stats(ca_allocator *a, int device, ca_stats *out);
/* Peaks (max_allocated, max_reserved) restart from the current values. */
void ca_reset_peak(ca_allocator *a, int device);
/* A text report like torch.cuda.memory_summary() into buf (snprintf rules);
 * returns the length it needs. */
size_t ca_summary(ca_allocator *a, int device, char *buf, size_t n);
/* "12.50 MiB" (human readable bytes) into buf; returns buf. */
const char *ca_format_bytes(int64_t bytes, char *buf, size_t n);

#endif
