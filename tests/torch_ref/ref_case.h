/* The case format of the PyTorch reference data (tests/torch_ref/gen_*.py write
 * arrays of these into *_data.h): an op's boxed arguments and expected results
 * (ref_case), or its arguments, an upstream gradient and the expected input
 * gradients (ref_grad_case). Shared by check_torch_ref and check_linalg_surface. */
#ifndef WICK_TESTS_TORCH_REF_CASE_H
#define WICK_TESTS_TORCH_REF_CASE_H

#include <wick/wick.h>

enum { REF_NONE, REF_TENSOR, REF_TENSORS, REF_INTS, REF_INT, REF_FLOAT, REF_BOOL, REF_STR, REF_FLOATS /* float[]: data, nints */ };

typedef struct ref_arg {
  int kind;
  wk_dtype dtype;
  int ndim; /* for REF_TENSORS: the list length */
  int64_t shape[6];
  const double *data;
  double f;
  int64_t i;
  const int64_t *ints;
  int nints;
  const char *s;
  const struct ref_arg *list;
} ref_arg;

typedef struct {
  const char *label, *op;
  int nargs;
  ref_arg args[8];
  int nouts;
  ref_arg outs[4];
  double rtol, atol;
} ref_case;

typedef struct {
  const char *label, *op;
  int nargs;
  ref_arg args[8];
  ref_arg grad_output;
  int ngrad;
  int grad_args[4];
  ref_arg grads[4];
  double rtol, atol;
} ref_grad_case;

#endif
