#!/bin/sh
# Runs the threaded suites under ThreadSanitizer (a build configured with
# --enable-tsan; make tsan-check): the thread pool (check_core's
# parallel_for tests, check_ops_binary's large kernels), the autograd engine
# (check_autograd), the DataLoader's worker threads (check_loader), the
# dispatcher's op caches and the thread-local error slot (check_errors).
# Fails on any ThreadSanitizer report; tests/tsan.supp lists what is
# suppressed and why.
set -u
top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-$(dirname "$0")/..}
suites=${*:-check_core check_autograd check_loader check_ops_binary check_errors}
logdir=${TSAN_LOG_DIR:-tsan-logs}
mkdir -p "$logdir"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=0 second_deadlock_stack=1} suppressions=$top_srcdir/tests/tsan.supp"
export CK_DEFAULT_TIMEOUT=${CK_DEFAULT_TIMEOUT:-300}
export WICK_NUM_THREADS=${WICK_NUM_THREADS:-4}
bad=0
for s in $suites; do
  log=$logdir/$s.log
  "$top_builddir/tests/$s" > "$log" 2>&1
  rc=$?
  n=$(grep -c "WARNING: ThreadSanitizer" "$log")
  res=$(grep -E "^[0-9]+%: Checks" "$log")
  echo "tsan: $s: $res; $n ThreadSanitizer reports (exit $rc)"
  if [ "$n" -gt 0 ] || [ "$rc" -ne 0 ]; then
    bad=1
    grep -A12 "WARNING: ThreadSanitizer" "$log" | grep -E "WARNING|#[0-3] " | head -20 | sed 's/^/    /'
  fi
done
exit $bad
