/*
 * alert_bench.c - one evaluation of the usage alerts (meter/db/alerts.c)
 * over many accounts, against the baseline of the one statement it
 * cannot do without: the period's rollups summed by account.
 *
 * ACCOUNTS accounts on E2B's book, each with HOURS merged hourly rollups
 * of January 2026 (usage_hourly_merged and their month's sums in
 * usage_period_merged, as meterd's merge leaves them) and a minute's
 * batch not merged yet, and two rules of every account: an amount (estimated
 * from the sums and the book, pricing_estimate) and a quantity, both far above
 * the usage, so that an evaluation reads, prices and compares every account and
 * raises nothing. Three runs of each, alternating; each figure the median with
 * min and max. The baseline is what an evaluation read before 0024 kept the
 * periods' sums: the month's hourly rollups summed by account. Then the storm:
 * a rule every account has crossed, whose first evaluation raises ACCOUNTS
 * crossings, each with its alert.triggered event.
 *
 * Target (issue 25): an evaluation over 10,000 accounts in under a
 * second of the background thread.
 *
 * usage: alert_bench [ACCOUNTS] [HOURS] (default 10000 720: a month)
 * The database: $METER_DATABASE_URL, else the embedded one of the
 * current directory. The bench makes and drops its own database.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_db.h"

#ifndef BOOKS_DIR
#define BOOKS_DIR "pricing/books"
#endif
#define RUNS 3
#define TARGET_S 1.0

/* 2026-02-01T00:00:00Z less an hour: the evaluations' now, in January. */
#define NOW 1769900400

static void
sql(PGconn *db, const char *q)
{
    PQclear(bench_sql(db, q));
}

static void
seed(PGconn *db, long long accounts, long long hours)
{
    char q[1024];
    char path[512];
    snprintf(path, sizeof(path), "%s/e2b-hobby.json", BOOKS_DIR);
    FILE *f = fopen(path, "r");
    if (!f)
        bench_db_die("cannot read", path);
    static char text[65536];
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    const char *v[] = {text};
    PGresult *r = PQexecParams(
        db,
        "INSERT INTO price_books (price_book_id, version, effective_from,"
        " currency, book) SELECT $1::jsonb->>'id', 1, '2025-01-01', 'USD',"
        " $1::jsonb - 'grants'",
        1, NULL, v, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        bench_db_die("book", PQerrorMessage(db));
    PQclear(r);
    snprintf(q, sizeof(q),
             "INSERT INTO accounts (account_id) SELECT 'acct-' || g"
             " FROM generate_series(1, %lld) g",
             accounts);
    sql(db, q);
    sql(db, "INSERT INTO account_price_books (account_id, valid_from,"
            " price_book_id, version) SELECT account_id, '2026-01-01',"
            " 'e2b-hobby', 1 FROM accounts");
    /* 2026-01-01T00:00Z is hour 490896: each hour a sandbox of 2 vCPU
     * and 4 GiB running, with some disk and egress. */
    snprintf(q, sizeof(q),
             "INSERT INTO usage_hourly_merged (account_pk, hour, samples,"
             " running_s, vcpu_s, cpu_used_s, mem_byte_s, mem_used_byte_s,"
             " disk_byte_s, egress_bytes) SELECT a.account_pk, 490896 + h,"
             " 3600, 3600, 7200, 3600, 15461882265600, 7730941132800,"
             " 38654705664000, 0 FROM accounts a, generate_series(0, %lld) h",
             hours - 1);
    sql(db, q);
    /* Their periods' sums, as the merge adds them (migration 0024). */
    sql(db, "SELECT meter_periods_rebuild()");
    /* The last minute's batches, in the last hour seeded, not merged
     * yet: a row an account. */
    snprintf(q, sizeof(q),
             "INSERT INTO usage_hourly (account_pk, hour, samples, running_s,"
             " vcpu_s, cpu_used_s, mem_byte_s, mem_used_byte_s, disk_byte_s,"
             " egress_bytes, added_at) SELECT account_pk, 490896 + %lld, 60,"
             " 60, 120, 60, 257698037760, 128849018880, 644245094400, 0,"
             " now() FROM accounts",
             hours - 1);
    sql(db, q);
    sql(db, "VACUUM ANALYZE usage_hourly_merged, usage_period_merged,"
            " usage_hourly");
}

static double
evaluate(PGconn *db, int *raised, size_t *watched)
{
    struct meter_err e = {{0}};
    double t0 = bench_now();
    if (meter_db_alerts_evaluate(db, NOW, raised, watched, &e) < 0)
        bench_db_die("evaluate", e.msg);
    return bench_now() - t0;
}

static double
baseline(PGconn *db)
{
    double t0 = bench_now();
    PQclear(bench_sql(
        db, "SELECT count(*) FROM (SELECT account_pk, sum(samples),"
            " sum(running_s), sum(vcpu_s), sum(cpu_used_s), sum(mem_byte_s),"
            " sum(mem_used_byte_s), sum(disk_byte_s), sum(egress_bytes)"
            " FROM usage_hourly_totals WHERE hour >= 490896"
            " AND hour < 491640 GROUP BY account_pk) x"));
    return bench_now() - t0;
}

int
main(int argc, char **argv)
{
    long long accounts = bench_arg(argc, argv, 1, 10000, 1000000);
    long long hours = bench_arg(argc, argv, 2, 720, 744);
    struct bench_db b;
    PGconn *db = bench_db_create(&b, "alert_bench");
    printf("alert_bench: %lld accounts, %lld hourly rollups each (%lld rows)"
           "\n",
           accounts, hours, accounts * hours);
    double t0 = bench_now();
    seed(db, accounts, hours);
    printf("  stored in %.1f s\n", bench_now() - t0);
    sql(db,
        "INSERT INTO alert_rules (name, metric, threshold, currency,"
        " percents) VALUES ('budget', 'amount', 1000000, 'USD', '{80,100}'),"
        " ('vcpu', 'vcpu_hours', 1000000, NULL, '{100}')");
    bench_print_loadavg("before");
    double ev[RUNS], base[RUNS];
    int raised = 0;
    size_t watched = 0;
    for (int i = 0; i < RUNS; i++) {
        base[i] = baseline(db);
        ev[i] = evaluate(db, &raised, &watched);
        if (raised || (long long)watched != accounts)
            bench_db_die("evaluate", "an account not watched, or raised");
    }
    char se[96], sb[96];
    bench_spread(se, ev, RUNS, 3);
    bench_spread(sb, base, RUNS, 3);
    double med = bench_quantile(ev, RUNS, 0.5);
    printf("  the rollups summed by account (baseline): %s s\n", sb);
    printf("  an evaluation, 2 rules x %zu accounts:     %s s (%.2fx the "
           "baseline) %s (target < %.1f s)\n",
           watched, se, med / bench_quantile(base, RUNS, 0.5),
           med < TARGET_S ? "ok" : "FAIL", TARGET_S);
    /* The storm: every account crosses a new rule at once. */
    sql(db, "INSERT INTO alert_rules (name, metric, threshold, percents)"
            " VALUES ('storm', 'running_hours', 1, '{100}')");
    double storm = evaluate(db, &raised, &watched);
    int storm_raised = raised;
    double after = evaluate(db, &raised, &watched);
    printf("  the first evaluation of a rule every account crossed: %.3f s,"
           " %d crossings and events raised; the next: %.3f s, %d raised\n",
           storm, storm_raised, after, raised);
    bench_print_loadavg("after");
    PQfinish(db);
    bench_db_drop(&b, getenv("ALERT_BENCH_KEEP") != NULL);
    return 0;
}
