/*
 * rate.c - the streaming rating engine: per-second usage in (second by
 * second, or as runs of identical seconds), exact quantities per
 * (account, period) out (docs/pricing.md, "Rating").
 *
 * The engine keeps the state of one sandbox (its open segment and idle
 * streak, its quantities in the current period) and one accumulator per
 * (account, period). Per-sandbox sums are 128-bit sums of 64-bit values
 * (a run's, its value times at most 2^32 seconds), which cannot overflow
 * below 2^64 samples; sums across sandboxes are checked. Pricing the quantities
 * is statement.c's.
 */
#include "pricing_int.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rate_int.h"

struct pricing_rater {
    const struct pricing_book *book;
    /* (account, period) accumulators: a chained hash table. */
    struct rate_acct **buckets;
    size_t nbuckets, nacct;

    /* The current sandbox. */
    bool in_sandbox;
    char sandbox[PRICING_ID_MAX + 1];
    char account[PRICING_ID_MAX + 1];
    bool ran;               /* has had a running second */
    struct rate_acct *cur;  /* its current period's accumulator */
    struct rate_acct *last; /* the accumulator acct_for found last */
    int64_t period_end;     /* end of that period */
    int64_t prev_ts;        /* last second kept, INT64_MIN before any */
    struct pricing_second prev;
    /* Its quantities in the current period. */
    struct pricing_quantities q;
    uint64_t dups, conflicts;
    /* Its open segment and idle streak. */
    uint64_t seg_n, last_qc, last_qm;
    int last_type; /* instance type of the segment's last second */
    uint64_t streak;
    /* Its open storage span, with an allowance per account. */
    struct pool_span span;
    /* Instance types, cheapest per second first (ties: the book's
     * order), and the type of the last allocation looked up. */
    uint8_t order[PRICING_TYPES_MAX];
    uint32_t fit_vcpu;
    uint64_t fit_mem;
    int fit_type;
    struct pricing_scope scope; /* year 0: price every period */
    char scope_account[PRICING_ID_MAX + 1];
    bool partial; /* pricing_rater_partial: unknown prices left out */
};

static uint64_t
hash_acct(const char *account, int year, int month)
{
    uint64_t h = 14695981039346656037ULL;
    for (const char *p = account; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    h = (h ^ (uint64_t)year) * 1099511628211ULL;
    return (h ^ (uint64_t)month) * 1099511628211ULL;
}

static int
grow(struct pricing_rater *r)
{
    size_t n = r->nbuckets ? 2 * r->nbuckets : 64;
    struct rate_acct **b = calloc(n, sizeof(*b));
    if (!b)
        return -1;
    for (size_t i = 0; i < r->nbuckets; i++) {
        struct rate_acct *a = r->buckets[i], *next;
        for (; a; a = next) {
            next = a->next;
            size_t k = hash_acct(a->account_id, a->year, a->month) & (n - 1);
            a->next = b[k];
            b[k] = a;
        }
    }
    free(r->buckets);
    r->buckets = b;
    r->nbuckets = n;
    return 0;
}

/* The accumulator of (account, period of ts), created if new. */
static struct rate_acct *
acct_for(struct pricing_rater *r, const char *account, int64_t ts, int64_t *end)
{
    /* Mostly the one of the sandbox before. */
    struct rate_acct *last = r->last;
    if (last && ts >= last->start && ts < last->end &&
        strcmp(last->account_id, account) == 0) {
        *end = last->end;
        return last;
    }
    int year, month;
    int64_t start;
    pricing_period_of(ts, &year, &month, &start, end);
    size_t k = hash_acct(account, year, month) & (r->nbuckets - 1);
    for (struct rate_acct *a = r->buckets[k]; a; a = a->next)
        if (a->year == year && a->month == month &&
            strcmp(a->account_id, account) == 0)
            return r->last = a;
    if (2 * (r->nacct + 1) > r->nbuckets) {
        if (grow(r) < 0)
            return NULL;
        k = hash_acct(account, year, month) & (r->nbuckets - 1);
    }
    struct rate_acct *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    snprintf(a->account_id, sizeof(a->account_id), "%s", account);
    a->year = year;
    a->month = month;
    a->start = start;
    a->end = *end;
    a->next = r->buckets[k];
    r->buckets[k] = a;
    r->nacct++;
    return r->last = a;
}

/* Whether type a costs less per second than b: a.rate / a.per <
 * b.rate / b.per, exactly (book.c bounds rates so the products fit). */
static bool
cheaper(const struct instance_type *a, const struct instance_type *b)
{
    return (pricing_u128)a->rate.v * (pricing_u128)b->per_s <
           (pricing_u128)b->rate.v * (pricing_u128)a->per_s;
}

struct pricing_rater *
pricing_rater_new(const struct pricing_book *book, struct pricing_err *e)
{
    struct pricing_rater *r = calloc(1, sizeof(*r));
    if (!r || grow(r) < 0) {
        free(r);
        snprintf(e->msg, sizeof(e->msg), "out of memory");
        return NULL;
    }
    r->book = book;
    /* Insertion sort: stable, so equal rates keep the book's order. */
    for (size_t i = 0; i < book->ntypes; i++) {
        size_t j = i;
        for (; j > 0 && cheaper(&book->types[i], &book->types[r->order[j - 1]]);
             j--)
            r->order[j] = r->order[j - 1];
        r->order[j] = (uint8_t)i;
    }
    r->fit_type = -1;
    return r;
}

void
pricing_rater_free(struct pricing_rater *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->nbuckets; i++) {
        struct rate_acct *a = r->buckets[i], *next;
        for (; a; a = next) {
            next = a->next;
            free(a->spans);
            free(a->dense);
            free(a);
        }
    }
    free(r->buckets);
    free(r);
}

/* Closes the open running segment: pads it to the granularity and the
 * minimum with its last second's quantities. */
static inline void
close_segment(struct pricing_rater *r)
{
    if (r->seg_n == 0)
        return;
    uint64_t g = r->book->granularity_s;
    uint64_t billed = (r->seg_n + g - 1) / g * g;
    if (billed < r->book->min_billed_s)
        billed = r->book->min_billed_s;
    uint64_t pad = billed - r->seg_n;
    r->q.cpu_gross += (pricing_u128)pad * r->last_qc;
    r->q.mem_gross += (pricing_u128)pad * r->last_qm;
    r->q.padding_s += pad;
    if (r->last_type >= 0)
        r->q.type_s[r->last_type] += pad;
    r->seg_n = 0;
}

static bool
add_u128(pricing_u128 *a, pricing_u128 b)
{
    return !__builtin_add_overflow(*a, b, a);
}

static bool
add_u64(uint64_t *a, uint64_t b)
{
    return !__builtin_add_overflow(*a, b, a);
}

/* Ends the sandbox's current period: closes its segment and streak and
 * adds its quantities to the account's. */
/* Adds sp's level to the account's total of each of its seconds; false
 * on overflow. */
static bool
add_dense(struct rate_acct *a, const struct pool_span *sp)
{
    bool ok = true;
    for (int64_t t = sp->from; t < sp->to; t++)
        ok &= add_u64(&a->dense[t - a->start], sp->level);
    return ok;
}

/* Adds the sandbox's open storage span to its account's: to the spans,
 * or to the total per second once the spans would outgrow it. false when
 * out of memory or on overflow (*e says which). */
static bool
close_span(struct pricing_rater *r, struct pricing_err *e)
{
    struct rate_acct *a = r->cur;
    struct pool_span sp = r->span;
    r->span.level = 0;
    r->span.from = r->span.to = INT64_MIN;
    if (!a || sp.level == 0)
        return true;
    size_t seconds = (size_t)(a->end - a->start);
    size_t grown = a->spans_cap ? 2 * a->spans_cap : 64;
    if (!a->dense && a->nspans == a->spans_cap &&
        grown * sizeof(*a->spans) > seconds * sizeof(*a->dense)) {
        /* Dense from now on: memory bounded by the period, whatever the
         * number of changes of level. */
        if (!(a->dense = calloc(seconds, sizeof(*a->dense)))) {
            snprintf(e->msg, sizeof(e->msg), "out of memory");
            return false;
        }
        for (size_t i = 0; i < a->nspans; i++)
            if (!add_dense(a, &a->spans[i]))
                goto overflow;
        free(a->spans);
        a->spans = NULL;
        a->nspans = a->spans_cap = 0;
    }
    if (a->dense) {
        if (!add_dense(a, &sp))
            goto overflow;
        return true;
    }
    if (a->nspans == a->spans_cap) {
        struct pool_span *p = realloc(a->spans, grown * sizeof(*p));
        if (!p) {
            snprintf(e->msg, sizeof(e->msg), "out of memory");
            return false;
        }
        a->spans = p;
        a->spans_cap = grown;
    }
    a->spans[a->nspans++] = sp;
    return true;
overflow:
    snprintf(e->msg, sizeof(e->msg),
             "account '%s' %04d-%02d: storage quantity overflow", a->account_id,
             a->year, a->month);
    return false;
}

static int
flush_period(struct pricing_rater *r, struct pricing_err *e)
{
    close_segment(r);
    r->streak = 0;
    if (!close_span(r, e))
        return -1;
    struct rate_acct *a = r->cur;
    if (!a)
        return 0;
    bool ok = true;
    for (size_t t = 0; t < r->book->ntypes; t++)
        ok = ok && add_u64(&a->q.type_s[t], r->q.type_s[t]) &&
             add_u64(&a->q.type_credited_s[t], r->q.type_credited_s[t]);
    const struct pricing_quantities *s = &r->q;
    struct pricing_quantities *d = &a->q;
    ok = ok && add_u128(&d->cpu_gross, s->cpu_gross) &&
         add_u128(&d->cpu_credited, s->cpu_credited) &&
         add_u128(&d->mem_gross, s->mem_gross) &&
         add_u128(&d->mem_credited, s->mem_credited) &&
         add_u128(&d->storage, s->storage) && add_u128(&d->egress, s->egress) &&
         add_u64(&d->running_s, s->running_s) &&
         add_u64(&d->padding_s, s->padding_s) &&
         add_u64(&d->credited_s, s->credited_s) && add_u64(&d->runs, s->runs) &&
         add_u64(&a->dups, r->dups) && add_u64(&a->conflicts, r->conflicts);
    /* The counts per instance type only as far as the book has types:
     * a sandbox's end is on the simulator's hot path. */
    memset(&r->q, 0, offsetof(struct pricing_quantities, type_s));
    memset(r->q.type_s, 0, r->book->ntypes * sizeof(r->q.type_s[0]));
    memset(r->q.type_credited_s, 0,
           r->book->ntypes * sizeof(r->q.type_credited_s[0]));
    r->dups = r->conflicts = 0;
    r->cur = NULL;
    if (!ok) {
        snprintf(e->msg, sizeof(e->msg),
                 "account '%s' %04d-%02d: quantity overflow", a->account_id,
                 a->year, a->month);
        return -1;
    }
    return 0;
}

/* Copies an id of at most PRICING_ID_MAX characters, cut there if
 * longer, like snprintf but without its cost (once a sandbox). */
static void
copy_id(char *dst, const char *src)
{
    size_t n = strnlen(src, PRICING_ID_MAX);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static int
start_sandbox(struct pricing_rater *r, const struct pricing_block *b,
              struct pricing_err *e)
{
    if (r->in_sandbox && flush_period(r, e) < 0)
        return -1;
    copy_id(r->sandbox, b->sandbox_id);
    copy_id(r->account, b->account_id);
    r->in_sandbox = true;
    /* A sandbox whose first running minute precedes what it sends. */
    bool any = b->runs ? b->nruns > 0 : b->n > 0;
    int64_t first = !any ? 0 : b->runs ? b->runs[0].s.ts : b->s[0].ts;
    r->ran = b->history && any && b->first_run_minute < first / 60;
    r->cur = NULL;
    r->period_end = INT64_MIN;
    r->prev_ts = INT64_MIN;
    r->seg_n = 0;
    r->streak = 0;
    r->last_type = -1;
    return 0;
}

/* The cheapest instance type that s fits, or -1. */
static int
fit(struct pricing_rater *r, const struct pricing_second *s)
{
    if (s->vcpu == r->fit_vcpu && s->mem_bytes == r->fit_mem &&
        r->fit_type >= 0)
        return r->fit_type;
    const struct pricing_book *book = r->book;
    for (size_t k = 0; k < book->ntypes; k++) {
        const struct instance_type *t = &book->types[r->order[k]];
        if (t->vcpu >= s->vcpu && t->mem_bytes >= s->mem_bytes) {
            r->fit_vcpu = s->vcpu;
            r->fit_mem = s->mem_bytes;
            r->fit_type = r->order[k];
            return r->fit_type;
        }
    }
    return -1;
}

/* Adds seconds [ts, ts + n) of storage to the sandbox's open span. */
static inline bool
span_add(struct pricing_rater *r, int64_t ts, uint64_t n, uint64_t level,
         struct pricing_err *e)
{
    if (level == r->span.level && ts == r->span.to) {
        r->span.to += (int64_t)n;
        return true;
    }
    if (!close_span(r, e))
        return false;
    r->span.from = ts;
    r->span.to = ts + (int64_t)n;
    r->span.level = level;
    return true;
}

/* q rounded up to a multiple of step (0: no step); false on overflow. */
static inline bool
step_up(uint64_t *q, uint64_t step)
{
    uint64_t rem = step ? *q % step : 0;
    return !rem || !__builtin_add_overflow(*q, step - rem, q);
}

static void
no_type(struct pricing_rater *r, const struct pricing_second *s, int64_t ts,
        struct pricing_err *e)
{
    char vcpu[48];
    struct pricing_dec v = {(pricing_i128)s->vcpu * (PRICING_ONE / 10000)};
    pricing_dec_format(v, 4, vcpu, sizeof(vcpu));
    snprintf(e->msg, sizeof(e->msg),
             "sandbox '%s': second %lld: no instance type of the book fits "
             "%s vCPU and %llu bytes of memory",
             r->sandbox, (long long)ts, vcpu, (unsigned long long)s->mem_bytes);
}

/*
 * Rates the seconds ts, ts + 1, ... with the values of s, at most n of
 * them, all after the sandbox's last second kept (prev_ts): those of
 * them in ts's period. Returns how many, or 0 on error (e says why).
 * One second and a run of them take this same path: the per-second loop
 * inlines it with n = 1, where the products fold away. ext: the book
 * uses keys of rules version 2 that work second by second (steps,
 * instance types, storage by state, an allowance per account); without
 * them the code is the one of version 1, compiled on its own.
 */
/* What every second reads of the book, copied once a block into a
 * local that no store of the rater can alias (so kept in registers). */
struct rules {
    bool cpu_used, mem_used, autopause, types, pool, paused_free;
    uint32_t cpu_step;
    uint64_t mem_step, included, after;
    pricing_u128 idle_below;
};

static inline __attribute__((always_inline)) struct rules
rules_of(const struct pricing_book *book, bool ext)
{
    return (struct rules){
        .cpu_used = book->cpu_used,
        .mem_used = book->memory_used,
        .autopause = book->autopause,
        .types = ext && book->ntypes,
        .pool = ext && book->pool_bytes,
        .paused_free = ext && book->storage_running_only,
        .cpu_step = book->cpu_step,
        .mem_step = book->memory_step,
        .included = book->included_bytes,
        .after = book->after_s,
        .idle_below = (pricing_u128)book->idle_below.v,
    };
}

static inline __attribute__((always_inline)) uint64_t
rate_run(struct pricing_rater *r, const struct rules *book,
         const struct pricing_second *s, int64_t ts, uint64_t n,
         int64_t prev_ts, bool ext, struct pricing_err *e)
{
    const bool types = ext && book->types, pool = ext && book->pool;
    if (__builtin_expect(ts >= r->period_end, 0)) {
        if (flush_period(r, e) < 0)
            return 0;
        r->cur = acct_for(r, r->account, ts, &r->period_end);
        if (!r->cur) {
            snprintf(e->msg, sizeof(e->msg), "out of memory");
            return 0;
        }
    } else if (ts != prev_ts + 1) {
        /* A missing second closes the segment and the streak. */
        close_segment(r);
        r->streak = 0;
    }
    if ((uint64_t)(r->period_end - ts) < n)
        n = (uint64_t)(r->period_end - ts);
    r->q.egress += (pricing_u128)n * s->egress_bytes;
    uint64_t disk;
    if (s->vcpu == 0) { /* paused: storage (all of it) and egress */
        close_segment(r);
        r->streak = 0;
        disk = book->paused_free ? 0 : s->disk_bytes;
    } else {
        uint64_t qc = book->cpu_used ? s->cpu_used : s->vcpu;
        uint64_t qm = book->mem_used ? s->mem_used_bytes : s->mem_bytes;
        int type = -1;
        if (ext) {
            if (!step_up(&qc, book->cpu_step) ||
                !step_up(&qm, book->mem_step)) {
                snprintf(e->msg, sizeof(e->msg),
                         "sandbox '%s': second %lld: the allocation "
                         "rounded up to its step overflows",
                         r->sandbox, (long long)ts);
                return 0;
            }
            if (types && (type = fit(r, s)) < 0) {
                no_type(r, s, ts, e);
                return 0;
            }
            r->last_type = type;
        }
        r->seg_n += n;
        r->last_qc = qc;
        r->last_qm = qm;
        r->q.cpu_gross += (pricing_u128)n * qc;
        r->q.mem_gross += (pricing_u128)n * qm;
        if (types)
            r->q.type_s[type] += n;
        disk =
            s->disk_bytes > book->included ? s->disk_bytes - book->included : 0;
        r->q.running_s += n;
        if (__builtin_expect(!r->ran, 0)) {
            r->ran = true;
            r->q.runs++;
        }
        /* idle: cpu_used < idle_below x vcpu, exactly; the seconds of
         * the streak past after_s are credited. */
        if (book->autopause) {
            if ((pricing_u128)s->cpu_used * (pricing_u128)PRICING_ONE <
                book->idle_below * s->vcpu) {
                r->streak += n;
                if (r->streak > book->after) {
                    uint64_t c = r->streak - book->after;
                    if (c > n)
                        c = n;
                    r->q.cpu_credited += (pricing_u128)c * qc;
                    r->q.mem_credited += (pricing_u128)c * qm;
                    r->q.credited_s += c;
                    if (types)
                        r->q.type_credited_s[type] += c;
                }
            } else {
                r->streak = 0;
            }
        }
    }
    if (!pool)
        r->q.storage += (pricing_u128)n * disk;
    else if (!span_add(r, ts, n, disk, e))
        return 0;
    return n;
}

/* Whether u is no run: no second, or past the last second there is. */
static bool
bad_run(const char *sandbox, const struct pricing_run *u, struct pricing_err *e)
{
    if (u->n > 0 && u->s.ts <= INT64_MAX - (int64_t)u->n)
        return false;
    snprintf(e->msg, sizeof(e->msg),
             "sandbox '%s': run.n: %lu seconds from second %lld %s", sandbox,
             (unsigned long)u->n, (long long)u->s.ts,
             u->n == 0 ? "is no second (a run holds at least one)"
                       : "ends past the last second there is");
    return true;
}

/* Counts a second repeated at the last second kept: the first stands.
 * -1 (e set) if ts comes before it, or nothing was kept. */
static inline int
repeat(struct pricing_rater *r, const struct pricing_second *s, int64_t ts,
       int64_t prev_ts, const struct pricing_second *prev,
       struct pricing_err *e)
{
    if (ts < prev_ts || !prev) {
        snprintf(e->msg, sizeof(e->msg),
                 "sandbox '%s': second %lld comes after %lld; "
                 "seconds must be in order",
                 r->sandbox, (long long)ts, (long long)prev_ts);
        return -1;
    }
    if (memcmp(s, prev, sizeof(*s)) == 0)
        r->dups++;
    else
        r->conflicts++;
    return 0;
}

/* The seconds of b one by one, for the sandbox started. */
static inline __attribute__((always_inline)) int
add_seconds(struct pricing_rater *r, const struct pricing_block *b, bool ext,
            struct pricing_err *e)
{
    const struct rules book = rules_of(r->book, ext);
    const struct pricing_second *prev =
        r->prev_ts == INT64_MIN ? NULL : &r->prev;
    int64_t prev_ts = r->prev_ts;
    for (size_t i = 0; i < b->n; i++) {
        const struct pricing_second *s = &b->s[i];
        const int64_t ts = s->ts;
        if (__builtin_expect(ts <= prev_ts, 0)) {
            if (repeat(r, s, ts, prev_ts, prev, e) < 0)
                return -1;
            continue;
        }
        if (!rate_run(r, &book, s, ts, 1, prev_ts, ext, e))
            return -1;
        prev = s;
        prev_ts = ts;
    }
    if (prev && prev != &r->prev)
        r->prev = *prev;
    r->prev_ts = prev_ts;
    return 0;
}

/* The runs of b, for the sandbox started: each rated in one step per
 * period it touches, exactly as its seconds one by one. */
static int
add_runs(struct pricing_rater *r, const struct pricing_block *b, bool ext,
         struct pricing_err *e)
{
    const struct rules book = rules_of(r->book, ext);
    const struct pricing_run *last = NULL;
    for (size_t i = 0; i < b->nruns; i++) {
        const struct pricing_run *u = &b->runs[i];
        int64_t ts = u->s.ts;
        uint64_t n = u->n;
        if (bad_run(r->sandbox, u, e))
            return -1;
        if (ts <= r->prev_ts) {
            /* Its first second repeats the last one kept: of the last
             * run rated, or before the block. */
            struct pricing_second kept = last ? last->s : r->prev;
            kept.ts = r->prev_ts;
            if (repeat(r, &u->s, ts, r->prev_ts,
                       r->prev_ts == INT64_MIN ? NULL : &kept, e) < 0)
                return -1;
            ts++;
            n--;
        }
        if (n == 0)
            continue;
        for (uint64_t k; n > 0; ts += (int64_t)k, n -= k) {
            if (ext ? !(k = rate_run(r, &book, &u->s, ts, n, r->prev_ts, true,
                                     e))
                    : !(k = rate_run(r, &book, &u->s, ts, n, r->prev_ts, false,
                                     e)))
                return -1;
            r->prev_ts = ts + (int64_t)k - 1;
        }
        last = u;
    }
    /* The last second kept, for a repeat in the next block. */
    if (last) {
        r->prev = last->s;
        r->prev.ts = r->prev_ts;
    }
    return 0;
}

int
pricing_rater_add(struct pricing_rater *r, const struct pricing_block *b,
                  struct pricing_err *e)
{
    /* A sandbox is a sandbox id of an account: the same id under
     * another account is another sandbox. */
    if (!r->in_sandbox || strcmp(r->sandbox, b->sandbox_id) != 0 ||
        strcmp(r->account, b->account_id) != 0) {
        if (start_sandbox(r, b, e) < 0)
            return -1;
    }
    const struct pricing_book *book = r->book;
    bool ext = book->cpu_step || book->memory_step || book->ntypes ||
               book->storage_running_only || book->pool_bytes;
    if (b->runs)
        return add_runs(r, b, ext, e);
    if (ext)
        return add_seconds(r, b, true, e);
    return add_seconds(r, b, false, e);
}

void
pricing_rater_select(struct pricing_rater *r, const struct pricing_scope *scope)
{
    r->scope = *scope;
    snprintf(r->scope_account, sizeof(r->scope_account), "%s",
             scope->account ? scope->account : "");
    r->scope.account = r->scope_account[0] ? r->scope_account : NULL;
}

void
pricing_rater_partial(struct pricing_rater *r)
{
    r->partial = true;
}

static int
span_by_from(const void *x, const void *y)
{
    const struct pool_span *a = x, *b = y;
    return (a->from > b->from) - (a->from < b->from);
}

/* The spans open in a sweep: a binary min-heap by end. */
static void
heap_push(struct pool_span *h, size_t *n, struct pool_span x)
{
    size_t i = (*n)++;
    for (; i > 0 && h[(i - 1) / 2].to > x.to; i = (i - 1) / 2)
        h[i] = h[(i - 1) / 2];
    h[i] = x;
}

static struct pool_span
heap_pop(struct pool_span *h, size_t *n)
{
    struct pool_span top = h[0], x = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && h[c + 1].to < h[c].to)
            c++;
        if (h[c].to >= x.to)
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0)
        h[i] = x;
    return top;
}

/* Adds (level - pool) x (to - t) to *total if level is above pool;
 * false on overflow. */
static bool
pool_add(pricing_u128 *total, pricing_u128 level, uint64_t pool, int64_t t,
         int64_t to)
{
    pricing_u128 add;
    return level <= pool || (!__builtin_mul_overflow(
                                 level - pool, (pricing_u128)(to - t), &add) &&
                             add_u128(total, add));
}

/*
 * The account's storage quantity under an allowance of pool bytes
 * (rules section 13): the sum over its seconds of max(0, D_t - pool),
 * D_t the storage of all its sandboxes at t: from the total per second
 * if dense, else by a sweep over the spans in order of start (sorted
 * unless they already are, as when sandboxes come in order of start),
 * with the open ones in a heap by end; between two starts or ends D_t is
 * constant.
 */
static int
pool_storage(struct rate_acct *a, uint64_t pool, struct pricing_err *e)
{
    if (a->dense) {
        pricing_u128 total = 0;
        for (int64_t t = 0; t < a->end - a->start; t++)
            total += a->dense[t] > pool ? a->dense[t] - pool : 0;
        a->q.storage = total;
        return 0;
    }
    size_t n = a->nspans, open = 0;
    struct pool_span *spans = a->spans;
    struct pool_span *heap = malloc((n ? n : 1) * sizeof(*heap));
    if (!heap) {
        snprintf(e->msg, sizeof(e->msg), "out of memory");
        return -1;
    }
    for (size_t i = 1; i < n; i++)
        if (spans[i].from < spans[i - 1].from) {
            qsort(spans, n, sizeof(*spans), span_by_from);
            break;
        }
    pricing_u128 level = 0, total = 0;
    int64_t t = INT64_MIN;
    bool ok = true;
    for (size_t i = 0; i <= n; i++) {
        /* The ends before the next start (all of them after the last). */
        while (open > 0 && (i == n || heap[0].to <= spans[i].from)) {
            struct pool_span end = heap_pop(heap, &open);
            ok = ok && pool_add(&total, level, pool, t, end.to);
            t = end.to;
            level -= end.level;
        }
        if (i == n)
            break;
        if (open > 0)
            ok = ok && pool_add(&total, level, pool, t, spans[i].from);
        t = spans[i].from;
        ok = ok && add_u128(&level, spans[i].level);
        heap_push(heap, &open, spans[i]);
    }
    free(heap);
    if (!ok) {
        snprintf(e->msg, sizeof(e->msg),
                 "account '%s' %04d-%02d: storage quantity overflow",
                 a->account_id, a->year, a->month);
        return -1;
    }
    a->q.storage = total;
    return 0;
}

static int
by_account_period(const void *x, const void *y)
{
    const struct rate_acct *a = *(const struct rate_acct *const *)x;
    const struct rate_acct *b = *(const struct rate_acct *const *)y;
    int c = strcmp(a->account_id, b->account_id);
    if (c)
        return c;
    return (a->start > b->start) - (a->start < b->start);
}

int
pricing_rater_finish(struct pricing_rater *r, struct pricing_statement **out,
                     size_t *n, struct pricing_err *e)
{
    *out = NULL;
    *n = 0;
    if (r->in_sandbox && flush_period(r, e) < 0)
        return -1;
    r->in_sandbox = false;
    if (r->scope.year && r->scope.account) {
        /* The scope's account is priced even without usage. */
        int64_t end,
            start = pricing_days_from_civil(r->scope.year, r->scope.month, 1) *
                    86400;
        if (!acct_for(r, r->scope.account, start, &end)) {
            snprintf(e->msg, sizeof(e->msg), "out of memory");
            return -1;
        }
    }
    struct rate_acct **list = calloc(r->nacct ? r->nacct : 1, sizeof(*list));
    struct pricing_statement *st = calloc(r->nacct ? r->nacct : 1, sizeof(*st));
    size_t k = 0, priced = 0;
    int rc = -1;
    if (!list || !st) {
        snprintf(e->msg, sizeof(e->msg), "out of memory");
        goto out;
    }
    for (size_t i = 0; i < r->nbuckets; i++)
        for (struct rate_acct *a = r->buckets[i]; a; a = a->next)
            if ((!r->scope.year ||
                 (a->year == r->scope.year && a->month == r->scope.month) ||
                 (r->scope.through &&
                  pricing_period_index(a->year, a->month) <
                      pricing_period_index(r->scope.year, r->scope.month))) &&
                (!r->scope.account ||
                 strcmp(a->account_id, r->scope.account) == 0))
                list[k++] = a;
    qsort(list, k, sizeof(*list), by_account_period);
    for (size_t i = 0; i < k && r->book->pool_bytes; i++)
        if (pool_storage(list[i], r->book->pool_bytes, e) < 0)
            goto out;
    for (; priced < k; priced++)
        if (rate_price(r->book, list[priced], r->scope.active_days, r->partial,
                       &st[priced], e) < 0) {
            priced++; /* its lines so far are released below */
            goto out;
        }
    *out = st;
    *n = k;
    st = NULL;
    rc = 0;
out:
    free(list);
    pricing_statements_free(st, priced);
    return rc;
}

void
pricing_statements_free(struct pricing_statement *s, size_t n)
{
    if (!s)
        return;
    for (size_t i = 0; i < n; i++)
        free(s[i].lines);
    free(s);
}

/* The runs of b into the raters of the parts whose days hold them, each
 * run cut at the parts' bounds. */
static int
pull_runs(struct pricing_rater **r, const struct pricing_part *parts,
          size_t nparts, const struct pricing_block *b, struct pricing_err *e)
{
    for (size_t i = 0; i < b->nruns; i++) {
        const struct pricing_run *u = &b->runs[i];
        if (bad_run(b->sandbox_id, u, e))
            return -1;
        for (size_t k = 0; k < nparts; k++) {
            int64_t from = u->s.ts > parts[k].from ? u->s.ts : parts[k].from;
            int64_t to = u->s.ts + (int64_t)u->n;
            if (to > parts[k].to)
                to = parts[k].to;
            if (from >= to)
                continue;
            struct pricing_run cut = *u;
            cut.s.ts = from;
            cut.n = (uint32_t)(to - from);
            struct pricing_block one = *b;
            one.runs = &cut;
            one.nruns = 1;
            if (pricing_rater_add(r[k], &one, e) < 0)
                return -1;
        }
    }
    return 0;
}

/* Pulls every block of src into the raters of the parts whose days
 * hold its seconds (one rater, parts NULL: all of them). */
static int
pull(struct pricing_rater **r, const struct pricing_part *parts, size_t nparts,
     struct pricing_source src, struct pricing_err *e)
{
    struct pricing_block b;
    int got;
    /* Cleared for each: a source that knows no runs leaves them NULL. */
    while ((b = (struct pricing_block){0}, got = src.next(src.ctx, &b, e)) >
           0) {
        if (!parts) {
            if (pricing_rater_add(r[0], &b, e) < 0)
                return -1;
            continue;
        }
        if (b.runs) {
            if (pull_runs(r, parts, nparts, &b, e) < 0)
                return -1;
            continue;
        }
        /* Seconds are in order: cut the block at the parts' bounds. */
        size_t i = 0;
        for (size_t k = 0; k < nparts && i < b.n; k++) {
            size_t j = i;
            while (j < b.n && b.s[j].ts < parts[k].to)
                j++;
            size_t first = i;
            while (first < j && b.s[first].ts < parts[k].from)
                first++;
            if (first < j) {
                struct pricing_block cut = b;
                cut.s = b.s + first;
                cut.n = j - first;
                if (pricing_rater_add(r[k], &cut, e) < 0)
                    return -1;
            }
            i = j;
        }
    }
    return got;
}

int
pricing_rate(const struct pricing_book *book, struct pricing_source src,
             const struct pricing_scope *scope,
             const struct pricing_part *parts, size_t nparts,
             struct pricing_statement **out, size_t *n, struct pricing_err *e)
{
    *out = NULL;
    *n = 0;
    size_t nr = nparts ? nparts : 1;
    if (nparts && (!scope || !scope->year || !scope->account)) {
        snprintf(e->msg, sizeof(e->msg),
                 "rating in parts needs one account's period");
        return -1;
    }
    struct pricing_rater **r = calloc(nr, sizeof(*r));
    struct pricing_statement *all = calloc(nr, sizeof(*all));
    size_t done = 0;
    int rc = -1;
    if (!r || !all) {
        snprintf(e->msg, sizeof(e->msg), "out of memory");
        goto out;
    }
    for (size_t k = 0; k < nr; k++) {
        if (!(r[k] = pricing_rater_new(nparts ? parts[k].book : book, e)))
            goto out;
        if (nparts) {
            struct pricing_scope part = *scope;
            part.active_days = (int)((parts[k].to - parts[k].from) / 86400);
            pricing_rater_select(r[k], &part);
        } else if (scope) {
            pricing_rater_select(r[k], scope);
        }
    }
    if (pull(r, nparts ? parts : NULL, nparts, src, e) < 0)
        goto out;
    if (!nparts) {
        rc = pricing_rater_finish(r[0], out, n, e);
        goto out;
    }
    /* One statement per part: the scope's account has exactly one. */
    for (; done < nparts; done++) {
        struct pricing_statement *st;
        size_t got;
        if (pricing_rater_finish(r[done], &st, &got, e) < 0)
            goto out;
        all[done] = st[0];
        free(st);
    }
    *out = all;
    *n = nparts;
    all = NULL;
    rc = 0;
out:
    for (size_t k = 0; r && k < nr; k++)
        pricing_rater_free(r[k]);
    free(r);
    pricing_statements_free(all, done);
    return rc;
}

/* ---- periods ---------------------------------------------------------- */

/* H. Hinnant's algorithm. */
int64_t
pricing_days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

void
pricing_period_of(int64_t ts, int *year, int *month, int64_t *start,
                  int64_t *end)
{
    int64_t days = ts >= 0 ? ts / 86400 : -((-ts + 86399) / 86400);
    int64_t z = days + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    int m = (int)(mp < 10 ? mp + 3 : mp - 9);
    int64_t y = yoe + era * 400 + (m <= 2);
    *year = (int)y;
    *month = m;
    *start = pricing_days_from_civil(y, m, 1) * 86400;
    *end =
        pricing_days_from_civil(m == 12 ? y + 1 : y, m == 12 ? 1 : m + 1, 1) *
        86400;
}

/* ---- an estimate from totals ------------------------------------------ */

int
pricing_estimate(const struct pricing_book *b, const struct pricing_totals *t,
                 int year, int month, struct pricing_dec *total,
                 struct pricing_err *e)
{
    if (b->ntypes) {
        snprintf(e->msg, sizeof(e->msg),
                 "price book '%s' prices instance types, which totals "
                 "cannot tell apart: no estimate",
                 b->id);
        return -1;
    }
    struct rate_acct a;
    memset(&a, 0, sizeof(a));
    a.year = year;
    a.month = month;
    int64_t start, end;
    pricing_period_of(pricing_days_from_civil(year, month, 1) * 86400, &year,
                      &month, &start, &end);
    a.start = start;
    a.end = end;
    a.q.cpu_gross = b->cpu_used ? t->cpu_used : t->vcpu;
    a.q.mem_gross = b->memory_used ? t->mem_used_byte_s : t->mem_byte_s;
    /* Storage as the rater bills it per sandbox-second: only while
     * running if the book says so (in proportion: totals do not say
     * which seconds ran), the inclusion taken off running seconds only
     * (a paused second bills its whole disk). */
    pricing_u128 disk = t->disk_byte_s;
    if (b->storage_running_only && t->samples)
        disk = disk * t->running_s / t->samples;
    pricing_u128 included = (pricing_u128)b->included_bytes * t->running_s;
    a.q.storage = disk > included ? disk - included : 0;
    a.q.egress = t->egress_bytes;
    a.q.running_s = t->running_s;
    struct pricing_statement st;
    int rc = rate_price(b, &a, 0, false, &st, e);
    if (rc == 0)
        *total = st.total;
    free(st.lines);
    return rc;
}
