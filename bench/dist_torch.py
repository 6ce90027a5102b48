"""PyTorch side of bench/bench_dist: torch.distributed (gloo backend) on 2
processes of this machine, with bench_dist's protocol and rows.
  all_reduce (sum, float32) at 4 KB .. MAX_MB, x4 steps: before each timed
  call a barrier; every rank's time of each call, the slowest rank's taken
  (an all_reduce MAX of the times), the median printed.
  --ddp: DistributedDataParallel steps of the LeNet CNN (bench/train.py's
  cnn), batch 64 per rank of random 1x28x28 images, SGD momentum 0.9, 25 MB
  buckets (PyTorch's default), 3 warm-up steps then the median of 20.
Every rank uses one intra-op thread (torch.set_num_threads(1)) unless
--threads N. Needs torch.distributed with gloo (PyPI's torch):
  /work/venv-torch/bin/python bench/dist_torch.py [--ddp] [--max-mb 64] [--batch 64] [--threads 1]"""
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F


def opt(name, default):
    return type(default)(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def iters_for(nbytes):
    return max(5, min(200, (256 << 20) // nbytes))


def allreduce(rank, size, max_bytes):
    if rank == 0:
        print("\nPyTorch %s torch.distributed all_reduce (sum, float32), gloo\n"
              "| size        | median us  | algbw GB/s | busbw GB/s |\n"
              "|-------------|------------|----------|----------|" % torch.__version__)
    nbytes = 4096
    while nbytes <= max_bytes:
        t = torch.ones(nbytes // 4)
        it = iters_for(nbytes)
        for _ in range(3):
            dist.all_reduce(t)
        ts = []
        for _ in range(it):
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(t)
            ts.append(time.perf_counter() - t0)
        tt = torch.tensor(ts, dtype=torch.float64)
        dist.all_reduce(tt, op=dist.ReduceOp.MAX)
        med = statistics.median(tt.tolist())
        algbw = nbytes / med / 1e9
        if rank == 0:
            print("| %8.0f KB | %10.1f | %8.3f | %8.3f |" % (nbytes / 1024, med * 1e6, algbw,
                                                              algbw * 2.0 * (size - 1) / size), flush=True)
        nbytes *= 4


def ddp_steps(rank, size, batch):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))
    net = nn.parallel.DistributedDataParallel(model)
    sgd = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(batch, 1, 28, 28)
    y = torch.tensor([i % 10 for i in range(batch)])
    warm, steps = 3, 20
    ts, tb = [], []
    for s in range(warm + steps):
        t0 = time.perf_counter()
        sgd.zero_grad(set_to_none=True)
        loss = F.cross_entropy(net(x), y)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        sgd.step()
        if s >= warm:
            ts.append(time.perf_counter() - t0)
            tb.append(t2 - t1)
    print("rank %d/%d: LeNet batch %d per rank: step %.2f ms (backward %.2f ms)" % (
        rank, size, batch, statistics.median(ts) * 1e3, statistics.median(tb) * 1e3), flush=True)


def worker(rank, size, port):
    torch.set_num_threads(opt("--threads", 1))
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank, world_size=size)
    if "--ddp" in sys.argv:
        ddp_steps(rank, size, opt("--batch", 64))
    else:
        allreduce(rank, size, int(opt("--max-mb", 64.0) * 1024 * 1024))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    size = 2
    mp.start_processes(worker, args=(size, 29900 + os.getpid() % 90), nprocs=size, start_method="spawn")
