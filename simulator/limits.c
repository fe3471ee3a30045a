/*
 * limits.c - plan tiers and limits (rules section 15): what a simulated
 * month measures against a plan (sandboxes running at once, the longest
 * stretch running without a pause, the disk held at once), the check of
 * a month against a book's limits, add-ons and caps, and the messages
 * that name a broken limit (the tier chosen among a provider's books,
 * from the results over the months, is montecarlo.c's).
 *
 * The limits are the book's, read through pricing_book_limits: nothing
 * here restates a price. Rating ignores them, so the engine's statement
 * is never changed; an add-on's fee is the simulator's addition to the
 * month's cost (montecarlo.c adds it as an "addon" line). Comparisons
 * with a limit are exact: integers against the book's decimals.
 */
#include "sim_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const sim_limit_names[SIM_NLIMITS] = {
    "concurrency",    "session_length", "runs",    "cpu_hours",
    "memory_hours",   "egress_gb",      "storage", "sandbox_vcpu",
    "sandbox_memory", "sandbox_disk",
};

bool
sim_limit_of_month(enum sim_limit l)
{
    return l == SIM_LIMIT_CONCURRENCY || l == SIM_LIMIT_SESSION ||
           l == SIM_LIMIT_STORAGE || l >= SIM_LIMIT_SANDBOX_VCPU;
}

uint32_t
sim_book_cut(const struct sim_profile *p, const struct pricing_book *b)
{
    const struct pricing_limits *l = pricing_book_limits(b);
    if (!p || !p->has_activity || p->pause || !l->pauses)
        return SIM_NO_CUT;
    return l->pause_after_s;
}

/* ---- measuring a month ------------------------------------------------- */

/*
 * Sandboxes running at once and disk held at once are the largest
 * running sum of changes (+n at a span's start, -n at its end) in time
 * order. Changes at one second are summed into one: within a second the
 * sum only matters once all of them are in (ends before starts, or the
 * other way, give the same largest value at the second's end, which is
 * the largest), so a second where one session ends as another starts
 * cancels out.
 */
static int
by_time(const void *x, const void *y)
{
    const struct sim_edge *a = x, *b = y;
    return (a->t > b->t) - (a->t < b->t);
}

/* Sorts the edges, sums those of a second, and folds those before
 * `before` into level and top: no change can come before it any more. */
static void
compact(struct sim_peak *k, int64_t before)
{
    if (k->n > 1) /* none may be no array at all: qsort's NULL is UB */
        qsort(k->e, k->n, sizeof(*k->e), by_time);
    size_t n = 0;
    for (size_t i = 0; i < k->n; i++) {
        if (n > 0 && k->e[n - 1].t == k->e[i].t)
            k->e[n - 1].delta += k->e[i].delta;
        else
            k->e[n++] = k->e[i];
    }
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (k->e[i].t >= before) {
            k->e[kept++] = k->e[i];
            continue;
        }
        k->level += k->e[i].delta;
        if (k->level > k->top)
            k->top = k->level;
    }
    k->n = kept;
}

static int
over(const struct sim_measure *x, const struct sim_month *m, size_t bytes,
     struct sim_err *e)
{
    const struct sim_profile *p = m->p;
    if (p && p->arrivals == SIM_CONCURRENT)
        return sim_mem_over(x->mem, bytes, e,
                            "sessions.concurrent: %u keeps more than %zu "
                            "starts and ends of sandboxes ahead at once",
                            p->concurrent, x->running.cap);
    if (p && p->arrivals == SIM_POISSON)
        return sim_mem_over(x->mem, bytes, e,
                            "sessions.poisson.per_hour: %g with sessions of "
                            "up to %.0f s keeps more than %zu starts and ends "
                            "of sandboxes ahead at once",
                            p->per_hour, sim_dist_upper(&p->length),
                            x->running.cap);
    return sim_mem_over(x->mem, bytes, e,
                        "sessions.per_month: %llu with sessions of up to "
                        "%.0f s keeps more than %zu starts and ends of "
                        "sandboxes ahead at once",
                        (unsigned long long)(p ? p->per_month : 0),
                        p ? sim_dist_upper(&p->length) : 0.0, x->running.cap);
}

/* Adds [a, z) clipped to the month as two edges of delta; before is
 * where folding may stop (INT64_MIN: never). */
static int
add_span(struct sim_measure *x, struct sim_peak *k, const struct sim_month *m,
         int64_t a, int64_t z, int64_t delta, int64_t before, struct sim_err *e)
{
    if (a < m->start)
        a = m->start;
    if (z > m->end)
        z = m->end;
    if (a >= z || delta == 0)
        return 0;
    if (k->n + 2 > k->cap) {
        compact(k, before);
        /* Grown once half full after folding, so that each fold is
         * paid for by as many edges again. */
        if (k->n + 2 > k->cap / 2) {
            int rc = sim_grow(x->mem, &k->e, &k->cap, k->cap + 2, sizeof(*k->e),
                              1024);
            if (rc == -2)
                return over(x, m, 2 * k->cap * sizeof(*k->e), e);
            if (rc < 0) {
                snprintf(e->msg, sizeof(e->msg), "out of memory");
                return -1;
            }
        }
    }
    k->e[k->n++] = (struct sim_edge){a, delta};
    k->e[k->n++] = (struct sim_edge){z, -delta};
    return 0;
}

void
sim_measure_init(struct sim_measure *x, struct sim_mem *mem, bool in_order,
                 uint32_t cut)
{
    memset(x, 0, sizeof(*x));
    x->mem = mem;
    x->in_order = in_order;
    x->cut = cut;
}

int
sim_measure_add(struct sim_measure *x, const struct sim_month *m,
                const struct sim_session *s, struct sim_err *e)
{
    /* In order of start, no change can come before this session's. */
    int64_t before = !x->in_order          ? INT64_MIN
                     : s->start > m->start ? s->start
                                           : m->start;
    /* Running stretches: consecutive seconds not paused (a spell runs
     * its first run seconds under the cut, and pauses the rest). */
    int64_t t = s->start, from = 0;
    bool running = false;
    for (size_t i = 0; i <= s->nspells; i++) {
        uint32_t len = 0, run = 0;
        if (i < s->nspells) {
            const struct sim_spell *sp = &m->spells[s->first + i];
            len = sp->seconds;
            run = sim_spell_running(sp, x->cut);
            if (run > 0 && sp->vcpu > x->u.largest_vcpu)
                x->u.largest_vcpu = sp->vcpu;
            if (run > 0 && sp->mem_bytes > x->u.largest_mem_bytes)
                x->u.largest_mem_bytes = sp->mem_bytes;
        }
        if (run > 0 && !running) {
            running = true;
            from = t;
        }
        if (running && (i == s->nspells || run < len)) {
            int64_t to = t + run;
            running = false;
            if (to > m->start && from < m->end &&
                (uint64_t)(to - from) > x->u.longest_run_s)
                x->u.longest_run_s = (uint64_t)(to - from);
            if (add_span(x, &x->running, m, from, to, 1, before, e) < 0)
                return -1;
        }
        t += len;
    }
    /* Disk held: runs of spells with the same disk, in any state. */
    t = from = s->start;
    for (size_t i = 0; i < s->nspells; i++) {
        const struct sim_spell *sp = &m->spells[s->first + i];
        if (sp->disk_bytes > x->u.largest_disk_bytes)
            x->u.largest_disk_bytes = sp->disk_bytes;
        t += sp->seconds;
        if (i + 1 < s->nspells &&
            m->spells[s->first + i + 1].disk_bytes == sp->disk_bytes)
            continue;
        if (add_span(x, &x->disk, m, from, t,
                     sp->disk_bytes > INT64_MAX ? INT64_MAX
                                                : (int64_t)sp->disk_bytes,
                     before, e) < 0)
            return -1;
        from = t;
    }
    return 0;
}

static uint64_t
top(struct sim_peak *k)
{
    compact(k, INT64_MAX);
    return k->top > (pricing_i128)UINT64_MAX ? UINT64_MAX : (uint64_t)k->top;
}

int
sim_measure_end(struct sim_measure *x, struct sim_month_use *u,
                struct sim_err *e)
{
    (void)e;
    x->u.peak_running = top(&x->running);
    x->u.peak_disk_bytes = top(&x->disk);
    *u = x->u;
    return 0;
}

void
sim_measure_release(struct sim_measure *x)
{
    if (!x)
        return;
    free(x->running.e);
    free(x->disk.e);
    if (x->mem)
        x->mem->used -=
            (x->running.cap + x->disk.cap) * sizeof(struct sim_edge);
    memset(x, 0, sizeof(*x));
}

int
sim_month_measure(const struct sim_month *m, uint32_t cut,
                  struct sim_month_use *u, struct sim_err *e)
{
    struct sim_measure x;
    int rc = -1;
    sim_measure_init(&x, NULL, false, cut);
    memset(u, 0, sizeof(*u));
    for (size_t k = 0; k < m->nsessions; k++)
        if (sim_measure_add(&x, m, &m->sessions[k], e) < 0)
            goto out;
    rc = sim_measure_end(&x, u, e);
out:
    sim_measure_release(&x);
    return rc;
}

/* ---- checking a month against a plan ---------------------------------- */

/* The decimal of a whole number. */
static struct pricing_dec
whole(uint64_t k)
{
    return (struct pricing_dec){(pricing_i128)k * PRICING_ONE};
}

/* q units as a decimal of display units of `per` units each, rounded
 * half to even to 12 decimals; saturated far beyond any real month. */
static struct pricing_dec
in_units(pricing_u128 q, pricing_u128 per)
{
    const pricing_u128 one = (pricing_u128)PRICING_ONE;
    pricing_u128 i = q / per, r = q % per;
    if (i > ((pricing_u128)1 << 125) / one)
        return (struct pricing_dec){(pricing_i128)((pricing_u128)1 << 125)};
    /* r < per <= 2^64, so r x 10^12 fits. */
    pricing_u128 f = r * one / per, rest = r * one % per;
    if (2 * rest > per || (2 * rest == per && (f & 1)))
        f++;
    return (struct pricing_dec){(pricing_i128)(i * one + f)};
}

/* Whether q units are more than lim display units of `per` units each:
 * q / per > lim, exactly (no product that could overflow). */
static bool
above(pricing_u128 q, pricing_u128 per, struct pricing_dec lim)
{
    const pricing_u128 one = (pricing_u128)PRICING_ONE;
    pricing_u128 qi = q / per, qr = q % per;
    pricing_u128 li = (pricing_u128)lim.v / one, lf = (pricing_u128)lim.v % one;
    /* qr < per and lf < 10^12, per <= 2^64: both products fit. */
    return qi > li || (qi == li && qr * one > lf * per);
}

/* The cap behind each limit from SIM_LIMIT_RUNS on. */
static const enum pricing_cap cap_of[SIM_NLIMITS] = {
    [SIM_LIMIT_RUNS] = PRICING_CAP_RUNS,
    [SIM_LIMIT_CPU_HOURS] = PRICING_CAP_CPU_HOURS,
    [SIM_LIMIT_MEMORY_HOURS] = PRICING_CAP_MEMORY_HOURS,
    [SIM_LIMIT_EGRESS_GB] = PRICING_CAP_EGRESS_GB,
    [SIM_LIMIT_STORAGE] = PRICING_CAP_STORAGE,
};

static const char *
unit_name(uint64_t bytes)
{
    return bytes == 1000000000 ? "GB" : "GiB";
}

/* The unit of the largest sandbox's memory: the book's memory unit,
 * or a fixed size's own where it stands for the limit. */
static uint64_t
sandbox_mem_unit(const struct pricing_limits *l)
{
    return !l->has_sandbox_max[1] && l->has_fixed_size ? l->fixed_unit_bytes
                                                       : l->memory_unit_bytes;
}

bool
sim_limit_of(const struct pricing_book *b, enum sim_limit lim,
             struct pricing_dec *value, const char **unit)
{
    const struct pricing_limits *l = pricing_book_limits(b);
    bool has = false;
    struct pricing_dec v = {0};
    const char *u = "";
    switch (lim) {
    case SIM_LIMIT_CONCURRENCY:
        has = l->max_concurrency != 0;
        v = whole(l->max_concurrency);
        u = "sandboxes";
        break;
    case SIM_LIMIT_SESSION:
        has = l->max_session_s != 0;
        v = whole(l->max_session_s);
        u = "s";
        break;
    case SIM_LIMIT_RUNS:
    case SIM_LIMIT_CPU_HOURS:
    case SIM_LIMIT_MEMORY_HOURS:
    case SIM_LIMIT_EGRESS_GB:
    case SIM_LIMIT_STORAGE:
        has = l->has_cap[cap_of[lim]];
        v = l->cap[cap_of[lim]];
        u = lim == SIM_LIMIT_RUNS        ? "runs"
            : lim == SIM_LIMIT_CPU_HOURS ? "CPU-hours"
            : lim == SIM_LIMIT_MEMORY_HOURS
                ? (l->memory_unit_bytes == 1000000000 ? "GB-hours"
                                                      : "GiB-hours")
            : lim == SIM_LIMIT_EGRESS_GB ? "GB"
                                         : unit_name(l->storage_unit_bytes);
        break;
    case SIM_LIMIT_SANDBOX_VCPU:
    case SIM_LIMIT_SANDBOX_MEMORY:
    case SIM_LIMIT_SANDBOX_DISK:
        has = l->has_sandbox_max[lim - SIM_LIMIT_SANDBOX_VCPU];
        v = l->sandbox_max[lim - SIM_LIMIT_SANDBOX_VCPU];
        u = lim == SIM_LIMIT_SANDBOX_VCPU ? "vCPU"
            : lim == SIM_LIMIT_SANDBOX_MEMORY
                ? unit_name(sandbox_mem_unit(l))
                : unit_name(l->storage_unit_bytes);
        /* The one size a provider runs is its largest too, exactly (in
         * the size's own unit). */
        if (!has && l->has_fixed_size && lim == SIM_LIMIT_SANDBOX_VCPU) {
            has = true;
            v.v =
                (pricing_i128)l->fixed_vcpu * (PRICING_ONE / PRICING_CPU_UNIT);
        } else if (!has && l->has_fixed_size &&
                   lim == SIM_LIMIT_SANDBOX_MEMORY) {
            has = true;
            v.v = (pricing_i128)l->fixed_mem_bytes * PRICING_ONE /
                  (pricing_i128)l->fixed_unit_bytes;
        }
        break;
    case SIM_NLIMITS:
        break;
    }
    if (value)
        *value = v;
    if (unit)
        *unit = u;
    return has;
}

/* What one limit compares: the month's quantity in its own units, and
 * those units in one of the limit's (0: not measured). */
struct measure {
    pricing_u128 q, per;
};

/* The measures of every limit but concurrency, from u and q (NULL: the
 * caps on the statement's quantities are not measured). */
static void
measures(const struct pricing_limits *l, const struct sim_month_use *u,
         const struct pricing_quantities *q, struct measure *m)
{
    memset(m, 0, SIM_NLIMITS * sizeof(*m));
    m[SIM_LIMIT_SESSION] = (struct measure){u->longest_run_s, 1};
    m[SIM_LIMIT_STORAGE] =
        (struct measure){u->peak_disk_bytes, l->storage_unit_bytes};
    m[SIM_LIMIT_SANDBOX_VCPU] =
        (struct measure){u->largest_vcpu, PRICING_CPU_UNIT};
    m[SIM_LIMIT_SANDBOX_MEMORY] =
        (struct measure){u->largest_mem_bytes, sandbox_mem_unit(l)};
    m[SIM_LIMIT_SANDBOX_DISK] =
        (struct measure){u->largest_disk_bytes, l->storage_unit_bytes};
    if (!q)
        return;
    m[SIM_LIMIT_RUNS] = (struct measure){q->runs, 1};
    m[SIM_LIMIT_CPU_HOURS] =
        (struct measure){q->cpu_gross, (pricing_u128)PRICING_CPU_UNIT * 3600};
    m[SIM_LIMIT_MEMORY_HOURS] = (struct measure){
        q->mem_gross, (pricing_u128)l->memory_unit_bytes * 3600};
    m[SIM_LIMIT_EGRESS_GB] = (struct measure){q->egress, 1000000000};
}

void
sim_plan_check(const struct pricing_book *b, const struct sim_month_use *u,
               const struct pricing_quantities *q, struct sim_plan_month *out)
{
    const struct pricing_limits *l = pricing_book_limits(b);
    memset(out, 0, sizeof(*out));
    out->addon = -1;
    /* Concurrency: the plan, else the cheapest add-on that fits. */
    out->used[SIM_LIMIT_CONCURRENCY] = whole(u->peak_running);
    if (l->max_concurrency && u->peak_running > l->max_concurrency) {
        for (size_t k = 0; k < l->naddons; k++) {
            const struct pricing_addon *a = &l->addons[k];
            if (a->max_concurrency >= u->peak_running &&
                (out->addon < 0 ||
                 pricing_dec_cmp(a->monthly_fee, out->addon_fee) < 0)) {
                out->addon = (int)k;
                out->addon_fee = a->monthly_fee;
            }
        }
        if (out->addon < 0)
            out->broken |= 1u << SIM_LIMIT_CONCURRENCY;
    }
    struct measure m[SIM_NLIMITS];
    measures(l, u, q, m);
    for (int i = SIM_LIMIT_SESSION; i < SIM_NLIMITS; i++) {
        struct pricing_dec limit;
        if (!m[i].per)
            continue; /* a cap of the statement, and no statement */
        out->used[i] = in_units(m[i].q, m[i].per);
        if (sim_limit_of(b, (enum sim_limit)i, &limit, NULL) &&
            above(m[i].q, m[i].per, limit))
            out->broken |= 1u << i;
    }
}

/* ---- messages ----------------------------------------------------------- */

/* d as text with its trailing zeros cut: "9.5", "5000". */
static void
plain(struct pricing_dec d, unsigned decimals, char *buf, size_t n)
{
    pricing_dec_format(d, decimals, buf, n);
    if (!strchr(buf, '.'))
        return;
    char *end = buf + strlen(buf);
    while (end[-1] == '0')
        *--end = '\0';
    if (end[-1] == '.')
        end[-1] = '\0';
}

/* A measured value shown beside the limit it breaks: to 2 decimals, or
 * as many more as it takes not to look equal to the limit ("5.0001
 * CPU-hours exceed a cap of 5", never "5 exceed 5"). */
static void
shown(struct pricing_dec used, struct pricing_dec limit, char *buf, size_t n)
{
    unsigned d = 2;
    struct pricing_dec r;
    while (d < PRICING_SCALE && pricing_dec_round(used, d, &r) == PRICING_OK &&
           pricing_dec_cmp(used, limit) > 0 && pricing_dec_cmp(r, limit) <= 0)
        d++;
    plain(used, d, buf, n);
}

/* Seconds as hours, minutes and seconds: "3 h", "1 h 30 min", "45 min",
 * "1 h 1 s". */
static void
duration(struct pricing_dec secs, char *buf, size_t n)
{
    uint64_t s = (uint64_t)(secs.v / PRICING_ONE);
    uint64_t h = s / 3600, min = s / 60 % 60, sec = s % 60;
    int k = 0;
    buf[0] = '\0';
    if (h)
        k += snprintf(buf + k, n - (size_t)k, "%llu h", (unsigned long long)h);
    if (min && (size_t)k < n)
        k += snprintf(buf + k, n - (size_t)k, "%s%llu min", k ? " " : "",
                      (unsigned long long)min);
    if ((sec || s == 0) && (size_t)k < n)
        snprintf(buf + k, n - (size_t)k, "%s%llu s", k ? " " : "",
                 (unsigned long long)sec);
}

size_t
sim_limit_message(const struct pricing_book *b, enum sim_limit lim,
                  struct pricing_dec used, char *buf, size_t n)
{
    const struct pricing_limits *l = pricing_book_limits(b);
    const char *id = pricing_book_id(b);
    char u[64], v[64];
    int k = 0;
    switch (lim) {
    case SIM_LIMIT_CONCURRENCY: {
        plain(used, 0, u, sizeof(u));
        const struct pricing_addon *big = NULL;
        for (size_t i = 0; i < l->naddons; i++)
            if (!big || l->addons[i].max_concurrency > big->max_concurrency)
                big = &l->addons[i];
        if (big)
            k = snprintf(buf, n,
                         "%s sandboxes at once exceed %s's %u (no add-on "
                         "fits: the largest, %s, allows %u)",
                         u, id, l->max_concurrency, big->name,
                         big->max_concurrency);
        else
            k = snprintf(buf, n,
                         "%s sandboxes at once exceed %s's %u (no add-on "
                         "fits)",
                         u, id, l->max_concurrency);
        break;
    }
    case SIM_LIMIT_SESSION:
        duration(used, u, sizeof(u));
        duration(whole(l->max_session_s), v, sizeof(v));
        k = snprintf(buf, n, "sessions of %s exceed a %s session limit on %s",
                     u, v, id);
        break;
    case SIM_LIMIT_SANDBOX_VCPU:
    case SIM_LIMIT_SANDBOX_MEMORY:
    case SIM_LIMIT_SANDBOX_DISK: {
        static const char *const what[] = {"vCPU", "of memory", "of disk"};
        struct pricing_dec max;
        const char *unit;
        sim_limit_of(b, lim, &max, &unit);
        bool vcpu = lim == SIM_LIMIT_SANDBOX_VCPU;
        shown(used, max, u, sizeof(u));
        plain(max, PRICING_SCALE, v, sizeof(v));
        k = snprintf(buf, n,
                     "a sandbox of %s %s%s%s exceeds %s's largest, %s %s", u,
                     vcpu ? "" : unit, vcpu ? "" : " ",
                     what[lim - SIM_LIMIT_SANDBOX_VCPU], id, v, unit);
        break;
    }
    default: {
        /* What is counted, after the unit for memory and storage. */
        static const char *const what[SIM_NLIMITS] = {
            [SIM_LIMIT_RUNS] = "runs",
            [SIM_LIMIT_CPU_HOURS] = "CPU-hours",
            [SIM_LIMIT_MEMORY_HOURS] = " of memory",
            [SIM_LIMIT_EGRESS_GB] = "GB of egress",
            [SIM_LIMIT_STORAGE] = " of storage at once",
        };
        struct pricing_dec cap;
        const char *unit;
        if (lim < SIM_LIMIT_RUNS || lim >= SIM_NLIMITS) {
            k = snprintf(buf, n, "an unknown limit on %s", id);
            break;
        }
        sim_limit_of(b, lim, &cap, &unit);
        bool named = lim == SIM_LIMIT_MEMORY_HOURS || lim == SIM_LIMIT_STORAGE;
        shown(used, cap, u, sizeof(u));
        plain(cap, PRICING_SCALE, v, sizeof(v));
        k = snprintf(buf, n, "%s %s%s exceed %s's cap of %s", u,
                     named ? unit : "", what[lim], id, v);
        break;
    }
    }
    return k < 0 ? 0 : (size_t)k;
}
