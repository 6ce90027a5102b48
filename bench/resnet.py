"""PyTorch side of bench/bench_resnet: the same ResNet-18 training step and
inference, median images/s, printed in the same key/value form.
Usage: resnet.py [--channels-last] BATCH [STEPS] [amp]; amp: training only, the
forward and the loss under torch.autocast("cpu", dtype=torch.bfloat16);
--channels-last: model.to(memory_format=torch.channels_last) and a channels_last
input, the keys get "_cl" (bench_resnet's flag)."""
import os
import resource
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "nn_ref"))
from torch_resnet import BasicBlock, ResNet  # noqa: E402

chlast = "--channels-last" in sys.argv
if chlast:
    sys.argv.remove("--channels-last")
cl = "_cl" if chlast else ""
batch = int(sys.argv[1]) if len(sys.argv) > 1 else 32
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
amp = len(sys.argv) > 3 and sys.argv[3] == "amp"
torch.set_num_threads(2)
torch.manual_seed(0)
model = ResNet(BasicBlock, [2, 2, 2, 2], 10)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
x = torch.randn(batch, 3, 32, 32)
y = torch.randint(0, 10, (batch,))
if chlast:
    model = model.to(memory_format=torch.channels_last)
    x = x.contiguous(memory_format=torch.channels_last)
times = []
for s in range(steps + 2):
    t0 = time.perf_counter()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
        loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)  # after the step, as PyTorch's tutorial loop: no gradients alive during forward
    if s >= 2:
        times.append(time.perf_counter() - t0)
times.sort()
tag = "_amp" if amp else ""
print("torch_resnet18_train%s%s_b%d_img_s %.1f" % (tag, cl, batch, batch / times[len(times) // 2]))
print("torch_resnet18_train%s%s_b%d_peak_rss_mb %.1f" % (tag, cl, batch, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0))
if amp:
    sys.exit(0)
model.eval()
times = []
with torch.no_grad():  # one warm-up pass, then the median of `steps`, as bench_resnet
    for s in range(steps + 1):
        t0 = time.perf_counter()
        model(x)
        if s >= 1:
            times.append(time.perf_counter() - t0)
times.sort()
print("torch_resnet18_infer%s_b%d_img_s %.1f" % (cl, batch, batch / times[len(times) // 2]))
print("torch_resnet18%s_b%d_peak_rss_mb %.1f" % (cl, batch, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0))
