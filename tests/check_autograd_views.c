/* check_autograd_views: in-place ops on views of tensors that require grad
 * (PyTorch's CopySlices and lazily remade view grad_fns), checked against
 * the same function written out of place and by gradcheck/gradgradcheck;
 * as_strided's derivative (overlapping outputs and inputs, offsets,
 * non-contiguous inputs); the errors PyTorch gives (a view of a leaf, a saved
 * tensor modified through a view); no reference cycles. */
#include "testutil.h"

#include <wick/sdk/gradcheck.h>

static wk_tensor *leaf(wk_tensor *t) {
  ck_assert_int_eq(wk_tensor_set_requires_grad(t, true), WK_OK);
  return t;
}
static wk_tensor *rand64(const int64_t *s, int n, uint64_t seed) { return leaf(tu_rand(s, n, WK_F64, -1.5, 1.5, seed)); }
static wk_tensor *idx(const int64_t *v, const int64_t *shape, int nd) {
  return wk_tensor_from_data(v, WK_I64, shape, nd);
}
static wk_options f64(void) { return (wk_options){.dtype = WK_F64}; }

/* ---- each case: the function with an in-place op on a view, and the same
 * function out of place; inputs x (requires grad) and b ---- */
typedef wk_tensor *(*case_fn)(wk_tensor *x, wk_tensor *b);
typedef struct {
  const char *name;
  case_fn inplace, reference;
  int64_t xs[2], bs[2];
  int bnd;
  const char *base_fn; /* grad_fn name of the base after the in-place op, or NULL */
} view_case;

/* x[:, 0].mul_(b) */
static wk_tensor *sel_in(wk_tensor *x, wk_tensor *b) {
  wk_tensor *y = wk_mul(x, x);
  wk_mul_(wk_select(y, 1, 0), b);
  return y;
}
static wk_tensor *sel_ref(wk_tensor *x, wk_tensor *b) {
  wk_tensor *m = wk_scatter(wk_ones(WK_SHAPE(3, 4), f64()), 1, idx((int64_t[]){0, 0, 0}, WK_SHAPE(3, 1)),
                            wk_unsqueeze(b, 1));
  return wk_mul(wk_mul(x, x), m);
}
/* x[:, 1:4:2] += b */
static wk_tensor *slice_in(wk_tensor *x, wk_tensor *b) {
  wk_tensor *y = wk_mul(x, x);
  wk_add_(wk_slice(y, 1, 1, 4, 2), b);
  return y;
}
static wk_tensor *slice_ref(wk_tensor *x, wk_tensor *b) {
  wk_tensor *z = wk_scatter(wk_zeros(WK_SHAPE(3, 4), f64()), 1, idx((int64_t[]){1, 3, 1, 3, 1, 3}, WK_SHAPE(3, 2)), b);
  return wk_add(wk_mul(x, x), z);
}
/* out = zeros(3, 4); out.narrow(1, 1, 2).copy_(x[:, :2] * b): a base with no history */
static wk_tensor *narrow_in(wk_tensor *x, wk_tensor *b) {
  wk_tensor *y = wk_zeros(WK_SHAPE(3, 4), f64());
  wk_copy_(wk_narrow(y, 1, 1, 2), wk_mul(wk_narrow(x, 1, 0, 2), b));
  return y;
}
static wk_tensor *narrow_ref(wk_tensor *x, wk_tensor *b) {
  return wk_scatter(wk_zeros(WK_SHAPE(3, 4), f64()), 1, idx((int64_t[]){1, 2, 1, 2, 1, 2}, WK_SHAPE(3, 2)),
                    wk_mul(wk_narrow(x, 1, 0, 2), b));
}
/* y.t().mul_(b) */
static wk_tensor *t_in(wk_tensor *x, wk_tensor *b) {
  wk_tensor *y = wk_mul(x, x);
  wk_mul_(wk_transpose(y, 0, 1), b);
  return y;
}
static wk_tensor *t_ref(wk_tensor *x, wk_tensor *b) { return wk_mul(wk_mul(x, x), wk_t(b)); }
/* y.view(2, 6).add_(b) */
static wk_tensor *view_in(wk_tensor *x, wk_tensor *b) {
  wk_tensor *y = wk_mul(x, x);
  wk_add_(wk_view(y, WK_SHAPE(2, 6)), b);
  return y;
}
static wk_tensor *view_ref(wk_tensor *x, wk_tensor *b) { return wk_add(wk_mul(x, x), wk_reshape(b, WK_SHAPE(3, 4))); }
/* the diagonal of a 4x4 as an as_strided view: diag.mul_(b) */
static wk_tensor *diag_in(wk_tensor *x, wk_tensor *b) {
  wk_tensor *y = wk_mul(x, x);
  wk_mul_(wk_as_strided(y, (int64_t[]){4}, (int64_t[]){5}, 1, 0), b);
  return y;
}
static wk_tensor *diag_ref(wk_tensor *x, wk_tensor *b) {
  wk_tensor *m = wk_scatter(wk_ones(WK_SHAPE(16), f64()), 0, idx((int64_t[]){0, 5, 10, 15}, WK_SHAPE(4)), b);
  return wk_mul(wk_mul(x, x), wk_reshape(m, WK_SHAPE(4, 4)));
}
/* a view of a view: y.t()[2].sub_(b) is column 2 */
static wk_tensor *chain_in(wk_tensor *x, wk_tensor *b) {
  wk_tensor *y = wk_mul(x, x);
  wk_sub_(wk_select(wk_transpose(y, 0, 1), 0, 2), b);
  return y;
}
static wk_tensor *chain_ref(wk_tensor *x, wk_tensor *b) {
  wk_tensor *z = wk_scatter(wk_zeros(WK_SHAPE(3, 4), f64()), 1, idx((int64_t[]){2, 2, 2}, WK_SHAPE(3, 1)),
                            wk_unsqueeze(b, 1));
  return wk_sub(wk_mul(x, x), z);
}
/* a = y[1] taken first; y[:, 2].mul_(b) changes a's element 2: a's grad_fn is
 * remade from the base's new history */
static wk_tensor *sibling_in(wk_tensor *x, wk_tensor *b) {
  wk_tensor *y = wk_mul(x, x);
  wk_tensor *a = wk_select(y, 0, 1);
  wk_mul_(wk_select(y, 1, 2), b);
  return wk_mul(a, a);
}
static wk_tensor *sibling_ref(wk_tensor *x, wk_tensor *b) {
  wk_tensor *a = wk_select(wk_mul(x, x), 0, 1);
  wk_tensor *m = wk_scatter(wk_ones(WK_SHAPE(4), f64()), 0, idx((int64_t[]){2}, WK_SHAPE(1)), wk_narrow(b, 0, 1, 1));
  wk_tensor *r = wk_mul(a, m);
  return wk_mul(r, r);
}
/* a = y[0:2] taken first; then the base itself is modified in place */
static wk_tensor *base_in(wk_tensor *x, wk_tensor *b) {
  wk_tensor *y = wk_mul(x, x);
  wk_tensor *a = wk_narrow(y, 0, 0, 2);
  wk_mul_(y, b);
  return wk_mul_scalar(a, 1);
}
static wk_tensor *base_ref(wk_tensor *x, wk_tensor *b) { return wk_narrow(wk_mul(wk_mul(x, x), b), 0, 0, 2); }
/* two in-place ops on one view, then one on the base through another view */
static wk_tensor *twice_in(wk_tensor *x, wk_tensor *b) {
  wk_tensor *y = wk_mul(x, x);
  wk_tensor *v = wk_select(y, 0, 0);
  wk_add_(v, b);
  wk_mul_(v, b);
  wk_mul_scalar_(wk_select(y, 1, 3), 3);
  return y;
}
static wk_tensor *twice_ref(wk_tensor *x, wk_tensor *b) {
  wk_tensor *y = wk_mul(x, x);
  wk_tensor *r0 = wk_mul(wk_add(wk_select(y, 0, 0), b), b);
  wk_tensor *m = wk_scatter(wk_ones(WK_SHAPE(3, 4), f64()), 1, idx((int64_t[]){3, 3, 3}, WK_SHAPE(3, 1)),
                            wk_full(WK_SHAPE(3, 1), 3, f64()));
  return wk_mul(wk_cat((wk_tensor *[]){wk_unsqueeze(r0, 0), wk_narrow(y, 0, 1, 2)}, 2, 0), m);
}

static const view_case g_cases[] = {
    {"select mul_", sel_in, sel_ref, {3, 4}, {3}, 1, "CopySlices"},
    {"slice with step add_", slice_in, slice_ref, {3, 4}, {3, 2}, 2, "CopySlices"},
    {"narrow copy_ into zeros", narrow_in, narrow_ref, {3, 4}, {3, 2}, 2, "CopySlices"},
    {"transpose mul_", t_in, t_ref, {3, 4}, {4, 3}, 2, "CopySlices"},
    {"view add_", view_in, view_ref, {3, 4}, {2, 6}, 2, "CopySlices"},
    {"as_strided diagonal mul_", diag_in, diag_ref, {4, 4}, {4}, 1, "CopySlices"},
    {"select of transpose sub_", chain_in, chain_ref, {3, 4}, {3}, 1, "CopySlices"},
    {"sibling view taken before", sibling_in, sibling_ref, {3, 4}, {3}, 1, NULL},
    {"base modified after a view", base_in, base_ref, {3, 4}, {3, 4}, 2, NULL},
    {"two ops on a view, one on another", twice_in, twice_ref, {3, 4}, {4}, 1, "CopySlices"},
};

/* loss = sum(f(x, b) * w): w makes every element's gradient distinct */
static void grads_of(case_fn f, wk_tensor *x, wk_tensor *b, wk_tensor *w, wk_tensor **y, wk_tensor **gx, wk_tensor **gb) {
  *y = f(x, b);
  TU_NOTNULL(*y);
  wk_tensor *in[2] = {x, b}, *g[2] = {NULL, NULL};
  wk_tensor *loss = wk_sum(wk_mul(*y, w));
  TU_OK(wk_grad(&loss, 1, NULL, in, 2, g, NULL, false));
  *gx = g[0];
  *gb = g[1];
}

static void assert_same(wk_tensor *a, wk_tensor *r, const char *what, const char *name) {
  TU_NOTNULL(a);
  TU_NOTNULL(r);
  double *rv = tu_values(r);
  ck_assert_msg(wk_tensor_numel(a) == wk_tensor_numel(r), "%s: %s sizes differ", name, what);
  tu_assert_close_(a, rv, wk_tensor_numel(r), 1e-12, 1e-12, what, __LINE__);
  free(rv);
}

START_TEST(test_views_inplace_matches_out_of_place) {
  const view_case *c = &g_cases[_i];
  wk_scope_begin();
  wk_tensor *x = rand64(c->xs, 2, 11 + (uint64_t)_i), *b = rand64(c->bs, c->bnd, 29 + (uint64_t)_i);
  wk_tensor *y, *gx, *gb, *yr, *gxr, *gbr;
  wk_tensor *probe = c->reference(x, b);
  TU_NOTNULL(probe);
  wk_tensor *w = tu_rand(wk_tensor_sizes(probe), wk_tensor_dim(probe), WK_F64, -1, 1, 7);
  grads_of(c->inplace, x, b, w, &y, &gx, &gb);
  grads_of(c->reference, x, b, w, &yr, &gxr, &gbr);
  assert_same(y, yr, "value", c->name);
  assert_same(gx, gxr, "grad x", c->name);
  assert_same(gb, gbr, "grad b", c->name);
  if (c->base_fn) ck_assert_str_eq(wk_tensor_grad_fn_name(y), c->base_fn);
  wk_scope_end();
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

static wk_tensor *gc_case(void *ctx, wk_tensor *const *in, int n) {
  (void)n;
  wk_tensor *y = ((const view_case *)ctx)->inplace(in[0], in[1]);
  return wk_mul(y, y); /* nonlinear in the result, so the second order sees it */
}

START_TEST(test_views_inplace_gradcheck) {
  const view_case *c = &g_cases[_i];
  wk_scope_begin();
  wk_tensor *in[2] = {wk_scope_keep(rand64(c->xs, 2, 3 + (uint64_t)_i)),
                      wk_scope_keep(rand64(c->bs, c->bnd, 5 + (uint64_t)_i))};
  wk_gradcheck_opts o = {1e-6, 1e-5, 1e-4, (uint64_t)_i};
  ck_assert_msg(wk_gradcheck(gc_case, (void *)c, in, 2, &o) == WK_OK, "%s: %s", c->name, wk_last_error_message());
  ck_assert_msg(wk_gradgradcheck(gc_case, (void *)c, in, 2, &o) == WK_OK, "%s (second order): %s", c->name,
                wk_last_error_message());
  wk_release(in[0]);
  wk_release(in[1]);
  wk_scope_end();
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

START_TEST(test_views_names_and_requires_grad) {
  wk_scope_begin();
  wk_tensor *x = rand64(WK_SHAPE(3, 4), 1);
  /* a base with no history gains one through its view */
  wk_tensor *y = wk_zeros(WK_SHAPE(3, 4), f64());
  wk_tensor *v = wk_select(y, 1, 0), *other = wk_select(y, 0, 2);
  ck_assert(!wk_tensor_requires_grad(y) && !wk_tensor_requires_grad(v));
  TU_NOTNULL(wk_copy_(v, wk_select(x, 1, 3)));
  ck_assert(wk_tensor_requires_grad(y) && wk_tensor_requires_grad(v) && wk_tensor_requires_grad(other));
  ck_assert_str_eq(wk_tensor_grad_fn_name(y), "CopySlices");
  ck_assert_str_eq(wk_tensor_grad_fn_name(v), "AsStridedBackward0");
  ck_assert_str_eq(wk_tensor_grad_fn_name(other), "AsStridedBackward0"); /* remade on access */
  ck_assert(!wk_tensor_is_leaf(other));
  /* gradient: only x[:, 3] reaches y[:, 0] */
  TU_OK(wk_backward_with(wk_sum(y), NULL, &(wk_backward_opts){sizeof(wk_backward_opts), .retain_graph = true}));
  TU_EQ_VALS(wk_tensor_grad(x), 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1);
  /* a view made before the base had history still follows it (element y[2][0] = x[2][3]) */
  TU_OK(wk_tensor_zero_grad(x, true));
  TU_OK(wk_backward(wk_sum(wk_mul(other, other))));
  double x23;
  TU_OK(wk_tensor_get(x, (int64_t[]){2, 3}, &x23));
  TU_EQ_VALS(wk_tensor_grad(x), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2 * x23);
  wk_scope_end();
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

START_TEST(test_views_leaf_view_inplace_errors) {
  wk_scope_begin();
  wk_tensor *x = rand64(WK_SHAPE(3, 4), 2);
  ck_assert_ptr_null(wk_mul_scalar_(wk_select(x, 1, 0), 2));
  TU_FAILS_WITH(WK_ERR_AUTOGRAD, "a view of a leaf Variable that requires grad is being used in an in-place operation.");
  ck_assert_ptr_null(wk_copy_(wk_narrow(wk_t(x), 0, 1, 2), wk_zeros(WK_SHAPE(2, 3), f64())));
  TU_FAILS_WITH(WK_ERR_AUTOGRAD, "a view of a leaf Variable that requires grad is being used in an in-place operation.");
  /* the leaf itself: PyTorch's other message */
  ck_assert_ptr_null(wk_mul_scalar_(x, 2));
  TU_FAILS_WITH(WK_ERR_AUTOGRAD, "a leaf Variable that requires grad is being used in an in-place operation.");
  /* under no_grad it is allowed (an optimizer's update) and x stays a leaf */
  wk_no_grad_begin();
  TU_NOTNULL(wk_mul_scalar_(wk_select(x, 1, 0), 2));
  TU_OK(wk_no_grad_end());
  ck_assert(wk_tensor_is_leaf(x));
  /* a view made under no_grad then used with grad on keeps working as a value */
  TU_OK(wk_backward(wk_sum(wk_mul(wk_select(x, 1, 0), wk_select(x, 1, 0)))));
  wk_scope_end();
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

START_TEST(test_views_version_counter) {
  wk_scope_begin();
  wk_tensor *x = rand64(WK_SHAPE(3, 4), 3);
  /* y is saved by y * y; writing into it through a view is caught */
  wk_tensor *y = wk_mul_scalar(x, 2);
  wk_tensor *z = wk_mul(y, y);
  TU_NOTNULL(wk_mul_scalar_(wk_select(y, 0, 1), 2));
  ck_assert_int_eq(wk_backward(wk_sum(z)), WK_ERR_AUTOGRAD);
  TU_FAILS_WITH(WK_ERR_AUTOGRAD, "one of the variables needed for gradient computation has been modified by an "
                                 "inplace operation: [f64 [3, 4]], which is argument 1 of MulBackward0, is at "
                                 "version 1; expected version 0 instead.");
  /* exp saves its output; a view of that output modified in place is caught too */
  wk_tensor *e = wk_exp(x);
  TU_NOTNULL(wk_add_scalar_(wk_narrow(e, 0, 0, 1), 1));
  ck_assert_int_eq(wk_backward(wk_sum(e)), WK_ERR_AUTOGRAD);
  TU_FAILS_WITH(WK_ERR_AUTOGRAD, "which is output 0 of ExpBackward0");
  /* v.mul_(w) with w a sibling view of the same base: the op itself bumps
   * the version w was saved at (PyTorch refuses this backward too), and the
   * saved alias makes no reference cycle (checked by the count below) */
  wk_tensor *p = wk_mul_scalar(x, 1);
  wk_tensor *v = wk_select(p, 0, 0), *w = wk_select(p, 0, 1);
  TU_NOTNULL(wk_mul_(v, w));
  ck_assert_int_eq(wk_backward(wk_sum(p)), WK_ERR_AUTOGRAD);
  TU_FAILS_WITH(WK_ERR_AUTOGRAD, "[f64 [4]], which is argument 1 of MulBackward0, is at version 1; expected version 0");
  /* w taken from a clone does not alias: fine */
  wk_tensor *p2 = wk_mul_scalar(x, 1);
  TU_NOTNULL(wk_mul_(wk_select(p2, 0, 0), wk_select(wk_clone(p2), 0, 1)));
  TU_OK(wk_backward(wk_sum(p2)));
  wk_scope_end();
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

/* ---- as_strided ---- */
static wk_tensor *as_overlap(void *ctx, wk_tensor *const *in, int n) {
  (void)ctx, (void)n; /* sliding windows: output elements share storage */
  wk_tensor *w = wk_as_strided(in[0], (int64_t[]){4, 3}, (int64_t[]){1, 1}, 2, 0);
  return wk_mul(w, w);
}
static wk_tensor *as_offset_noncontig(void *ctx, wk_tensor *const *in, int n) {
  (void)ctx, (void)n; /* a transposed input (its geometry is not contiguous), a storage offset */
  wk_tensor *t = wk_t(in[0]);
  wk_tensor *w = wk_as_strided(t, (int64_t[]){2, 2}, (int64_t[]){4, 2}, 2, 3);
  return wk_exp(w);
}
static wk_tensor *as_overlap_input(void *ctx, wk_tensor *const *in, int n) {
  (void)ctx, (void)n; /* the input itself overlaps (an expanded tensor) */
  wk_tensor *e = wk_expand(wk_unsqueeze(in[0], 0), WK_SHAPE(3, 5));
  wk_tensor *w = wk_as_strided(e, (int64_t[]){2, 3}, (int64_t[]){0, 2}, 2, 0);
  return wk_mul(w, wk_sin(w));
}
static wk_tensor *as_of_view(void *ctx, wk_tensor *const *in, int n) {
  (void)ctx, (void)n; /* as_strided of a slice with the default offset */
  wk_tensor *s = wk_narrow(wk_mul_scalar(in[0], 1), 0, 1, 2);
  wk_value a[4] = {WK_VT(s), WK_VINTS(((int64_t[]){3, 2}), 2), WK_VINTS(((int64_t[]){2, 3}), 2), WK_VNONE};
  wk_value o[1];
  wk_tensor *w = wk_call("as_strided", a, 4, o) == WK_OK ? o[0].u.t : NULL;
  return wk_pow_scalar(w, 3);
}

START_TEST(test_views_as_strided_gradcheck) {
  wk_gradcheck_fn fns[] = {as_overlap, as_offset_noncontig, as_overlap_input, as_of_view};
  const int64_t shapes[][2] = {{6, 0}, {3, 4}, {5, 0}, {3, 4}};
  const int nd[] = {1, 2, 1, 2};
  for (int i = 0; i < 4; i++) {
    wk_scope_begin();
    wk_tensor *x = wk_scope_keep(rand64(shapes[i], nd[i], 40 + (uint64_t)i));
    wk_gradcheck_opts o = {1e-6, 1e-5, 1e-4, (uint64_t)i};
    ck_assert_msg(wk_gradcheck(fns[i], NULL, &x, 1, &o) == WK_OK, "as_strided case %d: %s", i, wk_last_error_message());
    ck_assert_msg(wk_gradgradcheck(fns[i], NULL, &x, 1, &o) == WK_OK, "as_strided case %d (second order): %s", i,
                  wk_last_error_message());
    wk_release(x);
    wk_scope_end();
    ck_assert_msg(wk_live_tensors() == 0, "as_strided case %d leaks %lld tensors", i, (long long)wk_live_tensors());
  }
  /* values against PyTorch: x = arange(6.), y = x.as_strided((4, 3), (1, 1)).sum() -> x.grad = [1, 2, 3, 3, 2, 1] */
  wk_scope_begin();
  wk_tensor *x = leaf(wk_arange(0, 6, 1, f64()));
  TU_OK(wk_backward(wk_sum(wk_as_strided(x, (int64_t[]){4, 3}, (int64_t[]){1, 1}, 2, 0))));
  TU_EQ_VALS(wk_tensor_grad(x), 1, 2, 3, 3, 2, 1);
  ck_assert_str_eq(wk_tensor_grad_fn_name(wk_as_strided(x, (int64_t[]){2}, (int64_t[]){1}, 1, 0)), "AsStridedBackward0");
  wk_scope_end();
  ck_assert_int_eq(wk_live_tensors(), 0);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("autograd_views");
  TCase *tc = tcase_create("copy_slices");
  tcase_add_checked_fixture(tc, tu_setup, NULL);
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_views_inplace_matches_out_of_place, 0, (int)(sizeof g_cases / sizeof g_cases[0]));
  tcase_add_loop_test(tc, test_views_inplace_gradcheck, 0, (int)(sizeof g_cases / sizeof g_cases[0]));
  tcase_add_test(tc, test_views_names_and_requires_grad);
  tcase_add_test(tc, test_views_leaf_view_inplace_errors);
  tcase_add_test(tc, test_views_version_counter);
  suite_add_tcase(s, tc);
  TCase *as = tcase_create("as_strided");
  tcase_add_checked_fixture(as, tu_setup, NULL);
  tcase_set_timeout(as, 60);
  tcase_add_test(as, test_views_as_strided_gradcheck);
  suite_add_tcase(s, as);
  return s;
}
TU_MAIN(make_suite)
