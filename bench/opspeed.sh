#!/bin/sh
# Issue 21's speed leftovers side by side, alternating: ROUNDS rounds of (Wick, PyTorch) on the rows of the ops
# that got dedicated cpu kernels (interpolate and its backward, index_put, unique_consecutive), each side timing
# its rows with the existing twins (bench/bench_nn_surface + nn_surface.py, bench/bench_linalg_surface +
# linalg_surface.py; BENCH_ONLY picks the rows); 2 threads on both sides. Prints, per row, the median over the
# rounds of each side's per-round median, the ratio, and the load average before and after (the machine is
# shared: ratios measured in the same minutes are what count). PYTHON picks PyTorch (default the venv's 2.15).
# Usage: bench/opspeed.sh BUILD_DIR [ROUNDS] [REPS]
#   (make -C BUILD_DIR bench/bench_nn_surface bench/bench_linalg_surface first)
build=${1:-build}
rounds=${2:-5}
reps=${3:-7}
src=$(dirname "$0")
py=${PYTHON:-/work/venv-torch/bin/python}
[ -x "$py" ] || py=/usr/bin/python3
for e in bench_nn_surface bench_linalg_surface; do
  [ -x "$build/bench/$e" ] || { echo "opspeed: no $build/bench/$e (run: make -C $build bench/$e)"; exit 2; }
done
NN=interpolate_nearest_x2,interpolate_bilinear_x2,interpolate_bicubic_x2,interpolate_bilinear_x2_backward
NN=$NN,interpolate_bicubic_x2_backward,interpolate_bilinear_antialias_half,interpolate_bicubic_antialias_half
LA=unique_consecutive,index_put,index_put_accumulate,index_put_accumulate_duplicates
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wick-opspeed.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
load0=$(cut -d' ' -f1-3 /proc/loadavg)
r=1
while [ "$r" -le "$rounds" ]; do
  BENCH_ONLY=$NN WICK_NUM_THREADS=2 "$build/bench/bench_nn_surface" "$reps" | sed 's/^nn_surface_//' >>"$tmp/w" || exit 1
  BENCH_ONLY=$LA WICK_NUM_THREADS=2 "$build/bench/bench_linalg_surface" "$reps" | sed 's/^linalg_//' >>"$tmp/w" || exit 1
  BENCH_ONLY=$NN "$py" "$src/nn_surface.py" "$reps" | sed 's/^nn_surface_//' >>"$tmp/t" || exit 1
  BENCH_ONLY=$LA "$py" "$src/linalg_surface.py" "$reps" | sed 's/^torch_linalg_//' >>"$tmp/t" || exit 1
  r=$((r + 1))
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)
echo "$rounds alternating rounds of $reps calls, 2 threads; load average before $load0, after $load1"
echo "| op (1M float32 inputs) | Wick ms | PyTorch ms | Wick / PyTorch |"
echo "|---|---|---|---|"
awk 'function med(s,   n, a, i, j, t) { n = split(s, a, " ")
       for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
       return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
     NR == FNR { t[$1] = t[$1] " " $2; next }
     { if (!($1 in w)) order[++k] = $1; w[$1] = w[$1] " " $2 }
     END { for (i = 1; i <= k; i++) { n = order[i]; a = med(w[n]); b = med(t[n]); name = n; sub(/_ms$/, "", name)
             r = b > 0 ? a / b : 0; flag = r > 2 ? " (over 2x)" : ""
             printf "| %s | %.3f | %.3f | %.2f%s |\n", name, a, b, r, flag } }' \
  "$tmp/t" "$tmp/w"
