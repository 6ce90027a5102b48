"""PyTorch's whole epoch on the real Fashion-MNIST, the peer of
`examples/train --epochs 1 --scheduler none`: same normalisation, same model
(cnn or mlp), batch 64, SGD lr 0.05 momentum 0.9, shuffled DataLoader over
tensors in memory (num_workers 0). Prints the epoch's images/s, its test
accuracy and peak RSS. Usage: fmnist_epoch.py cnn|mlp [DIR]
Intra-op threads: 2, or WICK_NUM_THREADS when set (the Wick side's variable)."""
import gzip
import os
import resource
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

which = sys.argv[1] if len(sys.argv) > 1 else "cnn"
root = sys.argv[2] if len(sys.argv) > 2 else "/usr/share/datasets/fashion-mnist"
torch.set_num_threads(int(os.environ.get("WICK_NUM_THREADS", "2")))
torch.manual_seed(0)


def idx(name, offset):
    with gzip.open("%s/%s" % (root, name), "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)


def split(prefix):
    x = torch.from_numpy(idx(prefix + "-images-idx3-ubyte.gz", 16).copy()).float().div(255).view(-1, 1, 28, 28)
    y = torch.from_numpy(idx(prefix + "-labels-idx1-ubyte.gz", 8).astype(np.int64))
    return (x - 0.2860) / 0.3530, y


xtr, ytr = split("train")
xte, yte = split("t10k")
if which == "cnn":
    model = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))
else:
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(xtr, ytr), batch_size=64, shuffle=True)
t0 = time.perf_counter()
for x, y in loader:
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
dt = time.perf_counter() - t0
model.eval()
with torch.no_grad():
    acc = sum((model(xte[i:i + 500]).argmax(1) == yte[i:i + 500]).sum().item() for i in range(0, len(xte), 500))
print("torch_%s_epoch_img_s %.1f" % (which, len(xtr) / dt))
print("torch_%s_epoch_test_acc %.4f" % (which, acc / len(xte)))
print("torch_%s_epoch_peak_rss_mb %.1f" % (which, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0))
