/* Test plugin: built for an ABI major the core does not implement. */
#include <wick/plugin.h>

__attribute__((visibility("default"))) wk_status wick_plugin_entry(const wk_plugin_base *base, wk_plugin_info *info);
wk_status wick_plugin_entry(const wk_plugin_base *base, wk_plugin_info *info) {
  info->abi_version = 99u << 16;
  if (!base->get_host_api(99, 0)) return WK_ERR_ABI;
  return WK_OK;
}
