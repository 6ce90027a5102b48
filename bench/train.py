"""PyTorch side of bench/bench_train: the same CNN / MLP training step on
Fashion-MNIST-shaped batches, median images/s and peak RSS, printed in the
same key/value form (prefixed torch_). Usage: train.py cnn|mlp BATCH [STEPS]"""
import resource
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

which = sys.argv[1] if len(sys.argv) > 1 else "cnn"
batch = int(sys.argv[2]) if len(sys.argv) > 2 else 64
steps = int(sys.argv[3]) if len(sys.argv) > 3 else 50
torch.set_num_threads(2)
torch.manual_seed(0)
if which == "cnn":
    model = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))
else:
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
x = torch.randn(batch, 1, 28, 28)
y = torch.randint(0, 10, (batch,))
times = []
for s in range(steps + 5):
    t0 = time.perf_counter()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)  # after the step, as PyTorch's tutorial loop: no gradients alive during forward
    if s >= 5:
        times.append(time.perf_counter() - t0)
times.sort()
print("torch_%s_train_b%d_img_s %.1f" % (which, batch, batch / times[len(times) // 2]))
print("torch_%s_train_b%d_peak_rss_mb %.1f" % (which, batch, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0))
