# lib.sh - helpers for the shell tests: sourced, not run.
# $METERCTL is the meterctl under test (set by ctest).
set -u

fails=0
checks=0

fail() {
    echo "FAIL: $*" >&2
    fails=$((fails + 1))
}

# expect_status WANT CMD...: runs CMD, output in $out and $err.
expect_status() {
    want=$1
    shift
    checks=$((checks + 1))
    out=$("$@" 2>/tmp/meter-test-err.$$) && got=0 || got=$?
    err=$(cat /tmp/meter-test-err.$$)
    rm -f /tmp/meter-test-err.$$
    [ "$got" = "$want" ] || fail "'$*' exited $got, want $want; stderr: $err"
}

# contains TEXT NEEDLE WHAT
contains() {
    checks=$((checks + 1))
    case "$1" in
    *"$2"*) ;;
    *) fail "$3: '$2' not in: $1" ;;
    esac
}

# Needs a database: under CI=true a missing one is a failure, else skip.
need_database() {
    if ! psql "$1" -qAtc 'SELECT 1' >/dev/null 2>&1; then
        echo "test database unreachable at $1" >&2
        if [ "${CI:-}" = true ]; then
            echo "failing: CI=true requires a database" >&2
            exit 1
        fi
        exit 77
    fi
}

# fresh_db: creates an empty database in the test cluster; sets $db to
# its conninfo as the owner (migrations, SQL by hand) and $wdb as the
# worker role meter_worker (meterd and the daily meterctl commands, as
# in production), and drops it when the script exits.
fresh_db() {
    base=${METER_TEST_DATABASE_URL:-$("$METERCTL" db url 2>/dev/null)}
    if [ -n "${METER_TEST_DATABASE_URL:-}" ]; then
        wbase=${METER_TEST_WORKER_DATABASE_URL:-"$base user=meter_worker"}
    else
        wbase=$("$METERCTL" db url --worker 2>/dev/null)
    fi
    need_database "$base dbname=postgres"
    dbname="test_sh_$$_$(date +%s)"
    psql "$base dbname=postgres" -qc "CREATE DATABASE $dbname" >/dev/null
    db="$base dbname=$dbname"
    wdb="$wbase dbname=$dbname"
    trap 'psql "$base dbname=postgres" -qc "DROP DATABASE IF EXISTS $dbname WITH (FORCE)" >/dev/null 2>&1' EXIT
}

# with_meterd: a fresh database (fresh_db), a temporary directory $tmp as
# the working directory, and the meterd processes of start_meterd
# stopped at exit, after the script's extra_cleanup if it defines one.
with_meterd() {
    command -v curl >/dev/null || { fail "curl not found"; finish; exit; }
    fresh_db
    tmp=$(mktemp -d)
    pids=()
    trap meterd_cleanup EXIT
    cd "$tmp" || exit 1
}
meterd_cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    if command -v extra_cleanup >/dev/null; then extra_cleanup; fi
    cd / && rm -rf "$tmp"
    psql "$base dbname=postgres" -qc "DROP DATABASE IF EXISTS $dbname WITH (FORCE)" >/dev/null 2>&1
}

# start_meterd NAME CONNINFO [ARGS]: starts $METERD on a free port,
# its log in $tmp/NAME.log; sets url_NAME and pid_NAME and adds the pid
# to the array pids (the caller kills them). With $tls_ca set (the CA
# file that signed meterd's certificate), it is an https:// URL.
start_meterd() {
    local name=$1 conn=$2 port pid scheme=http ca=()
    shift 2
    if [ -n "${tls_ca:-}" ]; then
        scheme=https
        ca=(--cacert "$tls_ca")
    fi
    for attempt in 1 2 3 4 5; do
        port=$((20000 + RANDOM % 30000))
        "$METERD" --listen 127.0.0.1:$port --db "$conn" --threads 3 "$@" \
            >"$tmp/$name.log" 2>&1 &
        pid=$!
        for i in $(seq 1 50); do
            curl -sf "${ca[@]}" "$scheme://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
            kill -0 $pid 2>/dev/null || break
            sleep 0.1
        done
        if curl -sf "${ca[@]}" "$scheme://127.0.0.1:$port/healthz" >/dev/null 2>&1; then
            pids+=($pid)
            eval "url_$name=$scheme://127.0.0.1:$port pid_$name=$pid"
            return 0
        fi
        kill $pid 2>/dev/null
        wait $pid 2>/dev/null
    done
    fail "meterd $name did not start: $(cat "$tmp/$name.log")"
    return 1
}

finish() {
    echo "$((checks - fails)) passed, $fails failed"
    [ "$fails" -eq 0 ]
}

# check_stored NAME FROM TO: what is stored of [FROM, TO) against
# NAME.ndjson (meterctl gen's samples), sample for sample (meterctl
# export on $wdb reads blocks and packs) and in total per account, every
# sum of the hourly rollups on $db against the generated samples' (summed
# exactly by PostgreSQL); sets generated, stored, lost, doubled, and
# prints each account's totals, lines "SCRIPT: NAME ACCOUNT: ...". Each
# step bounded, in case of a database gone wrong.
check_stored() {
    local name=$1 from=$2 to=$3 me
    me=$(basename "$0" .sh)
    timeout 120 "$METERCTL" --db "$wdb" export --from $from --to $to >"$name.stored" 2>"$name.export.err" ||
        fail "$name: export: $(cat "$name.export.err")"
    LC_ALL=C sort "$name.ndjson" >"$name.want"
    LC_ALL=C sort "$name.stored" >"$name.got"
    generated=$(wc -l <"$name.want")
    stored=$(wc -l <"$name.got")
    lost=$(LC_ALL=C comm -23 "$name.want" "$name.got" | wc -l)
    doubled=$(LC_ALL=C comm -13 "$name.want" "$name.got" | wc -l)
    checks=$((checks + 1))
    [ "$generated" -gt 0 ] || fail "$name: nothing generated"
    [ "$lost" = 0 ] && [ "$doubled" = 0 ] && [ "$stored" = "$generated" ] ||
        fail "$name: $generated samples generated, $stored stored: $lost lost, $doubled doubled or altered"
    # (the temporary table's commit waits for no standby, where there
    # are some (ha.sh): it is the check's, not the data's)
    timeout 120 psql "$db" -qAtX -v ON_ERROR_STOP=1 >"$name.totals" 2>&1 <<SQL || fail "$name: totals: $(cat "$name.totals")"
SET synchronous_commit = local;
CREATE TEMP TABLE gen (j jsonb);
\copy gen FROM '$name.want'
CREATE TEMP VIEW want AS SELECT j->>'account_id' AS account_id,
    count(*) AS samples, count(*) FILTER (WHERE j->>'state' = 'running') AS running_s,
    coalesce(sum((j->>'vcpu')::numeric), 0) AS vcpu_s,
    coalesce(sum((j->>'cpu_used')::numeric), 0) AS cpu_used_s,
    coalesce(sum((j->>'mem_bytes')::numeric), 0) AS mem_byte_s,
    coalesce(sum((j->>'mem_used_bytes')::numeric), 0) AS mem_used_byte_s,
    coalesce(sum((j->>'disk_bytes')::numeric), 0) AS disk_byte_s,
    coalesce(sum((j->>'egress_bytes')::numeric), 0) AS egress_bytes
  FROM gen GROUP BY 1;
CREATE TEMP VIEW got AS SELECT a.account_id, sum(h.samples) AS samples,
    sum(h.running_s) AS running_s, sum(h.vcpu_s) AS vcpu_s,
    sum(h.cpu_used_s) AS cpu_used_s, sum(h.mem_byte_s) AS mem_byte_s,
    sum(h.mem_used_byte_s) AS mem_used_byte_s,
    sum(h.disk_byte_s) AS disk_byte_s, sum(h.egress_bytes) AS egress_bytes
  FROM usage_hourly h JOIN accounts a USING (account_pk)
  WHERE h.hour >= $from / 3600 AND h.hour < ($to + 3599) / 3600 GROUP BY 1;
SELECT 'differ ' || coalesce(w.account_id, g.account_id)
  FROM want w FULL JOIN got g USING (account_id)
  WHERE (w.samples, w.running_s, w.vcpu_s, w.cpu_used_s, w.mem_byte_s,
         w.mem_used_byte_s, w.disk_byte_s, w.egress_bytes)
        IS DISTINCT FROM
        (g.samples, g.running_s, g.vcpu_s, g.cpu_used_s, g.mem_byte_s,
         g.mem_used_byte_s, g.disk_byte_s, g.egress_bytes);
SELECT format('$me: %s %s: %s s (%s running), %s vCPU-s, %s used vCPU-s, %s memory byte-s, %s disk byte-s, %s egress bytes',
              '$name', account_id, samples, running_s, vcpu_s, cpu_used_s,
              mem_byte_s, disk_byte_s, egress_bytes)
  FROM want ORDER BY account_id;
SQL
    checks=$((checks + 1))
    grep '^differ' "$name.totals" && fail "$name: the rollups' totals differ from the generated ones"
    period_sums_agree "$db" "$name"
    grep "^$me:" "$name.totals"
}

# period_sums_agree DB WHAT: every sum of usage_period_merged on DB is
# that of its account's rows of usage_hourly_merged in the period, and
# no account-period is in one and not the other (migration 0024).
period_sums_agree() {
    local got
    checks=$((checks + 1))
    got=$(timeout 120 psql "$1" -XAtq -v ON_ERROR_STOP=1 -c "
        SELECT count(*) || ' of ' || (SELECT count(*) FROM usage_period_merged)
          FROM (SELECT account_pk, meter_period_of(hour) AS period,
                       sum(samples) AS s, sum(running_s) AS r, sum(vcpu_s) AS v,
                       sum(cpu_used_s) AS c, sum(mem_byte_s) AS m,
                       sum(mem_used_byte_s) AS mu, sum(disk_byte_s) AS d,
                       sum(egress_bytes) AS x
                  FROM usage_hourly_merged GROUP BY 1, 2) h
          FULL JOIN usage_period_merged p USING (account_pk, period)
         WHERE (h.s, h.r, h.v, h.c, h.m, h.mu, h.d, h.x) IS DISTINCT FROM
               (p.samples, p.running_s, p.vcpu_s, p.cpu_used_s, p.mem_byte_s,
                p.mem_used_byte_s, p.disk_byte_s, p.egress_bytes)" 2>&1)
    case $got in
    "0 of "*) ;;
    *) fail "$2: account-periods whose sums differ from their hours': $got" ;;
    esac
}

# ---- a private PostgreSQL cluster, for tests that stop or crash it ----

# private_cluster: the embedded cluster of the current directory (the
# test's own, whatever the environment says) started; $db as the owner
# (migrate, SQL by hand), $wdb as meter_worker (meterd and meterctl, as
# in production). Skips (77), or fails under CI=true, if it cannot start.
private_cluster() {
    unset METER_DATABASE_URL
    if ! "$METERCTL" db start >db.log 2>&1; then
        echo "cannot start a private PostgreSQL cluster: $(cat db.log)" >&2
        [ "${CI:-}" = true ] && { echo "failing: CI=true requires a database" >&2; exit 1; }
        exit 77
    fi
    db=$("$METERCTL" db url 2>/dev/null)
    wdb=$("$METERCTL" db url --worker 2>/dev/null)
    need_database "$db"
}

# The database stopped under meterd: `db stop` is pg_ctl's fast
# shutdown (sessions terminated, transactions rolled back).
db_stop() { "$METERCTL" db stop >>db.log 2>&1 || fail "db stop: $(tail -n 3 db.log)"; }
db_start() { "$METERCTL" db start >>db.log 2>&1 || fail "db start: $(tail -n 3 db.log)"; }
# db_crash: PostgreSQL stopped as by a crash: SIGQUIT to the postmaster
# is pg_ctl's immediate shutdown (no checkpoint; the next start replays
# the WAL).
db_crash() {
    local data pm i
    data=$("$METERCTL" db status 2>/dev/null | sed -n 's/^data: //p')
    pm=$(head -n 1 "$data/postmaster.pid" 2>/dev/null)
    [ -n "$pm" ] && kill -QUIT "$pm" || { fail "no postmaster to crash in '$data'"; return; }
    # Its pid file goes once its children are gone (the process may stay
    # a zombie a while, until whoever adopted it reaps it).
    for i in $(seq 1 500); do
        [ -e "$data/postmaster.pid" ] || return 0
        sleep 0.01
    done
    fail "the postmaster does not end after SIGQUIT"
}

# shard_clusters: a catalog and two shards for the shard tests, each an
# embedded cluster in its own directory under $tmp (cat, s1, s2), their
# owner's conninfo in $cat_db, $s1_db, $s2_db and the worker's in
# $cat_wdb...; the current directory $tmp from then on. Processes put
# in pids are killed, and the clusters destroyed, at exit. Skips (77)
# if a cluster cannot start, but under CI.
shard_clusters() {
    top=$(pwd)
    tmp=$(mktemp -d)
    pids=()
    trap shard_clusters_cleanup EXIT
    unset METER_DATABASE_URL METER_OWNER_DATABASE_URL
    export PGOPTIONS='-c client_min_messages=warning'
    local c
    for c in cat s1 s2; do
        mkdir -p "$tmp/$c"
        (cd "$tmp/$c" && "$METERCTL" db start >db.log 2>&1) ||
            { echo "cannot start cluster $c: $(tail -n 3 "$tmp/$c/db.log")" >&2
              [ "${CI:-}" = true ] && exit 1; exit 77; }
        eval "${c}_db=\"\$(cd "$tmp/$c" && "$METERCTL" db url)\""
        eval "${c}_wdb=\"\$(cd "$tmp/$c" && "$METERCTL" db url --worker)\""
    done
    cd "$tmp" || exit 1
}
shard_clusters_cleanup() {
    local p c
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    for c in cat s1 s2; do (cd "$tmp/$c" 2>/dev/null && "$METERCTL" db destroy --yes >/dev/null 2>&1); done
    cd "$top" && rm -rf "$tmp"
}
# shard_split: the map gives buckets 0-31 to shard 1, 32-63 to shard 2,
# the catalog none; each shard holds its own.
shard_split() {
    psql "$cat_db" -XAtq -c "UPDATE shard_buckets SET shard_id = CASE WHEN bucket < 32 THEN 1 ELSE 2 END, epoch = epoch + 1" \
        -c "DELETE FROM bucket_holds" || fail "the map"
    psql "$s1_db" -XAtq -c "INSERT INTO bucket_holds SELECT generate_series(0, 31)" || fail "shard 1's buckets"
    psql "$s2_db" -XAtq -c "INSERT INTO bucket_holds SELECT generate_series(32, 63)" || fail "shard 2's buckets"
}
