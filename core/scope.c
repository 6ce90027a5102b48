/* Scopes: a thread-local stack; each scope owns the birth reference of every
 * tensor handle returned to user code while it is innermost, and releases
 * what is still owned when it ends.
 *
 * Neither opening a scope nor adopting a tensor can fail, so running out of
 * memory never leaves a tensor owned by nobody: the first 16 nesting levels
 * use preallocated scope records, and a tensor that does not fit because
 * growing the scope's array failed is chained through its own scope_slot
 * (slot -2 - next: heap pointers are positive) on the scope's overflow list. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct wk__scope {
  wk_tensor **items;
  int64_t n, cap;
  struct wk__scope *parent;
  wk_tensor *overflow; /* tensors adopted when items could not grow */
} wk__scope;

#define STATIC_SCOPES 16
static _Thread_local wk__scope *g_top;
static _Thread_local int g_depth;
static _Thread_local wk__scope g_static[STATIC_SCOPES];

static bool is_static(const wk__scope *s) { return s >= g_static && s < g_static + STATIC_SCOPES; }

int wk_scope_begin(void) {
  wk__scope *s = g_depth >= 0 && g_depth < STATIC_SCOPES ? &g_static[g_depth] : wk_calloc(1, sizeof *s);
  if (!s) {
    wk_error(WK_ERR_NO_MEMORY, "scope_begin: out of memory (%d scopes open)", g_depth);
    return -1;
  }
  if (is_static(s)) memset(s, 0, sizeof *s);
  s->parent = g_top;
  g_top = s;
  return ++g_depth;
}

static int64_t link_of(wk_tensor *next) { return -2 - (int64_t)(uintptr_t)next; }
static wk_tensor *next_of(const wk_tensor *t) { return (wk_tensor *)(uintptr_t)(-2 - t->scope_slot); }

static void push(wk__scope *s, wk_tensor *t) {
  t->scope = s;
  if (s->n == s->cap) {
    int64_t cap = s->cap ? s->cap * 2 : 64;
    wk_tensor **p = wk_realloc(s->items, sizeof *p * (size_t)cap);
    if (!p) { /* out of memory: the overflow chain, which needs none */
      t->scope_slot = link_of(s->overflow);
      s->overflow = t;
      return;
    }
    s->items = p;
    s->cap = cap;
  }
  t->scope_slot = s->n;
  s->items[s->n++] = t;
}

void wk__scope_adopt(wk_tensor *t) {
  if (!t || !g_top || t->scope) return;
  push(g_top, t);
}

void wk__scope_forget(wk_tensor *t) {
  wk__scope *s = t->scope;
  if (!s) return;
  if (t->scope_slot >= 0 && t->scope_slot < s->n && s->items[t->scope_slot] == t) {
    s->items[t->scope_slot] = NULL;
  } else if (t->scope_slot <= -2) { /* on the overflow chain (rare: only after an allocation failed) */
    wk_tensor *prev = NULL;
    for (wk_tensor *c = s->overflow; c; prev = c, c = next_of(c))
      if (c == t) {
        if (prev)
          prev->scope_slot = t->scope_slot;
        else
          s->overflow = next_of(t);
        break;
      }
  }
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
  while (s->overflow) {
    wk_tensor *t = s->overflow;
    s->overflow = next_of(t);
    t->scope = NULL;
    t->scope_slot = -1;
    wk_release(t);
  }
  wk__call_depth = depth;
  free(s->items);
  if (!is_static(s)) free(s);
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
  if (parent) push(parent, t);
  return t;
}
