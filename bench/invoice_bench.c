/*
 * invoice_bench.c - the invoice run over a stored fleet-day against the
 * baseline of reading the same blocks out with psql, in one run on one
 * machine.
 *
 *   (a) psql: COPY (SELECT the period's blocks, in the run's order) TO
 *       STDOUT (FORMAT binary), into /dev/null: the cost of reading the
 *       blocks at all;
 *   (b) meterctl invoice run --period P: reading, block decoding,
 *       rating every account with its book and writing the drafts.
 * Each is run three times, alternating, on the blocks as stored, then
 * once they are packed (meterctl usage pack, what meterd does an hour
 * after: (a) then reads blocks and packs), then again once the month is
 * closed (meterctl usage compact), each step timed too;
 * it prints the best and median stored samples per second of each,
 * their ratio, the run's cost per account, and the largest resident
 * size of the runs (and of any child).
 *
 * The fleet is full (a sample of every slot every second: sandboxes x
 * seconds samples) and stored through the ingest transaction
 * (meter_ingest), so the blocks, sandboxes and rollups are exactly what
 * meterd stores (fleet_load.c, shared with report_bench).
 *
 * usage: invoice_bench [SANDBOXES] [SECONDS] [ACCOUNTS]
 * (default 1000 x 86400 = 86.4 million samples, 100 accounts). The
 * database: $METER_DATABASE_URL, else the embedded one of the current
 * directory. The bench makes and drops its own database
 * ($INVOICE_BENCH_KEEP set: keeps it, for profiling).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "bench_db.h"
#include "fleet_load.h"

#ifndef METERCTL_PATH
#define METERCTL_PATH "meterctl"
#endif

static void
die(const char *what, const char *detail)
{
    fprintf(stderr, "invoice_bench: %s: %s\n", what, detail);
    exit(1);
}

/* The largest resident size of the runs (meterctl invoice run), KiB. */
static long run_maxrss;

/* Runs cmd through the shell; its wall time. With rss, the largest
 * resident size of the command goes to run_maxrss. */
static double
timed_rss(const char *cmd, bool rss)
{
    double t0 = bench_now();
    pid_t pid = fork();
    if (pid < 0)
        die("cannot fork", cmd);
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    int st;
    struct rusage ru;
    if (wait4(pid, &st, 0, &ru) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        die("command failed", cmd);
    double dt = bench_now() - t0;
    if (rss && ru.ru_maxrss > run_maxrss)
        run_maxrss = ru.ru_maxrss;
    return dt;
}

static double
timed(const char *cmd)
{
    return timed_rss(cmd, false);
}

int
main(int argc, char **argv)
{
    size_t sandboxes = (size_t)bench_arg(argc, argv, 1, 1000, 10000000);
    unsigned seconds = (unsigned)bench_arg(argc, argv, 2, 86400, 86400 * 21);
    size_t accounts = (size_t)bench_arg(argc, argv, 3, 100, 10000000);
    if (!sandboxes || seconds < 60 || seconds > 86400 * 21 || !accounts)
        die("usage", "invoice_bench [SANDBOXES] [SECONDS<=1814400] [ACCOUNTS]");

    struct bench_db bdb;
    PGconn *db = bench_db_create(&bdb, "invoice_bench");
    const char *conninfo = bdb.conninfo;

    printf("invoice_bench: %zu sandboxes x %u s, %zu accounts\n", sandboxes,
           seconds, accounts);
    fflush(stdout);
    size_t stored =
        fleet_load(db, sandboxes, seconds, accounts, "invoice_bench");
    /* Measured from a quiet server: no checkpoint left to write. */
    PQclear(bench_sql(db, "VACUUM ANALYZE"));
    PQclear(bench_sql(db, "CHECKPOINT"));

    char copy[8192], run[8192];
    snprintf(copy, sizeof(copy),
             "psql '%s' -qAtc \"COPY (SELECT a.account_id, s.sandbox_id,"
             " b.minute, b.seconds, b.data FROM (SELECT account_pk,"
             " sandbox_pk, minute, seconds, data FROM usage_blocks UNION ALL"
             " SELECT account_pk, sandbox_pk, minute, 0, data FROM"
             " usage_packs) b JOIN sandboxes"
             " s ON (s.account_pk, s.sandbox_pk) = (b.account_pk, "
             "b.sandbox_pk) JOIN accounts a ON"
             " a.account_pk = b.account_pk WHERE b.minute >= %lld AND"
             " b.minute < %lld ORDER BY b.account_pk, b.sandbox_pk, b.minute)"
             " TO STDOUT (FORMAT binary)\" >/dev/null",
             conninfo, 1767225600LL / 60, 1769904000LL / 60);
    snprintf(run, sizeof(run),
             "%s --db '%s' invoice run --period %s >/dev/null", METERCTL_PATH,
             conninfo, FLEET_PERIOD);
    /* As stored, packed, then after closing the month. */
    char pack[8192], compact[8192];
    snprintf(pack, sizeof(pack), "%s --db '%s' usage pack --after 0 >/dev/null",
             METERCTL_PATH, conninfo);
    snprintf(compact, sizeof(compact),
             "%s --db '%s' usage compact --period %s >/dev/null", METERCTL_PATH,
             conninfo, FLEET_PERIOD);
    /* $INVOICE_BENCH_PHASES=1: as stored only (the packing and the
     * compaction of a large fleet take minutes). */
    const char *ph = getenv("INVOICE_BENCH_PHASES");
    int phases = ph && strcmp(ph, "1") == 0 ? 1 : 3;
    for (int phase = 0; phase < phases; phase++) {
        if (phase == 1) {
            printf("  packed (usage pack) in %.1f s\n", timed(pack));
            PQclear(bench_sql(db, "VACUUM ANALYZE"));
            PQclear(bench_sql(db, "CHECKPOINT"));
        }
        if (phase == 2) {
            printf("  month closed (usage compact) in %.1f s\n",
                   timed(compact));
            PQclear(bench_sql(db, "CHECKPOINT"));
        }
        double a[3], b[3];
        for (int i = 0; i < 3; i++) {
            a[i] = timed(copy);
            b[i] = timed_rss(run, true);
        }
        double ab = bench_quantile(a, 3, 0), bb = bench_quantile(b, 3, 0);
        double am = bench_quantile(a, 3, 0.5), bm = bench_quantile(b, 3, 0.5);
        printf("  (a) psql COPY of the rows:    best %6.2f s  %6.1f M "
               "samples/s  (median %.1f)\n",
               ab, (double)stored / ab / 1e6, (double)stored / am / 1e6);
        printf("  (b) meterctl invoice run:     best %6.2f s  %6.1f M "
               "samples/s  (median %.1f)\n",
               bb, (double)stored / bb / 1e6, (double)stored / bm / 1e6);
        printf("  (b)/(a) time: %.2f; (b) per account: %.3f ms\n", bb / ab,
               bb * 1e3 / (double)accounts);
    }
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    printf("  largest resident size: of the invoice runs %ld MiB, of any "
           "child %ld MiB\n",
           run_maxrss / 1024, ru.ru_maxrss / 1024);

    PQfinish(db);
    bench_db_drop(&bdb, getenv("INVOICE_BENCH_KEEP") != NULL);
    return 0;
}
