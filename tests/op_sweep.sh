#!/bin/sh
# The op sweep (tests/check_op_sweep) in each variant: the cpu with every
# plugin loaded, the cpu without onednn (also with each instruction set of
# the cpu plugin's f32 loops this CPU runs: WICK_CPU_ISA), the fake device (a device type the
# sweep registers itself: host memory, no kernels of its own, so only the
# any-device kernels run there and every other op must fail cleanly with the
# cpu's messages), and cuda when a GPU is present. A variant that cannot run
# says why and is skipped; the script fails when any variant fails.
builddir=${top_builddir:-.}
exe=$builddir/tests/check_op_sweep
if [ ! -x "$exe" ]; then
  echo "SKIP: $exe is not built"
  exit 77
fi
status=0
ran=0
variant() {
  name=$1
  shift
  echo "==== op sweep: $name"
  env "$@" "$exe"
  rc=$?
  case $rc in
    0) echo "PASS: op sweep, $name"; ran=$((ran + 1)) ;;
    77) echo "SKIP: op sweep, $name" ;;
    *) echo "FAIL: op sweep, $name (exit $rc)"; status=1 ;;
  esac
}
variant "cpu"
variant "cpu without onednn" WICK_DISABLE_PLUGINS="onednn${WICK_DISABLE_PLUGINS:+,$WICK_DISABLE_PLUGINS}"
# the cpu plugin's f32 loops in each instruction set this CPU runs (plugins/cpu/simd.h; onednn off, so they take every call)
for isa in sse2 avx2 avx512; do
  case $isa in
    avx2) grep -qw avx2 /proc/cpuinfo 2>/dev/null || continue ;;
    avx512) for f in avx512f avx512vl avx512bw avx512dq; do grep -qw $f /proc/cpuinfo 2>/dev/null || continue 2; done ;;
  esac
  variant "cpu without onednn, $isa loops" WICK_CPU_ISA=$isa WICK_DISABLE_PLUGINS="onednn${WICK_DISABLE_PLUGINS:+,$WICK_DISABLE_PLUGINS}"
done
variant "fake device" SWEEP_DEVICE=fake
# full f32 on cuda: cuDNN would otherwise use TF32 for f32 convolutions (10-bit mantissa)
variant "cuda" SWEEP_DEVICE=cuda WICK_CUDNN_ALLOW_TF32=0
if [ $status -eq 0 ] && [ $ran -eq 0 ]; then
  exit 77
fi
exit $status
