#!/usr/bin/python3
"""Reference data for tests/check_nn_attention.c and tests/check_nn_rnn.c,
computed with PyTorch 1.13 (Debian's python3-torch) in float64.

Run:  /usr/bin/python3 tests/nn_ref/gen_layers.py > tests/nn_ref/layers_ref.h

Each case is a list of named tensors: inputs ("x", "q", "k", "v", masks,
"h0", "c0", "lengths"), parameters "p.<state-dict key>", results ("y",
"w" (attention weights), "hn", "cn"), the upstream gradients "gy", "gh",
"gc" of the loss sum(y * gy) + sum(hn * gh) + sum(cn * gc), and the
gradients "g.<input>" / "g.p.<key>" of that loss. Boolean tensors are stored
as 0/1. scaled_dot_product_attention does not exist in 1.13: its reference
is PyTorch 2's documented math (softmax(q k^T * scale + mask) v), written
out below with 1.13's ops."""
import math
import sys
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(17)
torch.set_default_dtype(torch.float64)
cases = []  # (name, [(tensor_name, tensor)])
r = lambda *s: torch.randn(*s)


def run_case(name, fn, inputs, module=None, grads=True):
    """fn(**inputs) -> dict of results; loss = sum over results of res * g<res>."""
    ts = dict(inputs)
    leaves = {k: v.clone().requires_grad_(True) for k, v in inputs.items() if v.is_floating_point() and grads}
    args = {k: leaves.get(k, v) for k, v in inputs.items()}
    before = {k: v.detach().clone() for k, v in module.state_dict().items()} if module is not None else {}
    res = fn(**args)
    loss = 0
    for k, y in res.items():
        ts[k] = y.detach()
        if k == "w":  # weights are compared, not differentiated
            continue
        g = r(*y.shape)
        ts["g" + k if k != "y" else "gy"] = g
        loss = loss + (y * g).sum()
    if module is not None:
        for k, p in module.state_dict(keep_vars=True).items():
            ts["p." + k] = before[k]
            if not torch.equal(before[k], p.detach()):  # changed in place by the forward (max_norm)
                ts["after." + k] = p.detach().clone()
    params = list(module.named_parameters()) if module is not None else []
    if grads:
        wrt = list(leaves.values()) + [p for _, p in params]
        gs = torch.autograd.grad(loss, wrt, allow_unused=True)
        for (k, _), g in zip(list(leaves.items()) + [("p." + n, p) for n, p in params], gs):
            ts["g." + k] = g if g is not None else torch.zeros_like(dict(params).get(k[2:], leaves.get(k)))
    cases.append((name, list(ts.items())))


# ---- scaled_dot_product_attention: PyTorch 2's math ----
def sdpa_math(q, k, v, mask=None, causal=False, scale=None):
    L, S = q.shape[-2], k.shape[-2]
    s = q @ k.transpose(-2, -1) * (scale if scale is not None else 1 / math.sqrt(q.shape[-1]))
    if causal:
        s = s.masked_fill(~torch.ones(L, S, dtype=torch.bool).tril(), float("-inf"))
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask
    return torch.softmax(s, -1) @ v


run_case("sdpa_basic", lambda q, k, v: {"y": sdpa_math(q, k, v)}, dict(q=r(2, 3, 4, 5), k=r(2, 3, 6, 5), v=r(2, 3, 6, 7)))
run_case("sdpa_causal", lambda q, k, v: {"y": sdpa_math(q, k, v, causal=True)},
         dict(q=r(2, 5, 4), k=r(2, 7, 4), v=r(2, 7, 3)))
bm = torch.rand(4, 6) > 0.4
bm[:, 0] = True  # no row fully masked
run_case("sdpa_boolmask", lambda q, k, v, mask: {"y": sdpa_math(q, k, v, mask=mask)},
         dict(q=r(2, 2, 4, 5), k=r(2, 2, 6, 5), v=r(2, 2, 6, 5), mask=bm))
run_case("sdpa_floatmask", lambda q, k, v, mask: {"y": sdpa_math(q, k, v, mask=mask, scale=0.3)},
         dict(q=r(2, 3, 4, 5), k=r(2, 3, 6, 5), v=r(2, 3, 6, 2), mask=r(2, 1, 4, 6)))
run_case("sdpa_blocks", lambda q, k, v: {"y": sdpa_math(q, k, v, causal=True)},
         dict(q=r(1, 2, 70, 16), k=r(1, 2, 70, 16), v=r(1, 2, 70, 8)))


# ---- MultiheadAttention ----
def mha_case(name, E, H, q, k, v, kpm=None, am=None, weights=True, average=True, **kw):
    m = nn.MultiheadAttention(E, H, **kw)
    with torch.no_grad():
        for p in m.parameters():
            p.normal_(0, 0.3)
    m.train()
    inputs = {"q": q, "k": k, "v": v}
    if kpm is not None:
        inputs["kpm"] = kpm
    if am is not None:
        inputs["am"] = am
    self_attn = q is k and k is v

    def fn(q, k, v, kpm=None, am=None):
        if self_attn:
            k = v = q
        y, w = m(q, k, v, key_padding_mask=kpm, attn_mask=am, need_weights=weights, average_attn_weights=average)
        return {"y": y, "w": w} if weights else {"y": y}
    if self_attn:
        inputs = {"q": q}
        if kpm is not None:
            inputs["kpm"] = kpm
        if am is not None:
            inputs["am"] = am
        run_case(name, lambda q, kpm=None, am=None: fn(q, q, q, kpm, am), inputs, m)
    else:
        run_case(name, fn, inputs, m)


x = r(5, 3, 8)
mha_case("mha_self", 8, 2, x, x, x)
kpm = torch.tensor([[False, False, False, True, True, False], [False, True, False, False, False, False]])
mha_case("mha_cross_bf", 8, 2, r(2, 4, 8), r(2, 6, 8), r(2, 6, 8), kpm=kpm, am=r(4, 6), average=False, batch_first=True)
am3 = torch.rand(2 * 4, 5, 5) > 0.6
am3[..., 1] = False  # True = not allowed; key 1 always allowed
mha_case("mha_mask3d_nobias", 8, 4, r(5, 2, 8), r(5, 2, 8), r(5, 2, 8), am=am3, weights=False, bias=False)


# ---- Transformer layers ----
def perturb(m):
    with torch.no_grad():
        for n, p in m.named_parameters():
            p.add_(torch.randn_like(p) * 0.1)


def layer_case(name, m, names, inputs, masks):
    perturb(m)
    m.train()  # dropout 0; the slow path (gradients are on)

    def fn(**a):
        return {"y": m(*[a[n] for n in names], **{k: a[k] for k in masks})}
    run_case(name, fn, inputs, m)


causal = torch.triu(torch.full((5, 5), float("-inf")), 1)
skpm = torch.tensor([[False] * 5, [False, False, False, True, True], [False] * 4 + [True]])
layer_case("enc_post_relu", nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), ["src"],
           dict(src=r(5, 3, 8), src_key_padding_mask=skpm), ["src_key_padding_mask"])
layer_case("enc_pre_gelu_bf", nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation="gelu", norm_first=True,
                                                         batch_first=True, layer_norm_eps=1e-6),
           ["src"], dict(src=r(3, 5, 8), src_mask=causal), ["src_mask"])
tmask = torch.triu(torch.ones(4, 4, dtype=torch.bool), 1)
mkpm = torch.tensor([[False] * 6, [False, False, False, False, True, True]])
layer_case("dec_post", nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0), ["tgt", "memory"],
           dict(tgt=r(4, 2, 8), memory=r(6, 2, 8), tgt_mask=tmask, memory_key_padding_mask=mkpm),
           ["tgt_mask", "memory_key_padding_mask"])
layer_case("dec_pre_gelu_bf", nn.TransformerDecoderLayer(8, 4, 12, dropout=0.0, activation="gelu", norm_first=True,
                                                         batch_first=True),
           ["tgt", "memory"], dict(tgt=r(2, 4, 8), memory=r(2, 3, 8), memory_mask=r(4, 3)), ["memory_mask"])
enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), 2, norm=nn.LayerNorm(8))
layer_case("encoder_stack", enc, ["src"], dict(src=r(5, 2, 8), mask=causal), ["mask"])


# ---- LSTM / GRU ----
def rnn_case(name, m, x, h0=None, c0=None, lengths=None):
    m.train()  # dropout between layers is 0 here
    inputs = {"x": x}
    if h0 is not None:
        inputs["h0"] = h0
    if c0 is not None:
        inputs["c0"] = c0
    lstm = isinstance(m, nn.LSTM)

    def fn(x, h0=None, c0=None):
        inp = x
        if lengths is not None:
            inp = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=m.batch_first, enforce_sorted=False)
        hx = None
        if h0 is not None:
            hx = (h0, c0) if lstm else h0
        y, h = m(inp, hx)
        if lengths is not None:
            y, _ = nn.utils.rnn.pad_packed_sequence(y, batch_first=m.batch_first, total_length=x.shape[1 if m.batch_first else 0])
        if lstm:
            return {"y": y, "h": h[0], "c": h[1]}
        return {"y": y, "h": h}
    run_case(name, fn, inputs, m)
    if lengths is not None:
        cases[-1][1].append(("lengths", lengths.double()))


rnn_case("lstm_2l_bi", nn.LSTM(4, 5, num_layers=2, bidirectional=True), r(6, 3, 4), r(4, 3, 5), r(4, 3, 5))
rnn_case("gru_2l_bi_bf", nn.GRU(4, 5, num_layers=2, bidirectional=True, batch_first=True), r(3, 6, 4))
rnn_case("lstm_nobias", nn.LSTM(3, 4, bias=False), r(5, 2, 3), r(1, 2, 4), r(1, 2, 4))
rnn_case("gru_h0", nn.GRU(3, 4, num_layers=3), r(4, 2, 3), r(3, 2, 4))
rnn_case("lstm_lengths_bi_bf", nn.LSTM(4, 5, bidirectional=True, batch_first=True), r(3, 6, 4),
         lengths=torch.tensor([6, 4, 2]))
rnn_case("gru_lengths_2l_bi", nn.GRU(3, 4, num_layers=2, bidirectional=True), r(5, 3, 3), r(4, 3, 4),
         lengths=torch.tensor([2, 5, 3]))
rnn_case("lstm_unbatched", nn.LSTM(3, 4, num_layers=2), r(5, 3), r(2, 4), r(2, 4))

# ---- conv padding modes, Embedding max_norm ----
def module_case(name, m, x):
    m.train()
    run_case(name, lambda x: {"y": m(x)}, dict(x=x), m)


module_case("conv2d_reflect", nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"), r(2, 2, 5, 6))
module_case("conv2d_replicate_s2", nn.Conv2d(2, 4, 3, stride=2, padding=(2, 1), padding_mode="replicate"), r(1, 2, 7, 6))
module_case("conv2d_circular_g2", nn.Conv2d(4, 2, (3, 2), padding=(1, 2), dilation=(1, 2), groups=2,
                                            padding_mode="circular"), r(2, 4, 5, 6))
module_case("conv1d_reflect_same", nn.Conv1d(2, 3, 4, padding="same", padding_mode="reflect"), r(2, 2, 9))
module_case("conv2d_circular_same", nn.Conv2d(2, 2, 3, padding="same", padding_mode="circular", bias=False), r(1, 2, 4, 5))


def emb_case(name, m, idx):
    m.train()
    run_case(name, lambda: {"y": m(idx)}, {}, m)
    cases[-1][1].append(("idx", idx.double()))


emb_case("embedding_max_norm", nn.Embedding(10, 4, max_norm=1.5), torch.tensor([[1, 3, 3, 9], [0, 1, 7, 7]]))
emb_case("embedding_max_norm_p1_pad", nn.Embedding(6, 3, padding_idx=2, max_norm=1.0, norm_type=1.0),
         torch.tensor([2, 5, 5, 0]))

# ---- TransformerDecoder stack (appended last among the float64 cases) ----
dec_stack = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, norm_first=True), 2, norm=nn.LayerNorm(8))
layer_case("decoder_stack", dec_stack, ["tgt", "memory"],
           dict(tgt=r(4, 2, 8), memory=r(5, 2, 8), tgt_mask=torch.triu(torch.full((4, 4), float("-inf")), 1),
                memory_key_padding_mask=torch.tensor([[False] * 5, [False, False, False, True, True]])),
           ["tgt_mask", "memory_key_padding_mask"])

# ---- PositionalEncoding of PyTorch's Transformer tutorial, float32 as there ----
torch.set_default_dtype(torch.float32)


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer('pe', pe)

    def forward(self, x):
        x = x + self.pe[:x.size(0)]
        return self.dropout(x)


pe_m = PositionalEncoding(16, 0.0, max_len=50)
pe_x = torch.randn(7, 2, 16)
cases.append(("positional_encoding", [("x", pe_x), ("y", pe_m(pe_x)), ("pe", pe_m.pe)]))
torch.set_default_dtype(torch.float64)

# ---- MultiheadAttention kdim/vdim, add_bias_kv, add_zero_attn (appended after the earlier cases' draws) ----
kpm2 = torch.tensor([[False, False, True, False, False, False], [False, False, False, False, True, True]])
mha_case("mha_kvdim", 8, 2, r(4, 2, 8), r(6, 2, 5), r(6, 2, 3), kdim=5, vdim=3)
mha_case("mha_bias_kv_zero_attn_bf", 8, 2, r(2, 4, 8), r(2, 6, 8), r(2, 6, 8), kpm=kpm2, am=r(4, 6), average=False,
         batch_first=True, add_bias_kv=True, add_zero_attn=True)
am3b = torch.rand(2 * 2, 4, 6) > 0.7
mha_case("mha_kvdim_bias_kv_boolmask", 8, 2, r(4, 2, 8), r(6, 2, 5), r(6, 2, 7), am=am3b, weights=False, kdim=5,
         vdim=7, add_bias_kv=True)
mha_case("mha_zero_attn_nobias", 8, 4, r(5, 2, 8), r(3, 2, 8), r(3, 2, 8), kpm=kpm2[:, :3], weights=True,
         add_zero_attn=True, bias=False)

# ---- LSTM proj_size (appended after the earlier cases' draws) ----
rnn_case("lstm_proj_2l_bi", nn.LSTM(4, 6, num_layers=2, bidirectional=True, proj_size=3), r(5, 2, 4), r(4, 2, 3),
         r(4, 2, 6))
rnn_case("lstm_proj_lengths_bf", nn.LSTM(3, 5, batch_first=True, proj_size=2, bias=False), r(3, 4, 3),
         lengths=torch.tensor([4, 2, 3]))

# ---- nn.Transformer (encoder-decoder; appended after the earlier cases' draws) ----
kpm5 = torch.tensor([[False] * 5, [False, False, False, True, True]])
layer_case("transformer_post", nn.Transformer(8, 2, 2, 1, dim_feedforward=16, dropout=0.0), ["src", "tgt"],
           dict(src=r(5, 2, 8), tgt=r(4, 2, 8), tgt_mask=torch.triu(torch.full((4, 4), float("-inf")), 1),
                src_key_padding_mask=kpm5, memory_key_padding_mask=kpm5),
           ["tgt_mask", "src_key_padding_mask", "memory_key_padding_mask"])
layer_case("transformer_pre_gelu_bf", nn.Transformer(8, 4, 1, 2, dim_feedforward=12, dropout=0.0, activation="gelu",
                                                     norm_first=True, batch_first=True),
           ["src", "tgt"], dict(src=r(2, 6, 8), tgt=r(2, 3, 8), src_mask=r(6, 6), memory_mask=r(3, 6)),
           ["src_mask", "memory_mask"])

reprs = [("mha", repr(nn.MultiheadAttention(8, 2))),
         ("pe", repr(PositionalEncoding(16, 0.2, 50))),
         ("conv_modes", repr(nn.Sequential(nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect", bias=False),
                                           nn.Conv1d(2, 2, 3, padding_mode="circular"), nn.Dropout2d(0.25),
                                           nn.Embedding(5, 2, max_norm=1.0), nn.Embedding(5, 2, max_norm=2.0,
                                                                                         norm_type=1.0)))),
         ("enc", repr(nn.TransformerEncoderLayer(8, 2, 16))),
         ("dec", repr(nn.TransformerDecoderLayer(8, 2, 16, norm_first=True))),
         ("lstm", repr(nn.LSTM(4, 5, num_layers=2, bidirectional=True, batch_first=True, dropout=0.5))),
         ("gru", repr(nn.GRU(4, 5, bias=False))),
         ("lstm_proj", repr(nn.LSTM(4, 6, proj_size=3, num_layers=2)))]


def cnum(v):
    if math.isinf(v):
        return "INFINITY" if v > 0 else "-INFINITY"
    return "NAN" if math.isnan(v) else repr(v)


def cstr(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", '\\n"\n    "') + '"'


out = sys.stdout
out.write("/* Generated by tests/nn_ref/gen_layers.py with PyTorch %s: do not edit. */\n" % torch.__version__)
out.write("#ifndef LAYERS_REF_H\n#define LAYERS_REF_H\n#include <math.h>\n#include <stdint.h>\n\n")
out.write("typedef struct { const char *name; int ndim; int64_t shape[6]; const double *data; } lr_tensor;\n")
out.write("typedef struct { const char *name; int n; const lr_tensor *t; } lr_case;\n\n")
for ci, (cname, ts) in enumerate(cases):
    for ti, (tn, t) in enumerate(ts):
        vals = t.detach().double().reshape(-1).tolist()
        out.write("static const double LR_%d_%d[] = {%s};\n" % (ci, ti, ", ".join(cnum(v) for v in vals) if vals else "0"))
    out.write("static const lr_tensor LR_%d[] = {\n" % ci)
    for ti, (tn, t) in enumerate(ts):
        shp = list(t.shape)
        out.write('  {"%s", %d, {%s}, LR_%d_%d},\n' % (tn, len(shp), ", ".join(map(str, shp)) if shp else "0", ci, ti))
    out.write("};\n")
out.write("static const lr_case LR_CASES[] = {\n")
for ci, (cname, ts) in enumerate(cases):
    out.write('  {"%s", %d, LR_%d},\n' % (cname, len(ts), ci))
out.write("};\n#define LR_NCASES %d\n\n" % len(cases))
out.write("static const char *const LR_REPRS[][2] = {\n")
for nm, s in reprs:
    out.write('  {"%s", %s},\n' % (nm, cstr(s)))
out.write("};\n#define LR_NREPRS %d\n\n#endif\n" % len(reprs))
