#!/bin/bash
# A bucket of accounts moved to another shard while a fleet is pushed
# (issue 24, docs/scale.md "Moving a bucket"): a catalog and two shards,
# each an embedded PostgreSQL cluster of its own (unix sockets), and two
# meterd replicas, each sent every batch. `meterctl shard move` takes
# the bucket of acct-0 from shard one to shard two during a push, then
# back during a second push of new sandboxes. Then: every generated second stored once, on the
# shard that holds its bucket, sample for sample and in the hourly
# rollups; every batch acknowledged, none a conflict; nothing of the
# moves left (marks, publications, slots, subscriptions, the old copy);
# the moved accounts' new sandboxes stored with keys of their own; and
# the errors of shard move (its --abort: test_shards calls a move off).
. "$(dirname "$0")/lib.sh"
for tool in curl psql; do
    command -v $tool >/dev/null || { fail "$tool not found"; finish; exit; }
done
shard_clusters
for d in "$cat_db" "$s1_db" "$s2_db"; do
    "$METERCTL" --db "$d" migrate >/dev/null || fail "migrate $d"
done
expect_status 0 "$METERCTL" --db "$cat_wdb" shard add one "$s1_wdb"
expect_status 0 "$METERCTL" --db "$cat_wdb" shard add two "$s2_wdb"
shard_split

HOST=$("$METERCTL" --db "$cat_wdb" keys create --role host --name h 2>/dev/null)
for r in a b; do
    start_meterd $r "$cat_wdb" --merge-every 1 --pack-after 1 --log-level warn || { finish; exit 1; }
done

# Hours that ended: meterd merges and packs them as they come, so the
# moves meet merges and packs under way.
from=$(($(date -u +%s) / 3600 * 3600 - 4 * 3600))
# push NAME SEED START: a fleet of 8 accounts for an hour, each batch
# sent to both replicas at once (the one whose map is stale after a
# move is refused by the shard and reads it again), slowed so that a
# move lands mid-push; what it sends is in NAME.ndjson.
push() {
    local fleet="--sandboxes 12 --accounts 8 --seconds 3600 --start $3 --seed $2" r
    "$METERCTL" gen $fleet >"$1.ndjson" || fail "$1: gen"
    pushing=()
    for r in a b; do
        eval "url=\$url_$r"
        "$METERCTL" gen $fleet --batch-seconds 20 --rate 2500 --retry-for 60 \
            --push "$url" --token "$HOST" 2>"$1.$r.push" &
        pushing+=($!)
    done
}
said() { sed -n "s/.* \([0-9]*\) $2[,;].*/\1/p" "$1"; }
pushed() { # NAME: every batch acknowledged by both, each sample accepted once
    local n r p
    for p in "${pushing[@]}"; do
        wait "$p" || fail "$1: a push failed: $(tail -n 3 "$1".*.push)"
    done
    n=$(wc -l <"$1.ndjson")
    checks=$((checks + 1))
    for r in a b; do
        [ "$(sed -n 's/.*pushed \([0-9]*\) samples.*/\1/p' "$1.$r.push")" = "$n" ] &&
            [ "$(said "$1.$r.push" conflicts)" = 0 ] ||
            fail "$1: $n generated, replica $r: $(tail -n 1 "$1.$r.push")"
    done
    # Accepted once in all, when every reply came back. A batch sent
    # again after its reply was lost (cut off, or a 503 once its parts
    # were decided: docs/scale.md) was stored by the copy that got no
    # reply, and its copy counts as duplicates: then fewer are said
    # accepted, never more. Nothing lost or doubled is checked on the
    # stored rows (check_stored).
    local acc=$(($(said "$1.a.push" accepted) + $(said "$1.b.push" accepted)))
    local dup=$(($(said "$1.a.push" duplicates) + $(said "$1.b.push" duplicates)))
    local again=$(($(sed -n 's/.*retried \([0-9]*\) cut off, [0-9]* unreachable, \([0-9]*\) busy.*/\1 + \2/p' "$1.a.push" "$1.b.push" | paste -sd+)))
    checks=$((checks + 1))
    if [ "$acc" != "$n" ] || [ "$dup" != "$n" ]; then
        [ "$again" -gt 0 ] && [ "$acc" -lt "$n" ] && [ $((acc + dup)) = $((2 * n)) ] ||
            fail "$1: $n generated; accepted $(said "$1.a.push" accepted) + $(said "$1.b.push" accepted), duplicates $(said "$1.a.push" duplicates) + $(said "$1.b.push" duplicates), $again batches sent again after a lost reply"
        echo "$1: $again batches sent again after a lost reply: $acc said accepted of $n"
    fi
}
# moved NAME BUCKET SHARD: shard move, which must finish and say how
# long the bucket's batches waited.
moved() {
    "$METERCTL" --db "$cat_db" shard move "$2" "$3" >"$1.move" 2>&1
    checks=$((checks + 1))
    grep -q "^bucket $2 is on shard '$3': its batches waited [0-9]* ms at most" "$1.move" ||
        fail "$1: shard move $2 $3: $(cat "$1.move")"
    sed 's/^/shard_move: /' "$1.move"
}
on() { psql "$1" -XAtq -v ON_ERROR_STOP=1 -c "$2"; }

push first 21 $from
# acct-0's bucket, once its first batch made it
for i in $(seq 1 100); do
    bucket=$(on "$cat_db" "SELECT meter_bucket(account_pk) FROM accounts WHERE account_id = 'acct-0'")
    [ -n "$bucket" ] && break
    sleep 0.1
done
[ -n "$bucket" ] || { fail "acct-0 never came"; finish; exit 1; }
if [ "$bucket" -lt 32 ]; then src=one dst=two src_db=$s1_db dst_db=$s2_db
else src=two dst=one src_db=$s2_db dst_db=$s1_db; fi
sleep 2
moved first "$bucket" $dst
checks=$((checks + 1))
kill -0 "${pushing[0]}" 2>/dev/null || fail "first: the push ended before the move: slow it down"
pushed first

# Back, during a push of new sandboxes (another seed): their keys on the
# shard that had the bucket before must not meet the copied ones.
push second 22 $((from + 3600))
sleep 2
moved second "$bucket" $src
pushed second

# Every second once, on the shard that holds its bucket.
for s in "$s1_wdb" "$s2_wdb"; do
    "$METERCTL" --db "$s" export --from 0 --to 9999999999 >>stored.ndjson 2>x.err ||
        fail "export on a shard: $(cat x.err)"
done
LC_ALL=C sort first.ndjson second.ndjson >want
LC_ALL=C sort stored.ndjson >got
lost=$(LC_ALL=C comm -23 want got | wc -l)
doubled=$(LC_ALL=C comm -13 want got | wc -l)
checks=$((checks + 1))
[ "$lost" = 0 ] && [ "$doubled" = 0 ] && [ "$(wc -l <want)" -gt 50000 ] ||
    fail "$(wc -l <want) samples generated, $(wc -l <got) stored: $lost lost, $doubled doubled or altered"
echo "shard_move: $(wc -l <want) samples pushed during two moves; $lost lost, $doubled doubled"
# The rollups too: samples and egress by account, over both shards.
rollups() {
    for s in "$s1_db" "$s2_db"; do
        on "$s" "SELECT a.account_id, sum(h.samples), sum(h.egress_bytes) FROM usage_hourly_totals h JOIN accounts a USING (account_pk) WHERE meter_bucket(h.account_pk) IN (SELECT bucket FROM bucket_holds) GROUP BY 1"
    done | LC_ALL=C sort
}
checks=$((checks + 1))
[ "$(rollups)" = "$(jq -rs 'group_by(.account_id)[] | "\(.[0].account_id)|\(length)|\(map(.egress_bytes) | add)"' want | LC_ALL=C sort)" ] ||
    fail "the hourly rollups are not the samples': $(rollups | head -n 3)"

# The bucket is where the map says, and nothing of the moves is left.
checks=$((checks + 1))
[ "$(on "$cat_db" "SELECT s.name FROM shard_buckets b JOIN shards s USING (shard_id) WHERE bucket = $bucket")" = $src ] &&
    [ "$(on "$src_db" "SELECT count(*) FROM bucket_holds WHERE bucket = $bucket AND NOT moving")" = 1 ] &&
    [ "$(on "$dst_db" "SELECT count(*) FROM bucket_holds WHERE bucket = $bucket")" = 0 ] ||
    fail "bucket $bucket is not back on shard $src alone"
for d in "$s1_db" "$s2_db"; do
    checks=$((checks + 1))
    [ "$(on "$d" "SELECT (SELECT count(*) FROM bucket_moves) + (SELECT count(*) FROM pg_publication) + (SELECT count(*) FROM pg_subscription) + (SELECT count(*) FROM pg_replication_slots)")" = 0 ] ||
        fail "a move left marks, publications, subscriptions or slots on $d"
done
checks=$((checks + 1))
[ "$(on "$dst_db" "SELECT (SELECT count(*) FROM sandboxes WHERE meter_bucket(account_pk) = $bucket) + (SELECT count(*) FROM usage_hourly WHERE meter_bucket(account_pk) = $bucket) + (SELECT count(*) FROM usage_period_merged WHERE meter_bucket(account_pk) = $bucket) + (SELECT count(*) FROM accounts WHERE meter_bucket(account_pk) = $bucket)")" = 0 ] ||
    fail "shard $dst kept rows of bucket $bucket"
checks=$((checks + 1))
[ "$(on "$src_db" "SELECT count(*) FROM sandboxes WHERE meter_bucket(account_pk) = $bucket")" = \
  "$(cat first.ndjson second.ndjson | jq -r "select(.account_id == \"acct-0\") | .sandbox_id" | sort -u | wc -l)" ] ||
    fail "acct-0's sandboxes on shard $src are not those pushed"
# Merging and packing went on once the moves ended.
for i in $(seq 1 100); do
    [ "$(on "$src_db" "SELECT count(*) FROM usage_hourly WHERE NOT merged")" = 0 ] && break
    sleep 0.2
done
checks=$((checks + 1))
[ "$(on "$src_db" "SELECT count(*) FROM usage_hourly WHERE NOT merged")" = 0 ] ||
    fail "shard $src's rollups are not merged after the moves"
# The periods' sums moved with the hours', and the catalog reads them
# over both shards as the alerts do (fleet_period_totals, 0024).
period_sums_agree "$s1_db" "shard one after the moves"
period_sums_agree "$s2_db" "shard two after the moves"
checks=$((checks + 1))
got=$(on "$cat_db" "SELECT a.account_id, sum(h.samples), sum(h.egress_bytes) FROM fleet_period_totals h JOIN accounts a USING (account_pk) GROUP BY 1" | LC_ALL=C sort)
[ "$got" = "$(rollups)" ] && [ -n "$got" ] ||
    fail "the catalog's sums of the periods are not the rollups': $(echo "$got" | head -n 3)"

# The errors.
expect_status 2 "$METERCTL" --db "$cat_db" shard move 64 one
contains "$err" "BUCKET '64' is not a number from 0 to 63" "a bucket out of range"
expect_status 1 "$METERCTL" --db "$cat_db" shard move 3 nine
contains "$err" "no shard is named 'nine'" "an unknown shard"
expect_status 0 "$METERCTL" --db "$cat_db" shard move "$bucket" $src
contains "$out" "bucket $bucket is on shard '$src' already" "a bucket where it is"
expect_status 1 "$METERCTL" --db "$cat_db" shard move --abort "$bucket" $src
contains "$err" "bucket $bucket is on shard '$src' already: the move is done" "a move done is not called off"
finish
