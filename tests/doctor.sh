#!/bin/sh
# `wick doctor DIR [--clean]`: lists the io plugin's temporary files whose
# writer is gone (a reaped child's PID), removes them only with --clean, and
# never touches a live writer's file or a name outside the exact pattern.
wick="${top_builddir:-.}/tools/wick"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wick-doctor.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
sh -c 'exit 0' &
dead=$!
wait $dead
kill -0 "$dead" 2>/dev/null && { echo "SKIP: pid $dead was reused"; exit 77; }
live=$$
for f in ".m.safetensors.tmp-$dead-0" ".other.tmp-$dead-12" ".m.safetensors.tmp-$live-0" \
  "m.safetensors.tmp-$dead-0" ".m.safetensors.tmp-$dead-0x" ".m.safetensors.tmp-$dead"; do
  : >"$tmp/$f"
done
mkdir "$tmp/.dir.tmp-$dead-1"
out=$("$wick" doctor "$tmp") || fail "wick doctor exited $?: $out"
echo "$out"
echo "$out" | grep -q "\.m\.safetensors\.tmp-$dead-0 (writer pid $dead is gone)" || fail "stale file not listed"
echo "$out" | grep -q "\.other\.tmp-$dead-12" || fail "second stale file not listed"
echo "$out" | grep -q "2 stale temporary files" || fail "count is not 2"
echo "$out" | grep -q "tmp-$live-" && fail "a live writer's file is listed"
[ -e "$tmp/.m.safetensors.tmp-$dead-0" ] || fail "listing without --clean removed a file"
out=$("$wick" doctor "$tmp" --clean) || fail "wick doctor --clean exited $?: $out"
echo "$out"
echo "$out" | grep -q "removed stale temporary file: .*\.other\.tmp-$dead-12" || fail "--clean did not report the removal"
[ -e "$tmp/.m.safetensors.tmp-$dead-0" ] && fail "--clean kept .m.safetensors.tmp-$dead-0"
[ -e "$tmp/.other.tmp-$dead-12" ] && fail "--clean kept .other.tmp-$dead-12"
for f in ".m.safetensors.tmp-$live-0" "m.safetensors.tmp-$dead-0" ".m.safetensors.tmp-$dead-0x" \
  ".m.safetensors.tmp-$dead" ".dir.tmp-$dead-1"; do
  [ -e "$tmp/$f" ] || fail "--clean removed $f"
done
out=$("$wick" doctor "$tmp") || fail "third run exited $?"
echo "$out" | grep -q "no stale temporary files" || fail "after --clean: $out"
"$wick" doctor "$tmp/nope" 2>/dev/null && fail "a missing directory succeeded"
"$wick" doctor 2>/dev/null; [ $? -eq 2 ] || fail "no DIR is not a usage error"
echo "PASS: wick doctor"
