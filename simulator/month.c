/*
 * month.c - a simulated month of sessions drawn from a profile: when
 * each session starts, how long it lasts, and its spells (busy, idle,
 * paused), each a run of identical seconds.
 *
 * The month is a steady state, not a cold start: sessions are also
 * drawn in the window before the month as long as the longest session,
 * so that those still running at its start are in it, as they would be
 * in any month but the first. Doubles only shape the workload; every
 * spell is whole seconds and bytes before the engine sees it.
 */
#include "sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void
sim_month_init(struct sim_month *m, int year, int month)
{
    memset(m, 0, sizeof(*m));
    m->year = year;
    m->month = month;
    m->start = pricing_days_from_civil(year, month, 1) * 86400;
    m->end = pricing_days_from_civil(month == 12 ? year + 1 : year,
                                     month == 12 ? 1 : month + 1, 1) *
             86400;
}

void
sim_month_release(struct sim_month *m)
{
    if (!m)
        return;
    free(m->sessions);
    free(m->spells);
    free(m->times);
    m->sessions = NULL;
    m->spells = NULL;
    m->times = NULL;
    m->nsessions = m->sessions_cap = m->nspells = m->spells_cap = 0;
    m->times_cap = 0;
}

static int
oom(struct sim_err *e)
{
    snprintf(e->msg, sizeof(e->msg), "out of memory");
    return -1;
}

/* Room for one more spell. */
static int
spell_room(struct sim_month *m, struct sim_err *e)
{
    if (m->nspells < m->spells_cap)
        return 0;
    size_t cap = m->spells_cap ? 2 * m->spells_cap : 1024;
    struct sim_spell *s = realloc(m->spells, cap * sizeof(*s));
    if (!s)
        return oom(e);
    m->spells = s;
    m->spells_cap = cap;
    return 0;
}

/* Whole seconds from a draw: at least 1 (a session or spell exists). */
static uint64_t
seconds_of(double x)
{
    double r = round(x);
    return r < 1 ? 1 : (uint64_t)r;
}

static int
push_spell(struct sim_month *m, const struct sim_profile *p, uint64_t n,
           bool paused, uint32_t cpu_used, struct sim_err *e)
{
    if (spell_room(m, e) < 0)
        return -1;
    struct sim_spell *s = &m->spells[m->nspells++];
    memset(s, 0, sizeof(*s));
    s->seconds = (uint32_t)n;
    s->paused = paused;
    s->disk_bytes = p->disk_bytes;
    if (!paused) {
        s->vcpu = p->vcpu;
        s->cpu_used = cpu_used;
        s->mem_bytes = p->mem_bytes;
        s->mem_used_bytes = p->mem_used_bytes;
    }
    return 0;
}

/*
 * Spreads a session's egress over its seconds: q bytes a second and one
 * more in its first r seconds (total = q x length + r), splitting the
 * spell the r-th second falls in. Billing sums egress, so only the total
 * matters to the price; spreading it keeps each second plausible.
 */
static int
spread_egress(struct sim_month *m, struct sim_session *s, uint64_t total,
              struct sim_err *e)
{
    uint64_t q = total / s->seconds, r = total % s->seconds;
    for (size_t i = s->first; i < s->first + s->nspells; i++)
        m->spells[i].egress_bytes = q;
    for (size_t i = s->first; r > 0 && i < s->first + s->nspells; i++) {
        struct sim_spell *x = &m->spells[i];
        if (x->seconds <= r) {
            x->egress_bytes++;
            r -= x->seconds;
            continue;
        }
        if (spell_room(m, e) < 0)
            return -1;
        x = &m->spells[i];
        memmove(x + 1, x, (m->nspells - i) * sizeof(*x));
        m->nspells++;
        s->nspells++;
        x[0].seconds = (uint32_t)r;
        x[0].egress_bytes++;
        x[1].seconds -= (uint32_t)r;
        r = 0;
    }
    return 0;
}

/* One session starting at t: its length, spells and egress. */
static int
add_session(struct sim_month *m, const struct sim_profile *p, gsl_rng *rng,
            int64_t t, struct sim_err *e)
{
    if (m->nsessions == m->sessions_cap) {
        size_t cap = m->sessions_cap ? 2 * m->sessions_cap : 256;
        struct sim_session *s = realloc(m->sessions, cap * sizeof(*s));
        if (!s)
            return oom(e);
        m->sessions = s;
        m->sessions_cap = cap;
    }
    uint64_t len = seconds_of(sim_dist_draw(&p->length, rng));
    struct sim_session *s = &m->sessions[m->nsessions];
    s->start = t;
    s->first = m->nspells;
    s->seconds = len;
    if (!p->has_activity) {
        /* No activity given: busy at full use throughout. */
        if (push_spell(m, p, len, false, p->vcpu, e) < 0)
            return -1;
    } else {
        bool idle = p->start_idle;
        for (uint64_t left = len; left > 0; idle = !idle) {
            const struct sim_spell_kind *k = idle ? &p->idle : &p->busy;
            uint64_t n = seconds_of(sim_dist_draw(&k->length, rng));
            if (n > left)
                n = left;
            left -= n;
            /* An idle spell past the pause timeout is paused for the
             * rest of it (autopause, or the agent pausing). */
            if (idle && p->pause && n > p->pause_after_s &&
                (p->pause_probability >= 1 ||
                 gsl_rng_uniform(rng) < p->pause_probability)) {
                if (p->pause_after_s > 0 &&
                    push_spell(m, p, p->pause_after_s, false, k->cpu_used, e) <
                        0)
                    return -1;
                if (push_spell(m, p, n - p->pause_after_s, true, 0, e) < 0)
                    return -1;
            } else if (push_spell(m, p, n, false, k->cpu_used, e) < 0) {
                return -1;
            }
        }
    }
    s->nspells = m->nspells - s->first;
    m->nsessions++;
    if (t >= m->start)
        m->started++;
    if (p->has_egress) {
        double mb = sim_dist_draw(&p->egress_mb, rng);
        uint64_t bytes = (uint64_t)llround(mb * 1e6);
        if (bytes && spread_egress(m, s, bytes, e) < 0)
            return -1;
    }
    return 0;
}

static int
add_arrival(struct sim_month *m, const struct sim_profile *p, gsl_rng *rng,
            int64_t t, struct sim_err *e)
{
    for (uint32_t b = 0; b < p->batch; b++)
        if (add_session(m, p, rng, t, e) < 0)
            return -1;
    return 0;
}

static int
by_time(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Whether a session starting at t ends before the month, whatever its
 * length (at most warm); in a first month, whether it starts before. */
static bool
ends_before(const struct sim_month *m, int64_t t, int64_t warm)
{
    return m->first ? t < m->start : t + warm <= m->start;
}

int
sim_month_generate(struct sim_month *m, const struct sim_profile *p,
                   gsl_rng *rng, struct sim_err *e)
{
    m->nsessions = m->nspells = m->started = 0;
    /* Sessions that started this long before the month can reach it;
     * none before a first month. */
    const int64_t warm =
        m->first ? 0 : (int64_t)ceil(sim_dist_upper(&p->length));
    if (p->arrivals == SIM_EVEN) {
        /* per_month arrivals at start + floor(i x D / N), continued
         * backwards over the warm-up window: a periodic month. */
        const int64_t d = m->end - m->start, n = p->per_month;
        const int64_t back = warm * n / d + 2;
        for (int64_t i = -back; i < n; i++) {
            int64_t t =
                i >= 0 ? m->start + i * d / n : m->start - (-i * d + n - 1) / n;
            if (ends_before(m, t, warm))
                continue;
            if (add_arrival(m, p, rng, t, e) < 0)
                return -1;
        }
        return 0;
    }
    /* Poisson: hour by hour, each hour's count at its rate (the daily
     * pattern), arrival times uniform inside the hour. */
    int64_t from = (m->start - warm) / 3600 * 3600;
    for (int64_t h = from; h < m->end; h += 3600) {
        double rate = p->per_hour * p->pattern[(h / 3600) % 24];
        unsigned k = rate > 0 ? gsl_ran_poisson(rng, rate) : 0;
        /* The hour's arrival times, in order: sessions come in order of
         * start, as a meter would see them begin. */
        if (k > m->times_cap) {
            int64_t *t = realloc(m->times, k * sizeof(*t));
            if (!t) {
                snprintf(e->msg, sizeof(e->msg), "out of memory");
                return -1;
            }
            m->times = t;
            m->times_cap = k;
        }
        for (unsigned i = 0; i < k; i++)
            m->times[i] = h + (int64_t)gsl_rng_uniform_int(rng, 3600);
        if (k > 1) /* none may be no array at all: qsort's NULL is UB */
            qsort(m->times, k, sizeof(*m->times), by_time);
        for (unsigned i = 0; i < k; i++) {
            if (ends_before(m, m->times[i], warm))
                continue;
            if (add_arrival(m, p, rng, m->times[i], e) < 0)
                return -1;
        }
    }
    return 0;
}
