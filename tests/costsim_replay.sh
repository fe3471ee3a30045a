#!/bin/bash
# costsim replay through the real binaries, on a private PostgreSQL
# cluster of this test (unix socket only, destroyed at the end): usage
# posted to meterd, then an account's month priced on every shipped
# book. Checks: e2b-pro's total to the cent, computed here from the
# book's own rates; every shipped book listed with source and as_of;
# the JSON lines of each book summing to its total; usage a quarantine
# set aside left out; the peak concurrency and the longest session; the
# plan limits each book breaks (a 2 h session; 101 sandboxes and 101 GB
# of disk at once: an add-on, a concurrency no add-on fits, storage
# caps); the account's own book against its invoice; usage errors (exit
# 2, the
# option and value named), an unknown account and an unreachable
# database (exit 1, named); and that replay writes nothing (no
# transaction id consumed, no row changed).
. "$(dirname "$0")/lib.sh"
books=$(cd "$(dirname "$0")/../pricing/books" && pwd)
for tool in curl jq psql bc; do
    command -v $tool >/dev/null || { fail "$tool not found"; finish; exit; }
done

tmp=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    (cd "$tmp" && "$METERCTL" db destroy --yes >/dev/null 2>&1)
    cd / && rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp" || exit 1
private_cluster
sql() { psql "$db" -XAtc "$1"; }
# Nothing but this test writes: autovacuum's ANALYZE would take a
# transaction id while replay runs.
sql "ALTER SYSTEM SET autovacuum = off" >/dev/null && sql "SELECT pg_reload_conf()" >/dev/null
ctl() { "$METERCTL" --db "$wdb" "$@"; }
replay() { "$COSTSIM" replay --books "$books" "$@"; }
"$METERCTL" --db "$db" migrate >/dev/null || { fail "migrate"; finish; exit; }

# acme is on E2B Pro for January 2026 (a copy effective from 2025, as
# January 2026 precedes the shipped book's date); quiet has no usage.
jq '.effective_from = "2025-01-01"' "$books/e2b-pro.json" >e2b-pro.json
ctl books add e2b-pro.json >/dev/null || fail "books add"
ctl accounts add acme --name "Acme Corp" --book e2b-pro --from 2026-01-01 >/dev/null || fail "accounts add acme"
ctl accounts add quiet --book e2b-pro --from 2026-01-01 >/dev/null || fail "accounts add quiet"
ctl accounts add many >/dev/null || fail "accounts add many"
ctl accounts add burst >/dev/null || fail "accounts add burst"
HOST=$(ctl keys create --role host --name good)
LEAKED=$(ctl keys create --role host --name leaked)
leaked=$(ctl keys list | awk '$NF == "leaked" { print $1 }')
start_meterd a "$wdb" --max-age 36500 || { finish; exit; }

# January 2026, GiB = 2^30:
#   a-1: 8 vCPU, 4 GiB, running 3,600 s from JAN (E2B's example);
#   a-2: 2 vCPU, 1 GiB, running 1,800 s from JAN + 1,800 (two at once
#        from then to JAN + 3,600), paused 600 s, running 900 s more;
#   a-3: 1 vCPU, 2 GiB, running 7,200 s from JAN + 86,400 (the longest).
# Sessions (running stretches): 1 + 2 + 1. No disk, no egress.
JAN=1767225600
GIB=1073741824
run() { # SANDBOX START SECONDS VCPU GIB
    printf '{"account_id":"acme","sandbox_id":"%s","start":%d,"seconds":%d,"state":"running","vcpu":%s,"cpu_used":%s,"mem_bytes":%d,"disk_bytes":0}' \
        "$1" "$2" "$3" "$4" "$4" $(($5 * GIB))
}
paused() { # SANDBOX START SECONDS
    printf '{"account_id":"acme","sandbox_id":"%s","start":%d,"seconds":%d,"state":"paused","disk_bytes":0}' "$1" "$2" "$3"
}
post() { # TOKEN BODY
    local code
    printf '%s' "$2" >post.json
    code=$(curl -s -o post.out -w '%{http_code}' -H "Authorization: Bearer $1" \
        -H 'Content-Type: application/json' --data-binary @post.json "$url_a/v1/samples")
    checks=$((checks + 1))
    [ "$code" = 200 ] || fail "posting usage: $code $(cat post.out)"
}
post "$HOST" "{\"sandboxes\":[$(run a-1 $JAN 3600 8 4),$(run a-2 $((JAN + 1800)) 1800 2 1),$(paused a-2 $((JAN + 3600)) 600),$(run a-2 $((JAN + 4200)) 900 2 1),$(run a-3 $((JAN + 86400)) 7200 1 2)]}"
# many, on no book: 10,000 one-second sessions, x and z taking turns
# (x runs at even offsets from T2, z at odd ones), and y running 9,999 s
# from T2 + 1: enough starts and ends that they are coalesced while
# read, most cancelling out (x starts as z ends).
T2=$((JAN + 10 * 86400))
turns() { # FIRST: 10,000 states alternating from FIRST
    jq -nc --arg a "$1" '[range(10000) | if . % 2 == 0 then $a else ({"running": "paused", "paused": "running"}[$a]) end]'
}
many() { # SANDBOX START SECONDS STATE
    printf '{"account_id":"many","sandbox_id":"%s","start":%d,"seconds":%d,"state":%s,"vcpu":1,"cpu_used":1,"mem_bytes":0,"disk_bytes":0}' "$@"
}
post "$HOST" "{\"sandboxes\":[$(many x $T2 10000 "$(turns running)"),$(many y $((T2 + 1)) 9999 '"running"'),$(many z $T2 10000 "$(turns paused)")]}"
# burst, on no book: 101 sandboxes running 60 s at once, each holding
# 1 GB of disk (10^9 bytes), then 60 s paused, still holding it.
T3=$((JAN + 20 * 86400))
states=$(jq -nc '[range(120) | if . < 60 then "running" else "paused" end]')
burst() { # SANDBOX
    printf '{"account_id":"burst","sandbox_id":"%s","start":%d,"seconds":120,"state":%s,"vcpu":1,"cpu_used":1,"mem_bytes":%d,"disk_bytes":1000000000}' \
        "$1" "$T3" "$states" "$GIB"
}
post "$HOST" "{\"sandboxes\":[$(for i in $(seq 101); do printf '%s%s' "$([ "$i" = 1 ] || echo ,)" "$(burst b-$i)"; done)]}"
# Usage of a leaked key, then set aside: 4 vCPU for a day, which would
# also be the longest session and add to the peak.
post "$LEAKED" "{\"sandboxes\":[$(run q-1 $((JAN + 1000)) 86400 4 8)]}"
sleep 1.1
expect_status 0 ctl usage quarantine --key "$leaked" --from 0 --to "$(date +%s)" --reason "leaked key"
# meterd is done: nothing else writes from here.
kill "$pid_a" 2>/dev/null
wait "$pid_a" 2>/dev/null
pids=()

# The database's state: the next transaction id (any write takes one)
# and the rows of the tables a program could change.
state() {
    sql "SELECT pg_snapshot_xmax(pg_current_snapshot())::text || ' ' ||
        (SELECT count(*) FROM invoices) || ' ' || (SELECT count(*) FROM audit_log) || ' ' ||
        (SELECT count(*) FROM usage_blocks) || ' ' || (SELECT count(*) FROM accounts) || ' ' ||
        (SELECT count(*) FROM account_price_books) || ' ' || (SELECT count(*) FROM sandboxes)"
}
before=$(state)

# --- JSON ----------------------------------------------------------------------
expect_status 0 replay --account acme --period 2026-01 --db "$wdb" --format json
json=$out
checks=$((checks + 1))
jq -e . >/dev/null <<<"$json" || fail "not JSON: $json"

# Every shipped book is listed, once.
checks=$((checks + 1))
want=$(for f in "$books"/*.json; do jq -r .id "$f"; done | sort)
got=$(jq -r '.books[].id' <<<"$json" | sort)
[ "$got" = "$want" ] || fail "books listed: $got; want $want"

# e2b-pro's total by hand, from the book's rates (per second, GiB, no
# granularity, no minimum: checked first).
pro=$books/e2b-pro.json
checks=$((checks + 1))
jq -e '.cpu.per == "second" and .cpu.basis == "allocated" and .memory.per == "second" and .memory.unit == "GiB" and .memory.basis == "allocated" and .granularity_s == 1 and .min_billed_s == 0 and .per_run == "0" and .subscription.included_credit == "0" and .promotional_credit == null and .minimum_commit == null' "$pro" >/dev/null ||
    fail "e2b-pro.json no longer fits this test's arithmetic"
cpu_rate=$(jq -r .cpu.rate "$pro")
mem_rate=$(jq -r .memory.rate "$pro")
fee=$(jq -r .subscription.monthly_fee "$pro")
vcpu_s=$((8 * 3600 + 2 * (1800 + 900) + 1 * 7200))
gib_s=$((4 * 3600 + 1 * (1800 + 900) + 2 * 7200))
cpu=$(echo "scale=6; $vcpu_s * $cpu_rate / 1" | bc)
mem=$(echo "scale=6; $gib_s * $mem_rate / 1" | bc)
# half to even, to cents, of a positive decimal
cents() {
    echo "scale=6; x = ($1) * 100; scale=0; c = x / 1; r = x - c
        if (r > 0.5 || (r == 0.5 && c % 2 == 1)) c = c + 1
        scale=2; c / 100" | bc
}
total=$(printf '%.2f' "$(cents "$cpu + $mem + $fee")")
book() { jq -c --arg id "$1" '.books[] | select(.id == $id)' <<<"$json"; }
e2b=$(book e2b-pro)
checks=$((checks + 1))
[ "$(jq -r .total <<<"$e2b")" = "$total" ] || fail "e2b-pro total: $(jq -r .total <<<"$e2b"), want $total ($cpu + $mem + $fee)"
checks=$((checks + 1))
[ "$(jq -r '.lines[] | select(.kind == "cpu") | .amount' <<<"$e2b")" = "$(printf '%.6f' "$cpu")" ] ||
    fail "e2b-pro cpu line: $(jq -c '.lines' <<<"$e2b"), want $cpu"
checks=$((checks + 1))
[ "$(jq -r '.lines[] | select(.kind == "memory") | .amount' <<<"$e2b")" = "$(printf '%.6f' "$mem")" ] ||
    fail "e2b-pro memory line, want $mem"
checks=$((checks + 1))
[ "$(jq -r '.lines[] | select(.kind == "cpu") | .unit_price' <<<"$e2b")" = "$cpu_rate" ] ||
    fail "e2b-pro cpu unit price, want $cpu_rate"
checks=$((checks + 1))
jq -e '.account_book == true and .priced == true and (.source | length) > 0 and (.as_of | length) > 0' <<<"$e2b" >/dev/null ||
    fail "e2b-pro is the account's book, with source and as_of: $e2b"
checks=$((checks + 1))
[ "$(jq '[.books[] | select(.account_book)] | length' <<<"$json")" = 1 ] || fail "one account's book"

# Each priced book's lines sum to its total (half to even, to cents; a
# total is never negative), in decimals, not doubles; sorted cheapest
# first, the books priced whole, then the lower bounds (a price unknown),
# then the books that cannot price it, with the engine's reason.
for group in '(has("bound") | not)' 'has("bound")'; do
prev=
while read -r id; do
    b=$(book "$id")
    lines=$(jq -r '[.lines[].amount] | join(" + ")' <<<"$b")
    [ -n "$lines" ] || lines=0
    sum=$(echo "scale=6; $lines" | bc)
    want=$(if [ "$(echo "$sum < 0" | bc)" = 1 ]; then echo 0; else cents "$sum"; fi)
    checks=$((checks + 1))
    [ "$(jq -r .total <<<"$b")" = "$(printf '%.2f' "$want")" ] ||
        fail "$id: lines sum to $sum, total $(jq -r .total <<<"$b")"
    t=$(jq -r .total <<<"$b")
    if [ -n "$prev" ]; then
        checks=$((checks + 1))
        [ "$(echo "$prev <= $t" | bc)" = 1 ] || fail "$id ($t) after a dearer book ($prev)"
    fi
    prev=$t
done < <(jq -r ".books[] | select(.priced) | select($group) | .id" <<<"$json")
done
checks=$((checks + 1))
jq -e '[.books[] | if .priced | not then 2 elif has("bound") then 1 else 0 end] |
    . == sort' <<<"$json" >/dev/null ||
    fail "lower bounds not between the books priced whole and the others"
# runloop knows no price of the usage: a lower bound of 0, naming it.
checks=$((checks + 1))
jq -e '.books[] | select(.id == "runloop") | .bound == "lower" and .total == "0.00" and
    (.lower_bound | test("^at least 0.00 USD; [0-9.,]+ vCPU-hours of CPU, ")) and
    ([.unpriced[].dimension] | index("cpu") != null)' <<<"$json" >/dev/null ||
    fail "runloop's lower bound: $(jq -c '.books[] | select(.id == "runloop")' <<<"$json")"
checks=$((checks + 1))
jq -e '[.books[].priced] | . == (sort | reverse)' <<<"$json" >/dev/null ||
    fail "a book that cannot price it comes before a priced one"
checks=$((checks + 1))
jq -e '[.books[] | select(.priced | not) | select((.reason | length) == 0)] | length == 0' <<<"$json" >/dev/null ||
    fail "a book that cannot price it without its reason"

# The facts a plan's limits are about; the quarantined q-1 is not in
# them (nor in the totals above).
checks=$((checks + 1))
jq -e --arg peak "$(date -u -d @$((JAN + 1800)) +%Y-%m-%dT%H:%M:%SZ)" \
    --arg long "$(date -u -d @$((JAN + 86400)) +%Y-%m-%dT%H:%M:%SZ)" \
    '.usage == {"sandboxes": 3, "running_seconds": 13500, "paused_seconds": 600,
      "sessions": 4, "peak_concurrency": 2, "peak_at": $peak,
      "longest_session_s": 7200,
      "longest_session": {"sandbox_id": "a-3", "start": $long, "seconds": 7200},
      "peak_disk_bytes": 0}' \
    <<<"$json" >/dev/null || fail "usage facts: $(jq -c .usage <<<"$json")"
checks=$((checks + 1))
[ "$(jq -r .limits_checked <<<"$json")" = true ] || fail "limits_checked"

# The limits each book's plan sets, against those facts: a-3's 2 h
# session breaks E2B Hobby's and Novita Free's 1 h and Vercel Hobby's
# 45 min; Vercel Hobby's cap of 5 CPU-hours is broken by 8 x 1 h + 2 x
# 45 min + 1 x 2 h = 11.5; E2B Pro and Novita Paid fit, as does a book
# with no limits.
checks=$((checks + 1))
jq -e '(.books | map({(.id): .}) | add) as $b |
    $b["e2b-hobby"].limits == [{"limit": "session_length", "value": "3600",
        "unit": "s", "used": "7200",
        "message": "sessions of 2 h exceed a 1 h session limit on e2b-hobby"}] and
    ($b["novita-free"].limits | map(.message)) ==
        ["sessions of 2 h exceed a 1 h session limit on novita-free"] and
    ($b["vercel-hobby"].limits | map(.message)) ==
        ["sessions of 2 h exceed a 45 min session limit on vercel-hobby",
         "11.5 CPU-hours exceed vercel-hobby'"'"'s cap of 5"] and
    $b["e2b-pro"].limits == [] and $b["novita-paid"].limits == [] and
    $b["aws-fargate"].limits == [] and
    ([.books[] | select(.priced) | .addon] | unique) == [null]' <<<"$json" >/dev/null ||
    fail "limits: $(jq -c '[.books[] | {id, limits, addon}]' <<<"$json")"

# The account's own book, rated as the invoice run would; no invoice yet.
checks=$((checks + 1))
jq -e --arg sum "$(printf '%.6f' "$(echo "$cpu + $mem + $fee" | bc)")" \
    '.account_books.priced and .account_books.usage_lines == $sum and
     .account_books.parts == [.account_books.parts[0]] and
     .account_books.parts[0].price_book == "e2b-pro" and
     .account_books.parts[0].from == "2026-01-01" and .account_books.parts[0].to == "2026-02-01" and
     .invoice == null and .name == "Acme Corp"' <<<"$json" >/dev/null ||
    fail "the account's own book: $(jq -c '.account_books, .invoice' <<<"$json")"

# Sessions, peak and longest session when the starts and ends were
# coalesced as they came; an account on no book is still replayed.
expect_status 0 replay --account many --period 2026-01 --db "$wdb" --format json
checks=$((checks + 1))
jq -e --arg peak "$(date -u -d @$((T2 + 1)) +%Y-%m-%dT%H:%M:%SZ)" \
    '.usage == {"sandboxes": 3, "running_seconds": 19999, "paused_seconds": 10000,
      "sessions": 10001, "peak_concurrency": 2, "peak_at": $peak,
      "longest_session_s": 9999,
      "longest_session": {"sandbox_id": "y", "start": $peak, "seconds": 9999},
      "peak_disk_bytes": 0} and
     .account_books == {"parts": [], "priced": false} and .invoice == null and
     ([.books[] | select(.account_book)] | length) == 0' <<<"$out" >/dev/null ||
    fail "many: $(jq -c '.usage, .account_books' <<<"$out")"

# 101 sandboxes and 101 GB at once: E2B Pro needs Pro+ (600 at once for
# 500 a month), its total with it 500 more; Novita Paid's 100 has no
# add-on; Daytona's 30 GiB and Vercel Hobby's 15 GB of storage are
# broken by 101 GB (94.063580036163330078125 GiB).
expect_status 0 replay --account burst --period 2026-01 --db "$wdb" --format json
checks=$((checks + 1))
jq -e '(.books | map({(.id): .}) | add) as $b |
    .usage.peak_concurrency == 101 and .usage.peak_disk_bytes == 101000000000 and
    .usage.longest_session_s == 60 and
    $b["e2b-pro"].limits == [] and
    ($b["e2b-pro"].addon | del(.total_with_addon)) ==
        {"name": "pro-plus", "max_concurrency": 600, "monthly_fee": "500.000000"} and
    (($b["e2b-pro"].addon.total_with_addon | tonumber) -
     ($b["e2b-pro"].total | tonumber) - 500 | fabs) < 0.001 and
    ($b["novita-paid"].limits | map(.message)) ==
        ["101 sandboxes at once exceed novita-paid'"'"'s 100 (no add-on fits)"] and
    $b["daytona"].limits == [{"limit": "storage", "value": "30", "unit": "GiB",
        "used": "94.063580036163",
        "message": "94.06 GiB of storage at once exceed daytona'"'"'s cap of 30"}] and
    ($b["vercel-hobby"].limits | map(.message)) ==
        ["101 sandboxes at once exceed vercel-hobby'"'"'s 10 (no add-on fits)",
         "101 GB of storage at once exceed vercel-hobby'"'"'s cap of 15"]' \
    <<<"$out" >/dev/null ||
    fail "burst: $(jq -c '.usage, [.books[] | {id, total, limits, addon}]' <<<"$out")"
expect_status 0 replay --account burst --period 2026-01 --db "$wdb"
contains "$out" "peak disk: 101000000000 bytes held at once" "table: peak disk"
contains "$out" "    add-on needed: pro-plus (500.00 a month, 600 at once) for 101 sandboxes at once; the total with it " "table: the add-on"
contains "$out" "    limit broken: 101 sandboxes at once exceed e2b-hobby's 20 (no add-on fits)" "table: a broken limit"

# --- the table -------------------------------------------------------------------
expect_status 0 replay --account acme --period 2026-01 --db "$wdb"
contains "$out" "lower bounds: a price these books need is unknown (null); the totals are of the known part
runloop                    USD          >=0.00
    lower bound: at least 0.00 USD; " "the table's lower bounds"
contains "$out" "    limit broken: sessions of 2 h exceed a 1 h session limit on e2b-hobby" "table: e2b-hobby's session"
contains "$out" "limits: checked per book below" "table: limits checked"
contains "$out" "e2b-pro                    USD  $(printf '%14s' "$total")  (the account's book)" "table: e2b-pro's total"
contains "$out" "peak concurrency: 2 sandboxes running at once" "table: peak"
contains "$out" "longest session: 7200 s, sandbox a-3" "table: longest session"
contains "$out" "invoice: none for the period" "table: no invoice"
nbooks=$(ls "$books"/*.json | wc -l)
checks=$((checks + 1))
[ "$(grep -c '^    source: ' <<<"$out")" = "$nbooks" ] || fail "not one source line per book"
checks=$((checks + 1))
[ "$(grep -c '^    as_of: ' <<<"$out")" = "$nbooks" ] || fail "not one as_of line per book"

# --- an account without usage owes the subscription ---------------------------------
expect_status 0 replay --account quiet --period 2026-01 --db "$wdb" --format json
checks=$((checks + 1))
jq -e --arg fee "$(printf '%.2f' "$fee")" '(.books[] | select(.id == "e2b-pro") | .total) == $fee and .usage.sandboxes == 0 and .usage.peak_concurrency == 0 and .usage.peak_at == null' <<<"$out" >/dev/null ||
    fail "quiet: $(jq -c '.usage, (.books[] | select(.id == "e2b-pro"))' <<<"$out")"

# --- the database is found as meterctl finds it ------------------------------------
# (this directory's embedded cluster, then METER_DATABASE_URL)
expect_status 0 "$COSTSIM" replay --books "$books" --account acme --period 2026-01 --format json
checks=$((checks + 1))
[ "$out" = "$json" ] || fail "the embedded cluster of the directory gave another replay"
expect_status 0 env -C / METER_DATABASE_URL="$wdb" "$COSTSIM" replay --books "$books" --account acme --period 2026-01 --format json
checks=$((checks + 1))
[ "$out" = "$json" ] || fail "METER_DATABASE_URL gave another replay"

# --- errors --------------------------------------------------------------------------
expect_status 2 replay --account acme --period 2026-13 --db "$wdb"
contains "$err" "--period '2026-13'" "a bad period is named"
expect_status 2 replay --account 'a b' --period 2026-01 --db "$wdb"
contains "$err" "--account 'a b'" "a bad account id is named"
expect_status 2 replay --period 2026-01 --db "$wdb"
contains "$err" "--account" "a missing account"
expect_status 2 replay --account acme --period 2026-01 --format xml
contains "$err" "--format 'xml'" "a bad format is named"
expect_status 2 replay --account acme --period 2026-01 --bogus
contains "$err" "'--bogus'" "an unknown option is named"
expect_status 1 replay --account ghost --period 2026-01 --db "$wdb"
contains "$err" "no account 'ghost'" "an unknown account is named"
checks=$((checks + 1))
[ -z "$out" ] || fail "an unknown account printed a result: $out"
expect_status 1 replay --account acme --period 2026-01 --db "host=$tmp/nowhere"
contains "$err" "cannot connect to the database" "an unreachable database"
expect_status 1 env -C / "$COSTSIM" replay --books "$books" --account acme --period 2026-01
contains "$err" "no database" "no database at all"
expect_status 1 replay --account acme --period 2026-01 --db "$wdb" --books "$tmp/none"
contains "$err" "'$tmp/none'" "a missing books directory is named"

# --- nothing written ---------------------------------------------------------------------
checks=$((checks + 1))
after=$(state)
[ "$after" = "$before" ] || fail "replay changed the database: before '$before', after '$after'"

# --- against the invoice ---------------------------------------------------------------
expect_status 0 ctl invoice run --period 2026-01 --account acme
expect_status 0 replay --account acme --period 2026-01 --db "$wdb" --format json
checks=$((checks + 1))
jq -e --arg total "$total" '.invoice.status == "draft" and .invoice.total == $total and
    .invoice.usage_lines == .account_books.usage_lines and
    .invoice.replay_minus_invoice_usage == "0.000000"' <<<"$out" >/dev/null ||
    fail "against the invoice: $(jq -c .invoice <<<"$out")"
expect_status 0 ctl invoice run --period 2026-01 --account acme --finalize
expect_status 0 replay --account acme --period 2026-01 --db "$wdb"
contains "$out" "invoice $(date -u +%Y)-" "table: the final invoice's number"
contains "$out" "replay - invoice, usage lines: 0.000000" "table: no difference"

finish
