"""PyTorch twin of examples/train_lm: the same character-level Transformer
language model (token + position embeddings, pre-norm GELU
TransformerEncoder layers under a causal mask, final LayerNorm, linear head),
the same text, vocabulary, splits, batches (splitmix64 offsets from --seed),
AdamW and clipping, printing the same log lines and, with --bench, the same
key/value lines prefixed torch_. --init PATH loads the initial weights that
train_lm --save-init wrote (safetensors, read here with numpy), so both runs
start from the same point and see the same batches.

Run with PyTorch 2.x from PyPI (the comparison the issue asks for):
  /work/venv-torch/bin/python bench/lm.py [the train_lm options]
It also runs under Debian's PyTorch 1.13.1. Threads: torch.set_num_threads(2)."""
import json
import math
import os
import resource
import struct
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

M64 = (1 << 64) - 1


def splitmix64(state):
    state[0] = (state[0] + 0x9E3779B97F4A7C15) & M64
    z = state[0]
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def parse(argv):
    c = dict(data="/usr/share/games/fortunes", prompt="The ", steps=300, batch_size=32, block=128, d_model=128,
             heads=4, layers=4, ff=0, dropout=0.0, lr=2e-3, clip=1.0, seed=0, log_every=25, eval_every=100,
             eval_batches=16, sample=300, temperature=0.8, init=None, bench=False, threads=2)
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--bench":
            c["bench"] = True
            i += 1
            continue
        key = a[2:].replace("-", "_")
        if key not in c or i + 1 >= len(argv):
            sys.exit("lm.py: unknown option or missing value: %s" % a)
        v = argv[i + 1]
        c[key] = v if isinstance(c[key], str) or c[key] is None else type(c[key])(v)
        i += 2
    return c


def load_text(path):
    if not os.path.isdir(path):
        return open(path, "rb").read()
    names = []
    for n in os.listdir(path):
        full = os.path.join(path, n)
        if n.startswith(".") or (len(n) > 4 and n.endswith(".dat")) or os.path.islink(full) or not os.path.isfile(full):
            continue
        names.append(n)
    # train_lm sorts the full paths with strcmp: byte order
    return b"".join(open(os.path.join(path, n), "rb").read() for n in sorted(names, key=lambda s: s.encode()))


def load_safetensors(path):
    raw = open(path, "rb").read()
    (hlen,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + hlen])
    base = 8 + hlen
    dtypes = {"F32": np.float32, "F64": np.float64, "I64": np.int64}
    out = {}
    for k, v in header.items():
        if k == "__metadata__":
            continue
        a, b = v["data_offsets"]
        out[k] = torch.from_numpy(np.frombuffer(raw[base + a:base + b], dtype=dtypes[v["dtype"]]).reshape(v["shape"]).copy())
    return out


class CharTransformer(nn.Module):
    def __init__(self, vocab, c):
        super().__init__()
        d = c["d_model"]
        self.tok_emb = nn.Embedding(vocab, d)
        self.pos_emb = nn.Embedding(c["block"], d)
        layer = nn.TransformerEncoderLayer(d, c["heads"], dim_feedforward=c["ff"] or 4 * d, dropout=c["dropout"],
                                           activation="gelu", batch_first=True, norm_first=True)
        kw = {"enable_nested_tensor": False} if int(torch.__version__.split(".")[0]) >= 2 else {}
        self.encoder = nn.TransformerEncoder(layer, c["layers"], norm=nn.LayerNorm(d), **kw)
        self.head = nn.Linear(d, vocab)

    def forward(self, idx):
        T = idx.shape[1]
        mask = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
        x = self.tok_emb(idx) + self.pos_emb(torch.arange(T))
        return self.head(self.encoder(x, mask=mask))


def make_batch(ids, lo, hi, B, T, rng):
    span = hi - lo - T
    offs = [lo + splitmix64(rng) % span for _ in range(B)]
    x = np.stack([ids[o:o + T] for o in offs])
    y = np.stack([ids[o + 1:o + T + 1] for o in offs])
    return torch.from_numpy(x), torch.from_numpy(y.reshape(-1))


def main():
    c = parse(sys.argv[1:])
    torch.set_num_threads(c["threads"])
    torch.manual_seed(c["seed"])
    text = load_text(c["data"])
    chars = sorted(set(text))
    stoi = {b: i for i, b in enumerate(chars)}
    vocab = len(chars)
    ids = np.array([stoi[b] for b in text], dtype=np.int64)
    n_train = len(text) * 9 // 10
    model = CharTransformer(vocab, c)
    if c["init"]:
        model.load_state_dict(load_safetensors(c["init"]), strict=True)
    opt = torch.optim.AdamW(model.parameters(), lr=c["lr"])
    B, T = c["batch_size"], c["block"]
    print("text: %s, %d bytes (train %d, val %d), vocabulary %d" % (c["data"], len(text), n_train, len(text) - n_train, vocab))
    print("model: torch %s CharTransformer: %d parameters" % (torch.__version__, sum(p.numel() for p in model.parameters())))
    sys.stdout.flush()

    def evaluate():
        rng = [c["seed"] ^ 0x5EED5EED5EED5EED]
        model.eval()
        s = 0.0
        with torch.no_grad():
            for _ in range(c["eval_batches"]):
                x, y = make_batch(ids, n_train, len(text), B, T, rng)
                s += F.cross_entropy(model(x).reshape(-1, vocab), y).item()
        model.train()
        return s / c["eval_batches"]

    rng = [c["seed"]]
    times, run_loss, run_n, val = [], 0.0, 0, float("nan")
    t_start = time.perf_counter()
    for step in range(1, c["steps"] + 1):
        t0 = time.perf_counter()
        x, y = make_batch(ids, 0, n_train, B, T, rng)
        loss = F.cross_entropy(model(x).reshape(-1, vocab), y)
        loss.backward()
        if c["clip"] > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), c["clip"])
        opt.step()
        opt.zero_grad(set_to_none=True)
        lv = loss.item()
        times.append(time.perf_counter() - t0)
        run_loss += lv
        run_n += 1
        if step % c["log_every"] == 0 or step == c["steps"] or step == 1:
            print("step %d: loss %.4f (%.3f bits/char) | %.0f tok/s" %
                  (step, run_loss / run_n, run_loss / run_n / math.log(2), B * T / times[-1]))
            run_loss, run_n = 0.0, 0
            sys.stdout.flush()
        if step % c["eval_every"] == 0 or step == c["steps"]:
            val = evaluate()
            print("step %d: val loss %.4f (%.3f bits/char)" % (step, val, val / math.log(2)))
            sys.stdout.flush()
    wall = time.perf_counter() - t_start
    med = sorted(times)[len(times) // 2]
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print("final: val loss %.4f, %.3f bits/char | %.0f tok/s (median step %.1f ms) | %.1f s in all | peak RSS %.0f MB" %
          (val, val / math.log(2), B * T / med, med * 1e3, wall, rss))
    if c["bench"]:
        print("torch_lm_train_tok_s %.1f" % (B * T / med))
        print("torch_lm_final_val_loss %.4f" % val)
        print("torch_lm_final_val_bpc %.4f" % (val / math.log(2)))
        print("torch_lm_peak_rss_mb %.1f" % rss)
    if c["sample"] > 0:
        model.eval()
        ctx = [stoi[b] for b in c["prompt"].encode() if b in stoi] or [stoi.get(10, 0)]
        out = bytearray(b for b in c["prompt"].encode() if b in stoi)
        rng = [c["seed"] ^ 0xC0FFEE]
        with torch.no_grad():
            for _ in range(c["sample"]):
                logits = model(torch.tensor([ctx[-T:]]))[0, -1].double()
                p = torch.exp((logits - logits.max()) / c["temperature"]).tolist()
                u = (splitmix64(rng) >> 11) * 2.0 ** -53 * sum(p)
                pick = vocab - 1
                for v, pv in enumerate(p):
                    u -= pv
                    if u < 0:
                        pick = v
                        break
                ctx.append(pick)
                out.append(chars[pick])
        print("---- sample (temperature %g) ----\n%s\n---- end of sample ----" %
              (c["temperature"], out.decode("utf-8", "replace")))


if __name__ == "__main__":
    main()
