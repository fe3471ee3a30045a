#!/bin/bash
# Hostile clients against the shared HTTP layer (every route gets the
# same limits): bodies that are only declared hold nothing, slow bodies
# and silent connections are closed, connections are bounded in total
# and per address while other clients are served, and ambiguous framing
# is refused. Raw requests go through bash's /dev/tcp.
. "$(dirname "$0")/lib.sh"
with_meterd
"$METERCTL" --db "$db" migrate >/dev/null || { fail "migrate"; finish; exit; }
HOST=$("$METERCTL" --db "$wdb" keys create --role host --name h)
T=$(($(date +%s) - 600))
cat >rows.json <<JSON
[{"ts": $T, "account_id": "acme", "sandbox_id": "h-1", "state": "running",
  "vcpu": 1, "cpu_used": 0.5, "mem_bytes": 1073741824, "disk_bytes": 0}]
JSON

port_of() { echo "${1##*:}"; }
# open_raw FD URL TEXT: a connection on fd FD that has sent TEXT.
open_raw() {
    eval "exec $1<>/dev/tcp/127.0.0.1/$(port_of "$2")" || return 1
    printf '%b' "$3" >&"$1"
}
close_raw() { eval "exec $1>&-"; }
# code URL [CURL ARGS]: the status of a GET of /healthz ("000": refused).
code() {
    local url=$1
    shift
    curl -s -o /dev/null -m 5 -w '%{http_code}' "$@" "$url/healthz"
}
post_rows() { # URL: the status of posting rows.json
    curl -s -o /dev/null -m 10 -w '%{http_code}' -X POST \
        -H "Authorization: Bearer $HOST" -H "Content-Type: application/json" \
        --data-binary @rows.json "$1/v1/samples"
}
buffered() { # URL: meter_buffered_bytes
    curl -s "$1/metrics" | awk '$1 == "meter_buffered_bytes" { print $2 }'
}

# --- a declared body holds nothing until it arrives -------------------------
# Two connections declare 49,900 bytes each and send one: with
# --max-buffered 50,000 an honest batch is still taken.
start_meterd held "$wdb" --max-buffered 50000 || { finish; exit; }
for fd in 5 6; do
    open_raw $fd "$url_held" "POST /v1/samples HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer $HOST\r\nContent-Type: application/json\r\nContent-Length: 49900\r\n\r\n[" ||
        fail "raw connection $fd"
done
sleep 0.5
got=$(post_rows "$url_held")
checks=$((checks + 1))
[ "$got" = 200 ] || fail "declared but unsent bodies blocked a batch: HTTP $got"
held=$(buffered "$url_held")
checks=$((checks + 1))
[ "${held:-x}" -lt 100 ] || fail "buffered bytes count what was declared: $held"
for fd in 5 6; do close_raw $fd; done

# A body sent to a route that takes none (no key needed) holds nothing.
start_meterd nobody "$wdb" --max-body 4096 --max-buffered 8192 || { finish; exit; }
pad=$(head -c 4090 /dev/zero | tr '\0' ' ')
for fd in 5 6; do
    open_raw $fd "$url_nobody" "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 4096\r\n\r\n$pad" ||
        fail "raw connection $fd"
done
sleep 0.5
got=$(post_rows "$url_nobody")
checks=$((checks + 1))
[ "$got" = 200 ] || fail "bodies sent to GET /healthz blocked a batch: HTTP $got"
for fd in 5 6; do close_raw $fd; done

# --- a body slower than --body-timeout is closed ---------------------------
start_meterd slow "$wdb" --body-timeout 2 || { finish; exit; }
open_raw 5 "$url_slow" "POST /v1/samples HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer $HOST\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n[" ||
    fail "raw connection"
sleep 3
printf ' ' >&5 2>/dev/null
t0=$(date +%s%N)
timeout 5 cat <&5 >/dev/null
elapsed=$((($(date +%s%N) - t0) / 1000000))
checks=$((checks + 1))
[ "$elapsed" -lt 3000 ] || fail "a body past --body-timeout was not closed (${elapsed} ms)"
close_raw 5
sleep 0.3
contains "$(cat "$tmp/slow.log")" "body timeout" "body timeout logged"

# --- a silent connection is closed after --idle-timeout ---------------------
start_meterd idle "$wdb" --idle-timeout 1 || { finish; exit; }
open_raw 5 "$url_idle" "GET /healthz HTTP/1.1\r\n" || fail "raw connection"
t0=$(date +%s%N)
timeout 6 cat <&5 >/dev/null
elapsed=$((($(date +%s%N) - t0) / 1000000))
checks=$((checks + 1))
[ "$elapsed" -lt 4000 ] || fail "a silent connection stayed open ${elapsed} ms"
close_raw 5

# --- headers trickled past --header-timeout are closed (slowloris) ----------
# A header line every 0.5 s keeps a connection from being idle; the
# header deadline closes it all the same, 2 s after it opened. A request
# answered before it, then silence, gets the same 2 s from its answer.
start_meterd trickle "$wdb" --header-timeout 2 --idle-timeout 30 || { finish; exit; }
open_raw 5 "$url_trickle" "GET /healthz HTTP/1.1\r\nHost: x\r\n" || fail "raw connection"
t0=$(date +%s%N)
(for i in $(seq 20); do sleep 0.5; printf 'X-Slow: %d\r\n' "$i" >&5 || exit; done) 2>/dev/null &
trickler=$!
timeout 8 cat <&5 >/dev/null
elapsed=$((($(date +%s%N) - t0) / 1000000))
kill $trickler 2>/dev/null
wait $trickler 2>/dev/null
checks=$((checks + 1))
[ "$elapsed" -ge 1500 ] && [ "$elapsed" -lt 4500 ] ||
    fail "trickled headers closed after ${elapsed} ms, want about 2 s"
close_raw 5
sleep 0.3
contains "$(cat "$tmp/trickle.log")" "header timeout" "the header timeout logged"
# A keep-alive connection after its answer: its next request's 2 s start
# again from the answer (the first request itself took no time).
open_raw 5 "$url_trickle" "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" || fail "raw connection"
t0=$(date +%s%N)
first=$(timeout 8 head -c 12 <&5)
contains "$first" "HTTP/1.1 200" "the answer before the silence"
timeout 8 cat <&5 >/dev/null
elapsed=$((($(date +%s%N) - t0) / 1000000))
checks=$((checks + 1))
[ "$elapsed" -ge 1500 ] && [ "$elapsed" -lt 4500 ] ||
    fail "a kept-alive connection closed after ${elapsed} ms, want about 2 s"
close_raw 5

# --- connections per address and in total ------------------------------------
# Three silent connections from 127.0.0.1 use up --max-per-ip 3: a fourth
# from there is refused, one from 127.0.0.2 is served.
start_meterd perip "$wdb" --max-per-ip 3 --idle-timeout 30 || { finish; exit; }
for fd in 5 6 7; do
    open_raw $fd "$url_perip" "GET /healthz HTTP/1.1\r\n" || fail "raw connection $fd"
done
sleep 0.3
checks=$((checks + 2))
[ "$(code "$url_perip")" != 200 ] || fail "a fourth connection from one address was served"
[ "$(code "$url_perip" --interface 127.0.0.2)" = 200 ] ||
    fail "another address was not served beside a full one"
for fd in 5 6 7; do close_raw $fd; done
sleep 0.3
checks=$((checks + 1))
[ "$(code "$url_perip")" = 200 ] || fail "the address was not served once its connections closed"

start_meterd total "$wdb" --max-connections 4 --max-per-ip 100 --idle-timeout 30 || { finish; exit; }
for fd in 5 6 7 8; do
    open_raw $fd "$url_total" "GET /healthz HTTP/1.1\r\n" || fail "raw connection $fd"
done
sleep 0.3
checks=$((checks + 1))
[ "$(code "$url_total" --interface 127.0.0.3)" != 200 ] ||
    fail "a connection past --max-connections was served"
for fd in 5 6 7 8; do close_raw $fd; done
sleep 0.3
checks=$((checks + 1))
[ "$(code "$url_total")" = 200 ] || fail "not served once the connections closed"

# --- pipelined requests are all answered --------------------------------------
open_raw 5 "$url_held" "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /readyz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" ||
    fail "raw connection"
n=$(timeout 5 cat <&5 | tr -d '\r' | grep -c '^HTTP/1.1 200')
close_raw 5
checks=$((checks + 1))
[ "$n" = 3 ] || fail "three pipelined GETs got $n replies"

# --- ambiguous framing is refused --------------------------------------------
# raw URL TEXT: the status line of a raw request's reply.
raw() {
    open_raw 5 "$1" "$2" || return
    timeout 5 head -1 <&5 | tr -d '\r'
    close_raw 5
}
# Headers only: the refusal comes before any body is read (a body left
# unread could reset the connection before the reply is read).
reply=$(raw "$url_held" "POST /v1/samples HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer $HOST\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n")
contains "$reply" "400" "two different Content-Length headers"
reply=$(raw "$url_held" "POST /v1/samples HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer $HOST\r\nContent-Type: application/json\r\nContent-Length: 7\r\nTransfer-Encoding: chunked\r\n\r\n")
contains "$reply" "400" "Content-Length beside chunked"
reply=$(raw "$url_held" "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n")
contains "$reply" "200" "a repeated equal Content-Length"
# A chunk line with a 40 KB extension filled libmicrohttpd's connection
# buffer, which answered its own 500 HTML page; a body comes with its
# Content-Length, so chunked bodies are refused with the headers, as a
# problem. The whole request is sent: the reply is read after it.
ext=$(head -c 40960 /dev/zero | tr '\0' a)
for target in "POST /v1/samples" "GET /healthz"; do
    path=${target#* }
    # The refusal may close the connection before all is written: a
    # subshell ignores the broken pipe.
    eval "exec 5<>/dev/tcp/127.0.0.1/$(port_of "$url_held")"
    (trap '' PIPE; printf '%b' "$target HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer $HOST\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2;e=$ext\r\n[]\r\n0\r\n\r\n" >&5) 2>/dev/null
    reply=$(timeout 5 cat <&5 | tr -d '\r')
    close_raw 5
    contains "$(head -1 <<<"$reply")" "HTTP/1.1 400" "a 40 KB chunk extension to $path"
    contains "$reply" "application/problem+json" "a 40 KB chunk extension to $path: a problem"
    contains "$reply" "Transfer-Encoding 'chunked' is not accepted" "a 40 KB chunk extension to $path: why"
done

# --- unknown keys are limited by address; known keys are not -------------
# At 1 a second (bursts of 2), ten unknown tokens in one go from
# 127.0.0.1: a 401 for each while the address has room, then 429. A
# good host key from there, never seen by this meterd before, still has
# its batch stored (issue 26: a flood of guesses behind a NAT locked
# every honest host of it out), while unknown tokens, of a key's shape
# or not, still get 429; 127.0.0.2 is served.
start_meterd guessing "$wdb" --rate-limit 1 || { finish; exit; }
unknown="mtr_$(printf '0%.0s' $(seq 64))"
urls=()
for i in $(seq 10); do urls+=("$url_guessing/v1/invoices"); done
codes=$(curl -s -o /dev/null -w '%{http_code}\n' -H "Authorization: Bearer $unknown" "${urls[@]}")
n401=$(grep -c '^401$' <<<"$codes")
n429=$(grep -c '^429$' <<<"$codes")
checks=$((checks + 1))
[ "$n401" -ge 2 ] && [ "$n401" -le 3 ] && [ $((n401 + n429)) = 10 ] ||
    fail "ten unknown keys at 1/s: $n401 401s, $n429 429s"
cat >neighbour.json <<JSON
[{"ts": $((T + 1)), "account_id": "acme", "sandbox_id": "h-behind-nat", "state": "running",
  "vcpu": 1, "cpu_used": 0.5, "mem_bytes": 1073741824, "disk_bytes": 0}]
JSON
got=$(curl -s -o body.out -w '%{http_code}' -X POST -H "Authorization: Bearer $HOST" \
    -H "Content-Type: application/json" --data-binary @neighbour.json "$url_guessing/v1/samples")
checks=$((checks + 1))
[ "$got" = 200 ] || fail "a good key from the guessing address: HTTP $got, want 200: $(head -c 300 body.out)"
contains "$(cat body.out)" '"accepted":1' "the good key's batch accepted"
checks=$((checks + 1))
[ "$(psql "$db" -XAtc "SELECT count(*) FROM sandboxes WHERE sandbox_id = 'h-behind-nat'")" = 1 ] ||
    fail "the good key's batch from the guessing address is not stored"
for t in "$unknown" "not-a-key"; do
    got=$(curl -s -o body.out -D hdr.out -w '%{http_code}' -H "Authorization: Bearer $t" "$url_guessing/v1/invoices")
    checks=$((checks + 1))
    [ "$got" = 429 ] || fail "unknown token '$t' after the good key: HTTP $got, want 429"
done
contains "$(cat body.out)" "unknown or revoked keys" "the 429 says why"
contains "$(tr -d '\r' <hdr.out)" "Retry-After: " "the 429's Retry-After"
checks=$((checks + 1))
[ "$(curl -s -o /dev/null -w '%{http_code}' --interface 127.0.0.2 -X POST -H "Authorization: Bearer $HOST" \
    -H "Content-Type: application/json" --data-binary @rows.json "$url_guessing/v1/samples")" = 200 ] ||
    fail "another address is limited by the guessing one"

# --- a key given twice is refused, naming it ---------------------------------
# A JSON body with a duplicated key is ambiguous (parsers keep the first,
# the last, or both): 400 naming the key, nothing stored, whatever the
# form, the key's length (jansson names only short ones) or the route.
start_meterd dup "$wdb" || { finish; exit; }
FIN=$("$METERCTL" --db "$wdb" keys create --role finance --name f)
# post_dup NAME TOKEN PATH TYPE FILE KEY: 400 naming KEY.
post_dup() {
    local got
    got=$(curl -s -o body.out -w '%{http_code}' -X POST -H "Authorization: Bearer $2" \
        -H "Content-Type: $4" --data-binary @"$5" "$url_dup$3")
    checks=$((checks + 1))
    [ "$got" = 400 ] || fail "$1: HTTP $got, want 400: $(head -c 300 body.out)"
    contains "$(cat body.out)" "duplicate key '$6'" "$1 names the key"
}
printf '[{"ts": %d, "account_id": "acme", "sandbox_id": "dup-1", "state": "running", "vcpu": 1, "vcpu": 2, "cpu_used": 0.5, "mem_bytes": 0, "disk_bytes": 0}]' $T >dup.json
post_dup "a sample with vcpu twice" "$HOST" /v1/samples application/json dup.json vcpu
printf '{"ts": %d, "account_id": "acme", "sandbox_id": "dup-2", "state": "paused", "disk_bytes": 0}\n{"ts": %d, "account_id": "acme", "account_id": "other", "sandbox_id": "dup-2", "state": "paused", "disk_bytes": 0}\n' $T $((T + 1)) >dup.ndjson
post_dup "an NDJSON line with account_id twice" "$HOST" /v1/samples application/x-ndjson dup.ndjson account_id
printf '{"sandboxes": [{"account_id": "acme", "sandbox_id": "dup-3", "start": %d, "seconds": 1, "state": ["paused"], "disk_bytes": [1], "disk_bytes": [2]}]}' $T >dup-col.json
post_dup "a columnar sandbox with disk_bytes twice" "$HOST" /v1/samples application/json dup-col.json disk_bytes
long=an_unknown_key_far_longer_than_twenty_bytes
printf '[{"ts": %d, "%s": 1, "%s": 2}]' $T $long $long >dup-long.json
post_dup "a long key twice" "$HOST" /v1/samples application/json dup-long.json $long
checks=$((checks + 1))
[ "$(psql "$db" -XAtc "SELECT count(*) FROM sandboxes WHERE sandbox_id LIKE 'dup-%'")" = 0 ] ||
    fail "a batch with a key given twice stored something"
period=$(date -u -d "$(date -u +%Y-%m-01) -1 month" +%Y-%m)
printf '{"period": "%s", "finalize": false, "finalize": true}' "$period" >dup-run.json
post_dup "an invoice run with finalize twice" "$FIN" /v1/invoices/run application/json dup-run.json finalize
contains "$(cat body.out)" '"type":"urn:meter:problem:invalid-body"' "the run's problem type"
checks=$((checks + 1))
[ "$(psql "$db" -XAtc "SELECT count(*) FROM invoices")" = 0 ] ||
    fail "an invoice run with a key given twice ran"

finish
