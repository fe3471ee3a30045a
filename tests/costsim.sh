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
# aws-lambda has no storage price, and a coding agent keeps its disk.
contains "$out" "aws-lambda                 USD  cannot price
    reason: price book 'aws-lambda': account 'sim' 2026-11 uses storage" "an unpriceable book gives its reason"
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
contains "$out" '"trials": 8,' "a loose precision needs one batch"
contains "$out" '"converged": true' "and is met"

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
expect_status 2 "$COSTSIM" --profile small.json --format csv
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
contains "$out" "8 trials at every value" "the trials"
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
finish
