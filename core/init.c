/* Start-up and shut-down, version queries, and the host API table that
 * plugins receive instead of linking to libwick. */
#include <pthread.h>

#include "internal.h"
#include "meta.h"
#include "graph_internal.h"

void wk__views_register(void);
void wk__composites_register(void);
void wk__composites_loss_register(void);
void wk__composites_surface_register(void);
void wk__composites_linalg_register(void);
void wk__composites_attention_register(void);
void wk__composites_nn_surface_register(void);

static pthread_mutex_t g_init_lock = PTHREAD_MUTEX_INITIALIZER;
static bool g_inited;

const char *wk_version(void) { return WK_VERSION_STRING; }
uint32_t wk_abi_version(void) { return ((uint32_t)WK_ABI_MAJOR << 16) | WK_ABI_MINOR; }

static const wk_host_api g_host = {
    sizeof(wk_host_api), ((uint32_t)WK_ABI_MAJOR << 16) | WK_ABI_MINOR,
#define WK__FILL(fn) fn,
    WK_HOST_API_1_0(WK__FILL)
    WK_HOST_API_1_1(WK__FILL)
    WK_HOST_API_1_2(WK__FILL)
    WK_HOST_API_1_3(WK__FILL)
    WK_HOST_API_1_4(WK__FILL)
#undef WK__FILL
};

const void *wk__host_api_get(uint32_t major, uint32_t minor) {
  if (major != WK_ABI_MAJOR || minor > WK_ABI_MINOR) return NULL;
  return &g_host;
}

wk_status wk_init(void) {
  pthread_mutex_lock(&g_init_lock);
  if (g_inited) {
    pthread_mutex_unlock(&g_init_lock);
    return WK_OK;
  }
  g_inited = true;
  wk__device_init();
  wk__dispatch_apply_env();
  wk__ops_declare_standard();
  wk_status st = wk__metas_init(); /* a row naming no op is the core's own bug: say so, load nothing */
  if (st) {
    pthread_mutex_unlock(&g_init_lock);
    return st;
  }
  wk__views_register();
  wk__composites_register();
  wk__composites_loss_register();
  wk__composites_surface_register();
  wk__composites_linalg_register();
  wk__composites_attention_register();
  wk__composites_nn_surface_register();
  wk__autograd_init();
  wk__trace_init();
  wk__plugins_load_all();
  pthread_mutex_unlock(&g_init_lock);
  wk__alloc_init_done();
  return WK_OK;
}

void wk_shutdown(void) {
  pthread_mutex_lock(&g_init_lock);
  if (g_inited) wk__plugins_shutdown();
  wk__pool_shutdown();
  wk__storage_cache_clear();
  pthread_mutex_unlock(&g_init_lock);
}
