/* View ops, registered by the core for every device: they only compute new
 * sizes/strides/offsets over the same storage, so no backend needs them. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define T(n) (args[n].u.t)
#define I(n) (args[n].u.i)

static wk_status ret_view(wk_value *outs, wk_tensor *self, int nd, const int64_t *sz, const int64_t *st,
                          int64_t off) {
  wk_tensor *v = wk__view_of(self, nd, sz, st, off);
  if (!v) return wk_last_error();
  outs[0] = WK_VT(v);
  return WK_OK;
}

/* Resolves one -1 and checks the element count. */
static bool infer_size(const char *op, const wk_tensor *self, const int64_t *in, int n, int64_t *out) {
  int64_t numel = wk_tensor_numel(self), prod = 1;
  int infer = -1;
  char b[256];
  if (n > WK_MAX_DIMS) {
    wk_error(WK_ERR_SHAPE, "%s(): %d dimensions requested, at most %d supported", op, n, WK_MAX_DIMS);
    return false;
  }
  for (int i = 0; i < n; i++) {
    if (in[i] == -1) {
      if (infer >= 0) {
        wk_error(WK_ERR_SHAPE, "%s(): only one dimension can be inferred", op);
        return false;
      }
      infer = i;
    } else if (in[i] < 0) {
      wk_error(WK_ERR_SHAPE, "%s(): invalid shape dimension %lld", op, (long long)in[i]);
      return false;
    } else {
      prod *= in[i];
    }
    out[i] = in[i];
  }
  if (infer >= 0 && prod > 0 && numel % prod == 0) {
    out[infer] = numel / prod;
    return true;
  }
  if (infer < 0 && prod == numel) return true;
  wk_error(WK_ERR_SHAPE, "%s(): shape '%s' is invalid for input of size %lld", op, wk__shape_str(in, n, b, sizeof b),
           (long long)numel);
  return false;
}

/* PyTorch's computeStride: strides for viewing (osz, ost) as nsz, or false. */
static bool compute_stride(const int64_t *osz, const int64_t *ost, int on, const int64_t *nsz, int nn,
                           int64_t *nst) {
  int64_t numel = 1;
  for (int i = 0; i < on; i++) numel *= osz[i];
  if (numel == 0 || on == 0) {
    wk__contiguous_strides(nsz, nn, nst);
    return true;
  }
  int view_d = nn - 1;
  int64_t chunk_base = ost[on - 1], tensor_numel = 1, view_numel = 1;
  for (int td = on - 1; td >= 0; td--) {
    tensor_numel *= osz[td];
    if (td == 0 || (osz[td - 1] != 1 && ost[td - 1] != tensor_numel * chunk_base)) {
      while (view_d >= 0 && (view_numel < tensor_numel || nsz[view_d] == 1)) {
        nst[view_d] = view_numel * chunk_base;
        view_numel *= nsz[view_d];
        view_d--;
      }
      if (view_numel != tensor_numel) return false;
      if (td > 0) {
        chunk_base = ost[td - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

static wk_status k_view(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  wk_tensor *self = T(0);
  int64_t sz[WK_MAX_DIMS], st[WK_MAX_DIMS];
  if (!infer_size("view", self, args[1].u.ints, args[1].len, sz)) return wk_last_error();
  if (!compute_stride(self->sizes, self->strides, self->ndim, sz, args[1].len, st))
    return wk_error(WK_ERR_SHAPE, "view(): view size is not compatible with input tensor's size and stride "
                    "(at least one dimension spans across two contiguous subspaces). Use reshape(...) instead.");
  return ret_view(outs, self, args[1].len, sz, st, self->offset);
}

static wk_status k_reshape(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  wk_tensor *self = T(0);
  int64_t sz[WK_MAX_DIMS], st[WK_MAX_DIMS];
  int n = args[1].len;
  if (!infer_size("reshape", self, args[1].u.ints, n, sz)) return wk_last_error();
  if (compute_stride(self->sizes, self->strides, self->ndim, sz, n, st))
    return ret_view(outs, self, n, sz, st, self->offset);
  wk_tensor *cont = wk_clone(self);
  if (!cont) return wk_last_error();
  wk__contiguous_strides(sz, n, st);
  wk_status s = ret_view(outs, cont, n, sz, st, cont->offset);
  wk_release(cont);
  return s;
}

static wk_status k_permute(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  wk_tensor *self = T(0);
  int n = args[1].len;
  if (n != self->ndim)
    return wk_error(WK_ERR_SHAPE, "permute(): number of dims don't match in permute (input has %d, dims has %d)",
                    self->ndim, n);
  int64_t sz[WK_MAX_DIMS], st[WK_MAX_DIMS];
  bool seen[WK_MAX_DIMS] = {0}, ok;
  for (int i = 0; i < n; i++) {
    int d = wk__wrap_dim("permute", args[1].u.ints[i], n, &ok);
    if (!ok) return wk_last_error();
    if (seen[d]) return wk_error(WK_ERR_INVALID_ARG, "permute(): repeated dim %d in permute", d);
    seen[d] = true;
    sz[i] = self->sizes[d];
    st[i] = self->strides[d];
  }
  return ret_view(outs, self, n, sz, st, self->offset);
}

static wk_status transpose_impl(const char *op, wk_tensor *self, int64_t d0, int64_t d1, wk_value *outs) {
  bool ok0, ok1;
  int a = wk__wrap_dim(op, d0, self->ndim, &ok0);
  if (!ok0) return wk_last_error();
  int b = wk__wrap_dim(op, d1, self->ndim, &ok1);
  if (!ok1) return wk_last_error();
  int64_t sz[WK_MAX_DIMS], st[WK_MAX_DIMS];
  memcpy(sz, self->sizes, sizeof sz);
  memcpy(st, self->strides, sizeof st);
  if (self->ndim > 0) {
    sz[a] = self->sizes[b];
    sz[b] = self->sizes[a];
    st[a] = self->strides[b];
    st[b] = self->strides[a];
  }
  return ret_view(outs, self, self->ndim, sz, st, self->offset);
}

static wk_status k_transpose(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  return transpose_impl("transpose", T(0), I(1), I(2), outs);
}

static wk_status k_t(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  wk_tensor *self = T(0);
  if (self->ndim > 2)
    return wk_error(WK_ERR_SHAPE, "t(): expects a tensor with <= 2 dimensions, but self is %dD", self->ndim);
  return transpose_impl("t", self, 0, self->ndim < 2 ? 0 : 1, outs);
}

static wk_status slice_impl(const char *op, wk_tensor *self, int64_t dim, int64_t start, int64_t end, int64_t step,
                            wk_value *outs) {
  bool ok;
  if (self->ndim == 0) return wk_error(WK_ERR_SHAPE, "%s(): cannot be applied to a 0-dim tensor", op);
  int d = wk__wrap_dim(op, dim, self->ndim, &ok);
  if (!ok) return wk_last_error();
  if (step <= 0) return wk_error(WK_ERR_INVALID_ARG, "%s(): slice step must be positive, got %lld", op, (long long)step);
  int64_t n = self->sizes[d];
  if (start < 0) start += n;
  if (end < 0) end += n;
  if (start < 0) start = 0;
  if (start > n) start = n;
  if (end < start) end = start;
  if (end > n) end = n;
  int64_t sz[WK_MAX_DIMS], st[WK_MAX_DIMS];
  memcpy(sz, self->sizes, sizeof sz);
  memcpy(st, self->strides, sizeof st);
  sz[d] = (end - start + step - 1) / step;
  st[d] = self->strides[d] * step;
  return ret_view(outs, self, self->ndim, sz, st, self->offset + start * self->strides[d]);
}

static wk_status k_slice(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  int64_t start = args[2].tag == WK_V_NONE ? 0 : I(2);
  int64_t end = args[3].tag == WK_V_NONE ? INT64_MAX : I(3);
  return slice_impl("slice", T(0), I(1), start, end, I(4), outs);
}

static wk_status k_narrow(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  wk_tensor *self = T(0);
  bool ok;
  if (self->ndim == 0) return wk_error(WK_ERR_SHAPE, "narrow(): cannot be applied to a 0-dim tensor");
  int d = wk__wrap_dim("narrow", I(1), self->ndim, &ok);
  if (!ok) return wk_last_error();
  int64_t start = I(2), len = I(3), n = self->sizes[d];
  if (start < 0) start += n;
  if (start < 0 || len < 0 || start + len > n)
    return wk_error(WK_ERR_INDEX, "narrow(): start (%lld) + length (%lld) exceeds dimension size (%lld)",
                    (long long)I(2), (long long)len, (long long)n);
  return slice_impl("narrow", self, d, start, start + len, 1, outs);
}

static wk_status k_select(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  wk_tensor *self = T(0);
  bool ok;
  if (self->ndim == 0) return wk_error(WK_ERR_SHAPE, "select(): cannot be applied to a 0-dim tensor");
  int d = wk__wrap_dim("select", I(1), self->ndim, &ok);
  if (!ok) return wk_last_error();
  int64_t idx = I(2), n = self->sizes[d];
  if (idx < -n || idx >= n)
    return wk_error(WK_ERR_INDEX, "select(): index %lld out of range for tensor of size %lld at dimension %d",
                    (long long)idx, (long long)n, d);
  if (idx < 0) idx += n;
  int64_t sz[WK_MAX_DIMS], st[WK_MAX_DIMS];
  int k = 0;
  for (int i = 0; i < self->ndim; i++)
    if (i != d) {
      sz[k] = self->sizes[i];
      st[k++] = self->strides[i];
    }
  return ret_view(outs, self, k, sz, st, self->offset + idx * self->strides[d]);
}

static wk_status k_expand(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  wk_tensor *self = T(0);
  const int64_t *want = args[1].u.ints;
  int n = args[1].len;
  char a[256], b[256];
  if (n < self->ndim || n > WK_MAX_DIMS)
    return wk_error(WK_ERR_SHAPE, "expand(): the number of sizes provided (%d) must be greater or equal to the "
                    "number of dimensions in the tensor (%d)", n, self->ndim);
  int64_t sz[WK_MAX_DIMS], st[WK_MAX_DIMS];
  for (int i = n - 1; i >= 0; i--) {
    int j = i - (n - self->ndim);
    if (j < 0) {
      if (want[i] < 0)
        return wk_error(WK_ERR_SHAPE, "expand(): -1 is not allowed in a leading, non-existing dimension");
      sz[i] = want[i];
      st[i] = 0;
    } else if (want[i] == -1 || want[i] == self->sizes[j]) {
      sz[i] = self->sizes[j];
      st[i] = self->strides[j];
    } else if (self->sizes[j] == 1 && want[i] >= 0) {
      sz[i] = want[i];
      st[i] = 0;
    } else {
      return wk_error(WK_ERR_SHAPE, "expand(): the expanded size of the tensor (%lld) must match the existing size "
                      "(%lld) at non-singleton dimension %d. Target sizes: %s. Tensor sizes: %s",
                      (long long)want[i], (long long)self->sizes[j], i, wk__shape_str(want, n, a, sizeof a),
                      wk__shape_str(self->sizes, self->ndim, b, sizeof b));
    }
  }
  return ret_view(outs, self, n, sz, st, self->offset);
}

static wk_status k_squeeze(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  wk_tensor *self = T(0);
  int64_t sz[WK_MAX_DIMS], st[WK_MAX_DIMS];
  int k = 0;
  for (int i = 0; i < self->ndim; i++)
    if (self->sizes[i] != 1) {
      sz[k] = self->sizes[i];
      st[k++] = self->strides[i];
    }
  return ret_view(outs, self, k, sz, st, self->offset);
}

static wk_status k_squeeze_dim(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  wk_tensor *self = T(0);
  bool ok;
  int d = wk__wrap_dim("squeeze", I(1), self->ndim, &ok);
  if (!ok) return wk_last_error();
  if (self->ndim == 0 || self->sizes[d] != 1) return ret_view(outs, self, self->ndim, self->sizes, self->strides, self->offset);
  int64_t sz[WK_MAX_DIMS], st[WK_MAX_DIMS];
  int k = 0;
  for (int i = 0; i < self->ndim; i++)
    if (i != d) {
      sz[k] = self->sizes[i];
      st[k++] = self->strides[i];
    }
  return ret_view(outs, self, k, sz, st, self->offset);
}

static wk_status k_unsqueeze(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  wk_tensor *self = T(0);
  bool ok;
  if (self->ndim == WK_MAX_DIMS) return wk_error(WK_ERR_SHAPE, "unsqueeze(): tensor already has %d dims", WK_MAX_DIMS);
  int d = wk__wrap_dim("unsqueeze", I(1), self->ndim + 1, &ok);
  if (!ok) return wk_last_error();
  int64_t sz[WK_MAX_DIMS], st[WK_MAX_DIMS];
  int k = 0;
  for (int i = 0; i <= self->ndim; i++) {
    if (i == d) {
      sz[k] = 1;
      st[k++] = d < self->ndim ? self->sizes[d] * self->strides[d] : 1;
    }
    if (i < self->ndim) {
      sz[k] = self->sizes[i];
      st[k++] = self->strides[i];
    }
  }
  return ret_view(outs, self, k, sz, st, self->offset);
}

static wk_status k_flatten(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  wk_tensor *self = T(0);
  bool ok;
  if (self->ndim == 0) {
    int64_t one = 1;
    wk_tensor *r = wk_reshape(self, &one, 1);
    if (!r) return wk_last_error();
    outs[0] = WK_VT(r);
    return WK_OK;
  }
  int s = wk__wrap_dim("flatten", I(1), self->ndim, &ok);
  if (!ok) return wk_last_error();
  int e = wk__wrap_dim("flatten", I(2), self->ndim, &ok);
  if (!ok) return wk_last_error();
  if (s > e) return wk_error(WK_ERR_INVALID_ARG, "flatten(): start_dim cannot come after end_dim");
  int64_t sz[WK_MAX_DIMS];
  int k = 0;
  for (int i = 0; i < s; i++) sz[k++] = self->sizes[i];
  int64_t m = 1;
  for (int i = s; i <= e; i++) m *= self->sizes[i];
  sz[k++] = m;
  for (int i = e + 1; i < self->ndim; i++) sz[k++] = self->sizes[i];
  wk_tensor *r = wk_reshape(self, sz, k);
  if (!r) return wk_last_error();
  outs[0] = WK_VT(r);
  return WK_OK;
}

static wk_status k_contiguous(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  wk_tensor *self = T(0);
  if (wk_tensor_is_contiguous(self)) return ret_view(outs, self, self->ndim, self->sizes, self->strides, self->offset);
  wk_tensor *r = wk_clone(self);
  if (!r) return wk_last_error();
  outs[0] = WK_VT(r);
  return WK_OK;
}

static wk_status k_as_strided(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  wk_tensor *self = T(0);
  int n = args[1].len;
  if (args[2].len != n)
    return wk_error(WK_ERR_SHAPE, "as_strided(): mismatch in length of strides (%d) and shape (%d)", args[2].len, n);
  if (n > WK_MAX_DIMS) return wk_error(WK_ERR_SHAPE, "as_strided(): too many dimensions (%d)", n);
  int64_t off = args[3].tag == WK_V_NONE ? self->offset : I(3);
  if (off < 0) return wk_error(WK_ERR_INVALID_ARG, "as_strided(): negative storage offset %lld", (long long)off);
  int64_t last = off;
  bool empty = false;
  for (int i = 0; i < n; i++) {
    if (args[1].u.ints[i] < 0 || args[2].u.ints[i] < 0)
      return wk_error(WK_ERR_INVALID_ARG, "as_strided(): negative size or stride at dimension %d", i);
    if (args[1].u.ints[i] == 0) empty = true;
    last += (args[1].u.ints[i] - 1) * args[2].u.ints[i];
  }
  size_t es = wk_dtype_size(self->dtype);
  if (!empty && (size_t)(last + 1) * es > self->storage->nbytes)
    return wk_error(WK_ERR_INDEX, "as_strided(): setStorage: sizes and strides reach element %lld, out of bounds "
                    "for storage of %zu elements", (long long)last, self->storage->nbytes / es);
  return ret_view(outs, self, n, args[1].u.ints, args[2].u.ints, off);
}

static wk_status k_alias(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  wk_tensor *self = T(0);
  return ret_view(outs, self, self->ndim, self->sizes, self->strides, self->offset);
}

/* split / split_with_sizes / chunk: narrow views, returned as a malloc'd list. */
static wk_status split_sizes(const char *op, wk_tensor *self, int64_t dim, const int64_t *sizes, int64_t n,
                             wk_value *outs) {
  bool ok;
  if (self->ndim == 0) return wk_error(WK_ERR_SHAPE, "%s(): cannot be applied to a 0-dim tensor", op);
  int d = wk__wrap_dim(op, dim, self->ndim, &ok);
  if (!ok) return wk_last_error();
  wk_tensor **list = wk_calloc((size_t)(n ? n : 1), sizeof *list);
  if (!list) return wk_error(WK_ERR_NO_MEMORY, "%s(): out of memory", op);
  int64_t start = 0;
  for (int64_t i = 0; i < n; i++) {
    /* through the dispatcher, so autograd records each piece as a slice */
    list[i] = wk_slice(self, d, start, start + sizes[i], 1);
    if (!list[i]) {
      for (int64_t j = 0; j < i; j++) wk_release(list[j]);
      free(list);
      return wk_last_error();
    }
    start += sizes[i];
  }
  outs[0] = WK_VTS(list, n);
  return WK_OK;
}

static wk_status k_split(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  wk_tensor *self = T(0);
  bool ok;
  int64_t ss = I(1);
  if (self->ndim == 0) return wk_error(WK_ERR_SHAPE, "split(): cannot be applied to a 0-dim tensor");
  int d = wk__wrap_dim("split", I(2), self->ndim, &ok);
  if (!ok) return wk_last_error();
  int64_t n = self->sizes[d];
  if (ss < 0 || (ss == 0 && n != 0))
    return wk_error(WK_ERR_INVALID_ARG, "split(): split_size can only be 0 if dimension size is 0, but got %lld",
                    (long long)ss);
  int64_t cnt = ss ? (n + ss - 1) / ss : 1;
  if (cnt == 0) cnt = 1;
  int64_t *sizes = wk_malloc(sizeof(int64_t) * (size_t)cnt);
  if (!sizes) return wk_error(WK_ERR_NO_MEMORY, "split(): out of memory");
  for (int64_t i = 0; i < cnt; i++) sizes[i] = ss ? (i == cnt - 1 ? n - ss * (cnt - 1) : ss) : 0;
  wk_status s = split_sizes("split", self, d, sizes, cnt, outs);
  free(sizes);
  return s;
}

static wk_status k_split_with_sizes(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  wk_tensor *self = T(0);
  bool ok;
  if (self->ndim == 0) return wk_error(WK_ERR_SHAPE, "split_with_sizes(): cannot be applied to a 0-dim tensor");
  int d = wk__wrap_dim("split_with_sizes", I(2), self->ndim, &ok);
  if (!ok) return wk_last_error();
  int64_t sum = 0;
  for (int i = 0; i < args[1].len; i++) {
    if (args[1].u.ints[i] < 0)
      return wk_error(WK_ERR_INVALID_ARG, "split_with_sizes(): split size %lld is negative", (long long)args[1].u.ints[i]);
    sum += args[1].u.ints[i];
  }
  if (sum != self->sizes[d])
    return wk_error(WK_ERR_SHAPE, "split_with_sizes(): split sizes sum to %lld, but the tensor has %lld at dim %d",
                    (long long)sum, (long long)self->sizes[d], d);
  return split_sizes("split_with_sizes", self, d, args[1].u.ints, args[1].len, outs);
}

static wk_status k_chunk(const wk_kernel_ctx *c, const wk_value *args, wk_value *outs) {
  (void)c;
  wk_tensor *self = T(0);
  bool ok;
  int64_t chunks = I(1);
  if (chunks <= 0) return wk_error(WK_ERR_INVALID_ARG, "chunk(): number of chunks must be greater than 0, got %lld", (long long)chunks);
  if (self->ndim == 0) return wk_error(WK_ERR_SHAPE, "chunk(): cannot be applied to a 0-dim tensor");
  int d = wk__wrap_dim("chunk", I(2), self->ndim, &ok);
  if (!ok) return wk_last_error();
  int64_t n = self->sizes[d];
  int64_t ss = (n + chunks - 1) / chunks;
  wk_value a[3] = {WK_VT(self), WK_VI(ss), WK_VI(d)};
  return k_split(c, a, outs);
}

typedef struct {
  const char *op;
  wk_kernel_fn fn;
} core_kernel;

void wk__views_register(void);
void wk__views_register(void) {
  static const core_kernel ks[] = {
      {"view", k_view},         {"reshape", k_reshape},   {"permute", k_permute},
      {"transpose", k_transpose}, {"t", k_t},             {"slice", k_slice},
      {"narrow", k_narrow},     {"select", k_select},     {"expand", k_expand},
      {"squeeze", k_squeeze},   {"squeeze.dim", k_squeeze_dim}, {"unsqueeze", k_unsqueeze},
      {"flatten", k_flatten},   {"contiguous", k_contiguous}, {"as_strided", k_as_strided},
      {"alias", k_alias},       {"split", k_split},       {"split_with_sizes", k_split_with_sizes},
      {"chunk", k_chunk}};
  for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
    wk_kernel_desc d = {sizeof d, ks[i].op, WK_DEVICE_DEFAULT, WK_PRIORITY_REFERENCE, ks[i].fn, NULL, NULL, "core.view"};
    wk_kernel_register(&d);
  }
}
