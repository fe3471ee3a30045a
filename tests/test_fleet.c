/*
 * test_fleet.c - the generated fleet: deterministic for a seed, one
 * sandbox per run handed out, every second of a slot at most once, and a
 * full fleet (sim_fleet_fill) with a sample of every slot every second.
 */
#include <stdlib.h>

#include "sim.h"
#include "testutil.h"

#define SLOTS 40
#define START 1768003200LL

struct seen {
    size_t samples, runs;
    uint64_t hash;
    unsigned char second[SLOTS][600]; /* samples of slot k at second i */
    bool ordered;                     /* each run's seconds consecutive */
};

static void
collect(const char *account, const char *sandbox,
        const struct pricing_second *s, size_t n, void *arg)
{
    struct seen *w = arg;
    /* sb-SEED-SLOT-GENERATION */
    unsigned long seed, slot, gen;
    CHECK(sscanf(sandbox, "sb-%lu-%lu-%lu", &seed, &slot, &gen) == 3);
    CHECK(slot < SLOTS);
    char want[32];
    snprintf(want, sizeof(want), "acct-%lu", slot % 7);
    CHECK_STR(account, want);
    w->runs++;
    for (size_t i = 0; i < n; i++) {
        int64_t at = s[i].ts - START;
        if (i && s[i].ts != s[i - 1].ts + 1)
            w->ordered = false;
        if (slot < SLOTS && at >= 0 && at < 600)
            w->second[slot][at]++;
        w->hash = w->hash * 1099511628211ULL ^ (uint64_t)s[i].ts ^
                  s[i].cpu_used ^ gen << 40;
    }
    w->samples += n;
}

/* 600 s of a fleet of SLOTS slots, in windows of 60 s. */
static void
run(uint64_t seed, bool full, struct seen *w)
{
    memset(w, 0, sizeof(*w));
    w->ordered = true;
    struct sim_fleet *f = sim_fleet_new(seed, SLOTS, 7, START);
    CHECK(f != NULL);
    if (full)
        sim_fleet_fill(f);
    size_t got = 0;
    for (int i = 0; i < 10; i++)
        got += sim_fleet_next(f, 60, collect, w);
    CHECK(got == w->samples);
    CHECK(sim_fleet_now(f) == START + 600);
    sim_fleet_free(f);
}

int
main(void)
{
    static struct seen a, b, c, full;
    run(42, false, &a);
    run(42, false, &b);
    run(43, false, &c);
    CHECK(a.samples == b.samples && a.hash == b.hash); /* deterministic */
    CHECK(a.hash != c.hash);                           /* seeds differ */

    /* Gaps: a slot is sometimes between sandboxes, never doubled. */
    CHECK(a.samples < SLOTS * 600);
    CHECK(a.ordered);
    size_t max = 0;
    for (int k = 0; k < SLOTS; k++)
        for (int i = 0; i < 600; i++)
            max = a.second[k][i] > max ? a.second[k][i] : max;
    CHECK(max == 1);

    /* Full: every slot, every second, exactly once; short-lived sandboxes
     * (code runs, 30 s to 5 min) end inside a window, so a window hands
     * out more than one run for some slot. */
    run(42, true, &full);
    CHECK(full.samples == SLOTS * 600);
    CHECK(full.ordered);
    size_t once = 0;
    for (int k = 0; k < SLOTS; k++)
        for (int i = 0; i < 600; i++)
            once += full.second[k][i] == 1;
    CHECK(once == SLOTS * 600);
    CHECK(full.runs > SLOTS * 10);
    return test_result();
}
