#!/bin/sh
# The op suites once more with the onednn plugin disabled, so both kernel sets
# are tested by `make check`: the plain runs of these suites have onednn
# enabled (it takes what it supports), this run has only the cpu kernels.
builddir=${top_builddir:-.}
suites="check_ops_unary check_ops_linalg check_ops_nn check_ops_conv check_ops_backward check_autograd check_torch_ref check_nn"
status=0
for s in $suites; do
  exe="$builddir/tests/$s"
  if [ ! -x "$exe" ]; then
    echo "SKIP: $s is not built"
    continue
  fi
  if WICK_DISABLE_PLUGINS="onednn${WICK_DISABLE_PLUGINS:+,$WICK_DISABLE_PLUGINS}" "$exe"; then
    echo "PASS: $s without onednn"
  else
    echo "FAIL: $s without onednn"
    status=1
  fi
done
exit $status
