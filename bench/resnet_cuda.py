"""PyTorch peer of bench/bench_resnet_cuda: the same ResNet-18 training step
(3x32x32, 10 classes, cross-entropy, SGD momentum) on a GPU, timed to the
device's completion, median after warm-up, printed in the same form.

    python3 bench/resnet_cuda.py [--device cuda] [--batch 256] [--steps 10] [--benchmark]

Defaults match Wick's: TF32 off for matmuls, on for convolutions; cudnn.benchmark
only with --benchmark (Wick: WICK_CUDNN_BENCHMARK=1)."""
import argparse
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "nn_ref"))
from torch_resnet import BasicBlock, ResNet  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--device", default="cuda")
ap.add_argument("--batch", type=int, default=256)
ap.add_argument("--steps", type=int, default=10)
ap.add_argument("--benchmark", action="store_true")
a = ap.parse_args()
if not torch.cuda.is_available() and a.device.startswith("cuda"):
    print("SKIP: torch sees no CUDA device")
    sys.exit(77)
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = True
torch.backends.cudnn.benchmark = a.benchmark
dev = torch.device(a.device)
torch.manual_seed(0)
model = ResNet(BasicBlock, [2, 2, 2, 2], 10).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
x = torch.randn(a.batch, 3, 32, 32, device=dev)
y = torch.randint(0, 10, (a.batch,), device=dev)
times = []
for s in range(a.steps + 3):
    torch.cuda.synchronize(dev)
    t0 = time.perf_counter()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)  # after the step, as PyTorch's tutorial loop: no gradients alive during forward
    torch.cuda.synchronize(dev)
    if s >= 3:
        times.append(time.perf_counter() - t0)
times.sort()
med = times[len(times) // 2]
print("device %s\nbatch %d\nstep_ms %.3f\nimages_per_s %.1f" % (a.device, a.batch, med * 1e3, a.batch / med))
