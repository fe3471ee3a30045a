/*
 * gen.c - `meterctl gen`: a generated fleet (simulator/fleet.c), written
 * as NDJSON or pushed to meterd in columnar batches, at a given rate or
 * as fast as possible, each batch sent again until it is acknowledged.
 */
#include "ctl_int.h"

#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "meter_sample.h"
#include "sim.h"

struct out_file {
    FILE *f;
    char line[1024];
};

static void
write_ndjson(const char *account, const char *sandbox,
             const struct pricing_second *s, size_t n, void *arg)
{
    struct out_file *o = arg;
    for (size_t i = 0; i < n; i++) {
        meter_sample_format(o->line, sizeof(o->line), account, sandbox, &s[i]);
        fputs(o->line, o->f);
    }
}

static void
add_columnar(const char *account, const char *sandbox,
             const struct pricing_second *s, size_t n, void *arg)
{
    meter_columnar_add(arg, account, sandbox, s, n);
}

/* Keeps the first 4 kB of a reply, for the error message. */
static size_t
keep_reply(char *data, size_t size, size_t n, void *arg)
{
    struct meter_buf *t = arg;
    if (t->len < 4096)
        meter_buf_add(t, data, size * n < 4096 ? size * n : 4096);
    return size * n;
}

/*
 * Retrying as a host agent must: a batch is sent again until it is
 * acknowledged (a 200), since meterd stores it exactly once whatever the
 * number of copies. A request cut off (the service died or the network
 * broke mid-way) may or may not have committed: its copy counts as
 * duplicates. Waits grow from 100 ms to 2 s (half of it random, so that
 * the hosts of a fleet do not come back in step), or follow the
 * service's Retry-After (at most 30 s), until retry_for seconds have
 * passed since the batch's first try.
 *
 * A service that stops moving bytes (hung, or a network that drops
 * everything) is given up on after STALL_S seconds under 1 byte/s and
 * counted as a cut-off, so that it cannot hold the agent past
 * retry_for: longer than meterd's own database timeout (30 s by
 * default, after which it answers 503 itself), so that a slow but live
 * meterd is still waited for. A certificate that does not verify is
 * no passing state: it ends the push at once.
 */
#define RETRY_FIRST_MS 100
#define RETRY_MAX_MS 2000
#define RETRY_AFTER_MAX_S 30
#define STALL_S 60L

/* splitmix64, for the random half of the waits. */
static uint64_t
next_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* What a push did: the replies' counts, and the tries that failed. */
struct push {
    CURL *curl;
    const char *url;
    const char *cacert; /* NULL: the system's CAs */
    struct curl_slist *headers;
    uint64_t retry_for; /* seconds */
    atomic_bool *stop;  /* set: give up at once, silently (or NULL) */
    uint64_t rng;
    unsigned long long accepted, duplicates, conflicts;
    unsigned long long cut, unreachable, busy; /* retries, by cause */
};

/* Adds the counts of a 200's reply (a JSON object) to p. */
static void
count_reply(struct push *p, const struct meter_buf *reply)
{
    json_t *o = reply->p ? json_loadb(reply->p, reply->len, 0, NULL) : NULL;
    json_int_t a = 0, d = 0, c = 0;
    if (o &&
        json_unpack(o, "{s:I, s:I, s:I}", "accepted", &a, "duplicates", &d,
                    "conflicts", &c) == 0 &&
        a >= 0 && d >= 0 && c >= 0) {
        p->accepted += (unsigned long long)a;
        p->duplicates += (unsigned long long)d;
        p->conflicts += (unsigned long long)c;
    }
    json_decref(o);
}

/* Whether rc says the service's certificate (or our CA file) is wrong:
 * not something a retry fixes. */
static bool
tls_verify_error(CURLcode rc)
{
    switch (rc) {
    case CURLE_PEER_FAILED_VERIFICATION: /* also CURLE_SSL_CACERT */
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
        return true;
    default:
        return false;
    }
}

/* POSTs body until it is acknowledged: 0, or -1 (said why) once the
 * reply is one a retry cannot fix or retry_for has passed. */
static int
post(struct push *p, const struct meter_buf *body)
{
    double first = ctl_now();
    long wait_ms = RETRY_FIRST_MS;
    for (;;) {
        struct meter_buf reply = {0};
        curl_easy_setopt(p->curl, CURLOPT_URL, p->url);
        curl_easy_setopt(p->curl, CURLOPT_HTTPHEADER, p->headers);
        curl_easy_setopt(p->curl, CURLOPT_POSTFIELDS, body->p);
        curl_easy_setopt(p->curl, CURLOPT_POSTFIELDSIZE_LARGE,
                         (curl_off_t)body->len);
        curl_easy_setopt(p->curl, CURLOPT_WRITEFUNCTION, keep_reply);
        curl_easy_setopt(p->curl, CURLOPT_WRITEDATA, &reply);
        /* A host that never answers must not hold the agent for curl's
         * default of five minutes. */
        curl_easy_setopt(p->curl, CURLOPT_CONNECTTIMEOUT, 10L);
        curl_easy_setopt(p->curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(p->curl, CURLOPT_LOW_SPEED_TIME, STALL_S);
        if (p->cacert)
            curl_easy_setopt(p->curl, CURLOPT_CAINFO, p->cacert);
        /* Threads (--connections): no signals for timeouts. */
        curl_easy_setopt(p->curl, CURLOPT_NOSIGNAL, 1L);
        CURLcode rc = curl_easy_perform(p->curl);
        long status = 0;
        curl_off_t retry_after = 0;
        curl_easy_getinfo(p->curl, CURLINFO_RESPONSE_CODE, &status);
        if (rc == CURLE_OK && status == 200) {
            count_reply(p, &reply);
            meter_buf_release(&reply);
            return 0;
        }
        bool retry;
        if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST) {
            retry = true;
            p->unreachable++;
        } else if (rc == CURLE_URL_MALFORMAT ||
                   rc == CURLE_UNSUPPORTED_PROTOCOL || tls_verify_error(rc)) {
            retry = false;
        } else if (rc != CURLE_OK) {
            /* Cut off or stalled (CURLE_OPERATION_TIMEDOUT): sent,
             * perhaps stored. */
            retry = true;
            p->cut++;
        } else {
            /* Unavailable (perhaps stored, if the database went away
             * as it committed), or too many requests. */
            retry = status == 503 || status == 429;
            p->busy += retry;
            curl_easy_getinfo(p->curl, CURLINFO_RETRY_AFTER, &retry_after);
        }
        double left = (double)p->retry_for - (ctl_now() - first);
        if (retry && p->stop && atomic_load(p->stop)) {
            /* Another connection's batch failed: its message said why. */
            meter_buf_release(&reply);
            return -1;
        }
        if (!retry || left <= 0) {
            char what[160];
            if (rc == CURLE_OPERATION_TIMEDOUT)
                snprintf(what, sizeof(what),
                         "no progress for %ld s (under 1 byte/s)", STALL_S);
            else if (tls_verify_error(rc))
                snprintf(what, sizeof(what),
                         "%s: the server's certificate is not trusted by "
                         "%s%s%s",
                         curl_easy_strerror(rc), p->cacert ? "--cacert '" : "",
                         p->cacert ? p->cacert : "the system's CAs",
                         p->cacert ? "'" : "");
            else if (rc != CURLE_OK)
                snprintf(what, sizeof(what), "%s", curl_easy_strerror(rc));
            else
                snprintf(what, sizeof(what), "HTTP %ld", status);
            fprintf(stderr, "meterctl: POST %s: %s%s%s%s\n", p->url, what,
                    reply.p ? " " : "", reply.p ? reply.p : "",
                    retry ? " (not acknowledged within --retry-for, giving up)"
                          : "");
            meter_buf_release(&reply);
            return -1;
        }
        long next_ms = wait_ms / 2 +
                       (long)(next_rand(&p->rng) % (uint64_t)(wait_ms / 2 + 1));
        if (retry_after > 0)
            next_ms = 1000 * (long)(retry_after < RETRY_AFTER_MAX_S
                                        ? retry_after
                                        : RETRY_AFTER_MAX_S);
        if (next_ms > (long)(left * 1000) + 1) /* a last try at the end */
            next_ms = (long)(left * 1000) + 1;
        meter_buf_release(&reply);
        /* In steps of 0.1 s at most, to stop soon after another
         * connection's batch fails. */
        for (long slept = 0; slept < next_ms;) {
            long step = next_ms - slept < 100 ? next_ms - slept : 100;
            struct timespec nap = {0, step * 1000000};
            while (nanosleep(&nap, &nap) != 0 && errno == EINTR)
                ;
            slept += step;
            if (p->stop && atomic_load(p->stop))
                return -1;
        }
        wait_ms = wait_ms * 2 < RETRY_MAX_MS ? wait_ms * 2 : RETRY_MAX_MS;
    }
}

/* ---- pushing over several connections -------------------------------------
 *
 * The main thread makes the batches; each connection's thread takes the
 * next one made and posts it until it is acknowledged. A few batches
 * wait at most, so memory stays a few batches'. The first batch that
 * cannot be delivered stops every connection (its message said why). */

#define QUEUE_MAX 64

struct queue {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    atomic_bool stop; /* failed, for the connections retrying */
    struct meter_buf body[QUEUE_MAX];
    size_t samples[QUEUE_MAX];
    size_t head, count, cap;
    bool closed, failed;
};

struct connection {
    struct push p;
    struct queue *q;
    pthread_t thread;
    unsigned long long sent; /* samples acknowledged */
};

static void *
connection_run(void *arg)
{
    struct connection *c = arg;
    struct queue *q = c->q;
    for (;;) {
        pthread_mutex_lock(&q->lock);
        while (!q->count && !q->closed && !q->failed)
            pthread_cond_wait(&q->changed, &q->lock);
        if (q->failed || !q->count) {
            pthread_mutex_unlock(&q->lock);
            return NULL;
        }
        struct meter_buf body = q->body[q->head];
        size_t n = q->samples[q->head];
        q->head = (q->head + 1) % QUEUE_MAX;
        q->count--;
        pthread_cond_broadcast(&q->changed);
        pthread_mutex_unlock(&q->lock);
        int rc = post(&c->p, &body);
        meter_buf_release(&body);
        if (rc < 0) {
            atomic_store(&q->stop, true);
            pthread_mutex_lock(&q->lock);
            q->failed = true;
            pthread_cond_broadcast(&q->changed);
            pthread_mutex_unlock(&q->lock);
            return NULL;
        }
        c->sent += n;
    }
}

/* Hands body (n samples) to the connections; false once one failed. */
static bool
enqueue(struct queue *q, struct meter_buf *body, size_t n)
{
    pthread_mutex_lock(&q->lock);
    while (q->count == q->cap && !q->failed)
        pthread_cond_wait(&q->changed, &q->lock);
    bool ok = !q->failed;
    if (ok) {
        size_t at = (q->head + q->count) % QUEUE_MAX;
        q->body[at] = *body;
        q->samples[at] = n;
        q->count++;
        *body = (struct meter_buf){0}; /* the queue has it now */
        pthread_cond_broadcast(&q->changed);
    }
    pthread_mutex_unlock(&q->lock);
    return ok;
}

/* The samples route of the service at url: url itself if it names it,
 * else url (without a trailing slash) + "/v1/samples". -1 if too long. */
static int
push_route(const char *url, char *out, size_t n)
{
    static const char route[] = "/v1/samples";
    size_t len = strlen(url), r = sizeof(route) - 1;
    while (len > 0 && url[len - 1] == '/')
        len--;
    bool named = len >= r && memcmp(url + len - r, route, r) == 0;
    int k = snprintf(out, n, "%.*s%s", (int)len, url, named ? "" : route);
    return k < 0 || (size_t)k >= n ? -1 : 0;
}

int
ctl_gen(struct ctl *ctl, int argc, char **argv)
{
    static const struct option opts[] = {
        {"sandboxes", required_argument, NULL, 'n'},
        {"accounts", required_argument, NULL, 'a'},
        {"seconds", required_argument, NULL, 's'},
        {"start", required_argument, NULL, 't'},
        {"seed", required_argument, NULL, 'S'},
        {"output", required_argument, NULL, 'o'},
        {"push", required_argument, NULL, 'p'},
        {"token", required_argument, NULL, 'k'},
        {"batch-seconds", required_argument, NULL, 'b'},
        {"rate", required_argument, NULL, 'r'},
        {"follow", no_argument, NULL, 'f'},
        {"noisy", no_argument, NULL, 'N'},
        {"connections", required_argument, NULL, 'c'},
        {"retry-for", required_argument, NULL, 'R'},
        {"cacert", required_argument, NULL, 'C'},
        {NULL, 0, NULL, 0},
    };
    uint64_t sandboxes = 100, accounts = 10, seconds = 60, seed = 1, batch = 10,
             rate = 0, retry_for = 60, conns = 4;
    long long start = (long long)time(NULL);
    const char *output = NULL, *url = NULL, *token = getenv("METER_TOKEN"),
               *cacert = NULL;
    bool follow = false, noisy = false;
    int opt;
    (void)ctl; /* gen needs no database */
    ctl_getopt_reset();
    int which = 0;
    while ((opt = getopt_long(argc, argv, "", opts, &which)) != -1) {
        uint64_t *target = NULL;
        switch (opt) {
        case 'n':
            target = &sandboxes;
            break;
        case 'a':
            target = &accounts;
            break;
        case 's':
            target = &seconds;
            break;
        case 'S':
            target = &seed;
            break;
        case 'b':
            target = &batch;
            break;
        case 'r':
            target = &rate;
            break;
        case 'R':
            target = &retry_for;
            break;
        case 'c':
            target = &conns;
            break;
        case 't': {
            int64_t ts;
            if (ctl_parse_time("gen", "--start", optarg, &ts))
                return CTL_USAGE;
            start = ts;
            break;
        }
        case 'o':
            output = optarg;
            break;
        case 'p':
            url = optarg;
            break;
        case 'k':
            token = optarg;
            break;
        case 'C':
            cacert = optarg;
            break;
        case 'f':
            follow = true;
            break;
        case 'N':
            noisy = true;
            break;
        default:
            return ctl_bad_option("gen", argv);
        }
        if (target && meter_parse_uint(optarg, 0, UINT64_MAX, target) < 0)
            return ctl_usage_error("gen: --%s '%s' is not a number",
                                   opts[which].name, optarg);
    }
    if (optind < argc)
        return ctl_usage_error("gen: unexpected argument '%s'", argv[optind]);
    if (sandboxes < 1 || sandboxes > 1000000 || accounts < 1 || batch < 1 ||
        batch > 3600 || retry_for > 86400 || conns < 1 || conns > 64)
        return ctl_usage_error("gen: --sandboxes 1-1000000, --accounts >= 1, "
                               "--batch-seconds 1-3600, --retry-for 0-86400, "
                               "--connections 1-64");
    if (url && !token)
        return ctl_usage_error("gen: --push needs --token (or METER_TOKEN), "
                               "a key of role host");
    if (url && output)
        return ctl_usage_error("gen: --push and --output exclude each other");

    struct sim_fleet *fleet =
        sim_fleet_new(seed, sandboxes, accounts, (int64_t)start);
    if (!fleet) {
        fprintf(stderr, "meterctl: out of memory\n");
        return CTL_FAILED;
    }
    if (noisy)
        sim_fleet_noisy(fleet);
    int rc = CTL_FAILED;
    if (!url) {
        struct out_file o = {output ? fopen(output, "w") : stdout, ""};
        if (!o.f) {
            fprintf(stderr, "meterctl: cannot write '%s': %s\n", output,
                    strerror(errno));
            goto out;
        }
        for (uint64_t done = 0; done < seconds;) {
            uint32_t step =
                (uint32_t)(seconds - done < 3600 ? seconds - done : 3600);
            sim_fleet_next(fleet, step, write_ndjson, &o);
            done += step;
        }
        bool bad = ferror(o.f) != 0;
        if (o.f != stdout)
            bad |= fclose(o.f) != 0;
        else
            bad |= fflush(stdout) != 0;
        if (bad) {
            fprintf(stderr, "meterctl: cannot write the samples\n");
            goto out;
        }
        rc = 0;
        goto out;
    }

    /* Push: windows of batch seconds, one columnar body each, to the
     * service's samples route: --push is its base URL (a path under
     * which it is served, if any), or that route itself. */
    char route[2048];
    if (push_route(url, route, sizeof(route)) < 0) {
        fprintf(stderr, "meterctl: gen: --push '%s' is too long\n", url);
        goto out;
    }
    url = route;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    char auth[128];
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
    struct curl_slist *headers = curl_slist_append(NULL, auth);
    headers = curl_slist_append(headers, "Content-Type: application/json");
    struct queue q = {.lock = PTHREAD_MUTEX_INITIALIZER,
                      .changed = PTHREAD_COND_INITIALIZER,
                      .cap = conns * 2 < QUEUE_MAX ? conns * 2 : QUEUE_MAX};
    struct connection *cs = calloc(conns, sizeof(*cs));
    size_t started = 0;
    for (; cs && started < conns; started++) {
        struct connection *c = &cs[started];
        c->q = &q;
        c->p = (struct push){.curl = curl_easy_init(),
                             .url = url,
                             .cacert = cacert,
                             .headers = headers,
                             .retry_for = retry_for,
                             .stop = &q.stop,
                             .rng = seed ^ (uint64_t)getpid() << 32 ^ started};
        if (!c->p.curl ||
            pthread_create(&c->thread, NULL, connection_run, c) != 0) {
            curl_easy_cleanup(c->p.curl);
            break;
        }
    }
    struct meter_columnar body = {0};
    unsigned long long made = 0;
    double t0 = ctl_now();
    bool ok = cs && started == conns;
    if (!ok)
        fprintf(stderr, "meterctl: cannot start %llu connections\n",
                (unsigned long long)conns);
    for (uint64_t done = 0; ok && (follow || done < seconds);) {
        uint32_t step =
            (uint32_t)(!follow && seconds - done < batch ? seconds - done
                                                         : batch);
        if (follow) { /* a live fleet: wait for the window to pass */
            int64_t ahead = sim_fleet_now(fleet) + step - (int64_t)time(NULL);
            if (ahead > 0)
                sleep((unsigned)ahead);
        }
        meter_columnar_begin(&body);
        size_t n = sim_fleet_next(fleet, step, add_columnar, &body);
        meter_columnar_end(&body);
        done += step;
        if (body.body.failed) {
            fprintf(stderr, "meterctl: out of memory\n");
            ok = false;
            break;
        }
        if (n && !enqueue(&q, &body.body, n))
            break;
        made += n;
        if (rate) { /* keep to the rate */
            double due = (double)made / (double)rate - (ctl_now() - t0);
            if (due > 0)
                usleep((useconds_t)(due * 1e6));
        }
    }
    pthread_mutex_lock(&q.lock);
    q.closed = true;
    pthread_cond_broadcast(&q.changed);
    pthread_mutex_unlock(&q.lock);
    unsigned long long sent = 0, accepted = 0, duplicates = 0, conflicts = 0,
                       cut = 0, unreachable = 0, busy = 0;
    for (size_t k = 0; k < started; k++) {
        struct connection *c = &cs[k];
        pthread_join(c->thread, NULL);
        curl_easy_cleanup(c->p.curl);
        sent += c->sent;
        accepted += c->p.accepted;
        duplicates += c->p.duplicates;
        conflicts += c->p.conflicts;
        cut += c->p.cut;
        unreachable += c->p.unreachable;
        busy += c->p.busy;
    }
    if (ok && !q.failed)
        rc = 0;
    for (; q.count; q.count--, q.head = (q.head + 1) % QUEUE_MAX)
        meter_buf_release(&q.body[q.head]);
    double secs = ctl_now() - t0;
    /* What the service said of the copies it got: accepted once in all,
     * whatever the retries; the copies of batches whose reply was lost
     * come back as duplicates. */
    fprintf(stderr,
            "meterctl: pushed %llu samples in %.1f s (%.0f samples/s, %llu "
            "connections): %llu accepted, %llu duplicates, %llu conflicts; "
            "retried %llu cut off, %llu unreachable, %llu busy\n",
            sent, secs, secs > 0 ? (double)sent / secs : 0.0,
            (unsigned long long)conns, accepted, duplicates, conflicts, cut,
            unreachable, busy);
    free(cs);
    meter_buf_release(&body.body);
    curl_slist_free_all(headers);
    curl_global_cleanup();
out:
    sim_fleet_free(fleet);
    return rc;
}
