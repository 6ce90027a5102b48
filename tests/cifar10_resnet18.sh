#!/bin/sh
# examples/cifar10_resnet18 end to end on small CIFAR-10-format binary batches
# generated here (CIFAR-10 itself cannot be downloaded): 160 training images
# (data_batch_1.bin, data_batch_2.bin) and 50 test images whose classes differ
# by their colour, 1 epoch with the full recipe (crop + flip + normalize, SGD
# momentum 0.9 wd 5e-4, cosine). Tiny batches need a smaller lr than the
# recipe's 0.1 (made for batch 128 over 30 epochs), so the test passes --lr 0.01.
# The training loss must decrease over the epoch.
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 not available to generate the CIFAR files"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wick-cifar.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
python3 - "$tmp" <<'PY' || exit 99
import random, sys
rng = random.Random(1)
base = [[rng.randrange(30, 226) for c in range(3)] for k in range(10)]
def write(path, n):
    out = bytearray()
    for i in range(n):
        k = rng.randrange(10)
        out.append(k)  # label byte, then 1024 R, 1024 G, 1024 B
        for c in range(3):
            out += bytes(max(0, min(255, base[k][c] + rng.randrange(-40, 41))) for _ in range(1024))
    open(sys.argv[1] + "/" + path, "wb").write(out)
write("data_batch_1.bin", 96)
write("data_batch_2.bin", 64)
write("test_batch.bin", 50)
PY
prog="${top_builddir:-.}/examples/cifar10_resnet18"
"$prog" "$tmp" --epochs 1 --batch-size 16 --lr 0.01 --workers 2 >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "cifar10_resnet18 exited with an error"; }
cat "$tmp/log"
grep -q "160 training and 50 test images" "$tmp/log" || fail "did not read both training batches and the test batch"
grep -q "^Epoch 1: train loss=" "$tmp/log" || fail "no epoch line"
grep -q "^final test accuracy: " "$tmp/log" || fail "no final accuracy line"
set -- $(sed -n 's/^training loss: first [0-9]* batches \([0-9.]*\) -> last [0-9]* batches \([0-9.]*\)$/\1 \2/p' "$tmp/log")
[ $# -eq 2 ] || fail "no training-loss summary line"
awk -v a="$1" -v b="$2" 'BEGIN { exit !(b < a) }' || fail "the training loss did not decrease ($1 -> $2)"
# A missing directory is a clean error naming it.
if "$prog" "$tmp/none" --epochs 1 >"$tmp/bad" 2>&1; then fail "a missing data directory succeeded"; fi
grep -q "none" "$tmp/bad" || { cat "$tmp/bad"; fail "the error does not name the directory"; }
echo "PASS: ResNet-18 recipe trained 1 epoch on generated CIFAR-10 batches, loss $1 -> $2"
