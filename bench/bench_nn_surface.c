/* Issue 21's nn and loss surface (core/composite_nn_surface.c) timed on 1M-element float32 inputs,
 * medians of timed calls in ms, printed as nn_surface_<op>_ms; bench/nn_surface.py times the same
 * calls in PyTorch and bench/nn_surface.sh prints the side-by-side table. */
#include <string.h>

#include "bench_util.h"

static wk_tensor *randt(const int64_t *s, int nd, double lo, double hi) {
  wk_tensor *u = wk_rand(s, nd, (wk_options){.dtype = WK_F32});
  return u ? wk_add_scalar(wk_mul_scalar(u, hi - lo), lo) : NULL;
}

enum { NT = 12 };
static wk_tensor *T_[NT];
static int reps = 7;
static double tm[1000];

/* Times the call `expr` (a wk_tensor *) reps times after one warm-up. */
#define BENCH(label, expr)                                                    \
  do {                                                                        \
    if (!bench_selected(label)) break;                                        \
    for (int r_ = -1; r_ < reps; r_++) {                                      \
      wk_scope_begin();                                                       \
      double t0_ = bench_now();                                               \
      wk_tensor *o_ = (expr);                                                 \
      double t1_ = bench_now();                                               \
      if (!o_) {                                                              \
        fprintf(stderr, "bench_nn_surface: %s: %s\n", label, wk_last_error_message()); \
        return 1;                                                             \
      }                                                                       \
      wk_scope_end();                                                         \
      if (r_ >= 0) tm[r_] = t1_ - t0_;                                        \
    }                                                                         \
    printf("nn_surface_%s_ms %.3f\n", label, 1e3 * bench_median(tm, reps));   \
    fflush(stdout);                                                           \
  } while (0)

int main(int argc, char **argv) {
  reps = argc > 1 ? atoi(argv[1]) : 7;
  if (wk_init() != WK_OK || reps < 1 || reps > 1000) return 1;
  wk_manual_seed(1);
  int64_t m[2] = {1000, 1000}, n1k = 1000, img[4] = {8, 32, 64, 64}, seq[3] = {16, 64, 1024}, vol[5] = {4, 8, 16, 32, 32};
  int64_t w1[3] = {64, 64, 3}, w3[5] = {8, 8, 3, 3, 3}, wt[4] = {32, 16, 3, 3}, ps[4] = {8, 128, 32, 32}, cd[2] = {500, 64};
  wk_tensor *x = randt(m, 2, -2, 2), *y = randt(m, 2, -2, 2), *p = randt(m, 2, 0.05, 0.95), *q = randt(m, 2, 0, 1);
  wk_tensor *pos = randt(m, 2, 0.5, 3), *cls = wk_randint(0, 1000, &n1k, 1, (wk_options){.dtype = WK_I64});
  wk_tensor *pm = wk_sub_scalar(wk_mul_scalar(wk_to_dtype(wk_randint(0, 2, m, 2, (wk_options){0}), WK_F32), 2), 1);
  wk_tensor *pm1k = wk_sub_scalar(wk_mul_scalar(wk_to_dtype(wk_randint(0, 2, &n1k, 1, (wk_options){0}), WK_F32), 2), 1);
  wk_tensor *im = randt(img, 4, -1, 1), *sq = randt(seq, 3, -1, 1), *vo = randt(vol, 5, -1, 1);
  wk_tensor *k1 = randt(w1, 3, -0.1, 0.1), *k3 = randt(w3, 5, -0.1, 0.1), *kt = randt(wt, 4, -0.1, 0.1);
  wk_tensor *pso = randt(ps, 4, -1, 1), *c1 = randt(cd, 2, -1, 1), *c2 = randt(cd, 2, -1, 1);
  if (!x || !y || !p || !q || !pos || !cls || !pm || !pm1k || !im || !sq || !vo || !k1 || !k3 || !kt || !pso || !c1 || !c2)
    return 1;
  int64_t one = 1, two = 2, three = 3, zero = 0, sz[2] = {128, 128}, o7[2] = {7, 7}, o100 = 100, k2[3] = {2, 2, 2};
  /* losses (mean) */
  BENCH("l1_loss", wkx_l1_loss(x, y, 1));
  BENCH("smooth_l1_loss", wkx_smooth_l1_loss(x, y, 1, 1.0));
  BENCH("huber_loss", wkx_huber_loss(x, y, 1, 1.0));
  BENCH("soft_margin_loss", wkx_soft_margin_loss(x, pm, 1));
  BENCH("kl_div", wkx_kl_div(x, q, 1, false));
  BENCH("binary_cross_entropy", wkx_binary_cross_entropy(p, q, NULL, 1));
  BENCH("poisson_nll_loss", wkx_poisson_nll_loss(x, pos, true, false, 1e-8, 1));
  BENCH("gaussian_nll_loss", wkx_gaussian_nll_loss(x, y, pos, false, 1e-6, 1));
  BENCH("margin_ranking_loss", wkx_margin_ranking_loss(x, y, pm, 0.1, 1));
  BENCH("hinge_embedding_loss", wkx_hinge_embedding_loss(x, pm, 1.0, 1));
  BENCH("cosine_embedding_loss", wkx_cosine_embedding_loss(x, y, pm1k, 0.0, 1));
  BENCH("triplet_margin_loss", wkx_triplet_margin_loss(x, y, q, 1.0, 2, 1e-6, false, 1));
  BENCH("multilabel_soft_margin_loss", wkx_multilabel_soft_margin_loss(x, q, NULL, 1));
  BENCH("multi_margin_loss", wkx_multi_margin_loss(x, cls, WK_VI(1), WK_VI(1), NULL, 1));
  BENCH("cosine_similarity", wkx_cosine_similarity(x, y, 1, 1e-8));
  BENCH("pairwise_distance", wkx_pairwise_distance(x, y, 2, 1e-6, false));
  BENCH("cdist_500x500x64", wkx_cdist(c1, c2, 2, NULL));
  /* nn: [8, 32, 64, 64] images, [16, 64, 1024] sequences, [4, 8, 16, 32, 32] volumes (1M elements each) */
  BENCH("interpolate_nearest_x2", wkx_interpolate(im, sz, 2, NULL, 0, "nearest", NULL, NULL, false));
  BENCH("interpolate_bilinear_x2", wkx_interpolate(im, sz, 2, NULL, 0, "bilinear", (const bool[]){false}, NULL, false));
  BENCH("interpolate_bicubic_x2", wkx_interpolate(im, sz, 2, NULL, 0, "bicubic", (const bool[]){false}, NULL, false));
  /* the backward ops ([8, 32, 128, 128] gradients to the [8, 32, 64, 64] input) and antialiased downsampling */
  wk_tensor *g128 = wk_rand((const int64_t[]){8, 32, 128, 128}, 4, (wk_options){.dtype = WK_F32});
  int64_t half[2] = {32, 32};
  BENCH("interpolate_bilinear_x2_backward", wkx_interpolate_backward(g128, img, 4, NULL, 0, "bilinear", (const bool[]){false}, NULL, false));
  BENCH("interpolate_bicubic_x2_backward", wkx_interpolate_backward(g128, img, 4, NULL, 0, "bicubic", (const bool[]){false}, NULL, false));
  BENCH("interpolate_bilinear_antialias_half", wkx_interpolate(im, half, 2, NULL, 0, "bilinear", (const bool[]){false}, NULL, true));
  BENCH("interpolate_bicubic_antialias_half", wkx_interpolate(im, half, 2, NULL, 0, "bicubic", (const bool[]){false}, NULL, true));
  BENCH("conv1d_64to64_k3", wkx_conv1d(sq, k1, NULL, &one, 1, &one, 1, &one, 1, 1));
  BENCH("conv3d_8to8_k3", wkx_conv3d(vo, k3, NULL, &one, 1, &one, 1, &one, 1, 1));
  BENCH("conv_transpose2d_32to16_s2", wkx_conv_transpose2d(im, kt, NULL, &two, 1, &one, 1, &one, 1, 1, &one, 1));
  BENCH("max_pool1d_k3s2", wkx_max_pool1d_with_indices(sq, &three, 1, &two, 1, &one, 1, &one, 1, false, NULL));
  BENCH("avg_pool1d_k3s2", wkx_avg_pool1d(sq, &three, 1, &two, 1, &one, 1, false, true));
  BENCH("avg_pool3d_k2", wkx_avg_pool3d(vo, k2, 3, NULL, 0, &zero, 1, false, true, NULL));
  BENCH("max_pool3d_k2", wkx_max_pool3d_with_indices(vo, k2, 3, NULL, 0, &zero, 1, &one, 1, false, NULL));
  BENCH("adaptive_avg_pool1d_100", wkx_adaptive_avg_pool1d(sq, &o100, 1));
  BENCH("adaptive_max_pool2d_7x7", wkx_adaptive_max_pool2d(im, o7, 2, NULL));
  BENCH("group_norm_8", wkx_group_norm(im, 8, NULL, NULL, 1e-5));
  BENCH("instance_norm", wkx_instance_norm(im, NULL, NULL, NULL, NULL, true, 0.1, 1e-5));
  BENCH("local_response_norm_5", wkx_local_response_norm(im, 5, 1e-4, 0.75, 1.0));
  BENCH("pixel_shuffle_2", wkx_pixel_shuffle(pso, 2));
  BENCH("channel_shuffle_4", wkx_channel_shuffle(im, 4));
  BENCH("alpha_dropout", wkx_alpha_dropout(x, 0.5, true));
  (void)T_;
  wk_tensor *all[] = {x, y, p, q, pos, cls, pm, pm1k, im, sq, vo, k1, k3, kt, pso, c1, c2};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) wk_release(all[i]);
  return 0;
}
