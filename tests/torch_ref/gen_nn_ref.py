#!/usr/bin/python3
"""Generates tests/torch_ref/nn_ref_data.h: inputs, PyTorch 1.13.1 outputs and gradients for issue 21's
nn and loss surface (core/composite_nn_surface.c), checked by tests/check_torch_ref.c. Run with Debian's
python3-torch:
  /usr/bin/python3 tests/torch_ref/gen_nn_ref.py > tests/torch_ref/nn_ref_data.h
Edge values (NaN, +-inf, -0) where they apply; values from torch's seeded generator (reproducible).
Wick's reductions are ints as in ATen: 0 none, 1 mean, 2 sum."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from gen_ref import T, emit  # noqa: E402

torch.manual_seed(20261204)
cases, grad_cases = [], []
RED = {0: "none", 1: "mean", 2: "sum"}


def r(*shape, dtype=torch.float32, lo=-2.0, hi=2.0):
    return (torch.rand(*shape, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


def case(label, op, args, outs, rtol=1e-5, atol=1e-6):
    if isinstance(outs, torch.Tensor):
        outs = [outs]
    cases.append((label, op, args, [o.detach() for o in outs], rtol, atol))


def gcase(label, op, args, fn, grad_args, rtol=1e-6, atol=1e-9):
    """fn() computes the op in torch from the T arguments' .t; args: Wick's arguments."""
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


def pm1(*shape, dtype=torch.float32):
    return (torch.randint(0, 2, shape) * 2 - 1).to(dtype)


NAN, INF = float("nan"), float("inf")

# ---- elementwise losses: every reduction, broadcasting, edge values, gradients of both inputs ----
x = torch.cat([torch.tensor([NAN, INF, -0.0, 0.5]), r(8)]).reshape(3, 4)
t = torch.cat([torch.tensor([1.0, 2.0, 0.0, -INF]), r(8)]).reshape(3, 4)
for red in (0, 1, 2):
    case("l1_loss edges red=%d" % red, "l1_loss", [T(x), T(t), red], F.l1_loss(x, t, reduction=RED[red]))
    case("smooth_l1_loss beta=0.5 red=%d" % red, "smooth_l1_loss", [T(x), T(t), red, 0.5],
         F.smooth_l1_loss(x, t, reduction=RED[red], beta=0.5))
    case("huber_loss delta=1.5 red=%d" % red, "huber_loss", [T(x), T(t), red, 1.5],
         F.huber_loss(x, t, reduction=RED[red], delta=1.5))
    case("soft_margin_loss red=%d" % red, "soft_margin_loss", [T(x), T(t), red],
         F.soft_margin_loss(x, t, reduction=RED[red]))
case("smooth_l1_loss beta=0 (l1)", "smooth_l1_loss", [T(x), T(t), 0, 0.0], F.smooth_l1_loss(x, t, reduction="none", beta=0.0))
xd, td = r(2, 5, dtype=torch.float64), r(2, 5, dtype=torch.float64)
case("smooth_l1_loss f64 default", "smooth_l1_loss", [T(xd), T(td), 1, 1.0], F.smooth_l1_loss(xd, td), rtol=1e-12, atol=1e-14)
xb, tb = r(3, 1, 4), r(4)
with_warn = {"l1_loss": F.l1_loss, "smooth_l1_loss": F.smooth_l1_loss, "huber_loss": F.huber_loss}
import warnings  # noqa: E402
warnings.simplefilter("ignore")
for name, fn in with_warn.items():
    extra = [] if name == "l1_loss" else [1.0]
    case(name + " broadcast", name, [T(xb), T(tb), 0] + extra, fn(xb, tb, reduction="none"))
for name, fn, extra in [("l1_loss", lambda a, b: F.l1_loss(a, b, reduction="sum"), []),
                        ("smooth_l1_loss", lambda a, b: F.smooth_l1_loss(a, b, reduction="sum", beta=0.7), [0.7]),
                        ("huber_loss", lambda a, b: F.huber_loss(a, b, reduction="sum", delta=0.6), [0.6]),
                        ("soft_margin_loss", lambda a, b: F.soft_margin_loss(a, b, reduction="sum"), [])]:
    a, b = T(r(3, 4, dtype=torch.float64)), T(r(3, 4, dtype=torch.float64))
    # soft_margin_loss has no derivative for its target in PyTorch (Wick's composite detaches it too)
    gcase(name + " grad", name, [a, b, 2] + extra, lambda: fn(a.t, b.t), [0] if name == "soft_margin_loss" else [0, 1])

# ---- kl_div (log_target both ways; zeros in the target) ----
lp = torch.log_softmax(r(3, 5), 1)
q = torch.softmax(r(3, 5), 1)
q[0, 1] = 0.0
for red in (0, 1, 2):
    case("kl_div red=%d" % red, "kl_div", [T(lp), T(q), red, False], F.kl_div(lp, q, reduction=RED[red]))
    case("kl_div log_target red=%d" % red, "kl_div", [T(lp), T(q.clamp_min(1e-3).log()), red, True],
         F.kl_div(lp, q.clamp_min(1e-3).log(), reduction=RED[red], log_target=True))
a, b = T(torch.log_softmax(r(2, 4, dtype=torch.float64), 1)), T(torch.softmax(r(2, 4, dtype=torch.float64), 1))
gcase("kl_div grad", "kl_div", [a, b, 2, False], lambda: F.kl_div(a.t, b.t, reduction="sum"), [0, 1])
a, b = T(torch.log_softmax(r(2, 4, dtype=torch.float64), 1)), T(r(2, 4, dtype=torch.float64, lo=-3, hi=0))
gcase("kl_div log_target grad", "kl_div", [a, b, 1, True], lambda: F.kl_div(a.t, b.t, reduction="mean", log_target=True), [0, 1])

# ---- binary_cross_entropy: the -100 log clamp at 0 and 1, weight, gradients ----
p = torch.cat([torch.tensor([0.0, 1.0, 1e-30, 0.5]), r(8, lo=0.01, hi=0.99)]).reshape(3, 4)
y = torch.cat([torch.tensor([1.0, 0.0, 1.0, 0.5]), r(8, lo=0, hi=1)]).reshape(3, 4)
w = r(4, lo=0.5, hi=2)
for red in (0, 1, 2):
    case("binary_cross_entropy red=%d" % red, "binary_cross_entropy", [T(p), T(y), None, red],
         F.binary_cross_entropy(p, y, reduction=RED[red]))
case("binary_cross_entropy weight", "binary_cross_entropy", [T(p), T(y), T(w), 1], F.binary_cross_entropy(p, y, w))
a, b = T(r(3, 4, dtype=torch.float64, lo=0.05, hi=0.95)), T(r(3, 4, dtype=torch.float64, lo=0, hi=1))
wd = r(4, dtype=torch.float64, lo=0.5, hi=2)
gcase("binary_cross_entropy grad", "binary_cross_entropy", [a, b, T(wd), 1],
      lambda: F.binary_cross_entropy(a.t, b.t, wd), [0, 1])

# ---- poisson_nll_loss / gaussian_nll_loss ----
li, cnt = r(3, 4, lo=-1, hi=1.5), torch.randint(0, 6, (3, 4)).float()
pr = r(3, 4, lo=0.0, hi=3)
for log_input in (True, False):
    for full in (False, True):
        inp = li if log_input else pr
        case("poisson_nll_loss log_input=%s full=%s" % (log_input, full), "poisson_nll_loss",
             [T(inp), T(cnt), log_input, full, 1e-8, 0], F.poisson_nll_loss(inp, cnt, log_input, full, reduction="none"))
case("poisson_nll_loss mean eps", "poisson_nll_loss", [T(pr), T(cnt), False, True, 0.1, 1],
     F.poisson_nll_loss(pr, cnt, False, True, eps=0.1))
a, b = T(r(3, 4, dtype=torch.float64, lo=-1, hi=1)), T(r(3, 4, dtype=torch.float64, lo=0, hi=4))
gcase("poisson_nll_loss grad full", "poisson_nll_loss", [a, b, True, True, 1e-8, 2],
      lambda: F.poisson_nll_loss(a.t, b.t, True, True, reduction="sum"), [0, 1])
gi, gt = r(4, 3), r(4, 3)
for label, var in [("same shape", r(4, 3, lo=0.1, hi=2)), ("no last dim", r(4, lo=0.1, hi=2)),
                   ("last dim 1", r(4, 1, lo=0.1, hi=2)), ("clamped at eps", torch.tensor([0.0, 1e-9, 0.5, 2.0]))]:
    for full, red in [(False, 0), (True, 1), (False, 2)]:
        case("gaussian_nll_loss %s full=%s red=%d" % (label, full, red), "gaussian_nll_loss",
             [T(gi), T(gt), T(var), full, 1e-6, red], F.gaussian_nll_loss(gi, gt, var, full, 1e-6, RED[red]))
a, b, v = T(r(4, 3, dtype=torch.float64)), T(r(4, 3, dtype=torch.float64)), T(r(4, 1, dtype=torch.float64, lo=0.2, hi=2))
gcase("gaussian_nll_loss grad", "gaussian_nll_loss", [a, b, v, True, 1e-6, 1],
      lambda: F.gaussian_nll_loss(a.t, b.t, v.t, True), [0, 1, 2])
vz = torch.tensor([[1e-9], [0.5], [1.0], [2.0]], dtype=torch.float64)
a, v = T(r(4, 3, dtype=torch.float64)), T(vz)
gcase("gaussian_nll_loss grad through the eps clamp", "gaussian_nll_loss", [a, T(gt.double()), v, False, 1e-6, 1],
      lambda: F.gaussian_nll_loss(a.t, gt.double(), v.t), [0, 2], rtol=1e-6, atol=1e-6)

# ---- ranking and embedding losses ----
x1, x2, yt = r(5), r(5), pm1(5)
for red in (0, 1, 2):
    case("margin_ranking_loss red=%d" % red, "margin_ranking_loss", [T(x1), T(x2), T(yt), 0.3, red],
         F.margin_ranking_loss(x1, x2, yt, 0.3, reduction=RED[red]))
a, b = T(r(6, dtype=torch.float64)), T(r(6, dtype=torch.float64))
ytd = pm1(6, dtype=torch.float64)
gcase("margin_ranking_loss grad", "margin_ranking_loss", [a, b, T(ytd), 0.2, 2],
      lambda: F.margin_ranking_loss(a.t, b.t, ytd, 0.2, reduction="sum"), [0, 1])
hx = torch.cat([torch.tensor([NAN, 2.0, -0.0]), r(9)]).reshape(3, 4)
ht = pm1(3, 4)
for red in (0, 1, 2):
    case("hinge_embedding_loss red=%d" % red, "hinge_embedding_loss", [T(hx), T(ht), 1.0, red],
         F.hinge_embedding_loss(hx, ht, 1.0, reduction=RED[red]))
case("hinge_embedding_loss int64 target margin 0.5", "hinge_embedding_loss", [T(hx), T(ht.long()), 0.5, 0],
     F.hinge_embedding_loss(hx, ht.long(), 0.5, reduction="none"))
a = T(r(3, 4, dtype=torch.float64))
gcase("hinge_embedding_loss grad", "hinge_embedding_loss", [a, T(ht.double()), 1.0, 1],
      lambda: F.hinge_embedding_loss(a.t, ht.double(), 1.0), [0])
e1, e2, et = r(4, 6), r(4, 6), pm1(4).long()
e2[1] = e1[1]  # cos = 1
for red in (0, 1, 2):
    case("cosine_embedding_loss red=%d" % red, "cosine_embedding_loss", [T(e1), T(e2), T(et), 0.2, red],
         F.cosine_embedding_loss(e1, e2, et, 0.2, reduction=RED[red]))
case("cosine_embedding_loss 1-d", "cosine_embedding_loss", [T(e1[0]), T(e2[0]), T(torch.tensor(-1)), 0.0, 0],
     F.cosine_embedding_loss(e1[0], e2[0], torch.tensor(-1), reduction="none"))
a, b = T(r(4, 6, dtype=torch.float64)), T(r(4, 6, dtype=torch.float64))
gcase("cosine_embedding_loss grad", "cosine_embedding_loss", [a, b, T(et), -0.5, 2],
      lambda: F.cosine_embedding_loss(a.t, b.t, et, -0.5, reduction="sum"), [0, 1])
an, po, ne = r(4, 5), r(4, 5), r(4, 5)
for p_, swap, red in [(2.0, False, 1), (1.0, True, 0), (3.0, False, 2), (2.0, True, 1)]:
    case("triplet_margin_loss p=%g swap=%s red=%d" % (p_, swap, red), "triplet_margin_loss",
         [T(an), T(po), T(ne), 1.0, p_, 1e-6, swap, red],
         F.triplet_margin_loss(an, po, ne, 1.0, p_, 1e-6, swap, reduction=RED[red]))
a, b, c_ = (T(r(4, 5, dtype=torch.float64)) for _ in range(3))
gcase("triplet_margin_loss grad swap", "triplet_margin_loss", [a, b, c_, 2.0, 2.0, 1e-6, True, 2],
      lambda: F.triplet_margin_loss(a.t, b.t, c_.t, 2.0, 2.0, 1e-6, True, reduction="sum"), [0, 1, 2])

# ---- multi-label and multi-class margin losses ----
mx, my = r(3, 5), torch.randint(0, 2, (3, 5)).float()
mw = r(5, lo=0.5, hi=2)
for red in (0, 1, 2):
    case("multilabel_soft_margin_loss red=%d" % red, "multilabel_soft_margin_loss", [T(mx), T(my), None, red],
         F.multilabel_soft_margin_loss(mx, my, reduction=RED[red]))
case("multilabel_soft_margin_loss weight", "multilabel_soft_margin_loss", [T(mx), T(my), T(mw), 1],
     F.multilabel_soft_margin_loss(mx, my, mw))
a = T(r(3, 5, dtype=torch.float64))
gcase("multilabel_soft_margin_loss grad", "multilabel_soft_margin_loss", [a, T(my.double()), T(mw.double()), 1],
      lambda: F.multilabel_soft_margin_loss(a.t, my.double(), mw.double()), [0])
cx, cy = r(4, 5), torch.tensor([0, 4, 2, 2])
for p_, m_, red in [(1, 1.0, 0), (2, 0.5, 1), (1, 2.0, 2)]:
    case("multi_margin_loss p=%d margin=%g red=%d" % (p_, m_, red), "multi_margin_loss", [T(cx), T(cy), p_, m_, None, red],
         F.multi_margin_loss(cx, cy, p_, m_, reduction=RED[red]))
case("multi_margin_loss weight", "multi_margin_loss", [T(cx), T(cy), 1, 1.0, T(mw), 0],
     F.multi_margin_loss(cx, cy, 1, 1.0, mw, reduction="none"))
case("multi_margin_loss 1-d input", "multi_margin_loss", [T(cx[0]), T(cy[:1]), 1, 1.0, None, 0],
     F.multi_margin_loss(cx[0], cy[:1], reduction="none"))
a = T(r(4, 5, dtype=torch.float64))
gcase("multi_margin_loss grad p=2 weight", "multi_margin_loss", [a, T(cy), 2, 1.0, T(mw.double()), 1],
      lambda: F.multi_margin_loss(a.t, cy, 2, 1.0, mw.double()), [0])

# ---- distances ----
s1, s2 = r(3, 4), r(3, 4)
s2[1] = 0.0
case("cosine_similarity dim 1 (a zero row)", "cosine_similarity", [T(s1), T(s2), 1, 1e-8], F.cosine_similarity(s1, s2, 1))
sb1, sb2 = r(2, 3, 4), r(3, 1)
case("cosine_similarity broadcast dim -2", "cosine_similarity", [T(sb1), T(sb2), -2, 1e-8], F.cosine_similarity(sb1, sb2, -2))
a, b = T(r(3, 4, dtype=torch.float64)), T(r(3, 4, dtype=torch.float64))
gcase("cosine_similarity grad", "cosine_similarity", [a, b, 0, 1e-8], lambda: F.cosine_similarity(a.t, b.t, 0), [0, 1])
for p_, keep in [(2.0, False), (1.0, True), (3.0, False), (0.0, False), (INF, True)]:
    case("pairwise_distance p=%g keepdim=%s" % (p_, keep), "pairwise_distance", [T(s1), T(s2), p_, 1e-6, keep],
         F.pairwise_distance(s1, s2, p_, 1e-6, keep))
case("pairwise_distance 1-d", "pairwise_distance", [T(s1[0]), T(s2[0]), 2.0, 1e-6, False], F.pairwise_distance(s1[0], s2[0]))
a, b = T(r(3, 4, dtype=torch.float64)), T(r(3, 4, dtype=torch.float64))
gcase("pairwise_distance grad", "pairwise_distance", [a, b, 2.0, 1e-6, False], lambda: F.pairwise_distance(a.t, b.t), [0, 1])
c1, c2 = r(2, 5, 3), r(1, 4, 3)
c2[0, 0] = c1[1, 2]  # a zero distance
for p_ in (2.0, 1.0, 0.0, INF, 3.0):
    case("cdist p=%g" % p_, "cdist", [T(c1), T(c2), p_, None], torch.cdist(c1, c2, p_), rtol=1e-5, atol=1e-5)
case("cdist 2-d", "cdist", [T(c1[0]), T(c2[0]), 2.0, None], torch.cdist(c1[0], c2[0]))
a, b = T(r(5, 3, dtype=torch.float64)), T(r(4, 3, dtype=torch.float64))
gcase("cdist grad p=2", "cdist", [a, b, 2.0, None], lambda: torch.cdist(a.t, b.t), [0, 1])
gcase("cdist grad p=1", "cdist", [a, b, 1.0, None], lambda: torch.cdist(a.t, b.t, 1.0), [0, 1])

# ---- interpolate: every mode, size and scale_factor, align_corners, float32 and float64 ----
class FL(list):
    """A float[] argument (emitted as REF_FLOATS by the post-processing below)."""


x1, x2, x3 = r(2, 3, 5), r(1, 2, 4, 5), r(1, 2, 3, 4, 3)
x2d = r(1, 2, 4, 5, dtype=torch.float64)
ICASES = [  # label, input, size, scale_factor, mode, align_corners
    ("nearest 1-d size", x1, [8], None, "nearest", None), ("nearest 1-d size down", x1, [3], None, "nearest", None),
    ("nearest 2-d x2", x2, None, [2.0, 2.0], "nearest", None), ("nearest 2-d 1.7 x 0.6", x2, None, [1.7, 0.6], "nearest", None),
    ("nearest 2-d size 7x3", x2, [7, 3], None, "nearest", None), ("nearest 3-d", x3, [5, 6, 2], None, "nearest", None),
    ("nearest-exact 2-d", x2, [7, 9], None, "nearest-exact", None), ("nearest-exact 1-d scale 1.5", x1, None, [1.5], "nearest-exact", None),
    ("linear size", x1, [9], None, "linear", False), ("linear align_corners", x1, [9], None, "linear", True),
    ("linear down", x1, [3], None, "linear", False), ("linear scale 2.5", x1, None, [2.5], "linear", False),
    ("bilinear size", x2, [7, 9], None, "bilinear", False), ("bilinear align_corners", x2, [7, 9], None, "bilinear", True),
    ("bilinear scale 1.5 x 0.7", x2, None, [1.5, 0.7], "bilinear", False), ("bilinear same size", x2, [4, 5], None, "bilinear", False),
    ("bilinear f64 down", x2d, [3, 2], None, "bilinear", False),
    ("bicubic size", x2, [7, 9], None, "bicubic", False), ("bicubic align_corners", x2, [6, 8], None, "bicubic", True),
    ("bicubic scale 2", x2, None, [2.0, 2.0], "bicubic", False), ("bicubic f64 down", x2d, [3, 3], None, "bicubic", False),
    ("trilinear size", x3, [5, 6, 4], None, "trilinear", False), ("trilinear align_corners", x3, [5, 6, 4], None, "trilinear", True),
    ("area 2-d", x2, [3, 2], None, "area", None), ("area 1-d up", x1, [7], None, "area", None), ("area 3-d", x3, [2, 3, 2], None, "area", None),
]
for label, xin, size, sf, mode, al in ICASES:
    out = F.interpolate(xin, size=size, scale_factor=sf, mode=mode, align_corners=al)
    tol = (1e-12, 1e-13) if xin.dtype == torch.float64 else (1e-5, 1e-5)
    case("interpolate " + label, "interpolate", [T(xin), size, FL(sf) if sf else None, mode, al, None], out, *tol)
case("interpolate nearest recompute_scale_factor", "interpolate", [T(x2), None, FL([1.7, 0.6]), "nearest", None, True],
     F.interpolate(x2, scale_factor=[1.7, 0.6], recompute_scale_factor=True))
case("interpolate bilinear NaN", "interpolate", [T(torch.tensor([[[[1.0, NAN], [2.0, 3.0]]]])), [3, 3], None, "bilinear", False, None],
     F.interpolate(torch.tensor([[[[1.0, NAN], [2.0, 3.0]]]]), size=[3, 3], mode="bilinear", align_corners=False))
for label, size, mode, al in [("bilinear", [7, 3], "bilinear", False), ("bicubic align", [5, 7], "bicubic", True),
                              ("nearest", [7, 9], "nearest", None), ("area", [3, 2], "area", None)]:
    a = T(r(1, 2, 4, 5, dtype=torch.float64))
    gcase("interpolate grad " + label, "interpolate", [a, size, None, mode, al, None],
          lambda: F.interpolate(a.t, size=size, mode=mode, align_corners=al), [0])

# ---- pools in 1 and 3 dims, adaptive max pools ----
p1, p3 = r(2, 3, 9), r(1, 2, 5, 6, 7)
for k, s_, pd, ceil, cip in [(3, 2, 1, False, True), (3, 2, 1, True, False), (2, [], 0, False, True), (4, 3, 2, True, True)]:
    st = s_ if s_ != [] else None
    case("avg_pool1d k%d s%s p%d ceil=%s cip=%s" % (k, s_, pd, ceil, cip), "avg_pool1d", [T(p1), [k], [s_] if s_ != [] else [], [pd], ceil, cip],
         F.avg_pool1d(p1, k, st, pd, ceil, cip))
for k, s_, pd, ceil, cip, dv in [([2, 3, 3], [2, 2, 1], [1, 1, 0], False, True, None), ([3, 2, 3], [1, 2, 2], [1, 0, 1], True, False, None),
                                 ([2, 2, 2], [], [0, 0, 0], False, True, 3)]:
    case("avg_pool3d k%s ceil=%s cip=%s div=%s" % (k, ceil, cip, dv), "avg_pool3d", [T(p3), k, s_, pd, ceil, cip, dv],
         F.avg_pool3d(p3, k, s_ if s_ else None, pd, ceil, cip, dv))
case("adaptive_avg_pool1d 4", "adaptive_avg_pool1d", [T(p1), [4]], F.adaptive_avg_pool1d(p1, 4))
case("adaptive_avg_pool1d 12 (up)", "adaptive_avg_pool1d", [T(p1), [12]], F.adaptive_avg_pool1d(p1, 12))
case("adaptive_avg_pool3d 3x4x5", "adaptive_avg_pool3d", [T(p3), [3, 4, 5]], F.adaptive_avg_pool3d(p3, [3, 4, 5]))
for k, s_, pd, dl, ceil in [(3, 2, 1, 1, False), (3, 2, 1, 2, True), (2, [], 0, 1, False)]:
    v, i = F.max_pool1d(p1, k, s_ if s_ != [] else None, pd, dl, ceil, return_indices=True)
    case("max_pool1d k%d s%s p%d d%d ceil=%s" % (k, s_, pd, dl, ceil), "max_pool1d_with_indices",
         [T(p1), [k], [s_] if s_ != [] else [], [pd], [dl], ceil], [v, i])
for k, s_, pd, dl, ceil in [([2, 3, 3], [2, 2, 1], [1, 1, 0], [1, 1, 2], False), ([3, 2, 2], [2, 1, 2], [1, 1, 1], [1, 2, 1], True)]:
    v, i = F.max_pool3d(p3, k, s_, pd, dl, ceil, return_indices=True)
    case("max_pool3d k%s d%s ceil=%s" % (k, dl, ceil), "max_pool3d_with_indices", [T(p3), k, s_, pd, dl, ceil], [v, i])
for fn, op, inp, os_ in [(F.adaptive_max_pool1d, "adaptive_max_pool1d", p1, [4]), (F.adaptive_max_pool1d, "adaptive_max_pool1d", p1, [13]),
                         (F.adaptive_max_pool2d, "adaptive_max_pool2d", r(2, 3, 7, 5), [3, 2]),
                         (F.adaptive_max_pool2d, "adaptive_max_pool2d", r(3, 7, 5), [4, 5]),
                         (F.adaptive_max_pool3d, "adaptive_max_pool3d", p3, [2, 4, 3])]:
    v, i = fn(inp, os_, return_indices=True)
    case("%s %s" % (op, os_), op, [T(inp), os_], [v, i])
a = T(r(2, 3, 9, dtype=torch.float64))
gcase("avg_pool1d grad cip=False ceil", "avg_pool1d", [a, [3], [2], [1], True, False], lambda: F.avg_pool1d(a.t, 3, 2, 1, True, False), [0])
gcase("max_pool1d grad", "max_pool1d_with_indices", [a, [3], [2], [1], [1], False], lambda: F.max_pool1d(a.t, 3, 2, 1), [0])
gcase("adaptive_max_pool1d grad", "adaptive_max_pool1d", [a, [4]], lambda: F.adaptive_max_pool1d(a.t, 4), [0])
b3 = T(r(1, 2, 4, 5, 4, dtype=torch.float64))
gcase("avg_pool3d grad", "avg_pool3d", [b3, [2, 3, 2], [1, 2, 2], [1, 1, 0], False, True, None],
      lambda: F.avg_pool3d(b3.t, [2, 3, 2], [1, 2, 2], [1, 1, 0]), [0])
gcase("adaptive_avg_pool3d grad", "adaptive_avg_pool3d", [b3, [3, 2, 3]], lambda: F.adaptive_avg_pool3d(b3.t, [3, 2, 3]), [0])
gcase("adaptive_max_pool3d grad", "adaptive_max_pool3d", [b3, [3, 2, 3]], lambda: F.adaptive_max_pool3d(b3.t, [3, 2, 3]), [0])

# ---- convolutions ----
cx1, cw1, cb1 = r(2, 4, 9), r(6, 2, 3), r(6)
case("conv1d groups 2 stride 2 pad 1 dil 2", "conv1d", [T(cx1), T(cw1), T(cb1), [2], [1], [2], 2], F.conv1d(cx1, cw1, cb1, 2, 1, 2, 2))
case("conv1d unbatched no bias", "conv1d", [T(cx1[0]), T(cw1[:, :, :]), None, [1], [0], [1], 2], F.conv1d(cx1[0], cw1, None, 1, 0, 1, 2))
cx3, cw3, cb3 = r(2, 4, 5, 6, 5), r(6, 2, 3, 2, 3), r(6)
case("conv3d groups 2 stride (2,1,2) pad (1,0,1) dil (1,2,1)", "conv3d", [T(cx3), T(cw3), T(cb3), [2, 1, 2], [1, 0, 1], [1, 2, 1], 2],
     F.conv3d(cx3, cw3, cb3, [2, 1, 2], [1, 0, 1], [1, 2, 1], 2), 1e-4, 1e-5)
case("conv3d unbatched", "conv3d", [T(cx3[1]), T(cw3[:3].repeat(1, 2, 1, 1, 1)), None, [1], [1], [1], 1],
     F.conv3d(cx3[1], cw3[:3].repeat(1, 2, 1, 1, 1), None, 1, 1), 1e-4, 1e-5)
tw1 = r(4, 3, 3)
tb1 = r(6)
case("conv_transpose1d stride 2 pad 1 out_pad 1 groups 2", "conv_transpose1d", [T(cx1), T(tw1), T(tb1), [2], [1], [1], 2, [1]],
     F.conv_transpose1d(cx1, tw1, tb1, 2, 1, 1, 2, 1))
tx2, tw2 = r(2, 4, 5, 6), r(4, 3, 3, 2)
case("conv_transpose2d stride (2,3) pad (1,0) out_pad (1,2) dil (1,2)", "conv_transpose2d",
     [T(tx2), T(tw2), None, [2, 3], [1, 0], [1, 2], 1, [1, 2]], F.conv_transpose2d(tx2, tw2, None, [2, 3], [1, 0], [1, 2], 1, [1, 2]), 1e-4, 1e-5)
case("conv_transpose2d pad > dil (k - 1) (cropping)", "conv_transpose2d", [T(tx2), T(tw2), None, [1], [2], [0], 1, [1]],
     F.conv_transpose2d(tx2, tw2, None, 1, 2), 1e-4, 1e-5)
tx3, tw3 = r(1, 2, 3, 4, 3), r(2, 3, 2, 3, 2)
tb3 = r(6)
case("conv_transpose3d groups 2 stride 2", "conv_transpose3d", [T(tx3), T(tw3), T(tb3), [2], [1], [1], 2, [1]],
     F.conv_transpose3d(tx3, tw3, tb3, 2, 1, 1, 2, 1), 1e-4, 1e-5)
a, w_, b_ = T(r(2, 4, 7, dtype=torch.float64)), T(r(6, 2, 3, dtype=torch.float64)), T(r(6, dtype=torch.float64))
gcase("conv1d grad", "conv1d", [a, w_, b_, [2], [1], [1], 2], lambda: F.conv1d(a.t, w_.t, b_.t, 2, 1, 1, 2), [0, 1, 2])
a, w_ = T(r(1, 2, 4, 4, 3, dtype=torch.float64)), T(r(3, 2, 2, 3, 2, dtype=torch.float64))
gcase("conv3d grad", "conv3d", [a, w_, None, [1, 2, 1], [1, 1, 0], [1], 1], lambda: F.conv3d(a.t, w_.t, None, [1, 2, 1], [1, 1, 0]), [0, 1])
a, w_ = T(r(1, 4, 3, 4, dtype=torch.float64)), T(r(4, 2, 3, 3, dtype=torch.float64))
gcase("conv_transpose2d grad", "conv_transpose2d", [a, w_, None, [2], [1], [1], 2, [1]],
      lambda: F.conv_transpose2d(a.t, w_.t, None, 2, 1, 1, 2), [0, 1])

# ---- shuffles and normalizations ----
ps = r(2, 8, 2, 3)
case("pixel_shuffle 2", "pixel_shuffle", [T(ps), 2], F.pixel_shuffle(ps, 2))
pu = r(1, 3, 4, 6)
case("pixel_unshuffle 2", "pixel_unshuffle", [T(pu), 2], F.pixel_unshuffle(pu, 2))
case("channel_shuffle 4", "channel_shuffle", [T(ps), 4], torch.channel_shuffle(ps, 4))
gx, gw, gb = r(3, 6, 4, 2), r(6), r(6)
case("group_norm 3 groups affine", "group_norm", [T(gx), 3, T(gw), T(gb), 1e-5], F.group_norm(gx, 3, gw, gb))
case("group_norm 1 group no affine 2-d", "group_norm", [T(gx[:, :, 0, 0]), 1, None, None, 1e-3], F.group_norm(gx[:, :, 0, 0], 1, eps=1e-3))
rm, rv = r(6), r(6, lo=0.5, hi=2)
case("instance_norm input stats affine", "instance_norm", [T(gx), T(gw), T(gb), T(rm.clone()), T(rv.clone()), True, 0.1, 1e-5],
     F.instance_norm(gx, rm.clone(), rv.clone(), gw, gb, True, 0.1, 1e-5))
case("instance_norm running stats", "instance_norm", [T(gx), None, None, T(rm), T(rv), False, 0.1, 1e-5],
     F.instance_norm(gx, rm, rv, None, None, False, 0.1, 1e-5))
lx = r(2, 7, 3, 2)
case("local_response_norm size 3", "local_response_norm", [T(lx), 3, 1e-2, 0.75, 1.0], F.local_response_norm(lx, 3, 1e-2, 0.75, 1.0))
case("local_response_norm size 4 3-d", "local_response_norm", [T(lx[:, :, :, 0]), 4, 0.5, 0.6, 2.0], F.local_response_norm(lx[:, :, :, 0], 4, 0.5, 0.6, 2.0))
a, w_, b_ = T(r(2, 6, 3, dtype=torch.float64)), T(r(6, dtype=torch.float64)), T(r(6, dtype=torch.float64))
gcase("group_norm grad", "group_norm", [a, 2, w_, b_, 1e-5], lambda: F.group_norm(a.t, 2, w_.t, b_.t), [0, 2, 3])
gcase("instance_norm grad", "instance_norm", [a, w_, b_, None, None, True, 0.1, 1e-5],
      lambda: F.instance_norm(a.t, None, None, w_.t, b_.t), [0, 1, 2])
gcase("local_response_norm grad", "local_response_norm", [a, 3, 0.1, 0.75, 1.0], lambda: F.local_response_norm(a.t, 3, 0.1, 0.75, 1.0), [0])
dx = r(2, 3, 4)
for name in ("alpha_dropout", "feature_dropout", "feature_alpha_dropout"):
    case(name + " eval is the identity", name, [T(dx), 0.5, False], dx)

# ---- unfold/fold (im2col/col2im), lp pools, max_unpool2d ----
ux = r(2, 3, 6, 7)
for k, d, pd, st in [([2, 3], [1, 1], [0, 1], [1, 2]), ([3, 2], [2, 1], [1, 0], [2, 1]), ([1, 1], [1, 1], [0, 0], [1, 1])]:
    case("im2col k%s d%s p%s s%s" % (k, d, pd, st), "im2col", [T(ux), k, d, pd, st], F.unfold(ux, k, d, pd, st))
    cols = F.unfold(ux, k, d, pd, st)
    case("col2im k%s d%s p%s s%s" % (k, d, pd, st), "col2im", [T(cols), [6, 7], k, d, pd, st], F.fold(cols, [6, 7], k, d, pd, st))
case("im2col unbatched", "im2col", [T(ux[0]), [2, 2], [1, 1], [1, 1], [2, 2]], F.unfold(ux[0], 2, 1, 1, 2))
a = T(r(1, 2, 5, 4, dtype=torch.float64))
gcase("im2col grad", "im2col", [a, [2, 3], [1, 1], [1, 0], [2, 1]], lambda: F.unfold(a.t, [2, 3], 1, [1, 0], [2, 1]), [0])
b = T(r(1, 12, 6, dtype=torch.float64))
gcase("col2im grad", "col2im", [b, [4, 5], [2, 3], [1, 1], [0, 1], [2, 2]], lambda: F.fold(b.t, [4, 5], [2, 3], 1, [0, 1], [2, 2]), [0])
lx = r(2, 3, 7, 8, lo=0.1, hi=2)
case("lp_pool2d p=2 k3 s2", "lp_pool2d", [T(lx), 2.0, [3], [2], False], F.lp_pool2d(lx, 2.0, 3, 2))
case("lp_pool2d p=3 k(2,3) ceil", "lp_pool2d", [T(lx), 3.0, [2, 3], [], True], F.lp_pool2d(lx, 3.0, (2, 3), ceil_mode=True))
case("lp_pool1d p=1.5 k2", "lp_pool1d", [T(lx[0]), 1.5, [2], [], False], F.lp_pool1d(lx[0], 1.5, 2))
a = T(r(1, 2, 5, 6, lo=0.2, hi=2, dtype=torch.float64))
gcase("lp_pool2d grad", "lp_pool2d", [a, 2.0, [2], [2], False], lambda: F.lp_pool2d(a.t, 2.0, 2, 2), [0])
mv, mi = F.max_pool2d(r(2, 3, 6, 6), 2, return_indices=True)
case("max_unpool2d", "max_unpool2d", [T(mv), T(mi), [6, 6]], F.max_unpool2d(mv, mi, 2, output_size=[6, 6]))
case("max_unpool2d 7x7 unbatched", "max_unpool2d", [T(mv[0]), T(mi[0]), [7, 7]], F.max_unpool2d(mv[0], mi[0], 2, output_size=[7, 7]))
a = T(mv.double())
gcase("max_unpool2d grad", "max_unpool2d", [a, T(mi), [6, 6]], lambda: F.max_unpool2d(a.t, mi, 2, output_size=[6, 6]), [0])

# ---- affine_grid, grid_sample ----
th = r(2, 2, 3, lo=-1, hi=1)
th3 = r(1, 3, 4, lo=-1, hi=1)
for al in (False, True):
    case("affine_grid 2-d align=%s" % al, "affine_grid", [T(th), [2, 3, 4, 5], al], F.affine_grid(th, [2, 3, 4, 5], al))
    case("affine_grid 3-d align=%s" % al, "affine_grid", [T(th3), [1, 2, 3, 4, 2], al], F.affine_grid(th3, [1, 2, 3, 4, 2], al))
gin = r(2, 3, 5, 6)
gg = r(2, 4, 3, 2, lo=-1.3, hi=1.3)
for mode in ("bilinear", "nearest"):
    for pad in ("zeros", "border", "reflection"):
        for al in (False, True):
            case("grid_sample %s %s align=%s" % (mode, pad, al), "grid_sample", [T(gin), T(gg), mode, pad, al],
                 F.grid_sample(gin, gg, mode, pad, al))
a, gr = T(r(1, 2, 4, 5, dtype=torch.float64)), T(r(1, 3, 3, 2, lo=-1.2, hi=1.2, dtype=torch.float64))
for pad in ("zeros", "border", "reflection"):
    gcase("grid_sample grad bilinear %s" % pad, "grid_sample", [a, gr, "bilinear", pad, False],
          lambda: F.grid_sample(a.t, gr.t, "bilinear", pad, False), [0, 1])
tg = T(r(2, 2, 3, dtype=torch.float64))
gcase("affine_grid grad", "affine_grid", [tg, [2, 1, 3, 4], False], lambda: F.affine_grid(tg.t, [2, 1, 3, 4], False), [0])

# ---- embedding_bag (sum, mean; offsets, include_last_offset, per_sample_weights, padding_idx, 2-d input) ----
ew = r(10, 4)
ei = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9, 0])
eo = torch.tensor([0, 3, 3, 7])
for mode, m in (("sum", 0), ("mean", 1)):
    case("embedding_bag %s offsets (an empty bag)" % mode, "embedding_bag", [T(ew), T(ei), T(eo), m, None, False, None],
         F.embedding_bag(ei, ew, eo, mode=mode))
    case("embedding_bag %s padding_idx 4" % mode, "embedding_bag", [T(ew), T(ei), T(eo), m, None, False, 4],
         F.embedding_bag(ei, ew, eo, mode=mode, padding_idx=4))
    case("embedding_bag %s 2-d" % mode, "embedding_bag", [T(ew), T(ei[:8].reshape(2, 4)), None, m, None, False, None],
         F.embedding_bag(ei[:8].reshape(2, 4), ew, mode=mode))
case("embedding_bag max offsets (an empty bag)", "embedding_bag", [T(ew), T(ei), T(eo), 2, None, False, None],
     F.embedding_bag(ei, ew, eo, mode="max"))
case("embedding_bag max padding_idx 4", "embedding_bag", [T(ew), T(ei), T(eo), 2, None, False, 4],
     F.embedding_bag(ei, ew, eo, mode="max", padding_idx=4))
case("embedding_bag max 2-d", "embedding_bag", [T(ew), T(ei[:8].reshape(2, 4)), None, 2, None, False, None],
     F.embedding_bag(ei[:8].reshape(2, 4), ew, mode="max"))
case("embedding_bag sum include_last_offset int32", "embedding_bag",
     [T(ew), T(ei.int()), T(torch.tensor([0, 3, 3, 9]).int()), 0, None, True, None],
     F.embedding_bag(ei.int(), ew, torch.tensor([0, 3, 3, 9]).int(), mode="sum", include_last_offset=True))
psw = r(9)
case("embedding_bag per_sample_weights", "embedding_bag", [T(ew), T(ei), T(eo), 0, T(psw), False, None],
     F.embedding_bag(ei, ew, eo, mode="sum", per_sample_weights=psw))
a, pw = T(r(10, 4, dtype=torch.float64)), T(r(9, dtype=torch.float64))
gcase("embedding_bag grad sum psw", "embedding_bag", [a, T(ei), T(eo), 0, pw, False, None],
      lambda: F.embedding_bag(ei, a.t, eo, mode="sum", per_sample_weights=pw.t), [0, 4])
gcase("embedding_bag grad max", "embedding_bag", [a, T(ei), T(eo), 2, None, False, None],
      lambda: F.embedding_bag(ei, a.t, eo, mode="max"), [0])
gcase("embedding_bag grad mean", "embedding_bag", [a, T(ei), T(eo), 1, None, False, 2],
      lambda: F.embedding_bag(ei, a.t, eo, mode="mean", padding_idx=2), [0])

# ---- ctc_loss: padded and concatenated targets, an empty target, an impossible alignment, reductions ----
Tn, Nn, Cn = 8, 3, 5
clp = torch.log_softmax(r(Tn, Nn, Cn), 2)
ctg = torch.tensor([[1, 2, 2, 0], [3, 1, 4, 4], [2, 0, 0, 0]])
cil, ctl = torch.tensor([8, 6, 5]), torch.tensor([3, 4, 0])
for red in (0, 1, 2):
    case("ctc_loss padded red=%d" % red, "ctc_loss", [T(clp), T(ctg), T(cil), T(ctl), 0, red, False],
         F.ctc_loss(clp, ctg, cil, ctl, 0, RED[red]), 1e-5, 1e-5)
cflat = torch.cat([ctg[0, :3], ctg[1, :4]])
case("ctc_loss concatenated targets", "ctc_loss", [T(clp), T(cflat), T(cil), T(ctl), 0, 0, False],
     F.ctc_loss(clp, cflat, cil, ctl, 0, "none"), 1e-5, 1e-5)
imp_il = torch.tensor([8, 2, 5])  # sequence 1 needs at least 5 steps for 4 labels with a repeat: impossible
for zi in (False, True):
    case("ctc_loss impossible zero_infinity=%s" % zi, "ctc_loss", [T(clp), T(ctg), T(imp_il), T(ctl), 0, 0, zi],
         F.ctc_loss(clp, ctg, imp_il, ctl, 0, "none", zi), 1e-5, 1e-5)
case("ctc_loss blank 4", "ctc_loss", [T(clp), T(ctg.clamp(max=3)), T(cil), T(ctl), 4, 1, False],
     F.ctc_loss(clp, ctg.clamp(max=3), cil, ctl, 4), 1e-5, 1e-5)
# PyTorch's ctc_loss backward returns exp(log_probs) - gamma: the gradient with respect to the logits of a
# log_softmax, not the derivative with respect to log_probs (-gamma) that Wick's composite gives. The two
# agree once through log_softmax (check_nn_surface checks that); here the reference is PyTorch's gradient
# minus its exp(log_probs) term, i.e. the true derivative.
lpd = torch.log_softmax(r(Tn, Nn, Cn, dtype=torch.float64), 2).requires_grad_(True)
lossd = F.ctc_loss(lpd, ctg, cil, ctl, 0, "mean")
god = torch.randn_like(lossd.detach())
lossd.backward(god)
scale = god / Nn / ctl.clamp(min=1).double()  # d(mean loss)/d(loss_n)
mask = (torch.arange(Tn)[:, None] < cil[None, :]).double()
true_grad = lpd.grad - torch.exp(lpd.detach()) * (scale[None, :] * mask)[:, :, None]
grad_cases.append(("ctc_loss grad mean (the derivative w.r.t. log_probs)", "ctc_loss",
                   [T(lpd.detach()), T(ctg), T(cil), T(ctl), 0, 1, False], god, [0], [true_grad], 1e-6, 1e-9))

if __name__ == "__main__":
    # float[] arguments travel as marker strings through emit, then become REF_FLOATS arrays
    import io
    import re
    floats = []

    def mark(args):
        out = []
        for a in args:
            if isinstance(a, FL):
                floats.append(list(a))
                out.append("__FLOATS_%d__" % (len(floats) - 1))
            else:
                out.append(a)
        return out
    cases = [(c[0], c[1], mark(c[2])) + tuple(c[3:]) for c in cases]
    grad_cases = [(c[0], c[1], mark(c[2])) + tuple(c[3:]) for c in grad_cases]
    buf = io.StringIO()
    emit(buf, cases, grad_cases, pre="n", arr="nn_ref_cases", garr="nn_ref_grad_cases", script="gen_nn_ref.py")
    text = buf.getvalue()
    decl = "".join("static const double nfl%d[] = {%s};\n" % (i, ", ".join(repr(float(v)) for v in f))
                   for i, f in enumerate(floats))
    text = re.sub(r'\{REF_STR, 0, 0, \{0\}, NULL, 0, 0, NULL, 0, "__FLOATS_(\d+)__", NULL\}',
                  lambda m: "{REF_FLOATS, 0, 0, {0}, nfl%s, 0, 0, NULL, %d, NULL, NULL}" % (m.group(1), len(floats[int(m.group(1))])),
                  text)
    head, rest = text.split("\n\n", 1) if "\n\n" in text else (text, "")
    sys.stdout.write(head + "\n\n" + decl + rest)
