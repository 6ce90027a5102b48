"""PyTorch side of bench/bench_ops: conv2d 64->64 3x3 on [64, 64, 32, 32]
forward and forward+backward, and torch.mm N x N for N = 256, 1024, 2048 as
GFLOP/s; medians, printed in the same key/value form (prefixed torch_)."""
import resource
import sys
import time

import torch
import torch.nn.functional as F

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
torch.set_num_threads(2)
torch.manual_seed(0)


def med(ts):
    ts.sort()
    return ts[len(ts) // 2]


x = torch.randn(64, 64, 32, 32, requires_grad=True)
w = (torch.randn(64, 64, 3, 3) * 0.05).requires_grad_()
b = torch.zeros(64)
ts = []
for r in range(reps + 1):
    with torch.no_grad():
        t0 = time.perf_counter()
        F.conv2d(x, w, b, 1, 1)
        if r:
            ts.append(time.perf_counter() - t0)
print("torch_conv2d_64x64_fwd_ms %.2f" % (1e3 * med(ts)))
ts = []
for r in range(reps + 1):
    t0 = time.perf_counter()
    F.conv2d(x, w, b, 1, 1).sum().backward()
    if r:
        ts.append(time.perf_counter() - t0)
    x.grad = None
    w.grad = None
print("torch_conv2d_64x64_fwdbwd_ms %.2f" % (1e3 * med(ts)))
for n in (256, 1024, 2048):
    nrep = min(reps * 20, 1000) if n <= 256 else reps
    a = torch.randn(n, n)
    c = torch.randn(n, n)
    ts = []
    for r in range(nrep + 1):
        t0 = time.perf_counter()
        torch.mm(a, c)
        if r:
            ts.append(time.perf_counter() - t0)
    print("torch_sgemm_%d_gflops %.1f" % (n, 2.0 * n ** 3 / med(ts) / 1e9))
print("torch_ops_peak_rss_mb %.1f" % (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0))
