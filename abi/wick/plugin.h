/* Wick ABI: the plugin side. A plugin is a shared object exporting one symbol,
 * wick_plugin_entry, which receives a frozen base struct from the core, asks it
 * for the host API table of the ABI version the plugin was built against, and
 * describes itself. The core then calls its init, which registers devices,
 * kernels and services. Plugins never link to libwick (SQLite extension style):
 * the SDK header routes every wk_* call through the host table. */
#ifndef WICK_PLUGIN_H
#define WICK_PLUGIN_H

#include <wick/types.h>

/* Handed to every plugin's entry. Frozen forever: never grows. */
typedef struct wk_plugin_base {
  size_t struct_size;
  uint32_t abi_version; /* the core's (major << 16) | minor */
  /* Returns the host API table for the requested version, or NULL when the
   * core cannot serve it (different major, or a minor newer than the core's). */
  const void *(*get_host_api)(uint32_t abi_major, uint32_t abi_minor);
} wk_plugin_base;
WK_STATIC_ASSERT(sizeof(wk_plugin_base) == 24, "wk_plugin_base is frozen forever");

/* Filled by the plugin's entry. Append-only. */
typedef struct wk_plugin_info {
  size_t struct_size;
  uint32_t abi_version;    /* the ABI the plugin was built against */
  const char *name;        /* "cpu": unique, static */
  const char *version;     /* "0.1.0", static */
  const char *description; /* one line, static */
  /* Registers what the plugin brings. On failure records an error with
   * wk_error() and returns its status; the core then removes everything the
   * plugin registered and lists it as failed with that message. */
  wk_status (*init)(void);
  /* (optional) Called at wk_shutdown(), in reverse load order. */
  void (*shutdown)(void);
} wk_plugin_info;
WK_STATIC_ASSERT(sizeof(wk_plugin_info) == 56, "wk_plugin_info is frozen at ABI 1.0");

/* The entry's type; the symbol is named WK_PLUGIN_ENTRY_SYMBOL. It returns
 * WK_OK, or WK_ERR_ABI when the core cannot serve the plugin's version. */
typedef wk_status (*wk_plugin_entry_fn)(const wk_plugin_base *base, wk_plugin_info *info);
#define WK_PLUGIN_ENTRY_SYMBOL "wick_plugin_entry"

/* ---- Plugin inspection (for `wick info` and tests) ------------------------------ */
typedef enum wk_plugin_status {
  WK_PLUGIN_LOADED = 1,
  WK_PLUGIN_SKIPPED = 2, /* deny/allow list, or a duplicate name */
  WK_PLUGIN_FAILED = 3   /* dlopen error, no entry, ABI mismatch, init failure */
} wk_plugin_status;

/* Number of plugin candidates seen so far (loaded, skipped or failed). */
WK_API int wk_plugin_count(void);
/* Candidate i (load order), NULL when out of range. Lives forever. */
WK_API wk_plugin *wk_plugin_at(int i);
/* Loaded plugin called `name`, or NULL. */
WK_API wk_plugin *wk_plugin_find(const char *name);
WK_API const char *wk_plugin_name(const wk_plugin *p);    /* file stem when unknown */
WK_API const char *wk_plugin_path(const wk_plugin *p);
WK_API const char *wk_plugin_version(const wk_plugin *p); /* "" when unknown */
WK_API const char *wk_plugin_description(const wk_plugin *p);
WK_API wk_plugin_status wk_plugin_get_status(const wk_plugin *p);
/* Why it was skipped or failed ("" when loaded). */
WK_API const char *wk_plugin_reason(const wk_plugin *p);
/* The ABI version the plugin was built for, as its entry reported it
 * ((major << 16) | minor, like wk_abi_version()); 0 when unknown (NULL, or a
 * candidate whose entry never ran: skipped, dlopen failed, no entry symbol).
 * Added in ABI 1.2. */
WK_API uint32_t wk_plugin_abi_version(const wk_plugin *p);
/* The colon-separated directories searched, in order. */
WK_API const char *wk_plugin_search_path(void);
/* Loads one plugin file explicitly, after wk_init() returned WK_OK (before
 * it: WK_ERR_STATE, nothing loaded). Returns WK_OK when it loaded, or when
 * that file is loaded already; otherwise WK_ERR_PLUGIN with the reason
 * recorded ("wk_plugin_load: PATH: REASON"). */
WK_API wk_status wk_plugin_load(const char *path);

/* ---- Services: named, versioned interfaces plugins offer each other ----------- */
/* Registers `iface` (a struct starting with size_t struct_size, borrowed for the
 * life of the process) as service `name` at `version`. One provider per name. */
WK_API wk_status wk_service_register(const char *name, uint32_t version, const void *iface);
/* Returns the interface of service `name` if its version >= min_version; else
 * NULL with WK_ERR_NOT_FOUND naming the service and the plugin search path. */
WK_API const void *wk_service_get(const char *name, uint32_t min_version);
/* Number of services, and the name/version/provider of the i-th. */
WK_API int wk_service_count(void);
WK_API wk_status wk_service_info(int i, const char **name, uint32_t *version,
                                 const char **plugin);

#endif
