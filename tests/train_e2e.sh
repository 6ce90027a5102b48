#!/bin/sh
# End to end: the main job trains the CNN on a 6,400-image subset of the real
# Fashion-MNIST for one epoch and must end well above chance (10%).
data=/usr/share/datasets/fashion-mnist
if [ ! -f "$data/train-images-idx3-ubyte.gz" ]; then
  echo "SKIP: Fashion-MNIST not installed (apt-get install dataset-fashion-mnist)"
  exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
out=$("${top_builddir:-.}/examples/train" --epochs 1 --limit 6400 --workers 2 --out "$dir" 2>&1) || {
  echo "$out"
  echo "FAIL: examples/train exited with an error"
  exit 1
}
echo "$out"
acc=$(echo "$out" | sed -n 's/^final test accuracy: \([0-9.]*\)%.*/\1/p')
[ -n "$acc" ] || { echo "FAIL: no final accuracy line"; exit 1; }
if awk -v a="$acc" 'BEGIN { exit !(a >= 60) }'; then
  echo "PASS: test accuracy $acc% after one epoch on 6,400 images"
  exit 0
fi
echo "FAIL: test accuracy $acc% is below 60%"
exit 1
