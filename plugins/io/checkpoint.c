/* io plugin: training checkpoints. Parts (state dicts) are stored with their
 * tensors and metadata keyed "<part>.<key>", user metadata as "user.<key>",
 * and the format version, part list, epoch, step and generator states as
 * "wick.*" metadata, all in one safetensors file written atomically. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"

#define CK_FORMAT "1"
#define CK_MAX_NAME 64
#define CK_LIST_SHOWN 8 /* keys named in a strict-mode error before "... and N more" */

/* ck->reserved_ of a loaded checkpoint: what the plugin owns besides the dicts. */
typedef struct {
  char *names[WK_CHECKPOINT_MAX_PARTS];
} owned;

static bool valid_part_name(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > CK_MAX_NAME || strcmp(s, "wick") == 0 || strcmp(s, "user") == 0) return false;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
      return false;
  }
  return true;
}

static char *join(const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  char *s = wk_malloc(na + nb + 2);
  if (!s) return NULL;
  memcpy(s, a, na);
  s[na] = '.';
  memcpy(s + na + 1, b, nb + 1);
  return s;
}

/* Exact unsigned decimal: digits only, no sign, no spaces, no overflow. */
static const char *parse_u64(const char *s, uint64_t *out) {
  uint64_t v = 0;
  const char *p = s;
  for (; *p >= '0' && *p <= '9'; p++) {
    if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10) return NULL;
    v = v * 10 + (uint64_t)(*p - '0');
  }
  if (p == s) return NULL;
  *out = v;
  return p;
}

static bool parse_i64(const char *s, int64_t *out) {
  bool neg = *s == '-';
  uint64_t v;
  const char *end = parse_u64(s + neg, &v);
  if (!end || *end || v > (uint64_t)INT64_MAX + neg) return false;
  *out = neg ? (int64_t)(0 - v) : (int64_t)v;
  return true;
}

/* "seed,offset" */
static bool parse_rng(const char *s, uint64_t *seed, uint64_t *offset) {
  const char *p = parse_u64(s, seed);
  if (!p || *p != ',') return false;
  p = parse_u64(p + 1, offset);
  return p && !*p;
}

static wk_status set_meta_fmt(wk_state_dict *sd, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static wk_status set_meta_fmt(wk_state_dict *sd, const char *key, const char *fmt, ...) {
  char v[128];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v, sizeof v, fmt, ap);
  va_end(ap);
  return wk_state_dict_set_meta(sd, key, v);
}

/* ============================== saving ============================== */

static wk_status check_ck(const wk_checkpoint *ck) {
  const char *fn = "checkpoint_save";
  if (!ck) return wk_error(WK_ERR_NULL, "%s: argument 'ck' is NULL", fn);
  if (ck->struct_size < sizeof(wk_checkpoint))
    return wk_error(WK_ERR_INVALID_ARG, "%s: ck->struct_size is %zu; initialise it with WK_CHECKPOINT_INIT", fn,
                    ck->struct_size);
  if (ck->nparts < 0 || ck->nparts > WK_CHECKPOINT_MAX_PARTS)
    return wk_error(WK_ERR_INVALID_ARG, "%s: nparts is %d, not in [0, %d]", fn, ck->nparts, WK_CHECKPOINT_MAX_PARTS);
  for (int i = 0; i < ck->nparts; i++) {
    const char *n = ck->part_names[i];
    if (!n || !ck->parts[i])
      return wk_error(WK_ERR_NULL, "%s: part %d has a NULL %s", fn, i, n ? "state dict" : "name");
    if (!valid_part_name(n))
      return wk_error(WK_ERR_INVALID_ARG,
                      "%s: part name '%.100s' is invalid (1 to %d letters, digits, '_' or '-'; not 'wick' or 'user')",
                      fn, n, CK_MAX_NAME);
    for (int j = 0; j < i; j++)
      if (strcmp(ck->part_names[j], n) == 0) return wk_error(WK_ERR_INVALID_ARG, "%s: part '%s' appears twice", fn, n);
  }
  if (wk_state_dict_size(ck->meta) > 0)
    return wk_error(WK_ERR_INVALID_ARG, "%s: user metadata holds tensors ('%.200s'); save them as a part", fn,
                    wk_state_dict_key(ck->meta, 0));
  return WK_OK;
}

/* Every generator: the cpu's as given (or current), then each plugin device's. */
static wk_status put_rng(wk_state_dict *all, const wk_checkpoint *ck) {
  uint64_t seed = ck->rng_seed, off = ck->rng_offset;
  wk_status st = ck->has_rng ? WK_OK : wk_rng_get_state(wk_cpu(), &seed, &off);
  if (!st) st = set_meta_fmt(all, "wick.rng.cpu", "%llu,%llu", (unsigned long long)seed, (unsigned long long)off);
  for (int32_t type = WK_DEVICE_FIRST_PLUGIN; type < WK_MAX_DEVICE_TYPES && !st; type++) {
    const char *name = wk_device_type_name(type);
    for (int i = 0; name && i < wk_device_count(type) && !st; i++) {
      char key[128];
      snprintf(key, sizeof key, "wick.rng.%s:%d", name, i);
      st = wk_rng_get_state((wk_device){type, i}, &seed, &off);
      if (!st) st = set_meta_fmt(all, key, "%llu,%llu", (unsigned long long)seed, (unsigned long long)off);
    }
  }
  return st;
}

wk_status io_ckpt_save(const char *path, const wk_checkpoint *ck) {
  if (!path) return wk_error(WK_ERR_NULL, "checkpoint_save: argument 'path' is NULL");
  wk_status st = check_ck(ck);
  if (st) return st;
  wk_state_dict *all = wk_state_dict_new();
  if (!all) return wk_last_error();
  char parts[WK_CHECKPOINT_MAX_PARTS * (CK_MAX_NAME + 1) + 1] = "";
  for (int i = 0; i < ck->nparts && !st; i++) {
    const char *pn = ck->part_names[i];
    wk_state_dict *sd = ck->parts[i];
    if (i) strcat(parts, ",");
    strcat(parts, pn);
    for (int k = 0; k < wk_state_dict_size(sd) && !st; k++) {
      char *key = join(pn, wk_state_dict_key(sd, k));
      st = key ? wk_state_dict_set(all, key, wk_state_dict_value(sd, k)) : wk_error(WK_ERR_NO_MEMORY, "out of memory");
      wk_free(key);
    }
    for (int k = 0; k < wk_state_dict_meta_size(sd) && !st; k++) {
      char *key = join(pn, wk_state_dict_meta_key(sd, k));
      st = key ? wk_state_dict_set_meta(all, key, wk_state_dict_meta_value(sd, k))
               : wk_error(WK_ERR_NO_MEMORY, "out of memory");
      wk_free(key);
    }
  }
  if (!st) st = wk_state_dict_set_meta(all, "wick.checkpoint", CK_FORMAT);
  if (!st) st = wk_state_dict_set_meta(all, "wick.parts", parts);
  if (!st) st = set_meta_fmt(all, "wick.epoch", "%lld", (long long)ck->epoch);
  if (!st) st = set_meta_fmt(all, "wick.step", "%lld", (long long)ck->step);
  if (!st) st = put_rng(all, ck);
  for (int k = 0; k < wk_state_dict_meta_size(ck->meta) && !st; k++) {
    char *key = join("user", wk_state_dict_meta_key(ck->meta, k));
    st = key ? wk_state_dict_set_meta(all, key, wk_state_dict_meta_value(ck->meta, k))
             : wk_error(WK_ERR_NO_MEMORY, "out of memory");
    wk_free(key);
  }
  if (!st) st = io_st_save("checkpoint_save", all, path, NULL, NULL);
  wk_state_dict_free(all);
  return st;
}

/* ============================== loading ============================== */

typedef struct {
  const char *path;
  wk_checkpoint *out;
} loader;

static wk_status bad(const loader *l, wk_status code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static wk_status bad(const loader *l, wk_status code, const char *fmt, ...) {
  char msg[1536];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return wk_error(code, "checkpoint_load: '%.300s': %s", l->path, msg);
}

static int find_part(const wk_checkpoint *ck, const char *name, size_t len) {
  for (int i = 0; i < ck->nparts; i++)
    if (strlen(ck->part_names[i]) == len && strncmp(ck->part_names[i], name, len) == 0) return i;
  return -1;
}

/* Creates the parts listed in "wick.parts" ("model,optim"; may be empty). */
static wk_status make_parts(const loader *l, const char *list) {
  wk_checkpoint *out = l->out;
  owned *ow = out->reserved_;
  const char *p = list;
  while (*p) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    char name[CK_MAX_NAME + 1];
    snprintf(name, sizeof name, "%.*s", (int)(len < CK_MAX_NAME ? len : CK_MAX_NAME), p);
    if (len > CK_MAX_NAME || !valid_part_name(name) || find_part(out, p, len) >= 0)
      return bad(l, WK_ERR_IO, "\"wick.parts\" ('%.200s') lists an invalid or repeated part name", list);
    if (out->nparts == WK_CHECKPOINT_MAX_PARTS)
      return bad(l, WK_ERR_IO, "\"wick.parts\" lists more than %d parts", WK_CHECKPOINT_MAX_PARTS);
    int i = out->nparts++;
    out->part_names[i] = ow->names[i] = wk_malloc(strlen(name) + 1);
    if (ow->names[i]) strcpy(ow->names[i], name);
    out->parts[i] = wk_state_dict_new();
    if (!ow->names[i] || !out->parts[i]) return wk_error(WK_ERR_NO_MEMORY, "checkpoint_load: out of memory");
    p += len;
    if (*p == ',' && !*++p) return bad(l, WK_ERR_IO, "\"wick.parts\" ('%.200s') ends with a comma", list);
  }
  return WK_OK;
}

/* The part a "<part>.<rest>" key belongs to, or -1; *rest points past the dot. */
static int part_of(const wk_checkpoint *ck, const char *key, const char **rest) {
  const char *dot = strchr(key, '.');
  if (!dot || !dot[1]) return -1;
  *rest = dot + 1;
  return find_part(ck, key, (size_t)(dot - key));
}

static wk_status split_tensors(const loader *l, const wk_state_dict *all) {
  for (int k = 0; k < wk_state_dict_size(all); k++) {
    const char *key = wk_state_dict_key(all, k), *rest;
    int i = part_of(l->out, key, &rest);
    if (i < 0) return bad(l, WK_ERR_IO, "tensor '%.200s' belongs to no part listed in \"wick.parts\"", key);
    wk_status st = wk_state_dict_set(l->out->parts[i], rest, wk_state_dict_value(all, k));
    if (st) return st;
  }
  return WK_OK;
}

static wk_status split_meta(const loader *l, const wk_state_dict *all) {
  wk_checkpoint *out = l->out;
  for (int k = 0; k < wk_state_dict_meta_size(all); k++) {
    const char *key = wk_state_dict_meta_key(all, k), *val = wk_state_dict_meta_value(all, k), *rest;
    wk_status st = WK_OK;
    if (strncmp(key, "wick.", 5) == 0) {
      if (strcmp(key, "wick.epoch") == 0 && !parse_i64(val, &out->epoch))
        return bad(l, WK_ERR_IO, "\"wick.epoch\" is '%.100s', not an integer", val);
      if (strcmp(key, "wick.step") == 0 && !parse_i64(val, &out->step))
        return bad(l, WK_ERR_IO, "\"wick.step\" is '%.100s', not an integer", val);
      uint64_t a = 0, b = 0;
      if (strncmp(key, "wick.rng.", 9) == 0 && !parse_rng(val, &a, &b))
        return bad(l, WK_ERR_IO, "\"%.100s\" is '%.100s', not 'seed,offset'", key, val);
      if (strcmp(key, "wick.rng.cpu") == 0) out->has_rng = true, out->rng_seed = a, out->rng_offset = b;
      continue; /* other wick.* keys: checked elsewhere, or from a newer writer */
    }
    if (strncmp(key, "user.", 5) == 0 && key[5]) {
      if (!out->meta && !(out->meta = wk_state_dict_new())) return wk_last_error();
      st = wk_state_dict_set_meta(out->meta, key + 5, val);
    } else {
      int i = part_of(out, key, &rest);
      if (i < 0) return bad(l, WK_ERR_IO, "metadata key '%.200s' belongs to no part listed in \"wick.parts\"", key);
      st = wk_state_dict_set_meta(out->parts[i], rest, val);
    }
    if (st) return st;
  }
  return WK_OK;
}

typedef struct {
  char **v;
  int n, cap;
} list;

static bool list_add(list *a, const char *part, const char *key) {
  if (a->n == a->cap) {
    int cap = a->cap ? a->cap * 2 : 8;
    char **p = wk_realloc(a->v, sizeof *p * (size_t)cap);
    if (!p) return false;
    a->v = p, a->cap = cap;
  }
  return (a->v[a->n] = join(part, key)) != NULL && ++a->n;
}

static void list_free(list *a) {
  for (int i = 0; i < a->n; i++) wk_free(a->v[i]);
  wk_free(a->v);
}

static size_t list_str(const list *a, char *buf, size_t cap) {
  size_t k = 0;
  for (int i = 0; i < a->n && i < CK_LIST_SHOWN && k < cap; i++)
    k += (size_t)snprintf(buf + k, cap - k, "%s\"%.100s\"", i ? ", " : "", a->v[i]);
  if (a->n > CK_LIST_SHOWN && k < cap) k += (size_t)snprintf(buf + k, cap - k, " and %d more", a->n - CK_LIST_SHOWN);
  return k;
}

/* Compares the loaded parts with opts->expected (PyTorch's load_state_dict). */
static wk_status compare(const loader *l, const wk_checkpoint *exp, bool non_strict) {
  wk_checkpoint *out = l->out;
  list miss = {0}, unexp = {0};
  wk_status st = WK_OK;
  for (int i = 0; exp && i < exp->nparts && i < WK_CHECKPOINT_MAX_PARTS && !st; i++) {
    const char *pn = exp->part_names[i];
    const wk_state_dict *e = exp->parts[i];
    if (!pn || !e) {
      st = wk_error(WK_ERR_NULL, "checkpoint_load: expected part %d has a NULL %s", i, pn ? "state dict" : "name");
      break;
    }
    const wk_state_dict *got = wk_checkpoint_part(out, pn);
    for (int k = 0; k < wk_state_dict_size(e) && !st; k++) {
      const char *key = wk_state_dict_key(e, k);
      wk_tensor *want = wk_state_dict_value(e, k), *t = wk_state_dict_get(got, key);
      char a[256], b[256];
      if (!t) {
        if (!list_add(&miss, pn, key)) st = wk_error(WK_ERR_NO_MEMORY, "checkpoint_load: out of memory");
      } else if (wk_tensor_dim(t) != wk_tensor_dim(want) ||
                 memcmp(wk_tensor_sizes(t), wk_tensor_sizes(want), sizeof(int64_t) * (size_t)wk_tensor_dim(t)) != 0) {
        st = bad(l, WK_ERR_SHAPE,
                 "size mismatch for %s.%.200s: copying a param with shape %s from checkpoint, the shape in current "
                 "model is %s",
                 pn, key, wk_sizes_str(wk_tensor_sizes(t), wk_tensor_dim(t), a, sizeof a),
                 wk_sizes_str(wk_tensor_sizes(want), wk_tensor_dim(want), b, sizeof b));
      } else if (wk_tensor_dtype(t) != wk_tensor_dtype(want)) {
        st = bad(l, WK_ERR_DTYPE, "dtype mismatch for %s.%.200s: the checkpoint holds %s, the current model %s", pn,
                 key, wk_dtype_name(wk_tensor_dtype(t)), wk_dtype_name(wk_tensor_dtype(want)));
      }
    }
    for (int k = 0; k < wk_state_dict_size(got) && !st; k++)
      if (!wk_state_dict_get(e, wk_state_dict_key(got, k)) && !list_add(&unexp, pn, wk_state_dict_key(got, k)))
        st = wk_error(WK_ERR_NO_MEMORY, "checkpoint_load: out of memory");
  }
  if (!st && (miss.n || unexp.n) && !non_strict) {
    char m[1024] = "", u[1024] = "";
    list_str(&miss, m, sizeof m);
    list_str(&unexp, u, sizeof u);
    st = bad(l, WK_ERR_NOT_FOUND, "Error(s) in loading the checkpoint:%s%s%s%s%s (pass non_strict to load anyway)",
             miss.n ? " Missing key(s): " : "", m, miss.n && unexp.n ? ";" : "", unexp.n ? " Unexpected key(s): " : "",
             u);
  }
  if (st) {
    list_free(&miss);
    list_free(&unexp);
    return st;
  }
  out->missing = miss.v, out->nmissing = miss.n;
  out->unexpected = unexp.v, out->nunexpected = unexp.n;
  return WK_OK;
}

/* Sets every generator found in the file whose device exists here. */
static void restore_rng(const wk_state_dict *all) {
  for (int k = 0; k < wk_state_dict_meta_size(all); k++) {
    const char *key = wk_state_dict_meta_key(all, k);
    uint64_t seed, off;
    if (strncmp(key, "wick.rng.", 9) != 0 || !parse_rng(wk_state_dict_meta_value(all, k), &seed, &off)) continue;
    char name[64];
    const char *colon = strchr(key + 9, ':');
    size_t len = colon ? (size_t)(colon - key - 9) : strlen(key + 9);
    uint64_t idx = 0;
    if (len >= sizeof name || (colon && (!parse_u64(colon + 1, &idx) || idx > 1000000))) continue;
    snprintf(name, sizeof name, "%.*s", (int)len, key + 9);
    int32_t type = wk_device_type_find(name);
    if (type >= 0 && (int64_t)idx < wk_device_count(type)) wk_rng_set_state((wk_device){type, (int32_t)idx}, seed, off);
  }
}

wk_status io_ckpt_load(const char *path, wk_checkpoint *out, const wk_io_load_opts *opts) {
  const char *fn = "checkpoint_load";
  if (!out) return wk_error(WK_ERR_NULL, "%s: argument 'out' is NULL", fn);
  if (out->struct_size < sizeof(wk_checkpoint))
    return wk_error(WK_ERR_INVALID_ARG, "%s: out->struct_size is %zu; initialise it with WK_CHECKPOINT_INIT", fn,
                    out->struct_size);
  size_t ss = out->struct_size;
  memset(out, 0, sizeof *out);
  out->struct_size = ss;
  if (!path) return wk_error(WK_ERR_NULL, "%s: argument 'path' is NULL", fn);
  wk_io_load_opts o;
  wk_status st = io_opts(fn, opts, &o);
  if (st) return st;
  wk_state_dict *all = NULL;
  if ((st = io_st_load(fn, path, NULL, 0, &o, &all))) return st;
  loader l = {path, out};
  const char *format = wk_state_dict_get_meta(all, "wick.checkpoint");
  const char *parts = wk_state_dict_get_meta(all, "wick.parts");
  if (!format || !parts)
    st = bad(&l, WK_ERR_IO, "not a Wick checkpoint (no \"%s\" metadata); load it with wk_load_safetensors",
             format ? "wick.parts" : "wick.checkpoint");
  else if (strcmp(format, CK_FORMAT) != 0)
    st = bad(&l, WK_ERR_UNSUPPORTED, "checkpoint format '%.40s' is not supported (this plugin reads %s)", format,
             CK_FORMAT);
  if (!st && !(out->reserved_ = wk_calloc(1, sizeof(owned)))) st = wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", fn);
  if (!st) st = make_parts(&l, parts);
  if (!st) st = split_tensors(&l, all);
  if (!st) st = split_meta(&l, all);
  if (!st && o.expected) st = compare(&l, o.expected, o.non_strict);
  if (!st && !o.keep_rng) restore_rng(all);
  wk_state_dict_free(all);
  if (st) io_ckpt_clear(out);
  return st;
}

void io_ckpt_clear(wk_checkpoint *ck) {
  if (!ck) return;
  owned *ow = ck->reserved_;
  if (ow) { /* filled by checkpoint_load: everything in it is ours */
    for (int i = 0; i < ck->nparts && i < WK_CHECKPOINT_MAX_PARTS; i++) wk_state_dict_free(ck->parts[i]);
    for (int i = 0; i < WK_CHECKPOINT_MAX_PARTS; i++) wk_free(ow->names[i]);
    wk_state_dict_free(ck->meta);
    for (int i = 0; i < ck->nmissing; i++) wk_free(ck->missing[i]);
    for (int i = 0; i < ck->nunexpected; i++) wk_free(ck->unexpected[i]);
    wk_free(ck->missing);
    wk_free(ck->unexpected);
    wk_free(ow);
  }
  size_t ss = ck->struct_size;
  memset(ck, 0, ss < sizeof *ck ? ss : sizeof *ck);
  ck->struct_size = ss;
}
