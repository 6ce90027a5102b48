/* State dicts: insertion-ordered name -> tensor maps with string metadata
 * (linear lookup: a model has hundreds of entries, not millions). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct {
  char *key;
  wk_tensor *t;
} entry;

typedef struct {
  char *key, *value;
} meta;

struct wk_state_dict {
  entry *e;
  int n, cap;
  meta *m;
  int nm, capm;
};

wk_state_dict *wk_state_dict_new(void) {
  wk_state_dict *sd = calloc(1, sizeof *sd);
  if (!sd) wk_error(WK_ERR_NO_MEMORY, "state_dict: out of memory");
  return sd;
}

void wk_state_dict_free(wk_state_dict *sd) {
  if (!sd) return;
  int depth = wk__call_depth;
  wk__call_depth = depth + 1; /* the dict's own references, whatever scope is open */
  for (int i = 0; i < sd->n; i++) {
    free(sd->e[i].key);
    wk_release(sd->e[i].t);
  }
  wk__call_depth = depth;
  for (int i = 0; i < sd->nm; i++) {
    free(sd->m[i].key);
    free(sd->m[i].value);
  }
  free(sd->e);
  free(sd->m);
  free(sd);
}

static int find(const wk_state_dict *sd, const char *name) {
  for (int i = 0; i < sd->n; i++)
    if (strcmp(sd->e[i].key, name) == 0) return i;
  return -1;
}

wk_status wk_state_dict_set(wk_state_dict *sd, const char *name, wk_tensor *t) {
  if (!sd || !name || !t)
    return wk_error(WK_ERR_NULL, "state_dict_set: argument '%s' is NULL", !sd ? "sd" : !name ? "name" : "tensor");
  if (!*name) return wk_error(WK_ERR_INVALID_ARG, "state_dict_set: empty name");
  int i = find(sd, name);
  if (i >= 0) {
    wk_retain(t);
    int depth = wk__call_depth;
    wk__call_depth = depth + 1;
    wk_release(sd->e[i].t);
    wk__call_depth = depth;
    sd->e[i].t = t;
    return WK_OK;
  }
  if (sd->n == sd->cap) {
    int cap = sd->cap ? sd->cap * 2 : 16;
    entry *p = realloc(sd->e, sizeof *p * (size_t)cap);
    if (!p) return wk_error(WK_ERR_NO_MEMORY, "state_dict_set: out of memory");
    sd->e = p;
    sd->cap = cap;
  }
  char *k = wk__strdup(name);
  if (!k) return wk_error(WK_ERR_NO_MEMORY, "state_dict_set: out of memory");
  sd->e[sd->n].key = k;
  sd->e[sd->n].t = wk_retain(t);
  sd->n++;
  return WK_OK;
}

wk_tensor *wk_state_dict_get(const wk_state_dict *sd, const char *name) {
  if (!sd || !name) return NULL;
  int i = find(sd, name);
  return i >= 0 ? sd->e[i].t : NULL;
}

wk_status wk_state_dict_remove(wk_state_dict *sd, const char *name) {
  if (!sd || !name) return wk_error(WK_ERR_NULL, "state_dict_remove: argument '%s' is NULL", sd ? "name" : "sd");
  int i = find(sd, name);
  if (i < 0) return wk_error(WK_ERR_NOT_FOUND, "state_dict_remove: no entry named '%s'", name);
  free(sd->e[i].key);
  int depth = wk__call_depth;
  wk__call_depth = depth + 1;
  wk_release(sd->e[i].t);
  wk__call_depth = depth;
  memmove(&sd->e[i], &sd->e[i + 1], sizeof(entry) * (size_t)(sd->n - i - 1));
  sd->n--;
  return WK_OK;
}

int wk_state_dict_size(const wk_state_dict *sd) { return sd ? sd->n : 0; }
const char *wk_state_dict_key(const wk_state_dict *sd, int i) {
  return sd && i >= 0 && i < sd->n ? sd->e[i].key : NULL;
}
wk_tensor *wk_state_dict_value(const wk_state_dict *sd, int i) {
  return sd && i >= 0 && i < sd->n ? sd->e[i].t : NULL;
}

wk_status wk_state_dict_set_meta(wk_state_dict *sd, const char *key, const char *value) {
  if (!sd || !key || !value)
    return wk_error(WK_ERR_NULL, "state_dict_set_meta: argument '%s' is NULL", !sd ? "sd" : !key ? "key" : "value");
  for (int i = 0; i < sd->nm; i++)
    if (strcmp(sd->m[i].key, key) == 0) {
      char *v = wk__strdup(value);
      if (!v) return wk_error(WK_ERR_NO_MEMORY, "state_dict_set_meta: out of memory");
      free(sd->m[i].value);
      sd->m[i].value = v;
      return WK_OK;
    }
  if (sd->nm == sd->capm) {
    int cap = sd->capm ? sd->capm * 2 : 8;
    meta *p = realloc(sd->m, sizeof *p * (size_t)cap);
    if (!p) return wk_error(WK_ERR_NO_MEMORY, "state_dict_set_meta: out of memory");
    sd->m = p;
    sd->capm = cap;
  }
  sd->m[sd->nm].key = wk__strdup(key);
  sd->m[sd->nm].value = wk__strdup(value);
  if (!sd->m[sd->nm].key || !sd->m[sd->nm].value) {
    free(sd->m[sd->nm].key);
    free(sd->m[sd->nm].value);
    return wk_error(WK_ERR_NO_MEMORY, "state_dict_set_meta: out of memory");
  }
  sd->nm++;
  return WK_OK;
}

const char *wk_state_dict_get_meta(const wk_state_dict *sd, const char *key) {
  for (int i = 0; sd && key && i < sd->nm; i++)
    if (strcmp(sd->m[i].key, key) == 0) return sd->m[i].value;
  return NULL;
}
int wk_state_dict_meta_size(const wk_state_dict *sd) { return sd ? sd->nm : 0; }
const char *wk_state_dict_meta_key(const wk_state_dict *sd, int i) {
  return sd && i >= 0 && i < sd->nm ? sd->m[i].key : NULL;
}
const char *wk_state_dict_meta_value(const wk_state_dict *sd, int i) {
  return sd && i >= 0 && i < sd->nm ? sd->m[i].value : NULL;
}
