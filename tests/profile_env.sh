#!/bin/sh
# WICK_PROFILE: the profiler plugin prints its per-op table at wk_shutdown(),
# into the file the variable names (or stderr for 1); a file it cannot write
# is reported and the table goes to stderr instead.
simplenet="${top_builddir:-.}/examples/simplenet"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wick-profile.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

WICK_PROFILE="$tmp/prof.txt" "$simplenet" >/dev/null 2>"$tmp/err" || fail "simplenet failed: $(cat "$tmp/err")"
[ -s "$tmp/prof.txt" ] || fail "no table written to WICK_PROFILE's file"
grep -q '^Name .*Self CPU %.*# of Calls$' "$tmp/prof.txt" || fail "no header: $(head -3 "$tmp/prof.txt")"
grep -q '^Self CPU time total: ' "$tmp/prof.txt" || fail "no total line"
grep -q '^linear ' "$tmp/prof.txt" || fail "SimpleNet's linear not in the table"

WICK_PROFILE=1 "$simplenet" >/dev/null 2>"$tmp/err1" || fail "simplenet with WICK_PROFILE=1 failed"
grep -q '^Self CPU time total: ' "$tmp/err1" || fail "WICK_PROFILE=1 printed no table on stderr"

WICK_PROFILE="$tmp/no/such/dir/p.txt" "$simplenet" >/dev/null 2>"$tmp/err2" || fail "an unwritable WICK_PROFILE broke the run"
grep -q 'cannot write WICK_PROFILE=' "$tmp/err2" || fail "unwritable file not reported: $(cat "$tmp/err2")"
grep -q '^Self CPU time total: ' "$tmp/err2" || fail "table not printed to stderr instead"

# without WICK_PROFILE nothing is printed
"$simplenet" >/dev/null 2>"$tmp/err3" || fail "simplenet failed"
! grep -q 'Self CPU' "$tmp/err3" || fail "a table was printed without WICK_PROFILE"
echo "PASS: WICK_PROFILE tables (file, stderr, unwritable file, off)"
