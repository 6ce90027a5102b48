#!/bin/sh
# Runs the libFuzzer targets of tests/fuzz (make fuzz, in a build configured
# with CC=clang --enable-fuzz) for FUZZ_SECONDS each (default 30), from seed
# corpora that tests/fuzz/seeds.py writes into fuzz-corpus/ (kept and grown
# between runs). Prints each target's executions per second and coverage
# (libFuzzer's cov: edges, ft: features, corp: corpus size) and fails when a
# target finds a crash, a leak, a sanitizer report or a timeout (the input
# is kept in fuzz-findings/).
set -u
top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-$(dirname "$0")/../..}
secs=${FUZZ_SECONDS:-30}
default_targets="fuzz_schema fuzz_safetensors fuzz_idx fuzz_cifar fuzz_image"
# the onnx importer's target exists when the onnx plugin was built
[ -x "$top_builddir/tests/fuzz/fuzz_onnx" ] && default_targets="$default_targets fuzz_onnx"
targets=${*:-$default_targets}
corpus=$top_builddir/fuzz-corpus
findings=$top_builddir/fuzz-findings
mkdir -p "$findings"
export TMPDIR=${TMPDIR:-/tmp}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:intercept_tls_get_addr=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
if [ ! -d "$corpus" ]; then
  python3 "$top_srcdir/tests/fuzz/seeds.py" "$corpus" "$top_srcdir" "$top_builddir/tests/fuzz/jpeg_seed" || exit 1
fi
fail=0
for t in $targets; do
  case $t in
    fuzz_schema) c=schema ;; fuzz_safetensors) c=safetensors ;; fuzz_idx) c=idx ;;
    fuzz_cifar) c=cifar ;; fuzz_image) c=image ;; fuzz_onnx) c=onnx ;; *) c=$t ;;
  esac
  mkdir -p "$corpus/$c"
  log=$findings/$t.log
  "$top_builddir/tests/fuzz/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$findings/$t-" "$corpus/$c" > "$log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  last=$(grep -E "^#[0-9]+" "$log" | tail -1 | grep -oE "cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[0-9a-zA-Z]+")
  echo "fuzz: $t: ${execs:-?} executions in ${secs}s, ${rate:-?} exec/s, $last, exit $rc"
  if [ "$rc" -ne 0 ]; then
    fail=1
    grep -E "ERROR|SUMMARY|runtime error|Test unit written" "$log" | head -8 | sed 's/^/    /'
  fi
done
rm -f "$TMPDIR"/wick-fuzz-* 2>/dev/null
exit $fail
