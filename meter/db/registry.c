/*
 * registry.c - what a meterd process knows of sandboxes: (account,
 * sandbox id) -> keys, immutable once stored, and the first running minute,
 * which ingestion only lowers and a quarantine may raise (it then raises
 * first_run_epoch, and the registry starts over: ingest.c); and the
 * monthly partitions that exist. A bounded cache in front of the
 * database (past REGISTRY_MAX sandboxes it starts over), so two meterd
 * processes need not share it.
 */
#include "db_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* Sandboxes kept in memory at most (about 150 bytes each). */
#define REGISTRY_MAX 1000000

struct entry {
    int64_t sandbox_pk;
    int32_t account_pk, first_run;
};

struct meter_registry {
    pthread_rwlock_t lock;
    struct meter_strtab sandboxes; /* "account/sandbox" (ids have no '/') */
    struct entry *entries;         /* by sandbox index */
    size_t cap;
    pthread_mutex_t months_lock;
    int64_t months[64]; /* partitions known to exist, as y*12+m */
    size_t nmonths;
    int64_t epoch; /* first_run_epoch when the sandboxes were read */
};

struct meter_registry *
meter_registry_new(void)
{
    struct meter_registry *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    pthread_rwlock_init(&r->lock, NULL);
    pthread_mutex_init(&r->months_lock, NULL);
    return r;
}

void
meter_registry_free(struct meter_registry *r)
{
    if (!r)
        return;
    meter_strtab_release(&r->sandboxes);
    free(r->entries);
    pthread_rwlock_destroy(&r->lock);
    pthread_mutex_destroy(&r->months_lock);
    free(r);
}

/* The registry's key of a sandbox. */
static void
key_of(const char *account_id, const char *sandbox_id,
       char out[2 * PRICING_ID_MAX + 2])
{
    snprintf(out, 2 * PRICING_ID_MAX + 2, "%s/%s", account_id, sandbox_id);
}

bool
db_registry_get(struct meter_registry *r, const char *account_id,
                const char *sandbox_id, struct db_sandbox *out)
{
    char key[2 * PRICING_ID_MAX + 2];
    key_of(account_id, sandbox_id, key);
    pthread_rwlock_rdlock(&r->lock);
    long i = meter_strtab_find(&r->sandboxes, key);
    if (i >= 0) {
        const struct entry *x = &r->entries[i];
        snprintf(out->account_id, sizeof(out->account_id), "%s", account_id);
        out->sandbox_pk = x->sandbox_pk;
        out->account_pk = x->account_pk;
        out->first_run = x->first_run;
    }
    pthread_rwlock_unlock(&r->lock);
    return i >= 0;
}

void
db_registry_put(struct meter_registry *r, const char *sandbox_id,
                const struct db_sandbox *s, int64_t epoch)
{
    char key[2 * PRICING_ID_MAX + 2];
    key_of(s->account_id, sandbox_id, key);
    pthread_rwlock_wrlock(&r->lock);
    if (epoch != r->epoch)
        goto out; /* read before a quarantine changed first runs */
    if (r->sandboxes.n >= REGISTRY_MAX) {
        /* Bounded: past the cap start over; the database has it all. */
        meter_strtab_clear(&r->sandboxes);
    }
    bool added;
    long i = meter_strtab_intern(&r->sandboxes, key, &added);
    if (i < 0)
        goto out;
    if (!added) {
        if (s->first_run < r->entries[i].first_run)
            r->entries[i].first_run = s->first_run;
        goto out;
    }
    if ((size_t)i >= r->cap) {
        size_t nc = r->cap ? 2 * r->cap : 1024;
        struct entry *p = realloc(r->entries, nc * sizeof(*p));
        if (!p) {
            /* Forget it again: every index must have its entry. */
            meter_strtab_clear(&r->sandboxes);
            goto out;
        }
        r->entries = p;
        r->cap = nc;
    }
    r->entries[i] = (struct entry){s->sandbox_pk, s->account_pk, s->first_run};
out:
    pthread_rwlock_unlock(&r->lock);
}

int64_t
db_registry_epoch(struct meter_registry *r)
{
    pthread_rwlock_rdlock(&r->lock);
    int64_t epoch = r->epoch;
    pthread_rwlock_unlock(&r->lock);
    return epoch;
}

void
db_registry_epoch_seen(struct meter_registry *r, int64_t epoch)
{
    pthread_rwlock_wrlock(&r->lock);
    if (epoch != r->epoch) {
        meter_strtab_clear(&r->sandboxes);
        r->epoch = epoch;
    }
    pthread_rwlock_unlock(&r->lock);
}

bool
db_registry_month_known(struct meter_registry *r, int64_t key)
{
    bool known = false;
    pthread_mutex_lock(&r->months_lock);
    for (size_t k = 0; k < r->nmonths && !known; k++)
        known = r->months[k] == key;
    pthread_mutex_unlock(&r->months_lock);
    return known;
}

void
db_registry_months_clear(struct meter_registry *r)
{
    pthread_mutex_lock(&r->months_lock);
    r->nmonths = 0;
    pthread_mutex_unlock(&r->months_lock);
}

void
db_registry_month_add(struct meter_registry *r, int64_t key)
{
    pthread_mutex_lock(&r->months_lock);
    if (r->nmonths < sizeof(r->months) / sizeof(r->months[0]))
        r->months[r->nmonths++] = key;
    pthread_mutex_unlock(&r->months_lock);
}
