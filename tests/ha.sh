#!/bin/bash
# High availability (issue 24, item 5): a Patroni cluster of three
# PostgreSQL 15 nodes on a three-node etcd, synchronous_mode_strict, all
# on loopback in a temporary directory; meterd and meterctl connect with
# a multi-host conninfo and target_session_attrs=read-write. While a
# generated fleet is pushed:
#   1. a switchover (patronictl failover --candidate, the sync standby);
#   2. the primary's node lost: Patroni and PostgreSQL SIGKILLed, the
#      sync standby promoted once the leader key expires; then the lost
#      node started again, and it rejoins as a replica.
# After each, every sample the push was told was accepted is stored
# exactly once (meterctl export against the generated NDJSON, line for
# line, and the hourly rollups against the generated totals), the
# clients' replies add up to accepted + duplicates = generated with no
# conflict, and the batches answered 503 meanwhile were sent again.
# Then both standbys stopped: a batch waits for one, unacknowledged
# (503), and is a duplicate when sent again once they are back.
# The figures are printed on stdout, lines "ha: ..." (docs/scale.md).
# Not part of `make check`: `make check-ha` runs it. HA_KEEP=1 keeps the
# directory and leaves the cluster running, to look into a failure.
. "$(dirname "$0")/lib.sh"

PG_BINDIR=${METER_PG_BINDIR:-/usr/lib/postgresql/15/bin}
for prog in "${METERCTL:-}" "${METERD:-}"; do
    [ -x "$prog" ] || { checks=$((checks + 1)); fail "set METERCTL and METERD to the programs under test (make check-ha does)"; finish; exit 1; }
done
missing=""
for tool in patroni patronictl etcd etcdctl psql curl jq setpriv; do
    command -v $tool >/dev/null || missing="$missing $tool"
done
[ -x "$PG_BINDIR/postgres" ] || missing="$missing $PG_BINDIR/postgres"
if [ -n "$missing" ]; then
    echo "ha: missing:$missing (scripts/install-ha-deps.sh installs them)" >&2
    if [ "${CI:-}" = true ]; then
        checks=$((checks + 1))
        fail "CI=true requires the HA tools:$missing"
        finish
        exit 1
    fi
    exit 77
fi
SECONDS=0

# As root, PostgreSQL (and so Patroni, which runs it) runs as an
# unprivileged user, as the embedded cluster does (meter/cluster).
if [ "$(id -u)" = 0 ]; then
    pg_user=${METER_PG_USER:-postgres}
    id "$pg_user" >/dev/null 2>&1 || { fail "user '$pg_user' not found (METER_PG_USER)"; finish; exit 1; }
    as_pg=(setpriv --reuid="$pg_user" --regid="$(id -g "$pg_user")" --init-groups --)
else
    pg_user=$(id -un)
    as_pg=()
fi

tmp=$(mktemp -d)
chmod 0711 "$tmp" # the PostgreSQL user enters its nodes' directories
etcd_pids=()
patroni_pids=(x x x x) # by node, 1 to 3
mpid=
clients=()
cleanup() {
    local p n
    for p in "${clients[@]}" $mpid; do { kill -KILL "$p" && wait "$p"; } 2>/dev/null; done
    if [ -n "${HA_KEEP:-}" ]; then # to look into a failure
        echo "ha: kept $tmp, the cluster running (etcd ${etcd_pids[*]}, patroni ${patroni_pids[*]:1})" >&2
        return
    fi
    # Patroni stops its PostgreSQL on SIGTERM; whatever is left after a
    # while is killed, node by node, by its pids.
    for n in 1 2 3; do
        p=${patroni_pids[$n]}
        [ "$p" != x ] && kill -TERM "$p" 2>/dev/null
    done
    for n in 1 2 3; do
        p=${patroni_pids[$n]}
        [ "$p" = x ] && continue
        for i in $(seq 1 100); do
            kill -0 "$p" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$p" 2>/dev/null
    done
    for n in 1 2 3; do
        kill_postgres "$n"
    done
    for p in "${etcd_pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
    wait 2>/dev/null
    cd / && rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' TERM INT
cd "$tmp" || exit 1

# kill_postgres N: SIGKILL node N's postmaster and its children, if any
# (its pid file's first line; the children by their parent).
kill_postgres() {
    local pm kids
    pm=$(head -n 1 "$tmp/n$1/data/postmaster.pid" 2>/dev/null)
    [ -n "$pm" ] && kill -0 "$pm" 2>/dev/null || return 0
    # The pid file may be a stale one whose pid was reused since: only
    # the postmaster of this node's data directory is killed.
    tr '\0' ' ' <"/proc/$pm/cmdline" 2>/dev/null | grep -qF -- "-D $tmp/n$1/data" || return 0
    kids=$(ps -o pid= --ppid "$pm")
    kill -KILL "$pm" $kids 2>/dev/null
}

# ---- ports: 13 free loopback ports -----------------------------------------
# Below the kernel's range of ephemeral ports: there, the client side of
# any connection (Patroni's to etcd, etcd's to its peers) may hold the
# port a node is about to listen on, and that node's PostgreSQL then
# fails to start, again and again (seen).
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
pick_ports() {
    local try base i low
    read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || low=32768
    [ "$low" -gt 11000 ] || low=32768
    for try in $(seq 1 50); do
        base=$((10000 + (RANDOM ^ $$) % ((low - 10000) / 13 - 1) * 13))
        for i in $(seq 0 12); do
            port_free $((base + i)) || continue 2
        done
        echo $base
        return 0
    done
    return 1
}
base=$(pick_ports) || { fail "no 13 free ports"; finish; exit 1; }
etcd_client() { echo $((base + $1 - 1)); }     # 1..3
etcd_peer() { echo $((base + 2 + $1)); }        # 1..3
pg_port() { echo $((base + 5 + $1)); }          # 1..3
api_port() { echo $((base + 8 + $1)); }         # 1..3
meterd_port=$((base + 12))
etcd_hosts="127.0.0.1:$(etcd_client 1),127.0.0.1:$(etcd_client 2),127.0.0.1:$(etcd_client 3)"

# ---- etcd: three members on loopback ---------------------------------------
cluster_arg=""
for n in 1 2 3; do
    cluster_arg="$cluster_arg${cluster_arg:+,}e$n=http://127.0.0.1:$(etcd_peer $n)"
done
for n in 1 2 3; do
    mkdir -p "etcd$n"
    etcd --name "e$n" --data-dir "$tmp/etcd$n/data" \
        --listen-client-urls "http://127.0.0.1:$(etcd_client $n)" \
        --advertise-client-urls "http://127.0.0.1:$(etcd_client $n)" \
        --listen-peer-urls "http://127.0.0.1:$(etcd_peer $n)" \
        --initial-advertise-peer-urls "http://127.0.0.1:$(etcd_peer $n)" \
        --initial-cluster "$cluster_arg" --initial-cluster-token "meter-ha-$$" \
        --initial-cluster-state new >"etcd$n/etcd.log" 2>&1 &
    etcd_pids+=($!)
done
etcdctl_() { ETCDCTL_API=3 etcdctl --endpoints="$etcd_hosts" "$@"; }
for i in $(seq 1 100); do
    etcdctl_ endpoint health >/dev/null 2>&1 && break
    sleep 0.1
done
checks=$((checks + 1))
etcdctl_ endpoint health >etcd-health.out 2>&1 ||
    { fail "etcd is not healthy: $(cat etcd-health.out; tail -n 5 etcd1/etcd.log)"; finish; exit 1; }
echo "ha: etcd: three members healthy after $SECONDS s"

# ---- Patroni: three nodes --------------------------------------------------
rand_pw() { head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
pw_super=$(rand_pw)
pw_repl=$(rand_pw)
pw_owner=$(rand_pw)
pw_worker=$(rand_pw)

# The clients' passwords from a password file (libpq's PGPASSFILE), not
# in the conninfo, where ps would show them.
cat >pgpass <<EOF
127.0.0.1:*:*:meter:$pw_owner
127.0.0.1:*:*:meter_worker:$pw_worker
127.0.0.1:*:*:postgres:$pw_super
EOF
chmod 0600 pgpass
export PGPASSFILE=$tmp/pgpass

# The bootstrap's roles and database, as docs/reliability.md has them
# for a database of one's own: the owner (not a superuser) migrates,
# meter_worker is the daily role migration 0012 grants to. Patroni runs
# it once, on the first primary, with the superuser's conninfo and
# synchronous_commit=local (no standby to wait for yet).
cat >post_bootstrap.sh <<EOF
#!/bin/sh
set -e
psql "\$1" -v ON_ERROR_STOP=1 -q <<'SQL'
CREATE ROLE meter LOGIN PASSWORD '$pw_owner';
CREATE ROLE meter_worker LOGIN PASSWORD '$pw_worker';
CREATE DATABASE meter OWNER meter;
\\c meter
ALTER SCHEMA public OWNER TO meter;
SQL
EOF
chmod 0755 post_bootstrap.sh

# node_config N: node N's patroni.yml (docs/scale.md shows it).
node_config() {
    local n=$1 dir=$tmp/n$1
    cat <<EOF
scope: meter
namespace: /meter-ha/
name: n$n

restapi:
  listen: 127.0.0.1:$(api_port $n)
  connect_address: 127.0.0.1:$(api_port $n)

etcd3:
  hosts: $etcd_hosts

bootstrap:
  dcs:
    ttl: 10
    loop_wait: 1
    retry_timeout: 4
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    synchronous_mode_strict: true
    synchronous_node_count: 1
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        wal_level: replica
        hot_standby: "on"
        wal_log_hints: "on"
        max_wal_senders: 10
        max_replication_slots: 10
        synchronous_commit: "on"
        wal_retrieve_retry_interval: 1s
  initdb:
    - encoding: UTF8
    - locale: C.UTF-8
    - data-checksums
  post_bootstrap: $tmp/post_bootstrap.sh

postgresql:
  listen: 127.0.0.1:$(pg_port $n)
  connect_address: 127.0.0.1:$(pg_port $n)
  data_dir: $dir/data
  bin_dir: $PG_BINDIR
  pgpass: $dir/pgpass
  use_unix_socket: true
  basebackup:
    - checkpoint: fast
  authentication:
    superuser:
      username: postgres
      password: $pw_super
    replication:
      username: replicator
      password: $pw_repl
  parameters:
    unix_socket_directories: $dir/run
    shared_buffers: 64MB
    logging_collector: "on"
    log_directory: log
    log_line_prefix: "%m [%p] %u@%d "
  pg_hba:
    - local all all trust
    - host replication replicator 127.0.0.1/32 scram-sha-256
    - host all all 127.0.0.1/32 scram-sha-256
EOF
}

# start_node N: node N's Patroni, as the PostgreSQL user.
start_node() {
    local n=$1
    mkdir -p "n$n/home"
    node_config "$n" >"n$n/patroni.yml"
    chown -R "$pg_user" "n$n" 2>/dev/null
    chmod 0700 "n$n"
    HOME=$tmp/n$n/home "${as_pg[@]}" patroni "$tmp/n$n/patroni.yml" >>"n$n/patroni.log" 2>&1 &
    patroni_pids[$n]=$!
}

# members: the cluster as Patroni's REST API sees it (any live node's),
# one line a member: name role state timeline.
members() {
    local n out
    for n in 1 2 3; do
        out=$(curl -sf -m 2 "http://127.0.0.1:$(api_port $n)/cluster" 2>/dev/null) || continue
        jq -r '.members[] | "\(.name) \(.role) \(.state) \(.timeline // "-")"' <<<"$out" | sort
        return 0
    done
    return 1
}
leader() { members | awk '$2 == "leader" && $3 == "running" { print $1 }'; }
sync_standby() { members | awk '$2 == "sync_standby" && $3 == "running" { print $1 }'; }
# wait_for SECONDS WHAT CMD...: polls CMD every 0.2 s until it succeeds,
# for SECONDS at most (by the clock: a poll takes time of its own).
wait_for() {
    local limit=$1 what=$2 until=$((SECONDS + $1))
    shift 2
    while [ $SECONDS -lt $until ]; do
        "$@" && return 0
        sleep 0.2
    done
    "$@" && return 0
    fail "$what not within $limit s: $(members | tr '\n' ';')"
    return 1
}
# on_node N SQL [DB]: a query on node N itself, as the superuser
# (read-only, so that no commit waits for a standby), bounded in time.
on_node() {
    timeout 10 psql "host=127.0.0.1 port=$(pg_port $1) dbname=${3:-postgres} user=postgres connect_timeout=3" \
        -qAtX -c "$2" 2>/dev/null
}
# healthy N: N members running, one the leader, one its sync standby,
# as Patroni says and as the leader's PostgreSQL does: N - 1 standbys
# streaming from it, one of them synchronous (Patroni reports a member
# "running" that has yet to start streaming, or never will).
healthy() {
    local m l
    m=$(members) || return 1
    [ "$(grep -c ' running ' <<<"$m")" = "$1" ] &&
        [ "$(grep -c ' leader running' <<<"$m")" = 1 ] &&
        [ "$(grep -c ' sync_standby running' <<<"$m")" = 1 ] || return 1
    l=$(awk '$2 == "leader" { print substr($1, 2) }' <<<"$m")
    [ "$(on_node "$l" "SELECT count(*) || ' ' || count(*) FILTER (WHERE sync_state = 'sync') FROM pg_stat_replication WHERE state = 'streaming'")" = "$(($1 - 1)) 1" ]
}

start_node 1
wait_for 60 "node n1 bootstrapped and leading" eval '[ "$(leader)" = n1 ]' ||
    { tail -n 20 n1/patroni.log >&2; finish; exit 1; }
start_node 2
start_node 3
wait_for 90 "three nodes, a leader and a sync standby" healthy 3 ||
    { tail -n 20 n2/patroni.log >&2; finish; exit 1; }
echo "ha: patroni: three nodes, leader $(leader), sync standby $(sync_standby), after $SECONDS s"

# ---- the clients: multi-host conninfo, read-write --------------------------
hosts="host=127.0.0.1,127.0.0.1,127.0.0.1 port=$(pg_port 1),$(pg_port 2),$(pg_port 3)"
db="$hosts dbname=meter user=meter target_session_attrs=read-write"
wdb="$hosts dbname=meter user=meter_worker target_session_attrs=read-write"
unset METER_DATABASE_URL METER_OWNER_DATABASE_URL

checks=$((checks + 1))
timeout 120 "$METERCTL" --db "$db" migrate >migrate.out 2>&1 || { fail "migrate: $(cat migrate.out)"; finish; exit 1; }
HOST=$(timeout 60 "$METERCTL" --db "$wdb" keys create --role host --name ha 2>keys.err)
[ -n "$HOST" ] || { fail "keys create: $(cat keys.err)"; finish; exit 1; }

# meterd as in production, but for --db-timeout: 10 s rather than 30,
# since a failover takes 10 to 20 s here (what a client waits for is
# the watchdog's, well under --retry-for: docs/scale.md).
"$METERD" --listen 127.0.0.1:$meterd_port --db "$wdb" --threads 3 --rate-limit 0 \
    --db-timeout 10 >>meterd.log 2>&1 &
mpid=$!
for i in $(seq 1 100); do
    curl -sf -o /dev/null "http://127.0.0.1:$meterd_port/healthz" && break
    kill -0 $mpid 2>/dev/null || break
    sleep 0.05
done
curl -sf -o /dev/null "http://127.0.0.1:$meterd_port/healthz" ||
    { fail "meterd did not start: $(tail -n 5 meterd.log)"; finish; exit 1; }
url=http://127.0.0.1:$meterd_port
echo "ha: migrated, meterd serving on $url, after $SECONDS s"

# ---- pushing during a failover ---------------------------------------------
# A day ago (UTC): hours long ended, so meterd packs them as they come
# (--pack-after), and the pushes of the parts never share a second.
day0=$(($(date -u +%s) / 86400 * 86400 - 86400))
# fleet SEED START: a client's fleet, 16 sandboxes of acct-0..3 for an
# hour: about 49,000 samples (slots stand empty between sandboxes),
# about 33 s at the push's rate.
fleet() { echo --sandboxes 16 --accounts 4 --seconds 3600 --seed $1 --start $2; }
# push NAME SEED START: one client (four connections) pushing its fleet
# in batches of 30 s at 1,500 samples a second, so that the failover
# lands mid-push however fast the machine, each batch sent until
# acknowledged (--retry-for covers a failover's outage many times);
# what it sends is also written to NAME.ndjson. Sets clients.
push() {
    local name=$1 seed=$2 start=$3
    "$METERCTL" gen $(fleet $seed $start) >"$name.ndjson" || fail "$name: gen --output"
    "$METERCTL" gen $(fleet $seed $start) --batch-seconds 30 --rate 1500 --retry-for 120 \
        --push "$url/v1/samples" --token "$HOST" 2>"$name.push" &
    clients=($!)
}
# push_done NAME: the client must have had every batch acknowledged.
push_done() {
    local rc
    wait "${clients[0]}"
    rc=$?
    clients=()
    checks=$((checks + 1))
    [ $rc = 0 ] || fail "$1: the push exited $rc: $(tail -n 3 "$1.push")"
}
# said NAME FIELD: a count of the push's last line ("... 5 accepted, 2
# duplicates, ...; retried 3 cut off, 0 unreachable, 4 busy").
said() {
    grep 'meterctl: pushed' "$1.push" |
        awk -v f="$2" '{ for (i = 2; i <= NF; i++) { w = $i; gsub(/[,;:]/, "", w); if (w == f) s += $(i - 1) } } END { print s + 0 }'
}
# acked: batches meterd has answered 200 so far.
acked() { grep -c 'POST /v1/samples 200 ' meterd.log; }

# gaps NAME FAULT_EPOCH: from meterd's log, the batches answered after
# the fault (200 and 503), and when writes came back: the first 200
# after the last 503, in seconds from the fault (the failover as a
# client saw it).
gaps() {
    python3 - "$2" meterd.log >"$1.gaps" <<'PY'
import sys, datetime
fault = float(sys.argv[1])
n503, n200, last503, back = 0, 0, None, None
for line in open(sys.argv[2], errors="replace"):
    if " POST /v1/samples " not in line:
        continue
    t = datetime.datetime.strptime(line[:23], "%Y-%m-%dT%H:%M:%S.%f")
    t = t.replace(tzinfo=datetime.timezone.utc).timestamp()
    status = line.split(" POST /v1/samples ")[1].split()[0]
    if t < fault:
        continue
    if status == "503":
        n503 += 1
        last503, back = t, None
    elif status == "200":
        n200 += 1
        if last503 is not None and back is None:
            back = t
print(f"{n503} {n200} {(back - fault) if back else 0:.1f}")
PY
}

# probe [N]: one sample of its own (account ha-probe, sandbox probe-N,
# between the parts' hours, so that no part's export sees it) POSTed
# once; its status in $probe_status, its reply in probe.out and headers
# in probe.hdr.
probe() {
    local k=${1:-1}
    printf '[{"ts": %d, "account_id": "ha-probe", "sandbox_id": "probe-%d", "state": "running", "vcpu": 1, "cpu_used": 0.5, "mem_bytes": 1073741824, "disk_bytes": 0}]' \
        $((day0 + 5400 + k)) $k >probe.json
    probe_status=$(curl -s -o probe.out -D probe.hdr -m 30 -w '%{http_code}' -X POST \
        -H "Authorization: Bearer $HOST" -H 'Content-Type: application/json' \
        --data-binary @probe.json "$url/v1/samples")
}

# failover NAME HOW SEED START NODES: pushes NAME's fleet, and mid-push
# makes the leader go: HOW is "switchover" (patronictl failover to the
# sync standby) or "kill" (the leader's Patroni and PostgreSQL
# SIGKILLed, as a lost machine). Checks that the sync standby of the
# moment is promoted, that the push completes, that the cluster is back
# to NODES members with a sync standby, and what is stored; prints the
# figures.
failover() {
    local name=$1 how=$2 seed=$3 start=$4 nodes=$5 old sync t0 t1 new before n
    old=$(leader)
    sync=$(sync_standby)
    push "$name" "$seed" "$start"
    before=$(acked)
    # Mid-push: once a few batches are in, and a few seconds on.
    for i in $(seq 1 100); do
        [ $(($(acked) - before)) -ge 8 ] && break
        kill -0 "${clients[0]}" 2>/dev/null || break
        sleep 0.1
    done
    sleep 2
    checks=$((checks + 1))
    kill -0 "${clients[0]}" 2>/dev/null || fail "$name: the push ended before the failover"
    case $how in
    switchover)
        t0=$(date +%s.%N)
        timeout 60 patronictl -c "$tmp/$old/patroni.yml" failover --candidate "$sync" --force \
            >"$name.patronictl" 2>&1 || fail "$name: patronictl failover: $(cat "$name.patronictl")"
        ;;
    kill)
        n=${old#n}
        # Batches on the standby's disk whose answers die with the
        # primary, every time rather than when the kill lands at the
        # right moment: the primary's commits made to wait for the
        # standby to apply them (remote_apply, on this node alone: its
        # setting dies with it), and the standby's replay (its startup
        # process) stopped, so that every batch then committing waits,
        # its WAL received and flushed by the standby. (Not
        # pg_wal_replay_pause: Patroni resumes a paused replay at once.)
        # The replay goes on once the primary is dead, and the standby
        # is promoted with those batches; answered 503 when their
        # connections broke, sent again they must come back as
        # duplicates, not as new rows.
        local spm replay
        spm=$(head -n 1 "$tmp/$sync/data/postmaster.pid" 2>/dev/null)
        replay=$(ps -o pid=,args= --ppid "${spm:-0}" | awk '/ startup / { print $1 }')
        on_node "$n" "ALTER SYSTEM SET synchronous_commit = remote_apply" >/dev/null &&
            on_node "$n" "SELECT pg_reload_conf()" >/dev/null && [ -n "$replay" ] &&
            kill -STOP "$replay" ||
            fail "$name: cannot make the commits wait for the standby's replay (its startup process: '$replay')"
        # (one batch waits for the standby, the next ones of its
        # sandboxes for its row locks)
        stuck() { [ "$(on_node "$n" "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep' AND usename = 'meter_worker'")" -ge 1 ]; }
        wait_for 10 "$name: a batch waiting for the stopped replay" stuck
        sleep 0.5
        t0=$(date +%s.%N)
        # (bash's "Killed" notice for the job silenced with it)
        {
            kill -KILL "${patroni_pids[$n]}"
            kill_postgres "$n"
            [ -n "$replay" ] && kill -CONT "$replay"
            wait "${patroni_pids[$n]}"
        } 2>/dev/null
        patroni_pids[$n]=x
        # What a client sees meanwhile: no node takes writes (the old
        # primary is gone, the standbys read-only until the leader key
        # expires), so a batch is 503 with Retry-After. Sent again once
        # a primary serves, it is stored once, and the next copy is a
        # duplicate.
        probe
        checks=$((checks + 1))
        [ "$probe_status" = 503 ] && grep -qi '^Retry-After: ' probe.hdr ||
            fail "$name: a batch during the failover: HTTP $probe_status, want 503 with Retry-After: $(cat probe.hdr probe.out)"
        ;;
    esac
    wait_for 60 "$name: $sync promoted" eval '[ "$(leader)" = "$sync" ]'
    t1=$(date +%s.%N)
    new=$(leader)
    if [ "$how" = kill ]; then
        for i in $(seq 1 60); do
            probe
            [ "$probe_status" = 503 ] || break
            sleep 1
        done
        checks=$((checks + 1))
        [ "$probe_status" = 200 ] && [ "$(jq -c '{accepted, duplicates, conflicts}' probe.out 2>/dev/null)" = '{"accepted":1,"duplicates":0,"conflicts":0}' ] ||
            fail "$name: the probe sent again: HTTP $probe_status $(cat probe.out), want 1 accepted"
        probe
        checks=$((checks + 1))
        [ "$probe_status" = 200 ] && [ "$(jq -c '{accepted, duplicates, conflicts}' probe.out 2>/dev/null)" = '{"accepted":0,"duplicates":1,"conflicts":0}' ] ||
            fail "$name: the probe's copy: HTTP $probe_status $(cat probe.out), want 1 duplicate"
    fi
    push_done "$name"
    wait_for 60 "$name: $nodes nodes, a leader and its sync standby" healthy "$nodes"
    check_stored "$name" "$start" $((start + 3600))
    gaps "$name" "$t0"
    read -r n503 n200 gap <"$name.gaps"
    checks=$((checks + 1))
    [ "$n200" -gt 0 ] || fail "$name: no batch answered 200 after the failover"
    local acc dup con pushed
    pushed=$(sed -n 's/^meterctl: pushed \([0-9]*\) samples .*/\1/p' "$name.push")
    acc=$(said "$name" accepted)
    dup=$(said "$name" duplicates)
    con=$(said "$name" conflicts)
    checks=$((checks + 1))
    [ "$pushed" = "$generated" ] && [ $((acc + dup)) = "$generated" ] && [ "$con" = 0 ] ||
        fail "$name: ${pushed:-no} samples acknowledged, the replies say $acc accepted + $dup duplicates, $con conflicts, for $generated samples"
    if [ "$how" = kill ]; then
        checks=$((checks + 1))
        [ "$dup" -gt 0 ] || fail "$name: the batches on the standby when the primary died were not counted as duplicates"
    fi
    echo "ha: $name: leader $old -> $new (the sync standby $sync) in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s; batches stored again $gap s after the fault; $n503 batches answered 503 after the fault, $n200 answered 200"
    echo "ha: $name: $generated samples generated, ${pushed:-none} acknowledged ($acc accepted + $dup duplicates, $con conflicts), $stored stored ($lost lost, $doubled doubled); the push retried $(said "$name" busy) batches answered 503, $(said "$name" cut) cut off"
}

failover switchover switchover 11 $day0 3
failover kill kill 12 $((day0 + 7200)) 2

# stop_node N: node N's Patroni stopped (it stops its PostgreSQL first),
# killed with its PostgreSQL if it takes more than 30 s.
stop_node() {
    local p=${patroni_pids[$1]} i
    kill -TERM "$p" 2>/dev/null
    for i in $(seq 1 300); do
        kill -0 "$p" 2>/dev/null || break
        sleep 0.1
    done
    { kill -KILL "$p" && wait "$p"; } 2>/dev/null
    kill_postgres "$1"
    patroni_pids[$1]=x
}

# ---- the lost node comes back ----------------------------------------------
lost=
for n in 1 2 3; do [ "${patroni_pids[$n]}" = x ] && lost=$n; done
t0=$SECONDS
start_node "$lost"
wait_for 90 "n$lost rejoined as a replica" healthy 3
echo "ha: n$lost rejoined as a replica in $((SECONDS - t0)) s: $(members | tr '\n' ';')"

# ---- no standby: strict mode withholds the acknowledgement -----------------
# Both standbys stopped: the primary keeps the leader key, but no
# standby can confirm a commit, and Patroni does not turn synchronous
# replication off (strict). A batch's COMMIT then waits for one (no
# statement timeout ends that wait: PostgreSQL turns it off before it
# commits), unseen by other sessions, and meterd's watchdog answers it
# 503 after --db-timeout (10 s here). Once a standby is back the commit
# completes, and the batch sent again is a duplicate.
ldr=$(leader)
standbys=()
for n in 1 2 3; do [ "n$n" = "$ldr" ] || standbys+=($n); done
for n in "${standbys[@]}"; do stop_node "$n"; done
t0=$SECONDS
probe 2
waited=$((SECONDS - t0))
checks=$((checks + 1))
[ "$probe_status" = 503 ] && grep -qi '^Retry-After: ' probe.hdr && [ $waited -ge 9 ] ||
    fail "no standby: a batch got HTTP $probe_status after $waited s, want 503 with Retry-After after --db-timeout (10 s): $(cat probe.out)"
seen() { on_node "${ldr#n}" "SELECT count(*) FROM sandboxes WHERE sandbox_id = 'probe-2'" meter; }
waiting() { on_node "${ldr#n}" "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'"; }
# Still waiting past the statement timeout meterd sets (--db-timeout +
# 1 s), which would have ended the wait by calling the commit done.
while [ $((SECONDS - t0)) -lt 13 ]; do sleep 0.5; done
checks=$((checks + 1))
[ "$(seen)" = 0 ] && [ "$(waiting)" -ge 1 ] ||
    fail "no standby: the batch is not waiting for a standby: $(seen) seen, $(waiting) sessions waiting"
t0=$SECONDS
for n in "${standbys[@]}"; do start_node "$n"; done
wait_for 90 "the standbys back" healthy 3
checks=$((checks + 1))
[ "$(seen)" = 1 ] || fail "no standby: the batch's commit did not complete once a standby was back"
probe 2
checks=$((checks + 1))
[ "$probe_status" = 200 ] && [ "$(jq -c '{accepted, duplicates, conflicts}' probe.out 2>/dev/null)" = '{"accepted":0,"duplicates":1,"conflicts":0}' ] ||
    fail "no standby: the batch sent again: HTTP $probe_status $(cat probe.out), want 1 duplicate"
echo "ha: no standby: a batch answered 503 after $waited s, its commit waiting for a standby; the standbys back in $((SECONDS - t0)) s, the commit done, the batch sent again a duplicate"

# Every node holds the same samples: the standbys replay what the
# primary has (within a few seconds), nothing more, nothing less.
# meterd stopped first, so that no pack or merge moves rows meanwhile.
kill -TERM $mpid
wait $mpid
checks=$((checks + 1))
grep -q 'POST /v1/samples 500 ' meterd.log && fail "a batch was answered 500: $(grep -m 3 'POST /v1/samples 500 ' meterd.log)"
mpid=
node_sum() {
    timeout 10 psql "host=127.0.0.1 port=$(pg_port $1) dbname=meter user=meter connect_timeout=3" -qAtX -c \
        "SELECT (SELECT count(*) FROM usage_blocks) || ' ' || (SELECT count(*) FROM usage_packs) || ' ' || (SELECT sum(samples) FROM usage_hourly)" 2>&1
}
want_sum=$(timeout 10 psql "$db" -qAtX -c "SELECT (SELECT count(*) FROM usage_blocks) || ' ' || (SELECT count(*) FROM usage_packs) || ' ' || (SELECT sum(samples) FROM usage_hourly)")
for n in 1 2 3; do
    wait_for 20 "n$n holds what the primary does ($want_sum)" eval '[ "$(node_sum $n)" = "$want_sum" ]'
done
echo "ha: every node holds $want_sum (blocks, packs, samples in the rollups); $SECONDS s in all"
finish
