/* cpu plugin: linear algebra kernels: mm, bmm, addmm, dot (arguments checked
 * by the core's meta functions). f32/f64 go through
 * OpenBLAS when configure found it (transposed operands passed by flag, not
 * copied); f16/bf16 compute in f32, integers in wrapping int64, and without
 * OpenBLAS a blocked reference GEMM runs in parallel over row blocks. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

#ifdef CPU_HAVE_OPENBLAS
#include <cblas.h>
#endif

/* The scalar arguments of one GEMM: C = alpha * A @ B (+ beta * C when use_beta). */
typedef struct {
  double alpha, beta;
  uint64_t ialpha, ibeta; /* integer forms (wrapping arithmetic) */
  bool use_beta;
} gemm_scalars;

static uint64_t scalar_as_u64(const wk_value *v) {
  if (v->tag == WK_V_INT) return (uint64_t)v->u.i;
  if (v->tag == WK_V_BOOL) return v->u.b;
  return (uint64_t)wk_f64_to_i64_sat(v->u.f);
}

/* ---- reference GEMM ---------------------------------------------------------------
 * Contiguous A [batch, n, k], B [batch, k, m], C [batch, n, m]. The work unit is
 * a block of RB rows of one batch; within it, columns go in tiles of CB so the
 * accumulators stay in L1 and every row of B is loaded once per row block.
 * Each element sums over p in increasing order whatever the thread count. */
#define RB 4
#define CB 256

typedef struct {
  const char *a, *b;
  char *c;
  int64_t n, k, m, nblk;
  gemm_scalars sc;
} ref_job;

#define REF_GEMM(NAME, T, AL, BE)                                                             \
  static void NAME(void *p, int64_t u0, int64_t u1) {                                         \
    const ref_job *j = p;                                                                     \
    const int64_t n = j->n, k = j->k, m = j->m;                                               \
    const T al = (T)(AL), be = (T)(BE);                                                       \
    T acc[RB][CB];                                                                            \
    for (int64_t u = u0; u < u1; u++) {                                                       \
      int64_t bi = u / j->nblk, i0 = (u % j->nblk) * RB;                                      \
      int64_t rows = n - i0 < RB ? n - i0 : RB;                                               \
      const T *A = (const T *)j->a + (bi * n + i0) * k;                                       \
      const T *B = (const T *)j->b + bi * k * m;                                              \
      T *C = (T *)j->c + (bi * n + i0) * m;                                                   \
      for (int64_t j0 = 0; j0 < m; j0 += CB) {                                                \
        int64_t w = m - j0 < CB ? m - j0 : CB;                                                \
        for (int64_t r = 0; r < rows; r++)                                                    \
          for (int64_t q = 0; q < w; q++) acc[r][q] = 0;                                      \
        for (int64_t pp = 0; pp < k; pp++) {                                                  \
          const T *brow = B + pp * m + j0;                                                    \
          for (int64_t r = 0; r < rows; r++) {                                                \
            const T av = A[r * k + pp];                                                       \
            T *ar = acc[r];                                                                   \
            for (int64_t q = 0; q < w; q++) ar[q] += av * brow[q];                            \
          }                                                                                   \
        }                                                                                     \
        for (int64_t r = 0; r < rows; r++) {                                                  \
          T *crow = C + r * m + j0;                                                           \
          if (j->sc.use_beta)                                                                 \
            for (int64_t q = 0; q < w; q++) crow[q] = al * acc[r][q] + be * crow[q];          \
          else                                                                                \
            for (int64_t q = 0; q < w; q++) crow[q] = al * acc[r][q];                         \
        }                                                                                     \
      }                                                                                       \
    }                                                                                         \
  }
REF_GEMM(ref_gemm_f32, float, j->sc.alpha, j->sc.beta)
REF_GEMM(ref_gemm_f64, double, j->sc.alpha, j->sc.beta)
REF_GEMM(ref_gemm_i64, uint64_t, j->sc.ialpha, j->sc.ibeta) /* unsigned: wraps like PyTorch */

static wk_status ref_gemm(wk_dtype cd, wk_tensor *c, wk_tensor *a, wk_tensor *b, int64_t batch, int64_t n,
                          int64_t k, int64_t m, const gemm_scalars *sc) {
  wk_tensor *ac = wk_contiguous(a), *bc = wk_contiguous(b);
  if (!ac || !bc) {
    wk_release(ac);
    wk_release(bc);
    return wk_last_error();
  }
  ref_job j = {wk_tensor_data(ac), wk_tensor_data(bc), wk_tensor_data(c), n, k, m, (n + RB - 1) / RB, *sc};
  void (*fn)(void *, int64_t, int64_t) = cd == WK_F32 ? ref_gemm_f32 : cd == WK_F64 ? ref_gemm_f64 : ref_gemm_i64;
  int64_t units = batch * j.nblk, work = RB * k * m + 1;
  int64_t grain = work >= 65536 ? 1 : 65536 / work;
  if (units <= grain)
    fn(&j, 0, units);
  else
    wk_parallel_for(0, units, grain, fn, &j);
  wk_release(ac);
  wk_release(bc);
  return WK_OK;
}

/* ---- OpenBLAS GEMM ---------------------------------------------------------------- */
#ifdef CPU_HAVE_OPENBLAS
static bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

/* Splitting of large products over the pool (multiply-adds; rows/columns). */
#define BLAS_SPLIT_WORK (1 << 20)
#define BLAS_BLOCK_MIN 32
#define BLAS_MAX_BLOCKS 8

typedef struct {
  wk_dtype cd;
  int64_t batch, n, m, k;
  wk_blas_mat x[2];
  bool tr[2];
  int64_t ld[2];
  double alpha, beta;
  char *c;
  bool rows;            /* blocks of rows of C (else of columns) */
  int64_t nblk, blk;    /* blocks per matrix, rows/columns per block */
} blas_job;

/* Units [b, e) = (matrix, block) pairs, one sequential cblas call each. */
static void blas_units(void *p, int64_t b, int64_t e) {
  const blas_job *j = p;
  size_t es = wk_dtype_size(j->cd);
  CBLAS_TRANSPOSE ta = j->tr[0] ? CblasTrans : CblasNoTrans, tb = j->tr[1] ? CblasTrans : CblasNoTrans;
  int64_t ldc = j->m > 1 ? j->m : 1;
  for (int64_t u = b; u < e; u++) {
    int64_t bi = u / j->nblk, blk = u % j->nblk, r0 = blk * j->blk;
    int64_t dim = j->rows ? j->n : j->m, cnt = r0 + j->blk < dim ? j->blk : dim - r0;
    if (cnt <= 0) continue;
    const char *pa = j->x[0].data + (size_t)(bi * j->x[0].sb) * es, *pb = j->x[1].data + (size_t)(bi * j->x[1].sb) * es;
    char *pc = j->c + (size_t)(bi * j->n * j->m) * es;
    int64_t rn = j->n, rm = j->m;
    if (j->rows) { /* rows r0.. of op(A) and C */
      pa += (size_t)(j->tr[0] ? r0 : r0 * j->ld[0]) * es;
      pc += (size_t)(r0 * ldc) * es;
      rn = cnt;
    } else { /* columns r0.. of op(B) and C */
      pb += (size_t)(j->tr[1] ? r0 * j->ld[1] : r0) * es;
      pc += (size_t)r0 * es;
      rm = cnt;
    }
    if (j->cd == WK_F32)
      cblas_sgemm(CblasRowMajor, ta, tb, (blasint)rn, (blasint)rm, (blasint)j->k, (float)j->alpha, (const float *)pa,
                  (blasint)j->ld[0], (const float *)pb, (blasint)j->ld[1], (float)j->beta, (float *)pc, (blasint)ldc);
    else
      cblas_dgemm(CblasRowMajor, ta, tb, (blasint)rn, (blasint)rm, (blasint)j->k, j->alpha, (const double *)pa,
                  (blasint)j->ld[0], (const double *)pb, (blasint)j->ld[1], j->beta, (double *)pc, (blasint)ldc);
  }
}

/* C (contiguous) = alpha A @ B + beta C through cblas, batch by batch. a or b
 * that BLAS cannot read directly are made contiguous. k > 0. */
static wk_status blas_gemm(wk_dtype cd, wk_tensor *c, wk_tensor *a, wk_tensor *b, int64_t batch, int64_t n,
                           int64_t k, int64_t m, const gemm_scalars *sc) {
  wk_tensor *ops[2] = {wk_retain(a), wk_retain(b)};
  wk_blas_mat x[2];
  bool tr[2], ok;
  int64_t ld[2];
  wk_status s = wk_blas_operands(ops, x, tr, ld, &ok);
  if (!s && !ok) s = wk_error(WK_ERR_INTERNAL, "gemm: contiguous operand has no BLAS layout");
  if (!s) {
    /* OpenBLAS runs sequentially (see plugin.c): a large product is split
     * into blocks of rows or columns of C over the pool. The blocks depend on
     * the shapes only, so results do not depend on the thread count. */
    int64_t dim = n >= m ? n : m, nblk = dim / BLAS_BLOCK_MIN;
    if (nblk > BLAS_MAX_BLOCKS) nblk = BLAS_MAX_BLOCKS;
    if (nblk < 1 || (double)n * (double)m * (double)k < BLAS_SPLIT_WORK) nblk = 1;
    blas_job j = {cd, batch, n, m, k, {x[0], x[1]}, {tr[0], tr[1]}, {ld[0], ld[1]}, sc->alpha,
                  sc->use_beta ? sc->beta : 0.0, (char *)wk_tensor_data(c), n >= m, nblk, (dim + nblk - 1) / nblk};
    int64_t units = batch * nblk;
    if (units > 1 && !wk_in_parallel() && (double)batch * n * m * k >= BLAS_SPLIT_WORK)
      wk_parallel_for(0, units, 1, blas_units, &j);
    else
      blas_units(&j, 0, units);
  }
  wk_release(ops[0]);
  wk_release(ops[1]);
  return s;
}
#endif

/* C = alpha A @ B (+ beta C): C is a contiguous [batch, n, m] (or [n, m])
 * tensor of the compute dtype cd (f32, f64 or i64), holding beta's operand
 * when sc->use_beta; a and b are views of dtype cd. */
static wk_status gemm(wk_dtype cd, wk_tensor *c, wk_tensor *a, wk_tensor *b, int64_t batch, int64_t n, int64_t k,
                      int64_t m, const gemm_scalars *sc) {
  int64_t total = batch * n * m;
  if (total == 0) return WK_OK;
  if (k == 0) { /* empty sum: C = beta C, or zeros */
    char *p = wk_tensor_data(c);
    if (!sc->use_beta) {
      memset(p, 0, (size_t)total * wk_dtype_size(cd));
    } else if (cd == WK_F32) {
      for (int64_t i = 0; i < total; i++) ((float *)p)[i] *= (float)sc->beta;
    } else if (cd == WK_F64) {
      for (int64_t i = 0; i < total; i++) ((double *)p)[i] *= sc->beta;
    } else {
      for (int64_t i = 0; i < total; i++) ((uint64_t *)p)[i] *= sc->ibeta;
    }
    return WK_OK;
  }
#ifdef CPU_HAVE_OPENBLAS
  if ((cd == WK_F32 || cd == WK_F64) && fits_int(n) && fits_int(m) && fits_int(k))
    return blas_gemm(cd, c, a, b, batch, n, k, m, sc);
#endif
  return ref_gemm(cd, c, a, b, batch, n, k, m, sc);
}

/* Runs the product of a [.., n, k] and b [.., k, m] (2D or 3D, same dtype)
 * into result 0 as the meta function decided it (their dtype, [batch,] n, m);
 * `self` (may be NULL) is broadcast into the result and scaled by beta when
 * sc->use_beta. Narrow dtypes compute in their compute dtype and convert. */
static wk_tensor *product(const wk_kernel_ctx *ctx, wk_tensor *self, wk_tensor *a, wk_tensor *b, int64_t k,
                          gemm_scalars sc) {
  const wk_meta_out *mo = wk_kernel_meta(ctx, 0);
  if (!mo) return wk_meta_empty(ctx, 0); /* records the missing decision */
  wk_dtype dt = wk_tensor_dtype(a), cd = wk_compute_dtype(dt);
  int out_nd = mo->ndim;
  const int64_t *out_sizes = mo->sizes;
  int64_t batch = out_nd == 3 ? out_sizes[0] : 1, n = out_sizes[out_nd - 2], m = out_sizes[out_nd - 1];
  wk_tensor *c = cd == dt ? wk_meta_empty(ctx, 0) : cpu_empty(out_sizes, out_nd, cd), *ac = NULL, *bc = NULL;
  wk_status s = c ? WK_OK : wk_last_error();
  if (!s && sc.use_beta && batch * n * m > 0) s = cpu_copy(c, self);
  if (!s) {
    ac = wk_kernel_cast(a, cd);
    bc = wk_kernel_cast(b, cd);
    if (!ac || !bc) s = wk_last_error();
  }
  if (!s) s = gemm(cd, c, ac, bc, batch, n, k, m, &sc);
  wk_release(ac);
  wk_release(bc);
  if (s) {
    wk_release(c);
    return NULL;
  }
  if (cd != dt) {
    wk_tensor *r = wk_to_dtype(c, dt);
    wk_release(c);
    c = r;
  }
  return c;
}

static const gemm_scalars plain = {1.0, 0.0, 1, 0, false};

/* ---- mm, addmm, bmm (shapes and dtypes checked by the core's meta functions) ----------- */
static wk_status k_mm(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *a = WK_ARG_T(0), *b = WK_ARG_T(1);
  return wk_kernel_out1(outs, product(ctx, NULL, a, b, wk_tensor_size(a, 1), plain));
}

static wk_status k_addmm(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *self = WK_ARG_T(0), *a = WK_ARG_T(1), *b = WK_ARG_T(2);
  gemm_scalars sc = {wk_value_as_f64(&args[4]), wk_value_as_f64(&args[3]), scalar_as_u64(&args[4]),
                     scalar_as_u64(&args[3]), false};
  /* beta == 0 ignores self entirely (NaN and inf included), as in PyTorch */
  sc.use_beta = wk_dtype_is_floating(wk_tensor_dtype(b)) ? sc.beta != 0 : sc.ibeta != 0;
  return wk_kernel_out1(outs, product(ctx, self, a, b, wk_tensor_size(a, 1), sc));
}

static wk_status k_bmm(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *a = WK_ARG_T(0), *b = WK_ARG_T(1);
  return wk_kernel_out1(outs, product(ctx, NULL, a, b, wk_tensor_size(a, 2), plain));
}

/* ---- dot ------------------------------------------------------------------------------ */
/* Fixed chunks summed in chunk order: the result does not depend on threads. */
#define DOT_CHUNK 4096

typedef struct {
  const char *x, *y;
  int64_t sx, sy, n; /* element strides */
  bool integral;
  double *fpart;
  uint64_t *ipart;
} dot_job;

static void dot_chunks(void *p, int64_t c0, int64_t c1) {
  const dot_job *j = p;
  for (int64_t c = c0; c < c1; c++) {
    int64_t b = c * DOT_CHUNK, e = b + DOT_CHUNK < j->n ? b + DOT_CHUNK : j->n;
    if (j->integral) {
      const uint64_t *x = (const uint64_t *)j->x, *y = (const uint64_t *)j->y;
      uint64_t acc = 0;
      for (int64_t i = b; i < e; i++) acc += x[i * j->sx] * y[i * j->sy];
      j->ipart[c] = acc;
    } else {
      const double *x = (const double *)j->x, *y = (const double *)j->y;
      double acc = 0;
      for (int64_t i = b; i < e; i++) acc += x[i * j->sx] * y[i * j->sy];
      j->fpart[c] = acc;
    }
  }
}

/* Reference dot in f64 (floats) or wrapping i64 (integers) on tensors of that dtype. */
static wk_status ref_dot(wk_tensor *x, wk_tensor *y, bool integral, double *fr, uint64_t *ir) {
  int64_t n = wk_tensor_numel(x), nc = (n + DOT_CHUNK - 1) / DOT_CHUNK;
  dot_job j = {wk_tensor_data(x), wk_tensor_data(y), wk_tensor_stride(x, 0), wk_tensor_stride(y, 0), n, integral,
               NULL, NULL};
  void *parts = wk_calloc((size_t)(nc ? nc : 1), 8);
  if (!parts) return wk_error(WK_ERR_NO_MEMORY, "dot(): out of memory");
  j.fpart = parts;
  j.ipart = parts;
  if (nc > 8)
    wk_parallel_for(0, nc, 8, dot_chunks, &j);
  else
    dot_chunks(&j, 0, nc);
  double f = 0;
  uint64_t u = 0;
  for (int64_t c = 0; c < nc; c++) {
    f += j.fpart[c];
    u += j.ipart[c];
  }
  wk_free(parts);
  *fr = f;
  *ir = u;
  return WK_OK;
}

static wk_status k_dot(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *a = WK_ARG_T(0), *b = WK_ARG_T(1);
  int64_t n = wk_tensor_numel(a);
  wk_dtype dt = wk_tensor_dtype(a);
  bool integral = !wk_dtype_is_floating(dt);
  wk_tensor *r = wk_meta_empty(ctx, 0), *x = NULL, *y = NULL;
  if (!r) return wk_last_error();
  wk_status s = WK_OK;
#ifdef CPU_HAVE_OPENBLAS
  int64_t sx = wk_tensor_stride(a, 0), sy = wk_tensor_stride(b, 0);
  if (!integral && dt != WK_F64 && n > 0) { /* f32 (and f16/bf16 upcast): sdot */
    x = wk_kernel_cast(a, WK_F32);
    y = wk_kernel_cast(b, WK_F32);
    if (!x || !y) {
      s = wk_last_error();
      goto done;
    }
    sx = wk_tensor_stride(x, 0);
    sy = wk_tensor_stride(y, 0);
  }
  if (!integral && fits_int(n) && (n <= 1 || (sx >= 1 && sy >= 1 && fits_int(sx) && fits_int(sy)))) {
    blasint bn = (blasint)n, ix = (blasint)(sx > 0 ? sx : 1), iy = (blasint)(sy > 0 ? sy : 1);
    double v = 0;
    if (n == 0)
      v = 0;
    else if (dt == WK_F64)
      v = cblas_ddot(bn, wk_tensor_data(a), ix, wk_tensor_data(b), iy);
    else
      v = cblas_sdot(bn, wk_tensor_data(x), ix, wk_tensor_data(y), iy);
    wk_store_f64(wk_tensor_data(r), dt, v);
    goto done;
  }
  wk_release(x);
  wk_release(y);
#endif
  x = wk_kernel_cast(a, integral ? WK_I64 : WK_F64);
  y = wk_kernel_cast(b, integral ? WK_I64 : WK_F64);
  if (!x || !y) {
    s = wk_last_error();
    goto done;
  }
  double fv = 0;
  uint64_t iv = 0;
  s = ref_dot(x, y, integral, &fv, &iv);
  if (!s) {
    if (integral)
      wk_store_i64(wk_tensor_data(r), dt, (int64_t)iv);
    else
      wk_store_f64(wk_tensor_data(r), dt, fv);
  }
done:
  wk_release(x);
  wk_release(y);
  return wk_kernel_done(s, r, outs);
}

wk_status cpu_register_linalg(void) {
#define ROW(op, k) {op, k_##k, NULL, NULL},
  static const wk_kernel_row ks[] = {WK_LINALG_KERNELS(ROW)};
#undef ROW
  return wk_register_rows(ks, sizeof ks / sizeof ks[0], cpu_reg_row);
}
