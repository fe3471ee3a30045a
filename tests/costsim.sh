#!/bin/bash
# costsim through the real binary: the shipped coding-agent profile
# priced on every shipped book (each listed, with its source and as_of,
# or with the reason it cannot price the workload), the same output for
# one thread or two, bad profiles and usage errors; the tornado, sorted,
# and costsim breakeven, found by hand, never in range, and its errors.
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/.." && pwd)
books=$top/pricing/books
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

# Few trials: the sanitized build rates about 20 million seconds a second.
expect_status 0 "$COSTSIM" --profile "$top/simulator/profiles/coding-agent.json" \
    --max-trials 4 --threads 2
contains "$out" "profile coding-agent" "the profile is named"
contains "$out" "exact decimals" "the output says what is exact and what is not"
for f in "$books"/*.json; do
    id=$(basename "$f" .json)
    contains "$out" "
$id " "book $id is listed"
done
nbooks=$(ls "$books"/*.json | wc -l)
[ "$(grep -c '^    source: ' <<<"$out")" = "$nbooks" ] ||
    fail "not one source line per book: $out"
[ "$(grep -c '^    as_of: ' <<<"$out")" = "$nbooks" ] ||
    fail "not one as_of line per book"
contains "$out" "    as_of: 2026-08-06" "e2b's as_of"
# aws-lambda has no storage price, and a coding agent keeps its disk:
# a lower bound, after the books priced whole, naming the storage.
contains "$out" "lower bounds: a price these books need is unknown (null)" "lower bounds apart"
grep -A1 '^aws-lambda  *USD  *>=[0-9]' <<<"$out" |
    grep -q '^    lower bound: at least [0-9.,]* USD; [0-9.,]* GiB-hours of storage not priced$' ||
    fail "aws-lambda's lower bound names its storage: $out"
checks=$((checks + 1))
# vercel-pro's fee is unknown: no bound, its reason.
contains "$out" "vercel-pro                 USD  cannot price
    reason: price book 'vercel-pro': account 'sim' 2026-11 uses a subscription (monthly_fee)" "an unpriceable book gives its reason"
contains "$err" "costsim: 4 trials, $nbooks books" "the timing line on stderr"

# The same seed, the same output, with one thread or two.
cat >small.json <<'JSON'
{"name": "small",
 "sessions": {"poisson": {"per_hour": 0.2},
              "length": {"dist": "lognormal", "median": 300, "p95": 1800}},
 "sandbox": {"vcpu": 1, "memory_gib": 2, "disk_gib": 0},
 "activity": {"busy": {"length": {"dist": "exponential", "mean": 30}, "cpu": 0.7},
              "idle": {"length": {"dist": "exponential", "mean": 90}, "cpu": 0}},
 "pauses": {"after_idle_s": 300, "probability": 0.5}}
JSON
expect_status 0 "$COSTSIM" --profile small.json --books "$books" --seed 5 \
    --max-trials 16 --format json --threads 1
one=$out
expect_status 0 "$COSTSIM" --profile small.json --books "$books" --seed 5 \
    --max-trials 16 --format json --threads 2
[ "$one" = "$out" ] || fail "--threads 2 changed the output"
contains "$one" '"trials": 16' "the trial cap"
contains "$one" '"id": "e2b-hobby"' "json lists books"
contains "$one" '"source": "https://e2b.dev' "json has sources"
contains "$one" '"priced": false' "json lists unpriceable books"
expect_status 0 "$COSTSIM" --profile small.json --books "$books" --seed 6 \
    --max-trials 16 --format json
[ "$one" != "$out" ] || fail "another seed gave the same output"
# A loose precision stops before the cap.
expect_status 0 "$COSTSIM" --profile small.json --books "$books" \
    --precision 0.5 --format json
contains "$out" '"trials": 30,' "a loose precision stops at the floor of 30 trials"
contains "$out" '"converged": true' "and is met"

# More threads than a batch has trials draw batches ahead: still the
# same output, with books stopping at different batches.
expect_status 0 "$COSTSIM" --profile small.json --books "$books" --seed 1 \
    --max-trials 48 --precision 0.3 --format json --threads 1
one=$out
contains "$one" '"trials": 30,' "a book stops at 30 trials, inside a batch"
contains "$one" '"trials": 48,' "another runs to the cap (vercel-hobby)"
expect_status 0 "$COSTSIM" --profile small.json --books "$books" --seed 1 \
    --max-trials 48 --precision 0.3 --format json --threads 9
[ "$one" = "$out" ] || fail "--threads 9 changed the output"
# By default, every core.
expect_status 0 "$COSTSIM" --profile small.json --books "$books" --max-trials 2
cores=$(nproc)
[ "$cores" -gt 64 ] && cores=64
contains "$err" "on $cores thread" "--threads defaults to every core"

# CSV: RFC 4180, one row per book, the JSON's figures; each book's line
# columns add up to its mean within half a cent (each month's total is
# its lines' sum rounded to the cent) and the lines' own rounding.
expect_status 0 "$COSTSIM" --profile small.json --books "$books" --seed 3 \
    --max-trials 8 --format json
printf '%s\n' "$out" >run.json
checks=$((checks + 1))
"$COSTSIM" --profile small.json --books "$books" --seed 3 --max-trials 8 \
    --format csv >run.csv 2>/dev/null || fail "--format csv failed"
python3 - run.csv run.json <<'PY' || fail "csv does not match json"
import csv, json, sys
from decimal import Decimal
raw = open(sys.argv[1], newline="").read()
assert raw.endswith("\r\n") and "\n" not in raw.replace("\r\n", ""), "CRLF rows"
rows = list(csv.DictReader(raw.splitlines(), strict=True))
run = json.load(open(sys.argv[2]))
books = run["books"]
chosen = {t["provider"]: t["chosen"] for t in run["tiers"]}
assert [r["book"] for r in rows] == [b["id"] for b in books], "same books, same order"
kinds = [k[5:] for k in rows[0] if k.startswith("line_")]
assert len(kinds) == 14, kinds
plain = 0
for r, b in zip(rows, books):
    for k in ("file", "currency", "source", "as_of"):
        assert r[k] == b[k], (b["id"], k, r[k], b[k])
    # The provider, its tier as the table says it, the book's plan.
    assert r["provider"] == (b["provider"] or ""), b["id"]
    if b["provider"]:
        c = chosen[b["provider"]]
        want = (c + " (mean ") if c else "none fits ("
        assert r["provider_tier"].startswith(want), (b["id"], r["provider_tier"], c)
    else:
        assert r["provider_tier"] == "", b["id"]
    limits = b.get("plan", {}).get("limits", [])
    broken = [l for l in limits if l["months_broken"]]
    assert r["plan"].count("limit broken: ") == len(broken), (b["id"], r["plan"])
    for l in broken:
        assert "(%d of %d months)" % (l["months_broken"], l["months_checked"]) in r["plan"], (b["id"], l)
    assert r["priced"] == ("true" if b["priced"] else "false")
    if not b["priced"]:
        assert r["reason"] == b["reason"] and r["mean"] == "", b["id"]
        continue
    for k in ("mean", "p5", "p50", "p95"):
        assert r[k] == b[k], (b["id"], k, r[k], b[k])
    assert int(r["controls"]) == b["controls"], b["id"]
    for k in ("p5_ci95", "p50_ci95", "p95_ci95"):
        assert r[k + "_low"] == b[k]["low"] and r[k + "_high"] == b[k]["high"], (b["id"], k)
        assert abs(float(r[k + "_coverage"]) - b[k]["coverage"]) < 5e-7, (b["id"], k)
    assert r["bound"] == b.get("bound", ""), b["id"]
    assert r["unpriced"] == "; ".join("%s %s %s" % (u["dimension"], u["mean"], u["unit"])
                                      for u in b.get("unpriced", [])), b["id"]
    assert r["per_1000_sessions"] == (b["per_1000_sessions"] or "")
    assert int(r["trials"]) == b["trials"]
    assert r["converged"] == ("true" if b["converged"] else "false")
    for k in kinds:
        assert r["line_" + k] == b["lines"].get(k, "0.000000"), (b["id"], k)
    # The lines are plain means: they add up to a plain mean.
    lines = sum(Decimal(r["line_" + k]) for k in kinds)
    assert b["controls"] or abs(lines - Decimal(r["mean"])) <= Decimal("0.005") + 14 * Decimal("0.0000005"), \
        (b["id"], lines, r["mean"])
    plain += b["controls"] == 0
assert plain >= 15, plain
print(len(rows), "rows")
PY

# HTML: one page, on stdout or beside another format with --html; the
# same page either way (tests/costsim_html.sh opens it in a browser).
expect_status 0 "$COSTSIM" --profile small.json --books "$books" --seed 3 \
    --max-trials 8 --format html
printf '%s\n' "$out" >stdout.html
contains "$out" "<!DOCTYPE html>" "html page"
contains "$out" "class=\"chart dist\"" "html has charts"
expect_status 0 "$COSTSIM" --profile small.json --books "$books" --seed 3 \
    --max-trials 8 --html report.html
contains "$out" "profile small" "--html keeps the table on stdout"
contains "$err" "the HTML report is in report.html" "--html says where"
cmp -s stdout.html report.html || fail "--html and --format html differ"
expect_status 1 "$COSTSIM" --profile small.json --books "$books" \
    --max-trials 2 --html "$tmp/none/report.html"
contains "$err" "cannot write '$tmp/none/report.html'" "unwritable report"
expect_status 1 "$COSTSIM" --profile bad.json --books "$books" --html gone.html
[ -e gone.html ] && fail "a failed run leaves a report"

# The progress bar: never when stderr is not a terminal (above, every
# run's stderr is a pipe), and on a terminal drawn then erased, with the
# output unchanged.
case "$err" in *$'\r'* | *$'\e'*) fail "control characters off a terminal: $err" ;; esac
if command -v script >/dev/null; then
    checks=$((checks + 1))
    script -qec "'$COSTSIM' --profile small.json --books '$books' --seed 3 --max-trials 8 --format json >tty.json" \
        typescript </dev/null >/dev/null || fail "costsim under script failed"
    [ "$(cat tty.json)" = "$(cat run.json)" ] || fail "the output changed on a terminal"
    bar=$(cat typescript)
    contains "$bar" $'\r\e[Kcostsim [>' "the bar is drawn before the first batch"
    contains "$bar" "0/8 trials, $nbooks of $nbooks books open" "it starts empty"
    contains "$bar" "8/8 trials" "the bar reaches the cap"
    contains "$bar" $'\r\e[Kcostsim: 8 trials' "the bar is erased before the last line"
else
    fail "script (util-linux) not found: the progress bar is untested"
fi

# The providers' published examples (../shared/data/providers.md), as
# workloads without randomness. E2B: 8 vCPU + 4 GB for one hour =
# 8 x 0.000014 x 3600 + 4 x 0.0000045 x 3600 = 0.4032 + 0.0648 = 0.468.
cat >e2b.json <<'JSON'
{"sessions": {"per_month": 1, "length": {"dist": "fixed", "value": 3600}},
 "sandbox": {"vcpu": 8, "memory_gib": 4, "disk_gib": 0}}
JSON
expect_status 0 "$COSTSIM" --profile e2b.json --books "$books" --format json \
    --max-trials 2
for id in e2b-hobby e2b-pro; do
    got=$(jq -r --arg id $id '.books[] | select(.id == $id) |
        [.lines.cpu, .lines.memory] | join(" ")' <<<"$out")
    [ "$got" = "0.403200 0.064800" ] ||
        fail "E2B's published example on $id: cpu and memory $got"
done
contains "$out" '"mean": "0.470000"' "e2b-hobby's hour, to the cent"
contains "$out" '"mean": "150.470000"' "e2b-pro's hour with its fee"
# Daytona: 2 vCPU + 4 GiB for 730 h = 2 x 0.0504 x 730 + 4 x 0.0162 x 730
# = 73.584 + 47.304 = 120.89, in a 31-day month (--month), which holds it.
cat >daytona.json <<'JSON'
{"sessions": {"per_month": 1, "length": {"dist": "fixed", "value": 2628000}},
 "sandbox": {"vcpu": 2, "memory_gib": 4, "disk_gib": 0}}
JSON
expect_status 0 "$COSTSIM" --profile daytona.json --books "$books" \
    --format json --max-trials 2 --month 2026-12
got=$(jq -c '.books[] | select(.id == "daytona") | [.mean, .lines]' <<<"$out")
[ "$got" = '["120.890000",{"cpu":"73.584000","memory":"47.304000"}]' ] ||
    fail "Daytona's published example: $got"
contains "$out" '"month": "2026-12"' "the month asked for"
# November has 720 hours: its session is cut at the month's end, and
# the steady state brings the last 10 hours of October's into it: 730 h
# again, from two sandboxes.
expect_status 0 "$COSTSIM" --profile daytona.json --books "$books" \
    --format json --max-trials 2
got=$(jq -r '.books[] | select(.id == "daytona") | .lines.cpu' <<<"$out")
[ "$got" = "73.584000" ] || fail "720 h of November's session and 10 of October's: cpu $got"
contains "$out" '"first_month": false' "a steady-state month by default"
# The account's first month: no session before it (November's 720 hours
# of the one session starting in it, none of October's), and the books'
# grants received: Daytona's 200 pays 2 x 0.0504 x 720 + 4 x 0.0162 x 720
# = 72.576 + 46.656 = 119.232 of it, all.
expect_status 0 "$COSTSIM" --profile daytona.json --books "$books" \
    --format json --max-trials 2 --first-month
got=$(jq -c '.books[] | select(.id == "daytona") | [.mean, .lines]' <<<"$out")
[ "$got" = '["0.000000",{"cpu":"72.576000","memory":"46.656000","credit_grant":"-119.232000"}]' ] ||
    fail "Daytona's first month: $got"
contains "$out" '"first_month": true' "the first month is said"
# E2B Hobby's 100 pays part of a first month of 8 vCPU and 4 GiB for
# 2,000,000 s: 224 + 36 = 260, less 100.
cat >big.json <<'JSON'
{"sessions": {"per_month": 1, "length": {"dist": "fixed", "value": 2000000}},
 "sandbox": {"vcpu": 8, "memory_gib": 4, "disk_gib": 0}}
JSON
expect_status 0 "$COSTSIM" --profile big.json --books "$books" \
    --format json --max-trials 2 --first-month
got=$(jq -c '.books[] | select(.id == "e2b-hobby") | [.mean, .lines.credit_grant]' <<<"$out")
[ "$got" = '["160.000000","-100.000000"]' ] || fail "e2b-hobby's grant: $got"
expect_status 0 "$COSTSIM" --profile big.json --books "$books" --max-trials 2 \
    --first-month
contains "$out" "month 2026-11 (the first: grants received)" "the table says so"
expect_status 2 "$COSTSIM" --profile daytona.json --month 2026-13
contains "$err" "--month '2026-13' is not a month YYYY-MM" "bad month"

# Plan tiers and limits: 21 sandboxes at once for 1 h 30 min break
# e2b-hobby's 20 and 1 h and novita-free's 5 and 1 h; e2b-pro (100,
# 24 h) and novita-paid (100, 3 h) fit, and are the tiers chosen. The
# books that break a limit keep their price and are flagged.
mkdir books
cp "$books"/e2b-hobby.json "$books"/e2b-pro.json "$books"/novita-free.json \
    "$books"/novita-paid.json books/
cat >tiers.json <<'JSON'
{"name": "tiers",
 "sessions": {"per_month": 1, "batch": 21,
              "length": {"dist": "fixed", "value": 5400}},
 "sandbox": {"vcpu": 1, "memory_gib": 1, "disk_gib": 0}}
JSON
expect_status 0 "$COSTSIM" --profile tiers.json --books books --max-trials 8
contains "$out" "limit broken: 21 sandboxes at once exceed e2b-hobby's 20 (no add-on fits) (8 of 8 months)" "e2b-hobby's concurrency"
contains "$out" "limit broken: sessions of 1 h 30 min exceed a 1 h session limit on e2b-hobby (8 of 8 months)" "e2b-hobby's session length"
contains "$out" "limit broken: 21 sandboxes at once exceed novita-free's 5 (no add-on fits) (8 of 8 months)" "novita-free's concurrency"
contains "$out" "limit broken: sessions of 1 h 30 min exceed a 1 h session limit on novita-free (8 of 8 months)" "novita-free's session length"
grep -q '^e2b-hobby  *USD  *[0-9][0-9]*\.[0-9][0-9] ' <<<"$out" ||
    fail "e2b-hobby breaks its limits and still has its price: $out"
[ "$(grep -c '^    limits: none broken$' <<<"$out")" = 2 ] ||
    fail "e2b-pro and novita-paid are within their limits: $out"
contains "$out" "tier chosen per provider" "the tiers' summary"
grep -q '^  e2b  *e2b-pro (mean [0-9.]* USD)$' <<<"$out" ||
    fail "e2b's tier is e2b-pro: $out"
grep -q '^  novita  *novita-paid (mean [0-9.]* USD)$' <<<"$out" ||
    fail "novita's tier is novita-paid: $out"
expect_status 0 "$COSTSIM" --profile tiers.json --books books --max-trials 8 \
    --format json
jq -e '[.tiers[] | {(.provider): .chosen}] | add == {"e2b": "e2b-pro", "novita": "novita-paid"}' \
    <<<"$out" >/dev/null || fail "json: the tiers chosen: $out"
jq -e '.books[] | select(.id == "e2b-hobby") | .priced and .plan.fits == false and
    .plan.months_checked == .trials and .provider == "e2b" and
    ([.plan.limits[] | select(.months_broken == 8) | .message] ==
     ["21 sandboxes at once exceed e2b-hobby'"'"'s 20 (no add-on fits)",
      "sessions of 1 h 30 min exceed a 1 h session limit on e2b-hobby"]) and
    ([.plan.limits[] | {limit, value, worst, unit}] ==
     [{"limit": "concurrency", "value": "20", "worst": "21", "unit": "sandboxes"},
      {"limit": "session_length", "value": "3600", "worst": "5400", "unit": "s"}])' \
    <<<"$out" >/dev/null || fail "json: e2b-hobby's broken limits: $out"
jq -e '.books[] | select(.id == "novita-free") | .plan.fits == false and
    ([.plan.limits[] | [.limit, .share_broken]] == [["concurrency", 1],
     ["session_length", 1], ["sandbox_vcpu", 0], ["sandbox_memory", 0]])' \
    <<<"$out" >/dev/null ||
    fail "json: novita-free's broken limits: $out"
jq -e '[.books[] | select(.id == "e2b-pro" or .id == "novita-paid") |
    .plan.fits and ([.plan.limits[] | .months_broken] | all(. == 0))] == [true, true]' \
    <<<"$out" >/dev/null || fail "json: e2b-pro and novita-paid fit: $out"

# 101 at once: e2b-pro buys its cheapest add-on that fits (Pro+, 600 for
# 500 a month) every month, its fee an addon line on top of the engine's
# total; novita-paid's 100 has no add-on, so no Novita tier fits.
sed 's/"batch": 21/"batch": 101/; s/"value": 5400/"value": 600/' tiers.json >addon.json
expect_status 0 "$COSTSIM" --profile addon.json --books books --max-trials 8
contains "$out" "    add-on: pro-plus (500.00 a month, 600 at once) in 8 of 8 months" "the add-on bought"
contains "$out" "limit broken: 101 sandboxes at once exceed novita-paid's 100 (no add-on fits) (8 of 8 months)" "novita-paid's concurrency"
grep -q '^  e2b  *e2b-pro (mean [0-9.]* USD; add-on pro-plus in 8 of 8 months)$' <<<"$out" ||
    fail "e2b's tier is e2b-pro with pro-plus: $out"
contains "$out" "  novita           none fits (novita-free: 1 limit broken; novita-paid: 1 limit broken)" "no novita tier fits"
# The HTML report flags them too, under each book, escaped.
expect_status 0 "$COSTSIM" --profile addon.json --books books --max-trials 8 \
    --format html
contains "$out" '<span class="meta">add-on: pro-plus (500.00 a month, 600 at once) in 8 of 8 months</span>' "html: the add-on"
contains "$out" '<span class="meta warn">limit broken: 101 sandboxes at once exceed novita-paid&#39;s 100 (no add-on fits) (8 of 8 months)</span>' "html: a broken limit"
contains "$out" '<tr><th scope="row" class="text">novita</th><td class="text">none fits (novita-free: 1 limit broken; novita-paid: 1 limit broken)</td></tr>' "html: no novita tier"
grep -q '<tr><th scope="row" class="text">e2b</th><td class="text">e2b-pro (mean [0-9.]* USD; add-on pro-plus in 8 of 8 months)</td></tr>' <<<"$out" ||
    fail "html: e2b's tier"
expect_status 0 "$COSTSIM" --profile addon.json --books books --max-trials 8 \
    --format json
jq -e '(.books[] | select(.id == "e2b-pro")) as $pro |
    (.books[] | select(.id == "e2b-hobby")) as $hobby |
    $pro.lines.addon == "500.000000" and $pro.lines.subscription == "150.000000" and
    $pro.lines.cpu == $hobby.lines.cpu and $pro.lines.memory == $hobby.lines.memory and
    (($pro.mean | tonumber) - ($hobby.mean | tonumber) - 650 | fabs) < 0.000001 and
    $pro.plan.addons == [{"name": "pro-plus", "max_concurrency": 600,
        "monthly_fee": "500.000000", "months": 8, "share": 1}] and
    $pro.plan.fits' <<<"$out" >/dev/null ||
    fail "json: e2b-pro's add-on is added to its cost: $out"
jq -e '[.tiers[] | {(.provider): .chosen}] | add == {"e2b": "e2b-pro", "novita": null}' \
    <<<"$out" >/dev/null || fail "json: no novita tier: $out"

# A book with a key twice is the engine's error, not jansson's last value.
mkdir dup
sed 's/"cpu": {/"cpu": {"basis": "allocated", "rate": "1", "per": "second"},\n  "cpu": {/' \
    "$books/e2b-pro.json" >dup/e2b-pro.json
expect_status 1 "$COSTSIM" --profile e2b.json --books dup --max-trials 2
contains "$err" "dup/e2b-pro.json: line 12 column 7: duplicate key 'cpu'" \
    "a duplicate key is refused"

# Bad profiles: the key and the value.
cat >bad.json <<'JSON'
{"sessions": {"per_month": 10,
              "length": {"dist": "lognormal", "median": 60, "p95": 30}},
 "sandbox": {"vcpu": 1, "memory_gib": 1, "disk_gib": 0}}
JSON
expect_status 1 "$COSTSIM" --profile bad.json --books "$books"
contains "$err" "costsim: bad.json: sessions.length.p95: 30 is below the median 60" "bad p95"
echo '{"sessions": {"per_month": 10}, "sandbox": {}}' >bad2.json
expect_status 1 "$COSTSIM" --profile bad2.json --books "$books"
contains "$err" "bad2.json: sessions.length: missing" "missing length"
expect_status 1 "$COSTSIM" --profile nowhere.json --books "$books"
contains "$err" "cannot open 'nowhere.json'" "missing file"
expect_status 1 "$COSTSIM" --profile small.json --books "$tmp/none"
contains "$err" "cannot open the books directory" "missing books"

# Usage errors exit 2.
expect_status 2 "$COSTSIM"
contains "$err" "--profile FILE is required" "no profile"
expect_status 2 "$COSTSIM" --profile small.json --threads 0
contains "$err" "--threads '0'" "bad threads"
expect_status 2 "$COSTSIM" --profile small.json --precision 2
expect_status 2 "$COSTSIM" --profile small.json --format xml
contains "$err" "--format 'xml' is not table, json, csv or html" "bad format"
expect_status 2 "$COSTSIM" --profile small.json --max-trials x
expect_status 0 "$COSTSIM" --help
contains "$out" "usage: costsim" "help"

# The tornado and the break-even on books whose figures are easy to
# follow (tests/test_sim_sens.c has the same): vCPU-seconds at 0.0001
# with a fee of 10 a month, at 0.0004 without, and at 0.0004 billed at
# least 100 s a session; 100 sessions of 100 s at 1 vCPU.
mkdir sens
book() { # ID RATE EXTRA
    cat >"sens/$1.json" <<JSON
{"id": "$1", "currency": "USD", "effective_from": "2026-01-01",
 "source": "tests/costsim.sh", "as_of": "2026-12-01",
 "cpu": {"basis": "allocated", "rate": "$2", "per": "second"},
 "memory": {"basis": "allocated", "unit": "GiB", "rate": "0", "per": "second"},
 "storage": {"rate": "0", "per": "month"}, "egress": null, "per_run": "0"$3}
JSON
}
book fee 0.0001 ', "subscription": {"monthly_fee": "10"}'
book payg 0.0004 ''
book min 0.0004 ', "min_billed_s": 100'
cat >fixed.json <<'JSON'
{"name": "fixed",
 "sessions": {"per_month": 100, "length": {"dist": "fixed", "value": 100}},
 "sandbox": {"vcpu": 1, "memory_gib": 1, "disk_gib": 0}}
JSON
expect_status 0 "$COSTSIM" --profile fixed.json --books sens --tornado 10 \
    --max-trials 8
contains "$out" "tornado: each parameter moved by -10% and +10% alone" "the tornado's heading"
# min: fewer vCPUs or sessions save 0.40, shorter sessions nothing (each
# is billed 100 s): its swings in that order, largest first.
contains "$out" "min                        USD  base 4.00, 8 trials
    parameter                              -10%         +10%    mean at -    mean at +        swing
    sandbox.vcpu                            0.9          1.1         3.60         4.40         0.80
    sessions.per_month                       90          110         3.60         4.40         0.80
    sessions.length.value                    90          110         4.00         4.40         0.40
    sandbox.memory_gib" "min's tornado, sorted"
contains "$out" "fee                        USD  base 11.00, 8 trials" "fee's base"
contains "$out" "    sessions.per_month                       90          110        10.90        11.10         0.20" "the fee does not move"
contains "$out" "not in the tornado:
    sessions.batch 1 not moved" "a parameter that cannot move is named"
expect_status 0 "$COSTSIM" --profile fixed.json --books sens --tornado 10 \
    --max-trials 8 --format json
contains "$out" '"not_moved": [' "json: what did not move"
one=$out
expect_status 0 "$COSTSIM" --profile fixed.json --books sens --tornado 10 \
    --max-trials 8 --format json --threads 2
[ "$one" = "$out" ] || fail "--threads 2 changed the tornado"
contains "$out" '"param": "sessions.length.value",
            "value": 100.0,
            "low_value": 90.0,
            "high_value": 110.0,
            "low": "4.000000",
            "high": "4.400000",
            "swing": "0.400000"' "json: a swing"
expect_status 2 "$COSTSIM" --profile fixed.json --tornado 100
contains "$err" "--tornado '100' is not a percentage above 0 and below 100" "bad --tornado"
expect_status 2 "$COSTSIM" --profile fixed.json --tornado-trials 4
contains "$err" "--tornado-trials needs --tornado PCT" "--tornado-trials alone"

# Break-even: 10 + 0.01 n = 0.04 n at n = 333.3 sessions a month.
expect_status 0 "$COSTSIM" breakeven --profile fixed.json --books sens \
    --between fee,payg --param sessions.per_month --range 100:1000
contains "$out" "break-even of sessions.per_month between fee and payg, in [100, 1000]: 333." "the break-even's value"
contains "$out" "the cheaper book changes between 333 and 334" "its neighbours"
contains "$out" "    at 333: fee 13.33 USD, payg 13.32 USD (payg cheaper)
    at 334: fee 13.34 USD, payg 13.36 USD (fee cheaper)" "the costs either side"
contains "$out" "30 trials at every value" "the trials"
expect_status 0 "$COSTSIM" breakeven --profile fixed.json --books sens \
    --between fee.json,payg --param sessions.per_month --range 10:300 \
    --format json
contains "$out" '"found": false' "json: never in range"
contains "$out" '"value": null' "json: no value"
contains "$out" '"fee": "13.00",
        "payg": "12.00"' "json: the costs at the range's end"
expect_status 0 "$COSTSIM" breakeven --profile fixed.json --books sens \
    --between fee,payg --param sessions.per_month --range 10:300
contains "$out" "never in range" "never in range"
contains "$out" "at 10: fee 10.10 USD, payg 0.40 USD (payg cheaper)" "the cheaper at one end"
expect_status 2 "$COSTSIM" breakeven --profile fixed.json --books sens \
    --between fee,payg --param sessions.foo --range 1:2
contains "$err" "--param 'sessions.foo' is not a parameter of this profile; parameters: sessions.per_month, sessions.batch, sessions.length.value, sandbox.vcpu" "an unknown parameter, and the list"
expect_status 2 "$COSTSIM" breakeven --profile fixed.json --books sens \
    --between fee,nope --param sessions.per_month --range 1:2
contains "$err" "--between: 'nope' is not a book of 'sens'" "an unknown book"
expect_status 2 "$COSTSIM" breakeven --profile fixed.json --books sens \
    --between fee,payg --param sessions.per_month --range 0:10
contains "$err" "--range '0:10': sessions.per_month 0 is below 1" "a range end the profile refuses"
expect_status 2 "$COSTSIM" breakeven --profile fixed.json --books sens \
    --between fee,payg --param sessions.per_month --range 10:5
contains "$err" "--range '10:5' is not LO:HI" "an empty range"
expect_status 2 "$COSTSIM" breakeven --profile fixed.json --books sens \
    --param sessions.per_month --range 1:10
contains "$err" "--between A,B is required" "no books"
# A book that cannot price the profile is a failure, named.
cp "$books/aws-lambda.json" sens/
sed 's/"disk_gib": 0/"disk_gib": 1/' fixed.json >disk.json
expect_status 1 "$COSTSIM" breakeven --profile disk.json --books sens \
    --between fee,aws-lambda --param sessions.per_month --range 10:20
contains "$err" "price book 'aws-lambda' cannot price the profile as given" "an unpriceable book"
expect_status 0 "$COSTSIM" breakeven --help
contains "$out" "usage: costsim breakeven" "breakeven's help"
expect_status 2 "$COSTSIM" --profile small.json --seed 9223372036854775808
contains "$err" "--seed '9223372036854775808' is not a whole number from 0 to 9223372036854775807" "seed cap"
expect_status 2 "$COSTSIM" breakeven --profile e2b.json --books "$books" \
    --between e2b-hobby,e2b-pro --param sessions.per_month --range 1.5:10
contains "$err" "sessions.per_month: 1.5 is held as 2" "a range end the profile would round"

# --- memory: bounded by what one trial prices at once (issue 26) ---------
# peak_kib CMD...: runs CMD (stdout and stderr to peak.out and peak.err),
# polling its peak resident size (VmHWM) until it exits: the last value
# read, in KiB, goes to $kib and CMD's exit status to $peak_rc.
peak_kib() {
    "$@" >peak.out 2>peak.err &
    local pid=$! v
    kib=0
    while v=$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$pid/status" 2>/dev/null) &&
        [ -n "$v" ]; do
        kib=$v
        sleep 0.05
    done
    wait "$pid" && peak_rc=0 || peak_rc=$?
}
# Day-long sessions of 10 s spells, 300 a month: 2.6 million spells a
# month, which the whole month held in memory took to 369 MiB under
# AddressSanitizer (134 MiB without); drawn, measured and priced a
# session at a time, a trial holds one session's 8,640 spells (measured:
# 26 MiB under AddressSanitizer, 12 MiB without).
cat >daylong.json <<'JSON'
{"name": "daylong",
 "sessions": {"per_month": 300, "length": {"dist": "fixed", "value": 86400}},
 "sandbox": {"vcpu": 2, "memory_gib": 4, "disk_gib": 10},
 "activity": {"busy": {"length": {"dist": "fixed", "value": 10}, "cpu": 0.5},
              "idle": {"length": {"dist": "fixed", "value": 10}, "cpu": 0}}}
JSON
mkdir -p one && cp "$books/e2b-pro.json" one/
peak_kib "$COSTSIM" --profile daylong.json --books one --max-trials 2 \
    --threads 1 --format json
checks=$((checks + 1))
[ "$peak_rc" = 0 ] || fail "daylong.json exited $peak_rc: $(cat peak.err)"
echo "daylong.json: peak $((kib / 1024)) MiB"
[ "$kib" -gt 0 ] && [ "$kib" -lt $((100 * 1024)) ] ||
    fail "daylong.json peaked at $kib KiB, over 100 MiB"
daylong=$(cat peak.out)
# Within --memory-limit 8, the same output.
expect_status 0 "$COSTSIM" --profile daylong.json --books one --max-trials 2 \
    --threads 1 --format json --memory-limit 8
[ "$out" = "$daylong" ] || fail "--memory-limit 8 changed the output"
# What cannot fit is refused, naming the key and the size it implies: a
# 31-day session of 1 s spells (2.7 million of them, 128 MiB) ...
sed -e 's/"value": 86400/"value": 2678400/' -e 's/"value": 10}/"value": 1}/g' \
    daylong.json >month-long.json
expect_status 1 "$COSTSIM" --profile month-long.json --books one \
    --max-trials 2 --threads 1 --memory-limit 64
contains "$err" "costsim: sessions.length: a session of 2678400 s needs more than 1048576 spells of activity, 56 bytes each (112 MiB): past --memory-limit 64 MiB (63 MiB a thread, 1 thread); raise it, or use fewer --threads" "a session too long for the limit"
# ... 100,000 sandboxes running at once, all month ...
cat >crowd.json <<'JSON'
{"name": "crowd",
 "sessions": {"per_month": 100000, "length": {"dist": "fixed", "value": 2678400}},
 "sandbox": {"vcpu": 1, "memory_gib": 1, "disk_gib": 1}}
JSON
expect_status 1 "$COSTSIM" --profile crowd.json --books one --max-trials 2 \
    --threads 2 --memory-limit 16
contains "$err" "costsim: sessions.per_month: 100000 with sessions of up to 2678400 s keeps more than" "a crowd too large for the limit"
contains "$err" "past --memory-limit 16 MiB" "the limit named"
# ... and results that alone pass it: 10^6 trials x 25 books x two
# 16-byte totals, and a double each, are 808,000,000 bytes; with each
# thread's 112 KiB of runs and a batch's cells, 772 MiB.
expect_status 1 "$COSTSIM" --profile daylong.json --books "$books" \
    --max-trials 1000000 --threads 2 --memory-limit 600
contains "$err" "costsim: --memory-limit 600 MiB is less than the 772 MiB that --max-trials 1000000 of $nbooks books and --threads 2 hold before any session is drawn" "results past the limit"
# Bad values are usage errors naming the value, as meterctl rate's.
for bad in 0 -1 1.5 abc 1099511627777 ''; do
    expect_status 2 "$COSTSIM" --profile daylong.json --memory-limit "$bad"
    contains "$err" "costsim: --memory-limit '$bad' is not a number of MiB from 1 to 1099511627776" "--memory-limit '$bad'"
done
expect_status 2 "$COSTSIM" breakeven --profile daylong.json --books one \
    --between e2b-pro,e2b-pro --param sessions.per_month --range 1:2 \
    --memory-limit 0
contains "$err" "costsim breakeven: --memory-limit '0' is not a number of MiB" "breakeven's --memory-limit"

# Partial prices (issue 27): a book with storage null on a profile with
# disk is a lower bound naming the quantity, ranked after every book
# priced whole, in the table, JSON, CSV and the report. By hand: 100
# sessions of 1 h, 2 vCPU at 0.36 a vCPU-hour: 72.00; 10 GiB held for
# 100 h: 1,000 GiB-hours of storage not priced.
mkdir partial
cat >disk.json <<'JSON'
{"name": "disk",
 "sessions": {"per_month": 100, "length": {"dist": "fixed", "value": 3600}},
 "sandbox": {"vcpu": 2, "memory_gib": 4, "disk_gib": 10}}
JSON
partial_book() { # id, cpu rate an hour, storage
    printf '{"id": "%s", "currency": "USD", "effective_from": "2026-01-01",
 "cpu": {"basis": "allocated", "rate": "%s", "per": "hour"},
 "memory": {"basis": "allocated", "unit": "GiB", "rate": "0", "per": "hour"},
 "storage": %s, "egress": null, "per_run": "0"}\n' "$1" "$2" "$3" \
        >"partial/$1.json"
}
# "whole" costs more than the known part of "nostore", and still ranks
# first: a lower bound is not a price.
partial_book whole 0.50 '{"rate": "0.0001", "per": "hour"}'
partial_book nostore 0.36 null
expect_status 0 "$COSTSIM" --profile disk.json --books partial --threads 1
contains "$out" "whole                      USD        100.10" "the book priced whole: 100 h x 2 x 0.50 + 1,000 x 0.0001"
contains "$out" "lower bounds: a price these books need is unknown (null); every figure is of the known part
nostore                    USD       >=72.00" "the lower bound ranked after it"
contains "$out" "    lower bound: at least 72.00 USD; 1,000 GiB-hours of storage not priced" "the table names the quantity"
expect_status 0 "$COSTSIM" --profile disk.json --books partial --threads 1 \
    --format json
printf '%s\n' "$out" >partial.json
jq -e '[.books[].id] == ["whole", "nostore"]' partial.json >/dev/null ||
    fail "json: the lower bound after the book priced whole"
checks=$((checks + 1))
jq -e '.books[1] | .priced and .bound == "lower" and .mean == "72.000000" and
    .lower_bound == "at least 72.00 USD; 1,000 GiB-hours of storage not priced" and
    .unpriced == [{"dimension": "storage", "mean": "1000.000000", "unit": "GiB-hour"}]' \
    partial.json >/dev/null || fail "json: the lower bound: $(jq -c '.books[1]' partial.json)"
checks=$((checks + 1))
jq -e '.books[0] | has("bound") or has("unpriced") | not' partial.json >/dev/null ||
    fail "json: a book priced whole has no bound"
checks=$((checks + 1))
jq -e '.tiers == [] or ([.tiers[].chosen] | index("nostore") | not)' partial.json >/dev/null ||
    fail "json: a lower bound chosen as a tier"
checks=$((checks + 1))
"$COSTSIM" --profile disk.json --books partial --threads 1 --format csv \
    >partial.csv 2>/dev/null || fail "--format csv failed"
python3 - partial.csv <<'PY' || fail "csv: the lower bound"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline=""), strict=True))
assert [r["book"] for r in rows] == ["whole", "nostore"], rows
assert rows[0]["bound"] == "" and rows[0]["unpriced"] == "", rows[0]
assert rows[1]["bound"] == "lower" and rows[1]["mean"] == "72.000000", rows[1]
assert rows[1]["unpriced"] == "storage 1000.000000 GiB-hour", rows[1]["unpriced"]
PY
checks=$((checks + 1))
expect_status 0 "$COSTSIM" --profile disk.json --books partial --threads 1 \
    --format html
contains "$out" "lower bound: at least 72.00 USD; 1,000 GiB-hours of storage not priced" "the report names the quantity"
contains "$out" "&ge;&nbsp;72.00" "the report marks the bound"

# The stopping rule's floor: a month without randomness has an interval
# of 0 from its second trial, and still stops at 30, not 29, not 32
# (the batch's end).
contains "$(jq -c '[.books[] | .trials, .converged]' partial.json)" "[30,true,30,true]" "30 trials, no fewer"
# Percentiles' intervals by order statistics: 30 equal months, so each
# is the one total; p50's ranks for n = 30 are 10 and 21 (P(B <= 9) =
# 0.0214 and P(B >= 21) = 0.0214, B ~ binomial(30, 0.5)), covering 95.7%.
jq -e '.books[0].p50_ci95 | .low == "100.10" and .high == "100.10" and
    .low_rank == 10 and .high_rank == 21 and (.coverage * 1000 | floor) == 957' \
    partial.json >/dev/null || fail "json: p50's interval: $(jq -c '.books[0].p50_ci95' partial.json)"
checks=$((checks + 1))
grep -q "p5 100.10-100.10 (covers 76%), p50 100.10-100.10, p95 100.10-100.10 (covers 76%)" <<<"$(
    "$COSTSIM" --profile disk.json --books partial --threads 1 2>/dev/null)" ||
    fail "the table's percentile intervals"
checks=$((checks + 1))

# Each book's autopause where the profile gives none (docs/simulator.md):
# E2B's 10 minutes, Sprites' 30 s, none for Fly Machines, said in every
# format; with the profile's own pauses, the profile's for every book.
cat >idle.json <<'JSON'
{"sessions": {"per_month": 50, "length": {"dist": "fixed", "value": 3600}},
 "sandbox": {"vcpu": 1, "memory_gib": 1, "disk_gib": 1},
 "activity": {"busy": {"length": {"dist": "fixed", "value": 600}, "cpu": 1},
              "idle": {"length": {"dist": "fixed", "value": 1200}, "cpu": 0}}}
JSON
expect_status 0 "$COSTSIM" --profile idle.json --books "$books" --threads 1 \
    --max-trials 30 --format json
jq -e '[.books[] | select(.id == "e2b-pro" or .id == "fly-sprites-payg" or
        .id == "fly-machines") | {(.id): .pauses}] | add ==
    {"e2b-pro": {"after_idle_s": 600, "from": "book"},
     "fly-sprites-payg": {"after_idle_s": 30, "from": "book"},
     "fly-machines": null}' <<<"$out" >/dev/null ||
    fail "json: each book's autopause: $(jq -c '[.books[] | {(.id): .pauses}] | add' <<<"$out")"
checks=$((checks + 1))
# 50 sessions of 1,200 s busy and 2,400 s idle: E2B pauses each idle
# stretch after 600 s, so 50 x 2,400 s run (a CPU line of 50 x 2,400 x
# 0.000014); Fly Machines runs all 3,600.
jq -e '(.books[] | select(.id == "e2b-pro") | .lines.cpu) == "1.680000"' \
    <<<"$out" >/dev/null || fail "json: e2b-pro's autopause in its cpu line: $(jq -c '.books[] | select(.id == "e2b-pro") | .lines' <<<"$out")"
checks=$((checks + 1))
expect_status 0 "$COSTSIM" --profile idle.json --books "$books" --threads 1 \
    --max-trials 30
contains "$out" "autopause: after 600 s idle (the book's default)" "the table: e2b's default"
contains "$out" "autopause: none (neither the profile nor the book gives one)" "the table: none"
expect_status 0 "$COSTSIM" --profile idle.json --books "$books" --threads 1 \
    --max-trials 30 --format csv
col=$(head -1 <<<"$out" | tr ',' '\n' | grep -n '^pauses_after_idle_s$' | cut -d: -f1)
row=$(grep '^e2b-pro,' <<<"$out" | cut -d, -f"$col,$((col + 1))")
[ "$row" = "600,book" ] || fail "csv: e2b-pro's pauses columns: '$row'"
checks=$((checks + 1))
jq '. + {"pauses": {"after_idle_s": 60}}' idle.json >idle-own.json
expect_status 0 "$COSTSIM" --profile idle-own.json --books "$books" --threads 1 \
    --max-trials 30 --format json
jq -e '[.books[] | select(.priced) | .pauses == {"after_idle_s": 60, "from": "profile"}] | all' \
    <<<"$out" >/dev/null || fail "json: the profile's pauses override every book's"
checks=$((checks + 1))

# --months N: a trial is N months, the arrivals grown by --growth a
# month; with --first-month the grants are spent month after month.
# Without randomness: 10 sessions of an hour at 1 vCPU, doubled each
# month (10, 20, 40), on a book of 1 a vCPU-hour with a one-off grant
# of 15: November 10.00 paid by the grant (5 left), December 20.00 less
# 5 = 15.00, January 40.00; the three months 55.00.
mkdir -p grow
cat >grow/g.json <<'JSON'
{"id": "g", "currency": "USD", "effective_from": "2026-01-01",
 "cpu": {"basis": "allocated", "rate": "1", "per": "hour"},
 "memory": {"basis": "allocated", "unit": "GiB", "rate": "0", "per": "hour"},
 "storage": null, "egress": null, "per_run": "0",
 "grants": [{"id": "signup", "amount": "15", "expires_after_periods": null}]}
JSON
cat >grow.json <<'JSON'
{"sessions": {"per_month": 10, "length": {"dist": "fixed", "value": 3600}},
 "sandbox": {"vcpu": 1, "memory_gib": 1, "disk_gib": 0}}
JSON
expect_status 0 "$COSTSIM" --profile grow.json --books grow --months 3 \
    --growth 100 --first-month --threads 1 --format json
jq -e '.months == 3 and .growth_pct == 100 and
    .books[0].mean == "55.000000" and .books[0].p50 == "55.00" and
    .books[0].by_month == [{"month": "2026-11", "mean": "0.000000"},
                           {"month": "2026-12", "mean": "15.000000"},
                           {"month": "2027-01", "mean": "40.000000"}] and
    .books[0].lines.credit_grant == "-15.000000" and
    .books[0].sessions_per_month == 23.333333333333332' <<<"$out" >/dev/null ||
    fail "json: three months grown and the grant spent: $(jq -c '[.months, .growth_pct, .books[0].mean, .books[0].by_month, .books[0].lines, .books[0].sessions_per_month]' <<<"$out")"
checks=$((checks + 1))
# Not the first month: no grant; the same months at full price.
expect_status 0 "$COSTSIM" --profile grow.json --books grow --months 3 \
    --growth 100 --threads 1 --format json --month 2026-12
jq -e '.books[0].mean == "70.000000" and
    [.books[0].by_month[].month] == ["2026-12", "2027-01", "2027-02"]' \
    <<<"$out" >/dev/null || fail "json: three months from December: $(jq -c '.books[0] | [.mean, .by_month]' <<<"$out")"
checks=$((checks + 1))
expect_status 0 "$COSTSIM" --profile grow.json --books grow --months 3 \
    --growth 100 --first-month --threads 1
contains "$out" "3 months from 2026-11, the arrivals +100% a month" "the table names the months"
contains "$out" "by month (mean): 2026-11 0.00, 2026-12 15.00, 2027-01 40.00" "the table's months"
expect_status 0 "$COSTSIM" --profile grow.json --books grow --months 3 \
    --growth 100 --first-month --threads 1 --format csv
contains "$out" ",month_2026-11,month_2026-12,month_2027-01," "the csv's month columns"
contains "$out" ",0.000000,15.000000,40.000000," "the csv's months"
# One month is what it was; bad values name the option.
expect_status 0 "$COSTSIM" --profile grow.json --books grow --threads 1 --format json
jq -e '.months == 1 and .books[0].by_month == null and .books[0].mean == "10.000000"' \
    <<<"$out" >/dev/null || fail "json: one month"
checks=$((checks + 1))
expect_status 2 "$COSTSIM" --profile grow.json --months 37
contains "$err" "--months '37' is not a whole number from 1 to 36" "months past the range"
expect_status 2 "$COSTSIM" --profile grow.json --months 0
contains "$err" "--months '0' is not a whole number from 1 to 36" "months of none"
expect_status 2 "$COSTSIM" --profile grow.json --growth 5
contains "$err" "--growth needs --months 2 or more" "growth alone"
expect_status 2 "$COSTSIM" --profile grow.json --months 2 --growth -100
contains "$err" "--growth '-100' is not a percent a month above -100 and at most 1000" "growth of -100%"
expect_status 2 "$COSTSIM" --profile grow.json --months 2 --format html
contains "$err" "the HTML report and --tornado are of one month" "months in html"
expect_status 2 "$COSTSIM" --profile grow.json --months 2 --tornado 10
contains "$err" "the HTML report and --tornado are of one month" "months with the tornado"
# A growth that would take the sessions below one is refused, naming
# the month and the key.
expect_status 1 "$COSTSIM" --profile grow.json --books grow --months 3 \
    --growth -90 --threads 1
contains "$err" "--growth: month 3's sessions.per_month would be 0.1" "a month shrunk to nothing"

# A book priced whole is what it was before lower bounds and the
# percentiles' intervals: tests/golden/costsim_priced_whole.json is the
# books that ran to the cap in this run on main before them (40 trials,
# so the new floor does not change where they stop), the new keys
# aside; fly-machines since re-rated at a dedicated vCPU (issue 27), and
# cloudflare-workers-paid added: its runs are within the 10M requests it
# includes (per_run_free), so it prices whole where it was a lower bound;
# and the limits of Novita's and Vercel's largest sandbox in their plans;
# fly-sprites-payg priced at the 8 vCPU and 4 GB every Sprite is
# (fixed_size), which is also its largest sandbox; Daytona's Tiers 2
# and 3 added; "pauses" says the profile's own priced every book, and
# "by_month" is null (one month); vercel-hobby's memory provisioned at
# 2 GB per whole vCPU (memory_per_vcpu), the profile's 1 vCPU and 2 GiB
# priced as 2 vCPU and 4 GB: its worst GB-hours 65.74 are 122.45. The
# mean is plain here (--method plain), as it was then; "controls" is a
# new key.
expect_status 0 "$COSTSIM" --profile small.json --books "$books" --seed 4 \
    --max-trials 40 --precision 0.0001 --threads 2 --format json --method plain
jq -S '[.books[] | select(.priced and .trials == 40 and (has("bound") | not))
    | del(.p5_ci95, .p50_ci95, .p95_ci95, .controls)]' <<<"$out" >whole.json
cmp -s whole.json "$top/tests/golden/costsim_priced_whole.json" ||
    fail "books priced whole changed: $(diff whole.json "$top/tests/golden/costsim_priced_whole.json" | head -20)"
checks=$((checks + 1))

finish
