"""PyTorch side of bench/bench_linalg_surface: the same ops on the same 1M-element
float32 shapes, medians of timed calls in ms, printed as torch_linalg_<op>_ms.
Run with PyTorch 2.15 (/work/venv-torch/bin/python) by bench/linalg_surface.sh."""
import sys
import time

import os

import torch

ONLY = set(filter(None, os.environ.get("BENCH_ONLY", "").split(",")))  # rows to time (default all)
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 11
lreps = min(reps, 3)
torch.set_num_threads(2)
torch.manual_seed(1)


def u(shape, lo, hi, dtype=torch.float32):
    return (torch.rand(*shape, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


x, y = u((1000, 1000), -2, 2), u((1000, 1000), -2, 2)
smallf = u((1000, 1000), 0, 1000, torch.int64).to(torch.float32)
flat_small = smallf.reshape(-1)
idx = u((1000, 1000), 0, 1000, torch.int64)
perm = torch.randperm(1000)
dup = torch.randint(0, 1000, (1000,))
mask, src = x > 0, y.reshape(-1)
ba, bb, bs = u((100, 100, 100), -1, 1), u((100, 100, 100), -1, 1), u((100, 100, 100), -1, 1)
v1, v2 = u((1000,), -1, 1), u((1000,), -1, 1)
spd = x @ x.T + 1000 * torch.eye(1000)
col = u((1000, 1), -1, 1)
OPS = [
    ("mode", lambda: torch.mode(smallf, -1)),
    ("unique", lambda: torch.unique(flat_small, True, True, True)),
    ("unique_consecutive", lambda: torch.unique_consecutive(flat_small, True, True)),
    ("scatter_reduce_amax", lambda: x.scatter_reduce(1, idx, y, "amax")),
    ("scatter_reduce_sum", lambda: x.scatter_reduce(1, idx, y, "sum")),
    ("index_put", lambda: x.index_put((perm,), y)),
    ("index_put_accumulate", lambda: x.index_put((perm,), y, True)),
    ("index_put_accumulate_duplicates", lambda: x.index_put((dup,), y, True)),
    ("masked_scatter", lambda: x.masked_scatter(mask, src)),
    ("einsum_ij_jk", lambda: torch.einsum("ij,jk->ik", x, y)),
    ("einsum_ij_ij_i", lambda: torch.einsum("ij,ij->i", x, y)),
    ("baddbmm", lambda: torch.baddbmm(bs, ba, bb, beta=0.5, alpha=2.0)),
    ("addbmm", lambda: torch.addbmm(x[:100, :100], ba, bb, beta=0.5, alpha=2.0)),
    ("tensordot", lambda: torch.tensordot(x, y, ([1], [0]))),
    ("kron", lambda: torch.kron(v1, v2)),
    ("vector_norm", lambda: torch.linalg.vector_norm(x, 2, -1)),
    ("matrix_norm_fro", lambda: torch.linalg.matrix_norm(x, "fro")),
    ("cholesky", lambda: torch.linalg.cholesky(spd)),
    ("qr", lambda: torch.linalg.qr(x)),
    ("eigh", lambda: torch.linalg.eigh(spd)),
    ("svd", lambda: torch.linalg.svd(x, full_matrices=False)),
    ("solve", lambda: torch.linalg.solve(spd, col)),
    ("slogdet", lambda: torch.linalg.slogdet(x)),
    ("inv", lambda: torch.linalg.inv(spd)),
    ("det", lambda: torch.linalg.det(x)),
    ("pinv", lambda: torch.linalg.pinv(x)),
    ("lstsq", lambda: torch.linalg.lstsq(x, col)),
]
LINALG = {"cholesky", "qr", "eigh", "svd", "solve", "slogdet", "inv", "det", "pinv", "lstsq", "matrix_norm_fro"}
for name, fn in OPS:
    if ONLY and name not in ONLY:
        continue
    n = lreps if name in LINALG else reps
    ts = []
    for r in range(n + 1):
        t0 = time.perf_counter()
        fn()
        if r:
            ts.append(time.perf_counter() - t0)
    ts.sort()
    print("torch_linalg_%s_ms %.3f" % (name, 1e3 * ts[len(ts) // 2]))
    sys.stdout.flush()
