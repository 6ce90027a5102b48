/* The module object model: parameters, buffers and children by name, walks,
 * train/eval, moving with parameter identity kept, forward hooks and the
 * per-thread stack of running forwards, state dicts and printing.
 * Model trees are shallow, so walks recurse. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "module_internal.h"

typedef struct {
  char *name;
  wk_tensor *t; /* NULL: registered as None */
  bool persistent;
} slot;

typedef struct {
  char *name;
  wk_module *m;
} kid;

typedef struct {
  int64_t id;
  bool post; /* fn is a wk_forward_hook */
  void *fn, *user;
} hook;

typedef struct hook_list {
  hook *h;
  int n;
  struct hook_list *retired; /* the array this one replaced */
} hook_list;

struct wk_module {
  atomic_int refcount;
  const wk_module_class *cls;
  void *state;
  bool training;
  slot *params, *bufs;
  int np, nb, capp, capb;
  kid *kids;
  int nk, capk;
  char **names; /* dotted names handed out by walks (kept for the module's life) */
  int nnames, capnames;
  hook *hooks; /* forward pre hooks and hooks, in registration order */
  int nhooks;
  wk__bw_hook *bhooks; /* full backward (pre) hooks, in registration order (module_hooks.c) */
  int nbhooks;
};

wk_module *wk_module_new(const wk_module_class *cls, void *state) {
  if (!cls || !cls->name || !cls->forward || cls->struct_size < offsetof(wk_module_class, destroy)) {
    wk_error(cls ? WK_ERR_INVALID_ARG : WK_ERR_NULL,
             "module_new: the class needs struct_size, a name and a forward function");
    return NULL;
  }
  wk_module *m = wk_calloc(1, sizeof *m);
  if (!m) {
    wk_error(WK_ERR_NO_MEMORY, "module_new: out of memory");
    return NULL;
  }
  atomic_init(&m->refcount, 1);
  m->cls = cls;
  m->state = state;
  m->training = true;
  return m;
}

wk_module *wk_module_retain(wk_module *m) {
  if (m) atomic_fetch_add(&m->refcount, 1);
  return m;
}

static void release_slots(slot *s, int n) {
  int depth = wk__call_depth;
  wk__call_depth = depth + 1; /* the module's own references */
  for (int i = 0; i < n; i++) {
    free(s[i].name);
    wk_release(s[i].t);
  }
  wk__call_depth = depth;
  free(s);
}

void wk_module_release(wk_module *m) {
  if (!m || atomic_fetch_sub(&m->refcount, 1) != 1) return;
  release_slots(m->params, m->np);
  release_slots(m->bufs, m->nb);
  for (int i = 0; i < m->nk; i++) {
    free(m->kids[i].name);
    wk_module_release(m->kids[i].m);
  }
  free(m->kids);
  for (int i = 0; i < m->nnames; i++) free(m->names[i]);
  free(m->names);
  free(m->hooks);
  free(m->bhooks);
  if (m->cls->struct_size >= offsetof(wk_module_class, extra_repr) && m->cls->destroy) m->cls->destroy(m->state);
  free(m);
}

void *wk_module_state(const wk_module *m) { return m ? m->state : NULL; }
const char *wk_module_class_name(const wk_module *m) { return m ? m->cls->name : NULL; }

static bool taken(const wk_module *m, const char *name) {
  for (int i = 0; i < m->np; i++)
    if (!strcmp(m->params[i].name, name)) return true;
  for (int i = 0; i < m->nb; i++)
    if (!strcmp(m->bufs[i].name, name)) return true;
  for (int i = 0; i < m->nk; i++)
    if (!strcmp(m->kids[i].name, name)) return true;
  return false;
}

static wk_status check_name(const char *fn, const wk_module *m, const char *name) {
  if (!m || !name) return wk_error(WK_ERR_NULL, "%s: argument '%s' is NULL", fn, m ? "name" : "module");
  if (!*name || strchr(name, '.'))
    return wk_error(WK_ERR_INVALID_ARG, "%s: name '%s' can't be empty or contain \".\"", fn, name);
  if (taken(m, name)) return wk_error(WK_ERR_INVALID_ARG, "%s: attribute '%s' already exists in %s", fn, name, m->cls->name);
  return WK_OK;
}

static wk_status push_slot(slot **s, int *n, int *cap, const char *name, wk_tensor *t, bool persistent) {
  if (*n == *cap) {
    int c = *cap ? *cap * 2 : 4;
    slot *p = wk_realloc(*s, sizeof *p * (size_t)c);
    if (!p) return wk_error(WK_ERR_NO_MEMORY, "module: out of memory");
    *s = p;
    *cap = c;
  }
  char *k = wk__strdup(name);
  if (!k) return wk_error(WK_ERR_NO_MEMORY, "module: out of memory");
  (*s)[*n] = (slot){k, wk_retain(t), persistent};
  (*n)++;
  return WK_OK;
}

wk_status wk_module_register_parameter(wk_module *m, const char *name, wk_tensor *p) {
  wk_status s = check_name("register_parameter", m, name);
  if (s) return s;
  if (p && !wk_tensor_is_leaf(p))
    return wk_error(WK_ERR_AUTOGRAD, "register_parameter: cannot assign '%s': a parameter must be a leaf tensor "
                    "(detach it first)", name);
  if (p && wk_dtype_is_floating(wk_tensor_dtype(p)) && (s = wk_tensor_set_requires_grad(p, true))) return s;
  return push_slot(&m->params, &m->np, &m->capp, name, p, true);
}

wk_status wk_module_register_buffer(wk_module *m, const char *name, wk_tensor *b, bool persistent) {
  wk_status s = check_name("register_buffer", m, name);
  if (s) return s;
  return push_slot(&m->bufs, &m->nb, &m->capb, name, b, persistent);
}

wk_status wk_module_register_child(wk_module *m, const char *name, wk_module *child) {
  wk_status s = check_name("register_child", m, name);
  if (s) return s;
  if (!child) return wk_error(WK_ERR_NULL, "register_child: child '%s' is NULL", name);
  if (child == m) return wk_error(WK_ERR_INVALID_ARG, "register_child: a module cannot be its own child");
  if (m->nk == m->capk) {
    int c = m->capk ? m->capk * 2 : 4;
    kid *p = wk_realloc(m->kids, sizeof *p * (size_t)c);
    if (!p) return wk_error(WK_ERR_NO_MEMORY, "module: out of memory");
    m->kids = p;
    m->capk = c;
  }
  char *k = wk__strdup(name);
  if (!k) return wk_error(WK_ERR_NO_MEMORY, "module: out of memory");
  m->kids[m->nk++] = (kid){k, wk_module_retain(child)};
  return WK_OK;
}

/* Resolves "a.b.c": *owner gets the module holding the last component. */
static const char *resolve(const wk_module *m, const char *path, const wk_module **owner) {
  const char *p = path;
  for (const char *dot; (dot = strchr(p, '.'));) {
    const wk_module *next = NULL;
    size_t len = (size_t)(dot - p);
    for (int i = 0; i < m->nk; i++)
      if (strlen(m->kids[i].name) == len && !strncmp(m->kids[i].name, p, len)) next = m->kids[i].m;
    if (!next) return NULL;
    m = next;
    p = dot + 1;
  }
  *owner = m;
  return p;
}

static wk_tensor *find_slot(const char *fn, const wk_module *m, const char *path, bool param) {
  if (!m || !path) {
    wk__null_arg(fn, m ? "path" : "module");
    return NULL;
  }
  const wk_module *o;
  const char *leaf = resolve(m, path, &o);
  if (leaf) {
    const slot *s = param ? o->params : o->bufs;
    int n = param ? o->np : o->nb;
    for (int i = 0; i < n; i++)
      if (!strcmp(s[i].name, leaf)) return s[i].t;
  }
  wk_error(WK_ERR_NOT_FOUND, "%s: %s has no %s '%s'", fn, m->cls->name, param ? "parameter" : "buffer", path);
  return NULL;
}

wk_tensor *wk_module_param(const wk_module *m, const char *path) { return find_slot("module_param", m, path, true); }
wk_tensor *wk_module_buffer(const wk_module *m, const char *path) { return find_slot("module_buffer", m, path, false); }

wk_module *wk_module_child(const wk_module *m, const char *path) {
  if (!m || !path) {
    wk__null_arg("module_child", m ? "path" : "module");
    return NULL;
  }
  const wk_module *o;
  const char *leaf = resolve(m, path, &o);
  for (int i = 0; leaf && i < o->nk; i++)
    if (!strcmp(o->kids[i].name, leaf)) return o->kids[i].m;
  wk_error(WK_ERR_NOT_FOUND, "module_child: %s has no submodule '%s'", m->cls->name, path);
  return NULL;
}

/* True when x is root or one of its descendants. */
static bool contains(const wk_module *root, const wk_module *x) {
  if (root == x) return true;
  for (int i = 0; i < root->nk; i++)
    if (contains(root->kids[i].m, x)) return true;
  return false;
}

wk_status wk_module_set_child(wk_module *m, const char *path, wk_module *child) {
  if (!m || !path || !child)
    return wk_error(WK_ERR_NULL, "set_child: argument '%s' is NULL", !m ? "module" : !path ? "path" : "child");
  const wk_module *o;
  const char *leaf = resolve(m, path, &o);
  for (int i = 0; leaf && i < o->nk; i++)
    if (!strcmp(o->kids[i].name, leaf)) {
      if (contains(child, o)) /* o (m or inside it) would contain itself */
        return wk_error(WK_ERR_INVALID_ARG, "set_child: '%s' would make %s contain itself", path, m->cls->name);
      kid *k = &((wk_module *)o)->kids[i];
      wk_module *old = k->m;
      k->m = wk_module_retain(child); /* same name, same place in the order (PyTorch's setattr) */
      wk_module_release(old);
      return WK_OK;
    }
  return wk_error(WK_ERR_NOT_FOUND, "set_child: %s has no submodule '%s'", m->cls->name, path);
}

/* ---- forward hooks and the call stack ---- */
/* Global hooks: copy-on-write arrays, so a forward reads them without a lock
 * (an old array stays valid for forwards that took it: retired arrays are kept
 * until exit, and hooks change rarely). */
static pthread_mutex_t g_hook_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(hook_list *) g_hooks;
static atomic_int_fast64_t g_hook_ids;

#define STACK_MAX 256
static _Thread_local wk_module *tl_stack[STACK_MAX];
static _Thread_local int tl_depth;

static wk_status add_hook(hook **list, int *n, bool post, void *fn, void *user, int64_t *id) {
  hook *p = wk_realloc(*list, sizeof *p * (size_t)(*n + 1));
  if (!p) return wk_error(WK_ERR_NO_MEMORY, "register_forward_hook: out of memory");
  *id = atomic_fetch_add(&g_hook_ids, 1) + 1;
  p[(*n)++] = (hook){*id, post, fn, user};
  *list = p;
  return WK_OK;
}

static int64_t register_hook(wk_module *m, bool post, void *fn, void *user) {
  const char *what = post ? "register_forward_hook" : "register_forward_pre_hook";
  if (!fn) {
    wk__null_arg(what, "fn");
    return 0;
  }
  int64_t id = 0;
  if (m) return add_hook(&m->hooks, &m->nhooks, post, fn, user, &id) ? 0 : id;
  pthread_mutex_lock(&g_hook_lock);
  hook_list *old = atomic_load(&g_hooks), *nl = wk_calloc(1, sizeof *nl);
  if (nl && old && old->n) {
    nl->h = wk_malloc(sizeof *nl->h * (size_t)old->n);
    if (nl->h) memcpy(nl->h, old->h, sizeof *nl->h * (size_t)old->n);
    nl->n = nl->h ? old->n : 0;
  }
  wk_status s = !nl || (old && old->n && !nl->h) ? wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", what)
                                                  : add_hook(&nl->h, &nl->n, post, fn, user, &id);
  if (s == WK_OK) {
    nl->retired = old;
    atomic_store(&g_hooks, nl);
  } else if (nl) {
    free(nl->h);
    free(nl);
  }
  pthread_mutex_unlock(&g_hook_lock);
  return s ? 0 : id;
}

int64_t wk_module_register_forward_pre_hook(wk_module *m, wk_forward_pre_hook fn, void *user) {
  return register_hook(m, false, (void *)fn, user);
}
int64_t wk_module_register_forward_hook(wk_module *m, wk_forward_hook fn, void *user) {
  return register_hook(m, true, (void *)fn, user);
}

/* Full backward hooks: per module only (PyTorch has no global full backward hook API in 1.13). */
static int64_t register_bw_hook(wk_module *m, bool full, void *fn, void *user) {
  const char *what = full ? "register_full_backward_hook" : "register_full_backward_pre_hook";
  if (!m || !fn) {
    wk__null_arg(what, m ? "fn" : "module");
    return 0;
  }
  wk__bw_hook *p = wk_realloc(m->bhooks, sizeof *p * (size_t)(m->nbhooks + 1));
  if (!p) {
    wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", what);
    return 0;
  }
  m->bhooks = p;
  int64_t id = atomic_fetch_add(&g_hook_ids, 1) + 1;
  p[m->nbhooks++] = (wk__bw_hook){id, full, fn, user};
  return id;
}
int64_t wk_module_register_full_backward_hook(wk_module *m, wk_full_backward_hook fn, void *user) {
  return register_bw_hook(m, true, (void *)fn, user);
}
int64_t wk_module_register_full_backward_pre_hook(wk_module *m, wk_full_backward_pre_hook fn, void *user) {
  return register_bw_hook(m, false, (void *)fn, user);
}

static bool drop_bw_hook(wk_module *m, int64_t id) {
  for (int i = 0; i < m->nbhooks; i++)
    if (m->bhooks[i].id == id) {
      memmove(m->bhooks + i, m->bhooks + i + 1, sizeof *m->bhooks * (size_t)(m->nbhooks - i - 1));
      m->nbhooks--;
      return true;
    }
  return false;
}

static bool drop_hook(hook *list, int *n, int64_t id) {
  for (int i = 0; i < *n; i++)
    if (list[i].id == id) {
      memmove(list + i, list + i + 1, sizeof *list * (size_t)(*n - i - 1));
      (*n)--;
      return true;
    }
  return false;
}

wk_status wk_module_remove_hook(wk_module *m, int64_t id) {
  bool found;
  if (m) {
    found = drop_hook(m->hooks, &m->nhooks, id) || drop_bw_hook(m, id);
  } else {
    pthread_mutex_lock(&g_hook_lock);
    hook_list *old = atomic_load(&g_hooks), *nl = NULL;
    found = false;
    for (int i = 0; old && i < old->n && !found; i++) found = old->h[i].id == id;
    if (found && (nl = wk_calloc(1, sizeof *nl)) && (nl->h = wk_malloc(sizeof *nl->h * (size_t)old->n))) {
      memcpy(nl->h, old->h, sizeof *nl->h * (size_t)old->n);
      nl->n = old->n;
      drop_hook(nl->h, &nl->n, id);
      nl->retired = old;
      atomic_store(&g_hooks, nl);
    } else if (found) {
      free(nl);
      pthread_mutex_unlock(&g_hook_lock);
      return wk_error(WK_ERR_NO_MEMORY, "remove_hook: out of memory");
    }
    pthread_mutex_unlock(&g_hook_lock);
  }
  return found ? WK_OK : wk_error(WK_ERR_NOT_FOUND, "remove_hook: no hook with id %lld on %s", (long long)id,
                                  m ? m->cls->name : "every module (global hooks)");
}

int wk_module_named_children(const wk_module *m, const char **names, wk_module **children, int cap) {
  if (!m) return 0;
  for (int i = 0; i < m->nk && i < cap; i++) {
    if (names) names[i] = m->kids[i].name;
    if (children) children[i] = m->kids[i].m;
  }
  return m->nk;
}

int wk_module_call_stack(wk_module **out, int cap) {
  int n = tl_depth < STACK_MAX ? tl_depth : STACK_MAX;
  for (int i = 0; out && i < n && i < cap; i++) out[i] = tl_stack[i];
  return tl_depth;
}

/* Runs the pre (post = false) or post hooks of one list; stops at an error. */
static wk_status run_hooks(const hook *h, int n, bool post, wk_module *m, wk_tensor *const *in, int nin,
                           wk_tensor **out) {
  for (int i = 0; i < n; i++) {
    if (h[i].post != post) continue;
    wk_status s = post ? ((wk_forward_hook)h[i].fn)(h[i].user, m, in, nin, out)
                       : ((wk_forward_pre_hook)h[i].fn)(h[i].user, m, in, nin);
    if (s) {
      if (!wk__error_pending()) wk_error(s, "%s: forward %shook failed without a message", m->cls->name, post ? "" : "pre ");
      return s;
    }
  }
  return WK_OK;
}

wk_tensor *wk_module_forward_n(wk_module *m, wk_tensor *const *inputs, int n) {
  if (!m) {
    wk__null_arg("module_forward", "module");
    return NULL;
  }
  for (int i = 0; i < n; i++)
    if (!inputs || !inputs[i]) {
      if (!wk__error_pending()) wk_error(WK_ERR_NULL, "%s.forward: input %d is NULL", m->cls->name, i);
      return NULL;
    }
  const hook_list *g = atomic_load_explicit(&g_hooks, memory_order_acquire);
  if (g && !g->n) g = NULL;
  if (tl_depth < STACK_MAX) tl_stack[tl_depth] = m;
  tl_depth++;
  wk_tensor *r = NULL;
  wk__bw_call *bw = NULL;
  wk_tensor *wrapped[64];
  if ((g && run_hooks(g->h, g->n, false, m, inputs, n, NULL)) || run_hooks(m->hooks, m->nhooks, false, m, inputs, n, NULL))
    goto done;
  /* full backward hooks (PyTorch's order: after the forward pre hooks, the
   * inputs pass through the hooks' node; forward and its hooks see them) */
  if (m->nbhooks && wk_grad_enabled()) {
    if (!(bw = wk__bw_begin(m, m->bhooks, m->nbhooks, inputs, n, wrapped))) goto done;
    inputs = wrapped;
  }
  r = m->cls->forward(m, inputs, n);
  if (!r && !wk__error_pending() && !wk__error_revive())
    wk_error(WK_ERR_INTERNAL, "%s.forward returned NULL without an error", m->cls->name);
  if (r && ((g && run_hooks(g->h, g->n, true, m, inputs, n, &r)) || run_hooks(m->hooks, m->nhooks, true, m, inputs, n, &r))) {
    wk_release(r);
    r = NULL;
  }
  if (bw) {
    r = wk__bw_end(bw, r);
    wk__bw_finish(bw, wrapped, n);
  }
done:
  tl_depth--;
  return r;
}

wk_tensor *wk_module_forward(wk_module *m, wk_tensor *input) { return wk_module_forward_n(m, &input, 1); }

wk_status wk_module_train(wk_module *m, bool on) {
  if (!m) return wk_error(WK_ERR_NULL, "module_train: argument 'module' is NULL");
  m->training = on;
  for (int i = 0; i < m->nk; i++) wk_module_train(m->kids[i].m, on);
  return WK_OK;
}
bool wk_module_is_training(const wk_module *m) { return m && m->training; }

/* A dotted name kept by the root module (deduplicated). */
static const char *intern(wk_module *root, const char *prefix, const char *name) {
  char buf[1024];
  snprintf(buf, sizeof buf, "%s%s%s", prefix, *prefix ? "." : "", name);
  for (int i = 0; i < root->nnames; i++)
    if (!strcmp(root->names[i], buf)) return root->names[i];
  if (root->nnames == root->capnames) {
    int c = root->capnames ? root->capnames * 2 : 32;
    char **p = wk_realloc(root->names, sizeof *p * (size_t)c);
    if (!p) return NULL;
    root->names = p;
    root->capnames = c;
  }
  char *s = wk__strdup(buf);
  if (s) root->names[root->nnames++] = s;
  return s;
}

typedef struct {
  wk_module *root;
  const char **names; /* caller's arrays, filled up to cap */
  wk_tensor **out;
  int cap, n;
  wk_tensor **seen; /* every tensor counted so far (deduplication) */
  int nseen, capseen;
  bool params, persistent_only;
  bool oom; /* a name could not be recorded */
} walk_ctx;

static bool seen_before(walk_ctx *w, wk_tensor *t) {
  for (int k = 0; k < w->nseen; k++)
    if (w->seen[k] == t) return true;
  if (w->nseen == w->capseen) {
    int c = w->capseen ? w->capseen * 2 : 64;
    wk_tensor **p = wk_realloc(w->seen, sizeof *p * (size_t)c);
    if (!p) return false;
    w->seen = p;
    w->capseen = c;
  }
  w->seen[w->nseen++] = t;
  return false;
}

static void walk(walk_ctx *w, const wk_module *m, const char *prefix) {
  const slot *s = w->params ? m->params : m->bufs;
  int n = w->params ? m->np : m->nb;
  for (int i = 0; i < n; i++) {
    if (!s[i].t) continue; /* None */
    if (w->persistent_only && !s[i].persistent) continue;
    if (seen_before(w, s[i].t)) continue;
    if (w->n < w->cap) {
      if (w->out) w->out[w->n] = s[i].t;
      if (w->names && !(w->names[w->n] = intern(w->root, prefix, s[i].name))) w->oom = true;
    }
    w->n++;
  }
  for (int i = 0; i < m->nk; i++) {
    char p[1024];
    snprintf(p, sizeof p, "%s%s%s", prefix, *prefix ? "." : "", m->kids[i].name);
    walk(w, m->kids[i].m, p);
  }
}

static int walk_slots(const wk_module *m, const char **names, wk_tensor **out, int cap, bool params,
                      bool persistent_only) {
  if (!m) return 0;
  walk_ctx w = {(wk_module *)m, names, out, cap > 0 ? cap : 0, 0, NULL, 0, 0, params, persistent_only};
  walk(&w, m, "");
  free(w.seen);
  if (w.oom) return wk_error(WK_ERR_NO_MEMORY, "module: out of memory naming the %s", params ? "parameters" : "buffers"), -1;
  return w.n;
}

int wk_module_named_parameters(const wk_module *m, const char **names, wk_tensor **params, int cap) {
  return walk_slots(m, names, params, cap, true, false);
}
int wk_module_named_buffers(const wk_module *m, const char **names, wk_tensor **buffers, int cap) {
  return walk_slots(m, names, buffers, cap, false, false);
}

/* Every parameter once, as a malloc'd array (count in *n). */
static wk_tensor **all_params(const wk_module *m, int *n) {
  int cnt = wk_module_named_parameters(m, NULL, NULL, 0);
  wk_tensor **ps = wk_calloc((size_t)(cnt ? cnt : 1), sizeof *ps);
  *n = ps ? wk_module_named_parameters(m, NULL, ps, cnt) : 0;
  return ps;
}

int64_t wk_module_num_parameters(const wk_module *m, bool trainable_only) {
  int n;
  wk_tensor **ps = all_params(m, &n);
  int64_t total = 0;
  for (int i = 0; i < n; i++)
    if (!trainable_only || wk_tensor_requires_grad(ps[i])) total += wk_tensor_numel(ps[i]);
  free(ps);
  return total;
}

wk_status wk_module_zero_grad(wk_module *m, bool set_to_none) {
  if (!m) return wk_error(WK_ERR_NULL, "module_zero_grad: argument 'module' is NULL");
  int n;
  wk_tensor **ps = all_params(m, &n);
  wk_status s = WK_OK;
  for (int i = 0; i < n && !s; i++) s = wk_tensor_zero_grad(ps[i], set_to_none);
  free(ps);
  return s;
}

wk_status wk_module_requires_grad_(wk_module *m, bool requires_grad) {
  if (!m) return wk_error(WK_ERR_NULL, "module_requires_grad_: argument 'module' is NULL");
  int cnt = wk_module_named_parameters(m, NULL, NULL, 0);
  wk_tensor **ps = wk_calloc((size_t)(cnt ? cnt : 1), sizeof *ps);
  const char **names = wk_calloc((size_t)(cnt ? cnt : 1), sizeof *names);
  wk_status s = ps && names ? WK_OK : wk_error(WK_ERR_NO_MEMORY, "module_requires_grad_: out of memory");
  int n = s ? 0 : wk_module_named_parameters(m, names, ps, cnt);
  /* every parameter is checked before any changes: a refusal leaves the module as it was */
  for (int i = 0; i < n && !s; i++)
    if (requires_grad && !wk_dtype_is_floating(wk_tensor_dtype(ps[i])))
      s = wk_error(WK_ERR_DTYPE,
                   "module_requires_grad_: parameter '%s' is %s; only tensors of floating point dtype can require "
                   "gradients",
                   names[i], wk_dtype_name(wk_tensor_dtype(ps[i])));
    else if (!wk_tensor_is_leaf(ps[i]))
      s = wk_error(WK_ERR_AUTOGRAD, "module_requires_grad_: parameter '%s' is not a leaf", names[i]);
  for (int i = 0; i < n && !s; i++) s = wk_tensor_set_requires_grad(ps[i], requires_grad);
  wk_free(ps);
  wk_free(names);
  return s;
}

static wk_status move_one(wk_tensor *t, wk_device dev, wk_dtype dt) {
  if (!t) return WK_OK;
  wk_dtype want = dt && wk_dtype_is_floating(wk_tensor_dtype(t)) ? dt : wk_tensor_dtype(t);
  wk_device d = dev.type ? dev : wk_tensor_device(t);
  if (want == wk_tensor_dtype(t) && wk_device_equal(d, wk_tensor_device(t))) return WK_OK;
  wk_value a[3] = {WK_VT(t), WK_VDEV(d), WK_VDT(want)}, o[1];
  wk_status s = wk_call("to.device", a, 3, o);
  if (s) return s;
  s = wk__tensor_assign(t, o[0].u.t); /* the handle keeps its identity */
  wk_release(o[0].u.t);
  return s;
}

static wk_status move_module(wk_module *m, wk_device dev, wk_dtype dt) {
  wk_status s = WK_OK;
  for (int i = 0; i < m->np && !s; i++) {
    wk_tensor *p = m->params[i].t;
    if (!p) continue;
    s = move_one(p, dev, dt);
    wk_tensor *g = wk_tensor_grad(p);
    if (!s && g) {
      s = move_one(g, dev, dt);
      if (!s) s = wk_tensor_set_grad(p, g);
    }
    wk_release(g);
  }
  for (int i = 0; i < m->nb && !s; i++) s = move_one(m->bufs[i].t, dev, dt);
  for (int i = 0; i < m->nk && !s; i++) s = move_module(m->kids[i].m, dev, dt);
  return s;
}

wk_status wk_module_to(wk_module *m, wk_device dev, wk_dtype dtype) {
  if (!m) return wk_error(WK_ERR_NULL, "module_to: argument 'module' is NULL");
  if (dtype && !wk_dtype_is_floating(dtype))
    return wk_error(WK_ERR_DTYPE, "module_to: nn.Module.to only accepts floating point dtypes, but got desired dtype=%s",
                    wk_dtype_name(dtype));
  int depth = wk__call_depth;
  wk__call_depth = depth + 1; /* temporaries are not scope-owned */
  bool prev = wk_set_grad_enabled(false);
  wk_status s = move_module(m, dev, dtype);
  wk_set_grad_enabled(prev);
  wk__call_depth = depth;
  return s;
}

/* ---- state dicts ---- */
/* PyTorch's order: each module's parameters, then its persistent buffers,
 * then its children (pre-order); shared tensors once. */
typedef struct {
  wk_module *root;
  const char **names;
  wk_tensor **ts;
  int n, cap;
  bool oom; /* an entry could not be recorded: the walk's result is unusable */
} entries_ctx;

static void entries_walk(entries_ctx *e, const wk_module *m, const char *prefix) {
  if (e->oom) return;
  for (int pass = 0; pass < 2; pass++) {
    const slot *s = pass == 0 ? m->params : m->bufs;
    int n = pass == 0 ? m->np : m->nb;
    for (int i = 0; i < n; i++) {
      if (!s[i].t || (pass == 1 && !s[i].persistent)) continue;
      bool seen = false;
      for (int k = 0; k < e->n && !seen; k++) seen = e->ts[k] == s[i].t;
      if (seen) continue;
      if (e->n == e->cap) {
        int c = e->cap ? e->cap * 2 : 64;
        const char **pn = wk_realloc(e->names, sizeof *pn * (size_t)c);
        if (pn) e->names = pn;
        wk_tensor **pt = wk_realloc(e->ts, sizeof *pt * (size_t)c);
        if (pt) e->ts = pt;
        if (!pn || !pt) {
          e->oom = true;
          return;
        }
        e->cap = c;
      }
      if (!(e->names[e->n] = intern(e->root, prefix, s[i].name))) {
        e->oom = true;
        return;
      }
      e->ts[e->n++] = s[i].t;
    }
  }
  for (int i = 0; i < m->nk; i++) {
    char p[1024];
    snprintf(p, sizeof p, "%s%s%s", prefix, *prefix ? "." : "", m->kids[i].name);
    entries_walk(e, m->kids[i].m, p);
  }
}

static int model_entries(const wk_module *m, const char ***names, wk_tensor ***ts) {
  entries_ctx e = {(wk_module *)m, NULL, NULL, 0, 0};
  entries_walk(&e, m, "");
  *names = e.names;
  *ts = e.ts;
  if (e.oom) wk_error(WK_ERR_NO_MEMORY, "module state: out of memory listing the parameters and buffers");
  return e.oom ? -1 : e.n;
}

wk_state_dict *wk_module_state_dict(const wk_module *m) {
  if (!m) {
    wk__null_arg("module_state_dict", "module");
    return NULL;
  }
  const char **names;
  wk_tensor **ts;
  int n = model_entries(m, &names, &ts);
  wk_state_dict *sd = n >= 0 ? wk_state_dict_new() : NULL;
  for (int i = 0; sd && i < n; i++) {
    wk_tensor *d = wk_detach(ts[i]); /* shares storage, carries no history */
    wk_status s = d ? wk_state_dict_set(sd, names[i], d) : wk_last_error();
    wk_release(d);
    if (s) {
      wk_state_dict_free(sd);
      sd = NULL;
    }
  }
  if (n < 0) wk_error(WK_ERR_NO_MEMORY, "module_state_dict: out of memory");
  free(names);
  free(ts);
  return sd;
}

void wk_load_report_clear(wk_load_report *r) {
  if (!r) return;
  for (int i = 0; i < r->n_missing; i++) free(r->missing[i]);
  for (int i = 0; i < r->n_unexpected; i++) free(r->unexpected[i]);
  for (int i = 0; i < r->n_mismatched; i++) free(r->mismatched[i]);
  free(r->missing);
  free(r->unexpected);
  free(r->mismatched);
  memset(r, 0, sizeof *r);
}

static bool same_shape(const wk_tensor *a, const wk_tensor *b) {
  if (wk_tensor_dim(a) != wk_tensor_dim(b)) return false;
  for (int i = 0; i < wk_tensor_dim(a); i++)
    if (wk_tensor_size(a, i) != wk_tensor_size(b, i)) return false;
  return true;
}

static void add_str(char ***list, int *n, const char *s) {
  char **p = wk_realloc(*list, sizeof *p * (size_t)(*n + 1));
  if (!p) return;
  *list = p;
  if ((p[*n] = wk__strdup(s))) (*n)++;
}

wk_status wk_module_load_state_dict(wk_module *m, const wk_state_dict *sd, bool strict, wk_load_report *report) {
  if (report) memset(report, 0, sizeof *report);
  if (!m || !sd) return wk_error(WK_ERR_NULL, "load_state_dict: argument '%s' is NULL", m ? "state_dict" : "module");
  const char **names;
  wk_tensor **ts;
  int n = model_entries(m, &names, &ts);
  if (n < 0) {
    free(names);
    free(ts);
    return wk_error(WK_ERR_NO_MEMORY, "load_state_dict: out of memory");
  }
  wk_load_report r = {0};
  char b1[160], b2[160], line[512];
  for (int i = 0; i < n; i++) {
    wk_tensor *src = wk_state_dict_get(sd, names[i]);
    if (!src) {
      add_str(&r.missing, &r.n_missing, names[i]);
    } else if (!same_shape(src, ts[i])) {
      snprintf(line, sizeof line, "size mismatch for %s: copying a param with shape %s from checkpoint, the shape in "
               "current model is %s", names[i], wk__shape_str(wk_tensor_sizes(src), wk_tensor_dim(src), b1, sizeof b1),
               wk__shape_str(wk_tensor_sizes(ts[i]), wk_tensor_dim(ts[i]), b2, sizeof b2));
      add_str(&r.mismatched, &r.n_mismatched, line);
    }
  }
  for (int k = 0; k < wk_state_dict_size(sd); k++) {
    const char *key = wk_state_dict_key(sd, k);
    bool known = false;
    for (int i = 0; i < n && !known; i++) known = !strcmp(names[i], key);
    if (!known) add_str(&r.unexpected, &r.n_unexpected, key);
  }
  wk_status s = WK_OK;
  bool bad = r.n_missing || r.n_unexpected || r.n_mismatched;
  if (strict && bad) {
    char msg[1024];
    size_t k = (size_t)snprintf(msg, sizeof msg, "Error(s) in loading state_dict for %s:", m->cls->name);
    if (r.n_missing) {
      k += (size_t)snprintf(msg + (k < sizeof msg ? k : sizeof msg), k < sizeof msg ? sizeof msg - k : 0,
                            "\n\tMissing key(s) in state_dict:");
      for (int i = 0; i < r.n_missing && k < sizeof msg; i++)
        k += (size_t)snprintf(msg + k, sizeof msg - k, "%s \"%s\"", i ? "," : "", r.missing[i]);
    }
    if (r.n_unexpected && k < sizeof msg) {
      k += (size_t)snprintf(msg + k, sizeof msg - k, "\n\tUnexpected key(s) in state_dict:");
      for (int i = 0; i < r.n_unexpected && k < sizeof msg; i++)
        k += (size_t)snprintf(msg + k, sizeof msg - k, "%s \"%s\"", i ? "," : "", r.unexpected[i]);
    }
    for (int i = 0; i < r.n_mismatched && k < sizeof msg; i++)
      k += (size_t)snprintf(msg + k, sizeof msg - k, "\n\t%s.", r.mismatched[i]);
    s = wk_error(WK_ERR_SHAPE, "%s", msg);
  } else {
    int depth = wk__call_depth;
    wk__call_depth = depth + 1;
    bool prev = wk_set_grad_enabled(false);
    for (int i = 0; i < n && !s; i++) {
      wk_tensor *src = wk_state_dict_get(sd, names[i]);
      if (src && same_shape(src, ts[i]) && !wk_copy_(ts[i], src)) s = wk_last_error();
    }
    wk_set_grad_enabled(prev);
    wk__call_depth = depth;
  }
  if (report)
    *report = r;
  else
    wk_load_report_clear(&r);
  free(names);
  free(ts);
  return s;
}

/* ---- printing (PyTorch's Module.__repr__) ---- */
typedef struct {
  char *s;
  size_t n, cap;
  bool failed; /* an append ran out of memory: the text is incomplete */
} buf;

static void put(buf *b, const char *s) {
  size_t l = strlen(s);
  if (b->failed) return;
  if (b->n + l + 1 > b->cap) {
    size_t c = (b->cap + l + 1) * 2;
    char *p = wk_realloc(b->s, c);
    if (!p) {
      b->failed = true;
      return;
    }
    b->s = p;
    b->cap = c;
  }
  memcpy(b->s + b->n, s, l + 1);
  b->n += l;
}

/* Appends s with every line after the first indented by two spaces. */
static void put_indented(buf *b, const char *s) {
  for (const char *p = s; *p; p++) {
    char c[2] = {*p, 0};
    put(b, c);
    if (*p == '\n') put(b, "  ");
  }
}

static char *repr(const wk_module *m) {
  unsigned reports = wk__err_reports;
  char *extra = m->cls->struct_size >= sizeof(wk_module_class) && m->cls->extra_repr ? m->cls->extra_repr(m) : NULL;
  buf b = {0};
  /* NULL after reporting an error: the text is missing (out of memory), not empty: no shortened printout */
  if (!extra && wk__err_reports != reports) b.failed = true;
  put(&b, m->cls->name);
  put(&b, "(");
  bool has_extra = extra && *extra;
  if (has_extra && m->nk == 0 && !strchr(extra, '\n')) {
    put(&b, extra);
  } else if (has_extra || m->nk) {
    if (has_extra) {
      put(&b, "\n  ");
      put_indented(&b, extra);
    }
    for (int i = 0; i < m->nk; i++) {
      char *c = repr(m->kids[i].m);
      if (!c) b.failed = true; /* a child's text is missing: no shortened printout */
      put(&b, "\n  (");
      put(&b, m->kids[i].name);
      put(&b, "): ");
      if (c) put_indented(&b, c);
      free(c);
    }
    put(&b, "\n");
  }
  put(&b, ")");
  free(extra);
  if (b.failed || !b.s) {
    free(b.s);
    return NULL;
  }
  return b.s;
}

char *wk_module_to_string(const wk_module *m) {
  if (!m) {
    wk__null_arg("module_to_string", "module");
    return NULL;
  }
  char *s = repr(m);
  if (!s) wk_error(WK_ERR_NO_MEMORY, "module_to_string: out of memory");
  return s;
}
