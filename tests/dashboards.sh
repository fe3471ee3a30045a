#!/bin/bash
# The finance dashboards in a real browser: Debian's chromium, headless,
# driven by puppeteer-core with axe-core (tools/browser/check-dashboards.mjs,
# installed from npm with its lock file by make check). meterd serves a
# generated fleet of four accounts on two books, with a finalized past
# period and the current period's drafts, so that every page has
# numbers; the browser signs in through the form, visits every page,
# changes a filter, a sort and the period, downloads a CSV, walks the
# header with the keyboard and signs out, then signs in with an account
# key. It fails on a console error, a failed request, a request to
# another origin, an empty chart, a number on the page that differs from
# the JSON API, a CSV that differs from its table, and any serious or
# critical accessibility violation. Screenshots of each page are left in
# $DASHBOARDS_SHOTS to look at.
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/.." && pwd)
check=$top/tools/browser/check-dashboards.mjs
missing=""
command -v node >/dev/null || missing="node"
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || missing="$missing chromium (scripts/install-deps.sh)"
for m in puppeteer-core axe-core; do
    [ -d "$top/tools/browser/node_modules/$m" ] ||
        missing="$missing $m (npm ci in tools/browser, as make check does)"
done
if [ -n "$missing" ]; then
    echo "dashboards: missing:$missing" >&2
    [ "${CI:-}" = true ] && { echo "failing: CI=true requires them" >&2; exit 1; }
    exit 77
fi
with_meterd
ctl() { "$METERCTL" --db "$wdb" "$@"; }

# Two books: one by usage (per minute, storage, egress, runs, autopause),
# one a plan with a monthly fee.
cat >usage.json <<'JSON'
{"id": "usage", "currency": "USD", "effective_from": "2025-01-01",
 "cpu": {"basis": "allocated", "rate": "0.0504", "per": "hour"},
 "memory": {"basis": "allocated", "unit": "GiB", "rate": "0.0000045", "per": "second"},
 "storage": {"rate": "0.000108", "per": "hour", "billed_when": "running"},
 "egress": {"rate": "0.05"}, "per_run": "0.001", "granularity_s": 60,
 "autopause": {"idle_below": "0.1", "after_s": 300}}
JSON
cat >plan.json <<'JSON'
{"id": "plan", "currency": "USD", "effective_from": "2025-01-01",
 "cpu": {"basis": "allocated", "rate": "0.000014", "per": "second"},
 "memory": {"basis": "allocated", "unit": "GiB", "rate": "0.0000045", "per": "second"},
 "storage": {"rate": "0", "per": "month"}, "egress": {"rate": "0.09"}, "per_run": "0",
 "subscription": {"monthly_fee": "31", "included_credit": "0",
                  "max_concurrency": null, "max_session_s": null}}
JSON
"$METERCTL" --db "$db" migrate >/dev/null || { fail "migrate"; finish; exit; }
ctl books add usage.json >/dev/null || fail "books add usage"
ctl books add plan.json >/dev/null || fail "books add plan"
HOST=$(ctl keys create --role host --name h)
FIN=$(ctl keys create --role finance --name f)
ACC=$(ctl keys create --role account --account acct-1 --name a1)
start_meterd a "$wdb" || { finish; exit; }

# The fleet: three days of the previous month, the first days of this
# one that have passed, and the last half hour (so that "ingested per
# minute" has points and the current period has usage whatever today
# is).
now=$(date -u +%s)
period=$(date -u +%Y-%m)
first=$(date -u -d "$period-01" +%s)
prev=$(date -u -d "$period-01 -1 month" +%Y-%m)
prev_first=$(date -u -d "$prev-01" +%s)
starts="$((prev_first + 9 * 86400 + 32400)) $((prev_first + 10 * 86400 + 50400))
    $((prev_first + 12 * 86400 + 7200))"
for d in 0 1; do
    s=$((first + d * 86400 + 36000))
    [ $((s + 1200)) -lt $((now - 1800)) ] && starts="$starts $s"
done
seed=1
for s in $starts; do
    ctl gen --sandboxes 6 --accounts 4 --seconds 1200 --start "$s" --seed $seed \
        --push "$url_a" --token "$HOST" >gen.out 2>&1 || fail "gen at $s: $(cat gen.out)"
    seed=$((seed + 1))
done
# The last half hour, but in this month even in its first minutes (up
# to 4 minutes ahead: meterd takes samples up to 5 minutes early).
last=$((now - 1800 > first ? now - 1800 : first))
len=$((now + 240 - last < 1500 ? now + 240 - last : 1500))
ctl gen --sandboxes 6 --accounts 4 --seconds $len --start $last \
    --seed 9 --push "$url_a" --token "$HOST" >gen.out 2>&1 || fail "gen now: $(cat gen.out)"

# Names to filter by; acct-1 and acct-3 on the plan.
ctl accounts add acct-0 --name "Acme Robotics" --book usage --from "$prev-01" >/dev/null || fail "acct-0"
ctl accounts add acct-1 --name "Globex Labs" --book plan --from "$prev-01" >/dev/null || fail "acct-1"
ctl accounts add acct-2 --name "Initech" --book usage --from "$prev-01" >/dev/null || fail "acct-2"
ctl accounts add acct-3 --name "Umbrella Labs" --book plan --from "$prev-01" >/dev/null || fail "acct-3"
ctl invoice run --period "$prev" --finalize >/dev/null || fail "invoice run $prev"
ctl invoice run --period "$period" >/dev/null || fail "invoice run $period"

shots=${DASHBOARDS_SHOTS:-$tmp/shots}
rm -rf "$shots"
mkdir -p "$shots"
expect_status 0 node "$check" --url "$url_a" --key "$FIN" --account-key "$ACC" \
    --account acct-1 --shots "$shots"
echo "$out"
[ -n "$err" ] && echo "$err" >&2
contains "$out" " passed, 0 failed" "the dashboards in the browser"
# No key, token or session in what the browser test printed.
case "$out$err" in *"$FIN"* | *"$ACC"* | *mts_*) fail "a secret in the output" ;; esac
checks=$((checks + 1))
finish
