/* Symbolic dims: m * floor((a * S + b) / c) + d over at most two symbols.
 * Traces and shape propagation see only integers (the meta functions compute
 * with int64); they evaluate the program at sample points (each symbol moved
 * alone, by small steps and by WK__SYM_PERIOD, and pairs together) and fit
 * each int that changed. Small steps pin the floor's offset, the period
 * (divisible by every divisor up to 64 that conv and pool strides produce)
 * gives the exact slope a*m/c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"

static const int64_t k_offsets[] = {1, 2, 3, 4, 5, 6, 7, 16, 29, 47, WK__SYM_PERIOD, 2 * WK__SYM_PERIOD};
#define NOFF ((int)(sizeof k_offsets / sizeof k_offsets[0]))

static int64_t floor_div(int64_t x, int64_t c) {
  int64_t q = x / c;
  if ((x % c) != 0 && x < 0) q--;
  return q;
}

static int64_t gcd64(int64_t x, int64_t y) {
  if (x < 0) x = -x;
  if (y < 0) y = -y;
  while (y) {
    int64_t t = x % y;
    x = y;
    y = t;
  }
  return x;
}

int64_t wk_symdim_eval(wk_symdim d, const int64_t *syms) {
  int64_t s = 1;
  if (d.a != 0 && (d.sym0 >= 0 || d.sym1 >= 0) && !syms) return 0; /* symbolic, and no values given */
  if (d.sym0 >= 0) s *= syms[d.sym0];
  if (d.sym1 >= 0) s *= syms[d.sym1];
  if (d.sym0 < 0 && d.sym1 < 0) s = 1;
  return d.m * floor_div(d.a * s + d.b, d.c > 0 ? d.c : 1) + d.d;
}

bool wk__sym_is_const(wk_symdim d) { return d.a == 0 || (d.sym0 < 0 && d.sym1 < 0); }

bool wk__sym_equal(wk_symdim x, wk_symdim y) {
  if (wk__sym_is_const(x) && wk__sym_is_const(y)) return wk_symdim_eval(x, NULL) == wk_symdim_eval(y, NULL);
  return x.a == y.a && x.b == y.b && x.c == y.c && x.m == y.m && x.d == y.d && x.sym0 == y.sym0 && x.sym1 == y.sym1;
}

int wk_symdim_str(const wk_graph *g, wk_symdim d, char *buf, size_t n) {
  (void)g;
  if (!buf || !n) return 0;
  if (wk__sym_is_const(d)) return snprintf(buf, n, "%lld", (long long)wk_symdim_eval(d, NULL));
  char term[64], inner[128], outer[200];
  if (d.sym0 >= 0 && d.sym1 >= 0)
    snprintf(term, sizeof term, "s%d*s%d", d.sym0, d.sym1);
  else
    snprintf(term, sizeof term, "s%d", d.sym0 >= 0 ? d.sym0 : d.sym1);
  int64_t b = d.b, dd = d.d;
  if (d.c == 1) { /* no floor: fold b into d */
    dd += d.m * b;
    b = 0;
  }
  int64_t a = d.a * (d.c == 1 ? d.m : 1);
  bool compound = false;
  if (a == 1)
    snprintf(inner, sizeof inner, "%s", term);
  else if (a == -1)
    snprintf(inner, sizeof inner, "-%s", term), compound = true;
  else
    snprintf(inner, sizeof inner, "%s*%lld", term, (long long)a), compound = true;
  if (d.sym0 >= 0 && d.sym1 >= 0) compound = true;
  if (b) {
    size_t k = strlen(inner);
    snprintf(inner + k, sizeof inner - k, "%+lld", (long long)b);
    compound = true;
  }
  char div[160];
  if (d.c > 1 && compound)
    snprintf(div, sizeof div, "(%s)/%lld", inner, (long long)d.c);
  else if (d.c > 1)
    snprintf(div, sizeof div, "%s/%lld", inner, (long long)d.c);
  else
    snprintf(div, sizeof div, "%s", inner);
  if (d.c > 1 && d.m != 1)
    snprintf(outer, sizeof outer, "%lld*(%s)", (long long)d.m, div);
  else
    snprintf(outer, sizeof outer, "%s", div);
  if (dd) return snprintf(buf, n, "%s%+lld", outer, (long long)dd);
  return snprintf(buf, n, "%s", outer);
}

wk_status wk__sym_points_make(const int64_t *hints, int nsyms, wk__sym_points *p) {
  int npairs = nsyms * (nsyms - 1) / 2;
  int np = 1 + nsyms * NOFF + 2 * npairs;
  p->v = wk_calloc((size_t)np, sizeof *p->v);
  if (!p->v) return wk_error(WK_ERR_NO_MEMORY, "graph: out of memory");
  p->npts = np;
  p->nsyms = nsyms;
  for (int r = 0; r < np; r++)
    for (int k = 0; k < nsyms; k++) p->v[r][k] = hints[k];
  int r = 1;
  for (int k = 0; k < nsyms; k++)
    for (int o = 0; o < NOFF; o++) p->v[r++][k] += k_offsets[o];
  for (int k = 0; k < nsyms; k++)
    for (int l = k + 1; l < nsyms; l++) {
      p->v[r][k] += 1;
      p->v[r++][l] += 2;
      p->v[r][k] += WK__SYM_PERIOD;
      p->v[r++][l] += 3;
    }
  return WK_OK;
}

void wk__sym_points_free(wk__sym_points *p) {
  free(p->v);
  p->v = NULL;
  p->npts = 0;
}

static bool only_varies(const wk__sym_points *p, int r, int k) {
  for (int j = 0; j < p->nsyms; j++)
    if (j != k && p->v[r][j] != p->v[0][j]) return false;
  return p->v[r][k] != p->v[0][k];
}

static bool fits_all(const wk__sym_points *p, const int64_t *vals, wk_symdim d) {
  for (int r = 0; r < p->npts; r++)
    if (wk_symdim_eval(d, p->v[r]) != vals[r]) return false;
  return true;
}

/* f(s) = m*floor((a*s+b)/c)+d in symbol k, from the points that move k alone. */
static bool fit_one(const wk__sym_points *p, const int64_t *vals, int k, wk_symdim *out) {
  int64_t h = p->v[0][k], delta = 0;
  bool have = false;
  for (int r = 1; r < p->npts && !have; r++)
    if (only_varies(p, r, k) && p->v[r][k] == h + WK__SYM_PERIOD) {
      delta = vals[r] - vals[0];
      have = true;
    }
  if (!have || delta == 0) return false;
  int64_t g = gcd64(delta, WK__SYM_PERIOD);
  int64_t num = delta / g, q = WK__SYM_PERIOD / g; /* slope m*a/c = num/q */
  for (int64_t c = q; c <= WK__SYM_PERIOD; c += q) {
    if (WK__SYM_PERIOD % c) continue;
    int64_t ma = num * (c / q);
    int64_t ama = ma < 0 ? -ma : ma;
    for (int64_t m = 1; m <= ama; m++) {
      if (ama % m) continue;
      if (c == 1 && m != 1) break;
      int64_t a = ma / m;
      if (c > 1 && gcd64(a, c) != 1) continue;
      for (int64_t b = 0; b < c; b++) {
        wk_symdim d = {a, b, c, m, 0, k, -1};
        d.d = vals[0] - wk_symdim_eval(d, p->v[0]);
        if (fits_all(p, vals, d)) {
          *out = d;
          return true;
        }
      }
    }
  }
  return false;
}

bool wk__sym_fit(const wk__sym_points *p, const int64_t *vals, wk_symdim *out) {
  int deps[WK__SYM_MAX], nd = 0;
  for (int k = 0; k < p->nsyms; k++) {
    bool dep = false;
    for (int r = 1; r < p->npts && !dep; r++)
      if (only_varies(p, r, k) && vals[r] != vals[0]) dep = true;
    if (dep) deps[nd++] = k;
  }
  if (nd == 0) {
    *out = WK_SYM_CONST(vals[0]);
    return fits_all(p, vals, *out);
  }
  if (nd == 1) return fit_one(p, vals, deps[0], out);
  if (nd == 2) { /* a*sk*sl + d */
    int k = deps[0], l = deps[1];
    for (int r = 1; r < p->npts; r++) {
      if (!only_varies(p, r, k)) continue;
      int64_t step = (p->v[r][k] - p->v[0][k]) * p->v[0][l];
      int64_t diff = vals[r] - vals[0];
      if (step == 0 || diff % step) return false;
      wk_symdim d = {diff / step, 0, 1, 1, 0, k, l};
      d.d = vals[0] - wk_symdim_eval(d, p->v[0]);
      if (!fits_all(p, vals, d)) return false;
      *out = d;
      return true;
    }
  }
  return false;
}
