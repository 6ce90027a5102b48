/* Issue 21's speed rows: each op added for the op surface on a 1M-element
 * float32 input ([1000, 1000]; scans and reductions along the last dim), the
 * median of timed calls in ms, printed as "surface_<op>_ms <value>" for
 * bench/surface.py's PyTorch twin (bench/surface.sh prints the ratios).
 * Usage: bench_surface [REPS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wick/wick.h>

#include "bench_util.h"

enum { A_X, A_XPOS, A_XUNIT, A_XY, A_XYPOS, A_INT, A_INTY, A_DIM, A_DIMS, A_LERP, A_ADDC, A_DIAG, A_TILE, A_RI,
       A_PRELU, A_IDXSRC, A_IDXFILL, A_TAKE, A_TAD, A_KTH, A_SS, A_BUCKET, A_BINCOUNT, A_HISTC };

static const struct {
  const char *op, *label;
  int kind;
} g_ops[] = {
    {"expm1", "expm1", A_X},          {"log2", "log2", A_XPOS},
    {"log10", "log10", A_XPOS},       {"exp2", "exp2", A_X},
    {"tan", "tan", A_XUNIT},          {"asin", "asin", A_XUNIT},
    {"acos", "acos", A_XUNIT},        {"atan", "atan", A_X},
    {"sinh", "sinh", A_X},            {"cosh", "cosh", A_X},
    {"asinh", "asinh", A_X},          {"acosh", "acosh", A_XPOS},
    {"atanh", "atanh", A_XUNIT},      {"reciprocal", "reciprocal", A_XPOS},
    {"square", "square", A_X},        {"trunc", "trunc", A_X},
    {"frac", "frac", A_X},            {"erfinv", "erfinv", A_XUNIT},
    {"softplus", "softplus", A_X},    {"elu", "elu", A_X},
    {"selu", "selu", A_X},            {"celu", "celu", A_X},
    {"mish", "mish", A_X},            {"hardswish", "hardswish", A_X},
    {"hardsigmoid", "hardsigmoid", A_X}, {"hardtanh", "hardtanh", A_X},
    {"relu6", "relu6", A_X},          {"log_sigmoid", "logsigmoid", A_X},
    {"isfinite", "isfinite", A_X},    {"signbit", "signbit", A_X},
    {"bitwise_not", "bitwise_not", A_INT}, {"atan2", "atan2", A_XY},
    {"fmod", "fmod", A_XYPOS},        {"remainder", "remainder", A_XYPOS},
    {"hypot", "hypot", A_XY},         {"logaddexp", "logaddexp", A_XY},
    {"copysign", "copysign", A_XY},   {"bitwise_and", "bitwise_and", A_INTY},
    {"bitwise_left_shift", "bitwise_left_shift", A_INTY}, {"lerp.Scalar", "lerp", A_LERP},
    {"addcmul", "addcmul", A_ADDC},   {"addcdiv", "addcdiv", A_ADDC},
    {"clamp_min", "clamp_min", A_X},  {"amax", "amax", A_DIMS},
    {"aminmax", "aminmax", A_DIM},    {"nansum", "nansum", A_DIMS},
    {"nanmean", "nanmean", A_DIMS},   {"var_mean.correction", "var_mean", A_DIMS},
    {"count_nonzero", "count_nonzero", A_DIMS}, {"cumprod", "cumprod", A_DIM},
    {"cummax", "cummax", A_DIM},      {"logcumsumexp", "logcumsumexp", A_DIM},
    {"tril", "tril", A_DIAG},         {"diag", "diag", A_DIAG},
    {"tile", "tile", A_TILE},         {"repeat_interleave.self_int", "repeat_interleave", A_RI},
    /* glu ... histc (added later) */
    {"glu", "glu", A_DIM},            {"prelu", "prelu", A_PRELU},
    {"index_add", "index_add", A_IDXSRC}, {"index_copy", "index_copy", A_IDXSRC},
    {"index_fill.int_Scalar", "index_fill", A_IDXFILL}, {"take", "take", A_TAKE},
    {"take_along_dim", "take_along_dim", A_TAD}, {"argsort", "argsort", A_DIM},
    {"kthvalue", "kthvalue", A_KTH},  {"median.dim", "median", A_DIM},
    {"nonzero", "nonzero", A_X},      {"searchsorted.Tensor", "searchsorted", A_SS},
    {"bucketize.Tensor", "bucketize", A_BUCKET}, {"bincount", "bincount", A_BINCOUNT},
    {"histc", "histc", A_HISTC},
};

/* A [1000, 1000] tensor of values in [lo, hi) (seeded). */
static wk_tensor *values(double lo, double hi, wk_dtype dt) {
  int64_t s[2] = {1000, 1000};
  double *v = malloc(sizeof(double) * 1000000);
  if (!v) return NULL;
  for (int i = 0; i < 1000000; i++) v[i] = lo + (hi - lo) * (double)rand() / ((double)RAND_MAX + 1);
  wk_tensor *t = wk_tensor_from_data(v, WK_F64, s, 2), *r = t ? wk_to_dtype(t, dt) : NULL;
  free(v);
  wk_release(t);
  return r;
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 11;
  if (wk_init() != WK_OK || reps < 1 || reps > 1000) return 1;
  srand(1);
  wk_tensor *x = values(-2, 2, WK_F32), *xp = values(0.5, 3, WK_F32), *xu = values(-0.9, 0.9, WK_F32);
  wk_tensor *y = values(-2, 2, WK_F32), *yp = values(0.5, 3, WK_F32), *xi = values(-1000, 1000, WK_I64);
  wk_tensor *yi = values(0, 8, WK_I64), *v = NULL;
  int64_t last[1] = {-1}, tile[2] = {1, 1};
  { /* repeat_interleave's input: the 1M elements as a vector (diag takes the matrix: its diagonal) */
    int64_t n = 1000000;
    wk_tensor *flat = x ? wk_reshape(x, &n, 1) : NULL;
    v = flat ? wk_clone(flat) : NULL;
    wk_release(flat);
  }
  /* glu ... histc: a weight per column, a permutation of the rows, 1M flat and 1000 per-row indices,
   * 128 sorted boundaries in [-2, 2), 1M small counts */
  int64_t n1k = 1000, n1m = 1000000, n128 = 128;
  wk_tensor *w = wk_narrow(yp, 0, 0, 1), *wv = w ? wk_reshape(w, &n1k, 1) : NULL;
  wk_tensor *perm = wk_randperm(1000, (wk_options){.dtype = WK_I64});
  wk_tensor *i1m = values(0, 1e6, WK_I64), *flat_i = i1m ? wk_reshape(i1m, &n1m, 1) : NULL;
  wk_tensor *rows = values(0, 1000, WK_I64), *ramp = wk_linspace(-2, 2, n128, (wk_options){.dtype = WK_F32});
  wk_tensor *cnt = yi ? wk_reshape(yi, &n1m, 1) : NULL;
  if (!x || !xp || !xu || !y || !yp || !xi || !yi || !v || !wv || !perm || !flat_i || !rows || !ramp || !cnt) return 1;
  static double t[1000];
  for (size_t k = 0; k < sizeof g_ops / sizeof g_ops[0]; k++) {
    wk_value a[5];
    int n = 0;
    switch (g_ops[k].kind) {
      case A_X: a[n++] = WK_VT(x); break;
      case A_XPOS: a[n++] = WK_VT(xp); break;
      case A_XUNIT: a[n++] = WK_VT(xu); break;
      case A_XY: a[n++] = WK_VT(x), a[n++] = WK_VT(y); break;
      case A_XYPOS: a[n++] = WK_VT(x), a[n++] = WK_VT(yp); break;
      case A_INT: a[n++] = WK_VT(xi); break;
      case A_INTY: a[n++] = WK_VT(xi), a[n++] = WK_VT(yi); break;
      case A_DIM: a[n++] = WK_VT(x), a[n++] = WK_VI(-1); break;
      case A_DIMS: a[n++] = WK_VT(x), a[n++] = WK_VINTS(last, 1); break;
      case A_LERP: a[n++] = WK_VT(x), a[n++] = WK_VT(y), a[n++] = WK_VF(0.3); break;
      case A_ADDC: a[n++] = WK_VT(x), a[n++] = WK_VT(y), a[n++] = WK_VT(yp), a[n++] = WK_VF(0.5); break;
      case A_DIAG: a[n++] = WK_VT(x), a[n++] = WK_VI(0); break;
      case A_TILE: a[n++] = WK_VT(x), a[n++] = WK_VINTS(tile, 2); break;
      case A_PRELU: a[n++] = WK_VT(x), a[n++] = WK_VT(wv); break;
      case A_IDXSRC: a[n++] = WK_VT(x), a[n++] = WK_VI(0), a[n++] = WK_VT(perm), a[n++] = WK_VT(y); break;
      case A_IDXFILL: a[n++] = WK_VT(x), a[n++] = WK_VI(0), a[n++] = WK_VT(perm), a[n++] = WK_VF(1.0); break;
      case A_TAKE: a[n++] = WK_VT(x), a[n++] = WK_VT(flat_i); break;
      case A_TAD: a[n++] = WK_VT(x), a[n++] = WK_VT(rows), a[n++] = WK_VI(-1); break;
      case A_KTH: a[n++] = WK_VT(x), a[n++] = WK_VI(500), a[n++] = WK_VI(-1); break;
      case A_SS: a[n++] = WK_VT(ramp), a[n++] = WK_VT(x); break;
      case A_BUCKET: a[n++] = WK_VT(x), a[n++] = WK_VT(ramp); break;
      case A_BINCOUNT: a[n++] = WK_VT(cnt); break;
      case A_HISTC: a[n++] = WK_VT(x), a[n++] = WK_VI(100), a[n++] = WK_VI(-2), a[n++] = WK_VI(2); break;
      default: a[n++] = WK_VT(v), a[n++] = WK_VI(1), a[n++] = WK_VI(0); break;
    }
    if (g_ops[k].kind == A_X && !strcmp(g_ops[k].op, "clamp_min")) a[n++] = WK_VF(0.0);
    wk_op *op = wk_op_find(g_ops[k].op);
    if (!op) return 1;
    int nargs = wk_op_num_args(op), nouts = wk_op_num_outs(op);
    for (int i = n; i < nargs; i++) a[i] = wk_op_arg_default(op, i) ? *wk_op_arg_default(op, i) : WK_VNONE;
    for (int r = -1; r < reps; r++) {
      wk_value o[4];
      double t0 = bench_now();
      if (wk_op_call(op, a, nargs, o) != WK_OK) {
        fprintf(stderr, "bench_surface: %s: %s\n", g_ops[k].op, wk_last_error_message());
        return 1;
      }
      if (r >= 0) t[r] = bench_now() - t0;
      for (int i = 0; i < nouts; i++) wk_release(o[i].u.t);
    }
    printf("surface_%s_ms %.3f\n", g_ops[k].label, 1e3 * bench_median(t, reps));
  }
  wk_tensor *all[] = {x, xp, xu, y, yp, xi, yi, v, w, wv, perm, i1m, flat_i, rows, ramp, cnt};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) wk_release(all[i]);
  return 0;
}
