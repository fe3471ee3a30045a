/*
 * replay.c - costsim replay: what an account's stored month would have
 * cost on every price book, line by line (docs/simulator.md).
 *
 * The usage is read once, through the reader the invoice run uses
 * (meter_usage_reader: quarantined usage is not in it), and teed: each
 * block goes to one pricing_rater per book, each scoped to the account's
 * period as if it had been on that book the whole month, to the facts a
 * plan's limits are about (peak concurrency, the longest session, the
 * disk held at once), and to pricing_rate with the account's own books
 * cut into parts, exactly as the invoice run rates the period. No rule
 * is applied here; the limits are checked by the simulator's check
 * (simulator/limits.c), the facts against each book's plan.
 *
 * Read-only: the session is made read-only (default_transaction_read_
 * only) before anything is read, so that no statement of this program,
 * the usage reader's included, can write.
 */
#include "replay_int.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "usage: costsim replay --account ID --period YYYY-MM [--books DIR]\n"
    "                      [--db CONNINFO] [--format table|json]\n"
    "\n"
    "Prices the account's stored usage of the period on every price book\n"
    "of DIR (default: the installed books) through the pricing engine,\n"
    "each as if the account had been on it the whole month, cheapest\n"
    "first; then its own book as its invoice run rates the period, and\n"
    "the period's invoice if there is one. Never writes to the database.\n"
    "--db (default $METER_DATABASE_URL, else the embedded database of\n"
    "this directory, var/pg/, if it runs) as meterctl's.\n";

#define usage_error(...) cs_usage_error("costsim replay", __VA_ARGS__)

struct args {
    const char *account, *period, *books, *db, *format;
    int year, month;
};

static int
parse_args(int argc, char **argv, struct args *a)
{
    static const struct option opts[] = {
        {"account", required_argument, NULL, 'a'},
        {"period", required_argument, NULL, 'p'},
        {"books", required_argument, NULL, 'b'},
        {"db", required_argument, NULL, 'd'},
        {"format", required_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    a->format = "table";
    int c;
    optind = 0; /* glibc: start afresh, argv[0] is "replay" */
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'a':
            if (!pricing_id_valid(optarg))
                return usage_error("--account '%s' is not 1-64 of "
                                   "A-Za-z0-9._:-",
                                   optarg);
            a->account = optarg;
            break;
        case 'p':
            if (meter_period_parse(optarg, &a->year, &a->month) < 0)
                return usage_error("--period '%s' is not a month YYYY-MM",
                                   optarg);
            a->period = optarg;
            break;
        case 'b':
            a->books = optarg;
            break;
        case 'd':
            a->db = optarg;
            break;
        case 'f':
            if (strcmp(optarg, "table") && strcmp(optarg, "json"))
                return usage_error("--format '%s' is not table or json",
                                   optarg);
            a->format = optarg;
            break;
        case 'h':
            fputs(usage_text, stdout);
            exit(0);
        default:
            return usage_error("unknown or incomplete option '%s'",
                               argv[optind - 1]);
        }
    }
    if (optind < argc)
        return usage_error("unexpected argument '%s'", argv[optind]);
    if (!a->account || !a->period)
        return usage_error("--account ID and --period YYYY-MM are required");
    return 0;
}

/* ---- the facts of the month ---------------------------------------------- */

static int
by_time(const void *x, const void *y)
{
    const struct cs_replay_event *a = x, *b = y;
    return a->t < b->t ? -1 : a->t > b->t;
}

/* Sorts the events and merges those of one second, dropping those that
 * change nothing: what is left is the level's steps. */
static void
coalesce(struct cs_replay_events *l)
{
    if (l->n == 0)
        return;
    qsort(l->ev, l->n, sizeof(*l->ev), by_time);
    size_t k = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (k && l->ev[k - 1].t == l->ev[i].t)
            l->ev[k - 1].d += l->ev[i].d;
        else
            l->ev[k++] = l->ev[i];
        if (l->ev[k - 1].d == 0)
            k--;
    }
    l->n = k;
}

static int
add_event(struct cs_replay_events *l, int64_t t, int64_t d)
{
    if (l->n == l->cap) {
        coalesce(l);
        /* Grown only when coalescing frees less than half: bounded by
         * twice the seconds at which the level changes. */
        if (l->cap == 0 || l->n > l->cap / 2) {
            size_t cap = l->cap ? 2 * l->cap : 4096;
            struct cs_replay_event *p = realloc(l->ev, cap * sizeof(*p));
            if (!p)
                return -1;
            l->ev = p;
            l->cap = cap;
        }
    }
    l->ev[l->n++] = (struct cs_replay_event){t, d};
    return 0;
}

/* The highest level the steps of l reach, and the first second it is
 * reached at; then l is emptied. */
static uint64_t
highest(struct cs_replay_events *l, int64_t *at)
{
    coalesce(l);
    pricing_i128 level = 0, top = 0;
    for (size_t i = 0; i < l->n; i++) {
        level += l->ev[i].d;
        if (level > top) {
            top = level;
            if (at)
                *at = l->ev[i].t;
        }
    }
    free(l->ev);
    l->ev = NULL;
    l->n = l->cap = 0;
    return top > (pricing_i128)UINT64_MAX ? UINT64_MAX : (uint64_t)top;
}

/* Ends the span of constant disk being read, if any. */
static int
close_disk(struct cs_usage_facts *f)
{
    if (!f->disk_open)
        return 0;
    f->disk_open = false;
    int64_t d = f->disk > INT64_MAX ? INT64_MAX : (int64_t)f->disk;
    return add_event(&f->disk_ev, f->disk_from, d) < 0 ||
                   add_event(&f->disk_ev, f->disk_last + 1, -d) < 0
               ? -1
               : 0;
}

/* n seconds of the sandbox read, from ts, holding disk bytes (running
 * or paused): spans of constant disk, ended by a change or a gap. */
static int
disk_seconds(struct cs_usage_facts *f, int64_t ts, uint64_t n, uint64_t disk)
{
    if (f->disk_open && ts == f->disk_last + 1 && disk == f->disk) {
        f->disk_last += (int64_t)n;
        return 0;
    }
    if (close_disk(f) < 0)
        return -1;
    f->disk_open = disk > 0;
    f->disk_from = ts;
    f->disk_last = ts + (int64_t)n - 1;
    f->disk = disk;
    return 0;
}

/* Ends the session being read, if any. */
static int
close_session(struct cs_usage_facts *f)
{
    if (!f->open)
        return 0;
    f->open = false;
    uint64_t n = (uint64_t)(f->last - f->from + 1);
    f->sessions++;
    if (n > f->longest_s) {
        f->longest_s = n;
        f->longest_from = f->from;
        memcpy(f->longest_sandbox, f->sandbox, sizeof(f->sandbox));
    }
    return add_event(&f->run_ev, f->from, 1) < 0 ||
                   add_event(&f->run_ev, f->last + 1, -1) < 0
               ? -1
               : 0;
}

/* n seconds of the sandbox read, from ts, running or paused. */
static int
facts_seconds(struct cs_usage_facts *f, int64_t ts, uint64_t n, bool running,
              uint64_t disk)
{
    if (disk_seconds(f, ts, n, disk) < 0)
        return -1;
    if (!running) {
        f->paused_s += n;
        return close_session(f);
    }
    f->running_s += n;
    if (!f->open || ts != f->last + 1) {
        if (close_session(f) < 0)
            return -1;
        f->open = true;
        f->from = ts;
    }
    f->last = ts + (int64_t)n - 1;
    return 0;
}

/* n seconds from s->ts with s's values, less those already read (a
 * repeated second: the first stands, as in rating). */
static int
facts_new(struct cs_usage_facts *f, const struct pricing_second *s, uint64_t n)
{
    int64_t ts = s->ts;
    if (ts <= f->seen) {
        uint64_t old = (uint64_t)(f->seen - ts) + 1;
        if (old >= n)
            return 0;
        ts = f->seen + 1;
        n -= old;
    }
    f->seen = ts + (int64_t)n - 1;
    return facts_seconds(f, ts, n, s->vcpu > 0, s->disk_bytes);
}

/* One block of stored seconds (one sandbox's, in order), given second
 * by second or as runs. */
static int
facts_add(struct cs_usage_facts *f, const struct pricing_block *b)
{
    if (strcmp(b->sandbox_id, f->sandbox) != 0) {
        if (close_session(f) < 0 || close_disk(f) < 0)
            return -1;
        snprintf(f->sandbox, sizeof(f->sandbox), "%s", b->sandbox_id);
        f->sandboxes++;
        f->seen = INT64_MIN;
    }
    if (b->runs) {
        for (size_t i = 0; i < b->nruns; i++)
            if (facts_new(f, &b->runs[i].s, b->runs[i].n) < 0)
                return -1;
        return 0;
    }
    for (size_t i = 0; i < b->n; i++)
        if (facts_new(f, &b->s[i], 1) < 0)
            return -1;
    return 0;
}

/* Ends the input: the peak is the highest running count of the steps,
 * at the first second it is reached; the disk's peak likewise. */
static int
facts_finish(struct cs_usage_facts *f)
{
    if (close_session(f) < 0 || close_disk(f) < 0)
        return -1;
    f->peak = highest(&f->run_ev, &f->peak_at);
    f->peak_disk = highest(&f->disk_ev, NULL);
    return 0;
}

/* ---- pricing ------------------------------------------------------------- */

/* The stored usage, teed: every block it yields has first gone to every
 * book's rater and to the facts. */
struct tee {
    struct pricing_source in;
    struct cs_replay *rp;
    bool failed; /* the source's or memory's error, not a book's */
};

static int
tee_next(void *ctx, struct pricing_block *b, struct pricing_err *e)
{
    struct tee *t = ctx;
    struct cs_replay *rp = t->rp;
    *b = (struct pricing_block){0};
    int got = t->in.next(t->in.ctx, b, e);
    if (got < 0)
        t->failed = true;
    if (got <= 0)
        return got;
    if (facts_add(&rp->facts, b) < 0) {
        snprintf(e->msg, sizeof(e->msg), "out of memory");
        t->failed = true;
        return -1;
    }
    for (size_t i = 0; i < rp->nbooks; i++) {
        struct cs_replay_book *x = &rp->books[i];
        if (!x->failed && pricing_rater_add(x->r, b, &x->err) < 0)
            x->failed = true;
    }
    return 1;
}

/* Reads the period's stored usage once and prices it on every book and
 * on the account's own. -1 (e set) if the usage cannot be read. */
static int
replay_price(PGconn *db, struct cs_replay *rp, struct meter_err *e)
{
    int y, m;
    int64_t start, end;
    pricing_period_of(pricing_days_from_civil(rp->year, rp->month, 1) * 86400,
                      &y, &m, &start, &end);
    /* Each book as if the account had been on it the whole month:
     * active_days 0 counts every day of the period. */
    const struct pricing_scope scope = {rp->year, rp->month, 0, rp->account,
                                        false};
    for (size_t i = 0; i < rp->nbooks; i++) {
        struct cs_replay_book *x = &rp->books[i];
        if (!(x->r = pricing_rater_new(x->bk->book, &x->err)))
            return meter_fail(e, "%s", x->err.msg);
        pricing_rater_select(x->r, &scope);
        /* What the account would have paid elsewhere: a book with a
         * price unknown is a lower bound, not nothing. The account's
         * own books below are rated as its invoice, whole or not at all. */
        pricing_rater_partial(x->r);
    }
    struct meter_usage_reader *reader =
        meter_usage_reader_new(db, rp->account, start, end, e);
    if (!reader)
        return -1;
    struct tee t = {meter_usage_source(reader), rp, false};
    struct pricing_source src = {tee_next, &t};
    struct pricing_err pe = {{0}};
    struct pricing_block b;
    bool drain = true;
    int got, rc = -1;
    if (rp->period.nparts) {
        /* The account's own books, as the invoice run rates the period
         * (meter/db/invoices.c): the same parts and scope. */
        struct pricing_part parts[31];
        for (size_t k = 0; k < rp->period.nparts; k++)
            parts[k] = (struct pricing_part){rp->period.parts[k].book,
                                             rp->period.parts[k].from,
                                             rp->period.parts[k].to};
        if (pricing_rate(NULL, src, &scope, parts, rp->period.nparts, &rp->own,
                         &rp->nown, &pe) == 0) {
            drain = false; /* it read the usage to its end */
        } else if (t.failed) {
            meter_fail(e, "%s", pe.msg);
            goto out;
        } else {
            /* The own books failed (the engine's reason); the other
             * books still need whatever it did not read. */
            rp->own_failed = true;
            rp->own_err = pe;
        }
    }
    while (drain && (got = tee_next(&t, &b, &pe)) != 0)
        if (got < 0) {
            meter_fail(e, "%s", pe.msg);
            goto out;
        }
    if (facts_finish(&rp->facts) < 0) {
        meter_fail(e, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < rp->nbooks; i++) {
        struct cs_replay_book *x = &rp->books[i];
        size_t n = 0;
        if (x->failed)
            continue;
        if (pricing_rater_finish(x->r, &x->st, &n, &x->err) < 0) {
            x->failed = true;
        } else if (n != 1) {
            /* The scope names one account and period: one statement. */
            pricing_statements_free(x->st, n);
            x->st = NULL;
            x->failed = true;
            snprintf(x->err.msg, sizeof(x->err.msg),
                     "the engine gave %zu statements for one month", n);
        }
    }
    rc = 0;
out:
    meter_usage_reader_free(reader);
    return rc;
}

/* ---- the period's invoice ------------------------------------------------ */

struct found {
    int64_t id;
    char number[16];
};

static void
found_cb(const struct report_invoice *inv, void *arg)
{
    struct found *f = arg;
    if (strcmp(inv->kind, "invoice") != 0 || f->id)
        return;
    f->id = inv->id;
    snprintf(f->number, sizeof(f->number), "%s", inv->number);
}

/* Reads the period's invoice, if any: the final one not voided, else
 * the draft; and sums its lines by what they bill. */
static int
replay_invoice(PGconn *db, struct cs_replay *rp, struct meter_err *e)
{
    static const char *const statuses[] = {"final", "draft"};
    struct found f = {0};
    for (size_t i = 0; i < 2 && !f.id; i++) {
        /* A period has one live invoice and one draft at most; a page
         * of 1,000 also holds its credit notes. */
        struct meter_invoice_filter flt = {.account = rp->account,
                                           .year = rp->year,
                                           .month = rp->month,
                                           .status = statuses[i],
                                           .limit = 1000};
        if (meter_db_invoice_list(db, &flt, found_cb, &f, e) < 0)
            return -1;
    }
    if (!f.id)
        return 0;
    char ref[24];
    if (f.number[0])
        snprintf(ref, sizeof(ref), "%s", f.number);
    else
        snprintf(ref, sizeof(ref), "%lld", (long long)f.id);
    enum meter_db_status st =
        billing_document(db, ref, rp->account, &rp->inv, NULL, e);
    if (st < 0)
        return -1;
    if (st == METER_DB_NONE)
        return 0; /* gone since it was listed: none to compare */
    rp->invoiced = true;
    for (size_t i = 0; i < rp->inv.nlines; i++) {
        const struct report_line *l = &rp->inv.lines[i];
        struct pricing_dec *sum =
            strcmp(l->kind, "late_usage") == 0     ? &rp->inv_late
            : strcmp(l->kind, "credit_grant") == 0 ? &rp->inv_grants
                                                   : &rp->inv_usage;
        if (pricing_dec_add(*sum, l->amount, sum) != PRICING_OK)
            return meter_fail(e, "invoice '%s': its lines overflow", ref);
    }
    return 0;
}

static void
replay_release(struct cs_replay *rp)
{
    for (size_t i = 0; rp->books && i < rp->nbooks; i++) {
        pricing_rater_free(rp->books[i].r);
        pricing_statements_free(rp->books[i].st, 1);
    }
    free(rp->books);
    free(rp->facts.run_ev.ev);
    free(rp->facts.disk_ev.ev);
    pricing_statements_free(rp->own, rp->nown);
    billing_account_period_release(&rp->period);
    report_invoice_release(&rp->inv);
}

int
cs_replay_main(int argc, char **argv)
{
    struct args a = {0};
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc;
    struct cs_replay rp = {
        .account = a.account, .year = a.year, .month = a.month};
    struct cs_book *books = NULL;
    size_t n = 0;
    struct meter_err e = {{0}};
    PGconn *db = NULL;
    rc = 1;
    if (cs_load_books(a.books, &books, &n) < 0)
        goto out;
    if (!(rp.books = calloc(n, sizeof(*rp.books)))) {
        meter_fail(&e, "out of memory");
        goto fail;
    }
    rp.nbooks = n;
    for (size_t i = 0; i < n; i++)
        rp.books[i].bk = &books[i];
    if (!(db = meter_db_connect(a.db, &e)) ||
        meter_db_set_read_only(db, &e) < 0)
        goto fail;
    enum meter_db_status st =
        billing_account_period(db, a.account, a.year, a.month, &rp.period, &e);
    if (st < 0)
        goto fail;
    if (st == METER_DB_NONE) {
        meter_fail(&e, "no account '%s'", a.account);
        goto fail;
    }
    if (rp.period.nparts) {
        const char *id = rp.period.parts[rp.period.nparts - 1].book_id;
        for (size_t i = 0; i < n; i++)
            rp.books[i].account_book =
                strcmp(pricing_book_id(books[i].book), id) == 0;
    }
    if (replay_price(db, &rp, &e) < 0 || replay_invoice(db, &rp, &e) < 0)
        goto fail;
    /* Limits: the month's facts and each priced book's statement
     * against the book's plan (simulator/limits.c). */
    /* The largest sandbox is not read from storage: a book's "limits"
     * (its largest sandbox) are not checked on replay. */
    const struct sim_month_use use = {
        rp.facts.peak, rp.facts.longest_s, rp.facts.peak_disk, 0, 0, 0};
    for (size_t i = 0; i < n; i++)
        if (!rp.books[i].failed)
            sim_plan_check(books[i].book, &use, &rp.books[i].st->q,
                           &rp.books[i].plan);
    rp.limits_checked = true;
    if ((strcmp(a.format, "json") == 0 ? cs_replay_json(stdout, &rp)
                                       : cs_replay_table(stdout, &rp)) < 0) {
        meter_fail(&e, "cannot write the replay");
        goto fail;
    }
    rc = fflush(stdout) == 0 ? 0 : 1;
    goto out;
fail:
    fprintf(stderr, "costsim: %s\n", e.msg);
out:
    replay_release(&rp);
    cs_books_free(books, n);
    PQfinish(db);
    return rc;
}
