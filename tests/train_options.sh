#!/bin/sh
# The main job's run-time choices: --dataset cifar10 with --model resnet18 on
# CIFAR-10-format batches generated here, --dataset imagefolder on PNG class
# folders generated here (3 colours, any sizes: must be learnt), --model mlp with
# AdamW + OneCycle + weight decay on a Fashion-MNIST subset (recorded in
# run.json), and the clean errors for bad choices (unknown optimizer/scheduler/
# dataset, a model that does not fit the data, --amp without the amp plugin,
# a short --amp run (bf16 autocast), a short --amp f16 run (GradScaler) stopped and resumed,
# train/ and val/ folders whose classes differ), --phases and --channels-last.
train="${top_builddir:-.}/examples/train"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wick-trainopt.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 not available to generate the CIFAR files"; exit 77; }
python3 - "$tmp" <<'PY' || exit 99
import random, sys
rng = random.Random(3)
def write(path, n):
    out = bytearray()
    for i in range(n):
        k = rng.randrange(10)
        out.append(k)
        out += bytes(rng.randrange(256) for _ in range(3072))
    open(sys.argv[1] + "/" + path, "wb").write(out)
write("data_batch_1.bin", 48)
write("test_batch.bin", 16)

# ImageFolder: root/{train,val}/{cat,dog,fox}/*.png, RGB of random sizes, one noisy colour per class.
import os, struct, zlib
def png(path, w, h, px):
    raw = b"".join(b"\x00" + b"".join(bytes(px()) for x in range(w)) for y in range(h))
    chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    open(path, "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
                           chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
colours = {"cat": (200, 40, 40), "dog": (40, 200, 40), "fox": (40, 40, 200)}
for split, n in (("train", 12), ("val", 4)):
    for name, c in colours.items():
        d = "%s/images/%s/%s" % (sys.argv[1], split, name)
        os.makedirs(d)
        for i in range(n):
            png("%s/%03d.png" % (d, i), rng.randrange(20, 50), rng.randrange(20, 50),
                lambda: tuple(max(0, min(255, v + rng.randrange(-30, 31))) for v in c))
os.makedirs(sys.argv[1] + "/badimages/train/cat")
os.makedirs(sys.argv[1] + "/badimages/val/dog")
png(sys.argv[1] + "/badimages/train/cat/a.png", 8, 8, lambda: (1, 2, 3))
png(sys.argv[1] + "/badimages/val/dog/a.png", 8, 8, lambda: (1, 2, 3))
for d in ("train/cat", "val/cat", "val/dog"):
    os.makedirs(sys.argv[1] + "/extraval/" + d)
    png(sys.argv[1] + "/extraval/" + d + "/a.png", 8, 8, lambda: (1, 2, 3))
PY

"$train" --dataset cifar10 --data "$tmp" --model resnet18 --epochs 1 --batch-size 16 --lr 0.01 --out "$tmp/c10" \
  >"$tmp/c10.log" 2>&1 || { cat "$tmp/c10.log"; fail "cifar10 + resnet18 run"; }
cat "$tmp/c10.log"
grep -q "model resnet18 .* cifar10: 48 training and 16 test images" "$tmp/c10.log" || fail "cifar10 header line"
grep -q "^Epoch 1: train loss=" "$tmp/c10.log" || fail "cifar10: no epoch line"
grep -q '"name": "cifar10"' "$tmp/c10/run.json" || fail "run.json does not name cifar10"
grep -q '"mean": \[0.4914, 0.4822, 0.4465\]' "$tmp/c10/run.json" || fail "run.json lacks the CIFAR normalisation"

"$train" --dataset imagefolder --data "$tmp/images" --model mlp --image-size 16 --epochs 4 --batch-size 12 \
  --lr 0.01 --out "$tmp/imf" >"$tmp/imf.log" 2>&1 || { cat "$tmp/imf.log"; fail "imagefolder run"; }
cat "$tmp/imf.log"
grep -q "imagefolder: 36 training and 12 test images" "$tmp/imf.log" || fail "imagefolder header line"
grep -q '"image": \[3, 16, 16\], "classes": 3' "$tmp/imf/run.json" || fail "run.json lacks the image geometry"
acc=$(sed -n 's/^final test accuracy: \([0-9.]*\)%.*/\1/p' "$tmp/imf.log")
awk -v a="$acc" 'BEGIN { exit !(a >= 66) }' || fail "imagefolder: only $acc% on three colours"

data=/usr/share/datasets/fashion-mnist
if [ -f "$data/train-images-idx3-ubyte.gz" ]; then
  "$train" --model mlp --optimizer adamw --scheduler onecycle --lr 0.003 --weight-decay 0.01 --epochs 2 \
    --limit 2000 --out "$tmp/mlp" >"$tmp/mlp.log" 2>&1 || { cat "$tmp/mlp.log"; fail "mlp + adamw run"; }
  cat "$tmp/mlp.log"
  grep -q "AdamW lr 0.003, weight decay 0.01, scheduler onecycle" "$tmp/mlp.log" || fail "mlp header line"
  acc=$(sed -n 's/^final test accuracy: \([0-9.]*\)%.*/\1/p' "$tmp/mlp.log")
  awk -v a="$acc" 'BEGIN { exit !(a >= 60) }' || fail "mlp + AdamW reached only $acc%"
  grep -q '"optimizer": "adamw", "lr": 0.003, "momentum": 0.9, "weight_decay": 0.01, "scheduler": "onecycle"' \
    "$tmp/mlp/run.json" || { cat "$tmp/mlp/run.json"; fail "run.json hyper-parameters"; }
  # --amp: forward and loss in bf16 autocast; learns as well as float32 on this subset
  "$train" --amp --epochs 2 --limit 2000 --out "$tmp/amp" >"$tmp/amp.log" 2>&1 || { cat "$tmp/amp.log"; fail "--amp run"; }
  cat "$tmp/amp.log"
  grep -q "mixed precision (autocast bf16)" "$tmp/amp.log" || fail "--amp header line"
  grep -q '"amp": true' "$tmp/amp/run.json" || fail "run.json lacks amp"
  acc=$(sed -n 's/^final test accuracy: \([0-9.]*\)%.*/\1/p' "$tmp/amp.log")
  awk -v a="$acc" 'BEGIN { exit !(a >= 65) }' || fail "cnn with --amp reached only $acc%"
  grep -q '"amp_dtype": "bfloat16"' "$tmp/amp/run.json" || fail "run.json lacks amp_dtype bfloat16"
  # --amp f16: float16 autocast through a GradScaler (short: cpu float16 is slow); resumed, the scaler continues
  "$train" --amp f16 --epochs 2 --stop-after 1 --limit 600 --batch-size 32 --out "$tmp/amp16" >"$tmp/amp16.log" 2>&1 ||
    { cat "$tmp/amp16.log"; fail "--amp f16 run"; }
  cat "$tmp/amp16.log"
  grep -q "mixed precision (autocast f16, GradScaler)" "$tmp/amp16.log" || fail "--amp f16 header line"
  grep -q '"amp_dtype": "float16"' "$tmp/amp16/run.json" || fail "run.json lacks amp_dtype float16"
  python3 -c 'import json, struct, sys; f = open(sys.argv[1], "rb"); n = struct.unpack("<Q", f.read(8))[0]
keys = json.loads(f.read(n)); sys.exit(not any(k.startswith("scaler") and k.endswith("_growth_tracker") for k in keys))' \
    "$tmp/amp16/last.safetensors" || fail "--amp f16: no scaler state in the checkpoint"
  "$train" --amp f16 --epochs 2 --limit 600 --batch-size 32 --out "$tmp/amp16" --resume "$tmp/amp16/last.safetensors" \
    >"$tmp/amp16r.log" 2>&1 || { cat "$tmp/amp16r.log"; fail "--amp f16 --resume"; }
  cat "$tmp/amp16r.log"
  acc=$(sed -n 's/^final test accuracy: \([0-9.]*\)%.*/\1/p' "$tmp/amp16r.log")
  awk -v a="$acc" 'BEGIN { exit !(a >= 50) }' || fail "cnn with --amp f16 reached only $acc%"
  # --phases: where the epoch's time went; --channels-last: the same cnn in NHWC order learns the same
  for f in "" --channels-last; do
    "$train" --epochs 1 --limit 1280 --scheduler none --phases $f --out "$tmp/ph$f" >"$tmp/ph$f.log" 2>&1 ||
      { cat "$tmp/ph$f.log"; fail "--phases $f run"; }
    cat "$tmp/ph$f.log"
    grep -q "^  phases, ms per batch: data [0-9.]*, forward+loss [0-9.]*, backward [0-9.]*, optimizer step [0-9.]*, metrics [0-9.]*, release+logging [0-9.]* (sum [0-9.]*); evaluation [0-9.]* ms, checkpoints+logs [0-9.]* ms$" \
      "$tmp/ph$f.log" || fail "--phases $f: no phases line"
  done
  l1=$(sed -n 's/^Epoch 1: train loss=\([0-9.]*\) .*/\1/p' "$tmp/ph.log")
  l2=$(sed -n 's/^Epoch 1: train loss=\([0-9.]*\) .*/\1/p' "$tmp/ph--channels-last.log")
  awk -v a="$l1" -v b="$l2" 'BEGIN { d = a - b; exit !(a > 0 && d < 0.01 && d > -0.01) }' ||
    fail "--channels-last: train loss $l2, without it $l1"
fi

# Bad choices: exit status 1 or 2 and a message naming what was wrong.
expect_error() { # pattern, args...
  pat=$1
  shift
  if "$train" "$@" --out "$tmp/bad" >"$tmp/bad.log" 2>&1; then fail "train $* succeeded"; fi
  grep -q "$pat" "$tmp/bad.log" || { cat "$tmp/bad.log"; fail "train $*: no '$pat' in the error"; }
}
expect_error "unknown optimizer 'lbfgs'" --optimizer lbfgs
expect_error "unknown scheduler 'warm'" --scheduler warm
expect_error "unknown model 'vgg'" --model vgg
expect_error "dataset 'imagenet' is not one of" --dataset imagenet
expect_error "cnn takes 1x28x28 images, --dataset cifar10 gives 3x32x32" --dataset cifar10 --data "$tmp" --model cnn
expect_error "needs --data DIR" --dataset cifar10
expect_error "no data_batch_\*.bin in it" --dataset cifar10 --data "$tmp/c10"
(WICK_DISABLE_PLUGINS=amp && export WICK_DISABLE_PLUGINS && expect_error "service 'amp'" --amp --limit 64) || exit 1
expect_error "bad value 'x' for --weight-decay" --weight-decay x
expect_error "amp takes bf16 or f16, got 'f32'" --amp f32
expect_error "unknown device type 'npu'" --device npu:0
expect_error "needs train/ and val/" --dataset imagefolder --data "$tmp"
expect_error "class 0 is 'cat' in train/ but 'dog'" --dataset imagefolder --data "$tmp/badimages" --model mlp
expect_error "has class 'dog', which train/ does not" --dataset imagefolder --data "$tmp/extraval" --model mlp
echo "PASS: resnet18 on cifar10-format data, mlp on an ImageFolder, mlp + AdamW + OneCycle, and the errors for bad choices"
