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
_Thread_local wk_device wk__default_dev;

wk_device wk_set_default_device(wk_device dev) {
  wk_device prev = wk__default_dev;
  if (dev.type != WK_DEVICE_DEFAULT && (dev.index < 0 || !wk__device_iface(dev.type))) {
    wk_error(WK_ERR_DEVICE, "wk_set_default_device: unknown device type %d (index %d); the default stays", dev.type,
             dev.index);
    return prev;
  }
  wk__default_dev = dev;
  return prev;
}
wk_device wk_default_device(void) { return wk__default_dev; }

static int cpu_count(void *u) {
  (void)u;
  return 1;
}
static void *cpu_alloc(void *u, int index, size_t n) {
  (void)u;
  (void)index;
  size_t sz = (n + 63) & ~(size_t)63;
  void *p = wk__aligned_alloc(64, sz ? sz : 64);
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

/* The meta device: storages carry a size but no memory (wk__storage_new
 * makes them without calling alloc), so copies into it do nothing and copies
 * out of it fail, as PyTorch's do. */
static void *meta_alloc(void *u, int index, size_t n) {
  (void)u;
  (void)index;
  (void)n;
  wk_error(WK_ERR_UNSUPPORTED, "meta: tensors on the meta device hold no data");
  return NULL;
}
static void meta_free(void *u, int index, void *p) {
  (void)u;
  (void)index;
  (void)p;
}
static wk_status meta_copy(void *u, void *dst, wk_device dd, const void *src, wk_device sd, size_t n) {
  (void)u;
  (void)dst;
  (void)src;
  (void)n;
  if (sd.type == WK_DEVICE_META && dd.type != WK_DEVICE_META)
    return wk_error(WK_ERR_UNSUPPORTED, "Cannot copy out of meta tensor; no data!");
  return WK_OK;
}

void wk__device_init(void) {
  if (g_devs[WK_DEVICE_CPU].used) return;
  wk_device_iface cpu = {sizeof(wk_device_iface), (WK_ABI_MAJOR << 16) | WK_ABI_MINOR,
                         "cpu", NULL, cpu_count, cpu_alloc, cpu_free, cpu_copy, NULL, NULL};
  g_devs[WK_DEVICE_CPU].used = true;
  g_devs[WK_DEVICE_CPU].iface = cpu;
  wk_device_iface meta = {sizeof(wk_device_iface), (WK_ABI_MAJOR << 16) | WK_ABI_MINOR,
                          "meta", NULL, cpu_count, meta_alloc, meta_free, meta_copy, NULL, NULL};
  g_devs[WK_DEVICE_META].used = true;
  g_devs[WK_DEVICE_META].iface = meta;
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
    if (!g_devs[i].iface.name)
      return wk_error(WK_ERR_NO_MEMORY, "wk_device_type_register: out of memory registering '%s'", iface->name);
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
  if ((type == WK_DEVICE_CPU || type == WK_DEVICE_META) && !g_devs[type].used)
    wk__device_init(); /* usable before wk_init */
  if (type < 0 || type >= WK_MAX_DEVICE_TYPES || !g_devs[type].used) return NULL;
  return &g_devs[type].iface;
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
  else if (dev.type == WK_DEVICE_META) /* PyTorch writes device(type='meta'), no index */
    snprintf(buf, n, "meta");
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
  if (dd.type == WK_DEVICE_META || sd.type == WK_DEVICE_META) /* no memory on either side to check */
    return meta_copy(NULL, dst, dd, src, sd, n);
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

/* ==== ABI 1.1: current device, properties, streams, events, pinned memory and
 * memory statistics, routed to the device type's plugin. Slots a plugin built
 * for 1.0 lacks were zeroed at registration, so NULL means "take the default". */

/* Device types without a current-device slot: the core remembers the choice. */
static _Thread_local int32_t tl_current[WK_MAX_DEVICE_TYPES];

static wk_status unsupported(const char *fn, const wk_device_iface *d, const char *what) {
  return wk_error(WK_ERR_UNSUPPORTED, "%s: device type '%s' has no %s", fn, d->name, what);
}

int wk_device_current(int32_t type) {
  const wk_device_iface *d = wk__device_iface(type);
  if (!d) {
    wk_error(WK_ERR_DEVICE, "wk_device_current: unknown device type %d", type);
    return -1;
  }
  if (type == WK_DEVICE_CPU || type == WK_DEVICE_DEFAULT) return 0;
  return d->current_device ? d->current_device(d->user) : tl_current[type];
}

wk_status wk_device_set_current(wk_device dev) {
  dev = wk__device_norm(dev);
  const wk_device_iface *d = checked("wk_device_set_current", dev);
  if (!d) return wk_last_error();
  if (d->set_current_device) {
    wk_status s = d->set_current_device(d->user, dev.index);
    if (s) return s;
  }
  tl_current[dev.type] = dev.index;
  return WK_OK;
}

wk_status wk_device_get_properties(wk_device dev, wk_device_props *out) {
  if (!out) return wk_error(WK_ERR_NULL, "wk_device_get_properties: argument 'out' is NULL");
  size_t want = out->struct_size;
  if (want < offsetof(wk_device_props, name))
    return wk_error(WK_ERR_INVALID_ARG, "wk_device_get_properties: out->struct_size %zu is too small (set it to "
                    "sizeof(wk_device_props))", want);
  dev = wk__device_norm(dev);
  const wk_device_iface *d = checked("wk_device_get_properties", dev);
  if (!d) return wk_last_error();
  if (!d->get_properties) return unsupported("wk_device_get_properties", d, "device properties");
  wk_device_props full;
  memset(&full, 0, sizeof full);
  full.struct_size = sizeof full;
  wk_status s = d->get_properties(d->user, dev.index, &full);
  if (s) return s;
  /* a caller built against a smaller struct gets its prefix */
  memcpy(out, &full, want < sizeof full ? want : sizeof full);
  out->struct_size = want;
  return WK_OK;
}

/* ---- streams and events ----------------------------------------------------------------- */
wk_status wk_stream_create(wk_device dev, int priority, wk_stream *out) {
  dev = wk__device_norm(dev);
  if (!out) return wk_error(WK_ERR_NULL, "wk_stream_create: argument 'out' is NULL");
  *out = (wk_stream){dev, NULL};
  const wk_device_iface *d = checked("wk_stream_create", dev);
  if (!d) return wk_last_error();
  if (!d->stream_create) return unsupported("wk_stream_create", d, "streams");
  return d->stream_create(d->user, dev.index, priority, &out->handle);
}

void wk_stream_destroy(wk_stream s) {
  s.device = wk__device_norm(s.device);
  const wk_device_iface *d = wk__device_iface(s.device.type);
  if (d && s.handle && d->stream_destroy) d->stream_destroy(d->user, s.device.index, s.handle);
}

wk_stream wk_current_stream(wk_device dev) {
  dev = wk__device_norm(dev);
  wk_stream s = {dev, NULL};
  const wk_device_iface *d = wk__device_iface(dev.type);
  if (d && d->current_stream && dev.index >= 0 && dev.index < d->device_count(d->user))
    s.handle = d->current_stream(d->user, dev.index);
  return s;
}

wk_status wk_set_current_stream(wk_stream s) {
  s.device = wk__device_norm(s.device);
  const wk_device_iface *d = checked("wk_set_current_stream", s.device);
  if (!d) return wk_last_error();
  if (!d->set_current_stream) return s.handle ? unsupported("wk_set_current_stream", d, "streams") : WK_OK;
  return d->set_current_stream(d->user, s.device.index, s.handle);
}

wk_status wk_stream_synchronize(wk_stream s) {
  s.device = wk__device_norm(s.device);
  const wk_device_iface *d = checked("wk_stream_synchronize", s.device);
  if (!d) return wk_last_error();
  if (d->stream_synchronize) return d->stream_synchronize(d->user, s.device.index, s.handle);
  if (s.handle) return unsupported("wk_stream_synchronize", d, "streams");
  return d->synchronize ? d->synchronize(d->user, s.device.index) : WK_OK;
}

wk_status wk_stream_query(wk_stream s, bool *done) {
  if (!done) return wk_error(WK_ERR_NULL, "wk_stream_query: argument 'done' is NULL");
  *done = false;
  s.device = wk__device_norm(s.device);
  const wk_device_iface *d = checked("wk_stream_query", s.device);
  if (!d) return wk_last_error();
  if (d->stream_query) return d->stream_query(d->user, s.device.index, s.handle, done);
  if (s.handle) return unsupported("wk_stream_query", d, "streams");
  *done = true; /* no streams: work is done when the call returns */
  return WK_OK;
}

static wk_status same_device(const char *fn, wk_device a, wk_device b) {
  if (wk_device_equal(a, b)) return WK_OK;
  char x[48], y[48];
  return wk_error(WK_ERR_DEVICE, "%s: the stream is on %s but the event on %s", fn, wk_device_str(a, x, sizeof x),
                  wk_device_str(b, y, sizeof y));
}

wk_status wk_stream_wait_event(wk_stream s, wk_event e) {
  s.device = wk__device_norm(s.device);
  const wk_device_iface *d = checked("wk_stream_wait_event", s.device);
  if (!d) return wk_last_error();
  if (!d->stream_wait_event) return unsupported("wk_stream_wait_event", d, "events");
  if (!e.handle) return wk_error(WK_ERR_NULL, "wk_stream_wait_event: the event was not created");
  wk_status st = same_device("wk_stream_wait_event", s.device, e.device);
  return st ? st : d->stream_wait_event(d->user, s.device.index, s.handle, e.handle);
}

wk_status wk_event_create(wk_device dev, unsigned flags, wk_event *out) {
  dev = wk__device_norm(dev);
  if (!out) return wk_error(WK_ERR_NULL, "wk_event_create: argument 'out' is NULL");
  *out = (wk_event){dev, NULL};
  const wk_device_iface *d = checked("wk_event_create", dev);
  if (!d) return wk_last_error();
  if (!d->event_create) return unsupported("wk_event_create", d, "events");
  if (flags & ~(unsigned)(WK_EVENT_ENABLE_TIMING | WK_EVENT_BLOCKING))
    return wk_error(WK_ERR_INVALID_ARG, "wk_event_create: unknown flags 0x%x", flags);
  return d->event_create(d->user, dev.index, flags, &out->handle);
}

void wk_event_destroy(wk_event e) {
  e.device = wk__device_norm(e.device);
  const wk_device_iface *d = wk__device_iface(e.device.type);
  if (d && e.handle && d->event_destroy) d->event_destroy(d->user, e.device.index, e.handle);
}

/* The plugin of an event that exists, or NULL with an error naming fn. */
static const wk_device_iface *event_iface(const char *fn, wk_event e) {
  const wk_device_iface *d = checked(fn, wk__device_norm(e.device));
  if (d && !e.handle) {
    wk_error(WK_ERR_NULL, "%s: the event was not created (wk_event_create)", fn);
    return NULL;
  }
  return d;
}

wk_status wk_event_record(wk_event e, wk_stream s) {
  const wk_device_iface *d = event_iface("wk_event_record", e);
  if (!d) return wk_last_error();
  wk_status st = same_device("wk_event_record", wk__device_norm(s.device), wk__device_norm(e.device));
  if (st) return st;
  return d->event_record ? d->event_record(d->user, e.device.index, e.handle, s.handle)
                         : unsupported("wk_event_record", d, "events");
}

wk_status wk_event_synchronize(wk_event e) {
  const wk_device_iface *d = event_iface("wk_event_synchronize", e);
  if (!d) return wk_last_error();
  return d->event_synchronize ? d->event_synchronize(d->user, e.device.index, e.handle)
                              : unsupported("wk_event_synchronize", d, "events");
}

wk_status wk_event_query(wk_event e, bool *done) {
  if (!done) return wk_error(WK_ERR_NULL, "wk_event_query: argument 'done' is NULL");
  *done = false;
  const wk_device_iface *d = event_iface("wk_event_query", e);
  if (!d) return wk_last_error();
  return d->event_query ? d->event_query(d->user, e.device.index, e.handle, done)
                        : unsupported("wk_event_query", d, "events");
}

wk_status wk_event_elapsed_time(wk_event start, wk_event end, float *ms) {
  if (!ms) return wk_error(WK_ERR_NULL, "wk_event_elapsed_time: argument 'ms' is NULL");
  *ms = 0;
  const wk_device_iface *d = event_iface("wk_event_elapsed_time", start);
  if (!d || !event_iface("wk_event_elapsed_time", end)) return wk_last_error();
  if (!wk_device_equal(start.device, end.device)) {
    char x[48], y[48];
    return wk_error(WK_ERR_DEVICE, "wk_event_elapsed_time: events on different devices (%s and %s)",
                    wk_device_str(start.device, x, sizeof x), wk_device_str(end.device, y, sizeof y));
  }
  return d->event_elapsed_ms ? d->event_elapsed_ms(d->user, start.device.index, start.handle, end.handle, ms)
                             : unsupported("wk_event_elapsed_time", d, "events");
}

wk_status wk_device_copy_async(void *dst, wk_device dd, const void *src, wk_device sd, size_t n, wk_stream s) {
  dd = wk__device_norm(dd);
  sd = wk__device_norm(sd);
  wk_device owner = dd.type != WK_DEVICE_CPU ? dd : sd;
  const wk_device_iface *d = wk__device_iface(owner.type);
  if (n == 0 || owner.type == WK_DEVICE_CPU || !d || !d->copy_async || (dd.type != sd.type && dd.type != WK_DEVICE_CPU &&
                                                                        sd.type != WK_DEVICE_CPU))
    return wk_device_copy(dst, dd, src, sd, n); /* its checks and errors, synchronously */
  if (!dst || !src)
    return wk_error(WK_ERR_NULL, "wk_device_copy_async: NULL %s pointer", dst ? "source" : "destination");
  wk_device run_on = sd.type == owner.type ? sd : dd; /* the stream belongs to the device side (the source's) */
  if (!checked("wk_device_copy_async", owner)) return wk_last_error();
  s.device = wk__device_norm(s.device);
  if (!wk_device_equal(s.device, run_on)) {
    char x[48], y[48];
    return wk_error(WK_ERR_DEVICE, "wk_device_copy_async: the stream is on %s but the copy runs on %s",
                    wk_device_str(s.device, x, sizeof x), wk_device_str(run_on, y, sizeof y));
  }
  return d->copy_async(d->user, dst, dd, src, sd, n, s.handle);
}

/* ---- pinned host memory ---------------------------------------------------------------- */
typedef struct {
  int32_t type; /* the device type whose plugin allocated the block */
  void *ptr;
} pinned_block;

static void pinned_deleter(void *ctx) {
  pinned_block *b = ctx;
  const wk_device_iface *d = wk__device_iface(b->type);
  if (d && d->host_free_pinned) d->host_free_pinned(d->user, b->ptr);
  free(b);
}

bool wk_tensor_is_pinned(const wk_tensor *t) { return t && t->storage->deleter == pinned_deleter; }

/* An empty contiguous cpu tensor in pinned memory from device type `type`. */
static wk_tensor *pinned_empty(const char *fn, int32_t type, const int64_t *sizes, int ndim, wk_dtype dt) {
  const wk_device_iface *d = wk__device_iface(type);
  int64_t numel = 1;
  for (int i = 0; i < ndim; i++) numel *= sizes[i];
  size_t nbytes = (size_t)numel * wk_dtype_size(dt);
  pinned_block *b = wk_malloc(sizeof *b);
  if (!b) {
    wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", fn);
    return NULL;
  }
  b->type = type;
  b->ptr = d->host_alloc_pinned(d->user, nbytes ? nbytes : 1);
  if (!b->ptr) {
    free(b);
    if (!wk__error_pending()) wk_error(WK_ERR_NO_MEMORY, "%s: %s could not pin %zu bytes", fn, d->name, nbytes);
    return NULL;
  }
  wk_tensor *r = wk_tensor_from_blob(b->ptr, dt, wk_cpu(), sizes, NULL, ndim, pinned_deleter, b);
  if (!r) pinned_deleter(b);
  return r;
}

/* The first device type whose plugin offers pinned memory, preferring one with
 * devices present (without, the plugin's own error says why); -1 if none. */
static int32_t pinning_type(void) {
  int32_t any = -1;
  for (int i = WK_DEVICE_FIRST_PLUGIN; i < WK_MAX_DEVICE_TYPES; i++) {
    const wk_device_iface *d = &g_devs[i].iface;
    if (!g_devs[i].used || !d->host_alloc_pinned || !d->host_free_pinned) continue;
    if (d->device_count(d->user) > 0) return i;
    if (any < 0) any = i;
  }
  return any;
}

wk_tensor *wk_pin_memory(wk_tensor *t) {
  if (!t) {
    wk__null_arg("wk_pin_memory", "t");
    return NULL;
  }
  char a[48];
  if (wk__device_norm(t->storage->device).type != WK_DEVICE_CPU) {
    wk_error(WK_ERR_DEVICE, "pin_memory: cannot pin a tensor on %s: only cpu tensors can be pinned",
             wk_device_str(t->storage->device, a, sizeof a));
    return NULL;
  }
  if (wk_tensor_is_pinned(t)) { /* like PyTorch: already pinned, same data */
    wk_tensor *v = wk__view_of(t, t->ndim, t->sizes, t->strides, t->offset);
    if (v && wk__call_depth == 0) wk__scope_adopt(v);
    return v;
  }
  int32_t type = pinning_type();
  if (type < 0) {
    char types[256];
    list_types(types, sizeof types);
    wk_error(WK_ERR_UNSUPPORTED,
             "pin_memory: no loaded device plugin offers pinned host memory (device types: %s); it needs a "
             "GPU plugin such as cuda",
             types);
    return NULL;
  }
  const wk_device_iface *d = &g_devs[type].iface;
  if (d->device_count(d->user) == 0) { /* like PyTorch without a GPU: callers may go on unpinned */
    const char *why = d->status_message ? d->status_message(d->user) : NULL;
    wk_error(WK_ERR_UNSUPPORTED, "pin_memory: pinned memory needs a device, and %s has none%s%s", d->name,
             why && *why ? ": " : "", why ? why : "");
    return NULL;
  }
  wk_tensor *r = pinned_empty("pin_memory", type, t->sizes, t->ndim, t->dtype);
  if (r && !wk_copy_(r, t)) {
    wk_release(r);
    r = NULL;
  }
  return r;
}

wk_tensor *wk_to_non_blocking(wk_tensor *t, wk_device dev) {
  if (!t) {
    wk__null_arg("wk_to_non_blocking", "t");
    return NULL;
  }
  dev = wk__device_norm(dev);
  wk_device from = wk__device_norm(t->storage->device);
  bool to_host = dev.type == WK_DEVICE_CPU && from.type != WK_DEVICE_CPU;
  bool to_dev = from.type == WK_DEVICE_CPU && dev.type != WK_DEVICE_CPU;
  const wk_device_iface *d = wk__device_iface(to_host ? from.type : dev.type);
  /* the async path: dense data between pinned host memory and a device, no autograd to record */
  bool fast = (to_host || to_dev) && d && d->copy_async && wk_tensor_is_contiguous(t) && !wk__requires_grad(t) &&
              (to_dev ? wk_tensor_is_pinned(t) : d->host_alloc_pinned != NULL);
  if (!fast) return wk_to_device(t, dev);
  wk_tensor *r = to_dev ? wk_empty(t->sizes, t->ndim, (wk_options){.dtype = t->dtype, .device = dev})
                        : pinned_empty("wk_to_non_blocking", from.type, t->sizes, t->ndim, t->dtype);
  if (!r) return NULL;
  size_t n = (size_t)wk_tensor_numel(t) * wk_dtype_size(t->dtype);
  wk_stream s = wk_current_stream(to_dev ? dev : from);
  if (wk_device_copy_async(wk_tensor_data(r), dev, wk_tensor_data(t), from, n, s)) {
    wk_release(r);
    return NULL;
  }
  return r;
}

/* ---- memory statistics ---------------------------------------------------------------------- */
/* The plugin of dev when it keeps statistics, or NULL with an error naming fn. */
static const wk_device_iface *stats_iface(const char *fn, wk_device dev) {
  dev = wk__device_norm(dev);
  const wk_device_iface *d = checked(fn, dev);
  if (d && !d->memory_stats) {
    unsupported(fn, d, "memory statistics (its allocator keeps none)");
    return NULL;
  }
  return d;
}

wk_status wk_device_memory_stats(wk_device dev, wk_memory_stats *out) {
  if (!out) return wk_error(WK_ERR_NULL, "wk_device_memory_stats: argument 'out' is NULL");
  size_t want = out->struct_size;
  if (want < sizeof(size_t))
    return wk_error(WK_ERR_INVALID_ARG, "wk_device_memory_stats: out->struct_size %zu is too small (set it to "
                    "sizeof(wk_memory_stats))", want);
  const wk_device_iface *d = stats_iface("wk_device_memory_stats", dev);
  if (!d) return wk_last_error();
  wk_memory_stats full;
  memset(&full, 0, sizeof full);
  full.struct_size = sizeof full;
  wk_status s = d->memory_stats(d->user, wk__device_norm(dev).index, &full);
  if (s) return s;
  memcpy(out, &full, want < sizeof full ? want : sizeof full);
  out->struct_size = want;
  return WK_OK;
}

#define STAT_GETTER(fn, field)                                        \
  int64_t fn(wk_device dev) {                                         \
    wk_memory_stats st = {.struct_size = sizeof st};                  \
    const wk_device_iface *d = stats_iface(#fn, dev);                 \
    if (!d || d->memory_stats(d->user, wk__device_norm(dev).index, &st)) return -1; \
    return st.field;                                                  \
  }
STAT_GETTER(wk_device_memory_allocated, allocated)
STAT_GETTER(wk_device_max_memory_allocated, max_allocated)
STAT_GETTER(wk_device_memory_reserved, reserved)
STAT_GETTER(wk_device_max_memory_reserved, max_reserved)
#undef STAT_GETTER

wk_status wk_device_reset_peak_memory_stats(wk_device dev) {
  const wk_device_iface *d = stats_iface("wk_device_reset_peak_memory_stats", dev);
  if (!d) return wk_last_error();
  if (!d->reset_peak_memory_stats) return unsupported("wk_device_reset_peak_memory_stats", d, "peak statistics");
  return d->reset_peak_memory_stats(d->user, wk__device_norm(dev).index);
}

wk_status wk_device_empty_cache(wk_device dev) {
  dev = wk__device_norm(dev);
  const wk_device_iface *d = checked("wk_device_empty_cache", dev);
  if (!d) return wk_last_error();
  if (dev.type == WK_DEVICE_CPU) wk__storage_cache_clear(); /* the core's own cache of cpu blocks */
  return d->empty_cache ? d->empty_cache(d->user, dev.index) : WK_OK;
}

char *wk_device_memory_summary(wk_device dev) {
  const wk_device_iface *d = stats_iface("wk_device_memory_summary", dev);
  if (!d) return NULL;
  int index = wk__device_norm(dev).index;
  if (d->memory_summary) {
    size_t n = d->memory_summary(d->user, index, NULL, 0);
    char *buf = wk_malloc(n + 1);
    if (!buf) {
      wk_error(WK_ERR_NO_MEMORY, "wk_device_memory_summary: out of memory");
      return NULL;
    }
    d->memory_summary(d->user, index, buf, n + 1);
    return buf;
  }
  wk_memory_stats st = {.struct_size = sizeof st};
  if (d->memory_stats(d->user, index, &st)) return NULL;
  char *buf = wk_malloc(512);
  if (!buf) {
    wk_error(WK_ERR_NO_MEMORY, "wk_device_memory_summary: out of memory");
    return NULL;
  }
  char name[48];
  snprintf(buf, 512,
           "Memory summary of %s\n  allocated: %lld bytes (peak %lld)\n  reserved:  %lld bytes (peak %lld)\n"
           "  allocations: %lld active, %lld in total; OOMs: %lld\n",
           wk_device_str(wk__device_norm(dev), name, sizeof name), (long long)st.allocated,
           (long long)st.max_allocated, (long long)st.reserved, (long long)st.max_reserved,
           (long long)st.active_blocks, (long long)st.alloc_count, (long long)st.num_ooms);
  return buf;
}
