#!/bin/bash
# Usage alerts and spend limits (issue 25) through the real meterd: rules
# added by an admin over HTTP, evaluated by the background thread within
# seconds of the usage (--alert-every 1), each percent raised once per
# period as a crossing and an alert.triggered event; the boundary (a
# value equal to the limit crosses it, one a millionth below does not);
# an amount estimated from the rollups equal to the invoice run's draft
# on a per-second book; the account's alerts over HTTP for a host, the
# account and finance, and on its page; usage on no book told once as
# usage.unbilled; bad rules named.
. "$(dirname "$0")/lib.sh"
books=$(cd "$(dirname "$0")/../pricing/books" && pwd)
with_meterd
ctl() { "$METERCTL" --db "$wdb" "$@"; }
"$METERCTL" --db "$db" migrate >/dev/null || { fail "migrate"; finish; exit; }
month=$(date -u +%Y-%m)
jq 'del(.grants) | .effective_from = "2025-01-01"' "$books/e2b-hobby.json" >e2b.json
ctl books add e2b.json >/dev/null || fail "books add"
ctl accounts add acme --book e2b-hobby --from "$month-01" >/dev/null || fail "acme"
ctl accounts add beta --book e2b-hobby --from "$month-01" >/dev/null || fail "beta"
ADMIN=$(ctl keys create --role admin --name ad 2>/dev/null)
FIN=$(ctl keys create --role finance --name f 2>/dev/null)
HOST=$(ctl keys create --role host --name h 2>/dev/null)
ACME=$(ctl keys create --role account --account acme --name a 2>/dev/null)
BETA=$(ctl keys create --role account --account beta --name b 2>/dev/null)
start_meterd a "$wdb" --alert-every 1 --merge-every 1 || { finish; exit; }
A=$url_a

# post KEY PATH BODY: $code and body.txt.
post() { code=$(curl -s -o body.txt -w '%{http_code}' -H "Authorization: Bearer $1" -H 'Content-Type: application/json' --data-binary "$3" "$A$2"); }
get() { code=$(curl -s -o body.txt -w '%{http_code}' -H "Authorization: Bearer $1" "$A$2"); }
want() {
    checks=$((checks + 1))
    if [ "$code" != "$1" ]; then fail "$2: HTTP $code, want $1: $(cat body.txt)"
    elif [ -n "${3:-}" ] && ! jq -e "$3" body.txt >/dev/null 2>&1; then fail "$2: $3 does not hold: $(cat body.txt)"; fi
}

# --- rules -------------------------------------------------------------------
post "$ADMIN" /v1/admin/alerts '{"account_id": "acme", "name": "budget", "metric": "amount", "threshold": "0.1", "currency": "USD", "percents": [50, 100]}'
want 201 "an amount rule" '.rule_id > 0 and .percents == [50, 100]'
budget=$(jq .rule_id body.txt)
# Every account: exactly the vCPU-hours of 1200 s of 8 vCPU, truncated
# to 6 decimals (2.666666), and a millionth more.
post "$ADMIN" /v1/admin/alerts '{"name": "vcpu at", "metric": "vcpu_hours", "threshold": "2.666666"}'
want 201 "a rule of every account" '.percents == [100] and .account_id == null'
post "$ADMIN" /v1/admin/alerts '{"name": "vcpu above", "metric": "vcpu_hours", "threshold": "2.666667"}'
want 201 "a rule a millionth higher"
post "$ADMIN" /v1/admin/alerts '{"account_id": "acme", "name": "euros", "metric": "amount", "threshold": "1", "currency": "EUR"}'
want 201 "a rule in another currency"
post "$ADMIN" /v1/admin/alerts '{"name": "x", "metric": "cpu", "threshold": "1"}'
want 400 "an unknown metric" '.errors[0].field == "metric"'
post "$ADMIN" /v1/admin/alerts '{"name": "x", "metric": "amount", "threshold": "1"}'
want 400 "an amount without currency" '.errors[0].field == "currency"'
post "$ADMIN" /v1/admin/alerts '{"name": "x", "metric": "vcpu_hours", "threshold": "1", "currency": "USD"}'
want 400 "a quantity with a currency" '.errors[0].field == "currency"'
post "$ADMIN" /v1/admin/alerts '{"name": "x", "metric": "vcpu_hours", "threshold": "0"}'
want 400 "threshold 0" '.errors[0].field == "threshold"'
post "$ADMIN" /v1/admin/alerts '{"name": "x", "metric": "vcpu_hours", "threshold": "1", "percents": [0]}'
want 400 "percent 0" '.errors[0].field == "percents"'
post "$ADMIN" /v1/admin/alerts '{"name": "x", "metric": "vcpu_hours", "threshold": "1", "percents": [1001]}'
want 400 "percent 1001" '.errors[0].field == "percents"'
post "$ADMIN" /v1/admin/alerts '{"name": "x", "metric": "vcpu_hours", "threshold": "1", "percents": [80, 100, 80]}'
want 400 "a percent given twice" '.errors[0].field == "percents" and .errors[0].value == "80" and (.errors[0].reason | test("twice"))'
post "$ADMIN" /v1/admin/alerts '{"name": "x", "metric": "vcpu_hours", "threshold": "1000000", "percents": [1, 1000]}'
want 201 "percents 1 and 1000, the bounds" '.percents == [1, 1000]'
code=$(curl -s -o body.txt -w '%{http_code}' -X DELETE -H "Authorization: Bearer $ADMIN" "$A/v1/admin/alerts/$(jq .rule_id body.txt)")
want 200 "the bounds' rule removed"
post "$ADMIN" /v1/admin/alerts '{"account_id": "nobody", "name": "x", "metric": "vcpu_hours", "threshold": "1"}'
want 404 "a rule of no account"
post "$FIN" /v1/admin/alerts '{"name": "x", "metric": "vcpu_hours", "threshold": "1"}'
want 403 "finance adds no rule"
get "$ADMIN" /v1/admin/alerts
want 200 "the rules listed" '[.items[].name] == ["budget", "vcpu at", "vcpu above", "euros"]'

# --- usage, evaluated ----------------------------------------------------------
# sandbox ACCOUNT ID START SECONDS: 8 vCPU and 4 GiB running.
sandbox() {
    printf '{"account_id":"%s","sandbox_id":"%s","start":%d,"seconds":%d,"state":"running","vcpu":8,"cpu_used":4,"mem_bytes":4294967296,"disk_bytes":0}' "$@"
}
# Whole minutes of this month, an hour ago at most.
now=$(date -u +%s)
start=$(((now - 3600) / 60 * 60))
month_start=$(date -u -d "$month-01" +%s)
[ "$start" -lt "$month_start" ] && start=$month_start
send() {
    local c
    c=$(curl -s -o post.out -w '%{http_code}' -H "Authorization: Bearer $HOST" \
        -H 'Content-Type: application/json' --data-binary "$1" "$A/v1/samples")
    checks=$((checks + 1))
    [ "$c" = 200 ] || fail "posting: $c $(cat post.out)"
}
# until JQ: polls acme's alerts until JQ holds (up to 20 s).
until_alerts() {
    local i
    for i in $(seq 1 100); do
        get "$ACME" /v1/accounts/acme/alerts
        jq -e "$1" body.txt >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    fail "$2: $1 never held: $(cat body.txt)"
}
# 600 s: 8 x 0.000014 x 600 + 4 x 0.0000045 x 600 = 0.078, 0.08 USD.
send "{\"sandboxes\":[$(sandbox acme a-1 "$start" 600)]}"
until_alerts '.alerts[] | select(.name == "budget") | .crossed | length == 1' "50% of the budget"
checks=$((checks + 1))
jq -e '(.alerts[] | select(.name == "budget") | .value == "0.080000" and .crossed[0].percent == 50)
    and (.alerts[] | select(.name == "vcpu at") | .value == "1.333333" and .crossed == [])
    and (.alerts[] | select(.name == "euros") | .value == null and (.why_no_value | test("USD")))' body.txt >/dev/null ||
    fail "after 600 s: $(cat body.txt)"
# 600 s more: 0.16 USD, and 2.666666 vCPU-hours.
send "{\"sandboxes\":[$(sandbox acme a-1 $((start + 600)) 600)]}"
until_alerts '.alerts[] | select(.name == "vcpu at") | .crossed | length == 1' "the vCPU limit reached exactly"
until_alerts '.alerts[] | select(.name == "budget") | .crossed | length == 2' "100% of the budget"
sleep 2.5 # two more evaluations
get "$ACME" /v1/accounts/acme/alerts
checks=$((checks + 1))
jq -e '(.alerts[] | select(.name == "budget") | .value == "0.160000" and ([.crossed[].percent] == [50, 100]))
    and (.alerts[] | select(.name == "vcpu at") | .value == "2.666666" and .crossed[0].value == "2.666666")
    and (.alerts[] | select(.name == "vcpu above") | .crossed == [])' body.txt >/dev/null ||
    fail "after 1200 s: $(cat body.txt)"
# Raised once each: the crossings and the events.
checks=$((checks + 2))
[ "$(psql "$db" -XAtc "SELECT count(*) FROM alert_crossings WHERE account_id = 'acme'")" = 3 ] ||
    fail "crossings: $(psql "$db" -XAtc "SELECT rule_id, percent FROM alert_crossings")"
[ "$(psql "$db" -XAtc "SELECT string_agg((payload->>'name') || ' ' || (payload->>'percent'), ',' ORDER BY event_pk) FROM webhook_events WHERE type = 'alert.triggered'")" = "budget 50,budget 100,vcpu at 100" ] ||
    fail "alert.triggered events: $(psql "$db" -XAtc "SELECT payload FROM webhook_events WHERE type = 'alert.triggered'")"
# The estimate is the draft on a per-second book.
ctl invoice run --period "$month" --account acme >/dev/null 2>&1 || fail "invoice run"
checks=$((checks + 1))
[ "$(psql "$db" -XAtc "SELECT total FROM invoices WHERE account_id = 'acme'")" = 0.16 ] ||
    fail "the draft differs from the alert's estimate: $(psql "$db" -XAtc "SELECT total FROM invoices WHERE account_id = 'acme'")"

# --- who reads them --------------------------------------------------------------
get "$HOST" /v1/accounts/acme/alerts
want 200 "a host reads an account's alerts" '.account_id == "acme" and (.alerts | length) == 4'
get "$FIN" /v1/accounts/acme/alerts
want 200 "finance reads them"
get "$BETA" /v1/accounts/acme/alerts
want 404 "another account's"
get "$BETA" /v1/accounts/beta/alerts
want 200 "beta's own: the rules of every account" '[.alerts[].name] == ["vcpu at", "vcpu above"] and ([.alerts[].value] == ["0.000000", "0.000000"])'
get "$FIN" /v1/accounts/nobody/alerts
want 404 "no such account"
# A host key limited to acme reads acme's alerts, not beta's.
SCOPED=$(ctl keys create --role host --name s --accounts acme 2>/dev/null)
get "$SCOPED" /v1/accounts/acme/alerts
want 200 "a scoped host key, its account"
get "$SCOPED" /v1/accounts/beta/alerts
want 404 "a scoped host key, another account"
html=$(curl -s -H "Authorization: Bearer $FIN" "$A/accounts/acme?period=$month")
contains "$html" "Usage alerts this month" "the account page's alerts"
contains "$html" "50% at " "the page shows a crossing"
contains "$html" '<td data-key="metric">the amount this month</td>' "an amount rule in words"
contains "$html" '<td data-key="metric">vCPU-hours</td>' "a quantity rule in words"

# --- usage on no book, told once -------------------------------------------------
send "{\"sandboxes\":[$(sandbox gamma g-1 "$start" 60)]}"
for i in $(seq 1 100); do
    [ "$(psql "$db" -XAtc "SELECT count(*) FROM webhook_events WHERE type = 'usage.unbilled'")" = 1 ] && break
    sleep 0.2
done
send "{\"sandboxes\":[$(sandbox gamma g-1 $((start + 60)) 60)]}"
sleep 2.5
checks=$((checks + 1))
[ "$(psql "$db" -XAtc "SELECT account_id || ' ' || (payload->>'why') FROM webhook_events WHERE type = 'usage.unbilled'")" = "gamma on no price book" ] ||
    fail "usage.unbilled: $(psql "$db" -XAtc "SELECT account_id, payload FROM webhook_events WHERE type = 'usage.unbilled'")"

# --- removed ----------------------------------------------------------------------
code=$(curl -s -o body.txt -w '%{http_code}' -X DELETE -H "Authorization: Bearer $ADMIN" "$A/v1/admin/alerts/$budget")
want 200 "a rule removed"
code=$(curl -s -o body.txt -w '%{http_code}' -X DELETE -H "Authorization: Bearer $ADMIN" "$A/v1/admin/alerts/$budget")
want 404 "removed twice"
get "$ACME" /v1/accounts/acme/alerts
want 200 "without the removed rule" '[.alerts[].name] == ["vcpu at", "vcpu above", "euros"]'
checks=$((checks + 1))
[ "$(psql "$db" -XAtc "SELECT string_agg(action, ',' ORDER BY audit_id) FROM audit_log WHERE action LIKE 'alert.%'")" = "alert.add,alert.add,alert.add,alert.add,alert.add,alert.remove,alert.remove" ] ||
    fail "the rules' audit: $(psql "$db" -XAtc "SELECT action FROM audit_log WHERE action LIKE 'alert.%'")"
finish
