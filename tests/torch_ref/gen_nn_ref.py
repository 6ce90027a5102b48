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

if __name__ == "__main__":
    emit(sys.stdout, cases, grad_cases, pre="n", arr="nn_ref_cases", garr="nn_ref_grad_cases",
         script="gen_nn_ref.py")
