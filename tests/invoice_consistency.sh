#!/bin/bash
# The invoice run agrees with offline rating. A generated fleet over two
# months, pushed to meterd: each account's January invoice equals,
# line by line, `meterctl rate` on the same usage from `meterctl
# export`; then late January usage arrives, February is invoiced, and
# for every account and period what the final documents bill (invoices
# plus their late-usage lines) equals a fresh rating of all that is
# stored, credit grant lines aside. The book uses every rule: granularity
# and a minimum, autopause, a memory step, included storage per sandbox
# and per account, paused storage free, free egress, runs, a
# subscription with included credit, a promotional credit and a credit
# grant (which both sides spend in January). Then a leaked key's forged
# January usage, quarantined, and the genuine samples resent into the
# seconds it freed: still, every period is billed its fresh rating.
. "$(dirname "$0")/lib.sh"
with_meterd
ctl() { "$METERCTL" --db "$wdb" "$@"; }

cat >book.json <<'JSON'
{"id": "every-rule", "currency": "USD", "effective_from": "2025-01-01",
 "cpu": {"basis": "allocated", "rate": "0.0504", "per": "hour"},
 "memory": {"basis": "used", "unit": "GiB", "rate": "0.0000045", "per": "second",
            "step": "0.5"},
 "storage": {"rate": "0.000108", "per": "hour", "included_gib": "1",
             "included_per_account": "5", "billed_when": "running"},
 "egress": {"rate": "0.05", "free_gb": "0.001"},
 "per_run": "0.001", "granularity_s": 60, "min_billed_s": 120,
 "autopause": {"idle_below": "0.1", "after_s": 300},
 "subscription": {"monthly_fee": "1", "included_credit": "0.25",
                  "max_concurrency": null, "max_session_s": null},
 "promotional_credit": "0.1",
 "grants": [{"id": "welcome", "amount": "0.5", "expires_after_periods": 2}]}
JSON
"$METERCTL" --db "$db" migrate >/dev/null || { fail "migrate"; finish; exit; }
ctl books add book.json >/dev/null || fail "books add"
HOST=$(ctl keys create --role host --name h)
# January 2026 stays within the acceptance window whenever this runs.
start_meterd a "$wdb" --max-age 36500 || { finish; exit; }

# 16 sandboxes of 4 accounts from January 31st 22:00 for 4 hours.
JAN31=1769896800
ctl gen --sandboxes 16 --accounts 4 --seconds 14400 --start $JAN31 --seed 7 \
    --push "$url_a/v1/samples" --token "$HOST" >gen.out 2>&1 || fail "gen --push: $(cat gen.out)"
for a in acct-0 acct-1 acct-2 acct-3; do
    ctl accounts add $a --book every-rule --from 2026-01-01 >/dev/null || fail "accounts add $a"
done

# kinds_amounts: "kind amount" per line, from rate's JSON or invoice CSV.
from_rate() { # ACCOUNT PERIOD < rate JSON
    awk -v acct="$1" -v period="$2" '
        /"account_id":/ { a = $2; gsub(/[",]/, "", a) }
        /"period":/ { p = $2; gsub(/[",]/, "", p) }
        /"kind":/ { k = $2; gsub(/[",]/, "", k) }
        /"amount":/ { v = $2; gsub(/[",]/, "", v); if (a == acct && p == period) print k, v }'
}
from_invoice() { # < invoice JSON: its own lines (not late_usage)
    awk '/"kind":/ { k = $2; gsub(/[",]/, "", k) }
        /"amount":/ { v = $2; gsub(/[",]/, "", v); if (k != "late_usage") print k, v }'
}
# sum: the exact sum of the amounts ("kind amount" lines), by PostgreSQL.
sum() {
    local terms
    terms=$(awk '{ printf "%s%s", (NR > 1 ? "+" : ""), $2 }')
    psql "$db" -qAtc "SELECT to_char((${terms:-0})::numeric, 'FM999999990.000000')"
}

# billed_is_fresh ACCOUNT PERIOD WHEN < fresh rating JSON: what final
# documents bill for the period, credit grant lines aside, is the fresh
# rating's sum.
billed_is_fresh() {
    local want got
    want=$(from_rate "$1" "$2" | grep -v '^credit_grant ' | sum)
    got=$(psql "$db" -qAtc "SELECT to_char(coalesce(sum(l.amount), 0), 'FM999999990.000000') FROM invoice_lines l JOIN invoices i USING (account_id, invoice_id) WHERE l.account_id = '$1' AND i.status = 'final' AND l.period = '$2-01' AND l.kind <> 'credit_grant'")
    checks=$((checks + 1))
    [ "$got" = "$want" ] || fail "$1 $2$3: invoices bill $got, a fresh rating $want"
}

FEB=1769904000
MAR=1772323200
ctl export --from 1767225600 --to $MAR >all.ndjson || fail "export"
expect_status 0 ctl invoice run --period 2026-01 --finalize
contains "$out" "4 finalized" "January finalized"
ctl rate --price-book book.json --usage all.ndjson --period 2026-01 >jan.json || fail "rate January"
for a in acct-0 acct-1 acct-2 acct-3; do
    n=$(ctl invoice list --account $a --period 2026-01 | awk 'NR == 2 { print $1 }')
    ctl invoice show "$n" | from_invoice >inv.txt
    from_rate $a 2026-01 <jan.json >rate.txt
    checks=$((checks + 1))
    [ -s rate.txt ] || fail "$a: no January lines from rate"
    grep -q '^credit_grant -0.500000$' inv.txt || fail "$a January: the grant does not pay"
    diff rate.txt inv.txt >/dev/null || fail "$a January: invoice lines differ from meterctl rate: $(diff rate.txt inv.txt)"
done

# Late January usage for every account (new sandboxes, so new runs),
# then February is invoiced.
ctl gen --sandboxes 8 --accounts 4 --seconds 3600 --start $((JAN31 - 7200)) --seed 8 \
    --push "$url_a/v1/samples" --token "$HOST" >gen.out 2>&1 || fail "late gen --push: $(cat gen.out)"
expect_status 0 ctl invoice run --period 2026-02 --finalize
contains "$out" "4 finalized" "February finalized"
ctl invoice list --status final --period 2026-02 >feb.list
ctl export --from 1767225600 --to $MAR >all2.ndjson || fail "export again"
ctl rate --price-book book.json --usage all2.ndjson >fresh.json || fail "fresh rating"
late=0
for a in acct-0 acct-1 acct-2 acct-3; do
    n=$(awk -v a=$a '$3 == a { print $1 }' feb.list)
    ctl invoice show "$n" >feb.json
    grep -q '"late_usage"' feb.json && late=$((late + 1))
    # February's own lines are a fresh rating of February.
    from_invoice <feb.json >inv.txt
    from_rate $a 2026-02 <fresh.json >rate.txt
    checks=$((checks + 1))
    diff rate.txt inv.txt >/dev/null || fail "$a February: $(diff rate.txt inv.txt)"
    for p in 2026-01 2026-02; do
        billed_is_fresh $a $p "" <fresh.json
    done
done
checks=$((checks + 1))
[ "$late" -ge 1 ] || fail "no February invoice carries late usage"

# A leaked key stores forged usage of late January (the sandboxes of
# seed 9); the key is quarantined; the host then sends the genuine
# samples of the same sandboxes and seconds (other values: --noisy), and
# March is invoiced. The seconds stored may come back to as many as
# before: the quarantine's revision makes March rate January again.
LEAK=$(ctl keys create --role host --name leaked)
leak=$(psql "$db" -qAtc "SELECT key_id FROM api_keys WHERE name = 'leaked'")
from=$(date +%s)
ctl gen --sandboxes 8 --accounts 4 --seconds 1800 --start $((JAN31 - 14400)) --seed 9 \
    --push "$url_a/v1/samples" --token "$LEAK" >gen.out 2>&1 || fail "forged gen --push: $(cat gen.out)"
sleep 1
to=$(date +%s)
expect_status 0 ctl usage quarantine --key "$leak" --from "$from" --to "$to" --reason "leaked key"
ctl gen --sandboxes 8 --accounts 4 --seconds 1800 --start $((JAN31 - 14400)) --seed 9 --noisy \
    --push "$url_a/v1/samples" --token "$HOST" >gen.out 2>&1 || fail "genuine gen --push: $(cat gen.out)"
expect_status 0 ctl invoice run --period 2026-03 --finalize
contains "$out" "4 finalized" "March finalized"
ctl export --from 1767225600 --to 1775001600 >all3.ndjson || fail "export at last"
ctl rate --price-book book.json --usage all3.ndjson >fresh.json || fail "fresh rating at last"
for a in acct-0 acct-1 acct-2 acct-3; do
    for p in 2026-01 2026-02; do
        billed_is_fresh $a $p " after the quarantine and the resend" <fresh.json
    done
done

finish
