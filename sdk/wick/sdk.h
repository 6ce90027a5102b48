/* Wick SDK: the one header a plugin includes. It declares the public API,
 * routes every wk_* call through the host table the core hands the plugin at
 * load time (so the plugin never links to libwick), and defines the entry
 * point with WK_PLUGIN_DEFINE. The checking vocabulary (<wick/sdk/check.h>) comes
 * with it; kernel helpers live in <wick/sdk/kernel.h>. */
#ifndef WICK_SDK_H
#define WICK_SDK_H

#define WK__SDK_REDIRECT 1
#include <wick/wick.h>
#include <wick/host_api.h>

/* The host table of this plugin (one per plugin: plugins load RTLD_LOCAL). */
extern const wk_host_api *wk__host __attribute__((visibility("hidden")));

/* Every public call becomes (wk__host->name)(...). Generated from host_api.h. */
#include <wick/sdk/redirect.h>

#include <wick/ops.h>

/* Shape strings, dtype words, dim wrapping, int[N] and option arguments. */
#include <wick/sdk/check.h>

/* Defines the plugin's entry point. `init` registers what the plugin brings
 * and returns WK_OK, or records an error and returns its status; `shutdown`
 * may be NULL. */
#define WK_PLUGIN_DEFINE(NAME, VERSION, DESCRIPTION, INIT, SHUTDOWN)                 \
  const wk_host_api *wk__host __attribute__((visibility("hidden")));                \
  __attribute__((visibility("default"))) wk_status wick_plugin_entry(                \
      const wk_plugin_base *base, wk_plugin_info *info);                             \
  __attribute__((visibility("default"))) wk_status wick_plugin_entry(                \
      const wk_plugin_base *base, wk_plugin_info *info) {                            \
    if (!base || !info || base->struct_size < sizeof(wk_plugin_base) ||             \
        info->struct_size < sizeof(size_t) + sizeof(uint32_t))                       \
      return WK_ERR_ABI;                                                            \
    info->abi_version = ((uint32_t)WK_ABI_MAJOR << 16) | WK_ABI_MINOR;                \
    wk__host = (const wk_host_api *)base->get_host_api(WK_ABI_MAJOR, WK_ABI_MINOR);  \
    if (!wk__host) return WK_ERR_ABI;                                               \
    if (info->struct_size < sizeof(wk_plugin_info)) return WK_ERR_ABI;              \
    info->name = (NAME);                                                            \
    info->version = (VERSION);                                                      \
    info->description = (DESCRIPTION);                                              \
    info->init = (INIT);                                                            \
    info->shutdown = (SHUTDOWN);                                                    \
    return WK_OK;                                                                   \
  }

#endif
