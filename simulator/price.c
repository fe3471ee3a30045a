/*
 * price.c - prices a simulated month through the engine, the only place
 * where pricing rules live: each session's spells are handed to one
 * pricing_rater per book as runs of identical seconds (struct
 * pricing_run), which the engine rates exactly as the seconds they
 * stand for. No rule is re-derived here, so a simulated month costs
 * exactly what the same samples would be invoiced.
 *
 * The month reaches the raters through a pricing_source, the engine's
 * one streaming input, pulled block by block and handed to every book.
 * The Monte Carlo's source draws the month as it is read
 * (sim_price_drawn): a session is drawn, measured, priced and dropped
 * before the next, so memory holds one session's spells whatever the
 * month's count of sessions x their length.
 *
 * SIM_FEED_SECONDS expands the spells to per-second samples instead,
 * the form the meter stores: the tests and the bench price a month both
 * ways and compare.
 */
#include "sim_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK SIM_PRICE_CHUNK

#define ACCOUNT "sim"

/* A way a book sees the month: its autopause (sim_book_cut), the one
 * size it runs every sandbox at (vcpu and mem_bytes; mem_bytes 0: none)
 * and the memory each whole vCPU comes with, if only so (per_vcpu_bytes;
 * 0: none). */
struct view {
    uint32_t cut;
    uint32_t vcpu;
    uint64_t mem_bytes;
    uint64_t per_vcpu_bytes;
};

static struct view
view_of(const struct sim_profile *p, const struct pricing_book *b)
{
    const struct pricing_limits *l = pricing_book_limits(b);
    return (struct view){.cut = sim_book_cut(p, b),
                         .vcpu = l->has_fixed_size ? l->fixed_vcpu : 0,
                         .mem_bytes =
                             l->has_fixed_size ? l->fixed_mem_bytes : 0,
                         .per_vcpu_bytes = l->memory_per_vcpu_bytes};
}

static bool
same_view(const struct view *a, const struct view *b)
{
    return a->cut == b->cut && a->vcpu == b->vcpu &&
           a->mem_bytes == b->mem_bytes &&
           a->per_vcpu_bytes == b->per_vcpu_bytes;
}

/* The whole vCPUs a running spell takes where memory comes only with
 * them, per bytes each: the fewest that hold its vCPUs and its memory,
 * at least one; 0 if that is more than a profile may ask
 * (SIM_MAX_VCPU). */
static uint32_t
whole_vcpus(const struct sim_spell *x, uint64_t per)
{
    uint64_t n = (x->vcpu + (uint64_t)PRICING_CPU_UNIT - 1) / PRICING_CPU_UNIT;
    uint64_t k = x->mem_bytes / per + (x->mem_bytes % per != 0);
    if (k > n)
        n = k;
    if (n == 0)
        n = 1;
    return n > SIM_MAX_VCPU / PRICING_CPU_UNIT ? 0 : (uint32_t)n;
}

/*
 * A month as a pricing_source: each session's seconds inside the month,
 * one sandbox per session, as blocks of at most CHUNK runs (or
 * seconds). With draw, the sessions are drawn as they are read
 * (sim_month_draw), each measured, then dropped once read: what is held
 * is one session's spells, not the month's.
 */
struct source {
    struct sim_month *m;
    enum sim_feed how;
    bool draw;
    bool partial; /* pricing_rater_partial on every rater */
    /* How the books see the month, each way once: a session is read
     * once a way, its blocks for that way's books only; with draw, a
     * measure a way. */
    struct view *views;
    bool *live;              /* views[g] has a book still pricing: read it */
    struct pricing_err *why; /* why views[g]'s books fail, "" if not */
    size_t nviews, g;        /* g: the way being read */
    struct sim_measure *measure;
    size_t k;       /* the session being read, in m */
    bool open;      /* its block is set up */
    size_t spell;   /* its next spell, which starts at t */
    int piece;      /* of the spell: 0 running, 1 paused */
    int64_t t, pos; /* pos: the next second to hand out */
    int64_t lo, hi; /* its seconds in the month */
    char id[32];
    struct pricing_block b;      /* of runs, or of seconds */
    struct pricing_run *runs;    /* SIM_FEED_RUNS: b.runs */
    struct pricing_second *secs; /* SIM_FEED_SECONDS: b.s */
    struct sim_err err;          /* why next() failed */
};

/* "s" and the session's number: the sandbox's id (no printf: it is once
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

/* Sets up the block of session s: false if it has no second in the
 * month. */
static bool
open_session(struct source *r, const struct sim_session *s)
{
    const struct sim_month *m = r->m;
    int64_t end = s->start + (int64_t)s->seconds;
    r->lo = s->start > m->start ? s->start : m->start;
    r->hi = end < m->end ? end : m->end;
    if (r->lo >= r->hi)
        return false;
    /* A session that ran before the month has history: it starts no run
     * in it (rules section 5). */
    int64_t t = s->start, first_run = INT64_MAX;
    for (size_t k = 0; k < s->nspells && first_run == INT64_MAX; k++) {
        if (sim_spell_running(&m->spells[s->first + k], r->views[r->g].cut) > 0)
            first_run = t;
        t += m->spells[s->first + k].seconds;
    }
    session_id(r->id, m->dropped + r->k);
    r->b.account_id = ACCOUNT;
    r->b.sandbox_id = r->id;
    r->b.history = first_run < m->start;
    r->b.first_run_minute = r->b.history ? first_run / 60 : INT64_MAX;
    r->spell = 0;
    r->piece = 0;
    r->t = r->pos = s->start;
    return true;
}

/* The session's next CHUNK runs or seconds inside [lo, hi) into r->b:
 * 1 if there are any, 0 if none, -1 (r->why[r->g] set) for a spell no
 * size of the way holds. Each spell is two pieces: the seconds it runs
 * under the cut, then those it is paused (no vCPU or memory), either of
 * which may be none; a running second of a fixed size is of that size
 * (its use at most the size), and where memory comes with whole vCPUs,
 * of the fewest that hold it. */
static int
fill(struct source *r, const struct sim_session *s)
{
    const struct sim_month *m = r->m;
    struct pricing_block *b = &r->b;
    const struct view *f = &r->views[r->g];
    b->n = b->nruns = 0;
    for (; r->spell < s->nspells && r->t < r->hi; r->spell++, r->piece = 0) {
        const struct sim_spell *x = &m->spells[s->first + r->spell];
        int64_t run = sim_spell_running(x, f->cut);
        for (; r->piece < 2; r->piece++) {
            bool paused = r->piece == 1;
            int64_t a = r->t + (paused ? run : 0),
                    z = r->t + (paused ? x->seconds : run);
            if (a < r->lo)
                a = r->lo;
            if (z > r->hi)
                z = r->hi;
            struct pricing_second v = {
                .vcpu = x->vcpu,
                .cpu_used = x->cpu_used,
                .mem_bytes = x->mem_bytes,
                .mem_used_bytes = x->mem_used_bytes,
                .disk_bytes = x->disk_bytes,
                .egress_bytes = x->egress_bytes,
            };
            if (paused) {
                v.vcpu = v.cpu_used = 0;
                v.mem_bytes = v.mem_used_bytes = 0;
            } else if (f->mem_bytes) {
                v.vcpu = f->vcpu;
                v.cpu_used = x->cpu_used < f->vcpu ? x->cpu_used : f->vcpu;
                v.mem_bytes = f->mem_bytes;
                if (v.mem_used_bytes > f->mem_bytes)
                    v.mem_used_bytes = f->mem_bytes;
            } else if (f->per_vcpu_bytes) {
                uint32_t n = whole_vcpus(x, f->per_vcpu_bytes);
                if (n == 0) {
                    snprintf(
                        r->why[r->g].msg, sizeof(r->why[r->g].msg),
                        "a sandbox of %llu bytes of memory takes more than "
                        "%d vCPU of %llu bytes each (memory_per_vcpu)",
                        (unsigned long long)x->mem_bytes,
                        SIM_MAX_VCPU / PRICING_CPU_UNIT,
                        (unsigned long long)f->per_vcpu_bytes);
                    return -1;
                }
                v.vcpu = n * PRICING_CPU_UNIT;
                v.mem_bytes = n * f->per_vcpu_bytes;
            }
            if (r->how == SIM_FEED_RUNS) {
                if (a < z) {
                    if (b->nruns == CHUNK)
                        return 1;
                    v.ts = a;
                    r->runs[b->nruns++] =
                        (struct pricing_run){v, (uint32_t)(z - a)};
                }
            } else {
                if (r->pos < a)
                    r->pos = a;
                for (; r->pos < z; r->pos++) {
                    if (b->n == CHUNK)
                        return 1;
                    v.ts = r->pos;
                    r->secs[b->n++] = v;
                }
            }
        }
        r->t += x->seconds;
    }
    return b->n + b->nruns > 0;
}

static int
next(void *ctx, struct pricing_block *out, struct pricing_err *pe)
{
    struct source *r = ctx;
    struct sim_month *m = r->m;
    for (;;) {
        if (r->k == m->nsessions) {
            if (!r->draw)
                return 0;
            sim_month_drop(m);
            r->k = 0;
            int got = sim_month_draw(m, &r->err);
            for (size_t g = 0; got > 0 && g < r->nviews; g++)
                if (sim_measure_add(&r->measure[g], m, &m->sessions[0],
                                    &r->err) < 0)
                    got = -1;
            if (got <= 0) {
                if (got < 0)
                    snprintf(pe->msg, sizeof(pe->msg), "%s", r->err.msg);
                return got;
            }
        }
        const struct sim_session *s = &m->sessions[r->k];
        /* A way no book still prices is not read (its measures are
         * taken as the session is drawn, above). */
        if (r->live[r->g] && (r->open || (r->open = open_session(r, s)))) {
            int got = fill(r, s);
            if (got > 0) {
                *out = r->b;
                return 1;
            }
            if (got < 0)
                r->live[r->g] = false; /* its books fail, the others go on */
        }
        r->open = false;
        if (++r->g < r->nviews)
            continue; /* the same session, the next way */
        r->g = 0;
        r->k++;
    }
}

/* Pulls every block of r into a rater per active book, and finishes
 * them: sim_price_month's contract; with use, measures the month into
 * use[i] for book i, under its cut (sim_price_drawn's). */
static int
price(struct source *r, const struct pricing_book *const *books, size_t nbooks,
      const bool *active, struct sim_priced *out, struct sim_month_use *use,
      struct sim_err *e)
{
    const struct sim_month *m = r->m;
    size_t n1 = nbooks ? nbooks : 1;
    struct pricing_rater **rater = calloc(n1, sizeof(*rater));
    size_t *group = calloc(n1, sizeof(*group));
    struct pricing_source src = {next, r};
    struct pricing_block b;
    struct pricing_err pe;
    int rc = -1, got;
    memset(out, 0, nbooks * sizeof(*out));
    r->views = malloc(n1 * sizeof(*r->views));
    r->live = calloc(n1, sizeof(*r->live));
    r->why = calloc(n1, sizeof(*r->why));
    if (r->how == SIM_FEED_RUNS)
        r->b.runs = r->runs = malloc(CHUNK * sizeof(*r->runs));
    else
        r->b.s = r->secs = malloc(CHUNK * sizeof(*r->secs));
    if (!rater || !group || !r->views || !r->live || !r->why ||
        !(r->runs || r->secs)) {
        snprintf(e->msg, sizeof(e->msg), "out of memory");
        goto out;
    }
    /* The books' ways, each once, in the order of the books. */
    r->nviews = 0;
    for (size_t i = 0; i < nbooks; i++) {
        struct view f = view_of(m->p, books[i]);
        for (group[i] = 0; group[i] < r->nviews; group[i]++)
            if (same_view(&r->views[group[i]], &f))
                break;
        if (group[i] == r->nviews)
            r->views[r->nviews++] = f;
    }
    if (r->nviews == 0)
        r->views[r->nviews++] = (struct view){.cut = SIM_NO_CUT};
    if (use) {
        if (!(r->measure = calloc(r->nviews, sizeof(*r->measure)))) {
            snprintf(e->msg, sizeof(e->msg), "out of memory");
            goto out;
        }
        for (size_t g = 0; g < r->nviews; g++)
            sim_measure_init(&r->measure[g], m->mem, true, r->views[g].cut);
    }
    const struct pricing_scope scope = {
        .year = m->year, .month = m->month, .account = ACCOUNT};
    for (size_t i = 0; i < nbooks; i++) {
        if (active && !active[i])
            continue;
        out[i].ok = true;
        if (!(rater[i] = pricing_rater_new(books[i], &out[i].err))) {
            snprintf(e->msg, sizeof(e->msg), "out of memory");
            goto out;
        }
        r->live[group[i]] = true;
        pricing_rater_select(rater[i], &scope);
        if (r->partial)
            pricing_rater_partial(rater[i]);
    }
    /* Every book of a cut rates the same blocks: a book that fails stops
     * there. */
    while ((got = src.next(src.ctx, &b, &pe)) > 0)
        for (size_t i = 0; i < nbooks; i++)
            if (rater[i] && out[i].ok && group[i] == r->g &&
                pricing_rater_add(rater[i], &b, &out[i].err) < 0)
                out[i].ok = false;
    if (got < 0) {
        snprintf(e->msg, sizeof(e->msg), "%s", pe.msg);
        goto out;
    }
    for (size_t i = 0; i < nbooks; i++) {
        size_t n = 0;
        if (!rater[i] || !out[i].ok)
            continue;
        if (r->why[group[i]].msg[0]) {
            out[i].ok = false;
            out[i].err = r->why[group[i]];
        } else if (pricing_rater_finish(rater[i], &out[i].st, &n, &out[i].err) <
                   0) {
            out[i].ok = false;
        } else if (n != 1) {
            /* The scope names one account and period: one statement. */
            pricing_statements_free(out[i].st, n);
            out[i].st = NULL;
            out[i].ok = false;
            snprintf(out[i].err.msg, sizeof(out[i].err.msg),
                     "the engine gave %zu statements for one month", n);
        } else if (m->first && !m->grants_held &&
                   pricing_statements_grant(books[i], out[i].st, 1,
                                            &out[i].err) < 0) {
            /* The book's grants, received in the account's first month,
             * pay what they can of it (the engine's rule 14). */
            pricing_statements_free(out[i].st, 1);
            out[i].st = NULL;
            out[i].ok = false;
        }
    }
    for (size_t i = 0; use && i < nbooks; i++)
        if (sim_measure_end(&r->measure[group[i]], &use[i], e) < 0)
            goto out;
    rc = 0;
out:
    for (size_t i = 0; rater && i < nbooks; i++)
        pricing_rater_free(rater[i]);
    for (size_t g = 0; r->measure && g < r->nviews; g++)
        sim_measure_release(&r->measure[g]);
    free(r->measure);
    free(rater);
    free(group);
    free(r->views);
    free(r->live);
    free(r->why);
    free(r->runs);
    free(r->secs);
    if (rc < 0)
        for (size_t i = 0; i < nbooks; i++) {
            pricing_statements_free(out[i].st, 1);
            out[i].st = NULL;
        }
    return rc;
}

int
sim_price_month(const struct sim_month *m,
                const struct pricing_book *const *books, size_t nbooks,
                const bool *active, enum sim_feed how, struct sim_priced *out,
                struct sim_err *e)
{
    /* Read only: without draw, the source never changes the month. */
    struct source r = {.m = (struct sim_month *)m, .how = how};
    return price(&r, books, nbooks, active, out, NULL, e);
}

int
sim_price_drawn(struct sim_month *m, const struct pricing_book *const *books,
                size_t nbooks, const bool *active, bool partial,
                struct sim_priced *out, struct sim_month_use *use,
                struct sim_err *e)
{
    struct source r = {
        .m = m, .how = SIM_FEED_RUNS, .draw = true, .partial = partial};
    return price(&r, books, nbooks, active, out, use, e);
}
