/* Service registry: plugins offer named, versioned interfaces (structs of
 * function pointers starting with struct_size); the core hands them out. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct {
  char *name;
  uint32_t version;
  const void *iface;
  wk_plugin *owner;
} service;

static service g_svc[128];
static int g_nsvc;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

wk_status wk_service_register(const char *name, uint32_t version, const void *iface) {
  if (!name || !iface)
    return wk_error(WK_ERR_NULL, "wk_service_register: argument '%s' is NULL", name ? "iface" : "name");
  if (*(const size_t *)iface < sizeof(size_t))
    return wk_error(WK_ERR_INVALID_ARG, "wk_service_register: service '%s' has struct_size %zu", name,
                    *(const size_t *)iface);
  pthread_mutex_lock(&g_lock);
  for (int i = 0; i < g_nsvc; i++)
    if (strcmp(g_svc[i].name, name) == 0) {
      const char *by = wk__plugin_name_or_core(g_svc[i].owner);
      pthread_mutex_unlock(&g_lock);
      return wk_error(WK_ERR_INVALID_ARG, "wk_service_register: service '%s' is already provided by '%s'", name, by);
    }
  if (g_nsvc == (int)(sizeof g_svc / sizeof g_svc[0])) {
    pthread_mutex_unlock(&g_lock);
    return wk_error(WK_ERR_NO_MEMORY, "wk_service_register: too many services");
  }
  char *copy = wk__strdup(name);
  if (!copy) {
    pthread_mutex_unlock(&g_lock);
    return wk_error(WK_ERR_NO_MEMORY, "wk_service_register: out of memory registering '%s'", name);
  }
  g_svc[g_nsvc++] = (service){copy, version, iface, wk__plugin_current()};
  pthread_mutex_unlock(&g_lock);
  return WK_OK;
}

const void *wk_service_get(const char *name, uint32_t min_version) {
  if (!name) {
    wk__null_arg("wk_service_get", "name");
    return NULL;
  }
  pthread_mutex_lock(&g_lock);
  for (int i = 0; i < g_nsvc; i++)
    if (strcmp(g_svc[i].name, name) == 0) {
      service s = g_svc[i];
      pthread_mutex_unlock(&g_lock);
      if (s.version >= min_version) return s.iface;
      wk_error(WK_ERR_NOT_FOUND, "service '%s' is version %u (from plugin '%s'), version %u or later is needed", name,
               s.version, wk__plugin_name_or_core(s.owner), min_version);
      return NULL;
    }
  pthread_mutex_unlock(&g_lock);
  wk_error(WK_ERR_NOT_FOUND, "service '%s' is not available: no loaded plugin provides it (plugin search path: %s)",
           name, wk_plugin_search_path());
  return NULL;
}

int wk_service_count(void) { return g_nsvc; }

wk_status wk_service_info(int i, const char **name, uint32_t *version, const char **plugin) {
  if (i < 0 || i >= g_nsvc) return wk_error(WK_ERR_INDEX, "wk_service_info: index %d out of range (%d services)", i, g_nsvc);
  if (name) *name = g_svc[i].name;
  if (version) *version = g_svc[i].version;
  if (plugin) *plugin = wk__plugin_name_or_core(g_svc[i].owner);
  return WK_OK;
}

void wk__service_rollback(wk_plugin *owner) {
  pthread_mutex_lock(&g_lock);
  int w = 0;
  for (int r = 0; r < g_nsvc; r++) {
    if (g_svc[r].owner == owner)
      free(g_svc[r].name);
    else
      g_svc[w++] = g_svc[r];
  }
  g_nsvc = w;
  pthread_mutex_unlock(&g_lock);
}
