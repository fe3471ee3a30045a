#!/bin/bash
# A database that stops answering in the middle of a request: the
# request gets a 503 with Retry-After within --db-timeout, its connection
# is broken and opened again, nothing of the batch is stored, and the
# same batch sent again is stored once. Two ways to freeze: the backend
# serving meterd stopped (SIGSTOP) between requests, and a batch stuck
# behind sandbox locks that another session holds.
. "$(dirname "$0")/lib.sh"
extra_cleanup() {
    [ -n "${frozen:-}" ] && kill -CONT $frozen 2>/dev/null
    [ -n "${holder:-}" ] && kill "$holder" 2>/dev/null
}
with_meterd
ctl() { "$METERCTL" --db "$wdb" "$@"; }
"$METERCTL" --db "$db" migrate >/dev/null || { fail "migrate"; finish; exit; }
HOST=$(ctl keys create --role host --name h 2>/dev/null)
# One backend: the request thread's (no merging thread).
start_meterd main "$wdb" --db-timeout 2 --threads 1 --merge-every 0 || { finish; exit; }
T=$(($(date +%s) - 600))
rows() { # FILE SANDBOX [FROM]: three seconds of one sandbox, from T + FROM
    printf '[' >"$1"
    for i in 0 1 2; do
        printf '%s{"ts": %d, "account_id": "acme", "sandbox_id": "%s", "state": "running", "vcpu": 1, "cpu_used": 0.5, "mem_bytes": 1073741824, "disk_bytes": 0}' \
            "$([ $i = 0 ] || echo ,)" $((T + ${3:-0} + i)) "$2" >>"$1"
    done
    printf ']' >>"$1"
}
post() { # FILE: sets status, headers, body.out, ms
    local t0=$(date +%s%N)
    headers=$(curl -s -D - -o body.out -m 20 -X POST -H "Authorization: Bearer $HOST" \
        -H "Content-Type: application/json" --data-binary @"$1" "$url_main/v1/samples" | tr -d '\r')
    status=$(awk 'NR == 1 { print $2 }' <<<"$headers")
    ms=$((($(date +%s%N) - t0) / 1000000))
}
stored() { psql "$db" -XAtc "SELECT coalesce(sum(samples), 0) FROM usage_hourly"; }
within() { # WHAT: the last post took from 1.5 s to 6 s (the timeout is 2 s)
    checks=$((checks + 1))
    [ "$ms" -ge 1500 ] && [ "$ms" -lt 6000 ] ||
        fail "$1: answered after $ms ms, want about 2 s"
}

rows first.json s-1
post first.json
checks=$((checks + 1))
[ "$status" = 200 ] || fail "a first batch: HTTP $status"

# --- the backend stopped between requests ----------------------------------
frozen=$(psql "$db" -XAtc "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'")
checks=$((checks + 1))
[ -n "$frozen" ] || fail "no backend of meterd found"
kill -STOP $frozen
rows second.json s-2
post second.json
checks=$((checks + 1))
[ "$status" = 503 ] || fail "a batch while the backend is stopped: HTTP $status, want 503"
contains "$headers" "Retry-After:" "the 503's Retry-After"
within "the stopped backend"
kill -CONT $frozen
frozen=
contains "$(cat "$tmp/main.log")" "did not answer within 2 s" "the watchdog's log line"
post second.json
checks=$((checks + 1))
[ "$status" = 200 ] || fail "the same batch once the database answers: HTTP $status"
contains "$(cat body.out)" '"accepted":3' "stored after the freeze"
checks=$((checks + 1))
[ "$(stored)" = 6 ] || fail "seconds stored after the stopped backend: $(stored), want 6"

# --- a batch stuck inside its transaction ----------------------------------
# Another session holds the lock of the batch's sandbox (its row in
# sandboxes, as meter/db/ingest.c locks it, in a transaction left open);
# the batch waits on it past the timeout.
mkfifo hold
psql "$db" -XAq <hold >/dev/null 2>&1 &
holder=$!
exec 7>hold
echo "BEGIN; SELECT 1 FROM sandboxes WHERE sandbox_id = 's-1' FOR NO KEY UPDATE;" >&7
for i in $(seq 50); do
    n=$(psql "$db" -XAtc "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle in transaction'")
    [ "$n" = 1 ] && break
    sleep 0.1
done
rows third.json s-1 3
t_post=$(date +%s%N)
post third.json
checks=$((checks + 1))
[ "$status" = 503 ] || fail "a batch behind held locks: HTTP $status, want 503"
within "the held locks"
# Its backend, still waiting on the locks, ends itself at the statement
# timeout meterd sets (the deadline and a second): it does not hold a
# connection and a place in the lock queue until the locks are freed.
waiting() { psql "$db" -XAtc "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"; }
left=$(waiting)
for i in $(seq 40); do
    [ "$left" = 0 ] && break
    sleep 0.1
    left=$(waiting)
done
ms=$((($(date +%s%N) - t_post) / 1000000))
checks=$((checks + 1))
[ "$left" = 0 ] && [ "$ms" -lt 6000 ] ||
    fail "the broken request's backend still waits on the locks after $ms ms ($left waiting)"
exec 7>&-
wait "$holder" 2>/dev/null
holder=
# The broken transaction never commits: once the locks are free, the
# batch is stored once, whether its first attempt's backend has gone yet
# or not.
post third.json
checks=$((checks + 1))
[ "$status" = 200 ] || fail "the batch once the locks are free: HTTP $status"
contains "$(cat body.out)" '"accepted":3' "the batch stored by its second attempt"
checks=$((checks + 1))
[ "$(stored)" = 9 ] || fail "seconds stored after the held locks: $(stored), want 9"

# --- stopping while the merging thread's backend does not answer ------------
# SIGTERM cuts the merge's connection off: meterd exits at once, not when
# the database answers again.
kill "$pid_main"
wait "$pid_main" 2>/dev/null
start_meterd merger "$wdb" --merge-every 1 || { finish; exit; }
for i in $(seq 50); do
    frozen=$(psql "$db" -XAtc "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'")
    [ -n "$frozen" ] && break
    sleep 0.1
done
checks=$((checks + 1))
[ -n "$frozen" ] || fail "no merging backend of meterd found"
kill -STOP $frozen
sleep 1.5 # the next merge waits on it
t_term=$(date +%s%N)
kill -TERM "$pid_merger"
for i in $(seq 100); do
    kill -0 "$pid_merger" 2>/dev/null || break
    sleep 0.1
done
ms=$((($(date +%s%N) - t_term) / 1000000))
checks=$((checks + 1))
kill -0 "$pid_merger" 2>/dev/null && fail "meterd still runs $ms ms after SIGTERM, its merge's backend stopped"
[ "$ms" -lt 3000 ] || fail "meterd took $ms ms to stop, its merge's backend stopped"
kill -CONT $frozen
frozen=
finish
