#!/bin/sh
# Wick's ONNX exports checked by onnx (check_model, full_check) and run by
# ONNX Runtime against Wick's eager outputs: mlp, lenet and resnet18 with a
# dynamic batch axis, at batch 1 and 3. Needs python3 with onnx, onnxruntime
# and numpy (CI: a venv under the build tree, $top_builddir/venv); skips (77)
# without them.
top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-..}
PY=
for p in "$top_builddir/venv/bin/python" python3; do
  if "$p" -c 'import onnx, onnxruntime, numpy' 2>/dev/null; then PY=$p; break; fi
done
if [ -z "$PY" ]; then
  echo "SKIP: python with onnx, onnxruntime and numpy not found (scripts/install-deps --onnx-venv BUILDDIR makes one)"
  exit 77
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/wick-onnx.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
"$top_builddir/tests/onnx_ref" "$dir" || exit 1
"$PY" "$top_srcdir/tests/onnx_ort.py" "$dir"
