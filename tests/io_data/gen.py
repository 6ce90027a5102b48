#!/usr/bin/python3
"""Fixtures for tests/check_io.c, written with the standard library + torch
(PyTorch 1.13.1), not the `safetensors` package: the point is that the
layout alone is the contract.

  gen.py              writes torch_dtypes.safetensors and torch_checkpoint.safetensors here
  gen.py verify FILE  reads FILE (written by Wick in check_io) into torch and checks
                      every value against the same formulas; exit 0 ok, 1 wrong, 77 no torch

The formulas in tensors() are repeated independently in check_io.c.
"""
import json
import os
import struct
import sys

try:
    import torch
except ImportError:  # pragma: no cover
    print("torch is not installed")
    sys.exit(77)

NAMES = {torch.float32: "F32", torch.float64: "F64", torch.float16: "F16", torch.bfloat16: "BF16",
         torch.int8: "I8", torch.uint8: "U8", torch.int16: "I16", torch.int32: "I32", torch.int64: "I64",
         torch.bool: "BOOL"}
DTYPES = {v: k for k, v in NAMES.items()}


def tensors():
    a = torch.arange
    return {
        "f32": (a(12, dtype=torch.float32) * 0.25 - 1).reshape(3, 4),
        "f64": (a(6, dtype=torch.float64) / 3).reshape(2, 3),
        "f16": ((a(8) - 4) * 0.5).to(torch.float16),
        "bf16": ((a(8) - 4) * 0.125).to(torch.bfloat16).reshape(2, 2, 2),
        "i8": a(-5, 5, dtype=torch.int8),
        "u8": a(250, 256, dtype=torch.int64).to(torch.uint8),
        "i16": (a(6, dtype=torch.int16) * 1000 - 3000).reshape(2, 3),
        "i32": a(4, dtype=torch.int32) * 100000 - 7,
        "i64": torch.tensor([-(2 ** 62), 0, 2 ** 62 + 5, 2 ** 40 + 1], dtype=torch.int64),
        "bool": a(5) % 2 == 0,
        "scalar": torch.tensor(3.5, dtype=torch.float32),
        "empty": torch.zeros(0, 3, dtype=torch.float32),
        # non-contiguous in torch (a transpose): saved row-major, as safetensors does
        "transposed": a(6, dtype=torch.float32).reshape(2, 3).t(),
    }


def raw(t):
    return bytes(t.contiguous().reshape(-1).view(torch.uint8).tolist())


def save(path, ts, metadata=None):
    """The safetensors layout: tensors ordered by element size (largest first)
    then name, __metadata__ first in the header, header padded to 8 bytes."""
    order = sorted(ts, key=lambda k: (-ts[k].element_size(), k))
    header, blobs, off = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for k in order:
        b = raw(ts[k])
        header[k] = {"dtype": NAMES[ts[k].dtype], "shape": list(ts[k].shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def load(path):
    """Reads a safetensors file with the standard library + torch."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {})
    body = data[8 + n:]
    out = {}
    for k, e in header.items():
        b, end = e["data_offsets"]
        dt = DTYPES[e["dtype"]]
        buf = bytearray(body[b:end])
        t = torch.frombuffer(buf, dtype=dt) if buf else torch.empty(0, dtype=dt)
        out[k] = t.reshape(e["shape"])
    return out, meta, n


def verify(path):
    got, meta, n = load(path)
    want = tensors()
    errors = []
    if n % 8:
        errors.append("header length %d is not a multiple of 8" % n)
    if sorted(got) != sorted(want):
        errors.append("keys %s != %s" % (sorted(got), sorted(want)))
    for k in want:
        if k in got and (got[k].dtype != want[k].dtype or got[k].shape != want[k].shape or
                         not torch.equal(got[k], want[k].contiguous())):
            errors.append("%s: got %s, want %s" % (k, got[k], want[k]))
    if meta.get("producer") != "wick":
        errors.append("metadata %s lacks producer=wick" % meta)
    for e in errors:
        print("verify:", e)
    return 1 if errors else 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "verify":
        sys.exit(verify(sys.argv[2]))
    here = os.path.dirname(os.path.abspath(__file__))
    save(os.path.join(here, "torch_dtypes.safetensors"), tensors(),
         {"format": "pt", "producer": "torch " + torch.__version__.split("+")[0]})
    # A Wick training checkpoint written from Python: parts as key prefixes,
    # scalars in __metadata__ (see abi/wick/io.h).
    ck = {"model.fc.weight": (torch.arange(6, dtype=torch.float32) - 2.5).reshape(2, 3),
          "model.fc.bias": torch.tensor([0.5, -0.5]),
          "optim.state.0.momentum_buffer": torch.full((2, 3), 0.125),
          "optim.step": torch.tensor(700, dtype=torch.int64)}
    save(os.path.join(here, "torch_checkpoint.safetensors"), ck,
         {"wick.checkpoint": "1", "wick.parts": "model,optim", "wick.epoch": "7", "wick.step": "700",
          "wick.rng.cpu": "1234,5678", "optim.lr": "0.1", "user.arch": "tiny"})
    # Round trip through our own reader, as a self-check.
    for f in ("torch_dtypes.safetensors", "torch_checkpoint.safetensors"):
        load(os.path.join(here, f))


if __name__ == "__main__":
    main()
