#!/usr/bin/python3
"""Writes models exported by PyTorch itself (torch.onnx.export with a dynamic
batch axis) for tests/onnx_torch.sh (Debian's torch 1.13.1) and
tests/onnx_torch2.sh (PyTorch 2.x from PyPI): a small CNN (conv, batch norm,
relu, max/avg pools, dropout, flatten, linear, softmax) and torchvision's
ResNet-18 (tests/nn_ref/torch_resnet.py), in eval mode with batch norm
statistics from a few training batches; inputs at batch 1 and 8 and
PyTorch's outputs as .npy files next to them.
    onnx_torch.py DIR [legacy|dynamo [OPSET]]
legacy (the default) is the TorchScript-based exporter (dynamo=False on
PyTorch 2); dynamo is PyTorch 2's torch.export-based one (needs onnxscript),
which also writes a small decoder with ConvTranspose2d layers (torch_deconv);
the legacy exporter on PyTorch 2 writes it too."""
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


class Deconv(nn.Module):
    """Conv, batch norm, ConvTranspose2d (stride 2, output_padding, groups; stride 3 with dilation)."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.dec = nn.Sequential(nn.ConvTranspose2d(8, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
                                 nn.ReLU(), nn.ConvTranspose2d(6, 4, 2, stride=3, dilation=2), nn.Sigmoid())

    def forward(self, x):
        return self.dec(self.enc(x))


def export(m, x, path, exporter, opset):
    if exporter == "dynamo":
        batch = torch.export.Dim("batch", min=1, max=1024)
        torch.onnx.export(m, (x,), path, input_names=["input"], output_names=["output"],
                          dynamic_shapes=({0: batch},), dynamo=True, **({"opset_version": opset} if opset else {}))
        return
    kw = {"dynamo": False} if int(torch.__version__.split(".")[0]) >= 2 else {}
    if opset:
        kw["opset_version"] = opset
    torch.onnx.export(m, x, path, input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}}, **kw)


def main(d, exporter="legacy", opset=None):
    torch.manual_seed(0)
    torch2 = int(torch.__version__.split(".")[0]) >= 2
    opset = int(opset) if opset else (None if torch2 else 13)  # None: the exporter's default
    models = [("torch_cnn", SmallCNN(), 28), ("torch_resnet18", ResNet(BasicBlock, [2, 2, 2, 2]), 64)]
    if torch2:
        models.append(("torch_deconv", Deconv(), 17))
    for name, m, size in models:
        m.train()
        with torch.no_grad():
            for _ in range(2):
                m(torch.randn(4, 3, size, size))
        m.eval()
        x = torch.randn(2, 3, size, size)
        path = os.path.join(d, name + ".onnx")
        export(m, x, path, exporter, opset)
        for b in (1, 8):
            xb = torch.randn(b, 3, size, size)
            with torch.no_grad():
                y = m(xb)
            np.save(os.path.join(d, "%s_b%d_in.npy" % (name, b)), xb.numpy())
            np.save(os.path.join(d, "%s_b%d_out.npy" % (name, b)), y.numpy())
    try:
        import onnx
        got = onnx.load(os.path.join(d, "torch_cnn.onnx"), load_external_data=False).opset_import
        opset = ",".join(str(o.version) for o in got if o.domain in ("", "ai.onnx"))
    except Exception:  # no onnx package (Debian's python3 has only its C++ headers' namespace)
        pass
    print("torch %s: exported %s (%s exporter, opset %s, dynamic batch)" %
          (torch.__version__, " ".join(n for n, _, _ in models), exporter, opset))


if __name__ == "__main__":
    main(*sys.argv[1:])
