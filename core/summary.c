/* wk_module_summary: torchinfo's summary() in C. One forward (on the meta
 * device by default) observed by global forward hooks (one row per module
 * call) and by a dispatch layer below autograd that counts each op's
 * multiply-adds into the innermost running module (torchinfo's rule, and
 * ptflops' per-leaf-module rule as a second total); printed in torchinfo 1.8's layout. */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The layer sits below autograd and the profiler, so it sees each op a module
 * calls once (ops run inside kernels and composites are not seen again). */
#define SUMMARY_LEVEL 95
#define NAME_WIDTH 40 /* torchinfo's layer_name_width, widened for deep names */
#define COL_WIDTH 25

typedef struct {
  wk_module *m;
  int depth, index;    /* torchinfo's depth-idx: index counts rows of one depth */
  bool leaf, recursive; /* leaf: no children; recursive: the module had a row already */
  int64_t params, trainable, param_bytes;
  int out_nd; /* -1: no output recorded */
  int64_t out_sizes[WK_MAX_DIMS], out_bytes;
  int64_t self_macs, incl_macs; /* ops its own forward ran / ran inside it */
  int64_t pt_macs;              /* ptflops' rule, leaf rows only (see pt_op_macs) */
  int64_t in_numel;             /* its first input */
} row;

typedef struct {
  row *rows;
  int n, cap;
  int open[256]; /* rows whose forward is running, outermost first */
  int nopen;
  bool oom;
} run;

static _Thread_local run *tl_run;
static _Thread_local int tl_nested; /* > 0 inside an op: ops a composite runs are not counted again */
static wk_layer *g_layer;
static atomic_int g_users; /* summaries running: the layer is on while > 0 */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static wk_op *op_conv2d, *op_linear, *op_mm, *op_bmm, *op_addmm, *op_matmul, *op_dot;
static wk_op *op_batch_norm, *op_layer_norm, *op_relu, *op_relu_, *op_leaky_relu, *op_leaky_relu_;
static wk_op *op_max_pool, *op_avg_pool, *op_adaptive_avg_pool;

static int64_t numel_of(const wk_value *v) {
  return v->tag == WK_V_TENSOR && v->u.t ? wk_tensor_numel(v->u.t) : 0;
}
static bool given(const wk_value *v) {
  return v->tag == WK_V_TENSOR && v->u.t;
}

static int64_t last_size(const wk_value *v) {
  if (v->tag != WK_V_TENSOR || !v->u.t || v->u.t->ndim == 0) return 1;
  return v->u.t->sizes[v->u.t->ndim - 1];
}

/* Multiply-adds of one op from its arguments and result (see module.h). */
static int64_t op_macs(const wk_op *op, const wk_value *args, const wk_value *outs) {
  if (outs[0].tag != WK_V_TENSOR || !outs[0].u.t) return 0;
  int64_t out = wk_tensor_numel(outs[0].u.t);
  if (op == op_conv2d) {
    const wk_tensor *w = args[1].u.t;
    return w && w->ndim > 0 && w->sizes[0] > 0 ? out * (wk_tensor_numel(w) / w->sizes[0]) : 0;
  }
  if (op == op_linear) return out * last_size(&args[1]);
  if (op == op_addmm) return out * last_size(&args[1]);
  if (op == op_mm || op == op_bmm || op == op_matmul || op == op_dot) return out * last_size(&args[0]);
  return 0;
}

/* ptflops' count (its PyTorch module backend) of one op run directly by a
 * leaf module: conv and linear-like MACs plus out_numel for a bias; norms the
 * input's numel, twice with an affine weight; ReLU / LeakyReLU the output's
 * numel; pools the input's numel; every other op 0. */
static int64_t pt_op_macs(const wk_op *op, const wk_value *args, const wk_value *outs) {
  int64_t out = numel_of(&outs[0]);
  if (op == op_conv2d || op == op_linear) return op_macs(op, args, outs) + (given(&args[2]) ? out : 0);
  if (op == op_addmm) return op_macs(op, args, outs) + out;
  if (op == op_batch_norm || op == op_layer_norm) {
    int w = op == op_batch_norm ? 1 : 2; /* batch_norm(input, weight, ..), layer_norm(input, shape, weight, ..) */
    return numel_of(&args[0]) * (given(&args[w]) ? 2 : 1);
  }
  if (op == op_relu || op == op_relu_ || op == op_leaky_relu || op == op_leaky_relu_) return out;
  if (op == op_max_pool || op == op_avg_pool || op == op_adaptive_avg_pool) return numel_of(&args[0]);
  return op_macs(op, args, outs); /* mm, bmm, matmul, dot */
}

static wk_status layer_fn(wk_layer *self, void *user, wk_op *op, const wk_value *args, wk_value *outs) {
  (void)user;
  tl_nested++;
  wk_status s = wk_layer_redispatch(self, op, args, outs);
  tl_nested--;
  run *r = tl_run;
  if (s == WK_OK && r && r->nopen > 0 && tl_nested == 0) {
    row *w = &r->rows[r->open[r->nopen - 1]];
    w->self_macs += op_macs(op, args, outs);
    if (w->leaf) w->pt_macs += pt_op_macs(op, args, outs);
  }
  return s;
}

static void setup(void) {
  g_layer = wk_layer_register("summary", SUMMARY_LEVEL, layer_fn, NULL, false);
  wk_clear_error();
  op_conv2d = wk_op_find("conv2d");
  op_linear = wk_op_find("linear");
  op_mm = wk_op_find("mm");
  op_bmm = wk_op_find("bmm");
  op_addmm = wk_op_find("addmm");
  op_matmul = wk_op_find("matmul");
  op_dot = wk_op_find("dot");
  op_batch_norm = wk_op_find("batch_norm");
  op_layer_norm = wk_op_find("layer_norm");
  op_relu = wk_op_find("relu");
  op_relu_ = wk_op_find("relu_");
  op_leaky_relu = wk_op_find("leaky_relu");
  op_leaky_relu_ = wk_op_find("leaky_relu_");
  op_max_pool = wk_op_find("max_pool2d_with_indices");
  op_avg_pool = wk_op_find("avg_pool2d");
  op_adaptive_avg_pool = wk_op_find("adaptive_avg_pool2d");
  wk_clear_error();
}

/* Every parameter of m once: count, trainable count and bytes. */
static void param_stats(const wk_module *m, row *w) {
  int n = wk_module_named_parameters(m, NULL, NULL, 0);
  wk_tensor **ps = wk_calloc((size_t)(n ? n : 1), sizeof *ps);
  n = ps ? wk_module_named_parameters(m, NULL, ps, n) : 0;
  for (int i = 0; i < n; i++) {
    int64_t k = wk_tensor_numel(ps[i]);
    w->params += k;
    if (wk_tensor_requires_grad(ps[i])) w->trainable += k;
    w->param_bytes += k * (int64_t)wk_dtype_size(wk_tensor_dtype(ps[i]));
  }
  free(ps);
}

static wk_status pre_hook(void *user, wk_module *m, wk_tensor *const *in, int n) {
  run *r = tl_run;
  if (!r || r != user) return WK_OK; /* another thread's forward */
  if (r->n == r->cap) {
    int c = r->cap ? r->cap * 2 : 64;
    row *p = wk_realloc(r->rows, sizeof *p * (size_t)c);
    if (!p) return wk_error(WK_ERR_NO_MEMORY, "module_summary: out of memory");
    r->rows = p;
    r->cap = c;
  }
  if (r->nopen == (int)(sizeof r->open / sizeof *r->open))
    return wk_error(WK_ERR_INVALID_ARG, "module_summary: modules nested deeper than %d", r->nopen);
  row *w = &r->rows[r->n];
  memset(w, 0, sizeof *w);
  w->m = m;
  w->depth = r->nopen;
  w->out_nd = -1;
  w->in_numel = n > 0 && in[0] ? wk_tensor_numel(in[0]) : 0;
  w->leaf = wk_module_named_children(m, NULL, NULL, 0) == 0;
  for (int i = 0; i < r->n && !w->recursive; i++)
    if (r->rows[i].m == m) {
      w->recursive = true;
      w->params = r->rows[i].params;
      w->trainable = r->rows[i].trainable;
      w->param_bytes = r->rows[i].param_bytes;
      w->leaf = r->rows[i].leaf;
    }
  if (!w->recursive) param_stats(m, w);
  r->open[r->nopen++] = r->n++;
  return WK_OK;
}

/* ptflops' count of the two nn layers whose ops don't tell it: ConvTranspose2d
 * (run as a conv2d over a zero-stuffed input; ptflops counts per input
 * position) and GroupNorm (composed of pointwise ops). -1: not one of them. */
static int64_t pt_module_macs(const row *w, const wk_tensor *out) {
  const char *cls = wk_module_class_name(w->m);
  bool deconv = !strcmp(cls, "ConvTranspose2d");
  if (!deconv && strcmp(cls, "GroupNorm")) return -1;
  /* the nn plugin registers both (None when absent): no lookup error */
  wk_tensor *weight = wk_module_param(w->m, "weight"), *bias = wk_module_param(w->m, "bias");
  if (!deconv) return w->in_numel * (weight ? 2 : 1);
  if (!weight || weight->ndim == 0 || weight->sizes[0] <= 0) return -1;
  /* weight (C_in, C_out/groups, kH, kW): per input position C_out/groups x kH x kW */
  return w->in_numel / weight->sizes[0] * wk_tensor_numel(weight) + (bias ? wk_tensor_numel(out) : 0);
}

static wk_status post_hook(void *user, wk_module *m, wk_tensor *const *in, int n, wk_tensor **out) {
  (void)m, (void)in, (void)n;
  run *r = tl_run;
  if (!r || r != user || r->nopen == 0) return WK_OK;
  row *w = &r->rows[r->open[--r->nopen]];
  const wk_tensor *t = *out;
  if (w->leaf) {
    int64_t pt = pt_module_macs(w, t);
    if (pt >= 0) w->pt_macs = pt;
  }
  w->out_nd = t->ndim;
  memcpy(w->out_sizes, t->sizes, sizeof(int64_t) * (size_t)t->ndim);
  w->out_bytes = wk_tensor_numel(t) * (int64_t)wk_dtype_size(t->dtype);
  return WK_OK;
}

/* ---- text ---- */
typedef struct {
  char *s;
  size_t n, cap;
  bool oom;
} text;

static void putf(text *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(text *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (k < 0 || b->oom) return;
  if (b->n + (size_t)k + 1 > b->cap) {
    size_t c = (b->cap + (size_t)k + 1) * 2;
    char *p = wk_realloc(b->s, c);
    if (!p) {
      b->oom = true;
      return;
    }
    b->s = p;
    b->cap = c;
  }
  va_start(ap, fmt);
  vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
  va_end(ap);
  b->n += (size_t)k;
}

/* 1234567 -> "1,234,567" (Python's f"{n:,}"). */
static char *commas(int64_t v, char *buf, size_t cap) {
  char digits[32];
  snprintf(digits, sizeof digits, "%lld", (long long)(v < 0 ? -v : v));
  size_t nd = strlen(digits), k = 0;
  if (v < 0 && k + 1 < cap) buf[k++] = '-';
  for (size_t i = 0; i < nd && k + 2 < cap; i++) {
    if (i && (nd - i) % 3 == 0) buf[k++] = ',';
    buf[k++] = digits[i];
  }
  buf[k] = 0;
  return buf;
}

static char *shape_cell(const row *w, char *buf, size_t cap) {
  if (w->out_nd <= 0) return strcpy(buf, "--"); /* torchinfo's str_([]) */
  size_t k = (size_t)snprintf(buf, cap, "[");
  for (int i = 0; i < w->out_nd && k < cap; i++)
    k += (size_t)snprintf(buf + k, cap - k, "%s%lld", i ? ", " : "", (long long)w->out_sizes[i]);
  if (k < cap) snprintf(buf + k, cap - k, "]");
  return buf;
}

/* Rows after i that are deeper than it: its children in torchinfo's sense. */
static int end_of(const run *r, int i) {
  int j = i + 1;
  while (j < r->n && r->rows[j].depth > r->rows[i].depth) j++;
  return j;
}

/* torchinfo's leftover_params: what a row holds beyond the rows inside it. */
static int64_t leftover(const run *r, int i, bool trainable) {
  int64_t v = trainable ? r->rows[i].trainable : r->rows[i].params;
  for (int j = i + 1, e = end_of(r, i); j < e; j++) {
    const row *c = &r->rows[j];
    if (c->recursive) continue;
    v -= c->leaf ? (trainable ? c->trainable : c->params) : leftover(r, j, trainable);
  }
  return v;
}

/* Display width of "├─", "│    └─" ... (characters, not bytes). */
static int prefix_width(int depth) { return depth == 0 ? 0 : depth == 1 ? 2 : 5 * (depth - 1) + 2; }

static void put_prefix(text *b, int depth) {
  if (depth == 1) putf(b, "├─");
  for (int i = 1; depth > 1 && i < depth; i++) putf(b, "│    ");
  if (depth > 1) putf(b, "└─");
}

static void put_row(text *b, int name_width, int depth, const char *name, const char *const cells[3]) {
  put_prefix(b, depth);
  int used = prefix_width(depth) + (int)strlen(name);
  putf(b, "%s%*s ", name, used < name_width ? name_width - used : 0, "");
  char line[3 * (COL_WIDTH + 64)];
  size_t k = 0;
  for (int i = 0; i < 3; i++) k += (size_t)snprintf(line + k, sizeof line - k, "%-*s ", COL_WIDTH, cells[i]);
  while (k > 0 && line[k - 1] == ' ') line[--k] = 0; /* rstrip */
  putf(b, "%s\n", line);
}

static void layer_title(const row *w, char *buf, size_t cap) {
  const char *cls = wk_module_class_name(w->m);
  if (w->depth > 0)
    snprintf(buf, cap, "%s: %d-%d", cls, w->depth, w->index);
  else
    snprintf(buf, cap, "%s", cls);
}

/* torchinfo's format_output_num with Units.AUTO (T, G, else M). */
static void put_macs(text *b, const char *label, int64_t macs) {
  double unit = macs >= 1e12 ? 1e12 : macs >= 1e9 ? 1e9 : 1e6, v = (double)macs / unit;
  const char *u = unit == 1e12 ? "T" : unit == 1e9 ? "G" : "M";
  char c[40];
  if (v == floor(v)) {
    putf(b, "%s (%s): %s\n", label, u, commas((int64_t)v, c, sizeof c));
  } else {
    char f[40];
    snprintf(f, sizeof f, "%.2f", v);
    char *dot = strchr(f, '.');
    *dot = 0;
    putf(b, "%s (%s): %s.%s\n", label, u, commas(strtoll(f, NULL, 10), c, sizeof c), dot + 1);
  }
}

static char *format(run *r, int max_depth, int64_t input_bytes, wk_summary_stats *st) {
  int idx[257] = {0};
  int name_width = NAME_WIDTH, longest = 0;
  char title[256], c1[160], c2[48], c3[48];
  for (int i = 0; i < r->n; i++) {
    row *w = &r->rows[i];
    w->index = ++idx[w->depth];
    w->incl_macs = w->self_macs;
    for (int j = i + 1, e = end_of(r, i); j < e; j++) w->incl_macs += r->rows[j].self_macs;
    layer_title(w, title, sizeof title);
    int len = (int)strlen(title) + w->depth * 5 + 1;
    if (len > longest) longest = len;
  }
  if (longest >= name_width) name_width = (longest + 4) / 5 * 5;
  wk_summary_stats s = {sizeof s, 0, 0, 0, input_bytes, 0, 0, 0};
  for (int i = 0; i < r->n; i++) {
    const row *w = &r->rows[i];
    s.total_mult_adds += w->self_macs;
    s.ptflops_macs += w->pt_macs;
    if (w->leaf) {
      if (w->params > 0) s.forward_backward_bytes += w->out_bytes * 2;
      if (w->recursive) continue;
      s.total_params += w->params;
      s.trainable_params += w->trainable;
      s.param_bytes += w->param_bytes;
    } else if (!w->recursive) {
      int64_t lp = leftover(r, i, false), lt = leftover(r, i, true);
      s.total_params += lp > 0 ? lp : 0;
      s.trainable_params += lt > 0 ? lt : 0;
    }
  }
  text b = {0};
  int width = name_width + 3 * COL_WIDTH;
  char *div = wk_malloc((size_t)width + 1);
  if (!div) return NULL;
  memset(div, '=', (size_t)width);
  div[width] = 0;
  putf(&b, "%s\n", div);
  put_row(&b, name_width, 0, "Layer (type:depth-idx)", (const char *const[]){"Output Shape", "Param #", "Mult-Adds"});
  putf(&b, "%s\n", div);
  for (int i = 0; i < r->n; i++) {
    const row *w = &r->rows[i];
    if (w->depth > max_depth) continue;
    bool reached = w->depth == max_depth, whole = reached || w->leaf;
    if (w->params == 0) {
      strcpy(c2, "--");
    } else if (w->recursive) {
      strcpy(c2, "(recursive)");
    } else if (whole) {
      char n[40];
      snprintf(c2, sizeof c2, w->trainable ? "%s" : "(%s)", commas(w->params, n, sizeof n));
    } else {
      int64_t lp = leftover(r, i, false);
      if (lp > 0)
        commas(lp, c2, sizeof c2);
      else
        strcpy(c2, "--");
    }
    int64_t macs = whole ? w->incl_macs : w->self_macs;
    if (macs > 0)
      commas(macs, c3, sizeof c3);
    else
      strcpy(c3, "--");
    layer_title(w, title, sizeof title);
    put_row(&b, name_width, w->depth, title, (const char *const[]){shape_cell(w, c1, sizeof c1), c2, c3});
  }
  char n1[40], n2[40], n3[40];
  putf(&b, "%s\nTotal params: %s\nTrainable params: %s\nNon-trainable params: %s\n", div,
       commas(s.total_params, n1, sizeof n1), commas(s.trainable_params, n2, sizeof n2),
       commas(s.total_params - s.trainable_params, n3, sizeof n3));
  put_macs(&b, "Total mult-adds", s.total_mult_adds);
  put_macs(&b, "Total MACs, ptflops rule", s.ptflops_macs);
  putf(&b, "%s\nInput size (MB): %.2f\nForward/backward pass size (MB): %.2f\nParams size (MB): %.2f\n", div,
       (double)s.input_bytes / 1e6, (double)s.forward_backward_bytes / 1e6, (double)s.param_bytes / 1e6);
  putf(&b, "Estimated Total Size (MB): %.2f\n%s\n",
       (double)(s.input_bytes + s.forward_backward_bytes + s.param_bytes) / 1e6, div);
  free(div);
  if (b.oom) {
    free(b.s);
    return NULL;
  }
  if (st && st->struct_size) {
    size_t k = st->struct_size < sizeof s ? st->struct_size : sizeof s;
    size_t keep = st->struct_size;
    memcpy(st, &s, k);
    st->struct_size = keep;
  }
  return b.s;
}

/* ---- parameters swapped for data-less twins ---- */
typedef struct {
  wk_tensor *t, *alias; /* the module's handle; a view keeping its old storage */
} swap;

static wk_status swap_to_meta(wk_module *m, swap **out, int *nout) {
  int np = wk_module_named_parameters(m, NULL, NULL, 0), nb = wk_module_named_buffers(m, NULL, NULL, 0);
  wk_tensor **ts = wk_calloc((size_t)(np + nb + 1), sizeof *ts);
  swap *sw = wk_calloc((size_t)(np + nb + 1), sizeof *sw);
  if (!ts || !sw) {
    free(ts);
    free(sw);
    return wk_error(WK_ERR_NO_MEMORY, "module_summary: out of memory");
  }
  wk_module_named_parameters(m, NULL, ts, np);
  wk_module_named_buffers(m, NULL, ts + np, nb);
  int n = 0;
  wk_status s = WK_OK;
  for (int i = 0; i < np + nb && !s; i++) {
    wk_tensor *t = ts[i];
    if (wk__device_norm(t->storage->device).type == WK_DEVICE_META) continue;
    wk_tensor *alias = wk_detach(t);
    wk_tensor *twin = alias ? wk_empty_strided(t->sizes, t->strides, t->ndim,
                                               (wk_options){t->dtype, {WK_DEVICE_META, 0}, false})
                            : NULL;
    if (!twin || (s = wk__tensor_assign(t, twin))) {
      if (!s) s = wk_last_error();
      wk_release(alias);
    } else {
      sw[n++] = (swap){t, alias};
    }
    wk_release(twin);
  }
  free(ts);
  *out = sw;
  *nout = n;
  return s;
}

static void swap_back(swap *sw, int n) {
  for (int i = 0; i < n; i++) {
    wk__tensor_assign(sw[i].t, sw[i].alias);
    wk_release(sw[i].alias);
  }
  free(sw);
}

char *wk_module_summary(wk_module *m, const int64_t *sizes, int ndim, const wk_summary_opts *opts) {
  if (!m || (!sizes && ndim > 0)) {
    wk__null_arg("module_summary", m ? "sizes" : "module");
    return NULL;
  }
  wk_summary_opts o = {sizeof o, 3, WK_F32, {WK_DEVICE_META, 0}, NULL};
  if (opts) {
    size_t k = opts->struct_size < sizeof o ? opts->struct_size : sizeof o;
    memcpy(&o, opts, k);
    if (!o.depth) o.depth = 3;
    if (!o.dtype) o.dtype = WK_F32;
    if (!o.device.type) o.device = (wk_device){WK_DEVICE_META, 0};
  }
  if (o.depth < 0 || o.depth > 255) {
    wk_error(WK_ERR_INVALID_ARG, "module_summary: depth must be between 0 and 255, got %d", o.depth);
    return NULL;
  }
  if (tl_run) {
    wk_error(WK_ERR_INVALID_ARG, "module_summary: a summary is already running on this thread");
    return NULL;
  }
  pthread_once(&g_once, setup);
  if (!g_layer) {
    wk_error(WK_ERR_INTERNAL, "module_summary: dispatch level %d is taken by another layer", SUMMARY_LEVEL);
    return NULL;
  }
  int depth = wk__call_depth;
  wk__call_depth = depth + 1; /* the summary's tensors are its own, not the caller's scope's */
  bool on_meta = wk__device_norm(o.device).type == WK_DEVICE_META;
  wk_options io = {o.dtype, o.device, false};
  wk_tensor *x = on_meta ? wk_empty(sizes, ndim, io) : wk_zeros(sizes, ndim, io);
  wk__call_depth = depth;
  if (!x) return NULL;
  int64_t input_bytes = wk_tensor_numel(x) * (int64_t)wk_dtype_size(o.dtype);
  swap *sw = NULL;
  int nsw = 0;
  run r = {0};
  char *result = NULL;
  int64_t pre = 0, post = 0;
  wk_status s = on_meta ? swap_to_meta(m, &sw, &nsw) : WK_OK;
  if (!s && !(pre = wk_module_register_forward_pre_hook(NULL, pre_hook, &r))) s = wk_last_error();
  if (!s && !(post = wk_module_register_forward_hook(NULL, post_hook, &r))) s = wk_last_error();
  if (!s) {
    if (atomic_fetch_add(&g_users, 1) == 0) wk_layer_set_enabled(g_layer, true);
    bool grad = wk_set_grad_enabled(false);
    tl_run = &r;
    wk_scope_begin();
    wk_tensor *y = wk_module_forward(m, x);
    if (!y) {
      char where[512] = "";
      size_t k = 0;
      for (int i = 0; i < r.nopen && k < sizeof where; i++)
        k += (size_t)snprintf(where + k, sizeof where - k, "%s%s", i ? " > " : "",
                              wk_module_class_name(r.rows[r.open[i]].m));
      s = wk_last_error();
      char *msg = wk__strdup(wk_last_error_message());
      wk_error_replace(s, "module_summary: the forward failed in %s: %s", where, msg ? msg : "");
      free(msg);
    }
    wk_scope_end();
    tl_run = NULL;
    wk_set_grad_enabled(grad);
    if (atomic_fetch_sub(&g_users, 1) == 1) wk_layer_set_enabled(g_layer, false);
  }
  if (pre) wk_module_remove_hook(NULL, pre);
  if (post) wk_module_remove_hook(NULL, post);
  swap_back(sw, nsw);
  wk_unref(x);
  if (!s && !(result = format(&r, o.depth, input_bytes, o.stats)))
    wk_error(WK_ERR_NO_MEMORY, "module_summary: out of memory");
  free(r.rows);
  return result;
}
