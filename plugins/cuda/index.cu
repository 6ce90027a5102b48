// Device code of the indexing family: index_select, gather, scatter /
// scatter_add and embedding's backward. Out-of-range indices are not
// written; the kernel records the smallest offending position in a device
// slot (atomicMax of n - position: the message is the same on every run)
// and the host turns it into the cpu plugin's error. Scatters give each
// thread one whole line of the index along `dim`, walked in order, so no two
// threads write one element: deterministic without atomics on the data.
#include "cuda_device.h"
#include "cuda_kernels.h"

__device__ __forceinline__ void mark_bad(int64_t *bad, int64_t n, int64_t pos) {
  atomicMax((unsigned long long *)bad, (unsigned long long)(n - pos));
}

template <typename E>
__global__ void index_select_kernel(E *out, const E *x, const int64_t *index, int64_t outer, int64_t S, int64_t K,
                                    int64_t inner, int64_t *bad) {
  int64_t n = outer * K * inner;
  CUDA_GRID_LOOP(t, n) {
    int64_t i = t % inner, r = t / inner, k = r % K, o = r / K;
    int64_t v = index[k];
    if (v < 0 || v >= S) {
      mark_bad(bad, K, k);
      continue;
    }
    out[t] = x[(o * S + v) * inner + i];
  }
}

// Element t of index (contiguous, li's sizes) -> offset in a tensor of layout l,
// with the dim coordinate replaced by v (v < 0: keep t's own coordinate).
__device__ __forceinline__ int64_t coord_offset(int64_t t, const cuda_strided &li, const cuda_strided &l, int dim,
                                                int64_t v) {
  int64_t off = 0;
  for (int d = li.ndim - 1; d >= 0; d--) {
    int64_t s = li.sizes[d], q = t / s, c = t - q * s;
    off += (d == dim && v >= 0 ? v : c) * l.strides[d];
    t = q;
  }
  return off;
}

template <typename E>
__global__ void gather_kernel(E *out, const E *self, cuda_strided ls, const int64_t *index, cuda_strided li, int dim,
                              int64_t *bad, int64_t n) {
  int64_t S = ls.ndim ? ls.sizes[dim] : 1;
  CUDA_GRID_LOOP(t, n) {
    int64_t v = index[t];
    if (v < 0 || v >= S) {
      mark_bad(bad, n, t);
      continue;
    }
    out[t] = self[ls.ndim ? coord_offset(t, li, ls, dim, v) : 0];
  }
}

// One line of index along dim per thread: line l's first element and the
// dim's stride in the contiguous index.
template <typename E>
__global__ void scatter_kernel(bool add, E *self, cuda_strided lself, const int64_t *index, cuda_strided li,
                               const E *src, cuda_strided lsrc, int dim, int64_t *bad, int64_t lines) {
  int64_t len = li.ndim ? li.sizes[dim] : 1, inner = 1, S = lself.ndim ? lself.sizes[dim] : 1;
  for (int d = dim + 1; d < li.ndim; d++) inner *= li.sizes[d];
  int64_t n = lines * len;
  CUDA_GRID_LOOP(l, lines) {
    int64_t first = (l / inner) * len * inner + l % inner;  // flat index of the line's element 0
    for (int64_t k = 0; k < len; k++) {
      int64_t t = first + k * inner;
      int64_t v = index[t];
      if (v < 0 || v >= S) {
        mark_bad(bad, n, t);
        continue;
      }
      E val = src[lsrc.ndim ? coord_offset(t, li, lsrc, dim, -1) : 0];
      E *dst = self + (lself.ndim ? coord_offset(t, li, lself, dim, v) : 0);
      *dst = add ? (E)(*dst + val) : val;
    }
  }
}

template <typename T>
__global__ void embedding_bw_kernel(T *out, const T *g, const int64_t *idx, int64_t N, int64_t D, int64_t V,
                                    int64_t pad, int64_t *bad) {
  CUDA_GRID_LOOP(d, D) {
    for (int64_t k = 0; k < N; k++) {  // in order: the same sums on every run
      int64_t v = idx[k];
      if (v == pad) continue;
      if (v < 0 || v >= V) {
        mark_bad(bad, N, k);
        continue;
      }
      out[v * D + d] += g[k * D + d];
    }
  }
}

extern "C" int cuda_launch_index_select(int es, void *out, const void *x, const int64_t *index, int64_t outer,
                                        int64_t S, int64_t K, int64_t inner, int64_t *bad, cudaStream_t st) {
  int64_t n = outer * K * inner;
  if (n <= 0) return 0;
  unsigned g = cuda_blocks(n);
  switch (es) {
    case 8:
      index_select_kernel<uint64_t>
          <<<g, CUDA_THREADS, 0, st>>>((uint64_t *)out, (const uint64_t *)x, index, outer, S, K, inner, bad);
      break;
    case 4:
      index_select_kernel<uint32_t>
          <<<g, CUDA_THREADS, 0, st>>>((uint32_t *)out, (const uint32_t *)x, index, outer, S, K, inner, bad);
      break;
    case 2:
      index_select_kernel<uint16_t>
          <<<g, CUDA_THREADS, 0, st>>>((uint16_t *)out, (const uint16_t *)x, index, outer, S, K, inner, bad);
      break;
    default:
      index_select_kernel<uint8_t>
          <<<g, CUDA_THREADS, 0, st>>>((uint8_t *)out, (const uint8_t *)x, index, outer, S, K, inner, bad);
      break;
  }
  return CUDA_CHECK_LAUNCH("index_select", "index_select_kernel");
}

extern "C" int cuda_launch_gather(int es, void *out, const void *self, cuda_strided ls, const int64_t *index,
                                  cuda_strided li, int dim, int64_t *bad, int64_t n, cudaStream_t st) {
  if (n <= 0) return 0;
  unsigned g = cuda_blocks(n);
  switch (es) {
    case 8:
      gather_kernel<uint64_t>
          <<<g, CUDA_THREADS, 0, st>>>((uint64_t *)out, (const uint64_t *)self, ls, index, li, dim, bad, n);
      break;
    case 4:
      gather_kernel<uint32_t>
          <<<g, CUDA_THREADS, 0, st>>>((uint32_t *)out, (const uint32_t *)self, ls, index, li, dim, bad, n);
      break;
    case 2:
      gather_kernel<uint16_t>
          <<<g, CUDA_THREADS, 0, st>>>((uint16_t *)out, (const uint16_t *)self, ls, index, li, dim, bad, n);
      break;
    default:
      gather_kernel<uint8_t>
          <<<g, CUDA_THREADS, 0, st>>>((uint8_t *)out, (const uint8_t *)self, ls, index, li, dim, bad, n);
      break;
  }
  return CUDA_CHECK_LAUNCH("gather", "gather_kernel");
}

extern "C" int cuda_launch_scatter(bool add, int ct, int es, void *self, cuda_strided lself, const int64_t *index,
                                   cuda_strided li, const void *src, cuda_strided lsrc, int dim, int64_t *bad,
                                   cudaStream_t st) {
  int64_t n = 1;
  for (int d = 0; d < li.ndim; d++) n *= li.sizes[d];
  int64_t len = li.ndim ? li.sizes[dim] : 1;
  if (n <= 0 || len <= 0) return 0;
  int64_t lines = n / len;
  unsigned g = cuda_blocks(lines);
  if (add) {
    if (ct == CUDA_F64)
      scatter_kernel<double><<<g, CUDA_THREADS, 0, st>>>(true, (double *)self, lself, index, li, (const double *)src,
                                                         lsrc, dim, bad, lines);
    else if (ct == CUDA_I64)
      scatter_kernel<int64_t><<<g, CUDA_THREADS, 0, st>>>(true, (int64_t *)self, lself, index, li, (const int64_t *)src,
                                                          lsrc, dim, bad, lines);
    else
      scatter_kernel<float><<<g, CUDA_THREADS, 0, st>>>(true, (float *)self, lself, index, li, (const float *)src, lsrc,
                                                        dim, bad, lines);
  } else {
    switch (es) {
      case 8:
        scatter_kernel<uint64_t><<<g, CUDA_THREADS, 0, st>>>(false, (uint64_t *)self, lself, index, li,
                                                             (const uint64_t *)src, lsrc, dim, bad, lines);
        break;
      case 4:
        scatter_kernel<uint32_t><<<g, CUDA_THREADS, 0, st>>>(false, (uint32_t *)self, lself, index, li,
                                                             (const uint32_t *)src, lsrc, dim, bad, lines);
        break;
      case 2:
        scatter_kernel<uint16_t><<<g, CUDA_THREADS, 0, st>>>(false, (uint16_t *)self, lself, index, li,
                                                             (const uint16_t *)src, lsrc, dim, bad, lines);
        break;
      default:
        scatter_kernel<uint8_t><<<g, CUDA_THREADS, 0, st>>>(false, (uint8_t *)self, lself, index, li,
                                                            (const uint8_t *)src, lsrc, dim, bad, lines);
        break;
    }
  }
  return CUDA_CHECK_LAUNCH(add ? "scatter_add" : "scatter", "scatter_kernel");
}

extern "C" int cuda_launch_embedding_backward(int ct, void *out, const void *g, const int64_t *idx, int64_t N,
                                              int64_t D, int64_t num_weights, int64_t padding_idx, int64_t *bad,
                                              cudaStream_t st) {
  size_t es = ct == CUDA_F64 ? 8 : 4;
  if (num_weights * D > 0) {
    int r = CUDA_CHECK("embedding_dense_backward", cudaMemsetAsync(out, 0, (size_t)(num_weights * D) * es, st));
    if (r) return r;
  }
  if (N <= 0 || D <= 0) return 0;
  if (ct == CUDA_F64)
    embedding_bw_kernel<double><<<cuda_blocks(D), CUDA_THREADS, 0, st>>>((double *)out, (const double *)g, idx, N, D,
                                                                         num_weights, padding_idx, bad);
  else
    embedding_bw_kernel<float><<<cuda_blocks(D), CUDA_THREADS, 0, st>>>((float *)out, (const float *)g, idx, N, D,
                                                                        num_weights, padding_idx, bad);
  return CUDA_CHECK_LAUNCH("embedding_dense_backward", "embedding_bw_kernel");
}
