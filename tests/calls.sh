#!/bin/bash
# No C file of the tree calls a banned function (scripts/check-calls.sh:
# sprintf, strcpy, atoi, strtol with its end unchecked...), and the check
# catches each form planted in a copy of a file, naming the file and the
# line, while taking the forms that are fine. No database.
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/.." && pwd)
check=$top/scripts/check-calls.sh

expect_status 0 sh -c "cd '$top' && sh '$check'"
contains "$out" " 0 banned calls" "the tree calls nothing banned"
n=$(echo "$out" | sed -n 's/^\([0-9]*\) files checked.*/\1/p')
checks=$((checks + 1))
# (178 on 2026-12-03: fewer means the check stopped seeing files.)
[ "${n:-0}" -ge 150 ] || fail "only ${n:-0} files checked in the tree: $out"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# plant FILE LINE WHAT: a copy of FILE (of the tree) with LINE added at
# its end; the check must fail on it, naming the file, the line and
# WHAT, and on nothing else.
plant() {
    rm -rf "$tmp/t"
    mkdir -p "$tmp/t/$(dirname "$1")"
    cp "$top/$1" "$tmp/t/$1"
    printf '%s\n' "$2" >>"$tmp/t/$1"
    local line
    line=$(wc -l <"$tmp/t/$1")
    expect_status 1 sh -c "cd '$tmp/t' && sh '$check'"
    contains "$out" "$1:$line: $3" "the check catches: $2"
    contains "$out" "1 files checked, 1 banned calls" "one call, one report: $2"
}
plant meter/db/keys.c 'static void f(char *b, int n) { sprintf(b, "%d", n); }' \
    'sprintf(b, "%d", n): no bound'
plant meter/db/keys.c 'static void f(char *b) { vsprintf(b, "x", ap); }' \
    'vsprintf(b, "x", ap): no bound'
plant pricing/dec.c 'static int f(const char *s) { return atoi(s); }' \
    'atoi(s): no error for a bad number'
plant tests/test_util.c 'static long f(const char *s) { return atol(s); }' \
    'atol(s): no error'
plant tests/test_util.c 'static long long f(const char *s) { return atoll(s); }' \
    'atoll(s): no error'
plant reports/invoice.c 'static double f(const char *s) { return atof(s); }' \
    'atof(s): no error'
plant meter/db/keys.c 'static void f(const time_t *t, struct tm *tm) { localtime_r(t, tm); }' \
    'localtime_r(t, tm): the local time zone'
plant pricing/grants.c 'static time_t f(struct tm *tm) { return mktime(tm); }' \
    'mktime(tm): the local time zone'
plant meter/db/exec.c 'static long f(const char *s) { return strtol(s, NULL, 10); }' \
    'strtol(s, NULL, 10): the end is not checked'
plant bench/bench.h 'static unsigned long long f(const char *s) { return strtoull(s, 0, 10); }' \
    'strtoull(s, 0, 10): the end is not checked'
plant simulator/sim.h 'static double f(const char *s) { return strtod(s, (char **)NULL); }' \
    'strtod(s, (char **)NULL): the end is not checked'
plant costsim/args.c 'static void f(char *a, const char *b) { strcpy(a, b); }' \
    'strcpy(a, b): no bound'
plant util/buf.c 'static void f(char *a, const char *b) { strcat(a, b); }' \
    'strcat(a, b): no bound'
plant util/buf.c 'static void f(char *a) { gets(a); }' 'gets(a): no bound'

# An end unchecked over two lines is seen too.
rm -rf "$tmp/t" && mkdir -p "$tmp/t/meter"
cat >"$tmp/t/meter/two.c" <<'C'
long
f(const char *s)
{
    return strtoll(s,
                   NULL, 10);
}
C
expect_status 1 sh -c "cd '$tmp/t' && sh '$check'"
contains "$out" "meter/two.c:4: strtoll(s, ...: the end is not checked" \
    "a call over two lines"

# What is fine: the bounded and checked forms, banned names in comments
# and strings, other functions whose names contain them.
cat >"$tmp/t/meter/two.c" <<'C'
/* sprintf(buf, "%d", n) would be banned; atoi(s) too. */
// strcpy(a, b) in a line comment
static const char *why = "never sprintf(buf), atoi(x) or gets(b)";
static char quote = '"';
long
f(char *b, size_t n, const char *s, va_list ap)
{
    char *end;
    snprintf(b, n, "%s", s);
    vsnprintf(b, n, s, ap);
    my_atoi(s);
    fgets(b, (int)n, stdin);
    p->strcpy(b);
    long v = strtol(s, &end, 10);
    unsigned long long u = strtoull(s, &end, 10);
    return v + (long)u + (long)strtod(s, &end);
}
C
expect_status 0 sh -c "cd '$tmp/t' && sh '$check'"
contains "$out" "1 files checked, 0 banned calls" "the fine forms pass"

# A tree without C files is an error, not a pass.
mkdir "$tmp/empty"
expect_status 1 sh -c "cd '$tmp' && sh '$check' empty"
finish
