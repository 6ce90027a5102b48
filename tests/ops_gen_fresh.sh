#!/bin/sh
# abi/wick/ops_gen.h is checked in: fail when it differs from what
# scripts/gen-ops makes of the current op_list.h and core/ops_std.c (run
# `make regen-ops`), or when another public header takes the wkx_ prefix.
# Exit 77 (skip) without python3.
: "${top_srcdir:=${srcdir:-$(dirname "$0")/..}}"
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 not found"; exit 77; }
exec python3 "$top_srcdir/scripts/gen-ops" --check "$top_srcdir"
