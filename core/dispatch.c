/* Operator registry and dispatcher: ops declared from schemas, kernels per
 * (op, device type) ranked by priority with optional supports() predicates,
 * dispatch layers above the kernels, argument normalisation against the
 * schema, device checks, and scope adoption of results. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "meta.h"

typedef struct kernel_entry {
  int32_t device_type, priority;
  wk_kernel_fn fn;
  wk_supports_fn supports;
  void *user;
  char *name;
  wk_plugin *owner;
} kernel_entry;

struct wk_op {
  wk__schema schema;
  char *schema_text;
  uint32_t tags;
  int mutated_arg;
  bool out_borrowed[WK_MAX_OUTS]; /* returns aliasing a mutated argument */
  kernel_entry *kernels;
  int nkernels, cap;
  const void *autograd; /* derivative formula (autograd.c owns the meaning) */
  wk_meta_fn meta;      /* checks and result shapes (meta.c owns the meaning) */
  int8_t out_target[WK_MAX_OUTS]; /* argument a result aliases and mutates, or -1 */
  int8_t mask_arg;                /* the `output_mask` argument, or -1 */
  wk_plugin *owner; /* plugin whose init declared it (NULL: the core, or declared by several) */
  int8_t qmode;     /* quantized tensor arguments: QM_REFUSE, QM_PASS or QM_KEEP_QPARAMS */
};

/* How a standard op treats quantized tensors (qint8/quint8/qint32): the
 * quantization ops and views take them, clone copies their q-params, and
 * every other standard op refuses them (its kernels would read the stored
 * integers as plain numbers). Plugins' ops decide for themselves. */
enum { QM_REFUSE = 0, QM_PASS = 1, QM_KEEP_QPARAMS = 2, QM_PER_TENSOR_VIEW = 3, QM_RAW_COPY = 4 };
static int8_t quant_mode(const char *name, uint32_t tags, bool plugin) {
  static const char *const pass[] = {"quantize_per_tensor", "quantize_per_channel", "dequantize", "int_repr",
                                     "quantized_"};
  if (plugin || !strcmp(name, "alias") || !strcmp(name, "contiguous")) return QM_PASS;
  /* a view keeps the q-params as they are: right for per-tensor ones; a
   * per-channel tensor's axis would not follow a reshape or permute */
  if (tags & WK_TAG_VIEW) return QM_PER_TENSOR_VIEW;
  if (!strcmp(name, "clone")) return QM_KEEP_QPARAMS;
  if (!strcmp(name, "copy_")) return QM_RAW_COPY; /* clone's copy into a fresh buffer of the same dtype */
  for (size_t i = 0; i < sizeof pass / sizeof pass[0]; i++)
    if (!strncmp(name, pass[i], strlen(pass[i]))) return QM_PASS;
  return QM_REFUSE;
}

/* The first quantized tensor among the arguments, or NULL. */
static const wk_tensor *quantized_arg(const wk_op *op, const wk_value *args) {
  for (int i = 0; i < op->schema.nargs; i++) {
    if (args[i].tag == WK_V_TENSOR && args[i].u.t && args[i].u.t->quant) return args[i].u.t;
    if (args[i].tag == WK_V_TENSORS)
      for (int j = 0; j < args[i].len; j++)
        if (args[i].u.tensors[j] && args[i].u.tensors[j]->quant) return args[i].u.tensors[j];
  }
  return NULL;
}

struct wk_layer {
  char *name;
  int level, index;
  wk_layer_fn fn;
  void *user;
  atomic_bool enabled;
};

_Thread_local int wk__call_depth;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static wk_op **g_ops;
static int g_nops, g_capops;
static wk_op **g_hash;
static int g_hashcap;

#define MAX_LAYERS 16
static wk_layer *g_layers[MAX_LAYERS];
static atomic_int g_nlayers;
static atomic_uint g_active_mask; /* bit i: layer i enabled process-wide */
static _Thread_local uint32_t g_excluded;

/* ---- env overrides: WICK_DENY_KERNELS / WICK_FORCE_KERNELS = plugin[:op],... -- */
static char *g_deny, *g_force;

void wk__dispatch_apply_env(void) {
  free(g_deny);
  free(g_force);
  g_deny = wk__strdup(getenv("WICK_DENY_KERNELS"));
  g_force = wk__strdup(getenv("WICK_FORCE_KERNELS"));
}

static bool env_match(const char *list, const char *plugin, const char *op) {
  if (!list || !*list) return false;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", list);
  for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char *colon = strchr(tok, ':');
    if (colon) *colon = 0;
    if (strcmp(tok, plugin) == 0 && (!colon || strcmp(colon + 1, op) == 0)) return true;
  }
  return false;
}

/* ---- op table ---- */
static uint32_t hash_str(const char *s) {
  uint32_t h = 2166136261u;
  while (*s) h = (h ^ (uint8_t)*s++) * 16777619u;
  return h;
}

static wk_op *lookup(const char *name) {
  if (!g_hashcap) return NULL;
  for (uint32_t i = hash_str(name) & (uint32_t)(g_hashcap - 1);; i = (i + 1) & (uint32_t)(g_hashcap - 1)) {
    wk_op *op = g_hash[i];
    if (!op) return NULL;
    if (strcmp(op->schema.name, name) == 0) return op;
  }
}

/* Puts op in the first free slot of its probe sequence in h (cap a power of 2). */
static void hash_place(wk_op **h, int cap, wk_op *op) {
  uint32_t j = hash_str(op->schema.name) & (uint32_t)(cap - 1);
  while (h[j]) j = (j + 1) & (uint32_t)(cap - 1);
  h[j] = op;
}

static bool hash_insert(wk_op *op) {
  if ((g_nops + 1) * 2 > g_hashcap) {
    int cap = g_hashcap ? g_hashcap * 2 : 512;
    wk_op **h = wk_calloc((size_t)cap, sizeof *h);
    if (!h) return false;
    for (int i = 0; i < g_hashcap; i++)
      if (g_hash[i]) hash_place(h, cap, g_hash[i]);
    free(g_hash);
    g_hash = h;
    g_hashcap = cap;
  }
  hash_place(g_hash, g_hashcap, op);
  return true;
}

wk_op *wk_op_declare(const char *schema, uint32_t tags) {
  wk__schema s;
  if (!wk__schema_parse(schema, &s)) return NULL;
  pthread_mutex_lock(&g_lock);
  wk_op *old = lookup(s.name);
  if (old) {
    bool same = wk__schema_equal(&old->schema, &s);
    if (same && old->owner != wk__plugin_current()) old->owner = NULL; /* shared: no rollback removes it */
    pthread_mutex_unlock(&g_lock);
    if (!same) wk_error(WK_ERR_SCHEMA, "wk_op_declare: op '%s' already declared as '%s', not '%s'",
                        s.name, old->schema_text, schema);
    wk__schema_free(&s);
    return same ? old : NULL;
  }
  wk_op *op = wk_calloc(1, sizeof *op);
  char *text = op ? wk__strdup(schema) : NULL;
  if (text && g_nops == g_capops) { /* the table stays as it was when growing it fails */
    int cap = g_capops ? g_capops * 2 : 256;
    wk_op **grown = wk_realloc(g_ops, sizeof *g_ops * (size_t)cap);
    if (grown) g_ops = grown, g_capops = cap;
  }
  if (!op || !text || g_nops == g_capops) {
    pthread_mutex_unlock(&g_lock);
    free(text);
    free(op);
    wk__schema_free(&s);
    wk_error(WK_ERR_NO_MEMORY, "wk_op_declare: out of memory");
    return NULL;
  }
  op->schema = s;
  op->schema_text = text;
  op->tags = tags;
  op->owner = wk__plugin_current();
  op->qmode = quant_mode(s.name, tags, op->owner != NULL);
  op->mutated_arg = -1;
  for (int i = 0; i < s.nargs; i++)
    if (s.args[i].mutates && op->mutated_arg < 0) op->mutated_arg = i;
  op->mask_arg = -1;
  for (int i = 0; i < s.nargs; i++)
    if (s.args[i].type == WK__A_INTS && strcmp(s.args[i].name, "output_mask") == 0) op->mask_arg = (int8_t)i;
  for (int i = 0; i < s.nouts; i++) {
    op->out_borrowed[i] = s.outs[i].alias && s.outs[i].mutates;
    op->out_target[i] = -1;
    for (int j = 0; op->out_borrowed[i] && j < s.nargs && op->out_target[i] < 0; j++)
      if (s.args[j].mutates && s.args[j].alias == s.outs[i].alias) op->out_target[i] = (int8_t)j;
  }
  if (!hash_insert(op)) {
    pthread_mutex_unlock(&g_lock);
    wk__schema_free(&op->schema);
    free(op->schema_text);
    free(op);
    wk_error(WK_ERR_NO_MEMORY, "wk_op_declare: out of memory");
    return NULL;
  }
  g_ops[g_nops++] = op;
  pthread_mutex_unlock(&g_lock);
  return op;
}

wk_op *wk_op_find(const char *name) {
  if (!name) {
    wk__null_arg("wk_op_find", "name");
    return NULL;
  }
  wk_op *op = lookup(name);
  if (!op)
    wk_error(WK_ERR_NOT_FOUND, "unknown op '%s'%s", name,
             g_nops ? "" : " (no ops are declared: was wk_init() called?)");
  return op;
}

const char *wk_op_name(const wk_op *op) { return op ? op->schema.name : NULL; }
const char *wk_op_schema(const wk_op *op) { return op ? op->schema_text : NULL; }
uint32_t wk_op_tags(const wk_op *op) { return op ? op->tags : 0; }
int wk_op_num_args(const wk_op *op) { return op ? op->schema.nargs : 0; }
int wk_op_num_outs(const wk_op *op) { return op ? op->schema.nouts : 0; }
const char *wk_op_arg_name(const wk_op *op, int i) {
  return op && i >= 0 && i < op->schema.nargs ? op->schema.args[i].name : NULL;
}
int wk_op_arg_index(const wk_op *op, const char *name) {
  if (!op || !name) return -1;
  for (int i = 0; i < op->schema.nargs; i++)
    if (strcmp(op->schema.args[i].name, name) == 0) return i;
  return -1;
}
const char *wk_op_arg_type(const wk_op *op, int i) {
  return op && i >= 0 && i < op->schema.nargs ? op->schema.args[i].type_text : NULL;
}
int wk_op_mutated_arg(const wk_op *op) { return op ? op->mutated_arg : -1; }
const wk_value *wk_op_arg_default(const wk_op *op, int i) {
  if (!op || i < 0 || i >= op->schema.nargs || !op->schema.args[i].has_default) return NULL;
  return &op->schema.args[i].def;
}
int wk_op_count(void) { return g_nops; }
wk_op *wk_op_at(int i) { return i >= 0 && i < g_nops ? g_ops[i] : NULL; }
const wk__schema *wk__op_schema(const wk_op *op) { return &op->schema; }
const void **wk__op_autograd_slot(wk_op *op) { return &op->autograd; }
wk_meta_fn *wk__op_meta_slot(wk_op *op) { return &op->meta; }
int wk__op_mask_arg(const wk_op *op) { return op->mask_arg; }
int wk__op_out_target(const wk_op *op, int i) { return i >= 0 && i < op->schema.nouts ? op->out_target[i] : -1; }
void wk__op_get_info(const wk_op *op, wk__op_info *out) {
  out->nargs = op->schema.nargs;
  out->nouts = op->schema.nouts;
  out->mutated_arg = op->mutated_arg;
  out->tags = op->tags;
  out->autograd = op->autograd;
}

/* ---- kernels ---- */
/* What a registration owns: its name, and an unboxed kernel's libffi call interface. */
static void kernel_entry_free(kernel_entry *k) {
  free(k->name);
  if (k->fn == wk__ffi_kernel) free(k->user);
}

static wk_status add_kernel(wk_op *op, kernel_entry k) {
  const char *plugin = wk__plugin_name_or_core(k.owner);
  if (env_match(g_deny, plugin, op->schema.name)) {
    kernel_entry_free(&k);
    return WK_OK; /* denied by WICK_DENY_KERNELS: silently not registered */
  }
  if (env_match(g_force, plugin, op->schema.name)) k.priority += 1000000;
  pthread_mutex_lock(&g_lock);
  if (op->nkernels == op->cap) {
    int cap = op->cap ? op->cap * 2 : 4;
    kernel_entry *p = wk_realloc(op->kernels, sizeof *p * (size_t)cap);
    if (!p) {
      pthread_mutex_unlock(&g_lock);
      kernel_entry_free(&k);
      return wk_error(WK_ERR_NO_MEMORY, "wk_kernel_register: out of memory");
    }
    op->kernels = p;
    op->cap = cap;
  }
  /* Highest priority first; a later registration wins ties (overrides). */
  int pos = 0;
  while (pos < op->nkernels && op->kernels[pos].priority > k.priority) pos++;
  memmove(&op->kernels[pos + 1], &op->kernels[pos], sizeof(kernel_entry) * (size_t)(op->nkernels - pos));
  op->kernels[pos] = k;
  op->nkernels++;
  pthread_mutex_unlock(&g_lock);
  return WK_OK;
}

wk_status wk_kernel_register(const wk_kernel_desc *d) {
  if (!d) return wk_error(WK_ERR_NULL, "wk_kernel_register: argument 'desc' is NULL");
  if (d->struct_size < offsetof(wk_kernel_desc, supports))
    return wk_error(WK_ERR_ABI, "wk_kernel_register: desc struct_size %zu is too small", d->struct_size);
  if (!d->op || !d->fn)
    return wk_error(WK_ERR_INVALID_ARG, "wk_kernel_register: desc needs an op name and a function");
  wk_op *op = lookup(d->op);
  if (!op) return wk_error(WK_ERR_NOT_FOUND, "wk_kernel_register: unknown op '%s'", d->op);
  if (d->device_type != WK_DEVICE_DEFAULT && !wk__device_iface(d->device_type))
    return wk_error(WK_ERR_DEVICE, "wk_kernel_register: op '%s': unknown device type %d", d->op, d->device_type);
  kernel_entry k = {d->device_type, d->priority, d->fn, NULL, NULL, NULL, wk__plugin_current()};
  if (d->struct_size >= offsetof(wk_kernel_desc, user)) k.supports = d->supports;
  if (d->struct_size >= offsetof(wk_kernel_desc, name)) k.user = d->user;
  if (d->struct_size >= sizeof(wk_kernel_desc) && d->name) k.name = wk__strdup(d->name);
  return add_kernel(op, k);
}

wk_status wk_kernel_register_unboxed(const char *opname, int32_t device_type, int32_t priority,
                                     void (*fn)(void), const char *name) {
  if (!opname || !fn)
    return wk_error(WK_ERR_NULL, "wk_kernel_register_unboxed: argument '%s' is NULL", opname ? "fn" : "op");
  wk_op *op = lookup(opname);
  if (!op) return wk_error(WK_ERR_NOT_FOUND, "wk_kernel_register_unboxed: unknown op '%s'", opname);
  if (device_type != WK_DEVICE_DEFAULT && !wk__device_iface(device_type))
    return wk_error(WK_ERR_DEVICE, "wk_kernel_register_unboxed: op '%s': unknown device type %d", opname, device_type);
  void *prep = wk__ffi_prepare(&op->schema, fn);
  if (!prep) return wk_last_error();
  kernel_entry k = {device_type, priority, wk__ffi_kernel, NULL, prep, wk__strdup(name), wk__plugin_current()};
  return add_kernel(op, k);
}

void wk__kernel_rollback(wk_plugin *owner) {
  pthread_mutex_lock(&g_lock);
  for (int i = 0; i < g_nops; i++) {
    wk_op *op = g_ops[i];
    int w = 0;
    for (int r = 0; r < op->nkernels; r++) {
      if (op->kernels[r].owner == owner)
        kernel_entry_free(&op->kernels[r]);
      else
        op->kernels[w++] = op->kernels[r];
    }
    op->nkernels = w;
  }
  pthread_mutex_unlock(&g_lock);
}

/* Removes the ops that `owner` alone declared from the table and the hash,
 * which is rebuilt. Runs after wk__kernel_rollback took the owner's kernels. */
void wk__op_rollback(wk_plugin *owner) {
  if (!owner) return;
  pthread_mutex_lock(&g_lock);
  int w = 0;
  for (int r = 0; r < g_nops; r++) {
    wk_op *op = g_ops[r];
    if (op->owner != owner || op->nkernels) { /* kernels left are another plugin's: it stays, shared */
      if (op->owner == owner) op->owner = NULL;
      g_ops[w++] = op;
      continue;
    }
    free(op->kernels);
    wk__schema_free(&op->schema);
    free(op->schema_text);
    free(op);
  }
  if (w != g_nops) { /* a new hash swapped in, as hash_insert grows it (in place without memory) */
    g_nops = w;
    wk_op **h = wk_calloc((size_t)g_hashcap, sizeof *h);
    if (!h) h = memset(g_hash, 0, sizeof *g_hash * (size_t)g_hashcap);
    for (int i = 0; i < g_nops; i++) hash_place(h, g_hashcap, g_ops[i]);
    if (h != g_hash) {
      free(g_hash);
      g_hash = h;
    }
  }
  pthread_mutex_unlock(&g_lock);
}

int wk_op_num_kernels(const wk_op *op) { return op ? op->nkernels : 0; }

wk_status wk_op_kernel_info(const wk_op *op, int i, int32_t *device_type, int32_t *priority,
                            const char **name, const char **plugin) {
  if (!op) return wk_error(WK_ERR_NULL, "wk_op_kernel_info: argument 'op' is NULL");
  if (i < 0 || i >= op->nkernels)
    return wk_error(WK_ERR_INDEX, "wk_op_kernel_info: op '%s' has %d kernels, asked for %d",
                    op->schema.name, op->nkernels, i);
  const kernel_entry *k = &op->kernels[i];
  if (device_type) *device_type = k->device_type;
  if (priority) *priority = k->priority;
  if (name) *name = k->name ? k->name : "";
  if (plugin) *plugin = wk__plugin_name_or_core(k->owner);
  return WK_OK;
}

/* ---- argument normalisation ---- */
static const char *tag_name(int tag) {
  static const char *names[] = {"None", "Tensor", "int", "float", "bool", "int[]",
                                "float[]", "Tensor[]", "str", "ScalarType", "Device"};
  return tag >= 0 && tag <= WK_V_DEVICE ? names[tag] : "?";
}

typedef struct {
  int64_t lists[WK_MAX_ARGS][WK_MAX_DIMS];
} scratch_t;

static wk_status bad_type(const wk_op *op, int i, const wk_value *v) {
  const wk__arg *a = &op->schema.args[i];
  return wk_error(WK_ERR_INVALID_ARG, "%s(): argument '%s' (position %d) must be %s, not %s",
                  op->schema.name, a->name, i + 1, a->type_text, tag_name(v->tag));
}

static wk_status normalize(const wk_op *op, const wk_value *in, int nargs, wk_value *out, scratch_t *sc) {
  const wk__schema *s = &op->schema;
  if (nargs > s->nargs)
    return wk_error(WK_ERR_INVALID_ARG, "%s() takes %d arguments but %d were given (schema: %s)",
                    s->name, s->nargs, nargs, op->schema_text);
  if (nargs > 0 && !in) return wk_error(WK_ERR_NULL, "%s(): argument array is NULL", s->name);
  for (int i = 0; i < s->nargs; i++) {
    const wk__arg *a = &s->args[i];
    wk_value v;
    if (i < nargs) {
      v = in[i];
    } else if (a->has_default) {
      v = a->def;
    } else {
      return wk_error(WK_ERR_INVALID_ARG, "%s() missing required argument '%s' (position %d)", s->name,
                      a->name, i + 1);
    }
    if (v.tag == WK_V_NONE) {
      if (a->optional) {
        out[i] = v;
        continue;
      }
      if (a->type == WK__A_TENSOR) {
        if (!wk__error_pending())
          wk_error(WK_ERR_NULL, "%s(): argument '%s' (position %d) is NULL, expected a Tensor", s->name,
                   a->name, i + 1);
        return wk_last_error();
      }
      return bad_type(op, i, &v);
    }
    switch (a->type) {
      case WK__A_TENSOR:
        if (v.tag != WK_V_TENSOR) return bad_type(op, i, &v);
        break;
      case WK__A_INT:
        if (v.tag == WK_V_BOOL) v = WK_VI(v.u.b);
        if (v.tag != WK_V_INT) return bad_type(op, i, &v);
        break;
      case WK__A_FLOAT:
        if (v.tag == WK_V_INT) v = WK_VF((double)v.u.i);
        if (v.tag != WK_V_FLOAT) return bad_type(op, i, &v);
        break;
      case WK__A_BOOL:
        if (v.tag == WK_V_INT) v = WK_VB(v.u.i != 0);
        if (v.tag != WK_V_BOOL) return bad_type(op, i, &v);
        break;
      case WK__A_SCALAR:
        if (v.tag != WK_V_INT && v.tag != WK_V_FLOAT && v.tag != WK_V_BOOL) return bad_type(op, i, &v);
        break;
      case WK__A_STR:
        if (v.tag != WK_V_STR) return bad_type(op, i, &v);
        break;
      case WK__A_DTYPE:
        if (v.tag != WK_V_DTYPE) return bad_type(op, i, &v);
        if (wk_dtype_size(v.u.dtype) == 0)
          return wk_error(WK_ERR_DTYPE, "%s(): argument '%s' is not a valid dtype (%d)", s->name, a->name,
                          (int)v.u.dtype);
        break;
      case WK__A_DEVICE:
        if (v.tag != WK_V_DEVICE) return bad_type(op, i, &v);
        break;
      case WK__A_INTS:
        if (v.tag == WK_V_INT && a->fixed_len) { /* int[2] accepts one int */
          for (int k = 0; k < a->fixed_len; k++) sc->lists[i][k] = v.u.i;
          v = WK_VINTS(sc->lists[i], a->fixed_len);
        }
        if (v.tag != WK_V_INTS) return bad_type(op, i, &v);
        if (v.len < 0 || (v.len > 0 && !v.u.ints))
          return wk_error(WK_ERR_NULL, "%s(): argument '%s' has %d elements but a NULL pointer", s->name,
                          a->name, v.len);
        if (a->fixed_len && v.len == 1 && a->fixed_len > 1) {
          for (int k = 0; k < a->fixed_len; k++) sc->lists[i][k] = v.u.ints[0];
          v = WK_VINTS(sc->lists[i], a->fixed_len);
        }
        if (a->fixed_len && v.len != 0 && v.len != a->fixed_len)
          return wk_error(WK_ERR_INVALID_ARG, "%s(): argument '%s' must have %d elements, not %d", s->name,
                          a->name, a->fixed_len, v.len);
        break;
      case WK__A_FLOATS:
        if (v.tag != WK_V_FLOATS) return bad_type(op, i, &v);
        if (v.len < 0 || (v.len > 0 && !v.u.floats))
          return wk_error(WK_ERR_NULL, "%s(): argument '%s' has a NULL pointer", s->name, a->name);
        break;
      case WK__A_TENSORS:
        if (v.tag != WK_V_TENSORS) return bad_type(op, i, &v);
        if (v.len < 0 || (v.len > 0 && !v.u.tensors))
          return wk_error(WK_ERR_NULL, "%s(): argument '%s' has %d elements but a NULL pointer", s->name,
                          a->name, v.len);
        if (!a->elem_optional)
          for (int k = 0; k < v.len; k++)
            if (!v.u.tensors[k]) {
              if (!wk__error_pending())
                wk_error(WK_ERR_NULL, "%s(): element %d of argument '%s' is NULL", s->name, k, a->name);
              return wk_last_error();
            }
        break;
    }
    out[i] = v;
  }
  return WK_OK;
}

/* ---- device selection ---- */
static wk_status pick_device(const wk_op *op, const wk_value *args, wk_device *dev) {
  const wk__schema *s = &op->schema;
  bool have = false, have_scalar = false;
  wk_device d = {WK_DEVICE_CPU, 0};
  const char *first = NULL;
  bool any = (op->tags & WK_TAG_ANY_DEVICE) != 0;
  const int nargs = s->nargs;
  for (int i = 0; i < nargs; i++) {
    const wk_value *v = &args[i];
    int n = v->tag == WK_V_TENSOR ? 1 : v->tag == WK_V_TENSORS ? v->len : 0;
    for (int k = 0; k < n; k++) {
      const wk_tensor *t = v->tag == WK_V_TENSOR ? v->u.t : v->u.tensors[k];
      if (!t) continue;
      wk_device td = t->storage->device; /* wk__device_norm, inlined: this runs for every tensor of every op */
      if (td.type == WK_DEVICE_DEFAULT) td.type = WK_DEVICE_CPU;
      if (any) {
        *dev = td;
        return WK_OK;
      }
      /* cpu 0-dim tensors mix with any device, as in PyTorch. */
      if (t->ndim == 0 && td.type == WK_DEVICE_CPU) {
        if (!have) have_scalar = true;
        continue;
      }
      if (!have) {
        d = td;
        have = true;
        first = s->args[i].name;
      } else if (d.type != td.type || d.index != td.index) {
        char a[48], b[48];
        return wk_error(WK_ERR_DEVICE,
                        "%s(): expected all tensors to be on the same device, but found at least two "
                        "devices, %s (argument '%s') and %s (argument '%s')",
                        s->name, wk_device_str(d, a, sizeof a), first, wk_device_str(td, b, sizeof b),
                        s->args[i].name);
      }
    }
  }
  if (!have && !have_scalar) {
    if (wk__call_depth <= 1) d = wk__device_norm(wk__default_dev); /* the program's factory call */
    for (int i = 0; i < s->nargs; i++)
      if (s->args[i].type == WK__A_DEVICE && args[i].tag == WK_V_DEVICE) {
        d = wk__device_norm(args[i].u.device);
        if (!wk__device_iface(d.type))
          return wk_error(WK_ERR_DEVICE, "%s(): unknown device type %d", s->name, d.type);
        break;
      }
  }
  *dev = d;
  return WK_OK;
}

/* Runs op's meta function for a call on dev (args normalised) into mo. The
 * common call (one fresh result) is set up inline; others go through
 * wk__meta_run, which also checks in-place/out= targets and output masks. */
static inline wk_status run_meta(wk_op *op, const wk_value *args, wk_device dev, wk_meta_out *mo) {
  if (op->schema.nouts == 1 && op->mutated_arg < 0) {
    mo[0].dtype = WK_DTYPE_DEFAULT;
    mo[0].ndim = 0;
    mo[0].device = dev;
    mo[0].flags = 0;
    wk_status st = op->meta(op, args, mo);
    return st ? wk__meta_failed(op, st) : WK_OK;
  }
  return wk__meta_run(op, args, dev, mo, op->schema.nouts, op->mutated_arg >= 0);
}

static wk_status call_kernel(wk_op *op, const wk_value *args, wk_value *outs) {
  wk_device dev;
  wk_status st = pick_device(op, args, &dev);
  if (st) return st;
  /* The op's meaning first, once for every device: checks and result shapes. */
  wk_meta_out mo[WK_MAX_OUTS];
  const wk_tensor *qarg = op->qmode == QM_PASS ? NULL : quantized_arg(op, args);
  if (qarg && op->qmode == QM_REFUSE)
    return wk_error(WK_ERR_DTYPE, "%s(): not implemented for quantized tensors ('%s'); dequantize() first",
                    op->schema.name, wk__dtype_word(qarg->dtype));
  wk_tensor *take_qparams = NULL; /* copy_ between quantized tensors: dst takes src's q-params */
  if (qarg && op->qmode == QM_RAW_COPY) {
    wk_tensor *dst = args[0].u.t;
    const wk_tensor *src = args[1].u.t;
    if (dst->quant && src->quant && dst->dtype == src->dtype) {
      /* PyTorch's copy_ of a quantized tensor into one of the same dtype and
       * scheme: the integers, and the destination takes the source's
       * quantizer (set_quantizer_), as a quantized state dict loads */
      if (wk_tensor_qscheme(dst) != wk_tensor_qscheme(src))
        return wk_error(WK_ERR_DTYPE, "copy_(): quantized copy needs the same qscheme, got %s into %s",
                        wk_qscheme_name(wk_tensor_qscheme(src)), wk_qscheme_name(wk_tensor_qscheme(dst)));
      if (dst->ndim != src->ndim || memcmp(dst->sizes, src->sizes, sizeof(int64_t) * (size_t)dst->ndim))
        return wk_error(WK_ERR_SHAPE, "copy_(): a quantized copy needs equal shapes");
      take_qparams = dst;
    } else if (dst->quant || !src->quant || dst->dtype != src->dtype) {
      return wk_error(WK_ERR_DTYPE, "copy_(): not implemented for quantized tensors ('%s'); dequantize() first",
                      wk__dtype_word(qarg->dtype));
    }
    qarg = NULL; /* integers into a fresh buffer (clone gives it the q-params) */
  }
  if (qarg && op->qmode == QM_PER_TENSOR_VIEW) {
    if (wk_tensor_qscheme(qarg) != WK_PER_TENSOR_AFFINE)
      return wk_error(WK_ERR_UNSUPPORTED, "%s(): views of per-channel quantized tensors are not supported; "
                      "dequantize() first", op->schema.name);
    qarg = NULL; /* the view shares the q-params already */
  }
  if (op->meta && (st = run_meta(op, args, dev, mo))) return st;
  wk_kernel_ctx ctx = {sizeof ctx, op, dev, NULL, op->meta ? mo : NULL};
  bool declined = false;
  for (int i = 0; i < op->nkernels; i++) {
    const kernel_entry *k = &op->kernels[i];
    if (k->device_type != dev.type && k->device_type != WK_DEVICE_DEFAULT) continue;
    ctx.user = k->user;
    if (k->supports && !k->supports(&ctx, args)) {
      declined = true;
      continue;
    }
    st = k->fn(&ctx, args, outs);
    if (st != WK_OK && !wk__error_pending())
      wk_error(st, "%s(): kernel '%s' failed without a message", op->schema.name, k->name ? k->name : "?");
    if (!st && qarg && outs[0].tag == WK_V_TENSOR && outs[0].u.t && !outs[0].u.t->quant) /* clone */
      outs[0].u.t->quant = wk__qparams_retain(qarg->quant);
    if (!st && take_qparams && take_qparams->quant != args[1].u.t->quant) {
      void *old = take_qparams->quant;
      take_qparams->quant = wk__qparams_retain(args[1].u.t->quant);
      wk__qparams_release(old);
    }
    return st;
  }
  /* The meta device runs ops without kernels of their own by their meta function. */
  if (dev.type == WK_DEVICE_META) {
    if (op->meta) return wk__meta_materialise(op, args, mo, outs);
    return wk_error(WK_ERR_NO_KERNEL, "%s(): the op has no meta function, so it cannot run on the meta device",
                    op->schema.name);
  }
  char have[256];
  size_t n = 0;
  have[0] = 0;
  for (int i = 0; i < op->nkernels && n < sizeof have; i++) {
    const char *dn = op->kernels[i].device_type == WK_DEVICE_DEFAULT ? "any" : wk_device_type_name(op->kernels[i].device_type);
    if (!strstr(have, dn)) n += (size_t)snprintf(have + n, sizeof have - n, "%s%s", n ? ", " : "", dn);
  }
  char db[48];
  if (declined)
    return wk_error(WK_ERR_NO_KERNEL, "%s(): no kernel for device '%s' accepts these arguments",
                    op->schema.name, wk_device_str(dev, db, sizeof db));
  return wk_error(WK_ERR_NO_KERNEL, "%s(): no kernel for device '%s' (kernels exist for: %s)%s",
                  op->schema.name, wk_device_type_name(dev.type), op->nkernels ? have : "none",
                  op->nkernels ? "" : "; is the plugin that implements it loaded? see `wick info`");
}

static wk_status dispatch_from(int start, wk_op *op, const wk_value *args, wk_value *outs) {
  uint32_t active = atomic_load_explicit(&g_active_mask, memory_order_relaxed) & ~g_excluded;
  if (active >> start) {
    int n = atomic_load(&g_nlayers);
    for (int i = start; i < n; i++)
      if (active & (1u << i)) return g_layers[i]->fn(g_layers[i], g_layers[i]->user, op, args, outs);
  }
  return call_kernel(op, args, outs);
}

static void clear_outs(wk_value *outs, int n) {
  for (int i = 0; i < n; i++) outs[i] = WK_VNONE;
}

wk_status wk_op_call(wk_op *op, const wk_value *args, int nargs, wk_value *outs) {
  if (!outs) return wk_error(WK_ERR_NULL, "wk_op_call: argument 'outs' is NULL");
  if (!op) {
    clear_outs(outs, 1);
    if (!wk__error_pending()) wk_error(WK_ERR_NULL, "wk_op_call: argument 'op' is NULL");
    return wk_last_error();
  }
  int nouts = op->schema.nouts;
  clear_outs(outs, nouts);
  wk_value norm[WK_MAX_ARGS];
  scratch_t sc;
  if (wk__call_depth == 0) wk__error_new_call(); /* a clean error slot; a NULL argument revives it (error.h) */
  wk_status st = normalize(op, args, nargs, norm, &sc);
  if (st) return st;
  wk__call_depth++;
  st = dispatch_from(0, op, norm, outs);
  wk__call_depth--;
  if (st != WK_OK) {
    clear_outs(outs, nouts);
    return st;
  }
  if (wk__call_depth == 0) {
    if (op->schema.returns_list) {
      for (int k = 0; k < outs[0].len; k++) wk__scope_adopt(outs[0].u.tensors[k]);
    } else {
      for (int i = 0; i < nouts; i++)
        if (!op->out_borrowed[i] && outs[i].tag == WK_V_TENSOR) wk__scope_adopt(outs[i].u.t);
    }
  }
  return WK_OK;
}

wk_status wk_op_call_kernel(wk_op *op, int i, const wk_value *args, int nargs, wk_value *outs) {
  if (!op || !outs) return wk_error(WK_ERR_NULL, "wk_op_call_kernel: argument '%s' is NULL", op ? "outs" : "op");
  if (i < 0 || i >= op->nkernels)
    return wk_error(WK_ERR_INDEX, "wk_op_call_kernel: op '%s' has %d kernels, asked for %d", op->schema.name,
                    op->nkernels, i);
  int nouts = op->schema.nouts;
  clear_outs(outs, nouts);
  wk_value norm[WK_MAX_ARGS];
  scratch_t sc;
  if (wk__call_depth == 0) wk__error_new_call();
  wk_status st = normalize(op, args, nargs, norm, &sc);
  if (st) return st;
  const kernel_entry *k = &op->kernels[i];
  wk_device dev;
  if ((st = pick_device(op, norm, &dev))) return st;
  wk_meta_out mo[WK_MAX_OUTS];
  if (op->meta && (st = run_meta(op, norm, dev, mo))) return st;
  wk_kernel_ctx ctx = {sizeof ctx, op, dev, k->user, op->meta ? mo : NULL};
  wk__call_depth++;
  st = k->fn(&ctx, norm, outs);
  wk__call_depth--;
  if (st) {
    if (!wk__error_pending()) wk_error(st, "%s(): kernel failed without a message", op->schema.name);
    clear_outs(outs, nouts);
    return st;
  }
  if (wk__call_depth == 0) {
    if (op->schema.returns_list) {
      for (int k2 = 0; k2 < outs[0].len; k2++) wk__scope_adopt(outs[0].u.tensors[k2]);
    } else {
      for (int j = 0; j < nouts; j++)
        if (!op->out_borrowed[j] && outs[j].tag == WK_V_TENSOR) wk__scope_adopt(outs[j].u.t);
    }
  }
  return WK_OK;
}

bool wk_op_has_meta(const wk_op *op) {
  if (!op) return false;
  if (op->meta) return true;
  for (int i = 0; i < op->nkernels; i++) /* written with other ops, or a kernel for meta itself */
    if (op->kernels[i].device_type == WK_DEVICE_DEFAULT || op->kernels[i].device_type == WK_DEVICE_META)
      return true;
  return false;
}

wk_status wk_op_meta(wk_op *op, const wk_value *args, int nargs, wk_meta_out *outs) {
  if (!op || !outs) return wk_error(WK_ERR_NULL, "wk_op_meta: argument '%s' is NULL", op ? "outs" : "op");
  if (!op->meta)
    return wk_error(WK_ERR_NOT_FOUND, "wk_op_meta: op '%s' has no meta function", op->schema.name);
  wk_value norm[WK_MAX_ARGS];
  scratch_t sc;
  wk_status st = normalize(op, args, nargs, norm, &sc);
  wk_device dev;
  if (!st) st = pick_device(op, norm, &dev);
  if (!st) st = run_meta(op, norm, dev, outs);
  return st;
}

wk_status wk_call(const char *name, const wk_value *args, int nargs, wk_value *outs) {
  wk_op *op = wk_op_find(name);
  if (!op) {
    if (outs) outs[0] = WK_VNONE;
    return wk_last_error();
  }
  return wk_op_call(op, args, nargs, outs);
}

/* ---- layers ---- */
wk_layer *wk_layer_register(const char *name, int level, wk_layer_fn fn, void *user, bool on) {
  if (!name || !fn) {
    wk_error(WK_ERR_NULL, "wk_layer_register: argument '%s' is NULL", name ? "fn" : "name");
    return NULL;
  }
  pthread_mutex_lock(&g_lock);
  int n = atomic_load(&g_nlayers);
  for (int i = 0; i < n; i++)
    if (g_layers[i]->level == level || strcmp(g_layers[i]->name, name) == 0) {
      pthread_mutex_unlock(&g_lock);
      wk_error(WK_ERR_INVALID_ARG, "wk_layer_register: level %d or name '%s' is taken by layer '%s'", level,
               name, g_layers[i]->name);
      return NULL;
    }
  if (n == MAX_LAYERS) {
    pthread_mutex_unlock(&g_lock);
    wk_error(WK_ERR_INVALID_ARG, "wk_layer_register: too many layers");
    return NULL;
  }
  wk_layer *l = wk_calloc(1, sizeof *l);
  if (!l) {
    pthread_mutex_unlock(&g_lock);
    wk_error(WK_ERR_NO_MEMORY, "wk_layer_register: out of memory");
    return NULL;
  }
  if (!(l->name = wk__strdup(name))) {
    pthread_mutex_unlock(&g_lock);
    free(l);
    wk_error(WK_ERR_NO_MEMORY, "wk_layer_register: out of memory");
    return NULL;
  }
  l->level = level;
  l->fn = fn;
  l->user = user;
  /* Keep layers ordered by level, highest first; indices are bit positions.
   * Layers are registered at start-up, before calls run on other threads. */
  int pos = 0;
  while (pos < n && g_layers[pos]->level > level) pos++;
  uint32_t mask = atomic_load(&g_active_mask);
  uint32_t low = mask & ((1u << pos) - 1), high = mask >> pos;
  for (int i = n; i > pos; i--) {
    g_layers[i] = g_layers[i - 1];
    g_layers[i]->index = i;
  }
  g_layers[pos] = l;
  l->index = pos;
  atomic_store(&l->enabled, on);
  atomic_store(&g_active_mask, low | (high << (pos + 1)) | (on ? 1u << pos : 0));
  atomic_store(&g_nlayers, n + 1);
  pthread_mutex_unlock(&g_lock);
  return l;
}

wk_layer *wk_layer_find(const char *name) {
  if (!name) {
    wk__null_arg("wk_layer_find", "name");
    return NULL;
  }
  for (int i = 0; i < atomic_load(&g_nlayers); i++)
    if (strcmp(g_layers[i]->name, name) == 0) return g_layers[i];
  wk_error(WK_ERR_NOT_FOUND, "no dispatch layer named '%s'", name);
  return NULL;
}

void wk_layer_set_enabled(wk_layer *l, bool on) {
  if (!l) return;
  atomic_store(&l->enabled, on);
  if (on)
    atomic_fetch_or(&g_active_mask, 1u << l->index);
  else
    atomic_fetch_and(&g_active_mask, ~(1u << l->index));
}

bool wk_layer_exclude(wk_layer *l, bool excluded) {
  if (!l) return false;
  bool prev = (g_excluded >> l->index) & 1u;
  if (excluded)
    g_excluded |= 1u << l->index;
  else
    g_excluded &= ~(1u << l->index);
  return prev;
}

wk_status wk__layer_call_below(wk_layer *self, wk_op *op, const wk_value *args, wk_value *outs) {
  uint32_t bit = 1u << self->index, prev = g_excluded & bit;
  g_excluded |= bit;
  wk_status s = dispatch_from(self->index + 1, op, args, outs);
  g_excluded = (g_excluded & ~bit) | prev;
  return s;
}

wk_status wk_layer_redispatch(wk_layer *self, wk_op *op, const wk_value *args, wk_value *outs) {
  if (!self || !op || !outs)
    return wk_error(WK_ERR_NULL, "wk_layer_redispatch: NULL %s", !self ? "layer" : !op ? "op" : "outs");
  return dispatch_from(self->index + 1, op, args, outs);
}
