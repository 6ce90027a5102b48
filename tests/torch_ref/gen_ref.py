#!/usr/bin/python3
"""Generates tests/torch_ref/ref_data.h: inputs and PyTorch 1.13.1 outputs for
a sample of ops, checked by tests/check_torch_ref.c. Run with Debian's
python3-torch:  /usr/bin/python3 tests/torch_ref/gen_ref.py > tests/torch_ref/ref_data.h
Inputs come from torch's own generator (seeded), so the file is reproducible."""
import sys

import torch
import torch.nn.functional as F

torch.manual_seed(20261202)
DT = {torch.float32: "WK_F32", torch.float64: "WK_F64", torch.int64: "WK_I64", torch.bool: "WK_BOOL",
      torch.int32: "WK_I32", torch.float16: "WK_F16", torch.bfloat16: "WK_BF16", torch.uint8: "WK_U8",
      torch.int8: "WK_I8", torch.int16: "WK_I16"}
cases = []


class T:
    """A tensor argument."""
    def __init__(self, t):
        self.t = t


def r(*shape, dtype=torch.float32, lo=-2.0, hi=2.0):
    return (torch.rand(*shape, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


def case(label, op, args, outs, rtol=1e-5, atol=1e-6):
    if isinstance(outs, torch.Tensor):
        outs = [outs]
    cases.append((label, op, args, list(outs), rtol, atol))


# ---- pointwise ----
a, b = r(3, 1, 4), r(2, 4)
case("add broadcast", "add", [T(a), T(b)], a + b)
case("sub alpha", "sub", [T(a), T(b), 2.5], torch.sub(a, b, alpha=2.5))
case("mul", "mul", [T(a), T(b)], a * b)
case("div floor", "div", [T(a), T(b), "floor"], torch.div(a, b, rounding_mode="floor"))
ia, ib = torch.randint(-9, 9, (5,)), torch.tensor([3, -2, 4, 7, -5])
case("div trunc int", "div", [T(ia), T(ib), "trunc"], torch.div(ia, ib, rounding_mode="trunc"))
case("div int true", "div", [T(ia), T(ib)], ia / ib)
p = r(6, lo=0.1, hi=3.0)
e = r(6)
case("pow", "pow", [T(p), T(e)], torch.pow(p, e))
x = r(4, 5, lo=-4, hi=4)
for name, fn in [("exp", torch.exp), ("tanh", torch.tanh), ("sigmoid", torch.sigmoid), ("silu", F.silu),
                 ("relu", torch.relu), ("neg", torch.neg), ("abs", torch.abs), ("sin", torch.sin)]:
    case(name, name, [T(x)], fn(x))
pos = r(4, 5, lo=0.01, hi=5)
case("log", "log", [T(pos)], torch.log(pos))
case("sqrt", "sqrt", [T(pos)], torch.sqrt(pos))
case("rsqrt", "rsqrt", [T(pos)], torch.rsqrt(pos))
case("gelu exact", "gelu", [T(x), "none"], F.gelu(x))
case("gelu tanh", "gelu", [T(x), "tanh"], F.gelu(x, approximate="tanh"))
case("leaky_relu", "leaky_relu", [T(x), 0.2], F.leaky_relu(x, 0.2))
case("clamp", "clamp", [T(x), -1.0, 0.5], torch.clamp(x, -1.0, 0.5))
y5 = r(5)
case("maximum", "maximum", [T(x), T(y5)], torch.maximum(x, y5))
c = x > 0
case("where", "where.self", [T(c), T(x), T(y5)], torch.where(c, x, y5))
y15 = r(1, 5)
case("lt", "lt", [T(x), T(y15)], torch.lt(x, y15))
case("round half even", "round", [T(torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, 2.4]))],
     torch.round(torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, 2.4])))

# ---- reductions ----
x = r(3, 4, 5)
case("sum dims keepdim", "sum.dim_IntList", [T(x), [0, 2], True], x.sum(dim=(0, 2), keepdim=True))
case("mean dim", "mean.dim", [T(x), [-1], False], x.mean(dim=-1))
case("var correction", "var.correction", [T(x), [1], 1, False], x.var(dim=1))
case("std all", "std.correction", [T(x)], x.std())
case("norm p=3", "norm", [T(x), 3.0, [2], False], torch.norm(x, p=3, dim=2))
case("logsumexp", "logsumexp", [T(x), [1], True], torch.logsumexp(x, dim=1, keepdim=True))
v, i = torch.max(x, dim=1)
case("max dim", "max.dim", [T(x), 1, False], [v, i])
case("argmax", "argmax", [T(x), 2, False], torch.argmax(x, dim=2))
case("prod dim", "prod.dim_int", [T(x), 0, False], torch.prod(x, dim=0), rtol=1e-5, atol=1e-6)
case("cumsum", "cumsum", [T(x), 1], torch.cumsum(x, dim=1))
case("softmax", "softmax", [T(x), 1], torch.softmax(x, dim=1))
case("log_softmax", "log_softmax", [T(x), -1], torch.log_softmax(x, dim=-1))

# ---- linear algebra ----
m1, m2 = r(5, 7), r(7, 3)
case("mm", "mm", [T(m1), T(m2)], m1 @ m2, rtol=1e-5, atol=1e-5)
bb1, bb2 = r(2, 3, 4), r(2, 4, 5)
case("bmm", "bmm", [T(bb1), T(bb2)], torch.bmm(bb1, bb2), rtol=1e-5, atol=1e-5)
s = r(3)
m43 = r(4, 3)
case("addmm", "addmm", [T(s), T(m1[:, :4].contiguous()), T(m43), 0.5, 2.0],
     torch.addmm(s, m1[:, :4], m43, beta=0.5, alpha=2.0), rtol=1e-5, atol=1e-5)
ma, mb = r(2, 1, 3, 4), r(5, 4, 2)
case("matmul batched broadcast", "matmul", [T(ma), T(mb)], torch.matmul(ma, mb), rtol=1e-5, atol=1e-5)
w, bias = r(6, 4), r(6)
xl = r(2, 3, 4)
case("linear 3d", "linear", [T(xl), T(w), T(bias)], F.linear(xl, w, bias), rtol=1e-5, atol=1e-5)

# ---- nn ----
img = r(2, 4, 9, 9)
wt = r(6, 2, 3, 3)
bs = r(6)
case("conv2d groups stride pad", "conv2d", [T(img), T(wt), T(bs), [2, 1], [1, 2], [1, 1], 2],
     F.conv2d(img, wt, bs, stride=(2, 1), padding=(1, 2), groups=2), rtol=1e-4, atol=1e-5)
wt2 = r(3, 4, 3, 3)
case("conv2d dilation", "conv2d", [T(img), T(wt2), None, [1, 1], [0, 0], [2, 2], 1],
     F.conv2d(img, wt2, dilation=2), rtol=1e-4, atol=1e-5)
pv, pi = F.max_pool2d(img, 3, 2, 1, return_indices=True)
case("max_pool2d", "max_pool2d_with_indices", [T(img), [3, 3], [2, 2], [1, 1], [1, 1], False], [pv, pi])
pv, pi = F.max_pool2d(img, 2, 2, 0, ceil_mode=True, return_indices=True)
case("max_pool2d ceil", "max_pool2d_with_indices", [T(img), [2, 2], [2, 2], [0, 0], [1, 1], True], [pv, pi])
case("avg_pool2d", "avg_pool2d", [T(img), [3, 3], [2, 2], [1, 1], False, False],
     F.avg_pool2d(img, 3, 2, 1, count_include_pad=False))
case("adaptive_avg_pool2d", "adaptive_avg_pool2d", [T(img), [4, 3]], F.adaptive_avg_pool2d(img, (4, 3)))
rm, rv = r(4), r(4, lo=0.5, hi=2)
g, be = r(4), r(4)
case("batch_norm eval", "batch_norm", [T(img), T(g), T(be), T(rm), T(rv), False, 0.1, 1e-5],
     F.batch_norm(img, rm, rv, g, be, training=False), rtol=1e-4, atol=1e-5)
out = F.batch_norm(img, rm.clone(), rv.clone(), g, be, training=True)
case("batch_norm train", "batch_norm", [T(img), T(g), T(be), None, None, True, 0.1, 1e-5], out,
     rtol=1e-4, atol=1e-5)
xn = r(3, 5, 6)
lw, lb = r(5, 6), r(5, 6)
case("layer_norm", "layer_norm", [T(xn), [5, 6], T(lw), T(lb), 1e-5],
     F.layer_norm(xn, [5, 6], lw, lb), rtol=1e-4, atol=1e-5)
logits = r(6, 5)
tgt = torch.tensor([0, 4, 2, 1, 3, 2])
cw = r(5, lo=0.2, hi=2)
case("cross_entropy weight smoothing", "cross_entropy", [T(logits), T(tgt), T(cw), 1, -100, 0.1],
     F.cross_entropy(logits, tgt, weight=cw, label_smoothing=0.1))
tgt_ig = torch.tensor([0, -100, 2, 1, -100, 2])
case("cross_entropy ignore sum", "cross_entropy", [T(logits), T(tgt_ig), None, 2, -100, 0.0],
     F.cross_entropy(logits, tgt_ig, reduction="sum"))
probs = torch.softmax(r(6, 5), dim=1)
case("cross_entropy probs", "cross_entropy", [T(logits), T(probs), None, 1, -100, 0.0],
     F.cross_entropy(logits, probs))
lp = torch.log_softmax(logits, 1)
case("nll_loss none", "nll_loss", [T(lp), T(tgt), None, 0, -100], F.nll_loss(lp, tgt, reduction="none"))
yt = r(6, 5)
case("mse_loss", "mse_loss", [T(logits), T(yt), 1], F.mse_loss(logits, yt))
bt = torch.rand(6, 5)
pw = r(5, lo=0.5, hi=3)
case("bce_with_logits pos_weight", "binary_cross_entropy_with_logits", [T(logits), T(bt), None, T(pw), 1],
     F.binary_cross_entropy_with_logits(logits, bt, pos_weight=pw))
emb = r(10, 3)
idx = torch.tensor([[1, 9], [0, 4]])
case("embedding", "embedding", [T(emb), T(idx)], F.embedding(idx, emb))
case("pad reflect", "pad", [T(img), [2, 1, 1, 2], "reflect"], F.pad(img, (2, 1, 1, 2), mode="reflect"))
case("pad replicate", "pad", [T(img), [1, 3, 2, 0], "replicate"], F.pad(img, (1, 3, 2, 0), mode="replicate"))
case("pad constant", "pad", [T(xn), [1, 1, 0, 2], "constant", 0.5], F.pad(xn, (1, 1, 0, 2), value=0.5))

# ---- indexing ----
c1, c2 = r(2, 3), r(2, 5)
case("cat", "cat", [[T(c1), T(c2)], 1], torch.cat([c1, c2], 1))
src = r(5, 4)
ind = torch.tensor([4, 0, 2])
case("index_select", "index_select", [T(src), 0, T(ind)], torch.index_select(src, 0, ind))
gi = torch.tensor([[0, 3], [1, 1], [2, 0], [3, 2], [1, 0]])
case("gather", "gather", [T(src), 1, T(gi)], torch.gather(src, 1, gi))
z = torch.zeros(5, 4)
sv = r(5, 2)
case("scatter_add", "scatter_add", [T(z), 1, T(gi), T(sv)], torch.scatter_add(z, 1, gi, sv))
mask = src > 0
case("masked_fill", "masked_fill.Scalar", [T(src), T(mask), -7.0], src.masked_fill(mask, -7.0))
tv, ti = torch.topk(src, 2, dim=1)
case("topk", "topk", [T(src), 2, 1, True, True], [tv, ti])
sv2, si2 = torch.sort(src, dim=0, descending=True)
case("sort", "sort", [T(src), 0, True], [sv2, si2])
case("flip", "flip", [T(src), [0, 1]], torch.flip(src, [0, 1]))
case("roll", "roll", [T(src), [1, -2], [0, 1]], torch.roll(src, (1, -2), (0, 1)))
case("one_hot", "one_hot", [T(torch.tensor([0, 3, 1])), 5], F.one_hot(torch.tensor([0, 3, 1]), 5))
case("repeat", "repeat", [T(c1), [2, 1, 2]], c1.repeat(2, 1, 2))


# ---- gradients: the op's inputs that require grad get .grad from
# backward(grad_output); cases carry a third list, the expected gradients ----
grad_cases = []


def gcase(label, op, args, out, grad_args, rtol=1e-5, atol=1e-6):
    """args: as for case(); grad_args: indices of T args that require grad."""
    for i in grad_args:
        args[i].t.requires_grad_(True)
    go = torch.randn_like(out.detach() if isinstance(out, torch.Tensor) else out[0].detach())
    o = out if isinstance(out, torch.Tensor) else out[0]
    o.backward(go)
    grads = [args[i].t.grad.detach().clone() for i in grad_args]
    for i in grad_args:
        args[i].t = args[i].t.detach()
    grad_cases.append((label, op, args, go, grad_args, grads, rtol, atol))


gx, gw, gb = r(2, 3, 6, 6), r(4, 3, 3, 3), r(4)
for t in (gx, gw, gb):
    t.requires_grad_(True)
gcase("conv2d grads", "conv2d", [T(gx), T(gw), T(gb), [1, 1], [1, 1], [1, 1], 1], F.conv2d(gx, gw, gb, padding=1),
      [0, 1, 2], rtol=1e-4, atol=1e-5)
ga, gm = r(5, 7, dtype=torch.float64), r(7, 3, dtype=torch.float64)
ga.requires_grad_(True); gm.requires_grad_(True)
gcase("mm grads", "mm", [T(ga), T(gm)], ga @ gm, [0, 1])
gl = r(6, 5, dtype=torch.float64); gl.requires_grad_(True)
gt = torch.tensor([0, 4, 2, 1, 3, 2])
gwt = r(5, lo=0.2, hi=2, dtype=torch.float64)
gcase("cross_entropy grads", "cross_entropy", [T(gl), T(gt), T(gwt), 1, -100, 0.1],
      F.cross_entropy(gl, gt, weight=gwt, label_smoothing=0.1), [0])
gn = r(3, 4, 5, dtype=torch.float64); gn.requires_grad_(True)
gnw, gnb = r(5, dtype=torch.float64), r(5, dtype=torch.float64)
gnw.requires_grad_(True); gnb.requires_grad_(True)
gcase("layer_norm grads", "layer_norm", [T(gn), [5], T(gnw), T(gnb), 1e-5], F.layer_norm(gn, [5], gnw, gnb),
      [0, 2, 3])
gbi = r(4, 3, 2, 2, dtype=torch.float64); gbi.requires_grad_(True)
gbw, gbb = r(3, dtype=torch.float64), r(3, dtype=torch.float64)
gbw.requires_grad_(True); gbb.requires_grad_(True)
gcase("batch_norm train grads", "batch_norm", [T(gbi), T(gbw), T(gbb), None, None, True, 0.1, 1e-5],
      F.batch_norm(gbi, None, None, gbw, gbb, training=True), [0, 1, 2])
gs = r(3, 6, dtype=torch.float64); gs.requires_grad_(True)
gcase("softmax grads", "softmax", [T(gs), 1], torch.softmax(gs, 1), [0])
gg = r(4, 5, dtype=torch.float64); gg.requires_grad_(True)
gcase("gelu grads", "gelu", [T(gg), "none"], F.gelu(gg), [0])
gp = r(1, 2, 6, 6, dtype=torch.float64); gp.requires_grad_(True)
gcase("max_pool2d grads", "max_pool2d_with_indices", [T(gp), [2, 2], [2, 2], [0, 0], [1, 1], False],
      F.max_pool2d(gp, 2, 2), [0])
ge = r(10, 3, dtype=torch.float64); ge.requires_grad_(True)
gidx = torch.tensor([[1, 9, 1], [0, 4, 9]])
gcase("embedding grads", "embedding", [T(ge), T(gidx)], F.embedding(gidx, ge), [0])
gv = r(3, 4, dtype=torch.float64); gv.requires_grad_(True)
gcase("var grads", "var.correction", [T(gv), [1], 1, False], gv.var(dim=1), [0])

# ---- emit C ----
def carr(name, vals, ctype="double"):
    body = ", ".join(repr(float(v)) if ctype == "double" else str(int(v)) for v in vals)
    return "static const %s %s[] = {%s};\n" % (ctype, name, body or "0")


def fmt_double(v):
    if v != v:
        return "NAN"
    if v == float("inf"):
        return "INFINITY"
    if v == float("-inf"):
        return "-INFINITY"
    return repr(float(v))


def emit(out, cases, grad_cases, pre="", arr="ref_cases", garr="ref_grad_cases", script="gen_ref.py"):
    """Writes cases and grad_cases as C (array names arr/garr, data names prefixed with pre)."""
    out.write("/* Generated by tests/torch_ref/%s with PyTorch %s: do not edit. */\n" % (script, torch.__version__))
    out.write("#include <math.h>\n\n")
    entries = []
    for ci, (label, op, args, outs, rtol, atol) in enumerate(cases):
        arg_entries = []
        for ai, a in enumerate(args):
            if isinstance(a, T):
                t = a.t.contiguous()
                n = pre + "c%d_a%d" % (ci, ai)
                out.write("static const double %s[] = {%s};\n" % (n, ", ".join(fmt_double(v) for v in t.flatten().double().tolist()) or "0"))
                sh = list(t.shape)
                arg_entries.append("{REF_TENSOR, %s, %d, {%s}, %s, 0, 0, NULL, 0, NULL, NULL}" % (
                    DT[t.dtype], len(sh), ", ".join(map(str, sh)) or "0", n))
            elif isinstance(a, list) and a and isinstance(a[0], T):
                names = []
                for k, tt in enumerate(a):
                    t = tt.t.contiguous()
                    n = pre + "c%d_a%d_%d" % (ci, ai, k)
                    out.write("static const double %s[] = {%s};\n" % (n, ", ".join(fmt_double(v) for v in t.flatten().double().tolist())))
                    sh = list(t.shape)
                    names.append("{REF_TENSOR, %s, %d, {%s}, %s, 0, 0, NULL, 0, NULL, NULL}" % (
                        DT[t.dtype], len(sh), ", ".join(map(str, sh)), n))
                ln = pre + "c%d_a%d_list" % (ci, ai)
                out.write("static const ref_arg %s[] = {%s};\n" % (ln, ", ".join(names)))
                arg_entries.append("{REF_TENSORS, 0, %d, {0}, NULL, 0, 0, NULL, 0, NULL, %s}" % (len(a), ln))
            elif isinstance(a, list):
                n = pre + "c%d_a%d" % (ci, ai)
                out.write("static const int64_t %s[] = {%s};\n" % (n, ", ".join(map(str, a)) or "0"))
                arg_entries.append("{REF_INTS, 0, 0, {0}, NULL, 0, 0, %s, %d, NULL, NULL}" % (n, len(a)))
            elif isinstance(a, bool):
                arg_entries.append("{REF_BOOL, 0, 0, {0}, NULL, 0, %d, NULL, 0, NULL, NULL}" % int(a))
            elif isinstance(a, int):
                arg_entries.append("{REF_INT, 0, 0, {0}, NULL, 0, %d, NULL, 0, NULL, NULL}" % a)
            elif isinstance(a, float):
                arg_entries.append("{REF_FLOAT, 0, 0, {0}, NULL, %s, 0, NULL, 0, NULL, NULL}" % fmt_double(a))
            elif isinstance(a, str):
                arg_entries.append("{REF_STR, 0, 0, {0}, NULL, 0, 0, NULL, 0, \"%s\", NULL}" % a)
            elif a is None:
                arg_entries.append("{REF_NONE, 0, 0, {0}, NULL, 0, 0, NULL, 0, NULL, NULL}")
            else:
                raise TypeError(a)
        out_entries = []
        for oi, t in enumerate(outs):
            t = t.contiguous()
            n = pre + "c%d_o%d" % (ci, oi)
            out.write("static const double %s[] = {%s};\n" % (n, ", ".join(fmt_double(v) for v in t.flatten().double().tolist()) or "0"))
            sh = list(t.shape)
            out_entries.append("{REF_TENSOR, %s, %d, {%s}, %s, 0, 0, NULL, 0, NULL, NULL}" % (
                DT[t.dtype], len(sh), ", ".join(map(str, sh)) or "0", n))
        entries.append('{"%s", "%s", %d, {%s}, %d, {%s}, %r, %r}' % (
            label, op, len(args), ", ".join(arg_entries), len(outs), ", ".join(out_entries), rtol, atol))
    out.write("\nstatic const ref_case %s[] = {\n  %s};\n" % (arr, ",\n  ".join(entries)))


    def targ(name, t):
        t = t.detach().contiguous()
        out.write("static const double %s[] = {%s};\n" % (name, ", ".join(fmt_double(v) for v in t.flatten().double().tolist()) or "0"))
        sh = list(t.shape)
        return "{REF_TENSOR, %s, %d, {%s}, %s, 0, 0, NULL, 0, NULL, NULL}" % (DT[t.dtype], len(sh), ", ".join(map(str, sh)) or "0", name)


    gentries = []
    for ci, (label, op, args, go, grad_args, grads, rtol, atol) in enumerate(grad_cases):
        arg_entries = []
        for ai, a in enumerate(args):
            if isinstance(a, T):
                arg_entries.append(targ(pre + "g%d_a%d" % (ci, ai), a.t))
            elif isinstance(a, list):
                n = pre + "g%d_a%d" % (ci, ai)
                out.write("static const int64_t %s[] = {%s};\n" % (n, ", ".join(map(str, a)) or "0"))
                arg_entries.append("{REF_INTS, 0, 0, {0}, NULL, 0, 0, %s, %d, NULL, NULL}" % (n, len(a)))
            elif isinstance(a, bool):
                arg_entries.append("{REF_BOOL, 0, 0, {0}, NULL, 0, %d, NULL, 0, NULL, NULL}" % int(a))
            elif isinstance(a, int):
                arg_entries.append("{REF_INT, 0, 0, {0}, NULL, 0, %d, NULL, 0, NULL, NULL}" % a)
            elif isinstance(a, float):
                arg_entries.append("{REF_FLOAT, 0, 0, {0}, NULL, %s, 0, NULL, 0, NULL, NULL}" % fmt_double(a))
            elif isinstance(a, str):
                arg_entries.append("{REF_STR, 0, 0, {0}, NULL, 0, 0, NULL, 0, \"%s\", NULL}" % a)
            else:
                arg_entries.append("{REF_NONE, 0, 0, {0}, NULL, 0, 0, NULL, 0, NULL, NULL}")
        go_e = targ(pre + "g%d_go" % ci, go)
        gr_e = [targ(pre + "g%d_gr%d" % (ci, k), g) for k, g in enumerate(grads)]
        gentries.append('{"%s", "%s", %d, {%s}, %s, %d, {%s}, {%s}, %r, %r}' % (
            label, op, len(args), ", ".join(arg_entries), go_e, len(grad_args), ", ".join(map(str, grad_args)),
            ", ".join(gr_e), rtol, atol))
    out.write("\nstatic const ref_grad_case %s[] = {\n  %s};\n" % (garr, ",\n  ".join(gentries)))


if __name__ == "__main__":
    emit(sys.stdout, cases, grad_cases)
