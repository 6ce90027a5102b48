/* Wick ABI: devices. cpu is built in; other device types are brought by
 * plugins that register an interface (allocator, copies, synchronisation,
 * device count) under a name, and are then addressed as "name:index". */
#ifndef WICK_DEVICE_H
#define WICK_DEVICE_H

#include <wick/types.h>

/* ---- ABI 1.1 descriptors ------------------------------------------------------
 * A stream of a device: work queued on one stream runs in order, work on
 * different streams may overlap. A plain value like wk_device; handle NULL
 * means the device's default stream. Made by wk_stream_create (destroy with
 * wk_stream_destroy) or returned by wk_current_stream (borrowed). */
typedef struct wk_stream {
  wk_device device;
  void *handle; /* the plugin's stream (cudaStream_t for cuda) */
} wk_stream;
WK_STATIC_ASSERT(sizeof(wk_stream) == 16, "wk_stream is frozen at ABI 1.1");

/* An event: a marker recorded on a stream, to wait for or to time work.
 * Made by wk_event_create, destroyed by wk_event_destroy. */
typedef struct wk_event {
  wk_device device;
  void *handle;
} wk_event;
WK_STATIC_ASSERT(sizeof(wk_event) == 16, "wk_event is frozen at ABI 1.1");

/* wk_event_create flags (bits, never renumbered). */
enum {
  WK_EVENT_DEFAULT = 0,
  WK_EVENT_ENABLE_TIMING = 1, /* needed by wk_event_elapsed_time */
  WK_EVENT_BLOCKING = 2       /* wk_event_synchronize sleeps instead of spinning */
};

/* Properties of one device (torch.cuda.get_device_properties). Callers set
 * struct_size = sizeof(wk_device_props); fields unknown to a plugin stay 0. */
typedef struct wk_device_props {
  size_t struct_size;
  char name[256];                /* "NVIDIA H200" */
  uint64_t total_memory;         /* bytes */
  int32_t major, minor;          /* compute capability (9, 0) */
  int32_t multi_processor_count; /* SMs */
  int32_t warp_size;
} wk_device_props;
WK_STATIC_ASSERT(sizeof(wk_device_props) == 288, "wk_device_props is frozen at ABI 1.1");

/* Memory statistics of one device (torch.cuda.memory_stats), in bytes unless
 * a count. Callers set struct_size; fields unknown to a plugin stay 0. */
typedef struct wk_memory_stats {
  size_t struct_size;
  int64_t allocated, max_allocated; /* held by tensors (allocator block sizes) */
  int64_t reserved, max_reserved;   /* obtained from the device (cached included) */
  int64_t requested;                /* bytes callers asked for */
  int64_t active_blocks, segments, inactive_split;
  int64_t alloc_count, free_count;
  int64_t num_alloc_retries;        /* device OOMs cured by freeing the cache */
  int64_t num_ooms;                 /* OOMs reported to callers */
} wk_memory_stats;
WK_STATIC_ASSERT(sizeof(wk_memory_stats) == 104, "wk_memory_stats is frozen at ABI 1.1");

/* Interface a plugin implements for a device type. Fields marked (optional)
 * may be NULL. Append-only; readers honour struct_size: a plugin built for
 * ABI 1.0 has none of the 1.1 fields, which then take their defaults. */
typedef struct wk_device_iface {
  size_t struct_size;      /* sizeof(wk_device_iface) at the plugin's build */
  uint32_t abi_version;    /* (WK_ABI_MAJOR << 16) | WK_ABI_MINOR */
  const char *name;        /* "cuda": lowercase, [a-z0-9_]+, static */
  void *user;              /* passed back to every call */
  /* Number of devices present now; 0 is valid (no hardware). */
  int (*device_count)(void *user);
  /* Allocates nbytes on device `index`; NULL with an error recorded on
   * failure. Must accept nbytes == 0 (may return any non-NULL pointer). */
  void *(*alloc)(void *user, int index, size_t nbytes);
  void (*free)(void *user, int index, void *ptr);
  /* Copies nbytes between a pointer on this device type and one on cpu or the
   * same device type (src_dev/dst_dev tell which). */
  wk_status (*copy)(void *user, void *dst, wk_device dst_dev, const void *src,
                    wk_device src_dev, size_t nbytes);
  /* (optional) Waits for all work on device `index`. Defaults to a no-op. */
  wk_status (*synchronize)(void *user, int index);
  /* (optional) Why there are no devices ("no CUDA driver found"). Static. */
  const char *(*status_message)(void *user);

  /* ---- ABI 1.1: all optional; the default of a missing one is given. -------
   * `index` is always a present device; `stream`/`event` are the plugin's own
   * handles (NULL stream = the default stream). */
  /* Current device of the calling thread. Default: the core keeps it. */
  int (*current_device)(void *user);
  wk_status (*set_current_device)(void *user, int index);
  /* Fills *out (struct_size set by the core). Default: WK_ERR_UNSUPPORTED. */
  wk_status (*get_properties)(void *user, int index, wk_device_props *out);
  /* Streams. Default: only the default stream exists (create fails with
   * WK_ERR_UNSUPPORTED; synchronising it synchronises the device). */
  wk_status (*stream_create)(void *user, int index, int priority, void **out);
  void (*stream_destroy)(void *user, int index, void *stream);
  void *(*current_stream)(void *user, int index);
  wk_status (*set_current_stream)(void *user, int index, void *stream);
  wk_status (*stream_synchronize)(void *user, int index, void *stream);
  wk_status (*stream_query)(void *user, int index, void *stream, bool *done);
  wk_status (*stream_wait_event)(void *user, int index, void *stream, void *event);
  /* Events (flags: WK_EVENT_*). Default: WK_ERR_UNSUPPORTED. */
  wk_status (*event_create)(void *user, int index, unsigned flags, void **out);
  void (*event_destroy)(void *user, int index, void *event);
  wk_status (*event_record)(void *user, int index, void *event, void *stream);
  wk_status (*event_synchronize)(void *user, int index, void *event);
  wk_status (*event_query)(void *user, int index, void *event, bool *done);
  wk_status (*event_elapsed_ms)(void *user, int index, void *start, void *end, float *ms);
  /* Like copy, queued on `stream` of the device side (the source's when both
   * are of this type); returns before the copy ends when host memory is
   * pinned. Default: copy (synchronous). */
  wk_status (*copy_async)(void *user, void *dst, wk_device dst_dev, const void *src, wk_device src_dev,
                          size_t nbytes, void *stream);
  /* Page-locked host memory for fast, asynchronous copies; NULL with an error
   * recorded on failure. Default: this type offers none. */
  void *(*host_alloc_pinned)(void *user, size_t nbytes);
  void (*host_free_pinned)(void *user, void *ptr);
  /* Memory statistics of the device's allocator. Default: WK_ERR_UNSUPPORTED. */
  wk_status (*memory_stats)(void *user, int index, wk_memory_stats *out);
  wk_status (*reset_peak_memory_stats)(void *user, int index);
  /* Returns cached, unused memory to the device. Default: nothing cached, WK_OK. */
  wk_status (*empty_cache)(void *user, int index);
  /* A text report into buf (snprintf rules); returns the length it needs.
   * Default: one built from memory_stats. */
  size_t (*memory_summary)(void *user, int index, char *buf, size_t n);
} wk_device_iface;
WK_STATIC_ASSERT(offsetof(wk_device_iface, current_device) == 80, "the ABI 1.0 part of wk_device_iface is frozen");
WK_STATIC_ASSERT(sizeof(wk_device_iface) == 264, "wk_device_iface is frozen at ABI 1.1");

/* Registers a device type; copies *iface. Returns the new type id (>= 16) in
 * *type_out. Fails with WK_ERR_INVALID_ARG on a bad or taken name. */
WK_API wk_status wk_device_type_register(const wk_device_iface *iface, int32_t *type_out);
/* Type id for a name ("cpu" -> WK_DEVICE_CPU); -1 when unknown. */
WK_API int32_t wk_device_type_find(const char *name);
/* Name of a type id ("cpu"); NULL when unknown. Static. */
WK_API const char *wk_device_type_name(int32_t type);
/* Number of devices of a type; 0 for an unknown type. */
WK_API int wk_device_count(int32_t type);
/* Status message of a device type's plugin, or "" when it has none. */
WK_API const char *wk_device_type_status(int32_t type);
/* Parses "cpu", "cuda", "cuda:1" into *out. Errors name the text and list the
 * registered types. */
WK_API wk_status wk_device_parse(const char *text, wk_device *out);
/* Writes "cuda:1" (or "cpu") into buf; returns buf. */
WK_API const char *wk_device_str(wk_device dev, char *buf, size_t n);
/* Convenience constructor. */
static inline wk_device wk_cpu(void) { wk_device d = {WK_DEVICE_CPU, 0}; return d; }
/* True when both name the same device (default is treated as cpu:0). */
WK_API bool wk_device_equal(wk_device a, wk_device b);

/* ABI 1.2. Sets the calling thread's default device for new tensors, like
 * torch.set_default_device (and `with torch.device("meta"):`): factory ops
 * and wk_empty* called by the program with no device given create their
 * tensors there, so `wk_set_default_device(meta)` around a model's
 * constructor builds it without allocating data. Ops choose their device
 * from their tensors as before, and kernels' temporaries are not affected.
 * {WK_DEVICE_DEFAULT, 0} restores cpu. Returns the previous default; an
 * unknown device type records WK_ERR_DEVICE and leaves the default as it was. */
WK_API wk_device wk_set_default_device(wk_device dev);
/* The calling thread's default device ({WK_DEVICE_DEFAULT, 0}: cpu). */
WK_API wk_device wk_default_device(void);
/* Waits for all work on `dev`. */
WK_API wk_status wk_device_synchronize(wk_device dev);

/* Raw memory on a device (for plugins and tests); freed with wk_device_free. */
WK_API void *wk_device_alloc(wk_device dev, size_t nbytes);
WK_API void wk_device_free(wk_device dev, void *ptr);
/* Copies bytes between devices (at least one must be cpu, or both the same
 * type), through the owning plugin's copy function. */
WK_API wk_status wk_device_copy(void *dst, wk_device dst_dev, const void *src,
                                wk_device src_dev, size_t nbytes);

/* ==== ABI 1.1: current device, properties, streams, events, pinned memory,
 * memory statistics. Each routes to the device type's plugin; a type whose
 * plugin lacks the feature (cpu has no streams, events or statistics) gives
 * WK_ERR_UNSUPPORTED naming the call and the type, an unknown type or absent
 * device WK_ERR_DEVICE with the plugin's reason. ========================== */

/* Current device index of `type` on this thread (torch.cuda.current_device);
 * 0 for cpu, -1 with an error for an unknown type. */
WK_API int wk_device_current(int32_t type);
/* Makes dev current on this thread for its type (torch.cuda.set_device). */
WK_API wk_status wk_device_set_current(wk_device dev);
/* Fills *out (set out->struct_size first) with dev's name, total memory,
 * compute capability and SM count. */
WK_API wk_status wk_device_get_properties(wk_device dev, wk_device_props *out);

/* Creates a stream on dev (priority: 0 normal, negative higher, as CUDA).
 * *out is {dev, NULL} on failure. Destroy with wk_stream_destroy. */
WK_API wk_status wk_stream_create(wk_device dev, int priority, wk_stream *out);
/* Destroys a stream from wk_stream_create once its queued work ends. The
 * default stream (NULL handle) is ignored. Not while it is current. */
WK_API void wk_stream_destroy(wk_stream s);
/* The stream this thread queues dev's work on (borrowed); {dev, NULL} = the
 * default stream, also for device types without streams. */
WK_API wk_stream wk_current_stream(wk_device dev);
/* Makes s this thread's current stream of its device (torch.cuda.set_stream);
 * kernels, allocations and async copies then go there. */
WK_API wk_status wk_set_current_stream(wk_stream s);
/* Waits until all work queued on s has finished. */
WK_API wk_status wk_stream_synchronize(wk_stream s);
/* *done = true when all work queued on s has finished (does not wait). */
WK_API wk_status wk_stream_query(wk_stream s, bool *done);
/* Makes future work on s wait until e has completed (no host wait). */
WK_API wk_status wk_stream_wait_event(wk_stream s, wk_event e);

/* Creates an event on dev (flags: WK_EVENT_*). Destroy with wk_event_destroy. */
WK_API wk_status wk_event_create(wk_device dev, unsigned flags, wk_event *out);
/* Destroys an event (a zero event is ignored). */
WK_API void wk_event_destroy(wk_event e);
/* Records e on stream s (of the same device): e completes when the work
 * queued on s before it has. */
WK_API wk_status wk_event_record(wk_event e, wk_stream s);
/* Waits on the host until e has completed. */
WK_API wk_status wk_event_synchronize(wk_event e);
/* *done = true when e has completed (does not wait). */
WK_API wk_status wk_event_query(wk_event e, bool *done);
/* Milliseconds between two completed events created with
 * WK_EVENT_ENABLE_TIMING (start.elapsed_time(end)). */
WK_API wk_status wk_event_elapsed_time(wk_event start, wk_event end, float *ms);

/* Like wk_device_copy, queued on stream s (of the non-cpu side). With pinned
 * host memory it returns at once: synchronise s (or an event) before reading
 * or reusing the buffers. Falls back to a synchronous copy otherwise. */
WK_API wk_status wk_device_copy_async(void *dst, wk_device dst_dev, const void *src, wk_device src_dev,
                                      size_t nbytes, wk_stream s);

/* A copy of cpu tensor t in page-locked host memory (tensor.pin_memory()),
 * from the first device plugin that offers pinned memory. Returns a new
 * reference (t itself, as a new handle, when already pinned); NULL with
 * WK_ERR_UNSUPPORTED when no loaded plugin offers pinned memory or its
 * plugin has no device (the message says why), so callers such as a data
 * loader may go on with pageable memory, as PyTorch does without a GPU. */
WK_API wk_tensor *wk_pin_memory(wk_tensor *t);
/* True when t's storage is page-locked host memory from wk_pin_memory. */
WK_API bool wk_tensor_is_pinned(const wk_tensor *t);
/* t.to(dev, non_blocking=True): a new reference on dev. Between pinned host
 * memory (a pinned result is allocated for device -> cpu) and a device, the
 * copy is queued on dev's current stream and the call returns before it ends;
 * later work on that stream sees the data, the host must synchronise first.
 * Otherwise (pageable memory, strided tensors, autograd) the same as
 * wk_to_device. */
WK_API wk_tensor *wk_to_non_blocking(wk_tensor *t, wk_device dev);

/* Memory statistics of dev's allocator (torch.cuda.memory_stats); set
 * out->struct_size first. */
WK_API wk_status wk_device_memory_stats(wk_device dev, wk_memory_stats *out);
/* Single statistics in bytes (torch.cuda.memory_allocated, ...); -1 with an
 * error recorded when dev has none. */
WK_API int64_t wk_device_memory_allocated(wk_device dev);
WK_API int64_t wk_device_max_memory_allocated(wk_device dev);
WK_API int64_t wk_device_memory_reserved(wk_device dev);
WK_API int64_t wk_device_max_memory_reserved(wk_device dev);
/* Peaks restart from the current values (torch.cuda.reset_peak_memory_stats). */
WK_API wk_status wk_device_reset_peak_memory_stats(wk_device dev);
/* Returns cached, unused blocks to the device (torch.cuda.empty_cache);
 * tensors in use keep their memory. */
WK_API wk_status wk_device_empty_cache(wk_device dev);
/* A readable report of dev's memory (torch.cuda.memory_summary). Returns a
 * new string (free with wk_free), NULL with an error. */
WK_API char *wk_device_memory_summary(wk_device dev);

#endif
