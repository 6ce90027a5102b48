/* Issue 21's speed rows for the ops added by engineer A: reductions (mode),
 * indexing (unique, unique_consecutive, scatter_reduce, index_put,
 * masked_scatter) and linalg (einsum, baddbmm, addbmm, tensordot, kron, the
 * norms and the decompositions and solvers), each on 1M-element float32
 * inputs: [1000, 1000] (scans and reductions along the last dim), or
 * [100, 100, 100] for the batched products. The median of timed calls in ms,
 * printed as "linalg_<op>_ms <value>" for bench/linalg_surface.py's PyTorch
 * twin (bench/linalg_surface.sh prints the ratios).
 * Usage: bench_linalg_surface [REPS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wick/wick.h>

#include "bench_util.h"

static wk_tensor *values(const int64_t *s, int nd, double lo, double hi, wk_dtype dt) {
  int64_t n = 1;
  for (int i = 0; i < nd; i++) n *= s[i];
  double *v = malloc(sizeof(double) * (size_t)n);
  if (!v) return NULL;
  for (int64_t i = 0; i < n; i++) v[i] = lo + (hi - lo) * (double)rand() / ((double)RAND_MAX + 1);
  wk_tensor *t = wk_tensor_from_data(v, WK_F64, s, nd), *r = t ? wk_to_dtype(t, dt) : NULL;
  free(v);
  wk_release(t);
  return r;
}

static double g_t[1000];
/* Times op(a) reps times (one warm-up call) and prints the median. */
static int timed(const char *label, const char *name, wk_value *a, int n, int reps) {
  if (!bench_selected(label)) return 0;
  wk_op *op = wk_op_find(name);
  if (!op) return 1;
  int nargs = wk_op_num_args(op), nouts = wk_op_num_outs(op);
  for (int i = n; i < nargs; i++) a[i] = wk_op_arg_default(op, i) ? *wk_op_arg_default(op, i) : WK_VNONE;
  for (int r = -1; r < reps; r++) {
    wk_value o[4];
    double t0 = bench_now();
    if (wk_op_call(op, a, nargs, o) != WK_OK) {
      fprintf(stderr, "bench_linalg_surface: %s: %s\n", name, wk_last_error_message());
      return 1;
    }
    if (r >= 0) g_t[r] = bench_now() - t0;
    for (int i = 0; i < nouts; i++) wk_release(o[i].u.t);
  }
  printf("linalg_%s_ms %.3f\n", label, 1e3 * bench_median(g_t, reps));
  fflush(stdout);
  return 0;
}
#define RUN(label, name, ...)                                                                 \
  do {                                                                                        \
    wk_value a__[8] = {__VA_ARGS__};                                                          \
    if (timed(label, name, a__, (int)(sizeof((wk_value[]){__VA_ARGS__}) / sizeof(wk_value)), \
              strncmp(name, "linalg_", 7) || !strcmp(name, "linalg_vector_norm") ? reps : lreps)) \
      return 1;                                                                               \
  } while (0)

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 11, lreps = reps < 3 ? reps : 3; /* 1000 x 1000 decompositions: 3 calls */
  if (wk_init() != WK_OK || reps < 1 || reps > 1000) return 1;
  srand(1);
  wk_scope_begin();
  int64_t m[2] = {1000, 1000}, b3[3] = {100, 100, 100}, n1m = 1000000, n1k = 1000;
  wk_options f32 = {.dtype = WK_F32};
  wk_tensor *x = values(m, 2, -2, 2, WK_F32), *y = values(m, 2, -2, 2, WK_F32);
  wk_tensor *small = values(m, 2, 0, 1000, WK_I64); /* 1000 distinct values */
  wk_tensor *smallf = wk_to_dtype(small, WK_F32), *flat_small = wk_reshape(smallf, &n1m, 1);
  wk_tensor *idx = values(m, 2, 0, 1000, WK_I64); /* scatter_reduce: 1000 targets per row */
  wk_tensor *perm = wk_randperm(1000, (wk_options){.dtype = WK_I64});
  wk_tensor *mask = wk_gt_scalar(x, 0), *src = wk_reshape(y, &n1m, 1);
  wk_tensor *ba = values(b3, 3, -1, 1, WK_F32), *bb = values(b3, 3, -1, 1, WK_F32), *bs = values(b3, 3, -1, 1, WK_F32);
  wk_tensor *v1 = values(&n1k, 1, -1, 1, WK_F32), *v2 = values(&n1k, 1, -1, 1, WK_F32);
  wk_tensor *xt = wk_transpose(x, 0, 1);
  wk_tensor *spd = wk_add(wk_matmul(x, xt), wk_mul_scalar(wk_eye(1000, 1000, f32), 1000.0));
  wk_tensor *col = values((const int64_t[]){1000, 1}, 2, -1, 1, WK_F32);
  wk_tensor *ts2[2] = {x, y};
  int64_t last = -1;
  if (!x || !y || !smallf || !flat_small || !idx || !perm || !mask || !src || !ba || !bb || !bs || !v1 || !v2 || !spd ||
      !col)
    return 1;
  /* reductions */
  RUN("mode", "mode", WK_VT(smallf), WK_VI(-1), WK_VB(false));
  /* indexing */
  RUN("unique", "unique", WK_VT(flat_small), WK_VB(true), WK_VB(true), WK_VB(true), WK_VNONE);
  RUN("unique_consecutive", "unique_consecutive", WK_VT(flat_small), WK_VB(true), WK_VB(true), WK_VNONE);
  RUN("scatter_reduce_amax", "scatter_reduce.two", WK_VT(x), WK_VI(1), WK_VT(idx), WK_VT(y), WK_VS("amax"), WK_VB(true));
  RUN("scatter_reduce_sum", "scatter_reduce.two", WK_VT(x), WK_VI(1), WK_VT(idx), WK_VT(y), WK_VS("sum"), WK_VB(true));
  wk_tensor *ip[1] = {perm};
  RUN("index_put", "index_put", WK_VT(x), WK_VTS(ip, 1), WK_VT(y), WK_VB(false));
  RUN("index_put_accumulate", "index_put", WK_VT(x), WK_VTS(ip, 1), WK_VT(y), WK_VB(true));
  wk_tensor *dup[1] = {wk_randint(0, 1000, &n1k, 1, (wk_options){.dtype = WK_I64})}; /* repeated rows */
  if (!dup[0]) return 1;
  RUN("index_put_accumulate_duplicates", "index_put", WK_VT(x), WK_VTS(dup, 1), WK_VT(y), WK_VB(true));
  RUN("masked_scatter", "masked_scatter", WK_VT(x), WK_VT(mask), WK_VT(src));
  /* linalg: products and norms */
  RUN("einsum_ij_jk", "einsum", WK_VS("ij,jk->ik"), WK_VTS(ts2, 2), WK_VNONE);
  RUN("einsum_ij_ij_i", "einsum", WK_VS("ij,ij->i"), WK_VTS(ts2, 2), WK_VNONE);
  RUN("baddbmm", "baddbmm", WK_VT(bs), WK_VT(ba), WK_VT(bb), WK_VF(0.5), WK_VF(2.0));
  wk_tensor *x100 = wk_narrow(wk_narrow(x, 0, 0, 100), 1, 0, 100);
  RUN("addbmm", "addbmm", WK_VT(x100), WK_VT(ba), WK_VT(bb), WK_VF(0.5), WK_VF(2.0));
  RUN("tensordot", "tensordot", WK_VT(x), WK_VT(y), WK_VINTS(((int64_t[]){1}), 1), WK_VINTS(((int64_t[]){0}), 1));
  RUN("kron", "kron", WK_VT(v1), WK_VT(v2));
  RUN("vector_norm", "linalg_vector_norm", WK_VT(x), WK_VF(2), WK_VINTS(&last, 1), WK_VB(false), WK_VNONE);
  RUN("matrix_norm_fro", "linalg_matrix_norm.str_ord", WK_VT(x), WK_VS("fro"));
  /* decompositions and solvers: [1000, 1000] */
  RUN("cholesky", "linalg_cholesky", WK_VT(spd), WK_VB(false));
  RUN("qr", "linalg_qr", WK_VT(x), WK_VS("reduced"));
  RUN("eigh", "linalg_eigh", WK_VT(spd), WK_VS("L"));
  RUN("svd", "linalg_svd", WK_VT(x), WK_VB(false), WK_VNONE);
  RUN("solve", "linalg_solve", WK_VT(spd), WK_VT(col), WK_VB(true));
  RUN("slogdet", "linalg_slogdet", WK_VT(x));
  RUN("inv", "linalg_inv", WK_VT(spd));
  RUN("det", "linalg_det", WK_VT(x));
  RUN("pinv", "linalg_pinv", WK_VT(x), WK_VNONE, WK_VNONE, WK_VB(false));
  RUN("lstsq", "linalg_lstsq", WK_VT(x), WK_VT(col), WK_VNONE, WK_VNONE);
  wk_scope_end();
  return 0;
}
