/*
 * samples.c - POST /v1/samples: a batch of samples from a host (a key of
 * role host), in any body form of meter/README.md, validated and then
 * stored exactly once, each account's on its shard (docs/scale.md);
 * answered 200 only after its transaction commits, or every shard's.
 */
#include "meterd_int.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

/* Each request thread's connections to the shards, made with its first
 * batch, all freed when meterd stops. */
struct links {
    struct meter_shard_links *l;
    struct links *next;
};
static _Thread_local struct meter_shard_links *tl_links;
static struct links *all_links;
static pthread_mutex_t links_lock = PTHREAD_MUTEX_INITIALIZER;

struct meter_shard_links *
meterd_thread_links(void)
{
    if (tl_links)
        return tl_links;
    struct links *n = malloc(sizeof(*n));
    if (!n ||
        !(n->l = meter_shard_links_new(meterd.shards, meterd.db_timeout_ms))) {
        free(n);
        return NULL;
    }
    pthread_mutex_lock(&links_lock);
    n->next = all_links;
    all_links = n;
    pthread_mutex_unlock(&links_lock);
    return tl_links = n->l;
}

void
meterd_samples_stop(void)
{
    pthread_mutex_lock(&links_lock);
    while (all_links) {
        struct links *n = all_links;
        all_links = n->next;
        meter_shard_links_free(n->l);
        free(n);
    }
    pthread_mutex_unlock(&links_lock);
}

/* Samples a batch may hold: bounds a batch's memory (about 500 bytes a
 * sample while it is processed) whatever its body's size. */
#define MAX_BATCH_SAMPLES 500000

static struct {
    atomic_ullong accepted, duplicates, conflicts, rejected;
    atomic_llong in_flight;
} counts;

void
meterd_samples_metrics(struct meter_buf *out)
{
    meter_buf_printf(
        out,
        "# HELP meter_samples_total Samples by outcome.\n"
        "# TYPE meter_samples_total counter\n"
        "meter_samples_total{outcome=\"accepted\"} %llu\n"
        "meter_samples_total{outcome=\"duplicate\"} %llu\n"
        "meter_samples_total{outcome=\"conflict\"} %llu\n"
        "meter_samples_total{outcome=\"rejected\"} %llu\n"
        "# HELP meter_batches_in_flight Batches being "
        "processed.\n"
        "# TYPE meter_batches_in_flight gauge\n"
        "meter_batches_in_flight %lld\n",
        atomic_load(&counts.accepted), atomic_load(&counts.duplicates),
        atomic_load(&counts.conflicts), atomic_load(&counts.rejected),
        atomic_load(&counts.in_flight));
}

bool
meterd_samples_admit(struct meter_http_request *rq)
{
    if (meter_http_header_is(rq, "Content-Type", "application/json") ||
        meter_http_header_is(rq, "Content-Type", "application/x-ndjson"))
        return true;
    const char *ct = meter_http_header(rq, "Content-Type");
    meter_http_reply_problem(rq, 415, "unsupported-media-type",
                             "Unsupported content type", NULL,
                             "content type '%s' is not application/json or "
                             "application/x-ndjson",
                             ct ? ct : "(none)");
    return false;
}

static json_t *
problems_json(const struct meter_problems *p)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < p->n; i++) {
        const struct meter_problem *x = &p->items[i];
        json_t *o = json_object();
        json_object_set_new(o, "index", json_integer((json_int_t)x->index));
        json_object_set_new(o, "field", json_string(x->err.field));
        json_object_set_new(o, "value", json_string(x->err.value));
        json_object_set_new(o, "reason", json_string(x->err.reason));
        json_array_append_new(arr, o);
    }
    return arr;
}

static int64_t
now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Answers the outcome of storing the batch. */
static void
reply(struct meter_http_request *rq, PGconn *db, enum meter_ingest_status st,
      size_t n, const struct meter_ingest_result *res,
      const struct meter_problems *probs, const struct meter_err *e)
{
    switch (st) {
    case METER_INGEST_OK: {
        atomic_fetch_add(&counts.accepted, res->accepted);
        atomic_fetch_add(&counts.duplicates, res->duplicates);
        atomic_fetch_add(&counts.conflicts, res->conflicts);
        if (res->conflicts)
            meter_log(METER_LOG_WARN,
                      "batch of %zu samples: %llu conflicting seconds "
                      "ignored (the first value stands)",
                      n, (unsigned long long)res->conflicts);
        json_t *o = json_object();
        json_object_set_new(o, "accepted",
                            json_integer((json_int_t)res->accepted));
        json_object_set_new(o, "duplicates",
                            json_integer((json_int_t)res->duplicates));
        json_object_set_new(o, "conflicts",
                            json_integer((json_int_t)res->conflicts));
        meter_http_note(rq, "accepted=%llu duplicates=%llu conflicts=%llu",
                        (unsigned long long)res->accepted,
                        (unsigned long long)res->duplicates,
                        (unsigned long long)res->conflicts);
        meter_http_reply_json(rq, 200, o);
        break;
    }
    case METER_INGEST_INVALID:
        atomic_fetch_add(&counts.rejected, n);
        meter_http_reply_problem(
            rq, 400, "invalid-samples", "Invalid samples", problems_json(probs),
            "%zu problem%s in the batch; nothing was "
            "stored (the first %zu are listed)",
            probs->total, probs->total == 1 ? "" : "s", probs->n);
        break;
    case METER_INGEST_TOO_LARGE:
        atomic_fetch_add(&counts.rejected, n);
        meter_http_reply_problem(
            rq, 413, "too-many-sandboxes", "Too many sandboxes", NULL,
            "the batch holds %zu distinct sandboxes, more than the %zu a "
            "batch may hold (--max-batch-sandboxes); nothing was stored: "
            "send them in smaller batches",
            res->sandboxes, meterd.max_batch_sandboxes);
        break;
    case METER_INGEST_FORBIDDEN:
        atomic_fetch_add(&counts.rejected, n);
        meter_http_reply_problem(rq, 403, "forbidden", "Accounts not allowed",
                                 problems_json(probs),
                                 "this host key may write only its accounts' "
                                 "usage; nothing was stored");
        break;
    case METER_INGEST_UNAVAILABLE:
        /* Not "nothing was stored": a connection that breaks while the
         * COMMIT is on its way leaves the outcome unknown here, and the
         * batch may be stored (tests/faults.sh saw it when PostgreSQL
         * restarted). Sending it again is right either way. */
        meter_http_reply_db_error(rq, db, METER_DB_SOFT, e,
                                  "the batch is not acknowledged (if it was "
                                  "stored before the connection broke, its "
                                  "copy sent again counts as duplicates)");
        break;
    default:
        meter_http_reply_db_error(rq, db, METER_DB_HARD, e,
                                  "the batch was not stored");
    }
}

void
meterd_samples(struct meter_http_request *rq)
{
    size_t len;
    const char *body = meter_http_body(rq, &len);
    bool ndjson =
        meter_http_header_is(rq, "Content-Type", "application/x-ndjson");
    struct meter_sample *s = NULL;
    size_t n = 0;
    struct meter_problems probs = {0};
    struct meter_ingest_result res = {0};
    struct meter_err e = {{0}};

    atomic_fetch_add(&counts.in_flight, 1);
    if (meter_body_parse(body, len, ndjson, MAX_BATCH_SAMPLES, &s, &n, &probs) <
        0) {
        meter_http_reply_problem(rq, 503, "saturated", "Out of memory", NULL,
                                 "the service cannot hold this batch now; "
                                 "retry");
        goto out;
    }
    enum meter_ingest_status st = METER_INGEST_INVALID;
    PGconn *db = NULL;
    if (probs.total == 0) {
        db = meter_http_db(rq);
        const struct meter_principal *who = meter_http_principal(rq);
        struct meter_ingest_origin o = {now_us(), meterd.max_age, who->key_id,
                                        who->scoped,
                                        meterd.max_batch_sandboxes};
        struct meter_shard_links *links = meterd_thread_links();
        st = !db      ? METER_INGEST_UNAVAILABLE
             : !links ? METER_INGEST_ERROR
                      : meter_ingest_routed(db, meterd.shards, links, s, n, &o,
                                            &res, &probs, &e);
        if (!links)
            meter_fail(&e, "out of memory");
    }
    reply(rq, db, st, n, &res, &probs, &e);
out:
    atomic_fetch_sub(&counts.in_flight, 1);
    free(s);
}
