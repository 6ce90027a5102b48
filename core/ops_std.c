/* Declares the standard op set from abi/wick/op_list.h, expanding the unary,
 * binary and comparison families into their in-place, out= and Scalar
 * variants. */
#include "internal.h"

#define DECL(schema, tags) wk_op_declare(schema, tags);

#define UNARY(name, tags, rule)                                                             \
  DECL(#name "(Tensor self) -> Tensor", tags)                                          \
  DECL(#name "_(Tensor(a!) self) -> Tensor(a!)", (tags) | WK_TAG_INPLACE)              \
  DECL(#name ".out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)", tags)

#define BINARY(name, tags)                                                              \
  DECL(#name "(Tensor self, Tensor other) -> Tensor", tags)                            \
  DECL(#name "_(Tensor(a!) self, Tensor other) -> Tensor(a!)", (tags) | WK_TAG_INPLACE) \
  DECL(#name ".out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)", tags) \
  DECL(#name ".Scalar(Tensor self, Scalar other) -> Tensor", tags)                     \
  DECL(#name "_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)", (tags) | WK_TAG_INPLACE)

#define COMPARE(name)                                                                   \
  DECL(#name "(Tensor self, Tensor other) -> Tensor", WK_TAG_POINTWISE | WK_TAG_NONDIFF) \
  DECL(#name ".Scalar(Tensor self, Scalar other) -> Tensor", WK_TAG_POINTWISE | WK_TAG_NONDIFF) \
  DECL(#name ".out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",      \
       WK_TAG_POINTWISE | WK_TAG_NONDIFF)

void wk__ops_declare_standard(void) {
  WK_UNARY_OPS(UNARY)
  WK_BINARY_OPS(BINARY)
  WK_COMPARE_OPS(COMPARE)
  WK_OTHER_OPS(DECL)
  WK_BACKWARD_OPS(DECL)
}
