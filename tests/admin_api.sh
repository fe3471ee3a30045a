#!/bin/bash
# The management API (issue 25) through the real meterd: price books
# uploaded, listed and read back; accounts created (with metadata and an
# external id), listed by pages, read, updated; put on a book from a
# date and taken off it (billing stops there, and the usage after is
# named as not billed); credit grants; API keys created, used, listed
# and revoked; Idempotency-Key replays and conflicts; bad input named;
# every change audited as done by the admin's key; and meterctl's
# accounts list|show|end and books list.
. "$(dirname "$0")/lib.sh"
books=$(cd "$(dirname "$0")/../pricing/books" && pwd)
with_meterd
ctl() { "$METERCTL" --db "$wdb" "$@"; }
"$METERCTL" --db "$db" migrate >/dev/null || { fail "migrate"; finish; exit; }
ADMIN=$(ctl keys create --role admin --name ad)
FIN=$(ctl keys create --role finance --name f)
HOST=$(ctl keys create --role host --name h)
admin_id=$(psql "$db" -XAtc "SELECT key_id FROM api_keys WHERE name = 'ad'")
start_meterd a "$wdb" --max-age 36500 --report-ttl 0 || { finish; exit; }
A=$url_a

# api METHOD PATH [BODY [HEADER...]]: $code, the body in $body, the
# headers in $headers.
api() {
    local m=$1 p=$2 data=${3-} args=()
    shift 3 2>/dev/null || shift $#
    [ -n "$data" ] && args=(-H 'Content-Type: application/json' --data-binary "$data")
    code=$(curl -s -D hdr.txt -o body.txt -w '%{http_code}' -X "$m" \
        -H "Authorization: Bearer ${KEY:-$ADMIN}" "${args[@]}" "$@" "$A$p")
    body=$(cat body.txt)
    headers=$(cat hdr.txt)
}
# want CODE WHAT [JQ]: the last answer's status, and jq -e JQ of its body.
want() {
    checks=$((checks + 1))
    if [ "$code" != "$1" ]; then
        fail "$2: HTTP $code, want $1: $body"
    elif [ -n "${3:-}" ] && ! jq -e "$3" body.txt >/dev/null 2>&1; then
        fail "$2: $3 does not hold: $body"
    fi
}

# --- price books -------------------------------------------------------------
jq 'del(.grants) | .effective_from = "2025-01-01"' "$books/e2b-hobby.json" >e2b.json
api POST /v1/admin/books "@e2b.json"
want 201 "a book uploaded" '.id == "e2b-hobby" and .version == 1 and .created == true and .currency == "USD" and .effective_from == "2025-01-01"'
api POST /v1/admin/books "@e2b.json"
want 200 "the same book again" '.version == 1 and .created == false'
jq '.cpu.rate = "0.00002"' e2b.json >e2b-2.json
api POST /v1/admin/books "@e2b-2.json"
want 201 "a new version" '.version == 2 and .created == true'
api POST /v1/admin/books '{"id": "x", "currency": "USD"}'
want 400 "an invalid book" '.detail | test("body")'
api GET /v1/admin/books
want 200 "the books listed" '[.items[] | "\(.id) \(.version)"] == ["e2b-hobby 1", "e2b-hobby 2"]'
api GET /v1/admin/books/e2b-hobby/versions/1
want 200 "a version read back" '.id == "e2b-hobby" and .cpu.rate == "0.000014"'
api GET /v1/admin/books/e2b-hobby/versions/2
want 200 "the other version" '.cpu.rate == "0.00002"'
api GET /v1/admin/books/e2b-hobby/versions/3
want 404 "a version never stored" '.detail | test("e2b-hobby")'
api GET /v1/admin/books/e2b-hobby/versions/0
want 404 "version 0"

# --- accounts ----------------------------------------------------------------
new='{"id": "acme", "name": "Acme", "external_id": "cus_1", "metadata": {"plan": "pro", "seats": 3}}'
api POST /v1/admin/accounts "$new" -H 'Idempotency-Key: k-1'
want 201 "an account created" '.id == "acme" and .name == "Acme" and .external_id == "cus_1" and .metadata == {"plan": "pro", "seats": 3} and .price_books == [] and .auto_created == false'
first=$body
api POST /v1/admin/accounts "$new" -H 'Idempotency-Key: k-1'
want 201 "the same request with the same key"
checks=$((checks + 1))
[ "$body" = "$first" ] || fail "a replay differs from the first answer: $body vs $first"
contains "$headers" "Idempotent-Replayed: true" "a replay says so"
api POST /v1/admin/accounts '{"id": "acme2"}' -H 'Idempotency-Key: k-1'
want 409 "another request with a used key" '.detail | test("another request")'
api POST /v1/admin/accounts "$new" -H 'Idempotency-Key: k 2'
want 400 "a key with a space" '.errors[0].field == "Idempotency-Key"'
# Keys are the key's own: another admin key may use the same one.
ADMIN2=$(ctl keys create --role admin --name ad2)
KEY=$ADMIN2 api POST /v1/admin/accounts '{"id": "beta"}' -H 'Idempotency-Key: k-1'
want 201 "another API key's k-1"
api POST /v1/admin/accounts "$new"
want 409 "an account that exists" '.detail == "account '"'"'acme'"'"' exists"'
api POST /v1/admin/accounts '{"id": "acme3", "external_id": "cus_1"}'
want 409 "an external id taken" '.detail | test("external_id .cus_1. is account .acme.")'
checks=$((checks + 1))
[ "$(psql "$db" -XAtc "SELECT count(*) FROM accounts WHERE account_id IN ('acme2', 'acme3')")" = 0 ] ||
    fail "a refused creation stored an account"
api POST /v1/admin/accounts '{"id": "bad id"}'
want 400 "a bad id" '.errors[0].field == "id" and .errors[0].value == "\"bad id\""'
api POST /v1/admin/accounts '{"id": "x", "metadata": [1]}'
want 400 "metadata not an object" '.errors[0].field == "metadata"'
api POST /v1/admin/accounts '{"id": "x", "colour": "red"}'
want 400 "an unknown field" '.errors[0].field == "colour"'
api POST /v1/admin/accounts '{"id": "x", "id": "y"}'
want 400 "a key given twice" '.detail | test("id")'
api POST /v1/admin/accounts '{"name": "no id"}'
want 400 "no id" '.errors[0].field == "id" and (.errors[0].reason | test("required"))'
api GET /v1/admin/accounts/acme
want 200 "an account read" '.id == "acme" and .metadata.plan == "pro"'
api GET /v1/admin/accounts/nobody
want 404 "no such account" '.detail == "no account '"'"'nobody'"'"'"'
api PATCH /v1/admin/accounts/acme '{"name": "Acme Corp", "metadata": {"plan": "team"}}'
want 200 "an account updated" '.name == "Acme Corp" and .metadata == {"plan": "team"} and .external_id == "cus_1"'
api PATCH /v1/admin/accounts/beta '{"external_id": "cus_1"}'
want 409 "an update to a taken external id" '.detail | test("acme")'
api PATCH /v1/admin/accounts/nobody '{"name": "n"}'
want 404 "an update of no account"
for i in 1 2 3; do api POST /v1/admin/accounts "{\"id\": \"p$i\"}"; want 201 "p$i"; done
api GET "/v1/admin/accounts?limit=2"
want 200 "the first page" '[.items[].id] == ["acme", "beta"] and .next_after == "beta"'
api GET "/v1/admin/accounts?limit=2&after=beta"
want 200 "the second page" '[.items[].id] == ["p1", "p2"] and .next_after == "p2"'
api GET "/v1/admin/accounts?limit=2&after=p2"
want 200 "the last page" '[.items[].id] == ["p3"] and .next_after == null'
api GET "/v1/admin/accounts?limit=0"
want 400 "limit 0"
api GET "/v1/admin/accounts?limit=1001"
want 400 "limit 1001"

# --- books from a date, and their end ------------------------------------------
api POST /v1/admin/accounts/acme/books '{"price_book_id": "e2b-hobby", "from": "2026-01-01"}'
want 200 "acme on the book" '.price_books == [{"from": "2026-01-01", "price_book_id": "e2b-hobby", "version": 2}]'
api POST /v1/admin/accounts/acme/books '{"price_book_id": null, "from": "2026-01-20"}'
want 200 "acme's book ended" '.price_books[1] == {"from": "2026-01-20", "price_book_id": null, "version": null}'
api POST /v1/admin/accounts/acme/books '{"price_book_id": "nope", "from": "2026-01-01"}'
want 400 "an unknown book" '.errors[0].field == "price_book_id"'
api POST /v1/admin/accounts/acme/books '{"price_book_id": "e2b-hobby", "from": "2026-02-30"}'
want 400 "a day that does not exist" '.errors[0].field == "from" and .errors[0].value == "\"2026-02-30\""'
api POST /v1/admin/accounts/acme/books '{"from": "2026-01-01"}'
want 400 "no book field" '.errors[0].field == "price_book_id"'
api POST /v1/admin/accounts/nobody/books '{"price_book_id": "e2b-hobby", "from": "2026-01-01"}'
want 404 "no such account to assign"
checks=$((checks + 1))
[ "$(psql "$db" -XAtc "SELECT count(*) FROM accounts WHERE account_id = 'nobody'")" = 0 ] ||
    fail "assigning created an account"
# Usage on the 10th (billed) and the 25th (after the end: not billed).
sample() { printf '{"account_id":"acme","sandbox_id":"%s","start":%d,"seconds":%d,"state":"running","vcpu":2,"cpu_used":1,"mem_bytes":1073741824,"disk_bytes":0}' "$@"; }
JAN10=1768003200
JAN25=1769299200
printf '{"sandboxes":[%s,%s]}' "$(sample s-1 $JAN10 600)" "$(sample s-2 $JAN25 300)" >jan.json
code=$(curl -s -o post.out -w '%{http_code}' -H "Authorization: Bearer $HOST" \
    -H 'Content-Type: application/json' --data-binary @jan.json "$A/v1/samples")
checks=$((checks + 1))
[ "$code" = 200 ] || fail "posting January: $code $(cat post.out)"
expect_status 0 ctl invoice run --period 2026-01 --account acme
# 600 s of 2 vCPU and 1 GiB at version 2's rates: 0.024 + 0.0027 (900 s
# would be 0.04005).
checks=$((checks + 1))
[ "$(psql "$db" -XAtc "SELECT total FROM invoices WHERE account_id = 'acme'")" = 0.03 ] ||
    fail "only the usage before the end billed: $(psql "$db" -XAtc "SELECT total FROM invoices WHERE account_id = 'acme'")"
contains "$out" "not billed: account acme: 300 samples from 2026-01-25T00:00:00Z to 2026-01-25T01:00:00Z: on no price book" \
    "the usage after the end named"
# A draft of an account whose book ends before the period is deleted by
# the next run: the account is run for its draft.
api POST /v1/admin/accounts/p2/books '{"price_book_id": "e2b-hobby", "from": "2026-01-01"}'
want 200 "p2 on the book"
ctl invoice run --period 2026-01 --account p2 >/dev/null 2>&1 || fail "p2's run"
checks=$((checks + 1))
[ "$(psql "$db" -XAtc "SELECT count(*) FROM invoices WHERE account_id = 'p2' AND status = 'draft'")" = 1 ] ||
    fail "p2 has no draft to delete"
api POST /v1/admin/accounts/p2/books '{"price_book_id": null, "from": "2026-01-01"}'
want 200 "p2's book ended from its first day"
expect_status 0 ctl invoice run --period 2026-01
checks=$((checks + 1))
[ "$(psql "$db" -XAtc "SELECT count(*) FROM invoices WHERE account_id = 'p2'")" = 0 ] ||
    fail "the draft of an account on no book kept"
# A period with a final invoice keeps its books.
expect_status 0 ctl invoice run --period 2026-01 --account acme --finalize
api POST /v1/admin/accounts/acme/books '{"price_book_id": "e2b-hobby", "from": "2026-01-10"}'
want 409 "a book changed in a final invoice's period" '.detail | test("settled")'
# meterctl's own end, list and show.
expect_status 0 ctl accounts end p1 --from 2026-03-01
contains "$out" "account p1 on no price book from 2026-03-01" "accounts end"
expect_status 1 ctl accounts end nobody --from 2026-03-01
contains "$err" "no account 'nobody'" "accounts end of no account"
expect_status 0 ctl accounts show acme
contains "$out" '"external_id": "cus_1"' "accounts show"
expect_status 0 ctl accounts list --limit 2
contains "$out" "acme" "accounts list"
contains "$out" "(none: ended)" "an ended book listed"
contains "$out" "more: meterctl accounts list --after beta" "the next page's command"
expect_status 2 ctl accounts list --limit 0
expect_status 0 ctl books list
contains "$out" "e2b-hobby" "books list"
checks=$((checks + 1))
[ "$(echo "$out" | grep -c '^e2b-hobby ')" = 2 ] || fail "books list: two versions: $out"

# --- grants --------------------------------------------------------------------
api POST /v1/admin/accounts/beta/books '{"price_book_id": "e2b-hobby", "from": "2026-01-01"}'
want 200 "beta on the book"
api POST /v1/admin/accounts/beta/grants '{"amount": "25.50", "expires_after_periods": 3}' -H 'Idempotency-Key: g-1'
want 201 "a grant" '.id == "grant-1" and .amount == "25.50" and .expires_after_periods == 3'
api POST /v1/admin/accounts/beta/grants '{"amount": "25.50", "expires_after_periods": 3}' -H 'Idempotency-Key: g-1'
want 201 "the grant replayed" '.id == "grant-1"'
checks=$((checks + 1))
[ "$(psql "$db" -XAtc "SELECT count(*) FROM credit_grants WHERE account_id = 'beta'")" = 1 ] ||
    fail "a replayed grant given twice"
# The work and its answer commit together: where the answer cannot be
# kept, the grant is not given either, and a retry with the key gives it
# once (the grant's own transaction a savepoint of the request's).
psql "$db" -XAtqc "ALTER TABLE idempotency_keys ADD CONSTRAINT no_answers CHECK (response IS NULL) NOT VALID"
api POST /v1/admin/accounts/beta/grants '{"amount": "7"}' -H 'Idempotency-Key: g-2'
checks=$((checks + 1))
[ "$code" -ge 500 ] || fail "a grant whose answer cannot be kept: HTTP $code: $body"
grants7() { psql "$db" -XAtc "SELECT count(*) FROM credit_grants WHERE account_id = 'beta' AND amount = 7"; }
checks=$((checks + 1))
[ "$(grants7)" = 0 ] || fail "a grant given though its answer was not kept: $(grants7)"
psql "$db" -XAtqc "ALTER TABLE idempotency_keys DROP CONSTRAINT no_answers"
api POST /v1/admin/accounts/beta/grants '{"amount": "7"}' -H 'Idempotency-Key: g-2'
want 201 "the retry with the key" '.amount == "7"'
api POST /v1/admin/accounts/beta/grants '{"amount": "7"}' -H 'Idempotency-Key: g-2'
want 201 "and its replay" '.amount == "7"'
contains "$headers" "Idempotent-Replayed: true" "the retry's answer kept"
checks=$((checks + 1))
[ "$(grants7)" = 1 ] || fail "the retried grant given $(grants7) times"
api POST /v1/admin/accounts/beta/grants '{"amount": "-1"}'
want 409 "a negative grant refused" '.detail | test("amount|-1")'
api POST /v1/admin/accounts/beta/grants '{"amount": "5", "expires_after_periods": -1}'
want 400 "a negative expiry" '.errors[0].field == "expires_after_periods"'
api POST /v1/admin/accounts/nobody/grants '{"amount": "5"}'
want 404 "a grant to no account"

# --- keys ----------------------------------------------------------------------
api POST /v1/admin/keys '{"role": "account", "account_id": "acme", "name": "portal"}'
want 201 "a key created" '.role == "account" and .account_id == "acme" and (.token | test("^mtk_|^mt"))'
token=$(jq -r .token body.txt)
kid=$(jq -r .key_id body.txt)
KEY=$token api GET /v1/admin/accounts
want 403 "an account key on the admin API"
KEY=$token api GET "/v1/reports/accounts/acme?period=2026-01"
want 200 "the new key reads its account"
api GET /v1/admin/keys
want 200 "the keys listed" "[.items[] | select(.key_id == $kid) | .name] == [\"portal\"] and ([.items[] | has(\"token\")] | any | not)"
api POST /v1/admin/keys '{"role": "account", "name": "no account"}'
want 400 "an account key without its account" '.errors[0].field == "account_id"'
api POST /v1/admin/keys '{"role": "root", "name": "r"}'
want 400 "an unknown role" '.errors[0].field == "role"'
api POST /v1/admin/keys '{"role": "host", "name": "scoped", "scope": ["acme", "beta"]}'
want 201 "a scoped host key"
# A key's token is shown once: a replay answers it null, and no
# answer kept for a replay holds it.
api POST /v1/admin/keys '{"role": "finance", "name": "once"}' -H 'Idempotency-Key: key-1'
want 201 "a key created with an Idempotency-Key" '.token | test("^mt")'
api POST /v1/admin/keys '{"role": "finance", "name": "once"}' -H 'Idempotency-Key: key-1'
want 201 "its replay, without the token" '.token == null and .name == "once"'
checks=$((checks + 2))
[ "$(psql "$db" -XAtc "SELECT count(*) FROM api_keys WHERE name = 'once'")" = 1 ] || fail "a replayed key created twice"
[ "$(psql "$db" -XAtc "SELECT count(*) FROM idempotency_keys WHERE response LIKE '%mt%\_%'")" = 0 ] ||
    fail "a token kept in idempotency_keys"
api DELETE "/v1/admin/keys/$kid"
want 200 "a key revoked" ".key_id == $kid and .revoked == true"
KEY=$token api GET "/v1/reports/accounts/acme?period=2026-01"
want 401 "a revoked key"
api DELETE "/v1/admin/keys/$kid"
want 404 "revoked twice"
KEY=$FIN api GET /v1/admin/accounts
want 403 "finance on the admin API"
KEY=nothing api GET /v1/admin/accounts
want 401 "no key"

# --- audited as the admin's key ---------------------------------------------------
acts=$(psql "$db" -XAtc "SELECT string_agg(DISTINCT action, ',' ORDER BY action) FROM audit_log WHERE actor = 'meterd:key $admin_id (admin)'")
for act in account.assign account.create account.end account.update book.import credit.grant key.create key.revoke; do
    contains "$acts" "$act" "$act audited as the admin's key"
done
checks=$((checks + 1))
[ "$(psql "$db" -XAtc "SELECT count(*) FROM audit_log WHERE action = 'account.create' AND account_id = 'acme'")" = 1 ] ||
    fail "the replayed creation audited twice"
finish
