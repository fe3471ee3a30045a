#!/bin/bash
# Who may do what: every route against every kind of caller (no token,
# a revoked key, host, account A, account B, finance, admin), one table;
# revocation takes effect on the next request; the per-key rate limit
# answers 429 with Retry-After, one key's flood leaving others served.
. "$(dirname "$0")/lib.sh"
with_meterd
ctl() { "$METERCTL" --db "$wdb" "$@"; }
"$METERCTL" --db "$db" migrate >/dev/null || { fail "migrate"; finish; exit; }
books=$(cd "$(dirname "$0")/../pricing/books" && pwd)
ctl books add "$books/e2b-hobby.json" >/dev/null 2>&1 || fail "books add"
month=$(date -u +%Y-%m)
ctl accounts add acct-a --book e2b-hobby --from "$month-01" >/dev/null 2>&1 || fail "accounts add acct-a"
ctl accounts add acct-b --book e2b-hobby --from "$month-01" >/dev/null 2>&1 || fail "accounts add acct-b"
key() { ctl keys create "$@" 2>/dev/null; }
HOST=$(key --role host --name h)
A=$(key --role account --account acct-a --name a)
B=$(key --role account --account acct-b --name b)
FIN=$(key --role finance --name f)
ADMIN=$(key --role admin --name adm)
REVOKED=$(key --role finance --name old)
ctl keys revoke "$(ctl keys list | awk '$NF == "old" { print $1 }')" >/dev/null

start_meterd main "$wdb" --rate-limit 0 || { finish; exit; }
T=$(($(date +%s) - 120))
# Usage of A, the month's draft of A, and its id.
cat >rows.json <<JSON
[{"ts": $T, "account_id": "acct-a", "sandbox_id": "a-1", "state": "running",
  "vcpu": 2, "cpu_used": 1.5, "mem_bytes": 1073741824, "disk_bytes": 0}]
JSON
curl -sf -o /dev/null -X POST -H "Authorization: Bearer $HOST" \
    -H "Content-Type: application/json" --data-binary @rows.json \
    "$url_main/v1/samples" || fail "the first batch"
ctl invoice run --period "$month" --account acct-a >/dev/null 2>&1 || fail "invoice run"
DRAFT=$(ctl invoice list --account acct-a | awk '$3 == "acct-a" { print $1 }')
[ -n "$DRAFT" ] || fail "no draft of acct-a"
printf '{"period": "%s", "account": "acct-a"}' "$month" >run.json

# status CALLER METHOD PATH: the status of one call (body: rows.json for
# POST /v1/samples, run.json for the run).
status() {
    local token=$1 method=$2 path=$3 args=()
    [ -n "$token" ] && args+=(-H "Authorization: Bearer $token")
    case "$path" in
    /v1/samples) args+=(-H "Content-Type: application/json" --data-binary @rows.json) ;;
    /v1/invoices/run) args+=(-H "Content-Type: application/json" --data-binary @run.json) ;;
    esac
    curl -s -o body.out -w '%{http_code}' -X "$method" "${args[@]}" "$url_main$path"
}

callers=(none revoked host acct-a acct-b finance admin)
tokens=("" "$REVOKED" "$HOST" "$A" "$B" "$FIN" "$ADMIN")
usage="/v1/usage?account=acct-a&from=$((T - 3600))&to=$((T + 3600))"
# One row a route: method, path, then the status for each caller above.
# Another account's documents, usage and credits are a 404 (their
# existence is not told); a role that may not call a route, a 403. A
# page without a valid key is a 303 to the sign-in page; a POST to
# /sign-in without the form's own cookie, a 403 (tests/sessions.sh has
# the same calls with a browser's session).
while read -r method path want; do
    read -ra wants <<<"$want"
    for i in "${!callers[@]}"; do
        got=$(status "${tokens[$i]}" "$method" "$path")
        checks=$((checks + 1))
        [ "$got" = "${wants[$i]}" ] ||
            fail "$method $path as ${callers[$i]}: HTTP $got, want ${wants[$i]}: $(head -c 300 body.out)"
    done
done <<TABLE
POST /v1/samples                  401 401 200 403 403 403 403
GET  /v1/invoices                 401 401 403 200 200 200 200
GET  /v1/invoices/$DRAFT          401 401 403 200 404 200 200
GET  $usage                       401 401 403 200 404 200 200
GET  /v1/accounts/acct-a/credits  401 401 403 200 404 200 200
POST /v1/invoices/run             401 401 403 403 403 200 200
GET  /healthz                     200 200 200 200 200 200 200
GET  /readyz                      200 200 200 200 200 200 200
GET  /metrics                     200 200 200 200 200 200 200
GET  /                            303 303 403 303 303 303 303
GET  /sign-in                     200 200 200 200 200 200 200
POST /sign-in                     403 403 403 403 403 403 403
POST /sign-out                    303 303 403 303 303 303 303
GET  /static/dash.css             200 200 200 200 200 200 200
GET  /favicon.ico                 204 204 204 204 204 204 204
GET  /overview                    303 303 403 403 403 200 200
GET  /accounts                    303 303 403 403 403 200 200
GET  /accounts/acct-a             303 303 403 200 404 200 200
GET  /usage                       303 303 403 403 403 200 200
GET  /invoices                    303 303 403 200 200 200 200
GET  /v1/reports/overview         401 401 403 403 403 200 200
GET  /v1/reports/accounts         401 401 403 403 403 200 200
GET  /v1/reports/accounts/acct-a  401 401 403 200 404 200 200
GET  /v1/reports/usage            401 401 403 403 403 200 200
GET  /v1/reports/invoices         401 401 403 200 200 200 200
GET  /v1/admin/accounts           401 401 403 403 403 403 200
POST /v1/admin/accounts           401 401 403 403 403 403 400
GET  /v1/admin/accounts/acct-a    401 401 403 403 403 403 200
PATCH /v1/admin/accounts/acct-a   401 401 403 403 403 403 400
POST /v1/admin/accounts/acct-a/books  401 401 403 403 403 403 400
POST /v1/admin/accounts/acct-a/grants 401 401 403 403 403 403 400
GET  /v1/admin/books              401 401 403 403 403 403 200
POST /v1/admin/books              401 401 403 403 403 403 400
GET  /v1/admin/books/e2b-hobby/versions/1 401 401 403 403 403 403 200
GET  /v1/admin/keys               401 401 403 403 403 403 200
POST /v1/admin/keys               401 401 403 403 403 403 400
DELETE /v1/admin/keys/999999      401 401 403 403 403 403 404
TABLE

# What a 200 holds: A lists its invoice, B's list does not have it.
status "$A" GET /v1/invoices >/dev/null
contains "$(cat body.out)" '"acct-a"' "account A lists its own invoice"
status "$B" GET /v1/invoices >/dev/null
checks=$((checks + 1))
grep -q 'acct-a' body.out && fail "account B's list shows A's invoice: $(cat body.out)"

# --- parameters that are not text: 400 before any statement ---------------
# A path segment or query argument that is not UTF-8 text (PostgreSQL
# refused it, which answered 503 "Database unavailable", a 500 since,
# and counted a database error), or not the shape its route reads, is a 400 naming
# the parameter and the value as sent, on every route that reads one.
db_errors() { curl -s "$url_main/metrics" | awk '$1 == "meter_db_errors_total" { print $2 }'; }
errors_before=$(db_errors)
declare -A tokens_by=([A]="$A" [F]="$FIN" [N]="")
# 150 bytes, shown as the first 100 encoded and "...".
long=$(printf '%%FF%.0s' $(seq 150))
long_shown=$(printf '%%FF%.0s' $(seq 100))...
while read -r who path want needle; do
    got=$(status "${tokens_by[$who]}" GET "$path")
    checks=$((checks + 1))
    [ "$got" = "$want" ] || fail "GET $path: HTTP $got, want $want: $(head -c 300 body.out)"
    contains "$(cat body.out)" "$needle" "GET $path names what it refuses"
done <<TABLE
A /v1/invoices/%FF-000001 400 path segment 'ref' value '%FF-000001'
A /v1/invoices/%FF-000001.html 400 path segment 'ref' value '%FF-000001.html'
A /v1/invoices/2026-00001x 400 path segment 'ref' value '2026-00001x': not an invoice number
A /v1/invoices/x.csv 400 path segment 'ref' value 'x': not an invoice number
F /v1/invoices?account=%FF 400 query parameter 'account' value '%FF'
F /v1/invoices?status=%E2%82 400 query parameter 'status' value '%E2%82'
F /v1/invoices?%FF=1 400 query parameter '%FF' value '1': its name
A /v1/usage?account=%ED%A0%80&from=1&to=2 400 query parameter 'account' value '%ED%A0%80'
A /v1/accounts/%C0%AF/credits 400 path segment 'id' value '%C0%AF'
F /v1/reports/accounts?q=%C0%AF 400 query parameter 'q' value '%C0%AF'
F /v1/reports/accounts?q=a%00b 400 query parameter 'q' value 'a%00b'
F /v1/reports/accounts?q=a%0Ab 400 query parameter 'q' value 'a%0Ab'
F /v1/reports/accounts?q=$long 400 query parameter 'q' value '$long_shown': not UTF-8
A /v1/reports/accounts/%C3%28 400 path segment 'id' value '%C3%28'
F /v1/reports/invoices?account=%F5%80%80%80 400 query parameter 'account' value '%F5%80%80%80'
F /v1/reports/usage?from=%FF 400 query parameter 'from' value '%FF'
F /v1/reports/overview?period=%FF 400 query parameter 'period' value '%FF'
F /accounts?q=%C0%AF 400 query parameter &#39;q&#39; value &#39;%C0%AF&#39;
A /accounts/%FF 400 path segment &#39;id&#39; value &#39;%FF&#39;
A /invoices?account=%FF 400 query parameter &#39;account&#39; value &#39;%FF&#39;
N /sign-in?next=%FF 400 query parameter 'next' value '%FF'
F /v1/reports/accounts?q=caf%C3%A9 200 "q":"café"
TABLE
checks=$((checks + 1))
[ "$(db_errors)" = "$errors_before" ] ||
    fail "refused parameters counted database errors: $errors_before, then $(db_errors)"

# --- revocation takes effect on the next request ---------------------------
K=$(key --role finance --name soon-revoked)
got=$(status "$K" GET /v1/invoices)
checks=$((checks + 1))
[ "$got" = 200 ] || fail "a fresh key: HTTP $got"
ctl keys revoke "$(ctl keys list | awk '$NF == "soon-revoked" { print $1 }')" >/dev/null
got=$(status "$K" GET /v1/invoices)
checks=$((checks + 1))
[ "$got" = 401 ] || fail "the request after revocation: HTTP $got, want 401"

# --- a host key scoped to accounts --------------------------------------------
expect_status 2 ctl keys create --role finance --accounts acct-a --name x
contains "$err" "--accounts is for --role host" "a scope on another role"
expect_status 2 ctl keys create --role host --accounts "acct-a,bad id" --name x
contains "$err" "'bad id'" "a bad account in a scope is named"
SCOPED=$(key --role host --accounts acct-a,acct-c --name scoped)
contains "$(ctl keys list)" "acct-a,acct-c" "the scope listed"
scoped_post() { # FILE: status, body in body.out
    curl -s -o body.out -w '%{http_code}' -X POST -H "Authorization: Bearer $SCOPED" \
        -H "Content-Type: application/json" --data-binary @"$1" "$url_main/v1/samples"
}
cat >scoped_a.json <<JSON
[{"ts": $((T + 1)), "account_id": "acct-a", "sandbox_id": "a-2", "state": "running",
  "vcpu": 1, "cpu_used": 1, "mem_bytes": 1073741824, "disk_bytes": 0}]
JSON
cat >scoped_mixed.json <<JSON
[{"ts": $((T + 2)), "account_id": "acct-a", "sandbox_id": "a-2", "state": "running",
  "vcpu": 1, "cpu_used": 1, "mem_bytes": 1073741824, "disk_bytes": 0},
 {"ts": $((T + 2)), "account_id": "acct-b", "sandbox_id": "b-2", "state": "running",
  "vcpu": 1, "cpu_used": 1, "mem_bytes": 1073741824, "disk_bytes": 0}]
JSON
got=$(scoped_post scoped_a.json)
checks=$((checks + 1))
[ "$got" = 200 ] || fail "a scoped key on its account: HTTP $got: $(cat body.out)"
got=$(scoped_post scoped_mixed.json)
checks=$((checks + 1))
[ "$got" = 403 ] || fail "a scoped key on another account: HTTP $got, want 403"
contains "$(cat body.out)" '"index":1,"field":"account_id","value":"acct-b"' "the sample of another account named"
# Nothing of the refused batch was stored: its acct-a second is new now.
got=$(curl -s -X POST -H "Authorization: Bearer $HOST" -H "Content-Type: application/json" \
    --data-binary @scoped_mixed.json "$url_main/v1/samples")
contains "$got" '"accepted":2' "a refused batch stored nothing"
# The scope is fixed, for host keys only, and audited.
checks=$((checks + 2))
psql "$db" -XAtqc "DELETE FROM host_key_accounts" 2>/dev/null && fail "a scope was changed"
psql "$db" -XAtqc "INSERT INTO host_key_accounts SELECT key_id, 'x' FROM api_keys WHERE name = 'f'" 2>/dev/null &&
    fail "a finance key was scoped"
contains "$(ctl audit)" "key.scope" "a scope audited"

# --- database roles ----------------------------------------------------------
# meterctl and meterd connect as meter_worker ($wdb), which owns nothing
# (migration 0012): the triggers that keep final documents, the audit
# log and the quarantine as they are hold against it, and it can neither
# turn them off nor write the log but through them.
checks=$((checks + 4))
[ "$(psql "$db" -XAtqc "SELECT string_agg(DISTINCT db_user, ',') FROM audit_log WHERE action = 'key.create'")" = meter_worker ] ||
    fail "meterctl's acts not recorded as meter_worker's"
[ "$(psql "$db" -XAtqc "SELECT string_agg(DISTINCT usename, ',') FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'")" = meter_worker ] ||
    fail "meterd not connected as meter_worker"
owner=$(psql "$db" -XAtqc "SELECT current_user")
[ "$(psql "$db" -XAtqc "SELECT string_agg(DISTINCT pg_get_userbyid(relowner), ',') FROM pg_class WHERE relname ~ '^usage_(blocks|packs)_[0-9]{6}\$'")" = "$owner" ] ||
    fail "the partitions meterd made are not the owner's ($owner)"
[ "$(psql "$db" -XAtqc "SELECT count(*) FROM pg_class WHERE relowner = 'meter_worker'::regrole")" = 0 ] ||
    fail "meter_worker owns something"
# refused STATEMENT MESSAGE: the worker's statement fails, saying why.
refused() {
    expect_status 1 psql "$wdb" -XAtq -v ON_ERROR_STOP=1 -c "$1"
    contains "$err" "$2" "the worker's $1"
}
refused "ALTER TABLE invoices DISABLE TRIGGER invoices_immutable" "must be owner of table invoices"
refused "ALTER TABLE audit_log DISABLE TRIGGER USER" "must be owner of table audit_log"
refused "DROP TRIGGER audit_log_append_only ON audit_log" "must be owner of relation audit_log"
refused "ALTER TABLE usage_blocks_quarantined DISABLE TRIGGER ALL" "must be owner of table usage_blocks_quarantined"
refused "SET session_replication_role = replica" "permission denied to set parameter"
refused "INSERT INTO audit_log (actor, action, subject) VALUES ('x', 'forged', 'x')" "permission denied for table audit_log"
refused "SELECT audit('forged', NULL, 'x', '{}')" "permission denied for function audit"
refused "CREATE TABLE shadow (x int)" "permission denied for schema"
refused "CREATE FUNCTION audit_shadow() RETURNS int LANGUAGE sql AS 'SELECT 1'" "permission denied for schema"
# The same statement is the owner's to make (rolled back here): the role
# is what refuses it.
expect_status 0 psql "$db" -XAtq -v ON_ERROR_STOP=1 -c "BEGIN" \
    -c "ALTER TABLE invoices DISABLE TRIGGER invoices_immutable" -c "ROLLBACK"
# The audit triggers write as the owner, and still name the session's
# role and actor.
contains "$(psql "$db" -XAtqc "SELECT db_user || ' ' || actor FROM audit_log WHERE action = 'key.revoke'")" \
    "meter_worker meterctl:" "an act of the worker audited"
# VACUUM is the owner's: usage compact as the worker says so (VACUUM
# itself would only warn and skip), as the owner it compacts.
expect_status 1 ctl usage compact --period "$month"
contains "$err" "cannot vacuum 'usage_blocks_${month/-/}': only the tables' owner may" "usage compact as the worker"
expect_status 0 "$METERCTL" --db "$db" usage compact --period "$month"
contains "$out" "blocks rewritten" "usage compact as the owner"

# Another database, set up as docs/reliability.md tells an operator: an
# owner that is not a superuser, a database it owns, migrated as it;
# the worker's daily work there, and partitions that are the owner's.
ext_owner="test_owner_$$"
ext_db="${dbname}_ext"
extra_cleanup() {
    psql "$base dbname=postgres" -qc "DROP DATABASE IF EXISTS $ext_db WITH (FORCE)" -c "DROP ROLE IF EXISTS $ext_owner" >/dev/null 2>&1
}
psql "$base dbname=postgres" -qc "CREATE ROLE $ext_owner LOGIN" -c "CREATE DATABASE $ext_db OWNER $ext_owner" >/dev/null ||
    fail "the external owner and database"
ext="$base user=$ext_owner dbname=$ext_db"
wext="$wbase dbname=$ext_db"
expect_status 0 "$METERCTL" --db "$ext" migrate
contains "$out" "0012_worker_role.sql" "migrate as an owner that is not a superuser"
expect_status 0 "$METERCTL" --db "$wext" books add "$books/e2b-hobby.json"
expect_status 0 "$METERCTL" --db "$wext" accounts add ext --book e2b-hobby --from "$month-01"
expect_status 0 psql "$wext" -XAtqc "SELECT usage_blocks_partition('2031-01-01')"
checks=$((checks + 2))
[ "$(psql "$ext" -XAtqc "SELECT string_agg(pg_get_userbyid(relowner), ',' ORDER BY relname) FROM pg_class WHERE relname LIKE 'usage_%_203101'")" = "$ext_owner,$ext_owner" ] ||
    fail "the partitions the worker made are not the external owner's"
[ "$(psql "$ext" -XAtqc "SELECT string_agg(db_user || ' ' || action, ',' ORDER BY audit_id) FROM audit_log")" = "meter_worker book.import,meter_worker account.create,meter_worker account.assign" ] ||
    fail "the worker's acts in the external database: $(psql "$ext" -XAtqc "SELECT db_user, action FROM audit_log")"
refused_ext() {
    expect_status 1 psql "$wext" -XAtq -v ON_ERROR_STOP=1 -c "$1"
    contains "$err" "$2" "the worker's $1 in the external database"
}
refused_ext "ALTER TABLE invoices DISABLE TRIGGER invoices_immutable" "must be owner of table invoices"
refused_ext "SET session_replication_role = replica" "permission denied to set parameter"

# --- the per-key rate limit --------------------------------------------------
# One a second in bursts of two: twelve requests in one curl. Taking D
# seconds, they may see D more tokens refilled, so the 200s are from 2
# to 2 + ceil(D) + 1 (one for a refill on the edge), the rest 429, each
# with a Retry-After of 1 or 2 and the problem's type.
start_meterd limited "$wdb" --rate-limit 1 || { finish; exit; }
reqs=()
for i in $(seq 12); do reqs+=(-o "limited.$i" "$url_limited/v1/invoices"); done
t0=$(date +%s%N)
codes=$(curl -s -D limited.hdr -w '%{http_code}\n' -H "Authorization: Bearer $FIN" "${reqs[@]}")
d_ms=$((($(date +%s%N) - t0) / 1000000))
ok=$(grep -c '^200$' <<<"$codes")
limited=$(grep -c '^429$' <<<"$codes")
most=$((2 + (d_ms + 999) / 1000 + 1))
echo "twelve requests at 1/s (bursts of 2) in $d_ms ms: $ok 200s, $limited 429s (200s allowed: 2 to $most)"
checks=$((checks + 2))
[ "$ok" -ge 2 ] && [ "$ok" -le "$most" ] && [ $((ok + limited)) = 12 ] ||
    fail "twelve requests at 1/s (bursts of 2) in $d_ms ms: $ok 200s, $limited 429s; want 2 to $most 200s, the rest 429"
[ "$limited" -ge 1 ] || fail "no request of twelve was limited"
# Each response's status and Retry-After (none: -), one a line.
tr -d '\r' <limited.hdr | awk '
    /^HTTP\// { if (n) print s, r; s = $2; r = "-"; n++ }
    tolower($1) == "retry-after:" { r = $2 }
    END { if (n) print s, r }' >limited.txt
checks=$((checks + 2))
[ "$(wc -l <limited.txt)" = 12 ] || fail "twelve responses' headers, got $(wc -l <limited.txt): $(cat limited.hdr)"
bad=$(awk '$1 == 429 && !($2 == 1 || $2 == 2)' limited.txt)
[ -z "$bad" ] || fail "429s without a Retry-After of 1 or 2: $(tr '\n' ';' <<<"$bad")"
retry=$(awk '$1 == 429 { r = $2 } END { print r }' limited.txt)
last429=$(grep -n '^429$' <<<"$codes" | tail -1 | cut -d: -f1)
contains "$(cat "limited.${last429:-1}")" "rate-limited" "the problem's type"
# Another key is not limited by the first one's flood.
got=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $A" "$url_limited/v1/invoices")
checks=$((checks + 1))
[ "$got" = 200 ] || fail "another key while the first is limited: HTTP $got"
# Refilled after the Retry-After (of the last 429).
case "$retry" in 1 | 2) ;; *) retry=2 ;; esac
sleep "$retry"
got=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $FIN" "$url_limited/v1/invoices")
checks=$((checks + 1))
[ "$got" = 200 ] || fail "after Retry-After: HTTP $got"
# The limit is counted in the metrics.
contains "$(curl -s "$url_limited/metrics")" 'status="429"' "429s in the metrics"

finish
