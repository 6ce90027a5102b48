#!/bin/sh
# The op suites once more with the onednn plugin disabled, so both kernel sets
# are tested by `make check`: the plain runs of these suites have onednn
# enabled (it takes the calls it supports), this run has only the cpu kernels.
builddir=${top_builddir:-.}
# Check's per-test timeout (4 s by default) counts a forked test's fixture
# too (wk_init loading every plugin). This script runs all the op suites in
# one `make check` slot, next to the other suites of a -j2 run on a busy
# 2-core machine, where a sub-millisecond test once failed
# (check_ops_index, test_index_split_chunk; not reproduced in 10 runs at
# load 5-7, no wrong value found: most likely that timeout). A hang still
# fails, later.
CK_DEFAULT_TIMEOUT=${CK_DEFAULT_TIMEOUT:-60}
export CK_DEFAULT_TIMEOUT
status=0
ran=0
for exe in "$builddir"/tests/check_ops_* "$builddir"/tests/check_autograd "$builddir"/tests/check_torch_ref \
  "$builddir"/tests/check_nn "$builddir"/tests/check_memory_format; do
  case $exe in *.o | *.log | *.trs) continue ;; esac
  [ -x "$exe" ] || continue
  s=$(basename "$exe")
  ran=$((ran + 1))
  if WICK_DISABLE_PLUGINS="onednn${WICK_DISABLE_PLUGINS:+,$WICK_DISABLE_PLUGINS}" "$exe"; then
    echo "PASS: $s without onednn"
  else
    echo "FAIL: $s without onednn"
    status=1
  fi
done
if [ $ran -eq 0 ]; then
  echo "SKIP: no op suite is built in $builddir/tests"
  exit 77
fi
exit $status
