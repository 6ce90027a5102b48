/* Wick ABI: the standard op set, as one list of schemas. The core declares
 * every op below at wk_init(); ops.h generates the typed C front end from the
 * same lists. Families generate their variants: a unary op `exp` gives `exp`,
 * `exp_` (in place) and `exp.out`; a binary op gives also `.Scalar`.
 *
 * Entry forms:
 *   WK_OP(schema, tags)                                  one op
 *   WK_UNARY(name, tags, dtype rule)                     name, name_, name.out
 *   WK_BINARY(name, tags)                                name, name_, name.out,
 *                                                        name.Scalar, name_.Scalar
 *   WK_COMPARE(name)                                     name, name.Scalar, name.out
 *
 * Reductions are encoded like PyTorch's: 0 = none, 1 = mean, 2 = sum. */
#ifndef WICK_OP_LIST_H
#define WICK_OP_LIST_H

#define WK_PW WK_TAG_POINTWISE
#define WK_ND WK_TAG_NONDIFF

/* How a unary op treats dtypes (PyTorch's rules; the core's meta function
 * applies them, so every backend agrees):
 *   FLOAT       integers and bool compute in float32 (exp, sin, ...)
 *   FLOAT_ONLY  integers and bool are refused (silu: "not implemented for 'Long'")
 *   KEEP        every dtype keeps its own (neg, abs, relu)
 *   ROUNDING    integers pass through unchanged, bool is refused (floor)
 *   PRED        any dtype in, bool out (logical_not)
 *   INTEGER     integers and bool keep their dtype, floating dtypes are refused (bitwise_not) */
enum {
  WK_UNARY_FLOAT = 0,
  WK_UNARY_FLOAT_ONLY = 1,
  WK_UNARY_KEEP = 2,
  WK_UNARY_ROUNDING = 3,
  WK_UNARY_PRED = 4,
  WK_UNARY_INTEGER = 5
};

/* Unary pointwise ops with in-place and out= variants: X(name, tags, dtype rule). */
#define WK_UNARY_OPS(X)                                                                               \
  X(neg, WK_PW, WK_UNARY_KEEP) X(abs, WK_PW, WK_UNARY_KEEP) X(exp, WK_PW, WK_UNARY_FLOAT)             \
  X(log, WK_PW, WK_UNARY_FLOAT) X(log1p, WK_PW, WK_UNARY_FLOAT) X(sqrt, WK_PW, WK_UNARY_FLOAT)        \
  X(rsqrt, WK_PW, WK_UNARY_FLOAT) X(sin, WK_PW, WK_UNARY_FLOAT) X(cos, WK_PW, WK_UNARY_FLOAT)         \
  X(tanh, WK_PW, WK_UNARY_FLOAT) X(sigmoid, WK_PW, WK_UNARY_FLOAT) X(relu, WK_PW, WK_UNARY_KEEP)      \
  X(silu, WK_PW, WK_UNARY_FLOAT_ONLY) X(sign, WK_PW | WK_ND, WK_UNARY_KEEP)                           \
  X(floor, WK_PW | WK_ND, WK_UNARY_ROUNDING) X(ceil, WK_PW | WK_ND, WK_UNARY_ROUNDING)                \
  X(round, WK_PW | WK_ND, WK_UNARY_ROUNDING) X(logical_not, WK_PW | WK_ND, WK_UNARY_PRED)              \
  X(erf, WK_PW, WK_UNARY_FLOAT) X(expm1, WK_PW, WK_UNARY_FLOAT) X(log2, WK_PW, WK_UNARY_FLOAT)        \
  X(log10, WK_PW, WK_UNARY_FLOAT) X(exp2, WK_PW, WK_UNARY_FLOAT) X(tan, WK_PW, WK_UNARY_FLOAT)        \
  X(asin, WK_PW, WK_UNARY_FLOAT) X(acos, WK_PW, WK_UNARY_FLOAT) X(atan, WK_PW, WK_UNARY_FLOAT)        \
  X(sinh, WK_PW, WK_UNARY_FLOAT) X(cosh, WK_PW, WK_UNARY_FLOAT) X(asinh, WK_PW, WK_UNARY_FLOAT)       \
  X(acosh, WK_PW, WK_UNARY_FLOAT) X(atanh, WK_PW, WK_UNARY_FLOAT) X(reciprocal, WK_PW, WK_UNARY_FLOAT) \
  X(square, WK_PW, WK_UNARY_KEEP) X(trunc, WK_PW | WK_ND, WK_UNARY_ROUNDING)                          \
  X(frac, WK_PW, WK_UNARY_FLOAT_ONLY) X(erfinv, WK_PW, WK_UNARY_FLOAT)                                \
  X(selu, WK_PW, WK_UNARY_FLOAT_ONLY) X(mish, WK_PW, WK_UNARY_FLOAT_ONLY)                             \
  X(hardswish, WK_PW, WK_UNARY_FLOAT_ONLY) X(hardsigmoid, WK_PW, WK_UNARY_FLOAT_ONLY)                 \
  X(relu6, WK_PW, WK_UNARY_KEEP) X(log_sigmoid, WK_PW, WK_UNARY_FLOAT_ONLY)                           \
  X(isfinite, WK_PW | WK_ND, WK_UNARY_PRED) X(signbit, WK_PW | WK_ND, WK_UNARY_PRED)                  \
  X(bitwise_not, WK_PW | WK_ND, WK_UNARY_INTEGER)

/* Binary pointwise ops (broadcasting, type promotion) with variants. */
#define WK_BINARY_OPS(X)                                                       \
  X(mul, WK_PW) X(maximum, WK_PW) X(minimum, WK_PW) X(pow, WK_PW)              \
  X(logical_and, WK_PW | WK_ND) X(logical_or, WK_PW | WK_ND) X(atan2, WK_PW) X(fmod, WK_PW)        \
  X(remainder, WK_PW) X(hypot, WK_PW) X(logaddexp, WK_PW) X(copysign, WK_PW)                  \
  X(bitwise_and, WK_PW | WK_ND) X(bitwise_or, WK_PW | WK_ND) X(bitwise_xor, WK_PW | WK_ND)     \
  X(bitwise_left_shift, WK_PW | WK_ND) X(bitwise_right_shift, WK_PW | WK_ND)

/* Comparisons: bool results, no in-place variant. */
#define WK_COMPARE_OPS(X) X(eq) X(ne) X(lt) X(le) X(gt) X(ge)

/* Every other op, one schema each. */
#define WK_OTHER_OPS(X)                                                                          \
  /* ---- arithmetic with extra arguments ---- */                                                \
  X("add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", WK_PW)                        \
  X("add_(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)", WK_PW | WK_TAG_INPLACE) \
  X("add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)", WK_PW)  \
  X("add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor", WK_PW)                    \
  X("add_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)", WK_PW | WK_TAG_INPLACE) \
  X("sub(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", WK_PW)                        \
  X("sub_(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)", WK_PW | WK_TAG_INPLACE) \
  X("sub.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)", WK_PW)  \
  X("sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor", WK_PW)                    \
  X("sub_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)", WK_PW | WK_TAG_INPLACE) \
  X("div(Tensor self, Tensor other, *, str? rounding_mode=None) -> Tensor", WK_PW)               \
  X("div_(Tensor(a!) self, Tensor other, *, str? rounding_mode=None) -> Tensor(a!)", WK_PW | WK_TAG_INPLACE) \
  X("div.out(Tensor self, Tensor other, *, str? rounding_mode=None, Tensor(a!) out) -> Tensor(a!)", WK_PW) \
  X("div.Scalar(Tensor self, Scalar other, *, str? rounding_mode=None) -> Tensor", WK_PW)        \
  X("div_.Scalar(Tensor(a!) self, Scalar other, *, str? rounding_mode=None) -> Tensor(a!)", WK_PW | WK_TAG_INPLACE) \
  X("leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor", WK_PW)                      \
  X("leaky_relu_(Tensor(a!) self, Scalar negative_slope=0.01) -> Tensor(a!)", WK_PW | WK_TAG_INPLACE) \
  X("gelu(Tensor self, *, str approximate=\"none\") -> Tensor", WK_PW)                           \
  X("softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor", WK_PW)               \
  X("elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor", WK_PW)  \
  X("elu_(Tensor(a!) self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor(a!)", WK_PW | WK_TAG_INPLACE) \
  X("celu(Tensor self, Scalar alpha=1.0) -> Tensor", WK_PW)                                    \
  X("celu_(Tensor(a!) self, Scalar alpha=1.0) -> Tensor(a!)", WK_PW | WK_TAG_INPLACE)           \
  X("hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor", WK_PW)              \
  X("hardtanh_(Tensor(a!) self, Scalar min_val=-1, Scalar max_val=1) -> Tensor(a!)", WK_PW | WK_TAG_INPLACE) \
  X("clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor", WK_PW)                   \
  X("clamp_(Tensor(a!) self, Scalar? min=None, Scalar? max=None) -> Tensor(a!)", WK_PW | WK_TAG_INPLACE) \
  X("where.self(Tensor condition, Tensor self, Tensor other) -> Tensor", WK_PW)                  \
  X("clamp_min(Tensor self, Scalar min) -> Tensor", WK_PW | WK_TAG_COMPOSITE)                    \
  X("clamp_min_(Tensor(a!) self, Scalar min) -> Tensor(a!)", WK_PW | WK_TAG_INPLACE | WK_TAG_COMPOSITE) \
  X("clamp_max(Tensor self, Scalar max) -> Tensor", WK_PW | WK_TAG_COMPOSITE)                    \
  X("clamp_max_(Tensor(a!) self, Scalar max) -> Tensor(a!)", WK_PW | WK_TAG_INPLACE | WK_TAG_COMPOSITE) \
  X("lerp.Scalar(Tensor self, Tensor end, Scalar weight) -> Tensor", WK_PW | WK_TAG_COMPOSITE)   \
  X("lerp.Tensor(Tensor self, Tensor end, Tensor weight) -> Tensor", WK_PW | WK_TAG_COMPOSITE)   \
  X("addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor", WK_PW | WK_TAG_COMPOSITE) \
  X("addcmul_(Tensor(a!) self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor(a!)", WK_PW | WK_TAG_INPLACE | WK_TAG_COMPOSITE) \
  X("addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor", WK_PW | WK_TAG_COMPOSITE) \
  X("addcdiv_(Tensor(a!) self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor(a!)", WK_PW | WK_TAG_INPLACE | WK_TAG_COMPOSITE) \
  X("isnan(Tensor self) -> Tensor", WK_PW | WK_ND)                                               \
  X("isinf(Tensor self) -> Tensor", WK_PW | WK_ND)                                               \
  X("nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? neginf=None) -> Tensor", WK_PW) \
  /* ---- mixed precision: GradScaler's fused steps (PyTorch's _amp_foreach_non_finite_check_and_unscale_ and _amp_update_scale_) ---- */ \
  X("amp_foreach_non_finite_check_and_unscale_(Tensor(a!)[] self, Tensor(b!) found_inf, Tensor inv_scale) -> ()", WK_ND | WK_TAG_INPLACE) \
  X("amp_update_scale_(Tensor(a!) self, Tensor(b!) growth_tracker, Tensor found_inf, float scale_growth_factor, float scale_backoff_factor, int growth_interval) -> Tensor(a!)", WK_ND | WK_TAG_INPLACE) \
  /* ---- factories ---- */                                                                      \
  X("zeros(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor", WK_TAG_FACTORY) \
  X("ones(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor", WK_TAG_FACTORY)  \
  X("full(int[] size, Scalar fill_value, *, ScalarType? dtype=None, Device? device=None) -> Tensor", WK_TAG_FACTORY) \
  X("arange(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, Device? device=None) -> Tensor", WK_TAG_FACTORY) \
  X("linspace(Scalar start, Scalar end, int steps, *, ScalarType? dtype=None, Device? device=None) -> Tensor", WK_TAG_FACTORY) \
  X("eye(int n, int m=-1, *, ScalarType? dtype=None, Device? device=None) -> Tensor", WK_TAG_FACTORY) \
  X("zeros_like(Tensor self, *, ScalarType? dtype=None, Device? device=None) -> Tensor", WK_TAG_FACTORY) \
  X("ones_like(Tensor self, *, ScalarType? dtype=None, Device? device=None) -> Tensor", WK_TAG_FACTORY) \
  X("full_like(Tensor self, Scalar fill_value, *, ScalarType? dtype=None, Device? device=None) -> Tensor", WK_TAG_FACTORY) \
  X("fill_(Tensor(a!) self, Scalar value) -> Tensor(a!)", WK_TAG_INPLACE)                        \
  X("zero_(Tensor(a!) self) -> Tensor(a!)", WK_TAG_INPLACE)                                      \
  X("rand(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor", WK_TAG_FACTORY | WK_TAG_RANDOM) \
  X("randn(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor", WK_TAG_FACTORY | WK_TAG_RANDOM) \
  X("randint(int low, int high, int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor", WK_TAG_FACTORY | WK_TAG_RANDOM) \
  X("randperm(int n, *, ScalarType? dtype=None, Device? device=None) -> Tensor", WK_TAG_FACTORY | WK_TAG_RANDOM) \
  X("rand_like(Tensor self, *, ScalarType? dtype=None) -> Tensor", WK_TAG_FACTORY | WK_TAG_RANDOM) \
  X("randn_like(Tensor self, *, ScalarType? dtype=None) -> Tensor", WK_TAG_FACTORY | WK_TAG_RANDOM) \
  X("bernoulli(Tensor self) -> Tensor", WK_TAG_RANDOM | WK_ND)                                   \
  X("bernoulli.p(Tensor self, float p) -> Tensor", WK_TAG_RANDOM | WK_ND)                        \
  X("uniform_(Tensor(a!) self, float from=0, float to=1) -> Tensor(a!)", WK_TAG_RANDOM | WK_TAG_INPLACE) \
  X("normal_(Tensor(a!) self, float mean=0, float std=1) -> Tensor(a!)", WK_TAG_RANDOM | WK_TAG_INPLACE) \
  /* ---- views (kernels in the core, any device) ---- */                                        \
  X("view(Tensor(a) self, int[] size) -> Tensor(a)", WK_TAG_VIEW)                                \
  X("reshape(Tensor(a) self, int[] shape) -> Tensor(a)", WK_TAG_VIEW)                            \
  X("permute(Tensor(a) self, int[] dims) -> Tensor(a)", WK_TAG_VIEW)                             \
  X("transpose(Tensor(a) self, int dim0, int dim1) -> Tensor(a)", WK_TAG_VIEW)                   \
  X("t(Tensor(a) self) -> Tensor(a)", WK_TAG_VIEW)                                               \
  X("slice(Tensor(a) self, int dim=0, int? start=None, int? end=None, int step=1) -> Tensor(a)", WK_TAG_VIEW) \
  X("narrow(Tensor(a) self, int dim, int start, int length) -> Tensor(a)", WK_TAG_VIEW)          \
  X("select(Tensor(a) self, int dim, int index) -> Tensor(a)", WK_TAG_VIEW)                      \
  X("expand(Tensor(a) self, int[] size) -> Tensor(a)", WK_TAG_VIEW)                              \
  X("squeeze(Tensor(a) self) -> Tensor(a)", WK_TAG_VIEW)                                         \
  X("squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)", WK_TAG_VIEW)                            \
  X("unsqueeze(Tensor(a) self, int dim) -> Tensor(a)", WK_TAG_VIEW)                              \
  X("flatten(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)", WK_TAG_VIEW)        \
  X("contiguous(Tensor(a) self) -> Tensor(a)", WK_TAG_VIEW)                                      \
  X("as_strided(Tensor(a) self, int[] size, int[] stride, int? storage_offset=None) -> Tensor(a)", WK_TAG_VIEW) \
  X("alias(Tensor(a) self) -> Tensor(a)", WK_TAG_VIEW)                                           \
  /* ---- copies and casts ---- */                                                              \
  X("copy_(Tensor(a!) self, Tensor src) -> Tensor(a!)", WK_TAG_INPLACE | WK_TAG_ANY_DEVICE)      \
  X("clone(Tensor self) -> Tensor", 0)                                                           \
  X("to.dtype(Tensor self, ScalarType dtype, bool copy=False) -> Tensor", 0)                     \
  X("to.device(Tensor self, Device device, ScalarType? dtype=None, bool copy=False) -> Tensor", WK_TAG_ANY_DEVICE) \
  /* ---- reductions ---- */                                                                    \
  X("sum(Tensor self, *, ScalarType? dtype=None) -> Tensor", WK_TAG_REDUCTION)                   \
  X("sum.dim_IntList(Tensor self, int[]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", WK_TAG_REDUCTION) \
  X("mean(Tensor self, *, ScalarType? dtype=None) -> Tensor", WK_TAG_REDUCTION)                  \
  X("mean.dim(Tensor self, int[]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", WK_TAG_REDUCTION) \
  X("prod(Tensor self, *, ScalarType? dtype=None) -> Tensor", WK_TAG_REDUCTION)                  \
  X("prod.dim_int(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", WK_TAG_REDUCTION) \
  X("max(Tensor self) -> Tensor", WK_TAG_REDUCTION)                                              \
  X("max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)", WK_TAG_REDUCTION) \
  X("min(Tensor self) -> Tensor", WK_TAG_REDUCTION)                                              \
  X("min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)", WK_TAG_REDUCTION) \
  X("argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", WK_TAG_REDUCTION | WK_ND) \
  X("argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", WK_TAG_REDUCTION | WK_ND) \
  X("var.correction(Tensor self, int[]? dim=None, *, int correction=1, bool keepdim=False) -> Tensor", WK_TAG_REDUCTION) \
  X("std.correction(Tensor self, int[]? dim=None, *, int correction=1, bool keepdim=False) -> Tensor", WK_TAG_REDUCTION) \
  X("norm(Tensor self, Scalar p=2, int[]? dim=None, bool keepdim=False) -> Tensor", WK_TAG_REDUCTION) \
  X("logsumexp(Tensor self, int[] dim, bool keepdim=False) -> Tensor", WK_TAG_REDUCTION)         \
  X("all(Tensor self) -> Tensor", WK_TAG_REDUCTION | WK_ND)                                      \
  X("all.dim(Tensor self, int dim, bool keepdim=False) -> Tensor", WK_TAG_REDUCTION | WK_ND)     \
  X("any(Tensor self) -> Tensor", WK_TAG_REDUCTION | WK_ND)                                      \
  X("any.dim(Tensor self, int dim, bool keepdim=False) -> Tensor", WK_TAG_REDUCTION | WK_ND)     \
  X("cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", 0)                      \
  X("cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", 0)                     \
  X("logcumsumexp(Tensor self, int dim) -> Tensor", 0)                                           \
  X("cummax(Tensor self, int dim) -> (Tensor values, Tensor indices)", 0)                        \
  X("cummin(Tensor self, int dim) -> (Tensor values, Tensor indices)", 0)                        \
  X("amax(Tensor self, int[] dim=[], bool keepdim=False) -> Tensor", WK_TAG_REDUCTION | WK_TAG_COMPOSITE) \
  X("amin(Tensor self, int[] dim=[], bool keepdim=False) -> Tensor", WK_TAG_REDUCTION | WK_TAG_COMPOSITE) \
  X("aminmax(Tensor self, *, int? dim=None, bool keepdim=False) -> (Tensor min, Tensor max)", WK_TAG_REDUCTION | WK_ND | WK_TAG_COMPOSITE) \
  X("nansum(Tensor self, int[]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", WK_TAG_REDUCTION | WK_TAG_COMPOSITE) \
  X("nanmean(Tensor self, int[]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", WK_TAG_REDUCTION | WK_TAG_COMPOSITE) \
  X("var_mean.correction(Tensor self, int[]? dim=None, *, int correction=1, bool keepdim=False) -> (Tensor, Tensor)", WK_TAG_REDUCTION | WK_TAG_COMPOSITE) \
  X("std_mean.correction(Tensor self, int[]? dim=None, *, int correction=1, bool keepdim=False) -> (Tensor, Tensor)", WK_TAG_REDUCTION | WK_TAG_COMPOSITE) \
  X("count_nonzero(Tensor self, int[]? dim=None) -> Tensor", WK_TAG_REDUCTION | WK_ND | WK_TAG_COMPOSITE) \
  X("kthvalue(Tensor self, int k, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)", WK_TAG_REDUCTION | WK_TAG_COMPOSITE) \
  X("median(Tensor self) -> Tensor", WK_TAG_REDUCTION | WK_TAG_COMPOSITE)                       \
  X("median.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)", WK_TAG_REDUCTION | WK_TAG_COMPOSITE) \
  /* ---- linear algebra ---- */                                                                \
  X("mm(Tensor self, Tensor mat2) -> Tensor", 0)                                                 \
  X("bmm(Tensor self, Tensor mat2) -> Tensor", 0)                                                \
  X("addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor", 0) \
  X("dot(Tensor self, Tensor tensor) -> Tensor", 0)                                              \
  X("matmul(Tensor self, Tensor other) -> Tensor", WK_TAG_COMPOSITE)                             \
  X("linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor", WK_TAG_COMPOSITE)        \
  X("outer(Tensor self, Tensor vec2) -> Tensor", WK_TAG_COMPOSITE)                               \
  /* ---- neural-network ops (forward) ---- */                                                  \
  X("softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", 0)                        \
  X("log_softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", 0)                    \
  X("conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, int[2] padding=0, int[2] dilation=1, int groups=1) -> Tensor", 0) \
  X("max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)", 0) \
  X("avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor", 0) \
  X("adaptive_avg_pool2d(Tensor self, int[2] output_size) -> Tensor", 0)                         \
  X("batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor(a!)? running_mean, Tensor(b!)? running_var, bool training=False, float momentum=0.1, float eps=1e-05) -> (Tensor, Tensor, Tensor)", 0) \
  X("layer_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05) -> (Tensor, Tensor, Tensor)", 0) \
  X("dropout(Tensor input, float p, bool train) -> (Tensor, Tensor)", WK_TAG_RANDOM)             \
  X("embedding(Tensor weight, Tensor indices, int padding_idx=-1) -> Tensor", 0)                 \
  X("pad(Tensor self, int[] pad, str mode=\"constant\", float? value=None) -> Tensor", 0)        \
  X("cross_entropy(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, int ignore_index=-100, float label_smoothing=0.0) -> Tensor", 0) \
  X("nll_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, int ignore_index=-100) -> Tensor", 0) \
  X("mse_loss(Tensor self, Tensor target, int reduction=1) -> Tensor", 0)                        \
  X("binary_cross_entropy_with_logits(Tensor self, Tensor target, Tensor? weight=None, Tensor? pos_weight=None, int reduction=1) -> Tensor", 0) \
  X("scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float dropout_p=0.0, bool is_causal=False, *, float? scale=None) -> (Tensor output, Tensor logsumexp, Tensor rng_state)", WK_TAG_RANDOM) \
  X("glu(Tensor self, int dim=-1) -> Tensor", WK_TAG_COMPOSITE)                                  \
  X("prelu(Tensor self, Tensor weight) -> Tensor", WK_TAG_COMPOSITE)                             \
  /* ---- issue 21, nn and loss surface (core composites: core/composite_nn_surface.c; meta: meta_nn_surface.c) ---- */ \
  X("l1_loss(Tensor self, Tensor target, int reduction=1) -> Tensor", WK_TAG_COMPOSITE)          \
  X("smooth_l1_loss(Tensor self, Tensor target, int reduction=1, float beta=1.0) -> Tensor", WK_TAG_COMPOSITE) \
  X("huber_loss(Tensor self, Tensor target, int reduction=1, float delta=1.0) -> Tensor", WK_TAG_COMPOSITE) \
  X("soft_margin_loss(Tensor self, Tensor target, int reduction=1) -> Tensor", WK_TAG_COMPOSITE) \
  X("kl_div(Tensor self, Tensor target, int reduction=1, *, bool log_target=False) -> Tensor", WK_TAG_COMPOSITE) \
  X("binary_cross_entropy(Tensor self, Tensor target, Tensor? weight=None, int reduction=1) -> Tensor", WK_TAG_COMPOSITE) \
  X("poisson_nll_loss(Tensor input, Tensor target, bool log_input=True, bool full=False, float eps=1e-08, int reduction=1) -> Tensor", WK_TAG_COMPOSITE) \
  X("gaussian_nll_loss(Tensor input, Tensor target, Tensor var, bool full=False, float eps=1e-06, int reduction=1) -> Tensor", WK_TAG_COMPOSITE) \
  X("margin_ranking_loss(Tensor input1, Tensor input2, Tensor target, float margin=0.0, int reduction=1) -> Tensor", WK_TAG_COMPOSITE) \
  X("hinge_embedding_loss(Tensor self, Tensor target, float margin=1.0, int reduction=1) -> Tensor", WK_TAG_COMPOSITE) \
  X("cosine_embedding_loss(Tensor input1, Tensor input2, Tensor target, float margin=0.0, int reduction=1) -> Tensor", WK_TAG_COMPOSITE) \
  X("triplet_margin_loss(Tensor anchor, Tensor positive, Tensor negative, float margin=1.0, float p=2, float eps=1e-06, bool swap=False, int reduction=1) -> Tensor", WK_TAG_COMPOSITE) \
  X("multilabel_soft_margin_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=1) -> Tensor", WK_TAG_COMPOSITE) \
  X("multi_margin_loss(Tensor self, Tensor target, Scalar p=1, Scalar margin=1, Tensor? weight=None, int reduction=1) -> Tensor", WK_TAG_COMPOSITE) \
  X("cosine_similarity(Tensor x1, Tensor x2, int dim=1, float eps=1e-08) -> Tensor", WK_TAG_COMPOSITE) \
  X("pairwise_distance(Tensor x1, Tensor x2, float p=2, float eps=1e-06, bool keepdim=False) -> Tensor", WK_TAG_COMPOSITE) \
  X("cdist(Tensor x1, Tensor x2, float p=2, int? compute_mode=None) -> Tensor", WK_TAG_COMPOSITE) \
  X("interpolate(Tensor input, int[]? size=None, float[]? scale_factor=None, str mode=\"nearest\", bool? align_corners=None, bool? recompute_scale_factor=None, bool antialias=False) -> Tensor", WK_TAG_COMPOSITE) \
  X("avg_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=0, bool ceil_mode=False, bool count_include_pad=True) -> Tensor", WK_TAG_COMPOSITE) \
  X("avg_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor", WK_TAG_COMPOSITE) \
  X("adaptive_avg_pool1d(Tensor self, int[1] output_size) -> Tensor", WK_TAG_COMPOSITE)          \
  X("adaptive_avg_pool3d(Tensor self, int[3] output_size) -> Tensor", WK_TAG_COMPOSITE)          \
  X("max_pool1d_with_indices(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=0, int[1] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)", WK_TAG_COMPOSITE) \
  X("max_pool3d_with_indices(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, int[3] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)", WK_TAG_COMPOSITE) \
  X("adaptive_max_pool1d(Tensor self, int[1] output_size) -> (Tensor, Tensor)", WK_TAG_COMPOSITE) \
  X("adaptive_max_pool2d(Tensor self, int[2] output_size) -> (Tensor, Tensor)", WK_TAG_COMPOSITE) \
  X("adaptive_max_pool3d(Tensor self, int[3] output_size) -> (Tensor, Tensor)", WK_TAG_COMPOSITE) \
  X("conv1d(Tensor input, Tensor weight, Tensor? bias=None, int[1] stride=1, int[1] padding=0, int[1] dilation=1, int groups=1) -> Tensor", WK_TAG_COMPOSITE) \
  X("conv3d(Tensor input, Tensor weight, Tensor? bias=None, int[3] stride=1, int[3] padding=0, int[3] dilation=1, int groups=1) -> Tensor", WK_TAG_COMPOSITE) \
  X("conv1d.padding(Tensor input, Tensor weight, Tensor? bias=None, int[1] stride=1, str padding=\"valid\", int[1] dilation=1, int groups=1) -> Tensor", WK_TAG_COMPOSITE) \
  X("conv2d.padding(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, str padding=\"valid\", int[2] dilation=1, int groups=1) -> Tensor", WK_TAG_COMPOSITE) \
  X("conv3d.padding(Tensor input, Tensor weight, Tensor? bias=None, int[3] stride=1, str padding=\"valid\", int[3] dilation=1, int groups=1) -> Tensor", WK_TAG_COMPOSITE) \
  X("conv_transpose1d(Tensor input, Tensor weight, Tensor? bias=None, int[1] stride=1, int[1] padding=0, int[1] output_padding=0, int groups=1, int[1] dilation=1) -> Tensor", WK_TAG_COMPOSITE) \
  X("conv_transpose2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, int[2] padding=0, int[2] output_padding=0, int groups=1, int[2] dilation=1) -> Tensor", WK_TAG_COMPOSITE) \
  X("conv_transpose3d(Tensor input, Tensor weight, Tensor? bias=None, int[3] stride=1, int[3] padding=0, int[3] output_padding=0, int groups=1, int[3] dilation=1) -> Tensor", WK_TAG_COMPOSITE) \
  X("pixel_shuffle(Tensor self, int upscale_factor) -> Tensor", WK_TAG_COMPOSITE)                \
  X("pixel_unshuffle(Tensor self, int downscale_factor) -> Tensor", WK_TAG_COMPOSITE)            \
  X("channel_shuffle(Tensor self, int groups) -> Tensor", WK_TAG_COMPOSITE)                      \
  X("group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, float eps=1e-05) -> Tensor", WK_TAG_COMPOSITE) \
  X("instance_norm(Tensor input, Tensor? weight=None, Tensor? bias=None, Tensor(a!)? running_mean=None, Tensor(b!)? running_var=None, bool use_input_stats=True, float momentum=0.1, float eps=1e-05) -> Tensor", WK_TAG_COMPOSITE) \
  X("local_response_norm(Tensor input, int size, float alpha=0.0001, float beta=0.75, float k=1.0) -> Tensor", WK_TAG_COMPOSITE) \
  X("alpha_dropout(Tensor input, float p, bool train) -> Tensor", WK_TAG_RANDOM | WK_TAG_COMPOSITE) \
  X("feature_dropout(Tensor input, float p, bool train) -> Tensor", WK_TAG_RANDOM | WK_TAG_COMPOSITE) \
  X("feature_alpha_dropout(Tensor input, float p, bool train) -> Tensor", WK_TAG_RANDOM | WK_TAG_COMPOSITE) \
  X("im2col(Tensor self, int[2] kernel_size, int[2] dilation, int[2] padding, int[2] stride) -> Tensor", WK_TAG_COMPOSITE) \
  X("col2im(Tensor self, int[2] output_size, int[2] kernel_size, int[2] dilation, int[2] padding, int[2] stride) -> Tensor", WK_TAG_COMPOSITE) \
  X("lp_pool1d(Tensor self, float norm_type, int[1] kernel_size, int[1] stride=[], bool ceil_mode=False) -> Tensor", WK_TAG_COMPOSITE) \
  X("lp_pool2d(Tensor self, float norm_type, int[2] kernel_size, int[2] stride=[], bool ceil_mode=False) -> Tensor", WK_TAG_COMPOSITE) \
  X("max_unpool2d(Tensor self, Tensor indices, int[2] output_size) -> Tensor", WK_TAG_COMPOSITE) \
  X("affine_grid(Tensor theta, int[] size, bool align_corners=False) -> Tensor", WK_TAG_COMPOSITE) \
  X("grid_sample(Tensor input, Tensor grid, str mode=\"bilinear\", str padding_mode=\"zeros\", bool align_corners=False) -> Tensor", WK_TAG_COMPOSITE) \
  X("embedding_bag(Tensor weight, Tensor indices, Tensor? offsets=None, int mode=0, Tensor? per_sample_weights=None, bool include_last_offset=False, int? padding_idx=None) -> Tensor", WK_TAG_COMPOSITE) \
  X("ctc_loss(Tensor log_probs, Tensor targets, Tensor input_lengths, Tensor target_lengths, int blank=0, int reduction=1, bool zero_infinity=False) -> Tensor", WK_TAG_COMPOSITE) \
  /* ---- indexing and shape ---- */                                                            \
  X("cat(Tensor[] tensors, int dim=0) -> Tensor", 0)                                             \
  X("stack(Tensor[] tensors, int dim=0) -> Tensor", WK_TAG_COMPOSITE)                            \
  X("split(Tensor(a -> *) self, int split_size, int dim=0) -> Tensor[]", WK_TAG_VIEW | WK_TAG_COMPOSITE)            \
  X("split_with_sizes(Tensor(a -> *) self, int[] split_sizes, int dim=0) -> Tensor[]", WK_TAG_VIEW | WK_TAG_COMPOSITE) \
  X("chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor[]", WK_TAG_VIEW | WK_TAG_COMPOSITE)                \
  X("index_select(Tensor self, int dim, Tensor index) -> Tensor", 0)                             \
  X("gather(Tensor self, int dim, Tensor index) -> Tensor", 0)                                   \
  X("scatter.src(Tensor self, int dim, Tensor index, Tensor src) -> Tensor", 0)                  \
  X("scatter_.src(Tensor(a!) self, int dim, Tensor index, Tensor src) -> Tensor(a!)", WK_TAG_INPLACE) \
  X("scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor", 0)                  \
  X("scatter_add_(Tensor(a!) self, int dim, Tensor index, Tensor src) -> Tensor(a!)", WK_TAG_INPLACE) \
  X("masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor", 0)                   \
  X("masked_fill_.Scalar(Tensor(a!) self, Tensor mask, Scalar value) -> Tensor(a!)", WK_TAG_INPLACE) \
  X("masked_select(Tensor self, Tensor mask) -> Tensor", 0)                                      \
  X("repeat(Tensor self, int[] repeats) -> Tensor", 0)                                           \
  X("flip(Tensor self, int[] dims) -> Tensor", 0)                                                \
  X("roll(Tensor self, int[] shifts, int[] dims=[]) -> Tensor", 0)                               \
  X("tril(Tensor self, int diagonal=0) -> Tensor", WK_TAG_COMPOSITE)                             \
  X("triu(Tensor self, int diagonal=0) -> Tensor", WK_TAG_COMPOSITE)                             \
  X("diag(Tensor self, int diagonal=0) -> Tensor", 0)                                            \
  X("diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)", WK_TAG_VIEW)  \
  X("movedim(Tensor(a) self, int[] source, int[] destination) -> Tensor(a)", WK_TAG_VIEW | WK_TAG_COMPOSITE) \
  X("tile(Tensor self, int[] dims) -> Tensor", WK_TAG_COMPOSITE)                                 \
  X("unflatten(Tensor(a) self, int dim, int[] sizes) -> Tensor(a)", WK_TAG_VIEW | WK_TAG_COMPOSITE) \
  X("repeat_interleave.self_int(Tensor self, int repeats, int? dim=None) -> Tensor", WK_TAG_COMPOSITE) \
  X("index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor", WK_TAG_COMPOSITE) \
  X("index_copy(Tensor self, int dim, Tensor index, Tensor source) -> Tensor", WK_TAG_COMPOSITE) \
  X("index_fill.int_Scalar(Tensor self, int dim, Tensor index, Scalar value) -> Tensor", WK_TAG_COMPOSITE) \
  X("take(Tensor self, Tensor index) -> Tensor", WK_TAG_COMPOSITE)                             \
  X("take_along_dim(Tensor self, Tensor indices, int? dim=None) -> Tensor", WK_TAG_COMPOSITE)  \
  X("argsort(Tensor self, int dim=-1, bool descending=False) -> Tensor", WK_ND | WK_TAG_COMPOSITE) \
  X("argsort.stable(Tensor self, *, bool stable, int dim=-1, bool descending=False) -> Tensor", WK_ND | WK_TAG_COMPOSITE) \
  X("nonzero(Tensor self) -> Tensor", WK_ND | WK_TAG_COMPOSITE)                                \
  X("argwhere(Tensor self) -> Tensor", WK_ND | WK_TAG_COMPOSITE)                               \
  X("searchsorted.Tensor(Tensor sorted_sequence, Tensor self, *, bool out_int32=False, bool right=False, str? side=None, Tensor? sorter=None) -> Tensor", WK_ND | WK_TAG_COMPOSITE) \
  X("bucketize.Tensor(Tensor self, Tensor boundaries, *, bool out_int32=False, bool right=False) -> Tensor", WK_ND | WK_TAG_COMPOSITE) \
  X("bincount(Tensor self, Tensor? weights=None, int minlength=0) -> Tensor", WK_ND | WK_TAG_COMPOSITE) \
  X("histc(Tensor self, int bins=100, Scalar min=0, Scalar max=0) -> Tensor", WK_ND | WK_TAG_COMPOSITE) \
  X("topk(Tensor self, int k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor indices)", WK_ND) \
  X("sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)", 0) \
  X("one_hot(Tensor self, int num_classes=-1) -> Tensor", WK_ND)                                \
  /* ---- issue 21, engineer A: reductions, indexing and linalg (meta: core/meta_linalg.c; composites: \
   * core/composite_linalg.c; cpu: plugins/cpu/lapack.c, plugins/cpu/index_reduce.c) ---- */ \
  X("mode(Tensor self, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)", WK_TAG_REDUCTION) \
  X("unique(Tensor self, bool sorted=True, bool return_inverse=False, bool return_counts=False, int? dim=None) -> (Tensor values, Tensor inverse, Tensor counts)", WK_ND | WK_TAG_COMPOSITE) \
  X("unique_consecutive(Tensor self, bool return_inverse=False, bool return_counts=False, int? dim=None) -> (Tensor values, Tensor inverse, Tensor counts)", WK_ND | WK_TAG_COMPOSITE) \
  X("scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True) -> Tensor", 0) \
  X("index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor", WK_TAG_COMPOSITE) \
  X("masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor", 0) \
  X("einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor", WK_TAG_COMPOSITE) \
  X("baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor", WK_TAG_COMPOSITE) \
  X("addbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor", WK_TAG_COMPOSITE) \
  X("tensordot(Tensor self, Tensor other, int[] dims_self, int[] dims_other) -> Tensor", WK_TAG_COMPOSITE) \
  X("kron(Tensor self, Tensor other) -> Tensor", WK_TAG_COMPOSITE) \
  X("linalg_vector_norm(Tensor self, Scalar ord=2, int[]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", WK_TAG_REDUCTION | WK_TAG_COMPOSITE) \
  X("linalg_matrix_norm(Tensor self, Scalar ord, int[] dim=[-2,-1], bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", WK_TAG_REDUCTION | WK_TAG_COMPOSITE) \
  X("linalg_matrix_norm.str_ord(Tensor self, str ord=\"fro\", int[] dim=[-2,-1], bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", WK_TAG_REDUCTION | WK_TAG_COMPOSITE) \
  X("linalg_cholesky(Tensor self, *, bool upper=False) -> Tensor", 0) \
  X("linalg_qr(Tensor A, str mode=\"reduced\") -> (Tensor Q, Tensor R)", 0) \
  X("linalg_eigh(Tensor self, str UPLO=\"L\") -> (Tensor eigenvalues, Tensor eigenvectors)", 0) \
  X("linalg_svd(Tensor A, bool full_matrices=True, *, str? driver=None) -> (Tensor U, Tensor S, Tensor Vh)", 0) \
  X("linalg_solve(Tensor A, Tensor B, *, bool left=True) -> Tensor", 0) \
  X("linalg_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet)", 0) \
  X("linalg_inv(Tensor A) -> Tensor", WK_TAG_COMPOSITE) \
  X("linalg_det(Tensor A) -> Tensor", WK_TAG_COMPOSITE) \
  X("linalg_pinv(Tensor self, *, float? atol=None, float? rtol=None, bool hermitian=False) -> Tensor", WK_TAG_COMPOSITE) \
  X("linalg_lstsq(Tensor self, Tensor b, float? rcond=None, *, str? driver=None) -> (Tensor solution, Tensor residuals, Tensor rank, Tensor singular_values)", WK_TAG_COMPOSITE) \
  /* ---- quantization (ABI 1.3; <wick/qtensor.h>; meta in core/quantized_meta.c) ---- */       \
  X("quantize_per_tensor(Tensor self, float scale, int zero_point, ScalarType dtype) -> Tensor", WK_ND) \
  X("quantize_per_channel(Tensor self, Tensor scales, Tensor zero_points, int axis, ScalarType dtype) -> Tensor", WK_ND) \
  X("dequantize(Tensor self) -> Tensor", WK_ND)                                                  \
  X("int_repr(Tensor self) -> Tensor", WK_ND)                                                    \
  X("quantized_linear(Tensor input, Tensor weight, Tensor? bias, float output_scale, int output_zero_point, bool relu=False) -> Tensor", WK_ND) \
  X("quantized_conv2d(Tensor input, Tensor weight, Tensor? bias, int[2] stride, int[2] padding, int[2] dilation, int groups, float output_scale, int output_zero_point, bool relu=False) -> Tensor", WK_ND) \
  X("quantized_linear_dynamic(Tensor input, Tensor weight, Tensor? bias, bool reduce_range=True) -> Tensor", WK_ND) \
  X("fake_quantize_per_tensor_affine(Tensor self, float scale, int zero_point, int quant_min, int quant_max) -> Tensor", WK_PW) \
  X("fake_quantize_per_channel_affine(Tensor self, Tensor scale, Tensor zero_point, int axis, int quant_min, int quant_max) -> Tensor", 0)

/* Backward ops: helpers of derivative formulas that are not cheap to write
 * with forward ops. Results a caller masks out (output_mask[i] == 0) are None. */
#define WK_BACKWARD_OPS(X)                                                                       \
  X("conv2d_backward(Tensor grad_output, Tensor input, Tensor weight, int[2] stride, int[2] padding, int[2] dilation, int groups, int[3] output_mask) -> (Tensor, Tensor, Tensor)", WK_TAG_BACKWARD) \
  X("max_pool2d_with_indices_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, int[2] padding, int[2] dilation, bool ceil_mode, Tensor indices) -> Tensor", WK_TAG_BACKWARD) \
  X("avg_pool2d_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, int[2] padding, bool ceil_mode, bool count_include_pad, int? divisor_override) -> Tensor", WK_TAG_BACKWARD) \
  X("adaptive_avg_pool2d_backward(Tensor grad_output, Tensor self) -> Tensor", WK_TAG_BACKWARD) \
  X("batch_norm_backward(Tensor grad_out, Tensor input, Tensor? weight, Tensor? running_mean, Tensor? running_var, Tensor? save_mean, Tensor? save_invstd, bool train, float eps, int[3] output_mask) -> (Tensor, Tensor, Tensor)", WK_TAG_BACKWARD) \
  X("layer_norm_backward(Tensor grad_out, Tensor input, int[] normalized_shape, Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias, int[3] output_mask) -> (Tensor, Tensor, Tensor)", WK_TAG_BACKWARD) \
  X("embedding_dense_backward(Tensor grad_output, Tensor indices, int num_weights, int padding_idx) -> Tensor", WK_TAG_BACKWARD) \
  X("softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor", WK_TAG_BACKWARD) \
  X("log_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor", WK_TAG_BACKWARD) \
  X("pad_backward(Tensor grad_output, Tensor self, int[] pad, str mode) -> Tensor", WK_TAG_BACKWARD) \
  X("gelu_backward(Tensor grad_output, Tensor self, *, str approximate=\"none\") -> Tensor", WK_TAG_BACKWARD) \
  X("threshold_backward(Tensor grad_output, Tensor self, float threshold) -> Tensor", WK_TAG_BACKWARD) \
  X("sigmoid_backward(Tensor grad_output, Tensor output) -> Tensor", WK_TAG_BACKWARD) \
  X("scaled_dot_product_attention_backward(Tensor grad_out, Tensor query, Tensor key, Tensor value, Tensor? attn_mask, Tensor out, Tensor logsumexp, Tensor rng_state, float dropout_p, bool is_causal, float? scale, int[4] output_mask) -> (Tensor, Tensor, Tensor, Tensor)", WK_TAG_BACKWARD) \
  X("tanh_backward(Tensor grad_output, Tensor output) -> Tensor", WK_TAG_BACKWARD) \
  X("fake_quantize_per_tensor_affine_backward(Tensor grad, Tensor self, float scale, int zero_point, int quant_min, int quant_max) -> Tensor", WK_TAG_BACKWARD) \
  X("fake_quantize_per_channel_affine_backward(Tensor grad, Tensor self, Tensor scale, Tensor zero_point, int axis, int quant_min, int quant_max) -> Tensor", WK_TAG_BACKWARD) \
  X("interpolate_backward(Tensor grad_output, int[] input_size, float[]? scale_factor=None, str mode=\"nearest\", bool? align_corners=None, bool? recompute_scale_factor=None, bool antialias=False) -> Tensor", WK_TAG_BACKWARD)

#endif
