#!/bin/bash
# Crashes and database faults (issue 9; figures in docs/reliability.md),
# through the real binaries over real HTTP:
#   1. a generated fleet pushed by clients that send every batch again
#      until it is acknowledged, while meterd is SIGKILLed at seeded
#      moments and restarted on the same port;
#   2. PostgreSQL restarted (once after a crash), and stopped for a few
#      seconds, during ingestion: 503 with Retry-After, recovery without
#      help;
#   3. an invoice run, and a finalization, killed half way, then run
#      again.
# After 1 and 2 what is stored equals what was generated, sample for
# sample and in the hourly rollups: nothing lost, nothing doubled.
# PostgreSQL is a private cluster of this test (the shared one serves
# other tests meanwhile and must not restart). FAULTS_SEED picks other
# moments; FAULTS_KEEP=1 keeps the directory and its database running
# after the test. The figures are printed on stdout, lines "faults: ...".
. "$(dirname "$0")/lib.sh"
books=$(cd "$(dirname "$0")/../pricing/books" && pwd)
for tool in curl jq psql; do
    command -v $tool >/dev/null || { fail "$tool not found"; finish; exit; }
done
seed=${FAULTS_SEED:-9}
port=$((20000 + (RANDOM ^ $$) % 30000)) # not seeded: tests run at once
SECONDS=0

tmp=$(mktemp -d)
mpid=
clients=()
extra_pids=()
cleanup() {
    for p in "${clients[@]}" "${extra_pids[@]}" $mpid; do kill -KILL "$p" 2>/dev/null; done
    wait 2>/dev/null
    if [ -n "${FAULTS_KEEP:-}" ]; then # to look into a failure
        echo "faults: kept $tmp and its database, running: ${db:-}" >&2
        return
    fi
    (cd "$tmp" && "$METERCTL" db destroy --yes >/dev/null 2>&1)
    cd / && rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp" || exit 1
private_cluster
ctl() { "$METERCTL" --db "$wdb" "$@"; }
"$METERCTL" --db "$db" migrate >/dev/null || { fail "migrate"; finish; exit; }
HOST=$(ctl keys create --role host --name faults 2>/dev/null)
[ -n "$HOST" ] || { fail "keys create"; finish; exit; }

# meterd_up: meterd on $port (the same each time, as a supervisor
# restarts it), its log appended to meterd.log; sets mpid. A port that
# stays taken on the first start is given up for another.
meterd_up() {
    local try i
    for try in $(seq 1 40); do
        "$METERD" --listen 127.0.0.1:$port --db "$wdb" --threads 3 >>meterd.log 2>&1 &
        mpid=$!
        for i in $(seq 1 100); do
            curl -sf -o /dev/null "http://127.0.0.1:$port/healthz" && return 0
            kill -0 $mpid 2>/dev/null || break
            sleep 0.02
        done
        kill -KILL $mpid 2>/dev/null
        wait $mpid 2>/dev/null
        mpid=
        [ "${first_start:-}" = yes ] && [ $try -ge 3 ] && port=$((20000 + (port + 7919) % 30000))
        sleep 0.1
    done
    fail "meterd does not start on port $port: $(tail -n 5 meterd.log)"
    return 1
}
first_start=yes
meterd_up || { finish; exit; }
first_start=no
url=http://127.0.0.1:$port

# The previous month (UTC): ended, so that it can be finalized, and
# within meterd's acceptance window.
p_start=$(date -u -d "$(date -u +%Y-%m-01) -1 month" +%s)
period=$(date -u -d "@$p_start" +%Y-%m)

# fleet SEED START SECONDS: a client's fleet, 12 sandboxes of acct-0..3
# (its sandbox ids carry the seed).
fleet() { echo --sandboxes 12 --accounts 4 --seconds $3 --seed $1 --start $2; }
# push NAME START SECONDS RATE SEED...: one client per seed, pushing its
# fleet in batches of a minute at most RATE samples a second (so that
# the faults land during the push, however fast the machine); the
# samples they send are written to NAME.ndjson. Sets clients.
push() {
    local name=$1 start=$2 seconds=$3 rate=$4 s
    shift 4
    clients=()
    : >"$name.ndjson"
    for s in "$@"; do
        ctl gen $(fleet $s $start $seconds) >>"$name.ndjson" || fail "gen --seed $s"
    done
    for s in "$@"; do
        # (the program itself in the background, not a function's
        # subshell: its pid is the one to wait for, or to kill)
        "$METERCTL" gen $(fleet $s $start $seconds) --batch-seconds 60 --rate $rate --retry-for 60 \
            --push "$url/v1/samples" --token "$HOST" 2>"$name-$s.log" &
        clients+=($!)
    done
}
running() { # whether a client is still pushing
    local p
    for p in "${clients[@]}"; do kill -0 $p 2>/dev/null && return 0; done
    return 1
}
# clients_done NAME: waits for the clients; each must have had every
# batch acknowledged.
clients_done() {
    local p rc i=0
    for p in "${clients[@]}"; do
        wait $p
        rc=$?
        i=$((i + 1))
        checks=$((checks + 1))
        [ $rc = 0 ] || fail "$1: client $i exited $rc: $(tail -n 2 "$1"-*.log)"
    done
    clients=()
}
# said NAME FIELD: the sum over NAME's clients of a count of their last
# line ("... 5 accepted, 2 duplicates, ...; retried 3 cut off, ...").
said() {
    cat "$1"-*.log | grep 'meterctl: pushed' |
        awk -v f="$2" '{ for (i = 2; i <= NF; i++) { w = $i; gsub(/[,;:]/, "", w); if (w == f) s += $(i - 1) } } END { print s + 0 }'
}

# --- 1. meterd SIGKILLed during the push ---------------------------------
# Each part draws from the seed afresh: how many kills part 1 makes
# depends on the machine's speed, and must not move the later moments.
part_start=$SECONDS
RANDOM=$seed
# Three clients; meterd killed at seeded moments 0.15-0.6 s apart, and
# sometimes left down a while before its restart, until they are done.
# A batch takes milliseconds and the clients keep to a rate, so meterd
# is mostly idle: every commit is made to wait 20 ms for its WAL flush
# (a slow disk), here and in part 2, so that more faults land with a
# batch in flight, before its COMMIT or after it and before the 200.
psql "$db" -qAt -c "ALTER SYSTEM SET commit_delay = 20000" \
    -c "ALTER SYSTEM SET commit_siblings = 0" -c "SELECT pg_reload_conf()" >/dev/null ||
    fail "cannot slow the commits down"
t1=$((p_start + 86400))
push crash $t1 5400 6000 101 102 103
kills=0
while running; do
    sleep "0.$((150 + RANDOM % 450))"
    running || break
    kill -KILL $mpid
    wait $mpid 2>/dev/null
    kills=$((kills + 1))
    [ $((RANDOM % 4)) = 0 ] && sleep "0.$((RANDOM % 8))"
    meterd_up || break
done
clients_done crash
checks=$((checks + 1))
# Enough kills to matter: a cycle is a kill 0.15-0.6 s after the last
# restart plus meterd's own restart, which a loaded machine slows (9
# kills in a run beside a build, 10 to 20 on an idle machine).
[ $kills -ge 5 ] || fail "only $kills kills of meterd during the push (want 5 or more)"
check_stored crash $t1 $((t1 + 5400))
# Every sample acknowledged once: accepted, or a duplicate when the
# batch had committed before its 200 was lost and came again.
accepted=$(said crash accepted)
dups=$(said crash duplicates)
checks=$((checks + 1))
[ $((accepted + dups)) = "$generated" ] ||
    fail "crash: the replies acknowledged $accepted accepted and $dups duplicate samples, $generated were generated"
[ "$(said crash conflicts)" = 0 ] || fail "crash: conflicts $(said crash conflicts) (a copy differed)"
echo "faults: crash: meterd SIGKILLed $kills times during the push of 3 clients; $generated samples generated, $(said crash samples) pushed (each batch until a 200), $stored stored; replies: $accepted accepted, $(said crash duplicates) duplicates (copies of batches whose 200 was lost), $(said crash conflicts) conflicts; retries: $(said crash cut) cut off mid-request, $(said crash unreachable) refused; lost $lost, doubled $doubled ($((SECONDS - part_start)) s)"

# --- 2. the database restarted and stopped during the push ----------------
part_start=$SECONDS
RANDOM=$((seed + 1))
t2=$((p_start + 3 * 86400))
pid_before=$mpid
# Two clients, 7.5 s of pushing at least (longer with each 503's
# Retry-After): still at it when the outage comes, 5-7 s in.
push dbfault $t2 3600 5000 201 202
# A restart (fast shutdown: sessions terminated, transactions rolled
# back), then a crash (immediate shutdown), each started again at once.
restarts=0
for how in db_stop db_crash; do
    sleep "1.$((RANDOM % 5))"
    running || fail "the clients ended before the database's $how"
    $how
    db_start
    restarts=$((restarts + 1))
done
sleep "1.$((RANDOM % 5))"
running || fail "the clients ended before the database outage"
db_stop
down_at=$(date +%s.%N)
# A batch while it is down: 503 and Retry-After, nothing stored (its
# sample is in no range the checks read).
printf '[{"ts":%d,"account_id":"probe","sandbox_id":"probe-1","state":"paused","disk_bytes":1}]' \
    $((p_start + 20 * 86400)) >probe.json
code=$(curl -s -o probe.out -D probe.headers -w '%{http_code}' -X POST \
    -H "Authorization: Bearer $HOST" -H 'Content-Type: application/json' \
    --data-binary @probe.json "$url/v1/samples")
checks=$((checks + 1))
[ "$code" = 503 ] || fail "a batch with the database down: HTTP $code, want 503: $(cat probe.out)"
retry_after=$(tr -d '\r' <probe.headers | sed -n 's/^[Rr]etry-[Aa]fter: *//p')
checks=$((checks + 1))
[ -n "$retry_after" ] && [ "$retry_after" -ge 1 ] 2>/dev/null ||
    fail "the 503 with the database down has no Retry-After: $(cat probe.headers)"
contains "$(cat probe.out)" '"type":"urn:meter:problem:unavailable"' "the 503 with the database down"
code=$(curl -s -o /dev/null -w '%{http_code}' "$url/readyz")
checks=$((checks + 1))
[ "$code" = 503 ] || fail "/readyz with the database down: HTTP $code, want 503"
sleep "2.$((RANDOM % 10))"
db_start
up_at=$(date +%s.%N)
outage=$(awk -v a=$down_at -v b=$up_at 'BEGIN { printf "%.1f", b - a }')
# Back without help: ready again within a few seconds.
ready=0
for i in $(seq 1 50); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$url/readyz")" = 200 ] && { ready=1; break; }
    sleep 0.1
done
checks=$((checks + 1))
[ $ready = 1 ] || fail "/readyz is not 200 within 5 s of the database's return"
clients_done dbfault
psql "$db" -qAt -c "ALTER SYSTEM RESET commit_delay" -c "ALTER SYSTEM RESET commit_siblings" \
    -c "SELECT pg_reload_conf()" >/dev/null || fail "cannot reset the commits' delay"
checks=$((checks + 1))
[ "$mpid" = "$pid_before" ] && kill -0 $mpid 2>/dev/null ||
    fail "meterd did not live through the database faults"
busy=$(said dbfault busy)
checks=$((checks + 1))
[ "$busy" -gt 0 ] || fail "no client saw a 503 while the database was down"
check_stored dbfault $t2 $((t2 + 3600))
accepted=$(said dbfault accepted)
dups=$(said dbfault duplicates)
checks=$((checks + 1))
[ $((accepted + dups)) = "$generated" ] ||
    fail "dbfault: the replies acknowledged $accepted accepted and $dups duplicate samples, $generated were generated"
[ "$(said dbfault conflicts)" = 0 ] || fail "dbfault: conflicts $(said dbfault conflicts)"
# A database fault is a 503 (retry), never a 500 (nothing to retry).
n500=$(awk '$4 == "POST" && $6 == 500' meterd.log | wc -l)
checks=$((checks + 1))
[ "$n500" = 0 ] || fail "meterd answered 500 to $n500 batches: $(awk '$2 == "error"' meterd.log | head -n 3)"
echo "faults: database: $restarts restarts (one after a fast shutdown, one after a crash: immediate shutdown, WAL replayed) and an outage of $outage s during the push of 2 clients, one meterd throughout (pid unchanged, ready again on its own); a batch while down got 503 with Retry-After: $retry_after; $generated samples generated, $(said dbfault samples) pushed, $stored stored; replies: $accepted accepted, $(said dbfault duplicates) duplicates, $(said dbfault conflicts) conflicts; retries: $busy 503, $(said dbfault cut) cut off, $(said dbfault unreachable) refused; lost $lost, doubled $doubled ($((SECONDS - part_start)) s)"

kill -TERM $mpid
wait $mpid
mpid=

# --- 3. an invoice run and a finalization killed half way -----------------
part_start=$SECONDS
RANDOM=$((seed + 2))
# The fleet's four accounts, on a book with a grant (small enough to be
# spent in part: a credit_grant line), on one with a subscription, and
# (acct-3, whose browsers send egress) on one that prices egress; and
# 300 quiet accounts (a subscription, or nothing owed), so that a run
# lasts long enough to be killed half way (these by SQL, the rows
# `accounts add` writes: 300 runs of meterctl would take seconds).
for b in e2b-hobby e2b-pro fly-machines; do
    jq '.effective_from = "2000-01-01" | if .grants then .grants[0].amount = "5" else . end' \
        "$books/$b.json" >$b.json && ctl books add $b.json >/dev/null || fail "books add $b"
done
for a in acct-0:e2b-hobby acct-1:e2b-pro acct-2:e2b-hobby acct-3:fly-machines; do
    ctl accounts add ${a%%:*} --book ${a#*:} --from $period-01 >/dev/null || fail "accounts add $a"
done
psql "$db" -qAt -v ON_ERROR_STOP=1 >/dev/null <<SQL || fail "adding the quiet accounts"
INSERT INTO accounts (account_id) SELECT 'quiet-' || g FROM generate_series(1, 300) g;
INSERT INTO account_price_books (account_id, valid_from, price_book_id, version)
  SELECT 'quiet-' || g, '$period-01', CASE WHEN g % 2 = 0 THEN 'e2b-pro' ELSE 'e2b-hobby' END, 1
  FROM generate_series(1, 300) g;
SQL
naccounts=304
seller="Faults Test Ltd"
# Batches of 8 accounts: a kill falls between batches, or inside one.
run() { "$METERCTL" --db "$wdb" invoice run --period $period --jobs 2 --batch 8 --seller "$seller" "$@"; }
# run_bg ARGS: the run in the background, its pid in $! (the program's:
# a function's would be the subshell's, and killing that one would leave
# the run going).
run_bg() {
    "$METERCTL" --db "$wdb" invoice run --period $period --jobs 2 --batch 8 --seller "$seller" "$@" &
}

# canon CONNINFO: the period's documents, one line each, without what
# legitimately differs between runs that computed the same documents:
# invoice_id and invoice_usage.seq (identities: a killed transaction
# uses values up, and the two workers reach accounts in any order),
# created_at (when the draft was last written) and, once final, number
# (taken in the order accounts finish), finalized_at (the clock) and
# sha256 (which covers both).
canon() {
    psql "$1" -qAt -v ON_ERROR_STOP=1 -c "
SELECT i.account_id, i.kind, i.status, i.currency, i.total, i.seller,
  coalesce(i.account_name, ''),
  coalesce((SELECT json_agg(json_build_array(l.line_no, l.kind, l.corrects,
      l.period, l.price_book_id, l.version, l.description, l.quantity, l.unit,
      l.unit_price, l.amount, l.instance, l.grant_id) ORDER BY l.line_no)
    FROM invoice_lines l WHERE l.account_id = i.account_id
    AND l.invoice_id = i.invoice_id)::text, '[]'),
  coalesce((SELECT json_agg(json_build_array(u.period, u.samples, u.first_runs)
      ORDER BY u.period)
    FROM invoice_usage u WHERE u.account_id = i.account_id
    AND u.invoice_id = i.invoice_id)::text, '[]')
FROM invoices i WHERE i.period = '$period-01' ORDER BY i.account_id, i.kind"
}
# count STATUS: the period's invoices of that status.
count() {
    psql "$db" -qAtc "SELECT count(*) FROM invoices WHERE period = '$period-01' AND status = '$1'"
}
# kill_at STATUS N PID: SIGKILLs PID once N invoices of the period have
# that status (polling); sets seen to the count then. Runs $after_kill,
# if set, before waiting for the client's backends to end.
kill_at() {
    seen=0
    while kill -0 $3 2>/dev/null; do
        seen=$(count $1)
        [ "$seen" -ge $2 ] && { kill -KILL $3; break; }
        sleep 0.01
    done
    wait $3 2>/dev/null
    ${after_kill:-}
    settle
}
# settle: waits for the backends of a killed client to end (one may be
# committing what the client sent last), so that what is counted stays.
settle() {
    local i
    for i in $(seq 1 200); do
        [ "$(psql "$db" -qAtc "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()")" = 0 ] && return
        sleep 0.02
    done
    fail "the backends of a killed client do not end"
}
# show DB REF: invoice show's JSON without what differs legitimately.
show() {
    "$METERCTL" --db "$1" invoice show "$2" |
        jq -S 'del(.id, .created_at, .number, .finalized_at, .sha256)'
}

# The reference: the same data, run without interruption.
psql "$db" -qAtc "CREATE DATABASE faults_ref TEMPLATE meter" >/dev/null || fail "copying the database"
ref="$db dbname=faults_ref"
wref="$wdb dbname=faults_ref"
"$METERCTL" --db "$wref" invoice run --period $period --jobs 2 --seller "$seller" >ref-run.out 2>&1 ||
    fail "the reference run: $(cat ref-run.out)"
canon "$ref" >ref-drafts.txt
checks=$((checks + 1))
[ "$(wc -l <ref-drafts.txt)" = $naccounts ] || fail "the reference run made $(wc -l <ref-drafts.txt) drafts, want $naccounts"

# Drafts: the run SIGKILLed once a seeded share of them is written.
# The batch of the last account waits meanwhile on its row, locked by
# another session, so that the kill lands before the run is done
# however fast the machine (a batch writes its drafts at once).
at=$((naccounts * (20 + RANDOM % 50) / 100))
last=$(psql "$db" -qAtc "SELECT max(account_id) FROM accounts")
PGAPPNAME=faults_hold psql "$db" -qAt -c "BEGIN" \
    -c "SELECT 1 FROM accounts WHERE account_id = '$last' FOR UPDATE" \
    -c "SELECT pg_sleep(60)" >/dev/null 2>&1 &
holder=$!
for i in $(seq 1 100); do
    [ "$(psql "$db" -qAtc "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'faults_hold' AND l.locktype = 'transactionid'")" -gt 0 ] && break
    sleep 0.05
done
release() {
    psql "$db" -qAtc "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'faults_hold'" >/dev/null
    wait $holder 2>/dev/null
}
run_bg >run1.out 2>&1
after_kill=release kill_at draft $at $!
drafts_killed=$(count draft)
checks=$((checks + 1))
[ "$drafts_killed" -gt 0 ] && [ "$drafts_killed" -lt $naccounts ] ||
    fail "the run was not killed half way: $drafts_killed of $naccounts drafts"
psql "$db" -qAtc "SELECT account_id, invoice_id FROM invoices WHERE period = '$period-01'" | LC_ALL=C sort >ids-before.txt
expect_status 0 run
contains "$out" "$naccounts accounts, $naccounts drafts, 0 finalized" "the run again"
canon "$db" >drafts.txt
checks=$((checks + 1))
cmp -s ref-drafts.txt drafts.txt || fail "the drafts after a killed run differ from an uninterrupted run's: $(diff ref-drafts.txt drafts.txt | head -n 4)"
# A draft keeps its id across runs.
psql "$db" -qAtc "SELECT account_id, invoice_id FROM invoices WHERE period = '$period-01'" | LC_ALL=C sort >ids-after.txt
checks=$((checks + 1))
[ -z "$(LC_ALL=C comm -23 ids-before.txt ids-after.txt)" ] || fail "drafts written before the kill changed ids"
for a in acct-0 acct-1 acct-2 acct-3 quiet-1; do
    r=$(psql "$ref" -qAtc "SELECT invoice_id FROM invoices WHERE account_id = '$a' AND period = '$period-01'")
    m=$(psql "$db" -qAtc "SELECT invoice_id FROM invoices WHERE account_id = '$a' AND period = '$period-01'")
    checks=$((checks + 1))
    [ "$(show "$wref" "$r")" = "$(show "$wdb" "$m")" ] || fail "invoice show of $a's draft differs from the reference"
done
contains "$(ctl invoice show $(psql "$db" -qAtc "SELECT invoice_id FROM invoices WHERE account_id = 'acct-0' AND period = '$period-01'"))" \
    '"kind": "credit_grant"' "acct-0's draft spends its grant"
echo "faults: invoice run of $naccounts accounts SIGKILLed with $drafts_killed drafts written; run again: $naccounts drafts identical to an uninterrupted run's (ids, creation times aside), the drafts written before the kill kept their ids"

"$METERCTL" --db "$wref" invoice run --period $period --finalize --jobs 2 --seller "$seller" >ref-final.out 2>&1 ||
    fail "the reference finalization: $(cat ref-final.out)"
canon "$ref" >ref-finals.txt
year=$(date -u +%Y)

# One account's finalization, its backend terminated at its last step:
# invoice_numbers is held by another session, so the run stops there,
# its draft rewritten within its transaction; nothing of it may stay.
psql "$db" -qAt -c "BEGIN" -c "LOCK TABLE invoice_numbers IN EXCLUSIVE MODE" \
    -c "SELECT pg_sleep(60)" >/dev/null 2>&1 &
extra_pids+=($!)
locker=$!
held=0
for i in $(seq 1 200); do
    held=$(psql "$db" -qAtc "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'invoice_numbers' AND l.mode = 'ExclusiveLock' AND l.granted")
    [ "$held" = 1 ] && break
    sleep 0.02
done
checks=$((checks + 1))
[ "$held" = 1 ] || fail "cannot hold invoice_numbers"
run_bg --account acct-0 --finalize >one.out 2>&1
one=$!
victim=
for i in $(seq 1 200); do
    victim=$(psql "$db" -qAtc "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%invoice_numbers%'")
    [ -n "$victim" ] && break
    sleep 0.01
done
checks=$((checks + 1))
[ -n "$victim" ] || fail "the finalization of acct-0 never waited for its number"
psql "$db" -qAtc "SELECT pg_terminate_backend($victim)" >/dev/null
wait $one
rc=$?
checks=$((checks + 1))
[ $rc = 1 ] || fail "the finalization whose backend was terminated exited $rc, want 1: $(cat one.out)"
psql "$db" -qAtc "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(60)%' AND pid <> pg_backend_pid()" >/dev/null
wait $locker 2>/dev/null
checks=$((checks + 1))
[ "$(count final)" = 0 ] || fail "a finalization whose backend was terminated left a final invoice"
[ "$(psql "$db" -qAtc "SELECT count(*) FROM invoice_numbers")" = 0 ] || fail "a terminated finalization took a number"
canon "$db" >drafts2.txt
cmp -s ref-drafts.txt drafts2.txt || fail "a terminated finalization changed the drafts: $(diff ref-drafts.txt drafts2.txt | head -n 4)"

# The whole run's finalization SIGKILLed once a seeded share is final:
# each invoice is final, with its number and hash, or still its draft;
# the numbers taken are gap-free; the run again completes it.
at=$((naccounts * (20 + RANDOM % 50) / 100))
run_bg --finalize >final1.out 2>&1
kill_at final $at $!
finals_killed=$(count final)
checks=$((checks + 1))
[ "$finals_killed" -gt 0 ] && [ "$finals_killed" -lt $naccounts ] ||
    fail "the finalization was not killed half way: $finals_killed of $naccounts final"
state=$(psql "$db" -qAtc "SELECT count(*), count(DISTINCT account_id), count(*) FILTER (WHERE status = 'draft'), count(number), coalesce(max(number), '') FROM invoices WHERE period = '$period-01'")
checks=$((checks + 1))
[ "$state" = "$naccounts|$naccounts|$((naccounts - finals_killed))|$finals_killed|$(printf '%s-%06d' $year $finals_killed)" ] ||
    fail "after a killed finalization (documents|accounts|drafts|numbers|last number): $state, want $naccounts|$naccounts|$((naccounts - finals_killed))|$finals_killed|$(printf '%s-%06d' $year $finals_killed)"
# Whatever is final is what an uninterrupted finalization made; whatever
# is not is the draft it was.
canon "$db" | LC_ALL=C sort >half.txt
LC_ALL=C sort ref-finals.txt ref-drafts.txt | LC_ALL=C comm -23 half.txt - >odd.txt
checks=$((checks + 1))
[ ! -s odd.txt ] || fail "after a killed finalization, documents neither final as in the reference nor the draft: $(head -n 2 odd.txt)"
for n in 1 $finals_killed; do
    num=$(printf '%s-%06d' $year $n)
    expect_status 0 ctl invoice show $num
    contains "$out" "\"number\": \"$num\"" "final invoice $num reads back with its hash"
done
expect_status 0 run --finalize
contains "$out" "$((naccounts - finals_killed)) finalized, $finals_killed already final, 0 failed" "the finalization again"
canon "$db" >finals.txt
checks=$((checks + 1))
cmp -s ref-finals.txt finals.txt || fail "the finals after a killed finalization differ from an uninterrupted one's: $(diff ref-finals.txt finals.txt | head -n 4)"
state=$(psql "$db" -qAtc "SELECT count(*) FILTER (WHERE status = 'final'), count(DISTINCT number), max(number) FROM invoices WHERE period = '$period-01'")
checks=$((checks + 1))
[ "$state" = "$naccounts|$naccounts|$(printf '%s-%06d' $year $naccounts)" ] ||
    fail "numbers after the finalization again (finals|numbers|last): $state"
for a in acct-0 acct-1 acct-2 acct-3; do
    r=$(psql "$ref" -qAtc "SELECT number FROM invoices WHERE account_id = '$a' AND period = '$period-01'")
    m=$(psql "$db" -qAtc "SELECT number FROM invoices WHERE account_id = '$a' AND period = '$period-01'")
    checks=$((checks + 1))
    [ "$(show "$wref" "$r")" = "$(show "$wdb" "$m")" ] || fail "invoice show of $a's final invoice differs from the reference"
done
echo "faults: finalization: one account's, its backend terminated at its last step: nothing final, no number taken; the whole run's, SIGKILLed with $finals_killed of $naccounts final: each invoice final or its draft, numbers $year-000001 to $(printf '%s-%06d' $year $finals_killed) without a gap; run again: $((naccounts - finals_killed)) finalized, $finals_killed already final, all $naccounts identical to an uninterrupted finalization's (numbers, times and hashes aside), numbers without a gap ($((SECONDS - part_start)) s)"
psql "$db dbname=postgres" -qAtc "DROP DATABASE faults_ref" >/dev/null

# What the sanitizers said of the programs whose stderr went to files
# here, out of ctest's sight (meterd stopped by SIGTERM above checks
# for leaks).
checks=$((checks + 1))
reports=$(grep -l -E 'ERROR: (Address|Leak)Sanitizer|runtime error:' ./*.log ./*.out 2>/dev/null)
[ -z "$reports" ] || fail "sanitizer reports in $reports: $(grep -h -A 5 -E 'Sanitizer|runtime error:' $reports | head -n 20)"

echo "faults: ${SECONDS} s in all (seed $seed)"
finish
