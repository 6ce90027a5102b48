#!/bin/sh
# Issue 21's speed rows for engineer A's ops: bench/bench_linalg_surface (Wick,
# 2 threads) and bench/linalg_surface.py (PyTorch 2.15 from /work/venv-torch, or
# $TORCH_PYTHON; 2 threads) on the same 1M-element float32 inputs; prints a table
# of medians and the ratio Wick / PyTorch (above 2: more than twice as slow).
# Usage: bench/linalg_surface.sh BUILD_DIR [REPS]   (make bench/bench_linalg_surface first)
build=${1:-build}
reps=${2:-11}
src=$(dirname "$0")
py=${TORCH_PYTHON:-/work/venv-torch/bin/python}
exe="$build/bench/bench_linalg_surface"
[ -x "$exe" ] || { echo "linalg_surface: no $exe (run: make -C $build bench/bench_linalg_surface)"; exit 2; }
"$py" -c "import torch" 2>/dev/null || { echo "linalg_surface: PyTorch not found ($py)"; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wick-linalg-surface.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
WICK_NUM_THREADS=2 "$exe" "$reps" >"$tmp/w" || exit 1
"$py" "$src/linalg_surface.py" "$reps" >"$tmp/t" || exit 1
echo "| op (1M float32) | Wick ms | PyTorch $("$py" -c 'import torch; print(torch.__version__)') ms | Wick / PyTorch |"
echo "|---|---|---|---|"
awk 'NR == FNR { sub(/^torch_/, "", $1); t[$1] = $2; next }
     { name = $1; sub(/^linalg_/, "", name); sub(/_ms$/, "", name)
       r = 0; if ($2 > 0 && t[$1] > 0) r = $2 / t[$1]
       flag = ""; if (r > 2) flag = " (over 2x)"
       printf "| %s | %s | %s | %.2f%s |\n", name, $2, t[$1], r, flag }' "$tmp/t" "$tmp/w"
