/* cpu plugin: max_pool2d_with_indices and its backward on channels_last f32
 * input (NHWC strides on [N, C, H, W], the core's WK_CHANNELS_LAST): each
 * output pixel takes the maximum of its window over a row of C contiguous
 * values at a time, and the result and the indices are channels-last too
 * (PyTorch's rule), so the layer after the stem pooling gets NHWC again. The
 * NCHW kernels (pool.c, conv_backward.c) would read the input with a stride of
 * C and write a row-major result. Same comparison as theirs: the first valid
 * position is the initial argmax, and a value replaces the running maximum
 * when greater or NaN. */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "cpu.h"

typedef struct {
  const float *x;
  float *y, *g;
  const float *go;
  int64_t *ind;
  const int64_t *cind;
  int64_t N, C, H, W, oh, ow, k[2], s[2], p[2], d[2];
  atomic_bool bad;
} mpn_job;

static void mpn_fwd(void *v, int64_t b, int64_t e) {
  mpn_job *j = v;
  const int64_t C = j->C, H = j->H, W = j->W, oh = j->oh, ow = j->ow;
  for (int64_t r = b; r < e; r++) { /* r = n * oh + i: one row of output pixels */
    int64_t n = r / oh, i = r % oh, h0 = i * j->s[0] - j->p[0];
    for (int64_t jj = 0; jj < ow; jj++) {
      int64_t w0 = jj * j->s[1] - j->p[1], o = (r * ow + jj) * C, first = -1;
      float *y = j->y + o;
      int64_t *ind = j->ind + o;
      for (int64_t a = 0; a < j->k[0] && first < 0; a++) {
        int64_t h = h0 + a * j->d[0];
        if (h < 0 || h >= H) continue;
        for (int64_t q = 0; q < j->k[1]; q++) {
          int64_t w = w0 + q * j->d[1];
          if (w >= 0 && w < W) {
            first = h * W + w;
            break;
          }
        }
      }
      for (int64_t c = 0; c < C; c++) {
        y[c] = -INFINITY;
        ind[c] = first < 0 ? 0 : first;
      }
      for (int64_t a = 0; a < j->k[0]; a++) {
        int64_t h = h0 + a * j->d[0];
        if (h < 0 || h >= H) continue;
        for (int64_t q = 0; q < j->k[1]; q++) {
          int64_t w = w0 + q * j->d[1];
          if (w < 0 || w >= W) continue;
          const float *x = j->x + ((n * H + h) * W + w) * C;
          int64_t idx = h * W + w;
          for (int64_t c = 0; c < C; c++) {
            float val = x[c];
            if (val > y[c] || isnan(val)) {
              y[c] = val;
              ind[c] = idx;
            }
          }
        }
      }
    }
  }
}

/* One image per task: its gradient plane is written by no other task. */
static void mpn_bwd(void *v, int64_t b, int64_t e) {
  mpn_job *j = v;
  const int64_t C = j->C, HW = j->H * j->W, P = j->oh * j->ow;
  for (int64_t n = b; n < e; n++) {
    float *g = j->g + n * HW * C;
    memset(g, 0, sizeof(float) * (size_t)(HW * C));
    const float *go = j->go + n * P * C;
    const int64_t *ind = j->cind + n * P * C;
    for (int64_t p = 0; p < P; p++)
      for (int64_t c = 0; c < C; c++) {
        int64_t idx = ind[p * C + c];
        if (idx < 0 || idx >= HW) {
          atomic_store_explicit(&j->bad, true, memory_order_relaxed);
          continue;
        }
        g[idx * C + c] += go[p * C + c];
      }
  }
}

static bool nhwc_f32(const wk_tensor *t) {
  return wk_tensor_dtype(t) == WK_F32 && wk_tensor_dim(t) == 4 && wk_suggest_memory_format(t) == WK_CHANNELS_LAST;
}

int cpu_maxpool_nhwc(wk_tensor *x, const int64_t k[2], const int64_t s[2], const int64_t p[2], const int64_t d[2],
                     const int64_t o[2], wk_value *outs) {
  if (!nhwc_f32(x)) return 0;
  const int64_t *sz = wk_tensor_sizes(x);
  int64_t ys[4] = {sz[0], sz[1], o[0], o[1]};
  wk_options opt = {.dtype = WK_F32};
  wk_tensor *y = wk_empty_format(ys, 4, opt, WK_CHANNELS_LAST);
  opt.dtype = WK_I64;
  wk_tensor *ind = y ? wk_empty_format(ys, 4, opt, WK_CHANNELS_LAST) : NULL;
  if (!ind) {
    wk_release(y);
    return -1;
  }
  mpn_job j = {.x = wk_tensor_data(x), .y = wk_tensor_data(y), .ind = wk_tensor_data(ind), .N = sz[0], .C = sz[1],
               .H = sz[2], .W = sz[3], .oh = o[0], .ow = o[1]};
  memcpy(j.k, k, sizeof j.k);
  memcpy(j.s, s, sizeof j.s);
  memcpy(j.p, p, sizeof j.p);
  memcpy(j.d, d, sizeof j.d);
  int64_t rows = j.N * j.oh;
  if (rows * j.ow * j.C > 0) cpu_par(rows, j.ow * j.C * k[0] * k[1], mpn_fwd, &j);
  outs[0] = WK_VT(y);
  outs[1] = WK_VT(ind);
  return 1;
}

int cpu_maxpool_nhwc_backward(wk_tensor *go, wk_tensor *self, wk_tensor *indices, wk_value *outs) {
  if (!nhwc_f32(self) || wk_tensor_dtype(go) != WK_F32 || wk_tensor_dtype(indices) != WK_I64 ||
      wk_tensor_dim(go) != 4 || wk_tensor_dim(indices) != 4)
    return 0;
  const int64_t *sz = wk_tensor_sizes(self);
  wk_tensor *g = wk_contiguous_format(go, WK_CHANNELS_LAST), *ci = wk_contiguous_format(indices, WK_CHANNELS_LAST);
  wk_tensor *gi = g && ci ? wk_empty_format(sz, 4, (wk_options){.dtype = WK_F32}, WK_CHANNELS_LAST) : NULL;
  if (!gi) {
    wk_release(g);
    wk_release(ci);
    return -1;
  }
  mpn_job j = {.go = wk_tensor_data(g), .g = wk_tensor_data(gi), .cind = wk_tensor_data(ci), .N = sz[0], .C = sz[1],
               .H = sz[2], .W = sz[3], .oh = wk_tensor_size(go, 2), .ow = wk_tensor_size(go, 3)};
  atomic_init(&j.bad, false);
  if (wk_tensor_numel(gi) > 0) cpu_par(j.N, (j.H * j.W + j.oh * j.ow) * j.C, mpn_bwd, &j);
  int64_t bad = 0;
  if (atomic_load(&j.bad)) { /* the first index outside its plane, for the message */
    int64_t n = wk_tensor_numel(ci), HW = j.H * j.W;
    for (int64_t i = 0; i < n; i++)
      if (j.cind[i] < 0 || j.cind[i] >= HW) {
        bad = j.cind[i];
        break;
      }
  }
  wk_release(g);
  wk_release(ci);
  if (atomic_load(&j.bad)) {
    wk_release(gi);
    wk_error(WK_ERR_INDEX,
             "max_pool2d_with_indices_backward(): Found an invalid max index: %lld (output volumes are of size %lldx%lld)",
             (long long)bad, (long long)j.H, (long long)j.W);
    return -1;
  }
  outs[0] = WK_VT(gi);
  return 1;
}
