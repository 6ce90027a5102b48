#!/bin/sh
# Issue 21's speed rows: bench/bench_surface (Wick, 2 threads) and
# bench/surface.py (PyTorch 1.13.1, Debian python3-torch, 2 threads) on the
# same 1M-element float32 inputs, alternating in one run; prints a table of
# medians and the ratio Wick / PyTorch (above 2: more than twice as slow).
# Usage: bench/surface.sh BUILD_DIR [REPS]   (make bench/bench_surface first)
build=${1:-build}
reps=${2:-11}
src=$(dirname "$0")
exe="$build/bench/bench_surface"
[ -x "$exe" ] || { echo "surface: no $exe (run: make -C $build bench/bench_surface)"; exit 2; }
/usr/bin/python3 -c "import torch" 2>/dev/null || { echo "surface: PyTorch not found (python3-torch)"; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wick-surface.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
WICK_NUM_THREADS=2 "$exe" "$reps" >"$tmp/w" || exit 1
/usr/bin/python3 "$src/surface.py" "$reps" >"$tmp/t" || exit 1
echo "| op (1M float32) | Wick ms | PyTorch ms | Wick / PyTorch |"
echo "|---|---|---|---|"
awk 'NR == FNR { sub(/^torch_/, "", $1); t[$1] = $2; next }
     { name = $1; sub(/^surface_/, "", name); sub(/_ms$/, "", name)
       r = 0; if ($2 > 0 && t[$1] > 0) r = $2 / t[$1]
       flag = ""; if (r > 2) flag = " (over 2x)"
       printf "| %s | %s | %s | %.2f%s |\n", name, $2, t[$1], r, flag }' "$tmp/t" "$tmp/w"
