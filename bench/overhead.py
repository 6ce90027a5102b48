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

ag = torch.tensor([1.0], requires_grad=True)
runs = []
for _ in range(7):
    t0 = time.perf_counter()
    for _ in range(n):
        torch.add(ag, b)
    runs.append((time.perf_counter() - t0) / n * 1e9)
runs.sort()
print("torch_add_1elem_autograd_ns %.1f" % runs[3])

runs = []
for _ in range(7):
    x = torch.tensor([1.0], requires_grad=True)
    y = x
    for i in range(1000):
        y = y * 1.0001 if i & 1 else y + 0.5
    loss = y.sum()
    t0 = time.perf_counter()
    loss.backward()
    runs.append((time.perf_counter() - t0) * 1e6)
runs.sort()
print("torch_chain1000_backward_us %.1f" % runs[3])


# The same chain, eager and replayed from a torch.fx trace (Wick's
# chain1000_eager/replay rows).
def chain(x):
    y = x
    for i in range(1000):
        y = y * 1.0001 if i & 1 else y + 0.5
    return y


import torch.fx  # noqa: E402

gm = torch.fx.symbolic_trace(chain)
reps = max(n // 1000, 1)
for name, fn in (("eager", chain), ("fx_replay", gm)):
    runs = []
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn(a)
        runs.append((time.perf_counter() - t0) / (reps * 1000) * 1e9)
    runs.sort()
    print("torch_chain1000_%s_ns_per_op %.1f" % (name, runs[3]))
