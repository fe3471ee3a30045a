/*
 * price.c - prices a simulated month through the engine, the only place
 * where pricing rules live: each session's spells are handed to one
 * pricing_rater per book as runs of identical seconds (struct
 * pricing_run), which the engine rates exactly as the seconds they
 * stand for. No rule is re-derived here, so a simulated month costs
 * exactly what the same samples would be invoiced.
 *
 * SIM_FEED_SECONDS expands the spells to per-second samples instead,
 * the form the meter stores: the tests and the bench price a month both
 * ways and compare.
 */
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Seconds (or runs) handed to the raters at a time (3 MiB of them). */
#define CHUNK 65536

#define ACCOUNT "sim"

struct feed {
    struct pricing_rater **r;
    struct sim_priced *out;
    size_t nbooks;
    enum sim_feed how;
    struct pricing_block b;
    struct pricing_second *buf; /* SIM_FEED_SECONDS */
    struct pricing_run *runs;   /* SIM_FEED_RUNS */
};

/* Hands what is buffered to every book still pricing. */
static void
flush(struct feed *f)
{
    if (f->b.n == 0 && f->b.nruns == 0)
        return;
    for (size_t i = 0; i < f->nbooks; i++)
        if (f->r[i] && f->out[i].ok &&
            pricing_rater_add(f->r[i], &f->b, &f->out[i].err) < 0)
            f->out[i].ok = false;
    f->b.n = f->b.nruns = 0;
}

/* Seconds [a, z) of spell x: a run, or its seconds one by one. */
static void
feed_spell(struct feed *f, const struct sim_spell *x, int64_t a, int64_t z)
{
    struct pricing_second v = {
        .ts = a,
        .vcpu = x->vcpu,
        .cpu_used = x->cpu_used,
        .mem_bytes = x->mem_bytes,
        .mem_used_bytes = x->mem_used_bytes,
        .disk_bytes = x->disk_bytes,
        .egress_bytes = x->egress_bytes,
    };
    if (f->how == SIM_FEED_RUNS) {
        if (f->b.nruns == CHUNK)
            flush(f);
        f->runs[f->b.nruns++] = (struct pricing_run){v, (uint32_t)(z - a)};
        return;
    }
    for (; v.ts < z; v.ts++) {
        if (f->b.n == CHUNK)
            flush(f);
        f->buf[f->b.n++] = v;
    }
}

/* "s" and the session's index: the sandbox's id (no printf: it is once
 * a session, on the Monte Carlo's hot path). */
static void
session_id(char *id, size_t k)
{
    char digits[24];
    size_t n = 0;
    do
        digits[n++] = (char)('0' + k % 10);
    while ((k /= 10) > 0);
    *id++ = 's';
    while (n > 0)
        *id++ = digits[--n];
    *id = '\0';
}

/* The session's seconds inside [lo, hi), spell by spell. */
static void
feed_session(struct feed *f, const struct sim_month *m,
             const struct sim_session *s, char *id)
{
    int64_t lo = s->start > m->start ? s->start : m->start;
    int64_t end = s->start + (int64_t)s->seconds;
    int64_t hi = end < m->end ? end : m->end;
    if (lo >= hi)
        return;
    /* A session that ran before the month has history: it starts no run
     * in it (rules section 5). */
    int64_t t = s->start, first_run = INT64_MAX;
    for (size_t k = 0; k < s->nspells && first_run == INT64_MAX; k++) {
        if (!m->spells[s->first + k].paused)
            first_run = t;
        t += m->spells[s->first + k].seconds;
    }
    session_id(id, (size_t)(s - m->sessions));
    f->b.account_id = ACCOUNT;
    f->b.sandbox_id = id;
    f->b.history = first_run < m->start;
    f->b.first_run_minute = f->b.history ? first_run / 60 : INT64_MAX;
    t = s->start;
    for (size_t k = 0; k < s->nspells && t < hi; k++) {
        const struct sim_spell *x = &m->spells[s->first + k];
        int64_t a = t > lo ? t : lo, z = t + x->seconds;
        if (z > hi)
            z = hi;
        if (a < z)
            feed_spell(f, x, a, z);
        t += x->seconds;
    }
    flush(f);
}

int
sim_price_month(const struct sim_month *m,
                const struct pricing_book *const *books, size_t nbooks,
                const bool *active, enum sim_feed how, struct sim_priced *out,
                struct sim_err *e)
{
    struct feed f = {.how = how};
    int rc = -1;
    memset(out, 0, nbooks * sizeof(*out));
    f.r = calloc(nbooks ? nbooks : 1, sizeof(*f.r));
    if (how == SIM_FEED_RUNS)
        f.b.runs = f.runs = malloc(CHUNK * sizeof(*f.runs));
    else
        f.b.s = f.buf = malloc(CHUNK * sizeof(*f.buf));
    f.out = out;
    f.nbooks = nbooks;
    if (!f.r || !(f.buf || f.runs)) {
        snprintf(e->msg, sizeof(e->msg), "out of memory");
        goto out;
    }
    const struct pricing_scope scope = {
        .year = m->year, .month = m->month, .account = ACCOUNT};
    for (size_t i = 0; i < nbooks; i++) {
        if (active && !active[i])
            continue;
        out[i].ok = true;
        if (!(f.r[i] = pricing_rater_new(books[i], &out[i].err))) {
            snprintf(e->msg, sizeof(e->msg), "out of memory");
            goto out;
        }
        pricing_rater_select(f.r[i], &scope);
    }
    char id[32];
    for (size_t k = 0; k < m->nsessions; k++)
        feed_session(&f, m, &m->sessions[k], id);
    for (size_t i = 0; i < nbooks; i++) {
        size_t n = 0;
        if (!f.r[i] || !out[i].ok)
            continue;
        if (pricing_rater_finish(f.r[i], &out[i].st, &n, &out[i].err) < 0) {
            out[i].ok = false;
        } else if (n != 1) {
            /* The scope names one account and period: one statement. */
            pricing_statements_free(out[i].st, n);
            out[i].st = NULL;
            out[i].ok = false;
            snprintf(out[i].err.msg, sizeof(out[i].err.msg),
                     "the engine gave %zu statements for one month", n);
        } else if (m->first && pricing_statements_grant(books[i], out[i].st, 1,
                                                        &out[i].err) < 0) {
            /* The book's grants, received in the account's first month,
             * pay what they can of it (the engine's rule 14). */
            pricing_statements_free(out[i].st, 1);
            out[i].st = NULL;
            out[i].ok = false;
        }
    }
    rc = 0;
out:
    for (size_t i = 0; f.r && i < nbooks; i++)
        pricing_rater_free(f.r[i]);
    free(f.r);
    free(f.buf);
    free(f.runs);
    if (rc < 0)
        for (size_t i = 0; i < nbooks; i++) {
            pricing_statements_free(out[i].st, 1);
            out[i].st = NULL;
        }
    return rc;
}
