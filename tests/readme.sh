#!/bin/bash
# The README's examples run when pasted (issue 25): `make demo`'s script
# in a scratch tree whose build/bin/ is the build under test (its own
# embedded database, meterd on a free port), then every fenced block of
# README.md and docs/*.md marked `sh runnable`, in order, each under
# bash -euo pipefail from the top of that tree, as a reader pastes them.
# Also: the docs cite nothing outside the repository.
. "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(dirname "$METERCTL")
for f in costsim meterd meterctl; do
    [ -x "$bin/$f" ] || { fail "$bin/$f missing"; finish; exit; }
done
command -v curl >/dev/null || { fail "curl not found"; finish; exit; }
top=$(pwd)
tmp=$(mktemp -d)
cleanup() {
    local f
    for f in "$tmp"/var/demo-fleet.pid "$tmp"/var/meterd.pid; do
        [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null
    done
    (cd "$tmp" && "$METERCTL" db destroy --yes >/dev/null 2>&1)
    cd "$top" && rm -rf "$tmp"
}
trap cleanup EXIT
for d in pricing examples simulator scripts migrations docs README.md; do
    ln -s "$root/$d" "$tmp/$d"
done
mkdir "$tmp/build" && ln -s "$bin" "$tmp/build/bin"
cd "$tmp" || exit 1
unset METER_DATABASE_URL METER_OWNER_DATABASE_URL
port=$((20000 + RANDOM % 30000))
export METER_LISTEN=127.0.0.1:$port

if ! sh scripts/demo.sh build >demo.out 2>&1; then
    fail "make demo's script: $(tail -n 20 demo.out)"
    finish
    exit
fi
contains "$(cat demo.out)" "demo: meterd is listening on http://127.0.0.1:$port" "the demo ran"
# Every live account of the demo has a draft: none is left unbilled.
case "$(cat demo.out)" in *"have no draft this month"*) fail "a demo account without a draft: $(grep -B3 'no draft' demo.out)" ;; esac
checks=$((checks + 1))
[ -f var/demo.env ] && grep -q "^ADMIN_TOKEN=mt" var/demo.env || fail "var/demo.env with the demo's keys: $(cat var/demo.env 2>&1)"

# blocks FILE: each `sh runnable` block of FILE, NUL-separated.
blocks() {
    awk '/^```sh runnable[ \t]*$/ { inb = 1; b = ""; next }
         inb && /^```/ { inb = 0; printf "%s%c", b, 0; next }
         inb { b = b $0 "\n" }' "$1"
}
n=0
for f in README.md docs/*.md; do
    while IFS= read -r -d '' block; do
        n=$((n + 1))
        checks=$((checks + 1))
        if ! timeout 120 bash -euo pipefail -c "$block" >"block$n.out" 2>&1; then
            fail "$f, runnable block $n failed:
$block
---
$(tail -n 15 "block$n.out")"
        fi
    done < <(blocks "$f")
done
echo "ran $n runnable blocks"
checks=$((checks + 1))
[ "$n" -ge 6 ] || fail "only $n runnable blocks found"
# What they did: the samples stored once, the account created.
. var/demo.env
got=$(curl -s -H "Authorization: Bearer $FINANCE_TOKEN" "$METER_URL/v1/usage?account=acct-0&from=2026-11-02T10:00:00Z&to=2026-11-02T11:00:00Z")
checks=$((checks + 1))
jq -e '[.items[].samples | tonumber] | add == 5' <<<"$got" >/dev/null || fail "examples/samples.json stored once: $got"
checks=$((checks + 1))
[ -s var/invoice.pdf ] || fail "the invoice block wrote no PDF"

# The docs cite nothing a clone lacks.
checks=$((checks + 1))
if grep -n '\.\./shared\|/work/' "$root"/README.md "$root"/docs/*.md; then
    fail "the docs cite files outside the repository (above)"
fi
finish
