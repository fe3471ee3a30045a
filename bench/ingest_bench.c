/*
 * ingest_bench.c - meterd end to end against the baseline of loading the
 * same samples with psql \copy, in one run on one machine.
 *
 *   (a) psql \copy of the samples as CSV into a naive table, one row per
 *       sample, primary key (sandbox_id, ts);
 *   (b) meterd, from pre-built columnar batches to durable commit, with
 *       HTTP, parsing, validation, exactly-once and rollups; also the
 *       row forms (JSON array, NDJSON) on a slice;
 *   (c) then what meterd does once the hours have settled: every hour's
 *       blocks packed (usage_pack.c), their space given back by VACUUM;
 *   (d) (b) again with webhook deliveries under way all along (issue 25:
 *       a delivery should cost ingestion nothing measurable), to an
 *       endpoint on a receiver of the bench's: events written at a
 *       steady HOOK_RATE a second, as billing and the alerts write
 *       them, each delivered as it comes;
 *   (e) the same with more events waiting in the outbox than meterd's
 *       delivery thread sends meanwhile: the worst case, a backlog
 *       drained as fast as it goes (an endpoint back after an outage).
 * It reports samples per second, p50/p99 batch latency, and bytes per
 * sample on disk (indexes included) for both stores, as ingested and as
 * packed, and the packing's samples per second, for the bench's
 * fleet and a noisy one (sim_fleet_noisy), and (d)'s and (e)'s samples
 * per second and deliveries per second beside (b)'s, three runs of each,
 * alternating, each figure the median with min and max beside it.
 *
 * usage: ingest_bench [SANDBOXES] [SECONDS] [CONNECTIONS]
 * (default 2500 3600 4); INGEST_BENCH_METERD=PATH runs another meterd
 * (an older build, to compare).
 * The database: $METER_DATABASE_URL, else the embedded one of the
 * current directory. The bench makes and drops its own database.
 */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "bench_http.h"
#include "bench_db.h"
#include "meter_sample.h"
#include "sim.h"

#ifndef METERD_PATH
#define METERD_PATH "meterd"
#endif

static void
die(const char *what, const char *detail)
{
    fprintf(stderr, "ingest_bench: %s: %s\n", what, detail);
    exit(1);
}

static long long
sql_int(PGconn *db, const char *q)
{
    PGresult *r = bench_sql(db, q);
    long long v;
    if (bench_int(PQgetvalue(r, 0, 0), "", &v) < 0)
        die("not an integer", q);
    PQclear(r);
    return v;
}

/* ---- the workload ------------------------------------------------------- */

struct batch {
    struct meter_buf body;
    size_t samples;
    double latency;
};

struct build {
    struct meter_columnar *t;
    FILE *csv;
    char line[512];
};

static void
add_run(const char *account, const char *sandbox,
        const struct pricing_second *s, size_t n, void *arg)
{
    struct build *b = arg;
    meter_columnar_add(b->t, account, sandbox, s, n);
    for (size_t i = 0; b->csv && i < n; i++) {
        const struct pricing_second *x = &s[i];
        fprintf(b->csv, "%s,%lld,%s,%s,%u.%04u,%u.%04u,%llu,%llu,%llu,%llu\n",
                sandbox, (long long)x->ts, account,
                x->vcpu ? "running" : "paused", x->vcpu / 10000,
                x->vcpu % 10000, x->cpu_used / 10000, x->cpu_used % 10000,
                (unsigned long long)x->mem_bytes,
                (unsigned long long)x->mem_used_bytes,
                (unsigned long long)x->disk_bytes,
                (unsigned long long)x->egress_bytes);
    }
}

/* The next nb batches of `window` seconds of the fleet, columnar; each
 * sample also a CSV line to csv unless NULL. Returns the batches (the
 * caller releases them), *total their samples. */
static struct batch *
build_batches(struct sim_fleet *fleet, size_t nb, unsigned window, FILE *csv,
              size_t *total)
{
    struct batch *batches = calloc(nb, sizeof(*batches));
    struct meter_columnar col = {0};
    struct build bld = {&col, csv, ""};
    *total = 0;
    for (size_t i = 0; i < nb; i++) {
        meter_columnar_begin(&col);
        batches[i].samples = sim_fleet_next(fleet, window, add_run, &bld);
        meter_columnar_end(&col);
        if (col.body.failed)
            die("workload", "out of memory");
        batches[i].body = col.body; /* the batch takes the text */
        col.body = (struct meter_buf){0};
        *total += batches[i].samples;
    }
    return batches;
}

static void
free_batches(struct batch *b, size_t nb)
{
    for (size_t i = 0; i < nb; i++)
        meter_buf_release(&b[i].body);
    free(b);
}

/* Row forms of a columnar batch, for the slice that measures them. */
struct rows {
    struct meter_buf json, ndjson;
    size_t items;
    char line[1024];
};

static void
add_rows(const char *account, const char *sandbox,
         const struct pricing_second *s, size_t n, void *arg)
{
    struct rows *r = arg;
    for (size_t i = 0; i < n; i++) {
        int len = meter_sample_format(r->line, sizeof(r->line), account,
                                      sandbox, &s[i]);
        /* NDJSON as is; the array comma-separated, without newlines */
        meter_buf_add(&r->ndjson, r->line, (size_t)len);
        meter_buf_str(&r->json, r->items++ ? "," : "[");
        meter_buf_add(&r->json, r->line, (size_t)len - 1);
    }
}

/* ---- pushing batches ---------------------------------------------------- */

struct pusher {
    const char *url, *token, *type;
    struct batch *batches;
    size_t nbatches;
    size_t *next; /* shared cursor */
    pthread_mutex_t *lock;
    int failures;
};

static size_t
discard(char *d, size_t s, size_t n, void *a)
{
    (void)d;
    (void)a;
    return s * n;
}

static void *
push_worker(void *arg)
{
    struct pusher *p = arg;
    CURL *curl = curl_easy_init();
    char auth[128];
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", p->token);
    struct curl_slist *h = curl_slist_append(NULL, auth);
    h = curl_slist_append(h, p->type);
    h = curl_slist_append(h, "Expect:");
    curl_easy_setopt(curl, CURLOPT_URL, p->url);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, discard);
    for (;;) {
        pthread_mutex_lock(p->lock);
        size_t i = (*p->next)++;
        pthread_mutex_unlock(p->lock);
        if (i >= p->nbatches)
            break;
        struct batch *b = &p->batches[i];
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, b->body.p);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                         (curl_off_t)b->body.len);
        double t = bench_now();
        CURLcode rc = curl_easy_perform(curl);
        b->latency = bench_now() - t;
        long status = 0;
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
        if (rc != CURLE_OK || status != 200) {
            fprintf(stderr, "ingest_bench: batch %zu: %s %ld\n", i,
                    curl_easy_strerror(rc), status);
            p->failures++;
        }
    }
    curl_slist_free_all(h);
    curl_easy_cleanup(curl);
    return NULL;
}

/* Pushes the batches over `conns` connections; returns samples/s. */
static double
push_all(const char *url, const char *token, const char *type,
         struct batch *batches, size_t n, int conns, double *p50, double *p99)
{
    pthread_t th[64];
    struct pusher ps[64];
    size_t next = 0;
    pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    size_t samples = 0;
    for (size_t i = 0; i < n; i++)
        samples += batches[i].samples;
    double t = bench_now();
    for (int k = 0; k < conns; k++) {
        ps[k] = (struct pusher){url, token, type, batches, n, &next, &lock, 0};
        pthread_create(&th[k], NULL, push_worker, &ps[k]);
    }
    int failures = 0;
    for (int k = 0; k < conns; k++) {
        pthread_join(th[k], NULL);
        failures += ps[k].failures;
    }
    t = bench_now() - t;
    if (failures)
        die("push", "some batches failed");
    double *lat = malloc(n * sizeof(*lat));
    for (size_t i = 0; i < n; i++)
        lat[i] = batches[i].latency;
    *p50 = bench_quantile(lat, n, 0.5);
    *p99 = bench_quantile(lat, n, 0.99);
    free(lat);
    return (double)samples / t;
}

/* ---- a webhook receiver ------------------------------------------------- */

/* A loopback endpoint that answers every request 204, a request a
 * connection, and counts them: where (d) has meterd deliver. */
struct receiver {
    int fd, port;
    pthread_t thread;
    long answered; /* read once the thread has ended */
};

/* Whether buf (got bytes, NUL-ended) holds a whole request: its head
 * and as many bytes of body as its Content-Length says. */
static bool
request_whole(const char *buf, size_t got)
{
    const char *end = strstr(buf, "\r\n\r\n");
    if (!end)
        return false;
    long len = 0;
    for (const char *l = strstr(buf, "\r\n"); l && l < end;
         l = strstr(l + 2, "\r\n"))
        if (strncasecmp(l + 2, "content-length:", 15) == 0) {
            char *e;
            errno = 0;
            len = strtol(l + 17, &e, 10);
            if (errno || e == l + 17 || len < 0)
                return true; /* answered as it is */
        }
    return (long)(got - (size_t)(end + 4 - buf)) >= len;
}

static void *
receive(void *arg)
{
    struct receiver *rc = arg;
    static const char ok[] =
        "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n";
    char buf[65536];
    for (;;) {
        int c = accept(rc->fd, NULL, NULL);
        if (c < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            break; /* shut down */
        }
        size_t got = 0;
        ssize_t k;
        bool whole = false;
        while (!whole && got < sizeof(buf) - 1 &&
               (k = read(c, buf + got, sizeof(buf) - 1 - got)) > 0) {
            got += (size_t)k;
            buf[got] = '\0';
            whole = request_whole(buf, got);
        }
        if (whole && write(c, ok, sizeof(ok) - 1) == (ssize_t)sizeof(ok) - 1)
            rc->answered++;
        close(c);
    }
    return NULL;
}

static void
receiver_start(struct receiver *rc)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    rc->answered = 0;
    rc->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (rc->fd < 0 || bind(rc->fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
        listen(rc->fd, 64) < 0 ||
        getsockname(rc->fd, (struct sockaddr *)&a, &len) < 0)
        die("receiver", strerror(errno));
    rc->port = ntohs(a.sin_port);
    if (pthread_create(&rc->thread, NULL, receive, rc) != 0)
        die("receiver", "cannot start its thread");
}

static void
receiver_stop(struct receiver *rc)
{
    shutdown(rc->fd, SHUT_RDWR);
    pthread_join(rc->thread, NULL);
    close(rc->fd);
}

/* An endpoint on the receiver, and `events` events of 1,000 accounts
 * waiting in the outbox with their deliveries, as billing writes them
 * (meter_db_event_add), only many at once. */
static void
hooks_seed(PGconn *db, const struct receiver *rc, long events)
{
    char q[1024];
    snprintf(q, sizeof(q),
             "INSERT INTO webhook_endpoints (url, secret) VALUES"
             " ('http://127.0.0.1:%d/hooks',"
             " 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')",
             rc->port);
    PQclear(bench_sql(db, q));
    PQclear(bench_sql(db, "INSERT INTO accounts (account_id) SELECT"
                          " 'hooked-' || g FROM generate_series(1, 1000) g"));
    snprintf(q, sizeof(q),
             "WITH ev AS (INSERT INTO webhook_events (type, account_id,"
             " payload) SELECT 'invoice.finalized', 'hooked-' || (g %% 1000"
             " + 1), jsonb_build_object('invoice_number', '2026-' || g,"
             " 'total', '12.34', 'currency', 'USD') FROM generate_series(1,"
             " %ld) g RETURNING event_pk, account_id)"
             " INSERT INTO webhook_deliveries (endpoint_id, event_pk,"
             " account_id) SELECT w.endpoint_id, ev.event_pk, ev.account_id"
             " FROM ev, webhook_endpoints w",
             events);
    PQclear(bench_sql(db, q));
    PQclear(bench_sql(db, "VACUUM ANALYZE webhook_events, webhook_deliveries"));
}

/* Writes an event with its delivery HOOK_RATE times a second, from a
 * connection of its own, until told to stop: (d)'s steady events. */
#define HOOK_RATE 10
#define STR_(x) #x
#define STR(x) STR_(x)

struct feeder {
    const char *conninfo;
    atomic_bool stop;
    pthread_t thread;
};

static void *
feed(void *arg)
{
    struct feeder *fd = arg;
    PGconn *db = PQconnectdb(fd->conninfo);
    if (PQstatus(db) != CONNECTION_OK)
        die("feeder", PQerrorMessage(db));
    double next = bench_now();
    while (!atomic_load(&fd->stop)) {
        PQclear(bench_sql(
            db, "WITH ev AS (INSERT INTO webhook_events (type, account_id,"
                " payload) SELECT 'alert.triggered', 'hooked-'"
                " || (floor(random() * 1000) + 1)::int, '{\"rule_id\": 1,"
                " \"percent\": 80, \"value\": \"400.00\"}' RETURNING"
                " event_pk, account_id) INSERT INTO webhook_deliveries"
                " (endpoint_id, event_pk, account_id) SELECT w.endpoint_id,"
                " ev.event_pk, ev.account_id FROM ev, webhook_endpoints w"));
        next += 1.0 / HOOK_RATE;
        double wait = next - bench_now();
        if (wait > 0) {
            struct timespec ts = {(time_t)wait,
                                  (long)((wait - (double)(time_t)wait) * 1e9)};
            nanosleep(&ts, NULL);
        }
    }
    PQfinish(db);
    return NULL;
}

/* ---- one run ------------------------------------------------------------ */

#define RUNS 3

/* The figures of one run over one fleet. */
struct figures {
    double copy_rate, naive_bytes;
    double col_rate, p50, p99, blocks_bytes, all_bytes, body_bytes;
    double pack_rate, packs_bytes, at_rest_bytes;
    double nd_rate, n50, n99, js_rate, j50, j99;
    double deadlocks;  /* the server's, while meterd ran */
    double hooks_rate; /* (d), (e): deliveries a second during the push */
};

/* What meterd does once an hour of the fleet has ended (--pack-after):
 * the rollups merged, which queues their hours, then every hour that
 * ended by the fleet's clock `now` packed; then the space of the blocks
 * deleted given back (VACUUM). Sets the packing's samples a second, and
 * the bytes a sample of the packs (indexes included) and of all. */
static void
pack_settled(PGconn *db, int64_t now, struct figures *f)
{
    struct meter_err e = {{0}};
    struct meter_pack_result res;
    double t = bench_now();
    if (meter_db_usage_pack_due(db, (int64_t)time(NULL) - now, &res, &e) < 0)
        die("pack", e.msg);
    if (res.busy)
        die("pack", "another pack is running");
    long long stored = sql_int(db, "SELECT sum(samples) FROM usage_hourly");
    long long blocked = sql_int(db, "SELECT coalesce(sum(bit_count("
                                    "seconds::bit(64))), 0) FROM usage_blocks");
    f->pack_rate = (double)(stored - blocked) / (bench_now() - t);
    PQclear(bench_sql(db, "VACUUM usage_blocks, usage_packs"));
    PQclear(bench_sql(db, "CHECKPOINT"));
    f->packs_bytes =
        (double)sql_int(db, "SELECT sum(pg_total_relation_size("
                            "inhrelid)) FROM pg_inherits WHERE"
                            " inhparent = 'usage_packs'::regclass") /
        (double)(stored - blocked);
    f->at_rest_bytes =
        (double)sql_int(db, "SELECT sum(pg_total_relation_size(inhrelid))"
                            " FROM pg_inherits WHERE inhparent IN"
                            " ('usage_blocks'::regclass,"
                            " 'usage_packs'::regclass)") /
        (double)stored;
}

/* Events waiting for (e): more than meterd delivers during a push. */
#define HOOK_EVENTS 100000

/* What is delivered during a run's push. */
enum hooks {
    HOOKS_NONE,
    HOOKS_STEADY,  /* (d) */
    HOOKS_BACKLOG, /* (e) */
};

/* One run: the workload of `sandboxes` x `seconds` (noisy or not) loaded
 * by psql \copy, then pushed to a new meterd, in a database of its own,
 * while it delivers webhooks as hooks says. */
static void
one_run(size_t sandboxes, unsigned seconds, int conns, bool noisy,
        enum hooks hooks, struct figures *f)
{
    const unsigned window = 60;
    struct bench_db bdb;
    PGconn *db = bench_db_create(&bdb, "ingest_bench");
    const char *conninfo = bdb.conninfo;
    char q[8192];

    /* The workload: batches of `window` seconds of the whole fleet. */
    int64_t start = 1790000000; /* 2026-09-21 */
    struct sim_fleet *fleet = sim_fleet_new(42, sandboxes, 100, start);
    if (noisy)
        sim_fleet_noisy(fleet);
    size_t nb = seconds / window, total = 0;
    char csv_path[] = "/tmp/ingest_bench_XXXXXX";
    FILE *csv = fdopen(mkstemp(csv_path), "w");
    struct batch *batches = build_batches(fleet, nb, window, csv, &total);
    fclose(csv);
    size_t body_bytes = 0;
    for (size_t i = 0; i < nb; i++)
        body_bytes += batches[i].body.len;
    f->body_bytes = (double)body_bytes / (double)total;

    /* (a) psql \copy into a naive table. */
    PQclear(bench_sql(db,
                      "CREATE TABLE naive (sandbox_id text, ts bigint,"
                      " account_id text, state text, vcpu numeric,"
                      " cpu_used numeric, mem_bytes bigint,"
                      " mem_used_bytes bigint, disk_bytes bigint,"
                      " egress_bytes bigint, PRIMARY KEY (sandbox_id, ts))"));
    snprintf(q, sizeof(q),
             "psql -q -v ON_ERROR_STOP=1 \"%s\" -c \"\\copy naive FROM '%s' "
             "WITH (FORMAT csv)\"",
             conninfo, csv_path);
    double t = bench_now();
    if (system(q) != 0)
        die("psql \\copy", q);
    f->copy_rate = (double)total / (bench_now() - t);
    unlink(csv_path);
    PQclear(bench_sql(db, "CHECKPOINT"));
    f->naive_bytes =
        (double)sql_int(db, "SELECT pg_total_relation_size('naive')") /
        (double)total;
    PQclear(bench_sql(db, "DROP TABLE naive"));

    /* (b) meterd. */
    char token[METER_TOKEN_LEN + 1];
    uint8_t hash[32];
    meter_token_new(token);
    meter_token_hash(token, hash);
    const char *kv[] = {(const char *)hash};
    int kl[] = {32}, kf[] = {1};
    PGresult *r = PQexecParams(db,
                               "INSERT INTO api_keys (role, name, token_hash)"
                               " VALUES ('host', 'bench', $1)",
                               1, NULL, kv, kl, kf, 0);
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        die("key", PQerrorMessage(db));
    PQclear(r);
    struct receiver rc;
    if (hooks != HOOKS_NONE) {
        receiver_start(&rc);
        hooks_seed(db, &rc, hooks == HOOKS_BACKLOG ? HOOK_EVENTS : 0);
    }
    int port = 20000 + (int)(getpid() % 20000);
    char listen[64], url[128];
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
    snprintf(url, sizeof(url), "http://%s/v1/samples", listen);
    pid_t meterd = fork();
    if (meterd == 0) {
        /* The fleet's fixed start stays within the acceptance window;
         * the rollups are not merged while it is measured. */
        const char *path = getenv("INGEST_BENCH_METERD");
        execl(path && *path ? path : METERD_PATH, "meterd", "--listen", listen,
              "--db", conninfo, "--log-level", "warn", "--threads", "4",
              "--max-age", "36500", "--merge-every", "0", (char *)NULL);
        _exit(127);
    }
    bench_wait_ready(listen);
    const char *delivered = "SELECT count(*) FROM webhook_deliveries"
                            " WHERE delivered_at IS NOT NULL";
    struct feeder feeder = {.conninfo = conninfo};
    if (hooks == HOOKS_STEADY &&
        pthread_create(&feeder.thread, NULL, feed, &feeder) != 0)
        die("feeder", "cannot start its thread");
    long long before = sql_int(db, delivered);
    double pushed_at = bench_now();
    f->col_rate = push_all(url, token, "Content-Type: application/json",
                           batches, nb, conns, &f->p50, &f->p99);
    long long during = sql_int(db, delivered) - before;
    f->hooks_rate = (double)during / (bench_now() - pushed_at);
    if (hooks == HOOKS_STEADY) {
        atomic_store(&feeder.stop, true);
        pthread_join(feeder.thread, NULL);
    }
    if (hooks == HOOKS_BACKLOG && before + during >= HOOK_EVENTS)
        printf("  (the outbox ran dry during the push: raise HOOK_EVENTS)\n");
    PQclear(bench_sql(db, "CHECKPOINT"));
    long long stored = sql_int(db, "SELECT sum(samples) FROM usage_hourly");
    f->blocks_bytes =
        (double)sql_int(db, "SELECT sum(pg_total_relation_size(inhrelid))"
                            " FROM pg_inherits WHERE inhparent ="
                            " 'usage_blocks'::regclass") /
        (double)stored;
    f->all_bytes =
        f->blocks_bytes +
        (double)sql_int(db, "SELECT pg_total_relation_size('usage_hourly')"
                            " + pg_total_relation_size('sandboxes')") /
            (double)stored;
    if ((size_t)stored != total)
        die("meterd", "stored sample count differs from the workload");

    /* Row forms, on a slice of the next 10 minutes of the fleet. */
    struct batch rows_json[10], rows_nd[10];
    for (int i = 0; i < 10; i++) {
        struct rows rw = {{0}, {0}, 0, ""};
        size_t n = sim_fleet_next(fleet, window, add_rows, &rw);
        meter_buf_str(&rw.json, "]");
        if (rw.json.failed || rw.ndjson.failed)
            die("rows", "out of memory");
        rows_json[i] = (struct batch){rw.json, n, 0};
        rows_nd[i] = (struct batch){rw.ndjson, n, 0};
    }
    /* The same seconds twice: the JSON array stores them, NDJSON then
     * finds them all duplicates; so NDJSON goes first on fresh seconds
     * of its own. */
    f->nd_rate = push_all(url, token, "Content-Type: application/x-ndjson",
                          rows_nd, 5, conns, &f->n50, &f->n99);
    f->js_rate = push_all(url, token, "Content-Type: application/json",
                          rows_json + 5, 5, conns, &f->j50, &f->j99);
    kill(meterd, SIGTERM);
    waitpid(meterd, NULL, 0);
    if (hooks != HOOKS_NONE)
        receiver_stop(&rc);
    /* Each costs a batch a second or more (deadlock_timeout), then its
     * retry: the p99 shows them. */
    f->deadlocks = (double)sql_int(db, "SELECT deadlocks FROM pg_stat_database"
                                       " WHERE datname = current_database()");
    /* (c) The hours that have ended by the fleet's clock packed: the
     * first hour, the row forms' minutes after it not. */
    pack_settled(db, start + (int64_t)(nb + 10) * window, f);

    free_batches(batches, nb);
    for (int i = 0; i < 10; i++) {
        meter_buf_release(&rows_json[i].body);
        meter_buf_release(&rows_nd[i].body);
    }
    sim_fleet_free(fleet);
    PQfinish(db);
    bench_db_drop(&bdb, false);
}

/* ---- main --------------------------------------------------------------- */

/* One line of the table: the median of the runs' figure at offset off of
 * struct figures, min and max beside it. */
static void
row(const char *name, struct figures *runs, size_t off, int decimals,
    double scale)
{
    double v[RUNS];
    char text[96];
    for (int i = 0; i < RUNS; i++)
        v[i] = *(const double *)((const char *)&runs[i] + off) * scale;
    bench_spread(text, v, RUNS, decimals);
    printf("  %-40s %s\n", name, text);
}

#define ROW(name, field, decimals, scale)                                      \
    row(name, runs, offsetof(struct figures, field), decimals, scale)

/* The table of one fleet's runs, and its targets (issue "Ingestion at
 * three times a bulk load"): columnar at least 3x the naive copy, NDJSON
 * at least the naive copy, at most max_bytes a stored sample. */
static int
report(const char *fleet, struct figures *runs, double max_bytes)
{
    printf("\n%s fleet (median of %d runs, min-max):\n", fleet, RUNS);
    ROW("(a) psql \\copy CSV, naive table + PK /s", copy_rate, 0, 1);
    ROW("(b) meterd columnar JSON, samples/s", col_rate, 0, 1);
    ROW("    batch p50 ms", p50, 1, 1e3);
    ROW("    batch p99 ms", p99, 1, 1e3);
    ROW("    deadlocks in the database", deadlocks, 0, 1);
    ROW("    meterd NDJSON rows (slice) /s", nd_rate, 0, 1);
    ROW("    meterd JSON array rows (slice) /s", js_rate, 0, 1);
    ROW("    columnar body, bytes a sample", body_bytes, 1, 1);
    ROW("naive table, bytes a sample", naive_bytes, 1, 1);
    ROW("usage_blocks as ingested, bytes a sample", blocks_bytes, 2, 1);
    ROW("    with rollups and sandboxes", all_bytes, 2, 1);
    ROW("packing, samples/s", pack_rate, 0, 1);
    ROW("packs, bytes a sample packed", packs_bytes, 2, 1);
    ROW("    with the blocks not packed, a sample", at_rest_bytes, 2, 1);
    double ratio[RUNS], nd[RUNS], bytes[RUNS];
    for (int i = 0; i < RUNS; i++) {
        ratio[i] = runs[i].col_rate / runs[i].copy_rate;
        nd[i] = runs[i].nd_rate / runs[i].copy_rate;
        bytes[i] = runs[i].packs_bytes;
    }
    char t[96];
    int missed = 0;
    bench_spread(t, ratio, RUNS, 2);
    missed += ratio[RUNS / 2] < 3.0;
    printf("  columnar / copy: %s, target 3.00: %s\n", t,
           ratio[RUNS / 2] >= 3.0 ? "PASS" : "FAIL");
    bench_spread(t, nd, RUNS, 2);
    missed += nd[RUNS / 2] < 1.0;
    printf("  NDJSON / copy: %s, target 1.00: %s\n", t,
           nd[RUNS / 2] >= 1.0 ? "PASS" : "FAIL");
    bench_spread(t, bytes, RUNS, 2);
    missed += bytes[RUNS / 2] > max_bytes;
    printf("  packs, bytes a sample packed: %s, target <= %.0f: %s\n", t,
           max_bytes, bytes[RUNS / 2] <= max_bytes ? "PASS" : "FAIL");
    return missed;
}

/* What (d) or (e) cost the smooth fleet's (b) in the same runs: a cost
 * is measurable when its median is below the least of (b)'s runs. */
static void
report_hooks(const char *what, struct figures *plain, struct figures *hooked)
{
    printf("\nsmooth fleet, %s (median of %d runs, min-max):\n", what, RUNS);
    struct figures *runs = hooked;
    ROW("meterd columnar JSON, samples/s", col_rate, 0, 1);
    ROW("    batch p50 ms", p50, 1, 1e3);
    ROW("    batch p99 ms", p99, 1, 1e3);
    ROW("    webhooks delivered a second", hooks_rate, 1, 1);
    double p[RUNS], h[RUNS];
    for (int i = 0; i < RUNS; i++) {
        p[i] = plain[i].col_rate;
        h[i] = hooked[i].col_rate;
    }
    double pm = bench_quantile(p, RUNS, 0.5), hm = bench_quantile(h, RUNS, 0.5);
    double lo = p[0], hi = p[0];
    for (int i = 1; i < RUNS; i++) {
        lo = p[i] < lo ? p[i] : lo;
        hi = p[i] > hi ? p[i] : hi;
    }
    printf("  / (b) without: %.3f; the median %s (b)'s runs %.0f-%.0f: %s\n",
           hm / pm,
           hm < lo   ? "below"
           : hm > hi ? "above"
                     : "within",
           lo, hi, hm >= lo ? "no cost measurable" : "a cost measured");
}

int
main(int argc, char **argv)
{
    size_t sandboxes = (size_t)bench_arg(argc, argv, 1, 2500, 10000000);
    unsigned seconds = (unsigned)bench_arg(argc, argv, 2, 3600, 86400 * 31);
    int conns = (int)bench_arg(argc, argv, 3, 4, 64);
    if (!sandboxes || seconds < 60 || conns < 1 || conns > 64)
        die("usage", "ingest_bench [SANDBOXES] [SECONDS] [CONNECTIONS]");
    printf("ingest_bench: %zu sandbox slots x %u s, batches of 60 s, %d "
           "connections; %d runs of each fleet, alternating\n",
           sandboxes, seconds, conns, RUNS);
    bench_print_loadavg("at start");
    fflush(stdout);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct figures smooth[RUNS], noisy[RUNS], steady[RUNS], backlog[RUNS];
    for (int i = 0; i < RUNS; i++) {
        one_run(sandboxes, seconds, conns, false, HOOKS_NONE, &smooth[i]);
        one_run(sandboxes, seconds, conns, true, HOOKS_NONE, &noisy[i]);
        one_run(sandboxes, seconds, conns, false, HOOKS_STEADY, &steady[i]);
        one_run(sandboxes, seconds, conns, false, HOOKS_BACKLOG, &backlog[i]);
        printf("  run %d: smooth %.0f samples/s (copy %.0f), noisy %.0f "
               "(copy %.0f); smooth delivering webhooks: steady %.0f (%.1f "
               "deliveries/s), a backlog %.0f (%.0f deliveries/s)\n",
               i + 1, smooth[i].col_rate, smooth[i].copy_rate,
               noisy[i].col_rate, noisy[i].copy_rate, steady[i].col_rate,
               steady[i].hooks_rate, backlog[i].col_rate,
               backlog[i].hooks_rate);
        fflush(stdout);
    }
    int missed = report("smooth (the bench's)", smooth, 4) +
                 report("noisy (sim_fleet_noisy)", noisy, 5);
    report_hooks("(d) webhooks delivered as they come, " STR(
                     HOOK_RATE) " events a second",
                 smooth, steady);
    report_hooks("(e) a backlog of webhooks drained all along", smooth,
                 backlog);
    printf("\n%d target(s) missed\n", missed);
    bench_print_loadavg("at end");
    curl_global_cleanup();
    return 0;
}
