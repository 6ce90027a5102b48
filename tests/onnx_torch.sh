#!/bin/sh
# Models exported by PyTorch itself (Debian's python3-torch 1.13.1,
# torch.onnx.export, dynamic batch) imported by the onnx plugin and run with
# `wick run` at batch 1 and 8 from one file: outputs equal PyTorch's within
# 1e-4 absolute + 1e-4 relative (f32; the two libraries sum convolutions in
# different orders). Skips (77) without torch.
top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-..}
PY=/usr/bin/python3
if ! "$PY" -c 'import torch, numpy' 2>/dev/null; then
  echo "SKIP: Debian's python3-torch not installed (scripts/install-deps --bench)"
  exit 77
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/wick-onnx-torch.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
"$PY" "$top_srcdir/tests/onnx_torch.py" "$dir" 2>"$dir/export.log" || { cat "$dir/export.log"; exit 1; }
for m in torch_cnn torch_resnet18; do
  for b in 1 8; do
    "$top_builddir/tools/wick" run "$dir/$m.onnx" --input "input=$dir/${m}_b${b}_in.npy" --output "$dir/${m}_b${b}_wick.npy" \
      >"$dir/run.log" 2>&1 || { cat "$dir/run.log"; exit 1; }
    "$PY" - "$dir/${m}_b${b}_wick.npy" "$dir/${m}_b${b}_out.npy" "$m batch $b" <<'PY' || exit 1
import sys, numpy as np
got, want = np.load(sys.argv[1]), np.load(sys.argv[2])
ok = got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-4)
print("%s: Wick vs PyTorch max abs diff %.3g: %s" % (sys.argv[3], float(np.abs(got - want).max()) if got.shape == want.shape else -1,
                                                      "ok" if ok else "MISMATCH"))
sys.exit(0 if ok else 1)
PY
  done
done
