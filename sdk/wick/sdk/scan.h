/* Wick SDK: the cumulative ops other than cumsum (cumprod, logcumsumexp,
 * cummax, cummin) as every backend computes one line of them: in double for
 * floating inputs (PyTorch's cpu accumulation type), in wrapping int64 for
 * integers and bools, with PyTorch's NaN and tie rules. Also valid in CUDA
 * device code. The core's meta function has checked the arguments. */
#ifndef WICK_SDK_SCAN_H
#define WICK_SDK_SCAN_H

#include <math.h>
#include <stdint.h>
#ifndef __CUDACC__
#include <wick/sdk/kernel.h> /* what binary.h's host part reads */
#endif
#include <wick/sdk/binary.h> /* WK__SDK_HD */

enum { WK_SCAN_cumprod, WK_SCAN_logcumsumexp, WK_SCAN_cummax, WK_SCAN_cummin };

/* PyTorch's _log_add_exp_helper(acc, x): NaN propagates, equal infinities give themselves. */
WK__SDK_HD double wk_log_add_exp_scan(double a, double x) {
  double mn = x != x ? x : (x < a ? x : a), mx = x != x ? x : (a < x ? x : a);
  if (mn != mx || isfinite(mn)) return log1p(exp(mn - mx)) + mx;
  return a;
}

/* One line of len elements at stride st (in elements) of x, written to y (and
 * to idx, the position of the running extreme, for cummax/cummin). cummax
 * takes the later of equal values and a NaN as the maximum (cummin alike). */
WK__SDK_HD void wk_scan_line_f64(int op, const double *x, double *y, int64_t *idx, int64_t len, int64_t st) {
  double acc = op == WK_SCAN_cumprod ? 1.0 : op == WK_SCAN_logcumsumexp ? -INFINITY : (len > 0 ? x[0] : 0.0);
  int64_t best = 0;
  for (int64_t k = 0; k < len; k++) {
    double v = x[k * st];
    switch (op) {
      case WK_SCAN_cumprod: acc *= v; break;
      case WK_SCAN_logcumsumexp: acc = wk_log_add_exp_scan(acc, v); break;
      case WK_SCAN_cummax:
        if (v != v || (acc == acc && v >= acc)) acc = v, best = k;
        break;
      default:
        if (v != v || (acc == acc && v <= acc)) acc = v, best = k;
        break;
    }
    y[k * st] = acc;
    if (idx) idx[k * st] = best;
  }
}
/* The same on int64 (cumprod wraps around; logcumsumexp has no integer form). */
WK__SDK_HD void wk_scan_line_i64(int op, const int64_t *x, int64_t *y, int64_t *idx, int64_t len, int64_t st) {
  uint64_t prod = 1;
  int64_t acc = len > 0 ? x[0] : 0, best = 0;
  for (int64_t k = 0; k < len; k++) {
    int64_t v = x[k * st];
    if (op == WK_SCAN_cumprod) {
      acc = (int64_t)(prod *= (uint64_t)v);
    } else if (op == WK_SCAN_cummax ? v >= acc : v <= acc) {
      acc = v, best = k;
    }
    y[k * st] = acc;
    if (idx) idx[k * st] = best;
  }
}

#endif
