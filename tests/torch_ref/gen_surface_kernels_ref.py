#!/usr/bin/python3
"""Generates tests/torch_ref/surface_kernels_ref_data.h: inputs and PyTorch 1.13.1 results for issue 21's
dedicated cpu kernels (index_put, interpolate and its backward, unique_consecutive) and the conv / grid_sample
additions (padding='same'/'valid', grid_sample bicubic and 5-D), checked by tests/check_surface_kernels.c.
Cases whose label starts with "grad " hold a gradient: the last argument is the upstream gradient, the outputs
are the gradients of the floating-point tensor arguments before it, in order. Run with Debian's python3-torch:
  /usr/bin/python3 tests/torch_ref/gen_surface_kernels_ref.py > tests/torch_ref/surface_kernels_ref_data.h"""
import io
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from gen_ref import T, emit  # noqa: E402

torch.manual_seed(20261203)
cases = []
F64 = torch.float64
NAN, INF = float("nan"), float("inf")


class FL(list):
    """A float[] argument (emitted as REF_FLOATS by the post-processing below)."""


def r(*shape, dtype=torch.float32, lo=-2.0, hi=2.0):
    return (torch.rand(*shape, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


def IP(x, idx, v, acc):
    return torch.ops.aten.index_put(x, idx, v, acc)


def case(label, op, args, outs, rtol=1e-5, atol=1e-6):
    if isinstance(outs, torch.Tensor):
        outs = [outs]
    cases.append((label, op, args, [o.detach() for o in outs], rtol, atol))


def gcase(label, op, args, fn, rtol=1e-10, atol=1e-12):
    """A gradient case: every floating tensor argument requires grad; fn(*tensors) is the op in PyTorch."""
    ts = [a.t.detach().clone().requires_grad_(True) if isinstance(a, T) and a.t.is_floating_point() else None
          for a in args]
    out = fn(*[t if t is not None else (a.t if isinstance(a, T) else a) for t, a in zip(ts, args)])
    go = torch.randn_like(out.detach())
    out.backward(go)
    grads = [t.grad.detach().clone() if t.grad is not None else torch.zeros_like(t) for t in ts if t is not None]
    cases.append(("grad " + label, op, args + [T(go)], grads, rtol, atol))


# ---- index_put: duplicates (accumulate), broadcast index shapes, slices between indices, masks, empty ----
x = r(6, 5)
dup = torch.tensor([0, 3, 3, 1, 3])
v = r(5, 5)
case("index_put accumulate duplicates", "index_put", [T(x), [T(dup)], T(v), True], x.index_put((dup,), v, True))
vr = r(3, 5)
ir = torch.tensor([4, -1, 0])
case("index_put distinct rows, negative index", "index_put", [T(x), [T(ir)], T(vr), False], x.index_put((ir,), vr))
x3 = r(4, 5, 3, dtype=F64)
i0, i1 = torch.tensor([[0], [3]]), torch.tensor([1, 4, 1])
v3 = r(3, dtype=F64)
case("index_put broadcast indices, accumulate duplicates, values broadcast", "index_put",
     [T(x3), [T(i0), T(i1)], T(v3), True], x3.index_put((i0, i1), v3, True), 1e-12, 1e-13)
xn = r(3, 4, 5)
a0, a2 = torch.tensor([2, 0]), torch.tensor([1, 4])
vn = r(2, 4)
case("index_put non-adjacent indices (index dims first)", "index_put", [T(xn), [T(a0), None, T(a2)], T(vn), False],
     IP(xn, [a0, None, a2], vn, False))
xm = r(3, 4, 2)
mk = torch.rand(3, 4) > 0.5
nm = int(mk.sum())
vm = r(nm, 2)
case("index_put bool mask over two dims", "index_put", [T(xm), [T(mk)], T(vm), False], xm.index_put((mk,), vm))
case("index_put bool mask accumulate scalar", "index_put", [T(xm), [T(mk)], T(torch.tensor(1.5)), True],
     xm.index_put((mk,), torch.tensor(1.5), True))
xi = torch.arange(12).reshape(3, 4)
case("index_put int64 accumulate duplicates", "index_put", [T(xi), [None, T(torch.tensor([1, 1, 3]))], T(torch.tensor([10, 20, 30])), True],
     IP(xi, [None, torch.tensor([1, 1, 3])], torch.tensor([10, 20, 30]), True))
xb = torch.tensor([True, False, True, False])
case("index_put bool self", "index_put", [T(xb), [T(torch.tensor([1, 2]))], T(torch.tensor([True, False])), False],
     xb.index_put((torch.tensor([1, 2]),), torch.tensor([True, False])))
case("index_put empty index", "index_put", [T(x), [T(torch.zeros(0, dtype=torch.int64))], T(r(0, 5)), True],
     x.index_put((torch.zeros(0, dtype=torch.int64),), r(0, 5), True))
xe = r(0, 3)
ve = r(1)
case("index_put empty self", "index_put", [T(xe), [None, T(torch.tensor([2, 0]))], T(ve), False],
     IP(xe, [None, torch.tensor([2, 0])], ve, False))
# gradients (float64): duplicates with and without accumulate, broadcast values, a mask
gx, gv = r(5, 4, dtype=F64), r(3, 4, dtype=F64)
gi = torch.tensor([1, 1, 3])
for acc in (False, True):
    gcase("index_put duplicates accumulate=%s" % acc, "index_put", [T(gx), [T(gi)], T(gv), acc],
          lambda a, ix, b, c: a.index_put((gi,), b, c))
gvb = r(4, dtype=F64)
gcase("index_put values broadcast", "index_put", [T(gx), [T(torch.tensor([0, 4]))], T(gvb), False],
      lambda a, ix, b, c: a.index_put((torch.tensor([0, 4]),), b, c))
gm = torch.rand(5, 4) > 0.4
gcase("index_put mask accumulate", "index_put", [T(gx), [T(gm)], T(r(int(gm.sum()), dtype=F64)), True],
      lambda a, ix, b, c: a.index_put((gm,), b, c))
gx3 = r(3, 4, 5, dtype=F64)
gcase("index_put non-adjacent", "index_put", [T(gx3), [T(a0), None, T(a2)], T(r(2, 4, dtype=F64)), True],
      lambda a, ix, b, c: IP(a, [a0, None, a2], b, c))

# ---- interpolate (linear, bilinear, bicubic, trilinear): sizes, scale factors, align_corners, recompute ----
xi2 = r(2, 3, 9, 7)
xd2 = r(1, 2, 6, 5, dtype=F64)
ICASES = [  # label, input, size, scale_factor, mode, align_corners, recompute
    ("bilinear up 13x5", xi2, [13, 5], None, "bilinear", False, None),
    ("bilinear up 13x5 align", xi2, [13, 5], None, "bilinear", True, None),
    ("bilinear scale 1.6 x 0.55", xi2, None, [1.6, 0.55], "bilinear", False, None),
    ("bilinear scale 1.6 x 0.55 align", xi2, None, [1.6, 0.55], "bilinear", True, None),
    ("bilinear scale 1.6 x 0.55 recompute", xi2, None, [1.6, 0.55], "bilinear", False, True),
    ("bilinear to 1x1", xi2, [1, 1], None, "bilinear", False, None),
    ("bilinear to 1x1 align", xi2, [1, 1], None, "bilinear", True, None),
    ("bicubic up 13x5", xi2, [13, 5], None, "bicubic", False, None),
    ("bicubic down 4x3 align", xi2, [4, 3], None, "bicubic", True, None),
    ("bicubic scale 2.5", xi2, None, [2.5], "bicubic", False, None),
    ("bicubic scale 0.7 x 1.3 align", xi2, None, [0.7, 1.3], "bicubic", True, None),
    ("bicubic f64 scale 1.5", xd2, None, [1.5, 1.5], "bicubic", False, None),
    ("bilinear f64 down", xd2, [4, 3], None, "bilinear", False, None),
    ("linear scale 0.45", r(2, 3, 11), None, [0.45], "linear", False, None),
    ("linear up align", r(2, 3, 5), [12], None, "linear", True, None),
    ("trilinear 7x3x9", r(1, 2, 4, 5, 6), [7, 3, 9], None, "trilinear", False, None),
    ("trilinear scale 1.5 align", r(1, 2, 3, 4, 2), None, [1.5, 1.5, 1.5], "trilinear", True, None),
]


def interp(a, size, sf, mode, al, rc):
    sf = sf[0] if sf and len(sf) == 1 else (list(sf) if sf else None)
    return F.interpolate(a, size=size, scale_factor=sf, mode=mode, align_corners=al, recompute_scale_factor=rc)


for label, xin, size, sf, mode, al, rc in ICASES:
    out = interp(xin, size, sf, mode, al, rc)
    tol = (1e-12, 1e-13) if xin.dtype == F64 else (1e-5, 1e-5)
    case("interpolate " + label, "interpolate", [T(xin), size, FL(sf) if sf else None, mode, al, rc], out, *tol)
    xg = xin.to(F64)[:1, :2]
    gcase("interpolate " + label, "interpolate", [T(xg), size, FL(sf) if sf else None, mode, al, rc],
          interp)
case("interpolate bilinear empty batch", "interpolate", [T(r(0, 2, 3, 4)), [5, 6], None, "bilinear", False, None],
     F.interpolate(r(0, 2, 3, 4), size=[5, 6], mode="bilinear", align_corners=False))

# ---- interpolate antialias=True (bilinear, bicubic): downsampling by sizes and scales, upsampling, align_corners ----
xa = r(2, 3, 17, 12)
ACASES = [  # label, size, scale_factor, mode, align_corners
    ("bilinear down 5x4", [5, 4], None, "bilinear", False), ("bilinear down 5x4 align", [5, 4], None, "bilinear", True),
    ("bilinear scale 0.3 x 0.55", None, [0.3, 0.55], "bilinear", False), ("bilinear up 21x7", [21, 7], None, "bilinear", False),
    ("bicubic down 6x3", [6, 3], None, "bicubic", False), ("bicubic down 6x3 align", [6, 3], None, "bicubic", True),
    ("bicubic scale 0.45", None, [0.45, 0.45], "bicubic", False), ("bicubic up 20x25", [20, 25], None, "bicubic", False),
]
for label, size, sf, mode, al in ACASES:
    out = F.interpolate(xa, size=size, scale_factor=sf, mode=mode, align_corners=al, antialias=True)
    case("interpolate antialias " + label, "interpolate", [T(xa), size, FL(sf) if sf else None, mode, al, None, True],
         out, 1e-5, 1e-5)
    xg = xa.to(F64)[:1, :2]
    gcase("interpolate antialias " + label, "interpolate", [T(xg), size, FL(sf) if sf else None, mode, al, None, True],
          lambda a, s_, f_, m_, al_, rc_, aa_: F.interpolate(a, size=s_, scale_factor=(list(f_) if f_ else None),
                                                            mode=m_, align_corners=al_, antialias=aa_))

# ---- unique_consecutive (no dim): NaN runs, -0 and 0, inf, integers, bool, empty ----
uf = torch.tensor([1.0, 1.0, NAN, NAN, -0.0, 0.0, INF, INF, 2.0, 1.0, 1.0])
for inv, cnt in [(True, True), (False, True), (True, False)]:
    case("unique_consecutive f32 NaN -0 inf inverse=%s counts=%s" % (inv, cnt), "unique_consecutive",
         [T(uf), inv, cnt, None], list(torch.ops.aten.unique_consecutive(uf, inv, cnt, None)))
ui = torch.tensor([[3, 3, -1], [-1, -1, 7]], dtype=torch.int8)
case("unique_consecutive int8 2-d", "unique_consecutive", [T(ui), True, True, None],
     list(torch.ops.aten.unique_consecutive(ui, True, True, None)))
ub = torch.tensor([True, True, False, True])
case("unique_consecutive bool", "unique_consecutive", [T(ub), True, True, None],
     list(torch.ops.aten.unique_consecutive(ub, True, True, None)))
ue = torch.zeros(0, 3)
case("unique_consecutive empty", "unique_consecutive", [T(ue), True, True, None],
     list(torch.ops.aten.unique_consecutive(ue, True, True, None)))

# ---- conv1d/2d/3d with padding='same' / 'valid' (even kernels: the odd extra on the right), grads ----
CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
CCASES = [  # label, nsp, input shape, weight shape, bias, stride, padding, dilation, groups
    ("conv1d same even kernel", 1, (2, 3, 9), (4, 3, 4), True, [1], "same", [1], 1),
    ("conv1d same dilation 2", 1, (2, 3, 9), (4, 3, 3), False, [1], "same", [2], 1),
    ("conv1d valid stride 2", 1, (2, 4, 11), (6, 2, 3), True, [2], "valid", [1], 2),
    ("conv1d same unbatched", 1, (3, 7), (2, 3, 2), True, [1], "same", [1], 1),
    ("conv2d same 2x3 dilation 3x1", 2, (2, 2, 7, 6), (3, 2, 2, 3), True, [1, 1], "same", [3, 1], 1),
    ("conv2d same grouped", 2, (1, 4, 5, 5), (4, 2, 4, 4), False, [1, 1], "same", [1, 1], 2),
    ("conv2d valid stride 2x1", 2, (2, 3, 8, 7), (2, 3, 3, 2), True, [2, 1], "valid", [1, 2], 1),
    ("conv3d same 2x3x4", 3, (1, 2, 5, 6, 7), (2, 2, 2, 3, 4), True, [1, 1, 1], "same", [1, 1, 1], 1),
    ("conv3d valid", 3, (2, 2, 4, 5, 6), (3, 2, 2, 2, 3), False, [1, 2, 1], "valid", [1, 1, 1], 1),
]
for label, nsp, xs, ws, hb, st, pd, dl, g in CCASES:
    xc, wc = r(*xs, lo=-1, hi=1), r(*ws, lo=-0.5, hi=0.5)
    bc = r(ws[0], lo=-0.5, hi=0.5) if hb else None
    out = CONV[nsp](xc, wc, bc, st, pd, dl, g)
    op = "conv%dd.padding" % nsp
    case(label, op, [T(xc), T(wc), T(bc) if hb else None, st, pd, dl, g], out, 1e-5, 1e-5)
    xd, wd = xc.to(F64), wc.to(F64)
    bd = bc.to(F64) if hb else None
    gcase(label, op, [T(xd), T(wd), T(bd) if hb else None, st, pd, dl, g],
          lambda a, b, c_, s_, p_, d_, g_, n=nsp: CONV[n](a, b, c_, s_, p_, d_, g_))

# ---- grid_sample: bicubic (4-D) and 5-D (bilinear, nearest), every padding mode, align_corners; grads ----
xg4, gg4 = r(2, 3, 5, 6), r(2, 4, 3, 2, lo=-1.2, hi=1.2)
xg5, gg5 = r(1, 2, 3, 4, 5), r(1, 2, 3, 4, 3, lo=-1.2, hi=1.2)
for xin, gin, mode in [(xg4, gg4, "bicubic"), (xg5, gg5, "bilinear"), (xg5, gg5, "nearest")]:
    for pm in ["zeros", "border", "reflection"]:
        for al in [False, True]:
            label = "grid_sample %d-D %s %s align=%s" % (xin.dim(), mode, pm, al)
            out = F.grid_sample(xin, gin, mode=mode, padding_mode=pm, align_corners=al)
            case(label, "grid_sample", [T(xin), T(gin), mode, pm, al], out, 1e-5, 1e-5)
            if mode != "nearest" or pm == "zeros":
                xd, gd = xin.to(F64)[:1, :2], gin.to(F64)[:1]
                gcase(label, "grid_sample", [T(xd), T(gd), mode, pm, al],
                      lambda a, b, m_, p_, al_: F.grid_sample(a, b, mode=m_, padding_mode=p_, align_corners=al_),
                      1e-9, 1e-11)

if __name__ == "__main__":
    # float[] arguments travel as marker strings through emit, then become REF_FLOATS arrays
    floats = []

    def mark(args):
        out = []
        for a in args:
            if isinstance(a, FL):
                floats.append(list(a))
                out.append("__FLOATS_%d__" % (len(floats) - 1))
            elif isinstance(a, list) and any(e is None for e in a):  # None in a Tensor?[]: a marker tensor
                out.append([T(torch.zeros(0, 0, 0, 0, 0, 0, dtype=torch.int16)) if e is None else e for e in a])
            else:
                out.append(a)
        return out
    cases = [(c[0], c[1], mark(c[2])) + tuple(c[3:]) for c in cases]
    buf = io.StringIO()
    emit(buf, cases, [], pre="sk", arr="sk_ref_cases", garr="sk_ref_grad_cases", script="gen_surface_kernels_ref.py")
    text = buf.getvalue()
    decl = "".join("static const double skfl%d[] = {%s};\n" % (i, ", ".join(repr(float(v)) for v in f))
                   for i, f in enumerate(floats))
    text = re.sub(r'\{REF_STR, 0, 0, \{0\}, NULL, 0, 0, NULL, 0, "__FLOATS_(\d+)__", NULL\}',
                  lambda m: "{REF_FLOATS, 0, 0, {0}, skfl%s, 0, 0, NULL, %d, NULL, NULL}" % (m.group(1), len(floats[int(m.group(1))])),
                  text)
    text = re.sub(r'\{REF_TENSOR, WK_I16, 6, \{0, 0, 0, 0, 0, 0\}, \w+, 0, 0, NULL, 0, NULL, NULL\}',
                  "{REF_NONE, 0, 0, {0}, NULL, 0, 0, NULL, 0, NULL, NULL}", text)
    head, rest = text.split("\n\n", 1) if "\n\n" in text else (text, "")
    sys.stdout.write(head + "\n\n" + decl + rest)
