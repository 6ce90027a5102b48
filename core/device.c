/* Device registry: the built-in cpu (64-byte aligned host memory) and device
 * types that plugins register by name with their allocator and copies. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct {
  bool used;
  wk_device_iface iface;
  wk_plugin *owner;
} dev_entry;

static dev_entry g_devs[WK_MAX_DEVICE_TYPES];

static int cpu_count(void *u) {
  (void)u;
  return 1;
}
static void *cpu_alloc(void *u, int index, size_t n) {
  (void)u;
  (void)index;
  size_t sz = (n + 63) & ~(size_t)63;
  void *p = aligned_alloc(64, sz ? sz : 64);
  if (!p) wk_error(WK_ERR_NO_MEMORY, "cpu: out of memory allocating %zu bytes", n);
  return p;
}
static void cpu_free(void *u, int index, void *p) {
  (void)u;
  (void)index;
  free(p);
}
static wk_status cpu_copy(void *u, void *dst, wk_device dd, const void *src, wk_device sd,
                          size_t n) {
  (void)u;
  (void)dd;
  (void)sd;
  if (n) memmove(dst, src, n);
  return WK_OK;
}

void wk__device_init(void) {
  if (g_devs[WK_DEVICE_CPU].used) return;
  wk_device_iface cpu = {sizeof(wk_device_iface), (WK_ABI_MAJOR << 16) | WK_ABI_MINOR,
                         "cpu", NULL, cpu_count, cpu_alloc, cpu_free, cpu_copy, NULL, NULL};
  g_devs[WK_DEVICE_CPU].used = true;
  g_devs[WK_DEVICE_CPU].iface = cpu;
}

static bool valid_name(const char *s) {
  if (!s || !*s || strlen(s) > 31) return false;
  for (const char *p = s; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')) return false;
  return true;
}

wk_status wk_device_type_register(const wk_device_iface *iface, int32_t *type_out) {
  if (type_out) *type_out = -1;
  if (!iface) return wk_error(WK_ERR_NULL, "wk_device_type_register: argument 'iface' is NULL");
  if (iface->struct_size < offsetof(wk_device_iface, synchronize))
    return wk_error(WK_ERR_ABI, "wk_device_type_register: iface struct_size %zu is too small",
                    iface->struct_size);
  if ((iface->abi_version >> 16) != WK_ABI_MAJOR)
    return wk_error(WK_ERR_ABI, "wk_device_type_register: device '%s' built for ABI %u.%u, core is %d.%d",
                    iface->name ? iface->name : "?", iface->abi_version >> 16,
                    iface->abi_version & 0xffff, WK_ABI_MAJOR, WK_ABI_MINOR);
  if (!valid_name(iface->name))
    return wk_error(WK_ERR_INVALID_ARG,
                    "wk_device_type_register: bad device name '%s' (want [a-z0-9_]+, at most 31 chars)",
                    iface->name ? iface->name : "(null)");
  if (!iface->device_count || !iface->alloc || !iface->free || !iface->copy)
    return wk_error(WK_ERR_INVALID_ARG,
                    "wk_device_type_register: device '%s' lacks device_count, alloc, free or copy",
                    iface->name);
  if (wk_device_type_find(iface->name) >= 0)
    return wk_error(WK_ERR_INVALID_ARG, "wk_device_type_register: device type '%s' already registered",
                    iface->name);
  for (int i = WK_DEVICE_FIRST_PLUGIN; i < WK_MAX_DEVICE_TYPES; i++) {
    if (g_devs[i].used) continue;
    memset(&g_devs[i].iface, 0, sizeof g_devs[i].iface);
    size_t n = iface->struct_size < sizeof(wk_device_iface) ? iface->struct_size : sizeof(wk_device_iface);
    memcpy(&g_devs[i].iface, iface, n);
    g_devs[i].iface.name = wk__strdup(iface->name);
    g_devs[i].owner = wk__plugin_current();
    g_devs[i].used = true;
    if (type_out) *type_out = i;
    return WK_OK;
  }
  return wk_error(WK_ERR_NO_MEMORY, "wk_device_type_register: too many device types");
}

void wk__device_rollback(wk_plugin *owner) {
  for (int i = WK_DEVICE_FIRST_PLUGIN; i < WK_MAX_DEVICE_TYPES; i++)
    if (g_devs[i].used && g_devs[i].owner == owner) {
      free((char *)g_devs[i].iface.name);
      memset(&g_devs[i], 0, sizeof g_devs[i]);
    }
}

const wk_device_iface *wk__device_iface(int32_t type) {
  if (type == WK_DEVICE_DEFAULT) type = WK_DEVICE_CPU;
  if (type == WK_DEVICE_CPU && !g_devs[WK_DEVICE_CPU].used) wk__device_init(); /* usable before wk_init */
  if (type < 0 || type >= WK_MAX_DEVICE_TYPES || !g_devs[type].used) return NULL;
  return &g_devs[type].iface;
}

wk_device wk__device_norm(wk_device d) {
  if (d.type == WK_DEVICE_DEFAULT) d.type = WK_DEVICE_CPU;
  return d;
}

int32_t wk_device_type_find(const char *name) {
  if (!name) {
    wk__null_arg("wk_device_type_find", "name");
    return -1;
  }
  for (int i = 1; i < WK_MAX_DEVICE_TYPES; i++)
    if (g_devs[i].used && strcmp(g_devs[i].iface.name, name) == 0) return i;
  return -1;
}

const char *wk_device_type_name(int32_t type) {
  const wk_device_iface *d = wk__device_iface(type);
  return d ? d->name : NULL;
}

int wk_device_count(int32_t type) {
  const wk_device_iface *d = wk__device_iface(type);
  return d ? d->device_count(d->user) : 0;
}

const char *wk_device_type_status(int32_t type) {
  const wk_device_iface *d = wk__device_iface(type);
  if (!d || !d->status_message) return "";
  const char *m = d->status_message(d->user);
  return m ? m : "";
}

static void list_types(char *buf, size_t n) {
  size_t k = 0;
  buf[0] = 0;
  for (int i = 1; i < WK_MAX_DEVICE_TYPES && k < n; i++)
    if (g_devs[i].used) k += (size_t)snprintf(buf + k, n - k, "%s%s", k ? ", " : "", g_devs[i].iface.name);
}

wk_status wk_device_parse(const char *text, wk_device *out) {
  if (out) *out = (wk_device){0, 0};
  if (!text || !out) return wk_error(WK_ERR_NULL, "wk_device_parse: argument '%s' is NULL", text ? "out" : "text");
  char name[32];
  const char *colon = strchr(text, ':');
  size_t len = colon ? (size_t)(colon - text) : strlen(text);
  char types[256];
  list_types(types, sizeof types);
  if (len == 0 || len >= sizeof name)
    return wk_error(WK_ERR_INVALID_ARG, "wk_device_parse: invalid device string '%s' (known types: %s)", text, types);
  memcpy(name, text, len);
  name[len] = 0;
  int32_t type = -1;
  for (int i = 1; i < WK_MAX_DEVICE_TYPES; i++)
    if (g_devs[i].used && strcmp(g_devs[i].iface.name, name) == 0) type = i;
  if (type < 0)
    return wk_error(WK_ERR_DEVICE, "wk_device_parse: unknown device type '%s' in '%s' (known types: %s)",
                    name, text, types);
  long idx = 0;
  if (colon) {
    char *end;
    idx = strtol(colon + 1, &end, 10);
    if (colon[1] == 0 || *end || idx < 0 || idx > 1 << 20)
      return wk_error(WK_ERR_INVALID_ARG, "wk_device_parse: invalid device index in '%s'", text);
  }
  out->type = type;
  out->index = (int32_t)idx;
  return WK_OK;
}

const char *wk_device_str(wk_device dev, char *buf, size_t n) {
  if (!buf || !n) return buf;
  const char *name = wk_device_type_name(dev.type);
  if (!name)
    snprintf(buf, n, "unknown(%d):%d", dev.type, dev.index);
  else if (dev.type == WK_DEVICE_CPU || dev.type == WK_DEVICE_DEFAULT)
    snprintf(buf, n, "cpu");
  else
    snprintf(buf, n, "%s:%d", name, dev.index);
  return buf;
}

bool wk_device_equal(wk_device a, wk_device b) {
  a = wk__device_norm(a);
  b = wk__device_norm(b);
  return a.type == b.type && a.index == b.index;
}

static const wk_device_iface *checked(const char *fn, wk_device dev) {
  const wk_device_iface *d = wk__device_iface(dev.type);
  if (!d) {
    wk_error(WK_ERR_DEVICE, "%s: unknown device type %d", fn, dev.type);
    return NULL;
  }
  int cnt = d->device_count(d->user);
  if (dev.index < 0 || dev.index >= cnt) {
    const char *why = d->status_message ? d->status_message(d->user) : NULL;
    wk_error(WK_ERR_DEVICE, "%s: device %s:%d not available (%d device%s present%s%s)", fn, d->name,
             dev.index, cnt, cnt == 1 ? "" : "s", why && *why ? ": " : "", why ? why : "");
    return NULL;
  }
  return d;
}

wk_status wk_device_synchronize(wk_device dev) {
  const wk_device_iface *d = checked("wk_device_synchronize", dev);
  if (!d) return wk_last_error();
  return d->synchronize ? d->synchronize(d->user, dev.index) : WK_OK;
}

void *wk_device_alloc(wk_device dev, size_t nbytes) {
  const wk_device_iface *d = checked("wk_device_alloc", dev);
  return d ? d->alloc(d->user, dev.index, nbytes) : NULL;
}

void wk_device_free(wk_device dev, void *ptr) {
  const wk_device_iface *d = wk__device_iface(dev.type);
  if (d && ptr) d->free(d->user, dev.index, ptr);
}

wk_status wk_device_copy(void *dst, wk_device dd, const void *src, wk_device sd, size_t n) {
  dd = wk__device_norm(dd);
  sd = wk__device_norm(sd);
  if (n == 0) return WK_OK;
  if (!dst || !src) return wk_error(WK_ERR_NULL, "wk_device_copy: NULL %s pointer", dst ? "source" : "destination");
  /* The non-cpu side owns the copy; cpu <-> cpu uses memmove. */
  wk_device owner = dd.type != WK_DEVICE_CPU ? dd : sd;
  if (dd.type != WK_DEVICE_CPU && sd.type != WK_DEVICE_CPU && dd.type != sd.type) {
    char a[48], b[48];
    return wk_error(WK_ERR_DEVICE, "wk_device_copy: cannot copy between %s and %s directly",
                    wk_device_str(sd, a, sizeof a), wk_device_str(dd, b, sizeof b));
  }
  const wk_device_iface *d = checked("wk_device_copy", owner);
  if (!d) return wk_last_error();
  return d->copy(d->user, dst, dd, src, sd, n);
}
