#!/usr/bin/python3
"""Generates tests/torch_ref/ops_ref_data.h: inputs, PyTorch 1.13.1 outputs and
gradients for the ops of issue 21 (the op surface), checked by
tests/check_torch_ref.c next to ref_data.h. Run with Debian's python3-torch:
  /usr/bin/python3 tests/torch_ref/gen_ops_ref.py > tests/torch_ref/ops_ref_data.h
Inputs include the edge values NaN, +-inf and -0; values come from torch's own
generator (seeded), so the file is reproducible."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from gen_ref import T, emit  # noqa: E402

torch.manual_seed(20261203)
cases, grad_cases = [], []


def r(*shape, dtype=torch.float32, lo=-2.0, hi=2.0):
    return (torch.rand(*shape, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


def case(label, op, args, outs, rtol=1e-5, atol=1e-6):
    if isinstance(outs, torch.Tensor):
        outs = [outs]
    cases.append((label, op, args, [o.detach() for o in outs], rtol, atol))


def gcase(label, op, args, fn, grad_args, rtol=1e-6, atol=1e-9):
    """fn(*tensors) computes the op in torch; args: Wick's arguments (T for tensors)."""
    for i in grad_args:
        args[i].t = args[i].t.detach().requires_grad_(True)
    out = fn()
    o = out if isinstance(out, torch.Tensor) else out[0]
    go = torch.randn_like(o.detach())
    o.backward(go)
    grads = [args[i].t.grad.detach().clone() for i in grad_args]
    for i in grad_args:
        args[i].t = args[i].t.detach()
    grad_cases.append((label, op, args, go, grad_args, grads, rtol, atol))


SPECIAL = [float("nan"), float("inf"), float("-inf"), -0.0, 0.0]


def with_specials(t):
    """t (1-d, float) with the edge values in front."""
    return torch.cat([torch.tensor(SPECIAL, dtype=t.dtype), t])


# ---- unary (one-input) ops: edge values, f32 and f64, integer promotion, gradients ----
UNARY = [  # name, torch function, input range for values and gradients
    ("expm1", torch.expm1, (-3, 3)), ("log2", torch.log2, (0.05, 5)), ("log10", torch.log10, (0.05, 5)),
    ("exp2", torch.exp2, (-4, 4)), ("tan", torch.tan, (-1.4, 1.4)), ("asin", torch.asin, (-0.95, 0.95)),
    ("acos", torch.acos, (-0.95, 0.95)), ("atan", torch.atan, (-4, 4)), ("sinh", torch.sinh, (-4, 4)),
    ("cosh", torch.cosh, (-4, 4)), ("asinh", torch.asinh, (-4, 4)), ("acosh", torch.acosh, (1.05, 5)),
    ("atanh", torch.atanh, (-0.95, 0.95)), ("reciprocal", torch.reciprocal, (0.2, 4)),
    ("square", torch.square, (-3, 3)), ("frac", torch.frac, (-4, 4)), ("erfinv", torch.erfinv, (-0.99, 0.99)),
    ("selu", torch.selu, (-3, 3)), ("mish", F.mish, (-4, 4)), ("hardswish", F.hardswish, (-5, 5)),
    ("hardsigmoid", F.hardsigmoid, (-5, 5)), ("relu6", F.relu6, (-2, 8)), ("log_sigmoid", F.logsigmoid, (-6, 6)),
]
for name, fn, (lo, hi) in UNARY:
    x = with_specials(r(12, lo=lo, hi=hi))
    case(name + " f32 edges", name, [T(x)], fn(x))
    xd = r(3, 5, lo=lo, hi=hi, dtype=torch.float64)
    case(name + " f64", name, [T(xd)], fn(xd), rtol=1e-12, atol=1e-14)
    xg = r(2, 5, lo=lo, hi=hi, dtype=torch.float64)
    arg = T(xg)
    gcase(name + " grad", name, [arg], lambda: fn(arg.t), [0])
for name, fn in [("trunc", torch.trunc), ("isfinite", torch.isfinite), ("signbit", torch.signbit)]:
    x = with_specials(r(10, lo=-4, hi=4))
    case(name + " f32 edges", name, [T(x)], fn(x))
# integers compute in float32 (PyTorch's unary float rule) or keep their dtype
xi = torch.tensor([-3, -1, 0, 1, 2, 5], dtype=torch.int64)
for name, fn in [("expm1", torch.expm1), ("atan", torch.atan), ("reciprocal", torch.reciprocal),
                 ("square", torch.square), ("trunc", torch.trunc), ("isfinite", torch.isfinite),
                 ("signbit", torch.signbit), ("relu6", F.relu6), ("bitwise_not", torch.bitwise_not)]:
    case(name + " int64", name, [T(xi)], fn(xi))
xu = torch.tensor([0, 1, 5, 200, 255], dtype=torch.uint8)
case("bitwise_not uint8", "bitwise_not", [T(xu)], torch.bitwise_not(xu))
case("square uint8 wraps", "square", [T(xu)], torch.square(xu))
xb = torch.tensor([True, False, True])
case("bitwise_not bool", "bitwise_not", [T(xb)], torch.bitwise_not(xb))
case("square bool", "square", [T(xb)], torch.square(xb))
case("signbit bool", "signbit", [T(xb)], torch.signbit(xb))

# ---- activations with arguments ----
x = with_specials(r(12, lo=-4, hi=4))
for label, op, args, fn in [
        ("softplus default", "softplus", [1, 20], lambda t: F.softplus(t)),
        ("softplus beta 2 threshold 3", "softplus", [2.0, 3.0], lambda t: F.softplus(t, 2.0, 3.0)),
        ("elu alpha 1.5", "elu", [1.5, 1, 1], lambda t: F.elu(t, 1.5)),
        ("elu scale input_scale", "elu", [0.7, 1.2, 0.5], lambda t: torch._C._nn.elu(t, 0.7, 1.2, 0.5)),
        ("celu alpha 0.5", "celu", [0.5], lambda t: F.celu(t, 0.5)),
        ("hardtanh -0.5 2", "hardtanh", [-0.5, 2.0], lambda t: F.hardtanh(t, -0.5, 2.0))]:
    case(label, op, [T(x)] + args, fn(x))
    xg = r(2, 6, lo=-3, hi=3, dtype=torch.float64)
    arg = T(xg)
    gcase(label + " grad", op, [arg] + args, lambda: fn(arg.t), [0])
# gradients at the kinks (PyTorch's boundary conventions: hardswish, hardsigmoid, hardtanh/relu6, elu at 0)
kinks = torch.tensor([-3.0, 3.0, 0.0, -1.0, 1.0, 6.0], dtype=torch.float64)
for label, op, args, fn in [("hardswish kinks", "hardswish", [], F.hardswish),
                            ("hardsigmoid kinks", "hardsigmoid", [], F.hardsigmoid),
                            ("relu6 kinks", "relu6", [], F.relu6),
                            ("hardtanh kinks", "hardtanh", [-1, 1], F.hardtanh),
                            ("elu kinks", "elu", [2.0, 1, 1], lambda t: F.elu(t, 2.0)),
                            ("selu kinks", "selu", [], torch.selu),
                            ("celu kinks", "celu", [2.0], lambda t: F.celu(t, 2.0))]:
    arg = T(kinks.clone())
    gcase(label, op, [arg] + args, lambda: fn(arg.t), [0])
xi = torch.tensor([-3, -1, 0, 1, 2, 5], dtype=torch.int64)
case("hardtanh int64", "hardtanh", [T(xi), -1, 2], F.hardtanh(xi, -1, 2))

# ---- binary ops: broadcasting, edge values, Scalar forms, integer rules, gradients ----
a = with_specials(r(7, lo=-3, hi=3)).reshape(3, 4)
b = torch.cat([torch.tensor([2.0, -0.0, float("inf"), float("nan")]), r(8, lo=-3, hi=3)]).reshape(3, 4)[:, :1]
bpos = r(1, 4, lo=0.5, hi=2.5)
for name, fn in [("atan2", torch.atan2), ("fmod", torch.fmod), ("remainder", torch.remainder),
                 ("hypot", torch.hypot), ("logaddexp", torch.logaddexp), ("copysign", torch.copysign)]:
    case(name + " broadcast edges", name, [T(a), T(b)], fn(a, b))
    case(name + " positive divisor", name, [T(a), T(bpos)], fn(a, bpos))
    if name not in ("hypot", "atan2", "logaddexp"):
        case(name + " Scalar", name + ".Scalar", [T(a), -1.5], fn(a, -1.5))
    xa, xb = r(2, 3, lo=-2, hi=2, dtype=torch.float64), r(3, lo=0.6, hi=2, dtype=torch.float64)
    if name in ("fmod", "remainder"):
        xb = xb * torch.tensor([1.0, -1.0, 1.0], dtype=torch.float64)
    A, B = T(xa), T(xb)
    gcase(name + " grads", name, [A, B], lambda: fn(A.t, B.t), [0, 1])
case("atan2 Scalar", "atan2.Scalar", [T(a), -1.5], torch.atan2(a, torch.tensor(-1.5)))
case("logaddexp Scalar", "logaddexp.Scalar", [T(a), 0.5], torch.logaddexp(a, torch.tensor(0.5)))
ia = torch.tensor([[-7, -3, 0, 5, 9, 2**40]], dtype=torch.int64)
ib = torch.tensor([[3], [-4]], dtype=torch.int64)
for name, fn in [("fmod", torch.fmod), ("remainder", torch.remainder), ("atan2", torch.atan2),
                 ("copysign", torch.copysign), ("bitwise_and", torch.bitwise_and), ("bitwise_or", torch.bitwise_or),
                 ("bitwise_xor", torch.bitwise_xor)]:
    case(name + " int64", name, [T(ia), T(ib)], fn(ia, ib))
sh = torch.tensor([[0], [1], [5], [63]], dtype=torch.int64)
for name, fn in [("bitwise_left_shift", torch.bitwise_left_shift), ("bitwise_right_shift", torch.bitwise_right_shift)]:
    case(name + " int64", name, [T(ia), T(sh)], fn(ia, sh))
    i32 = torch.tensor([-100, -1, 1, 77, 2**30], dtype=torch.int32)
    case(name + " int32 Scalar", name + ".Scalar", [T(i32), 3], fn(i32, 3))
ba, bb = torch.tensor([True, True, False, False]), torch.tensor([True, False, True, False])
for name, fn in [("bitwise_and", torch.bitwise_and), ("bitwise_or", torch.bitwise_or), ("bitwise_xor", torch.bitwise_xor)]:
    case(name + " bool", name, [T(ba), T(bb)], fn(ba, bb))
u8 = torch.tensor([0, 1, 128, 255], dtype=torch.uint8)
case("bitwise_xor uint8 Scalar", "bitwise_xor.Scalar", [T(u8), 170], torch.bitwise_xor(u8, 170))
case("bitwise_left_shift bool Scalar", "bitwise_left_shift.Scalar", [T(ba), 2], torch.bitwise_left_shift(ba, 2))

# ---- clamp_min/clamp_max, lerp, addcmul, addcdiv ----
xc = with_specials(r(7))
case("clamp_min", "clamp_min", [T(xc), -0.5], torch.clamp_min(xc, -0.5))
case("clamp_max", "clamp_max", [T(xc), 0.25], torch.clamp_max(xc, 0.25))
ci = torch.tensor([-3, 0, 2, 9])
case("clamp_min int64", "clamp_min", [T(ci), 1], torch.clamp_min(ci, 1))
la, lb, lw = r(3, 4), r(4), r(3, 1, lo=-0.5, hi=1.5)
for w in (0.3, 0.7, -1.5, 2.0):
    case("lerp Scalar %g" % w, "lerp.Scalar", [T(la), T(lb), w], torch.lerp(la, lb, w))
case("lerp Tensor broadcast", "lerp.Tensor", [T(la), T(lb), T(lw)], torch.lerp(la, lb, lw))
ca, c1, c2 = r(2, 3), r(3), r(2, 1, lo=0.5, hi=2)
case("addcmul value", "addcmul", [T(ca), T(c1), T(c2), 0.5], torch.addcmul(ca, c1, c2, value=0.5))
case("addcdiv value", "addcdiv", [T(ca), T(c1), T(c2), -2.0], torch.addcdiv(ca, c1, c2, value=-2.0))
ia, i1, i2 = torch.tensor([1, 2]), torch.tensor([3, -4]), torch.tensor([5, 6])
case("addcmul int64", "addcmul", [T(ia), T(i1), T(i2), 2], torch.addcmul(ia, i1, i2, value=2))
A, B, W = T(r(2, 3, dtype=torch.float64)), T(r(3, dtype=torch.float64)), T(r(2, 1, dtype=torch.float64))
gcase("lerp Tensor grads", "lerp.Tensor", [A, B, W], lambda: torch.lerp(A.t, B.t, W.t), [0, 1, 2])
A, B = T(r(2, 3, dtype=torch.float64)), T(r(3, dtype=torch.float64))
gcase("lerp Scalar grads", "lerp.Scalar", [A, B, 0.8], lambda: torch.lerp(A.t, B.t, 0.8), [0, 1])
S, T1, T2 = T(r(2, 3, dtype=torch.float64)), T(r(3, dtype=torch.float64)), T(r(2, 1, lo=0.5, hi=2, dtype=torch.float64))
gcase("addcmul grads", "addcmul", [S, T1, T2, 0.5], lambda: torch.addcmul(S.t, T1.t, T2.t, value=0.5), [0, 1, 2])
S, T1, T2 = T(r(2, 3, dtype=torch.float64)), T(r(3, dtype=torch.float64)), T(r(2, 1, lo=0.5, hi=2, dtype=torch.float64))
gcase("addcdiv grads", "addcdiv", [S, T1, T2, 1.5], lambda: torch.addcdiv(S.t, T1.t, T2.t, value=1.5), [0, 1, 2])
X = T(with_specials(r(5, dtype=torch.float64))[5:].clone())
gcase("clamp_min grad", "clamp_min", [X, 0.1], lambda: torch.clamp_min(X.t, 0.1), [0])

# ---- reductions: dims lists, keepdim, NaN, ties (amax/amin split the gradient), integer inputs ----
x = r(3, 4, 5)
x[0, 1, 2] = float("nan")
x[2, 3, 4] = float("nan")
for label, op, args, fn in [
        ("amax dims keepdim", "amax", [[0, 2], True], lambda t: torch.amax(t, (0, 2), True)),
        ("amin all", "amin", [[], False], lambda t: torch.amin(t, ())),
        ("nansum dim", "nansum", [[1], False, None], lambda t: torch.nansum(t, 1)),
        ("nansum all", "nansum", [None, False, None], lambda t: torch.nansum(t)),
        ("nanmean dims keepdim", "nanmean", [[0, -1], True, None], lambda t: torch.nanmean(t, (0, -1), True)),
        ("count_nonzero dims", "count_nonzero", [[0, 2]], lambda t: torch.count_nonzero(t, (0, 2)))]:
    case(label, op, [T(x)] + args, fn(x))
xc = r(3, 4, 5)
case("aminmax dim", "aminmax", [T(xc), 1, True], list(torch.aminmax(xc, dim=1, keepdim=True)))
case("aminmax all", "aminmax", [T(xc), None, False], list(torch.aminmax(xc)))
case("var_mean dims", "var_mean.correction", [T(xc), [0, 2], 1, False], list(torch.var_mean(xc, (0, 2))))
case("std_mean correction 0 keepdim", "std_mean.correction", [T(xc), [1], 0, True],
     list(torch.std_mean(xc, 1, unbiased=False, keepdim=True)))
allnan = torch.full((2, 3), float("nan"))
case("nanmean all-NaN row", "nanmean", [T(allnan), [1], False, None], torch.nanmean(allnan, 1))
xi = torch.tensor([[3, 0, -2], [0, 0, 7]])
case("nansum int64", "nansum", [T(xi), [1], False, None], torch.nansum(xi, 1))
case("amax int64", "amax", [T(xi), [0], False], torch.amax(xi, 0))
case("count_nonzero int64 all", "count_nonzero", [T(xi), None], torch.count_nonzero(xi))
ties = torch.tensor([[1.0, 3.0, 3.0, 0.5], [2.0, 2.0, 2.0, -1.0]], dtype=torch.float64)
for label, op, args, fn in [("amax ties grad", "amax", [[1], False], lambda t: torch.amax(t, 1)),
                            ("amin ties grad all", "amin", [[], False], lambda t: torch.amin(t)),
                            ("amax dims keepdim grad", "amax", [[0, 1], True], lambda t: torch.amax(t, (0, 1), True))]:
    arg = T(ties.clone())
    gcase(label, op, [arg] + args, lambda: fn(arg.t), [0])
xg = r(3, 4, dtype=torch.float64)
xg[1, 2] = float("nan")
arg = T(xg)
gcase("nansum grad", "nansum", [arg, [1], False, None], lambda: torch.nansum(arg.t, 1), [0])
arg = T(xg.clone())
gcase("nanmean grad", "nanmean", [arg, [0], False, None], lambda: torch.nanmean(arg.t, 0), [0])
arg = T(r(3, 4, dtype=torch.float64))
gcase("var_mean grad (var)", "var_mean.correction", [arg, [1], 1, False], lambda: torch.var_mean(arg.t, 1), [0])

# ---- scans: edge values, ties, zeros (cumprod's backward), integer inputs ----
xs = torch.cat([torch.tensor([1.5, float("nan"), -2.0, float("inf"), -float("inf"), 0.5, 2.0, 2.0]), r(8)]).reshape(2, 8)
for name, fn in [("cumprod", lambda t, d: torch.cumprod(t, d)), ("logcumsumexp", torch.logcumsumexp),
                 ("cummax", lambda t, d: list(torch.cummax(t, d))), ("cummin", lambda t, d: list(torch.cummin(t, d)))]:
    extra = [None] if name == "cumprod" else []
    case(name + " edges dim 1", name, [T(xs), 1] + extra, fn(xs, 1))
    case(name + " dim 0", name, [T(xs), 0] + extra, fn(xs, 0))
lse = torch.tensor([[-float("inf"), -float("inf"), 1.0, float("inf"), float("inf"), 3.0]])
case("logcumsumexp infinities", "logcumsumexp", [T(lse), 1], torch.logcumsumexp(lse, 1))
ti = torch.tensor([[3, 1, 3, -2, 5, 5], [0, 0, -1, 4, 4, 2]])
for name, fn in [("cumprod", lambda t: torch.cumprod(t, 1)), ("cummax", lambda t: list(torch.cummax(t, 1))),
                 ("cummin", lambda t: list(torch.cummin(t, 1)))]:
    case(name + " int64 ties", name, [T(ti), 1] + ([None] if name == "cumprod" else []), fn(ti))
tb = torch.tensor([False, True, False, True])
case("cummax bool", "cummax", [T(tb), 0], list(torch.cummax(tb, 0)))
for label, src in [("no zeros", r(3, 5, lo=0.5, hi=1.5, dtype=torch.float64)),
                   ("one zero", torch.tensor([[1.5, 0.0, 2.0, -1.0, 0.5], [0.7, 1.2, -0.9, 0.0, 1.1]], dtype=torch.float64)),
                   ("two zeros", torch.tensor([[1.5, 0.0, 2.0, 0.0, 0.5], [0.0, 1.2, -0.9, 3.0, 0.0]], dtype=torch.float64))]:
    arg = T(src.clone())
    gcase("cumprod grad " + label, "cumprod", [arg, 1, None], lambda: torch.cumprod(arg.t, 1), [0])
arg = T(r(3, 5, dtype=torch.float64))
gcase("logcumsumexp grad", "logcumsumexp", [arg, 1], lambda: torch.logcumsumexp(arg.t, 1), [0])
arg = T(r(4, 3, dtype=torch.float64))
gcase("logcumsumexp grad dim 0", "logcumsumexp", [arg, 0], lambda: torch.logcumsumexp(arg.t, 0), [0])
tg = torch.tensor([[1.0, 3.0, 3.0, 0.5, 4.0], [2.0, -1.0, 2.0, 5.0, 5.0]], dtype=torch.float64)
for name, fn in [("cummax", torch.cummax), ("cummin", torch.cummin)]:
    arg = T(tg.clone())
    gcase(name + " grad ties", name, [arg, 1], lambda: fn(arg.t, 1)[0], [0])

# ---- shape ops ----
m = r(2, 3, 4)
for k in (-1, 0, 2):
    case("tril k=%d" % k, "tril", [T(m), k], torch.tril(m, k))
    case("triu k=%d" % k, "triu", [T(m), k], torch.triu(m, k))
v = r(3)
for k in (0, 2, -1):
    case("diag vector k=%d" % k, "diag", [T(v), k], torch.diag(v, k))
    case("diag matrix k=%d" % k, "diag", [T(m[0]), k], torch.diag(m[0], k))
case("diagonal offset dims", "diagonal", [T(m), 1, 2, 0], torch.diagonal(m, 1, 2, 0))
case("diagonal negative offset", "diagonal", [T(m), -1, -1, -2], torch.diagonal(m, -1, -1, -2))
case("movedim", "movedim", [T(m), [0, 2], [2, 0]], torch.movedim(m, (0, 2), (2, 0)))
case("movedim one", "movedim", [T(m), [-1], [0]], torch.movedim(m, -1, 0))
case("tile fewer dims", "tile", [T(m), [2, 1]], torch.tile(m, (2, 1)))
case("tile more dims", "tile", [T(m[0]), [2, 1, 3]], torch.tile(m[0], (2, 1, 3)))
case("unflatten", "unflatten", [T(m), 2, [2, -1]], m.unflatten(2, (2, -1)))
case("repeat_interleave dim", "repeat_interleave.self_int", [T(m), 2, 1], torch.repeat_interleave(m, 2, 1))
case("repeat_interleave flat", "repeat_interleave.self_int", [T(m[0]), 3, None], torch.repeat_interleave(m[0], 3))
mg = r(3, 4, dtype=torch.float64)
vg = r(3, dtype=torch.float64)
for label, op, args, fn, src in [
        ("tril grad", "tril", [1], lambda t: torch.tril(t, 1), mg), ("triu grad", "triu", [-1], lambda t: torch.triu(t, -1), mg),
        ("diag matrix grad", "diag", [1], lambda t: torch.diag(t, 1), mg),
        ("diag vector grad", "diag", [-1], lambda t: torch.diag(t, -1), vg),
        ("diagonal grad", "diagonal", [-1, 1, 0], lambda t: torch.diagonal(t, -1, 1, 0), mg),
        ("tile grad", "tile", [[2, 2]], lambda t: torch.tile(t, (2, 2)), mg),
        ("repeat_interleave grad", "repeat_interleave.self_int", [2, 0], lambda t: torch.repeat_interleave(t, 2, 0), mg),
        ("movedim grad", "movedim", [[0], [1]], lambda t: torch.movedim(t, 0, 1), mg)]:
    arg = T(src.clone())
    gcase(label, op, [arg] + args, lambda: fn(arg.t), [0])

# ---- glu, prelu ----
g = with_specials(r(7)).reshape(2, 6)
case("glu edges dim -1", "glu", [T(g), -1], F.glu(g, -1))
g3 = r(4, 2, 3, dtype=torch.float64)
case("glu dim 0 f64", "glu", [T(g3), 0], F.glu(g3, 0), rtol=1e-12, atol=1e-14)
pa = with_specials(r(11)).reshape(2, 4, 2)
pw = torch.tensor([0.25, -0.5, 2.0, 0.0])
case("prelu per channel edges", "prelu", [T(pa), T(pw)], F.prelu(pa, pw))
case("prelu one weight", "prelu", [T(pa), T(pw[:1].clone())], F.prelu(pa, pw[:1]))
pv = r(5)
case("prelu 1-d input", "prelu", [T(pv), T(torch.tensor([0.1]))], F.prelu(pv, torch.tensor([0.1])))
G = T(r(3, 4, dtype=torch.float64))
gcase("glu grad", "glu", [G, 1], lambda: F.glu(G.t, 1), [0])
PX, PW = T(r(2, 3, 2, dtype=torch.float64)), T(torch.tensor([0.3, -0.2, 1.5], dtype=torch.float64))
gcase("prelu grads", "prelu", [PX, PW], lambda: F.prelu(PX.t, PW.t), [0, 1])
PX1, PW1 = T(r(4, 3, dtype=torch.float64)), T(torch.tensor([0.4], dtype=torch.float64))
gcase("prelu one weight grads", "prelu", [PX1, PW1], lambda: F.prelu(PX1.t, PW1.t), [0, 1])

# ---- index_add, index_copy, index_fill, take, take_along_dim, argsort ----
ix = r(4, 3)
ii = torch.tensor([2, 0, 2, 3])
isrc = r(4, 3)
case("index_add repeated indices", "index_add", [T(ix), 0, T(ii), T(isrc), 1], ix.index_add(0, ii, isrc))
i32 = torch.tensor([1, 1], dtype=torch.int32)
isrc2 = r(4, 2)
case("index_add alpha int32 index", "index_add", [T(ix), 1, T(i32), T(isrc2), 2.5], ix.index_add(1, i32, isrc2, alpha=2.5))
xi64 = torch.arange(6, dtype=torch.int64).reshape(2, 3)
case("index_add int64", "index_add", [T(xi64), 1, T(torch.tensor([2, 0])), T(torch.tensor([[5, 7], [1, 1]])), 1],
     xi64.index_add(1, torch.tensor([2, 0]), torch.tensor([[5, 7], [1, 1]])))
case("index_copy dim 0", "index_copy", [T(ix), 0, T(torch.tensor([3, 1])), T(isrc[:2].clone())],
     ix.index_copy(0, torch.tensor([3, 1]), isrc[:2]))
case("index_copy dim -1", "index_copy", [T(ix), -1, T(torch.tensor([2, 0, 1])), T(isrc[:, [1, 2, 0]].clone())],
     ix.index_copy(-1, torch.tensor([2, 0, 1]), isrc[:, [1, 2, 0]]))
case("index_fill", "index_fill.int_Scalar", [T(ix), 1, T(torch.tensor([0, 2, 0])), float("-inf")],
     ix.index_fill(1, torch.tensor([0, 2, 0]), float("-inf")))
case("index_fill int", "index_fill.int_Scalar", [T(xi64), 0, T(torch.tensor([1])), -4],
     xi64.index_fill(0, torch.tensor([1]), -4))
IS, ISRC = T(r(4, 3, dtype=torch.float64)), T(r(4, 3, dtype=torch.float64))
gcase("index_add grads", "index_add", [IS, 0, T(ii), ISRC, 2.0], lambda: IS.t.index_add(0, ii, ISRC.t, alpha=2.0), [0, 3])
IC, ICS = T(r(4, 3, dtype=torch.float64)), T(r(2, 3, dtype=torch.float64))
gcase("index_copy grads", "index_copy", [IC, 0, T(torch.tensor([3, 0])), ICS],
      lambda: IC.t.index_copy(0, torch.tensor([3, 0]), ICS.t), [0, 3])
IF = T(r(4, 3, dtype=torch.float64))
gcase("index_fill grad", "index_fill.int_Scalar", [IF, 1, T(torch.tensor([1])), 2.0],
      lambda: IF.t.index_fill(1, torch.tensor([1]), 2.0), [0])
tk = with_specials(r(7)).reshape(3, 4)
tki = torch.tensor([[0, -1, 5], [11, -12, 3]])
case("take negative indices", "take", [T(tk), T(tki)], torch.take(tk, tki))
case("take 0-d index", "take", [T(tk), T(torch.tensor(-3))], torch.take(tk, torch.tensor(-3)))
TK = T(r(3, 4, dtype=torch.float64))
gcase("take grad repeats", "take", [TK, T(torch.tensor([1, 1, -1, 6]))], lambda: torch.take(TK.t, torch.tensor([1, 1, -1, 6])), [0])
ta = r(3, 4)
tai = torch.tensor([[0, 3], [1, 1], [2, 0]])
case("take_along_dim dim 1", "take_along_dim", [T(ta), T(tai), 1], torch.take_along_dim(ta, tai, 1))
tab = torch.tensor([[2, 0, 1, 2]])
case("take_along_dim broadcast", "take_along_dim", [T(ta), T(tab), 0], torch.take_along_dim(ta, tab, 0))
tac = torch.tensor([[1], [0]])
case("take_along_dim broadcast self", "take_along_dim", [T(ta[:1].clone()), T(tac), -1],
     torch.take_along_dim(ta[:1], tac, -1))
case("take_along_dim None", "take_along_dim", [T(ta), T(torch.tensor([[11, 0, 5]])), None],
     torch.take_along_dim(ta, torch.tensor([[11, 0, 5]])))
TA = T(r(3, 4, dtype=torch.float64))
gcase("take_along_dim grad", "take_along_dim", [TA, T(tai), 1], lambda: torch.take_along_dim(TA.t, tai, 1), [0])
TB = T(r(1, 4, dtype=torch.float64))
gcase("take_along_dim grad broadcast", "take_along_dim", [TB, T(torch.tensor([[1], [3], [1]])), 1],
      lambda: torch.take_along_dim(TB.t, torch.tensor([[1], [3], [1]]), 1), [0])
ties = torch.tensor([[3.0, 1.0, 3.0, float("nan"), 1.0, -0.0, 0.0, float("-inf")], [2, 2, 2, 1, 1, 1, 2, 2]])
case("argsort stable ties", "argsort.stable", [T(ties), True, -1, False], torch.argsort(ties, dim=-1, stable=True))
case("argsort stable descending", "argsort.stable", [T(ties), True, 1, True],
     torch.argsort(ties, dim=1, descending=True, stable=True))
ad = r(4, 3)
case("argsort dim 0", "argsort", [T(ad), 0, False], torch.argsort(ad, 0))
case("argsort int descending", "argsort", [T(torch.tensor([5, -2, 9, 0])), -1, True],
     torch.argsort(torch.tensor([5, -2, 9, 0]), descending=True))

# ---- kthvalue, median (distinct values but for NaN: the index among equal values is PyTorch's choice) ----
kv = torch.randperm(20).to(torch.float32).reshape(4, 5) / 4 - 2
for kk, dd, keep in [(1, 1, False), (3, 0, True), (5, -1, False)]:
    case("kthvalue k=%d dim=%d" % (kk, dd), "kthvalue", [T(kv), kk, dd, keep], list(torch.kthvalue(kv, kk, dd, keep)))
kn = torch.tensor([[1.0, float("nan"), -1.0, 3.0], [float("inf"), 0.5, -0.25, float("-inf")]])
case("kthvalue NaN last", "kthvalue", [T(kn), 4, 1, False], list(torch.kthvalue(kn, 4, 1)))
case("kthvalue int64", "kthvalue", [T(torch.tensor([7, -3, 5, 0])), 2, 0, False],
     list(torch.kthvalue(torch.tensor([7, -3, 5, 0]), 2, 0)))
case("median all even count (lower)", "median", [T(kv)], torch.median(kv))
case("median all odd count", "median", [T(kv[:, :3].clone())], torch.median(kv[:, :3]))
case("median all NaN", "median", [T(kn)], torch.median(kn))
case("median all empty", "median", [T(torch.zeros(0, 3))], torch.median(torch.zeros(0, 3)))
case("median all int64", "median", [T(torch.tensor([[4, -2], [9, 1]]))], torch.median(torch.tensor([[4, -2], [9, 1]])))
for dd, keep in [(1, False), (0, True)]:
    case("median dim=%d" % dd, "median.dim", [T(kv), dd, keep], list(torch.median(kv, dd, keep)))
kn2 = torch.tensor([[1.0, float("nan"), -1.0, float("nan")], [2.0, 0.5, -0.25, 7.0], [float("inf"), -0.0, 3.0, 1.0]])
case("median dim NaN rows", "median.dim", [T(kn2), 1, False], list(torch.median(kn2, 1)))
case("median 0-d", "median.dim", [T(torch.tensor(2.5)), 0, False], list(torch.median(torch.tensor(2.5), 0)))
KV = T(torch.randperm(12).to(torch.float64).reshape(3, 4) / 3)
gcase("kthvalue grad", "kthvalue", [KV, 2, 1, False], lambda: torch.kthvalue(KV.t, 2, 1)[0], [0])
MD = T(torch.randperm(12).to(torch.float64).reshape(3, 4) / 3)
gcase("median.dim grad", "median.dim", [MD, 0, True], lambda: torch.median(MD.t, 0, True)[0], [0])
MA = T(torch.tensor([[1.0, 2.0, 2.0], [5.0, 2.0, -1.0]], dtype=torch.float64))
gcase("median grad ties share", "median", [MA], lambda: torch.median(MA.t), [0])
MN = T(torch.tensor([[1.0, float("nan"), 2.0], [float("nan"), 3.0, 0.0]], dtype=torch.float64))
gcase("median grad NaN", "median", [MN], lambda: torch.median(MN.t), [0])

# ---- nonzero, argwhere (the count is data: a dynamic shape) ----
nz = torch.tensor([[0.0, float("nan"), -0.0], [float("-inf"), 0.0, 2.5], [0.0, 0.0, 0.0], [1e-30, 0.0, -1.0]])
case("nonzero edges", "nonzero", [T(nz)], torch.nonzero(nz))
case("argwhere edges", "argwhere", [T(nz)], torch.argwhere(nz))
nz3 = (r(2, 3, 2) > 0.5).to(torch.int64) * torch.arange(12).reshape(2, 3, 2)
case("nonzero int64 3-d", "nonzero", [T(nz3)], torch.nonzero(nz3))
case("nonzero bool 1-d", "nonzero", [T(torch.tensor([True, False, True]))], torch.nonzero(torch.tensor([True, False, True])))
case("nonzero 0-d", "nonzero", [T(torch.tensor(3.0))], torch.nonzero(torch.tensor(3.0)))
case("nonzero all zero", "argwhere", [T(torch.zeros(2, 2))], torch.argwhere(torch.zeros(2, 2)))
case("nonzero empty", "nonzero", [T(torch.zeros(0, 3))], torch.nonzero(torch.zeros(0, 3)))

# ---- searchsorted, bucketize ----
bd = torch.tensor([-1.0, 0.0, 0.0, 1.5, 3.0])
sv = torch.tensor([[float("nan"), -2.0, -1.0, 0.0], [-0.0, 1.0, 3.0, float("inf")]])
for right in (False, True):
    case("searchsorted 1-d right=%s" % right, "searchsorted.Tensor", [T(bd), T(sv), False, right, None, None],
         torch.searchsorted(bd, sv, right=right))
    case("bucketize right=%s" % right, "bucketize.Tensor", [T(sv), T(bd), False, right], torch.bucketize(sv, bd, right=right))
srows = torch.tensor([[1, 3, 5, 7], [2, 2, 4, 8]])
svals = torch.tensor([[3, 6, 0], [2, 9, 4]])
case("searchsorted rows int64 side=right int32", "searchsorted.Tensor", [T(srows), T(svals), True, False, "right", None],
     torch.searchsorted(srows, svals, out_int32=True, side="right"))
unsorted = torch.tensor([3.0, -1.0, 2.0, 0.5])
sorter = torch.argsort(unsorted)
sq = torch.tensor([0.0, 2.0, 5.0])
case("searchsorted sorter", "searchsorted.Tensor", [T(unsorted), T(sq), False, False, None, T(sorter)],
     torch.searchsorted(unsorted, sq, sorter=sorter))
case("bucketize 0-d", "bucketize.Tensor", [T(torch.tensor(0.7)), T(bd), False, False], torch.bucketize(torch.tensor(0.7), bd))
case("searchsorted empty boundaries", "searchsorted.Tensor", [T(torch.zeros(0)), T(sq), False, False, None, None],
     torch.searchsorted(torch.zeros(0), sq))

# ---- bincount, histc ----
bc = torch.tensor([1, 4, 1, 0, 4, 4])
case("bincount", "bincount", [T(bc), None, 0], torch.bincount(bc))
case("bincount minlength", "bincount", [T(bc), None, 8], torch.bincount(bc, minlength=8))
bw = r(6)
case("bincount f32 weights", "bincount", [T(bc), T(bw), 0], torch.bincount(bc, bw))
bwi = torch.tensor([1, 2, 3, 4, 5, 6])
case("bincount int weights (double sums)", "bincount", [T(bc.to(torch.int32)), T(bwi), 2], torch.bincount(bc.to(torch.int32), bwi, 2))
case("bincount empty", "bincount", [T(torch.zeros(0, dtype=torch.int64)), None, 3],
     torch.bincount(torch.zeros(0, dtype=torch.int64), minlength=3))
# no NaN: PyTorch documents NaN as skipped, but 1.13's cpu kernel counts it into bin 0 (a float-to-int cast of NaN)
hx = torch.tensor([-1.0, -0.5, 0.0, 0.25, 0.999, 1.0, 1.5, float("-inf"), float("inf"), -0.0, 0.5, 0.75])
case("histc range", "histc", [T(hx), 4, 0, 1], torch.histc(hx, 4, 0, 1))
hy = r(50, dtype=torch.float64)
case("histc data range f64", "histc", [T(hy), 7, 0, 0], torch.histc(hy, 7))
case("histc constant input", "histc", [T(torch.full((5,), 3.0)), 4, 0, 0], torch.histc(torch.full((5,), 3.0), 4))
case("histc float bounds", "histc", [T(hx), 3, -0.5, 1.25], torch.histc(hx, 3, -0.5, 1.25))
case("histc empty", "histc", [T(torch.zeros(0)), 2, 0, 0], torch.histc(torch.zeros(0), 2))

if __name__ == "__main__":
    emit(sys.stdout, cases, grad_cases, pre="o", arr="ops_ref_cases", garr="ops_ref_grad_cases",
         script="gen_ops_ref.py")
