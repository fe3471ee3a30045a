#!/bin/bash
# costsim's HTML report in a real browser: Debian's chromium, headless,
# driven by puppeteer-core (tools/browser/check-report.mjs, installed
# from npm with its lock file by make check). The report of a run whose
# profile and one book carry hostile strings loads with no console error
# and no request but the file, holds no script, shows every book's row
# and charts at a non-zero size and the hostile strings as text; so does
# the unit test's report (test_costsim_out), with a tornado built by
# hand. Screenshots are left in $COSTSIM_SHOTS to look at.
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/.." && pwd)
check=$top/tools/browser/check-report.mjs
missing=""
command -v node >/dev/null || missing="node"
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || missing="$missing chromium (scripts/install-deps.sh)"
[ -d "$top/tools/browser/node_modules/puppeteer-core" ] ||
    missing="$missing puppeteer-core (npm ci in tools/browser, as make check does)"
if [ -n "$missing" ]; then
    echo "costsim_html: missing:$missing" >&2
    [ "${CI:-}" = true ] && { echo "failing: CI=true requires them" >&2; exit 1; }
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
shots=${COSTSIM_SHOTS:-$tmp}
mkdir -p "$shots"
cd "$tmp"

# Two books that price the workload, one priced only as a lower bound
# (no storage price, and the sandbox keeps a disk), one that cannot (its
# fee unknown), and a copy of e2b-hobby whose texts try to become
# markup.
mkdir books
for b in e2b-pro fly-machines aws-lambda vercel-pro; do
    cp "$top/pricing/books/$b.json" books/
done
jq '.id = "hostile-book" | .name = "<script>alert(\"name\")</script>"
    | .source = "\"><img src=x onerror=alert(1)> https://example.com/?a=1&b=2"
    | .as_of = "<b>2026-01-01</b>"' "$top/pricing/books/e2b-hobby.json" \
    >books/hostile-book.json
# Two sessions an hour: enough that aws-lambda's known part passes its
# free 400,000 GiB-s and 1M requests, so that it has a bar to stack.
cat >hostile.json <<'JSON'
{"name": "<script>alert('profile')</script>",
 "sessions": {"poisson": {"per_hour": 2},
              "length": {"dist": "lognormal", "median": 300, "p95": 1800}},
 "sandbox": {"vcpu": 1, "memory_gib": 2, "disk_gib": 1},
 "activity": {"busy": {"length": {"dist": "exponential", "mean": 30}, "cpu": 0.7},
              "idle": {"length": {"dist": "exponential", "mean": 90}, "cpu": 0}}}
JSON
expect_status 0 "$COSTSIM" --profile hostile.json --books books --max-trials 8 \
    --format json --html report.html
priced=$(jq -r '[.books[] | select(.priced) | .id] | join(",")' <<<"$out")
unpriced=$(jq -r '[.books[] | select(.priced | not) | .id] | join(",")' <<<"$out")
[ "$priced" = "fly-machines,hostile-book,e2b-pro,aws-lambda" ] || fail "priced books: $priced"
[ "$unpriced" = "vercel-pro" ] || fail "unpriced books: $unpriced"
expect_status 0 node "$check" report.html --priced "$priced" --unpriced "$unpriced" \
    --text "GiB-hours of storage not priced; every figure of this row is of the known part" \
    --text '<script>alert("name")</script>' --text "<script>alert('profile')</script>" \
    --text '"><img src=x onerror=alert(1)>' --text '<b>2026-01-01</b>' \
    --screenshot "$shots/costsim-report.png"
contains "$out" " passed, 0 failed" "the report in the browser: $err"

# The renderer's unit test's page: a tornado for two books.
expect_status 0 "$TEST_COSTSIM_OUT" unit.html
expect_status 0 node "$check" unit.html --priced fly-machines,e2b-pro \
    --unpriced aws-lambda --tornado fly-machines,e2b-pro \
    --text '<script>alert("book")</script>' --text '<img src=x onerror=alert(1)>' \
    --screenshot "$shots/costsim-tornado.png"
contains "$out" " passed, 0 failed" "the tornado in the browser: $err"
finish
