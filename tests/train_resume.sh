#!/bin/sh
# Checkpoints and --resume of the main job: 2 epochs straight must equal 1 epoch
# (--stop-after 1: the cosine schedule is still the 2-epoch one) + resume for 1
# epoch, bit for bit (last.safetensors: parameters, optimizer
# state, epoch, step, RNG states) and in the printed epoch-2 numbers. Also checks
# best.safetensors, run.json (valid JSON with the required fields) and
# metrics.csv, and that resuming into the wrong model fails cleanly.
data=/usr/share/datasets/fashion-mnist
if [ ! -f "$data/train-images-idx3-ubyte.gz" ]; then
  echo "SKIP: Fashion-MNIST not installed (apt-get install dataset-fashion-mnist)"
  exit 77
fi
train="${top_builddir:-.}/examples/train"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wick-resume.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
common="--limit 1280 --batch-size 64 --seed 7"

"$train" $common --epochs 2 --out "$tmp/straight" >"$tmp/straight.log" 2>&1 || { cat "$tmp/straight.log"; fail "straight run"; }
"$train" $common --epochs 2 --stop-after 1 --out "$tmp/split" >"$tmp/split1.log" 2>&1 || { cat "$tmp/split1.log"; fail "first half"; }
cp "$tmp/split/last.safetensors" "$tmp/epoch1.safetensors"
# The second half loads with 2 worker threads: batches must not depend on them.
"$train" $common --epochs 2 --workers 2 --out "$tmp/split" --resume "$tmp/epoch1.safetensors" >"$tmp/split2.log" 2>&1 ||
  { cat "$tmp/split2.log"; fail "resumed run"; }
cat "$tmp/straight.log" "$tmp/split2.log"

grep -q "^resumed from .* after epoch 1" "$tmp/split2.log" || fail "no 'resumed from' line"
grep -q "^Epoch 1:" "$tmp/split2.log" && fail "the resumed run repeated epoch 1"
a=$(sed -n 's/^\(Epoch 2: .*acc=[0-9.]*\) | [0-9]* img.*/\1/p' "$tmp/straight.log")
b=$(sed -n 's/^\(Epoch 2: .*acc=[0-9.]*\) | [0-9]* img.*/\1/p' "$tmp/split2.log")
[ -n "$a" ] && [ "$a" = "$b" ] || fail "epoch 2 differs: straight '$a' vs resumed '$b'"
fa=$(sed -n 's/^\(final test accuracy: [0-9.]*%\).*/\1/p' "$tmp/straight.log")
fb=$(sed -n 's/^\(final test accuracy: [0-9.]*%\).*/\1/p' "$tmp/split2.log")
[ -n "$fa" ] && [ "$fa" = "$fb" ] || fail "final accuracy differs: '$fa' vs '$fb'"
cmp "$tmp/straight/last.safetensors" "$tmp/split/last.safetensors" ||
  fail "last.safetensors differs between the straight and the resumed run"
for d in straight split; do
  for f in last.safetensors best.safetensors run.json metrics.csv; do
    [ -s "$tmp/$d/$f" ] || fail "$d/$f missing"
  done
  ls "$tmp/$d"/events.out.tfevents.* >/dev/null 2>&1 || fail "$d: no TensorBoard event file"
done
# metrics.csv: header + one row per epoch (the resumed run appends epoch 2).
[ "$(head -n 1 "$tmp/split/metrics.csv")" = "epoch,train_loss,train_acc,val_loss,val_acc,lr,img_per_s" ] ||
  fail "metrics.csv header"
[ "$(cut -d, -f1 "$tmp/split/metrics.csv" | tr '\n' ' ')" = "epoch 1 2 " ] || fail "metrics.csv epochs"
[ "$(cut -d, -f1-6 "$tmp/straight/metrics.csv")" = "$(cut -d, -f1-6 "$tmp/split/metrics.csv")" ] ||
  fail "metrics.csv differs between the straight and the resumed run"
if command -v python3 >/dev/null 2>&1; then
  python3 - "$tmp/split/run.json" <<'PY' || fail "run.json"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["wick"]["version"] and r["wick"]["abi"], r["wick"]
names = {p["name"]: p for p in r["plugins"]}
for n in ("cpu", "nn", "optim", "data", "io"):
    assert n in names and names[n]["status"] == "loaded" and names[n]["version"], (n, names.get(n))
assert r["device"] == "cpu" and r["compiler"] and r["seed"] == 7
h = r["hyperparameters"]
assert (h["model"], h["epochs"], h["batch_size"], h["limit"], h["workers"]) == ("cnn", 2, 64, 1280, 2), h
assert abs(h["lr"] - 0.05) < 1e-12 and abs(h["momentum"] - 0.9) < 1e-12, h
assert r["start_epoch"] == 2 and r["resumed_from"].endswith("epoch1.safetensors")
assert len(r["dataset"]["files"]) == 4 and len(r["dataset"]["fnv1a64"]) == 16, r["dataset"]
# The checksum, recomputed independently.
hsh = 0xcbf29ce484222325
for f in r["dataset"]["files"]:
    for byte in open(f, "rb").read():
        hsh = ((hsh ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
assert "%016x" % hsh == r["dataset"]["fnv1a64"], ("%016x" % hsh, r["dataset"]["fnv1a64"])
print("run.json ok:", ", ".join("%s %s" % (p["name"], p["version"]) for p in r["plugins"]))
PY
fi
# Resuming into another architecture is an error, not a crash.
if "$train" $common --model mlp --epochs 3 --out "$tmp/bad" --resume "$tmp/epoch1.safetensors" >"$tmp/bad.log" 2>&1; then
  fail "resuming a cnn checkpoint as --model mlp succeeded"
fi
grep -q "resume" "$tmp/bad.log" || { cat "$tmp/bad.log"; fail "no error message for a mismatched --resume"; }
cat "$tmp/bad.log"
echo "PASS: 2 epochs straight == 1 epoch + --resume 1 epoch (bit-identical checkpoint)"
