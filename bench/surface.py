"""PyTorch side of bench/bench_surface: the same ops on the same 1M-element
float32 shapes ([1000, 1000]; scans and reductions along the last dim),
medians of timed calls in ms, printed as torch_surface_<op>_ms."""
import sys
import time

import torch
import torch.nn.functional as F

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 11
torch.set_num_threads(2)
torch.manual_seed(1)


def u(lo, hi, dtype=torch.float32):
    return (torch.rand(1000, 1000, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


x, xp, xu, y, yp = u(-2, 2), u(0.5, 3), u(-0.9, 0.9), u(-2, 2), u(0.5, 3)
xi, yi = u(-1000, 1000, torch.int64), u(0, 8, torch.int64)
v = x.reshape(-1).clone()
wv = yp[0].clone()
perm = torch.randperm(1000)
flat_i = u(0, 1e6, torch.int64).reshape(-1)
rows = u(0, 1000, torch.int64)
ramp = torch.linspace(-2, 2, 128)
cnt = yi.reshape(-1)
OPS = [
    ("expm1", lambda: torch.expm1(x)), ("log2", lambda: torch.log2(xp)), ("log10", lambda: torch.log10(xp)),
    ("exp2", lambda: torch.exp2(x)), ("tan", lambda: torch.tan(xu)), ("asin", lambda: torch.asin(xu)),
    ("acos", lambda: torch.acos(xu)), ("atan", lambda: torch.atan(x)), ("sinh", lambda: torch.sinh(x)),
    ("cosh", lambda: torch.cosh(x)), ("asinh", lambda: torch.asinh(x)), ("acosh", lambda: torch.acosh(xp)),
    ("atanh", lambda: torch.atanh(xu)), ("reciprocal", lambda: torch.reciprocal(xp)), ("square", lambda: torch.square(x)),
    ("trunc", lambda: torch.trunc(x)), ("frac", lambda: torch.frac(x)), ("erfinv", lambda: torch.erfinv(xu)),
    ("softplus", lambda: F.softplus(x)), ("elu", lambda: F.elu(x)), ("selu", lambda: F.selu(x)),
    ("celu", lambda: F.celu(x)), ("mish", lambda: F.mish(x)), ("hardswish", lambda: F.hardswish(x)),
    ("hardsigmoid", lambda: F.hardsigmoid(x)), ("hardtanh", lambda: F.hardtanh(x)), ("relu6", lambda: F.relu6(x)),
    ("logsigmoid", lambda: F.logsigmoid(x)), ("isfinite", lambda: torch.isfinite(x)),
    ("signbit", lambda: torch.signbit(x)), ("bitwise_not", lambda: torch.bitwise_not(xi)),
    ("atan2", lambda: torch.atan2(x, y)), ("fmod", lambda: torch.fmod(x, yp)),
    ("remainder", lambda: torch.remainder(x, yp)), ("hypot", lambda: torch.hypot(x, y)),
    ("logaddexp", lambda: torch.logaddexp(x, y)), ("copysign", lambda: torch.copysign(x, y)),
    ("bitwise_and", lambda: torch.bitwise_and(xi, yi)), ("bitwise_left_shift", lambda: torch.bitwise_left_shift(xi, yi)),
    ("lerp", lambda: torch.lerp(x, y, 0.3)), ("addcmul", lambda: torch.addcmul(x, y, yp, value=0.5)),
    ("addcdiv", lambda: torch.addcdiv(x, y, yp, value=0.5)), ("clamp_min", lambda: torch.clamp_min(x, 0.0)),
    ("amax", lambda: torch.amax(x, -1)), ("aminmax", lambda: torch.aminmax(x, dim=-1)),
    ("nansum", lambda: torch.nansum(x, -1)), ("nanmean", lambda: torch.nanmean(x, -1)),
    ("var_mean", lambda: torch.var_mean(x, -1)), ("count_nonzero", lambda: torch.count_nonzero(x, -1)),
    ("cumprod", lambda: torch.cumprod(x, -1)), ("cummax", lambda: torch.cummax(x, -1)),
    ("logcumsumexp", lambda: torch.logcumsumexp(x, -1)), ("tril", lambda: torch.tril(x)),
    ("diag", lambda: torch.diag(x)), ("tile", lambda: torch.tile(x, (1, 1))),
    ("repeat_interleave", lambda: torch.repeat_interleave(v, 1, 0)),
    # glu ... histc (added later)
    ("glu", lambda: F.glu(x, -1)), ("prelu", lambda: F.prelu(x, wv)),
    ("index_add", lambda: x.index_add(0, perm, y)), ("index_copy", lambda: x.index_copy(0, perm, y)),
    ("index_fill", lambda: x.index_fill(0, perm, 1.0)), ("take", lambda: torch.take(x, flat_i)),
    ("take_along_dim", lambda: torch.take_along_dim(x, rows, -1)), ("argsort", lambda: torch.argsort(x, -1)),
    ("kthvalue", lambda: torch.kthvalue(x, 500, -1)), ("median", lambda: torch.median(x, -1)),
    ("nonzero", lambda: torch.nonzero(x)), ("searchsorted", lambda: torch.searchsorted(ramp, x)),
    ("bucketize", lambda: torch.bucketize(x, ramp)), ("bincount", lambda: torch.bincount(cnt)),
    ("histc", lambda: torch.histc(x, 100, -2, 2)),
]
for name, fn in OPS:
    ts = []
    for r in range(reps + 1):
        t0 = time.perf_counter()
        fn()
        if r:
            ts.append(time.perf_counter() - t0)
    ts.sort()
    print("torch_surface_%s_ms %.3f" % (name, 1e3 * ts[len(ts) // 2]))
