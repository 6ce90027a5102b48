/* onnx plugin, import: an ONNX ModelProto as a wk_graph. This file checks
 * the file (a nesting-depth scan of the protobuf wire format before
 * protobuf-c unpacks it, IR version, opsets, tensors), keeps the table of
 * ONNX value names (graph values, and shape arithmetic known at import time
 * as symbolic ints), and checks the result against the declared outputs;
 * import_ops.c maps each node. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx_import.h"

/* ---- a depth scan of the wire format (protobuf-c recurses without a limit) ---- */
enum { M_MODEL, M_GRAPH, M_NODE, M_ATTR, M_VI, M_TYPE, M_TYPE1, M_TYPE2, M_FUNC, M_TRAIN, M_OTHER };
#define OX_MAX_DEPTH 48

static int sub_kind(int kind, uint32_t field) {
  switch (kind) {
    case M_MODEL:
      return field == 7 ? M_GRAPH : field == 20 ? M_TRAIN : field == 25 ? M_FUNC : M_OTHER;
    case M_GRAPH:
      return field == 1 ? M_NODE : (field == 11 || field == 12 || field == 13) ? M_VI : M_OTHER;
    case M_NODE:
      return field == 5 ? M_ATTR : M_OTHER;
    case M_ATTR:
      return (field == 6 || field == 10) ? M_GRAPH : (field == 14 || field == 15) ? M_TYPE : M_OTHER;
    case M_VI:
      return field == 2 ? M_TYPE : M_OTHER;
    case M_TYPE:
      return field == 4 || field == 9 ? M_TYPE1 : field == 5 ? M_TYPE2 : M_OTHER;
    case M_TYPE1:
      return field == 1 ? M_TYPE : M_OTHER; /* sequence / optional: elem_type */
    case M_TYPE2:
      return field == 2 ? M_TYPE : M_OTHER; /* map: value_type */
    case M_FUNC:
      return field == 7 ? M_NODE : M_OTHER;
    case M_TRAIN:
      return field == 1 || field == 2 ? M_GRAPH : M_OTHER;
    default:
      return M_OTHER;
  }
}

static bool varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  uint64_t r = 0;
  for (int s = 0; s < 64 && *p < end; s += 7) {
    uint8_t b = *(*p)++;
    r |= (uint64_t)(b & 0x7f) << s;
    if (!(b & 0x80)) {
      *v = r;
      return true;
    }
  }
  return false;
}

/* false when the nesting goes deeper than OX_MAX_DEPTH (malformed data is left to protobuf-c) */
static bool depth_ok(const uint8_t *p, const uint8_t *end, int kind, int depth) {
  if (depth > OX_MAX_DEPTH) return false;
  while (p < end) {
    uint64_t key, len;
    if (!varint(&p, end, &key)) return true;
    switch (key & 7) {
      case 0:
        if (!varint(&p, end, &len)) return true;
        break;
      case 1:
        if (end - p < 8) return true;
        p += 8;
        break;
      case 5:
        if (end - p < 4) return true;
        p += 4;
        break;
      case 2: {
        if (!varint(&p, end, &len) || len > (uint64_t)(end - p)) return true;
        int sk = sub_kind(kind, (uint32_t)(key >> 3));
        if (sk != M_OTHER && !depth_ok(p, p + len, sk, depth + 1)) return false;
        p += len;
        break;
      }
      default:
        return true;
    }
  }
  return true;
}

/* ---- errors ---- */
wk_status im_fail(ox_im *im, wk_status code, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (im->node)
    return wk_error(code, "onnx load: node '%.100s' (%.60s): %s",
                    im->node->name && *im->node->name ? im->node->name : "?",
                    im->node->op_type ? im->node->op_type : "?", msg);
  return wk_error(code, "onnx load: %s", msg);
}

/* ---- the name table (open addressing on the name's hash) ---- */
static uint64_t hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
  return h;
}

static wk_status grow(ox_im *im) {
  size_t cap = im->cap ? im->cap * 2 : 256;
  oxv *t = wk_calloc(cap, sizeof *t);
  if (!t) return im_fail(im, WK_ERR_NO_MEMORY, "out of memory");
  for (size_t i = 0; i < im->cap; i++)
    if (im->tab[i].name) {
      size_t j = hash(im->tab[i].name) & (cap - 1);
      while (t[j].name) j = (j + 1) & (cap - 1);
      t[j] = im->tab[i];
    }
  wk_free(im->tab);
  im->tab = t;
  im->cap = cap;
  return WK_OK;
}

oxv *im_find(ox_im *im, const char *name) {
  if (!im->cap || !name) return NULL;
  size_t j = hash(name) & (im->cap - 1);
  while (im->tab[j].name) {
    if (!strcmp(im->tab[j].name, name)) return &im->tab[j];
    j = (j + 1) & (im->cap - 1);
  }
  return NULL;
}

oxv *im_define(ox_im *im, const char *name) {
  if (!name || !*name) {
    im_fail(im, WK_ERR_INVALID_ARG, "a value has an empty name");
    return NULL;
  }
  if (im_find(im, name)) {
    im_fail(im, WK_ERR_INVALID_ARG, "value '%.100s' is defined twice (ONNX graphs are in SSA form)", name);
    return NULL;
  }
  if ((im->n + 1) * 2 > im->cap && grow(im)) return NULL;
  size_t j = hash(name) & (im->cap - 1);
  while (im->tab[j].name) j = (j + 1) & (im->cap - 1);
  oxv *e = &im->tab[j];
  memset(e, 0, sizeof *e);
  e->name = name;
  e->v = -1;
  e->nk = -1;
  im->n++;
  return e;
}

/* ---- tensors ---- */
/* A decimal offset or length of external_data (digits only, no sign). */
static bool parse_u64(const char *s, uint64_t *v) {
  if (!s || !*s) return false;
  uint64_t r = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9' || r > (UINT64_MAX - (uint64_t)(*s - '0')) / 10) return false;
    r = r * 10 + (uint64_t)(*s - '0');
  }
  *v = r;
  return true;
}

/* A tensor whose bytes are in a file next to the model (ONNX's external data:
 * location relative to the model's directory, offset and length in bytes).
 * The file must stay inside that directory: absolute paths, '..' components
 * and symbolic links that lead out of it are refused. */
static wk_tensor *ext_tensor(ox_im *im, const Onnx__TensorProto *t, const char *nm, wk_dtype dt, const int64_t *dims,
                             uint64_t numel) {
  const char *loc = NULL;
  uint64_t off = 0, len = 0;
  bool has_len = false;
  for (size_t i = 0; i < t->n_external_data; i++) {
    const Onnx__StringStringEntryProto *e = t->external_data[i];
    const char *k = e->key ? e->key : "", *v = e->value ? e->value : "";
    if (!strcmp(k, "location"))
      loc = v;
    else if (!strcmp(k, "offset")) {
      if (!parse_u64(v, &off))
        return im_fail(im, WK_ERR_INVALID_ARG, "tensor '%.100s': external data offset '%.40s' is not a number", nm, v),
               NULL;
    } else if (!strcmp(k, "length")) {
      if (!parse_u64(v, &len))
        return im_fail(im, WK_ERR_INVALID_ARG, "tensor '%.100s': external data length '%.40s' is not a number", nm, v),
               NULL;
      has_len = true;
    } else if (strcmp(k, "checksum") && strcmp(k, "basepath")) {
      return im_fail(im, WK_ERR_INVALID_ARG, "tensor '%.100s': unknown external data key '%.60s'", nm, k), NULL;
    }
  }
  if (!loc || !*loc)
    return im_fail(im, WK_ERR_INVALID_ARG, "tensor '%.100s' is external but names no location", nm), NULL;
  if (!im->dir)
    return im_fail(im, WK_ERR_UNSUPPORTED,
                   "tensor '%.100s' keeps its data in the file '%.100s': load the model from its path "
                   "(wk_onnx_load), not from memory",
                   nm, loc),
           NULL;
  if (loc[0] == '/' || loc[0] == '\\')
    return im_fail(im, WK_ERR_INVALID_ARG,
                   "tensor '%.100s': external data location '%.100s' is an absolute path (it must be relative to "
                   "the model's directory)",
                   nm, loc),
           NULL;
  for (const char *p = loc; *p;) { /* no '..' component */
    size_t n = strcspn(p, "/\\");
    if (n == 2 && p[0] == '.' && p[1] == '.')
      return im_fail(im, WK_ERR_INVALID_ARG,
                     "tensor '%.100s': external data location '%.100s' leaves the model's directory ('..')", nm, loc),
             NULL;
    p += n;
    if (*p) p++;
  }
  size_t es = wk_dtype_size(dt);
  if (numel > UINT64_MAX / es) return im_fail(im, WK_ERR_SHAPE, "tensor '%.100s' is too large", nm), NULL;
  uint64_t need = numel * es;
  if (has_len && len != need)
    return im_fail(im, WK_ERR_SHAPE,
                   "tensor '%.100s': %llu elements of %s need %llu bytes, external data length is %llu", nm,
                   (unsigned long long)numel, wk_dtype_name(dt), (unsigned long long)need, (unsigned long long)len),
           NULL;
  char path[PATH_MAX], real[PATH_MAX], rdir[PATH_MAX];
  if ((size_t)snprintf(path, sizeof path, "%s/%s", im->dir, loc) >= sizeof path)
    return im_fail(im, WK_ERR_INVALID_ARG, "tensor '%.100s': external data path is too long", nm), NULL;
  if (!realpath(im->dir, rdir) || !realpath(path, real))
    return im_fail(im, WK_ERR_IO, "tensor '%.100s': cannot open external data file '%.200s': %s", nm, path,
                   strerror(errno)),
           NULL;
  size_t rl = strlen(rdir);
  if (strncmp(real, rdir, rl) || (real[rl] != '/' && !(rl == 1 && rdir[0] == '/')))
    return im_fail(im, WK_ERR_INVALID_ARG,
                   "tensor '%.100s': external data location '%.100s' leads out of the model's directory (to '%.200s')",
                   nm, loc, real),
           NULL;
  int fd = open(real, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0)
    return im_fail(im, WK_ERR_IO, "tensor '%.100s': cannot open external data file '%.200s': %s", nm, path,
                   strerror(errno)),
           NULL;
  if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
    close(fd);
    return im_fail(im, WK_ERR_IO, "tensor '%.100s': external data '%.200s' is not a regular file", nm, path), NULL;
  }
  if (off > (uint64_t)st.st_size || need > (uint64_t)st.st_size - off) {
    close(fd);
    return im_fail(im, WK_ERR_INVALID_ARG,
                   "tensor '%.100s': external data of %llu bytes at offset %llu would lie past the end of '%.200s' "
                   "(%lld bytes)",
                   nm, (unsigned long long)need, (unsigned long long)off, loc, (long long)st.st_size),
           NULL;
  }
  wk_tensor *r = wk_empty(dims, (int)t->n_dims, (wk_options){.dtype = dt});
  if (!r) {
    close(fd);
    return NULL;
  }
  uint8_t *dst = wk_tensor_data(r);
  uint64_t got = 0;
  while (got < need) {
    size_t chunk = need - got > ((size_t)1 << 30) ? ((size_t)1 << 30) : (size_t)(need - got);
    ssize_t k = pread(fd, dst + got, chunk, (off_t)(off + got));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    got += (uint64_t)k;
  }
  close(fd);
  if (got != need) {
    wk_release(r);
    return im_fail(im, WK_ERR_IO, "tensor '%.100s': reading external data '%.200s' failed (%llu of %llu bytes)", nm,
                   loc, (unsigned long long)got, (unsigned long long)need),
           NULL;
  }
  return r;
}

wk_tensor *im_tensor(ox_im *im, const Onnx__TensorProto *t, const char *what) {
  const char *nm = t->name && *t->name ? t->name : what;
  bool external = t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  if (!external && t->n_external_data)
    return im_fail(im, WK_ERR_INVALID_ARG, "tensor '%.100s' has external_data entries but data_location DEFAULT", nm),
           NULL;
  if (external && (t->has_raw_data || t->n_float_data || t->n_int32_data || t->n_int64_data || t->n_double_data))
    return im_fail(im, WK_ERR_INVALID_ARG, "tensor '%.100s' is external but also has data in the model", nm), NULL;
  if (t->segment) return im_fail(im, WK_ERR_UNSUPPORTED, "tensor '%.100s' is segmented", nm), NULL;
  wk_dtype dt = ox_wick_dtype(t->data_type);
  if (!dt)
    return im_fail(im, WK_ERR_DTYPE, "tensor '%.100s' has ONNX type %s (%d), which Wick has no dtype for", nm,
                   ox_onnx_type_name(t->data_type), t->data_type),
           NULL;
  if (t->n_dims > WK_MAX_DIMS)
    return im_fail(im, WK_ERR_SHAPE, "tensor '%.100s' has %zu dims (at most %d)", nm, t->n_dims, WK_MAX_DIMS), NULL;
  uint64_t numel = 1;
  for (size_t i = 0; i < t->n_dims; i++) {
    if (t->dims[i] < 0 || (t->dims[i] > 0 && numel > (UINT64_MAX >> 1) / (uint64_t)t->dims[i]))
      return im_fail(im, WK_ERR_SHAPE, "tensor '%.100s' has a bad dim %lld", nm, (long long)t->dims[i]), NULL;
    numel *= (uint64_t)t->dims[i];
  }
  size_t es = wk_dtype_size(dt);
  wk_tensor *r = NULL;
  int64_t dims[WK_MAX_DIMS];
  for (size_t i = 0; i < t->n_dims; i++) dims[i] = t->dims[i];
  if (external) return ext_tensor(im, t, nm, dt, dims, numel);
  if (t->has_raw_data) {
    if (numel > t->raw_data.len / es || numel * es != t->raw_data.len)
      return im_fail(im, WK_ERR_SHAPE, "tensor '%.100s': %llu elements of %s need %llu bytes, raw_data has %zu", nm,
                     (unsigned long long)numel, wk_dtype_name(dt), (unsigned long long)(numel * es), t->raw_data.len),
             NULL;
    r = wk_tensor_from_data(numel ? t->raw_data.data : NULL, dt, dims, (int)t->n_dims);
    return r;
  }
  /* typed fields: float_data (f32), int32_data (int32 and smaller, f16/bf16 bits), int64_data, double_data */
  size_t have;
  switch (dt) {
    case WK_F32:
      have = t->n_float_data;
      break;
    case WK_F64:
      have = t->n_double_data;
      break;
    case WK_I64:
      have = t->n_int64_data;
      break;
    default:
      have = t->n_int32_data;
      break;
  }
  if (have != numel)
    return im_fail(im, WK_ERR_SHAPE, "tensor '%.100s' has %zu values for %llu elements", nm, have,
                   (unsigned long long)numel),
           NULL;
  void *buf = wk_malloc(numel ? numel * es : 1);
  if (!buf) return im_fail(im, WK_ERR_NO_MEMORY, "out of memory for tensor '%.100s'", nm), NULL;
  for (size_t i = 0; i < numel; i++) {
    switch (dt) {
      case WK_F32:
        ((float *)buf)[i] = t->float_data[i];
        break;
      case WK_F64:
        ((double *)buf)[i] = t->double_data[i];
        break;
      case WK_I64:
        ((int64_t *)buf)[i] = t->int64_data[i];
        break;
      case WK_I32:
        ((int32_t *)buf)[i] = t->int32_data[i];
        break;
      case WK_I16:
        ((int16_t *)buf)[i] = (int16_t)t->int32_data[i];
        break;
      case WK_F16:
      case WK_BF16:
        ((uint16_t *)buf)[i] = (uint16_t)t->int32_data[i];
        break;
      case WK_I8:
        ((int8_t *)buf)[i] = (int8_t)t->int32_data[i];
        break;
      default:
        ((uint8_t *)buf)[i] = (uint8_t)(dt == WK_BOOL ? t->int32_data[i] != 0 : t->int32_data[i]);
        break;
    }
  }
  r = wk_tensor_from_data(numel ? buf : NULL, dt, dims, (int)t->n_dims);
  wk_free(buf);
  return r;
}

/* Records an int tensor of at most 64 elements and rank <= 1 as known ints too. */
static void learn_ints(oxv *e, wk_tensor *t) {
  wk_dtype dt = wk_tensor_dtype(t);
  if ((dt != WK_I64 && dt != WK_I32) || wk_tensor_dim(t) > 1 || wk_tensor_numel(t) > 64) return;
  int n = (int)wk_tensor_numel(t);
  e->kscalar = wk_tensor_dim(t) == 0;
  const void *d = wk_tensor_data(t);
  for (int i = 0; i < n; i++) e->k[i] = WK_SYM_CONST(dt == WK_I64 ? ((const int64_t *)d)[i] : ((const int32_t *)d)[i]);
  e->nk = n;
  e->kdt = dt;
}

wk_status im_set_tensor(ox_im *im, oxv *e, wk_tensor *t, bool param) {
  e->t = t; /* the table owns it until a value needs it */
  e->param = param;
  e->kdt = wk_tensor_dtype(t);
  learn_ints(e, t);
  return WK_OK;
}

int im_value(ox_im *im, const char *name) {
  oxv *e = im_find(im, name);
  if (!e) {
    im_fail(im, WK_ERR_INVALID_ARG, "input '%.100s' is not a graph input, an initializer or an earlier node's output",
            name);
    return -1;
  }
  if (e->v >= 0) return e->v;
  if (e->t) {
    e->v = e->param ? wk_graph_add_param(im->g, e->name, e->t, false) : wk_graph_add_const(im->g, e->t);
    if (e->v < 0) return -1;
    return e->v;
  }
  if (e->nk >= 0) { /* shape arithmetic used as data: only constants can be */
    int64_t vals[64];
    for (int i = 0; i < e->nk; i++) {
      if (e->k[i].a != 0 && e->k[i].sym0 >= 0) {
        im_fail(im, WK_ERR_UNSUPPORTED, "'%.100s' holds sizes computed from symbolic dims and is used as data", name);
        return -1;
      }
      vals[i] = wk_symdim_eval(e->k[i], NULL);
    }
    int64_t n = e->nk;
    wk_tensor *t = wk_tensor_from_data(vals, WK_I64, &n, e->kscalar ? 0 : 1);
    wk_tensor *c = t && e->kdt && e->kdt != WK_I64 ? wk_to_dtype(t, e->kdt) : NULL;
    if (c) wk_release(t), t = c;
    if (!t) return -1;
    e->v = wk_graph_add_const(im->g, t);
    wk_release(t);
    return e->v;
  }
  im_fail(im, WK_ERR_INVALID_ARG, "'%.100s' has no value", name);
  return -1;
}

/* ---- value infos ---- */
static int sym_for(ox_im *im, const char *param) {
  for (int s = 0; s < wk_graph_num_symbols(im->g); s++)
    if (!strcmp(wk_graph_symbol_name(im->g, s), param)) return s;
  return wk_graph_add_symbol(im->g, param, 8);
}

static wk_status tensor_type(ox_im *im, const Onnx__ValueInfoProto *vi, const char *what, wk_dtype *dt, int *nd,
                             wk_symdim *dims, bool *known_rank) {
  const Onnx__TypeProto *tp = vi->type;
  if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
    return im_fail(im, WK_ERR_UNSUPPORTED,
                   "%s '%.100s' is not a tensor (sequences, maps and optionals are not supported)", what, vi->name);
  const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
  *dt = ox_wick_dtype(tt->elem_type);
  if (!*dt)
    return im_fail(im, WK_ERR_DTYPE, "%s '%.100s' has ONNX type %s, which Wick has no dtype for", what, vi->name,
                   ox_onnx_type_name(tt->elem_type));
  *known_rank = tt->shape != NULL;
  *nd = 0;
  if (!tt->shape) return WK_OK;
  if (tt->shape->n_dim > WK_MAX_DIMS)
    return im_fail(im, WK_ERR_SHAPE, "%s '%.100s' has %zu dims (at most %d)", what, vi->name, tt->shape->n_dim,
                   WK_MAX_DIMS);
  *nd = (int)tt->shape->n_dim;
  for (int k = 0; k < *nd; k++) {
    const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[k];
    if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
      if (d->dim_value < 0)
        return im_fail(im, WK_ERR_SHAPE, "%s '%.100s' has dim %d = %lld", what, vi->name, k, (long long)d->dim_value);
      dims[k] = WK_SYM_CONST(d->dim_value);
    } else {
      dims[k] = (wk_symdim){0, 0, 1, 1, -1, -1, -1}; /* unknown: marked by d = -1 with a = 0 */
      if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && d->dim_param && *d->dim_param) {
        int s = sym_for(im, d->dim_param);
        if (s < 0) return wk_last_error();
        dims[k] = WK_SYM(s);
      }
    }
  }
  return WK_OK;
}

/* ---- the model ---- */
static wk_status check_opsets(ox_im *im, const Onnx__ModelProto *m) {
  if (!m->has_ir_version || m->ir_version < 3 || m->ir_version > 11)
    return im_fail(im, WK_ERR_UNSUPPORTED, "IR version %lld is not supported (3 to 11)", (long long)m->ir_version);
  im->opset = -1;
  for (size_t i = 0; i < m->n_opset_import; i++) {
    const Onnx__OperatorSetIdProto *o = m->opset_import[i];
    const char *dom = o->domain ? o->domain : "";
    if (!*dom || !strcmp(dom, "ai.onnx")) im->opset = o->has_version ? o->version : 1;
  }
  if (im->opset < 0) return im_fail(im, WK_ERR_UNSUPPORTED, "the model imports no opset of the default domain");
  if (im->opset < 6 || im->opset > WK_ONNX_MAX_OPSET)
    return im_fail(im, WK_ERR_UNSUPPORTED, "opset %lld is not supported (6 to %d)", (long long)im->opset,
                   WK_ONNX_MAX_OPSET);
  return WK_OK;
}

/* ---- inference rewrite: BatchNormalization folded into the Conv before it ---- */
/* Node inputs and graph outputs that read `name`. */
static int uses_of(const Onnx__GraphProto *gp, const char *name) {
  int n = 0;
  for (size_t i = 0; i < gp->n_node; i++)
    for (size_t k = 0; k < gp->node[i]->n_input; k++)
      n += gp->node[i]->input[k] && !strcmp(gp->node[i]->input[k], name);
  for (size_t i = 0; i < gp->n_output; i++) n += gp->output[i]->name && !strcmp(gp->output[i]->name, name);
  return n;
}

/* A cpu float32 initializer not yet in the graph, used once (when once), of
 * numel elements (when numel >= 0); else NULL. */
static oxv *fold_init(ox_im *im, const Onnx__GraphProto *gp, const char *name, int64_t numel, bool once) {
  oxv *e = name && *name ? im_find(im, name) : NULL;
  if (!e || !e->t || e->v >= 0 || wk_tensor_dtype(e->t) != WK_F32 || !wk_tensor_is_contiguous(e->t) ||
      wk_tensor_device(e->t).type != WK_DEVICE_CPU || (numel >= 0 && wk_tensor_numel(e->t) != numel))
    return NULL;
  if (once && uses_of(gp, name) != 1) return NULL;
  return e;
}

typedef struct fold_plan {
  Onnx__NodeProto **repl; /* per node: the Conv rewritten to write BN's output, or NULL */
  bool *skip;             /* per node: a BN folded away */
  char **names;           /* the rewritten Convs' input and output arrays (4 names each) */
} fold_plan;

static void fold_free(fold_plan *f, size_t n) {
  for (size_t i = 0; f->repl && i < n; i++) wk_free(f->repl[i]);
  wk_free(f->repl), wk_free(f->skip), wk_free(f->names);
}

/* Rewrites Conv -> BatchNormalization pairs (see wk_onnx_load_opts.fold_batch_norm):
 * W' = W * s, b' = (b - mean) * s + beta per output channel, s = scale / sqrt(var + eps),
 * computed in double. Pairs that do not qualify are left for the ordinary import. */
static wk_status fold_bn(ox_im *im, const Onnx__GraphProto *gp, fold_plan *f) {
  size_t nn = gp->n_node;
  f->repl = wk_calloc(nn ? nn : 1, sizeof *f->repl);
  f->skip = wk_calloc(nn ? nn : 1, sizeof *f->skip);
  f->names = wk_calloc(nn ? nn * 4 : 1, sizeof *f->names);
  if (!f->repl || !f->skip || !f->names) return im_fail(im, WK_ERR_NO_MEMORY, "out of memory");
  for (size_t j = 0; j < nn; j++) {
    const Onnx__NodeProto *bn = gp->node[j];
    if (!bn->op_type || strcmp(bn->op_type, "BatchNormalization") || (bn->domain && *bn->domain) || bn->n_input != 5)
      continue;
    bool extra = false;
    for (size_t k = 1; k < bn->n_output; k++) extra |= bn->output[k] && *bn->output[k];
    double eps = 1e-5;
    for (size_t a = 0; a < bn->n_attribute && !extra; a++) {
      const Onnx__AttributeProto *at = bn->attribute[a];
      const char *an = at->name ? at->name : "";
      if (!strcmp(an, "epsilon") && at->has_f)
        eps = at->f;
      else if (!strcmp(an, "training_mode") || !strcmp(an, "spatial") || !strcmp(an, "is_test"))
        extra |= !at->has_i || at->i != (strcmp(an, "training_mode") ? 1 : 0);
      else
        extra |= strcmp(an, "momentum") != 0;
    }
    if (extra || bn->n_output < 1 || !bn->output[0] || !*bn->output[0] || !bn->input[0]) continue;
    /* the Conv that writes BN's input, read by nothing else */
    size_t i = nn;
    for (size_t k = 0; k < j && i == nn; k++)
      if (gp->node[k]->n_output >= 1 && gp->node[k]->output[0] && !strcmp(gp->node[k]->output[0], bn->input[0])) i = k;
    if (i == nn || f->repl[i]) continue;
    const Onnx__NodeProto *cv = gp->node[i];
    if (!cv->op_type || strcmp(cv->op_type, "Conv") || (cv->domain && *cv->domain) || cv->n_input < 2 ||
        cv->n_input > 3 || cv->n_output != 1 || uses_of(gp, bn->input[0]) != 1)
      continue;
    oxv *w = fold_init(im, gp, cv->input[1], -1, true);
    if (!w || wk_tensor_dim(w->t) < 3) continue;
    int64_t C = wk_tensor_size(w->t, 0), inner = C ? wk_tensor_numel(w->t) / C : 0;
    bool has_b = cv->n_input == 3 && cv->input[2] && *cv->input[2];
    oxv *b = has_b ? fold_init(im, gp, cv->input[2], C, true) : NULL;
    oxv *sc = fold_init(im, gp, bn->input[1], C, false), *be = fold_init(im, gp, bn->input[2], C, !has_b),
        *mu = fold_init(im, gp, bn->input[3], C, false), *var = fold_init(im, gp, bn->input[4], C, false);
    if ((has_b && !b) || !sc || !be || !mu || !var) continue;
    wk_tensor *nw = wk_empty(wk_tensor_sizes(w->t), wk_tensor_dim(w->t), (wk_options){.dtype = WK_F32});
    wk_tensor *nb = nw ? wk_empty(&C, 1, (wk_options){.dtype = WK_F32}) : NULL;
    if (!nb) {
      wk_release(nw);
      return wk_last_error();
    }
    const float *W = wk_tensor_data(w->t), *B = b ? wk_tensor_data(b->t) : NULL, *S = wk_tensor_data(sc->t),
                *BE = wk_tensor_data(be->t), *MU = wk_tensor_data(mu->t), *V = wk_tensor_data(var->t);
    float *NW = wk_tensor_data(nw), *NB = wk_tensor_data(nb);
    for (int64_t c = 0; c < C; c++) {
      double s = (double)S[c] / sqrt((double)V[c] + eps);
      for (int64_t k = 0; k < inner; k++) NW[c * inner + k] = (float)((double)W[c * inner + k] * s);
      NB[c] = (float)(((B ? (double)B[c] : 0.0) - (double)MU[c]) * s + (double)BE[c]);
    }
    Onnx__NodeProto *r = wk_malloc(sizeof *r);
    if (!r) {
      wk_release(nw), wk_release(nb);
      return im_fail(im, WK_ERR_NO_MEMORY, "out of memory");
    }
    *r = *cv;
    char **nm = &f->names[4 * i];
    nm[0] = cv->input[0], nm[1] = cv->input[1], nm[2] = has_b ? cv->input[2] : bn->input[2], nm[3] = bn->output[0];
    r->n_input = 3, r->input = nm, r->n_output = 1, r->output = &nm[3];
    f->repl[i] = r;
    f->skip[j] = true;
    wk_release(w->t);
    w->t = nw;
    oxv *bt = has_b ? b : be;
    wk_release(bt->t);
    bt->t = nb;
  }
  return WK_OK;
}

static wk_status build(ox_im *im, const Onnx__ModelProto *m) {
  wk_status st = check_opsets(im, m);
  if (st) return st;
  const Onnx__GraphProto *gp = m->graph;
  if (!gp) return im_fail(im, WK_ERR_INVALID_ARG, "the model has no graph");
  if (gp->n_sparse_initializer) return im_fail(im, WK_ERR_UNSUPPORTED, "sparse initializers are not supported");
  /* uses of each name, to refuse optional outputs we cannot give */
  for (size_t i = 0; i < gp->n_initializer; i++) {
    const Onnx__TensorProto *t = gp->initializer[i];
    oxv *e = im_define(im, t->name);
    if (!e) return wk_last_error();
    wk_tensor *tt = im_tensor(im, t, "initializer");
    if (!tt) return wk_last_error();
    im_set_tensor(im, e, tt, true); /* on cpu until the fold below */
  }
  int nin = 0;
  for (size_t i = 0; i < gp->n_input; i++) {
    const Onnx__ValueInfoProto *vi = gp->input[i];
    oxv *e = im_find(im, vi->name);
    if (e && e->t) continue; /* IR < 4 lists initializers as inputs too */
    if (!(e = im_define(im, vi->name))) return wk_last_error();
    wk_dtype dt;
    int nd;
    wk_symdim dims[WK_MAX_DIMS];
    bool known;
    st = tensor_type(im, vi, "input", &dt, &nd, dims, &known);
    if (st) return st;
    if (!known) return im_fail(im, WK_ERR_SHAPE, "input '%.100s' has no shape", vi->name);
    for (int k = 0; k < nd; k++)
      if (dims[k].a == 0 && dims[k].d == -1) { /* an unnamed dynamic dim: a fresh symbol */
        char nm[160];
        snprintf(nm, sizeof nm, "%.100s_dim%d", vi->name, k);
        int s = sym_for(im, nm);
        if (s < 0) return wk_last_error();
        dims[k] = WK_SYM(s);
      }
    e->v = wk_graph_add_input(im->g, vi->name, dt, im->dev, nd, dims);
    if (e->v < 0) return wk_last_error();
    nin++;
  }
  fold_plan fp = {0};
  if (im->fold_bn && im->opset >= 7 && (st = fold_bn(im, gp, &fp))) {
    fold_free(&fp, gp->n_node);
    return st;
  }
  for (size_t i = 0; i < im->cap && im->dev.type && im->dev.type != WK_DEVICE_CPU; i++) { /* weights to the device */
    oxv *e = &im->tab[i];
    if (!e->name || !e->t || !e->param) continue;
    wk_tensor *d = wk_to_device(e->t, im->dev);
    if (!d) {
      fold_free(&fp, gp->n_node);
      return wk_last_error();
    }
    wk_release(e->t);
    e->t = d;
  }
  for (size_t i = 0; i < gp->n_node && !st; i++) {
    if (fp.skip && fp.skip[i]) continue;
    im->node = fp.repl && fp.repl[i] ? fp.repl[i] : gp->node[i];
    const Onnx__NodeProto *n = im->node;
    if (!n->op_type || !*n->op_type)
      st = im_fail(im, WK_ERR_INVALID_ARG, "the node has no op_type");
    else if (n->domain && *n->domain && strcmp(n->domain, "ai.onnx"))
      st = im_fail(im, WK_ERR_UNSUPPORTED, "domain '%.60s' is not supported", n->domain);
    else
      st = ox_import_node(im, n);
  }
  fold_free(&fp, gp->n_node);
  im->node = NULL;
  if (st) return st;
  /* outputs, checked against their declared types */
  int *outs = wk_calloc(gp->n_output ? gp->n_output : 1, sizeof *outs);
  if (!outs) return im_fail(im, WK_ERR_NO_MEMORY, "out of memory");
  for (size_t i = 0; i < gp->n_output && !st; i++) {
    const Onnx__ValueInfoProto *vi = gp->output[i];
    int v = im_value(im, vi->name);
    if (v < 0) {
      st = wk_last_error();
      break;
    }
    outs[i] = v;
    wk_dtype dt;
    int nd;
    wk_symdim dims[WK_MAX_DIMS];
    bool known;
    if (!vi->type) continue;
    st = tensor_type(im, vi, "output", &dt, &nd, dims, &known);
    if (st) break;
    if (dt != wk_graph_value_dtype(im->g, v)) {
      st = im_fail(im, WK_ERR_DTYPE, "output '%.100s' is declared %s but computes %s", vi->name, wk_dtype_name(dt),
                   wk_dtype_name(wk_graph_value_dtype(im->g, v)));
      break;
    }
    if (!known) continue;
    int gnd = wk_graph_value_ndim(im->g, v);
    const wk_symdim *gd = wk_graph_value_dims(im->g, v);
    if (nd != gnd) {
      st = im_fail(im, WK_ERR_SHAPE, "output '%.100s' is declared with %d dims but has %d", vi->name, nd, gnd);
      break;
    }
    for (int k = 0; k < nd && !st; k++) {
      bool dconst = dims[k].a == 0 && dims[k].d >= 0, gconst = gd[k].a == 0 || gd[k].sym0 < 0;
      if (dconst && gconst && wk_symdim_eval(dims[k], NULL) != wk_symdim_eval(gd[k], NULL))
        st = im_fail(im, WK_ERR_SHAPE, "output '%.100s' dim %d is declared %lld but is %lld", vi->name, k,
                     (long long)wk_symdim_eval(dims[k], NULL), (long long)wk_symdim_eval(gd[k], NULL));
      else if (dconst && !gconst) {
        char b[64];
        wk_symdim_str(im->g, gd[k], b, sizeof b);
        st = im_fail(im, WK_ERR_SHAPE, "output '%.100s' dim %d is declared %lld but is %s", vi->name, k,
                     (long long)wk_symdim_eval(dims[k], NULL), b);
      }
    }
  }
  if (!st) st = wk_graph_set_outputs(im->g, outs, (int)gp->n_output);
  wk_free(outs);
  if (!st) st = wk_graph_validate(im->g);
  return st;
}

static void im_free(ox_im *im) {
  for (size_t i = 0; i < im->cap; i++) wk_release(im->tab[i].t);
  wk_free(im->tab);
}

static Onnx__ModelProto *unpack(ox_im *im, const uint8_t *data, size_t n) {
  if (!n) return im_fail(im, WK_ERR_INVALID_ARG, "the file is empty"), NULL;
  if (!depth_ok(data, data + n, M_MODEL, 0))
    return im_fail(im, WK_ERR_INVALID_ARG, "messages are nested more than %d deep", OX_MAX_DEPTH), NULL;
  Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, n, data);
  if (!m) im_fail(im, WK_ERR_INVALID_ARG, "not an ONNX model: the protobuf encoding is malformed");
  return m;
}

wk_graph *ox_import(const uint8_t *data, size_t n, const wk_onnx_load_opts *o, const char *dir) {
  ox_im im = {0};
  im.dir = dir;
  if (o) {
    if (o->struct_size < sizeof(size_t)) {
      wk_error(WK_ERR_INVALID_ARG, "onnx load: opts->struct_size is %zu; set it to sizeof(wk_onnx_load_opts)",
               o->struct_size);
      return NULL;
    }
    if (o->struct_size >= offsetof(wk_onnx_load_opts, device) + sizeof(wk_device)) im.dev = o->device;
    if (o->struct_size >= offsetof(wk_onnx_load_opts, fold_batch_norm) + sizeof(bool)) im.fold_bn = o->fold_batch_norm;
  }
  Onnx__ModelProto *m = unpack(&im, data, n);
  if (!m) return NULL;
  im.g = wk_graph_new();
  wk_status st = im.g ? build(&im, m) : wk_last_error();
  im_free(&im);
  onnx__model_proto__free_unpacked(m, NULL);
  if (st) {
    wk_graph_release(im.g);
    return NULL;
  }
  return im.g;
}

/* ---- info ---- */
static char *dupstr(const char *s) {
  size_t n = strlen(s ? s : "");
  char *d = wk_malloc(n + 1);
  if (d) memcpy(d, s ? s : "", n + 1);
  return d;
}

static char *shape_str(const Onnx__ValueInfoProto *vi) {
  char buf[512];
  size_t at = 0;
  const Onnx__TypeProto *tp = vi->type;
  if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type) return dupstr("(not a tensor)");
  const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
  wk_dtype dt = ox_wick_dtype(tt->elem_type);
  at += (size_t)snprintf(buf, sizeof buf, "%s", dt ? wk_dtype_name(dt) : ox_onnx_type_name(tt->elem_type));
  if (tt->shape) {
    at += (size_t)snprintf(buf + at, sizeof buf - at, "[");
    for (size_t k = 0; k < tt->shape->n_dim && at < sizeof buf - 40; k++) {
      const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[k];
      const char *sep = k ? ", " : "";
      if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
        at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%lld", sep, (long long)d->dim_value);
      else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM)
        at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%.30s", sep, d->dim_param);
      else
        at += (size_t)snprintf(buf + at, sizeof buf - at, "%s?", sep);
    }
    if (at < sizeof buf - 2) snprintf(buf + at, sizeof buf - at, "]");
  }
  return dupstr(buf);
}

void ox_info_free(wk_onnx_info *in) {
  if (!in) return;
  for (int i = 0; i < in->ninputs; i++)
    wk_free(in->input_names ? in->input_names[i] : NULL), wk_free(in->input_shapes ? in->input_shapes[i] : NULL);
  for (int i = 0; i < in->noutputs; i++)
    wk_free(in->output_names ? in->output_names[i] : NULL), wk_free(in->output_shapes ? in->output_shapes[i] : NULL);
  for (int i = 0; i < in->nops; i++) wk_free(in->op_types ? in->op_types[i] : NULL);
  wk_free(in->input_names), wk_free(in->input_shapes), wk_free(in->output_names), wk_free(in->output_shapes);
  wk_free(in->op_types), wk_free(in->op_counts), wk_free(in->producer_name), wk_free(in->producer_version);
  size_t ss = in->struct_size;
  memset(in, 0, sizeof *in);
  in->struct_size = ss;
}

wk_status ox_info(const uint8_t *data, size_t n, wk_onnx_info *out) {
  size_t ss = out->struct_size;
  memset(out, 0, sizeof *out);
  out->struct_size = ss ? ss : sizeof *out;
  ox_im im = {0};
  Onnx__ModelProto *m = unpack(&im, data, n);
  if (!m) return wk_last_error();
  wk_status st = check_opsets(&im, m);
  const Onnx__GraphProto *gp = m->graph;
  if (!st && !gp) st = im_fail(&im, WK_ERR_INVALID_ARG, "the model has no graph");
  if (!st) {
    out->ir_version = m->ir_version;
    out->opset = im.opset;
    out->producer_name = dupstr(m->producer_name);
    out->producer_version = dupstr(m->producer_version);
    out->ninitializers = (int32_t)gp->n_initializer;
    size_t nin = 0;
    for (size_t i = 0; i < gp->n_input; i++) {
      bool init = false;
      for (size_t k = 0; k < gp->n_initializer && !init; k++)
        init = !strcmp(gp->initializer[k]->name, gp->input[i]->name);
      if (!init) nin++;
    }
    out->input_names = wk_calloc(nin + 1, sizeof(char *));
    out->input_shapes = wk_calloc(nin + 1, sizeof(char *));
    out->output_names = wk_calloc(gp->n_output + 1, sizeof(char *));
    out->output_shapes = wk_calloc(gp->n_output + 1, sizeof(char *));
    out->op_types = wk_calloc(gp->n_node + 1, sizeof(char *));
    out->op_counts = wk_calloc(gp->n_node + 1, sizeof(int32_t));
    if (!out->input_names || !out->input_shapes || !out->output_names || !out->output_shapes || !out->op_types ||
        !out->op_counts)
      st = wk_error(WK_ERR_NO_MEMORY, "onnx info: out of memory");
    for (size_t i = 0; i < gp->n_input && !st; i++) {
      bool init = false;
      for (size_t k = 0; k < gp->n_initializer && !init; k++)
        init = !strcmp(gp->initializer[k]->name, gp->input[i]->name);
      if (init) continue;
      out->input_names[out->ninputs] = dupstr(gp->input[i]->name);
      out->input_shapes[out->ninputs++] = shape_str(gp->input[i]);
    }
    for (size_t i = 0; i < gp->n_output && !st; i++) {
      out->output_names[out->noutputs] = dupstr(gp->output[i]->name);
      out->output_shapes[out->noutputs++] = shape_str(gp->output[i]);
    }
    for (size_t i = 0; i < gp->n_node && !st; i++) {
      const char *op = gp->node[i]->op_type ? gp->node[i]->op_type : "";
      int k = 0;
      while (k < out->nops && strcmp(out->op_types[k], op)) k++;
      if (k == out->nops) out->op_types[out->nops++] = dupstr(op);
      out->op_counts[k]++;
    }
  }
  onnx__model_proto__free_unpacked(m, NULL);
  if (st) ox_info_free(out);
  return st;
}
