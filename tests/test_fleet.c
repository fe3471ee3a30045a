/*
 * test_fleet.c - the generated fleet: deterministic for a seed, one
 * sandbox per run handed out, every second of a slot at most once, and a
 * full fleet (sim_fleet_fill) with a sample of every slot every second;
 * a noisy one (sim_fleet_noisy) moves memory in use and cpu_used every
 * running second, and sends egress from every shape.
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
    /* Of pairs of running seconds in a row: those whose memory in use,
     * and cpu_used, moved; seconds with egress of slots not browsers. */
    size_t pairs, mem_moves, cpu_moves, other_egress;
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
        if (i && s[i].vcpu && s[i - 1].vcpu) {
            w->pairs++;
            w->mem_moves += s[i].mem_used_bytes != s[i - 1].mem_used_bytes;
            w->cpu_moves += s[i].cpu_used != s[i - 1].cpu_used;
        }
        w->other_egress += slot % 4 != 3 && s[i].egress_bytes;
    }
    w->samples += n;
}

/* 600 s of a fleet of SLOTS slots, in windows of 60 s. */
static void
run(uint64_t seed, bool full, bool noisy, struct seen *w)
{
    memset(w, 0, sizeof(*w));
    w->ordered = true;
    struct sim_fleet *f = sim_fleet_new(seed, SLOTS, 7, START);
    CHECK(f != NULL);
    if (full)
        sim_fleet_fill(f);
    if (noisy)
        sim_fleet_noisy(f);
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
    static struct seen a, b, c, full, noisy;
    run(42, false, false, &a);
    run(42, false, false, &b);
    run(43, false, false, &c);
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
    run(42, true, false, &full);
    CHECK(full.samples == SLOTS * 600);
    CHECK(full.ordered);
    size_t once = 0;
    for (int k = 0; k < SLOTS; k++)
        for (int i = 0; i < 600; i++)
            once += full.second[k][i] == 1;
    CHECK(once == SLOTS * 600);
    CHECK(full.runs > SLOTS * 10);

    /* Smooth: memory in use drifts now and then (1 s in 16), egress
     * comes from browsers only. Noisy: memory in use and cpu_used move
     * every running second, and every shape sends egress. */
    CHECK(a.pairs > 1000 && a.mem_moves * 8 < a.pairs);
    CHECK(a.other_egress == 0);
    run(42, false, true, &noisy);
    CHECK(noisy.pairs > 1000);
    CHECK(noisy.mem_moves == noisy.pairs);
    CHECK(noisy.cpu_moves * 100 > noisy.pairs * 99);
    CHECK(noisy.other_egress > 100);
    fprintf(stderr, "smooth: %zu of %zu memory moves; noisy: %zu, cpu %zu\n",
            a.mem_moves, a.pairs, noisy.mem_moves, noisy.cpu_moves);
    return test_result();
}
