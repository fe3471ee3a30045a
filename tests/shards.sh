#!/bin/bash
# Usage over shards through the real binaries (issue 24, docs/scale.md):
# a catalog and two shards, each an embedded PostgreSQL cluster of its
# own (unix sockets), 32 buckets a shard, beside a single server (a
# database of the catalog's cluster). Two meterd replicas on the
# catalog push the same generated fleet at once, so every batch is sent
# twice over the two; one meterd on the single server pushes it once.
# Then: each second accepted once in all; every account's export, read
# on its shard, the single server's lines byte for byte; the shards'
# rollups merged and their hours packed by meterd's background thread;
# the invoice run's drafts the single server's; every report and
# dashboard, read through postgres_fdw, the single server's; shard list
# and its errors.
. "$(dirname "$0")/lib.sh"
for tool in curl psql; do
    command -v $tool >/dev/null || { fail "$tool not found"; finish; exit; }
done
shard_clusters
one_db="$cat_db dbname=single" one_wdb="$cat_wdb dbname=single"
psql "$cat_db" -XAtq -c "CREATE DATABASE single" || fail "create the single server's database"
for d in "$cat_db" "$s1_db" "$s2_db" "$one_db"; do
    "$METERCTL" --db "$d" migrate >/dev/null || fail "migrate $d"
done

# The map: shard 1 holds buckets 0-31, shard 2 32-63, the catalog none.
expect_status 0 "$METERCTL" --db "$cat_wdb" shard add one "$s1_wdb"
expect_status 0 "$METERCTL" --db "$cat_wdb" shard add two "$s2_wdb"
expect_status 1 "$METERCTL" --db "$cat_wdb" shard add three "$s1_wdb"
contains "$err" "shard 'one' is listed already" "a shard's conninfo is once"
expect_status 2 "$METERCTL" --db "$cat_wdb" shard add Bad "$s1_wdb"
contains "$err" "NAME 'Bad'" "a bad shard name"
expect_status 1 "$METERCTL" --db "$cat_wdb" shard add four "host=/nonexistent dbname=x"
contains "$err" "cannot reach shard 'four'" "an unreachable shard"
shard_split
expect_status 0 "$METERCTL" --db "$cat_wdb" shard list
contains "$out" "one                       32" "shard list: one holds 32 buckets"
contains "$out" "local                      0  (the catalog's database)" "shard list: the catalog holds none"

HOST=$("$METERCTL" --db "$cat_wdb" keys create --role host --name h 2>/dev/null)
FIN=$("$METERCTL" --db "$cat_wdb" keys create --role finance --name f 2>/dev/null)
ONE=$("$METERCTL" --db "$one_wdb" keys create --role host --name h 2>/dev/null)
for m in "a $cat_wdb" "b $cat_wdb" "one $one_wdb"; do
    start_meterd ${m%% *} "${m#* }" --merge-every 1 --pack-after 1 --log-level warn || { finish; exit 1; }
done

# An hour that ended two hours ago: packed once merged.
from=$(($(date -u +%s) / 3600 * 3600 - 3 * 3600))
fleet="--sandboxes 32 --accounts 16 --seconds 3600 --start $from --seed 11 --batch-seconds 60"
push() { # URL TOKEN OUT
    "$METERCTL" gen $fleet --push "$1" --token "$2" --connections 2 2>"$3"
}
push "$url_a" "$HOST" a.out & pa=$!
push "$url_b" "$HOST" b.out & pb=$!
push "$url_one" "$ONE" one.out || fail "push to the single server: $(cat one.out)"
wait $pa || fail "push to replica a: $(cat a.out)"
wait $pb || fail "push to replica b: $(cat b.out)"
said() { sed -n "s/.* \([0-9]*\) $2[,;].*/\1/p" "$1"; }
pushed=$(sed -n 's/.*pushed \([0-9]*\) samples.*/\1/p' one.out)
checks=$((checks + 1))
[ "$(said one.out accepted)" = "$pushed" ] && [ "$pushed" -gt 50000 ] ||
    fail "the single server accepted $(said one.out accepted) of $pushed"
checks=$((checks + 1))
[ $(($(said a.out accepted) + $(said b.out accepted))) = "$pushed" ] ||
    fail "the replicas accepted $(said a.out accepted) + $(said b.out accepted), want $pushed"
checks=$((checks + 1))
[ $(($(said a.out duplicates) + $(said b.out duplicates))) = "$pushed" ] ||
    fail "the replicas counted $(said a.out duplicates) + $(said b.out duplicates) duplicates, want $pushed"
checks=$((checks + 1))
[ "$(psql "$cat_db" -XAtq -c "SELECT count(*) FROM usage_blocks")" = 0 ] ||
    fail "the catalog stored usage"
for s in "$s1_db" "$s2_db"; do
    checks=$((checks + 1))
    [ "$(psql "$s" -XAtq -c "SELECT count(*) FROM sandboxes")" -gt 0 ] || fail "a shard holds no sandbox"
done
checks=$((checks + 1))
[ "$(psql "$cat_db" -XAtq -c "SELECT count(*) FROM pg_prepared_xacts")" = 0 ] &&
    [ "$(psql "$s1_db" -XAtq -c "SELECT count(*) FROM pg_prepared_xacts")" = 0 ] &&
    [ "$(psql "$s2_db" -XAtq -c "SELECT count(*) FROM pg_prepared_xacts")" = 0 ] ||
    fail "prepared transactions left"

# The shards' rollups merged and their ended hours packed, by meterd.
for s in "$s1_db" "$s2_db"; do
    for i in $(seq 1 100); do
        [ "$(psql "$s" -XAtq -c "SELECT count(*) FROM usage_packs")" -gt 0 ] && break
        sleep 0.2
    done
    checks=$((checks + 1))
    [ "$(psql "$s" -XAtq -c "SELECT count(*) FROM usage_packs")" -gt 0 ] &&
        [ "$(psql "$s" -XAtq -c "SELECT count(*) FROM usage_hourly_merged")" -gt 0 ] ||
        fail "a shard's rollups were not merged, or its hours not packed"
done

# Every account's export, read on its shard, is the single server's.
accounts=$(psql "$one_db" -XAtq -c "SELECT account_id FROM accounts ORDER BY 1")
checks=$((checks + 1))
[ "$(echo "$accounts" | wc -l)" = 16 ] || fail "$(echo "$accounts" | wc -l) accounts, want 16"
differ=0
for a in $accounts; do
    "$METERCTL" --db "$cat_wdb" export --from 0 --to 9999999999 --account "$a" >sharded.ndjson 2>x.err ||
        fail "export $a over shards: $(cat x.err)"
    "$METERCTL" --db "$one_wdb" export --from 0 --to 9999999999 --account "$a" >one.ndjson
    # An account's sandboxes come in the order they were registered,
    # which two replicas racing make another than one server's: the
    # lines, sorted, are the same bytes.
    cmp -s <(LC_ALL=C sort sharded.ndjson) <(LC_ALL=C sort one.ndjson) || differ=$((differ + 1))
    cat sharded.ndjson >>all-sharded.ndjson
done
checks=$((checks + 1))
[ $differ = 0 ] || fail "$differ accounts' exports differ from the single server's"
checks=$((checks + 1))
[ "$(wc -l <all-sharded.ndjson)" = "$pushed" ] || fail "the exports hold $(wc -l <all-sharded.ndjson) samples, want $pushed"
# An account's usage by hour, from its shard's rollups: the single
# server's figures.
FIN1=$("$METERCTL" --db "$one_wdb" keys create --role finance --name f 2>/dev/null)
for a in acct-0 acct-7; do
    q="account=$a&from=$from&to=$((from + 7200))&granularity=hour"
    curl -s -H "Authorization: Bearer $FIN" "$url_a/v1/usage?$q" >u-sharded.json
    curl -s -H "Authorization: Bearer $FIN1" "$url_one/v1/usage?$q" >u-one.json
    checks=$((checks + 1))
    cmp -s u-sharded.json u-one.json && grep -q '"samples"' u-one.json ||
        fail "GET /v1/usage of $a over shards: $(head -c 300 u-sharded.json), one server: $(head -c 300 u-one.json)"
done
# Every account at once is not read over shards yet: refused, named.
expect_status 1 "$METERCTL" --db "$cat_wdb" export --from 0 --to 9999999999
contains "$err" "usage over several shards is not read yet" "export of every account over shards"

# The invoice run over shards: the single server's drafts.
book=$(cd "$top" && cd "$(dirname "$0")/../pricing/books" && pwd)/fly-machines.json
period=$(date -u -d @$from +%Y-%m)
for d in "$cat_wdb" "$one_wdb"; do
    "$METERCTL" --db "$d" books add "$book" >/dev/null || fail "books add"
    for a in $accounts; do
        "$METERCTL" --db "$d" accounts add "$a" --book fly-machines --from "$period-01" >/dev/null || fail "accounts add $a"
    done
done
expect_status 0 "$METERCTL" --db "$cat_wdb" invoice run --period "$period" --jobs 2 --batch 7
contains "$out" "16 accounts, 16 drafts" "the run over shards"
expect_status 0 "$METERCTL" --db "$one_wdb" invoice run --period "$period" --jobs 1
totals() { psql "$1" -XAtq -c "SELECT i.account_id, i.total, count(l.*), sum(l.amount) FROM invoices i JOIN invoice_lines l USING (account_id, invoice_id) GROUP BY 1, 2 ORDER BY 1"; }
checks=$((checks + 1))
[ "$(totals "$cat_db")" = "$(totals "$one_db")" ] || fail "the drafts over shards differ: $(diff <(totals "$cat_db") <(totals "$one_db") | head -n 4)"
checks=$((checks + 1))
[ "$(totals "$cat_db" | wc -l)" = 16 ] || fail "$(totals "$cat_db" | wc -l) drafts"

# Every report and dashboard over shards (postgres_fdw, docs/scale.md)
# is the single server's, but for when it was made: as_of (and the
# pages' "as of" line); the samples ingested per minute, which the
# replicas stored in other minutes than the single server, in total;
# and the drafts' ids, which the run over shards (two jobs) gave in
# another order than the single server's: without them, a document
# list is compared in the accounts' order.
mask='walk(if type == "object" then del(.as_of, .invoice_id, .ref) else . end)
    | del(.ingested_per_minute) | if .items then .items |= sort_by(.account_id, .period, .kind) else . end'
day=$(date -u -d @$from +%Y-%m-%d)
for q in "overview?period=$period" "accounts?period=$period&sort=revenue&order=desc" \
    "accounts?period=$period&sort=vcpu_hours&order=asc&per_page=7&page=2" \
    "accounts?period=$period&q=acct-1" "accounts/acct-0?period=$period" \
    "accounts/acct-7?period=$period" \
    "usage?from=$(date -u -d @$from +%Y-%m-%dT%H:00:00Z)&to=$(date -u -d @$((from + 7200)) +%Y-%m-%dT%H:00:00Z)&granularity=hour" \
    "usage?from=$day&to=$(date -u -d "$day + 1 day" +%Y-%m-%d)" \
    "invoices?period=$period" "invoices?status=draft&account=acct-4"; do
    code=$(curl -s -o r-sharded.json -w '%{http_code}' -H "Authorization: Bearer $FIN" "$url_a/v1/reports/$q")
    curl -s -H "Authorization: Bearer $FIN1" "$url_one/v1/reports/$q" >r-one.json
    checks=$((checks + 1))
    [ "$code" = 200 ] && [ "$(jq -S "$mask" r-sharded.json)" = "$(jq -S "$mask" r-one.json)" ] ||
        fail "GET /v1/reports/$q over shards ($code): $(jq -cS "$mask" r-sharded.json | head -c 400), one server: $(jq -cS "$mask" r-one.json | head -c 400)"
done
q="overview?period=$period"
curl -s -H "Authorization: Bearer $FIN" "$url_a/v1/reports/$q" >r-sharded.json
checks=$((checks + 1))
[ "$(jq '[.ingested_per_minute[].samples] | add' r-sharded.json)" = "$pushed" ] ||
    fail "the overview over shards counts $(jq '[.ingested_per_minute[].samples] | add' r-sharded.json) samples ingested, want $pushed"
checks=$((checks + 1))
[ "$(jq '.top_accounts | length' r-sharded.json)" -gt 0 ] || fail "the overview over shards has no revenue"
# The pages, and their tables' CSV; but for the samples ingested by
# minute, which the replicas stored in other minutes than the single
# server (masked in the JSON above too).
unstamp() { sed -e '/<section aria-labelledby="h-ingest"/,/<\/section>/d' -e 's|/v1/invoices/[0-9]*|/v1/invoices/N|g' -e 's|>[0-9]*</a></th>|>N</a></th>|g' -e 's/[0-9]\{4\}-[0-9][0-9]-[0-9][0-9]T[0-9:]*Z//g' -e 's/[0-9]\{4\}-[0-9][0-9]-[0-9][0-9] [0-9][0-9]:[0-9][0-9]\(:[0-9][0-9]\)\{0,1\} UTC//g'; }
for q in "overview?period=$period" "accounts?period=$period" "accounts/acct-3?period=$period" \
    "usage?from=$day&to=$(date -u -d "$day + 1 day" +%Y-%m-%d)&granularity=hour" "invoices?period=$period"; do
    code=$(curl -s -o p-sharded.html -w '%{http_code}' -H "Authorization: Bearer $FIN" "$url_a/$q")
    curl -s -H "Authorization: Bearer $FIN1" "$url_one/$q" >p-one.html
    checks=$((checks + 1))
    [ "$code" = 200 ] && cmp -s <(unstamp <p-sharded.html | sort) <(unstamp <p-one.html | sort) ||
        fail "the page /$q over shards ($code) differs: $(diff <(unstamp <p-sharded.html | sort) <(unstamp <p-one.html | sort) | head -n 6)"
done
# ---- a shard down (kept apart from the checks above) ----
# One account's reads on a stopped shard answer 503 with Retry-After,
# naming the shard; not 500, since the request may succeed later. The
# other shard's accounts still read; once it is back, so does it.
(cd "$tmp/s2" && "$METERCTL" db stop >>db.log 2>&1) || fail "stop shard two"
on1=$(psql "$cat_db" -XAtq -c "SELECT account_id FROM accounts WHERE meter_bucket(account_pk) < 32 ORDER BY 1 LIMIT 1")
on2=$(psql "$cat_db" -XAtq -c "SELECT account_id FROM accounts WHERE meter_bucket(account_pk) >= 32 ORDER BY 1 LIMIT 1")
away() { # WHAT NAMED CURL-ARGS...: 503, Retry-After, shard two NAMED
    local what=$1 named=$2 code
    shift 2
    code=$(curl -s -D away.h -o away.json -w '%{http_code}' -H "Authorization: Bearer $FIN" "$@")
    checks=$((checks + 1))
    [ "$code" = 503 ] && grep -qi '^Retry-After: [0-9]' away.h &&
        grep -q "$named cannot be reached" away.json ||
        fail "$what, shard two down: HTTP $code, want 503 with Retry-After naming $named: $(head -c 300 away.json)"
}
q="from=$from&to=$((from + 7200))&granularity=hour"
away "GET /v1/usage of $on2" "shard 2 'two'" "$url_a/v1/usage?account=$on2&$q"
printf '{"period": "%s", "account": "%s"}' "$period" "$on2" >run-away.json
away "POST /v1/invoices/run of $on2" "shard 2" -H "Content-Type: application/json" \
    --data-binary @run-away.json "$url_a/v1/invoices/run"
checks=$((checks + 1))
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $FIN" "$url_a/v1/usage?account=$on1&$q")
[ "$code" = 200 ] || fail "GET /v1/usage of $on1 on shard one, shard two down: HTTP $code"
(cd "$tmp/s2" && "$METERCTL" db start >>db.log 2>&1) || fail "start shard two again"
checks=$((checks + 1))
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $FIN" "$url_a/v1/usage?account=$on2&$q")
[ "$code" = 200 ] || fail "GET /v1/usage of $on2, shard two back: HTTP $code"
# ---- shard add: a database listed already under another conninfo ----
# Told apart by what PostgreSQL says of it (system identifier, oid),
# not by the text: the catalog's own database, and shard one's, each by
# a conninfo not listed, are refused naming the shard they are.
expect_status 1 "$METERCTL" --db "$cat_wdb" shard add five "$cat_wdb application_name=five"
contains "$err" "listed already as shard 'local' (the catalog's own database)" "the catalog's database by another conninfo"
s1_dir=$(echo "$s1_wdb" | sed -n "s/.*host='\([^']*\)'.*/\1/p")
s1_port=$(psql "$s1_wdb" -XAtq -c "SHOW port")
s1_name=$(psql "$s1_wdb" -XAtq -c "SELECT current_database()")
expect_status 1 "$METERCTL" --db "$cat_wdb" shard add six "postgresql:///$s1_name?host=$s1_dir&port=$s1_port&user=meter_worker"
contains "$err" "listed already as shard 'one' ('$s1_wdb')" "shard one's database by a URI"
expect_status 0 "$METERCTL" --db "$cat_wdb" shard list
checks=$((checks + 1))
[ "$(echo "$out" | wc -l)" = 4 ] || fail "shard list after the refusals: $out"
finish
