#!/usr/bin/env python3
"""ResNet-18 inference from one ONNX file (exported by Wick, 3x224x224, dynamic
batch): `wick run --bench` against ONNX Runtime's CPU provider with 2 threads,
side by side in one run, alternating, medians of 3 rounds, at batch 1 and 32.
Prints the latency of each and the ratio ORT / Wick (higher = Wick faster).

`wick run` folds each BatchNormalization into the Conv before it (its default);
with --fold both ways are timed, alternating within each round: "wick nofold"
is `wick run --no-fold`, and fold/nofold is its speed-up.

Usage: bench/onnx_resnet.py BUILD_DIR [--quick] [--fold]
Needs onnxruntime and numpy (BUILD_DIR/venv, as scripts/install-deps --onnx-venv makes)."""
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
quick = "--quick" in sys.argv
import numpy as np
import onnxruntime as ort

d = tempfile.mkdtemp(prefix="wick-onnx-bench.")
subprocess.run([os.path.join(build, "tests/onnx_ref"), d, "--resnet18-224"], check=True)
path = os.path.join(d, "resnet18_224.onnx")
so = ort.SessionOptions()
so.intra_op_num_threads = 2
so.inter_op_num_threads = 1
# no spin-waiting: on a shared 2-vCPU machine spinning threads steal the time they wait for
so.add_session_config_entry("session.intra_op.allow_spinning", "0")
sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
rounds = 1 if quick else 3
both = "--fold" in sys.argv


def wick(batch, runs, extra):
    out = subprocess.run([os.path.join(build, "tools/wick"), "run", path, "--shape", "input=%dx3x224x224" % batch,
                          "--bench", str(runs)] + extra, check=True, capture_output=True, text=True).stdout
    return float(re.search(r"median ([0-9.]+) ms", out).group(1))


print("ResNet-18 inference, 3x224x224, f32, cpu, 2 threads (onnxruntime %s)" % ort.__version__)
if both:
    print("%6s %14s %14s %14s %8s %12s" % ("batch", "wick ms", "wick nofold", "ort ms", "ort/wick", "fold/nofold"))
else:
    print("%6s %14s %14s %8s" % ("batch", "wick ms", "ort ms", "ort/wick"))
for batch, runs in ((1, 5 if quick else 20), (32, 2 if quick else 5)):
    x = np.random.rand(batch, 3, 224, 224).astype(np.float32)
    w, n, o = [], [], []
    for r in range(rounds):
        # alternate the order each round, so a slow spell of the machine hits both
        if both and r % 2:
            n.append(wick(batch, runs, ["--no-fold"]))
        w.append(wick(batch, runs, []))
        if both and not r % 2:
            n.append(wick(batch, runs, ["--no-fold"]))
        sess.run(None, {"input": x})  # warm-up
        t = []
        for _ in range(runs):
            s = time.perf_counter()
            sess.run(None, {"input": x})
            t.append((time.perf_counter() - s) * 1e3)
        o.append(statistics.median(t))
    wm, om = statistics.median(w), statistics.median(o)
    if both:
        nm = statistics.median(n)
        print("%6d %14.2f %14.2f %14.2f %7.2fx %11.2fx" % (batch, wm, nm, om, om / wm, nm / wm))
    else:
        print("%6d %14.2f %14.2f %7.2fx" % (batch, wm, om, om / wm))
