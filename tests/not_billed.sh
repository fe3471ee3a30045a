#!/bin/bash
# Nothing unbilled silently (issue 25): usage stored for hours its
# account was on no price book, and accounts whose draft the invoice run
# could not compute, are named with why by `meterctl invoice run`'s
# summary, POST /v1/invoices/run (200: the run itself worked), the
# overview's JSON and page, and the account's page; a run that computes
# the draft forgets the failure.
. "$(dirname "$0")/lib.sh"
books=$(cd "$(dirname "$0")/../pricing/books" && pwd)
with_meterd
ctl() { "$METERCTL" --db "$wdb" "$@"; }

"$METERCTL" --db "$db" migrate >/dev/null || { fail "migrate"; finish; exit; }
# E2B's book (egress unpublished: null), and a copy that prices egress.
jq 'del(.grants) | .effective_from = "2025-01-01"' "$books/e2b-hobby.json" >e2b.json
jq '.id = "e2b-egress" | .egress = {"rate": "0.05"}' e2b.json >e2b-egress.json
ctl books add e2b.json >/dev/null || fail "books add e2b"
ctl books add e2b-egress.json >/dev/null || fail "books add e2b-egress"
# billed: on the book all January. late: from the 15th, with usage the
# hour before and the hour from midnight. feb: from February only.
# egress: on the book, but sends egress, whose price is unknown.
# nobook: never added; its first sample creates it.
ctl accounts add billed --book e2b-hobby --from 2026-01-01 >/dev/null || fail "add billed"
ctl accounts add late --name "Late Ltd" --book e2b-hobby --from 2026-01-15 >/dev/null || fail "add late"
ctl accounts add feb --book e2b-hobby --from 2026-02-01 >/dev/null || fail "add feb"
ctl accounts add egress --book e2b-hobby --from 2026-01-01 >/dev/null || fail "add egress"
HOST=$(ctl keys create --role host --name h)
FIN=$(ctl keys create --role finance --name f)
start_meterd a "$wdb" --max-age 36500 --report-ttl 0 || { finish; exit; }

# sandbox ACCOUNT ID START SECONDS [EGRESS]: one sandbox's samples.
sandbox() {
    printf '{"account_id":"%s","sandbox_id":"%s","start":%d,"seconds":%d,"state":"running","vcpu":1,"cpu_used":1,"mem_bytes":1073741824,"disk_bytes":0,"egress_bytes":%d}' \
        "$1" "$2" "$3" "$4" "${5:-0}"
}
JAN2=1767312000  # 2026-01-02T00:00:00Z
JAN15=1768435200 # 2026-01-15T00:00:00Z
{
    printf '{"sandboxes":['
    sandbox billed b-1 $((JAN2 + 36000)) 600
    printf ,
    sandbox nobook n-1 $((JAN2 + 36000)) 3600
    printf ,
    sandbox late l-1 $((JAN2 + 3600)) 60
    printf ,
    sandbox late l-2 $((JAN15 - 120)) 120 # the last hour before its book
    printf ,
    sandbox late l-3 "$JAN15" 300 # its book's first hour: billed
    printf ,
    sandbox feb f-1 $((JAN15 + 7200)) 30
    printf ,
    sandbox egress e-1 $((JAN2 + 36000)) 10 1000
    printf ']}'
} >jan.json
code=$(curl -s -o post.out -w '%{http_code}' -H "Authorization: Bearer $HOST" \
    -H 'Content-Type: application/json' --data-binary @jan.json "$url_a/v1/samples")
checks=$((checks + 1))
[ "$code" = 200 ] || fail "posting January: $code $(cat post.out)"

# --- meterctl's summary ------------------------------------------------------
expect_status 1 ctl invoice run --period 2026-01
contains "$out" "3 accounts, 2 drafts, 0 finalized, 0 already final, 1 failed" "the run's counts"
contains "$out" "not billed: account nobook: 3600 samples from 2026-01-02T10:00:00Z to 2026-01-02T11:00:00Z: on no price book" "usage of an account on no book"
contains "$out" "not billed: account late: 180 samples from 2026-01-02T01:00:00Z to 2026-01-15T00:00:00Z: on no price book before 2026-01-15" \
    "usage before an account's first book, its last hour included, the book's first not"
contains "$out" "not billed: account feb: 30 samples from 2026-01-15T02:00:00Z to 2026-01-15T03:00:00Z: on no price book before 2026-02-01" \
    "usage of a period before the book"
contains "$out" "not billed: account egress: no draft: " "a failed draft"
contains "$err" "egress" "the failure said as it happens"
checks=$((checks + 1))
case "$out" in *"account billed"*) fail "a billed account listed: $out" ;; esac
checks=$((checks + 1))
[ "$(echo "$out" | grep -c '^not billed: ')" = 4 ] || fail "four lines of what is not billed: $out"
why=$(psql "$db" -XAtc "SELECT error FROM invoice_run_failures WHERE account_id = 'egress' AND period = '2026-01-01'")
contains "$why" "egress" "the failure recorded with why"
# One account's run names only its own.
expect_status 0 ctl invoice run --period 2026-01 --account late
contains "$out" "not billed: account late: 180 samples" "--account: its own"
checks=$((checks + 1))
[ "$(echo "$out" | grep -c '^not billed: ')" = 1 ] || fail "--account late: only its line: $out"

# A refusal is no failed draft: finalizing a period not over refuses
# every account, and records none.
expect_status 1 ctl invoice run --period "$(date -u +%Y-%m)" --finalize
contains "$err" "has not ended" "the refusal said"
checks=$((checks + 1))
[ "$(psql "$db" -XAtc "SELECT count(*) FROM invoice_run_failures WHERE period = date_trunc('month', now() AT TIME ZONE 'UTC')::date")" = 0 ] ||
    fail "a refusal recorded as a failed draft"

# --- over HTTP -------------------------------------------------------------
code=$(curl -s -o run.json -w '%{http_code}' -H "Authorization: Bearer $FIN" \
    -H 'Content-Type: application/json' --data '{"period":"2026-01"}' "$url_a/v1/invoices/run")
checks=$((checks + 1))
[ "$code" = 200 ] || fail "POST /v1/invoices/run with a failed account: $code, want 200: $(cat run.json)"
checks=$((checks + 1))
jq -e '.failed == 1 and ([.accounts[] | select(.account_id == "egress") | .error | test("egress")] == [true])
    and ([.accounts[] | select(.error == null)] | length) == 2' run.json >/dev/null ||
    fail "the run's answer: $(cat run.json)"
checks=$((checks + 1))
jq -e '[.not_billed.no_book[] | "\(.account_id) \(.samples) \(.from) \(.to)"] ==
    ["feb 30 2026-01-15T02:00:00Z 2026-01-15T03:00:00Z", "late 180 2026-01-02T01:00:00Z 2026-01-15T00:00:00Z",
     "nobook 3600 2026-01-02T10:00:00Z 2026-01-02T11:00:00Z"]
    and ([.not_billed.run_failed[].account_id] == ["egress"])
    and (.not_billed.no_book[] | select(.account_id == "late") | .name == "Late Ltd")' run.json >/dev/null ||
    fail "the run's not_billed: $(jq -c .not_billed run.json)"

curl -s -H "Authorization: Bearer $FIN" "$url_a/v1/reports/overview?period=2026-01" >overview.json
checks=$((checks + 1))
jq -e '(.not_billed.no_book | length) == 3 and (.not_billed.run_failed[0].why | test("egress"))
    and (.not_billed.run_failed[0].at | test("^[0-9-]+T[0-9:]+Z$"))' overview.json >/dev/null ||
    fail "the overview's not_billed: $(jq -c .not_billed overview.json)"
# Another period has nothing of it.
curl -s -H "Authorization: Bearer $FIN" "$url_a/v1/reports/overview?period=2025-12" >dec.json
checks=$((checks + 1))
jq -e '.not_billed == {"no_book": [], "run_failed": []}' dec.json >/dev/null ||
    fail "December's not_billed: $(jq -c .not_billed dec.json)"

page() { curl -s -H "Authorization: Bearer $FIN" "$url_a$1"; }
html=$(page "/overview?period=2026-01")
contains "$html" "4: 3 with usage on no price book, 1 whose draft the last invoice run could not compute" "the overview page's count"
contains "$html" 'href="/accounts/nobook?period=2026-01"' "the overview links the account"
contains "$html" "on no price book before 2026-01-15" "the overview says why"
html=$(page "/overview?period=2025-12")
contains "$html" '<p class="muted">0: every account' "the overview says when nothing is unbilled"
html=$(page "/accounts/egress?period=2026-01")
contains "$html" "could not compute it: " "the account page names the failure"
case "$html" in *"no invoice run has computed it yet"*) fail "the failure hidden on the account page" ;; esac
checks=$((checks + 1))
html=$(page "/accounts/nobook?period=2026-01")
contains "$html" "3600 samples from 2026-01-02T10:00:00Z to 2026-01-02T11:00:00Z are not billed: the account was on no price book" "the account page names usage on no book"
html=$(page "/accounts/billed?period=2026-01")
contains "$html" "Unbilled estimate" "a billed account's estimate"

# --- mended ----------------------------------------------------------------
# An account taken off its book is run no more: a run of every account
# forgets its failure (its usage is then on no book).
psql "$db" -XAtqc "INSERT INTO accounts (account_id) VALUES ('gone')" >/dev/null
psql "$db" -XAtqc "INSERT INTO invoice_run_failures (account_id, period, error) VALUES ('gone', '2026-01-01', 'old')" >/dev/null
expect_status 0 ctl invoice run --period 2026-01 --account late
checks=$((checks + 1))
[ "$(psql "$db" -XAtc "SELECT count(*) FROM invoice_run_failures WHERE account_id = 'gone'")" = 1 ] ||
    fail "a run of one account forgot another's failure"
expect_status 1 ctl invoice run --period 2026-01
checks=$((checks + 1))
[ "$(psql "$db" -XAtc "SELECT count(*) FROM invoice_run_failures WHERE account_id = 'gone'")" = 0 ] ||
    fail "a run of every account kept the failure of one it no longer runs"
# Egress priced: the run computes the draft and forgets the failure; the
# account on a book from the 1st leaves nothing of it unbilled.
ctl accounts add egress --book e2b-egress --from 2026-01-01 >/dev/null || fail "egress's book"
ctl accounts add nobook --book e2b-hobby --from 2026-01-01 >/dev/null || fail "nobook's book"
expect_status 0 ctl invoice run --period 2026-01 --account egress
contains "$out" "1 accounts, 1 drafts" "the mended account's draft"
checks=$((checks + 1))
[ "$(psql "$db" -XAtc "SELECT count(*) FROM invoice_run_failures")" = 0 ] || fail "the failure kept after a draft"
curl -s -H "Authorization: Bearer $FIN" "$url_a/v1/reports/overview?period=2026-01" >overview.json
checks=$((checks + 1))
jq -e '[.not_billed.no_book[].account_id] == ["feb", "late"] and .not_billed.run_failed == []' overview.json >/dev/null ||
    fail "mended, the overview's not_billed: $(jq -c .not_billed overview.json)"
finish
