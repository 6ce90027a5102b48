"""ResNet-18 interop between PyTorch and Wick through safetensors files.

  resnet_interop.py make DIR    PyTorch writes DIR/weights.safetensors (a
                                torchvision-architecture resnet18, 10 classes,
                                with trained-looking BatchNorm statistics) and
                                DIR/io.safetensors (an input and its eval output)
  resnet_interop.py check DIR   PyTorch loads DIR/wick_weights.safetensors (saved
                                by Wick) and must reproduce DIR/wick_io.safetensors

Uses only the standard library and torch (no safetensors package)."""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.append(os.path.join(here, "..", "nn_ref"))  # after io_data: both hold a gen.py
from gen import load, save  # noqa: E402  (exits 77 without torch)
import torch  # noqa: E402
from torch_resnet import BasicBlock, ResNet  # noqa: E402


def make(d):
    torch.manual_seed(0)
    model = ResNet(BasicBlock, [2, 2, 2, 2], 10)
    model.train()
    with torch.no_grad():  # give BatchNorm running statistics something to hold
        for _ in range(3):
            model(torch.randn(8, 3, 32, 32) * 2 + 0.5)
    model.eval()
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        y = model(x)
    save(os.path.join(d, "weights.safetensors"), dict(model.state_dict()), {"producer": "torch"})
    save(os.path.join(d, "io.safetensors"), {"input": x, "output": y}, {"producer": "torch"})


def check(d):
    weights = load(os.path.join(d, "wick_weights.safetensors"))[0]
    io = load(os.path.join(d, "wick_io.safetensors"))[0]
    model = ResNet(BasicBlock, [2, 2, 2, 2], 10)
    model.load_state_dict(weights, strict=True)
    model.eval()
    with torch.no_grad():
        y = model(io["input"])
    err = (y - io["output"]).abs().max().item() / max(io["output"].abs().max().item(), 1e-12)
    print("pytorch reproduces wick's output: max relative error %.2e" % err)
    return 0 if err < 1e-4 else 1


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("make", "check"):
        print(__doc__)
        sys.exit(2)
    sys.exit(make(sys.argv[2]) if sys.argv[1] == "make" else check(sys.argv[2]))
