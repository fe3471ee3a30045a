#!/bin/bash
# Operating meterd (docs/operations.md): it refuses a schema older or
# newer than its migrations, naming both, and /readyz says so when the
# schema changes under it; --log-file reopened on SIGHUP (logrotate's
# rename, then HUP); --log-format json, one object a line, each request
# with its id (X-Request-Id, echoed), route, status, duration, key and
# address; --listen on IPv6.
. "$(dirname "$0")/lib.sh"
src=$(cd "$(dirname "$0")/.." && pwd)/migrations
with_meterd
last=$(ls "$src" | sort | tail -n 1)
last=${last%.sql}
prev=$(ls "$src" | sort | tail -n 2 | head -n 1)
prev=${prev%.sql}
next=$(printf '%04d_later' $((10#${last%%_*} + 1)))

# refused NAME WANT...: meterd on $wdb exits non-zero at once, its
# message holding each WANT.
refused() {
    local what=$1 rc
    shift
    checks=$((checks + 1))
    timeout 20 "$METERD" --listen 127.0.0.1:0 --db "$wdb" >refused.log 2>&1 && rc=0 || rc=$?
    [ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "$what: meterd exited $rc: $(cat refused.log)"
    for want in "$@"; do contains "$(cat refused.log)" "$want" "$what"; done
}

# --- the schema: one migration behind, then one ahead ---------------------
mkdir behind
cp "$src"/*.sql behind/
rm "behind/$last.sql"
"$METERCTL" --db "$db" migrate --migrations behind >/dev/null || fail "migrate all but the last"
refused "a schema one migration behind" "at migration $prev;" "needs $last" "meterctl migrate"

"$METERCTL" --db "$db" migrate >/dev/null || fail "migrate"
start_meterd a "$wdb" --merge-every 1 || { finish; exit; }
A=$url_a
checks=$((checks + 1))
[ "$(curl -s -o /dev/null -w '%{http_code}' "$A/readyz")" = 200 ] || fail "readyz on the schema it knows"

mkdir ahead
cp "$src"/*.sql ahead/
echo "CREATE TABLE later (x int); COMMENT ON TABLE later IS 'a test''s';" >"ahead/$next.sql"
"$METERCTL" --db "$db" migrate --migrations ahead >/dev/null || fail "migrate one ahead"
body=$(curl -s -w '\n%{http_code}' "$A/readyz")
checks=$((checks + 1))
[ "${body##*$'\n'}" = 503 ] || fail "readyz on a schema migrated under it: $body"
contains "$body" "$next" "readyz names the newer migration"
contains "$body" "schema-mismatch" "readyz's problem"
refused "a schema one migration ahead" "at migration $next" "$last"
# Nor does it merge rollups on a schema it does not know.
for i in $(seq 1 50); do grep -q "merge: not merging: .*$next" "$tmp/a.log" && break; sleep 0.1; done
contains "$(cat "$tmp/a.log")" "merge: not merging: the database is at migration $next" "the merge stops on a schema migrated under it"
psql "$db" -qAtc "DELETE FROM schema_migrations WHERE file = '$next.sql'; DROP TABLE later" ||
    fail "undo the later migration"
checks=$((checks + 1))
[ "$(curl -s -o /dev/null -w '%{http_code}' "$A/readyz")" = 200 ] || fail "readyz once the schema is back"

# --- the log: JSON lines, request ids ----------------------------------------
FIN=$("$METERCTL" --db "$wdb" keys create --role finance --name ops-finance 2>/dev/null)
fin_id=$("$METERCTL" --db "$wdb" keys list | awk '$NF == "ops-finance" { print $1 }')
start_meterd j "$wdb" --log-format json --log-file "$tmp/json.log" || { finish; exit; }
# get URL [curl args]: sets status, body and headers (lowercased names).
get() {
    local url=$1
    shift
    body=$(curl -s -D headers.txt -o /dev/stdout -w '\n%{http_code}' "$@" "$url")
    status=${body##*$'\n'}
    body=${body%$'\n'*}
    headers=$(tr -d '\r' <headers.txt | tr 'A-Z' 'a-z')
}
get "$url_j/v1/invoices" -H "Authorization: Bearer $FIN" -H "X-Request-Id: ops-good.1"
checks=$((checks + 1))
[ "$status" = 200 ] || fail "a finance key's list: $status $body"
contains "$headers" "x-request-id: ops-good.1" "a well-formed X-Request-Id is echoed"
get "$url_j/v1/invoices" -H "X-Request-Id: not shaped!"
checks=$((checks + 1))
[ "$status" = 401 ] || fail "no key: $status"
rid401=$(printf '%s\n' "$headers" | sed -n 's/^x-request-id: //p')
[[ "$rid401" =~ ^[0-9a-f]{16}$ ]] || fail "an ill-formed X-Request-Id is replaced by 16 hex digits, got '$rid401'"
get "$url_j/v1/invoices/2026-999999" -H "Authorization: Bearer $FIN" -H "X-Request-Id: ops-404"
checks=$((checks + 1))
[ "$status" = 404 ] || fail "an unknown invoice: $status"
get "$url_j/no/such/route" -H "X-Request-Id: ops-other"
rid=$(printf '%s\n' "$headers" | sed -n 's/^x-request-id: //p')
contains "$rid" "ops-other" "a 404 without a route has its id too"
# Every line a JSON object with time, level and msg; the requests' with
# their fields (python3 reads them; the access line is written when the
# request completes, a moment after its answer).
sleep 0.5
checks=$((checks + 1))
python3 - "$tmp/json.log" "$fin_id" "$rid401" >json.check 2>&1 <<'PY' || fail "the JSON log: $(cat json.check)"
import json, sys
path, key_id, rid401 = sys.argv[1], int(sys.argv[2]), sys.argv[3]
reqs = {}
with open(path, encoding="utf-8") as f:
    for n, line in enumerate(f, 1):
        o = json.loads(line)
        for k in ("time", "level", "msg"):
            assert isinstance(o.get(k), str) and o[k], f"line {n} lacks {k}: {line}"
        if "status" in o:
            for k in ("request_id", "method", "route", "remote"):
                assert isinstance(o.get(k), str) and o[k], f"line {n} lacks {k}: {line}"
            assert isinstance(o["duration_ms"], (int, float)) and o["duration_ms"] >= 0, line
            reqs[o["request_id"]] = o
def req(rid, route, status, key=None):
    o = reqs.get(rid)
    assert o, f"no access line of request {rid}: {sorted(reqs)}"
    assert o["route"] == route and o["status"] == status, o
    assert o["method"] == "GET" and o["remote"] == "127.0.0.1", o
    assert o.get("key_id") == key, f"key_id {o.get('key_id')}, want {key}: {o}"
req("ops-good.1", "/v1/invoices", 200, key_id)
req(rid401, "/v1/invoices", 401)
req("ops-404", "/v1/invoices/{ref}", 404, key_id)
req("ops-other", "other", 404)
print("json log: %d requests" % len(reqs))
PY

# --- SIGHUP: the log renamed, reopened --------------------------------------
start_meterd r "$wdb" --log-file "$tmp/rot.log" || { finish; exit; }
curl -s -o /dev/null -H "X-Request-Id: before-hup" "$url_r/healthz"
mv "$tmp/rot.log" "$tmp/rot.log.1"
kill -HUP "$pid_r"
kill -HUP "$pid_r"
for i in $(seq 1 50); do [ -s "$tmp/rot.log" ] && break; sleep 0.1; done
get "$url_r/healthz" -H "X-Request-Id: after-hup"
checks=$((checks + 1))
[ "$status" = 200 ] || fail "meterd answers after SIGHUP: $status"
kill -0 "$pid_r" 2>/dev/null || fail "SIGHUP killed meterd"
sleep 0.3
contains "$(cat "$tmp/rot.log" 2>/dev/null)" "id=after-hup" "the request after SIGHUP is in the new file"
contains "$(cat "$tmp/rot.log.1")" "id=before-hup" "the request before SIGHUP is in the renamed file"
checks=$((checks + 1))
grep -q "after-hup" "$tmp/rot.log.1" && fail "a line after SIGHUP went to the renamed file"
checks=$((checks + 1))
grep -q "healthz" "$tmp/r.log" && fail "request lines went to stderr beside --log-file"

# --- IPv6 -------------------------------------------------------------------
# start6 NAME LISTEN-HOST: meterd on [HOST]:PORT, checked over ::1.
start6() {
    local name=$1 host=$2 port pid
    for attempt in 1 2 3 4 5; do
        port=$((20000 + RANDOM % 30000))
        "$METERD" --listen "[$host]:$port" --db "$wdb" --threads 2 --rate-limit 1 \
            >"$tmp/$name.log" 2>&1 &
        pid=$!
        for i in $(seq 1 50); do
            curl -gsf "http://[::1]:$port/healthz" >/dev/null 2>&1 && break
            kill -0 $pid 2>/dev/null || break
            sleep 0.1
        done
        if curl -gsf "http://[::1]:$port/healthz" >/dev/null 2>&1; then
            pids+=($pid)
            eval "port_$name=$port"
            return 0
        fi
        kill $pid 2>/dev/null
        wait $pid 2>/dev/null
    done
    fail "meterd on [$host] did not start: $(cat "$tmp/$name.log")"
    return 1
}
if ! ip -6 addr show lo 2>/dev/null | grep -q '::1/128'; then
    echo "operations: no IPv6 loopback (::1) on this machine: the IPv6 checks are skipped"
else
    start6 v6 ::1 && {
        checks=$((checks + 1))
        [ "$(curl -gs "http://[::1]:$port_v6/healthz")" = ok ] || fail "GET /healthz over [::1]"
        get "http://[::1]:$port_v6/v1/invoices" -g -H "Authorization: Bearer $FIN" -H "X-Request-Id: over-v6"
        checks=$((checks + 1))
        [ "$status" = 200 ] || fail "a key's request over IPv6: $status $body"
        # Unknown keys from one IPv6 address are limited as from an IPv4 one.
        n429=0
        for i in 1 2 3 4 5 6; do
            s=$(curl -gs -o /dev/null -w '%{http_code}' -H "Authorization: Bearer mtr_$(printf '%064d' $i)" \
                "http://[::1]:$port_v6/v1/invoices")
            [ "$s" = 429 ] && n429=$((n429 + 1))
        done
        checks=$((checks + 1))
        [ "$n429" -gt 0 ] || fail "unknown keys over IPv6 at --rate-limit 1: no 429"
        sleep 0.3
        contains "$(cat "$tmp/v6.log")" "::1 GET /v1/invoices 200" "the log shows the IPv6 address"
    }
    # [::] takes IPv4 clients too, logged as IPv4.
    start6 any :: && {
        checks=$((checks + 1))
        [ "$(curl -s "http://127.0.0.1:$port_any/healthz")" = ok ] || fail "[::] over IPv4"
        sleep 0.3
        contains "$(cat "$tmp/any.log")" "127.0.0.1 GET /healthz 200" "an IPv4 client of [::] logged as IPv4"
    }
fi
expect_status 2 "$METERD" --listen "[::1:8080" --db "$wdb"
contains "$err" "[IPV6]:PORT" "a malformed IPv6 --listen"
expect_status 2 "$METERD" --listen "::1:8080" --db "$wdb"
expect_status 2 "$METERD" --log-format yaml --db "$wdb"
contains "$err" "--log-format 'yaml'" "a bad --log-format"

finish
