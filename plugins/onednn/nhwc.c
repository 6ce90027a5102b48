/* onednn plugin: channels_last (NHWC strides on NCHW tensors, the core's
 * WK_CHANNELS_LAST) for the conv, batch_norm and pooling kernels. A kernel
 * given a channels-last input describes it to oneDNN by the nhwc tag (acdb),
 * so the primitive reads and writes it in place, and allocates its result
 * channels-last too (PyTorch's suggest_memory_format rule), so the next layer
 * gets NHWC again: a conv -> batch_norm -> relu -> conv chain reorders only
 * its weights (cached, wcache.c). */
#include <string.h>

#include "onednn.h"

void odn_md_nhwc(dnnl_memory_desc_t *md, const int64_t dims[4], dnnl_data_type_t dt) {
  dnnl_dims_t d = {dims[0], dims[1], dims[2], dims[3]};
  memset(md, 0, sizeof *md);
  odn.memory_desc_init_by_tag(md, 4, d, dt, dnnl_nhwc);
}

bool odn_is_nhwc(const wk_tensor *t) {
  return t && wk_tensor_dim(t) == 4 && wk_suggest_memory_format(t) == WK_CHANNELS_LAST;
}

bool odn_conv_nhwc(const wk_tensor *x, const wk_tensor *w) {
  /* PyTorch's mkldnn_conv_use_channels_last: the input's or the weight's format */
  return wk_tensor_dim(x) == 4 && (odn_is_nhwc(x) || odn_is_nhwc(w));
}

static wk_tensor *meta_empty_format(const wk_kernel_ctx *ctx, int i, wk_memory_format f) {
  const wk_meta_out *m = wk_kernel_meta(ctx, i);
  if (!m || m->ndim != 4 || f != WK_CHANNELS_LAST) return wk_meta_empty(ctx, i);
  wk_options o = {0};
  o.dtype = m->dtype;
  o.device = ctx->device;
  return wk_empty_format(m->sizes, 4, o, WK_CHANNELS_LAST);
}

wk_tensor *odn_meta_empty_nhwc(const wk_kernel_ctx *ctx, int i) {
  return meta_empty_format(ctx, i, WK_CHANNELS_LAST);
}

wk_tensor *odn_meta_empty_like_format(const wk_kernel_ctx *ctx, int i, const wk_tensor *like) {
  return meta_empty_format(ctx, i, odn_is_nhwc(like) ? WK_CHANNELS_LAST : WK_CONTIGUOUS_FORMAT);
}

/* ---- batch statistics of NHWC data ------------------------------------------------------- */
/* Per channel, in double, over `rows` rows of C values: the mean, then the
 * mean squared deviation from it (two passes, as stats_range in norm.c does
 * for NCHW). One task per block of channels, each row's block one cache line
 * or two: the sums' order is fixed, so the result does not depend on the
 * thread count. */
typedef struct {
  const float *x;
  int64_t rows, C;
  double *mean, *var;
} nhwc_stats_job;

#define ODN_STAT_BLOCK 16

static void nhwc_stats_range(void *p, int64_t b0, int64_t b1) {
  const nhwc_stats_job *j = p;
  for (int64_t b = b0; b < b1; b++) {
    int64_t c0 = b * ODN_STAT_BLOCK, nc = j->C - c0 < ODN_STAT_BLOCK ? j->C - c0 : ODN_STAT_BLOCK;
    double sum[ODN_STAT_BLOCK] = {0}, sq[ODN_STAT_BLOCK] = {0}, m[ODN_STAT_BLOCK];
    for (int64_t r = 0; r < j->rows; r++) {
      const float *row = j->x + r * j->C + c0;
      for (int64_t c = 0; c < nc; c++) sum[c] += row[c];
    }
    for (int64_t c = 0; c < nc; c++) m[c] = sum[c] / (double)j->rows;
    for (int64_t r = 0; r < j->rows; r++) {
      const float *row = j->x + r * j->C + c0;
      for (int64_t c = 0; c < nc; c++) {
        double d = row[c] - m[c];
        sq[c] += d * d;
      }
    }
    for (int64_t c = 0; c < nc; c++) {
      j->mean[c0 + c] = m[c];
      j->var[c0 + c] = sq[c] / (double)j->rows;
    }
  }
}

void odn_nhwc_stats(const float *x, int64_t rows, int64_t C, double *mean, double *var) {
  nhwc_stats_job j = {x, rows, C, mean, var};
  wk_parallel_for(0, (C + ODN_STAT_BLOCK - 1) / ODN_STAT_BLOCK, 1, nhwc_stats_range, &j);
}
