/* cpu plugin: the linalg decompositions and solvers of issue 21 through
 * LAPACK (the copy inside OpenBLAS, found by configure: CPU_HAVE_LAPACK):
 * linalg_cholesky (potrf), linalg_qr (geqrf + orgqr), linalg_eigh (syevd),
 * linalg_svd (gesdd, PyTorch's cpu driver), linalg_solve (gesv) and
 * linalg_slogdet (getrf). Matrices are copied one at a time into a
 * column-major double buffer (f32 and f64 inputs: float32 computes in double
 * and rounds once), so any layout works; batches run one matrix after
 * another. The core's meta functions checked shapes and dtypes; here only the
 * data can fail (not positive-definite, singular, no convergence), with
 * PyTorch's messages. Without LAPACK nothing is registered and these ops say
 * they have no cpu kernel. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

#ifdef CPU_HAVE_LAPACK

/* Fortran LAPACK (gfortran ABI: character arguments carry hidden lengths at the end). */
typedef int lp_int;
void dpotrf_(const char *uplo, const lp_int *n, double *a, const lp_int *lda, lp_int *info, size_t);
void dgeqrf_(const lp_int *m, const lp_int *n, double *a, const lp_int *lda, double *tau, double *work,
             const lp_int *lwork, lp_int *info);
void dorgqr_(const lp_int *m, const lp_int *n, const lp_int *k, double *a, const lp_int *lda, const double *tau,
             double *work, const lp_int *lwork, lp_int *info);
void dsyevd_(const char *jobz, const char *uplo, const lp_int *n, double *a, const lp_int *lda, double *w,
             double *work, const lp_int *lwork, lp_int *iwork, const lp_int *liwork, lp_int *info, size_t, size_t);
void dgesdd_(const char *jobz, const lp_int *m, const lp_int *n, double *a, const lp_int *lda, double *s, double *u,
             const lp_int *ldu, double *vt, const lp_int *ldvt, double *work, const lp_int *lwork, lp_int *iwork,
             lp_int *info, size_t);
void dgesv_(const lp_int *n, const lp_int *nrhs, double *a, const lp_int *lda, lp_int *ipiv, double *b,
            const lp_int *ldb, lp_int *info);
void dgetrf_(const lp_int *m, const lp_int *n, double *a, const lp_int *lda, lp_int *ipiv, lp_int *info);

#define T(i) (args[i].u.t)

/* A tensor's matrices as contiguous data: [batch, r, c] row-major; NULL on error. */
typedef struct {
  wk_tensor *c; /* contiguous (new reference) */
  const char *p;
  wk_dtype dt;
  size_t es;
  int64_t batch, r, cols;
} mats;
static bool mats_open(mats *m, wk_tensor *t) {
  memset(m, 0, sizeof *m);
  m->c = wk_contiguous(t);
  if (!m->c) return false;
  int nd = wk_tensor_dim(t);
  m->p = wk_tensor_data(m->c);
  m->dt = wk_tensor_dtype(t);
  m->es = wk_dtype_size(m->dt);
  m->r = wk_tensor_size(t, nd - 2), m->cols = wk_tensor_size(t, nd - 1);
  m->batch = 1;
  for (int d = 0; d < nd - 2; d++) m->batch *= wk_tensor_size(t, d);
  return true;
}
/* Matrix b into col-major buf (lda = rows); transposed: buf holds the transpose. */
static void mats_load(const mats *m, int64_t b, double *buf, bool transposed) {
  const char *base = m->p + (size_t)(b * m->r * m->cols) * m->es;
  for (int64_t i = 0; i < m->r; i++)
    for (int64_t j = 0; j < m->cols; j++) {
      double v = wk_load_f64(base + (size_t)(i * m->cols + j) * m->es, m->dt);
      if (transposed)
        buf[j + i * m->cols] = v;
      else
        buf[i + j * m->r] = v;
    }
}
/* Output matrix b ([r, c] row-major in t) from col-major buf with leading dimension ld (element (i, j) at
 * buf[i + j * ld]); transposed: from buf's transpose (element (i, j) at buf[j + i * ld]). */
static void store_mat(wk_tensor *t, int64_t b, int64_t r, int64_t c, const double *buf, int64_t ld, bool transposed) {
  wk_dtype dt = wk_tensor_dtype(t);
  size_t es = wk_dtype_size(dt);
  char *base = (char *)wk_tensor_data(t) + (size_t)(b * r * c) * es;
  for (int64_t i = 0; i < r; i++)
    for (int64_t j = 0; j < c; j++)
      wk_store_f64(base + (size_t)(i * c + j) * es, dt, transposed ? buf[j + i * ld] : buf[i + j * ld]);
}
static wk_status out_of_memory(const char *op) { return wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", op); }
/* "(Batch element 3): " for batched inputs, as PyTorch's messages. */
static void batch_prefix(char *buf, size_t n, int64_t batch, int64_t b) {
  if (batch > 1 || b > 0)
    snprintf(buf, n, "(Batch element %lld): ", (long long)b);
  else
    buf[0] = 0;
}
static lp_int lpi(int64_t v) { return (lp_int)v; }
static bool fits_lp(int64_t v) { return v <= 2147483647 / 8; }

/* Releases the listed new references and returns s. */
static wk_status done(wk_status s, wk_tensor *a, wk_tensor *b, wk_tensor *c, void *buf) {
  wk_release(a);
  wk_release(b);
  wk_release(c);
  free(buf);
  return s;
}
static wk_status too_big(const char *op) { return wk_error(WK_ERR_SHAPE, "%s: the matrices are too large for LAPACK's 32-bit sizes", op); }

/* ---- linalg_cholesky(self, upper) ---- */
static wk_status k_cholesky(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  mats m;
  if (!mats_open(&m, T(0))) return wk_last_error();
  int64_t n = m.r;
  if (!fits_lp(n * n)) return done(too_big("linalg_cholesky()"), m.c, NULL, NULL, NULL);
  wk_tensor *L = wk_meta_empty(ctx, 0);
  double *buf = malloc(sizeof(double) * (size_t)(n * n > 0 ? n * n : 1));
  if (!L || !buf) return done(L ? out_of_memory("linalg_cholesky()") : wk_last_error(), m.c, L, NULL, buf);
  bool upper = args[1].u.b;
  for (int64_t b = 0; b < m.batch; b++) {
    mats_load(&m, b, buf, false);
    lp_int N = lpi(n), info = 0;
    if (n > 0) dpotrf_("L", &N, buf, &N, &info, 1);
    if (info > 0) {
      char pre[64];
      batch_prefix(pre, sizeof pre, m.batch, b);
      wk_status s = wk_error(WK_ERR_INVALID_ARG,
                             "linalg_cholesky(): %sThe factorization could not be completed because the input is not "
                             "positive-definite (the leading minor of order %d is not positive-definite).",
                             pre, (int)info);
      return done(s, m.c, L, NULL, buf);
    }
    for (int64_t j = 0; j < n; j++) /* zero the strict upper triangle (col-major: i < j) */
      for (int64_t i = 0; i < j; i++) buf[i + j * n] = 0;
    store_mat(L, b, n, n, buf, n, upper);
  }
  outs[0] = WK_VT(L);
  return done(WK_OK, m.c, NULL, NULL, buf);
}

/* ---- linalg_qr(A, mode): reduced (Q [m, k], R [k, n]), complete (Q [m, m], R [m, n]), r (R only) ---- */
static wk_status k_qr(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  mats ma;
  if (!mats_open(&ma, T(0))) return wk_last_error();
  const char *mode = args[1].u.s;
  bool complete = !strcmp(mode, "complete"), ronly = !strcmp(mode, "r");
  int64_t m = ma.r, n = ma.cols, k = m < n ? m : n, qc = complete ? m : k, rr = complete ? m : k;
  if (!fits_lp(m * (n > m ? n : m))) return done(too_big("linalg_qr()"), ma.c, NULL, NULL, NULL);
  wk_tensor *Q = wk_meta_empty(ctx, 0), *R = wk_meta_empty(ctx, 1);
  size_t an = (size_t)(m * n), qn = (size_t)(m * qc), tn = (size_t)(k > 0 ? k : 1);
  double *buf = malloc(sizeof(double) * (an + qn + tn + 2));
  if (!Q || !R || !buf) return done(Q && R ? out_of_memory("linalg_qr()") : wk_last_error(), ma.c, Q, R, buf);
  double *a = buf, *q = buf + an, *tau = q + qn;
  for (int64_t b = 0; b < ma.batch; b++) {
    mats_load(&ma, b, a, false);
    lp_int M = lpi(m), N = lpi(n), K = lpi(k), QC = lpi(qc), lda = lpi(m > 1 ? m : 1), info = 0, lw = -1;
    double wq = 0;
    if (k > 0) {
      dgeqrf_(&M, &N, a, &lda, tau, &wq, &lw, &info);
      lw = (lp_int)wq > 1 ? (lp_int)wq : 1;
      double *work = malloc(sizeof(double) * (size_t)lw);
      if (!work) return done(out_of_memory("linalg_qr()"), ma.c, Q, R, buf);
      dgeqrf_(&M, &N, a, &lda, tau, work, &lw, &info);
      free(work);
    }
    /* R: the upper triangle of the first rr rows */
    {
      wk_dtype dt = wk_tensor_dtype(R);
      size_t es = wk_dtype_size(dt);
      char *base = (char *)wk_tensor_data(R) + (size_t)(b * rr * n) * es;
      for (int64_t i = 0; i < rr; i++)
        for (int64_t j = 0; j < n; j++)
          wk_store_f64(base + (size_t)(i * n + j) * es, dt, i <= j && i < m ? a[i + j * m] : 0.0);
    }
    if (ronly) continue;
    /* Q: the reflectors' first k columns, extended to qc columns by orgqr */
    memset(q, 0, sizeof(double) * qn);
    for (int64_t j = 0; j < k; j++) memcpy(q + j * m, a + j * m, sizeof(double) * (size_t)m);
    if (m > 0 && qc > 0) {
      lw = -1;
      dorgqr_(&M, &QC, &K, q, &lda, tau, &wq, &lw, &info);
      lw = (lp_int)wq > 1 ? (lp_int)wq : 1;
      double *work = malloc(sizeof(double) * (size_t)lw);
      if (!work) return done(out_of_memory("linalg_qr()"), ma.c, Q, R, buf);
      dorgqr_(&M, &QC, &K, q, &lda, tau, work, &lw, &info);
      free(work);
    }
    store_mat(Q, b, m, qc, q, m, false);
  }
  outs[0] = WK_VT(Q), outs[1] = WK_VT(R);
  return done(WK_OK, ma.c, NULL, NULL, buf);
}

/* ---- linalg_eigh(self, UPLO): eigenvalues ascending, eigenvectors in columns ---- */
static wk_status k_eigh(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  mats m;
  if (!mats_open(&m, T(0))) return wk_last_error();
  int64_t n = m.r;
  if (!fits_lp(n * n)) return done(too_big("linalg_eigh()"), m.c, NULL, NULL, NULL);
  char uplo = (args[1].u.s[0] == 'U' || args[1].u.s[0] == 'u') ? 'U' : 'L';
  wk_tensor *W = wk_meta_empty(ctx, 0), *V = wk_meta_empty(ctx, 1);
  double *buf = malloc(sizeof(double) * (size_t)(n * n + n + 1));
  if (!W || !V || !buf) return done(W && V ? out_of_memory("linalg_eigh()") : wk_last_error(), m.c, W, V, buf);
  double *w = buf + n * n;
  wk_dtype wdt = wk_tensor_dtype(W);
  size_t wes = wk_dtype_size(wdt);
  for (int64_t b = 0; b < m.batch; b++) {
    mats_load(&m, b, buf, false);
    lp_int N = lpi(n), lda = lpi(n > 1 ? n : 1), info = 0, lw = -1, liw = -1, iwq = 0;
    double wq = 0;
    if (n > 0) {
      dsyevd_("V", &uplo, &N, buf, &lda, w, &wq, &lw, &iwq, &liw, &info, 1, 1);
      lw = (lp_int)wq > 1 ? (lp_int)wq : 1, liw = iwq > 1 ? iwq : 1;
      double *work = malloc(sizeof(double) * (size_t)lw);
      lp_int *iwork = malloc(sizeof(lp_int) * (size_t)liw);
      if (!work || !iwork) {
        free(work);
        free(iwork);
        return done(out_of_memory("linalg_eigh()"), m.c, W, V, buf);
      }
      dsyevd_("V", &uplo, &N, buf, &lda, w, work, &lw, iwork, &liw, &info, 1, 1);
      free(work);
      free(iwork);
    }
    if (info > 0) {
      char pre[64];
      batch_prefix(pre, sizeof pre, m.batch, b);
      wk_status s = wk_error(WK_ERR_INVALID_ARG,
                             "linalg_eigh(): %sThe algorithm failed to converge because the input matrix is "
                             "ill-conditioned or has too many repeated eigenvalues (error code: %d).",
                             pre, (int)info);
      return done(s, m.c, W, V, buf);
    }
    for (int64_t i = 0; i < n; i++) wk_store_f64((char *)wk_tensor_data(W) + (size_t)(b * n + i) * wes, wdt, w[i]);
    store_mat(V, b, n, n, buf, n, false);
  }
  outs[0] = WK_VT(W), outs[1] = WK_VT(V);
  return done(WK_OK, m.c, NULL, NULL, buf);
}

/* ---- linalg_svd(A, full_matrices, driver): gesdd; U [m, m|k], S [k], Vh [n|k, n] ---- */
static wk_status k_svd(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  mats ma;
  if (!mats_open(&ma, T(0))) return wk_last_error();
  bool full = args[1].u.b;
  int64_t m = ma.r, n = ma.cols, k = m < n ? m : n, uc = full ? m : k, vr = full ? n : k;
  if (!fits_lp(m * n) || !fits_lp(m * m) || !fits_lp(n * n)) return done(too_big("linalg_svd()"), ma.c, NULL, NULL, NULL);
  wk_tensor *U = wk_meta_empty(ctx, 0), *S = wk_meta_empty(ctx, 1), *Vh = wk_meta_empty(ctx, 2);
  size_t an = (size_t)(m * n), un = (size_t)(m * uc), vn = (size_t)(vr * n);
  double *buf = malloc(sizeof(double) * (an + un + vn + (size_t)k + 4));
  lp_int *iwork = malloc(sizeof(lp_int) * (size_t)(8 * k + 1));
  if (!U || !S || !Vh || !buf || !iwork) {
    free(iwork);
    wk_release(Vh);
    return done(U && S && Vh ? out_of_memory("linalg_svd()") : wk_last_error(), ma.c, U, S, buf);
  }
  double *a = buf, *u = a + an, *vt = u + un, *s = vt + vn;
  wk_dtype sdt = wk_tensor_dtype(S);
  size_t ses = wk_dtype_size(sdt);
  for (int64_t b = 0; b < ma.batch; b++) {
    lp_int info = 0;
    if (k == 0) { /* an empty matrix: identities for the full factors */
      memset(u, 0, sizeof(double) * un);
      memset(vt, 0, sizeof(double) * vn);
      for (int64_t i = 0; i < m && i < uc; i++) u[i + i * m] = 1;
      for (int64_t i = 0; i < n && i < vr; i++) vt[i + i * vr] = 1;
    } else {
      mats_load(&ma, b, a, false);
      lp_int M = lpi(m), N = lpi(n), lda = lpi(m), ldu = lpi(m), ldvt = lpi(vr), lw = -1;
      char jobz = full ? 'A' : 'S';
      double wq = 0;
      dgesdd_(&jobz, &M, &N, a, &lda, s, u, &ldu, vt, &ldvt, &wq, &lw, iwork, &info, 1);
      lw = (lp_int)wq > 1 ? (lp_int)wq : 1;
      double *work = malloc(sizeof(double) * (size_t)lw);
      if (!work) {
        free(iwork);
        wk_release(Vh);
        return done(out_of_memory("linalg_svd()"), ma.c, U, S, buf);
      }
      dgesdd_(&jobz, &M, &N, a, &lda, s, u, &ldu, vt, &ldvt, work, &lw, iwork, &info, 1);
      free(work);
    }
    if (info > 0) {
      char pre[64];
      batch_prefix(pre, sizeof pre, ma.batch, b);
      wk_status st = wk_error(WK_ERR_INVALID_ARG,
                              "linalg_svd(): %sThe algorithm failed to converge because the input matrix is "
                              "ill-conditioned or has too many repeated singular values (error code: %d).",
                              pre, (int)info);
      free(iwork);
      wk_release(Vh);
      return done(st, ma.c, U, S, buf);
    }
    for (int64_t i = 0; i < k; i++) wk_store_f64((char *)wk_tensor_data(S) + (size_t)(b * k + i) * ses, sdt, s[i]);
    store_mat(U, b, m, uc, u, m, false);
    store_mat(Vh, b, vr, n, vt, vr, false);
  }
  free(iwork);
  outs[0] = WK_VT(U), outs[1] = WK_VT(S), outs[2] = WK_VT(Vh);
  return done(WK_OK, ma.c, NULL, NULL, buf);
}

/* ---- linalg_solve(A, B, left): A and B expanded to the broadcast batch; B a vector (batch) or matrices ---- */
static bool vector_rhs(wk_tensor *a, wk_tensor *b) {
  int an = wk_tensor_dim(a), bn = wk_tensor_dim(b);
  if (bn == 1) return true;
  if (bn != an - 1) return false;
  for (int i = 0; i < bn; i++)
    if (wk_tensor_size(b, i) != wk_tensor_size(a, i)) return false;
  return true;
}
static wk_status k_solve(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  wk_tensor *A = T(0), *B = T(1);
  bool left = args[2].u.b, vec = vector_rhs(A, B);
  const wk_meta_out *mo = &ctx->meta[0];
  int64_t n = wk_tensor_size(A, wk_tensor_dim(A) - 1);
  /* the broadcast shapes: A [batch, n, n], B [batch, r, c] */
  int nb = mo->ndim - (vec ? 1 : 2);
  int64_t as[WK_MAX_DIMS], bs[WK_MAX_DIMS];
  memcpy(as, mo->sizes, sizeof(int64_t) * (size_t)nb);
  memcpy(bs, mo->sizes, sizeof(int64_t) * (size_t)nb);
  as[nb] = as[nb + 1] = n;
  int bnd = nb;
  if (vec)
    bs[bnd++] = n, bs[bnd++] = 1;
  else
    bs[bnd] = mo->sizes[nb], bs[bnd + 1] = mo->sizes[nb + 1], bnd += 2;
  wk_tensor *bv = vec ? wk_unsqueeze(B, -1) : wk_retain(B);
  wk_tensor *ae = wk_expand(A, as, nb + 2), *be = bv ? wk_expand(bv, bs, bnd) : NULL;
  wk_release(bv);
  mats ma, mb;
  bool ok = ae && be && mats_open(&ma, ae);
  if (ok && !mats_open(&mb, be)) {
    wk_release(ma.c);
    ok = false;
  }
  wk_release(ae);
  wk_release(be);
  if (!ok) return wk_last_error();
  int64_t r = mb.r, c = mb.cols, nrhs = left ? c : r;
  if (!fits_lp(n * n) || !fits_lp(r * c)) return done(too_big("linalg_solve()"), ma.c, mb.c, NULL, NULL);
  wk_tensor *X = wk_meta_empty(ctx, 0);
  double *buf = malloc(sizeof(double) * (size_t)(n * n + r * c + n + 1));
  if (!X || !buf) return done(X ? out_of_memory("linalg_solve()") : wk_last_error(), ma.c, mb.c, X, buf);
  double *a = buf, *bb = a + n * n;
  lp_int *ipiv = malloc(sizeof(lp_int) * (size_t)(n + 1));
  if (!ipiv) return done(out_of_memory("linalg_solve()"), ma.c, mb.c, X, buf);
  for (int64_t b = 0; b < ma.batch; b++) {
    /* left: A X = B; right: X A = B <=> A^T X^T = B^T (col-major of B^T is B's row-major data) */
    mats_load(&ma, b, a, !left);
    mats_load(&mb, b, bb, !left);
    lp_int N = lpi(n), NR = lpi(nrhs), lda = lpi(n > 1 ? n : 1), info = 0;
    if (n > 0 && nrhs > 0) dgesv_(&N, &NR, a, &lda, ipiv, bb, &lda, &info);
    if (info > 0) {
      char pre[64];
      batch_prefix(pre, sizeof pre, ma.batch, b);
      free(ipiv);
      wk_status s = wk_error(WK_ERR_INVALID_ARG, "linalg_solve(): %sThe solver failed because the input matrix is singular.", pre);
      return done(s, ma.c, mb.c, X, buf);
    }
    /* X [r, c] row-major; left: from col-major bb (ld n = r); right: bb holds X^T col-major = X row-major */
    store_mat(X, b, r, c, bb, left ? r : c, !left);
  }
  free(ipiv);
  outs[0] = WK_VT(X);
  return done(WK_OK, ma.c, mb.c, NULL, buf);
}

/* ---- linalg_slogdet(A): LU (getrf); sign = prod sign(u_ii) * (-1)^swaps, logabsdet = sum log|u_ii|; a singular
 * matrix gives (0, -inf) as PyTorch ---- */
static wk_status k_slogdet(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  mats m;
  if (!mats_open(&m, T(0))) return wk_last_error();
  int64_t n = m.r;
  if (!fits_lp(n * n)) return done(too_big("linalg_slogdet()"), m.c, NULL, NULL, NULL);
  wk_tensor *Sg = wk_meta_empty(ctx, 0), *Ld = wk_meta_empty(ctx, 1);
  double *buf = malloc(sizeof(double) * (size_t)(n * n + 1));
  lp_int *ipiv = malloc(sizeof(lp_int) * (size_t)(n + 1));
  if (!Sg || !Ld || !buf || !ipiv) {
    free(ipiv);
    return done(Sg && Ld ? out_of_memory("linalg_slogdet()") : wk_last_error(), m.c, Sg, Ld, buf);
  }
  wk_dtype dt = wk_tensor_dtype(Sg);
  size_t es = wk_dtype_size(dt);
  for (int64_t b = 0; b < m.batch; b++) {
    mats_load(&m, b, buf, false);
    lp_int N = lpi(n), lda = lpi(n > 1 ? n : 1), info = 0;
    if (n > 0) dgetrf_(&N, &N, buf, &lda, ipiv, &info);
    double sign = 1, la = 0;
    for (int64_t i = 0; i < n; i++) {
      double d = buf[i + i * n];
      if (ipiv[i] != i + 1) sign = -sign;
      if (d < 0) sign = -sign;
      if (d == 0) sign = 0;
      la += log(fabs(d));
    }
    if (sign == 0) la = -INFINITY;
    wk_store_f64((char *)wk_tensor_data(Sg) + (size_t)b * es, dt, sign);
    wk_store_f64((char *)wk_tensor_data(Ld) + (size_t)b * es, dt, la);
  }
  free(ipiv);
  outs[0] = WK_VT(Sg), outs[1] = WK_VT(Ld);
  (void)args;
  return done(WK_OK, m.c, NULL, NULL, buf);
}

wk_status cpu_register_lapack(void) {
  static const wk_kernel_row rows[] = {
      {"linalg_cholesky", k_cholesky, NULL}, {"linalg_qr", k_qr, NULL},       {"linalg_eigh", k_eigh, NULL},
      {"linalg_svd", k_svd, NULL},           {"linalg_solve", k_solve, NULL}, {"linalg_slogdet", k_slogdet, NULL},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    wk_status s = cpu_reg_row(&rows[i]);
    if (s != WK_OK) return s;
  }
  return WK_OK;
}

#else

wk_status cpu_register_lapack(void) { return WK_OK; } /* configure found no LAPACK: no kernels */

#endif
