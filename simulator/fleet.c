/*
 * fleet.c - a generated fleet of sandboxes, second by second: the
 * workload generator of demos, tests, benchmarks and the simulator.
 * Deterministic for a seed.
 *
 * Each of N slots runs one sandbox after another: a sandbox lives for a
 * while (minutes to hours, by shape), is sometimes paused and resumed,
 * then goes, and after a short gap the slot starts a new one (a new
 * sandbox_id); a full fleet (sim_fleet_fill) has no gaps. The shapes, in equal
 * shares by slot: coding agent  long sessions, mostly idle between LLM turns
 * (busy 1 s in 10), memory in use drifting page by page; evaluation    bursts:
 * 10 minutes at full load, 10 nearly idle; code run      short lives (30 s to 5
 * min), noisy CPU, many restarts; browser       steady CPU around a quarter,
 * egress in bursts. cpu_used changes every second (noise), memory in use
 * drifts, egress comes in bursts, disk grows slowly. Accounts are slot %
 * accounts.
 *
 * A noisy fleet (sim_fleet_noisy), the shape of a fleet measured by
 * others: memory in use moves every second (a few pages up or down),
 * cpu_used every second over the whole of the sandbox's vCPUs (by the
 * percent, as a host's counters read), and
 * egress comes in bursts in every shape, not only the browser's.
 */
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum shape { CODING, EVALUATION, CODE_RUN, BROWSER };

struct slot {
    uint64_t rng;
    uint64_t seed; /* in sandbox ids: fleets of other seeds differ */
    enum shape shape;
    unsigned generation; /* sandboxes this slot has run */
    bool alive, paused;
    int64_t until; /* end of the current life or gap */
    uint32_t vcpu;
    uint64_t mem, mem_used, disk;
    uint32_t burst_left; /* seconds of egress burst left */
    char sandbox[PRICING_ID_MAX + 1];
    char account[PRICING_ID_MAX + 1];
};

struct sim_fleet {
    struct slot *slots;
    size_t n;
    int64_t now; /* the next second to generate */
    bool full;   /* no gaps: sim_fleet_fill */
    bool noisy;  /* sim_fleet_noisy */
};

static uint64_t
next_rand(uint64_t *s)
{
    /* splitmix64: good enough noise, cheap, deterministic */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t
between(uint64_t *s, uint64_t lo, uint64_t hi)
{
    return lo + next_rand(s) % (hi - lo + 1);
}

static void
start_life(struct slot *x, size_t k, int64_t now)
{
    static const uint32_t sizes[] = {1, 2, 2, 4, 8};
    x->alive = true;
    x->paused = false;
    x->generation++;
    snprintf(x->sandbox, sizeof(x->sandbox), "sb-%llu-%zu-%u",
             (unsigned long long)x->seed, k, x->generation);
    x->vcpu = sizes[between(&x->rng, 0, 4)] * PRICING_CPU_UNIT;
    x->mem = (uint64_t)(x->vcpu / PRICING_CPU_UNIT) << 30;
    x->mem_used = x->mem / 4;
    x->disk = between(&x->rng, 1, 10) << 30;
    switch (x->shape) {
    case CODING:
        x->until = now + (int64_t)between(&x->rng, 1800, 14400);
        break;
    case EVALUATION:
        x->until = now + (int64_t)between(&x->rng, 1200, 7200);
        break;
    case CODE_RUN:
        x->until = now + (int64_t)between(&x->rng, 30, 300);
        break;
    case BROWSER:
        x->until = now + (int64_t)between(&x->rng, 600, 5400);
        break;
    }
}

struct sim_fleet *
sim_fleet_new(uint64_t seed, size_t sandboxes, size_t accounts, int64_t start)
{
    struct sim_fleet *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    f->slots = calloc(sandboxes ? sandboxes : 1, sizeof(*f->slots));
    if (!f->slots) {
        free(f);
        return NULL;
    }
    f->n = sandboxes;
    f->now = start;
    for (size_t k = 0; k < sandboxes; k++) {
        struct slot *x = &f->slots[k];
        x->rng = seed * 0x100000001b3ULL + k;
        x->seed = seed;
        x->shape = (enum shape)(k % 4);
        snprintf(x->account, sizeof(x->account), "acct-%zu",
                 accounts ? k % accounts : 0);
        /* Stagger: some slots start with a sandbox, others after a gap. */
        if (next_rand(&x->rng) % 4 == 0) {
            x->alive = false;
            x->until = start + (int64_t)between(&x->rng, 1, 600);
        } else {
            start_life(x, k, start);
        }
    }
    return f;
}

void
sim_fleet_free(struct sim_fleet *f)
{
    if (!f)
        return;
    free(f->slots);
    free(f);
}

size_t
sim_fleet_size(const struct sim_fleet *f)
{
    return f->n;
}

void
sim_fleet_fill(struct sim_fleet *f)
{
    f->full = true;
    for (size_t k = 0; k < f->n; k++)
        if (!f->slots[k].alive)
            start_life(&f->slots[k], k, f->now);
}

void
sim_fleet_noisy(struct sim_fleet *f)
{
    f->noisy = true;
}

/* One second of slot x at ts; false if no sandbox is there. */
static bool
step(struct slot *x, size_t k, int64_t ts, bool full, bool noisy,
     struct pricing_second *s)
{
    if (ts >= x->until) {
        if (x->alive && !full) { /* the sandbox goes; a gap follows */
            x->alive = false;
            x->until = ts + (int64_t)between(&x->rng, 5, 300);
        } else {
            start_life(x, k, ts);
        }
    }
    if (!x->alive)
        return false;
    uint64_t r = next_rand(&x->rng);
    if (r % 3000 == 0)
        x->paused = !x->paused; /* pause or resume, now and then */
    memset(s, 0, sizeof(*s));
    s->ts = ts;
    if ((r >> 40) % 600 == 0)
        x->disk += 4096 * between(&x->rng, 1, 256); /* files written */
    s->disk_bytes = x->disk;
    if (x->burst_left) {
        s->egress_bytes = between(&x->rng, 1000, 2000000);
        x->burst_left--;
    } else if ((noisy || x->shape == BROWSER) && (r >> 20) % 30 == 0) {
        x->burst_left = (uint32_t)between(&x->rng, 1, 10);
    }
    if (x->paused)
        return true;
    uint32_t v = x->vcpu, used;
    uint64_t noise = (r >> 8) % 1000;
    switch (x->shape) {
    case CODING:
        used = (r >> 32) % 10 == 0 ? v / 2 + (uint32_t)(noise * v / 2000)
                                   : (uint32_t)(noise * v / 100000);
        break;
    case EVALUATION:
        used = ((ts / 600) % 2) ? v - (uint32_t)(noise * v / 20000)
                                : (uint32_t)(noise * v / 50000);
        break;
    case CODE_RUN:
        used = (uint32_t)(noise * v / 1000);
        break;
    default:
        used = v / 4 + (uint32_t)(noise * v / 4000);
    }
    if (noisy) { /* all of the vCPUs, by the percent; memory moves */
        used = (uint32_t)((uint64_t)v * between(&x->rng, 0, 100) / 100);
        uint64_t pages = 4096 * between(&x->rng, 1, 8);
        if ((r >> 52) & 1 && x->mem_used + pages <= x->mem)
            x->mem_used += pages;
        else if (x->mem_used >= pages)
            x->mem_used -= pages;
    } else if ((r >> 48) % 16 == 0) { /* memory in use drifts page by page */
        if ((r >> 52) & 1 && x->mem_used + 4096 <= x->mem)
            x->mem_used += 4096;
        else if (x->mem_used >= 4096)
            x->mem_used -= 4096;
    }
    s->vcpu = v;
    s->cpu_used = used > v ? v : used;
    s->mem_bytes = x->mem;
    s->mem_used_bytes = x->mem_used;
    return true;
}

int64_t
sim_fleet_now(const struct sim_fleet *f)
{
    return f->now;
}

size_t
sim_fleet_next(struct sim_fleet *f, uint32_t seconds, sim_fleet_cb *cb,
               void *arg)
{
    size_t total = 0;
    struct pricing_second *run = malloc((seconds ? seconds : 1) * sizeof(*run));
    if (!run)
        return 0;
    /* Slot by slot: each sandbox's seconds of the window together. */
    for (size_t k = 0; k < f->n; k++) {
        struct slot *x = &f->slots[k];
        size_t n = 0;
        char sandbox[PRICING_ID_MAX + 1] = "";
        unsigned generation = x->generation;
        for (uint32_t i = 0; i < seconds; i++) {
            struct pricing_second s;
            bool alive = step(x, k, f->now + i, f->full, f->noisy, &s);
            /* A run ends where the slot has no sandbox or a new one. */
            if (n && (!alive || x->generation != generation)) {
                cb(x->account, sandbox, run, n, arg);
                total += n;
                n = 0;
            }
            if (!alive)
                continue;
            memcpy(sandbox, x->sandbox, sizeof(sandbox));
            generation = x->generation;
            run[n++] = s;
        }
        if (n) {
            cb(x->account, sandbox, run, n, arg);
            total += n;
        }
    }
    f->now += seconds;
    free(run);
    return total;
}
