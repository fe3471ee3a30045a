#!/bin/bash
# valgrind.sh - meterd leak-free and free of memory errors under
# valgrind for a short ingest and a read of every route. make check's
# meterd is built with AddressSanitizer, which valgrind cannot run, so
# this builds a plain one (Debug, no sanitizer, only the meterd target)
# in $METER_PLAIN_BUILD (ctest: valgrind/ in the build tree; kept, so
# later runs are incremental), then: batches in the three body forms, one gzipped, one
# refused with a 400 and one with a 401; the invoice run over HTTP;
# a GET of every read route (the invoice in each rendering); the
# service over TLS for one request; SIGTERM. valgrind must report no
# error and no definite or indirect leak (--error-exitcode), and the
# log must say so. Suppressions, each explained: tests/valgrind.supp.
. "$(dirname "$0")/lib.sh"
src=$(cd "$(dirname "$0")/.." && pwd)
command -v valgrind >/dev/null || { fail "valgrind not found (scripts/install-deps.sh installs it)"; finish; exit; }
command -v openssl >/dev/null || { fail "openssl not found"; finish; exit; }
build=${METER_PLAIN_BUILD:-$PWD/plain}
checks=$((checks + 1))
if ! { cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DMETER_SANITIZE=OFF \
    -DMETER_WERROR=OFF >"$build.log" 2>&1 &&
    cmake --build "$build" --target meterd -j2 >>"$build.log" 2>&1; }; then
    fail "the plain meterd does not build: $(tail -5 "$build.log")"
    finish
    exit
fi
plain=$build/bin/meterd
with_meterd
ctl() { "$METERCTL" --db "$wdb" "$@"; }
"$METERCTL" --db "$db" migrate >/dev/null || { fail "migrate"; finish; exit; }
HOST=$(ctl keys create --role host --name h)
FIN=$(ctl keys create --role finance --name f)
ACME=$(ctl keys create --role account --account acme --name a)
jq 'del(.grants) | .effective_from = "2025-01-01"' "$src/pricing/books/e2b-hobby.json" >book.json
ctl books add book.json >/dev/null || fail "books add"
ctl accounts add acme --name "Acme Corp" --book e2b-hobby --from 2025-01-01 >/dev/null ||
    fail "accounts add"
ctl credits grant acme 5 >/dev/null || fail "credits grant"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout tls.key -out tls.pem -days 2 -subj "/CN=meter valgrind" \
    -addext "subjectAltName=IP:127.0.0.1" 2>/dev/null || fail "openssl certificate"

# vg NAME ARGS: the plain meterd under valgrind on a free port (another
# if the one drawn is taken), its valgrind report in $build/NAME.vg and
# its log in NAME.log; sets port and vg.
vg() {
    local name=$1 scheme=http ca=()
    shift
    case "$*" in *--tls-cert*) scheme=https ca=(--cacert tls.pem) ;; esac
    for attempt in 1 2 3 4 5; do
        port=$((20000 + RANDOM % 30000))
        valgrind --leak-check=full --show-leak-kinds=definite,indirect \
            --errors-for-leak-kinds=definite,indirect --error-exitcode=99 \
            --num-callers=30 --suppressions="$src/tests/valgrind.supp" \
            --log-file="$build/$name.vg" "$plain" --listen "127.0.0.1:$port" \
            --db "$wdb" --threads 2 "$@" >"$name.log" 2>&1 &
        vg=$!
        for i in $(seq 1 300); do
            if curl -sf "${ca[@]}" "$scheme://127.0.0.1:$port/healthz" >/dev/null 2>&1; then
                pids+=($vg)
                return 0
            fi
            kill -0 $vg 2>/dev/null || break
            sleep 0.1
        done
        kill $vg 2>/dev/null
        wait $vg 2>/dev/null
    done
    fail "meterd under valgrind did not start: $(tail -5 "$name.log") $(tail -5 "$build/$name.vg")"
    return 1
}
# stopped NAME: SIGTERM to valgrind's meterd, then its verdict.
stopped() {
    local report=$build/$1.vg
    kill -TERM $vg
    wait $vg && rc=0 || rc=$?
    checks=$((checks + 4))
    [ "$rc" = 0 ] || fail "$1: valgrind's meterd exited $rc (99: valgrind found errors; report in $report): $(grep -A12 -m3 -E 'Invalid|uninitialised|definitely lost in|indirectly lost in' "$report")"
    grep -q 'ERROR SUMMARY: 0 errors' "$report" || fail "$1: valgrind reported errors: $(grep 'ERROR SUMMARY' "$report")"
    # No leak block at all, or one whose definite and indirect are 0.
    if grep -q 'LEAK SUMMARY' "$report"; then
        grep -qE 'definitely lost: 0 bytes' "$report" || fail "$1: $(grep 'definitely lost' "$report")"
        grep -qE 'indirectly lost: 0 bytes' "$report" || fail "$1: $(grep 'indirectly lost' "$report")"
    else
        grep -q 'All heap blocks were freed' "$report" || fail "$1: no leak summary in the report"
    fi
    grep -q 'meterd stopped' "$1.log" || fail "$1: meterd did not stop cleanly: $(tail -3 "$1.log")"
    echo "$1: $(grep -E 'ERROR SUMMARY|definitely lost|indirectly lost|in use at exit' "$report" | sed 's/^==[0-9]*== *//' | tr '\n' ';')"
}
# req WANT METHOD PATH TOKEN [CURL ARGS]: one request, its status checked.
req() {
    local want=$1 method=$2 path=$3 token=$4
    shift 4
    local auth=()
    [ -n "$token" ] && auth=(-H "Authorization: Bearer $token")
    got=$(curl -s -o reply.out -w '%{http_code}' -m 60 -X "$method" "${auth[@]}" "$@" \
        "http://127.0.0.1:$port$path")
    checks=$((checks + 1))
    [ "$got" = "$want" ] || fail "$method $path: HTTP $got, want $want: $(head -c 300 reply.out)"
}

T=$(($(date +%s) / 60 * 60 - 600))
period=$(date -u -d "@$T" +%Y-%m)
cat >rows.json <<JSON
[{"ts": $T, "account_id": "acme", "sandbox_id": "v-1", "state": "running",
  "vcpu": 2, "cpu_used": 0.5, "mem_bytes": 1073741824, "disk_bytes": 0},
 {"ts": $((T + 1)), "account_id": "acme", "sandbox_id": "v-1", "state": "paused",
  "disk_bytes": 10}]
JSON
printf '{"ts":%d,"account_id":"acme","sandbox_id":"v-2","state":"running","vcpu":1,"cpu_used":1,"mem_bytes":0,"disk_bytes":0}\n{"ts":%d,"account_id":"acme","sandbox_id":"v-2","state":"running","vcpu":1,"cpu_used":0.25,"mem_bytes":0,"disk_bytes":0}\n' \
    $T $((T + 1)) >rows.ndjson
cat >col.json <<JSON
{"sandboxes":[{"account_id":"acme","sandbox_id":"v-3","start":$T,"seconds":60,
  "state":"running","vcpu":2,"cpu_used":1.5,"mem_bytes":1073741824,
  "disk_bytes":0,"egress_bytes":0}]}
JSON
gzip -c col.json >col.json.gz
echo '[{"ts": "yesterday", "account_id": "acme"}]' >bad.json

vg plain || { finish; exit; }
json=(-H 'Content-Type: application/json')
req 200 POST /v1/samples "$HOST" "${json[@]}" --data-binary @rows.json
contains "$(cat reply.out)" '"accepted":2' "the JSON array stored"
req 200 POST /v1/samples "$HOST" -H 'Content-Type: application/x-ndjson' --data-binary @rows.ndjson
req 200 POST /v1/samples "$HOST" "${json[@]}" -H 'Content-Encoding: gzip' --data-binary @col.json.gz
contains "$(cat reply.out)" '"accepted":60' "the gzipped columnar batch stored"
req 200 POST /v1/samples "$HOST" "${json[@]}" --data-binary @rows.json
contains "$(cat reply.out)" '"duplicates":2' "a repeated batch"
req 400 POST /v1/samples "$HOST" "${json[@]}" --data-binary @bad.json
req 401 POST /v1/samples "not-a-key" "${json[@]}" --data-binary @rows.json
req 200 POST /v1/invoices/run "$FIN" "${json[@]}" --data "{\"period\":\"$period\"}"
req 200 GET /v1/invoices "$FIN"
id=$(jq -r '.items[0].id // empty' reply.out)
checks=$((checks + 1))
[ -n "$id" ] || fail "no draft invoice listed: $(head -c 300 reply.out)"
for fmt in "" .csv .html .pdf; do
    req 200 GET "/v1/invoices/$id$fmt" "$ACME"
done
req 200 GET "/v1/usage?account=acme&from=$((T - 3600))&to=$((T + 3600))" "$FIN"
req 200 GET "/v1/usage?from=$((T - 86400))&to=$((T + 86400))&granularity=day" "$ACME"
req 200 GET /v1/accounts/acme/credits "$ACME"
req 404 GET /v1/nowhere ""
for p in /healthz /readyz /metrics; do req 200 GET "$p" ""; done
stopped plain

# The same binary over TLS: the certificate read, a session, the key
# wiped and freed.
vg tls --tls-cert tls.pem --tls-key tls.key || { finish; exit; }
got=$(curl -s --cacert tls.pem -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $HOST" \
    "${json[@]}" --data-binary @rows.json "https://127.0.0.1:$port/v1/samples")
checks=$((checks + 1))
[ "$got" = 200 ] || fail "a batch over TLS under valgrind: HTTP $got"
stopped tls

finish
