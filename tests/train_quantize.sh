#!/bin/sh
# examples/train --quantize: short Fashion-MNIST runs of the cnn with PTQ
# (fuse, x86 qconfig, calibration, convert) and QAT (prepare_qat, a
# fine-tuning epoch, convert) and of the mlp with PTQ: the report lines
# (accuracy, size, speed), int8 accuracy near float32's, the int8 state dict
# written; and the clean errors for bad values and unsupported combinations.
train="${top_builddir:-.}/examples/train"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wick-trainq.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# Bad choices first (no data needed): exit status 2 and a message naming what was wrong.
expect_error() { # pattern, args...
  pat=$1
  shift
  if "$train" "$@" --out "$tmp/bad" >"$tmp/bad.log" 2>&1; then fail "train $* succeeded"; fi
  grep -q -- "$pat" "$tmp/bad.log" || { cat "$tmp/bad.log"; fail "train $*: no '$pat' in the error"; }
}
expect_error "unknown --quantize 'foo' (ptq or qat)" --quantize foo
expect_error "quantize ptq supports --model cnn and mlp, not resnet18" --quantize ptq --model resnet18
expect_error "quantize qat runs on the CPU only.*not --device cuda:0" --quantize qat --device cuda:0
expect_error "quantize ptq does not take --ddp" --quantize ptq --ddp
expect_error "calib-batches and --qat-epochs must be positive" --quantize ptq --calib-batches 0
(WICK_DISABLE_PLUGINS=quant && export WICK_DISABLE_PLUGINS && expect_error "comes with the quant plugin" --quantize ptq) ||
  exit 1

data=/usr/share/datasets/fashion-mnist
[ -f "$data/train-images-idx3-ubyte.gz" ] || { echo "SKIP: Fashion-MNIST not installed in $data (dataset-fashion-mnist)"; exit 77; }

# run NAME ARGS...: a short run, its log checked for the three comparisons; prints "f32 int8" accuracies
run() {
  name=$1
  shift
  "$train" "$@" --out "$tmp/$name" >"$tmp/$name.log" 2>&1 || { cat "$tmp/$name.log"; fail "$name run"; }
  cat "$tmp/$name.log" >&2
  q=$(sed -n 's/^quantized (\([a-z]*\)) test accuracy.*/\1/p' "$tmp/$name.log")
  [ -n "$q" ] || fail "$name: no 'quantized (...) test accuracy' line"
  grep -q "^quantized ($q) model size: f32 [0-9]* bytes, int8 [0-9]* bytes of tensors ([0-9.]*x smaller); safetensors files [0-9]* and [0-9]* bytes" \
    "$tmp/$name.log" || fail "$name: no model size line"
  grep -q "^quantized ($q) inference, forward over the [0-9]* test images ([0-9]* batches), best of 2 passes, [0-9]* threads*: f32 [0-9]* img/s ([0-9.]* ms/batch), int8 [0-9]* img/s ([0-9.]* ms/batch), [0-9.]*x$" \
    "$tmp/$name.log" || fail "$name: no inference speed line"
  ratio=$(sed -n 's/^quantized .* model size: .* (\([0-9.]*\)x smaller).*/\1/p' "$tmp/$name.log")
  awk -v r="$ratio" 'BEGIN { exit !(r > 3.5) }' || fail "$name: the int8 state dict is only ${ratio}x smaller"
  [ -s "$tmp/$name/model_int8.safetensors" ] && [ -s "$tmp/$name/model_f32.safetensors" ] ||
    fail "$name: model_f32/model_int8.safetensors not written"
  sed -n 's/^quantized .* test accuracy: f32 \([0-9.]*\)%, int8 \([0-9.]*\)%.*/\1 \2/p' "$tmp/$name.log"
}

# PTQ: int8 within 2 points of the float model it came from
set -- $(run ptq --epochs 2 --limit 6000 --quantize ptq --calib-batches 16)
awk -v f="$1" -v q="$2" 'BEGIN { exit !(f >= 75 && q - f <= 2 && f - q <= 2) }' || fail "ptq: int8 $2% against f32 $1%"
grep -q "^quantized (ptq): 3 fused groups, x86 qconfig, calibrated on 16 training batches (1024 images)" "$tmp/ptq.log" ||
  fail "ptq: fusion/calibration line"
if command -v python3 >/dev/null 2>&1; then # the packed int8 state dict, under PyTorch's QuantWrapper names
  python3 -c 'import json, struct, sys; f = open(sys.argv[1], "rb"); n = struct.unpack("<Q", f.read(8))[0]
h = json.loads(f.read(n)); m = h["__metadata__"]
sys.exit(not (h["module.0.weight"]["dtype"] == "I8" and "quant.scale" in h and "module.0.weight.q_scale" in h and
              m["wick.quant:module.0.weight"] == "qint8,per_channel_affine"))' "$tmp/ptq/model_int8.safetensors" ||
    fail "ptq: model_int8.safetensors is not the packed int8 state dict"
fi

# QAT: a fine-tuning epoch through FakeQuantize; int8 no worse than 2 points under float32 and within 1 of the
# fake-quantized model it converts
set -- $(run qat --epochs 1 --limit 6000 --quantize qat)
awk -v f="$1" -v q="$2" 'BEGIN { exit !(f >= 70 && f - q <= 2) }' || fail "qat: int8 $2% against f32 $1%"
grep -q "^  QAT: observers frozen after 62 of 94 batches$" "$tmp/qat.log" || fail "qat: observers not frozen"
grep -q "^QAT epoch 1/1: train loss=" "$tmp/qat.log" || fail "qat: no fine-tuning epoch line"
fq=$(sed -n 's/^quantized (qat): .*fake-quantized test accuracy \([0-9.]*\)%$/\1/p' "$tmp/qat.log")
awk -v f="$fq" -v q="$2" 'BEGIN { exit !(f > 0 && q - f <= 1 && f - q <= 1) }' || fail "qat: int8 $2% against fake-quantized $fq%"

# the mlp: one Linear+ReLU group
set -- $(run mlp --model mlp --epochs 1 --limit 6000 --quantize ptq)
awk -v f="$1" -v q="$2" 'BEGIN { exit !(f >= 70 && q - f <= 2 && f - q <= 2) }' || fail "mlp ptq: int8 $2% against f32 $1%"
grep -q "^quantized (ptq): 1 fused group," "$tmp/mlp.log" || fail "mlp: fusion line"
echo "PASS: --quantize ptq and qat on the cnn, ptq on the mlp, and the errors for bad choices"
