/*
 * statement.c - prices one account's quantities for one period into
 * statement lines (docs/pricing.md, "Lines").
 *
 * Each amount is computed as an exact rational with GMP (a rate per hour
 * over quantities in 1/10,000 vCPU-seconds is a fraction with a large
 * denominator) and rounded once, half to even, to six decimals. Only the
 * total goes to the currency's minor unit.
 */
#include "rate_int.h"

#include <gmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A dimension priced per unit of time: how its quantities read. */
struct dim {
    const char *kind;
    const struct price *price;
    uint64_t base;         /* internal units in one unit (vCPU, GiB, GB) */
    const char *base_name; /* "vCPU", "GiB", "GB" */
    int64_t display_s;     /* seconds of the tier display unit; 1 for
                              egress, which has no time unit */
    const char *display_name;
};

static void
mpz_set_u128(mpz_t z, pricing_u128 v)
{
    mpz_set_ui(z, (unsigned long)(uint64_t)(v >> 64));
    mpz_mul_2exp(z, z, 64);
    mpz_add_ui(z, z, (unsigned long)(uint64_t)v);
}

static void
mpq_set_dec(mpq_t q, struct pricing_dec d)
{
    bool neg = d.v < 0;
    mpz_set_u128(mpq_numref(q), neg ? (pricing_u128)(-d.v) : (pricing_u128)d.v);
    if (neg)
        mpz_neg(mpq_numref(q), mpq_numref(q));
    mpz_set_u128(mpq_denref(q), (pricing_u128)PRICING_ONE);
    mpq_canonicalize(q);
}

/* Rounds x half to even (symmetric) to `decimals` places into *out. */
static int
round_to(const mpq_t x, unsigned decimals, struct pricing_dec *out,
         struct pricing_err *e, const char *what)
{
    mpz_t n, q, r, twice;
    int rc = 0;
    mpz_inits(n, q, r, twice, NULL);
    mpz_ui_pow_ui(q, 10, decimals);
    mpz_mul(n, mpq_numref(x), q);
    bool neg = mpz_sgn(n) < 0;
    mpz_abs(n, n);
    mpz_tdiv_qr(q, r, n, mpq_denref(x));
    mpz_mul_2exp(twice, r, 1);
    int c = mpz_cmp(twice, mpq_denref(x));
    if (c > 0 || (c == 0 && mpz_odd_p(q)))
        mpz_add_ui(q, q, 1);
    /* To the scale of pricing_dec. */
    mpz_ui_pow_ui(n, 10, PRICING_SCALE - decimals);
    mpz_mul(q, q, n);
    if (mpz_sizeinbase(q, 2) > 126) {
        snprintf(e->msg, sizeof(e->msg), "%s: amount overflow", what);
        rc = -1;
    } else {
        pricing_u128 v = 0;
        size_t count = 0;
        uint64_t words[2] = {0, 0};
        mpz_export(words, &count, -1, sizeof(words[0]), 0, 0, q);
        v = ((pricing_u128)words[1] << 64) | words[0];
        out->v = neg ? -(pricing_i128)v : (pricing_i128)v;
    }
    mpz_clears(n, q, r, twice, NULL);
    return rc;
}

/* out = qty (internal units) / units, the quantity in some unit. */
static void
ratio(mpq_t out, pricing_u128 qty, pricing_u128 units)
{
    mpz_set_u128(mpq_numref(out), qty);
    mpz_set_u128(mpq_denref(out), units);
    mpq_canonicalize(out);
}

/*
 * out = P(qty), the exact price of qty internal units. *one_rate
 * receives the rate, in the line's unit, when a single rate applies to
 * the whole quantity.
 */
static void
price_of(const struct dim *d, pricing_u128 qty, mpq_t out, bool *one_rate,
         struct pricing_dec *rate)
{
    const struct price *p = d->price;
    mpq_t x, t, r, bound, prev;
    mpq_inits(x, t, r, bound, prev, NULL);
    mpq_set_ui(out, 0, 1);
    if (p->mode == TIERS_NONE) {
        ratio(x, qty, (pricing_u128)d->base * (uint64_t)p->per_s);
        mpq_set_dec(r, p->rate);
        mpq_mul(out, x, r);
        *one_rate = true;
        *rate = p->rate;
        goto out;
    }
    ratio(x, qty, (pricing_u128)d->base * (uint64_t)d->display_s);
    *one_rate = false;
    for (size_t i = 0; i < p->ntiers; i++) {
        const struct tier *tier = &p->tiers[i];
        mpq_set_dec(r, tier->rate);
        if (!tier->unbounded)
            mpq_set_dec(bound, tier->up_to);
        bool within = tier->unbounded || mpq_cmp(x, bound) <= 0;
        if (p->mode == TIERS_VOLUME) {
            if (!within)
                continue;
            mpq_mul(out, x, r); /* the whole quantity at this rate */
            *one_rate = true;
            *rate = tier->rate;
            break;
        }
        /* graduated: the slice (prev, min(x, bound)] at this rate */
        mpq_set(t, within ? x : bound);
        mpq_sub(t, t, prev);
        mpq_mul(t, t, r);
        mpq_add(out, out, t);
        if (within) {
            *one_rate = i == 0;
            *rate = tier->rate;
            break;
        }
        mpq_set(prev, bound);
    }
out:
    mpq_clears(x, t, r, bound, prev, NULL);
}

struct pricing_line *
rate_add_line(struct pricing_statement *st, const char *kind,
              struct pricing_err *e)
{
    if (st->nlines == st->lines_cap) {
        size_t nc = st->lines_cap ? 2 * st->lines_cap : 8;
        struct pricing_line *p = realloc(st->lines, nc * sizeof(*p));
        if (!p) {
            snprintf(e->msg, sizeof(e->msg), "out of memory");
            return NULL;
        }
        st->lines = p;
        st->lines_cap = nc;
    }
    struct pricing_line *l = &st->lines[st->nlines];
    memset(l, 0, sizeof(*l));
    l->kind = kind;
    return l;
}

void
rate_keep_line(struct pricing_statement *st)
{
    if (st->lines[st->nlines].amount.v != 0)
        st->nlines++;
}

static int
unknown_price(struct pricing_err *e, const struct pricing_book *b,
              const struct rate_acct *a, const char *what)
{
    snprintf(e->msg, sizeof(e->msg),
             "price book '%s': account '%s' %04d-%02d uses %s, whose price "
             "is unknown (null) in the book",
             b->id, a->account_id, a->year, a->month, what);
    return -1;
}

/* A usage line for dimension d: quantity qty, exact amount into amt. */
static int
usage_line(struct pricing_statement *st, const struct dim *d, pricing_u128 qty,
           const char *description, mpq_t amt, struct pricing_err *e)
{
    bool one_rate;
    struct pricing_dec rate = {0};
    mpq_t x;
    price_of(d, qty, amt, &one_rate, &rate);
    struct pricing_line *l = rate_add_line(st, d->kind, e);
    if (!l)
        return -1;
    snprintf(l->description, sizeof(l->description), "%s", description);
    l->has_quantity = true;
    mpq_init(x);
    /* Flat rate: in the rate's unit; tiers: in the display unit. */
    const struct price *p = d->price;
    int64_t unit_s = p->mode == TIERS_NONE ? p->per_s : d->display_s;
    ratio(x, qty, (pricing_u128)d->base * (uint64_t)unit_s);
    int rc = round_to(x, 6, &l->quantity, e, d->kind);
    mpq_clear(x);
    if (rc < 0 || round_to(amt, 6, &l->amount, e, d->kind) < 0)
        return -1;
    if (p->mode != TIERS_NONE)
        snprintf(l->unit, sizeof(l->unit), "%s", d->display_name);
    else if (d->display_s == 1) /* egress: per GB, no time unit */
        snprintf(l->unit, sizeof(l->unit), "%s", d->base_name);
    else
        snprintf(l->unit, sizeof(l->unit), "%s-%s", d->base_name, p->per_name);
    l->has_unit_price = one_rate;
    l->unit_price = rate;
    rate_keep_line(st);
    return 0;
}

/* out = seconds x the type's rate per second, exactly. */
static void
type_price(const struct instance_type *it, uint64_t seconds, mpq_t out)
{
    mpq_t x;
    mpq_init(x);
    mpq_set_dec(out, it->rate);
    mpq_set_ui(x, (unsigned long)seconds, (unsigned long)it->per_s);
    mpq_canonicalize(x);
    mpq_mul(out, out, x);
    mpq_clear(x);
}

/* The line of instance type it for its billed seconds; the exact amount
 * into amt. The quantity shows in hours, with the rate per hour as unit
 * price when twelve decimals hold it exactly. */
static int
instance_line(struct pricing_statement *st, const struct instance_type *it,
              uint64_t seconds, mpq_t amt, struct pricing_err *e)
{
    struct pricing_line *l = rate_add_line(st, "instance", e);
    if (!l)
        return -1;
    snprintf(l->instance, sizeof(l->instance), "%s", it->name);
    snprintf(l->description, sizeof(l->description), "instance %s", it->name);
    type_price(it, seconds, amt);
    mpq_t x;
    mpq_init(x);
    l->has_quantity = true;
    ratio(x, seconds, SECONDS_PER_HOUR);
    int rc = round_to(x, 6, &l->quantity, e, "instance");
    snprintf(l->unit, sizeof(l->unit), "hour");
    type_price(it, SECONDS_PER_HOUR, x); /* the rate per hour */
    mpz_t scaled;
    mpz_init(scaled);
    mpz_ui_pow_ui(scaled, 10, PRICING_SCALE);
    mpz_mul(scaled, scaled, mpq_numref(x));
    if (mpz_divisible_p(scaled, mpq_denref(x)) && rc == 0)
        l->has_unit_price = round_to(x, 12, &l->unit_price, e, "instance") == 0;
    mpz_clear(scaled);
    mpq_clear(x);
    if (rc < 0 || round_to(amt, 6, &l->amount, e, "instance") < 0)
        return -1;
    rate_keep_line(st);
    return 0;
}

/*
 * A credit line: -min(credit x active / days, against), rounded once to
 * six decimals, added to *total. A part of a period on a book gets its
 * share of the period's credit, as its subscription and minimum commit
 * do, so a period cut at a change of book never credits twice.
 */
static int
credit_line(struct pricing_statement *st, const char *kind,
            const char *description, struct pricing_dec credit, int64_t active,
            int64_t days, struct pricing_dec against, struct pricing_dec *total,
            struct pricing_err *e)
{
    struct pricing_line *l = rate_add_line(st, kind, e);
    if (!l)
        return -1;
    snprintf(l->description, sizeof(l->description), "%s", description);
    mpq_t c, t;
    mpq_inits(c, t, NULL);
    mpq_set_dec(c, credit);
    mpq_set_si(t, active, (unsigned long)days);
    mpq_canonicalize(t);
    mpq_mul(c, c, t);
    mpq_set_dec(t, against);
    if (mpq_cmp(t, c) < 0)
        mpq_set(c, t);
    mpq_neg(c, c);
    int rc = round_to(c, 6, &l->amount, e, kind);
    mpq_clears(c, t, NULL);
    if (rc < 0)
        return -1;
    if (pricing_dec_add(*total, l->amount, total) != PRICING_OK) {
        snprintf(e->msg, sizeof(e->msg),
                 "account '%s' %04d-%02d: amount "
                 "overflow",
                 st->account_id, st->year, st->month);
        return -1;
    }
    rate_keep_line(st);
    return 0;
}

const char *const pricing_dim_names[PRICING_NDIMS] = {
    "cpu", "memory", "storage", "egress", "runs"};

/* The runs q bills: those past the book's free runs. */
static uint64_t
billed_runs(const struct pricing_book *b, const struct pricing_quantities *q)
{
    return q->runs > b->runs_free ? q->runs - b->runs_free : 0;
}

/* The dimensions q uses whose price b leaves unknown (null): bit
 * 1 << PRICING_DIM_x. */
static unsigned
unknown_dims(const struct pricing_book *b, const struct pricing_quantities *q)
{
    pricing_u128 egress_q =
        q->egress > b->free_bytes ? q->egress - b->free_bytes : 0;
    return (unsigned)(q->cpu_gross && !b->cpu.known) << PRICING_DIM_CPU |
           (unsigned)(q->mem_gross && !b->memory.known) << PRICING_DIM_MEMORY |
           (unsigned)(q->storage && !b->storage.known) << PRICING_DIM_STORAGE |
           (unsigned)(egress_q && !b->egress.known) << PRICING_DIM_EGRESS |
           (unsigned)(billed_runs(b, q) && !b->per_run_known)
               << PRICING_DIM_RUNS;
}

int
pricing_unpriced_quantity(const struct pricing_book *b,
                          const struct pricing_quantities *q,
                          enum pricing_dim d, struct pricing_dec *out,
                          const char **unit, struct pricing_err *e)
{
    bool mem_gb = b->memory_unit == UNIT_GB,
         disk_gb = b->storage_unit == UNIT_GB;
    pricing_u128 qty = 0, per = 1;
    switch (d) {
    case PRICING_DIM_CPU:
        qty = q->cpu_gross;
        per = (pricing_u128)PRICING_CPU_UNIT * SECONDS_PER_HOUR;
        *unit = "vCPU-hour";
        break;
    case PRICING_DIM_MEMORY:
        qty = q->mem_gross;
        per = (pricing_u128)UNIT_BYTES(b->memory_unit) * SECONDS_PER_HOUR;
        *unit = mem_gb ? "GB-hour" : "GiB-hour";
        break;
    case PRICING_DIM_STORAGE:
        qty = q->storage;
        per = (pricing_u128)UNIT_BYTES(b->storage_unit) * SECONDS_PER_HOUR;
        *unit = disk_gb ? "GB-hour" : "GiB-hour";
        break;
    case PRICING_DIM_EGRESS:
        qty = q->egress > b->free_bytes ? q->egress - b->free_bytes : 0;
        per = 1000000000;
        *unit = "GB";
        break;
    default:
        qty = billed_runs(b, q);
        *unit = "run";
        break;
    }
    mpq_t x;
    mpq_init(x);
    ratio(x, qty, per);
    int rc = round_to(x, 6, out, e, pricing_dim_names[d]);
    mpq_clear(x);
    return rc;
}

int
rate_price(const struct pricing_book *b, const struct rate_acct *a,
           int active_days, bool partial, struct pricing_statement *st,
           struct pricing_err *e)
{
    const struct pricing_quantities *q = &a->q;
    char desc[96];
    int rc = -1;
    mpq_t amt, gross, net, credit, t;
    mpq_inits(amt, gross, net, credit, t, NULL);

    memset(st, 0, sizeof(*st));
    snprintf(st->account_id, sizeof(st->account_id), "%s", a->account_id);
    st->year = a->year;
    st->month = a->month;
    snprintf(st->currency, sizeof(st->currency), "%s", b->currency);
    snprintf(st->price_book, sizeof(st->price_book), "%s", b->id);
    st->q = *q;
    st->duplicates = a->dups;
    st->conflicts = a->conflicts;

    bool mem_gb = b->memory_unit == UNIT_GB;
    bool disk_gb = b->storage_unit == UNIT_GB;
    struct dim cpu = {"cpu",  &b->cpu,          PRICING_CPU_UNIT,
                      "vCPU", SECONDS_PER_HOUR, "vCPU-hour"};
    struct dim memory = {"memory",
                         &b->memory,
                         UNIT_BYTES(b->memory_unit),
                         UNIT_NAME(b->memory_unit),
                         SECONDS_PER_HOUR,
                         mem_gb ? "GB-hour" : "GiB-hour"};
    struct dim storage = {"storage",
                          &b->storage,
                          UNIT_BYTES(b->storage_unit),
                          UNIT_NAME(b->storage_unit),
                          SECONDS_PER_STORAGE_MONTH,
                          disk_gb ? "GB-month" : "GiB-month"};
    const struct dim egress = {"egress", &b->egress, 1000000000, "GB", 1, "GB"};
    /* Tiers that name their time unit display in it (section 13). */
    char names[3][32];
    struct dim *timed_dims[] = {&cpu, &memory, &storage};
    for (int i = 0; i < 3; i++) {
        struct dim *d = timed_dims[i];
        if (!d->price->tier_per_s)
            continue;
        d->display_s = d->price->tier_per_s;
        snprintf(names[i], sizeof(names[i]), "%s-%s", d->base_name,
                 d->price->tier_per_name);
        d->display_name = names[i];
    }

    pricing_u128 egress_q =
        q->egress > b->free_bytes ? q->egress - b->free_bytes : 0;
    /* Billing never guesses: an unknown price stops the statement. A
     * partial rater leaves the dimension out instead, and the rest is a
     * lower bound: every later step (credits capped by what is owed, a
     * minimum commit, the rounding) only grows with the lines. */
    unsigned unknown = unknown_dims(b, q);
    if (unknown && !partial) {
        const char *what = unknown & 1u << PRICING_DIM_CPU       ? "cpu"
                           : unknown & 1u << PRICING_DIM_MEMORY  ? "memory"
                           : unknown & 1u << PRICING_DIM_STORAGE ? "storage"
                           : unknown & 1u << PRICING_DIM_EGRESS
                               ? "egress"
                               : "runs (per_run)";
        unknown_price(e, b, a, what);
        goto out;
    }
    st->unpriced = unknown;
    if (b->has_subscription && !b->monthly_fee_known) {
        unknown_price(e, b, a, "a subscription (monthly_fee)");
        goto out;
    }
    if (b->has_subscription && !b->included_credit_known) {
        unknown_price(e, b, a, "a subscription (included_credit)");
        goto out;
    }

    /* cpu and memory: the line for the gross quantity G, and the credit
     * P(G) - P(N) for N = G - credited. */
    const struct {
        const struct dim *d;
        pricing_u128 gross, credited;
        const char *what;
        bool used;
    } timed[] = {
        {&cpu, q->cpu_gross, q->cpu_credited, "vCPU time", b->cpu_used},
        {&memory, q->mem_gross, q->mem_credited, "memory", b->memory_used}};
    mpq_set_ui(credit, 0, 1);
    for (size_t i = 0; i < 2; i++) {
        if (!timed[i].gross ||
            unknown & 1u << (i == 0 ? PRICING_DIM_CPU : PRICING_DIM_MEMORY))
            continue;
        snprintf(desc, sizeof(desc), "%s (%s)", timed[i].what,
                 timed[i].used ? "used" : "allocated");
        if (usage_line(st, timed[i].d, timed[i].gross, desc, gross, e) < 0)
            goto out;
        bool one;
        struct pricing_dec r;
        price_of(timed[i].d, timed[i].gross - timed[i].credited, net, &one, &r);
        mpq_sub(t, gross, net);
        if (mpq_sgn(t) > 0)
            mpq_add(credit, credit, t);
    }
    /* Instance types (section 11): a line per type used, in the book's
     * order, and each type's share of the autopause credit. */
    for (size_t k = 0; k < b->ntypes; k++) {
        if (!q->type_s[k])
            continue;
        if (instance_line(st, &b->types[k], q->type_s[k], gross, e) < 0)
            goto out;
        type_price(&b->types[k], q->type_s[k] - q->type_credited_s[k], net);
        mpq_sub(t, gross, net);
        if (mpq_sgn(t) > 0)
            mpq_add(credit, credit, t);
    }
    if (q->storage && !(unknown & 1u << PRICING_DIM_STORAGE) &&
        usage_line(st, &storage, q->storage, "storage", amt, e) < 0)
        goto out;
    if (egress_q && !(unknown & 1u << PRICING_DIM_EGRESS)) {
        char free_gb[48] = "";
        if (b->free_bytes) {
            struct pricing_dec f = {(pricing_i128)b->free_bytes * 1000};
            pricing_dec_format(f, 9, free_gb, sizeof(free_gb));
            /* trim trailing zeros of the free allowance */
            char *end = free_gb + strlen(free_gb) - 1;
            while (*end == '0')
                *end-- = '\0';
            if (*end == '.')
                *end = '\0';
        }
        snprintf(desc, sizeof(desc),
                 b->free_bytes ? "network egress after %s GB free"
                               : "network egress%s",
                 free_gb);
        if (usage_line(st, &egress, egress_q, desc, amt, e) < 0)
            goto out;
    }
    uint64_t runs_q = billed_runs(b, q);
    if (runs_q && !(unknown & 1u << PRICING_DIM_RUNS)) {
        struct pricing_line *l = rate_add_line(st, "runs", e);
        if (!l)
            goto out;
        if (b->runs_free)
            snprintf(l->description, sizeof(l->description),
                     "sandbox runs after %llu free",
                     (unsigned long long)b->runs_free);
        else
            snprintf(l->description, sizeof(l->description), "sandbox runs");
        l->has_quantity = true;
        l->quantity.v = (pricing_i128)runs_q * PRICING_ONE;
        snprintf(l->unit, sizeof(l->unit), "run");
        l->has_unit_price = true;
        l->unit_price = b->per_run;
        mpq_set_dec(amt, b->per_run);
        mpz_set_u128(mpq_numref(t), runs_q);
        mpz_set_ui(mpq_denref(t), 1);
        mpq_mul(amt, amt, t);
        if (round_to(amt, 6, &l->amount, e, "runs") < 0)
            goto out;
        rate_keep_line(st);
    }
    if (mpq_sgn(credit) > 0) {
        struct pricing_line *l = rate_add_line(st, "autopause_credit", e);
        if (!l)
            goto out;
        snprintf(l->description, sizeof(l->description),
                 "autopause idle credit (idle over %u s)", b->after_s);
        l->has_quantity = true;
        l->quantity.v = (pricing_i128)q->credited_s * PRICING_ONE;
        snprintf(l->unit, sizeof(l->unit), "second");
        mpq_neg(credit, credit);
        if (round_to(credit, 6, &l->amount, e, "autopause_credit") < 0)
            goto out;
        rate_keep_line(st);
    }

    /* The rounded usage lines so far. */
    struct pricing_dec usage = {0};
    for (size_t i = 0; i < st->nlines; i++)
        if (pricing_dec_add(usage, st->lines[i].amount, &usage) != PRICING_OK)
            goto overflow;

    /* Active days: the invoice run's, or for offline rating, which has
     * no assignment dates, the whole period (docs/pricing.md). */
    int64_t days = (a->end - a->start) / 86400;
    int64_t active = active_days > 0 && active_days < days ? active_days : days;
    struct pricing_dec total = usage;
    if (b->has_subscription) {
        struct pricing_line *l = rate_add_line(st, "subscription", e);
        if (!l)
            goto out;
        snprintf(l->description, sizeof(l->description),
                 "subscription, %lld of %lld days", (long long)active,
                 (long long)days);
        mpq_set_dec(amt, b->monthly_fee);
        mpq_set_si(t, active, (unsigned long)days);
        mpq_canonicalize(t);
        mpq_mul(amt, amt, t);
        l->has_quantity = true;
        if (round_to(t, 6, &l->quantity, e, "subscription") < 0 ||
            round_to(amt, 6, &l->amount, e, "subscription") < 0)
            goto out;
        snprintf(l->unit, sizeof(l->unit), "month");
        l->has_unit_price = true;
        l->unit_price = b->monthly_fee;
        if (pricing_dec_add(total, l->amount, &total) != PRICING_OK)
            goto overflow;
        rate_keep_line(st);

        if (b->included_credit.v > 0 && usage.v > 0) {
            if (credit_line(st, "included_credit",
                            "included credit of the subscription",
                            b->included_credit, active, days, usage, &total,
                            e) < 0)
                goto out;
        }
    }
    if (b->promotional_credit.v > 0 && total.v > 0 &&
        credit_line(st, "promotional_credit", "promotional credit",
                    b->promotional_credit, active, days, total, &total, e) < 0)
        goto out;
    if (b->minimum_commit.v > 0) {
        struct pricing_line *l = rate_add_line(st, "minimum_commit", e);
        if (!l)
            goto out;
        snprintf(l->description, sizeof(l->description),
                 "minimum commit top-up");
        mpq_set_dec(amt, b->minimum_commit);
        mpq_set_si(t, active, (unsigned long)days);
        mpq_canonicalize(t);
        mpq_mul(amt, amt, t);
        mpq_set_dec(t, total);
        mpq_sub(amt, amt, t);
        if (mpq_sgn(amt) > 0) {
            if (round_to(amt, 6, &l->amount, e, "minimum_commit") < 0)
                goto out;
            if (pricing_dec_add(total, l->amount, &total) != PRICING_OK)
                goto overflow;
            rate_keep_line(st);
        }
    }
    if (pricing_dec_round(total, (unsigned)b->minor_unit, &st->total) !=
        PRICING_OK)
        goto overflow;
    if (st->total.v < 0)
        st->total.v = 0;
    rc = 0;
    goto out;
overflow:
    snprintf(e->msg, sizeof(e->msg), "account '%s' %04d-%02d: amount overflow",
             a->account_id, a->year, a->month);
out:
    mpq_clears(amt, gross, net, credit, t, NULL);
    return rc;
}
