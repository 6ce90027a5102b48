/* onnx plugin, export: a traced wk_graph as an ONNX ModelProto. This file
 * builds the model around the nodes (inputs and outputs with their symbolic
 * dims, initializers named by state_dict keys, opset and producer) and the
 * helpers export_ops.c writes nodes with; export_ops.c maps each op. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "onnx_int.h"

#define OX_PUSH(ex, arr, n, cap, p) ox_push(&(ex)->ar, (void ***)&(arr), &(n), &(cap), (p))

/* ---- errors ---- */
wk_status ox_fail(ox_ex *ex, wk_status code, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (ex->cur < 0) return wk_error(code, "onnx export: %s", msg);
  const char *path = wk_graph_node_module_path(ex->g, ex->cur);
  return wk_error(code, "onnx export: %s()%s%s%s: %s", wk_op_name(wk_graph_node_op(ex->g, ex->cur)),
                  path && *path ? " in '" : "", path && *path ? path : "", path && *path ? "'" : " at the top level",
                  msg);
}

static wk_status oom(ox_ex *ex) {
  return ox_fail(ex, WK_ERR_NO_MEMORY, "out of memory");
}

/* ---- names, nodes, attributes ---- */
const char *ox_name(ox_ex *ex, int v) {
  return v >= 0 && v < wk_graph_num_values(ex->g) ? ex->vname[v] : NULL;
}

char *ox_tmp(ox_ex *ex) {
  return ox_fmt(&ex->ar, "_t%d", ex->seq++);
}

Onnx__NodeProto *ox_node(ox_ex *ex, const char *op_type, const char *const *ins, int nin, const char *const *outs,
                         int nout) {
  Onnx__NodeProto *n = ox_alloc(&ex->ar, sizeof *n);
  char **in = ox_alloc(&ex->ar, sizeof *in * (size_t)(nin ? nin : 1));
  char **out = ox_alloc(&ex->ar, sizeof *out * (size_t)(nout ? nout : 1));
  if (!n || !in || !out) return NULL;
  onnx__node_proto__init(n);
  for (int i = 0; i < nin; i++) in[i] = ox_strdup(&ex->ar, ins[i] ? ins[i] : "");
  for (int i = 0; i < nout; i++) out[i] = ox_strdup(&ex->ar, outs[i] ? outs[i] : "");
  n->n_input = (size_t)nin;
  n->input = in;
  n->n_output = (size_t)nout;
  n->output = out;
  n->op_type = ox_strdup(&ex->ar, op_type);
  const char *path = ex->cur >= 0 ? wk_graph_node_module_path(ex->g, ex->cur) : "";
  n->name = path && *path ? ox_fmt(&ex->ar, "%s/%s_%d", path, op_type, ex->seq++)
                          : ox_fmt(&ex->ar, "%s_%d", op_type, ex->seq++);
  if (!n->op_type || !n->name || ex->ar.oom) return NULL;
  if (!OX_PUSH(ex, ex->nodes, ex->nnodes, ex->cap_nodes, n)) return NULL;
  return n;
}

static Onnx__AttributeProto *attr(ox_ex *ex, Onnx__NodeProto *n, const char *name,
                                  Onnx__AttributeProto__AttributeType t) {
  if (!n) return NULL;
  Onnx__AttributeProto *a = ox_alloc(&ex->ar, sizeof *a);
  if (!a) return NULL;
  onnx__attribute_proto__init(a);
  a->name = ox_strdup(&ex->ar, name);
  a->has_type = 1;
  a->type = t;
  size_t cap = n->n_attribute; /* the array is grown by one each time: nodes have few attributes */
  Onnx__AttributeProto **arr = ox_alloc(&ex->ar, sizeof *arr * (cap + 1));
  if (!arr || !a->name) return NULL;
  if (cap) memcpy(arr, n->attribute, sizeof *arr * cap);
  arr[cap] = a;
  n->attribute = arr;
  n->n_attribute = cap + 1;
  return a;
}

void ox_attr_i(ox_ex *ex, Onnx__NodeProto *n, const char *name, int64_t v) {
  Onnx__AttributeProto *a = attr(ex, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
  if (a) a->has_i = 1, a->i = v;
}

void ox_attr_f(ox_ex *ex, Onnx__NodeProto *n, const char *name, double v) {
  Onnx__AttributeProto *a = attr(ex, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
  if (a) a->has_f = 1, a->f = (float)v;
}

void ox_attr_s(ox_ex *ex, Onnx__NodeProto *n, const char *name, const char *v) {
  Onnx__AttributeProto *a = attr(ex, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
  char *s = a ? ox_strdup(&ex->ar, v) : NULL;
  if (s) a->has_s = 1, a->s.data = (uint8_t *)s, a->s.len = strlen(v);
}

void ox_attr_ints(ox_ex *ex, Onnx__NodeProto *n, const char *name, const int64_t *v, int nv) {
  Onnx__AttributeProto *a = attr(ex, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
  int64_t *c = a ? ox_alloc(&ex->ar, sizeof *c * (size_t)(nv ? nv : 1)) : NULL;
  if (!c) return;
  if (nv) memcpy(c, v, sizeof *c * (size_t)nv);
  a->ints = c;
  a->n_ints = (size_t)nv;
}

/* ---- initializers ---- */
static Onnx__TensorProto *new_init(ox_ex *ex, const char *name, int onnx_type, const int64_t *dims, int nd,
                                   const void *raw, size_t nbytes) {
  Onnx__TensorProto *t = ox_alloc(&ex->ar, sizeof *t);
  int64_t *d = ox_alloc(&ex->ar, sizeof *d * (size_t)(nd ? nd : 1));
  uint8_t *buf = ox_alloc(&ex->ar, nbytes);
  if (!t || !d || !buf) return NULL;
  onnx__tensor_proto__init(t);
  if (nd) memcpy(d, dims, sizeof *d * (size_t)nd);
  t->dims = d;
  t->n_dims = (size_t)nd;
  t->has_data_type = 1;
  t->data_type = onnx_type;
  t->name = ox_strdup(&ex->ar, name);
  if (nbytes) memcpy(buf, raw, nbytes);
  t->has_raw_data = 1;
  t->raw_data.data = buf;
  t->raw_data.len = nbytes;
  if (!t->name || !OX_PUSH(ex, ex->inits, ex->ninits, ex->cap_inits, t)) return NULL;
  return t;
}

const char *ox_init_tensor(ox_ex *ex, const char *name, wk_tensor *t) {
  int ot = ox_onnx_type(wk_tensor_dtype(t));
  if (!ot) {
    ox_fail(ex, WK_ERR_DTYPE, "tensor '%s' has dtype %s, which ONNX has no type for", name,
            wk_dtype_name(wk_tensor_dtype(t)));
    return NULL;
  }
  wk_tensor *c = wk_to_device(t, (wk_device){WK_DEVICE_CPU, 0});
  wk_tensor *cc = c ? wk_contiguous(c) : NULL;
  wk_release(c);
  if (!cc) return NULL;
  int nd = wk_tensor_dim(cc);
  int64_t dims[WK_MAX_DIMS];
  for (int i = 0; i < nd; i++) dims[i] = wk_tensor_size(cc, i);
  /* raw_data is little-endian, as Wick's cpu tensors are on the machines it runs on */
  Onnx__TensorProto *tp = new_init(ex, name, ot, dims, nd, wk_tensor_data(cc),
                                   (size_t)wk_tensor_numel(cc) * wk_dtype_size(wk_tensor_dtype(cc)));
  wk_release(cc);
  if (!tp) {
    oom(ex);
    return NULL;
  }
  return tp->name;
}

const char *ox_const_i64(ox_ex *ex, const int64_t *v, int n, bool scalar) {
  char *name = ox_fmt(&ex->ar, "_c%d", ex->seq++);
  int64_t dim = n;
  Onnx__TensorProto *t =
      name ? new_init(ex, name, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, &dim, scalar ? 0 : 1, v, sizeof *v * (size_t)n)
           : NULL;
  return t ? t->name : NULL;
}

const char *ox_const_scalar(ox_ex *ex, wk_dtype dt, double v) {
  char *name = ox_fmt(&ex->ar, "_c%d", ex->seq++);
  wk_tensor *t = name ? wk_scalar_tensor(v, dt) : NULL;
  const char *r = t ? ox_init_tensor(ex, name, t) : NULL;
  wk_release(t);
  return r;
}

/* ---- symbolic dims as values ---- */
static const char *sym_value(ox_ex *ex, int s) {
  if (ex->symname[s]) return ex->symname[s];
  const wk_graph *g = ex->g;
  for (int i = 0; i < wk_graph_num_inputs(g); i++) {
    int v = wk_graph_input(g, i);
    const wk_symdim *d = wk_graph_value_dims(g, v);
    for (int k = 0; k < wk_graph_value_ndim(g, v); k++) {
      wk_symdim e = d[k];
      if (e.a == 1 && e.b == 0 && e.c == 1 && e.m == 1 && e.d == 0 && e.sym0 == s && e.sym1 < 0) {
        const char *shape = ox_tmp(ex), *out = ox_tmp(ex);
        const char *in[] = {ox_name(ex, v)};
        Onnx__NodeProto *n = ox_node(ex, "Shape", in, 1, &shape, 1);
        int64_t idx = k;
        const char *gi[] = {shape, ox_const_i64(ex, &idx, 1, false)};
        Onnx__NodeProto *ga = n && gi[1] ? ox_node(ex, "Gather", gi, 2, &out, 1) : NULL;
        if (!ga) return NULL;
        ox_attr_i(ex, ga, "axis", 0);
        return ex->symname[s] = (char *)out;
      }
    }
  }
  ox_fail(ex, WK_ERR_UNSUPPORTED, "symbol %s is no input's dim, so its value cannot be computed in the graph",
          wk_graph_symbol_name(g, s));
  return NULL;
}

static const char *arith(ox_ex *ex, const char *op, const char *a, int64_t k) {
  const char *out = ox_tmp(ex);
  const char *in[] = {a, ox_const_i64(ex, &k, 1, false)};
  if (!out || !in[1]) return NULL;
  return ox_node(ex, op, in, 2, &out, 1) ? out : NULL;
}

const char *ox_symdim_value(ox_ex *ex, wk_symdim d) {
  if (d.a == 0 || d.sym0 < 0) {
    int64_t k = wk_symdim_eval(d, NULL);
    return ox_const_i64(ex, &k, 1, false);
  }
  const char *s = sym_value(ex, d.sym0);
  if (s && d.sym1 >= 0) {
    const char *s1 = sym_value(ex, d.sym1), *out = ox_tmp(ex);
    const char *in[] = {s, s1};
    s = s1 && out && ox_node(ex, "Mul", in, 2, &out, 1) ? out : NULL;
  }
  /* m * floor((a*S + b) / c) + d; a*S + b >= 0 for every dim a trace fits, so
   * ONNX's integer Div (truncation) is the floor */
  if (s && d.a != 1) s = arith(ex, "Mul", s, d.a);
  if (s && d.b != 0) s = arith(ex, "Add", s, d.b);
  if (s && d.c != 1) s = arith(ex, "Div", s, d.c);
  if (s && d.m != 1) s = arith(ex, "Mul", s, d.m);
  if (s && d.d != 0) s = arith(ex, "Add", s, d.d);
  return s;
}

/* ---- value infos ---- */
static bool is_symbol(wk_symdim d) {
  return d.a == 1 && d.b == 0 && d.c == 1 && d.m == 1 && d.d == 0 && d.sym0 >= 0 && d.sym1 < 0;
}

static Onnx__ValueInfoProto *value_info(ox_ex *ex, const char *name, int v, char **symnames,
                                        const char *const *dimnames) {
  const wk_graph *g = ex->g;
  int ot = ox_onnx_type(wk_graph_value_dtype(g, v));
  if (!ot) {
    ox_fail(ex, WK_ERR_DTYPE, "graph value '%s' has dtype %s, which ONNX has no type for", name,
            wk_dtype_name(wk_graph_value_dtype(g, v)));
    return NULL;
  }
  Onnx__ValueInfoProto *vi = ox_alloc(&ex->ar, sizeof *vi);
  Onnx__TypeProto *tp = ox_alloc(&ex->ar, sizeof *tp);
  Onnx__TypeProto__Tensor *tt = ox_alloc(&ex->ar, sizeof *tt);
  Onnx__TensorShapeProto *sh = ox_alloc(&ex->ar, sizeof *sh);
  int nd = wk_graph_value_ndim(g, v);
  Onnx__TensorShapeProto__Dimension **dims = ox_alloc(&ex->ar, sizeof *dims * (size_t)(nd ? nd : 1));
  if (!vi || !tp || !tt || !sh || !dims) {
    oom(ex);
    return NULL;
  }
  onnx__value_info_proto__init(vi);
  onnx__type_proto__init(tp);
  onnx__type_proto__tensor__init(tt);
  onnx__tensor_shape_proto__init(sh);
  const wk_symdim *d = wk_graph_value_dims(g, v);
  for (int k = 0; k < nd; k++) {
    Onnx__TensorShapeProto__Dimension *dm = ox_alloc(&ex->ar, sizeof *dm);
    if (!dm) {
      oom(ex);
      return NULL;
    }
    onnx__tensor_shape_proto__dimension__init(dm);
    if (dimnames && dimnames[k]) {
      dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
      dm->dim_param = ox_strdup(&ex->ar, dimnames[k]);
    } else if (d[k].a == 0 || d[k].sym0 < 0) {
      dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
      dm->dim_value = wk_symdim_eval(d[k], NULL);
    } else if (is_symbol(d[k])) {
      dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
      dm->dim_param = ox_strdup(&ex->ar, symnames[d[k].sym0]);
    } /* else an expression of symbols: left unknown, as PyTorch does */
    dims[k] = dm;
  }
  sh->dim = dims;
  sh->n_dim = (size_t)nd;
  tt->has_elem_type = 1;
  tt->elem_type = ot;
  tt->shape = sh;
  tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  tp->tensor_type = tt;
  vi->name = ox_strdup(&ex->ar, name);
  vi->type = tp;
  return ex->ar.oom ? NULL : vi;
}

/* ---- the model ---- */
static wk_status opts_norm(const wk_onnx_export_opts *o, wk_onnx_export_opts *out) {
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  if (o) {
    if (o->struct_size < offsetof(wk_onnx_export_opts, opset) + sizeof(int32_t))
      return wk_error(WK_ERR_INVALID_ARG,
                      "onnx export: opts->struct_size is %zu; set it to sizeof(wk_onnx_export_opts) "
                      "(WK_ONNX_EXPORT_OPTS does)",
                      o->struct_size);
    memcpy(out, o, o->struct_size < sizeof *out ? o->struct_size : sizeof *out);
    out->struct_size = sizeof *out;
  }
  if (out->external_data < WK_ONNX_EXTERNAL_NEVER || out->external_data > WK_ONNX_EXTERNAL_ALWAYS)
    return wk_error(WK_ERR_INVALID_ARG, "onnx export: external_data is %d (AUTO 0, ALWAYS 1 or NEVER -1)",
                    out->external_data);
  if (out->external_data_location) {
    const char *l = out->external_data_location;
    if (!*l || strchr(l, '/') || strchr(l, '\\') || !strcmp(l, ".") || !strcmp(l, ".."))
      return wk_error(WK_ERR_INVALID_ARG,
                      "onnx export: external_data_location '%.200s' must be a plain file name (it goes next to the "
                      "model)",
                      l);
  }
  if (!out->opset) out->opset = WK_ONNX_DEFAULT_OPSET;
  if (out->opset < WK_ONNX_MIN_OPSET || out->opset > WK_ONNX_MAX_OPSET)
    return wk_error(WK_ERR_UNSUPPORTED, "onnx export: opset %d is not supported (%d to %d)", out->opset,
                    WK_ONNX_MIN_OPSET, WK_ONNX_MAX_OPSET);
  if (out->ninput_names < 0 || out->noutput_names < 0 || out->ndynamic_axes < 0 ||
      (out->ninput_names && !out->input_names) || (out->noutput_names && !out->output_names) ||
      (out->ndynamic_axes && !out->dynamic_axes))
    return wk_error(WK_ERR_INVALID_ARG, "onnx export: a name or axis count is negative or its array is NULL");
  for (int i = 0; i < out->ninput_names; i++)
    if (!out->input_names[i] || !*out->input_names[i])
      return wk_error(WK_ERR_INVALID_ARG, "onnx export: input_names[%d] is NULL or empty", i);
  for (int i = 0; i < out->noutput_names; i++)
    if (!out->output_names[i] || !*out->output_names[i])
      return wk_error(WK_ERR_INVALID_ARG, "onnx export: output_names[%d] is NULL or empty", i);
  for (int i = 0; i < out->ndynamic_axes; i++)
    if (!out->dynamic_axes[i].tensor || !out->dynamic_axes[i].name || !*out->dynamic_axes[i].name)
      return wk_error(WK_ERR_INVALID_ARG, "onnx export: dynamic_axes[%d] has a NULL tensor or name", i);
  return WK_OK;
}

static wk_status build(ox_ex *ex, const wk_onnx_export_opts *o, Onnx__ModelProto *model) {
  const wk_graph *g = ex->g;
  int nv = wk_graph_num_values(g), ns = wk_graph_num_symbols(g);
  int nin = wk_graph_num_inputs(g), nout = wk_graph_num_outputs(g);
  ex->vname = ox_alloc(&ex->ar, sizeof *ex->vname * (size_t)(nv ? nv : 1));
  ex->symname = ox_alloc(&ex->ar, sizeof *ex->symname * (size_t)(ns ? ns : 1));
  char **symnames = ox_alloc(&ex->ar, sizeof *symnames * (size_t)(ns ? ns : 1));
  char **outnames = ox_alloc(&ex->ar, sizeof *outnames * (size_t)(nout ? nout : 1));
  if (!ex->vname || !ex->symname || !symnames || !outnames) return oom(ex);
  if (o->ninput_names > nin)
    return ox_fail(ex, WK_ERR_INVALID_ARG, "%d input names given for a graph of %d inputs", o->ninput_names, nin);
  if (o->noutput_names > nout)
    return ox_fail(ex, WK_ERR_INVALID_ARG, "%d output names given for a graph of %d outputs", o->noutput_names, nout);
  for (int s = 0; s < ns; s++) symnames[s] = ox_strdup(&ex->ar, wk_graph_symbol_name(g, s));
  /* names: inputs, outputs, parameters (state_dict keys), constants, node results */
  for (int i = 0; i < nin; i++)
    ex->vname[wk_graph_input(g, i)] =
        ox_strdup(&ex->ar, i < o->ninput_names ? o->input_names[i] : wk_graph_value_name(g, wk_graph_input(g, i)));
  for (int i = 0; i < nout; i++) {
    outnames[i] = i < o->noutput_names ? ox_strdup(&ex->ar, o->output_names[i])
                                       : (i ? ox_fmt(&ex->ar, "output%d", i) : ox_strdup(&ex->ar, "output"));
    for (int k = 0; k < nin; k++)
      if (outnames[i] && !strcmp(outnames[i], ex->vname[wk_graph_input(g, k)]))
        return ox_fail(ex, WK_ERR_INVALID_ARG, "output name '%s' is also an input's name", outnames[i]);
    for (int k = 0; k < i; k++)
      if (outnames[i] && !strcmp(outnames[i], outnames[k]))
        return ox_fail(ex, WK_ERR_INVALID_ARG, "two outputs are named '%s'", outnames[i]);
  }
  for (int i = 0; i < nin; i++)
    for (int k = 0; k < i; k++)
      if (!strcmp(ex->vname[wk_graph_input(g, i)], ex->vname[wk_graph_input(g, k)]))
        return ox_fail(ex, WK_ERR_INVALID_ARG, "two inputs are named '%s'", ex->vname[wk_graph_input(g, i)]);
  /* dynamic axes: the graph's symbols get the axes' names */
  const char **outdimnames[64] = {0};
  for (int i = 0; i < o->ndynamic_axes; i++) {
    const wk_onnx_dynamic_axis *ax = &o->dynamic_axes[i];
    int v = -1, oi = -1;
    for (int k = 0; k < nin && v < 0; k++)
      if (!strcmp(ex->vname[wk_graph_input(g, k)], ax->tensor)) v = wk_graph_input(g, k);
    for (int k = 0; k < nout && v < 0; k++)
      if (!strcmp(outnames[k], ax->tensor)) v = wk_graph_output(g, k), oi = k;
    if (v < 0) return ox_fail(ex, WK_ERR_NOT_FOUND, "dynamic axis: no input or output is named '%s'", ax->tensor);
    int nd = wk_graph_value_ndim(g, v);
    if (ax->dim < 0 || ax->dim >= nd)
      return ox_fail(ex, WK_ERR_INDEX, "dynamic axis: '%s' has %d dims, no dim %d", ax->tensor, nd, ax->dim);
    wk_symdim d = wk_graph_value_dims(g, v)[ax->dim];
    if (d.a == 0 || d.sym0 < 0)
      return ox_fail(ex, WK_ERR_INVALID_ARG,
                     "dynamic axis: dim %d of '%s' is the constant %lld in the graph (trace it with the dim dynamic)",
                     ax->dim, ax->tensor, (long long)wk_symdim_eval(d, NULL));
    if (is_symbol(d)) {
      symnames[d.sym0] = ox_strdup(&ex->ar, ax->name);
    } else if (oi >= 0 && oi < 64) {
      if (!outdimnames[oi] && !(outdimnames[oi] = ox_alloc(&ex->ar, sizeof(char *) * (size_t)nd))) return oom(ex);
      outdimnames[oi][ax->dim] = ax->name;
    } else {
      return ox_fail(ex, WK_ERR_INVALID_ARG, "dynamic axis: dim %d of input '%s' is an expression of symbols", ax->dim,
                     ax->tensor);
    }
  }
  for (int v = 0; v < nv; v++) {
    wk_gvalue_kind k = wk_graph_value_kind(g, v);
    if (k == WK_GV_PARAM)
      ex->vname[v] = ox_strdup(&ex->ar, wk_graph_value_name(g, v));
    else if (k == WK_GV_CONST)
      ex->vname[v] = ox_fmt(&ex->ar, "_const%d", v);
    else if (k == WK_GV_NODE)
      ex->vname[v] = ox_fmt(&ex->ar, "_v%d", v);
  }
  /* a node result that is a graph output is written under the output's name (once) */
  bool *renamed = ox_alloc(&ex->ar, sizeof *renamed * (size_t)(nv ? nv : 1));
  bool *direct = ox_alloc(&ex->ar, sizeof *direct * (size_t)(nout ? nout : 1));
  if (!renamed || !direct || ex->ar.oom) return oom(ex);
  for (int i = 0; i < nout; i++) {
    int v = wk_graph_output(g, i);
    if (wk_graph_value_kind(g, v) == WK_GV_NODE && !renamed[v]) {
      ex->vname[v] = outnames[i];
      renamed[v] = direct[i] = true;
    }
  }
  ex->named_out = renamed;
  /* initializers: parameters and buffers, then constants */
  for (int v = 0; v < nv; v++) {
    wk_gvalue_kind k = wk_graph_value_kind(g, v);
    if ((k == WK_GV_PARAM || k == WK_GV_CONST) && wk_graph_value_num_uses(g, v) > 0)
      if (!ox_init_tensor(ex, ex->vname[v], wk_graph_value_tensor(g, v))) return wk_last_error();
  }
  /* nodes */
  for (int p = 0; p < wk_graph_num_nodes(g); p++) {
    ex->cur = wk_graph_node_at(g, p);
    wk_status st = ox_export_node(ex, ex->cur);
    if (st) return st;
    if (ex->ar.oom) return oom(ex);
  }
  ex->cur = -1;
  /* outputs not written directly get an Identity */
  for (int i = 0; i < nout; i++)
    if (!direct[i]) {
      const char *in = ex->vname[wk_graph_output(g, i)];
      const char *out = outnames[i];
      if (!ox_node(ex, "Identity", &in, 1, &out, 1)) return oom(ex);
    }
  /* the graph */
  Onnx__GraphProto *gp = ox_alloc(&ex->ar, sizeof *gp);
  Onnx__ValueInfoProto **ins = ox_alloc(&ex->ar, sizeof *ins * (size_t)(nin ? nin : 1));
  Onnx__ValueInfoProto **outs = ox_alloc(&ex->ar, sizeof *outs * (size_t)(nout ? nout : 1));
  if (!gp || !ins || !outs) return oom(ex);
  onnx__graph_proto__init(gp);
  for (int i = 0; i < nin; i++) {
    int v = wk_graph_input(g, i);
    if (!(ins[i] = value_info(ex, ex->vname[v], v, symnames, NULL))) return wk_last_error();
  }
  for (int i = 0; i < nout; i++) {
    int v = wk_graph_output(g, i);
    if (!(outs[i] = value_info(ex, outnames[i], v, symnames, i < 64 ? outdimnames[i] : NULL))) return wk_last_error();
  }
  gp->name = ox_strdup(&ex->ar, o->graph_name ? o->graph_name : "main_graph");
  gp->n_node = ex->nnodes;
  gp->node = ex->nodes;
  gp->n_initializer = ex->ninits;
  gp->initializer = ex->inits;
  gp->n_input = (size_t)nin;
  gp->input = ins;
  gp->n_output = (size_t)nout;
  gp->output = outs;
  Onnx__OperatorSetIdProto *os = ox_alloc(&ex->ar, sizeof *os);
  Onnx__OperatorSetIdProto **osl = ox_alloc(&ex->ar, sizeof *osl);
  if (!os || !osl) return oom(ex);
  onnx__operator_set_id_proto__init(os);
  os->domain = ox_strdup(&ex->ar, "");
  os->has_version = 1;
  os->version = o->opset;
  osl[0] = os;
  model->has_ir_version = 1;
  model->ir_version = ox_ir_version(o->opset);
  model->n_opset_import = 1;
  model->opset_import = osl;
  model->producer_name = ox_strdup(&ex->ar, "wick");
  model->producer_version = ox_fmt(&ex->ar, "%s", wk_version());
  if (o->doc_string) model->doc_string = ox_strdup(&ex->ar, o->doc_string);
  model->graph = gp;
  return ex->ar.oom ? oom(ex) : WK_OK;
}

/* Initializers under this many bytes stay in the model (onnx's
 * convert_model_to_external_data default size_threshold): shape constants
 * among them, which shape inference must read. */
#define OX_EXTERNAL_MIN 1024

/* Moves the bytes of every initializer of OX_EXTERNAL_MIN bytes or more into
 * one external data buffer (*ext, *next; each tensor at a 64-byte aligned
 * offset) and points the tensors at `location` (ONNX's external_data:
 * location, offset, length). */
static wk_status externalize(ox_ex *ex, const char *location, void **ext, size_t *next) {
  size_t total = 0;
  for (size_t i = 0; i < ex->ninits; i++)
    if (ex->inits[i]->raw_data.len >= OX_EXTERNAL_MIN)
      total = ((total + 63) & ~(size_t)63) + ex->inits[i]->raw_data.len;
  uint8_t *buf = wk_malloc(total ? total : 1);
  if (!buf) return wk_error(WK_ERR_NO_MEMORY, "onnx export: out of memory for %zu bytes of external data", total);
  size_t off = 0;
  for (size_t i = 0; i < ex->ninits; i++) {
    Onnx__TensorProto *t = ex->inits[i];
    if (t->raw_data.len < OX_EXTERNAL_MIN) continue;
    off = (off + 63) & ~(size_t)63;
    if (t->raw_data.len) memcpy(buf + off, t->raw_data.data, t->raw_data.len);
    Onnx__StringStringEntryProto *kv = ox_alloc(&ex->ar, sizeof *kv * 3);
    Onnx__StringStringEntryProto **kvp = ox_alloc(&ex->ar, sizeof *kvp * 3);
    if (!kv || !kvp) break;
    const char *keys[3] = {"location", "offset", "length"};
    char *vals[3] = {ox_strdup(&ex->ar, location), ox_fmt(&ex->ar, "%zu", off),
                     ox_fmt(&ex->ar, "%zu", t->raw_data.len)};
    for (int k = 0; k < 3; k++) {
      onnx__string_string_entry_proto__init(&kv[k]);
      kv[k].key = (char *)keys[k];
      kv[k].value = vals[k];
      kvp[k] = &kv[k];
    }
    t->n_external_data = 3;
    t->external_data = kvp;
    t->has_data_location = 1;
    t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    off += t->raw_data.len;
    t->has_raw_data = 0;
    t->raw_data.data = NULL;
    t->raw_data.len = 0;
  }
  if (ex->ar.oom) {
    wk_free(buf);
    return oom(ex);
  }
  *ext = buf;
  *next = total;
  return WK_OK;
}

wk_status ox_export(const wk_graph *g, const wk_onnx_export_opts *opts, const char *ext_location, void **out,
                    size_t *nbytes, void **ext, size_t *next) {
  wk_onnx_export_opts o;
  if (ext) *ext = NULL, *next = 0;
  wk_status st = opts_norm(opts, &o);
  if (st) return st;
  st = wk_graph_validate(g);
  if (st) return st;
  ox_ex ex = {.g = g, .opset = o.opset, .cur = -1};
  Onnx__ModelProto model;
  onnx__model_proto__init(&model);
  st = build(&ex, &o, &model);
  size_t n = st ? 0 : onnx__model_proto__get_packed_size(&model);
  if (!st &&
      (o.external_data == WK_ONNX_EXTERNAL_ALWAYS || (o.external_data == WK_ONNX_EXTERNAL_AUTO && n >= OX_MAX_FILE))) {
    if (!ext_location)
      st = wk_error(WK_ERR_UNSUPPORTED,
                    o.external_data == WK_ONNX_EXTERNAL_ALWAYS
                        ? "onnx export: external data needs a second file; export to a path (wk_onnx_export_graph), "
                          "not to a buffer (the model is %zu bytes)"
                        : "onnx export: the model is %zu bytes, over protobuf's 2 GiB limit, and a model in memory "
                          "cannot keep its initializers in an external file: export it to a path",
                    n);
    else if (!(st = externalize(&ex, ext_location, ext, next)))
      n = onnx__model_proto__get_packed_size(&model);
  }
  if (!st && n >= OX_MAX_FILE)
    st = wk_error(WK_ERR_UNSUPPORTED,
                  "onnx export: the model is %zu bytes, over protobuf's 2 GiB limit (external_data is NEVER%s)", n,
                  o.external_data == WK_ONNX_EXTERNAL_NEVER ? "" : ", or the graph alone is that large");
  if (!st) {
    uint8_t *buf = wk_malloc(n ? n : 1);
    if (!buf) {
      st = wk_error(WK_ERR_NO_MEMORY, "onnx export: out of memory for a %zu-byte model", n);
    } else {
      onnx__model_proto__pack(&model, buf);
      *out = buf;
      *nbytes = n;
    }
  }
  if (st && ext && *ext) {
    wk_free(*ext);
    *ext = NULL;
    *next = 0;
  }
  ox_arena_free(&ex.ar);
  return st;
}
