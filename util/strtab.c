/*
 * strtab.c - the one string hash (FNV-1a) and the one string table built
 * on it: sandbox and account ids interned to dense indexes, for the
 * in-memory sample sets and the ingest registry.
 */
#include "meter_util.h"

#include <stdlib.h>
#include <string.h>

uint64_t
meter_hash(const char *s)
{
    uint64_t h = 14695981039346656037ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

/* Rebuilds the slots for at least want entries at half load. */
static int
rehash(struct meter_strtab *t, size_t want)
{
    size_t ns = t->nslots ? t->nslots : 1024;
    while (ns < 2 * want)
        ns *= 2;
    uint32_t *slots = calloc(ns, sizeof(*slots));
    if (!slots)
        return -1;
    for (size_t i = 0; i < t->n; i++) {
        size_t k = meter_hash(t->str[i]) & (ns - 1);
        while (slots[k])
            k = (k + 1) & (ns - 1);
        slots[k] = (uint32_t)i + 1;
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = ns;
    return 0;
}

long
meter_strtab_find(const struct meter_strtab *t, const char *s)
{
    if (!t->nslots)
        return -1;
    size_t k = meter_hash(s) & (t->nslots - 1);
    for (; t->slots[k]; k = (k + 1) & (t->nslots - 1))
        if (strcmp(t->str[t->slots[k] - 1], s) == 0)
            return (long)t->slots[k] - 1;
    return -1;
}

long
meter_strtab_intern(struct meter_strtab *t, const char *s, bool *added)
{
    if (added)
        *added = false;
    long found = meter_strtab_find(t, s);
    if (found >= 0)
        return found;
    if (t->n >= UINT32_MAX - 1)
        return -1;
    if (2 * (t->n + 1) > t->nslots && rehash(t, t->n + 1) < 0)
        return -1;
    if (t->n == t->cap) {
        size_t nc = t->cap ? 2 * t->cap : 1024;
        char **str = realloc(t->str, nc * sizeof(*str));
        if (!str)
            return -1;
        t->str = str;
        t->cap = nc;
    }
    if (!(t->str[t->n] = strdup(s)))
        return -1;
    size_t k = meter_hash(s) & (t->nslots - 1);
    while (t->slots[k])
        k = (k + 1) & (t->nslots - 1);
    t->slots[k] = (uint32_t)t->n + 1;
    if (added)
        *added = true;
    return (long)t->n++;
}

void
meter_strtab_clear(struct meter_strtab *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->str[i]);
    t->n = 0;
    if (t->slots)
        memset(t->slots, 0, t->nslots * sizeof(*t->slots));
}

void
meter_strtab_release(struct meter_strtab *t)
{
    meter_strtab_clear(t);
    free(t->str);
    free(t->slots);
    memset(t, 0, sizeof(*t));
}
