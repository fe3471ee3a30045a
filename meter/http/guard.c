/*
 * guard.c - two guards every route shares: the per-key rate limit (a
 * token bucket a key, in this process) and the database watchdog, which
 * breaks the connection of a request that waits on the database longer
 * than db_timeout, so that a frozen server gives a 503 instead of a
 * hung request.
 *
 * The buckets live in this process: with N meterd replicas behind a
 * balancer a key may send up to N times the limit, which is what a limit
 * against floods needs, with no state the replicas must share.
 */
#include "http_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

/* ---- the rate limit ------------------------------------------------------ */

/* Where a key's bucket may be: HTTP_BUCKET_PROBE slots from its hash. */
#define HTTP_BUCKET_PROBE 16

static double
now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

bool
http_rate_take(struct meter_http *h, int64_t key, unsigned *retry_after)
{
    double rate = h->cfg.rate_limit, burst = 2 * rate, t = now_s();
    if (!rate)
        return true;
    uint64_t x = (uint64_t)key * 0x9e3779b97f4a7c15ULL;
    size_t home = (size_t)(x >> 32) % HTTP_BUCKETS;
    pthread_mutex_lock(&h->rate_lock);
    struct http_bucket *b = NULL, *oldest = NULL;
    for (size_t i = 0; i < HTTP_BUCKET_PROBE && !b; i++) {
        struct http_bucket *s = &h->buckets[(home + i) % HTTP_BUCKETS];
        if (s->key == key)
            b = s;
        else if (!oldest || s->at < oldest->at)
            oldest = s;
    }
    if (!b) {
        /* A new key takes the slot used longest ago: that bucket has
         * refilled, unless HTTP_BUCKET_PROBE keys near it are all busy,
         * and then its key starts afresh, full. */
        b = oldest;
        *b = (struct http_bucket){key, burst, t};
    }
    b->tokens = fmin(burst, b->tokens + (t - b->at) * rate);
    b->at = t;
    bool ok = b->tokens >= 1;
    if (ok)
        b->tokens -= 1;
    else
        *retry_after = (unsigned)ceil((1 - b->tokens) / rate);
    pthread_mutex_unlock(&h->rate_lock);
    return ok;
}

/* ---- the database watchdog ----------------------------------------------- */

void
http_watch_arm(struct meter_http *h, int slot, int fd)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += h->cfg.db_timeout_s;
    pthread_mutex_lock(&h->watch_lock);
    h->watch[slot] = (struct http_watch){fd, t};
    pthread_mutex_unlock(&h->watch_lock);
}

void
http_watch_disarm(struct meter_http *h, int slot)
{
    if (slot < 0)
        return;
    pthread_mutex_lock(&h->watch_lock);
    h->watch[slot].fd = -1;
    pthread_mutex_unlock(&h->watch_lock);
}

/* Wakes four times a second; a connection past its deadline is shut
 * down under the lock, so its thread cannot have closed it (and its fd
 * been reused) meanwhile: a thread disarms before it lets go of it. */
static void *
watchdog(void *arg)
{
    struct meter_http *h = arg;
    pthread_mutex_lock(&h->watch_lock);
    while (!h->watch_stop) {
        struct timespec wake;
        clock_gettime(CLOCK_REALTIME, &wake);
        wake.tv_nsec += 250000000;
        if (wake.tv_nsec >= 1000000000) {
            wake.tv_sec++;
            wake.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&h->watch_cond, &h->watch_lock, &wake);
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        for (int i = 0; i < HTTP_MAX_THREADS; i++) {
            struct http_watch *w = &h->watch[i];
            if (w->fd < 0 || now.tv_sec < w->deadline.tv_sec ||
                (now.tv_sec == w->deadline.tv_sec &&
                 now.tv_nsec < w->deadline.tv_nsec))
                continue;
            shutdown(w->fd, SHUT_RDWR);
            w->fd = -1;
            atomic_fetch_add(&h->db_errors, 1);
            meter_log(METER_LOG_WARN,
                      "the database did not answer within %u s: connection "
                      "broken, the request gets 503",
                      h->cfg.db_timeout_s);
        }
    }
    pthread_mutex_unlock(&h->watch_lock);
    return NULL;
}

int
http_watch_start(struct meter_http *h)
{
    for (int i = 0; i < HTTP_MAX_THREADS; i++)
        h->watch[i].fd = -1;
    if (pthread_mutex_init(&h->watch_lock, NULL) ||
        pthread_mutex_init(&h->rate_lock, NULL) ||
        pthread_cond_init(&h->watch_cond, NULL))
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
}
