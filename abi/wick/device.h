/* Wick ABI: devices. cpu is built in; other device types are brought by
 * plugins that register an interface (allocator, copies, synchronisation,
 * device count) under a name, and are then addressed as "name:index". */
#ifndef WICK_DEVICE_H
#define WICK_DEVICE_H

#include <wick/types.h>

/* Interface a plugin implements for a device type. Fields marked (optional)
 * may be NULL. Append-only; readers honour struct_size. */
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
} wk_device_iface;
WK_STATIC_ASSERT(sizeof(wk_device_iface) == 80, "wk_device_iface is frozen at ABI 1.0");

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
/* Waits for all work on `dev`. */
WK_API wk_status wk_device_synchronize(wk_device dev);

/* Raw memory on a device (for plugins and tests); freed with wk_device_free. */
WK_API void *wk_device_alloc(wk_device dev, size_t nbytes);
WK_API void wk_device_free(wk_device dev, void *ptr);
/* Copies bytes between devices (at least one must be cpu, or both the same
 * type), through the owning plugin's copy function. */
WK_API wk_status wk_device_copy(void *dst, wk_device dst_dev, const void *src,
                                wk_device src_dev, size_t nbytes);

#endif
