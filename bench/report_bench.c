/*
 * report_bench.c - the dashboard's report endpoints under wrk, against
 * the baseline of meterd's /healthz, in one run on one machine.
 *
 * Over the stored fleet-day of invoice_bench (fleet_load.c: 1,000
 * sandboxes x 86,400 s = 86.4 million samples, 100 accounts, stored
 * through meter_ingest, then `meterctl invoice run` over its period for
 * drafts), meterd is started on a loopback port, its background merge
 * of the rollups awaited (--merge-every), and each endpoint of the
 * table below is driven by `wrk -t2 -c32 -dSECONDS --latency` with a
 * finance key, alternating with /healthz: healthz, e1, e2, ..., three
 * times. Each figure is the median of the three runs, min and max
 * beside it; the ratio is the endpoint's median req/s to /healthz's.
 * Targets (issue "Finance dashboards over HTTP"): p99 at or under 50 ms
 * for each report endpoint; the overview at least a quarter of
 * /healthz's req/s. Every request must get the endpoint's status and no
 * socket error; an endpoint that answers 404 is reported missing (the
 * report routes are being written) and not run.
 *
 * The fleet-day takes minutes to store, so it is kept between runs in
 * database report_bench_SANDBOXES_SECONDS_ACCOUNTS of the cluster
 * (a marker row says it was stored whole, and the rollups' sample count
 * must match it); REPORT_BENCH_REBUILD=1 stores it again.
 *
 * usage: report_bench [SECONDS] [THREADS] [CONNECTIONS]
 *   SECONDS      each wrk run (default 5)
 *   THREADS      meterd's --threads (default 4, meterd's own default)
 *   CONNECTIONS  wrk's connections (default 32)
 * environment: REPORT_BENCH_REBUILD=1 (store the fleet-day again),
 * REPORT_BENCH_FLEET=SANDBOXES:SECONDS:ACCOUNTS (a smaller fleet, for
 * trying the bench out; default 1000:86400:100), REPORT_BENCH_ONLY=TEXT
 * (only endpoints whose name contains TEXT, /healthz always). The
 * database: $METER_DATABASE_URL, else the embedded one of the current
 * directory. wrk must be on the PATH (scripts/install-deps.sh).
 * Exit status 1 if a request got another status than its endpoint's or
 * wrk saw a socket error; a missed target is printed FAIL and is not an
 * error (as in the other benches).
 */
#include <curl/curl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "bench_db.h"
#include "fleet_load.h"

#ifndef METERD_PATH
#define METERD_PATH "meterd"
#endif
#ifndef METERCTL_PATH
#define METERCTL_PATH "meterctl"
#endif

#define RUNS 3
#define P99_TARGET_MS 50.0

/* The endpoints, one line each. Paths are those of the fleet-day
 * (period 2026-01, its day 2026-01-10, accounts acct-0 to acct-99). */
struct endpoint {
    const char *name; /* as printed */
    const char *path; /* path and query */
    unsigned expect;  /* the status every request must get */
    bool report;      /* a report endpoint: held to p99 <= 50 ms */
    double min_ratio; /* req/s at least this times /healthz's; 0: none */
};

static const struct endpoint endpoints[] = {
    /* The routes of today, for comparison: a finance key looked up,
     * then a 400 before any query of the route's own; an invoice list;
     * an account's usage from the rollups. */
    {"auth only (400, no query)", "/v1/usage?account=acct-7", 400, false, 0},
    {"/v1/invoices account", "/v1/invoices?account=acct-7&period=2026-01", 200,
     false, 0},
    {"/v1/usage hour, month",
     "/v1/usage?account=acct-7&from=2026-01-01T00:00:00Z"
     "&to=2026-02-01T00:00:00Z&granularity=hour",
     200, false, 0},
    /* The dashboard's report endpoints. */
    {"reports/overview", "/v1/reports/overview?period=2026-01", 200, true,
     0.25},
    {"reports/accounts", "/v1/reports/accounts?period=2026-01", 200, true, 0},
    {"reports/accounts/{id}", "/v1/reports/accounts/acct-7?period=2026-01", 200,
     true, 0},
    {"reports/usage day, month",
     "/v1/reports/usage?from=2026-01-01T00:00:00Z&to=2026-02-01T00:00:00Z"
     "&granularity=day",
     200, true, 0},
    {"reports/usage hour, month",
     "/v1/reports/usage?from=2026-01-01T00:00:00Z&to=2026-02-01T00:00:00Z"
     "&granularity=hour",
     200, true, 0},
    {"reports/invoices", "/v1/reports/invoices?period=2026-01", 200, true, 0},
    /* A page, rendered from the overview's report. */
    {"page /overview", "/overview?period=2026-01", 200, true, 0},
};
#define NENDPOINTS (sizeof(endpoints) / sizeof(endpoints[0]))

static pid_t meterd = -1;

static void
die(const char *what, const char *detail)
{
    fprintf(stderr, "report_bench: %s: %s\n", what, detail);
    if (meterd > 0) {
        kill(meterd, SIGTERM);
        waitpid(meterd, NULL, 0);
    }
    exit(1);
}

/* Interrupted: meterd goes too (wrk, in the same process group, gets
 * the terminal's signal itself). */
static void
on_signal(int sig)
{
    if (meterd > 0)
        kill(meterd, SIGTERM);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void
sql_do(PGconn *db, const char *q)
{
    PQclear(bench_sql(db, q));
}

/* ---- the fleet-day, stored once and kept --------------------------------- */

/* Whether db holds the whole fleet-day: the marker row, and as many
 * samples in the rollups as it says. */
static bool
fleet_complete(PGconn *db, size_t sandboxes, unsigned seconds, size_t accounts)
{
    char q[512];
    PGresult *r = bench_sql(db, "SELECT to_regclass('report_bench_marker')");
    bool has = !PQgetisnull(r, 0, 0);
    PQclear(r);
    if (!has)
        return false;
    snprintf(q, sizeof(q),
             "SELECT m.samples, round(m.load_s), to_char(m.stored_at,"
             " 'YYYY-MM-DD HH24:MI'), (SELECT coalesce(sum(samples), 0)"
             " FROM usage_hourly) FROM report_bench_marker m"
             " WHERE m.sandboxes = %zu AND m.seconds = %u AND m.accounts = %zu",
             sandboxes, seconds, accounts);
    r = bench_sql(db, q);
    bool ok = PQntuples(r) == 1 &&
              strcmp(PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 3)) == 0;
    if (ok)
        printf("  the fleet-day stored on %s (%s samples, stored in %s s) "
               "is kept: REPORT_BENCH_REBUILD=1 stores it again\n",
               PQgetvalue(r, 0, 2), PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1));
    PQclear(r);
    return ok;
}

/* Runs cmd through the shell; exits if it fails. */
static void
run(const char *cmd)
{
    if (system(cmd) != 0)
        die("command failed", cmd);
}

/* Stores the fleet-day, runs the invoices of its period (drafts) and
 * sets the marker. */
static void
fleet_store(PGconn *db, const char *conninfo, size_t sandboxes,
            unsigned seconds, size_t accounts)
{
    char q[8192];
    printf("  storing the fleet-day (takes minutes; kept for the next "
           "runs)\n");
    fflush(stdout);
    double t0 = bench_now();
    size_t stored =
        fleet_load(db, sandboxes, seconds, accounts, "report_bench");
    sql_do(db, "VACUUM ANALYZE");
    double t1 = bench_now();
    snprintf(q, sizeof(q), "%s --db '%s' invoice run --period %s >/dev/null",
             METERCTL_PATH, conninfo, FLEET_PERIOD);
    run(q);
    printf("  invoice run of %s (drafts) in %.1f s\n", FLEET_PERIOD,
           bench_now() - t1);
    sql_do(db, "VACUUM ANALYZE");
    sql_do(db, "CHECKPOINT");
    double load_s = bench_now() - t0;
    sql_do(db, "CREATE TABLE report_bench_marker (sandboxes bigint, seconds"
               " bigint, accounts bigint, samples bigint, load_s float8,"
               " stored_at timestamptz DEFAULT now())");
    snprintf(q, sizeof(q),
             "INSERT INTO report_bench_marker (sandboxes, seconds, accounts,"
             " samples, load_s) VALUES (%zu, %u, %zu, %zu, %.1f)",
             sandboxes, seconds, accounts, stored, load_s);
    sql_do(db, q);
    printf("  fleet-day ready in %.1f s in all\n", load_s);
}

/* ---- keys and meterd ---------------------------------------------------- */

/* A new finance key through meterctl; its token into token. */
static void
finance_key(const char *conninfo, char *token, size_t n)
{
    char cmd[8192];
    snprintf(cmd, sizeof(cmd),
             "%s --db '%s' keys create --role finance --name report_bench "
             "2>/dev/null",
             METERCTL_PATH, conninfo);
    FILE *p = popen(cmd, "r");
    if (!p || !fgets(token, (int)n, p) || pclose(p) != 0)
        die("key", "meterctl keys create failed");
    token[strcspn(token, "\r\n")] = '\0';
}

static size_t
keep_body(char *d, size_t s, size_t n, void *a)
{
    struct meter_buf *b = a;
    meter_buf_add(b, d, s * n);
    return s * n;
}

/* GETs url once (token: NULL for none); the status, 0 if no answer; the
 * body into body if not NULL. */
static long
get(const char *url, const char *token, struct meter_buf *body)
{
    struct meter_buf ignored = {0};
    CURL *c = curl_easy_init();
    struct curl_slist *h = NULL;
    char auth[256];
    if (token) {
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
        h = curl_slist_append(h, auth);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, keep_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, body ? body : &ignored);
    long status = 0;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    meter_buf_release(&ignored);
    return status;
}

/* ---- wrk ---------------------------------------------------------------- */

struct result {
    double rps, p50_ms, p99_ms;
    long long requests, bad_status, socket_errors;
    char socket_line[128]; /* wrk's line, when there were errors */
};

/* A duration as wrk prints it ("812.00us", "1.23ms", "2.01s", "1.00m")
 * in milliseconds. */
static double
wrk_ms(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (strncmp(end, "us", 2) == 0)
        return v / 1e3;
    if (strncmp(end, "ms", 2) == 0)
        return v;
    if (strncmp(end, "s", 1) == 0)
        return v * 1e3;
    if (strncmp(end, "m", 1) == 0)
        return v * 60e3;
    if (strncmp(end, "h", 1) == 0)
        return v * 3600e3;
    return -1;
}

/* Runs wrk on url for secs seconds over conns connections (token: NULL
 * for none) and parses what it prints. */
static struct result
wrk(const char *url, const char *token, unsigned secs, unsigned conns)
{
    int fd[2];
    if (pipe(fd) < 0)
        die("wrk", "no pipe");
    char t[16], c[16], d[16], auth[256];
    snprintf(t, sizeof(t), "-t%u", conns < 2 ? conns : 2);
    snprintf(c, sizeof(c), "-c%u", conns);
    snprintf(d, sizeof(d), "-d%us", secs);
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s",
             token ? token : "");
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        if (token)
            execlp("wrk", "wrk", t, c, d, "--latency", "-H", auth, url,
                   (char *)NULL);
        else
            execlp("wrk", "wrk", t, c, d, "--latency", url, (char *)NULL);
        fprintf(stderr, "report_bench: cannot run wrk: install it "
                        "(scripts/install-deps.sh)\n");
        _exit(127);
    }
    close(fd[1]);
    FILE *f = fdopen(fd[0], "r");
    struct result r = {-1, -1, -1, -1, 0, 0, ""};
    char line[512];
    struct meter_buf all = {0};
    while (fgets(line, sizeof(line), f)) {
        meter_buf_str(&all, line);
        const char *s = line + strspn(line, " \t");
        long long a, b, cc, dd;
        if (strncmp(s, "Requests/sec:", 13) == 0) {
            if (bench_num(s + 13, "", &r.rps) < 0)
                r.rps = -1;
        } else if (strncmp(s, "50%", 3) == 0)
            r.p50_ms = wrk_ms(s + 3 + strspn(s + 3, " \t"));
        else if (strncmp(s, "99%", 3) == 0)
            r.p99_ms = wrk_ms(s + 3 + strspn(s + 3, " \t"));
        else if (strncmp(s, "Non-2xx or 3xx responses:", 25) == 0) {
            /* Unreadable: the run fails as wrk's output does not read
             * (its requests line came before). */
            if (bench_int(s + 25, "", &r.bad_status) < 0)
                r.requests = -1;
        } else if (sscanf(s,
                          "Socket errors: connect %lld, read %lld, write "
                          "%lld, timeout %lld",
                          &a, &b, &cc, &dd) == 4) {
            r.socket_errors = a + b + cc + dd;
            snprintf(r.socket_line, sizeof(r.socket_line), "%.*s",
                     (int)strcspn(s, "\n"), s);
        } else if (strstr(s, " requests in ") &&
                   bench_int(s, " requests in ", &r.requests) < 0)
            r.requests = -1;
    }
    fclose(f);
    int st;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || r.rps < 0 || r.p50_ms < 0 ||
        r.p99_ms < 0 || r.requests < 0) {
        fprintf(stderr, "%.*s", (int)all.len, all.p ? all.p : "");
        die("wrk", "failed, or printed what this bench cannot read");
    }
    meter_buf_release(&all);
    return r;
}

/* ---- main --------------------------------------------------------------- */

struct measured {
    const struct endpoint *e; /* NULL: /healthz */
    bool present;
    char why[256]; /* why not measured, or what went wrong */
    struct result r[RUNS];
    bool failed; /* a run had a wrong status or a socket error */
};

/* The median of v's RUNS values, min and max into lo and hi. */
static double
median(double *v, double *lo, double *hi)
{
    qsort(v, RUNS, sizeof(v[0]), bench_by_double);
    *lo = v[0];
    *hi = v[RUNS - 1];
    return v[RUNS / 2];
}

/* One run of m (i: its index; -1 for the warm-up): wrk, then the checks
 * of its statuses and sockets. */
static void
measure(struct measured *m, int i, const char *base, const char *token,
        unsigned secs, unsigned conns)
{
    char url[1024], which[32];
    snprintf(url, sizeof(url), "%s%s", base, m->e ? m->e->path : "/healthz");
    struct result r = wrk(url, m->e ? token : NULL, secs, conns);
    unsigned expect = m->e ? m->e->expect : 200;
    /* wrk counts the statuses above 399 */
    long long wrong = expect >= 400 ? r.requests - r.bad_status : r.bad_status;
    if (wrong || r.socket_errors) {
        m->failed = true;
        if (i < 0)
            snprintf(which, sizeof(which), "warm-up");
        else
            snprintf(which, sizeof(which), "run %d", i + 1);
        snprintf(m->why, sizeof(m->why), "%s: %lld of %lld requests not %u; %s",
                 which, wrong, r.requests, expect,
                 r.socket_errors ? r.socket_line : "no socket errors");
    }
    if (i >= 0)
        m->r[i] = r;
}

int
main(int argc, char **argv)
{
    unsigned secs = (unsigned)bench_arg(argc, argv, 1, 5, 3600);
    unsigned threads = (unsigned)bench_arg(argc, argv, 2, 4, 256);
    unsigned conns = (unsigned)bench_arg(argc, argv, 3, 32, 100000);
    size_t sandboxes = 1000, accounts = 100;
    unsigned seconds = 86400;
    const char *fleet_env = getenv("REPORT_BENCH_FLEET");
    if (fleet_env && *fleet_env &&
        sscanf(fleet_env, "%zu:%u:%zu", &sandboxes, &seconds, &accounts) != 3)
        die("usage", "REPORT_BENCH_FLEET=SANDBOXES:SECONDS:ACCOUNTS");
    if (!secs || !threads || threads > 62 || !conns || !sandboxes ||
        seconds < 60 || seconds > 86400 * 21 || !accounts)
        die("usage", "report_bench [SECONDS] [THREADS<=62] [CONNECTIONS]");
    const char *only = getenv("REPORT_BENCH_ONLY");
    const char *rebuild = getenv("REPORT_BENCH_REBUILD");

    printf("report_bench: %zu sandboxes x %u s, %zu accounts; meterd "
           "--threads %u; wrk %u connections, %u s a run, %d runs each\n",
           sandboxes, seconds, accounts, threads, conns, secs, RUNS);
    bench_print_loadavg("at start");
    fflush(stdout);

    /* The fleet-day: kept if whole, else stored. */
    struct bench_db bdb;
    char name[64];
    snprintf(name, sizeof(name), "report_bench_%zu_%u_%zu", sandboxes, seconds,
             accounts);
    bench_db_attach(&bdb, name);
    PGconn *db = NULL;
    if (bench_db_exists(&bdb) && !(rebuild && *rebuild && *rebuild != '0')) {
        db = bench_db_open(&bdb);
        if (!fleet_complete(db, sandboxes, seconds, accounts)) {
            printf("  database %s is incomplete: storing it again\n", name);
            PQfinish(db);
            db = NULL;
        }
    }
    if (!db) {
        db = bench_db_make(&bdb);
        fleet_store(db, bdb.conninfo, sandboxes, seconds, accounts);
    }
    char token[128];
    finance_key(bdb.conninfo, token, sizeof(token));

    /* meterd, on a loopback port, with no rate limit: one key sends
     * every request. */
    int port = 20000 + (int)(getpid() % 20000);
    char listen[64], base[128], targ[16], url[1024];
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
    snprintf(base, sizeof(base), "http://%s", listen);
    snprintf(targ, sizeof(targ), "%u", threads);
    meterd = fork();
    if (meterd == 0) {
        execl(METERD_PATH, "meterd", "--listen", listen, "--db", bdb.conninfo,
              "--log-level", "warn", "--threads", targ, "--rate-limit", "0",
              (char *)NULL);
        _exit(127);
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    snprintf(url, sizeof(url), "%s/readyz", base);
    for (int i = 0; get(url, NULL, NULL) != 200; i++) {
        if (i > 100)
            die("meterd", "not ready after 10 s");
        usleep(100000);
    }

    /* meterd merges the rollups in the background (--merge-every): the
     * runs measure the steady state, once that is done (the fleet-day's
     * rows merge in a few seconds, once). */
    double merge_started = bench_now();
    for (int i = 0;; i++) {
        PGresult *r =
            bench_sql(db, "SELECT count(*) FROM usage_hourly WHERE NOT merged");
        long long left;
        if (bench_int(PQgetvalue(r, 0, 0), "", &left) < 0)
            die("meterd", "the rollups left to merge do not read");
        PQclear(r);
        if (!left)
            break;
        if (i > 1200)
            die("meterd", "the rollups are not merged after 10 minutes");
        usleep(500000);
    }
    printf("  rollups merged by meterd (%.1f s waited)\n",
           bench_now() - merge_started);

    /* Which endpoints exist: one request each. */
    struct measured ms[NENDPOINTS + 1];
    size_t n = 0;
    ms[n++] = (struct measured){.e = NULL, .present = true};
    for (size_t i = 0; i < NENDPOINTS; i++) {
        struct measured *m = &ms[n++];
        *m = (struct measured){.e = &endpoints[i]};
        if (only && *only && !strstr(endpoints[i].name, only)) {
            snprintf(m->why, sizeof(m->why), "not run (REPORT_BENCH_ONLY)");
            continue;
        }
        struct meter_buf body = {0};
        snprintf(url, sizeof(url), "%s%s", base, endpoints[i].path);
        long st = get(url, token, &body);
        meter_buf_str(&body, "");
        if (st == (long)endpoints[i].expect) {
            m->present = true;
        } else if (st == 404) {
            snprintf(m->why, sizeof(m->why), "missing (404)");
        } else {
            m->failed = true;
            snprintf(m->why, sizeof(m->why), "answered %ld, not %u: %.100s", st,
                     endpoints[i].expect, body.p ? body.p : "");
            m->why[strcspn(m->why, "\n")] = '\0';
        }
        meter_buf_release(&body);
    }

    /* A second of each, untimed: connections made, caches warm. */
    for (size_t i = 0; i < n; i++)
        if (ms[i].present)
            measure(&ms[i], -1, base, token, 1, conns);
    /* healthz, e1, e2, ..., RUNS times. */
    for (int run_i = 0; run_i < RUNS; run_i++)
        for (size_t i = 0; i < n; i++)
            if (ms[i].present) {
                measure(&ms[i], run_i, base, token, secs, conns);
                printf("  run %d %-28s %9.0f req/s  p50 %7.2f ms  p99 %7.2f "
                       "ms\n",
                       run_i + 1, ms[i].e ? ms[i].e->name : "/healthz",
                       ms[i].r[run_i].rps, ms[i].r[run_i].p50_ms,
                       ms[i].r[run_i].p99_ms);
                fflush(stdout);
            }
    kill(meterd, SIGTERM);
    waitpid(meterd, NULL, 0);
    meterd = -1;

    /* The table. */
    double lo, hi, v[RUNS];
    for (int i = 0; i < RUNS; i++)
        v[i] = ms[0].r[i].rps;
    double base_rps = median(v, &lo, &hi);
    printf("\n%-28s %-26s %9s %-24s %8s  %s\n", "endpoint",
           "req/s median (min-max)", "p50 ms", "p99 ms median (min-max)",
           "/healthz", "target");
    int errors = 0, misses = 0;
    for (size_t i = 0; i < n; i++) {
        struct measured *m = &ms[i];
        const char *label = m->e ? m->e->name : "/healthz (baseline)";
        if (!m->present) {
            printf("%-28s %s\n", label, m->why);
            errors += m->failed;
            continue;
        }
        double rlo, rhi, plo, phi, rv[RUNS], mv[RUNS], pv[RUNS];
        for (int k = 0; k < RUNS; k++) {
            rv[k] = m->r[k].rps;
            mv[k] = m->r[k].p50_ms;
            pv[k] = m->r[k].p99_ms;
        }
        double rps = median(rv, &rlo, &rhi);
        double p50 = median(mv, &lo, &hi);
        double p99 = median(pv, &plo, &phi);
        char a[64], b[64], verdict[300] = "-";
        snprintf(a, sizeof(a), "%.0f (%.0f-%.0f)", rps, rlo, rhi);
        snprintf(b, sizeof(b), "%.2f (%.2f-%.2f)", p99, plo, phi);
        if (m->failed) {
            snprintf(verdict, sizeof(verdict), "FAIL: %s", m->why);
            errors++;
        } else if (m->e && m->e->report) {
            bool ok = p99 <= P99_TARGET_MS;
            int k = snprintf(verdict, sizeof(verdict), "p99<=%.0fms %s",
                             P99_TARGET_MS, ok ? "PASS" : "FAIL");
            if (m->e->min_ratio > 0) {
                bool rok = rps >= m->e->min_ratio * base_rps;
                snprintf(verdict + k, sizeof(verdict) - (size_t)k,
                         "; req/s>=%.2fx %s", m->e->min_ratio,
                         rok ? "PASS" : "FAIL");
                ok = ok && rok;
            }
            misses += !ok;
        }
        printf("%-28s %-26s %9.2f %-24s %8.3f  %s\n", label, a, p50, b,
               rps / base_rps, verdict);
    }
    printf("\n(median of %d runs of %u s each, alternating with /healthz; "
           "meterd --threads %u, wrk -c%u; report targets: p99 <= %.0f ms, "
           "overview >= 0.25 x /healthz req/s; %d target(s) missed)\n",
           RUNS, secs, threads, conns, P99_TARGET_MS, misses);
    bench_print_loadavg("at end");

    /* The run's key goes; the fleet-day stays. */
    char q[8192];
    snprintf(q, sizeof(q),
             "UPDATE api_keys SET revoked_at = now() WHERE name ="
             " 'report_bench' AND revoked_at IS NULL");
    sql_do(db, q);
    PQfinish(db);
    PQfinish(bdb.admin);
    meter_cluster_free(bdb.cluster);
    printf("  the fleet-day stays in database %s\n", name);
    curl_global_cleanup();
    return errors ? 1 : 0;
}
