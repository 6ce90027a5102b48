#!/bin/sh
# Issue 21's nn and loss surface, side by side: bench/bench_nn_surface (Wick, 2 threads) and
# bench/nn_surface.py (PyTorch, 2 threads; PYTHON picks which: default the venv's PyTorch 2.15 at
# /work/venv-torch/bin/python, else Debian's python3) on the same 1M-element float32 inputs.
# Usage: bench/nn_surface.sh BUILD_DIR [REPS]   (make -C BUILD_DIR bench/bench_nn_surface first)
build=${1:-build}
reps=${2:-7}
src=$(dirname "$0")
exe="$build/bench/bench_nn_surface"
py=${PYTHON:-/work/venv-torch/bin/python}
[ -x "$py" ] || py=/usr/bin/python3
[ -x "$exe" ] || { echo "nn_surface: no $exe (run: make -C $build bench/bench_nn_surface)"; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wick-nn-surface.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
WICK_NUM_THREADS=2 "$exe" "$reps" >"$tmp/w" || exit 1
"$py" "$src/nn_surface.py" "$reps" >"$tmp/t" || exit 1
echo "| op (1M float32 inputs) | Wick ms | PyTorch ms | Wick / PyTorch |"
echo "|---|---|---|---|"
awk 'NR == FNR { t[$1] = $2; next }
     { name = $1; sub(/^nn_surface_/, "", name); sub(/_ms$/, "", name)
       r = 0; if ($2 > 0 && t[$1] > 0) r = $2 / t[$1]
       flag = ""; if (r > 2) flag = " (over 2x)"
       printf "| %s | %s | %s | %.2f%s |\n", name, $2, t[$1], r, flag }' "$tmp/t" "$tmp/w"
