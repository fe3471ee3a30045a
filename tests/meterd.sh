#!/bin/bash
# meterd over real HTTP against a real PostgreSQL: every status, the
# body forms, gzip, exactly-once counting (also with two meterd at once
# on overlapping batches), a generated fleet round trip, rollups that
# agree with the samples, metrics, and a clean stop.
. "$(dirname "$0")/lib.sh"
extra_cleanup() {
    [ -n "${down_dir:-}" ] && (cd "$down_dir" && "$METERCTL" db destroy --yes >/dev/null 2>&1)
}
with_meterd
"$METERCTL" --db "$db" migrate >/dev/null || { fail "migrate"; finish; exit; }
HOST=$("$METERCTL" --db "$wdb" keys create --role host --name test-host 2>/dev/null)
FIN=$("$METERCTL" --db "$wdb" keys create --role finance --name test-finance 2>/dev/null)
REVOKED=$("$METERCTL" --db "$wdb" keys create --role host --name old 2>/dev/null)
rid=$("$METERCTL" --db "$wdb" keys list | awk '$NF == "old" { print $1 }')
"$METERCTL" --db "$wdb" keys revoke "$rid" >/dev/null

# post URL TOKEN TYPE FILE [extra curl args]: sets status and body.
post() {
    local url=$1 token=$2 type=$3 file=$4
    shift 4
    local auth=()
    [ -n "$token" ] && auth=(-H "Authorization: Bearer $token")
    body=$(curl -s -o /dev/stdout -w '\n%{http_code}' -X POST "${auth[@]}" \
        -H "Content-Type: $type" --data-binary "@$file" "$@" "$url/v1/samples")
    status=${body##*$'\n'}
    body=${body%$'\n'*}
}
expect_http() { # WANT WHAT
    checks=$((checks + 1))
    [ "$status" = "$1" ] || fail "$2: HTTP $status, want $1: $body"
}

start_meterd a "$wdb" || { finish; exit; }
start_meterd b "$wdb" || { finish; exit; }
A=$url_a
B=$url_b

# --- body forms ----------------------------------------------------------
T=$(( $(date +%s) / 60 * 60 - 3600 ))
cat >rows.json <<JSON
[{"ts":$T,"account_id":"acme","sandbox_id":"sb-1","state":"running","vcpu":2,"cpu_used":0.5,"mem_bytes":1073741824,"disk_bytes":0},
 {"ts":$((T + 1)),"account_id":"acme","sandbox_id":"sb-1","state":"paused","disk_bytes":10}]
JSON
post $A "$HOST" application/json rows.json
expect_http 200 "JSON array"
contains "$body" '"accepted":2' "JSON array"
post $A "$HOST" application/json rows.json
expect_http 200 "repeat"
contains "$body" '{"accepted":0,"duplicates":2,"conflicts":0}' "a repeated batch is all duplicates"
sed 's/"cpu_used":0.5/"cpu_used":1/' rows.json >conflict.json
post $B "$HOST" application/json conflict.json
contains "$body" '{"accepted":0,"duplicates":1,"conflicts":1}' "a changed second is a conflict"
"$METERCTL" --db "$wdb" export --from $T --to $((T + 2)) >out.ndjson
contains "$(cat out.ndjson)" '"cpu_used":0.5' "the first value stands"

printf '{"ts":%d,"account_id":"acme","sandbox_id":"sb-2","state":"running","vcpu":1,"cpu_used":1,"mem_bytes":0,"disk_bytes":0}\n\n{"ts":%d,"account_id":"acme","sandbox_id":"sb-2","state":"running","vcpu":1,"cpu_used":1,"mem_bytes":0,"disk_bytes":0}\n' $T $((T + 1)) >rows.ndjson
post $A "$HOST" application/x-ndjson rows.ndjson
expect_http 200 "NDJSON"
contains "$body" '"accepted":2' "NDJSON"

cat >col.json <<JSON
{"sandboxes":[{"account_id":"acme","sandbox_id":"sb-3","start":$T,"seconds":3,
  "state":["running","paused","running"],"vcpu":2,"cpu_used":[0.25,0,2],
  "mem_bytes":1073741824,"disk_bytes":[1,2,3],"egress_bytes":0}]}
JSON
post $A "$HOST" "application/json; charset=utf-8" col.json
expect_http 200 "columnar"
contains "$body" '"accepted":3' "columnar"

gzip -c rows.ndjson | sed 's/sb-2/sb-4/' >/dev/null # (ids are inside the compressed stream)
sed 's/sb-2/sb-4/' rows.ndjson | gzip -c >rows.ndjson.gz
post $A "$HOST" application/x-ndjson rows.ndjson.gz -H "Content-Encoding: gzip"
expect_http 200 "gzip"
contains "$body" '"accepted":2' "gzip"

# gzip of several members (RFC 1952) is read to its end.
{ head -n 1 rows.ndjson | sed 's/sb-2/sb-7/' | gzip -c; tail -n 1 rows.ndjson | sed 's/sb-2/sb-7/' | gzip -c; } >members.gz
post $A "$HOST" application/x-ndjson members.gz -H "Content-Encoding: gzip"
contains "$body" '"accepted":2' "a gzip body of two members"

# A second repeated in the batch is judged against what stands: the
# stored value V; the batch [W, V] is one conflict and one duplicate,
# [W, W] two conflicts.
printf '[{"ts":%d,"account_id":"acme","sandbox_id":"sb-8","state":"paused","disk_bytes":1}]' $T >v.json
printf '[{"ts":%d,"account_id":"acme","sandbox_id":"sb-8","state":"paused","disk_bytes":2},{"ts":%d,"account_id":"acme","sandbox_id":"sb-8","state":"paused","disk_bytes":1}]' $T $T >wv.json
printf '[{"ts":%d,"account_id":"acme","sandbox_id":"sb-8","state":"paused","disk_bytes":2},{"ts":%d,"account_id":"acme","sandbox_id":"sb-8","state":"paused","disk_bytes":2}]' $T $T >ww.json
post $A "$HOST" application/json v.json
post $A "$HOST" application/json wv.json
contains "$body" '{"accepted":0,"duplicates":1,"conflicts":1}' "[W, V] after V"
post $A "$HOST" application/json ww.json
contains "$body" '{"accepted":0,"duplicates":0,"conflicts":2}' "[W, W] after V"
# Within one batch, the first copy stands for the later ones.
printf '[{"ts":%d,"account_id":"acme","sandbox_id":"sb-9","state":"paused","disk_bytes":1},{"ts":%d,"account_id":"acme","sandbox_id":"sb-9","state":"paused","disk_bytes":2},{"ts":%d,"account_id":"acme","sandbox_id":"sb-9","state":"paused","disk_bytes":1}]' $T $T $T >inbatch.json
post $A "$HOST" application/json inbatch.json
contains "$body" '{"accepted":1,"duplicates":1,"conflicts":1}' "repeats within a batch"

# --max-batch-sandboxes (default 10,000): a batch at the limit (one
# second each) is taken, registered whole; one sandbox more is a 413
# naming the limit and the batch's count, and stores nothing (not even
# its sandboxes).
wide() { # COUNT PREFIX FILE: a columnar batch of COUNT sandboxes
    awk -v t=$T -v n="$1" -v p="$2" 'BEGIN { printf "{\"sandboxes\":["; for (i = 0; i < n; i++) printf "%s{\"account_id\":\"wide\",\"sandbox_id\":\"%s-%d\",\"start\":%d,\"seconds\":1,\"state\":\"paused\",\"disk_bytes\":0}", i ? "," : "", p, i, t; print "]}" }' >"$3"
}
wide 10000 w wide.json
post $A "$HOST" application/json wide.json
expect_http 200 "10,000 sandboxes in one batch"
contains "$body" '"accepted":10000' "10,000 sandboxes in one batch"
wide 10001 o over.json
post $A "$HOST" application/json over.json
expect_http 413 "10,001 sandboxes in one batch"
contains "$body" '"type":"urn:meter:problem:too-many-sandboxes"' "too many sandboxes: problem type"
contains "$body" "holds 10001 distinct sandboxes, more than the 10000 a batch may hold (--max-batch-sandboxes); nothing was stored" "too many sandboxes: the count and the limit"
checks=$((checks + 1))
n=$(psql "$db" -qAtc "SELECT count(*) FROM sandboxes WHERE sandbox_id LIKE 'o-%'")
[ "$n" = 0 ] || fail "a batch over --max-batch-sandboxes registered $n sandboxes"
# Its seconds are free: a repeat counts duplicates only against what a
# batch at the limit stored (the 10,000 of them), none of the other's.
post $A "$HOST" application/json wide.json
contains "$body" '{"accepted":0,"duplicates":10000,"conflicts":0}' "the batch at the limit stored once"
# The environment sets it as the option does; repeats of one sandbox
# count once.
METER_MAX_BATCH_SANDBOXES=2 start_meterd lim "$db" || { finish; exit; }
printf '[{"ts":%d,"account_id":"acme","sandbox_id":"l-1","state":"paused","disk_bytes":0},{"ts":%d,"account_id":"acme","sandbox_id":"l-1","state":"paused","disk_bytes":0},{"ts":%d,"account_id":"acme","sandbox_id":"l-2","state":"paused","disk_bytes":0}]' $T $((T + 1)) $T >two.json
post $url_lim "$HOST" application/json two.json
expect_http 200 "two sandboxes under METER_MAX_BATCH_SANDBOXES=2"
printf '[{"ts":%d,"account_id":"acme","sandbox_id":"l-3","state":"paused","disk_bytes":0},{"ts":%d,"account_id":"acme","sandbox_id":"l-1","state":"paused","disk_bytes":0},{"ts":%d,"account_id":"acme","sandbox_id":"l-2","state":"paused","disk_bytes":0}]' $((T + 2)) $((T + 2)) $((T + 2)) >three.json
post $url_lim "$HOST" application/json three.json
expect_http 413 "three sandboxes under METER_MAX_BATCH_SANDBOXES=2"
contains "$body" "holds 3 distinct sandboxes, more than the 2 a batch" "METER_MAX_BATCH_SANDBOXES is read"
checks=$((checks + 1))
n=$(psql "$db" -qAtc "SELECT count(*) FROM sandboxes WHERE sandbox_id = 'l-3'")
[ "$n" = 0 ] || fail "a batch over METER_MAX_BATCH_SANDBOXES registered its sandbox"
kill $pid_lim

# --- refused batches: nothing stored -------------------------------------
printf '[{"ts":%d,"account_id":"other","sandbox_id":"sb-1","state":"paused","disk_bytes":0}]' $((T + 9)) >owner.json
# acme's sandbox id under another account: another sandbox, its own.
post $B "$HOST" application/json owner.json
expect_http 200 "a sandbox id of another account"
contains "$body" '{"accepted":1,"duplicates":0,"conflicts":0}' "a sandbox id of another account is another sandbox"
before=$("$METERCTL" --db "$wdb" export --from 0 --to 9999999999 | wc -l)
cat >bad.json <<JSON
[{"ts":$((T + 5)),"account_id":"acme","sandbox_id":"sb-5","state":"running","vcpu":1,"cpu_used":0.5,"mem_bytes":0,"disk_bytes":0},
 {"ts":$((T + 6)),"account_id":"acme","sandbox_id":"sb-5","state":"running","vcpu":1,"cpu_used":2,"mem_bytes":0,"disk_bytes":0},
 {"ts":$((T + 7)),"account_id":"acme","sandbox_id":"sb-5","state":"running","vcpu":1,"cpu_used":1,"mem_bytes":1.5,"disk_bytes":0}]
JSON
post $A "$HOST" application/json bad.json
expect_http 400 "invalid samples"
contains "$body" '"type":"urn:meter:problem:invalid-samples"' "problem type"
contains "$body" '"index":1,"field":"cpu_used","value":"2","reason":"must be <= vcpu"' "problem lists index, field, value, reason"
contains "$body" '"index":2,"field":"mem_bytes"' "every problem listed"
future=$(( $(date +%s) + 600 ))
printf '[{"ts":%d,"account_id":"acme","sandbox_id":"sb-6","state":"paused","disk_bytes":0}]' $future >future.json
post $A "$HOST" application/json future.json
expect_http 400 "future sample"
contains "$body" "more than 5 minutes in the future" "future sample"
printf '[{"ts":%d,"account_id":"acme","sandbox_id":"sb-6","state":"running","vcpu":1,"cpu_used":1.00000000000000001,"mem_bytes":0,"disk_bytes":0}]' $((T + 9)) >dec.json
post $A "$HOST" application/json dec.json
expect_http 400 "decimals read from the text"
contains "$body" '"field":"cpu_used","value":"1.00000000000000001","reason":"more than 4 decimals"' "decimals read from the text"
printf '[{"ts":%d,"account_id":"acme","sandbox_id":"sb-6","state":"paused","disk_bytes":0}]' $((T - 401 * 86400)) >old.json
post $A "$HOST" application/json old.json
expect_http 400 "a sample older than --max-age"
contains "$body" "older than the 400 days" "a sample older than --max-age"
# A long value cut for the message is cut at a character: "x" then 60
# two-byte characters, whose 77th byte is half of one, still show.
e60=x$(printf '\xc3\xa9%.0s' $(seq 1 60))
printf '[{"ts":%d,"account_id":"acme","sandbox_id":"sb-1","state":"%s","disk_bytes":0}]' $((T + 9)) "$e60" >utf8.json
post $A "$HOST" application/json utf8.json
expect_http 400 "a bad state"
contains "$body" '"field":"state"' "the field of a cut value"
contains "$body" '"value":"\"xéééé' "a cut value keeps its characters"
printf '[{"ts":1,' >syntax.json
post $A "$HOST" application/json syntax.json
expect_http 400 "bad JSON"
echo 'not gzip' >bad.gz
post $A "$HOST" application/json bad.gz -H "Content-Encoding: gzip"
expect_http 400 "bad gzip"
{ echo '[]' | gzip -c; echo garbage; } >trailing.gz
post $A "$HOST" application/json trailing.gz -H "Content-Encoding: gzip"
expect_http 400 "bytes after the gzip stream"
after=$("$METERCTL" --db "$wdb" export --from 0 --to 9999999999 | wc -l)
[ "$before" = "$after" ] || fail "a refused batch stored samples ($before -> $after)"

post $A "" application/json rows.json
expect_http 401 "no token"
post $A "mtr_nonsense" application/json rows.json
expect_http 401 "unknown token"
post $A "$REVOKED" application/json rows.json
expect_http 401 "revoked token"
post $A "$FIN" application/json rows.json
expect_http 403 "finance token"
contains "$body" "role 'finance'" "403 says the role"
post $A "$HOST" text/plain rows.json
expect_http 415 "text/plain"
post $A "$HOST" application/json rows.json -H "Content-Encoding: br"
expect_http 415 "brotli"
status=$(curl -s -o /dev/null -D allow.txt -w '%{http_code}' "$A/v1/samples")
expect_http 405 "GET /v1/samples"
contains "$(cat allow.txt)" "Allow: POST" "405 names the allowed method"
status=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$A/healthz")
expect_http 405 "POST /healthz"
status=$(curl -s -o /dev/null -w '%{http_code}' -I "$A/healthz")
expect_http 200 "HEAD /healthz"
status=$(curl -s -o /dev/null -w '%{http_code}' "$A/nowhere")
expect_http 404 "unknown route"

# 413: a body past --max-body, also once inflated.
start_meterd small "$wdb" --max-body 4096
head -c 8000 /dev/zero | tr '\0' ' ' >big.json
post $url_small "$HOST" application/json big.json
expect_http 413 "large body"
head -c 1000000 /dev/zero | tr '\0' ' ' | gzip -c >bomb.gz
post $url_small "$HOST" application/json bomb.gz -H "Content-Encoding: gzip"
expect_http 413 "inflating past the limit"

# 503 when saturated: a slow upload's bytes, counted as they arrive,
# hold most of --max-buffered.
start_meterd busy "$wdb" --max-body 100000 --max-buffered 30000 --threads 1
head -c 28000 /dev/zero | tr '\0' ' ' >slow.json
curl -s -o /dev/null --limit-rate 4k -X POST -H "Authorization: Bearer $HOST" \
    -H "Content-Type: application/json" --data-binary @slow.json "$url_busy/v1/samples" &
slow=$!
for i in $(seq 1 100); do # until the slow body holds 16000 bytes or more
    held=$(curl -s "$url_busy/metrics" | awk '$1 == "meter_buffered_bytes" { print $2 }')
    [ "${held:-0}" -ge 16000 ] && break
    sleep 0.1
done
{ cat rows.json; head -c 20000 /dev/zero | tr '\0' ' '; } >padded.json
post $url_busy "$HOST" application/json padded.json -D busy-headers.txt
expect_http 503 "saturated"
contains "$body" "saturated" "saturated problem"
contains "$(cat busy-headers.txt)" "Retry-After" "saturated 503 has Retry-After"
kill $slow 2>/dev/null
wait $slow 2>/dev/null

# --- accounts appear on first sight; late samples keep their arrival -------
n=$(psql "$db" -qAtc "SELECT count(*) FROM accounts WHERE account_id = 'acme' AND auto_created")
[ "$n" = 1 ] || fail "account acme was not created on its first sample"
# (meterd packs an hour's blocks once it has settled: in blocks or packs.)
late=$(psql "$db" -qAtc "SELECT (SELECT count(*) FROM usage_blocks WHERE arrived_at > to_timestamp((minute + 1) * 60)) + (SELECT count(*) FROM usage_packs WHERE last_arrival > to_timestamp((minute + 60) * 60))")
[ "$late" -ge 1 ] || fail "late samples carry no arrival time after their minute"

# --- exactly once, two meterd, overlapping batches at once ---------------
"$METERCTL" gen --sandboxes 30 --accounts 3 --seconds 240 --start $((T - 7200)) --seed 11 >fleet.ndjson
total=$(wc -l <fleet.ndjson)
# Set one: the fleet in chunks; set two: the same seconds in other chunks,
# every 7th with another cpu_used (a conflict, whoever comes first).
split -l 700 fleet.ndjson one.
awk 'NR % 7 == 0 { sub(/"cpu_used":[0-9.]+/, "\"cpu_used\":0") } { print }' fleet.ndjson |
    awk 'BEGIN { srand(5) } { print rand() "\t" $0 }' | sort -k1,1 | cut -f2- >shuffled.ndjson
changed=$(awk 'NR % 7 == 0 && /"cpu_used":/ && !/"cpu_used":0,/' fleet.ndjson | wc -l)
split -l 500 shuffled.ndjson two.
senders=()
for f in one.* two.*; do
    url=$A; case $f in two.*) url=$B ;; esac
    curl -s -X POST -H "Authorization: Bearer $HOST" -H "Content-Type: application/x-ndjson" \
        --data-binary "@$f" "$url/v1/samples" >"$f.reply" &
    senders+=($!)
done
wait "${senders[@]}"
sum() { cat one.*.reply two.*.reply | sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p" | awk '{ s += $1 } END { print s + 0 }'; }
acc=$(sum accepted); dup=$(sum duplicates); con=$(sum conflicts)
checks=$((checks + 1))
[ "$acc" = "$total" ] || fail "two meterd accepted $acc of $total distinct seconds"
[ "$con" = "$changed" ] || fail "conflicts $con, want $changed"
[ "$dup" = $((total - changed)) ] || fail "duplicates $dup, want $((total - changed))"
stored=$("$METERCTL" --db "$wdb" export --from $((T - 7200)) --to $((T - 7200 + 240)) | wc -l)
[ "$stored" = "$total" ] || fail "$stored seconds stored, want $total"

# --- a generated fleet round trip, through gen --push -------------------
"$METERCTL" gen --sandboxes 12 --accounts 2 --seconds 300 --start $((T - 20000)) --seed 4 >gen.ndjson
expect_status 0 "$METERCTL" gen --sandboxes 12 --accounts 2 --seconds 300 --start $((T - 20000)) --seed 4 \
    --push "$B/v1/samples" --token "$HOST" --batch-seconds 60
"$METERCTL" --db "$wdb" export --from $((T - 20000)) --to $((T - 20000 + 300)) | sort >exported.ndjson
sort gen.ndjson >generated.ndjson
checks=$((checks + 1))
cmp -s exported.ndjson generated.ndjson || fail "exported samples differ from the generated ones"
[ -s generated.ndjson ] || fail "the generator produced nothing"
# --push takes the service's base URL too, with or without a slash: the
# same samples again, all duplicates.
for base in "$B" "$B/"; do
    expect_status 0 "$METERCTL" gen --sandboxes 12 --accounts 2 --seconds 300 \
        --start $((T - 20000)) --seed 4 --push "$base" --token "$HOST" \
        --batch-seconds 60
    contains "$err" ": 0 accepted, $(wc -l <gen.ndjson) duplicates, 0 conflicts" \
        "--push $base reaches /v1/samples"
done
# Over several connections, batches of 10 s: every batch arrives once,
# whatever the order (another window, exported whole).
"$METERCTL" gen --sandboxes 12 --accounts 2 --seconds 300 --start $((T - 30000)) --seed 5 | sort >gen5.ndjson
expect_status 0 "$METERCTL" gen --sandboxes 12 --accounts 2 --seconds 300 --start $((T - 30000)) --seed 5 \
    --push "$B" --token "$HOST" --batch-seconds 10 --connections 3
contains "$err" "3 connections): $(wc -l <gen5.ndjson) accepted, 0 duplicates" "gen --push over 3 connections"
"$METERCTL" --db "$wdb" export --from $((T - 30000)) --to $((T - 30000 + 300)) | sort >exported5.ndjson
checks=$((checks + 1))
cmp -s exported5.ndjson gen5.ndjson || fail "samples pushed over 3 connections differ from the generated ones"
expect_status 2 "$METERCTL" gen --push "$B" --token "$HOST" --connections 0
contains "$err" "--connections 1-64" "gen --connections 0 refused"
# A batch refused (400) stops the other connections at once, though they
# are retrying busy answers (503) and --retry-for would allow 30 s more.
cat >stub.py <<'PY'
import http.server, sys, threading
n = 0
lock = threading.Lock()
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        global n
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with lock:
            n += 1
            code = 400 if n == 3 else 503
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
PY
python3 stub.py >stub.port &
stub=$!
for i in $(seq 50); do [ -s stub.port ] && break; sleep 0.1; done
t_gen=$(date +%s%N)
expect_status 1 "$METERCTL" gen --sandboxes 4 --seconds 600 --batch-seconds 10 \
    --push "http://127.0.0.1:$(cat stub.port)" --token x --connections 4 --retry-for 30
ms=$((($(date +%s%N) - t_gen) / 1000000))
kill $stub 2>/dev/null
checks=$((checks + 1))
[ "$ms" -lt 5000 ] || fail "gen stopped $ms ms after a batch was refused, want under 5 s"
contains "$err" "HTTP 400" "the refused batch is named"

# Export to the last second there is.
expect_status 0 "$METERCTL" --db "$wdb" export --from 0 --to 9999-12-31T23:59:59Z
[ -n "$out" ] || fail "export to 9999-12-31 found nothing"

# --- rollups agree with the samples -------------------------------------
"$METERCTL" --db "$wdb" export --from 0 --to 9999999999 >all.ndjson
want=$(awk -F'"vcpu":' '{ n++ } NF > 1 { split($2, a, ","); v += a[1] } END { printf "%d %.4f\n", n, v }' all.ndjson)
got=$(psql "$db" -qAtc "SELECT sum(samples) || ' ' || round(sum(vcpu_s), 4) FROM usage_hourly")
[ "$got" = "$want" ] || fail "rollups say '$got', the samples '$want'"

# --- the stored samples rate like the generated ones -------------------
books=$(cd "$(dirname "$0")/../pricing/books" && pwd)
expect_status 0 "$METERCTL" rate --price-book "$books/vercel-hobby.json" --usage gen.ndjson
from_file=$out
contains "$from_file" '"kind": "storage"' "rating the generated fleet"
expect_status 0 "$METERCTL" --db "$wdb" rate --price-book "$books/vercel-hobby.json" \
    --from $((T - 20000)) --to $((T - 20000 + 300))
[ "$out" = "$from_file" ] || fail "stored usage rates differently from the same samples in a file"
expect_status 0 "$METERCTL" --db "$wdb" rate --price-book "$books/vercel-hobby.json" \
    --from $((T - 20000)) --to $((T - 20000 + 300)) --account acct-1
contains "$out" '"account_id": "acct-1"' "rating one account"
case "$out" in *'"account_id": "acct-0"'*) fail "--account rated another account" ;; esac

# --- 503 while the database is down, then back ---------------------------
down_dir=$tmp/downdb
mkdir "$down_dir"
(cd "$down_dir" && "$METERCTL" db start >/dev/null 2>&1 && "$METERCTL" migrate >/dev/null)
down_url=$(cd "$down_dir" && "$METERCTL" db url --worker 2>/dev/null)
DOWNKEY=$(cd "$down_dir" && "$METERCTL" keys create --role host --name h 2>/dev/null)
DOWNFIN=$(cd "$down_dir" && "$METERCTL" keys create --role finance --name f 2>/dev/null)
start_meterd down "$down_url"
(cd "$down_dir" && "$METERCTL" db stop >/dev/null)
post $url_down "$DOWNKEY" application/json rows.json -D headers.txt
expect_http 503 "database down"
contains "$(cat headers.txt)" "Retry-After" "503 has Retry-After"
status=$(curl -s -o /dev/null -w '%{http_code}' "$url_down/readyz")
expect_http 503 "readyz with the database down"
# Every route's database failure is the one reply: a read, and a page
# (HTML for a person), are 503 "unavailable" with Retry-After too.
body=$(curl -s -D headers.txt -H "Authorization: Bearer $DOWNFIN" "$url_down/v1/invoices")
status=$(sed -n '1s/^HTTP[^ ]* \([0-9]*\).*/\1/p' headers.txt)
expect_http 503 "GET /v1/invoices with the database down"
contains "$body" '"type":"urn:meter:problem:unavailable"' "a read with the database down"
contains "$body" 'retry later' "a read with the database down says to retry"
contains "$(cat headers.txt)" "Retry-After" "a read's 503 has Retry-After"
body=$(curl -s -D headers.txt -H "Authorization: Bearer $DOWNFIN" "$url_down/invoices")
status=$(sed -n '1s/^HTTP[^ ]* \([0-9]*\).*/\1/p' headers.txt)
expect_http 503 "the page /invoices with the database down"
contains "$(cat headers.txt)" "text/html" "a page's 503 is a page"
contains "$body" "Database unavailable" "a page's 503 says why"
(cd "$down_dir" && "$METERCTL" db start >/dev/null 2>&1)
status=$(curl -s -o /dev/null -w '%{http_code}' "$url_down/readyz")
expect_http 200 "readyz once the database is back"
post $url_down "$DOWNKEY" application/json rows.json
expect_http 200 "ingest once the database is back"

# --- 500 when the database refuses a statement ----------------------------
# A live database that refuses (here a privilege taken from meterd's
# role) is not "unavailable": retrying will not fix it. 500, type
# internal, the server's message in the log and not in the reply.
db_errors() { curl -s "$A/metrics" | awk '$1 == "meter_db_errors_total" { print $2 }'; }
errors_before=$(db_errors)
psql "$db" -qc "REVOKE SELECT ON invoices FROM meter_worker" || fail "revoke"
body=$(curl -s -D headers.txt -H "Authorization: Bearer $FIN" "$A/v1/invoices")
status=$(sed -n '1s/^HTTP[^ ]* \([0-9]*\).*/\1/p' headers.txt)
expect_http 500 "GET /v1/invoices refused by the database"
contains "$body" '"type":"urn:meter:problem:internal"' "a refused statement's problem type"
contains "$body" '"title":"Database error"' "a refused statement's title"
checks=$((checks + 1))
case "$body" in *permission* | *SELECT* | *invoices\ i*) fail "the server's message reached the client: $body" ;; esac
checks=$((checks + 1))
grep -q "Retry-After" headers.txt && fail "a 500 says to retry: $(cat headers.txt)"
checks=$((checks + 1))
grep -q 'error GET /v1/invoices: invoices cannot be read: .*permission denied' "$tmp/a.log" ||
    fail "the refusal is not logged as an error: $(tail -n 3 "$tmp/a.log")"
body=$(curl -s -D headers.txt -H "Authorization: Bearer $FIN" "$A/invoices")
status=$(sed -n '1s/^HTTP[^ ]* \([0-9]*\).*/\1/p' headers.txt)
expect_http 500 "the page /invoices refused by the database"
contains "$(cat headers.txt)" "text/html" "a page's 500 is a page"
contains "$body" "Database error" "a page's 500 says what"
errors_after=$(db_errors)
checks=$((checks + 1))
[ "${errors_after:-0}" -ge $((${errors_before:-0} + 2)) ] ||
    fail "meter_db_errors_total: $errors_before before two refusals, $errors_after after"
psql "$db" -qc "GRANT SELECT ON invoices TO meter_worker" || fail "grant"
status=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $FIN" "$A/v1/invoices")
expect_http 200 "GET /v1/invoices once the privilege is back"

# --- metrics ------------------------------------------------------------
m=$(curl -s "$A/metrics")
# metric NAME{LABELS}: its value in $m, or empty.
metric() { grep -F "$1 " <<<"$m" | sed 's/.* //'; }
n200=$(metric 'meter_requests_total{route="/v1/samples",method="POST",status="200"}')
checks=$((checks + 1))
[ "${n200:-0}" -gt 0 ] || fail "metrics by route and status: no 200 of POST /v1/samples counted"
n401=$(metric 'meter_requests_total{route="/v1/samples",method="POST",status="401"}')
checks=$((checks + 1))
[ "${n401:-0}" -gt 0 ] || fail "metrics by route and status: no 401 counted"
n404=$(metric 'meter_requests_total{route="other",method="",status="404"}')
checks=$((checks + 1))
[ "${n404:-0}" -gt 0 ] || fail "a request of no route is not counted as other"
contains "$m" 'meter_samples_total{outcome="accepted"}' "metrics of samples"
inf=$(metric 'meter_request_seconds_bucket{route="/v1/samples",method="POST",le="+Inf"}')
cnt=$(metric 'meter_request_seconds_count{route="/v1/samples",method="POST"}')
checks=$((checks + 1))
[ -n "$inf" ] && [ "$inf" = "$cnt" ] && [ "$inf" -gt 0 ] ||
    fail "latency histogram of POST /v1/samples: +Inf '$inf', count '$cnt'"
contains "$m" 'meter_batches_in_flight 0' "in-flight gauge"
grep -q "$HOST" "$tmp"/*.log && fail "a token appears in the log"

# --- SIGTERM: exit 0 ----------------------------------------------------
kill -TERM $pid_a
wait $pid_a
rc=$?
checks=$((checks + 1))
[ $rc = 0 ] || fail "meterd exited $rc on SIGTERM"
contains "$(cat "$tmp/a.log")" "meterd stopped" "stop logged"

# No database configured and none running: says so, starts nothing.
mkdir "$tmp/nodb"
(cd "$tmp/nodb" && METER_DATABASE_URL= timeout 20 "$METERD" --listen 127.0.0.1:0 >out 2>err)
rc=$?
checks=$((checks + 1))
[ $rc = 1 ] || fail "meterd without a database exited $rc, want 1"
contains "$(cat "$tmp/nodb/err")" "no database" "meterd without a database says so"
[ -e "$tmp/nodb/var" ] && fail "meterd without a database created var/"

expect_status 2 "$METERD" --listen nonsense
expect_status 2 "$METERD" --threads 0
expect_status 2 "$METERD" --merge-every 3601
contains "$err" "--merge-every '3601'" "a bad --merge-every is named with its value"
expect_status 2 "$METERD" --pack-after 2678401
contains "$err" "--pack-after '2678401'" "a bad --pack-after is named with its value"
expect_status 2 "$METERD" --pack-after -1
contains "$err" "--pack-after '-1'" "a negative --pack-after is named with its value"
expect_status 2 "$METERD" --report-ttl -1
contains "$err" "--report-ttl '-1'" "a bad --report-ttl is named with its value"
for v in 0 500001 -1 10k; do
    expect_status 2 "$METERD" --max-batch-sandboxes "$v"
    contains "$err" "--max-batch-sandboxes '$v' is not a number from 1 to 500000" "a bad --max-batch-sandboxes is named with its value"
done
expect_status 2 env METER_MAX_BATCH_SANDBOXES=none "$METERD"
contains "$err" "--max-batch-sandboxes 'none' is not a number" "a bad METER_MAX_BATCH_SANDBOXES is named with its value"
expect_status 0 "$METERD" --help
contains "$out" "--max-body" "help documents options"

finish
