/*
 * webhooks.c - the delivery thread: every --webhook-every seconds, on a
 * connection of its own to the catalog, it claims the due deliveries of
 * the outbox (migration 0022, meter/db/webhooks.c), POSTs each signed
 * event to its endpoint, and records the outcome: delivered on a 2xx,
 * else tried again later (meter_webhook_retry_ms) until a day after the
 * event, then given up. docs/webhooks.md is the receiver's side.
 *
 * Nothing here touches ingestion: its own connection, and no lock held
 * while sending. A claim is one statement that leases the deliveries it
 * takes (locked_until) and commits; the POSTs follow with no
 * transaction open; each outcome is one statement. Every meterd runs
 * one, and they share nothing but the table: a lease keeps the others
 * off a delivery while it is sent, SKIP LOCKED keeps two claims apart.
 * A meterd killed mid-send leaves its lease to run out (the claim's
 * deliveries times the timeout, and 5 s), and the delivery is sent
 * again, by this meterd restarted or another: at least once, the same
 * event id each time.
 *
 * Stopping cuts the connection off, as merge.c does; a POST under way
 * finishes first (at most the timeout).
 */
#include "meterd_int.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "meter_webhook.h"

/* Deliveries a claim takes: few, since they are sent one after the
 * other under one lease. */
#define CLAIM_MAX 10

static pthread_t thread;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake;
static bool running, stopping;
static int sock = -1;
static const char *conninfo;
static unsigned every_s, timeout_s, db_timeout_s, divisor;

static bool
stopped(void)
{
    pthread_mutex_lock(&lock);
    bool s = stopping;
    pthread_mutex_unlock(&lock);
    return s;
}

static void
disconnect(PGconn **db)
{
    pthread_mutex_lock(&lock);
    sock = -1;
    pthread_mutex_unlock(&lock);
    PQfinish(*db);
    *db = NULL;
}

/* db, connected if it was not: false if it cannot be (logged). */
static bool
connected(PGconn **db)
{
    struct meter_err e = {{0}};
    if (*db && PQstatus(*db) != CONNECTION_OK)
        disconnect(db);
    if (*db)
        return true;
    *db = meter_db_connect(conninfo, &e);
    if (*db &&
        (meter_db_set_statement_timeout(*db, db_timeout_s * 1000, &e) < 0 ||
         meter_db_webhook_session(*db, &e) < 0))
        disconnect(db);
    if (!*db) {
        meter_log(METER_LOG_WARN, "webhooks: %s", e.msg);
        return false;
    }
    pthread_mutex_lock(&lock);
    sock = PQsocket(*db);
    if (stopping)
        shutdown(sock, SHUT_RDWR);
    pthread_mutex_unlock(&lock);
    return true;
}

/* Sends claimed delivery c once; what it got into *o (its error in
 * err). */
static void
send_one(const struct meter_webhook_claim *c, struct meter_webhook_outcome *o,
         struct meter_webhook_result *res)
{
    struct meter_err e = {{0}};
    char sig[METER_WEBHOOK_SIG_MAX];
    int64_t ts = (int64_t)time(NULL);
    char *body = meter_webhook_body(c->event_id, c->type, c->created,
                                    c->account, c->data, &e);
    memset(res, 0, sizeof(*res));
    if (!body || meter_webhook_sign(c->secret, c->event_id, ts, body,
                                    strlen(body), sig, &e) < 0)
        snprintf(res->error, sizeof(res->error), "%.255s", e.msg);
    else
        meter_webhook_post(c->url, c->event_id, ts, sig, body, strlen(body),
                           timeout_s, res);
    free(body);
    *o = (struct meter_webhook_outcome){
        .delivered = res->delivered,
        .status = res->status,
        .error = res->error,
        .retry_ms = meter_webhook_retry_ms(c->attempts + 1, divisor),
        .give_up_ms = meter_webhook_give_up_ms(divisor),
    };
}

/* Claims and sends until nothing is due, the database fails, or meterd
 * stops. */
static void
deliver_due(PGconn *db)
{
    struct meter_err e = {{0}};
    int lease_s = (int)(CLAIM_MAX * timeout_s + 5);
    while (!stopped()) {
        struct meter_webhook_claim *c;
        size_t n;
        if (meter_db_webhook_claim(db, CLAIM_MAX, lease_s, &c, &n, &e) < 0) {
            if (!stopped())
                meter_log(METER_LOG_WARN, "webhooks: %s", e.msg);
            return;
        }
        for (size_t i = 0; i < n && !stopped(); i++) {
            struct meter_webhook_outcome o;
            struct meter_webhook_result res;
            send_one(&c[i], &o, &res);
            meter_log(res.delivered ? METER_LOG_DEBUG : METER_LOG_INFO,
                      "webhooks: %s %s to endpoint %lld (attempt %d): %s",
                      c[i].type, c[i].event_id, (long long)c[i].endpoint_id,
                      c[i].attempts + 1, res.delivered ? "delivered" : o.error);
            if (meter_db_webhook_record(db, &c[i], &o, &e) < 0) {
                if (!stopped())
                    meter_log(METER_LOG_WARN, "webhooks: %s", e.msg);
                break;
            }
        }
        meter_db_webhook_claims_free(c, n);
        /* Sent what was due: the next of each account's may be due now. */
        if (n == 0 || meter_db_lost(db))
            return;
    }
}

static void *
run(void *arg)
{
    (void)arg;
    PGconn *db = NULL;
    pthread_mutex_lock(&lock);
    while (!stopping) {
        pthread_mutex_unlock(&lock);
        if (connected(&db))
            deliver_due(db);
        pthread_mutex_lock(&lock);
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += every_s;
        while (!stopping && pthread_cond_timedwait(&wake, &lock, &until) == 0)
            ;
    }
    pthread_mutex_unlock(&lock);
    if (db)
        disconnect(&db);
    return NULL;
}

int
meterd_webhooks_start(const char *db, unsigned every, unsigned timeout,
                      unsigned backoff_divisor, unsigned db_timeout,
                      struct meter_err *e)
{
    if (!every)
        return 0;
    conninfo = db;
    every_s = every;
    timeout_s = timeout;
    divisor = backoff_divisor ? backoff_divisor : 1;
    db_timeout_s = db_timeout + 1;
    if (meter_webhook_global_init(e) < 0)
        return -1;
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&wake, &attr);
    pthread_condattr_destroy(&attr);
    if (pthread_create(&thread, NULL, run, NULL) != 0)
        return meter_fail(e, "cannot start the webhook thread");
    running = true;
    return 0;
}

void
meterd_webhooks_stop(void)
{
    if (!running)
        return;
    pthread_mutex_lock(&lock);
    stopping = true;
    if (sock >= 0)
        shutdown(sock, SHUT_RDWR);
    pthread_cond_signal(&wake);
    pthread_mutex_unlock(&lock);
    pthread_join(thread, NULL);
    running = false;
}
