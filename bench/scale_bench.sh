#!/bin/bash
# scale_bench.sh - what routing over shards costs (issue 24,
# docs/scale.md): one meterd ingesting a generated fleet into one server
# (the baseline: the catalog holds every bucket), into one shard (the
# catalog holds none, one database holds all 64) and into two shards (32
# buckets each, every batch prepared on both and committed by two-phase
# commit); then the invoice run of the same usage on each. All the
# databases are one private embedded PostgreSQL on this machine, so two
# shards cannot be faster than one: the figures are the routing's
# overhead, runs alternated, each layout's median with its min and max,
# and the WAL the cluster wrote a sample during the push (every
# database's, two-phase commit's included); then how long moving a
# bucket to the other shard takes (meterctl shard move).
#
#   bench/scale_bench.sh BUILD_DIR [SANDBOXES [SECONDS [RUNS]]]
#   bench/scale_bench.sh build-bench 2000 600 3
set -u
build=$(cd "${1:?usage: scale_bench.sh BUILD_DIR [SANDBOXES [SECONDS [RUNS]]]}" && pwd)
sandboxes=${2:-2000}
seconds=${3:-600}
runs=${4:-3}
here=$(cd "$(dirname "$0")" && pwd)
export PGOPTIONS='-c client_min_messages=warning'
. "$here/private_meterd.sh"
ctl() { "$meterctl" "$@"; }
sql() { psql "$db" -XAtq -v ON_ERROR_STOP=1 "$@"; }
period=$(date -u +%Y-%m)
start=$(($(date -u +%s) - seconds - 120))
book=$here/../pricing/books/fly-machines.json

# layout NAME: fresh databases for NAME (single, one or two shards); sets
# cat to the catalog's conninfo.
layout() {
    local d
    for d in cat s1 s2; do
        sql -c "DROP DATABASE IF EXISTS $d WITH (FORCE)" -c "CREATE DATABASE $d"
    done
    cat="$db dbname=cat"
    for d in cat s1 s2; do ctl --db "$db dbname=$d" migrate >/dev/null || exit 1; done
    case $1 in
    single) ;;
    one | two)
        ctl --db "$cat" shard add one "$db dbname=s1" >/dev/null || exit 1
        psql "$cat" -XAtq -c "DELETE FROM bucket_holds"
        if [ "$1" = one ]; then
            psql "$cat" -XAtq -c "UPDATE shard_buckets SET shard_id = 1, epoch = epoch + 1"
            psql "$db dbname=s1" -XAtq -c "INSERT INTO bucket_holds SELECT generate_series(0, 63)"
        else
            ctl --db "$cat" shard add two "$db dbname=s2" >/dev/null || exit 1
            psql "$cat" -XAtq -c "UPDATE shard_buckets SET shard_id = CASE WHEN bucket < 32 THEN 1 ELSE 2 END, epoch = epoch + 1"
            psql "$db dbname=s1" -XAtq -c "INSERT INTO bucket_holds SELECT generate_series(0, 31)"
            psql "$db dbname=s2" -XAtq -c "INSERT INTO bucket_holds SELECT generate_series(32, 63)"
        fi
        ;;
    esac
}

# one_run NAME: ingests the fleet through a new meterd on NAME's layout,
# then runs its invoices; appends "NAME samples/s run-ms" to results.
one_run() {
    layout "$1"
    ctl --db "$cat" books add "$book" >/dev/null || exit 1
    token=$(ctl --db "$cat" keys create --role host --name bench 2>/dev/null)
    db_saved=$db
    db=$cat
    private_meterd --merge-every 0
    db=$db_saved
    # WAL of the whole cluster during the push: every database's.
    lsn0=$(sql -c "SELECT pg_current_wal_lsn()")
    ctl gen --sandboxes "$sandboxes" --accounts $((sandboxes / 10)) \
        --seconds "$seconds" --start "$start" --seed 7 \
        --push "http://127.0.0.1:$port" --token "$token" --connections 4 \
        2>push.out || { echo "push failed: $(cat push.out)" >&2; exit 1; }
    kill "$mpid" && wait "$mpid" 2>/dev/null
    mpid=
    rate=$(sed -n 's/.*(\([0-9]*\) samples\/s.*/\1/p' push.out)
    accepted=$(sed -n 's/.*: \([0-9]*\) accepted.*/\1/p' push.out)
    pushed=$(sed -n 's/.*pushed \([0-9]*\) samples.*/\1/p' push.out)
    [ -n "$accepted" ] && [ "$accepted" = "$pushed" ] ||
        { echo "$1: $accepted of $pushed samples accepted: $(cat push.out)" >&2; exit 1; }
    samples=$pushed
    wal=$(sql -c "SELECT round(pg_wal_lsn_diff(pg_current_wal_lsn(), '$lsn0') / $pushed, 1)")
    for a in $(psql "$cat" -XAtq -c "SELECT account_id FROM accounts"); do
        ctl --db "$cat" accounts add "$a" --book fly-machines --from "$period-01" >/dev/null || exit 1
    done
    t0=$(date +%s%N)
    ctl --db "$cat" invoice run --period "$period" --jobs 2 >run.out 2>&1 ||
        { echo "$1: invoice run: $(tail -n 3 run.out)" >&2; exit 1; }
    ms=$((($(date +%s%N) - t0) / 1000000))
    echo "$1 $rate $ms $wal" >>results
}

: >results
for r in $(seq 1 "$runs"); do
    for l in single one two; do one_run $l; done
done
# median, min and max of column C of layout L
stat() {
    awk -v l="$1" -v c="$2" '$1 == l { print $c }' results | sort -n |
        awk '{ v[NR] = $1 } END { printf "%s (%s-%s)", v[int((NR + 1) / 2)], v[1], v[NR] }'
}
med() { stat "$1" "$2" | cut -d' ' -f1; }
base_rate=$(med single 2)
base_ms=$(med single 3)
echo "scale_bench: $sandboxes sandboxes over $seconds s ($samples samples, $((sandboxes / 10)) accounts), $runs runs each, alternating; median (min-max)"
for l in single one two; do
    echo "scale_bench: $l: ingestion $(stat $l 2) samples/s" \
        "($(awk -v a="$(med $l 2)" -v b="$base_rate" 'BEGIN { printf "%.2f", a / b }') of one server);" \
        "invoice run $(stat $l 3) ms" \
        "($(awk -v a="$(med $l 3)" -v b="$base_ms" 'BEGIN { printf "%.2f", a / b }') of one server's time);" \
        "WAL $(stat $l 4) bytes a sample"
done
# Moving buckets (meterctl shard move) with the last two-shard run's
# usage in place: 4 of shard one's 32 buckets to shard two, one after
# another, with no push meanwhile: how long a bucket's copy takes, and
# how long its batches would have waited (fence to switch).
rows() { psql "$db dbname=s1" -XAtq -c "SELECT (SELECT count(*) FROM usage_blocks) + (SELECT count(*) FROM usage_hourly) + (SELECT count(*) FROM sandboxes)"; }
before=$(rows)
for b in 0 1 2 3; do
    t0=$(date +%s%N)
    ctl --db "$cat" shard move $b two >move.out 2>&1 ||
        { echo "shard move $b: $(cat move.out)" >&2; exit 1; }
    echo $((($(date +%s%N) - t0) / 1000000)) >>took
    sed -n 's/.*waited \([0-9]*\) ms.*/\1/p' move.out >>waits
    [ $b = 0 ] && sed 's/^/scale_bench: shard move: /' move.out
done
range() { sort -n "$1" | awk '{ v[NR] = $1 } END { printf "%s (%s-%s)", v[int((NR + 1) / 2)], v[1], v[NR] }'; }
echo "scale_bench: shard move: 4 buckets of $(((before - $(rows)) / 4)) rows each on average (blocks, rollups, sandboxes), one after another:" \
    "$(range took) ms a bucket, all steps; its batches would have waited $(range waits) ms"
