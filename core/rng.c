/* Per-device Philox generators: a (seed, offset) pair per device; kernels
 * reserve counter ranges, so a result depends only on seed and call order. */
#include <pthread.h>

#include "internal.h"

#define DEFAULT_SEED 67280421310721ull /* PyTorch's default seed */
#define MAX_GENS 64

typedef struct {
  bool used;
  wk_device dev;
  uint64_t seed, offset;
} gen;

static gen g_gens[MAX_GENS];
static uint64_t g_default_seed = DEFAULT_SEED;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static gen *find(wk_device dev) {
  dev = wk__device_norm(dev);
  for (int i = 0; i < MAX_GENS; i++)
    if (g_gens[i].used && g_gens[i].dev.type == dev.type && g_gens[i].dev.index == dev.index) return &g_gens[i];
  for (int i = 0; i < MAX_GENS; i++)
    if (!g_gens[i].used) {
      g_gens[i] = (gen){true, dev, g_default_seed, 0};
      return &g_gens[i];
    }
  return NULL;
}

void wk_manual_seed(uint64_t seed) {
  pthread_mutex_lock(&g_lock);
  g_default_seed = seed;
  for (int i = 0; i < MAX_GENS; i++)
    if (g_gens[i].used) {
      g_gens[i].seed = seed;
      g_gens[i].offset = 0;
    }
  pthread_mutex_unlock(&g_lock);
}

wk_status wk_rng_reserve(wk_device dev, uint64_t n, uint64_t *seed, uint64_t *offset) {
  if (!seed || !offset) return wk_error(WK_ERR_NULL, "wk_rng_reserve: NULL output pointer");
  pthread_mutex_lock(&g_lock);
  gen *g = find(dev);
  if (!g) {
    pthread_mutex_unlock(&g_lock);
    return wk_error(WK_ERR_NO_MEMORY, "wk_rng_reserve: too many generators");
  }
  *seed = g->seed;
  *offset = g->offset;
  g->offset += n;
  pthread_mutex_unlock(&g_lock);
  return WK_OK;
}

wk_status wk_rng_get_state(wk_device dev, uint64_t *seed, uint64_t *offset) {
  if (!seed || !offset) return wk_error(WK_ERR_NULL, "wk_rng_get_state: NULL output pointer");
  pthread_mutex_lock(&g_lock);
  gen *g = find(dev);
  if (g) {
    *seed = g->seed;
    *offset = g->offset;
  }
  pthread_mutex_unlock(&g_lock);
  return g ? WK_OK : wk_error(WK_ERR_NO_MEMORY, "wk_rng_get_state: too many generators");
}

wk_status wk_rng_set_state(wk_device dev, uint64_t seed, uint64_t offset) {
  pthread_mutex_lock(&g_lock);
  gen *g = find(dev);
  if (g) {
    g->seed = seed;
    g->offset = offset;
  }
  pthread_mutex_unlock(&g_lock);
  return g ? WK_OK : wk_error(WK_ERR_NO_MEMORY, "wk_rng_set_state: too many generators");
}
