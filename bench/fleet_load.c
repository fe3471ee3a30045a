/*
 * fleet_load.c - stores the benches' fleet-day (fleet_load.h).
 */
#include "fleet_load.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "sim.h"

static const char *who_;

static void
die(const char *what, const char *detail)
{
    fprintf(stderr, "%s: %s: %s\n", who_, what, detail);
    exit(1);
}

/* One window of the fleet as samples for meter_ingest. */
struct window {
    struct meter_sample *s;
    size_t n, cap;
};

static void
add(const char *account, const char *sandbox, const struct pricing_second *s,
    size_t n, void *arg)
{
    struct window *w = arg;
    if (w->n + n > w->cap) {
        w->cap = (w->n + n) * 2;
        w->s = realloc(w->s, w->cap * sizeof(*w->s));
        if (!w->s)
            die("memory", "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        struct meter_sample *m = &w->s[w->n++];
        memset(m, 0, sizeof(*m));
        m->s = s[i];
        snprintf(m->account_id, sizeof(m->account_id), "%s", account);
        snprintf(m->sandbox_id, sizeof(m->sandbox_id), "%s", sandbox);
    }
}

size_t
fleet_load(PGconn *db, size_t sandboxes, unsigned seconds, size_t accounts,
           const char *who)
{
    who_ = who;
    struct meter_err e = {{0}};

    /* E2B's rates, with storage and egress priced too. */
    static const char book_text[] =
        "{\"id\": \"bench\", \"currency\": \"USD\", \"effective_from\": "
        "\"2026-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": "
        "\"0.000014\", \"per\": \"second\"}, \"memory\": {\"basis\": "
        "\"allocated\", \"unit\": \"GiB\", \"rate\": \"0.0000045\", \"per\": "
        "\"second\"}, \"storage\": {\"rate\": \"0.000108\", \"per\": "
        "\"hour\", \"included_gib\": \"10\"}, \"egress\": {\"rate\": "
        "\"0.05\"}, \"per_run\": \"0\"}";
    struct pricing_err pe = {{0}};
    struct pricing_book *book =
        pricing_book_parse(book_text, strlen(book_text), "bench", &pe);
    int bv;
    if (!book || meter_db_book_add(db, book, book_text, &bv, &e) < 0)
        die("book", book ? e.msg : pe.msg);
    pricing_book_free(book);

    /* The fleet, a minute of every sandbox per ingest transaction. */
    struct sim_fleet *fleet =
        sim_fleet_new(42, sandboxes, accounts, FLEET_START);
    if (!fleet)
        die("memory", "out of memory");
    sim_fleet_fill(fleet); /* a sample of every slot every second */
    struct meter_registry *reg = meter_registry_new();
    struct window w = {0};
    size_t stored = 0;
    double t0 = bench_now();
    for (unsigned done = 0; done < seconds; done += 60) {
        w.n = 0;
        sim_fleet_next(fleet, 60, add, &w);
        struct meter_ingest_result res;
        struct meter_problems probs = {0};
        struct meter_ingest_origin o = {.now_us = (FLEET_START + 86400 * 30) *
                                                  1000000LL};
        if (meter_ingest(db, reg, w.s, w.n, &o, &res, &probs, &e) !=
            METER_INGEST_OK)
            die("ingest", probs.total ? "invalid samples" : e.msg);
        stored += res.accepted;
    }
    printf("  stored %zu samples in %.1f s (setup, not measured)\n", stored,
           bench_now() - t0);
    fflush(stdout);
    free(w.s);
    sim_fleet_free(fleet);
    meter_registry_free(reg);
    for (size_t a = 0; a < accounts; a++) {
        char id[32];
        snprintf(id, sizeof(id), "acct-%zu", a);
        if (meter_db_account_add(db, id, NULL, "bench", "2026-01-01", &e) < 0)
            die("account", e.msg);
    }
    return stored;
}
