#!/bin/bash
# Every document of a run stays what it was: a fleet with book changes
# inside a period, a change of currency, late usage (in the period's
# currency and in another), an operator's grant and a book's grant, a
# voided invoice issued again, drafts run twice, is invoiced over three
# periods, and the JSON of every document, in id order, is compared byte
# for byte with tests/golden/invoice_run.json, written by the invoice run
# as it was before batches (b33a7cd's per-account run, at 12a341f). Only
# what depends on the clock is masked: created_at, finalized_at, the
# SHA-256 (which covers finalized_at) and the year of numbers.
# INVOICE_GOLDEN_WRITE=FILE writes the documents there instead.
. "$(dirname "$0")/lib.sh"
with_meterd
ctl() { "$METERCTL" --db "$wdb" "$@"; }
golden=$(cd "$(dirname "$0")" && pwd)/golden/invoice_run.json

book() { # ID CURRENCY CPU-RATE GRANULARITY [EXTRA]
    cat >"$1.json" <<JSON
{"id": "$1", "currency": "$2", "effective_from": "2025-01-01",
 "cpu": {"basis": "allocated", "rate": "$3", "per": "hour"},
 "memory": {"basis": "used", "unit": "GiB", "rate": "0.0000045", "per": "second"},
 "storage": {"rate": "0.000108", "per": "hour", "included_gib": "1"},
 "egress": {"rate": "0.05", "free_gb": "0.001"},
 "per_run": "0.001", "granularity_s": $4, "min_billed_s": 60,
 "autopause": {"idle_below": "0.1", "after_s": 300}$5}
JSON
    ctl books add "$1.json" >/dev/null || fail "books add $1"
}
"$METERCTL" --db "$db" migrate >/dev/null || { fail "migrate"; finish; exit; }
book usd-a USD 0.0504 1 ', "subscription": {"monthly_fee": "1", "included_credit": "0.25", "max_concurrency": null, "max_session_s": null}, "grants": [{"id": "welcome", "amount": "0.5", "expires_after_periods": 2}]'
book usd-b USD 0.0612 60 ''
book eur-c EUR 0.0480 1 ', "promotional_credit": "0.1"'
HOST=$(ctl keys create --role host --name h)
start_meterd a "$wdb" --max-age 36500 || { finish; exit; }

# 12 accounts: 0-3 on usd-a; 4-6 move from usd-a to usd-b on January
# 15th and 7 on February 1st; 8-9 on eur-c; 10-11 move from usd-a to
# eur-c in February (their late January usage is billed in USD).
for i in 0 1 2 3 4 5 6 7 10 11; do
    ctl accounts add acct-$i --name "Account $i" --book usd-a --from 2026-01-01 >/dev/null || fail "accounts add acct-$i"
done
for i in 4 5 6; do ctl accounts add acct-$i --book usd-b --from 2026-01-15 >/dev/null || fail "move acct-$i"; done
ctl accounts add acct-7 --book usd-b --from 2026-02-01 >/dev/null || fail "move acct-7"
for i in 8 9; do ctl accounts add acct-$i --book eur-c --from 2026-01-01 >/dev/null || fail "accounts add acct-$i"; done
for i in 10 11; do ctl accounts add acct-$i --book eur-c --from 2026-02-01 >/dev/null || fail "move acct-$i"; done
ctl credits grant acct-1 0.75 --id goodwill --expires-after 3 >/dev/null || fail "credits grant"

push() { # SANDBOXES SECONDS START SEED [--noisy]
    ctl gen --sandboxes "$1" --accounts 12 --seconds "$2" --start "$3" --seed "$4" ${5:-} \
        --push "$url_a/v1/samples" --token "$HOST" >gen.out 2>&1 || fail "gen --push $*: $(cat gen.out)"
}
JAN14=1768384800 # 2026-01-14 10:00
JAN31=1769896800 # 2026-01-31 22:00
push 48 7200 $JAN14 21 --noisy
push 36 14400 $JAN31 22
run() { expect_status 0 ctl invoice run --jobs 1 "$@"; }
run --period 2026-01
run --period 2026-01 # the drafts again, same ids
run --period 2026-01 --finalize
# Late January usage, then February twice (drafts, then final).
push 24 3600 $((JAN31 - 7200)) 23
run --period 2026-02
run --period 2026-02 --finalize
# A January invoice voided and issued again; March with more late usage.
n=$(ctl invoice list --account acct-2 --period 2026-01 --status final | awk 'NR == 2 { print $1 }')
expect_status 0 ctl invoice void "$n" --reason "wrong address"
run --period 2026-01 --finalize
push 12 1800 $((JAN31 - 10800)) 24
run --period 2026-03 --finalize

# Every document, in id order, its clock masked.
: >docs.json
after=0
while :; do
    ctl invoice list --after "$after" --limit 1000 >list.txt || { fail "invoice list"; break; }
    ids=$(awk 'NR > 1 && $1 !~ /^\(/ { print $1 }' list.txt)
    [ -n "$ids" ] || break
    for d in $ids; do ctl invoice show "$d" >>docs.json || fail "invoice show $d"; done
    next=$(sed -n 's/^(next page: --after \([0-9]*\))$/\1/p' list.txt)
    [ -n "$next" ] || break
    after=$next
done
sed -i -E -e 's/("(created_at|finalized_at)": )"[^"]*"/\1"T"/' \
    -e 's/("sha256": )"[0-9a-f]*"/\1"H"/' \
    -e 's/("(number|voids|voided_by)": )"[0-9]{4}-/\1"YYYY-/' docs.json
if [ -n "${INVOICE_GOLDEN_WRITE:-}" ]; then
    cp docs.json "$INVOICE_GOLDEN_WRITE"
    echo "wrote $(grep -c '"kind": "\(invoice\|credit_note\)"' docs.json) documents to $INVOICE_GOLDEN_WRITE"
    finish
    exit
fi
checks=$((checks + 1))
docs=$(grep -c '^  "kind"' docs.json)
[ "$docs" -ge 30 ] || fail "only $docs documents"
checks=$((checks + 1))
cmp -s docs.json "$golden" || fail "the documents differ from the golden ones: $(diff "$golden" docs.json | head -40)"
finish
