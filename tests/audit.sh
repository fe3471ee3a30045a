#!/bin/bash
# Provenance and the audit log: each block of usage records the key that
# stored it; `meterctl usage quarantine` sets aside what one key stored
# in a window of arrival (out of usage reads, invoices and rollups, kept,
# and its seconds free to be stored again); every act of an operator,
# by meterctl, by meterd or by hand in SQL, is in an append-only log
# with who did it.
. "$(dirname "$0")/lib.sh"
with_meterd
unset SUDO_USER # the actor is then the user running the test, as below
ctl() { "$METERCTL" --db "$wdb" "$@"; }
sql() { psql "$db" -XAtc "$1"; }
"$METERCTL" --db "$db" migrate >/dev/null || { fail "migrate"; finish; exit; }
books=$(cd "$(dirname "$0")/../pricing/books" && pwd)
ctl books add "$books/e2b-hobby.json" >/dev/null 2>&1 || fail "books add"
# Last month: it has ended, so its invoices can be finalized.
last=$(date -u -d "$(date -u +%Y-%m-01) -1 month" +%Y-%m)
T=$(date -u -d "$last-02" +%s)
for a in acme beta; do
    ctl accounts add $a --book e2b-hobby --from "$last-01" >/dev/null 2>&1 || fail "accounts add $a"
done
ctl credits grant beta 5 --id welcome >/dev/null 2>&1 || fail "credits grant"
LEAKED=$(ctl keys create --role host --name leaked 2>/dev/null)
GOOD=$(ctl keys create --role host --name good 2>/dev/null)
FIN=$(ctl keys create --role finance --name fin 2>/dev/null)
id_of() { ctl keys list | awk -v n="$1" '$NF == n { print $1 }'; }
leaked=$(id_of leaked)
good=$(id_of good)
fin=$(id_of fin)
# Reports not kept: each shows what is stored when asked; rollups merged
# every second; blocks packed only when this test says (meterctl usage
# pack below).
start_meterd main "$wdb" --report-ttl 0 --merge-every 1 --pack-after 0 || { finish; exit; }

rows() { # FILE ACCOUNT SANDBOX: three seconds
    printf '[' >"$1"
    for i in 0 1 2; do
        printf '%s{"ts": %d, "account_id": "%s", "sandbox_id": "%s", "state": "running", "vcpu": 2, "cpu_used": 1, "mem_bytes": 1073741824, "disk_bytes": 0}' \
            "$([ $i = 0 ] || echo ,)" $((T + i)) "$2" "$3" >>"$1"
    done
    printf ']' >>"$1"
}
post() { # TOKEN FILE: the reply's body; status in $status
    local r
    r=$(curl -s -w '\n%{http_code}' -X POST -H "Authorization: Bearer $1" \
        -H "Content-Type: application/json" --data-binary @"$2" "$url_main/v1/samples")
    status=${r##*$'\n'}
    echo "${r%$'\n'*}"
}
rows forged.json acme a-1
rows honest.json acme a-2
rows beta.json beta b-1
# With an account only the leaked key wrote to (its merged row empties),
# in the same batch: one arrival, whose windows the quarantines below
# name to the second.
rows gamma.json gamma g-1
jq -s 'add' forged.json gamma.json >forged_gamma.json
post "$LEAKED" forged_gamma.json >/dev/null
post "$GOOD" honest.json >/dev/null
post "$GOOD" beta.json >/dev/null

# --- provenance ---------------------------------------------------------------
checks=$((checks + 1))
got=$(sql "SELECT string_agg(s.sandbox_id || '=' || coalesce(b.key_id::text, 'null'), ' ' ORDER BY s.sandbox_id) FROM usage_blocks b JOIN sandboxes s USING (account_pk, sandbox_pk)")
[ "$got" = "a-1=$leaked a-2=$good b-1=$good g-1=$leaked" ] || fail "the key of each block: $got"
checks=$((checks + 1))
got=$(sql "SELECT string_agg(DISTINCT coalesce(key_id::text, 'null'), ' ') FROM usage_hourly")
[ "$got" = "$leaked $good" ] || [ "$got" = "$good $leaked" ] || fail "the key of each rollup: $got"

# --- quarantine ----------------------------------------------------------------
# meterd merges the rollups in the background (merge.c, usage_merge.c):
# the quarantine must then take the leaked batch's samples out of their
# merged row too.
fleet_usage() {
    curl -s -H "Authorization: Bearer $FIN" "$url_main/v1/reports/usage?from=$(date -u -d "@$T" +%Y-%m-%d)&granularity=day" |
        jq -r '[.items[].samples] | add'
}
unmerged() { sql "SELECT count(*) FROM usage_hourly WHERE NOT merged"; }
merged() { # waits up to 5 s for every row to be merged
    for i in $(seq 50); do
        [ "$(unmerged)" = 0 ] && return 0
        sleep 0.1
    done
    return 1
}
checks=$((checks + 1))
merged || fail "rows not merged after 5 s: $(unmerged)"
checks=$((checks + 1))
got="$(fleet_usage) $(sql "SELECT sum(samples) FROM usage_hourly_merged")"
[ "$got" = "12 12" ] || fail "the fleet's usage, samples merged: $got, want 12 12"
arrived=$(sql "SELECT floor(extract(epoch FROM min(arrived_at)))::bigint FROM usage_blocks WHERE key_id = $leaked")
# The batches so far packed (usage_pack.c): a pack per sandbox, no block
# left; the quarantine below takes the leaked key's out of their packs.
expect_status 0 ctl usage pack --after 0
contains "$out" "usage pack: 4 blocks into 4 packs" "the blocks packed"
checks=$((checks + 1))
got="$(sql "SELECT count(*) FROM usage_blocks") $(sql "SELECT count(*) FROM usage_packs")"
[ "$got" = "0 4" ] || fail "blocks and packs after packing: $got, want 0 4"
# A second batch of the leaked key in the same account and hour, a few
# seconds later, that no merge takes (their lock held, as a replica's
# merge would hold it): the quarantine takes merged and unmerged rows of
# one account-hour.
lock_held() { [ "$(sql "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = 7243615 AND objid = 1 AND granted")" = 1 ]; }
hold_merges() {
    psql "$db" -XAtc "SELECT pg_advisory_lock(7243615, 1), pg_sleep(120)" >/dev/null 2>&1 &
    holder=$!
    for i in $(seq 50); do lock_held && break; sleep 0.1; done
}
release_merges() {
    sql "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND classid = 7243615 AND objid = 1 AND granted" >/dev/null
    wait $holder 2>/dev/null
}
hold_merges
while [ "$(date +%s)" -lt $((arrived + 3)) ]; do sleep 0.1; done
rows forged2.json acme a-4
post "$LEAKED" forged2.json >/dev/null
latest=$(sql "SELECT floor(extract(epoch FROM max(arrived_at)))::bigint FROM usage_blocks WHERE key_id = $leaked")
checks=$((checks + 1))
got="$(unmerged) $(sql "SELECT sum(samples) FROM usage_hourly_merged") $(sql "SELECT count(DISTINCT hour) FROM usage_hourly")"
[ "$got" = "1 12 1" ] || fail "rows not merged, samples merged, hours: $got, want 1 12 1"
exported() { ctl export --account acme --from $((T - 60)) --to $((T + 60)) 2>/dev/null | wc -l; }
checks=$((checks + 1))
[ "$(exported)" = 9 ] || fail "acme's samples before the quarantine: $(exported)"
# A window must have ended: wait until the arrival's second and the next
# have passed.
while [ "$(date +%s)" -lt $((latest + 2)) ]; do sleep 0.1; done
expect_status 2 ctl usage quarantine --key "$leaked" --from $((arrived + 1)) --to "$arrived" --reason x
contains "$err" "--to" "a window that ends before it starts"
expect_status 2 ctl usage quarantine --key "$leaked" --from "$arrived" --to $((arrived + 1))
contains "$err" "--reason" "the reason is required"
expect_status 1 ctl usage quarantine --key 999 --from "$arrived" --to $((arrived + 1)) --reason x
contains "$err" "999" "an unknown key is named"
expect_status 1 ctl usage quarantine --key "$leaked" --from "$arrived" --to $(($(date +%s) + 3600)) --reason x
contains "$err" "in the future" "a window that ends in the future"
# Both sides of the window: arrival at or after --from, before --to.
expect_status 0 ctl usage quarantine --key "$leaked" --from $((arrived + 1)) --to $((arrived + 2)) --reason "too late"
contains "$out" "0 blocks" "a window after the arrival"
expect_status 0 ctl usage quarantine --key "$leaked" --from $((arrived - 100)) --to "$arrived" --reason "too early"
contains "$out" "0 blocks" "a window that ends at the arrival's second"
expect_status 0 ctl usage quarantine --key "$fin" --from "$arrived" --to $((arrived + 1)) --reason "another key"
contains "$out" "0 blocks" "another key's window"
expect_status 0 ctl usage quarantine --key "$leaked" --from "$arrived" --to $((latest + 1)) --reason "leaked in a log"
contains "$out" "3 blocks, 9 seconds set aside" "the leaked key's batches"
checks=$((checks + 1))
[ "$(exported)" = 3 ] || fail "acme's samples after the quarantine: $(exported), want 3"
checks=$((checks + 1))
[ "$(sql "SELECT count(*) FROM usage_blocks_quarantined WHERE key_id = $leaked")" = 3 ] || fail "the blocks are kept aside"
# The packs of a-1 and g-1 held only the leaked key's blocks: gone.
checks=$((checks + 1))
got=$(sql "SELECT string_agg(s.sandbox_id, ' ' ORDER BY s.sandbox_id) FROM usage_packs p JOIN sandboxes s USING (account_pk, sandbox_pk)")
[ "$got" = "a-2 b-1" ] || fail "packs after the quarantine: $got, want a-2 b-1"
# Each quarantine moved the hourly rows of exactly the blocks it moved.
checks=$((checks + 1))
got=$(sql "SELECT string_agg(q.seconds || '=' || coalesce((SELECT sum(h.samples) FROM usage_hourly_quarantined h WHERE h.quarantine_id = q.quarantine_id), 0), ' ' ORDER BY q.quarantine_id) FROM usage_quarantines q")
[ "$got" = "0=0 0=0 0=0 9=9" ] || fail "seconds moved = rollup samples moved, per quarantine: $got"
expect_status 0 ctl usage quarantine --key "$leaked" --from "$arrived" --to $((latest + 1)) --reason "again"
contains "$out" "0 blocks" "the same window again moves nothing more"
checks=$((checks + 1))
[ "$(sql "SELECT coalesce(sum(samples), 0) FROM usage_hourly WHERE account_pk = (SELECT account_pk FROM accounts WHERE account_id = 'acme')")" = 3 ] ||
    fail "acme's rollups after the quarantine"
checks=$((checks + 1))
got=$(sql "SELECT string_agg(account_pk || ':' || hour || '=' || samples, ' ' ORDER BY account_pk, hour) FROM usage_hourly_merged WHERE samples > 0")
want=$(sql "SELECT string_agg(account_pk || ':' || hour || '=' || s, ' ' ORDER BY account_pk, hour) FROM (SELECT account_pk, hour, sum(samples) AS s FROM usage_hourly GROUP BY 1, 2) h")
[ "$got" = "$want" ] && [ -n "$got" ] || fail "merged rows after the quarantine: $got, want $want"
period_sums_agree "$db" "the periods' sums after the quarantine"
checks=$((checks + 1))
got=$(sql "SELECT string_agg(account_pk || ':' || period || '=' || samples, ' ' ORDER BY account_pk) FROM usage_period_merged WHERE samples > 0")
want=$(sql "SELECT string_agg(account_pk || ':' || p || '=' || s, ' ' ORDER BY account_pk) FROM (SELECT account_pk, meter_period_of(hour) AS p, sum(samples) FILTER (WHERE merged) AS s FROM usage_hourly GROUP BY 1, 2 HAVING sum(samples) FILTER (WHERE merged) > 0) h")
[ "$got" = "$want" ] && [ -n "$got" ] || fail "the periods' sums after the quarantine: $got, want $want"
checks=$((checks + 1))
got=$(fleet_usage)
[ "$got" = 6 ] || fail "the fleet's usage after the quarantine: $got, want 6"
# gamma's merged row is empty now, and no longer an account with usage.
checks=$((checks + 1))
got="$(sql "SELECT count(*) FROM usage_hourly_merged WHERE samples = 0") $(curl -s -H "Authorization: Bearer $FIN" "$url_main/v1/reports/usage?from=$(date -u -d "@$T" +%Y-%m-%d)&granularity=day" | jq -r '[.items[].accounts] | max')"
[ "$got" = "1 2" ] || fail "empty merged rows, accounts with usage: $got, want 1 2"
release_merges
usage=$(curl -s -H "Authorization: Bearer $FIN" "$url_main/v1/usage?account=acme&from=$((T - 3600))&to=$((T + 3600))")
contains "$usage" '"samples":"3"' "the usage route without the quarantined seconds"
# The invoice rates the honest sandbox's seconds alone; the forged
# seconds may then be stored again, by a good key (not a conflict).
expect_status 0 ctl invoice run --period "$last" --account acme
contains "$out" " 3 samples" "the draft rates the seconds not set aside"
reply=$(post "$GOOD" forged.json)
contains "$reply" '"accepted":3' "the quarantined seconds stored again by another key"
# While another merge holds its lock (a replica's), meterd's skips, and
# reports count the rows not merged as they are: the same sums.
checks=$((checks + 1))
merged || fail "rows not merged after 5 s: $(unmerged)"
hold_merges
rows again.json acme a-3
post "$GOOD" again.json >/dev/null
sleep 1.5 # a merge or more would have run
checks=$((checks + 1))
got="$(fleet_usage) $(unmerged)"
[ "$got" = "12 1" ] || fail "the fleet's usage and rows not merged under another merge: $got, want 12 1"
release_merges
checks=$((checks + 1))
merged || fail "rows not merged after the lock: $(unmerged)"
# The repair after a merge of an older release: the sums by month
# computed again from the hours (the one kept wrong here by hand).
sql "UPDATE usage_period_merged SET samples = samples + 1 WHERE samples > 0" >/dev/null
checks=$((checks + 1))
[ "$(sql "SELECT meter_periods_rebuild() > 0")" = t ] || fail "meter_periods_rebuild wrote nothing"
period_sums_agree "$db" "the sums by month rebuilt"
checks=$((checks + 1))
got=$(fleet_usage)
[ "$got" = 12 ] || fail "the fleet's usage once merged: $got, want 12"

# --- the audit log ---------------------------------------------------------------
# Finalizations: acme by meterctl, beta by meterd (the finance key).
ctl invoice run --period "$last" --account acme --finalize >/dev/null 2>&1 || fail "finalize acme"
got=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $FIN" \
    -H "Content-Type: application/json" \
    --data-binary "{\"period\": \"$last\", \"account\": \"beta\", \"finalize\": true}" \
    "$url_main/v1/invoices/run")
checks=$((checks + 1))
[ "$got" = 200 ] || fail "finalize beta through meterd: HTTP $got"
number=$(ctl invoice list --account acme --status final | awk 'NR == 2 { print $1 }')
ctl invoice void "$number" --reason "forged usage" >/dev/null 2>&1 || fail "invoice void $number"
ctl keys revoke "$leaked" >/dev/null || fail "keys revoke"
# By hand, in SQL: recorded as the database user.
sql "UPDATE api_keys SET revoked_at = now() WHERE key_id = $fin" >/dev/null

log=$(ctl audit --format json)
me="meterctl:$(id -un)"
has() { # ACTION ACTOR SUBJECT-PART WHAT
    checks=$((checks + 1))
    jq -se --arg a "$1" --arg who "$2" --arg s "$3" \
        'any(.[]; .action == $a and .actor == $who and (.subject | contains($s)))' \
        <<<"$log" >/dev/null || fail "$4: no $1 by $2 on '$3' in: $log"
}
has book.import "$me" "e2b-hobby" "a book imported"
has account.assign "$me" "e2b-hobby" "an account put on a book"
has credit.grant "$me" "welcome" "a grant"
has key.create "$me" "key $leaked" "a key created"
has usage.quarantine "$me" "quarantine" "a quarantine"
has invoice.finalize "$me" "invoice $number" "a finalization by meterctl"
has invoice.finalize "meterd:key $fin (finance)" "invoice" "a finalization by meterd's finance key"
has credit_note.finalize "$me" "invoice" "a void (its credit note)"
has key.revoke "$me" "key $leaked" "a key revoked"
has key.revoke "$(sql "SELECT session_user")" "key $fin" "a key revoked by hand in SQL"
contains "$log" '"reason":"leaked in a log"' "the quarantine's reason"
checks=$((checks + 1))
[ "$(jq -s 'map(select(.action == "usage.quarantine")) | length' <<<"$log")" = 5 ] ||
    fail "every quarantine is audited, empty ones too"
# Oldest first, numbered, paged by --after.
checks=$((checks + 1))
jq -se 'map(.id) | . == sort and length > 10' <<<"$log" >/dev/null || fail "ids in order"
first=$(jq -s '.[0].id' <<<"$log")
checks=$((checks + 1))
[ "$(ctl audit --format json --after "$first" --limit 2 | jq -s 'map(.id) == [('"$first"' + 1), ('"$first"' + 2)]')" = true ] ||
    fail "--after and --limit"
expect_status 0 ctl audit
contains "$out" "usage.quarantine" "the table form"
expect_status 2 ctl audit --limit 0
contains "$err" "--limit '0'" "a bad limit is named"

# Changes by hand in SQL are recorded whole, as changes.
sql "UPDATE api_keys SET role = 'admin' WHERE key_id = $good" >/dev/null
sql "UPDATE api_keys SET revoked_at = NULL WHERE key_id = $leaked" >/dev/null
log=$(ctl audit --format json)
checks=$((checks + 2))
jq -se --arg k "key $good" 'any(.[]; .action == "key.change" and .subject == $k and .detail.old.role == "host" and .detail.new.role == "admin")' <<<"$log" >/dev/null ||
    fail "a role changed by hand: $(tail -3 <<<"$log")"
jq -se --arg k "key $leaked" 'any(.[]; .action == "key.change" and .subject == $k and .detail.new.revoked_at == null and .detail.old.revoked_at != null)' <<<"$log" >/dev/null ||
    fail "a key un-revoked by hand"
# An entry written by hand gets the server's time and user.
sql "INSERT INTO audit_log (at, actor, db_user, action, subject) VALUES ('2020-01-01', 'x', 'alice', 'forged', 'x')" >/dev/null
checks=$((checks + 1))
[ "$(sql "SELECT at > now() - interval '1 hour' AND db_user = session_user FROM audit_log WHERE action = 'forged'")" = t ] ||
    fail "an entry's time and user taken from the INSERT"
# sudo's user is believed as root only.
checks=$((checks + 1))
if [ "$(id -u)" = 0 ]; then
    SUDO_USER=alice ctl keys create --role host --name via-sudo >/dev/null 2>&1
    [ "$(sql "SELECT actor FROM audit_log WHERE detail->>'name' = 'via-sudo'")" = "meterctl:alice (sudo)" ] ||
        fail "root through sudo: the sudo user"
else
    SUDO_USER=alice ctl keys create --role host --name via-sudo >/dev/null 2>&1
    [ "$(sql "SELECT actor FROM audit_log WHERE detail->>'name' = 'via-sudo'")" = "$me" ] ||
        fail "SUDO_USER believed without root"
fi
# What is quarantined stays; audited tables are never truncated.
for stmt in "DELETE FROM usage_blocks_quarantined" "UPDATE usage_quarantines SET reason = 'x'" \
    "DELETE FROM usage_hourly_quarantined" "TRUNCATE usage_quarantines CASCADE" \
    "TRUNCATE api_keys CASCADE" "TRUNCATE account_price_books" "TRUNCATE price_books CASCADE"; do
    checks=$((checks + 1))
    psql "$db" -XAtc "$stmt" >/dev/null 2>&1 && fail "'$stmt' was allowed"
done

# Append-only, whoever asks.
n=$(sql "SELECT count(*) FROM audit_log")
for stmt in "UPDATE audit_log SET actor = 'nobody'" "DELETE FROM audit_log" "TRUNCATE audit_log"; do
    checks=$((checks + 1))
    psql "$db" -XAtc "$stmt" >/dev/null 2>"$tmp/sql.err" && fail "'$stmt' was allowed"
    contains "$(cat "$tmp/sql.err")" "append-only" "'$stmt' refused"
done
checks=$((checks + 1))
[ "$(sql "SELECT count(*) FROM audit_log")" = "$n" ] || fail "the log changed"
finish
