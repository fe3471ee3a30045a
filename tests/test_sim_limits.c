/*
 * test_sim_limits.c - plan tiers and limits in the simulator: what a
 * month measures (sandboxes running at once, paused ones not counted;
 * the longest stretch running without a pause; the disk held at once),
 * each limit on both sides of its boundary (exactly at the limit fits,
 * one unit over breaks), the cheapest add-on that fits or none, the
 * caps, the messages' text, the tier chosen among a provider's books,
 * and all of it through the Monte Carlo, where an add-on's fee is added
 * to the engine's total.
 */
#include <stdlib.h>

#include <gsl/gsl_errno.h>

#include "sim.h"
#include "testutil.h"

#define NOV 1793491200LL /* 2026-11-01T00:00:00Z */
#define GB 1000000000ULL

static struct pricing_book *
shipped(const char *id)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s.json", BOOKS_DIR, id);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot open\n", path);
        exit(1);
    }
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    struct pricing_err e;
    struct pricing_book *b = pricing_book_parse(buf, n, path, &e);
    if (!b) {
        fprintf(stderr, "%s\n", e.msg);
        exit(1);
    }
    return b;
}

static struct pricing_book *
parse_book(const char *json)
{
    struct pricing_err e;
    struct pricing_book *b = pricing_book_parse(json, strlen(json), NULL, &e);
    if (!b) {
        fprintf(stderr, "book: %s\n", e.msg);
        exit(1);
    }
    return b;
}

/* ---- measuring a month ------------------------------------------------- */

/* A spell of n seconds: running (disk given) or paused. */
struct piece {
    uint32_t n;
    bool paused;
};

/* Appends a session starting at start with the given spells to m. */
static void
session(struct sim_month *m, int64_t start, const struct piece *p, size_t np,
        uint64_t disk)
{
    m->sessions =
        realloc(m->sessions, (m->nsessions + 1) * sizeof(*m->sessions));
    m->spells = realloc(m->spells, (m->nspells + np) * sizeof(*m->spells));
    if (!m->sessions || !m->spells)
        exit(1);
    struct sim_session *s = &m->sessions[m->nsessions++];
    s->start = start;
    s->first = m->nspells;
    s->nspells = np;
    s->seconds = 0;
    for (size_t i = 0; i < np; i++) {
        struct sim_spell *x = &m->spells[m->nspells++];
        memset(x, 0, sizeof(*x));
        x->seconds = p[i].n;
        x->paused = p[i].paused;
        x->disk_bytes = disk;
        if (!p[i].paused) {
            x->vcpu = x->cpu_used = PRICING_CPU_UNIT;
            x->mem_bytes = x->mem_used_bytes = 1 << 30;
        }
        s->seconds += p[i].n;
    }
}

static struct sim_month_use
measure(const struct sim_month *m)
{
    struct sim_month_use u;
    struct sim_err e;
    CHECK(sim_month_measure(m, SIM_NO_CUT, &u, &e) == 0);
    return u;
}

static void
test_measure(void)
{
    struct sim_month m;
    sim_month_init(&m, 2026, 11);
    CHECK(m.start == NOV);
    /* Nothing: all zero. */
    struct sim_month_use u = measure(&m);
    CHECK(u.peak_running == 0 && u.longest_run_s == 0 &&
          u.peak_disk_bytes == 0);

    /* Two sessions overlapping by one second: 2 at once. */
    const struct piece hundred[] = {{100, false}};
    session(&m, NOV + 1000, hundred, 1, GB);
    session(&m, NOV + 1099, hundred, 1, 2 * GB);
    u = measure(&m);
    CHECK(u.peak_running == 2);
    CHECK(u.longest_run_s == 100);
    CHECK(u.peak_disk_bytes == 3 * GB);
    /* Touching, not overlapping: [1000, 1100) and [1100, 1200). */
    m.sessions[1].start = NOV + 1100;
    u = measure(&m);
    CHECK(u.peak_running == 1);
    CHECK(u.peak_disk_bytes == 2 * GB);
    sim_month_release(&m);

    /* Paused sandboxes do not count as running, but hold their disk; a
     * pause ends a stretch, idle running spells do not. */
    sim_month_init(&m, 2026, 11);
    const struct piece paused[] = {{50, false}, {100, true}, {70, false}};
    session(&m, NOV, paused, 3, 5 * GB);
    const struct piece busy_idle[] = {{30, false}, {40, false}};
    session(&m, NOV + 50, busy_idle, 2, 5 * GB); /* while the first sleeps */
    u = measure(&m);
    CHECK(u.peak_running == 1);
    CHECK(u.longest_run_s == 70);
    CHECK(u.peak_disk_bytes == 10 * GB);
    /* The second session idle for 71 s instead: it runs to NOV + 151,
     * one second past the first's resumption at NOV + 150, so 2 at
     * once; and its 101 s are the longest stretch. */
    m.spells[4].seconds = 71;
    m.sessions[1].seconds = 101;
    u = measure(&m);
    CHECK(u.peak_running == 2);
    CHECK(u.longest_run_s == 101);
    m.spells[4].seconds = 70;
    m.sessions[1].seconds = 100;
    u = measure(&m);
    CHECK(u.peak_running == 1 && u.longest_run_s == 100);
    sim_month_release(&m);

    /* The month's bounds: a stretch that ends as the month starts is not
     * in it; one that crosses its start counts whole (its seconds before
     * the month too), as does one that crosses its end. */
    sim_month_init(&m, 2026, 11);
    const struct piece hour[] = {{3600, false}};
    const struct piece two_hours[] = {{7200, false}};
    const struct piece three_hours[] = {{10800, false}};
    session(&m, NOV - 7200, two_hours, 1, 0); /* ends at the start */
    u = measure(&m);
    CHECK(u.peak_running == 0 && u.longest_run_s == 0);
    session(&m, NOV - 1800, hour, 1, 0); /* 1800 s in the month */
    u = measure(&m);
    CHECK(u.peak_running == 1 && u.longest_run_s == 3600);
    session(&m, m.end - 60, two_hours, 1, 0);
    session(&m, m.end, three_hours, 1, 0); /* after the month: not in it */
    u = measure(&m);
    CHECK(u.peak_running == 1 && u.longest_run_s == 7200);
    sim_month_release(&m);
}

/* ---- checking a month against a plan ---------------------------------- */

/* A plan of 5 sandboxes and 1 h, three add-ons (the 15 one cheapest),
 * and every cap; memory in GB, storage in GiB. */
static const char plan_book[] =
    "{\"id\": \"plan\", \"provider\": \"p\", \"currency\": \"USD\", "
    "\"effective_from\": \"2026-01-01\", "
    "\"cpu\": {\"basis\": \"allocated\", \"rate\": \"0\", \"per\": "
    "\"second\"}, \"memory\": {\"basis\": \"allocated\", \"unit\": \"GB\", "
    "\"rate\": \"0\", \"per\": \"second\"}, \"storage\": {\"rate\": \"0\", "
    "\"per\": \"month\"}, \"egress\": {\"rate\": \"0\"}, \"per_run\": \"0\", "
    "\"subscription\": {\"monthly_fee\": \"10\", \"max_concurrency\": 5, "
    "\"max_session_s\": 3600, \"addons\": ["
    "{\"name\": \"a10\", \"max_concurrency\": 10, \"monthly_fee\": \"50\"}, "
    "{\"name\": \"a20\", \"max_concurrency\": 20, \"monthly_fee\": \"80\"}, "
    "{\"name\": \"a15\", \"max_concurrency\": 15, \"monthly_fee\": \"40\"}, "
    "{\"name\": \"b15\", \"max_concurrency\": 15, \"monthly_fee\": \"40\"}], "
    "\"caps\": {\"max_runs\": 1000, \"max_cpu_hours\": \"0.5\", "
    "\"max_memory_hours\": \"420\", \"max_egress_gb\": \"20\", "
    "\"max_storage\": \"15\"}}}";

static unsigned
bit(enum sim_limit l)
{
    return 1u << l;
}

static const char *
dec(struct pricing_dec d, unsigned decimals)
{
    static char buf[4][48];
    static int k;
    k = (k + 1) % 4;
    pricing_dec_format(d, decimals, buf[k], sizeof(buf[k]));
    return buf[k];
}

static void
test_concurrency(void)
{
    struct pricing_book *b = parse_book(plan_book);
    static const struct {
        uint64_t peak;
        int addon;       /* -1: the plan */
        const char *fee; /* its fee */
        bool broken;
    } cases[] = {
        {0, -1, "0", false},
        {5, -1, "0", false},  /* at the plan's limit */
        {6, 2, "40", false},  /* a10 fits at 50, a15 at 40: a15 */
        {10, 2, "40", false}, /* the first of a15 and b15, at 40 */
        {15, 2, "40", false}, /* at a15's limit */
        {16, 1, "80", false}, /* only a20 fits */
        {20, 1, "80", false},
        {21, -1, "0", true}, /* none fits: flagged, nothing bought */
        {1000000, -1, "0", true},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct sim_month_use u = {.peak_running = cases[i].peak};
        struct sim_plan_month pm;
        sim_plan_check(b, &u, NULL, &pm);
        if (pm.addon != cases[i].addon ||
            strcmp(dec(pm.addon_fee, 0), cases[i].fee) != 0 ||
            (pm.broken == bit(SIM_LIMIT_CONCURRENCY)) != cases[i].broken ||
            (pm.broken & ~bit(SIM_LIMIT_CONCURRENCY)) != 0) {
            fprintf(stderr,
                    "peak %llu: add-on %d fee %s broken %x, want %d %s %d\n",
                    (unsigned long long)cases[i].peak, pm.addon,
                    dec(pm.addon_fee, 0), pm.broken, cases[i].addon,
                    cases[i].fee, cases[i].broken);
            test_failures++;
        }
        CHECK_STR(
            dec(pm.used[SIM_LIMIT_CONCURRENCY], 0),
            dec((struct pricing_dec){(pricing_i128)cases[i].peak * PRICING_ONE},
                0));
    }
    pricing_book_free(b);
    /* A plan without a limit: any number fits. */
    b = shipped("fly-machines");
    struct sim_month_use u = {.peak_running = 100000};
    struct sim_plan_month pm;
    sim_plan_check(b, &u, NULL, &pm);
    CHECK(pm.addon == -1 && pm.broken == 0);
    pricing_book_free(b);
    /* Modal Team: 1,000 containers at once (Starter's 100 the tier
     * below). */
    b = shipped("modal-team");
    u.peak_running = 1000;
    sim_plan_check(b, &u, NULL, &pm);
    CHECK(pm.broken == 0);
    u.peak_running = 1001;
    sim_plan_check(b, &u, NULL, &pm);
    CHECK(pm.broken == bit(SIM_LIMIT_CONCURRENCY));
    pricing_book_free(b);
    /* E2B Pro: 100, then Pro+ (600, 500 a month), then Pro++ (1,100). */
    b = shipped("e2b-pro");
    static const struct {
        uint64_t peak;
        int addon;
    } e2b[] = {{100, -1}, {101, 0}, {600, 0}, {601, 1}, {1100, 1}, {1101, -1}};
    for (size_t i = 0; i < sizeof(e2b) / sizeof(e2b[0]); i++) {
        u.peak_running = e2b[i].peak;
        sim_plan_check(b, &u, NULL, &pm);
        CHECK(pm.addon == e2b[i].addon);
        CHECK((pm.broken != 0) == (e2b[i].peak == 1101));
    }
    pricing_book_free(b);
}

static void
test_session_and_caps(void)
{
    struct pricing_book *b = parse_book(plan_book);
    struct sim_plan_month pm;
    /* Exactly at each limit: nothing broken. */
    struct sim_month_use u = {.longest_run_s = 3600,
                              .peak_disk_bytes = 15ULL << 30};
    struct pricing_quantities q = {0};
    q.runs = 1000;
    q.cpu_gross = (pricing_u128)PRICING_CPU_UNIT * 1800; /* 0.5 vCPU-h */
    q.mem_gross = (pricing_u128)420 * 3600 * GB;         /* 420 GB-h */
    q.egress = (pricing_u128)20 * GB;
    sim_plan_check(b, &u, &q, &pm);
    CHECK(pm.broken == 0);
    CHECK_STR(dec(pm.used[SIM_LIMIT_SESSION], 12), "3600.000000000000");
    CHECK_STR(dec(pm.used[SIM_LIMIT_RUNS], 0), "1000");
    CHECK_STR(dec(pm.used[SIM_LIMIT_CPU_HOURS], 12), "0.500000000000");
    CHECK_STR(dec(pm.used[SIM_LIMIT_MEMORY_HOURS], 12), "420.000000000000");
    CHECK_STR(dec(pm.used[SIM_LIMIT_EGRESS_GB], 12), "20.000000000000");
    CHECK_STR(dec(pm.used[SIM_LIMIT_STORAGE], 12), "15.000000000000");
    /* One unit over each, alone: that limit alone breaks. */
    for (int l = SIM_LIMIT_SESSION; l < SIM_NLIMITS; l++) {
        struct sim_month_use v = u;
        struct pricing_quantities r = q;
        switch (l) {
        case SIM_LIMIT_SESSION:
            v.longest_run_s++;
            break;
        case SIM_LIMIT_RUNS:
            r.runs++;
            break;
        case SIM_LIMIT_CPU_HOURS:
            r.cpu_gross++; /* 1/10,000 vCPU-second */
            break;
        case SIM_LIMIT_MEMORY_HOURS:
            r.mem_gross++; /* one byte-second */
            break;
        case SIM_LIMIT_EGRESS_GB:
            r.egress++;
            break;
        case SIM_LIMIT_STORAGE:
            v.peak_disk_bytes++;
            break;
        default: /* a sandbox's size: test_sandbox_size */
            continue;
        }
        sim_plan_check(b, &v, &r, &pm);
        if (pm.broken != bit((enum sim_limit)l)) {
            fprintf(stderr, "%s one over: broken %x\n", sim_limit_names[l],
                    pm.broken);
            test_failures++;
        }
        CHECK(pm.addon == -1);
    }
    /* Without a statement the caps are not checked; the session and the
     * storage, measured from the sessions, still are. */
    u.longest_run_s = 3601;
    u.peak_disk_bytes = 16ULL << 30;
    q.runs = 5000;
    sim_plan_check(b, &u, NULL, &pm);
    CHECK(pm.broken == (bit(SIM_LIMIT_SESSION) | bit(SIM_LIMIT_STORAGE)));
    sim_plan_check(b, &u, &q, &pm);
    CHECK(pm.broken == (bit(SIM_LIMIT_SESSION) | bit(SIM_LIMIT_STORAGE) |
                        bit(SIM_LIMIT_RUNS)));
    pricing_book_free(b);
    /* A book with no limit breaks none, however large the month. */
    b = shipped("aws-fargate");
    u = (struct sim_month_use){1000000, 1000000000, 1ULL << 60, 0, 0, 0};
    q.runs = UINT64_MAX;
    q.cpu_gross = q.mem_gross = q.egress = (pricing_u128)1 << 100;
    sim_plan_check(b, &u, &q, &pm);
    CHECK(pm.broken == 0 && pm.addon == -1);
    pricing_book_free(b);
}

/* ---- messages ----------------------------------------------------------- */

/* The message for a month measured as u and q on the shipped book id:
 * the limit must be broken, and the message is built from what the
 * check measured. */
static void
expect_message(const char *id, const struct sim_month_use *u,
               const struct pricing_quantities *q, enum sim_limit l,
               const char *want)
{
    struct pricing_book *b = shipped(id);
    struct sim_plan_month pm;
    sim_plan_check(b, u, q, &pm);
    CHECK(pm.broken & bit(l));
    char msg[256];
    size_t n = sim_limit_message(b, l, pm.used[l], msg, sizeof(msg));
    CHECK(n == strlen(msg) && n < sizeof(msg));
    CHECK_STR(msg, want);
    pricing_book_free(b);
}

static void
test_messages(void)
{
    struct pricing_quantities q = {0};
    struct sim_month_use u = {0};
    u.longest_run_s = 3 * 3600;
    expect_message("novita-free", &u, NULL, SIM_LIMIT_SESSION,
                   "sessions of 3 h exceed a 1 h session limit on novita-free");
    u.longest_run_s = 2701;
    expect_message(
        "vercel-hobby", &u, NULL, SIM_LIMIT_SESSION,
        "sessions of 45 min 1 s exceed a 45 min session limit on vercel-hobby");
    u.longest_run_s = 3 * 3600 + 1800;
    expect_message(
        "novita-paid", &u, NULL, SIM_LIMIT_SESSION,
        "sessions of 3 h 30 min exceed a 3 h session limit on novita-paid");
    u.longest_run_s = 0;
    u.peak_running = 412;
    expect_message("novita-paid", &u, NULL, SIM_LIMIT_CONCURRENCY,
                   "412 sandboxes at once exceed novita-paid's 100 (no add-on "
                   "fits)");
    u.peak_running = 21;
    expect_message("e2b-hobby", &u, NULL, SIM_LIMIT_CONCURRENCY,
                   "21 sandboxes at once exceed e2b-hobby's 20 (no add-on "
                   "fits)");
    u.peak_running = 1200;
    expect_message("e2b-pro", &u, NULL, SIM_LIMIT_CONCURRENCY,
                   "1200 sandboxes at once exceed e2b-pro's 100 (no add-on "
                   "fits: the largest, pro-plus-plus, allows 1100)");
    u.peak_running = 0;
    /* Vercel Hobby's caps, in GB. */
    q.cpu_gross = (pricing_u128)PRICING_CPU_UNIT * 3600 * 19 / 2; /* 9.5 */
    expect_message("vercel-hobby", &u, &q, SIM_LIMIT_CPU_HOURS,
                   "9.5 CPU-hours exceed vercel-hobby's cap of 5");
    /* Just over: shown with the decimals it takes to differ. */
    q.cpu_gross = (pricing_u128)PRICING_CPU_UNIT * 3600 * 5 + 36;
    expect_message("vercel-hobby", &u, &q, SIM_LIMIT_CPU_HOURS,
                   "5.000001 CPU-hours exceed vercel-hobby's cap of 5");
    q.cpu_gross = 0;
    q.runs = 5001;
    expect_message("vercel-hobby", &u, &q, SIM_LIMIT_RUNS,
                   "5001 runs exceed vercel-hobby's cap of 5000");
    q.mem_gross = (pricing_u128)500 * 3600 * GB;
    expect_message("vercel-hobby", &u, &q, SIM_LIMIT_MEMORY_HOURS,
                   "500 GB-hours of memory exceed vercel-hobby's cap of 420");
    q.egress = (pricing_u128)25 * GB + GB / 4;
    expect_message("vercel-hobby", &u, &q, SIM_LIMIT_EGRESS_GB,
                   "25.25 GB of egress exceed vercel-hobby's cap of 20");
    u.peak_disk_bytes = 30 * GB;
    expect_message("vercel-hobby", &u, &q, SIM_LIMIT_STORAGE,
                   "30 GB of storage at once exceed vercel-hobby's cap of 15");
    /* Daytona's storage cap is in GiB. */
    u.peak_disk_bytes = 31ULL << 30;
    expect_message("daytona", &u, &q, SIM_LIMIT_STORAGE,
                   "31 GiB of storage at once exceed daytona's cap of 30");
    /* A short buffer is cut like snprintf, and the length still told. */
    struct pricing_book *b = shipped("novita-free");
    char small[8];
    size_t n = sim_limit_message(b, SIM_LIMIT_SESSION,
                                 (struct pricing_dec){7200 * PRICING_ONE},
                                 small, sizeof(small));
    CHECK(n == strlen("sessions of 2 h exceed a 1 h session limit on "
                      "novita-free"));
    CHECK_STR(small, "session");
    pricing_book_free(b);
}

/* ---- the tier of a provider -------------------------------------------- */

/* Stats of a book: `trials` trials each totalling total, `broke` of
 * them above its session limit. */
static struct sim_book_stats
stats(struct pricing_dec *totals, size_t trials, const char *total,
      uint64_t broke, bool failed)
{
    struct sim_book_stats s = {0};
    for (size_t i = 0; i < trials; i++)
        CHECK(pricing_dec_parse(total, 6, &totals[i]) == PRICING_OK);
    s.totals = totals;
    s.trials = s.checked = trials;
    s.broken[SIM_LIMIT_SESSION] = broke;
    s.failed = failed;
    return s;
}

static void
test_tiers(void)
{
    const char *ids[] = {"e2b-hobby", "e2b-pro", "novita-free", "novita-paid",
                         "daytona"};
    enum { N = 5 };
    struct pricing_book *owned[N];
    const struct pricing_book *books[N];
    for (int i = 0; i < N; i++)
        books[i] = owned[i] = shipped(ids[i]);
    struct pricing_dec t[N][4];
    struct sim_book_stats s[N];
    /* Hobby fits and is cheaper: Hobby. */
    s[0] = stats(t[0], 4, "10", 0, false);
    s[1] = stats(t[1], 4, "160", 0, false);
    s[2] = stats(t[2], 4, "5", 0, false);
    s[3] = stats(t[3], 4, "5", 0, false);
    s[4] = stats(t[4], 4, "7", 0, false);
    CHECK(sim_tier_choose(books, s, N, "e2b") == 0);
    /* Equal means: the first. */
    CHECK(sim_tier_choose(books, s, N, "novita") == 2);
    CHECK(sim_tier_choose(books, s, N, "daytona") == 4);
    /* Hobby breaks a limit in one trial of four: Pro, dearer as it is. */
    s[0].broken[SIM_LIMIT_SESSION] = 1;
    CHECK(sim_tier_choose(books, s, N, "e2b") == 1);
    /* A cap counts as much. */
    s[0].broken[SIM_LIMIT_SESSION] = 0;
    s[0].broken[SIM_LIMIT_CPU_HOURS] = 1;
    CHECK(sim_tier_choose(books, s, N, "e2b") == 1);
    /* Both break one: none fits. */
    s[1].broken[SIM_LIMIT_CONCURRENCY] = 4;
    CHECK(sim_tier_choose(books, s, N, "e2b") == -1);
    /* The cheaper one by mean, exactly: 5.000001 against 5. */
    s[2] = stats(t[2], 4, "5.000001", 0, false);
    CHECK(sim_tier_choose(books, s, N, "novita") == 3);
    /* A book that cannot price the workload is never chosen. */
    s[3].failed = true;
    CHECK(sim_tier_choose(books, s, N, "novita") == 2);
    s[2].trials = 0;
    CHECK(sim_tier_choose(books, s, N, "novita") == -1);
    /* No such provider, or none. */
    CHECK(sim_tier_choose(books, s, N, "nobody") == -1);
    CHECK(sim_tier_choose(books, s, N, "") == -1);
    for (int i = 0; i < N; i++)
        pricing_book_free(owned[i]);
}

/* ---- through the Monte Carlo ------------------------------------------ */

/* `batch` sessions of 2 h at the month's start: no randomness, so every
 * trial is the same month (and a small one: the sanitized build rates
 * a few million seconds a second). */
static struct sim_profile *
batch_profile(int batch)
{
    char json[512];
    snprintf(json, sizeof(json),
             "{\"sessions\": {\"per_month\": 1, \"batch\": %d, \"length\": "
             "{\"dist\": \"fixed\", \"value\": 7200}}, \"sandbox\": {\"vcpu\": "
             "1, \"memory_gib\": 1, \"disk_gib\": 0}}",
             batch);
    struct sim_err e;
    struct sim_profile *p = sim_profile_parse(json, strlen(json), NULL, &e);
    if (!p) {
        fprintf(stderr, "profile: %s\n", e.msg);
        exit(1);
    }
    return p;
}

static void
test_monte_carlo(void)
{
    const char *ids[] = {"e2b-hobby", "e2b-pro", "novita-paid"};
    enum { N = 3 };
    struct pricing_book *owned[N];
    const struct pricing_book *books[N];
    for (int i = 0; i < N; i++)
        books[i] = owned[i] = shipped(ids[i]);
    struct sim_mc_opts o = {.seed = 1,
                            .precision = 0.005,
                            .min_trials = 2,
                            .max_trials = 4,
                            .threads = 1,
                            .year = 2026,
                            .month = 11};
    struct sim_err e;
    struct sim_mc_result r;
    int addon = -1;
    for (int k = 0; k < SIM_NKINDS; k++)
        if (strcmp(sim_line_kinds[k], "addon") == 0)
            addon = k;
    CHECK(addon >= 0);

    /* 25 at once for 2 h: Hobby (20, 1 h) breaks both; Pro fits; Novita
     * Paid (100, 3 h) fits. */
    struct sim_profile *p = batch_profile(25);
    CHECK(sim_monte_carlo(p, books, N, &o, &r, &e) == 0);
    const struct sim_book_stats *h = &r.books[0], *pro = &r.books[1],
                                *nov = &r.books[2];
    CHECK(h->trials == 4 && !sim_book_fits(h) && h->checked == 4);
    CHECK(h->broken[SIM_LIMIT_CONCURRENCY] == 4 &&
          h->broken[SIM_LIMIT_SESSION] == 4);
    CHECK_STR(dec(h->worst[SIM_LIMIT_CONCURRENCY], 0), "25");
    CHECK_STR(dec(h->worst[SIM_LIMIT_SESSION], 0), "7200");
    CHECK(h->on_option[0] == 4);
    CHECK(sim_book_fits(pro) && pro->on_option[0] == pro->trials);
    CHECK(sim_book_fits(nov));
    for (int l = 0; l < SIM_NLIMITS; l++)
        CHECK(pro->broken[l] == 0 && nov->broken[l] == 0);
    /* The tier: e2b-pro for E2B, novita-paid for Novita. */
    CHECK(sim_tier_choose(books, r.books, N, "e2b") == 1);
    CHECK(sim_tier_choose(books, r.books, N, "novita") == 2);
    char msg[256];
    sim_limit_message(books[0], SIM_LIMIT_CONCURRENCY,
                      h->worst[SIM_LIMIT_CONCURRENCY], msg, sizeof(msg));
    CHECK_STR(msg,
              "25 sandboxes at once exceed e2b-hobby's 20 (no add-on fits)");
    sim_limit_message(books[0], SIM_LIMIT_SESSION, h->worst[SIM_LIMIT_SESSION],
                      msg, sizeof(msg));
    CHECK_STR(msg, "sessions of 2 h exceed a 1 h session limit on e2b-hobby");
    CHECK(h->kind_sum[addon].v == 0 && pro->kind_sum[addon].v == 0);
    sim_mc_result_release(&r);
    sim_profile_free(p);

    /* 150 at once: Pro buys Pro+ every month, whose fee is added to the
     * engine's total as an "addon" line; Novita Paid breaks its 100. */
    p = batch_profile(150);
    CHECK(sim_monte_carlo(p, books, N, &o, &r, &e) == 0);
    pro = &r.books[1];
    nov = &r.books[2];
    CHECK(pro->on_option[1] == pro->trials && sim_book_fits(pro));
    struct pricing_dec fees;
    CHECK(pricing_dec_mul_int((struct pricing_dec){500 * PRICING_ONE},
                              (int64_t)pro->trials, &fees) == PRICING_OK);
    CHECK(pricing_dec_cmp(pro->kind_sum[addon], fees) == 0);
    CHECK(nov->broken[SIM_LIMIT_CONCURRENCY] == nov->trials &&
          !sim_book_fits(nov));
    CHECK(sim_tier_choose(books, r.books, N, "novita") == -1);
    CHECK(sim_tier_choose(books, r.books, N, "e2b") == 1);
    /* The same month through the engine alone: its total plus 500. */
    struct sim_month m;
    sim_month_init(&m, 2026, 11);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    struct sim_priced out[1];
    CHECK(sim_month_generate(&m, p, rng, &e) == 0);
    CHECK(sim_price_month(&m, &books[1], 1, NULL, SIM_FEED_SECONDS, out, &e) ==
              0 &&
          out[0].ok);
    struct pricing_dec want;
    CHECK(pricing_dec_add(out[0].st->total,
                          (struct pricing_dec){500 * PRICING_ONE},
                          &want) == PRICING_OK);
    for (size_t k = 0; k < pro->trials; k++)
        CHECK(pricing_dec_cmp(pro->totals[k], want) == 0);
    CHECK(pricing_dec_cmp(sim_book_mean(pro), want) == 0);
    /* And the month's measures are what the profile says. */
    struct sim_month_use u;
    CHECK(sim_month_measure(&m, SIM_NO_CUT, &u, &e) == 0);
    CHECK(u.peak_running == 150 && u.longest_run_s == 7200);
    pricing_statements_free(out[0].st, 1);
    gsl_rng_free(rng);
    sim_month_release(&m);
    sim_mc_result_release(&r);
    sim_profile_free(p);
    for (int i = 0; i < N; i++)
        pricing_book_free(owned[i]);
}

/*
 * A book that stops early (a flat fee: every month costs the same) is
 * judged on every month drawn, like a book priced to the cap: the same
 * session limit, the same months broken, whatever their prices.
 */
#define EARLY_BOOK                                                             \
    "{\"id\": \"%s\", \"provider\": \"x\", \"currency\": \"USD\", "            \
    "\"effective_from\": \"2026-01-01\", \"cpu\": {\"basis\": "                \
    "\"allocated\", \"rate\": \"%s\", \"per\": \"second\"}, "                  \
    "\"memory\": {\"basis\": \"allocated\", \"unit\": \"GB\", "                \
    "\"rate\": \"0\", \"per\": \"second\"}, \"storage\": null, "               \
    "\"egress\": null, \"per_run\": \"0\", \"subscription\": "                 \
    "{\"monthly_fee\": \"%s\", \"max_session_s\": 3600}}"

static void
test_early_stop(void)
{
    char flat_json[1024], usage_json[1024];
    snprintf(flat_json, sizeof(flat_json), EARLY_BOOK, "flat", "0", "100");
    snprintf(usage_json, sizeof(usage_json), EARLY_BOOK, "usage", "0.00001",
             "0");
    struct pricing_book *flat = parse_book(flat_json),
                        *usage = parse_book(usage_json);
    const struct pricing_book *books[2] = {flat, usage};
    static const char profile[] =
        "{\"sessions\": {\"poisson\": {\"per_hour\": 0.05}, \"length\": "
        "{\"dist\": \"lognormal\", \"median\": 1200, \"p95\": 3300}}, "
        "\"sandbox\": {\"vcpu\": 1, \"memory_gib\": 1, \"disk_gib\": 0}}";
    struct sim_err e;
    struct sim_profile *p =
        sim_profile_parse(profile, strlen(profile), NULL, &e);
    CHECK(p != NULL);
    struct sim_mc_opts o = {.seed = 2,
                            .precision = 0.001,
                            .min_trials = 8,
                            .max_trials = 96,
                            .threads = 1,
                            .year = 2026,
                            .month = 11};
    struct sim_mc_result r;
    CHECK(p && sim_monte_carlo(p, books, 2, &o, &r, &e) == 0);
    if (p) {
        const struct sim_book_stats *f = &r.books[0], *u = &r.books[1];
        /* The flat book stopped at the stopping rule's floor; the other
         * did not. */
        CHECK(f->trials == 30 && u->trials == 96 && r.trials == 96);
        CHECK(f->checked == 96 && u->checked == 96);
        CHECK(u->broken[SIM_LIMIT_SESSION] > 0 &&
              f->broken[SIM_LIMIT_SESSION] == u->broken[SIM_LIMIT_SESSION]);
        CHECK(pricing_dec_cmp(f->worst[SIM_LIMIT_SESSION],
                              u->worst[SIM_LIMIT_SESSION]) == 0);
        CHECK(!sim_book_fits(f) && !sim_book_fits(u));
        CHECK(sim_tier_choose(books, r.books, 2, "x") == -1);
        /* The same with two threads. */
        struct sim_mc_result r2;
        o.threads = 2;
        CHECK(sim_monte_carlo(p, books, 2, &o, &r2, &e) == 0);
        CHECK(r2.books[0].checked == 96 &&
              r2.books[0].broken[SIM_LIMIT_SESSION] ==
                  f->broken[SIM_LIMIT_SESSION]);
        sim_mc_result_release(&r2);
        sim_mc_result_release(&r);
    }
    sim_profile_free(p);
    pricing_book_free(flat);
    pricing_book_free(usage);
}

/* A book of no price with the top-level key set to value (JSON), parsed:
 * NULL with e naming what it refuses. */
static struct pricing_book *
book_with(const char *key, const char *value, struct pricing_err *e)
{
    char json[1024];
    snprintf(json, sizeof(json),
             "{\"id\": \"k\", \"currency\": \"USD\", \"effective_from\": "
             "\"2026-01-01\", \"cpu\": null, \"memory\": null, \"storage\": "
             "null, \"egress\": null, \"per_run\": \"0\", \"%s\": %s}",
             key, value);
    memset(e, 0, sizeof(*e));
    return pricing_book_parse(json, strlen(json), "book.json", e);
}

/* Each of n (value, what the error names) refused under key. */
static void
refused(const char *key, const char *const (*bad)[2], size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct pricing_err e;
        struct pricing_book *x = book_with(key, bad[i][0], &e);
        if (x || !strstr(e.msg, bad[i][1])) {
            fprintf(stderr, "%s %s: '%s' does not name %s\n", key, bad[i][0],
                    e.msg, bad[i][1]);
            test_failures++;
        }
        pricing_book_free(x);
    }
}

/*
 * The largest sandbox a book allows ("limits": max_vcpu, max_memory in
 * the book's memory unit, max_disk in its storage unit), against the
 * largest of the month: above breaks it, exactly at it fits, a book
 * without them has none; the sizes are measured from the spells (a
 * paused spell holds no vCPU or memory); the message names the size and
 * the book; a month larger than novita-paid's 8 GiB breaks the shipped
 * book's limit, and malformed limits are refused naming the key.
 */
static void
test_sandbox_size(void)
{
    struct pricing_book *b = parse_book(
        "{\"id\": \"sz\", \"currency\": \"USD\", \"effective_from\": "
        "\"2026-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": "
        "\"0\", \"per\": \"second\"}, \"memory\": {\"basis\": "
        "\"allocated\", \"unit\": \"GB\", \"rate\": \"0\", \"per\": "
        "\"second\"}, \"storage\": {\"unit\": \"GB\", \"rate\": \"0\", "
        "\"per\": \"month\"}, \"egress\": null, \"per_run\": \"0\", "
        "\"limits\": {\"max_vcpu\": "
        "\"2.5\", \"max_memory\": \"4\", \"max_disk\": \"10\"}}");
    struct pricing_dec v;
    const char *unit;
    CHECK(sim_limit_of(b, SIM_LIMIT_SANDBOX_MEMORY, &v, &unit) &&
          strcmp(unit, "GB") == 0 && strcmp(dec(v, 0), "4") == 0);
    CHECK(sim_limit_of(b, SIM_LIMIT_SANDBOX_VCPU, &v, &unit) &&
          strcmp(unit, "vCPU") == 0 && strcmp(dec(v, 1), "2.5") == 0);
    CHECK(sim_limit_of_month(SIM_LIMIT_SANDBOX_DISK));
    /* At each limit: fits. One unit of each above: broken. */
    struct sim_month_use at = {1, 60, 0, 25000, 4 * GB, 10 * GB};
    struct sim_plan_month pm;
    sim_plan_check(b, &at, NULL, &pm);
    CHECK(pm.broken == 0);
    CHECK(strcmp(dec(pm.used[SIM_LIMIT_SANDBOX_VCPU], 4), "2.5000") == 0);
    struct sim_month_use over = {1, 60, 0, 25001, 4 * GB + 1, 10 * GB + 1};
    sim_plan_check(b, &over, NULL, &pm);
    CHECK(pm.broken ==
          (bit(SIM_LIMIT_SANDBOX_VCPU) | bit(SIM_LIMIT_SANDBOX_MEMORY) |
           bit(SIM_LIMIT_SANDBOX_DISK)));
    char msg[256];
    struct sim_month_use big = {1, 60, 0, 40000, 16 * GB, 0};
    sim_plan_check(b, &big, NULL, &pm);
    sim_limit_message(b, SIM_LIMIT_SANDBOX_MEMORY,
                      pm.used[SIM_LIMIT_SANDBOX_MEMORY], msg, sizeof(msg));
    CHECK_STR(msg, "a sandbox of 16 GB of memory exceeds sz's largest, 4 GB");
    sim_limit_message(b, SIM_LIMIT_SANDBOX_VCPU,
                      pm.used[SIM_LIMIT_SANDBOX_VCPU], msg, sizeof(msg));
    CHECK_STR(msg, "a sandbox of 4 vCPU exceeds sz's largest, 2.5 vCPU");
    /* No limits: nothing to break. */
    struct pricing_book *none = parse_book(plan_book);
    sim_plan_check(none, &big, NULL, &pm);
    CHECK(!(pm.broken & bit(SIM_LIMIT_SANDBOX_MEMORY)));
    CHECK(!sim_limit_of(none, SIM_LIMIT_SANDBOX_VCPU, NULL, NULL));
    pricing_book_free(none);
    pricing_book_free(b);

    /* Measured from the spells: the running spells' 1 vCPU and 1 GiB,
     * the disk whatever the state. */
    struct sim_month m;
    sim_month_init(&m, 2026, 11);
    const struct piece p[] = {{60, false}, {60, true}};
    session(&m, NOV, p, 2, 3 * GB);
    struct sim_month_use u = measure(&m);
    CHECK(u.largest_vcpu == PRICING_CPU_UNIT &&
          u.largest_mem_bytes == 1 << 30 && u.largest_disk_bytes == 3 * GB);
    sim_month_release(&m);

    /* The shipped novita-paid allows 8 GiB: 16 GiB breaks it, 8 fits. */
    struct pricing_book *nov = shipped("novita-paid");
    struct sim_month_use g16 = {1, 60, 0, 20000, 16ULL << 30, 0};
    sim_plan_check(nov, &g16, NULL, &pm);
    CHECK(pm.broken & bit(SIM_LIMIT_SANDBOX_MEMORY));
    struct sim_month_use g8 = {1, 60, 0, 80000, 8ULL << 30, 0};
    sim_plan_check(nov, &g8, NULL, &pm);
    CHECK(!(pm.broken &
            (bit(SIM_LIMIT_SANDBOX_MEMORY) | bit(SIM_LIMIT_SANDBOX_VCPU))));
    pricing_book_free(nov);

    static const char *const bad[][2] = {
        {"{\"max_vcpu\": \"0\"}", "limits.max_vcpu"},
        {"{\"max_ram\": \"4\"}", "max_ram"},
        {"{\"max_disk\": 10}", "limits.max_disk"},
        {"[]", "limits"},
    };
    refused("limits", bad, sizeof(bad) / sizeof(bad[0]));
}

/*
 * A provider's autopause ("pauses": after_idle_s, whole seconds from 0
 * to a day): read for the simulator, absent meaning none; the shipped
 * defaults (E2B 10 minutes, Daytona 15, Sprites 30 s, Modal none); and
 * malformed ones refused naming the key.
 */
static void
test_book_pauses(void)
{
    static const struct {
        const char *id;
        bool pauses;
        uint32_t after;
    } shipped_pauses[] = {
        {"e2b-pro", true, 600},         {"e2b-hobby", true, 600},
        {"daytona", true, 900},         {"daytona-tier2", true, 900},
        {"fly-sprites-payg", true, 30}, {"cloudflare-workers-paid", true, 600},
        {"modal-starter", false, 0},
    };
    for (size_t i = 0; i < sizeof(shipped_pauses) / sizeof(shipped_pauses[0]);
         i++) {
        struct pricing_book *b = shipped(shipped_pauses[i].id);
        const struct pricing_limits *l = b ? pricing_book_limits(b) : NULL;
        if (!l || l->pauses != shipped_pauses[i].pauses ||
            l->pause_after_s != shipped_pauses[i].after) {
            fprintf(stderr, "%s: pauses not as shipped\n",
                    shipped_pauses[i].id);
            test_failures++;
        }
        pricing_book_free(b);
    }
    struct pricing_err e;
    struct pricing_book *x = book_with("pauses", "{\"after_idle_s\": 0}", &e);
    CHECK(x && pricing_book_limits(x)->pauses &&
          pricing_book_limits(x)->pause_after_s == 0);
    pricing_book_free(x);
    x = book_with("pauses", "{\"after_idle_s\": 86400}", &e);
    CHECK(x && pricing_book_limits(x)->pause_after_s == 86400);
    pricing_book_free(x);
    static const char *const bad[][2] = {
        {"{\"after_idle_s\": 86401}", "pauses.after_idle_s"},
        {"{\"after_idle_s\": -1}", "pauses.after_idle_s"},
        {"{\"after_idle_s\": \"600\"}", "pauses.after_idle_s"},
        {"{\"after_idle_s\": 1.5}", "pauses.after_idle_s"},
        {"{}", "pauses.after_idle_s"},
        {"{\"after_idle_s\": 60, \"probability\": 1}", "probability"},
        {"600", "pauses"},
    };
    refused("pauses", bad, sizeof(bad) / sizeof(bad[0]));
}

/*
 * A book's fixed size ("fixed_size": unit, vcpu, memory): read for the
 * simulator with its unit; refused naming the key when a part is
 * missing, zero, too fine or of no unit. test_sim_month prices with it.
 */
static void
test_fixed_size(void)
{
    struct pricing_err e;
    struct pricing_book *x = book_with(
        "fixed_size",
        "{\"unit\": \"GiB\", \"vcpu\": \"0.5\", \"memory\": \"1.5\"}", &e);
    const struct pricing_limits *l = x ? pricing_book_limits(x) : NULL;
    CHECK(l && l->has_fixed_size && l->fixed_vcpu == 5000 &&
          l->fixed_mem_bytes == 3ULL << 29 &&
          l->fixed_unit_bytes == 1ULL << 30);
    pricing_book_free(x);
    x = book_with("per_run_free", "0", &e);
    CHECK(x && !pricing_book_limits(x)->has_fixed_size);
    pricing_book_free(x);
    static const char *const bad[][2] = {
        {"{\"vcpu\": \"8\", \"memory\": \"4\"}", "fixed_size.unit"},
        {"{\"unit\": \"MB\", \"vcpu\": \"8\", \"memory\": \"4\"}",
         "fixed_size.unit"},
        {"{\"unit\": \"GB\", \"memory\": \"4\"}", "fixed_size.vcpu"},
        {"{\"unit\": \"GB\", \"vcpu\": \"0\", \"memory\": \"4\"}",
         "fixed_size.vcpu"},
        {"{\"unit\": \"GB\", \"vcpu\": \"8.00001\", \"memory\": \"4\"}",
         "fixed_size.vcpu"},
        {"{\"unit\": \"GB\", \"vcpu\": \"8\"}", "fixed_size.memory"},
        {"{\"unit\": \"GB\", \"vcpu\": \"8\", \"memory\": \"0\"}",
         "fixed_size.memory"},
        {"{\"unit\": \"GB\", \"vcpu\": \"8\", \"memory\": \"4\", \"disk\": "
         "\"1\"}",
         "disk"},
        {"[]", "fixed_size"},
    };
    refused("fixed_size", bad, sizeof(bad) / sizeof(bad[0]));
}

/*
 * Memory that comes only with whole vCPUs ("memory_per_vcpu": unit,
 * memory): read with its unit; refused naming the key when a part is
 * missing, zero or of no unit, and beside a fixed size. test_sim_month
 * prices with it.
 */
static void
test_memory_per_vcpu(void)
{
    struct pricing_err e;
    struct pricing_book *x = book_with(
        "memory_per_vcpu", "{\"unit\": \"GB\", \"memory\": \"2\"}", &e);
    const struct pricing_limits *l = x ? pricing_book_limits(x) : NULL;
    CHECK(l && l->memory_per_vcpu_bytes == 2000000000ULL &&
          l->memory_per_vcpu_unit_bytes == 1000000000ULL && !l->has_fixed_size);
    pricing_book_free(x);
    x = book_with("memory_per_vcpu", "{\"unit\": \"GiB\", \"memory\": \"0.5\"}",
                  &e);
    l = x ? pricing_book_limits(x) : NULL;
    CHECK(l && l->memory_per_vcpu_bytes == 1ULL << 29 &&
          l->memory_per_vcpu_unit_bytes == 1ULL << 30);
    pricing_book_free(x);
    x = book_with("per_run_free", "0", &e);
    CHECK(x && pricing_book_limits(x)->memory_per_vcpu_bytes == 0);
    pricing_book_free(x);
    static const char *const bad[][2] = {
        {"{\"memory\": \"2\"}", "memory_per_vcpu.unit"},
        {"{\"unit\": \"MB\", \"memory\": \"2\"}", "memory_per_vcpu.unit"},
        {"{\"unit\": \"GB\"}", "memory_per_vcpu.memory"},
        {"{\"unit\": \"GB\", \"memory\": \"0\"}", "memory_per_vcpu.memory"},
        {"{\"unit\": \"GB\", \"memory\": \"-2\"}", "memory_per_vcpu.memory"},
        {"{\"unit\": \"GB\", \"memory\": \"2\", \"vcpu\": \"1\"}", "vcpu"},
        {"2", "memory_per_vcpu"},
    };
    refused("memory_per_vcpu", bad, sizeof(bad) / sizeof(bad[0]));
    /* The one size leaves no choice of vCPUs. */
    static const char *const both[][2] = {
        {"{\"unit\": \"GB\", \"vcpu\": \"8\", \"memory\": \"4\"}, "
         "\"memory_per_vcpu\": {\"unit\": \"GB\", \"memory\": \"2\"}",
         "memory_per_vcpu"},
    };
    refused("fixed_size", both, 1);
}

int
main(void)
{
    test_sandbox_size();
    test_book_pauses();
    test_fixed_size();
    test_memory_per_vcpu();
    gsl_set_error_handler_off();
    test_measure();
    test_concurrency();
    test_session_and_caps();
    test_messages();
    test_tiers();
    test_monte_carlo();
    test_early_stop();
    return test_result();
}
