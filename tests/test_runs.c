/*
 * test_runs.c - the engine rates a run of identical seconds (struct
 * pricing_run) exactly as those seconds one by one: the same statements
 * to the last decimal, the same quantities, the same errors. A property
 * test: random usage (runs long and short, paused and running, idle
 * streaks across the autopause threshold, gaps, repeated seconds with
 * equal and other values, sandboxes across a month's end, history),
 * rated both ways under every shipped book and books written here for
 * the rules no shipped book uses (autopause, granularity and minimums,
 * tiers, the used basis), through pricing_rate whole, for one account's
 * period, and in parts.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pricing.h"
#include "statement_cmp.h"
#include "testutil.h"

#define DEC 1795996800LL /* 2026-12-01T00:00:00Z */
#define GIB (1ULL << 30)

/* splitmix64: the test's own generator, the same on every machine. */
static uint64_t seed;
static uint64_t
next(void)
{
    uint64_t z = (seed += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static uint64_t
below(uint64_t n)
{
    return next() % n;
}

/* A sandbox: its runs, handed to the source in 1-3 blocks. */
struct box {
    char account[16], sandbox[16];
    bool history;
    int64_t first_run_minute;
    struct pricing_run *runs;
    size_t nruns;
};

#define BOXES 12
static struct box boxes[BOXES];

static uint32_t
pick(const uint32_t *v, size_t n)
{
    return v[below(n)];
}

/* Random usage around the end of November 2026; without storage or
 * egress when the round says so, since many books have no price for
 * them (null) and would only fail. */
static void
generate(int round)
{
    const bool disk_too = round % 3 != 0, egress_too = round % 3 == 2;
    static const uint32_t vcpus[] = {2500, 10000, 20000, 40000, 80000};
    static const uint64_t mems[] = {GIB / 2, GIB, 4 * GIB, 16 * GIB,
                                    3 * GIB + 7};
    static const uint64_t disks[] = {0, GIB, 5 * GIB, 10 * GIB, 64 * GIB};
    for (size_t i = 0; i < BOXES; i++) {
        struct box *b = &boxes[i];
        snprintf(b->account, sizeof(b->account), "acct-%zu", i % 3);
        snprintf(b->sandbox, sizeof(b->sandbox), "sb-%zu", i);
        b->nruns = 1 + below(40);
        b->runs = calloc(b->nruns, sizeof(*b->runs));
        int64_t ts = DEC - 3 * 86400 + (int64_t)below(4 * 86400);
        b->history = below(3) == 0;
        b->first_run_minute = b->history ? ts / 60 - 1 - (int64_t)below(2) : 0;
        uint32_t vcpu = pick(vcpus, 5);
        uint64_t mem = mems[below(5)], disk = disks[below(5)];
        for (size_t k = 0; k < b->nruns; k++) {
            struct pricing_run *u = &b->runs[k];
            uint64_t kind = below(10);
            if (k > 0) {
                const struct pricing_run *p = &b->runs[k - 1];
                int64_t after = p->s.ts + p->n;
                /* Mostly the next second; else a gap, or a repeat of the
                 * last second (with equal or other values). */
                uint64_t how = below(12);
                ts = how < 8    ? after
                     : how < 10 ? after + 1 + (int64_t)below(900)
                                : after - 1;
            }
            if (below(6) == 0)
                disk = disks[below(5)];
            if (below(8) == 0)
                vcpu = pick(vcpus, 5);
            u->s.ts = ts;
            u->n = (uint32_t)(below(4) == 0 ? 1 + below(3)
                                            : 1 + below(below(2) ? 300 : 4000));
            if (kind < 2) { /* paused */
                u->s.disk_bytes = disk_too ? disk : 0;
                u->s.egress_bytes = egress_too && below(2) ? below(5000) : 0;
            } else {
                u->s.vcpu = vcpu;
                /* idle (below 5% or 10%) or busy, near the thresholds */
                static const uint32_t used_permille[] = {
                    0, 10, 49, 50, 51, 99, 100, 101, 600, 1000};
                u->s.cpu_used =
                    (uint32_t)((uint64_t)vcpu * pick(used_permille, 10) / 1000);
                u->s.mem_bytes = mem;
                u->s.mem_used_bytes = mem - below(mem / 2 + 1);
                u->s.disk_bytes = disk_too ? disk : 0;
                u->s.egress_bytes = egress_too && below(3) ? below(100000) : 0;
            }
            if (k > 0 && ts < b->runs[k - 1].s.ts + b->runs[k - 1].n &&
                below(2)) {
                /* a repeat with the values of the second it repeats */
                u->s = b->runs[k - 1].s;
                u->s.ts = ts;
            }
        }
    }
}

static void
release(void)
{
    for (size_t i = 0; i < BOXES; i++)
        free(boxes[i].runs);
}

/* The source: each sandbox in 1-3 blocks, as seconds or as runs. */
struct src {
    bool runs;
    size_t box, run, cut; /* the next block: box's runs [run, cut) */
    uint64_t split;       /* how the boxes are cut into blocks */
    struct pricing_second *buf;
};

static int
next_block(void *ctx, struct pricing_block *b, struct pricing_err *e)
{
    (void)e;
    struct src *s = ctx;
    if (s->box == BOXES)
        return 0;
    const struct box *x = &boxes[s->box];
    size_t from = s->run;
    size_t to =
        from + 1 +
        (size_t)((s->split >> (s->box % 32)) & 1) * (x->nruns - from) / 2;
    if (to > x->nruns || (s->split >> ((s->box + 7) % 32) & 1) == 0)
        to = x->nruns;
    b->account_id = x->account;
    b->sandbox_id = x->sandbox;
    b->history = x->history;
    b->first_run_minute = x->history ? x->first_run_minute : INT64_MAX;
    if (s->runs) {
        b->runs = x->runs + from;
        b->nruns = to - from;
    } else {
        size_t n = 0;
        for (size_t k = from; k < to; k++)
            n += x->runs[k].n;
        free(s->buf);
        s->buf = calloc(n ? n : 1, sizeof(*s->buf));
        n = 0;
        for (size_t k = from; k < to; k++)
            for (uint32_t j = 0; j < x->runs[k].n; j++) {
                s->buf[n] = x->runs[k].s;
                s->buf[n++].ts += j;
            }
        b->s = s->buf;
        b->n = n;
    }
    s->run = to;
    if (to == x->nruns) {
        s->box++;
        s->run = 0;
    }
    return 1;
}

static int ncases;
/* What the usage exercised, summed over the cases: each must occur. */
static uint64_t dups, conflicts, credited, padding, runs, failed;

/* Rates the usage both ways with pricing_rate(book, scope, parts). */
static void
both_ways(const struct pricing_book *book, const struct pricing_scope *scope,
          const struct pricing_part *parts, size_t nparts, const char *what)
{
    uint64_t split = next();
    struct pricing_statement *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    struct pricing_err ea = {{0}}, eb = {{0}};
    struct src sa = {.runs = false, .split = split};
    struct src sb = {.runs = true, .split = split};
    int ra = pricing_rate(book, (struct pricing_source){next_block, &sa}, scope,
                          parts, nparts, &a, &na, &ea);
    int rb = pricing_rate(book, (struct pricing_source){next_block, &sb}, scope,
                          parts, nparts, &b, &nb, &eb);
    const char *d = ra != rb ? "one failed"
                    : ra < 0 ? (strcmp(ea.msg, eb.msg) ? "errors" : NULL)
                             : statements_differ(a, na, b, nb);
    if (d) {
        fprintf(stderr,
                "%s (seed %llu): seconds and runs differ: %s (%s | %s)\n", what,
                (unsigned long long)seed, d, ea.msg, eb.msg);
        test_failures++;
    }
    ncases++;
    failed += ra < 0;
    for (size_t i = 0; i < na; i++) {
        dups += a[i].duplicates;
        conflicts += a[i].conflicts;
        credited += a[i].q.credited_s;
        padding += a[i].q.padding_s;
        runs += a[i].q.runs;
    }
    free(sa.buf);
    free(sb.buf);
    pricing_statements_free(a, na);
    pricing_statements_free(b, nb);
}

static struct pricing_book *
parse(const char *text, size_t len, const char *origin)
{
    struct pricing_err e = {{0}};
    struct pricing_book *b = pricing_book_parse(text, len, origin, &e);
    if (!b) {
        fprintf(stderr, "%s\n", e.msg);
        exit(1);
    }
    return b;
}

/* Books for the rules no shipped book writes. */
static const char *const written[] = {
    /* autopause, per-minute granularity and a minimum */
    "{\"id\": \"pause\", \"currency\": \"USD\", \"effective_from\": "
    "\"2026-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": "
    "\"0.00001\", \"per\": \"second\"}, \"memory\": {\"basis\": \"used\", "
    "\"unit\": \"GiB\", \"rate\": \"0.000003\", \"per\": \"second\"}, "
    "\"storage\": {\"rate\": \"0.1\", \"per\": \"month\", \"included_gib\": "
    "\"1\"}, \"egress\": {\"rate\": \"0.05\", \"free_gb\": \"0\"}, "
    "\"per_run\": \"0.001\", \"granularity_s\": 60, \"min_billed_s\": 120, "
    "\"autopause\": {\"idle_below\": \"0.05\", \"after_s\": 300}}",
    /* the used basis, autopause at 10% after 0 s, tiers */
    "{\"id\": \"tiers\", \"currency\": \"USD\", \"effective_from\": "
    "\"2026-01-01\", \"cpu\": {\"basis\": \"used\", \"tiers\": {\"mode\": "
    "\"graduated\", \"bands\": [{\"up_to\": \"100\", \"rate\": \"0\"}, "
    "{\"up_to\": null, \"rate\": \"0.05\"}]}}, "
    "\"memory\": {\"basis\": \"allocated\", \"unit\": \"GB\", \"rate\": "
    "\"0.01\", \"per\": \"hour\"}, \"storage\": null, \"egress\": null, "
    "\"per_run\": \"0\", \"granularity_s\": 1, \"min_billed_s\": 0, "
    "\"autopause\": {\"idle_below\": \"0.1\", \"after_s\": 0}}",
    /* instance types that every sandbox fits, billed per minute, with
     * storage by state and an allowance for the account */
    "{\"id\": \"types\", \"currency\": \"USD\", \"effective_from\": "
    "\"2026-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": \"0\", "
    "\"per\": "
    "\"second\"}, \"memory\": {\"basis\": \"allocated\", \"unit\": "
    "\"GiB\", \"rate\": \"0\", \"per\": \"second\"}, \"instances\": "
    "{\"unit\": \"GiB\", \"types\": [{\"name\": \"small\", \"vcpu\": "
    "\"2\", \"memory\": \"4\", \"rate\": \"0.05\", \"per\": \"hour\"}, "
    "{\"name\": \"big\", \"vcpu\": \"8\", \"memory\": \"16\", \"rate\": "
    "\"0.4\", \"per\": \"hour\"}]}, \"storage\": {\"rate\": \"0.1\", "
    "\"per\": \"month\", \"included_gib\": \"0\", \"billed_when\": "
    "\"running\", \"included_per_account\": \"6\"}, \"egress\": null, "
    "\"per_run\": \"0\", \"granularity_s\": 60, \"min_billed_s\": 60, "
    "\"autopause\": {\"idle_below\": \"0.05\", \"after_s\": 60}}",
};

/*
 * An oracle for the allowance per account (rules section 13), second by
 * second: the storage of each account's running sandboxes at each second
 * (a repeated second counted once), less the allowance, summed over each
 * period, against the engine's quantity (its sweep over spans). For the
 * book "types": storage billed while running, 6 GiB per account, none
 * per sandbox.
 */
#define LO (DEC - 3 * 86400)
#define SPAN (8 * 86400)
static int pool_checked;

static void
check_pool(const struct pricing_book *book)
{
    static uint64_t level[3][SPAN];
    memset(level, 0, sizeof(level));
    for (size_t i = 0; i < BOXES; i++) {
        const struct box *b = &boxes[i];
        int64_t last = INT64_MIN;
        for (size_t k = 0; k < b->nruns; k++)
            for (uint32_t j = 0; j < b->runs[k].n; j++) {
                int64_t ts = b->runs[k].s.ts + j;
                if (ts <= last)
                    continue;
                last = ts;
                CHECK(ts >= LO && ts < LO + SPAN);
                if (b->runs[k].s.vcpu > 0)
                    level[i % 3][ts - LO] += b->runs[k].s.disk_bytes;
            }
    }
    struct src src = {.runs = true, .split = next()};
    struct pricing_statement *st;
    size_t n;
    struct pricing_err e;
    if (pricing_rate(book, (struct pricing_source){next_block, &src}, NULL,
                     NULL, 0, &st, &n, &e) < 0)
        return; /* egress, which the book cannot price */
    for (size_t i = 0; i < n; i++) {
        int acct = st[i].account_id[5] - '0';
        int64_t from =
            pricing_days_from_civil(st[i].year, st[i].month, 1) * 86400;
        int64_t to =
            st[i].month == 12
                ? pricing_days_from_civil(st[i].year + 1, 1, 1) * 86400
                : pricing_days_from_civil(st[i].year, st[i].month + 1, 1) *
                      86400;
        pricing_u128 want = 0;
        for (int64_t t = from < LO ? LO : from; t < to && t < LO + SPAN; t++)
            if (level[acct][t - LO] > 6 * GIB)
                want += level[acct][t - LO] - 6 * GIB;
        if (st[i].q.storage != want) {
            fprintf(stderr, "pool: %s %d-%02d: engine %llu, oracle %llu\n",
                    st[i].account_id, st[i].year, st[i].month,
                    (unsigned long long)st[i].q.storage,
                    (unsigned long long)want);
            test_failures++;
        }
        pool_checked += want > 0;
    }
    pricing_statements_free(st, n);
    free(src.buf);
}

static void
test_book(const struct pricing_book *book, const char *name)
{
    for (int round = 0; round < 6; round++) {
        generate(round);
        char what[160];
        snprintf(what, sizeof(what), "%s, every period", name);
        both_ways(book, NULL, NULL, 0, what);
        struct pricing_scope one = {
            .year = 2026, .month = 12, .account = "acct-1"};
        snprintf(what, sizeof(what), "%s, acct-1 2026-12", name);
        both_ways(book, &one, NULL, 0, what);
        one.month = 11;
        one.through = true;
        snprintf(what, sizeof(what), "%s, acct-0 through 2026-11", name);
        one.account = "acct-0";
        both_ways(book, &one, NULL, 0, what);
        /* Parts: 2026-12 cut on its 2nd and 20th days, runs cut there. */
        struct pricing_part parts[] = {
            {book, DEC + 86400, DEC + 19 * 86400},
            {book, DEC + 19 * 86400, DEC + 31 * 86400},
        };
        struct pricing_scope dec = {
            .year = 2026, .month = 12, .account = "acct-2"};
        snprintf(what, sizeof(what), "%s, acct-2 2026-12 in parts", name);
        both_ways(NULL, &dec, parts, 2, what);
        if (strcmp(name, "types") == 0)
            check_pool(book);
        release();
    }
}

/* A run of no second, or past the last second there is, is refused,
 * naming the sandbox, the field and the value. */
static void
bad_runs(const struct pricing_book *book)
{
    struct pricing_run bad[] = {
        {{.ts = DEC, .vcpu = 10000}, 0},
        {{.ts = INT64_MAX - 2, .vcpu = 10000}, 3},
    };
    const char *want[] = {
        "sandbox 'sb': run.n: 0 seconds from second 1795996800 is no second",
        "sandbox 'sb': run.n: 3 seconds from second 9223372036854775805 ends "
        "past the last second there is",
    };
    for (int i = 0; i < 2; i++) {
        struct pricing_err e = {{0}};
        struct pricing_rater *r = pricing_rater_new(book, &e);
        struct pricing_block b = {
            .account_id = "a", .sandbox_id = "sb", .runs = &bad[i], .nruns = 1};
        CHECK(pricing_rater_add(r, &b, &e) == -1);
        CHECK(strstr(e.msg, want[i]) != NULL);
        pricing_rater_free(r);
    }
}

int
main(void)
{
    seed = 20261201;
    DIR *d = opendir(BOOKS_DIR);
    struct dirent *de;
    int books = 0;
    CHECK(d != NULL);
    while (d && (de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n < 6 || strcmp(de->d_name + n - 5, ".json") != 0)
            continue;
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s", BOOKS_DIR, de->d_name);
        FILE *f = fopen(path, "rb");
        CHECK(f != NULL);
        if (!f)
            continue;
        char *text = calloc(1, 1 << 20);
        size_t len = fread(text, 1, (1 << 20) - 1, f);
        fclose(f);
        struct pricing_book *b = parse(text, len, path);
        test_book(b, de->d_name);
        pricing_book_free(b);
        free(text);
        books++;
    }
    if (d)
        closedir(d);
    CHECK(books >= 20);
    for (size_t i = 0; i < sizeof(written) / sizeof(written[0]); i++) {
        struct pricing_book *b = parse(written[i], strlen(written[i]), "test");
        test_book(b, pricing_book_id(b));
        if (i == 0)
            bad_runs(b);
        pricing_book_free(b);
    }
    CHECK(pool_checked >= 6);
    printf("the allowance per account as the oracle says in %d periods\n",
           pool_checked);
    printf("%d cases, seconds and runs alike (%llu failed alike); repeated "
           "seconds %llu equal and %llu other, %llu credited idle, %llu of "
           "padding, %llu runs\n",
           ncases, (unsigned long long)failed, (unsigned long long)dups,
           (unsigned long long)conflicts, (unsigned long long)credited,
           (unsigned long long)padding, (unsigned long long)runs);
    CHECK(dups > 0 && conflicts > 0 && credited > 0 && padding > 0 &&
          runs > 0 && failed > 0 && failed < (uint64_t)ncases);
    return test_result();
}
