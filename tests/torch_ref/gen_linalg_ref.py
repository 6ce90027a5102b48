#!/usr/bin/python3
"""Generates tests/torch_ref/linalg_ref_data.h: inputs, PyTorch 1.13.1 outputs and
gradients for issue 21's ops added by engineer A (mode, unique, unique_consecutive,
scatter_reduce, index_put, masked_scatter, einsum, baddbmm, addbmm, tensordot, kron,
the vector/matrix norms and the linalg_* decompositions and solvers), checked by
tests/check_linalg_surface.c. Run with Debian's python3-torch:
  /usr/bin/python3 tests/torch_ref/gen_linalg_ref.py > tests/torch_ref/linalg_ref_data.h
Outputs whose sign PyTorch leaves to LAPACK (eigenvectors, singular vectors) are not
compared here; check_linalg_surface.c checks them by reconstruction."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

from gen_ref import T, emit  # noqa: E402

torch.manual_seed(20261204)
cases, grad_cases = [], []
F64 = torch.float64
NAN, INF = float("nan"), float("inf")


def r(*shape, dtype=torch.float32, lo=-2.0, hi=2.0):
    return (torch.rand(*shape, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


def case(label, op, args, outs, rtol=1e-5, atol=1e-6):
    if isinstance(outs, torch.Tensor):
        outs = [outs]
    cases.append((label, op, args, [o.detach() for o in outs], rtol, atol))


def gcase(label, op, args, fn, grad_args, rtol=1e-6, atol=1e-9):
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


def spd(n, batch=(), dtype=F64):
    a = r(*batch, n, n, dtype=F64)
    return (a @ a.transpose(-2, -1) + n * torch.eye(n, dtype=F64)).to(dtype)


# ---- mode: the smallest of the most frequent values, the index of its last occurrence ----
xm = torch.tensor([[1, 3, 3, 2, 1, 3], [5, 5, 4, 4, 0, 7], [2, 2, 2, 2, 2, 2]])
for d, keep in [(1, False), (-1, True), (0, False)]:
    case("mode int64 dim=%d keepdim=%s" % (d, keep), "mode", [T(xm), d, keep], list(torch.mode(xm, d, keep)))
xmf = torch.tensor([[0.5, -1.0, 0.5, 2.0], [-0.0, 0.0, 3.0, 3.0]])
case("mode f32 ties (-0 == 0)", "mode", [T(xmf), 1, False], list(torch.mode(xmf, 1)))
case("mode 0-d", "mode", [T(torch.tensor(4.0)), -1, False], list(torch.mode(torch.tensor(4.0))))
case("mode bool", "mode", [T(torch.tensor([True, False, True])), 0, False], list(torch.mode(torch.tensor([True, False, True]))))

# ---- unique, unique_consecutive ----
xu = torch.tensor([3, 1, 2, 3, 1, 3, 2, 2, -4])
for inv, cnt in [(False, False), (True, False), (False, True), (True, True)]:
    case("unique inverse=%s counts=%s" % (inv, cnt), "unique", [T(xu), True, inv, cnt, None],
         list(torch._unique2(xu, True, inv, cnt)))
    case("unique_consecutive inverse=%s counts=%s" % (inv, cnt), "unique_consecutive", [T(xu), inv, cnt, None],
         list(torch.ops.aten.unique_consecutive(xu, inv, cnt, None)))
# no NaN: 1.13's cpu unique returns NaN inputs unsorted with zero counts (its hash/sort path mishandles NaN);
# Wick sorts NaN last, each NaN its own group (what later PyTorch versions give)
xu2 = torch.tensor([[1.0, 2.0, 0.0], [-0.0, 5.0, 1.0]])
case("unique f32 -0 == 0, 2-d inverse", "unique", [T(xu2), True, True, True, None],
     list(torch._unique2(xu2, True, True, True)))
xr = torch.tensor([[1, 2, 0], [0, 5, 1], [1, 2, 0], [0, 5, 0], [0, 5, 1]])
case("unique dim=0", "unique", [T(xr), True, True, True, 0], list(torch.ops.aten.unique_dim(xr, 0, True, True, True)))
case("unique dim=1", "unique", [T(xr), True, False, False, 1], list(torch.ops.aten.unique_dim(xr, 1, True, False, False)))
case("unique_consecutive dim=0", "unique_consecutive", [T(xr), True, True, 0],
     list(torch.ops.aten.unique_consecutive(xr, True, True, 0)))
case("unique empty", "unique", [T(torch.zeros(0)), True, True, True, None], list(torch._unique2(torch.zeros(0), True, True, True)))
xb = torch.tensor([True, False, False, True])
case("unique bool", "unique", [T(xb), True, False, True, None], list(torch._unique2(xb, True, False, True)))

# ---- scatter_reduce.two ----
ss = r(3, 5)
si = torch.tensor([[0, 1, 2, 0], [1, 2, 2, 2], [4, 0, 0, 3]])
sv = r(3, 6)
sii = torch.tensor([[0, 1, 1], [2, 2, 0]])
for red in ["sum", "prod", "mean", "amax", "amin"]:
    for incl in (True, False):
        case("scatter_reduce %s include_self=%s" % (red, incl), "scatter_reduce.two", [T(ss), 1, T(si), T(sv), red, incl],
             ss.scatter_reduce(1, si, sv, red, include_self=incl))
    xi = torch.tensor([[3, -2, 7], [1, 0, 5], [4, 4, -3]])
    vi = torch.tensor([[2, 5, -1], [6, 1, 3]])
    case("scatter_reduce int64 %s dim 0" % red, "scatter_reduce.two", [T(xi), 0, T(sii), T(vi), red, False],
         xi.scatter_reduce(0, sii, vi, red, include_self=False))
sn = torch.tensor([1.0, NAN, 3.0, 4.0])
case("scatter_reduce amax NaN", "scatter_reduce.two", [T(sn), 0, T(torch.tensor([0, 0, 2])), T(torch.tensor([5.0, 2.0, NAN])), "amax", True],
     sn.scatter_reduce(0, torch.tensor([0, 0, 2]), torch.tensor([5.0, 2.0, NAN]), "amax"))
for red in ["sum", "prod", "mean", "amax", "amin"]:
    for incl in (True, False):
        gs = r(3, 5, dtype=F64, lo=0.5, hi=2)
        gv = r(3, 4, dtype=F64, lo=0.5, hi=2)  # src of index's shape (PyTorch 1.13 needs it for backward)
        if red in ("amax", "amin"):
            gv[0, 0] = gs[0, 0]  # a tie between self and src at position (0, 0)
            gv[0, 3] = gv[0, 0]  # and between two src elements
        if red == "prod":
            gv[1, 1] = 0.0  # one zero in a group
        A, B = T(gs), T(gv)
        gcase("scatter_reduce %s include_self=%s grad" % (red, incl), "scatter_reduce.two", [A, 1, T(si), B, red, incl],
              lambda: A.t.scatter_reduce(1, si, B.t, red, include_self=incl), [0, 3])

# ---- index_put, masked_scatter ----
xp = r(4, 5)
i0, i1 = torch.tensor([0, 2, 3]), torch.tensor([1, -1, 0])
vals = r(3)
case("index_put values", "index_put", [T(xp), [T(i0), T(i1)], T(vals), False], xp.index_put((i0, i1), vals))
dup = torch.tensor([1, 1, 3, 1])
vals4 = r(4, 5)
case("index_put accumulate duplicates", "index_put", [T(xp), [T(dup)], T(vals4), True], xp.index_put((dup,), vals4, True))
v5 = r(5)
case("index_put row values broadcast", "index_put", [T(xp), [T(i0)], T(v5), False], xp.index_put((i0,), v5))
v1 = r(1)
case("index_put broadcast value 2", "index_put", [T(xp), [T(i0)], T(v1), False], xp.index_put((i0,), v1))
mk = xp > 0.5
case("index_put bool mask", "index_put", [T(xp), [T(mk)], T(torch.tensor([-9.0])), False], xp.index_put((mk,), torch.tensor([-9.0])))
x3 = r(2, 3, 4)
j0, j1 = torch.tensor([[0], [1]]), torch.tensor([2, 3])
v3 = r(2, 2, 3)
case("index_put broadcast index shapes (2 leading)", "index_put", [T(x3.permute(2, 0, 1).contiguous()), [T(j1), T(j0)], T(v3), True],
     x3.permute(2, 0, 1).contiguous().index_put((j1, j0), v3, True))
ms_x, ms_m, ms_s = r(3, 4), torch.tensor([[True, False, True, False]]), r(10)
case("masked_scatter broadcast mask", "masked_scatter", [T(ms_x), T(ms_m), T(ms_s)], ms_x.masked_scatter(ms_m, ms_s))
mm2 = torch.rand(3, 4) > 0.5
case("masked_scatter", "masked_scatter", [T(ms_x), T(mm2), T(ms_s.reshape(2, 5))], ms_x.masked_scatter(mm2, ms_s.reshape(2, 5)))
A, B = T(r(3, 4, dtype=F64)), T(r(12, dtype=F64))
gcase("masked_scatter grads", "masked_scatter", [A, T(mm2), B], lambda: A.t.masked_scatter(mm2, B.t), [0, 2])

# ---- einsum ----
ea, eb, ec = r(3, 4), r(4, 5), r(2, 3, 4)
for eq, ops in [("ij,jk->ik", [ea, eb]), ("ij,jk", [ea, eb]), ("bij,jk->bik", [ec, eb]), ("ii->i", [r(4, 4)]),
                ("ii", [r(4, 4)]), ("i,j->ij", [r(3), r(4)]), ("...ij,...jk->...ik", [ec, r(2, 4, 3)]),
                ("ijk->kji", [ec]), ("bn,anm,bm->ba", [r(2, 3), r(4, 3, 5), r(2, 5)]), ("i,i", [r(5), r(5)]),
                ("ij,j->i", [ea, r(4)]), ("bij,bkj->bik", [ec, r(2, 5, 4)]), ("ij->", [ea]), ("iij->ji", [r(3, 3, 2)]),
                ("ij,ij->ij", [ea, r(1, 4)]), ("Ab,bA->A", [r(3, 2), r(2, 3)]), ("...i,...i", [r(2, 3), r(3)]),
                ("i...->...", [r(3, 2, 2)])]:
    case("einsum %s" % eq, "einsum", [eq, [T(o) for o in ops], None], torch.einsum(eq, *ops))

# ---- baddbmm, addbmm, tensordot, kron ----
b1, b2 = r(3, 2, 4), r(3, 4, 5)
s25 = r(2, 5)
case("baddbmm beta alpha (self broadcast)", "baddbmm", [T(s25), T(b1), T(b2), 0.5, 2.0], torch.baddbmm(s25, b1, b2, beta=0.5, alpha=2.0))
sb = r(3, 2, 5)
case("baddbmm", "baddbmm", [T(sb), T(b1), T(b2), 1, 1], torch.baddbmm(sb, b1, b2))
snan = torch.full((2, 5), NAN)
case("baddbmm beta=0 ignores NaN self", "baddbmm", [T(snan), T(b1), T(b2), 0, 1.5], torch.baddbmm(snan, b1, b2, beta=0, alpha=1.5))
sa = r(2, 5)
case("addbmm", "addbmm", [T(sa), T(b1), T(b2), 0.5, -1.0], torch.addbmm(sa, b1, b2, beta=0.5, alpha=-1.0))
s1 = r(1)
case("addbmm broadcast self", "addbmm", [T(s1), T(b1), T(b2), 1, 1], torch.addbmm(s1, b1, b2))
S, B1, B2 = T(r(3, 2, 5, dtype=F64)), T(r(3, 2, 4, dtype=F64)), T(r(3, 4, 5, dtype=F64))
gcase("baddbmm grads", "baddbmm", [S, B1, B2, 0.5, 2.0], lambda: torch.baddbmm(S.t, B1.t, B2.t, beta=0.5, alpha=2.0), [0, 1, 2])
S = T(r(2, 5, dtype=F64))
gcase("addbmm grads", "addbmm", [S, B1, B2, 1.5, 0.5], lambda: torch.addbmm(S.t, B1.t, B2.t, beta=1.5, alpha=0.5), [0, 1, 2])
ta, tb = r(2, 3, 4), r(4, 3, 5)
case("tensordot 2 dims", "tensordot", [T(ta), T(tb), [1, 2], [1, 0]], torch.tensordot(ta, tb, ([1, 2], [1, 0])))
o2, o3 = r(2), r(3)
case("tensordot 0 dims (outer)", "tensordot", [T(o2), T(o3), [], []], torch.tensordot(o2, o3, 0))
tc = r(3, 4)
case("tensordot negative dims", "tensordot", [T(ta), T(tc), [-2], [0]], torch.tensordot(ta, tc, ([-2], [0])))
A, B = T(r(2, 3, 4, dtype=F64)), T(r(4, 3, 5, dtype=F64))
gcase("tensordot grads", "tensordot", [A, B, [1, 2], [1, 0]], lambda: torch.tensordot(A.t, B.t, ([1, 2], [1, 0])), [0, 1])
ka, kb = r(2, 3), r(3, 2)
case("kron 2-d", "kron", [T(ka), T(kb)], torch.kron(ka, kb))
kc, kd = r(3), r(2, 2, 3)
case("kron 1-d by 3-d values", "kron", [T(kc), T(kd)], torch.kron(kc, kd))
ki = torch.tensor([[1, 2], [3, 4]])
case("kron int64", "kron", [T(ki), T(ki)], torch.kron(ki, ki))
A, B = T(r(2, 3, dtype=F64)), T(r(2, 2, dtype=F64))
gcase("kron grads", "kron", [A, B], lambda: torch.kron(A.t, B.t), [0, 1])

# ---- norms ----
vx = r(3, 4)
vx[0, 0] = 0.0
for ordv, dims, keep in [(2, None, False), (1, [1], True), (INF, [0], False), (-INF, [1], False), (0, None, False),
                         (3, [0, 1], False), (-1, [1], False), (0.5, [1], True)]:
    case("vector_norm ord=%s dim=%s keepdim=%s" % (ordv, dims, keep), "linalg_vector_norm", [T(vx), ordv, dims, keep, None],
         torch.linalg.vector_norm(vx, ordv, dims, keep))
case("vector_norm 0-d", "linalg_vector_norm", [T(torch.tensor(-3.0)), 2, None, False, None], torch.linalg.vector_norm(torch.tensor(-3.0)))
case("vector_norm NaN inf", "linalg_vector_norm", [T(torch.tensor([1.0, INF, -2.0])), 2, None, False, None],
     torch.linalg.vector_norm(torch.tensor([1.0, INF, -2.0])))
for ordv in [2, 1, INF, 3]:
    X = T(r(3, 4, dtype=F64))
    gcase("vector_norm ord=%s grad" % ordv, "linalg_vector_norm", [X, ordv, [1], False, None],
          lambda: torch.linalg.vector_norm(X.t, ordv, [1]), [0])
mx = r(2, 3, 4)
for ordv in ["fro", "nuc", 1, -1, INF, -INF, 2, -2]:
    op = "linalg_matrix_norm.str_ord" if isinstance(ordv, str) else "linalg_matrix_norm"
    case("matrix_norm ord=%s" % ordv, op, [T(mx), ordv, [-2, -1], False, None], torch.linalg.matrix_norm(mx, ordv))
case("matrix_norm dims (0, 2) keepdim", "linalg_matrix_norm", [T(mx), 1, [2, 0], True, None], torch.linalg.matrix_norm(mx, 1, (2, 0), True))
case("matrix_norm nuc dims keepdim", "linalg_matrix_norm.str_ord", [T(mx), "nuc", [0, 2], True, None],
     torch.linalg.matrix_norm(mx, "nuc", (0, 2), True))
for ordv in ["fro", "nuc", 1, INF, 2]:
    op = "linalg_matrix_norm.str_ord" if isinstance(ordv, str) else "linalg_matrix_norm"
    X = T(r(2, 3, 4, dtype=F64))
    gcase("matrix_norm ord=%s grad" % ordv, op, [X, ordv, [-2, -1], False, None], lambda: torch.linalg.matrix_norm(X.t, ordv), [0])

# ---- decompositions and solvers ----
P = spd(4)
case("cholesky f64", "linalg_cholesky", [T(P), False], torch.linalg.cholesky(P), rtol=1e-10, atol=1e-12)
Pb = spd(3, (2,), torch.float32)
case("cholesky batched f32 upper", "linalg_cholesky", [T(Pb), True], torch.linalg.cholesky(Pb, upper=True))
X = T(spd(4))
gcase("cholesky grad", "linalg_cholesky", [X, False], lambda: torch.linalg.cholesky(X.t), [0], rtol=1e-6, atol=1e-8)
X = T(spd(3, (2,)))
gcase("cholesky upper grad", "linalg_cholesky", [X, True], lambda: torch.linalg.cholesky(X.t, upper=True), [0], rtol=1e-6, atol=1e-8)
for shape in [(4, 3), (3, 5), (2, 4, 4)]:
    A = r(*shape, dtype=F64)
    for mode in ["reduced", "complete", "r"]:
        case("qr %s %s" % (list(shape), mode), "linalg_qr", [T(A), mode], list(torch.linalg.qr(A, mode)), rtol=1e-9, atol=1e-10)
for shape in [(5, 3), (3, 3), (3, 5)]:
    X = T(r(*shape, dtype=F64))
    gcase("qr %s grad (Q)" % list(shape), "linalg_qr", [X, "reduced"], lambda: torch.linalg.qr(X.t), [0], rtol=1e-6, atol=1e-8)
S4 = spd(4) - 3 * torch.eye(4, dtype=F64)
case("eigh eigenvalues (L)", "linalg_eigh", [T(S4), "L"], [torch.linalg.eigh(S4)[0]], rtol=1e-10, atol=1e-10)
X = T(S4.clone())
gcase("eigh grad (eigenvalues)", "linalg_eigh", [X, "L"], lambda: torch.linalg.eigh(X.t), [0], rtol=1e-6, atol=1e-8)
A, B = r(3, 3), r(3, 2)
case("solve", "linalg_solve", [T(A), T(B), True], torch.linalg.solve(A, B), rtol=1e-4, atol=1e-5)
Ab, bv = r(2, 3, 3, dtype=F64), r(2, 3, dtype=F64)
case("solve batched vector rhs", "linalg_solve", [T(Ab), T(bv), True], torch.linalg.solve(Ab, bv), rtol=1e-9, atol=1e-10)
Bm = r(4, 3, dtype=F64)
case("solve left=False broadcast", "linalg_solve", [T(Ab), T(Bm), False], torch.linalg.solve(Ab, Bm, left=False), rtol=1e-9, atol=1e-10)
Am, Bb = r(3, 3, dtype=F64), r(2, 3, 2, dtype=F64)
case("solve broadcast A", "linalg_solve", [T(Am), T(Bb), True], torch.linalg.solve(Am, Bb), rtol=1e-9, atol=1e-10)
XA, XB = T(r(3, 3, dtype=F64) + 2 * torch.eye(3, dtype=F64)), T(r(2, 3, 2, dtype=F64))
gcase("solve grads (A broadcast)", "linalg_solve", [XA, XB, True], lambda: torch.linalg.solve(XA.t, XB.t), [0, 1])
XA, XB = T(r(2, 3, 3, dtype=F64) + 2 * torch.eye(3, dtype=F64)), T(r(2, 3, dtype=F64))
gcase("solve grads (vector rhs)", "linalg_solve", [XA, XB, True], lambda: torch.linalg.solve(XA.t, XB.t), [0, 1])
XA, XB = T(r(3, 3, dtype=F64) + 2 * torch.eye(3, dtype=F64)), T(r(4, 3, dtype=F64))
gcase("solve grads left=False", "linalg_solve", [XA, XB, False], lambda: torch.linalg.solve(XA.t, XB.t, left=False), [0, 1])
D = r(3, 4, 4, dtype=F64)
D[2] = torch.tensor([[1.0, 2, 3, 4], [2, 4, 6, 8], [0, 1, 0, 1], [1, 1, 1, 1]], dtype=F64)  # singular
case("slogdet (a singular one: 0, -inf)", "linalg_slogdet", [T(D)], list(torch.linalg.slogdet(D)), rtol=1e-9, atol=1e-10)
case("det", "linalg_det", [T(D)], torch.linalg.det(D), rtol=1e-9, atol=1e-10)
Iv = r(2, 4, 4) + 3 * torch.eye(4)
case("inv f32 batched", "linalg_inv", [T(Iv)], torch.linalg.inv(Iv), rtol=1e-4, atol=1e-5)
X = T(r(3, 3, dtype=F64) + 2 * torch.eye(3, dtype=F64))
gcase("inv grad", "linalg_inv", [X], lambda: torch.linalg.inv(X.t), [0])
X = T(r(2, 3, 3, dtype=F64) + 2 * torch.eye(3, dtype=F64))
gcase("det grad", "linalg_det", [X], lambda: torch.linalg.det(X.t), [0])
for shape in [(4, 3), (3, 5)]:
    A = r(*shape, dtype=F64)
    case("pinv %s" % list(shape), "linalg_pinv", [T(A), None, None, False], torch.linalg.pinv(A), rtol=1e-8, atol=1e-10)
    X = T(A.clone())
    gcase("pinv %s grad" % list(shape), "linalg_pinv", [X, None, None, False], lambda: torch.linalg.pinv(X.t), [0], rtol=1e-6, atol=1e-8)
R2 = torch.tensor([[1.0, 2, 3], [2, 4, 6], [1, 0, 1]], dtype=F64)  # rank 2
case("pinv rank-deficient", "linalg_pinv", [T(R2), None, None, False], torch.linalg.pinv(R2), rtol=1e-8, atol=1e-10)
case("pinv atol", "linalg_pinv", [T(R2), 0.5, None, False], torch.linalg.pinv(R2, atol=0.5), rtol=1e-8, atol=1e-10)
case("pinv hermitian", "linalg_pinv", [T(S4), None, None, True], torch.linalg.pinv(S4, hermitian=True), rtol=1e-8, atol=1e-10)
LA, LB = r(5, 3, dtype=F64), r(5, 2, dtype=F64)
case("lstsq tall", "linalg_lstsq", [T(LA), T(LB), None, None], list(torch.linalg.lstsq(LA, LB)), rtol=1e-8, atol=1e-10)
Lb = r(2, 5, 3, dtype=F64)
lb = r(2, 5, dtype=F64)
case("lstsq batched vector", "linalg_lstsq", [T(Lb), T(lb), None, None], list(torch.linalg.lstsq(Lb, lb)), rtol=1e-8, atol=1e-10)
XA, XB = T(LA.clone()), T(LB.clone())
gcase("lstsq grads", "linalg_lstsq", [XA, XB, None, None], lambda: torch.linalg.lstsq(XA.t, XB.t), [0, 1], rtol=1e-6, atol=1e-8)

if __name__ == "__main__":
    emit(sys.stdout, cases, grad_cases, pre="la", arr="linalg_ref_cases", garr="linalg_ref_grad_cases",
         script="gen_linalg_ref.py")
