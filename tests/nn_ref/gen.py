#!/usr/bin/python3
"""Reference data for tests/check_nn.c, computed with PyTorch 1.13.

Run:  /usr/bin/python3 tests/nn_ref/gen.py > tests/nn_ref/nn_ref.h
Every case is a list of named float64 tensors (inputs, parameters in
state-dict names, outputs); reprs and the resnet key lists come along.
ResNet is torchvision 0.14's architecture, written out here (torchvision is
not needed)."""
import math
import os
import sys
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_default_dtype(torch.float64)
cases = []   # (name, [(tensor_name, tensor)])
reprs = []   # (name, text)


def case(name, **tensors):
    cases.append((name, list(tensors.items())))


def module_case(name, m, *inputs, train=False, extra=None):
    m = m.double()
    m.train(train)
    ts = {}
    for i, x in enumerate(inputs):
        ts["x%d" % i] = x
    for k, v in m.state_dict().items():
        ts["p." + k] = v
    with torch.no_grad():
        y = m(*inputs)
    ts["y"] = y
    if extra:
        ts.update(extra(m))
    cases.append((name, list(ts.items())))
    reprs.append((name, repr(m)))


r = lambda *s: torch.randn(*s)
module_case("linear", nn.Linear(5, 4), r(3, 5))
module_case("linear_nobias", nn.Linear(5, 2, bias=False), r(2, 3, 5))
module_case("conv2d_s2p1", nn.Conv2d(3, 4, 3, stride=2, padding=1), r(2, 3, 7, 7))
module_case("conv2d_g2d2", nn.Conv2d(4, 6, 3, dilation=2, groups=2, bias=False), r(1, 4, 9, 9))
module_case("conv2d_same_even", nn.Conv2d(2, 3, 4, padding="same"), r(1, 2, 6, 5))
module_case("conv2d_asym", nn.Conv2d(2, 3, (3, 2), stride=(2, 1), padding=(1, 0)), r(2, 2, 7, 6))
module_case("conv2d_unbatched", nn.Conv2d(2, 3, 3, padding=1), r(2, 5, 5))
module_case("conv1d", nn.Conv1d(3, 5, 3, stride=2, padding=1), r(2, 3, 10))
module_case("conv1d_same", nn.Conv1d(2, 2, 4, padding="same", dilation=1), r(1, 2, 7))
module_case("convt2d", nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2), r(1, 4, 5, 5))
module_case("convt2d_plain", nn.ConvTranspose2d(3, 2, 2, stride=2), r(2, 3, 3, 4))
module_case("maxpool", nn.MaxPool2d(3, stride=2, padding=1), r(2, 3, 9, 9))
module_case("maxpool_ceil_dil", nn.MaxPool2d(2, dilation=2, ceil_mode=True), r(1, 2, 8, 7))
module_case("avgpool", nn.AvgPool2d(2), r(2, 3, 8, 8))
module_case("avgpool_nopad", nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False), r(1, 2, 7, 7))
module_case("adaptive11", nn.AdaptiveAvgPool2d((1, 1)), r(2, 3, 5, 7))
module_case("adaptive23", nn.AdaptiveAvgPool2d((2, 3)), r(1, 2, 6, 9))
module_case("layernorm", nn.LayerNorm([3, 4]), r(2, 3, 4))
ln = nn.LayerNorm(4, eps=1e-3)
with torch.no_grad():
    ln.weight.normal_(); ln.bias.normal_()
module_case("layernorm_affine", ln, r(3, 4))
gn = nn.GroupNorm(2, 4)
with torch.no_grad():
    gn.weight.normal_(); gn.bias.normal_()
module_case("groupnorm", gn, r(2, 4, 3, 3))
module_case("embedding", nn.Embedding(10, 3, padding_idx=0), torch.tensor([[1, 0, 9], [4, 4, 2]]))
for nm, m in [("relu", nn.ReLU()), ("leaky", nn.LeakyReLU(0.2)), ("gelu", nn.GELU()), ("gelu_tanh", nn.GELU("tanh")),
              ("silu", nn.SiLU()), ("sigmoid", nn.Sigmoid()), ("tanh", nn.Tanh()), ("softmax", nn.Softmax(dim=1)),
              ("log_softmax", nn.LogSoftmax(dim=0)), ("identity", nn.Identity()), ("flatten", nn.Flatten()),
              ("dropout_eval", nn.Dropout(0.3))]:
    module_case(nm, m, r(3, 4, 2))


# BatchNorm: three training steps, then eval; running stats after each.
def bn_case(name, m, shape, steps=3):
    m = m.double()
    ts = {}
    for k, v in m.state_dict().items():
        ts["p." + k] = v.clone()
    m.train()
    for i in range(steps):
        x = r(*shape) * (i + 1) + i
        ts["x%d" % i] = x
        with torch.no_grad():
            ts["y%d" % i] = m(x)
    for k, v in m.state_dict().items():
        ts["after." + k] = v.clone()
    m.eval()
    x = r(*shape)
    ts["xe"] = x
    with torch.no_grad():
        ts["ye"] = m(x)
    cases.append((name, list(ts.items())))
    reprs.append((name, repr(m)))


bn2 = nn.BatchNorm2d(3)
with torch.no_grad():
    bn2.weight.normal_(); bn2.bias.normal_()
bn_case("bn2d", bn2, (4, 3, 3, 2))
bn_case("bn1d", nn.BatchNorm1d(3, momentum=0.3, eps=1e-3), (5, 3))
bn_case("bn1d_3d", nn.BatchNorm1d(2), (4, 2, 3))
bn_case("bn1d_cma", nn.BatchNorm1d(2, momentum=None), (4, 2))
bn_case("bn2d_noaffine_notrack", nn.BatchNorm2d(2, affine=False, track_running_stats=False), (2, 2, 2, 2))

# Losses (functional).
logits = r(5, 4)
tgt = torch.tensor([1, 0, 3, 3, 2])
tgt_ign = torch.tensor([1, -100, 3, 2, 2])
w4 = torch.rand(4) + 0.5
probs = torch.softmax(r(5, 4), 1)
case("ce", x=logits, t=tgt.double(), y=F.cross_entropy(logits, tgt).reshape(()),
     y_sum=F.cross_entropy(logits, tgt, reduction="sum").reshape(()), y_none=F.cross_entropy(logits, tgt, reduction="none"),
     w=w4, y_w=F.cross_entropy(logits, tgt, weight=w4).reshape(()), t_ign=tgt_ign.double(),
     y_ign=F.cross_entropy(logits, tgt_ign).reshape(()),
     y_ls=F.cross_entropy(logits, tgt, label_smoothing=0.2).reshape(()),
     t_prob=probs, y_prob=F.cross_entropy(logits, probs).reshape(()))
lp = F.log_softmax(r(5, 4), 1)
case("nll", x=lp, t=tgt.double(), y=F.nll_loss(lp, tgt).reshape(()), w=w4, y_w=F.nll_loss(lp, tgt, weight=w4).reshape(()),
     t_ign=torch.tensor([1, 2, 0, 2, 3]).double(), y_ign=F.nll_loss(lp, torch.tensor([1, 2, 0, 2, 3]), ignore_index=2).reshape(()))
a, b = r(3, 4), r(3, 4)
case("mse", x=a, t=b, y=F.mse_loss(a, b).reshape(()), y_sum=F.mse_loss(a, b, reduction="sum").reshape(()))
case("l1", x=a, t=b, y=F.l1_loss(a, b).reshape(()), y_none=F.l1_loss(a, b, reduction="none"))
case("smoothl1", x=a, t=b, y=F.smooth_l1_loss(a, b).reshape(()), y_b=F.smooth_l1_loss(a, b, beta=0.5).reshape(()),
     y_b0=F.smooth_l1_loss(a, b, beta=0.0).reshape(()))
p = torch.rand(3, 4) * 0.98 + 0.01
tb = (torch.rand(3, 4) > 0.5).double()
wb = torch.rand(3, 4)
case("bce", x=p, t=tb, y=F.binary_cross_entropy(p, tb).reshape(()), w=wb,
     y_w=F.binary_cross_entropy(p, tb, weight=wb, reduction="sum").reshape(()))
pw = torch.rand(4) * 2
case("bcelogits", x=a, t=tb, y=F.binary_cross_entropy_with_logits(a, tb).reshape(()), pw=pw,
     y_pw=F.binary_cross_entropy_with_logits(a, tb, pos_weight=pw).reshape(()))
lq = F.log_softmax(r(3, 4), 1)
pt = torch.softmax(r(3, 4), 1)
pt[0, 1] = 0.0
case("kldiv", x=lq, t=pt, y=F.kl_div(lq, pt, reduction="batchmean").reshape(()),
     y_sum=F.kl_div(lq, pt, reduction="sum").reshape(()), lt=torch.log(pt + 0.1),
     y_lt=F.kl_div(lq, torch.log(pt + 0.1), reduction="mean", log_target=True).reshape(()))

for nm, m in [("ce_loss", nn.CrossEntropyLoss()), ("mse_loss", nn.MSELoss(reduction="sum")), ("kl_loss", nn.KLDivLoss()),
              ("seq", nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Dropout(0.5), nn.Linear(3, 2, bias=False))),
              ("conv_repr", nn.Conv2d(3, 64, 3, stride=2, padding=1)),
              ("conv_repr2", nn.Conv2d(4, 8, (3, 2), stride=(2, 1), dilation=2, groups=2, bias=False)),
              ("conv_same_repr", nn.Conv2d(3, 3, 3, padding="same")),
              ("misc_repr", nn.Sequential(nn.Conv1d(2, 3, 5), nn.ConvTranspose2d(2, 3, 3, stride=2, output_padding=1),
                                          nn.AdaptiveAvgPool2d(1), nn.AvgPool2d(2), nn.LayerNorm(5), nn.GroupNorm(2, 4),
                                          nn.Embedding(5, 2), nn.BatchNorm2d(8, momentum=None), nn.LeakyReLU(),
                                          nn.GELU("tanh"), nn.Softmax(dim=-1), nn.Flatten(), nn.Identity(),
                                          nn.SiLU(), nn.Sigmoid(), nn.Tanh()))]:
    reprs.append((nm, repr(m)))


# ---- torchvision ResNet (0.14), shared with the io interop test ----
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_resnet import BasicBlock, Bottleneck, ResNet  # noqa: E402

r18 = ResNet(BasicBlock, [2, 2, 2, 2], 10)
r50 = ResNet(Bottleneck, [3, 4, 6, 3])
r34 = ResNet(BasicBlock, [3, 4, 6, 3])
reprs.append(("resnet18", repr(r18)))


def cstr(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", '\\n"\n    "') + '"'


out = sys.stdout
out.write("/* Generated by tests/nn_ref/gen.py with PyTorch %s: do not edit. */\n" % torch.__version__)
out.write("#ifndef NN_REF_H\n#define NN_REF_H\n#include <stdint.h>\n\n")
out.write("typedef struct { const char *name; int ndim; int64_t shape[6]; const double *data; } nn_ref_tensor;\n")
out.write("typedef struct { const char *name; int n; const nn_ref_tensor *t; } nn_ref_case;\n\n")
for ci, (cname, ts) in enumerate(cases):
    for ti, (tn, t) in enumerate(ts):
        vals = t.detach().double().reshape(-1).tolist()
        out.write("static const double NR_%d_%d[] = {%s};\n" % (ci, ti, ", ".join(repr(v) for v in vals) if vals else "0"))
    out.write("static const nn_ref_tensor NR_%d[] = {\n" % ci)
    for ti, (tn, t) in enumerate(ts):
        shp = list(t.shape)
        out.write('  {"%s", %d, {%s}, NR_%d_%d},\n' % (tn, len(shp), ", ".join(map(str, shp)) if shp else "0", ci, ti))
    out.write("};\n")
out.write("static const nn_ref_case NN_REF_CASES[] = {\n")
for ci, (cname, ts) in enumerate(cases):
    out.write('  {"%s", %d, NR_%d},\n' % (cname, len(ts), ci))
out.write("};\n#define NN_REF_NCASES %d\n\n" % len(cases))
out.write("static const char *const NN_REF_REPRS[][2] = {\n")
for nm, s in reprs:
    out.write('  {"%s", %s},\n' % (nm, cstr(s)))
out.write("};\n#define NN_REF_NREPRS %d\n\n" % len(reprs))
keys = list(r18.state_dict().keys())
out.write("static const char *const NN_REF_RESNET18_KEYS[] = {\n%s};\n" % "".join('  "%s",\n' % k for k in keys))
out.write("#define NN_REF_RESNET18_NKEYS %d\n" % len(keys))
shapes = [list(v.shape) for v in r18.state_dict().values()]
out.write("static const int64_t NN_REF_RESNET18_NUMEL[] = {%s};\n" % ", ".join(str(v.numel()) for v in r18.state_dict().values()))
npar = lambda m: sum(p.numel() for p in m.parameters())
out.write("#define NN_REF_RESNET18_PARAMS %dLL /* num_classes=10 */\n" % npar(r18))
out.write("#define NN_REF_RESNET34_PARAMS %dLL\n" % npar(r34))
out.write("#define NN_REF_RESNET50_PARAMS %dLL\n" % npar(r50))
out.write("#define NN_REF_RESNET50_NKEYS %d\n" % len(r50.state_dict()))
out.write("\n#endif\n")
