#!/bin/sh
# make demo: the embedded database, the schema, demo price books,
# accounts and a key; meterd on 127.0.0.1:8080; and a generated fleet
# streaming into it live. meterd and the fleet keep running after this
# script; `make demo-stop` (or the kill line printed) ends them.
set -eu
build=${1:-build}
ctl="$build/bin/meterctl"
meterd="$build/bin/meterd"
listen=${METER_LISTEN:-127.0.0.1:8080}
mkdir -p var

# A previous demo's processes go first.
for f in var/demo-fleet.pid var/meterd.pid; do
    if [ -f "$f" ]; then
        kill "$(cat "$f")" 2>/dev/null || true
        rm -f "$f"
    fi
done
sleep 1

"$ctl" db start
"$ctl" migrate
for b in e2b-pro fly-machines modal-team; do
    "$ctl" books add "pricing/books/$b.json"
done
today=$(date -u +%Y-%m-01)
"$ctl" accounts add acct-0 --name "Acme Agents" --book e2b-pro --from "$today"
"$ctl" accounts add acct-1 --name "Globex Evals" --book fly-machines --from "$today"
"$ctl" accounts add acct-2 --name "Initech Browsing" --book modal-team --from "$today"
token=$("$ctl" keys create --role host --name "demo host $(date -u +%H%M%S)" 2>/dev/null)

"$meterd" --listen "$listen" >var/meterd.log 2>&1 &
echo $! >var/meterd.pid
i=0
until curl -sf "http://$listen/readyz" >/dev/null 2>&1; do
    i=$((i + 1))
    if [ $i -gt 50 ]; then
        echo "demo: meterd did not start; see var/meterd.log" >&2
        tail -5 var/meterd.log >&2
        exit 1
    fi
    sleep 0.2
done

# 200 sandboxes of 3 accounts, pushed every 5 seconds as they run.
"$ctl" gen --sandboxes 200 --accounts 3 --seed "$(date +%s)" --follow \
    --batch-seconds 5 --push "http://$listen/v1/samples" --token "$token" \
    >var/demo-fleet.log 2>&1 &
echo $! >var/demo-fleet.pid

echo
echo "demo: meterd is listening on http://$listen, a live fleet of 200 sandboxes flows in:"
for i in 1 2 3 4; do
    sleep 5
    curl -s "http://$listen/metrics" | sed -n 's/^meter_samples_total{outcome="accepted"} /demo:   samples accepted so far: /p'
done
now=$(date +%s)
cat <<TXT

demo: send a sample yourself:
  curl -s -X POST http://$listen/v1/samples \\
    -H 'Authorization: Bearer $token' -H 'Content-Type: application/json' \\
    --data '[{"ts":$now,"account_id":"acct-0","sandbox_id":"my-sandbox","state":"running","vcpu":2,"cpu_used":0.5,"mem_bytes":2147483648,"disk_bytes":0}]'

demo: see what came in, and what it costs so far:
  curl -s http://$listen/metrics | grep meter_samples_total
  $ctl export --from $((now - 60)) --to $now | head -3
  $ctl rate --price-book pricing/books/fly-machines.json --from $((now - 3600)) --to $((now + 60)) --account acct-1 --format table

demo: logs in var/meterd.log and var/demo-fleet.log; stop with: make demo-stop
TXT
