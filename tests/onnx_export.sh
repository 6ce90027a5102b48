#!/bin/sh
# Wick's ONNX exports checked by onnx (check_model, full_check) and run by
# ONNX Runtime against Wick's eager outputs: mlp, lenet, resnet18 and resnet50 with a
# dynamic batch axis, at batch 1, 3 and 8; a model with ConvTranspose2d layers, and resnet18 with
# its initializers in an external data file (resnet18_ext.onnx.data). Needs python3 with onnx, onnxruntime
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
"$PY" "$top_srcdir/tests/onnx_ort.py" "$dir" || exit 1
# wick run: the exported resnet18 imported again and run from a .npy input, against Wick's eager output
"$PY" -c "import numpy as np, sys; np.save(sys.argv[2], np.fromfile(sys.argv[1], dtype='<f4').reshape(3, 3, 64, 64))" \
  "$dir/resnet18_b3_in.bin" "$dir/x.npy" || exit 1
# (--no-fold --no-channels-last: exactly eager's ops in eager's layout; by default batch norm is folded into
# the convs and the input runs channels-last: rounding differs)
"$top_builddir/tools/wick" run "$dir/resnet18.onnx" --input "input=$dir/x.npy" --output "$dir/y.npy" --no-fold \
  --no-channels-last || exit 1
"$top_builddir/tools/wick" run "$dir/resnet18.onnx" --input "input=$dir/x.npy" --output "$dir/yf.npy" || exit 1
"$PY" - "$dir/y.npy" "$dir/resnet18_b3_out.bin" "$dir/yf.npy" <<'PY' || exit 1
import sys, numpy as np
y, want, yf = np.load(sys.argv[1]), np.fromfile(sys.argv[2], dtype="<f4").reshape(3, -1), np.load(sys.argv[3])
d = float(np.abs(y - want).max())
df = float(np.abs(yf - want).max())
print("wick run resnet18.onnx at batch 3: max abs diff to eager %.3g (--no-fold --no-channels-last), %.3g (default: batch norm folded, channels-last)" % (d, df))
sys.exit(0 if y.shape == want.shape and d == 0 and yf.shape == want.shape and 0 < df <= 1e-5 else 1)
PY
# external data read back by Wick: resnet18_ext.onnx with its .data file, from another working directory
"$PY" -c "import numpy as np, sys; np.save(sys.argv[2], np.fromfile(sys.argv[1], dtype='<f4').reshape(3, 3, 64, 64))" \
  "$dir/resnet18_ext_b3_in.bin" "$dir/x.npy" || exit 1
wick=$(cd "$top_builddir" && pwd)/tools/wick
(cd / && "$wick" run "$dir/resnet18_ext.onnx" --input "input=$dir/x.npy" --output "$dir/y.npy" --no-fold --no-channels-last) ||
  exit 1
"$PY" - "$dir/y.npy" "$dir/resnet18_ext_b3_out.bin" <<'PY' || exit 1
import sys, numpy as np
y, want = np.load(sys.argv[1]), np.fromfile(sys.argv[2], dtype="<f4").reshape(3, -1)
d = float(np.abs(y - want).max())
print("wick run resnet18_ext.onnx (external data) at batch 3: max abs diff to eager %.3g" % d)
sys.exit(0 if y.shape == want.shape and d == 0 else 1)
PY
# the ops programs back through Wick's importer (composed ops round differently: 1e-5)
for o in 13 17 20; do
  "$PY" -c "import numpy as np, sys; np.save(sys.argv[2], np.fromfile(sys.argv[1], dtype='<f4').reshape(3, 16))" \
    "$dir/ops${o}_b3_in.bin" "$dir/x.npy" || exit 1
  "$top_builddir/tools/wick" run "$dir/ops$o.onnx" --input "input=$dir/x.npy" --output "$dir/y.npy" >"$dir/run.log" 2>&1 ||
    { cat "$dir/run.log"; exit 1; }
  "$PY" - "$dir/y.npy" "$dir/ops${o}_b3_out.bin" "$o" <<'PY' || exit 1
import sys, numpy as np
y = np.load(sys.argv[1]); want = np.fromfile(sys.argv[2], dtype="<f4").reshape(y.shape[0], -1)
d = float(np.abs(y - want).max()) if y.shape == want.shape else float("inf")
print("ops (opset %s) exported, imported and run by wick run: max abs diff to eager %.3g" % (sys.argv[3], d))
sys.exit(0 if d <= 1e-5 else 1)
PY
done
# examples/train --export-onnx: a short run of the main job, its model checked and run by ONNX Runtime
if [ -d /usr/share/datasets/fashion-mnist ]; then
  "$top_builddir/examples/train" --model cnn --epochs 1 --limit 128 --out "$dir/run" --export-onnx "$dir/run/model.onnx" \
    >"$dir/train.log" 2>&1 || { cat "$dir/train.log"; exit 1; }
  "$PY" - "$dir/run/model.onnx" <<'PY' || exit 1
import sys, numpy as np, onnx, onnxruntime as ort
m = onnx.load(sys.argv[1])
onnx.checker.check_model(m, full_check=True)
s = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
shape = s.get_inputs()[0].shape
assert shape == ["batch", 1, 28, 28], shape
for b in (1, 3):
    y = s.run(None, {"input": np.random.rand(b, 1, 28, 28).astype(np.float32)})[0]
    assert y.shape == (b, 10) and np.isfinite(y).all(), y.shape
print("examples/train --export-onnx: check_model ok, ONNX Runtime runs it at batch 1 and 3")
PY
else
  echo "examples/train --export-onnx: not checked (no Fashion-MNIST: apt-get install dataset-fashion-mnist)"
fi
