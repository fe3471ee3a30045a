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
#include "sim_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>

void
sim_month_init(struct sim_month *m, int year, int month)
{
    memset(m, 0, sizeof(*m));
    sim_month_period(m, year, month);
}

void
sim_month_period(struct sim_month *m, int year, int month)
{
    /* Floored: month 0 is the December before, 13 the January after. */
    int k = month - 1, up = k >= 0 ? k / 12 : -((11 - k) / 12);
    year += up;
    month = k - 12 * up + 1;
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
    if (m->mem)
        m->mem->used -= (m->sessions_cap * sizeof(*m->sessions) +
                         m->spells_cap * sizeof(*m->spells) +
                         m->times_cap * sizeof(*m->times));
    m->sessions = NULL;
    m->spells = NULL;
    m->times = NULL;
    m->nsessions = m->sessions_cap = m->nspells = m->spells_cap = 0;
    m->times_cap = 0;
}

int
sim_grow(struct sim_mem *mem, void *pp, size_t *cap, size_t need, size_t size,
         size_t min)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : min;
    while (n < need && n <= SIZE_MAX / 2 / size)
        n *= 2;
    if (n < need)
        return -1;
    size_t more = (n - *cap) * size;
    if (mem && (mem->used > mem->limit || more > mem->limit - mem->used))
        return -2;
    /* Through memcpy: *pp is an array pointer of any type. */
    void *p, *q;
    memcpy(&p, pp, sizeof(p));
    if (!(q = realloc(p, n * size)))
        return -1;
    memcpy(pp, &q, sizeof(q));
    if (mem)
        mem->used += more;
    *cap = n;
    return 0;
}

int
sim_mem_over(const struct sim_mem *mem, size_t bytes, struct sim_err *e,
             const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
    va_end(ap);
    /* What does not fit is cut, the figures after it kept in view. */
    size_t at = n < 0 ? 0 : (size_t)n < 256 ? (size_t)n : 256;
    snprintf(e->msg + at, sizeof(e->msg) - at,
             " (%zu MiB): past --memory-limit %llu MiB (%zu %s a thread, "
             "%u thread%s); raise it, or use fewer --threads",
             (bytes + (1u << 20) - 1) >> 20, (unsigned long long)mem->limit_mib,
             mem->limit >> (mem->limit < (1u << 20) ? 10 : 20),
             mem->limit < (1u << 20) ? "KiB" : "MiB", mem->threads,
             mem->threads == 1 ? "" : "s");
    return -1;
}

static int
oom(struct sim_err *e)
{
    snprintf(e->msg, sizeof(e->msg), "out of memory");
    return -1;
}

/* Room for one more spell of a session of len seconds. */
static int
spell_room(struct sim_month *m, uint64_t len, struct sim_err *e)
{
    int rc = sim_grow(m->mem, &m->spells, &m->spells_cap, m->nspells + 1,
                      sizeof(*m->spells), 1024);
    if (rc == -2)
        return sim_mem_over(
            m->mem, 2 * m->spells_cap * sizeof(*m->spells), e,
            "sessions.length: a session of %llu s needs more than %zu spells "
            "of activity, %zu bytes each",
            (unsigned long long)len, m->spells_cap, sizeof(*m->spells));
    return rc < 0 ? oom(e) : 0;
}

/* E[min(X, c)] for X drawn from d before its clamp to d->max. */
static double
mean_below(const struct sim_dist *d, double c)
{
    if (c <= 0)
        return 0;
    switch (d->kind) {
    case SIM_FIXED:
        return d->value < c ? d->value : c;
    case SIM_LOGNORMAL: {
        double z = (log(c) - d->mu) / d->sigma;
        return exp(d->mu + d->sigma * d->sigma / 2) *
                   gsl_cdf_ugaussian_P(z - d->sigma) +
               c * gsl_cdf_ugaussian_Q(z);
    }
    case SIM_EXPONENTIAL:
        return d->mean * -expm1(-c / d->mean);
    case SIM_HISTOGRAM:
        break;
    }
    /* Uniform inside each bin, bins chosen by weight. */
    double sum = 0, w = 0;
    for (size_t i = 0; i < d->nbins; i++) {
        const struct sim_bin *b = &d->bins[i];
        double m = c <= b->from ? c
                   : c >= b->to
                       ? (b->from + b->to) / 2
                       : ((c * c - b->from * b->from) / 2 + c * (b->to - c)) /
                             (b->to - b->from);
        sum += b->weight * m;
        w += b->weight;
    }
    return sum / w;
}

/* What sim_dist_draw(d) is expected to be, and its part past a. */
static double
dist_mean(const struct sim_dist *d)
{
    return mean_below(d, d->max);
}

static double
dist_mean_past(const struct sim_dist *d, double a)
{
    return a >= d->max ? 0 : dist_mean(d) - mean_below(d, a);
}

/* E[(min(X', hi) - lo)+], X' = sim_dist_draw(d): the part of [0, X') in
 * [lo, hi). */
static double
dist_mean_part(const struct sim_dist *d, double lo, double hi)
{
    hi = hi < d->max ? hi : d->max;
    return lo >= hi ? 0 : mean_below(d, hi) - mean_below(d, lo > 0 ? lo : 0);
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
    if (spell_room(m, m->sessions[m->nsessions].seconds, e) < 0)
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
        if (spell_room(m, s->seconds, e) < 0)
            return -1;
        x = &m->spells[i];
        memmove(x + 1, x, (m->nspells - i) * sizeof(*x));
        m->nspells++;
        s->nspells++;
        x[0].seconds = (uint32_t)r;
        x[0].egress_bytes++;
        x[1].seconds -= (uint32_t)r;
        if (x[1].idle_run)
            x[1].idle_off += (uint32_t)r;
        r = 0;
    }
    return 0;
}

/* Whether an idle spell of n seconds, past the timeout, is paused: a
 * coin of the profile's probability (its control counts the seconds
 * the coin decides). */
static bool
pause_decided(struct sim_month *m, const struct sim_profile *p, uint64_t n)
{
    if (p->pause_probability >= 1)
        return true;
    bool yes = gsl_rng_uniform(m->rng) < p->pause_probability;
    m->control[SIM_CV_COIN] +=
        ((yes ? 1 : 0) - p->pause_probability) * (double)(n - p->pause_after_s);
    return yes;
}

/* The sessions' control for a session starting at t of drawn length x:
 * its part in the month, less what that part is expected to be for a
 * session starting at t. */
static void
length_control(struct sim_month *m, const struct sim_profile *p, int64_t t,
               double x)
{
    double lo = t < m->start ? (double)(m->start - t) : 0,
           hi = (double)(m->end - t);
    m->control[SIM_CV_LENGTH] +=
        fmax(fmin(x, hi) - lo, 0) - (lo == 0 && hi >= p->length.max
                                         ? m->e_length
                                         : dist_mean_part(&p->length, lo, hi));
}

/* One session starting at t, of the length drawn: its spells and
 * egress. */
static int
add_session(struct sim_month *m, const struct sim_profile *p, gsl_rng *rng,
            int64_t t, double drawn, struct sim_err *e)
{
    int rc = sim_grow(m->mem, &m->sessions, &m->sessions_cap, m->nsessions + 1,
                      sizeof(*m->sessions), 256);
    if (rc == -2)
        return sim_mem_over(m->mem, 2 * m->sessions_cap * sizeof(*m->sessions),
                            e, "sessions: %zu drawn at once", m->nsessions + 1);
    if (rc < 0)
        return oom(e);
    uint64_t len = seconds_of(drawn);
    length_control(m, p, t, drawn);
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
            double x = sim_dist_draw(&k->length, rng);
            uint64_t n = seconds_of(x);
            if (n > left)
                n = left;
            left -= n;
            if (!idle) {
                m->control[SIM_CV_BUSY] += x - m->e_busy;
            } else {
                m->control[SIM_CV_IDLE] += x - m->e_idle;
                if (p->pause)
                    m->control[SIM_CV_PAST] +=
                        fmax(x - p->pause_after_s, 0) - m->e_past;
            }
            /* An idle spell past the pause timeout is paused for the
             * rest of it (autopause, or the agent pausing). */
            if (idle && p->pause && n > p->pause_after_s &&
                pause_decided(m, p, n)) {
                if (p->pause_after_s > 0 &&
                    push_spell(m, p, p->pause_after_s, false, k->cpu_used, e) <
                        0)
                    return -1;
                if (push_spell(m, p, n - p->pause_after_s, true, 0, e) < 0)
                    return -1;
            } else if (push_spell(m, p, n, false, k->cpu_used, e) < 0) {
                return -1;
            } else if (idle && !p->pause) {
                /* Paused, or not, by each book's autopause. */
                m->spells[m->nspells - 1].idle_run = (uint32_t)n;
            }
        }
    }
    s->nspells = m->nspells - s->first;
    m->nsessions++;
    if (t >= m->start)
        m->started++;
    if (p->has_egress) {
        double mb = sim_dist_draw(&p->egress_mb, rng);
        m->control[SIM_CV_EGRESS] += mb - m->e_egress;
        uint64_t bytes = (uint64_t)llround(mb * 1e6);
        if (bytes && spread_egress(m, s, bytes, e) < 0)
            return -1;
    }
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

void
sim_month_begin(struct sim_month *m, const struct sim_profile *p, gsl_rng *rng)
{
    m->p = p;
    m->rng = rng;
    m->nsessions = m->nspells = m->started = m->dropped = 0;
    m->hour_n = m->hour_i = 0;
    m->slots = 0;
    m->slots_ready = false;
    m->batch_left = 0;
    memset(m->control, 0, sizeof(m->control));
    m->e_length = dist_mean(&p->length);
    m->e_busy = p->has_activity ? dist_mean(&p->busy.length) : 0;
    m->e_idle = p->has_activity ? dist_mean(&p->idle.length) : 0;
    m->e_past =
        p->pause ? dist_mean_past(&p->idle.length, p->pause_after_s) : 0;
    m->e_egress = p->has_egress ? dist_mean(&p->egress_mb) : 0;
    /* Sessions that started this long before the month can reach it;
     * none before a first month. */
    m->warm = m->first ? 0 : (int64_t)ceil(sim_dist_upper(&p->length));
    /* Concurrent sandboxes run from this long before the month, 20
     * sessions of the mean length, enough for their starts to lose the
     * phase they began with (or the longest session, if shorter). */
    if (p->arrivals == SIM_CONCURRENT && m->warm > 20 * ceil(m->e_length))
        m->warm = 20 * (int64_t)ceil(m->e_length);
    if (p->arrivals == SIM_EVEN) {
        /* per_month arrivals at start + floor(i x D / N), continued
         * backwards over the warm-up window: a periodic month. */
        m->next = -(m->warm * (int64_t)p->per_month / (m->end - m->start) + 2);
    } else {
        m->next = (m->start - m->warm) / 3600 * 3600;
    }
}

/* Poisson: the next hour's count at its rate (the daily pattern),
 * arrival times uniform inside the hour, in order: sessions come in
 * order of start, as a meter would see them begin. */
static int
draw_hour(struct sim_month *m, struct sim_err *e)
{
    const struct sim_profile *p = m->p;
    int64_t h = m->next;
    m->next += 3600;
    double rate = p->per_hour * p->pattern[(h / 3600) % 24];
    unsigned k = rate > 0 ? gsl_ran_poisson(m->rng, rate) : 0;
    if (h >= m->start)
        m->control[SIM_CV_ARRIVALS] += k - rate;
    int rc =
        sim_grow(m->mem, &m->times, &m->times_cap, k, sizeof(*m->times), 64);
    if (rc == -2)
        return sim_mem_over(m->mem, 2 * (size_t)k * sizeof(*m->times), e,
                            "sessions.poisson.per_hour: an hour of %u "
                            "arrivals",
                            k);
    if (rc < 0)
        return oom(e);
    for (unsigned i = 0; i < k; i++)
        m->times[i] = h + (int64_t)gsl_rng_uniform_int(m->rng, 3600);
    if (k > 1) /* none may be no array at all: qsort's NULL is UB */
        qsort(m->times, k, sizeof(*m->times), by_time);
    m->hour_n = k;
    m->hour_i = 0;
    return 0;
}

/* The next arrival that can reach the month, into m->at: 1, or 0 after
 * the month's last. */
static int
next_arrival(struct sim_month *m, struct sim_err *e)
{
    const struct sim_profile *p = m->p;
    for (;;) {
        int64_t t;
        if (p->arrivals == SIM_EVEN) {
            const int64_t d = m->end - m->start, n = p->per_month;
            if (m->next >= n)
                return 0;
            int64_t i = m->next++;
            t = i >= 0 ? m->start + i * d / n : m->start - (-i * d + n - 1) / n;
        } else {
            while (m->hour_i == m->hour_n) {
                if (m->next >= m->end)
                    return 0;
                if (draw_hour(m, e) < 0)
                    return -1;
            }
            t = m->times[m->hour_i++];
        }
        if (!ends_before(m, t, m->warm)) {
            m->at = t;
            return 1;
        }
    }
}

/* Restores the heap of next starts h[0, n) from i down. */
static void
sift_down(int64_t *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, min = i;
        if (l < n && h[l] < h[min])
            min = l;
        if (r < n && h[r] < h[min])
            min = r;
        if (min == i)
            return;
        int64_t x = h[i];
        h[i] = h[min];
        h[min] = x;
        i = min;
    }
}

/* Concurrent sandboxes' first starts: at the month's start in a first
 * month; else warm before it, each less a whole second uniform in [0,
 * the mean length), so that sandboxes of fixed lengths do not start
 * together. */
static int
start_slots(struct sim_month *m, struct sim_err *e)
{
    const struct sim_profile *p = m->p;
    size_t n = p->concurrent;
    int rc =
        sim_grow(m->mem, &m->times, &m->times_cap, n, sizeof(*m->times), 64);
    if (rc == -2)
        return sim_mem_over(m->mem, 2 * n * sizeof(*m->times), e,
                            "sessions.concurrent: %zu sandboxes", n);
    if (rc < 0)
        return oom(e);
    unsigned long spread = (unsigned long)ceil(m->e_length);
    for (size_t i = 0; i < n; i++)
        m->times[i] = m->first
                          ? m->start
                          : m->start - m->warm -
                                (int64_t)gsl_rng_uniform_int(m->rng, spread);
    for (size_t i = n / 2; i-- > 0;)
        sift_down(m->times, n, i);
    m->slots = n;
    m->slots_ready = true;
    return 0;
}

/* Concurrent: the sandbox that starts its next session soonest starts
 * it, and its next one is due when this one ends. Sessions that end
 * before the month are drawn (their lengths decide what follows) but
 * not kept. */
static int
draw_slot(struct sim_month *m, struct sim_err *e)
{
    const struct sim_profile *p = m->p;
    if (!m->slots_ready && start_slots(m, e) < 0)
        return -1;
    for (;;) {
        int64_t t = m->times[0];
        if (t >= m->end)
            return 0;
        double x = sim_dist_draw(&p->length, m->rng);
        m->times[0] = t + (int64_t)seconds_of(x);
        sift_down(m->times, m->slots, 0);
        if (t + (int64_t)seconds_of(x) <= m->start) {
            length_control(m, p, t, x);
            continue;
        }
        return add_session(m, p, m->rng, t, x, e) < 0 ? -1 : 1;
    }
}

int
sim_month_draw(struct sim_month *m, struct sim_err *e)
{
    if (m->p->arrivals == SIM_CONCURRENT)
        return draw_slot(m, e);
    if (m->batch_left == 0) {
        int got = next_arrival(m, e);
        if (got <= 0)
            return got;
        m->batch_left = m->p->batch;
    }
    m->batch_left--;
    double x = sim_dist_draw(&m->p->length, m->rng);
    return add_session(m, m->p, m->rng, m->at, x, e) < 0 ? -1 : 1;
}

void
sim_month_drop(struct sim_month *m)
{
    m->dropped += m->nsessions;
    m->nsessions = m->nspells = 0;
}

int
sim_month_generate(struct sim_month *m, const struct sim_profile *p,
                   gsl_rng *rng, struct sim_err *e)
{
    int got;
    sim_month_begin(m, p, rng);
    while ((got = sim_month_draw(m, e)) > 0)
        ;
    return got;
}
