#!/usr/bin/env python3
"""Checks Wick's ONNX exports against tools Wick did not write: every model
listed in DIR/manifest.txt (written by tests/onnx_ref) must pass
onnx.checker.check_model(full_check=True) and ONNX Runtime's CPU provider must
reproduce Wick's eager outputs (float32, 1e-5 relative + 1e-5 absolute) at
each batch size, from one export with a dynamic batch axis."""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort


def main(d):
    rows = [l.split() for l in open(os.path.join(d, "manifest.txt")) if l.strip()]
    checked, bad = set(), 0
    worst = {}
    for r in rows:
        name, batch, fin, fout = r[0], int(r[1]), r[2], r[3]
        colon = r.index(":")
        ishape = [int(v) for v in r[4:colon]]
        oshape = [int(v) for v in r[colon + 1:]]
        path = os.path.join(d, name + ".onnx")
        if name not in checked:
            if name.endswith("_ext"):  # initializers in NAME.onnx.data: ONNX's external data fields, read by onnx itself
                m = onnx.load(path, load_external_data=False)
                ext = [t for t in m.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
                big = [t for t in m.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL or
                       len(t.raw_data) >= 1024]
                assert ext and len(ext) == len(big), "%s: %d of %d initializers of 1 KiB or more external" % (
                    name, len(ext), len(big))
                locs = set(e.value for t in ext for e in t.external_data if e.key == "location")
                assert locs == {name + ".onnx.data"}, locs
                print("%s: %d initializers in %s (%d bytes), the model %d bytes" % (
                    name, len(ext), name + ".onnx.data", os.path.getsize(path + ".data"), os.path.getsize(path)))
                onnx.checker.check_model(path, full_check=True)  # the path form reads the external data
                m = onnx.load(path)
                onnx.checker.check_model(m, full_check=True)
            else:
                m = onnx.load(path)
                onnx.checker.check_model(m, full_check=True)
            assert m.producer_name == "wick", m.producer_name
            dims = m.graph.input[0].type.tensor_type.shape.dim
            ops = sorted(set(n.op_type for n in m.graph.node))
            assert dims[0].dim_param == "batch", "batch axis is not dynamic: %s" % dims[0]
            inits = [i.name for i in m.graph.initializer]
            print("%s: check_model(full_check=True) ok, opset %d, %d nodes, %d initializers (%s, ...)" %
                  (name, m.opset_import[0].version, len(m.graph.node), len(inits), ", ".join(inits[:3])))
            print("  %d op types: %s" % (len(ops), " ".join(ops)))
            checked.add(name)
        x = np.fromfile(fin, dtype="<f4").reshape(ishape)
        want = np.fromfile(fout, dtype="<f4").reshape(oshape)
        so = ort.SessionOptions()
        so.intra_op_num_threads = 2
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        got = sess.run(None, {sess.get_inputs()[0].name: x})[0]
        if got.shape != want.shape:
            print("%s batch %d: ONNX Runtime gives shape %s, Wick %s" % (name, batch, got.shape, want.shape))
            bad += 1
            continue
        err = np.abs(got.astype(np.float64) - want)
        tol = 1e-5 + 1e-5 * np.abs(want)
        if not np.all(err <= tol):  # name the columns that differ (the ops model concatenates one block per op)
            cols = sorted(set(np.nonzero(err > tol)[-1].tolist()))
            print("  columns differing: %s" % cols[:20])
        rel = float(np.max(err / np.maximum(np.abs(want), 1e-6)))
        worst[(name, batch)] = float(err.max())
        ok = bool(np.all(err <= tol))
        print("%s batch %d: max abs diff %.3g, max rel %.3g: %s" % (name, batch, err.max(), rel, "ok" if ok else "MISMATCH"))
        bad += not ok
    print("onnxruntime %s, onnx %s: %d of %d runs match" % (ort.__version__, onnx.__version__, len(rows) - bad, len(rows)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
