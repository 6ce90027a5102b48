"""PyTorch side of bench/bench_eltwise: the same ops, shapes and repetitions,
median microseconds per call printed as `torch_NAME_us value`. Usage:
eltwise.py [REPS] [FILTER]; BENCH_THREADS threads (default 2, like Wick's
pool on the bench box; run bench_eltwise with WICK_NUM_THREADS to match)."""
import os
import sys
import time

import torch
import torch.nn.functional as F

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
filt = sys.argv[2] if len(sys.argv) > 2 else None
torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "2")))
torch.manual_seed(0)
aten = torch.ops.aten


def run(name, fn):
    if filt and filt not in name:
        return
    ts = []
    for r in range(reps + 3):
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        if r >= 3:
            ts.append(dt)
    ts.sort()
    print("torch_%s_us %.1f" % (name, 1e6 * ts[len(ts) // 2]), flush=True)


with torch.no_grad():
    a, b = torch.randn(1 << 20), torch.randn(1 << 20)
    xa, ya = torch.randn(128, 64, 8, 8), torch.randn(128, 64, 8, 8)
    for tag, p, q in (("1m", a, b), ("act", xa, ya)):
        c = p.clone()
        run("add_" + tag, lambda: torch.add(p, q))
        run("add_inplace_alpha_" + tag, lambda: c.add_(q, alpha=1e-9))
        run("mul_" + tag, lambda: torch.mul(p, q))
        run("relu_" + tag, lambda: torch.relu(p))
        run("relu_inplace_" + tag, lambda: c.relu_())
        run("threshold_backward_" + tag, lambda: aten.threshold_backward(q, p, 0.0))
    for shape in ((128, 64, 16, 16), (128, 64, 8, 8), (128, 128, 4, 4), (128, 256, 2, 2), (128, 512, 1, 1)):
        C = shape[1]
        x, go = torch.randn(*shape), torch.randn(*shape)
        w, bb, rm, rv = torch.ones(C), torch.zeros(C), torch.zeros(C), torch.ones(C)
        tag = "%dx%dx%d" % shape[1:]
        run("bn_train_" + tag, lambda: aten.native_batch_norm(x, w, bb, rm, rv, True, 0.1, 1e-5))
        run("bn_eval_" + tag, lambda: aten.native_batch_norm(x, w, bb, rm, rv, False, 0.1, 1e-5))
        _, sm, si = aten.native_batch_norm(x, w, bb, rm, rv, True, 0.1, 1e-5)
        run("bn_backward_" + tag,
            lambda: aten.native_batch_norm_backward(go, x, w, rm, rv, sm, si, True, 1e-5, [True, True, True]))
    gx, gg = torch.randn(128, 512, 7, 7), torch.randn(128, 512, 1, 1)
    run("adaptive_avg_pool_512x7x7", lambda: F.adaptive_avg_pool2d(gx, 1))
    run("adaptive_avg_pool_backward_512x7x7", lambda: aten._adaptive_avg_pool2d_backward(gg, gx))
    mx = torch.randn(128, 64, 16, 16)
    mo, mi = aten.max_pool2d_with_indices(mx, [3, 3], [2, 2], [1, 1], [1, 1], False)
    mg = torch.randn_like(mo)
    run("max_pool_backward_64x16x16",
        lambda: aten.max_pool2d_with_indices_backward(mg, mx, [3, 3], [2, 2], [1, 1], [1, 1], False, mi))
