#!/bin/sh
# Issue 6's acceptance check: the main job (examples/train with its defaults:
# the Fashion-MNIST CNN, 3 epochs) reaches the same test accuracy (+-0.5 pt)
# with and without the onednn plugin, seed by seed.
# Usage: bench/onednn_accuracy.sh BUILD_DIR [SEEDS...]   (default seeds 0 1 2; ~1-3 minutes a run)
build=${1:-build}
shift 2>/dev/null
seeds=${*:-0 1 2}
train="$build/examples/train"
[ -x "$train" ] || { echo "onednn_accuracy: no $train (build first)"; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wick-acc.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
acc() { sed -n 's/^final test accuracy: \([0-9.]*\)%.*/\1/p' "$1"; }
worst=0
echo "| seed | with onednn | without onednn | difference (pt) |"
echo "|---|---|---|---|"
for s in $seeds; do
  "$train" --seed "$s" --out "$tmp/a$s" >"$tmp/a$s.log" 2>&1 || { cat "$tmp/a$s.log"; exit 1; }
  WICK_DISABLE_PLUGINS=onednn "$train" --seed "$s" --out "$tmp/b$s" >"$tmp/b$s.log" 2>&1 || { cat "$tmp/b$s.log"; exit 1; }
  a=$(acc "$tmp/a$s.log") b=$(acc "$tmp/b$s.log")
  d=$(awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; printf "%.2f", d }')
  worst=$(awk -v d="$d" -v w="$worst" 'BEGIN { print (d > w) ? d : w }')
  echo "| $s | $a% | $b% | $d |"
done
awk -v w="$worst" 'BEGIN { exit !(w <= 0.5) }' && echo "largest difference $worst pt: within +-0.5 pt" ||
  { echo "largest difference $worst pt: over +-0.5 pt"; exit 1; }
