/*
 * cache.c - report documents kept a few seconds (--report-ttl), so that
 * a dashboard opened by many people, or reloaded, costs the database
 * one report per key and period of the cache, not one per request.
 *
 * The key names the report and its canonical parameters, made after the
 * request was checked and its caller authorized, so an entry is only
 * ever served to a caller who may read it. Each meterd keeps its own:
 * nothing is shared between replicas. A fixed table of slots, one entry
 * a slot (a newer key replaces an older one in its slot), under one
 * mutex held only to copy.
 *
 * A document is served ttl seconds. Then the first request rebuilds it
 * while the others are served the one there was, for as long as that
 * takes: one statement, not one per request, and no wait; a rebuild
 * that fails leaves it served until one succeeds (a dashboard shows its
 * last numbers, with the time they were built, rather than an error).
 * A report not kept yet is built by its first request; the others
 * asking for it meanwhile wait for that one rather than each running
 * the statement, and fail with it if it fails (a database down costs
 * one timeout, not one per waiting request in turn).
 */
#include "meterd_int.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SLOTS 512

struct entry {
    char *key;
    char *text;
    size_t len;
    int64_t expires;    /* monotonic milliseconds */
    int64_t rebuilding; /* since when a request rebuilds it; 0: none */
    int64_t failed;     /* when its last build failed; 0: none */
};

/* After a failed build of a report not kept, the requests waiting for it
 * and those in this long fail too, rather than each try in turn. */
#define FAILED_MS 1000

/* A rebuild that has not ended in this long is given up for lost. */
#define REBUILD_MAX_MS 60000

static struct entry slots[SLOTS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t built; /* signalled by a put, an abandon */
static unsigned ttl_ms;

static int64_t
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct entry *
slot_of(const char *key)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)key; *p; p++)
        h = (h ^ *p) * 1099511628211ULL;
    return &slots[h % SLOTS];
}

void
meterd_cache_init(unsigned ttl_s)
{
    ttl_ms = ttl_s * 1000;
    /* Waits count on the monotonic clock: a change of the wall clock
     * must not stretch or cut them. */
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&built, &attr);
    pthread_condattr_destroy(&attr);
}

char *
meterd_cache_get(const char *key, size_t *len, bool *failed)
{
    *failed = false;
    if (!ttl_ms)
        return NULL;
    char *copy = NULL;
    pthread_mutex_lock(&lock);
    for (;;) {
        int64_t now = now_ms();
        struct entry *e = slot_of(key);
        if (!e->key || strcmp(e->key, key) != 0) {
            /* Not kept: this caller builds it, the others wait. */
            char *k = strdup(key);
            if (k) {
                free(e->key);
                free(e->text);
                *e = (struct entry){k, NULL, 0, 0, now, 0};
            }
            break;
        }
        bool others_rebuild =
            e->rebuilding && now - e->rebuilding < REBUILD_MAX_MS;
        if (!e->text && !others_rebuild && e->failed &&
            now - e->failed < FAILED_MS) {
            *failed = true;
            break;
        }
        if (e->text && (e->expires > now || others_rebuild)) {
            if ((copy = malloc(e->len + 1))) {
                memcpy(copy, e->text, e->len + 1);
                *len = e->len;
            }
            break;
        }
        if (!others_rebuild) {
            e->rebuilding = now; /* this caller rebuilds: a miss */
            break;
        }
        /* Being built, nothing to serve yet: wait for it. */
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += 1;
        pthread_cond_timedwait(&built, &lock, &until);
    }
    pthread_mutex_unlock(&lock);
    return copy;
}

void
meterd_cache_put(const char *key, const char *text, size_t len)
{
    if (!ttl_ms)
        return;
    char *k = strdup(key), *t = malloc(len + 1);
    if (!k || !t) {
        free(k);
        free(t);
        return;
    }
    memcpy(t, text, len);
    t[len] = '\0';
    pthread_mutex_lock(&lock);
    struct entry *e = slot_of(key);
    char *old_key = e->key, *old_text = e->text;
    *e = (struct entry){k, t, len, now_ms() + ttl_ms, 0, 0};
    pthread_cond_broadcast(&built);
    pthread_mutex_unlock(&lock);
    free(old_key);
    free(old_text);
}

void
meterd_cache_abandon(const char *key)
{
    pthread_mutex_lock(&lock);
    struct entry *e = slot_of(key);
    if (e->key && strcmp(e->key, key) == 0) {
        e->rebuilding = 0;
        e->failed = now_ms();
    }
    pthread_cond_broadcast(&built);
    pthread_mutex_unlock(&lock);
}

void
meterd_cache_clear(void)
{
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < SLOTS; i++) {
        free(slots[i].key);
        free(slots[i].text);
        slots[i] = (struct entry){0};
    }
    pthread_mutex_unlock(&lock);
}
