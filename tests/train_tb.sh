#!/bin/sh
# The main job's TensorBoard event file, checked by an independent decoder
# (Python standard library only): TFRecord framing with masked CRC32C on every
# length and payload, Event protobufs decoded field by field (wall_time,
# step, file_version "brain.Event:2" first, summary values tag/simple_value),
# and the scalars equal to metrics.csv. When the tensorboard package happens
# to be importable, its own EventFileLoader must read the same scalars.
data=/usr/share/datasets/fashion-mnist
if [ ! -f "$data/train-images-idx3-ubyte.gz" ]; then
  echo "SKIP: Fashion-MNIST not installed (apt-get install dataset-fashion-mnist)"
  exit 77
fi
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 not available for the independent decoder"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wick-tb.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
"${top_builddir:-.}/examples/train" --epochs 2 --limit 1280 --batch-size 32 --out "$tmp/run" >"$tmp/log" 2>&1 ||
  { cat "$tmp/log"; echo "FAIL: examples/train"; exit 1; }
set -- "$tmp"/run/events.out.tfevents.*
[ -f "$1" ] || { echo "FAIL: no events.out.tfevents.* file"; exit 1; }
python3 - "$1" "$tmp/run/metrics.csv" <<'PY'
import csv, math, os, socket, struct, sys, time

path, metrics = sys.argv[1], sys.argv[2]

# CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), bit by bit.
def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF

assert crc32c(b"123456789") == 0xE3069283

def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF

def varint(buf, i):
    shift = value = 0
    while True:
        b = buf[i]; i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i

def fields(buf):
    """Decodes a protobuf message into [(field, wire_type, value)]."""
    out, i = [], 0
    while i < len(buf):
        key, i = varint(buf, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(buf, i)
        elif wt == 1:
            v = buf[i:i + 8]; i += 8
        elif wt == 2:
            n, i = varint(buf, i)
            v = buf[i:i + n]; i += n
        elif wt == 5:
            v = buf[i:i + 4]; i += 4
        else:
            raise AssertionError("unexpected wire type %d" % wt)
        assert i <= len(buf), "field %d runs past the message" % f
        out.append((f, wt, v))
    assert i == len(buf)
    return out

raw = open(path, "rb").read()
records, i = [], 0
while i < len(raw):
    assert i + 12 <= len(raw), "truncated record header at byte %d" % i
    n = struct.unpack("<Q", raw[i:i + 8])[0]
    assert struct.unpack("<I", raw[i + 8:i + 12])[0] == masked(raw[i:i + 8]), "bad length CRC at byte %d" % i
    data = raw[i + 12:i + 12 + n]
    assert len(data) == n, "truncated record at byte %d" % i
    assert struct.unpack("<I", raw[i + 12 + n:i + 16 + n])[0] == masked(data), "bad data CRC at byte %d" % i
    records.append(data)
    i += 16 + n

events = []
for rec in records:
    ev = {"step": 0, "values": []}
    for f, wt, v in fields(rec):
        if f == 1:
            assert wt == 1; ev["wall_time"] = struct.unpack("<d", v)[0]
        elif f == 2:
            assert wt == 0; ev["step"] = v
        elif f == 3:
            assert wt == 2; ev["file_version"] = v.decode()
        elif f == 5:
            assert wt == 2
            for sf, swt, sv in fields(v):
                assert (sf, swt) == (1, 2), (sf, swt)
                val = {}
                for vf, vwt, vv in fields(sv):
                    if vf == 1:
                        assert vwt == 2; val["tag"] = vv.decode()
                    elif vf == 2:
                        assert vwt == 5; val["simple_value"] = struct.unpack("<f", vv)[0]
                ev["values"].append(val)
        else:
            raise AssertionError("unexpected Event field %d" % f)
    assert abs(ev["wall_time"] - time.time()) < 3600, ev
    events.append(ev)

assert events[0].get("file_version") == "brain.Event:2" and not events[0]["values"], events[0]
assert all("file_version" not in e for e in events[1:])
assert os.path.basename(path).startswith("events.out.tfevents.")
scalars = {}
for e in events[1:]:
    assert len(e["values"]) == 1, e
    v = e["values"][0]
    scalars.setdefault(v["tag"], {})[e["step"]] = v["simple_value"]

rows = list(csv.DictReader(open(metrics)))
assert [int(r["epoch"]) for r in rows] == [1, 2], rows
pairs = {"train/loss": "train_loss", "train/accuracy": "train_acc", "val/loss": "val_loss",
         "val/accuracy": "val_acc", "lr": "lr", "throughput/img_per_s": "img_per_s"}
for tag, col in pairs.items():
    assert sorted(scalars.get(tag, {})) == [1, 2], (tag, scalars.get(tag))
    for r in rows:
        want, got = float(r[col]), scalars[tag][int(r["epoch"])]
        assert math.isclose(got, struct.unpack("<f", struct.pack("<f", want))[0], rel_tol=1e-6), (tag, got, want)
# 1280 images in batches of 32: 40 steps an epoch, a batch loss every 20 steps.
assert sorted(scalars["batch/loss"]) == [20, 40, 60, 80], sorted(scalars["batch/loss"])
print("decoded %d records (%d bytes), all CRCs valid; tags: %s" % (len(records), len(raw), ", ".join(sorted(scalars))))

try:
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
except Exception:
    print("tensorboard not importable: its EventFileLoader cross-check skipped")
else:
    got = {}
    for e in EventFileLoader(path).Load():
        for v in e.summary.value:
            x = v.simple_value if v.HasField("simple_value") else None
            if x is None:  # newer loaders convert scalars to tensors
                from tensorboard.util import tensor_util
                x = float(tensor_util.make_ndarray(v.tensor))
            got.setdefault(v.tag, {})[e.step] = x
    assert got == scalars, (got, scalars)
    print("tensorboard's EventFileLoader reads the same scalars")
PY
rc=$?
[ $rc -eq 0 ] || { echo "FAIL: the event file did not decode"; exit 1; }
echo "PASS: TensorBoard event file (TFRecord + masked CRC32C + Event/Summary protobufs) verified"
