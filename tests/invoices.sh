#!/bin/bash
# Invoicing through the real binaries: samples posted to meterd, the
# invoice run and its lifecycle with meterctl, every rendering (the PDF
# through pdftotext), the HTTP routes with pagination and formats, and
# the role matrix of every route: each role and no token, as a table.
. "$(dirname "$0")/lib.sh"
command -v pdftotext >/dev/null || { fail "pdftotext not found"; finish; exit; }
books=$(cd "$(dirname "$0")/../pricing/books" && pwd)
with_meterd
ctl() { "$METERCTL" --db "$wdb" "$@"; }

"$METERCTL" --db "$db" migrate >/dev/null || { fail "migrate"; finish; exit; }
# The shipped books, effective from 2025 so that January 2026 can use them,
# without their one-off credits (E2B's $100, Daytona's $200): this test
# is about the invoices' lifecycle and renderings, with the published
# 0.47 as total; credit grants have their own part below.
for b in e2b-hobby daytona; do
    jq 'del(.grants) | .effective_from = "2025-01-01"' "$books/$b.json" >"$b.json" &&
        jq -e '.grants == null and .effective_from == "2025-01-01"' "$b.json" >/dev/null ||
        fail "copying the book $b"
    ctl books add "$b.json" >/dev/null || fail "books add $b"
done
ctl accounts add acme --name "Acme Corp" --book e2b-hobby --from 2026-01-01 >/dev/null || fail "accounts add acme"
ctl accounts add other --book e2b-hobby --from 2026-01-01 >/dev/null || fail "accounts add other"
# A book never stored is named, not PostgreSQL's NOT NULL of a version
# (issue 26), and nothing is written, not even the account.
expect_status 1 ctl accounts add ghost --book no-such-book --from 2026-01-01
contains "$err" "cannot add account 'ghost': no price book 'no-such-book'" "an unknown book named"
case "$err" in *"null value"*) fail "the raw NOT NULL error: $err" ;; esac
checks=$((checks + 1))
[ "$(psql "$db" -XAtc "SELECT count(*) FROM accounts WHERE account_id = 'ghost'")" = 0 ] ||
    fail "an account added on a book never stored"
# A known account put on it is left as it was.
expect_status 1 ctl accounts add acme --book no-such-book --from 2026-02-01
checks=$((checks + 1))
[ "$(psql "$db" -XAtc "SELECT string_agg(price_book_id || '@' || valid_from, ',') FROM account_price_books WHERE account_id = 'acme'")" = "e2b-hobby@2026-01-01" ] ||
    fail "acme's books changed by an unknown book"
expect_status 0 ctl accounts add plain
HOST=$(ctl keys create --role host --name h)
ACME=$(ctl keys create --role account --account acme --name a)
OTHER=$(ctl keys create --role account --account other --name o)
FIN=$(ctl keys create --role finance --name f)
ADMIN=$(ctl keys create --role admin --name ad)

# January 2026 stays within the acceptance window whenever this runs.
start_meterd a "$wdb" --max-age 36500 || { finish; exit; }
A=$url_a

# One hour of 8 vCPU and 4 GiB for acme (0.47 with E2B's rates), ten
# minutes of 1 vCPU for other, in January 2026.
JAN=1767225600
awk -v t=$JAN 'BEGIN { printf "{\"sandboxes\":[{\"account_id\":\"acme\",\"sandbox_id\":\"a-1\",\"start\":%d,\"seconds\":3600,\"state\":\"running\",\"vcpu\":8,\"cpu_used\":7.5,\"mem_bytes\":4294967296,\"disk_bytes\":0},{\"account_id\":\"other\",\"sandbox_id\":\"o-1\",\"start\":%d,\"seconds\":600,\"state\":\"running\",\"vcpu\":1,\"cpu_used\":1,\"mem_bytes\":0,\"disk_bytes\":0}]}", t, t }' >jan.json
code=$(curl -s -o post.out -w '%{http_code}' -H "Authorization: Bearer $HOST" \
    -H 'Content-Type: application/json' --data-binary @jan.json "$A/v1/samples")
checks=$((checks + 1))
[ "$code" = 200 ] || fail "posting January: $code $(cat post.out)"

# --- the run and the lifecycle with meterctl ------------------------------
expect_status 0 ctl invoice run --period 2026-01 --seller "Meter Test Ltd"
contains "$out" "2 accounts, 2 drafts, 0 finalized" "draft run summary"
contains "$out" "4200 samples" "samples rated"
expect_status 0 ctl invoice list --period 2026-01 --status draft
contains "$out" "acme" "drafts listed"
draft=$(echo "$out" | awk '$3 == "acme" { print $1 }')
expect_status 0 ctl invoice show "$draft"
contains "$out" '"status": "draft"' "a draft by its id"
contains "$out" '"total": "0.47"' "the draft's total"
expect_status 0 ctl invoice run --period 2026-01 --finalize --seller "Meter Test Ltd"
contains "$out" "0 drafts, 2 finalized" "finalizing"
year=$(date -u +%Y)
expect_status 0 ctl invoice list --status final
contains "$out" "$year-000001" "the first number"
contains "$out" "$year-000002" "the second number"
num=$(ctl invoice list --account acme --status final | awk 'NR == 2 { print $1 }')
other_num=$(ctl invoice list --account other --status final | awk 'NR == 2 { print $1 }')
expect_status 0 ctl invoice run --period 2026-01 --finalize --seller "Meter Test Ltd"
contains "$out" "0 finalized, 2 already final" "finalizing twice"

expect_status 0 ctl invoice show "$num" --format json
contains "$out" "\"number\": \"$num\"" "json number"
contains "$out" '"sha256": "' "json hash"
contains "$out" '"seller": "Meter Test Ltd"' "json seller"
contains "$out" '"price_book": "e2b-hobby"' "lines name their book"
expect_status 0 ctl invoice show "$num" --format csv
contains "$(echo "$out" | head -n 1)" "document,account_id,period,line,kind" "csv header"
checks=$((checks + 1))
[ "$(echo "$out" | wc -l)" = 3 ] || fail "csv: a header and two lines: $out"
expect_status 0 ctl invoice show "$num" --format html
contains "$out" "<title>Invoice $num</title>" "html title"
contains "$out" "Acme Corp" "html account name"
expect_status 0 ctl invoice show "$num" --format pdf --output inv.pdf
text=$(pdftotext inv.pdf - 2>&1)
contains "$text" "Invoice $num" "pdf number"
contains "$text" "0.47 USD" "pdf total"
expect_status 2 ctl invoice show "$num" --format xml
expect_status 1 ctl invoice show 2026-999999
contains "$err" "no invoice '2026-999999'" "an unknown number"
expect_status 1 ctl invoice run --period "$(date -u +%Y-%m)" --finalize
contains "$err" "has not ended" "the current period cannot be finalized"

# Editing a final invoice through SQL fails, whoever does it.
expect_status 1 psql "$db" -v ON_ERROR_STOP=1 -qc "UPDATE invoices SET total = 0 WHERE number = '$num'"
contains "$err" "is final and never changes" "UPDATE of a final invoice"
# The worker role meterd and meterctl use is refused the same, and may
# not turn the trigger off first (tests/roles.sh has the rest).
expect_status 1 psql "$wdb" -v ON_ERROR_STOP=1 -qc "UPDATE invoices SET total = 0 WHERE number = '$num'"
contains "$err" "is final and never changes" "the worker's UPDATE of a final invoice"
expect_status 1 psql "$wdb" -v ON_ERROR_STOP=1 -qc "ALTER TABLE invoices DISABLE TRIGGER invoices_immutable"
contains "$err" "must be owner of table invoices" "the worker's ALTER TABLE ... DISABLE TRIGGER"
[ "$(psql "$db" -qAtc "SELECT total FROM invoices WHERE number = '$num'")" = 0.47 ] ||
    fail "the final invoice changed: $(psql "$db" -qAtc "SELECT total FROM invoices WHERE number = '$num'")"
checks=$((checks + 1))

# What-if: the same usage on Daytona's book; nothing is stored.
expect_status 0 ctl invoice preview --period 2026-01 --account acme --price-book daytona.json
contains "$out" '"what_if"' "preview"
contains "$out" '"price_book": "daytona"' "preview under the other book"
contains "$out" '"total_difference"' "preview difference"
checks=$((checks + 1))
[ "$(psql "$db" -qAtc 'SELECT count(*) FROM invoices')" = 2 ] || fail "preview stored something"

# --- HTTP: formats and pages ----------------------------------------------
get() { # PATH TOKEN [curl args]: sets status, body and type
    local path=$1 token=$2
    shift 2
    local auth=()
    [ -n "$token" ] && auth=(-H "Authorization: Bearer $token")
    curl -s -o body.out -D headers.out -w '%{http_code}' "${auth[@]}" "$@" "$A$path" >code.out
    status=$(cat code.out)
    body=$(cat body.out)
    type=$(awk -F': ' 'tolower($1) == "content-type" { print $2 }' headers.out | tr -d '\r')
}
get "/v1/invoices/$num.pdf" "$ACME"
contains "$type" "application/pdf" "the .pdf suffix"
contains "$(pdftotext body.out - 2>&1)" "0.47 USD" "pdf over HTTP"
get "/v1/invoices/$num" "$ACME" -H 'Accept: text/csv'
contains "$type" "text/csv" "Accept: text/csv"
contains "$body" "document,account_id" "csv over HTTP"
get "/v1/invoices/$num.html" "$FIN"
contains "$body" "Invoice $num" "html over HTTP"
# In a browser, the pages' headers: no script, never framed, not
# sniffed; the policy allows the document's one inline stylesheet by
# its hash, so that it still shows as printed.
hdr() { awk -v h="$1" -F': ' 'tolower($1) == h { sub(/^[^:]*: /, ""); print }' headers.out | tr -d '\r'; }
csp=$(hdr content-security-policy)
contains "$csp" "default-src 'none'" "invoice html: the pages' policy"
contains "$csp" "frame-ancestors 'none'" "invoice html: never framed"
contains "$(hdr x-frame-options)" "DENY" "invoice html: X-Frame-Options"
contains "$(hdr x-content-type-options)" "nosniff" "invoice html: nosniff"
style_hash=$(perl -0777 -ne 'print $1 if /<style>(.*?)<\/style>/s' body.out |
    openssl dgst -sha256 -binary | base64)
contains "$csp" "style-src 'self' 'sha256-$style_hash'" "invoice html: its inline stylesheet allowed by its hash"
get "/v1/invoices/$num" "$FIN" -H 'Accept: image/png'
contains "$status" 406 "an unservable Accept"
get "/v1/invoices?limit=1" "$FIN"
contains "$body" '"next_after":"' "a first page"
first=$body
after=$(echo "$body" | sed 's/.*"next_after":"\([0-9]*\)".*/\1/')
get "/v1/invoices?limit=1&after=$after" "$FIN"
checks=$((checks + 1))
[ "$first" != "$body" ] || fail "the second page repeats the first"
# Two pages of one: both invoices, one on each, in either order.
contains "$first$body" "\"number\":\"$num\"" "the pages hold acme's invoice"
contains "$first$body" "\"number\":\"$other_num\"" "the pages hold other's invoice"
get "/v1/invoices?limit=1&after=$(echo "$body" | sed 's/.*"id":\([0-9]*\).*/\1/')" "$FIN"
contains "$body" '"items":[]' "nothing after the last"
get "/v1/invoices?limit=0" "$FIN"
contains "$status" 400 "limit 0"
contains "$body" "'limit'" "limit 0 names the parameter"
get "/v1/invoices" "$OTHER"
contains "$body" "$other_num" "an account sees its own"
case "$body" in *"\"$num\""*) fail "an account sees another's invoice" ;; esac
get "/v1/invoices?account=acme" "$OTHER"
contains "$body" '"items":[]' "an account asking for another sees nothing"
get "/v1/usage?account=acme&from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z&granularity=day" "$FIN"
contains "$body" '"samples":"3600"' "usage by day"
contains "$body" '"start":"2026-01-01T00:00:00Z"' "usage day start"
get "/v1/usage?from=$JAN&to=$((JAN + 7200))" "$ACME"
contains "$body" '"account_id":"acme"' "usage of one's own account by default"
get "/v1/usage?account=acme&from=x&to=1" "$FIN"
contains "$status" 400 "a bad from"
contains "$body" "'from'" "a bad from names it"

# --- void and correct ---------------------------------------------------
expect_status 0 ctl invoice void "$num" --reason "wrong address"
contains "$out" "voided by credit note" "void"
expect_status 0 ctl invoice list --status void
contains "$out" "$num" "a void invoice"
expect_status 1 ctl invoice void "$num" --reason again
contains "$err" "void" "voiding twice"
expect_status 0 ctl invoice run --period 2026-01 --account acme --finalize
contains "$out" "1 finalized" "the corrected invoice"

# --- credit grants ----------------------------------------------------------
expect_status 0 ctl credits grant acme 5 --id promo --expires-after 2
contains "$out" "grant promo of 5 to account acme" "grant given"
expect_status 1 ctl credits grant acme 5 --id promo
contains "$err" "already has a grant 'promo'" "grant id unique per account"
expect_status 0 ctl credits grant acme 0.25
contains "$out" "grant grant-1 of 0.25" "grant id generated"
expect_status 2 ctl credits grant acme 5 --expires-after 0
expect_status 1 ctl credits grant acme 1.0000001
contains "$err" "amount '1.0000001'" "grant amount checked"
expect_status 0 ctl credits list --account acme
contains "$out" "promo" "grants listed"
contains "$out" "operator" "an operator's grant"
expect_status 1 ctl credits list --account ghost
contains "$err" "no account 'ghost'" "credits of an unknown account"
body=$(curl -s -H "Authorization: Bearer $ACME" "$A/v1/accounts/acme/credits")
checks=$((checks + 1))
jq -e '.account_id == "acme" and ([.items[] | select(.grant == "promo" and .amount == "5.000000" and .balance == "5.000000" and .source == "operator" and .currency == "USD")] | length) == 1' <<<"$body" >/dev/null \
    || fail "GET /v1/accounts/acme/credits: $body"

# --- the role matrix -------------------------------------------------------
# route                                   none host acme other finance admin
matrix="
GET  /v1/invoices                          401  403  200  200   200     200
GET  /v1/invoices/$num                     401  403  200  404   200     200
GET  /v1/invoices/$other_num               401  403  404  200   200     200
GET  /v1/usage?account=acme&from=0&to=9999 401  403  200  404   200     200
GET  /v1/accounts/acme/credits             401  403  200  404   200     200
GET  /v1/accounts/ghost/credits            401  403  404  404   404     404
POST /v1/invoices/run                      401  403  403  403   200     200
POST /v1/samples                           401  200  403  403   403     403
GET  /healthz                              200  200  200  200   200     200
"
echo '{"period":"2026-01"}' >run.json
echo '[]' >empty.json
tokens=("" "$HOST" "$ACME" "$OTHER" "$FIN" "$ADMIN")
names=(none host acme other finance admin)
while read -r method path codes; do
    [ -z "$method" ] && continue
    read -r -a want_codes <<<"$codes"
    for i in 0 1 2 3 4 5; do
        want=${want_codes[$i]}
        auth=()
        [ -n "${tokens[$i]}" ] && auth=(-H "Authorization: Bearer ${tokens[$i]}")
        data=()
        if [ "$method" = POST ]; then
            file=run.json
            [ "$path" = /v1/samples ] && file=empty.json
            data=(-H 'Content-Type: application/json' --data-binary "@$file")
        fi
        got=$(curl -s -o /dev/null -w '%{http_code}' -X "$method" "${auth[@]}" "${data[@]}" "$A$path")
        checks=$((checks + 1))
        [ "$got" = "$want" ] || fail "$method $path as ${names[$i]}: $got, want $want"
    done
done <<<"$matrix"

finish
