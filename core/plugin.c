/* Plugin loader: finds candidate .so files on the search path, loads each
 * with RTLD_NOW | RTLD_LOCAL, performs the ABI handshake and runs its init.
 * Every candidate is recorded with its status and reason; a broken plugin
 * never takes the process down or hides the others. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"

struct wk_plugin {
  char *path, *name, *reason;
  const char *version, *description;
  wk_plugin_status status;
  void *handle;
  wk_plugin_info info;
};

static wk_plugin **g_plugins;
static int g_nplugins, g_cap;
static wk_plugin *g_current;
static char *g_search_path;
static bool g_started; /* wk_init has reached plugin loading: wk_plugin_load may run */

wk_plugin *wk__plugin_current(void) { return g_current; }
const char *wk__plugin_name_or_core(const wk_plugin *p) { return p ? p->name : "core"; }

static wk_plugin *record(const char *path, const char *stem) {
  if (g_nplugins == g_cap) {
    int cap = g_cap ? g_cap * 2 : 16;
    wk_plugin **p = wk_realloc(g_plugins, sizeof *p * (size_t)cap);
    if (!p) return NULL;
    g_plugins = p;
    g_cap = cap;
  }
  wk_plugin *p = wk_calloc(1, sizeof *p);
  if (!p) return NULL;
  p->path = wk__strdup(path);
  p->name = wk__strdup(stem);
  p->reason = wk__strdup("");
  if (!p->path || !p->name || !p->reason) {
    free(p->path);
    free(p->name);
    free(p->reason);
    free(p);
    return NULL;
  }
  p->version = "";
  p->description = "";
  g_plugins[g_nplugins++] = p;
  return p;
}

static void set_reason(wk_plugin *p, wk_plugin_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_reason(wk_plugin *p, wk_plugin_status st, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  free(p->reason);
  p->reason = wk__strdup(buf);
  p->status = st;
}

static bool in_list(const char *list, const char *name) {
  if (!list) return false;
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", list);
  for (char *save, *tok = strtok_r(buf, ", :", &save); tok; tok = strtok_r(NULL, ", :", &save))
    if (strcmp(tok, name) == 0) return true;
  return false;
}

/* ---- WICK_DENY_KERNELS / WICK_FORCE_KERNELS entries (plugin[:op],...) that
 * name no plugin: dispatch.c applies the lists; here a misspelled plugin name,
 * which would otherwise do nothing at all, is reported once plugins are known. */
static const char *const g_kernel_vars[] = {"WICK_DENY_KERNELS", "WICK_FORCE_KERNELS"};

/* True when name is "core" or the name of a candidate (any status) other than skip. */
static bool known_plugin(const char *name, const wk_plugin *skip) {
  if (strcmp(name, "core") == 0) return true;
  for (int i = 0; i < g_nplugins; i++)
    if (g_plugins[i] != skip && strcmp(g_plugins[i]->name, name) == 0) return true;
  return false;
}

/* Calls fn(var, plugin part) for each entry of var's list, each plugin name once;
 * stops early when fn returns true and then returns true. */
static bool each_kernel_entry(const char *var, bool (*fn)(const char *var, const char *plugin, void *ud), void *ud) {
  const char *list = getenv(var);
  if (!list || !*list) return false;
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", list);
  const char *seen[64];
  int nseen = 0;
  for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char *colon = strchr(tok, ':');
    if (colon) *colon = 0;
    bool dup = false;
    for (int i = 0; i < nseen && !dup; i++) dup = strcmp(seen[i], tok) == 0;
    if (dup) continue;
    if (nseen < 64) seen[nseen++] = tok;
    if (fn(var, tok, ud)) return true;
  }
  return false;
}

static bool warn_if_unknown(const char *var, const char *plugin, void *ud) {
  (void)ud;
  if (known_plugin(plugin, NULL)) return false;
  char known[1024];
  size_t k = (size_t)snprintf(known, sizeof known, "core");
  for (int i = 0; i < g_nplugins && k < sizeof known; i++) {
    bool again = strcmp(g_plugins[i]->name, "core") == 0;
    for (int j = 0; j < i && !again; j++) again = strcmp(g_plugins[j]->name, g_plugins[i]->name) == 0;
    if (!again) k += (size_t)snprintf(known + k, sizeof known - k, ", %s", g_plugins[i]->name);
  }
  fprintf(stderr,
          "wick: warning: %s names plugin '%s', which matches no plugin candidate, so that entry has no "
          "effect; known plugins: %s\n",
          var, plugin, known);
  return false;
}

static bool names_plugin(const char *var, const char *plugin, void *ud) {
  (void)var;
  return strcmp(plugin, (const char *)ud) == 0;
}

/* A plugin that wk_plugin_load adds after start-up can be the one an entry
 * named: wk_init warned about it then, so say that the entry applies now. */
static void note_late_plugin(const wk_plugin *p) {
  if (known_plugin(p->name, p)) return; /* known at start-up: nothing was reported */
  for (size_t v = 0; v < sizeof g_kernel_vars / sizeof *g_kernel_vars; v++)
    if (each_kernel_entry(g_kernel_vars[v], names_plugin, p->name))
      fprintf(stderr, "wick: note: %s: plugin '%s' is loaded now (from %s); its entries apply\n", g_kernel_vars[v],
              p->name, p->path);
}

static void rollback(wk_plugin *p) {
  wk__kernel_rollback(p);
  wk__op_rollback(p); /* after the kernels: an op keeps another plugin's kernels */
  wk__service_rollback(p);
  wk__device_rollback(p);
}

/* The status's enum name ("WK_ERR_IO"), or NULL for a number no wk_status has. */
static const char *status_ident(wk_status st) {
  switch (st) {
#define WK__X(e, n, str) \
  case e:                \
    return #e;
    WK_STATUS_LIST(WK__X)
#undef WK__X
  }
  return NULL;
}

static wk_status load_one(const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  char stem[256];
  snprintf(stem, sizeof stem, "%s", base);
  char *dot = strstr(stem, ".so");
  if (dot) *dot = 0;
  if (strncmp(stem, "wick-", 5) == 0) memmove(stem, stem + 5, strlen(stem + 5) + 1);
  wk_plugin *p = record(path, stem);
  if (!p) return wk_error(WK_ERR_NO_MEMORY, "plugin loader: out of memory");

  const char *allow = getenv("WICK_PLUGINS"), *deny = getenv("WICK_DISABLE_PLUGINS");
  if (allow && *allow && !in_list(allow, stem)) {
    set_reason(p, WK_PLUGIN_SKIPPED, "not in WICK_PLUGINS");
    return WK_ERR_PLUGIN;
  }
  if (in_list(deny, stem)) {
    set_reason(p, WK_PLUGIN_SKIPPED, "disabled by WICK_DISABLE_PLUGINS");
    return WK_ERR_PLUGIN;
  }
  for (int i = 0; i < g_nplugins - 1; i++)
    if (g_plugins[i]->status == WK_PLUGIN_LOADED && strcmp(g_plugins[i]->name, stem) == 0) {
      set_reason(p, WK_PLUGIN_SKIPPED, "a plugin named '%s' is already loaded from %s", stem, g_plugins[i]->path);
      return WK_ERR_PLUGIN;
    }

  dlerror();
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    set_reason(p, WK_PLUGIN_FAILED, "dlopen failed: %s", e ? e : "unknown error");
    return WK_ERR_PLUGIN;
  }
  wk_plugin_entry_fn entry;
  *(void **)&entry = dlsym(h, WK_PLUGIN_ENTRY_SYMBOL);
  if (!entry) {
    set_reason(p, WK_PLUGIN_FAILED, "not a Wick plugin: no '%s' symbol", WK_PLUGIN_ENTRY_SYMBOL);
    dlclose(h);
    return WK_ERR_PLUGIN;
  }
  static const wk_plugin_base g_base = {sizeof(wk_plugin_base), ((uint32_t)WK_ABI_MAJOR << 16) | WK_ABI_MINOR,
                                      wk__host_api_get};
  memset(&p->info, 0, sizeof p->info);
  p->info.struct_size = sizeof p->info;
  wk_status st = entry(&g_base, &p->info);
  uint32_t pv = p->info.abi_version;
  if (st != WK_OK || (pv >> 16) != WK_ABI_MAJOR || (pv & 0xffff) > WK_ABI_MINOR) {
    if (st == WK_ERR_ABI || (pv >> 16) != WK_ABI_MAJOR || (pv & 0xffff) > WK_ABI_MINOR)
      set_reason(p, WK_PLUGIN_FAILED, "ABI mismatch: plugin built for ABI %u.%u, core implements %d.%d", pv >> 16,
                 pv & 0xffff, WK_ABI_MAJOR, WK_ABI_MINOR);
    else
      set_reason(p, WK_PLUGIN_FAILED, "entry failed: %s", wk_status_name(st));
    dlclose(h);
    return WK_ERR_PLUGIN;
  }
  if (!p->info.name || !*p->info.name || !p->info.init) {
    set_reason(p, WK_PLUGIN_FAILED, "entry returned no name or no init function");
    dlclose(h);
    return WK_ERR_PLUGIN;
  }
  for (int i = 0; i < g_nplugins - 1; i++)
    if (g_plugins[i]->status == WK_PLUGIN_LOADED && strcmp(g_plugins[i]->name, p->info.name) == 0) {
      set_reason(p, WK_PLUGIN_SKIPPED, "a plugin named '%s' is already loaded from %s", p->info.name,
                 g_plugins[i]->path);
      dlclose(h);
      return WK_ERR_PLUGIN;
    }
  char *info_name = wk__strdup(p->info.name);
  if (info_name) { /* out of memory: the file's stem stays the name */
    free(p->name);
    p->name = info_name;
  }
  p->version = p->info.version ? p->info.version : "";
  p->description = p->info.description ? p->info.description : "";
  p->handle = h;
  /* init runs with the caller's error state saved, so its failure is its own. */
  wk_status prev = wk_last_error();
  char prev_msg[1024];
  snprintf(prev_msg, sizeof prev_msg, "%s", wk_last_error_message());
  wk_clear_error();
  g_current = p;
  st = p->info.init();
  g_current = NULL;
  if (st != WK_OK) {
    if (wk__error_pending())
      set_reason(p, WK_PLUGIN_FAILED, "init failed: %s", wk_last_error_message());
    else if (status_ident(st))
      set_reason(p, WK_PLUGIN_FAILED, "init failed: plugin '%s': init returned %s (%s) without a message", p->name,
                 status_ident(st), wk_status_name(st));
    else
      set_reason(p, WK_PLUGIN_FAILED, "init failed: plugin '%s': init returned status %d without a message", p->name,
                 (int)st);
    rollback(p);
    /* Not dlclosed: code it ran may still be referenced (atexit, threads). */
  } else {
    p->status = WK_PLUGIN_LOADED;
  }
  wk_clear_error();
  if (prev) wk_error(prev, "%s", prev_msg);
  return st == WK_OK ? WK_OK : WK_ERR_PLUGIN;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Loads every shared object in dir (sorted); with `nested`, also those in
 * dir/NAME/.libs (the uninstalled build tree). */
static void scan_dir(const char *dir, bool nested) {
  DIR *d = opendir(dir);
  if (!d) return;
  /* files and (build tree) subdirectories, each sorted: load order decides
   * ties between kernels of equal priority, so it must not depend on readdir */
  char **names = NULL, **subs = NULL;
  size_t n = 0, cap = 0, ns = 0, caps = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat sb;
    if (stat(path, &sb) != 0) continue;
    size_t len = strlen(e->d_name);
    bool is_dir = S_ISDIR(sb.st_mode);
    if (is_dir ? !nested : (len < 4 || strcmp(e->d_name + len - 3, ".so") != 0)) continue;
    char ***list = is_dir ? &subs : &names;
    size_t *cnt = is_dir ? &ns : &n, *cp = is_dir ? &caps : &cap;
    if (*cnt == *cp) {
      *cp = *cp ? *cp * 2 : 16;
      char **p = wk_realloc(*list, *cp * sizeof *p);
      if (!p) break;
      *list = p;
    }
    char *dup = wk__strdup(path);
    if (!dup) continue; /* out of memory: not listed (a NULL here reached strcmp and load_one) */
    (*list)[(*cnt)++] = dup;
  }
  closedir(d);
  if (n) qsort(names, n, sizeof *names, cmp_str);
  if (ns) qsort(subs, ns, sizeof *subs, cmp_str);
  for (size_t i = 0; i < n; i++) {
    load_one(names[i]);
    free(names[i]);
  }
  for (size_t i = 0; i < ns; i++) {
    char sub[4200];
    snprintf(sub, sizeof sub, "%s/.libs", subs[i]);
    scan_dir(sub, false);
    free(subs[i]);
  }
  free(names);
  free(subs);
}

/* True when libwick itself was loaded from the build tree (uninstalled run). */
static bool running_uninstalled(void) {
#ifdef WICK_BUILD_TOP
  Dl_info info;
  if (dladdr((void *)wk__plugins_load_all, &info) && info.dli_fname) {
    char *real = realpath(info.dli_fname, NULL), *top = realpath(WICK_BUILD_TOP, NULL);
    size_t n = top ? strlen(top) : 0;
    bool r = real && top && strncmp(real, top, n) == 0 && (real[n] == '/' || real[n] == 0);
    free(real);
    free(top);
    return r;
  }
#endif
  return false;
}

void wk__plugins_load_all(void) {
  g_started = true;
  char path[8192] = "";
  size_t k = 0;
  const char *env = getenv("WICK_PLUGIN_PATH");
  if (env && *env) k += (size_t)snprintf(path + k, sizeof path - k, "%s", env);
  /* An uninstalled build uses its own plugins, never stale installed ones. */
  bool uninstalled = running_uninstalled();
#ifdef WICK_PLUGINDIR
  if (!uninstalled) k += (size_t)snprintf(path + k, sizeof path - k, "%s%s", k ? ":" : "", WICK_PLUGINDIR);
#endif
#ifdef WICK_BUILD_TOP
  if (uninstalled) k += (size_t)snprintf(path + k, sizeof path - k, "%s%s/plugins", k ? ":" : "", WICK_BUILD_TOP);
#endif
  free(g_search_path);
  g_search_path = wk__strdup(path);
  char buf[8192];
  snprintf(buf, sizeof buf, "%s", path);
  char *save = NULL;
  for (char *dir = strtok_r(buf, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
    bool build_tree = false;
#ifdef WICK_BUILD_TOP
    char bt[4200];
    snprintf(bt, sizeof bt, "%s/plugins", WICK_BUILD_TOP);
    build_tree = uninstalled && strcmp(dir, bt) == 0;
#endif
    scan_dir(dir, build_tree);
  }
  for (size_t v = 0; v < sizeof g_kernel_vars / sizeof *g_kernel_vars; v++)
    each_kernel_entry(g_kernel_vars[v], warn_if_unknown, NULL);
}

void wk__plugins_shutdown(void) {
  for (int i = g_nplugins - 1; i >= 0; i--)
    if (g_plugins[i]->status == WK_PLUGIN_LOADED && g_plugins[i]->info.shutdown) g_plugins[i]->info.shutdown();
}

int wk_plugin_count(void) { return g_nplugins; }
wk_plugin *wk_plugin_at(int i) { return i >= 0 && i < g_nplugins ? g_plugins[i] : NULL; }
wk_plugin *wk_plugin_find(const char *name) {
  if (!name) return NULL;
  for (int i = 0; i < g_nplugins; i++)
    if (g_plugins[i]->status == WK_PLUGIN_LOADED && strcmp(g_plugins[i]->name, name) == 0) return g_plugins[i];
  return NULL;
}
const char *wk_plugin_name(const wk_plugin *p) { return p ? p->name : NULL; }
const char *wk_plugin_path(const wk_plugin *p) { return p ? p->path : NULL; }
const char *wk_plugin_version(const wk_plugin *p) { return p ? p->version : NULL; }
const char *wk_plugin_description(const wk_plugin *p) { return p ? p->description : NULL; }
wk_plugin_status wk_plugin_get_status(const wk_plugin *p) { return p ? p->status : WK_PLUGIN_FAILED; }
const char *wk_plugin_reason(const wk_plugin *p) { return p ? (p->reason ? p->reason : "") : NULL; }
uint32_t wk_plugin_abi_version(const wk_plugin *p) { return p ? p->info.abi_version : 0; }
const char *wk_plugin_search_path(void) { return g_search_path ? g_search_path : ""; }

wk_status wk_plugin_load(const char *path) {
  if (!path) return wk_error(WK_ERR_NULL, "wk_plugin_load: argument 'path' is NULL");
  /* Loading is wk_init's last step: before it, a plugin's init would find no
   * ops, devices or services to build on. */
  if (!g_started)
    return wk_error(WK_ERR_STATE, "wk_plugin_load: %s: Wick is not initialised; call wk_init() first (and check "
                    "that it returned WK_OK)", path);
  wk_status st;
  /* the same file already loaded (e.g. it is also on WICK_PLUGIN_PATH): done */
  char *real = realpath(path, NULL);
  for (int i = 0; real && i < g_nplugins; i++) {
    char *other = g_plugins[i]->status == WK_PLUGIN_LOADED ? realpath(g_plugins[i]->path, NULL) : NULL;
    bool same = other && strcmp(other, real) == 0;
    free(other);
    if (same) {
      free(real);
      return WK_OK;
    }
  }
  free(real);
  st = load_one(path);
  if (st) {
    wk_plugin *p = g_plugins[g_nplugins - 1];
    return wk_error(WK_ERR_PLUGIN, "wk_plugin_load: %s: %s", path, p->reason);
  }
  note_late_plugin(g_plugins[g_nplugins - 1]);
  return WK_OK;
}
