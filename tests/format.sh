#!/bin/bash
# Every C file of the tree is as clang-format 14 writes it under the
# committed .clang-format (scripts/check-format.sh), and the check would
# catch a file that is not: a copy of two files, one with a line
# indented wrong, and one header with a brace out of place. No database.
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/.." && pwd)
check=$top/scripts/check-format.sh

# Without clang-format 14 there is nothing to check against: a skip,
# but a failure under CI=true, as for a missing database.
if ! command -v clang-format-14 >/dev/null 2>&1 &&
    ! clang-format --version 2>/dev/null | grep -q 'version 14\.'; then
    echo "clang-format 14 not found (scripts/install-deps.sh installs it)" >&2
    [ "${CI:-}" = true ] && exit 1
    exit 77
fi

expect_status 0 sh -c "cd '$top' && sh '$check'"
contains "$out" " 0 differ" "the tree is formatted"
n=$(echo "$out" | sed -n 's/^\([0-9]*\) files checked.*/\1/p')
checks=$((checks + 1))
# (176 on 2026-12-03: fewer means the check stopped seeing files.)
[ "${n:-0}" -ge 150 ] || fail "only ${n:-0} files checked in the tree: $out"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A copy outside git: the check finds the files itself.
mkdir -p "$tmp/pricing" "$tmp/meter/db"
cp "$top/.clang-format" "$tmp/"
cp "$top/pricing/dec.c" "$tmp/pricing/"
cp "$top/meter/db/exec.c" "$tmp/meter/db/"
cp "$top/meter/db/db_int.h" "$tmp/meter/db/"
expect_status 0 sh -c "cd '$tmp' && sh '$check'"
contains "$out" "3 files checked, 0 differ" "the copy is formatted"

# The first line indented by four spaces, by two instead.
sed -i '0,/^    [a-z]/s/^    /  /' "$tmp/meter/db/exec.c"
# The opening brace of the first struct on a line of its own.
sed -i '0,/^struct [a-z_]* {$/s/^\(struct [a-z_]*\) {$/\1\n{/' \
    "$tmp/meter/db/db_int.h"
checks=$((checks + 1))
cmp -s "$top/meter/db/db_int.h" "$tmp/meter/db/db_int.h" &&
    fail "the violation was not planted in db_int.h"
expect_status 1 sh -c "cd '$tmp' && sh '$check'"
contains "$out" "meter/db/exec.c: not formatted" "a bad indentation named"
contains "$out" "meter/db/db_int.h: not formatted" "a header checked too"
contains "$out" "3 files checked, 2 differ" "the count"
contains "$err" "-i on the files above" "how to fix it"
checks=$((checks + 1))
case "$out" in *pricing/dec.c*) fail "a formatted file reported: $out" ;; esac
# The short diff shows the planted line as it is and as it should be.
line=$(grep -m1 '^  [a-z]' "$tmp/meter/db/exec.c")
contains "$out" "-$line" "the line as it is"
contains "$out" "+  $line" "the line as it should be"

# Files named on the command line: only those.
expect_status 0 sh -c "cd '$tmp' && sh '$check' pricing/dec.c"
contains "$out" "1 files checked, 0 differ" "only the file named"
finish
