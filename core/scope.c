/* Scopes: a thread-local stack; each scope owns the birth reference of every
 * tensor handle returned to user code while it is innermost, and releases
 * what is still owned when it ends. */
#include <stdlib.h>

#include "internal.h"

typedef struct wk__scope {
  wk_tensor **items;
  int64_t n, cap;
  struct wk__scope *parent;
} wk__scope;

static _Thread_local wk__scope *g_top;
static _Thread_local int g_depth;

int wk_scope_begin(void) {
  wk__scope *s = wk_calloc(1, sizeof *s);
  if (!s) {
    wk_error(WK_ERR_NO_MEMORY, "scope_begin: out of memory");
    return -1;
  }
  s->parent = g_top;
  g_top = s;
  return ++g_depth;
}

static bool push(wk__scope *s, wk_tensor *t) {
  if (s->n == s->cap) {
    int64_t cap = s->cap ? s->cap * 2 : 64;
    wk_tensor **p = wk_realloc(s->items, sizeof *p * (size_t)cap);
    if (!p) return false;
    s->items = p;
    s->cap = cap;
  }
  t->scope = s;
  t->scope_slot = s->n;
  s->items[s->n++] = t;
  return true;
}

void wk__scope_adopt(wk_tensor *t) {
  if (!t || !g_top || t->scope) return;
  /* Out of memory here leaves the tensor owned by the caller, like no scope. */
  push(g_top, t);
}

void wk__scope_forget(wk_tensor *t) {
  wk__scope *s = t->scope;
  if (!s) return;
  if (t->scope_slot >= 0 && t->scope_slot < s->n && s->items[t->scope_slot] == t)
    s->items[t->scope_slot] = NULL;
  t->scope = NULL;
  t->scope_slot = -1;
}

wk_status wk_scope_end(void) {
  wk__scope *s = g_top;
  if (!s) return wk_error(WK_ERR_STATE, "scope_end: no scope is open");
  g_top = s->parent;
  g_depth--;
  /* Release newest first, like destructors. */
  int depth = wk__call_depth;
  wk__call_depth = depth + 1; /* plain releases: the scope gives up its own refs */
  for (int64_t i = s->n - 1; i >= 0; i--) {
    wk_tensor *t = s->items[i];
    if (!t) continue;
    t->scope = NULL;
    t->scope_slot = -1;
    wk_release(t);
  }
  wk__call_depth = depth;
  free(s->items);
  free(s);
  return WK_OK;
}

wk_tensor *wk_scope_keep(wk_tensor *t) {
  if (t && t->scope) wk__scope_forget(t);
  return t;
}

wk_tensor *wk_scope_escape(wk_tensor *t) {
  if (!t || !t->scope) return t;
  wk__scope *parent = ((wk__scope *)t->scope)->parent;
  wk__scope_forget(t);
  if (parent && !push(parent, t)) {
    /* cannot record it: the caller owns it instead */
  }
  return t;
}
