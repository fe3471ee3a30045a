#!/bin/bash
# fuzz.sh - libFuzzer targets (clang, -fsanitize=fuzzer,address,undefined)
# for the body forms of POST /v1/samples, the price book loader, the
# decimal parser, the storage block decoder, the simulator's profile
# loader and the request target (the path matched against routes, its
# segments and query arguments checked as text). Each is built from its
# sources and run for $FUZZ_SECONDS (default 10) over its committed corpus
# (tests/fuzz/corpus/NAME, read only: new inputs go to a scratch
# directory). A crash fails the test; its input is kept in $FUZZ_OUT
# (default ./fuzz-out) to become a regression input of the corpus.
#
# A longer run, one target: FUZZ_SECONDS=3600 FUZZ_TARGETS=body bash tests/fuzz.sh
. "$(dirname "$0")/lib.sh"
src=$(cd "$(dirname "$0")/.." && pwd)
command -v clang >/dev/null || { fail "clang not found (scripts/install-deps.sh installs it)"; finish; exit; }
seconds=${FUZZ_SECONDS:-10}
out=${FUZZ_OUT:-$PWD/fuzz-out}
mkdir -p "$out"
flags=(-g -O1 -fno-sanitize-recover=undefined -I"$src/pricing" -I"$src/util"
    -I"$src/meter/sample")
# The sources every target links, compiled once (instrumented for the
# fuzzer, not linked with its main), two at a time.
rm -rf "$out/obj" && mkdir -p "$out/obj"
checks=$((checks + 1))
if ! printf '%s\n' "$src"/util/*.c "$src"/meter/sample/*.c "$src"/pricing/*.c |
    xargs -P 2 -I{} sh -c 'f=$0 dir=$1; shift; clang "$@" -c "$f" -o "$dir/$(basename "$f" .c).o"' {} "$out/obj" \
        -fsanitize=fuzzer-no-link,address,undefined "${flags[@]}" \
        $(pkg-config --cflags jansson gmp) 2>"$out/build_common.log"; then
    fail "the fuzz targets' common sources do not build: $(tail -5 "$out/build_common.log")"
    finish
    exit
fi
for name in ${FUZZ_TARGETS:-body book dec block profile path}; do
    bin="$out/fuzz_$name"
    extra=()
    libs=(jansson gmp)
    [ "$name" = profile ] && extra=(-I"$src/simulator" "$src/simulator/profile.c") && libs+=(gsl)
    [ "$name" = path ] && extra=(-I"$src/meter/http" -I"$src/meter/db" -I"$src/reports"
        "$src/meter/http/path.c") && libs+=(libmicrohttpd libpq)
    checks=$((checks + 1))
    if ! clang -fsanitize=fuzzer,address,undefined "${flags[@]}" \
        "$src/tests/fuzz/fuzz_$name.c" "$out"/obj/*.o "${extra[@]}" \
        $(pkg-config --cflags --libs "${libs[@]}") -lm -o "$bin" 2>"$out/build_$name.log"; then
        fail "fuzz_$name does not build: $(tail -5 "$out/build_$name.log")"
        continue
    fi
    scratch=$(mktemp -d)
    checks=$((checks + 1))
    if ! (cd "$out" && "$bin" -max_total_time="$seconds" -rss_limit_mb=2048 \
        -max_len=65536 -artifact_prefix="$out/crash_${name}_" \
        "$scratch" "$src/tests/fuzz/corpus/$name" >"$out/run_$name.log" 2>&1); then
        fail "fuzz_$name found a crash: $(grep -m3 -E 'ERROR|SUMMARY|runtime error' "$out/run_$name.log"); input in $out"
    fi
    runs=$(grep -oE 'Done [0-9]+ runs' "$out/run_$name.log" | grep -oE '[0-9]+')
    echo "fuzz_$name: ${runs:-?} executions in $seconds s"
    rm -rf "$scratch"
done
finish
