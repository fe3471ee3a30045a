#!/bin/bash
# costsim's two methods of estimating the mean (docs/simulator.md, "How
# the mean is estimated") against each other, through the real binary,
# on every shipped profile and book. Apart from tests/costsim.sh because
# it is the slowest part (code-execution draws 86,000 sessions a month):
# statistics, not memory, so `make check` runs it once, in the pass far
# from UTC on the optimized build, not under the sanitizers.
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

# both PROFILE ARGS...: the shipped PROFILE run under each method with
# the same seed and ARGS, to plain.json and controlled.json.
both() {
    local prof=$1 m
    shift
    for m in plain controlled; do
        expect_status 0 "$COSTSIM" --profile "$top/simulator/profiles/$prof.json" \
            --method $m --precision 0.0001 --threads 2 --format json "$@"
        printf '%s\n' "$out" >"$m.json"
    done
}

# The controlled mean (the default: regression on the month's control
# variates) against the plain one, on every shipped profile and book:
# over the same seed's trials (every plain book runs to the cap; a
# controlled one may stop sooner, its interval narrower than the
# precision asked), each controlled mean is inside the plain mean's 95%
# interval, and narrows it. A control whose expectation were wrong would move every
# controlled mean by its coefficient times the error, and fail this.
for prof in code-execution data-analysis coding-agent browser-automation rl-evaluation; do
    # code-execution draws 86,000 sessions a month: the floor of trials.
    cap=100
    [ "$prof" = code-execution ] && cap=30
    both "$prof" --max-trials $cap
    [ "$(jq -r .method controlled.json)/$(jq -r .method plain.json)" = controlled/plain ] ||
        fail "$prof: the methods are not named"
    checks=$((checks + 1))
    bad=$(jq -r --slurpfile c controlled.json '
        [.books[] | select(.priced)] as $p
        | [$p[] as $a | $c[0].books[] | select(.id == $a.id and .priced)
           | select(.controls < 1 or
                    ((.mean | tonumber) - ($a.mean | tonumber) | fabs) > $a.ci95_half_width
                    or .ci95_half_width > $a.ci95_half_width)
           | "\(.id): controlled \(.mean) +/- \(.ci95_half_width) (\(.controls) controls, \(.trials) trials), plain \($a.mean) +/- \($a.ci95_half_width) (\($a.trials))"]
        | if ($p | length) < 15 then ["only \($p | length) books priced"] else . end
        | .[]' plain.json)
    [ -z "$bad" ] || fail "$prof: controlled mean not inside the plain interval, or wider: $bad"
    checks=$((checks + 1))
done
# Several months (--months 3, the arrivals +10% a month): the controls
# are summed over a trial's months, each 0 in expectation, so the
# controlled mean of the three months' total is inside the plain one's
# interval as well.
prof=data-analysis
both "$prof" --max-trials 60 --months 3 --growth 10
bad=$(jq -r --slurpfile c controlled.json '
    [.books[] | select(.priced)] as $p
    | [$p[] as $a | $c[0].books[] | select(.id == $a.id and .priced)
       | select(((.mean | tonumber) - ($a.mean | tonumber) | fabs) > $a.ci95_half_width)
       | "\(.id): controlled \(.mean), plain \($a.mean) +/- \($a.ci95_half_width)"]
    | if ($p | length) < 15 then ["only \($p | length) books priced"] else . end
    | .[]' plain.json)
[ -z "$bad" ] || fail "three months: controlled mean not inside the plain interval: $bad"
checks=$((checks + 1))
finish
