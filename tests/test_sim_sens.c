/*
 * test_sim_sens.c - the tornado and the break-even: a profile's
 * parameters read and set as the loader would take them (rounded,
 * clamped, refused), a tornado on a profile without randomness whose
 * swings are computed by hand per book, common random numbers on one
 * with randomness, and break-evens solvable by hand, found on both sides
 * of the root, and "never in range".
 */
#include <math.h>
#include <stdlib.h>

#include <gsl/gsl_errno.h>

#include "sim.h"
#include "testutil.h"

static struct sim_profile *
parse(const char *json)
{
    struct sim_err e = {{0}};
    struct sim_profile *p = sim_profile_parse(json, strlen(json), NULL, &e);
    if (!p)
        fprintf(stderr, "profile: %s\n", e.msg);
    CHECK(p != NULL);
    return p;
}

static struct pricing_book *
book_text(const char *json)
{
    struct pricing_err e;
    struct pricing_book *b = pricing_book_parse(json, strlen(json), NULL, &e);
    if (!b)
        fprintf(stderr, "book: %s\n", e.msg);
    CHECK(b != NULL);
    return b;
}

static struct pricing_book *
book_file(const char *id)
{
    char path[1024];
    static char buf[65536];
    snprintf(path, sizeof(path), "%s/%s.json", BOOKS_DIR, id);
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (!f)
        return NULL;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return book_text(buf);
}

/* Test books whose figures are easy to follow: vCPU-seconds at a rate,
 * optionally a monthly fee, a fee per run, or a minimum billed time. */
#define FEE "10"
#define FEE_RATE "0.0001"  /* USD a vCPU-second, with the fee */
#define PAYG_RATE "0.0004" /* without */

/* One of the figures above as a number, the whole of its text. */
static double
figure(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    CHECK(end != s && *end == '\0');
    return v;
}
static const char book_fee[] =
    "{\"id\": \"fee\", \"currency\": \"USD\", \"effective_from\": "
    "\"2026-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": \"" FEE_RATE
    "\", \"per\": \"second\"}, \"memory\": {\"basis\": \"allocated\", "
    "\"unit\": \"GiB\", \"rate\": \"0\", \"per\": \"second\"}, \"storage\": "
    "{\"rate\": \"0\", \"per\": \"month\"}, \"egress\": null, \"per_run\": "
    "\"0\", \"subscription\": {\"monthly_fee\": \"" FEE "\"}}";
static const char book_payg[] =
    "{\"id\": \"payg\", \"currency\": \"USD\", \"effective_from\": "
    "\"2026-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": "
    "\"" PAYG_RATE "\", \"per\": \"second\"}, \"memory\": {\"basis\": "
    "\"allocated\", \"unit\": \"GiB\", \"rate\": \"0\", \"per\": \"second\"}, "
    "\"storage\": {\"rate\": \"0\", \"per\": \"month\"}, \"egress\": null, "
    "\"per_run\": \"0\"}";
static const char book_run[] =
    "{\"id\": \"run\", \"currency\": \"USD\", \"effective_from\": "
    "\"2026-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": \"0\", "
    "\"per\": \"second\"}, \"memory\": {\"basis\": \"allocated\", \"unit\": "
    "\"GiB\", \"rate\": \"0\", \"per\": \"second\"}, \"storage\": {\"rate\": "
    "\"0\", \"per\": \"month\"}, \"egress\": null, \"per_run\": \"0.01\"}";
static const char book_min[] =
    "{\"id\": \"min\", \"currency\": \"USD\", \"effective_from\": "
    "\"2026-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": "
    "\"0.0004\", \"per\": \"second\"}, \"memory\": {\"basis\": \"allocated\", "
    "\"unit\": \"GiB\", \"rate\": \"0\", \"per\": \"second\"}, \"storage\": "
    "{\"rate\": \"0\", \"per\": \"month\"}, \"egress\": null, \"per_run\": "
    "\"0\", \"min_billed_s\": 100}";
/* CPU used, not allocated: idle seconds cost nothing. */
static const char book_used[] =
    "{\"id\": \"used\", \"currency\": \"USD\", \"effective_from\": "
    "\"2026-01-01\", \"cpu\": {\"basis\": \"used\", \"rate\": \"0.0004\", "
    "\"per\": \"second\"}, \"memory\": {\"basis\": \"allocated\", \"unit\": "
    "\"GiB\", \"rate\": \"0\", \"per\": \"second\"}, \"storage\": {\"rate\": "
    "\"0\", \"per\": \"month\"}, \"egress\": null, \"per_run\": \"0\"}";

/* No randomness: 100 sessions of 100 s, 1 vCPU busy throughout. */
static const char fixed_profile[] =
    "{\"sessions\": {\"per_month\": 100, \"length\": {\"dist\": \"fixed\", "
    "\"value\": 100}}, \"sandbox\": {\"vcpu\": 1, \"memory_gib\": 1, "
    "\"disk_gib\": 0}}";

/* Every kind of parameter, from a lognormal, an exponential and a
 * histogram. */
static const char full_profile[] =
    "{\"sessions\": {\"poisson\": {\"per_hour\": 2}, \"batch\": 3, "
    "\"length\": {\"dist\": \"lognormal\", \"median\": 60, \"p95\": 600, "
    "\"max\": 3600}}, \"sandbox\": {\"vcpu\": 2, \"memory_gib\": 4, "
    "\"memory_used_gib\": 1, \"disk_gib\": 10}, \"activity\": {\"busy\": "
    "{\"length\": {\"dist\": \"exponential\", \"mean\": 30}, \"cpu\": 0.5}, "
    "\"idle\": {\"length\": {\"dist\": \"histogram\", \"bins\": [{\"from\": "
    "1, \"to\": 9, \"weight\": 1}, {\"from\": 10, \"to\": 30, \"weight\": "
    "1}]}, \"cpu\": 0}}, \"egress\": {\"per_session_mb\": {\"dist\": "
    "\"fixed\", \"value\": 0}}, \"pauses\": {\"after_idle_s\": 20, "
    "\"probability\": 1}}";

static void
names(void)
{
    struct sim_profile *p = parse(fixed_profile), *q = parse(full_profile);
    char n[SIM_PARAMS_MAX][SIM_PARAM_NAME];
    static const char *const want_fixed[] = {
        "sessions.per_month", "sessions.batch",     "sessions.length.value",
        "sandbox.vcpu",       "sandbox.memory_gib", "sandbox.memory_used_gib",
        "sandbox.disk_gib",
    };
    size_t k = sim_params(p, true, n);
    CHECK(k == sizeof(want_fixed) / sizeof(want_fixed[0]));
    for (size_t i = 0; i < k && i < 7; i++)
        CHECK_STR(n[i], want_fixed[i]);
    static const char *const want_full[] = {
        "sessions.poisson.per_hour",
        "sessions.batch",
        "sessions.length.median",
        "sessions.length.p95",
        "sandbox.vcpu",
        "sandbox.memory_gib",
        "sandbox.memory_used_gib",
        "sandbox.disk_gib",
        "activity.busy.length.mean",
        "activity.busy.cpu",
        "activity.idle.length.bins",
        "activity.idle.cpu",
        "activity.idle_share",
        "egress.per_session_mb.value",
        "pauses.after_idle_s",
        "pauses.probability",
    };
    k = sim_params(q, true, n);
    CHECK(k == sizeof(want_full) / sizeof(want_full[0]));
    for (size_t i = 0; i < k && i < 16; i++)
        CHECK_STR(n[i], want_full[i]);
    /* The tornado's list has no derived parameter. */
    CHECK(sim_params(q, false, n) == k - 1);
    double v = 0, step = 0;
    CHECK(sim_param_get(q, "activity.idle.length.bins", &v, &step) == 0);
    CHECK(v == 12.5 && step == 0); /* (5 + 20) / 2 */
    CHECK(sim_param_get(q, "sandbox.vcpu", &v, &step) == 0);
    CHECK(v == 2 && step == 0.0001);
    CHECK(sim_param_get(q, "sessions.batch", &v, &step) == 0);
    CHECK(v == 3 && step == 1);
    CHECK(sim_param_get(p, "sessions.poisson.per_hour", &v, &step) == -1);
    sim_profile_free(p);
    sim_profile_free(q);
}

/* One set: the status, the value held after, and part of the message. */
static const struct {
    const char *profile, *param;
    double value;
    enum sim_param_status st;
    double used;
    const char *why;
} sets[] = {
    {fixed_profile, "sessions.per_month", 110, SIM_PARAM_SET, 110, ""},
    /* Whole sessions: rounded, half away from zero. */
    {fixed_profile, "sessions.per_month", 4.5, SIM_PARAM_SET, 5, ""},
    {fixed_profile, "sessions.per_month", 0.2, SIM_PARAM_CLAMPED, 1,
     "sessions.per_month 0.2 is below 1: clamped to it"},
    {fixed_profile, "sessions.per_month", 2e7, SIM_PARAM_CLAMPED, 1e7,
     "above 10000000"},
    {fixed_profile, "sessions.batch", 0.9, SIM_PARAM_SET, 1, ""},
    /* 1/10,000 vCPU. */
    {fixed_profile, "sandbox.vcpu", 2.00004, SIM_PARAM_SET, 2, ""},
    {fixed_profile, "sandbox.vcpu", 1e-6, SIM_PARAM_CLAMPED, 0.0001,
     "sandbox.vcpu 1e-06 is below 0.0001: clamped to it"},
    /* Whole bytes: 0.1 GiB is 107,374,182.4 bytes. */
    {fixed_profile, "sandbox.memory_gib", 0.1, SIM_PARAM_SET,
     107374182 / 1073741824.0, ""},
    {fixed_profile, "sandbox.memory_used_gib", 2, SIM_PARAM_CLAMPED, 1,
     "sandbox.memory_used_gib 2 is above 1: clamped to it"},
    /* Whole seconds, at least 1. */
    {fixed_profile, "sessions.length.value", 99.5, SIM_PARAM_SET, 100, ""},
    {fixed_profile, "sessions.length.value", 0.3, SIM_PARAM_CLAMPED, 1,
     "sessions.length.value 0.3 is below 1: clamped to it"},
    {fixed_profile, "sessions.length.value", 3e6, SIM_PARAM_CLAMPED, 2678400,
     "sessions.length.value 3000000 is above 2678400"},
    {fixed_profile, "sessions.foo", 1, SIM_PARAM_REFUSED, 0,
     "'sessions.foo' is not a parameter of this profile"},
    {fixed_profile, "sessions.per_month", NAN, SIM_PARAM_REFUSED, 0,
     "is not a number"},
    {full_profile, "sessions.poisson.per_hour", 0, SIM_PARAM_REFUSED, 0,
     "sessions.poisson.per_hour 0 is not above 0"},
    {full_profile, "sessions.length.p95", 50, SIM_PARAM_REFUSED, 0,
     "sessions.length.p95 50 is not above the median 60"},
    {full_profile, "sessions.length.p95", 900, SIM_PARAM_SET, 900, ""},
    /* The median scales the distribution: max 3600 x 1000 is past 31
     * days, clamped. */
    {full_profile, "sessions.length.median", 60000, SIM_PARAM_CLAMPED, 60000,
     "sessions.length.max 3600000 is above 2678400: clamped"},
    /* Down: max 3600 / 60,000 is below a second, clamped; the median
     * may be. */
    {full_profile, "sessions.length.median", 0.001, SIM_PARAM_CLAMPED, 0.001,
     "sessions.length.max 0.06 is below 1: clamped to it"},
    /* Up past the clamped max: refused. */
    {full_profile, "sessions.length.median", 3e6, SIM_PARAM_REFUSED, 0,
     "sessions.length.median 3000000 would be above its max 2678400"},
    {full_profile, "activity.busy.cpu", 1.1, SIM_PARAM_CLAMPED, 1,
     "activity.busy.cpu 1.1 is above 1: clamped to it"},
    {full_profile, "pauses.probability", -0.1, SIM_PARAM_CLAMPED, 0, "below 0"},
    {full_profile, "pauses.after_idle_s", 20.4, SIM_PARAM_SET, 20, ""},
    /* The histogram scaled to mean 25: bins [2, 18), [20, 60). */
    {full_profile, "activity.idle.length.bins", 25, SIM_PARAM_SET, 25, ""},
    /* Down to mean 2.5: [0.2, 1.8) starts below a second, clamped to
     * [1, 1.8); with [2, 6), the mean is (1.4 + 4) / 2. */
    {full_profile, "activity.idle.length.bins", 2.5, SIM_PARAM_CLAMPED, 2.7,
     "activity.idle.length.bins[0].from 0.2 is below 1: clamped to it"},
    /* To 1.25, [0.1, 0.9) would be [1, 0.9). */
    {full_profile, "activity.idle.length.bins", 1.25, SIM_PARAM_REFUSED, 0,
     "activity.idle.length.bins[0] would be empty ([1, 0.9))"},
    {full_profile, "activity.idle_share", 1, SIM_PARAM_REFUSED, 0,
     "activity.idle_share 1 is not between 0 and 1"},
    /* A fixed 0 (no egress) is set, not scaled; whole bytes. */
    {full_profile, "egress.per_session_mb.value", 5.0000004, SIM_PARAM_SET, 5,
     ""},
};

static void
set_table(void)
{
    for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++) {
        struct sim_profile *p = parse(sets[i].profile);
        char why[256] = "x";
        double used = -1;
        enum sim_param_status st = sim_param_set(
            p, sets[i].param, sets[i].value, &used, why, sizeof(why));
        if (st != sets[i].st ||
            (st != SIM_PARAM_REFUSED && fabs(used - sets[i].used) > 1e-9) ||
            !strstr(why, sets[i].why) || (!sets[i].why[0] && why[0])) {
            fprintf(stderr, "set %zu %s %g: got %d, %.10g, '%s'\n", i,
                    sets[i].param, sets[i].value, st, used, why);
            test_failures++;
        }
        sim_profile_free(p);
    }
}

/* What moves along with a parameter, and copies that own their own. */
static void
carried(void)
{
    struct sim_profile *p = parse(full_profile);
    double v;
    /* The CPU fractions follow the vCPUs: 0.5 of 3 vCPU. */
    CHECK(p->busy.cpu_used == 10000);
    CHECK(sim_param_set(p, "sandbox.vcpu", 3, &v, NULL, 0) == SIM_PARAM_SET);
    CHECK(p->vcpu == 30000 && p->busy.cpu_used == 15000 &&
          p->idle.cpu_used == 0);
    /* memory_used_gib keeps its share of memory_gib. */
    CHECK(sim_param_set(p, "sandbox.memory_gib", 8, &v, NULL, 0) ==
          SIM_PARAM_SET);
    CHECK(p->mem_bytes == 8ULL << 30 && p->mem_used_bytes == 2ULL << 30);
    /* The median carries p95 and max, and sigma (the shape) stays. */
    double sigma = p->length.sigma;
    CHECK(sim_param_set(p, "sessions.length.median", 120, &v, NULL, 0) ==
          SIM_PARAM_SET);
    CHECK(p->length.p95 == 1200 && p->length.max == 7200 &&
          p->length.sigma == sigma && p->length.mu == log(120));
    CHECK(sim_param_set(p, "activity.busy.length.mean", 60, &v, NULL, 0) ==
          SIM_PARAM_SET);
    CHECK(p->busy.length.mean == 60 && p->busy.length.max == 86400 * 2);
    /* A copy's histogram is its own. */
    struct sim_profile *q = sim_profile_copy(p);
    CHECK(q != NULL);
    CHECK(sim_param_set(q, "activity.idle.length.bins", 25, &v, NULL, 0) ==
          SIM_PARAM_SET);
    CHECK(q->idle.length.bins[1].to == 60 && p->idle.length.bins[1].to == 30);
    CHECK(q->idle.length.max == 60 && p->idle.length.max == 30);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    for (int i = 0; i < 1000; i++) {
        double x = sim_dist_draw(&q->idle.length, rng);
        CHECK(x >= 2 && x < 60 && !(x >= 18 && x < 20));
    }
    gsl_rng_free(rng);
    sim_profile_free(p);
    sim_profile_free(q);
}

/* activity.idle_share: the idle spells' mean over both means. */
static void
idle_share(void)
{
    struct sim_profile *p = parse(
        "{\"sessions\": {\"per_month\": 1, \"length\": {\"dist\": \"fixed\", "
        "\"value\": 1000}}, \"sandbox\": {\"vcpu\": 1, \"memory_gib\": 1, "
        "\"disk_gib\": 0}, \"activity\": {\"busy\": {\"length\": {\"dist\": "
        "\"fixed\", \"value\": 30}, \"cpu\": 1}, \"idle\": {\"length\": "
        "{\"dist\": \"fixed\", \"value\": 90}, \"cpu\": 0}}}");
    double v = 0;
    CHECK(sim_param_get(p, "activity.idle_share", &v, NULL) == 0);
    CHECK(v == 0.75);
    CHECK(sim_param_set(p, "activity.idle_share", 0.5, &v, NULL, 0) ==
          SIM_PARAM_SET);
    CHECK(fabs(p->idle.length.value - 30) < 1e-9 && fabs(v - 0.5) < 1e-12);
    /* Idle spells under a second cannot be drawn. */
    char why[256];
    CHECK(sim_param_set(p, "activity.idle_share", 0.01, &v, why, sizeof(why)) ==
          SIM_PARAM_CLAMPED);
    CHECK(strstr(why, "the share is 0.03225806452") != NULL);
    sim_profile_free(p);
    /* An exponential clamped at its max has a smaller mean: mean 40,
     * max 40 gives 40 (1 - 1/e); a lognormal's is checked against its
     * draws. */
    p = parse("{\"sessions\": {\"per_month\": 1, \"length\": {\"dist\": "
              "\"fixed\", \"value\": 1000}}, \"sandbox\": {\"vcpu\": 1, "
              "\"memory_gib\": 1, \"disk_gib\": 0}, \"activity\": {\"busy\": "
              "{\"length\": {\"dist\": \"exponential\", \"mean\": 40, "
              "\"max\": 40}, \"cpu\": 1}, \"idle\": {\"length\": {\"dist\": "
              "\"lognormal\", \"median\": 45, \"p95\": 900, \"max\": 2000}, "
              "\"cpu\": 0}}}");
    double busy = 40 * (1 - exp(-1)), sum = 0;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    for (int i = 0; i < 400000; i++)
        sum += sim_dist_draw(&p->idle.length, rng);
    double idle = sum / 400000;
    CHECK(sim_param_get(p, "activity.idle_share", &v, NULL) == 0);
    if (fabs(v - idle / (busy + idle)) > 0.005) {
        fprintf(stderr, "idle share %g, draws say %g\n", v,
                idle / (busy + idle));
        test_failures++;
    }
    gsl_rng_free(rng);
    sim_profile_free(p);
}

static const char *
money(struct pricing_dec d, char *buf)
{
    pricing_dec_format(d, 2, buf, 48);
    return buf;
}

static struct sim_mc_opts
opts(uint64_t seed, size_t max)
{
    return (struct sim_mc_opts){.seed = seed,
                                .precision = 0.005,
                                .min_trials = 2,
                                .max_trials = max,
                                .threads = 1,
                                .year = 2026,
                                .month = 11};
}

/* A book's tornado as computed by hand: parameter, low, high, in order. */
struct want {
    const char *param, *low, *high;
};

static void
check_book(const struct sim_tornado_book *tb, const char *id, const char *base,
           const struct want *w, size_t n)
{
    char a[48], b[48];
    CHECK_STR(money(tb->base, a), base);
    if (tb->nswings != n) {
        fprintf(stderr, "%s: %zu swings, want %zu\n", id, tb->nswings, n);
        test_failures++;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const struct sim_swing *s = &tb->swings[i];
        if (strcmp(s->param, w[i].param) ||
            strcmp(money(s->low, a), w[i].low) ||
            strcmp(money(s->high, b), w[i].high) || s->failed) {
            fprintf(stderr, "%s swing %zu: got %s %s %s, want %s %s %s\n", id,
                    i, s->param, a, b, w[i].param, w[i].low, w[i].high);
            test_failures++;
        }
    }
}

/*
 * The fixed profile's usage is 100 sessions x 100 vCPU-s = 10,000
 * vCPU-s. Sessions, their length and the vCPUs each scale it by 0.9 and
 * 1.1; memory is free, so its swings are 0, and memory_used_gib cannot
 * pass memory_gib (its +10% is clamped back: one side only). The batch
 * of 1 rounds back to 1 either way and the disk is 0: both left out.
 */
static void
tornado(void)
{
    struct sim_profile *p = parse(fixed_profile);
    struct pricing_book *b[4] = {book_text(book_fee), book_text(book_payg),
                                 book_text(book_run), book_text(book_min)};
    const struct pricing_book *books[4] = {b[0], b[1], b[2], b[3]};
    struct sim_mc_opts o = opts(1, 50);
    struct sim_mc_result base;
    struct sim_tornado t;
    struct sim_err e;
    CHECK(sim_monte_carlo(p, books, 4, &o, &base, &e) == 0);
    CHECK(sim_tornado(p, books, 4, &o, &base, 10, 0, &t, &e) == 0);
    CHECK(t.pct == 10 && t.nbooks == 4);
    /* fee: 10 + 10,000 x 0.0001 = 11.00; usage 0.90 or 1.10. */
    static const struct want fee[] = {
        {"sandbox.vcpu", "10.90", "11.10"},
        {"sessions.length.value", "10.90", "11.10"},
        {"sessions.per_month", "10.90", "11.10"},
        {"sandbox.memory_gib", "11.00", "11.00"},
        {"sandbox.memory_used_gib", "11.00", "11.00"},
    };
    check_book(&t.books[0], "fee", "11.00", fee, 5);
    /* payg: 10,000 x 0.0004 = 4.00: 3.60 or 4.40. */
    static const struct want payg[] = {
        {"sandbox.vcpu", "3.60", "4.40"},
        {"sessions.length.value", "3.60", "4.40"},
        {"sessions.per_month", "3.60", "4.40"},
        {"sandbox.memory_gib", "4.00", "4.00"},
        {"sandbox.memory_used_gib", "4.00", "4.00"},
    };
    check_book(&t.books[1], "payg", "4.00", payg, 5);
    /* run: 0.01 a session; only their number matters. */
    static const struct want run[] = {
        {"sessions.per_month", "0.90", "1.10"},
        {"sandbox.memory_gib", "1.00", "1.00"},
        {"sandbox.memory_used_gib", "1.00", "1.00"},
        {"sandbox.vcpu", "1.00", "1.00"},
        {"sessions.length.value", "1.00", "1.00"},
    };
    check_book(&t.books[2], "run", "1.00", run, 5);
    /* min: as payg, but each session is billed at least 100 s, so 90 s
     * sessions cost as much as 100 s ones: half the swing, and
     * after the whole ones. */
    static const struct want min[] = {
        {"sandbox.vcpu", "3.60", "4.40"},
        {"sessions.per_month", "3.60", "4.40"},
        {"sessions.length.value", "4.00", "4.40"},
        {"sandbox.memory_gib", "4.00", "4.00"},
        {"sandbox.memory_used_gib", "4.00", "4.00"},
    };
    check_book(&t.books[3], "min", "4.00", min, 5);
    const struct sim_swing *s = &t.books[0].swings[2];
    CHECK(s->value == 100 && s->low_value == 90 && s->high_value == 110);
    s = &t.books[0].swings[4];
    CHECK(s->value == 1 && s->low_value == round(0.9 * (1 << 30)) / (1 << 30) &&
          s->high_value == 1);
    CHECK(strstr(s->note, "+10%: sandbox.memory_used_gib 1.1 is above 1: "
                          "clamped to it") != NULL);
    CHECK(t.nnotes == 2);
    CHECK(t.nnotes == 2 && strstr(t.notes[0], "sessions.batch 1 not moved") &&
          strstr(t.notes[0], "0.9 rounds to 1") &&
          strstr(t.notes[1], "sandbox.disk_gib 0 not moved"));
    /* Every mean over the base's 30 months (no randomness: it stops at
     * the stopping rule's floor). */
    CHECK(t.books[0].trials == 30 && t.books[3].trials == 30);
    sim_tornado_release(&t);
    /* A cap on the trials: the base's mean is over the same months. */
    CHECK(sim_tornado(p, books, 4, &o, &base, 10, 2, &t, &e) == 0);
    CHECK(t.books[1].trials == 2);
    check_book(&t.books[1], "payg (2 trials)", "4.00", payg, 5);
    sim_tornado_release(&t);
    sim_mc_result_release(&base);
    sim_tornado_release(NULL);
    for (int i = 0; i < 4; i++)
        pricing_book_free(b[i]);
    sim_profile_free(p);
}

/*
 * Common random numbers on a profile with randomness: a parameter that
 * changes no draw and nothing a book bills leaves that book's mean
 * exactly as it was, and more sessions cost more. A book that cannot
 * price the workload is left out.
 */
static void
common_numbers(void)
{
    struct sim_profile *p = parse(
        "{\"sessions\": {\"poisson\": {\"per_hour\": 1}, \"length\": "
        "{\"dist\": \"lognormal\", \"median\": 30, \"p95\": 300, \"max\": "
        "3600}}, \"sandbox\": {\"vcpu\": 1, \"memory_gib\": 1, \"disk_gib\": "
        "1}, \"activity\": {\"busy\": {\"length\": {\"dist\": "
        "\"exponential\", \"mean\": 20}, \"cpu\": 1}, \"idle\": {\"length\": "
        "{\"dist\": \"exponential\", \"mean\": 20}, \"cpu\": 0}}}");
    struct pricing_book *b[3] = {book_text(book_payg), book_text(book_used),
                                 book_file("aws-lambda")};
    const struct pricing_book *books[3] = {b[0], b[1], b[2]};
    struct sim_mc_opts o = opts(7, 4);
    o.precision = 0.0001;
    struct sim_mc_result base;
    struct sim_tornado t;
    struct sim_err e;
    CHECK(sim_monte_carlo(p, books, 3, &o, &base, &e) == 0);
    CHECK(base.books[2].failed); /* aws-lambda: no storage price */
    CHECK(sim_tornado(p, books, 3, &o, &base, 20, 0, &t, &e) == 0);
    for (int i = 0; i < 2; i++) {
        const struct sim_tornado_book *tb = &t.books[i];
        CHECK(tb->trials == 4);
        int seen = 0; /* the three parameters checked, each once */
        for (size_t k = 0; k < tb->nswings; k++) {
            const struct sim_swing *s = &tb->swings[k];
            seen += strcmp(s->param, "sandbox.memory_gib") == 0 ||
                    strcmp(s->param, "sessions.poisson.per_hour") == 0 ||
                    strcmp(s->param, "activity.busy.cpu") == 0;
            /* Memory is free under both. */
            if (strcmp(s->param, "sandbox.memory_gib") == 0)
                CHECK(s->low.v == tb->base.v && s->high.v == tb->base.v);
            if (strcmp(s->param, "sessions.poisson.per_hour") == 0)
                CHECK(pricing_dec_cmp(s->low, tb->base) < 0 &&
                      pricing_dec_cmp(s->high, tb->base) > 0);
            /* Less CPU in busy spells costs the used-basis book less.
             * It changes nothing that is drawn, so the allocated book's
             * moved months are the base's, and cost exactly as much:
             * the same months, from the same seed. */
            if (strcmp(s->param, "activity.busy.cpu") == 0)
                CHECK(i == 0 ? s->low.v == tb->base.v
                             : pricing_dec_cmp(s->low, tb->base) < 0);
        }
        CHECK(seen == 3);
    }
    CHECK(t.books[2].nswings == 0);
    sim_tornado_release(&t);
    sim_mc_result_release(&base);
    for (int i = 0; i < 3; i++)
        pricing_book_free(b[i]);
    sim_profile_free(p);
}

/*
 * Break-even of sessions a month between fee (a monthly fee, a cheaper
 * rate) and payg: n sessions of L s at 1 vCPU cost FEE + n L FEE_RATE
 * and n L PAYG_RATE, equal at n = FEE / (L (PAYG_RATE - FEE_RATE)).
 */
static void
breakeven(void)
{
    struct sim_profile *p = parse(fixed_profile);
    struct pricing_book *b[2] = {book_text(book_fee), book_text(book_payg)};
    const struct pricing_book *books[2] = {b[0], b[1]};
    struct sim_mc_opts o = opts(1, 8);
    struct sim_breakeven r;
    struct sim_err e;
    double n = figure(FEE) / (100 * (figure(PAYG_RATE) - figure(FEE_RATE)));
    char a[48], c[48];
    CHECK(sim_breakeven(p, books, &o, 2, "sessions.per_month", 100, 1000, &r,
                        &e) == 0);
    CHECK(r.found && r.whole && r.converged && r.trials == 2);
    CHECK(r.crossings == 1);
    /* 333.33: the books change order between 333 and 334 sessions. */
    CHECK(r.at[0] == floor(n) && r.at[1] == floor(n) + 1);
    CHECK(r.root >= floor(n) && r.root <= floor(n) + 1);
    /* Below it payg is cheaper (13.33 and 13.32), above it fee (13.34 and
     * 13.36). */
    CHECK_STR(money(r.cost[0][0], a), "13.33");
    CHECK_STR(money(r.cost[0][1], c), "13.32");
    CHECK_STR(money(r.cost[1][0], a), "13.34");
    CHECK_STR(money(r.cost[1][1], c), "13.36");
    /* The range the other way round holds no crossing. */
    CHECK(sim_breakeven(p, books, &o, 2, "sessions.per_month", 10, 300, &r,
                        &e) == 0);
    CHECK(!r.found && r.crossings == 0);
    CHECK(r.at[0] == 10 && r.at[1] == 300);
    CHECK_STR(money(r.cost[0][0], a), "10.10"); /* fee at 10 sessions */
    CHECK_STR(money(r.cost[0][1], c), "0.40");
    CHECK_STR(money(r.cost[1][0], a), "13.00");
    CHECK_STR(money(r.cost[1][1], c), "12.00");
    /* Session length, whole seconds: 100 sessions, equal at L = FEE /
     * (100 (PAYG_RATE - FEE_RATE)), the same 333.3 (s, now). */
    double l = figure(FEE) / (100 * (figure(PAYG_RATE) - figure(FEE_RATE)));
    CHECK(sim_breakeven(p, books, &o, 2, "sessions.length.value", 100, 1000, &r,
                        &e) == 0);
    CHECK(r.found && r.whole && r.converged);
    CHECK(r.at[0] == floor(l) && r.at[1] == floor(l) + 1);
    CHECK(r.root >= floor(l) && r.root <= floor(l) + 1);
    CHECK(pricing_dec_cmp(r.cost[0][0], r.cost[0][1]) > 0 &&
          pricing_dec_cmp(r.cost[1][0], r.cost[1][1]) < 0);
    /* Ends the profile cannot take as given are refused. */
    CHECK(sim_breakeven(p, books, &o, 2, "sessions.per_month", 0, 100, &r,
                        &e) == -1);
    CHECK(strstr(e.msg, "sessions.per_month 0 is below 1") != NULL);
    CHECK(sim_breakeven(p, books, &o, 2, "sessions.foo", 1, 100, &r, &e) == -1);
    CHECK(strstr(e.msg, "'sessions.foo' is not a parameter") != NULL);
    CHECK(sim_breakeven(p, books, &o, 2, "sessions.per_month", 100, 100, &r,
                        &e) == -1);
    CHECK(strstr(e.msg, "empty") != NULL);
    pricing_book_free(b[0]);
    pricing_book_free(b[1]);
    sim_profile_free(p);

    /* e2b-hobby and e2b-pro have the same rates, and Pro a fee of 150:
     * Hobby is cheaper by 150 everywhere. */
    p = parse(fixed_profile);
    b[0] = book_file("e2b-hobby");
    b[1] = book_file("e2b-pro");
    const struct pricing_book *e2b[2] = {b[0], b[1]};
    CHECK(sim_breakeven(p, e2b, &o, 2, "sandbox.vcpu", 0.5, 8, &r, &e) == 0);
    CHECK(!r.found && r.at[0] == 0.5 && r.at[1] == 8);
    for (int i = 0; i < 2; i++) {
        struct pricing_dec d;
        CHECK(pricing_dec_sub(r.cost[i][1], r.cost[i][0], &d) == PRICING_OK);
        CHECK_STR(money(d, a), "150.00");
    }
    pricing_book_free(b[0]);
    pricing_book_free(b[1]);
    sim_profile_free(p);
}

/*
 * Break-even of the idle share between a book of allocated vCPUs (a)
 * and one of CPU used (b): busy at 1 vCPU, idle at 0, the second costs
 * b (1 - x) a second to the first's a: equal at x = 1 - a / b = 0.75.
 * Long sessions, so that a session's last spell, cut at its end, moves
 * the share little.
 */
static void
breakeven_idle(void)
{
    struct sim_profile *p =
        parse("{\"sessions\": {\"per_month\": 10, \"length\": {\"dist\": "
              "\"fixed\", \"value\": 20000}}, \"sandbox\": {\"vcpu\": 1, "
              "\"memory_gib\": 1, \"disk_gib\": 0}, \"activity\": {\"busy\": "
              "{\"length\": {\"dist\": \"fixed\", \"value\": 10}, \"cpu\": 1}, "
              "\"idle\": {\"length\": {\"dist\": \"fixed\", \"value\": 10}, "
              "\"cpu\": 0}}}");
    /* As fee, without the fee: usage alone. */
    struct pricing_book *alloc = book_text(
        "{\"id\": \"alloc\", \"currency\": \"USD\", \"effective_from\": "
        "\"2026-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": "
        "\"0.0001\", \"per\": \"second\"}, \"memory\": {\"basis\": "
        "\"allocated\", \"unit\": \"GiB\", \"rate\": \"0\", \"per\": "
        "\"second\"}, \"storage\": {\"rate\": \"0\", \"per\": \"month\"}, "
        "\"egress\": null, \"per_run\": \"0\"}");
    struct pricing_book *used = book_text(book_used);
    const struct pricing_book *books[2] = {alloc, used};
    struct sim_mc_opts o = opts(1, 8);
    struct sim_breakeven r;
    struct sim_err e;
    CHECK(sim_breakeven(p, books, &o, 2, "activity.idle_share", 0.1, 0.95, &r,
                        &e) == 0);
    CHECK(r.found && r.converged);
    if (fabs(r.root - 0.75) > 0.01) {
        fprintf(stderr, "idle share break-even %g, want 0.75\n", r.root);
        test_failures++;
    }
    /* Less idle, the used-basis book costs more; more idle, less. */
    CHECK(pricing_dec_cmp(r.cost[0][0], r.cost[0][1]) <= 0 &&
          pricing_dec_cmp(r.cost[1][0], r.cost[1][1]) >= 0);
    pricing_book_free(alloc);
    pricing_book_free(used);
    sim_profile_free(p);
}

int
main(void)
{
    gsl_set_error_handler_off();
    names();
    set_table();
    carried();
    idle_share();
    tornado();
    common_numbers();
    breakeven();
    breakeven_idle();
    return test_result();
}
