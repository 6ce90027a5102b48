#!/bin/sh
# Models exported by PyTorch 2 (PyPI; /work/venv-torch or $WICK_TORCH2_PYTHON)
# with both of its exporters: the TorchScript-based one (dynamo=False) and
# the torch.export-based default (dynamo=True, via onnxscript; it writes the
# weights to an external data file). A small CNN, ResNet-18 and a decoder with
# ConvTranspose2d layers, each imported by `wick run` at batch 1 and 8 from
# one file with a dynamic batch axis: outputs equal PyTorch's within 1e-4
# absolute + 1e-4 relative (f32; convolutions sum in different orders).
# Skips (77) when that python has no torch or no onnx (CI); the dynamo exporter is
# skipped (with a note) when onnxscript is missing.
top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-..}
PY=
for p in "$WICK_TORCH2_PYTHON" "$top_builddir/venv/bin/python" /work/venv-torch/bin/python; do
  [ -n "$p" ] || continue
  # torch.onnx.export needs the onnx package beside torch (PyTorch 2.9 and later)
  if "$p" -c 'import torch, numpy, onnx, sys; sys.exit(int(torch.__version__.split(".")[0]) < 2)' 2>/dev/null; then PY=$p; break; fi
done
if [ -z "$PY" ]; then
  echo "SKIP: no python with PyTorch 2, onnx and numpy (set WICK_TORCH2_PYTHON)"
  exit 77
fi
exporters=legacy
if "$PY" -c 'import onnxscript' 2>/dev/null; then exporters="legacy dynamo"; else
  echo "note: onnxscript is not installed: PyTorch 2's dynamo exporter is not checked"
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/wick-onnx-torch2.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
for e in $exporters; do
  mkdir -p "$dir/$e"
  "$PY" "$top_srcdir/tests/onnx_torch.py" "$dir/$e" $e >"$dir/export.log" 2>&1 || { cat "$dir/export.log"; exit 1; }
  grep '^torch ' "$dir/export.log"
  for m in torch_cnn torch_resnet18 torch_deconv; do
    for b in 1 8; do
      "$top_builddir/tools/wick" run "$dir/$e/$m.onnx" --input "input=$dir/$e/${m}_b${b}_in.npy" \
        --output "$dir/$e/${m}_b${b}_wick.npy" >"$dir/run.log" 2>&1 || { cat "$dir/run.log"; exit 1; }
      "$PY" - "$dir/$e/${m}_b${b}_wick.npy" "$dir/$e/${m}_b${b}_out.npy" "$e $m batch $b" <<'PY' || exit 1
import sys, numpy as np
got, want = np.load(sys.argv[1]), np.load(sys.argv[2])
ok = got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-4)
print("%s: Wick vs PyTorch max abs diff %.3g: %s" % (sys.argv[3], float(np.abs(got - want).max()) if got.shape == want.shape else -1,
                                                      "ok" if ok else "MISMATCH"))
sys.exit(0 if ok else 1)
PY
    done
  done
done
