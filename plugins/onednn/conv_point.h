/* onednn plugin: conv2d with one output position whose window holds the
 * whole image (conv_point.c), computed as matmuls. */
#ifndef WICK_ONEDNN_CONV_POINT_H
#define WICK_ONEDNN_CONV_POINT_H

#include "onednn.h"

/* True for a 1x1 output in one group whose window holds the whole image
 * (an HxW block of taps meets it, padding every other): *ty, *tx is the
 * block's first tap. */
bool odn_conv_point(int64_t H, int64_t W, int64_t oh, int64_t ow, int64_t groups, const int64_t pl[2],
                    const int64_t dl[2], int64_t kh, int64_t kw, int64_t *ty, int64_t *tx);
/* Whether the batched input (and grad_output, may be NULL) are [N, C*H*W]
 * matrices oneDNN's matmul reads directly. */
bool odn_conv_point_supported(const wk_tensor *x, const wk_tensor *go);
/* y (contiguous [N, O, 1, 1]) = conv2d(x, w, b) through the block at (ty, tx). */
wk_status odn_conv_point_fwd(const char *op, const wk_tensor *x, const wk_tensor *w, const wk_tensor *b, int64_t ty,
                             int64_t tx, dnnl_data_type_t dt, wk_tensor *y);
/* The gradients asked for (NULL: not wanted) into fresh contiguous tensors. */
wk_status odn_conv_point_bwd(const char *op, const wk_tensor *go, const wk_tensor *x, const wk_tensor *w, int64_t ty,
                             int64_t tx, dnnl_data_type_t dt, wk_tensor *gi, wk_tensor *gw, wk_tensor *gb);

#endif
