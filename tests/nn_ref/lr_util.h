/* Helpers of check_nn_attention and check_nn_rnn over the PyTorch reference
 * data in layers_ref.h (tests/nn_ref/gen_layers.py). */
#ifndef LR_UTIL_H
#define LR_UTIL_H
#include "../testutil.h"
#include <wick/nn.h>
#include "layers_ref.h"

static inline const lr_case *lr_case_get(const char *name) {
  for (int i = 0; i < LR_NCASES; i++)
    if (!strcmp(LR_CASES[i].name, name)) return &LR_CASES[i];
  ck_abort_msg("no reference case %s", name);
  return NULL;
}
static inline const lr_tensor *lr_find(const lr_case *c, const char *name) {
  for (int i = 0; i < c->n; i++)
    if (!strcmp(c->t[i].name, name)) return &c->t[i];
  return NULL;
}
static inline int64_t lr_numel(const lr_tensor *r) {
  int64_t n = 1;
  for (int i = 0; i < r->ndim; i++) n *= r->shape[i];
  return n;
}
/* The reference tensor `name` as dtype dt (a new reference), or NULL when the case lacks it. */
static inline wk_tensor *lr_t(const lr_case *c, const char *name, wk_dtype dt) {
  const lr_tensor *r = lr_find(c, name);
  if (!r) return NULL;
  wk_tensor *t = wk_tensor_from_data(r->data, WK_F64, r->shape, r->ndim);
  if (dt == WK_F64) return t;
  wk_tensor *u = wk_to_dtype(t, dt);
  wk_release(t);
  return u;
}
/* The same, as a leaf that requires grad. */
static inline wk_tensor *lr_leaf(const lr_case *c, const char *name, wk_dtype dt) {
  wk_tensor *t = lr_t(c, name, dt);
  TU_NOTNULL(t);
  TU_OK(wk_tensor_set_requires_grad(t, true));
  return t;
}
/* A 0/1 reference tensor as bool. */
static inline wk_tensor *lr_bool(const lr_case *c, const char *name) {
  wk_tensor *t = lr_t(c, name, WK_F64);
  if (!t) return NULL;
  wk_tensor *b = wk_ne_scalar(t, 0.0);
  wk_release(t);
  return b;
}
/* Asserts t matches reference `name` in shape and values (|d| <= tol (1 + |ref|)). */
#define LR_CLOSE(t, c, key_, tol)                                                          \
  do {                                                                                     \
    const lr_case *c_ = (c);                                                               \
    const lr_tensor *r_ = lr_find(c_, key_);                                               \
    wk_tensor *t_ = (t);                                                                   \
    ck_assert_msg(r_ != NULL, "case %s has no %s", c_->name, key_);                        \
    ck_assert_msg(t_ != NULL, "%s %s: NULL: %s", c_->name, key_, wk_last_error_message()); \
    ck_assert_msg(wk_tensor_dim(t_) == r_->ndim, "%s %s: %d dims, reference %d", c_->name, \
                  key_, wk_tensor_dim(t_), r_->ndim);                                      \
    for (int d_ = 0; d_ < r_->ndim; d_++) ck_assert_int_eq(wk_tensor_size(t_, d_), r_->shape[d_]); \
    char w_[400];                                                                          \
    snprintf(w_, sizeof w_, "%s %s", c_->name, key_);                                      \
    tu_assert_close_(t_, r_->data, lr_numel(r_), tol, tol, w_, __LINE__);                  \
  } while (0)

/* Loads every "p.<key>" tensor of the case into m (strict) after moving m to dt. */
static inline void lr_load(wk_module *m, const lr_case *c, wk_dtype dt) {
  TU_NOTNULL(m);
  TU_OK(wk_module_to(m, (wk_device){0, 0}, dt));
  wk_state_dict *sd = wk_state_dict_new();
  for (int i = 0; i < c->n; i++)
    if (!strncmp(c->t[i].name, "p.", 2)) TU_OK(wk_state_dict_set(sd, c->t[i].name + 2, lr_t(c, c->t[i].name, dt)));
  TU_OK(wk_module_load_state_dict(m, sd, true, NULL));
  wk_state_dict_free(sd);
}
/* sum(y * g<name>) for the result y of reference result `name` ("y", "h", "c"). */
static inline wk_tensor *lr_dot(const lr_case *c, const char *gname, wk_tensor *y) {
  wk_tensor *g = lr_t(c, gname, wk_tensor_dtype(y));
  TU_NOTNULL(g);
  return wk_sum(wk_mul(y, g));
}
/* Compares the gradients of every parameter of m with the case's "g.p.<key>". */
static inline void lr_param_grads(wk_module *m, const lr_case *c, double tol) {
  const char *names[256];
  wk_tensor *ps[256];
  int n = wk_module_named_parameters(m, names, ps, 256);
  ck_assert_int_gt(n, 0);
  for (int i = 0; i < n; i++) {
    char key[300];
    snprintf(key, sizeof key, "g.p.%s", names[i]);
    wk_tensor *g = wk_tensor_grad(ps[i]);
    ck_assert_msg(g != NULL, "%s: parameter %s has no grad", c->name, names[i]);
    LR_CLOSE(g, c, key, tol);
  }
}
static inline const char *lr_repr(const char *name) {
  for (int i = 0; i < LR_NREPRS; i++)
    if (!strcmp(LR_REPRS[i][0], name)) return LR_REPRS[i][1];
  ck_abort_msg("no repr %s", name);
  return NULL;
}
/* Compares m's printout with PyTorch's, then releases m. */
static inline void lr_repr_eq(wk_module *m, const char *name) {
  TU_NOTNULL(m);
  char *s = wk_module_to_string(m);
  ck_assert_msg(!strcmp(s, lr_repr(name)), "repr %s:\n%s\nvs PyTorch:\n%s", name, s, lr_repr(name));
  wk_free(s);
  wk_module_release(m);
}
#endif
