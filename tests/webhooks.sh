#!/bin/bash
# Webhooks end to end (docs/webhooks.md): a receiver on loopback that
# refuses the first two tries of each event (500) and records every
# request; billing's events caused with the real binaries
# (invoice.run_failed for an account whose book has no egress price,
# invoice.finalized, invoice.voided); then checked: every event arrives,
# signed (the HMAC recomputed here), with a unique id, in order per
# account, retried with its attempts visible; and a meterd killed (-9)
# while it sends, restarted, still delivers everything (duplicates
# allowed, same id). Also the admin routes and the audit log.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { fail "python3 not found"; finish; exit; }
books=$(cd "$(dirname "$0")/../pricing/books" && pwd)
with_meterd
ctl() { "$METERCTL" --db "$wdb" "$@"; }

"$METERCTL" --db "$db" migrate >/dev/null || { fail "migrate"; finish; exit; }
jq 'del(.grants) | .effective_from = "2025-01-01"' "$books/e2b-hobby.json" >book.json
ctl books add book.json >/dev/null || fail "books add"
for a in acme leaky; do
    ctl accounts add $a --book e2b-hobby --from 2026-01-01 >/dev/null || fail "accounts add $a"
done
HOST=$(ctl keys create --role host --name h 2>/dev/null)
ADMIN=$(ctl keys create --role admin --name ad 2>/dev/null)

# --- the receiver -------------------------------------------------------------
# Refuses each event's first two tries at each path; while the file "hold" exists, a
# request waits (meterd is mid-send) until it is removed, then is
# refused. Each request is a line of got.ndjson.
cat >receiver.py <<'PY'
import http.server, json, os, sys, threading, time
lock = threading.Lock()
tries = {}
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        eid = self.headers.get("Webhook-Id", "")
        held = os.path.exists("hold")
        with lock:
            tries[self.path, eid] = tries.get((self.path, eid), 0) + 1
            n = tries[self.path, eid]
        code = 500 if n <= 2 or held or self.path == "/refuse" else 200
        rec = {"path": self.path, "id": eid, "try": n, "code": code,
               "ts": self.headers.get("Webhook-Timestamp", ""),
               "sig": self.headers.get("Webhook-Signature", ""),
               "held": held, "body": body.decode()}
        with lock, open("got.ndjson", "a") as f:
            f.write(json.dumps(rec) + "\n")
        while held and os.path.exists("hold"):
            time.sleep(0.05)
        try:
            self.send_response(code)
            self.send_header("Content-Length", "0")
            self.end_headers()
        except OSError:
            pass
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
open("port.tmp", "w").write(str(s.server_address[1]))
os.rename("port.tmp", "port")
s.serve_forever()
PY
python3 receiver.py 2>receiver.log &
pids+=($!)
for i in $(seq 1 50); do [ -s port ] && break; sleep 0.1; done
[ -s port ] || { fail "the receiver did not start: $(cat receiver.log)"; finish; exit; }
R=http://127.0.0.1:$(cat port)

expect_status 0 ctl webhooks add "$R/hook"
SECRET=$out
contains "$err" "its secret is shown once" "the secret announced"
checks=$((checks + 1))
[[ "$SECRET" =~ ^whsec_[A-Za-z0-9+/]{43}=$ ]] || fail "not a secret: '$SECRET'"
# Bad arguments are named.
expect_status 2 ctl webhooks add "$R/x" --events invoice.finalized,invoice.paid
contains "$err" "'invoice.paid'" "an unknown type named"
expect_status 2 ctl webhooks add "ftp://x"
contains "$err" "'ftp://x' is not an http or https URL" "a bad URL named"
expect_status 2 ctl webhooks add "$R/x" --secret whsec_short
# An endpoint that refuses everything, for voids only: removed later, its
# pending deliveries are then given up (failed).
expect_status 0 ctl webhooks add "$R/refuse" --events invoice.voided \
    --secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
contains "$out" "webhook 2 added" "a given secret"
# Retries fast: the waits (and the day) divided by 1000.
hooks=(--webhook-every 1 --webhook-timeout 2 --webhook-backoff-divisor 1000)
start_meterd a "$wdb" --max-age 36500 "${hooks[@]}" || { finish; exit; }

# Over HTTP, for admins: one listening to alerts only gets nothing here.
code=$(curl -s -o hook.out -w '%{http_code}' -H "Authorization: Bearer $ADMIN" \
    -H 'Content-Type: application/json' \
    --data '{"url": "'"$R"'/alerts", "event_types": ["alert.triggered"]}' \
    "$url_a/v1/admin/webhooks")
checks=$((checks + 1))
[ "$code" = 201 ] || fail "POST /v1/admin/webhooks: $code $(cat hook.out)"
contains "$(cat hook.out)" '"secret":"whsec_' "the secret answered once"
code=$(curl -s -o hook.out -w '%{http_code}' -H "Authorization: Bearer $ADMIN" \
    -H 'Content-Type: application/json' --data '{"url": "'"$R"'/x", "event_types": ["nope"]}' \
    "$url_a/v1/admin/webhooks")
checks=$((checks + 1))
[ "$code" = 400 ] || fail "an unknown type over HTTP: $code"
contains "$(cat hook.out)" "event_types 'nope'" "the unknown type named"
curl -s -H "Authorization: Bearer $ADMIN" "$url_a/v1/admin/webhooks" >hooks.json
checks=$((checks + 1))
[ "$(jq '.webhooks | length' hooks.json)" = 3 ] || fail "three webhooks: $(cat hooks.json)"
grep -q whsec_ hooks.json && fail "a secret listed: $(cat hooks.json)"

# --- events ------------------------------------------------------------------
# An hour of acme; leaky sends egress, which its book cannot price.
JAN=1767225600
awk -v t=$JAN 'BEGIN { printf "{\"sandboxes\":[{\"account_id\":\"acme\",\"sandbox_id\":\"a-1\",\"start\":%d,\"seconds\":3600,\"state\":\"running\",\"vcpu\":8,\"cpu_used\":7.5,\"mem_bytes\":4294967296,\"disk_bytes\":0},{\"account_id\":\"leaky\",\"sandbox_id\":\"l-1\",\"start\":%d,\"seconds\":600,\"state\":\"running\",\"vcpu\":1,\"cpu_used\":1,\"mem_bytes\":0,\"disk_bytes\":0,\"egress_bytes\":1000000}]}", t, t }' >jan.json
code=$(curl -s -o post.out -w '%{http_code}' -H "Authorization: Bearer $HOST" \
    -H 'Content-Type: application/json' --data-binary @jan.json "$url_a/v1/samples")
checks=$((checks + 1))
[ "$code" = 200 ] || fail "posting January: $code $(cat post.out)"

ctl invoice run --period 2026-01 >/dev/null 2>&1        # leaky: run_failed
ctl invoice run --period 2026-01 --finalize >/dev/null 2>&1 # acme: finalized; leaky: run_failed
# final_invoice: acme's final invoice (not a credit note).
final_invoice() {
    psql "$db" -XAtc "SELECT number FROM invoices WHERE account_id = 'acme' AND kind = 'invoice' AND status = 'final' ORDER BY number DESC LIMIT 1"
}
num=$(final_invoice)
[ -n "$num" ] || fail "acme's invoice was not finalized"
expect_status 0 ctl invoice void "$num" --reason "wrong rates"  # acme: voided

# events_in_db: the events, in order, one "seq id type account" a line.
events_in_db() {
    psql "$db" -XAtF' ' -c "SELECT event_pk, event_id, type, coalesce(account_id, '-') FROM webhook_events ORDER BY event_pk"
}
# wait_delivered N: until every delivery to /hook is delivered (at most N s).
wait_delivered() {
    for i in $(seq 1 $(($1 * 5))); do
        [ "$(psql "$db" -XAtc "SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = 1 AND delivered_at IS NULL")" = 0 ] && return 0
        sleep 0.2
    done
    fail "deliveries to /hook still pending after $1 s: $(ctl webhooks deliveries --endpoint 1)"
}
wait_delivered 30
events_in_db >events1.txt
# Each account's, in the order they happened.
checks=$((checks + 1))
[ "$(awk '{ print $4 "/" $3 }' events1.txt | sort -s -t/ -k1,1 | tr '\n' ' ')" = \
    "acme/invoice.finalized acme/invoice.voided leaky/invoice.run_failed leaky/invoice.run_failed " ] ||
    fail "the events written: $(cat events1.txt)"
# The payloads: amounts as strings, the failure's reason.
checks=$((checks + 1))
psql "$db" -XAtc "SELECT payload FROM webhook_events WHERE type = 'invoice.finalized'" |
    jq -e --arg n "$num" '.number == $n and .account == "acme" and .period == "2026-01" and .total == "0.47" and .currency == "USD" and (.sha256 | length) == 64' >/dev/null ||
    fail "the finalized payload: $(psql "$db" -XAtc "SELECT payload FROM webhook_events WHERE type = 'invoice.finalized'")"
checks=$((checks + 1))
psql "$db" -XAtc "SELECT payload FROM webhook_events WHERE type = 'invoice.voided'" |
    jq -e --arg n "$num" '.number == $n and (.credit_note | length) > 0 and .reason == "wrong rates"' >/dev/null ||
    fail "the voided payload"
checks=$((checks + 1))
psql "$db" -XAtc "SELECT payload FROM webhook_events WHERE type = 'invoice.run_failed' LIMIT 1" |
    jq -e '.account == "leaky" and .period == "2026-01" and (.error | test("egress"))' >/dev/null ||
    fail "the run_failed payload: $(psql "$db" -XAtc "SELECT payload FROM webhook_events WHERE type = 'invoice.run_failed' LIMIT 1")"
# Attempts visible: each refused twice, then delivered on the third.
expect_status 0 ctl webhooks deliveries --endpoint 1
contains "$out" "delivered 3" "three attempts each"
checks=$((checks + 1))
[ "$(echo "$out" | awk 'NR > 1 && $5 == "delivered" && $6 == 3' | wc -l)" = 4 ] ||
    fail "four deliveries in three attempts: $out"
# The refusing endpoint got the void only; removed, it is given up.
expect_status 0 ctl webhooks remove 2
expect_status 0 ctl webhooks deliveries --failed
contains "$out" "endpoint removed" "given up with its endpoint"
contains "$out" "invoice.voided" "the void given up"
curl -s -H "Authorization: Bearer $ADMIN" "$url_a/v1/admin/webhooks/deliveries?endpoint=1" >del.json
checks=$((checks + 1))
[ "$(jq '[.deliveries[] | select(.state == "delivered" and .attempts == 3)] | length' del.json)" = 4 ] ||
    fail "the deliveries over HTTP: $(cat del.json)"
code=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE -H "Authorization: Bearer $ADMIN" "$url_a/v1/admin/webhooks/3")
checks=$((checks + 1))
[ "$code" = 200 ] || fail "DELETE /v1/admin/webhooks/3: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE -H "Authorization: Bearer $ADMIN" "$url_a/v1/admin/webhooks/3")
checks=$((checks + 1))
[ "$code" = 404 ] || fail "DELETE twice: $code"

# --- a meterd killed while it sends ---------------------------------------
# The receiver holds the next request; meterd is killed (-9) while it
# waits for the answer, and started again: the lease it held runs out
# (10 deliveries x 2 s + 5 s) and the event is sent again.
touch hold
ctl invoice run --period 2026-01 --finalize >/dev/null 2>&1 # acme: finalized again; leaky: run_failed
for i in $(seq 1 100); do grep -q '"held": true' got.ndjson 2>/dev/null && break; sleep 0.1; done
checks=$((checks + 1))
grep -q '"held": true' got.ndjson || fail "no request held"
kill -9 "$pid_a"
wait "$pid_a" 2>/dev/null
rm -f hold
start_meterd b "$wdb" "${hooks[@]}" || { finish; exit; }
num2=$(final_invoice)
expect_status 0 ctl invoice void "$num2" --reason "again"
wait_delivered 60

# --- what the receiver got -------------------------------------------------
events_in_db >events.txt
python3 - "$SECRET" events.txt got.ndjson >check.out 2>&1 <<'PY' || fail "$(cat check.out)"
import base64, hashlib, hmac, json, sys
secret, events_file, got_file = sys.argv[1:]
key = base64.b64decode(secret[len("whsec_"):])
events = [l.split() for l in open(events_file)]
got = [json.loads(l) for l in open(got_file)]
ids = [e[1] for e in events]
assert len(set(ids)) == len(ids), "event ids not unique"
bad = []
accepted = []
for g in got:
    if g["path"] != "/hook":
        continue
    body = json.loads(g["body"])
    signed = ("%s.%s.%s" % (g["id"], g["ts"], g["body"])).encode()
    want = "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    if not hmac.compare_digest(want, g["sig"]):
        bad.append("bad signature on %s try %d" % (g["id"], g["try"]))
    if body["id"] != g["id"]:
        bad.append("Webhook-Id %s, body id %s" % (g["id"], body["id"]))
    if set(body) != {"id", "type", "created", "account", "data"}:
        bad.append("body members %s" % sorted(body))
    if g["code"] == 200:
        accepted.append((body["account"], body["id"], body["type"]))
first = []
for a in accepted:
    if a[1] not in [f[1] for f in first]:
        first.append(a)
missing = set(ids) - {a[1] for a in accepted}
if missing:
    bad.append("never accepted: %s" % sorted(missing))
for acct in {e[3] for e in events}:
    want = [e[1] for e in events if e[3] == acct]
    have = [a[1] for a in first if a[0] == acct]
    if want != have:
        bad.append("order of %s: sent %s, written %s" % (acct, have, want))
if bad:
    sys.exit("\n".join(bad))
print("%d events, %d requests, %d accepted" % (len(ids), len(got), len(accepted)))
PY
checks=$((checks + 1))
[ "$(wc -l <events.txt)" = 7 ] || fail "seven events: $(cat events.txt)"
# The held event was sent again after the kill, same id.
held=$(jq -r 'select(.held) | .id' got.ndjson | head -1)
checks=$((checks + 1))
[ "$(jq -r --arg id "$held" 'select(.id == $id and .code == 200) | .id' got.ndjson | head -1)" = "$held" ] ||
    fail "the event held at the kill never delivered: $held"

# --- a refused event holds back its account's later ones ----------------------
# Each refusal moves the later events' next try to the refused one's
# (webhooks.c), so that a claim's scan by due time skips them.
expect_status 0 ctl webhooks add "$R/refuse" --events alert.triggered
held_id=$(echo "$out $err" | grep -o 'webhook [0-9]*' | cut -d' ' -f2)
psql "$db" -XAtq -c "WITH ev AS (INSERT INTO webhook_events (type, account_id, payload) SELECT 'alert.triggered', 'acme', jsonb_build_object('n', g) FROM generate_series(1, 3) g RETURNING event_pk) INSERT INTO webhook_deliveries (endpoint_id, event_pk, account_id) SELECT $held_id, event_pk, 'acme' FROM ev" >/dev/null
behind() {
    psql "$db" -XAtc "SELECT count(*) FILTER (WHERE s.event_pk > h.event_pk AND s.next_attempt_at >= h.next_attempt_at AND s.attempts = 0) || ' ' || count(*) FILTER (WHERE s.event_pk > h.event_pk) FROM webhook_deliveries h JOIN webhook_deliveries s USING (endpoint_id, account_id) WHERE h.endpoint_id = $held_id AND h.attempts > 0 AND h.event_pk = (SELECT min(event_pk) FROM webhook_deliveries WHERE endpoint_id = $held_id)"
}
for i in $(seq 1 50); do [ "$(behind)" = "2 2" ] && break; sleep 0.1; done
checks=$((checks + 1))
[ "$(behind)" = "2 2" ] ||
    fail "the later events of a refused one, waiting no earlier than it and untried (of 2): $(behind)"
expect_status 0 ctl webhooks remove "$held_id"

# --- audited -------------------------------------------------------------------
audit=$(psql "$db" -XAtc "SELECT string_agg(action || ' ' || subject || ' ' || actor, ', ' ORDER BY audit_id) FROM audit_log WHERE action LIKE 'webhook.%'")
contains "$audit" "webhook.create webhook 1 meterctl:" "meterctl's add audited"
contains "$audit" "webhook.remove webhook 2 meterctl:" "meterctl's remove audited"
contains "$audit" "webhook.create webhook 3 meterd:key" "the admin's POST audited"
contains "$audit" "webhook.remove webhook 3 meterd:key" "the admin's DELETE audited"
checks=$((checks + 1))
psql "$db" -XAtc "SELECT detail FROM audit_log WHERE action LIKE 'webhook.%'" | grep -q whsec_ &&
    fail "a secret in the audit log"
finish
