/* Wick ABI 1.3: quantized tensors. A tensor of dtype WK_QINT8, WK_QUINT8 or
 * WK_QINT32 stores integers q of the underlying dtype (i8, u8, i32) and carries
 * quantization parameters, as PyTorch's quantized tensors do:
 *   per-tensor affine:   real = (q - zero_point) * scale
 *   per-channel affine:  real = (q - zero_points[c]) * scales[c], c the index
 *                        along `axis`.
 * Views of a quantized tensor share its parameters. The quantize/dequantize
 * ops (wk_quantize_per_tensor, wk_quantize_per_channel, wk_dequantize,
 * wk_int_repr in <wick/ops.h>) are standard ops; this header has the
 * parameter accessors and the zero-copy constructors kernels build results
 * with. */
#ifndef WICK_QTENSOR_H
#define WICK_QTENSOR_H

#include <wick/types.h>

/* Quantization schemes, PyTorch's torch.qscheme (numbers are ABI). A tensor's
 * scheme is always affine; the symmetric ones describe how an observer picks
 * parameters (<wick/quant.h>). */
typedef enum wk_qscheme {
  WK_QSCHEME_NONE = 0, /* not a quantized tensor */
  WK_PER_TENSOR_AFFINE = 1,
  WK_PER_CHANNEL_AFFINE = 2,
  WK_PER_TENSOR_SYMMETRIC = 3,
  WK_PER_CHANNEL_SYMMETRIC = 4
} wk_qscheme;

/* True for WK_QINT8, WK_QUINT8 and WK_QINT32. */
WK_API bool wk_dtype_is_quantized(wk_dtype dt);
/* The integer dtype a quantized dtype stores (qint8 -> i8, quint8 -> u8,
 * qint32 -> i32); WK_DTYPE_DEFAULT for any other dtype. */
WK_API wk_dtype wk_dtype_quantized_underlying(wk_dtype dt);
/* The smallest and largest integer a quantized dtype holds (qint8: -128, 127). */
WK_API int64_t wk_dtype_qmin(wk_dtype dt);
WK_API int64_t wk_dtype_qmax(wk_dtype dt);
/* PyTorch's name of a scheme ("torch.per_tensor_affine"); "?" for others. */
WK_API const char *wk_qscheme_name(wk_qscheme s);

/* The tensor's scheme: WK_PER_TENSOR_AFFINE, WK_PER_CHANNEL_AFFINE, or
 * WK_QSCHEME_NONE for a tensor that is not quantized (and for NULL). Borrows t. */
WK_API wk_qscheme wk_tensor_qscheme(const wk_tensor *t);
/* Per-tensor parameters (PyTorch's q_scale / q_zero_point). On a tensor that
 * is not per-tensor quantized they record WK_ERR_DTYPE naming what the tensor
 * is and return NaN and 0. Borrow t. */
WK_API double wk_q_scale(const wk_tensor *t);
WK_API int64_t wk_q_zero_point(const wk_tensor *t);
/* Per-channel parameters: the scales (a new f64 tensor of one dimension), the
 * zero points (a new i64 tensor) and the axis. On a tensor that is not
 * per-channel quantized they record WK_ERR_DTYPE and return NULL / -1. */
WK_API wk_tensor *wk_q_per_channel_scales(const wk_tensor *t);
WK_API wk_tensor *wk_q_per_channel_zero_points(const wk_tensor *t);
WK_API int64_t wk_q_per_channel_axis(const wk_tensor *t);

/* PyTorch's _make_per_tensor_quantized_tensor: a new quantized tensor that
 * shares int_repr's storage, shape and strides (no copy). int_repr's dtype
 * decides the result's: i8 -> qint8, u8 -> quint8, i32 -> qint32. scale must
 * be positive and finite, zero_point within the dtype's range. Returns a new
 * reference, or NULL with an error naming the bad argument. Borrows int_repr. */
WK_API wk_tensor *wk_make_per_tensor_quantized(wk_tensor *int_repr, double scale, int64_t zero_point);
/* The per-channel twin: scales (any floating dtype) and zero_points (any
 * integer dtype) are 1-D with int_repr's size along axis (copied). Borrows all. */
WK_API wk_tensor *wk_make_per_channel_quantized(wk_tensor *int_repr, wk_tensor *scales, wk_tensor *zero_points,
                                                int64_t axis);

#endif
