/*
 * guard.c - the guards every route shares: the rate limits (token
 * buckets in this process: requests by key, unknown keys by address,
 * sign-ins by key and by address); the database watchdog, which
 * breaks the connection of a request that waits on the database longer
 * than db_timeout, so that a frozen server gives a 503 instead of a
 * hung request; and, on the same thread, the header deadline, which
 * closes connections that trickle a request's headers (slowloris).
 *
 * The buckets live in this process: with N meterd replicas behind a
 * balancer a key may send up to N times the limit, which is what a limit
 * against floods needs, with no state the replicas must share. What
 * must hold across replicas (the live sessions a key may have) is kept
 * in the database instead.
 */
#include "http_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- the rate limits ----------------------------------------------------- */

/* Where an id's bucket may be: HTTP_BUCKET_PROBE slots from its hash. */
#define HTTP_BUCKET_PROBE 16

static double
now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

void
http_limit_init(struct http_limit *l, double rate, double burst)
{
    l->rate = rate;
    l->burst = burst;
}

/* Under rate_lock: id's bucket of l, refilled to now t. */
static struct http_bucket *
bucket_of(struct http_limit *l, int64_t id, double t)
{
    uint64_t x = (uint64_t)id * 0x9e3779b97f4a7c15ULL;
    size_t home = (size_t)(x >> 32) % HTTP_BUCKETS;
    struct http_bucket *b = NULL, *oldest = NULL;
    for (size_t i = 0; i < HTTP_BUCKET_PROBE && !b; i++) {
        struct http_bucket *s = &l->buckets[(home + i) % HTTP_BUCKETS];
        if (s->used && s->id == id)
            b = s;
        else if (!oldest || s->at < oldest->at)
            oldest = s;
    }
    if (!b) {
        /* A new id takes the slot used longest ago: that bucket has
         * refilled, unless HTTP_BUCKET_PROBE ids near it are all busy,
         * and then its id starts afresh, full. */
        b = oldest;
        *b = (struct http_bucket){true, id, l->burst, t};
    }
    b->tokens = fmin(l->burst, b->tokens + (t - b->at) * l->rate);
    b->at = t;
    return b;
}

bool
http_limit_take(struct meter_http *h, struct http_limit *l, int64_t id,
                unsigned *retry_after)
{
    if (!l->rate)
        return true;
    pthread_mutex_lock(&h->rate_lock);
    struct http_bucket *b = bucket_of(l, id, now_s());
    bool ok = b->tokens >= 1;
    if (ok)
        b->tokens -= 1;
    else
        *retry_after = (unsigned)ceil((1 - b->tokens) / l->rate);
    pthread_mutex_unlock(&h->rate_lock);
    return ok;
}

/* ---- the database watchdog ----------------------------------------------- */

/* Whether monotonic time now has reached t. */
static bool
reached(const struct timespec *now, const struct timespec *t)
{
    return now->tv_sec > t->tv_sec ||
           (now->tv_sec == t->tv_sec && now->tv_nsec >= t->tv_nsec);
}

static struct timespec
deadline_from_now(unsigned seconds)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += seconds;
    return t;
}

void
http_watch_arm(struct meter_http *h, int slot, int fd)
{
    /* A copy of the socket: shut down, it ends the wait on the original
     * too, and it stays ours until disarmed, so the watchdog never shuts
     * a number libpq closed (a server that dropped the connection) and
     * the system gave to another socket. */
    int copy = dup(fd);
    pthread_mutex_lock(&h->watch_lock);
    struct http_watch *w = &h->watch[slot];
    if (w->fd >= 0)
        close(w->fd);
    w->fd = copy;
    w->armed = copy >= 0;
    w->deadline = deadline_from_now(h->cfg.db_timeout_s);
    pthread_mutex_unlock(&h->watch_lock);
}

void
http_watch_progress(struct meter_http *h, int slot)
{
    pthread_mutex_lock(&h->watch_lock);
    if (h->watch[slot].armed)
        h->watch[slot].deadline = deadline_from_now(h->cfg.db_timeout_s);
    pthread_mutex_unlock(&h->watch_lock);
}

void
http_watch_disarm(struct meter_http *h, int slot)
{
    if (slot < 0)
        return;
    pthread_mutex_lock(&h->watch_lock);
    struct http_watch *w = &h->watch[slot];
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
    w->armed = false;
    pthread_mutex_unlock(&h->watch_lock);
}

bool
http_watch_broken(struct meter_http *h, int slot)
{
    pthread_mutex_lock(&h->watch_lock);
    bool broken = h->watch[slot].broken;
    h->watch[slot].broken = false;
    pthread_mutex_unlock(&h->watch_lock);
    return broken;
}

/* Wakes four times a second and shuts down the connections past their
 * deadline. A slot's socket copy is closed only under the lock, so the
 * one shut down is always the connection the slot was armed with. */
static void *
watchdog(void *arg)
{
    struct meter_http *h = arg;
    pthread_mutex_lock(&h->watch_lock);
    while (!h->watch_stop) {
        struct timespec wake;
        clock_gettime(CLOCK_MONOTONIC, &wake);
        wake.tv_nsec += 250000000;
        if (wake.tv_nsec >= 1000000000) {
            wake.tv_sec++;
            wake.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&h->watch_cond, &h->watch_lock, &wake);
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        int fired = 0, slow = http_conn_sweep(h, &now);
        for (int i = 0; i < HTTP_MAX_THREADS; i++) {
            struct http_watch *w = &h->watch[i];
            if (!w->armed || !reached(&now, &w->deadline))
                continue;
            shutdown(w->fd, SHUT_RDWR);
            w->armed = false;
            w->broken = true; /* its thread connects again */
            fired++;
        }
        if (!fired && !slow)
            continue;
        /* Logged outside the lock every request thread takes. */
        pthread_mutex_unlock(&h->watch_lock);
        if (slow)
            meter_log(METER_LOG_INFO,
                      "%d connection%s closed: no whole request within %u s "
                      "(header timeout)",
                      slow, slow == 1 ? "" : "s", h->cfg.header_timeout_s);
        if (fired)
            meter_log(METER_LOG_WARN,
                      "the database did not answer within %u s: %d "
                      "connection%s broken, %s request%s get%s 503",
                      h->cfg.db_timeout_s, fired, fired == 1 ? "" : "s",
                      fired == 1 ? "its" : "their", fired == 1 ? "" : "s",
                      fired == 1 ? "s" : "");
        pthread_mutex_lock(&h->watch_lock);
    }
    pthread_mutex_unlock(&h->watch_lock);
    return NULL;
}

int
http_watch_start(struct meter_http *h)
{
    for (int i = 0; i < HTTP_MAX_THREADS; i++)
        h->watch[i].fd = -1;
    pthread_condattr_t attr;
    if (pthread_mutex_init(&h->watch_lock, NULL) ||
        pthread_mutex_init(&h->rate_lock, NULL) || pthread_condattr_init(&attr))
        return -1;
    /* Deadlines are monotonic: a wall clock stepped back must not put
     * the watchdog to sleep. */
    int rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) ||
             pthread_cond_init(&h->watch_cond, &attr);
    pthread_condattr_destroy(&attr);
    if (rc)
        return -1;
    return pthread_create(&h->watchdog, NULL, watchdog, h) ? -1 : 0;
}

void
http_watch_stop(struct meter_http *h)
{
    pthread_mutex_lock(&h->watch_lock);
    h->watch_stop = true;
    pthread_cond_signal(&h->watch_cond);
    pthread_mutex_unlock(&h->watch_lock);
    pthread_join(h->watchdog, NULL);
    for (int i = 0; i < HTTP_MAX_THREADS; i++)
        if (h->watch[i].fd >= 0)
            close(h->watch[i].fd);
}

/* ---- the header deadline ------------------------------------------------ */

void
http_conn_started(struct meter_http *h, struct http_conn *c)
{
    clock_gettime(CLOCK_MONOTONIC, &c->since);
    pthread_mutex_lock(&h->watch_lock);
    c->next = h->conns_open;
    c->prev = NULL;
    if (c->next)
        c->next->prev = c;
    h->conns_open = c;
    pthread_mutex_unlock(&h->watch_lock);
}

void
http_conn_closed(struct meter_http *h, struct http_conn *c)
{
    pthread_mutex_lock(&h->watch_lock);
    if (c->prev)
        c->prev->next = c->next;
    else
        h->conns_open = c->next;
    if (c->next)
        c->next->prev = c->prev;
    pthread_mutex_unlock(&h->watch_lock);
}

void
http_conn_request(struct meter_http *h, struct http_conn *c, bool in_request)
{
    pthread_mutex_lock(&h->watch_lock);
    c->in_request = in_request;
    if (!in_request)
        clock_gettime(CLOCK_MONOTONIC, &c->since);
    pthread_mutex_unlock(&h->watch_lock);
}

/* Under watch_lock: shuts down the connections whose headers have taken
 * longer than header_timeout since they opened or since their last
 * answer; libmicrohttpd then closes them (and says so before it closes
 * the socket, so the number shut down is always theirs). */
int
http_conn_sweep(struct meter_http *h, const struct timespec *now)
{
    int closed = 0;
    for (struct http_conn *c = h->conns_open; c; c = c->next) {
        struct timespec deadline = c->since;
        deadline.tv_sec += h->cfg.header_timeout_s;
        if (c->in_request || c->shut || !reached(now, &deadline))
            continue;
        shutdown(c->fd, SHUT_RDWR);
        c->shut = true;
        closed++;
    }
    return closed;
}
