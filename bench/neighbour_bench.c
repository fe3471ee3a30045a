/*
 * neighbour_bench.c - an honest host's batches beside a host that sends
 * batches of as many sandboxes as meterd takes (issue 26: one host's
 * huge batches stalled every host), in one run on one machine.
 *
 * The honest host runs HONEST sandboxes of the bench's fleet and posts
 * the next 10 s of them, one batch after another, 50 ms apart. Each run
 * times it twice, alternating: alone (the baseline), then beside a big
 * sender posting batches of BIG sandboxes x SECONDS each (the next
 * seconds of the same sandboxes, one batch after another). It prints
 * the honest host's p50 and p99 in both, median of the runs with min
 * and max, and the big sender's batches by status. Then, on a new
 * meterd, three big senders post two batches each at once, and the
 * bench prints meterd's peak RSS (VmHWM).
 *
 * usage: neighbour_bench [BIG] [SECONDS] [PHASE_S]
 * (default 10000 50 20: meterd's --max-batch-sandboxes, and 500,000
 * samples a batch, meterd's most); NEIGHBOUR_BENCH_METERD=PATH runs
 * another meterd (an older build, to compare); NEIGHBOUR_BENCH_FRESH=1
 * posts each honest batch on a new connection. The database:
 * $METER_DATABASE_URL, else the embedded one of the current directory;
 * the bench makes and drops its own database.
 */
#include <curl/curl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

#define RUNS 3
#define HONEST 200       /* a host's sandboxes */
#define HONEST_WINDOW 10 /* seconds a batch of the honest host */
#define SENDERS 3        /* big senders at once, for the memory */

static void
die(const char *what, const char *detail)
{
    fprintf(stderr, "neighbour_bench: %s: %s\n", what, detail);
    exit(1);
}

static size_t
discard(char *d, size_t s, size_t n, void *a)
{
    (void)d;
    (void)a;
    return s * n;
}

/* A connection posting samples with a host key. */
static CURL *
poster(const char *url, struct curl_slist **h, const char *token)
{
    char auth[128];
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
    *h = curl_slist_append(NULL, auth);
    *h = curl_slist_append(*h, "Content-Type: application/json");
    *h = curl_slist_append(*h, "Expect:");
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, *h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    return c;
}

/* Posts body; returns the status (0: no answer), *seconds the time. */
static long
post(CURL *c, const struct meter_buf *body, double *seconds)
{
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body->p);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body->len);
    double t = bench_now();
    CURLcode rc = curl_easy_perform(c);
    *seconds = bench_now() - t;
    long status = 0;
    if (rc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    return status;
}

/* ---- the big sender ------------------------------------------------------ */

struct big {
    const char *url, *token;
    int id;
    size_t sandboxes;
    unsigned seconds;
    int64_t start; /* the next batch's first second */
    int batches;   /* to post; 0: until stop */
    atomic_bool *stop;
    /* what it saw */
    int sent, ok, too_large, other;
    double seconds_sum;
};

static void
build_big(struct meter_buf *b, const struct big *g)
{
    b->len = 0;
    meter_buf_str(b, "{\"sandboxes\":[");
    for (size_t i = 0; i < g->sandboxes; i++)
        meter_buf_printf(b,
                         "%s{\"account_id\":\"big-%zu\",\"sandbox_id\":"
                         "\"b%d-%zu\",\"start\":%lld,\"seconds\":%u,"
                         "\"state\":\"running\",\"vcpu\":1,\"cpu_used\":"
                         "0.5,\"mem_bytes\":1073741824,\"disk_bytes\":0}",
                         i ? "," : "", i % 100, g->id, i, (long long)g->start,
                         g->seconds);
    meter_buf_str(b, "]}");
    if (b->failed)
        die("big batch", "out of memory");
}

static void *
big_sender(void *arg)
{
    struct big *g = arg;
    struct curl_slist *h;
    CURL *c = poster(g->url, &h, g->token);
    struct meter_buf body = {0};
    while (g->batches ? g->sent < g->batches : !atomic_load(g->stop)) {
        build_big(&body, g);
        double s;
        long status = post(c, &body, &s);
        g->sent++;
        g->seconds_sum += s;
        g->ok += status == 200;
        g->too_large += status == 413;
        g->other += status != 200 && status != 413;
        g->start += g->seconds;
    }
    meter_buf_release(&body);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return NULL;
}

/* ---- the honest host ----------------------------------------------------- */

struct honest {
    const char *url, *token;
    struct sim_fleet *fleet;
    struct meter_columnar col;
    double *lat;
    size_t n, cap;
    int failures;
    bool fresh; /* a new connection for each batch */
};

static void
add_run(const char *account, const char *sandbox,
        const struct pricing_second *s, size_t n, void *arg)
{
    meter_columnar_add(arg, account, sandbox, s, n);
}

/* Posts the honest host's batches for phase_s seconds; its latencies
 * in h->lat. Each on a new connection if h->fresh: meterd serves a
 * connection on one of its threads, and a keep-alive connection keeps
 * the thread it drew (a fresh one draws again, as many hosts would). */
static void
honest_phase(struct honest *h, double phase_s)
{
    struct curl_slist *hd;
    CURL *c = poster(h->url, &hd, h->token);
    if (h->fresh) {
        curl_easy_setopt(c, CURLOPT_FRESH_CONNECT, 1L);
        curl_easy_setopt(c, CURLOPT_FORBID_REUSE, 1L);
    }
    h->n = 0;
    double end = bench_now() + phase_s;
    while (bench_now() < end) {
        meter_columnar_begin(&h->col);
        sim_fleet_next(h->fleet, HONEST_WINDOW, add_run, &h->col);
        meter_columnar_end(&h->col);
        if (h->col.body.failed)
            die("honest batch", "out of memory");
        double s;
        if (post(c, &h->col.body, &s) != 200)
            h->failures++;
        if (h->n == h->cap) {
            h->cap = h->cap ? 2 * h->cap : 1024;
            h->lat = realloc(h->lat, h->cap * sizeof(*h->lat));
            if (!h->lat)
                die("honest", "out of memory");
        }
        h->lat[h->n++] = s;
        usleep(50000);
    }
    curl_slist_free_all(hd);
    curl_easy_cleanup(c);
}

/* ---- meterd -------------------------------------------------------------- */

static pid_t
start_meterd(const char *conninfo, const char *listen)
{
    pid_t pid = fork();
    if (pid == 0) {
        const char *path = getenv("NEIGHBOUR_BENCH_METERD");
        execl(path && *path ? path : METERD_PATH, "meterd", "--listen", listen,
              "--db", conninfo, "--log-level", "warn", "--max-age", "36500",
              (char *)NULL);
        _exit(127);
    }
    bench_wait_ready(listen);
    return pid;
}

/* meterd's peak resident memory, MiB (VmHWM). */
static double
peak_mib(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    double kib = 0;
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, "VmHWM:", 6) == 0 &&
            bench_num(line + 6, " kB", &kib) < 0)
            kib = 0;
    if (f)
        fclose(f);
    return kib / 1024;
}

static void
stop_meterd(pid_t pid)
{
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
}

static void
new_key(PGconn *db, const char *name, char token[METER_TOKEN_LEN + 1])
{
    uint8_t hash[32];
    meter_token_new(token);
    meter_token_hash(token, hash);
    const char *kv[] = {(const char *)hash, name};
    int kl[] = {32, 0}, kf[] = {1, 0};
    PGresult *r = PQexecParams(db,
                               "INSERT INTO api_keys (role, name, token_hash)"
                               " VALUES ('host', $2, $1)",
                               2, NULL, kv, kl, kf, 0);
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        die("key", PQerrorMessage(db));
    PQclear(r);
}

/* ---- main ---------------------------------------------------------------- */

static void
print_row(const char *name, double *v, double scale)
{
    char t[96];
    for (int i = 0; i < RUNS; i++)
        v[i] *= scale;
    bench_spread(t, v, RUNS, 1);
    printf("  %-44s %s\n", name, t);
}

int
main(int argc, char **argv)
{
    uint64_t big_n = 10000, big_s = 50, phase = 20;
    const char *fresh_env = getenv("NEIGHBOUR_BENCH_FRESH");
    bool fresh = fresh_env && strcmp(fresh_env, "1") == 0;
    if ((argc > 1 && meter_parse_uint(argv[1], 1, 1000000, &big_n) < 0) ||
        (argc > 2 && meter_parse_uint(argv[2], 1, 3600, &big_s) < 0) ||
        (argc > 3 && meter_parse_uint(argv[3], 1, 3600, &phase) < 0))
        die("usage", "neighbour_bench [BIG 1-1000000] [SECONDS 1-3600] "
                     "[PHASE_S 1-3600]");
    printf("neighbour_bench: an honest host of %d sandboxes, batches of %d "
           "s, beside batches of %llu sandboxes x %llu s; %d runs of %llu s "
           "a phase, alternating; honest batches on %s\n",
           HONEST, HONEST_WINDOW, (unsigned long long)big_n,
           (unsigned long long)big_s, RUNS, (unsigned long long)phase,
           fresh ? "a new connection each" : "one connection a phase");
    bench_print_loadavg("at start");
    fflush(stdout);
    curl_global_init(CURL_GLOBAL_DEFAULT);

    struct bench_db bdb;
    PGconn *db = bench_db_create(&bdb, "neighbour_bench");
    char honest_token[METER_TOKEN_LEN + 1], big_token[METER_TOKEN_LEN + 1];
    new_key(db, "honest", honest_token);
    new_key(db, "big", big_token);
    int port = 20000 + (int)(getpid() % 20000);
    char listen[64], url[128];
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
    snprintf(url, sizeof(url), "http://%s/v1/samples", listen);
    pid_t meterd = start_meterd(bdb.conninfo, listen);

    /* Both start two days ago, within the acceptance window, and move
     * forward a batch at a time. */
    int64_t start = (int64_t)time(NULL) / 60 * 60 - 2 * 86400;
    struct honest h = {.url = url, .token = honest_token, .fresh = fresh};
    if (!(h.fleet = sim_fleet_new(7, HONEST, 20, start)))
        die("fleet", "out of memory");
    atomic_bool stop;
    struct big g = {.url = url,
                    .token = big_token,
                    .sandboxes = big_n,
                    .seconds = (unsigned)big_s,
                    .start = start,
                    .stop = &stop};
    double alone50[RUNS], alone99[RUNS], beside50[RUNS], beside99[RUNS];
    double alone_n = 0, beside_n = 0;
    for (int r = 0; r < RUNS; r++) {
        honest_phase(&h, (double)phase);
        alone50[r] = bench_quantile(h.lat, h.n, 0.5);
        alone99[r] = bench_quantile(h.lat, h.n, 0.99);
        alone_n += (double)h.n;
        atomic_store(&stop, false);
        pthread_t th;
        pthread_create(&th, NULL, big_sender, &g);
        honest_phase(&h, (double)phase);
        atomic_store(&stop, true);
        pthread_join(th, NULL);
        beside50[r] = bench_quantile(h.lat, h.n, 0.5);
        beside99[r] = bench_quantile(h.lat, h.n, 0.99);
        beside_n += (double)h.n;
        printf("  run %d: honest p99 alone %.1f ms, beside %.1f ms\n", r + 1,
               alone99[r] * 1e3, beside99[r] * 1e3);
        fflush(stdout);
    }
    stop_meterd(meterd);
    if (h.failures)
        printf("  honest batches not answered 200: %d\n", h.failures);
    printf("\nthe honest host (median of %d runs, min-max):\n", RUNS);
    print_row("alone: batch p50 ms", alone50, 1e3);
    print_row("alone: batch p99 ms", alone99, 1e3);
    print_row("beside the big sender: batch p50 ms", beside50, 1e3);
    print_row("beside the big sender: batch p99 ms", beside99, 1e3);
    printf("  batches timed: %.0f alone, %.0f beside\n", alone_n, beside_n);
    printf("the big sender: %d batches, %d answered 200, %d 413, %d other; "
           "%.2f s each on average\n",
           g.sent, g.ok, g.too_large, g.other,
           g.sent ? g.seconds_sum / g.sent : 0);

    /* The memory: a new meterd, three big senders at once. */
    meterd = start_meterd(bdb.conninfo, listen);
    double before = peak_mib(meterd);
    struct big many[SENDERS];
    pthread_t th[SENDERS];
    for (int k = 0; k < SENDERS; k++) {
        many[k] = g;
        many[k].id = k + 1;
        many[k].token = big_token;
        many[k].start = start;
        many[k].batches = 2;
        many[k].sent = many[k].ok = many[k].too_large = many[k].other = 0;
        many[k].seconds_sum = 0;
        pthread_create(&th[k], NULL, big_sender, &many[k]);
    }
    int ok = 0, too_large = 0, other = 0;
    for (int k = 0; k < SENDERS; k++) {
        pthread_join(th[k], NULL);
        ok += many[k].ok;
        too_large += many[k].too_large;
        other += many[k].other;
    }
    printf("%d big senders at once, 2 batches each (%d answered 200, %d "
           "413, %d other): meterd peak RSS %.0f MiB (%.0f MiB at start)\n",
           SENDERS, ok, too_large, other, peak_mib(meterd), before);
    stop_meterd(meterd);

    sim_fleet_free(h.fleet);
    meter_buf_release(&h.col.body);
    free(h.lat);
    PQfinish(db);
    bench_db_drop(&bdb, false);
    bench_print_loadavg("at end");
    curl_global_cleanup();
    return 0;
}
