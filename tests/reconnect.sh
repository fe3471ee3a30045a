#!/bin/bash
# PostgreSQL restarted under a running meterd (issue 26, defect 8): each
# request thread's connection is then dead, and libpq does not know it
# until it is used. meterd must see it before the request does and
# connect again, so that the first requests after a restart are
# answered as usual, not 503; while the database is down a request
# gets 503 (the one reconnect failed), and the next once it is back,
# 200. One request thread makes it exact: every request after the
# restart is that thread's first.
# PostgreSQL is a private cluster of this test (it restarts it).
. "$(dirname "$0")/lib.sh"
for tool in curl psql; do
    command -v $tool >/dev/null || { fail "$tool not found"; finish; exit; }
done
tmp=$(mktemp -d)
mpid=
cleanup() {
    [ -n "$mpid" ] && kill "$mpid" 2>/dev/null && wait "$mpid" 2>/dev/null
    (cd "$tmp" && "$METERCTL" db destroy --yes >/dev/null 2>&1)
    cd / && rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp" || exit 1
private_cluster
ctl() { "$METERCTL" --db "$db" "$@"; }
ctl migrate >/dev/null || { fail "migrate"; finish; exit; }
HOST=$(ctl keys create --role host --name h 2>/dev/null)
FIN=$(ctl keys create --role finance --name f 2>/dev/null)

# One request thread, no merging thread: only the requests' connection.
for attempt in 1 2 3 4 5; do
    port=$((20000 + RANDOM % 30000))
    "$METERD" --listen 127.0.0.1:$port --db "$db" --threads 1 --merge-every 0 \
        --rate-limit 0 >>meterd.log 2>&1 &
    mpid=$!
    for i in $(seq 1 50); do
        curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
        sleep 0.1
    done
    curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
    kill $mpid 2>/dev/null
    wait $mpid 2>/dev/null
    mpid=
done
[ -n "$mpid" ] || { fail "meterd did not start: $(tail -n 5 meterd.log)"; finish; exit; }
url=http://127.0.0.1:$port

T=$(($(date +%s) - 600))
n=0
batch() { # a new sample each time: its status in $status
    n=$((n + 1))
    printf '[{"ts": %d, "account_id": "acme", "sandbox_id": "r-%d", "state": "running", "vcpu": 1, "cpu_used": 0.5, "mem_bytes": 1073741824, "disk_bytes": 0}]' \
        $((T + n)) $n >batch.json
    status=$(curl -s -o body.out -D hdr.out -m 20 -w '%{http_code}' -X POST -H "Authorization: Bearer $HOST" \
        -H "Content-Type: application/json" --data-binary @batch.json "$url/v1/samples")
}
invoices() { curl -s -o body.out -m 20 -w '%{http_code}' -H "Authorization: Bearer $FIN" "$url/v1/invoices"; }
want() { # WANT GOT WHAT
    checks=$((checks + 1))
    [ "$2" = "$1" ] || fail "$3: HTTP $2, want $1: $(head -c 300 body.out)"
}

batch
want 200 "$status" "a batch before any restart"
want 200 "$(invoices)" "invoices before any restart"
for how in db_stop db_crash; do
    $how
    db_start
    # The first request after the restart is the thread's first on a
    # dead connection: its key lookup, then its statements.
    batch
    want 200 "$status" "the first batch after a restart ($how)"
    want 200 "$(invoices)" "the next request after a restart ($how)"
    db_stop
    db_start
    want 200 "$(invoices)" "the first read after a restart ($how)"
    batch
    want 200 "$status" "the next batch after a restart ($how)"
done
# Down: the reconnect fails, the request gets 503 with Retry-After,
# once; back up, served at once.
db_stop
batch
want 503 "$status" "a batch while the database is down"
contains "$(tr -d '\r' <hdr.out)" "Retry-After:" "the 503's Retry-After"
db_start
batch
want 200 "$status" "the first batch once the database is back"
checks=$((checks + 1))
stored=$(psql "$db" -XAtc "SELECT count(*) FROM sandboxes")
[ "$stored" = $((n - 1)) ] || fail "$stored sandboxes stored, want $((n - 1)) (every batch but the one refused)"
contains "$(cat meterd.log)" "database connection lost: connecting again" "the reconnect is logged"
finish
