#!/usr/bin/env python3
"""Generates tests/torch_ref/ddp_ref.h: PyTorch's DistributedDataParallel
(torch.distributed, gloo backend, 2 processes on this machine) trained on the
models, initial weights and data shards that tests/dist_ddp_torch.c gives
Wick's DDP, for tests/dist.sh. Needs torch.distributed with gloo (PyPI's
torch; Debian's 1.13.1 has no distributed support):

    /work/venv-torch/bin/python tests/torch_ref/gen_ddp_ref.py > tests/torch_ref/ddp_ref.h

Every case: 2 ranks, 20 SGD steps (lr 0.1, momentum 0.9), cross entropy,
float32. The global batch of a step (24 rows, the same xorshift stream as
tests/dist_ddp.c) is split in rank order: rank r trains rows [12 r, 12 r + 12).
Rank r's model starts from its own weights, init_params() below (xorshift64
from a seed of the rank and the parameter's index; both sides compute them):
DDP's broadcast from rank 0 makes them equal. Rank r's BatchNorm running_mean
starts at r and running_var at 1 + r (broadcast too).
Cases:
  mlp      Linear(24,32) ReLU Linear(32,32) ReLU Linear(32,5), 25 MB buckets
  buckets  the same with bucket_cap_mb 0.002 (one bucket per parameter or two)
  no_sync  the same, 2 micro-batches of 6 rows per step, the first under no_sync()
  unused   Two: a(x) [+ b(x) on rank 0 only], find_unused_parameters=True
  bn       Linear(24,32) BatchNorm1d(32) ReLU Linear(32,5): buffers broadcast
           from rank 0 before every forward
Recorded: every rank's loss at every step (the sum of its micro-batches'
losses, each divided by the number of micro-batches), the parameters after the
last step (rank 0's; the ranks agree bit for bit, checked here), and each
rank's BatchNorm running statistics after the last step. The same DDP training
is also run in float64: its parameters are the (nearly) exact answer, and
PyTorch's float32 distance to them measures how far two correct float32
implementations may drift apart in 20 steps (the test's allowance). Also printed, as a
field: the largest relative parameter difference between PyTorch's DDP and
PyTorch trained in 1 process on the global batch, for scale (meaningless for
unused and bn, which have no 1-process equivalent)."""
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

IN, HID, OUT, GLOBAL_BATCH, STEPS, WORLD = 24, 32, 5, 24, 20, 2
M64 = (1 << 64) - 1
CASES = [  # name, model, bucket_cap_mb, accum, find_unused
    ("mlp", "mlp", 25.0, 1, False),
    ("buckets", "mlp", 0.002, 1, False),
    ("no_sync", "mlp", 25.0, 2, False),
    ("unused", "two", 25.0, 1, True),
    ("bn", "bn", 25.0, 1, False),
]


def batch(step):
    """tests/dist_ddp.c's batch(): xorshift64 from a per-step seed."""
    s = (0x9E3779B97F4A7C15 * (step + 1)) & M64
    xs = []
    for _ in range(GLOBAL_BATCH * IN):
        s ^= (s << 13) & M64
        s ^= s >> 7
        s ^= (s << 17) & M64
        xs.append((s >> 11) / 9007199254740992.0 * 2 - 1)
    x = torch.tensor(xs, dtype=torch.float64).to(torch.float32).reshape(GLOBAL_BATCH, IN)
    y = torch.tensor([(i * 7 + step) % OUT for i in range(GLOBAL_BATCH)], dtype=torch.int64)
    return x, y


class Two(nn.Module):
    def __init__(self, use_b):
        super().__init__()
        self.use_b = use_b
        self.a = nn.Linear(IN, OUT)
        self.b = nn.Linear(IN, OUT)

    def forward(self, x):
        h = self.a(x)
        return h + self.b(x) if self.use_b else h


def init_params(model, rank):
    """Parameter i of rank r (named_parameters order): uniform in [-a, a)
    with a = 1/sqrt(columns) for matrices and 0.5 for vectors, from xorshift64
    seeded with 0xD1B54A32D192ED03 (r + 1) + 0x632BE59BD9B4E019 (i + 1)."""
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            s = (0xD1B54A32D192ED03 * (rank + 1) + 0x632BE59BD9B4E019 * (i + 1)) & M64
            a = 1.0 / p.shape[1] ** 0.5 if p.dim() == 2 else 0.5
            vals = []
            for _ in range(p.numel()):
                s ^= (s << 13) & M64
                s ^= s >> 7
                s ^= (s << 17) & M64
                vals.append(((s >> 11) / 9007199254740992.0 * 2 - 1) * a)
            p.copy_(torch.tensor(vals, dtype=torch.float64).to(torch.float32).reshape(p.shape))


def make(kind, rank, dtype=torch.float32):
    if kind == "mlp":
        m = nn.Sequential(nn.Linear(IN, HID), nn.ReLU(), nn.Linear(HID, HID), nn.ReLU(), nn.Linear(HID, OUT))
    elif kind == "two":
        m = Two(rank == 0)
    else:
        m = nn.Sequential(nn.Linear(IN, HID), nn.BatchNorm1d(HID), nn.ReLU(), nn.Linear(HID, OUT))
        m[1].running_mean.fill_(float(rank))
        m[1].running_var.fill_(1.0 + rank)
    init_params(m, rank)
    return m.to(dtype)


def flat(tensors):
    return [v for t in tensors for v in t.detach().reshape(-1).tolist()]


def step_rows(model, opt, x, y, lo, n, accum, ddp=None):
    x = x.to(next(model.parameters()).dtype)
    opt.zero_grad(set_to_none=True)
    per, total = n // accum, 0.0
    for k in range(accum):
        xb, yb = x[lo + k * per:lo + (k + 1) * per], y[lo + k * per:lo + (k + 1) * per]
        if ddp is not None and k < accum - 1:
            with ddp.no_sync():
                loss = F.cross_entropy(ddp(xb), yb) / accum
                loss.backward()
        else:
            loss = F.cross_entropy((ddp or model)(xb), yb) / accum
            loss.backward()
        total += loss.item()
    opt.step()
    return total


def worker(rank, port, q):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank, world_size=WORLD)
    out = {}
    def train(kind, cap, accum, unused, dtype):
        model = make(kind, rank, dtype)
        ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=cap, find_unused_parameters=unused)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        per = GLOBAL_BATCH // WORLD
        losses = []
        for s in range(STEPS):
            x, y = batch(s)
            losses.append(step_rows(model, opt, x, y, rank * per, per, accum, ddp))
        return model, losses

    for name, kind, cap, accum, unused in CASES:
        model, losses = train(kind, cap, accum, unused, torch.float32)
        m64, _ = train(kind, cap, accum, unused, torch.float64)
        f32_vs_f64 = max(((p.double() - r).norm() / r.norm()).item() for p, r in zip(model.parameters(), m64.parameters()))
        # the 1-process run on the global batch, from rank 0's weights (for scale only)
        ref = make(kind, 0)
        ropt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
        for s in range(STEPS):
            x, y = batch(s)
            step_rows(ref, ropt, x, y, 0, GLOBAL_BATCH, accum)
        worst = max(((p - r).norm() / r.norm()).item() for p, r in zip(model.parameters(), ref.parameters()))
        names = [n for n, _ in model.named_parameters()]
        bufs = flat([b for n, b in model.named_buffers() if "running" in n])
        out[name] = dict(final=flat(model.parameters()), final64=flat(m64.parameters()), f32_vs_f64=f32_vs_f64, loss=losses, names=names,
                         numels=[p.numel() for p in model.parameters()], bufs=bufs, vs1=worst)
        dist.barrier()
    q.put((rank, out))
    dist.destroy_process_group()


def floats(vals, per_line=8, fmt="%.9gf"):
    lines = []
    vals = [0.0 if v == 0 else v for v in vals]  # no "-0f"
    for i in range(0, len(vals), per_line):
        lines.append("  " + ", ".join(fmt % v for v in vals[i:i + per_line]) + ",")
    return "\n".join(lines)


def main():
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    port = 29700 + os.getpid() % 200
    procs = [ctx.Process(target=worker, args=(r, port, q)) for r in range(WORLD)]
    for p in procs:
        p.start()
    res = dict(q.get(timeout=600) for _ in procs)
    for p in procs:
        p.join()
        if p.exitcode:
            sys.exit("gen_ddp_ref: a rank failed (exit %d)" % p.exitcode)
    o = sys.stdout
    o.write("/* Generated by tests/torch_ref/gen_ddp_ref.py with PyTorch %s (torch.distributed, gloo, %d processes):\n"
            " * do not edit. */\n" % (torch.__version__, WORLD))
    o.write("#ifndef WICK_DDP_REF_H\n#define WICK_DDP_REF_H\n#include <stdbool.h>\n#include <stdint.h>\n\n")
    o.write("#define DREF_WORLD %d\n#define DREF_STEPS %d\n#define DREF_MAXP 8\n\n" % (WORLD, STEPS))
    o.write("typedef struct dref_case {\n"
            "  const char *name, *model; /* model: \"mlp\", \"two\", \"bn\" */\n"
            "  double bucket_mb;\n  int accum;\n  bool find_unused;\n"
            "  int nparams;\n  const char *names[DREF_MAXP];\n  int64_t numel[DREF_MAXP];\n"
            "  const float *final;            /* the parameters after DREF_STEPS steps (every rank) */\n"
            "  const double *final64;         /* the same training in float64 (the exact answer, nearly) */\n"
            "  const float *loss;             /* [step][rank] */\n"
            "  int nbuf;                      /* floats in the running statistics (0: none) */\n"
            "  const float *bufs[DREF_WORLD]; /* rank r's running_mean then running_var after the steps */\n"
            "  double torch_vs_1process;      /* PyTorch DDP vs PyTorch 1 process: max relative difference */\n"
            "  double torch_f32_vs_f64;       /* PyTorch's float32 parameters vs its float64 ones: the same */\n"
            "} dref_case;\n\n")
    for name, kind, cap, accum, unused in CASES:
        r0, r1 = res[0][name], res[1][name]
        if r0["final"] != r1["final"]:
            sys.exit("gen_ddp_ref: %s: the ranks' parameters differ" % name)
        o.write("static const float dref_%s_final[] = {\n%s\n};\n" % (name, floats(r0["final"])))
        o.write("static const double dref_%s_final64[] = {\n%s\n};\n" % (name, floats(r0["final64"], 4, "%.17g")))
        loss = [res[r][name]["loss"][s] for s in range(STEPS) for r in range(WORLD)]
        o.write("static const float dref_%s_loss[] = {\n%s\n};\n" % (name, floats(loss, WORLD * 3)))
        if r0["bufs"]:
            for r in range(WORLD):
                o.write("static const float dref_%s_bufs%d[] = {\n%s\n};\n" % (name, r, floats(res[r][name]["bufs"])))
        o.write("\n")
    o.write("static const dref_case dref_cases[] = {\n")
    for name, kind, cap, accum, unused in CASES:
        r0 = res[0][name]
        nb = len(r0["bufs"])
        o.write("  {\"%s\", \"%s\", %g, %d, %s, %d, {%s}, {%s},\n   dref_%s_final, dref_%s_final64, dref_%s_loss, %d, {%s}, %.3g, %.3g},\n" % (
            name, kind, cap, accum, "true" if unused else "false", len(r0["names"]),
            ", ".join('"%s"' % n for n in r0["names"]), ", ".join(str(n) for n in r0["numels"]),
            name, name, name, nb,
            ", ".join(("dref_%s_bufs%d" % (name, r)) if nb else "0" for r in range(WORLD)), r0["vs1"], r0["f32_vs_f64"]))
    o.write("};\n#define DREF_NCASES %d\n\n#endif\n" % len(CASES))


if __name__ == "__main__":
    main()
