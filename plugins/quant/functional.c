/* quant plugin: PyTorch's FloatFunctional / QFunctional (add, add_relu, cat)
 * and the quantizable ResNet BasicBlock.
 *
 * FloatFunctional is a float module a model calls where it would add or
 * concatenate tensors, so prepare can put an observer on the result and
 * convert can swap in QFunctional, which computes on quantized inputs and
 * quantizes its result with the observed q-params, as PyTorch's
 * torch.ops.quantized.add / add_relu / cat do: every input dequantized
 * ((q - zero_point) * scale in float32), the float op, quantized with
 * zero_point + nearbyint(y / scale). (PyTorch's vectorised dequantize uses a
 * fused multiply-add, q * scale + (-zero_point * scale), which can differ in
 * the last bit: at most one quantum, near rounding ties.) The output
 * q-params are the module's "scale" and "zero_point" buffers, read at each
 * forward, so a loaded state dict takes effect.
 *
 * QuantizableBasicBlock is what wk_quant_fuse makes of torchvision's
 * BasicBlock (or of every block of a ResNet): conv1+bn1+relu folded into a
 * ConvReLU2d, conv2+bn2 and the downsample conv+bn folded into Conv2d, and
 * the residual sum with its final ReLU in a FloatFunctional "add_relu" (as
 * torchvision's QuantizableBasicBlock), so prepare and convert handle each
 * part like any other module. */
#include "quant.h"

enum { FF_ADD = 0, FF_ADD_RELU = 1, FF_CAT = 2 };
static const char *const ff_names[] = {"add", "add_relu", "cat"};

typedef struct {
  int op;
  int64_t dim;
} ff_state;

static wk_tensor *ff_float(const ff_state *s, const char *cls, wk_tensor *const *in, int n) {
  if (s->op != FF_CAT && n != 2) {
    wk_error(WK_ERR_INVALID_ARG, "%s.%s: expected 2 inputs, got %d", cls, ff_names[s->op], n);
    return NULL;
  }
  if (s->op == FF_CAT && n < 1) {
    wk_error(WK_ERR_INVALID_ARG, "%s.cat: expected at least 1 input, got %d", cls, n);
    return NULL;
  }
  for (int i = 0; i < n; i++)
    if (!in[i]) {
      wk_error(WK_ERR_NULL, "%s.%s: input %d is NULL", cls, ff_names[s->op], i);
      return NULL;
    }
  if (s->op == FF_CAT) return wk_cat(in, n, s->dim);
  wk_tensor *y = wk_add(in[0], in[1]);
  return s->op == FF_ADD_RELU ? wk_relu(y) : y;
}

static wk_tensor *ff_forward(wk_module *self, wk_tensor *const *in, int n) {
  const ff_state *s = wk_module_state(self);
  for (int i = 0; i < n; i++)
    if (in[i] && wk_dtype_is_quantized(wk_tensor_dtype(in[i]))) {
      wk_error(WK_ERR_DTYPE, "FloatFunctional.%s: input %d is quantized (%s); convert the model first", ff_names[s->op],
               i, wk_dtype_name(wk_tensor_dtype(in[i])));
      return NULL;
    }
  wk_scope_begin();
  return qt_ret(ff_float(s, "FloatFunctional", in, n));
}

static char *ff_repr(const wk_module *self) {
  const ff_state *s = wk_module_state(self);
  return s->op == FF_CAT ? qt_strf("op=cat, dim=%lld", (long long)s->dim) : qt_strf("op=%s", ff_names[s->op]);
}

static const wk_module_class C_FF = {sizeof(wk_module_class), "FloatFunctional", ff_forward, free, ff_repr};

wk_module *qt_float_functional(const char *op, int64_t dim) {
  if (!op) {
    wk_error(WK_ERR_NULL, "float_functional: argument 'op' is NULL");
    return NULL;
  }
  int k = -1;
  for (int i = 0; i < 3; i++)
    if (!strcmp(op, ff_names[i])) k = i;
  if (k < 0) {
    wk_error(WK_ERR_INVALID_ARG, "float_functional: unknown op '%s' (expected \"add\", \"add_relu\" or \"cat\")", op);
    return NULL;
  }
  ff_state *s = malloc(sizeof *s);
  if (!s) {
    wk_error(WK_ERR_NO_MEMORY, "float_functional: out of memory");
    return NULL;
  }
  *s = (ff_state){k, dim};
  wk_module *m = wk_module_new(&C_FF, s);
  if (!m) free(s);
  return m;
}

bool qt_is_float_functional(const wk_module *m) { return m && !strcmp(wk_module_class_name(m), "FloatFunctional"); }

/* ---- QFunctional ------------------------------------------------------------------------------ */
static wk_tensor *qf_forward(wk_module *self, wk_tensor *const *in, int n) {
  const ff_state *s = wk_module_state(self);
  double scale;
  int64_t zp;
  if (wk_item(wk_module_buffer(self, "scale"), &scale) || wk_item_i64(wk_module_buffer(self, "zero_point"), &zp))
    return NULL;
  for (int i = 0; i < n; i++) {
    if (!in[i]) {
      wk_error(WK_ERR_NULL, "QFunctional.%s: input %d is NULL", ff_names[s->op], i);
      return NULL;
    }
    if (wk_tensor_dtype(in[i]) != WK_QUINT8 || wk_tensor_qscheme(in[i]) != WK_PER_TENSOR_AFFINE) {
      wk_error(WK_ERR_DTYPE, "QFunctional.%s: input %d must be a per-tensor quantized quint8 tensor, got %s%s",
               ff_names[s->op], i, wk_dtype_name(wk_tensor_dtype(in[i])),
               wk_tensor_qscheme(in[i]) == WK_PER_CHANNEL_AFFINE ? " (per channel)" : "");
      return NULL;
    }
  }
  if (s->op != FF_CAT && n == 2 && qt_qadd_applies(in[0], in[1])) /* one pass over the integers */
    return qt_qadd(in[0], in[1], scale, zp, s->op == FF_ADD_RELU);
  wk_scope_begin();
  wk_tensor *f[64];
  if (n > 64) {
    wk_error(WK_ERR_UNSUPPORTED, "QFunctional.%s: more than 64 inputs", ff_names[s->op]);
    return qt_ret(NULL);
  }
  for (int i = 0; i < n; i++) f[i] = wk_dequantize(in[i]);
  wk_tensor *y = ff_float(s, "QFunctional", f, n);
  return qt_ret(y ? wk_quantize_per_tensor(y, scale, zp, WK_QUINT8) : NULL);
}

static char *qf_repr(const wk_module *self) {
  const ff_state *s = wk_module_state(self);
  double scale = NAN;
  int64_t zp = 0;
  if (wk_item(wk_module_buffer((wk_module *)self, "scale"), &scale) ||
      wk_item_i64(wk_module_buffer((wk_module *)self, "zero_point"), &zp))
    wk_clear_error();
  char sc[48];
  return qt_strf("op=%s, scale=%s, zero_point=%lld", ff_names[s->op], qt_pyfloat(scale, sc), (long long)zp);
}

static const wk_module_class C_QF = {sizeof(wk_module_class), "QFunctional", qf_forward, free, qf_repr};

wk_module *qt_qfunctional(const wk_module *float_functional, double scale, int64_t zp) {
  const ff_state *fs = wk_module_state((wk_module *)float_functional);
  ff_state *s = malloc(sizeof *s);
  if (!s) {
    wk_error(WK_ERR_NO_MEMORY, "QFunctional: out of memory");
    return NULL;
  }
  *s = *fs;
  wk_module *m = wk_module_new(&C_QF, s);
  if (!m) {
    free(s);
    return NULL;
  }
  wk_scope_begin();
  wk_status st = qt_buffer(m, "scale", wk_scalar_tensor(scale, WK_F64));
  if (!st) st = qt_buffer(m, "zero_point", wk_scalar_tensor((double)zp, WK_I64));
  wk_scope_end();
  if (st) {
    wk_module_release(m);
    return NULL;
  }
  return m;
}

/* ---- QuantizableBasicBlock ---------------------------------------------------------------------- */
static wk_tensor *qblock_forward(wk_module *self, wk_tensor *const *in, int n) {
  if (!qt_one_input("QuantizableBasicBlock", in, n)) return NULL;
  wk_scope_begin();
  wk_tensor *x = in[0];
  wk_tensor *o = wk_module_forward(wk_module_child(self, "conv2"), wk_module_forward(wk_module_child(self, "conv1"), x));
  wk_module *ds = wk_module_child(self, "downsample");
  if (!ds && o) wk_clear_error(); /* no downsample: the identity */
  wk_tensor *id = ds ? wk_module_forward(ds, x) : x;
  wk_tensor *pair[2] = {o, id};
  return qt_ret(o && id ? wk_module_forward_n(wk_module_child(self, "add_relu"), pair, 2) : NULL);
}

static const wk_module_class C_QBLOCK = {sizeof(wk_module_class), "QuantizableBasicBlock", qblock_forward, NULL, NULL};

wk_module *qt_quantizable_block(wk_module *conv1_relu, wk_module *conv2, wk_module *downsample) {
  /* every argument's reference is taken (released on failure) */
  wk_module *m = wk_module_new(&C_QBLOCK, NULL);
  wk_status st = qt_child(m, "conv1", conv1_relu);
  if (st) {
    wk_module_release(conv2);
    wk_module_release(downsample);
  } else {
    st = qt_child(m, "conv2", conv2);
    if (st)
      wk_module_release(downsample);
    else if (downsample)
      st = qt_child(m, "downsample", downsample);
  }
  if (!st) st = qt_child(m, "add_relu", qt_float_functional("add_relu", 0));
  if (st) {
    wk_module_release(m);
    return NULL;
  }
  return m;
}
