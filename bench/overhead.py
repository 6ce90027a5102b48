"""PyTorch side of bench/bench_overhead: per-call overhead of a 1-element add
from Python (median of 7 repetitions), printed in the same key/value form."""
import sys
import time

import torch

n = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
torch.set_num_threads(2)
a = torch.tensor([1.0])
b = torch.tensor([2.0])
for _ in range(n // 10):
    torch.add(a, b)
runs = []
for _ in range(7):
    t0 = time.perf_counter()
    for _ in range(n):
        torch.add(a, b)
    runs.append((time.perf_counter() - t0) / n * 1e9)
runs.sort()
print("torch_add_1elem_ns %.1f" % runs[3])
