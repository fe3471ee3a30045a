/*
 * set.c - a set of samples held in memory and handed to the rating
 * engine as a pricing source: what meterctl rate reads from files.
 *
 * Samples may come in any order and from several inputs: they are kept
 * in input order (sandbox and account ids interned), then sorted by
 * (sandbox, ts, input order), so that the first of a repeated second in
 * input order stands, and streamed one sandbox at a time.
 */
#include "meter_sample.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A sample as held for sorting. */
struct rec {
    uint32_t sandbox; /* index in sandboxes: an account's sandbox id */
    uint32_t pad;
    uint64_t seq; /* input order */
    struct pricing_second s;
};

/* Blocks handed to the engine hold at most this many seconds. */
enum { BLOCK = 4096 };

struct meter_sample_set {
    struct meter_strtab sandboxes; /* "account/sandbox" (ids have no '/') */
    struct meter_strtab accounts;
    uint32_t *owner; /* by sandbox: the account index */
    size_t owner_cap;
    struct rec *recs;
    size_t n, cap, max;
    size_t max_bytes;
    bool full; /* an add was refused for want of room */
    bool sorted;
    size_t next; /* the source's cursor */
    struct pricing_second buf[BLOCK];
};

struct meter_sample_set *
meter_sample_set_new(size_t max_bytes)
{
    struct meter_sample_set *set = calloc(1, sizeof(*set));
    if (set) {
        set->max_bytes = max_bytes;
        set->max = max_bytes / sizeof(struct rec);
    }
    return set;
}

bool
meter_sample_set_full(const struct meter_sample_set *set)
{
    return set->full;
}

void
meter_sample_set_free(struct meter_sample_set *set)
{
    if (!set)
        return;
    meter_strtab_release(&set->sandboxes);
    meter_strtab_release(&set->accounts);
    free(set->owner);
    free(set->recs);
    free(set);
}

size_t
meter_sample_set_count(const struct meter_sample_set *set)
{
    return set->n;
}

int
meter_sample_set_add(struct meter_sample_set *set, const struct meter_sample *m,
                     const char *where, struct meter_err *e)
{
    if (set->sorted)
        return meter_fail(e, "%s: the sample set is already being rated",
                          where);
    /* Room first, for the sample and a new sandbox's owner, so that a
     * refusal leaves the set as it was. */
    if (set->n == set->cap) {
        if (set->n >= set->max) {
            set->full = true;
            return meter_fail(e,
                              "%s: more than %zu samples, as many as %zu "
                              "bytes hold",
                              where, set->max, set->max_bytes);
        }
        size_t nc = set->cap ? 2 * set->cap : 65536;
        if (nc > set->max)
            nc = set->max;
        struct rec *r = realloc(set->recs, nc * sizeof(*r));
        if (!r)
            return meter_fail(e, "out of memory at %zu samples", set->n);
        set->recs = r;
        set->cap = nc;
    }
    if (set->sandboxes.n >= set->owner_cap) {
        size_t nc = set->owner_cap ? 2 * set->owner_cap : 1024;
        uint32_t *o = realloc(set->owner, nc * sizeof(*o));
        if (!o)
            return meter_fail(e, "out of memory");
        set->owner = o;
        set->owner_cap = nc;
    }
    char key[2 * PRICING_ID_MAX + 2];
    snprintf(key, sizeof(key), "%s/%s", m->account_id, m->sandbox_id);
    long acct = meter_strtab_intern(&set->accounts, m->account_id, NULL);
    bool added;
    long sb = acct < 0 ? -1 : meter_strtab_intern(&set->sandboxes, key, &added);
    if (sb < 0)
        return meter_fail(e, "out of memory");
    if (added)
        set->owner[sb] = (uint32_t)acct;
    struct rec *r = &set->recs[set->n];
    r->sandbox = (uint32_t)sb;
    r->pad = 0;
    r->seq = set->n;
    r->s = m->s;
    set->n++;
    return 0;
}

/* Adds the sample obj, whose origin where names in messages. */
static int
add_json(struct meter_sample_set *set, const json_t *obj, const char *where,
         struct meter_err *e)
{
    struct meter_sample m;
    struct meter_sample_err err;
    if (meter_sample_parse(obj, &m, &err) < 0)
        return meter_fail(e, "%s: field '%s'%s%s: %s", where, err.field,
                          err.value[0] ? " value " : "", err.value, err.reason);
    return meter_sample_set_add(set, &m, where, e);
}

/* Refuses text holding a vcpu or cpu_used of more than 4 decimals. */
static int
check_decimals(const char *text, size_t len, const char *where,
               struct meter_err *e)
{
    char key[16], number[48];
    if (meter_sample_decimals_ok(text, len, key, number))
        return 0;
    return meter_fail(e, "%s: field '%s' value %s: more than 4 decimals", where,
                      key, number);
}

static int
read_array(struct meter_sample_set *set, FILE *f, const char *path,
           struct meter_err *e)
{
    /* The whole text first: its decimals are checked on the text. */
    struct meter_buf text = {0};
    char chunk[65536];
    size_t got;
    while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0)
        meter_buf_add(&text, chunk, got);
    if (text.failed || ferror(f)) {
        meter_buf_release(&text);
        return meter_fail(e, "%s: cannot read it (or out of memory)", path);
    }
    if (check_decimals(text.p ? text.p : "", text.len, path, e) < 0) {
        meter_buf_release(&text);
        return -1;
    }
    json_error_t jerr;
    json_t *arr = json_loadb(text.p ? text.p : "", text.len,
                             JSON_REJECT_DUPLICATES, &jerr);
    char why[160];
    if (!arr)
        pricing_json_reason(
            jerr.text, json_error_code(&jerr) == json_error_duplicate_key,
            text.p ? text.p : "", (size_t)jerr.position, why, sizeof(why));
    meter_buf_release(&text);
    if (!arr)
        return meter_fail(e, "%s:%d:%d: %s", path, jerr.line, jerr.column, why);
    int rc = 0;
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        char where[300];
        snprintf(where, sizeof(where), "%s: sample [%zu]", path, i);
        if ((rc = add_json(set, v, where, e)) < 0)
            break;
    }
    json_decref(arr);
    return rc;
}

static int
read_lines(struct meter_sample_set *set, FILE *f, const char *path,
           struct meter_err *e)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    long lineno = 0;
    int rc = 0;
    while (rc == 0 && (len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        size_t k = strspn(line, " \t\r\n");
        if (k == (size_t)len)
            continue; /* blank line */
        char where[300];
        snprintf(where, sizeof(where), "%s:%ld", path, lineno);
        json_error_t jerr;
        json_t *v =
            json_loadb(line, (size_t)len, JSON_REJECT_DUPLICATES, &jerr);
        if (!v) {
            char why[160];
            rc = meter_fail(e, "%s:%d: %s", where, jerr.column,
                            pricing_json_reason(jerr.text,
                                                json_error_code(&jerr) ==
                                                    json_error_duplicate_key,
                                                line, (size_t)jerr.position,
                                                why, sizeof(why)));
            break;
        }
        rc = check_decimals(line, (size_t)len, where, e);
        if (rc == 0)
            rc = add_json(set, v, where, e);
        json_decref(v);
    }
    free(line);
    return rc;
}

int
meter_sample_set_read(struct meter_sample_set *set, const char *path,
                      struct meter_err *e)
{
    bool std_in = strcmp(path, "-") == 0;
    FILE *f = std_in ? stdin : fopen(path, "r");
    if (!f)
        return meter_fail(e, "cannot open '%s': %s", path, strerror(errno));
    int c;
    while ((c = getc(f)) == ' ' || c == '\t' || c == '\n' || c == '\r')
        ;
    if (c != EOF)
        ungetc(c, f);
    int rc =
        c == '[' ? read_array(set, f, path, e) : read_lines(set, f, path, e);
    if (rc == 0 && ferror(f))
        rc = meter_fail(e, "cannot read '%s'", path);
    if (!std_in)
        fclose(f);
    return rc;
}

static int
by_sandbox_ts_seq(const void *x, const void *y)
{
    const struct rec *a = x, *b = y;
    if (a->sandbox != b->sandbox)
        return a->sandbox < b->sandbox ? -1 : 1;
    if (a->s.ts != b->s.ts)
        return a->s.ts < b->s.ts ? -1 : 1;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

/* The next run of up to BLOCK seconds of one sandbox. */
static int
next_block(void *ctx, struct pricing_block *b, struct pricing_err *e)
{
    (void)e;
    struct meter_sample_set *set = ctx;
    if (set->next >= set->n)
        return 0;
    uint32_t sb = set->recs[set->next].sandbox;
    size_t n = 0;
    while (set->next < set->n && n < BLOCK &&
           set->recs[set->next].sandbox == sb)
        set->buf[n++] = set->recs[set->next++].s;
    b->account_id = set->accounts.str[set->owner[sb]];
    b->sandbox_id = set->sandboxes.str[sb] + strlen(b->account_id) + 1;
    b->s = set->buf;
    b->n = n;
    b->runs = NULL; /* seconds, one by one */
    b->nruns = 0;
    b->history = false; /* files: runs count within what they hold */
    return 1;
}

struct pricing_source
meter_sample_set_source(struct meter_sample_set *set)
{
    if (!set->sorted && set->n > 0)
        qsort(set->recs, set->n, sizeof(*set->recs), by_sandbox_ts_seq);
    set->sorted = true;
    set->next = 0;
    return (struct pricing_source){next_block, set};
}
