/* cuda blas family: mm, bmm, addmm and dot through cuBLAS for f32, f64, f16
 * and bf16 (f16/bf16 accumulate in f32). Transposed and strided operands are
 * passed by flag and leading dimension, never copied, when cuBLAS can read
 * them; f32 uses TF32 only when WICK_CUDA_ALLOW_TF32=1. matmul and linear
 * are the core's composites over these. */
#include <limits.h>
#include <string.h>

#include "cuda_libs.h"

static bool blas_dtype(wk_dtype dt) {
  return dt == WK_F32 || dt == WK_F64 || dt == WK_F16 || dt == WK_BF16;
}

static bool supports_floats(const wk_kernel_ctx *ctx, const wk_value *args) {
  /* every tensor argument (mm/bmm/dot: 2, addmm: 3) of a cuBLAS dtype */
  int n = wk_op_num_args(ctx->op);
  for (int i = 0; i < n; i++)
    if (args[i].tag == WK_V_TENSOR && args[i].u.t && !blas_dtype(wk_tensor_dtype(args[i].u.t))) return false;
  return true;
}

static cudaDataType_t data_type(wk_dtype dt) {
  switch (dt) {
    case WK_F64:
      return CUDA_R_64F;
    case WK_F16:
      return CUDA_R_16F;
    case WK_BF16:
      return CUDA_R_16BF;
    default:
      return CUDA_R_32F;
  }
}

static cublasComputeType_t compute_type(wk_dtype dt) {
  if (dt == WK_F64) return CUBLAS_COMPUTE_64F;
  if (dt == WK_F32 && cuda_allow_tf32_matmul()) return CUBLAS_COMPUTE_32F_FAST_TF32;
  return CUBLAS_COMPUTE_32F;
}

static bool fits_int(int64_t v) {
  return v >= 0 && v <= INT_MAX;
}

/* c (contiguous [batch, n, m] of a's dtype) = alpha a @ b + beta c. */
static wk_status gemm(const char *op, wk_device dev, wk_tensor *c, wk_tensor *a, wk_tensor *b, int64_t batch, int64_t n,
                      int64_t k, int64_t m, double alpha, double beta) {
  wk_dtype dt = wk_tensor_dtype(c);
  int dix = dev.index;
  cudaStream_t stream = cuda_current_stream(dix);
  size_t es = wk_dtype_size(dt);
  if (batch * n * m == 0) return WK_OK;
  if (!fits_int(n) || !fits_int(m) || !fits_int(k) || !fits_int(batch))
    return wk_error(WK_ERR_UNSUPPORTED,
                    "%s(): sizes [%lld, %lld] x [%lld, %lld] (batch %lld) exceed cuBLAS's int range", op, (long long)n,
                    (long long)k, (long long)k, (long long)m, (long long)batch);
  cublasHandle_t h;
  wk_status s = cuda_cublas(op, dix, &h);
  if (s) return s;
  float af = (float)alpha, bf = (float)beta;
  const void *pa = dt == WK_F64 ? (const void *)&alpha : (const void *)&af;
  const void *pb = dt == WK_F64 ? (const void *)&beta : (const void *)&bf;
  if (k == 0) { /* an empty sum: C = beta C (cuBLAS is not asked to scale) */
    size_t bytes = (size_t)(batch * n * m) * es;
    if (beta == 0) return CUDA_CHECK(op, cudaMemsetAsync(wk_tensor_data(c), 0, bytes, stream));
    return CUBLAS_CHECK(op, cublasScalEx(h, (int)(batch * n * m), pa, dt == WK_F64 ? CUDA_R_64F : CUDA_R_32F,
                                         wk_tensor_data(c), data_type(dt), 1, dt == WK_F64 ? CUDA_R_64F : CUDA_R_32F));
  }
  wk_tensor *ops[2] = {wk_retain(a), wk_retain(b)};
  wk_blas_mat x[2]; /* cuBLAS (column-major) reads a row-major operand as its transpose */
  bool tr[2], ok;
  int64_t ld[2];
  s = wk_blas_operands(ops, x, tr, ld, &ok);
  if (!s && !ok) s = wk_error(WK_ERR_INTERNAL, "%s(): a contiguous operand has no cuBLAS layout", op);
  if (!s) {
    /* row-major C = A B is column-major C^T = B^T A^T: B comes first */
    cublasOperation_t ob = tr[1] ? CUBLAS_OP_T : CUBLAS_OP_N, oa = tr[0] ? CUBLAS_OP_T : CUBLAS_OP_N;
    cudaDataType_t ty = data_type(dt);
    cublasComputeType_t ct = compute_type(dt);
    if (batch == 1)
      s = CUBLAS_CHECK(op, cublasGemmEx(h, ob, oa, (int)m, (int)n, (int)k, pa, x[1].data, ty, (int)ld[1], x[0].data, ty,
                                        (int)ld[0], pb, wk_tensor_data(c), ty, (int)m, ct, CUBLAS_GEMM_DEFAULT));
    else
      s = CUBLAS_CHECK(op, cublasGemmStridedBatchedEx(h, ob, oa, (int)m, (int)n, (int)k, pa, x[1].data, ty, (int)ld[1],
                                                      (long long)x[1].sb, x[0].data, ty, (int)ld[0], (long long)x[0].sb,
                                                      pb, wk_tensor_data(c), ty, (int)m, (long long)(n * m), (int)batch,
                                                      ct, CUBLAS_GEMM_DEFAULT));
  }
  wk_release(ops[0]);
  wk_release(ops[1]);
  return s;
}

/* The product into result 0 as the meta function decided it (a's dtype,
 * [batch,] n, m); on error releases it and returns the status. */
static wk_status run(const char *op, const wk_kernel_ctx *ctx, wk_tensor *self, wk_tensor *a, wk_tensor *b, int64_t k,
                     double alpha, double beta, wk_value *outs) {
  wk_device dev = ctx->device;
  wk_status s = cuda_enter(op, dev);
  if (s) return s;
  wk_tensor *c = wk_meta_empty(ctx, 0);
  if (!c) return wk_last_error();
  int nd = wk_tensor_dim(c);
  const int64_t *sz = wk_tensor_sizes(c);
  int64_t batch = nd == 3 ? sz[0] : 1, n = sz[nd - 2], m = sz[nd - 1];
  if (self && beta != 0 && batch * n * m > 0) /* beta's operand, broadcast into C */
    s = (wk_status)cuda_launch_copy(wk_tensor_data(c), wk_tensor_dtype(c), cuda_layout(c, NULL, 0),
                                    wk_tensor_data(self), wk_tensor_dtype(self), cuda_layout(self, sz, nd),
                                    batch * n * m, cuda_current_stream(dev.index));
  if (!s) s = gemm(op, dev, c, a, b, batch, n, k, m, alpha, self ? beta : 0.0);
  return wk_kernel_done(s, c, outs);
}

static wk_status k_mm(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *a = WK_ARG_T(0), *b = WK_ARG_T(1);
  return run("mm", ctx, NULL, a, b, wk_tensor_size(a, 1), 1.0, 0.0, outs);
}

static wk_status k_addmm(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *self = WK_ARG_T(0), *a = WK_ARG_T(1), *b = WK_ARG_T(2);
  /* beta == 0 ignores self entirely (NaN and inf included), as in PyTorch */
  return run("addmm", ctx, self, a, b, wk_tensor_size(a, 1), wk_value_as_f64(&args[4]), wk_value_as_f64(&args[3]),
             outs);
}

static wk_status k_bmm(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *a = WK_ARG_T(0), *b = WK_ARG_T(1);
  return run("bmm", ctx, NULL, a, b, wk_tensor_size(a, 2), 1.0, 0.0, outs);
}

/* dot: cublasDotEx writing the 0-dim result on the device (no host sync). */
static wk_status k_dot(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *a = WK_ARG_T(0), *b = WK_ARG_T(1);
  int64_t n = wk_tensor_numel(a); /* 1-D, same length and dtype: the meta function's checks */
  wk_dtype dt = wk_tensor_dtype(a);
  if (!fits_int(n)) return wk_error(WK_ERR_UNSUPPORTED, "dot(): %lld elements exceed cuBLAS's int range", (long long)n);
  wk_device dev = ctx->device;
  wk_status s = cuda_enter("dot", dev);
  if (s) return s;
  wk_tensor *r = cuda_lib_zeros("dot", NULL, 0, dt, dev);
  if (!r) return wk_last_error();
  if (n == 0) {
    outs[0] = WK_VT(r);
    return WK_OK;
  }
  wk_tensor *x = wk_retain(a), *y = wk_retain(b);
  for (int i = 0; i < 2 && !s; i++) { /* cuBLAS wants positive increments */
    wk_tensor **t = i ? &y : &x;
    int64_t st = wk_tensor_stride(*t, 0);
    if (n > 1 && (st <= 0 || st > INT_MAX)) {
      wk_tensor *c = wk_contiguous(*t);
      wk_release(*t);
      *t = c;
      if (!c) s = wk_last_error();
    }
  }
  cublasHandle_t h = NULL;
  if (!s) s = cuda_cublas("dot", dev.index, &h);
  if (!s) s = CUBLAS_CHECK("dot", cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE));
  if (!s) {
    int ix = n > 1 ? (int)wk_tensor_stride(x, 0) : 1, iy = n > 1 ? (int)wk_tensor_stride(y, 0) : 1;
    cudaDataType_t ty = data_type(dt);
    s = CUBLAS_CHECK("dot", cublasDotEx(h, (int)n, wk_tensor_data(x), ty, ix, wk_tensor_data(y), ty, iy,
                                        wk_tensor_data(r), ty, dt == WK_F64 ? CUDA_R_64F : CUDA_R_32F));
    cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST); /* the gemms pass host scalars */
  }
  wk_release(x);
  wk_release(y);
  return wk_kernel_done(s, r, outs);
}

/* cuda_reg of one row (aux: the kernel's name), for the floating dtypes cuBLAS takes. */
static wk_status reg(const wk_kernel_row *row) {
  return cuda_reg(row->op, row->fn, supports_floats, NULL, row->aux);
}

wk_status cuda_register_blas(void) {
#define ROW(op, k) {op, k_##k, NULL, "cuda." #k "_cublas"},
  static const wk_kernel_row ks[] = {WK_LINALG_KERNELS(ROW)};
#undef ROW
  return wk_register_rows(ks, sizeof ks / sizeof ks[0], reg);
}
