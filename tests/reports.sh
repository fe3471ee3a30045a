#!/bin/bash
# The dashboards' numbers (GET /v1/reports/...) agree with the invoices.
# A generated fleet across a month's end and in the current month, four
# accounts on two books (one changes book mid-month), invoices final,
# voided, and drafts: every document's revenue by day sums to its total
# to the cent; the overview's revenue over the periods sums to all
# documents' totals; an account's unbilled estimate equals the draft the
# invoice run produced, and follows a rerun; fees spread over every day
# of their part, usage over the days that had it. Also sorting, the
# filter and pages of the accounts table, the usage report's totals
# against the rollups, and each query parameter's refusal.
. "$(dirname "$0")/lib.sh"
with_meterd
ctl() { "$METERCTL" --db "$wdb" "$@"; }
q() { psql "$db" -qAtc "$1"; }

cat >usage.json <<'JSON'
{"id": "usage", "currency": "USD", "effective_from": "2025-01-01",
 "cpu": {"basis": "allocated", "rate": "0.0504", "per": "hour"},
 "memory": {"basis": "allocated", "unit": "GiB", "rate": "0.0000045", "per": "second"},
 "storage": {"rate": "0.000108", "per": "hour", "billed_when": "running"},
 "egress": {"rate": "0.05"}, "per_run": "0.001", "granularity_s": 60,
 "autopause": {"idle_below": "0.1", "after_s": 300}}
JSON
cat >plan.json <<'JSON'
{"id": "plan", "currency": "USD", "effective_from": "2025-01-01",
 "cpu": {"basis": "allocated", "rate": "0.000014", "per": "second"},
 "memory": {"basis": "allocated", "unit": "GiB", "rate": "0.0000045", "per": "second"},
 "storage": {"rate": "0", "per": "month"}, "egress": null, "per_run": "0",
 "subscription": {"monthly_fee": "31", "included_credit": "0",
                  "max_concurrency": null, "max_session_s": null},
 "grants": [{"id": "welcome", "amount": "40", "expires_after_periods": null}]}
JSON
"$METERCTL" --db "$db" migrate >/dev/null || { fail "migrate"; finish; exit; }
ctl books add usage.json >/dev/null || fail "books add usage"
ctl books add plan.json >/dev/null || fail "books add plan"
HOST=$(ctl keys create --role host --name h)
FIN=$(ctl keys create --role finance --name f)
# Reports computed for every request here (--report-ttl 0): the numbers
# must follow every run at once; the cache is tested at the end.
start_meterd a "$wdb" --max-age 36500 --report-ttl 0 || { finish; exit; }
get() { curl -s -H "Authorization: Bearer $FIN" "$url_a$1"; }
status() { curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer ${2:-$FIN}" "$url_a$1"; }

# January 31st 22:00 for 4 hours: across the month's end.
JAN31=1769896800
ctl gen --sandboxes 24 --accounts 4 --seconds 14400 --start $JAN31 --seed 3 \
    --push "$url_a" --token "$HOST" >gen.out 2>&1 || fail "gen: $(cat gen.out)"
# And the last hour, in the current month.
now=$(date +%s)
ctl gen --sandboxes 8 --accounts 4 --seconds 1800 --start $((now - 3600)) \
    --seed 5 --push "$url_a" --token "$HOST" >gen2.out 2>&1 || fail "gen now: $(cat gen2.out)"
ctl accounts add acct-0 --book usage --from 2026-01-01 >/dev/null
ctl accounts add acct-1 --book plan --from 2026-01-01 >/dev/null
ctl accounts add acct-2 --book usage --from 2026-01-01 >/dev/null
ctl accounts add acct-3 --book usage --from 2026-01-01 >/dev/null
# acct-2 moves to the plan on February 15th.
ctl accounts add acct-2 --book plan --from 2026-02-15 >/dev/null
period=$(date -u +%Y-%m)
ctl invoice run --period 2026-01 --finalize >/dev/null || fail "run 2026-01"
ctl invoice run --period 2026-02 --finalize >/dev/null || fail "run 2026-02"
ctl invoice run --period "$period" >/dev/null || fail "run $period"
number=$(q "SELECT number FROM invoices WHERE account_id = 'acct-0'
    AND period = '2026-01-01' AND status = 'final'")
ctl invoice void "$number" --reason "test" >/dev/null || fail "void $number"
ctl invoice run --period 2026-01 >/dev/null || fail "rerun 2026-01"

# Every document's revenue rows sum to its total, exactly.
checks=$((checks + 1))
bad=$(q "SELECT i.invoice_id, i.total, coalesce(sum(r.amount), 0) FROM invoices i
    LEFT JOIN invoice_revenue r USING (account_id, invoice_id)
    GROUP BY 1, 2 HAVING i.total <> coalesce(sum(r.amount), 0)")
[ -z "$bad" ] || fail "revenue rows differ from totals: $bad"
checks=$((checks + 1))
[ "$(q "SELECT count(DISTINCT kind) FROM invoices")" = 2 ] ||
    fail "expected invoices and a credit note"
# Amounts are whole cents.
checks=$((checks + 1))
[ "$(q "SELECT count(*) FROM invoice_revenue WHERE amount <> round(amount, 2)")" = 0 ] ||
    fail "revenue rows in fractions of a cent"

# The plan's fee: February's 31 on acct-1 over all 28 days; acct-2's
# prorated fee only on its days on the plan (15th on).
checks=$((checks + 1))
days=$(q "SELECT count(DISTINCT day) FROM invoice_revenue r JOIN invoices i
    USING (account_id, invoice_id) WHERE r.account_id = 'acct-1'
    AND i.period = '2026-02-01' AND r.kind = 'subscription'")
[ "$days" = 28 ] || fail "acct-1's fee on $days days of February, want 28"
checks=$((checks + 1))
span=$(q "SELECT min(day) || ' ' || max(day) FROM invoice_revenue r JOIN invoices i
    USING (account_id, invoice_id) WHERE r.account_id = 'acct-2'
    AND i.period = '2026-02-01' AND r.kind = 'subscription'")
[ "$span" = "2026-02-15 2026-02-28" ] || fail "acct-2's fee spread over $span"
# Spread evenly: 31 over 28 days is 1.10 or 1.11 a day.
checks=$((checks + 1))
spread=$(q "SELECT min(amount) || ' ' || max(amount) FROM
    invoice_revenue r JOIN invoices i USING (account_id, invoice_id)
    WHERE r.account_id = 'acct-1' AND i.period = '2026-02-01'
    AND r.kind = 'subscription'")
[ "$spread" = "1.10 1.11" ] || fail "acct-1's fee by day: $spread"
# A grant pays where the charges it pays went: no day of a document
# turns negative for it, and a document it pays whole is 0 every day.
checks=$((checks + 1))
[ "$(q "SELECT count(*) FROM invoice_revenue WHERE kind = 'credit_grant'")" -gt 0 ] ||
    fail "no grant was spent"
checks=$((checks + 1))
neg=$(q "SELECT r.invoice_id, r.day, sum(r.amount) FROM invoice_revenue r
    WHERE r.account_id IN ('acct-1', 'acct-2') AND EXISTS (SELECT 1
    FROM invoice_revenue g WHERE g.account_id = r.account_id
    AND g.invoice_id = r.invoice_id AND g.kind = 'credit_grant')
    GROUP BY 1, 2 HAVING sum(r.amount) < 0")
[ -z "$neg" ] || fail "days made negative by a grant: $neg"

# Usage goes to the days that had it: January's cpu only on the 31st.
checks=$((checks + 1))
days=$(q "SELECT string_agg(DISTINCT day::text, ',') FROM invoice_revenue r
    JOIN invoices i USING (account_id, invoice_id)
    WHERE r.account_id = 'acct-3' AND i.period = '2026-01-01' AND r.kind = 'cpu'")
[ "$days" = "2026-01-31" ] || fail "acct-3's January cpu on $days"

# The overview: over every period, revenue adds up to every document.
all=$(q "SELECT sum(total) FROM invoices")
sum=0
for p in 2026-01 2026-02 "$period"; do
    body=$(get "/v1/reports/overview?period=$p")
    v=$(echo "$body" | jq -r '[.revenue[] | select(.currency == "USD") | .period_to_date][0] // "0"')
    whole=$(echo "$body" | jq -r '[.revenue[] | select(.currency == "USD") | .period_total][0] // "0"')
    byday=$(echo "$body" | jq -r '[.revenue_by_day[] | select(.period == "current") | .amount] | join("+")')
    checks=$((checks + 1))
    [ "$(q "SELECT ($v)::numeric = (0${byday:++$byday})::numeric")" = t ] ||
        fail "$p: period_to_date $v is not the sum of its days ($byday)"
    bybook=$(echo "$body" | jq -r '[.revenue_by_book[].amount] | join("+")')
    bymodel=$(echo "$body" | jq -r '[.revenue_by_model[].amount] | join("+")')
    checks=$((checks + 1))
    [ "$(q "SELECT (0${bybook:++$bybook})::numeric = ($v)::numeric AND (0${bymodel:++$bymodel})::numeric = ($v)::numeric")" = t ] ||
        fail "$p: by book ($bybook) or by model ($bymodel) is not $v"
    # A period over is whole; the current one so far is not, by its
    # fees spread over the days to come.
    checks=$((checks + 1))
    last=$(date -u -d "$(date -u +%Y-%m-01) +1 month -1 day" +%d)
    if [ "$p" = "$period" ] && [ "$(date -u +%d)" != "$last" ]; then
        [ "$(q "SELECT ($v)::numeric < ($whole)::numeric")" = t ] ||
            fail "$p: so far $v, not under the whole $whole (plan fees to come)"
        days=$(echo "$body" | jq -r '[.revenue_by_day[] | select(.period == "current") | .day] | max')
        [ "$days" = "$(date -u +%Y-%m-%d)" ] || fail "$p: days up to $days, not today"
    else
        [ "$v" = "$whole" ] || fail "$p: so far $v, whole $whole"
    fi
    sum="$sum+$whole"
done
checks=$((checks + 1))
[ "$(q "SELECT ($sum)::numeric = ($all)::numeric")" = t ] ||
    fail "revenue over the periods $sum is not the documents' total $all"
body=$(get "/v1/reports/overview?period=2026-02")
contains "$(echo "$body" | jq -c '.revenue_by_model | map(.model)')" '"subscription"' "models"
contains "$(echo "$body" | jq -c '.revenue_by_model | map(.model)')" '"per-minute"' "models"
checks=$((checks + 1))
[ "$(echo "$body" | jq -r '.previous_period')" = 2026-01 ] || fail "previous period"
# Samples ingested in the last hour are counted per minute.
body=$(get "/v1/reports/overview")
checks=$((checks + 1))
n=$(echo "$body" | jq '[.ingested_per_minute[].samples] | add')
stored=$(q "SELECT sum(samples) FROM usage_hourly WHERE added_at >= now() - interval '50 minutes'")
[ "$n" -ge "$stored" ] 2>/dev/null || fail "ingested per minute $n, want at least $stored"
checks=$((checks + 1))
share=$(echo "$body" | jq -r '.idle.idle_share')
want=$(q "SELECT round(sum(idle_s)::numeric / sum(running_s), 4) FROM (SELECT DISTINCT ON
    (account_id) idle_s, running_s FROM invoice_usage WHERE period = '$period-01'
    AND running_s IS NOT NULL ORDER BY account_id, seq DESC) x")
[ "$share" = "$want" ] || fail "idle share $share, want $want"

# The unbilled estimate is the draft the run made, to the cent.
for a in acct-0 acct-1 acct-2 acct-3; do
    est=$(get "/v1/reports/accounts/$a" | jq -r '.estimate.total')
    want=$(q "SELECT total FROM invoices WHERE account_id = '$a'
        AND period = '$period-01' AND status = 'draft'")
    checks=$((checks + 1))
    [ -n "$want" ] && [ "$est" = "$want" ] || fail "$a: estimate $est, draft $want"
done
# More usage, another run: the estimate follows.
before=$(get "/v1/reports/accounts/acct-0" | jq -r '.estimate.total')
ctl gen --sandboxes 8 --accounts 1 --seconds 600 --start $((now - 1200)) \
    --seed 11 --push "$url_a" --token "$HOST" >gen3.out 2>&1 || fail "gen 3"
ctl invoice run --period "$period" --account acct-0 >/dev/null || fail "rerun"
after=$(get "/v1/reports/accounts/acct-0" | jq -r '.estimate.total')
want=$(q "SELECT total FROM invoices WHERE account_id = 'acct-0'
    AND period = '$period-01' AND status = 'draft'")
checks=$((checks + 1))
[ "$after" = "$want" ] && [ "$after" != "$before" ] ||
    fail "estimate after more usage $after (before $before), draft $want"
# The account's documents, the void one shown as void.
body=$(get "/v1/reports/accounts/acct-0?period=2026-01")
contains "$(echo "$body" | jq -c '[.invoices[].status]')" '"void"' "acct-0's void invoice"
checks=$((checks + 1))
[ "$(echo "$body" | jq -r '.estimate.total')" != null ] || fail "January's new draft"
checks=$((checks + 1))
d=$(echo "$body" | jq -r '[.usage_by_day[] | .samples] | add')
want=$(q "SELECT sum(samples) FROM usage_hourly h JOIN accounts a USING (account_pk)
    WHERE a.account_id = 'acct-0' AND h.hour >= 1767225600 / 3600 AND h.hour < 1769904000 / 3600")
[ "$d" = "$want" ] || fail "acct-0's January samples by day $d, want $want"

# The accounts table: sorted, filtered, paged.
body=$(get "/v1/reports/accounts?period=2026-01&sort=revenue&order=desc")
checks=$((checks + 1))
[ "$(echo "$body" | jq '.total')" = 4 ] || fail "4 accounts: $body"
checks=$((checks + 1))
echo "$body" | jq -e '[.items[].revenue | tonumber] as $r | $r == ($r | sort | reverse)' >/dev/null ||
    fail "not by revenue, descending: $body"
body=$(get "/v1/reports/accounts?period=2026-01&sort=account&order=asc&per_page=3&page=2")
checks=$((checks + 1))
[ "$(echo "$body" | jq -c '[.items[].account_id]')" = '["acct-3"]' ] ||
    fail "page 2 of 3 by account: $body"
body=$(get "/v1/reports/accounts?period=2026-01&q=CCT-2")
checks=$((checks + 1))
[ "$(echo "$body" | jq -c '[.items[].account_id]')" = '["acct-2"]' ] ||
    fail "filter q=CCT-2: $body"
body=$(get "/v1/reports/accounts?period=2026-01&sort=vcpu_hours&order=asc")
checks=$((checks + 1))
echo "$body" | jq -e '[.items[].vcpu_hours | tonumber] as $r | $r == ($r | sort)' >/dev/null ||
    fail "not by vCPU-hours, ascending: $body"

# The invoices table: every document, void ones as void, refs as named.
body=$(get "/v1/reports/invoices")
checks=$((checks + 1))
[ "$(echo "$body" | jq .total)" = "$(q "SELECT count(*) FROM invoices")" ] ||
    fail "invoices total: $(echo "$body" | jq .total)"
body=$(get "/v1/reports/invoices?status=void")
checks=$((checks + 1))
[ "$(echo "$body" | jq -r '[.items[].ref] | join(",")')" = "$number" ] ||
    fail "the void invoice: $body"
body=$(get "/v1/reports/invoices?period=2026-01&status=&account=")
checks=$((checks + 1))
[ "$(echo "$body" | jq .total)" = "$(q "SELECT count(*) FROM invoices WHERE period = '2026-01-01'")" ] ||
    fail "empty filters are none: $body"
body=$(get "/v1/reports/invoices?status=draft&per_page=1&page=2")
checks=$((checks + 1))
[ "$(echo "$body" | jq '.items | length')" = 1 ] &&
    [ "$(echo "$body" | jq -r '.items[0].ref')" = "$(echo "$body" | jq -r '.items[0].invoice_id')" ] ||
    fail "a draft's ref is its id: $body"

# The fleet's usage by hour adds up to the rollups.
body=$(get "/v1/reports/usage?from=2026-01-31T22:00:00Z&to=2026-02-01T02:00:00Z&granularity=hour")
checks=$((checks + 1))
[ "$(echo "$body" | jq '.items | length')" = 4 ] || fail "4 hours: $body"
checks=$((checks + 1))
want=$(q "SELECT sum(samples) FROM usage_hourly WHERE hour >= 1769896800 / 3600
    AND hour < 1769911200 / 3600")
[ "$(echo "$body" | jq '[.items[].samples] | add')" = "$want" ] ||
    fail "samples by hour: $(echo "$body" | jq -c '[.items[].samples]')"
body=$(get "/v1/reports/usage?from=2026-01-31&to=2026-02-01")
checks=$((checks + 1))
[ "$(echo "$body" | jq -c '[.items[].start]')" = '["2026-01-31T00:00:00Z","2026-02-01T00:00:00Z"]' ] ||
    fail "days 31st and 1st: $body"

# A past end alone: the 30 days before it.
body=$(get "/v1/reports/usage?to=2026-01-31")
checks=$((checks + 1))
[ "$(echo "$body" | jq -r '.from + " " + .to')" = "2026-01-02T00:00:00Z 2026-02-01T00:00:00Z" ] ||
    fail "to alone: $(echo "$body" | jq -c '{from, to}')"

# Refusals name the parameter and its value.
for bad in "overview?period=2026-13 period" "accounts?sort=bogus sort" \
    "accounts?order=up order" "accounts?per_page=501 per_page" \
    "accounts?page=0 page" "usage?granularity=week granularity" \
    "usage?from=yesterday from" "usage?from=2026-02-02&to=2026-02-01 to" \
    "usage?from=2026-01-01&to=2026-03-01&granularity=hour to" \
    "invoices?status=paid status" "invoices?period=2026 period" \
    "invoices?account=a/b account"; do
    set -- $bad
    body=$(get "/v1/reports/$1")
    checks=$((checks + 1))
    [ "$(echo "$body" | jq -r '.errors[0].field')" = "$2" ] || fail "$1: $body"
done
checks=$((checks + 1))
st=$(status /v1/reports/accounts/nobody)
[ "$st" = 404 ] || fail "unknown account: $st $(get /v1/reports/accounts/nobody)"

# A table's CSV: a name a spreadsheet would run is quoted and defused;
# a negative amount is a number.
q "UPDATE accounts SET name = '-1+1+cmd|'' /C calc''!A0' WHERE account_id = 'acct-3'" >/dev/null
q "UPDATE accounts SET name = '=HYPERLINK(\"x\")' WHERE account_id = 'acct-2'" >/dev/null
csv=$(get "/accounts?period=2026-01&sort=account&format=csv&table=accounts")
contains "$csv" "acct-3,\"'-1+1+cmd|' /C calc'!A0\"," "a formula starting with - in a CSV"
contains "$csv" "acct-2,\"'=HYPERLINK(\"\"x\"\")\"," "a formula starting with = in a CSV"
csv=$(get "/invoices?status=final&format=csv&table=invoices")
checks=$((checks + 1))
echo "$csv" | grep -Eq ',credit_note,final,USD,-[0-9]+\.[0-9]{2},' || fail "a negative amount in a CSV: $csv"

# Kept --report-ttl seconds: the same document until then, then anew.
start_meterd c "$wdb" --report-ttl 2 || { finish; exit; }
one=$(curl -s -H "Authorization: Bearer $FIN" "$url_c/v1/reports/overview" | jq -r .as_of)
sleep 1.1
two=$(curl -s -H "Authorization: Bearer $FIN" "$url_c/v1/reports/overview" | jq -r .as_of)
sleep 1.5
three=$(curl -s -H "Authorization: Bearer $FIN" "$url_c/v1/reports/overview" | jq -r .as_of)
checks=$((checks + 1))
[ "$one" = "$two" ] && [ "$two" != "$three" ] ||
    fail "cached overview: as of $one, $two, then $three"
other=$(curl -s -H "Authorization: Bearer $FIN" "$url_c/v1/reports/overview?period=2026-01" | jq -r .period)
checks=$((checks + 1))
[ "$other" = 2026-01 ] || fail "another period is another entry: $other"

# A report not kept whose build fails: the requests waiting for it fail
# with it, not each after the other's timeout.
start_meterd d "$wdb" --db-timeout 2 --threads 8 || { finish; exit; }
psql "$db" -qc "BEGIN; LOCK TABLE invoice_revenue; SELECT pg_sleep(8); COMMIT" >/dev/null 2>&1 &
locker=$!
sleep 0.5
waiters=()
for i in 1 2 3 4 5 6; do
    curl -s -o /dev/null -w '%{http_code} %{time_total}\n' -H "Authorization: Bearer $FIN" \
        "$url_d/v1/reports/overview?period=2025-06" >"wait.$i" &
    waiters+=($!)
done
wait "${waiters[@]}"
checks=$((checks + 1))
slow=$(cat wait.* | awk '$1 != 503 || $2 > 4.5' | wc -l)
[ "$slow" = 0 ] || fail "waiters of a failed build: $(cat wait.* | tr '\n' ' ')"
wait $locker

# An account key reads its own account only.
ACC=$(ctl keys create --role account --account acct-1 --name a1)
checks=$((checks + 1))
[ "$(status /v1/reports/accounts/acct-1 "$ACC")" = 200 ] || fail "own account"
checks=$((checks + 1))
[ "$(status /v1/reports/accounts/acct-2 "$ACC")" = 404 ] || fail "another account"
checks=$((checks + 1))
[ "$(curl -s -H "Authorization: Bearer $ACC" "$url_a/v1/reports/invoices?account=acct-2" | jq -r '[.items[].account_id] | unique | join(",")')" = acct-1 ] ||
    fail "an account key lists its own documents only"
for r in overview accounts usage; do
    checks=$((checks + 1))
    [ "$(status /v1/reports/$r "$ACC")" = 403 ] || fail "account key on $r"
done
finish
