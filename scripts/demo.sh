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
for b in e2b-pro fly-machines vercel-hobby daytona; do
    "$ctl" books add "pricing/books/$b.json"
done
today=$(date -u +%Y-%m-01)
# The live fleet uses every dimension, egress and disk included: its
# accounts are on the books that price them all (of the shipped books
# only these two: E2B publishes no egress price, Modal none for disk,
# Vercel Pro no fee; an account on such a book whose usage needs it gets
# no draft, and the overview lists it as not billed).
"$ctl" accounts add acct-0 --name "Acme Agents" --book vercel-hobby --from "$today"
"$ctl" accounts add acct-1 --name "Globex Evals" --book fly-machines --from "$today"
"$ctl" accounts add acct-2 --name "Initech Browsing" --book fly-machines --from "$today"
token=$("$ctl" keys create --role host --name "demo host $(date -u +%H%M%S)" 2>/dev/null)

# Samples of any age are taken: the README's examples post fixed dates
# (examples/samples.json).
"$meterd" --listen "$listen" --max-age 36500 >var/meterd.log 2>&1 &
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

# Invoices: two accounts with two months of history, invoiced and
# finalized: hist-a changes book mid-month, hist-b's second invoice
# carries late usage of its first month (both of hist-b's are paid by
# the daytona book's one-off $200 grant, so they total 0.00). Done once: a second demo finds
# them final and leaves them.
m2=$(date -u -d "$today -2 month" +%Y-%m)
m1=$(date -u -d "$today -1 month" +%Y-%m)
post() { # ACCOUNT SANDBOX START SECONDS VCPU
    printf '{"sandboxes":[{"account_id":"%s","sandbox_id":"%s","start":%s,"seconds":%s,"state":"running","vcpu":%s,"cpu_used":%s,"mem_bytes":4294967296,"disk_bytes":10737418240,"egress_bytes":0}]}' \
        "$1" "$2" "$3" "$4" "$5" "$5" |
        curl -sf -o /dev/null -X POST "http://$listen/v1/samples" \
            -H "Authorization: Bearer $token" -H 'Content-Type: application/json' --data-binary @- ||
        { echo "demo: posting $1's history failed" >&2; exit 1; }
}
at() { date -u -d "$1" +%s; }
close_month() { # MONTH: its storage closed, its invoices final
    "$ctl" usage compact --period "$1"
    "$ctl" invoice run --period "$1" --finalize --seller "Meter Demo Inc."
}
if [ -z "$("$ctl" invoice list --account hist-a --status final | sed 1d)" ]; then
    "$ctl" accounts add hist-a --name "Hooli Research" --book e2b-pro --from "$m2-01"
    "$ctl" accounts add hist-a --book fly-machines --from "$m2-15"
    "$ctl" accounts add hist-b --name "Pied Piper" --book daytona --from "$m2-01"
    # hist-a: 8 hours across midnight into the 15th, when its book changes.
    post hist-a hooli-1 "$(at "$m2-14 20:00")" 28800 4
    post hist-a hooli-2 "$(at "$m2-20 09:00")" 7200 2
    post hist-b piper-1 "$(at "$m2-03 10:00")" 36000 2
    close_month "$m2"
    # Late: a host that was offline delivers hist-b's usage of the 25th.
    post hist-b piper-2 "$(at "$m2-25 14:00")" 3600 8
    post hist-a hooli-3 "$(at "$m1-05 08:00")" 14400 2
    post hist-b piper-3 "$(at "$m1-06 08:00")" 14400 2
    close_month "$m1"
fi
mkdir -p var/invoices
"$ctl" invoice list --status final | sed 1d | while read -r number _; do
    "$ctl" invoice show "$number" --format pdf --output "var/invoices/$number.pdf"
    "$ctl" invoice show "$number" --format html --output "var/invoices/$number.html"
done
finance=$("$ctl" keys create --role finance --name "demo finance $(date -u +%H%M%S)" 2>/dev/null)
admin=$("$ctl" keys create --role admin --name "demo admin $(date -u +%H%M%S)" 2>/dev/null)
# What the README's examples read: `. var/demo.env`.
umask 077
cat >var/demo.env <<ENV
METER_URL=http://$listen
HOST_TOKEN=$token
FINANCE_TOKEN=$finance
ADMIN_TOKEN=$admin
ENV
umask 022

# What a month of a coding agent costs on every price book, each mean
# to within 2% (a second or two; the default 0.5% takes longer: see
# docs/simulator.md), the table's one line per book here, and the
# report with its charts in var/costsim-report.html.
echo
echo "demo: what a month of simulator/profiles/coding-agent.json costs on each price book:"
"$build/bin/costsim" --profile simulator/profiles/coding-agent.json \
    --precision 0.02 --html var/costsim-report.html >var/costsim.txt
grep -v '^    ' var/costsim.txt | sed -n '4,$s/^/  /p'

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
# The current month's drafts: the dashboards' unbilled estimates and
# revenue so far (a cron of this keeps them fresh). An account whose
# book has no price for a dimension it used gets no draft; the run says
# which and goes on with the others.
"$ctl" invoice run --period "$(date -u +%Y-%m)" >/dev/null ||
    echo "demo: (the accounts named above have no draft this month)"
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

demo: finalized invoices ($m2 and $m1; hist-a changed book on $m2-15,
hist-b's $m1 invoice carries late usage of $m2, and Daytona's one-off
\$200 credit grant pays hist-b's invoices):
$("$ctl" invoice list --status final | sed 's/^/  /')
  PDF and HTML: var/invoices/ (e.g. var/invoices/$(ls var/invoices | grep pdf | tail -1))
  $ctl invoice show NUMBER --format json|csv|html|pdf
  curl -s -H 'Authorization: Bearer $finance' http://$listen/v1/invoices
  curl -s -H 'Authorization: Bearer $finance' http://$listen/v1/invoices/NUMBER.pdf -o invoice.pdf

demo: the cost comparison (a coding agent's month on every book, means to 2%):
  table: var/costsim.txt
  report with charts: $(pwd)/var/costsim-report.html (open it in a browser)
  to 0.5%: $build/bin/costsim --profile simulator/profiles/coding-agent.json --html report.html

demo: the finance dashboards: open http://$listen/sign-in and sign in
with the finance key $finance
  (overview, accounts, usage, invoices; the JSON behind them:
  curl -s -H 'Authorization: Bearer $finance' http://$listen/v1/reports/overview)

demo: the tokens above are in var/demo.env, which the README's examples
read (. var/demo.env)
demo: logs in var/meterd.log and var/demo-fleet.log; stop with: make demo-stop
TXT
