#!/bin/sh
# wick info --probe: plugins that segfault, abort or hang in init
# (tests/plugins_crash) are reported with the signal or as hung, the parent
# survives and exits 1, and the build's own plugins load.
top_builddir=${top_builddir:-.}
out=$(WICK_PLUGIN_PATH="$top_builddir/tests/plugins_crash/.libs" WICK_PROBE_TIMEOUT=3 \
  "$top_builddir/tools/wick" info --probe 2>&1)
rc=$?
printf '%s\n' "$out"
fail() { echo "probe.sh: $1"; exit 1; }
[ "$rc" -eq 1 ] || fail "exit status $rc, expected 1"
# under AddressSanitizer a SEGV is caught and reported with exit status 1
printf '%s\n' "$out" | grep -A0 "crashinit" | grep -Eq "CRASHED: killed by signal 11 \(SIGSEGV|EXITED: the process ended with status 1" ||
  fail "crashinit not reported as killed by SIGSEGV"
printf '%s\n' "$out" | grep "abortinit" | grep -Eq "CRASHED: killed by signal 6 \(SIGABRT|EXITED" ||
  fail "abortinit not reported as killed by SIGABRT"
printf '%s\n' "$out" | grep "hanginit" | grep -q "HUNG: no answer within 3 s" || fail "hanginit not reported as hung"
printf '%s\n' "$out" | grep -E "^  cpu +loaded" >/dev/null || fail "the cpu plugin did not load in its child"
printf '%s\n' "$out" | grep -q "3 of .* candidates crashed" || fail "summary line"
echo "probe.sh: ok"
