/* cpu plugin, private: the reduction engine (reduce_engine.c) shared by the
 * reduction ops (reduce.c) and the cumsum scan (scan.c). A reduction sees its
 * input as a contiguous [outer, n, inner] array (the reduced dims in the
 * middle; when they are not consecutive in a contiguous input, a copy moves
 * them last). Each output element's n values are cut into fixed blocks whose
 * partial results combine in block order, with the same arithmetic on every
 * path, so results depend neither on the thread count nor on the layout. */
#ifndef WICK_CPU_REDUCE_H
#define WICK_CPU_REDUCE_H

#include <stdlib.h>

#include "cpu.h"

#define RGRAIN 32768 /* elements below which work stays on one thread */

/* ---- plan: the reduced dims and the data layout (the op's meta function
 * checked the dims and decided the result's shape) ---- */
typedef struct {
  wk_tensor *c;               /* contiguous data viewed as [outer, n, inner] (new reference) */
  int64_t outer, n, inner;    /* n: elements reduced into each output element */
  int64_t rows;               /* output elements: outer * inner, in row-major output order */
} rplan;

/* Plans a reduction of x over dims (ndims == 0: every dim; dims already checked). */
CPU_HIDDEN wk_status cpu_reduce_plan(rplan *p, wk_tensor *x, const int64_t *dims, int ndims);

/* ---- the row reducer ---- */
typedef enum {
  R_SUM, R_SQDEV, R_EXPSUM, R_ABS, R_SQ, R_POW, R_NZ, /* additive, in double */
  R_PROD, R_AMAX, R_AMIN, R_MAX, R_MIN, R_ANY, R_ALL, /* in double */
  R_SUM_I, R_PROD_I, R_MAX_I, R_MIN_I                 /* in int64 (wrap-around) */
} rkind;

/* A partial result: d (double kinds) or i (int kinds, any/all), and the index
 * of the extreme element for max/min (-1: no element seen). */
typedef struct {
  double d;
  int64_t i, idx;
} acc_t;

/* Reduces every output element of the plan; returns a malloc'd array of
 * p->rows partials (at least one slot), or NULL with an error recorded. */
CPU_HIDDEN acc_t *cpu_reduce_rows(const rplan *p, rkind k, double pw, const double *param);

/* n elements of dtype dt at p converted to double / int64 (contiguous runs). */
CPU_HIDDEN void cpu_load_f64_run(const char *p, wk_dtype dt, int64_t n, double *o);
CPU_HIDDEN void cpu_load_i64_run(const char *p, wk_dtype dt, int64_t n, int64_t *o);

/* ---- results (new contiguous outputs, as the meta function decided) ------------------------------------------- */
/* Element writer for a new contiguous result. */
typedef struct {
  char *p;
  wk_dtype dt;
  int64_t es;
} outw;

static inline outw writer(wk_tensor *t) {
  outw w = {NULL, WK_DTYPE_DEFAULT, 0};
  if (t) {
    w.p = wk_tensor_data(t);
    w.dt = wk_tensor_dtype(t);
    w.es = (int64_t)wk_dtype_size(w.dt);
  }
  return w;
}
static inline void put_f64(const outw *w, int64_t i, double v) { wk_store_f64(w->p + i * w->es, w->dt, v); }
static inline void put_i64(const outw *w, int64_t i, int64_t v) { wk_store_i64(w->p + i * w->es, w->dt, v); }

static inline wk_status finish(rplan *p, acc_t *res, wk_tensor *out, wk_value *outs) {
  wk_release(p->c);
  wk_free(res);
  if (!out) return wk_last_error();
  outs[0] = WK_VT(out);
  return WK_OK;
}

/* Optional int[] argument: (dims, ndims); None and [] both mean every dim. */
static inline const int64_t *opt_dims(const wk_value *v, int *n) {
  *n = v->tag == WK_V_INTS ? v->len : 0;
  return v->tag == WK_V_INTS ? v->u.ints : NULL;
}

static inline wk_dtype cpu_reduce_opt_dtype(const wk_value *v) { return v->tag == WK_V_DTYPE ? v->u.dtype : WK_DTYPE_DEFAULT; }

#endif
