#!/usr/bin/python3
"""Writes models exported by PyTorch itself (Debian's torch 1.13.1,
torch.onnx.export with a dynamic batch axis) for tests/onnx_torch.sh: a small
CNN (conv, batch norm, relu, max/avg pools, dropout, flatten, linear, softmax)
and torchvision's ResNet-18 (tests/nn_ref/torch_resnet.py), in eval mode with
batch norm statistics from a few training batches; inputs at batch 1 and 8
and PyTorch's outputs as .npy files next to them."""
import os
import sys

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "nn_ref"))
from torch_resnet import BasicBlock, ResNet  # noqa: E402


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                                      nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, stride=2), nn.ReLU(),
                                      nn.AvgPool2d(2), nn.Dropout(0.3))
        self.fc = nn.Linear(32 * 3 * 3, 10)

    def forward(self, x):
        return torch.softmax(self.fc(torch.flatten(self.features(x), 1)), dim=1)


def main(d):
    torch.manual_seed(0)
    for name, m, size in (("torch_cnn", SmallCNN(), 28), ("torch_resnet18", ResNet(BasicBlock, [2, 2, 2, 2]), 64)):
        m.train()
        with torch.no_grad():
            for _ in range(2):
                m(torch.randn(4, 3, size, size))
        m.eval()
        x = torch.randn(2, 3, size, size)
        path = os.path.join(d, name + ".onnx")
        torch.onnx.export(m, x, path, input_names=["input"], output_names=["output"],
                          dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}}, opset_version=13)
        for b in (1, 8):
            xb = torch.randn(b, 3, size, size)
            with torch.no_grad():
                y = m(xb)
            np.save(os.path.join(d, "%s_b%d_in.npy" % (name, b)), xb.numpy())
            np.save(os.path.join(d, "%s_b%d_out.npy" % (name, b)), y.numpy())
    print("torch %s: exported torch_cnn and torch_resnet18 (opset 13, dynamic batch)" % torch.__version__)


if __name__ == "__main__":
    main(sys.argv[1])
