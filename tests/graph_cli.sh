#!/bin/sh
# `wick graph MODEL`: the traced graph of a zoo model with a symbolic batch,
# and examples/trace_simplenet (trace, print, replay at another batch).
b="${top_builddir:-.}"
fail() { echo "FAIL: $*"; exit 1; }
out=$("$b/tools/wick" graph resnet18 --input 2x3x224x224 --stats) || fail "wick graph exited $?"
for want in "[s0, 3, 224, 224]" "[s0, 64, 56, 56]" "[s0, 512, 7, 7]" "[s0, 1000]" "layer4.1.conv2" \
  "layer1.0.conv1.weight" "guard: input 0 'x': dim 1 == 3" "symbol s0: batch"; do
  printf '%s\n' "$out" | grep -qF "$want" || fail "no '$want' in the graph"
done
[ "$(printf '%s\n' "$out" | grep -c ' conv2d ')" -eq 20 ] || fail "resnet18 should have 20 conv2d nodes"
static=$("$b/tools/wick" graph lenet --input 3x1x28x28 --static) || fail "wick graph --static exited $?"
printf '%s\n' "$static" | grep -q "s0" && fail "--static graph has a symbol"
"$b/tools/wick" graph nosuchmodel --input 1x3 >/dev/null 2>&1
[ $? -eq 2 ] || fail "an unknown model should exit 2"
"$b/tools/wick" graph resnet18 >/dev/null 2>&1
[ $? -eq 2 ] || fail "a missing --input should exit 2"
ex=$("$b/examples/trace_simplenet") || fail "trace_simplenet exited $?: $ex"
printf '%s\n' "$ex" | grep -qF "replay at batch 32: [32, 10], equal to eager" || fail "trace_simplenet: $ex"
echo "PASS"
