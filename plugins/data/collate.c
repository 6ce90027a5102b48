/* data plugin: collate building blocks for user collate functions: the
 * default collate (stack every field) and PyTorch's pad_sequence. */
#include "data.h"

wk_status dt_collate_default(const wk_sample *samples, int64_t n, wk_sample *out) {
  if (!samples || !out)
    return wk_error(WK_ERR_NULL, "collate_default: argument '%s' is NULL", !samples ? "samples" : "out");
  return dt_collate_stack(samples, n, out);
}

/* [L_i, *] sequences -> [B, max L, *] (batch_first) or [max L, B, *], the
 * tail of each shorter sequence filled with padding_value. */
wk_tensor *dt_pad_sequence(wk_tensor *const *seqs, int64_t n, bool batch_first, double padding_value) {
  if (!seqs) {
    wk_error(WK_ERR_NULL, "pad_sequence: argument 'seqs' is NULL");
    return NULL;
  }
  if (n < 1) {
    wk_error(WK_ERR_INVALID_ARG, "pad_sequence: received an empty list of sequences");
    return NULL;
  }
  for (int64_t i = 0; i < n; i++)
    if (!seqs[i]) {
      wk_error(WK_ERR_NULL, "pad_sequence: sequence %lld is NULL", (long long)i);
      return NULL;
    }
  wk_tensor *s0 = seqs[0];
  int nd = wk_tensor_dim(s0);
  wk_dtype dt = wk_tensor_dtype(s0);
  if (nd < 1 || nd >= WK_MAX_DIMS) {
    wk_error(WK_ERR_SHAPE, "pad_sequence: sequences must have 1 to %d dims ([L, *]), sequence 0 has %d",
             WK_MAX_DIMS - 1, nd);
    return NULL;
  }
  int64_t maxlen = 0;
  for (int64_t i = 0; i < n; i++) {
    wk_tensor *s = seqs[i];
    if (wk_tensor_dtype(s) != dt || wk_tensor_dim(s) != nd ||
        memcmp(wk_tensor_sizes(s) + 1, wk_tensor_sizes(s0) + 1, sizeof(int64_t) * (size_t)(nd - 1)) != 0) {
      char a[160], b[160];
      wk_error(WK_ERR_SHAPE,
               "pad_sequence: sequence %lld is %s %s but sequence 0 is %s %s: the dtype and the sizes after "
               "dim 0 must match",
               (long long)i, wk_dtype_name(wk_tensor_dtype(s)),
               wk_sizes_str(wk_tensor_sizes(s), wk_tensor_dim(s), a, sizeof a), wk_dtype_name(dt),
               wk_sizes_str(wk_tensor_sizes(s0), nd, b, sizeof b));
      return NULL;
    }
    if (wk_tensor_device(s).type != WK_DEVICE_CPU) {
      wk_error(WK_ERR_DEVICE, "pad_sequence: sequence %lld is not on the cpu", (long long)i);
      return NULL;
    }
    if (wk_tensor_size(s, 0) > maxlen) maxlen = wk_tensor_size(s, 0);
  }
  int64_t sizes[WK_MAX_DIMS];
  memcpy(sizes + 1, wk_tensor_sizes(s0), sizeof(int64_t) * (size_t)nd);
  sizes[0] = batch_first ? n : maxlen;
  sizes[1] = batch_first ? maxlen : n;
  wk_tensor *o = wk_full(sizes, nd + 1, padding_value, (wk_options){.dtype = dt});
  if (!o) return NULL;
  size_t es = wk_dtype_size(dt), row = es; /* bytes of one step [*] */
  for (int d = 1; d < nd; d++) row *= (size_t)sizes[d + 1];
  char *dst = wk_tensor_data(o);
  for (int64_t i = 0; i < n; i++) {
    wk_tensor *c = wk_tensor_is_contiguous(seqs[i]) ? wk_retain(seqs[i]) : wk_contiguous(seqs[i]);
    if (!c) {
      wk_release(o);
      return NULL;
    }
    const char *src = wk_tensor_data(c);
    int64_t L = wk_tensor_size(c, 0);
    if (batch_first) {
      if (L && row) memcpy(dst + (size_t)i * (size_t)maxlen * row, src, (size_t)L * row);
    } else {
      for (int64_t t = 0; t < L && row; t++)
        memcpy(dst + ((size_t)t * (size_t)n + (size_t)i) * row, src + (size_t)t * row, row);
    }
    wk_release(c);
  }
  return o;
}
