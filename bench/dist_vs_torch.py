#!/usr/bin/python3
"""Wick's dist service against PyTorch's torch.distributed (gloo), 2 processes
on this machine, in the same run, alternating, several rounds: all_reduce
latency/bandwidth at 4 KB .. 64 MB (bench/bench_dist under mpirun against
bench/dist_torch.py, the same protocol) and the DDP step of the LeNet CNN
(batch 64 per rank). Prints a table of medians over the rounds with every
round's figure and the ratio PyTorch / Wick (higher = Wick faster). Each rank
gets one intra-op thread on both sides (2 ranks share the machine's cores).

Usage: bench/dist_vs_torch.py BUILD_DIR [--rounds 3] [--max-mb 64] [--torch-python PATH]
BUILD_DIR must hold bench/bench_dist (make -C BUILD_DIR bench/bench_dist)."""
import os
import re
import statistics
import subprocess
import sys


def opt(name, default):
    return type(default)(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


args = [a for i, a in enumerate(sys.argv[1:], 1) if not a.startswith("--") and not sys.argv[i - 1].startswith("--")]
build = os.path.abspath(args[0] if args else "build")
src = os.path.dirname(os.path.abspath(__file__))
rounds, max_mb = opt("--rounds", 3), opt("--max-mb", 64.0)
py = opt("--torch-python", "/work/venv-torch/bin/python")
prog = os.path.join(build, "bench", "bench_dist")
if not os.access(prog, os.X_OK):
    sys.exit("dist_vs_torch: %s is not built (make -C %s bench/bench_dist)" % (prog, build))
if subprocess.run([py, "-c", "import torch.distributed as d; assert d.is_gloo_available()"],
                  capture_output=True).returncode:
    sys.exit("dist_vs_torch: %s has no torch.distributed with gloo" % py)
env = dict(os.environ, WICK_NUM_THREADS="1", OMP_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1",
           OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
mpirun = ["mpirun", "-np", "2", "--oversubscribe", "--bind-to", "none"]


def run(cmd):
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1200)
    if out.returncode:
        sys.exit("dist_vs_torch: %s failed:\n%s%s" % (" ".join(cmd), out.stdout, out.stderr))
    return out.stdout


def rows(text):  # {KB: us}
    return {float(m.group(1)): float(m.group(2))
            for m in re.finditer(r"^\|\s*([0-9.]+) KB \|\s*([0-9.]+) \|", text, re.M)}


def step_ms(text):  # rank 0's median step
    m = re.search(r"rank 0/2: LeNet .*?step ([0-9.]+) ms", text)
    if not m:
        sys.exit("dist_vs_torch: no step time in:\n" + text)
    h = re.search(r"rank 0/2: LeNet .*?([0-9]+)% hidden behind backward", text)
    if h:
        hidden.append(int(h.group(1)))
    return float(m.group(1))


hidden = []  # Wick's share of all-reduce time hidden behind backward, per round


ar = {"wick": [], "torch": []}
ddp = {"wick": [], "torch": []}
for r in range(rounds):
    ar["wick"].append(rows(run(mpirun + [prog, "--max-mb", str(max_mb)])))
    ar["torch"].append(rows(run([py, os.path.join(src, "dist_torch.py"), "--max-mb", str(max_mb)])))
fmt = lambda v: "%.1f" % v if v < 1000 else "%.0f" % v
print("all_reduce (sum, float32), 2 ranks, median us of up to 200 calls (slowest rank), %d alternating rounds" % rounds)
print("| size | Wick dist.mpi us (rounds) | PyTorch gloo us (rounds) | Wick GB/s | torch / Wick |")
print("|---|---|---|---|---|")
for kb in sorted(ar["wick"][0]):
    w = [x[kb] for x in ar["wick"]]
    t = [x[kb] for x in ar["torch"]]
    mw, mt = statistics.median(w), statistics.median(t)
    size = "%g KB" % kb if kb < 1024 else "%g MB" % (kb / 1024)
    print("| %s | %s (%s) | %s (%s) | %.2f | %.2fx |" % (
        size, fmt(mw), " / ".join(fmt(v) for v in w), fmt(mt), " / ".join(fmt(v) for v in t),
        kb * 1024 / (mw * 1e-6) / 1e9, mt / mw))
sys.stdout.flush()
for r in range(rounds):
    ddp["wick"].append(step_ms(run(mpirun + [prog, "--ddp"])))
    ddp["torch"].append(step_ms(run([py, os.path.join(src, "dist_torch.py"), "--ddp"])))

mw, mt = statistics.median(ddp["wick"]), statistics.median(ddp["torch"])
print("\nDDP step, LeNet CNN, batch 64 per rank, 2 ranks, median ms of 20 steps (rank 0), %d rounds" % rounds)
print("| | Wick ms (rounds) | PyTorch ms (rounds) | torch / Wick |")
print("|---|---|---|---|")
print("| DDP step | %.1f (%s) | %.1f (%s) | %.2fx |" % (mw, " / ".join("%.1f" % v for v in ddp["wick"]), mt,
                                                       " / ".join("%.1f" % v for v in ddp["torch"]), mt / mw))
if hidden:
    print("Wick's all-reduce time hidden behind backward (DDP stats, rank 0): %s %%" % " / ".join(map(str, hidden)))
