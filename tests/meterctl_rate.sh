#!/bin/bash
# meterctl rate through the real binary: the providers' published
# examples, bad books and bad samples, usage errors, and the properties
# that input order and file splits change nothing.
. "$(dirname "$0")/lib.sh"
books=$(cd "$(dirname "$0")/../pricing/books" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

# sample TS SANDBOX STATE VCPU USED [ACCOUNT]
running() { # N seconds from TS of one sandbox, as NDJSON
    awk -v ts="$1" -v n="$2" -v sb="$3" -v vcpu="$4" -v used="$5" -v mem="$6" \
        'BEGIN { for (i = 0; i < n; i++)
            printf "{\"ts\":%d,\"account_id\":\"acme\",\"sandbox_id\":\"%s\",\"state\":\"running\",\"vcpu\":%s,\"cpu_used\":%s,\"mem_bytes\":%s,\"disk_bytes\":0}\n", ts + i, sb, vcpu, used, mem }'
}
JAN=1767225600

# The published examples are checked without grants (rules section 14):
# the shipped books of E2B Hobby and Daytona list their one-off credits.
# --- E2B: 8 vCPU + 4 GiB for one hour = 0.4032 + 0.0648 = 0.47 ---------
running $JAN 3600 sb-1 8 7.5 4294967296 >e2b.ndjson
expect_status 0 "$METERCTL" rate --price-book "$books/e2b-hobby.json" --usage e2b.ndjson --no-grants
contains "$out" '"kind": "cpu"' "e2b cpu line"
contains "$out" '"amount": "0.403200"' "e2b cpu"
contains "$out" '"amount": "0.064800"' "e2b memory"
contains "$out" '"total": "0.47"' "e2b total"
contains "$out" '"unit_price": "0.000014"' "e2b unit price"
contains "$out" '"period": "2026-01"' "e2b period"
grep -q credit_grant <<<"$out" && fail "e2b: --no-grants printed a grant line"
e2b_json=$out
# With its grant, the one-off $100 pays the 0.468.
expect_status 0 "$METERCTL" rate --price-book "$books/e2b-hobby.json" --usage e2b.ndjson
contains "$out" '"amount": "0.403200"' "e2b cpu, with the grant"
contains "$out" '"kind": "credit_grant"' "e2b grant line"
contains "$out" '"grant": "e2b-hobby/signup"' "e2b grant named"
contains "$out" '"amount": "-0.468000"' "e2b grant pays the hour"
contains "$out" 'credit grant e2b-hobby/signup, 99.532000 left' "e2b grant balance"
contains "$out" '"total": "0.00"' "e2b total with the grant"

# --- Daytona: 2 vCPU + 4 GiB for 730 h in one month = 120.89 ---------
# A month of seconds (2.6M samples) is rated once, with the book's grant:
# its lines are the example's, and the one-off $200 pays their 120.888
# (the example's 120.89 before rounding). --no-grants is e2b's above.
running $JAN 2628000 sb-1 2 1 4294967296 >daytona.ndjson
expect_status 0 "$METERCTL" rate --price-book "$books/daytona.json" --usage daytona.ndjson
contains "$out" '"amount": "73.584000"' "daytona cpu"
contains "$out" '"amount": "47.304000"' "daytona memory"
contains "$out" '"grant": "daytona/signup"' "daytona grant named"
contains "$out" '"amount": "-120.888000"' "daytona grant pays the month"
contains "$out" 'credit grant daytona/signup, 79.112000 left' "daytona grant balance"
contains "$out" '"total": "0.00"' "daytona total with the grant"
rm daytona.ndjson

# --- the same as a JSON array and as a table ----------------------------
{ echo '['; sed '$!s/$/,/' e2b.ndjson; echo ']'; } >e2b.json
expect_status 0 "$METERCTL" rate --price-book "$books/e2b-hobby.json" --usage e2b.json --no-grants
[ "$out" = "$e2b_json" ] || fail "a JSON array rated differently from NDJSON"
expect_status 0 "$METERCTL" rate --price-book "$books/e2b-hobby.json" --usage e2b.ndjson --format table --no-grants
contains "$out" "0.403200" "table"
contains "$out" "0.47 USD" "table total"
expect_status 0 "$METERCTL" rate --price-book "$books/e2b-hobby.json" --usage e2b.ndjson --format table
contains "$out" "credit_grant" "table grant line"
contains "$out" "0.00 USD" "table total with the grant"

# --- a fleet: order and file splits change nothing -----------------------
# Five sandboxes across the January/February boundary, with pauses,
# decimals, egress and disk, under two accounts.
awk 'BEGIN {
    srand(7)
    for (s = 0; s < 5; s++) {
        acct = s < 3 ? "acme" : "globex"
        for (i = 0; i < 400; i++) {
            ts = 1769903800 + s * 13 + i   # 2026-01-31T23:56:40Z + ...
            if (i % 97 == 50) continue     # a missing second now and then
            # (%.0f, not %d, for bytes: mawk clamps %d to 2^31 - 1)
            if (i % 150 < 20)
                printf "{\"ts\":%d,\"account_id\":\"%s\",\"sandbox_id\":\"sb-%d\",\"state\":\"paused\",\"disk_bytes\":%.0f}\n", ts, acct, s, 1073741824 * (s + 1)
            else
                printf "{\"ts\":%d,\"account_id\":\"%s\",\"sandbox_id\":\"sb-%d\",\"state\":\"running\",\"vcpu\":%s,\"cpu_used\":%.4f,\"mem_bytes\":%.0f,\"mem_used_bytes\":%.0f,\"disk_bytes\":%.0f,\"egress_bytes\":%d}\n", ts, acct, s, s + 1, (s + 1) * (i % 100 < 60 ? 0.01 : 0.9), 2147483648 * (s + 1), 1073741824 * (s + 1), 1073741824 * (s + 1), (i % 30 == 0) ? 5000000 : 0
        }
    }
}' >fleet.ndjson
cat >book.json <<'JSON'
{"id": "fleet", "currency": "USD", "effective_from": "2026-01-01",
 "source": "test", "as_of": "2026-01-01",
 "cpu": {"basis": "used", "rate": "0.0504", "per": "hour"},
 "memory": {"basis": "allocated", "unit": "GiB", "rate": "0.0000045", "per": "second"},
 "storage": {"rate": "0.07884", "per": "month", "included_gib": "1"},
 "egress": {"rate": "0.09", "free_gb": "0.01"},
 "per_run": "0.001", "granularity_s": 60, "min_billed_s": 60,
 "autopause": {"idle_below": "0.05", "after_s": 30}}
JSON
expect_status 0 "$METERCTL" rate --price-book book.json --usage fleet.ndjson
base_out=$out
contains "$base_out" '"period": "2026-02"' "fleet spans two periods"
contains "$base_out" '"kind": "autopause_credit"' "fleet has idle credit"
contains "$base_out" '"account_id": "globex"' "fleet has two accounts"
for seed in 1 2 3; do
    shuf --random-source=<(yes $seed) fleet.ndjson >shuffled.ndjson
    expect_status 0 "$METERCTL" rate --price-book book.json --usage shuffled.ndjson
    [ "$out" = "$base_out" ] || fail "shuffled input (seed $seed) rated differently"
done
split -n l/3 shuffled.ndjson part.
expect_status 0 "$METERCTL" rate --price-book book.json --usage part.aa --usage part.ab --usage part.ac
[ "$out" = "$base_out" ] || fail "input split in three files rated differently"

# --period selects invoices; runs still see every sample.
expect_status 0 "$METERCTL" rate --price-book book.json --usage fleet.ndjson --period 2026-02
contains "$out" '"period": "2026-02"' "--period"
case "$out" in *'"period": "2026-01"'*) fail "--period kept January" ;; esac
expect_status 0 "$METERCTL" rate --price-book book.json --usage fleet.ndjson --period 2025-06
[ "$out" = "[]" ] || fail "an empty period printed $out"

# A price unknown in another period does not stop rating this one.
running $JAN 10 sb-1 1 1 0 >jan.ndjson
running $((JAN + 31 * 86400)) 10 sb-1 1 1 0 | sed 's/"disk_bytes":0/"disk_bytes":0,"egress_bytes":5/' >>jan.ndjson
expect_status 0 "$METERCTL" rate --price-book "$books/e2b-hobby.json" --usage jan.ndjson --period 2026-01
contains "$out" '"period": "2026-01"' "--period skips other periods"
expect_status 1 "$METERCTL" rate --price-book "$books/e2b-hobby.json" --usage jan.ndjson

# --- duplicates and conflicts: counted, the first stands ----------------
head -n 3 e2b.ndjson >rep.ndjson
head -n 1 e2b.ndjson >>rep.ndjson                       # duplicate
head -n 1 e2b.ndjson | sed 's/"cpu_used":7.5/"cpu_used":1/' >>rep.ndjson # conflict
expect_status 0 "$METERCTL" rate --price-book "$books/e2b-hobby.json" --usage rep.ndjson
contains "$out" '"duplicates": "1"' "duplicates counted"
contains "$out" '"conflicts": "1"' "conflicts counted"
contains "$out" '"quantity": "24.000000"' "the first of a repeated second stands"

# --- bad input: exit 1, nothing on stdout, the field and value named -----
bad_sample() { # LINE WANT...
    printf '%s\n' "$1" >bad.ndjson
    shift
    expect_status 1 "$METERCTL" rate --price-book "$books/e2b-hobby.json" --usage e2b.ndjson --usage bad.ndjson
    [ -z "$out" ] || fail "output printed despite a bad sample"
    contains "$err" "bad.ndjson:1" "bad sample location"
    for w in "$@"; do contains "$err" "$w" "bad sample"; done
}
ok='"account_id":"acme","sandbox_id":"x","disk_bytes":0'
bad_sample "{\"ts\":1767225600,$ok,\"state\":\"running\",\"vcpu\":-1,\"cpu_used\":0,\"mem_bytes\":1}" "'vcpu'" "-1"
bad_sample "{\"ts\":1767225600,$ok,\"state\":\"running\",\"vcpu\":0.12345,\"cpu_used\":0,\"mem_bytes\":1}" "'vcpu'" "0.12345" "4 decimals"
# Read from the text: as a double this is 1.
bad_sample "{\"ts\":1767225600,$ok,\"state\":\"running\",\"vcpu\":1.00000000000000001,\"cpu_used\":0,\"mem_bytes\":1}" "'vcpu'" "1.00000000000000001" "4 decimals"
printf '[{"ts":1767225600,%s,"state":"running","vcpu":1,"cpu_used":0.00000000000000001,"mem_bytes":1}]\n' "$ok" >bad.json
expect_status 1 "$METERCTL" rate --price-book "$books/e2b-hobby.json" --usage bad.json
contains "$err" "'cpu_used' value 0.00000000000000001: more than 4 decimals" "decimals of an array file"
bad_sample "{\"ts\":1767225600,$ok,\"state\":\"running\",\"vcpu\":1,\"cpu_used\":2,\"mem_bytes\":1}" "'cpu_used'" "<= vcpu"
bad_sample "{\"ts\":1767225600,$ok,\"state\":\"running\",\"vcpu\":1,\"cpu_used\":1,\"mem_bytes\":1.0}" "'mem_bytes'" "1.0"
bad_sample "{\"ts\":1767225600,$ok,\"state\":\"running\",\"vcpu\":1,\"cpu_used\":1,\"mem_bytes\":1e3}" "'mem_bytes'" "integer"
bad_sample "{\"ts\":1767225600,$ok,\"state\":\"running\",\"vcpu\":1,\"cpu_used\":1}" "'mem_bytes'" "required"
bad_sample "{\"ts\":1767225600,$ok,\"state\":\"sleeping\"}" "'state'" "sleeping"
bad_sample "{\"ts\":\"2026-01-01T00:00:00+01:00\",$ok,\"state\":\"paused\"}" "'ts'" "+01:00"
bad_sample "{\"ts\":\"2026-02-30T00:00:00Z\",$ok,\"state\":\"paused\"}" "'ts'"
bad_sample "{\"ts\":1767225600,$ok,\"state\":\"paused\",\"gpu\":1}" "'gpu'" "unknown field"
bad_sample "{\"ts\":1767225600,\"account_id\":\"a b\",\"sandbox_id\":\"x\",\"state\":\"paused\",\"disk_bytes\":0}" "'account_id'" "a b"
bad_sample "{\"ts\":1767225600,$ok,\"state\":\"paused\"" "bad.ndjson:1"
# One sandbox id under two accounts is two sandboxes, one each, even
# when their seconds come in turn: a second each, rated apiece.
printf '{"ts":1767225600,"account_id":"acme","sandbox_id":"sb-1","state":"running","vcpu":1,"cpu_used":1,"mem_bytes":0,"disk_bytes":0}\n{"ts":1767225600,"account_id":"other","sandbox_id":"sb-1","state":"running","vcpu":1,"cpu_used":1,"mem_bytes":0,"disk_bytes":0}\n{"ts":1767225601,"account_id":"acme","sandbox_id":"sb-1","state":"running","vcpu":1,"cpu_used":1,"mem_bytes":0,"disk_bytes":0}\n' >twoacct.ndjson
expect_status 0 "$METERCTL" rate --price-book "$books/e2b-hobby.json" --usage twoacct.ndjson --format table
contains "$out" "account other" "the second account's statement"
acme_cpu=$(printf '%s\n' "$out" | sed -n '/^account acme/,/^$/p' | grep ' cpu ')
other_cpu=$(printf '%s\n' "$out" | sed -n '/^account other/,/^$/p' | grep ' cpu ')
contains "$acme_cpu" "2.000000 vCPU-second" "acme's sb-1: its two seconds"
contains "$other_cpu" "1.000000 vCPU-second" "other's sb-1: its one second"
# RFC 3339 timestamps are accepted.
printf '{"ts":"2026-01-01T00:00:00Z","account_id":"acme","sandbox_id":"z","state":"running","vcpu":1,"cpu_used":1,"mem_bytes":0,"disk_bytes":0}\n' >rfc.ndjson
expect_status 0 "$METERCTL" rate --price-book "$books/e2b-hobby.json" --usage rfc.ndjson
contains "$out" '"amount": "0.000014"' "RFC 3339 ts"

bad_book() { # JSON WANT...
    printf '%s\n' "$1" >badbook.json
    shift
    expect_status 1 "$METERCTL" rate --price-book badbook.json --usage e2b.ndjson
    [ -z "$out" ] || fail "output printed despite a bad book"
    for w in "$@"; do contains "$err" "$w" "bad book"; done
}
sed 's/"0.000014"/"0.0000.14"/' "$books/e2b-hobby.json" >x.json
bad_book "$(cat x.json)" "badbook.json" "cpu.rate" "0.0000.14"
sed 's/"per": "second"/"per": "sec"/' "$books/e2b-hobby.json" >x.json
bad_book "$(cat x.json)" "cpu.per" "'sec'"
sed 's/"basis": "allocated"/"basis": "allocated", "cap": "1"/' "$books/e2b-hobby.json" >x.json
bad_book "$(cat x.json)" "cpu.cap: unknown key"
# A price the usage needs but nobody knows: an error naming it.
running $JAN 10 sb-1 1 1 0 | sed 's/"disk_bytes":0/"disk_bytes":0,"egress_bytes":5/' >egress.ndjson
expect_status 1 "$METERCTL" rate --price-book "$books/e2b-hobby.json" --usage egress.ndjson
contains "$err" "egress" "unknown egress price"
contains "$err" "unknown" "unknown egress price"

# The in-memory limit is said, not exceeded.
expect_status 2 "$METERCTL" rate --price-book "$books/e2b-hobby.json" --usage fleet.ndjson --memory-limit 0
expect_status 0 "$METERCTL" rate --price-book "$books/e2b-hobby.json" --usage e2b.ndjson --memory-limit 1
awk 'BEGIN { for (i = 0; i < 20000; i++) printf "{\"ts\":%d,\"account_id\":\"a\",\"sandbox_id\":\"s\",\"state\":\"paused\",\"disk_bytes\":0}\n", 1767225600 + i }' >many.ndjson
expect_status 1 "$METERCTL" rate --price-book "$books/e2b-hobby.json" --usage many.ndjson --memory-limit 1
contains "$err" "limit of the in-memory sort" "memory limit"

# --- grants carried across files and periods ------------------------------
# 1 vCPU at 0.001 a second: 3.000 in January (one file), 2.000 in
# February (another); a grant of 4 leaves 1 for February, which pays 1.00.
cat >granted.json <<'EOF'
{"id": "granted", "currency": "USD", "effective_from": "2026-01-01",
 "source": "test", "as_of": "test",
 "cpu": {"basis": "allocated", "rate": "0.001", "per": "second"},
 "memory": {"basis": "allocated", "unit": "GiB", "rate": "0", "per": "second"},
 "storage": null, "egress": null, "per_run": "0",
 "grants": [{"id": "signup", "amount": "4", "expires_after_periods": 2}]}
EOF
running $JAN 3000 sb-1 1 1 0 >g-jan.ndjson
running $((JAN + 31 * 86400)) 2000 sb-1 1 1 0 >g-feb.ndjson
expect_status 0 "$METERCTL" rate --price-book granted.json --usage g-feb.ndjson --usage g-jan.ndjson
with_grants=$out
contains "$out" '"grant": "granted/signup"' "grant line names the grant"
contains "$out" '"amount": "-3.000000"' "January spends 3 of the grant"
contains "$out" '"amount": "-1.000000"' "February spends the 1 left"
contains "$out" '"total": "1.00"' "February pays the rest"
contains "$out" 'credit grant granted/signup, 0.000000 left' "balance shown"
# --period shows February with the balance January left.
expect_status 0 "$METERCTL" rate --price-book granted.json --usage g-jan.ndjson --usage g-feb.ndjson --period 2026-02
contains "$out" '"amount": "-1.000000"' "February alone still spends what January left"
[ "$(grep -c '"period"' <<<"$out")" = 1 ] || fail "--period prints one statement"
# --no-grants: the published way, no credit_grant line.
expect_status 0 "$METERCTL" rate --price-book granted.json --usage g-jan.ndjson --usage g-feb.ndjson --no-grants
grep -q credit_grant <<<"$out" && fail "--no-grants printed a grant line"
contains "$out" '"total": "3.00"' "January without grants"
contains "$out" '"total": "2.00"' "February without grants"
# The split into files changes nothing.
cat g-jan.ndjson g-feb.ndjson >g-both.ndjson
expect_status 0 "$METERCTL" rate --price-book granted.json --usage g-both.ndjson
[ "$out" = "$with_grants" ] || fail "grants depend on how the files are split"

# --- usage errors: exit 2 ------------------------------------------------
expect_status 2 "$METERCTL" rate --usage e2b.ndjson
contains "$err" "--price-book" "no book"
expect_status 2 "$METERCTL" rate --price-book "$books/e2b-hobby.json"
expect_status 2 "$METERCTL" rate --price-book "$books/e2b-hobby.json" --usage e2b.ndjson --period 2026-13
contains "$err" "2026-13" "bad period"
expect_status 2 "$METERCTL" rate --price-book "$books/e2b-hobby.json" --usage e2b.ndjson --format xml
expect_status 2 "$METERCTL" rate --price-book a.json --price-book b.json --usage e2b.ndjson
expect_status 1 "$METERCTL" rate --price-book "$books/e2b-hobby.json" --usage missing.ndjson
contains "$err" "missing.ndjson" "missing file"

finish
