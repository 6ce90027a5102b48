#!/bin/sh
# The op suites once more with the onednn plugin disabled, so both kernel sets
# are tested by `make check`: the plain runs of these suites have onednn
# enabled (it takes the calls it supports), this run has only the cpu kernels.
builddir=${top_builddir:-.}
status=0
ran=0
for exe in "$builddir"/tests/check_ops_* "$builddir"/tests/check_autograd "$builddir"/tests/check_torch_ref \
  "$builddir"/tests/check_nn; do
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
