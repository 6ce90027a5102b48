#!/bin/sh
# Fault-injection sweep: runs Check suites with WICK_FAIL_ALLOC=N (the Nth
# allocation through Wick's hook fails, core/alloc.c: the core's allocations
# and the plugins', which call wk_malloc & co. through the host table) for
# N = 1, 2, ...
# and asserts that every injected failure ends as a clean error: no crash or
# signal, no AddressSanitizer/UBSan report, no leak (LeakSanitizer), no
# internal error ("failed without a message", "returned NULL without an
# error"). Test assertions failing because an allocation failed are expected
# and ignored. Check forks one process per test, and each counts on from its
# parent's count, so one run injects the Nth allocation of every test.
#
# Two phases. Start-up: `wick info` with every FAULT_INIT_STEP-th (default 7)
# allocation of wk_init failing (declaring the ops, loading the plugins): the
# command must end with a message or run on without the part that failed.
# Suites: WICK_FAIL_ALLOC_AFTER_INIT=1, so N counts the allocations of each
# test after its wk_init.
#
# Usage: tests/fault_sweep.sh [SUITE...]   (default: check_core check_tensor
#        check_autograd check_nn check_io check_data), from a build tree made
#        with --enable-sanitizers (make fault-sweep does this).
# Env:   FAULT_DENSE (every N up to it; default 300), then N grows by 1/FAULT_GROW
#        (default 8, i.e. x1.125) up to the largest per-test count; FAULT_LOG_DIR
#        keeps the output of failing runs (default fault-sweep-logs).
set -u
top_builddir=${top_builddir:-.}
dense=${FAULT_DENSE:-300}
grow=${FAULT_GROW:-8}
logdir=${FAULT_LOG_DIR:-fault-sweep-logs}
suites=${*:-check_core check_tensor check_autograd check_nn check_io check_data}
mkdir -p "$logdir"
export CK_DEFAULT_TIMEOUT=${CK_DEFAULT_TIMEOUT:-60}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:intercept_tls_get_addr=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
bad_total=0
points_total=0
runs_total=0
# ---- start-up
wick="$top_builddir/tools/wick"
if [ -x "$wick" ] && [ "${FAULT_INIT_STEP:-7}" -gt 0 ]; then
  max=$(WICK_FAIL_ALLOC_REPORT=1 "$wick" info 2>&1 >/dev/null | sed -n 's/.*: \([0-9]*\) allocations counted.*/\1/p' | tail -1)
  n=1; runs=0; points=0; bad=0
  while [ "$n" -le "${max:-0}" ]; do
    out=$(WICK_FAIL_ALLOC=$n WICK_FAIL_ALLOC_REPORT=1 "$wick" info 2>&1)
    runs=$((runs + 1))
    points=$((points + $(printf '%s\n' "$out" | grep -c "the failure was injected")))
    problems=$(printf '%s\n' "$out" | grep -E "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|Segmentation|Aborted|without a message|without an error" | head -5)
    if [ -n "$problems" ]; then
      bad=$((bad + 1))
      printf '%s\n' "$out" > "$logdir/wick-info.$n.log"
      echo "fault_sweep: wick info WICK_FAIL_ALLOC=$n:"
      printf '%s\n' "$problems" | sed 's/^/    /'
    fi
    n=$((n + ${FAULT_INIT_STEP:-7}))
  done
  echo "fault_sweep: start-up (wick info): $runs runs (N = 1..$max step ${FAULT_INIT_STEP:-7}), $points injection points exercised, $bad runs with problems"
  bad_total=$((bad_total + bad)); points_total=$((points_total + points)); runs_total=$((runs_total + runs))
fi
# ---- suites
export WICK_FAIL_ALLOC_AFTER_INIT=1
for s in $suites; do
  exe="$top_builddir/tests/$s"
  [ -x "$exe" ] || { echo "fault_sweep: $exe is not built" >&2; exit 2; }
  # the largest number of allocations any test process of the suite makes
  max=$(WICK_FAIL_ALLOC_REPORT=1 "$exe" 2>&1 >/dev/null | sed -n 's/.*: \([0-9]*\) allocations counted.*/\1/p' | sort -n | tail -1)
  max=${max:-0}
  n=1
  points=0
  runs=0
  bad=0
  while [ "$n" -le "$max" ]; do
    out=$(WICK_FAIL_ALLOC=$n WICK_FAIL_ALLOC_REPORT=1 "$exe" 2>&1)
    runs=$((runs + 1))
    p=$(printf '%s\n' "$out" | grep -c "the failure was injected")
    points=$((points + p))
    problems=$(printf '%s\n' "$out" | grep -E "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|Received signal|without a message|without an error|Early exit|timeout" | head -5)
    if [ -n "$problems" ]; then
      bad=$((bad + 1))
      printf '%s\n' "$out" > "$logdir/$s.$n.log"
      echo "fault_sweep: $s WICK_FAIL_ALLOC=$n:"
      printf '%s\n' "$problems" | sed 's/^/    /'
    fi
    if [ "$n" -lt "$dense" ]; then n=$((n + 1)); else n=$((n + n / grow + 1)); fi
  done
  echo "fault_sweep: $s: $runs runs (N = 1..$max), $points injection points exercised, $bad runs with problems"
  bad_total=$((bad_total + bad))
  points_total=$((points_total + points))
  runs_total=$((runs_total + runs))
done
echo "fault_sweep: total $runs_total runs, $points_total injection points, $bad_total runs with problems"
[ "$bad_total" -eq 0 ]
