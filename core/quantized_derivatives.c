/* Derivatives of the fake-quantize ops of quantization-aware training: the
 * straight-through estimator, PyTorch's: the gradient passes where
 * quant_min <= round(x / scale) + zero_point <= quant_max and is zero where
 * the value was clamped (fake_quantize_*_backward ops compute the mask once).
 * scale and zero_point get no gradient (the non-learnable variants). */
#include "derivatives.h"

static wk_status d_fq_tensor(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *x = X(0);
  CHECK(x);
  wk_value a[6] = {WK_VT(G(0)), WK_VT(x), N->args[1], N->args[2], N->args[3], N->args[4]};
  GIN(0, wk__call1("fake_quantize_per_tensor_affine_backward", a, 6));
  END
}

static wk_status d_fq_channel(const wk__bctx *c, wk_tensor *const *gout, wk_tensor **gin) {
  BEGIN wk_tensor *x = X(0), *sc = X(1), *zp = X(2);
  CHECK(x);
  CHECK(sc);
  CHECK(zp);
  wk_value a[7] = {WK_VT(G(0)), WK_VT(x), WK_VT(sc), WK_VT(zp), N->args[3], N->args[4], N->args[5]};
  GIN(0, wk__call1("fake_quantize_per_channel_affine_backward", a, 7));
  END
}

static const wk__formula rows[] = {
    {"fake_quantize_per_tensor_affine", "FakeQuantizePerTensorAffineCachemaskBackward0", d_fq_tensor, A(0), 0},
    {"fake_quantize_per_channel_affine", "FakeQuantizePerChannelAffineCachemaskBackward0", d_fq_channel,
     A(0) | A(1) | A(2), 0},
};
const wk__formula_family wk__formulas_quant = {rows, sizeof rows / sizeof rows[0]};
