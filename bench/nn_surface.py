"""PyTorch side of bench/bench_nn_surface: the same calls on the same shapes (1M-element float32
inputs), 2 threads, medians of timed calls in ms, printed as nn_surface_<op>_ms. Run with the
venv's PyTorch 2.15 (/work/venv-torch/bin/python) or Debian's 1.13.1 (/usr/bin/python3)."""
import sys
import time

import os

import torch
import torch.nn.functional as F

ONLY = set(filter(None, os.environ.get("BENCH_ONLY", "").split(",")))  # rows to time (default all)
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 7
torch.set_num_threads(2)
torch.manual_seed(1)


def randt(*s, lo=-1.0, hi=1.0):
    return torch.rand(*s) * (hi - lo) + lo


x, y, p, q = randt(1000, 1000, lo=-2, hi=2), randt(1000, 1000, lo=-2, hi=2), randt(1000, 1000, lo=0.05, hi=0.95), randt(1000, 1000, lo=0, hi=1)
pos, cls = randt(1000, 1000, lo=0.5, hi=3), torch.randint(0, 1000, (1000,))
pm, pm1k = torch.randint(0, 2, (1000, 1000)).float() * 2 - 1, torch.randint(0, 2, (1000,)).float() * 2 - 1
im, sq, vo = randt(8, 32, 64, 64), randt(16, 64, 1024), randt(4, 8, 16, 32, 32)
k1, k3, kt = randt(64, 64, 3, lo=-0.1, hi=0.1), randt(8, 8, 3, 3, 3, lo=-0.1, hi=0.1), randt(32, 16, 3, 3, lo=-0.1, hi=0.1)
g128 = torch.rand(8, 32, 128, 128)
pso, c1, c2 = randt(8, 128, 32, 32), randt(500, 64), randt(500, 64)
OPS = [
    ("l1_loss", lambda: F.l1_loss(x, y)), ("smooth_l1_loss", lambda: F.smooth_l1_loss(x, y)),
    ("huber_loss", lambda: F.huber_loss(x, y)), ("soft_margin_loss", lambda: F.soft_margin_loss(x, pm)),
    ("kl_div", lambda: F.kl_div(x, q, reduction="mean")), ("binary_cross_entropy", lambda: F.binary_cross_entropy(p, q)),
    ("poisson_nll_loss", lambda: F.poisson_nll_loss(x, pos)), ("gaussian_nll_loss", lambda: F.gaussian_nll_loss(x, y, pos)),
    ("margin_ranking_loss", lambda: F.margin_ranking_loss(x, y, pm, 0.1)),
    ("hinge_embedding_loss", lambda: F.hinge_embedding_loss(x, pm)),
    ("cosine_embedding_loss", lambda: F.cosine_embedding_loss(x, y, pm1k)),
    ("triplet_margin_loss", lambda: F.triplet_margin_loss(x, y, q)),
    ("multilabel_soft_margin_loss", lambda: F.multilabel_soft_margin_loss(x, q)),
    ("multi_margin_loss", lambda: F.multi_margin_loss(x, cls)),
    ("cosine_similarity", lambda: F.cosine_similarity(x, y, 1)), ("pairwise_distance", lambda: F.pairwise_distance(x, y)),
    ("cdist_500x500x64", lambda: torch.cdist(c1, c2)),
    ("interpolate_nearest_x2", lambda: F.interpolate(im, size=[128, 128], mode="nearest")),
    ("interpolate_bilinear_x2", lambda: F.interpolate(im, size=[128, 128], mode="bilinear", align_corners=False)),
    ("interpolate_bicubic_x2", lambda: F.interpolate(im, size=[128, 128], mode="bicubic", align_corners=False)),
    ("interpolate_bilinear_x2_backward",
     lambda: torch.ops.aten.upsample_bilinear2d_backward(g128, [128, 128], [8, 32, 64, 64], False)),
    ("interpolate_bicubic_x2_backward",
     lambda: torch.ops.aten.upsample_bicubic2d_backward(g128, [128, 128], [8, 32, 64, 64], False)),
    ("interpolate_bilinear_antialias_half",
     lambda: F.interpolate(im, size=[32, 32], mode="bilinear", align_corners=False, antialias=True)),
    ("interpolate_bicubic_antialias_half",
     lambda: F.interpolate(im, size=[32, 32], mode="bicubic", align_corners=False, antialias=True)),
    ("conv1d_64to64_k3", lambda: F.conv1d(sq, k1, None, 1, 1)), ("conv3d_8to8_k3", lambda: F.conv3d(vo, k3, None, 1, 1)),
    ("conv_transpose2d_32to16_s2", lambda: F.conv_transpose2d(im, kt, None, 2, 1, 1)),
    ("max_pool1d_k3s2", lambda: F.max_pool1d(sq, 3, 2, 1, return_indices=True)),
    ("avg_pool1d_k3s2", lambda: F.avg_pool1d(sq, 3, 2, 1)), ("avg_pool3d_k2", lambda: F.avg_pool3d(vo, 2)),
    ("max_pool3d_k2", lambda: F.max_pool3d(vo, 2, return_indices=True)),
    ("adaptive_avg_pool1d_100", lambda: F.adaptive_avg_pool1d(sq, 100)),
    ("adaptive_max_pool2d_7x7", lambda: F.adaptive_max_pool2d(im, 7, return_indices=True)),
    ("group_norm_8", lambda: F.group_norm(im, 8)), ("instance_norm", lambda: F.instance_norm(im)),
    ("local_response_norm_5", lambda: F.local_response_norm(im, 5)), ("pixel_shuffle_2", lambda: F.pixel_shuffle(pso, 2)),
    ("channel_shuffle_4", lambda: torch.channel_shuffle(im, 4)), ("alpha_dropout", lambda: F.alpha_dropout(x, 0.5, True)),
]
with torch.no_grad():
    for name, fn in OPS:
        if ONLY and name not in ONLY:
            continue
        t = []
        for r in range(-1, reps):
            t0 = time.perf_counter()
            fn()
            if r >= 0:
                t.append(time.perf_counter() - t0)
        t.sort()
        print("nn_surface_%s_ms %.3f" % (name, 1e3 * t[len(t) // 2]), flush=True)
