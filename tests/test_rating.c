/*
 * test_rating.c - the rating engine, case by case, with every expected
 * amount computed by hand in the comment beside it.
 */
#include <stdlib.h>
#include <string.h>

#include "pricing.h"
#include "statement_cmp.h"
#include "testutil.h"

#define JAN 1767225600LL             /* 2026-01-01T00:00:00Z */
#define FEB (JAN + 31 * 86400LL)     /* 2026-02-01T00:00:00Z */
#define V(x) ((uint32_t)((x)*10000)) /* vCPUs in 1/10,000 */
#define GIB (1ULL << 30)

/* n consecutive seconds of one sandbox with the same values; vcpu 0 is
 * paused. */
struct run {
    const char *sandbox;
    int64_t ts;
    uint32_t n;
    uint32_t vcpu, used;
    uint64_t mem, disk, egress;
    uint64_t mem_used; /* 0: same as mem */
};

static struct pricing_book *
book(const char *json)
{
    struct pricing_err e = {{0}};
    struct pricing_book *b = pricing_book_parse(json, strlen(json), "test", &e);
    if (!b) {
        fprintf(stderr, "test book refused: %s\n", e.msg);
        exit(1);
    }
    return b;
}

/* The first second of run x. */
static struct pricing_second
first_second(const struct run *x)
{
    return (struct pricing_second){
        .ts = x->ts,
        .vcpu = x->vcpu,
        .cpu_used = x->used,
        .mem_bytes = x->mem,
        .mem_used_bytes = x->mem_used ? x->mem_used : x->mem,
        .disk_bytes = x->disk,
        .egress_bytes = x->egress,
    };
}

/* The statements of the last rate(), released by the next. */
static struct pricing_statement *inv;
static size_t ninv;
static char err[512];

/* Rates runs (in order) with the book, one block of seconds per run or
 * (as_runs) one struct pricing_run per run; *out and *n as
 * pricing_rater_finish. Returns 0, or -1 with e set. */
static int
rate_as(const struct pricing_book *b, const struct run *runs, size_t n,
        bool as_runs, struct pricing_statement **out, size_t *nout,
        struct pricing_err *e)
{
    struct pricing_rater *r = pricing_rater_new(b, e);
    int rc = -1;
    *out = NULL;
    *nout = 0;
    for (size_t i = 0; r && i < n; i++) {
        const struct run *x = &runs[i];
        struct pricing_second v = first_second(x);
        struct pricing_run one = {v, x->n};
        struct pricing_second *s = calloc(x->n ? x->n : 1, sizeof(*s));
        for (uint32_t k = 0; k < x->n; k++) {
            s[k] = v;
            s[k].ts = x->ts + k;
        }
        struct pricing_block blk = {.account_id = "acme",
                                    .sandbox_id =
                                        x->sandbox ? x->sandbox : "sb-1",
                                    .s = s,
                                    .n = x->n};
        if (as_runs) {
            blk.runs = &one;
            blk.nruns = 1;
        }
        int bad = pricing_rater_add(r, &blk, e);
        free(s);
        if (bad)
            goto out;
    }
    if (r && pricing_rater_finish(r, out, nout, e) == 0)
        rc = 0;
out:
    pricing_rater_free(r);
    return rc;
}

/* Rates runs (in order) with the book; returns 0, or -1 with err set.
 * Every case is rated twice, second by second and as runs: the two must
 * give the same statements, or fail with the same message. */
static int
rate(const char *book_json, const struct run *runs, size_t n)
{
    struct pricing_book *b = book(book_json);
    struct pricing_err e = {{0}}, e2 = {{0}};
    struct pricing_statement *other;
    size_t nother;
    pricing_statements_free(inv, ninv);
    int rc = rate_as(b, runs, n, false, &inv, &ninv, &e);
    int rc2 = rate_as(b, runs, n, true, &other, &nother, &e2);
    const char *d = rc == 0 && rc2 == 0
                        ? statements_differ(inv, ninv, other, nother)
                    : rc != rc2             ? "one failed"
                    : strcmp(e.msg, e2.msg) ? "the errors differ"
                                            : NULL;
    if (d) {
        fprintf(stderr, "seconds and runs differ: %s (%s | %s)\n", d, e.msg,
                e2.msg);
        test_failures++;
    }
    pricing_statements_free(other, nother);
    snprintf(err, sizeof(err), "%s", rc == 0 ? "" : e.msg);
    pricing_book_free(b);
    return rc;
}

/* The amount of line kind of invoice i with 6 decimals, or "-" if the
 * invoice has no such line. */
static const char *
amount(size_t i, const char *kind)
{
    static char buf[8][64];
    static int k;
    char *out = buf[k++ % 8];
    if (i >= ninv)
        return "no invoice";
    for (size_t l = 0; l < inv[i].nlines; l++) {
        if (strcmp(inv[i].lines[l].kind, kind) == 0) {
            pricing_dec_format(inv[i].lines[l].amount, 6, out, 64);
            return out;
        }
    }
    return "-";
}

/* Line kind of invoice i, or NULL. */
static const struct pricing_line *
line(size_t i, const char *kind)
{
    for (size_t l = 0; i < ninv && l < inv[i].nlines; l++)
        if (strcmp(inv[i].lines[l].kind, kind) == 0)
            return &inv[i].lines[l];
    return NULL;
}

static const char *
total(size_t i)
{
    static char buf[64];
    pricing_dec_format(inv[i].total, 2, buf, sizeof(buf));
    return buf;
}

/* cpu at `rate` per vCPU-second, allocated; memory free; storage and
 * egress unknown (null); runs free; then the extra keys. */
static char *
simple_book(const char *rate_, const char *extra)
{
    static char buf[2048];
    snprintf(buf, sizeof(buf),
             "{\"id\": \"t\", \"currency\": \"USD\", \"effective_from\": "
             "\"2026-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": "
             "\"%s\", \"per\": \"second\"}, \"memory\": {\"basis\": "
             "\"allocated\", \"unit\": \"GiB\", \"rate\": \"0\", \"per\": "
             "\"second\"}, \"storage\": null, \"egress\": null, \"per_run\": "
             "\"0\"%s%s}",
             rate_, *extra ? ", " : "", extra);
    return buf;
}

static void
test_published_examples(void)
{
    const char *e2b =
        "{\"id\": \"e2b\", \"currency\": \"USD\", \"effective_from\": "
        "\"2026-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": "
        "\"0.000014\", \"per\": \"second\"}, \"memory\": {\"basis\": "
        "\"allocated\", \"unit\": \"GiB\", \"rate\": \"0.0000045\", \"per\": "
        "\"second\"}, \"storage\": null, \"egress\": null, \"per_run\": "
        "\"0\"}";
    /* E2B: 8 vCPU + 4 GiB for one hour: 8 x 3600 x 0.000014 = 0.4032 and
     * 4 x 3600 x 0.0000045 = 0.0648; 0.468 invoiced as 0.47. */
    struct run one_hour[] = {{NULL, JAN, 3600, V(8), V(8), 4 * GIB, 0, 0, 0}};
    CHECK(rate(e2b, one_hour, 1) == 0);
    CHECK(ninv == 1 && inv[0].nlines == 2);
    CHECK_STR(amount(0, "cpu"), "0.403200");
    CHECK_STR(amount(0, "memory"), "0.064800");
    CHECK_STR(total(0), "0.47");
    char q[64];
    pricing_dec_format(inv[0].lines[0].quantity, 6, q, sizeof(q));
    CHECK_STR(q, "28800.000000");
    CHECK_STR(inv[0].lines[0].unit, "vCPU-second");
    CHECK(inv[0].lines[0].has_unit_price);
    CHECK(inv[0].year == 2026 && inv[0].month == 1);

    /* Daytona: 2 vCPU + 4 GiB for 730 hours in January: 2 x 2,628,000 x
     * 0.000014 = 73.584 and 4 x 2,628,000 x 0.0000045 = 47.304. */
    struct run month[] = {{NULL, JAN, 2628000, V(2), V(1), 4 * GIB, 0, 0, 0}};
    CHECK(rate(e2b, month, 1) == 0);
    CHECK_STR(amount(0, "cpu"), "73.584000");
    CHECK_STR(amount(0, "memory"), "47.304000");
    CHECK_STR(total(0), "120.89");
}

static void
test_granularity(void)
{
    const char *per_minute = simple_book("0.001", "\"granularity_s\": 60");
    /* Segments of 1, 59, 60, 61 s are billed 60, 60, 60, 120 s. */
    static const struct {
        uint32_t n;
        const char *cpu;
        uint64_t padding;
    } cases[] = {{1, "0.060000", 59},
                 {59, "0.060000", 1},
                 {60, "0.060000", 0},
                 {61, "0.120000", 59}};
    for (size_t i = 0; i < 4; i++) {
        struct run r[] = {{NULL, JAN, cases[i].n, V(1), V(1), 0, 0, 0, 0}};
        CHECK(rate(per_minute, r, 1) == 0);
        CHECK_STR(amount(0, "cpu"), cases[i].cpu);
        CHECK(inv[0].q.padding_s == cases[i].padding);
        CHECK(inv[0].q.running_s == cases[i].n);
    }
    /* A missing second splits a segment: 30 + 30 s bill 60 + 60. */
    struct run gap[] = {{NULL, JAN, 30, V(1), V(1), 0, 0, 0, 0},
                        {NULL, JAN + 31, 30, V(1), V(1), 0, 0, 0, 0}};
    CHECK(rate(per_minute, gap, 2) == 0);
    CHECK_STR(amount(0, "cpu"), "0.120000");
    /* A paused second splits it too. */
    struct run pause[] = {{NULL, JAN, 30, V(1), V(1), 0, 0, 0, 0},
                          {NULL, JAN + 30, 1, 0, 0, 0, 0, 0, 0},
                          {NULL, JAN + 31, 30, V(1), V(1), 0, 0, 0, 0}};
    CHECK(rate(per_minute, pause, 3) == 0);
    CHECK_STR(amount(0, "cpu"), "0.120000");
    /* Blocks that continue each other do not: 30 + 31 s bill 120. */
    struct run cont[] = {{NULL, JAN, 30, V(1), V(1), 0, 0, 0, 0},
                         {NULL, JAN + 30, 31, V(1), V(1), 0, 0, 0, 0}};
    CHECK(rate(per_minute, cont, 2) == 0);
    CHECK_STR(amount(0, "cpu"), "0.120000");
    /* Padding repeats the last second: 1 s at 1 vCPU, 1 s at 2 vCPU,
     * 58 s of padding at 2 vCPU: 1 + 2 + 116 = 119 vCPU-s. */
    struct run last[] = {{NULL, JAN, 1, V(1), V(1), 0, 0, 0, 0},
                         {NULL, JAN + 1, 1, V(2), V(2), 0, 0, 0, 0}};
    CHECK(rate(per_minute, last, 2) == 0);
    CHECK_STR(amount(0, "cpu"), "0.119000");

    /* Minimum billed time of 60 s: 10 s bill 60; 100 s bill 100. */
    const char *minimum = simple_book("0.001", "\"min_billed_s\": 60");
    struct run ten[] = {{NULL, JAN, 10, V(1), V(1), 0, 0, 0, 0}};
    CHECK(rate(minimum, ten, 1) == 0);
    CHECK_STR(amount(0, "cpu"), "0.060000");
    struct run hundred[] = {{NULL, JAN, 100, V(1), V(1), 0, 0, 0, 0}};
    CHECK(rate(minimum, hundred, 1) == 0);
    CHECK_STR(amount(0, "cpu"), "0.100000");
    /* A segment ends at the period's end: 30 s either side of 1 Feb bill
     * 60 s in each month. */
    struct run across[] = {{NULL, FEB - 30, 60, V(1), V(1), 0, 0, 0, 0}};
    CHECK(rate(minimum, across, 1) == 0);
    CHECK(ninv == 2);
    CHECK_STR(amount(0, "cpu"), "0.060000");
    CHECK_STR(amount(1, "cpu"), "0.060000");
}

static void
test_tiers(void)
{
    /* cpu per vCPU-hour: the first hour free, the second at 3600 (1 per
     * vCPU-second), beyond at 7200. One unit is 0.0001 vCPU-s, 1/36e6 of
     * a vCPU-hour. */
#define TIERS_BOOK(mode)                                                       \
    "{\"id\": \"t\", \"currency\": \"USD\", \"effective_from\": "              \
    "\"2026-01-01\", \"cpu\": {\"basis\": \"allocated\", \"tiers\": "          \
    "{\"mode\": \"" mode                                                       \
    "\", \"bands\": [{\"up_to\": \"1\", \"rate\": \"0\"}, "                    \
    "{\"up_to\": \"2\", \"rate\": \"3600\"}, {\"up_to\": null, \"rate\": "     \
    "\"7200\"}]}}, \"memory\": {\"basis\": \"allocated\", \"unit\": "          \
    "\"GiB\", \"rate\": \"0\", \"per\": \"second\"}, \"storage\": null, "      \
    "\"egress\": null, \"per_run\": \"0\"}"
    static const struct {
        const char *mode;
        uint32_t seconds; /* at 1 vCPU */
        bool extra_unit;  /* plus one second at 0.0001 vCPU */
        const char *cpu;
    } cases[] = {
        /* exactly on the first bound: free, so no line */
        {"graduated", 3600, false, "-"},
        /* one unit past: 1/36e6 h x 3600 */
        {"graduated", 3600, true, "0.000100"},
        /* on the second bound: the second hour at 3600 */
        {"graduated", 7200, false, "3600.000000"},
        /* one unit past: 3600 + 1/36e6 h x 7200 */
        {"graduated", 7200, true, "3600.000200"},
        {"volume", 3600, false, "-"},
        /* all of it at the second tier: (1 + 1/36e6) x 3600 */
        {"volume", 3600, true, "3600.000100"},
        {"volume", 7200, false, "7200.000000"},
        /* all at the third: (2 + 1/36e6) x 7200 */
        {"volume", 7200, true, "14400.000200"},
    };
    char json[2048];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(json, sizeof(json), "%s",
                 strcmp(cases[i].mode, "volume") == 0
                     ? TIERS_BOOK("volume")
                     : TIERS_BOOK("graduated"));
        struct run r[] = {{NULL, JAN, cases[i].seconds, V(1), V(1), 0, 0, 0, 0},
                          {NULL, JAN + cases[i].seconds, 1, 1, 1, 0, 0, 0, 0}};
        CHECK(rate(json, r, cases[i].extra_unit ? 2 : 1) == 0);
        if (strcmp(amount(0, "cpu"), cases[i].cpu) != 0) {
            fprintf(stderr, "tiers %s %u s%s: cpu %s, want %s\n", cases[i].mode,
                    cases[i].seconds, cases[i].extra_unit ? " + 1 unit" : "",
                    amount(0, "cpu"), cases[i].cpu);
            test_failures++;
        }
    }
    /* Volume shows its single rate per vCPU-hour; graduated past the
     * first tier has none. */
    snprintf(json, sizeof(json), "%s", TIERS_BOOK("volume"));
    struct run two_h[] = {{NULL, JAN, 7200, V(1), V(1), 0, 0, 0, 0}};
    CHECK(rate(json, two_h, 1) == 0);
    CHECK(inv[0].lines[0].has_unit_price);
    CHECK_STR(inv[0].lines[0].unit, "vCPU-hour");
    snprintf(json, sizeof(json), "%s", TIERS_BOOK("graduated"));
    CHECK(rate(json, two_h, 1) == 0);
    CHECK(!inv[0].lines[0].has_unit_price);
}

static void
test_autopause(void)
{
    const char *ap = simple_book(
        "1", "\"autopause\": {\"idle_below\": \"0.1\", \"after_s\": 5}");
    /* Idle streaks of 4 (< after_s), 5 (=) and 7 (>) seconds, each closed
     * by a busy second: 19 s billed; 7 - 5 = 2 s credited. */
    struct run r[] = {{NULL, JAN, 4, V(1), 0, 0, 0, 0, 0},
                      {NULL, JAN + 4, 1, V(1), V(1), 0, 0, 0, 0},
                      {NULL, JAN + 5, 5, V(1), 0, 0, 0, 0, 0},
                      {NULL, JAN + 10, 1, V(1), V(1), 0, 0, 0, 0},
                      {NULL, JAN + 11, 7, V(1), 0, 0, 0, 0, 0},
                      {NULL, JAN + 18, 1, V(1), V(1), 0, 0, 0, 0}};
    CHECK(rate(ap, r, 6) == 0);
    CHECK_STR(amount(0, "cpu"), "19.000000");
    CHECK_STR(amount(0, "autopause_credit"), "-2.000000");
    CHECK(inv[0].q.credited_s == 2);
    CHECK_STR(total(0), "17.00");

    /* Idle is strictly below: 0.1 of 1 vCPU is busy, 0.0999 idle. */
    const char *now = simple_book(
        "1", "\"autopause\": {\"idle_below\": \"0.1\", \"after_s\": 0}");
    struct run at[] = {{NULL, JAN, 10, V(1), V(0.1), 0, 0, 0, 0}};
    CHECK(rate(now, at, 1) == 0);
    CHECK_STR(amount(0, "autopause_credit"), "-");
    struct run below[] = {{NULL, JAN, 10, V(1), V(0.0999), 0, 0, 0, 0}};
    CHECK(rate(now, below, 1) == 0);
    CHECK_STR(amount(0, "autopause_credit"), "-10.000000");
    /* A missing second ends a streak: 3 + 3 idle with after_s 3. */
    const char *three = simple_book(
        "1", "\"autopause\": {\"idle_below\": \"0.1\", \"after_s\": 3}");
    struct run gap[] = {{NULL, JAN, 3, V(1), 0, 0, 0, 0, 0},
                        {NULL, JAN + 4, 3, V(1), 0, 0, 0, 0, 0}};
    CHECK(rate(three, gap, 2) == 0);
    CHECK_STR(amount(0, "autopause_credit"), "-");
    /* A streak across the month's end is two streaks: 4 s in January
     * and 4 in February, after_s 3: 1 s credited in each. */
    struct run across[] = {{NULL, FEB - 4, 8, V(1), 0, 0, 0, 0, 0}};
    CHECK(rate(three, across, 1) == 0);
    CHECK(ninv == 2);
    CHECK_STR(amount(0, "autopause_credit"), "-1.000000");
    CHECK_STR(amount(1, "autopause_credit"), "-1.000000");
    CHECK_STR(amount(0, "cpu"), "4.000000");

    /* With tiers the credit is P(G) - P(N), not rate x C: first hour
     * free, then 1 per vCPU-second. 3500 s busy then 200 s idle, all
     * credited (after_s 0): G = 3700 s, P(G) = 100; N = 3500 s, P(N) = 0;
     * the credit is 100, not 200. */
    const char *tiered =
        "{\"id\": \"t\", \"currency\": \"USD\", \"effective_from\": "
        "\"2026-01-01\", \"cpu\": {\"basis\": \"allocated\", \"tiers\": "
        "{\"mode\": \"graduated\", \"bands\": [{\"up_to\": \"1\", \"rate\": "
        "\"0\"}, {\"up_to\": null, \"rate\": \"3600\"}]}}, \"memory\": "
        "{\"basis\": \"allocated\", \"unit\": \"GiB\", \"rate\": \"0\", "
        "\"per\": \"second\"}, \"storage\": null, \"egress\": null, "
        "\"per_run\": \"0\", \"autopause\": {\"idle_below\": \"0.1\", "
        "\"after_s\": 0}}";
    struct run t[] = {{NULL, JAN, 3500, V(1), V(1), 0, 0, 0, 0},
                      {NULL, JAN + 3500, 200, V(1), 0, 0, 0, 0, 0}};
    CHECK(rate(tiered, t, 2) == 0);
    CHECK_STR(amount(0, "cpu"), "100.000000");
    CHECK_STR(amount(0, "autopause_credit"), "-100.000000");
    CHECK_STR(total(0), "0.00");

    /* Padding is never credited: idle 10 s, granularity 60, after_s 0:
     * 60 s billed, 10 credited. */
    const char *padded = simple_book(
        "1", "\"granularity_s\": 60, \"autopause\": {\"idle_below\": "
             "\"0.1\", \"after_s\": 0}");
    struct run idle10[] = {{NULL, JAN, 10, V(1), 0, 0, 0, 0, 0}};
    CHECK(rate(padded, idle10, 1) == 0);
    CHECK_STR(amount(0, "cpu"), "60.000000");
    CHECK_STR(amount(0, "autopause_credit"), "-10.000000");
}

static void
test_repeats_and_order(void)
{
    const char *b = simple_book("1", "");
    /* The first of a repeated second stands: 2 vCPU at JAN, then an equal
     * repeat (duplicate) and one with other values (conflict), then 1
     * vCPU at JAN+1: 3 vCPU-s. */
    struct run r[] = {{NULL, JAN, 1, V(2), V(2), 0, 0, 0, 0},
                      {NULL, JAN, 1, V(2), V(2), 0, 0, 0, 0},
                      {NULL, JAN, 1, V(1), V(1), 0, 0, 0, 0},
                      {NULL, JAN + 1, 1, V(1), V(1), 0, 0, 0, 0}};
    CHECK(rate(b, r, 4) == 0);
    CHECK_STR(amount(0, "cpu"), "3.000000");
    CHECK(inv[0].duplicates == 1 && inv[0].conflicts == 1);

    /* Seconds out of order are refused by the engine, naming them. */
    struct run back[] = {{NULL, JAN + 5, 1, V(1), V(1), 0, 0, 0, 0},
                         {NULL, JAN + 1, 1, V(1), V(1), 0, 0, 0, 0}};
    CHECK(rate(b, back, 2) == -1);
    CHECK(strstr(err, "sb-1") && strstr(err, "order"));
}

static void
test_storage_egress_runs(void)
{
    const char *b =
        "{\"id\": \"t\", \"currency\": \"USD\", \"effective_from\": "
        "\"2026-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": \"0\", "
        "\"per\": \"second\"}, \"memory\": {\"basis\": \"used\", \"unit\": "
        "\"GiB\", \"rate\": \"1\", \"per\": \"second\"}, \"storage\": "
        "{\"rate\": \"0.001\", \"per\": \"second\", \"included_gib\": \"1\"}, "
        "\"egress\": {\"rate\": \"1\", \"free_gb\": \"1\"}, \"per_run\": "
        "\"0.5\"}";
    /* Running 10 s with 3 GiB of disk (1 included): 20 GiB-s; paused 10 s
     * with 3 GiB: all 30 count; 50 x 0.001 = 0.05. Egress 0.3 GB a
     * running second and 0.1 GB a paused one: 4 GB, 1 free, 3 x 1.
     * Memory on the used basis: 1 of 2 GiB for 10 s. One run. */
    struct run r[] = {
        {NULL, JAN, 10, V(1), V(1), 2 * GIB, 3 * GIB, 300000000, GIB},
        {NULL, JAN + 10, 10, 0, 0, 0, 3 * GIB, 100000000, 0}};
    CHECK(rate(b, r, 2) == 0);
    CHECK_STR(amount(0, "storage"), "0.050000");
    CHECK_STR(amount(0, "egress"), "3.000000");
    CHECK_STR(amount(0, "memory"), "10.000000");
    CHECK_STR(amount(0, "runs"), "0.500000");
    CHECK_STR(total(0), "13.55");
    char q[64];
    pricing_dec_format(inv[0].lines[0].quantity, 6, q, sizeof(q));
    CHECK_STR(q, "10.000000"); /* memory, GiB-seconds */
    CHECK_STR(inv[0].lines[0].kind, "memory");
    CHECK_STR(inv[0].lines[1].unit, "GiB-second");

    /* Runs count where a sandbox first runs: sb-1 runs from January into
     * February (one run, in January); sb-2 is paused in January and
     * first runs in February; sb-3 never runs. */
    struct run runs[] = {{"sb-1", FEB - 5, 10, V(1), V(1), 0, 0, 0, 0},
                         {"sb-2", FEB - 5, 5, 0, 0, 0, 0, 0, 0},
                         {"sb-2", FEB, 5, V(1), V(1), 0, 0, 0, 0},
                         {"sb-3", FEB, 5, 0, 0, 0, 0, 0, 0}};
    CHECK(rate(b, runs, 4) == 0);
    CHECK(ninv == 2);
    CHECK(inv[0].q.runs == 1 && inv[1].q.runs == 1);
    CHECK_STR(amount(0, "runs"), "0.500000");
    CHECK_STR(amount(1, "runs"), "0.500000");
}

/* per_run_free: a period's first N runs are free (AWS Lambda's 1M
 * requests a month). At N runs no line; at N + 1 one run billed; the
 * default is none free; with per_run null, a period within the free
 * runs needs no price and one past them stops, naming the runs. */
static void
test_runs_free(void)
{
#define RUNS_BOOK(per_run, extra)                                              \
    "{\"id\": \"t\", \"currency\": \"USD\", \"effective_from\": "              \
    "\"2026-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": \"0\", "    \
    "\"per\": \"second\"}, \"memory\": {\"basis\": \"allocated\", "            \
    "\"unit\": \"GiB\", \"rate\": \"0\", \"per\": \"second\"}, "               \
    "\"storage\": null, \"egress\": null, \"per_run\": " per_run extra "}"
    struct run three[] = {{"sb-1", JAN, 5, V(1), V(1), 0, 0, 0, 0},
                          {"sb-2", JAN + 1, 5, V(1), V(1), 0, 0, 0, 0},
                          {"sb-3", JAN + 2, 5, V(1), V(1), 0, 0, 0, 0}};
    CHECK(rate(RUNS_BOOK("\"0.5\"", ", \"per_run_free\": 3"), three, 3) == 0);
    CHECK(ninv == 1 && inv[0].q.runs == 3 && !line(0, "runs"));
    CHECK_STR(total(0), "0.00");
    CHECK(rate(RUNS_BOOK("\"0.5\"", ", \"per_run_free\": 2"), three, 3) == 0);
    CHECK_STR(amount(0, "runs"), "0.500000");
    CHECK(line(0, "runs") && strcmp(line(0, "runs")->description,
                                    "sandbox runs after 2 free") == 0);
    char q[64];
    pricing_dec_format(line(0, "runs")->quantity, 0, q, sizeof(q));
    CHECK_STR(q, "1");
    CHECK(rate(RUNS_BOOK("\"0.5\"", ", \"per_run_free\": 0"), three, 3) == 0);
    CHECK_STR(amount(0, "runs"), "1.500000");
    CHECK(rate(RUNS_BOOK("\"0.5\"", ""), three, 3) == 0);
    CHECK_STR(amount(0, "runs"), "1.500000");
    CHECK_STR(line(0, "runs")->description, "sandbox runs");
    /* A price not published, runs free: within them, priced. */
    CHECK(rate(RUNS_BOOK("null", ", \"per_run_free\": 3"), three, 3) == 0);
    CHECK_STR(total(0), "0.00");
    CHECK(rate(RUNS_BOOK("null", ", \"per_run_free\": 2"), three, 3) == -1);
    CHECK(strstr(err, "runs (per_run)") != NULL);
    /* Refused: not a whole number of runs, or below 0. */
    struct pricing_err e = {{0}};
    const char *bad[] = {RUNS_BOOK("\"0.5\"", ", \"per_run_free\": -1"),
                         RUNS_BOOK("\"0.5\"", ", \"per_run_free\": \"10\""),
                         RUNS_BOOK("\"0.5\"", ", \"per_run_free\": 1.5")};
    for (size_t i = 0; i < 3; i++) {
        struct pricing_book *x =
            pricing_book_parse(bad[i], strlen(bad[i]), "book.json", &e);
        CHECK(x == NULL && strstr(e.msg, "per_run_free") != NULL);
        pricing_book_free(x);
    }
#undef RUNS_BOOK
}

/* The estimate of usage alerts (pricing_estimate): from the sums alone
 * it gives what the rater gives where the book has no granularity,
 * minimum, per-run price or autopause (every dimension, tiers and a
 * subscription here); a book with a price per run is estimated without
 * it; an unknown price used, or instance types, is no estimate. */
static void
test_estimate(void)
{
    const char *b =
        "{\"id\": \"t\", \"currency\": \"USD\", \"effective_from\": "
        "\"2026-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": "
        "\"0.00002\", \"per\": \"second\"}, \"memory\": {\"basis\": "
        "\"used\", \"unit\": \"GiB\", \"rate\": \"0.01\", \"per\": "
        "\"hour\"}, \"storage\": {\"rate\": \"0.1\", \"per\": \"month\", "
        "\"included_gib\": \"1\"}, \"egress\": {\"rate\": \"0.05\", "
        "\"free_gb\": \"1\"}, \"per_run\": \"0\", \"subscription\": "
        "{\"monthly_fee\": \"20\", \"included_credit\": \"0\"}}";
    struct run r[] = {
        {"sb-1", JAN, 3600, V(2), V(1), 4 * GIB, 3 * GIB, 300000000, GIB},
        {"sb-1", JAN + 3600, 600, 0, 0, 0, 3 * GIB, 0, 0},
        {"sb-2", JAN + 100, 7200, V(8), V(8), 16 * GIB, 0, 1000000000, 0}};
    CHECK(rate(b, r, 3) == 0);
    struct pricing_totals t = {0};
    for (size_t i = 0; i < 3; i++) {
        struct pricing_second v = first_second(&r[i]);
        t.samples += r[i].n;
        t.running_s += v.vcpu ? r[i].n : 0;
        t.vcpu += (pricing_u128)v.vcpu * r[i].n;
        t.cpu_used += (pricing_u128)v.cpu_used * r[i].n;
        t.mem_byte_s += (pricing_u128)v.mem_bytes * r[i].n;
        t.mem_used_byte_s += (pricing_u128)v.mem_used_bytes * r[i].n;
        t.disk_byte_s += (pricing_u128)v.disk_bytes * r[i].n;
        t.egress_bytes += (pricing_u128)v.egress_bytes * r[i].n;
    }
    struct pricing_book *bk = book(b);
    struct pricing_dec est;
    struct pricing_err e = {{0}};
    CHECK(pricing_estimate(bk, &t, 2026, 1, &est, &e) == 0);
    char got[64];
    pricing_dec_format(est, 2, got, sizeof(got));
    CHECK_STR(got, total(0));
    pricing_book_free(bk);

    /* A run's price is left out: the estimate stays that of no price. */
    char with_runs[2048];
    snprintf(with_runs, sizeof(with_runs), "%.*s\"0.5\"%s",
             (int)(strstr(b, "\"0\", \"subscription\"") - b), b,
             strstr(b, "\"0\", \"subscription\"") + 3);
    bk = book(with_runs);
    struct pricing_dec est2;
    CHECK(pricing_estimate(bk, &t, 2026, 1, &est2, &e) == 0);
    CHECK(pricing_dec_cmp(est, est2) == 0);
    pricing_book_free(bk);

    /* Egress used on a book that leaves it unknown. */
    bk = book(simple_book("0.00001", ""));
    CHECK(pricing_estimate(bk, &t, 2026, 1, &est, &e) < 0);
    CHECK(strstr(e.msg, "unknown") != NULL);
    pricing_book_free(bk);
}

static void
test_subscription_and_credits(void)
{
    const char *b = simple_book(
        "1", "\"subscription\": {\"monthly_fee\": \"10\", "
             "\"included_credit\": \"5\"}, \"promotional_credit\": \"2\", "
             "\"minimum_commit\": \"20\"");
    static const struct {
        uint32_t seconds;
        const char *included, *commit, *total;
    } cases[] = {
        /* 3 + 10 - 3 = 10, - 2 = 8, commit tops up 12: 20 */
        {3, "-3.000000", "12.000000", "20.00"},
        /* 7 + 10 - 5 = 12, - 2 = 10, commit tops up 10: 20 */
        {7, "-5.000000", "10.000000", "20.00"},
        /* 30 + 10 - 5 = 35, - 2 = 33, above the commit: 33 */
        {30, "-5.000000", "-", "33.00"},
    };
    for (size_t i = 0; i < 3; i++) {
        struct run r[] = {
            {NULL, JAN, cases[i].seconds, V(1), V(1), 0, 0, 0, 0}};
        CHECK(rate(b, r, 1) == 0);
        CHECK_STR(amount(0, "subscription"), "10.000000");
        CHECK_STR(amount(0, "included_credit"), cases[i].included);
        CHECK_STR(amount(0, "promotional_credit"), "-2.000000");
        CHECK_STR(amount(0, "minimum_commit"), cases[i].commit);
        CHECK_STR(total(0), cases[i].total);
    }
    /* The lines come in the order of the rules. */
    static const char *const order[] = {"cpu", "subscription",
                                        "included_credit", "promotional_credit",
                                        "minimum_commit"};
    struct run r[] = {{NULL, JAN, 3, V(1), V(1), 0, 0, 0, 0}};
    CHECK(rate(b, r, 1) == 0);
    CHECK(inv[0].nlines == 5);
    for (size_t i = 0; i < 5 && i < inv[0].nlines; i++)
        CHECK_STR(inv[0].lines[i].kind, order[i]);

    /* (simple_book reuses one buffer: b is not valid past here.) */
    /* Credits with more than 6 decimals round like every line:
     * 0.015 - 0.0000005 -> 0.015000 - 0.000000 (half to even), and the
     * zero credit line is left out; the total is 0.02. */
    const char *fine =
        simple_book("0.015", "\"subscription\": {\"monthly_fee\": \"0\", "
                             "\"included_credit\": \"0.0000005\"}, "
                             "\"promotional_credit\": \"0.0000004\"");
    struct run one[] = {{NULL, JAN, 1, V(1), V(1), 0, 0, 0, 0}};
    CHECK(rate(fine, one, 1) == 0);
    CHECK_STR(amount(0, "included_credit"), "-");
    CHECK_STR(amount(0, "promotional_credit"), "-");
    CHECK_STR(total(0), "0.02");
}

static void
test_rounding(void)
{
    /* Lines round half to even at 6 decimals: 0.0000125 -> 0.000012,
     * 3 x 0.0000125 = 0.0000375 -> 0.000038. */
    struct run one[] = {{NULL, JAN, 1, V(1), V(1), 0, 0, 0, 0}};
    struct run three[] = {{NULL, JAN, 3, V(1), V(1), 0, 0, 0, 0}};
    CHECK(rate(simple_book("0.0000125", ""), one, 1) == 0);
    CHECK_STR(amount(0, "cpu"), "0.000012");
    CHECK(rate(simple_book("0.0000125", ""), three, 1) == 0);
    CHECK_STR(amount(0, "cpu"), "0.000038");
    /* The total rounds half to even to cents: 0.005 -> 0.00, 0.015 ->
     * 0.02. */
    CHECK(rate(simple_book("0.005", ""), one, 1) == 0);
    CHECK_STR(amount(0, "cpu"), "0.005000");
    CHECK_STR(total(0), "0.00");
    CHECK(rate(simple_book("0.005", ""), three, 1) == 0);
    CHECK_STR(total(0), "0.02");
    /* A rate per hour stays exact: 0.128 per vCPU-hour for 1 s is
     * 0.0000355555... -> 0.000036, not a rounded per-second rate. */
    const char *hourly =
        "{\"id\": \"t\", \"currency\": \"USD\", \"effective_from\": "
        "\"2026-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": "
        "\"0.128\", \"per\": \"hour\"}, \"memory\": null, \"storage\": null, "
        "\"egress\": null, \"per_run\": \"0\"}";
    CHECK(rate(hourly, one, 1) == 0);
    CHECK_STR(amount(0, "cpu"), "0.000036");
    /* 9 s: 0.00032 exactly. */
    struct run nine[] = {{NULL, JAN, 9, V(1), V(1), 0, 0, 0, 0}};
    CHECK(rate(hourly, nine, 1) == 0);
    CHECK_STR(amount(0, "cpu"), "0.000320");
    /* In JPY the total has no decimals. */
    const char *yen =
        "{\"id\": \"t\", \"currency\": \"JPY\", \"effective_from\": "
        "\"2026-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": "
        "\"2.5\", \"per\": \"second\"}, \"memory\": null, \"storage\": null, "
        "\"egress\": null, \"per_run\": \"0\"}";
    CHECK(rate(yen, one, 1) == 0);
    char t[64];
    pricing_dec_format(inv[0].total, 0, t, sizeof(t));
    CHECK_STR(t, "2");
}

static void
test_unknown_and_overflow(void)
{
    /* storage is null: fine without disk, an error naming it with. */
    const char *b = simple_book("1", "");
    struct run no_disk[] = {{NULL, JAN, 5, V(1), V(1), 0, 0, 0, 0}};
    CHECK(rate(b, no_disk, 1) == 0);
    struct run disk[] = {{NULL, JAN, 5, V(1), V(1), 0, GIB, 0, 0}};
    CHECK(rate(b, disk, 1) == -1);
    CHECK(strstr(err, "storage") && strstr(err, "unknown"));
    struct run egress[] = {{NULL, JAN, 5, V(1), V(1), 0, 0, 1, 0}};
    CHECK(rate(b, egress, 1) == -1);
    CHECK(strstr(err, "egress") != NULL);
    /* cpu null: paused seconds need no cpu price. */
    const char *no_cpu =
        "{\"id\": \"t\", \"currency\": \"USD\", \"effective_from\": "
        "\"2026-01-01\", \"cpu\": null, \"memory\": null, \"storage\": "
        "{\"rate\": \"0\", \"per\": \"month\"}, \"egress\": null, "
        "\"per_run\": null}";
    struct run paused[] = {{NULL, JAN, 5, 0, 0, 0, GIB, 0, 0}};
    CHECK(rate(no_cpu, paused, 1) == 0);
    CHECK(rate(no_cpu, no_disk, 1) == -1);
    CHECK(strstr(err, "cpu") != NULL);
    /* An unknown monthly fee is an error whenever the book is rated. */
    CHECK(rate(simple_book("1", "\"subscription\": {\"monthly_fee\": null}"),
               no_disk, 1) == -1);
    CHECK(strstr(err, "monthly_fee") != NULL);

    /* Money overflow is reported, not wrapped: 2^62 bytes (2^32 GiB) at
     * 10^12 per GiB-second for 100,000 s is about 4.3e26, past the
     * largest amount (about 8.5e25). */
    const char *huge =
        "{\"id\": \"t\", \"currency\": \"USD\", \"effective_from\": "
        "\"2026-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": \"0\", "
        "\"per\": \"second\"}, \"memory\": {\"basis\": \"allocated\", "
        "\"unit\": \"GiB\", \"rate\": \"1000000000000\", \"per\": "
        "\"second\"}, \"storage\": null, \"egress\": null, \"per_run\": "
        "\"0\"}";
    struct run big[] = {{NULL, JAN, 100000, V(1), V(1), 1ULL << 62, 0, 0, 0}};
    CHECK(rate(huge, big, 1) == -1);
    CHECK(strstr(err, "overflow") != NULL);
    /* Quantities past 2^64 are exact: 1,000 sandboxes of 2^62 bytes for
     * 100 s is 2^62 x 10^5 byte-seconds per sandbox, 1.15e26 in all. */
    const char *cheap =
        "{\"id\": \"t\", \"currency\": \"USD\", \"effective_from\": "
        "\"2026-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": \"0\", "
        "\"per\": \"second\"}, \"memory\": {\"basis\": \"allocated\", "
        "\"unit\": \"GiB\", \"rate\": \"0.000000000001\", \"per\": "
        "\"second\"}, \"storage\": null, \"egress\": null, \"per_run\": "
        "\"0\"}";
    struct pricing_book *bk = book(cheap);
    struct pricing_err e = {{0}};
    struct pricing_rater *r = pricing_rater_new(bk, &e);
    struct pricing_second s[100];
    for (int i = 0; i < 100; i++)
        s[i] = (struct pricing_second){JAN + i,    V(1), V(1), 1ULL << 62,
                                       1ULL << 62, 0,    0};
    char name[32];
    for (int k = 0; k < 1000; k++) {
        snprintf(name, sizeof(name), "sb-%d", k);
        struct pricing_block blk = {
            .account_id = "acme", .sandbox_id = name, .s = s, .n = 100};
        CHECK(pricing_rater_add(r, &blk, &e) == 0);
    }
    struct pricing_statement *out;
    size_t n;
    CHECK(pricing_rater_finish(r, &out, &n, &e) == 0);
    pricing_u128 want = (pricing_u128)(1ULL << 62) * 100 * 1000;
    CHECK(n == 1 && out[0].q.mem_gross == want);
    /* 2^32 GiB x 10^5 s x 1000 x 10^-12 = 429.4967296 */
    char a[64];
    pricing_dec_format(out[0].lines[0].amount, 6, a, sizeof(a));
    CHECK_STR(a, "429.496730");
    pricing_statements_free(out, n);
    pricing_rater_free(r);
    pricing_book_free(bk);
}

/* A source of two blocks of one sandbox, then an error or the end. */
struct two_blocks {
    int calls;
    bool fail;
    struct pricing_second s[2];
};

static int
two_blocks_next(void *ctx, struct pricing_block *b, struct pricing_err *e)
{
    struct two_blocks *t = ctx;
    if (t->calls == 2) {
        if (t->fail) {
            snprintf(e->msg, sizeof(e->msg), "source broke at block 3");
            return -1;
        }
        return 0;
    }
    *b = (struct pricing_block){.account_id = "acme",
                                .sandbox_id = "sb-1",
                                .s = &t->s[t->calls],
                                .n = 1};
    t->calls++;
    return 1;
}

/* pricing_rate: every block of the source rated, its period selection
 * applied, a source's error passed on with nothing returned. */
static void
test_pipeline(void)
{
    struct pricing_book *b = book(simple_book("0.000001", ""));
    struct pricing_err e = {{0}};
    struct pricing_statement *st = NULL;
    size_t n = 99;
    /* Jan 31 23:59:59 and Feb 1 00:00:00: two periods. */
    struct two_blocks t = {0,
                           false,
                           {{JAN + 31 * 86400 - 1, V(1), V(1), GIB, GIB, 0, 0},
                            {JAN + 31 * 86400, V(1), V(1), GIB, GIB, 0, 0}}};
    struct pricing_source src = {two_blocks_next, &t};
    CHECK(pricing_rate(b, src, NULL, NULL, 0, &st, &n, &e) == 0);
    CHECK(n == 2 && t.calls == 2);
    CHECK(n == 2 && st[0].month == 1 && st[1].month == 2);
    CHECK(n == 2 && st[0].q.running_s == 1 && st[1].q.running_s == 1);
    pricing_statements_free(st, n);

    t.calls = 0;
    CHECK(pricing_rate(b, src, &(struct pricing_scope){2026, 2, 0, NULL, false},
                       NULL, 0, &st, &n, &e) == 0);
    CHECK(n == 1 && st[0].year == 2026 && st[0].month == 2);
    pricing_statements_free(st, n);

    t.calls = 0;
    t.fail = true;
    CHECK(pricing_rate(b, src, NULL, NULL, 0, &st, &n, &e) == -1);
    CHECK(st == NULL && n == 0);
    CHECK_STR(e.msg, "source broke at block 3");
    pricing_book_free(b);
}

/* ---- rules version 2 (sections 10 to 15) -------------------------------- */

/* A book of the given cpu, memory and storage objects (JSON), egress
 * unknown, runs free, then the extra keys. */
static char *
book_v2(const char *cpu, const char *memory, const char *storage,
        const char *extra)
{
    static char buf[16384];
    snprintf(buf, sizeof(buf),
             "{\"id\": \"v2\", \"currency\": \"USD\", \"effective_from\": "
             "\"2026-01-01\", \"cpu\": %s, \"memory\": %s, \"storage\": %s, "
             "\"egress\": null, \"per_run\": \"0\"%s%s}",
             cpu, memory, storage, *extra ? ", " : "", extra);
    return buf;
}

#define CPU_PER_S(extra)                                                       \
    "{\"basis\": \"allocated\", \"rate\": \"0.001\", \"per\": "                \
    "\"second\"" extra "}"
#define MEM_PER_S(extra)                                                       \
    "{\"basis\": \"allocated\", \"unit\": \"GiB\", \"rate\": \"0.001\", "      \
    "\"per\": \"second\"" extra "}"
#define FREE_CPU                                                               \
    "{\"basis\": \"allocated\", \"rate\": \"0\", \"per\": \"second\"}"
#define FREE_MEM                                                               \
    "{\"basis\": \"allocated\", \"unit\": \"GiB\", \"rate\": \"0\", \"per\": " \
    "\"second\"}"

/* The amount of instance type name's line in invoice i, or "-". */
static const char *
instance_amount(size_t i, const char *name)
{
    static char buf[64];
    for (size_t l = 0; i < ninv && l < inv[i].nlines; l++)
        if (strcmp(inv[i].lines[l].kind, "instance") == 0 &&
            strcmp(inv[i].lines[l].instance, name) == 0) {
            pricing_dec_format(inv[i].lines[l].amount, 6, buf, sizeof(buf));
            return buf;
        }
    return "-";
}

/* Section 10: steps round each second's allocation up. */
static void
test_steps(void)
{
    char *b = book_v2(CPU_PER_S(", \"step\": \"0.5\""),
                      MEM_PER_S(", \"step\": \"0.5\""), "null", "");
    char stepped[16384];
    snprintf(stepped, sizeof(stepped), "%s", b);
    /* 1.2 vCPU is billed 1.5, 1 GiB + 1 byte 1.5 GiB: 10 s, 15 units. */
    struct run off[] = {{NULL, JAN, 10, V(1.2), V(1), GIB + 1, 0, 0, 0}};
    CHECK(rate(stepped, off, 1) == 0);
    CHECK_STR(amount(0, "cpu"), "0.015000");
    CHECK_STR(amount(0, "memory"), "0.015000");
    /* Exact multiples stay: 1.5 vCPU and 1 GiB, 10 s. */
    struct run on[] = {{NULL, JAN, 10, V(1.5), V(1), GIB, 0, 0, 0}};
    CHECK(rate(stepped, on, 1) == 0);
    CHECK_STR(amount(0, "cpu"), "0.015000");
    CHECK_STR(amount(0, "memory"), "0.010000");
    /* Without a step nothing is rounded: 12 vCPU-s, 10 GiB-s + 10 B. */
    CHECK(rate(book_v2(CPU_PER_S(""), MEM_PER_S(""), "null", ""), off, 1) == 0);
    CHECK_STR(amount(0, "cpu"), "0.012000");
    CHECK_STR(amount(0, "memory"), "0.010000");
    /* A step changing inside a segment: 1.2 then 2 vCPU (1.5 and 2.0). */
    struct run change[] = {{NULL, JAN, 10, V(1.2), V(1), 0, 0, 0, 0},
                           {NULL, JAN + 10, 10, V(2), V(1), 0, 0, 0, 0}};
    CHECK(rate(stepped, change, 2) == 0);
    CHECK_STR(amount(0, "cpu"), "0.035000");

    /* Padding repeats the rounded value: 1 s of 1.2 vCPU in a 60 s
     * granule is 60 x 1.5 = 90 vCPU-s. */
    b = book_v2(CPU_PER_S(", \"step\": \"0.5\""), FREE_MEM, "null",
                "\"granularity_s\": 60");
    struct run one[] = {{NULL, JAN, 1, V(1.2), V(1), 0, 0, 0, 0}};
    CHECK(rate(b, one, 1) == 0);
    CHECK_STR(amount(0, "cpu"), "0.090000");

    /* Under the used basis, with autopause: 0.04 of 1 vCPU used is
     * billed 1 (step 1) and is idle (0.04 < 0.05 x 1, on the sample's own
     * values), so the rounded 1 is credited: 10 s, 0.010 - 0.010. */
    b = book_v2("{\"basis\": \"used\", \"rate\": \"0.001\", \"per\": "
                "\"second\", \"step\": \"1\"}",
                FREE_MEM, "null",
                "\"autopause\": {\"idle_below\": \"0.05\", \"after_s\": 0}");
    struct run idle[] = {{NULL, JAN, 10, V(1), V(0.04), 0, 0, 0, 0}};
    CHECK(rate(b, idle, 1) == 0);
    CHECK_STR(amount(0, "cpu"), "0.010000");
    CHECK_STR(amount(0, "autopause_credit"), "-0.010000");
    CHECK(inv[0].q.credited_s == 10);
    /* 0.05 used is not idle (not below 0.05): billed 1, no credit. */
    struct run busy[] = {{NULL, JAN, 10, V(1), V(0.05), 0, 0, 0, 0}};
    CHECK(rate(b, busy, 1) == 0);
    CHECK_STR(amount(0, "cpu"), "0.010000");
    CHECK_STR(amount(0, "autopause_credit"), "-");
    /* 0 used stays 0: no cpu line. */
    struct run zero[] = {{NULL, JAN, 10, V(1), 0, 0, 0, 0, 0}};
    CHECK(rate(b, zero, 1) == 0);
    CHECK_STR(amount(0, "cpu"), "-");
}

/* Section 11: instance types. */
static void
test_instances(void)
{
    /* small and twin cost the same per second (0.18 per hour is 0.00005
     * per second); tiny, last in the list, is the cheapest. */
    const char *types =
        "\"instances\": {\"unit\": \"GiB\", \"types\": ["
        "{\"name\": \"big\", \"vcpu\": \"4\", \"memory\": \"8\", \"rate\": "
        "\"0.36\", \"per\": \"hour\"},"
        "{\"name\": \"small\", \"vcpu\": \"2\", \"memory\": \"4\", \"rate\": "
        "\"0.18\", \"per\": \"hour\"},"
        "{\"name\": \"twin\", \"vcpu\": \"2\", \"memory\": \"4\", \"rate\": "
        "\"0.00005\", \"per\": \"second\"},"
        "{\"name\": \"tiny\", \"vcpu\": \"1\", \"memory\": \"2\", \"rate\": "
        "\"0.01\", \"per\": \"hour\"}]}";
    char b[16384];
    snprintf(b, sizeof(b), "%s", book_v2(FREE_CPU, FREE_MEM, "null", types));

    /* 2 vCPU + 4 GiB fits big, small and twin: small and twin tie, the
     * first in the list wins. An hour: 0.18. */
    struct run two[] = {{NULL, JAN, 3600, V(2), V(1), 4 * GIB, 0, 0, 0}};
    CHECK(rate(b, two, 1) == 0);
    CHECK_STR(instance_amount(0, "small"), "0.180000");
    CHECK_STR(instance_amount(0, "twin"), "-");
    CHECK(ninv == 1 && inv[0].nlines == 1);
    CHECK_STR(inv[0].lines[0].kind, "instance");
    CHECK_STR(inv[0].lines[0].unit, "hour");
    char q[64];
    pricing_dec_format(inv[0].lines[0].quantity, 6, q, sizeof(q));
    CHECK_STR(q, "1.000000");
    pricing_dec_format(inv[0].lines[0].unit_price, 6, q, sizeof(q));
    CHECK(inv[0].lines[0].has_unit_price);
    CHECK_STR(q, "0.180000");
    /* 1 vCPU + 2 GiB fits all four: tiny, the cheapest, though last. */
    struct run one[] = {{NULL, JAN, 3600, V(1), V(1), 2 * GIB, 0, 0, 0}};
    CHECK(rate(b, one, 1) == 0);
    CHECK_STR(instance_amount(0, "tiny"), "0.010000");
    /* The allocation grows at the same vCPU: 2 vCPU with 4 GiB (small),
     * then with 6 GiB (big): an hour of each. */
    struct run grow[] = {
        {NULL, JAN, 3600, V(2), V(1), 4 * GIB, 0, 0, 0},
        {NULL, JAN + 3600, 3600, V(2), V(1), 6 * GIB, 0, 0, 0}};
    CHECK(rate(b, grow, 2) == 0);
    CHECK_STR(instance_amount(0, "small"), "0.180000");
    CHECK_STR(instance_amount(0, "big"), "0.360000");
    /* 3 vCPU + 4 GiB fits big only; exactly its size fits it. */
    struct run three[] = {
        {NULL, JAN, 3600, V(3), V(1), 4 * GIB, 0, 0, 0},
        {NULL, JAN + 3600, 3600, V(4), V(1), 8 * GIB, 0, 0, 0}};
    CHECK(rate(b, three, 2) == 0);
    CHECK_STR(instance_amount(0, "big"), "0.720000");
    /* One byte more than the largest fits none: an error naming the
     * sandbox, the second and the allocation. */
    struct run over[] = {{NULL, JAN, 5, V(1), V(1), GIB, 0, 0, 0},
                         {NULL, JAN + 5, 1, V(4), V(1), 8 * GIB + 1, 0, 0, 0}};
    CHECK(rate(b, over, 2) == -1);
    CHECK(strstr(err, "sandbox 'sb-1'") && strstr(err, "second 1767225605") &&
          strstr(err, "4.0000 vCPU") && strstr(err, "8589934593 bytes"));

    /* Types are in whole bytes of their unit: 1 GiB does not fit 1 GB. */
    const char *gb = "\"instances\": {\"unit\": \"GB\", \"types\": ["
                     "{\"name\": \"g1\", \"vcpu\": \"1\", \"memory\": \"1\", "
                     "\"rate\": \"1\", \"per\": \"hour\"}]}";
    struct run gib[] = {{NULL, JAN, 1, V(1), V(1), GIB, 0, 0, 0}};
    CHECK(rate(book_v2(FREE_CPU, FREE_MEM, "null", gb), gib, 1) == -1);
    struct run gbyte[] = {{NULL, JAN, 3600, V(1), V(1), 1000000000, 0, 0, 0}};
    CHECK(rate(book_v2(FREE_CPU, FREE_MEM, "null", gb), gbyte, 1) == 0);
    CHECK_STR(instance_amount(0, "g1"), "1.000000");

    /* Padding takes the type of the segment's last second: 1 s small,
     * 1 s tiny, then 3,598 s of tiny to the hour's granule. small
     * 0.00005; tiny 3,599 x 0.01 / 3,600 = 0.009997222... */
    char g[4096];
    snprintf(g, sizeof(g), "%s, \"granularity_s\": 3600", types);
    struct run pad[] = {{NULL, JAN, 1, V(2), V(1), 4 * GIB, 0, 0, 0},
                        {NULL, JAN + 1, 1, V(1), V(1), 2 * GIB, 0, 0, 0}};
    CHECK(rate(book_v2(FREE_CPU, FREE_MEM, "null", g), pad, 2) == 0);
    CHECK_STR(instance_amount(0, "small"), "0.000050");
    CHECK_STR(instance_amount(0, "tiny"), "0.009997");
    CHECK(inv[0].q.type_s[1] == 1 && inv[0].q.type_s[3] == 3599);

    /* Credited seconds credit the type they were priced at: an idle hour
     * of small after 600 s: 3,000 s x 0.00005 = 0.15. */
    snprintf(g, sizeof(g),
             "%s, \"autopause\": {\"idle_below\": \"0.1\", \"after_s\": 600}",
             types);
    struct run idle[] = {{NULL, JAN, 3600, V(2), 0, 4 * GIB, 0, 0, 0}};
    CHECK(rate(book_v2(FREE_CPU, FREE_MEM, "null", g), idle, 1) == 0);
    CHECK_STR(instance_amount(0, "small"), "0.180000");
    CHECK_STR(amount(0, "autopause_credit"), "-0.150000");
    CHECK(inv[0].q.type_credited_s[1] == 3000);
}

/* Sections 12, 13 and 15: storage by state, the allowance per account,
 * tier units, the 30-day month. */
static void
test_storage_v2(void)
{
    /* 0.001 per GiB-second beyond 1 GiB per running sandbox. */
    const char *always =
        "{\"rate\": \"0.001\", \"per\": \"second\", \"included_gib\": \"1\"}";
    const char *running =
        "{\"rate\": \"0.001\", \"per\": \"second\", \"included_gib\": \"1\", "
        "\"billed_when\": \"running\"}";
    /* 10 s paused with 2 GiB, then 10 s running with 2 GiB. */
    struct run paused[] = {{NULL, JAN, 10, 0, 0, 0, 2 * GIB, 0, 0}};
    struct run up[] = {{NULL, JAN, 10, V(1), V(1), 0, 2 * GIB, 0, 0}};
    CHECK(rate(book_v2(FREE_CPU, FREE_MEM, always, ""), paused, 1) == 0);
    CHECK_STR(amount(0, "storage"), "0.020000");
    CHECK(rate(book_v2(FREE_CPU, FREE_MEM, running, ""), paused, 1) == 0);
    CHECK_STR(amount(0, "storage"), "-");
    CHECK(rate(book_v2(FREE_CPU, FREE_MEM, always, ""), up, 1) == 0);
    CHECK_STR(amount(0, "storage"), "0.010000");
    CHECK(rate(book_v2(FREE_CPU, FREE_MEM, running, ""), up, 1) == 0);
    CHECK_STR(amount(0, "storage"), "0.010000");
    /* "always" is the default: the same as no billed_when. */
    CHECK(rate(book_v2(FREE_CPU, FREE_MEM,
                       "{\"rate\": \"0.001\", \"per\": \"second\", "
                       "\"included_gib\": \"1\", \"billed_when\": \"always\"}",
                       ""),
               paused, 1) == 0);
    CHECK_STR(amount(0, "storage"), "0.020000");

    /* 10 GiB free per account, pooled: a holds 6 GiB over [0, 100), b
     * 6 GiB over [50, 150): 12 GiB over [50, 100), 2 beyond the pool for
     * 50 s = 100 GiB-s = 0.1. */
    const char *pool = "{\"rate\": \"0.001\", \"per\": \"second\", "
                       "\"included_per_account\": \"10\"}";
    struct run two[] = {{"a", JAN, 100, V(1), V(1), 0, 6 * GIB, 0, 0},
                        {"b", JAN + 50, 100, V(1), V(1), 0, 6 * GIB, 0, 0}};
    CHECK(rate(book_v2(FREE_CPU, FREE_MEM, pool, ""), two, 2) == 0);
    CHECK_STR(amount(0, "storage"), "0.100000");
    /* included_gib applies first, per sandbox: 5 + 5 = 10, not above. */
    const char *both = "{\"rate\": \"0.001\", \"per\": \"second\", "
                       "\"included_gib\": \"1\", "
                       "\"included_per_account\": \"10\"}";
    CHECK(rate(book_v2(FREE_CPU, FREE_MEM, both, ""), two, 2) == 0);
    CHECK_STR(amount(0, "storage"), "-");
    /* Exactly the pool is free; a byte more for 50 s is billed. */
    struct run exact[] = {{"a", JAN, 50, V(1), V(1), 0, 5 * GIB, 0, 0},
                          {"b", JAN, 50, V(1), V(1), 0, 5 * GIB, 0, 0}};
    CHECK(rate(book_v2(FREE_CPU, FREE_MEM, pool, ""), exact, 2) == 0);
    CHECK_STR(amount(0, "storage"), "-");
    CHECK(inv[0].q.storage == 0);
    struct run byte[] = {{"a", JAN, 50, V(1), V(1), 0, 5 * GIB + 1, 0, 0},
                         {"b", JAN, 50, V(1), V(1), 0, 5 * GIB, 0, 0}};
    CHECK(rate(book_v2(FREE_CPU, FREE_MEM, pool, ""), byte, 2) == 0);
    CHECK(inv[0].q.storage == 50);
    /* A level changing inside a span: a holds 6 GiB over [0, 50) then
     * 8 over [50, 100); b 6 over [50, 150): 14 over [50, 100), 4 beyond
     * for 50 s = 200 GiB-s. A paused second holds its disk too. */
    struct run grow[] = {{"a", JAN, 50, V(1), V(1), 0, 6 * GIB, 0, 0},
                         {"a", JAN + 50, 50, 0, 0, 0, 8 * GIB, 0, 0},
                         {"b", JAN + 50, 100, V(1), V(1), 0, 6 * GIB, 0, 0}};
    CHECK(rate(book_v2(FREE_CPU, FREE_MEM, pool, ""), grow, 3) == 0);
    CHECK_STR(amount(0, "storage"), "0.200000");
    /* ... unless paused seconds are free: then 6 over [50, 100). */
    const char *pool_running =
        "{\"rate\": \"0.001\", \"per\": \"second\", "
        "\"included_per_account\": \"10\", \"billed_when\": \"running\"}";
    CHECK(rate(book_v2(FREE_CPU, FREE_MEM, pool_running, ""), grow, 3) == 0);
    CHECK_STR(amount(0, "storage"), "-");
    /* Seconds without a sample count nothing; periods apart: a over the
     * end of January and the start of February, each month on its own. */
    struct run across[] = {{"a", FEB - 10, 20, V(1), V(1), 0, 11 * GIB, 0, 0}};
    CHECK(rate(book_v2(FREE_CPU, FREE_MEM, pool, ""), across, 1) == 0);
    CHECK(ninv == 2);
    CHECK_STR(amount(0, "storage"), "0.010000");
    CHECK_STR(amount(1, "storage"), "0.010000");

    /* Spans do not join across a missing second: a holds 6 GiB over
     * [0, 10) and [20, 30), b over [20, 30): 2 beyond for 10 s. */
    struct run holes[] = {{"a", JAN, 10, V(1), V(1), 0, 6 * GIB, 0, 0},
                          {"a", JAN + 20, 10, V(1), V(1), 0, 6 * GIB, 0, 0},
                          {"b", JAN + 20, 10, V(1), V(1), 0, 6 * GIB, 0, 0}};
    CHECK(rate(book_v2(FREE_CPU, FREE_MEM, pool, ""), holes, 3) == 0);
    CHECK_STR(amount(0, "storage"), "0.020000");

    /* A level that changes every second: past a third of the period in
     * spans the account keeps a total per second instead (memory bounded
     * by the period). a alternates 11 and 9 GiB for 1,000,000 s: 1 GiB
     * beyond on half of them; b adds 2 GiB over the first 10 s: 3 and 1
     * beyond there instead of 1 and 0: 500,015 GiB-s. */
    {
        struct pricing_book *pb = book(book_v2(FREE_CPU, FREE_MEM, pool, ""));
        struct pricing_err e = {{0}};
        struct pricing_rater *r = pricing_rater_new(pb, &e);
        const size_t n = 1000000;
        struct pricing_second *s = calloc(n, sizeof(*s));
        for (size_t k = 0; k < n; k++)
            s[k] = (struct pricing_second){
                JAN + (int64_t)k,           V(1), V(1), 0, 0,
                k % 2 ? 9 * GIB : 11 * GIB, 0};
        struct pricing_block blk = {
            .account_id = "acme", .sandbox_id = "a", .s = s, .n = n};
        CHECK(pricing_rater_add(r, &blk, &e) == 0);
        for (size_t k = 0; k < 10; k++)
            s[k].disk_bytes = 2 * GIB;
        blk = (struct pricing_block){
            .account_id = "acme", .sandbox_id = "b", .s = s, .n = 10};
        CHECK(pricing_rater_add(r, &blk, &e) == 0);
        struct pricing_statement *st = NULL;
        size_t nst = 0;
        CHECK(pricing_rater_finish(r, &st, &nst, &e) == 0);
        CHECK(nst == 1 && st[0].q.storage == (pricing_u128)500015 * GIB);
        pricing_statements_free(st, nst);
        pricing_rater_free(r);
        pricing_book_free(pb);
        free(s);
    }

    /* Storage tiers in GB-hours: the first 200 free, then 0.001. 100 GB
     * for 2 h is 200 (free); for 2 h and 1 s, 100/3,600 beyond: 0.000028;
     * for 3 h, 100 beyond: 0.1. */
    const char *gbh = "{\"unit\": \"GB\", \"tiers\": {\"mode\": \"graduated\", "
                      "\"per\": \"hour\", \"bands\": [{\"up_to\": \"200\", "
                      "\"rate\": \"0\"}, {\"up_to\": null, \"rate\": "
                      "\"0.001\"}]}}";
    uint32_t lengths[] = {7200, 7201, 10800};
    const char *want[] = {"-", "0.000028", "0.100000"};
    for (int i = 0; i < 3; i++) {
        struct run r[] = {
            {NULL, JAN, lengths[i], V(1), V(1), 0, 100000000000ULL, 0, 0}};
        CHECK(rate(book_v2(FREE_CPU, FREE_MEM, gbh, ""), r, 1) == 0);
        CHECK_STR(amount(0, "storage"), want[i]);
    }
    CHECK(ninv == 1 && inv[0].nlines == 1);
    CHECK_STR(inv[0].lines[0].unit, "GB-hour");
    /* cpu tiers in vCPU-seconds: the first 100 free. 2 vCPU for 60 s. */
    const char *cpus = "{\"basis\": \"allocated\", \"tiers\": {\"mode\": "
                       "\"graduated\", \"per\": \"second\", \"bands\": "
                       "[{\"up_to\": \"100\", \"rate\": \"0\"}, {\"up_to\": "
                       "null, \"rate\": \"0.01\"}]}}";
    struct run cpu[] = {{NULL, JAN, 60, V(2), V(1), 0, 0, 0, 0}};
    CHECK(rate(book_v2(cpus, FREE_MEM, "null", ""), cpu, 1) == 0);
    CHECK_STR(amount(0, "cpu"), "0.200000");
    CHECK_STR(inv[0].lines[0].unit, "vCPU-second");

    /* The 30-day month: 2.592 per GiB-month30 is 0.000001 per GiB-s;
     * 1 GiB for 1,000 s: 0.001. The 730-hour month: 0.000986. */
    struct run disk[] = {{NULL, JAN, 1000, V(1), V(1), 0, GIB, 0, 0}};
    CHECK(rate(book_v2(FREE_CPU, FREE_MEM,
                       "{\"rate\": \"2.592\", \"per\": \"month30\"}", ""),
               disk, 1) == 0);
    CHECK_STR(amount(0, "storage"), "0.001000");
    CHECK_STR(inv[0].lines[0].unit, "GiB-month30");
    CHECK(rate(book_v2(FREE_CPU, FREE_MEM,
                       "{\"rate\": \"2.592\", \"per\": \"month\"}", ""),
               disk, 1) == 0);
    CHECK_STR(amount(0, "storage"), "0.000986");
}

/* The amount of grant id's credit_grant line in invoice i, or "-". */
static const char *
grant_amount(size_t i, const char *id)
{
    static char buf[64];
    for (size_t l = 0; i < ninv && l < inv[i].nlines; l++)
        if (strcmp(inv[i].lines[l].kind, "credit_grant") == 0 &&
            strcmp(inv[i].lines[l].grant, id) == 0) {
            pricing_dec_format(inv[i].lines[l].amount, 6, buf, sizeof(buf));
            return buf;
        }
    return "-";
}

/* Section 14, offline: grants received in the account's first period,
 * spent period after period in the rules' order, lost when they expire. */
static void
test_grants(void)
{
    const char *json = simple_book(
        "0.001", "\"grants\": [{\"id\": \"big\", \"amount\": \"10\", "
                 "\"expires_after_periods\": 3}, {\"id\": \"small\", "
                 "\"amount\": \"0.5\", \"expires_after_periods\": 1}, "
                 "{\"id\": \"forever\", \"amount\": \"1\", "
                 "\"expires_after_periods\": null}]");
    const int64_t mar = FEB + 28 * 86400LL, apr = mar + 31 * 86400LL,
                  may = apr + 30 * 86400LL;
    /* 1.000 in January, 2.000 in February, nothing in March, 1.000 in
     * April, 20.000 in May. */
    struct run runs[] = {{NULL, JAN, 1000, V(1), V(1), 0, 0, 0, 0},
                         {NULL, FEB, 2000, V(1), V(1), 0, 0, 0, 0},
                         {NULL, apr, 1000, V(1), V(1), 0, 0, 0, 0},
                         {NULL, may, 20000, V(1), V(1), 0, 0, 0, 0}};
    CHECK(rate(json, runs, 4) == 0);
    struct pricing_book *b = book(json);
    struct pricing_err e = {{0}};
    CHECK(pricing_statements_grant(b, inv, ninv, &e) == 0);
    CHECK(ninv == 4);
    /* January: small (expires first) pays 0.5 and is spent; big, larger
     * than what is left, pays 0.5; forever waits. */
    CHECK_STR(grant_amount(0, "t/small"), "-0.500000");
    CHECK_STR(grant_amount(0, "t/big"), "-0.500000");
    CHECK_STR(grant_amount(0, "t/forever"), "-");
    CHECK_STR(total(0), "0.00");
    CHECK(inv[0].nlines == 3);
    CHECK_STR(inv[0].lines[1].grant, "t/small"); /* in order, last */
    CHECK(strstr(inv[0].lines[2].description, "9.500000 left") != NULL);
    /* February: big pays all 2.000, 7.5 left. */
    CHECK_STR(grant_amount(1, "t/big"), "-2.000000");
    CHECK_STR(total(1), "0.00");
    /* April: big's window (January to March) is over, with 7.5 left and
     * lost although March had no invoice; forever pays its 1. */
    CHECK_STR(grant_amount(2, "t/big"), "-");
    CHECK_STR(grant_amount(2, "t/forever"), "-1.000000");
    CHECK_STR(total(2), "0.00");
    /* May: nothing left. */
    CHECK(inv[3].nlines == 1);
    CHECK_STR(total(3), "20.00");
    pricing_book_free(b);

    /* The order when expiries tie: the period received, then the id; a
     * grant received later cannot pay an earlier period; another
     * currency pays nothing. */
    struct pricing_grant g[4] = {
        {"b", "USD", {5 * PRICING_ONE}, {5 * PRICING_ONE}, 100, 2},
        {"a", "USD", {5 * PRICING_ONE}, {5 * PRICING_ONE}, 100, 2},
        {"later", "USD", {5 * PRICING_ONE}, {5 * PRICING_ONE}, 101, 0},
        {"euro", "EUR", {5 * PRICING_ONE}, {5 * PRICING_ONE}, 100, 0}};
    size_t order[4];
    struct pricing_dec spent[4];
    int y = 100 / 12, m = 100 % 12 + 1;
    size_t k = pricing_grants_spend(
        g, 4, y, m, "USD", (struct pricing_dec){7 * PRICING_ONE}, order, spent);
    CHECK(k == 2 && order[0] == 1 && order[1] == 0);
    CHECK(spent[1].v == -5 * PRICING_ONE && spent[0].v == -2 * PRICING_ONE);
    CHECK(spent[2].v == 0 && spent[3].v == 0);
    CHECK(g[0].balance.v == 3 * PRICING_ONE && g[1].balance.v == 0);
    /* A total of zero or below spends nothing. */
    k = pricing_grants_spend(g, 4, y, m, "USD", (struct pricing_dec){0}, order,
                             spent);
    CHECK(k == 0 && g[0].balance.v == 3 * PRICING_ONE);
    /* The last period of the window, and the one after it. */
    CHECK(pricing_grant_spendable(&g[0], (101) / 12, 101 % 12 + 1, "USD"));
    CHECK(!pricing_grant_spendable(&g[0], (102) / 12, 102 % 12 + 1, "USD"));
    CHECK(!pricing_grant_spendable(&g[2], y, m, "USD"));
    CHECK(pricing_grant_spendable(&g[2], 9999, 12, "USD"));
}

/* Rules section 7: the credited seconds are the *last* max(0, L - after_s)
 * of a streak, so when the allocation changes inside a streak, the
 * credit is priced at the values of those last seconds. A streak of 10
 * idle seconds (cpu_used 0), after_s 5: the first credited second is
 * the sixth (index 5). The values change at index `at`; on either side
 * of index 5 the credited seconds hold other values. Book: 0.001 per
 * vCPU-second and per GiB-second, so a credit of c vCPU-s and m GiB-s
 * is -(c + m) / 1000. */
static void
test_autopause_values_change(void)
{
    const char *b =
        book_v2(CPU_PER_S(""), MEM_PER_S(""), "null",
                "\"autopause\": {\"idle_below\": \"0.1\", \"after_s\": 5}");
    static const struct {
        uint32_t at;           /* first second (0-9) of the later values */
        uint32_t v1, v2;       /* vCPUs before and from `at` */
        uint64_t g1, g2;       /* GiB before and from `at` */
        uint64_t cpu_s, mem_s; /* credited vCPU-s and GiB-s */
        const char *credit;
    } cases[] = {
        /* 4 vCPU 4 GiB, then 1 vCPU 1 GiB from the sixth second: the
         * last 5 s are all small: 5 x 1 + 5 x 1 = 10 -> 0.010 (the first
         * 5 would be 20 + 20 = 40) */
        {5, 4, 1, 4, 1, 5, 5, "-0.010000"},
        /* one second earlier: still only small seconds credited */
        {4, 4, 1, 4, 1, 5, 5, "-0.010000"},
        /* one second later: the sixth is still big: cpu 4 + 4 x 1 = 8,
         * memory 4 + 4 x 1 = 8 -> 0.016 */
        {6, 4, 1, 4, 1, 8, 8, "-0.016000"},
        /* the other way round, small then big: 5 x 4 + 5 x 4 = 40 */
        {5, 1, 4, 1, 4, 20, 20, "-0.040000"},
        /* cpu alone changes, 2 GiB throughout: 5 x 1 vCPU, 5 x 2 GiB */
        {5, 4, 1, 2, 2, 5, 10, "-0.015000"},
        /* memory alone changes, 2 vCPU throughout: 5 x 2, 5 x 1 GiB */
        {5, 2, 2, 4, 1, 10, 5, "-0.015000"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint32_t at = cases[i].at;
        struct run r[] = {{NULL, JAN, at, cases[i].v1 * PRICING_CPU_UNIT, 0,
                           cases[i].g1 * GIB, 0, 0, 0},
                          {NULL, JAN + at, 10 - at,
                           cases[i].v2 * PRICING_CPU_UNIT, 0, cases[i].g2 * GIB,
                           0, 0, 0}};
        CHECK(rate(b, r, 2) == 0);
        CHECK(ninv == 1 && inv[0].q.credited_s == 5);
        CHECK(inv[0].q.cpu_credited ==
              (pricing_u128)cases[i].cpu_s * PRICING_CPU_UNIT);
        CHECK(inv[0].q.mem_credited == (pricing_u128)cases[i].mem_s * GIB);
        if (strcmp(amount(0, "autopause_credit"), cases[i].credit) != 0) {
            fprintf(stderr, "streak changing at %u: credit %s, want %s\n", at,
                    amount(0, "autopause_credit"), cases[i].credit);
            test_failures++;
        }
    }
}

/* A source of runs (in order), as blocks of seconds or (as_runs) one
 * struct pricing_run per block, for pricing_rate. */
struct runs_source {
    const struct run *runs;
    size_t n, i;
    bool as_runs;
    struct pricing_second *s; /* the last block's seconds */
    struct pricing_run one;
};

static int
runs_next(void *ctx, struct pricing_block *b, struct pricing_err *e)
{
    struct runs_source *src = ctx;
    free(src->s);
    src->s = NULL;
    if (src->i == src->n)
        return 0;
    const struct run *x = &src->runs[src->i++];
    struct pricing_second v = first_second(x);
    src->s = calloc(x->n, sizeof(*src->s));
    if (!src->s) {
        snprintf(e->msg, sizeof(e->msg), "out of memory");
        return -1;
    }
    for (uint32_t k = 0; k < x->n; k++) {
        src->s[k] = v;
        src->s[k].ts = x->ts + k;
    }
    src->one = (struct pricing_run){v, x->n};
    *b = (struct pricing_block){.account_id = "acme",
                                .sandbox_id = x->sandbox ? x->sandbox : "sb-1",
                                .s = src->s,
                                .n = x->n};
    if (src->as_runs) {
        b->runs = &src->one;
        b->nruns = 1;
    }
    return 1;
}

/* Rates runs for acme's January through pricing_rate, with parts (book
 * NULL) or with book and scope's active days, second by second and as
 * runs: the two must agree. Leaves the statements in inv. */
static int
rate_january(const struct pricing_book *b, int active_days,
             const struct pricing_part *parts, size_t nparts,
             const struct run *runs, size_t n)
{
    struct pricing_scope scope = {2026, 1, active_days, "acme", false};
    struct pricing_statement *st[2] = {NULL, NULL};
    size_t nst[2] = {0, 0};
    int rc[2];
    for (int as_runs = 0; as_runs < 2; as_runs++) {
        struct runs_source src = {runs, n, 0, as_runs, NULL, {{0}, 0}};
        struct pricing_err e = {{0}};
        rc[as_runs] =
            pricing_rate(b, (struct pricing_source){runs_next, &src}, &scope,
                         parts, nparts, &st[as_runs], &nst[as_runs], &e);
        free(src.s);
        if (rc[as_runs] < 0)
            fprintf(stderr, "rate_january: %s\n", e.msg);
    }
    const char *d = rc[0] || rc[1]
                        ? "failed"
                        : statements_differ(st[0], nst[0], st[1], nst[1]);
    if (d) {
        fprintf(stderr, "seconds and runs differ: %s\n", d);
        test_failures++;
    }
    pricing_statements_free(st[1], nst[1]);
    pricing_statements_free(inv, ninv);
    inv = st[0];
    ninv = nst[0];
    return rc[0];
}

/* Rules section 8: the minimum commit is minimum_commit x active days /
 * days in period, for an account whose book starts mid-period (the
 * invoice run's active days) as for each part of a period cut by a
 * change of book. January has 31 days. */
static void
test_minimum_commit_prorated(void)
{
    struct pricing_book *b =
        book(simple_book("1", "\"minimum_commit\": \"31\""));
    static const struct {
        int active;       /* days on the book; 0: the whole period */
        uint32_t seconds; /* of 1 vCPU at 1 per vCPU-second */
        const char *commit;
    } cases[] = {
        /* 31 x 17 / 31 = 17, less 3 of usage: 14 (not 31 - 3 = 28) */
        {17, 3, "14.000000"},
        /* 17 - 16 = 1 */
        {17, 16, "1.000000"},
        /* 17 - 17 = 0: no line (unprorated it would be 14) */
        {17, 17, "-"},
        /* 31 x 30 / 31 = 30, less 3: 27 */
        {30, 3, "27.000000"},
        /* the whole period, given or not: 31 - 3 = 28 */
        {31, 3, "28.000000"},
        {0, 3, "28.000000"},
        /* 31 x 1 / 31 = 1 and no usage: 1 */
        {1, 0, "1.000000"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct run r[] = {{NULL, JAN + 20 * 86400LL, cases[i].seconds, V(1),
                           V(1), 0, 0, 0, 0}};
        CHECK(rate_january(b, cases[i].active, NULL, 0, r,
                           cases[i].seconds ? 1 : 0) == 0);
        CHECK(ninv == 1);
        if (strcmp(amount(0, "minimum_commit"), cases[i].commit) != 0) {
            fprintf(stderr, "%d days, %u s: minimum commit %s, want %s\n",
                    cases[i].active, cases[i].seconds,
                    amount(0, "minimum_commit"), cases[i].commit);
            test_failures++;
        }
    }
    /* A commit that does not divide: 10 x 17 / 31 = 5.4838709677...,
     * less 3: 2.483871. */
    pricing_book_free(b);
    b = book(simple_book("1", "\"minimum_commit\": \"10\""));
    struct run three[] = {{NULL, JAN, 3, V(1), V(1), 0, 0, 0, 0}};
    CHECK(rate_january(b, 17, NULL, 0, three, 1) == 0);
    CHECK_STR(amount(0, "minimum_commit"), "2.483871");
    pricing_book_free(b);
}

/* A change of book at midnight (docs/invoicing.md, "Parts"): book x
 * (1 per vCPU-second, a commit of 31) until January 16th, book y (2 per
 * vCPU-second, a commit of 62) from it. The last second before midnight
 * is rated on x, the first second of the new part on y; each part's
 * commit is prorated by its days: x 31 x 15 / 31 = 15, y 62 x 16 / 31
 * = 32, less the part's own usage. */
static void
test_book_change_at_midnight(void)
{
    struct pricing_book *x =
        book(simple_book("1", "\"minimum_commit\": \"31\""));
    struct pricing_book *y =
        book(simple_book("2", "\"minimum_commit\": \"62\""));
    const int64_t mid = JAN + 15 * 86400LL; /* 2026-01-16T00:00:00Z */
    const struct pricing_part parts[] = {{x, JAN, mid}, {y, mid, FEB}};
    static const struct {
        int64_t from; /* seconds from midnight */
        uint32_t n;
        const char *cpu_x, *commit_x, *cpu_y, *commit_y;
    } cases[] = {
        /* 23:59:59 alone: 1 x 1 on x; 15 - 1 = 14; y owes 32 */
        {-1, 1, "1.000000", "14.000000", "-", "32.000000"},
        /* 00:00:00 alone: 1 x 2 on y; x owes 15; 32 - 2 = 30 */
        {0, 1, "-", "15.000000", "2.000000", "30.000000"},
        /* both, as one run across midnight: cut there */
        {-1, 2, "1.000000", "14.000000", "2.000000", "30.000000"},
        /* 00:00:01 alone: y */
        {1, 1, "-", "15.000000", "2.000000", "30.000000"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct run r[] = {
            {NULL, mid + cases[i].from, cases[i].n, V(1), V(1), 0, 0, 0, 0}};
        CHECK(rate_january(NULL, 0, parts, 2, r, 1) == 0);
        CHECK(ninv == 2);
        if (ninv != 2)
            continue;
        const char *got[] = {amount(0, "cpu"), amount(0, "minimum_commit"),
                             amount(1, "cpu"), amount(1, "minimum_commit")};
        const char *want[] = {cases[i].cpu_x, cases[i].commit_x, cases[i].cpu_y,
                              cases[i].commit_y};
        for (int k = 0; k < 4; k++)
            if (strcmp(got[k], want[k]) != 0) {
                fprintf(stderr,
                        "midnight %+lld s x %u: %s of part %d is %s, want "
                        "%s\n",
                        (long long)cases[i].from, cases[i].n,
                        k % 2 ? "minimum_commit" : "cpu", k / 2 + 1, got[k],
                        want[k]);
                test_failures++;
            }
    }
    pricing_book_free(x);
    pricing_book_free(y);
}

/*
 * A partial rater (the simulator's): the dimensions of unknown price are
 * left out and named, the rest priced as ever; a rater not made partial
 * (every invoice's) still fails on the same usage.
 */
static void
test_partial(void)
{
    /* cpu 0.36 an hour (0.0001 a second), memory free, storage, egress
     * and runs unknown; a subscription of 0 with 0.10 included. */
    struct pricing_book *b =
        book("{\"id\": \"t\", \"currency\": \"USD\", \"effective_from\": "
             "\"2026-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": "
             "\"0.36\", \"per\": \"hour\"}, \"memory\": {\"basis\": "
             "\"allocated\", \"unit\": \"GiB\", \"rate\": \"0\", \"per\": "
             "\"second\"}, \"storage\": null, \"egress\": null, \"per_run\": "
             "null, \"subscription\": {\"monthly_fee\": \"0\", "
             "\"included_credit\": \"0.10\"}}");
    /* One sandbox, 1 vCPU and 2 GiB of disk for an hour, 500,000 bytes
     * out a second: 1.8 GB. */
    struct pricing_run one = {{JAN, V(1), V(1), GIB, GIB, 2 * GIB, 500000},
                              3600};
    struct pricing_block blk = {
        .account_id = "acme", .sandbox_id = "sb-1", .runs = &one, .nruns = 1};
    for (int partial = 0; partial < 2; partial++) {
        struct pricing_err e = {{0}};
        struct pricing_statement *st = NULL;
        size_t n = 0;
        struct pricing_rater *r = pricing_rater_new(b, &e);
        if (partial)
            pricing_rater_partial(r);
        CHECK(pricing_rater_add(r, &blk, &e) == 0);
        int rc = pricing_rater_finish(r, &st, &n, &e);
        pricing_rater_free(r);
        if (!partial) {
            /* Billing never guesses. */
            CHECK(rc == -1 && st == NULL);
            CHECK(strstr(e.msg, "uses storage, whose price is unknown") !=
                  NULL);
            continue;
        }
        CHECK(rc == 0 && n == 1);
        if (rc != 0 || n != 1)
            continue;
        CHECK(st->unpriced ==
              (1u << PRICING_DIM_STORAGE | 1u << PRICING_DIM_EGRESS |
               1u << PRICING_DIM_RUNS));
        /* 3,600 vCPU-s at 0.0001 = 0.36, less the 0.10 included: the
         * credit is capped by what is known, so 0.26 is a lower bound. */
        char t[48];
        pricing_dec_format(st->total, 2, t, sizeof(t));
        CHECK_STR(t, "0.26");
        for (size_t i = 0; i < st->nlines; i++)
            CHECK(strcmp(st->lines[i].kind, "storage") != 0 &&
                  strcmp(st->lines[i].kind, "egress") != 0 &&
                  strcmp(st->lines[i].kind, "runs") != 0);
        /* 2 GiB for an hour, 1.8 GB, one run, 1 vCPU-hour. */
        static const struct {
            enum pricing_dim d;
            const char *qty, *unit;
        } want[] = {{PRICING_DIM_STORAGE, "2.000000", "GiB-hour"},
                    {PRICING_DIM_EGRESS, "1.800000", "GB"},
                    {PRICING_DIM_RUNS, "1.000000", "run"},
                    {PRICING_DIM_CPU, "1.000000", "vCPU-hour"},
                    {PRICING_DIM_MEMORY, "1.000000", "GiB-hour"}};
        for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
            struct pricing_dec q;
            const char *unit = NULL;
            CHECK(pricing_unpriced_quantity(b, &st->q, want[k].d, &q, &unit,
                                            &e) == 0);
            pricing_dec_format(q, 6, t, sizeof(t));
            CHECK_STR(t, want[k].qty);
            CHECK_STR(unit, want[k].unit);
        }
        pricing_statements_free(st, n);
    }
    /* An unknown included credit makes no bound: still an error. */
    struct pricing_book *credit =
        book("{\"id\": \"t\", \"currency\": \"USD\", \"effective_from\": "
             "\"2026-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": "
             "\"0.36\", \"per\": \"hour\"}, \"memory\": null, \"storage\": "
             "null, \"egress\": null, \"per_run\": null, \"subscription\": "
             "{\"monthly_fee\": \"0\", \"included_credit\": null}}");
    struct pricing_err e = {{0}};
    struct pricing_statement *st = NULL;
    size_t n = 0;
    struct pricing_rater *r = pricing_rater_new(credit, &e);
    pricing_rater_partial(r);
    CHECK(pricing_rater_add(r, &blk, &e) == 0);
    CHECK(pricing_rater_finish(r, &st, &n, &e) == -1);
    CHECK(strstr(e.msg, "included_credit") != NULL);
    pricing_rater_free(r);
    pricing_book_free(credit);
    pricing_book_free(b);
}

int
main(void)
{
    test_runs_free();
    test_published_examples();
    test_granularity();
    test_tiers();
    test_autopause();
    test_repeats_and_order();
    test_storage_egress_runs();
    test_estimate();
    test_subscription_and_credits();
    test_rounding();
    test_unknown_and_overflow();
    test_pipeline();
    test_steps();
    test_instances();
    test_storage_v2();
    test_grants();
    test_autopause_values_change();
    test_minimum_commit_prorated();
    test_book_change_at_midnight();
    test_partial();
    pricing_statements_free(inv, ninv);
    return test_result();
}
